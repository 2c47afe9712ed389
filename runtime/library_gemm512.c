/*
 * library_gemm512.c — rx_rt_gemm's AVX-512 micro-kernel (library_gemm.c runs the
 * blocking, packing and threads around it; its essay has the whole algorithm).
 *
 * The tile: RX_GEMM512_MR = 8 rows by RX_GEMM512_NR = 32 columns (two zmm vectors a
 * row), 16 accumulators. Per reduction index: B's 32 values loaded once (two loads),
 * each of A's 8 values broadcast once into a register for its two FMAs (K_STEP below),
 * 16 FMAs: with 2 x 512-bit FMA units that is 8 cycles for 10 loads, in reach of 2
 * loads a cycle; 16 independent chains cover the FMA latency (4 cycles x 2 units). 8 rows keep M = 128 and 512 (prefill) free of short tiles and the
 * A packing an 8x8 transpose; 32 columns keep attention's 64-wide heads whole.
 * The panels: A packed kc x 8 (the 8 values of one reduction index together), B kc rows
 * of 32 at row stride ldb (32 when packed; B's own row stride when read in place).
 * Short tiles (mr < 8 rows, nr < 32 columns) run the kernel instantiated for their row
 * count (rows past mr are neither computed nor written) and write C through column
 * masks: no buffer, no copy. The panels stay zero-padded past mr / nr.
 * Write-back: C = alpha * acc + beta * C (C not read when beta is 0: masked loads only
 * then). Cost: 2 * mr * 32 * kc flops whatever nr (the padding lanes compute zeros).
 * Compiled with a target attribute; library_gemm.c calls it only when
 * __builtin_cpu_supports("avx512f") (and $RX_GEMM_KERNEL does not ask for a lower path).
 */
#include "rt_int.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))

enum { MR = RX_GEMM512_MR, NR = RX_GEMM512_NR };

/* One row of the tile out: alpha * (x0, x1) + beta * C through the column masks. */
AVX512_FN static inline void row_out(float *c, __m512 x0, __m512 x1, __m512 va, __m512 vb,
                                     float beta, __mmask16 k0, __mmask16 k1)
{
    x0 = _mm512_mul_ps(x0, va);
    x1 = _mm512_mul_ps(x1, va);
    if (beta != 0.0f) {
        x0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k0, c), vb, x0);
        x1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k1, c + 16), vb, x1);
    }
    _mm512_mask_storeu_ps(c, k0, x0);
    _mm512_mask_storeu_ps(c + 16, k1, x1);
}

/* The kernel for R rows (1..MR): the accumulators are named variables and the rows past
 * R dead code (as arrays, gcc kept them in memory); the reduction loop unrolled by 4
 * with A prefetched 16 indices ahead. */
#define ROW_FMA(R, r, p)                                                                   \
    if (R > r) {                                                                           \
        __m512 ar = _mm512_set1_ps(a[(p) * MR + r]);                                       \
        l##r = _mm512_fmadd_ps(ar, b0, l##r);                                              \
        h##r = _mm512_fmadd_ps(ar, b1, h##r);                                              \
    }
#define STEP(R, p)                                                                         \
    {                                                                                      \
        __m512 b0 = _mm512_loadu_ps(b + (p) * ldb), b1 = _mm512_loadu_ps(b + (p) * ldb + 16); \
        ROW_FMA(R, 0, p) ROW_FMA(R, 1, p) ROW_FMA(R, 2, p) ROW_FMA(R, 3, p)                \
        ROW_FMA(R, 4, p) ROW_FMA(R, 5, p) ROW_FMA(R, 6, p) ROW_FMA(R, 7, p)                \
    }
#define ROW_OUT(R, r)                                                                      \
    if (R > r) row_out(c + r * ldc, l##r, h##r, va, vb, beta, k0, k1);
#define KERN_ROWS(R)                                                                       \
    AVX512_FN static void kern512_r##R(int64_t kc, const float *a, const float *b,         \
                                       int64_t ldb, float *c, int64_t ldc, float alpha,    \
                                       float beta, int64_t nr)                             \
    {                                                                                      \
        __m512 l0 = _mm512_setzero_ps(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0,      \
               l3 = l0, h3 = l0, l4 = l0, h4 = l0, l5 = l0, h5 = l0, l6 = l0, h6 = l0,     \
               l7 = l0, h7 = l0;                                                           \
        for (int r = 0; r < R; r++) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0); \
        int64_t p = 0;                                                                     \
        for (; p + 4 <= kc; p += 4, a += 4 * MR, b += 4 * ldb) {                           \
            _mm_prefetch((const char *)(a + 16 * MR), _MM_HINT_T0);                        \
            _mm_prefetch((const char *)(a + 16 * MR + 16), _MM_HINT_T0);                   \
            STEP(R, 0) STEP(R, 1) STEP(R, 2) STEP(R, 3)                                    \
        }                                                                                  \
        for (; p < kc; p++, a += MR, b += ldb) STEP(R, 0)                                  \
        __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);                      \
        __mmask16 k0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);                    \
        __mmask16 k1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1); \
        ROW_OUT(R, 0) ROW_OUT(R, 1) ROW_OUT(R, 2) ROW_OUT(R, 3)                            \
        ROW_OUT(R, 4) ROW_OUT(R, 5) ROW_OUT(R, 6) ROW_OUT(R, 7)                            \
    }
KERN_ROWS(1)
KERN_ROWS(2)
KERN_ROWS(3)
KERN_ROWS(4)
KERN_ROWS(5)
KERN_ROWS(6)
KERN_ROWS(7)
#undef KERN_ROWS

/* One reduction index of the full 8x32 tile in assembly: B's two vectors (at rdx) into
 * zmm30/31, each of A's 8 values (at rax) broadcast into zmm26..29 (in turn) and two
 * FMAs with it; B steps on by its row stride. The accumulators are the asm operands
 * %0..%15 (registers the compiler picks among the 26 left). An FMA with an embedded
 * broadcast ({1to16}) instead loads each A value twice: 16 loads a step, measured
 * 0.78x (181 against 231 GFLOP/s on 512x512x64, one thread). */
#define K_STEP(aoff)                                                                       \
    "vmovups (%%rdx), %%zmm30\n\t"                                                         \
    "vmovups 64(%%rdx), %%zmm31\n\t"                                                       \
    "add %[ldb], %%rdx\n\t"                                                                \
    "vbroadcastss " #aoff "+0(%%rax), %%zmm26\n\t"                                         \
    "vfmadd231ps %%zmm26, %%zmm30, %0\n\t"                                                 \
    "vfmadd231ps %%zmm26, %%zmm31, %1\n\t"                                                 \
    "vbroadcastss " #aoff "+4(%%rax), %%zmm27\n\t"                                         \
    "vfmadd231ps %%zmm27, %%zmm30, %2\n\t"                                                 \
    "vfmadd231ps %%zmm27, %%zmm31, %3\n\t"                                                 \
    "vbroadcastss " #aoff "+8(%%rax), %%zmm28\n\t"                                         \
    "vfmadd231ps %%zmm28, %%zmm30, %4\n\t"                                                 \
    "vfmadd231ps %%zmm28, %%zmm31, %5\n\t"                                                 \
    "vbroadcastss " #aoff "+12(%%rax), %%zmm29\n\t"                                        \
    "vfmadd231ps %%zmm29, %%zmm30, %6\n\t"                                                 \
    "vfmadd231ps %%zmm29, %%zmm31, %7\n\t"                                                 \
    "vbroadcastss " #aoff "+16(%%rax), %%zmm26\n\t"                                        \
    "vfmadd231ps %%zmm26, %%zmm30, %8\n\t"                                                 \
    "vfmadd231ps %%zmm26, %%zmm31, %9\n\t"                                                 \
    "vbroadcastss " #aoff "+20(%%rax), %%zmm27\n\t"                                        \
    "vfmadd231ps %%zmm27, %%zmm30, %10\n\t"                                                \
    "vfmadd231ps %%zmm27, %%zmm31, %11\n\t"                                                \
    "vbroadcastss " #aoff "+24(%%rax), %%zmm28\n\t"                                        \
    "vfmadd231ps %%zmm28, %%zmm30, %12\n\t"                                                \
    "vfmadd231ps %%zmm28, %%zmm31, %13\n\t"                                                \
    "vbroadcastss " #aoff "+28(%%rax), %%zmm29\n\t"                                        \
    "vfmadd231ps %%zmm29, %%zmm30, %14\n\t"                                                \
    "vfmadd231ps %%zmm29, %%zmm31, %15\n\t"                                                

/* The full 8-row kernel: its whole reduction is one asm statement (the accumulators
 * zeroed in it, so they are outputs only: in-out ones would pass gcc's 30 operands;
 * from intrinsics gcc 12 put register copies between the FMAs), 4 steps per iteration
 * with A prefetched 16 steps ahead, then the kc % 4 left one at a time. */
AVX512_FN static void kern512_r8(int64_t kc, const float *a, const float *b, int64_t ldb,
                                 float *c, int64_t ldc, float alpha, float beta, int64_t nr)
{
    __m512 l0, h0, l1, h1, l2, h2, l3, h3, l4, h4, l5, h5, l6, h6, l7, h7;
    for (int r = 0; r < MR; r++) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
    int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
    const float *a4 = a + kc / 4 * 4 * MR, *a1 = a + kc * MR; /* where each loop stops */
    __asm__ volatile(
        "vpxord %0, %0, %0\n\tvpxord %1, %1, %1\n\tvpxord %2, %2, %2\n\t"
        "vpxord %3, %3, %3\n\tvpxord %4, %4, %4\n\tvpxord %5, %5, %5\n\t"
        "vpxord %6, %6, %6\n\tvpxord %7, %7, %7\n\tvpxord %8, %8, %8\n\t"
        "vpxord %9, %9, %9\n\tvpxord %10, %10, %10\n\tvpxord %11, %11, %11\n\t"
        "vpxord %12, %12, %12\n\tvpxord %13, %13, %13\n\tvpxord %14, %14, %14\n\t"
        "vpxord %15, %15, %15\n\t"
        "mov %[a], %%rax\n\t"
        "mov %[b], %%rdx\n\t"
        "cmp %[a4], %%rax\n\t"
        "jae 2f\n\t"
        "1:\n\t"
        "prefetcht0 512(%%rax)\n\t"
        "prefetcht0 576(%%rax)\n\t" K_STEP(0) K_STEP(32) K_STEP(64) K_STEP(96)
        "add $128, %%rax\n\t"
        "cmp %[a4], %%rax\n\t"
        "jb 1b\n\t"
        "2:\n\t"
        "cmp %[a1], %%rax\n\t"
        "jae 4f\n\t"
        "3:\n\t" K_STEP(0)
        "add $32, %%rax\n\t"
        "cmp %[a1], %%rax\n\t"
        "jb 3b\n\t"
        "4:\n\t"
        : "=&v"(l0), "=&v"(h0), "=&v"(l1), "=&v"(h1), "=&v"(l2), "=&v"(h2), "=&v"(l3),
          "=&v"(h3), "=&v"(l4), "=&v"(h4), "=&v"(l5), "=&v"(h5), "=&v"(l6), "=&v"(h6),
          "=&v"(l7), "=&v"(h7)
        : [a] "r"(a), [b] "r"(b), [a4] "r"(a4), [a1] "r"(a1), [ldb] "r"(ldb_bytes)
        : "rax", "rdx", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "memory", "cc");
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    __mmask16 k0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 k1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    row_out(c, l0, h0, va, vb, beta, k0, k1);
    row_out(c + ldc, l1, h1, va, vb, beta, k0, k1);
    row_out(c + 2 * ldc, l2, h2, va, vb, beta, k0, k1);
    row_out(c + 3 * ldc, l3, h3, va, vb, beta, k0, k1);
    row_out(c + 4 * ldc, l4, h4, va, vb, beta, k0, k1);
    row_out(c + 5 * ldc, l5, h5, va, vb, beta, k0, k1);
    row_out(c + 6 * ldc, l6, h6, va, vb, beta, k0, k1);
    row_out(c + 7 * ldc, l7, h7, va, vb, beta, k0, k1);
}
#undef K_STEP
#undef ROW_OUT
#undef STEP
#undef ROW_FMA

static void (*const kern512[MR + 1])(int64_t, const float *, const float *, int64_t, float *,
                                     int64_t, float, float, int64_t) = {
    NULL, kern512_r1, kern512_r2, kern512_r3, kern512_r4,
    kern512_r5, kern512_r6, kern512_r7, kern512_r8,
};

void rx_rt_gemm512_tile(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                        int64_t ldc, float alpha, float beta, int64_t mr, int64_t nr)
{
    kern512[mr](kc, a, b, ldb, c, ldc, alpha, beta, nr);
}

#else

void rx_rt_gemm512_tile(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                        int64_t ldc, float alpha, float beta, int64_t mr, int64_t nr)
{
    (void)kc, (void)a, (void)b, (void)ldb, (void)c, (void)ldc, (void)alpha, (void)beta;
    (void)mr, (void)nr;
}

#endif
