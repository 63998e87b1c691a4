#!/usr/bin/env bash
# The main job on the bundled demo workload: install, build, run the demo Go program, record
# it for 10 seconds, show the top functions and where the pprof, folded and SVG files are.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# The CLI and the demo workload only: the first profile comes before the test suite is built.
BUILD_TARGETS="switchback testdata/demo" tools/build.sh
out=${OUT_DIR:-$PWD/demo-output}
mkdir -p "$out"
"$BUILD_DIR/testdata/demo" -mode=all -duration=15s -cpuprofile "$out/runtime-pprof.pb.gz" &
demo=$!
trap 'kill $demo 2>/dev/null || true' EXIT
sleep 1
"$BUILD_DIR/tools/switchback" record --pid "$demo" --duration 10 --frequency 99 \
  --output "$out/switchback.pb.gz" --folded "$out/switchback.folded" \
  --flamegraph "$out/switchback.svg" --stats "$out/stats.json"
echo
echo "Files in $out:"
echo "  switchback.pb.gz     pprof (go tool pprof -top $out/switchback.pb.gz)"
echo "  switchback.folded    folded stacks, root first"
echo "  switchback.svg       flame graph (open in a browser)"
echo "  stats.json           samples, stop reasons, switches crossed"
echo "  runtime-pprof.pb.gz  the workload's own runtime/pprof profile, for comparison"
wait $demo || true
