/*
 * fuse_tir_simplify.c — index simplification of a fused loop function, with the
 * loops' symbolic ranges known.
 *
 * Why: computing an intermediate inline moves the producer's index arithmetic into
 * the consumer's innermost loop. A reshape's formula reads x[(i2 * 64 + i1 * 16 + k)
 * // (s * 64), i2 % s, ...]; inside a matmul that is two divisions per multiply-add,
 * where the unfused kernels paid them once per element. With the loops' ranges
 * (0 <= i2 < s, 0 <= i1 < 4, 0 <= k < 16) the dividend is provably in [0, 64 s): the
 * quotient is 0 and the remainder the dividend itself. The arithmetic (arith.h) bounds
 * only by constants, so this file adds symbolic interval bounds for the index forms
 * the tensor-expression builder produces.
 *
 * Bounds: lo(e), hi(e) are expressions, built by interval arithmetic over +, -, * by
 * a loop-free factor of known sign, // and % by a positive loop-free divisor, min and
 * max; a loop variable (or block iterator) stands for [min, min + extent - 1], a
 * variable that no loop binds (shape or scalar parameter) for itself. Anything else
 * has no bound and is left alone.
 * Rewrite: bottom-up, x // d becomes 0 and x % d becomes x when lo(x) >= 0 and
 * hi(x) < d are proved (rx_arith_prove on the canonical difference); then every
 * integer index is brought to the arithmetic's canonical form (folding s * 0 * 64),
 * with the constant ranges of constant-extent loops declared, so that (i * 4 + j) // 4
 * folds as in the builder; the variable of a loop of extent 1 is replaced by its only
 * value there, except where it is the whole index (an accumulator's Y[a, i] must stay
 * as the store writes it: schedule.c matches plain indices). Only load indices change: a store's indices say which iterators are
 * spatial (relax-json's implicit iterators), so they stay as written.
 * Cost: linear in the size of the indices times the depth of the loop nest.
 */
#include <string.h>

#include "fuse_tir_int.h"

typedef struct range { const rx_svar *var; rx_expr *lo, *hi; } range;

typedef struct simp {
    rx_arena *a;
    rx_arith *ar;
    RX_VEC(range) loops;  /* enclosing loop variables and iterators, innermost last */
    rx_vmap unit;         /* variables of loops with extent 1 -> their only value */
} simp;

static const range *range_of(const simp *s, const rx_svar *v)
{
    for (int i = s->loops.n - 1; i >= 0; i--)
        if (s->loops.items[i].var == v) return &s->loops.items[i];
    return NULL;
}

/* True when e uses no loop variable of s and no let variable. */
static bool loop_free(const simp *s, const rx_expr *e)
{
    if (e->kind == RX_E_VAR) return e->u.var->kind != RX_SV_LET && !range_of(s, e->u.var);
    if (e->kind == RX_E_LOAD) return false;
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++)
        if (!loop_free(s, rx_expr_child(e, i))) return false;
    return true;
}

static rx_expr *bin(simp *s, rx_ekind k, rx_expr *x, rx_expr *y) { return rx_e_binary(s->a, k, x, y); }

static bool proved(simp *s, rx_ekind cmp, rx_expr *x, rx_expr *y)
{
    return rx_arith_prove(s->ar, bin(s, cmp, x, y));
}

/* *lo <= e <= *hi; false when no bound is known. */
static bool bounds(simp *s, rx_expr *e, rx_expr **lo, rx_expr **hi)
{
    if (!rx_dtype_is_int((rx_dtype)e->dtype)) return false;
    if (loop_free(s, e) && e->kind != RX_E_LOAD) {
        *lo = *hi = e;
        return true;
    }
    rx_expr *al, *ah, *bl, *bh;
    switch ((rx_ekind)e->kind) {
    case RX_E_VAR: {
        const range *r = range_of(s, e->u.var);
        if (!r) return false;
        *lo = r->lo;
        *hi = r->hi;
        return true;
    }
    case RX_E_ADD:
    case RX_E_SUB:
        if (!bounds(s, e->u.op.a, &al, &ah) || !bounds(s, e->u.op.b, &bl, &bh)) return false;
        if (e->kind == RX_E_ADD) {
            *lo = bin(s, RX_E_ADD, al, bl);
            *hi = bin(s, RX_E_ADD, ah, bh);
        } else {
            *lo = bin(s, RX_E_SUB, al, bh);
            *hi = bin(s, RX_E_SUB, ah, bl);
        }
        return true;
    case RX_E_MUL: {
        rx_expr *f = e->u.op.b, *x = e->u.op.a;
        if (!loop_free(s, f)) f = e->u.op.a, x = e->u.op.b;
        if (!loop_free(s, f) || !bounds(s, x, &al, &ah)) return false;
        rx_expr *zero = rx_e_int(s->a, 0);
        if (proved(s, RX_E_GE, f, zero)) {
            *lo = bin(s, RX_E_MUL, al, f);
            *hi = bin(s, RX_E_MUL, ah, f);
        } else if (proved(s, RX_E_LE, f, zero)) {
            *lo = bin(s, RX_E_MUL, ah, f);
            *hi = bin(s, RX_E_MUL, al, f);
        } else {
            return false;
        }
        return true;
    }
    case RX_E_FLOORDIV:
    case RX_E_FLOORMOD: {
        rx_expr *d = e->u.op.b;
        if (!loop_free(s, d) || !proved(s, RX_E_GE, d, rx_e_int(s->a, 1))) return false;
        if (e->kind == RX_E_FLOORMOD) {
            *lo = rx_e_int(s->a, 0);
            *hi = bin(s, RX_E_SUB, d, rx_e_int(s->a, 1));
            return true;
        }
        if (!bounds(s, e->u.op.a, &al, &ah)) return false;
        *lo = bin(s, RX_E_FLOORDIV, al, d);
        *hi = bin(s, RX_E_FLOORDIV, ah, d);
        return true;
    }
    case RX_E_MIN:
    case RX_E_MAX:
        if (!bounds(s, e->u.op.a, &al, &ah) || !bounds(s, e->u.op.b, &bl, &bh)) return false;
        *lo = bin(s, (rx_ekind)e->kind, al, bl);
        *hi = bin(s, (rx_ekind)e->kind, ah, bh);
        return true;
    default:
        return false;
    }
}

/* e with provably trivial // and % removed, bottom-up. */
static rx_expr *strip(simp *s, rx_expr *e)
{
    int n = rx_expr_nchildren(e);
    if (n == 0) return e;
    rx_expr *small[8];
    rx_expr **k = n <= 8 ? small : RX_NEWN(s->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        k[i] = strip(s, rx_expr_child(e, i));
        changed |= k[i] != rx_expr_child(e, i);
    }
    rx_expr *r = changed ? rx_expr_with_children(s->a, e, k) : e;
    if ((r->kind == RX_E_FLOORDIV || r->kind == RX_E_FLOORMOD) && rx_dtype_is_int((rx_dtype)r->dtype) &&
        loop_free(s, r->u.op.b)) {
        rx_expr *lo, *hi;
        if (bounds(s, r->u.op.a, &lo, &hi) && proved(s, RX_E_GE, lo, rx_e_int(s->a, 0)) &&
            proved(s, RX_E_LT, hi, r->u.op.b))
            return r->kind == RX_E_FLOORDIV ? rx_e_typed_int(s->a, 0, (rx_dtype)r->dtype) : r->u.op.a;
    }
    return r;
}

static rx_expr *index(simp *s, rx_expr *e)
{
    if (e->kind == RX_E_VAR) return e; /* kept: schedule.c matches plain indices */
    rx_expr *r = strip(s, s->unit.keys.n ? rx_expr_subst(s->a, e, &s->unit) : e);
    return rx_dtype_is_int((rx_dtype)r->dtype) ? rx_arith_simplify(s->ar, r) : r;
}

/* Loads anywhere in e get simplified indices. */
static rx_expr *in_expr(simp *s, rx_expr *e)
{
    if (!e) return NULL;
    int n = rx_expr_nchildren(e);
    if (n == 0) return e;
    rx_expr *small[8];
    rx_expr **k = n <= 8 ? small : RX_NEWN(s->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        rx_expr *c = in_expr(s, rx_expr_child(e, i));
        k[i] = e->kind == RX_E_LOAD ? index(s, c) : c;
        changed |= k[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(s->a, e, k) : e;
}

static void push(simp *s, const rx_svar *v, rx_expr *min, rx_expr *extent)
{
    range r = {v, min, bin(s, RX_E_SUB, bin(s, RX_E_ADD, min, extent), rx_e_int(s->a, 1))};
    RX_VEC_PUSH(s->loops, r);
    int64_t lo, ext;
    if (rx_expr_is_const(min, &lo) && rx_expr_is_const(extent, &ext) && ext > 0)
        rx_arith_bind_range(s->ar, v, lo, lo + ext - 1);
    if (rx_expr_is_int(extent, 1)) rx_vmap_set(&s->unit, v, min);
}

static void in_stmts(simp *s, rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *st = ss->items[i];
        int mark = s->loops.n;
        switch ((rx_skind)st->kind) {
        case RX_S_FOR:
            push(s, st->u.for_.var, st->u.for_.min, st->u.for_.extent);
            in_stmts(s, &st->u.for_.body);
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < st->u.block.niters; k++) {
                const rx_iter *it = &st->u.block.iters[k];
                if (!range_of(s, it->var) && it->dom) push(s, it->var, rx_e_int(s->a, 0), it->dom);
            }
            in_stmts(s, &st->u.block.init);
            in_stmts(s, &st->u.block.body);
            break;
        case RX_S_STORE:
            for (int k = 0; k < st->u.store.nidx; k++) /* loads inside, not the index: */
                st->u.store.idx[k] = in_expr(s, st->u.store.idx[k]); /* iterator kinds */
            st->u.store.value = in_expr(s, st->u.store.value);
            break;
        case RX_S_IF:
            st->u.if_.cond = in_expr(s, st->u.if_.cond);
            in_stmts(s, &st->u.if_.then_s);
            in_stmts(s, &st->u.if_.else_s);
            break;
        case RX_S_LET:
            st->u.let.value = in_expr(s, st->u.let.value);
            in_stmts(s, &st->u.let.body);
            break;
        default: break;
        }
        s->loops.n = mark;
    }
}

void ft_simplify_indices(rx_arena *a, rx_stmts *body)
{
    simp s = {.a = a, .ar = rx_arith_new(a)};
    in_stmts(&s, body);
    RX_VEC_FREE(s.loops);
    rx_vmap_free(&s.unit);
    rx_arith_free(s.ar);
}
