#!/usr/bin/env bash
# Runs libFuzzer targets for a given time each: tools/fuzz.sh TARGET|all SECONDS
#   TARGET: one of tests/fuzz/fuzz_*.cc by name (fuzz_elf, fuzz_pclntab, ...; run without
#           arguments to list them), or `all`, one after the other
# Uses the sanitizer build ${FUZZ_BUILD_DIR:-build-asan} (clang-14, ASan+UBSan, SWITCHBACK_FUZZ)
# and configures/builds the targets there if they are missing. Seeds: the saved corpus
# tests/fuzz/corpus/TARGET plus, unless FUZZ_BINARY_SEEDS=0, the Go test binaries of the
# build (demo, demo-pie, demo-stripped, democgo) for the targets that read ELF files. New
# inputs accumulate in BUILD/fuzz-work/TARGET (kept between runs). A crash, leak, UBSan report
# or hang (over 10 s on one input) fails the run, and the input is left in
# BUILD/fuzz-artifacts/TARGET/: fix the bug, then copy the input into tests/fuzz/corpus/TARGET/
# so fuzz_regression_test replays it in every test run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every target, from the sources (each tests/fuzz/fuzz_*.cc but the regression test is one), so
# a new target needs no edit here (a list kept by hand once failed CI for a new target).
mapfile -t ALL < <(cd tests/fuzz && ls fuzz_*.cc | sed 's/\.cc$//' | grep -vx fuzz_regression_test)
if [ $# -ne 2 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "usage: tools/fuzz.sh TARGET|all SECONDS   (targets: ${ALL[*]})" >&2
  exit 2
fi
if [ "$1" = all ]; then targets=("${ALL[@]}"); else targets=("$1"); fi
for t in "${targets[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${ALL[*]})" >&2; exit 2; }
done
BUILD=${FUZZ_BUILD_DIR:-build-asan}
SECONDS_EACH=$2

missing=()
for t in "${targets[@]}"; do [ -x "$BUILD/tests/fuzz/$t" ] || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSWITCHBACK_SANITIZE=ON -DSWITCHBACK_FUZZ=ON >/dev/null
  ninja -C "$BUILD" -j"$(nproc)" "${missing[@]}"
fi

binary_seeds() {  # Go test binaries, for the targets that parse whole ELF files
  [ "${FUZZ_BINARY_SEEDS:-1}" = 1 ] || return 0
  case $1 in fuzz_elf|fuzz_pclntab|fuzz_buildinfo|fuzz_dwarf_offsets|fuzz_tls_slot) ;; *) return 0 ;; esac
  local d
  for d in "$BUILD/testdata" build/testdata; do
    if [ -x "$d/demo" ]; then
      mkdir -p "$BUILD/fuzz-seeds"
      cp -f "$d"/demo "$d"/demo-pie "$d"/demo-stripped "$d"/democgo "$BUILD/fuzz-seeds/" 2>/dev/null || true
      echo "$BUILD/fuzz-seeds"
      return 0
    fi
  done
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  work="$BUILD/fuzz-work/$t" art="$BUILD/fuzz-artifacts/$t/"
  mkdir -p "$work" "$art"
  seeds=(tests/fuzz/corpus/"$t")
  extra=$(binary_seeds "$t")
  max_len=()
  if [ -n "$extra" ]; then seeds+=("$extra"); max_len=(-max_len=$((8 << 20))); fi
  echo "fuzz.sh: $t for ${SECONDS_EACH}s (seeds: ${seeds[*]})"
  log="$BUILD/fuzz-artifacts/$t.log"
  if "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$art" "${max_len[@]}" "$work" "${seeds[@]}" >"$log" 2>&1; then
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$log" | tr '\n' ' ' | sed 's/^/  /'; echo
  else
    failed+=("$t")
    tail -n 60 "$log"
    echo "fuzz.sh: $t FAILED; input in $art (copy it into tests/fuzz/corpus/$t/ once fixed)"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then echo "fuzz.sh: failed: ${failed[*]}" >&2; exit 1; fi
echo "fuzz.sh: ${targets[*]}: no findings"
