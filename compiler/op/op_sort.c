/*
 * op_sort.c — ordering along an axis: topk, sort, argsort (TVM's relax.op.topk,
 * relax.op.sort, relax.op.argsort; ONNX TopK, torch.sort / torch.argsort / torch.topk).
 *
 *   topk(x; k = 1, axis = -1, ret_type = "both", largest = true, dtype = "i32"): the k
 *       greatest (least with largest = false) elements of each row along axis, in
 *       order, and their indices along axis. k is a SIZE (a literal or a symbolic size:
 *       torch.sort exports a TopK of the axis's own extent); ret_type "both" gives the
 *       tuple (values, indices), "values" or "indices" one tensor. Values have x's dtype
 *       and dims with k along axis; indices the same dims in `dtype` (an integer type).
 *       A literal k above a literal extent is an error; otherwise the runtime checks.
 *   sort(x; axis = -1, descending = false): x's elements ordered along axis.
 *   argsort(x; axis = -1, descending = false, dtype = "i32"): the indices that sort.
 * The order is total (runtime/library_sort.c): -0.0 equals +0.0, NaN is greater than
 * every number (last ascending, first descending, as NumPy and PyTorch), equal
 * elements keep the lower index first (ONNX TopK's rule; a stable sort). Each rule
 * costs O(ndim).
 */
#include <string.h>

#include "op_int.h"

/* x (a tensor of known rank >= 1, not a tuple) and the normalized axis; false after an
 * error. */
static bool sort_args(rx_dctx *c, const rx_node *call, const rx_sinfo **x, int *ax)
{
    *x = rx_d_tensor_arg(c, call, 0);
    if (!*x) return false;
    if ((*x)->ndim == 0) {
        rx_op_fail(c, call, "cannot order along an axis of a 0-d tensor");
        return false;
    }
    *ax = -1;
    if ((*x)->ndim > 0 && !rx_d_axis(c, call, rx_call_attr(call, "axis")->u.i, (*x)->ndim, ax))
        return false;
    return true;
}

/* The index dtype attribute: an integer type; false after an error. */
static bool index_dtype(rx_dctx *c, const rx_node *call, rx_dtype *dt)
{
    if (!rx_dtype_parse(rx_call_attr(call, "dtype")->u.s, dt) || !rx_dtype_is_int(*dt)) {
        rx_op_fail(c, call, "dtype must be an integer type, found %s",
                   rx_call_attr(call, "dtype")->u.s);
        return false;
    }
    return true;
}

static rx_sinfo *d_topk(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x;
    int ax;
    rx_dtype idt;
    if (!sort_args(c, call, &x, &ax) || !index_dtype(c, call, &idt)) return NULL;
    const char *rt = rx_call_attr(call, "ret_type")->u.s;
    bool both = !strcmp(rt, "both"), vals = !strcmp(rt, "values");
    if (!both && !vals && strcmp(rt, "indices"))
        return rx_op_fail(c, call, "ret_type must be \"both\", \"values\" or \"indices\", found \"%s\"", rt);
    rx_expr *k = rx_d_attr_size(c, rx_call_attr(call, "k"));
    if (!k) return NULL;
    int64_t kv, dv;
    if (rx_expr_is_const(k, &kv) && kv < 0) return rx_op_fail(c, call, "k must be at least 0, found %lld", (long long)kv);
    rx_sinfo *v, *ix;
    if (x->dims) {
        if (rx_expr_is_const(k, &kv) && rx_expr_is_const(x->dims[ax], &dv) && kv > dv)
            return rx_op_fail(c, call, "k (%lld) exceeds the extent %lld of axis %d", (long long)kv,
                              (long long)dv, ax);
        rx_expr **d = RX_NEWN(c->a, rx_expr *, x->ndim);
        for (int i = 0; i < x->ndim; i++) d[i] = i == ax ? rx_d_simplify(c, k) : x->dims[i];
        v = rx_si_tensor(c->a, (rx_dtype)x->dtype, x->ndim, d);
        ix = rx_si_tensor(c->a, idt, x->ndim, d);
    } else {
        v = rx_si_tensor(c->a, (rx_dtype)x->dtype, x->ndim, NULL);
        ix = rx_si_tensor(c->a, idt, x->ndim, NULL);
    }
    if (!both) return vals ? v : ix;
    rx_sinfo *f[2] = {v, ix};
    return rx_si_tuple(c->a, f, 2);
}

static rx_sinfo *d_sort(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x;
    int ax;
    if (!sort_args(c, call, &x, &ax)) return NULL;
    return rx_op_like(c, x, (rx_dtype)x->dtype);
}

static rx_sinfo *d_argsort(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x;
    int ax;
    rx_dtype idt;
    if (!sort_args(c, call, &x, &ax) || !index_dtype(c, call, &idt)) return NULL;
    return rx_op_like(c, x, idt);
}

static const rx_attr_spec topk_attrs[] = {
    RX_ATTR_DEF("k", RX_AT_SIZE, "1"),
    RX_ATTR_DEF("axis", RX_AT_INT, "-1"),
    RX_ATTR_DEF("ret_type", RX_AT_STR, "\"both\""),
    RX_ATTR_DEF("largest", RX_AT_BOOL, "true"),
    RX_ATTR_DEF("dtype", RX_AT_DTYPE, "\"i32\""),
};
static const rx_attr_spec sort_attrs[] = {
    RX_ATTR_DEF("axis", RX_AT_INT, "-1"),
    RX_ATTR_DEF("descending", RX_AT_BOOL, "false"),
};
static const rx_attr_spec argsort_attrs[] = {
    RX_ATTR_DEF("axis", RX_AT_INT, "-1"),
    RX_ATTR_DEF("descending", RX_AT_BOOL, "false"),
    RX_ATTR_DEF("dtype", RX_AT_DTYPE, "\"i32\""),
};

/* The ordering ops (registered by op/registry.c). */
const rx_op rx_ops_sort[] = {
    {"topk", 1, 1, RX_ATTRS(topk_attrs), d_topk, 0},
    {"sort", 1, 1, RX_ATTRS(sort_attrs), d_sort, 0},
    {"argsort", 1, 1, RX_ATTRS(argsort_attrs), d_argsort, 0},
};
const int rx_ops_sort_count = RX_COUNTOF(rx_ops_sort);
