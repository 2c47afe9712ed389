/*
 * print.c — scalar expressions as text in the relax-json grammar.
 *
 * The printed form parses back to an equal expression (rx_expr_same):
 *   - Parentheses are minimal under C-like precedence, lowest first:
 *       ||  &&  |  ^  &  == !=  < <= > >=  << >>  + -  * / // %  unary(- ! ~)  atoms
 *     Binary operators are left-associative, so a right operand of equal precedence
 *     is parenthesized (`a - (b - c)`, `a + (b + c)`). Where C and Python-like
 *     grammars disagree — a comparison inside a comparison (chaining) or inside a
 *     bitwise operator — parentheses are always written, so either reading agrees.
 *     `-(-x)` keeps its parentheses so no `--` token appears.
 *   - Literals: a bare literal takes the dtype of the other operand of an infix
 *     operator (and of min, max, pow, and the other branch of select), else i64
 *     (integers) or f32 (floats). A literal whose dtype that rule would not reproduce
 *     is written as a cast, `i32(3)`, which reads back as a typed literal. Bool
 *     literals are always `bool(1)`; the operand literal of a cast node or
 *     of unary minus is always typed (`f32(i64(3))`, `-i64(3)`), since `f32(3)` and
 *     `-3` read back as single literals.
 *   - Floats print with the fewest significant digits that read back to the same
 *     double, always with a '.' or an exponent ("1.0", "1e-05").
 * Cost: linear in the expression size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith_int.h"
#include "relax/ir.h"

enum {
    P_OR = 1, P_AND, P_BOR, P_BXOR, P_BAND, P_EQ, P_REL, P_SHIFT, P_ADD, P_MUL,
    P_UNARY, P_ATOM
};


static int binop_prec(int k)
{
    switch (k) {
    case RX_E_OR: return P_OR;
    case RX_E_AND: return P_AND;
    case RX_E_BITOR: return P_BOR;
    case RX_E_BITXOR: return P_BXOR;
    case RX_E_BITAND: return P_BAND;
    case RX_E_EQ: case RX_E_NE: return P_EQ;
    case RX_E_LT: case RX_E_LE: case RX_E_GT: case RX_E_GE: return P_REL;
    case RX_E_SHL: case RX_E_SHR: return P_SHIFT;
    case RX_E_ADD: case RX_E_SUB: return P_ADD;
    case RX_E_MUL: case RX_E_DIV: case RX_E_FLOORDIV: case RX_E_FLOORMOD: return P_MUL;
    default: return 0;
    }
}

static bool is_lit(const rx_expr *e) { return e->kind == RX_E_INT || e->kind == RX_E_FLOAT; }

/* The dtype a bare literal of e's kind gets when nothing else types it. */
static int lit_default(const rx_expr *e) { return e->kind == RX_E_FLOAT ? RX_DT_F32 : RX_DT_I64; }

/* True when e prints as a bare literal under expected dtype `expect`. */
static bool bare_lit(const rx_expr *e, int expect) { return is_lit(e) && e->dtype == expect; }

/* Precedence of e as printed (a literal printed as a cast is an atom). */
static int prec_of(const rx_expr *e, int expect)
{
    switch (e->kind) {
    case RX_E_INT:
        return bare_lit(e, expect) && e->u.ival < 0 ? P_UNARY : P_ATOM;
    case RX_E_FLOAT:
        return bare_lit(e, expect) && signbit(e->u.fval) ? P_UNARY : P_ATOM;
    case RX_E_NEG: case RX_E_NOT: case RX_E_BITNOT: return P_UNARY;
    default: {
        int p = binop_prec(e->kind);
        return p ? p : P_ATOM;
    }
    }
}

/* Expected literal dtype for an operand of an infix operator whose other operand is
 * `other`: the rule of the format. */
static int expect_infix(const rx_expr *lit, const rx_expr *other)
{
    return is_lit(other) ? lit_default(lit) : other->dtype;
}

static void put_float(rx_sb *out, double v)
{
    char buf[40];
    if (isnan(v)) { rx_sb_puts(out, "nan"); return; }
    if (isinf(v)) { rx_sb_puts(out, v < 0 ? "-inf" : "inf"); return; }
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* %g writes 100 as 1e+02 at precision 1: integral values below 1e17 get all
     * their digits instead. */
    char eb[40];
    snprintf(eb, sizeof eb, "%.16e", v);
    int exp10 = atoi(strchr(eb, 'e') + 1);
    if (strchr(buf, 'e') && exp10 >= 0 && exp10 < 17 && prec <= exp10 + 1) {
        snprintf(buf, sizeof buf, "%.*g", exp10 + 1, v);
        if (strtod(buf, NULL) != v || strchr(buf, 'e')) snprintf(buf, sizeof buf, "%.*g", prec, v);
    }
    rx_sb_puts(out, buf);
    if (!strpbrk(buf, ".e")) rx_sb_puts(out, ".0");
}

static void put_literal(const rx_expr *e, int expect, rx_sb *out)
{
    bool cast = e->dtype != expect || e->dtype == RX_DT_BOOL;
    if (cast) rx_sb_printf(out, "%s(", rx_dtype_name((rx_dtype)e->dtype));
    if (e->kind == RX_E_INT) rx_sb_printf(out, "%lld", (long long)e->u.ival);
    else put_float(out, e->u.fval);
    if (cast) rx_sb_putc(out, ')');
}

static void emit(const rx_expr *e, int expect, rx_sb *out);

static bool is_cmp(int k) { return k >= RX_E_EQ && k <= RX_E_GE; }
static bool is_bitwise(int k) { return k == RX_E_BITAND || k == RX_E_BITOR || k == RX_E_BITXOR; }

/* Emits operand x of parent kind `pk` (precedence pp) with parentheses if needed. */
static void emit_operand(int pk, int pp, const rx_expr *x, int expect, bool right, rx_sb *out)
{
    int cp = prec_of(x, expect);
    bool paren = cp < pp || (cp == pp && right);
    if ((is_cmp(pk) || is_bitwise(pk)) && is_cmp(x->kind)) paren = true;
    if (pk == RX_E_NEG && x->kind == RX_E_NEG) paren = true;
    if (paren) rx_sb_putc(out, '(');
    emit(x, expect, out);
    if (paren) rx_sb_putc(out, ')');
}

/* name(a, b) with the two-operand literal rule of expect_either. */
static void emit_call2(const char *name, const rx_expr *a, const rx_expr *b, rx_sb *out)
{
    rx_sb_printf(out, "%s(", name);
    emit(a, expect_infix(a, b), out);
    rx_sb_puts(out, ", ");
    emit(b, expect_infix(b, a), out);
    rx_sb_putc(out, ')');
}

static void emit(const rx_expr *e, int expect, rx_sb *out)
{
    const char *op;
    switch (e->kind) {
    case RX_E_INT:
    case RX_E_FLOAT:
        put_literal(e, expect, out);
        return;
    case RX_E_VAR:
        if (e->u.var->name) rx_sb_puts(out, e->u.var->name);
        else rx_sb_printf(out, "v%d", (int)e->u.var->id);
        return;
    case RX_E_MIN:
    case RX_E_MAX:
        emit_call2(e->kind == RX_E_MIN ? "min" : "max", e->u.op.a, e->u.op.b, out);
        return;
    case RX_E_NEG:
    case RX_E_NOT:
    case RX_E_BITNOT:
        rx_sb_putc(out, e->kind == RX_E_NEG ? '-' : e->kind == RX_E_NOT ? '!' : '~');
        /* a reader folds "-3" into one literal: a negated literal node is "-i64(3)" */
        emit_operand(e->kind, P_UNARY, e->u.op.a,
                     e->kind == RX_E_NEG ? RX_DT_UNKNOWN : lit_default(e->u.op.a), false, out);
        return;
    case RX_E_SELECT:
        rx_sb_puts(out, "select(");
        emit(e->u.op.a, lit_default(e->u.op.a), out);
        rx_sb_puts(out, ", ");
        emit(e->u.op.b, expect_infix(e->u.op.b, e->u.op.c), out);
        rx_sb_puts(out, ", ");
        emit(e->u.op.c, expect_infix(e->u.op.c, e->u.op.b), out);
        rx_sb_putc(out, ')');
        return;
    case RX_E_CAST:
        rx_sb_printf(out, "%s(", rx_dtype_name((rx_dtype)e->dtype));
        /* "f32(3)" reads as a typed literal; a cast node of a literal is "f32(i64(3))" */
        emit(e->u.op.a, RX_DT_UNKNOWN, out);
        rx_sb_putc(out, ')');
        return;
    case RX_E_LOAD: {
        const struct rx_buffer *b = e->u.load.buf;
        rx_sb_puts(out, b && b->name ? b->name : "?");
        rx_sb_putc(out, '[');
        for (int i = 0; i < e->u.load.nidx; i++) {
            if (i) rx_sb_puts(out, ", ");
            emit(e->u.load.idx[i], lit_default(e->u.load.idx[i]), out);
        }
        rx_sb_putc(out, ']');
        return;
    }
    case RX_E_CALL: {
        const char *name = rx_intrin_name((rx_intrin)e->u.call.fn);
        if (e->u.call.nargs == 2) {
            emit_call2(name, e->u.call.args[0], e->u.call.args[1], out);
            return;
        }
        rx_sb_printf(out, "%s(", name);
        for (int i = 0; i < e->u.call.nargs; i++) {
            if (i) rx_sb_puts(out, ", ");
            emit(e->u.call.args[i], lit_default(e->u.call.args[i]), out);
        }
        rx_sb_putc(out, ')');
        return;
    }
    default:
        op = rx_ekind_symbol((rx_ekind)e->kind);
        RX_ASSERT(op != NULL);
        emit_operand(e->kind, binop_prec(e->kind), e->u.op.a, expect_infix(e->u.op.a, e->u.op.b),
                     false, out);
        rx_sb_printf(out, " %s ", op);
        emit_operand(e->kind, binop_prec(e->kind), e->u.op.b, expect_infix(e->u.op.b, e->u.op.a),
                     true, out);
        return;
    }
}

/* Contract: appends the text of e to out (NULL prints as "?"); e is not modified. */
void rx_expr_print(const rx_expr *e, rx_sb *out)
{
    if (!e) {
        rx_sb_puts(out, "?");
        return;
    }
    emit(e, lit_default(e), out);
}

/* Contract: the text of e as an arena string owned by `a`. */
char *rx_expr_str(rx_arena *a, const rx_expr *e)
{
    rx_sb b = {0};
    rx_expr_print(e, &b);
    char *s = rx_arena_strdup(a, rx_sb_str(&b));
    rx_sb_free(&b);
    return s;
}
