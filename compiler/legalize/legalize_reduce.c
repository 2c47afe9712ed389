/*
 * legalize_reduce.c — legalization rules of the reductions and of softmax.
 *
 *   sum prod max min   one REDUCE over the `axis` dims (null: all), keepdims or not;
 *                      max/min start at the dtype's lowest/highest finite value
 *   mean               REDUCE sum into an intermediate, then a compute dividing by the
 *                      element count (symbolic: f32(n * m)); floor division on ints
 *   argmax argmin      one ARGREDUCE (te.h: a block with two stores); axis null gives
 *                      the flat position, as NumPy
 *   nn.softmax         max over the axis, e = exp(x - max) (materialized), its sum,
 *                      then e / sum: the numerically stable form, as TVM's topi
 *   nn.log_softmax     max, s = sum of exp(x - max), then x - max - log(s)
 * Index plumbing: the result index (with 1-extent positions kept when keepdims) and
 * the reduce variables are merged back into an operand index in axis order.
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct rctx {
    lg_ctx *c;
    rx_te_tensor *x, *t1, *t2, *t3; /* operand; intermediates (softmax: max, exp, sum) */
    int nd;                     /* operand rank */
    bool red[MAXD];             /* reduced axes of x */
    bool keep;                  /* keepdims */
    int ax;                     /* softmax axis */
} rctx;

/* x's index from a result index idx (rank nd with keepdims, else nd - nred) and the
 * reduce indices r. */
static rx_expr **merge(rctx *r, rx_expr *const *idx, rx_expr *const *ridx)
{
    rx_expr **o = RX_NEWN(r->c->a, rx_expr *, r->nd > 0 ? r->nd : 1);
    for (int k = 0, j = 0, q = 0; k < r->nd; k++) {
        if (r->red[k]) {
            o[k] = ridx[q++];
            if (r->keep) j++;
        } else {
            o[k] = idx[j++];
        }
    }
    return o;
}

/* Reads axis/keepdims into r (x already set); the reduce extents into rdom. */
static bool read_axes(rctx *r, rx_expr **rdom, int *nred)
{
    const rx_attr *axis = rx_call_attr(r->c->call, "axis");
    int64_t ax[MAXD];
    int n;
    r->nd = rx_te_ndim(r->x);
    if (r->nd > MAXD) return lg_fail(r->c, "more than %d dimensions", MAXD);
    lg_attr_ints(axis, ax, MAXD, &n);
    memset(r->red, 0, sizeof r->red);
    for (int i = 0; i < (n < 0 ? r->nd : n); i++) {
        int a = i;
        if (n >= 0 && !lg_axis(r->c, ax[i], r->nd, &a)) return false;
        r->red[a] = true;
    }
    r->keep = rx_call_attr(r->c->call, "keepdims")->u.b;
    *nred = 0;
    for (int k = 0; k < r->nd; k++)
        if (r->red[k]) rdom[(*nred)++] = rx_te_dim(r->x, k);
    return true;
}

static rx_expr *elem_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx, void *ud)
{
    rctx *r = ud;
    return rx_te_at(te, r->x, merge(r, idx, ridx));
}

static const struct {
    const char *op;
    rx_te_redop redop;
} REDUCE[] = {{"sum", RX_TE_SUM}, {"prod", RX_TE_PROD}, {"max", RX_TE_MAX}, {"min", RX_TE_MIN},
              {"mean", RX_TE_SUM}};

static rx_expr *mean_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    rctx *r = ud;
    rx_dtype dt = rx_te_dtype(r->t1);
    rx_expr *cnt = rx_e_int(rx_te_arena(te), 1);
    for (int k = 0; k < r->nd; k++)
        if (r->red[k]) cnt = rx_e_binary(rx_te_arena(te), RX_E_MUL, cnt, rx_te_dim(r->x, k));
    cnt = rx_te_cast(te, dt, rx_te_simplify(te, cnt));
    return rx_e_binary(rx_te_arena(te), rx_dtype_is_float(dt) ? RX_E_DIV : RX_E_FLOORDIV,
                       rx_te_at(te, r->t1, idx), cnt);
}

static bool rule_reduce(lg_ctx *c)
{
    rctx r = {0};
    r.c = c;
    int k = 0;
    while (k < RX_COUNTOF(REDUCE) && strcmp(REDUCE[k].op, lg_opname(c)) != 0) k++;
    RX_ASSERT(k < RX_COUNTOF(REDUCE));
    if (!(r.x = lg_input(c, 0, "x"))) return false;
    if (rx_te_dtype(r.x) == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    rx_expr *rdom[MAXD];
    int nred;
    if (!read_axes(&r, rdom, &nred)) return false;
    const rx_sinfo *o = lg_out(c, 0);
    rx_dtype dt = (rx_dtype)o->dtype;
    bool mean = !strcmp(lg_opname(c), "mean");
    const char *name = mean ? "T_sum" : lg_tname(c);
    rx_te_tensor *t = rx_te_reduce(c->te, name, dt, o->ndim, o->dims, REDUCE[k].redop, nred,
                                   rdom, NULL, elem_cb, &r);
    if (mean) {
        r.t1 = t;
        t = rx_te_compute(c->te, lg_tname(c), dt, o->ndim, o->dims, mean_cb, &r);
    }
    lg_output(c, t);
    return true;
}

static bool rule_argreduce(lg_ctx *c)
{
    rctx r = {0};
    r.c = c;
    if (!(r.x = lg_input(c, 0, "x"))) return false;
    rx_expr *rdom[MAXD];
    int nred;
    if (!read_axes(&r, rdom, &nred)) return false;
    const rx_sinfo *o = lg_out(c, 0);
    rx_te_argop op = !strcmp(lg_opname(c), "argmax") ? RX_TE_ARGMAX : RX_TE_ARGMIN;
    lg_output(c, rx_te_argreduce(c->te, lg_tname(c), o->ndim, o->dims, op, nred, rdom, elem_cb, &r));
    return true;
}

/* ---------------------------------------------------------------- softmax */

/* idx without position ax (rank nd - 1). */
static rx_expr **drop_axis(rctx *r, rx_expr *const *idx)
{
    rx_expr **o = RX_NEWN(r->c->a, rx_expr *, r->nd);
    for (int k = 0, j = 0; k < r->nd; k++)
        if (k != r->ax) o[j++] = idx[k];
    return o;
}

/* idx (rank nd - 1) with v inserted at position ax. */
static rx_expr **put_axis(rctx *r, rx_expr *const *idx, rx_expr *v)
{
    rx_expr **o = RX_NEWN(r->c->a, rx_expr *, r->nd);
    for (int k = 0, j = 0; k < r->nd; k++) o[k] = k == r->ax ? v : idx[j++];
    return o;
}

static rx_expr *sm_max_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx, void *ud)
{
    rctx *r = ud;
    return rx_te_at(te, r->x, put_axis(r, idx, ridx[0]));
}

/* exp(x[idx] - max[idx without ax]) */
static rx_expr *shifted_exp(rx_te *te, rctx *r, rx_expr *const *idx)
{
    rx_expr *d = rx_e_binary(rx_te_arena(te), RX_E_SUB, rx_te_at(te, r->x, idx),
                             rx_te_at(te, r->t1, drop_axis(r, idx)));
    return rx_e_call(rx_te_arena(te), RX_FN_EXP, &d, 1, (rx_dtype)d->dtype);
}

static rx_expr *sm_exp_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    return shifted_exp(te, ud, idx);
}

static rx_expr *sm_sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx, void *ud)
{
    rctx *r = ud;
    return rx_te_at(te, r->t2, put_axis(r, idx, ridx[0]));
}

static rx_expr *lsm_sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx, void *ud)
{
    return shifted_exp(te, ud, put_axis(ud, idx, ridx[0]));
}

static rx_expr *sm_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    rctx *r = ud;
    return rx_e_binary(rx_te_arena(te), RX_E_DIV, rx_te_at(te, r->t2, idx),
                       rx_te_at(te, r->t3, drop_axis(r, idx)));
}

static rx_expr *lsm_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    rctx *r = ud;
    rx_arena *a = rx_te_arena(te);
    rx_expr **rest = drop_axis(r, idx);
    rx_expr *s = rx_te_at(te, r->t3, rest);
    rx_expr *d = rx_e_binary(a, RX_E_SUB, rx_te_at(te, r->x, idx), rx_te_at(te, r->t1, rest));
    return rx_e_binary(a, RX_E_SUB, d, rx_e_call(a, RX_FN_LOG, &s, 1, (rx_dtype)s->dtype));
}

static bool rule_softmax(lg_ctx *c)
{
    rctx r = {0};
    r.c = c;
    if (!(r.x = lg_input(c, 0, "x"))) return false;
    r.nd = rx_te_ndim(r.x);
    rx_dtype dt = rx_te_dtype(r.x);
    if (!rx_dtype_is_float(dt)) return lg_fail(c, "needs a float tensor");
    if (r.nd == 0) return lg_fail(c, "needs at least one dimension");
    if (!lg_axis(c, rx_call_attr(c->call, "axis")->u.i, r.nd, &r.ax)) return false;
    bool log = !strcmp(lg_opname(c), "nn.log_softmax");
    rx_expr *xd[MAXD + 1], *rd[MAXD + 1];
    if (r.nd > MAXD) return lg_fail(c, "more than %d dimensions", MAXD);
    for (int k = 0; k < r.nd; k++) xd[k] = rx_te_dim(r.x, k);
    rx_expr **rest = drop_axis(&r, xd);
    rd[0] = xd[r.ax];
    r.t1 = rx_te_reduce(c->te, "T_softmax_maxelem", dt, r.nd - 1, rest, RX_TE_MAX, 1, rd, NULL,
                        sm_max_cb, &r);
    if (log) {
        r.t3 = rx_te_reduce(c->te, "T_softmax_expsum", dt, r.nd - 1, rest, RX_TE_SUM, 1, rd,
                            NULL, lsm_sum_cb, &r);
        lg_output(c, rx_te_compute(c->te, lg_tname(c), dt, r.nd, lg_out(c, 0)->dims, lsm_out_cb, &r));
        return true;
    }
    r.t2 = rx_te_compute(c->te, "T_softmax_exp", dt, r.nd, xd, sm_exp_cb, &r);
    r.t3 = rx_te_reduce(c->te, "T_softmax_expsum", dt, r.nd - 1, rest, RX_TE_SUM, 1, rd, NULL,
                        sm_sum_cb, &r);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), dt, r.nd, lg_out(c, 0)->dims, sm_out_cb, &r));
    return true;
}

const lg_rule_entry rx_lg_reduce[] = {
    {"sum", rule_reduce},  {"prod", rule_reduce}, {"max", rule_reduce},
    {"min", rule_reduce},  {"mean", rule_reduce}, {"argmax", rule_argreduce},
    {"argmin", rule_argreduce}, {"nn.softmax", rule_softmax}, {"nn.log_softmax", rule_softmax},
};
const int rx_lg_reduce_count = RX_COUNTOF(rx_lg_reduce);
