#!/usr/bin/python3
"""Integer products of quantized models through the ONNX importer and relax-run
(docs/onnx.md "Quantization"), exact against NumPy's int64 arithmetic:
  matmulinteger  MatMulInteger of every signedness (u8 / i8 a by u8 / i8 b) with scalar,
                 per-row (a) and per-column (b) zero points, contractions of 1 to 3072
                 (one case's sums all above 2^24, where one f32 product would round
                 them), a 3-d a over a 2-d b, b a constant (packed at compile time) and
                 b an input (packed per call), shapes for several threads: the product is
                 rt.qmatmul after legalize, and the i32 result equal bit for bit on each
                 kernel ($RX_QGEMM_KERNEL unset: AVX-512 VNNI here, avx2, sse2, portable)
  qlinear        QLinearMatMul with K = 1500: requantized u8 equal to the float64
                 reference's round-half-even
  convinteger    ConvInteger: the 8-bit convolution rt.qconv2d for a weight zero point of 0
                 (1170 terms past 2^24, asymmetric pads with stride 2 and 70 output
                 channels, an i8 x with dilation 2, a 7x7 stride-2 stem on 3 channels, a 1x1
                 read in place), exact f32 blocks otherwise (576 terms with per-channel
                 weight zero points, depthwise, a 1x1 with per-channel zero points), the
                 route checked in legalize's output, each on the VNNI / AVX2 / portable
                 tile kernels; QLinearConv with x's zero point 100 under padding and an i32
                 bias; i32 / u8 exact against NumPy
  qdq_conv       quantize_static's QDQ ResNet block: both convolutions rt.qconv2d, the
                 result within one output step of NumPy's f32 evaluation (under 2% off)
  qconv_epilogue the requantization, residual Add and ReLU of QDQ / QOperator CNNs fused
                 into rt.qconv2d's epilogue: equal bit for bit to the unfused build on
                 each epilogue variant, no requantization left outside the calls
  qdq_i8         the QDQ block with symmetric i8 activations: within one step of NumPy
  qdq_ops        QDQ around MaxPool / Concat / Add / GAP: within one step of NumPy, the
                 Concat on the u8 tensors (Q(DQ(q)) with the same parameters is q)
  qdq            QuantizeLinear / DequantizeLinear around a MatMul whose int8 weight has
                 per-column scales, and an i8 activation by a u8 weight with a zero point:
                 the 8-bit product (rt.qmatmul, no f32 weight) times s_x * s_w
  dynamic        quantize_dynamic's pattern (DynamicQuantizeLinear, MatMulInteger,
                 Cast, the scales' product, bias, ReLU, a second layer) on
                 (128, 768) x (768, 3072) x (3072, 768) against NumPy computing the same
                 steps (exactly: f32 scales as ONNX Runtime computes them), and the
                 generated C rounds with the vector ISA versions (rx_isa) and the
                 min/max of the quantization run as row reductions (no whole-tensor
                 serial loop left)
Usage: test_quant_ops.py BUILD_DIR
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_check import run_status, start  # noqa: E402
from onnx_runner import Runner  # noqa: E402
import quant_models  # noqa: E402

T = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT,
     np.int32: TensorProto.INT32}


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "q", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, T[dt], shape)


KERNELS = ("", "avx2", "sse2", "portable")  # $RX_QGEMM_KERNEL: the best (VNNI here), then forced lower


def test_matmulinteger(r, rng):
    check = r.checks.check
    cases = [  # (name, M, K, N, a dtype, b dtype, a zp kind, b zp kind, b given at run time)
        ("k64_scalar", 5, 64, 9, np.uint8, np.int8, "scalar", "scalar", False),
        ("k700_rowcol", 7, 700, 33, np.uint8, np.int8, "row", "col", False),
        ("k2000_u8u8", 6, 2000, 17, np.uint8, np.uint8, "scalar", "col", False),
        ("k700_3d", (2, 3), 700, 20, np.uint8, np.int8, "scalar", "scalar", False),
        ("k1500_runtime_b", 4, 1500, 12, np.uint8, np.int8, "scalar", "col", True),
        ("k900_nozp", 3, 900, 8, np.uint8, np.int8, None, None, False),
        ("k2000_large", 4, 2000, 16, np.uint8, np.int8, None, None, False),
        # rt.qmatmul's forms: an i8 A (A ^ 0x80), a u8 B (B ^ 0x80), K not a multiple of
        # 4 (padded groups), row tails of 1..5 and column tails, several threads (column
        # blocks, and rows cut when there is one block), a 3-d A with per-row zero points
        ("k67_i8i8", 13, 67, 70, np.int8, np.int8, "scalar", "col", False),
        ("k130_i8u8", 9, 130, 65, np.int8, np.uint8, "scalar", "scalar", False),
        ("k1_u8u8", 4, 1, 5, np.uint8, np.uint8, "scalar", "scalar", False),
        ("k515_threads", 67, 515, 200, np.uint8, np.int8, "scalar", "col", False),
        ("k300_rows_cut", 131, 300, 40, np.uint8, np.uint8, None, "col", False),
        ("k70_3d_row", (2, 5), 70, 17, np.uint8, np.int8, "row", "col", False),
        ("k3072_i8_runtime_b", 50, 3072, 130, np.int8, np.int8, "scalar", None, True),
    ]
    runs = []
    for name, m, k, n, adt, bdt, az, bz, b_input in cases:
        lead = list(m) if isinstance(m, tuple) else [m]
        ainfo, info = np.iinfo(adt), np.iinfo(bdt)
        a = rng.integers(ainfo.min, ainfo.max + 1, lead + [k]).astype(adt)
        b = rng.integers(info.min, info.max + 1, (k, n)).astype(bdt)
        if name.endswith("large"):  # sums near 2000 * 227 * 113: odd ones above 2^24
            a = rng.integers(200, 256, lead + [k]).astype(adt)
            b = rng.integers(100, 128, (k, n)).astype(bdt)
        azp = None if az is None else (rng.integers(ainfo.min, ainfo.max + 1, (lead[-1],)) if az == "row"
                                       else rng.integers(ainfo.min, ainfo.max + 1, (1,))).astype(adt)
        bzp = None if bz is None else (rng.integers(info.min, info.max + 1, (n,)) if bz == "col"
                                       else rng.integers(info.min, info.max + 1, (1,))).astype(bdt)
        if az == "scalar":
            azp = azp.reshape(())
        if bz == "scalar":
            bzp = bzp.reshape(())
        inits, ins = [], ["a", "b", "", ""]
        inputs = [vi("a", adt, lead + [k])]
        if b_input:
            inputs.append(vi("b", bdt, [k, n]))
        else:
            inits.append(numpy_helper.from_array(b, "b"))
        if azp is not None:
            inits.append(numpy_helper.from_array(azp, "azp"))
            ins[2] = "azp"
        if bzp is not None:
            inits.append(numpy_helper.from_array(bzp, "bzp"))
            ins[3] = "bzp"
        while ins[-1] == "":
            ins.pop()
        node = helper.make_node("MatMulInteger", ins, ["y"])
        rxa, path = r.build(model([node], inputs, [vi("y", np.int32, lead + [n])], inits),
                            "mmi_" + name)
        if not rxa:
            continue
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
        check(rc == 0 and "rt.qmatmul" in ir,
              "MatMulInteger %s: the 8-bit product is rt.qmatmul after legalize" % name)
        feeds = {"a": a}
        if b_input:
            feeds["b"] = b
        a64 = a.astype(np.int64) - (0 if azp is None else
                                    (azp.astype(np.int64)[:, None] if az == "row" else azp.astype(np.int64)))
        b64 = b.astype(np.int64) - (0 if bzp is None else bzp.astype(np.int64))
        runs.append((name, k, rxa, feeds, a64 @ b64))
    for kern in KERNELS:
        os.environ["RX_QGEMM_KERNEL"] = kern
        for name, k, rxa, feeds, want in runs:
            got, err = r.outputs(rxa, feeds)
            got = got[0] if got else None
            ok = got is not None and got.dtype == np.int32 and np.array_equal(got, want.astype(np.int32))
            check(ok, "MatMulInteger %s (K %d, |sum| up to %d, kernel %s): i32 equal to NumPy%s"
                  % (name, k, int(np.abs(want).max()), kern or "best", "" if ok else ": " + err[-600:]))
    os.environ.pop("RX_QGEMM_KERNEL", None)


def test_qlinear(r, rng):
    check = r.checks.check
    m, k, n = 6, 1500, 10
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    sa, za, sb, zb, sy, zy = 0.02, 120, 0.01, 0, 40.0, 128
    inits = [numpy_helper.from_array(np.array(v, dt), nm) for nm, v, dt in
             (("sa", sa, np.float32), ("za", za, np.uint8), ("b", b, np.int8),
              ("sb", sb, np.float32), ("zb", zb, np.int8), ("sy", sy, np.float32),
              ("zy", zy, np.uint8))]
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    rxa, _ = r.build(model([node], [vi("a", np.uint8, [m, k])], [vi("y", np.uint8, [m, n])], inits),
                     "qlinearmatmul")
    if rxa:
        got, err = r.outputs(rxa, {"a": a})
        got = got[0] if got else None
        acc = (a.astype(np.int64) - za) @ (b.astype(np.int64) - zb)
        scale = np.float32(np.float32(sa) * np.float32(sb) / np.float32(sy))
        want = np.clip(np.round(acc.astype(np.float32) * scale) + zy, 0, 255).astype(np.uint8)
        ok = got is not None and np.array_equal(got, want)
        check(ok, "QLinearMatMul K %d: u8 equal to the reference%s" % (k, "" if ok else ": " + err[-600:]))


def test_qdq(r, rng):
    """QuantizeLinear / DequantizeLinear pairs around a MatMul (the QDQ format), the
    weight an int8 constant with per-column scales: the importer takes the product in 8
    bits (rt.qmatmul on the quantized activation and the int8 weight, scaled by
    s_x * s_w in f32, as ONNX Runtime's fused QDQ MatMul), no f32 copy of the weight;
    then an i8 activation with a u8 weight whose zero point is not 0, per tensor."""
    check = r.checks.check
    m, k, n = 16, 96, 40
    qdq, w, ws = quant_models.qdq_matmul(rng, m, k, n)
    rxa, path = r.build(qdq, "qdq_matmul")
    if not rxa:
        return
    x = rng.standard_normal((m, k)).astype(np.float32)
    got, err = r.outputs(rxa, {"x": x})
    xq = np.clip(np.round(x / np.float32(0.05)) + 128, 0, 255).astype(np.int64)
    acc = (xq - 128) @ w.astype(np.int64)
    want = acc.astype(np.float32) * (np.float32(0.05) * ws)
    ok = got is not None and np.allclose(got[0], want, rtol=1e-6, atol=1e-6)
    check(ok, "QDQ matmul with a per-column int8 weight: the i32 product times s_x * s_w%s"
          % ("" if ok else ": " + err[-600:]))
    rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
    f32w = [ln for ln in ir.splitlines() if "(%d, %d)" % (k, n) in ln and "f32" in ln]
    check(rc == 0 and "rt.qmatmul" in ir and not f32w,
          "legalize: the QDQ product is rt.qmatmul, no f32 weight: %s" % f32w[:2])
    # i8 activation (zero point -3), u8 weight with zero point 120 and one scale
    wu = rng.integers(0, 256, (k, n)).astype(np.uint8)
    inits = [numpy_helper.from_array(wu, "w"), numpy_helper.from_array(np.array(0.004, np.float32), "ws"),
             numpy_helper.from_array(np.array(120, np.uint8), "wz"),
             numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
             numpy_helper.from_array(np.array(-3, np.int8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    x3 = rng.standard_normal((2, m, k)).astype(np.float32) * 2
    rxa, path = r.build(model(nodes, [vi("x", np.float32, [2, m, k])], [vi("y", np.float32, [2, m, n])],
                              inits), "qdq_i8u8")
    if rxa:
        got, err = r.outputs(rxa, {"x": x3})
        xq = np.clip(np.round(x3 / np.float32(0.03)) - 3, -128, 127).astype(np.int64)
        acc = (xq + 3) @ (wu.astype(np.int64) - 120)
        want = acc.astype(np.float32) * np.float32(np.float32(0.03) * np.float32(0.004))
        ok = got is not None and np.allclose(got[0], want, rtol=1e-6, atol=1e-6)
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
        check(ok and "rt.qmatmul" in ir, "QDQ matmul, i8 activation (3-d) by a u8 weight with zero "
              "point 120: rt.qmatmul, equal to the scaled i32 product%s" % ("" if ok else ": " + err[-600:]))
    # Gemm with transB = 1 (PyTorch's Linear): an (n, k) int8 weight with per-row scales
    # (axis 0) and an f32 bias C
    wt = rng.integers(-127, 128, (n, k)).astype(np.int8)
    wts = (rng.random(n) * 0.01 + 0.001).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    inits = [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(wts, "ws"),
             numpy_helper.from_array(np.zeros(n, np.int8), "wz"), numpy_helper.from_array(bias, "bias"),
             numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Gemm", ["xd", "wd", "bias"], ["y"], transB=1)]
    rxa, path = r.build(model(nodes, [vi("x", np.float32, [m, k])], [vi("y", np.float32, [m, n])], inits),
                        "qdq_gemm")
    if rxa:
        got, err = r.outputs(rxa, {"x": x})
        xq = np.clip(np.round(x / np.float32(0.05)) + 128, 0, 255).astype(np.int64)
        want = ((xq - 128) @ wt.T.astype(np.int64)).astype(np.float32) * (np.float32(0.05) * wts) + bias
        ok = got is not None and np.allclose(got[0], want, rtol=1e-5, atol=1e-5)
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
        check(ok and "rt.qmatmul" in ir, "QDQ Gemm transB with per-row weight scales and a bias: "
              "rt.qmatmul, equal to the scaled i32 product plus the bias%s" % ("" if ok else ": " + err[-600:]))


def conv_ref(x, w, stride, pad, group, dil=1):
    """int64 NCHW convolution (cross-correlation) by taps, as ONNX defines it; pad an int
    or (top, left, bottom, right)."""
    n, ci, h, wd = x.shape
    co, cig, kh, kw = w.shape
    pt, pl, pb, pr = (pad,) * 4 if isinstance(pad, int) else pad
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + pl + pr - dil * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, co, oh, ow), np.int64)
    per = co // group
    for o in range(co):
        g = o // per
        for i in range(cig):
            for a in range(kh):
                for b in range(kw):
                    y[:, o] += w[o, i, a, b] * xp[:, g * cig + i, a * dil:a * dil + stride * oh:stride,
                                                 b * dil:b * dil + stride * ow:stride]
    return y


def test_conv_integer(r, rng):
    """ConvInteger and QLinearConv: the 8-bit convolution rt.qconv2d (a constant weight of
    one group whose zero point is 0; x's zero point through an explicit pad and a
    constant correction), else exact f32 blocks (the input channels cut into blocks when
    (C / group) * taps passes one block's terms); which one legalize made is checked,
    and each i32 / u8 result equals NumPy's, on every tile kernel."""
    check = r.checks.check
    cases = [  # name, C in, C out, k, stride, pads, group, weight zero point, x dtype, dilation
        ("c64_3x3", 64, 16, 3, 1, 1, 1, "channel", np.uint8, 1),   # blocks: a weight zero point
        ("c130_3x3_s2", 130, 8, 3, 2, 1, 1, "zero", np.uint8, 1),  # sums > 2^24: rt.qconv2d
        ("dw_3x3", 24, 24, 3, 1, 1, 24, "tensor", np.uint8, 1),    # depthwise: blocks
        ("c32_1x1", 32, 12, 1, 1, 0, 1, "channel", np.uint8, 1),
        ("c20_3x3_asym", 20, 70, 3, 2, (0, 1, 1, 0), 1, "zero", np.uint8, 1),  # 2 column blocks
        ("c16_i8_dil", 16, 9, 3, 1, 2, 1, "zero", np.int8, 2),
        ("c3_7x7_stem", 3, 16, 7, 2, 3, 1, "none", np.uint8, 1),
        ("c8_1x1_direct", 8, 24, 1, 1, 0, 1, "zero", np.uint8, 1),
    ]
    for name, ci, co, k, st, pad, group, wzk, xdt, dil in cases:
        lo, hi = (0, 256) if xdt == np.uint8 else (-128, 128)
        x = rng.integers(lo, hi, (2, ci, 9, 10)).astype(xdt)
        w = rng.integers(-128, 128, (co, ci // group, k, k)).astype(np.int8)
        xz = np.array(rng.integers(lo, hi), xdt)
        wz = {"channel": rng.integers(-5, 6, (co,)).astype(np.int8), "tensor": np.array(3, np.int8),
              "zero": np.array(0, np.int8), "none": None}[wzk]
        if name.startswith("c130"):  # sums near 1170 * 227 * 113: past 2^24, one f32 rounds
            x = rng.integers(200, 256, x.shape).astype(np.uint8)
            w = rng.integers(100, 128, w.shape).astype(np.int8)
            xz = np.array(0, np.uint8)
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(xz, "xz")]
        ins = ["x", "w", "xz"]
        if wz is not None:
            inits.append(numpy_helper.from_array(wz, "wz"))
            ins.append("wz")
        pads = [pad] * 4 if isinstance(pad, int) else [pad[0], pad[1], pad[2], pad[3]]
        node = helper.make_node("ConvInteger", ins, ["y"], strides=[st, st], pads=pads,
                                group=group, dilations=[dil, dil])
        rxa, path = r.build(model([node], [vi("x", xdt, [2, ci, 9, 10])], [vi("y", np.int32, None)],
                                  inits, opset=10), "convint_" + name)
        if not rxa:
            continue
        wzb = 0 if wz is None else wz.astype(np.int64).reshape(-1, 1, 1, 1) if wz.ndim else int(wz)
        want = conv_ref(x.astype(np.int64) - int(xz), w.astype(np.int64) - wzb, st, tuple(pads), group, dil)
        for kern in ("", "avx2", "portable"):
            os.environ["RX_QGEMM_KERNEL"] = kern
            got, err = r.outputs(rxa, {"x": x})
            ok = got is not None and got[0].dtype == np.int32 and np.array_equal(got[0], want)
            check(ok, "ConvInteger %s (%d terms, kernel %s): i32 equal to NumPy%s"
                  % (name, ci // group * k * k, kern or "best", "" if ok else ": " + err[-600:]))
        os.environ.pop("RX_QGEMM_KERNEL", None)
        eight = group == 1 and wzk in ("zero", "none")
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
        check(rc == 0 and ("rt.qconv2d" in ir) == eight,
              "legalize: ConvInteger %s is %s" % (name, "rt.qconv2d" if eight else "not rt.qconv2d"))
    ci, co = 96, 10
    x = rng.integers(0, 256, (1, ci, 8, 8)).astype(np.uint8)
    w = rng.integers(-128, 128, (co, ci, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, (co,)).astype(np.int32)
    sx, zx, sw, sy, zy = 0.02, 100, 0.01, 2.0, 128
    inits = [numpy_helper.from_array(np.array(v, dt), nm) for nm, v, dt in
             (("sx", sx, np.float32), ("zx", zx, np.uint8), ("sw", sw, np.float32),
              ("zw", 0, np.int8), ("sy", sy, np.float32), ("zy", zy, np.uint8))]
    inits += [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")]
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"],
                            ["y"], pads=[1, 1, 1, 1])
    rxa, path = r.build(model([node], [vi("x", np.uint8, [1, ci, 8, 8])], [vi("y", np.uint8, None)],
                              inits, opset=10), "qlinearconv")
    if rxa:
        got, err = r.outputs(rxa, {"x": x})
        acc = conv_ref(x.astype(np.int64) - zx, w.astype(np.int64), 1, 1, 1) + \
            bias.astype(np.int64).reshape(1, -1, 1, 1)
        scale = np.float32(np.float32(sx) * np.float32(sw) / np.float32(sy))
        want = np.clip(np.round(acc.astype(np.float32) * scale) + zy, 0, 255).astype(np.uint8)
        ok = got is not None and np.array_equal(got[0], want)
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
        check(ok and "rt.qconv2d" in ir, "QLinearConv 96 channels 3x3 (x zero point 100, padded) "
              "with an i32 bias: rt.qconv2d, u8 equal to NumPy%s" % ("" if ok else ": " + err[-600:]))


def eval_f32(m, x):
    """NumPy's evaluation of a QDQ CNN graph (quant_models) on x, each node in f32 as ONNX
    Runtime evaluates it: QuantizeLinear, DequantizeLinear (per tensor or per output
    channel), Conv (pads, strides, group), Relu, Clip, Add, Concat, MaxPool,
    GlobalAveragePool."""
    t = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    v = {"x": x}
    for nd in m.graph.node:
        a = [v[i] if i in v else t[i].astype(np.float32) for i in nd.input]
        at = {x.name: helper.get_attribute_value(x) for x in nd.attribute}
        if nd.op_type == "QuantizeLinear":
            lo, hi = (0, 255) if t[nd.input[2]].dtype == np.uint8 else (-128, 127)
            y = np.clip(np.round(a[0] / a[1]) + a[2], lo, hi)
        elif nd.op_type == "DequantizeLinear":
            sc, zp = a[1], a[2]
            if sc.ndim == 1 and a[0].ndim > 1:  # per output channel (axis 0)
                sh = [sc.shape[0]] + [1] * (a[0].ndim - 1)
                sc, zp = sc.reshape(sh), zp.reshape(sh)
            y = (a[0] - zp) * sc
        elif nd.op_type == "Conv":
            p, st, g = at["pads"][0], at.get("strides", [1, 1])[0], at.get("group", 1)
            xp = np.pad(a[0], ((0, 0), (0, 0), (p, p), (p, p)))
            w = a[1]
            co, cig, kh, kw = w.shape
            n, _, hh, ww = a[0].shape
            oh, ow = (hh + 2 * p - kh) // st + 1, (ww + 2 * p - kw) // st + 1
            y = np.zeros((n, co, oh, ow), np.float32)
            cog = co // g
            for gi in range(g):
                xs = xp[:, gi * cig:(gi + 1) * cig]
                for i in range(kh):
                    for j in range(kw):
                        win = xs[:, :, i:i + st * (oh - 1) + 1:st, j:j + st * (ow - 1) + 1:st]
                        y[:, gi * cog:(gi + 1) * cog] += np.einsum(
                            "nchw,oc->nohw", win, w[gi * cog:(gi + 1) * cog, :, i, j])
            y += a[2].reshape(1, -1, 1, 1)
        elif nd.op_type == "Relu":
            y = np.maximum(a[0], 0)
        elif nd.op_type == "Clip":
            y = np.clip(a[0], a[1], a[2])
        elif nd.op_type == "Add":
            y = a[0] + a[1]
        elif nd.op_type == "Concat":
            y = np.concatenate(a, axis=at["axis"])
        elif nd.op_type == "GlobalAveragePool":
            y = a[0].mean(axis=(2, 3), keepdims=True)
        elif nd.op_type == "MaxPool":  # 3x3 stride 2 pad 1, as quant_models writes it
            k, st, p = at["kernel_shape"][0], at["strides"][0], at["pads"][0]
            xp = np.pad(a[0], ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
            oh, ow = (xp.shape[2] - k) // st + 1, (xp.shape[3] - k) // st + 1
            y = np.full(a[0].shape[:2] + (oh, ow), -np.inf, np.float32)
            for i in range(k):
                for j in range(k):
                    y = np.maximum(y, xp[:, :, i:i + st * (oh - 1) + 1:st, j:j + st * (ow - 1) + 1:st])
        else:
            raise ValueError("eval_f32: no rule for " + nd.op_type)
        v[nd.output[0]] = y.astype(np.float32)
    return v[m.graph.output[0].name]


def test_qdq_conv(r, rng):
    """quantize_static's QDQ ResNet block (quant_models.qdq_resblock: per-channel int8
    weights, int32 biases through DequantizeLinear, Q/DQ between the layers, a residual)
    at 8 channels on 9 x 11: both convolutions are rt.qconv2d (no f32 convolution left),
    and the output is NumPy's evaluation of the ONNX graph in f32 (as ONNX Runtime
    computes it) up to one step of the last quantization (its scale, 0.04) where an f32
    sum in another order lands on the other side of a rounding boundary (scales of 0.02,
    0.05 and 0.04 put many values on ties), equal elsewhere."""
    m = quant_models.qdq_resblock(rng, c=8, hw=9, n=2)
    path = qdq_vs_numpy(r, m, "qdq_resblock", np.abs(rng.standard_normal((2, 8, 9, 9))).astype(np.float32),
                        "QDQ ResNet block (2 x 8 x 9 x 9)")
    if path:
        two_qconv(r, path, "qdq_resblock")


def qdq_vs_numpy(r, m, name, x, label, step=0.04, frac=0.02):
    """Builds QDQ model m and checks its output on x against eval_f32 within one output
    step (under frac of the values off at all); returns the .onnx path, or None when the
    build failed."""
    rxa, path = r.build(m, name)
    if not rxa:
        return None
    got, err = r.outputs(rxa, {"x": x})
    want = eval_f32(m, x)
    diff = np.abs(got[0] - want) if got is not None else None
    ok = got is not None and got[0].shape == want.shape and diff.max() <= step * 1.0025 and \
        (diff > 1e-5).mean() < frac
    r.checks.check(ok, "%s: within one output step of NumPy, %s%% differ%s"
                   % (label, None if diff is None else round(100 * float((diff > 1e-5).mean()), 3),
                      "" if ok else ": " + err[-600:]))
    return path


def two_qconv(r, path, name):
    """legalize made the block's two convolutions rt.qconv2d, no f32 convolution."""
    rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
    r.checks.check(rc == 0 and ir.count("rt.qconv2d") >= 2 and "blas.conv2d" not in ir and
                   "nn.conv2d" not in ir, "legalize: %s's two convolutions are rt.qconv2d, no f32 "
                   "convolution" % name)


def test_qdq_i8(r, rng):
    """quantize_static's QDQ ResNet block with symmetric int8 activations (i8, zero point 0;
    quant_models.qdq_i8_resblock) at 8 channels on 2 x 9 x 9: both convolutions rt.qconv2d
    on an i8 x, the output NumPy's f32 evaluation within one output step (0.04)."""
    m = quant_models.qdq_i8_resblock(rng, c=8, hw=9, n=2)
    path = qdq_vs_numpy(r, m, "qdq_i8_resblock", rng.standard_normal((2, 8, 9, 9)).astype(np.float32),
                        "QDQ ResNet block, i8 activations (2 x 8 x 9 x 9)")
    if path:
        two_qconv(r, path, "qdq_i8_resblock")


def test_qdq_ops(r, rng):
    """QDQ around MaxPool, Concat, Add and GlobalAveragePool between QDQ convolutions
    (quant_models.qdq_ops) at 8 channels on 2 x 14 x 14: the output NumPy's f32 evaluation
    within one step of the last quantization (0.01), and the Concat of two u8 tensors
    whose Q/DQ share one scale and zero point runs on the u8 tensors themselves
    (onnx_quant.c: QuantizeLinear(DequantizeLinear(q)) with the same parameters is q)."""
    check = r.checks.check
    m = quant_models.qdq_ops(rng, c=8, hw=14, n=2)
    path = qdq_vs_numpy(r, m, "qdq_ops", np.abs(rng.standard_normal((2, 8, 14, 14))).astype(np.float32),
                        "QDQ around MaxPool / Concat / Add / GAP (2 x 8 x 14 x 14)", 0.01, 0.05)
    if not path:
        return
    rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "library_lower"])
    cat = [ln for ln in ir.splitlines() if "R.concat(" in ln]
    check(rc == 0 and len(cat) == 1 and '"u8") = R.concat(' in cat[0],
          "import: the QDQ Concat is a concat of the u8 tensors (%s)" % [ln.strip()[:90] for ln in cat])


def test_qdq_mbv2(r, rng):
    """quantize_static's QDQ MobileNetV2 inverted residuals (quant_models.qdq_mbv2: 1x1
    expansion + ReLU6, 3x3 depthwise at strides 2 and 1 + ReLU6, 1x1 projection, residual
    Adds) at 8 channels on 2 x 16 x 16: all the convolutions are rt.qconv2d, and the output
    is NumPy's f32 evaluation within one step of the last quantization (0.05) where a sum
    in another order rounds the other way, equal elsewhere."""
    check = r.checks.check
    m = quant_models.qdq_mbv2(rng, n=2, hw=16, c=8, blocks=((4, 8, 2), (4, 8, 1), (3, 12, 2)))
    path = qdq_vs_numpy(r, m, "qdq_mbv2", rng.standard_normal((2, 8, 16, 16)).astype(np.float32),
                        "QDQ MobileNetV2 blocks (2 x 8 x 16 x 16 -> 12 x 4 x 4)", 0.05, 0.03)
    if not path:
        return
    rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "legalize"])
    check(rc == 0 and ir.count("rt.qconv2d") >= 9,
          "legalize: the six 1x1 and three depthwise convolutions are rt.qconv2d (%d)" % ir.count("rt.qconv2d"))


def test_qconv_epilogue(r, rng):
    """The requantization fused into rt.qconv2d's epilogue (compiler/pass/
    library_qconv_lower.c, runtime/library_qepi.c): quantize_static's QDQ ResNet block,
    the QOperator convnet (QLinearConv with x's zero point 128 under padding: the pad folded
    into the call), QDQ ResNet-18 at 2 x 3 x 40 x 40, QDQ MobileNetV2 blocks, the block with
    symmetric i8 activations, QDQ around MaxPool / Concat / Add / GlobalAveragePool and
    depthwise QLinearConvs (rt.qconv2d's depthwise path, at 8 and at 72 channels: a
    64-lane block and a tail), each depthwise form also equal to the build whose
    convolutions are generated i32 loops (--lib-disable conv2d): after
    library lowering no round / astype of a convolution's chain is left outside the calls
    (the residual Add, ReLU and its dequantization inside), and the outputs are the
    unfused build's (--opt-level 1: the same chain as generated kernels) bit for bit (three
    of them on each epilogue variant, $RX_QGEMM_KERNEL: AVX-512, avx2, portable)."""
    check = r.checks.check
    cases = [("qdq_resblock", quant_models.qdq_resblock(rng, c=16, hw=13, n=2), (2, 16, 13, 13), 2),
             ("qlinear_convnet", quant_models.qlinear_convnet(rng, c=8, hw=15, n=2), (2, 8, 15, 15), 3),
             ("qdq_resnet18", quant_models.qdq_resnet18(rng, n=2, hw=40, classes=10), (2, 3, 40, 40), 20),
             ("qdq_mbv2", quant_models.qdq_mbv2(rng, n=2, hw=16, c=8, blocks=((4, 8, 2), (4, 8, 1))),
              (2, 8, 16, 16), 6),  # mbv2: the 1x1s and the depthwise convs
             ("qdq_i8_resblock", quant_models.qdq_i8_resblock(rng, c=16, hw=11, n=2), (2, 16, 11, 11), 2),
             ("qdq_ops", quant_models.qdq_ops(rng, c=8, hw=14, n=2), (2, 8, 14, 14), 3),
             ("qlinear_dwnet", quant_models.qlinear_dwnet(rng, c=8, hw=14, n=2), (2, 8, 14, 14), 3),
             ("qlinear_dwnet_wide", quant_models.qlinear_dwnet(rng, c=72, hw=9, n=1), (1, 72, 9, 9), 3),
             ("qlinear_grouped", quant_models.qlinear_convnet(rng, 8, 10, 2, [(8, 3, 1, 2), (8, 3, 2, 8)]),
              (2, 8, 10, 10), 1)]  # groups 2 stay exact f32 blocks; the depthwise one
    for name, m, shape, nconv in cases:
        max_left = 4 if name == "qdq_ops" else 3  # + the requantizations after MaxPool, Concat
        rxa, path = r.build(m, name + "_epi")
        if not rxa:
            continue
        ref = os.path.join(r.tmp, name + "_o1.rxa")
        rc, _, err = run_status([r.relaxc, "build", path, "-o", ref, "--opt-level", "1"])
        check(rc == 0, "%s: build at --opt-level 1%s" % (name, "" if rc == 0 else ": " + err[-600:]))
        x = np.abs(rng.standard_normal(shape)).astype(np.float32)
        want, err1 = r.outputs(ref, {"x": x})
        if name.startswith(("qlinear_dwnet", "qdq_mbv2", "qlinear_grouped")):  # the depthwise path vs generated i32 loops
            gen = os.path.join(r.tmp, name + "_gen.rxa")
            rc, _, err = run_status([r.relaxc, "build", path, "-o", gen, "--lib-disable", "conv2d"])
            check(rc == 0, "%s: build with --lib-disable conv2d%s" % (name, "" if rc == 0 else ": " + err[-600:]))
            got, err3 = r.outputs(gen, {"x": x})
            ok = got is not None and want is not None and got[0].tobytes() == want[0].tobytes()
            check(ok, "%s: the depthwise rt.qconv2d's output equals generated kernels' bit for bit%s"
                  % (name, "" if ok else ": " + (err1 + err3)[-600:]))
        for k in ("", "avx2", "portable") if name in ("qdq_resblock", "qlinear_convnet", "qdq_ops",
                                                      "qlinear_dwnet", "qlinear_dwnet_wide") else ("",):
            os.environ["RX_QGEMM_KERNEL"] = k
            got, err2 = r.outputs(rxa, {"x": x})
            os.environ.pop("RX_QGEMM_KERNEL")
            ok = got is not None and want is not None and got[0].tobytes() == want[0].tobytes()
            check(ok, "%s (%s): the fused epilogue's output equals the unfused build's bit for bit%s"
                  % (name, k or "best", "" if ok else ": " + (err1 + err2)[-600:]))
        rc, ir, _ = run_status([r.relaxc, "print", path, "--after", "library_lower"])
        lines = ir.splitlines()
        calls = [ln for ln in lines if "rt.qconv2d" in ln]
        left = [ln for ln in lines if "R.round(" in ln or "R.nn.pad(" in ln]
        check(rc == 0 and len(calls) == nconv and all(", out=" in ln and '"i32")' not in ln.split("out=")[1]
                                                      for ln in calls) and len(left) <= max_left,
              "%s: library_lower: %d rt.qconv2d with their requantization inside (%d), %d round / "
              "pad left (the input's quantization, pools, concat)" % (name, nconv, len(calls), len(left)))


def dyn_ref(x, w, ws, b):
    """DynamicQuantizeLinear + MatMulInteger + Cast + scales + bias in ONNX's f32 steps."""
    lo, hi = np.float32(min(x.min(), 0)), np.float32(max(x.max(), 0))
    s = np.float32((hi - lo) / np.float32(255))
    zp = np.float32(np.clip(np.round(np.float32(-lo) / s), 0, 255))
    q = np.clip(np.round(x / s) + zp, 0, 255)
    acc = (q.astype(np.int64) - int(zp)) @ w.astype(np.int64)
    return acc.astype(np.int32).astype(np.float32) * np.float32(s * ws) + b


def test_dynamic(r, rng):
    check = r.checks.check
    m, k, n = 128, 768, 3072
    mlp, ws, bs = quant_models.dynamic_mlp(rng, m, k, n)
    rxa, path = r.build(mlp, "dynamic_mlp")
    if not rxa:
        return
    xin = rng.standard_normal((m, k)).astype(np.float32)
    got, err = r.outputs(rxa, {"x": xin})
    got = got[0] if got else None
    h = np.maximum(dyn_ref(xin, ws[0], np.float32(0.01), bs[0]), 0)
    want = dyn_ref(h, ws[1], np.float32(0.01), bs[1])
    ok = got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-4)
    check(ok, "dynamic quantization MLP 128x768x3072x768: equal to NumPy's steps (max |diff| %s)%s"
          % (None if got is None else float(np.abs(got - want).max()), "" if ok else ": " + err[-600:]))
    rc, c_text, err = run_status([r.relaxc, "print", path, "--after", "codegen"])
    versions = [part.split("\n}\n")[0] for part in c_text.split("static RX_TARGET_V3_EXACT ")[1:]]
    rounding = [v.split("(")[0] for v in versions if "nearbyintf(" in v]
    check(rc == 0 and len(rounding) >= 2,
          "codegen: the quantizing kernels have exact AVX2 versions (%s)" % ", ".join(rounding))
    rc, ir, err = run_status([r.relaxc, "print", path, "--after", "legalize"])
    whole = [ln for ln in ir.splitlines() if (" = min(" in ln or " = max(" in ln) and "axis" not in ln
             and "(128, 768)" in ln]
    check(rc == 0 and not whole, "legalize: no min / max over a whole (128, 768) tensor (%s)"
          % whole[:2])


def main():
    tools = start(sys.argv, __doc__)
    if tools is None:
        return 2
    relaxc, relax_run, checks = tools
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory(prefix="rx_quant.") as tmp:
        r = Runner(relaxc, relax_run, checks, tmp)
        test_matmulinteger(r, rng)
        test_qlinear(r, rng)
        test_qdq(r, rng)
        test_conv_integer(r, rng)
        test_qdq_conv(r, rng)
        test_qdq_mbv2(r, rng)
        test_qdq_i8(r, rng)
        test_qdq_ops(r, rng)
        test_qconv_epilogue(r, rng)
        test_dynamic(r, rng)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
