/*
 * library_act.c — the activations of the library GEMMs' epilogues (rx_rt_act_rows):
 * relu, GELU (exact, erf form) and SiLU applied in place to a run of
 * floats, vectorized with AVX2 + FMA where the CPU has them. library_gemm.c calls it on
 * each tile of C as its last block is written (the tile is in L1), library.c on C's
 * rows after a BLAS sgemm.
 *
 *   relu       max(x, 0)
 *   gelu       0.5 x (1 + erf(x / sqrt 2))
 *   silu       x sigmoid(x) = x / (1 + exp(-x))
 *
 * The vector forms: exp by rx_rt_exp8 (rt_vmath.h: range reduction x = n ln 2 + r and
 * a polynomial for e^r, scaled by 2^n through the exponent bits), SiLU as x times
 * rt_vmath.h's rx_rt_sigmoid8 (the one the recurrent cells' gates use); erf by Abramowitz and
 * Stegun 7.1.26 (|error| <= 1.5e-7 absolute), erf(x) = 1 - t (a1 + t (a2 + ... a5))
 * e^(-x^2), t = 1 / (1 + p |x|), sign restored. The error against libm's erff / expf
 * is a few 1e-7 absolute on the activation's unit scale, well inside the
 * NumPy tolerance the tests hold the fused and unfused paths to (rtol 1e-5, atol 1e-6 on
 * the activation; tests/unit/runtime/test_library.c). Without AVX2 the scalar forms use
 * libm. The vector tail is run through a
 * padded 8-lane buffer, so a value's result does not depend on where it sits.
 * Cost: O(n), about 30-40 vector operations per 8 values for gelu.
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
    default: return x;
    }
}

#if ACT_X86
#define ACT_FN __attribute__((target("avx2,fma")))

ACT_FN static inline __m256 v_erf(__m256 x)
{
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(ax, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
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
    default: return x;
    }
}

ACT_FN static void act_avx2(float *x, int64_t n, int act)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, v_act(act, _mm256_loadu_ps(x + i)));
    if (i < n) {
        float t[8] = {0};
        memcpy(t, x + i, sizeof(float) * (size_t)(n - i));
        _mm256_storeu_ps(t, v_act(act, _mm256_loadu_ps(t)));
        memcpy(x + i, t, sizeof(float) * (size_t)(n - i));
    }
}

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

void rx_rt_act_rows(float *x, int64_t n, int act)
{
    if (act == RX_RT_ACT_NONE || n <= 0) return;
#if ACT_X86
    if (have_avx2()) {
        act_avx2(x, n, act);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) x[i] = act_scalar(act, x[i]);
}
