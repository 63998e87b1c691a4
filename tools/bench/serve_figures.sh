#!/usr/bin/env bash
# Figures of serve/ (issue 12) for the README, one run:
#  (1) latency of GET /debug/pprof/profile?seconds=1 beyond the requested second (median of
#      ROUNDS) and the server's CPU while answering one such request per second, against a
#      ProfileSource that returns a real Go profile (serve_bench latency: the HTTP server, the
#      pprof encoding, curl as the client);
#  (2) a push outage: PROCESSES processes writing a window every WINDOW_SECONDS during
#      OUTAGE_SECONDS of a backend answering 500, replayed time-compressed through the real
#      pusher and spool (serve_bench outage), each window a real one: `switchback record` of
#      the demo workload for WINDOW_SECONDS at the agent's 19 Hz (needs root and BPF; without
#      them the 587-byte fixture profile stands in and the script says so).
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
