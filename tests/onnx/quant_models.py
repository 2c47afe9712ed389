"""quant_models.py — quantized models as ONNX Runtime's quantization tools write them, for
tests/onnx/test_quant_ops.py (against NumPy) and tests/bench/bench_ops.py (beside ONNX
Runtime): one definition of each graph."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _model(nodes, m, k, out_shape, inits):
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", F, [m, k])],
                          [helper.make_tensor_value_info(nodes[-1].output[0], F, out_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def dynamic_mlp(rng, m, k, n, w_scale=0.01):
    """quantize_dynamic's form of Linear(k, n), ReLU, Linear(n, k): per Linear
    DynamicQuantizeLinear, MatMulInteger with an int8 weight (scale w_scale, zero point
    0), Cast, the scales' product, bias. Returns (model, [w0, w1], [b0, b1])."""
    nodes, inits, ws, bs, x = [], [], [], [], "x"
    for i, (kk, nn) in enumerate([(k, n), (n, k)]):
        w = rng.integers(-127, 128, (kk, nn)).astype(np.int8)
        bias = (rng.standard_normal(nn) * 0.1).astype(np.float32)
        ws.append(w)
        bs.append(bias)
        inits += [numpy_helper.from_array(w, "w%d" % i),
                  numpy_helper.from_array(np.array(w_scale, np.float32), "ws%d" % i),
                  numpy_helper.from_array(np.array(0, np.int8), "wz%d" % i),
                  numpy_helper.from_array(bias, "b%d" % i)]
        if i == 1:
            nodes.append(helper.make_node("Relu", ["y0"], ["r0"]))
            x = "r0"
        nodes += [helper.make_node("DynamicQuantizeLinear", [x], ["q%d" % i, "qs%d" % i, "qz%d" % i]),
                  helper.make_node("MatMulInteger", ["q%d" % i, "w%d" % i, "qz%d" % i, "wz%d" % i],
                                   ["mi%d" % i]),
                  helper.make_node("Cast", ["mi%d" % i], ["mf%d" % i], to=F),
                  helper.make_node("Mul", ["qs%d" % i, "ws%d" % i], ["sc%d" % i]),
                  helper.make_node("Mul", ["mf%d" % i, "sc%d" % i], ["ms%d" % i]),
                  helper.make_node("Add", ["ms%d" % i, "b%d" % i], ["y%d" % i])]
    return _model(nodes, m, k, [m, k], inits), ws, bs


def qdq_matmul(rng, m, k, n, x_scale=0.05, x_zero=128):
    """Static quantization's QDQ form of x @ w: QuantizeLinear / DequantizeLinear on x, an
    int8 w with per-column scales (zero points 0) through DequantizeLinear. Returns
    (model, w, its scales)."""
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = (rng.random(n) * 0.02 + 0.001).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(np.zeros(n, np.int8), "wz"),
             numpy_helper.from_array(np.array(x_scale, np.float32), "xs"),
             numpy_helper.from_array(np.array(x_zero, np.uint8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    return _model(nodes, m, k, [m, n], inits), w, ws


def _qlinear(nodes, inits, x, name, w, bias, w_scale, quantized):
    """quantize_dynamic's form of x @ w + bias (w int8, scale w_scale, zero point 0):
    DynamicQuantizeLinear of x (one per tensor: quantized maps x to its outputs' names, as
    the quantizer shares it between q, k and v), MatMulInteger, Cast, the scales'
    product, bias."""
    if x not in quantized:
        quantized[x] = (name + "_q", name + "_qs", name + "_qz")
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(quantized[x])))
    xq, xs, xz = quantized[x]
    inits += [numpy_helper.from_array(w, name + "_w"),
              numpy_helper.from_array(np.array(w_scale, np.float32), name + "_ws"),
              numpy_helper.from_array(np.array(0, np.int8), name + "_wz"),
              numpy_helper.from_array(bias, name + "_b")]
    nodes += [helper.make_node("MatMulInteger", [xq, name + "_w", xz, name + "_wz"], [name + "_mi"]),
              helper.make_node("Cast", [name + "_mi"], [name + "_mf"], to=F),
              helper.make_node("Mul", [xs, name + "_ws"], [name + "_sc"]),
              helper.make_node("Mul", [name + "_mf", name + "_sc"], [name + "_ms"]),
              helper.make_node("Add", [name + "_ms", name + "_b"], [name])]
    return name


def dynamic_encoder(rng, s, d=768, heads=12, ff=3072, w_scale=0.01):
    """A BERT-style encoder layer (post-norm: attention, residual, LayerNorm, GELU MLP,
    residual, LayerNorm) on x (1, s, d) as quantize_dynamic writes it with its default
    MatMulConstBOnly: every Linear (q, k, v, output projection, the MLP's two) in the
    _qlinear form on an int8 weight, the attention's two activation products in f32."""
    nodes, inits, qd = [], [], {}
    hd = d // heads

    def w(kk, nn):
        return rng.integers(-127, 128, (kk, nn)).astype(np.int8)

    def b(nn):
        return (rng.standard_normal(nn) * 0.1).astype(np.float32)

    def ln(x, name):
        inits.extend([numpy_helper.from_array(np.ones(d, np.float32), name + "_g"),
                      numpy_helper.from_array(np.zeros(d, np.float32), name + "_bt")])
        nodes.append(helper.make_node("LayerNormalization", [x, name + "_g", name + "_bt"], [name],
                                      axis=-1, epsilon=1e-5))
        return name

    inits += [numpy_helper.from_array(np.array([1, s, heads, hd], np.int64), "hshape"),
              numpy_helper.from_array(np.array([1, s, d], np.int64), "dshape"),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(hd), np.float32), "scale"),
              numpy_helper.from_array(np.array(np.sqrt(0.5), np.float32), "rsqrt2"),
              numpy_helper.from_array(np.array(0.5, np.float32), "half"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    sc = 0.02  # activations stay O(1) through the int8 products
    q = _qlinear(nodes, inits, "x", "q", w(d, d), b(d), sc / 8, qd)
    k = _qlinear(nodes, inits, "x", "k", w(d, d), b(d), sc / 8, qd)
    v = _qlinear(nodes, inits, "x", "v", w(d, d), b(d), sc / 8, qd)
    for t, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (v, [0, 2, 1, 3])):
        nodes += [helper.make_node("Reshape", [t, "hshape"], [t + "_r"]),
                  helper.make_node("Transpose", [t + "_r"], [t + "_t"], perm=perm)]
    nodes += [helper.make_node("MatMul", ["q_t", "k_t"], ["att"]),
              helper.make_node("Mul", ["att", "scale"], ["att_s"]),
              helper.make_node("Softmax", ["att_s"], ["att_p"], axis=-1),
              helper.make_node("MatMul", ["att_p", "v_t"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctx_t", "dshape"], ["ctx_r"])]
    o = _qlinear(nodes, inits, "ctx_r", "o", w(d, d), b(d), sc / 8, qd)
    nodes.append(helper.make_node("Add", ["x", o], ["res1"]))
    h = ln("res1", "ln1")
    f1 = _qlinear(nodes, inits, h, "f1", w(d, ff), b(ff), sc / 8, qd)
    nodes += [helper.make_node("Mul", [f1, "rsqrt2"], ["g_a"]),
              helper.make_node("Erf", ["g_a"], ["g_e"]),
              helper.make_node("Add", ["g_e", "one"], ["g_p"]),
              helper.make_node("Mul", [f1, "g_p"], ["g_m"]),
              helper.make_node("Mul", ["g_m", "half"], ["gelu"])]
    f2 = _qlinear(nodes, inits, "gelu", "f2", w(ff, d), b(d), sc / 16, qd)
    nodes.append(helper.make_node("Add", [h, f2], ["res2"]))
    out = ln("res2", "ln2")
    g = helper.make_graph(nodes, "qenc", [helper.make_tensor_value_info("x", F, [1, s, d])],
                          [helper.make_tensor_value_info(out, F, [1, s, d])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _conv_w(rng, co, ci, k):
    return rng.integers(-127, 128, (co, ci, k, k)).astype(np.int8)


def qdq_resblock(rng, c=64, hw=56, n=1):
    """Static quantization's QDQ form (quantize_static, QuantFormat.QDQ, per-channel int8
    weights) of a ResNet basic block on x (n, c, hw, hw): Q/DQ on the input, conv 3x3 +
    bias + ReLU, Q/DQ, conv 3x3 + bias, Q/DQ, the residual Add, ReLU, Q/DQ. Weights are
    DequantizeLinear(int8, per-output-channel scale, zero point 0, axis 0); the biases f32."""
    nodes, inits = [], []

    def qdq(x, name, scale, zp=0, dt=np.uint8):
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), name + "_s"),
                      numpy_helper.from_array(np.array(zp, dt), name + "_z")])
        nodes.extend([helper.make_node("QuantizeLinear", [x, name + "_s", name + "_z"], [name + "_q"]),
                      helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                       [name + "_d"])])
        return name + "_d"

    def conv(x, xs, name):
        w = _conv_w(rng, c, c, 3)
        ws = (rng.random(c) * 0.002 + 0.001).astype(np.float32)
        bs = (ws * np.float32(xs)).astype(np.float32)  # the bias as int32 at scale x_s * w_s
        bq = np.round(rng.standard_normal(c) * 0.1 / bs).astype(np.int32)
        inits.extend([numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(ws, name + "_ws"),
                      numpy_helper.from_array(np.zeros(c, np.int8), name + "_wz"),
                      numpy_helper.from_array(bq, name + "_bq"), numpy_helper.from_array(bs, name + "_bs"),
                      numpy_helper.from_array(np.zeros(c, np.int32), name + "_bz")])
        nodes.extend([helper.make_node("DequantizeLinear", [name + "_w", name + "_ws", name + "_wz"],
                                       [name + "_wd"], axis=0),
                      helper.make_node("DequantizeLinear", [name + "_bq", name + "_bs", name + "_bz"],
                                       [name + "_b"], axis=0),
                      helper.make_node("Conv", [x, name + "_wd", name + "_b"], [name], pads=[1, 1, 1, 1])])
        return name

    x = qdq("x", "in", 0.02, 128)
    h = conv(x, 0.02, "c1")
    nodes.append(helper.make_node("Relu", [h], ["r1"]))
    h = conv(qdq("r1", "a1", 0.03, 0), 0.03, "c2")
    h = qdq(h, "a2", 0.05, 128)
    nodes.extend([helper.make_node("Add", [h, x], ["sum"]), helper.make_node("Relu", ["sum"], ["r2"])])
    out = qdq("r2", "out", 0.04, 0)
    g = helper.make_graph(nodes, "qdq_res", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(out, F, [n, c, hw, hw])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _quantized_input(nodes, inits):
    """QuantizeLinear of the graph input x to u8 xq (scale 0.02, zero point 128) appended
    to nodes; returns t(name, value, dtype), which adds an initializer and returns its
    name."""
    def t(name, v, dt):
        inits.append(numpy_helper.from_array(np.array(v, dt), name))
        return name

    nodes.append(helper.make_node("QuantizeLinear", ["x", t("xs", 0.02, np.float32),
                                                     t("xz", 128, np.uint8)], ["xq"]))
    return t


def qlinear_convnet(rng, c=64, hw=56, n=1, layers=None, ws_lo=0.001, yz=0):
    """The QOperator form (quantize_static, QuantFormat.QOperator; the ONNX model zoo's
    int8 CNNs): QuantizeLinear, QLinearConv 3x3 (per-channel weight scales, i32 bias),
    QLinearConv 1x1 to 2c, QLinearConv 3x3 stride 2, DequantizeLinear. layers: (co, k,
    stride, group) each (the default those three, group 1); per-channel weight scales
    in [ws_lo, 3 ws_lo); yz the outputs' zero point."""
    nodes, inits = [], []
    t = _quantized_input(nodes, inits)
    x, s, z, ci = "xq", "xs", "xz", c
    for i, (co, k, st, g) in enumerate(layers or [(c, 3, 1, 1), (2 * c, 1, 1, 1), (2 * c, 3, 2, 1)]):
        w = rng.integers(-127, 128, (co, ci // g, k, k)).astype(np.int8)
        ws = (rng.random(co) * 2 * ws_lo + ws_lo).astype(np.float32)
        bias = rng.integers(-2000, 2000, co).astype(np.int32)
        nm = "c%d" % i
        ins = [x, s, z, t(nm + "_w", w, np.int8), t(nm + "_ws", ws, np.float32),
               t(nm + "_wz", np.zeros(co), np.int8), t(nm + "_ys", 0.05, np.float32),
               t(nm + "_yz", yz, np.uint8), t(nm + "_b", bias, np.int32)]
        nodes.append(helper.make_node("QLinearConv", ins, [nm], pads=[k // 2] * 4, strides=[st, st], group=g))
        x, s, z, ci = nm, nm + "_ys", nm + "_yz", co
    nodes.append(helper.make_node("DequantizeLinear", [x, s, z], ["y"]))
    g = helper.make_graph(nodes, "qlin_conv", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info("y", F, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qdyn_convnet(rng, c=64, hw=56, n=1):
    """quantize_dynamic's form of Conv 3x3 + ReLU, Conv 3x3: per Conv DynamicQuantizeLinear,
    ConvInteger with an int8 weight (zero point 0), Cast, the scales' product, bias
    (reshaped to (c, 1, 1)), then ReLU after the first."""
    nodes, inits, x = [], [], "x"
    for i in range(2):
        nm = "c%d" % i
        inits += [numpy_helper.from_array(_conv_w(rng, c, c, 3), nm + "_w"),
                  numpy_helper.from_array(np.array(0.002, np.float32), nm + "_ws"),
                  numpy_helper.from_array(np.array(0, np.int8), nm + "_wz"),
                  numpy_helper.from_array((rng.standard_normal((c, 1, 1)) * 0.1).astype(np.float32),
                                          nm + "_b")]
        nodes += [helper.make_node("DynamicQuantizeLinear", [x], [nm + "_q", nm + "_qs", nm + "_qz"]),
                  helper.make_node("ConvInteger", [nm + "_q", nm + "_w", nm + "_qz", nm + "_wz"],
                                   [nm + "_ci"], pads=[1, 1, 1, 1]),
                  helper.make_node("Cast", [nm + "_ci"], [nm + "_cf"], to=F),
                  helper.make_node("Mul", [nm + "_qs", nm + "_ws"], [nm + "_sc"]),
                  helper.make_node("Mul", [nm + "_cf", nm + "_sc"], [nm + "_m"]),
                  helper.make_node("Add", [nm + "_m", nm + "_b"], [nm + "_y"])]
        x = nm + "_y"
        if i == 0:
            nodes.append(helper.make_node("Relu", [x], ["r0"]))
            x = "r0"
    g = helper.make_graph(nodes, "qdyn_conv", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(x, F, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


class _QdqGraph:
    """quantize_static's QDQ pieces, named in order (q1, c2, ...): Q/DQ pairs on u8
    activations and convolutions with per-output-channel int8 weights, int32 biases at
    scale x_s * w_s through DequantizeLinear, and an optional ReLU / ReLU6 (Clip)."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.ctr = rng, [], [], 0

    def name(self, p):
        self.ctr += 1
        return "%s%d" % (p, self.ctr)

    def qdq(self, x, scale, zp=0):
        nm = self.name("q")
        self.inits.extend([numpy_helper.from_array(np.array(scale, np.float32), nm + "_s"),
                           numpy_helper.from_array(np.array(zp, np.uint8), nm + "_z")])
        self.nodes.extend([helper.make_node("QuantizeLinear", [x, nm + "_s", nm + "_z"], [nm + "_q"]),
                           helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"],
                                            [nm + "_d"])])
        return nm + "_d", scale

    def conv(self, x, xs, ci, co, k, st, act=None, group=1):
        rng, nm = self.rng, self.name("c")
        w = rng.integers(-127, 128, (co, ci // group, k, k)).astype(np.int8)
        ws = (np.full(co, 1.0 / (127 * np.sqrt(ci // group * k * k) * 0.6)) *
              (0.8 + 0.4 * rng.random(co))).astype(np.float32)
        bs = (ws * np.float32(xs)).astype(np.float32)
        bq = np.round(rng.standard_normal(co) * 0.05 / bs).astype(np.int32)
        self.inits.extend([numpy_helper.from_array(w, nm + "_w"), numpy_helper.from_array(ws, nm + "_ws"),
                           numpy_helper.from_array(np.zeros(co, np.int8), nm + "_wz"),
                           numpy_helper.from_array(bq, nm + "_bq"), numpy_helper.from_array(bs, nm + "_bs"),
                           numpy_helper.from_array(np.zeros(co, np.int32), nm + "_bz")])
        self.nodes.extend([
            helper.make_node("DequantizeLinear", [nm + "_w", nm + "_ws", nm + "_wz"], [nm + "_wd"], axis=0),
            helper.make_node("DequantizeLinear", [nm + "_bq", nm + "_bs", nm + "_bz"], [nm + "_b"], axis=0),
            helper.make_node("Conv", [x, nm + "_wd", nm + "_b"], [nm], pads=[k // 2] * 4,
                             strides=[st, st], group=group)])
        if act == "relu":
            self.nodes.append(helper.make_node("Relu", [nm], [nm + "_r"]))
        elif act == "relu6":
            self.inits.extend([numpy_helper.from_array(np.array(0, np.float32), nm + "_lo"),
                               numpy_helper.from_array(np.array(6, np.float32), nm + "_hi")])
            self.nodes.append(helper.make_node("Clip", [nm, nm + "_lo", nm + "_hi"], [nm + "_r"]))
        return nm + "_r" if act else nm


def qdq_resnet18(rng, n=1, hw=224, classes=1000):
    """quantize_static's QDQ form (per-channel int8 weights, int32 biases, u8 activations)
    of a ResNet-18 on x (n, 3, hw, hw): the 7x7 stride-2 stem, max pool, four stages of two
    basic blocks (64, 128, 256, 512 channels; stride-2 1x1 downsampling), global average
    pool, flatten, and the classifier as a Gemm (transB, as nn.Linear exports) of an int8
    weight plus a bias. Q/DQ
    pairs sit on every activation the quantizer would quantize (conv inputs, the residual
    sums, the pooled features)."""
    G = _QdqGraph(rng)
    nodes, inits, name, qdq = G.nodes, G.inits, G.name, G.qdq

    def conv(x, xs, ci, co, k, st, relu):
        return G.conv(x, xs, ci, co, k, st, "relu" if relu else None)

    x, xs = qdq("x", 0.03, 128)
    h = conv(x, xs, 3, 64, 7, 2, True)
    h, hs = qdq(h, 0.05)
    nodes.append(helper.make_node("MaxPool", [h], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    h, hs = qdq("pool", 0.05)
    ci = 64
    for co, st in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for b in range(2):
            s = st if b == 0 else 1
            a = conv(h, hs, ci, co, 3, s, True)
            a, as_ = qdq(a, 0.05)
            a = conv(a, as_, co, co, 3, 1, False)
            a, _ = qdq(a, 0.08, 128)
            sc = h
            if s != 1 or ci != co:
                sc = conv(h, hs, ci, co, 1, s, False)
                sc, _ = qdq(sc, 0.08, 128)
            add = name("add")
            nodes.extend([helper.make_node("Add", [a, sc], [add]), helper.make_node("Relu", [add], [add + "_r"])])
            h, hs = qdq(add + "_r", 0.05)
            ci = co
    nodes.extend([helper.make_node("GlobalAveragePool", [h], ["gap"]),
                  helper.make_node("Flatten", ["gap"], ["flat"], axis=1)])
    f, fs = qdq("flat", 0.02)
    w = rng.integers(-127, 128, (classes, 512)).astype(np.int8)  # nn.Linear: Gemm with transB
    inits.extend([numpy_helper.from_array(w, "fc_w"),
                  numpy_helper.from_array(np.full(classes, 0.001, np.float32), "fc_ws"),
                  numpy_helper.from_array(np.zeros(classes, np.int8), "fc_wz"),
                  numpy_helper.from_array((rng.standard_normal(classes) * 0.1).astype(np.float32), "fc_b")])
    nodes.extend([helper.make_node("DequantizeLinear", ["fc_w", "fc_ws", "fc_wz"], ["fc_wd"], axis=0),
                  helper.make_node("Gemm", [f, "fc_wd", "fc_b"], ["logits"], transB=1)])
    g = helper.make_graph(nodes, "qdq_resnet18", [helper.make_tensor_value_info("x", F, [n, 3, hw, hw])],
                          [helper.make_tensor_value_info("logits", F, [n, classes])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qdq_mbv2(rng, n=1, hw=112, c=32, blocks=((6, 24, 2), (6, 24, 1), (6, 32, 2), (6, 32, 1))):
    """quantize_static's QDQ form of MobileNetV2's inverted residual blocks on x
    (n, c, hw, hw): per block a 1x1 expansion to t c channels + ReLU6 (Clip 0..6), a 3x3
    depthwise conv (group = channels, stride s) + ReLU6, a 1x1 projection to co, and the
    residual Add where the shape is kept; per-channel int8 weights, int32 biases, u8
    activations with Q/DQ on every conv input and on the sums. blocks: (t, co, s)."""
    G = _QdqGraph(rng)
    nodes, inits, name, qdq = G.nodes, G.inits, G.name, G.qdq

    def conv(x, xs, ci, co, k, st, group, relu6):
        return G.conv(x, xs, ci, co, k, st, "relu6" if relu6 else None, group)

    h, hs = qdq("x", 0.03, 128)
    ci = c
    for t, co, st in blocks:
        e = conv(h, hs, ci, ci * t, 1, 1, 1, True)
        e, es = qdq(e, 0.025)
        d = conv(e, es, ci * t, ci * t, 3, st, ci * t, True)
        d, ds = qdq(d, 0.025)
        p = conv(d, ds, ci * t, co, 1, 1, 1, False)
        p, ps = qdq(p, 0.05, 128)
        if st == 1 and ci == co:
            add = name("add")
            nodes.append(helper.make_node("Add", [p, h], [add]))
            p, ps = qdq(add, 0.06, 128)
        h, hs, ci = p, ps, co
    out = hw // 4
    g = helper.make_graph(nodes, "qdq_mbv2", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(h, F, [n, ci, out, out])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qdq_i8_resblock(rng, c=64, hw=56, n=1):
    """quantize_static's QDQ form with symmetric int8 activations (ActivationSymmetric:
    i8, zero point 0) and per-channel int8 weights of a ResNet basic block with a
    residual: Q/DQ (i8) on the input, conv 3x3 + bias + ReLU, Q/DQ, conv 3x3 + bias, Q/DQ,
    Add, ReLU, Q/DQ."""
    G = _QdqGraph(rng)
    nodes, inits = G.nodes, G.inits

    def qdq(x, scale):
        nm = G.name("q")
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), nm + "_s"),
                      numpy_helper.from_array(np.array(0, np.int8), nm + "_z")])
        nodes.extend([helper.make_node("QuantizeLinear", [x, nm + "_s", nm + "_z"], [nm + "_q"]),
                      helper.make_node("DequantizeLinear", [nm + "_q", nm + "_s", nm + "_z"], [nm + "_d"])])
        return nm + "_d", scale

    x, xs = qdq("x", 0.03)
    h = G.conv(x, xs, c, c, 3, 1, "relu")
    h, hs = qdq(h, 0.03)
    h = G.conv(h, hs, c, c, 3, 1)
    h, _ = qdq(h, 0.05)
    nodes.extend([helper.make_node("Add", [h, x], ["sum"]), helper.make_node("Relu", ["sum"], ["r"])])
    out, _ = qdq("r", 0.04)
    g = helper.make_graph(nodes, "qdq_i8", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(out, F, [n, c, hw, hw])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qlinear_dwnet(rng, c=96, hw=56, n=1):
    """The QOperator form of a depthwise-separable block (MobileNet's): QuantizeLinear,
    QLinearConv 3x3 with group = channels (per-channel weight scales, i32 bias),
    QLinearConv 1x1 to 2c, QLinearConv 3x3 depthwise stride 2, DequantizeLinear."""
    return qlinear_convnet(rng, c, hw, n, [(c, 3, 1, c), (2 * c, 1, 1, 1), (2 * c, 3, 2, 2 * c)],
                           ws_lo=0.002, yz=10)


def qlinear_matmul_chain(rng, m=128, d=768, ff=3072):
    """QLinearMatMul chains (the QOperator form of an MLP): QuantizeLinear, QLinearMatMul
    (d -> ff), QLinearMatMul (ff -> d), QLinearMatMul (d -> d), DequantizeLinear; u8
    activations with zero points, int8 weights with a scale per tensor."""
    nodes, inits = [], []
    t = _quantized_input(nodes, inits)
    x, s, z, k = "xq", "xs", "xz", d
    for i, nn in enumerate([ff, d, d]):
        nm = "m%d" % i
        w = rng.integers(-127, 128, (k, nn)).astype(np.int8)
        ys = 0.02 * np.sqrt(k) * 127 * 0.01 / 2
        nodes.append(helper.make_node("QLinearMatMul", [x, s, z, t(nm + "_w", w, np.int8),
                                                        t(nm + "_ws", 0.01, np.float32), t(nm + "_wz", 0, np.int8),
                                                        t(nm + "_ys", ys, np.float32), t(nm + "_yz", 128, np.uint8)], [nm]))
        x, s, z, k = nm, nm + "_ys", nm + "_yz", nn
    nodes.append(helper.make_node("DequantizeLinear", [x, s, z], ["y"]))
    g = helper.make_graph(nodes, "qlin_mm", [helper.make_tensor_value_info("x", F, [m, d])],
                          [helper.make_tensor_value_info("y", F, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def qdq_ops(rng, c=64, hw=56, n=1):
    """QDQ around the ops between convolutions (quantize_static's QDQ: Q/DQ on each input
    and output): conv 3x3 + ReLU, MaxPool 3x3/2, a second conv, Concat of both branches,
    Add of a second 1x1 conv's output, GlobalAveragePool, each with Q/DQ (u8)."""
    G = _QdqGraph(rng)
    nodes, qdq = G.nodes, G.qdq
    x, xs = qdq("x", 0.03, 128)
    a = G.conv(x, xs, c, c, 3, 1, "relu")
    a, as_ = qdq(a, 0.04)
    nodes.append(helper.make_node("MaxPool", [a], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    p, ps = qdq("mp", 0.04)
    b = G.conv(p, ps, c, c, 3, 1, "relu")
    b, bs = qdq(b, 0.04)
    nodes.append(helper.make_node("Concat", [p, b], ["cat"], axis=1))
    cat, cs = qdq("cat", 0.04)
    d = G.conv(cat, cs, 2 * c, 2 * c, 1, 1)
    d, _ = qdq(d, 0.06, 128)
    nodes.append(helper.make_node("Add", [d, cat], ["sum"]))
    s, _ = qdq("sum", 0.06, 128)
    nodes.append(helper.make_node("GlobalAveragePool", [s], ["gap"]))
    out, _ = qdq("gap", 0.01, 128)
    g = helper.make_graph(nodes, "qdq_ops", [helper.make_tensor_value_info("x", F, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(out, F, [n, 2 * c, 1, 1])], G.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
