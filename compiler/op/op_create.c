/*
 * op_create.c — tensor creation: attribute schemas and deduction rules.
 *
 * zeros, ones and full take their shape from a shape operand (a shape value or any
 * expression annotated Shape): the result has that annotation's dims, or only its
 * rank when the dims are unknown. The *_like ops copy x's shape. The dtype is the
 * `dtype` attribute when given, else the fill value's (full) or x's (the *_like ops);
 * zeros and ones require it, as in TVM. A fill value is a 0-d tensor (a scalar
 * constant); a fill of known nonzero rank is an error.
 *
 * arange has no operands: its length is ceil((end - start) / step), computed exactly
 * for literal bounds, and built as the expression (end - start + step - 1) // step
 * (clamped at 0 unless provably nonnegative) when a bound is symbolic, so arange(0, n)
 * has length n. A symbolic step is assumed positive. The bounds are SIZE attributes,
 * so relax-json cannot give float bounds (the binder rejects them); the float branch
 * of d_arange serves attribute arrays built in C. Every rule is O(ndim).
 */
#include <math.h>

#include "op_int.h"

/* The dtype attribute, or `dflt` when it is null. */
static rx_dtype attr_dtype(const rx_node *call, rx_dtype dflt)
{
    const rx_attr *a = rx_call_attr(call, "dtype");
    rx_dtype dt;
    if (a->kind != RX_A_STR || !rx_dtype_parse(a->u.s, &dt)) return dflt;
    return dt;
}

/* A tensor of dtype dt with the given dims (simplified), or only ndim when NULL. */
static rx_sinfo *tensor(rx_dctx *c, rx_dtype dt, int ndim, rx_expr **dims)
{
    if (!dims || ndim < 0) return rx_si_tensor(c->a, dt, ndim, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, ndim > 0 ? ndim : 1);
    for (int i = 0; i < ndim; i++) d[i] = rx_d_simplify(c, dims[i]);
    return rx_si_tensor(c->a, dt, ndim, d);
}

/* The shape operand i as a tensor of dtype dt; NULL after an error. */
static rx_sinfo *from_shape(rx_dctx *c, const rx_node *call, int i, rx_dtype dt)
{
    const rx_node *a = call->args[i];
    const rx_sinfo *s = a->sinfo;
    if (s && s->kind == RX_SI_SHAPE) return tensor(c, dt, s->ndim, s->dims);
    if (!s && a->kind == RX_N_SHAPE) return tensor(c, dt, a->u.shape.ndim, a->u.shape.dims);
    return rx_op_fail(c, call, "argument %d (shape) must be a shape, found %s", i,
                      s ? rx_sinfo_str(c->a, s) : "an expression without annotation");
}

/* The fill value operand i, checked to be a 0-d tensor; NULL after an error. */
static const rx_sinfo *fill_arg(rx_dctx *c, const rx_node *call, int i)
{
    const rx_sinfo *f = rx_d_tensor_arg(c, call, i);
    if (f && f->ndim > 0) {
        rx_op_fail(c, call, "fill_value must be a 0-d tensor (a scalar), found %s",
                   rx_sinfo_str(c->a, f));
        return NULL;
    }
    return f;
}

/* zeros, ones: (shape; dtype). */
static rx_sinfo *d_zeros(rx_dctx *c, const rx_node *call)
{
    return from_shape(c, call, 0, attr_dtype(call, RX_DT_UNKNOWN));
}

/* full: (shape, fill_value; dtype = fill's). */
static rx_sinfo *d_full(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *f = fill_arg(c, call, 1);
    if (!f) return NULL;
    return from_shape(c, call, 0, attr_dtype(call, (rx_dtype)f->dtype));
}

/* zeros_like, ones_like: (x; dtype = x's). */
static rx_sinfo *d_zeros_like(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    return rx_op_like(c, x, attr_dtype(call, (rx_dtype)x->dtype));
}

/* full_like: (x, fill_value; dtype = x's). */
static rx_sinfo *d_full_like(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    const rx_sinfo *f = fill_arg(c, call, 1);
    if (!x || !f) return NULL;
    return rx_op_like(c, x, attr_dtype(call, (rx_dtype)x->dtype));
}

/* ---------------------------------------------------------------- arange */

/* A bound of arange: a number (*isnum, value in *num, integral in *ival when
 * *isint) or a symbolic expression (returned). */
typedef struct bound {
    rx_expr *e;    /* the value as an integer expression; NULL for a float */
    bool isnum;    /* a literal number */
    bool isint;    /* an integer literal */
    int64_t ival;  /* when isint */
    double num;    /* when isnum */
} bound;

static bound read_bound(rx_dctx *c, const rx_attr *a)
{
    bound b = {0};
    if (a->kind == RX_A_FLOAT) {
        b.isnum = true;
        b.num = a->u.f;
        return b;
    }
    if (a->kind == RX_A_EXPR && a->u.e->kind == RX_E_FLOAT) {
        b.isnum = true;
        b.num = a->u.e->u.fval;
        return b;
    }
    b.e = rx_d_attr_size(c, a);
    if (b.e && rx_expr_is_const(b.e, &b.ival)) {
        b.isnum = b.isint = true;
        b.num = (double)b.ival;
    }
    return b;
}

/* ceil((end - start) / step) for integers, 0 when negative; false on overflow. */
static bool int_len(int64_t start, int64_t end, int64_t step, int64_t *out)
{
    int64_t span;
    if (__builtin_sub_overflow(end, start, &span)) return false;
    if (step == -1 && span == INT64_MIN) return false;
    int64_t q = span / step;
    if (span % step != 0 && ((span > 0) == (step > 0))) q++;
    *out = q < 0 ? 0 : q;
    return true;
}

static rx_sinfo *d_arange(rx_dctx *c, const rx_node *call)
{
    rx_dtype dt = attr_dtype(call, RX_DT_I64);
    bound start = read_bound(c, rx_call_attr(call, "start"));
    bound end = read_bound(c, rx_call_attr(call, "end"));
    bound step = read_bound(c, rx_call_attr(call, "step"));
    if (step.isnum && step.num == 0) return rx_op_fail(c, call, "step must not be 0");
    rx_expr *len;
    if (start.isnum && end.isnum && step.isnum) {
        int64_t n;
        if (start.isint && end.isint && step.isint) {
            if (!int_len(start.ival, end.ival, step.ival, &n))
                return rx_op_fail(c, call, "the length of the range overflows");
        } else {
            double l = ceil((end.num - start.num) / step.num);
            if (!isfinite(l) || l > 9.0e18)
                return rx_op_fail(c, call, "the length of the range [%g, %g) by %g is not finite",
                            start.num, end.num, step.num);
            n = l < 0 ? 0 : (int64_t)l;
        }
        len = rx_e_int(c->a, n);
    } else {
        if (!start.e || !end.e || !step.e)
            return rx_op_fail(c, call, "cannot mix floating-point and symbolic bounds");
        rx_arena *a = c->a;
        rx_expr *span = rx_e_binary(a, RX_E_SUB, end.e, start.e);
        if (step.isint && step.ival < 0) { /* ceil(span / s) = (-span + |s| - 1) // |s| */
            span = rx_e_binary(a, RX_E_SUB, start.e, end.e);
            step.e = rx_e_int(a, -step.ival);
        }
        len = rx_e_binary(a, RX_E_FLOORDIV,
                          rx_e_binary(a, RX_E_SUB, rx_e_binary(a, RX_E_ADD, span, step.e),
                                      rx_e_int(a, 1)),
                          step.e);
        len = rx_d_simplify(c, len);
        if (!rx_arith_prove(c->ar, rx_e_binary(a, RX_E_GE, len, rx_e_int(a, 0))))
            len = rx_e_binary(a, RX_E_MAX, len, rx_e_int(a, 0));
    }
    return tensor(c, dt, 1, &len);
}

/* ---------------------------------------------------------------- the table */

static const rx_attr_spec dtype_req[] = {RX_ATTR_REQ("dtype", RX_AT_DTYPE)};
static const rx_attr_spec dtype_opt[] = {RX_ATTR_NUL("dtype", RX_AT_DTYPE, "null")};
static const rx_attr_spec arange_attrs[] = {
    RX_ATTR_DEF("start", RX_AT_SIZE, "0"),
    RX_ATTR_REQ("end", RX_AT_SIZE),
    RX_ATTR_DEF("step", RX_AT_SIZE, "1"),
    RX_ATTR_DEF("dtype", RX_AT_DTYPE, "\"i64\""),
};

/* The creation ops (registered by op/registry.c). */
const rx_op rx_ops_create[] = {
    {"zeros", 1, 1, RX_ATTRS(dtype_req), d_zeros, 0},
    {"ones", 1, 1, RX_ATTRS(dtype_req), d_zeros, 0},
    {"full", 2, 2, RX_ATTRS(dtype_opt), d_full, 0},
    {"zeros_like", 1, 1, RX_ATTRS(dtype_opt), d_zeros_like, 0},
    {"ones_like", 1, 1, RX_ATTRS(dtype_opt), d_zeros_like, 0},
    {"full_like", 2, 2, RX_ATTRS(dtype_opt), d_full_like, 0},
    {"arange", 0, 0, RX_ATTRS(arange_attrs), d_arange, 0},
};
const int rx_ops_create_count = RX_COUNTOF(rx_ops_create);
