#!/usr/bin/env python3
"""Load test of `switchback record --all`: N busy Go processes (demo -mode=spin) on
this host, recorded at F Hz for D seconds. Reports switchback's own CPU time (user + sys, from
wait4's rusage), its peak RSS (ru_maxrss) and RSS over time, time to attach, samples, lost
samples (ring buffer full) and samples of processes it did not follow, and checks the outputs
(complete pprof under its final name, no temporary files; `go tool pprof -top` reads it).

Needs root. Not part of CI (it takes a minute or more); run it by hand:
    tools/load/record_many.py [--procs 50] [--frequency 999] [--duration 60] [--build build]
It prints a summary and writes OUT/load.json (OUT: BUILD/load-test).
"""
import argparse
import glob
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def attached(pid):
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if "perf_event" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


def read_sysctl(name):
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return f.read().strip()
    except OSError:
        return None


def write_sysctl(name, value):
    try:
        with open("/proc/sys/" + name.replace(".", "/"), "w") as f:
            f.write(value)
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=50)
    ap.add_argument("--frequency", type=int, default=999)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("record_many: needs root (BPF)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    build = os.path.join(root, a.build) if not os.path.isabs(a.build) else a.build
    switchback = os.path.join(build, "tools", "switchback")
    demo = os.path.join(build, "testdata", "demo")
    for f in (switchback, demo):
        if not os.access(f, os.X_OK):
            sys.exit(f"record_many: {f} missing: build first (ninja -C {a.build} switchback workloads)")
    out = a.out or os.path.join(build, "load-test")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    stats_enabled = read_sysctl("kernel.bpf_stats_enabled")
    write_sysctl("kernel.bpf_stats_enabled", "1")  # BPF run time per program, restored below
    workers = []
    try:
        for i in range(a.procs):
            workers.append(subprocess.Popen([demo, "-mode=spin", "-duration=0"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        time.sleep(1.0)
        pprof = os.path.join(out, "all.pb.gz")
        stats = os.path.join(out, "stats.json")
        cmd = [switchback, "record", "--all", "--frequency", str(a.frequency), "--duration", str(a.duration),
               "--output", pprof, "--folded", os.path.join(out, "all.folded"), "--stats", stats, "--quiet"]
        t0 = time.monotonic()
        with open(os.path.join(out, "record.stderr"), "w") as err:
            rec = subprocess.Popen(cmd, stderr=err)
        attach_s = None
        rss_trace = []  # (seconds since start, RSS KB)
        next_sample = 0.0
        while True:
            pid, status, ru = os.wait4(rec.pid, os.WNOHANG)
            if pid == rec.pid:
                break
            now = time.monotonic() - t0
            if attach_s is None and attached(rec.pid):
                attach_s = now
            if now >= next_sample:
                rss_trace.append((round(now, 1), rss_kb(rec.pid)))
                next_sample += 5.0
            time.sleep(0.05)
        wall = time.monotonic() - t0
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
        if stats_enabled is not None:
            write_sysctl("kernel.bpf_stats_enabled", stats_enabled)

    code = os.waitstatus_to_exitcode(status)
    with open(os.path.join(out, "record.stderr")) as f:
        stderr = f.read()
    result = {"procs": a.procs, "frequency_hz": a.frequency, "duration_s": a.duration, "exit_code": code,
              "wall_s": round(wall, 2), "attach_s": None if attach_s is None else round(attach_s, 2),
              "user_s": round(ru.ru_utime, 2), "sys_s": round(ru.ru_stime, 2),
              "cpu_share_of_one_cpu": round((ru.ru_utime + ru.ru_stime) / wall, 4),
              "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
              "rss_mb_over_time": [(t, round(k / 1024, 1)) for t, k in rss_trace]}
    if code != 0:
        print(json.dumps(result, indent=2))
        sys.exit(f"record_many: switchback exited {code}: {stderr.strip()}")
    with open(stats) as f:
        st = json.load(f)
    demo_pids = {w.pid for w in workers}
    followed = [p for p in st["processes"] if p["pid"] in demo_pids]
    per_proc = sorted(p["samples"] for p in followed)
    total = st["samples"]
    lost = st["lost"]
    result.update({
        "samples": total, "lost": lost,
        "lost_share": round(lost / (total + lost), 4) if total + lost else 0,
        "unknown_pid_samples": st.get("unknown_pid_samples", 0),
        "processes_followed": len(followed),
        "samples_per_process_min_median_max": [per_proc[0], per_proc[len(per_proc) // 2], per_proc[-1]]
        if per_proc else [],
        "ended_at_root_share": round(st["ended_at_root"] / total, 4) if total else 0,
        "bpf_ns_per_run": round(st["bpf"]["run_time_ns"] / st["bpf"]["run_cnt"]) if st["bpf"]["run_cnt"] else None,
        "bpf_cpu_s": round(st["bpf"]["run_time_ns"] / 1e9, 2),
        "pprof_bytes": os.path.getsize(pprof),
        "temporary_files_left": glob.glob(os.path.join(out, "*.tmp.*")),
    })
    go = shutil.which("go")
    if go:
        top = subprocess.run([go, "tool", "pprof", "-top", pprof], capture_output=True, text=True)
        result["go_tool_pprof_reads_it"] = top.returncode == 0 and "main.spin" in top.stdout
    with open(os.path.join(out, "load.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
