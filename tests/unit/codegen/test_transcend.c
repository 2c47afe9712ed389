/*
 * test_transcend.c — the generated code's float erf, tanh and log (rx_erff, rx_tanhf,
 * rx_logf in c_expr.c's prelude, relax/codegen_math.h), used for erf, nn.gelu, tanh,
 * nn.gelu_tanh and log of f32 (and of f16/bf16, computed in float).
 *
 * One module, three kernels B[i] = f(A[i]), run over ~229 thousand inputs: every
 * 32768th float bit pattern, low mantissa bits varied (all signs, exponents,
 * subnormals and many mantissas; an eighth of test_expf.c's sweep, as the sanitizer
 * build runs three functions twice), every 256th float of [0.5, 4) (where erf's
 * largest errors are) and every 1024th of [1/32, 1/8) (tanh's), plus
 * the edges (+-0, +-inf, NaN, the smallest subnormal, the clamps, large
 * |x|). Each result is within the header's documented bound of the function computed
 * in double (erf 6, tanh 3, log 2 ulp; measured maxima 5.82,
 * 2.53 and 0.84 ulp); special values are exact: erf(+-inf) =
 * +-1, tanh(+-inf) = +-1, log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN for
 * NaN, and -0 gives -0 for erf and tanh. The kernels are built twice: as the baseline
 * (whose bits must equal the compiler evaluator's rx_*_ref, which constant folding
 * uses) and, where the CPU has FMA, for x86-64-v3 with contraction (what O3's ISA
 * versions do), held to the same bounds. A last check reads the C text: the prelude's
 * functions are called, libm's erff/tanhf/logf are not.
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
    "}}";

typedef struct fn_case {
    const char *name;
    double (*ref)(double);   /* libm in double */
    float (*own)(float);     /* codegen_math.h's reference copy */
    double ulps;             /* the documented bound */
} fn_case;

static const fn_case CASES[] = {{"erf", erf, rx_erff_ref, 6.0},
                                {"tanh", tanh, rx_tanhf_ref, 3.0},
                                {"log", log, rx_logf_ref, 2.0}};

static const float EDGE[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f,
                             0x1p-126f, 0x1.fffffcp-127f, 0.84375f, 0.8437499f, 1.25f,
                             1.2499999f, 3.92f, 3.9200001f, 4.0f, 10.0f, -10.0f, 0.625f,
                             0.6249999f, -0.625f, 9.0f, 9.1f, 9.1000004f, 44.0f, 45.0f,
                             88.8f, 1e30f, -1e30f, 1.0f, -1.0f, 0.70710677f, 1.4142135f,
                             2.0f, 0.5f, 3.4e38f, 1e-30f, -1e-30f, 1e-7f};

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
            if (isnan(wf)) {
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

/* Every 256th float of [0.5, 4) (erf's largest errors are there, near 1) and every
 * 1024th of [1/32, 1/8) (tanh's, where e^(2a) - 1 is small). */
enum {
    DENSE_LO = 0x3f000000, DENSE_N = (0x40800000 - DENSE_LO) / 256,
    SMALL_LO = 0x3d000000, SMALL_N = (0x3e000000 - SMALL_LO) / 1024
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

START_TEST(accuracy_fma)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    static const char *const fma[] = {"-march=x86-64-v3", "-ffp-contract=fast", "-O3", NULL};
    rx_module *m = cg_read(MOD);
    cg_lib lib = cg_build_with(m, fma);
    int n;
    float *a = inputs(&n), *b = malloc(sizeof(float) * (size_t)n);
    check_all(lib, a, b, n, false);
    free(a);
    free(b);
    cg_close(lib);
    rx_module_free(m);
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
    tcase_add_test(tc, accuracy_fma);
    tcase_add_test(tc, functions_in_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(transcend_suite()); }
