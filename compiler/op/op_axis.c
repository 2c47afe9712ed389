/*
 * op_axis.c — ops that index, accumulate or pad along axes: gather_elements, gather_nd,
 * scatter_elements, scatter_nd, cumsum and nn.pad (at its rule) (TVM's relax.op.gather_elements and relax.op.cumsum; NumPy's
 * np.take_along_axis and np.cumsum).
 *
 *   gather_elements(x, indices; axis = 0): x and indices have the same rank; the
 *       result has indices' dims and x's dtype, out[i] = x[i with i[axis] replaced by
 *       indices[i]] (negative indices count from the end). Every dim of indices but
 *       the axis must be provably at most x's (the kernel indexes x with the loop
 *       variable there: nothing checks it at run time); indices are integers.
 *   cumsum(x; axis = null, dtype = null, exclusive = false): running sums along axis
 *       (null: over the raveled x, a 1-d result); `dtype` null keeps x's, and the sums
 *       are computed in the result dtype; `exclusive` leaves each element out of its
 *       own sum (the first is 0); `reverse` sums from the end (ONNX CumSum's attribute,
 *       not TVM's: element i sums the elements at i and after).
 *   gather_nd(x, indices; batch_dims = 0): indices (..., m), m literal: out[i, r] =
 *       x[i[:batch_dims], indices[i, 0..m), r] (negative indices count from the end),
 *       shaped indices' dims but the last, then x's dims after batch_dims + m.
 *   scatter_elements(data, indices, updates; axis = 0, reduction = "update") and
 *   scatter_nd(data, indices, updates; reduction = "update"): data with the updates
 *       written at the indexed positions (ONNX ScatterElements / ScatterND, TVM's
 *       scatter_elements / scatter_nd); reduction "update" (the last update of a
 *       position wins), "add", "mul", "max", "min" combine with data's element.
 * Each rule costs O(ndim).
 */
#include <string.h>

#include "op_int.h"

/* x and integer indices (operands 0 and 1); false after an error. */
static bool index_args(rx_dctx *c, const rx_node *call, const rx_sinfo **x, const rx_sinfo **ind)
{
    *x = rx_d_tensor_arg(c, call, 0);
    *ind = rx_d_tensor_arg(c, call, 1);
    if (!*x || !*ind) return false;
    if ((*ind)->dtype != RX_DT_UNKNOWN && !rx_dtype_is_int((rx_dtype)(*ind)->dtype)) {
        rx_op_fail(c, call, "indices must be integers, found %s", rx_dtype_name((rx_dtype)(*ind)->dtype));
        return false;
    }
    return true;
}

static rx_sinfo *d_gather_elements(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *ind;
    if (!index_args(c, call, &x, &ind)) return NULL;
    if (x->ndim >= 0 && ind->ndim >= 0 && x->ndim != ind->ndim)
        return rx_op_fail(c, call, "x and indices must have the same rank, found %d and %d",
                          x->ndim, ind->ndim);
    int nd = x->ndim >= 0 ? x->ndim : ind->ndim, ax = 0;
    if (nd == 0) return rx_op_fail(c, call, "cannot gather along an axis of a 0-d tensor");
    if (nd > 0 && !rx_d_axis(c, call, rx_call_attr(call, "axis")->u.i, nd, &ax)) return NULL;
    if (x->dims && ind->dims)
        for (int i = 0; i < nd; i++) {
            if (i == ax) continue;
            rx_expr *le = rx_e_binary(c->a, RX_E_LE, ind->dims[i], x->dims[i]);
            if (!rx_arith_prove(c->ar, le))
                return rx_op_fail(c, call, "dimension %d of indices (%s) must be at most x's (%s)",
                                  i, rx_op_dims_str(c->a, ind->dims, nd),
                                  rx_op_dims_str(c->a, x->dims, nd));
        }
    return rx_op_like(c, ind, (rx_dtype)x->dtype);
}

static rx_sinfo *d_cumsum(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *dta = rx_call_attr(call, "dtype"), *axis = rx_call_attr(call, "axis");
    rx_dtype dt = (rx_dtype)x->dtype;
    if (dta->kind != RX_A_NULL) rx_dtype_parse(dta->u.s, &dt);
    if (dt == RX_DT_BOOL) return rx_op_fail(c, call, "cannot sum in bool");
    if (axis->kind == RX_A_NULL) {
        if (!x->dims) return rx_si_tensor(c->a, dt, 1, NULL);
        rx_expr *n = rx_d_numel(c, x->dims, x->ndim);
        return rx_si_tensor(c->a, dt, 1, &n);
    }
    int ax;
    if (x->ndim == 0) return rx_op_fail(c, call, "cannot accumulate along an axis of a 0-d tensor");
    if (x->ndim > 0 && !rx_d_axis(c, call, axis->u.i, x->ndim, &ax)) return NULL;
    return rx_op_like(c, x, dt);
}

/* gather_nd(x, indices; batch_dims = 0): indices (..., m) with a literal m; the result
 * is indices' dims but the last, then x's dims after batch_dims + m. */
static rx_sinfo *d_gather_nd(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *ind;
    if (!index_args(c, call, &x, &ind)) return NULL;
    int64_t b = rx_call_attr(call, "batch_dims")->u.i, m;
    if (!x->dims || !ind->dims) return rx_si_tensor(c->a, (rx_dtype)x->dtype, -1, NULL);
    if (ind->ndim < 1 || !rx_expr_is_const(ind->dims[ind->ndim - 1], &m))
        return rx_op_fail(c, call, "the last dim of indices must be a literal");
    if (b < 0 || b >= ind->ndim || b + m > x->ndim || m < 1)
        return rx_op_fail(c, call, "batch_dims %lld and an index depth %lld do not fit x of rank %d "
                          "and indices of rank %d", (long long)b, (long long)m, x->ndim, ind->ndim);
    for (int i = 0; i < b; i++)
        if (!rx_arith_prove_equal(c->ar, x->dims[i], ind->dims[i]))
            return rx_op_fail(c, call, "batch dimension %d differs between x and indices", i);
    int rn = ind->ndim - 1 + x->ndim - (int)(b + m);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, rn > 0 ? rn : 1);
    int k = 0;
    for (int i = 0; i < ind->ndim - 1; i++) d[k++] = rx_d_simplify(c, ind->dims[i]);
    for (int i = (int)(b + m); i < x->ndim; i++) d[k++] = rx_d_simplify(c, x->dims[i]);
    return rx_si_tensor(c->a, (rx_dtype)x->dtype, rn, d);
}

static bool reduction_ok(rx_dctx *c, const rx_node *call)
{
    static const char *const known[] = {"update", "add", "mul", "max", "min"};
    const char *r = rx_call_attr(call, "reduction")->u.s;
    for (int i = 0; i < RX_COUNTOF(known); i++)
        if (!strcmp(r, known[i])) return true;
    rx_op_fail(c, call, "reduction \"%s\" is not supported (update, add, mul, max, min)", r);
    return false;
}

/* scatter_elements(data, indices, updates; axis = 0, reduction = "update"): indices and
 * updates have one shape, data's rank, each dim but axis provably at most data's. */
static rx_sinfo *d_scatter_elements(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *ind, *u = rx_d_tensor_arg(c, call, 2);
    if (!index_args(c, call, &x, &ind) || !u || !reduction_ok(c, call)) return NULL;
    rx_dtype dt;
    if (!rx_d_same_dtype(c, call, (rx_dtype)x->dtype, (rx_dtype)u->dtype, &dt)) return NULL;
    if (x->ndim >= 0 && ((ind->ndim >= 0 && ind->ndim != x->ndim) || (u->ndim >= 0 && u->ndim != x->ndim)))
        return rx_op_fail(c, call, "data, indices and updates must have the same rank");
    int ax = 0;
    if (x->ndim == 0) return rx_op_fail(c, call, "cannot scatter along an axis of a 0-d tensor");
    if (x->ndim > 0 && !rx_d_axis(c, call, rx_call_attr(call, "axis")->u.i, x->ndim, &ax)) return NULL;
    if (x->dims && ind->dims && u->dims)
        for (int i = 0; i < x->ndim; i++) {
            if (!rx_arith_prove_equal(c->ar, ind->dims[i], u->dims[i]))
                return rx_op_fail(c, call, "indices and updates must have the same shape");
            rx_expr *le = rx_e_binary(c->a, RX_E_LE, ind->dims[i], x->dims[i]);
            if (i != ax && !rx_arith_prove(c->ar, le))
                return rx_op_fail(c, call, "dimension %d of indices must be at most data's", i);
        }
    return rx_op_like(c, x, dt);
}

/* scatter_nd(data, indices (..., m), updates; reduction = "update"): updates has
 * indices' dims but the last, then data's dims after m. */
static rx_sinfo *d_scatter_nd(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *ind, *u = rx_d_tensor_arg(c, call, 2);
    if (!index_args(c, call, &x, &ind) || !u || !reduction_ok(c, call)) return NULL;
    rx_dtype dt;
    if (!rx_d_same_dtype(c, call, (rx_dtype)x->dtype, (rx_dtype)u->dtype, &dt)) return NULL;
    int64_t m;
    if (x->dims && ind->dims && u->dims) {
        if (ind->ndim < 1 || !rx_expr_is_const(ind->dims[ind->ndim - 1], &m) || m < 1 || m > x->ndim)
            return rx_op_fail(c, call, "the last dim of indices must be a literal from 1 to data's rank");
        int want = ind->ndim - 1 + x->ndim - (int)m;
        bool ok = u->ndim == want;
        for (int i = 0; ok && i < want; i++)
            ok = rx_arith_prove_equal(c->ar, u->dims[i], i < ind->ndim - 1 ? ind->dims[i]
                                                                      : x->dims[i - (ind->ndim - 1) + m]);
        if (!ok) return rx_op_fail(c, call, "updates must have indices' dims but the last, then data's after %lld",
                                   (long long)m);
    }
    return rx_op_like(c, x, dt);
}

/* nn.pad(x; pad_width, pad_mode = "constant", pad_value = 0.0): pad_width holds
 * (before, after) per axis, 2 * rank values; a dim becomes d + before + after. Negative
 * widths crop ("constant" only); "edge" and "reflect" need widths below the extent
 * ("reflect": at most d - 1) when it is a literal. */
static rx_sinfo *d_pad(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const char *mode = rx_call_attr(call, "pad_mode")->u.s;
    bool constant = !strcmp(mode, "constant");
    if (!constant && strcmp(mode, "edge") && strcmp(mode, "reflect"))
        return rx_op_fail(c, call, "pad_mode \"%s\" is not supported (constant, edge, reflect)", mode);
    if (x->ndim < 0) return rx_si_tensor(c->a, (rx_dtype)x->dtype, -1, NULL);
    int64_t pw[128];
    int n;
    if (x->ndim > 64) return rx_op_fail(c, call, "more than 64 dimensions");
    if (!rx_op_int_list(c, call, "pad_width", pw, 128, &n)) return NULL;
    if (n != 2 * x->ndim)
        return rx_op_fail(c, call, "pad_width needs 2 values per axis (%d), found %d", 2 * x->ndim, n);
    if (!x->dims) return rx_si_tensor(c->a, (rx_dtype)x->dtype, x->ndim, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, x->ndim > 0 ? x->ndim : 1);
    for (int i = 0; i < x->ndim; i++) {
        int64_t b = pw[2 * i], a = pw[2 * i + 1], v;
        bool lit = rx_expr_is_const(x->dims[i], &v);
        if (!constant && (b < 0 || a < 0))
            return rx_op_fail(c, call, "negative pad widths need pad_mode \"constant\"");
        if (!constant && lit && (b || a) && (v == 0 || (!strcmp(mode, "reflect") && (b >= v || a >= v))))
            return rx_op_fail(c, call, "pad widths %lld, %lld do not fit %s padding of extent %lld",
                              (long long)b, (long long)a, mode, (long long)v);
        d[i] = rx_d_simplify(c, rx_e_binary(c->a, RX_E_ADD, x->dims[i], rx_e_int(c->a, a + b)));
        if (rx_expr_is_const(d[i], &v) && v < 0)
            return rx_op_fail(c, call, "padding axis %d leaves a negative extent", i);
    }
    return rx_si_tensor(c->a, (rx_dtype)x->dtype, x->ndim, d);
}

static const rx_attr_spec gather_attrs[] = {RX_ATTR_DEF("axis", RX_AT_INT, "0")};
static const rx_attr_spec pad_attrs[] = {
    RX_ATTR_REQ("pad_width", RX_AT_INTS),
    RX_ATTR_DEF("pad_mode", RX_AT_STR, "\"constant\""),
    RX_ATTR_DEF("pad_value", RX_AT_FLOAT, "0.0"),
};
static const rx_attr_spec scatter_attrs[] = {
    RX_ATTR_DEF("axis", RX_AT_INT, "0"),
    RX_ATTR_DEF("reduction", RX_AT_STR, "\"update\""),
};
static const rx_attr_spec scatter_nd_attrs[] = {RX_ATTR_DEF("reduction", RX_AT_STR, "\"update\"")};
static const rx_attr_spec gather_nd_attrs[] = {RX_ATTR_DEF("batch_dims", RX_AT_INT, "0")};
static const rx_attr_spec cumsum_attrs[] = {
    RX_ATTR_NUL("axis", RX_AT_INT, "null"),
    RX_ATTR_NUL("dtype", RX_AT_DTYPE, "null"),
    RX_ATTR_DEF("exclusive", RX_AT_BOOL, "false"),
    RX_ATTR_DEF("reverse", RX_AT_BOOL, "false"),
};

/* The axis ops (registered by op/registry.c). */
const rx_op rx_ops_axis[] = {
    {"gather_elements", 2, 2, RX_ATTRS(gather_attrs), d_gather_elements, 0},
    {"cumsum", 1, 1, RX_ATTRS(cumsum_attrs), d_cumsum, 0},
    {"gather_nd", 2, 2, RX_ATTRS(gather_nd_attrs), d_gather_nd, 0},
    {"scatter_elements", 3, 3, RX_ATTRS(scatter_attrs), d_scatter_elements, 0},
    {"scatter_nd", 3, 3, RX_ATTRS(scatter_nd_attrs), d_scatter_nd, 0},
    {"nn.pad", 1, 1, RX_ATTRS(pad_attrs), d_pad, 0},
};
const int rx_ops_axis_count = RX_COUNTOF(rx_ops_axis);
