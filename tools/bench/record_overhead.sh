#!/usr/bin/env bash
# Overhead of `switchback record`, measured side by side in one run, rounds interleaved so that
# drift and noise from other work on the machine hit every configuration alike; medians shown.
#
#  (a) BPF cost per sample: kernel.bpf_stats_enabled=1, record `demo -mode=depth -depth=N`
#      (N = 16, 64, 128 frames of main.depthRecurse above a spinning leaf, 2 workers to fill two
#      CPUs) with --pid at 999 Hz, and read bpf.run_time_ns / bpf.run_cnt from --stats.
#  (b) Slowdown of `demo -mode=spin -workers=1` (iterations/s from -counters) while recorded by
#      switchback at 99 and 999 Hz and by `perf record -g -F 99/999`, as ratios to the
#      unrecorded run. Both recorders sample system-wide (`switchback record --all`,
#      `perf record -a`) and are attached (their perf_event fds open) before the workload
#      starts, so the whole measured run is recorded.
#
# Usage: tools/bench/record_overhead.sh [BUILD_DIR]      (needs root; default BUILD_DIR=build)
# Environment: SWITCHBACK, DEMO (binaries), ROUNDS (default 5), SPIN_SECONDS (default 3),
#              DEPTH_SECONDS (default 2), DEPTHS (default "16 64 128"), KEEP=1 keeps the
#              scratch directory, OUT=FILE also writes the summary as JSON.
# Runs in about 3-4 minutes on a 2-core machine with the defaults. Restores bpf_stats_enabled.
set -euo pipefail

BUILD_DIR=${1:-build}
SWITCHBACK=${SWITCHBACK:-$BUILD_DIR/tools/switchback}
DEMO=${DEMO:-$BUILD_DIR/testdata/demo}
ROUNDS=${ROUNDS:-5}
SPIN_SECONDS=${SPIN_SECONDS:-3}
DEPTH_SECONDS=${DEPTH_SECONDS:-2}
DEPTHS=${DEPTHS:-"16 64 128"}
NCPU=$(nproc)

die() { echo "record_overhead: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (BPF, perf -a, sysctl)"
[[ -x $SWITCHBACK ]] || die "no switchback binary at $SWITCHBACK (build target switchback, or set SWITCHBACK)"
[[ -x $DEMO ]] || die "no demo workload at $DEMO (build target workloads, or set DEMO)"
command -v perf >/dev/null || die "perf not found"
command -v jq >/dev/null || die "jq not found"
(( ROUNDS >= 1 )) || die "ROUNDS must be >= 1"

SCRATCH=$(mktemp -d /tmp/sb-bench.XXXXXX)
OLD_BPF_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
BG_PIDS=()
cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  sysctl -q -w kernel.bpf_stats_enabled="$OLD_BPF_STATS" >/dev/null || true
  if [[ ${KEEP:-0} == 1 ]]; then echo "scratch kept in $SCRATCH" >&2; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null

# Waits until process $1 has at least $2 perf_event fds open (the recorder is attached), or
# fails after 20 s. Returns non-zero if the process exited first.
wait_attached() {
  local pid=$1 want=$2 i n fd
  for ((i = 0; i < 400; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    n=0
    for fd in "/proc/$pid/fd/"*; do
      [[ $(readlink "$fd" 2>/dev/null) == *perf_event* ]] && n=$((n + 1))
    done
    (( n >= want )) && { sleep 0.2; return 0; }
    sleep 0.05
  done
  return 1
}

# Reaps background process $1; fails with its stderr file $2 if it did not exit 0 (or with
# one of the extra accepted exit codes $3...).
reap() {
  local pid=$1 err=$2 rc=0 ok
  wait "$pid" || rc=$?
  for ok in "${@:3}"; do (( rc == ok )) && rc=0; done
  local keep=() p
  for p in "${BG_PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
  BG_PIDS=("${keep[@]}")
  (( rc == 0 )) || { echo "record_overhead: background command failed (rc=$rc):" >&2; tail -5 "$err" >&2; return 1; }
}

RESULTS=$SCRATCH/results.tsv   # config <tab> round <tab> value
: >"$RESULTS"

# (b) one spin run; sets SPIN_RATE (iterations/s).
spin_run() {
  local config=$1 tag="$SCRATCH/spin-$1-$2" rec=""
  case $config in
    base) ;;
    sb99 | sb999)
      "$SWITCHBACK" record --all --duration $((SPIN_SECONDS + 30)) --frequency "${config#sb}" \
        --output "$tag.pb.gz" --stats "$tag.stats.json" --quiet >"$tag.rec.out" 2>"$tag.rec.err" &
      rec=$!
      ;;
    perf99 | perf999)
      perf record -a -g -F "${config#perf}" -B -N -q -o "$tag.perf.data" -- sleep $((SPIN_SECONDS + 30)) \
        >"$tag.rec.out" 2>"$tag.rec.err" &
      rec=$!
      ;;
  esac
  if [[ -n $rec ]]; then
    BG_PIDS+=("$rec")
    wait_attached "$rec" "$NCPU" || { tail -5 "$tag.rec.err" >&2; die "$config did not attach (see $tag.rec.err)"; }
  fi
  "$DEMO" -mode=spin -workers=1 -duration="${SPIN_SECONDS}s" -counters "$tag.counters.json"
  if [[ -n $rec ]]; then
    # Stop the recorder now (it was started with a generous duration): SIGINT ends a recording
    # early and still writes its outputs.
    kill -INT "$rec" 2>/dev/null || true
    # perf forwards the end of its `sleep` workload as its own exit status (SIGTERM: 143).
    if [[ $config == perf* ]]; then reap "$rec" "$tag.rec.err" 143 130 || true; else reap "$rec" "$tag.rec.err" || true; fi
  fi
  SPIN_RATE=$(jq -r '.rates.spin' "$tag.counters.json")
}

# (a) one depth run; sets DEPTH_NS (BPF run time), DEPTH_CNT (runs), DEPTH_SAMPLES.
depth_run() {
  local depth=$1 tag="$SCRATCH/depth-$1-$2" demo
  "$DEMO" -mode=depth -depth="$depth" -workers=2 -duration=0 &
  demo=$!
  BG_PIDS+=("$demo")
  sleep 0.3
  "$SWITCHBACK" record --pid "$demo" --duration "$DEPTH_SECONDS" --frequency 999 \
    --output "$tag.pb.gz" --stats "$tag.stats.json" --quiet >"$tag.rec.out" 2>"$tag.rec.err" ||
    { tail -5 "$tag.rec.err" >&2; kill -KILL "$demo"; die "switchback record failed (depth $depth)"; }
  kill -INT "$demo"
  reap "$demo" /dev/null || true
  DEPTH_NS=$(jq -r '.bpf.run_time_ns // 0' "$tag.stats.json")
  DEPTH_CNT=$(jq -r '.bpf.run_cnt // 0' "$tag.stats.json")
  DEPTH_SAMPLES=$(jq -r '.samples // 0' "$tag.stats.json")
  DEPTH_UNWIND_NS=$(jq -r '.bpf.unwind_ns // 0' "$tag.stats.json")
  DEPTH_UNWOUND=$(jq -r '.bpf.unwound // 0' "$tag.stats.json")
}

SPIN_CONFIGS=(base sb99 sb999 perf99 perf999)
ALL_CONFIGS=()
for d in $DEPTHS; do ALL_CONFIGS+=("depth$d"); done
ALL_CONFIGS+=("${SPIN_CONFIGS[@]}")
N=${#ALL_CONFIGS[@]}

start=$(date +%s)
echo "record_overhead: $ROUNDS rounds of ${ALL_CONFIGS[*]} (interleaved, rotating order); $NCPU CPUs" >&2
for ((r = 1; r <= ROUNDS; r++)); do
  for ((k = 0; k < N; k++)); do
    config=${ALL_CONFIGS[$(((k + r - 1) % N))]}
    case $config in
      depth*)
        depth_run "${config#depth}" "$r"
        if [[ $DEPTH_CNT =~ ^[0-9]+$ ]] && (( DEPTH_CNT > 0 )); then
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$r" \
            "$(awk -v a="$DEPTH_NS" -v b="$DEPTH_CNT" 'BEGIN { printf "%.1f", a / b }')" \
            "$DEPTH_CNT" "$DEPTH_SAMPLES" \
            "$(awk -v a="$DEPTH_UNWIND_NS" -v b="$DEPTH_UNWOUND" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')" >>"$RESULTS"
        else
          echo "record_overhead: no bpf run counts in stats for $config round $r (run_cnt=$DEPTH_CNT)" >&2
        fi
        ;;
      *)
        spin_run "$config" "$r"
        printf '%s\t%s\t%s\n' "$config" "$r" "$SPIN_RATE" >>"$RESULTS"
        ;;
    esac
  done
  echo "  round $r done ($(( $(date +%s) - start )) s)" >&2
done

# Summary: medians per config; spin configs as ratios to the unrecorded baseline.
python3 - "$RESULTS" "$ROUNDS" "${OUT:-}" "$DEPTHS" <<'EOF'
import json, statistics, sys
path, rounds, out, depths = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
rows = {}  # config -> {round: [values]}
for line in open(path):
    f = line.rstrip("\n").split("\t")
    rows.setdefault(f[0], {})[int(f[1])] = [float(x) for x in f[2:]]
def col(config, i=0):
    return [v[i] for v in rows.get(config, {}).values() if len(v) > i]
def med(config, i=0):
    v = col(config, i)
    return statistics.median(v) if v else float("nan")
summary = {"rounds": rounds, "bpf": {}, "spin": {}}
print(f"(a) BPF sampler cost, demo -mode=depth -workers=2, 999 Hz, median of {rounds} rounds")
print("    ns/run = run_time_ns / run_cnt (every run of the program, on any process);")
print("    ns/sample = run_time_ns / samples kept for the demo (all BPF time charged to them)")
print("    unwind ns = time inside the unwinder per unwound sample (bpf_ktime_get_ns around it)")
print(f"    {'depth':>5}  {'ns/run':>7}  {'(min':>7}  {'max)':>7}  {'ns/sample':>9}  {'unwind ns':>9}  {'runs':>6}  {'samples':>7}")
for d in depths:
    c = "depth" + d
    v = col(c)
    if not v:
        print(f"    {d:>5}  (no data)")
        continue
    per_sample = [r[0] * r[1] / r[2] for r in rows[c].values() if len(r) > 2 and r[2] > 0]
    ps = statistics.median(per_sample) if per_sample else float("nan")
    print(f"    {d:>5}  {med(c):7.0f}  {min(v):7.0f}  {max(v):7.0f}  {ps:9.0f}  {med(c, 3):9.0f}  {med(c, 1):6.0f}  {med(c, 2):7.0f}")
    summary["bpf"][d] = {"ns_per_run": med(c), "ns_per_sample": ps, "unwind_ns_per_sample": med(c, 3)}
names = {"base": "unrecorded", "sb99": "switchback 99 Hz", "sb999": "switchback 999 Hz",
         "perf99": "perf -g -F 99", "perf999": "perf -g -F 999"}
base = rows.get("base", {})
print(f"(b) demo -mode=spin -workers=1 throughput, {rounds} rounds; ratio = this config / the same")
print("    round's unrecorded run (median of the per-round ratios, then min and max); < 1 is slower")
print(f"    {'config':<20} {'median iter/s':>13}  {'ratio':>6}  {'(min':>6}  {'max)':>6}")
for c in ["base", "sb99", "sb999", "perf99", "perf999"]:
    if c not in rows:
        print(f"    {names[c]:<20} (no data)")
        continue
    rr = [v[0] / base[r][0] for r, v in rows[c].items() if r in base and base[r][0] > 0]
    ratio = statistics.median(rr) if rr else float("nan")
    lo, hi = (min(rr), max(rr)) if rr else (float("nan"), float("nan"))
    print(f"    {names[c]:<20} {med(c):13.0f}  {ratio:6.3f}  {lo:6.3f}  {hi:6.3f}")
    summary["spin"][c] = {"iter_per_s": med(c), "ratio": ratio}
if out:
    json.dump(summary, open(out, "w"), indent=2)
EOF
echo "record_overhead: $(( $(date +%s) - start )) s" >&2
