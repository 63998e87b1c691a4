#!/usr/bin/env python3
"""tgkill.py PID SIG [any|sleeping]: send SIG to one thread of PID with tgkill(2), preferring a
sleeping non-main thread (state S in /proc/PID/task/TID/stat) that does not block SIG so that running threads keep their
natural state. Prints the chosen tid."""
import ctypes
import os
import platform
import sys

SYS_TGKILL = {"x86_64": 234, "aarch64": 131}[platform.machine()]


def main():
    pid, sig = int(sys.argv[1]), int(sys.argv[2])
    want = sys.argv[3] if len(sys.argv) > 3 else "sleeping"
    tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    pick = None
    if want == "sleeping":
        for tid in tids:
            try:
                stat = open("/proc/%d/task/%d/stat" % (pid, tid)).read()
            except OSError:
                continue
            status = open("/proc/%d/task/%d/status" % (pid, tid)).read()
            blk = int(status.split("SigBlk:")[1].split()[0], 16)
            # qemu-user's own helper thread (RCU) blocks all signals: skip threads blocking SIG
            if tid != pid and stat[stat.rindex(")") + 2] == "S" and not blk & (1 << (sig - 1)):
                pick = tid
                break
    if pick is None:
        pick = pid
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_TGKILL, pid, pick, sig) != 0:
        sys.exit("tgkill: %s" % os.strerror(ctypes.get_errno()))
    print(pick)


if __name__ == "__main__":
    main()
