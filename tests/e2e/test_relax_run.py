"""test_relax_run.py — relax-run's .npy handling against NumPy itself (no compiler needed).

The C test (tests/unit/runtime/test_relax_run.c) checks relax-run against hand-written
bytes; this one checks it against what NumPy really writes and reads. It writes a tiny
artifact directly in Python, following docs/artifact.md (header, section table,
STRINGS, FUNCS, CODE; CRC-32 over bytes [40, end)), with two functions whose code is
just `RET r0`:
    ident(x: Tensor(unknown dtype, unknown ndim)) -> x
    gen(x: Tensor((n, 2), f32)) -> x
then runs relax-run (argv, no shell) on .npy files saved by NumPy — every supported
dtype, 0-d / zero-size / 3-D shapes, format versions 1.0, 2.0 and 3.0 — and checks
that np.load of out0.npy gives back the same array; that generated inputs are seeded,
in [-1, 1) and of the --shape size; and that Fortran order, big-endian and
unsupported dtypes fail with exit 1 and one `error:` line naming the input. (Shape
mismatches are the VM's MATCH instructions' job; the C test covers that message.)

Prints one line per failure and `N passed, M failed`; exit 1 on failures.
Usage: /usr/bin/python3 tests/e2e/test_relax_run.py BUILD_DIR
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from numpy.lib import format as npformat

F32 = 2 | 32 << 8 | 1 << 16
OP_RET = 29


def artifact():
    strings = ["ident", "x", "gen", "n"]
    sid = {s: i for i, s in enumerate(strings)}
    st = struct.pack("<I", len(strings)) + b"".join(
        struct.pack("<I", len(s)) + s.encode() + b"\0" for s in strings)

    def func(name, syms, param, code_off):
        b = struct.pack("<II", sid[name], len(syms)) + b"".join(struct.pack("<I", sid[s]) for s in syms)
        b += struct.pack("<I", 1) + param
        b += struct.pack("<II", 0xFFFFFFFF, 0)  # result: ANY
        b += struct.pack("<IIII", 1, 0, code_off, 2)  # nregs, heap, code offset, words
        return b

    any_tensor = struct.pack("<IIIi", sid["x"], 1, 0, -1)
    n_by_2 = struct.pack("<IIIi", sid["x"], 1, F32, 2)
    n_by_2 += struct.pack("<I", 1) + struct.pack("<II", 1, 0)   # [VAR 0]
    n_by_2 += struct.pack("<I", 1) + struct.pack("<Iq", 0, 2)   # [CONST 2]
    funcs = struct.pack("<I", 2) + func("ident", [], any_tensor, 0) + func("gen", ["n"], n_by_2, 2)
    funcs += struct.pack("<I", 0)  # no kernels
    code = struct.pack("<4q", OP_RET, 0, OP_RET, 0)
    sections = [(2, st), (3, funcs), (4, code)]
    off = 40 + 24 * len(sections)
    table, body = b"", b""
    for kind, data in sections:
        start = (off + 63) // 64 * 64
        body += b"\0" * (start - off) + data
        table += struct.pack("<IIQQ", kind, 0, start, len(data))
        off = start + len(data)
    rest = table + body
    total = 40 + len(rest)
    header = b"\x89RXA\r\n\x1a\n" + struct.pack("<IIIIQII", 1, 0, len(sections), 0, total,
                                                  zlib.crc32(rest) & 0xFFFFFFFF, 0)
    return header + rest


class T:
    def __init__(self, build):
        self.exe = os.path.join(build, "bin", "relax-run")
        self.tmp = tempfile.mkdtemp(prefix="rxrun-py-")
        self.art = os.path.join(self.tmp, "t.rxa")
        with open(self.art, "wb") as f:
            f.write(artifact())
        self.passed = self.failed = 0

    def run(self, *args):
        p = subprocess.run([self.exe, self.art] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s" % what)

    def save(self, a, version=None, name="in.npy"):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            npformat.write_array(f, a, version=version, allow_pickle=False)
        return path

    def round_trip(self, a, version=None):
        path = self.save(a, version)
        out = os.path.join(self.tmp, "out")
        rc, so, se = self.run("--fn", "ident", "--in", "x=" + path, "--out-dir", out)
        what = "round trip %s %s v%s" % (a.dtype, a.shape, version)
        if rc != 0:
            self.check(False, "%s: exit %d: %s" % (what, rc, se.strip()))
            return
        b = np.load(os.path.join(out, "out0.npy"), allow_pickle=False)
        self.check(b.dtype == a.dtype and b.shape == a.shape and a.tobytes() == b.tobytes(), what)

    def error(self, args, want, what):
        rc, so, se = self.run(*args)
        ok = rc == 1 and se.startswith("error: ") and se.count("\n") == 1 and want in se
        self.check(ok, "%s: exit %d, stderr %r (wanted %r)" % (what, rc, se, want))


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    t = T(argv[0])
    try:
        rng = np.random.default_rng(0)
        dtypes = ["<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]
        for dt in dtypes:
            for shape in [(), (0,), (3,), (2, 3, 4), (1, 0, 2)]:
                a = (rng.uniform(-100, 100, size=shape)).astype(dt)
                t.round_trip(a)
        a = rng.uniform(-1, 1, size=(2, 5)).astype("<f4")
        for v in [(1, 0), (2, 0), (3, 0)]:
            t.round_trip(a, v)
        t.round_trip(np.array([np.nan, np.inf, -0.0], dtype="<f4"))

        # generated inputs: seeded, in [-1, 1), shaped by --shape
        outs = []
        for seed in ["0", "0", "5"]:
            d = os.path.join(t.tmp, "gen" + seed + str(len(outs)))
            rc, so, se = t.run("--fn", "gen", "--shape", "n=7", "--seed", seed, "--out-dir", d)
            t.check(rc == 0, "gen seed %s: %s" % (seed, se.strip()))
            outs.append(np.load(os.path.join(d, "out0.npy")) if rc == 0 else None)
        if all(o is not None for o in outs):
            t.check(outs[0].shape == (7, 2) and outs[0].dtype == np.float32, "gen shape/dtype")
            t.check(np.array_equal(outs[0], outs[1]), "gen is deterministic")
            t.check(not np.array_equal(outs[0], outs[2]), "gen depends on --seed")
            t.check(bool(np.all((outs[0] >= -1) & (outs[0] < 1))), "gen in [-1, 1)")

        # errors
        f = t.save(np.asfortranarray(np.ones((2, 3), np.float32)), name="fort.npy")
        t.error(["--fn", "ident", "--in", "x=" + f], "input x: ", "fortran order names the input")
        t.error(["--fn", "ident", "--in", "x=" + f], "fortran_order True", "fortran order")
        f = t.save(np.ones(3, ">f4"), name="be.npy")
        t.error(["--fn", "ident", "--in", "x=" + f], "big-endian", "big-endian")
        f = t.save(np.ones(3, np.complex64), name="c.npy")
        t.error(["--fn", "ident", "--in", "x=" + f], "unsupported dtype", "complex")
        f = t.save(np.ones((4, 2), np.float64), name="f64.npy")
        t.error(["--fn", "gen", "--in", "x=" + f], "has dtype f64, the parameter is f32", "dtype mismatch")
        t.error(["--fn", "gen"], "needs symbolic variable n", "missing --shape")
        with open(os.path.join(t.tmp, "trunc.npy"), "wb") as fh:
            fh.write(open(t.save(np.ones(100, np.float32), name="full.npy"), "rb").read()[:200])
        t.error(["--fn", "ident", "--in", "x=" + os.path.join(t.tmp, "trunc.npy")], "truncated", "truncated")
    finally:
        shutil.rmtree(t.tmp, ignore_errors=True)
    print("%d passed, %d failed" % (t.passed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
