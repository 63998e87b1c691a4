#!/usr/bin/env bash
# Cost per traced call of `switchback trace --stacks` (docs/performance.md, "Trace"): the traced
# workload's `-bench N` (N calls of main.tiny, CPU ns per call of its thread) untraced, traced,
# traced with --stacks (every exit unwinds the caller's stack), and with --stacks --slower-than 1s
# (no call is that slow: the unwind is skipped). Rounds interleave the modes; medians; the
# per-call cost is traced minus untraced, and the ratios are to plain tracing measured in the
# same rounds.
#   tools/bench/trace_stacks.sh [BUILD_DIR]    (as root; REPEAT=5, CALLS=20000)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SB=$BUILD/tools/switchback
W=$BUILD/testdata/traced
REPEAT=${REPEAT:-5}
CALLS=${CALLS:-20000}
WORK=$(mktemp -d /tmp/sb-trace-stacks.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() {  # MODE ARGS... -> ns per call
  local mode=$1; shift
  if [ "$mode" = untraced ]; then "$W" -bench "$CALLS"; return; fi
  "$SB" trace --binary "$W" --func '^main\.tiny$' --quiet "$@" >"$WORK/t.out" 2>"$WORK/t.err" &
  local tp=$!
  for _ in $(seq 200); do grep -q "switchback: tracing" "$WORK/t.err" 2>/dev/null && break; sleep 0.1; done
  "$W" -bench "$CALLS"
  kill -INT "$tp"; wait "$tp" || true
}
echo "trace cost per call of main.tiny, $REPEAT rounds x $CALLS calls, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPEAT"); do
  echo "untraced $(run untraced)" >>"$WORK/rows.txt"
  echo "plain $(run plain)" >>"$WORK/rows.txt"
  echo "stacks $(run stacks --stacks)" >>"$WORK/rows.txt"
  echo "slower $(run slower --stacks --slower-than 1s)" >>"$WORK/rows.txt"
done
base=$(awk '$1=="untraced" {print $2}' "$WORK/rows.txt" | median)
plain=$(awk '$1=="plain" {print $2}' "$WORK/rows.txt" | median)
printf "%-34s %12s %12s\n" mode "ns/call" "ratio to plain"
for m in plain stacks slower; do
  v=$(awk -v m="$m" '$1==m {print $2}' "$WORK/rows.txt" | median)
  name=$m; [ "$m" = stacks ] && name="--stacks"; [ "$m" = slower ] && name="--stacks --slower-than 1s"
  printf "%-34s %12.0f %12.2f\n" "$name" "$(echo "$v - $base" | bc -l)" "$(echo "($v - $base) / ($plain - $base)" | bc -l)"
done
