#!/usr/bin/env bash
# Soak of the exit probes: `switchback trace` attached to the traced workload's binary
# for SECONDS (default 600) while the workload (stack growth in main.deep, panics, defer, Goexit,
# many goroutines) runs back to back; then checks that every run exited normally, that for every
# function the trace's calls, exits and aborted equal the sum of the workload's own counters
# (nothing dropped, nothing in flight), and reports switchback's peak RSS and CPU time.
# Usage: tools/soak/exitprobe_soak.sh [BUILD_DIR] [SECONDS]     (root; default build, 600)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SECS=${2:-600}
SB=$BUILD_DIR/tools/switchback
W=$BUILD_DIR/testdata/traced
FUNCS='^main\.(leafPanic|middle|recoverer|withDefer|deep|deepTop|exitVia|sleeper)$'
[[ $(id -u) == 0 ]] || { echo "exitprobe_soak: needs root" >&2; exit 1; }
[[ -x $SB && -x $W ]] || { echo "exitprobe_soak: build switchback and the workloads first" >&2; exit 1; }
D=$(mktemp -d /tmp/sb-soak.XXXXXX)
"$SB" trace --binary "$W" --func "$FUNCS" --duration "$SECS" --json "$D/trace.json" >"$D/trace.out" 2>"$D/trace.err" &
T=$!
for _ in $(seq 600); do grep -q "switchback: tracing" "$D/trace.err" "$D/trace.out" 2>/dev/null && break; sleep 0.1; done
start=$(date +%s); runs=0; bad=0; peak=0
while (( $(date +%s) - start < SECS - 30 )); do
  runs=$((runs + 1))
  "$W" -goroutines 16 -iterations 300 -counters "$D/c$runs.json" >/dev/null 2>"$D/w$runs.err" || bad=$((bad + 1))
  rss=$(awk '/VmHWM/ {print $2}' /proc/$T/status 2>/dev/null || echo 0)
  (( rss > peak )) && peak=$rss
done
wait "$T" || { echo "switchback trace failed: $(tail -3 "$D/trace.err")"; exit 1; }
python3 - "$D" "$runs" "$bad" "$peak" <<'PY'
import json, sys, glob
d, runs, bad, peak = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want = {}
for f in glob.glob(d + "/c*.json"):
    for fn, c in json.load(open(f)).items():
        w = want.setdefault(fn, {"calls": 0, "aborted": 0})
        w["calls"] += c["calls"]; w["aborted"] += c.get("aborted", 0)
rep = json.load(open(d + "/trace.json"))
ok = bad == 0
for fn, w in sorted(want.items()):
    g = rep["functions"].get(fn, {})
    exact = g.get("calls") == w["calls"] and g.get("aborted") == w["aborted"] and \
        g.get("calls") == g.get("exits", 0) + g.get("aborted", 0) and not g.get("dropped") and not g.get("in_flight")
    ok &= exact
    print(f"{fn:20} calls {g.get('calls')} (workload {w['calls']}) exits {g.get('exits')} aborted {g.get('aborted')} "
          f"(workload {w['aborted']}) dropped {g.get('dropped')} in flight {g.get('in_flight')} {'ok' if exact else 'MISMATCH'}")
print(f"runs {runs}, failed runs {bad}, switchback peak RSS {peak} kB, counters {json.dumps(rep.get('counters'))}")
print("SOAK", "PASS" if ok else "FAIL")
PY
