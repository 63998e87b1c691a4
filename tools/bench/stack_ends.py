#!/usr/bin/env python3
"""How the stacks of one recording end, for switchback (folded stacks) or perf (perf script).

  stack_ends.py folded FILE        switchback --folded output (root first, "[stopped: X]" first
                                   when the stack did not reach a root)
  stack_ends.py perf FILE          `perf script -F tid,ip,sym` output (leaf first, blank line
                                   between samples)

Prints one JSON object: samples, root (end at a Go thread root with nothing beyond it),
past_root (a root, then more frames: a walk that ran past the thread's start), other (ends
elsewhere: truncated), user (samples with a main.* frame: attributed to the workload's own
code, which on g0 takes crossing the stack switch), and leaf_caller_kept / leaf_caller_total for samples whose leaf is a
frameless Go leaf of the demo workload (main.leafAdd, main.spinInner): whether the next frame
is its real caller, which a plain frame-pointer walk loses.
"""
import json
import sys

ROOTS = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.sigtramp"}
LEAF_CALLERS = {"main.leafAdd": {"main.leafCaller"}, "main.spinInner": {"main.spin", "main.depthBottom"}}


def base_name(sym):
    # perf prints ABI0 symbols as runtime.goexit.abi0 and may add +0x offsets.
    sym = sym.split("+0x")[0]
    for suffix in (".abi0", ".abiinternal"):
        if sym.endswith(suffix):
            sym = sym[: -len(suffix)]
    return sym


def classify(leaf_first, count, out):
    out["samples"] += count
    frames = [base_name(f) for f in leaf_first]
    # sigtramp is where perf's walk ends on a signal stack; switchback crosses the signal frame
    # into the interrupted goroutine and goes on to its root: sigtramp inside a stack that
    # ends at a root is a crossing, not a root (it used to count as "past root").
    roots = [i for i, f in enumerate(frames) if f in ROOTS and (f != "runtime.sigtramp" or i == len(frames) - 1)]
    # A g0 stack based at mcall or morestack: after mcall(goexit0) its goroutine has exited,
    # after dropg it has run elsewhere since; nothing is above it. Whole for every tool alike
    # (switchback stops there with goroutine_exited / goroutine_left, as Go's traceback does).
    exited = len(frames) >= 2 and frames[-1] in ("runtime.mcall", "runtime.morestack")
    if exited and not roots:
        out["root"] += count
    elif not roots:
        out["other"] += count
    elif roots[0] == len(frames) - 1:
        out["root"] += count
    else:
        out["past_root"] += count
    if any(f.startswith("main.") for f in frames):
        out["user"] += count
    if frames and frames[0] in LEAF_CALLERS:
        out["leaf_caller_total"] += count
        if len(frames) > 1 and frames[1] in LEAF_CALLERS[frames[0]]:
            out["leaf_caller_kept"] += count


def read_folded(path, out):
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, n = line.rpartition(" ")
            frames = stack.split(";")
            if frames and frames[0].startswith("[stopped:"):
                frames = ["[stopped]"] + frames[1:]
            classify(list(reversed(frames)), int(n), out)


def read_perf(path, out):
    frames = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("\t") or line.startswith(" " * 8):
                parts = line.strip().split(None, 1)
                frames.append(parts[1] if len(parts) > 1 else "[unknown]")
            elif not line.strip():
                if frames:
                    classify(frames, 1, out)
                frames = []
        if frames:
            classify(frames, 1, out)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("folded", "perf"):
        sys.exit(__doc__)
    out = dict(samples=0, root=0, past_root=0, other=0, user=0, leaf_caller_kept=0, leaf_caller_total=0)
    (read_folded if sys.argv[1] == "folded" else read_perf)(sys.argv[2], out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
