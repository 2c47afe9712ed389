/*
 * test_expf.c — the generated code's float exp (rx_expf in c_prelude.c's prelude), used
 * for exp and sigmoid of f32 (and of f16/bf16, computed in float).
 *
 * A kernel B[i] = exp(A[i]) over ~1.05 million inputs: every 4096th float bit pattern
 * (all signs, exponents and many mantissas), plus the edges: +-0, +-inf, NaN, the
 * overflow threshold (88.7228), the ranges where the result is subnormal and where it
 * underflows to 0, tiny arguments. Each result is within 0.9 ulp of exp computed in
 * double (the measured maximum over every 7th float is 0.88 ulp; the separate
 * multiply-and-add form before the fused one reached 1.0), infinities and zeros
 * exactly where the rounded double result has them, NaN for NaN. A second kernel
 * checks sigmoid against 1 / (1 + exp(-x)) in double within 2 ulp; both are built
 * with -Wall -Wextra -Werror.
 */
#include <math.h>

#include "cg_test.h"
#include "../rx_check.h"

static const char MOD[] =
    "{'format':'relax-json','version':1,'functions':{"
    "'e':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"
    "{'name':'B','buffer':{'shape':['n'],'dtype':'f32'}}],"
    "'body':[{'grid':['i'],'extents':['n'],'body':{'store':'B[i]','value':'exp(A[i])'}}]},"
    "'s':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"
    "{'name':'B','buffer':{'shape':['n'],'dtype':'f32'}}],"
    "'body':[{'grid':['i'],'extents':['n'],'body':{'store':'B[i]','value':'sigmoid(A[i])'}}]}}}";

START_TEST(exp_accuracy)
{
    rx_module *m = cg_read(MOD);
    cg_lib lib = cg_build(m);
    cg_kernel ke = cg_get(lib, "e"), ks = cg_get(lib, "s");
    static const float edge[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7228f, 88.72284f,
                                 88.7229f, 89.0f, 1000.0f, -87.33f, -87.34f, -100.0f,
                                 -103.9f, -103.98f, -104.0f, -200.0f, 1e-30f, -1e-30f,
                                 0x1p-149f, 1.0f, -1.0f, 0.5f, 20.0f, -20.0f};
    enum { NE = sizeof edge / sizeof edge[0], N = (1 << 20) + NE };
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    for (uint32_t i = 0; i < (1u << 20); i++) a[i] = cg_from_bits(i * 4096u + (i & 4095u));
    memcpy(a + (1 << 20), edge, sizeof edge);
    void *data[2] = {a, b};
    int64_t iv[1] = {N};
    ck_assert_int_eq(ke(data, iv), 0);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double want = exp((double)a[i]);
        float wf = (float)want;
        if (isnan(a[i])) {
            ck_assert_msg(isnan(b[i]), "exp(NaN) = %a", (double)b[i]);
        } else if (isinf(wf) || wf == 0.0f) {
            ck_assert_msg(b[i] == wf, "exp(%a) = %a, want %a", (double)a[i], (double)b[i], (double)wf);
        } else {
            double u = cg_ulps(b[i], want);
            ck_assert_msg(u <= 0.9, "exp(%a) = %a: %.3f ulp", (double)a[i], (double)b[i], u);
            if (u > worst) worst = u;
        }
    }
    ck_assert(worst > 0.0); /* not libm's correctly rounded expf by accident: it is ours */
    ck_assert_int_eq(ks(data, iv), 0);
    for (int i = 0; i < N; i++) {
        if (isnan(a[i])) continue;
        double want = 1.0 / (1.0 + exp(-(double)a[i]));
        if ((float)want == 0.0f || fabs(want) < 0x1p-100) continue; /* underflowed tails */
        ck_assert_msg(cg_ulps(b[i], want) <= 2.0, "sigmoid(%a) = %a", (double)a[i], (double)b[i]);
    }
    free(a);
    free(b);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

START_TEST(exp_in_text)
{
    rx_module *m = cg_read(MOD);
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_codegen_c(m, &c, &d));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "= rx_expf(A_"));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "RX_MATH_HELPER float rx_expf(float x)"));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "(1.0f + rx_expf(-(")); /* sigmoid uses it too */
    ck_assert_ptr_null(strstr(rx_sb_str(&c), "+ expf("));
    /* the polynomial in fused multiply-adds: one rounding each, the same in every ISA */
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "= fmaf(p, r, "));
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

static Suite *expf_suite(void)
{
    Suite *s = suite_create("expf");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, exp_accuracy);
    tcase_add_test(tc, exp_in_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(expf_suite()); }
