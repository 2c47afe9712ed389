/*
 * rt_vmath.h — vector code shared by the runtime's AVX2 kernels: the in-register
 * 8 x 8 f32 transpose (library_gemm.c's packing of a transposed B; tests/bench/
 * bench_transpose.c; its shuffles are rt_transpose.h's, which generated kernels share).
 * (e^x and the sigmoid of library_rnn.c's gates are rt_rnn_lanes.h's, the epilogue
 * activations' rt_vmath_lanes.h's, each at 8 and 16 lanes.)
 * Include after <immintrin.h>, on x86-64 with gcc or clang only.
 */
#ifndef RX_RT_VMATH_H
#define RX_RT_VMATH_H

#include <immintrin.h>
#include <stdint.h>

#include "rt_transpose.h" /* RX_TR8X8_SHUFFLE */

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
