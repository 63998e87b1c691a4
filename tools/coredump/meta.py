#!/usr/bin/env python3
"""Writes STATE.meta.json for a capture: summary fields plus the goroutine the stopped thread
was running according to Delve (`goroutines` lines end in "(thread N)") and to gdb's Go view."""
import argparse
import json
import os
import re


def dlv_thread_goroutines(path):
    m = {}
    if not path or not os.path.exists(path):
        return m
    for line in open(path, errors="replace"):
        g = re.match(r"^[ *]+Goroutine (\d+) - .*\(thread (\d+)\)", line)
        if g:
            m[int(g.group(2))] = int(g.group(1))
    return m


def main():
    ap = argparse.ArgumentParser()
    for a in ("state", "arch", "go-version", "binary", "core", "pid", "gdb-json", "gdb-bt", "dlv", "out",
              "classify-json", "breakpoint", "stopped-lwp", "method", "gdbstub-json"):
        ap.add_argument("--" + a)
    a = ap.parse_args()
    meta = {"state": a.state, "arch": a.arch, "go_version": a.go_version,
            "binary": os.path.basename(a.binary), "core": os.path.basename(a.core),
            "core_bytes": os.path.getsize(a.core), "pid": int(a.pid) if a.pid else None,
            "method": a.method}
    thr = dlv_thread_goroutines(a.dlv)
    if a.gdb_json:
        g = json.load(open(a.gdb_json))
        meta.update({"stopped_lwp": g.get("stopped_lwp"), "stopped_pc": g.get("stopped_pc"),
                     "breakpoint": g.get("breakpoint"), "breakpoint_addrs": g.get("bp_addrs"),
                     "stopped_gdb_frames": g.get("stopped_frames"), "attempts": g.get("attempts"),
                     "gdb_json_file": os.path.basename(a.gdb_json)})
        rec = next((t for t in g["threads"] if t["lwp"] == g.get("stopped_lwp")), None)
        if rec:
            meta["stopped_thread_go"] = {
                "m_id": rec.get("m_id"), "sp_on": rec.get("sp_on"),
                "curg_goid": (rec.get("curg") or {}).get("goid"),
                "g0_slot_goid": (rec.get("g0_slot_g") or {}).get("goid"),
                "g0_slot_status": (rec.get("g0_slot_g") or {}).get("status"),
                "g0_slot_m": (rec.get("g0_slot_g") or {}).get("m")}
    if a.classify_json:
        c = json.load(open(a.classify_json))
        meta.update({"stopped_lwp": c.get("matched_lwp"), "stopped_pc": c.get("matched_pc"),
                     "breakpoint": None, "classifier": c.get("rule"),
                     "stopped_fp_frames": c.get("matched_frames"),
                     "signalled_lwp": c.get("signalled_lwp"),
                     "classify_json_file": os.path.basename(a.classify_json)})
    if a.breakpoint:
        meta["breakpoint"] = a.breakpoint
    if a.gdbstub_json:
        g = json.load(open(a.gdbstub_json))
        meta.update({"breakpoint_addrs": g.get("bp_addrs"), "breakpoint_hits": g.get("hits"),
                     "breakpoint_hits_before_ready": g.get("hits_before_ready"),
                     "gdbstub_json_file": os.path.basename(a.gdbstub_json)})
    if a.gdb_bt:
        meta["gdb_bt_file"] = os.path.basename(a.gdb_bt)
    if a.dlv:
        meta["dlv_file"] = os.path.basename(a.dlv)
    lwp = meta.get("stopped_lwp")
    meta["dlv_thread_goroutines"] = {str(k): v for k, v in sorted(thr.items())}
    meta["dlv_stopped_goroutine"] = thr.get(lwp) if lwp else None
    with open(a.out, "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
