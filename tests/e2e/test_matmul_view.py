"""test_matmul_view.py — matmuls of strided views lowered to blas.matmul_view, end to end.

    /usr/bin/python3 tests/e2e/test_matmul_view.py BUILD_DIR

One module, symbolic b and s, one function per way of writing attention's products
(compiler/pass/library_view.c's essay has the model):
  pt          q @ permute(k) then * scale: reshape (b, s, h, d) + permute of the
              projections, k^T one more permute; the scale folded into alpha
  kt          k permuted straight to (b, h, d, s): scores = q @ k
  qscale      (q * scale) @ permute(k): the scale before the product
  gqa_repeat  grouped-query: k and v repeated along the heads (relax repeat)
  gqa_expand  grouped-query as PyTorch's repeat_kv: expand_dims + broadcast_to + reshape
  linear_t    x (b, s, k) @ permute_dims(w (n, k)): a transposed weight (2-D B)
  bcast4      probs (b, h, s, k) @ w (k, n): 4-D by 2-D, the batch broadcast
  mha_b1      x (1, 64, k) permuted to (64, 1, k) @ w (k, n): nn.MultiheadAttention's
              in-projection at batch 1; simplify makes the permute a reshape, the cost
              rule counts 64 rows (a literal batch times M = 1) and the runtime runs
              the 64 one-row items as one sgemm of 64 rows
  decode      q of one row (M = 1, static): the cost rule keeps it generated
and the epilogues (bias and activation in the call, library_epi.c), x (2, 64, 8):
  addmm_gelut GPT-2's Conv1D: reshape to 2-D, matmul + bias, reshape back, the tanh GELU
              written out (0.5 h (1 + tanh(0.7978846 (h + 0.044715 h h h))))
  lin_gelut   x @ w + bias (plain 3-D operands: blas.matmul has no tanh-GELU entry)
              then nn.gelu_tanh
  relu_t      x @ permute(w) + bias, nn.relu
  gelu_t      x @ permute(w), bias on the left, F.gelu as exported (x * 0.70710677,
              erf, + 1, * x, * 0.5)
  silu_t      x @ permute(w) + bias, x * sigmoid(x)
  gelu_reuse  addmm_gelut's chain plus the sum once more: the activation stays ops, the
              bias is taken
  gelut_off   addmm_gelut with 0.0447 for 0.044715 (7e-6 from the GELU near |x| = 2,
              past library_epi.c's 1e-6): not recognized, the bias alone taken
  rows4_t     x (4, 256) @ permute(w (128, 256)) + bias, SiLU: the few-row product
              (library_matvec.c) under RX_GEMM=auto
  swap_t      permute(x, (1, 0, 2)) @ w + bias, nn.gelu_tanh: 64 items of 2 rows, run as
              2 products of 64 rows (library.c's view_swap_rows)
each causal-masked (full + triu) and softmaxed where attention. Built at O2 with
--dump-ir: each function's library_lower dump must call blas.matmul_view the expected
number of times (2 for attention, 1 for linear_t and bcast4, 0 for decode, 1 for the
epilogues, with no add, tanh, erf, sigmoid or relu op left but gelu_reuse's), and
relax-run's outputs at b = 2, s = 5 must equal NumPy's float64 math (rtol 1e-4,
atol 1e-5), the epilogue functions also with RX_GEMM=blas (OpenBLAS's sgemm, then a pass
over each item) and built with --lib all (where the exact GELU and SiLU join the
epilogue; at auto they stay ops, the bias alone taken). Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import math
import os
import re
import sys
import tempfile

import numpy as np

from e2e_check import run, run_status, start

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import gen_llama  # noqa: E402  (the relax-json helpers the model generators share)

A, KV, D = 4, 2, 8  # query heads, k/v heads of the gqa forms, head size
SCALE = 1.0 / math.sqrt(D)
MASK = -1e9


op = gen_llama.Builder.op


def T(shape):
    return gen_llama.tensor(shape, "f32")


def attention(form):
    """(params, bindings, result) of an attention core over given projections."""
    kv = KV if form.startswith("gqa") else A
    params = [{"name": "qp", "type": T(("b", "s", A * D))},
              {"name": "kp", "type": T(("b", "s", kv * D))},
              {"name": "vp", "type": T(("b", "s", kv * D))}]
    bs = []

    def b(name, value):
        bs.append({"var": name, "value": value})
        return name

    heads = {}
    for n in "qkv":
        nh = A if n == "q" else kv
        r = b(n + "_r", op("reshape", n + "p", {"shape": ["b", "s", nh, D]}))
        axes = [0, 2, 3, 1] if (n == "k" and form == "kt") else [0, 2, 1, 3]
        heads[n] = b(n, op("permute_dims", r, axes=axes))
    q, k, v = heads["q"], heads["k"], heads["v"]
    scale = {"const": SCALE, "dtype": "f32"}
    if form == "qscale":
        q = b("q_s", op("multiply", q, scale))
    if form == "gqa_repeat":
        k = b("k_rep", op("repeat", k, repeats=A // KV, axis=1))
        v = b("v_rep", op("repeat", v, repeats=A // KV, axis=1))
    if form == "gqa_expand":
        for n in ("k", "v"):
            e = b(n + "_e", op("expand_dims", heads[n], axis=[2]))
            x = b(n + "_x", op("broadcast_to", e, {"shape": ["b", KV, A // KV, "s", D]}))
            heads[n] = b(n + "_rep", op("reshape", x, {"shape": ["b", A, "s", D]}))
        k, v = heads["k"], heads["v"]
    kt = k if form == "kt" else b("k_t", op("permute_dims", k, axes=[0, 1, 3, 2]))
    sc = b("qk", op("matmul", q, kt))
    if form != "qscale":
        sc = b("scores", op("multiply", sc, scale))
    full = b("mask_full", op("full", {"shape": ["s", "s"]}, {"const": MASK, "dtype": "f32"}))
    mask = b("mask", op("triu", full, k=1))
    sc = b("masked", op("add", sc, mask))
    probs = b("probs", op("nn.softmax", sc, axis=-1))
    ctx = b("ctx", op("matmul", probs, v))
    ctx = b("ctx_t", op("permute_dims", ctx, axes=[0, 2, 1, 3]))
    out = b("out", op("reshape", ctx, {"shape": ["b", "s", A * D]}))
    return params, bs, out


def functions():
    fns = {}
    for form in ("pt", "kt", "qscale", "gqa_repeat", "gqa_expand"):
        fns[form] = attention(form)
    fns["linear_t"] = ([{"name": "x", "type": T(("b", "s", 24))}, {"name": "w", "type": T((20, 24))}],
                       [{"var": "wt", "value": op("permute_dims", "w")},
                        {"var": "y", "value": op("matmul", "x", "wt")}], "y")
    fns["bcast4"] = ([{"name": "p", "type": T(("b", A, "s", 12))}, {"name": "w", "type": T((12, 10))}],
                     [{"var": "y", "value": op("matmul", "p", "w")}], "y")
    fns["mha_b1"] = ([{"name": "x", "type": T((1, 64, 24))}, {"name": "w", "type": T((24, 32))}],
                     [{"var": "xt", "value": op("permute_dims", "x", axes=[1, 0, 2])},
                      {"var": "y", "value": op("matmul", "xt", "w")}], "y")
    fns["decode"] = ([{"name": "q", "type": T(("b", 1, A * D))}, {"name": "kc", "type": T(("b", A, "s", D))}],
                     [{"var": "q_r", "value": op("reshape", "q", {"shape": ["b", 1, A, D]})},
                      {"var": "q_h", "value": op("permute_dims", "q_r", axes=[0, 2, 1, 3])},
                      {"var": "k_t", "value": op("permute_dims", "kc", axes=[0, 1, 3, 2])},
                      {"var": "y", "value": op("matmul", "q_h", "k_t")}], "y")
    fns.update(epilogues())
    return {name: {"kind": "relax", "params": p,
                   "body": {"blocks": [{"dataflow": True, "bindings": bs}], "result": r}}
            for name, (p, bs, r) in fns.items()}


EPI_X, EPI_K, EPI_N = (2, 64, 8), 8, 40  # 128 rows x 8 x 40: past the cost rule's 2^15


def c32(v):
    return {"const": v, "dtype": "f32"}


def epilogues():
    """The epilogue functions of the docstring: {name: (params, bindings, result)}."""
    fns = {}
    x = {"name": "x", "type": T(EPI_X)}
    bias = {"name": "bias", "type": T((EPI_N,))}

    def gelut(bs, h, extra=False, k3=0.044715):
        def b(name, value):
            bs.append({"var": name, "value": value})
            return name
        half = b("g_half", op("multiply", h, c32(0.5)))
        sq = b("g_sq", op("multiply", h, h))
        cube = b("g_cube", op("multiply", sq, h))
        m1 = b("g_m1", op("multiply", cube, c32(k3)))
        a2 = b("g_a2", op("add", h, m1))
        m2 = b("g_m2", op("multiply", a2, c32(0.7978846)))
        th = b("g_th", op("tanh", m2))
        a3 = b("g_a3", op("add", th, c32(1.0)))
        y = b("g_y", op("multiply", half, a3))
        return b("g_z", op("add", y, h)) if extra else y

    for name in ("addmm_gelut", "gelu_reuse", "gelut_off"):
        bs = [{"var": "x2", "value": op("reshape", "x", {"shape": [EPI_X[0] * EPI_X[1], EPI_K]})},
              {"var": "mm", "value": op("matmul", "x2", "w")},
              {"var": "s", "value": op("add", "mm", "bias")},
              {"var": "h", "value": op("reshape", "s", {"shape": [EPI_X[0], EPI_X[1], EPI_N]})}]
        fns[name] = ([x, {"name": "w", "type": T((EPI_K, EPI_N))}, bias], bs,
                     gelut(bs, "h", name == "gelu_reuse", 0.0447 if name == "gelut_off" else 0.044715))
    fns["lin_gelut"] = ([x, {"name": "w", "type": T((EPI_K, EPI_N))}, bias],
                        [{"var": "mm", "value": op("matmul", "x", "w")},
                         {"var": "s", "value": op("add", "mm", "bias")},
                         {"var": "y", "value": op("nn.gelu_tanh", "s")}], "y")
    wt = {"name": "w", "type": T((EPI_N, EPI_K))}
    head = [{"var": "wt", "value": op("permute_dims", "w")},
            {"var": "mm", "value": op("matmul", "x", "wt")}]
    fns["relu_t"] = ([x, wt, bias], head + [
        {"var": "s", "value": op("add", "mm", "bias")},
        {"var": "y", "value": op("nn.relu", "s")}], "y")
    fns["gelu_t"] = ([x, wt, bias], head + [
        {"var": "s", "value": op("add", "bias", "mm")},
        {"var": "d", "value": op("multiply", "s", c32(0.70710677))},
        {"var": "e", "value": op("erf", "d")},
        {"var": "a", "value": op("add", "e", c32(1.0))},
        {"var": "p", "value": op("multiply", "s", "a")},
        {"var": "y", "value": op("multiply", "p", c32(0.5))}], "y")
    fns["silu_t"] = ([x, wt, bias], head + [
        {"var": "s", "value": op("add", "mm", "bias")},
        {"var": "g", "value": op("sigmoid", "s")},
        {"var": "y", "value": op("multiply", "s", "g")}], "y")
    fns["rows4_t"] = ([{"name": "x", "type": T((4, 256))}, {"name": "w", "type": T((128, 256))},
                       {"name": "bias", "type": T((128,))}], head + [
        {"var": "s", "value": op("add", "mm", "bias")},
        {"var": "g", "value": op("sigmoid", "s")},
        {"var": "y", "value": op("multiply", "g", "s")}], "y")
    fns["swap_t"] = ([x, {"name": "w", "type": T((EPI_K, EPI_N))}, bias],
                     [{"var": "xt", "value": op("permute_dims", "x", axes=[1, 0, 2])},
                      {"var": "mm", "value": op("matmul", "xt", "w")},
                      {"var": "s", "value": op("add", "mm", "bias")},
                      {"var": "y", "value": op("nn.gelu_tanh", "s")}], "y")
    return fns


def epi_reference(name, x):
    """NumPy float64 of the epilogue function `name` (x: the float64 inputs)."""
    w = x[1].T if name.endswith("_t") and name != "swap_t" else x[1]
    s = (x[0].transpose(1, 0, 2) if name == "swap_t" else x[0]) @ w + x[2]
    if name == "relu_t":
        return np.maximum(s, 0)
    if name == "gelu_t":
        erf = np.vectorize(math.erf)
        return 0.5 * s * (1 + erf(s / math.sqrt(2)))
    if name in ("silu_t", "rows4_t"):
        return s / (1 + np.exp(-s))
    k3 = 0.0447 if name == "gelut_off" else 0.044715
    g = 0.5 * s * (1 + np.tanh(0.7978846 * (s + k3 * s ** 3)))
    return g + s if name == "gelu_reuse" else g


EPI_OPS = ("R.add(", "R.tanh(", "R.erf(", "R.sigmoid(", "R.nn.relu(", "R.nn.gelu_tanh(")
EPI_LEFT = {"gelu_reuse": 4,  # its chain's two adds and tanh stay, and the sum's add
            "gelut_off": 3}  # 0.0447 for 0.044715: not a GELU, its adds and tanh stay
# at the default --lib auto the exact GELU and SiLU stay generated (the cost rule): the
# bias alone is taken (gelu_t keeps erf and its + 1); --lib all takes them too
EPI_LEFT_AUTO = {"gelu_t": 2, "silu_t": 1, "rows4_t": 1}

EXPECT = {"pt": 2, "kt": 2, "qscale": 2, "gqa_repeat": 2, "gqa_expand": 2, "linear_t": 1,
          "bcast4": 1, "mha_b1": 1, "decode": 0, "addmm_gelut": 1, "lin_gelut": 1,
          "relu_t": 1, "gelu_t": 1, "silu_t": 1, "gelu_reuse": 1, "rows4_t": 1, "swap_t": 1,
          "gelut_off": 1}


def reference(name, ins):
    """NumPy float64 of function `name` on inputs ins (a list)."""
    x = [a.astype(np.float64) for a in ins]
    if name in EPI_LEFT or name in epilogues():
        return epi_reference(name, x)
    if name == "linear_t":
        return x[0] @ x[1].T
    if name == "bcast4":
        return x[0] @ x[1]
    if name == "mha_b1":
        return x[0].transpose(1, 0, 2) @ x[1]
    if name == "decode":
        q = x[0].reshape(x[0].shape[0], 1, A, D).transpose(0, 2, 1, 3)
        return q @ x[1].transpose(0, 1, 3, 2)
    qp, kp, vp = x
    B, S, _ = qp.shape
    kv = kp.shape[2] // D
    q = qp.reshape(B, S, A, D).transpose(0, 2, 1, 3)
    k = np.repeat(kp.reshape(B, S, kv, D).transpose(0, 2, 1, 3), A // kv, axis=1)
    v = np.repeat(vp.reshape(B, S, kv, D).transpose(0, 2, 1, 3), A // kv, axis=1)
    sc = q @ k.transpose(0, 1, 3, 2) * SCALE + np.triu(np.full((S, S), MASK), 1)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(B, S, A * D)


def lowered_counts(dump, needles=('"blas.matmul_view"',)):
    """{function: occurrences of the needles} in a library_lower dump."""
    counts, cur = {}, None
    for line in dump.splitlines():
        m = re.match(r"def (\w+)\(", line)
        if m:
            cur = m.group(1)
            counts[cur] = 0
        elif cur:
            counts[cur] += sum(line.count(n) for n in needles)
    return counts


def main():
    s = start(sys.argv, __doc__)
    if s is None:
        return 2
    relaxc, relax_run, checks = s
    check = checks.check
    mod = {"format": "relax-json", "version": 1, "functions": functions()}
    rng = np.random.default_rng(13)
    with tempfile.TemporaryDirectory(prefix="rx_mmview.") as tmp:
        src, rxa, ir = (os.path.join(tmp, n) for n in ("m.json", "m.rxa", "ir"))
        with open(src, "w") as f:
            json.dump(mod, f)
        texts = {}
        for lib in ("auto", "all"):
            out, d = (rxa, ir) if lib == "auto" else (rxa + ".all", ir + ".all")
            rc, _, err = run_status([relaxc, "build", src, "-o", out, "--dump-ir", d, "--lib", lib])
            check(rc == 0, "relaxc build --lib %s" % lib + ("" if rc == 0 else ": " + err[-2000:]))
            if rc != 0:
                return checks.done()
            dump = [n for n in os.listdir(d) if n.endswith("library_lower.txt")]
            with open(os.path.join(d, dump[0])) as f:
                texts[lib] = f.read()
        counts = lowered_counts(texts["auto"])
        for name, want in EXPECT.items():
            check(counts.get(name) == want, "%s: %d blas.matmul_view (got %s)"
                  % (name, want, counts.get(name)))
        for lib in ("auto", "all"):
            left = lowered_counts(texts[lib], EPI_OPS)
            for name in epilogues():
                want = EPI_LEFT.get(name, EPI_LEFT_AUTO.get(name, 0) if lib == "auto" else 0)
                check(left.get(name) == want, "%s --lib %s: %d elementwise ops left (got %s)"
                      % (name, lib, want, left.get(name)))
        for name, fn in mod["functions"].items():
            ins, argv = [], [relax_run, rxa, "--fn", name, "--out-dir", os.path.join(tmp, name)]
            for p in fn["params"]:
                shape = [{"b": 2, "s": 5}.get(d, d) for d in p["type"]["tensor"]["shape"]]
                a = rng.standard_normal(shape).astype(np.float32)
                path = os.path.join(tmp, "%s_%s.npy" % (name, p["name"]))
                np.save(path, a)
                ins.append(a)
                argv += ["--in", "%s=%s" % (p["name"], path)]
            runs = [("auto", rxa)]
            if name in epilogues():
                runs += [("blas", rxa), ("auto", rxa + ".all"), ("blas", rxa + ".all")]
            for gemm, art in runs:
                argv[1] = art
                try:
                    run(argv, dict(os.environ, RX_GEMM=gemm))
                    got = np.load(os.path.join(tmp, name, "out0.npy"))
                    want = reference(name, ins)
                    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
                    err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
                    check(ok, "%s equals NumPy, RX_GEMM=%s%s (max |diff| %.2g)"
                          % (name, gemm, " --lib all" if art != rxa else "", err))
                except RuntimeError as e:
                    check(False, "%s runs: %s" % (name, e))
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
