/*
 * library_qconv.c — rt.qconv2d, the 8-bit integer convolution of quantized CNNs
 * (QLinearConv, ConvInteger, a QDQ Conv as ONNX Runtime's quantization tools write
 * them): compiler/legalize/legalize_lib.c makes the call for a CPU nn.conv2d of an 8-bit
 * activation by a constant 8-bit weight into i32 (groups 1, NCHW / OIHW), which
 * compiler/frontend/onnx/onnx_quant.c emits (the zero points are in the graph around it:
 * an explicit pad with the activation's zero point and a constant correction), and for a
 * depthwise one (groups = C = Co) with params[11] = groups.
 *
 *   rt.qconv2d (X, W', params, Y): X u8 or i8 (N, C, H, W); W' the weight (Co, C, kh, kw)
 *   as the (kh kw C, Co) matrix B[(i kw + j) C + c, o] = W[o, c, i, j] in rt.qmatmul's
 *   packed layout (runtime/rt_qpack.h), packed once at compile time; params i64 (10,) =
 *   C, kh, kw, stride h, w, padding top, left, dilation h, w, W was u8, or (11,) with
 *   the value z of X read at the taps outside it (0 without); Y i32 (N, Co, Ho, Wo):
 *   Y[n, o, y, x] = sum over c, i, j of W[o, c, i, j] X[n, c, y sh + i dh - pt, x sw + j
 *   dw - pl], taps outside X read as z, exact modulo 2^32 (ONNX Runtime's int32
 *   accumulation).
 *   rt.qconv2d (X, W', params, prog, tab, E..., Y): the same sums run through the
 *   epilogue program prog (runtime/library_qepi.c, with its per-channel table tab and
 *   up to 4 tensors E of Y's shape) on each tile, Y in the program's dtype (u8, i8,
 *   f32, i32): what compiler/pass/library_qconv_lower.c makes of the requantization
 *   chain after the convolution.
 *
 * The convolution is the product A B of B above by A (Ho Wo, kh kw C), the im2col of X
 * in channel-last order, on rt.qmatmul's tile kernels (library_qgemm.c: AVX-512 VNNI
 * 6 x 64, AVX2, SSE2, portable; $RX_QGEMM_KERNEL forces a lower one). The output
 * pixels of an image are cut in chunks of CH = 48, a contiguous range of chunks per
 * thread (balanced: 49 pixels are chunks of 30 and 19, not 48 and 1; with fewer than two
 * chunks a thread, each chunk's 64-column blocks are cut into groups, an item being a
 * (chunk, group) pair: a 7 x 7 map by 512 channels keeps both threads busy); per image
 * each thread
 *   1. copies the band of X's rows its pixels read (its output rows' taps: a halo of
 *      kh - 1 rows past its share) channel-last into its own buffer, (rows, W, C) bytes,
 *      as A' = X ^ ax (ax = 0x80 for an i8 X: u8 for vpdpbusd). No thread reads another's
 *      copy, so the region has no barrier: on a loaded machine a barrier waits for a
 *      descheduled thread (the halo costs 2 rows in 56 at 2 threads);
 *   2. runs its chunks: a chunk's A rows are
 *      kh kw runs of C bytes (memcpy from the channel-last copy; a tap outside X the
 *      byte ax, i.e. X = 0), or, for a 1x1 stride-1 unpadded convolution with C a
 *      multiple of 4, the channel-last copy itself (no im2col); each 64-column block of
 *      B runs the tile kernel over the chunk into a 48 x 64 i32 buffer, corrected as
 *      rt.qmatmul corrects (A B = A'B' + ob rowsum(A') - oa colsum(B') - K oa ob), and
 *      written out channel-first: 48 consecutive i32 per output channel (with an
 *      epilogue: the program runs on the pixel-major tile first, then its result is
 *      written channel-first in Y's dtype).
 * The two layout changes are SSE2 register transposes (every x86-64 has SSE2; other
 * architectures run the scalar loops): 16 x 16 blocks of bytes for the channel-last
 * copy when C is a multiple of 16 (a row's last block ending at W: 56-wide rows had 8
 * pixels a row in the scalar loop, 7% of qlinear_dwnet), 4 x 4 blocks of i32 for the
 * channel-first output;
 * the im2col's runs move in inline 16-byte steps (a libc memcpy call per 3-byte run
 * of a stem cost more than its bytes). QDQ ResNet-18 at 224, one thread, same run:
 * 8.8 -> 7.4 ms.
 * The channel-first input's im2col (B (C kh kw, Ho Wo) as the packed operand) would need
 * rt_qpack's byte shuffle of the whole im2col per call, about 3x the product's time at
 * 56 x 56 x 64; the channel-last copy is one pass over X's bytes.
 * Measured (Zen 5, 2 threads, quiet, 1 x 64 x 56 x 56, 3x3 64 -> 64, best of 50): see
 * docs/runtime.md.
 * Depthwise (params (12,), [11] = groups = C = Co; W' the raw weight bytes (kh kw, C),
 * B[(i kw + j) C + c] = W[c, 0, i, j], signed unless params[9]): the same bands, copied
 * as X's bytes (ax 0, a row of the pad value after each band), the same (chunk, group of
 * 64-channel blocks) items; per pixel the kernel sums its kh kw taps' runs of up to 64
 * channels times the tap's weights along the channels (qdw_*: AVX-512 16 i32 lanes,
 * widened with vpmovzx/sx, vpmulld; AVX2 8; portable), pointers to the taps from one
 * offset table when the window lies inside X, and the tile goes to the epilogue or out as
 * the product's does. qlinear_dwnet one thread 0.69 ms against main's 0.88 (main: the f32
 * depthwise conv and generated requantization kernels); first cut with the tap loop
 * inside a per-channel loop the compiler did not vectorize: 2x slower than main.
 * Cost: N Co Ho Wo C kh kw multiply-adds (depthwise: N C Ho Wo kh kw); copies N C H W bytes (plus the halos) and
 * N Ho Wo kh kw C (the im2col, chunk by chunk in L1/L2) and writes Y once; threads x
 * C H W bytes of bands.
 */
#include "rt_int.h"
#include "rt_qepi.h"
#include "rt_qpack.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Depthwise: acc[j] = sum over taps t of X(src[t][j]) W(w[t C + j]), j < nc (file essay). */
typedef void (*qdw_fn)(const uint8_t *const *src, const uint8_t *w, int64_t c, int taps, int nc,
                       int32_t *acc);

enum { QC_OK, QC_ARGS, QC_DTYPE, QC_SHAPE, QC_NOMEM, QC_EPI };
enum { NR = RX_QP_NR, MR = RX_QG_MR, CH = RX_QE_TILE, NPARAMS = 10, SLACK = 16 };

const char *rx_rt_qconv2d_strerr(int32_t code)
{
    switch (code) {
    case QC_ARGS: return "takes (X, packed W, params, Y) or (X, packed W, params, prog, tab, E..., Y)";
    case QC_DTYPE: return "X must be u8 or i8, the packed weight u8, params i64 and Y i32 (without an epilogue)";
    case QC_SHAPE: return "X, the packed weight, params and Y do not agree (X (N, C, H, W), Y (N, Co, Ho, Wo))";
    case QC_EPI: return "the epilogue program is not valid for Y and its operands";
    case QC_NOMEM: return "out of memory for the channel-last copy of X";
    default: return NULL;
    }
}

typedef struct qc {
    const uint8_t *x, *packed;
    int32_t *y;
    int64_t n, c, h, w, co, ho, wo, kh, kw, sh, sw, pt, pl, dh, dw, k, kp, nblk;
    int64_t chunks, crows, groups; /* pixel chunks of crows; column-block groups per chunk */
    uint8_t ax, bx, padb; /* padb: the byte a tap outside X reads (its pad value ^ ax) */
    bool direct; /* 1x1, stride 1, no padding, C % 4 == 0: A is the channel-last copy */
    bool dwise; /* groups = C = Co: packed is the (kh kw, C) weight bytes (qdw_run) */
    qdw_fn dwk;
    uint8_t *zrow; /* per thread (dwise): C bytes of the pad value, xstride past xt */
    uint8_t *xt; /* per thread: its band of one image channel-last, up to h w c bytes */
    int64_t xstride, astride; /* bytes between two threads' bands, A buffers (SLACK past each) */
    uint8_t *abuf; /* per thread: CH rows of kp bytes */
    int32_t *cbuf; /* per thread: CH x NR */
    uint32_t *rsum; /* per thread: CH row sums of A' (when bx) */
    rx_qkern_fn kern;
    const rx_qepi *epi; /* the epilogue, or NULL: Y i32 */
    rx_qepi_fn epi_run;
    uint8_t *ebuf; /* per thread (with epi): v and t (CH x NR f32 each), then CH x NR bytes */
} qc;

/* Rows [h0, h1) of image img channel-last into xt (row h0 first), each byte ^ ax. */
#if defined(__SSE2__)
/* 16 channels x 16 pixels of bytes (rows src[c * ld], 16 contiguous pixels each) to 16
 * pixels x 16 channels (dst[i * C]), each byte ^ ax: the unpack cascade (SSE2, which
 * every x86-64 has). */
static void t16x16(const uint8_t *src, int64_t ld, uint8_t *dst, int64_t C, uint8_t ax)
{
    __m128i r[16], t[16], x = _mm_set1_epi8((char)ax);
    for (int k = 0; k < 16; k++) r[k] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + k * ld)), x);
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++)
        for (int h = 0; h < 2; h++) {
            r[4 * k + h] = _mm_unpacklo_epi16(t[4 * k + h], t[4 * k + h + 2]);
            r[4 * k + h + 2] = _mm_unpackhi_epi16(t[4 * k + h], t[4 * k + h + 2]);
        }
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 4; h++) {
            t[8 * k + h] = _mm_unpacklo_epi32(r[8 * k + h], r[8 * k + h + 4]);
            t[8 * k + h + 4] = _mm_unpackhi_epi32(r[8 * k + h], r[8 * k + h + 4]);
        }
    for (int h = 0; h < 8; h++) {
        r[h] = _mm_unpacklo_epi64(t[h], t[h + 8]);
        r[h + 8] = _mm_unpackhi_epi64(t[h], t[h + 8]);
    }
    /* r[k] now holds pixel p(k) of the 16 channels: the cascade's order */
    static const int pix[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
    for (int k = 0; k < 16; k++) _mm_storeu_si128((__m128i *)(void *)(dst + pix[k] * C), r[k]);
}
#endif

static void to_nhwc(const qc *q, int64_t img, int64_t h0, int64_t h1, uint8_t *restrict xt)
{
    const int64_t C = q->c, W = q->w, hw = q->h * W;
    const uint8_t ax = q->ax, *restrict x = q->x + img * C * hw;
    xt -= h0 * W * C;
    for (int64_t y = h0; y < h1; y++) {
        int64_t i0 = 0;
#if defined(__SSE2__)
        if (C % 16 == 0 && W >= 16) { /* 16 x 16 blocks, the last one ending at W (it
                                           rewrites some pixels with the same bytes) */
            for (; i0 < W; i0 += 16) {
                int64_t at = i0 + 16 <= W ? i0 : W - 16;
                for (int64_t c = 0; c < C; c += 16)
                    t16x16(x + c * hw + y * W + at, hw, xt + (y * W + at) * C + c, C, ax);
            }
        }
#endif
        for (int64_t i = i0; i < W; i++) { /* one pixel's C bytes, read C planes apart */
            const uint8_t *restrict src = x + y * W + i;
            uint8_t *restrict dst = xt + (y * W + i) * C;
            for (int64_t c = 0; c < C; c++) dst[c] = (uint8_t)(src[c * hw] ^ ax);
        }
    }
}

/* n bytes from s to d in 16-byte moves the compiler inlines (a libc call per run of a
 * 3-channel stem's 3 bytes cost more than the bytes): n < 16 moves 16 (the buffers have
 * SLACK bytes past their ends; the bytes past n are rewritten by the next run or the row's
 * zero tail), else 16-byte steps and one last move ending at n. */
static inline void copy_run(uint8_t *restrict d, const uint8_t *restrict s, int64_t n)
{
    if (n < 16) {
        memcpy(d, s, 16);
        return;
    }
    int64_t b = 0;
    for (; b + 16 <= n; b += 16) memcpy(d + b, s + b, 16);
    if (b < n) memcpy(d + n - 16, s + n - 16, 16);
}

/* Rows [p0, p0 + rows) of the im2col A' into abuf (rows kp bytes apart), reading the
 * channel-last band xt whose first row is X's row y0: per kernel row one run of kw C
 * bytes where its taps are adjacent and inside X (dilation 1 along W), else a run per
 * tap. */
static void im2col(const qc *q, int64_t p0, int64_t rows, const uint8_t *xt, int64_t y0, uint8_t *abuf)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t p = p0 + r, oy = p / q->wo, ox = p % q->wo;
        uint8_t *dst = abuf + r * q->kp;
        int64_t ix0 = ox * q->sw - q->pl;
        bool row_in = q->dw == 1 && ix0 >= 0 && ix0 + q->kw <= q->w; /* the kw taps adjacent */
        for (int64_t i = 0; i < q->kh; i++) {
            int64_t iy = oy * q->sh + i * q->dh - q->pt;
            if (row_in && iy >= 0 && iy < q->h) { /* one run of kw C bytes (a stem: 7 x 3) */
                copy_run(dst, xt + ((iy - y0) * q->w + ix0) * q->c, q->kw * q->c);
                dst += q->kw * q->c;
                continue;
            }
            for (int64_t j = 0; j < q->kw; j++, dst += q->c) {
                int64_t ix = ox * q->sw + j * q->dw - q->pl;
                if (iy < 0 || iy >= q->h || ix < 0 || ix >= q->w)
                    memset(dst, q->padb, (size_t)q->c);
                else
                    copy_run(dst, xt + ((iy - y0) * q->w + ix) * q->c, q->c);
            }
        }
        memset(dst, 0, (size_t)(q->kp - q->k));
    }
}

/* The rows x nc tile c of 4-byte elements (i32 or f32: moved as bits; rows NR apart)
 * written transposed: column j's rows to y + j p. */
static void store_cols(const void *restrict cv, int64_t rows, int nc, void *restrict yv, int64_t p)
{
    const char *restrict c = cv;
    char *restrict y = yv;
    int64_t r0 = 0;
#if defined(__SSE2__)
    for (; r0 + 4 <= rows; r0 += 4) { /* 4 x 4 blocks transposed in registers (SSE2) */
        int j = 0;
        for (; j + 4 <= nc; j += 4) {
            __m128 a = _mm_loadu_ps((const float *)(const void *)(c + 4 * (r0 * NR + j)));
            __m128 b = _mm_loadu_ps((const float *)(const void *)(c + 4 * ((r0 + 1) * NR + j)));
            __m128 d = _mm_loadu_ps((const float *)(const void *)(c + 4 * ((r0 + 2) * NR + j)));
            __m128 e = _mm_loadu_ps((const float *)(const void *)(c + 4 * ((r0 + 3) * NR + j)));
            _MM_TRANSPOSE4_PS(a, b, d, e);
            _mm_storeu_ps((float *)(void *)(y + 4 * (j * p + r0)), a);
            _mm_storeu_ps((float *)(void *)(y + 4 * ((j + 1) * p + r0)), b);
            _mm_storeu_ps((float *)(void *)(y + 4 * ((j + 2) * p + r0)), d);
            _mm_storeu_ps((float *)(void *)(y + 4 * ((j + 3) * p + r0)), e);
        }
        for (; j < nc; j++)
            for (int64_t r = r0; r < r0 + 4; r++) memcpy(y + 4 * (j * p + r), c + 4 * (r * NR + j), 4);
    }
#endif
    for (; r0 < rows; r0 += 8) { /* 8 rows of every column: 8 lines in L1 */
        int64_t r1 = r0 + 8 < rows ? r0 + 8 : rows;
        for (int j = 0; j < nc; j++)
            for (int64_t r = r0; r < r1; r++) memcpy(y + 4 * (j * p + r), c + 4 * (r * NR + j), 4);
    }
}

/* The epilogue on the corrected tile c (rows x NR, pixel-major), its result stored
 * channel-first in Y's dtype: i32 and f32 by 4 x 4 transposes (store_cols), bytes by 16 x 16
 * ones (t16x16 with ax 0). */
static void epi_tile(const qc *q, int32_t *c, int t, int64_t img, int64_t j0, int nc, int64_t p0,
                     int64_t rows)
{
    uint8_t *buf = q->ebuf + (int64_t)t * (8 * CH * NR + CH * NR);
    float *v = (float *)(void *)buf;
    uint8_t *u8 = buf + 8 * CH * NR;
    q->epi_run(q->epi, c, v, v + CH * NR, u8, img, j0, nc, p0, (int)rows);
    int64_t p = q->ho * q->wo, at = (img * q->co + j0) * p + p0;
    switch (q->epi->ykind) {
    case RX_QE_I32: store_cols(c, rows, nc, (int32_t *)q->epi->y + at, p); return;
    case RX_QE_F32: store_cols(v, rows, nc, (float *)q->epi->y + at, p); return;
    default: {
        uint8_t *y = (uint8_t *)q->epi->y + at;
        int64_t r0 = 0;
#if defined(__SSE2__)
        for (; r0 + 16 <= rows; r0 += 16) {
            int j = 0;
            for (; j + 16 <= nc; j += 16) t16x16(u8 + r0 * NR + j, NR, y + j * p + r0, p, 0);
            for (; j < nc; j++)
                for (int64_t r = r0; r < r0 + 16; r++) y[j * p + r] = u8[r * NR + j];
        }
#endif
        for (int j = 0; j < nc; j++)
            for (int64_t r = r0; r < rows; r++) y[j * p + r] = u8[r * NR + j];
    }
    }
}

/* Depthwise kernels: per tap one run of nc bytes of X (a pixel's channels j0.., the pad
 * row outside X) times the tap's nc weight bytes, widened to i32 and summed (exact modulo
 * 2^32), vectorized along the channels with the taps innermost (16 channels' sums in a
 * register): AVX-512 (16 lanes, masked tail), AVX2 (8 lanes, scalar tail) and the
 * portable loop, each for the 4 signednesses of X and W (chosen with rt.qmatmul's tile
 * kernel: $RX_QGEMM_KERNEL). */
#define QDW_C(name, XT, WT)                                                               \
    static void name(const uint8_t *const *src, const uint8_t *w, int64_t c, int taps, int nc, \
                     int32_t *acc)                                                        \
    {                                                                                     \
        for (int j = 0; j < nc; j++) {                                                    \
            uint32_t a = 0;                                                               \
            for (int t = 0; t < taps; t++)                                                \
                a += (uint32_t)((int32_t)(XT)src[t][j] * (int32_t)(WT)w[t * c + j]);      \
            acc[j] = (int32_t)a;                                                          \
        }                                                                                 \
    }
QDW_C(qdw_c_uu, uint8_t, uint8_t)
QDW_C(qdw_c_us, uint8_t, int8_t)
QDW_C(qdw_c_su, int8_t, uint8_t)
QDW_C(qdw_c_ss, int8_t, int8_t)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QDW_X86 1
#include <immintrin.h>
#define QDW_AVX512(name, CX, CW)                                                          \
    __attribute__((target("avx512f,avx512bw,avx512vl"))) static void name(                \
        const uint8_t *const *src, const uint8_t *w, int64_t c, int taps, int nc, int32_t *acc) \
    {                                                                                     \
        for (int j = 0; j < nc; j += 16) {                                                \
            __mmask16 m = nc - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nc - j)) - 1); \
            __m512i a = _mm512_setzero_si512();                                           \
            for (int t = 0; t < taps; t++) {                                              \
                __m512i x = CX(_mm_maskz_loadu_epi8(m, src[t] + j));                      \
                __m512i v = CW(_mm_maskz_loadu_epi8(m, w + t * c + j));                   \
                a = _mm512_add_epi32(a, _mm512_mullo_epi32(x, v));                        \
            }                                                                             \
            _mm512_mask_storeu_epi32(acc + j, m, a);                                      \
        }                                                                                 \
    }
QDW_AVX512(qdw_avx512_uu, _mm512_cvtepu8_epi32, _mm512_cvtepu8_epi32)
QDW_AVX512(qdw_avx512_us, _mm512_cvtepu8_epi32, _mm512_cvtepi8_epi32)
QDW_AVX512(qdw_avx512_su, _mm512_cvtepi8_epi32, _mm512_cvtepu8_epi32)
QDW_AVX512(qdw_avx512_ss, _mm512_cvtepi8_epi32, _mm512_cvtepi8_epi32)
#define QDW_AVX2(name, CX, CW, XT, WT)                                                    \
    __attribute__((target("avx2"))) static void name(const uint8_t *const *src, const uint8_t *w, \
                                                     int64_t c, int taps, int nc, int32_t *acc) \
    {                                                                                     \
        int j = 0;                                                                        \
        for (; j + 8 <= nc; j += 8) {                                                     \
            __m256i a = _mm256_setzero_si256();                                           \
            for (int t = 0; t < taps; t++) {                                              \
                __m256i x = CX(_mm_loadl_epi64((const __m128i *)(const void *)(src[t] + j))); \
                __m256i v = CW(_mm_loadl_epi64((const __m128i *)(const void *)(w + t * c + j))); \
                a = _mm256_add_epi32(a, _mm256_mullo_epi32(x, v));                        \
            }                                                                             \
            _mm256_storeu_si256((__m256i *)(void *)(acc + j), a);                         \
        }                                                                                 \
        for (; j < nc; j++) {                                                             \
            uint32_t a = 0;                                                               \
            for (int t = 0; t < taps; t++)                                                \
                a += (uint32_t)((int32_t)(XT)src[t][j] * (int32_t)(WT)w[t * c + j]);      \
            acc[j] = (int32_t)a;                                                          \
        }                                                                                 \
    }
QDW_AVX2(qdw_avx2_uu, _mm256_cvtepu8_epi32, _mm256_cvtepu8_epi32, uint8_t, uint8_t)
QDW_AVX2(qdw_avx2_us, _mm256_cvtepu8_epi32, _mm256_cvtepi8_epi32, uint8_t, int8_t)
QDW_AVX2(qdw_avx2_su, _mm256_cvtepi8_epi32, _mm256_cvtepu8_epi32, int8_t, uint8_t)
QDW_AVX2(qdw_avx2_ss, _mm256_cvtepi8_epi32, _mm256_cvtepi8_epi32, int8_t, int8_t)
#endif

/* The depthwise kernel for X's and W's signedness on this CPU's path. */
static qdw_fn qdw_choose(bool xs, bool ws)
{
    static const qdw_fn c[4] = {qdw_c_uu, qdw_c_us, qdw_c_su, qdw_c_ss};
    int v = (xs ? 2 : 0) + (ws ? 1 : 0);
#if defined(QDW_X86)
    static const qdw_fn a2[4] = {qdw_avx2_uu, qdw_avx2_us, qdw_avx2_su, qdw_avx2_ss};
    static const qdw_fn a5[4] = {qdw_avx512_uu, qdw_avx512_us, qdw_avx512_su, qdw_avx512_ss};
    const char *k = rx_rt_qgemm_kernel();
    if (!strcmp(k, "avx512-vnni")) return a5[v];
    if (!strcmp(k, "avx2")) return a2[v];
#endif
    return c[v];
}

/* Depthwise: the chunk's rows [p0, p0 + rows), channels [j0, j0 + nc), into c (rows NR
 * apart), each pixel's tap pointers into src (the band xt whose first row is X's row y0,
 * or the pad row): a pixel whose window lies inside X adds its offset to the taps'
 * offsets off (computed once per chunk), the others test each tap. */
static void dw_tile(const qc *q, int64_t p0, int64_t rows, const uint8_t *xt, int64_t y0, const uint8_t *zrow,
                    int64_t j0, int nc, const uint8_t **src, int32_t *c)
{
    int taps = (int)(q->kh * q->kw);
    const uint8_t **off = src + taps; /* as byte offsets from xt + j0 */
    for (int64_t i = 0, t = 0; i < q->kh; i++)
        for (int64_t j = 0; j < q->kw; j++, t++) off[t] = xt + j0 + (i * q->dh * q->w + j * q->dw) * q->c;
    int64_t oy = p0 / q->wo, ox = p0 % q->wo;
    for (int64_t r = 0; r < rows; r++) {
        int64_t iy0 = oy * q->sh - q->pt, ix0 = ox * q->sw - q->pl;
        if (iy0 >= 0 && iy0 + (q->kh - 1) * q->dh < q->h && ix0 >= 0 && ix0 + (q->kw - 1) * q->dw < q->w) {
            int64_t at = ((iy0 - y0) * q->w + ix0) * q->c;
            for (int t = 0; t < taps; t++) src[t] = off[t] + at;
        } else {
            for (int64_t i = 0; i < q->kh; i++)
                for (int64_t j = 0; j < q->kw; j++) {
                    int64_t iy = iy0 + i * q->dh, ix = ix0 + j * q->dw;
                    bool in = iy >= 0 && iy < q->h && ix >= 0 && ix < q->w;
                    src[i * q->kw + j] = (in ? xt + ((iy - y0) * q->w + ix) * q->c : zrow) + j0;
                }
        }
        q->dwk(src, q->packed + j0, q->c, taps, nc, c + r * NR);
        if (++ox == q->wo) ox = 0, oy++;
    }
}

static void qc_image(qc *q, int64_t img, int t, int nt)
{
    int64_t p = q->ho * q->wo, items = q->chunks * q->groups;
    int64_t i0 = items * t / nt, i1 = items * (t + 1) / nt;
    if (i0 >= i1) return;
    int64_t c0 = i0 / q->groups, c1 = (i1 - 1) / q->groups; /* this thread's chunks */
    int64_t pl = ((c1 + 1) * q->crows < p ? (c1 + 1) * q->crows : p) - 1; /* its last pixel */
    int64_t y0 = (c0 * q->crows / q->wo) * q->sh - q->pt, y1 = (pl / q->wo) * q->sh - q->pt + (q->kh - 1) * q->dh + 1;
    y0 = y0 < 0 ? 0 : y0;
    y1 = y1 > q->h ? q->h : y1;
    uint8_t *xt = q->xt + (int64_t)t * q->xstride;
    if (y0 < y1) to_nhwc(q, img, y0, y1, xt);
    uint8_t *abuf = q->abuf + (int64_t)t * q->astride;
    int32_t *cbuf = q->cbuf + (int64_t)t * CH * NR;
    uint32_t *rsum = q->rsum + (int64_t)t * CH;
    uint32_t oa = q->ax ? 128u : 0u, ob = q->bx ? 128u : 0u;
    if (q->dwise) {
        const uint8_t **src = (const uint8_t **)(void *)abuf, *zrow = xt + q->xstride - q->c - SLACK;
        for (int64_t it = i0; it < i1; it++) {
            int64_t ch = it / q->groups, g = it % q->groups;
            int64_t p0 = ch * q->crows, rows = p - p0 < q->crows ? p - p0 : q->crows;
            for (int64_t blk = q->nblk * g / q->groups; blk < q->nblk * (g + 1) / q->groups; blk++) {
                int64_t j0 = blk * NR;
                int nc = (int)(q->co - j0 < NR ? q->co - j0 : NR);
                dw_tile(q, p0, rows, xt, y0, zrow, j0, nc, src, cbuf);
                if (q->epi)
                    epi_tile(q, cbuf, t, img, j0, nc, p0, rows);
                else
                    store_cols(cbuf, rows, nc, q->y + (img * q->co + j0) * p + p0, p);
            }
        }
        return;
    }
    const uint8_t *ap = abuf;
    for (int64_t it = i0, have = -1; it < i1; it++) {
        int64_t ch = it / q->groups, g = it % q->groups;
        int64_t p0 = ch * q->crows, rows = p - p0 < q->crows ? p - p0 : q->crows;
        if (ch != have) { /* the chunk's A rows (and row sums), once for its groups */
            have = ch;
            ap = abuf;
            if (q->direct)
                ap = xt + (p0 - y0 * q->w) * q->c; /* wo == w, row oy is X's row oy */
            else
                im2col(q, p0, rows, xt, y0, abuf);
            if (ob)
                for (int64_t r = 0; r < rows; r++) {
                    uint32_t s = 0;
                    for (int64_t k = 0; k < q->k; k++) s += ap[r * q->kp + k];
                    rsum[r] = s;
                }
        }
        for (int64_t blk = q->nblk * g / q->groups; blk < q->nblk * (g + 1) / q->groups; blk++) {
            const int8_t *bp = (const int8_t *)(q->packed + blk * q->kp * NR);
            uint32_t colsum[NR];
            memcpy(colsum, q->packed + q->nblk * q->kp * NR + blk * NR * 4, sizeof colsum);
            int64_t j0 = blk * NR;
            int nc = (int)(q->co - j0 < NR ? q->co - j0 : NR);
            for (int64_t r = 0; r < rows; r += MR) {
                int mr = (int)(rows - r < MR ? rows - r : MR);
                q->kern(ap + r * q->kp, q->kp, bp, q->kp, mr, cbuf + r * NR, NR, nc);
            }
            rx_qpack_correct(cbuf, NR, rows, nc, rsum, colsum, oa, ob, (uint32_t)q->k);
            if (q->epi) {
                epi_tile(q, cbuf, t, img, j0, nc, p0, rows);
            } else {
                store_cols(cbuf, rows, nc, q->y + (img * q->co + j0) * p + p0, p);
            }
        }
    }
}

static void qc_run(void *ud, int t, int nt)
{
    qc *q = ud;
    for (int64_t img = 0; img < q->n; img++) qc_image(q, img, t, nt);
}

static bool byte_dtype(DLDataType d)
{
    return d.lanes == 1 && d.bits == 8 && (d.code == kDLInt || d.code == kDLUInt);
}

int32_t rx_rt_qconv2d(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 4 && (nargs < 6 || nargs > 6 + RX_QE_MAXEXT)) return QC_ARGS;
    const DLTensor *X = args[0], *B = args[1], *P = args[2], *Y = args[nargs - 1];
    rx_qepi epi;
    bool with_epi = nargs > 4;
    if (!byte_dtype(X->dtype) || B->dtype.bits != 8 || B->dtype.lanes != 1 ||
        P->dtype.code != kDLInt || P->dtype.bits != 64 || P->dtype.lanes != 1 ||
        (!with_epi && (Y->dtype.code != kDLInt || Y->dtype.bits != 32 || Y->dtype.lanes != 1)))
        return QC_DTYPE;
    if (X->ndim != 4 || Y->ndim != 4 || B->ndim != 1 || P->ndim != 1 ||
        P->shape[0] < NPARAMS || P->shape[0] > NPARAMS + 2)
        return QC_SHAPE;
    int64_t pv[NPARAMS + 2] = {0};
    memcpy(pv, (const char *)P->data + P->byte_offset, sizeof(int64_t) * (size_t)P->shape[0]);
    qc q = {.x = (const uint8_t *)X->data + X->byte_offset,
            .packed = (const uint8_t *)B->data + B->byte_offset,
            .y = (int32_t *)(void *)((char *)Y->data + Y->byte_offset),
            .n = X->shape[0], .c = X->shape[1], .h = X->shape[2], .w = X->shape[3],
            .co = Y->shape[1], .ho = Y->shape[2], .wo = Y->shape[3],
            .kh = pv[1], .kw = pv[2], .sh = pv[3], .sw = pv[4], .pt = pv[5], .pl = pv[6],
            .dh = pv[7], .dw = pv[8], .ax = X->dtype.code == kDLInt ? 0x80 : 0,
            .bx = pv[9] ? 0x80 : 0};
    /* params[10], when present: X's value at the taps outside it (a zero point), in X's
       dtype's range */
    bool pad_ok = q.ax ? pv[10] >= -128 && pv[10] <= 127 : pv[10] >= 0 && pv[10] <= 255;
    q.padb = (uint8_t)((uint8_t)pv[10] ^ q.ax);
    if (pv[0] != q.c || Y->shape[0] != q.n || q.kh < 1 || q.kw < 1 || q.sh < 1 || q.sw < 1 ||
        q.dh < 1 || q.dw < 1 || q.pt < 0 || q.pl < 0 || !pad_ok)
        return QC_SHAPE;
    /* params[11], when present: the groups, 1 or C = Co (depthwise: B the raw weight
       bytes (kh kw, C), X read as it is) */
    int64_t groups = P->shape[0] > NPARAMS + 1 ? pv[11] : 1;
    q.dwise = groups != 1;
    if (q.dwise && (groups != q.c || q.co != q.c)) return QC_SHAPE;
    if (q.dwise) {
        q.ax = 0;
        q.padb = (uint8_t)pv[10];
        q.k = q.kp = q.kh * q.kw;
        q.nblk = (q.co + NR - 1) / NR;
        if (B->shape[0] != q.k * q.c) return QC_SHAPE;
    } else {
        q.k = q.kh * q.kw * q.c;
        q.kp = rx_qpack_kp(q.k);
        q.nblk = rx_qpack_blocks(q.co);
        if (B->shape[0] != rx_qpack_bytes(q.k, q.co)) return QC_SHAPE;
    }
    int64_t p = q.ho * q.wo;
    if (with_epi && q.k == 0) return QC_SHAPE;
    if (with_epi && !rx_qepi_parse(&epi, args[3], args[4], args + 5, nargs - 6, Y)) return QC_EPI;
    q.epi = with_epi ? &epi : NULL;
    if (q.n == 0 || q.co == 0 || p == 0) {
        if (q.epi) rx_qepi_free(&epi);
        return QC_OK;
    }
    if (q.k == 0) {
        memset(q.y, 0, (size_t)(q.n * q.co * p) * sizeof *q.y);
        return QC_OK;
    }
    q.direct = q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.pt == 0 && q.pl == 0 &&
               q.c % 4 == 0 && q.ho == q.h && q.wo == q.w;
    q.kern = rx_rt_qgemm_tile();
    if (q.dwise) q.dwk = qdw_choose(X->dtype.code == kDLInt, pv[9] == 0);
    double macs = (double)q.n * (double)p * (double)q.co * (double)q.k;
    int nthr = macs < (double)(1 << 18) ? 1 : rx_rt_max_threads();
    if (nthr < 1) nthr = 1;
    /* chunks of at most CH pixels, balanced (a whole number of tiles each); when there
       are fewer than 2 a thread, the column blocks are cut into groups too (7 x 7 maps) */
    q.chunks = (p + CH - 1) / CH;
    q.crows = ((p + q.chunks - 1) / q.chunks + MR - 1) / MR * MR;
    q.chunks = (p + q.crows - 1) / q.crows;
    q.groups = 1;
    if (q.chunks < 2 * nthr) {
        int64_t want = (2 * nthr + q.chunks - 1) / q.chunks;
        q.groups = want < q.nblk ? want : q.nblk;
    }
    if (nthr > q.chunks * q.groups) nthr = (int)(q.chunks * q.groups);
    /* depthwise: the pad row after the band, the tap pointers in the A buffer */
    size_t xbytes = ((size_t)(q.h * q.w * q.c + (q.dwise ? q.c : 0)) + SLACK + 63) / 64 * 64;
    size_t arow = q.dwise ? 2 * (size_t)q.k * sizeof(uint8_t *) : (size_t)(CH * q.kp);
    size_t abytes = (arow + SLACK + 63) / 64 * 64, cbytes = (size_t)CH * NR * sizeof(int32_t);
    /* a band per thread, sized for the whole image (fewer threads than asked take
       longer bands) */
    size_t ebytes = q.epi ? 2 * (size_t)CH * NR * sizeof(float) + (size_t)CH * NR : 0;
    size_t total = (size_t)nthr * (xbytes + abytes + cbytes + CH * sizeof(uint32_t) + ebytes);
    uint8_t *mem = aligned_alloc(64, (total + 63) / 64 * 64);
    if (!mem) {
        if (q.epi) rx_qepi_free(&epi);
        return QC_NOMEM;
    }
    q.xt = mem;
    q.xstride = (int64_t)xbytes;
    q.astride = (int64_t)abytes;
    q.abuf = mem + (size_t)nthr * xbytes;
    q.cbuf = (int32_t *)(void *)(q.abuf + (size_t)nthr * abytes);
    q.rsum = (uint32_t *)(void *)(q.abuf + (size_t)nthr * (abytes + cbytes));
    q.ebuf = (uint8_t *)(q.abuf + (size_t)nthr * (abytes + cbytes + CH * sizeof(uint32_t)));
    if (q.dwise) /* the pad rows; the tiles' lanes past nc (read by the epilogue) defined */
        for (int t = 0; t < nthr; t++) {
            memset(q.xt + (size_t)(t + 1) * xbytes - (size_t)q.c - SLACK, q.padb, (size_t)q.c);
            memset((uint8_t *)q.cbuf + (size_t)t * cbytes, 0, cbytes);
        }
    if (q.epi) { /* the tiles' lanes past their rows are computed too: defined values */
        q.epi_run = rx_qepi_choose();
        memset(q.ebuf, 0, (size_t)nthr * ebytes);
    }
    rx_rt_parallel_for_n(qc_run, &q, nthr);
    free(mem);
    if (q.epi) rx_qepi_free(&epi);
    return QC_OK;
}
