/*
 * library_conv_kern.c — blas.conv2d's implicit-GEMM tile (library_conv.c's igemm) with
 * the tile's row count and the call's epilogue in the kernel: a partial tile of output
 * channels costs its own rows, and the last reduction block writes act(acc + y + bias +
 * residual) straight from the registers.
 *
 *   rx_rt_conv_tile(kc, a, b, y, ldy, mr, nr, acc, epi)
 *     y[i][j] = sum over p < kc of a[p * RX_GEMM_MR + i] * b[p * RX_GEMM_NR + j]
 *               (+ y[i][j] when acc), then with epi: + bias[i], + res[i * ldy + j], then
 *     relu / clamp, for i < mr <= RX_GEMM_MR, j < nr <= RX_GEMM_NR.
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
 * Without AVX2 + FMA (the CPU, or $RX_GEMM_KERNEL=portable, library_gemm.c) or a
 * GCC/Clang x86-64 build, rx_rt_conv_tile_ok() is false and library_conv.c keeps its
 * kernel-then-epilogue way.
 */
#include "rt_int.h"

#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CK_X86 1
#include <immintrin.h>
#else
#define CK_X86 0
#endif

bool rx_rt_conv_tile_ok(void)
{
#if CK_X86
    return strcmp(rx_rt_gemm_kernel(), "avx2+fma 6x16") == 0;
#else
    return false;
#endif
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
    if (act) { /* max(v, lo8): v > lo8 ? v : lo8, epi_copy's test (relu: lo8 = 0) */
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
    __m256 lo8 = _mm256_set1_ps(e && e->act == 2 ? e->lo : 0.0f);
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
    __m128 lo4 = _mm_set1_ps(act == 2 ? e->lo : 0.0f), hi4 = _mm_set1_ps(act == 2 ? e->hi : 0.0f);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) { /* ck_vec's steps on 4 columns */
        __m128 v = acc ? _mm_add_ps(c[r], _mm_loadu_ps(y + r * ldy)) : c[r];
        if (e && e->bias) v = _mm_add_ps(v, _mm_set1_ps(e->bias[r]));
        if (e && e->res) v = _mm_add_ps(v, _mm_loadu_ps(e->res + r * ldy));
        v = act ? _mm_max_ps(v, lo4) : v;
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

void rx_rt_conv_tile(int64_t kc, const float *a, const float *b, float *y, int64_t ldy, int mr,
                     int nr, bool acc, const rx_rt_conv_epi *epi)
{
#if CK_X86
    if (mr < 1 || mr > RX_GEMM_MR || nr < 1 || nr > RX_GEMM_NR) return;
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
