#!/usr/bin/env python3
"""What each BPF global function of the sampler costs the verifier.

  SWITCHBACK_BPF_VERIFIER_LOG=/tmp/vlog.txt switchback record --all -d 1 -o /tmp/x.pb.gz -q [--compare-fp-walk]
  tools/bench/verifier_cost.py /tmp/vlog.txt

The log is the verifier's level-2 log (every instruction it processes, then its state). Each
global function is verified once, alone, between "Validating NAME() func#N..." and "Func#N
('NAME') is safe"; the main program (sample_cpu with everything inlined into it, and the
bpf_loop callback) comes first. The instructions processed per section are its cost; their sum
is the kernel's "processed N insns" (bpf.verified_insns in --stats)."""
import re
import sys

insn = re.compile(r"^\d+: \([0-9a-f]{2}\)")
costs = {}
order = []
current = "sample_cpu (main program, frame loop callback)"
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^Validating (\S+)\(\) func#\d+", line)
    if m:
        current = m.group(1)
        continue
    if insn.match(line):
        if current not in costs:
            costs[current] = 0
            order.append(current)
        costs[current] += 1
    m = re.match(r"^processed (\d+) insns", line)
    if m:
        total = int(m.group(1))
counted = sum(costs.values())
for name in order:
    print(f"{name:50s} {costs[name]:8d}")
print(f"{'sum of the sections':50s} {counted:8d}")
print(f"{'kernel: processed insns':50s} {total:8d}")
