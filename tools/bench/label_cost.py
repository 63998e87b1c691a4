#!/usr/bin/env python3
"""BPF cost per sample of reading goroutine pprof labels (figures in docs/performance.md).

The labels workload with 2 spinning goroutines carrying 0, 1 or 8 labels, recorded at 999 Hz;
per sample, the sampler's time in the label reader (--stats bpf.labels_ns: bpf_ktime around
sb_read_goroutine_labels) and in the whole unwind (bpf.unwind_ns). Rounds interleave 0/1/8;
medians. Usage (root): tools/bench/label_cost.py [BUILD_DIR]   env REPEAT=5 SECONDS_PER_RUN=5
"""
import json, os, statistics, subprocess, sys, tempfile, time

from quiet_machine import require_quiet

require_quiet("label_cost")

build = sys.argv[1] if len(sys.argv) > 1 else "build"
sb, wl = f"{build}/tools/switchback", f"{build}/testdata/labels"
repeat, secs = int(os.environ.get("REPEAT", 5)), int(os.environ.get("SECONDS_PER_RUN", 5))
rows = {0: [], 1: [], 8: []}
print(f"label read cost per sample, {repeat} rounds x {secs}s at 999 Hz, load {open('/proc/loadavg').read().split()[:3]}")
with tempfile.TemporaryDirectory() as d:
    for _ in range(repeat):
        for n in rows:
            w = subprocess.Popen([wl, "-bench-labels", str(n), "-duration", "600s"], stdout=subprocess.PIPE)
            w.stdout.readline()  # "ready"
            time.sleep(0.5)
            subprocess.run([sb, "record", "--pid", str(w.pid), "--duration", str(secs), "--frequency", "999", "--quiet",
                            "-o", f"{d}/p.pb.gz", "--stats", f"{d}/s.json"], check=True)
            w.terminate()  # loading the sampler can take many seconds on a busy host
            w.wait()
            j = json.load(open(f"{d}/s.json"))
            b, k = j["bpf"], max(1, j["bpf"]["unwound"])
            rows[n].append((b["labels_ns"] / k, b["unwind_ns"] / k, j["labels"].get("ok", 0) / k))
print(f"{'labels':<7} {'label ns/sample':>16} {'unwind ns/sample':>17} {'ratio':>7} {'samples with labels':>20}")
for n, r in rows.items():
    l, u, ok = (statistics.median(x[i] for x in r) for i in range(3))
    print(f"{n:<7} {l:>16.0f} {u:>17.0f} {l / u:>7.3f} {100 * ok:>19.0f}%")
