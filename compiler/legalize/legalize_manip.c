/*
 * legalize_manip.c — legalization rules of the shape-manipulation and creation ops.
 *
 * Every rule is one compute over the deduced result dims whose element is a load of
 * the operand at a remapped index (or a constant):
 *   reshape flatten   the dims are cut into groups of equal products (see reshape_cb);
 *                     in each, the result position is raveled row-major over the
 *                     result dims and unraveled over x's: x[f // s0, f // s1 % d1,
 *                     ..., f % dk], simplified with the loop ranges (flatten of
 *                     (n, 4) reads x[i0 // 4, i0 % 4]); a group of one dim each side
 *                     copies the index (a run-time check that the element counts
 *                     agree when deduction could not prove it: lg_require_equal)
 *   permute_dims      x[idx[inverse permutation]]
 *   expand_dims       the inserted positions dropped
 *   squeeze           0 inserted at the squeezed positions (axis null: the literal-1
 *                     dims, which is what deduction removed)
 *   broadcast_to      the broadcast index (a literal-1 dim of x reads 0)
 *   zeros ones        0 / 1 of the result dtype; the shape operand is not passed
 *   full full_like    the 0-d fill operand converted to the result dtype
 *   zeros_like ones_like  as zeros/ones: x is not passed (only its shape matters, and
 *                     that is in the result annotation)
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct mctx {
    lg_ctx *c;
    rx_te_tensor *x;
    int nd;             /* result rank */
    int xn;             /* x's rank */
    rx_expr **odims;    /* result dims */
    int map[MAXD];      /* permute: result pos -> x axis; expand/squeeze: flags */
    double value;       /* zeros/ones */
} mctx;

static bool check_rank(lg_ctx *c, int n)
{
    return n <= MAXD ? true : lg_fail(c, "more than %d dimensions", MAXD);
}

/* ---------------------------------------------------------------- reshape */
/* x[...] for the result positions idx[o0..o1) of one group, whose dims' product is
 * that of x's dims [x0..x1): the group's position raveled over its result dims and
 * unraveled over x's (a group of one dim on each side copies the index). */
static void reshape_group(rx_te *te, mctx *m, rx_expr *const *idx, rx_expr **xi, int x0, int x1,
                          int o0, int o1)
{
    rx_arena *a = rx_te_arena(te);
    rx_expr *f = NULL;
    for (int k = o0; k < o1; k++)
        f = f ? rx_e_binary(a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, f, m->odims[k]), idx[k]) : idx[k];
    if (!f) f = rx_e_int(a, 0);
    if (x1 - x0 == 1 && o1 - o0 == 1) {
        xi[x0] = f;
        return;
    }
    rx_expr *stride = rx_e_int(a, 1);
    for (int k = x1 - 1; k >= x0; k--) {
        rx_expr *v = k == x1 - 1 ? f : rx_e_binary(a, RX_E_FLOORDIV, f, stride);
        if (k > x0) v = rx_e_binary(a, RX_E_FLOORMOD, v, rx_te_dim(m->x, k));
        xi[k] = rx_te_simplify(te, v);
        stride = rx_e_binary(a, RX_E_MUL, stride, rx_te_dim(m->x, k));
    }
}

/* The dims are cut into groups at every pair of prefixes (of x's dims and of the
 * result's, each at least one dim longer than the last cut) whose products are proved
 * equal: (b, 4, 4, n, 64) -> (b, 16, n, 64) is b | 4 4 -> 16 | n | 64, read as
 * x[i0, i1 // 4, i1 % 4, i2, i3]. Each group is raveled and unraveled on its own, so
 * an index never divides by a symbolic product that a cut separates (raveling the
 * whole position would read x[(... + i2) // (n * 1024), ...], which no simplification
 * undoes when n is a sum such as c + 1). The suffix products after a cut are equal
 * too (the totals agree: checked at run time when not proved), so each group's
 * position is the same number on both sides. */
static rx_expr *reshape_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    rx_arena *a = rx_te_arena(te);
    rx_expr **xi = RX_NEWN(a, rx_expr *, m->xn > 0 ? m->xn : 1);
    int x0 = 0, o0 = 0;
    rx_expr *px = rx_e_int(a, 1);
    for (int i = 1; i < m->xn; i++) {
        px = rx_te_simplify(te, rx_e_binary(a, RX_E_MUL, px, rx_te_dim(m->x, i - 1)));
        rx_expr *po = rx_e_int(a, 1);
        for (int k = 0; k < o0; k++) po = rx_e_binary(a, RX_E_MUL, po, m->odims[k]);
        for (int j = o0 + 1; j < m->nd; j++) {
            po = rx_te_simplify(te, rx_e_binary(a, RX_E_MUL, po, m->odims[j - 1]));
            if (rx_te_prove_equal(te, px, po)) {
                reshape_group(te, m, idx, xi, x0, i, o0, j);
                x0 = i;
                o0 = j;
                break;
            }
        }
    }
    if (m->xn > 0) reshape_group(te, m, idx, xi, x0, m->xn, o0, m->nd);
    return rx_te_at(te, m->x, xi);
}

/* ---------------------------------------------------------------- index remaps */
static rx_expr *permute_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    rx_expr **xi = RX_NEWN(rx_te_arena(te), rx_expr *, m->xn > 0 ? m->xn : 1);
    for (int k = 0; k < m->nd; k++) xi[m->map[k]] = idx[k];
    return rx_te_at(te, m->x, xi);
}

static rx_expr *expand_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    rx_expr **xi = RX_NEWN(rx_te_arena(te), rx_expr *, m->xn > 0 ? m->xn : 1);
    for (int k = 0, j = 0; k < m->nd; k++)
        if (!m->map[k]) xi[j++] = idx[k];
    return rx_te_at(te, m->x, xi);
}

static rx_expr *squeeze_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    rx_arena *a = rx_te_arena(te);
    rx_expr **xi = RX_NEWN(a, rx_expr *, m->xn > 0 ? m->xn : 1);
    for (int k = 0, j = 0; k < m->xn; k++) xi[k] = m->map[k] ? rx_e_int(a, 0) : idx[j++];
    return rx_te_at(te, m->x, xi);
}

static rx_expr *bcast_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    return rx_te_at(te, m->x, lg_bcast_index(m->c, m->x, idx, m->nd));
}

static rx_expr *const_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    return rx_te_const(te, m->value, (rx_dtype)lg_out(m->c, 0)->dtype);
}

static rx_expr *fill_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    mctx *m = ud;
    rx_expr *none[1] = {NULL};
    return rx_te_cast(te, (rx_dtype)lg_out(m->c, 0)->dtype, rx_te_at(te, m->x, none));
}

/* Sets up m for a rule reading operand 0 (when read_x); false after an error. */
static bool setup(lg_ctx *c, mctx *m, bool read_x)
{
    memset(m, 0, sizeof *m);
    m->c = c;
    const rx_sinfo *o = lg_out(c, 0);
    m->nd = o->ndim;
    m->odims = o->dims;
    if (!check_rank(c, m->nd)) return false;
    if (!read_x) return true;
    if (!(m->x = lg_input(c, 0, "x"))) return false;
    m->xn = rx_te_ndim(m->x);
    return check_rank(c, m->xn);
}

static bool emit(lg_ctx *c, mctx *m, rx_te_fcompute f)
{
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims, f, m));
    return true;
}

static rx_expr *numel(lg_ctx *c, const rx_sinfo *s)
{
    rx_expr *n = rx_e_int(c->a, 1);
    for (int i = 0; i < s->ndim; i++) n = rx_e_binary(c->a, RX_E_MUL, n, s->dims[i]);
    return rx_te_simplify(c->te, n);
}

/* Reading x raveled is in bounds only when the counts agree: deduction proved it or
 * found it possible (symbolic sizes), so the latter is checked at run time. */
static bool rule_reshape(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, true)) return false;
    lg_require_equal(c, numel(c, c->call->args[0]->sinfo), numel(c, lg_out(c, 0)), "elements");
    return emit(c, &m, reshape_cb);
}

static bool rule_permute(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, true)) return false;
    int64_t ax[MAXD];
    int n;
    lg_attr_ints(rx_call_attr(c->call, "axes"), ax, MAXD, &n);
    for (int k = 0; k < m.nd; k++) {
        m.map[k] = m.nd - 1 - k;
        if (n >= 0 && !lg_axis(c, ax[k], m.nd, &m.map[k])) return false;
    }
    return emit(c, &m, permute_cb);
}

static bool rule_expand_dims(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, true)) return false;
    int64_t ax[MAXD];
    int n;
    lg_attr_ints(rx_call_attr(c->call, "axis"), ax, MAXD, &n);
    for (int i = 0; i < n; i++) {
        int a;
        if (!lg_axis(c, ax[i], m.nd, &a)) return false;
        m.map[a] = 1;
    }
    return emit(c, &m, expand_cb);
}

static bool rule_squeeze(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, true)) return false;
    int64_t ax[MAXD];
    int n, dropped = 0;
    lg_attr_ints(rx_call_attr(c->call, "axis"), ax, MAXD, &n);
    for (int k = 0; n < 0 && k < m.xn; k++) m.map[k] = rx_expr_is_int(rx_te_dim(m.x, k), 1);
    for (int i = 0; i < n; i++) {
        int a;
        if (!lg_axis(c, ax[i], m.xn, &a)) return false;
        m.map[a] = 1;
    }
    for (int k = 0; k < m.xn; k++) dropped += m.map[k];
    if (m.xn - dropped != m.nd)
        return lg_fail(c, "the squeezed axes of a rank-%d operand do not give rank %d", m.xn, m.nd);
    return emit(c, &m, squeeze_cb);
}

static bool rule_broadcast_to(lg_ctx *c)
{
    mctx m;
    return setup(c, &m, true) && emit(c, &m, bcast_cb);
}

static bool rule_const(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, false)) return false;
    m.value = strncmp(lg_opname(c), "ones", 4) == 0 ? 1 : 0;
    return emit(c, &m, const_cb);
}

static bool rule_full(lg_ctx *c)
{
    mctx m;
    if (!setup(c, &m, false)) return false;
    if (!(m.x = lg_input(c, 1, "fill"))) return false;
    if (rx_te_ndim(m.x) != 0) return lg_fail(c, "the fill value must be 0-d");
    return emit(c, &m, fill_cb);
}

const lg_rule_entry rx_lg_manip[] = {
    {"reshape", rule_reshape},       {"flatten", rule_reshape},
    {"permute_dims", rule_permute},  {"expand_dims", rule_expand_dims},
    {"squeeze", rule_squeeze},       {"broadcast_to", rule_broadcast_to},
    {"zeros", rule_const},           {"ones", rule_const},
    {"zeros_like", rule_const},      {"ones_like", rule_const},
    {"full", rule_full},             {"full_like", rule_full},
};
const int rx_lg_manip_count = RX_COUNTOF(rx_lg_manip);
