/*
 * c_expr.c — scalar expressions of loop functions as C expressions.
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
 * The helpers these expressions call are recorded in cg.need; c_prelude.c defines
 * them at the top of the file.
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cgen_int.h"

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

const char *rxi_cg_hsuffix(rx_dtype t)
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
    rx_sb_printf(g->out, "rx_%s_%s(", base, rxi_cg_hsuffix(t));
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
            rx_sb_printf(o, "rx_abs_%s(", rxi_cg_hsuffix(t));
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
    if (g->glsl && t == RX_DT_F64 && /* GLSL has float math only: gpu_dialect.c's GLSL_F64 */
        (fn == RX_FN_EXP || fn == RX_FN_SIGMOID || fn == RX_FN_LOG || fn == RX_FN_TANH ||
         fn == RX_FN_POW || fn == RX_FN_SIN || fn == RX_FN_COS || fn == RX_FN_ERF))
        use(g, H_F64MATH, 0);
    const char *f = t == RX_DT_F64 ? "" : "f";     /* libm suffix */
    const char *one = t == RX_DT_F64 ? "1.0" : "1.0f";
    /* exp, erf, tanh, log, sin, cos in float: the prelude's vectorizable versions
       (relax/codegen_math.h; sin and cos on the CPU only: the GPU dialects
       map the other four onto their own), else libm */
    const char *ex = t != RX_DT_F64 ? "rx_expf" : g->glsl ? "rx_dexp" : "exp";
    bool own = t != RX_DT_F64 && (fn == RX_FN_EXP || fn == RX_FN_SIGMOID || fn == RX_FN_ERF ||
                                  fn == RX_FN_TANH || fn == RX_FN_LOG ||
                                  (g->cpu && (fn == RX_FN_SIN || fn == RX_FN_COS)));
    if (own && (fn == RX_FN_EXP || fn == RX_FN_SIGMOID)) use(g, H_EXPF, 0);
    if (own && fn == RX_FN_ERF) use(g, H_ERFF, 0);
    if (own && fn == RX_FN_TANH) use(g, H_TANHF, 0);
    if (own && fn == RX_FN_LOG) use(g, H_LOGF, 0);
    if (own && fn == RX_FN_SIN) use(g, H_SINF, 0);
    if (own && fn == RX_FN_COS) use(g, H_COSF, 0);
    round_open(g, t);
    switch (fn) {
    case RX_FN_RSQRT: rx_sb_printf(o, "(%s / sqrt%s(", one, f); break;
    case RX_FN_SIGMOID: rx_sb_printf(o, "(%s / (%s + %s(-(", one, one, ex); break;
    case RX_FN_EXP: rx_sb_printf(o, "%s(", ex); break;
    case RX_FN_ERF: case RX_FN_TANH: case RX_FN_LOG: case RX_FN_SIN: case RX_FN_COS:
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
            rx_sb_printf(o, "rx_sel_%s(", rxi_cg_hsuffix(t));
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

bool rxi_cg_reads_data(const cg *g, const rx_expr *x)
{
    if (x->kind == RX_E_LOAD) return true;
    if (x->kind == RX_E_VAR) {
        const cg_sym *s = rxi_cg_lookup(g, x->u.var);
        return s && s->data;
    }
    for (int i = 0; i < rx_expr_nchildren(x); i++)
        if (rxi_cg_reads_data(g, rx_expr_child(x, i))) return true;
    return false;
}

void rxi_cg_checked(cg *g, const cg_sym *b, const rx_expr *x, int k, rx_loc loc)
{
    use(g, H_CHECK, 0);
    g->nchecks++;
    rx_sb_puts(g->out, "rx_chk(");
    rxi_cg_expr_as(g, x, RX_DT_I64, loc);
    rx_sb_printf(g->out, ", %s, &rx_ke, \"", b->dims[k]);
    for (const char *c = ((const rx_buffer *)b->key)->name; *c; c++) /* a C string literal */
        rx_sb_putc(g->out, isalnum((unsigned char)*c) || *c == '_' || *c == '.' ? *c : '?');
    rx_sb_printf(g->out, "\", %d)", k);
}

/* Index k of an access to buffer b. An index read from data (a LOAD inside it: take,
 * a gather written as a loop function; or a let variable bound to such a value) is
 * checked against the extent: rx_chk records the first one outside [0, extent) in the
 * kernel's rx_ke, gives 0 in its place, and the kernel returns RX_KERNEL_EINDEX at its
 * end (c_kernel.c, vm.h). A let variable checked at its let against the same extent
 * (schedule_hoist.c's gather index hoisted out of the innermost loop: rx_chk once per
 * row instead of once per element) is not checked again. Indices made of loop
 * variables and sizes are in range by construction and stay unchecked. */
static void index_at(cg *g, const cg_sym *b, rx_expr *const *idx, int k, rx_loc loc)
{
    const rx_expr *x = idx[k];
    const cg_sym *v = x->kind == RX_E_VAR ? rxi_cg_lookup(g, x->u.var) : NULL;
    if ((v && v->chk && !strcmp(v->chk, b->dims[k])) || !rxi_cg_reads_data(g, x)) {
        rxi_cg_expr_as(g, x, RX_DT_I64, loc);
        return;
    }
    rxi_cg_checked(g, b, x, k, loc);
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
