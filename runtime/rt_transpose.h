/*
 * rt_transpose.h — the in-register 8 x 8 transpose of 32-bit elements as a statement
 * macro: one source for runtime/rt_vmath.h's rx_rt_tr8x8 (library_gemm.c's packing of a
 * transposed B) and the generated C kernels' tile transposes (compiler/codegen/
 * c_transpose.c stringifies it into their prelude). Only text: it includes nothing
 * and compiles nowhere by itself; the user needs <immintrin.h> and an AVX target.
 *
 * RX_TR8X8_SHUFFLE(T, R): T[0..7] are eight __m256 rows of an 8 x 8 block, R[0..7]
 * receive its columns (R[j] lane i = T[i] lane j). 24 shuffles: unpack pairs of rows,
 * shuffle pairs of those, exchange 128-bit halves. Bits move, no arithmetic, so any
 * 32-bit type goes through __m256 unchanged.
 */
#ifndef RX_RT_TRANSPOSE_H
#define RX_RT_TRANSPOSE_H

#define RX_TR8X8_SHUFFLE(T, R)                                                              \
    do {                                                                                    \
        __m256 rx_u0 = _mm256_unpacklo_ps(T[0], T[1]), rx_u1 = _mm256_unpackhi_ps(T[0], T[1]), \
               rx_u2 = _mm256_unpacklo_ps(T[2], T[3]), rx_u3 = _mm256_unpackhi_ps(T[2], T[3]), \
               rx_u4 = _mm256_unpacklo_ps(T[4], T[5]), rx_u5 = _mm256_unpackhi_ps(T[4], T[5]), \
               rx_u6 = _mm256_unpacklo_ps(T[6], T[7]), rx_u7 = _mm256_unpackhi_ps(T[6], T[7]); \
        __m256 rx_v0 = _mm256_shuffle_ps(rx_u0, rx_u2, 0x44),                               \
               rx_v1 = _mm256_shuffle_ps(rx_u0, rx_u2, 0xEE),                               \
               rx_v2 = _mm256_shuffle_ps(rx_u1, rx_u3, 0x44),                               \
               rx_v3 = _mm256_shuffle_ps(rx_u1, rx_u3, 0xEE),                               \
               rx_v4 = _mm256_shuffle_ps(rx_u4, rx_u6, 0x44),                               \
               rx_v5 = _mm256_shuffle_ps(rx_u4, rx_u6, 0xEE),                               \
               rx_v6 = _mm256_shuffle_ps(rx_u5, rx_u7, 0x44),                               \
               rx_v7 = _mm256_shuffle_ps(rx_u5, rx_u7, 0xEE);                               \
        R[0] = _mm256_permute2f128_ps(rx_v0, rx_v4, 0x20);                                  \
        R[1] = _mm256_permute2f128_ps(rx_v1, rx_v5, 0x20);                                  \
        R[2] = _mm256_permute2f128_ps(rx_v2, rx_v6, 0x20);                                  \
        R[3] = _mm256_permute2f128_ps(rx_v3, rx_v7, 0x20);                                  \
        R[4] = _mm256_permute2f128_ps(rx_v0, rx_v4, 0x31);                                  \
        R[5] = _mm256_permute2f128_ps(rx_v1, rx_v5, 0x31);                                  \
        R[6] = _mm256_permute2f128_ps(rx_v2, rx_v6, 0x31);                                  \
        R[7] = _mm256_permute2f128_ps(rx_v3, rx_v7, 0x31);                                  \
    } while (0)

#endif
