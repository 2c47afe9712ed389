/*
 * legalize_axis.c — legalization rules of the axis ops (op/op_axis.c): gather_elements,
 * gather_nd, scatter_elements, scatter_nd, cumsum, and nn.pad (at rule_pad).
 *
 *   gather_elements  one compute over indices' dims: out[i] = x[i[:axis], fix(ind[i]),
 *                    i[axis+1:]] with fix(v) = v + d for v < 0 (d = x's extent along
 *                    axis); a v still outside [0, d) is left to the kernel's check of
 *                    loads at data-dependent indices (it fails naming buffer, axis,
 *                    index and extent), as take's mode "error". Indices are widened to
 *                    i64.
 *   gather_nd        one compute over the result: the m index components of indices'
 *                    row each fixed as gather_elements' (negative from the end; the
 *                    kernel's check catches the rest), batch dims shared.
 *   scatter_elements, scatter_nd
 *                    the scatter read as a gather: per output position a reduction
 *                    over the updates (along axis; over indices' leading dims for nd)
 *                    of the ones that land there (their index, fixed as above, equals
 *                    the position; for elements also every other coordinate inside
 *                    indices' extent). "update": T_last = the max flat update position
 *                    that lands (-1: none), out = updates at T_last or x; "add" / "mul":
 *                    x + / * the sum / product of the landing updates; "max" / "min":
 *                    combined with x when any lands. O(K) per output element (K the
 *                    updates per axis row, or indices' leading element count for nd).
 *   cumsum           in the result dtype; axis null runs over the raveled x. A literal
 *                    extent d <= 2 * BLK (128): one reduction per output element over r
 *                    in [0, d): out[i] = sum of select(r <= i[axis], x[.., r, ..], 0)
 *                    (r < i[axis] when exclusive), O(d^2) per row. Otherwise blocks of
 *                    BLK along the axis, in four stages: S (block sums), P (exclusive
 *                    prefix of S: a reduction over the d / BLK blocks), R (the sum within
 *                    i's block up to i) and out = P[i // BLK] + R[i]: O(BLK + d / BLK) per
 *                    element. The quadratic form made an imported decoder's position ids
 *                    (the attention mask's cumsum over the whole context, every decode
 *                    step) cost d / 2 additions an element. Floats are summed block by
 *                    block (a reassociation of the sequential sum, within its rounding
 *                    bound); integers are exact either way. `reverse` flips positions
 *                    (d - 1 - i) where x is read and where the result is placed. On the
 *                    CPU in f32/f64/i32/i64 with x's dtype, legalize_lib.c's rt.cumsum
 *                    (a vectorized running sum) takes the call instead of this rule.
 */
#include <string.h>

#include "legalize_int.h"

typedef struct actx {
    lg_ctx *c;
    rx_te_tensor *x, *ind;
    int ax;          /* the axis (-1: raveled) */
    int nd;
    bool exclusive;
    bool reverse;    /* cumsum: sums from the end (positions flipped: d - 1 - i) */
    rx_expr *d;      /* cumsum: the scanned extent */
    rx_dtype dt;     /* result dtype */
} actx;

static rx_expr *bin(lg_ctx *c, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(c->a, k, x, y);
}

static rx_expr *gather_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    actx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *v = rx_te_cast(te, RX_DT_I64, rx_te_at(te, s->ind, idx));
    rx_expr *d = rx_te_dim(s->x, s->ax);
    if (!rx_dtype_is_uint(rx_te_dtype(s->ind)))
        v = rx_e_select(c->a, bin(c, RX_E_LT, v, rx_e_int(c->a, 0)), bin(c, RX_E_ADD, v, d), v);
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, s->nd);
    for (int k = 0; k < s->nd; k++) xi[k] = k == s->ax ? v : idx[k];
    return rx_te_at(te, s->x, xi);
}

static bool rule_gather_elements(lg_ctx *c)
{
    actx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x")) || !(s.ind = lg_input(c, 1, "indices"))) return false;
    s.nd = rx_te_ndim(s.x);
    if (rx_te_ndim(s.ind) != s.nd || s.nd == 0)
        return lg_fail(c, "x and indices need the same rank, at least 1");
    if (!lg_axis(c, rx_call_attr(c->call, "axis")->u.i, s.nd, &s.ax)) return false;
    for (int k = 0; k < s.nd; k++) {
        int64_t a, b;
        if (k != s.ax && rx_expr_is_const(rx_te_dim(s.ind, k), &a) &&
            rx_expr_is_const(rx_te_dim(s.x, k), &b) && a > b)
            return lg_fail(c, "dimension %d of indices (%lld) exceeds x's (%lld)", k,
                           (long long)a, (long long)b);
    }
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               gather_cb, &s));
    return true;
}

/* gather_nd: x[i[:b], fix(ind[i[:n-1], t]) for t < m, i[n-1:]] (n = indices' rank). */
static rx_expr *gather_nd_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    actx *s = ud;
    lg_ctx *c = s->c;
    int ni = rx_te_ndim(s->ind), xn = rx_te_ndim(s->x), b = s->ax, m = xn - (s->nd - ni + 1) - b;
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, xn);
    rx_expr **ii = RX_NEWN(c->a, rx_expr *, ni);
    for (int k = 0; k < ni - 1; k++) ii[k] = idx[k];
    for (int k = 0; k < b; k++) xi[k] = idx[k];
    for (int t = 0; t < m; t++) {
        ii[ni - 1] = rx_e_int(c->a, t);
        rx_expr *v = rx_te_cast(te, RX_DT_I64, rx_te_at(te, s->ind, ii)), *d = rx_te_dim(s->x, b + t);
        if (!rx_dtype_is_uint(rx_te_dtype(s->ind)))
            v = rx_e_select(c->a, bin(c, RX_E_LT, v, rx_e_int(c->a, 0)), bin(c, RX_E_ADD, v, d), v);
        xi[b + t] = v;
    }
    for (int k = b + m; k < xn; k++) xi[k] = idx[ni - 1 + k - (b + m)];
    return rx_te_at(te, s->x, xi);
}

static bool rule_gather_nd(lg_ctx *c)
{
    actx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x")) || !(s.ind = lg_input(c, 1, "indices"))) return false;
    s.ax = (int)rx_call_attr(c->call, "batch_dims")->u.i;
    const rx_sinfo *o = lg_out(c, 0);
    s.nd = o->ndim;
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               gather_nd_cb, &s));
    return true;
}

enum { BLK = 64 };

typedef struct cctx {
    actx *s;
    rx_expr *d;          /* the extent along the axis (the raveled size) */
    int k;               /* the axis of the result and the block tensors */
    rx_te_tensor *blk;   /* S or P, read by the next stage */
} cctx;

/* x at position pos along the scanned axis, the other coordinates idx's, cast to the
   result dtype. */
static rx_expr *flip_pos(actx *s, rx_expr *pos)
{
    if (!s->reverse) return pos;
    return bin(s->c, RX_E_SUB, bin(s->c, RX_E_SUB, s->d, rx_e_int(s->c->a, 1)), pos);
}

static rx_expr *scan_at(rx_te *te, actx *s, rx_expr *const *idx, rx_expr *pos)
{
    rx_expr *v;
    pos = flip_pos(s, pos);
    if (s->ax < 0) {
        v = rx_te_at(te, s->x, lg_unravel(s->c, s->x, pos));
    } else {
        rx_expr **xi = RX_NEWN(s->c->a, rx_expr *, s->nd);
        for (int k = 0; k < s->nd; k++) xi[k] = k == s->ax ? pos : idx[k];
        v = rx_te_at(te, s->x, xi);
    }
    return rx_te_cast(te, s->dt, v);
}

static rx_expr *cumsum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    actx *s = ud;
    rx_expr *pos = flip_pos(s, s->ax < 0 ? idx[0] : idx[s->ax]);
    rx_expr *in = bin(s->c, s->exclusive ? RX_E_LT : RX_E_LE, r[0], pos);
    return rx_e_select(s->c->a, in, scan_at(te, s, idx, r[0]), rx_te_const(te, 0, s->dt));
}

/* idx with entry k replaced by v (a fresh array). */
static rx_expr **with_at(lg_ctx *c, rx_expr *const *idx, int n, int k, rx_expr *v)
{
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n);
    for (int i = 0; i < n; i++) r[i] = i == k ? v : idx[i];
    return r;
}

/* S[.., j, ..] = sum over r < BLK of x[.., j BLK + r, ..] (inside d). */
static rx_expr *block_sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    cctx *b = ud;
    lg_ctx *c = b->s->c;
    rx_expr *pos = bin(c, RX_E_ADD, bin(c, RX_E_MUL, idx[b->k], rx_e_int(c->a, BLK)), r[0]);
    return rx_e_select(c->a, bin(c, RX_E_LT, pos, b->d), scan_at(te, b->s, idx, pos),
                       rx_te_const(te, 0, b->s->dt));
}

/* P[.., j, ..] = sum over q < j of S[.., q, ..]. */
static rx_expr *block_prefix_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    cctx *b = ud;
    lg_ctx *c = b->s->c;
    return rx_e_select(c->a, bin(c, RX_E_LT, r[0], idx[b->k]),
                       rx_te_at(te, b->blk, with_at(c, idx, rx_te_ndim(b->blk), b->k, r[0])),
                       rx_te_const(te, 0, b->s->dt));
}

/* R[.., i, ..] = sum of x over i's block up to i (before i when exclusive). */
static rx_expr *in_block_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    cctx *b = ud;
    lg_ctx *c = b->s->c;
    rx_expr *i = idx[b->k];
    rx_expr *base = bin(c, RX_E_MUL, bin(c, RX_E_FLOORDIV, i, rx_e_int(c->a, BLK)),
                        rx_e_int(c->a, BLK));
    rx_expr *pos = bin(c, RX_E_ADD, base, r[0]);
    return rx_e_select(c->a, bin(c, b->s->exclusive ? RX_E_LT : RX_E_LE, pos, i),
                       scan_at(te, b->s, idx, pos), rx_te_const(te, 0, b->s->dt));
}

/* out = P[.., i // BLK, ..] + R[.., i, ..]. */
typedef struct { cctx *b; rx_te_tensor *r; } join_ud;

static rx_expr *join_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    join_ud *j = ud;
    lg_ctx *c = j->b->s->c;
    int n = rx_te_ndim(j->r);
    rx_expr *i = flip_pos(j->b->s, idx[j->b->k]);
    rx_expr *blk = bin(c, RX_E_FLOORDIV, i, rx_e_int(c->a, BLK));
    return bin(c, RX_E_ADD, rx_te_at(te, j->b->blk, with_at(c, idx, n, j->b->k, blk)),
               rx_te_at(te, j->r, with_at(c, idx, n, j->b->k, i)));
}

static bool rule_cumsum(lg_ctx *c)
{
    actx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    s.nd = rx_te_ndim(s.x);
    const rx_attr *axis = rx_call_attr(c->call, "axis");
    s.ax = -1;
    if (axis->kind != RX_A_NULL && !lg_axis(c, axis->u.i, s.nd, &s.ax)) return false;
    s.exclusive = rx_call_attr(c->call, "exclusive")->u.b;
    s.reverse = rx_call_attr(c->call, "reverse")->u.b;
    const rx_sinfo *o = lg_out(c, 0);
    s.dt = (rx_dtype)o->dtype;
    int k = s.ax < 0 ? 0 : s.ax;
    rx_expr *ext = o->dims[k];
    s.d = ext;
    int64_t dv;
    if (rx_expr_is_const(ext, &dv) && dv <= 2 * BLK) {
        lg_output(c, rx_te_reduce(c->te, lg_tname(c), s.dt, o->ndim, o->dims, RX_TE_SUM, 1,
                                  &ext, NULL, cumsum_cb, &s));
        return true;
    }
    cctx b = {&s, ext, k, NULL};
    rx_expr *blk = rx_e_int(c->a, BLK);
    rx_expr *nb = bin(c, RX_E_FLOORDIV, bin(c, RX_E_ADD, ext, rx_e_int(c->a, BLK - 1)), blk);
    rx_expr **bs = with_at(c, o->dims, o->ndim, k, nb);
    rx_te_tensor *sums = rx_te_reduce(c->te, "block_sum", s.dt, o->ndim, bs, RX_TE_SUM, 1, &blk,
                                      NULL, block_sum_cb, &b);
    b.blk = sums;
    rx_te_tensor *pre = rx_te_reduce(c->te, "block_prefix", s.dt, o->ndim, bs, RX_TE_SUM, 1, &nb,
                                     NULL, block_prefix_cb, &b);
    rx_te_tensor *in = rx_te_reduce(c->te, "in_block", s.dt, o->ndim, o->dims, RX_TE_SUM, 1,
                                    &blk, NULL, in_block_cb, &b);
    b.blk = pre;
    join_ud j = {&b, in};
    lg_output(c, rx_te_compute(c->te, lg_tname(c), s.dt, o->ndim, o->dims, join_cb, &j));
    return true;
}

/* ---------------------------------------------------------------- scatter */
enum { RED_UPDATE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

typedef struct scat {
    lg_ctx *c;
    rx_te_tensor *x, *ind, *upd, *last, *acc;
    int ax;        /* scatter_elements: the axis; scatter_nd: -1 */
    int nr, m;     /* scatter_nd: indices' rank - 1, the index depth */
    int red;
} scat;

/* fix(v) for a position along an extent d (negative counts from the end). */
static rx_expr *fix_index(lg_ctx *c, rx_te_tensor *ind, rx_expr *v, rx_expr *d)
{
    v = rx_te_cast(c->te, RX_DT_I64, v);
    if (rx_dtype_is_uint(rx_te_dtype(ind))) return v;
    return rx_e_select(c->a, bin(c, RX_E_LT, v, rx_e_int(c->a, 0)), bin(c, RX_E_ADD, v, d), v);
}

/* Does update r land on output position idx? *up (x's rank for elements, the updates'
 * rank for nd) gets the update's position, clamped inside the updates. */
static rx_expr *lands(scat *s, rx_expr *const *idx, rx_expr *const *r, rx_expr **up)
{
    lg_ctx *c = s->c;
    rx_te *te = c->te;
    rx_expr *cond = NULL;
    if (s->ax >= 0) {
        int nd = rx_te_ndim(s->x);
        for (int j = 0; j < nd; j++) {
            if (j == s->ax) {
                up[j] = r[0];
                continue;
            }
            rx_expr *dj = rx_te_dim(s->ind, j);
            rx_expr *in = bin(c, RX_E_LT, idx[j], dj);
            cond = cond ? bin(c, RX_E_AND, cond, in) : in;
            up[j] = bin(c, RX_E_MIN, idx[j], rx_te_simplify(te, bin(c, RX_E_SUB, dj, rx_e_int(c->a, 1))));
        }
        rx_expr *v = fix_index(c, s->ind, rx_te_at(te, s->ind, up), rx_te_dim(s->x, s->ax));
        rx_expr *hit = bin(c, RX_E_EQ, v, idx[s->ax]);
        return cond ? bin(c, RX_E_AND, cond, hit) : hit;
    }
    rx_expr **ii = RX_NEWN(c->a, rx_expr *, s->nr + 1);
    for (int k = 0; k < s->nr; k++) ii[k] = up[k] = r[k];
    for (int k = s->m; k < rx_te_ndim(s->x); k++) up[s->nr + k - s->m] = idx[k];
    for (int t = 0; t < s->m; t++) {
        ii[s->nr] = rx_e_int(c->a, t);
        rx_expr *v = fix_index(c, s->ind, rx_te_at(te, s->ind, ii), rx_te_dim(s->x, t));
        rx_expr *hit = bin(c, RX_E_EQ, v, idx[t]);
        cond = cond ? bin(c, RX_E_AND, cond, hit) : hit;
    }
    return cond;
}

static rx_expr *last_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    scat *s = ud;
    lg_ctx *c = s->c;
    rx_expr *up[64];
    rx_expr *flat = r[0];
    for (int k = 1; s->ax < 0 && k < s->nr; k++)
        flat = bin(c, RX_E_ADD, bin(c, RX_E_MUL, flat, rx_te_dim(s->ind, k)), r[k]);
    return rx_e_select(c->a, lands(s, idx, r, up), rx_te_simplify(te, flat), rx_e_int(c->a, -1));
}

static rx_expr *acc_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    scat *s = ud;
    rx_expr *up[64];
    rx_dtype dt = rx_te_dtype(s->x);
    rx_expr *id = s->red == RED_ADD ? rx_te_const(te, 0, dt) : s->red == RED_MUL ? rx_te_const(te, 1, dt)
                : s->red == RED_MAX ? rx_te_min_value(te, dt) : rx_te_max_value(te, dt);
    rx_expr *hit = lands(s, idx, r, up);
    return rx_e_select(s->c->a, hit, rx_te_at(te, s->upd, up), id);
}

static rx_expr *scatter_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    scat *s = ud;
    lg_ctx *c = s->c;
    rx_expr *xv = rx_te_at(te, s->x, idx);
    if (s->red == RED_ADD) return bin(c, RX_E_ADD, xv, rx_te_at(te, s->acc, idx));
    if (s->red == RED_MUL) return bin(c, RX_E_MUL, xv, rx_te_at(te, s->acc, idx));
    rx_expr *l = rx_te_at(te, s->last, idx), *any = bin(c, RX_E_GE, l, rx_e_int(c->a, 0));
    if (s->red != RED_UPDATE) {
        rx_expr *a = rx_te_at(te, s->acc, idx);
        return rx_e_select(c->a, any, bin(c, s->red == RED_MAX ? RX_E_MAX : RX_E_MIN, xv, a), xv);
    }
    rx_expr *lc = bin(c, RX_E_MAX, l, rx_e_int(c->a, 0)), *up[64], *r[64];
    if (s->ax >= 0) {
        r[0] = lc;
    } else { /* unravel the flat position over indices' leading dims */
        for (int k = s->nr - 1; k >= 0; k--) {
            rx_expr *d = rx_te_dim(s->ind, k);
            r[k] = k ? bin(c, RX_E_FLOORMOD, lc, d) : lc;
            lc = bin(c, RX_E_FLOORDIV, lc, d);
        }
    }
    lands(s, idx, r, up);
    return rx_e_select(c->a, any, rx_te_at(te, s->upd, up), xv);
}

static bool rule_scatter(lg_ctx *c)
{
    scat s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x")) || !(s.ind = lg_input(c, 1, "indices")) ||
        !(s.upd = lg_input(c, 2, "updates")))
        return false;
    if (rx_te_ndim(s.x) > 32 || rx_te_ndim(s.upd) > 32) return lg_fail(c, "more than 32 dimensions");
    const char *red = rx_call_attr(c->call, "reduction")->u.s;
    s.red = !strcmp(red, "add") ? RED_ADD : !strcmp(red, "mul") ? RED_MUL : !strcmp(red, "max") ? RED_MAX
          : !strcmp(red, "min") ? RED_MIN : RED_UPDATE;
    rx_expr *rdom[32];
    int nred;
    s.ax = -1;
    if (!strcmp(lg_opname(c), "scatter_elements")) {
        if (!lg_axis(c, rx_call_attr(c->call, "axis")->u.i, rx_te_ndim(s.x), &s.ax)) return false;
        rdom[0] = rx_te_dim(s.ind, s.ax);
        nred = 1;
    } else {
        s.nr = rx_te_ndim(s.ind) - 1;
        int64_t m;
        if (s.nr < 1 || !rx_expr_is_const(rx_te_dim(s.ind, s.nr), &m)) return lg_fail(c, "bad indices");
        s.m = (int)m;
        for (int k = 0; k < s.nr; k++) rdom[k] = rx_te_dim(s.ind, k);
        nred = s.nr;
    }
    const rx_sinfo *o = lg_out(c, 0);
    rx_dtype dt = (rx_dtype)o->dtype;
    if (s.red == RED_UPDATE || s.red == RED_MAX || s.red == RED_MIN)
        s.last = rx_te_reduce(c->te, "T_last", RX_DT_I64, o->ndim, o->dims, RX_TE_MAX, nred, rdom,
                              rx_e_int(c->a, -1), last_cb, &s);
    if (s.red != RED_UPDATE) {
        rx_te_redop op = s.red == RED_ADD ? RX_TE_SUM : s.red == RED_MUL ? RX_TE_PROD
                       : s.red == RED_MAX ? RX_TE_MAX : RX_TE_MIN;
        s.acc = rx_te_reduce(c->te, "T_acc", dt, o->ndim, o->dims, op, nred, rdom, NULL, acc_cb, &s);
    }
    lg_output(c, rx_te_compute(c->te, lg_tname(c), dt, o->ndim, o->dims, scatter_out_cb, &s));
    return true;
}

/* ---------------------------------------------------------------- pad */
/* Per axis the output index i reads j = i - before: "constant" x[j] when j is inside,
 * else pad_value; "edge" x[clamp(j)]; "reflect" x[-j] below, x[2 (d - 1) - j] above
 * (widths below d, as deduction checked). Indices are clamped so every load is inside. */
typedef struct pctx {
    lg_ctx *c;
    rx_te_tensor *x;
    int64_t pw[128];
    int mode;      /* 0 constant, 1 edge, 2 reflect */
    double value;
} pctx;

static rx_expr *pad_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    pctx *s = ud;
    lg_ctx *c = s->c;
    int nd = rx_te_ndim(s->x);
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, nd > 0 ? nd : 1), *in = NULL;
    for (int k = 0; k < nd; k++) {
        rx_expr *d = rx_te_dim(s->x, k), *zero = rx_e_int(c->a, 0);
        rx_expr *dm1 = rx_te_simplify(te, bin(c, RX_E_SUB, d, rx_e_int(c->a, 1)));
        rx_expr *j = rx_te_simplify(te, bin(c, RX_E_SUB, idx[k], rx_e_int(c->a, s->pw[2 * k])));
        if (s->pw[2 * k] == 0 && s->pw[2 * k + 1] == 0) {
            xi[k] = idx[k];
            continue;
        }
        if (s->mode == 0) {
            rx_expr *ok = bin(c, RX_E_AND, bin(c, RX_E_GE, j, zero), bin(c, RX_E_LT, j, d));
            in = in ? bin(c, RX_E_AND, in, ok) : ok;
        } else if (s->mode == 2) {
            j = rx_e_select(c->a, bin(c, RX_E_LT, j, zero), rx_e_unary(c->a, RX_E_NEG, j), j);
            j = rx_e_select(c->a, bin(c, RX_E_GT, j, dm1),
                            bin(c, RX_E_SUB, bin(c, RX_E_MUL, rx_e_int(c->a, 2), dm1), j), j);
        }
        xi[k] = bin(c, RX_E_MAX, bin(c, RX_E_MIN, j, dm1), zero);
    }
    rx_expr *v = rx_te_at(te, s->x, xi);
    return in ? rx_e_select(c->a, in, v, rx_te_const(te, s->value, rx_te_dtype(s->x))) : v;
}

static bool rule_pad(lg_ctx *c)
{
    pctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    int n;
    lg_attr_ints(rx_call_attr(c->call, "pad_width"), s.pw, 128, &n);
    if (n != 2 * rx_te_ndim(s.x)) return lg_fail(c, "pad_width does not fit the rank");
    const char *mode = rx_call_attr(c->call, "pad_mode")->u.s;
    s.mode = !strcmp(mode, "edge") ? 1 : !strcmp(mode, "reflect") ? 2 : 0;
    s.value = rx_call_attr(c->call, "pad_value")->u.f;
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims, pad_cb, &s));
    return true;
}

const lg_rule_entry rx_lg_axis[] = {
    {"nn.pad", rule_pad},
    {"scatter_elements", rule_scatter},
    {"scatter_nd", rule_scatter},
    {"gather_elements", rule_gather_elements},
    {"cumsum", rule_cumsum},
    {"gather_nd", rule_gather_nd},
};
const int rx_lg_axis_count = RX_COUNTOF(rx_lg_axis);
