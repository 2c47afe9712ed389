"""test_isa_exact_e2e.py — opt level 2's exact ISA versions keep O0's bits, end to end.

    /usr/bin/python3 tests/e2e/test_isa_exact_e2e.py BUILD_DIR

A module computing softmax, silu, exp and sigmoid of its f32 parameter x (37 x 1037:
rows that leave vector remainders; arguments over exp's whole range with infinities,
NaN and the overflow and underflow edges) and softmax and exp of a constant K is built
by `relaxc build` three times: at opt level 0, at the default level 2 (canonicalize
folds the ops on K in the loop-function interpreter, compiler/interp/tir_eval.c), and at
level 2 with `--disable-pass canonicalize` (kernels compute them at run time). The
level-2 artifacts run under relax-run twice, with RX_KERNEL_ISA=base and with the best
ISA of this CPU (AVX-512 or AVX2 when the kernels were built by gcc 12+); every output
must equal the O0 run's bit for bit (the two softmaxes, whose row sums level 2
reassociates over vector lanes: O0's values within 1e-6 relative, and the two ISA runs'
bits equal), NaNs only as NaN (C leaves a NaN result's sign and
payload open: x86 takes them from an operand whose order the compiler may swap, and
silu(NaN) at O2's vectorized baseline already had the other sign than at O0). The script also checks that levels 0 to 2 emit exact
versions for the exp kernels (`relaxc print --after codegen`) and no contracting ones.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import base64
import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run, tools

R, C = 37, 1037
NOUT = 6
# The softmaxes: at O2 their row sums run over vector lanes (compiler/pass/schedule_rows.c),
# a reassociation, so they match O0 within 1e-6 relative, and each other bit for bit.
REASSOCIATED = (0, 4)


def const(a, dt):
    a = np.ascontiguousarray(a)
    return {"const": {"dtype": dt, "shape": list(a.shape),
                      "data": base64.b64encode(a.tobytes()).decode()}}


def inputs():
    rng = np.random.default_rng(11)
    x = rng.uniform(-120, 120, size=(R, C)).astype(np.float32)
    x[1, :10] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.7228, -103.98, 1e-30, 89.0, -104.5]
    x[2] = rng.normal(size=C).astype(np.float32)  # a softmax row without saturation
    k = rng.uniform(-30, 30, size=(5, C)).astype(np.float32)
    return x, k


def module(k):
    op = lambda name, *args: {"op": name, "args": list(args)}
    bind = lambda v, val: {"var": v, "value": val}
    K = const(k, "f32")
    bindings = [
        bind("o1", op("nn.softmax", "x")),
        bind("o2", op("nn.silu", "x")),
        bind("o3", op("exp", "x")),
        bind("o4", op("sigmoid", "x")),
        bind("o5", op("nn.softmax", K)),
        bind("o6", op("exp", K)),
        bind("r", {"tuple": ["o%d" % i for i in range(1, NOUT + 1)]}),
    ]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "x", "type": {"tensor": {"shape": [R, C], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "r"}}}}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    relaxc, relax_run = tools(sys.argv[1])
    checks = Checks()
    check = checks.check

    x, k = inputs()
    with tempfile.TemporaryDirectory(prefix="rx_isa_exact.") as tmp:
        src, xin = os.path.join(tmp, "m.json"), os.path.join(tmp, "x.npy")
        with open(src, "w") as f:
            json.dump(module(k), f)
        np.save(xin, x)
        text = run([relaxc, "print", src, "--after", "codegen", "--opt-level", "2",
                    "--disable-pass", "canonicalize"])
        check(text.count("static RX_TARGET_V4_EXACT int32_t") >= 3,
              "O2 emits exact AVX-512 versions of the exp kernels")
        check("static RX_TARGET_V4 " not in text and "static RX_TARGET_V3 " not in text,
              "O2 emits no contracting versions")
        # O0 and O1 too: the math's explicit fmaf is a libm call in the baseline
        for lvl in ("0", "1"):
            t = run([relaxc, "print", src, "--after", "codegen", "--opt-level", lvl])
            check("static RX_TARGET_V3_EXACT int32_t" in t and "static RX_TARGET_V3 " not in t,
                  "O%s emits exact (not contracting) versions of the exp kernels" % lvl)

        def outputs(label, build_args, isa):
            art = os.path.join(tmp, label + ".rxa")
            if not os.path.exists(art):
                run([relaxc, "build", src, "-o", art] + build_args)
            od = os.path.join(tmp, "%s_%s" % (label, isa or "best"))
            os.mkdir(od)
            env = dict(os.environ)
            env.pop("RX_KERNEL_ISA", None)
            if isa:
                env["RX_KERNEL_ISA"] = isa
            run([relax_run, art, "--in", "x=" + xin, "--out-dir", od], env)
            return [np.load(os.path.join(od, "out%d.npy" % i)) for i in range(NOUT)]

        ref = outputs("O0", ["--opt-level", "0"], None)
        check(np.allclose(ref[2][2], np.exp(x[2]), rtol=1e-6) and
              np.allclose(ref[0][2], np.exp(x[2]) / np.exp(x[2]).sum(), rtol=1e-5),
              "O0 computes exp and softmax (NumPy, rtol 1e-6 / 1e-5)")
        def bits_equal(a, b):
            return a.dtype == b.dtype and a.shape == b.shape and bool(np.all(
                (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))

        for label, args in (("O2", ["--opt-level", "2"]),
                            ("O2_nofold", ["--opt-level", "2", "--disable-pass", "canonicalize"])):
            runs = {}
            for isa in ("base", None):
                got = runs[isa] = outputs(label, args, isa)
                for i, (a, b) in enumerate(zip(ref, got)):
                    if i in REASSOCIATED:
                        # O2's row sum over vector lanes (schedule_rows.c): O0's values
                        # within the documented bound, not its bits
                        same = a.shape == b.shape and bool(np.all(
                            (np.abs(a - b) <= 1e-6 * np.maximum(np.abs(a), 1e-30) + 1e-12) |
                            (np.isnan(a) & np.isnan(b))))
                        what = "O0's values within 1e-6"
                    else:
                        same, what = bits_equal(a, b), "O0's bits"
                    check(same, "%s RX_KERNEL_ISA=%s out%d: %s" % (label, isa or "(best)", i, what))
            for i in REASSOCIATED:
                check(bits_equal(runs["base"][i], runs[None][i]),
                      "%s out%d: the ISA versions' bits equal" % (label, i))
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
