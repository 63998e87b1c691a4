#!/usr/bin/env bash
# Flake hunt: runs the live tests (ctest label `bpf`) ROUNDS times on an idle machine and
# ROUNDS times beside one CPU hog per core (a shell busy loop, niced 0 like the tests), each
# test once per round, and prints per test how many runs passed in each condition, then every
# failure's log. A test that fails once is a test to fix: its outcome depends on the machine.
# Usage: tools/soak/flake_hunt.sh [BUILD_DIR] [ROUNDS] [CTEST_ARGS...]     (root)
#   CONDITIONS="idle hog" (default) or one of them
#   e.g. tools/soak/flake_hunt.sh build 5 -LE go_versions     (the Go-release matrix left out)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
ROUNDS=${2:-5}
shift 2 2>/dev/null || shift $#
[[ $(id -u) == 0 ]] || { echo "flake_hunt: needs root" >&2; exit 1; }
out=$(mktemp -d /tmp/sb-flake-hunt.XXXXXX)
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
tools/machine-info.sh
hogs=()
start_hogs() { for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & hogs+=($!); done; }
stop_hogs() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; hogs=(); }
trap stop_hogs EXIT
for cond in ${CONDITIONS:-idle hog}; do
  for r in $(seq "$ROUNDS"); do
    [ "$cond" = hog ] && start_hogs
    (cd "$BUILD_DIR" && ctest -L bpf --timeout 900 -j1 --output-on-failure "$@") > "$out/$cond-$r.log" 2>&1
    stop_hogs
    echo "flake_hunt: $cond round $r: $(grep -E 'tests passed|tests failed' "$out/$cond-$r.log" | tail -1)"
  done
done
echo
echo "runs passed per test (idle of $ROUNDS, beside a CPU hog per core of $ROUNDS):"
python3 - "$out" "$ROUNDS" "${CONDITIONS:-idle hog}" <<'EOF'
import collections, glob, os, re, sys
out, rounds, conds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
res = collections.defaultdict(lambda: {"idle": 0, "hog": 0})
for f in sorted(glob.glob(os.path.join(out, "*.log"))):
    cond = os.path.basename(f).split("-")[0]
    for m in re.finditer(r"Test +#\d+: (\S+) .*?(Passed|\*\*\*Failed|\*\*\*Timeout|Failed|Not Run)", open(f).read()):
        res[m.group(1)][cond] += m.group(2) == "Passed"
flaky = 0
for name, r in sorted(res.items()):
    mark = "" if all(r[c] == rounds for c in conds) else "   <-- failed"
    flaky += bool(mark)
    print(f"  {r['idle']}/{rounds}  {r['hog']}/{rounds}  {name}{mark}")
print(f"{len(res)} tests, {flaky} failed at least once; logs in {out}")
EOF
