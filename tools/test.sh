#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: says which machine it runs on,
# installs, builds, runs every test (unit, BPF integration, bad input, fuzz-corpus regression,
# the package), then builds again with the sanitizers (clang-14, ASan + UBSan with
# -fno-sanitize-recover, so any finding fails its test) and runs there every test that needs no
# BPF, every libFuzzer target for SWITCHBACK_FUZZ_SECONDS (default 20) each, and the live tests
# that drive switchback's own long-running code (record, the agent, trace, the HTTP endpoint,
# bad input, signals, short-lived processes). The live matrix of Go releases runs once, in the
# normal build: it exercises the unwind core (the same code in both builds) more than
# switchback's userspace, and under the sanitizers it is most of the time and no more coverage.
# BPF tests need root and a BTF kernel; when they cannot run they say so in their skip message.
#   SWITCHBACK_ASAN=0 tools/test.sh   skips the sanitizer build and the fuzz runs
#   tools/test.sh -R REGEX            passes its arguments to every ctest run
#   ASAN_LIVE=REGEX                   the live tests run under the sanitizers ('' none, '.' all)
# Each phase's time is printed at the end (docs/testing.md, docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/machine-info.sh
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc)
times=()
phase() {  # phase NAME COMMAND...: runs it, notes its time, keeps going on failure
  local name=$1 t0=$SECONDS st=0
  shift
  "$@" || st=$?
  times+=("$(printf '%-34s %5d s%s' "$name" $((SECONDS - t0)) "$([ $st = 0 ] || echo "  (failed: $st)")")")
  return $st
}
rc=0
phase "build" tools/build.sh
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
# Live tests are RUN_SERIAL (they load BPF and measure processes): ctest runs each alone; the
# others run $jobs at a time.
phase "ctest" bash -c 'cd "$1" && shift && ctest --output-on-failure --timeout 600 -j"$0" "$@"' \
  "$jobs" "$BUILD_DIR" "$@" || rc=1
if [ "${SWITCHBACK_ASAN:-1}" = 1 ]; then
  phase "build (sanitizers)" env BUILD_DIR="$ASAN_BUILD_DIR" tools/build.sh -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DSWITCHBACK_SANITIZE=ON -DSWITCHBACK_FUZZ=ON \
    -DSWITCHBACK_FUZZ_SECONDS="${SWITCHBACK_FUZZ_SECONDS:-20}" || rc=1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # Everything without BPF (unit, replay, fuzz corpus and fuzz runs), $jobs at a time; not the
  # package, which installs the normal build's.
  phase "ctest (sanitizers): no BPF" bash -c 'cd "$1" && shift && ctest --output-on-failure --timeout 900 -j"$0" \
    -LE "bpf|package" "$@"' "$jobs" "$ASAN_BUILD_DIR" "$@" || rc=1
  # The live tests of switchback's userspace. Not AgentCliTest.ChurnDoesNotGrow: 40 s of churn
  # whose RSS figure ASan's quarantine makes meaningless.
  ASAN_LIVE=${ASAN_LIVE-^(RecordTest|RecordCli|BadInput|SignalTest|AgentCliTest|AgentEndpointTest|TraceStacks|TracePid|TraceLatency|TraceC|UretprobeOnGo|ShortLivedTest|KernelFramesTest)\.}
  if [ -n "$ASAN_LIVE" ]; then
    phase "ctest (sanitizers): live" bash -c 'cd "$1" && shift && ctest --output-on-failure --timeout 900 -L bpf \
      -R "$0" -E "ChurnDoesNotGrow" "$@"' "$ASAN_LIVE" "$ASAN_BUILD_DIR" "$@" || rc=1
  fi
fi
echo "test.sh: time by phase"
printf '  %s\n' "${times[@]}"
echo "  total                              $SECONDS s"
exit $rc
