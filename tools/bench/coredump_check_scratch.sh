#!/usr/bin/env bash
# Scratch disk, wall time, CPU time and peak RSS of `switchback coredump check` over all cases,
# cold (empty --cache) and warm (cache kept), for one or two switchback binaries side by side:
#   tools/bench/coredump_check_scratch.sh [AFTER_BIN [BEFORE_BIN]]   (REPEAT=3 runs each, medians)
# "scratch" is the disk the cache directory holds after the run (allocated blocks, du), and
# the apparent size of its files. Figures for docs/performance.md ("Coredump check").
set -euo pipefail
cd "$(dirname "$0")/../.."
AFTER=${1:-build/tools/switchback}
BEFORE=${2:-}
REPEAT=${REPEAT:-3}
CASES=${CASES:-testdata/coredumps}
WORK=$(mktemp -d "${SCRATCH_BASE:-/var/tmp}/sb-scratch-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# run BIN CACHE -> "wall_s cpu_s maxrss_kb"; fails loudly if check fails.
run() {
  local out="$WORK/time.txt"
  TMPDIR="$WORK/tmp" /usr/bin/time -v "$1" coredump check "$CASES" --cache "$2" >"$WORK/check.txt" 2>"$out" || {
    tail -5 "$WORK/check.txt" >&2; echo "check failed with $1" >&2; exit 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); w=(n==3? t[1]*3600+t[2]*60+t[3] : t[1]*60+t[2])}
              /User time/ {u=$2} /System time/ {s=$2} /Maximum resident/ {r=$2}
              END {printf "%.2f %.2f %d\n", w, u+s, r}' "$out"
}

# Runs are interleaved (before cold, after cold, before warm, after warm, repeated) so that both
# binaries see the same machine load.
echo "coredump check of $(ls "$CASES"/*.json | wc -l) cases, medians of $REPEAT runs, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A RUNS
NAMES=()
[ -n "$BEFORE" ] && NAMES+=(before) && BIN_before=$BEFORE
NAMES+=(after) && BIN_after=$AFTER
mkdir -p "$WORK/tmp"
for i in $(seq "$REPEAT"); do
  for name in "${NAMES[@]}"; do rm -rf "$WORK/cache-$name"; done
  for kind in cold warm; do
    for name in "${NAMES[@]}"; do
      bin_var=BIN_$name
      RUNS[$name.$kind]+="$(run "${!bin_var}" "$WORK/cache-$name")"$'\n'
    done
  done
done
for name in "${NAMES[@]}"; do
  c="$WORK/cache-$name"
  disk=$(du -s --block-size=1 "$c" | cut -f1)
  apparent=$(du -s --apparent-size --block-size=1 "$c" | cut -f1)
  for kind in cold warm; do
    rows=$(printf '%s' "${RUNS[$name.$kind]}" | sed '/^$/d')
    printf '%-7s %-5s wall %6.2f s  cpu %6.2f s  peak RSS %5d MB  scratch %5d MB on disk (%d MB apparent)\n' \
      "$name" "$kind" \
      "$(cut -d' ' -f1 <<<"$rows" | median)" "$(cut -d' ' -f2 <<<"$rows" | median)" \
      "$(( $(cut -d' ' -f3 <<<"$rows" | median | cut -d. -f1) / 1024 ))" "$((disk >> 20))" "$((apparent >> 20))"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
