#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: install, build, run every test
# (unit, BPF integration, bad input, fuzz-corpus regression), then the same suite again in a
# sanitizer build (clang-14, ASan + UBSan with -fno-sanitize-recover, so any finding fails its
# test) that also runs every libFuzzer target for SWITCHBACK_FUZZ_SECONDS (default 20) each.
# BPF tests need root and a BTF kernel; when they cannot run they say so in their skip message.
#   SWITCHBACK_ASAN=0 tools/test.sh   skips the sanitizer build and the fuzz runs
#   tools/test.sh -R REGEX            passes its arguments to both ctest runs
set -euo pipefail
cd "$(dirname "$0")/.."
tools/machine-info.sh
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
tools/build.sh
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
rc=0
(cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j1 "$@") || rc=1
if [ "${SWITCHBACK_ASAN:-1}" = 1 ]; then
  BUILD_DIR=$ASAN_BUILD_DIR tools/build.sh -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSWITCHBACK_SANITIZE=ON -DSWITCHBACK_FUZZ=ON -DSWITCHBACK_FUZZ_SECONDS="${SWITCHBACK_FUZZ_SECONDS:-20}"
  # Every test runs here too (BPF ones included: libbpf and the skeleton load fine under ASan),
  # except, by default, the tests whose time is building programs with the 7 fetched Go
  # toolchains (GoVersionsTest, LiveStackEndsTest, the *Go121To127* offsets tests: about 14 minutes). The code they
  # exercise (recorder, DWARF and assembly offset derivation) runs under the sanitizers here
  # through record_test, the Go 1.19 offsets tests, the lefthook tests and the fuzz targets.
  # ASAN_EXCLUDE=REGEX sets the list ('' runs everything).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # AgentCliTest.ChurnDoesNotGrow checks RSS and fds over 40 s of process churn: under ASan's
  # quarantine RSS grows by design, so the check means nothing there.
  # The labels test on the fetched toolchains (go12x) is left out for time as GoVersionsTest is;
  # Go 1.19 runs here.
  ASAN_EXCLUDE=${ASAN_EXCLUDE-GoVersionsTest|LiveStackEndsTest|Go121To127|ChurnDoesNotGrow|SharesMatchRuntimePprof/go12}
  (cd "$ASAN_BUILD_DIR" && ctest --output-on-failure --timeout 900 -j1 ${ASAN_EXCLUDE:+-E "$ASAN_EXCLUDE"} "$@") || rc=1
fi
exit $rc
