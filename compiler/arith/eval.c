/*
 * eval.c — evaluation of integer expressions to a constant.
 *
 * Semantics are those of the IR, computed exactly or not at all: // and % floor
 * (-7 // 2 == -4, -7 % 2 == 1), / truncates on integers, comparisons and logic give
 * 0 or 1 (&&, || and select evaluate only what they need), shifts by 0..63, casts
 * between integer dtypes wrap to the target width. Any step that would overflow its
 * dtype (int64 for i64, 32 bits for i32, >= 0 for unsigned), divide by zero, or meet
 * a variable that the map does not bind to an integer literal makes the whole
 * evaluation fail. Floats are not evaluated. Cost: linear in the expression size
 * times the map size (the map is searched linearly).
 */
#include "arith_int.h"

/* True when v is representable in integer dtype dt (i64 and unknown: always). */
static bool fits(int dt, int64_t v)
{
    switch (dt) {
    case RX_DT_BOOL: return v == 0 || v == 1;
    case RX_DT_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case RX_DT_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case RX_DT_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case RX_DT_U8: return v >= 0 && v <= UINT8_MAX;
    case RX_DT_U16: return v >= 0 && v <= UINT16_MAX;
    case RX_DT_U32: return v >= 0 && v <= UINT32_MAX;
    case RX_DT_U64: return v >= 0;
    default: return true;
    }
}

/* Wraps v to the width of integer dtype dt (two's complement), as a cast does. */
static int64_t wrap(int dt, int64_t v)
{
    int bits = rx_dtype_bits((rx_dtype)dt);
    if (dt == RX_DT_BOOL) return v != 0;
    if (bits <= 0 || bits >= 64) return v;
    uint64_t mask = (UINT64_C(1) << bits) - 1, u = (uint64_t)v & mask;
    if (rx_dtype_is_uint((rx_dtype)dt)) return (int64_t)u;
    if (u & (UINT64_C(1) << (bits - 1))) return (int64_t)(u | ~mask); /* sign-extend */
    return (int64_t)u;
}

static bool eval(const rx_expr *e, const rx_vmap *m, int64_t *out);

/* Casts to an integer dtype (or bool) from an integer expression or a float literal. */
static bool eval_cast(const rx_expr *e, const rx_vmap *m, int64_t *out)
{
    const rx_expr *o = e->u.op.a;
    if (!(rx_dtype_is_int(e->dtype) || e->dtype == RX_DT_BOOL)) return false;
    if (o->kind == RX_E_FLOAT) {
        double d = o->u.fval;
        if (e->dtype == RX_DT_BOOL) { *out = d != 0; return true; }
        if (!(d > -9.2e18 && d < 9.2e18)) return false; /* NaN and out of range */
        *out = wrap(e->dtype, (int64_t)d);
        return true;
    }
    int64_t v;
    if (!eval(o, m, &v)) return false;
    *out = wrap(e->dtype, v);
    return true;
}

/* Left shift as multiplication by 2^k, so negative values are defined. */
static bool shl(int64_t a, int64_t k, int64_t *out)
{
    if (k < 0 || k > 63) return false;
    if (k == 63) {
        if (a == 0) { *out = 0; return true; }
        if (a == -1) { *out = INT64_MIN; return true; }
        return false;
    }
    return !__builtin_mul_overflow(a, INT64_C(1) << k, out);
}

/* Arithmetic right shift as floor division by 2^k. */
static bool shr(int64_t a, int64_t k, int64_t *out)
{
    if (k < 0 || k > 63) return false;
    if (k == 63) { *out = a < 0 ? -1 : 0; return true; }
    return rxi_ar_floordiv(a, INT64_C(1) << k, out);
}

static bool eval_binary(rx_ekind k, int64_t a, int64_t b, int64_t *out)
{
    switch (k) {
    case RX_E_ADD: return !__builtin_add_overflow(a, b, out);
    case RX_E_SUB: return !__builtin_sub_overflow(a, b, out);
    case RX_E_MUL: return !__builtin_mul_overflow(a, b, out);
    case RX_E_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *out = a / b;
        return true;
    case RX_E_FLOORDIV: return rxi_ar_floordiv(a, b, out);
    case RX_E_FLOORMOD: return rxi_ar_floormod(a, b, out);
    case RX_E_MIN: *out = a < b ? a : b; return true;
    case RX_E_MAX: *out = a > b ? a : b; return true;
    case RX_E_EQ: *out = a == b; return true;
    case RX_E_NE: *out = a != b; return true;
    case RX_E_LT: *out = a < b; return true;
    case RX_E_LE: *out = a <= b; return true;
    case RX_E_GT: *out = a > b; return true;
    case RX_E_GE: *out = a >= b; return true;
    case RX_E_SHL: return shl(a, b, out);
    case RX_E_SHR: return shr(a, b, out);
    case RX_E_BITAND: *out = a & b; return true;
    case RX_E_BITOR: *out = a | b; return true;
    case RX_E_BITXOR: *out = a ^ b; return true;
    default: return false;
    }
}

static bool eval(const rx_expr *e, const rx_vmap *m, int64_t *out)
{
    int64_t a, b;
    bool ok;
    switch (e->kind) {
    case RX_E_INT:
        *out = e->u.ival;
        return true;
    case RX_E_VAR: {
        rx_expr *v = m ? rx_vmap_get(m, e->u.var) : NULL;
        return v && rx_expr_is_const(v, out);
    }
    case RX_E_AND:
    case RX_E_OR:
        if (!eval(e->u.op.a, m, &a)) return false;
        if ((e->kind == RX_E_AND) == (a == 0)) { *out = a != 0; return true; }
        if (!eval(e->u.op.b, m, &b)) return false;
        *out = b != 0;
        return true;
    case RX_E_NOT:
        if (!eval(e->u.op.a, m, &a)) return false;
        *out = a == 0;
        return true;
    case RX_E_NEG:
        if (!eval(e->u.op.a, m, &a) || a == INT64_MIN) return false;
        *out = -a;
        ok = true;
        break;
    case RX_E_BITNOT:
        if (!eval(e->u.op.a, m, &a)) return false;
        *out = rx_dtype_is_uint((rx_dtype)e->dtype) ? wrap(e->dtype, ~a) : ~a;
        ok = true;
        break;
    case RX_E_SELECT:
        if (!eval(e->u.op.a, m, &a)) return false;
        return eval(a ? e->u.op.b : e->u.op.c, m, out);
    case RX_E_CAST:
        return eval_cast(e, m, out);
    case RX_E_FLOAT: case RX_E_LOAD: case RX_E_CALL:
        return false;
    default:
        if (!eval(e->u.op.a, m, &a) || !eval(e->u.op.b, m, &b)) return false;
        ok = eval_binary((rx_ekind)e->kind, a, b, out);
        break;
    }
    return ok && fits(e->dtype, *out);
}

/* Contract: true with *out set when every variable of e is bound by m to an integer
 * literal and no step is undefined or overflows; false with *out untouched otherwise.
 * m may be NULL (no variables bound). */
bool rx_expr_eval_int(const rx_expr *e, const rx_vmap *m, int64_t *out)
{
    int64_t v;
    if (!e || !eval(e, m, &v)) return false;
    *out = v;
    return true;
}
