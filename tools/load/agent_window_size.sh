#!/usr/bin/env bash
# Window file size with and without --goroutine-labels: one busy demo process (all
# modes, 8 workers each: many goroutines), two agents side by side on it at 19 Hz with 60 s
# windows, one with --goroutine-labels; prints the median size of each agent's files.
# Usage: tools/load/agent_window_size.sh [BUILD_DIR] [WINDOWS]    (root; default 3 windows)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
WINDOWS=${2:-3}
SB=$BUILD_DIR/tools/switchback
W=$BUILD_DIR/testdata/demo
[[ $(id -u) == 0 ]] || { echo "agent_window_size: needs root" >&2; exit 1; }
D=$(mktemp -d /tmp/sb-agent-size.XXXXXX)
"$W" -mode=all -workers=8 -duration=0 >/dev/null 2>&1 &
P=$!
trap 'kill $P 2>/dev/null || true' EXIT
sleep 1
"$SB" agent --dir "$D/plain" --pid "$P" 2>"$D/plain.log" &
A1=$!
"$SB" agent --dir "$D/goid" --pid "$P" --goroutine-labels 2>"$D/goid.log" &
A2=$!
sleep $(( WINDOWS * 60 + 20 ))
kill -TERM $A1 $A2; wait $A1 $A2 || true
python3 - "$D" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]
for name in ("plain", "goid"):
    # Whole windows only (the last one, cut short by SIGTERM, is smaller).
    entries = [json.loads(l) for l in open(os.path.join(d, name, "index.jsonl"))]
    entries = [e for e in entries if e["duration_ns"] > 55e9]
    sizes = [os.path.getsize(os.path.join(d, name, e["path"])) for e in entries]
    samples = [e["samples"] for e in entries]
    print("%-5s %d window(s) of 60 s: median %.1f KB, median %d samples (sizes %s)" % (
        name, len(sizes), statistics.median(sizes) / 1024 if sizes else 0,
        statistics.median(samples) if samples else 0, ", ".join(str(s) for s in sizes)))
PY
