/*
 * op_elemwise.c — elementwise ops: unary math, clip, binary arithmetic with NumPy
 * broadcasting, comparisons and logic (bool results), where, astype.
 *
 * Every result keeps the operand's (or the broadcast) shape; only dtypes differ by
 * family. Dtype rules, checked only when the dtype is known (an unknown dtype passes
 * every check and stays unknown):
 *   exp log sqrt rsqrt sigmoid tanh sin cos erf nn.gelu nn.gelu_tanh nn.silu  float
 *   logical_not logical_and logical_or, where's condition                     bool
 *   binary operands, comparison operands, where's branches                    equal
 * Operands are tensors (a scalar is a 0-d tensor, e.g. {"const": 1.5}). Broadcasting
 * is rx_d_broadcast's: an undecidable pair of dims (n vs m) gives a result with known
 * ndim and unknown dims, never an error; only proved mismatches are errors.
 */
#include "op_int.h"

/* Result of broadcasting x with y, with dtype dt; NULL after an error. */
static rx_sinfo *bcast(rx_dctx *c, const rx_node *call, const rx_sinfo *x, const rx_sinfo *y,
                       rx_dtype dt) {
    int nd;
    rx_expr **dims = rx_d_broadcast(c, call, x->dims, x->ndim, y->dims, y->ndim, &nd);
    if (!dims && nd == -2) return NULL;
    return rx_si_tensor(c->a, dt, nd, dims);
}

/* Checks that a known dtype is a float (want_bool false) or bool (want_bool true). */
static bool check_dtype(rx_dctx *c, const rx_node *call, const rx_sinfo *x, int argi,
                        bool want_bool) {
    rx_dtype dt = (rx_dtype)x->dtype;
    if (dt == RX_DT_UNKNOWN) return true;
    if (want_bool ? dt == RX_DT_BOOL : rx_dtype_is_float(dt)) return true;
    rx_op_fail(c, call, "argument %d must be a %s tensor, found dtype %s",
               argi, want_bool ? "bool" : "float", rx_dtype_name(dt));
    return false;
}

/* ---------------------------------------------------------------- unary */
static rx_sinfo *deduce_unary(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    return x ? rx_op_like(c, x, (rx_dtype)x->dtype) : NULL;
}

static rx_sinfo *deduce_unary_float(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x || !check_dtype(c, call, x, 0, false)) return NULL;
    return rx_op_like(c, x, (rx_dtype)x->dtype);
}

static rx_sinfo *deduce_unary_bool(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x || !check_dtype(c, call, x, 0, true)) return NULL;
    return rx_op_like(c, x, RX_DT_BOOL);
}

/* A SCALAR attribute as a double (bool as 0/1). */
static double scalar_value(const rx_attr *v)
{
    switch (v->kind) {
    case RX_A_INT: return (double)v->u.i;
    case RX_A_FLOAT: return v->u.f;
    case RX_A_BOOL: return v->u.b ? 1.0 : 0.0;
    default: RX_UNREACHABLE();
    }
}

static rx_sinfo *deduce_clip(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    double lo = scalar_value(rx_call_attr(call, "min"));
    double hi = scalar_value(rx_call_attr(call, "max"));
    if (lo > hi) {
        rx_op_fail(c, call, "min %g is greater than max %g", lo, hi);
        return NULL;
    }
    return rx_op_like(c, x, (rx_dtype)x->dtype);
}

static rx_sinfo *deduce_astype(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    rx_dtype dt = RX_DT_UNKNOWN;
    bool ok = rx_dtype_parse(rx_call_attr(call, "dtype")->u.s, &dt);
    RX_ASSERT(ok);
    return rx_op_like(c, x, dt);
}

/* ---------------------------------------------------------------- binary */
/* The two operands, their combined dtype; false after an error. */
static bool binary_args(rx_dctx *c, const rx_node *call, const rx_sinfo **x,
                        const rx_sinfo **y, rx_dtype *dt) {
    *x = rx_d_tensor_arg(c, call, 0);
    *y = rx_d_tensor_arg(c, call, 1);
    if (!*x || !*y) return false;
    return rx_d_same_dtype(c, call, (rx_dtype)(*x)->dtype, (rx_dtype)(*y)->dtype, dt);
}

static rx_sinfo *deduce_binary(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *y;
    rx_dtype dt;
    if (!binary_args(c, call, &x, &y, &dt)) return NULL;
    return bcast(c, call, x, y, dt);
}

/* left_shift right_shift: integer operands (bits shifted out are lost; a shift by the
 * width or more gives 0, or -1 for a negative x shifted right). */
static rx_sinfo *deduce_shift(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *y;
    rx_dtype dt;
    if (!binary_args(c, call, &x, &y, &dt)) return NULL;
    if (dt != RX_DT_UNKNOWN && !rx_dtype_is_int(dt))
        return rx_op_fail(c, call, "operands must be integers, found %s", rx_dtype_name(dt));
    return bcast(c, call, x, y, dt);
}

static rx_sinfo *deduce_compare(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *y;
    rx_dtype dt;
    if (!binary_args(c, call, &x, &y, &dt)) return NULL;
    return bcast(c, call, x, y, RX_DT_BOOL);
}

static rx_sinfo *deduce_logic(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    const rx_sinfo *y = rx_d_tensor_arg(c, call, 1);
    if (!x || !y) return NULL;
    bool okx = check_dtype(c, call, x, 0, true);
    bool oky = check_dtype(c, call, y, 1, true);
    if (!okx || !oky) return NULL;
    return bcast(c, call, x, y, RX_DT_BOOL);
}

static rx_sinfo *deduce_where(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *cond = rx_d_tensor_arg(c, call, 0);
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 1);
    const rx_sinfo *y = rx_d_tensor_arg(c, call, 2);
    rx_dtype dt;
    if (!cond || !x || !y || !check_dtype(c, call, cond, 0, true)) return NULL;
    if (!rx_d_same_dtype(c, call, (rx_dtype)x->dtype, (rx_dtype)y->dtype, &dt)) return NULL;
    rx_sinfo *xy = bcast(c, call, x, y, dt);
    return xy ? bcast(c, call, cond, xy, dt) : NULL;
}

/* ---------------------------------------------------------------- table */
static const rx_attr_spec clip_attrs[] = {
    RX_ATTR_REQ("min", RX_AT_SCALAR),
    RX_ATTR_REQ("max", RX_AT_SCALAR),
};
static const rx_attr_spec astype_attrs[] = {
    RX_ATTR_REQ("dtype", RX_AT_DTYPE),
};

#define UNARY(nm, fn) { nm, 1, 1, NULL, 0, fn, 0 }
#define BINARY(nm, fn) { nm, 2, 2, NULL, 0, fn, 0 }

const rx_op rx_ops_elemwise[] = {
    UNARY("abs", deduce_unary),
    UNARY("negative", deduce_unary),
    UNARY("exp", deduce_unary_float),
    UNARY("log", deduce_unary_float),
    UNARY("sqrt", deduce_unary_float),
    UNARY("rsqrt", deduce_unary_float),
    UNARY("sigmoid", deduce_unary_float),
    UNARY("tanh", deduce_unary_float),
    UNARY("sin", deduce_unary_float),
    UNARY("cos", deduce_unary_float),
    UNARY("erf", deduce_unary_float),
    UNARY("floor", deduce_unary),
    UNARY("ceil", deduce_unary),
    UNARY("round", deduce_unary),
    UNARY("sign", deduce_unary),
    UNARY("square", deduce_unary),
    UNARY("logical_not", deduce_unary_bool),
    UNARY("nn.relu", deduce_unary),
    UNARY("nn.gelu", deduce_unary_float),
    UNARY("nn.gelu_tanh", deduce_unary_float),
    UNARY("nn.silu", deduce_unary_float),
    { "clip", 1, 1, RX_ATTRS(clip_attrs), deduce_clip, 0 },
    BINARY("add", deduce_binary),
    BINARY("subtract", deduce_binary),
    BINARY("multiply", deduce_binary),
    BINARY("divide", deduce_binary),
    BINARY("floor_divide", deduce_binary),
    BINARY("power", deduce_binary),
    BINARY("maximum", deduce_binary),
    BINARY("minimum", deduce_binary),
    BINARY("left_shift", deduce_shift),
    BINARY("right_shift", deduce_shift),
    BINARY("equal", deduce_compare),
    BINARY("not_equal", deduce_compare),
    BINARY("less", deduce_compare),
    BINARY("less_equal", deduce_compare),
    BINARY("greater", deduce_compare),
    BINARY("greater_equal", deduce_compare),
    BINARY("logical_and", deduce_logic),
    BINARY("logical_or", deduce_logic),
    { "where", 3, 3, NULL, 0, deduce_where, 0 },
    { "astype", 1, 1, RX_ATTRS(astype_attrs), deduce_astype, 0 },
};
const int rx_ops_elemwise_count = RX_COUNTOF(rx_ops_elemwise);
