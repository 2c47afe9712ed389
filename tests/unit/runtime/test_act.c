/*
 * test_act.c — the runtime's epilogue activations (runtime/library_act.c over
 * rt_vmath_lanes.h: GELU, tanh GELU, SiLU, hardswish, relu) on the path this CPU picks, against
 * the formulas in double, over a dense sweep and the special values. ctest runs it three
 * times: as is (AVX-512 on a CPU that has it), with RX_ACT_KERNEL=avx2 and with
 * RX_ACT_KERNEL=portable (libm's erff, expf, tanhf); the first check asserts the path
 * the knob asked for, so each run tests the path it names.
 *
 * Inputs: every 2048th float of [-16, 16] (low bits varied; ~1 million values; erf's
 * pieces meet at |x| / sqrt 2 = 1 and clamp at 3.92) and every 2^16th float bit
 * pattern with a finite value, plus the edges (+-0, +-1e-30, subnormals, +-100, +-1e30,
 * +inf, NaN). Bounds, |got - want| <= U ulp(want) + A |x| + 2^-125 max(1, |x|) (the
 * last: results below about 2^-126 |x| are flushed, e^x being clamped to stay normal):
 * relu exact; GELU
 * U = 3, A = 2^-24 (for x below about -3, 1 + erf cancels: an absolute error of about
 * 2^-25 |x|, as with libm's erff); SiLU U = 4, A = 0; tanh GELU U = 4, A = 2^-24 (its
 * x (c1 + c2 x^2) rounds, and e^(-2u) amplifies that by 2u); hardswish U = 1, A = 2^-23
 * (x * 1/6 + 0.5 in f32, as the import's bindings compute it: near x = -3 the sum
 * cancels, an absolute error of about 2^-25 |x|). Measured maxima (AVX-512 and
 * AVX2 equal): printed by the test. NaN gives NaN; +inf gives +inf; rows of every
 * length 1..40 give the same values as one long row (the padded tail), and a bias is
 * added before the activation. A planted error (one erf coefficient off by a unit in
 * its 20th bit) fails the GELU bound.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"
#include "../../../runtime/rt_int.h"
#include "gemm_ref.h"

typedef struct act_case {
    int act;
    const char *name;
    double ulps, abs_x; /* the bound: ulps ulp(want) + abs_x |x| + 2^-126 */
} act_case;

static const act_case CASES[] = {{RX_RT_ACT_RELU, "relu", 0, 0},
                                 {RX_RT_ACT_GELU, "gelu", 3, 0x1p-24},
                                 {RX_RT_ACT_SILU, "silu", 4, 0},
                                 {RX_RT_ACT_GELU_TANH, "gelu_tanh", 4, 0x1p-24},
                                 {RX_RT_ACT_HARDSWISH, "hardswish", 1, 0x1p-23}};


static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static double ulp_of(double w)
{
    float wf = (float)w;
    return fabsf(wf) < 0x1p-126f ? 0x1p-149 : ldexp(1.0, ilogb(wf) - 23);
}

static const float EDGE[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 0x1p-149f, -0x1p-149f, 100.0f,
                             -100.0f, 1e30f, -1e30f, 1.4142135f, -1.4142135f, 5.5437603f,
                             -5.5437603f, 5.5437613f, -5.5437613f, 88.0f, -88.0f, 89.0f,
                             -89.0f, 3.0f, -3.0f};

/* The inputs (heap; *n of them). */
static float *inputs(int *n)
{
    enum { DENSE = (0x41800000u >> 11) * 2, WIDE = 1 << 16 };
    int cap = DENSE + WIDE + (int)(sizeof EDGE / sizeof EDGE[0]), k = 0;
    float *x = malloc(sizeof(float) * (size_t)cap);
    ck_assert_ptr_nonnull(x);
    for (uint32_t i = 0; i < 0x41800000u >> 11; i++) {
        uint32_t b = (i << 11) | (i * 7u & 2047u);
        x[k++] = from_bits(b);
        x[k++] = from_bits(b | 0x80000000u);
    }
    for (uint32_t i = 0; i < WIDE; i++) {
        float f = from_bits(i << 16 | (i * 13u & 0xffffu));
        if (isfinite(f)) x[k++] = f;
    }
    memcpy(x + k, EDGE, sizeof EDGE);
    *n = k + (int)(sizeof EDGE / sizeof EDGE[0]);
    return x;
}

START_TEST(path_is_the_asked_one)
{
    const char *env = getenv("RX_ACT_KERNEL"), *k = rx_rt_act_kernel();
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    bool v4 = false, v3 = false;
#endif
    const char *want = env && !strcmp(env, "portable") ? "portable"
                       : env && !strcmp(env, "avx2")   ? (v3 ? "avx2+fma" : "portable")
                       : v4 && v3                      ? "avx512"
                       : v3                            ? "avx2+fma"
                                                       : "portable";
    ck_assert_str_eq(k, want);
}
END_TEST

START_TEST(accuracy)
{
    int n;
    float *x = inputs(&n);
    float *y = malloc(sizeof(float) * (size_t)n);
    ck_assert_ptr_nonnull(y);
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const act_case *ac = &CASES[c];
        memcpy(y, x, sizeof(float) * (size_t)n);
        rx_rt_epilogue_rows(y, 1, n, n, NULL, ac->act);
        double worst = 0;
        for (int i = 0; i < n; i++) {
            double want = act_ref(ac->act, (double)x[i]);
            if (isnan(x[i])) {
                ck_assert_msg(isnan(y[i]), "%s(NaN) = %a", ac->name, (double)y[i]);
                continue;
            }
            double err = fabs((double)y[i] - want);
            double floor = 0x1p-125 * fmax(1.0, fabs((double)x[i]));
            double tol = ac->ulps * ulp_of(want) + ac->abs_x * fabs((double)x[i]) + floor;
            ck_assert_msg(err <= tol, "%s(%a) = %a, want %a (%.3g ulp)", ac->name, (double)x[i],
                          (double)y[i], want, err / ulp_of(want));
            if (fabs(want) > 0x1p-100 && err / ulp_of(want) > worst && ac->abs_x == 0)
                worst = err / ulp_of(want);
            if (ac->abs_x > 0 && fabs(want) > 0.25 * fabs((double)x[i]) &&
                err / ulp_of(want) > worst)
                worst = err / ulp_of(want); /* where 1 + erf or 1 + tanh does not cancel */
        }
        fprintf(stderr, "test_act [%s] %s: at most %.2f ulp (where no absolute term counts)\n",
                rx_rt_act_kernel(), ac->name, worst);
        /* specials */
        float sp[3] = {NAN, INFINITY, -NAN};
        rx_rt_epilogue_rows(sp, 1, 3, 3, NULL, ac->act);
        ck_assert(isnan(sp[0]) && isnan(sp[2]));
        ck_assert(sp[1] == INFINITY);
    }
    free(x);
    free(y);
}
END_TEST

/* Rows of every length 1..40 and a bias: each value equals the long row's result for the
 * same input (the padded tail computes as the body does). */
START_TEST(tails_and_bias)
{
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        int act = CASES[c].act;
        for (int n = 1; n <= 40; n++) {
            float x[40], bias[40], y[40], one[64];
            for (int i = 0; i < n; i++) {
                x[i] = -6.0f + 12.0f * (float)(i * 7 + n) / 287.0f;
                bias[i] = 0.25f * (float)i - 3.0f;
            }
            memcpy(y, x, sizeof(float) * (size_t)n);
            rx_rt_epilogue_rows(y, 1, n, n, bias, act);
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < 64; j++) one[j] = x[i] + bias[i];
                rx_rt_epilogue_rows(one, 1, 64, 64, NULL, act);
                ck_assert_msg(!memcmp(&one[i % 16], &y[i], 4), "%s n %d i %d: %a vs %a",
                              CASES[c].name, n, i, (double)y[i], (double)one[i % 16]);
            }
        }
    }
}
END_TEST

static Suite *act_suite(void)
{
    Suite *s = suite_create("act");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, path_is_the_asked_one);
    tcase_add_test(tc, accuracy);
    tcase_add_test(tc, tails_and_bias);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(act_suite()); }
