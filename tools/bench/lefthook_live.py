#!/usr/bin/env python3
"""Whole stacks on a real Go program recorded live: lefthook 2.2.2 (Go 1.27, no DWARF, no symbol
table; tools/fetch-lefthook.sh) running a git hook, over and over, while
`switchback record --all` samples every Go process on the host.

A scratch git repository gets a lefthook.yml whose pre-commit hook runs JOBS commands in
parallel (lefthook parses its config, asks git for the staged files, spawns and waits); the
hook is run back to back for SECONDS. lefthook is short-lived, so the recording follows new
processes (--all) and this script keeps only the samples of threads named lefthook (the
`thread` label), read from the pprof with `go tool pprof -raw`. Prints the samples, the share
that is whole (a root, goroutine_exited or goroutine_left: no [stopped: ...] frame) and each stop
reason's share.

Usage: tools/bench/lefthook_live.py [BUILD_DIR]        (root; default BUILD_DIR=build)
Environment: LEFTHOOK (default .cache/lefthook/lefthook-linux-x64), SECONDS (default 20),
  FREQ (default 999), JOBS (default 16), KEEP=1 keeps the scratch directory, COMPARE=1 records
  with --compare-fp-walk and also prints the unwinder's cost against a plain frame-pointer walk
  of the same samples (per frame, per sample, and by where the sample was taken), as
  tools/bench/unwind_cost.py does for the demo: the figure of a real program beside the demo's;
  COMPARE=floor records with --compare-floor and prints the floor (that walk plus the reads
  naming the goroutine) against the plain walk, COMPARE=crossing with --compare-crossing-floor
  (that floor, crossing into curg on g0). Every tracked process counts there (record --all
  tracks only Go processes: lefthook's).
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from quiet_machine import require_quiet
from unwind_cost import KINDS, ratios

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def die(msg):
    sys.exit(f"lefthook_live: {msg}")


def perf_fds(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                n += "perf_event" in os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
    except OSError:
        return -1
    return n


def parse_raw(text):
    """Samples of `go tool pprof -raw`: [(count, [location ids], {label: value})], {id: function}."""
    samples, funcs = [], {}
    section = None
    cur = None
    for line in text.splitlines():
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "samples":
            m = re.match(r"^\s+(\d+)\s+\d+: ([\d ]*)$", line)
            if m:
                cur = (int(m.group(1)), [int(x) for x in m.group(2).split()], {})
                samples.append(cur)
                continue
            if cur is not None:
                for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                    cur[2][k] = v
        elif section == "locations":
            m = re.match(r"^\s+(\d+): ", line)
            if not m:
                continue  # an inlined caller's line of the location above
            stop = re.search(r"\[stopped: [^\]]+\]", line)
            fn = re.match(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ (\S+)", line)
            funcs[int(m.group(1))] = stop.group(0) if stop else (fn.group(1) if fn else "?")
    return samples, funcs


def print_cost(bpf, floor):
    """The unwinder (--compare-fp-walk) or a floor (--compare-floor, --compare-crossing-floor)
    against the plain frame-pointer walk of the same samples."""
    n = bpf.get("unwound", 0) or 1
    fn = bpf.get("fp_walk_ns", 0)
    if floor:
        if not (bpf.get("floor_ns") and bpf.get("floor_frames") and fn):
            die("the floor recording reported no walks")
        per_frame = (bpf["floor_ns"] / bpf["floor_frames"]) / (fn / bpf["fp_walk_frames"])
        print(f"{bpf.get('floor_walk', 'floor')} (every tracked process, {n} samples): {bpf['floor_ns'] / n:.0f} ns / "
              f"{bpf['floor_frames'] / n:.1f} frames per sample, plain walk {fn / n:.0f} ns / "
              f"{bpf['fp_walk_frames'] / n:.1f} frames: floor / plain walk per frame {per_frame:.2f}x, per sample "
              f"{bpf['floor_ns'] / fn:.2f}x")
        return
    r = ratios(bpf)  # unwind_cost.py's arithmetic, so both benchmarks' figures mean the same
    if r is None:
        die("--compare-fp-walk reported no walks")
    print(f"cost (every tracked process, {n} samples): unwinder {r['unwind_ns_sample']:.0f} ns / {r['frames']:.1f} "
          f"frames per sample, plain walk {r['fp_ns_sample']:.0f} ns / {r['fp_frames']:.1f} frames: per frame "
          f"{r['per_frame']:.2f}x, per sample {r['per_sample']:.2f}x")
    for kind, _ in KINDS:
        k = r.get("kind_" + kind)
        if k:
            print(f"  {kind}: {100 * k['share']:.1f}% of samples, unwinder {k['unwind_ns']:.0f} ns ({k['frames']:.1f} "
                  f"frames), plain walk {k['fp_ns']:.0f} ns ({k['fp_frames']:.1f}), {k['per_sample']:.2f}x, "
                  f"{100 * k['time_share']:.1f}% of the unwinder's time")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    switchback = os.environ.get("SWITCHBACK", os.path.join(build, "tools/switchback"))
    if os.geteuid() != 0:
        die("needs root (BPF)")
    require_quiet("lefthook_live")
    lefthook = os.environ.get("LEFTHOOK", os.path.join(ROOT, ".cache/lefthook/lefthook-linux-x64"))
    if not os.access(lefthook, os.X_OK):
        subprocess.run([os.path.join(ROOT, "tools/fetch-lefthook.sh")], check=True)
    secs = int(os.environ.get("SECONDS", "20"))
    freq = int(os.environ.get("FREQ", "999"))
    jobs = int(os.environ.get("JOBS", "16"))
    compare = os.environ.get("COMPARE", "")
    if compare not in ("", "1", "floor", "crossing"):
        die(f"COMPARE={compare}: 1, floor or crossing")
    go = shutil.which("go") or die("no go on PATH (go tool pprof)")

    scratch = tempfile.mkdtemp(prefix="sb-lefthook.")
    try:
        repo = os.path.join(scratch, "repo")
        os.makedirs(repo)
        subprocess.run(["git", "init", "-q", repo], check=True)
        with open(os.path.join(repo, "lefthook.yml"), "w") as f:
            f.write("pre-commit:\n  parallel: true\n  commands:\n")
            for i in range(jobs):
                f.write(f"    job{i}:\n      run: test -d .git && echo {i} >/dev/null\n")
        for i in range(20):
            with open(os.path.join(repo, f"file{i}.txt"), "w") as f:
                f.write(f"{i}\n")
        subprocess.run(["git", "-C", repo, "add", "."], check=True)
        pprof = os.path.join(scratch, "lefthook.pb.gz")
        rec = subprocess.Popen([switchback, "record", "--all", "-d", str(secs + 3), "-F", str(freq), "-q",
                                "-o", pprof, "--stats", os.path.join(scratch, "stats.json")] +
                               ({"1": ["--compare-fp-walk"], "floor": ["--compare-floor"],
                                 "crossing": ["--compare-crossing-floor"]}.get(compare, [])),
                               stderr=open(os.path.join(scratch, "record.err"), "w"))
        deadline = time.time() + 60
        while perf_fds(rec.pid) < os.cpu_count():
            if rec.poll() is not None or time.time() > deadline:
                die("switchback record did not attach: " + open(os.path.join(scratch, "record.err")).read())
            time.sleep(0.1)
        runs, end = 0, time.time() + secs
        env = dict(os.environ, LEFTHOOK_QUIET="meta,summary,execution")
        while time.time() < end:
            subprocess.run([lefthook, "run", "pre-commit"], cwd=repo, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            runs += 1
        if rec.wait() != 0:
            die("switchback record failed: " + open(os.path.join(scratch, "record.err")).read())
        raw = subprocess.run([go, "tool", "pprof", "-raw", pprof], capture_output=True, text=True, check=True).stdout
        samples, funcs = parse_raw(raw)
        total, reasons = 0, collections.Counter()
        for count, locs, labels in samples:
            if not labels.get("thread", "").startswith("lefthook"):  # comm: 15 bytes of the file name
                continue
            total += count
            names = [funcs.get(l, "?") for l in locs]
            stopped = [n for n in names if n.startswith("[stopped:")]
            reasons[stopped[0][len("[stopped: "):-1] if stopped else "whole"] += count
        print(f"lefthook {os.path.basename(lefthook)}: {runs} hook runs ({jobs} parallel commands each) in {secs} s, "
              f"recorded at {freq} Hz with record --all")
        if total == 0:
            die("no lefthook samples")
        print(f"samples of lefthook threads: {total}")
        print(f"whole (root, goroutine_exited or goroutine_left): {reasons['whole']} ({100 * reasons['whole'] / total:.2f}%)")
        for r, n in reasons.most_common():
            if r != "whole":
                print(f"  [stopped: {r}] {n} ({100 * n / total:.2f}%)")
        if compare:
            print_cost(json.load(open(os.path.join(scratch, "stats.json")))["bpf"], compare in ("floor", "crossing"))
    finally:
        if os.environ.get("KEEP") == "1":
            print(f"scratch kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
