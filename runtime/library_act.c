/*
 * library_act.c — the library GEMMs' epilogues (rx_rt_epilogue_rows): a bias added over
 * the last axis, then relu, GELU (erf form, or the tanh form), or SiLU, in place on rows
 * of C. library_gemm.c calls it on each tile of C as its last block is written (the tile
 * is in L1), library.c on C's rows after a BLAS sgemm.
 *
 *   relu       max(x, 0) (NaN stays NaN)
 *   gelu       0.5 x (1 + erf(x / sqrt 2))
 *   silu       x sigmoid(x) = x / (1 + exp(-x)), as x e^x / (1 + e^x) below 0
 *   hardswish  x min(max(x / 6 + 0.5, 0), 1) (ONNX HardSwish, as its import's bindings
 *              compute it: the product by the f32 1/6, the sum, max, min, the product;
 *              blas.conv2d's epilogue)
 *   gelu_tanh  0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3) (GPT-2's "new
 *              GELU", PyTorch's approximate="tanh"), evaluated as x times the
 *              logistic function of 2u: 0.5 (1 + tanh u) is that function, so one exp
 *              and one reciprocal
 *
 * Three paths, picked once per process by the CPU (rx_rt_act_kernel): AVX-512 (F + DQ,
 * 16 lanes), AVX2 + FMA (8 lanes), both compiled from one source, rt_vmath_lanes.h
 * (included twice below; its essay has the forms: erf by the generated kernels'
 * polynomials of relax/codegen_math.h, exp by range reduction and a polynomial, each
 * 1 / d a reciprocal estimate and a Newton step), and portable C over libm. The loop is
 * compiled once per activation and bias-or-not (no test per vector); a row's tail runs
 * through a padded buffer, so a value's result does not depend on where it sits.
 * $RX_ACT_KERNEL=avx2 or portable caps the path (tests/unit/runtime/test_act.c runs
 * all three on one machine). Accuracy against the formulas in double (test_act.c's
 * bounds, measured on every 2048th float of [-16, 16]): GELU within 3 ulp plus 2^-24 |x|
 * absolute (the cancellation of 1 + erf below x = -3, as with libm), 1.51 ulp measured
 * where it does not cancel (Abramowitz-Stegun 7.1.26 before: 1.5e-7 absolute, 10% of
 * the value at x = -5); SiLU within 4 ulp (3.1 measured with AVX-512, 3.35 with AVX2;
 * before, e^-x overflowed below x = -88.4: 0 or NaN where x e^x is a normal float);
 * the tanh GELU within 4 ulp plus 2^-24 |x|. Results below 2^-125 |x| may be flushed
 * (e^x is clamped to stay a normal float). Cost: O(rows cols), one load and one store
 * per value, 30-45 vector operations per 8 or 16 values for the GELUs; measured in
 * docs/runtime.md.
 */
#include "rt_int.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ACT_X86 1
#include <immintrin.h>
#else
#define ACT_X86 0
#endif

static float act_scalar(int act, float x)
{
    switch (act) {
    case RX_RT_ACT_RELU: return x > 0.0f || x != x ? x : 0.0f; /* NaN stays */
    case RX_RT_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case RX_RT_ACT_SILU: { /* x e^x / (1 + e^x) below 0: e^-x would overflow */
        float e = expf(-fabsf(x));
        return (x < 0.0f ? x * e : x) / (1.0f + e);
    }
    case RX_RT_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case RX_RT_ACT_HARDSWISH: { /* ONNX HardSwish's steps: x * 1/6 + 0.5, max 0, min 1 */
        float h = x * 0.16666667f + 0.5f;
        h = h > 0.0f ? h : 0.0f;
        return x * (h < 1.0f ? h : 1.0f);
    }
    default: return x;
    }
}

#if ACT_X86
#define RX_VL 8
#define RX_VL_FN __attribute__((target("avx2,fma")))
#include "rt_vmath_lanes.h"
#undef RX_VL
#undef RX_VL_FN
#define RX_VL 16
#define RX_VL_FN __attribute__((target("avx512f,avx512dq,avx2,fma")))
#include "rt_vmath_lanes.h"
#undef RX_VL
#undef RX_VL_FN
#endif

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static int act_level; /* 2: AVX-512, 1: AVX2 + FMA, 0: portable (set once) */

static void cpu_check(void)
{
#if ACT_X86
    __builtin_cpu_init();
    act_level = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")       ? 1
                                                                                      : 0;
    if (act_level == 2 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
        act_level = 0; /* the AVX-512 path uses FMA's and AVX2's forms too */
#endif
    const char *env = getenv("RX_ACT_KERNEL");
    if (env && !strcmp(env, "portable")) act_level = 0;
    else if (env && !strcmp(env, "avx2") && act_level > 1) act_level = 1;
}

const char *rx_rt_act_kernel(void)
{
    pthread_once(&cpu_once, cpu_check);
    return act_level == 2 ? "avx512" : act_level == 1 ? "avx2+fma" : "portable";
}

void rx_rt_epilogue_rows(float *c, int64_t rows, int64_t cols, int64_t ldc, const float *bias,
                         int act)
{
    if ((!bias && act == RX_RT_ACT_NONE) || rows <= 0 || cols <= 0) return;
    pthread_once(&cpu_once, cpu_check);
#if ACT_X86
    if (act_level == 2) {
        epi16(c, rows, cols, ldc, bias, act);
        return;
    }
    if (act_level == 1) {
        epi8(c, rows, cols, ldc, bias, act);
        return;
    }
#endif
    for (int64_t i = 0; i < rows; i++, c += ldc)
        for (int64_t q = 0; q < cols; q++) c[q] = act_scalar(act, bias ? c[q] + bias[q] : c[q]);
}
