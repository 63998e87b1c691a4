#!/usr/bin/env bash
# Figures of serve/ for docs/performance.md ("HTTP endpoint and push"), one run:
#  (1) latency of GET /debug/pprof/profile?seconds=1 beyond the requested second (median of
#      ROUNDS) and the server's CPU while answering one such request per second, against a
#      ProfileSource that returns a real Go profile (serve_bench latency: the HTTP server, the
#      pprof encoding, curl as the client);
#  (2) a push outage: PROCESSES processes writing a window every WINDOW_SECONDS during
#      OUTAGE_SECONDS of a backend answering 500, replayed time-compressed through the real
#      pusher and spool (serve_bench outage), each window a real one: `switchback record` of
#      the demo workload for WINDOW_SECONDS at the agent's 19 Hz (needs root and BPF; without
#      them the 587-byte fixture profile stands in and the script says so);
#  (3) the same two figures as (1) on the real agent (needs root and BPF): `switchback agent
#      --listen 0` following the demo workload; ROUNDS requests ?pid=DEMO&seconds=1 back to back
#      (median time beyond the second), and the agent's CPU (utime+stime from /proc/PID/stat)
#      over those rounds against the same time without requests.
# Usage: tools/bench/serve_figures.sh [BUILD_DIR]
# Environment: ROUNDS (default 20), PROCESSES (20), WINDOW_SECONDS (60), OUTAGE_SECONDS (600),
#              KEEP=1 keeps the scratch directory.
set -euo pipefail
BUILD_DIR=${1:-build}
ROUNDS=${ROUNDS:-20}
PROCESSES=${PROCESSES:-20}
WINDOW_SECONDS=${WINDOW_SECONDS:-60}
OUTAGE_SECONDS=${OUTAGE_SECONDS:-600}
BENCH=$BUILD_DIR/tests/serve/serve_bench
SWITCHBACK=$BUILD_DIR/tools/switchback
DEMO=$BUILD_DIR/testdata/demo
die() { echo "serve_figures: $*" >&2; exit 1; }
[[ -x $BENCH ]] || die "no $BENCH (ninja -C $BUILD_DIR serve_bench)"

SCRATCH=$(mktemp -d /tmp/sb-serve-figures.XXXXXX)
DEMO_PID=
cleanup() {
  [[ -n $DEMO_PID ]] && kill "$DEMO_PID" 2>/dev/null || true
  if [[ ${KEEP:-0} == 1 ]]; then echo "scratch kept in $SCRATCH" >&2; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT

echo "== (1) /debug/pprof/profile latency and CPU, $ROUNDS rounds"
"$BENCH" latency "$ROUNDS"

echo "== (2) push outage replay"
WINDOW=$SCRATCH/window.pb.gz
if [[ $(id -u) == 0 && -x $SWITCHBACK && -x $DEMO ]]; then
  "$DEMO" -mode=all -duration=$((WINDOW_SECONDS + 30))s >/dev/null &
  DEMO_PID=$!
  sleep 1
  if "$SWITCHBACK" record --pid "$DEMO_PID" --duration "$WINDOW_SECONDS" --frequency 19 --output "$WINDOW" \
       >"$SCRATCH/record.log" 2>&1; then
    echo "window: switchback record of demo -mode=all, ${WINDOW_SECONDS} s at 19 Hz: $(stat -c %s "$WINDOW") bytes"
  else
    echo "window: record failed ($(tail -1 "$SCRATCH/record.log")); using the fixture profile"
    WINDOW=
  fi
  kill "$DEMO_PID" 2>/dev/null || true
  wait "$DEMO_PID" 2>/dev/null || true
  DEMO_PID=
else
  echo "window: no root/BPF or no switchback/demo binaries; using the fixture profile"
  WINDOW=
fi
if [[ -z $WINDOW ]]; then
  WINDOW=$(dirname "$0")/../../tests/fuzz/corpus/fuzz_pprof_reader/go_runtime_cpu_gz
fi
"$BENCH" outage "$WINDOW" "$PROCESSES" "$WINDOW_SECONDS" "$OUTAGE_SECONDS"

echo "== (3) the real agent"
if [[ $(id -u) != 0 || ! -x $SWITCHBACK || ! -x $DEMO ]]; then
  echo "skipped: needs root, BPF and the switchback/demo binaries"
  exit 0
fi
"$DEMO" -mode=spin -duration=0 >/dev/null &
DEMO_PID=$!
"$SWITCHBACK" agent --dir "$SCRATCH/agent" --exe "^$(realpath "$DEMO")\$" --listen 0 2>"$SCRATCH/agent.log" &
AGENT_PID=$!
trap 'kill $AGENT_PID 2>/dev/null || true; cleanup' EXIT
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*serve: listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$SCRATCH/agent.log" | head -1)
  [[ -n $port ]] && grep -q "following process $DEMO_PID" "$SCRATCH/agent.log" && break
  sleep 0.1
done
[[ -n $port ]] || die "agent did not come up: $(tail -3 "$SCRATCH/agent.log")"
cpu() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$AGENT_PID/stat"; }
tck=$(getconf CLK_TCK)
url="http://127.0.0.1:$port/debug/pprof/profile?pid=$DEMO_PID&seconds=1"
c0=$(cpu); t0=$(date +%s.%N)
beyond=()
for _ in $(seq 1 "$ROUNDS"); do
  s=$(date +%s.%N)
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$url")
  [[ $code == 200 ]] || die "answer $code"
  beyond+=("$(echo "($(date +%s.%N) - $s - 1) * 1000" | bc -l)")
done
c1=$(cpu); t1=$(date +%s.%N)
sleep "$(echo "$t1 - $t0" | bc -l)"
c2=$(cpu); t2=$(date +%s.%N)
median=$(printf '%s\n' "${beyond[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
printf 'agent: profile?seconds=1 beyond the second: median %.1f ms (%d rounds)\n' "$median" "$ROUNDS"
printf 'agent CPU: %.2f%% of one core while serving one 1 s profile per second, %.2f%% without requests\n' \
  "$(echo "100 * ($c1 - $c0) / $tck / ($t1 - $t0)" | bc -l)" "$(echo "100 * ($c2 - $c1) / $tck / ($t2 - $t1)" | bc -l)"
kill "$AGENT_PID" 2>/dev/null || true
wait "$AGENT_PID" 2>/dev/null || true
