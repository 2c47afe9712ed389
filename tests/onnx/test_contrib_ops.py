#!/usr/bin/python3
"""ONNX Runtime's com.microsoft operators (docs/onnx.md "com.microsoft operators") through
the ONNX importer and relax-run, against NumPy:
  qlinear    QLinearAdd (with broadcasting) and QLinearMul of u8 and i8 operands,
             QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool (NCHW and
             channels_last), QLinearConcat of three operands with their own scales:
             dequantize, the float op, quantize (round half to even, saturate), in f32 as
             NumPy computes it; at most one step off where an f32 value lies on a tie
             (none expected at these scales), checked equal
  fused      Gelu, BiasGelu, FastGelu (with a bias), QuickGelu, BiasAdd, FusedMatMul with
             transA / transB and alpha, SkipLayerNormalization with a bias and its sum
             output: within 1e-5 (relative) of NumPy in float64
  qoperator  a small QOperator CNN as ONNX Runtime's quantizer writes it (the ONNX model
             zoo's int8 form): QuantizeLinear, QLinearConv, QLinearAdd residual,
             QLinearGlobalAveragePool, DequantizeLinear; within one output step of NumPy
  errors     an unsupported com.microsoft operator (Attention) and FusedMatMul with
             transBatchA: a located error naming the operator
Usage: test_contrib_ops.py BUILD_DIR
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_check import run_status, start  # noqa: E402
from onnx_runner import Runner  # noqa: E402

T = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT,
     np.int32: TensorProto.INT32}
MS = "com.microsoft"


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "ms", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, T[dt], shape)


def c(name, v, dt):
    return numpy_helper.from_array(np.array(v, dt), name)


def dq(q, s, z):
    return (q.astype(np.float32) - np.float32(z)) * np.float32(s)


def qz(y, s, z, dt):
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    return np.clip(np.round(y.astype(np.float32) / np.float32(s)) + np.float32(z), lo, hi).astype(dt)


def test_qlinear(r, rng):
    check = r.checks.check
    for dt in (np.uint8, np.int8):
        lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
        za, zb, zc = (dt(130), dt(120), dt(128)) if dt == np.uint8 else (dt(-3), dt(5), dt(0))
        a = rng.integers(lo, hi, (2, 8, 5, 6)).astype(dt)
        b = rng.integers(lo, hi, (1, 8, 1, 6)).astype(dt)
        for op, fn in (("QLinearAdd", np.add), ("QLinearMul", np.multiply)):
            sc = 0.1 if op == "QLinearAdd" else 0.3
            inits = [c("as", 0.05, np.float32), c("az", za, dt), c("bs", 0.04, np.float32), c("bz", zb, dt),
                     c("cs", sc, np.float32), c("cz", zc, dt)]
            n = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain=MS)
            rxa, _ = r.build(model([n], [vi("a", dt, a.shape), vi("b", dt, b.shape)], [vi("y", dt, None)],
                                   inits), "%s_%s" % (op, dt.__name__))
            if rxa:
                got, err = r.outputs(rxa, {"a": a, "b": b})
                want = qz(fn(dq(a, 0.05, za), dq(b, 0.04, zb)), sc, zc, dt)
                ok = got is not None and got[0].dtype == dt and np.array_equal(got[0], want)
                check(ok, "%s %s (broadcast b): equal to NumPy%s" % (op, dt.__name__, "" if ok else ": " + err[-400:]))
    x = rng.integers(0, 256, (2, 6, 4, 5)).astype(np.uint8)
    for op, fn, extra in (("QLinearSigmoid", lambda v: 1 / (1 + np.exp(-v)), {}),
                          ("QLinearLeakyRelu", lambda v: np.where(v > 0, v, v * np.float32(0.2)), {"alpha": 0.2})):
        inits = [c("xs", 0.05, np.float32), c("xz", 128, np.uint8), c("ys", 1 / 256, np.float32), c("yz", 0, np.uint8)]
        if op == "QLinearLeakyRelu":
            inits[2:] = [c("ys", 0.04, np.float32), c("yz", 100, np.uint8)]
        n = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **extra)
        rxa, _ = r.build(model([n], [vi("x", np.uint8, x.shape)], [vi("y", np.uint8, None)], inits), op)
        if rxa:
            got, err = r.outputs(rxa, {"x": x})
            ys, yz = (1 / 256, 0) if op == "QLinearSigmoid" else (0.04, 100)
            want = qz(fn(dq(x, 0.05, 128)).astype(np.float32), ys, yz, np.uint8)
            ok = got is not None and np.abs(got[0].astype(int) - want.astype(int)).max() <= 1 and \
                (got[0] != want).mean() < 0.01
            check(ok, "%s: within one step of NumPy (%s differ)%s"
                  % (op, None if got is None else int((got[0] != want).sum()), "" if ok else ": " + err[-400:]))
    for last in (0, 1):
        shape = (2, 4, 5, 6) if not last else (2, 4, 5, 6)
        inits = [c("xs", 0.05, np.float32), c("xz", 10, np.uint8), c("ys", 0.03, np.float32), c("yz", 5, np.uint8)]
        n = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                             channels_last=last)
        rxa, _ = r.build(model([n], [vi("x", np.uint8, shape)], [vi("y", np.uint8, None)], inits), "qgap%d" % last)
        if rxa:
            xv = rng.integers(0, 256, shape).astype(np.uint8)
            got, err = r.outputs(rxa, {"x": xv})
            axes = (1, 2) if last else (2, 3)
            want = qz(dq(xv, 0.05, 10).mean(axis=axes, keepdims=True, dtype=np.float64).astype(np.float32),
                      0.03, 5, np.uint8)
            ok = got is not None and got[0].shape == want.shape and \
                np.abs(got[0].astype(int) - want.astype(int)).max() <= 1
            check(ok, "QLinearGlobalAveragePool channels_last=%d: %s, within one step%s"
                  % (last, want.shape, "" if ok else ": " + err[-400:]))
    xs = [rng.integers(0, 256, (2, k, 3)).astype(np.uint8) for k in (2, 5, 1)]
    sc = [(0.05, 128), (0.02, 100), (0.1, 0)]
    ins, inits = ["ys", "yz"], [c("ys", 0.04, np.float32), c("yz", 64, np.uint8)]
    for i, (s, z) in enumerate(sc):
        ins += ["x%d" % i, "s%d" % i, "z%d" % i]
        inits += [c("s%d" % i, s, np.float32), c("z%d" % i, z, np.uint8)]
    n = helper.make_node("QLinearConcat", ins, ["y"], domain=MS, axis=-2)
    rxa, _ = r.build(model([n], [vi("x%d" % i, np.uint8, x.shape) for i, x in enumerate(xs)],
                           [vi("y", np.uint8, None)], inits), "qconcat")
    if rxa:
        got, err = r.outputs(rxa, {"x%d" % i: x for i, x in enumerate(xs)})
        want = qz(np.concatenate([dq(x, s, z) for x, (s, z) in zip(xs, sc)], axis=1), 0.04, 64, np.uint8)
        ok = got is not None and np.array_equal(got[0], want)
        check(ok, "QLinearConcat of three (own scales), axis -2: equal to NumPy%s" % ("" if ok else ": " + err[-400:]))


def erf(v):
    import math
    return np.vectorize(math.erf)(v)


def test_fused(r, rng):
    check = r.checks.check
    x = rng.standard_normal((3, 7, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    skip = rng.standard_normal((3, 7, 16)).astype(np.float32)
    x64, b64 = x.astype(np.float64), bias.astype(np.float64)
    gelu = lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2)))  # noqa: E731
    tanh_gelu = lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))  # noqa: E731
    cases = [("Gelu", ["x"], {}, gelu(x64)),
             ("BiasGelu", ["x", "bias"], {}, gelu(x64 + b64)),
             ("FastGelu", ["x", "bias"], {}, tanh_gelu(x64 + b64)),
             ("QuickGelu", ["x"], {"alpha": 1.5}, x64 / (1 + np.exp(-1.5 * x64))),
             ("BiasAdd", ["x", "bias", "skip"], {}, x64 + b64 + skip)]
    for op, ins, attrs, want in cases:
        n = helper.make_node(op, ins, ["y"], domain=MS, **attrs)
        inputs = [vi("x", np.float32, x.shape)] + ([vi("skip", np.float32, skip.shape)] if "skip" in ins else [])
        rxa, _ = r.build(model([n], inputs, [vi("y", np.float32, None)], [numpy_helper.from_array(bias, "bias")]),
                         "ms_" + op)
        if rxa:
            feeds = {"x": x, "skip": skip} if "skip" in ins else {"x": x}
            got, err = r.outputs(rxa, feeds)
            ok = got is not None and np.allclose(got[0], want, rtol=1e-5, atol=1e-5)
            check(ok, "%s: equal to NumPy within 1e-5%s" % (op, "" if ok else ": " + err[-400:]))
    a = rng.standard_normal((2, 9, 5)).astype(np.float32)
    b = rng.standard_normal((2, 7, 9)).astype(np.float32)
    n = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transA=1, transB=1, alpha=0.25)
    rxa, _ = r.build(model([n], [vi("a", np.float32, a.shape), vi("b", np.float32, b.shape)],
                           [vi("y", np.float32, None)]), "ms_fused_matmul")
    if rxa:
        got, err = r.outputs(rxa, {"a": a, "b": b})
        want = 0.25 * np.swapaxes(a, -1, -2).astype(np.float64) @ np.swapaxes(b, -1, -2)
        ok = got is not None and got[0].shape == (2, 5, 7) and np.allclose(got[0], want, rtol=1e-5, atol=1e-5)
        check(ok, "FusedMatMul transA transB alpha 0.25: (2, 5, 7) equal to NumPy%s" % ("" if ok else ": " + err[-400:]))
    g = rng.standard_normal(16).astype(np.float32)
    beta = rng.standard_normal(16).astype(np.float32)
    n = helper.make_node("SkipLayerNormalization", ["x", "skip", "g", "beta", "bias"], ["y", "", "", "sum"],
                         domain=MS, epsilon=1e-6)
    rxa, _ = r.build(model([n], [vi("x", np.float32, x.shape), vi("skip", np.float32, skip.shape)],
                           [vi("y", np.float32, None), vi("sum", np.float32, None)],
                           [numpy_helper.from_array(v, k) for k, v in (("g", g), ("beta", beta), ("bias", bias))]),
                     "ms_skip_ln")
    if rxa:
        got, err = r.outputs(rxa, {"x": x, "skip": skip})
        s = x64 + skip + b64
        mu, var = s.mean(-1, keepdims=True), s.var(-1, keepdims=True)
        want = (s - mu) / np.sqrt(var + 1e-6) * g + beta
        ok = got is not None and len(got) == 2 and np.allclose(got[0], want, rtol=1e-5, atol=1e-5) and \
            np.allclose(got[1], s, rtol=1e-6, atol=1e-6)
        check(ok, "SkipLayerNormalization with bias: the norm and the sum output equal NumPy%s"
              % ("" if ok else ": " + err[-400:]))


def test_qoperator(r, rng):
    """QuantizeLinear, QLinearConv 3x3, QLinearConv 3x3, QLinearAdd with the input (a
    residual), QLinearGlobalAveragePool, DequantizeLinear: NumPy in f32 step by step."""
    check = r.checks.check
    cch = 8
    w1 = rng.integers(-127, 128, (cch, cch, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (cch, cch, 3, 3)).astype(np.int8)
    b1 = rng.integers(-500, 500, cch).astype(np.int32)
    inits = [c("xs", 0.02, np.float32), c("xz", 128, np.uint8), c("w1", w1, np.int8), c("w2", w2, np.int8),
             c("ws", 0.002, np.float32), c("wz", 0, np.int8), c("s1", 0.03, np.float32), c("z1", 0, np.uint8),
             c("s2", 0.05, np.float32), c("z2", 120, np.uint8), c("s3", 0.04, np.float32), c("z3", 110, np.uint8),
             c("s4", 0.02, np.float32), c("z4", 100, np.uint8), c("b1", b1, np.int32)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w1", "ws", "wz", "s1", "z1", "b1"], ["h1"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("QLinearConv", ["h1", "s1", "z1", "w2", "ws", "wz", "s2", "z2"], ["h2"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("QLinearAdd", ["h2", "s2", "z2", "xq", "xs", "xz", "s3", "z3"], ["h3"], domain=MS),
             helper.make_node("QLinearGlobalAveragePool", ["h3", "s3", "z3", "s4", "z4"], ["h4"], domain=MS),
             helper.make_node("DequantizeLinear", ["h4", "s4", "z4"], ["y"])]
    rxa, path = r.build(model(nodes, [vi("x", np.float32, [2, cch, 7, 9])], [vi("y", np.float32, None)], inits),
                        "qoperator_cnn")
    if not rxa:
        return
    x = np.abs(rng.standard_normal((2, cch, 7, 9))).astype(np.float32)
    got, err = r.outputs(rxa, {"x": x})

    def conv(q, zq, w, bias):
        xp = np.pad(q.astype(np.int64) - zq, ((0, 0), (0, 0), (1, 1), (1, 1)))
        y = np.zeros((q.shape[0], w.shape[0]) + q.shape[2:], np.int64)
        for i in range(3):
            for j in range(3):
                y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + q.shape[2], j:j + q.shape[3]], w[:, :, i, j].astype(np.int64))
        return y + (0 if bias is None else bias.reshape(1, -1, 1, 1))

    xq = qz(x, 0.02, 128, np.uint8)
    h1 = qz(conv(xq, 128, w1, b1).astype(np.float32) * np.float32(np.float32(0.02) * np.float32(0.002) / np.float32(0.03)),
            1, 0, np.uint8)
    h2 = qz(conv(h1, 0, w2, None).astype(np.float32) * np.float32(np.float32(0.03) * np.float32(0.002) / np.float32(0.05)),
            1, 120, np.uint8)
    h3 = qz(dq(h2, 0.05, 120) + dq(xq, 0.02, 128), 0.04, 110, np.uint8)
    h4 = qz(dq(h3, 0.04, 110).mean(axis=(2, 3), keepdims=True), 0.02, 100, np.uint8)
    want = dq(h4, 0.02, 100)
    ok = got is not None and got[0].shape == want.shape and np.abs(got[0] - want).max() <= 0.0201
    check(ok, "QOperator CNN (QLinearConv x2, QLinearAdd, QLinearGlobalAveragePool): within one step "
          "of NumPy (max |diff| %s)%s" % (None if got is None else float(np.abs(got[0] - want).max()),
                                          "" if ok else ": " + err[-400:]))
    rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
    check(rc == 0 and ir.count("rt.qconv2d") >= 2, "legalize: both QLinearConv are rt.qconv2d")


def test_errors(r):
    check = r.checks.check
    for name, n in (("attention", helper.make_node("Attention", ["x", "x", "x"], ["y"], domain=MS, num_heads=2)),
                    ("transbatch", helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain=MS, transBatchA=1))):
        path = os.path.join(r.tmp, "err_%s.onnx" % name)
        import onnx
        onnx.save(model([n], [vi("x", np.float32, [2, 4, 4])], [vi("y", np.float32, None)]), path)
        rc, _, err = run_status([r.relaxc, "build", path, "-o", os.path.join(r.tmp, "e.rxa")])
        want = ("Attention", "com.microsoft") if name == "attention" else ("FusedMatMul", "transBatchA")
        check(rc != 0 and all(w in err for w in want),
              "%s: a located error naming it (%s)" % (name, err.strip().splitlines()[-1][:200] if err.strip() else ""))


def main():
    tools = start(sys.argv, __doc__)
    if tools is None:
        return 2
    relaxc, relax_run, checks = tools
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="rx_contrib.") as tmp:
        r = Runner(relaxc, relax_run, checks, tmp)
        test_qlinear(r, rng)
        test_fused(r, rng)
        test_qoperator(r, rng)
        test_errors(r)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
