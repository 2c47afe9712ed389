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
 * hi(x) < d are proved (rx_arith_prove on the canonical difference). Else x is split by
 * a unit c with d = c * m (m a literal; c = d itself, or a term's loop-free
 * coefficient): the terms of x that are multiples of c (proved: t == q * c, q found by
 * cancelling c's factors from t's) sum to A * c, the others to R, and when 0 <= R < c
 * is proved, x // d = A // m and x % d = (A % m) * c + R. A batch loop over a symbolic
 * dim b puts s * i0 * 1024 into a reshape's dividend (s * 1024), whose quotient is then
 * i0 instead of a 64-bit division per multiply-add (an attention product at 2 GFLOP/s);
 * a broadcast head axis reads (s * i1 * 64 + j * 64 + k) // (s * 256), which is i1 // 4.
 * Then every
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

/* Collects the additive terms of e (through + and -) into ts, signs into neg. */
static bool terms(rx_expr *e, bool minus, rx_expr **ts, bool *neg, int *n, int max)
{
    if (e->kind == RX_E_ADD || e->kind == RX_E_SUB)
        return terms(e->u.op.a, minus, ts, neg, n, max) &&
               terms(e->u.op.b, e->kind == RX_E_SUB ? !minus : minus, ts, neg, n, max);
    if (*n == max) return false;
    ts[*n] = e;
    neg[(*n)++] = minus;
    return true;
}

/* Collects the factors of e (through *) into fs; false past max. */
static bool factors(rx_expr *e, rx_expr **fs, int *n, int max)
{
    if (e->kind == RX_E_MUL)
        return factors(e->u.op.a, fs, n, max) && factors(e->u.op.b, fs, n, max);
    if (*n == max) return false;
    fs[(*n)++] = e;
    return true;
}

/* q with t == q * d proved, by cancelling d's factors from t's (s * i0 * 1024 over
 * s * 1024 is i0); NULL when they do not cancel. */
static rx_expr *exact_quot(simp *s, rx_expr *t, rx_expr *d)
{
    enum { MAXF = 16 };
    rx_expr *tf[MAXF], *df[MAXF];
    int nt = 0, nd = 0;
    if (!factors(t, tf, &nt, MAXF) || !factors(d, df, &nd, MAXF)) return NULL;
    int64_t ct = 1, cd = 1, v;
    for (int i = 0; i < nd; i++) {
        if (rx_expr_is_const(df[i], &v)) {
            cd *= v;
            continue;
        }
        int k = 0;
        while (k < nt && !rx_expr_same(tf[k], df[i])) k++;
        if (k == nt) return NULL;
        tf[k] = tf[--nt]; /* cancelled */
    }
    rx_expr *q = NULL;
    for (int i = 0; i < nt; i++) {
        if (rx_expr_is_const(tf[i], &v)) ct *= v;
        else q = q ? bin(s, RX_E_MUL, q, tf[i]) : tf[i];
    }
    if (cd <= 0 || ct % cd) return NULL;
    rx_expr *c = rx_e_typed_int(s->a, ct / cd, (rx_dtype)t->dtype);
    q = q ? (ct / cd == 1 ? q : bin(s, RX_E_MUL, q, c)) : c;
    return rx_arith_prove_equal(s->ar, t, bin(s, RX_E_MUL, q, d)) ? q : NULL;
}

/* The loop-free factors of term t multiplied (s * 64 of s * i1 * 64), or NULL. */
static rx_expr *coefficient(simp *s, rx_expr *t)
{
    enum { MAXF = 16 };
    rx_expr *tf[MAXF], *c = NULL;
    int nt = 0;
    if (!factors(t, tf, &nt, MAXF)) return NULL;
    for (int i = 0; i < nt; i++)
        if (loop_free(s, tf[i])) c = c ? bin(s, RX_E_MUL, c, tf[i]) : tf[i];
    return c;
}

/* x // d and x % d split by a unit c with d = c * m (m a literal >= 1): when x = A * c
 * + R with 0 <= R < c proved (A: the sum of the quotients of x's terms that are
 * multiples of c, R: the other terms), x // d = A // m and x % d = (A % m) * c + R
 * (with m = 1: A and R). The units tried: d itself, then each term's loop-free
 * coefficient. A batch loop over a symbolic dim puts s * i0 * 1024 into a reshape's
 * dividend (s * 1024): the quotient is i0; a broadcast head axis of 4 repeats reads
 * (s * i1 * 64 + j * 64 + k) // (s * 256): i1 // 4. NULL when no unit splits x. */
static rx_expr *split_div(simp *s, rx_expr *r)
{
    enum { MAXT = 32 };
    rx_expr *ts[MAXT], *d = r->u.op.b;
    bool neg[MAXT];
    int n = 0;
    if (!terms(r->u.op.a, false, ts, neg, &n, MAXT)) return NULL;
    rx_dtype dt = (rx_dtype)r->dtype;
    for (int u = -1; u < n; u++) {
        rx_expr *c = u < 0 ? d : coefficient(s, ts[u]), *mq;
        int64_t m;
        if (!c || (u >= 0 && rx_expr_same(c, d))) continue;
        if (u >= 0 && (!(mq = exact_quot(s, d, c)) || !rx_expr_is_const(mq, &m) || m < 2)) continue;
        if (u < 0) m = 1;
        rx_expr *q = NULL, *rest = NULL;
        for (int i = 0; i < n; i++) {
            rx_expr *qi = exact_quot(s, ts[i], c);
            rx_expr **acc = qi ? &q : &rest, *x = qi ? qi : ts[i];
            *acc = *acc ? bin(s, neg[i] ? RX_E_SUB : RX_E_ADD, *acc, x)
                        : (neg[i] ? bin(s, RX_E_SUB, rx_e_typed_int(s->a, 0, dt), x) : x);
        }
        if (!q) continue;
        if (!rest) rest = rx_e_typed_int(s->a, 0, dt);
        rx_expr *lo, *hi;
        if (!bounds(s, rest, &lo, &hi) || !proved(s, RX_E_GE, lo, rx_e_int(s->a, 0)) ||
            !proved(s, RX_E_LT, hi, c))
            continue;
        if (m == 1) return r->kind == RX_E_FLOORDIV ? q : rest;
        rx_expr *lm = rx_e_typed_int(s->a, m, dt);
        if (r->kind == RX_E_FLOORDIV) return bin(s, RX_E_FLOORDIV, q, lm);
        return bin(s, RX_E_ADD, bin(s, RX_E_MUL, bin(s, RX_E_FLOORMOD, q, lm), c), rest);
    }
    return NULL;
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
        rx_expr *x = split_div(s, r);
        if (x) return x;
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
