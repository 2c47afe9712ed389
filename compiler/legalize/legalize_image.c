/*
 * legalize_image.c — the legalization rules of image.resize2d (op/op_image.c), with
 * ONNX Resize's semantics (the reference of onnx/backend/test/case/node/resize.py), and
 * of image.grid_sample (PyTorch's grid_sampler_2d; at rule_grid_sample).
 *
 * One compute over (N, C, H', W'); per spatial axis of input extent D, output extent O
 * and scale s (the `scales` attribute, or O / D) the output index x maps to the input
 * coordinate u (computed in f32, f64 for an f64 x), with L = s * D:
 *   half_pixel            (x + 0.5) / s - 0.5
 *   pytorch_half_pixel    as half_pixel, but -0.5 when L == 1
 *   align_corners         x * (D - 1) / (L - 1), 0 when L == 1
 *   asymmetric            x / s
 *   tf_half_pixel_for_nn  (x + 0.5) / s
 *   tf_crop_and_resize    r0 * (D - 1) + x * (r1 - r0) * (D - 1) / (L - 1) (the roi
 *                         fractions r0, r1; (r1 - r0) * (D - 1) / 2 when L == 1); an
 *                         element whose u lies outside [0, D - 1] on either axis is
 *                         extrapolation_value
 * then samples x at u:
 *   nearest_neighbor  index by rounding_method: round_prefer_floor ceil(u - 0.5),
 *                     round_prefer_ceil floor(u + 0.5), floor, ceil, round (half away
 *                     from zero)
 *   linear            f = floor(u), r = u - f: (1 - r) x[f] + r x[f + 1]
 *   cubic             x[f - 1 .. f + 2] weighted by Keys' kernel with cubic_alpha at
 *                     1 + r, r, 1 - r, 2 - r; cubic_exclude zeroes the weights of
 *                     indices outside [0, D) and renormalizes them to sum 1
 * Indices are clamped into [0, D - 1] (the reference pads the edges), so every load is
 * inside x. The two axes are separable: the element is the sum over the axis-h taps
 * and the axis-w taps of wh * ww * x[n, c, h, w], converted to the result dtype.
 * Cost: 1, 4 or 16 loads per element.
 */
#include <string.h>

#include "legalize_int.h"

enum { NEAREST, LINEAR, CUBIC };

typedef struct rctx {
    lg_ctx *c;
    rx_te_tensor *x;
    int method;
    const char *mode, *round;
    double alpha, extrap, roi[4], scale[2];
    bool has_scale, exclude;
    rx_dtype cdt; /* compute dtype */
} rctx;

typedef struct axis_taps {
    int n;            /* taps */
    rx_expr *idx[4];  /* clamped i64 indices */
    rx_expr *w[4];    /* weights (cdt) */
    rx_expr *out;     /* bool: u outside [0, D - 1] (tf_crop_and_resize), else NULL */
} axis_taps;

static rx_expr *bin(rctx *s, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(s->c->a, k, x, y);
}
static rx_expr *fl(rctx *s, double v) { return rx_te_const(s->c->te, v, s->cdt); }
static rx_expr *fn1(rctx *s, rx_intrin f, rx_expr *x)
{
    return rx_e_call(s->c->a, f, &x, 1, s->cdt);
}
static rx_expr *sel(rctx *s, rx_expr *cond, rx_expr *t, rx_expr *f)
{
    return rx_e_select(s->c->a, cond, t, f);
}

/* The input coordinate of output index i along spatial axis k (0: h, 1: w). */
static rx_expr *coord(rctx *s, int k, rx_expr *i)
{
    rx_te *te = s->c->te;
    rx_expr *x = rx_te_cast(te, s->cdt, i);
    rx_expr *d = rx_te_cast(te, s->cdt, rx_te_dim(s->x, 2 + k));
    rx_expr *o = rx_te_cast(te, s->cdt, lg_out(s->c, 0)->dims[2 + k]);
    rx_expr *sc = s->has_scale ? fl(s, s->scale[k]) : bin(s, RX_E_DIV, o, d);
    rx_expr *len = bin(s, RX_E_MUL, sc, d), *one = bin(s, RX_E_EQ, len, fl(s, 1));
    rx_expr *dm1 = bin(s, RX_E_SUB, d, fl(s, 1)), *lm1 = bin(s, RX_E_SUB, len, fl(s, 1));
    rx_expr *half = bin(s, RX_E_SUB, bin(s, RX_E_DIV, bin(s, RX_E_ADD, x, fl(s, 0.5)), sc), fl(s, 0.5));
    const char *m = s->mode;
    if (!strcmp(m, "half_pixel")) return half;
    if (!strcmp(m, "pytorch_half_pixel")) return sel(s, one, fl(s, -0.5), half);
    if (!strcmp(m, "asymmetric")) return bin(s, RX_E_DIV, x, sc);
    if (!strcmp(m, "tf_half_pixel_for_nn")) return bin(s, RX_E_DIV, bin(s, RX_E_ADD, x, fl(s, 0.5)), sc);
    if (!strcmp(m, "align_corners"))
        return sel(s, one, fl(s, 0), bin(s, RX_E_DIV, bin(s, RX_E_MUL, x, dm1), lm1));
    /* tf_crop_and_resize */
    double r0 = s->roi[k], r1 = s->roi[2 + k];
    rx_expr *span = bin(s, RX_E_MUL, fl(s, r1 - r0), dm1);
    rx_expr *u = sel(s, one, bin(s, RX_E_DIV, span, fl(s, 2)),
                     bin(s, RX_E_DIV, bin(s, RX_E_MUL, x, span), lm1));
    return bin(s, RX_E_ADD, u, bin(s, RX_E_MUL, fl(s, r0), dm1));
}

/* Keys' cubic kernel at distance t (>= 0) with parameter a. */
static rx_expr *keys(rctx *s, rx_expr *t, bool far)
{
    double a = s->alpha;
    if (!far) /* |t| <= 1: ((a + 2) t - (a + 3)) t^2 + 1 */
        return bin(s, RX_E_ADD, bin(s, RX_E_MUL, bin(s, RX_E_SUB, bin(s, RX_E_MUL, fl(s, a + 2), t),
                                                     fl(s, a + 3)), bin(s, RX_E_MUL, t, t)), fl(s, 1));
    /* 1 < |t| < 2: ((a t - 5a) t + 8a) t - 4a */
    rx_expr *p = bin(s, RX_E_SUB, bin(s, RX_E_MUL, fl(s, a), t), fl(s, 5 * a));
    p = bin(s, RX_E_ADD, bin(s, RX_E_MUL, p, t), fl(s, 8 * a));
    return bin(s, RX_E_SUB, bin(s, RX_E_MUL, p, t), fl(s, 4 * a));
}

/* The integer factor q of axis k when nearest_neighbor's index is floor(x / q) exactly:
 * asymmetric coordinates, rounding floor, the scale an integer q >= 1 (the attribute, or
 * literal extents O = q * D). That is PyTorch's nn.Upsample(scale_factor=q) and
 * F.interpolate(mode="nearest") as exported; x // q then is the same index (x / q in
 * float is correctly rounded, and the quotient of an integer x < 2^24 by q never rounds
 * across an integer), without the per-element conversions, floorf and clamps (a YOLO
 * neck's 2x upsample + concat, (1, 96, 40, 40), 2 threads: 590 us before). 0 otherwise. */
static int64_t int_factor(rctx *s, int k)
{
    if (s->method != NEAREST || strcmp(s->mode, "asymmetric") || strcmp(s->round, "floor"))
        return 0;
    if (s->has_scale) {
        double v = s->scale[k];
        return v >= 1 && v <= (1 << 20) && v == (double)(int64_t)v ? (int64_t)v : 0;
    }
    int64_t o, d;
    if (!rx_expr_is_const(lg_out(s->c, 0)->dims[2 + k], &o) ||
        !rx_expr_is_const(rx_te_dim(s->x, 2 + k), &d) || d <= 0 || o % d)
        return 0;
    return o / d;
}

static void taps(rctx *s, int k, rx_expr *i, axis_taps *t)
{
    lg_ctx *c = s->c;
    rx_expr *d = rx_te_dim(s->x, 2 + k);
    rx_expr *dm1 = rx_te_simplify(c->te, rx_e_binary(c->a, RX_E_SUB, d, rx_e_int(c->a, 1)));
    int64_t fq = int_factor(s, k);
    if (fq) {
        t->n = 1;
        t->out = NULL;
        t->w[0] = fl(s, 1);
        rx_expr *j = fq == 1 ? i : rx_e_binary(c->a, RX_E_FLOORDIV, i, rx_e_int(c->a, fq));
        t->idx[0] = rx_te_simplify(c->te, rx_e_binary(c->a, RX_E_MIN, j, dm1));
        return;
    }
    rx_expr *u = coord(s, k, i);
    t->out = NULL;
    if (!strcmp(s->mode, "tf_crop_and_resize"))
        t->out = bin(s, RX_E_OR, bin(s, RX_E_LT, u, fl(s, 0)),
                     bin(s, RX_E_GT, u, rx_te_cast(c->te, s->cdt, dm1)));
    rx_expr *base;
    if (s->method == NEAREST) {
        const char *r = s->round;
        rx_expr *v = !strcmp(r, "floor") ? fn1(s, RX_FN_FLOOR, u)
                   : !strcmp(r, "ceil") ? fn1(s, RX_FN_CEIL, u)
                   : !strcmp(r, "round_prefer_ceil") ? fn1(s, RX_FN_FLOOR, bin(s, RX_E_ADD, u, fl(s, 0.5)))
                   : !strcmp(r, "round_prefer_floor") ? fn1(s, RX_FN_CEIL, bin(s, RX_E_SUB, u, fl(s, 0.5)))
                   : sel(s, bin(s, RX_E_GE, u, fl(s, 0)), fn1(s, RX_FN_FLOOR, bin(s, RX_E_ADD, u, fl(s, 0.5))),
                         fn1(s, RX_FN_CEIL, bin(s, RX_E_SUB, u, fl(s, 0.5))));
        t->n = 1;
        base = rx_te_cast(c->te, RX_DT_I64, v);
        t->w[0] = fl(s, 1);
    } else {
        rx_expr *f = fn1(s, RX_FN_FLOOR, u), *r = bin(s, RX_E_SUB, u, f);
        base = rx_te_cast(c->te, RX_DT_I64, f);
        if (s->method == LINEAR) {
            t->n = 2;
            t->w[0] = bin(s, RX_E_SUB, fl(s, 1), r);
            t->w[1] = r;
        } else {
            rx_expr *q = bin(s, RX_E_SUB, fl(s, 1), r);
            t->n = 4;
            t->w[0] = keys(s, bin(s, RX_E_ADD, r, fl(s, 1)), true);
            t->w[1] = keys(s, r, false);
            t->w[2] = keys(s, q, false);
            t->w[3] = keys(s, bin(s, RX_E_ADD, q, fl(s, 1)), true);
        }
    }
    int first = s->method == CUBIC ? -1 : 0;
    rx_expr *sum = NULL;
    for (int j = 0; j < t->n; j++) {
        rx_expr *raw = rx_e_binary(c->a, RX_E_ADD, base, rx_e_int(c->a, first + j));
        if (s->exclude) {
            rx_expr *in = bin(s, RX_E_AND, bin(s, RX_E_GE, raw, rx_e_int(c->a, 0)), bin(s, RX_E_LT, raw, d));
            t->w[j] = sel(s, in, t->w[j], fl(s, 0));
            sum = sum ? bin(s, RX_E_ADD, sum, t->w[j]) : t->w[j];
        }
        t->idx[j] = rx_e_binary(c->a, RX_E_MAX, rx_e_binary(c->a, RX_E_MIN, raw, dm1), rx_e_int(c->a, 0));
    }
    for (int j = 0; s->exclude && j < t->n; j++) t->w[j] = bin(s, RX_E_DIV, t->w[j], sum);
}

static rx_expr *resize_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    rctx *s = ud;
    axis_taps th, tw;
    taps(s, 0, idx[2], &th);
    taps(s, 1, idx[3], &tw);
    rx_dtype odt = (rx_dtype)lg_out(s->c, 0)->dtype;
    rx_expr *acc = NULL;
    for (int a = 0; a < th.n; a++)
        for (int b = 0; b < tw.n; b++) {
            rx_expr *xi[4] = {idx[0], idx[1], th.idx[a], tw.idx[b]};
            rx_expr *v = rx_te_at(te, s->x, xi);
            if (s->method == NEAREST) {
                acc = rx_te_cast(te, odt, v);
                continue;
            }
            v = bin(s, RX_E_MUL, bin(s, RX_E_MUL, th.w[a], tw.w[b]), rx_te_cast(te, s->cdt, v));
            acc = acc ? bin(s, RX_E_ADD, acc, v) : v;
        }
    acc = rx_te_cast(te, odt, acc);
    if (th.out) acc = sel(s, bin(s, RX_E_OR, th.out, tw.out), rx_te_const(te, s->extrap, odt), acc);
    return acc;
}

static bool rule_resize2d(lg_ctx *c)
{
    rctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    const char *m = rx_call_attr(c->call, "method")->u.s;
    s.method = !strcmp(m, "nearest_neighbor") ? NEAREST : !strcmp(m, "linear") ? LINEAR : CUBIC;
    s.mode = rx_call_attr(c->call, "coordinate_transformation_mode")->u.s;
    s.round = rx_call_attr(c->call, "rounding_method")->u.s;
    s.alpha = rx_call_attr(c->call, "cubic_alpha")->u.f;
    s.exclude = rx_call_attr(c->call, "cubic_exclude")->u.i != 0 && s.method == CUBIC;
    s.extrap = rx_call_attr(c->call, "extrapolation_value")->u.f;
    const rx_attr *roi = rx_call_attr(c->call, "roi"), *sc = rx_call_attr(c->call, "scales");
    for (int i = 0; i < 4; i++) s.roi[i] = roi->u.arr.items[i]->u.f;
    s.has_scale = sc->kind != RX_A_NULL;
    for (int i = 0; s.has_scale && i < 2; i++) s.scale[i] = sc->u.arr.items[i]->u.f;
    s.cdt = rx_te_dtype(s.x) == RX_DT_F64 ? RX_DT_F64 : RX_DT_F32;
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               resize_cb, &s));
    return true;
}

/* ---------------------------------------------------------------- grid_sample */
/* PyTorch's grid_sampler_2d: a grid value g in [-1, 1] maps to the pixel coordinate
 * ((g + 1) / 2) * (D - 1) with align_corners, ((g + 1) * D - 1) / 2 without. Bilinear
 * and nearest first bound the coordinate by padding_mode (border: clip to [0, D - 1];
 * reflection: reflect about [0, D - 1] (align_corners) or [-0.5, D - 0.5], then clip);
 * nearest rounds half to even. Bicubic (Keys, a = -0.75) bounds each of its four tap
 * positions instead. A tap outside x reads 0 (what zeros padding means; the bounded
 * coordinates of the other modes only reach outside with a zero weight). */
typedef struct gctx {
    rctx r;
    rx_te_tensor *grid;
    int pad;        /* 0 zeros, 1 border, 2 reflection */
    bool align;
} gctx;

/* |v| mod span, v >= 0 known: v - floor(v / span) * span. */
static rx_expr *reflect(rctx *s, rx_expr *u, double lo2, rx_expr *hi2)
{
    rx_expr *mn = bin(s, RX_E_DIV, fl(s, lo2), fl(s, 2));
    rx_expr *span = bin(s, RX_E_DIV, bin(s, RX_E_SUB, hi2, fl(s, lo2)), fl(s, 2));
    rx_expr *v = fn1(s, RX_FN_ABS, bin(s, RX_E_SUB, u, mn));
    rx_expr *flips = fn1(s, RX_FN_FLOOR, bin(s, RX_E_DIV, v, span));
    rx_expr *extra = bin(s, RX_E_SUB, v, bin(s, RX_E_MUL, flips, span));
    rx_expr *even = bin(s, RX_E_EQ, bin(s, RX_E_MUL, fn1(s, RX_FN_FLOOR, bin(s, RX_E_DIV, flips, fl(s, 2))),
                                        fl(s, 2)), flips);
    rx_expr *r = sel(s, even, bin(s, RX_E_ADD, extra, mn), bin(s, RX_E_ADD, bin(s, RX_E_SUB, span, extra), mn));
    return sel(s, bin(s, RX_E_LE, span, fl(s, 0)), fl(s, 0), r);
}

static rx_expr *bound(gctx *g, rx_expr *u, rx_expr *d)
{
    rctx *s = &g->r;
    rx_expr *dm1 = bin(s, RX_E_SUB, d, fl(s, 1));
    if (g->pad == 2)
        u = g->align ? reflect(s, u, 0, bin(s, RX_E_MUL, fl(s, 2), dm1))
                     : reflect(s, u, -1, bin(s, RX_E_SUB, bin(s, RX_E_MUL, fl(s, 2), d), fl(s, 1)));
    if (g->pad >= 1) u = bin(s, RX_E_MAX, bin(s, RX_E_MIN, u, dm1), fl(s, 0));
    return u;
}

/* x[b, ch, iy, ix] (i64 positions) in the compute dtype, 0 outside x. */
static rx_expr *tap_at(gctx *g, rx_expr *const *idx, rx_expr *iy, rx_expr *ix)
{
    rctx *s = &g->r;
    lg_ctx *c = s->c;
    rx_expr *in = NULL, *p[2] = {iy, ix}, *q[2];
    for (int k = 0; k < 2; k++) {
        rx_expr *d = rx_te_dim(s->x, 2 + k), *dm1 = rx_te_simplify(c->te, rx_e_binary(c->a, RX_E_SUB, d, rx_e_int(c->a, 1)));
        rx_expr *ok = bin(s, RX_E_AND, bin(s, RX_E_GE, p[k], rx_e_int(c->a, 0)), bin(s, RX_E_LT, p[k], d));
        in = in ? bin(s, RX_E_AND, in, ok) : ok;
        q[k] = rx_e_binary(c->a, RX_E_MAX, rx_e_binary(c->a, RX_E_MIN, p[k], dm1), rx_e_int(c->a, 0));
    }
    rx_expr *xi[4] = {idx[0], idx[1], q[0], q[1]};
    return sel(s, in, rx_te_cast(c->te, s->cdt, rx_te_at(c->te, s->x, xi)), fl(s, 0));
}

static rx_expr *grid_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    gctx *g = ud;
    rctx *s = &g->r;
    lg_ctx *c = s->c;
    rx_expr *u[2], *d[2];
    for (int k = 0; k < 2; k++) { /* k = 0: y from grid[..., 1]; k = 1: x from grid[..., 0] */
        rx_expr *gi[4] = {idx[0], idx[2], idx[3], rx_e_int(c->a, 1 - k)};
        rx_expr *v = rx_te_cast(te, s->cdt, rx_te_at(te, g->grid, gi));
        d[k] = rx_te_cast(te, s->cdt, rx_te_dim(s->x, 2 + k));
        rx_expr *v1 = bin(s, RX_E_ADD, v, fl(s, 1));
        u[k] = g->align ? bin(s, RX_E_MUL, bin(s, RX_E_DIV, v1, fl(s, 2)), bin(s, RX_E_SUB, d[k], fl(s, 1)))
                        : bin(s, RX_E_DIV, bin(s, RX_E_SUB, bin(s, RX_E_MUL, v1, d[k]), fl(s, 1)), fl(s, 2));
    }
    rx_expr *acc = NULL;
    if (s->method == NEAREST) {
        rx_expr *p[2];
        for (int k = 0; k < 2; k++) p[k] = rx_te_cast(te, RX_DT_I64, fn1(s, RX_FN_ROUND, bound(g, u[k], d[k])));
        acc = tap_at(g, idx, p[0], p[1]);
    } else if (s->method == LINEAR) {
        rx_expr *f[2], *r[2];
        for (int k = 0; k < 2; k++) {
            u[k] = bound(g, u[k], d[k]);
            rx_expr *fk = fn1(s, RX_FN_FLOOR, u[k]);
            r[k] = bin(s, RX_E_SUB, u[k], fk);
            f[k] = rx_te_cast(te, RX_DT_I64, fk);
        }
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                rx_expr *wa = a ? r[0] : bin(s, RX_E_SUB, fl(s, 1), r[0]);
                rx_expr *wb = b ? r[1] : bin(s, RX_E_SUB, fl(s, 1), r[1]);
                rx_expr *v = tap_at(g, idx, rx_e_binary(c->a, RX_E_ADD, f[0], rx_e_int(c->a, a)),
                                    rx_e_binary(c->a, RX_E_ADD, f[1], rx_e_int(c->a, b)));
                v = bin(s, RX_E_MUL, bin(s, RX_E_MUL, wa, wb), v);
                acc = acc ? bin(s, RX_E_ADD, acc, v) : v;
            }
    } else {
        rx_expr *f[2], *w[2][4];
        for (int k = 0; k < 2; k++) {
            f[k] = fn1(s, RX_FN_FLOOR, u[k]);
            rx_expr *t = bin(s, RX_E_SUB, u[k], f[k]), *q = bin(s, RX_E_SUB, fl(s, 1), t);
            w[k][0] = keys(s, bin(s, RX_E_ADD, t, fl(s, 1)), true);
            w[k][1] = keys(s, t, false);
            w[k][2] = keys(s, q, false);
            w[k][3] = keys(s, bin(s, RX_E_ADD, q, fl(s, 1)), true);
        }
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                rx_expr *py = bound(g, bin(s, RX_E_ADD, f[0], fl(s, a - 1)), d[0]);
                rx_expr *px = bound(g, bin(s, RX_E_ADD, f[1], fl(s, b - 1)), d[1]);
                rx_expr *v = tap_at(g, idx, rx_te_cast(te, RX_DT_I64, py), rx_te_cast(te, RX_DT_I64, px));
                v = bin(s, RX_E_MUL, bin(s, RX_E_MUL, w[0][a], w[1][b]), v);
                acc = acc ? bin(s, RX_E_ADD, acc, v) : v;
            }
    }
    return rx_te_cast(te, (rx_dtype)lg_out(c, 0)->dtype, acc);
}

static bool rule_grid_sample(lg_ctx *c)
{
    gctx g = {0};
    g.r.c = c;
    if (!(g.r.x = lg_input(c, 0, "x")) || !(g.grid = lg_input(c, 1, "grid"))) return false;
    const char *m = rx_call_attr(c->call, "method")->u.s;
    const char *pm = rx_call_attr(c->call, "padding_mode")->u.s;
    g.r.method = !strcmp(m, "nearest") ? NEAREST : !strcmp(m, "bilinear") ? LINEAR : CUBIC;
    g.r.alpha = -0.75;
    g.pad = !strcmp(pm, "zeros") ? 0 : !strcmp(pm, "border") ? 1 : 2;
    g.align = rx_call_attr(c->call, "align_corners")->u.b;
    g.r.cdt = rx_te_dtype(g.r.x) == RX_DT_F64 ? RX_DT_F64 : RX_DT_F32;
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               grid_cb, &g));
    return true;
}

const lg_rule_entry rx_lg_image[] = {
    {"image.resize2d", rule_resize2d},
    {"image.grid_sample", rule_grid_sample},
};
const int rx_lg_image_count = RX_COUNTOF(rx_lg_image);
