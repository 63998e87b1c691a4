#!/usr/bin/env python3
"""Short-lived Go processes: the share of their samples kept, and what following them costs exec.

Kept: the shortlived workload (burns -cpu of CPU time in one goroutine, then exits) run as the
first process of a binary never seen before, then LATER more times back to back, while
`switchback record --all` (or `switchback agent`) samples at FREQ Hz, for each lifetime in
LIFETIMES, on an idle machine and beside one CPU hog per core. Each run's CPU time comes from
wait4's rusage; the samples kept per pid from record's stats (processes[].samples) or the
agent's index.jsonl. Prints kept / (CPU time x FREQ) for the first process and for the later
ones (sum over them), median over ROUNDS rounds.

Exec cost: EXECS_PER_S execs per second for EXEC_SECONDS of a non-Go program (/bin/true) and of
a Go one (shortlived -cpu 0), with and without `record --all` running, rounds interleaved; the
median wall time of one fork+exec+wait, and the ratio with/without.

Usage (root): tools/bench/short_lived.py [BUILD_DIR]         (default BUILD_DIR=build)
Environment: LIFETIMES (default 10ms,30ms,100ms,1s), LATER (default 20), ROUNDS (default 3),
  FREQ (default 999), MODES (default record,agent), LOADS (default idle,hog),
  EXECS_PER_S (default 100), EXEC_SECONDS (default 5), SKIP_EXEC=1, SKIP_KEPT=1.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from quiet_machine import require_quiet

build = sys.argv[1] if len(sys.argv) > 1 else "build"
sb = os.path.abspath(f"{build}/tools/switchback")
workload = os.path.abspath(f"{build}/testdata/shortlived")
env = os.environ
lifetimes = env.get("LIFETIMES", "10ms,30ms,100ms,1s").split(",")
later = int(env.get("LATER", 20))
rounds = int(env.get("ROUNDS", 3))
freq = int(env.get("FREQ", 999))
modes = env.get("MODES", "record,agent").split(",")
loads = env.get("LOADS", "idle,hog").split(",")


def seconds(d):
    return float(d[:-2]) / 1000 if d.endswith("ms") else float(d[:-1])


def run(argv):
    """Runs argv to its end; (pid, CPU seconds from rusage, wall seconds)."""
    t0 = time.monotonic()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status, ru = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"{argv} failed: {status}")
    return pid, ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def hogs():
    return [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count() or 1)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def wait_attached(pid, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if "perf_event" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("the recorder never attached")


def kept_round(mode, lifetime, d):
    """One round: (first process kept share, later processes kept share)."""
    exe = os.path.join(d, f"shortlived-{time.monotonic_ns()}")  # a binary never seen before
    shutil.copy(workload, exe)
    if mode == "record":
        rec = subprocess.Popen([sb, "record", "--all", "--duration", "3600", "--frequency", str(freq), "--quiet",
                                "--output", f"{d}/p.pb.gz", "--stats", f"{d}/s.json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        shutil.rmtree(f"{d}/data", ignore_errors=True)
        rec = subprocess.Popen([sb, "agent", "--dir", f"{d}/data", "--interval", "2s", "--testing-short-interval",
                                "--frequency", str(freq), "--no-kernel"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_attached(rec.pid)
    time.sleep(2)
    first = run([exe, "-cpu", lifetime])
    time.sleep(2)
    rest = [run([exe, "-cpu", lifetime]) for _ in range(later)]
    time.sleep(1)
    rec.send_signal(signal.SIGINT if mode == "record" else signal.SIGTERM)
    rec.wait(timeout=120)
    samples = {}
    if mode == "record":
        for p in json.load(open(f"{d}/s.json"))["processes"]:
            samples[p["pid"]] = samples.get(p["pid"], 0) + p["samples"]
    else:
        for line in open(f"{d}/data/index.jsonl"):
            e = json.loads(line)
            samples[e["pid"]] = samples.get(e["pid"], 0) + e.get("samples", 0)
    os.unlink(exe)
    share = lambda runs: sum(samples.get(p, 0) for p, _, _ in runs) / max(1e-9, sum(c for _, c, _ in runs) * freq)
    return share([first]), share(rest)


def kept():
    print(f"samples kept of the runs' CPU time x {freq} Hz (median of {rounds} rounds; first process of a new "
          f"binary, then {later} later processes)")
    print(f"{'mode':<7} {'load':<5} {'lifetime':>8} {'first':>8} {'later':>8}")
    with tempfile.TemporaryDirectory() as d:
        for load in loads:
            for mode in modes:
                for lt in lifetimes:
                    h = hogs() if load == "hog" else []
                    try:
                        r = [kept_round(mode, lt, d) for _ in range(rounds)]
                    finally:
                        stop(h)
                    f = statistics.median(x[0] for x in r)
                    l = statistics.median(x[1] for x in r)
                    print(f"{mode:<7} {load:<5} {lt:>8} {100 * f:>7.1f}% {100 * l:>7.1f}%", flush=True)


def exec_cost():
    rate = int(env.get("EXECS_PER_S", 100))
    secs = float(env.get("EXEC_SECONDS", 5))
    progs = {"non-Go (/bin/true)": ["/bin/true"], "Go (shortlived -cpu 0)": [workload, "-cpu", "0"]}
    res = {(name, w): [] for name in progs for w in ("without", "with record --all")}
    print(f"\nexec cost: {rate} execs/s for {secs:.0f} s, median wall time of one spawn+exec+wait "
          f"({rounds} rounds, interleaved)")
    with tempfile.TemporaryDirectory() as d:
        for _ in range(rounds):
            for w in ("without", "with record --all"):
                rec = None
                if w != "without":
                    rec = subprocess.Popen([sb, "record", "--all", "--duration", "3600", "--frequency", str(freq),
                                            "--quiet", "--output", f"{d}/p.pb.gz"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    wait_attached(rec.pid)
                    time.sleep(2)
                for name, argv in progs.items():
                    walls = []
                    t_next = time.monotonic()
                    for _ in range(int(rate * secs)):
                        walls.append(run(argv)[2])
                        t_next += 1.0 / rate
                        time.sleep(max(0.0, t_next - time.monotonic()))
                    res[(name, w)].append(statistics.median(walls))
                if rec:
                    rec.send_signal(signal.SIGINT)
                    rec.wait(timeout=120)
    print(f"{'program':<24} {'without':>10} {'with':>10} {'ratio':>7}")
    for name in progs:
        a = statistics.median(res[(name, "without")])
        b = statistics.median(res[(name, "with record --all")])
        print(f"{name:<24} {1e3 * a:>8.2f}ms {1e3 * b:>8.2f}ms {b / a:>7.3f}")


if __name__ == "__main__":
    require_quiet("short_lived")
    if env.get("SKIP_KEPT") != "1":
        kept()
    if env.get("SKIP_EXEC") != "1":
        exec_cost()
