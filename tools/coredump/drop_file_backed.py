#!/usr/bin/env python3
"""Zeroes the read-only PT_LOAD segments of a core whose bytes equal the executable's own bytes
at the same addresses (a qemu guest core dumps the binary's rodata, 6 MB for lefthook), so
that `coredump new` (SlimCore: all-zero, non-writable segments are dropped) stores them as
nothing; the replay reads them from the executable (ProcessImage: core first, then backing
files). Segments that differ in any byte are kept as they are.

  drop_file_backed.py CORE BINARY [BIAS]   (in place; BIAS: load bias, 0 for non-PIE)
"""
import struct
import sys


def phdrs(d):
    phoff, = struct.unpack_from("<Q", d, 32)
    phentsize, phnum = struct.unpack_from("<HH", d, 54)
    for i in range(phnum):
        yield phoff + i * phentsize, struct.unpack_from("<IIQQQQQQ", d, phoff + i * phentsize)


def main():
    core_path, bin_path = sys.argv[1], sys.argv[2]
    bias = int(sys.argv[3], 0) if len(sys.argv) > 3 else 0
    core = bytearray(open(core_path, "rb").read())
    b = open(bin_path, "rb").read()
    segs = [(v + bias, off, fsz) for _, (t, _f, off, v, _p, fsz, _m, _a) in phdrs(b) if t == 1]
    dropped = 0
    for _, (t, flags, off, vaddr, _p, fsz, _m, _a) in phdrs(core):
        if t != 1 or fsz == 0 or flags & 2:  # PT_LOAD with contents, not writable
            continue
        for sv, soff, sfsz in segs:
            if sv <= vaddr < sv + sfsz:
                n = min(fsz, sv + sfsz - vaddr)  # the page-rounded tail past the file's bytes: zeros
                if core[off:off + n] == b[soff + vaddr - sv:soff + vaddr - sv + n] and \
                        not any(core[off + n:off + fsz]):
                    core[off:off + fsz] = bytes(fsz)
                    dropped += fsz
                    print("drop_file_backed: %#x+%#x equals %s" % (vaddr, fsz, bin_path), file=sys.stderr)
                break
    open(core_path, "wb").write(core)
    print("drop_file_backed: zeroed %d bytes" % dropped, file=sys.stderr)


if __name__ == "__main__":
    main()
