/*
 * library_conv_kern.c — blas.conv2d's implicit-GEMM tile (library_conv.c's igemm) with
 * the tile's row count and the call's epilogue in the kernel: a partial tile of output
 * channels costs its own rows, and the last reduction block writes act(acc + y + bias +
 * residual) straight from the registers.
 *
 *   rx_rt_conv_tile(kc, a, b, y, ldy, mr, nr, acc, epi)
 *     y[i][j] = sum over p < kc of a[p * RX_GEMM_MR + i] * b[p * RX_GEMM_NR + j]
 *               (+ y[i][j] when acc), then with epi: + bias[i], + res[i * ldy + j], then
 *     relu / clamp, for i < mr <= RX_GEMM_MR, j < nr <= RX_GEMM_NR; SiLU and hardswish
 *     (act 3, 4) after the store, over the tile in place (rx_rt_epilogue_rows: its
 *     vector forms, $RX_ACT_KERNEL's path) while it is in L1. The AVX-512 tile applies
 *     them to the accumulators (library_act.c's 16-lane vact, the values epi16 gives):
 *     reading back a tile just written by masked stores, which the CPU does not forward
 *     to loads, stalled (half of EfficientNet's SiLU time sat on that load, perf).
 *     a is rx_rt_gemm_pack_a's 6-row panel (rows past mr are padding, never read), b a
 *     16-column panel as library_conv.c's pack_panel writes it; nr <= 8 multiplies its
 *     first 8 columns only, nr <= 4 its first 4 in 128-bit registers (a 7x7 plane's
 *     last panel has 1 pixel: 23% of the 4 panels' work was padding, ~6% now).
 *
 * Why not library_gemm.c's kernel: it always computes all 6 rows, so a channel count
 * that is not a multiple of 6 wastes the rest of the last tile and that tile goes through
 * a bounce buffer (64 channels: 66 rows computed, 3%; 32: 36, 12.5%), and its
 * results are stored, then read back by a pass of epilogue over y (2.5% of a 3x3 layer
 * at 2 threads, perf). Here the row count is a compile-time constant of one of six
 * specializations (the accumulators of the absent rows do not exist), and the epilogue
 * is applied to the accumulators before the only store.
 *
 * Exactness: the same sums in the same order as library_gemm.c's kernel (one FMA per
 * reduction index, ascending p, from +0; a previous block's partial sum added once at
 * the end), then library_conv.c's epi_copy's operations in its order ((v + bias) +
 * residual, then max(v, 0) / min(max(v, lo), hi) with the scalar code's NaN choices):
 * the results are bit-identical to the kernel-then-epilogue way.
 * Without AVX2 + FMA (the CPU, or $RX_GEMM_KERNEL=portable, library_gemm.c, or
 * $RX_CONV_KERNEL=portable) or a GCC/Clang x86-64 build, rx_rt_conv_tile_ok() is false and library_conv.c keeps its
 * kernel-then-epilogue way.
 *
 *   rx_rt_conv_tile512(kc, a, lda, b, bs, bld, y, ldy, mr, nr, acc, epi)
 *     the same for mr <= 12 rows of the weights as they are (row i at a + i * lda: no
 *     packing) by nr <= 32 columns: b's 16 and, past 16, those at b + bs; reduction
 *     index p's row of B at b + p * bld (16: a packed panel; a plane: a 1x1
 *     convolution's x read in place: whole pairs only, nr 32). All 16 columns of a
 *     panel are read (masked loads cost GCC two mask reloads from the stack a step).
 * On CPUs with AVX-512F and DQ (Zen 4/5, Intel since Skylake-SP), picked at run time
 * (rx_rt_conv_tile_kind: the code is built for the baseline, these functions carry
 * target("avx512f,avx512dq,avx2,fma"): DQ for the activations' vector forms). The register tile is 12 x 32: 24 zmm accumulators, per reduction
 * index 2 vector loads and 12 broadcasts folded into the FMAs as {1to16} memory operands;
 * the two FMA pipes of Zen 5 need at least 8 independent chains of 4 cycles, and the
 * loads (14 a 24 FMAs) stay under its load ports' rate. Partial columns are masked loads
 * and stores (no bounce tile), absent rows have no accumulators (12 specializations a
 * width). Reading the weights unpacked removes the per-call packing (9% of ResNet-18 at
 * one thread with a packed 12 x 16 tile, perf): a broadcast takes one float a row a step
 * either way, the 12 rows are 12 streams the prefetcher follows, with a software
 * prefetch 32 floats ahead every 16 steps (0.93x the time without, one run, load 8).
 * ResNet-18 (1x3x224x224, one thread, same binary, $RX_CONV_KERNEL, min of 30, load 7):
 * the AVX2 6x16 tile 36.6 ms, a 12 x 16 AVX-512 tile on packed weights 1.5x faster,
 * 12 x 16 unpacked 1.65x, this 12 x 32 one 1.83x (20.0 ms). Same sums in the same
 * order as the AVX2 tile (one FMA per index, ascending, from +0), same epilogue: results
 * bit-identical to it. $RX_CONV_KERNEL=avx2 or portable runs the lower ways on such a
 * CPU (test_conv_lib_e2e runs each).
 * Addressing (Zen 5 session): GCC gave each of the 12 rows its own pointer and, short of
 * general registers, kept five in vector registers or on the stack, moved back every
 * step, plus a prefetch test every step. The rows are now four group pointers (rows 0,
 * 3, 6, 9) plus 0, 1 or 2 row strides in a register (base + index addresses: 4 moving
 * pointers, no spill in the loop), the prefetches once a 16-step block, and the lines
 * the epilogue reads or writes (y, the residual) prefetched before the loop. In L1 the
 * tile runs ~275 GFLOP/s a core either way (12 x 32, kc 288; 64 flops a cycle at
 * ~4.3 GHz): the gain is in place, where the spilled pointers waited on L2's weights
 * (same-run layer minima, main's build against this one, load 3-8: MobileNetV3 0.97-0.98
 * of the time, EfficientNet 0.97-0.98, ResNet-50 0.99, 1 and 2 threads, with the 1x1
 * change of library_conv.c).
 *
 *   rx_rt_conv_pack512(src, off, kc, rj, rv, runs, nr, exact, dst)
 *     library_conv.c's pack_panel for that tile: the same B panel, moved with 64-byte
 *     loads and stores (see pack_panel's comment for the measurements).
 *   rx_rt_conv_evens512(dst, src, n)
 *     library_conv.c's evens (stride-2 phase planes) 16 floats a step on that CPU.
 */
#include "rt_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CK_X86 1
#include <immintrin.h>
#else
#define CK_X86 0
#endif

/* The tile kind (RX_CONV_TILE_*): the widest the CPU runs, lowered by $RX_CONV_KERNEL
 * (avx512, avx2 or portable: the tests' way to run the lower paths on an AVX-512 CPU)
 * and by $RX_GEMM_KERNEL=portable (then rx_rt_gemm_micro is the C kernel: none). */
static int tile_kind;
static pthread_once_t tile_once = PTHREAD_ONCE_INIT;

static void tile_choose(void)
{
    int best = RX_CONV_TILE_NONE;
#if CK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = RX_CONV_TILE_AVX2;
    if (best && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        best = RX_CONV_TILE_AVX512; /* DQ: the activations' forms (rt_vmath_lanes.h) */
#endif
    const char *g = getenv("RX_GEMM_KERNEL"), *k = getenv("RX_CONV_KERNEL");
    if (g && strcmp(g, "portable") == 0) best = RX_CONV_TILE_NONE;
    if (k && strcmp(k, "portable") == 0) best = RX_CONV_TILE_NONE;
    if (k && strcmp(k, "avx2") == 0 && best > RX_CONV_TILE_AVX2) best = RX_CONV_TILE_AVX2;
    tile_kind = best;
}

int rx_rt_conv_tile_kind(void)
{
    pthread_once(&tile_once, tile_choose);
    return tile_kind;
}

bool rx_rt_conv_tile_ok(void)
{
    return rx_rt_conv_tile_kind() != RX_CONV_TILE_NONE;
}

#if CK_X86
#define CK_FN __attribute__((target("avx2,fma")))
#define CK_INLINE static inline __attribute__((always_inline, target("avx2,fma")))

/* One vector of row i of the tile: + y (acc), + bias, + residual, act, stored. */
CK_INLINE void ck_vec(float *y, const float *res, float bias, bool acc, bool has_bias,
                      int act, __m256 lo8, __m256 hi8, __m256 v)
{
    if (acc) v = _mm256_add_ps(v, _mm256_loadu_ps(y));
    if (has_bias) v = _mm256_add_ps(v, _mm256_set1_ps(bias));
    if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(res));
    if (act == RX_RT_CONV_ACT_LEAKY) { /* v > 0 ? v : v * slope (lo8), epi_copy's */
        __m256 gt = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ);
        v = _mm256_blendv_ps(_mm256_mul_ps(v, lo8), v, gt);
    } else if (act) { /* max(v, lo8): v > lo8 ? v : lo8, epi_copy's test (relu: lo8 = 0) */
        v = _mm256_max_ps(v, lo8);
        if (act == 2) v = _mm256_min_ps(v, hi8);
    }
    _mm256_storeu_ps(y, v);
}

/* Row i of the tile out of (lo, hi) (NV = 1: lo alone, 8 columns). */
CK_INLINE void ck_row(const int NV, float *y, const float *res, float bias, bool acc,
                      bool has_bias, int act, __m256 lo8, __m256 hi8, __m256 lo, __m256 hi)
{
    ck_vec(y, res, bias, acc, has_bias, act, lo8, hi8, lo);
    if (NV == 2) ck_vec(y + 8, res ? res + 8 : NULL, bias, acc, has_bias, act, lo8, hi8, hi);
}

/* One step of row R: a's value R broadcast, times b's one or two vectors. */
#define CK_ROW(R)                                                                          \
    if (MR > R) {                                                                          \
        __m256 s = _mm256_broadcast_ss(a + R);                                             \
        c##R##0 = _mm256_fmadd_ps(s, b0, c##R##0);                                         \
        if (NV == 2) c##R##1 = _mm256_fmadd_ps(s, b1, c##R##1);                            \
    }
#define CK_OUT(R)                                                                          \
    if (MR > R)                                                                            \
        ck_row(NV, y + R * ldy, e && e->res ? e->res + R * ldy : NULL,                     \
               e && e->bias ? e->bias[R] : 0, acc, e && e->bias, e ? e->act : 0, lo8, hi8, \
               c##R##0, c##R##1);

/* MR rows by NV vectors of 8 columns (the first 8 of b's 16 when NV is 1). */
CK_INLINE void ck_tile(const int MR, const int NV, int64_t kc, const float *a, const float *b,
                       float *y, int64_t ldy, bool acc, const rx_rt_conv_epi *e)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t p = 0; p < kc; p++, a += RX_GEMM_MR, b += RX_GEMM_NR) {
        if ((p & 3) == 0) _mm_prefetch((const char *)(a + 16 * RX_GEMM_MR), _MM_HINT_T0);
        __m256 b0 = _mm256_loadu_ps(b), b1 = NV == 2 ? _mm256_loadu_ps(b + 8) : b0;
        CK_ROW(0) CK_ROW(1) CK_ROW(2) CK_ROW(3) CK_ROW(4) CK_ROW(5)
    }
    __m256 lo8 = _mm256_set1_ps(e && (e->act == 2 || e->act == RX_RT_CONV_ACT_LEAKY) ? e->lo : 0.0f);
    __m256 hi8 = _mm256_set1_ps(e && e->act == 2 ? e->hi : 0.0f);
    CK_OUT(0) CK_OUT(1) CK_OUT(2) CK_OUT(3) CK_OUT(4) CK_OUT(5)
}
#undef CK_ROW
#undef CK_OUT

/* MR rows by 4 columns (b's first 4) in 128-bit registers: a plane's last panel with at
 * most 4 pixels (7x7's 49th pixel), a quarter of the 8-column tile's multiply-adds
 * (Zen 1 issues two 128-bit FMAs a cycle, one 256-bit one). Same sums, same order; the
 * row loops are unrolled (MR is a constant), so c stays in registers. */
CK_INLINE void ck_tile_q(const int MR, int64_t kc, const float *a, const float *b, float *y,
                         int64_t ldy, bool acc, const rx_rt_conv_epi *e)
{
    __m128 c[RX_GEMM_MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) c[r] = _mm_setzero_ps();
    for (int64_t p = 0; p < kc; p++, a += RX_GEMM_MR, b += RX_GEMM_NR) {
        __m128 b0 = _mm_loadu_ps(b);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) c[r] = _mm_fmadd_ps(_mm_broadcast_ss(a + r), b0, c[r]);
    }
    int act = e ? e->act : 0;
    __m128 lo4 = _mm_set1_ps(act == 2 || act == RX_RT_CONV_ACT_LEAKY ? e->lo : 0.0f);
    __m128 hi4 = _mm_set1_ps(act == 2 ? e->hi : 0.0f);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) { /* ck_vec's steps on 4 columns */
        __m128 v = acc ? _mm_add_ps(c[r], _mm_loadu_ps(y + r * ldy)) : c[r];
        if (e && e->bias) v = _mm_add_ps(v, _mm_set1_ps(e->bias[r]));
        if (e && e->res) v = _mm_add_ps(v, _mm_loadu_ps(e->res + r * ldy));
        if (act == RX_RT_CONV_ACT_LEAKY) /* v > 0 ? v : v * slope (lo4) */
            v = _mm_blendv_ps(_mm_mul_ps(v, lo4), v, _mm_cmp_ps(v, _mm_setzero_ps(), _CMP_GT_OQ));
        else v = act ? _mm_max_ps(v, lo4) : v;
        _mm_storeu_ps(y + r * ldy, act == 2 ? _mm_min_ps(v, hi4) : v);
    }
}

#define CK_SPEC(M, V)                                                                      \
    CK_FN static void ck_tile##M##_##V(int64_t kc, const float *a, const float *b, float *y, \
                                       int64_t ldy, bool acc, const rx_rt_conv_epi *e)     \
    {                                                                                      \
        if (V == 0) ck_tile_q(M, kc, a, b, y, ldy, acc, e);                                \
        else ck_tile(M, V, kc, a, b, y, ldy, acc, e);                                      \
    }
CK_SPEC(1, 0) CK_SPEC(2, 0) CK_SPEC(3, 0) CK_SPEC(4, 0) CK_SPEC(5, 0) CK_SPEC(6, 0)
CK_SPEC(1, 1) CK_SPEC(2, 1) CK_SPEC(3, 1) CK_SPEC(4, 1) CK_SPEC(5, 1) CK_SPEC(6, 1)
CK_SPEC(1, 2) CK_SPEC(2, 2) CK_SPEC(3, 2) CK_SPEC(4, 2) CK_SPEC(5, 2) CK_SPEC(6, 2)
#undef CK_SPEC

typedef void (*ck_fn)(int64_t, const float *, const float *, float *, int64_t, bool,
                      const rx_rt_conv_epi *);
/* [0: 4 columns, 1: 8, 2: 16][rows] */
static const ck_fn ck_by_rows[3][RX_GEMM_MR + 1] = {
    {NULL, ck_tile1_0, ck_tile2_0, ck_tile3_0, ck_tile4_0, ck_tile5_0, ck_tile6_0},
    {NULL, ck_tile1_1, ck_tile2_1, ck_tile3_1, ck_tile4_1, ck_tile5_1, ck_tile6_1},
    {NULL, ck_tile1_2, ck_tile2_2, ck_tile3_2, ck_tile4_2, ck_tile5_2, ck_tile6_2}};
#endif

/* SiLU and hardswish (rx_rt_conv_act_rt's): the tile with bias and residual in registers,
 * then the activation over its mr x nr values in place, while they are in L1. */
static bool tile_act_after(const rx_rt_conv_epi *epi, rx_rt_conv_epi *e2)
{
    if (!epi || !rx_rt_conv_act_rt(epi->act)) return false;
    *e2 = *epi, e2->act = 0;
    return true;
}

void rx_rt_conv_tile(int64_t kc, const float *a, const float *b, float *y, int64_t ldy, int mr,
                     int nr, bool acc, const rx_rt_conv_epi *epi)
{
#if CK_X86
    if (mr < 1 || mr > RX_GEMM_MR || nr < 1 || nr > RX_GEMM_NR) return;
    rx_rt_conv_epi ea;
    if (tile_act_after(epi, &ea)) {
        rx_rt_conv_tile(kc, a, b, y, ldy, mr, nr, acc, &ea);
        rx_rt_epilogue_rows(y, mr, nr, ldy, NULL, rx_rt_conv_act_rt(epi->act));
        return;
    }
    /* 8 columns or fewer: half the multiply-adds; 4 or fewer: a quarter */
    int nv = nr > RX_GEMM_NR / 2 ? 2 : nr > RX_GEMM_NR / 4 ? 1 : 0;
    if (nr == RX_GEMM_NR || nr == RX_GEMM_NR / 2 || nr == RX_GEMM_NR / 4) {
        ck_by_rows[nv][mr](kc, a, b, y, ldy, acc, epi);
        return;
    }
    /* a partial panel (the last of a plane): through a bounce tile of NR columns */
    float t[RX_GEMM_MR * RX_GEMM_NR], r[RX_GEMM_MR * RX_GEMM_NR];
    rx_rt_conv_epi e2;
    memset(t, 0, sizeof t), memset(r, 0, sizeof r);
    for (int i = 0; i < mr; i++) {
        if (acc) memcpy(t + i * RX_GEMM_NR, y + i * ldy, sizeof(float) * (size_t)nr);
        if (epi && epi->res) memcpy(r + i * RX_GEMM_NR, epi->res + i * ldy, sizeof(float) * (size_t)nr);
    }
    if (epi) e2 = *epi, e2.res = epi->res ? r : NULL;
    ck_by_rows[nv][mr](kc, a, b, t, RX_GEMM_NR, acc, epi ? &e2 : NULL);
    for (int i = 0; i < mr; i++) memcpy(y + i * ldy, t + i * RX_GEMM_NR, sizeof(float) * (size_t)nr);
#else
    (void)kc, (void)a, (void)b, (void)y, (void)ldy, (void)mr, (void)nr, (void)acc, (void)epi;
#endif
}

/* ---- the AVX-512 tile: up to 12 rows of the weights as they are, by 16 columns ---- */

#if CK_X86
#ifndef CZ_PFD
#define CZ_PFD 32
#endif
#define CZ_FN __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define CZ_INLINE static inline __attribute__((always_inline, target("avx512f,avx512dq,avx2,fma")))
#define RX_VL 16 /* vact16: SiLU and hardswish on the accumulators (library_act.c's forms) */
#define RX_VL_FN CZ_FN
#define RX_VL_ACT_ONLY
#include "rt_vmath_lanes.h"
#undef RX_VL
#undef RX_VL_FN
#undef RX_VL_ACT_ONLY

/* One row of the tile: + y (acc), + bias, + residual, act, stored; m: the nr columns. */
CZ_INLINE void cz_row(float *y, const float *res, const rx_rt_conv_epi *e, int r, bool acc,
                      __m512 lo, __m512 hi, __mmask16 m, __m512 v)
{
    if (acc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y));
    if (e && e->bias) v = _mm512_add_ps(v, _mm512_set1_ps(e->bias[r]));
    if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res));
    if (e && e->act == RX_RT_CONV_ACT_LEAKY) { /* v > 0 ? v : v * slope (lo), as ck_vec */
        v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NGT_UQ), v, lo);
    } else if (e && rx_rt_conv_act_rt(e->act)) {
        v = vact16(rx_rt_conv_act_rt(e->act), v); /* epi16's values: no store, reload */
    } else if (e && e->act) { /* max(v, lo): v > lo ? v : lo, as ck_vec */
        v = _mm512_max_ps(v, lo);
        if (e->act == 2) v = _mm512_min_ps(v, hi);
    }
    _mm512_mask_storeu_ps(y, m, v);
}

/* Row R = 3 * G + J: its weight at the step's reduction index broadcast from row
 * group G's pointer plus J row strides (J * L bytes: a base + index address), times the
 * panels' one or two vectors. */
#define CZ_ROW(R, G, J)                                                                    \
    if (MR > R) {                                                                          \
        __m512 s = _mm512_set1_ps(*(const float *)(g##G + (J) * L));                       \
        c##R##0 = _mm512_fmadd_ps(s, b0, c##R##0);                                         \
        if (NV == 2) c##R##1 = _mm512_fmadd_ps(s, b1, c##R##1);                            \
    }
#define CZ_OUT(R)                                                                          \
    if (MR > R) {                                                                          \
        const float *r_ = e && e->res ? e->res + R * ldy : NULL;                           \
        cz_row(y + R * ldy, r_, e, R, acc, lo, hi, m0, c##R##0);                           \
        if (NV == 2) cz_row(y + R * ldy + 16, r_ ? r_ + 16 : NULL, e, R, acc, lo, hi, m1,  \
                            c##R##1);                                                      \
    }
#define CZ_PF(R, G, J)                                                                     \
    if (MR > R) _mm_prefetch((const char *)(g##G + (J) * L + 4 * CZ_PFD), _MM_HINT_T0);
#define CZ_ACC(R) c##R##0 = _mm512_setzero_ps(), c##R##1 = c##R##0
/* One reduction step: the panels' vectors, then the rows' broadcasts and multiply-adds;
 * the four row-group pointers and the panel pointer move on. */
#define CZ_STEP()                                                                          \
    do {                                                                                   \
        __m512 b0 = _mm512_loadu_ps(b), b1 = NV == 2 ? _mm512_loadu_ps(b + bs) : b0;      \
        CZ_ROW(0, 0, 0) CZ_ROW(1, 0, 1) CZ_ROW(2, 0, 2) CZ_ROW(3, 1, 0) CZ_ROW(4, 1, 1)     \
        CZ_ROW(5, 1, 2) CZ_ROW(6, 2, 0) CZ_ROW(7, 2, 1) CZ_ROW(8, 2, 2) CZ_ROW(9, 3, 0)     \
        CZ_ROW(10, 3, 1) CZ_ROW(11, 3, 2)                                                  \
        g0 += 4, g1 += 4, g2 += 4, g3 += 4, b += bld;                                      \
    } while (0)

/* MR rows (row r of the weights at a + r * lda) by NV panels of 16 columns (the second
 * at b + bs): 12 x 32 is 24 accumulators, 2 vector loads and 12 broadcasts a step.
 * The rows are addressed as four group pointers (rows 0, 3, 6, 9) plus 0, 1 or 2 row
 * strides in a register: 4 moving pointers, not 12 (GCC gave each row its own pointer
 * and kept 5 of them in vector registers or on the stack, reloaded every step), and
 * the prefetches once a 16-step block, not a test every step. */
CZ_INLINE void cz_tile(const int MR, const int NV, int64_t kc, const float *a, int64_t lda,
                       const float *b, int64_t bs, int64_t bld, float *y, int64_t ldy, __mmask16 m0,
                       __mmask16 m1, bool acc, const rx_rt_conv_epi *e)
{
    const int64_t L = lda * (int64_t)sizeof(float); /* bytes a row */
    const char *g0 = (const char *)a, *g1 = g0 + (MR > 3 ? 3 : 0) * L;
    const char *g2 = g0 + (MR > 6 ? 6 : 0) * L, *g3 = g0 + (MR > 9 ? 9 : 0) * L;
    __m512 CZ_ACC(0), CZ_ACC(1), CZ_ACC(2), CZ_ACC(3), CZ_ACC(4), CZ_ACC(5), CZ_ACC(6),
           CZ_ACC(7), CZ_ACC(8), CZ_ACC(9), CZ_ACC(10), CZ_ACC(11);
    /* the lines the epilogue reads or writes (y, the residual), fetched while the
     * multiply-adds run */
    const float *res = e ? e->res : NULL;
    for (int r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(y + r * ldy), _MM_HINT_T0);
        if (NV == 2) _mm_prefetch((const char *)(y + r * ldy + 16), _MM_HINT_T0);
        if (res) _mm_prefetch((const char *)(res + r * ldy), _MM_HINT_T0);
        if (res && NV == 2) _mm_prefetch((const char *)(res + r * ldy + 16), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc;) { /* blocks of 16 steps (the last may be less) */
        CZ_PF(0, 0, 0) CZ_PF(1, 0, 1) CZ_PF(2, 0, 2) CZ_PF(3, 1, 0) CZ_PF(4, 1, 1)
        CZ_PF(5, 1, 2) CZ_PF(6, 2, 0) CZ_PF(7, 2, 1) CZ_PF(8, 2, 2) CZ_PF(9, 3, 0)
        CZ_PF(10, 3, 1) CZ_PF(11, 3, 2)
        for (int64_t end = kc - p < 16 ? kc : p + 16; p < end; p++) CZ_STEP();
    }
    __m512 lo = _mm512_set1_ps(e && (e->act == 2 || e->act == RX_RT_CONV_ACT_LEAKY) ? e->lo : 0.0f);
    __m512 hi = _mm512_set1_ps(e && e->act == 2 ? e->hi : 0.0f);
    CZ_OUT(0) CZ_OUT(1) CZ_OUT(2) CZ_OUT(3) CZ_OUT(4) CZ_OUT(5)
    CZ_OUT(6) CZ_OUT(7) CZ_OUT(8) CZ_OUT(9) CZ_OUT(10) CZ_OUT(11)
}
#undef CZ_ROW
#undef CZ_OUT
#undef CZ_STEP
#undef CZ_ACC
#undef CZ_PF

#define CZ_SPEC(M, V)                                                                      \
    CZ_FN static void cz_tile##M##_##V(int64_t kc, const float *a, int64_t lda,            \
                                       const float *b, int64_t bs, int64_t bld, float *y,  \
                                       int64_t ldy,                                        \
                                       __mmask16 m0, __mmask16 m1, bool acc,               \
                                       const rx_rt_conv_epi *e)                            \
    {                                                                                      \
        cz_tile(M, V, kc, a, lda, b, bs, bld, y, ldy, m0, m1, acc, e);                     \
    }
#define CZ_SPECS(M) CZ_SPEC(M, 1) CZ_SPEC(M, 2)
CZ_SPECS(1) CZ_SPECS(2) CZ_SPECS(3) CZ_SPECS(4) CZ_SPECS(5) CZ_SPECS(6)
CZ_SPECS(7) CZ_SPECS(8) CZ_SPECS(9) CZ_SPECS(10) CZ_SPECS(11) CZ_SPECS(12)
#undef CZ_SPEC
#undef CZ_SPECS

typedef void (*cz_fn)(int64_t, const float *, int64_t, const float *, int64_t, int64_t, float *, int64_t,
                      __mmask16, __mmask16, bool, const rx_rt_conv_epi *);
#define CZ_BY(V)                                                                           \
    {NULL, cz_tile1_##V, cz_tile2_##V, cz_tile3_##V, cz_tile4_##V, cz_tile5_##V,           \
     cz_tile6_##V, cz_tile7_##V, cz_tile8_##V, cz_tile9_##V, cz_tile10_##V, cz_tile11_##V, \
     cz_tile12_##V}
static const cz_fn cz_by_rows[2][RX_CONV_TILE_ROWS + 1] = {CZ_BY(1), CZ_BY(2)};
#undef CZ_BY
#endif

void rx_rt_conv_tile512(int64_t kc, const float *a, int64_t lda, const float *b, int64_t bs,
                        int64_t bld, float *y, int64_t ldy, int mr, int nr, bool acc,
                        const rx_rt_conv_epi *epi)
{
#if CK_X86
    if (mr < 1 || mr > RX_CONV_TILE_ROWS || nr < 1 || nr > 2 * RX_GEMM_NR) return;
    __mmask16 m0 = (__mmask16)((1u << (nr < 16 ? nr : 16)) - 1);
    __mmask16 m1 = (__mmask16)((1u << (nr > 16 ? nr - 16 : 0)) - 1);
    cz_by_rows[nr > 16][mr](kc, a, lda, b, bs, bld, y, ldy, m0, m1, acc, epi);
#else
    (void)kc, (void)a, (void)lda, (void)b, (void)bs, (void)y, (void)ldy, (void)mr, (void)nr;
    (void)acc, (void)epi;
#endif
}

#if CK_X86
/* 16 floats a vector: one 64-byte load and store a run where the baseline build's
 * memcpy was four 16-byte ones (pack_panel was 7.5% of ResNet-18 and 9% of
 * MobileNetV2 at one thread, perf). */
CZ_FN static void cz_pack(const float *src, const int64_t *off, int64_t kc, const int64_t *rj,
                          const int64_t *rv, int64_t runs, int64_t nr, bool exact, float *dst)
{
    __mmask16 keep = (__mmask16)((1u << nr) - 1);
    if (exact) { /* nothing readable past the nr floats */
        for (int64_t p = 0; p < kc; p++, dst += RX_GEMM_NR)
            _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(keep, src + off[p] + rv[0]));
        return;
    }
    if (runs == 1) {
        const float *s = src + rv[0];
        for (int64_t p = 0; p < kc; p++, dst += RX_GEMM_NR) {
            /* the panel after next: rows a plane apart, the prefetcher does not follow */
            _mm_prefetch((const char *)(s + off[p] + 2 * RX_GEMM_NR), _MM_HINT_T0);
            _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(keep, s + off[p]));
        }
        return;
    }
    for (int64_t p = 0; p < kc; p++, dst += RX_GEMM_NR) {
        for (int64_t r = 0; r < runs; r++)
            _mm512_storeu_ps(dst + rj[r], _mm512_loadu_ps(src + off[p] + rv[r]));
        if (nr < RX_GEMM_NR) _mm512_mask_storeu_ps(dst, (__mmask16)~keep, _mm512_setzero_ps());
    }
}
#endif

#if CK_X86
/* 16 evens a step: 32 floats loaded, the evens kept by one two-source permute. */
CZ_FN static int64_t cz_evens(float *dst, const float *src, int64_t n)
{
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t j = 0;
    for (; j + 17 <= n; j += 16) /* reads src[2j .. 2j + 31], 2j + 31 < 2n - 2 */
        _mm512_storeu_ps(dst + j, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * j), ev,
                                                         _mm512_loadu_ps(src + 2 * j + 16)));
    return j;
}
#endif

int64_t rx_rt_conv_evens512(float *dst, const float *src, int64_t n)
{
#if CK_X86
    if (rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512) return cz_evens(dst, src, n);
#endif
    (void)dst, (void)src, (void)n;
    return 0;
}

void rx_rt_conv_pack512(const float *src, const int64_t *off, int64_t kc, const int64_t *rj,
                        const int64_t *rv, int64_t runs, int64_t nr, bool exact, float *dst)
{
#if CK_X86
    if (nr >= 1 && nr <= RX_GEMM_NR && runs >= 1) cz_pack(src, off, kc, rj, rv, runs, nr, exact, dst);
#else
    (void)src, (void)off, (void)kc, (void)rj, (void)rv, (void)runs, (void)nr, (void)exact;
    (void)dst;
#endif
}
