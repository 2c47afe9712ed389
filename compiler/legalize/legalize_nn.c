/*
 * legalize_nn.c — legalization rules of the windowed NCHW / NCDHW ops: conv2d and
 * conv3d (and their transposes), max/avg pooling in 2-d and 3-d, and adaptive average
 * pooling. The rules are written once for S spatial dims (3 for the *3d* ops, else 2);
 * the 2-d forms below read the same with a D dim added for 3-d.
 *
 * Window geometry, per spatial dim d (y for H, x for W), as deduction derived the
 * output extents (op_nn.c): output position o reads input position
 *     p = o * stride + k * dilation - pad_before,   k in [0, kernel)
 * Padding is never materialized: a read is guarded by a bounds check,
 * select(0 <= p && p < H, x[..p..], fill), where fill is 0 for sums and the dtype's
 * lowest value for max. A side's check is emitted only when the window can cross it:
 * p >= 0 when pad_before > 0, p < H when pad_after > 0 or in ceil_mode (otherwise
 * (out - 1) * stride + (kernel - 1) * dilation - pad_before <= H - 1 follows from the
 * output-extent formula). Guarded reads rely on select evaluating only the operand
 * it picks (the C codegen emits `c ? a : b`), as TVM's if_then_else in topi's pad.
 *
 *   nn.conv2d       out[b, o, y, x] = sum over (ic, kh, kw) of
 *                       guarded x[b, g * Ig + ic, py, px] * w[o, ic, kh, kw]
 *                   with Ig = w's dim 1 (input channels per group), g = o // (O /
 *                   groups) (0 without groups); operands converted to the result
 *                   dtype (out_dtype) before the product, as topi.conv2d.
 *   nn.max_pool2d   max over the window of the guarded read (padding never wins:
 *                   its fill is the lowest value).
 *   nn.avg_pool2d   T_sum = sum of the guarded read, then out = T_sum / count, where
 *                   count is the number of window taps inside [lo, hi] per dim, in
 *                   closed form (kmax - kmin + 1 with kmin = max(0, ceil((lo - s) /
 *                   dil)), kmax = min(K - 1, floor((hi - s) / dil)), s = o * stride -
 *                   pad_before), multiplied and at least 1. count_include_pad=false:
 *                   [lo, hi] = [0, H - 1] (valid elements only); true: [-pad_before,
 *                   H - 1 + pad_after] — the written padding counts, the extra
 *                   ceil_mode overhang does not (TVM's topi and PyTorch). Integer
 *                   tensors divide with floor division (as `mean`).
 *   nn.adaptive_avg_pool2d   window i of a dim spans [floor(i * H / OH), ceil((i + 1)
 *                   * H / OH)); T_sum reduces over the largest window extent K
 *                   (exact for literal H and OH; (H + OH - 1) // OH + 1 bounds it
 *                   otherwise) with the taps beyond the window's own extent masked by
 *                   select, then divides by the window's element count. output_size
 *                   null (OH = H) is the identity window.
 *   nn.conv2d_transpose  the gather form of the transposed convolution (at
 *                   rule_conv2d_transpose), taps that land between strides masked.
 * Cost: conv2d is the direct O(N * O * OH * OW * Ig * KH * KW) loop nest; pools
 * O(out * window). No im2col, no Winograd, no tiling: those are schedules (later).
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXSP = 3 };

typedef struct wctx {
    lg_ctx *c;
    rx_te_tensor *x, *w, *sum;
    int S;                   /* spatial dims: 2 (*2d ops) or 3 (*3d ops) */
    int64_t st[MAXSP], dl[MAXSP]; /* strides, dilation per spatial dim */
    int64_t pd[2 * MAXSP];   /* padding: before[0..S), after[0..S) */
    int64_t k[MAXSP];        /* pooling window (pools) */
    bool ceil_mode, cip, is_max;
    int64_t groups;
    rx_expr *og;             /* conv: output channels per group */
    rx_expr *ig;             /* conv2d_transpose: input channels per group */
    rx_dtype dt;             /* result dtype */
    bool amask[2];           /* adaptive: the dim's taps need a mask */
} wctx;

static rx_expr *lit(lg_ctx *c, int64_t v) { return rx_e_int(c->a, v); }
static rx_expr *bin(lg_ctx *c, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(c->a, k, x, y);
}

/* A 1- or S-value attribute, one value per spatial dim. */
static void sp_attr(lg_ctx *c, const char *name, int S, int64_t v[MAXSP])
{
    int64_t raw[2 * MAXSP];
    int n;
    lg_attr_ints(rx_call_attr(c->call, name), raw, 2 * MAXSP, &n);
    RX_ASSERT(n == 1 || n == S); /* deduction checked */
    for (int i = 0; i < S; i++) v[i] = raw[n == 1 ? 0 : i];
}

/* "padding" as (before[0..S), after[0..S)): 1 value all sides, S (each dim's both
 * sides), 2 * S as written. */
static void pad_attr(lg_ctx *c, int S, int64_t p[2 * MAXSP])
{
    int64_t raw[2 * MAXSP];
    int n;
    lg_attr_ints(rx_call_attr(c->call, "padding"), raw, 2 * MAXSP, &n);
    RX_ASSERT(n == 1 || n == S || n == 2 * S);
    for (int i = 0; i < 2 * S; i++) p[i] = n == 1 ? raw[0] : n == S ? raw[i % S] : raw[i];
}

/* Reads the shared window attributes (S from the op's name: *3d* ops have 3 spatial
 * dims); false after an error. */
static bool read_window(lg_ctx *c, wctx *w)
{
    w->S = strstr(lg_opname(c), "3d") ? 3 : 2;
    sp_attr(c, "strides", w->S, w->st);
    sp_attr(c, "dilation", w->S, w->dl);
    pad_attr(c, w->S, w->pd);
    if (!(w->x = lg_input(c, 0, "x"))) return false;
    if (rx_te_ndim(w->x) != w->S + 2)
        return lg_fail(c, w->S == 3 ? "needs a 5-D NCDHW input" : "needs a 4-D NCHW input");
    w->dt = (rx_dtype)lg_out(c, 0)->dtype;
    return true;
}

/* The input position of output o and tap k along spatial dim d (0: H, 1: W). */
static rx_expr *in_pos(wctx *w, int d, rx_expr *o, rx_expr *k)
{
    lg_ctx *c = w->c;
    rx_expr *p = bin(c, RX_E_ADD, bin(c, RX_E_MUL, o, lit(c, w->st[d])), bin(c, RX_E_MUL, k, lit(c, w->dl[d])));
    return rx_te_simplify(c->te, bin(c, RX_E_SUB, p, lit(c, w->pd[d])));
}

/* The bounds check of positions p[0..S) (NULL when no side can be crossed). */
static rx_expr *in_bounds(wctx *w, rx_expr *const *p)
{
    lg_ctx *c = w->c;
    rx_expr *cond = NULL;
    for (int d = 0; d < w->S; d++) {
        rx_expr *parts[2] = {NULL, NULL};
        if (w->pd[d] > 0) parts[0] = bin(c, RX_E_GE, p[d], lit(c, 0));
        if (w->pd[d + w->S] > 0 || w->ceil_mode) parts[1] = bin(c, RX_E_LT, p[d], rx_te_dim(w->x, 2 + d));
        for (int i = 0; i < 2; i++)
            if (parts[i]) cond = cond ? bin(c, RX_E_AND, cond, parts[i]) : parts[i];
    }
    return cond;
}

/* x[b, ch, p...] converted to dt, guarded by the bounds check with fill. */
static rx_expr *guarded(rx_te *te, wctx *w, rx_expr *b, rx_expr *ch, rx_expr *const *p,
                        rx_expr *fill)
{
    rx_expr *xi[2 + MAXSP] = {b, ch};
    for (int d = 0; d < w->S; d++) xi[2 + d] = p[d];
    rx_expr *v = rx_te_cast(te, w->dt, rx_te_at(te, w->x, xi));
    rx_expr *cond = in_bounds(w, p);
    return cond ? rx_e_select(rx_te_arena(te), cond, v, fill) : v;
}

/* ---------------------------------------------------------------- conv2d */
static rx_expr *conv_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    wctx *w = ud;
    lg_ctx *c = w->c;
    rx_expr *ch = r[0];
    if (w->groups > 1) {
        rx_expr *g = bin(c, RX_E_FLOORDIV, idx[1], w->og);
        ch = rx_te_simplify(te, bin(c, RX_E_ADD, bin(c, RX_E_MUL, g, rx_te_dim(w->w, 1)), r[0]));
    }
    rx_expr *p[MAXSP], *wi[2 + MAXSP] = {idx[1], r[0]};
    for (int d = 0; d < w->S; d++) {
        p[d] = in_pos(w, d, idx[2 + d], r[1 + d]);
        wi[2 + d] = r[1 + d];
    }
    rx_expr *xv = guarded(te, w, idx[0], ch, p, rx_te_const(te, 0, w->dt));
    rx_expr *wv = rx_te_cast(te, w->dt, rx_te_at(te, w->w, wi));
    return bin(c, RX_E_MUL, xv, wv);
}

/* The weight (input 1, (S + 2)-d), the groups and the reduction domain: the weight's
 * channel dim ic_dim (or *ic when given), then its kernel dims. */
static bool conv_weight(lg_ctx *c, wctx *w, const char *layout, rx_expr *ic,
                        rx_expr *rdom[1 + MAXSP])
{
    if (!(w->w = lg_input(c, 1, "w"))) return false;
    if (rx_te_ndim(w->w) != w->S + 2)
        return lg_fail(c, "needs a %d-D %.2s%s weight", w->S + 2, layout,
                       w->S == 3 ? "DHW" : "HW");
    if (w->dt == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    w->groups = rx_call_attr(c->call, "groups")->u.i;
    rdom[0] = ic ? ic : rx_te_dim(w->w, 1);
    for (int d = 0; d < w->S; d++) rdom[1 + d] = rx_te_dim(w->w, 2 + d);
    return true;
}

static bool rule_conv(lg_ctx *c)
{
    wctx w = {0};
    w.c = c;
    rx_expr *rdom[1 + MAXSP];
    if (!read_window(c, &w) || !conv_weight(c, &w, "OI", NULL, rdom)) return false;
    w.og = rx_te_simplify(c->te, bin(c, RX_E_FLOORDIV, rx_te_dim(w.w, 0), lit(c, w.groups)));
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_reduce(c->te, lg_tname(c), w.dt, w.S + 2, o->dims, RX_TE_SUM, w.S + 1,
                              rdom, NULL, conv_cb, &w));
    return true;
}

/* ---------------------------------------------------------------- conv2d_transpose */
/* out[b, o, y, x] = sum over (ic in o's group, kh, kw) of x[b, ic, iy, ix] *
 * w[ic, o % Og, kh, kw] where t = y + pad_top - kh * dilation is a multiple of the
 * stride and iy = t / stride lies in [0, H) (likewise ix): the scatter of the forward
 * definition read as a gather. The read indices are clamped into x so the unselected
 * operand of the select stays inside it. */
static rx_expr *tap(wctx *w, int d, rx_expr *o, rx_expr *k, rx_expr **ok)
{
    lg_ctx *c = w->c;
    rx_expr *t = rx_te_simplify(c->te, bin(c, RX_E_SUB, bin(c, RX_E_ADD, o, lit(c, w->pd[d])),
                                           bin(c, RX_E_MUL, k, lit(c, w->dl[d]))));
    rx_expr *q = w->st[d] == 1 ? t : bin(c, RX_E_FLOORDIV, t, lit(c, w->st[d]));
    rx_expr *cond = bin(c, RX_E_AND, bin(c, RX_E_GE, t, lit(c, 0)),
                        bin(c, RX_E_LT, q, rx_te_dim(w->x, 2 + d)));
    if (w->st[d] != 1)
        cond = bin(c, RX_E_AND, cond, bin(c, RX_E_EQ, bin(c, RX_E_FLOORMOD, t, lit(c, w->st[d])), lit(c, 0)));
    *ok = *ok ? bin(c, RX_E_AND, *ok, cond) : cond;
    rx_expr *hi = rx_te_simplify(c->te, bin(c, RX_E_SUB, rx_te_dim(w->x, 2 + d), lit(c, 1)));
    return bin(c, RX_E_MAX, bin(c, RX_E_MIN, q, hi), lit(c, 0));
}

static rx_expr *convt_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    wctx *w = ud;
    lg_ctx *c = w->c;
    rx_expr *ocl = idx[1], *ch = r[0];
    if (w->groups > 1) {
        rx_expr *g = bin(c, RX_E_FLOORDIV, idx[1], w->og);
        ocl = rx_te_simplify(te, bin(c, RX_E_FLOORMOD, idx[1], w->og));
        ch = rx_te_simplify(te, bin(c, RX_E_ADD, bin(c, RX_E_MUL, g, w->ig), r[0]));
    }
    rx_expr *ok = NULL;
    rx_expr *xi[2 + MAXSP] = {idx[0], ch}, *wi[2 + MAXSP] = {ch, ocl};
    for (int d = 0; d < w->S; d++) {
        xi[2 + d] = tap(w, d, idx[2 + d], r[1 + d], &ok);
        wi[2 + d] = r[1 + d];
    }
    rx_expr *v = bin(c, RX_E_MUL, rx_te_cast(te, w->dt, rx_te_at(te, w->x, xi)),
                     rx_te_cast(te, w->dt, rx_te_at(te, w->w, wi)));
    return rx_e_select(c->a, ok, v, rx_te_const(te, 0, w->dt));
}

static bool rule_conv_transpose(lg_ctx *c)
{
    wctx w = {0};
    w.c = c;
    rx_expr *rdom[1 + MAXSP];
    if (!read_window(c, &w)) return false;
    if (!(w.w = lg_input(c, 1, "w"))) return false;
    int64_t groups = rx_call_attr(c->call, "groups")->u.i;
    w.ig = rx_te_simplify(c->te, bin(c, RX_E_FLOORDIV, rx_te_dim(w.w, 0), lit(c, groups)));
    if (!conv_weight(c, &w, "IO", w.ig, rdom)) return false;
    w.og = rx_te_dim(w.w, 1);
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_reduce(c->te, lg_tname(c), w.dt, w.S + 2, o->dims, RX_TE_SUM, w.S + 1,
                              rdom, NULL, convt_cb, &w));
    return true;
}

/* ---------------------------------------------------------------- max/avg pooling */
static rx_expr *pool_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    wctx *w = ud;
    rx_expr *p[MAXSP];
    for (int d = 0; d < w->S; d++) p[d] = in_pos(w, d, idx[2 + d], r[d]);
    rx_expr *fill = w->is_max ? rx_te_min_value(te, w->dt) : rx_te_const(te, 0, w->dt);
    return guarded(te, w, idx[0], idx[1], p, fill);
}

/* The number of taps of dim d's window at output o inside the counted range. */
static rx_expr *tap_count(wctx *w, int d, rx_expr *o)
{
    lg_ctx *c = w->c;
    int64_t K = w->k[d], dl = w->dl[d], pb = w->pd[d], pa = w->pd[d + w->S];
    if (!w->ceil_mode && (w->cip || (pb == 0 && pa == 0))) return lit(c, K);
    rx_expr *H = rx_te_dim(w->x, 2 + d);
    rx_expr *s = bin(c, RX_E_SUB, bin(c, RX_E_MUL, o, lit(c, w->st[d])), lit(c, pb));
    rx_expr *lo = lit(c, w->cip ? -pb : 0);
    rx_expr *hi = bin(c, RX_E_ADD, H, lit(c, w->cip ? pa - 1 : -1));
    rx_expr *a = bin(c, RX_E_SUB, lo, s), *b = bin(c, RX_E_SUB, hi, s);
    if (dl != 1) {
        a = bin(c, RX_E_FLOORDIV, bin(c, RX_E_ADD, a, lit(c, dl - 1)), lit(c, dl));
        b = bin(c, RX_E_FLOORDIV, b, lit(c, dl));
    }
    rx_expr *kmin = bin(c, RX_E_MAX, lit(c, 0), a), *kmax = bin(c, RX_E_MIN, lit(c, K - 1), b);
    return bin(c, RX_E_MAX, bin(c, RX_E_ADD, bin(c, RX_E_SUB, kmax, kmin), lit(c, 1)), lit(c, 0));
}

static rx_expr *avg_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    wctx *w = ud;
    lg_ctx *c = w->c;
    rx_expr *n = tap_count(w, 0, idx[2]);
    for (int d = 1; d < w->S; d++) n = bin(c, RX_E_MUL, n, tap_count(w, d, idx[2 + d]));
    if (w->ceil_mode || !w->cip) n = bin(c, RX_E_MAX, n, lit(c, 1));
    n = rx_te_cast(te, w->dt, rx_te_simplify(te, n));
    return bin(c, rx_dtype_is_float(w->dt) ? RX_E_DIV : RX_E_FLOORDIV, rx_te_at(te, w->sum, idx), n);
}

static bool rule_pool(lg_ctx *c)
{
    wctx w = {0};
    w.c = c;
    if (!read_window(c, &w)) return false;
    if (w.dt == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    int S = w.S, nd = S + 2;
    sp_attr(c, "pool_size", S, w.k);
    w.ceil_mode = rx_call_attr(c->call, "ceil_mode")->u.b;
    w.is_max = !strncmp(lg_opname(c), "nn.max_pool", 11);
    if (!w.is_max) w.cip = rx_call_attr(c->call, "count_include_pad")->u.b;
    rx_expr *rdom[MAXSP];
    for (int d = 0; d < S; d++) rdom[d] = lit(c, w.k[d]);
    const rx_sinfo *o = lg_out(c, 0);
    if (w.is_max) {
        lg_output(c, rx_te_reduce(c->te, lg_tname(c), w.dt, nd, o->dims, RX_TE_MAX, S, rdom,
                                  NULL, pool_cb, &w));
        return true;
    }
    w.sum = rx_te_reduce(c->te, "T_pool_sum", w.dt, nd, o->dims, RX_TE_SUM, S, rdom, NULL,
                         pool_cb, &w);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), w.dt, nd, o->dims, avg_out_cb, &w));
    return true;
}

/* ---------------------------------------------------------------- adaptive pooling */
/* Window [start, end) of output position o along dim d (input extent H, output OH). */
static void adaptive_window(wctx *w, int d, rx_expr *o, rx_expr **start, rx_expr **end)
{
    lg_ctx *c = w->c;
    rx_expr *H = rx_te_dim(w->x, 2 + d), *OH = lg_out(c, 0)->dims[2 + d];
    if (rx_expr_same(H, OH)) {
        *start = o;
        *end = rx_te_simplify(c->te, bin(c, RX_E_ADD, o, lit(c, 1)));
        return;
    }
    *start = rx_te_simplify(c->te, bin(c, RX_E_FLOORDIV, bin(c, RX_E_MUL, o, H), OH));
    rx_expr *hi = bin(c, RX_E_MUL, bin(c, RX_E_ADD, o, lit(c, 1)), H);
    *end = rx_te_simplify(c->te, bin(c, RX_E_FLOORDIV, bin(c, RX_E_ADD, hi, bin(c, RX_E_SUB, OH, lit(c, 1))), OH));
}

/* The largest window extent along dim d; *exact when every window has it. */
static rx_expr *adaptive_extent(wctx *w, int d, bool *exact)
{
    lg_ctx *c = w->c;
    rx_expr *H = rx_te_dim(w->x, 2 + d), *OH = lg_out(c, 0)->dims[2 + d];
    int64_t h, oh;
    *exact = false;
    if (rx_expr_same(H, OH)) {
        *exact = true;
        return lit(c, 1);
    }
    if (rx_expr_is_const(H, &h) && rx_expr_is_const(OH, &oh) && oh > 0) {
        int64_t kmax = 0, kmin = INT64_MAX;
        for (int64_t i = 0; i < oh; i++) {
            int64_t e = ((i + 1) * h + oh - 1) / oh - (i * h) / oh;
            kmax = e > kmax ? e : kmax;
            kmin = e < kmin ? e : kmin;
        }
        *exact = kmax == kmin;
        return lit(c, kmax);
    }
    rx_expr *q = bin(c, RX_E_FLOORDIV, bin(c, RX_E_ADD, H, bin(c, RX_E_SUB, OH, lit(c, 1))), OH);
    return rx_te_simplify(c->te, bin(c, RX_E_ADD, q, lit(c, 1)));
}

static rx_expr *adaptive_sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    wctx *w = ud;
    lg_ctx *c = w->c;
    rx_expr *xi[4] = {idx[0], idx[1], NULL, NULL}, *cond = NULL;
    for (int d = 0; d < 2; d++) {
        rx_expr *s, *e;
        adaptive_window(w, d, idx[2 + d], &s, &e);
        xi[2 + d] = rx_te_simplify(te, bin(c, RX_E_ADD, s, r[d]));
        if (w->amask[d]) {
            rx_expr *in = bin(c, RX_E_LT, r[d], rx_te_simplify(te, bin(c, RX_E_SUB, e, s)));
            cond = cond ? bin(c, RX_E_AND, cond, in) : in;
        }
    }
    rx_expr *v = rx_te_at(te, w->x, xi);
    return cond ? rx_e_select(c->a, cond, v, rx_te_const(te, 0, w->dt)) : v;
}

static rx_expr *adaptive_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    wctx *w = ud;
    lg_ctx *c = w->c;
    rx_expr *n = lit(c, 1);
    for (int d = 0; d < 2; d++) {
        rx_expr *s, *e;
        adaptive_window(w, d, idx[2 + d], &s, &e);
        n = bin(c, RX_E_MUL, n, bin(c, RX_E_SUB, e, s));
    }
    n = rx_te_cast(te, w->dt, rx_te_simplify(te, n));
    return bin(c, rx_dtype_is_float(w->dt) ? RX_E_DIV : RX_E_FLOORDIV, rx_te_at(te, w->sum, idx), n);
}

static bool rule_adaptive_pool2d(lg_ctx *c)
{
    wctx w = {0};
    w.c = c;
    w.S = 2;
    if (!(w.x = lg_input(c, 0, "x"))) return false;
    if (rx_te_ndim(w.x) != 4) return lg_fail(c, "needs a 4-D NCHW input");
    w.dt = (rx_dtype)lg_out(c, 0)->dtype;
    if (w.dt == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    rx_expr *rdom[2];
    bool exact[2];
    for (int d = 0; d < 2; d++) {
        rdom[d] = adaptive_extent(&w, d, &exact[d]);
        w.amask[d] = !exact[d];
    }
    const rx_sinfo *o = lg_out(c, 0);
    w.sum = rx_te_reduce(c->te, "T_pool_sum", w.dt, 4, o->dims, RX_TE_SUM, 2, rdom, NULL,
                         adaptive_sum_cb, &w);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), w.dt, 4, o->dims, adaptive_out_cb, &w));
    return true;
}

const lg_rule_entry rx_lg_nn[] = {
    {"nn.conv2d", rule_conv},
    {"nn.conv2d_transpose", rule_conv_transpose},
    {"nn.max_pool2d", rule_pool},
    {"nn.avg_pool2d", rule_pool},
    {"nn.conv3d", rule_conv},
    {"nn.conv3d_transpose", rule_conv_transpose},
    {"nn.max_pool3d", rule_pool},
    {"nn.avg_pool3d", rule_pool},
    {"nn.adaptive_avg_pool2d", rule_adaptive_pool2d},
};
const int rx_lg_nn_count = RX_COUNTOF(rx_lg_nn);
