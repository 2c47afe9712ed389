/*
 * onnx_contrib.c — the ONNX importer's com.microsoft operators: the contrib ops that
 * ONNX Runtime's tools write into models users then bring here (its quantizer's
 * QOperator format, as the ONNX model zoo's int8 CNNs have it; its transformer
 * optimizer's fused activations and normalization). Each is a composition:
 *   QLinearAdd, QLinearMul   y = q(dq(a) + dq(b)) (or *), broadcasting; q / dq with the
 *                            scales and zero points given (onnx_quant.c's forms), y of
 *                            a's dtype
 *   QLinearGlobalAveragePool y = q(mean of dq(x) over the spatial axes, kept as 1);
 *                            channels_last 0 (NCHW) or 1 (NHWC)
 *   QLinearConcat            y = q(concat(dq(x_i))) along axis; inputs y_scale, y_zp,
 *                            then (x, x_scale, x_zp) per operand
 *   QLinearSigmoid,          y = q(sigmoid(dq(x))), q(leaky_relu(dq(x), alpha 0.01))
 *   QLinearLeakyRelu
 *   Gelu, BiasGelu           nn.gelu(x) (erf form), nn.gelu(a + bias)
 *   FastGelu                 nn.gelu_tanh(x [+ bias]) (the tanh approximation)
 *   QuickGelu                x * sigmoid(alpha x), alpha 1.702
 *   BiasAdd                  x + bias + skip
 *   FusedMatMul              alpha * op(a) @ op(b), transA / transB swapping the last two
 *                            axes (transBatchA / transBatchB not supported: an error)
 *   SkipLayerNormalization   layer_norm(x + skip [+ bias]) over the last axis with gamma,
 *                            beta; output 3 (when asked) the sum; outputs 1 and 2 (mean,
 *                            inverse std) are an error
 * The quantized forms round half to even and saturate as QuantizeLinear does, which is
 * what ONNX Runtime's float reference kernels compute; its table-driven kernels may
 * differ by one step where a value lies on a rounding tie.
 */
#include <string.h>

#include "onnx_int.h"

/* dq(input i) with its scale (i + 1) and zero point (i + 2, optional). */
static rx_node *dq_in(ox_ctx *c, int i)
{
    return ox_dequantize(c, ox_in_node(c, i), ox_in_node(c, i + 1), ox_in(c, i + 2) ? ox_in_node(c, i + 2) : NULL);
}

/* q(y) with scale input s and zero point input z (optional), as dtype dt. */
static bool q_out(ox_ctx *c, rx_node *y, int s, int z, rx_dtype dt)
{
    return ox_out_node(c, 0, ox_quantize_to(c, y, ox_in_node(c, s), ox_in(c, z) ? ox_in_node(c, z) : NULL, dt));
}

static rx_dtype in_dtype(ox_ctx *c, int i)
{
    rx_node *x = ox_in_node(c, i);
    return x ? ox_dtype_of(x) : RX_DT_UNKNOWN;
}

static bool qlinear_binary(ox_ctx *c)
{
    const char *op = !strcmp(c->node->op_type, "QLinearAdd") ? "add" : "multiply";
    return q_out(c, ox_call2(c, op, dq_in(c, 0), dq_in(c, 3)), 6, 7, in_dtype(c, 0));
}

static bool qlinear_unary(ox_ctx *c)
{
    rx_node *x = dq_in(c, 0), *y;
    if (!x) return false;
    if (!strcmp(c->node->op_type, "QLinearSigmoid")) {
        y = ox_call1(c, "sigmoid", x, NULL);
    } else {
        rx_node *w[3] = {ox_call2(c, "greater", x, ox_scalar(c, RX_DT_F32, 0)), x,
                         ox_call2(c, "multiply", x, ox_scalar(c, RX_DT_F32, ox_attr_f(c, "alpha", 0.01)))};
        y = ox_call(c, "where", w, 3, NULL);
    }
    return q_out(c, y, 3, 4, in_dtype(c, 0));
}

static bool qlinear_gap(ox_ctx *c)
{
    rx_node *x = dq_in(c, 0);
    int nd = x ? ox_ndim(x) : 0;
    if (nd < 3) {
        if (x) ox_err(c, "input must have a batch, channel and spatial axes (rank >= 3)");
        return false;
    }
    bool last = ox_attr_i(c, "channels_last", 0) != 0;
    int64_t axes[8];
    int n = 0;
    for (int i = last ? 1 : 2; i < (last ? nd - 1 : nd) && n < 8; i++) axes[n++] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, axes, n));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    return q_out(c, ox_call1(c, "mean", x, m), 3, 4, in_dtype(c, 0));
}

static bool qlinear_concat(ox_ctx *c)
{
    int nin = ox_nin(c);
    if (nin < 5 || (nin - 2) % 3) {
        ox_err(c, "takes y_scale, y_zero_point, then (x, x_scale, x_zero_point) per operand");
        return false;
    }
    int n = (nin - 2) / 3;
    rx_node **v = RX_NEWN(c->a, rx_node *, n);
    for (int i = 0; i < n; i++)
        if (!(v[i] = dq_in(c, 2 + 3 * i))) return false;
    int64_t axis = ox_attr_i(c, "axis", 0);
    int ax = ox_norm_axis(c, axis, ox_ndim(v[0]));
    if (ax < 0) return false;
    return q_out(c, ox_concat(c, v, n, ax), 0, 1, in_dtype(c, 2));
}

static bool ms_gelu(ox_ctx *c)
{
    const char *t = c->node->op_type;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    if (!strcmp(t, "QuickGelu")) {
        rx_dtype dt = ox_dtype_of(x);
        rx_node *s = ox_call1(c, "sigmoid", ox_call2(c, "multiply", x, ox_scalar(c, dt, ox_attr_f(c, "alpha", 1.702))), NULL);
        return ox_out_node(c, 0, ox_call2(c, "multiply", x, s));
    }
    if (ox_in(c, 1)) x = ox_call2(c, "add", x, ox_in_node(c, 1)); /* BiasGelu, FastGelu's bias */
    return ox_out_node(c, 0, ox_call1(c, strcmp(t, "FastGelu") ? "nn.gelu" : "nn.gelu_tanh", x, NULL));
}

static bool ms_bias_add(ox_ctx *c)
{
    return ox_out_node(c, 0, ox_call2(c, "add", ox_call2(c, "add", ox_in_node(c, 0), ox_in_node(c, 1)),
                                      ox_in_node(c, 2)));
}

/* x with its last two axes swapped. */
static rx_node *swap_last(ox_ctx *c, rx_node *x)
{
    int nd = x ? ox_ndim(x) : 0;
    if (nd < 2) return x;
    int64_t p[16];
    if (nd > 16) return NULL;
    for (int i = 0; i < nd; i++) p[i] = i;
    p[nd - 2] = nd - 1;
    p[nd - 1] = nd - 2;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, p, nd));
    return ox_call1(c, "permute_dims", x, m);
}

static bool ms_fused_matmul(ox_ctx *c)
{
    if (ox_attr_i(c, "transBatchA", 0) || ox_attr_i(c, "transBatchB", 0)) {
        ox_err(c, "transBatchA / transBatchB are not supported");
        return false;
    }
    rx_node *a = ox_in_node(c, 0), *b = ox_in_node(c, 1);
    if (!a || !b) return false;
    if (ox_attr_i(c, "transA", 0)) a = swap_last(c, a);
    if (ox_attr_i(c, "transB", 0)) b = swap_last(c, b);
    rx_node *y = ox_call2(c, "matmul", a, b);
    double alpha = ox_attr_f(c, "alpha", 1.0);
    if (y && alpha != 1.0) y = ox_call2(c, "multiply", y, ox_scalar(c, ox_dtype_of(y), alpha));
    return ox_out_node(c, 0, y);
}

static bool ms_skip_layer_norm(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *skip = ox_in_node(c, 1), *g = ox_in_node(c, 2);
    if (!x || !skip || !g) return false;
    if ((ox_nout(c) > 1 && c->node->output[1] && *c->node->output[1]) ||
        (ox_nout(c) > 2 && c->node->output[2] && *c->node->output[2])) {
        ox_err(c, "the mean and inverse standard deviation outputs are not supported");
        return false;
    }
    rx_node *s = ox_call2(c, "add", x, skip);
    if (ox_in(c, 4)) s = ox_call2(c, "add", s, ox_in_node(c, 4));
    int nd = s ? ox_ndim(s) : 0;
    if (nd < 1) return false;
    int64_t ax = nd - 1;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &ax, 1));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-12)));
    rx_node *b = ox_in(c, 3) ? ox_in_node(c, 3) : g;
    if (!ox_in(c, 3)) ox_aset(c, m, "center", ox_abool(c, false));
    rx_node *a[3] = {s, g, b};
    if (!ox_out_node(c, 0, ox_call(c, "nn.layer_norm", a, 3, m))) return false;
    return ox_nout(c) < 4 || !c->node->output[3] || !*c->node->output[3] || ox_out_node(c, 3, s);
}

static const ox_opdef ms_ops[] = {
    {"QLinearAdd", qlinear_binary, ""}, {"QLinearMul", qlinear_binary, ""},
    {"QLinearSigmoid", qlinear_unary, ""}, {"QLinearLeakyRelu", qlinear_unary, "alpha"},
    {"QLinearGlobalAveragePool", qlinear_gap, "channels_last"},
    {"QLinearConcat", qlinear_concat, "axis"},
    {"Gelu", ms_gelu, ""}, {"BiasGelu", ms_gelu, ""}, {"FastGelu", ms_gelu, ""},
    {"QuickGelu", ms_gelu, "alpha"}, {"BiasAdd", ms_bias_add, ""},
    {"FusedMatMul", ms_fused_matmul, "alpha,transA,transB,transBatchA,transBatchB"},
    {"SkipLayerNormalization", ms_skip_layer_norm, "epsilon"},
};

const ox_opdef *ox_contrib_find(const char *op_type)
{
    for (int i = 0; i < RX_COUNTOF(ms_ops); i++)
        if (!strcmp(ms_ops[i].op_type, op_type)) return &ms_ops[i];
    return NULL;
}
