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
