/*
 * legalize_axis.c — legalization rules of the axis ops (op/op_axis.c): gather_elements,
 * gather_nd and cumsum.
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
 *   cumsum           one reduction per output element over r in [0, d): out[i] = sum
 *                    of select(r <= i[axis], x[.., r, ..], 0) (r < i[axis] when
 *                    exclusive), in the result dtype; axis null runs over the raveled
 *                    x. Cost O(d) per element, O(d^2) per row: meant for the moderate
 *                    extents of model graphs (positions, sequence lengths), not as a
 *                    scan kernel.
 */
#include "legalize_int.h"

typedef struct actx {
    lg_ctx *c;
    rx_te_tensor *x, *ind;
    int ax;          /* the axis (-1: raveled) */
    int nd;
    bool exclusive;
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

static rx_expr *cumsum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    actx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *v, *pos = s->ax < 0 ? idx[0] : idx[s->ax];
    if (s->ax < 0) {
        v = rx_te_at(te, s->x, lg_unravel(c, s->x, r[0]));
    } else {
        rx_expr **xi = RX_NEWN(c->a, rx_expr *, s->nd);
        for (int k = 0; k < s->nd; k++) xi[k] = k == s->ax ? r[0] : idx[k];
        v = rx_te_at(te, s->x, xi);
    }
    rx_expr *in = bin(c, s->exclusive ? RX_E_LT : RX_E_LE, r[0], pos);
    return rx_e_select(c->a, in, rx_te_cast(te, s->dt, v), rx_te_const(te, 0, s->dt));
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
    const rx_sinfo *o = lg_out(c, 0);
    s.dt = (rx_dtype)o->dtype;
    rx_expr *ext = o->dims[s.ax < 0 ? 0 : s.ax];
    lg_output(c, rx_te_reduce(c->te, lg_tname(c), s.dt, o->ndim, o->dims, RX_TE_SUM, 1, &ext,
                              NULL, cumsum_cb, &s));
    return true;
}

const lg_rule_entry rx_lg_axis[] = {
    {"gather_elements", rule_gather_elements},
    {"cumsum", rule_cumsum},
    {"gather_nd", rule_gather_nd},
};
const int rx_lg_axis_count = RX_COUNTOF(rx_lg_axis);
