/*
 * bound.c — constant bounds of integer expressions by interval analysis.
 *
 * Every integer expression gets a closed interval [lo, hi] that contains each value
 * it can take for variables within their ranges. INT64_MIN / INT64_MAX stand for
 * "unbounded"; all arithmetic saturates to them (checked with __builtin_*_overflow),
 * so a bound can be loose but never wrong. Variables take their ranges from
 * rx_arith_bind_range, intersected with the defaults of their kind (shape and loop
 * variables are >= 0) and of their dtype (i32 within 32 bits, unsigned >= 0).
 *
 * Intervals lose correlation between occurrences of a variable (n - n is [-inf, inf]
 * as written), so the public rx_arith_const_bound also bounds the canonical form
 * (where n - n is 0) and intersects the two. Cost: linear in the expression size
 * times the number of bound variables (ranges are searched linearly), plus one
 * canonical simplification for the public entry point.
 */
#include "arith_int.h"

/* ---------------------------------------------------------------- constants */

/* Floor division of constants; false on b == 0 or INT64_MIN / -1. */
bool rxi_ar_floordiv(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    *out = q;
    return true;
}

/* Floor modulo of constants (sign of b); false on b == 0. */
bool rxi_ar_floormod(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0) return false;
    if (b == -1) { *out = 0; return true; }
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    *out = r;
    return true;
}

/* ---------------------------------------------------------------- saturating ops */

static bool is_inf(int64_t v) { return v == RXA_NEG_INF || v == RXA_POS_INF; }

/* a + b where either may be infinite; `lo_side` decides -inf + +inf (lower bounds
 * keep -inf, upper bounds keep +inf). */
static int64_t sat_add(int64_t a, int64_t b, bool lo_side)
{
    if (lo_side && (a == RXA_NEG_INF || b == RXA_NEG_INF)) return RXA_NEG_INF;
    if (!lo_side && (a == RXA_POS_INF || b == RXA_POS_INF)) return RXA_POS_INF;
    if (is_inf(a)) return a;
    if (is_inf(b)) return b;
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return a > 0 ? RXA_POS_INF : RXA_NEG_INF;
    return r;
}

static int64_t sat_neg(int64_t a)
{
    if (a == RXA_NEG_INF) return RXA_POS_INF;
    if (a == RXA_POS_INF) return RXA_NEG_INF;
    return -a;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0) return 0;
    bool neg = (a < 0) != (b < 0);
    if (is_inf(a) || is_inf(b)) return neg ? RXA_NEG_INF : RXA_POS_INF;
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return neg ? RXA_NEG_INF : RXA_POS_INF;
    return r;
}

/* floor(a / c) for c > 0, infinities preserved. */
static int64_t sat_fdiv_pos(int64_t a, int64_t c)
{
    if (is_inf(a)) return a;
    int64_t q = 0;
    (void)rxi_ar_floordiv(a, c, &q);
    return q;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---------------------------------------------------------------- intervals */

rxi_ar_iv rxi_ar_iv_full(void) { return (rxi_ar_iv){RXA_NEG_INF, RXA_POS_INF}; }
rxi_ar_iv rxi_ar_iv_point(int64_t v) { return (rxi_ar_iv){v, v}; }

rxi_ar_iv rxi_ar_iv_add(rxi_ar_iv x, rxi_ar_iv y)
{
    return (rxi_ar_iv){sat_add(x.lo, y.lo, true), sat_add(x.hi, y.hi, false)};
}

rxi_ar_iv rxi_ar_iv_neg(rxi_ar_iv x) { return (rxi_ar_iv){sat_neg(x.hi), sat_neg(x.lo)}; }

rxi_ar_iv rxi_ar_iv_mul(rxi_ar_iv x, rxi_ar_iv y)
{
    int64_t c[4] = {sat_mul(x.lo, y.lo), sat_mul(x.lo, y.hi), sat_mul(x.hi, y.lo),
                    sat_mul(x.hi, y.hi)};
    rxi_ar_iv r = {c[0], c[0]};
    for (int i = 1; i < 4; i++) {
        r.lo = min64(r.lo, c[i]);
        r.hi = max64(r.hi, c[i]);
    }
    return r;
}

/* floor(x / y) for y >= 1 everywhere. */
static rxi_ar_iv fdiv_pos(rxi_ar_iv x, rxi_ar_iv y)
{
    rxi_ar_iv r;
    if (x.lo >= 0) r.lo = y.hi == RXA_POS_INF ? 0 : sat_fdiv_pos(x.lo, y.hi);
    else r.lo = sat_fdiv_pos(x.lo, y.lo);
    if (x.hi >= 0) r.hi = sat_fdiv_pos(x.hi, y.lo);
    else r.hi = y.hi == RXA_POS_INF ? -1 : sat_fdiv_pos(x.hi, y.hi);
    return r;
}

/* Division by zero is undefined, so bounds need only cover the defined values: a
 * divisor range with 0 at one end loses that end. */
static rxi_ar_iv drop_zero(rxi_ar_iv y)
{
    if (y.lo == 0 && y.hi >= 1) y.lo = 1;
    if (y.hi == 0 && y.lo <= -1) y.hi = -1;
    return y;
}

rxi_ar_iv rxi_ar_iv_floordiv(rxi_ar_iv x, rxi_ar_iv y)
{
    y = drop_zero(y);
    if (y.lo >= 1) return fdiv_pos(x, y);
    if (y.hi <= -1) return fdiv_pos(rxi_ar_iv_neg(x), rxi_ar_iv_neg(y)); /* x/y == (-x)/(-y) */
    return rxi_ar_iv_full();
}

rxi_ar_iv rxi_ar_iv_floormod(rxi_ar_iv x, rxi_ar_iv y)
{
    y = drop_zero(y);
    if (y.lo >= 1) {
        int64_t top = y.hi == RXA_POS_INF ? RXA_POS_INF : y.hi - 1;
        if (x.lo >= 0) {
            if (x.hi < y.lo) return x; /* already below every divisor */
            return (rxi_ar_iv){0, min64(x.hi, top)};
        }
        return (rxi_ar_iv){0, top};
    }
    if (y.hi <= -1) {
        int64_t bot = y.lo == RXA_NEG_INF ? RXA_NEG_INF : y.lo + 1;
        if (x.hi <= 0) {
            if (x.lo > y.hi) return x;
            return (rxi_ar_iv){max64(x.lo, bot), 0};
        }
        return (rxi_ar_iv){bot, 0};
    }
    return rxi_ar_iv_full();
}

rxi_ar_iv rxi_ar_iv_intersect(rxi_ar_iv x, rxi_ar_iv y)
{
    rxi_ar_iv r = {max64(x.lo, y.lo), min64(x.hi, y.hi)};
    if (r.lo > r.hi) return x; /* contradictory facts: keep the first, stay sound */
    return r;
}

static rxi_ar_iv iv_union(rxi_ar_iv x, rxi_ar_iv y)
{
    return (rxi_ar_iv){min64(x.lo, y.lo), max64(x.hi, y.hi)};
}

/* The values a dtype can hold (unbounded for i64, floats and unknown). */
static rxi_ar_iv dtype_range(int dt)
{
    switch (dt) {
    case RX_DT_BOOL: return (rxi_ar_iv){0, 1};
    case RX_DT_I8: return (rxi_ar_iv){INT8_MIN, INT8_MAX};
    case RX_DT_I16: return (rxi_ar_iv){INT16_MIN, INT16_MAX};
    case RX_DT_I32: return (rxi_ar_iv){INT32_MIN, INT32_MAX};
    case RX_DT_U8: return (rxi_ar_iv){0, UINT8_MAX};
    case RX_DT_U16: return (rxi_ar_iv){0, UINT16_MAX};
    case RX_DT_U32: return (rxi_ar_iv){0, UINT32_MAX};
    case RX_DT_U64: return (rxi_ar_iv){0, RXA_POS_INF};
    default: return rxi_ar_iv_full();
    }
}

/* ---------------------------------------------------------------- analysis */

rxi_ar_iv rxi_ar_var_range(const rx_arith *ar, const rx_svar *v)
{
    rxi_ar_iv r = dtype_range(v->dtype);
    if (v->kind == RX_SV_SHAPE || v->kind == RX_SV_LOOP) r.lo = max64(r.lo, 0);
    for (int i = 0; ar && i < ar->ranges.n; i++)
        if (ar->ranges.items[i].var == v)
            return rxi_ar_iv_intersect(r, (rxi_ar_iv){ar->ranges.items[i].lo, ar->ranges.items[i].hi});
    return r;
}

rxi_ar_iv rxi_ar_bound_expr(const rx_arith *ar, const rx_expr *e)
{
    rxi_ar_iv x, y;
    switch (e->kind) {
    case RX_E_INT: return rxi_ar_iv_point(e->u.ival);
    case RX_E_VAR: return rxi_ar_var_range(ar, e->u.var);
    case RX_E_ADD:
        return rxi_ar_iv_add(rxi_ar_bound_expr(ar, e->u.op.a), rxi_ar_bound_expr(ar, e->u.op.b));
    case RX_E_SUB:
        return rxi_ar_iv_add(rxi_ar_bound_expr(ar, e->u.op.a),
                          rxi_ar_iv_neg(rxi_ar_bound_expr(ar, e->u.op.b)));
    case RX_E_MUL:
        return rxi_ar_iv_mul(rxi_ar_bound_expr(ar, e->u.op.a), rxi_ar_bound_expr(ar, e->u.op.b));
    case RX_E_NEG: return rxi_ar_iv_neg(rxi_ar_bound_expr(ar, e->u.op.a));
    case RX_E_FLOORDIV:
        return rxi_ar_iv_floordiv(rxi_ar_bound_expr(ar, e->u.op.a), rxi_ar_bound_expr(ar, e->u.op.b));
    case RX_E_FLOORMOD:
        return rxi_ar_iv_floormod(rxi_ar_bound_expr(ar, e->u.op.a), rxi_ar_bound_expr(ar, e->u.op.b));
    case RX_E_MIN:
    case RX_E_MAX:
        x = rxi_ar_bound_expr(ar, e->u.op.a);
        y = rxi_ar_bound_expr(ar, e->u.op.b);
        if (e->kind == RX_E_MIN) return (rxi_ar_iv){min64(x.lo, y.lo), min64(x.hi, y.hi)};
        return (rxi_ar_iv){max64(x.lo, y.lo), max64(x.hi, y.hi)};
    case RX_E_EQ: case RX_E_NE: case RX_E_LT: case RX_E_LE: case RX_E_GT: case RX_E_GE:
    case RX_E_AND: case RX_E_OR: case RX_E_NOT:
        return (rxi_ar_iv){0, 1};
    case RX_E_SELECT:
        return iv_union(rxi_ar_bound_expr(ar, e->u.op.b), rxi_ar_bound_expr(ar, e->u.op.c));
    case RX_E_BITAND:
        x = rxi_ar_bound_expr(ar, e->u.op.a);
        y = rxi_ar_bound_expr(ar, e->u.op.b);
        if (x.lo >= 0 && y.lo >= 0) return (rxi_ar_iv){0, min64(x.hi, y.hi)};
        if (x.lo >= 0) return (rxi_ar_iv){0, x.hi};
        if (y.lo >= 0) return (rxi_ar_iv){0, y.hi};
        return dtype_range(e->dtype);
    case RX_E_SHR: {
        int64_t k;
        x = rxi_ar_bound_expr(ar, e->u.op.a);
        if (x.lo >= 0 && rx_expr_is_const(e->u.op.b, &k) && k >= 0 && k < 63)
            return (rxi_ar_iv){x.lo >> k, x.hi == RXA_POS_INF ? RXA_POS_INF : x.hi >> k};
        return dtype_range(e->dtype);
    }
    case RX_E_CAST: {
        rxi_ar_iv t = dtype_range(e->dtype);
        const rx_expr *o = e->u.op.a;
        if (e->dtype == RX_DT_BOOL || !(rx_dtype_is_int(o->dtype) || o->dtype == RX_DT_BOOL))
            return t;
        x = rxi_ar_bound_expr(ar, o);
        return (x.lo >= t.lo && x.hi <= t.hi) ? x : t;
    }
    default:
        return dtype_range(e->dtype);
    }
}

/* Contract: always fills *lo and *hi (INT64_MIN / INT64_MAX when unbounded); the
 * result is the tighter of the bounds of e as written and of its canonical form.
 * New nodes (of the canonical form) go into the context's arena. */
void rx_arith_const_bound(rx_arith *ar, rx_expr *e, int64_t *lo, int64_t *hi)
{
    rxi_ar_iv r = rxi_ar_bound_expr(ar, e);
    if (rx_dtype_is_int(e->dtype) && r.lo != r.hi) {
        rx_expr *s = rx_arith_simplify(ar, e);
        if (s != e) r = rxi_ar_iv_intersect(r, rxi_ar_bound_expr(ar, s));
    }
    *lo = r.lo;
    *hi = r.hi;
}
