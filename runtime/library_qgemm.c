/*
 * library_qgemm.c — rt.qmatmul, the 8-bit integer product of quantized models
 * (MatMulInteger, QLinearMatMul, dynamic-quantized Linear layers as ONNX Runtime's
 * quantization tools write them): compiler/legalize/legalize_lib.c makes the call for a
 * CPU matmul of two 8-bit operands into i32 (what compiler/frontend/onnx/onnx_quant.c
 * emits; the zero points are i32 corrections in the graph around it).
 *
 *   rt.qmatmul (A, B, C): A u8 or i8 (..., M, K), B u8 or i8 (K, N), C i32 (..., M, N):
 *   C[r, j] = sum over k of A[r, k] * B[k, j], exact modulo 2^32 (ONNX Runtime's int32
 *   accumulation; no 8-bit product sum of fewer than 33000 terms reaches 2^31).
 *
 * The products run as u8 x s8 (AVX-512 VNNI's vpdpbusd): A' = A + oa (oa = 128 for an
 * i8 A: A' = A ^ 0x80 is u8) and B' = B - ob (ob = 128 for a u8 B: B' = B ^ 0x80 read as
 * s8), then A B = A'B' + ob rowsum(A') - oa colsum(B') - K oa ob per element, the sums
 * taken while packing (the correction is a pass over each tile while it is in L1).
 *
 * Packing (every kernel reads the same layout, runtime/rt_qpack.h): A' rows padded with
 * zeros to kp = K rounded up to 4, per call (M K bytes), except for a u8 A with K a
 * multiple of 4 by an i8 B (a quantized activation by a weight): A' is A, read in place,
 * so the region has no packing pass and no barrier (1 thread: 0.64 -> 0.615 ms; under
 * load a barrier waits for a descheduled thread); B' in blocks of NR = 64
 * columns, each 4 panels of 16 columns, a panel kp / 4 groups of 64 bytes: the 4
 * reduction indices of each of its 16 columns together (vpdpbusd's operand), zeros past
 * K and past N, then the column sums. A constant B (a weight) is packed once at compile
 * time (legalize_lib.c): rt.qmatmul (A, packed B, params (K, N, B was u8), C). A B given
 * at run time is packed per call, each thread the block it computes into its own buffer
 * (kp * 64 bytes: 192 KiB at K = 3072, in the 1 MiB L2), then every row tile of its rows
 * runs over it, so B is read once a call.
 * Measured (Zen 5, one thread, best of 50, 128 x 768 x 3072): VNNI with B packed at
 * compile time 0.63 ms (482 G multiply-adds/s, the vpdpbusd peak); packing B per call
 * 1.5 ms (the byte shuffle of rt_qpack.h: 0.9 ms of it); one row 0.021 ms (B's 2.3 MB
 * at 110 GB/s). AVX2 6.1 ms (50 G/s); SSE2 29 ms; portable C 107-128 ms (the compiler does not
 * vectorize its u8 x s8 dot products on baseline x86-64: 2.3 G/s, against 0.4 G/s
 * for the column-at-a-time loop first written).
 * Kernels (chosen at run time, $RX_QGEMM_KERNEL = avx2 | sse2 | portable forces a lower
 * one for the tests):
 *   vnni      AVX-512 VNNI (avx512vnni + avx512bw): a 6 x 64 tile in 24 zmm
 *             accumulators, per group of 4 reduction indices 4 loads of B, 6 broadcasts
 *             of A's 4 bytes, 24 vpdpbusd (no saturation: 4 products summed into 32
 *             bits exactly). A one-row tile (a decode step, a tail) has a kernel of its
 *             own: 4 vpdpbusd per 256 bytes of B where the 6-row tile did 24 on copies
 *             of the row (1 x 768 x 3072, one thread, alternated: 0.028 -> 0.021 ms).
 *   avx2      AVX2: B's bytes widened to 16 bits (vpmovsxbw), A's 4 bytes to 16 bits and
 *             broadcast, vpmaddwd (two products summed into 32 bits: |u8 x s8| <= 32640,
 *             no saturation, unlike vpmaddubsw), 2 x 16 tiles; each accumulator lane
 *             holds the sum over reduction indices 4g, 4g+1 or 4g+2, 4g+3 of one column,
 *             the pairs added when the tile is written.
 *   sse2      every x86-64 without AVX2: the AVX2 kernel's arithmetic at 128 bits
 *             (pmaddwd), 2 x 8 tiles (128 x 768 x 3072, one thread: 29 ms, against
 *             107 for the portable C on this baseline ISA).
 *   portable  C loops over the same layout, in u32 (wrapping as ONNX Runtime's int32):
 *             other architectures.
 * Threads: the work is (column block, row chunk) items over the runtime's pool
 * (rx_rt_parallel_for) from 2^18 multiply-adds up, rows cut in chunks when there are
 * fewer than 2 blocks per thread; A (when packed) is packed first by all threads (a
 * barrier), then
 * each thread its items in order, packing a block when it changes.
 * Cost: M N K multiply-adds, packing M K + K N bytes (more when a block is shared by
 * row chunks).
 */
#include "rt_int.h"
#include "rt_qpack.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QG_X86 1
#include <immintrin.h>
#endif

enum { QG_OK, QG_ARGS, QG_DTYPE, QG_SHAPE, QG_NOMEM };
enum { NR = RX_QP_NR, PW = RX_QP_PW, MR = RX_QG_MR };

const char *rx_rt_qmatmul_strerr(int32_t code)
{
    switch (code) {
    case QG_ARGS: return "expects 3 tensors (A, B, C) or 4 (A, packed B, params, C)";
    case QG_DTYPE: return "A and B must be u8 or i8, C i32";
    case QG_SHAPE: return "the shapes of A (..., m, k), B (k, n) or packed B and params (k, n, "
                          "u8), and C (..., m, n) do not agree";
    case QG_NOMEM: return "out of memory for the packed operands";
    default: return NULL;
    }
}

/* Raw A'B' of rows [0, mr) (mr <= MR) of A' (row stride lda) by one packed block (kp
 * reduction indices), columns [0, ncols) written to C (row stride ldc): rx_qkern_fn. */
typedef rx_qkern_fn qkern_fn;

static void kern_c(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp, int mr,
                   int32_t *c, int64_t ldc, int ncols)
{
    for (int r = 0; r < mr; r++)
        for (int p = 0; p * PW < ncols; p++) { /* one panel: 64 bytes a group, in order */
            const int8_t *panel = bp + (int64_t)p * kp * PW;
            const uint8_t *a = ap + r * lda;
            uint32_t acc[PW] = {0};
            for (int64_t g = 0; g < kp / 4; g++)
                for (int jj = 0; jj < PW; jj++)
                    for (int t = 0; t < 4; t++)
                        acc[jj] += (uint32_t)((int32_t)a[4 * g + t] * panel[g * 64 + jj * 4 + t]);
            for (int jj = 0; jj < PW && p * PW + jj < ncols; jj++) c[r * ldc + p * PW + jj] = (int32_t)acc[jj];
        }
}

#if QG_X86
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* One row by a 64-column block (a decode step's product): 4 vpdpbusd per 256 bytes of
 * B instead of the 6-row tile's 24, two groups in flight (8 accumulators). */
static VNNI_TARGET void kern_vnni_r1(const uint8_t *ap, const int8_t *bp, int64_t kp, int32_t *c,
                                     int ncols)
{
    __m512i s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm512_setzero_si512();
    const int64_t ps = kp * PW, ng = kp / 4;
    int64_t g = 0;
    for (; g + 2 <= ng; g += 2) {
        int32_t a0, a1;
        memcpy(&a0, ap + 4 * g, 4);
        memcpy(&a1, ap + 4 * g + 4, 4);
        __m512i x0 = _mm512_set1_epi32(a0), x1 = _mm512_set1_epi32(a1);
        const int8_t *b = bp + g * 64;
        s[0] = _mm512_dpbusd_epi32(s[0], x0, _mm512_loadu_si512(b));
        s[1] = _mm512_dpbusd_epi32(s[1], x0, _mm512_loadu_si512(b + ps));
        s[2] = _mm512_dpbusd_epi32(s[2], x0, _mm512_loadu_si512(b + 2 * ps));
        s[3] = _mm512_dpbusd_epi32(s[3], x0, _mm512_loadu_si512(b + 3 * ps));
        s[4] = _mm512_dpbusd_epi32(s[4], x1, _mm512_loadu_si512(b + 64));
        s[5] = _mm512_dpbusd_epi32(s[5], x1, _mm512_loadu_si512(b + ps + 64));
        s[6] = _mm512_dpbusd_epi32(s[6], x1, _mm512_loadu_si512(b + 2 * ps + 64));
        s[7] = _mm512_dpbusd_epi32(s[7], x1, _mm512_loadu_si512(b + 3 * ps + 64));
    }
    if (g < ng) {
        int32_t a0;
        memcpy(&a0, ap + 4 * g, 4);
        __m512i x0 = _mm512_set1_epi32(a0);
        const int8_t *b = bp + g * 64;
        for (int q = 0; q < 4; q++) s[q] = _mm512_dpbusd_epi32(s[q], x0, _mm512_loadu_si512(b + q * ps));
    }
    for (int q = 0; q < 4; q++) {
        int left = ncols - PW * q;
        if (left <= 0) break;
        __mmask16 mk = left >= PW ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        _mm512_mask_storeu_epi32(c + PW * q, mk, _mm512_add_epi32(s[q], s[q + 4]));
    }
}

/* 6 rows (a tail's missing rows read row 0 again and are not written) by a 64-column
 * block; named accumulators (an array of them was spilled to the stack by gcc 12). */
static VNNI_TARGET void kern_vnni(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp,
                                  int mr, int32_t *c, int64_t ldc, int ncols)
{
    if (mr == 1) {
        kern_vnni_r1(ap, bp, kp, c, ncols);
        return;
    }
    const uint8_t *a0 = ap, *a1 = ap + (mr > 1) * lda, *a2 = ap + (mr > 2) * 2 * lda,
                  *a3 = ap + (mr > 3) * 3 * lda, *a4 = ap + (mr > 4) * 4 * lda,
                  *a5 = ap + (mr > 5) * 5 * lda;
#define Z4(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0, \
                      c##r##3 = c##r##0
    Z4(0); Z4(1); Z4(2); Z4(3); Z4(4); Z4(5);
#undef Z4
    const int64_t ps = kp * PW;
    for (int64_t g = 0; g < kp / 4; g++) {
        const int8_t *b = bp + g * 64;
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + ps);
        __m512i b2 = _mm512_loadu_si512(b + 2 * ps), b3 = _mm512_loadu_si512(b + 3 * ps), a;
        int32_t av;
#define DP4(r)                                              \
    memcpy(&av, a##r + 4 * g, 4);                           \
    a = _mm512_set1_epi32(av);                              \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, a, b0);          \
    c##r##1 = _mm512_dpbusd_epi32(c##r##1, a, b1);          \
    c##r##2 = _mm512_dpbusd_epi32(c##r##2, a, b2);          \
    c##r##3 = _mm512_dpbusd_epi32(c##r##3, a, b3)
        DP4(0); DP4(1); DP4(2); DP4(3); DP4(4); DP4(5);
#undef DP4
    }
    __m512i acc[MR][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                          {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
    for (int r = 0; r < mr; r++)
        for (int q = 0; q < 4; q++) {
            int left = ncols - PW * q;
            if (left <= 0) break;
            __mmask16 mk = left >= PW ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            _mm512_mask_storeu_epi32(c + r * ldc + PW * q, mk, acc[r][q]);
        }
}

/* SSE2 (every x86-64): the AVX2 kernel's arithmetic at 128 bits (pmaddwd on bytes
 * widened to 16 bits), tiles of 2 rows by 8 columns (two 16-byte chunks of a group: 8
 * accumulators, A's two broadcasts, the widened chunks in the 16 xmm registers). */
static void sse2_tile(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp, int mr,
                      int32_t *c, int64_t ldc, int ncols)
{
    __m128i acc[2][4];
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = _mm_setzero_si128();
    const __m128i zero = _mm_setzero_si128();
    const uint8_t *a1p = ap + (mr > 1) * lda;
    for (int64_t g = 0; g < kp / 4; g++) {
        const int8_t *b = bp + g * 64;
        __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)b);
        __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(b + 16));
        __m128i w0 = _mm_srai_epi16(_mm_unpacklo_epi8(x0, x0), 8), w1 = _mm_srai_epi16(_mm_unpackhi_epi8(x0, x0), 8);
        __m128i w2 = _mm_srai_epi16(_mm_unpacklo_epi8(x1, x1), 8), w3 = _mm_srai_epi16(_mm_unpackhi_epi8(x1, x1), 8);
        int32_t v0, v1;
        memcpy(&v0, ap + 4 * g, 4);
        memcpy(&v1, a1p + 4 * g, 4);
        __m128i a0 = _mm_unpacklo_epi8(_mm_cvtsi32_si128(v0), zero), a1 = _mm_unpacklo_epi8(_mm_cvtsi32_si128(v1), zero);
        a0 = _mm_unpacklo_epi64(a0, a0);
        a1 = _mm_unpacklo_epi64(a1, a1);
        acc[0][0] = _mm_add_epi32(acc[0][0], _mm_madd_epi16(a0, w0));
        acc[0][1] = _mm_add_epi32(acc[0][1], _mm_madd_epi16(a0, w1));
        acc[0][2] = _mm_add_epi32(acc[0][2], _mm_madd_epi16(a0, w2));
        acc[0][3] = _mm_add_epi32(acc[0][3], _mm_madd_epi16(a0, w3));
        acc[1][0] = _mm_add_epi32(acc[1][0], _mm_madd_epi16(a1, w0));
        acc[1][1] = _mm_add_epi32(acc[1][1], _mm_madd_epi16(a1, w1));
        acc[1][2] = _mm_add_epi32(acc[1][2], _mm_madd_epi16(a1, w2));
        acc[1][3] = _mm_add_epi32(acc[1][3], _mm_madd_epi16(a1, w3));
    }
    for (int r = 0; r < mr; r++)
        for (int q = 0; q < 4; q++) { /* acc[r][q]: columns 2q and 2q + 1, two halves each */
            uint32_t t[4];
            _mm_storeu_si128((__m128i *)(void *)t, acc[r][q]);
            for (int i = 0; i < 2 && 2 * q + i < ncols; i++)
                c[r * ldc + 2 * q + i] = (int32_t)(t[2 * i] + t[2 * i + 1]);
        }
}

static void kern_sse2(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp, int mr,
                      int32_t *c, int64_t ldc, int ncols)
{
    for (int p = 0; p * PW < ncols; p++)
        for (int h = 0; h < 2 && p * PW + 8 * h < ncols; h++) {
            const int8_t *half = bp + (int64_t)p * kp * PW + 32 * h;
            int col = p * PW + 8 * h, nc = ncols - col < 8 ? ncols - col : 8;
            for (int r = 0; r < mr; r += 2)
                sse2_tile(ap + r * lda, lda, half, kp, mr - r < 2 ? mr - r : 2, c + r * ldc + col, ldc, nc);
        }
}

#define AVX2_TARGET __attribute__((target("avx2")))

/* Rows [0, mr) (mr 1 or 2) by one 16-column panel. */
static inline __attribute__((always_inline)) AVX2_TARGET void
avx2_tile(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp, const int mr, int32_t *c,
          int64_t ldc, int ncols)
{
    __m256i acc[2][4];
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = _mm256_setzero_si256();
    for (int64_t g = 0; g < kp / 4; g++) {
        const int8_t *b = bp + g * 64;
        __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)b));
        __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b + 16)));
        __m256i w2 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b + 32)));
        __m256i w3 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b + 48)));
#pragma GCC unroll 2
        for (int r = 0; r < mr; r++) {
            int32_t av;
            memcpy(&av, ap + r * lda + 4 * g, 4);
            __m256i a = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(av)));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, w0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, w1));
            acc[r][2] = _mm256_add_epi32(acc[r][2], _mm256_madd_epi16(a, w2));
            acc[r][3] = _mm256_add_epi32(acc[r][3], _mm256_madd_epi16(a, w3));
        }
    }
    for (int r = 0; r < mr; r++)
        for (int q = 0; q < 4; q++) {
            uint32_t t[8];
            _mm256_storeu_si256((__m256i *)(void *)t, acc[r][q]);
            for (int i = 0; i < 4 && 4 * q + i < ncols; i++)
                c[r * ldc + 4 * q + i] = (int32_t)(t[2 * i] + t[2 * i + 1]);
        }
}

static AVX2_TARGET void kern_avx2(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp,
                                  int mr, int32_t *c, int64_t ldc, int ncols)
{
    for (int p = 0; p * PW < ncols; p++) {
        const int8_t *panel = bp + (int64_t)p * kp * PW;
        int nc = ncols - p * PW < PW ? ncols - p * PW : PW;
        int r = 0;
        for (; r + 2 <= mr; r += 2) avx2_tile(ap + r * lda, lda, panel, kp, 2, c + r * ldc + p * PW, ldc, nc);
        if (r < mr) avx2_tile(ap + r * lda, lda, panel, kp, 1, c + r * ldc + p * PW, ldc, nc);
    }
}
#endif

static pthread_once_t qk_once = PTHREAD_ONCE_INIT;
static qkern_fn qk_best = kern_c; /* set once (pthread_once), then read-only */
static const char *qk_name = "portable";

static void qk_choose(void)
{
#if QG_X86
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2");
    bool vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    const char *env = getenv("RX_QGEMM_KERNEL");
    bool sse2 = !env || strcmp(env, "portable");
    if (env && (!strcmp(env, "avx2") || !strcmp(env, "sse2") || !strcmp(env, "portable"))) vnni = false;
    if (env && (!strcmp(env, "sse2") || !strcmp(env, "portable"))) avx2 = false;
    if (sse2) {
        qk_best = kern_sse2;
        qk_name = "sse2";
    }
    if (vnni) {
        qk_best = kern_vnni;
        qk_name = "avx512-vnni";
    } else if (avx2) {
        qk_best = kern_avx2;
        qk_name = "avx2";
    }
#endif
}

const char *rx_rt_qgemm_kernel(void)
{
    pthread_once(&qk_once, qk_choose);
    return qk_name;
}

rx_qkern_fn rx_rt_qgemm_tile(void)
{
    pthread_once(&qk_once, qk_choose);
    return qk_best;
}

typedef struct qg {
    const uint8_t *a, *b;
    int32_t *c;
    int64_t m, k, n, kp;
    uint8_t ax;        /* 0x80 for an i8 A (A' = A ^ ax), else 0 */
    uint8_t bx;        /* 0x80 for a u8 B (B' = B ^ bx as s8), else 0 */
    uint8_t *ap;       /* A': m rows of kp bytes */
    uint32_t *rowsum;  /* sum of A' per row (used when bx) */
    int8_t *bufs;      /* per thread: one packed block, kp * NR bytes */
    const uint8_t *packed; /* B packed at compile time (rt_qpack.h), else NULL */
    int64_t nblk, mchunks, chunk_rows;
    qkern_fn kern;
} qg;

static void pack_a(const qg *q, int64_t r0, int64_t r1)
{
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *src = q->a + r * q->k;
        uint8_t *dst = q->ap + r * q->kp;
        uint32_t s = 0;
        for (int64_t k = 0; k < q->k; k++) {
            dst[k] = (uint8_t)(src[k] ^ q->ax);
            s += dst[k];
        }
        for (int64_t k = q->k; k < q->kp; k++) dst[k] = 0;
        q->rowsum[r] = s;
    }
}

static void qg_run(void *ud, int t, int nt)
{
    qg *q = ud;
    if (q->ap != q->a) { /* A read in place needs neither the packing nor the barrier */
        pack_a(q, q->m * t / nt, q->m * (t + 1) / nt);
        rx_rt_barrier();
    }
    int64_t items = q->nblk * q->mchunks, i0 = items * t / nt, i1 = items * (t + 1) / nt, have = -1;
    int8_t *buf = q->bufs ? q->bufs + (int64_t)t * q->kp * NR : NULL;
    const int8_t *bp = buf;
    uint32_t colsum[NR];
    uint32_t oa = q->ax ? 128u : 0u, ob = q->bx ? 128u : 0u;
    for (int64_t it = i0; it < i1; it++) {
        int64_t blk = it / q->mchunks, mc = it % q->mchunks;
        if (blk != have && q->packed) {
            bp = (const int8_t *)(q->packed + blk * q->kp * NR);
            memcpy(colsum, q->packed + (q->nblk * q->kp * NR + blk * NR * 4), sizeof colsum);
            have = blk;
        } else if (blk != have) {
            rx_qpack_block(q->b, q->k, q->n, q->bx, blk, buf, colsum);
            have = blk;
        }
        int64_t j0 = blk * NR;
        int nc = (int)(q->n - j0 < NR ? q->n - j0 : NR);
        int64_t r1 = (mc + 1) * q->chunk_rows < q->m ? (mc + 1) * q->chunk_rows : q->m;
        for (int64_t r = mc * q->chunk_rows; r < r1; r += MR) {
            int mr = (int)(r1 - r < MR ? r1 - r : MR);
            int32_t *c = q->c + r * q->n + j0;
            q->kern(q->ap + r * q->kp, q->kp, bp, q->kp, mr, c, q->n, nc);
            rx_qpack_correct(c, q->n, mr, nc, q->rowsum + r, colsum, oa, ob, (uint32_t)q->k);
        }
    }
}

static bool byte_dtype(DLDataType d)
{
    return d.lanes == 1 && d.bits == 8 && (d.code == kDLInt || d.code == kDLUInt);
}

/* The packed form's params (k, n, B was u8) checked against A, packed B and C. */
static bool packed_args(const DLTensor *B, const DLTensor *P, int64_t k, int64_t n, bool *bu8)
{
    if (P->dtype.code != kDLInt || P->dtype.bits != 64 || P->dtype.lanes != 1 || P->ndim != 1 ||
        P->shape[0] != 3 || B->ndim != 1 || B->dtype.bits != 8)
        return false;
    int64_t pv[3];
    memcpy(pv, (const char *)P->data + P->byte_offset, sizeof pv);
    *bu8 = pv[2] != 0;
    return pv[0] == k && pv[1] == n && B->shape[0] == rx_qpack_bytes(k, n);
}

int32_t rx_rt_qmatmul(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3 && nargs != 4) return QG_ARGS;
    const DLTensor *A = args[0], *B = args[1], *C = args[nargs - 1];
    if (!byte_dtype(A->dtype) || !byte_dtype(B->dtype) || C->dtype.code != kDLInt ||
        C->dtype.bits != 32 || C->dtype.lanes != 1)
        return QG_DTYPE;
    if (A->ndim < 2 || C->ndim != A->ndim) return QG_SHAPE;
    int64_t k = A->shape[A->ndim - 1], n = C->shape[C->ndim - 1], m = 1;
    bool b_u8 = B->dtype.code == kDLUInt;
    if (nargs == 4 ? !packed_args(B, args[2], k, n, &b_u8) : B->ndim != 2 || B->shape[0] != k || B->shape[1] != n)
        return QG_SHAPE;
    for (int32_t d = 0; d < A->ndim - 1; d++) {
        if (C->shape[d] != A->shape[d]) return QG_SHAPE;
        m *= A->shape[d];
    }
    pthread_once(&qk_once, qk_choose);
    int32_t *c = (int32_t *)(void *)((char *)C->data + C->byte_offset);
    if (m == 0 || n == 0) return QG_OK;
    if (k == 0) {
        memset(c, 0, (size_t)(m * n) * sizeof *c);
        return QG_OK;
    }
    const uint8_t *bdata = (const uint8_t *)B->data + B->byte_offset;
    qg q = {(const uint8_t *)A->data + A->byte_offset, bdata, c, m, k, n, rx_qpack_kp(k),
            A->dtype.code == kDLInt ? 0x80 : 0, b_u8 ? 0x80 : 0,
            NULL, NULL, NULL, nargs == 4 ? bdata : NULL, rx_qpack_blocks(n), 1, m, qk_best};
    int nthr = (double)m * (double)n * (double)k < (double)(1 << 18) ? 1 : rx_rt_max_threads();
    if (q.nblk < 2 * nthr) { /* few column blocks: cut the rows too */
        int64_t want = (2 * nthr + q.nblk - 1) / q.nblk, tiles = (m + MR - 1) / MR;
        q.mchunks = want < tiles ? want : tiles;
        q.chunk_rows = ((m + q.mchunks - 1) / q.mchunks + MR - 1) / MR * MR;
        q.mchunks = (m + q.chunk_rows - 1) / q.chunk_rows;
    }
    /* A u8 with K a multiple of 4 under an i8 B (a quantized activation by a weight):
     * A' is A itself, rows kp = K apart, and no row sums are used: read in place. */
    bool direct = !q.ax && !q.bx && k % 4 == 0;
    size_t abytes = direct ? 0 : (size_t)(m * q.kp + 63) / 64 * 64;
    size_t bbytes = q.packed ? 0 : (size_t)(q.kp * NR) * (size_t)nthr;
    size_t total = (abytes + bbytes + (size_t)m * sizeof(uint32_t) + 63) / 64 * 64;
    uint8_t *mem = aligned_alloc(64, total);
    if (!mem) return QG_NOMEM;
    q.ap = direct ? (uint8_t *)(uintptr_t)q.a : mem;
    q.bufs = q.packed ? NULL : (int8_t *)(mem + abytes);
    q.rowsum = (uint32_t *)(void *)(mem + abytes + bbytes);
    rx_rt_parallel_for_n(qg_run, &q, nthr);
    free(mem);
    return QG_OK;
}
