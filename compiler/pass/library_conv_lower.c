/*
 * library_conv_lower.c — the window rules of library lowering (library_lower.c's essay
 * has the pass; this file its conv, pool and rnn rules, run by the same walk on its use
 * counts, rx_ll_ctx).
 *
 * The conv rule (rx_ll_try_conv): a chain
 *
 *   c = nn.conv2d(x, w)       (f32, data_layout NCHW, kernel_layout OIHW, out_dtype null
 *                              or f32; any strides, padding, dilation, groups)
 *   s = add(c, bias)          (optional; either order; bias f32 (O, 1, 1) or (1, O, 1, 1))
 *   r = add(s, residual)      (optional; either order; residual f32 of c's shape)
 *   y = nn.relu(r)            (optional; and/or a clamp: maximum(r, lo) [-> minimum(., hi)]
 *                              or minimum(r, hi), scalar f32 constants lo <= hi: ONNX
 *                              Clip, as ReLU6 and Hardtanh export; F.relu6 exports as
 *                              Relu then Clip)
 *   y = act(r)                (or, with r used by them alone: SiLU, r * sigmoid(r) or
 *                              nn.silu however spelt (library_epi.c decides), act 3;
 *                              hardswish as ONNX HardSwish imports, r * min(max(r * 1/6
 *                              + 0.5, 0), 1) in those five bindings, act 4; or leaky
 *                              relu as ONNX LeakyRelu imports, where(greater(r, 0), r,
 *                              r * a), or a one-slope PRelu's where(less(r, 0), r * a,
 *                              r) with a > 0: leaky_chain, act 5)
 *
 * with every intermediate used once by the next becomes
 *   y = call_dps_library("blas.conv2d", x, w, params, [bias], [residual], out=...)
 * where params is an int64 (11,) constant (strides h, w; padding top, left, bottom,
 * right; dilation h, w; groups; flags 1 bias, 2 residual; act 1 relu, 3 SiLU, 4
 * hardswish), or (12,) with act 5 (leaky relu) and the slope's f32 bit pattern, or (13,) with
 * act 2 (clamp) and the bounds' f32 bit patterns (maximum(r, 0) alone is act 1) —
 * runtime/library_conv.c says how it runs (sgemm on im2col panels, pointwise sgemm,
 * direct depthwise loops). Its cost rule: the library when N * O * OH * OW * (C / groups)
 * * KH * KW reaches the threshold, a symbolic dim counting as large (the generated loops
 * ran the probe's convolutions at ~2.4 GFLOP/s, depthwise at ~1). One name, "conv2d",
 * disables it; the OpenCL registry has no convolution. PyTorch's exporter folds
 * BatchNorm into the weights and bias, so a conv + BN + relu arrives as this chain.
 * The pool rule (rx_ll_try_pool): an f32 NCHW nn.max_pool2d or nn.avg_pool2d becomes
 * call_dps_library("rt.pool2d", x, params) (params: pool size, strides, padding,
 * dilation, ceil_mode, max, count_include_pad; i64 (13,)) under the same volume rule on
 * the taps; name "pool2d". So does an nn.adaptive_avg_pool2d whose windows are all one
 * size (literal H, W divisible by the output's OH, OW; global average pooling is 1, 1):
 * the avg pool of H / OH by W / OW, stride the same, no padding (its windows are the
 * adaptive ones exactly); an output of 1 x 1 on any H, W (DenseNet's head on a dynamic
 * map) is the global average, pool size and strides 0 in the params. Other adaptive
 * poolings stay generated. An avg pool without ceil_mode that counts its padding or has
 * none, over a constant-0 nn.pad of H and W only (PyTorch exports AvgPool2d(3, 2, 1) as
 * Pad + an unpadded AveragePool: ResNeSt's, Inception's 3x3/1 pools), reads the pad's
 * operand with the pad's amounts added to its padding, counted (count_include_pad):
 * every window keeps its K taps, the padded ones adding the 0 the pad wrote (rt.pool2d's
 * avg fill is 0), in the same order: bit-identical, and the pad's kernel (a select per
 * element over the padded map) goes (dce_post drops its unused binding).
 * The rnn form (rx_lib_rnn_call, called by legalize at every opt level): nn.rnn becomes
 * call_dps_library("rt.rnn", its 7 operands, params (mode, direction,
 * linear_before_reset)).
 *
 * Cost: O(1) per binding tried, but for the activation matcher's (library_epi.c).
 */
#include "relax/pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "library_int.h"
#include "relax/deduce.h"
#include "relax/op.h"

/* ---- the conv rule: nn.conv2d chains -> blas.conv2d (runtime/library_conv.c) ---- */

enum { CONV_NPARAMS = 11, /* blas.conv2d's params: strides, padding, dilation, groups,
                            flags (1 bias, 2 residual), act (1 relu, 3 SiLU, 4 hardswish,
                            5 leaky relu: 12 params) */
       CONV_MAXCHAIN = 24 }; /* conv, bias, residual, and the activation's bindings */

/* The n = 1 or S = 2 (or 2 * S with padding) integers of attribute name into v. */
static bool conv_ints(const rx_node *call, const char *name, int64_t *v, int max, int *n)
{
    const rx_attr *a = rx_call_attr(call, name);
    if (!a || a->kind != RX_A_ARRAY || a->u.arr.n < 1 || a->u.arr.n > max) return false;
    for (int i = 0; i < a->u.arr.n; i++) {
        if (a->u.arr.items[i]->kind != RX_A_INT) return false;
        v[i] = a->u.arr.items[i]->u.i;
    }
    *n = a->u.arr.n;
    return true;
}

static bool attr_is(const rx_node *call, const char *name, const char *want)
{
    const rx_attr *a = rx_call_attr(call, name);
    return a && a->kind == RX_A_STR && !strcmp(a->u.s, want);
}

/* Whether call is an nn.conv2d blas.conv2d takes (f32 NCHW x, OIHW w, f32 result); its
 * params' first nine entries into p. */
static bool conv_ok(const rx_node *call, int64_t p[CONV_NPARAMS])
{
    if (!rx_ll_is_op(call, "nn.conv2d") || call->nargs != 2) return false;
    if (!rx_ll_f32_tensor(call->args[0]->sinfo, 4) || !rx_ll_f32_tensor(call->args[1]->sinfo, 4) ||
        !rx_ll_f32_tensor(call->sinfo, 4) || !attr_is(call, "data_layout", "NCHW") ||
        !attr_is(call, "kernel_layout", "OIHW"))
        return false;
    const rx_attr *od = rx_call_attr(call, "out_dtype"), *g = rx_call_attr(call, "groups");
    if (od->kind != RX_A_NULL && !(od->kind == RX_A_STR && !strcmp(od->u.s, "f32"))) return false;
    int64_t st[2], pd[4], dl[2];
    int ns, np, nd;
    if (!g || g->kind != RX_A_INT || g->u.i < 1 || !conv_ints(call, "strides", st, 2, &ns) ||
        !conv_ints(call, "padding", pd, 4, &np) || np == 3 || !conv_ints(call, "dilation", dl, 2, &nd))
        return false;
    for (int i = 0; i < 2; i++) {
        p[i] = st[ns == 1 ? 0 : i];     /* stride h, w */
        p[6 + i] = dl[nd == 1 ? 0 : i]; /* dilation h, w */
    }
    for (int i = 0; i < 4; i++) p[2 + i] = np == 1 ? pd[0] : np == 2 ? pd[i % 2] : pd[i];
    p[8] = g->u.i;
    return true;
}

/* The cost rule for a conv_ok call: the library when the multiply-adds N * O * OH * OW *
 * (C / groups) * KH * KW reach the threshold (a symbolic dim counts as large). */
static bool conv_worth(const rx_ll_ctx *c, const rx_node *call)
{
    if (c->o && c->o->mode == RX_LIB_ALL) return true;
    const rx_sinfo *w = call->args[1]->sinfo, *r = call->sinfo;
    rx_expr *d[7] = {r->dims[0], r->dims[1], r->dims[2], r->dims[3], w->dims[1], w->dims[2], w->dims[3]};
    double volume = 1;
    for (int i = 0; i < 7; i++) {
        int64_t v;
        if (!rx_expr_is_const(d[i], &v)) return true;
        volume *= (double)v;
    }
    int64_t threshold = c->o && c->o->threshold > 0 ? c->o->threshold : RX_LIB_THRESHOLD_DEFAULT;
    return volume >= (double)threshold;
}

/* The binding after `after` that alone uses v, when it is an op call not taken yet. */
static rx_binding *conv_next(const rx_ll_ctx *c, const rx_node *v, rx_block *b, int after,
                             const bool *drop)
{
    rx_binding *u = rx_ll_sole_user(c, v, b, after);
    if (!u || drop[u - b->bindings] || !u->value || u->value->kind != RX_N_CALL ||
        u->value->call_kind != RX_CALL_OP || !rx_ll_f32_tensor(u->value->sinfo, 4))
        return NULL;
    for (int i = 0; i < 4; i++)
        if (!rx_expr_same(u->value->sinfo->dims[i], v->sinfo->dims[i])) return NULL;
    return u;
}

/* The other operand of s = op(v, k) or op(k, v) (op "add", "maximum", "minimum"), or NULL. */
static rx_node *op_other(const rx_node *s, const char *op, const rx_node *v)
{
    if (!rx_ll_is_op(s, op) || s->nargs != 2) return NULL;
    int k = s->args[0] == v ? 1 : s->args[1] == v ? 0 : -1;
    return k < 0 || s->args[k] == v ? NULL : s->args[k];
}

/* Whether k is a per-channel bias of the 4-d v: f32 (O, 1, 1) or (1, O, 1, 1). */
static bool channel_bias(const rx_node *k, const rx_node *v)
{
    const rx_sinfo *s = k->sinfo;
    if (!s || s->kind != RX_SI_TENSOR || s->dtype != RX_DT_F32 || !s->dims || s->ndim < 3 ||
        s->ndim > 4)
        return false;
    int64_t one;
    for (int i = 0; i < s->ndim; i++) {
        int at = 4 - s->ndim + i; /* right-aligned against (N, O, OH, OW) */
        if (at == 1 ? !rx_expr_same(s->dims[i], v->sinfo->dims[1])
                    : !rx_expr_is_const(s->dims[i], &one) || one != 1)
            return false;
    }
    return true;
}

/* Whether k has the 4-d v's shape (f32): a residual. */
static bool same_shape(const rx_node *k, const rx_node *v)
{
    if (!rx_ll_f32_tensor(k->sinfo, 4)) return false;
    for (int i = 0; i < 4; i++)
        if (!rx_expr_same(k->sinfo->dims[i], v->sinfo->dims[i])) return false;
    return true;
}

/* An i64 (n,) constant of p: a library call's params. */
static rx_node *int_params(rx_module *m, const int64_t *p, int n)
{
    rx_const *k = RX_NEW(m->arena, rx_const);
    int64_t *shape = RX_NEWN(m->arena, int64_t, 1);
    uint8_t *bytes = RX_NEWN(m->arena, uint8_t, 8 * (size_t)n);
    shape[0] = n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 8; j++) bytes[8 * i + j] = (uint8_t)((uint64_t)p[i] >> (8 * j));
    *k = (rx_const){NULL, RX_DT_I64, 1, shape, bytes, 8 * (size_t)n, 0};
    rx_node *kn = rx_n_const(m, k);
    rx_expr *d = rx_e_int(m->arena, n);
    kn->sinfo = rx_si_tensor(m->arena, RX_DT_I64, 1, &d);
    return kn;
}

/* The f32 bits of v as a params word. */
static int64_t f32_bits(double v)
{
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (int64_t)bits;
}

/* The activation that may end a conv chain at binding u (the sole user of the chain so
 * far): [nn.relu ->] [maximum(v, lo) ->] [minimum(., hi)], lo and hi scalar f32
 * constants, the clamp's bounds max(0 if relu, lo) <= hi (ONNX Clip imports as maximum
 * then minimum; PyTorch exports F.relu6 as Relu then Clip(0, 6), nn.ReLU6 and Hardtanh
 * as Clip). Appends the bindings taken to chain and sets p's act: relu for a lower bound
 * 0 alone, else clamp with the bounds in p[11], p[12]; returns the params' length (11 or
 * 13). With lo > hi (ONNX: hi wins) only a leading relu is taken. */
static int conv_act(const rx_ll_ctx *c, rx_block *b, rx_binding *u, int *chain, int *len,
                    const bool *drop, int64_t p[CONV_NPARAMS + 2])
{
    double lo = -INFINITY, hi = INFINITY, v;
    rx_node *cur = b->bindings[chain[*len - 1]].var, *k;
    int taken = 0, at[3];
    if (rx_ll_is_op(u->value, "nn.relu") && u->value->nargs == 1) {
        lo = 0.0, p[10] = 1, chain[(*len)++] = (int)(u - b->bindings), cur = u->var;
        u = conv_next(c, cur, b, chain[*len - 1], drop);
    }
    k = u ? op_other(u->value, "maximum", cur) : NULL;
    if (k && rx_ll_scalar_f32(c, k, &v)) {
        lo = v > lo ? v : lo, at[taken++] = (int)(u - b->bindings), cur = u->var;
        u = conv_next(c, cur, b, at[0], drop);
    }
    k = u ? op_other(u->value, "minimum", cur) : NULL;
    if (k && rx_ll_scalar_f32(c, k, &hi)) at[taken++] = (int)(u - b->bindings);
    if (!taken || !(lo <= hi)) return CONV_NPARAMS;
    for (int i = 0; i < taken; i++) chain[(*len)++] = at[i];
    if (lo == 0.0 && hi == INFINITY) {
        p[10] = 1;
        return CONV_NPARAMS;
    }
    p[10] = 2, p[11] = f32_bits(lo), p[12] = f32_bits(hi);
    return CONV_NPARAMS + 2;
}

/* The scalar f32 constant k within 1e-6 relative (absolute at 0) of want. */
static bool scalar_near(const rx_ll_ctx *c, const rx_node *k, double want)
{
    double v;
    return k && rx_ll_scalar_f32(c, k, &v) && fabs(v - want) <= 1e-6 * (want ? fabs(want) : 1.0);
}

/* Hardswish as ONNX HardSwish imports (and x * HardSigmoid(x) with alpha 1/6, beta 0.5):
 * with x used exactly twice, m = x * 1/6; s = m + 0.5; a = maximum(s, 0); h = minimum(a,
 * 1); y = x * h (each in either operand order, every intermediate used once). Appends the
 * five bindings (y's last) to chain; returns whether it matched. */
static bool hardswish_chain(const rx_ll_ctx *c, rx_block *b, rx_node *x, int after,
                            const bool *drop, int *chain, int *len)
{
    if (x->kind != RX_N_VAR || x->u.var.id < 0 || x->u.var.id >= c->nids ||
        c->uses[x->u.var.id] != 2)
        return false;
    rx_binding *m = NULL;
    for (int k = after + 1; k < b->nbindings && !m; k++)
        if (!drop[k] && !b->bindings[k].match_cast &&
            scalar_near(c, op_other(b->bindings[k].value, "multiply", x), 1.0 / 6.0))
            m = &b->bindings[k];
    rx_binding *s = m ? conv_next(c, m->var, b, (int)(m - b->bindings), drop) : NULL;
    if (!s || !scalar_near(c, op_other(s->value, "add", m->var), 0.5)) return false;
    rx_binding *a = conv_next(c, s->var, b, (int)(s - b->bindings), drop);
    if (!a || !scalar_near(c, op_other(a->value, "maximum", s->var), 0.0)) return false;
    rx_binding *h = conv_next(c, a->var, b, (int)(a - b->bindings), drop);
    if (!h || !scalar_near(c, op_other(h->value, "minimum", a->var), 1.0)) return false;
    rx_binding *y = conv_next(c, h->var, b, (int)(h - b->bindings), drop);
    if (!y || op_other(y->value, "multiply", h->var) != x) return false;
    rx_binding *at[5] = {m, s, a, h, y};
    for (int i = 0; i < 5; i++) chain[(*len)++] = (int)(at[i] - b->bindings);
    return true;
}

/* Leaky relu as ONNX LeakyRelu imports, where(greater(x, 0), x, x * a), or as a PRelu of
 * one slope imports, where(less(x, 0), x * a, x) with a > 0 (the product in either
 * operand order, a a scalar f32 constant): with x used exactly three times (the test, the
 * product, the where) and the test and the product by the where alone. blas.conv2d's act
 * 5 computes v > 0 ? v : v * a, the first form's values exactly, and the second's for a
 * > 0 (at -0 and +0 both give the zero itself, a NaN stays NaN). Appends the three
 * bindings (the where last) to chain and the slope to *a; returns whether it matched. */
static bool leaky_chain(const rx_ll_ctx *c, rx_block *b, rx_node *x, int after,
                        const bool *drop, int *chain, int *len, double *a)
{
    if (x->kind != RX_N_VAR || x->u.var.id < 0 || x->u.var.id >= c->nids ||
        c->uses[x->u.var.id] != 3)
        return false;
    rx_binding *t = NULL, *m = NULL;
    double zero = 1, slope = 0;
    for (int k = after + 1; k < b->nbindings && (!t || !m); k++) {
        rx_node *v = b->bindings[k].value, *o;
        if (drop[k] || b->bindings[k].match_cast || !v) continue;
        if (!t && (rx_ll_is_op(v, "greater") || rx_ll_is_op(v, "less")) && v->nargs == 2 &&
            v->args[0] == x && rx_ll_scalar_f32(c, v->args[1], &zero) && zero == 0.0)
            t = &b->bindings[k];
        else if (!m && (o = op_other(v, "multiply", x)) && rx_ll_scalar_f32(c, o, &slope))
            m = &b->bindings[k];
    }
    if (!t || !m) return false;
    rx_binding *w = rx_ll_sole_user(c, t->var, b, (int)(t - b->bindings));
    if (!w || w != rx_ll_sole_user(c, m->var, b, (int)(m - b->bindings)) || drop[w - b->bindings] ||
        !rx_ll_is_op(w->value, "where") || w->value->nargs != 3 || w->value->args[0] != t->var ||
        !rx_ll_f32_tensor(w->value->sinfo, 4))
        return false;
    bool gt = rx_ll_is_op(t->value, "greater");
    if (w->value->args[gt ? 1 : 2] != x || w->value->args[gt ? 2 : 1] != m->var || (!gt && !(slope > 0)))
        return false;
    for (int i = 0; i < 4; i++)
        if (!rx_expr_same(w->value->sinfo->dims[i], x->sinfo->dims[i])) return false;
    chain[(*len)++] = (int)(t - b->bindings), chain[(*len)++] = (int)(m - b->bindings);
    chain[(*len)++] = (int)(w - b->bindings);
    *a = slope;
    return true;
}

/* SiLU (x * sigmoid(x), nn.silu, however spelt: library_epi.c), hardswish or leaky relu
 * ending a conv chain whose last value x is used by them alone: appends their bindings to
 * chain and sets p's act (3, 4; 5 and the slope's bits in p[11]); returns the params'
 * length (11, or 12 with leaky relu). */
static int conv_gate_act(const rx_ll_ctx *c, rx_block *b, int *chain, int *len,
                         const bool *drop, int64_t p[CONV_NPARAMS + 2])
{
    rx_node *x = b->bindings[chain[*len - 1]].var;
    double slope;
    if (hardswish_chain(c, b, x, chain[*len - 1], drop, chain, len)) {
        p[10] = 4;
        return CONV_NPARAMS;
    }
    if (leaky_chain(c, b, x, chain[*len - 1], drop, chain, len, &slope)) {
        p[10] = 5, p[11] = f32_bits(slope);
        return CONV_NPARAMS + 1;
    }
    rx_le_ctx le = {c->uses, c->nids, {rx_ll_def_of, (void *)c}};
    int ch[16], act = RX_LE_ACT_NONE;
    int k = rx_le_match(&le, b, x, chain[*len - 1], drop, ch, &act);
    if (!k || act != RX_LE_ACT_SILU || *len + k > CONV_MAXCHAIN) return CONV_NPARAMS;
    for (int i = 0; i < k; i++) chain[(*len)++] = ch[i];
    p[10] = 3;
    return CONV_NPARAMS;
}

/* Tries the conv rule on binding j of dataflow block b: the chain
 *   y = nn.conv2d(x, w) [-> add per-channel bias] [-> add residual of y's shape]
 *       [-> nn.relu and/or a clamp: conv_act]
 * (every intermediate used once, by the next) becomes one call
 *   blas.conv2d(x, w, params, [bias], [residual]) at the chain's last binding. */
bool rx_ll_try_conv(rx_ll_ctx *c, rx_block *b, int j, bool *drop)
{
    rx_binding *cb = &b->bindings[j];
    int64_t p[CONV_NPARAMS + 2] = {0};
    if (!conv_ok(cb->value, p) || !conv_worth(c, cb->value)) return false;
    rx_node *cur = cb->var, *args[5] = {cb->value->args[0], cb->value->args[1], NULL};
    int chain[CONV_MAXCHAIN] = {j}, len = 1, nargs = 3;
    rx_binding *u = conv_next(c, cur, b, j, drop);
    rx_node *k = u ? op_other(u->value, "add", cur) : NULL;
    if (k && channel_bias(k, cur)) {
        p[9] |= 1, args[nargs++] = k, chain[len++] = (int)(u - b->bindings), cur = u->var;
        u = conv_next(c, cur, b, chain[len - 1], drop);
        k = u ? op_other(u->value, "add", cur) : NULL;
    }
    if (k && same_shape(k, cur)) {
        p[9] |= 2, args[nargs++] = k, chain[len++] = (int)(u - b->bindings), cur = u->var;
        u = conv_next(c, cur, b, chain[len - 1], drop);
    }
    int np = CONV_NPARAMS;
    if (u) np = conv_act(c, b, u, chain, &len, drop, p);
    else np = conv_gate_act(c, b, chain, &len, drop, p);
    args[2] = int_params(c->m, p, np);
    rx_ll_put_lib(c, &b->bindings[chain[len - 1]], "blas.conv2d", args, nargs);
    for (int i = 0; i < len - 1; i++) drop[chain[i]] = true;
    return true;
}

/* ---- the pool rule: nn.max_pool2d / nn.avg_pool2d -> rt.pool2d ---- */

enum { POOL_NPARAMS = 13 }; /* rt.pool2d's params: pool size, strides, padding, dilation,
                               ceil_mode, max, count_include_pad */

static bool attr_bool(const rx_node *call, const char *name, bool *v)
{
    const rx_attr *a = rx_call_attr(call, name);
    if (!a || a->kind != RX_A_BOOL) return false;
    *v = a->u.b;
    return true;
}

/* An f32 NCHW max or avg pooling (its params into p) when worth the library: the taps
 * N * C * OH * OW * KH * KW reach the threshold (a symbolic dim counts as large). The
 * generated pooling reads each tap through a bounds select (~3 ns a tap measured on the
 * probe's 3x3 stride-2 max pool); rt.pool2d clips the window per row instead. */
/* An nn.adaptive_avg_pool2d whose windows are all one size: literal H, W divisible by the
 * output's OH, OW (global average pooling: 1, 1). Its pool size and strides (H / OH,
 * W / OW; no padding, dilation 1) into k and st. */
static bool adaptive_as_pool(const rx_node *call, int64_t k[2], int64_t st[2])
{
    const rx_sinfo *x = call->args[0]->sinfo, *y = call->sinfo;
    bool literal = true;
    for (int d = 0; d < 2 && literal; d++) {
        int64_t h, oh;
        literal = rx_expr_is_const(x->dims[2 + d], &h) && rx_expr_is_const(y->dims[2 + d], &oh) &&
                  oh >= 1 && h >= oh && h % oh == 0;
        k[d] = st[d] = literal ? h / oh : 0;
    }
    int64_t gh, gw; /* else global on a symbolic plane: rt.pool2d's size and strides 0 */
    if (literal) return true;
    k[0] = k[1] = st[0] = st[1] = 0;
    return rx_expr_is_const(y->dims[2], &gh) && rx_expr_is_const(y->dims[3], &gw) && gh == 1 &&
           gw == 1;
}

/* When x is bound (in the block being lowered) to a constant-0 nn.pad of its last two
 * axes only, that pad's operand, its amounts added to p's padding (top, left, bottom,
 * right at p[4 .. 8)); else x. */
static rx_node *zero_pad_source(rx_ll_ctx *c, rx_node *x, int64_t *p)
{
    rx_node *d = x->kind == RX_N_VAR ? rx_ll_def_of(c, x) : NULL;
    int64_t pw[8];
    int n;
    if (!d || !rx_ll_is_op(d, "nn.pad") || d->nargs != 1 || !rx_ll_f32_tensor(d->args[0]->sinfo, 4) ||
        !attr_is(d, "pad_mode", "constant") || !conv_ints(d, "pad_width", pw, 8, &n) || n != 8)
        return x;
    const rx_attr *v = rx_call_attr(d, "pad_value");
    if (!v || v->kind != RX_A_FLOAT || v->u.f != 0.0 || pw[0] || pw[1] || pw[2] || pw[3])
        return x;
    for (int i = 4; i < 8; i++)
        if (pw[i] < 0) return x;
    p[4] += pw[4], p[5] += pw[6], p[6] += pw[5], p[7] += pw[7];
    return d->args[0];
}

bool rx_ll_try_pool(rx_ll_ctx *c, rx_binding *bd)
{
    rx_node *call = bd->value;
    bool is_max = rx_ll_is_op(call, "nn.max_pool2d"),
         adaptive = rx_ll_is_op(call, "nn.adaptive_avg_pool2d");
    if ((!is_max && !adaptive && !rx_ll_is_op(call, "nn.avg_pool2d")) || call->nargs != 1 ||
        !rx_ll_f32_tensor(call->args[0]->sinfo, 4) || !rx_ll_f32_tensor(call->sinfo, 4) ||
        !attr_is(call, "layout", "NCHW"))
        return false;
    int64_t k[2], st[2], pd[4] = {0}, dl[2] = {1, 1}, p[POOL_NPARAMS] = {0};
    int nk = 2, ns = 2, np = 1, nd = 1;
    bool ceil_mode = false, cip = false;
    if (adaptive ? !adaptive_as_pool(call, k, st) :
        !conv_ints(call, "pool_size", k, 2, &nk) || !conv_ints(call, "strides", st, 2, &ns) ||
        !conv_ints(call, "padding", pd, 4, &np) || np == 3 ||
        !conv_ints(call, "dilation", dl, 2, &nd) || !attr_bool(call, "ceil_mode", &ceil_mode) ||
        (!is_max && !attr_bool(call, "count_include_pad", &cip)))
        return false;
    for (int i = 0; i < 2; i++) {
        p[i] = k[nk == 1 ? 0 : i], p[2 + i] = st[ns == 1 ? 0 : i], p[8 + i] = dl[nd == 1 ? 0 : i];
    }
    for (int i = 0; i < 4; i++) p[4 + i] = np == 1 ? pd[0] : np == 2 ? pd[i % 2] : pd[i];
    p[10] = ceil_mode, p[11] = is_max, p[12] = cip;
    rx_node *x = call->args[0];
    /* an unpadded pool's windows are whole: count_include_pad does not matter */
    if (!is_max && !adaptive && !ceil_mode && (cip || !(p[4] || p[5] || p[6] || p[7])) &&
        (x = zero_pad_source(c, x, p)) != call->args[0])
        p[12] = 1;
    if (!(c->o && c->o->mode == RX_LIB_ALL)) {
        double volume = (double)p[0] * (double)p[1];
        for (int d = 0; d < 2 && p[0] == 0; d++) { /* the global average: the plane's taps */
            int64_t v;
            volume = d ? volume : 1.0;
            volume *= rx_expr_is_const(call->args[0]->sinfo->dims[2 + d], &v) ? (double)v : INFINITY;
        }
        for (int i = 0; i < 4; i++) {
            int64_t v;
            if (!rx_expr_is_const(call->sinfo->dims[i], &v)) volume = INFINITY;
            else volume *= (double)v;
        }
        int64_t threshold = c->o && c->o->threshold > 0 ? c->o->threshold : RX_LIB_THRESHOLD_DEFAULT;
        if (volume < (double)threshold) return false;
    }
    rx_node *args[2] = {x, int_params(c->m, p, POOL_NPARAMS)};
    rx_ll_put_lib(c, bd, "rt.pool2d", args, 2);
    return true;
}

/* ---- nn.rnn -> rt.rnn (called by legalize, at every opt level) ---- */

rx_node *rx_lib_rnn_call(rx_module *m, rx_node *call)
{
    static const char *const modes[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    int64_t p[3] = {0, 0, 0};
    for (int i = 0; i < RX_COUNTOF(modes); i++)
        if (attr_is(call, "mode", modes[i])) p[0] = i;
    for (int i = 0; i < RX_COUNTOF(dirs); i++)
        if (attr_is(call, "direction", dirs[i])) p[1] = i;
    bool lbr = false;
    p[2] = attr_bool(call, "linear_before_reset", &lbr) && lbr;
    rx_node **args = RX_NEWN(m->arena, rx_node *, 8);
    for (int i = 0; i < 7; i++) args[i] = call->args[i];
    args[7] = int_params(m, p, 3);
    rx_node *lib = rx_n_call_lib(m, "rt.rnn", args, 8, call->sinfo);
    lib->sinfo = call->sinfo;
    lib->loc = call->loc;
    return lib;
}
