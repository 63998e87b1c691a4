#!/usr/bin/env python3
"""Oracle for cores of binaries without DWARF or symbols (lefthook): compares one thread of a
coredump case with the frame-record chain that classify.py read from the same core.

  fp_oracle.py CASE.json STATE.classify.json --binary BIN [--core CORE] [--lwp N]
  (--lwp default: classify's matched thread)

The expected list, "function+0xoffset" with names from pclntab (classify.py's own reader, not
switchback's symbolizer), is built as Delve would: the stopped thread's pc and its frame-record
chain ([fp+8] return address, [fp] next record; arm64: LR left out unless the pc is a function
entry, after the prologue the frame record holds the return address; amd64 at a function entry:
the return address at [sp], read from --core, before the chain). If that chain ends
before a root (runtime.goexit/mstart), it is cut after the switch function (runtime.mcall,
runtime.morestack, runtime.systemstack) and continued with the goroutine under it, from m.curg's
saved context (sched.pc, sched.lr on arm64, amd64 morestack: m.morebuf.pc, then the chain from
sched.bp); runtime.systemstack_switch (the pc systemstack saves) is not a frame of its own.
The case's frames compared are its non-inlined ones. Exit 0 and a one-line summary if equal.

--gobuf (with --core): for a thread stopped in runtime.gogo after it loaded the goroutine's SP
(arm64 gogo's gp window: R29 and LR still the g0 side's, the gobuf not yet cleared) or in
systemstack's way back before it loaded the goroutine's SP (arm64 systemstack's gp window): the
stopped pc, then m.curg's saved context as Go's own traceback starts from it (sched.pc, sched.lr
on arm64, then the frame-record chain from sched.bp; systemstack_switch, the pc systemstack
saves, is not a frame of its own), read from the core.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classify  # noqa: E402

SWITCH = ("runtime.mcall", "runtime.morestack", "runtime.systemstack")
ROOTS = ("runtime.goexit", "runtime.mstart")


def named(syms, pcs):
    out = []
    for p in pcs:
        n = syms.name(p)
        out.append("%s+%#x" % (n, p - syms.by_name[n]) if n else hex(p))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("classify_json")
    ap.add_argument("--lwp", type=int)
    ap.add_argument("--core", help="the core (amd64 stops at a function entry: the return address at [sp])")
    ap.add_argument("--binary", required=True, help="the executable")
    ap.add_argument("--gobuf", action="store_true", help="the stopped pc, then m.curg's saved context (see above)")
    a = ap.parse_args()
    case = json.load(open(a.case))
    cl = json.load(open(a.classify_json))
    lwp = a.lwp or cl["matched_lwp"]
    th = next(t for t in cl["threads"] if t["lwp"] == lwp)
    syms = classify.Symbols(a.binary)
    pcs = [int(p, 16) for p in th["pcs"]]
    entry = syms.name(pcs[0]) and syms.by_name[syms.name(pcs[0])] == pcs[0]
    if cl["arch"] == "arm64" and not entry:
        pcs = pcs[:1] + pcs[2:]  # LR: the frame record's return address follows
    elif cl["arch"] == "amd64" and entry:
        if not a.core:
            sys.exit("fp_oracle: a stop at a function entry needs --core (return address at [sp])")
        pcs.insert(1, classify.Core(a.core).u64(int(th["sp"], 16)))
    exp = named(syms, pcs)
    how = "frame-record chain"
    if a.gobuf:
        c = (th.get("go") or {}).get("curg")
        if not a.core or not c or not c.get("sched_pc"):
            sys.exit("fp_oracle: --gobuf needs --core and a thread with m.curg's saved context")
        core = classify.Core(a.core)
        lr = c.get("sched_lr") if cl["arch"] == "arm64" else None
        under = classify.fp_walk(core, {"pc": c["sched_pc"], "lr": lr, "fp": c.get("sched_bp") or 0}, syms=syms)
        exp = [e for e in named(syms, [int(th["pc"], 16)] + list(under))
               if not e.replace(".abi0+", "+").startswith("runtime.systemstack_switch+")]  # systemstack's save: no frame of its own
        how = "stopped pc, then goroutine %s from its gobuf (sched.pc, sched.lr, chain from sched.bp)" % c["goid"]
    if not a.gobuf and not any(e.split("+")[0] in ROOTS for e in exp) and th.get("curg_pcs"):
        cut = next((i for i, e in enumerate(exp) if e.split("+")[0] in SWITCH), None)
        if cut is not None:
            under = [e for e in named(syms, [int(p, 16) for p in th["curg_pcs"]])
                     if not e.startswith("runtime.systemstack_switch+")]
            exp = exp[:cut + 1] + under
            how = "frame-record chain to %s, then goroutine %s from its saved context" % (
                exp[cut].split("+")[0], th["go"]["curg"]["goid"])
    got_t = next(t for t in case["threads"] if t["lwp"] == lwp)
    got = [f.split(" in ")[0] for f in got_t["frames"] if not f.endswith("(inlined)")]
    # pclntab names assembly functions' ABI0 symbols (runtime.goexit.abi0); the symbolizer not.
    exp = [e.replace(".abi0+", "+") for e in exp]
    if got == exp:
        print("lwp %d: the %d non-inlined frames equal the %s read by tools/coredump/classify.py "
              "(names from pclntab): %s ... %s" % (lwp, len(exp), how, exp[0], exp[-1]))
        return 0
    print("lwp %d: DIFFERENT (%s)" % (lwp, how))
    for i in range(max(len(got), len(exp))):
        g = got[i] if i < len(got) else "-"
        e = exp[i] if i < len(exp) else "-"
        print("  %s %-70s %s" % ("=" if g == e else "!", g, e))
    return 1


if __name__ == "__main__":
    sys.exit(main())
