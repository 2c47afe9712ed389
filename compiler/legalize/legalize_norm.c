/*
 * legalize_norm.c — legalization rules of variance and the normalizations (nn.group_norm's
 * is legalize_gnorm.c's).
 *
 * All four reduce over a set of axes R of x (the "normalized" axes) and read the
 * per-row statistics back at the remaining positions. The statistics are
 * materialized intermediates over the kept dims ("rest": x's dims without R); cnt is
 * the product of the dims of R (symbolic: n * m), converted to the compute dtype.
 *
 *   variance        T_sum[rest] = sum over R of x
 *                   T_sqsum[out] = sum over R of (x - T_sum / cnt)^2
 *                   out = T_sqsum / cnt
 *                   the two-pass form (NumPy's np.var, population variance, ddof 0),
 *                   not E[x^2] - E[x]^2, which cancels catastrophically in f32.
 *                   `axis` null reduces every axis; keepdims keeps 1s. An integer x is
 *                   computed in f64 and the result converted to x's dtype by C's
 *                   truncation: np.var(x).astype(dtype) (docs/ops.md).
 *   nn.layer_norm   T_mean[rest] = sum over R of x / cnt
 *                   T_var[rest]  = sum over R of (x - mean)^2          (two-pass)
 *                   out = (x - mean) * rsqrt(T_var / cnt + eps) [* gamma] [+ beta]
 *                   gamma and beta have one dim per entry of `axes`, in the order of
 *                   `axes` (deduction checked that); scale=false / center=false drop
 *                   gamma / beta, which are then not passed to the kernel.
 *   nn.rms_norm     T_sqsum[rest] = sum over R of x * x
 *                   out = x * rsqrt(T_sqsum / cnt + eps) * weight[axes]
 *   nn.batch_norm   inference form along `axis` (c = the index there):
 *                   out = (x - mean[c]) / sqrt(var[c] + eps) [* gamma[c]] [+ beta[c]]
 *                   and the tuple's other two fields are copies of the moving mean and
 *                   variance, as TVM's inference batch_norm returns them.
 * Norms require a float x (deduction checked it) and compute in its dtype; no
 * upcast of f16 (TVM's topi upcasts; a later pass may). A normalized extent of 0
 * gives NaN, as NumPy. Every rule is O(rank) expression building; the kernels make
 * two or three passes over x.
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct nctx {
    lg_ctx *c;
    rx_te_tensor *x, *gamma, *beta, *mean, *var; /* operands (NULL when unused) */
    rx_te_tensor *t1, *t2;   /* statistics: sum or mean; squared sum or variance */
    int nd;                  /* x's rank */
    bool red[MAXD];          /* normalized axes */
    int ax[MAXD];            /* norms: the axes in attribute order (gamma's dims) */
    int nax;
    bool keep;               /* variance: keepdims */
    rx_dtype ct;             /* compute dtype */
    rx_expr *cnt;            /* element count of R, in ct */
    double eps;
} nctx;

static rx_expr *bin(rx_te *te, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(rx_te_arena(te), k, x, y);
}

static rx_expr *call1(rx_te *te, rx_intrin f, rx_expr *x)
{
    return rx_e_call(rx_te_arena(te), f, &x, 1, (rx_dtype)x->dtype);
}

/* x's index from a kept-dims index idx (rank nd - |R|, or nd when keep) and the
 * reduce indices r (one per axis of R, in axis order). */
static rx_expr **merge(nctx *n, rx_expr *const *idx, rx_expr *const *r, bool keep)
{
    rx_expr **o = RX_NEWN(n->c->a, rx_expr *, n->nd > 0 ? n->nd : 1);
    for (int k = 0, j = 0, q = 0; k < n->nd; k++) {
        if (n->red[k]) {
            o[k] = r[q++];
            if (keep) j++;
        } else {
            o[k] = idx[j++];
        }
    }
    return o;
}

/* A full index of x (rank nd) without the positions of R. */
static rx_expr **rest_of(nctx *n, rx_expr *const *idx)
{
    rx_expr **o = RX_NEWN(n->c->a, rx_expr *, n->nd > 0 ? n->nd : 1);
    for (int k = 0, j = 0; k < n->nd; k++)
        if (!n->red[k]) o[j++] = idx[k];
    return o;
}

/* x[i] in the compute dtype. */
static rx_expr *xval(rx_te *te, nctx *n, rx_expr *const *i)
{
    return rx_te_cast(te, n->ct, rx_te_at(te, n->x, i));
}

/* Fills red from ax[0..nax) (normalized), the rest dims into rest (count *nrest), the
 * reduce extents into rdom and cnt. */
static void setup_axes(nctx *n, rx_expr **rest, int *nrest, rx_expr **rdom, int *nred)
{
    *nrest = *nred = 0;
    rx_expr *cnt = rx_e_int(n->c->a, 1);
    for (int k = 0; k < n->nd; k++) {
        rx_expr *d = rx_te_dim(n->x, k);
        if (n->red[k]) {
            rdom[(*nred)++] = d;
            cnt = rx_e_binary(n->c->a, RX_E_MUL, cnt, d);
        } else {
            rest[(*nrest)++] = d;
        }
    }
    n->cnt = rx_te_cast(n->c->te, n->ct, rx_te_simplify(n->c->te, cnt));
}

/* Reads `attr` (AXES; null: all when all_if_null) into n->red / n->ax. */
static bool read_axes(nctx *n, const char *attr, bool all_if_null)
{
    int64_t raw[MAXD];
    int cnt;
    n->nd = rx_te_ndim(n->x);
    if (n->nd > MAXD) return lg_fail(n->c, "more than %d dimensions", MAXD);
    lg_attr_ints(rx_call_attr(n->c->call, attr), raw, MAXD, &cnt);
    memset(n->red, 0, sizeof n->red);
    n->nax = 0;
    if (cnt < 0) {
        RX_ASSERT(all_if_null);
        for (int k = 0; k < n->nd; k++) n->red[k] = true;
        return true;
    }
    for (int i = 0; i < cnt; i++) {
        int a;
        if (!lg_axis(n->c, raw[i], n->nd, &a)) return false;
        if (n->red[a]) return lg_fail(n->c, "axis %d is repeated", a);
        n->red[a] = true;
        n->ax[n->nax++] = a;
    }
    return true;
}

/* ---------------------------------------------------------------- variance */
static rx_expr *sum_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    nctx *n = ud;
    return xval(te, n, merge(n, idx, r, false));
}

/* (x - T_sum[rest] / cnt)^2 at merge(idx, r); keep: idx has the reduced positions. */
static rx_expr *dev2(rx_te *te, nctx *n, rx_expr *const *idx, rx_expr *const *r, bool keep)
{
    rx_expr **xi = merge(n, idx, r, keep);
    rx_expr *mean = bin(te, RX_E_DIV, rx_te_at(te, n->t1, rest_of(n, xi)), n->cnt);
    rx_expr *d = bin(te, RX_E_SUB, xval(te, n, xi), mean);
    return bin(te, RX_E_MUL, d, d);
}

static rx_expr *var_sq_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    nctx *n = ud;
    return dev2(te, n, idx, r, n->keep);
}

static rx_expr *var_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    nctx *n = ud;
    rx_dtype dt = (rx_dtype)lg_out(n->c, 0)->dtype;
    return rx_te_cast(te, dt, bin(te, RX_E_DIV, rx_te_at(te, n->t2, idx), n->cnt));
}

static bool rule_variance(lg_ctx *c)
{
    nctx n = {0};
    n.c = c;
    if (!(n.x = lg_input(c, 0, "x"))) return false;
    rx_dtype xt = rx_te_dtype(n.x);
    if (xt == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    n.ct = rx_dtype_is_float(xt) ? xt : RX_DT_F64;
    if (!read_axes(&n, "axis", true)) return false;
    n.keep = rx_call_attr(c->call, "keepdims")->u.b;
    rx_expr *rest[MAXD], *rdom[MAXD];
    int nrest, nred;
    setup_axes(&n, rest, &nrest, rdom, &nred);
    const rx_sinfo *o = lg_out(c, 0);
    n.t1 = rx_te_reduce(c->te, "T_sum", n.ct, nrest, rest, RX_TE_SUM, nred, rdom, NULL, sum_cb, &n);
    n.t2 = rx_te_reduce(c->te, "T_sqsum", n.ct, o->ndim, o->dims, RX_TE_SUM, nred, rdom, NULL,
                        var_sq_cb, &n);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               var_out_cb, &n));
    return true;
}

/* ---------------------------------------------------------------- layer_norm, rms_norm */
static rx_expr *mean_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    nctx *n = ud;
    return bin(te, RX_E_DIV, rx_te_at(te, n->t1, idx), n->cnt);
}

static rx_expr *ln_var_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    nctx *n = ud;
    rx_expr *d = bin(te, RX_E_SUB, xval(te, n, merge(n, idx, r, false)), rx_te_at(te, n->t1, idx));
    return bin(te, RX_E_MUL, d, d);
}

static rx_expr *sq_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    nctx *n = ud;
    rx_expr *v = xval(te, n, merge(n, idx, r, false));
    return bin(te, RX_E_MUL, v, v);
}

/* p[idx at the normalized axes, in attribute order]. */
static rx_expr *param_at(rx_te *te, nctx *n, const rx_te_tensor *p, rx_expr *const *idx)
{
    rx_expr **pi = RX_NEWN(n->c->a, rx_expr *, n->nax > 0 ? n->nax : 1);
    for (int j = 0; j < n->nax; j++) pi[j] = idx[n->ax[j]];
    return rx_te_at(te, p, pi);
}

/* rsqrt(stat[rest] / cnt + eps) */
static rx_expr *inv_std(rx_te *te, nctx *n, rx_expr *stat)
{
    rx_expr *v = bin(te, RX_E_ADD, bin(te, RX_E_DIV, stat, n->cnt), rx_te_const(te, n->eps, n->ct));
    return call1(te, RX_FN_RSQRT, v);
}

static rx_expr *ln_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    nctx *n = ud;
    rx_expr **rest = rest_of(n, idx);
    rx_expr *d = bin(te, RX_E_SUB, xval(te, n, idx), rx_te_at(te, n->t1, rest));
    rx_expr *v = bin(te, RX_E_MUL, d, inv_std(te, n, rx_te_at(te, n->t2, rest)));
    if (n->gamma) v = bin(te, RX_E_MUL, v, param_at(te, n, n->gamma, idx));
    if (n->beta) v = bin(te, RX_E_ADD, v, param_at(te, n, n->beta, idx));
    return v;
}

static rx_expr *rms_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    nctx *n = ud;
    rx_expr *v = bin(te, RX_E_MUL, xval(te, n, idx), inv_std(te, n, rx_te_at(te, n->t1, rest_of(n, idx))));
    return bin(te, RX_E_MUL, v, param_at(te, n, n->gamma, idx));
}

/* Common start of the norms: x (float), axes, epsilon. */
static bool norm_setup(lg_ctx *c, nctx *n)
{
    n->c = c;
    if (!(n->x = lg_input(c, 0, "x"))) return false;
    n->ct = rx_te_dtype(n->x);
    if (!rx_dtype_is_float(n->ct)) return lg_fail(c, "needs a float tensor");
    n->eps = rx_call_attr(c->call, "epsilon")->u.f;
    return read_axes(n, "axes", false);
}

static bool rule_layer_norm(lg_ctx *c)
{
    nctx n = {0};
    if (!norm_setup(c, &n)) return false;
    if (rx_call_attr(c->call, "scale")->u.b && !(n.gamma = lg_input(c, 1, "gamma"))) return false;
    if (rx_call_attr(c->call, "center")->u.b && !(n.beta = lg_input(c, 2, "beta"))) return false;
    rx_expr *rest[MAXD], *rdom[MAXD];
    int nrest, nred;
    setup_axes(&n, rest, &nrest, rdom, &nred);
    n.t1 = rx_te_reduce(c->te, "T_sum", n.ct, nrest, rest, RX_TE_SUM, nred, rdom, NULL, sum_cb, &n);
    /* mean_cb reads the sum: callbacks run during the call, before t1 is replaced */
    n.t1 = rx_te_compute(c->te, "T_mean", n.ct, nrest, rest, mean_cb, &n);
    n.t2 = rx_te_reduce(c->te, "T_var", n.ct, nrest, rest, RX_TE_SUM, nred, rdom, NULL,
                        ln_var_cb, &n);
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), n.ct, o->ndim, o->dims, ln_out_cb, &n));
    return true;
}

static bool rule_rms_norm(lg_ctx *c)
{
    nctx n = {0};
    if (!norm_setup(c, &n)) return false;
    if (!(n.gamma = lg_input(c, 1, "weight"))) return false;
    rx_expr *rest[MAXD], *rdom[MAXD];
    int nrest, nred;
    setup_axes(&n, rest, &nrest, rdom, &nred);
    n.t1 = rx_te_reduce(c->te, "T_sqsum", n.ct, nrest, rest, RX_TE_SUM, nred, rdom, NULL, sq_cb, &n);
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), n.ct, o->ndim, o->dims, rms_out_cb, &n));
    return true;
}

/* ---------------------------------------------------------------- batch_norm */
static rx_expr *bn_out_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    nctx *n = ud;
    rx_expr *ci = idx[n->ax[0]];
    rx_expr *d = bin(te, RX_E_SUB, rx_te_at(te, n->x, idx), rx_te_at(te, n->mean, &ci));
    rx_expr *s = call1(te, RX_FN_SQRT, bin(te, RX_E_ADD, rx_te_at(te, n->var, &ci),
                                           rx_te_const(te, n->eps, n->ct)));
    rx_expr *v = bin(te, RX_E_DIV, d, s);
    if (n->gamma) v = bin(te, RX_E_MUL, v, rx_te_at(te, n->gamma, &ci));
    if (n->beta) v = bin(te, RX_E_ADD, v, rx_te_at(te, n->beta, &ci));
    return v;
}

static rx_expr *copy_mean_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    return rx_te_at(te, ((nctx *)ud)->mean, idx);
}

static rx_expr *copy_var_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    return rx_te_at(te, ((nctx *)ud)->var, idx);
}

static bool rule_batch_norm(lg_ctx *c)
{
    nctx n = {0};
    n.c = c;
    if (!(n.x = lg_input(c, 0, "x"))) return false;
    n.ct = rx_te_dtype(n.x);
    n.nd = rx_te_ndim(n.x);
    if (!rx_dtype_is_float(n.ct)) return lg_fail(c, "needs a float tensor");
    if (!lg_axis(c, rx_call_attr(c->call, "axis")->u.i, n.nd, &n.ax[0])) return false;
    n.eps = rx_call_attr(c->call, "epsilon")->u.f;
    if (rx_call_attr(c->call, "scale")->u.b && !(n.gamma = lg_input(c, 1, "gamma"))) return false;
    if (rx_call_attr(c->call, "center")->u.b && !(n.beta = lg_input(c, 2, "beta"))) return false;
    if (!(n.mean = lg_input(c, 3, "moving_mean")) || !(n.var = lg_input(c, 4, "moving_var")))
        return false;
    if (rx_te_ndim(n.mean) != 1 || rx_te_ndim(n.var) != 1)
        return lg_fail(c, "the moving mean and variance must be 1-D");
    const rx_sinfo *o0 = lg_out(c, 0), *o1 = lg_out(c, 1), *o2 = lg_out(c, 2);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), n.ct, o0->ndim, o0->dims, bn_out_cb, &n));
    lg_output(c, rx_te_compute(c->te, "T_mean", n.ct, o1->ndim, o1->dims, copy_mean_cb, &n));
    lg_output(c, rx_te_compute(c->te, "T_var", n.ct, o2->ndim, o2->dims, copy_var_cb, &n));
    return true;
}

const lg_rule_entry rx_lg_norm[] = {
    {"variance", rule_variance},
    {"nn.layer_norm", rule_layer_norm},
    {"nn.group_norm", lg_group_norm}, /* legalize_gnorm.c */
    {"nn.rms_norm", rule_rms_norm},
    {"nn.batch_norm", rule_batch_norm},
};
const int rx_lg_norm_count = RX_COUNTOF(rx_lg_norm);
