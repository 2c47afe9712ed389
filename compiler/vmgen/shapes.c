/*
 * shapes.c — the shape heap of a function being lowered (paper §4.7: "an integer host
 * tensor to store runtime values of all symbolic expressions"), annotation checks, and
 * signature descriptors.
 *
 * Symbolic variables get a slot when first defined: by a MATCH item storing a whole dim
 * (parameters, match_cast), or by a dim read from a tensor at run time. An expression
 * is simplified by the arithmetic (so n * 4 and 4 * n are one value), then computed
 * bottom-up: literals stay immediates (constant subtrees fold), each (op, operand,
 * operand) is emitted once per scope and its slot remembered (hash-consing makes common
 * subexpressions free). Lookups are linear scans: functions hold few symbols.
 *
 * Matching an annotation emits one MATCH instruction per value. Each dim becomes an
 * item: a literal IMM, a defined variable SLOT, a new variable STORE (defining it),
 * an expression of already-defined variables SLOT of its computed slot (emitted before
 * the MATCH), and an expression using a variable still undefined (x: (n * 2, n)) a
 * STORE into a scratch slot plus a deferred ASSERT_EQ once everything is defined.
 */
#include "vg_int.h"

#include <string.h>

int64_t vg_new_slot(vg_fn *F) { return F->nheap++; }
int64_t vg_new_reg(vg_fn *F) { return F->nregs++; }

static int sym_index(const vg_fn *F, const rx_svar *v)
{
    for (int i = F->syms.n - 1; i >= 0; i--)
        if (F->syms.items[i].v == v) return i;
    return -1;
}

int64_t vg_sym_slot(const vg_fn *F, const rx_svar *v)
{
    int i = sym_index(F, v);
    return i < 0 ? -1 : F->syms.items[i].slot;
}

void vg_sym_define(vg_fn *F, const rx_svar *v, int64_t slot)
{
    vg_sym s = {v, slot};
    RX_VEC_PUSH(F->syms, s);
}

vg_scope vg_scope_enter(const vg_fn *F) { return (vg_scope){F->syms.n, F->cse.n}; }

void vg_scope_leave(vg_fn *F, vg_scope s)
{
    F->syms.n = s.nsyms;
    F->cse.n = s.ncse;
}

/* ---- expressions ---- */

static int64_t arith_op(int kind)
{
    switch (kind) {
    case RX_E_ADD: return RX_OP_ADD;
    case RX_E_SUB: return RX_OP_SUB;
    case RX_E_MUL: return RX_OP_MUL;
    case RX_E_FLOORDIV: return RX_OP_FLOORDIV;
    case RX_E_FLOORMOD: return RX_OP_FLOORMOD;
    case RX_E_MIN: return RX_OP_MIN;
    case RX_E_MAX: return RX_OP_MAX;
    default: return -1;
    }
}

/* Folds op(x, y) of two literals; false when it must be left to run time (overflow,
 * division by zero: the VM reports those). */
static bool fold(int64_t op, int64_t x, int64_t y, int64_t *r)
{
    switch (op) {
    case RX_OP_ADD: return !__builtin_add_overflow(x, y, r);
    case RX_OP_SUB: return !__builtin_sub_overflow(x, y, r);
    case RX_OP_MUL: return !__builtin_mul_overflow(x, y, r);
    case RX_OP_MIN: *r = x < y ? x : y; return true;
    case RX_OP_MAX: *r = x > y ? x : y; return true;
    default: {
        if (y == 0 || (x == INT64_MIN && y == -1)) return false;
        int64_t q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) q--;
        *r = op == RX_OP_FLOORDIV ? q : x - q * y;
        return true;
    }
    }
}

static bool same_dim(vg_dim a, vg_dim b) { return a.tag == b.tag && a.val == b.val; }

/* op(a, b) into a slot, reusing an equal computation in scope. */
static vg_dim binop(vg_fn *F, int64_t op, vg_dim a, vg_dim b)
{
    int64_t r;
    if (a.tag == RX_D_IMM && b.tag == RX_D_IMM && fold(op, a.val, b.val, &r))
        return (vg_dim){RX_D_IMM, r};
    for (int i = 0; i < F->cse.n; i++) {
        const vg_cse *c = &F->cse.items[i];
        if (c->op == op && same_dim(c->a, a) && same_dim(c->b, b))
            return (vg_dim){RX_D_SLOT, c->slot};
    }
    vg_cse c = {op, a, b, vg_new_slot(F)};
    RX_VEC_PUSH(F->cse, c);
    RX_EMIT(&F->code, op, c.slot, a.tag, a.val, b.tag, b.val);
    return (vg_dim){RX_D_SLOT, c.slot};
}

static bool expr_rec(vg_fn *F, rx_loc loc, const rx_expr *e, vg_dim *out)
{
    switch (e->kind) {
    case RX_E_INT:
        *out = (vg_dim){RX_D_IMM, e->u.ival};
        return true;
    case RX_E_VAR: {
        int64_t s = vg_sym_slot(F, e->u.var);
        if (s < 0) {
            vg_error(F->M, loc, "%s: symbolic variable %s has no value at run time here",
                     F->f->name, e->u.var->name);
            return false;
        }
        *out = (vg_dim){RX_D_SLOT, s};
        return true;
    }
    case RX_E_CAST:
        if (!rx_dtype_is_int(e->dtype) || !rx_dtype_is_int(e->u.op.a->dtype)) break;
        return expr_rec(F, loc, e->u.op.a, out);
    case RX_E_NEG: {
        vg_dim a;
        if (!expr_rec(F, loc, e->u.op.a, &a)) return false;
        *out = binop(F, RX_OP_SUB, (vg_dim){RX_D_IMM, 0}, a);
        return true;
    }
    default: {
        int64_t op = arith_op(e->kind);
        if (op < 0) break;
        vg_dim a, b;
        if (!expr_rec(F, loc, e->u.op.a, &a) || !expr_rec(F, loc, e->u.op.b, &b)) return false;
        *out = binop(F, op, a, b);
        return true;
    }
    }
    rx_sb s = {0};
    rx_expr_print(e, &s);
    vg_error(F->M, loc, "%s: cannot compute %s at run time (integer + - * // %% min max only)",
             F->f->name, rx_sb_str(&s));
    rx_sb_free(&s);
    return false;
}

bool vg_expr(vg_fn *F, rx_loc loc, const rx_expr *e, vg_dim *out)
{
    int64_t v;
    if (rx_expr_is_const(e, &v)) {
        *out = (vg_dim){RX_D_IMM, v};
        return true;
    }
    if (e->kind == RX_E_VAR) return expr_rec(F, loc, e, out);
    return expr_rec(F, loc, rx_arith_simplify(F->ar, (rx_expr *)e), out);
}

/* ---- expected text ---- */

static void put_dims(rx_expr *const *dims, int n, rx_sb *out)
{
    rx_sb_putc(out, '(');
    for (int i = 0; i < n; i++) {
        if (i) rx_sb_puts(out, ", ");
        rx_expr_print(dims[i], out);
    }
    rx_sb_puts(out, n == 1 ? ",)" : ")");
}

void vg_expected(const rx_sinfo *si, rx_sb *out)
{
    switch (si->kind) {
    case RX_SI_TENSOR:
    case RX_SI_SHAPE: {
        const char *noun = si->kind == RX_SI_TENSOR ? "tensor" : "shape";
        if (si->dims) {
            put_dims(si->dims, si->ndim, out);
            return;
        }
        rx_sb_puts(out, "a ");
        if (si->ndim >= 0) rx_sb_printf(out, "%d-d ", si->ndim);
        if (si->kind == RX_SI_TENSOR && si->dtype) rx_sb_printf(out, "%s ", rx_dtype_name(si->dtype));
        rx_sb_puts(out, noun);
        return;
    }
    case RX_SI_PRIM:
        if (si->value) rx_expr_print(si->value, out);
        else rx_sb_puts(out, "an int");
        return;
    case RX_SI_TUPLE: rx_sb_printf(out, "a tuple of %d", si->nfields); return;
    case RX_SI_CALLABLE: rx_sb_puts(out, "a function"); return;
    default: rx_sb_puts(out, "anything"); return;
    }
}

/* ---- matching ---- */

static bool all_vars_before(const vg_fn *F, const rx_expr *e, int mark)
{
    rx_svar_vec vs = {0};
    rx_expr_vars(e, &vs);
    bool ok = true;
    for (int i = 0; i < vs.n && ok; i++) {
        int k = sym_index(F, vs.items[i]);
        ok = k >= 0 && k < mark;
    }
    RX_VEC_FREE(vs);
    return ok;
}

/* The match item of one dim (appended to w); may emit arithmetic before the MATCH. */
static bool match_item(vg_fn *F, rx_loc loc, const rx_expr *e, int mark, const char *msg,
                       int dim, vg_words *w, vg_defer_vec *defer)
{
    int64_t v;
    if (rx_expr_is_const(e, &v)) {
        vg_w(w, RX_M_IMM), vg_w(w, v);
        return true;
    }
    if (e->kind == RX_E_VAR) {
        int64_t s = vg_sym_slot(F, e->u.var);
        if (s >= 0) {
            vg_w(w, RX_M_SLOT), vg_w(w, s);
        } else {
            s = vg_new_slot(F);
            vg_sym_define(F, e->u.var, s);
            vg_w(w, RX_M_STORE), vg_w(w, s);
        }
        return true;
    }
    if (all_vars_before(F, e, mark)) {
        vg_dim d;
        if (!vg_expr(F, loc, e, &d)) return false;
        vg_w(w, d.tag == RX_D_IMM ? RX_M_IMM : RX_M_SLOT), vg_w(w, d.val);
        return true;
    }
    vg_defer df = {vg_new_slot(F), (rx_expr *)e,
                   rx_arena_printf(F->M->tmp, "%s at dim %d", msg, dim)};
    RX_VEC_PUSH(*defer, df);
    vg_w(w, RX_M_STORE), vg_w(w, df.slot);
    return true;
}

bool vg_flush_defer(vg_fn *F, rx_loc loc, vg_defer_vec *defer)
{
    bool ok = true;
    for (int i = 0; i < defer->n && ok; i++) {
        const vg_defer *df = &defer->items[i];
        vg_dim d;
        ok = vg_expr(F, loc, df->expr, &d);
        if (ok)
            RX_EMIT(&F->code, RX_OP_ASSERT_EQ, rx_rxa_add_string(F->M->b, df->msg), RX_D_SLOT,
                    df->slot, d.tag, d.val);
    }
    defer->n = 0;
    return ok;
}

static bool match_rec(vg_fn *F, rx_loc loc, int64_t reg, const rx_sinfo *si, const char *what,
                      vg_defer_vec *defer)
{
    rx_sb sb = {0};
    rx_sb_printf(&sb, "%s: %s: expected ", F->f->name, what);
    vg_expected(si, &sb);
    const char *msg = rx_arena_strdup(F->M->tmp, rx_sb_str(&sb));
    rx_sb_free(&sb);
    int64_t msgi = rx_rxa_add_string(F->M->b, msg);
    vg_words w = {0}, items = {0};
    bool ok = true;
    int mark = F->syms.n;

    switch (si->kind) {
    case RX_SI_TENSOR:
    case RX_SI_SHAPE: {
        int n = si->ndim < 0 ? 0 : si->ndim;
        for (int i = 0; i < n && ok; i++) {
            if (si->dims) ok = match_item(F, loc, si->dims[i], mark, msg, i, &items, defer);
            else vg_w(&items, RX_M_ANY), vg_w(&items, 0);
        }
        if (!ok) break;
        vg_w(&w, si->kind == RX_SI_TENSOR ? RX_OP_MATCH_TENSOR : RX_OP_MATCH_SHAPE);
        vg_w(&w, reg);
        if (si->kind == RX_SI_TENSOR) vg_w(&w, rx_vmgen_dtype((rx_dtype)si->dtype));
        vg_w(&w, si->ndim < 0 ? -1 : si->ndim);
        vg_w(&w, msgi);
        vg_w(&w, n);
        for (int i = 0; i < items.n; i++) vg_w(&w, items.items[i]);
        vg_emit_words(F, &w);
        break;
    }
    case RX_SI_PRIM:
        if (rx_dtype_is_float((rx_dtype)si->dtype)) break; /* no float values in the VM */
        if (si->value) ok = match_item(F, loc, si->value, mark, msg, 0, &items, defer);
        else vg_w(&items, RX_M_ANY), vg_w(&items, 0);
        if (!ok) break;
        RX_EMIT(&F->code, RX_OP_MATCH_INT, reg, msgi, items.items[0], items.items[1]);
        break;
    case RX_SI_TUPLE:
        for (int i = 0; i < si->nfields && ok; i++) {
            int k = si->fields[i]->kind;
            if (k == RX_SI_OBJECT || k == RX_SI_CALLABLE) continue;
            int64_t t = vg_new_reg(F);
            RX_EMIT(&F->code, RX_OP_GETITEM, t, reg, i);
            ok = match_rec(F, loc, t, si->fields[i],
                           rx_arena_printf(F->M->tmp, "%s[%d]", what, i), defer);
            RX_EMIT(&F->code, RX_OP_RELEASE, t);
        }
        break;
    default: break; /* Object, Callable: nothing to check */
    }
    RX_VEC_FREE(w);
    RX_VEC_FREE(items);
    return ok;
}

bool vg_match(vg_fn *F, rx_loc loc, int64_t reg, const rx_sinfo *si, const char *what,
              vg_defer_vec *defer)
{
    if (defer) return match_rec(F, loc, reg, si, what, defer);
    vg_defer_vec local = {0};
    bool ok = match_rec(F, loc, reg, si, what, &local) && vg_flush_defer(F, loc, &local);
    RX_VEC_FREE(local);
    return ok;
}

/* ---- descriptors ---- */

typedef RX_VEC(rx_rxa_tok) tokvec;

static bool postfix(const rx_func *f, const rx_expr *e, tokvec *out)
{
    if (out->n >= (int)RX_RXA_MAX_TOKENS) return false;
    switch (e->kind) {
    case RX_E_INT: {
        rx_rxa_tok t = {RX_RXA_TOK_CONST, e->u.ival};
        RX_VEC_PUSH(*out, t);
        return true;
    }
    case RX_E_VAR:
        for (int i = 0; i < f->nsvars; i++)
            if (f->svars[i] == e->u.var) {
                rx_rxa_tok t = {RX_RXA_TOK_VAR, i};
                RX_VEC_PUSH(*out, t);
                return true;
            }
        return false;
    case RX_E_CAST: return rx_dtype_is_int(e->dtype) && postfix(f, e->u.op.a, out);
    default: {
        static const uint32_t ops[] = {
            [RX_E_ADD] = RX_RXA_TOK_ADD, [RX_E_SUB] = RX_RXA_TOK_SUB,
            [RX_E_MUL] = RX_RXA_TOK_MUL, [RX_E_FLOORDIV] = RX_RXA_TOK_FLOORDIV,
            [RX_E_FLOORMOD] = RX_RXA_TOK_FLOORMOD, [RX_E_MIN] = RX_RXA_TOK_MIN,
            [RX_E_MAX] = RX_RXA_TOK_MAX};
        if (arith_op(e->kind) < 0) return false;
        if (!postfix(f, e->u.op.a, out) || !postfix(f, e->u.op.b, out)) return false;
        rx_rxa_tok t = {ops[e->kind], 0};
        RX_VEC_PUSH(*out, t);
        return out->n <= (int)RX_RXA_MAX_TOKENS;
    }
    }
}

/* One dim expression; unknown (0 tokens) when it uses something else. */
static rx_rxa_dim dim_desc(vg_module *M, const rx_func *f, const rx_expr *e)
{
    rx_rxa_dim d = {0, NULL};
    tokvec t = {0};
    if (e && postfix(f, e, &t)) {
        d.ntok = (uint32_t)t.n;
        d.tok = rx_arena_dup(M->tmp, t.items, sizeof(rx_rxa_tok) * (size_t)t.n);
    }
    RX_VEC_FREE(t);
    return d;
}

static void desc_rec(vg_module *M, const rx_func *f, const rx_sinfo *si, const char *name,
                     int depth, rx_rxa_type *out)
{
    memset(out, 0, sizeof *out);
    out->name = name;
    out->kind = RX_RXA_T_ANY;
    switch (si ? si->kind : RX_SI_OBJECT) {
    case RX_SI_TENSOR:
    case RX_SI_SHAPE: {
        out->kind = si->kind == RX_SI_TENSOR ? RX_RXA_T_TENSOR : RX_RXA_T_SHAPE;
        out->dtype = si->kind == RX_SI_TENSOR ? rx_vmgen_dtype((rx_dtype)si->dtype) : 0;
        out->ndim = si->ndim;
        if (si->ndim > 0) {
            rx_rxa_dim *dims = RX_NEWN(M->tmp, rx_rxa_dim, si->ndim);
            for (int i = 0; i < si->ndim; i++)
                dims[i] = dim_desc(M, f, si->dims ? si->dims[i] : NULL);
            out->dims = dims;
        }
        break;
    }
    case RX_SI_PRIM: {
        out->kind = RX_RXA_T_INT;
        rx_rxa_dim *d = RX_NEW(M->tmp, rx_rxa_dim);
        *d = dim_desc(M, f, si->value);
        out->dims = d;
        break;
    }
    case RX_SI_TUPLE: {
        if (depth + 1 >= (int)RX_RXA_MAX_DEPTH) break;
        out->kind = RX_RXA_T_TUPLE;
        out->nfields = (uint32_t)si->nfields;
        rx_rxa_type *fs = RX_NEWN(M->tmp, rx_rxa_type, si->nfields > 0 ? si->nfields : 1);
        for (int i = 0; i < si->nfields; i++) desc_rec(M, f, si->fields[i], NULL, depth + 1, &fs[i]);
        out->fields = fs;
        break;
    }
    default: break;
    }
}

void vg_descriptor(vg_module *M, const rx_func *f, const rx_sinfo *si, const char *name,
                   rx_rxa_type *out)
{
    desc_rec(M, f, si, name, 0, out);
}
