/*
 * rt_vmath.h — vector math shared by the runtime's AVX2 kernels: e^x and the logistic
 * sigmoid on 8 floats (library_rnn.c's gates; the epilogue activations have their own,
 * at 8 and 16 lanes, in rt_vmath_lanes.h), and the in-register
 * 8 x 8 f32 transpose (library_gemm.c's packing of a transposed B; tests/bench/
 * bench_transpose.c; its shuffles are rt_transpose.h's, which generated kernels share).
 * Include after <immintrin.h>, on x86-64 with gcc or clang only.
 */
#ifndef RX_RT_VMATH_H
#define RX_RT_VMATH_H

#include <immintrin.h>
#include <stdint.h>

#include "rt_transpose.h" /* RX_TR8X8_SHUFFLE */

/* e^x for x clamped to [-88, 88]: Cody-Waite reduction and Cephes' degree-5
 * polynomial (within 2 ulp of expf over the range; 0 below about -87.3, where the
 * scale's exponent underflows). */
__attribute__((target("avx2,fma"))) static inline __m256 rx_rt_exp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-88.0f)), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

/* 1 / (1 + e^-x): rx_rt_exp8's clamp keeps e^-x finite, so x < -88 gives about
 * 6e-39 (the true value is smaller still) and x > 88 gives 1. */
__attribute__((target("avx2,fma"))) static inline __m256 rx_rt_sigmoid8(__m256 x)
{
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = rx_rt_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

/* The 8x8 block at src (row stride ld; rows past `rows` read as 0) transposed into
 * r[0..7]. */
__attribute__((target("avx2,fma"))) static inline void rx_rt_tr8x8(
    const float *src, int64_t ld, int rows, __m256 r[8])
{
    __m256 z = _mm256_setzero_ps();
    __m256 t0 = _mm256_loadu_ps(src), t1 = _mm256_loadu_ps(src + ld),
           t2 = _mm256_loadu_ps(src + 2 * ld), t3 = _mm256_loadu_ps(src + 3 * ld),
           t4 = _mm256_loadu_ps(src + 4 * ld), t5 = _mm256_loadu_ps(src + 5 * ld),
           t6 = rows > 6 ? _mm256_loadu_ps(src + 6 * ld) : z,
           t7 = rows > 7 ? _mm256_loadu_ps(src + 7 * ld) : z;
    __m256 t[8] = {t0, t1, t2, t3, t4, t5, t6, t7};
    RX_TR8X8_SHUFFLE(t, r);
}

#endif
