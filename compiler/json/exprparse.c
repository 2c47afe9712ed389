/*
 * exprparse.c — the scalar expression grammar of relax-json, by recursive descent.
 *
 * One grammar serves both levels. RX_XP_SYM (graph-level symbolic sizes: annotation
 * dims, shape values, prim values, tir_vars, op size attributes) allows integers,
 * variables, + - * // %, unary minus, min(a, b), max(a, b) and parentheses.
 * RX_XP_FULL (loop-level expressions) adds floats (1.5, 1e-5, .5), / (true division,
 * floats only), comparisons, && || !, << >> & | ^ ~, select(c, a, b), casts written
 * as dtype calls (f32(x)), math intrinsics (exp, pow, ...) and buffer loads A[i, j].
 *
 * Precedence, loosest first (C's): || ; && ; | ; ^ ; & ; == != ; < <= > >= ; << >> ;
 * + - ; * / // % ; unary - ! ~ ; primaries. Binary operators associate to the left.
 *
 * Typing: every node carries a dtype. A literal is "weak" until something fixes its
 * type: combined with a typed operand it takes that operand's type; at the top of a
 * store value it takes the buffer's dtype (`want`); otherwise integers are i64 and
 * floats f32. Two typed operands of different dtypes are an error naming both.
 *
 * Bounds: the text length (max_expr_len) is checked before anything else; both the
 * recursion depth and the height of the tree built are limited by max_expr_depth, so
 * 100k nested parentheses or a 1 MB chain of additions give one error, not a crash,
 * and later passes never recurse deeper than that limit. Only the first error of an
 * expression is reported: `in "n * * 4": at column 5: expected an operand`.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_int.h"

typedef struct xp {
    rx_reader *r;
    const char *s;   /* the text (not NUL-terminated) */
    size_t n;        /* its length */
    size_t pos;      /* next character */
    rx_loc loc;      /* where errors go */
    rx_xmode mode;
    int depth;       /* current recursion depth */
    bool failed;     /* an error was reported; unwind */
} xp;

typedef struct xv {
    rx_expr *e; /* NULL after an error */
    bool weak;  /* untyped literal (or an operation on untyped literals only) */
    int h;      /* height of the tree */
} xv;

typedef RX_VEC(xv) xv_vec;

static const xv XV_FAIL = {NULL, false, 0};

/* Reports the first error of the expression at 1-based column col+1. */
static void xerr(xp *p, size_t col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void xerr(xp *p, size_t col, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = true;
    rx_sb msg = {0};
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    size_t show = p->n > 60 ? 57 : p->n;
    rx_sb txt = {0};
    for (size_t i = 0; i < show; i++) {
        unsigned char c = (unsigned char)p->s[i];
        rx_sb_putc(&txt, c < 0x20 ? ' ' : (c == '"' ? '\'' : (char)c));
    }
    if (show < p->n) rx_sb_puts(&txt, "...");
    rxi_rd_err(p->r, p->loc, "in \"%s\": at column %zu: %s", rx_sb_str(&txt), col + 1,
              rx_sb_str(&msg));
    rx_sb_free(&txt);
    rx_sb_free(&msg);
}

/* Skips blanks; returns the next character or 0 at the end. */
static char peekc(xp *p)
{
    while (p->pos < p->n && isspace((unsigned char)p->s[p->pos])) p->pos++;
    return p->pos < p->n ? p->s[p->pos] : 0;
}

static bool is_idstart(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_idchar(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* ---------------------------------------------------------------- typing */

/* Gives a weak subtree the type dt (rewriting its literals in place: they were built
 * by this parse and are not shared yet). False after an error at col. */
static bool retype(xp *p, rx_expr *e, rx_dtype dt, size_t col)
{
    switch (e->kind) {
    case RX_E_INT:
        if (rx_dtype_is_float(dt)) {
            double v = (double)e->u.ival;
            e->kind = RX_E_FLOAT;
            e->u.fval = v;
        } else if (rx_dtype_is_int(dt)) {
            int bits = rx_dtype_bits(dt);
            int64_t v = e->u.ival;
            bool fits = rx_dtype_is_uint(dt)
                            ? v >= 0 && (bits >= 64 || v < ((int64_t)1 << bits))
                            : bits >= 64 || (v >= -((int64_t)1 << (bits - 1)) &&
                                             v < ((int64_t)1 << (bits - 1)));
            if (!fits) {
                xerr(p, col, "integer literal %lld does not fit in %s", (long long)v,
                     rx_dtype_name(dt));
                return false;
            }
        } else {
            xerr(p, col, "integer literal %lld used as %s", (long long)e->u.ival,
                 rx_dtype_name(dt));
            return false;
        }
        break;
    case RX_E_FLOAT:
        if (!rx_dtype_is_float(dt)) {
            xerr(p, col, "float literal %g used as %s", e->u.fval, rx_dtype_name(dt));
            return false;
        }
        break;
    case RX_E_SELECT:
        if (!retype(p, e->u.op.b, dt, col) || !retype(p, e->u.op.c, dt, col)) return false;
        break;
    default:
        switch (e->kind) {
        case RX_E_FLOORDIV: case RX_E_FLOORMOD: case RX_E_SHL: case RX_E_SHR:
        case RX_E_BITAND: case RX_E_BITOR: case RX_E_BITXOR: case RX_E_BITNOT:
            if (!rx_dtype_is_int(dt)) {
                xerr(p, col, "integer operation on literals used as %s", rx_dtype_name(dt));
                return false;
            }
            break;
        default:
            break;
        }
        if (e->u.op.a && !retype(p, e->u.op.a, dt, col)) return false;
        if (e->kind != RX_E_NEG && e->kind != RX_E_BITNOT && e->u.op.b &&
            !retype(p, e->u.op.b, dt, col))
            return false;
        break;
    }
    e->dtype = (uint8_t)dt;
    return true;
}

/* Brings two operands to one type (the rule of the header essay). Returns the type,
 * or RX_DT_UNKNOWN after an error; *weak says whether the pair is still untyped. */
static rx_dtype unify(xp *p, xv *a, xv *b, size_t col, bool *weak)
{
    *weak = false;
    rx_dtype ta = (rx_dtype)a->e->dtype, tb = (rx_dtype)b->e->dtype;
    if (a->weak && b->weak) {
        *weak = true;
        if (ta == tb) return ta;
        rx_dtype t = rx_dtype_is_float(ta) ? ta : tb;
        if (!retype(p, a->e, t, col) || !retype(p, b->e, t, col)) return RX_DT_UNKNOWN;
        return t;
    }
    if (a->weak) return retype(p, a->e, tb, col) ? tb : RX_DT_UNKNOWN;
    if (b->weak) return retype(p, b->e, ta, col) ? ta : RX_DT_UNKNOWN;
    if (ta != tb) {
        xerr(p, col, "mismatched operand types %s and %s", rx_dtype_name(ta),
             rx_dtype_name(tb));
        return RX_DT_UNKNOWN;
    }
    return ta;
}

/* Fixes the type of a weak value to its default (already i64 / f32): it stops being
 * weak. Used where a context gives no type (indices, casts, conditions). */
static xv settle(xv v)
{
    v.weak = false;
    return v;
}

/* Checks the height limit of a new node built over children of height h. */
static bool height_ok(xp *p, int h, size_t col)
{
    if (h > p->r->o.max_expr_depth) {
        xerr(p, col, "expression nested deeper than %d levels", p->r->o.max_expr_depth);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- grammar */

static xv parse_bin(xp *p, int minprec);

typedef struct binop {
    const char *tok;
    rx_ekind kind;
    int prec;
    bool sym; /* allowed in RX_XP_SYM */
} binop;

/* Longest tokens first so that "//" is not read as "/". */
static const binop BINOPS[] = {
    {"||", RX_E_OR, 1, false},     {"&&", RX_E_AND, 2, false},
    {"==", RX_E_EQ, 6, false},     {"!=", RX_E_NE, 6, false},
    {"<=", RX_E_LE, 7, false},     {">=", RX_E_GE, 7, false},
    {"<<", RX_E_SHL, 8, false},    {">>", RX_E_SHR, 8, false},
    {"//", RX_E_FLOORDIV, 10, true},
    {"|", RX_E_BITOR, 3, false},   {"^", RX_E_BITXOR, 4, false},
    {"&", RX_E_BITAND, 5, false},  {"<", RX_E_LT, 7, false},
    {">", RX_E_GT, 7, false},      {"+", RX_E_ADD, 9, true},
    {"-", RX_E_SUB, 9, true},      {"*", RX_E_MUL, 10, true},
    {"/", RX_E_DIV, 10, false},    {"%", RX_E_FLOORMOD, 10, true},
};

/* The binary operator at the current position, or NULL (nothing consumed). */
static const binop *peek_binop(xp *p)
{
    if (!peekc(p)) return NULL;
    for (int i = 0; i < RX_COUNTOF(BINOPS); i++) {
        size_t k = strlen(BINOPS[i].tok);
        if (p->n - p->pos >= k && memcmp(p->s + p->pos, BINOPS[i].tok, k) == 0) {
            return &BINOPS[i]; /* "=" and "!" alone are not binary operators */
        }
    }
    return NULL;
}

/* Builds a binary node after checking operand types for the operator. */
static xv combine(xp *p, const binop *op, xv a, xv b, size_t col)
{
    bool weak;
    rx_dtype t = unify(p, &a, &b, col, &weak);
    if (p->failed) return XV_FAIL;
    rx_ekind k = op->kind;
    bool is_bool = t == RX_DT_BOOL, is_int = rx_dtype_is_int(t), is_fl = rx_dtype_is_float(t);
    switch (k) {
    case RX_E_ADD: case RX_E_SUB: case RX_E_MUL: case RX_E_MIN: case RX_E_MAX:
        if (is_bool) {
            xerr(p, col, "operator \"%s\" needs numbers, found bool", op->tok);
            return XV_FAIL;
        }
        break;
    case RX_E_DIV:
        if (!is_fl) {
            xerr(p, col, "use // for integer division (\"/\" is true division of floats)");
            return XV_FAIL;
        }
        break;
    case RX_E_FLOORDIV: case RX_E_FLOORMOD:
        if (!is_int) {
            xerr(p, col, "operator \"%s\" needs integers, found %s", op->tok, rx_dtype_name(t));
            return XV_FAIL;
        }
        break;
    case RX_E_AND: case RX_E_OR:
        if (!is_bool) {
            xerr(p, col, "operator \"%s\" needs bool operands, found %s", op->tok,
                 rx_dtype_name(t));
            return XV_FAIL;
        }
        break;
    case RX_E_SHL: case RX_E_SHR: case RX_E_BITAND: case RX_E_BITOR: case RX_E_BITXOR:
        if (!is_int && !(is_bool && k != RX_E_SHL && k != RX_E_SHR)) {
            xerr(p, col, "operator \"%s\" needs integers, found %s", op->tok, rx_dtype_name(t));
            return XV_FAIL;
        }
        break;
    default: /* comparisons */
        weak = false;
        break;
    }
    int h = 1 + (a.h > b.h ? a.h : b.h);
    if (!height_ok(p, h, col)) return XV_FAIL;
    rx_expr *e = rx_e_binary(p->r->a, k, a.e, b.e);
    return (xv){e, weak, h};
}

/* Parses "(" arg, arg... ")" after a function name; the '(' is consumed. Fills args
 * (heap vector, caller frees). False after an error. */
static bool parse_args(xp *p, xv_vec *args, char close)
{
    if (peekc(p) == close) {
        p->pos++;
        return true;
    }
    for (;;) {
        xv v = parse_bin(p, 1);
        if (p->failed) return false;
        RX_VEC_PUSH(*args, v);
        char c = peekc(p);
        if (c == ',') {
            p->pos++;
            continue;
        }
        if (c == close) {
            p->pos++;
            return true;
        }
        xerr(p, p->pos, c ? "expected \",\" or \"%c\"" : "expected \"%c\" before the end",
             close);
        return false;
    }
}

/* A call `name(args)`: min/max, select, casts, math intrinsics. */
static xv parse_call(xp *p, const char *name, size_t nlen, size_t col)
{
    char id[32] = "";
    if (nlen < sizeof id) memcpy(id, name, nlen), id[nlen] = 0;
    bool is_minmax = strcmp(id, "min") == 0 || strcmp(id, "max") == 0;
    rx_dtype cast = RX_DT_UNKNOWN;
    rx_intrin fn = RX_FN_COUNT;
    int arity;
    if (is_minmax) arity = 2;
    else if (p->mode == RX_XP_SYM) {
        xerr(p, col, "function \"%.*s\" is not allowed in a symbolic expression (allowed: min, max)",
             (int)(nlen > 40 ? 40 : nlen), name);
        return XV_FAIL;
    } else if (strcmp(id, "select") == 0) arity = 3;
    else if (id[0] && rx_dtype_parse(id, &cast)) arity = 1;
    else if (id[0] && rx_intrin_parse(id, &fn)) arity = rx_intrin_arity(fn);
    else {
        xerr(p, col, "unknown function \"%.*s\"", (int)(nlen > 40 ? 40 : nlen), name);
        return XV_FAIL;
    }
    p->pos++; /* '(' */
    xv_vec args = {0};
    xv res = XV_FAIL;
    if (!parse_args(p, &args, ')')) goto out;
    if (args.n != arity) {
        xerr(p, col, "%s takes %d argument%s, found %d", id, arity, arity == 1 ? "" : "s",
             args.n);
        goto out;
    }
    int h = 0;
    for (int i = 0; i < args.n; i++)
        if (args.items[i].h > h) h = args.items[i].h;
    h++;
    if (!height_ok(p, h, col)) goto out;
    if (is_minmax) {
        static const binop mn = {"min", RX_E_MIN, 0, true}, mx = {"max", RX_E_MAX, 0, true};
        res = combine(p, id[1] == 'i' ? &mn : &mx, args.items[0], args.items[1], col);
    } else if (arity == 3 && fn == RX_FN_COUNT) {
        xv c = args.items[0];
        if (c.e->dtype != RX_DT_BOOL) {
            xerr(p, col, "select condition must be bool, found %s", rx_dtype_name(c.e->dtype));
            goto out;
        }
        bool weak;
        if (unify(p, &args.items[1], &args.items[2], col, &weak) == RX_DT_UNKNOWN) goto out;
        res = (xv){rx_e_select(p->r->a, c.e, args.items[1].e, args.items[2].e), weak, h};
    } else if (fn == RX_FN_COUNT) {
        /* A cast of a bare literal is a typed literal: "i32(3)" is how the printer
         * writes an i32 literal that the typing rule would not reproduce. */
        rx_expr *x = args.items[0].e;
        bool lit = args.items[0].weak && (x->kind == RX_E_INT || x->kind == RX_E_FLOAT);
        if (lit && cast == RX_DT_BOOL && x->kind == RX_E_INT && (x->u.ival == 0 || x->u.ival == 1))
            x->dtype = RX_DT_BOOL;
        else if (lit && (rx_dtype_is_float(cast) || (rx_dtype_is_int(cast) && x->kind == RX_E_INT)))
            retype(p, x, cast, col);
        else
            x = rx_e_cast(p->r->a, cast, x);
        if (p->failed) goto out;
        res = (xv){x, false, h};
    } else {
        rx_expr *ev[2];
        rx_dtype t;
        if (arity == 2) {
            bool weak;
            t = unify(p, &args.items[0], &args.items[1], col, &weak);
            if (t == RX_DT_UNKNOWN) goto out;
            if (weak && !rx_dtype_is_float(t) && !retype(p, args.items[0].e, RX_DT_F32, col))
                goto out;
            if (weak && !rx_dtype_is_float(t) && !retype(p, args.items[1].e, RX_DT_F32, col))
                goto out;
            t = (rx_dtype)args.items[0].e->dtype;
        } else {
            if (args.items[0].weak && fn != RX_FN_ABS &&
                !retype(p, args.items[0].e, RX_DT_F32, col))
                goto out;
            t = (rx_dtype)args.items[0].e->dtype;
        }
        bool ok = rx_dtype_is_float(t) || (fn == RX_FN_ABS && rx_dtype_is_int(t));
        if (!ok) {
            xerr(p, col, "%s needs a float argument, found %s", id, rx_dtype_name(t));
            goto out;
        }
        for (int i = 0; i < arity; i++) ev[i] = args.items[i].e;
        res = (xv){rx_e_call(p->r->a, fn, ev, arity, t), false, h};
    }
out:
    free(args.items);
    return res;
}

/* A buffer load `A[i, j]`; the '[' is the next character. */
static xv parse_load(xp *p, const char *name, size_t nlen, size_t col)
{
    if (p->mode == RX_XP_SYM) {
        xerr(p, p->pos, "buffer loads are not allowed in a symbolic expression");
        return XV_FAIL;
    }
    rx_buffer *buf = rxi_rd_scope_get(&p->r->bufs, name, nlen);
    if (!buf) {
        xerr(p, col, "unknown buffer \"%.*s\"", (int)(nlen > 40 ? 40 : nlen), name);
        return XV_FAIL;
    }
    p->pos++; /* '[' */
    xv_vec args = {0};
    xv res = XV_FAIL;
    if (!parse_args(p, &args, ']')) goto out;
    if (args.n != buf->ndim) {
        xerr(p, col, "buffer \"%s\" has %d dimension%s, found %d ind%s", buf->name, buf->ndim,
             buf->ndim == 1 ? "" : "s", args.n, args.n == 1 ? "ex" : "ices");
        goto out;
    }
    int h = 0;
    rx_expr **idx = RX_NEWN(p->r->a, rx_expr *, args.n ? args.n : 1);
    for (int i = 0; i < args.n; i++) {
        xv v = settle(args.items[i]);
        if (!rx_dtype_is_int((rx_dtype)v.e->dtype)) {
            xerr(p, col, "index %d of \"%s\" must be an integer, found %s", i, buf->name,
                 rx_dtype_name(v.e->dtype));
            goto out;
        }
        idx[i] = v.e;
        if (v.h > h) h = v.h;
    }
    if (!height_ok(p, h + 1, col)) goto out;
    res = (xv){rx_e_load(p->r->a, buf, idx, args.n), false, h + 1};
out:
    free(args.items);
    return res;
}

/* A number literal. */
static xv parse_number(xp *p)
{
    size_t b = p->pos, i = b;
    bool isfloat = false;
    while (i < p->n && isdigit((unsigned char)p->s[i])) i++;
    if (i < p->n && p->s[i] == '.') {
        isfloat = true;
        i++;
        while (i < p->n && isdigit((unsigned char)p->s[i])) i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        size_t j = i + 1;
        if (j < p->n && (p->s[j] == '+' || p->s[j] == '-')) j++;
        if (j < p->n && isdigit((unsigned char)p->s[j])) {
            isfloat = true;
            i = j;
            while (i < p->n && isdigit((unsigned char)p->s[i])) i++;
        }
    }
    if (i < p->n && is_idchar(p->s[i])) {
        xerr(p, i, "malformed number");
        return XV_FAIL;
    }
    p->pos = i;
    if (isfloat) {
        if (p->mode == RX_XP_SYM) {
            xerr(p, b, "a symbolic expression holds integers only, found %.*s",
                 (int)(i - b > 40 ? 40 : i - b), p->s + b);
            return XV_FAIL;
        }
        char tmp[80];
        if (i - b >= sizeof tmp) {
            xerr(p, b, "number too long");
            return XV_FAIL;
        }
        memcpy(tmp, p->s + b, i - b);
        tmp[i - b] = 0;
        double v = strtod(tmp, NULL);
        return (xv){rx_e_float(p->r->a, v, RX_DT_F32), true, 1};
    }
    int64_t v = 0;
    for (size_t k = b; k < i; k++) {
        int dgt = p->s[k] - '0';
        if (v > (INT64_MAX - dgt) / 10) {
            xerr(p, b, "integer literal too large");
            return XV_FAIL;
        }
        v = v * 10 + dgt;
    }
    return (xv){rx_e_int(p->r->a, v), true, 1};
}

/* A primary: number, variable, call, load or parenthesized expression. */
static xv parse_primary(xp *p)
{
    char c = peekc(p);
    size_t col = p->pos;
    if (isdigit((unsigned char)c) ||
        (c == '.' && p->pos + 1 < p->n && isdigit((unsigned char)p->s[p->pos + 1])))
        return parse_number(p);
    if (c == '(') {
        p->pos++;
        xv v = parse_bin(p, 1);
        if (p->failed) return XV_FAIL;
        if (peekc(p) != ')') {
            xerr(p, p->pos, p->pos < p->n ? "expected \")\"" : "expected \")\" before the end");
            return XV_FAIL;
        }
        p->pos++;
        return v;
    }
    if (is_idstart(c)) {
        const char *name = p->s + p->pos;
        size_t nlen = 0;
        while (p->pos < p->n && is_idchar(p->s[p->pos])) p->pos++, nlen++;
        char nx = peekc(p);
        if (nx == '(') return parse_call(p, name, nlen, col);
        if (nx == '[') return parse_load(p, name, nlen, col);
        const rx_svar *v = rxi_rd_lookup(p->r, name, nlen);
        int shown = (int)(nlen > 40 ? 40 : nlen);
        if (!v) {
            const rx_buffer *b = rxi_rd_scope_get(&p->r->bufs, name, nlen);
            if (b && p->mode == RX_XP_FULL) {
                xerr(p, col, "buffer \"%s\" needs indices", b->name);
                return XV_FAIL;
            }
            xerr(p, col,
                 p->mode == RX_XP_SYM ? "undefined symbolic variable \"%.*s\""
                                      : "unknown variable \"%.*s\"",
                 shown, name);
            return XV_FAIL;
        }
        if (p->mode == RX_XP_SYM && !rx_dtype_is_int((rx_dtype)v->dtype)) {
            xerr(p, col, "variable \"%s\" has type %s; a symbolic expression needs integers",
                 v->name, rx_dtype_name(v->dtype));
            return XV_FAIL;
        }
        return (xv){rx_e_var(p->r->a, v), false, 1};
    }
    xerr(p, col, c ? "expected an operand" : "expected an operand before the end");
    return XV_FAIL;
}

/* Unary operators, then a primary. Tracks the recursion depth. */
static xv parse_unary(xp *p)
{
    if (++p->depth > p->r->o.max_expr_depth) {
        xerr(p, p->pos, "expression nested deeper than %d levels", p->r->o.max_expr_depth);
        p->depth--;
        return XV_FAIL;
    }
    xv res = XV_FAIL;
    char c = peekc(p);
    size_t col = p->pos;
    if (c == '-' || c == '~' || (c == '!' && !(p->pos + 1 < p->n && p->s[p->pos + 1] == '='))) {
        p->pos++;
        if (c != '-' && p->mode == RX_XP_SYM) {
            xerr(p, col, "operator \"%c\" is not allowed in a symbolic expression", c);
            goto out;
        }
        xv v = parse_unary(p);
        if (p->failed) goto out;
        rx_dtype t = (rx_dtype)v.e->dtype;
        if (c == '-') {
            if (t == RX_DT_BOOL) {
                xerr(p, col, "unary \"-\" needs a number, found bool");
                goto out;
            }
            if (v.e->kind == RX_E_INT && v.weak) {
                v.e->u.ival = -v.e->u.ival;
                res = v;
                goto out;
            }
            if (v.e->kind == RX_E_FLOAT && v.weak) {
                v.e->u.fval = -v.e->u.fval;
                res = v;
                goto out;
            }
        } else if (c == '!' && t != RX_DT_BOOL) {
            xerr(p, col, "operator \"!\" needs bool, found %s", rx_dtype_name(t));
            goto out;
        } else if (c == '~' && !rx_dtype_is_int(t)) {
            xerr(p, col, "operator \"~\" needs an integer, found %s", rx_dtype_name(t));
            goto out;
        }
        if (!height_ok(p, v.h + 1, col)) goto out;
        rx_ekind k = c == '-' ? RX_E_NEG : c == '!' ? RX_E_NOT : RX_E_BITNOT;
        res = (xv){rx_e_unary(p->r->a, k, v.e), v.weak, v.h + 1};
        goto out;
    }
    res = parse_primary(p);
out:
    p->depth--;
    return res;
}

/* Precedence climbing over BINOPS for operators of precedence >= minprec. */
static xv parse_bin(xp *p, int minprec)
{
    xv lhs = parse_unary(p);
    while (!p->failed) {
        const binop *op = peek_binop(p);
        if (!op || op->prec < minprec) break;
        size_t col = p->pos;
        if (p->mode == RX_XP_SYM && !op->sym) {
            xerr(p, col, "operator \"%s\" is not allowed in a symbolic expression "
                         "(allowed: + - * // %% min max)", op->tok);
            break;
        }
        p->pos += strlen(op->tok);
        xv rhs = parse_bin(p, op->prec + 1);
        if (p->failed) break;
        lhs = combine(p, op, lhs, rhs, col);
    }
    return p->failed ? XV_FAIL : lhs;
}

rx_expr *rxi_rd_parse(rx_reader *r, const char *s, size_t n, rx_loc loc, rx_xmode mode,
                     rx_dtype want)
{
    if (n > r->o.max_expr_len) {
        rxi_rd_err(r, loc, "expression is %zu characters long, over the limit of %zu", n,
                  r->o.max_expr_len);
        return NULL;
    }
    xp p = {.r = r, .s = s, .n = n, .loc = loc, .mode = mode};
    xv v = parse_bin(&p, 1);
    if (!p.failed && peekc(&p)) {
        if (p.s[p.pos] == '=' || p.s[p.pos] == '!')
            xerr(&p, p.pos, "unexpected \"%c\" (comparison is \"==\" / \"!=\")", p.s[p.pos]);
        else if (p.s[p.pos] == ')' || p.s[p.pos] == ']' || p.s[p.pos] == ',')
            xerr(&p, p.pos, "unexpected \"%c\"", p.s[p.pos]);
        else
            xerr(&p, p.pos, "expected an operator, found \"%c\"", p.s[p.pos]);
    }
    if (p.failed) return NULL;
    if (v.weak && want != RX_DT_UNKNOWN && !retype(&p, v.e, want, 0)) return NULL;
    if (mode == RX_XP_SYM && !rx_dtype_is_int((rx_dtype)v.e->dtype)) {
        xerr(&p, 0, "expected an integer expression, found %s", rx_dtype_name(v.e->dtype));
        return NULL;
    }
    return v.e;
}
