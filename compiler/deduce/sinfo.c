/*
 * sinfo.c — the annotation lattice: base-of, join, substitution, erasure, matching.
 *
 * Annotations (ir.h, the paper's Table 1) are ordered by "every value of the lower one
 * is a value of the upper one". Object is the top; within a kind, a coarser annotation
 * (unknown dtype, unknown ndim, unknown dims, no known prim value) lies above a finer
 * one. Deduction uses the order three ways:
 *
 *   rx_si_is_base_of  checks a written annotation against a deduced one. The answer is
 *                     three-valued: YES (proved), NO (contradiction: no value can have
 *                     both), MAYBE (only a run-time check could tell, e.g. an argument
 *                     of Shape(ndim=2) passed where Shape([n, m]) is expected — §4.1's
 *                     "safety net" of coarse annotations).
 *   rx_si_join        the least upper bound, for the two branches of an `if`.
 *   rx_si_match       binds a callee signature's symbolic variables to an argument's
 *                     dims (Figure 7); the caller then erases what stayed unbound
 *                     (rx_si_erase) and substitutes the rest (rx_si_subst) into the
 *                     callee's result.
 *
 * Dims are compared with the arithmetic: proved equal is YES; two literals (after
 * simplification) that differ are NO; anything else is MAYBE. A failed proof never
 * means "different".
 *
 * Matching walks the structure twice: the first pass binds every bare-variable dim
 * that is not yet bound, the second compares every dim with the bindings substituted.
 * So Shape([n * 2, n]) against Shape([8, 4]) is proved, whatever the order of dims,
 * and Shape([n, n]) against Shape([3, 4]) is a contradiction.
 *
 * Callables: parameters are contravariant, the result covariant. A callable's own
 * symbolic variables are not unified with the other side's (alpha-renamed signatures
 * compare as MAYBE, never NO unless a literal, dtype, rank or kind contradicts);
 * substitution does not enter them and erasure treats them as defined inside it.
 *
 * Results are built in the caller's arena; inputs are never mutated, and unchanged
 * dim expressions are shared (expressions are immutable). Costs are linear in the size
 * of the annotations times the cost of one dim comparison.
 */
#include "relax/deduce.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */

/* NO dominates, then MAYBE. */
static rx_cmp cmp_and(rx_cmp x, rx_cmp y)
{
    if (x == RX_CMP_NO || y == RX_CMP_NO) return RX_CMP_NO;
    if (x == RX_CMP_MAYBE || y == RX_CMP_MAYBE) return RX_CMP_MAYBE;
    return RX_CMP_YES;
}

/* An integer literal, or one after simplification (a leaf variable never is). */
static bool as_const(rx_arith *ar, rx_expr *e, int64_t *v)
{
    if (rx_expr_is_const(e, v)) return true;
    if (!ar || e->kind == RX_E_VAR) return false;
    return rx_expr_is_const(rx_arith_simplify(ar, e), v);
}

static bool dim_equal(rx_arith *ar, rx_expr *x, rx_expr *y)
{
    if (x == y || rx_expr_same(x, y)) return true;
    return ar && rx_arith_prove_equal(ar, x, y);
}

/* One dim (or prim value) against another. */
static rx_cmp dim_cmp(rx_arith *ar, rx_expr *x, rx_expr *y)
{
    int64_t cx, cy;
    if (dim_equal(ar, x, y)) return RX_CMP_YES;
    if (as_const(ar, x, &cx) && as_const(ar, y, &cy) && cx != cy) return RX_CMP_NO;
    return RX_CMP_MAYBE;
}

/* A dtype of the upper annotation against one of the lower. */
static rx_cmp dtype_cmp(uint8_t base, uint8_t derived)
{
    if (base == RX_DT_UNKNOWN || base == derived) return RX_CMP_YES;
    if (derived == RX_DT_UNKNOWN) return RX_CMP_MAYBE;
    return RX_CMP_NO;
}

/* Dims known: a 0-d shape has exactly one value whether or not `dims` is set. */
static bool dims_known(const rx_sinfo *s)
{
    return s->ndim == 0 || (s->ndim > 0 && s->dims);
}

/* The ndim/dims part shared by SHAPE and TENSOR. */
static rx_cmp dims_cmp(rx_arith *ar, const rx_sinfo *base, const rx_sinfo *derived)
{
    if (base->ndim < 0) return RX_CMP_YES;
    if (derived->ndim < 0) return RX_CMP_MAYBE;
    if (base->ndim != derived->ndim) return RX_CMP_NO;
    if (!dims_known(base)) return RX_CMP_YES;
    if (!dims_known(derived)) return RX_CMP_MAYBE;
    rx_cmp r = RX_CMP_YES;
    for (int i = 0; i < base->ndim && r != RX_CMP_NO; i++)
        r = cmp_and(r, dim_cmp(ar, base->dims[i], derived->dims[i]));
    return r;
}

/* A shallow copy of s in a (fields, dims and svars arrays still shared). */
static rx_sinfo *si_copy(rx_arena *a, const rx_sinfo *s)
{
    rx_sinfo *r = RX_NEW(a, rx_sinfo);
    *r = *s;
    return r;
}

static rx_sinfo *si_new(rx_arena *a, rx_sikind kind)
{
    rx_sinfo *r = RX_NEW(a, rx_sinfo);
    r->kind = (uint8_t)kind;
    r->ndim = -1;
    return r;
}

static bool svars_contain(const rx_sinfo *callable, const rx_svar *v)
{
    for (int i = 0; i < callable->nsvars; i++)
        if (callable->svars[i] == v) return true;
    return false;
}

/* ---------------------------------------------------------------- base-of */

/* Contract: `base` and `derived` are complete annotations (non-NULL). Returns YES when
 * every value of `derived` is proved to be a value of `base`, NO when no value can be
 * both (different kinds, dtypes, ranks, field counts, or literal dims), MAYBE when
 * only a run-time check could tell (a coarser `derived`, or dims the arithmetic can
 * neither prove equal nor tell apart). `ar` may be NULL: dims are then compared only
 * structurally and as literals. New nodes made by simplification go into ar's arena. */
/* Callables: parameters contravariant, result covariant. Each signature's own
 * symbolic variables are bound variables, so the two are compared up to renaming:
 * the derived signature's variables are first bound to the base's dims by matching
 * its parameters against the base's (Callable([Shape([a, b])], (a * b,)) and
 * Callable([Shape([n, m])], (n * m,)) are the same annotation). */
static rx_cmp callable_base_of(rx_arith *ar, const rx_sinfo *base, const rx_sinfo *derived)
{
    if (base->nfields != derived->nfields) return RX_CMP_NO;
    rx_arena *tmp = rx_arena_new(); /* renamed copies; nothing made here escapes */
    const rx_sinfo *dparams = rx_si_tuple(tmp, derived->fields, derived->nfields);
    const rx_sinfo *dret = derived->ret;
    if (derived->nsvars > 0) {
        rx_vmap vm = {0};
        rx_si_match(ar, tmp, dparams, rx_si_tuple(tmp, base->fields, base->nfields), &vm);
        dparams = rx_si_subst(tmp, dparams, &vm);
        dret = rx_si_subst(tmp, dret, &vm);
        rx_vmap_free(&vm);
    }
    rx_cmp r = RX_CMP_YES;
    for (int i = 0; i < base->nfields && r != RX_CMP_NO; i++)
        r = cmp_and(r, rx_si_is_base_of(ar, dparams->fields[i], base->fields[i]));
    if (r != RX_CMP_NO) r = cmp_and(r, rx_si_is_base_of(ar, base->ret, dret));
    rx_arena_free(tmp);
    return r;
}

rx_cmp rx_si_is_base_of(rx_arith *ar, const rx_sinfo *base, const rx_sinfo *derived)
{
    RX_ASSERT(base && derived);
    if (base->kind == RX_SI_OBJECT) return RX_CMP_YES;
    if (derived->kind == RX_SI_OBJECT) return RX_CMP_MAYBE;
    if (base->kind != derived->kind) return RX_CMP_NO;

    switch ((rx_sikind)base->kind) {
    case RX_SI_PRIM: {
        rx_cmp r = dtype_cmp(base->dtype, derived->dtype);
        if (r == RX_CMP_NO || !base->value) return r;
        if (!derived->value) return cmp_and(r, RX_CMP_MAYBE);
        return cmp_and(r, dim_cmp(ar, base->value, derived->value));
    }
    case RX_SI_SHAPE:
        return dims_cmp(ar, base, derived);
    case RX_SI_TENSOR: {
        rx_cmp r = dtype_cmp(base->dtype, derived->dtype);
        if (r == RX_CMP_NO) return r;
        return cmp_and(r, dims_cmp(ar, base, derived));
    }
    case RX_SI_TUPLE: {
        if (base->nfields != derived->nfields) return RX_CMP_NO;
        rx_cmp r = RX_CMP_YES;
        for (int i = 0; i < base->nfields && r != RX_CMP_NO; i++)
            r = cmp_and(r, rx_si_is_base_of(ar, base->fields[i], derived->fields[i]));
        return r;
    }
    case RX_SI_CALLABLE:
        return callable_base_of(ar, base, derived);
    case RX_SI_OBJECT:
        break;
    }
    RX_UNREACHABLE();
}

/* ---------------------------------------------------------------- join */

/* x's dims when every dim of y is proved equal to x's, else NULL. */
static rx_expr **join_dims(rx_arith *ar, rx_arena *a, const rx_sinfo *x, const rx_sinfo *y)
{
    if (x->ndim != y->ndim || !dims_known(x) || !dims_known(y)) return NULL;
    for (int i = 0; i < x->ndim; i++)
        if (!dim_equal(ar, x->dims[i], y->dims[i])) return NULL;
    return x->ndim ? rx_arena_dup(a, x->dims, sizeof(rx_expr *) * (size_t)x->ndim)
                   : RX_NEWN(a, rx_expr *, 1);
}

/* Contract: returns the least annotation (in a) above both x and y: same kinds merge
 * fieldwise (dtype kept when equal else unknown, ndim kept when equal else -1, dims
 * kept — x's expressions — only when every dim is proved equal), tuples of equal arity
 * join fieldwise, callables with mutually equal params join their results; anything
 * else is Object. x and y are not modified; dim expressions are shared with x. */
rx_sinfo *rx_si_join(rx_arith *ar, rx_arena *a, const rx_sinfo *x, const rx_sinfo *y)
{
    RX_ASSERT(x && y);
    if (x->kind != y->kind) return si_new(a, RX_SI_OBJECT);

    rx_sinfo *r = si_new(a, (rx_sikind)x->kind);
    switch ((rx_sikind)x->kind) {
    case RX_SI_OBJECT:
        return r;
    case RX_SI_PRIM:
        r->dtype = x->dtype == y->dtype ? x->dtype : RX_DT_UNKNOWN;
        if (x->value && y->value && dim_equal(ar, x->value, y->value)) r->value = x->value;
        return r;
    case RX_SI_TENSOR:
    case RX_SI_SHAPE:
        if (x->kind == RX_SI_TENSOR) r->dtype = x->dtype == y->dtype ? x->dtype : RX_DT_UNKNOWN;
        r->ndim = x->ndim == y->ndim ? x->ndim : -1;
        r->dims = join_dims(ar, a, x, y);
        return r;
    case RX_SI_TUPLE:
        if (x->nfields != y->nfields) return si_new(a, RX_SI_OBJECT);
        r->nfields = x->nfields;
        r->fields = RX_NEWN(a, rx_sinfo *, x->nfields ? x->nfields : 1);
        for (int i = 0; i < x->nfields; i++)
            r->fields[i] = rx_si_join(ar, a, x->fields[i], y->fields[i]);
        return r;
    case RX_SI_CALLABLE:
        /* Without an opaque-callable annotation, differing params lose everything. */
        if (x->nfields != y->nfields) return si_new(a, RX_SI_OBJECT);
        for (int i = 0; i < x->nfields; i++) {
            if (rx_si_is_base_of(ar, x->fields[i], y->fields[i]) != RX_CMP_YES ||
                rx_si_is_base_of(ar, y->fields[i], x->fields[i]) != RX_CMP_YES)
                return si_new(a, RX_SI_OBJECT);
        }
        *r = *x;
        r->ret = rx_si_join(ar, a, x->ret, y->ret);
        return r;
    }
    RX_UNREACHABLE();
}

/* ---------------------------------------------------------------- substitution */

static rx_expr **subst_dims(rx_arena *a, rx_expr **dims, int n, const rx_vmap *m)
{
    if (!dims) return NULL;
    rx_expr **r = RX_NEWN(a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) r[i] = rx_expr_subst(a, dims[i], m);
    return r;
}

/* Contract: returns a copy of s (in a) with m applied to every dim and prim value,
 * recursively; inside a callable, the callable's own svars are not substituted (they
 * shadow any entry of m). s and m are unchanged; the svars array is shared. */
rx_sinfo *rx_si_subst(rx_arena *a, const rx_sinfo *s, const rx_vmap *m)
{
    RX_ASSERT(s && m);
    rx_sinfo *r = si_copy(a, s);
    switch ((rx_sikind)s->kind) {
    case RX_SI_OBJECT:
        return r;
    case RX_SI_PRIM:
        if (s->value) r->value = rx_expr_subst(a, s->value, m);
        return r;
    case RX_SI_SHAPE:
    case RX_SI_TENSOR:
        r->dims = subst_dims(a, s->dims, s->ndim, m);
        return r;
    case RX_SI_TUPLE:
    case RX_SI_CALLABLE: {
        rx_vmap inner = {0};
        const rx_vmap *use = m;
        if (s->kind == RX_SI_CALLABLE && s->nsvars > 0) {
            for (int i = 0; i < m->keys.n; i++)
                if (!svars_contain(s, m->keys.items[i]))
                    rx_vmap_set(&inner, m->keys.items[i], m->vals.items[i]);
            use = &inner;
        }
        r->fields = RX_NEWN(a, rx_sinfo *, s->nfields ? s->nfields : 1);
        for (int i = 0; i < s->nfields; i++) r->fields[i] = rx_si_subst(a, s->fields[i], use);
        if (s->kind == RX_SI_CALLABLE) r->ret = rx_si_subst(a, s->ret, use);
        if (use == &inner) rx_vmap_free(&inner);
        return r;
    }
    }
    RX_UNREACHABLE();
}

/* ---------------------------------------------------------------- erasure */

/* The predicate inside a callable: its own svars, then the enclosing predicate. */
typedef struct erase_scope {
    rx_var_pred outer;     /* predicate of the enclosing scope */
    void *outer_ud;        /* its user data */
    const rx_sinfo *fn;    /* the callable whose svars are defined here */
} erase_scope;

static bool erase_scope_pred(void *ud, const rx_svar *v)
{
    const erase_scope *sc = ud;
    return svars_contain(sc->fn, v) || sc->outer(sc->outer_ud, v);
}

/* True when every variable of e is defined. */
static bool expr_defined(const rx_expr *e, rx_var_pred defined, void *ud)
{
    rx_svar_vec vars = {0};
    rx_expr_vars(e, &vars);
    bool ok = true;
    for (int i = 0; i < vars.n && ok; i++) ok = defined(ud, vars.items[i]);
    RX_VEC_FREE(vars);
    return ok;
}

/* Contract: returns a copy of s (in a) where every SHAPE/TENSOR whose dims use a
 * variable v with defined(ud, v) false has unknown dims (ndim kept), and every PRIM
 * value using such a variable is dropped; tuples and callables are erased
 * recursively, a callable's own svars counting as defined inside it. The result is
 * above s in the lattice. */
rx_sinfo *rx_si_erase(rx_arena *a, const rx_sinfo *s, rx_var_pred defined, void *ud)
{
    RX_ASSERT(s && defined);
    rx_sinfo *r = si_copy(a, s);
    switch ((rx_sikind)s->kind) {
    case RX_SI_OBJECT:
        return r;
    case RX_SI_PRIM:
        if (s->value && !expr_defined(s->value, defined, ud)) r->value = NULL;
        return r;
    case RX_SI_SHAPE:
    case RX_SI_TENSOR:
        for (int i = 0; s->dims && i < s->ndim; i++) {
            if (!expr_defined(s->dims[i], defined, ud)) {
                r->dims = NULL;
                break;
            }
        }
        return r;
    case RX_SI_TUPLE:
    case RX_SI_CALLABLE: {
        erase_scope sc = {defined, ud, s};
        rx_var_pred p = defined;
        void *pud = ud;
        if (s->kind == RX_SI_CALLABLE && s->nsvars > 0) {
            p = erase_scope_pred;
            pud = &sc;
        }
        r->fields = RX_NEWN(a, rx_sinfo *, s->nfields ? s->nfields : 1);
        for (int i = 0; i < s->nfields; i++) r->fields[i] = rx_si_erase(a, s->fields[i], p, pud);
        if (s->kind == RX_SI_CALLABLE) r->ret = rx_si_erase(a, s->ret, p, pud);
        return r;
    }
    }
    RX_UNREACHABLE();
}

/* ---------------------------------------------------------------- matching */

typedef struct match_ctx {
    rx_arith *ar;
    rx_arena *a;
    rx_vmap *m;
    bool bind;   /* first pass: bind bare variables only */
} match_ctx;

/* A param dim (or prim value) against the argument's. */
static rx_cmp match_dim(match_ctx *c, rx_expr *p, rx_expr *x)
{
    if (c->bind) {
        if (p->kind == RX_E_VAR && !rx_vmap_get(c->m, p->u.var)) rx_vmap_set(c->m, p->u.var, x);
        return RX_CMP_YES;
    }
    return dim_cmp(c->ar, rx_expr_subst(c->a, p, c->m), x);
}

static rx_cmp match_dims(match_ctx *c, const rx_sinfo *p, const rx_sinfo *x)
{
    if (p->ndim < 0) return RX_CMP_YES;
    if (x->ndim < 0) return RX_CMP_MAYBE;
    if (p->ndim != x->ndim) return RX_CMP_NO;
    if (!dims_known(p)) return RX_CMP_YES;
    if (!dims_known(x)) return RX_CMP_MAYBE;
    rx_cmp r = RX_CMP_YES;
    for (int i = 0; i < p->ndim; i++) r = cmp_and(r, match_dim(c, p->dims[i], x->dims[i]));
    return r;
}

static rx_cmp match_walk(match_ctx *c, const rx_sinfo *p, const rx_sinfo *x)
{
    if (p->kind == RX_SI_OBJECT) return RX_CMP_YES;
    if (x->kind == RX_SI_OBJECT) return RX_CMP_MAYBE;
    if (p->kind != x->kind) return RX_CMP_NO;

    switch ((rx_sikind)p->kind) {
    case RX_SI_PRIM: {
        rx_cmp r = dtype_cmp(p->dtype, x->dtype);
        if (!p->value) return r;
        if (!x->value) return cmp_and(r, RX_CMP_MAYBE);
        return cmp_and(r, match_dim(c, p->value, x->value));
    }
    case RX_SI_SHAPE:
        return match_dims(c, p, x);
    case RX_SI_TENSOR:
        return cmp_and(dtype_cmp(p->dtype, x->dtype), match_dims(c, p, x));
    case RX_SI_TUPLE: {
        if (p->nfields != x->nfields) return RX_CMP_NO;
        rx_cmp r = RX_CMP_YES;
        for (int i = 0; i < p->nfields; i++) r = cmp_and(r, match_walk(c, p->fields[i], x->fields[i]));
        return r;
    }
    case RX_SI_CALLABLE:
        /* A callable argument binds nothing; it is checked with the bindings so far. */
        if (c->bind) return RX_CMP_YES;
        return rx_si_is_base_of(c->ar, rx_si_subst(c->a, p, c->m), x);
    case RX_SI_OBJECT:
        break;
    }
    RX_UNREACHABLE();
}

/* Contract: matches the signature annotation `param` against the argument annotation
 * `arg`. Every param dim or prim value that is a bare variable not yet in m is bound
 * to the argument's expression (m accumulates; entries already in m are respected);
 * every other param dim is compared, with m substituted, to the argument's. Returns
 * NO on a contradiction (kind, dtype, rank, field count, or literals that differ),
 * MAYBE when the argument is coarser than the param or a dim is not decided (the call
 * then needs a run-time check), YES when proved. Variables the argument's coarseness
 * left unbound stay out of m: the caller erases them from the result annotation.
 * Expressions built by substitution go into a. */
rx_cmp rx_si_match(rx_arith *ar, rx_arena *a, const rx_sinfo *param, const rx_sinfo *arg,
                   rx_vmap *m)
{
    RX_ASSERT(param && arg && m);
    match_ctx c = {ar, a, m, true};
    match_walk(&c, param, arg);
    c.bind = false;
    return match_walk(&c, param, arg);
}

/* ---------------------------------------------------------------- identity */

static bool expr_same_opt(const rx_expr *x, const rx_expr *y)
{
    if (!x || !y) return x == y;
    return rx_expr_same(x, y);
}

/* Contract: true when x and y are the same annotation structurally: same kinds,
 * dtypes, ranks, dims (rx_expr_same: variables by pointer), prim values, fields,
 * results and callable svars (by pointer, in order). NULL equals only NULL. */
bool rx_si_same(const rx_sinfo *x, const rx_sinfo *y)
{
    if (x == y) return true;
    if (!x || !y || x->kind != y->kind) return false;
    switch ((rx_sikind)x->kind) {
    case RX_SI_OBJECT:
        return true;
    case RX_SI_PRIM:
        return x->dtype == y->dtype && expr_same_opt(x->value, y->value);
    case RX_SI_TENSOR:
    case RX_SI_SHAPE:
        if (x->kind == RX_SI_TENSOR && x->dtype != y->dtype) return false;
        if (x->ndim != y->ndim || dims_known(x) != dims_known(y)) return false;
        for (int i = 0; x->dims && i < x->ndim; i++)
            if (!rx_expr_same(x->dims[i], y->dims[i])) return false;
        return true;
    case RX_SI_TUPLE:
    case RX_SI_CALLABLE:
        if (x->nfields != y->nfields) return false;
        for (int i = 0; i < x->nfields; i++)
            if (!rx_si_same(x->fields[i], y->fields[i])) return false;
        if (x->kind == RX_SI_TUPLE) return true;
        if (x->nsvars != y->nsvars || !rx_si_same(x->ret, y->ret)) return false;
        for (int i = 0; i < x->nsvars; i++)
            if (x->svars[i] != y->svars[i]) return false;
        return true;
    }
    RX_UNREACHABLE();
}
