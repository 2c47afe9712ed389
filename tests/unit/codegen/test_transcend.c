/*
 * test_transcend.c — the generated code's float erf, tanh, log, sigmoid, sin and cos
 * (rx_erff, rx_tanhf, rx_logf, rx_sinf, rx_cosf in c_prelude.c's prelude,
 * relax/codegen_math.h; sigmoid is 1 / (1 + rx_expf(-x))), used for erf, nn.gelu, tanh,
 * nn.gelu_tanh, log, sigmoid, nn.silu, sin and cos of f32 (and of f16/bf16, computed in
 * float).
 *
 * One module, six kernels B[i] = f(A[i]), run over ~229 thousand inputs: every
 * 32768th float bit pattern, low mantissa bits varied (all signs, exponents,
 * subnormals and many mantissas; an eighth of test_expf.c's sweep, as the sanitizer
 * build runs the functions three times), every 256th float of [0.5, 4) (where erf's
 * pieces meet, at 1, and its largest errors are) and every 1024th of [1/32, 1) (where
 * tanh's meet, at 0.625), plus the edges (+-0, +-inf, NaN, the smallest subnormal,
 * the pieces' joins and clamps, large |x|, sin's and cos's switch of reduction at 120,
 * multiples of pi / 2, their worst cases). Each result is within 2 ulp of the function
 * computed in double, 1 ulp for sin and cos (the header's bounds; measured maxima over
 * every 7th float: erf 1.60, tanh 1.50, log 0.84, sigmoid 1.5, sin 0.563, cos 0.563
 * ulp), except sigmoid's flushed tail (x < -88.72: +0 where the true value is below
 * 2^-128, an absolute error of at most 2^-128); special values are exact: erf(+-inf) =
 * +-1, tanh(+-inf) = +-1, log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, sin and
 * cos of +-inf NaN, NaN for NaN, and -0 gives -0 for erf, tanh and sin. The kernels are built three times: as the baseline (whose bits must
 * equal the compiler evaluator's rx_*_ref, which constant folding uses) and, where the
 * CPU has them, for x86-64-v3 and x86-64-v4 with contraction (what O3's ISA versions
 * do), held to the same bounds. A last check reads the C text: the prelude's functions
 * are called, libm's erff/tanhf/logf/sinf/cosf are not.
 */
#include <math.h>

#include "cg_test.h"
#include "relax/codegen_math.h"
#include "../rx_check.h"

#define KERNEL(NAME, EXPR)                                                                  \
    "'" NAME "':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"\
    "{'name':'B','buffer':{'shape':['n'],'dtype':'f32'}}],"                                 \
    "'body':[{'grid':['i'],'extents':['n'],'body':{'store':'B[i]','value':'" EXPR "'}}]}"

static const char MOD[] = "{'format':'relax-json','version':1,'functions':{"
    KERNEL("erf", "erf(A[i])") "," KERNEL("tanh", "tanh(A[i])") "," KERNEL("log", "log(A[i])")
    "," KERNEL("sigmoid", "sigmoid(A[i])") "," KERNEL("sin", "sin(A[i])") ","
    KERNEL("cos", "cos(A[i])") "}}";

typedef struct fn_case {
    const char *name;
    double (*ref)(double);   /* libm in double */
    float (*own)(float);     /* codegen_math.h's reference copy */
    double ulps;             /* the documented bound */
    double flush;            /* below this |result|, an absolute bound of flush / 4 */
} fn_case;

static double sigmoid_ref(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static float sigmoid_own(float x)
{
    return 1.0f / (1.0f + rx_expf_ref(-(x)));
}

static const fn_case CASES[] = {{"erf", erf, rx_erff_ref, 2.0, 0.0},
                                {"tanh", tanh, rx_tanhf_ref, 2.0, 0.0},
                                {"log", log, rx_logf_ref, 2.0, 0.0},
                                {"sigmoid", sigmoid_ref, sigmoid_own, 2.0, 0x1p-126},
                                {"sin", sin, rx_sinf_ref, 1.0, 0.0},
                                {"cos", cos, rx_cosf_ref, 1.0, 0.0}};

static const float EDGE[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f,
                             0x1p-126f, 0x1.fffffcp-127f, 0.84375f, 0.8437499f, 1.25f,
                             1.2499999f, 3.92f, 3.9200001f, 4.0f, 10.0f, -10.0f, 0.625f,
                             0.6249999f, -0.625f, 9.0f, 9.1f, 9.1000004f, 44.0f, 45.0f,
                             88.8f, 1e30f, -1e30f, 1.0f, -1.0f, 0.70710677f, 1.4142135f,
                             2.0f, 0.5f, 3.4e38f, 1e-30f, -1e-30f, 1e-7f, 0.99999994f,
                             1.0000001f, -0.99999994f, 0.62499994f, 0.62500006f, 2.46f,
                             3.9199998f, -88.72f, -88.73f, -87.3f, -103.9f, -104.1f, 88.73f,
                             -0x1p-149f, 0x1.fffffep+127f, -0x1.fffffep+127f, 1.5707964f,
                             -1.5707964f, 3.1415927f, 4.712389f, 6.2831855f, 0.7853982f,
                             119.99999f, 120.0f, -120.0f, 120.00001f, 255.99998f, 256.0f,
                             0x1.e8eedep+24f, -0x1.2a8062p+36f, -0x1.6bbfbcp+26f, 16777216.0f,
                             0x1.921fb6p+100f, 1e38f, 0x1.8p23f, 102.10176f, 355.0f};

/* Runs every kernel of lib over a and checks each result; exact: the bits must equal
 * the reference copy's too. */
static void check_all(cg_lib lib, const float *a, float *b, int n, bool exact)
{
    for (int c = 0; c < (int)RX_COUNTOF(CASES); c++) {
        const fn_case *fc = &CASES[c];
        void *data[2] = {(void *)a, b};
        int64_t iv[1] = {n};
        ck_assert_int_eq(cg_get(lib, fc->name)(data, iv), 0);
        double worst = 0;
        for (int i = 0; i < n; i++) {
            double want = fc->ref((double)a[i]);
            float wf = (float)want;
            if (exact) {
                float r = fc->own(a[i]);
                ck_assert_msg(!memcmp(&r, &b[i], 4) || (isnan(r) && isnan(b[i])),
                              "%s(%a): kernel %a, reference copy %a", fc->name, (double)a[i],
                              (double)b[i], (double)r);
            }
            if (fabs(want) < fc->flush) {
                ck_assert_msg(fabs((double)b[i] - want) <= fc->flush / 4, "%s(%a) = %a, want %a",
                              fc->name, (double)a[i], (double)b[i], want);
            } else if (isnan(wf)) {
                ck_assert_msg(isnan(b[i]), "%s(%a) = %a, want NaN", fc->name, (double)a[i],
                              (double)b[i]);
            } else if (isinf(wf) || wf == 0.0f || isinf(a[i])) {
                ck_assert_msg(b[i] == wf && signbit(b[i]) == signbit(wf), "%s(%a) = %a, want %a",
                              fc->name, (double)a[i], (double)b[i], (double)wf);
            } else {
                double u = cg_ulps(b[i], want);
                ck_assert_msg(u <= fc->ulps, "%s(%a) = %a: %.3f ulp", fc->name, (double)a[i],
                              (double)b[i], u);
                if (u > worst) worst = u;
            }
        }
        ck_assert(worst > 0.0); /* computed, not libm's correctly rounded results */
    }
}

/* Every 256th float of [0.5, 4) (erf's pieces meet at 1) and every 1024th of [1/32, 1)
 * (tanh's meet at 0.625). */
enum {
    DENSE_LO = 0x3f000000, DENSE_N = (0x40800000 - DENSE_LO) / 256,
    SMALL_LO = 0x3d000000, SMALL_N = (0x3f800000 - SMALL_LO) / 1024
};

static float *inputs(int *n)
{
    enum { NE = sizeof EDGE / sizeof EDGE[0], N = (1 << 17) + DENSE_N + SMALL_N + NE };
    float *a = malloc(sizeof(float) * N);
    for (uint32_t i = 0; i < (1u << 17); i++) a[i] = cg_from_bits(i * 32768u + (i * 7u & 32767u));
    for (uint32_t i = 0; i < DENSE_N; i++)
        a[(1 << 17) + i] = cg_from_bits(DENSE_LO + i * 256u + (i * 13u & 255u));
    for (uint32_t i = 0; i < SMALL_N; i++)
        a[(1 << 17) + DENSE_N + i] = cg_from_bits(SMALL_LO + i * 1024u + (i * 29u & 1023u));
    memcpy(a + (1 << 17) + DENSE_N + SMALL_N, EDGE, sizeof EDGE);
    *n = N;
    return a;
}

START_TEST(accuracy_baseline)
{
    rx_module *m = cg_read(MOD);
    cg_lib lib = cg_build(m);
    int n;
    float *a = inputs(&n), *b = malloc(sizeof(float) * (size_t)n);
    check_all(lib, a, b, n, true);
    free(a);
    free(b);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* The kernels built for x86-64-v3 and -v4 with contraction, where the CPU runs them. */
START_TEST(accuracy_isa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    static const char *const v3[] = {"-march=x86-64-v3", "-ffp-contract=fast", "-O3", NULL};
    static const char *const v4[] = {"-march=x86-64-v4", "-ffp-contract=fast", "-O3", NULL};
    bool has[2] = {__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                   __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")};
    const char *const *flags[2] = {v3, v4};
    for (int k = 0; k < 2; k++) {
        if (!has[k]) continue;
        rx_module *m = cg_read(MOD);
        cg_lib lib = cg_build_with(m, flags[k]);
        int n;
        float *a = inputs(&n), *b = malloc(sizeof(float) * (size_t)n);
        check_all(lib, a, b, n, false);
        free(a);
        free(b);
        cg_close(lib);
        rx_module_free(m);
    }
#endif
}
END_TEST

START_TEST(functions_in_text)
{
    rx_module *m = cg_read(MOD);
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_codegen_c(m, &c, &d));
    const char *t = rx_sb_str(&c);
    ck_assert_ptr_nonnull(strstr(t, "= rx_erff(A_"));
    ck_assert_ptr_nonnull(strstr(t, "= rx_tanhf(A_"));
    ck_assert_ptr_nonnull(strstr(t, "= rx_logf(A_"));
    ck_assert_ptr_nonnull(strstr(t, "RX_MATH_HELPER float rx_erff(float x)"));
    ck_assert_ptr_nonnull(strstr(t, "RX_MATH_HELPER float rx_tanhf(float x)"));
    ck_assert_ptr_null(strstr(t, "= erff("));
    ck_assert_ptr_null(strstr(t, "= tanhf("));
    ck_assert_ptr_null(strstr(t, "= logf("));
    ck_assert_ptr_nonnull(strstr(t, "= rx_sinf(A_"));
    ck_assert_ptr_nonnull(strstr(t, "= rx_cosf(A_"));
    ck_assert_ptr_null(strstr(t, "= sinf("));
    ck_assert_ptr_null(strstr(t, "= cosf("));
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

static Suite *transcend_suite(void)
{
    Suite *s = suite_create("transcend");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, accuracy_baseline);
    tcase_add_test(tc, accuracy_isa);
    tcase_add_test(tc, functions_in_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(transcend_suite()); }
