/*
 * legalize_elemwise.c — legalization rules of the elementwise ops: unary math, clip,
 * astype, binary arithmetic, comparisons and logic with NumPy broadcasting, where.
 *
 * Each op is one compute over the deduced result dims; an operand is read at the
 * broadcast index (right-aligned; a literal-1 dim reads index 0). Deduction already
 * proved the shapes compatible, so the rule only needs the literal 1s. Formulas by op
 * (x, y the operands' elements, dt their dtype):
 *   abs                abs(x) (x for unsigned and bool)
 *   negative square    -x, x * x
 *   exp log sqrt rsqrt sigmoid tanh sin cos erf    the intrinsic
 *   floor ceil round   the intrinsic on floats, x on integers
 *   sign               select(x > 0, 1, select(x < 0, -1, 0))
 *   logical_not        !x
 *   nn.relu            max(x, 0)
 *   nn.gelu            0.5 * x * (1 + erf(x * 0.7071067811865476))
 *   nn.gelu_tanh       0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x*x*x)))
 *   nn.silu            x * sigmoid(x)
 *   clip               min(max(x, lo), hi), bounds converted to dt
 *   astype             the cast (to bool: x != 0)
 *   add subtract multiply maximum minimum     + - * max min
 *   divide             x / y on floats; truncating division on integers (TVM's Div)
 *   floor_divide       x // y on integers, floor(x / y) on floats
 *   power              pow(x, y) on floats; integers through f64
 *   comparisons, logical_and/or   == != < <= > >=, && ||
 *   where              select(c, x, y)
 * Arithmetic on bool tensors has no formula in the grammar and is reported.
 */
#include <string.h>

#include "legalize_int.h"

static rx_expr *lit(rx_te *te, double v, rx_dtype dt) { return rx_te_const(te, v, dt); }
static rx_expr *bin(rx_te *te, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(rx_te_arena(te), k, x, y);
}
static rx_expr *call1(rx_te *te, rx_intrin f, rx_expr *x)
{
    return rx_e_call(rx_te_arena(te), f, &x, 1, (rx_dtype)x->dtype);
}

/* ---------------------------------------------------------------- unary */
typedef rx_expr *(*ufn)(rx_te *te, rx_expr *x);

static rx_expr *u_abs(rx_te *te, rx_expr *x)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    return rx_dtype_is_uint(dt) || dt == RX_DT_BOOL ? x : call1(te, RX_FN_ABS, x);
}
static rx_expr *u_neg(rx_te *te, rx_expr *x) { return rx_e_unary(rx_te_arena(te), RX_E_NEG, x); }
static rx_expr *u_exp(rx_te *te, rx_expr *x) { return call1(te, RX_FN_EXP, x); }
static rx_expr *u_log(rx_te *te, rx_expr *x) { return call1(te, RX_FN_LOG, x); }
static rx_expr *u_sqrt(rx_te *te, rx_expr *x) { return call1(te, RX_FN_SQRT, x); }
static rx_expr *u_rsqrt(rx_te *te, rx_expr *x) { return call1(te, RX_FN_RSQRT, x); }
static rx_expr *u_sigmoid(rx_te *te, rx_expr *x) { return call1(te, RX_FN_SIGMOID, x); }
static rx_expr *u_tanh(rx_te *te, rx_expr *x) { return call1(te, RX_FN_TANH, x); }
static rx_expr *u_sin(rx_te *te, rx_expr *x) { return call1(te, RX_FN_SIN, x); }
static rx_expr *u_cos(rx_te *te, rx_expr *x) { return call1(te, RX_FN_COS, x); }
static rx_expr *u_erf(rx_te *te, rx_expr *x) { return call1(te, RX_FN_ERF, x); }
static rx_expr *float_or_id(rx_te *te, rx_intrin f, rx_expr *x)
{
    return rx_dtype_is_float((rx_dtype)x->dtype) ? call1(te, f, x) : x;
}
static rx_expr *u_floor(rx_te *te, rx_expr *x) { return float_or_id(te, RX_FN_FLOOR, x); }
static rx_expr *u_ceil(rx_te *te, rx_expr *x) { return float_or_id(te, RX_FN_CEIL, x); }
static rx_expr *u_round(rx_te *te, rx_expr *x) { return float_or_id(te, RX_FN_ROUND, x); }
static rx_expr *u_sign(rx_te *te, rx_expr *x)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    rx_arena *a = rx_te_arena(te);
    rx_expr *pos = bin(te, RX_E_GT, x, lit(te, 0, dt));
    if (rx_dtype_is_uint(dt)) return rx_e_select(a, pos, lit(te, 1, dt), lit(te, 0, dt));
    rx_expr *neg = rx_e_select(a, bin(te, RX_E_LT, x, lit(te, 0, dt)), lit(te, -1, dt),
                               lit(te, 0, dt));
    return rx_e_select(a, pos, lit(te, 1, dt), neg);
}
static rx_expr *u_square(rx_te *te, rx_expr *x) { return bin(te, RX_E_MUL, x, x); }
static rx_expr *u_not(rx_te *te, rx_expr *x) { return rx_e_unary(rx_te_arena(te), RX_E_NOT, x); }
static rx_expr *u_relu(rx_te *te, rx_expr *x)
{
    return bin(te, RX_E_MAX, x, lit(te, 0, (rx_dtype)x->dtype));
}
static rx_expr *u_gelu(rx_te *te, rx_expr *x)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    rx_expr *e = call1(te, RX_FN_ERF, bin(te, RX_E_MUL, x, lit(te, 0.7071067811865476, dt)));
    return bin(te, RX_E_MUL, bin(te, RX_E_MUL, lit(te, 0.5, dt), x),
               bin(te, RX_E_ADD, lit(te, 1, dt), e));
}
static rx_expr *u_gelu_tanh(rx_te *te, rx_expr *x)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    rx_expr *cube = bin(te, RX_E_MUL, bin(te, RX_E_MUL, bin(te, RX_E_MUL, lit(te, 0.044715, dt), x),
                                          x), x);
    rx_expr *in = bin(te, RX_E_MUL, lit(te, 0.7978845608028654, dt), bin(te, RX_E_ADD, x, cube));
    return bin(te, RX_E_MUL, bin(te, RX_E_MUL, lit(te, 0.5, dt), x),
               bin(te, RX_E_ADD, lit(te, 1, dt), call1(te, RX_FN_TANH, in)));
}
static rx_expr *u_silu(rx_te *te, rx_expr *x)
{
    return bin(te, RX_E_MUL, x, call1(te, RX_FN_SIGMOID, x));
}

static const struct {
    const char *op;
    ufn f;
    bool bool_ok; /* defined on bool tensors */
} UNARY[] = {
    {"abs", u_abs, true},           {"negative", u_neg, false},    {"exp", u_exp, false},
    {"log", u_log, false},          {"sqrt", u_sqrt, false},       {"rsqrt", u_rsqrt, false},
    {"sigmoid", u_sigmoid, false},  {"tanh", u_tanh, false},       {"sin", u_sin, false},
    {"cos", u_cos, false},          {"erf", u_erf, false},         {"floor", u_floor, true},
    {"ceil", u_ceil, true},         {"round", u_round, true},      {"sign", u_sign, false},
    {"square", u_square, false},    {"logical_not", u_not, true},  {"nn.relu", u_relu, false},
    {"nn.gelu", u_gelu, false},     {"nn.gelu_tanh", u_gelu_tanh, false},
    {"nn.silu", u_silu, false},
};

typedef struct uctx {
    lg_ctx *c;
    rx_te_tensor *x;
    ufn f;
    rx_dtype dt;                /* astype: target */
    double lo, hi;              /* clip */
} uctx;

static rx_expr *unary_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    uctx *u = ud;
    return u->f(te, rx_te_at(te, u->x, idx));
}

/* One compute over the result dims from ud's callback. */
static bool emit1(lg_ctx *c, rx_te_fcompute f, void *ud)
{
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims, f, ud));
    return true;
}

static bool rule_unary(lg_ctx *c)
{
    uctx u = {c, NULL, NULL, RX_DT_UNKNOWN, 0, 0};
    int k = 0;
    while (k < RX_COUNTOF(UNARY) && strcmp(UNARY[k].op, lg_opname(c)) != 0) k++;
    RX_ASSERT(k < RX_COUNTOF(UNARY));
    if (!(u.x = lg_input(c, 0, "x"))) return false;
    if (rx_te_dtype(u.x) == RX_DT_BOOL && !UNARY[k].bool_ok)
        return lg_fail(c, "not defined on bool tensors");
    u.f = UNARY[k].f;
    return emit1(c, unary_cb, &u);
}

static double scalar(const rx_attr *a)
{
    return a->kind == RX_A_INT ? (double)a->u.i : a->kind == RX_A_FLOAT ? a->u.f : a->u.b;
}

static rx_expr *clip_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    uctx *u = ud;
    rx_expr *x = rx_te_at(te, u->x, idx);
    rx_dtype dt = (rx_dtype)x->dtype;
    return bin(te, RX_E_MIN, bin(te, RX_E_MAX, x, lit(te, u->lo, dt)), lit(te, u->hi, dt));
}

static bool rule_clip(lg_ctx *c)
{
    uctx u = {c, NULL, NULL, RX_DT_UNKNOWN, 0, 0};
    if (!(u.x = lg_input(c, 0, "x"))) return false;
    if (rx_te_dtype(u.x) == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    u.lo = scalar(rx_call_attr(c->call, "min"));
    u.hi = scalar(rx_call_attr(c->call, "max"));
    return emit1(c, clip_cb, &u);
}

static rx_expr *astype_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    uctx *u = ud;
    return rx_te_cast(te, u->dt, rx_te_at(te, u->x, idx));
}

static bool rule_astype(lg_ctx *c)
{
    uctx u = {c, NULL, NULL, (rx_dtype)lg_out(c, 0)->dtype, 0, 0};
    if (!(u.x = lg_input(c, 0, "x"))) return false;
    return emit1(c, astype_cb, &u);
}

/* ---------------------------------------------------------------- binary */
typedef rx_expr *(*bfn)(rx_te *te, rx_expr *x, rx_expr *y);

static rx_expr *b_add(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_ADD, x, y); }
static rx_expr *b_sub(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_SUB, x, y); }
static rx_expr *b_mul(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_MUL, x, y); }
static rx_expr *b_max(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_MAX, x, y); }
static rx_expr *b_min(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_MIN, x, y); }
static rx_expr *b_div(rx_te *te, rx_expr *x, rx_expr *y)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    if (rx_dtype_is_float(dt)) return bin(te, RX_E_DIV, x, y);
    rx_expr *q = bin(te, RX_E_FLOORDIV, x, y);
    if (rx_dtype_is_uint(dt)) return q;
    /* truncation: floor + 1 when inexact and the signs differ */
    rx_expr *inexact = bin(te, RX_E_NE, bin(te, RX_E_FLOORMOD, x, y), lit(te, 0, dt));
    rx_expr *signs = bin(te, RX_E_NE, bin(te, RX_E_LT, x, lit(te, 0, dt)),
                         bin(te, RX_E_LT, y, lit(te, 0, dt)));
    return rx_e_select(rx_te_arena(te), bin(te, RX_E_AND, inexact, signs),
                       bin(te, RX_E_ADD, q, lit(te, 1, dt)), q);
}
static rx_expr *b_floordiv(rx_te *te, rx_expr *x, rx_expr *y)
{
    if (rx_dtype_is_float((rx_dtype)x->dtype)) return call1(te, RX_FN_FLOOR, bin(te, RX_E_DIV, x, y));
    return bin(te, RX_E_FLOORDIV, x, y);
}
static rx_expr *b_pow(rx_te *te, rx_expr *x, rx_expr *y)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    rx_arena *a = rx_te_arena(te);
    if (rx_dtype_is_float(dt)) return rx_e_call(a, RX_FN_POW, (rx_expr *[]){x, y}, 2, dt);
    rx_expr *fx = rx_te_cast(te, RX_DT_F64, x), *fy = rx_te_cast(te, RX_DT_F64, y);
    return rx_te_cast(te, dt, rx_e_call(a, RX_FN_POW, (rx_expr *[]){fx, fy}, 2, RX_DT_F64));
}
/* Shifts: C leaves a count outside [0, width) undefined, so such a count gives what
 * shifting one bit at a time would: 0 (left, or right of a nonnegative x), -1 (right
 * of a negative x). */
static rx_expr *shift(rx_te *te, rx_ekind k, rx_expr *x, rx_expr *y)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    rx_expr *ok = bin(te, RX_E_LT, y, lit(te, rx_dtype_bits(dt), dt));
    if (!rx_dtype_is_uint(dt)) ok = bin(te, RX_E_AND, bin(te, RX_E_GE, y, lit(te, 0, dt)), ok);
    rx_expr *out = lit(te, 0, dt);
    if (k == RX_E_SHR && !rx_dtype_is_uint(dt))
        out = rx_e_select(rx_te_arena(te), bin(te, RX_E_LT, x, lit(te, 0, dt)), lit(te, -1, dt), out);
    return rx_e_select(rx_te_arena(te), ok, bin(te, k, x, y), out);
}
static rx_expr *b_shl(rx_te *te, rx_expr *x, rx_expr *y) { return shift(te, RX_E_SHL, x, y); }
static rx_expr *b_shr(rx_te *te, rx_expr *x, rx_expr *y) { return shift(te, RX_E_SHR, x, y); }
static rx_expr *b_eq(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_EQ, x, y); }
static rx_expr *b_ne(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_NE, x, y); }
static rx_expr *b_lt(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_LT, x, y); }
static rx_expr *b_le(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_LE, x, y); }
static rx_expr *b_gt(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_GT, x, y); }
static rx_expr *b_ge(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_GE, x, y); }
static rx_expr *b_and(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_AND, x, y); }
static rx_expr *b_or(rx_te *te, rx_expr *x, rx_expr *y) { return bin(te, RX_E_OR, x, y); }

static const struct {
    const char *op;
    bfn f;
    bool bool_ok;
} BINARY[] = {
    {"add", b_add, false},          {"subtract", b_sub, false},     {"multiply", b_mul, false},
    {"divide", b_div, false},       {"floor_divide", b_floordiv, false},
    {"power", b_pow, false},        {"maximum", b_max, false},      {"minimum", b_min, false},
    {"equal", b_eq, true},          {"not_equal", b_ne, true},      {"less", b_lt, true},
    {"less_equal", b_le, true},     {"greater", b_gt, true},        {"greater_equal", b_ge, true},
    {"logical_and", b_and, true},   {"logical_or", b_or, true},
    {"left_shift", b_shl, false},   {"right_shift", b_shr, false},
};

typedef struct bctx {
    lg_ctx *c;
    rx_te_tensor *x, *y, *cond;
    bfn f;
    int nd; /* result rank */
} bctx;

static rx_expr *binary_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    bctx *b = ud;
    rx_expr *x = rx_te_at(te, b->x, lg_bcast_index(b->c, b->x, idx, b->nd));
    rx_expr *y = rx_te_at(te, b->y, lg_bcast_index(b->c, b->y, idx, b->nd));
    return b->f(te, x, y);
}

static bool rule_binary(lg_ctx *c)
{
    bctx b = {c, NULL, NULL, NULL, NULL, lg_out(c, 0)->ndim};
    int k = 0;
    while (k < RX_COUNTOF(BINARY) && strcmp(BINARY[k].op, lg_opname(c)) != 0) k++;
    RX_ASSERT(k < RX_COUNTOF(BINARY));
    b.x = lg_input(c, 0, "x");
    b.y = b.x ? lg_input(c, 1, "y") : NULL;
    if (!b.y) return false;
    if (rx_te_dtype(b.x) != rx_te_dtype(b.y))
        return lg_fail(c, "operand dtypes %s and %s differ", rx_dtype_name(rx_te_dtype(b.x)),
                       rx_dtype_name(rx_te_dtype(b.y)));
    if (rx_te_dtype(b.x) == RX_DT_BOOL && !BINARY[k].bool_ok)
        return lg_fail(c, "not defined on bool tensors");
    b.f = BINARY[k].f;
    return emit1(c, binary_cb, &b);
}

static rx_expr *where_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    bctx *b = ud;
    rx_expr *cond = rx_te_at(te, b->cond, lg_bcast_index(b->c, b->cond, idx, b->nd));
    rx_expr *x = rx_te_at(te, b->x, lg_bcast_index(b->c, b->x, idx, b->nd));
    rx_expr *y = rx_te_at(te, b->y, lg_bcast_index(b->c, b->y, idx, b->nd));
    return rx_e_select(rx_te_arena(te), cond, x, y);
}

static bool rule_where(lg_ctx *c)
{
    bctx b = {c, NULL, NULL, NULL, NULL, lg_out(c, 0)->ndim};
    b.cond = lg_input(c, 0, "cond");
    b.x = b.cond ? lg_input(c, 1, "x") : NULL;
    b.y = b.x ? lg_input(c, 2, "y") : NULL;
    if (!b.y) return false;
    if (rx_te_dtype(b.cond) != RX_DT_BOOL || rx_te_dtype(b.x) != rx_te_dtype(b.y))
        return lg_fail(c, "operand dtypes do not fit select(bool, T, T)");
    return emit1(c, where_cb, &b);
}

/* ---------------------------------------------------------------- table */
const lg_rule_entry rx_lg_elemwise[] = {
    {"abs", rule_unary},        {"negative", rule_unary},    {"exp", rule_unary},
    {"log", rule_unary},        {"sqrt", rule_unary},        {"rsqrt", rule_unary},
    {"sigmoid", rule_unary},    {"tanh", rule_unary},        {"sin", rule_unary},
    {"cos", rule_unary},        {"erf", rule_unary},         {"floor", rule_unary},
    {"ceil", rule_unary},       {"round", rule_unary},       {"sign", rule_unary},
    {"square", rule_unary},     {"logical_not", rule_unary}, {"nn.relu", rule_unary},
    {"nn.gelu", rule_unary},    {"nn.gelu_tanh", rule_unary}, {"nn.silu", rule_unary},
    {"clip", rule_clip},        {"astype", rule_astype},
    {"add", rule_binary},       {"subtract", rule_binary},   {"multiply", rule_binary},
    {"divide", rule_binary},    {"floor_divide", rule_binary}, {"power", rule_binary},
    {"maximum", rule_binary},   {"minimum", rule_binary},    {"equal", rule_binary},
    {"not_equal", rule_binary}, {"less", rule_binary},       {"less_equal", rule_binary},
    {"greater", rule_binary},   {"greater_equal", rule_binary},
    {"logical_and", rule_binary}, {"logical_or", rule_binary},
    {"left_shift", rule_binary}, {"right_shift", rule_binary},
    {"where", rule_where},
};
const int rx_lg_elemwise_count = RX_COUNTOF(rx_lg_elemwise);
