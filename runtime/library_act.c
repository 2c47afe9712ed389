/*
 * library_act.c — the library GEMMs' epilogues (rx_rt_epilogue_rows): a bias added over
 * the last axis, then relu, GELU (erf form, or the tanh form), or SiLU, in place on rows
 * of C, vectorized with AVX2 + FMA where the CPU has them. library_gemm.c calls it on
 * each tile of C as its last block is written (the tile is in L1), library.c on C's
 * rows after a BLAS sgemm.
 *
 *   relu       max(x, 0)
 *   gelu       0.5 x (1 + erf(x / sqrt 2))
 *   silu       x sigmoid(x) = x / (1 + exp(-x))
 *   gelu_tanh  0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3) (GPT-2's "new
 *              GELU", PyTorch's approximate="tanh"), evaluated as x / (1 + e^(-2u)):
 *              0.5 (1 + tanh u) is the logistic function of 2u, so one exp and one
 *              reciprocal; for large |x| e^(-2u) is 0 or clamped huge (rx_rt_exp8), the
 *              result x or ~0
 *
 * The vector forms: exp by rx_rt_exp8 (rt_vmath.h: range reduction x = n ln 2 + r and
 * a polynomial for e^r, scaled by 2^n through the exponent bits), SiLU as x times
 * rt_vmath.h's rx_rt_sigmoid8 (the one the recurrent cells' gates use); erf by Abramowitz and
 * Stegun 7.1.26 (|error| <= 1.5e-7 absolute), erf(x) = 1 - t (a1 + t (a2 + ... a5))
 * e^(-x^2), t = 1 / (1 + p |x|), sign restored; each 1 / d as the reciprocal estimate
 * and one Newton step (v_rcp). The error against libm's erff / expf / tanhf is a few
 * 1e-7 absolute on the activation's unit scale, well inside the NumPy tolerance the
 * tests hold the fused and unfused paths to (tests/unit/runtime/test_library.c,
 * tests/e2e/test_matmul_view.py). Without AVX2 the scalar forms use libm. The loop is
 * compiled once per activation and bias-or-not (no test per vector); a row's tail runs
 * through a padded 8-lane buffer, so a value's result does not depend on where it sits.
 * Cost: O(rows cols), one load and one store per value, about 25-35 vector operations
 * per 8 values for the GELUs.
 */
#include "rt_int.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ACT_X86 1
#include <immintrin.h>

#include "rt_vmath.h"
#else
#define ACT_X86 0
#endif

static float act_scalar(int act, float x)
{
    switch (act) {
    case RX_RT_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case RX_RT_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case RX_RT_ACT_SILU: return x / (1.0f + expf(-x));
    case RX_RT_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    default: return x;
    }
}

#if ACT_X86
#define ACT_FN __attribute__((target("avx2,fma")))

/* 1 / d: the reciprocal estimate (12 bits) and one Newton step, ~1 ulp (vdivps ymm is
 * ~10 cycles a vector on Zen; this is three cheap operations). d = 0 or d beyond ~1e38
 * gives inf or 0 as the division would, up to the last bit. */
ACT_FN static inline __m256 v_rcp(__m256 d)
{
    __m256 r = _mm256_rcp_ps(d);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
}

ACT_FN static inline __m256 v_erf(__m256 x)
{
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 t = v_rcp(_mm256_fmadd_ps(ax, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    p = _mm256_mul_ps(p, t);
    __m256 e = rx_rt_exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(ax, ax)));
    __m256 y = _mm256_fnmadd_ps(p, e, _mm256_set1_ps(1.0f));
    return _mm256_or_ps(y, sign);
}

ACT_FN static inline __m256 v_act(int act, __m256 x)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    switch (act) {
    case RX_RT_ACT_RELU: return _mm256_max_ps(x, _mm256_setzero_ps());
    case RX_RT_ACT_GELU: {
        __m256 e = v_erf(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
        return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, e));
    }
    case RX_RT_ACT_SILU: return _mm256_mul_ps(x, rx_rt_sigmoid8(x));
    case RX_RT_ACT_GELU_TANH: { /* -2u = x (c1 + c2 x^2), c1 = -2 sqrt(2/pi), c2 = c1 0.044715 */
        __m256 x2 = _mm256_mul_ps(x, x);
        __m256 k = _mm256_fmadd_ps(x2, _mm256_set1_ps(-0.0713548162726f),
                                   _mm256_set1_ps(-1.59576912160573f));
        __m256 e = rx_rt_exp8(_mm256_mul_ps(x, k));
        return _mm256_mul_ps(x, v_rcp(_mm256_add_ps(one, e)));
    }
    default: return x;
    }
}

/* rows x cols of c (row stride ldc) = act(c + bias) in one pass of loads and stores;
 * inlined per (act, bias or not) by epi_avx2, so neither is tested per vector. The
 * tail of a row goes through a padded 8-lane buffer. */
ACT_FN static inline __attribute__((always_inline)) void
epi_loop(float *c, int64_t rows, int64_t cols, int64_t ldc, const float *bias, int act)
{
    for (int64_t r = 0; r < rows; r++, c += ldc) {
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            __m256 v = _mm256_loadu_ps(c + i);
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
            _mm256_storeu_ps(c + i, v_act(act, v));
        }
        if (i < cols) {
            float t[8] = {0}, tb[8] = {0};
            memcpy(t, c + i, sizeof(float) * (size_t)(cols - i));
            if (bias) memcpy(tb, bias + i, sizeof(float) * (size_t)(cols - i));
            __m256 v = _mm256_add_ps(_mm256_loadu_ps(t), _mm256_loadu_ps(tb));
            _mm256_storeu_ps(t, v_act(act, v));
            memcpy(c + i, t, sizeof(float) * (size_t)(cols - i));
        }
    }
}

#define EPI_CASE(a)                                                                        \
    case a:                                                                                \
        if (bias) epi_loop(c, rows, cols, ldc, bias, a);                                   \
        else epi_loop(c, rows, cols, ldc, NULL, a);                                        \
        break;

ACT_FN static void epi_avx2(float *c, int64_t rows, int64_t cols, int64_t ldc,
                            const float *bias, int act)
{
    switch (act) {
        EPI_CASE(RX_RT_ACT_RELU)
        EPI_CASE(RX_RT_ACT_GELU)
        EPI_CASE(RX_RT_ACT_SILU)
        EPI_CASE(RX_RT_ACT_GELU_TANH)
    default: epi_loop(c, rows, cols, ldc, bias, RX_RT_ACT_NONE); break;
    }
}
#undef EPI_CASE

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static bool avx2; /* the CPU has AVX2 and FMA (set once) */

static void cpu_check(void)
{
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool have_avx2(void)
{
    pthread_once(&cpu_once, cpu_check);
    return avx2;
}
#endif

void rx_rt_epilogue_rows(float *c, int64_t rows, int64_t cols, int64_t ldc, const float *bias,
                         int act)
{
    if ((!bias && act == RX_RT_ACT_NONE) || rows <= 0 || cols <= 0) return;
#if ACT_X86
    if (have_avx2()) {
        epi_avx2(c, rows, cols, ldc, bias, act);
        return;
    }
#endif
    for (int64_t i = 0; i < rows; i++, c += ldc)
        for (int64_t q = 0; q < cols; q++) c[q] = act_scalar(act, bias ? c[q] + bias[q] : c[q]);
}
