/*
 * library_dwconv.c — one output plane of a stride-1, undilated depthwise convolution
 * (blas.conv2d with one input channel per group, library_conv.c's direct way), edges
 * included, in vector registers; and rx_rt_window_row, the scalar row those ways and
 * library_pool.c fall back to, with the window helpers rx_rt_valid_range and rx_rt_share
 * (moved here from library_conv.c, which neared 1000 lines).
 *
 *   rx_rt_dwconv_plane(xp, H, W, k, KH, KW, pt, pl, OH, OW, buf, yp)
 *     yp[oh][ow] = sum over kh, kw of k[kh][kw] * x[oh - pt + kh][ow - pl + kw], x zero
 *     outside the plane (the legalized convolution's zero padding).
 *
 * Step 1: the plane is copied into buf with its padding made explicit, rows
 * -pt .. OH - pt + KH - 2 and columns -pl .. -pl + WP - 1 (WP = OW rounded up to 8,
 * plus KW - 1), zeros outside the input. Every output then reads KH x KW taps that all
 * lie in buf, so no column or row is special: on ConvNeXt's 7x7 on 56 x 56, 8 of 56
 * columns and 6 of 56 rows have taps outside the plane, and scalar loops testing every
 * tap there took about two thirds of the time.
 * Step 2: output rows two at a time, 16 columns at a time (an 8-column block for the
 * rest of the row, its last block stored through a bounce buffer): four accumulators
 * of 8 lanes; each input row's vector of taps is loaded once and serves both output
 * rows (input row oh + r is tap row r of output oh and r - 1 of output oh + 1).
 *
 * Exactness: each output sums k[kh][kw] * x in the order kh, then kw ascending, from
 * +0: window_row's order. On AVX2 + FMA CPUs each term is one fused multiply-add (one
 * rounding instead of two: 1.67 -> 1.43 ms on the 7x7 above, one thread, Zen 1),
 * elsewhere a multiply then an add, window_row's operations; so results differ from
 * window_row's (other strides) by rounding only, as the sgemm ways' do. The taps in the
 * padding add w * 0 = +-0, which leaves a sum unchanged (a -0 sum becomes +0), as the
 * generated loops add them; a non-finite weight on such a tap makes NaN there, as it
 * does in the generated loops.
 * Cost: O(OH OW KH KW) multiply-adds; the copy O((OH + KH) WP); buf holds
 * rx_rt_dwconv_buf_floats(...) floats (18 KiB for the 7x7 on 56 x 56: L1-resident).
 * Without GCC/Clang vector extensions it declines and library_conv.c's rows run.
 *
 *   rx_rt_dwconv_plane512(..., S, ...): strides S = 1 and 2, undilated, on CPUs with
 *     AVX-512F (rx_rt_conv_tile_kind, so $RX_CONV_KERNEL=avx2 / portable keep the rows
 *     above and window_row): the plane padded the same way (rows to 2 OH + KH, columns to
 *     2 * OW rounded up to 32 plus the taps' reach and 16 of slack), then 16 outputs of a
 *     row at a time, one FMA a tap (order kh, kw ascending from +0, as above) on the 16
 *     inputs from column S ow + kw (stride 2: 32 loaded, the evens kept by one
 *     two-source permute); the call's epilogue (bias, residual, relu / clamp: the epilogue
 *     pass's steps in its order; SiLU / hardswish: library_act.c's 16-lane forms, so
 *     these functions carry target("avx512f,avx512dq,avx2,fma"), which
 *     rx_rt_conv_tile_kind's AVX-512 choice requires) applied before the only store (that pass was 5% of
 *     MobileNetV2 at one thread, perf; the model 0.97x, min of 12, load 6). Stride 1 gives the AVX2 rows' results bit for bit with half
 *     the FMAs (MobileNetV2 at one thread 0.66-0.88x the time, min / median of 10, load
 *     14); stride-2 layers (MobileNetV2 has four, 3x3) ran window_row's scalar loops: 17%
 *     of MobileNetV2 at one thread (perf), 3.3% now, the model 0.86x (min of 6, load 11).
 *     Four output rows a block (dz_rows, stride 1 or more than 3 taps a row): four
 *     independent FMA chains, where one chain waited 4 cycles a tap (Zen 5, same build
 *     with one row a block against four, layer minima, one thread, load 10): stride-1
 *     3x3 0.89-0.95x the time, 5x5 0.80, 5x5 stride 2 0.88-0.92; stride-2 3x3 layers
 *     were no faster and keep one row. Those are bound by the padded copy, not the
 *     FMAs: a stride-2 copy split into even and odd columns (no permute per tap) made
 *     them 1.4x slower and is not here. ONNX Runtime's channel-blocked layout runs them
 *     ~2.5x faster (MobileNetV3's 72 x 56 x 56 one: 47 us against 15 at one thread).
 *     While a plane's rows run, the next plane's lines (x + H W: the caller's next
 *     plane, x's planes being contiguous) are prefetched, spread evenly over the output
 *     rows: the padded copy of a plane no longer waits on memory at its start (a plane
 *     of 12 to 50 KiB is too short for the hardware prefetcher's ramp). CPU time a call
 *     at one thread, same run (task-clock, load 16): Xception's 3x3 on 2x128x109x109
 *     2.47 -> 1.48 ms (0.60x), on 2x256x55x55 0.91 -> 0.75, EfficientNet's stride-2 3x3
 *     on 96x112x112 0.275 -> 0.246, its 32x112x112 and 5x5/2 144x56x56 unchanged; in
 *     Xception (perf samples of 40 calls) the copies (memmove, pad_plane) 0.33x.
 */
#include "rt_int.h"

#include <float.h>
#include <string.h>

/* ---- one output row of a window op (library_conv.c's rows, library_pool.c) ---- */

/* (rt_int.h's contracts) */
void rx_rt_valid_range(int64_t OW, int64_t W, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
    /* ow * s >= -off and ow * s <= W - 1 - off */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = W - 1 - off < 0 ? 0 : (W - 1 - off) / s + 1;
    *lo = a < OW ? a : OW;
    *hi = b < *lo ? *lo : b > OW ? OW : b;
}

void rx_rt_share(int64_t total, int t, int n, int64_t *lo, int64_t *hi)
{
    *lo = total * t / n;
    *hi = total * (t + 1) / n;
}

/* Output row oh of a plane xp: yr[ow] = the sum of taps[k] * x (RX_RT_ROW_MAC), the max
 * (RX_RT_ROW_MAX, from -FLT_MAX: padding never wins) or the sum (RX_RT_ROW_SUM) over
 * the window's taps inside the input. Each tap row is clipped to its valid outputs once,
 * so the inner loop has no bounds test (and for stride 1 is contiguous: vectorized). */
void rx_rt_window_row(const rx_rt_win *g, const float *xp, const float *taps, int mode,
                      int64_t oh, float *yr)
{
    for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = mode == RX_RT_ROW_MAX ? -FLT_MAX : 0.0f;
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        for (int64_t kw = 0; kw < g->KW; kw++) {
            int64_t off = kw * g->dw - g->pl, lo, hi, s = g->sw;
            rx_rt_valid_range(g->OW, g->W, s, off, &lo, &hi);
            const float *row = xp + ih * g->W + off;
            if (mode == RX_RT_ROW_MAX) {
                for (int64_t ow = lo; ow < hi; ow++) yr[ow] = row[ow * s] > yr[ow] ? row[ow * s] : yr[ow];
            } else if (mode == RX_RT_ROW_SUM) {
                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += row[ow * s];
            } else {
                float wv = taps[kh * g->KW + kw];
                if (s == 1)
                    for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * row[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * row[ow * s];
            }
        }
    }
}

enum { DWV = 8 }; /* floats in one vector */

/* The padded plane's row length: OW rounded up to a vector, plus the taps' reach. */
static int64_t padded_w(int64_t OW, int64_t KW)
{
    return (OW + DWV - 1) / DWV * DWV + KW - 1;
}

int64_t rx_rt_dwconv_buf_floats(int64_t OH, int64_t OW, int64_t KH, int64_t KW)
{
    return (OH + KH - 1) * padded_w(OW, KW);
}

#if defined(__GNUC__) || defined(__clang__)
typedef float v8f __attribute__((vector_size(DWV * sizeof(float))));

#define DW_LOAD(v, p) memcpy(&(v), (p), sizeof(v8f))
#define DW_STORE(p, v) memcpy((p), &(v), sizeof(v8f))
#define DW_INLINE static inline __attribute__((always_inline))

/* Step 1: buf[r][j] = x[r - pt][j - pl], zero outside the plane. */
static void pad_plane(const float *xp, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t rows,
                      int64_t WP, float *buf)
{
    for (int64_t r = 0; r < rows; r++) {
        float *d = buf + r * WP;
        int64_t ih = r - pt;
        if (ih < 0 || ih >= H || pl >= WP) {
            memset(d, 0, sizeof(float) * (size_t)WP);
            continue;
        }
        int64_t n = W < WP - pl ? W : WP - pl; /* input columns that land in the row */
        memset(d, 0, sizeof(float) * (size_t)pl);
        memcpy(d + pl, xp + ih * W, sizeof(float) * (size_t)n);
        memset(d + pl + n, 0, sizeof(float) * (size_t)(WP - pl - n));
    }
}

/* One input row's taps: acc (NV vectors) += ka[kw] * row[kw ..] for kw ascending when
 * ua, and bcc += kb[kw] * the same vectors when ub (ua, ub constant after inlining). */
DW_INLINE void dw_taps(const float *row, bool ua, const float *ka, bool ub, const float *kb,
                       int64_t KW, int NV, v8f *acc, v8f *bcc)
{
    for (int64_t kw = 0; kw < KW; kw++) {
        v8f x[2];
        for (int v = 0; v < NV; v++) DW_LOAD(x[v], row + kw + v * DWV);
        if (ua) {
            float c = ka[kw];
            v8f w = {c, c, c, c, c, c, c, c};
            for (int v = 0; v < NV; v++) acc[v] = acc[v] + w * x[v];
        }
        if (ub) {
            float c = kb[kw];
            v8f w = {c, c, c, c, c, c, c, c};
            for (int v = 0; v < NV; v++) bcc[v] = bcc[v] + w * x[v];
        }
    }
}

/* Outputs [ow, ow + NV * 8) of rows oh (acc a) and, when two, oh + 1 (acc b); p is buf's
 * row oh at column ow. The rows' first `keep` columns are stored, through a bounce
 * buffer when keep < NV * 8. NV is 1 or 2 (constant after inlining). */
DW_INLINE void dw_block(const float *p, int64_t WP, const float *k, int64_t KH, int64_t KW,
                        int NV, bool two, float *y0, float *y1, int64_t keep)
{
    v8f a[2] = {{0}, {0}}, b[2] = {{0}, {0}};
    /* input row oh + r: tap row r of output oh, r - 1 of output oh + 1 */
    if (!two) {
        for (int64_t r = 0; r < KH; r++) dw_taps(p + r * WP, true, k + r * KW, false, k, KW, NV, a, b);
    } else {
        dw_taps(p, true, k, false, k, KW, NV, a, b);
        for (int64_t r = 1; r < KH; r++)
            dw_taps(p + r * WP, true, k + r * KW, true, k + (r - 1) * KW, KW, NV, a, b);
        dw_taps(p + KH * WP, true, k + (KH - 1) * KW, false, k, KW, NV, b, a);
    }
    float tmp[2 * DWV];
    for (int i = 0; i < 1 + two; i++) {
        v8f *acc = i ? b : a;
        float *y = i ? y1 : y0;
        if (keep >= NV * DWV) {
            for (int v = 0; v < NV; v++) DW_STORE(y + v * DWV, acc[v]);
        } else {
            for (int v = 0; v < NV; v++) DW_STORE(tmp + v * DWV, acc[v]);
            memcpy(y, tmp, sizeof(float) * (size_t)keep);
        }
    }
}

/* Step 2 for output rows oh and, when two, oh + 1. */
DW_INLINE void dw_rows(const float *buf, int64_t WP, const float *k, int64_t KH, int64_t KW,
                       int64_t OW, int64_t oh, bool two, float *yp)
{
    const float *p = buf + oh * WP;
    float *y0 = yp + oh * OW, *y1 = two ? y0 + OW : NULL;
    int64_t ow = 0;
    for (; ow + 2 * DWV <= OW; ow += 2 * DWV)
        dw_block(p + ow, WP, k, KH, KW, 2, two, y0 + ow, two ? y1 + ow : NULL, 2 * DWV);
    for (; ow < OW; ow += DWV)
        dw_block(p + ow, WP, k, KH, KW, 1, two, y0 + ow, two ? y1 + ow : NULL, OW - ow);
}

DW_INLINE void dw_plane(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                        int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf,
                        float *yp)
{
    int64_t WP = padded_w(OW, KW);
    pad_plane(xp, H, W, pt, pl, OH + KH - 1, WP, buf);
    int64_t oh = 0;
    for (; oh + 2 <= OH; oh += 2) dw_rows(buf, WP, k, KH, KW, OW, oh, true, yp);
    if (oh < OH) dw_rows(buf, WP, k, KH, KW, OW, oh, false, yp);
}

/* dw_plane with the common widths constant (the tap loop unrolled). */
#define DW_DISPATCH()                                                              \
    switch (KW) {                                                                  \
    case 3: dw_plane(xp, H, W, k, KH, 3, pt, pl, OH, OW, buf, yp); break;          \
    case 5: dw_plane(xp, H, W, k, KH, 5, pt, pl, OH, OW, buf, yp); break;          \
    case 7: dw_plane(xp, H, W, k, KH, 7, pt, pl, OH, OW, buf, yp); break;          \
    default: dw_plane(xp, H, W, k, KH, KW, pt, pl, OH, OW, buf, yp); break;        \
    }

#if defined(__x86_64__)
/* The AVX2 clone contracts acc + w * x into one fused multiply-add: GCC's -std=c11 keeps
 * contraction off unless the function asks; Clang contracts within an expression. */
#if defined(__clang__)
#define DW_CONTRACT
#else
#define DW_CONTRACT __attribute__((optimize("fp-contract=fast")))
#endif

__attribute__((target("avx2,fma"))) DW_CONTRACT static void dw_plane_avx2(const float *xp, int64_t H, int64_t W,
                                                          const float *k, int64_t KH, int64_t KW,
                                                          int64_t pt, int64_t pl, int64_t OH,
                                                          int64_t OW, float *buf, float *yp)
{
    DW_DISPATCH();
}

static pthread_once_t dw_once = PTHREAD_ONCE_INIT;
static bool dw_avx2;

static void dw_choose(void)
{
    __builtin_cpu_init();
    dw_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

static void dw_plane_portable(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                              int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW,
                              float *buf, float *yp)
{
    DW_DISPATCH();
}

bool rx_rt_dwconv_plane(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                        int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf,
                        float *yp)
{
#if defined(__x86_64__)
    pthread_once(&dw_once, dw_choose);
    if (dw_avx2) {
        dw_plane_avx2(xp, H, W, k, KH, KW, pt, pl, OH, OW, buf, yp);
        return true;
    }
#endif
    dw_plane_portable(xp, H, W, k, KH, KW, pt, pl, OH, OW, buf, yp);
    return true;
}

/* ---- strides 1 and 2 with AVX-512 ---- */

/* The padded plane's row length for rx_rt_dwconv_plane512: 2 * OW rounded up to 32, plus
 * the taps' reach and one vector of slack (stride 2: a block of 16 outputs loads 32
 * floats at each tap; stride 1 needs less). */
static int64_t padded_w2(int64_t OW, int64_t KW)
{
    return (OW + 15) / 16 * 32 + KW - 1 + 16;
}

int64_t rx_rt_dwconv512_buf_floats(int64_t OH, int64_t OW, int64_t KH, int64_t KW)
{
    return (2 * OH + KH) * padded_w2(OW, KW);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* Stride S (1 or 2), undilated: the plane padded as above (pad_plane), then per output
 * row 16 outputs at a time: at each tap (kh, kw ascending, from +0) one FMA of the
 * weight by the 16 padded inputs from column S * ow + kw (stride 2: 32 loaded, their
 * evens kept by one two-source permute); partial blocks masked. Stride 1: the AVX2
 * rows' sums (FMA, same order), bit-identical, with half the FMAs; stride 2 ran
 * window_row's scalar loops (MobileNetV2 has four such 3x3 layers). */
#define DZ_TARGET __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define RX_VL 16 /* vact16: SiLU and hardswish on the sums (library_act.c's forms) */
#define RX_VL_FN DZ_TARGET
#define RX_VL_ACT_ONLY
#include "rt_vmath_lanes.h"
#undef RX_VL
#undef RX_VL_FN
#undef RX_VL_ACT_ONLY

/* Output rows [oh, oh + R) of the 16-output block at column ow: R independent sums
 * (one FMA chain each, interleaved: a single chain waited 4 cycles a tap on the FMA
 * before it), each in the order kh, kw ascending from +0, then the epilogue. */
DZ_TARGET static inline __attribute__((always_inline)) void
dz_rows(const int S, const int R, const float *buf, int64_t WP, const float *k, int64_t KH,
        int64_t KW, int64_t oh, int64_t ow, int64_t OW, float *yp, const rx_rt_conv_epi *e)
{
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    __m512 acc[4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t kh = 0; kh < KH; kh++) {
        const float *r0 = buf + (S * oh + kh) * WP + S * ow;
        for (int64_t kw = 0; kw < KW; kw++) {
            __m512 w = _mm512_set1_ps(k[kh * KW + kw]);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const float *rr = r0 + r * S * WP + kw;
                __m512 v = S == 1 ? _mm512_loadu_ps(rr)
                                  : _mm512_permutex2var_ps(_mm512_loadu_ps(rr), evens,
                                                           _mm512_loadu_ps(rr + 16));
                acc[r] = _mm512_fmadd_ps(w, v, acc[r]);
            }
        }
    }
    int act = e ? e->act : 0;
    __m512 bias = _mm512_set1_ps(e && e->bias ? e->bias[0] : 0.0f);
    __m512 lo = _mm512_set1_ps(act == 2 || act == RX_RT_CONV_ACT_LEAKY ? e->lo : 0.0f);
    __m512 hi = _mm512_set1_ps(act == 2 ? e->hi : 0.0f);
    __mmask16 m = OW - ow >= 16 ? 0xFFFF : (__mmask16)((1u << (OW - ow)) - 1);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        /* the epilogue pass's steps and order: + bias, + residual, max(v, lo) (v > lo ?
         * v : lo), min(v, hi); or SiLU / hardswish (epi16's values) */
        __m512 v = acc[r];
        int64_t at = (oh + r) * OW + ow;
        if (e && e->bias) v = _mm512_add_ps(v, bias);
        if (e && e->res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e->res + at));
        if (act == RX_RT_CONV_ACT_LEAKY) /* v > 0 ? v : v * slope (lo) */
            v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NGT_UQ), v, lo);
        else if (rx_rt_conv_act_rt(act)) v = vact16(rx_rt_conv_act_rt(act), v);
        else if (act) v = _mm512_max_ps(v, lo);
        if (act == 2) v = _mm512_min_ps(v, hi);
        _mm512_mask_storeu_ps(yp + at, m, v);
    }
}

DZ_TARGET static inline __attribute__((always_inline)) void
dw_plane_512(const int S, const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
             int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf, float *yp,
             const rx_rt_conv_epi *e)
{
    int64_t WP = padded_w2(OW, KW), oh = 0;
    pad_plane(xp, H, W, pt, pl, S * OH + KH, WP, buf);
    /* while the rows run, the next plane (x's planes are contiguous: the one the caller
     * takes next; integer addresses, a prefetch past x's end does not fault): its lines
     * spread over the output rows, about OH / lpr of them a row */
    uintptr_t next = (uintptr_t)(xp + H * W), lines = (uintptr_t)(H * W + 15) / 16, done = 0;
    uintptr_t lpr = (lines + (uintptr_t)OH - 1) / (uintptr_t)OH;
#define DZ_NEXT(R)                                                                         \
    for (uintptr_t l_ = 0; l_ < (R) * lpr && done < lines; l_++, done++)                  \
        _mm_prefetch((const char *)(next + done * 64), _MM_HINT_T0);
    /* four rows a block: four independent chains (stride 2 with 3 taps a row: not
     * measurably better, one row, as before) */
    for (; (S == 1 || KW > 3) && oh + 4 <= OH; oh += 4) {
        DZ_NEXT(4)
        for (int64_t ow = 0; ow < OW; ow += 16) dz_rows(S, 4, buf, WP, k, KH, KW, oh, ow, OW, yp, e);
    }
    for (; oh < OH; oh++) {
        DZ_NEXT(1)
        for (int64_t ow = 0; ow < OW; ow += 16) dz_rows(S, 1, buf, WP, k, KH, KW, oh, ow, OW, yp, e);
    }
#undef DZ_NEXT
}

/* Each stride with KW 3 constant (the tap loop unrolled: MobileNet's 3x3) or any KW. */
#define DZ_SPEC(S, K, KWV)                                                                 \
    DZ_TARGET static void dw_plane_512_##S##_##K(                                          \
        const float *xp, int64_t H, int64_t W, const float *k, int64_t KH, int64_t KW,     \
        int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf, float *yp,             \
        const rx_rt_conv_epi *e)                                                           \
    {                                                                                      \
        (void)KW;                                                                          \
        dw_plane_512(S, xp, H, W, k, KH, KWV, pt, pl, OH, OW, buf, yp, e);                 \
    }
DZ_SPEC(1, 3, 3) DZ_SPEC(1, n, KW) DZ_SPEC(2, 3, 3) DZ_SPEC(2, n, KW)
#undef DZ_SPEC
#endif

bool rx_rt_dwconv_plane512(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                           int64_t KW, int64_t S, int64_t pt, int64_t pl, int64_t OH, int64_t OW,
                           float *buf, float *yp, const rx_rt_conv_epi *epi)
{
#if defined(__x86_64__)
    if (rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512 && (S == 1 || S == 2)) {
        if (S == 1)
            (KW == 3 ? dw_plane_512_1_3 : dw_plane_512_1_n)(xp, H, W, k, KH, KW, pt, pl, OH, OW,
                                                            buf, yp, epi);
        else
            (KW == 3 ? dw_plane_512_2_3 : dw_plane_512_2_n)(xp, H, W, k, KH, KW, pt, pl, OH, OW,
                                                            buf, yp, epi);
        return true;
    }
#endif
    (void)xp, (void)H, (void)W, (void)k, (void)KH, (void)KW, (void)S, (void)pt, (void)pl;
    (void)OH, (void)OW, (void)buf, (void)yp, (void)epi;
    return false;
}
#else
int64_t rx_rt_dwconv512_buf_floats(int64_t OH, int64_t OW, int64_t KH, int64_t KW)
{
    (void)OH, (void)OW, (void)KH, (void)KW;
    return 0;
}

bool rx_rt_dwconv_plane512(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                           int64_t KW, int64_t S, int64_t pt, int64_t pl, int64_t OH, int64_t OW,
                           float *buf, float *yp, const rx_rt_conv_epi *epi)
{
    (void)xp, (void)H, (void)W, (void)k, (void)KH, (void)KW, (void)S, (void)pt, (void)pl;
    (void)OH, (void)OW, (void)buf, (void)yp, (void)epi;
    return false;
}

bool rx_rt_dwconv_plane(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                        int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf,
                        float *yp)
{
    (void)xp, (void)H, (void)W, (void)k, (void)KH, (void)KW, (void)pt, (void)pl, (void)OH;
    (void)OW, (void)buf, (void)yp;
    return false;
}
#endif

/* ---- dilated, stride 1: dh x dw undilated planes ----
 *
 * With stride 1 and dilation (dh, dw), output row a + dh u reads input rows
 * a - pt + dh (u + i) only: rows of one residue mod dh. So the outputs of phase (a, b)
 * are an undilated convolution of the input's phase plane (rows ra + dh v, columns
 * rb + dw v'; ra = (a - pt) mod dh) with the same taps and padding ceil-like (pt - a +
 * ra) / dh: each phase is gathered into a small plane, run through
 * rx_rt_dwconv_plane512 (stride 1, no epilogue) or rx_rt_dwconv_plane, and scattered
 * back. VAN's 7x7 dilation-3 depthwise convolutions (and DeepLab's atrous separable
 * ones) went through rx_rt_window_row's direct loops: 64 x 56 x 56 at one thread 1.03 ms
 * against 0.24 ms undilated. Cost: one gather of the plane and one scatter of the
 * output besides the phases' convolutions. */
static void dil_phase(int64_t a, int64_t d, int64_t p, int64_t n, int64_t on, int64_t *r,
                      int64_t *pad, int64_t *len, int64_t *olen)
{
    *r = ((a - p) % d + d) % d;  /* the first input row (column) of the phase */
    *pad = (p - a + *r) / d;     /* its padding: a multiple of d apart, >= 0 */
    *len = *r < n ? (n - *r + d - 1) / d : 0;
    *olen = a < on ? (on - a + d - 1) / d : 0;
}

int64_t rx_rt_dwconv_dil_floats(const rx_rt_win *g, int64_t OH)
{
    int64_t ha = (g->H + g->dh - 1) / g->dh, wb = (g->W + g->dw - 1) / g->dw;
    int64_t oha = (OH + g->dh - 1) / g->dh, owb = (g->OW + g->dw - 1) / g->dw;
    int64_t in512 = rx_rt_dwconv512_buf_floats(oha, owb, g->KH, g->KW);
    int64_t in = rx_rt_dwconv_buf_floats(oha, owb, g->KH, g->KW);
    return ha * wb + oha * owb + (in512 > in ? in512 : in);
}

bool rx_rt_dwconv_plane_dil(const rx_rt_win *g, int64_t OH, const float *xp, const float *k,
                            float *buf, float *yp)
{
    int64_t ha = (g->H + g->dh - 1) / g->dh, wb = (g->W + g->dw - 1) / g->dw;
    float *xs = buf, *ys = xs + ha * wb, *inner = ys + (OH + g->dh - 1) / g->dh *
                                                          ((g->OW + g->dw - 1) / g->dw);
    const rx_rt_conv_epi none = {NULL, NULL, 0, 0.0f, 0.0f};
    for (int64_t a = 0; a < g->dh && a < OH; a++) {
        int64_t ra, pa, h, oh;
        dil_phase(a, g->dh, g->pt, g->H, OH, &ra, &pa, &h, &oh);
        for (int64_t b = 0; b < g->dw && b < g->OW; b++) {
            int64_t rb, pb, w, ow;
            dil_phase(b, g->dw, g->pl, g->W, g->OW, &rb, &pb, &w, &ow);
            for (int64_t v = 0; v < h; v++)
                for (int64_t u = 0; u < w; u++)
                    xs[v * w + u] = xp[(ra + g->dh * v) * g->W + rb + g->dw * u];
            if (h == 0 || w == 0) { /* every tap in the padding */
                memset(ys, 0, sizeof(float) * (size_t)(oh * ow));
            } else if (!rx_rt_dwconv_plane512(xs, h, w, k, g->KH, g->KW, 1, pa, pb, oh, ow, inner,
                                              ys, &none) &&
                       !rx_rt_dwconv_plane(xs, h, w, k, g->KH, g->KW, pa, pb, oh, ow, inner, ys)) {
                return false; /* not built: the first phase, nothing written */
            }
            for (int64_t v = 0; v < oh; v++)
                for (int64_t u = 0; u < ow; u++)
                    yp[(a + g->dh * v) * g->OW + b + g->dw * u] = ys[v * ow + u];
        }
    }
    return true;
}
