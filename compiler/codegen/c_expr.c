/*
 * c_expr.c — scalar expressions of loop functions as C expressions, and the prelude.
 *
 * Every emitted expression is fully parenthesized, so C's precedence never matters and
 * gcc's -Wparentheses stays quiet. Each operand is evaluated once: operations that
 * would repeat an operand in C (min, max, abs, floor division) call a static inline
 * helper instead, so nested expressions stay linear in size.
 *
 * Types follow cgen_int.h's compute types. Narrow integers (8 and 16 bits) are
 * computed in a 32-bit type of the same signedness and cast back, which gives wrapping
 * results without C's undefined signed overflow of promoted uint16 products; 32- and
 * 64-bit integers use C's own operators (signed overflow there is undefined, as it is
 * in TVM's generated code). f16 and bf16 results are rounded after every operation:
 * float has more than 2p+2 significant bits for both, so computing in float and
 * rounding once equals computing in the narrow type for + - * / and sqrt.
 *
 * The prelude defines, on demand, the helpers the kernels used (floor division and
 * modulo with division by zero giving 0, NaN-propagating float min/max like NumPy's,
 * f16/bf16 conversions). f16 uses the compiler's _Float16 when it has one (gcc 12 on
 * x86-64) and exact software conversions otherwise (clang 14); defining RX_NO_FLOAT16
 * when building forces the software path.
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cgen_int.h"
#include "relax/codegen_math.h"

/* ---------------------------------------------------------------- types */

const char *rxi_cg_ctype(rx_dtype t)
{
    switch (t) {
    case RX_DT_BOOL: return "int";
    case RX_DT_I8: return "int8_t";
    case RX_DT_I16: return "int16_t";
    case RX_DT_I32: return "int32_t";
    case RX_DT_I64: return "int64_t";
    case RX_DT_U8: return "uint8_t";
    case RX_DT_U16: return "uint16_t";
    case RX_DT_U32: return "uint32_t";
    case RX_DT_U64: return "uint64_t";
    case RX_DT_F16: case RX_DT_BF16: case RX_DT_F32: return "float";
    case RX_DT_F64: return "double";
    default: return "int64_t";
    }
}

const char *rxi_cg_stype(rx_dtype t)
{
    if (t == RX_DT_BOOL) return "uint8_t";
    if (t == RX_DT_F16 || t == RX_DT_BF16) return "uint16_t";
    return rxi_cg_ctype(t);
}

size_t rxi_cg_ssize(rx_dtype t)
{
    int bits = rx_dtype_bits(t);
    return bits > 0 ? (size_t)bits / 8 : 8;
}

/* Suffix naming a helper's type: the compute type's (f16 and bf16 share f32's). */
static const char *hsuffix(rx_dtype t)
{
    if (t == RX_DT_F16 || t == RX_DT_BF16) return "f32";
    if (t == RX_DT_BOOL) return "i32";
    if (t == RX_DT_UNKNOWN) return "i64";
    return rx_dtype_name(t);
}

static rx_dtype hdtype(rx_dtype t)
{
    if (t == RX_DT_F16 || t == RX_DT_BF16) return RX_DT_F32;
    if (t == RX_DT_BOOL) return RX_DT_I32;
    if (t == RX_DT_UNKNOWN) return RX_DT_I64;
    return t;
}

static bool is_narrow_int(rx_dtype t)
{
    return rx_dtype_is_int(t) && rx_dtype_bits(t) < 32;
}

/* The 32-bit type narrow integers are computed in. */
static const char *wide(rx_dtype t)
{
    return rx_dtype_is_uint(t) ? "uint32_t" : "int32_t";
}

static void use(cg *g, cg_helper h, rx_dtype t)
{
    g->need[h] |= 1u << (unsigned)hdtype(t);
}

/* Opens the rounding wrapper of an f16/bf16 result computed in float ("" else). */
static void round_open(cg *g, rx_dtype t)
{
    if (t == RX_DT_F16) {
        use(g, H_F16, 0);
        rx_sb_puts(g->out, "rx_f16r(");
    } else if (t == RX_DT_BF16) {
        use(g, H_BF16, 0);
        rx_sb_puts(g->out, "rx_bf16r_f(");
    }
}

static void round_close(cg *g, rx_dtype t)
{
    if (t == RX_DT_F16 || t == RX_DT_BF16) rx_sb_putc(g->out, ')');
}

/* ---------------------------------------------------------------- literals */

static void emit_float_lit(cg *g, double v, rx_dtype t)
{
    rx_sb *o = g->out;
    bool dbl = t == RX_DT_F64;
    if (isnan(v)) {
        rx_sb_puts(o, dbl ? (g->glsl ? "double(NAN)" : "((double)NAN)") : "NAN");
        return;
    }
    if (!dbl && !isinf(v) && fabs(v) >= 0x1.ffffffp127) v = v < 0 ? -INFINITY : INFINITY;
    if (isinf(v)) {
        if (g->glsl) rx_sb_printf(o, "(%s%s)", v < 0 ? "-" : "", dbl ? "double(INFINITY)" : "INFINITY");
        else rx_sb_printf(o, "(%s%sINFINITY)", dbl ? "(double)" : "", v < 0 ? "-" : "");
        return;
    }
    if (t == RX_DT_F16 || t == RX_DT_BF16) {
        use(g, t == RX_DT_F16 ? H_F16 : H_BF16, 0);
        rx_sb_printf(o, g->glsl ? "%s(%.17e)" : "%s(%a)", t == RX_DT_F16 ? "rx_f16r" : "rx_bf16r", v);
        return;
    }
    if (g->glsl) /* no hexadecimal floats: decimal digits that round-trip */
        rx_sb_printf(o, dbl ? "(%.17elf)" : "(%.9e)", dbl ? v : (double)(float)v);
    else if (dbl) rx_sb_printf(o, "(%a)", v);
    else rx_sb_printf(o, "(%af)", (double)(float)v);
}

static void emit_int_lit(cg *g, int64_t v, rx_dtype t)
{
    rx_sb *o = g->out;
    if (rx_dtype_is_float(t)) {
        emit_float_lit(g, (double)v, t);
        return;
    }
    switch (t) {
    case RX_DT_BOOL: rx_sb_puts(o, v ? "1" : "0"); return;
    case RX_DT_U64:
        rx_sb_printf(o, g->glsl ? "%lluul" : "UINT64_C(%llu)", (unsigned long long)v);
        return;
    case RX_DT_U32:
        rx_sb_printf(o, g->glsl ? "%lluu" : "((uint32_t)%lluu)", (unsigned long long)(uint32_t)v);
        return;
    case RX_DT_I32:
    case RX_DT_I16:
    case RX_DT_I8:
    case RX_DT_U16:
    case RX_DT_U8:
        rx_sb_printf(o, g->glsl ? "%s(%lld)" : "((%s)%lld)", rxi_cg_ctype(t), (long long)v);
        return;
    default:
        if (v == INT64_MIN) rx_sb_puts(o, "INT64_MIN");
        else rxi_cg_i64_lit(g, o, v);
        return;
    }
}

/* ---------------------------------------------------------------- operators */

/* a OP b of dtype t (arithmetic, shifts, bitwise), both operands converted to t. */
static void emit_arith(cg *g, rx_ekind k, const rx_expr *a, const rx_expr *b, rx_dtype t,
                       rx_loc loc)
{
    rx_sb *o = g->out;
    const char *tok = rx_ekind_symbol(k); /* C spells these as the grammar does */
    RX_ASSERT(tok != NULL && k != RX_E_FLOORDIV && k != RX_E_FLOORMOD);
    if (is_narrow_int(t)) {
        const char *w = wide(t);
        rxi_cg_cast_open(g, rxi_cg_ctype(t));
        rxi_cg_cast_open(g, w);
        rxi_cg_expr_as(g, a, t, loc);
        rx_sb_printf(o, ")) %s ", tok);
        rxi_cg_cast_open(g, w);
        rxi_cg_expr_as(g, b, k == RX_E_SHL || k == RX_E_SHR ? (rx_dtype)b->dtype : t, loc);
        rx_sb_puts(o, "))))");
        return;
    }
    if (g->checked_arith && t == RX_DT_I64 && (k == RX_E_ADD || k == RX_E_SUB || k == RX_E_MUL)) {
        rx_sb_printf(o, "rx_ck%s(", k == RX_E_ADD ? "add" : k == RX_E_SUB ? "sub" : "mul");
        rxi_cg_expr_as(g, a, t, loc);
        rx_sb_puts(o, ", ");
        rxi_cg_expr_as(g, b, t, loc);
        rx_sb_puts(o, ", &rx_ovf)");
        return;
    }
    round_open(g, t);
    rx_sb_putc(o, '(');
    rxi_cg_expr_as(g, a, t, loc);
    rx_sb_printf(o, " %s ", tok);
    rxi_cg_expr_as(g, b, k == RX_E_SHL || k == RX_E_SHR ? (rx_dtype)b->dtype : t, loc);
    rx_sb_putc(o, ')');
    round_close(g, t);
}

/* helper_SUFFIX(a, b); an f16/bf16 floordiv or floormod is rounded back to its type. */
static void emit_call2(cg *g, cg_helper h, const char *base, const rx_expr *a, const rx_expr *b,
                       rx_dtype t, rx_loc loc)
{
    bool rounds = h == H_FLOORDIV || h == H_FLOORMOD; /* min/max of f16 values are f16 */
    use(g, h, t);
    if (rounds) round_open(g, t);
    rx_sb_printf(g->out, "rx_%s_%s(", base, hsuffix(t));
    rxi_cg_expr_as(g, a, t, loc);
    rx_sb_puts(g->out, ", ");
    rxi_cg_expr_as(g, b, t, loc);
    rx_sb_putc(g->out, ')');
    if (rounds) round_close(g, t);
}

/* a // b and a % b of i32/i64 by a literal power of two 2^n >= 2 as a >> n and a & (b - 1):
 * exact floor division and modulo for every a in two's complement (the right shift of a
 * negative value is arithmetic in gcc and clang), and no call: a head index i1 // 4 in
 * a tile's innermost loop stays a loop invariant the vectorizer sees through (the helper
 * with its branches kept an attention kernel scalar). False (nothing written) otherwise. */
static bool emit_pow2_divmod(cg *g, rx_ekind k, const rx_expr *a, const rx_expr *b, rx_dtype t,
                             rx_loc loc)
{
    int64_t v;
    if ((t != RX_DT_I64 && t != RX_DT_I32) || !rx_expr_is_const(b, &v) || v < 2 || (v & (v - 1)))
        return false;
    int n = 0;
    while ((INT64_C(1) << n) != v) n++;
    rx_sb_putc(g->out, '(');
    rxi_cg_expr_as(g, a, t, loc);
    if (k == RX_E_FLOORDIV) rx_sb_printf(g->out, " >> %d)", n);
    else if (t == RX_DT_I64) {
        rx_sb_puts(g->out, " & ");
        rxi_cg_i64_lit(g, g->out, v - 1);
        rx_sb_putc(g->out, ')');
    }
    else rx_sb_printf(g->out, " & %lld)", (long long)(v - 1));
    return true;
}

/* a // b and a % b of i32/i64 by any other literal b >= 3, without a branch:
 * q = a / b - (a % b < 0) and r = a % b + (a % b < 0) * b (C truncates; a negative
 * remainder means the floor is one lower). The C compiler turns the literal division into
 * a multiply and shift, and, with no branch, hoists an invariant head index out of the
 * innermost loop and vectorizes it: an imported decoder's KV-cache concat, whose fused
 * grid (batch * 12 heads) is split back by // 12 and % 12 inside the copy loop, ran
 * scalar at 1.7 GB/s with the helper's branches. Not for GLSL (a bool is no int there,
 * and % of a negative operand is undefined). False (nothing written) otherwise. */
static bool emit_lit_divmod(cg *g, rx_ekind k, const rx_expr *a, const rx_expr *b, rx_dtype t,
                            rx_loc loc)
{
    int64_t v;
    if (g->glsl || (t != RX_DT_I64 && t != RX_DT_I32) || !rx_expr_is_const(b, &v) || v < 3)
        return false;
    rx_sb *o = g->out;
    bool div = k == RX_E_FLOORDIV;
    rx_sb_puts(o, "((");
    rxi_cg_expr_as(g, a, t, loc);
    rx_sb_printf(o, ") %c ", div ? '/' : '%');
    emit_int_lit(g, v, t);
    rx_sb_puts(o, div ? " - ((" : " + ((");
    rxi_cg_expr_as(g, a, t, loc);
    rx_sb_puts(o, ") % ");
    emit_int_lit(g, v, t);
    rx_sb_puts(o, " < 0)");
    if (!div) {
        rx_sb_puts(o, " * ");
        emit_int_lit(g, v, t);
    }
    rx_sb_putc(o, ')');
    return true;
}

static void emit_cast(cg *g, rx_dtype to, const rx_expr *x, rx_loc loc)
{
    rx_sb *o = g->out;
    rx_dtype from = (rx_dtype)x->dtype;
    if (to == from) {
        rxi_cg_expr(g, x, loc);
        return;
    }
    if (to == RX_DT_BOOL) {
        rx_sb_puts(o, g->glsl ? "int((" : "((");
        rxi_cg_expr(g, x, loc);
        rx_sb_puts(o, ") != 0)");
        return;
    }
    if (to == RX_DT_F16 || to == RX_DT_BF16) {
        bool exact = from == RX_DT_F16 || from == RX_DT_BF16 || from == RX_DT_F32 ||
                     from == RX_DT_BOOL || is_narrow_int(from);
        if (to == RX_DT_F16) {
            use(g, H_F16, 0);
            rx_sb_puts(o, g->glsl ? "rx_f16r(float(" : "rx_f16r((double)(");
        } else {
            use(g, H_BF16, 0);
            rx_sb_puts(o, g->glsl ? "rx_bf16r(float(" : exact ? "rx_bf16r_f((float)(" : "rx_bf16r((double)(");
        }
        rxi_cg_expr(g, x, loc);
        rx_sb_puts(o, "))");
        return;
    }
    if (g->glsl && to == RX_DT_I64 && from == RX_DT_I32) { /* gpu_dialect.c: lavapipe */
        rx_sb_puts(o, "rx_sext(");
        rxi_cg_expr(g, x, loc);
        rx_sb_putc(o, ')');
        return;
    }
    rxi_cg_cast_open(g, rxi_cg_ctype(to));
    rxi_cg_expr(g, x, loc);
    rx_sb_puts(o, "))");
}

/* Math intrinsics: libm's float or double function by the compute type. */
static void emit_intrin(cg *g, const rx_expr *e, rx_loc loc)
{
    rx_sb *o = g->out;
    rx_dtype t = (rx_dtype)e->dtype;
    rx_intrin fn = (rx_intrin)e->u.call.fn;
    if (e->u.call.nargs != rx_intrin_arity(fn)) {
        rxi_cg_err(g, loc, "%s takes %d argument(s), found %d", rx_intrin_name(fn),
                  rx_intrin_arity(fn), e->u.call.nargs);
        rx_sb_putc(o, '0');
        return;
    }
    const rx_expr *x = e->u.call.args[0];
    if (fn == RX_FN_ABS && !rx_dtype_is_float(t)) {
        if (rx_dtype_is_uint(t)) {
            rxi_cg_expr_as(g, x, t, loc);
        } else {
            use(g, H_ABS, t);
            rx_sb_printf(o, "rx_abs_%s(", hsuffix(t));
            rxi_cg_expr_as(g, x, t, loc);
            rx_sb_putc(o, ')');
        }
        return;
    }
    if (!rx_dtype_is_float(t)) {
        rxi_cg_err(g, loc, "%s needs a float argument, found %s", rx_intrin_name(fn),
                  rx_dtype_name(t));
        rx_sb_putc(o, '0');
        return;
    }
    if (g->glsl && t == RX_DT_F64) { /* GLSL has float math only: gpu_dialect.c's GLSL_F64 */
        if (fn == RX_FN_SIN || fn == RX_FN_COS || fn == RX_FN_ERF) {
            rxi_cg_err(g, loc, "%s of f64 is not available on target vulkan (GLSL has no double "
                      "%s; exp, log, pow, tanh and sigmoid of f64 are): compute it in f32",
                      rx_intrin_name(fn), rx_intrin_name(fn));
            rx_sb_putc(o, '0');
            return;
        }
        if (fn == RX_FN_EXP || fn == RX_FN_SIGMOID || fn == RX_FN_LOG || fn == RX_FN_TANH ||
            fn == RX_FN_POW)
            use(g, H_F64MATH, 0);
    }
    const char *f = t == RX_DT_F64 ? "" : "f";     /* libm suffix */
    const char *one = t == RX_DT_F64 ? "1.0" : "1.0f";
    /* exp, erf, tanh, log in float: the prelude's vectorizable versions
       (relax/codegen_math.h), else libm */
    const char *ex = t != RX_DT_F64 ? "rx_expf" : g->glsl ? "rx_dexp" : "exp";
    bool own = t != RX_DT_F64 && (fn == RX_FN_EXP || fn == RX_FN_SIGMOID || fn == RX_FN_ERF ||
                                  fn == RX_FN_TANH || fn == RX_FN_LOG);
    if (own && (fn == RX_FN_EXP || fn == RX_FN_SIGMOID)) use(g, H_EXPF, 0);
    if (own && fn == RX_FN_ERF) use(g, H_ERFF, 0);
    if (own && fn == RX_FN_TANH) use(g, H_TANHF, 0);
    if (own && fn == RX_FN_LOG) use(g, H_LOGF, 0);
    round_open(g, t);
    switch (fn) {
    case RX_FN_RSQRT: rx_sb_printf(o, "(%s / sqrt%s(", one, f); break;
    case RX_FN_SIGMOID: rx_sb_printf(o, "(%s / (%s + %s(-(", one, one, ex); break;
    case RX_FN_EXP: rx_sb_printf(o, "%s(", ex); break;
    case RX_FN_ERF: case RX_FN_TANH: case RX_FN_LOG:
        rx_sb_printf(o, "%s%s%s(", own ? "rx_" : g->glsl && t == RX_DT_F64 ? "rx_d" : "",
                     rx_intrin_name(fn), f);
        break;
    case RX_FN_POW:
        rx_sb_printf(o, "%spow%s(", g->glsl && t == RX_DT_F64 ? "rx_d" : "", f);
        break;
    case RX_FN_ABS: rx_sb_printf(o, "fabs%s(", f); break;
    case RX_FN_ROUND: rx_sb_printf(o, "nearbyint%s(", f); break;
    default: rx_sb_printf(o, "%s%s(", rx_intrin_name(fn), f); break;
    }
    rxi_cg_expr_as(g, x, t, loc);
    if (fn == RX_FN_POW) {
        rx_sb_puts(o, ", ");
        rxi_cg_expr_as(g, e->u.call.args[1], t, loc);
    }
    rx_sb_puts(o, fn == RX_FN_RSQRT ? "))" : fn == RX_FN_SIGMOID ? "))))" : ")");
    round_close(g, t);
}

static void emit_load(cg *g, const rx_expr *e, rx_loc loc)
{
    const rx_buffer *b = e->u.load.buf;
    const cg_sym *s = rxi_cg_lookup(g, b);
    if (!s || !s->dims) {
        rxi_cg_err(g, loc, "buffer \"%s\" is not in scope", b ? b->name : "?");
        rx_sb_putc(g->out, '0');
        return;
    }
    rx_dtype t = (rx_dtype)b->dtype;
    const char *dec = t == RX_DT_F16 ? "rx_h2f(" : t == RX_DT_BF16 ? "rx_bf2f(" : "";
    if (t == RX_DT_F16) use(g, H_F16, 0);
    if (t == RX_DT_BF16) use(g, H_BF16, 0);
    rx_sb_puts(g->out, dec);
    if (s->scalar) { /* c_kernel.c: loaded at entry, so a select of it vectorizes */
        rx_sb_printf(g->out, "%s_s", s->name);
        if (*dec) rx_sb_putc(g->out, ')');
        return;
    }
    rxi_cg_sub_open(g, s);
    rxi_cg_index(g, s, e->u.load.idx, e->u.load.nidx, loc);
    rxi_cg_sub_close(g, s);
    if (*dec) rx_sb_putc(g->out, ')');
}

/* ---------------------------------------------------------------- expressions */

/* True when select arm e may be evaluated whatever the condition: it reads no buffer
 * element (a 0-d buffer's one element aside: always there) and divides no integer
 * (x / 0 is undefined in C; a float one is inf or NaN under IEEE, never a trap the
 * kernels enable). A float select of two such arms is emitted as rx_sel_f32(c, a, b),
 * both arms computed and the result picked on the bits: gcc does not if-convert
 * `c ? a : b` when an arm may trap under the default trapping math (a division, a
 * comparison; it sinks the arm's work into the branch), so a loop with such a select
 * stayed scalar. An arm that loads (a padding guard's x[i - pad]) keeps the branch;
 * compiler/pass/schedule_rows.c binds the loads of arms it proves in bounds to LETs
 * first (a masked softmax's where(mask, scores / c, lo)). Same values either way. */
static bool eager_arm(const rx_expr *e)
{
    if (!e) return true;
    if (e->kind == RX_E_LOAD && e->u.load.nidx > 0) return false;
    if ((e->kind == RX_E_DIV || e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD) &&
        !rx_dtype_is_float((rx_dtype)e->dtype))
        return false;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!eager_arm(rx_expr_child(e, i))) return false;
    return true;
}

void rxi_cg_expr(cg *g, const rx_expr *e, rx_loc loc)
{
    rx_sb *o = g->out;
    rx_dtype t = (rx_dtype)e->dtype;
    const rx_expr *a = e->u.op.a, *b = e->u.op.b;
    switch ((rx_ekind)e->kind) {
    case RX_E_INT: emit_int_lit(g, e->u.ival, t); return;
    case RX_E_FLOAT: emit_float_lit(g, e->u.fval, t); return;
    case RX_E_VAR: {
        const cg_sym *s = rxi_cg_lookup(g, e->u.var);
        if (!s || s->dims) {
            rxi_cg_err(g, loc, "variable \"%s\" is not in scope", e->u.var->name);
            rx_sb_putc(o, '0');
            return;
        }
        rx_sb_puts(o, s->name);
        return;
    }
    case RX_E_ADD: case RX_E_SUB: case RX_E_MUL: case RX_E_DIV:
    case RX_E_SHL: case RX_E_SHR: case RX_E_BITAND: case RX_E_BITOR: case RX_E_BITXOR:
        if (t == RX_DT_BOOL) { /* & | ^ on 0/1 values */
            rx_sb_putc(o, '(');
            rxi_cg_expr_as(g, a, t, loc);
            rx_sb_printf(o, " %s ", rx_ekind_symbol((rx_ekind)e->kind));
            rxi_cg_expr_as(g, b, t, loc);
            rx_sb_putc(o, ')');
            return;
        }
        emit_arith(g, (rx_ekind)e->kind, a, b, t, loc);
        return;
    case RX_E_FLOORDIV:
    case RX_E_FLOORMOD:
        if (emit_pow2_divmod(g, (rx_ekind)e->kind, a, b, t, loc)) return;
        if (emit_lit_divmod(g, (rx_ekind)e->kind, a, b, t, loc)) return;
        if (e->kind == RX_E_FLOORDIV) emit_call2(g, H_FLOORDIV, "floordiv", a, b, t, loc);
        else emit_call2(g, H_FLOORMOD, "floormod", a, b, t, loc);
        return;
    case RX_E_MIN: emit_call2(g, H_MIN, "min", a, b, t, loc); return;
    case RX_E_MAX: emit_call2(g, H_MAX, "max", a, b, t, loc); return;
    case RX_E_EQ: case RX_E_NE: case RX_E_LT: case RX_E_LE: case RX_E_GT: case RX_E_GE:
    case RX_E_AND: case RX_E_OR: {
        rx_dtype ot = (rx_dtype)a->dtype;
        bool logic = e->kind == RX_E_AND || e->kind == RX_E_OR;
        if (logic) ot = RX_DT_BOOL;
        rx_sb_puts(o, g->glsl ? "int(" : "(");
        rxi_cg_expr_as(g, a, ot, loc);
        if (g->glsl && logic) rx_sb_puts(o, " != 0");
        rx_sb_printf(o, " %s ", rx_ekind_symbol((rx_ekind)e->kind));
        rxi_cg_expr_as(g, b, ot, loc);
        if (g->glsl && logic) rx_sb_puts(o, " != 0");
        rx_sb_putc(o, ')');
        return;
    }
    case RX_E_NOT:
        rx_sb_puts(o, g->glsl ? "int(0 == " : "(!");
        rxi_cg_expr_as(g, a, RX_DT_BOOL, loc);
        rx_sb_putc(o, ')');
        return;
    case RX_E_NEG:
    case RX_E_BITNOT: {
        const char *tok = e->kind == RX_E_NEG ? "-" : "~";
        if (t == RX_DT_BOOL) { /* -b == b and ~b == !b modulo 2 */
            rx_sb_puts(o, e->kind == RX_E_NEG ? "(" : g->glsl ? "int(0 == " : "(!");
            rxi_cg_expr_as(g, a, t, loc);
            rx_sb_putc(o, ')');
        } else if (is_narrow_int(t)) {
            if (g->glsl) {
                rx_sb_printf(o, "%s(%s%s(", rxi_cg_ctype(t), tok, wide(t));
                rxi_cg_expr_as(g, a, t, loc);
                rx_sb_puts(o, ")))");
            } else {
                rx_sb_printf(o, "((%s)%s(%s)", rxi_cg_ctype(t), tok, wide(t));
                rxi_cg_expr_as(g, a, t, loc);
                rx_sb_putc(o, ')');
            }
        } else {
            rx_sb_printf(o, "(%s", tok);
            rxi_cg_expr_as(g, a, t, loc);
            rx_sb_putc(o, ')');
        }
        return;
    }
    case RX_E_SELECT:
        if (g->cpu && (t == RX_DT_F32 || t == RX_DT_F64) && eager_arm(b) &&
            eager_arm(e->u.op.c)) {
            use(g, H_SEL, t);
            rx_sb_printf(o, "rx_sel_%s(", hsuffix(t));
            rxi_cg_expr_as(g, a, RX_DT_BOOL, loc);
            rx_sb_puts(o, ", ");
            rxi_cg_expr_as(g, b, t, loc);
            rx_sb_puts(o, ", ");
            rxi_cg_expr_as(g, e->u.op.c, t, loc);
            rx_sb_putc(o, ')');
            return;
        }
        rx_sb_putc(o, '(');
        rxi_cg_expr_as(g, a, RX_DT_BOOL, loc);
        rx_sb_puts(o, g->glsl ? " != 0 ? " : " ? ");
        rxi_cg_expr_as(g, b, t, loc);
        rx_sb_puts(o, " : ");
        rxi_cg_expr_as(g, e->u.op.c, t, loc);
        rx_sb_putc(o, ')');
        return;
    case RX_E_CAST: emit_cast(g, t, a, loc); return;
    case RX_E_LOAD: emit_load(g, e, loc); return;
    case RX_E_CALL: emit_intrin(g, e, loc); return;
    default:
        rxi_cg_err(g, loc, "unknown expression kind %d", e->kind);
        rx_sb_putc(o, '0');
        return;
    }
}

/* ---------------------------------------------------------------- GLSL spellings */

void rxi_cg_cast_open(cg *g, const char *type)
{
    rx_sb_printf(g->out, g->glsl ? "%s((" : "((%s)(", type);
}

void rxi_cg_i64_lit(const cg *g, rx_sb *o, int64_t v)
{
    rx_sb_printf(o, g->glsl ? "%lldl" : "INT64_C(%lld)", (long long)v);
}

void rxi_cg_sub_open(cg *g, const cg_sym *s)
{
    if (s->view) rx_sb_printf(g->out, "%s_b[uint(%s_o + ", s->name, s->name);
    else rx_sb_printf(g->out, g->glsl ? "%s[uint(" : "%s[", s->name);
}

void rxi_cg_sub_close(cg *g, const cg_sym *s)
{
    rx_sb_puts(g->out, g->glsl || s->view ? ")]" : "]");
}

void rxi_cg_expr_as(cg *g, const rx_expr *e, rx_dtype t, rx_loc loc)
{
    if ((rx_dtype)e->dtype == t || t == RX_DT_UNKNOWN) rxi_cg_expr(g, e, loc);
    else emit_cast(g, t, e, loc);
}

/* Index k of an access to buffer b. An index read from data (a LOAD inside it: take,
 * a gather written as a loop function) is checked against the extent: rx_chk records
 * the first one outside [0, extent) in the kernel's rx_ke, gives 0 in its place, and
 * the kernel returns RX_KERNEL_EINDEX at its end (c_kernel.c, vm.h). Indices made of
 * loop variables and sizes are in range by construction and stay unchecked. */
static void index_at(cg *g, const cg_sym *b, rx_expr *const *idx, int k, rx_loc loc)
{
    if (!rx_expr_loads_buf(idx[k], NULL)) {
        rxi_cg_expr_as(g, idx[k], RX_DT_I64, loc);
        return;
    }
    use(g, H_CHECK, 0);
    g->nchecks++;
    rx_sb_puts(g->out, "rx_chk(");
    rxi_cg_expr_as(g, idx[k], RX_DT_I64, loc);
    rx_sb_printf(g->out, ", %s, &rx_ke, \"", b->dims[k]);
    for (const char *c = ((const rx_buffer *)b->key)->name; *c; c++) /* a C string literal */
        rx_sb_putc(g->out, isalnum((unsigned char)*c) || *c == '_' || *c == '.' ? *c : '?');
    rx_sb_printf(g->out, "\", %d)", k);
}

void rxi_cg_index(cg *g, const cg_sym *b, rx_expr *const *idx, int nidx, rx_loc loc)
{
    rx_sb *o = g->out;
    if (nidx != b->ndim) {
        rxi_cg_err(g, loc, "buffer has %d dimension(s), indexed with %d", b->ndim, nidx);
        rx_sb_putc(o, '0');
        return;
    }
    if (nidx == 0) {
        rx_sb_putc(o, '0');
        return;
    }
    /* Horner form: ((i0 * d1 + i1) * d2 + i2) */
    for (int k = 1; k < nidx; k++) rx_sb_putc(o, '(');
    index_at(g, b, idx, 0, loc);
    for (int k = 1; k < nidx; k++) {
        rx_sb_printf(o, " * %s + ", b->dims[k]);
        index_at(g, b, idx, k, loc);
        rx_sb_putc(o, ')');
    }
}

void rxi_cg_encode(cg *g, rx_dtype t, const rx_expr *e, rx_loc loc)
{
    rx_sb *o = g->out;
    if (t == RX_DT_F16 || t == RX_DT_BF16) {
        use(g, t == RX_DT_F16 ? H_F16 : H_BF16, 0);
        rx_sb_puts(o, t == RX_DT_F16 ? "rx_f2h(" : "rx_f2bf(");
        rxi_cg_expr_as(g, e, t, loc);
        rx_sb_putc(o, ')');
    } else if (t == RX_DT_BOOL) {
        rxi_cg_cast_open(g, "uint8_t");
        rxi_cg_expr_as(g, e, t, loc);
        rx_sb_puts(o, "))");
    } else {
        rxi_cg_expr_as(g, e, t, loc);
    }
}

/* ---------------------------------------------------------------- prelude */

static const char PRELUDE_HEAD[] =
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "/* Expressions come from user modules: tautologies, constant shifts and overflow in\n"
    "   them are the module's business, not warnings about this file. */\n"
    "#if defined(__clang__)\n"
    "#pragma clang diagnostic ignored \"-Wtautological-compare\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-count-overflow\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-count-negative\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-negative-value\"\n"
    "#pragma clang diagnostic ignored \"-Winteger-overflow\"\n"
    "#pragma clang diagnostic ignored \"-Wconstant-conversion\"\n"
    "#pragma clang diagnostic ignored \"-Wpass-failed\" /* an omp simd loop left scalar */\n"
    "#elif defined(__GNUC__)\n"
    "#pragma GCC diagnostic ignored \"-Wtype-limits\"\n"
    "#pragma GCC diagnostic ignored \"-Wtautological-compare\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-count-overflow\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-count-negative\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-negative-value\"\n"
    "#pragma GCC diagnostic ignored \"-Woverflow\"\n"
    "#endif\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define RX_IVDEP _Pragma(\"GCC ivdep\")\n"
    "#else\n"
    "#define RX_IVDEP\n"
    "#endif\n"
    "/* Built with OpenMP (-fopenmp), parallel loops share their iterations among threads\n"
    "   and vectorized ones are OpenMP simd loops; without it both run serially. */\n"
    "#if defined(_OPENMP)\n"
    "#define RX_PARALLEL _Pragma(\"omp parallel for schedule(static)\")\n"
    "#define RX_PRAGMA(x) _Pragma(#x)\n"
    "#define RX_PARALLEL_IF(c) RX_PRAGMA(omp parallel for schedule(static) if(c))\n"
    "#define RX_SIMD _Pragma(\"omp simd\")\n"
    "#else\n"
    "#define RX_PARALLEL\n"
    "#define RX_PARALLEL_IF(c)\n"
    "#define RX_SIMD RX_IVDEP\n"
    "#endif\n"
    "#if defined(__GNUC__)\n"
    "#define RX_UNROLL _Pragma(\"GCC unroll 8\")\n"
    "#define RX_HELPER static inline __attribute__((unused))\n"
    "/* the math functions: inlined into simd loops whatever their size, or the loop\n"
    "   stays scalar around a call (gcc's early inliner declines erf's body) */\n"
    "#define RX_MATH_HELPER static inline __attribute__((unused, always_inline))\n"
    "#else\n"
    "#define RX_UNROLL\n"
    "#define RX_HELPER static inline\n"
    "#define RX_MATH_HELPER static inline\n"
    "#endif\n"
    "\n";

static const char PRELUDE_ROUND[] =
    "/* x rounded to nearest even with p significant bits, exponent >= emin (subnormals\n"
    "   below), overflowing to infinity past maxv. */\n"
    "RX_HELPER double rx_roundp(double x, int p, int emin, double maxv)\n"
    "{\n"
    "    if (x != x || x == 0.0 || isinf(x)) return x;\n"
    "    int e = ilogb(x);\n"
    "    if (e < emin) e = emin;\n"
    "    double s = ldexp(1.0, p - 1 - e);\n"
    "    double r = nearbyint(x * s) / s;\n"
    "    return fabs(r) > maxv ? copysign((double)INFINITY, x) : r;\n"
    "}\n";

static const char PRELUDE_F16[] =
    "#if defined(__FLT16_MAX__) && !defined(RX_NO_FLOAT16)\n"
    "RX_HELPER float rx_f16r(double x) { return (float)(_Float16)x; }\n"
    "RX_HELPER float rx_h2f(uint16_t h) { _Float16 v; memcpy(&v, &h, 2); return (float)v; }\n"
    "RX_HELPER uint16_t rx_f2h(float f)\n"
    "{\n"
    "    _Float16 v = (_Float16)f;\n"
    "    uint16_t h;\n"
    "    memcpy(&h, &v, 2);\n"
    "    return h;\n"
    "}\n"
    "#else\n"
    "RX_HELPER float rx_f16r(double x) { return (float)rx_roundp(x, 11, -14, 65504.0); }\n"
    "RX_HELPER float rx_h2f(uint16_t h)\n"
    "{\n"
    "    int e = (h >> 10) & 0x1f, m = h & 0x3ff;\n"
    "    float v = e == 0 ? ldexpf((float)m, -24)\n"
    "            : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);\n"
    "    return (h & 0x8000) ? -v : v;\n"
    "}\n"
    "RX_HELPER uint16_t rx_f2h(float f)\n"
    "{\n"
    "    double x = rx_roundp(f, 11, -14, 65504.0), a = fabs(x);\n"
    "    uint16_t s = signbit(x) ? 0x8000 : 0;\n"
    "    if (a != a) return (uint16_t)(s | 0x7e00);\n"
    "    if (isinf(a)) return (uint16_t)(s | 0x7c00);\n"
    "    if (a < 0x1p-14) return (uint16_t)(s | (uint16_t)(a * 0x1p24));\n"
    "    int e = ilogb(a);\n"
    "    return (uint16_t)(s | ((e + 15) << 10) | (int)(a * ldexp(1.0, 10 - e) - 1024.0));\n"
    "}\n"
    "#endif\n";

static const char PRELUDE_BF16[] =
    "RX_HELPER float rx_bf2f(uint16_t h)\n"
    "{\n"
    "    uint32_t u = (uint32_t)h << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &u, 4);\n"
    "    return f;\n"
    "}\n"
    "RX_HELPER uint16_t rx_f2bf(float f)\n"
    "{\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &f, 4);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "RX_HELPER float rx_bf16r_f(float f) { return rx_bf2f(rx_f2bf(f)); }\n"
    "RX_HELPER float rx_bf16r(double x) { return (float)rx_roundp(x, 8, -126, 0x1.fep127); }\n";

static const char PRELUDE_BITS[] =
    "RX_HELPER double rx_bits2d(int64_t v) { double d; memcpy(&d, &v, 8); return d; }\n";

static const char PRELUDE_ALLOC[] =
    "RX_HELPER void *rx_alloc(int64_t n, size_t esz)\n"
    "{\n"
    "    if (n < 0 || (uint64_t)n > (SIZE_MAX - 1) / esz) return NULL;\n"
    "    return malloc(n ? (size_t)n * esz : 1);\n"
    "}\n";

/* The index check (c_expr.c index_at; the record is vm.h's rx_vm_kernel_err): the
 * first index outside [0, extent) wins the record, the access reads 0 instead, and
 * the kernel returns RX_KERNEL_EINDEX at its end with the record copied to
 * data[nbufs] when the caller passed one there. */
static const char PRELUDE_CHECK[] =
    "typedef struct rx_kerr { int32_t state, axis; int64_t index, extent; const char *buf; } rx_kerr;\n"
    "RX_HELPER int64_t rx_chk(int64_t v, int64_t d, rx_kerr *e, const char *buf, int32_t axis)\n"
    "{\n"
    "    if (__builtin_expect((uint64_t)v < (uint64_t)d, 1)) return v;\n"
    "    int32_t z = 0;\n"
    "    if (__atomic_compare_exchange_n(&e->state, &z, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {\n"
    "        e->axis = axis;\n"
    "        e->index = v;\n"
    "        e->extent = d;\n"
    "        e->buf = buf;\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "RX_HELPER int32_t rx_kfail(void *const *data, int nbufs, const rx_kerr *e)\n"
    "{\n"
    "    rx_kerr *out = (rx_kerr *)data[nbufs];\n"
    "    if (out) *out = *e;\n"
    "    return 2; /* RX_KERNEL_EINDEX */\n"
    "}\n";

/* Overflow-checked size arithmetic (c_check.c): sets *o and gives 0 on overflow. */
static const char PRELUDE_CKARITH[] =
    "RX_HELPER int64_t rx_ckadd(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_add_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n"
    "RX_HELPER int64_t rx_cksub(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_sub_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n"
    "RX_HELPER int64_t rx_ckmul(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_mul_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n";

/* The same in GLSL, whose % of negative operands is undefined: the remainder is
 * a - q * b (q truncated, as / is); - wraps. */
static const char PRELUDE_FLOOR_I64_GLSL[] =
    "RX_HELPER int64_t rx_floordiv_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0l) return 0l;\n"
    "    if (b == -1l) return -a;\n"
    "    int64_t q = a / b;\n"
    "    return (a - q * b != 0l && ((a < 0l) != (b < 0l))) ? q - 1l : q;\n"
    "}\n"
    "RX_HELPER int64_t rx_floormod_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0l || b == -1l) return 0l;\n"
    "    return a - rx_floordiv_i64(a, b) * b;\n"
    "}\n";

static const char PRELUDE_FLOOR_I64[] =
    "RX_HELPER int64_t rx_floordiv_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0) return 0;\n"
    "    if (b == -1) return (int64_t)(0u - (uint64_t)a);\n"
    "    int64_t q = a / b;\n"
    "    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "RX_HELPER int64_t rx_floormod_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0 || b == -1) return 0;\n"
    "    int64_t r = a % b;\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n";

/* The kernel object links libgomp, which the runtime dlopens with it. Unloading
   libgomp under its idle thread pool (the last dlclose of a kernel object) would
   strand those threads in unmapped code, so the first kernel object pins it. */
static const char PRELUDE_OMP[] =
    "#if defined(_OPENMP) && defined(__linux__) && !defined(__clang__)\n"
    "#include <dlfcn.h>\n"
    "#if defined(RTLD_NODELETE) && defined(RTLD_NOLOAD)\n"
    "__attribute__((constructor)) static void rx_pin_openmp(void)\n"
    "{\n"
    "    (void)dlopen(\"libgomp.so.1\", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);\n"
    "}\n"
    "#endif\n"
    "#endif\n";

/* ISA versions of kernels (c_kernel.c): gcc 12 or later on x86-64 compiles them for
   x86-64-v4 (AVX-512) and x86-64-v3 (AVX2, FMA) besides the baseline, and the kernel
   calls the best one this CPU runs. The versions of full mode (O3: RX_TARGET_V4/V3)
   may contract a * b + c into one fused multiply-add (fp-contract=fast: one rounding
   instead of two, so never less accurate, and half the instructions of a tile's
   update); those of exact mode (O2: RX_TARGET_V4_EXACT/V3_EXACT) do not
   (fp-contract=off, spelled out so that a build without -std=c11 keeps it), so they
   only run the same operations in wider registers and write the baseline's bits. The
   baseline, like every other kernel, keeps gcc's ISO C default of no contraction. No
   reassociation anywhere (no -ffast-math): integer and f16/bf16 results (rounded
   after every operation, which leaves nothing to fuse) are the same bits in every
   version. */
static const char PRELUDE_ISA[] =
    "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && \\\n"
    "    !defined(RX_NO_ISA_VERSIONS)\n"
    "#define RX_ISA_VERSIONS 1\n"
    "#define RX_TARGET_V4 __attribute__((target(\"arch=x86-64-v4\"), optimize(\"fp-contract=fast\")))\n"
    "#define RX_TARGET_V3 __attribute__((target(\"arch=x86-64-v3\"), optimize(\"fp-contract=fast\")))\n"
    "#define RX_TARGET_V4_EXACT __attribute__((target(\"arch=x86-64-v4\"), optimize(\"fp-contract=off\")))\n"
    "#define RX_TARGET_V3_EXACT __attribute__((target(\"arch=x86-64-v3\"), optimize(\"fp-contract=off\")))\n"
    "/* The best ISA level of this CPU (4, 3, else 1), set once when the object is loaded;\n"
    "   RX_KERNEL_ISA=base or v3 in the environment caps it. */\n"
    "static int rx_isa = 1;\n"
    "__attribute__((constructor)) static void rx_isa_init(void)\n"
    "{\n"
    "    __builtin_cpu_init();\n"
    "    int level = __builtin_cpu_supports(\"x86-64-v4\") ? 4 : __builtin_cpu_supports(\"x86-64-v3\") ? 3 : 1;\n"
    "    const char *cap = getenv(\"RX_KERNEL_ISA\");\n"
    "    if (cap && !strcmp(cap, \"base\")) level = 1;\n"
    "    else if (cap && !strcmp(cap, \"v3\") && level > 3) level = 3;\n"
    "    rx_isa = level;\n"
    "}\n"
    "#else\n"
    "#define RX_ISA_VERSIONS 0\n"
    "#endif\n";

/* exp in float: relax/codegen_math.h's rx_expf_ref as text (one source for the kernels
   and the compiler's loop-function evaluator; the header says how and how accurate). */
static const char PRELUDE_EXPF[] = RX_MATH_STR(RX_EXPF_SOURCE(RX_MATH_HELPER, rx_expf)) "\n";
static const char PRELUDE_ERFF[] = RX_MATH_STR(RX_ERFF_SOURCE(RX_MATH_HELPER, rx_erff)) "\n";
static const char PRELUDE_TANHF[] = RX_MATH_STR(RX_TANHF_SOURCE(RX_MATH_HELPER, rx_tanhf)) "\n";
static const char PRELUDE_LOGF[] = RX_MATH_STR(RX_LOGF_SOURCE(RX_MATH_HELPER, rx_logf)) "\n";

static bool needs(const cg *g, cg_helper h, rx_dtype t)
{
    return (g->need[h] >> (unsigned)t) & 1u;
}

void rxi_cg_prelude(const cg *g, rx_sb *out)
{
    rx_sb_puts(out, PRELUDE_HEAD);
    bool f16 = g->need[H_F16] != 0, bf16 = g->need[H_BF16] != 0;
    if (f16 || bf16) rx_sb_puts(out, PRELUDE_ROUND);
    if (f16) rx_sb_puts(out, PRELUDE_F16);
    if (bf16) rx_sb_puts(out, PRELUDE_BF16);
    if (g->need[H_BITS]) rx_sb_puts(out, PRELUDE_BITS);
    if (g->need[H_ALLOC]) rx_sb_puts(out, PRELUDE_ALLOC);
    if (g->need[H_OMP]) rx_sb_puts(out, PRELUDE_OMP);
    if (g->need[H_ISA]) rx_sb_puts(out, PRELUDE_ISA);
    if (g->need[H_EXPF]) rx_sb_puts(out, PRELUDE_EXPF);
    if (g->need[H_ERFF]) rx_sb_puts(out, PRELUDE_ERFF);
    if (g->need[H_TANHF]) rx_sb_puts(out, PRELUDE_TANHF);
    if (g->need[H_LOGF]) rx_sb_puts(out, PRELUDE_LOGF);
    if (g->need[H_CHECK]) rx_sb_puts(out, PRELUDE_CHECK);
    if (g->need[H_CKARITH]) rx_sb_puts(out, PRELUDE_CKARITH);
    rxi_cg_prelude_ops(g, out);
}

void rxi_cg_prelude_ops(const cg *g, rx_sb *out)
{
    bool signed_floor = false;
    for (int t = RX_DT_I8; t <= RX_DT_I64; t++)
        if (needs(g, H_FLOORDIV, (rx_dtype)t) || needs(g, H_FLOORMOD, (rx_dtype)t))
            signed_floor = true;
    if (signed_floor) rx_sb_puts(out, g->glsl ? PRELUDE_FLOOR_I64_GLSL : PRELUDE_FLOOR_I64);
    for (int ti = 1; ti < RX_DT_COUNT; ti++) {
        rx_dtype t = (rx_dtype)ti;
        const char *ct = rxi_cg_ctype(t), *sf = hsuffix(t);
        for (int h = H_FLOORDIV; h <= H_FLOORMOD; h++) {
            if (!needs(g, (cg_helper)h, t)) continue;
            const char *nm = h == H_FLOORDIV ? "floordiv" : "floormod";
            if (rx_dtype_is_uint(t) && g->glsl)
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return b != %s(0) ? a %c b : %s(0); }\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? '/' : '%', ct);
            else if (rx_dtype_is_uint(t))
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return (%s)(b ? a %c b : 0); }\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? '/' : '%');
            else if (t != RX_DT_I64 && g->glsl) /* in 32 bits (lavapipe's 64-bit path
                                                    from int32 gave truncated quotients) */
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b)\n{\n"
                             "    int x = int(a), y = int(b);\n"
                             "    if (y == 0 || y == -1) return %s(y == 0 ? 0 : %s);\n"
                             "    int q = x / y, r = x - q * y;\n"
                             "    bool fix = r != 0 && ((x < 0) != (y < 0));\n"
                             "    return %s(%s);\n}\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? "-x" : "0", ct,
                             h == H_FLOORDIV ? "fix ? q - 1 : q" : "fix ? r + y : r");
            else if (t != RX_DT_I64)
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return (%s)rx_%s_i64(a, b); }\n",
                             ct, nm, sf, ct, ct, ct, nm);
        }
        for (int h = H_MIN; h <= H_MAX; h++) {
            if (!needs(g, (cg_helper)h, t)) continue;
            const char *nm = h == H_MIN ? "min" : "max", *op = h == H_MIN ? "<" : ">";
            if (rx_dtype_is_float(t)) /* NaN propagates, as in NumPy's minimum/maximum; two
                                         selects, not `a < b || a != a` (a branch gcc kept:
                                         a clip of ReLU output, zeros every other element,
                                         mispredicted: 4.7x slower, scalar loop) */
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { %s r = a %s b ? a : b; return a != a ? a : r; }\n",
                             ct, nm, sf, ct, ct, ct, op);
            else
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return a %s b ? a : b; }\n",
                             ct, nm, sf, ct, ct, op);
        }
        if (needs(g, H_SEL, t)) { /* eager_arms: on the bits, no branch to if-convert */
            const char *ut = t == RX_DT_F32 ? "uint32_t" : "uint64_t";
            int nb = t == RX_DT_F32 ? 4 : 8;
            rx_sb_printf(out, "RX_HELPER %s rx_sel_%s(int c, %s a, %s b) { %s x, y, m = (%s)0 - (%s)(c != 0); "
                         "memcpy(&x, &a, %d); memcpy(&y, &b, %d); x = (x & m) | (y & ~m); memcpy(&a, &x, %d); "
                         "return a; }\n",
                         ct, sf, ct, ct, ut, ut, ut, nb, nb, nb);
        }
        if (needs(g, H_ABS, t) && g->glsl) /* - wraps in GLSL */
            rx_sb_printf(out, "RX_HELPER %s rx_abs_%s(%s a) { return a < %s(0) ? -a : a; }\n",
                         ct, sf, ct, ct);
        else if (needs(g, H_ABS, t))
            rx_sb_printf(out, "RX_HELPER %s rx_abs_%s(%s a) { return a < 0 ? (%s)(0u - (uint64_t)a) : a; }\n",
                         ct, sf, ct, ct);
    }
    rx_sb_putc(out, '\n');
}
