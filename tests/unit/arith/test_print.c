/*
 * test_print.c — the text form of scalar expressions (compiler/arith/print.c):
 * minimal parentheses by precedence and associativity, literal dtypes written only
 * where the format's typing rule would not reproduce them, and float literals that
 * read back to the same double.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "relax/arith.h"
#include "relax/ir.h"
#include "../rx_check.h"

static rx_arena *A;
static rx_svar *a_, *b_, *c_, *d_, *x32_, *y_, *p_;

static void setup(void)
{
    A = rx_arena_new();
    a_ = rx_svar_new(A, "a", RX_DT_I64, RX_SV_SHAPE, 1);
    b_ = rx_svar_new(A, "b", RX_DT_I64, RX_SV_SHAPE, 2);
    c_ = rx_svar_new(A, "c", RX_DT_I64, RX_SV_SHAPE, 3);
    d_ = rx_svar_new(A, "d", RX_DT_I64, RX_SV_SHAPE, 4);
    x32_ = rx_svar_new(A, "x", RX_DT_I32, RX_SV_PARAM, 5);
    y_ = rx_svar_new(A, "y", RX_DT_F32, RX_SV_PARAM, 6);
    p_ = rx_svar_new(A, "p", RX_DT_BOOL, RX_SV_PARAM, 7);
}

static void teardown(void) { rx_arena_free(A); }

static rx_expr *V(const rx_svar *v) { return rx_e_var(A, v); }
static rx_expr *I(int64_t v) { return rx_e_int(A, v); }
static rx_expr *F(double v) { return rx_e_float(A, v, RX_DT_F32); }
static rx_expr *B(rx_ekind k, rx_expr *x, rx_expr *y) { return rx_e_binary(A, k, x, y); }
static rx_expr *U(rx_ekind k, rx_expr *x) { return rx_e_unary(A, k, x); }
static const char *P(const rx_expr *e) { return rx_expr_str(A, e); }
#define Va V(a_)
#define Vb V(b_)
#define Vc V(c_)
#define Vd V(d_)

START_TEST(associativity)
{
    ck_assert_str_eq(P(B(RX_E_SUB, Va, B(RX_E_SUB, Vb, Vc))), "a - (b - c)");
    ck_assert_str_eq(P(B(RX_E_SUB, B(RX_E_SUB, Va, Vb), Vc)), "a - b - c");
    ck_assert_str_eq(P(B(RX_E_ADD, Va, B(RX_E_ADD, Vb, Vc))), "a + (b + c)");
    ck_assert_str_eq(P(B(RX_E_FLOORDIV, Va, B(RX_E_MUL, Vb, Vc))), "a // (b * c)");
    ck_assert_str_eq(P(B(RX_E_FLOORDIV, B(RX_E_MUL, Va, Vb), Vc)), "a * b // c");
    ck_assert_str_eq(P(B(RX_E_FLOORMOD, Va, B(RX_E_FLOORMOD, Vb, Vc))), "a % (b % c)");
    ck_assert_str_eq(P(B(RX_E_SUB, Va, B(RX_E_ADD, Vb, Vc))), "a - (b + c)");
}
END_TEST

START_TEST(precedence)
{
    ck_assert_str_eq(P(B(RX_E_MUL, B(RX_E_ADD, Va, I(1)), I(4))), "(a + 1) * 4");
    ck_assert_str_eq(P(B(RX_E_ADD, B(RX_E_MUL, Va, Vb), Vc)), "a * b + c");
    ck_assert_str_eq(P(B(RX_E_ADD, Va, B(RX_E_MUL, Vb, Vc))), "a + b * c");
    ck_assert_str_eq(P(U(RX_E_NEG, B(RX_E_ADD, Va, Vb))), "-(a + b)");
    ck_assert_str_eq(P(U(RX_E_NEG, B(RX_E_MUL, Va, Vb))), "-(a * b)");
    ck_assert_str_eq(P(B(RX_E_MUL, U(RX_E_NEG, Va), Vb)), "-a * b");
    ck_assert_str_eq(P(U(RX_E_NEG, U(RX_E_NEG, Va))), "-(-a)");
    ck_assert_str_eq(P(B(RX_E_LT, B(RX_E_ADD, Va, I(1)), B(RX_E_MUL, Vb, I(2)))), "a + 1 < b * 2");
    ck_assert_str_eq(P(B(RX_E_SHL, Va, B(RX_E_ADD, I(1), Vb))), "a << 1 + b");
    ck_assert_str_eq(P(B(RX_E_ADD, B(RX_E_SHL, Va, I(1)), Vb)), "(a << 1) + b");
    ck_assert_str_eq(P(B(RX_E_BITOR, B(RX_E_BITAND, Va, Vb), Vc)), "a & b | c");
    ck_assert_str_eq(P(B(RX_E_BITAND, Va, B(RX_E_BITOR, Vb, Vc))), "a & (b | c)");
    ck_assert_str_eq(P(U(RX_E_BITNOT, B(RX_E_BITXOR, Va, Vb))), "~(a ^ b)");
}
END_TEST

START_TEST(logic_and_comparisons)
{
    rx_expr *lt = B(RX_E_LT, Va, Vb), *lt2 = B(RX_E_LT, Vc, Vd);
    ck_assert_str_eq(P(B(RX_E_AND, lt, B(RX_E_OR, lt2, V(p_)))), "a < b && (c < d || p)");
    ck_assert_str_eq(P(B(RX_E_OR, B(RX_E_AND, lt, lt2), V(p_))), "a < b && c < d || p");
    ck_assert_str_eq(P(U(RX_E_NOT, lt)), "!(a < b)");
    ck_assert_str_eq(P(U(RX_E_NOT, V(p_))), "!p");
    /* comparisons never chain, and never meet a bitwise operator bare */
    ck_assert_str_eq(P(B(RX_E_EQ, lt, lt2)), "(a < b) == (c < d)");
    ck_assert_str_eq(P(B(RX_E_EQ, B(RX_E_BITAND, Va, Vb), Vc)), "(a & b) == c");
    ck_assert_str_eq(P(B(RX_E_BITAND, V(p_), B(RX_E_EQ, Va, Vb))), "p & (a == b)");
}
END_TEST

START_TEST(calls_loads_casts)
{
    rx_buffer buf = {.name = "A", .dtype = RX_DT_F32, .ndim = 2};
    rx_expr *idx[2] = {V(a_), B(RX_E_ADD, Vb, I(1))};
    rx_expr *ld = rx_e_load(A, &buf, idx, 2);
    ck_assert_str_eq(P(ld), "A[a, b + 1]");
    ck_assert_str_eq(P(B(RX_E_MUL, ld, F(2.0))), "A[a, b + 1] * 2.0");
    ck_assert_str_eq(P(B(RX_E_MIN, Va, I(128))), "min(a, 128)");
    ck_assert_str_eq(P(B(RX_E_MAX, B(RX_E_ADD, Va, Vb), I(0))), "max(a + b, 0)");
    ck_assert_str_eq(P(rx_e_select(A, B(RX_E_LT, Va, Vb), Va, I(0))), "select(a < b, a, 0)");
    ck_assert_str_eq(P(rx_e_cast(A, RX_DT_F32, B(RX_E_ADD, Va, I(1)))), "f32(a + 1)");
    rx_expr *arg = B(RX_E_SUB, V(y_), F(1.0));
    ck_assert_str_eq(P(rx_e_call(A, RX_FN_EXP, &arg, 1, RX_DT_F32)), "exp(y - 1.0)");
    rx_expr *args2[2] = {V(y_), F(2.0)};
    ck_assert_str_eq(P(rx_e_call(A, RX_FN_POW, args2, 2, RX_DT_F32)), "pow(y, 2.0)");
    ck_assert_str_eq(P(B(RX_E_MUL, rx_e_call(A, RX_FN_SQRT, &args2[0], 1, RX_DT_F32), V(y_))),
                     "sqrt(y) * y");
}
END_TEST

START_TEST(literal_types)
{
    rx_expr *x = V(x32_);
    ck_assert_str_eq(P(I(3)), "3");
    ck_assert_str_eq(P(I(-3)), "-3");
    ck_assert_str_eq(P(rx_e_typed_int(A, 3, RX_DT_I32)), "i32(3)");
    ck_assert_str_eq(P(rx_e_typed_int(A, -3, RX_DT_I32)), "i32(-3)");
    ck_assert_str_eq(P(B(RX_E_ADD, x, rx_e_typed_int(A, 3, RX_DT_I32))), "x + 3");
    ck_assert_str_eq(P(B(RX_E_ADD, x, I(3))), "x + i64(3)");
    ck_assert_str_eq(P(B(RX_E_ADD, rx_e_typed_int(A, 2, RX_DT_I32), rx_e_typed_int(A, 3, RX_DT_I32))),
                     "i32(2) + i32(3)");
    ck_assert_str_eq(P(B(RX_E_ADD, I(2), I(3))), "2 + 3");
    /* min, max, select branches and pow follow the same rule */
    ck_assert_str_eq(P(B(RX_E_MIN, x, rx_e_typed_int(A, 3, RX_DT_I32))), "min(x, 3)");
    ck_assert_str_eq(P(B(RX_E_MIN, x, I(3))), "min(x, i64(3))");
    ck_assert_str_eq(P(rx_e_select(A, V(p_), x, rx_e_typed_int(A, 0, RX_DT_I32))), "select(p, x, 0)");
    ck_assert_str_eq(P(rx_e_select(A, V(p_), rx_e_typed_int(A, 1, RX_DT_I32),
                                   rx_e_typed_int(A, 0, RX_DT_I32))), "select(p, i32(1), i32(0))");
    ck_assert_str_eq(P(rx_e_float(A, 1.5, RX_DT_F64)), "f64(1.5)");
    ck_assert_str_eq(P(B(RX_E_MUL, V(y_), rx_e_float(A, 0.5, RX_DT_F64))), "y * f64(0.5)");
    ck_assert_str_eq(P(B(RX_E_SUB, Va, I(-3))), "a - -3");
    ck_assert_str_eq(P(U(RX_E_NEG, I(-3))), "-i64(-3)");
    ck_assert_str_eq(P(U(RX_E_NEG, I(3))), "-i64(3)");
    ck_assert_str_eq(P(rx_e_cast(A, RX_DT_F32, I(3))), "f32(i64(3))");
    ck_assert_str_eq(P(B(RX_E_MUL, I(-3), Va)), "-3 * a");
    ck_assert_str_eq(P(B(RX_E_AND, V(p_), rx_e_typed_int(A, 1, RX_DT_BOOL))), "p && bool(1)");
    ck_assert_str_eq(P(rx_e_typed_int(A, 1, RX_DT_BOOL)), "bool(1)");
}
END_TEST

START_TEST(float_literals)
{
    ck_assert_str_eq(P(F(1.0)), "1.0");
    ck_assert_str_eq(P(F(1e-05)), "1e-05");
    ck_assert_str_eq(P(F(0.1)), "0.1");
    ck_assert_str_eq(P(F(-2.5)), "-2.5");
    ck_assert_str_eq(P(F(100.0)), "100.0");
    ck_assert_str_eq(P(F(1e20)), "1e+20");
    static const double vals[] = {0.1, 1.0 / 3.0, 1e300, 5e-324, 123456789.125, -0.0,
                                  3.4028234663852886e38, 2.0 / 3.0};
    for (int i = 0; i < (int)(sizeof vals / sizeof vals[0]); i++) {
        const char *s = P(rx_e_float(A, vals[i], RX_DT_F64));
        ck_assert_msg(strncmp(s, "f64(", 4) == 0, "%s", s);
        double back = strtod(s + 4, NULL);
        ck_assert_msg(back == vals[i] && signbit(back) == signbit(vals[i]), "%s", s);
        ck_assert_msg(strpbrk(s + 4, ".e") != NULL, "%s", s);
    }
}
END_TEST

START_TEST(print_appends)
{
    rx_sb sb = {0};
    rx_sb_puts(&sb, "x = ");
    rx_expr_print(B(RX_E_FLOORDIV, Va, I(2)), &sb);
    ck_assert_str_eq(rx_sb_str(&sb), "x = a // 2");
    rx_sb_free(&sb);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("arith_print");
    TCase *tc = tcase_create("print");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, associativity);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, logic_and_comparisons);
    tcase_add_test(tc, calls_loads_casts);
    tcase_add_test(tc, literal_types);
    tcase_add_test(tc, float_literals);
    tcase_add_test(tc, print_appends);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
