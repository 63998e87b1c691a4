# gdb Python driver for tools/coredump/capture-amd64.sh (all-stop mode, attached with -p PID).
#
# Parameters come from the environment (the shell script sets them):
#   CAPTURE_STATE    state name (file prefix)
#   CAPTURE_OUT      output directory
#   CAPTURE_MODE     break  : set CAPTURE_BP, continue until a thread stops exactly there
#                    attach : no breakpoint, pick the thread whose native frames match CAPTURE_PICK
#                    stale  : re-attach until a thread on g0 (m.curg == 0) has a g0 mcall slot
#                             naming a goroutine that is running on another M
#                    stale-parked : the same, the goroutine parked again (g.m == 0, its SP in
#                             its stack) with a saved pc that is not a return site of a call to
#                             runtime.mcall (the stale state of
#                             docs/design/0004-saved-state-proofs.md)
#   CAPTURE_BP       gdb location ("*0x4321", "'runtime.newstack'", "__vdso_clock_gettime")
#   CAPTURE_BP_COND  break mode: a gdb condition on that breakpoint (e.g.
#                    '$_any_caller_matches("^goNestInner$", 4)')
#   CAPTURE_PICK     comma-separated function names, all must be on the picked thread's stack
#   CAPTURE_TRIES    attempts for stale mode (default 200)
#   CAPTURE_KILL_SIG break mode: signal sent to the process once the breakpoint is set
#                    (SIGABRT for the crash state; SIGABRT/SIGQUIT then pass silently)
#
# Writes STATE.core (gcore), STATE.gdb-bt.txt (info threads + thread apply all bt),
# STATE.gdb.json (stopped thread, breakpoint, per-thread Go runtime view read through DWARF
# types, so no offset table is needed). Kills the inferior at the end.
import json
import os
import struct
import time

import gdb

ENV = os.environ
STATE = ENV["CAPTURE_STATE"]
OUT = ENV["CAPTURE_OUT"]
MODE = ENV.get("CAPTURE_MODE", "break")
PID = int(ENV["CAPTURE_PID"])

G_STATUS = {0: "idle", 1: "runnable", 2: "running", 3: "syscall", 4: "waiting",
            6: "dead", 8: "copystack", 9: "preempted"}


def ex(cmd):
    return gdb.execute(cmd, to_string=True)


def u64(addr):
    return struct.unpack("<Q", bytes(gdb.selected_inferior().read_memory(addr, 8)))[0]


def ival(v):
    """Integer value of a scalar, a pointer or an atomic wrapper struct (Go 1.20+)."""
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_STRUCT:
        for f in t.fields():
            if f.name == "value":
                return ival(v["value"])
        raise gdb.GdbError("no value field in %s" % t)
    return int(v)


G_T = None
M_T = None


def gptr(addr):
    return gdb.Value(addr).cast(G_T.pointer()).dereference()


def mptr(addr):
    return gdb.Value(addr).cast(M_T.pointer()).dereference()


def g_info(addr):
    if addr == 0:
        return None
    try:
        g = gptr(addr)
        st = ival(g["atomicstatus"])
        return {"g": hex(addr), "goid": ival(g["goid"]), "status": G_STATUS.get(st & ~0x1000, st),
                "m": hex(ival(g["m"])), "stack": [hex(ival(g["stack"]["lo"])), hex(ival(g["stack"]["hi"]))],
                "sched_sp": hex(ival(g["sched"]["sp"])), "sched_pc": hex(ival(g["sched"]["pc"])),
                "sched_bp": hex(ival(g["sched"]["bp"]))}
    except gdb.MemoryError:
        return {"g": hex(addr), "unreadable": True}


def all_ms():
    ms = {}
    m = ival(gdb.parse_and_eval("'runtime.allm'"))
    while m:
        mv = mptr(m)
        ms[ival(mv["procid"])] = m
        m = ival(mv["alllink"])
    return ms


def in_stack(sp, ginfo):
    return ginfo is not None and "stack" in ginfo and int(ginfo["stack"][0], 16) <= sp < int(ginfo["stack"][1], 16)


def go_view():
    """Per-thread Go runtime view: m, g0/curg/gsignal, which stack SP is on, g0 mcall slot."""
    if G_T is None:
        out = []
        for th in gdb.selected_inferior().threads():
            th.switch()
            out.append({"lwp": th.ptid[1], "gdb_thread": th.num, "pc": hex(int(gdb.parse_and_eval("$pc"))),
                        "sp": hex(int(gdb.parse_and_eval("$sp"))), "m": None})
        return out
    ms = all_ms()
    out = []
    for th in gdb.selected_inferior().threads():
        th.switch()
        lwp = th.ptid[1]
        sp = int(gdb.parse_and_eval("$sp"))
        pc = int(gdb.parse_and_eval("$pc"))
        rec = {"lwp": lwp, "gdb_thread": th.num, "pc": hex(pc), "sp": hex(sp),
               "bp": hex(int(gdb.parse_and_eval("$rbp")))}
        m = ms.get(lwp)
        if m is None:
            rec["m"] = None  # not a Go M (C thread)
            out.append(rec)
            continue
        mv = mptr(m)
        g0 = ival(mv["g0"])
        curg = ival(mv["curg"])
        gsig = ival(mv["gsignal"])
        rec.update({"m": hex(m), "m_id": ival(mv["id"]), "g0": g_info(g0), "curg": g_info(curg),
                    "gsignal": g_info(gsig)})
        on = "other"
        for name, gi in (("g0", rec["g0"]), ("gsignal", rec["gsignal"]), ("curg", rec["curg"])):
            if in_stack(sp, gi):
                on = name
                break
        rec["sp_on"] = on
        # amd64 mcall: SP = g0.sched.sp; PUSHQ AX (the parked g) -> slot at g0.sched.sp - 8.
        g0sp = int(rec["g0"]["sched_sp"], 16) if rec["g0"] else 0
        if g0sp:
            try:
                cand = u64(g0sp - 8)
                rec["g0_slot"] = hex(cand)
                ok = False
                if cand:
                    try:
                        cm = ival(gptr(cand)["m"])
                        ok = cm == 0 or cm in ms.values()
                    except gdb.MemoryError:
                        ok = False
                rec["g0_slot_g"] = g_info(cand) if ok else None
            except gdb.MemoryError:
                rec["g0_slot"] = None
        out.append(rec)
    return out


def frames_of(th):
    th.switch()
    names = []
    f = gdb.newest_frame()
    while f is not None and len(names) < 64:
        names.append(f.name() or hex(f.pc()))
        try:
            f = f.older()
        except gdb.error:
            break
    return names


def find_stale(view):
    for rec in view:
        if rec.get("m") and rec["sp_on"] == "g0" and rec["curg"] is None:
            cand = rec.get("g0_slot_g")
            if cand and cand.get("status") == "running" and cand["m"] not in ("0x0", rec["m"]):
                return rec
    return None


def after_mcall_call(pc):
    """Whether the 5 bytes before pc are CALL rel32 to runtime.mcall (mcall's own save)."""
    try:
        b = bytes(gdb.selected_inferior().read_memory(pc - 5, 5))
    except gdb.MemoryError:
        return False
    if b[0] != 0xE8:
        return False
    rel = struct.unpack("<i", b[1:])[0]
    return pc + rel == mcall_entry()


MCALL = []


def mcall_entry():
    if not MCALL:  # "Symbol "runtime.mcall" is at 0x460e00 in a file compiled without ..."
        words = [w for w in ex("info address runtime.mcall").split() if w.startswith("0x")]
        MCALL.append(int(words[0].rstrip("."), 16))
    return MCALL[0]


def find_stale_parked(view):
    for rec in view:
        if rec.get("m") and rec["sp_on"] == "g0" and rec["curg"] is None:
            cand = rec.get("g0_slot_g")
            if (cand and cand.get("m") == "0x0" and cand.get("status") == "runnable" and
                    in_stack(int(cand["sched_sp"], 16), cand) and not after_mcall_call(int(cand["sched_pc"], 16))):
                return rec
    return None


def main():
    global G_T, M_T
    ex("set pagination off")
    ex("set confirm off")
    ex("set print thread-events off")
    for sig in ("SIGURG", "SIGPROF", "SIGPIPE", "SIGALRM", "SIGCHLD"):
        ex("handle %s nostop noprint pass" % sig)
    try:
        G_T = gdb.lookup_type("runtime.g")
        M_T = gdb.lookup_type("runtime.m")
    except gdb.error:
        G_T = M_T = None  # no DWARF (e.g. lefthook): threads and registers only
    result = {"state": STATE, "mode": MODE, "breakpoint": ENV.get("CAPTURE_BP"), "attempts": 1}

    kill_sig = ENV.get("CAPTURE_KILL_SIG", "")
    if kill_sig:
        for sig in ("SIGABRT", "SIGQUIT"):
            ex("handle %s nostop noprint pass" % sig)
    if MODE == "break":
        bp = gdb.Breakpoint(ENV["CAPTURE_BP"], internal=False)
        if ENV.get("CAPTURE_BP_COND"):
            bp.condition = ENV["CAPTURE_BP_COND"]
        if kill_sig:
            import signal
            os.kill(PID, getattr(signal, kill_sig))
        addrs = set()
        for line in ex("info breakpoints %d" % bp.number).splitlines():
            for tok in line.split():
                if tok.startswith("0x"):
                    addrs.add(int(tok, 16))
        result["bp_addrs"] = sorted(hex(a) for a in addrs)
        for _ in range(50):
            gdb.execute("continue")
            pc = int(gdb.parse_and_eval("$pc"))
            if pc in addrs:
                break
        else:
            raise gdb.GdbError("breakpoint never hit")
        bp.enabled = False
        th = gdb.selected_thread()
        result["stopped_lwp"] = th.ptid[1]
        result["stopped_pc"] = hex(pc)
    elif MODE == "attach":
        want = [w for w in ENV.get("CAPTURE_PICK", "").split(",") if w]
        for th in gdb.selected_inferior().threads():
            fr = frames_of(th)
            if all(w in fr for w in want):
                result["stopped_lwp"] = th.ptid[1]
                result["stopped_pc"] = hex(int(gdb.parse_and_eval("$pc")))
                result["picked_frames"] = fr
                break
        else:
            raise gdb.GdbError("no thread has all of %s" % want)
    elif MODE in ("stale", "stale-parked"):
        tries = int(ENV.get("CAPTURE_TRIES", "200"))
        for i in range(tries):
            view = go_view()
            rec = find_stale(view) if MODE == "stale" else find_stale_parked(view)
            if rec:
                result["attempts"] = i + 1
                result["stopped_lwp"] = rec["lwp"]
                result["stopped_pc"] = rec["pc"]
                break
            ex("detach")
            time.sleep(0.02 + 0.01 * (i % 5))
            ex("attach %d" % PID)
        else:
            raise gdb.GdbError("no stale g0 slot seen in %d attaches" % tries)

    # Select the stopped thread so that gcore / bt show it first.
    for th in gdb.selected_inferior().threads():
        if th.ptid[1] == result["stopped_lwp"]:
            th.switch()
            result["stopped_gdb_thread"] = th.num
            result["stopped_frames"] = frames_of(th)
    result["threads"] = go_view()
    bt = ex("info threads") + "\n" + ex("thread apply all bt")
    with open(os.path.join(OUT, STATE + ".gdb-bt.txt"), "w") as f:
        f.write(bt)
    ex("gcore %s" % os.path.join(OUT, STATE + ".core"))
    with open(os.path.join(OUT, STATE + ".gdb.json"), "w") as f:
        json.dump(result, f, indent=1)
    ex("kill")


try:
    main()
except Exception as e:  # noqa: BLE001 - report and let the shell clean up
    with open(os.path.join(OUT, STATE + ".gdb-error.txt"), "w") as f:
        f.write("%s: %s\n" % (type(e).__name__, e))
    gdb.write("capture failed: %s\n" % e, gdb.STDERR)
    try:
        ex("kill")
    except gdb.error:
        pass
