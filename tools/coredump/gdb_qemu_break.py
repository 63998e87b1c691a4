# gdb Python driver for capture-arm64.sh's breakpoint mode (BREAK=SYMBOL): gdb-multiarch attached
# to qemu-aarch64's gdbstub (`qemu-aarch64 -g PORT`, the guest waits for gdb before its first
# instruction). Sets a breakpoint, continues until a thread stops there once the program has
# printed `ready` (hits during start-up are passed over) and CAPTURE_SKIP more hits went by, then
# resumes that thread with SIGABRT. The program runs with -sigdfl (SIGABRT is SIG_DFL), so qemu
# writes the guest core qemu_*.core with the thread exactly at the breakpoint (the signalled
# thread is the core's first NT_PRSTATUS); Go's handler never runs.
#
# Parameters from the environment (the shell script sets them):
#   CAPTURE_BINARY   the guest binary (symbols)
#   CAPTURE_PORT     qemu's gdbstub TCP port (127.0.0.1)
#   CAPTURE_BP       gdb location: a function name (gdb puts the breakpoint after its prologue)
#                    or *ADDRESS
#   CAPTURE_BP_COND  a gdb condition on that breakpoint (stops where it is false are not hits)
#   CAPTURE_ARM      gdb location reached once start-up is over (default main.main; `*ADDRESS`
#                    for a binary without symbols): the real
#                    breakpoint is set only when it is hit (fewer stops during the runtime's init)
#   CAPTURE_READY    the program's stdout file: hits before it contains `ready` are passed over
#                    (unset or empty: no waiting)
#   CAPTURE_READY_TEXT  instead of a line starting with `ready`, any line containing this text
#   CAPTURE_SKIP     hits after `ready` to pass over first (varies the moment; default 0)
#   CAPTURE_HITS     give up after this many hits (default 2000)
#   CAPTURE_JSON     where to write the stop (breakpoint address, thread, registers, gdb frames)
#   CAPTURE_SIGDFL_SVC  address of an `svc #0` in the guest (e.g. in runtime.rt_sigaction): for
#                    a program that keeps Go's SIGABRT handler (no -sigdfl, e.g. lefthook), the
#                    stopped thread first runs rt_sigaction(SIGABRT, SIG_DFL) there (registers
#                    set, one stepi, registers and the scratch memory below SP restored), so that
#                    the SIGABRT still makes qemu write the core with the thread at the breakpoint
# qemu-user's gdbstub does not stop the other threads, and when two threads reach the breakpoint
# together the SIGABRT may go to the other one (seen: gdb's selected thread kept running). So the
# registers and frames written to CAPTURE_JSON are gdb's view of its selected thread, for the
# record; which thread stopped is read from the core afterwards (classify.py --signalled: the
# signalled thread, which must be at the breakpoint).
import json
import os

import gdb

ENV = os.environ


def ex(cmd):
    return gdb.execute(cmd, to_string=True)


def ready():
    if not ENV.get("CAPTURE_READY"):
        return True  # no readiness file: every hit counts (CAPTURE_SKIP still applies)
    text = ENV.get("CAPTURE_READY_TEXT")
    try:
        with open(ENV["CAPTURE_READY"], errors="replace") as f:
            if text:
                return any(text in line for line in f)
            return any(line.startswith("ready") for line in f)
    except OSError:
        return False


def set_sigdfl(svc):
    """rt_sigaction(SIGABRT, {SIG_DFL}, NULL, 8) on the stopped thread, then its state restored.
    qemu's single step may run the instruction after the svc too (runtime.rt_sigaction's
    `str w0, [sp, #40]`), so SP points into the scratch area below the real SP meanwhile."""
    regs = ("x0", "x1", "x2", "x3", "x8", "sp", "pc", "cpsr")
    saved = {r: int(gdb.parse_and_eval("$" + r)) & 0xFFFFFFFFFFFFFFFF for r in regs}
    scratch = (saved["sp"] - 256) & ~15  # below SP, inside the stack's guard area
    inf = gdb.selected_inferior()
    old = bytes(inf.read_memory(scratch, 192))
    inf.write_memory(scratch, bytes(192))  # sa_handler SIG_DFL, flags, restorer, mask: 0
    for r, v in (("x0", 6), ("x1", scratch), ("x2", 0), ("x3", 8), ("x8", 134), ("sp", scratch + 64),
                 ("pc", svc)):
        ex("set $%s = %d" % (r, v))
    ex("stepi")
    rc = int(gdb.parse_and_eval("$x0")) & 0xFFFFFFFFFFFFFFFF
    pc = int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF
    inf.write_memory(scratch, old)
    for r in regs:
        ex("set $%s = %d" % (r, saved[r]))
    if rc != 0 or not svc < pc <= svc + 8:
        raise gdb.GdbError("rt_sigaction(SIGABRT, SIG_DFL) failed: x0=%#x pc=%#x" % (rc, pc))
    after = {r: int(gdb.parse_and_eval("$" + r)) & 0xFFFFFFFFFFFFFFFF for r in regs}
    if after != saved:
        raise gdb.GdbError("registers not restored: %s vs %s" % (after, saved))
    return pc


def main():
    ex("set pagination off")
    ex("set confirm off")
    ex("set print thread-events off")
    ex("set architecture aarch64")
    ex("file %s" % ENV["CAPTURE_BINARY"])
    ex("target remote 127.0.0.1:%s" % ENV["CAPTURE_PORT"])
    # Go's own signals (preemption, profiling) go to the guest without stopping.
    for sig in ("SIGURG", "SIGPROF", "SIGPIPE", "SIGALRM", "SIGCHLD", "SIGWINCH"):
        ex("handle %s nostop noprint pass" % sig)
    arm = gdb.Breakpoint(ENV.get("CAPTURE_ARM") or "main.main", internal=False)
    gdb.execute("continue", to_string=True)
    arm.delete()
    bp = gdb.Breakpoint(ENV["CAPTURE_BP"], internal=False)
    if ENV.get("CAPTURE_BP_COND"):
        bp.condition = ENV["CAPTURE_BP_COND"]
    addrs = set()
    for line in ex("info breakpoints %d" % bp.number).splitlines():
        for tok in line.split():
            if tok.startswith("0x"):
                addrs.add(int(tok, 16))
    all_addrs = set(addrs)
    # A name can resolve to several locations: runtime.asyncPreempt2 is also found in its ABI0
    # wrapper runtime.asyncPreempt2.abi0 (what the assembly asyncPreempt calls). Only stops in
    # the function of that exact name count; the others are passed over.
    want = ENV["CAPTURE_BP"].strip("'")
    if not want.startswith("*"):
        exact = {a for a in addrs if ex("info symbol %d" % a).split(" ")[0] == want}
        if exact:
            addrs = exact
    skip = int(ENV.get("CAPTURE_SKIP", "0"))
    limit = int(ENV.get("CAPTURE_HITS", "2000"))
    result = {"breakpoint": ENV["CAPTURE_BP"], "bp_addrs": sorted(hex(a) for a in addrs),
              "bp_all_addrs": sorted(hex(a) for a in all_addrs)}
    hits = early = 0
    while True:
        gdb.execute("continue", to_string=True)
        pc = int(gdb.parse_and_eval("$pc"))
        if pc not in addrs:
            continue  # some other stop (a signal not in the list above)
        hits += 1
        if hits % 50 == 0:
            gdb.write("capture: %d hits\n" % hits, gdb.STDERR)
        if hits > limit:
            raise gdb.GdbError("no usable hit in %d" % limit)
        if not ready():
            early += 1
            continue
        if skip > 0:
            skip -= 1
            continue
        break
    th = gdb.selected_thread()
    result.update({"hits": hits, "hits_before_ready": early, "gdb_thread": th.num,
                   "stopped_pc": hex(pc)})
    for r in ("sp", "x29", "x30", "x28"):
        result[r] = hex(int(gdb.parse_and_eval("$" + r)) & 0xFFFFFFFFFFFFFFFF)
    try:
        result["gdb_frames"] = ex("bt 8").splitlines()
    except gdb.error as e:
        result["gdb_frames"] = ["bt failed: %s" % e]
    bp.enabled = False
    if ENV.get("CAPTURE_SIGDFL_SVC"):
        set_sigdfl(int(ENV["CAPTURE_SIGDFL_SVC"], 0))
        result["sigdfl"] = "rt_sigaction(SIGABRT, SIG_DFL) run on the stopped thread at %s" % ENV["CAPTURE_SIGDFL_SVC"]
        pc2 = int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF
        if pc2 != pc:
            raise gdb.GdbError("pc not restored: %#x" % pc2)
    with open(ENV["CAPTURE_JSON"], "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    gdb.write("capture: stopped at %s (hit %d, %d before ready); sending SIGABRT\n"
              % (hex(pc), hits, early), gdb.STDERR)
    # qemu delivers the signal to the stopped vCPU; SIG_DFL: qemu dumps the guest core and exits.
    try:
        gdb.execute("signal SIGABRT", to_string=True)
    except gdb.error:
        pass  # the remote side closes the connection as qemu exits


try:
    main()
except Exception as e:  # noqa: BLE001 - report and let the shell clean up
    gdb.write("capture failed: %s: %s\n" % (type(e).__name__, e), gdb.STDERR)
    gdb.execute("kill")
