/*
 * tir_eval_expr.c — values and expressions of the loop-function interpreter
 * (tir_eval.h, tir_eval_int.h): every expression kind and dtype, computed as the C
 * that compiler/codegen/c_expr.c emits for it computes, so that a folded constant
 * holds the bytes the compiled kernel would write. An expression is evaluated in its
 * own dtype and converted where codegen converts (rxi_cg_expr_as: operands to the
 * operation's type, store values to the buffer's).
 *
 * Mirrored from c_expr.c, one line each:
 *   literals      float literals of f32 rounded once from double (inf past FLT_MAX's
 *                 rounding boundary); f16 and bf16 rounded from double; integers cast
 *   + - * / << >> & | ^   narrow integers in 32 bits then cast back; bool operands as
 *                 int; f16/bf16 results rounded (f16 from double, bf16 by bits)
 *   // %          rx_floordiv_i64: x // 0 == 0, x % 0 == 0, x % -1 == 0; unsigned
 *                 divide with 0 for 0; floats go through int64 (truncating)
 *   min max       floats NaN-propagating ((a < b || a != a) ? a : b); never rounded
 *   compare && || !  int 0/1, operands in the left operand's dtype; && || short-cut
 *   select        only the chosen branch is evaluated
 *   cast          C conversions; to bool is != 0; to f16 from double; to bf16 by bits
 *                 from float-exact sources, from double otherwise
 *   load store    flat row-major index checked against the buffer; f16/bf16 stored as
 *                 bits (the prelude's rx_f2h / rx_f2bf), bool as one byte
 *   intrinsics    libm in float (expf, ...) or double; rsqrt 1/sqrt, sigmoid
 *                 1/(1+exp(-x)), round nearbyint; integer abs wraps; exp (and sigmoid's),
 *                 erf, tanh, log, sin and cos in float are the kernels' own
 *                 rx_expf_ref, rx_erff_ref, rx_tanhf_ref, rx_logf_ref, rx_sinf_ref,
 *                 rx_cosf_ref (relax/codegen_math.h)
 * What C leaves undefined fails the run: integer / by 0 or INT_MIN / -1, a shift count
 * outside the operand's width, a float converted to an integer that cannot hold it, an
 * access outside a buffer. Signed overflow of + - * wraps, as the kernels do. Cost:
 * one call per expression node, one scope search per variable.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "relax/codegen_math.h"
#include "tir_eval_int.h"

/* No a * b + c fused into one rounding: the kernels are built -std=c11, whose gcc
 * default is -ffp-contract=off; clang's default contracts within an expression. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

void tev_fail(tev *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tev_fail(tev *t, const char *fmt, ...)
{
    if (!t->ok) return;
    t->ok = false;
    if (!t->why) return;
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(t->why, fmt, ap);
    va_end(ap);
    rx_sb_printf(t->why, " (in loop function \"%s\")", t->f->name ? t->f->name : "?");
}


/* ---------------------------------------------------------------- dtypes */






size_t rx_tev_elem_size(rx_dtype dt)
{
    int b = rx_dtype_bits(dt);
    return b > 0 ? (size_t)b / 8 : 0;
}



/* ---------------------------------------------------------------- f16 / bf16 */

/* x rounded to nearest even with p significant bits, exponent >= emin, overflowing to
 * infinity past maxv: the generated prelude's rx_roundp, a correctly rounded
 * conversion (as gcc's (_Float16) conversion of the hardware path is). */
static double roundp(double x, int p, int emin, double maxv)
{
    if (x != x || x == 0.0 || isinf(x)) return x;
    int e = ilogb(x);
    if (e < emin) e = emin;
    double s = ldexp(1.0, p - 1 - e);
    double r = nearbyint(x * s) / s;
    return fabs(r) > maxv ? copysign((double)INFINITY, x) : r;
}

static float f16r(double x) { return (float)roundp(x, 11, -14, 65504.0); }
static float bf16r(double x) { return (float)roundp(x, 8, -126, 0x1.fep127); }

static float h2f(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f2h(float f)
{
    double x = roundp(f, 11, -14, 65504.0), a = fabs(x);
    uint16_t s = signbit(x) ? 0x8000 : 0;
    if (a != a) return (uint16_t)(s | 0x7e00);
    if (isinf(a)) return (uint16_t)(s | 0x7c00);
    if (a < 0x1p-14) return (uint16_t)(s | (uint16_t)(a * 0x1p24));
    int e = ilogb(a);
    return (uint16_t)(s | ((e + 15) << 10) | (int)(a * ldexp(1.0, 10 - e) - 1024.0));
}

static float bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float bf16r_f(float f) { return bf2f(f2bf(f)); }

/* The float result r of an operation of dtype dt, rounded as codegen's round_open. */
static float fround(rx_dtype dt, float r)
{
    if (dt == RX_DT_F16) return f16r(r);
    if (dt == RX_DT_BF16) return bf16r_f(r);
    return r;
}

/* ---------------------------------------------------------------- conversions */

static double as_double(tv x, rx_dtype from)
{
    switch (cls(from)) {
    case C_F32: return x.f;
    case C_F64: return x.d;
    case C_UINT: return (double)x.u;
    default: return (double)x.i;
    }
}

static float as_float(tv x, rx_dtype from)
{
    switch (cls(from)) {
    case C_F32: return x.f;
    case C_F64: return (float)x.d;
    case C_UINT: return (float)x.u;
    default: return (float)x.i;
    }
}

/* x (an integer class value) as 64 bits. */
static uint64_t int_bits(tv x, rx_dtype from) { return cls(from) == C_UINT ? x.u : (uint64_t)x.i; }

static bool nonzero(tv x, rx_dtype from)
{
    switch (cls(from)) {
    case C_F32: return x.f != 0;
    case C_F64: return x.d != 0;
    case C_UINT: return x.u != 0;
    default: return x.i != 0;
    }
}

/* Float v converted to an integer of nb bits (signed or not): C's truncation, which
 * is undefined when the truncated value does not fit. */
static bool float_to_int(tev *t, double v, int nb, bool sgn, tv *out)
{
    double lo = sgn ? -ldexp(1.0, nb - 1) - 1.0 : -1.0, hi = ldexp(1.0, sgn ? nb - 1 : nb);
    if (!(v > lo && v < hi)) {
        tev_fail(t, "float value %g converted to a %d-bit %s integer is out of range", v, nb,
             sgn ? "signed" : "unsigned");
        return false;
    }
    double tr = trunc(v);
    if (sgn) out->i = (int64_t)tr;
    else out->u = (uint64_t)tr;
    return true;
}

/* emit_cast: x of dtype from, converted to dtype to. */
tv tev_conv(tev *t, tv x, rx_dtype from, rx_dtype to)
{
    from = norm(from);
    to = norm(to);
    tv r = {0};
    if (from == to) return x;
    if (to == RX_DT_BOOL) {
        r.i = nonzero(x, from);
        return r;
    }
    if (to == RX_DT_F16) {
        r.f = f16r(as_double(x, from));
        return r;
    }
    if (to == RX_DT_BF16) {
        bool exact =
            from == RX_DT_F16 || from == RX_DT_F32 || from == RX_DT_BOOL || is_narrow(from);
        r.f = exact ? bf16r_f(as_float(x, from)) : bf16r(as_double(x, from));
        return r;
    }
    switch (cls(to)) {
    case C_F32: r.f = as_float(x, from); return r;
    case C_F64: r.d = as_double(x, from); return r;
    case C_SINT:
        if (is_float(from)) float_to_int(t, as_double(x, from), bits(to), true, &r);
        else r.i = wrap_s(int_bits(x, from), bits(to));
        return r;
    default: /* C_UINT */
        if (is_float(from)) float_to_int(t, as_double(x, from), bits(to), false, &r);
        else r.u = wrap_u(int_bits(x, from), bits(to));
        return r;
    }
}

/* ---------------------------------------------------------------- scopes */

const tv *tev_lookup_var(const tev *t, const rx_svar *v)
{
    for (int i = t->vars.n - 1; i >= 0; i--)
        if (t->vars.items[i].v == v) return &t->vars.items[i].val;
    return NULL;
}

void tev_push_var(tev *t, const rx_svar *v, tv val)
{
    tev_var e = {v, val};
    RX_VEC_PUSH(t->vars, e);
}

tev_buf *tev_lookup_buf(tev *t, const rx_buffer *b)
{
    for (int i = t->bufs.n - 1; i >= 0; i--)
        if (t->bufs.items[i].b == b) return &t->bufs.items[i];
    return NULL;
}

void tev_pop_bufs(tev *t, int mark)
{
    while (t->bufs.n > mark) {
        tev_buf *b = &t->bufs.items[--t->bufs.n];
        if (b->owned) {
            t->alloc -= b->numel * (int64_t)rx_tev_elem_size(b->dt);
            free(b->data);
        }
        free(b->dims);
    }
}

/* ---------------------------------------------------------------- expressions */

/* rxi_cg_expr_as: e evaluated, then converted to dt unless it already has it. */
tv tev_eval_as(tev *t, const rx_expr *e, rx_dtype dt)
{
    tv v = tev_eval(t, e);
    if (!t->ok || dt == RX_DT_UNKNOWN || (rx_dtype)e->dtype == dt) return v;
    return tev_conv(t, v, (rx_dtype)e->dtype, dt);
}

bool tev_eval_bool(tev *t, const rx_expr *e) { return tev_eval_as(t, e, RX_DT_BOOL).i != 0; }

static tv lit_float(double v, rx_dtype dt)
{
    tv r = {0};
    switch (dt) {
    case RX_DT_F64: r.d = isnan(v) ? (double)NAN : v; break;
    case RX_DT_F16: r.f = isnan(v) ? NAN : f16r(v); break;
    case RX_DT_BF16: r.f = isnan(v) ? NAN : bf16r(v); break;
    default:
        if (isnan(v)) r.f = NAN;
        else if (isinf(v) || fabs(v) >= 0x1.ffffffp127) r.f = v < 0 ? -INFINITY : INFINITY;
        else r.f = (float)v;
        break;
    }
    return r;
}

tv tev_lit_int(int64_t v, rx_dtype dt)
{
    tv r = {0};
    switch (cls(dt)) {
    case C_F32: case C_F64: return lit_float((double)v, norm(dt));
    case C_BOOL: r.i = v != 0; return r;
    case C_UINT: r.u = wrap_u((uint64_t)v, bits(dt)); return r;
    default: r.i = wrap_s((uint64_t)v, bits(dt)); return r;
    }
}

/* The count of a shift: operand b in its own dtype, as (W) converts it for narrow
 * integers; fails unless 0 <= count < cbits. */
static bool shift_count(tev *t, tv b, rx_dtype bdt, rx_dtype dt, int cbits, int *out)
{
    int64_t k;
    if (is_float(bdt)) {
        tev_fail(t, "shift by a float");
        return false;
    }
    if (is_narrow(dt)) {
        uint64_t w = int_bits(b, bdt);
        k = rx_dtype_is_uint(dt) ? (int64_t)wrap_u(w, 32) : wrap_s(w, 32);
    } else if (cls(bdt) == C_UINT) {
        k = b.u > 64 ? 64 : (int64_t)b.u;
    } else {
        k = b.i;
    }
    if (k < 0 || k >= cbits) {
        tev_fail(t, "shift count %lld out of range for a %d-bit operand", (long long)k, cbits);
        return false;
    }
    *out = (int)k;
    return true;
}

/* Signed a OP b computed in cbits (32 or 64) bits, as C's int or int64_t. */
static int64_t sint_op(tev *t, rx_ekind k, int64_t a, int64_t b, int sh, int cbits)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t min = cbits == 64 ? INT64_MIN : INT32_MIN;
    switch (k) {
    case RX_E_ADD: return wrap_s(ua + ub, cbits);
    case RX_E_SUB: return wrap_s(ua - ub, cbits);
    case RX_E_MUL: return wrap_s(ua * ub, cbits);
    case RX_E_DIV:
        if (b == 0) tev_fail(t, "integer division by zero");
        else if (a == min && b == -1) tev_fail(t, "integer division overflow");
        else return a / b;
        return 0;
    case RX_E_SHL: return wrap_s(ua << sh, cbits);
    case RX_E_SHR: return a < 0 ? ~(~a >> sh) : a >> sh; /* arithmetic, as gcc's */
    case RX_E_BITAND: return a & b;
    case RX_E_BITOR: return a | b;
    case RX_E_BITXOR: return a ^ b;
    default: RX_UNREACHABLE();
    }
}

static uint64_t uint_op(tev *t, rx_ekind k, uint64_t a, uint64_t b, int sh, int cbits)
{
    switch (k) {
    case RX_E_ADD: return wrap_u(a + b, cbits);
    case RX_E_SUB: return wrap_u(a - b, cbits);
    case RX_E_MUL: return wrap_u(a * b, cbits);
    case RX_E_DIV:
        if (b == 0) {
            tev_fail(t, "integer division by zero");
            return 0;
        }
        return a / b;
    case RX_E_SHL: return wrap_u(a << sh, cbits);
    case RX_E_SHR: return a >> sh;
    case RX_E_BITAND: return a & b;
    case RX_E_BITOR: return a | b;
    case RX_E_BITXOR: return a ^ b;
    default: RX_UNREACHABLE();
    }
}

/* + - * / << >> & | ^ of dtype dt (emit_arith and its bool case). */
static tv arith(tev *t, const rx_expr *e)
{
    rx_ekind k = (rx_ekind)e->kind;
    rx_dtype dt = norm((rx_dtype)e->dtype);
    bool shift = k == RX_E_SHL || k == RX_E_SHR;
    const rx_expr *be = e->u.op.b;
    tv a = tev_eval_as(t, e->u.op.a, dt);
    tv b = shift && dt != RX_DT_BOOL ? tev_eval(t, be) : tev_eval_as(t, be, dt);
    tv r = {0};
    if (!t->ok) return r;
    rx_dtype bdt = shift && dt != RX_DT_BOOL ? norm((rx_dtype)be->dtype) : dt;
    vclass c = cls(dt);
    if (c == C_F32 || c == C_F64) {
        bool f32 = c == C_F32;
        switch (k) {
        case RX_E_ADD: if (f32) r.f = a.f + b.f; else r.d = a.d + b.d; break;
        case RX_E_SUB: if (f32) r.f = a.f - b.f; else r.d = a.d - b.d; break;
        case RX_E_MUL: if (f32) r.f = a.f * b.f; else r.d = a.d * b.d; break;
        case RX_E_DIV: if (f32) r.f = a.f / b.f; else r.d = a.d / b.d; break;
        default:
            tev_fail(t, "%s of %s values", rx_ekind_symbol(k), rx_dtype_name(dt));
            return r;
        }
        if (f32) r.f = fround(dt, r.f);
        return r;
    }
    int cbits = c == C_BOOL || bits(dt) <= 32 ? 32 : 64, sh = 0;
    if (shift && c == C_BOOL) { /* (a << b) of two ints */
        if (b.i < 0 || b.i >= 32) {
            tev_fail(t, "shift count %lld out of range for a 32-bit operand", (long long)b.i);
            return r;
        }
        sh = (int)b.i;
    } else if (shift && !shift_count(t, b, bdt, dt, cbits, &sh)) {
        return r;
    }
    if (c == C_UINT) {
        r.u = wrap_u(uint_op(t, k, a.u, b.u, sh, cbits), bits(dt));
    } else {
        r.i = sint_op(t, k, a.i, b.i, sh, cbits);
        if (c == C_SINT) r.i = wrap_s((uint64_t)r.i, bits(dt));
    }
    return r;
}

/* rx_floordiv_i64 and rx_floormod_i64 of the prelude. */
static int64_t floordiv64(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    if (b == -1) return wrap_s(0u - (uint64_t)a, 64);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floormod64(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* emit_call2 with H_FLOORDIV / H_FLOORMOD. */
static tv floor_op(tev *t, const rx_expr *e)
{
    rx_dtype dt = norm((rx_dtype)e->dtype);
    bool div = e->kind == RX_E_FLOORDIV;
    tv a = tev_eval_as(t, e->u.op.a, dt), b = tev_eval_as(t, e->u.op.b, dt), r = {0};
    if (!t->ok) return r;
    switch (cls(dt)) {
    case C_UINT:
        r.u = b.u ? (div ? a.u / b.u : a.u % b.u) : 0;
        return r;
    case C_SINT:
    case C_BOOL: /* the i32 helper */
        r.i = div ? floordiv64(a.i, b.i) : floormod64(a.i, b.i);
        r.i = wrap_s((uint64_t)r.i, cls(dt) == C_BOOL ? 32 : bits(dt));
        return r;
    default: { /* (float)rx_floordiv_i64(a, b): the float operands truncated to int64 */
        tv ia, ib;
        if (!float_to_int(t, as_double(a, dt), 64, true, &ia) ||
            !float_to_int(t, as_double(b, dt), 64, true, &ib))
            return r;
        int64_t q = div ? floordiv64(ia.i, ib.i) : floormod64(ia.i, ib.i);
        if (cls(dt) == C_F64) r.d = (double)q;
        else r.f = fround(dt, (float)q);
        return r;
    }
    }
}

/* emit_call2 with H_MIN / H_MAX: floats NaN-propagating, never rounded. */
static tv minmax(tev *t, const rx_expr *e)
{
    rx_dtype dt = norm((rx_dtype)e->dtype);
    bool mn = e->kind == RX_E_MIN;
    tv a = tev_eval_as(t, e->u.op.a, dt), b = tev_eval_as(t, e->u.op.b, dt);
    if (!t->ok) return a;
    switch (cls(dt)) {
    case C_F32: return (mn ? a.f < b.f : a.f > b.f) || a.f != a.f ? a : b;
    case C_F64: return (mn ? a.d < b.d : a.d > b.d) || a.d != a.d ? a : b;
    case C_UINT: return (mn ? a.u < b.u : a.u > b.u) ? a : b;
    default: return (mn ? a.i < b.i : a.i > b.i) ? a : b;
    }
}

/* == != < <= > >= in the left operand's dtype; && || on bools, short-cut. */
static tv compare(tev *t, const rx_expr *e)
{
    rx_ekind k = (rx_ekind)e->kind;
    tv r = {0};
    if (k == RX_E_AND || k == RX_E_OR) {
        bool a = tev_eval_bool(t, e->u.op.a);
        r.i = (k == RX_E_AND) == a ? tev_eval_bool(t, e->u.op.b) : a;
        return r;
    }
    rx_dtype ot = norm((rx_dtype)e->u.op.a->dtype);
    tv a = tev_eval_as(t, e->u.op.a, ot), b = tev_eval_as(t, e->u.op.b, ot);
    if (!t->ok) return r;
    int c; /* -1, 0, 1, or 2 for unordered */
    switch (cls(ot)) {
    case C_F32: c = a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2; break;
    case C_F64: c = a.d < b.d ? -1 : a.d > b.d ? 1 : a.d == b.d ? 0 : 2; break;
    case C_UINT: c = a.u < b.u ? -1 : a.u > b.u; break;
    default: c = a.i < b.i ? -1 : a.i > b.i; break;
    }
    switch (k) {
    case RX_E_EQ: r.i = c == 0; break;
    case RX_E_NE: r.i = c != 0; break;
    case RX_E_LT: r.i = c == -1; break;
    case RX_E_LE: r.i = c == -1 || c == 0; break;
    case RX_E_GT: r.i = c == 1; break;
    default: r.i = c == 1 || c == 0; break;
    }
    return r;
}

/* Unary minus and ~ (the bool and narrow cases of rxi_cg_expr). */
static tv negate(tev *t, const rx_expr *e)
{
    rx_dtype dt = norm((rx_dtype)e->dtype);
    bool neg = e->kind == RX_E_NEG;
    tv a = tev_eval_as(t, e->u.op.a, dt), r = {0};
    if (!t->ok) return r;
    switch (cls(dt)) {
    case C_BOOL: r.i = neg ? a.i : !a.i; return r;
    case C_F32:
    case C_F64:
        if (!neg) {
            tev_fail(t, "~ of a %s value", rx_dtype_name(dt));
            return r;
        }
        if (cls(dt) == C_F32) r.f = -a.f;
        else r.d = -a.d;
        return r;
    case C_UINT: r.u = wrap_u(neg ? 0u - a.u : ~a.u, bits(dt)); return r;
    default: r.i = wrap_s(neg ? 0u - (uint64_t)a.i : ~(uint64_t)a.i, bits(dt)); return r;
    }
}

/* Flat row-major position of idx in buffer b (Horner form, int64); -1 after a failure. */
int64_t tev_flat_index(tev *t, const tev_buf *b, rx_expr *const *idx, int nidx)
{
    if (nidx != b->b->ndim) {
        tev_fail(t, "buffer \"%s\" has %d dimension(s), indexed with %d", b->b->name,
                 b->b->ndim, nidx);
        return -1;
    }
    int64_t f = 0;
    for (int k = 0; k < nidx; k++) {
        const tv *vp;
        tv v;
        if (idx[k]->kind == RX_E_VAR && idx[k]->dtype == RX_DT_I64 && tev_step(t) &&
            (vp = tev_lookup_var(t, idx[k]->u.var)) != NULL) /* the common case, directly */
            v = *vp;
        else
            v = tev_eval_as(t, idx[k], RX_DT_I64);
        if (!t->ok) return -1;
        if ((k && __builtin_mul_overflow(f, b->dims[k], &f)) ||
            __builtin_add_overflow(f, v.i, &f)) {
            tev_fail(t, "index into \"%s\" overflows", b->b->name);
            return -1;
        }
    }
    if (f < 0 || f >= b->numel) {
        tev_fail(t, "access to \"%s\" at flat position %lld is outside its %lld elements",
                 b->b->name, (long long)f, (long long)b->numel);
        return -1;
    }
    return f;
}

static tv load_elem(const tev_buf *b, int64_t i)
{
    tv r = {0};
    const uint8_t *p = b->data + (size_t)i * rx_tev_elem_size(b->dt);
    switch (b->dt) {
    case RX_DT_BOOL: r.i = *p; break;
    case RX_DT_U8: r.u = *p; break;
    case RX_DT_I8: { int8_t v; memcpy(&v, p, 1); r.i = v; break; }
    case RX_DT_I16: { int16_t v; memcpy(&v, p, 2); r.i = v; break; }
    case RX_DT_I32: { int32_t v; memcpy(&v, p, 4); r.i = v; break; }
    case RX_DT_I64: memcpy(&r.i, p, 8); break;
    case RX_DT_U16: { uint16_t v; memcpy(&v, p, 2); r.u = v; break; }
    case RX_DT_U32: { uint32_t v; memcpy(&v, p, 4); r.u = v; break; }
    case RX_DT_U64: memcpy(&r.u, p, 8); break;
    case RX_DT_F16: { uint16_t h; memcpy(&h, p, 2); r.f = h2f(h); break; }
    case RX_DT_BF16: { uint16_t h; memcpy(&h, p, 2); r.f = bf2f(h); break; }
    case RX_DT_F32: memcpy(&r.f, p, 4); break;
    case RX_DT_F64: memcpy(&r.d, p, 8); break;
    default: RX_UNREACHABLE();
    }
    return r;
}

/* rxi_cg_encode: v (already of the buffer's dtype) in storage form. */
void tev_store_elem(tev_buf *b, int64_t i, tv v)
{
    uint8_t *p = b->data + (size_t)i * rx_tev_elem_size(b->dt);
    switch (b->dt) {
    case RX_DT_BOOL: *p = (uint8_t)v.i; break;
    case RX_DT_I8: { int8_t x = (int8_t)v.i; memcpy(p, &x, 1); break; }
    case RX_DT_I16: { int16_t x = (int16_t)v.i; memcpy(p, &x, 2); break; }
    case RX_DT_I32: { int32_t x = (int32_t)v.i; memcpy(p, &x, 4); break; }
    case RX_DT_I64: memcpy(p, &v.i, 8); break;
    case RX_DT_U8: *p = (uint8_t)v.u; break;
    case RX_DT_U16: { uint16_t x = (uint16_t)v.u; memcpy(p, &x, 2); break; }
    case RX_DT_U32: { uint32_t x = (uint32_t)v.u; memcpy(p, &x, 4); break; }
    case RX_DT_U64: memcpy(p, &v.u, 8); break;
    case RX_DT_F16: { uint16_t h = f2h(v.f); memcpy(p, &h, 2); break; }
    case RX_DT_BF16: { uint16_t h = f2bf(v.f); memcpy(p, &h, 2); break; }
    case RX_DT_F32: memcpy(p, &v.f, 4); break;
    case RX_DT_F64: memcpy(p, &v.d, 8); break;
    default: RX_UNREACHABLE();
    }
}

static tv load(tev *t, const rx_expr *e)
{
    tv r = {0};
    tev_buf *b = tev_lookup_buf(t, e->u.load.buf);
    if (!b) {
        tev_fail(t, "buffer \"%s\" is not in scope", e->u.load.buf ? e->u.load.buf->name : "?");
        return r;
    }
    int64_t i = tev_flat_index(t, b, e->u.load.idx, e->u.load.nidx);
    if (i < 0) return r;
    return load_elem(b, i);
}

/* emit_intrin: libm's float or double function by the compute type. */
static tv intrin(tev *t, const rx_expr *e)
{
    rx_dtype dt = norm((rx_dtype)e->dtype);
    rx_intrin fn = (rx_intrin)e->u.call.fn;
    tv r = {0};
    if (e->u.call.nargs != rx_intrin_arity(fn)) {
        tev_fail(t, "%s takes %d argument(s), found %d", rx_intrin_name(fn), rx_intrin_arity(fn),
             e->u.call.nargs);
        return r;
    }
    if (fn == RX_FN_ABS && !is_float(dt)) {
        tv x = tev_eval_as(t, e->u.call.args[0], dt);
        if (cls(dt) == C_UINT) return x;
        int nb = cls(dt) == C_BOOL ? 32 : bits(dt);
        r.i = x.i < 0 ? wrap_s(0u - (uint64_t)x.i, nb) : x.i;
        return r;
    }
    if (!is_float(dt)) {
        tev_fail(t, "%s needs a float argument, found %s", rx_intrin_name(fn), rx_dtype_name(dt));
        return r;
    }
    tv x = tev_eval_as(t, e->u.call.args[0], dt), y = {0};
    if (fn == RX_FN_POW) y = tev_eval_as(t, e->u.call.args[1], dt);
    if (!t->ok) return r;
    if (cls(dt) == C_F64) {
        double a = x.d;
        switch (fn) {
        case RX_FN_EXP: r.d = exp(a); break;
        case RX_FN_LOG: r.d = log(a); break;
        case RX_FN_SQRT: r.d = sqrt(a); break;
        case RX_FN_RSQRT: r.d = 1.0 / sqrt(a); break;
        case RX_FN_TANH: r.d = tanh(a); break;
        case RX_FN_SIGMOID: r.d = 1.0 / (1.0 + exp(-(a))); break;
        case RX_FN_ERF: r.d = erf(a); break;
        case RX_FN_POW: r.d = pow(a, y.d); break;
        case RX_FN_ABS: r.d = fabs(a); break;
        case RX_FN_FLOOR: r.d = floor(a); break;
        case RX_FN_CEIL: r.d = ceil(a); break;
        case RX_FN_ROUND: r.d = nearbyint(a); break;
        case RX_FN_SIN: r.d = sin(a); break;
        case RX_FN_COS: r.d = cos(a); break;
        default: tev_fail(t, "unknown intrinsic %d", (int)fn); break;
        }
        return r;
    }
    float a = x.f;
    switch (fn) {
    case RX_FN_EXP: r.f = rx_expf_ref(a); break; /* the kernels' exp (codegen_math.h) */
    case RX_FN_LOG: r.f = rx_logf_ref(a); break;
    case RX_FN_SQRT: r.f = sqrtf(a); break;
    case RX_FN_RSQRT: r.f = 1.0f / sqrtf(a); break;
    case RX_FN_TANH: r.f = rx_tanhf_ref(a); break;
    case RX_FN_SIGMOID: r.f = 1.0f / (1.0f + rx_expf_ref(-(a))); break;
    case RX_FN_ERF: r.f = rx_erff_ref(a); break;
    case RX_FN_POW: r.f = powf(a, y.f); break;
    case RX_FN_ABS: r.f = fabsf(a); break;
    case RX_FN_FLOOR: r.f = floorf(a); break;
    case RX_FN_CEIL: r.f = ceilf(a); break;
    case RX_FN_ROUND: r.f = nearbyintf(a); break;
    case RX_FN_SIN: r.f = rx_sinf_ref(a); break;
    case RX_FN_COS: r.f = rx_cosf_ref(a); break;
    default: tev_fail(t, "unknown intrinsic %d", (int)fn); break;
    }
    r.f = fround(dt, r.f);
    return r;
}

tv tev_eval(tev *t, const rx_expr *e)
{
    tv r = {0};
    if (!tev_step(t)) return r;
    rx_dtype dt = norm((rx_dtype)e->dtype);
    switch ((rx_ekind)e->kind) {
    case RX_E_INT: return tev_lit_int(e->u.ival, dt);
    case RX_E_FLOAT:
        if (!is_float(dt)) tev_fail(t, "float literal of dtype %s", rx_dtype_name(dt));
        return lit_float(e->u.fval, dt);
    case RX_E_VAR: {
        const tv *v = tev_lookup_var(t, e->u.var);
        if (!v) {
            tev_fail(t, "variable \"%s\" has no value", e->u.var->name);
            return r;
        }
        return *v;
    }
    case RX_E_ADD: case RX_E_SUB: case RX_E_MUL: case RX_E_DIV:
    case RX_E_SHL: case RX_E_SHR: case RX_E_BITAND: case RX_E_BITOR: case RX_E_BITXOR:
        return arith(t, e);
    case RX_E_FLOORDIV: case RX_E_FLOORMOD: return floor_op(t, e);
    case RX_E_MIN: case RX_E_MAX: return minmax(t, e);
    case RX_E_EQ: case RX_E_NE: case RX_E_LT: case RX_E_LE: case RX_E_GT: case RX_E_GE:
    case RX_E_AND: case RX_E_OR:
        if (dt != RX_DT_BOOL) tev_fail(t, "comparison of dtype %s", rx_dtype_name(dt));
        return compare(t, e);
    case RX_E_NOT:
        r.i = !tev_eval_bool(t, e->u.op.a);
        return r;
    case RX_E_NEG: case RX_E_BITNOT: return negate(t, e);
    case RX_E_SELECT:
        return tev_eval_bool(t, e->u.op.a) ? tev_eval_as(t, e->u.op.b, dt)
                                           : tev_eval_as(t, e->u.op.c, dt);
    case RX_E_CAST: {
        tv x = tev_eval(t, e->u.op.a);
        return t->ok ? tev_conv(t, x, (rx_dtype)e->u.op.a->dtype, dt) : r;
    }
    case RX_E_LOAD: return load(t, e);
    case RX_E_CALL: return intrin(t, e);
    default:
        tev_fail(t, "unknown expression kind %d", e->kind);
        return r;
    }
}

