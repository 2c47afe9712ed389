/*
 * library_conv_bx.c — blas.conv2d's implicit GEMM on AVX-512 with the roles of the
 * operands swapped: the register tile is P output pixels of one output row by 32 output
 * channels, each step broadcasts P input values straight from library_conv.c's phase
 * planes and multiplies them by two vectors of weights packed once a call. Nothing is
 * packed per pixel panel (library_conv.c's pack_panel: 10-20% of a 3x3 layer with the
 * 12 x 32 tile of library_conv_kern.c, perf).
 *
 *   rx_rt_conv_bx_pack(dst, w, Kc, rows, width)
 *     dst[p * width + j] = w[j * Kc + p] for p < Kc, j < rows, 0 for rows <= j < width
 *     (width 16 or 32): a chunk of output channels, reduction index major (16 x 16
 *     blocks transposed in registers on AVX-512, a scalar loop elsewhere).
 *   rx_rt_conv_bx_rows(a, oh0, oh1, c0, c1)
 *     output rows [oh0, oh1) of one image and group, its output channels [c0, c1)
 *     (c0 a multiple of 32), every pixel of those rows; a->w the group's chunks packed as
 *     above (chunk j at a->w + j * Kc * 32, its width 32, or 16 for a last chunk of at most
 *     16 channels), a->x the group's phase planes, tap k of output pixel (oh, ow) at
 *     a->x[off[k] + oh * Wq + ow].
 *
 * Per output row the OW pixels are cut into tiles of at most BX_P = 12 of equal sizes (56:
 * 12 + 4 x 11; 28: 10, 9, 9; 7: 7): a tile never crosses a row, so its P inputs of a tap
 * are P consecutive floats (one base pointer a step: x + off[p], P broadcasts at fixed
 * offsets), and no virtual pixel is computed. The 2 x P accumulators (24 at most) hold
 * pixel-major sums; the reduction runs in library_conv.c's blocks (kcb indices), each from
 * +0, one FMA per index ascending, a block's sum added to the previous blocks' (acc +
 * prev) in a stack tile, then + bias, transposed to channel rows in registers (16 x 16
 * blocks), + residual, act, and stored with the row's mask: the same operations in the same order as the
 * 12 x 32 tile, so the results are bit-identical to it and to the AVX2 and portable ways.
 *
 * On AVX-512 F + DQ only (rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512, which
 * $RX_CONV_KERNEL=avx2 / portable lowers); rx_rt_conv_bx_ok() says whether this build
 * has it ($RX_CONV_BX=0 turns it off: the tests' way to run the 12 x 32 tile on KxK).
 * Cost: Kc x 32 floats of weights a chunk read per tile (from L2: a single stream),
 * P + 3 loads and 2 P FMAs a step, two 16 x 16 transposes and nch masked row stores a
 * tile (the stores' misses are most of bx_out, 3-8% of a layer: unmasked stores and
 * prefetching y's lines changed nothing). library_conv.c takes it where it wins (its
 * essay: KxK, or 1x1 reducing 3x the channels or more onto 32k; 16-channel vectors, at
 * most 128 channels a group at stride 1).
 */
#include "rt_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define BX_X86 1
#include <immintrin.h>
#else
#define BX_X86 0
#endif

enum { BX_P = 12, BX_W = 32 };

static bool bx_on;
static pthread_once_t bx_once = PTHREAD_ONCE_INIT;

static void bx_choose(void)
{
    const char *e = getenv("RX_CONV_BX"); /* 0: the 12 x 32 tile's way (tests, A/B) */
    bx_on = BX_X86 && rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512 && !(e && strcmp(e, "0") == 0);
}

bool rx_rt_conv_bx_ok(void)
{
    pthread_once(&bx_once, bx_choose);
    return bx_on;
}

#if BX_X86
#define BX_FN __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define BX_INLINE static inline __attribute__((always_inline, target("avx512f,avx512dq,avx2,fma")))
#define RX_VL 16 /* vact16: SiLU and hardswish (library_act.c's forms) */
#define RX_VL_FN BX_FN
#define RX_VL_ACT_ONLY
#include "rt_vmath_lanes.h"
#undef RX_VL
#undef RX_VL_FN
#undef RX_VL_ACT_ONLY

/* Pixel I of the tile: its input at the step's tap broadcast, times the one or two
 * weight vectors. */
#define BX_PIX(I)                                                                          \
    if (P > I) {                                                                           \
        __m512 s = _mm512_set1_ps(xp[I]);                                                  \
        c##I##0 = _mm512_fmadd_ps(s, w0, c##I##0);                                         \
        if (NV == 2) c##I##1 = _mm512_fmadd_ps(s, w1, c##I##1);                            \
    }
/* Pixel I's sums into the stack tile t (pixel-major, BX_W a pixel): the block's sum,
 * + the previous blocks' (acc), + bias (last). */
#define BX_PUT(I)                                                                          \
    if (P > I) {                                                                           \
        __m512 v0 = acc ? _mm512_add_ps(c##I##0, _mm512_load_ps(t + I * BX_W)) : c##I##0;  \
        if (bias) v0 = _mm512_add_ps(v0, b0);                                              \
        _mm512_store_ps(t + I * BX_W, v0);                                                 \
        if (NV == 2) {                                                                     \
            __m512 v1 = acc ? _mm512_add_ps(c##I##1, _mm512_load_ps(t + I * BX_W + 16))    \
                            : c##I##1;                                                     \
            if (bias) v1 = _mm512_add_ps(v1, b1);                                          \
            _mm512_store_ps(t + I * BX_W + 16, v1);                                        \
        }                                                                                  \
    }
#define BX_ACC(I) c##I##0 = _mm512_setzero_ps(), c##I##1 = c##I##0

/* One reduction block of a P-pixel tile: kc steps from x (the tile's first pixel;
 * tap p at x + off[p]) and w (BX_W or 16 weights a step, NV vectors), then into t as
 * BX_PUT says; bias (the chunk's first channel, last block only) or NULL. */
BX_INLINE void bx_block(const int P, const int NV, int64_t kc, const float *x,
                        const int64_t *off, const float *w, float *t, bool acc,
                        const float *bias, __mmask16 m0, __mmask16 m1)
{
    __m512 BX_ACC(0), BX_ACC(1), BX_ACC(2), BX_ACC(3), BX_ACC(4), BX_ACC(5), BX_ACC(6),
           BX_ACC(7), BX_ACC(8), BX_ACC(9), BX_ACC(10), BX_ACC(11);
    for (int64_t p = 0; p < kc; p++, w += NV * 16) {
        const float *xp = x + off[p];
        __m512 w0 = _mm512_loadu_ps(w), w1 = NV == 2 ? _mm512_loadu_ps(w + 16) : w0;
        BX_PIX(0) BX_PIX(1) BX_PIX(2) BX_PIX(3) BX_PIX(4) BX_PIX(5)
        BX_PIX(6) BX_PIX(7) BX_PIX(8) BX_PIX(9) BX_PIX(10) BX_PIX(11)
    }
    __m512 b0 = _mm512_setzero_ps(), b1 = b0;
    if (bias) b0 = _mm512_maskz_loadu_ps(m0, bias), b1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    BX_PUT(0) BX_PUT(1) BX_PUT(2) BX_PUT(3) BX_PUT(4) BX_PUT(5)
    BX_PUT(6) BX_PUT(7) BX_PUT(8) BX_PUT(9) BX_PUT(10) BX_PUT(11)
}
#undef BX_PIX
#undef BX_PUT
#undef BX_ACC

#define BX_SPEC(P, V)                                                                      \
    BX_FN static void bx_block##P##_##V(int64_t kc, const float *x, const int64_t *off,    \
                                        const float *w, float *t, bool acc,                \
                                        const float *bias, __mmask16 m0, __mmask16 m1)     \
    {                                                                                      \
        bx_block(P, V, kc, x, off, w, t, acc, bias, m0, m1);                               \
    }
#define BX_SPECS(P) BX_SPEC(P, 1) BX_SPEC(P, 2)
BX_SPECS(1) BX_SPECS(2) BX_SPECS(3) BX_SPECS(4) BX_SPECS(5) BX_SPECS(6)
BX_SPECS(7) BX_SPECS(8) BX_SPECS(9) BX_SPECS(10) BX_SPECS(11) BX_SPECS(12)
#undef BX_SPEC
#undef BX_SPECS

typedef void (*bx_fn)(int64_t, const float *, const int64_t *, const float *, float *, bool,
                      const float *, __mmask16, __mmask16);
#define BX_BY(V)                                                                           \
    {NULL, bx_block1_##V, bx_block2_##V, bx_block3_##V, bx_block4_##V, bx_block5_##V,      \
     bx_block6_##V, bx_block7_##V, bx_block8_##V, bx_block9_##V, bx_block10_##V,           \
     bx_block11_##V, bx_block12_##V}
static const bx_fn bx_by[2][BX_P + 1] = {BX_BY(1), BX_BY(2)};
#undef BX_BY

/* r[i] (16 rows of 16) transposed in place: r[c] becomes column c (4 stages of
 * shuffles: 32-bit pairs, 64-bit pairs, then 128-bit lanes twice). */
BX_INLINE void bx_transpose(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* r[4i + k], lane L: rows 4i..4i+3 of column 4L + k */
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int k = 0; k < 4; k++) {
        t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
        t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xDD);
        t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
        t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xDD);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xDD);
        r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xDD);
    }
}

/* The finished tile t (P pixels by nch channels, pixel-major) to y: 16 channels at a
 * time transposed in registers, then per channel + the residual's (same place as y),
 * act, stored with the P pixels' mask. */
BX_FN static void bx_out(const float *t, int P, int64_t nch, float *y, int64_t ldy,
                         const float *res, int act, float lo, float hi)
{
    __mmask16 m = (__mmask16)((1u << P) - 1);
    __m512 vlo = _mm512_set1_ps(act == RX_RT_CONV_ACT_CLAMP || act == RX_RT_CONV_ACT_LEAKY ? lo : 0.0f);
    __m512 vhi = _mm512_set1_ps(act == RX_RT_CONV_ACT_CLAMP ? hi : 0.0f);
    int rt = rx_rt_conv_act_rt(act);
    for (int64_t c0 = 0; c0 < nch; c0 += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < P ? _mm512_load_ps(t + i * BX_W + c0) : _mm512_setzero_ps();
        bx_transpose(r);
        for (int64_t c = 0; c < 16 && c0 + c < nch; c++) {
            __m512 v = r[c];
            float *yc = y + (c0 + c) * ldy;
            if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res + (c0 + c) * ldy));
            if (act == RX_RT_CONV_ACT_LEAKY) { /* v > 0 ? v : v * slope (lo) */
                v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NGT_UQ), v, vlo);
            } else if (rt) {
                v = vact16(rt, v);
            } else if (act) { /* max(v, lo): the 12 x 32 tile's order (relu: lo = 0) */
                v = _mm512_max_ps(v, vlo);
                if (act == RX_RT_CONV_ACT_CLAMP) v = _mm512_min_ps(v, vhi);
            }
            _mm512_mask_storeu_ps(yc, m, v);
        }
    }
}
/* The weights' 16 x 16 blocks transposed in registers (bx_transpose): row j's
 * indices [p0, p0 + 16) become 16 steps' floats j. */
BX_FN static void bx_pack512(float *dst, const float *w, int64_t Kc, int64_t rows, int64_t width)
{
    for (int64_t j0 = 0; j0 < width; j0 += 16)
        for (int64_t p0 = 0; p0 < Kc; p0 += 16) {
            int64_t np = Kc - p0 < 16 ? Kc - p0 : 16;
            __mmask16 m = (__mmask16)((1u << np) - 1);
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = j0 + i < rows ? _mm512_maskz_loadu_ps(m, w + (j0 + i) * Kc + p0)
                                     : _mm512_setzero_ps();
            bx_transpose(r);
            for (int64_t c = 0; c < np; c++) _mm512_storeu_ps(dst + (p0 + c) * width + j0, r[c]);
        }
}
#endif

void rx_rt_conv_bx_pack(float *dst, const float *w, int64_t Kc, int64_t rows, int64_t width)
{
#if BX_X86
    if (rx_rt_conv_bx_ok()) {
        bx_pack512(dst, w, Kc, rows, width);
        return;
    }
#endif
    for (int64_t p = 0; p < Kc; p++, dst += width) {
        for (int64_t j = 0; j < rows; j++) dst[j] = w[j * Kc + p];
        for (int64_t j = rows; j < width; j++) dst[j] = 0.0f;
    }
}

void rx_rt_conv_bx_rows(const rx_rt_conv_bx *a, int64_t oh0, int64_t oh1, int64_t c0, int64_t c1)
{
#if BX_X86
    _Alignas(64) float t[BX_P * BX_W];
    int64_t nkb = (a->Kc + a->kcb - 1) / a->kcb, ntl = (a->OW + BX_P - 1) / BX_P;
    int64_t tq = a->OW / ntl, tr = a->OW % ntl; /* tiles of tq pixels, the first tr one more */
    for (int64_t j = c0 / BX_W; j * BX_W < c1; j++) {
        int64_t nch = c1 - j * BX_W < BX_W ? c1 - j * BX_W : BX_W, nv = nch > 16 ? 2 : 1;
        const float *wc = a->w + j * a->Kc * BX_W;
        __mmask16 m0 = (__mmask16)((1u << (nch < 16 ? nch : 16)) - 1);
        __mmask16 m1 = (__mmask16)((1u << (nch > 16 ? nch - 16 : 0)) - 1);
        const float *bias = a->bias ? a->bias + j * BX_W : NULL;
        for (int64_t oh = oh0; oh < oh1; oh++)
            for (int64_t i = 0, ow = 0; i < ntl; i++) {
                int P = (int)(tq + (i < tr));
                const float *xr = a->x + oh * a->Wq + ow;
                for (int64_t b = 0; b < nkb; b++) {
                    int64_t k0 = b * a->kcb, kc = a->Kc - k0 < a->kcb ? a->Kc - k0 : a->kcb;
                    bx_by[nv - 1][P](kc, xr, a->off + k0, wc + k0 * nv * 16, t, b > 0,
                                     b == nkb - 1 ? bias : NULL, m0, m1);
                }
                int64_t at = (j * BX_W) * a->plane + oh * a->OW + ow;
                bx_out(t, P, nch, a->y + at, a->plane, a->res ? a->res + at : NULL, a->act,
                       a->lo, a->hi);
                ow += P;
            }
    }
#else
    (void)a, (void)oh0, (void)oh1, (void)c0, (void)c1;
#endif
}
