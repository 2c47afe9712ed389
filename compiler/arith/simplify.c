/*
 * simplify.c — the arithmetic context, simplification of whole expressions, proofs.
 *
 * rx_arith_simplify sends every maximal integer subexpression over + - * // % min
 * max through its canonical form (canonical.c) and treats the other nodes
 * structurally: operands simplified, then what is decided folds — integer
 * comparisons proved true or false become bool literals, && || ! select and casts of
 * literals fold, a cast to the operand's own dtype disappears. Float arithmetic is
 * never reassociated or folded (rounding would change).
 *
 * Proofs: a comparison of integers a OP b is decided from the canonical form of
 * a - b (exactly zero for ==) and its interval bound, intersected with the bound of
 * a - b as written; && || ! recurse, and !c is proved by proving the negated
 * comparison. A failed proof means "not known".
 *
 * Each public call owns a scratch arena for canonical sums, freed before returning;
 * result nodes go into the context's arena. The context itself holds only the
 * variable ranges (searched linearly; contexts hold few bound variables).
 */
#include <stdlib.h>

#include "arith_int.h"

/* ---------------------------------------------------------------- context */

/* Contract: a new context allocating result nodes in `a` (not owned); free it with
 * rx_arith_free. */
rx_arith *rx_arith_new(rx_arena *a)
{
    rx_arith *ar = rx_xcalloc(1, sizeof *ar);
    ar->a = a;
    return ar;
}

/* Contract: frees the context (not its arena or any node); NULL is a no-op. */
void rx_arith_free(rx_arith *ar)
{
    if (!ar) return;
    RX_VEC_FREE(ar->ranges);
    free(ar);
}

/* Contract: records lo <= v <= hi, intersected with what v already has. */
void rx_arith_bind_range(rx_arith *ar, const rx_svar *v, int64_t lo, int64_t hi)
{
    for (int i = 0; i < ar->ranges.n; i++) {
        rxi_ar_range *r = &ar->ranges.items[i];
        if (r->var != v) continue;
        if (lo > r->lo) r->lo = lo;
        if (hi < r->hi) r->hi = hi;
        return;
    }
    RX_VEC_PUSH(ar->ranges, ((rxi_ar_range){v, lo, hi}));
}

static void cx_begin(rxi_ar_cx *cx, rx_arith *ar)
{
    cx->ar = ar;
    cx->tmp = rx_arena_new();
}

static void cx_end(rxi_ar_cx *cx) { rx_arena_free(cx->tmp); }

/* ---------------------------------------------------------------- proofs */

static bool is_int(const rx_expr *e) { return rx_dtype_is_int((rx_dtype)e->dtype); }
static bool is_cmp(int k) { return k >= RX_E_EQ && k <= RX_E_GE; }

static int negate_cmp(int k)
{
    switch (k) {
    case RX_E_EQ: return RX_E_NE;
    case RX_E_NE: return RX_E_EQ;
    case RX_E_LT: return RX_E_GE;
    case RX_E_LE: return RX_E_GT;
    case RX_E_GT: return RX_E_LE;
    default: return RX_E_LT; /* GE */
    }
}

/* Proves a OP b for integer a, b. */
static bool prove_cmp(rxi_ar_cx *cx, int k, rx_expr *a, rx_expr *b)
{
    rxi_ar_sum *d = rxi_ar_sum_add(cx, rxi_ar_canon(cx, a), rxi_ar_canon(cx, b), -1);
    rxi_ar_iv iv = rxi_ar_iv_add(rxi_ar_bound_expr(cx->ar, a), rxi_ar_iv_neg(rxi_ar_bound_expr(cx->ar, b)));
    if (d) {
        if (d->n == 0) iv = rxi_ar_iv_point(d->c);
        else iv = rxi_ar_iv_intersect(rxi_ar_sum_bound(cx, d), iv);
    }
    switch (k) {
    case RX_E_EQ: return iv.lo == 0 && iv.hi == 0;
    case RX_E_NE: return iv.lo > 0 || iv.hi < 0;
    case RX_E_LT: return iv.hi < 0;
    case RX_E_LE: return iv.hi <= 0;
    case RX_E_GT: return iv.lo > 0;
    default: return iv.lo >= 0;
    }
}

static bool prove(rxi_ar_cx *cx, rx_expr *c);

/* Proves that c is false. */
static bool disprove(rxi_ar_cx *cx, rx_expr *c)
{
    switch (c->kind) {
    case RX_E_INT: return c->u.ival == 0;
    case RX_E_NOT: return prove(cx, c->u.op.a);
    case RX_E_AND: return disprove(cx, c->u.op.a) || disprove(cx, c->u.op.b);
    case RX_E_OR: return disprove(cx, c->u.op.a) && disprove(cx, c->u.op.b);
    default:
        if (is_cmp(c->kind) && is_int(c->u.op.a) && is_int(c->u.op.b))
            return prove_cmp(cx, negate_cmp(c->kind), c->u.op.a, c->u.op.b);
        return false;
    }
}

static bool prove(rxi_ar_cx *cx, rx_expr *c)
{
    switch (c->kind) {
    case RX_E_INT: return c->u.ival != 0;
    case RX_E_NOT: return disprove(cx, c->u.op.a);
    case RX_E_AND: return prove(cx, c->u.op.a) && prove(cx, c->u.op.b);
    case RX_E_OR: return prove(cx, c->u.op.a) || prove(cx, c->u.op.b);
    default:
        if (is_cmp(c->kind) && is_int(c->u.op.a) && is_int(c->u.op.b))
            return prove_cmp(cx, c->kind, c->u.op.a, c->u.op.b);
        return false;
    }
}

/* ---------------------------------------------------------------- simplification */

static rx_expr *bool_lit(rxi_ar_cx *cx, bool v) { return rx_e_typed_int(cx->ar->a, v, RX_DT_BOOL); }

/* A copy of e with operands kids[] (e itself when none changed). */
static rx_expr *with_kids(rxi_ar_cx *cx, rx_expr *e, rx_expr **kids, int n)
{
    bool changed = false;
    for (int i = 0; i < n; i++) changed |= kids[i] != rx_expr_child(e, i);
    if (!changed) return e;
    rx_expr *c = rx_arena_dup(cx->ar->a, e, sizeof *e);
    if (e->kind == RX_E_LOAD) c->u.load.idx = rx_arena_dup(cx->ar->a, kids, sizeof *kids * (size_t)n);
    else if (e->kind == RX_E_CALL) c->u.call.args = rx_arena_dup(cx->ar->a, kids, sizeof *kids * (size_t)n);
    else {
        c->u.op.a = n > 0 ? kids[0] : NULL;
        c->u.op.b = n > 1 ? kids[1] : NULL;
        c->u.op.c = n > 2 ? kids[2] : NULL;
    }
    return c;
}

/* Folds a node whose operands are simplified, where something is decided. */
static rx_expr *fold(rxi_ar_cx *cx, rx_expr *e)
{
    int nk = rx_expr_nchildren(e);
    rx_expr *a = nk > 0 ? rx_expr_child(e, 0) : NULL, *b = nk > 1 ? rx_expr_child(e, 1) : NULL;
    int64_t va = 0, vb = 0;
    bool ca = a && a->kind == RX_E_INT && rx_expr_is_const(a, &va);
    bool cb = b && b->kind == RX_E_INT && rx_expr_is_const(b, &vb);
    switch (e->kind) {
    case RX_E_CAST:
        if (a->dtype == e->dtype) return a;
        if (ca && (rx_dtype_is_int((rx_dtype)e->dtype) || e->dtype == RX_DT_BOOL) &&
            rx_expr_eval_int(e, NULL, &va))
            return rx_e_typed_int(cx->ar->a, va, (rx_dtype)e->dtype);
        return e;
    case RX_E_NOT:
        if (ca) return bool_lit(cx, va == 0);
        return e;
    case RX_E_AND:
    case RX_E_OR: {
        bool is_and = e->kind == RX_E_AND;
        if (ca) return (va != 0) == is_and ? (b->dtype == RX_DT_BOOL ? b : e) : bool_lit(cx, va != 0);
        if (cb && (vb != 0) != is_and) return bool_lit(cx, vb != 0);
        if (cb && a->dtype == RX_DT_BOOL) return a;
        return e;
    }
    case RX_E_SELECT:
        if (ca) return va ? e->u.op.b : e->u.op.c;
        if (rx_expr_same(e->u.op.b, e->u.op.c)) return e->u.op.b;
        return e;
    default:
        if (is_cmp(e->kind) && is_int(a) && is_int(b)) {
            if (prove(cx, e)) return bool_lit(cx, true);
            if (disprove(cx, e)) return bool_lit(cx, false);
        }
        return e;
    }
}

rx_expr *rxi_ar_simp(rxi_ar_cx *cx, rx_expr *e)
{
    if (e->kind == RX_E_INT || e->kind == RX_E_FLOAT || e->kind == RX_E_VAR) return e;
    if (is_int(e) && rxi_ar_is_arith_kind(e->kind))
        return rxi_ar_rebuild(cx, rxi_ar_canon(cx, e), e->dtype);
    int n = rx_expr_nchildren(e);
    rx_expr *small[4], **kids = n <= 4 ? small : RX_NEWN(cx->tmp, rx_expr *, n);
    for (int i = 0; i < n; i++) kids[i] = rxi_ar_simp(cx, rx_expr_child(e, i));
    return fold(cx, with_kids(cx, e, kids, n));
}

/* Contract: the canonical simplified form of e (NULL for NULL); new nodes in the
 * context's arena, unchanged subtrees shared with e. */
rx_expr *rx_arith_simplify(rx_arith *ar, rx_expr *e)
{
    if (!e) return NULL;
    rxi_ar_cx cx;
    cx_begin(&cx, ar);
    rx_expr *r = rxi_ar_simp(&cx, e);
    cx_end(&cx);
    return r;
}

/* Contract: q with q * d == n as polynomials (canonical.c's essay: the value of n // d
 * whenever d != 0), simplified; NULL when d does not divide n term by term. */
rx_expr *rx_arith_exact_quotient(rx_arith *ar, rx_expr *n, rx_expr *d)
{
    if (!is_int(n) || !is_int(d)) return NULL;
    rxi_ar_cx cx;
    cx_begin(&cx, ar);
    rxi_ar_sum *q = rxi_ar_exact_quotient(&cx, rxi_ar_canon(&cx, n), rxi_ar_canon(&cx, d));
    rx_expr *r = q ? rxi_ar_rebuild(&cx, q, n->dtype) : NULL;
    cx_end(&cx);
    return r;
}

/* Contract: true only when a == b holds for every value of the variables within
 * their ranges (integers: a - b canonicalizes or bounds to 0; others: equal
 * simplified forms). */
bool rx_arith_prove_equal(rx_arith *ar, rx_expr *a, rx_expr *b)
{
    rxi_ar_cx cx;
    bool r;
    cx_begin(&cx, ar);
    if (is_int(a) && is_int(b)) r = prove_cmp(&cx, RX_E_EQ, a, b);
    else r = rx_expr_same(rxi_ar_simp(&cx, a), rxi_ar_simp(&cx, b));
    cx_end(&cx);
    return r;
}

/* Contract: true only when cond is proved to hold (see the file essay). */
bool rx_arith_prove(rx_arith *ar, rx_expr *cond)
{
    rxi_ar_cx cx;
    cx_begin(&cx, ar);
    bool r = prove(&cx, cond);
    cx_end(&cx);
    return r;
}
