#!/usr/bin/env bash
# Churn soak of `switchback agent`: 20 long-running Go processes (the demo workload,
# niced) plus one new short-lived one (2 s) every second, for SECONDS (default 3600), with
# 60 s windows and --max-disk MAX (default 512KiB, reached in about 15 minutes). Every minute
# it samples the agent's RSS, open fds, the pids in its BPF process map (all must be alive)
# and the bytes of its files, and prints one CSV line; at the end, the ranges.
# Usage: tools/soak/agent_churn_soak.sh [BUILD_DIR] [SECONDS] [OUT_DIR] [MAX]    (root)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SECS=${2:-3600}
D=${3:-$(mktemp -d /tmp/sb-agent-soak.XXXXXX)}
MAX=${4:-512KiB}
SB=$BUILD_DIR/tools/switchback
[[ $(id -u) == 0 ]] || { echo "agent_churn_soak: needs root" >&2; exit 1; }
[[ -x $SB && -x $BUILD_DIR/testdata/demo ]] || { echo "agent_churn_soak: build switchback and the workloads first" >&2; exit 1; }
mkdir -p "$D"
# Copies of their own, so that --exe selects the soak's processes and no one else's.
cp "$SB" "$D/switchback"; SB=$D/switchback
cp "$BUILD_DIR/testdata/demo" "$D/soak-demo"; W=$(realpath "$D/soak-demo")
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; [[ -n ${A:-} ]] && kill -TERM "$A" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 20); do nice -n 19 "$W" -mode=spin -duration=0 >/dev/null 2>&1 & pids+=($!); done
"$SB" agent --dir "$D/data" --exe "^$W\$" --max-disk "$MAX" 2>"$D/agent.log" &
A=$!
for _ in $(seq 600); do ls -l /proc/$A/fd 2>/dev/null | grep -q perf_event && break; sleep 0.1; done
map_pids() {  # the agent's proc_info map: "count dead"
  for f in /proc/$A/fdinfo/*; do
    id=$(awk '/map_id:/ {print $2}' "$f" 2>/dev/null); [[ -n $id ]] || continue
    bpftool -j map show id "$id" 2>/dev/null | grep -q '"proc_info"' || continue
    bpftool -j map dump id "$id" 2>/dev/null | python3 -c '
import json, os, sys
keys = [e["key"] for e in json.load(sys.stdin)]
pids = [k if isinstance(k, int) else int.from_bytes(bytes(int(b, 16) for b in k), "little") for k in keys]
print(len(pids), sum(1 for p in pids if not os.path.exists("/proc/%d" % p)))'
    return
  done
  echo "? ?"
}
echo "minute,rss_kb,rss_anon_kb,fds,map_entries,map_dead,dir_bytes,followed_total" | tee "$D/soak.csv"
start=$(date +%s); next=$start
while (( $(date +%s) - start < SECS )); do
  nice -n 19 "$W" -mode=spin -duration=2s >/dev/null 2>&1 &
  sleep 1
  if (( $(date +%s) >= next )); then
    next=$((next + 60))
    rss=$(awk '/VmRSS/ {print $2}' /proc/$A/status)
    anon=$(awk '/RssAnon/ {print $2}' /proc/$A/status)  # the heap; the rest is mapped files
    fds=$(ls /proc/$A/fd | wc -l)
    read -r ent dead < <(map_pids)
    # What --max-disk bounds: the files (du would add the day folder's own size, which ext4
    # never shrinks after many entries).
    bytes=$(find "$D/data" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    followed=$(grep -c "following process" "$D/agent.log" || true)
    echo "$(( ($(date +%s) - start) / 60 )),$rss,$anon,$fds,$ent,$dead,$bytes,$followed" | tee -a "$D/soak.csv"
  fi
done
kill -TERM "$A"; wait "$A" || true; A=
python3 - "$D/soak.csv" "$MAX" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))[1:]  # minute 0 is the start-up
if not rows: sys.exit("no samples")
def rng(k): v = [int(r[k]) for r in rows if r[k].isdigit()]; return "%d..%d" % (min(v), max(v)) if v else "?"
print("after minute 1: rss_kb %s (anon %s), fds %s, map entries %s, dead pids in map %s (exited < 0.5 s before), "
      "dir bytes %s (--max-disk %s)" % (rng("rss_kb"), rng("rss_anon_kb"), rng("fds"), rng("map_entries"), rng("map_dead"),
                                        rng("dir_bytes"), sys.argv[2]))
PY
echo "soak output: $D"
