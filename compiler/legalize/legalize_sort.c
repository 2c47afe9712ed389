/*
 * legalize_sort.c — topk, sort and argsort as loops, for GPU targets (on the CPU they
 * are the runtime's rt.topk: legalize_lib.c). The loops are a rank sort, which needs no
 * data-dependent control flow and so runs on every device the GPU generator serves:
 *
 *   rank[.., i, ..]  = #{l : x[l] comes before x[i]}              (a sum over the axis)
 *   index[.., j, ..] = the i whose rank is j                      (a sum over the axis)
 *   value[.., j, ..] = x[.., index[.., j, ..], ..]                (a gather)
 *
 * where "comes before" is the total order of docs/ops.md: descending (topk largest,
 * sort/argsort descending) puts the greater first, NaN greater than every number and
 * equal to another NaN (`x != x` tests NaN; -0.0 == +0.0 as the comparisons say), and
 * equal elements keep the lower index first. Ranks are a permutation of 0..n-1, so
 * exactly one i matches each j < k, and the gather returns x's own element (NaN and
 * -0.0 kept). Cost O(n^2) comparisons per row for the ranks and O(k n) for the indices:
 * meant for the sizes models sort on a device (detection heads, sampling); the CPU's
 * library is O(n) per row.
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct sctx {
    lg_ctx *c;
    rx_te_tensor *x, *rank, *index;
    int nd, ax;     /* rank of x, the sorted axis */
    bool desc;      /* greater first */
    rx_dtype idt;   /* the indices' dtype */
} sctx;

static rx_expr *bin(lg_ctx *c, rx_ekind k, rx_expr *a, rx_expr *b) { return rx_e_binary(c->a, k, a, b); }

/* idx with entry ax replaced by v (a fresh array). */
static rx_expr **at_axis(sctx *s, rx_expr *const *idx, rx_expr *v)
{
    rx_expr **r = RX_NEWN(s->c->a, rx_expr *, s->nd);
    for (int i = 0; i < s->nd; i++) r[i] = i == s->ax ? v : idx[i];
    return r;
}

/* a > b in the total order: NaN above every number. */
static rx_expr *greater(lg_ctx *c, rx_expr *a, rx_expr *b, bool real)
{
    if (!real) return bin(c, RX_E_GT, a, b);
    rx_expr *an = bin(c, RX_E_NE, a, a), *bn = bin(c, RX_E_NE, b, b);
    return bin(c, RX_E_OR, bin(c, RX_E_AND, an, rx_e_unary(c->a, RX_E_NOT, bn)), bin(c, RX_E_GT, a, b));
}

/* rank[idx] = sum over l of (x[l] before x[i]), i = idx[ax] */
static rx_expr *rank_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    sctx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *a = rx_te_at(te, s->x, at_axis(s, idx, r[0])), *b = rx_te_at(te, s->x, idx);
    bool real = rx_dtype_is_float((rx_dtype)a->dtype);
    rx_expr *first = s->desc ? greater(c, a, b, real) : greater(c, b, a, real);
    rx_expr *tie = real ? bin(c, RX_E_OR, bin(c, RX_E_EQ, a, b),
                              bin(c, RX_E_AND, bin(c, RX_E_NE, a, a), bin(c, RX_E_NE, b, b)))
                        : bin(c, RX_E_EQ, a, b);
    rx_expr *before = bin(c, RX_E_OR, first, bin(c, RX_E_AND, tie, bin(c, RX_E_LT, r[0], idx[s->ax])));
    return rx_e_select(c->a, before, rx_e_int(c->a, 1), rx_e_int(c->a, 0));
}

/* index[idx] = sum over i of (rank[i] == j ? i : 0), j = idx[ax] */
static rx_expr *index_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    sctx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *hit = bin(c, RX_E_EQ, rx_te_at(te, s->rank, at_axis(s, idx, r[0])), idx[s->ax]);
    return rx_e_select(c->a, hit, r[0], rx_e_int(c->a, 0));
}

static rx_expr *cast_index_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    return rx_te_cast(te, s->idt, rx_te_at(te, s->index, idx));
}

static rx_expr *value_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    return rx_te_at(te, s->x, at_axis(s, idx, rx_te_at(te, s->index, idx)));
}

static bool rule_sort(lg_ctx *c)
{
    sctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    s.nd = rx_te_ndim(s.x);
    const char *op = lg_opname(c);
    bool topk = !strcmp(op, "topk");
    const rx_attr *axis = rx_call_attr(c->call, "axis");
    if (s.nd < 1 || s.nd > MAXD) return lg_fail(c, "needs a tensor of rank 1 to %d", MAXD);
    if (!lg_axis(c, axis->kind == RX_A_NULL ? -1 : axis->u.i, s.nd, &s.ax)) return false;
    s.desc = rx_call_attr(c->call, topk ? "largest" : "descending")->u.b;
    const char *ret = topk ? rx_call_attr(c->call, "ret_type")->u.s
                           : !strcmp(op, "sort") ? "values" : "indices";
    bool vals = strcmp(ret, "indices") != 0, idxs = strcmp(ret, "values") != 0;
    const rx_sinfo *ov = lg_out(c, 0), *oi = lg_out(c, vals && idxs ? 1 : 0);
    rx_expr *n = rx_te_dim(s.x, s.ax);
    rx_expr **xd = RX_NEWN(c->a, rx_expr *, s.nd);
    for (int i = 0; i < s.nd; i++) xd[i] = rx_te_dim(s.x, i);
    s.rank = rx_te_reduce(c->te, "T_rank", RX_DT_I64, s.nd, xd, RX_TE_SUM, 1, &n, NULL, rank_cb, &s);
    s.index = rx_te_reduce(c->te, "T_index", RX_DT_I64, ov->ndim, ov->dims, RX_TE_SUM, 1, &n, NULL,
                           index_cb, &s);
    if (vals) lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)ov->dtype, ov->ndim, ov->dims,
                                         value_cb, &s));
    if (idxs) {
        s.idt = (rx_dtype)oi->dtype;
        lg_output(c, s.idt == RX_DT_I64 ? s.index
                                        : rx_te_compute(c->te, "T_indices", s.idt, oi->ndim, oi->dims,
                                                        cast_index_cb, &s));
    }
    return true;
}

const lg_rule_entry rx_lg_sort[] = {
    {"topk", rule_sort},
    {"sort", rule_sort},
    {"argsort", rule_sort},
};
const int rx_lg_sort_count = RX_COUNTOF(rx_lg_sort);
