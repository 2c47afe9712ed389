#!/usr/bin/python3
"""Seeds for fuzz_rxa: real artifacts of a few valid modules, built with relaxc.

usage: make_rxa_seeds.py RELAXC MODULES_DIR OUT_DIR

Builds each module listed below at O0 and O2 (different bytecode, constants and
metadata) into OUT_DIR; an artifact already there is kept. The fuzz target is about
the non-kernel sections, so each seed's KERNELS_CPU section (the ELF object, most of the
bytes) is cut to 16 bytes and the file laid out again (offsets, total size, CRC): small
inputs, so the fuzzer's time goes to the tables and the code. Exit 1 if none was built.
"""
import os
import struct
import subprocess
import sys
import zlib

KERNELS_CPU = 6


def shrink(data):
    """The artifact with its KERNELS_CPU section cut to 16 bytes (format: rxa.h)."""
    magic, version, flags, ns, r0, total, crc, r1 = struct.unpack_from("<8sIIIIQII", data, 0)
    table = [struct.unpack_from("<IIQQ", data, 40 + 24 * i) for i in range(ns)]
    body, entries = b"", []
    base = 40 + 24 * ns
    off = (base + 63) // 64 * 64
    for kind, fl, o, size in table:
        sec = data[o:o + size] if kind != KERNELS_CPU else b"\x7fELF" + bytes(12)
        entries.append(struct.pack("<IIQQ", kind, fl, off, len(sec)))
        pad = off - base - len(body)
        body += bytes(pad) + sec
        off = (base + len(body) + 63) // 64 * 64
    rest = b"".join(entries) + body
    total = 40 + len(rest)
    head = struct.pack("<8sIIIIQII", magic, version, flags, ns, r0, total, zlib.crc32(rest), r1)
    return head + rest

MODULES = ["fig03_symbolic_shape.json", "fig08_sym_params.json", "fig09_fused.json"]


def main():
    relaxc, mods, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    built = 0
    for m in MODULES:
        for opt in ("0", "2"):
            dst = os.path.join(out, "%s.O%s.rxa" % (m[:-5], opt))
            if not os.path.exists(dst):
                r = subprocess.run([relaxc, "build", os.path.join(mods, m), "-o", dst,
                                    "--opt-level", opt], capture_output=True, text=True,
                                   timeout=120)
                if r.returncode:
                    print("relaxc build %s O%s: %s" % (m, opt, r.stderr.strip()))
                    continue
                with open(dst, "rb") as f:
                    small = shrink(f.read())
                with open(dst, "wb") as f:
                    f.write(small)
            built += 1
    print("%d seeds in %s" % (built, out))
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
