/*
 * legalize_gnorm.c — the loop-level rule of nn.group_norm (op_nn.c), for the targets
 * and dtypes the runtime's rt.group_norm does not take (legalize_lib.c: the CPU in f32
 * and f64 takes every call first).
 *
 *   x (N, C, D...), g groups of cg = C / g channels, the reduce domain R = (cg, D...):
 *     T_sum[n, q]  = sum over R of x[n, q * cg + j, d...]
 *     T_mean[n, q] = T_sum / cnt                       (cnt = cg * prod D)
 *     T_var[n, q]  = sum over R of (x - T_mean)^2      (two-pass, as layer_norm)
 *     out[n, c, d...] = (x - T_mean[n, c // cg]) * rsqrt(T_var / cnt + eps)
 *                       [* gamma[c]] [+ beta[c]]
 * Three passes over x; the statistics are (N, g) intermediates. O(rank) building.
 */
#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct gctx {
    lg_ctx *c;
    rx_te_tensor *x, *gamma, *beta, *sum, *mean, *var;
    int nd;
    rx_expr *cg, *cnt;  /* channels per group; the element count per group, in ct */
    rx_dtype ct;
    double eps;
} gctx;

static rx_expr *bin(gctx *g, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(g->c->a, k, x, y);
}

/* x at (n, q * cg + r[0], r[1..]) in the compute dtype. */
static rx_expr *xg(rx_te *te, gctx *g, rx_expr *const *idx, rx_expr *const *r)
{
    rx_expr *xi[MAXD];
    xi[0] = idx[0];
    xi[1] = bin(g, RX_E_ADD, bin(g, RX_E_MUL, idx[1], g->cg), r[0]);
    for (int k = 2; k < g->nd; k++) xi[k] = r[k - 1];
    return rx_te_cast(te, g->ct, rx_te_at(te, g->x, xi));
}

static rx_expr *sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    return xg(te, ud, idx, r);
}

static rx_expr *mean_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    gctx *g = ud;
    return bin(g, RX_E_DIV, rx_te_at(te, g->sum, idx), g->cnt);
}

static rx_expr *var_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    gctx *g = ud;
    rx_expr *d = bin(g, RX_E_SUB, xg(te, g, idx, r), rx_te_at(te, g->mean, idx));
    return bin(g, RX_E_MUL, d, d);
}

static rx_expr *out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    gctx *g = ud;
    rx_expr *st[2] = {idx[0], bin(g, RX_E_FLOORDIV, idx[1], g->cg)};
    rx_expr *v = bin(g, RX_E_ADD, bin(g, RX_E_DIV, rx_te_at(te, g->var, st), g->cnt),
                     rx_te_const(te, g->eps, g->ct));
    rx_expr *inv = rx_e_call(g->c->a, RX_FN_RSQRT, &v, 1, g->ct);
    rx_expr *y = bin(g, RX_E_MUL, bin(g, RX_E_SUB, rx_te_cast(te, g->ct, rx_te_at(te, g->x, idx)),
                                      rx_te_at(te, g->mean, st)), inv);
    if (g->gamma) y = bin(g, RX_E_MUL, y, rx_te_at(te, g->gamma, &idx[1]));
    if (g->beta) y = bin(g, RX_E_ADD, y, rx_te_at(te, g->beta, &idx[1]));
    return y;
}

bool lg_group_norm(lg_ctx *c)
{
    gctx g = {0};
    g.c = c;
    if (!(g.x = lg_input(c, 0, "x"))) return false;
    g.nd = rx_te_ndim(g.x);
    g.ct = rx_te_dtype(g.x);
    if (g.nd > MAXD) return lg_fail(c, "more than %d dimensions", MAXD);
    if (rx_call_attr(c->call, "scale")->u.b && !(g.gamma = lg_input(c, 1, "gamma"))) return false;
    if (rx_call_attr(c->call, "center")->u.b && !(g.beta = lg_input(c, 2, "beta"))) return false;
    g.eps = rx_call_attr(c->call, "epsilon")->u.f;
    rx_expr *groups = rx_e_int(c->a, rx_call_attr(c->call, "num_groups")->u.i);
    g.cg = rx_te_simplify(c->te, bin(&g, RX_E_FLOORDIV, rx_te_dim(g.x, 1), groups));
    rx_expr *rest[2] = {rx_te_dim(g.x, 0), groups}, *rdom[MAXD], *cnt = g.cg;
    rdom[0] = g.cg;
    for (int k = 2; k < g.nd; k++) {
        rdom[k - 1] = rx_te_dim(g.x, k);
        cnt = bin(&g, RX_E_MUL, cnt, rdom[k - 1]);
    }
    g.cnt = rx_te_cast(c->te, g.ct, rx_te_simplify(c->te, cnt));
    g.sum = rx_te_reduce(c->te, "T_sum", g.ct, 2, rest, RX_TE_SUM, g.nd - 1, rdom, NULL, sum_cb, &g);
    g.mean = rx_te_compute(c->te, "T_mean", g.ct, 2, rest, mean_cb, &g);
    g.var = rx_te_reduce(c->te, "T_var", g.ct, 2, rest, RX_TE_SUM, g.nd - 1, rdom, NULL, var_cb, &g);
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), g.ct, o->ndim, o->dims, out_cb, &g));
    return true;
}
