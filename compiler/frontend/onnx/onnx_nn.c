/*
 * onnx_nn.c — the ONNX importer's neural-network converters (Reduce* are in
 * onnx_reduce.c): ArgMax ArgMin,
 * LayerNormalization (with Mean and InvStdDev), BatchNormalization (inference), Conv
 * ConvTranspose (1-d to 3-d; float Conv3d factors and one-group T taps as nn.conv2d over
 * folded axes: conv3d_as_2d, conv3d_taps), MaxPool AveragePool LpPool (1-d, 2-d, 3-d; explicit or auto pads), GlobalAveragePool
 * GlobalMaxPool GlobalLpPool, LpNormalization.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

rx_node *ox_slice1(ox_ctx *c, rx_node *x, int64_t axis, int64_t begin, int64_t end, int64_t step)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &axis, 1));
    ox_aset(c, m, "begin", ox_aints(c, &begin, 1));
    ox_aset(c, m, "end", ox_aints(c, &end, 1));
    ox_aset(c, m, "strides", ox_aints(c, &step, 1));
    return ox_call1(c, "strided_slice", x, m);
}

/* x reversed along axis ax: strided_slice from the last element down, stride -1. */
rx_node *ox_flip(ox_ctx *c, rx_node *x, int ax)
{
    return ox_slice1(c, x, ax, -1, -((int64_t)1 << 62), -1);
}

/* ArgMax ArgMin; select_last_index = 1 runs on x reversed along the axis and maps the
 * first index i found there back to d - 1 - i (the axis extent d must be a literal). */
bool ox_c_argreduce(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    int64_t axis = ox_attr_i(c, "axis", 0), d = 0;
    bool last = ox_attr_i(c, "select_last_index", 0) != 0;
    if (last) {
        int nd = ox_ndim(x), ax = ox_norm_axis(c, axis, nd > 0 ? nd : 1);
        if (ax < 0 || !ox_need_dims(c, x)) return false;
        if (!rx_expr_is_const(ox_simp(c, x->sinfo->dims[ax]), &d)) {
            ox_err(c, "select_last_index = 1 needs a static extent along axis %d", ax);
            return false;
        }
        x = ox_flip(c, x, ax);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, axis));
    ox_aset(c, m, "keepdims", ox_abool(c, ox_attr_i(c, "keepdims", 1) != 0));
    rx_node *r = ox_call1(c, !strcmp(c->node->op_type, "ArgMax") ? "argmax" : "argmin", x, m);
    if (r && last) r = ox_call2(c, "subtract", ox_scalar(c, ox_dtype_of(r), (double)(d - 1)), r);
    return ox_out_node(c, 0, r);
}

/* ---------------------------------------------------------------- nn */

bool ox_c_layer_norm(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *g = ox_in_node(c, 1);
    int nd = ox_ndim(x);
    if (!x || !g) return false;
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", -1), nd > 0 ? nd : 1);
    if (ax < 0) return false;
    int64_t *axes = RX_NEWN(c->a, int64_t, nd);
    for (int i = ax; i < nd; i++) axes[i - ax] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, nd - ax));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-5)));
    rx_node *b = ox_in(c, 2) ? ox_in_node(c, 2) : g;
    if (!ox_in(c, 2)) ox_aset(c, m, "center", ox_abool(c, false));
    rx_node *a[3] = {x, g, b};
    if (!ox_out_node(c, 0, ox_call(c, "nn.layer_norm", a, 3, m))) return false;
    if (ox_nout(c) > 1) { /* Mean and InvStdDev, reduced dims kept as 1 */
        rx_attr *r = ox_amap(c);
        ox_aset(c, r, "axis", ox_aints(c, axes, nd - ax));
        ox_aset(c, r, "keepdims", ox_abool(c, true));
        rx_node *mean = ox_call1(c, "mean", x, r), *dx = ox_call2(c, "subtract", x, mean);
        rx_node *var = ox_call1(c, "mean", ox_call2(c, "multiply", dx, dx), r);
        rx_node *inv = ox_call1(c, "rsqrt", ox_call2(c, "add", var, ox_scalar(c, ox_dtype_of(x),
                                                        ox_attr_f(c, "epsilon", 1e-5))), NULL);
        if (*c->node->output[1] && !ox_out_node(c, 1, mean)) return false;
        if (ox_nout(c) > 2 && *c->node->output[2] && !ox_out_node(c, 2, inv)) return false;
    }
    return true;
}

/* Training-mode BatchNormalization (opset 14+, training_mode = 1): the batch's mean and
 * population variance over every axis but 1 (a[3], a[4] become them, so y normalizes
 * with the batch statistics), and the running outputs 1 and 2,
 * input_mean * momentum + batch_mean * (1 - momentum) (likewise the variance). */
static bool batch_stats(ox_ctx *c, rx_node *a[5])
{
    int nd = ox_ndim(a[0]);
    if (nd < 2) {
        ox_err(c, "needs an input of rank 2 or more");
        return false;
    }
    int64_t ax[16];
    if (nd > 17) {
        ox_err(c, "input rank %d is too large", nd);
        return false;
    }
    for (int i = 0, k = 0; i < nd; i++)
        if (i != 1) ax[k++] = i;
    rx_node *stat[2];
    for (int s = 0; s < 2; s++) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aints(c, ax, nd - 1));
        if (!(stat[s] = ox_call1(c, s ? "variance" : "mean", a[0], m))) return false;
    }
    double mom = ox_attr_f(c, "momentum", 0.9);
    rx_dtype dt = ox_dtype_of(a[3]);
    for (int s = 0; s < 2; s++) {
        if (ox_nout(c) > 1 + s) {
            rx_node *run = ox_call2(c, "add", ox_call2(c, "multiply", a[3 + s], ox_scalar(c, dt, mom)),
                                    ox_call2(c, "multiply", stat[s], ox_scalar(c, dt, 1 - mom)));
            if (!ox_out_node(c, 1 + s, run)) return false;
        }
        a[3 + s] = stat[s];
    }
    return true;
}

bool ox_c_batch_norm(ox_ctx *c)
{
    bool training = ox_attr_i(c, "training_mode", 0) != 0;
    if ((ox_nout(c) > 1 && !training) || !ox_attr_i(c, "is_test", 1) || ox_nout(c) > 3) {
        ox_err(c, "this training mode is not supported (inference, or training_mode = 1 "
               "with at most 3 outputs)");
        return false;
    }
    rx_node *a[5];
    for (int i = 0; i < 5; i++) a[i] = ox_in_node(c, i);
    if (!a[0] || (training && !batch_stats(c, a))) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-5)));
    rx_node *t = ox_call(c, "nn.batch_norm", a, 5, m);
    return t && ox_out_node(c, 0, ox_field(c, t, 0, "bn"));
}

rx_node *ox_field(ox_ctx *c, rx_node *t, int i, const char *name)
{
    rx_node *g = rx_n_get_item(c->m, t, i);
    g->sinfo = t->sinfo->fields[i];
    rx_node *v = rx_n_var(c->m, name, g->sinfo, true);
    rx_binding b = {v, g, NULL, false, 0};
    RX_VEC_PUSH(c->binds, b);
    return v;
}

/* Window ops: ONNX's sr spatial dims (1, 2 or 3) onto the op's S = max(sr, 2) (a 1-d
 * op is lifted to 2-d with a unit H axis); per-dim arrays are indexed by the op's
 * spatial dim, ONNX dim j at S - sr + j. */
enum { MAXSP = 3 };

static int op_sp(int sr) { return sr == 1 ? 2 : sr; }

/* Pads of a window op (x is the lifted input): explicit pads, or auto_pad from literal
 * input dims; pads = before[0..S), after[0..S). */
static bool window_pads(ox_ctx *c, const rx_node *x, const int64_t *k, const int64_t *s,
                        const int64_t *dil, int64_t pads[2 * MAXSP], int sr)
{
    int np, S = op_sp(sr), i0 = S - sr;
    const int64_t *p = ox_attr_ints(c, "pads", &np);
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    memset(pads, 0, 2 * MAXSP * sizeof *pads);
    if (np >= 0) {
        if (np != 2 * sr) {
            ox_err(c, "pads must have %d values for a %d-d window", 2 * sr, sr);
            return false;
        }
        for (int j = 0; j < sr; j++) {
            pads[i0 + j] = p[j];
            pads[S + i0 + j] = p[sr + j];
        }
    }
    if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) return true;
    if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) {
        ox_err(c, "auto_pad '%s' is not supported", ap);
        return false;
    }
    for (int i = i0; i < S; i++) {
        int64_t in;
        if (!rx_expr_is_const(x->sinfo->dims[2 + i], &in)) {
            ox_err(c, "auto_pad %s needs literal spatial dims", ap);
            return false;
        }
        int64_t out = (in + s[i] - 1) / s[i];
        int64_t total = (out - 1) * s[i] + (k[i] - 1) * dil[i] + 1 - in;
        if (total < 0) total = 0;
        int64_t small = total / 2, big = total - small;
        bool upper = !strcmp(ap, "SAME_UPPER");
        pads[i] = upper ? small : big;
        pads[S + i] = upper ? big : small;
    }
    return true;
}

/* A window attribute for sr spatial dims (the lifted H axis of a 1-d op gets 1). */
static bool ints_sp(ox_ctx *c, const char *name, int64_t dflt, int64_t out[MAXSP], int sr)
{
    int n, S = op_sp(sr), i0 = S - sr;
    const int64_t *v = ox_attr_ints(c, name, &n);
    for (int i = 0; i < S; i++) out[i] = i < i0 ? 1 : n < 0 ? dflt : 0;
    if (n < 0) return true;
    if (n != sr) {
        ox_err(c, "%s must have %d values (1-d, 2-d and 3-d windows are supported)", name, sr);
        return false;
    }
    for (int j = 0; j < sr; j++) out[i0 + j] = v[j];
    return true;
}

/* The spatial rank of a window op's input x (and weight w when given): 1, 2 or 3, or
 * 0 after an error naming `what`. */
static int window_rank(ox_ctx *c, const rx_node *x, const rx_node *w, const char *what)
{
    if (!ox_need_dims(c, x) || (w && !ox_need_dims(c, w))) return 0;
    int sr = x->sinfo->ndim - 2;
    if (sr < 1 || sr > 3 || (w && w->sinfo->ndim != x->sinfo->ndim)) {
        ox_err(c, "only 1-d, 2-d and 3-d %s (3-d to 5-d input%s) is supported", what,
               w ? " and weight" : "");
        return 0;
    }
    return sr;
}

/* A 3-d (N, C, L) value as 4-d (N, C, 1, L); others stay. */
static rx_node *lift(ox_ctx *c, rx_node *x)
{
    if (!x || ox_ndim(x) != 3) return x;
    rx_expr **d = x->sinfo->dims, *f[4] = {d[0], d[1], ox_lit(c, 1), d[2]};
    return ox_reshape(c, x, f, 4);
}

/* The result of a lifted window op back to 3-d (sr = 1). */
static rx_node *unlift(ox_ctx *c, rx_node *y, int sr)
{
    if (!y || sr != 1 || !ox_need_dims(c, y)) return y;
    rx_expr **d = y->sinfo->dims, *f[3] = {d[0], d[1], d[3]};
    return ox_reshape(c, y, f, 3);
}

/* The name of the S-d form of a window op: base "nn.conv%dd" etc. */
static const char *sp_name(ox_ctx *c, const char *fmt, int S)
{
    char buf[32];
    snprintf(buf, sizeof buf, fmt, S);
    return rx_arena_strdup(c->a, buf);
}

/* y (N, C, spatial S) plus the bias input `bias` (C) per channel, when bias >= 0 and
 * the input is present. */
static rx_node *add_bias(ox_ctx *c, rx_node *y, int bias, int S)
{
    if (!y || bias < 0 || !ox_in(c, bias)) return y;
    rx_expr *d[2 + MAXSP] = {ox_lit(c, 1), y->sinfo->dims[1]};
    for (int i = 0; i < S; i++) d[2 + i] = ox_lit(c, 1);
    return ox_call2(c, "add", y, ox_reshape(c, ox_in_node(c, bias), d, 2 + S));
}

/* The conv op call with the window attributes (output_padding when op is given), the
 * bias (input `bias`, when >= 0 and present) added per output channel, the result
 * unlifted. */
static rx_node *conv_out(ox_ctx *c, const char *fmt, rx_node *x, rx_node *w, const int64_t *s,
                         const int64_t *pads, const int64_t *dil, const int64_t *op, int sr,
                         int bias)
{
    int S = op_sp(sr);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "strides", ox_aints(c, s, S));
    ox_aset(c, m, "padding", ox_aints(c, pads, 2 * S));
    if (op) ox_aset(c, m, "output_padding", ox_aints(c, op, S));
    ox_aset(c, m, "dilation", ox_aints(c, dil, S));
    ox_aset(c, m, "groups", ox_aint(c, ox_attr_i(c, "group", 1)));
    rx_node *a[2] = {x, w};
    return unlift(c, add_bias(c, ox_call(c, sp_name(c, fmt, S), a, 2, m), bias, S), sr);
}

/* The literal kernel dims of a lifted weight w (1 where symbolic). */
static void kernel_dims(const rx_node *w, int S, int64_t k[MAXSP])
{
    for (int i = 0; i < S; i++) {
        k[i] = 1;
        rx_expr_is_const(w->sinfo->dims[2 + i], &k[i]);
    }
}

/* ConvInteger's operand i in i32 less its zero point (input zi; a 1-d one per output
 * channel for the weight). */
static rx_node *int_operand(ox_ctx *c, int i, int zi)
{
    rx_node *v = ox_astype(c, ox_in_node(c, i), RX_DT_I32);
    if (!v || !ox_in(c, zi)) return v;
    rx_node *zp = ox_astype(c, ox_in_node(c, zi), RX_DT_I32);
    int nd = ox_ndim(v);
    if (zp && ox_ndim(zp) == 1 && nd > 1 && ox_need_dims(c, zp)) {
        rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
        for (int k = 0; k < nd; k++) d[k] = k ? ox_lit(c, 1) : zp->sinfo->dims[0];
        zp = ox_reshape(c, zp, d, nd);
    }
    return ox_call2(c, "subtract", v, zp);
}

/* permute_dims(x, axes) of a 5-d x */
static rx_node *permute5(ox_ctx *c, rx_node *x, const int64_t axes[5])
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, 5));
    return ox_call1(c, "permute_dims", x, m);
}

/* A float 3-d convolution with one tap in T (kernel (1, kh, kw), stride and dilation 1
 * and no padding in T: R(2+1)D's spatial factor, a per-frame convolution) or one tap in
 * H and W (kernel (kt, 1, 1), stride 1 and no padding in H and W: the temporal factor) is
 * a 2-d convolution over folded axes: (N, C, T, H, W) as (N * T, C, H, W) (a permute
 * each way) or as (N, C, T, H * W) (reshapes only). nn.conv3d has no library: its
 * generated loops took 30-175 ms per layer of zoo5's R(2+1)D (36-47x ONNX Runtime);
 * nn.conv2d takes the convolution library. NULL when neither form applies. */
static rx_node *conv3d_as_2d(ox_ctx *c, rx_node *x, rx_node *w, const int64_t *k,
                             const int64_t *s, const int64_t *pads, const int64_t *dil, int bias)
{
    bool temporal = k[1] == 1 && k[2] == 1 && s[1] == 1 && s[2] == 1 && dil[1] == 1 &&
                    dil[2] == 1 && !pads[1] && !pads[2] && !pads[4] && !pads[5];
    bool spatial = k[0] == 1 && s[0] == 1 && dil[0] == 1 && !pads[0] && !pads[3];
    if ((!temporal && !spatial) || !ox_need_dims(c, x) || !ox_need_dims(c, w) ||
        !rx_dtype_is_float((rx_dtype)x->sinfo->dtype) || ox_ndim(x) != 5 || ox_ndim(w) != 5)
        return NULL;
    rx_expr **xd = x->sinfo->dims, **wd = w->sinfo->dims;
    static const int64_t to_ntc[5] = {0, 2, 1, 3, 4}; /* its own inverse */
    rx_expr *w4[4] = {wd[0], wd[1], temporal ? wd[2] : wd[3], temporal ? ox_lit(c, 1) : wd[4]};
    rx_node *w2 = ox_reshape(c, w, w4, 4), *x4, *y;
    if (temporal) {
        rx_expr *hw = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, xd[3], xd[4]));
        rx_expr *f[4] = {xd[0], xd[1], xd[2], hw};
        int64_t s2[2] = {s[0], 1}, d2[2] = {dil[0], 1}, p2[4] = {pads[0], 0, pads[3], 0};
        x4 = ox_reshape(c, x, f, 4);
        y = x4 && w2 ? conv_out(c, "nn.conv%dd", x4, w2, s2, p2, d2, NULL, 2, bias) : NULL;
        if (!y || !ox_need_dims(c, y)) return NULL;
        rx_expr *o[5] = {xd[0], y->sinfo->dims[1], y->sinfo->dims[2], xd[3], xd[4]};
        return ox_reshape(c, y, o, 5);
    }
    rx_expr *f[4] = {ox_simp(c, rx_e_binary(c->a, RX_E_MUL, xd[0], xd[2])), xd[1], xd[3], xd[4]};
    int64_t s2[2] = {s[1], s[2]}, d2[2] = {dil[1], dil[2]};
    int64_t p2[4] = {pads[1], pads[2], pads[4], pads[5]};
    rx_node *xt = permute5(c, x, to_ntc);
    x4 = xt ? ox_reshape(c, xt, f, 4) : NULL;
    y = x4 && w2 ? conv_out(c, "nn.conv%dd", x4, w2, s2, p2, d2, NULL, 2, bias) : NULL;
    if (!y || !ox_need_dims(c, y)) return NULL;
    rx_expr *o[5] = {xd[0], xd[2], y->sinfo->dims[1], y->sinfo->dims[2], y->sinfo->dims[3]};
    rx_node *y5 = ox_reshape(c, y, o, 5);
    return y5 ? permute5(c, y5, to_ntc) : NULL;
}

/* A float 3-d convolution of one group with 2 to 7 taps in T (a 3-d U-Net's 3x3x3): the
 * T taps folded into channels, one 2-d convolution. x padded in T, permuted to (N, T, C,
 * H, W), tap t's strided slice along T (from t * dil_t, step s_t: OT elements each)
 * concatenated on C = (N * OT, kt * C, H, W); w (O, C, kt, kh, kw) permuted to (O, kt,
 * C, kh, kw) = (O, kt * C, kh, kw); the result (N * OT, O, OH, OW) back to (N, O, OT,
 * OH, OW). kt copies of x for the library's conv2d where nn.conv3d's loops took zoo6
 * unet3d's 3x3x3 layers 0.5-24 s. NULL when the form does not apply. */
static rx_node *conv3d_taps(ox_ctx *c, rx_node *x, rx_node *w, const int64_t *k,
                            const int64_t *s, const int64_t *pads, const int64_t *dil, int bias)
{
    if (k[0] < 2 || k[0] > 7 || ox_attr_i(c, "group", 1) != 1 || !ox_need_dims(c, x) ||
        !ox_need_dims(c, w) || !rx_dtype_is_float((rx_dtype)x->sinfo->dtype) ||
        ox_ndim(x) != 5 || ox_ndim(w) != 5)
        return NULL;
    static const int64_t to_ntc[5] = {0, 2, 1, 3, 4}; /* its own inverse */
    if (pads[0] || pads[3]) {
        int64_t pw[10] = {0, 0, 0, 0, pads[0], pads[3], 0, 0, 0, 0};
        rx_attr *pm = ox_amap(c);
        ox_aset(c, pm, "pad_width", ox_aints(c, pw, 10));
        ox_aset(c, pm, "pad_mode", ox_astr(c, "constant"));
        ox_aset(c, pm, "pad_value", ox_afloat(c, 0));
        x = ox_call1(c, "nn.pad", x, pm);
    }
    rx_node *xt = x ? permute5(c, x, to_ntc) : NULL, *taps[7];
    if (!xt || !ox_need_dims(c, xt)) return NULL;
    rx_expr **td = xt->sinfo->dims;
    rx_expr *ot = rx_e_binary(c->a, RX_E_SUB, td[1], ox_lit(c, (k[0] - 1) * dil[0] + 1));
    ot = rx_e_binary(c->a, RX_E_FLOORDIV, ot, ox_lit(c, s[0]));
    ot = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, ot, ox_lit(c, 1)));
    rx_expr *tap_dims[5] = {td[0], ot, td[2], td[3], td[4]}; /* OT each: the proof's form */
    for (int t = 0; t < k[0]; t++) {
        int64_t back = (k[0] - 1 - t) * dil[0]; /* taps after t: the slice ends that early */
        rx_node *v = ox_slice1(c, xt, 1, t * dil[0], back ? -back : (int64_t)1 << 62, s[0]);
        if (!v || !(taps[t] = ox_match_dims(c, v, tap_dims, 5))) return NULL;
    }
    rx_node *cat = ox_concat(c, taps, (int)k[0], 2);
    if (!cat || !ox_need_dims(c, cat)) return NULL;
    rx_expr **cd = cat->sinfo->dims, **wd = w->sinfo->dims;
    rx_expr *f[4] = {ox_simp(c, rx_e_binary(c->a, RX_E_MUL, cd[0], cd[1])), cd[2], cd[3], cd[4]};
    rx_expr *w4[4] = {wd[0], ox_simp(c, rx_e_binary(c->a, RX_E_MUL, wd[1], wd[2])), wd[3], wd[4]};
    rx_node *wt = permute5(c, w, to_ntc), *x4 = ox_reshape(c, cat, f, 4);
    rx_node *w2 = wt ? ox_reshape(c, wt, w4, 4) : NULL;
    int64_t s2[2] = {s[1], s[2]}, d2[2] = {dil[1], dil[2]};
    int64_t p2[4] = {pads[1], pads[2], pads[4], pads[5]};
    rx_node *y = x4 && w2 ? conv_out(c, "nn.conv%dd", x4, w2, s2, p2, d2, NULL, 2, bias) : NULL;
    if (!y || !ox_need_dims(c, y)) return NULL;
    rx_expr *o[5] = {cd[0], cd[1], y->sinfo->dims[1], y->sinfo->dims[2], y->sinfo->dims[3]};
    rx_node *y5 = ox_reshape(c, y, o, 5);
    return y5 ? permute5(c, y5, to_ntc) : NULL;
}

/* The convolution of x and w (both given) with the node's window attributes, plus the
 * bias input `bias` (when >= 0 and present); NULL after an error. */
static rx_node *conv_of(ox_ctx *c, rx_node *x, rx_node *w, int bias)
{
    int sr = window_rank(c, x, w, "convolution");
    if (!sr || !(x = lift(c, x)) || !(w = lift(c, w))) return NULL;
    int64_t k[MAXSP], s[MAXSP], dil[MAXSP], pads[2 * MAXSP];
    kernel_dims(w, op_sp(sr), k);
    if (!ints_sp(c, "strides", 1, s, sr) || !ints_sp(c, "dilations", 1, dil, sr) ||
        !window_pads(c, x, k, s, dil, pads, sr))
        return NULL;
    rx_node *y2 = sr == 3 ? conv3d_as_2d(c, x, w, k, s, pads, dil, bias) : NULL;
    if (!y2 && sr == 3) y2 = conv3d_taps(c, x, w, k, s, pads, dil, bias);
    return y2 ? y2 : conv_out(c, "nn.conv%dd", x, w, s, pads, dil, NULL, sr, bias);
}

rx_node *ox_conv_window(ox_ctx *c, rx_node *x, rx_node *w) { return conv_of(c, x, w, -1); }

/* The 2-d 8-bit convolution into i32 of x (u8 or i8) by the constant 8-bit weight w,
 * one group or depthwise (group = C = Co, w (C, 1, kh, kw)), with the node's window attributes, taps outside x reading zx (x's zero
 * point: an explicit nn.pad with that value when zx is not 0 and the window pads; the
 * convolution itself pads with 0): the nn.conv2d (out_dtype int32) that legalize sends
 * to rt.qconv2d on the CPU (onnx_quant.c calls it). NULL when the form does not apply
 * (nothing is reported: the caller has another form). */
rx_node *ox_conv_int8(ox_ctx *c, rx_node *x, rx_node *w, int64_t zx)
{
    int64_t g = ox_attr_i(c, "group", 1), xc, wo, wi;
    if (!x || !w || ox_ndim(x) != 4 || ox_ndim(w) != 4 || !ox_need_dims(c, x) || !ox_need_dims(c, w))
        return NULL;
    if (g != 1 && (!rx_expr_is_const(x->sinfo->dims[1], &xc) || !rx_expr_is_const(w->sinfo->dims[0], &wo) ||
                   !rx_expr_is_const(w->sinfo->dims[1], &wi) || xc != g || wo != g || wi != 1))
        return NULL;
    int64_t k[MAXSP], s[MAXSP], dil[MAXSP], pads[2 * MAXSP];
    kernel_dims(w, 2, k);
    if (!ints_sp(c, "strides", 1, s, 2) || !ints_sp(c, "dilations", 1, dil, 2) ||
        !window_pads(c, x, k, s, dil, pads, 2))
        return NULL;
    if (zx && (pads[0] || pads[1] || pads[2] || pads[3])) {
        int64_t pw[8] = {0, 0, 0, 0, pads[0], pads[2], pads[1], pads[3]};
        rx_attr *pm = ox_amap(c);
        ox_aset(c, pm, "pad_width", ox_aints(c, pw, 8));
        ox_aset(c, pm, "pad_value", ox_afloat(c, (double)zx));
        x = ox_call1(c, "nn.pad", x, pm);
        memset(pads, 0, sizeof pads);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    ox_aset(c, m, "padding", ox_aints(c, pads, 4));
    ox_aset(c, m, "dilation", ox_aints(c, dil, 2));
    ox_aset(c, m, "groups", ox_aint(c, g));
    ox_aset(c, m, "out_dtype", ox_astr(c, "int32"));
    rx_node *a[2] = {x, w};
    return x ? ox_call(c, "nn.conv2d", a, 2, m) : NULL;
}

rx_node *ox_conv_integer(ox_ctx *c, int xi, int xz, int wi, int wz, int bias)
{
    rx_node *y = ox_conv_q8(c, xi, xz, wi, wz, bias); /* 8 bits (rt.qconv2d) */
    if (!y) y = ox_conv_blocked(c, xi, xz, wi, wz, bias); /* exact f32 blocks */
    return y ? y : conv_of(c, int_operand(c, xi, xz), int_operand(c, wi, wz), bias);
}

/* Conv, and ConvInteger (i32 operands less their zero points, no bias). */
bool ox_c_conv(ox_ctx *c)
{
    if (!strcmp(c->node->op_type, "ConvInteger"))
        return ox_out_node(c, 0, ox_conv_integer(c, 0, 2, 1, 3, -1));
    rx_node *q = ox_qdq_conv(c); /* a QDQ model's 8-bit convolution (onnx_quant.c) */
    if (q) return ox_out_node(c, 0, q);
    return ox_out_node(c, 0, conv_of(c, ox_in_node(c, 0), ox_in_node(c, 1), 2));
}

/* A transposed convolution whose kernel equals its stride (no padding, dilation 1,
 * output_padding 0, one group: the UNet / FPN 2x2 stride-2 upsampler) writes every
 * output element from exactly one tap, so it is a product and a pixel shuffle:
 *     y = W' @ x'   W' = w (Ci, Co, k...) permuted to (Co, k..., Ci), as (Co * K, Ci)
 *                   x' = x as (N, Ci, P), P = the input's spatial positions
 *     (N, Co * K, P) as (N, Co, k0.., D0..) permuted to (N, Co, D0, k0, D1, k1..), as
 *     (N, Co, D0 * k0, D1 * k1..)
 * The product takes the matmul schedules and libraries; the gather form the legalizer
 * gives nn.conv2d_transpose reads every tap of every input channel for every output,
 * K times the work with a select per term. NULL when the form does not apply (w's
 * kernel dims or Ci not literal, the attributes other than the above). */
static rx_node *convt_as_matmul(ox_ctx *c, rx_node *x, rx_node *w, int S, const int64_t *k,
                                const int64_t *s, const int64_t *dil, const int64_t *op,
                                const int64_t *pads)
{
    if (ox_attr_i(c, "group", 1) != 1 || !ox_need_dims(c, x) || !ox_need_dims(c, w)) return NULL;
    int64_t ci, wci;
    if (!rx_expr_is_const(x->sinfo->dims[1], &ci) || !rx_expr_is_const(w->sinfo->dims[0], &wci) ||
        ci != wci)
        return NULL;
    for (int i = 0; i < S; i++) {
        int64_t kd;
        if (!rx_expr_is_const(w->sinfo->dims[2 + i], &kd) || kd != k[i] || k[i] != s[i] ||
            (dil[i] != 1 && k[i] != 1) || op[i] || pads[i] || pads[S + i])
            return NULL;
    }
    rx_expr **xd = x->sinfo->dims, *co = w->sinfo->dims[1];
    int64_t wp[2 + MAXSP];
    wp[0] = 1;
    for (int i = 0; i < S; i++) wp[1 + i] = 2 + i;
    wp[1 + S] = 0;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, wp, 2 + S));
    rx_expr *wd[2] = {ox_prod(c, w->sinfo->dims, 1, 2 + S), ox_lit(c, ci)};
    rx_node *wt = ox_reshape(c, ox_call1(c, "permute_dims", w, m), wd, 2);
    rx_expr *xr[3] = {xd[0], xd[1], ox_prod(c, xd, 2, 2 + S)};
    rx_node *y = ox_call2(c, "matmul", wt, ox_reshape(c, x, xr, 3));
    rx_expr *yd[2 + 2 * MAXSP] = {xd[0], co}, *od[2 + MAXSP] = {xd[0], co};
    int64_t yp[2 + 2 * MAXSP] = {0, 1};
    for (int i = 0; i < S; i++) {
        yd[2 + i] = ox_lit(c, k[i]);
        yd[2 + S + i] = xd[2 + i];
        yp[2 + 2 * i] = 2 + S + i;
        yp[3 + 2 * i] = 2 + i;
        od[2 + i] = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, xd[2 + i], ox_lit(c, k[i])));
    }
    m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, yp, 2 + 2 * S));
    y = ox_call1(c, "permute_dims", ox_reshape(c, y, yd, 2 + 2 * S), m);
    return y ? ox_reshape(c, y, od, 2 + S) : NULL;
}

/* A 1-d or 2-d transposed convolution with a constant f32 weight (an initializer: the
 * autoencoder / DCGAN / U-Net ConvTranspose2d(ci, co, 4, 2, 1), k = 3 s = 2 with
 * output_padding, any kernel and stride; dilation 1, one group) as one convolution and
 * a pixel shuffle (the sub-pixel form). Per spatial dim (stride s, kernel k, begin pad
 * p): out[o] sums x[i] * w[t] over o + p = i * s + t; with o + p = q * s + r (0 <= r < s)
 * the taps are t = j * s + r, so phase r of the output is a correlation of x with the
 * kk = ceil(k / s) taps w'_r[m] = w[(kk - 1 - m) * s + r] (0 where that passes k), x
 * padded by kk - 1 before:
 *     y = conv(x, W', pads kk - 1 before, pr after)   W' (Co * s0 * s1, Ci, kk0, kk1)
 *     (N, Co, s0, s1, Q0, Q1) permuted to (N, Co, Q0, s0, Q1, s1), as (N, Co, Q0 * s0,
 *     Q1 * s1), sliced [p, p + out) per dim
 * with Q = in + pr and pr = max(0, ceil((k + op - pe) / s) - 1) (pe: the end pad), so
 * Q * s covers p + out whatever the input extent (the slice's end, Q * s - p - out =
 * pr * s + s + pe - k - op, is a literal). W' is built here from the weight's data. The
 * convolution takes the conv library (blas.conv2d); the gather form the legalizer gives
 * nn.conv2d_transpose runs every tap of every input channel for every output with a
 * select per term (48 ms against 0.2 ms for the (1, 32, 64, 64) -> (1, 16, 128, 128)
 * k 4 s 2 layer, docs/onnx.md). NULL when the form does not apply. */
static rx_node *convt_subpixel(ox_ctx *c, rx_node *x, int S, const int64_t *k, const int64_t *s,
                               const int64_t *dil, const int64_t *op, const int64_t *pads, int sr)
{
    rx_const *wk = ox_const(c, ox_in(c, 1));
    if (S != 2 || ox_attr_i(c, "group", 1) != 1 || !wk || wk->dtype != RX_DT_F32 ||
        wk->ndim != 2 + sr || !ox_need_dims(c, x))
        return NULL;
    int64_t ci = wk->shape[0], co = wk->shape[1], xci, kk[2], pr[2], tail[2];
    if (!rx_expr_is_const(x->sinfo->dims[1], &xci) || xci != ci) return NULL;
    for (int i = 0; i < 2; i++) {
        if (dil[i] != 1 || k[i] != (i < 2 - sr ? 1 : wk->shape[2 + i - (2 - sr)]) || s[i] < 1 ||
            k[i] < 1 || s[i] > 16 || op[i] < 0 || pads[i] < 0 || pads[2 + i] < 0)
            return NULL;
        kk[i] = (k[i] + s[i] - 1) / s[i];
        int64_t need = (k[i] + op[i] - pads[2 + i] + s[i] - 1) / s[i] - 1;
        pr[i] = need > 0 ? need : 0;
        tail[i] = pr[i] * s[i] + s[i] + pads[2 + i] - k[i] - op[i];
        if (tail[i] < 0) return NULL;
    }
    int64_t oc = co * s[0] * s[1], wd[4] = {oc, ci, kk[0], kk[1]};
    rx_const *wt = ox_new_const(c, RX_DT_F32, 4, wd);
    float *wo = (float *)wt->data;
    for (int64_t o = 0; o < co; o++)
        for (int64_t r0 = 0; r0 < s[0]; r0++)
            for (int64_t r1 = 0; r1 < s[1]; r1++)
                for (int64_t i = 0; i < ci; i++)
                    for (int64_t m0 = 0; m0 < kk[0]; m0++)
                        for (int64_t m1 = 0; m1 < kk[1]; m1++) {
                            int64_t t0 = (kk[0] - 1 - m0) * s[0] + r0;
                            int64_t t1 = (kk[1] - 1 - m1) * s[1] + r1;
                            int64_t dst = ((((o * s[0] + r0) * s[1] + r1) * ci + i) * kk[0] + m0) *
                                          kk[1] + m1;
                            if (t0 < k[0] && t1 < k[1])
                                wo[dst] = (float)ox_cf(wk, ((i * co + o) * k[0] + t0) * k[1] + t1);
                        }
    int64_t one[2] = {1, 1}, cp[4] = {kk[0] - 1, kk[1] - 1, pr[0], pr[1]};
    rx_node *y = conv_out(c, "nn.conv%dd", x, ox_const_node(c, wt), one, cp, one, NULL, 2, -1);
    if (!y || !ox_need_dims(c, y)) return NULL;
    rx_expr **yd = y->sinfo->dims;
    rx_expr *sd[6] = {yd[0], ox_lit(c, co), ox_lit(c, s[0]), ox_lit(c, s[1]), yd[2], yd[3]};
    int64_t perm[6] = {0, 1, 4, 2, 5, 3};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, perm, 6));
    y = ox_call1(c, "permute_dims", ox_reshape(c, y, sd, 6), m);
    rx_expr *fd[4] = {yd[0], ox_lit(c, co),
                      ox_simp(c, rx_e_binary(c->a, RX_E_MUL, yd[2], ox_lit(c, s[0]))),
                      ox_simp(c, rx_e_binary(c->a, RX_E_MUL, yd[3], ox_lit(c, s[1])))};
    y = y ? ox_reshape(c, y, fd, 4) : NULL;
    int64_t axes[2] = {2, 3}, b[2] = {pads[0], pads[1]}, st[2] = {1, 1}, big = (int64_t)1 << 62;
    int64_t e[2] = {tail[0] ? -tail[0] : big, tail[1] ? -tail[1] : big};
    if (!y || (!pads[0] && !pads[1] && !tail[0] && !tail[1])) return y;
    m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, 2));
    ox_aset(c, m, "begin", ox_aints(c, b, 2));
    ox_aset(c, m, "end", ox_aints(c, e, 2));
    ox_aset(c, m, "strides", ox_aints(c, st, 2));
    return ox_call1(c, "strided_slice", y, m);
}

/* ConvTranspose (1-d lifted to 2-d, 2-d, 3-d) -> nn.conv2d_transpose / nn.conv3d_transpose
 * (+ bias). output_shape and auto_pad SAME_* set the pads from the total padding
 * stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out (out = in * stride
 * for auto_pad), the odd one at the end for SAME_UPPER and output_shape, at the start for
 * SAME_LOWER; a negative total grows output_padding. Literal spatial dims needed then. */
bool ox_c_conv_transpose(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *w = ox_in_node(c, 1);
    int sr = window_rank(c, x, w, "transposed convolution");
    if (!sr || !(x = lift(c, x)) || !(w = lift(c, w))) return false;
    int S = op_sp(sr);
    int64_t k[MAXSP], s[MAXSP], dil[MAXSP], op[MAXSP], pads[2 * MAXSP], os[MAXSP];
    kernel_dims(w, S, k);
    if (!ints_sp(c, "strides", 1, s, sr) || !ints_sp(c, "dilations", 1, dil, sr) ||
        !ints_sp(c, "output_padding", 0, op, sr) || !window_pads(c, x, k, s, dil, pads, sr))
        return false;
    if (sr == 1) op[0] = 0;
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    bool shaped = ox_attr(c, "output_shape") != NULL, same = !strncmp(ap, "SAME_", 5);
    if (shaped && !ints_sp(c, "output_shape", 0, os, sr)) return false;
    if (shaped || same) {
        for (int i = S - sr; i < S; i++) {
            int64_t in;
            if (!rx_expr_is_const(x->sinfo->dims[2 + i], &in)) {
                ox_err(c, "output_shape and auto_pad need literal spatial dims");
                return false;
            }
            int64_t out = shaped ? os[i] : in * s[i];
            int64_t total = s[i] * (in - 1) + op[i] + (k[i] - 1) * dil[i] + 1 - out;
            if (total < 0) {
                op[i] -= total;
                total = 0;
            }
            int64_t small = total / 2, big = total - small;
            bool lower = !strcmp(ap, "SAME_LOWER");
            pads[i] = lower ? big : small;
            pads[S + i] = lower ? small : big;
        }
    }
    rx_node *y = convt_as_matmul(c, x, w, S, k, s, dil, op, pads);
    if (!y) y = convt_subpixel(c, x, S, k, s, dil, op, pads, sr);
    if (y) return ox_out_node(c, 0, unlift(c, add_bias(c, y, 2, S), sr));
    return ox_out_node(c, 0, conv_out(c, "nn.conv%dd_transpose", x, w, s, pads, dil, op, sr, 2));
}

/* MaxPool, AveragePool and LpPool's window sum: the pool of x (in ONNX's layout) with
 * the node's window attributes; *kprod the window's size. NULL after an error. */
static rx_node *window_pool(ox_ctx *c, rx_node *x, bool maxp, bool include_pad, int64_t *kprod)
{
    int sr = window_rank(c, x, NULL, "pooling");
    if (!sr || !(x = lift(c, x))) return NULL;
    int S = op_sp(sr);
    if (ox_nout(c) > 1 && c->node->output[1][0] && sr != 2) {
        ox_err(c, "the Indices output is supported for 2-d pools only");
        return NULL;
    }

    int64_t k[MAXSP], s[MAXSP], dil[MAXSP], pads[2 * MAXSP];
    if (!ints_sp(c, "kernel_shape", 0, k, sr) || !ints_sp(c, "strides", 1, s, sr) ||
        !ints_sp(c, "dilations", 1, dil, sr) || !window_pads(c, x, k, s, dil, pads, sr))
        return NULL;
    *kprod = 1;
    for (int i = 0; i < S; i++) {
        if (k[i] <= 0) {
            ox_err(c, "needs kernel_shape");
            return NULL;
        }
        *kprod *= k[i];
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "pool_size", ox_aints(c, k, S));
    ox_aset(c, m, "strides", ox_aints(c, s, S));
    ox_aset(c, m, "padding", ox_aints(c, pads, 2 * S));
    ox_aset(c, m, "dilation", ox_aints(c, dil, S));
    ox_aset(c, m, "ceil_mode", ox_abool(c, ox_attr_i(c, "ceil_mode", 0) != 0));
    if (!maxp) ox_aset(c, m, "count_include_pad", ox_abool(c, include_pad));
    const char *op = sp_name(c, maxp ? "nn.max_pool%dd" : "nn.avg_pool%dd", S);
    rx_node *y = ox_call1(c, op, x, m);
    bool want_ind = ox_nout(c) > 1 && c->node->output[1][0];
    if (y && want_ind &&
        !ox_pool_indices(c, x, y, k, s, dil, pads, ox_attr_i(c, "storage_order", 0) != 0))
        return NULL;
    return unlift(c, y, sr);
}

bool ox_c_pool(ox_ctx *c)
{
    bool maxp = !strcmp(c->node->op_type, "MaxPool");
    int64_t kprod;
    return ox_out_node(c, 0, window_pool(c, ox_in_node(c, 0), maxp,
                                         ox_attr_i(c, "count_include_pad", 0) != 0, &kprod));
}

/* |x| ** p (x * x for p = 2) for the Lp converters; NULL stays NULL. */
static rx_node *abs_pow(ox_ctx *c, rx_node *x, int64_t p)
{
    if (!x) return NULL;
    if (p == 2) return ox_call2(c, "multiply", x, x);
    rx_node *a = ox_call1(c, "abs", x, NULL);
    return p == 1 ? a : ox_call2(c, "power", a, ox_scalar(c, ox_dtype_of(x), (double)p));
}

/* y ** (1 / p) (sqrt for p = 2). */
static rx_node *root_p(ox_ctx *c, rx_node *y, int64_t p)
{
    if (!y || p == 1) return y;
    if (p == 2) return ox_call1(c, "sqrt", y, NULL);
    return ox_call2(c, "power", y, ox_scalar(c, ox_dtype_of(y), 1.0 / (double)p));
}

static bool lp_order(ox_ctx *c, int64_t *p)
{
    *p = ox_attr_i(c, "p", 2);
    if (*p >= 1) return true;
    ox_err(c, "p must be 1 or more, got %lld", (long long)*p);
    return false;
}

/* LpPool: (window sum of |x| ** p) ** (1 / p), the sum being the average pool over the
 * whole window (padding included: zeros add nothing) times the window's size. */
bool ox_c_lp_pool(ox_ctx *c)
{
    int64_t p, kprod;
    if (!lp_order(c, &p)) return false;
    rx_node *x = ox_in_node(c, 0), *y = window_pool(c, abs_pow(c, x, p), false, true, &kprod);
    if (y) y = ox_call2(c, "multiply", y, ox_scalar(c, ox_dtype_of(y), (double)kprod));
    return ox_out_node(c, 0, root_p(c, y, p));
}

/* GlobalLpPool: (sum over the spatial axes of |x| ** p, kept) ** (1 / p). LpNormalization:
 * x / (sum along axis of |x| ** p) ** (1 / p), p 1 or 2 (ONNX), a zero norm read as 1 so a
 * zero vector stays zero. */
bool ox_c_lp_reduce(ox_ctx *c)
{
    int64_t p;
    rx_node *x = ox_in_node(c, 0);
    int nd = ox_ndim(x);
    if (!x || !lp_order(c, &p)) return false;
    bool norm = !strcmp(c->node->op_type, "LpNormalization");
    if (norm ? (p != 1 && p != 2) : nd < 3) {
        ox_err(c, norm ? "p must be 1 or 2" : "needs an input of rank 3 or more");
        return false;
    }
    int64_t *ax = RX_NEWN(c->a, int64_t, nd > 0 ? nd : 1);
    int nax = 0;
    if (norm) ax[nax++] = ox_attr_i(c, "axis", -1);
    else
        for (int i = 2; i < nd; i++) ax[nax++] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, ax, nax));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    rx_node *r = root_p(c, ox_call1(c, "sum", abs_pow(c, x, p), m), p);
    if (!norm || !r) return ox_out_node(c, 0, r);
    rx_dtype dt = ox_dtype_of(x);
    rx_node *w[3] = {ox_call2(c, "equal", r, ox_scalar(c, dt, 0)), ox_scalar(c, dt, 1), r};
    if (!w[0]) return false;
    return ox_out_node(c, 0, ox_call2(c, "divide", x, ox_call(c, "where", w, 3, NULL)));
}

bool ox_c_global_pool(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    int nd = ox_ndim(x);
    if (!x) return false;
    if (nd < 3) {
        ox_err(c, "needs an input of rank 3 or more");
        return false;
    }
    if (!strcmp(c->node->op_type, "GlobalAveragePool") && nd == 4) {
        rx_attr *m = ox_amap(c);
        int64_t one[2] = {1, 1};
        ox_aset(c, m, "output_size", ox_aints(c, one, 2));
        return ox_out_node(c, 0, ox_call1(c, "nn.adaptive_avg_pool2d", x, m));
    }
    int64_t *ax = RX_NEWN(c->a, int64_t, nd);
    for (int i = 2; i < nd; i++) ax[i - 2] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, ax, nd - 2));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    return ox_out_node(c, 0, ox_call1(c, !strcmp(c->node->op_type, "GlobalMaxPool") ? "max" : "mean",
                                   x, m));
}


/* ---------------------------------------------------------------- losses */

/* NegativeLogLikelihoodLoss on log-probabilities x (N, C, d...) and targets t (N, d...):
 * the class picked by a one-hot mask, equal(expand_dims(t, 1), arange(C) as (1, C, 1...)),
 * so no gather is needed; weights (C) picked the same way, ignore_index zeroing them;
 * loss = -x[t] * w, then reduction none / sum / mean (sum(loss) / sum(w)). */
static rx_node *nll(ox_ctx *c, rx_node *x, rx_node *t, rx_node *w, int64_t ignore,
                    bool has_ignore, const char *red)
{
    if (!ox_need_dims(c, x) || !t) return NULL;
    int nd = x->sinfo->ndim;
    if (nd < 2) {
        ox_err(c, "the input needs rank 2 or more (N, C, ...)");
        return NULL;
    }
    rx_dtype dt = ox_dtype_of(x);
    rx_node *cls = ox_iota(c, x->sinfo->dims[1], 1, nd, ox_dtype_of(t));
    rx_expr **cd = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) cd[i] = i == 1 ? x->sinfo->dims[1] : ox_lit(c, 1);
    rx_attr *ed = ox_amap(c);
    int64_t one = 1;
    ox_aset(c, ed, "axis", ox_aints(c, &one, 1));
    rx_node *mask = ox_call2(c, "equal", ox_call1(c, "expand_dims", t, ed), cls);
    rx_node *zero = ox_scalar(c, dt, 0);
    rx_attr *sm = ox_amap(c);
    ox_aset(c, sm, "axis", ox_aints(c, &one, 1));
    rx_node *a3[3] = {mask, x, zero};
    rx_node *picked = ox_call1(c, "sum", ox_call(c, "where", a3, 3, NULL), sm);
    rx_node *wt = NULL; /* per-element weight, NULL for all ones */
    if (w) {
        rx_node *b3[3] = {mask, ox_reshape(c, w, cd, nd), zero};
        wt = ox_call1(c, "sum", ox_call(c, "where", b3, 3, NULL), sm);
    }
    if (has_ignore) {
        rx_node *valid = ox_call2(c, "not_equal", t, ox_scalar(c, ox_dtype_of(t), (double)ignore));
        rx_node *c3[3] = {valid, wt ? wt : ox_scalar(c, dt, 1), zero};
        wt = ox_call(c, "where", c3, 3, NULL);
    }
    rx_node *loss = ox_call1(c, "negative", wt ? ox_call2(c, "multiply", picked, wt) : picked, NULL);
    if (!loss || !strcmp(red, "none")) return loss;
    rx_node *total = ox_call1(c, "sum", loss, NULL);
    if (!strcmp(red, "sum")) return total;
    if (strcmp(red, "mean")) {
        ox_err(c, "reduction '%s' is not supported (none, sum, mean)", red);
        return NULL;
    }
    if (!wt) return ox_call1(c, "mean", loss, NULL);
    return ox_call2(c, "divide", total, ox_call1(c, "sum", wt, NULL)); /* wt: loss's shape */
}

bool ox_c_nll_loss(ox_ctx *c)
{
    const Onnx__AttributeProto *ii = ox_attr(c, "ignore_index");
    rx_node *w = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
    if (ox_in(c, 2) && !w) return false;
    return ox_out_node(c, 0, nll(c, ox_in_node(c, 0), ox_in_node(c, 1), w, ii ? ii->i : 0, ii != NULL,
                                 ox_attr_s(c, "reduction", "mean")));
}

/* SoftmaxCrossEntropyLoss: log_softmax over the class axis, then the NLL above; the
 * optional second output is the log-probabilities. */
bool ox_c_sce_loss(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    rx_node *lp = ox_call1(c, "nn.log_softmax", x, m);
    const Onnx__AttributeProto *ii = ox_attr(c, "ignore_index");
    rx_node *w = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
    if (!lp || (ox_in(c, 2) && !w)) return false;
    if (!ox_out_node(c, 0, nll(c, lp, ox_in_node(c, 1), w, ii ? ii->i : 0, ii != NULL,
                               ox_attr_s(c, "reduction", "mean"))))
        return false;
    return ox_nout(c) < 2 || !*c->node->output[1] || ox_out_node(c, 1, lp);
}

/* ---------------------------------------------------------------- MaxUnpool */

/* MaxUnpool: the values scattered (scatter_elements, axis 0) into a zero tensor of
 * the default output's element count at their flat indices (MaxPool's Indices: offsets
 * into the whole N, C, spatial... tensor), reshaped to the default output shape,
 * (in - 1) * stride + kernel - pad_before - pad_after per spatial dim. A constant
 * output_shape (input 2) larger than that pads the result at the end of each dim (the
 * indices keep their coordinates, as ONNX Runtime). */
bool ox_c_max_unpool(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *ind = ox_astype(c, ox_in_node(c, 1), RX_DT_I64);
    if (!ox_need_dims(c, x) || !ind) return false;
    int nd = ox_ndim(x), sr = nd - 2, nk, ns, np;
    const int64_t *k = ox_attr_ints(c, "kernel_shape", &nk);
    const int64_t *s = ox_attr_ints(c, "strides", &ns);
    const int64_t *p = ox_attr_ints(c, "pads", &np);
    if (sr < 1 || nd > 64 || nk != sr || (ns >= 0 && ns != sr) || (np >= 0 && np != 2 * sr)) {
        ox_err(c, "needs kernel_shape (and strides, pads when given) with one value per "
               "spatial dim of a rank 3 or more input");
        return false;
    }
    rx_expr **d = x->sinfo->dims, **od = RX_NEWN(c->a, rx_expr *, nd);
    od[0] = d[0];
    od[1] = d[1];
    for (int i = 0; i < sr; i++) {
        int64_t st = ns >= 0 ? s[i] : 1, pads = np >= 0 ? p[i] + p[sr + i] : 0;
        rx_expr *e = rx_e_binary(c->a, RX_E_MUL, rx_e_binary(c->a, RX_E_SUB, d[2 + i], ox_lit(c, 1)),
                                 ox_lit(c, st));
        od[2 + i] = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, e, ox_lit(c, k[i] - pads)));
    }
    int64_t pw[128] = {0}, *v = NULL;
    bool padded = false;
    if (ox_in(c, 2)) {
        int n;
        if (!ox_ints(c, ox_in(c, 2), &v, &n) || n != nd) {
            ox_err(c, "output_shape must be a constant of %d integers", nd);
            return false;
        }
        for (int i = 0; i < nd; i++) {
            int64_t have;
            if (!rx_expr_is_const(od[i], &have) || v[i] < have) {
                ox_err(c, "output_shape %lld at axis %d must be literal and at least the "
                       "default extent %s", (long long)v[i], i, rx_expr_str(c->a, od[i]));
                return false;
            }
            pw[2 * i + 1] = v[i] - have;
            padded = padded || v[i] != have;
        }
    }
    rx_expr *on = ox_prod(c, od, 0, nd), *xn = ox_prod(c, d, 0, nd);
    rx_dtype dt = ox_dtype_of(x);
    rx_attr *fm = ox_amap(c);
    ox_aset(c, fm, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *fa[2] = {ox_shape_node(c, &on, 1), ox_scalar(c, dt, 0)};
    rx_node *a[3] = {ox_call(c, "full", fa, 2, fm), ox_reshape(c, ind, &xn, 1), ox_reshape(c, x, &xn, 1)};
    if (!a[0] || !a[1] || !a[2]) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 0));
    ox_aset(c, m, "reduction", ox_astr(c, "update"));
    rx_node *y = ox_call(c, "scatter_elements", a, 3, m);
    if (y) y = ox_reshape(c, y, od, nd);
    if (y && padded) {
        rx_attr *pm = ox_amap(c);
        ox_aset(c, pm, "pad_width", ox_aints(c, pw, 2 * nd));
        y = ox_call1(c, "nn.pad", y, pm);
    }
    return y && ox_out_node(c, 0, y);
}
