#!/usr/bin/env python3
"""Turns the Go runtime's own traceback (GOTRACEBACK=crash output on stderr) into the shape of
Delve's `goroutines -t` listing, so that `switchback coredump new --dlv` can compare a case with
it. For binaries without DWARF or a symbol table (Delve and gdb cannot name their frames), the
runtime's traceback of the same process is the oracle.

  traceback_to_dlv.py STDERR_TXT > OUT.txt
"""
import re
import sys


def main():
    out = ["# Go runtime traceback (GOTRACEBACK=crash) of the captured process, as goroutine listings"]
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^goroutine (\d+) .*\[(.*)\]:$", lines[i])
        i += 1
        if not m:
            continue
        out.append("  Goroutine %s - traceback [%s]" % (m.group(1), m.group(2)))
        k = 0
        while i + 1 < len(lines) and lines[i] and not lines[i].startswith("created by "):
            fn, loc = lines[i], lines[i + 1]
            if not loc.startswith("\t"):
                break
            name = fn[:fn.rfind("(")] if fn.endswith(")") else fn
            out.append("\t%d  0x0000000000000000 in %s" % (k, name))
            out.append("\t    at %s" % loc.strip())
            k += 1
            i += 2
    print("\n".join(out))


if __name__ == "__main__":
    main()
