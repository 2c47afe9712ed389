/*
 * legalize_index.c — legalization rules of the ops whose element is a closed-form
 * function of its index: repeat, tile, tril, triu, arange.
 *
 * Each is one compute over the deduced result dims:
 *   repeat        along `axis`: x[.., i // r, ..]; `axis` null: the raveled x,
 *                 out[f] = x[unravel(f // r)] (NumPy's np.repeat)
 *   tile          ranks right-aligned and padded with 1s (np.tile): result position k
 *                 reads x's position k - (rank - x's rank) at idx % x's dim, or idx
 *                 itself where the repeat is 1 (no modulo); the leading positions that
 *                 x lacks are dropped
 *   tril triu     on the last two dims (i, j): select(j - i <= k, x, 0) for tril,
 *                 select(j - i >= k, x, 0) for triu (np.tril / np.triu, batched)
 *   arange        out[i] = start + i * step in i64 (start and step integers or
 *                 symbolic sizes of the caller, which then become scalar parameters
 *                 of the kernel), converted to `dtype`; float bounds (only from
 *                 attributes built in C) compute start + i * step in `dtype`
 * Cost: O(1) per element.
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct ictx {
    lg_ctx *c;
    rx_te_tensor *x;
    int nd;                /* result rank */
    int ax;                /* repeat: axis (-1: flattened) */
    int64_t rep[MAXD];     /* repeat: rep[0]; tile: per result position (1 padded) */
    int64_t k;             /* tril/triu diagonal */
    bool lower;            /* tril */
    const rx_attr *start, *step; /* arange */
} ictx;

static rx_expr *lit(lg_ctx *c, int64_t v) { return rx_e_int(c->a, v); }
static rx_expr *bin(lg_ctx *c, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(c->a, k, x, y);
}

static bool emit(lg_ctx *c, rx_te_fcompute f, ictx *s)
{
    const rx_sinfo *o = lg_out(c, 0);
    if (o->ndim > MAXD) return lg_fail(c, "more than %d dimensions", MAXD);
    s->nd = o->ndim;
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims, f, s));
    return true;
}

/* ---------------------------------------------------------------- repeat */
static rx_expr *repeat_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    ictx *s = ud;
    lg_ctx *c = s->c;
    if (s->ax < 0) {
        rx_expr *f = rx_te_simplify(te, bin(c, RX_E_FLOORDIV, idx[0], lit(c, s->rep[0])));
        return rx_te_at(te, s->x, lg_unravel(c, s->x, f));
    }
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, s->nd);
    for (int k = 0; k < s->nd; k++) xi[k] = idx[k];
    xi[s->ax] = rx_te_simplify(te, bin(c, RX_E_FLOORDIV, idx[s->ax], lit(c, s->rep[0])));
    return rx_te_at(te, s->x, xi);
}

static bool rule_repeat(lg_ctx *c)
{
    ictx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    s.rep[0] = rx_call_attr(c->call, "repeats")->u.i;
    if (s.rep[0] < 1) s.rep[0] = 1; /* repeats = 0: an empty result, never read */
    const rx_attr *axis = rx_call_attr(c->call, "axis");
    s.ax = -1;
    if (axis->kind != RX_A_NULL && !lg_axis(c, axis->u.i, rx_te_ndim(s.x), &s.ax)) return false;
    return emit(c, repeat_cb, &s);
}

/* ---------------------------------------------------------------- tile */
static rx_expr *tile_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    ictx *s = ud;
    lg_ctx *c = s->c;
    int xn = rx_te_ndim(s->x), lead = s->nd - xn;
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, xn > 0 ? xn : 1);
    for (int k = 0; k < xn; k++) {
        rx_expr *i = idx[k + lead], *d = rx_te_dim(s->x, k);
        if (rx_expr_is_int(d, 1)) xi[k] = lit(c, 0);
        else if (s->rep[k + lead] == 1) xi[k] = i;
        else xi[k] = rx_te_simplify(te, bin(c, RX_E_FLOORMOD, i, d));
    }
    return rx_te_at(te, s->x, xi);
}

static bool rule_tile(lg_ctx *c)
{
    ictx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    int64_t r[MAXD];
    int nr;
    lg_attr_ints(rx_call_attr(c->call, "repeats"), r, MAXD, &nr);
    int xn = rx_te_ndim(s.x), rn = xn > nr ? xn : nr;
    if (rn > MAXD || rn != lg_out(c, 0)->ndim)
        return lg_fail(c, "the repeats do not give the result rank %d", lg_out(c, 0)->ndim);
    for (int k = 0; k < rn; k++) s.rep[k] = k - (rn - nr) >= 0 ? r[k - (rn - nr)] : 1;
    return emit(c, tile_cb, &s);
}

/* ---------------------------------------------------------------- tril, triu */
static rx_expr *tri_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    ictx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *diff = bin(c, RX_E_SUB, idx[s->nd - 1], idx[s->nd - 2]);
    rx_expr *cond = bin(c, s->lower ? RX_E_LE : RX_E_GE, diff, lit(c, s->k));
    rx_dtype dt = rx_te_dtype(s->x);
    return rx_e_select(c->a, cond, rx_te_at(te, s->x, idx), rx_te_const(te, 0, dt));
}

static bool rule_tri(lg_ctx *c)
{
    ictx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    if (rx_te_ndim(s.x) < 2) return lg_fail(c, "needs at least 2 dimensions");
    s.k = rx_call_attr(c->call, "k")->u.i;
    s.lower = !strcmp(lg_opname(c), "tril");
    return emit(c, tri_cb, &s);
}

/* ---------------------------------------------------------------- arange */
static bool is_float_attr(const rx_attr *a)
{
    return a->kind == RX_A_FLOAT || (a->kind == RX_A_EXPR && a->u.e->kind == RX_E_FLOAT);
}

static double attr_num(const rx_attr *a)
{
    if (a->kind == RX_A_FLOAT) return a->u.f;
    if (a->kind == RX_A_INT) return (double)a->u.i;
    RX_ASSERT(a->kind == RX_A_EXPR && (a->u.e->kind == RX_E_FLOAT || a->u.e->kind == RX_E_INT));
    return a->u.e->kind == RX_E_FLOAT ? a->u.e->u.fval : (double)a->u.e->u.ival;
}

static rx_expr *arange_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    ictx *s = ud;
    lg_ctx *c = s->c;
    rx_dtype dt = (rx_dtype)lg_out(c, 0)->dtype;
    if (is_float_attr(s->start) || is_float_attr(s->step)) {
        rx_expr *i = rx_te_cast(te, dt, idx[0]);
        return bin(c, RX_E_ADD, rx_te_const(te, attr_num(s->start), dt),
                   bin(c, RX_E_MUL, i, rx_te_const(te, attr_num(s->step), dt)));
    }
    rx_expr *v = bin(c, RX_E_ADD, lg_attr_size(c, s->start),
                     bin(c, RX_E_MUL, idx[0], lg_attr_size(c, s->step)));
    return rx_te_cast(te, dt, rx_te_simplify(te, v));
}

static bool rule_arange(lg_ctx *c)
{
    ictx s = {0};
    s.c = c;
    s.start = rx_call_attr(c->call, "start");
    s.step = rx_call_attr(c->call, "step");
    if (lg_out(c, 0)->dtype == RX_DT_BOOL) return lg_fail(c, "a bool range is not supported");
    return emit(c, arange_cb, &s);
}

const lg_rule_entry rx_lg_index[] = {
    {"repeat", rule_repeat}, {"tile", rule_tile}, {"tril", rule_tri},
    {"triu", rule_tri},      {"arange", rule_arange},
};
const int rx_lg_index_count = RX_COUNTOF(rx_lg_index);
