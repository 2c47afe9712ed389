/*
 * onnx_nn.c — the ONNX importer's reductions and neural-network converters: Reduce*
 * (the composite ones as a prologue/epilogue around sum), ArgMax ArgMin,
 * LayerNormalization (with Mean and InvStdDev), BatchNormalization (inference), Conv,
 * MaxPool AveragePool (2-d, explicit or auto pads), GlobalAveragePool GlobalMaxPool.
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* ---------------------------------------------------------------- reductions */

bool ox_c_reduce(ox_ctx *c)
{
    const char *t = c->node->op_type;
    const char *op = !strcmp(t, "ReduceMean") ? "mean" : !strcmp(t, "ReduceMax") ? "max"
                   : !strcmp(t, "ReduceMin") ? "min" : !strcmp(t, "ReduceProd") ? "prod" : "sum";
    int64_t *ax;
    int n;
    if (!ox_get_axes(c, 1, &ax, &n)) return false;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    /* the composite reductions: a prologue before sum, an epilogue after */
    const char *pre = !strcmp(t, "ReduceL1") ? "abs" : !strcmp(t, "ReduceLogSumExp") ? "exp" : NULL;
    const char *post = !strcmp(t, "ReduceL2") ? "sqrt"
                     : !strcmp(t, "ReduceLogSum") || !strcmp(t, "ReduceLogSumExp") ? "log" : NULL;
    if (pre) x = ox_call1(c, pre, x, NULL);
    if (!strcmp(t, "ReduceL2") || !strcmp(t, "ReduceSumSquare")) x = ox_call2(c, "multiply", x, x);
    if (!x) return false;
    if (n == 0 || n < 0) {
        if (ox_attr_i(c, "noop_with_empty_axes", 0)) {
            ox_out_alias(c, 0, ox_in(c, 0));
            return true;
        }
        n = -1;
    }
    rx_attr *m = ox_amap(c);
    if (n > 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    ox_aset(c, m, "keepdims", ox_abool(c, ox_attr_i(c, "keepdims", 1) != 0));
    rx_node *y = ox_call1(c, op, x, m);
    if (y && post) y = ox_call1(c, post, y, NULL);
    return ox_out_node(c, 0, y);
}

/* x reversed along axis ax: strided_slice from the last element down, stride -1. */
rx_node *ox_flip(ox_ctx *c, rx_node *x, int ax)
{
    int64_t axis = ax, begin = -1, end = -((int64_t)1 << 62), step = -1;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &axis, 1));
    ox_aset(c, m, "begin", ox_aints(c, &begin, 1));
    ox_aset(c, m, "end", ox_aints(c, &end, 1));
    ox_aset(c, m, "strides", ox_aints(c, &step, 1));
    return ox_call1(c, "strided_slice", x, m);
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

bool ox_c_batch_norm(ox_ctx *c)
{
    if (ox_nout(c) > 1 || ox_attr_i(c, "training_mode", 0) || !ox_attr_i(c, "is_test", 1)) {
        ox_err(c, "training mode is not supported (inference only)");
        return false;
    }
    rx_node *a[5];
    for (int i = 0; i < 5; i++) a[i] = ox_in_node(c, i);
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

/* Pads of a 2-d window op (a 1-d one lifted to 2-d when sr = 1: x is the lifted
 * input): explicit pads, or auto_pad from literal input dims. */
static bool window_pads(ox_ctx *c, const rx_node *x, const int64_t *k, const int64_t *s,
                        const int64_t *dil, int64_t pads[4], int sr)
{
    int np;
    const int64_t *p = ox_attr_ints(c, "pads", &np);
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    memset(pads, 0, 4 * sizeof *pads);
    if (np >= 0) {
        if (np != 2 * sr) {
            ox_err(c, "pads must have %d values for a %d-d window", 2 * sr, sr);
            return false;
        }
        if (sr == 1) { /* the lifted H axis is not padded */
            pads[1] = p[0];
            pads[3] = p[1];
        } else {
            memcpy(pads, p, 4 * sizeof *pads);
        }
    }
    if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) return true;
    if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) {
        ox_err(c, "auto_pad '%s' is not supported", ap);
        return false;
    }
    for (int i = 2 - sr; i < 2; i++) {
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
        pads[2 + i] = upper ? big : small;
    }
    return true;
}

/* A window attribute for sr spatial dims (1: the lifted H axis gets 1). */
static bool ints2(ox_ctx *c, const char *name, int64_t dflt, int64_t out[2], int sr)
{
    int n;
    const int64_t *v = ox_attr_ints(c, name, &n);
    out[0] = sr == 1 ? 1 : dflt;
    if (n < 0) {
        out[1] = dflt;
        if (sr == 2) out[0] = dflt;
        return true;
    }
    if (n != sr) {
        ox_err(c, "%s must have %d values (1-d and 2-d windows are supported)", name, sr);
        return false;
    }
    if (sr == 2) out[0] = v[0];
    out[1] = v[sr - 1];
    return true;
}

/* A 3-d (N, C, L) value as 4-d (N, C, 1, L); 4-d stays. NULL for other ranks. */
static rx_node *lift(ox_ctx *c, rx_node *x)
{
    if (!x || ox_ndim(x) == 4) return x;
    if (ox_ndim(x) != 3) return NULL;
    rx_expr **d = x->sinfo->dims, *f[4] = {d[0], d[1], ox_lit(c, 1), d[2]};
    return ox_reshape(c, x, f, 4);
}

/* The result of a lifted window op back to 3-d (sr = 1). */
static rx_node *unlift(ox_ctx *c, rx_node *y, int sr)
{
    if (!y || sr == 2 || !ox_need_dims(c, y)) return y;
    rx_expr **d = y->sinfo->dims, *f[3] = {d[0], d[1], d[3]};
    return ox_reshape(c, y, f, 3);
}

/* The conv op call with the window attributes (output_padding when op is given), the
 * bias (input 2, when `bias`) added per output channel, the result unlifted; binds
 * output 0. */
static bool conv_out(ox_ctx *c, const char *name, rx_node *x, rx_node *w, const int64_t s[2],
                     const int64_t pads[4], const int64_t dil[2], const int64_t *op, int sr,
                     bool bias)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    ox_aset(c, m, "padding", ox_aints(c, pads, 4));
    if (op) ox_aset(c, m, "output_padding", ox_aints(c, op, 2));
    ox_aset(c, m, "dilation", ox_aints(c, dil, 2));
    ox_aset(c, m, "groups", ox_aint(c, ox_attr_i(c, "group", 1)));
    rx_node *a[2] = {x, w};
    rx_node *y = ox_call(c, name, a, 2, m);
    if (y && bias && ox_in(c, 2)) {
        rx_expr *d[4] = {ox_lit(c, 1), y->sinfo->dims[1], ox_lit(c, 1), ox_lit(c, 1)};
        y = ox_call2(c, "add", y, ox_reshape(c, ox_in_node(c, 2), d, 4));
    }
    return ox_out_node(c, 0, unlift(c, y, sr));
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

/* Conv, and ConvInteger (i32 operands less their zero points, no bias). */
bool ox_c_conv(ox_ctx *c)
{
    bool integer = !strcmp(c->node->op_type, "ConvInteger");
    rx_node *x = integer ? int_operand(c, 0, 2) : ox_in_node(c, 0);
    rx_node *w = integer ? int_operand(c, 1, 3) : ox_in_node(c, 1);
    if (!ox_need_dims(c, x) || !ox_need_dims(c, w)) return false;
    int sr = x->sinfo->ndim - 2;
    if ((sr != 1 && sr != 2) || w->sinfo->ndim != x->sinfo->ndim) {
        ox_err(c, "only 1-d and 2-d convolution (3-d or 4-d input and weight) is supported");
        return false;
    }
    x = lift(c, x);
    w = lift(c, w);
    if (!x || !w) return false;
    int64_t k[2], s[2], dil[2], pads[4];
    k[0] = k[1] = 1;
    rx_expr_is_const(w->sinfo->dims[2], &k[0]);
    rx_expr_is_const(w->sinfo->dims[3], &k[1]);
    if (!ints2(c, "strides", 1, s, sr) || !ints2(c, "dilations", 1, dil, sr) ||
        !window_pads(c, x, k, s, dil, pads, sr))
        return false;
    return conv_out(c, "nn.conv2d", x, w, s, pads, dil, NULL, sr, !integer);
}

/* ConvTranspose (1-d lifted to 2-d, 2-d) -> nn.conv2d_transpose (+ bias). output_shape
 * and auto_pad SAME_* set the pads from the total padding
 * stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out (out = in * stride
 * for auto_pad), the odd one at the end for SAME_UPPER and output_shape, at the start for
 * SAME_LOWER; a negative total grows output_padding. Literal spatial dims needed then. */
bool ox_c_conv_transpose(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *w = ox_in_node(c, 1);
    if (!ox_need_dims(c, x) || !ox_need_dims(c, w)) return false;
    int sr = x->sinfo->ndim - 2;
    if ((sr != 1 && sr != 2) || w->sinfo->ndim != x->sinfo->ndim) {
        ox_err(c, "only 1-d and 2-d transposed convolution (3-d or 4-d input and weight) is "
               "supported");
        return false;
    }
    x = lift(c, x);
    w = lift(c, w);
    if (!x || !w) return false;
    int64_t k[2] = {1, 1}, s[2], dil[2], op[2], pads[4] = {0, 0, 0, 0}, os[2];
    rx_expr_is_const(w->sinfo->dims[2], &k[0]);
    rx_expr_is_const(w->sinfo->dims[3], &k[1]);
    if (!ints2(c, "strides", 1, s, sr) || !ints2(c, "dilations", 1, dil, sr) ||
        !ints2(c, "output_padding", 0, op, sr) || !window_pads(c, x, k, s, dil, pads, sr))
        return false;
    if (sr == 1) op[0] = 0;
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    bool shaped = ox_attr(c, "output_shape") != NULL, same = !strncmp(ap, "SAME_", 5);
    if (shaped && !ints2(c, "output_shape", 0, os, sr)) return false;
    if (shaped || same) {
        for (int i = 2 - sr; i < 2; i++) {
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
            pads[2 + i] = lower ? small : big;
        }
    }
    return conv_out(c, "nn.conv2d_transpose", x, w, s, pads, dil, op, sr, true);
}

bool ox_c_pool(ox_ctx *c)
{
    bool maxp = !strcmp(c->node->op_type, "MaxPool");
    rx_node *x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    int sr = x->sinfo->ndim - 2;
    if (sr != 1 && sr != 2) {
        ox_err(c, "only 1-d and 2-d pooling (3-d or 4-d input) is supported");
        return false;
    }
    if (!(x = lift(c, x))) return false;
    if (ox_nout(c) > 1) {
        ox_err(c, "the Indices output is not supported");
        return false;
    }
    if (ox_attr_i(c, "storage_order", 0)) {
        ox_err(c, "storage_order = 1 is not supported");
        return false;
    }
    int64_t k[2], s[2], dil[2], pads[4];
    if (!ints2(c, "kernel_shape", 0, k, sr) || !ints2(c, "strides", 1, s, sr) ||
        !ints2(c, "dilations", 1, dil, sr) || !window_pads(c, x, k, s, dil, pads, sr))
        return false;
    if (k[0] <= 0 || k[1] <= 0) {
        ox_err(c, "needs kernel_shape");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "pool_size", ox_aints(c, k, 2));
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    ox_aset(c, m, "padding", ox_aints(c, pads, 4));
    ox_aset(c, m, "dilation", ox_aints(c, dil, 2));
    ox_aset(c, m, "ceil_mode", ox_abool(c, ox_attr_i(c, "ceil_mode", 0) != 0));
    if (!maxp)
        ox_aset(c, m, "count_include_pad", ox_abool(c, ox_attr_i(c, "count_include_pad", 0) != 0));
    return ox_out_node(c, 0, unlift(c, ox_call1(c, maxp ? "nn.max_pool2d" : "nn.avg_pool2d", x, m), sr));
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
