/*
 * canonical.c — canonical forms of integer expressions.
 *
 * An integer expression over + - * // % min max becomes a sum
 *     c + Σ coef_i * mono_i
 * of monomials with int64 coefficients (rxi_ar_sum in arith_int.h). A monomial is a
 * sorted product of atoms: variables, and floordiv / floormod / min / max nodes whose
 * operands are themselves rebuilt canonical forms; any other integer node (select,
 * load, cast, shifts, ...) is an opaque atom with simplified operands. Atoms are
 * ordered by rxi_ar_expr_cmp: variables first by id (never by name), then other nodes by
 * kind and operands. Invariants of a sum: terms sorted by (degree descending, atoms),
 * no zero coefficient, no repeated monomial; so two expressions equal under the
 * algebra have identical sums, and rebuilding gives rx_expr_same results.
 *
 * Rules beyond the ring laws, for a constant divisor c > 0 (negative divisors are
 * mapped to positive ones: x // c == (-x) // (-c), x % c == -((-x) % (-c))):
 *   - terms whose coefficients c divides leave the division: (8n + 4) // 4 == 2n + 1,
 *     (n * 4) % 4 == 0; so does the constant's multiple of c: (n - 4) // 4 == n // 4 - 1,
 *     (n + 5) % 4 == (n + 1) % 4 (the constant left in [0, c));
 *   - if bounds put the rest r in one bucket [k c, (k+1) c), r // c == k and
 *     r % c == r - k c: (4n + 3) // 4 == n for n >= 0;
 *   - a common factor g of c and the coefficients of r is divided out:
 *     (2n + 1) // 4 == n // 2, (2n + 1) % 4 == 2 (n % 2) + 1;
 *   - (x // a) // b == x // (a b);
 *   - inside x % c, a term (y % (k c)) * b is y * b (congruent modulo c);
 *   - in a sum, (S // c) * (b c) == S * b when S % c is proved 0 by these rules (a
 *     padded size (h + -(h % 14) % 14) // 14 * 14 is the padded size); a lone product
 *     keeps its factors, so a product of window counts divided by their sizes stays an
 *     exact quotient (b * (hp // 14) * 196 // 196 is b * (hp // 14)).
 * min / max: decided when bounds order the operands (max(n, n + 1) == n + 1), common
 * terms move out (min(n + m, n + 4) == n + min(m, 4)), operands are ordered.
 * Constants fold with floor semantics. Every coefficient operation checks for int64
 * overflow; a subexpression whose folding would overflow stays as written (an opaque
 * atom) rather than wrap.
 *
 * Rebuilt order (readable, stable): monomials by degree, then variable order, each
 * written `n * 4` (coefficient after); the first positive term leads; negative
 * coefficients subtract (`n - m`, not `n + m * -1`); the constant comes last
 * (`n * 4 + 4`), except that it leads when every term is negative (`4 - n`).
 *
 * Exact quotients (rxi_ar_exact_quotient): n / d when d is one monomial (or a constant)
 * dividing every term of n and n's constant, as a polynomial identity: (b * 768) / (b * 48)
 * == 16. It is the value of n // d whenever d != 0, which floordiv's rules cannot assume
 * (b == 0 makes b * 768 // (b * 48) undefined); callers use it where d is known nonzero
 * or where any value is acceptable at d == 0 (a reshape's -1 over an empty tensor).
 *
 * Cost: sums are sorted arrays; a chain of k additions costs O(k log k); a product of
 * sums with s and t terms costs O(s t log(s t)) and falls back to an opaque product
 * atom past 1024 terms. Scratch memory is freed after each top-level call.
 */
#include <stdlib.h>
#include <string.h>

#include "arith_int.h"
#include "relax/ir.h"

#define MAX_TERMS 1024

/* ---------------------------------------------------------------- ordering */

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int cmp_str(const char *a, const char *b)
{
    if (!a || !b) return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int cmp_var(const rx_svar *a, const rx_svar *b)
{
    if (a == b) return 0;
    int r = cmp_i64(a->id, b->id);
    if (!r) r = cmp_str(a->name, b->name);
    if (!r) r = (uintptr_t)a < (uintptr_t)b ? -1 : 1; /* distinct variables, same id */
    return r;
}

/* Total order: variables (by id) before every other node; then kind, dtype, payload
 * and operands. Deterministic except for distinct variables sharing id and name. */
int rxi_ar_expr_cmp(const rx_expr *x, const rx_expr *y)
{
    if (x == y) return 0;
    int rx = x->kind == RX_E_VAR ? -1 : x->kind, ry = y->kind == RX_E_VAR ? -1 : y->kind;
    int r = cmp_i64(rx, ry);
    if (!r) r = cmp_i64(x->dtype, y->dtype);
    if (r) return r;
    switch (x->kind) {
    case RX_E_INT: return cmp_i64(x->u.ival, y->u.ival);
    case RX_E_FLOAT: {
        uint64_t a, b;
        memcpy(&a, &x->u.fval, sizeof a);
        memcpy(&b, &y->u.fval, sizeof b);
        return a < b ? -1 : a > b;
    }
    case RX_E_VAR: return cmp_var(x->u.var, y->u.var);
    case RX_E_LOAD: {
        const struct rx_buffer *a = x->u.load.buf, *b = y->u.load.buf;
        if (a != b) {
            r = cmp_i64(a->id, b->id);
            if (!r) r = cmp_str(a->name, b->name);
            if (!r) r = (uintptr_t)a < (uintptr_t)b ? -1 : 1;
            return r;
        }
        r = cmp_i64(x->u.load.nidx, y->u.load.nidx);
        break;
    }
    case RX_E_CALL:
        r = cmp_i64(x->u.call.fn, y->u.call.fn);
        if (!r) r = cmp_i64(x->u.call.nargs, y->u.call.nargs);
        break;
    default: break;
    }
    for (int i = 0, n = rx_expr_nchildren(x); !r && i < n; i++)
        r = rxi_ar_expr_cmp(rx_expr_child(x, i), rx_expr_child(y, i));
    return r;
}

/* Degree descending, then atoms lexicographically. */
static int mono_cmp(const rxi_ar_mono *a, const rxi_ar_mono *b)
{
    if (a->n != b->n) return a->n > b->n ? -1 : 1;
    for (int i = 0; i < a->n; i++) {
        int r = rxi_ar_expr_cmp(a->atoms[i], b->atoms[i]);
        if (r) return r;
    }
    return 0;
}

static int mono_qsort_cmp(const void *a, const void *b) { return mono_cmp(a, b); }

/* ---------------------------------------------------------------- sums */

static rxi_ar_sum *s_new(rxi_ar_cx *cx, int nterms)
{
    rxi_ar_sum *s = RX_NEW(cx->tmp, rxi_ar_sum);
    if (nterms) s->t = RX_NEWN(cx->tmp, rxi_ar_mono, nterms);
    return s;
}

static rxi_ar_sum *s_const(rxi_ar_cx *cx, int64_t c)
{
    rxi_ar_sum *s = s_new(cx, 0);
    s->c = c;
    return s;
}

static rxi_ar_sum *s_atom(rxi_ar_cx *cx, rx_expr *a)
{
    rxi_ar_sum *s = s_new(cx, 1);
    s->t[0].atoms = RX_NEWN(cx->tmp, rx_expr *, 1);
    s->t[0].atoms[0] = a;
    s->t[0].n = 1;
    s->t[0].coef = 1;
    s->n = 1;
    return s;
}

/* Sorts the terms, merges equal monomials and drops zero coefficients; false on
 * overflow of a merged coefficient. */
static bool s_normalize(rxi_ar_sum *s)
{
    if (s->n > 1) qsort(s->t, (size_t)s->n, sizeof *s->t, mono_qsort_cmp);
    int w = 0;
    for (int i = 0; i < s->n; i++) {
        if (w > 0 && mono_cmp(&s->t[w - 1], &s->t[i]) == 0) {
            if (__builtin_add_overflow(s->t[w - 1].coef, s->t[i].coef, &s->t[w - 1].coef))
                return false;
        } else {
            if (w > 0 && s->t[w - 1].coef == 0) w--;
            s->t[w++] = s->t[i];
        }
    }
    if (w > 0 && s->t[w - 1].coef == 0) w--;
    s->n = w;
    return true;
}

static rxi_ar_sum *s_scale(rxi_ar_cx *cx, const rxi_ar_sum *x, int64_t k);

/* The divisor c > 0 of term t when it is a lone floordiv (kind RX_E_FLOORDIV) or floormod
 * atom by a constant, else 0. */
static int64_t divmod_term(const rxi_ar_mono *t, int kind)
{
    int64_t c = 0;
    if (t->n != 1 || t->atoms[0]->kind != kind || !rx_expr_is_const(t->atoms[0]->u.op.b, &c))
        return 0;
    return c > 0 ? c : 0;
}

/* (x // c) * (b c) + (x % c) * b == x * b: the two terms leave s for x's canonical sum
 * (a reshape's flat index, (i * 32 + k // 128) * 128 + k % 128, is i * 4096 + k); s
 * itself when no pair matches or the merge would overflow. */
static rxi_ar_sum *merge_divmod(rxi_ar_cx *cx, rxi_ar_sum *s)
{
    for (int i = 0; s && i < s->n; i++) {
        int64_t c = divmod_term(&s->t[i], RX_E_FLOORDIV), bc;
        if (!c) continue;
        for (int j = 0; j < s->n; j++) {
            const rx_expr *d = s->t[i].atoms[0], *m = s->t[j].atoms[0];
            if (divmod_term(&s->t[j], RX_E_FLOORMOD) != c ||
                rxi_ar_expr_cmp(d->u.op.a, m->u.op.a) != 0 ||
                __builtin_mul_overflow(s->t[j].coef, c, &bc) || bc != s->t[i].coef)
                continue;
            rxi_ar_sum *rest = s_new(cx, s->n - 2);
            for (int t = 0; t < s->n; t++)
                if (t != i && t != j) rest->t[rest->n++] = s->t[t];
            rest->c = s->c;
            rxi_ar_sum *x = s_scale(cx, rxi_ar_canon(cx, d->u.op.a), s->t[j].coef);
            rxi_ar_sum *r = x ? rxi_ar_sum_add(cx, rest, x, 1) : NULL;
            return r ? r : s; /* overflow: the terms stay as they are */
        }
    }
    return s;
}

static rxi_ar_sum *divmod_pos(rxi_ar_cx *cx, const rxi_ar_sum *x, int64_t c, bool is_mod, int dt);
static rxi_ar_sum *s_mul(rxi_ar_cx *cx, const rxi_ar_sum *x, const rxi_ar_sum *y, bool *too_big);

/* In a sum, (S // c) * (b c) == S * b when S % c == 0 is proved (a padded size: (h +
 * -(h % 14) % 14) // 14 * 14 is h + -(h % 14) % 14): the first such factor of a term
 * leaves s for S's canonical sum; s itself when none does or on overflow. Not applied
 * to lone products (canon_mul), whose factors exact quotients divide out. */
static rxi_ar_sum *exact_divs(rxi_ar_cx *cx, rxi_ar_sum *s)
{
    for (int i = 0; s && i < s->n; i++)
        for (int a = 0; a < s->t[i].n; a++) {
            const rx_expr *d = s->t[i].atoms[a];
            int64_t c = 0;
            if (d->kind != RX_E_FLOORDIV || !rx_expr_is_const(d->u.op.b, &c) || c <= 1 ||
                s->t[i].coef % c != 0)
                continue;
            rxi_ar_sum *x = rxi_ar_canon(cx, d->u.op.a);
            rxi_ar_sum *m = x ? divmod_pos(cx, x, c, true, d->dtype) : NULL;
            if (!m || m->n != 0 || m->c != 0) continue;
            rxi_ar_sum *rest = s_new(cx, s->n), *one = s_new(cx, 1);
            for (int t = 0; t < s->n; t++)
                if (t != i) rest->t[rest->n++] = s->t[t];
            rest->c = s->c;
            one->t[0].coef = s->t[i].coef / c;
            one->t[0].n = s->t[i].n - 1;
            if (one->t[0].n) {
                one->t[0].atoms = RX_NEWN(cx->tmp, rx_expr *, one->t[0].n);
                for (int k = 0, w = 0; k < s->t[i].n; k++)
                    if (k != a) one->t[0].atoms[w++] = s->t[i].atoms[k];
                one->n = 1;
            } else {
                one->c = s->t[i].coef / c;
            }
            bool big = false;
            rxi_ar_sum *p = s_mul(cx, one, x, &big);
            rxi_ar_sum *r = p ? rxi_ar_sum_add(cx, rest, p, 1) : NULL;
            return r ? r : s;
        }
    return s;
}

rxi_ar_sum *rxi_ar_sum_add(rxi_ar_cx *cx, const rxi_ar_sum *x, const rxi_ar_sum *y, int sign)
{
    rxi_ar_sum *r = s_new(cx, x->n + y->n);
    if (x->n) memcpy(r->t, x->t, sizeof *x->t * (size_t)x->n);
    for (int i = 0; i < y->n; i++) {
        r->t[x->n + i] = y->t[i];
        if (__builtin_mul_overflow(y->t[i].coef, (int64_t)sign, &r->t[x->n + i].coef)) return NULL;
    }
    r->n = x->n + y->n;
    int64_t yc;
    if (__builtin_mul_overflow(y->c, (int64_t)sign, &yc) || __builtin_add_overflow(x->c, yc, &r->c))
        return NULL;
    return s_normalize(r) ? exact_divs(cx, merge_divmod(cx, r)) : NULL;
}

static rxi_ar_sum *s_addc(rxi_ar_cx *cx, const rxi_ar_sum *x, int64_t c)
{
    if (!x) return NULL;
    return rxi_ar_sum_add(cx, x, s_const(cx, c), 1);
}

/* k * x; NULL on overflow. */
static rxi_ar_sum *s_scale(rxi_ar_cx *cx, const rxi_ar_sum *x, int64_t k)
{
    if (!x) return NULL;
    if (k == 0) return s_const(cx, 0);
    rxi_ar_sum *r = s_new(cx, x->n);
    for (int i = 0; i < x->n; i++) {
        r->t[i] = x->t[i];
        if (__builtin_mul_overflow(x->t[i].coef, k, &r->t[i].coef)) return NULL;
    }
    r->n = x->n;
    if (__builtin_mul_overflow(x->c, k, &r->c)) return NULL;
    return r;
}

static bool s_is_const(const rxi_ar_sum *s) { return s->n == 0; }

/* The product of two monomials (atoms merged in order); false on overflow. */
static bool mono_mul(rxi_ar_cx *cx, const rxi_ar_mono *a, const rxi_ar_mono *b, rxi_ar_mono *out)
{
    if (__builtin_mul_overflow(a->coef, b->coef, &out->coef)) return false;
    out->n = a->n + b->n;
    out->atoms = RX_NEWN(cx->tmp, rx_expr *, out->n);
    int i = 0, j = 0, k = 0;
    while (i < a->n || j < b->n) {
        if (j >= b->n || (i < a->n && rxi_ar_expr_cmp(a->atoms[i], b->atoms[j]) <= 0))
            out->atoms[k++] = a->atoms[i++];
        else
            out->atoms[k++] = b->atoms[j++];
    }
    return true;
}

/* x * y distributed; NULL on overflow; *too_big when it would exceed MAX_TERMS. */
static rxi_ar_sum *s_mul(rxi_ar_cx *cx, const rxi_ar_sum *x, const rxi_ar_sum *y, bool *too_big)
{
    *too_big = false;
    if (s_is_const(x)) return s_scale(cx, y, x->c);
    if (s_is_const(y)) return s_scale(cx, x, y->c);
    if ((int64_t)(x->n + 1) * (y->n + 1) > MAX_TERMS) {
        *too_big = true;
        return NULL;
    }
    rxi_ar_sum *r = s_new(cx, (x->n + 1) * (y->n + 1));
    rxi_ar_mono cx_m = {NULL, 0, x->c}, cy_m = {NULL, 0, y->c};
    for (int i = 0; i <= x->n; i++) {
        const rxi_ar_mono *a = i < x->n ? &x->t[i] : &cx_m;
        for (int j = 0; j <= y->n; j++) {
            const rxi_ar_mono *b = j < y->n ? &y->t[j] : &cy_m;
            if (i == x->n && j == y->n) {
                if (__builtin_mul_overflow(x->c, y->c, &r->c)) return NULL;
            } else if (a->coef != 0 && b->coef != 0) {
                if (!mono_mul(cx, a, b, &r->t[r->n++])) return NULL;
            }
        }
    }
    return s_normalize(r) ? r : NULL;
}

/* True when x and y are the same sum. */
static bool s_equal(const rxi_ar_sum *x, const rxi_ar_sum *y)
{
    if (x->n != y->n || x->c != y->c) return false;
    for (int i = 0; i < x->n; i++)
        if (x->t[i].coef != y->t[i].coef || mono_cmp(&x->t[i], &y->t[i]) != 0) return false;
    return true;
}

/* x * x for an interval (never negative). */
static rxi_ar_iv iv_square(rxi_ar_iv x)
{
    rxi_ar_iv r = rxi_ar_iv_mul(x, x);
    if (r.lo < 0) r.lo = 0;
    return r;
}

rxi_ar_iv rxi_ar_sum_bound(rxi_ar_cx *cx, const rxi_ar_sum *s)
{
    rxi_ar_iv r = rxi_ar_iv_point(s->c);
    for (int i = 0; i < s->n; i++) {
        const rxi_ar_mono *m = &s->t[i];
        rxi_ar_iv p = rxi_ar_iv_point(m->coef);
        for (int k = 0; k < m->n; k++) {
            rxi_ar_iv b = rxi_ar_bound_expr(cx->ar, m->atoms[k]);
            if (k + 1 < m->n && rxi_ar_expr_cmp(m->atoms[k], m->atoms[k + 1]) == 0) {
                b = iv_square(b);
                k++;
            }
            p = rxi_ar_iv_mul(p, b);
        }
        r = rxi_ar_iv_add(r, p);
    }
    return r;
}

/* ---------------------------------------------------------------- rebuilding */

static rx_expr *lit(rxi_ar_cx *cx, int64_t v, int dt) { return rx_e_typed_int(cx->ar->a, v, (rx_dtype)dt); }

static rx_expr *bin(rxi_ar_cx *cx, rx_ekind k, rx_expr *a, rx_expr *b)
{
    return rx_e_binary(cx->ar->a, k, a, b);
}

/* A commutative node with its operands in rxi_ar_expr_cmp order. */
static rx_expr *bin_comm(rxi_ar_cx *cx, rx_ekind k, rx_expr *a, rx_expr *b)
{
    return rxi_ar_expr_cmp(a, b) <= 0 ? bin(cx, k, a, b) : bin(cx, k, b, a);
}

static rx_expr *mono_expr(rxi_ar_cx *cx, const rxi_ar_mono *m)
{
    rx_expr *e = m->atoms[0];
    for (int i = 1; i < m->n; i++) e = bin(cx, RX_E_MUL, e, m->atoms[i]);
    return e;
}

/* acc (+|-) coef * mono, or the first term when acc is NULL. */
static rx_expr *add_term(rxi_ar_cx *cx, rx_expr *acc, const rxi_ar_mono *m, int dt)
{
    rx_expr *e = mono_expr(cx, m);
    int64_t c = m->coef;
    if (!acc) {
        if (c == 1) return e;
        if (c == -1) return rx_e_unary(cx->ar->a, RX_E_NEG, e);
        return bin(cx, RX_E_MUL, e, lit(cx, c, dt));
    }
    if (c < 0 && c != INT64_MIN)
        return bin(cx, RX_E_SUB, acc, c == -1 ? e : bin(cx, RX_E_MUL, e, lit(cx, -c, dt)));
    return bin(cx, RX_E_ADD, acc, c == 1 ? e : bin(cx, RX_E_MUL, e, lit(cx, c, dt)));
}

rx_expr *rxi_ar_rebuild(rxi_ar_cx *cx, const rxi_ar_sum *s, int dt)
{
    if (s->n == 0) return lit(cx, s->c, dt);
    int first = -1;
    for (int i = 0; i < s->n && first < 0; i++)
        if (s->t[i].coef > 0) first = i;
    rx_expr *acc = NULL;
    bool const_done = false;
    if (first >= 0) {
        acc = add_term(cx, NULL, &s->t[first], dt);
    } else if (s->c > 0) {
        acc = lit(cx, s->c, dt);
        const_done = true;
    }
    for (int i = 0; i < s->n; i++)
        if (i != first) acc = add_term(cx, acc, &s->t[i], dt);
    if (!const_done && s->c != 0) {
        if (s->c < 0 && s->c != INT64_MIN) acc = bin(cx, RX_E_SUB, acc, lit(cx, -s->c, dt));
        else acc = bin(cx, RX_E_ADD, acc, lit(cx, s->c, dt));
    }
    return acc;
}

/* ---------------------------------------------------------------- canonicalization */


/* A chain of + - and unary minus, flattened so that long chains cost O(k log k). */
static rxi_ar_sum *canon_addchain(rxi_ar_cx *cx, rx_expr *e)
{
    typedef struct { rx_expr *e; int sign; } item;
    RX_VEC(item) stack = {0};
    RX_VEC(item) leaves = {0};
    RX_VEC_PUSH(stack, ((item){e, 1}));
    while (stack.n > 0) {
        item it = stack.items[--stack.n];
        switch (it.e->kind) {
        case RX_E_ADD:
        case RX_E_SUB:
            RX_VEC_PUSH(stack, ((item){it.e->u.op.b, it.e->kind == RX_E_SUB ? -it.sign : it.sign}));
            RX_VEC_PUSH(stack, ((item){it.e->u.op.a, it.sign}));
            break;
        case RX_E_NEG:
            RX_VEC_PUSH(stack, ((item){it.e->u.op.a, -it.sign}));
            break;
        default:
            RX_VEC_PUSH(leaves, it);
        }
    }
    RX_VEC_FREE(stack);
    rxi_ar_sum **parts = RX_NEWN(cx->tmp, rxi_ar_sum *, leaves.n);
    int total = 0;
    for (int i = 0; i < leaves.n; i++) {
        parts[i] = rxi_ar_canon(cx, leaves.items[i].e);
        total += parts[i]->n;
    }
    rxi_ar_sum *r = s_new(cx, total);
    bool ok = true;
    for (int i = 0; i < leaves.n && ok; i++) {
        int64_t sg = leaves.items[i].sign, c;
        for (int k = 0; k < parts[i]->n && ok; k++) {
            r->t[r->n] = parts[i]->t[k];
            ok = !__builtin_mul_overflow(parts[i]->t[k].coef, sg, &r->t[r->n++].coef);
        }
        ok = ok && !__builtin_mul_overflow(parts[i]->c, sg, &c) &&
             !__builtin_add_overflow(r->c, c, &r->c);
    }
    RX_VEC_FREE(leaves);
    if (ok && s_normalize(r)) return exact_divs(cx, merge_divmod(cx, r));
    /* Overflow somewhere: combine the two operands, each canonical or opaque, so the
     * parts that do fold still do. */
    if (e->kind == RX_E_NEG) return s_scale(cx, rxi_ar_canon(cx, e->u.op.a), -1);
    return rxi_ar_sum_add(cx, rxi_ar_canon(cx, e->u.op.a), rxi_ar_canon(cx, e->u.op.b),
                       e->kind == RX_E_SUB ? -1 : 1);
}

/* Greatest common divisor of |a| and b (b > 0). */
static int64_t gcd_pos(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a, y = (uint64_t)b;
    while (x) {
        uint64_t t = y % x;
        y = x;
        x = t;
    }
    return (int64_t)y;
}

/* x // c (or x % c when is_mod) for a constant c > 0; NULL on overflow. */
static rxi_ar_sum *divmod_pos(rxi_ar_cx *cx, const rxi_ar_sum *x, int64_t c, bool is_mod, int dt)
{
    if (c == 1) return is_mod ? s_const(cx, 0) : (rxi_ar_sum *)x;
    /* Step 0 (x % c): a term (y % (k c)) * b is y * b modulo c (a padded size's
     * (-(h % 14)) % 14 inside % 14 is -h): the first such term leaves x for y's sum. */
    for (int i = 0; is_mod && i < x->n; i++) {
        int64_t c2 = divmod_term(&x->t[i], RX_E_FLOORMOD);
        if (!c2 || c2 % c) continue;
        rxi_ar_sum *rest = s_new(cx, x->n);
        for (int t = 0; t < x->n; t++)
            if (t != i) rest->t[rest->n++] = x->t[t];
        rest->c = x->c;
        rxi_ar_sum *y = s_scale(cx, rxi_ar_canon(cx, x->t[i].atoms[0]->u.op.a), x->t[i].coef);
        rxi_ar_sum *nx = y ? rxi_ar_sum_add(cx, rest, y, 1) : NULL;
        if (nx) return divmod_pos(cx, nx, c, is_mod, dt);
    }
    /* Step 1: x = c * q + r, q from the terms c divides. */
    rxi_ar_sum *q = s_new(cx, x->n), *r = s_new(cx, x->n);
    for (int i = 0; i < x->n; i++) {
        if (x->t[i].coef % c == 0) {
            q->t[q->n] = x->t[i];
            q->t[q->n++].coef = x->t[i].coef / c;
        } else {
            r->t[r->n++] = x->t[i];
        }
    }
    r->c = x->c;
    int64_t k = 0, k2 = 0;
    if (r->n == 0) {
        if (is_mod) return rxi_ar_floormod(r->c, c, &k) ? s_const(cx, k) : NULL;
        return rxi_ar_floordiv(r->c, c, &k) ? s_addc(cx, q, k) : NULL;
    }
    /* the constant's multiple of c leaves too: (n - 4) // 4 == n // 4 - 1 (a conv's output
     * extent (h - 4) // 4 + 1 then equals h // 4, as an interpolation target writes it) */
    if (!rxi_ar_floordiv(x->c, c, &k) || !rxi_ar_floormod(x->c, c, &r->c)) return NULL;
    if (k && !is_mod && !(q = s_addc(cx, q, k))) return NULL;
    /* Step 2: r within one bucket [k c, (k+1) c). */
    rxi_ar_iv b = rxi_ar_sum_bound(cx, r);
    if (b.lo != RXA_NEG_INF && b.hi != RXA_POS_INF && rxi_ar_floordiv(b.lo, c, &k) &&
        rxi_ar_floordiv(b.hi, c, &k2) && k == k2) {
        int64_t kc;
        if (!is_mod) return s_addc(cx, q, k);
        return __builtin_mul_overflow(k, c, &kc) ? NULL : s_addc(cx, r, -kc);
    }
    /* Step 3: divide out the common factor g of c and r's coefficients. */
    int64_t g = c;
    for (int i = 0; i < r->n; i++) g = gcd_pos(r->t[i].coef, g);
    if (g > 1) {
        rxi_ar_sum *r2 = s_new(cx, r->n);
        for (int i = 0; i < r->n; i++) {
            r2->t[i] = r->t[i];
            r2->t[i].coef = r->t[i].coef / g;
        }
        r2->n = r->n;
        int64_t k0 = 0;
        (void)rxi_ar_floordiv(r->c, g, &r2->c);
        (void)rxi_ar_floormod(r->c, g, &k0);
        rxi_ar_sum *sub = divmod_pos(cx, r2, c / g, is_mod, dt);
        if (!sub) return NULL;
        if (is_mod) return s_addc(cx, s_scale(cx, sub, g), k0);
        return rxi_ar_sum_add(cx, q, sub, 1);
    }
    /* Step 4: an atom; (y // a) // c == y // (a c). */
    rx_expr *re = rxi_ar_rebuild(cx, r, dt), *atom = NULL;
    int64_t a = 0, ac = 0;
    if (!is_mod && re->kind == RX_E_FLOORDIV && rx_expr_is_const(re->u.op.b, &a) && a > 0 &&
        !__builtin_mul_overflow(a, c, &ac))
        atom = bin(cx, RX_E_FLOORDIV, re->u.op.a, lit(cx, ac, dt));
    if (!atom) atom = bin(cx, is_mod ? RX_E_FLOORMOD : RX_E_FLOORDIV, re, lit(cx, c, dt));
    if (is_mod) return s_atom(cx, atom);
    return rxi_ar_sum_add(cx, q, s_atom(cx, atom), 1);
}

static rxi_ar_sum *canon_divmod(rxi_ar_cx *cx, rx_expr *e)
{
    bool is_mod = e->kind == RX_E_FLOORMOD;
    rxi_ar_sum *x = rxi_ar_canon(cx, e->u.op.a), *y = rxi_ar_canon(cx, e->u.op.b);
    int64_t c = y->c, v = 0;
    if (s_is_const(y) && c != 0) {
        if (s_is_const(x)) {
            bool ok = is_mod ? rxi_ar_floormod(x->c, c, &v) : rxi_ar_floordiv(x->c, c, &v);
            return ok ? s_const(cx, v) : NULL;
        }
        if (c > 0) return divmod_pos(cx, x, c, is_mod, e->dtype);
        if (c == INT64_MIN) return NULL;
        rxi_ar_sum *nx = s_scale(cx, x, -1), *r = nx ? divmod_pos(cx, nx, -c, is_mod, e->dtype) : NULL;
        if (!r) return NULL;
        return is_mod ? s_scale(cx, r, -1) : r;
    }
    if (s_is_const(x) && x->c == 0) return s_const(cx, 0);
    if (!s_is_const(y) && s_equal(x, y)) {
        rxi_ar_iv b = rxi_ar_sum_bound(cx, y);
        if (b.lo > 0 || b.hi < 0) return s_const(cx, is_mod ? 0 : 1);
    }
    rx_expr *a = rxi_ar_rebuild(cx, x, e->dtype), *b = rxi_ar_rebuild(cx, y, e->dtype);
    return s_atom(cx, bin(cx, (rx_ekind)e->kind, a, b));
}

/* Terms of x that y has with the same coefficient (and the constant when equal). */
static rxi_ar_sum *s_common(rxi_ar_cx *cx, const rxi_ar_sum *x, const rxi_ar_sum *y)
{
    rxi_ar_sum *r = s_new(cx, x->n < y->n ? x->n : y->n);
    for (int i = 0, j = 0; i < x->n && j < y->n;) {
        int o = mono_cmp(&x->t[i], &y->t[j]);
        if (o == 0 && x->t[i].coef == y->t[j].coef) r->t[r->n++] = x->t[i];
        if (o <= 0) i++;
        if (o >= 0) j++;
    }
    r->c = x->c == y->c ? x->c : 0;
    return r;
}

static rxi_ar_sum *canon_minmax(rxi_ar_cx *cx, rx_expr *e)
{
    bool is_min = e->kind == RX_E_MIN;
    rxi_ar_sum *x = rxi_ar_canon(cx, e->u.op.a), *y = rxi_ar_canon(cx, e->u.op.b);
    rxi_ar_sum *d = rxi_ar_sum_add(cx, x, y, -1);
    if (d) {
        rxi_ar_iv b = rxi_ar_sum_bound(cx, d);
        if (b.hi <= 0) return is_min ? x : y; /* x <= y */
        if (b.lo >= 0) return is_min ? y : x; /* x >= y */
    }
    rxi_ar_sum *com = s_common(cx, x, y);
    rxi_ar_sum *x2 = rxi_ar_sum_add(cx, x, com, -1), *y2 = rxi_ar_sum_add(cx, y, com, -1);
    if (!x2 || !y2) return NULL;
    rx_expr *a = rxi_ar_rebuild(cx, x2, e->dtype), *b = rxi_ar_rebuild(cx, y2, e->dtype);
    return rxi_ar_sum_add(cx, com, s_atom(cx, bin_comm(cx, (rx_ekind)e->kind, a, b)), 1);
}

static rxi_ar_sum *canon_mul(rxi_ar_cx *cx, rx_expr *e)
{
    rxi_ar_sum *x = rxi_ar_canon(cx, e->u.op.a), *y = rxi_ar_canon(cx, e->u.op.b);
    bool too_big;
    rxi_ar_sum *r = s_mul(cx, x, y, &too_big);
    if (!too_big) return r;
    rx_expr *a = rxi_ar_rebuild(cx, x, e->dtype), *b = rxi_ar_rebuild(cx, y, e->dtype);
    return s_atom(cx, bin_comm(cx, RX_E_MUL, a, b));
}

/* The canonical sum of e, or NULL when folding it would overflow. */
static rxi_ar_sum *canon(rxi_ar_cx *cx, rx_expr *e)
{
    switch (e->kind) {
    case RX_E_INT: return s_const(cx, e->u.ival);
    case RX_E_VAR: return s_atom(cx, e);
    case RX_E_ADD: case RX_E_SUB: case RX_E_NEG: return canon_addchain(cx, e);
    case RX_E_MUL: return canon_mul(cx, e);
    case RX_E_FLOORDIV: case RX_E_FLOORMOD: return canon_divmod(cx, e);
    case RX_E_MIN: case RX_E_MAX: return canon_minmax(cx, e);
    default: {
        rx_expr *s = rxi_ar_simp(cx, e); /* opaque: simplify inside */
        if (rxi_ar_is_arith_kind(s->kind)) return canon(cx, s); /* it folded to arithmetic */
        return s_atom(cx, s);
    }
    }
}

bool rxi_ar_is_arith_kind(int k)
{
    switch (k) {
    case RX_E_INT: case RX_E_VAR: case RX_E_ADD: case RX_E_SUB: case RX_E_NEG: case RX_E_MUL:
    case RX_E_FLOORDIV: case RX_E_FLOORMOD: case RX_E_MIN: case RX_E_MAX:
        return true;
    default:
        return false;
    }
}

rxi_ar_sum *rxi_ar_canon(rxi_ar_cx *cx, rx_expr *e)
{
    rxi_ar_sum *s = canon(cx, e);
    return s ? s : s_atom(cx, e);
}

/* True when the sorted atoms of d are a sub-multiset of those of t; *out gets the rest. */
static bool mono_divides(rxi_ar_cx *cx, const rxi_ar_mono *t, const rxi_ar_mono *d,
                         rxi_ar_mono *out)
{
    if (d->n > t->n || d->coef == 0 || t->coef % d->coef) return false;
    out->coef = t->coef / d->coef;
    out->n = 0;
    out->atoms = RX_NEWN(cx->tmp, rx_expr *, t->n);
    int j = 0;
    for (int i = 0; i < t->n; i++) {
        int r = j < d->n ? rxi_ar_expr_cmp(t->atoms[i], d->atoms[j]) : -1;
        if (r > 0) return false; /* d's atom is missing from t */
        if (r == 0) j++;
        else out->atoms[out->n++] = t->atoms[i];
    }
    return j == d->n;
}

/* The essay's exact quotient: the sum q with q * d == n as polynomials, or NULL. */
rxi_ar_sum *rxi_ar_exact_quotient(rxi_ar_cx *cx, const rxi_ar_sum *n, const rxi_ar_sum *d)
{
    if (s_is_const(d)) {
        if (d->c == 0 || n->c % d->c) return NULL;
        for (int i = 0; i < n->n; i++)
            if (n->t[i].coef % d->c) return NULL;
        rxi_ar_sum *q = s_new(cx, n->n);
        q->c = n->c / d->c;
        for (int i = 0; i < n->n; i++)
            q->t[q->n++] = (rxi_ar_mono){n->t[i].atoms, n->t[i].n, n->t[i].coef / d->c};
        return q;
    }
    if (d->n != 1 || d->c != 0 || n->c != 0) return NULL;
    rxi_ar_sum *q = s_new(cx, n->n);
    for (int i = 0; i < n->n; i++) {
        rxi_ar_mono m;
        if (!mono_divides(cx, &n->t[i], &d->t[0], &m)) return NULL;
        if (m.n == 0) q->c += m.coef; /* at most one term has d's exact atoms */
        else q->t[q->n++] = m;
    }
    return s_normalize(q) ? q : NULL;
}

