/*
 * op_reduce.c — reductions: attribute schemas and deduction rules.
 *
 * sum, mean, max, min, prod and variance reduce over `axis` (null: every axis; an
 * integer or a list) and keep the reduced axes as 1s when `keepdims`; the dtype is
 * x's. argmax and argmin take at most one axis and give i64 indices. Axes are
 * normalized against x's rank; an axis out of range or given twice is an error.
 *
 * The coarse fallback: with unknown dims the rank of the result is still known from
 * x's rank and the axes; with unknown rank it is known only for a reduction over
 * every axis without keepdims (a 0-d result). Each rule costs O(ndim).
 */
#include "op_int.h"

/* The result of reducing x over the axes ax[0..n) (n < 0: every axis) as dtype dt. */
static rx_sinfo *reduce(rx_dctx *c, const rx_node *call, const rx_sinfo *x,
                        const int64_t *ax, int n, bool keepdims, rx_dtype dt)
{
    int nd = x->ndim;
    if (nd < 0) {
        if (n < 0 && !keepdims) return rx_si_tensor(c->a, dt, 0, NULL);
        return rx_si_tensor(c->a, dt, -1, NULL);
    }
    bool *red = RX_NEWN(c->a, bool, nd > 0 ? nd : 1);
    int nred = 0;
    if (n < 0) {
        for (int i = 0; i < nd; i++) red[i] = true;
        nred = nd;
    } else {
        for (int i = 0; i < n; i++) {
            int a;
            if (!rx_d_axis(c, call, ax[i], nd, &a)) return NULL;
            if (red[a]) return rx_op_fail(c, call, "axis %d is repeated", a);
            red[a] = true;
            nred++;
        }
    }
    int rn = keepdims ? nd : nd - nred;
    if (!x->dims) return rx_si_tensor(c->a, dt, rn, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, rn > 0 ? rn : 1);
    for (int i = 0, k = 0; i < nd; i++) {
        if (!red[i]) d[k++] = rx_d_simplify(c, x->dims[i]);
        else if (keepdims) d[k++] = rx_e_int(c->a, 1);
    }
    return rx_si_tensor(c->a, dt, rn, d);
}

/* sum mean max min prod variance: axis (null, int or list), keepdims. */
static rx_sinfo *d_reduce(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *axis = rx_call_attr(call, "axis");
    int n = axis->kind == RX_A_ARRAY ? axis->u.arr.n : 1;
    int64_t *ax = RX_NEWN(c->a, int64_t, n > 0 ? n : 1);
    if (!rx_op_int_list(c, call, "axis", ax, n, &n)) return NULL;
    return reduce(c, call, x, ax, n, rx_call_attr(call, "keepdims")->u.b,
                  (rx_dtype)x->dtype);
}

/* argmax argmin: axis (null or int), keepdims; i64 result. */
static rx_sinfo *d_arg_reduce(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *axis = rx_call_attr(call, "axis");
    bool all = axis->kind == RX_A_NULL;
    int64_t ax = all ? 0 : axis->u.i;
    return reduce(c, call, x, &ax, all ? -1 : 1, rx_call_attr(call, "keepdims")->u.b,
                  RX_DT_I64);
}

static const rx_attr_spec reduce_attrs[] = {
    RX_ATTR_NUL("axis", RX_AT_AXES, "null"),
    RX_ATTR_DEF("keepdims", RX_AT_BOOL, "false"),
};
static const rx_attr_spec arg_attrs[] = {
    RX_ATTR_NUL("axis", RX_AT_INT, "null"),
    RX_ATTR_DEF("keepdims", RX_AT_BOOL, "false"),
};

#define REDUCE(nm) {nm, 1, 1, RX_ATTRS(reduce_attrs), d_reduce, 0}
#define ARG_REDUCE(nm) {nm, 1, 1, RX_ATTRS(arg_attrs), d_arg_reduce, 0}

/* The reductions (registered by op/registry.c). */
const rx_op rx_ops_reduce[] = {
    REDUCE("sum"), REDUCE("mean"), REDUCE("max"), REDUCE("min"), REDUCE("prod"),
    REDUCE("variance"),
    ARG_REDUCE("argmax"), ARG_REDUCE("argmin"),
};
const int rx_ops_reduce_count = RX_COUNTOF(rx_ops_reduce);
