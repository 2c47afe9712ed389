/*
 * test_arith.c — symbolic arithmetic: canonical simplification, proofs, bounds and
 * evaluation (compiler/arith). Expressions are built with the constructors of
 * arith.h in a per-test arena; simplified forms are checked through their printed
 * text, which pins both the algebra and the canonical order.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relax/arith.h"
#include "../rx_check.h"

static rx_arena *A;
static rx_arith *AR;
static rx_svar *n_, *m_, *k_, *p_, *x32_; /* n, m, k: shape vars; p: param; x32: i32 param */

static void setup(void)
{
    A = rx_arena_new();
    AR = rx_arith_new(A);
    n_ = rx_svar_new(A, "n", RX_DT_I64, RX_SV_SHAPE, 1);
    m_ = rx_svar_new(A, "m", RX_DT_I64, RX_SV_SHAPE, 2);
    k_ = rx_svar_new(A, "k", RX_DT_I64, RX_SV_SHAPE, 3);
    p_ = rx_svar_new(A, "p", RX_DT_I64, RX_SV_PARAM, 4);
    x32_ = rx_svar_new(A, "x", RX_DT_I32, RX_SV_PARAM, 5);
}

static void teardown(void)
{
    rx_arith_free(AR);
    rx_arena_free(A);
}

/* ---- builders ---- */
static rx_expr *V(const rx_svar *v) { return rx_e_var(A, v); }
static rx_expr *I(int64_t v) { return rx_e_int(A, v); }
static rx_expr *bin(rx_ekind k, rx_expr *a, rx_expr *b) { return rx_e_binary(A, k, a, b); }
static rx_expr *add(rx_expr *a, rx_expr *b) { return bin(RX_E_ADD, a, b); }
static rx_expr *sub(rx_expr *a, rx_expr *b) { return bin(RX_E_SUB, a, b); }
static rx_expr *mul(rx_expr *a, rx_expr *b) { return bin(RX_E_MUL, a, b); }
static rx_expr *fdiv(rx_expr *a, rx_expr *b) { return bin(RX_E_FLOORDIV, a, b); }
static rx_expr *fmod_(rx_expr *a, rx_expr *b) { return bin(RX_E_FLOORMOD, a, b); }
static rx_expr *emin(rx_expr *a, rx_expr *b) { return bin(RX_E_MIN, a, b); }
static rx_expr *emax(rx_expr *a, rx_expr *b) { return bin(RX_E_MAX, a, b); }
#define N V(n_)
#define M V(m_)
#define K V(k_)
#define P V(p_)

/* Printed simplified form. */
static const char *S(rx_expr *e) { return rx_expr_str(A, rx_arith_simplify(AR, e)); }
static bool EQ(rx_expr *a, rx_expr *b) { return rx_arith_prove_equal(AR, a, b); }
static bool PROVE(rx_expr *c) { return rx_arith_prove(AR, c); }

/* Equal by proof and by identical simplified forms. */
static void check_equal(rx_expr *a, rx_expr *b)
{
    ck_assert(EQ(a, b));
    ck_assert(rx_expr_same(rx_arith_simplify(AR, a), rx_arith_simplify(AR, b)));
}

/* ================================================================ simplify */

START_TEST(commutativity)
{
    check_equal(mul(I(4), N), mul(N, I(4)));
    ck_assert_str_eq(S(mul(I(4), N)), "n * 4");
    check_equal(add(M, N), add(N, M));
    ck_assert_str_eq(S(add(M, N)), "n + m");
}
END_TEST

START_TEST(distribution)
{
    check_equal(mul(add(N, I(1)), I(4)), add(mul(I(4), N), I(4)));
    ck_assert_str_eq(S(mul(add(N, I(1)), I(4))), "n * 4 + 4");
    check_equal(mul(mul(N, I(2)), I(2)), mul(I(4), N));
    ck_assert_str_eq(S(mul(mul(N, I(2)), I(2))), "n * 4");
    /* (n + m) * (n - m) == n*n - m*m */
    check_equal(mul(add(N, M), sub(N, M)), sub(mul(N, N), mul(M, M)));
    ck_assert_str_eq(S(mul(add(N, M), sub(N, M))), "n * n - m * m");
}
END_TEST

START_TEST(cancellation)
{
    ck_assert_str_eq(S(sub(N, N)), "0");
    ck_assert(EQ(sub(N, N), I(0)));
    ck_assert_str_eq(S(sub(add(N, M), add(M, N))), "0");
    ck_assert_str_eq(S(add(sub(N, I(3)), I(3))), "n");
}
END_TEST

START_TEST(division_by_constant)
{
    check_equal(fdiv(mul(N, I(4)), I(4)), N);
    ck_assert_str_eq(S(fdiv(mul(N, I(4)), I(4))), "n");
    check_equal(fmod_(mul(N, I(4)), I(4)), I(0));
    ck_assert_str_eq(S(fdiv(add(mul(I(8), N), I(4)), I(4))), "n * 2 + 1");
    check_equal(fdiv(add(mul(I(8), N), I(4)), I(4)), add(mul(I(2), N), I(1)));
    ck_assert_str_eq(S(fdiv(add(N, I(3)), I(1))), "n + 3");
    ck_assert_str_eq(S(fmod_(add(N, I(3)), I(1))), "0");
    /* n >= 0 (shape var): the remainder 3 stays in [0, 4). */
    ck_assert_str_eq(S(fdiv(add(mul(I(4), N), I(3)), I(4))), "n");
    ck_assert_str_eq(S(fmod_(add(mul(I(4), N), I(3)), I(4))), "3");
    /* p is unbounded: n*4+3 with p... still exact, since 3 is a constant in [0, 4) */
    ck_assert_str_eq(S(fdiv(add(mul(I(4), P), I(3)), I(4))), "p");
    /* but a variable remainder needs bounds */
    ck_assert_str_eq(S(fdiv(add(mul(I(4), N), M), I(4))), "n + m // 4");
    rx_arith_bind_range(AR, m_, 0, 3);
    ck_assert_str_eq(S(fdiv(add(mul(I(4), N), M), I(4))), "n");
    ck_assert_str_eq(S(fmod_(add(mul(I(4), N), M), I(4))), "m");
}
END_TEST

START_TEST(division_rules)
{
    /* common factors: (2n + 1) // 4 == n // 2 and (2n + 1) % 4 == n % 2 * 2 + 1 */
    check_equal(fdiv(add(mul(I(2), N), I(1)), I(4)), fdiv(N, I(2)));
    ck_assert_str_eq(S(fmod_(add(mul(I(2), N), I(1)), I(4))), "n % 2 * 2 + 1");
    /* nested: n // 2 // 4 == n // 8 */
    check_equal(fdiv(fdiv(N, I(2)), I(4)), fdiv(N, I(8)));
    /* negative divisors, floor semantics: n // -2 == (0 - n) // 2 */
    check_equal(fdiv(N, I(-2)), fdiv(sub(I(0), N), I(2)));
    check_equal(fmod_(N, I(-2)), sub(I(0), fmod_(sub(I(0), N), I(2))));
    /* x // x == 1 when x != 0 is known */
    ck_assert_str_eq(S(fdiv(add(N, I(1)), add(I(1), N))), "1");
    ck_assert_str_eq(S(fdiv(N, N)), "n // n"); /* n may be 0 */
    /* readable forms kept */
    ck_assert_str_eq(S(fdiv(add(N, I(1)), I(2))), "(n + 1) // 2");
    ck_assert_str_eq(S(fmod_(N, I(8))), "n % 8");
    /* the constant's multiple of c leaves the division: a stride-4 conv's extent
     * (h - 4) // 4 + 1 is h // 4 (DINOv2's interpolated positions add to its tokens) */
    ck_assert_str_eq(S(fdiv(sub(N, I(4)), I(4))), "n // 4 - 1");
    check_equal(add(fdiv(sub(N, I(4)), I(4)), I(1)), fdiv(N, I(4)));
    check_equal(mul(add(fdiv(sub(N, I(4)), I(4)), I(1)), add(fdiv(sub(M, I(4)), I(4)), I(1))),
                mul(fdiv(N, I(4)), fdiv(M, I(4))));
    ck_assert_str_eq(S(fdiv(add(N, I(5)), I(4))), "(n + 1) // 4 + 1");
    ck_assert_str_eq(S(fmod_(add(N, I(5)), I(4))), "(n + 1) % 4");
    ck_assert_str_eq(S(fmod_(sub(N, I(7)), I(4))), "(n + 1) % 4");
}
END_TEST

/* x // c * c + x % c == x, with any common coefficient: a reshape's flat index
 * (i * 32 + k // 128) * 128 + k % 128 is i * 4096 + k (the GPU matvec then proves x's
 * element at k + 1 is the next one, gpu_matvec.c). */
START_TEST(divmod_merge)
{
    rx_expr *k = add(M, I(1));
    ck_assert_str_eq(S(add(mul(fdiv(N, I(8)), I(8)), fmod_(N, I(8)))), "n");
    ck_assert_str_eq(S(add(mul(add(mul(P, I(32)), fdiv(N, I(128))), I(128)), fmod_(N, I(128)))),
                     "n + p * 4096");
    /* a coefficient on both, and a compound dividend */
    ck_assert_str_eq(S(add(mul(fdiv(k, I(4)), I(12)), mul(fmod_(k, I(4)), I(3)))), "m * 3 + 3");
    check_equal(sub(add(mul(fdiv(k, I(4)), I(4)), fmod_(k, I(4))), k), I(0));
    /* p may be negative: floor semantics keep the identity */
    ck_assert_str_eq(S(add(mul(fdiv(P, I(5)), I(5)), fmod_(P, I(5)))), "p");
    /* no merge: different divisors, dividends or coefficients */
    ck_assert_str_eq(S(add(mul(fdiv(N, I(4)), I(4)), fmod_(N, I(8)))), "n // 4 * 4 + n % 8");
    ck_assert_str_eq(S(add(mul(fdiv(N, I(4)), I(4)), fmod_(M, I(4)))), "n // 4 * 4 + m % 4");
    ck_assert_str_eq(S(add(mul(fdiv(N, I(4)), I(2)), fmod_(N, I(4)))), "n // 4 * 2 + n % 4");
}
END_TEST

/* A padded size, h + (-(h % 14)) % 14 (SAM's window partition pads h to a multiple of
 * 14): a term (y % (k c)) * b inside % c is y * b, so the padded size % 14 is 0, and
 * (S // c) * (b c) is S * b when S % c is 0: the window count times 14 is the padded
 * size again (the partition's reshape then reads whole rows). */
START_TEST(padded_size)
{
    rx_expr *wp = add(N, fmod_(sub(I(0), fmod_(N, I(14))), I(14)));
    ck_assert_str_eq(S(fmod_(wp, I(14))), "0");
    ck_assert_str_eq(S(fmod_(wp, I(7))), "0");
    /* in a sum; a lone product keeps its factors (b * (wp // 14) * 196 // 196 stays exact) */
    check_equal(add(mul(fdiv(wp, I(14)), I(14)), M), add(wp, M));
    check_equal(add(mul(mul(fdiv(wp, I(14)), M), I(28)), N), add(mul(mul(wp, M), I(2)), N));
    ck_assert(EQ(mul(fdiv(wp, I(14)), I(14)), wp));
    ck_assert_str_eq(S(fdiv(mul(mul(fdiv(wp, I(14)), M), I(196)), I(196))), "m * ((n + -n % 14) // 14)");
    check_equal(fmod_(add(N, fmod_(M, I(28))), I(14)), fmod_(add(N, M), I(14)));
    check_equal(fmod_(add(N, mul(fmod_(P, I(12)), I(5))), I(4)), fmod_(add(N, mul(P, I(5))), I(4)));
    /* not: 14 does not divide 21; n % 14 is not 0; the coefficient is not a multiple */
    ck_assert(!EQ(fmod_(add(N, fmod_(M, I(21))), I(14)), fmod_(add(N, M), I(14))));
    ck_assert_str_eq(S(mul(fdiv(N, I(14)), I(14))), "n // 14 * 14");
    ck_assert(!EQ(mul(fdiv(wp, I(14)), I(7)), wp));
    /* values: both rules at n = 0 .. 40 and p = -20 .. 20 */
    rx_expr *e1 = mul(fdiv(wp, I(14)), I(14)), *e2 = fmod_(add(N, mul(fmod_(P, I(12)), I(5))), I(4));
    rx_expr *s1 = rx_arith_simplify(AR, e1), *s2 = rx_arith_simplify(AR, e2);
    for (int v = 0; v <= 40; v++) {
        rx_vmap map = {0};
        rx_vmap_set(&map, n_, I(v));
        rx_vmap_set(&map, p_, I(v - 20));
        int64_t a, b, c, d;
        ck_assert(rx_expr_eval_int(e1, &map, &a) && rx_expr_eval_int(s1, &map, &b) && a == b);
        ck_assert(rx_expr_eval_int(e2, &map, &c) && rx_expr_eval_int(s2, &map, &d) && c == d);
        rx_vmap_free(&map);
    }
}
END_TEST

/* Exact quotients cancel common factors (a reshape's -1: b * 768 elements over b * 48). */
static const char *Q(rx_expr *n, rx_expr *d)
{
    rx_expr *q = rx_arith_exact_quotient(AR, n, d);
    return q ? rx_expr_str(A, q) : "none";
}

START_TEST(exact_quotient)
{
    ck_assert_str_eq(Q(mul(N, I(768)), mul(N, I(48))), "16");
    /* n may be 0: floordiv keeps its quotient */
    ck_assert_str_eq(S(fdiv(mul(N, I(768)), mul(N, I(48)))), "n * 768 // (n * 48)");
    ck_assert_str_eq(Q(mul(mul(N, M), I(1024)), mul(N, M)), "1024");
    ck_assert_str_eq(Q(mul(mul(N, M), I(1024)), mul(N, I(16))), "m * 64");
    ck_assert_str_eq(Q(add(mul(mul(N, M), I(6)), mul(N, I(4))), mul(N, I(2))), "m * 3 + 2");
    ck_assert_str_eq(Q(mul(N, N), N), "n");
    ck_assert_str_eq(Q(mul(I(12), N), I(4)), "n * 3");
    ck_assert_str_eq(Q(mul(N, I(10)), mul(N, I(4))), "none");  /* 10 / 4 is not exact */
    ck_assert_str_eq(Q(mul(N, I(8)), mul(M, I(2))), "none");   /* m does not divide */
    ck_assert_str_eq(Q(add(mul(N, I(8)), I(4)), N), "none");   /* the constant 4 */
    ck_assert_str_eq(Q(mul(N, I(8)), add(N, I(1))), "none");   /* two terms */
    ck_assert_str_eq(Q(mul(N, I(8)), I(0)), "none");
}
END_TEST

START_TEST(min_max)
{
    ck_assert_str_eq(S(emin(N, N)), "n");
    ck_assert(EQ(emin(N, N), N));
    ck_assert_str_eq(S(emax(N, add(N, I(1)))), "n + 1");
    check_equal(emax(N, add(N, I(1))), add(N, I(1)));
    ck_assert_str_eq(S(emin(N, add(N, I(1)))), "n");
    check_equal(emin(N, M), emin(M, N));
    check_equal(emax(mul(N, I(2)), M), emax(M, add(N, N)));
    ck_assert_str_eq(S(emin(M, N)), "min(n, m)");
    ck_assert_str_eq(S(emin(add(N, M), add(N, I(4)))), "n + min(m, 4)");
    /* a shape variable is >= 0 */
    ck_assert_str_eq(S(emax(N, I(0))), "n");
    ck_assert_str_eq(S(emin(P, I(0))), "min(p, 0)");
    ck_assert_str_eq(S(emin(N, I(128))), "min(n, 128)");
    rx_arith_bind_range(AR, n_, 0, 100);
    ck_assert_str_eq(S(emin(N, I(128))), "n");
}
END_TEST

START_TEST(constant_folding)
{
    ck_assert_str_eq(S(fdiv(I(-7), I(2))), "-4");
    ck_assert_str_eq(S(fmod_(I(-7), I(2))), "1");
    ck_assert_str_eq(S(fdiv(I(7), I(-2))), "-4");
    ck_assert_str_eq(S(fmod_(I(7), I(-2))), "-1");
    ck_assert_str_eq(S(fdiv(I(-8), I(2))), "-4");
    ck_assert_str_eq(S(mul(add(I(2), I(3)), I(4))), "20");
    ck_assert_str_eq(S(emin(I(3), I(5))), "3");
    ck_assert_str_eq(S(emax(I(-3), I(-5))), "-3");
    ck_assert_str_eq(S(rx_e_unary(A, RX_E_NEG, I(6))), "-6");
    ck_assert_str_eq(S(fdiv(N, I(0))), "n // 0"); /* undefined: left alone */
    ck_assert_str_eq(S(fdiv(I(5), I(0))), "5 // 0");
}
END_TEST

START_TEST(overflow_left_alone)
{
    rx_expr *e = add(I(INT64_MAX), I(1));
    ck_assert_str_eq(S(e), "9223372036854775807 + 1");
    ck_assert_str_eq(S(fdiv(I(INT64_MIN), I(-1))), "-9223372036854775808 // -1");
    ck_assert_str_eq(S(mul(mul(N, I(INT64_MAX)), I(2))), "n * 9223372036854775807 * 2");
    /* the parts that do not overflow still simplify around it */
    ck_assert(!EQ(add(I(INT64_MAX), I(1)), I(INT64_MIN)));
    ck_assert(EQ(add(add(I(INT64_MAX), I(1)), sub(N, N)), add(I(INT64_MAX), I(1))));
}
END_TEST

START_TEST(canonical_order)
{
    /* order by variable id, never by name: b (id 1) before a (id 2) */
    rx_svar *b = rx_svar_new(A, "b", RX_DT_I64, RX_SV_SHAPE, 1);
    rx_svar *a = rx_svar_new(A, "a", RX_DT_I64, RX_SV_SHAPE, 2);
    ck_assert_str_eq(S(add(V(a), V(b))), "b + a");
    ck_assert_str_eq(S(add(V(b), V(a))), "b + a");
    ck_assert_str_eq(S(add(add(mul(V(a), V(b)), V(a)), I(7))), "b * a + a + 7");
    /* subtraction instead of negative coefficients; constant last, or first if
     * every term is negative */
    ck_assert_str_eq(S(add(N, I(-1))), "n - 1");
    ck_assert_str_eq(S(sub(M, N)), "m - n");
    ck_assert_str_eq(S(sub(I(4), N)), "4 - n");
    ck_assert_str_eq(S(sub(sub(I(0), N), I(1))), "-n - 1");
    ck_assert_str_eq(S(mul(N, I(-3))), "n * -3");
    ck_assert_str_eq(S(sub(M, mul(N, I(3)))), "m - n * 3");
    /* idempotent */
    rx_expr *e = add(fdiv(add(N, I(1)), I(2)), sub(emin(M, K), mul(N, I(3))));
    rx_expr *s1 = rx_arith_simplify(AR, e), *s2 = rx_arith_simplify(AR, s1);
    ck_assert(rx_expr_same(s1, s2));
    ck_assert_str_eq(rx_expr_str(A, s1), "(n + 1) // 2 - n * 3 + min(m, k)");
}
END_TEST

START_TEST(dtype_kept)
{
    rx_expr *x = V(x32_), *one = rx_e_typed_int(A, 1, RX_DT_I32);
    rx_expr *s = rx_arith_simplify(AR, add(add(x, one), one));
    ck_assert_int_eq(s->dtype, RX_DT_I32);
    ck_assert_int_eq(s->u.op.b->dtype, RX_DT_I32);
    ck_assert_str_eq(rx_expr_str(A, s), "x + 2");
}
END_TEST

START_TEST(non_integer_parts)
{
    /* float arithmetic stays, integer pieces inside simplify */
    rx_svar *y = rx_svar_new(A, "y", RX_DT_F32, RX_SV_PARAM, 9);
    rx_expr *idx = add(sub(N, N), M);
    rx_expr *c = rx_e_cast(A, RX_DT_F32, idx);
    rx_expr *f = bin(RX_E_ADD, V(y), c);
    ck_assert_str_eq(S(f), "y + f32(m)");
    ck_assert_str_eq(S(bin(RX_E_ADD, V(y), rx_e_float(A, 1.0, RX_DT_F32))), "y + 1.0");
    /* comparisons fold when decided */
    rx_expr *t = rx_arith_simplify(AR, bin(RX_E_LT, N, add(N, I(1))));
    ck_assert(rx_expr_is_int(t, 1));
    ck_assert_int_eq(t->dtype, RX_DT_BOOL);
    rx_expr *s = rx_arith_simplify(AR, rx_e_select(A, bin(RX_E_GE, N, I(0)), M, K));
    ck_assert_str_eq(rx_expr_str(A, s), "m");
    ck_assert_str_eq(S(bin(RX_E_LT, N, M)), "n < m");
    /* an opaque integer atom (select) keeps its canonical operands */
    rx_expr *sel = rx_e_select(A, bin(RX_E_LT, N, M), add(N, N), I(0));
    ck_assert_str_eq(S(sub(add(sel, M), M)), "select(n < m, n * 2, 0)");
}
END_TEST

/* ================================================================ proofs */

START_TEST(negative_cases)
{
    ck_assert(!EQ(mul(N, I(4)), mul(N, I(2))));
    ck_assert(!EQ(mul(fdiv(N, I(4)), I(4)), N));
    ck_assert(!EQ(N, M));
    ck_assert(!EQ(fdiv(add(mul(I(4), N), M), I(4)), N)); /* m unbounded above */
    ck_assert(!EQ(emin(N, M), N));
    ck_assert(!PROVE(bin(RX_E_NE, mul(N, I(4)), mul(N, I(2))))); /* n may be 0 */
    ck_assert(!PROVE(bin(RX_E_LE, N, M)));
    ck_assert(!PROVE(bin(RX_E_GE, P, I(0)))); /* params are not assumed >= 0 */
}
END_TEST

START_TEST(comparisons)
{
    ck_assert(PROVE(bin(RX_E_LT, N, add(N, I(1)))));
    ck_assert(PROVE(bin(RX_E_GT, add(N, I(1)), N)));
    ck_assert(PROVE(bin(RX_E_GE, N, I(0))));
    ck_assert(PROVE(bin(RX_E_LE, N, mul(N, I(2)))));
    ck_assert(PROVE(bin(RX_E_EQ, mul(I(4), N), mul(N, I(4)))));
    ck_assert(PROVE(bin(RX_E_NE, N, add(N, I(1)))));
    ck_assert(PROVE(bin(RX_E_LT, fmod_(N, I(4)), I(4))));
    ck_assert(PROVE(bin(RX_E_LE, emin(N, I(8)), I(8))));
    ck_assert(PROVE(rx_e_unary(A, RX_E_NOT, bin(RX_E_LT, N, I(0)))));
    ck_assert(!PROVE(rx_e_unary(A, RX_E_NOT, bin(RX_E_LT, N, I(5)))));
    ck_assert(PROVE(bin(RX_E_AND, bin(RX_E_GE, N, I(0)), bin(RX_E_LT, M, add(M, I(2))))));
    ck_assert(!PROVE(bin(RX_E_AND, bin(RX_E_GE, N, I(0)), bin(RX_E_LT, M, N))));
    ck_assert(PROVE(bin(RX_E_OR, bin(RX_E_LT, M, N), bin(RX_E_GE, N, I(0)))));
    ck_assert(!PROVE(bin(RX_E_OR, bin(RX_E_LT, M, N), bin(RX_E_LT, N, M))));
    /* !(a && b) by disproving a part */
    ck_assert(PROVE(rx_e_unary(A, RX_E_NOT, bin(RX_E_AND, bin(RX_E_LT, N, M),
                                                 bin(RX_E_LT, N, I(0))))));
    /* with bounds */
    ck_assert(!PROVE(bin(RX_E_LT, N, I(4097))));
    rx_arith_bind_range(AR, n_, 1, 4096);
    ck_assert(PROVE(bin(RX_E_LT, N, I(4097))));
    ck_assert(PROVE(bin(RX_E_NE, mul(N, I(4)), mul(N, I(2)))));
    rx_arith_bind_range(AR, n_, 0, 8192); /* narrows only */
    ck_assert(PROVE(bin(RX_E_LE, N, I(4096))));
    ck_assert(PROVE(bin(RX_E_GT, N, I(0))));
    /* point range: n == 7 */
    rx_arith_bind_range(AR, m_, 7, 7);
    ck_assert(EQ(M, I(7)));
}
END_TEST

/* ================================================================ bounds */

static void check_bound(rx_expr *e, int64_t lo, int64_t hi)
{
    int64_t l, h;
    rx_arith_const_bound(AR, e, &l, &h);
    ck_assert_msg(l == lo && h == hi, "bound of %s: [%lld, %lld], expected [%lld, %lld]",
                  rx_expr_str(A, e), (long long)l, (long long)h, (long long)lo, (long long)hi);
}

START_TEST(bounds)
{
    rx_arith_bind_range(AR, n_, 0, 4096);
    check_bound(add(mul(N, I(4)), I(8)), 8, 16392);
    check_bound(fdiv(add(N, I(1)), I(2)), 0, 2048);
    check_bound(fmod_(N, I(8)), 0, 7);
    check_bound(fmod_(I(5), I(8)), 5, 5);
    check_bound(emin(N, I(128)), 0, 128);
    check_bound(mul(emax(N, I(16)), I(2)), 32, 8192);
    check_bound(sub(I(0), N), -4096, 0);
    check_bound(fdiv(N, I(-2)), -2048, 0);
    check_bound(fdiv(sub(N, I(4096)), I(3)), -1366, 0);
    check_bound(sub(N, N), 0, 0);          /* via the canonical form */
    check_bound(mul(N, N), 0, 16777216);
    check_bound(sub(mul(N, N), I(1)), -1, 16777215);
    check_bound(M, 0, INT64_MAX);         /* shape var: >= 0 only */
    check_bound(add(M, I(1)), 1, INT64_MAX);
    check_bound(P, INT64_MIN, INT64_MAX); /* param: unknown */
    check_bound(sub(I(0), P), INT64_MIN, INT64_MAX);
    check_bound(mul(P, I(0)), 0, 0);
    check_bound(fmod_(P, I(8)), 0, 7);
    check_bound(fmod_(P, I(-8)), -7, 0);
    check_bound(V(x32_), INT32_MIN, INT32_MAX);
    check_bound(mul(M, I(INT64_MAX)), 0, INT64_MAX); /* saturates, no overflow */
    check_bound(bin(RX_E_LT, N, M), 0, 1);
    check_bound(rx_e_select(A, bin(RX_E_LT, N, M), I(3), N), 0, 4096);
    check_bound(fdiv(N, M), 0, 4096); /* where defined (m != 0) */
    rx_arith_bind_range(AR, m_, 2, 4);
    check_bound(fdiv(N, M), 0, 2048);
    check_bound(fmod_(N, M), 0, 3);
}
END_TEST

/* ================================================================ eval */

static bool EVAL(rx_expr *e, const rx_vmap *m, int64_t *out) { return rx_expr_eval_int(e, m, out); }

START_TEST(eval)
{
    int64_t v = 0;
    ck_assert(EVAL(fdiv(I(-7), I(2)), NULL, &v));
    ck_assert_int_eq(v, -4);
    ck_assert(EVAL(fmod_(I(-7), I(2)), NULL, &v));
    ck_assert_int_eq(v, 1);
    ck_assert(EVAL(fmod_(I(7), I(-2)), NULL, &v));
    ck_assert_int_eq(v, -1);
    ck_assert(EVAL(fdiv(I(7), I(-2)), NULL, &v));
    ck_assert_int_eq(v, -4);
    ck_assert(EVAL(bin(RX_E_DIV, I(-7), I(2)), NULL, &v)); /* true division truncates on ints */
    ck_assert_int_eq(v, -3);
    ck_assert(EVAL(bin(RX_E_SHR, I(-7), I(1)), NULL, &v));
    ck_assert_int_eq(v, -4);
    ck_assert(EVAL(bin(RX_E_SHL, I(-3), I(2)), NULL, &v));
    ck_assert_int_eq(v, -12);
    ck_assert(EVAL(rx_e_cast(A, RX_DT_I8, I(300)), NULL, &v));
    ck_assert_int_eq(v, 44);
    ck_assert(EVAL(rx_e_cast(A, RX_DT_I8, I(200)), NULL, &v));
    ck_assert_int_eq(v, -56);

    rx_vmap map = {0};
    rx_vmap_set(&map, n_, I(5));
    rx_vmap_set(&map, m_, I(3));
    ck_assert(EVAL(add(mul(N, I(4)), I(3)), &map, &v));
    ck_assert_int_eq(v, 23);
    ck_assert(EVAL(emin(sub(M, N), emax(N, M)), &map, &v));
    ck_assert_int_eq(v, -2);
    ck_assert(EVAL(rx_e_select(A, bin(RX_E_LT, N, M), I(1), I(2)), &map, &v));
    ck_assert_int_eq(v, 2);
    /* short-circuit: the division by zero is never evaluated */
    ck_assert(EVAL(bin(RX_E_AND, bin(RX_E_LT, N, M), bin(RX_E_EQ, fdiv(N, I(0)), I(1))), &map, &v));
    ck_assert_int_eq(v, 0);
    ck_assert(EVAL(rx_e_unary(A, RX_E_NOT, bin(RX_E_GE, N, M)), &map, &v));
    ck_assert_int_eq(v, 0);

    /* failures leave *out alone */
    v = 99;
    ck_assert(!EVAL(add(N, K), &map, &v)); /* k unbound */
    ck_assert(!EVAL(N, NULL, &v));
    ck_assert(!EVAL(fdiv(N, sub(M, I(3))), &map, &v));
    ck_assert(!EVAL(fmod_(I(1), I(0)), NULL, &v));
    ck_assert(!EVAL(add(I(INT64_MAX), I(1)), NULL, &v));
    ck_assert(!EVAL(mul(I(INT64_MIN), I(-1)), NULL, &v));
    ck_assert(!EVAL(fdiv(I(INT64_MIN), I(-1)), NULL, &v));
    ck_assert(!EVAL(rx_e_unary(A, RX_E_NEG, I(INT64_MIN)), NULL, &v));
    ck_assert(!EVAL(bin(RX_E_SHL, I(1), I(64)), NULL, &v));
    ck_assert(!EVAL(rx_e_float(A, 1.0, RX_DT_F32), NULL, &v));
    rx_expr *big = rx_e_typed_int(A, INT32_MAX, RX_DT_I32);
    ck_assert(!EVAL(add(big, rx_e_typed_int(A, 1, RX_DT_I32)), NULL, &v)); /* i32 overflow */
    ck_assert_int_eq(v, 99);
    rx_vmap_free(&map);
}
END_TEST

/* Simplification preserves values: random expressions evaluated before and after. */
START_TEST(simplify_preserves_values)
{
    uint64_t seed = 12345;
    rx_svar *vars[3] = {n_, m_, p_}; /* p takes negative values */
    for (int iter = 0; iter < 400; iter++) {
        rx_expr *pool[8];
        for (int i = 0; i < 8; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            pool[i] = (seed >> 40) % 3 ? V(vars[(seed >> 20) % 3]) : I((int64_t)((seed >> 30) % 13) - 6);
        }
        rx_expr *e = pool[0];
        for (int i = 1; i < 8; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            static const rx_ekind kinds[] = {RX_E_ADD, RX_E_SUB, RX_E_MUL, RX_E_FLOORDIV,
                                             RX_E_FLOORMOD, RX_E_MIN, RX_E_MAX};
            rx_ekind k = kinds[(seed >> 33) % 7];
            rx_expr *o = pool[i];
            if (k == RX_E_FLOORDIV || k == RX_E_FLOORMOD) o = I((int64_t)((seed >> 45) % 7) - 3);
            e = (seed >> 50) & 1 ? bin(k, e, o) : bin(k, o, e);
        }
        rx_expr *s = rx_arith_simplify(AR, e);
        for (int a = 0; a < 5; a++) {
            rx_vmap map = {0};
            rx_vmap_set(&map, n_, I(a));
            rx_vmap_set(&map, m_, I(3 * a + 1));
            rx_vmap_set(&map, p_, I(3 * a - 7));
            int64_t v1, v2;
            bool ok1 = rx_expr_eval_int(e, &map, &v1), ok2 = rx_expr_eval_int(s, &map, &v2);
            if (ok1) {
                ck_assert_msg(ok2 && v1 == v2, "%s -> %s at n=%d", rx_expr_str(A, e),
                              rx_expr_str(A, s), a);
            }
            rx_vmap_free(&map);
        }
    }
}
END_TEST

static Suite *arith_suite(void)
{
    Suite *s = suite_create("arith");
    TCase *tc = tcase_create("simplify");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, commutativity);
    tcase_add_test(tc, distribution);
    tcase_add_test(tc, cancellation);
    tcase_add_test(tc, exact_quotient);
    tcase_add_test(tc, division_by_constant);
    tcase_add_test(tc, division_rules);
    tcase_add_test(tc, divmod_merge);
    tcase_add_test(tc, padded_size);
    tcase_add_test(tc, min_max);
    tcase_add_test(tc, constant_folding);
    tcase_add_test(tc, overflow_left_alone);
    tcase_add_test(tc, canonical_order);
    tcase_add_test(tc, dtype_kept);
    tcase_add_test(tc, non_integer_parts);
    tcase_add_test(tc, simplify_preserves_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("prove");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, negative_cases);
    tcase_add_test(tc, comparisons);
    suite_add_tcase(s, tc);
    tc = tcase_create("bound_eval");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, bounds);
    tcase_add_test(tc, eval);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rx_check_run(arith_suite());
}
