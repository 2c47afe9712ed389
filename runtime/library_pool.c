/*
 * library_pool.c — rt.pool2d, the pooling of library lowering (compiler/pass/
 * library_lower.c's pool rule), on library_conv.c's window rows.
 *
 *   rt.pool2d (x, params, y): max / avg pooling, f32 NCHW, params i64 (13,) = pool
 *     size (h, w), strides, padding (top, left, bottom, right), dilation, ceil_mode, max
 *     (1) or avg (0), count_include_pad; y's extents must be op_nn.c's window
 *     arithmetic of x's; pool size and strides all 0 (with avg, no padding, dilation 1,
 *     ceil_mode 0, y (N, C, 1, 1)): the global average of x's planes, whatever their
 *     extents (library lowering's adaptive_avg_pool2d to 1 x 1 on symbolic H, W). Max starts from -FLT_MAX (padding never wins); avg divides by
 *     legalize_nn.c's tap count. Planes split across threads; each output row reduces
 *     the window's input rows column by column, then the columns (pool_row: KH + KW
 *     contiguous or strided passes instead of KH * KW; rx_rt_window_row if the row buffer
 *     cannot be had). With AVX-512F (the conv tile's choice, rx_rt_conv_tile_kind,
 *     so $RX_CONV_KERNEL=avx2 / portable force the C rows, but for avx2's fused max rows,
 *     below) pool_cols512 and
 *     pool_out512: the column
 *     reductions go into a buffer with the padding as fill values, and 16 outputs are
 *     reduced at a time (stride 2: 32 columns loaded, the evens kept by one permute);
 *     the baseline build's C rows are SSE and scalar for the strided column pass.
 *     ResNet's 3x3/2 max pool on 64x112x112 (one thread, min of 8, load 12): 0.234 ->
 *     0.130 ms; bit-identical results. A global average (one unpadded window over the
 *     plane: library lowering's adaptive_avg_pool2d to 1 x 1) sums each plane in one
 *     pass of 16 interleaved partial sums (plane_mean), on every path.
 *     Zen 5 session (the AVX-512 rows were 2x ONNX Runtime's MaxPool on SqueezeNet's
 *     64x111x111 and DenseNet's 64x112x112): each 16 columns are reduced over the
 *     window's rows in registers and stored once (unmasked: the lanes past W load the
 *     fill), where the column buffer took a masked store and a reload a row; the
 *     column pass of row oh + 1 runs before row oh's outputs read their own (two
 *     buffers): the output loads span two of the column stores, which the CPU does not
 *     forward, and right after them they waited for the stores to reach L1 (IPC ~1);
 *     the next output row's new input rows are prefetched; avg's divisors are one
 *     vector division a 16 outputs from a row of counts rebuilt only when the window's
 *     row count changes (the scalar count and division per output were half of a 2x2
 *     avg pool's time). Windows of more than RX_POOL_ROWS rows take the C rows. Same
 *     operations in the same order: bit-identical. rx_rt_pool2d alone, min of 300,
 *     same run, this way / the previous (load 2): 3x3/2 max 64x112x112 0.76 (1 thread)
 *     0.65 (2 threads), ceil_mode 64x111x111 0.77 / 0.67, 2x2/2 avg 128x56x56 0.53 /
 *     0.46, 3x3/1 avg 64x35x35 0.45 / 0.49; at 2 threads the first is 55 us, ONNX
 *     Runtime's MaxPool in SqueezeNet 43 us (its profile, node median).
 *     Prefetch distance: the rows prefetched are those of the output row starting
 *     RX_POOL_AHEAD (4 KiB) of x ahead, past the plane's end into the next plane (the
 *     next output row only, as before, left a large cold input waiting on memory at every
 *     row: its rows are short and the hardware prefetcher starts over at each plane).
 *     CPU time a call at one thread (task-clock, same run, load 16-18): Xception's 3x3/2
 *     max pool on 2x128x109x109 1.47-1.54 -> 0.59-0.61 ms (0.40x; 2, 8 and 16 KiB: 0.68,
 *     0.59-0.61, 0.63-0.67 ms), ResNet's, SqueezeNet's, UNet's 2x2 on 32x256x264, the 2x2
 *     avg and the 3x3/1 avg unchanged within the noise (+-8%); in Xception (perf samples
 *     of 40 calls) the poolings 0.51x, the whole model 0.90x with library_dwconv.c's
 *     next-plane prefetch.
 *     A global average on AVX-512 CPUs takes 4 planes a step (plane_mean4_512: each
 *     plane's 16 lanes are plane_mean's partial sums, bit-identical; one plane's adds are
 *     one dependent chain, 3 cycles a vector, so 4 planes run 4 chains): EfficientNet's
 *     squeeze poolings 0.77x their perf samples at one thread (300 calls, load 17).
 *     Max pools of stride 1 or 2 and dilation 1 (ResNet's and DenseNet's 3x3/2 pad 1,
 *     SqueezeNet's 3x3/2 ceil_mode, 2x2/2, YOLO SPPF's 5x5/1 pad 2) take fused rows
 *     (max_row512: windows of at most 16 columns; max_row256 on AVX2: at most 8; each
 *     plane by max_plane512 / max_plane256): no column buffer; per 16 (8) outputs the
 *     window rows' maxima of the 32 (stride 1) or 48 (stride 2) input columns they
 *     reach are 2 or 3 vectors in registers (plain loads inside the row, masked ones at
 *     its edges only: masked loads everywhere took 13-17% more on 3x3/2), the last of
 *     them the next outputs' first, and each tap a permute of those (stride 2: the even
 *     and odd columns, then lanes m.. of them); the common windows (3x3/2, 2x2/2, 5x5/1,
 *     3x3/1)
 *     with their constants inlined (the generic loops' control was most of a row's
 *     time: perf), and on AVX-512 two output rows at a time where both windows are whole
 *     (max_pair512: the rows they share loaded once, half the control; 3x3/2 alone in
 *     its own code was ~10% faster still, left for one function of the four windows).
 *     Rows ascending, then kw ascending from -FLT_MAX, as before: bit-identical
 *     (test_pool: every path against the window's definition). rx_rt_pool2d alone,
 *     same run, fused / main's rows (min of 200, median of 3, load 7-9, 1 and 2
 *     threads): 3x3/2 ceil on 64x111x111 0.54 / 0.51 (57 / 30 us), on 128x55x55 0.47,
 *     3x3/2 pad 1 on 64x112x112 0.54 / 0.59, 2x2/2 on 128x56x56 0.46, 5x5/1 pad 2 on
 *     256x20x20 0.52 / 0.52; on AVX2 ($RX_CONV_KERNEL=avx2, which had the C rows; no
 *     pairs) 0.32-0.48. Avg pools and other windows keep the rows above.
 *     Cost O(N C OH OW KH KW).
 * Codes (library_conv.c's): 2 arguments, 3 dtype, 4 shape, 5 params.
 */
#include "rt_int.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

enum { CV_OK = 0, CV_ARGS = 2, CV_DTYPE = 3, CV_SHAPE = 4, CV_PARAMS = 5, PL_NPARAMS = 13 };
#define RX_POOL_ROWS 16 /* pool_cols512's most window rows (taller: pool_row) */
#define RX_POOL_AHEAD 4096 /* pool_cols512's prefetch distance in bytes of x (the essay) */

static bool f32(const DLTensor *t)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}
static void *at(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

typedef struct pool {
    const float *x;
    float *y;
    int64_t NC, H, W, OH, OW, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
    bool ceil_mode, is_max, cip;
} pool;

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The taps of a window along one dim at output o that avg counts (legalize_nn.c's
 * tap_count): inside [0, H - 1], or [-pb, H - 1 + pa] with count_include_pad. */
static int64_t taps(const pool *p, int64_t o, int64_t K, int64_t st, int64_t dl, int64_t pb,
                    int64_t pa, int64_t H)
{
    if (!p->ceil_mode && (p->cip || (pb == 0 && pa == 0))) return K;
    int64_t s = o * st - pb, lo = p->cip ? -pb : 0, hi = p->cip ? H - 1 + pa : H - 1;
    int64_t a = floordiv(lo - s + dl - 1, dl), b = floordiv(hi - s, dl);
    int64_t kmin = a > 0 ? a : 0, kmax = b < K - 1 ? b : K - 1;
    return kmax - kmin + 1 > 0 ? kmax - kmin + 1 : 0;
}

/* Output row oh of a pooling by columns first: col[w] = the max / sum of the window's
 * input rows at column w (whole rows, contiguous: vectorized), then yr[ow] = the max /
 * sum of col over the window's columns, each tap clipped once (window_row's clipping);
 * KH + KW passes instead of KH * KW. */
static void pool_row(const rx_rt_win *g, const float *xp, bool is_max, int64_t oh, float *col, float *yr)
{
    int64_t rows = 0;
    for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = is_max ? -FLT_MAX : 0.0f;
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        const float *r = xp + ih * g->W;
        if (!rows++) memcpy(col, r, sizeof(float) * (size_t)g->W);
        else if (is_max)
            for (int64_t w = 0; w < g->W; w++) col[w] = r[w] > col[w] ? r[w] : col[w];
        else
            for (int64_t w = 0; w < g->W; w++) col[w] += r[w];
    }
    if (!rows) return;
    for (int64_t kw = 0; kw < g->KW; kw++) {
        int64_t off = kw * g->dw - g->pl, lo, hi, s = g->sw;
        rx_rt_valid_range(g->OW, g->W, s, off, &lo, &hi);
        if (is_max)
            for (int64_t ow = lo; ow < hi; ow++) {
                float v = col[ow * s + off];
                yr[ow] = v > yr[ow] ? v : yr[ow];
            }
        else
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += col[ow * s + off];
    }
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define PZ_FN __attribute__((target("avx512f")))

/* pool_row in AVX-512 registers (the CPU has it and rx_rt_conv_tile_kind() is AVX512),
 * in two halves: pool_cols512 reduces output row oh's window rows into colp (returns
 * how many rows are inside x), pool_out512 reduces colp's columns into the row of
 * outputs (then divides by div's counts when div). colp holds the column reductions at
 * colp[pl + w], and pl columns of fill (-FLT_MAX for max, 0 for avg) before them and
 * enough after them (pool_job fills colp once; the unmasked stores keep the fill), so
 * every tap of the column pass is in colp and no range is clipped. 16 outputs at a
 * time; stride 1 loads 16 columns, stride 2 loads 32 and keeps the evens (a 2-source
 * permute), other strides gather. Same operations in the same order as pool_row (max:
 * v > acc ? v : acc, kw ascending from the fill; avg: + each tap from 0, where a fill tap
 * adds +0 and changes nothing): bit-identical results. */
PZ_FN static int64_t pool_cols512(const rx_rt_win *g, const float *xp, bool is_max, int64_t oh,
                                  float *colp)
{
    float *col = colp + g->pl;
    __m512 fill = _mm512_set1_ps(is_max ? -FLT_MAX : 0.0f);
    const float *r[RX_POOL_ROWS];
    int64_t rows = 0, W = g->W;
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih >= 0 && ih < g->H) r[rows++] = xp + ih * W;
    }
    /* the new input rows (at most 2) of the output row whose rows start whole rows past
     * RX_POOL_AHEAD bytes on: past the plane's end the next plane's, which this thread
     * takes next (a prefetch past x's end does not fault; integer addresses: no pointer
     * leaves x) */
    int64_t ahead = g->sh < 2 ? g->sh : 2;
    uintptr_t far = (uintptr_t)(RX_POOL_AHEAD / (W * (int64_t)sizeof(float)) + 1) * (uintptr_t)W *
                    sizeof(float);
    /* each 16 columns reduced over the rows in registers and stored once, unmasked: the
     * lanes past W load the fill and store it back, so col keeps its fill there */
    for (int64_t w = 0; rows && w < W; w += 16) {
        __mmask16 m = W - w >= 16 ? 0xFFFF : (__mmask16)((1u << (W - w)) - 1);
        for (int64_t j = 1; j <= ahead; j++)
            _mm_prefetch((const char *)((uintptr_t)(r[rows - 1] + w) + far +
                                        (uintptr_t)(j * W) * sizeof(float)),
                         _MM_HINT_T0);
        __m512 c = _mm512_mask_loadu_ps(fill, m, r[0] + w);
        for (int64_t k = 1; k < rows; k++) {
            __m512 v = _mm512_mask_loadu_ps(fill, m, r[k] + w);
            c = is_max ? _mm512_max_ps(v, c) : _mm512_add_ps(c, v);
        }
        _mm512_storeu_ps(col + w, c);
    }
    return rows;
}

PZ_FN static void pool_out512(const rx_rt_win *g, bool is_max, int64_t rows, const float *colp,
                              const float *div, float *yr)
{
    __m512 fill = _mm512_set1_ps(is_max ? -FLT_MAX : 0.0f), one = _mm512_set1_ps(1.0f);
    int64_t s = g->sw;
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i step = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                                                             4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)s));
    for (int64_t ow = 0; ow < g->OW; ow += 16) {
        __mmask16 m = g->OW - ow >= 16 ? 0xFFFF : (__mmask16)((1u << (g->OW - ow)) - 1);
        __m512 acc = fill;
        for (int64_t kw = 0; rows && kw < g->KW; kw++) {
            const float *c = colp + ow * s + kw * g->dw;
            __m512 v;
            if (s == 1) v = _mm512_loadu_ps(c);
            else if (s == 2) v = _mm512_permutex2var_ps(_mm512_loadu_ps(c), evens, _mm512_loadu_ps(c + 16));
            else v = _mm512_i32gather_ps(step, c, 4);
            acc = is_max ? _mm512_max_ps(v, acc) : _mm512_add_ps(acc, v);
        }
        if (div) acc = _mm512_div_ps(acc, _mm512_mask_loadu_ps(one, m, div + ow));
        _mm512_mask_storeu_ps(yr + ow, m, acc);
    }
}

/* The lanes of columns [c, c + 16) inside [0, W). */
static inline __mmask16 cols16(int64_t c, int64_t W)
{
    int64_t lo = c < 0 ? -c : 0, hi = W - c < 16 ? W - c : 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* The max over the rows r[0, rows) of columns [c, c + 16), -FLT_MAX outside [0, W):
 * pool_cols512's column reduction in a register (same order: rows ascending). The
 * masked loads read no lane outside the row; integer addresses (c may be negative). */
#define PZ_INLINE static inline __attribute__((always_inline, target("avx512f")))
#define PZ2_FN __attribute__((target("avx2")))
#define PZ2_INLINE static inline __attribute__((always_inline, target("avx2")))
PZ_INLINE __m512 vmax16(const float *const *r, int64_t rows, int64_t c, int64_t W)
{
    __m512 fill = _mm512_set1_ps(-FLT_MAX);
    uintptr_t off = (uintptr_t)c * sizeof(float);
    if (c >= 0 && c + 16 <= W) { /* plain loads inside the row (masked ones cost more) */
        __m512 v = _mm512_loadu_ps((const float *)((uintptr_t)r[0] + off));
        for (int64_t k = 1; k < rows; k++)
            v = _mm512_max_ps(_mm512_loadu_ps((const float *)((uintptr_t)r[k] + off)), v);
        return v;
    }
    __mmask16 m = cols16(c, W);
    if (!m) return fill;
    __m512 v = _mm512_mask_loadu_ps(fill, m, (const float *)((uintptr_t)r[0] + off));
    for (int64_t k = 1; k < rows; k++)
        v = _mm512_max_ps(_mm512_mask_loadu_ps(fill, m, (const float *)((uintptr_t)r[k] + off)), v);
    return v;
}

/* One output row of a max pool of stride 1 or 2, dilation 1, at most 16 columns a
 * window, without the column buffer: 16 outputs at a time, the window rows' column
 * maxima of the 32 (stride 1) or 48 (stride 2) input columns they reach are vmax16
 * vectors V0, V1 (, V2), the next 16 outputs' V0 the last of them; the taps are
 * permutes of those registers (stride 2: the even and odd columns of V0 V1 and of V2,
 * then tap 2m + e is lanes m.. of those). pool_cols512 + pool_out512's max in the same
 * order (rows ascending, then kw ascending from the fill): bit-identical; no store and
 * reload of the column buffer, no pass over the row's columns the taps never read. */
/* max_row512's taps of 16 outputs from the column maxima V0, V1 (, V2: stride 2). */
PZ_INLINE __m512 taps512(__m512 V0, __m512 V1, __m512 V2, int64_t s, int64_t KW)
{
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i evens = _mm512_add_epi32(lane, lane), odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
    __m512 acc = _mm512_set1_ps(-FLT_MAX);
    if (s == 1) {
        acc = _mm512_max_ps(V0, acc);
        for (int64_t kw = 1; kw < KW; kw++)
            acc = _mm512_max_ps(
                _mm512_permutex2var_ps(V0, _mm512_add_epi32(lane, _mm512_set1_epi32((int)kw)), V1), acc);
        return acc;
    }
    /* E: columns c0 + 0, 2, .., 30 then (lanes 16..23 of the pair) 32, .., 46 */
    __m512 E0 = _mm512_permutex2var_ps(V0, evens, V1), O0 = _mm512_permutex2var_ps(V0, odds, V1);
    __m512 E1 = _mm512_permutex2var_ps(V2, evens, V2), O1 = _mm512_permutex2var_ps(V2, odds, V2);
    for (int64_t kw = 0; kw < KW; kw++) {
        __m512i ix = _mm512_add_epi32(lane, _mm512_set1_epi32((int)(kw >> 1)));
        __m512 t = kw < 2 ? (kw ? O0 : E0) /* no identity permute (unused O1, E1 dropped) */
                   : kw & 1 ? _mm512_permutex2var_ps(O0, ix, O1) : _mm512_permutex2var_ps(E0, ix, E1);
        acc = _mm512_max_ps(t, acc);
    }
    return acc;
}

PZ_INLINE void max_row512(const rx_rt_win *g, const float *const *r, int64_t rows, float *yr,
                          int64_t s, int64_t KW)
{
    const __m512 fill = _mm512_set1_ps(-FLT_MAX);
    int64_t W = g->W, c0 = -g->pl;
    __m512 V0 = rows ? vmax16(r, rows, c0, W) : fill;
    for (int64_t ow = 0; ow < g->OW; ow += 16, c0 += 16 * s) {
        __mmask16 m = g->OW - ow >= 16 ? 0xFFFF : (__mmask16)((1u << (g->OW - ow)) - 1);
        __m512 acc = fill;
        if (rows) {
            __m512 V1 = vmax16(r, rows, c0 + 16, W), V2 = s == 1 ? V1 : vmax16(r, rows, c0 + 32, W);
            acc = taps512(V0, V1, V2, s, KW);
            V0 = V2;
        }
        _mm512_mask_storeu_ps(yr + ow, m, acc);
    }
}

/* Two output rows whose windows are whole (kh rows from r[0] and from r[sh]): max_row512
 * twice, but each input row's column vector loaded once, so the rows the two windows
 * share are read once (a 3x3/2 window 5 loads where 6, a 5x5/1 6 where 10), and half
 * the rows' control; max_row512's order kept (each window's rows ascending). */
PZ_INLINE void vmax16x2(const float *const *r, int64_t kh, int64_t sh, int64_t c, int64_t W,
                        __m512 *a, __m512 *b)
{
    __m512 fill = _mm512_set1_ps(-FLT_MAX), va = fill, vb = fill;
    uintptr_t off = (uintptr_t)c * sizeof(float);
    if (c >= 0 && c + 16 <= W) {
        for (int64_t k = 0; k < kh + sh; k++) {
            __m512 v = _mm512_loadu_ps((const float *)((uintptr_t)r[k] + off));
            if (k < kh) va = k ? _mm512_max_ps(v, va) : v;
            if (k >= sh) vb = k > sh ? _mm512_max_ps(v, vb) : v;
        }
    } else {
        __mmask16 m = cols16(c, W);
        for (int64_t k = 0; m && k < kh + sh; k++) {
            __m512 v = _mm512_mask_loadu_ps(fill, m, (const float *)((uintptr_t)r[k] + off));
            if (k < kh) va = k ? _mm512_max_ps(v, va) : v;
            if (k >= sh) vb = k > sh ? _mm512_max_ps(v, vb) : v;
        }
    }
    *a = va, *b = vb;
}

PZ_INLINE void max_pair512(const rx_rt_win *g, const float *const *r, float *y0, float *y1,
                           int64_t kh, int64_t sh, int64_t s, int64_t KW)
{
    int64_t W = g->W, c0 = -g->pl;
    __m512 A0, B0, A1, B1, A2, B2;
    vmax16x2(r, kh, sh, c0, W, &A0, &B0);
    for (int64_t ow = 0; ow < g->OW; ow += 16, c0 += 16 * s) {
        __mmask16 m = g->OW - ow >= 16 ? 0xFFFF : (__mmask16)((1u << (g->OW - ow)) - 1);
        vmax16x2(r, kh, sh, c0 + 16, W, &A1, &B1);
        if (s == 1) A2 = A1, B2 = B1;
        else vmax16x2(r, kh, sh, c0 + 32, W, &A2, &B2);
        _mm512_mask_storeu_ps(y0 + ow, m, taps512(A0, A1, A2, s, KW));
        _mm512_mask_storeu_ps(y1 + ow, m, taps512(B0, B1, B2, s, KW));
        A0 = A2, B0 = B2;
    }
}

/* The pairs of PZ_MAX_PLANE: the common windows (3x3/2, 2x2/2, 5x5/1, 3x3/1) with
 * their constants; false where the window is another (max_row512 then). */
PZ_FN static bool max_pair512_any(const rx_rt_win *g, const float *const *r, float *y0, float *y1)
{
    int64_t kh = g->KH, sh = g->sh, s = g->sw, KW = g->KW;
    if (kh == 3 && sh == 2 && s == 2 && KW == 3) max_pair512(g, r, y0, y1, 3, 2, 2, 3);
    else if (kh == 2 && sh == 2 && s == 2 && KW == 2) max_pair512(g, r, y0, y1, 2, 2, 2, 2);
    else if (kh == 5 && sh == 1 && s == 1 && KW == 5) max_pair512(g, r, y0, y1, 5, 1, 1, 5);
    else if (kh == 3 && sh == 1 && s == 1 && KW == 3) max_pair512(g, r, y0, y1, 3, 1, 1, 3);
    else return false;
    return true;
}

/* The lanes of columns [c, c + 8) inside [0, W), as AVX2's masks (all bits of a lane). */
PZ2_INLINE __m256i cols8(int64_t c, int64_t W)
{
    __m256i l = _mm256_add_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32((int)(c < -64 ? -64 : c > W ? W : c)));
    return _mm256_and_si256(_mm256_cmpgt_epi32(l, _mm256_set1_epi32(-1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), l));
}

/* vmax16 on 8 columns (AVX2: maskload gives 0 in the masked lanes, the blend the fill). */
PZ2_INLINE __m256 vmax8(const float *const *r, int64_t rows, int64_t c, int64_t W)
{
    __m256 fill = _mm256_set1_ps(-FLT_MAX);
    uintptr_t off = (uintptr_t)c * sizeof(float);
    if (c >= 0 && c + 8 <= W) {
        __m256 v = _mm256_loadu_ps((const float *)((uintptr_t)r[0] + off));
        for (int64_t k = 1; k < rows; k++)
            v = _mm256_max_ps(_mm256_loadu_ps((const float *)((uintptr_t)r[k] + off)), v);
        return v;
    }
    __m256i m = cols8(c, W);
    if (_mm256_testz_si256(m, m)) return fill;
    __m256 mf = _mm256_castsi256_ps(m);
    __m256 v = _mm256_blendv_ps(fill, _mm256_maskload_ps((const float *)((uintptr_t)r[0] + off), m), mf);
    for (int64_t k = 1; k < rows; k++)
        v = _mm256_max_ps(
            _mm256_blendv_ps(fill, _mm256_maskload_ps((const float *)((uintptr_t)r[k] + off), m), mf), v);
    return v;
}

/* Lanes m.. of the pair (a, b): lane l is a[l + m] below 8, b[l + m - 8] from there. */
PZ2_INLINE __m256 shift8(__m256 a, __m256 b, int64_t m)
{
    if (!m) return a;
    __m256i l = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), mv = _mm256_set1_epi32((int)m);
    __m256i ix = _mm256_and_si256(_mm256_add_epi32(l, mv), _mm256_set1_epi32(7));
    __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_add_epi32(l, mv), _mm256_set1_epi32(7)));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(a, ix), _mm256_permutevar8x32_ps(b, ix), hi);
}

/* max_row512 on AVX2: 8 outputs at a time from vmax8 vectors V0, V1 (, V2) of 8 columns,
 * windows of at most 8 columns; stride 2's even / odd columns by one in-lane shuffle and
 * one cross-lane permute; the taps shift8 of those. Same order: bit-identical. */
PZ2_INLINE void max_row256(const rx_rt_win *g, const float *const *r, int64_t rows, float *yr,
                           int64_t s, int64_t KW)
{
    const __m256 fill = _mm256_set1_ps(-FLT_MAX);
    int64_t W = g->W, c0 = -g->pl;
    __m256 V0 = rows ? vmax8(r, rows, c0, W) : fill;
    for (int64_t ow = 0; ow < g->OW; ow += 8, c0 += 8 * s) {
        __m256 acc = fill;
        if (rows && s == 1) {
            __m256 V1 = vmax8(r, rows, c0 + 8, W);
            for (int64_t kw = 0; kw < KW; kw++) acc = _mm256_max_ps(shift8(V0, V1, kw), acc);
            V0 = V1;
        } else if (rows) {
            __m256 V1 = vmax8(r, rows, c0 + 8, W), V2 = vmax8(r, rows, c0 + 16, W);
            __m256 E0 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(V0, V1, 0x88)), 0xD8));
            __m256 O0 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(V0, V1, 0xDD)), 0xD8));
            __m256 E1 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(V2, V2, 0x88)), 0xD8));
            __m256 O1 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(V2, V2, 0xDD)), 0xD8));
            for (int64_t kw = 0; kw < KW; kw++)
                acc = _mm256_max_ps(kw & 1 ? shift8(O0, O1, kw >> 1) : shift8(E0, E1, kw >> 1), acc);
            V0 = V2;
        }
        if (g->OW - ow >= 8) _mm256_storeu_ps(yr + ow, acc);
        else {
            float t[8];
            _mm256_storeu_ps(t, acc);
            memcpy(yr + ow, t, sizeof(float) * (size_t)(g->OW - ow));
        }
    }
}

/* A plane of ROW's output rows (max_row512 or max_row256): each output row's window rows
 * inside x, and the rows of the output row RX_POOL_AHEAD bytes of x on prefetched
 * (pool_cols512's distance; past the plane's end the next plane's); the common windows
 * with their stride, width and (full) row count constant: unrolled. */
#define PZ_MAX_PLANE(NAME, FN, ROW, PAIR, PAIR_FN)                                                            \
    FN static void NAME(const rx_rt_win *g, const float *xp, float *y, int64_t OH)               \
    {                                                                                            \
        const float *r[RX_POOL_ROWS + 2];                                                        \
        int64_t W = g->W, ahead = g->sh < 2 ? g->sh : 2;                                         \
        uintptr_t far = (uintptr_t)(RX_POOL_AHEAD / (W * (int64_t)sizeof(float)) + 1) *          \
                        (uintptr_t)W * sizeof(float);                                            \
        for (int64_t oh = 0; oh < OH; oh++) {                                                    \
            int64_t rows = 0;                                                                    \
            for (int64_t kh = 0; kh < g->KH; kh++) {                                             \
                int64_t ih = oh * g->sh - g->pt + kh;                                            \
                if (ih >= 0 && ih < g->H) r[rows++] = xp + ih * W;                               \
            }                                                                                    \
            for (int64_t j = 1; rows && j <= ahead; j++)                                         \
                for (int64_t w = 0; w < W; w += 16)                                              \
                    _mm_prefetch((const char *)((uintptr_t)(r[rows - 1] + w) + far +             \
                                                (uintptr_t)(j * W) * sizeof(float)),             \
                                 _MM_HINT_T0);                                                   \
            float *yr = y + oh * g->OW;                                                          \
            int64_t s = g->sw, KW = g->KW;                                                       \
            /* this window and the next whole: the pair (its rows from r[0], sh + kh) */         \
            bool pair = PAIR && rows == g->KH && g->KH <= 5 && oh + 1 < OH &&                    \
                        (r[0] - xp) + (g->sh + g->KH - 1) * W < g->H * W;                        \
            for (int64_t j = 0; pair && j < g->sh; j++) r[rows + j] = r[rows - 1] + (j + 1) * W; \
            if (pair && PAIR_FN(g, r, yr, yr + g->OW)) {                                         \
                oh++;                                                                            \
                continue;                                                                        \
            }                                                                                    \
            if (rows == 3 && s == 2 && KW == 3) ROW(g, r, 3, yr, 2, 3);                          \
            else if (rows == 2 && s == 2 && KW == 2) ROW(g, r, 2, yr, 2, 2);                     \
            else if (rows == 5 && s == 1 && KW == 5) ROW(g, r, 5, yr, 1, 5);                     \
            else if (rows == 3 && s == 1 && KW == 3) ROW(g, r, 3, yr, 1, 3);                     \
            else if (s == 1) ROW(g, r, rows, yr, 1, KW);                                         \
            else ROW(g, r, rows, yr, 2, KW);                                                     \
        }                                                                                        \
    }
PZ_MAX_PLANE(max_plane512, PZ_FN, max_row512, 1, max_pair512_any)
PZ_MAX_PLANE(max_plane256, PZ2_FN, max_row256, 0, max_pair512_any)

/* plane_mean of the 4 planes at x, n floats apart, into m[0..3]: lane j of plane k's
 * vector is plane_mean's s[j] (the same additions in the same order), and the 4 planes'
 * chains are independent: one plane's 16 lanes are one chain of dependent adds (3
 * cycles each), the same rate as plane_mean's SSE code, where 4 planes a step make 4. */
PZ_FN static void plane_mean4_512(const float *x, int64_t n, float *m)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + n + i));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + 2 * n + i));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + 3 * n + i));
    }
    float s[4][16];
    _mm512_storeu_ps(s[0], a0), _mm512_storeu_ps(s[1], a1);
    _mm512_storeu_ps(s[2], a2), _mm512_storeu_ps(s[3], a3);
    for (int k = 0; k < 4; k++) {
        float t = 0.0f;
        for (int64_t j = i; j < n; j++) t += x[k * n + j];
        for (int j = 0; j < 16; j++) t += s[k][j];
        m[k] = t / (float)n;
    }
}
#define PZ_HAVE 1
#else
#define PZ_HAVE 0
#endif

/* colp's floats for pool_cols512 / pool_out512: pl fill, W columns, then what the last 16
 * outputs' taps and their vector loads reach past them (stride 2 reads 32 floats). */
static int64_t colp_floats(const pool *p)
{
    return p->pl + p->W + (p->OW + 16) * p->sw + p->kw * p->dw + 32;
}

/* Whether p is a global average: one unpadded window over the whole plane (an SE
 * block's squeeze, a classifier head's pooling). */
static bool global_avg(const pool *p)
{
    return !p->is_max && p->kh == p->H && p->kw == p->W && p->OH == 1 && p->OW == 1 &&
           p->pt == 0 && p->pl == 0 && p->pb == 0 && p->pr == 0 && p->dh == 1 && p->dw == 1;
}

/* The mean of x[0, n): 16 interleaved partial sums (one vector's lanes: the compiler
 * vectorizes the inner loop without reassociating), then the tail and the partial sums
 * in order. One pass at the plane's read bandwidth, where the window rows add each input
 * row into a column buffer (a load, an add and a store per 16 values). */
static float plane_mean(const float *x, int64_t n)
{
    float s[16] = {0}, t = 0.0f;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) s[j] += x[i + j];
    for (; i < n; i++) t += x[i];
    for (int j = 0; j < 16; j++) t += s[j];
    return t / (float)n;
}

/* avg's divisor at a window of ch rows by cw columns (at least 1 where a ceil_mode or
 * uncounted-padding window holds no tap) */
static float avg_count(const pool *p, int64_t ch, int64_t cw)
{
    int64_t cnt = ch * cw;
    if ((p->ceil_mode || !p->cip) && cnt < 1) cnt = 1;
    return (float)cnt;
}

static void pool_job(void *ud, int t, int n)
{
    const pool *p = ud;
    int64_t p0, p1;
    rx_rt_win g = {p->H, p->W, p->OW, p->kh, p->kw, p->sh, p->sw, p->pt, p->pl, p->dh, p->dw};
    rx_rt_share(p->NC, t, n, &p0, &p1);
    if (p0 == p1) return;
    if (global_avg(p)) {
        int64_t pl = p0, hw = p->H * p->W;
#if PZ_HAVE
        for (; rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512 && pl + 4 <= p1; pl += 4)
            plane_mean4_512(p->x + pl * hw, hw, p->y + pl);
#endif
        for (; pl < p1; pl++) p->y[pl] = plane_mean(p->x + pl * hw, hw);
        return;
    }
    /* fused: max_plane512 (wide) or max_plane256 (AVX2, windows of at most 8 columns) */
    int kind = rx_rt_conv_tile_kind();
    bool fused = PZ_HAVE && p->is_max && p->dh == 1 && p->dw == 1 && (p->sw == 1 || p->sw == 2) &&
                 p->kh <= RX_POOL_ROWS && p->W < ((int64_t)1 << 30) && /* cols8's int lanes */
                 (kind == RX_CONV_TILE_AVX512 ? p->kw <= 16 : kind == RX_CONV_TILE_AVX2 && p->kw <= 8);
#if PZ_HAVE
    for (int64_t pl = p0; fused && pl < p1; pl++) {
        const float *xp = p->x + pl * p->H * p->W;
        if (kind == RX_CONV_TILE_AVX512) max_plane512(&g, xp, p->y + pl * p->OH * p->OW, p->OH);
        else max_plane256(&g, xp, p->y + pl * p->OH * p->OW, p->OH);
    }
    if (fused) return;
#else
    (void)fused, (void)kind;
#endif
    /* col: one input row's column reductions (wide: padded, two of them, pool_cols512) */
    bool wide =
        PZ_HAVE && p->kh <= RX_POOL_ROWS && rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512;
    int64_t ncol = wide ? colp_floats(p) : p->W, nbuf = wide ? 2 : 1;
    /* cw: avg's tap counts along W per column; dv (wide): a row's divisors */
    float *col = malloc(sizeof(float) * (size_t)(nbuf * ncol + 2 * p->OW));
    float *cw = col ? col + nbuf * ncol : NULL, *dv = cw ? cw + p->OW : NULL;
    int64_t dvh = -1; /* the row tap count dv holds */
    for (int64_t i = 0; wide && col && i < nbuf * ncol; i++)
        col[i] = p->is_max ? -FLT_MAX : 0.0f;
    for (int64_t ow = 0; cw && !p->is_max && ow < p->OW; ow++)
        cw[ow] = (float)taps(p, ow, p->kw, p->sw, p->dw, p->pl, p->pr, p->W);
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *xp = p->x + pl * p->H * p->W;
#if PZ_HAVE
        /* two column buffers: row oh + 1's columns are reduced before row oh's outputs
         * read its own, so those loads find the stores done (see the essay) */
        int64_t rows = col && wide ? pool_cols512(&g, xp, p->is_max, 0, col) : 0;
#endif
        for (int64_t oh = 0; oh < p->OH; oh++) {
            float *yr = p->y + (pl * p->OH + oh) * p->OW;
            int64_t ch = p->is_max ? 0 : taps(p, oh, p->kh, p->sh, p->dh, p->pt, p->pb, p->H);
#if PZ_HAVE
            if (col && wide) {
                float *cur = col + (oh & 1) * ncol, *nxt = col + ((oh + 1) & 1) * ncol;
                int64_t nrows =
                    oh + 1 < p->OH ? pool_cols512(&g, xp, p->is_max, oh + 1, nxt) : 0;
                for (int64_t ow = 0; !p->is_max && ch != dvh && ow < p->OW; ow++)
                    dv[ow] = avg_count(p, ch, (int64_t)cw[ow]);
                dvh = ch; /* the rows of a plane's interior share one */
                pool_out512(&g, p->is_max, rows, cur, p->is_max ? NULL : dv, yr);
                rows = nrows;
                continue;
            }
#endif
            if (col) pool_row(&g, xp, p->is_max, oh, col, yr);
            else rx_rt_window_row(&g, xp, NULL, p->is_max ? RX_RT_ROW_MAX : RX_RT_ROW_SUM, oh, yr);
            for (int64_t ow = 0; !p->is_max && ow < p->OW; ow++)
                yr[ow] /= avg_count(p, ch, cw ? (int64_t)cw[ow] : taps(p, ow, p->kw, p->sw,
                                                                             p->dw, p->pl, p->pr,
                                                                             p->W));
        }
    }
    free(col);
}

const char *rx_rt_pool2d_strerr(int32_t code)
{
    switch (code) {
    case CV_ARGS: return "expects 3 tensors (x, params, y)";
    case CV_DTYPE: return "expects float32 x and y, int64 params";
    case CV_SHAPE: return "shape mismatch (x (N, C, H, W), y (N, C, OH, OW))";
    case CV_PARAMS:
        return "bad params (13 int64: pool size, strides, padding, dilation >= 1, ceil_mode, "
               "max, count_include_pad; pool size and strides 0: a global average)";
    default: return NULL;
    }
}

int32_t rx_rt_pool2d(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return CV_ARGS;
    const DLTensor *x = args[0], *pr = args[1], *y = args[2];
    if (pr->dtype.code != kDLInt || pr->dtype.bits != 64 || pr->dtype.lanes != 1 || !f32(x) ||
        !f32(y))
        return CV_DTYPE;
    if (pr->ndim != 1 || pr->shape[0] != PL_NPARAMS) return CV_PARAMS;
    const int64_t *q = at(pr);
    /* pool size and strides 0: the global average, a window of x's whole plane (its
     * extents known at the call only) */
    bool global = q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0 && q[11] == 0;
    for (int i = 0; i < PL_NPARAMS; i++)
        if (q[i] < (i >= 4 && i < 8 ? 0 : i >= 10 ? 0 : global && i < 4 ? 0 : 1) ||
            (i >= 10 && q[i] > 1))
            return CV_PARAMS;
    if (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
        return CV_SHAPE;
    pool p = {at(x), at(y), x->shape[0] * x->shape[1], x->shape[2], x->shape[3], y->shape[2],
              y->shape[3], q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
              q[10] != 0, q[11] != 0, q[12] != 0};
    if (global) {
        if (q[4] || q[5] || q[6] || q[7] || q[8] != 1 || q[9] != 1 || q[10] || p.OH != 1 || p.OW != 1)
            return q[8] != 1 || q[9] != 1 || q[10] || q[4] || q[5] || q[6] || q[7] ? CV_PARAMS : CV_SHAPE;
        if (p.H < 1 || p.W < 1) return CV_SHAPE; /* an empty window has no average */
        p.kh = p.sh = p.H, p.kw = p.sw = p.W;
    }
    /* the output extents of the window attributes (op_nn.c's window arithmetic) */
    int64_t ext[2] = {p.H, p.W}, K[2] = {p.kh, p.kw}, st[2] = {p.sh, p.sw}, dl[2] = {p.dh, p.dw};
    int64_t pb[2] = {p.pt, p.pl}, pa[2] = {p.pb, p.pr}, want[2];
    for (int d = 0; d < 2; d++) {
        int64_t span = ext[d] + pb[d] + pa[d] - dl[d] * (K[d] - 1) - 1;
        if (span < 0) return CV_SHAPE;
        want[d] = (p.ceil_mode ? (span + st[d] - 1) / st[d] : span / st[d]) + 1;
    }
    if (want[0] != p.OH || want[1] != p.OW) return CV_SHAPE;
    if (p.NC && p.OH && p.OW) rx_rt_parallel_for(pool_job, &p);
    return CV_OK;
}
