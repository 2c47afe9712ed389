/*
 * onnx_quant.c — the ONNX importer's linear quantization, as compositions (the
 * arithmetic of the ONNX reference, rounding half to even as `round`):
 *   QuantizeLinear     y = clip(round(x / scale) + zp, qmin, qmax) as zp's dtype (u8
 *                      without zp); scale and zp scalars or 1-d along `axis`
 *   DequantizeLinear   y = (x - zp) * scale in f32
 *   DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255, zp =
 *                      clip(round(-min(0, min x) / scale), 0, 255), y as QuantizeLinear
 *   MatMulInteger      (a - a_zp) @ (b - b_zp) in i32 (a_zp per row, b_zp per column)
 *   QLinearMatMul      round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale))
 *                      + y_zp, saturated to y_zp's dtype
 *   QLinearConv        the same around ConvInteger's i32 convolution plus the i32 bias
 *                      (w_scale per tensor or per output channel)
 */
#include <string.h>

#include "onnx_int.h"

/* v (a scalar or a 1-d tensor) shaped to broadcast along axis ax of a rank-nd tensor. */
static rx_node *along(ox_ctx *c, rx_node *v, int64_t axis, int nd)
{
    if (!v || ox_ndim(v) != 1 || nd <= 1) return v;
    int ax = ox_norm_axis(c, axis, nd);
    if (ax < 0 || !ox_need_dims(c, v)) return NULL;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == ax ? v->sinfo->dims[0] : ox_lit(c, 1);
    return ox_reshape(c, v, d, nd);
}

/* round(q) + zp saturated to dtype dt's range, as dt (q, zp f32). */
static rx_node *saturate(ox_ctx *c, rx_node *q, rx_node *zpf, rx_dtype dt)
{
    double lo = dt == RX_DT_U8 ? 0 : dt == RX_DT_I8 ? -128 : dt == RX_DT_U16 ? 0 : -32768;
    double hi = dt == RX_DT_U8 ? 255 : dt == RX_DT_I8 ? 127 : dt == RX_DT_U16 ? 65535 : 32767;
    if (dt == RX_DT_I32) {
        lo = -2147483648.0;
        hi = 2147483647.0;
    }
    rx_node *r = ox_call1(c, "round", q, NULL);
    if (zpf) r = ox_call2(c, "add", r, zpf);
    r = ox_call2(c, "minimum", ox_call2(c, "maximum", r, ox_scalar(c, RX_DT_F32, lo)),
                 ox_scalar(c, RX_DT_F32, hi));
    return ox_astype(c, r, dt);
}

static bool quant_dtype_ok(ox_ctx *c, rx_dtype dt)
{
    if (dt == RX_DT_U8 || dt == RX_DT_I8 || dt == RX_DT_U16 || dt == RX_DT_I16 || dt == RX_DT_I32)
        return true;
    ox_err(c, "quantized dtype %s is not supported (u8, i8, u16, i16, i32)", rx_dtype_name(dt));
    return false;
}

bool ox_c_quantize(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *s = ox_in_node(c, 1);
    rx_node *zp = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
    if (!x || !s || (ox_in(c, 2) && !zp)) return false;
    int nd = ox_ndim(x);
    int64_t axis = ox_attr_i(c, "axis", 1);
    bool deq = !strcmp(c->node->op_type, "DequantizeLinear");
    rx_dtype qt = deq ? ox_dtype_of(x) : zp ? ox_dtype_of(zp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    s = along(c, ox_astype(c, s, RX_DT_F32), axis, nd);
    rx_node *zpf = zp ? along(c, ox_astype(c, zp, RX_DT_F32), axis, nd) : NULL;
    if (deq) {
        rx_node *v = ox_astype(c, x, RX_DT_F32);
        if (zpf) v = ox_call2(c, "subtract", v, zpf);
        return ox_out_node(c, 0, ox_call2(c, "multiply", v, s));
    }
    x = ox_astype(c, x, RX_DT_F32);
    return ox_out_node(c, 0, saturate(c, ox_call2(c, "divide", x, s), zpf, qt));
}

bool ox_c_dynamic_quantize(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_node *zero = ox_scalar(c, RX_DT_F32, 0);
    rx_node *lo = ox_call2(c, "minimum", ox_call1(c, "min", x, NULL), zero);
    rx_node *hi = ox_call2(c, "maximum", ox_call1(c, "max", x, NULL), zero);
    rx_node *s = ox_call2(c, "divide", ox_call2(c, "subtract", hi, lo), ox_scalar(c, RX_DT_F32, 255));
    rx_node *zp = saturate(c, ox_call2(c, "divide", ox_call1(c, "negative", lo, NULL), s), NULL, RX_DT_U8);
    rx_node *y = saturate(c, ox_call2(c, "divide", x, s), ox_astype(c, zp, RX_DT_F32), RX_DT_U8);
    return ox_out_node(c, 0, y) && (ox_nout(c) < 2 || ox_out_node(c, 1, s)) &&
           (ox_nout(c) < 3 || ox_out_node(c, 2, zp));
}

/* (v - zp) in i32; zp along axis `ax` of v's rank (a per-row or per-column zero point). */
static rx_node *centered(ox_ctx *c, rx_node *v, int zi, int ax)
{
    v = ox_astype(c, v, RX_DT_I32);
    if (!v || !ox_in(c, zi)) return v;
    rx_node *zp = ox_astype(c, ox_in_node(c, zi), RX_DT_I32);
    return ox_call2(c, "subtract", v, along(c, zp, ax, ox_ndim(v)));
}

bool ox_c_matmul_integer(ox_ctx *c)
{
    bool q = !strcmp(c->node->op_type, "QLinearMatMul");
    int ai = 0, bi = q ? 3 : 1;
    rx_node *a = ox_in_node(c, ai), *b = ox_in_node(c, bi);
    if (!a || !b) return false;
    int na = ox_ndim(a), nb = ox_ndim(b);
    rx_node *p = ox_call2(c, "matmul", centered(c, a, 2, na - 2 >= 0 ? na - 2 : 0),
                          centered(c, b, q ? 5 : 3, nb - 1));
    if (!q) return ox_out_node(c, 0, p);
    rx_node *as = ox_in_node(c, 1), *bs = ox_in_node(c, 4), *ys = ox_in_node(c, 6);
    rx_node *yzp = ox_in(c, 7) ? ox_in_node(c, 7) : NULL;
    if (!as || !bs || !ys) return false;
    rx_dtype qt = yzp ? ox_dtype_of(yzp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    rx_node *k = ox_call2(c, "divide", ox_call2(c, "multiply", as, bs), ys);
    rx_node *v = ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32), k);
    return ox_out_node(c, 0, saturate(c, v, yzp ? ox_astype(c, yzp, RX_DT_F32) : NULL, qt));
}

bool ox_c_qlinear_conv(ox_ctx *c)
{
    rx_node *p = ox_conv_integer(c, 0, 2, 3, 5, 8);
    rx_node *xs = ox_in_node(c, 1), *ws = ox_in_node(c, 4), *ys = ox_in_node(c, 6);
    rx_node *yzp = ox_in(c, 7) ? ox_in_node(c, 7) : NULL;
    if (!p || !xs || !ws || !ys) return false;
    rx_dtype qt = yzp ? ox_dtype_of(yzp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    rx_node *k = ox_call2(c, "divide", ox_call2(c, "multiply", xs, ws), ys);
    rx_node *v = ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32), along(c, k, 1, ox_ndim(p)));
    return ox_out_node(c, 0, saturate(c, v, yzp ? ox_astype(c, yzp, RX_DT_F32) : NULL, qt));
}
