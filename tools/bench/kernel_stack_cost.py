#!/usr/bin/env python3
"""BPF cost of kernel frames (--kernel; figures in docs/performance.md).

The syswrite workload (2 goroutines looping on write(2) to /dev/null: about half its samples
are in the kernel) recorded at 999 Hz with and without --kernel, rounds interleaved; per
sample, the sampler program's whole run time (kernel.bpf_stats_enabled, turned on for the run
and restored) and the verifier's instructions (bpf.verified_insns), plus the share of samples
with kernel frames and of bpf_get_stack failures. Medians.
Usage (root): tools/bench/kernel_stack_cost.py [BUILD_DIR]   env REPEAT=5 SECONDS_PER_RUN=5
"""
import json, os, statistics, subprocess, sys, tempfile, time

from quiet_machine import require_quiet

require_quiet("kernel_stack_cost")

build = sys.argv[1] if len(sys.argv) > 1 else "build"
sb, wl = f"{build}/tools/switchback", f"{build}/testdata/syswrite"
repeat, secs = int(os.environ.get("REPEAT", 5)), int(os.environ.get("SECONDS_PER_RUN", 5))
old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
rows = {"user only": [], "--kernel": []}
print(f"kernel stack cost, {repeat} rounds x {secs}s at 999 Hz, load {open('/proc/loadavg').read().split()[:3]}")
try:
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeat):
            for name in rows:
                w = subprocess.Popen([wl, "-duration", "600s"], stdout=subprocess.DEVNULL)
                time.sleep(0.5)
                extra = ["--kernel"] if name == "--kernel" else []
                subprocess.run([sb, "record", "--pid", str(w.pid), "--duration", str(secs), "--frequency", "999",
                                "--quiet", "-o", f"{d}/p.pb.gz", "--stats", f"{d}/s.json"] + extra, check=True)
                w.terminate()
                w.wait()
                j = json.load(open(f"{d}/s.json"))
                b, k = j["bpf"], j["kernel"]
                runs, n = max(1, b["run_cnt"]), max(1, j["samples"])
                rows[name].append((b["run_time_ns"] / runs, b["verified_insns"], k["samples_with_kernel_frames"] / n,
                                   k["errors"] / max(1, k["in_kernel"])))
finally:
    subprocess.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={old}"])
print(f"{'':<10} {'ns/run':>8} {'verified insns':>15} {'with kernel frames':>19} {'get_stack errors':>17}")
for name, r in rows.items():
    ns, insns, kf, err = (statistics.median(x[i] for x in r) for i in range(4))
    print(f"{name:<10} {ns:>8.0f} {insns:>15.0f} {100 * kf:>18.1f}% {100 * err:>16.2f}%")
