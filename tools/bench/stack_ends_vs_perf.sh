#!/usr/bin/env bash
# Whole stacks, switchback against perf, measured in the same run: for each Go version and
# demo workload mode, the workload is recorded at the same time, for the same seconds, by
#   switchback record --pid         (BPF frame pointers + Go stack-switch crossings)
#   perf record -g                  (the kernel's frame-pointer walk)
#   perf record --call-graph dwarf  (perf's DWARF unwinding of a copied 8 KiB of stack)
# and tools/bench/stack_ends.py sorts each profile's samples by how they end: at a Go thread
# root (runtime.goexit / mstart / rt0_go / sigtramp) with nothing beyond, past a root, or
# elsewhere; plus, for the frameless leaves main.leafAdd / main.spinInner, how often their
# real caller is the next frame. The second figure: the BPF time of switchback's unwinder
# against a plain frame-pointer walk of the same samples (`record --compare-fp-walk`).
#
# Usage: tools/bench/stack_ends_vs_perf.sh [BUILD_DIR]        (root; default BUILD_DIR=build)
# Environment: VERSIONS (default "1.19 1.23 1.27"; 1.21+ come from tools/fetch-go.sh),
#   MODES (default "alloc chan gosched recurse vdso leaf spin cgo"; cgo = the democgo workload),
#   SECONDS_PER_RUN (default 4), FREQ (default 499), KEEP=1 keeps the scratch directory,
#   OUT=FILE also writes the results as JSON lines.
# About 20 s per (version, mode) on a 2-core machine: perf script's DWARF unwinding dominates.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SWITCHBACK=${SWITCHBACK:-$BUILD_DIR/tools/switchback}
VERSIONS=${VERSIONS:-"1.19 1.23 1.27"}
MODES=${MODES:-"alloc chan gosched recurse vdso leaf spin cgo"}
SECS=${SECONDS_PER_RUN:-4}
FREQ=${FREQ:-499}

die() { echo "stack_ends_vs_perf: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (BPF, perf)"
[[ -x $SWITCHBACK ]] || die "no switchback at $SWITCHBACK (ninja -C $BUILD_DIR switchback)"
# Its second figure is a timing: refuse a busy machine (ALLOW_BUSY=1 overrides).
python3 tools/bench/quiet_machine.py stack_ends_vs_perf || exit 1
command -v perf >/dev/null || die "perf not found (tools/install-deps.sh installs linux-perf)"
command -v jq >/dev/null || die "jq not found"

SCRATCH=$(mktemp -d /tmp/sb-ends.XXXXXX)
BG=()
cleanup() {
  local p
  for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "scratch kept in $SCRATCH" >&2; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go_for() {  # the go command of version $1
  if [[ $1 == 1.19 ]]; then command -v go; return; fi
  local line
  line=$(tools/fetch-go.sh "$1") || die "tools/fetch-go.sh $1 failed"
  echo "${line#* }/bin/go"
}

build() {  # build VERSION NAME CGO -> path
  local go out src=testdata/workloads/$2
  go=$(go_for "$1")
  out=$SCRATCH/go$1/$2
  (cd "$src" && env GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=$3 "$go" build -o "$out" .) >&2 || die "build $2 with go$1"
  echo "$out"
}

pct() { jq -r --arg k "$2" 'if .samples > 0 then (100 * .[$k] / .samples * 10 | round / 10 | tostring) + "%" else "-" end' <<<"$1"; }
kept() { jq -r 'if .leaf_caller_total > 0 then (100 * .leaf_caller_kept / .leaf_caller_total | round | tostring) + "%" else "-" end' <<<"$1"; }

printf '| Go | mode | switchback root | perf -g root | perf -g past root | perf dwarf root | leaf caller kept (sb / fp / dwarf) | unwind vs plain FP walk (ns/sample) |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for v in $VERSIONS; do
  demo=$(build "$v" demo 0)
  democgo=$(build "$v" democgo 1)
  for mode in $MODES; do
    d=$SCRATCH/go$v-$mode
    mkdir -p "$d"
    if [[ $mode == cgo ]]; then
      "$democgo" -duration=0 >/dev/null 2>&1 &
    else
      "$demo" -mode="$mode" -duration=0 >/dev/null 2>&1 &
    fi
    wl=$!
    BG+=("$wl")
    sleep 1
    "$SWITCHBACK" record -p "$wl" -d "$SECS" -F "$FREQ" -q --compare-fp-walk -o "$d/sb.pb.gz" \
      --folded "$d/sb.folded" --stats "$d/sb.json" 2>"$d/sb.err" &
    sb=$!
    perf record -q -g -F "$FREQ" -p "$wl" -o "$d/fp.data" -- sleep "$SECS" >/dev/null 2>&1 &
    fp=$!
    perf record -q --call-graph dwarf -F "$FREQ" -p "$wl" -o "$d/dwarf.data" -- sleep "$SECS" >/dev/null 2>&1 &
    dw=$!
    wait "$sb" || die "switchback record failed: $(cat "$d/sb.err")"
    wait "$fp" "$dw" || true
    kill -TERM "$wl" 2>/dev/null || true
    wait "$wl" 2>/dev/null || true
    perf script -i "$d/fp.data" -F tid,ip,sym >"$d/fp.txt" 2>/dev/null
    perf script -i "$d/dwarf.data" -F tid,ip,sym >"$d/dwarf.txt" 2>/dev/null
    s=$(tools/bench/stack_ends.py folded "$d/sb.folded")
    f=$(tools/bench/stack_ends.py perf "$d/fp.txt")
    w=$(tools/bench/stack_ends.py perf "$d/dwarf.txt")
    cost=$(jq -r '.bpf | if .unwound > 0 and (.fp_walk_ns // 0) > 0 then
        "\(.unwind_ns / .unwound | round) vs \(.fp_walk_ns / .unwound | round)" else "-" end' "$d/sb.json")
    printf '| %s | %s | %s (n=%s) | %s (n=%s) | %s | %s (n=%s) | %s / %s / %s | %s |\n' "$v" "$mode" \
      "$(pct "$s" root)" "$(jq .samples <<<"$s")" "$(pct "$f" root)" "$(jq .samples <<<"$f")" \
      "$(pct "$f" past_root)" "$(pct "$w" root)" "$(jq .samples <<<"$w")" \
      "$(kept "$s")" "$(kept "$f")" "$(kept "$w")" "$cost"
    if [[ -n ${OUT:-} ]]; then
      jq -c -n --arg v "$v" --arg m "$mode" --argjson s "$s" --argjson f "$f" --argjson w "$w" \
        --argjson b "$(jq .bpf "$d/sb.json")" \
        '{go: $v, mode: $m, switchback: $s, perf_fp: $f, perf_dwarf: $w, bpf: $b}' >>"$OUT"
    fi
  done
done
