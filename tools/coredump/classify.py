#!/usr/bin/env python3
"""Quick classifier for harvested Go cores (qemu-aarch64 guest cores or amd64 cores).

Reads every thread's registers (NT_PRSTATUS), walks the frame-pointer chain through the core's
PT_LOAD memory, names the pcs with the binary's ELF symbol table, adds a small Go runtime view
(m, curg, which stack SP is on, the g0 mcall slot) using the 1.19 offsets from DESIGN.md, and
decides whether some thread is in the wanted state. Standard library only; no gdb-multiarch.

This is a harvest filter, not an oracle: the FP walk does not cross stack switches and may
stop early or read junk; the kept cores still go through Delve and the real replay.

  classify.py --binary BIN --core CORE --rule RULE [--json OUT] [--go-minor N] [--signalled]
--signalled: only the thread that took the fatal signal (the core's first NT_PRSTATUS) may match
(capture-arm64.sh's breakpoint mode: that thread is the one stopped at the breakpoint).
Exit status 0 if some thread matches RULE, 1 if none, 2 on error.

RULE: alternatives separated by '|', each a comma-separated list of conditions, all must hold
on one thread:
  FUNC            FUNC is on the FP-walked frame list (pc, lr, then the chain)
  FUNC@0          the pc itself is in FUNC
  FUNC@LO-HI      some frame of FUNC has its pc (frame 0) or return address in [LO, HI) (hex)
  !FUNC           FUNC is not on the frame list
  sp=g0|gsignal|curg   SP lies in that goroutine's stack (Go view)
  pc=HEX          the thread's pc is exactly HEX (a breakpoint address in a binary without symbols)
  nocurg          m.curg == 0
  curg            m.curg != 0
  stale           on g0, m.curg == 0, and the g0 slot *(g0.sched.sp-8) names a goroutine that
                  is running on another M
  stale-parked    on g0, m.curg == 0, and the g0 slot names a goroutine parked again (g.m 0,
                  runnable) whose saved pc is in a main.* function (the corecases workload's
                  morestack save, not mcall's: the stale state of
                  docs/design/0004-saved-state-proofs.md)
"""
import argparse
import json
import struct
import sys

EM_X86_64, EM_AARCH64 = 62, 183
NT_PRSTATUS = 1

# Go 1.19 offsets (DESIGN.md "Go runtime facts"); amd64 and arm64 equal. set_offsets() moves
# the fields that later releases moved (--go-minor).
OFF = {"g.stack.lo": 0, "g.stack.hi": 8, "g.m": 48, "g.sched.sp": 56, "g.sched.pc": 64,
       "g.sched.lr": 96, "g.sched.bp": 104,
       "g.atomicstatus": 144, "g.goid": 152, "m.g0": 0, "m.procid": 72, "m.gsignal": 80,
       "m.curg": 192, "m.alllink": None}


def set_offsets(minor):
    if 23 <= minor <= 24:
        OFF.update({"g.atomicstatus": 152, "g.goid": 160})
    elif minor >= 25:
        OFF.update({"m.procid": 64, "m.gsignal": 72, "m.curg": 184, "g.sched.lr": 88, "g.sched.bp": 96})  # gobuf.ret gone
G_STATUS = {0: "idle", 1: "runnable", 2: "running", 3: "syscall", 4: "waiting", 6: "dead",
            8: "copystack", 9: "preempted"}


class Elf:
    def __init__(self, path):
        self.f = open(path, "rb")
        self.data = self.f.read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2:
            raise ValueError("%s: not ELF64" % path)
        (self.type, self.machine, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", d, 16)

    def phdrs(self):
        for i in range(self.phnum):
            yield struct.unpack_from("<IIQQQQQQ", self.data, self.phoff + i * self.phentsize)

    def sections(self):
        out = []
        for i in range(self.shnum):
            out.append(struct.unpack_from("<IIQQQQIIQQ", self.data, self.shoff + i * self.shentsize))
        names = out[self.shstrndx]
        res = {}
        for s in out:
            n = self.data[names[4] + s[0]:self.data.index(b"\0", names[4] + s[0])].decode()
            res[n] = s
        return res


class Symbols:
    def __init__(self, binpath):
        e = Elf(binpath)
        secs = e.sections()
        st, ss = secs.get(".symtab"), secs.get(".strtab")
        self.funcs = []
        self.starts = []
        self.by_name = {}
        self.from_pclntab = False
        if st is None:
            self._pclntab(e, secs, secs.get(".gopclntab"))
            return
        d = e.data
        for off in range(st[4], st[4] + st[5], 24):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", d, off)
            n = d[ss[4] + name:d.index(b"\0", ss[4] + name)].decode(errors="replace")
            self.by_name.setdefault(n, value)
            if info & 0xF == 2 and value:  # STT_FUNC
                self.funcs.append((value, size, n))
        self.funcs.sort()
        self.starts = [f[0] for f in self.funcs]

    def _pclntab(self, e, secs, sec):
        """No .symtab (a stripped binary such as lefthook): function names and entries from the
        Go 1.20+ pclntab (magic 0xfffffff1): header, then functab pairs (entryoff, funcoff)
        relative to textStart, each _func starting with entryOff and nameOff."""
        if sec is None:
            return
        d, base = e.data, sec[4]
        magic, _, _, _, psz = struct.unpack_from("<IBBBB", d, base)
        if magic not in (0xFFFFFFF1, 0xFFFFFFF0) or psz != 8:
            return
        nfunc, _nfiles, text = struct.unpack_from("<QQQ", d, base + 8)
        if text == 0 and ".text" in secs:
            text = secs[".text"][3]  # textStart is relocated at run time (0 in the file): .text
        nameoff, _cu, _file, _pc, funcoff = struct.unpack_from("<QQQQQ", d, base + 32)
        ftab = base + funcoff
        for i in range(nfunc):
            ent, fo = struct.unpack_from("<II", d, ftab + 8 * i)
            nxt = struct.unpack_from("<I", d, ftab + 8 * (i + 1))[0]
            no = struct.unpack_from("<i", d, ftab + fo + 4)[0]
            n = d[base + nameoff + no:d.index(b"\0", base + nameoff + no)].decode(errors="replace")
            self.by_name.setdefault(n, text + ent)
            self.funcs.append((text + ent, nxt - ent, n))
        self.funcs.sort()
        self.starts = [f[0] for f in self.funcs]
        self.from_pclntab = True

    def name(self, pc):
        import bisect
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0:
            v, size, n = self.funcs[i]
            if pc < v + max(size, 1) or (size == 0 and pc - v < 0x1000):
                return n
        return None


class Core:
    def __init__(self, path):
        e = Elf(path)
        self.machine = e.machine
        self.data = e.data
        self.loads = []
        self.threads = []
        for (ptype, _flags, off, vaddr, _pa, filesz, memsz, _al) in e.phdrs():
            if ptype == 1:
                self.loads.append((vaddr, vaddr + filesz, off))
            elif ptype == 4:
                self._notes(off, filesz)
        self.loads.sort()

    def _notes(self, off, size):
        d, p, end = self.data, off, off + size
        while p + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", d, p)
            desc = p + 12 + ((namesz + 3) & ~3)
            if ntype == NT_PRSTATUS:
                signo = struct.unpack_from("<i", d, desc)[0]
                cursig = struct.unpack_from("<H", d, desc + 12)[0]
                pid = struct.unpack_from("<I", d, desc + 32)[0]
                nregs = 34 if self.machine == EM_AARCH64 else 27
                regs = struct.unpack_from("<%dQ" % nregs, d, desc + 112)
                self.threads.append({"lwp": pid, "signo": signo, "cursig": cursig, "regs": regs})
            p = desc + ((descsz + 3) & ~3)

    def u64(self, addr):
        for lo, hi, off in self.loads:
            if lo <= addr and addr + 8 <= hi:
                return struct.unpack_from("<Q", self.data, off + addr - lo)[0]
        return None


def thread_regs(core, t):
    r = t["regs"]
    if core.machine == EM_AARCH64:
        return {"pc": r[32], "sp": r[31], "fp": r[29], "lr": r[30], "g": r[28]}
    return {"pc": r[16], "sp": r[19], "fp": r[4], "lr": None, "g": r[1]}  # r14 = index 1


ROOTS = ("runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.clone")


def fp_walk(core, regs, limit=48, syms=None):
    pcs = [regs["pc"]]
    if regs["lr"]:
        pcs.append(regs["lr"])
    fp = regs["fp"]
    for _ in range(limit):
        if not fp:
            break
        ret, nxt = core.u64(fp + 8), core.u64(fp)
        if ret is None or nxt is None or ret == 0:
            break
        pcs.append(ret)
        n = syms.name(ret) if syms else None
        if n and n.split(".abi")[0] in ROOTS:
            break  # a root (TOPFRAME): never walk past it
        if nxt <= fp:
            break
        fp = nxt
    return pcs


# Where an mcall callee keeps the parked g, as an offset below g0.sched.sp. amd64: mcall's PUSHQ AX.
# arm64 Go 1.19: park_m keeps gp at DW_OP_fbreg -16 (CFA = g0.sched.sp - 16), i.e. sched.sp - 32,
# in its own 48-byte frame (read from this binary's DWARF with gdb `info scope runtime.park_m`),
# not in the 8-byte slot mcall reserves at sched.sp - 8; try both, validate strictly.
SLOT_OFFS = {EM_X86_64: [8], EM_AARCH64: [32, 8]}


def go_view(core, syms):
    """lwp -> Go facts, 1.19 offsets. Without runtime.allm in the symbol table (a stripped
    binary: pclntab names functions only), each thread's m is found from its g register (arm64
    R28, amd64 R14: g in Go code) when g.m's g0, curg or gsignal is that g."""
    allm_sym = syms.by_name.get("runtime.allm")
    u = core.u64
    if not allm_sym:
        ms = []
        for t in core.threads:
            g = thread_regs(core, t)["g"]
            m = u(g + OFF["g.m"]) if g else None
            if m and m not in ms and g in (u(m + OFF["m.g0"]), u(m + OFF["m.curg"]), u(m + OFF["m.gsignal"])) \
                    and u(m + OFF["m.procid"]) == t["lwp"]:
                ms.append(m)
        return _view_of_ms(core, ms)

    # m.alllink: find it from the DWARF-less layout: in 1.19 it is at 304 (runtime.m). Rather than
    # hard-code it, probe: allm chain pointers must point to ms whose g0.m points back.
    m = u(allm_sym)
    ms = []
    link_off = None
    for cand in range(200, 1200, 8):
        mm, chain, ok = m, [], True
        for _ in range(64):
            if not mm:
                break
            g0 = u(mm + OFF["m.g0"])
            if g0 is None or u(g0 + OFF["g.m"]) != mm:
                ok = False
                break
            chain.append(mm)
            mm = u(mm + cand)
            if mm is None:
                ok = False
                break
        if ok and len(chain) >= 2:
            link_off, ms = cand, chain
            break
    if link_off is None and m:
        ms = [m]
    return _view_of_ms(core, ms)


def _view_of_ms(core, ms):
    u = core.u64
    res = {}

    def ginfo(g):
        if not g:
            return None
        st, goid, m = u(g + OFF["g.atomicstatus"]), u(g + OFF["g.goid"]), u(g + OFF["g.m"])
        lo, hi = u(g + OFF["g.stack.lo"]), u(g + OFF["g.stack.hi"])
        if None in (st, goid, m, lo, hi):
            return {"g": hex(g), "unreadable": True}
        st &= 0xFFFFFFFF
        return {"g": hex(g), "goid": goid, "status": G_STATUS.get(st & ~0x1000, st), "m": hex(m),
                "stack": [lo, hi], "sched_sp": u(g + OFF["g.sched.sp"]), "sched_pc": u(g + OFF["g.sched.pc"]),
                "sched_bp": u(g + OFF["g.sched.bp"]), "sched_lr": u(g + OFF["g.sched.lr"])}

    for mm in ms:
        procid = u(mm + OFF["m.procid"])
        g0, curg, gsig = u(mm + OFF["m.g0"]), u(mm + OFF["m.curg"]), u(mm + OFF["m.gsignal"])
        rec = {"m": hex(mm), "g0": ginfo(g0), "curg": ginfo(curg), "gsignal": ginfo(gsig)}
        g0sp = rec["g0"]["sched_sp"] if rec["g0"] and "sched_sp" in rec["g0"] else 0
        rec["g0_slot"] = rec["g0_slot_g"] = None
        for so in SLOT_OFFS[core.machine]:
            slot = u(g0sp - so) if g0sp else None
            cand = ginfo(slot) if slot and slot & 7 == 0 and u(slot) is not None else None
            if not cand or cand.get("unreadable") or not cand["goid"]:
                continue
            cm = int(cand["m"], 16)
            if cm and (cm not in ms or u(cm + OFF["m.curg"]) != slot):
                continue  # a running g's m must run it
            if not (cand["stack"][0] <= (cand["sched_sp"] or 0) < cand["stack"][1]) and not cm:
                continue  # a parked g's saved sp must be on its stack
            rec["g0_slot"], rec["g0_slot_off"], rec["g0_slot_g"] = hex(slot), -so, cand
            break
        res[procid] = rec
    return res


def sp_on(view, sp):
    for k in ("g0", "gsignal", "curg"):
        gi = view.get(k)
        if gi and "stack" in gi and gi["stack"][0] <= sp < gi["stack"][1]:
            return k
    return "other"


def check(rule_alt, th):
    names, pcs, view = th["frames"], th["pcs"], th.get("go") or {}
    for cond in rule_alt:
        if cond.startswith("!"):
            if cond[1:] in names:
                return False
        elif cond.startswith("sp="):
            if th.get("sp_on") != cond[3:]:
                return False
        elif cond.startswith("pc="):
            if pcs[0] != int(cond[3:], 16):
                return False
        elif cond == "nocurg":
            if not view or view.get("curg"):
                return False
        elif cond == "curg":
            if not view or not view.get("curg"):
                return False
        elif cond == "stale":
            c = view.get("g0_slot_g")
            if not (th.get("sp_on") == "g0" and view.get("curg") is None and c and c["status"] == "running"
                    and c["m"] not in ("0x0", view["m"])):
                return False
        elif cond == "stale-parked":
            c = view.get("g0_slot_g")
            if not (th.get("sp_on") == "g0" and view.get("curg") is None and c and c["status"] == "runnable"
                    and c["m"] == "0x0" and (th.get("slot_sched_func") or "").startswith("main.")):
                return False
        elif "@" in cond:
            fn, where = cond.split("@", 1)
            if where == "0":
                if names[0] != fn:
                    return False
            else:
                lo, hi = (int(x, 16) for x in where.split("-"))
                if not any(n == fn and lo <= pc < hi for n, pc in zip(names, pcs)):
                    return False
        elif cond not in names:
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--core", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--json")
    ap.add_argument("--go-minor", type=int, default=19, help="Go 1.N of the binary (offsets)")
    ap.add_argument("--signalled", action="store_true", help="only the signalled thread may match")
    a = ap.parse_args()
    set_offsets(a.go_minor)
    syms = Symbols(a.binary)
    core = Core(a.core)
    gv = go_view(core, syms)
    alts = [[c for c in alt.split(",") if c] for alt in a.rule.split("|")]
    out = {"rule": a.rule, "arch": "arm64" if core.machine == EM_AARCH64 else "amd64", "threads": []}
    match = None
    for i, t in enumerate(core.threads):
        regs = thread_regs(core, t)
        pcs = fp_walk(core, regs, syms=syms)
        names = [syms.name(pc) or "?" for pc in pcs]
        th = {"lwp": t["lwp"], "cursig": t["cursig"], "pc": hex(regs["pc"]), "sp": hex(regs["sp"]),
              "fp": hex(regs["fp"]), "pcs": pcs, "frames": names}
        view = gv.get(t["lwp"])
        if view:
            th["go"] = view
            th["sp_on"] = sp_on(view, regs["sp"])
            if view.get("g0_slot_g") and view["g0_slot_g"].get("sched_pc"):
                th["slot_sched_func"] = syms.name(view["g0_slot_g"]["sched_pc"])
            c = view.get("curg")
            if th["sp_on"] != "curg" and c and c.get("sched_pc"):
                # The goroutine under the switch, from its saved context (what Delve starts from):
                # sched.pc, sched.lr (arm64, when set), then the frame-record chain from sched.bp.
                cp = fp_walk(core, {"pc": c["sched_pc"], "lr": c.get("sched_lr") if core.machine == EM_AARCH64 else None,
                                    "fp": c.get("sched_bp") or 0}, syms=syms)
                if core.machine == EM_X86_64 and "runtime.newstack" in names:
                    # amd64 morestack: f has not pushed its frame yet, so sched.bp is its caller's
                    # frame and the caller itself is m.morebuf.pc (m.morebuf at m+8, pc at +8).
                    mb = core.u64(int(view["m"], 16) + 16)
                    if mb:
                        cp.insert(1, mb)
                th["curg_pcs"] = [hex(p) for p in cp]
                th["curg_frames"] = [syms.name(p) or "?" for p in cp]
        if i == 0:
            out["signalled_lwp"] = t["lwp"]  # the thread that took the fatal signal is written first
        ok = check_any(alts, th) and (i == 0 or not a.signalled)
        th["match"] = ok
        out["threads"].append(th)
        if ok and (match is None or match["lwp"] == out.get("signalled_lwp")):
            match = th  # prefer a thread that did not take the SIGABRT
    if match:
        out.update({"matched_lwp": match["lwp"], "matched_pc": match["pc"], "matched_frames": match["frames"]})
    if a.json:
        for th in out["threads"]:
            th["pcs"] = [hex(p) for p in th["pcs"]]
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    for th in out["threads"]:
        print("%s lwp %d sig %d sp_on=%s %s" % ("*" if th["match"] else " ", th["lwp"], th["cursig"],
                                               th.get("sp_on", "-"), " < ".join(th["frames"][:10])))
        if th["match"] and th.get("curg_frames"):
            print("    curg %s: %s" % (th["go"]["curg"]["goid"], " < ".join(th["curg_frames"][:10])))
    return 0 if match else 1


def check_any(alts, th):
    return any(check(alt, th) for alt in alts)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, struct.error) as e:
        print("classify: %s" % e, file=sys.stderr)
        sys.exit(2)
