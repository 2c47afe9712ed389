/*
 * onnx_pool_indices.c — MaxPool's second output, Indices (2-d), as a composition: the
 * flat offset into x (N, C, H, W) of each window's maximum, the spatial part row-major
 * (storage_order 0: row stride rs = W, column stride cs = 1) or column-major
 * (storage_order 1: rs = 1, cs = H).
 *
 * Per window tap t = (i, j) (kernel_shape kh x kw), the tapped values are a strided
 * slice of x padded with the dtype's lowest finite value (the padding then never
 * wins over a real element), rows i * dil_h + s_h * o_h, columns likewise; their flat
 * offsets are
 *     P_t = n * C*H*W + c * H*W + o_h * s_h * rs + o_w * s_w * cs
 *           + (i * dil_h - pad_top) * rs + (j * dil_w - pad_left) * cs
 * i.e. one base grid B (from iotas) plus a per-tap constant. A running maximum over the
 * taps in row-major order keeps the first tap that strictly beats the best so far
 * (greater, then where on values and offsets), so ties pick the first in window order
 * (ONNX Runtime's choice).
 *
 * Needs literal H, W and output extents; cost: kh * kw slices and 3 elementwise ops
 * per tap (the graph grows with the window).
 *
 * Symbolic dims (SegNet exported with a dynamic image size): the offsets are not built
 * from the grid but read, tap by tap, from a tensor of every element's own flat offset
 * (an arange over N*C*H*W reshaped to x's shape, or to (N, C, W, H) and transposed for
 * column-major), padded and sliced exactly as x is; the end padding is the pads plus a
 * stride (a ceil_mode window may start in the last stride), each tap's slice pinned to
 * the pool's output dims. Costs one i64 tensor of x's size more than the literal path.
 * Measured (zoo8 segnet at 256x256, 64 channels, relax-run --profile minimums at load 6):
 * the composition's pad, arange, slice and greater / where kernels take about 17 ms a
 * call beside 11.5 ms for the model's eight convolutions (relax / ONNX Runtime 2.4 for
 * the model): a pooling kernel that writes the argmax with the maximum is the fix left.
 */
#include <float.h>
#include <string.h>

#include "onnx_int.h"

/* The tapped values of tap (i, j) from padded xp: rows i*dh, i*dh + sh, ... (oh of
 * them), columns likewise. */
static rx_node *tap_values(ox_ctx *c, rx_node *xp, int64_t i, int64_t j, const int64_t *s,
                           const int64_t *dil, int64_t oh, int64_t ow)
{
    int64_t axes[2] = {2, 3}, b[2] = {i * dil[0], j * dil[1]};
    int64_t e[2] = {b[0] + s[0] * (oh - 1) + 1, b[1] + s[1] * (ow - 1) + 1};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, 2));
    ox_aset(c, m, "begin", ox_aints(c, b, 2));
    ox_aset(c, m, "end", ox_aints(c, e, 2));
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    return ox_call1(c, "strided_slice", xp, m);
}

/* x * k as i64 (k a literal). */
static rx_node *times(ox_ctx *c, rx_node *x, int64_t k)
{
    return ox_call2(c, "multiply", x, ox_scalar(c, RX_DT_I64, (double)k));
}

/* One tap of the running argmax: v (values) and p (their offsets) replace *best and *idx
 * where v is strictly greater (the first tap seeds them). */
static bool keep_max(ox_ctx *c, rx_node **best, rx_node **idx, rx_node *v, rx_node *p)
{
    if (!v || !p) return false;
    if (!*best) {
        *best = v;
        *idx = p;
        return true;
    }
    rx_node *up = ox_call2(c, "greater", v, *best);
    rx_node *wv[3] = {up, v, *best}, *wi[3] = {up, p, *idx};
    *best = ox_call(c, "where", wv, 3, NULL);
    *idx = ox_call(c, "where", wi, 3, NULL);
    return *best && *idx;
}

/* pad_width for a 4-d tensor padded in its spatial dims only. */
static rx_node *pad4(ox_ctx *c, rx_node *x, const int64_t sp[4], double value)
{
    int64_t pw[8] = {0, 0, 0, 0, sp[0], sp[2], sp[1], sp[3]};
    rx_attr *pm = ox_amap(c);
    ox_aset(c, pm, "pad_width", ox_aints(c, pw, 8));
    ox_aset(c, pm, "pad_value", ox_afloat(c, value));
    return ox_call1(c, "nn.pad", x, pm);
}

/* Tap (i, j) of padded xp as a strided slice with symbolic ends, pinned to yd. */
static rx_node *tap_sym(ox_ctx *c, rx_node *xp, int64_t i, int64_t j, const int64_t *s,
                        const int64_t *dil, rx_expr **yd)
{
    int64_t axes[2] = {2, 3}, st[2] = {s[0], s[1]};
    rx_expr *b[2] = {ox_lit(c, i * dil[0]), ox_lit(c, j * dil[1])}, *e[2], *sd[2];
    for (int a = 0; a < 2; a++) {
        rx_expr *span = rx_e_binary(c->a, RX_E_MUL, ox_lit(c, st[a]),
                                    rx_e_binary(c->a, RX_E_SUB, yd[2 + a], ox_lit(c, 1)));
        e[a] = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, b[a],
                                      rx_e_binary(c->a, RX_E_ADD, span, ox_lit(c, 1))));
        sd[a] = ox_lit(c, st[a]);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, 2));
    ox_aset(c, m, "begin", ox_aexprs(c, b, 2));
    ox_aset(c, m, "end", ox_aexprs(c, e, 2));
    ox_aset(c, m, "strides", ox_aexprs(c, sd, 2));
    return ox_match_dims(c, ox_call1(c, "strided_slice", xp, m), yd, 4);
}

/* The symbolic-dims path (see the header). */
static bool indices_sym(ox_ctx *c, rx_node *x, rx_node *y, const int64_t k[2], const int64_t s[2],
                        const int64_t dil[2], const int64_t pads[4], bool col_major, double lowest)
{
    rx_expr **d = x->sinfo->dims, **yd = y->sinfo->dims;
    rx_expr *cm[4] = {d[0], d[1], d[3], d[2]};
    static const int64_t swap[4] = {0, 1, 3, 2};
    rx_node *flat = ox_iota(c, ox_simp(c, ox_prod(c, d, 0, 4)), 0, 1, RX_DT_I64);
    if (col_major) {
        rx_attr *pm = ox_amap(c);
        ox_aset(c, pm, "axes", ox_aints(c, swap, 4));
        flat = ox_call1(c, "permute_dims", ox_reshape(c, flat, cm, 4), pm);
    } else {
        flat = ox_reshape(c, flat, d, 4);
    }
    int64_t sp[4] = {pads[0], pads[1], pads[2] + s[0], pads[3] + s[1]};
    rx_node *xp = pad4(c, x, sp, lowest), *fp = pad4(c, flat, sp, -1.0);
    if (!xp || !fp) return false;
    rx_node *best = NULL, *idx = NULL;
    for (int64_t i = 0; i < k[0]; i++)
        for (int64_t j = 0; j < k[1]; j++)
            if (!keep_max(c, &best, &idx, tap_sym(c, xp, i, j, s, dil, yd),
                          tap_sym(c, fp, i, j, s, dil, yd)))
                return false;
    return ox_out_node(c, 1, idx);
}

bool ox_pool_indices(ox_ctx *c, rx_node *x, rx_node *y, const int64_t k[2],
                     const int64_t s[2], const int64_t dil[2], const int64_t pads[4],
                     bool col_major)
{
    rx_expr **d = x->sinfo->dims, **yd = y->sinfo->dims;
    int64_t C, H, W, oh, ow;
    rx_dtype dt = ox_dtype_of(x);
    if (ox_ndim(x) != 4 || !y || ox_ndim(y) != 4 || !rx_dtype_is_float(dt)) {
        ox_err(c, "the Indices output needs a 2-d pool of a float input");
        return false;
    }
    double lowest = dt == RX_DT_F64 ? -DBL_MAX : dt == RX_DT_F32 ? -FLT_MAX : -65504.0;
    if (!rx_expr_is_const(d[1], &C) || !rx_expr_is_const(d[2], &H) ||
        !rx_expr_is_const(d[3], &W) || !rx_expr_is_const(yd[2], &oh) ||
        !rx_expr_is_const(yd[3], &ow))
        return indices_sym(c, x, y, k, s, dil, pads, col_major, lowest);
    /* pad so every tap's slice stays inside (ceil_mode may read past the written pads) */
    int64_t pw[8] = {0, 0, 0, 0, pads[0], 0, pads[1], 0};
    int64_t need[2] = {(oh - 1) * s[0] + (k[0] - 1) * dil[0] + 1,
                       (ow - 1) * s[1] + (k[1] - 1) * dil[1] + 1};
    int64_t have[2] = {pads[0] + H, pads[1] + W};
    for (int a = 0; a < 2; a++) pw[5 + 2 * a] = need[a] > have[a] ? need[a] - have[a] : 0;
    rx_attr *pm = ox_amap(c);
    ox_aset(c, pm, "pad_width", ox_aints(c, pw, 8));
    ox_aset(c, pm, "pad_value", ox_afloat(c, lowest));
    rx_node *xp = ox_call1(c, "nn.pad", x, pm);
    int64_t rs = col_major ? 1 : W, cs = col_major ? H : 1;
    /* B = n * C*H*W + c * H*W + o_h * s_h * rs + o_w * s_w * cs */
    rx_node *base = ox_call2(c, "add",
        ox_call2(c, "add", times(c, ox_iota(c, d[0], 0, 4, RX_DT_I64), C * H * W),
                 times(c, ox_iota(c, d[1], 1, 4, RX_DT_I64), H * W)),
        ox_call2(c, "add", times(c, ox_iota(c, ox_lit(c, oh), 2, 4, RX_DT_I64), s[0] * rs),
                 times(c, ox_iota(c, ox_lit(c, ow), 3, 4, RX_DT_I64), s[1] * cs)));
    if (!xp || !base) return false;
    rx_node *best = NULL, *idx = NULL;
    for (int64_t i = 0; i < k[0]; i++)
        for (int64_t j = 0; j < k[1]; j++) {
            rx_node *v = tap_values(c, xp, i, j, s, dil, oh, ow);
            int64_t off = (i * dil[0] - pads[0]) * rs + (j * dil[1] - pads[1]) * cs;
            rx_node *p = ox_call2(c, "add", base, ox_scalar(c, RX_DT_I64, (double)off));
            if (!keep_max(c, &best, &idx, v, p)) return false;
        }
    return ox_out_node(c, 1, idx);
}
