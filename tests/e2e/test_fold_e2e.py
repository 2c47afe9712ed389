"""test_fold_e2e.py — constant folding keeps a module's results, bit for bit.

    /usr/bin/python3 tests/e2e/test_fold_e2e.py BUILD_DIR

A module whose function computes, from constants, softmax, layer_norm, matmul, f16
arithmetic, integer floor division, reductions, casts through bf16, argmax, gelu_tanh
and f64 tanh (some combined with the parameter x) is built by `relaxc build` twice
per setting: as is (canonicalize folds every constant subexpression, running its
legalized loop function in the interpreter of compiler/interp/tir_eval.c) and with
`--disable-pass canonicalize` (the kernels compute the same values at run time).
Settings: opt level 1, and opt level 2 with `--lib none` (library GEMMs sum in another
order: a folded matmul is the generated kernel's, not OpenBLAS's). Both artifacts run
under relax-run on the same seeded input; every output must be byte-identical. The
script also checks that folding happened: after canonicalize no op call on constants
is left (`relaxc print --after canonicalize`), and the folded build calls no kernel
for them. Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import base64
import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run, tools


def const(a, dt):
    a = np.ascontiguousarray(a)
    return {"const": {"dtype": dt, "shape": list(a.shape),
                      "data": base64.b64encode(a.tobytes()).decode()}}


def module():
    rng = np.random.default_rng(2024)
    c = rng.normal(size=(3, 4)).astype(np.float32)
    c16 = rng.uniform(-2, 2, size=(3, 4)).astype(np.float16)
    ci = rng.integers(-50, 50, size=(3, 4)).astype(np.int32)
    di = np.array([3, -4, 7, -2], np.int32)
    g = rng.uniform(0.5, 1.5, size=(4,)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    op = lambda name, *args, **attrs: {"op": name, "args": list(args), **({"attrs": attrs} if attrs else {})}
    bind = lambda v, val: {"var": v, "value": val}
    K = const(c, "f32")
    bindings = [
        bind("a1", op("nn.softmax", K)),
        bind("o1", op("add", "x", "a1")),
        bind("a2", op("nn.layer_norm", K, const(g, "f32"), const(b, "f32"), axes=[-1])),
        bind("o2", op("add", "x", "a2")),
        bind("t", op("permute_dims", K)),
        bind("o3", op("matmul", K, "t")),
        bind("e16", op("exp", const(c16, "f16"))),
        bind("o4", op("multiply", "e16", const(c16, "f16"))),
        bind("o5", op("floor_divide", const(ci, "i32"), const(di, "i32"))),
        bind("s", op("sum", K, axis=0)),
        bind("sb", op("astype", "s", dtype="bf16")),
        bind("o6", op("astype", "sb", dtype="f32")),
        bind("o7", op("argmax", K, axis=1)),
        bind("a8", op("nn.gelu_tanh", K)),
        bind("o8", op("multiply", "x", "a8")),
        bind("c64", op("astype", K, dtype="f64")),
        bind("o9", op("tanh", "c64")),
        bind("r", {"tuple": ["o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9"]}),
    ]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "x", "type": {"tensor": {"shape": [3, 4], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "r"}}}}


FOLDED_OPS = ["nn.softmax", "nn.layer_norm", "permute_dims", "matmul", "exp", "floor_divide",
              "sum", "astype", "argmax", "nn.gelu_tanh", "tanh"]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    relaxc, relax_run = tools(sys.argv[1])
    checks = Checks()
    check = checks.check

    with tempfile.TemporaryDirectory(prefix="rx_fold_e2e.") as tmp:
        src = os.path.join(tmp, "m.json")
        with open(src, "w") as f:
            json.dump(module(), f)
        text = run([relaxc, "print", src, "--after", "canonicalize"])
        main_fn = text.split("@T.prim_func")[0]
        left = [o for o in FOLDED_OPS if ("R.%s(" % o) in main_fn]
        check(not left, "after canonicalize no op on constants is left %s" % (left or ""))
        check("R.add(x" in main_fn and "R.multiply(x" in main_fn,
              "after canonicalize the ops reading x stay")
        kernels = run([relaxc, "print", src, "--after", "legalize"]).count("@T.prim_func")
        check(kernels == 2, "the folded module needs 2 kernels (add, multiply), found %d" % kernels)
        for label, extra in (("O1", ["--opt-level", "1"]),
                             ("O2 --lib none", ["--opt-level", "2", "--lib", "none"])):
            outs = {}
            for kind, more in (("folded", []), ("unfolded", ["--disable-pass", "canonicalize"])):
                art = os.path.join(tmp, "%s_%s.rxa" % (kind, label.split()[0]))
                run([relaxc, "build", src, "-o", art] + extra + more)
                od = os.path.join(tmp, "%s_%s_out" % (kind, label.split()[0]))
                os.mkdir(od)
                run([relax_run, art, "--seed", "7", "--out-dir", od])
                outs[kind] = [np.load(os.path.join(od, "out%d.npy" % i)) for i in range(9)]
            for i, (a, b) in enumerate(zip(outs["folded"], outs["unfolded"])):
                same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
                check(same, "%s out%d (%s %s): folded == unfolded, byte for byte" %
                      (label, i, a.dtype, a.shape))
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
