"""check_oracle.py — validates the NumPy oracle (relax_numpy.py) itself.

Two parts, both needing only NumPy:
  1. Coverage: every graph-level function of every module in tests/modules/valid/ and
     tests/e2e/modules/ runs under the oracle at two symbolic-variable assignments
     (every variable 3, then every variable 5, unless the module's
     `attrs.oracle_shapes` lists its own), with seeded random inputs; the oracle checks
     every annotation it meets, so a run that completes is consistent with the
     module's own deduced types. Generated integers are 1 or 2 (valid indices, nonzero
     divisors). Runs whose loop-level work exceeds rn.TIR_BUDGET (LLM-sized paper
     figures such as fig04's 4096 x 11008 matmul) are reported as skipped.
  2. Hand-computed values: a table of small cases per op (and TIR constructs) whose
     results were worked out by hand, compared exactly or to 1e-6.

With --relaxc PATH, each module is first passed through `relaxc check --json`, so every
binding carries the compiler's *deduced* annotation and the oracle's results are
checked against the compiler's shape deduction as well.

Prints one line per failure and a final line `N passed, M failed`; exit 1 on failures.
Usage: /usr/bin/python3 tests/e2e/check_oracle.py [-v] [--relaxc PATH] [MODULE.json ...]
"""

import glob
import json
import math
import os
import subprocess
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relax_numpy as rn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def signature_vars(fn):
    """Lone symbolic variables of a graph function's parameters, in order."""
    out = []

    def walk(si):
        if not si:
            return
        dims = []
        if "tensor" in si and si["tensor"].get("shape"):
            dims = si["tensor"]["shape"]
        elif "shape" in si and si["shape"].get("values"):
            dims = si["shape"]["values"]
        elif "prim" in si and si["prim"].get("value") is not None:
            dims = [si["prim"]["value"]]
        elif "tuple" in si:
            for s in si["tuple"]:
                walk(s)
        for d in dims:
            v = rn.lone_var(d)
            if v and v not in out:
                out.append(v)

    for p in fn["params"]:
        walk(p.get("type"))
        if p.get("type") and "object" in p["type"]:
            walk(rn._find_match_cast(fn["body"], p["name"]))
    return out


def load(path, relaxc):
    """The module, with deduced annotations when relaxc is given."""
    if not relaxc:
        return rn.Module.load(path)
    p = subprocess.run([relaxc, "check", "--json", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise rn.OracleError("relaxc check failed: %s" % p.stderr.decode().strip()[:200])
    return rn.Module(json.loads(p.stdout))


def coverage(paths, verbose, relaxc=None):
    passed = failed = skipped = 0
    rn.TIR_BUDGET = 3e6
    for path in paths:
        rel = os.path.relpath(path, ROOT)
        try:
            m = load(path, relaxc)
        except (OSError, ValueError, rn.OracleError) as e:
            failed += 1
            print("FAIL %s: %s" % (rel, e))
            continue
        shapes = (m.doc.get("attrs") or {}).get("oracle_shapes")
        for fname, fn in m.funcs.items():
            if fn["kind"] != "relax":
                continue
            names = signature_vars(fn)
            assigns = shapes or [{v: 3 for v in names}, {v: 5 for v in names}]
            for env in assigns:
                env = {v: env.get(v, 3) for v in names} if not shapes else dict(env)
                tag = "%s %s %s" % (rel, fname, env)
                try:
                    args = rn.gen_inputs(m, fname, dict(env), seed=1, int_range=(1, 2))
                    outs = m.run(fname, args)
                    passed += 1
                    if verbose:
                        print("ok   %s -> %d outputs" % (tag, len(outs)))
                except rn.TooLarge as e:
                    skipped += 1
                    print("skip %s: %s" % (tag, e))
                except Exception as e:  # noqa: BLE001 — report and go on
                    failed += 1
                    print("FAIL %s: %s: %s" % (tag, type(e).__name__, e))
                    if verbose:
                        traceback.print_exc()
    if skipped:
        print("(%d runs skipped: loop-level work over the interpreter's budget)" % skipped)
    return passed, failed


# ---------------------------------------------------------------- hand-computed values

def op(name, *args, **attrs):
    f = rn.OPS[name]
    return f(rn.OpCtx(name, attrs, {}), *[np.asarray(a) if not isinstance(a, (tuple, rn.Shape)) else a
                                            for a in args])


def f32(x):
    return np.array(x, dtype=np.float32)


def tir_run(fn, arrays, scalars=()):
    f = rn.TirFunc("t", fn)
    f(arrays, list(scalars))
    return arrays


def buf(name, shape, dtype="f32"):
    return {"name": name, "buffer": {"shape": shape, "dtype": dtype}}


def hand_cases():
    """(name, got, expected) triples; expected computed by hand."""
    c = []
    e = math.e
    c.append(("softmax", op("nn.softmax", f32([0, math.log(3)])), [0.25, 0.75]))
    c.append(("softmax stable", op("nn.softmax", f32([1000, 1000])), [0.5, 0.5]))
    c.append(("log_softmax", op("nn.log_softmax", f32([0, 0])), [-math.log(2)] * 2))
    c.append(("sigmoid", op("sigmoid", f32([0, -1000, 1000])), [0.5, 0, 1]))
    c.append(("gelu(1)", op("nn.gelu", f32([1.0])), [0.5 * (1 + math.erf(1 / math.sqrt(2)))]))
    c.append(("gelu(1)=0.8413", op("nn.gelu", f32([1.0])), [0.8413447460685429]))
    c.append(("gelu_tanh(1)", op("nn.gelu_tanh", f32([1.0])), [0.8411919906082768]))
    c.append(("silu(1)", op("nn.silu", f32([1.0])), [1 / (1 + 1 / e)]))
    c.append(("erf(0.5)", op("erf", f32([0.5])), [0.5204998778130465]))
    c.append(("round half even", op("round", f32([0.5, 1.5, -2.5])), [0, 2, -2]))
    c.append(("rsqrt", op("rsqrt", f32([4.0])), [0.5]))
    c.append(("sign", op("sign", f32([-3, 0, 2])), [-1, 0, 1]))
    c.append(("int divide truncates", op("divide", np.array([-7, 7], np.int32), np.array([2, -2], np.int32)), [-3, -3]))
    c.append(("floor_divide int", op("floor_divide", np.array([-7, 7], np.int32), np.array([2, -2], np.int32)), [-4, -4]))
    c.append(("floor_divide f32", op("floor_divide", f32([-7.0]), f32([2.0])), [-4.0]))
    c.append(("broadcast add", op("add", f32([[1], [2]]), f32([10, 20, 30])), [[11, 21, 31], [12, 22, 32]]))
    c.append(("layer_norm", op("nn.layer_norm", f32([[1, 3]]), f32([1, 1]), f32([0, 0]), axes=[-1], epsilon=0.0), [[-1, 1]]))
    c.append(("layer_norm gamma beta", op("nn.layer_norm", f32([[1, 3]]), f32([2, 3]), f32([1, 1]), axes=[1], epsilon=0.0), [[-1, 4]]))
    c.append(("rms_norm", op("nn.rms_norm", f32([[3, 4]]), f32([1, 2]), epsilon=0.0), [[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)]]))
    bn = op("nn.batch_norm", f32([[[[2.0]], [[5.0]]]]), f32([1, 2]), f32([0, 1]), f32([1, 1]), f32([4, 16]), epsilon=0.0)
    c.append(("batch_norm", bn[0].reshape(-1), [0.5, 2 * 4 / 4 + 1]))
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), np.float32)
    c.append(("conv2d 2x2", op("nn.conv2d", x, w).reshape(-1), [10, 14, 18, 26, 30, 34, 42, 46, 50]))
    c.append(("conv2d stride 2", op("nn.conv2d", x, w, strides=[2, 2]).reshape(-1), [10, 18, 42, 50]))
    c.append(("conv2d pad 1 corner", op("nn.conv2d", x, w, padding=[1, 1])[0, 0, 0, :2], [0, 1]))
    c.append(("conv2d dilation 2", op("nn.conv2d", x, w, dilation=[2, 2]).reshape(-1), [20, 24, 36, 40]))
    xg = np.stack([np.ones((3, 3)), 2 * np.ones((3, 3))]).astype(np.float32)[None]
    wg = np.ones((2, 1, 3, 3), np.float32)
    c.append(("conv2d depthwise", op("nn.conv2d", xg, wg, groups=2).reshape(-1), [9, 18]))
    c.append(("max_pool2d", op("nn.max_pool2d", x, pool_size=[2, 2], strides=[2, 2]).reshape(-1), [5, 7, 13, 15]))
    x5 = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    c.append(("max_pool2d ceil", op("nn.max_pool2d", x5, pool_size=[2, 2], strides=[2, 2], ceil_mode=True).reshape(-1),
              [6, 8, 9, 16, 18, 19, 21, 23, 24]))
    c.append(("avg_pool2d excl pad", op("nn.avg_pool2d", x, pool_size=[3, 3], padding=[1, 1])[0, 0, 0, 0],
              (0 + 1 + 4 + 5) / 4))
    c.append(("avg_pool2d incl pad", op("nn.avg_pool2d", x, pool_size=[3, 3], padding=[1, 1], count_include_pad=True)[0, 0, 0, 0],
              (0 + 1 + 4 + 5) / 9))
    c.append(("adaptive_avg_pool2d 1x1", op("nn.adaptive_avg_pool2d", x, output_size=[1, 1]).reshape(-1), [7.5]))
    c.append(("adaptive_avg_pool2d 5->3", op("nn.adaptive_avg_pool2d", x5, output_size=[3, 3])[0, 0, 0], [3.0, 4.5, 6.0]))
    c.append(("strided_slice neg", op("strided_slice", f32([0, 1, 2, 3, 4]), axes=[0], begin=[-1], end=[-6], strides=[-2]), [4, 2, 0]))
    c.append(("strided_slice clamp", op("strided_slice", f32([0, 1, 2]), axes=[0], begin=[1], end=[100]), [1, 2]))
    c.append(("take axis", op("take", f32([[1, 2], [3, 4]]), np.array([1, 1, 0]), axis=1), [[2, 2, 1], [4, 4, 3]]))
    c.append(("take flat", op("take", f32([[1, 2], [3, 4]]), np.array([3])), [4]))
    sp = op("split", f32([0, 1, 2, 3, 4, 5]), indices_or_sections=[2, 5])
    c.append(("split indices", [len(s) for s in sp], [2, 3, 1]))
    sp = op("split", f32([[0, 1, 2, 3]]), indices_or_sections=2, axis=-1)
    c.append(("split sections", sp[1], [[2, 3]]))
    c.append(("unique sorted", op("unique", f32([3, 1, 3, 2])), [1, 2, 3]))
    c.append(("unique unsorted", op("unique", f32([3, 1, 3, 2]), sorted=False), [3, 1, 2]))
    c.append(("nonzero", op("nonzero", np.array([[0, 1], [1, 0]])), [[0, 1], [1, 0]]))
    c.append(("nonzero empty", op("nonzero", np.zeros((2, 3))).shape, [2, 0]))
    c.append(("argmax ties first", op("argmax", f32([1, 3, 3])), 1))
    c.append(("argmin keepdims", op("argmin", f32([[2, 1], [0, 5]]), axis=0, keepdims=True), [[1, 0]]))
    c.append(("variance biased", op("variance", f32([1, 3])), 1.0))
    c.append(("mean axes", op("mean", f32([[1, 2], [3, 4]]), axis=[0]), [2, 3]))
    c.append(("sum keepdims", op("sum", f32([[1, 2], [3, 4]]), axis=[-1], keepdims=True), [[3], [7]]))
    c.append(("prod", op("prod", np.array([2, 3, 4], np.int32)), 24))
    c.append(("max empty axis", op("max", np.zeros((2, 0), np.float32), axis=[1]), [-np.inf, -np.inf]))
    c.append(("tril", op("tril", np.ones((3, 3), np.float32), k=-1), [[0, 0, 0], [1, 0, 0], [1, 1, 0]]))
    c.append(("triu", op("triu", np.ones((2, 3), np.float32), k=1), [[0, 1, 1], [0, 0, 1]]))
    c.append(("arange f32", op("arange", start=2, end=20, step=3, dtype="f32"), [2, 5, 8, 11, 14, 17]))
    c.append(("arange sym", rn.OPS["arange"](rn.OpCtx("arange", {"end": "n + 1", "start": 1}, {"n": 3})), [1, 2, 3]))
    c.append(("full", op("full", rn.Shape([2]), np.array(1.5, np.float32)), [1.5, 1.5]))
    c.append(("repeat", op("repeat", f32([[1, 2]]), repeats=2, axis=-1), [[1, 1, 2, 2]]))
    c.append(("tile", op("tile", f32([1, 2]), repeats=[2, 2]), [[1, 2, 1, 2], [1, 2, 1, 2]]))
    c.append(("expand_dims", op("expand_dims", f32([1, 2]), axis=[0, -1]).shape, [1, 2, 1]))
    c.append(("squeeze", op("squeeze", np.zeros((1, 3, 1)), axis=[-1]).shape, [1, 3]))
    c.append(("astype truncates", op("astype", f32([-1.7, 1.7]), dtype="i32"), [-1, 1]))
    c.append(("clip", op("clip", f32([-2, 0.5, 2]), min=-1.0, max=1.0), [-1, 0.5, 1]))
    c.append(("where", op("where", np.array([True, False]), f32([1, 2]), f32([3, 4])), [1, 4]))
    c.append(("matmul batched", op("matmul", np.ones((2, 1, 3), np.float32), np.ones((3, 2), np.float32)).shape, [2, 1, 2]))
    c.append(("matmul 1-D", op("matmul", f32([1, 2]), f32([[1, 0], [0, 1]])), [1, 2]))
    c.append(("permute default", op("permute_dims", np.zeros((2, 3, 4))).shape, [4, 3, 2]))
    c.append(("shape_of", list(op("shape_of", np.zeros((2, 0)))), [2, 0]))

    # loop level: a reduction with init, floor semantics, casts, select, let, if
    mm = {"kind": "tir", "params": [buf("A", [2, 3]), buf("B", [3, 2]), buf("C", [2, 2])],
          "body": [{"grid": ["i", "j", "k"], "extents": [2, 2, 3], "body": [
              {"block": "mm", "init": [{"store": "C[i, j]", "value": "0"}],
               "body": [{"store": "C[i, j]", "value": "C[i, j] + A[i, k] * B[k, j]"}]}]}]}
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    cc = np.full((2, 2), 99, np.float32)
    tir_run(mm, [a, b, cc])
    c.append(("tir matmul init", cc, [[3, 3], [12, 12]]))
    ar = {"kind": "tir", "params": [buf("K", [4], "i32"), buf("Z", [4, 5], "i32")],
          "body": [{"for": "i", "extent": 4, "body": [
              {"store": "Z[i, 0]", "value": "K[i] // 3"}, {"store": "Z[i, 1]", "value": "K[i] % 3"},
              {"store": "Z[i, 2]", "value": "K[i] / 3"},
              {"store": "Z[i, 3]", "value": "select(K[i] > 0, 1, -1)"},
              {"let": "t", "value": "K[i] * 2", "body": [
                  {"if": "t < 0", "then": [{"store": "Z[i, 4]", "value": "i32(f32(t) * 0.75)"}],
                   "else": [{"store": "Z[i, 4]", "value": "~t"}]}]}]}]}
    k = np.array([-7, 7, 0, -1], np.int32)
    z = np.zeros((4, 5), np.int32)
    tir_run(ar, [k, z])
    c.append(("tir int ops", z, [[-3, 2, -2, -1, -10], [2, 1, 2, 1, -15], [0, 0, 0, -1, -1], [-1, 2, 0, -1, -1]]))
    wrap = {"kind": "tir", "params": [buf("A", [1], "f32"), buf("H", [2], "f16"), buf("U", [1], "u8")],
            "body": [{"store": "H[0]", "value": "f16(A[0])"}, {"store": "H[1]", "value": "A[0] * 1.0"},
                     {"store": "U[0]", "value": "u8(300)"}]}
    h = np.zeros(2, np.float16)
    u = np.zeros(1, np.uint8)
    tir_run(wrap, [f32([1.0009765625 + 2 ** -12]), h, u])
    c.append(("tir f16 rounding", h.astype(np.float64), [1.0009765625, 1.0009765625]))
    c.append(("tir u8 wrap", u, [44]))
    red = {"kind": "tir", "params": [buf("A", ["n", 4]), buf("S", ["n"])],
           "body": [{"for": "i", "extent": "n", "body": [
               {"for": "k", "min": 1, "extent": 3, "body": [
                   {"block": "s", "init": [{"store": "S[i]", "value": "A[i, 0]"}],
                    "body": [{"store": "S[i]", "value": "max(S[i], A[i, k])"}]}]}]}]}
    s = np.zeros(2, np.float32)
    tir_run(red, [f32([[5, 1, 2, 3], [0, 1, 7, 2]]), s])
    c.append(("tir init at loop min", s, [5, 7]))
    mmk = {"kind": "tir", "params": [buf("A", [2, "k"]), buf("B", ["k", 2]), buf("C", [2, 2])],
           "body": [{"grid": ["i", "j", "r"], "extents": [2, 2, "k"], "body": [
               {"block": "mm", "init": [{"store": "C[i, j]", "value": "0"}],
                "body": [{"store": "C[i, j]", "value": "C[i, j] + A[i, r] * B[r, j]"}]}]}]}
    cc = np.full((2, 2), 99, np.float32)
    tir_run(mmk, [np.zeros((2, 0), np.float32), np.zeros((0, 2), np.float32), cc])
    c.append(("tir empty reduction inits", cc, [[0, 0], [0, 0]]))
    ex = {"kind": "tir", "params": [buf("A", [2, "k"]), buf("S", [2])],
          "body": [{"for": "i", "extent": 2, "body": [{"for": "r", "extent": "k", "body": [
              {"block": "s", "iters": [{"var": "vi", "kind": "spatial", "dom": 2, "bind": "i"},
                                       {"var": "vr", "kind": "reduce", "dom": "k", "bind": "r"}],
               "init": [{"store": "S[vi]", "value": "f32(vi) + 0.5"}],
               "body": [{"store": "S[vi]", "value": "S[vi] + A[vi, vr]"}]}]}]}]}
    s = np.full(2, 99, np.float32)
    tir_run(ex, [np.zeros((2, 0), np.float32), s])
    c.append(("tir empty reduction, explicit iters", s, [0.5, 1.5]))
    # f16: every operation rounds. 1 + 2^-10 squared is 1 + 2^-9 in f16; 3 + that is a
    # tie broken to even (4), while the unrounded 3 + 1 + 2^-9 + 2^-20 would give 4 + 2^-8.
    fma = {"kind": "tir", "params": [buf("X", [1], "f16"), buf("Y", [1], "f16")],
           "body": [{"store": "Y[0]", "value": "Y[0] + X[0] * X[0]"}]}
    y = np.array([3.0], np.float16)
    tir_run(fma, [np.array([1 + 2 ** -10], np.float16), y])
    c.append(("tir f16 rounds each operation", y.astype(np.float64), [4.0]))
    return c


def check_hand(verbose):
    passed = failed = 0
    for name, got, want in hand_cases():
        g = np.asarray(got, dtype=np.float64)
        w = np.asarray(want, dtype=np.float64)
        ok = g.shape == w.shape and np.allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)
        if ok:
            passed += 1
            if verbose:
                print("ok   hand %s" % name)
        else:
            failed += 1
            print("FAIL hand %s: got %s, expected %s" % (name, g.tolist(), w.tolist()))
    return passed, failed


def main(argv):
    verbose = "-v" in argv
    argv = [a for a in argv if a != "-v"]
    relaxc = None
    if "--relaxc" in argv:
        i = argv.index("--relaxc")
        if i + 1 >= len(argv):
            print("error: --relaxc needs a path", file=sys.stderr)
            return 2
        relaxc = argv[i + 1]
        del argv[i:i + 2]
    paths = argv
    if not paths:
        paths = sorted(glob.glob(os.path.join(ROOT, "tests/modules/valid/*.json")) +
                       glob.glob(os.path.join(HERE, "modules/*.json")))
    p1, f1 = coverage(paths, verbose, relaxc)
    p2, f2 = check_hand(verbose)
    print("%d passed, %d failed" % (p1 + p2, f1 + f2))
    return 1 if f1 + f2 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
