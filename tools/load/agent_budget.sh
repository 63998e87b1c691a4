#!/usr/bin/env bash
# The agent's cost (docs/performance.md, "The agent"): N busy Go processes (default 50, the demo
# workload spinning, niced so the rest of the machine goes first) profiled by `switchback agent`
# at 19 Hz for SECONDS (default 600). Reports the agent's CPU as a share of one CPU: user + system from
# /proc/PID/stat, plus its BPF program's run time (kernel.bpf_stats_enabled, from bpftool), and
# its RSS (median and max of samples every 10 s, after the first minute of start-up).
# Usage: tools/load/agent_budget.sh [BUILD_DIR] [SECONDS] [N]    (root)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SECS=${2:-600}
N=${3:-50}
SB=$BUILD_DIR/tools/switchback
[[ $(id -u) == 0 ]] || { echo "agent_budget: needs root" >&2; exit 1; }
D=$(mktemp -d /tmp/sb-agent-budget.XXXXXX)
cp "$BUILD_DIR/testdata/demo" "$D/budget-demo"; W=$(realpath "$D/budget-demo")  # --exe selects only ours
pids=()
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; [[ -n ${A:-} ]] && kill -TERM "$A" 2>/dev/null || true;
            sysctl -qw kernel.bpf_stats_enabled="$old_stats"; }
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
for _ in $(seq "$N"); do nice -n 19 "$W" -mode=spin -duration=0 >/dev/null 2>&1 & pids+=($!); done
"$SB" agent --dir "$D/data" --exe "^$W\$" 2>"$D/agent.log" &
A=$!
for _ in $(seq 600); do ls -l /proc/$A/fd 2>/dev/null | grep -q perf_event && break; sleep 0.1; done
prog_ns() {  # run time of the agent's BPF programs
  local total=0
  for f in /proc/$A/fdinfo/*; do
    id=$(awk '/prog_id:/ {print $2}' "$f" 2>/dev/null); [[ -n $id ]] || continue
    ns=$(bpftool -j prog show id "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("run_time_ns",0))')
    total=$((total + ns))
  done
  echo "$total"
}
cpu_ticks() { awk '{print $14 + $15}' /proc/$A/stat; }
sleep 60  # start-up: the scan, analysing the binary once
t0=$(date +%s.%N); c0=$(cpu_ticks); b0=$(prog_ns)
rss=()
end=$(( $(date +%s) + SECS ))
while (( $(date +%s) < end )); do sleep 10; rss+=("$(awk '/VmRSS/ {print $2}' /proc/$A/status)"); done
t1=$(date +%s.%N); c1=$(cpu_ticks); b1=$(prog_ns)
hz=$(getconf CLK_TCK)
windows=$(grep -c "wrote " "$D/agent.log" || true)
python3 - "$t0" "$t1" "$c0" "$c1" "$b0" "$b1" "$hz" "$N" "$windows" "${rss[@]}" <<'PY'
import statistics, sys
t0, t1, c0, c1, b0, b1, hz, n, windows = sys.argv[1:10]
rss = [int(x) for x in sys.argv[10:]]
wall = float(t1) - float(t0)
user_sys = (int(c1) - int(c0)) / int(hz)
bpf = (int(b1) - int(b0)) / 1e9
print("%s busy Go processes, 19 Hz, %.0f s: agent user+sys %.2f%% of one CPU, BPF %.2f%%, total %.2f%%; "
      "RSS median %.1f MB, max %.1f MB; %s window files" % (
      n, wall, 100 * user_sys / wall, 100 * bpf / wall, 100 * (user_sys + bpf) / wall,
      statistics.median(rss) / 1024, max(rss) / 1024, windows))
PY
