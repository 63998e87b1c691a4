#!/usr/bin/env python3
"""What switchback's unwinder costs against a plain frame-pointer walk of the same samples.

`switchback record --compare-fp-walk` makes the BPF program walk every sample twice: with the
unwinder (pcsp for the leaf, g/m/g0 loads, switch crossings) and with a plain frame-pointer walk
(fp_walk_baseline.h: what perf and the kernel do), before or after each other on alternate
samples, and reports both times and frame counts in --stats (bpf.unwind_ns / unwind_frames,
bpf.fp_walk_ns / fp_walk_frames). Both are measured on the same samples in the same run, so the
ratios hold on a busy machine even where absolute times do not.

For each Go version, `demo -mode=depth -depth=N` (N frames of main.depthRecurse above a
spinning frameless leaf, 2 workers) is recorded for each depth, and optionally the mixed
`demo -mode=all`; rounds are interleaved (round 1 of every configuration, then round 2, ...)
and the medians printed:
  per frame   (unwind_ns / unwind_frames) / (fp_walk_ns / fp_walk_frames)
  per sample  unwind_ns / fp_walk_ns
and, per workload, the median over the versions (the issue's goal: at most 2x per frame and 3x
per sample), and the mixed workload by where its samples were taken (a goroutine's own stack;
g0 crossed by morestack; g0 otherwise: `bpf.compare_by_kind` of --stats): on g0 the plain walk
ends at the g0 stack's end while the unwinder crosses into the goroutine, so the two walks do
the same work only on a goroutine's own stack. With FLOOR=1 (the default) every configuration
is also recorded with
`--compare-floor`: the floor (the plain walk plus the reads that name the goroutine: TLS g, g.m
and goid, m.curg; what any goroutine-aware unwinder reads at least) timed against the plain
walk the same way, in its own recordings, so the unwinder/plain figures keep their meaning:
  floor       floor_ns / fp_walk_ns (per sample; it walks the plain walk's frames)
and with `--compare-crossing-floor`: that floor which, on g0, also crosses into curg from its
gobuf and walks its frames, unchecked (the least an unwinder that shows the goroutine behind a
g0 sample does; per sample and per frame, since it walks about the unwinder's frames). FLOOR=
floor or FLOOR=crossing records only one of the two, FLOOR=0 neither.
With BEFORE=/path/to/other/switchback, every recording is made with both binaries
(back to back, the order alternating per round) and both tables printed. Then the verifier's
work per build (bpf.verified_insns): the shipped sampler and the --compare-fp-walk build.

Usage: tools/bench/unwind_cost.py [BUILD_DIR]           (root; default BUILD_DIR=build)
Environment: VERSIONS (default "1.19 1.23 1.27"; 1.21+ from tools/fetch-go.sh), DEPTHS
  (default "16 64 128"), ROUNDS (default 3), SECONDS_PER_RUN (default 3), FREQ (default 999),
  MAX_FRAMES (default 256: the depth-128 stack, 132 frames, stays whole), MIXED (default 1:
  also mode=all), FLOOR (default 1, see above), OUT=FILE also writes every run as JSON lines,
  BEFORE (see above), ALLOW_BUSY=1 (start even when the CPUs are over 25% busy beforehand; by
  default the run refuses: a forgotten workload once raised a run's depth-16 ratios by a third).
About (versions x (depths + mixed) x rounds x (SECONDS_PER_RUN + 2)) seconds: 2 minutes with the
defaults, plus the builds.
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

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def die(msg):
    sys.exit(f"unwind_cost: {msg}")


def go_for(version):
    if version == "1.19":
        go = shutil.which("go")
        if not go:
            die("no go on PATH")
        return go
    out = subprocess.run([os.path.join(ROOT, "tools/fetch-go.sh"), version], capture_output=True, text=True)
    if out.returncode != 0:
        die(f"tools/fetch-go.sh {version} failed: {out.stderr.strip()}")
    return out.stdout.split()[-1] + "/bin/go"


def build_demo(version, scratch):
    dst = os.path.join(scratch, f"go{version}", "demo")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", CGO_ENABLED="0")
    subprocess.run([go_for(version), "build", "-o", dst, "."], cwd=os.path.join(ROOT, "testdata/workloads/demo"),
                   env=env, check=True)
    return dst


FLOOR_FLAGS = {"floor": "--compare-floor", "crossing": "--compare-crossing-floor"}
FLOOR_TITLES = {"floor": "The floor: the plain walk plus the reads that name the goroutine (`--compare-floor`, own "
                         "recordings)",
                "crossing": "The crossing floor: the floor, and on g0 the crossing into curg from its gobuf, unchecked "
                            "(`--compare-crossing-floor`, own recordings)"}


def record(switchback, demo, args, secs, freq, max_frames, compare, scratch, name, floor=None):
    """Runs demo with args, records it, returns the stats JSON."""
    wl = subprocess.Popen([demo, "-duration=0", "-workers=2"] + args, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # the goroutines are at their depth
        stats = os.path.join(scratch, name + ".json")
        cmd = [switchback, "record", "-p", str(wl.pid), "-d", str(secs), "-F", str(freq), "-q",
               "--max-frames", str(max_frames), "-o", os.path.join(scratch, name + ".pb.gz"), "--stats", stats]
        if floor:
            cmd.append(FLOOR_FLAGS[floor])
        elif compare:
            cmd.append("--compare-fp-walk")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            die(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
        with open(stats) as f:
            return json.load(f)
    finally:
        wl.send_signal(signal.SIGTERM)
        try:
            wl.wait(timeout=10)
        except subprocess.TimeoutExpired:
            wl.kill()
            wl.wait()


def ratios(bpf):
    un, uf, fn, ff = bpf["unwind_ns"], bpf["unwind_frames"], bpf.get("fp_walk_ns", 0), bpf.get("fp_walk_frames", 0)
    if not (un and uf and fn and ff and bpf["unwound"]):
        return None
    n = bpf["unwound"]
    lookups = bpf.get("pcsp_lookups", 0)
    r = {"per_frame": (un / uf) / (fn / ff), "per_sample": un / fn, "unwind_ns_frame": un / uf,
         "fp_ns_frame": fn / ff, "unwind_ns_sample": un / n, "fp_ns_sample": fn / n,
         "frames": uf / n, "fp_frames": ff / n,
         # the sampler's pcsp cache (0 from a switchback that reports no pcsp counters)
         "pcsp_per_sample": lookups / n, "pcsp_hits": bpf.get("pcsp_cache_hits", 0) / lookups if lookups else 0}
    # Where the samples were taken (none from a switchback that reports no compare_by_kind): per
    # kind, its share of the samples and of the unwinder's time, and both walks per sample.
    for kind, c in bpf.get("compare_by_kind", {}).items():
        k = c["samples"]
        if k and c["fp_walk_ns"]:
            r["kind_" + kind] = {"share": k / n, "time_share": c["unwind_ns"] / un, "unwind_ns": c["unwind_ns"] / k,
                                 "frames": c["unwind_frames"] / k, "fp_ns": c["fp_walk_ns"] / k,
                                 "fp_frames": c["fp_walk_frames"] / k, "per_sample": c["unwind_ns"] / c["fp_walk_ns"]}
    return r


KINDS = (("goroutine", "a goroutine's own stack"), ("g0_morestack", "g0, crossed by morestack"),
         ("g0_other", "g0, otherwise"))


def print_by_kind(results, b, configs, med):
    """The mixed workload by where its samples were taken (record --stats bpf.compare_by_kind):
    on g0 the plain walk ends at the g0 stack's end while the unwinder goes on through the
    goroutine's stack, so the per-sample ratio is read best kind by kind."""
    rows = []
    for v, label, _ in configs:
        rs = [r for r in results[(b, v, label)] if any(k.startswith("kind_") for k in r)]
        if not label.startswith("mixed") or not rs:
            continue
        for kind, desc in KINDS:
            ks = [r["kind_" + kind] for r in rs if "kind_" + kind in r]
            if ks:
                rows.append((v, desc, ks))
    if not rows:
        return
    print("\nThe mixed workload by where the samples were taken (medians of the rounds; per sample):\n")
    print("| Go | taken on | share of samples | unwinder ns (frames) | plain walk ns (frames) | unwinder / plain walk "
          "| share of the unwinder's time |")
    print("|---|---|---|---|---|---|---|")
    for v, desc, ks in rows:
        print(f"| {v} | {desc} | {100 * med(ks, 'share'):.1f}% | {med(ks, 'unwind_ns'):.0f} ({med(ks, 'frames'):.1f}) | "
              f"{med(ks, 'fp_ns'):.0f} ({med(ks, 'fp_frames'):.1f}) | {med(ks, 'per_sample'):.2f}x | "
              f"{100 * med(ks, 'time_share'):.1f}% |")


def print_floor(fk, floors, results, configs, versions, labels, med):
    """One floor's recordings against the unwinder's (per sample, and per frame: the crossing
    floor walks about the unwinder's frames; the plain floor the plain walk's)."""
    if not any(floors[(fk, v, label)] for v, label, _ in configs):
        return
    print(f"## {FLOOR_TITLES[fk]}\n")
    print("| Go | workload | ns per sample (floor / fp walk) | frames (floor / fp walk) | floor / fp walk, per frame "
          "| per sample | unwinder / fp walk (above), per frame | per sample | unwinder / floor, per frame | per sample |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v, label, _ in configs:
        fs, rs = floors[(fk, v, label)], results[("after", v, label)]
        if not fs or not rs:
            continue
        ff, fl, uf, un = med(fs, "floor_frame"), med(fs, "floor"), med(rs, "per_frame"), med(rs, "per_sample")
        print(f"| {v} | {label} | {med(fs, 'floor_ns_sample'):.0f} / {med(fs, 'fp_ns_sample'):.0f} | "
              f"{med(fs, 'floor_frames'):.1f} / {med(fs, 'fp_frames'):.1f} | {ff:.2f}x | {fl:.2f}x | {uf:.2f}x | "
              f"{un:.2f}x | {uf / ff:.2f}x | {un / fl:.2f}x |")
    print("\nMedian over the versions (goal for the unwinder: <= 2x per frame, <= 3x per sample):\n")
    print("| workload | floor / fp walk, per frame | per sample | unwinder / fp walk, per frame | per sample "
          "| unwinder / floor, per frame | per sample |")
    print("|---|---|---|---|---|---|---|")
    for label in labels:
        per = [(floors[(fk, v, label)], results[("after", v, label)]) for v in versions
               if floors[(fk, v, label)] and results[("after", v, label)]]
        if not per:
            continue
        mv = lambda f: statistics.median(f(fs, rs) for fs, rs in per)
        print(f"| {label} | {mv(lambda fs, rs: med(fs, 'floor_frame')):.2f}x | {mv(lambda fs, rs: med(fs, 'floor')):.2f}x | "
              f"{mv(lambda fs, rs: med(rs, 'per_frame')):.2f}x | {mv(lambda fs, rs: med(rs, 'per_sample')):.2f}x | "
              f"{mv(lambda fs, rs: med(rs, 'per_frame') / med(fs, 'floor_frame')):.2f}x | "
              f"{mv(lambda fs, rs: med(rs, 'per_sample') / med(fs, 'floor')):.2f}x |")
    rows = []
    for v, label, _ in configs:
        fs, rs = floors[(fk, v, label)], results[("after", v, label)]
        for kind, desc in KINDS:
            fk_ = [f["kind_" + kind] for f in fs if "kind_" + kind in f]
            rk = [r["kind_" + kind] for r in rs if "kind_" + kind in r]
            if label.startswith("mixed") and fk_ and rk:
                rows.append((v, desc, fk_, rk))
    if rows:
        print("\nThe mixed workload by where the samples were taken (per sample, medians of the rounds; the "
              "unwinder's from its own recordings above):\n")
        print("| Go | taken on | floor ns (frames) | plain walk ns | floor / plain walk | unwinder ns (frames) "
              "| unwinder / floor |")
        print("|---|---|---|---|---|---|---|")
        for v, desc, fk_, rk in rows:
            print(f"| {v} | {desc} | {med(fk_, 'floor_ns'):.0f} ({med(fk_, 'frames'):.1f}) | {med(fk_, 'fp_ns'):.0f} | "
                  f"{med(fk_, 'floor_ns') / med(fk_, 'fp_ns'):.2f}x | {med(rk, 'unwind_ns'):.0f} ({med(rk, 'frames'):.1f}) | "
                  f"{med(rk, 'unwind_ns') / med(fk_, 'floor_ns'):.2f}x |")
    print()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    switchback = os.environ.get("SWITCHBACK", os.path.join(build, "tools/switchback"))
    if os.geteuid() != 0:
        die("needs root (BPF)")
    if not os.access(switchback, os.X_OK):
        die(f"no switchback at {switchback} (ninja -C {build} switchback)")
    versions = os.environ.get("VERSIONS", "1.19 1.23 1.27").split()
    depths = [int(d) for d in os.environ.get("DEPTHS", "16 64 128").split()]
    rounds = int(os.environ.get("ROUNDS", "3"))
    secs = int(os.environ.get("SECONDS_PER_RUN", "3"))
    freq = int(os.environ.get("FREQ", "999"))
    max_frames = int(os.environ.get("MAX_FRAMES", "256"))
    mixed = os.environ.get("MIXED", "1") == "1"
    out = open(os.environ["OUT"], "a") if os.environ.get("OUT") else None
    floor_env = os.environ.get("FLOOR", "1")
    floor_kinds = {"0": [], "1": ["floor", "crossing"]}.get(floor_env, floor_env.split())
    if any(k not in FLOOR_FLAGS for k in floor_kinds):
        die(f"FLOOR={floor_env}: give 0, 1, floor or crossing")

    require_quiet("unwind_cost")
    binaries = [("after", switchback)]
    if os.environ.get("BEFORE"):
        binaries.append(("before", os.environ["BEFORE"]))
    scratch = tempfile.mkdtemp(prefix="sb-unwind-cost.")
    try:
        demos = {v: build_demo(v, scratch) for v in versions}
        configs = [(v, f"depth {d}", ["-mode=depth", f"-depth={d}"]) for v in versions for d in depths]
        if mixed:
            configs += [(v, "mixed (all)", ["-mode=all"]) for v in versions]
        labels = list(dict.fromkeys(label for _, label, _ in configs))
        results = {(b, v, label): [] for b, _ in binaries for v, label, _ in configs}
        verified = {b: {} for b, _ in binaries}
        floors = {(k, v, label): [] for k in floor_kinds for v, label, _ in configs}
        for rnd in range(rounds):
            for v, label, args in configs:
                order = binaries if rnd % 2 == 0 else binaries[::-1]
                for b, exe in order:
                    name = f"{b}-go{v}-{label.replace(' ', '_').replace('(', '').replace(')', '')}-r{rnd}"
                    s = record(exe, demos[v], args, secs, freq, max_frames, True, scratch, name)
                    verified[b]["--compare-fp-walk"] = s["bpf"]["verified_insns"]
                    r = ratios(s["bpf"])
                    if r is None:
                        print(f"unwind_cost: {name}: no samples timed", file=sys.stderr)
                        continue
                    r["whole"] = s["ended_at_root"] / s["samples"] if s["samples"] else 0
                    results[(b, v, label)].append(r)
                    if out:
                        out.write(json.dumps({"binary": b, "go": v, "config": label, "round": rnd, **r,
                                              "bpf": s["bpf"]}) + "\n")
                        out.flush()
                for fk in floor_kinds:
                    name = f"{fk}-go{v}-{label.replace(' ', '_').replace('(', '').replace(')', '')}-r{rnd}"
                    s = record(switchback, demos[v], args, secs, freq, max_frames, True, scratch, name, floor=fk)
                    bpf = s["bpf"]
                    if bpf.get("floor_ns") and bpf.get("fp_walk_ns") and bpf.get("floor_frames"):
                        f = {"floor": bpf["floor_ns"] / bpf["fp_walk_ns"],
                             "floor_frame": (bpf["floor_ns"] / bpf["floor_frames"]) /
                                            (bpf["fp_walk_ns"] / bpf["fp_walk_frames"]),
                             "floor_ns_sample": bpf["floor_ns"] / bpf["unwound"],
                             "fp_ns_sample": bpf["fp_walk_ns"] / bpf["unwound"],
                             "floor_frames": bpf["floor_frames"] / bpf["unwound"],
                             "fp_frames": bpf["fp_walk_frames"] / bpf["unwound"]}
                        for kind, c in bpf.get("floor_by_kind", {}).items():
                            k = c["samples"]
                            if k and c["fp_walk_ns"]:
                                f["kind_" + kind] = {"share": k / bpf["unwound"], "floor_ns": c["floor_ns"] / k,
                                                     "frames": c["floor_frames"] / k, "fp_ns": c["fp_walk_ns"] / k}
                        floors[(fk, v, label)].append(f)
                        if out:
                            out.write(json.dumps({"binary": fk, "go": v, "config": label, "round": rnd, **f,
                                                  "bpf": bpf}) + "\n")
                            out.flush()
        for b, exe in binaries:
            s = record(exe, demos[versions[0]], ["-mode=depth", "-depth=16"], 1, freq, max_frames, False, scratch,
                       f"{b}-shipped")
            verified[b]["shipped"] = s["bpf"]["verified_insns"]

        med = lambda rs, k: statistics.median(r[k] for r in rs)
        for b, exe in binaries:
            print(f"## {b}: {exe}\n")
            print(f"Unwinder against a plain frame-pointer walk of the same samples (medians of {rounds} interleaved "
                  f"rounds, {secs} s at {freq} Hz each, --max-frames {max_frames}):\n")
            print("| Go | workload | frames/sample (unwinder / fp walk) | ns per frame (unwinder / fp walk) | "
                  "per frame | per sample | whole stacks | pcsp lookups/sample, cache hits |")
            print("|---|---|---|---|---|---|---|---|")
            for v, label, _ in configs:
                rs = results[(b, v, label)]
                if not rs:
                    print(f"| {v} | {label} | - | - | - | - | - | - |")
                    continue
                print(f"| {v} | {label} | {med(rs, 'frames'):.1f} / {med(rs, 'fp_frames'):.1f} | "
                      f"{med(rs, 'unwind_ns_frame'):.0f} / {med(rs, 'fp_ns_frame'):.0f} | "
                      f"{med(rs, 'per_frame'):.2f}x | {med(rs, 'per_sample'):.2f}x | {100 * med(rs, 'whole'):.1f}% | "
                      f"{med(rs, 'pcsp_per_sample'):.1f}, {100 * med(rs, 'pcsp_hits'):.0f}% |")
            # The goal's figure: per workload, the median over the versions of each version's median.
            print("\nMedian over the versions (each version's median of its rounds; goal: <= 2x per frame, "
                  "<= 3x per sample):\n")
            print("| workload | per frame | per sample | versions |")
            print("|---|---|---|---|")
            for label in labels:
                per = [results[(b, v, label)] for v in versions if results[(b, v, label)]]
                if not per:
                    continue
                pf = statistics.median(med(rs, "per_frame") for rs in per)
                ps = statistics.median(med(rs, "per_sample") for rs in per)
                print(f"| {label} | {pf:.2f}x {'met' if pf <= 2 else 'not met'} | "
                      f"{ps:.2f}x {'met' if ps <= 3 else 'not met'} | {len(per)} |")
            print_by_kind(results, b, configs, med)
            allr = [r for (bb, _, _), rs in results.items() if bb == b for r in rs]
            if allr:
                print(f"\nOver all recordings: per frame {med(allr, 'per_frame'):.2f}x, per sample "
                      f"{med(allr, 'per_sample'):.2f}x (median of {len(allr)})")
            print(f"\nVerifier (bpf.verified_insns): shipped {verified[b].get('shipped')}, "
                  f"--compare-fp-walk {verified[b].get('--compare-fp-walk')}\n")
        for fk in floor_kinds:
            print_floor(fk, floors, results, configs, versions, labels, med)
        print(f"Load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        if os.environ.get("KEEP") == "1":
            print(f"scratch kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
