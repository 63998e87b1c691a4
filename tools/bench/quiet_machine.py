"""The benchmarks' guard against a busy machine: a run started beside other work (a forgotten
workload, a build) measures that work too: a workload left running raises unwind_cost.py's
depth-16 ratios by a third."""
import os
import sys
import time


def cpu_busy(secs=1.0):
    """The share of all CPUs' time spent outside idle (and iowait) over secs, from /proc/stat."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)
    t0, i0 = snap()
    time.sleep(secs)
    t1, i1 = snap()
    return 1 - (i1 - i0) / (t1 - t0) if t1 > t0 else 0.0


def require_quiet(tool, limit=0.25):
    """Exits when the CPUs are over `limit` busy before the run, unless ALLOW_BUSY=1 (then warns)."""
    busy = cpu_busy()
    if busy <= limit:
        return
    msg = (f"{tool}: the CPUs were {100 * busy:.0f}% busy before the run (something else is running): "
           "the figures would measure it too")
    if os.environ.get("ALLOW_BUSY") != "1":
        sys.exit(msg + "; stop it, or set ALLOW_BUSY=1")
    print(msg, file=sys.stderr)


if __name__ == "__main__":
    # For the shell benchmarks: `python3 tools/bench/quiet_machine.py TOOL` exits 1 (with the
    # reason) when the machine is busy, as require_quiet does.
    require_quiet(sys.argv[1] if len(sys.argv) > 1 else "benchmark")
