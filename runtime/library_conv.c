/*
 * library_conv.c — the NCHW f32 window ops of library lowering (compiler/pass/
 * library_lower.c's conv and pool rules): blas.conv2d, convolutions as an implicit GEMM
 * on the runtime's own sgemm micro-kernel (or im2col panels on the BLAS's sgemm) with the
 * epilogue the compiler fused into the call (rt.pool2d, on this file's window rows, is
 * library_pool.c).
 *
 *   blas.conv2d (x, w, params, [bias], [residual], y)
 *     x (N, C, H, W), w (O, C / groups, KH, KW), y (N, O, OH, OW), all f32 and dense;
 *     params: i64 (11,) = stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
 *       dilation_h, dilation_w, groups, flags (1: a bias follows, 2: a residual follows),
 *       act (0: none, 1: relu, 2: clamp, 3: SiLU, 4: hardswish: library_act.c's forms),
 *       or i64 (12,) with act 5 (leaky relu, v > 0 ? v : v * slope) and the slope as the
 *       bit pattern of an f32 (not NaN), or i64 (13,) with act 2: the same and the
 *       clamp's bounds lo, hi as the bit patterns of two f32 (relu6 is clamp(0, 6);
 *       lo <= hi, neither NaN); library_conv_args.c checks and decodes them;
 *     bias: f32 with O elements (one per output channel: (O,), (O, 1, 1), (1, O, 1, 1));
 *     residual: f32 of y's shape.
 *   y = act(conv(x, w) + bias[o] + residual), in that order — the order of the bindings
 *   the call replaces, so the result is the generated loops' up to summation order
 *   (clamp is min(max(v, lo), hi), the order of the maximum and minimum it replaces).
 *
 * Two ways, by the shapes (three with $RX_GEMM=blas):
 *   - one input channel per group (depthwise, any channel multiplier): output planes split
 *     across threads; stride 1 undilated, a plane at a time through a zero-padded copy in vector
 *     registers, edges included (library_dwconv.c: ConvNeXt's 7x7, the MobileNet 3x3; dilated at
 *     stride 1 as dh x dw undilated phase planes: VAN, DeepLab); on AVX-512 CPUs strides 1 and 2
 *     undilated the same way, 16 outputs a step (rx_rt_dwconv_plane512); otherwise direct loops
 *     per output row (rx_rt_window_row: each tap row clipped to its valid outputs once, no bounds
 *     test in the inner loop); there 1 group onto 24+ outputs is the GEMM below (zoo6 conv_mfcc: 34 -> 0.68 ms);
 *   - otherwise (1x1, KxK, strides, padding, dilation, grouped): an implicit GEMM on
 *     rx_rt_gemm's micro-kernel (library_gemm.c's 6x16 AVX2 one, or its portable one):
 *     y_g (Og, OH*OW) = w_g (Og, Kc = Cg*KH*KW) @ the im2col matrix of x_g, which is
 *     never formed. The weights are packed into the kernel's 6-row panels once a call
 *     (per group and reduction block of at most IG_KC = 320 taps); x is rearranged
 *     once into zero-padded planes per stride phase (phase_planes: xt[i][j] = x[i*sh +
 *     ph - pt][j*sw + pw - pl], Hq x Wq), where tap (ch, kh, kw) of output pixel (oh,
 *     ow) is the element off[k] + oh*Wq + ow: for every tap, a run of output pixels in
 *     one row is a run of contiguous floats, and no tap needs a bounds test (a 1x1,
 *     stride-1, unpadded conv reads x itself; only the phases some tap reads are built:
 *     ResNet's 1x1 stride-2 64x56x56 -> 128 builds 1 of 4, 0.71x the time at one thread,
 *     0.72x at two, same binary otherwise). Each 16-pixel panel of B is packed from
 *     xt just before the kernel multiplies it by every row tile (pack_panel: per tap one
 *     fixed 64-byte copy per output-row run; the panel stays in L1, the weight block in
 *     L2); the kernel writes y's tiles in place (ldc = OH*OW), and the epilogue runs on
 *     each task's block while it is in cache. The weight packing units come first
 *     from one atomic counter; an image's phase planes are built (a channel a unit, by
 *     every thread that needs them) just before that image's first task, so at batch > 1
 *     they are still in L2 when read; the tasks (image, group, at most IG_PANELS = 4
 *     panels or fewer for IG_TASKS a thread, and output-channel ranges when the pixels
 *     give fewer than IG_MTASKS = 4 a thread: each range packs its pixels' B panels
 *     again) are cut into one contiguous lane a thread, each taking its own lane's from the front and, when done, the others' from
 *     their ends (lane_take): a thread works on a contiguous part of y, and no barrier
 *     waits for a thread the OS has not run yet. Tasks dealt round-robin from one
 *     counter made 2 threads no faster than one on the 1x1 and stem layers (the threads
 *     interleaved every 64 pixels of every row of y).
 *     On AVX2 + FMA CPUs the tiles are library_conv_kern.c's (rx_rt_conv_tile): the
 *     tile has the rows left (a 64-channel layer no longer computes 66) and the last
 *     reduction block applies the epilogue in registers before its only store (the
 *     probe CNN's 3x3 layers at 2 threads 0.95-0.96x, its 32-channel stem 0.87x).
 *     Wide cut: a small plane (at most IG_WIDE_PANELS panels), one group and weights
 *     of at least IG_WIDE_W floats: the pixel chunks above each read every weight
 *     (ResNet-18's 512 x 4608 on 7x7: 9.4 MB packed, written, read 4 times a call,
 *     ~30 GF/s). There, tasks are (image, at most IG_WIDE_ROWS output channels) over
 *     every pixel; the image's B panels are packed first (ig_panels, a panel a unit,
 *     like the planes) into bfull, and each task packs its own channels' weights per
 *     block (ig_task_wide): each weight read once an image, no shared weight packing
 *     (that layer 7.1 -> 5.0 ms, the 256 x 2304 on 14x14 4.4 -> 4.1 ms).
 *     With AVX-512F (rx_rt_conv_tile_kind, $RX_CONV_KERNEL) the tiles are
 *     rx_rt_conv_tile512's 12 x 32: it reads the weights unpacked (no packing units,
 *     no wp; the wide cut packs nothing either), so its row tiles may start anywhere and
 *     a task's rows are cut into equal tiles of at most 12 (ig_cut: 64 channels are
 *     11, 11, 11, 11, 10, 10, not 5 x 12 + 4), and pixel chunks are whole pairs of
 *     panels (ig->unit 32: with single panels MobileNet's 14x14 and 7x7 layers ran
 *     16-column tiles; 1.36x on the whole MobileNetV2 at one thread). A 1x1 layer's
 *     tile reads B in place (ig->inplace: tap k's row is channel k's row of xt, x itself
 *     or its stride phase, a fixed stride bld apart; a partial pair at the plane's end
 *     is packed), no packed pair (MobileNetV3's 1x1 layers 0.72-0.95x the time at 2
 *     threads). Those rows are a plane apart, streams the hardware prefetcher does not
 *     follow: the next pair's are prefetched before a pair's tiles run. KxK layers (and 1x1 ones
 *     reducing 3x their channels or more onto 32k) outside the wide cut, of whole 16-channel
 *     vectors (Og % 16 == 0), at most 128 channels a group at stride 1, when strided a
 *     group's input times its 32-channel chunks within 16 MiB (BX_STRIDED_FLOATS: the
 *     tiles read the input once a chunk), 16+ pixels and 32+ taps, run
 *     library_conv_bx.c's tiles there instead (ig->bx; $RX_CONV_BX=0:
 *     the 12 x 32 tile's way): P pixels of one output row by 32 output channels, the inputs
 *     broadcast from xt in place, the weights packed once a call in 32-channel chunks
 *     (the preparation units): no B panel (its packing was 10-20% of a 3x3 layer, perf,
 *     one thread). Tasks: (image, group, a chunk of output rows, 32-channel chunks when
 *     the rows give fewer than IG_MTASKS a thread). Bit-identical results; measurements
 *     and the ways tried in docs/runtime.md.
 *   - with $RX_GEMM=blas, the non-depthwise ones as before the implicit GEMM: im2col — a
 *     panel col (Cg*KH*KW, rows*OW) of the input taps for a band of output rows, zero
 *     where the tap falls in the padding — then y_g[band] = w_g (Og, Cg*KH*KW) @ col
 *     on the BLAS's sgemm, ldc = OH*OW (pointwise: x read in place).
 * The im2col way cuts the output into bands (image, group, output rows): the panel under
 * PANEL_FLOATS (4 MiB), two bands a thread where the output has enough rows, at least
 * LEAST_COLS columns each (OpenBLAS 0.3.21's single-threaded sgemm falls from ~33 to
 * ~11 GFLOP/s on this machine when N drops from 336 to 320 columns, at M 64..128 and
 * K 576..1152: the probe's 28x28 layers had 196-column bands). One parallel region per
 * call (rx_rt_parallel_for: the kernels' libgomp pool, so --threads applies); each
 * thread takes bands from an atomic counter and runs im2col into its own panel, a
 * single-threaded sgemm (OpenBLAS's OpenMP build runs one thread inside a parallel
 * region) and the epilogue on the band while it is warm. One region, not three a band:
 * every region's barrier waits for a thread the OS may have preempted.
 * Cost: O(N O OH OW Cg KH KW) multiply-adds; the phase planes copy O(N C Hq Wq sh sw)
 * (about x's size), B's panels O(N Cg KH KW OH OW) / (Og / 6) per group, the weights
 * once; im2col copies O(N C KH KW OH OW), 1/Og of the product's work; the epilogue
 * O(N O OH OW).
 *
 * Codes: 2 arguments, 3 dtype, 4 shape, 5 params, 6 out of memory, 1 no BLAS (only
 * with $RX_GEMM=blas).
 */
#include "rt_int.h"

#include <pthread.h>
#include <sched.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "library_conv_int.h"

#define PANEL_FLOATS ((int64_t)1 << 20) /* 4 MiB: the largest im2col panel */
#define LEAST_COLS 384                  /* the fewest columns of a band's sgemm (essay) */
#define BX_STRIDED_FLOATS ((int64_t)1 << 22) /* bx strided: input x chunks; more ran 1.08-1.45x (docs/runtime.md) */

/* One band: output rows [r0, r1) of image n, group g. */
typedef struct band {
    int64_t n, g, r0, r1;
} band;

/* dst[j] = src[2 * j] for j in [0, n), reading no further than src[2 * n - 2]: stride-2
 * convolutions' phase planes and im2col rows (the C compiler left the strided loop
 * scalar: 2.6% of the probe CNN's time at 2 threads); SSE2 shuffles on x86-64. */
static void evens(float *dst, const float *src, int64_t n)
{
    int64_t j = rx_rt_conv_evens512(dst, src, n); /* AVX-512: 16 a step */
#if defined(__SSE2__)
    for (; j + 9 <= n; j += 8) { /* reads src[2j .. 2j + 15], 2j + 15 < 2n - 2 */
        const float *s = src + 2 * j;
        __m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + 4);
        __m128 c = _mm_loadu_ps(s + 8), d = _mm_loadu_ps(s + 12);
        _mm_storeu_ps(dst + j, _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm_storeu_ps(dst + j + 4, _mm_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)));
    }
#endif
    for (; j < n; j++) dst[j] = src[2 * j];
}

/* dst[j] = row ih of plane xp at column j * sw + off for j in [0, n), 0 outside the
 * plane ([lo, hi): the j inside it along the row, valid_range). */
static void tap_row(const conv *c, const float *xp, int64_t ih, int64_t off, int64_t lo,
                    int64_t hi, int64_t n, float *dst)
{
    if (ih < 0 || ih >= c->H || lo == hi) {
        memset(dst, 0, sizeof(float) * (size_t)n);
        return;
    }
    const float *row = xp + ih * c->W + off;
    for (int64_t j = 0; j < lo; j++) dst[j] = 0.0f;
    if (c->sw == 1) memcpy(dst + lo, row + lo, sizeof(float) * (size_t)(hi - lo));
    else if (c->sw == 2) evens(dst + lo, row + 2 * lo, hi - lo);
    else
        for (int64_t j = lo; j < hi; j++) dst[j] = row[j * c->sw];
    for (int64_t j = hi; j < n; j++) dst[j] = 0.0f;
}

/* ---- im2col: panel rows q = (c, kh, kw), columns (r - r0) * OW + ow ---- */

static void im2col(const conv *c, const band *bd, float *col)
{
    int64_t KK = c->KH * c->KW, cols = (bd->r1 - bd->r0) * c->OW;
    for (int64_t q = 0; q < c->Kc; q++) {
        int64_t ch = q / KK, kh = q % KK / c->KW, kw = q % c->KW;
        const float *xp = c->x + ((bd->n * c->C + bd->g * c->Cg + ch) * c->H) * c->W;
        float *dst = col + q * cols;
        int64_t off = kw * c->dw - c->pl, lo, hi;
        rx_rt_valid_range(c->OW, c->W, c->sw, off, &lo, &hi);
        for (int64_t r = bd->r0; r < bd->r1; r++, dst += c->OW)
            tap_row(c, xp, r * c->sh - c->pt + kh * c->dh, off, lo, hi, c->OW, dst);
    }
}

/* ---- the epilogue over one plane's span [0, len) of output channel o ---- */

/* dst[i] = act(src[i] + bias[o] + res[i]), the terms present (src may be dst): one
 * simple loop per case, each vectorized by the compiler (one loop testing every case per
 * element was not, and its relu branch mispredicted on every other element). */
static void epi_copy(const conv *c, int64_t o, float *dst, const float *src, const float *res,
                     int64_t len)
{
    float b = c->bias ? c->bias[o] : 0.0f;
    if (c->bias && res)
        for (int64_t i = 0; i < len; i++) dst[i] = src[i] + b + res[i];
    else if (c->bias)
        for (int64_t i = 0; i < len; i++) dst[i] = src[i] + b;
    else if (res)
        for (int64_t i = 0; i < len; i++) dst[i] = src[i] + res[i];
    else if (dst != src)
        memcpy(dst, src, sizeof(float) * (size_t)len);
    if (c->act == CV_ACT_RELU)
        for (int64_t i = 0; i < len; i++) dst[i] = dst[i] > 0.0f ? dst[i] : 0.0f;
    if (c->act == CV_ACT_CLAMP) {
        float lo = c->lo, hi = c->hi;
        for (int64_t i = 0; i < len; i++) {
            float v = dst[i] > lo ? dst[i] : lo;
            dst[i] = v < hi ? v : hi;
        }
    }
    if (c->act == CV_ACT_LEAKY) {
        float a = c->lo;
        for (int64_t i = 0; i < len; i++) dst[i] = dst[i] > 0.0f ? dst[i] : dst[i] * a;
    }
    if (rx_rt_conv_act_rt(c->act)) rx_rt_epilogue_rows(dst, 1, len, len, NULL, rx_rt_conv_act_rt(c->act));
}

static void epilogue(const conv *c, int64_t o, float *y, const float *res, int64_t len)
{
    epi_copy(c, o, y, y, res, len);
}

/* ---- the sgemm ways: band tasks taken from c->next by every thread ---- */

/* The rows of a band: the panel under PANEL_FLOATS, 2 tasks a thread when the output
 * allows (taken dynamically: a thread the OS preempts delays the call by one band, not by
 * half of it), at least LEAST_COLS columns a sgemm. */
static int64_t band_rows(const conv *c, int nthreads)
{
    int64_t planes = c->N * c->groups, per_plane = (2 * nthreads + planes - 1) / planes;
    int64_t rows = (c->OH + per_plane - 1) / per_plane, cap = PANEL_FLOATS / (c->Kc * c->OW);
    int64_t least = (LEAST_COLS + c->OW - 1) / c->OW;
    if (!c->pointwise && rows > cap) rows = cap;
    if (rows < least) rows = least;
    return rows < 1 ? 1 : rows > c->OH ? c->OH : rows;
}

static void gemm_job(void *ud, int t, int nthreads)
{
    (void)t;
    conv *c = ud;
    int64_t rows = band_rows(c, nthreads), nb = (c->OH + rows - 1) / rows, plane = c->OH * c->OW;
    int64_t total = c->N * c->groups * nb;
    float *col = NULL;
    if (!c->pointwise && !(col = malloc(sizeof(float) * (size_t)(c->Kc * rows * c->OW)))) {
        c->failed = 1;
        return;
    }
    for (int64_t k; (k = atomic_fetch_add(&c->next, 1)) < total;) {
        band bd = {k / nb / c->groups, k / nb % c->groups, k % nb * rows, 0};
        bd.r1 = bd.r0 + rows < c->OH ? bd.r0 + rows : c->OH;
        const float *b = c->x + (bd.n * c->C + bd.g * c->Cg) * c->H * c->W + bd.r0 * c->OW;
        int ldb = (int)plane, cols = (int)((bd.r1 - bd.r0) * c->OW);
        if (!c->pointwise) {
            im2col(c, &bd, col);
            b = col, ldb = cols;
        }
        float *y = c->y + (bd.n * c->O + bd.g * c->Og) * plane + bd.r0 * c->OW;
        /* CblasRowMajor = 101, CblasNoTrans = 111 */
        c->sgemm(101, 111, 111, (int)c->Og, cols, (int)c->Kc, 1.0f, c->w + bd.g * c->Og * c->Kc,
                 (int)c->Kc, b, ldb, 0.0f, y, (int)plane);
        for (int64_t o = 0; o < c->Og && (c->bias || c->res || c->act); o++) {
            int64_t at = (y - c->y) + o * plane;
            epilogue(c, bd.g * c->Og + o, c->y + at, c->res ? c->res + at : NULL, cols);
        }
    }
    free(col);
}

/* ---- the implicit GEMM: B's panels packed straight from x (no im2col panel) ---- */

enum { IG_KC = 320,    /* the most reduction indices a block (a B panel: 20 KiB, in L1) */
       IG_PANELS = 4,  /* the most NR-pixel panels a task (a short tail: the essay) */
       IG_TASKS = 16,  /* tasks a thread, at least, where the pixels allow */
       IG_MTASKS = 4,  /* tasks a thread below which the output channels are cut too */
       IG_SPINS = 1 << 14, /* pauses before ig_wait yields (~1 ms on Zen 1) */
       IG_WIDE_PANELS = 16, /* wide: at most this many NR-pixel panels an image */
       IG_WIDE_ROWS = 8 * RX_GEMM_MR, /* wide: the most output channels a task */
       IG_WIDE_W = 1 << 18 }; /* wide: weights of at least this many floats (1 MiB: at
                               * 590 KiB, 8 images of 14x14, the pixel chunks were 8% faster) */
#define IG_PB ((IG_KC + 1) * RX_GEMM_NR) /* floats of a B panel, + NR: pack_panel's slack */
#define IG_WIDE_B ((int64_t)1 << 20) /* wide: the most floats of B's panels an image */

/* The call's plan. xt holds, per image, channel and stride phase (ph, pw), the plane
 * xt[i][j] = x[i * sh + ph - pt][j * sw + pw - pl] (0 in the padding), Hq x Wq: then
 * the tap k = (ch * KH + kh) * KW + kw of output pixel (oh, ow) is xt's element off[k] +
 * oh * Wq + ow of the image (Wq >= OW: the "virtual" pixel; a run of output pixels in one
 * row is a run of contiguous floats for every tap). A pointwise conv uses x itself. */
typedef struct igemm {
    conv *c;
    rx_rt_gemm_kern_fn kern;
    int tile;                   /* RX_CONV_TILE_*: a tile with the epilogue in it, or kern */
    int64_t mt;                 /* rows a tile call takes: 12 (AVX-512 tile) or RX_GEMM_MR */
    bool wide;                  /* small planes: weights streamed once (ig_task_wide) */
    bool bx;                    /* KxK on AVX-512: library_conv_bx.c's tiles (ig_task_bx) */
    float *bfull;               /* wide: B's panels, per image, block and panel */
    int64_t pstride;            /* wide: floats a panel of bfull (kcb + 1 rows of NR) */
    float *wp;                  /* w packed: block (g, b) at wp + (g * nkb + b) * wstride */
    int64_t nkb, kcb, wstride;  /* reduction blocks, their size (the last may be less) */
    bool inplace;               /* 1x1 on the AVX-512 tile: B is xt's rows, unpacked */
    int64_t bld;                /* inplace: floats from one channel's row to the next's */
    const float *xt;            /* the phase planes (x itself when pointwise) */
    float *xbuf;                /* xt's storage (NULL when pointwise) */
    int64_t *off;               /* Kc tap offsets into one group's planes */
    int64_t Hq, Wq, img;        /* xt's plane extents and floats per image */
    int64_t panels, nchunk, mchunks, mrows, tasks; /* the task cut (plan_tasks) */
    int64_t unit, units;        /* pixels a chunk is a multiple of, and units a plane */
    _Atomic int64_t *imgs;      /* per image n: [4n] channels claimed, [4n + 1] built;
                                 * wide: [4n + 2] B panels claimed, [4n + 3] built */
    _Atomic uint64_t *lanes;    /* per thread, its tasks' state (lane_take); 0 at the start */
} igemm;

/* How a call is cut into tasks: per (image, group), nchunk pixel chunks of whole
 * NR-pixel panels (at most IG_PANELS each) times mchunks output-channel chunks of mrows
 * rows (an MR multiple); the channels are cut only when the pixels give fewer than
 * IG_MTASKS tasks a thread (small planes at batch 1). */
static void plan_tasks(igemm *ig, int nt)
{
    const conv *c = ig->c;
    int64_t base = c->N * c->groups, want = (int64_t)IG_TASKS * nt;
    int64_t tiles = (c->Og + RX_GEMM_MR - 1) / RX_GEMM_MR;
    ig->panels = (c->OH * c->OW + RX_GEMM_NR - 1) / RX_GEMM_NR;
    if (ig->bx) { /* chunks of output rows, then of 32 channels below IG_MTASKS a thread */
        int64_t per = (want + base - 1) / base, chunks = (c->Og + 31) / 32;
        ig->nchunk = per < c->OH ? per : c->OH;
        int64_t m = ((int64_t)IG_MTASKS * nt + base * ig->nchunk - 1) / (base * ig->nchunk);
        ig->mchunks = m < chunks ? m : chunks;
        ig->mrows = (chunks + ig->mchunks - 1) / ig->mchunks * 32;
        ig->mchunks = (c->Og + ig->mrows - 1) / ig->mrows;
        ig->tasks = base * ig->nchunk * ig->mchunks;
        return;
    }
    if (ig->wide) { /* every panel a task; rows cut to give `want` tasks, at most WIDE_ROWS */
        int64_t per = (want + base - 1) / base, rows = (tiles + per - 1) / per * RX_GEMM_MR;
        ig->mrows = rows > IG_WIDE_ROWS ? IG_WIDE_ROWS : rows;
        ig->nchunk = 1, ig->mchunks = (c->Og + ig->mrows - 1) / ig->mrows;
        ig->tasks = base * ig->mchunks;
        return;
    }
    /* pixel chunks of whole units: a panel, or for the AVX-512 tile two (its 32 columns;
     * single panels left 12 x 16 tiles on MobileNet's 14x14 and 7x7 1x1 layers) */
    int64_t up = ig->tile == RX_CONV_TILE_AVX512 ? 2 : 1, units = (ig->panels + up - 1) / up;
    ig->unit = up * RX_GEMM_NR;
    ig->nchunk = (units + IG_PANELS / up - 1) / (IG_PANELS / up);
    int64_t more = (want + base - 1) / base; /* chunks an (image, group) for `want` tasks */
    if (ig->nchunk < more) ig->nchunk = more < units ? more : units;
    ig->units = units;
    int64_t mwant = (int64_t)IG_MTASKS * nt; /* each channel chunk packs B again */
    ig->mchunks = (mwant + base * ig->nchunk - 1) / (base * ig->nchunk);
    if (ig->mchunks > tiles) ig->mchunks = tiles;
    ig->mrows = (tiles + ig->mchunks - 1) / ig->mchunks * RX_GEMM_MR;
    ig->mchunks = (c->Og + ig->mrows - 1) / ig->mrows;
    ig->tasks = base * ig->nchunk * ig->mchunks;
}

/* The phase planes of image n, channel ch into xt (layout: igemm's essay). */
static void phase_planes(const igemm *ig, int64_t n, int64_t ch)
{
    const conv *c = ig->c;
    const float *xp = c->x + (n * c->C + ch) * c->H * c->W;
    float *dst = ig->xbuf + n * ig->img + ch * c->sh * c->sw * ig->Hq * ig->Wq;
    for (int64_t ph = 0; ph < c->sh; ph++)
        for (int64_t pw = 0; pw < c->sw; pw++) {
            bool uh = false, uw = false; /* a tap reads it (a 1x1 stride 2: 1 phase of 4) */
            for (int64_t k = 0; k < c->KH; k++) uh |= k * c->dh % c->sh == ph;
            for (int64_t k = 0; k < c->KW; k++) uw |= k * c->dw % c->sw == pw;
            int64_t off = pw - c->pl, lo, hi; /* columns j with j * sw + off in [0, W) */
            rx_rt_valid_range(ig->Wq, c->W, c->sw, off, &lo, &hi);
            float *d = dst + (ph * c->sw + pw) * ig->Hq * ig->Wq;
            for (int64_t i = 0; i < ig->Hq && uh && uw; i++, d += ig->Wq)
                tap_row(c, xp, i * c->sh + ph - c->pt, off, lo, hi, ig->Wq, d);
        }
}

/* One NR-pixel panel into dst (kc rows of NR, and NR floats of slack after them): rows
 * the taps [k0, k0 + kc) of group g, columns the output pixels [q, q + nr) of image n
 * (oh * OW + ow); columns past nr are 0. The panel is cut at output rows into runs, each
 * contiguous in xt (virtual pixel oh * Wq + ow); per row of the panel, each run is one
 * whole 16-float copy from its first column on, the next run overwriting the excess
 * (the last row's lands in the slack): fixed-size copies, no per-tap bounds tests.
 * With the AVX-512 tile the same floats move 64 bytes at a time (rx_rt_conv_pack512;
 * x itself with a partial panel: one masked load of the nr floats): the baseline build's
 * 16-float memcpy is four 16-byte loads and stores, and this packing was 7.5% of
 * ResNet-18 and 9% of MobileNetV2 at one thread (perf). One thread, batch 1, min of 5
 * rounds of 15 calls, same artifact, load 6: ResNet-18 0.97x the time, MobileNetV2
 * 0.95x, the small CNN 0.96x (perf stat task-clock of 100 calls: 0.97x, 0.95x). */
static void pack_panel(const igemm *ig, const float *xg, int64_t k0, int64_t kc, int64_t q,
                       int64_t nr, float *dst)
{
    enum { NR = RX_GEMM_NR };
    const conv *c = ig->c;
    const int64_t *off = ig->off + k0;
    int64_t rj[NR], rv[NR], runs = 0;
    for (int64_t j = 0; j < nr; runs++) {
        int64_t oh = (q + j) / c->OW, ow = (q + j) % c->OW;
        rj[runs] = j, rv[runs] = oh * ig->Wq + ow;
        j += c->OW - ow;
    }
    if (ig->tile == RX_CONV_TILE_AVX512) { /* the same floats, 64 bytes a move */
        int64_t q0[1] = {q};
        if (!ig->xbuf) rx_rt_conv_pack512(xg, off, kc, rj, q0, 1, nr, nr < NR, dst);
        else rx_rt_conv_pack512(xg, off, kc, rj, rv, runs, nr, false, dst);
        return;
    }
    if ((runs == 1 || !ig->xbuf) && nr == NR) { /* x itself: Wq = OW, one run */
        const float *src = xg + rv[0];
        for (int64_t p = 0; p < kc; p++) {
#if defined(__GNUC__) || defined(__clang__)
            /* the panel after next (the rows are a plane apart: the hardware prefetcher
             * does not follow them); a prefetch past the end does not fault */
            __builtin_prefetch(src + off[p] + 2 * NR);
#endif
            memcpy(dst + p * NR, src + off[p], sizeof(float) * NR);
        }
        return;
    }
    if (!ig->xbuf) { /* x itself, nothing readable past its end */
        for (int64_t p = 0; p < kc; p++, dst += NR) {
            memcpy(dst, xg + off[p] + q, sizeof(float) * (size_t)nr);
            memset(dst + nr, 0, sizeof(float) * (size_t)(NR - nr));
        }
        return;
    }
    for (int64_t p = 0; p < kc; p++, dst += NR) {
        for (int64_t r = 0; r < runs; r++)
            memcpy(dst + rj[r], xg + off[p] + rv[r], sizeof(float) * NR);
        if (nr < NR) memset(dst + nr, 0, sizeof(float) * (size_t)(NR - nr));
    }
}

/* The mr x nr corner of one micro-tile at y (row stride ldy): the kernel straight into y
 * when the tile is whole, else through a buffer; beta 0 writes, 1 accumulates. */
static void ig_tile(rx_rt_gemm_kern_fn kern, int64_t kc, const float *ap, const float *bp,
                    float *y, int64_t ldy, int64_t mr, int64_t nr, float beta)
{
    if (mr == RX_GEMM_MR && nr == RX_GEMM_NR) {
        kern(kc, ap, bp, RX_GEMM_NR, y, ldy, 1.0f, beta);
        return;
    }
    float t[RX_GEMM_MR * RX_GEMM_NR];
    kern(kc, ap, bp, RX_GEMM_NR, t, RX_GEMM_NR, 1.0f, 0.0f);
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++)
            y[i * ldy + j] = t[i * RX_GEMM_NR + j] + (beta != 0.0f ? y[i * ldy + j] : 0.0f);
}

/* One micro-tile of y at yt (output channel o of the image is its first row): the
 * tile with the epilogue in it (the last block), or the GEMM kernel (ig_epilogue later). */
static void ig_put(const igemm *ig, int64_t kc, const float *ap, const float *bp, int64_t bs,
                   int64_t bld, float *yt, int64_t o, int64_t mr, int64_t nr, bool acc, bool epi)
{
    const conv *c = ig->c;
    int64_t ldy = c->OH * c->OW;
    if (ig->tile == RX_CONV_TILE_AVX512) { /* ap: the weights' row o at the block's start */
        rx_rt_conv_epi e = {c->bias ? c->bias + o : NULL, c->res ? c->res + (yt - c->y) : NULL,
                            c->act, c->lo, c->hi};
        rx_rt_conv_tile512(kc, ap, c->Kc, bp, bs, bld, yt, ldy, (int)mr, (int)nr, acc,
                           epi ? &e : NULL);
        return;
    }
    for (int64_t i = 0; i < mr; i += RX_GEMM_MR) { /* mr <= ig->mt = RX_GEMM_MR here */
        int64_t r = mr - i < RX_GEMM_MR ? mr - i : RX_GEMM_MR;
        float *yi = yt + i * ldy;
        if (!ig->tile) {
            ig_tile(ig->kern, kc, ap + i * kc, bp, yi, ldy, r, nr, acc ? 1.0f : 0.0f);
            continue;
        }
        rx_rt_conv_epi e = {c->bias ? c->bias + o + i : NULL,
                            c->res ? c->res + (yi - c->y) : NULL, c->act, c->lo, c->hi};
        rx_rt_conv_tile(kc, ap + i * kc, bp, yi, ldy, (int)r, (int)nr, acc, epi ? &e : NULL);
    }
}

/* The rows [m0, m1) of a task cut into tiles: ig_cut_next gives each tile's first row and
 * row count in turn. Packed 6-row panels: RX_GEMM_MR rows from m0 on (the last tile the
 * rest). The AVX-512 tile reads the weights unpacked, so a tile may start on any row: nt
 * tiles of equal sizes, tile t from m0 + len t / nt (64 channels: 11, 11, 11, 11, 10, 10,
 * not five 12s and a 4: a tile of fewer than 8 rows leaves the two FMA pipes waiting on
 * its chains), stepped without a division a tile (len / nt rows, one more where the
 * running remainder passes nt: the divisions were 7% of a 3-channel stem's time). */
typedef struct ig_cut {
    int64_t i, m1, nt, q, r, acc; /* next row, end, tiles, len / nt, len % nt, r t mod nt */
} ig_cut;

static ig_cut ig_cut_of(const igemm *ig, int64_t m0, int64_t m1)
{
    int64_t nt = (m1 - m0 + ig->mt - 1) / ig->mt; /* m1 > m0: nt >= 1 */
    if (ig->tile != RX_CONV_TILE_AVX512) return (ig_cut){m0, m1, nt, RX_GEMM_MR, 0, 0};
    return (ig_cut){m0, m1, nt, (m1 - m0) / nt, (m1 - m0) % nt, 0};
}

static int64_t ig_cut_next(ig_cut *u, int64_t *i)
{
    bool up = u->acc + u->r >= u->nt;
    int64_t mr = u->q + up < u->m1 - u->i ? u->q + up : u->m1 - u->i;
    u->acc += up ? u->r - u->nt : u->r;
    *i = u->i, u->i += mr;
    return mr;
}

/* Without the fused tile: the epilogue on output channels [o0, o1) of image n, pixels
 * [q0, q1). */
static void ig_epilogue(const igemm *ig, int64_t n, int64_t o0, int64_t o1, int64_t q0, int64_t q1)
{
    const conv *c = ig->c;
    for (int64_t o = o0; o < o1 && !ig->tile && (c->bias || c->res || c->act); o++) {
        int64_t at = (n * c->O + o) * c->OH * c->OW + q0;
        epilogue(c, o, c->y + at, c->res ? c->res + at : NULL, q1 - q0);
    }
}

/* Task k of the cut (plan_tasks): the product of its pixel chunk and output channels,
 * then the epilogue on the block while it is in cache. */
static void ig_task(const igemm *ig, int64_t k, float *pb)
{
    const conv *c = ig->c;
    int64_t plane = c->OH * c->OW, gplanes = ig->img / c->C * c->Cg;
    int64_t mc = k % ig->mchunks, pc = k / ig->mchunks % ig->nchunk;
    int64_t g = k / ig->mchunks / ig->nchunk % c->groups;
    int64_t n = k / ig->mchunks / ig->nchunk / c->groups;
    int64_t m0 = mc * ig->mrows, m1 = m0 + ig->mrows < c->Og ? m0 + ig->mrows : c->Og;
    int64_t q0 = pc * ig->units / ig->nchunk * ig->unit;
    int64_t q1 = (pc + 1) * ig->units / ig->nchunk * ig->unit;
    q1 = q1 < plane ? q1 : plane;
    const float *xg = ig->xt + n * ig->img + g * gplanes;
    float *yg = c->y + (n * c->O + g * c->Og) * plane;
    ig_cut cut = ig_cut_of(ig, m0, m1);
    for (int64_t b = 0; b < ig->nkb; b++) {
        int64_t k0 = b * ig->kcb, kc = c->Kc - k0 < ig->kcb ? c->Kc - k0 : ig->kcb;
        bool raw = ig->tile == RX_CONV_TILE_AVX512; /* the weights unpacked */
        const float *ap = raw ? c->w + g * c->Og * c->Kc + k0
                              : ig->wp + (g * ig->nkb + b) * ig->wstride;
        bool epi = b == ig->nkb - 1 && (c->bias || c->res || c->act);
        int64_t step = raw ? 2 * RX_GEMM_NR : RX_GEMM_NR; /* AVX-512: two panels a tile */
        for (int64_t q = q0; q < q1; q += step) {
            int64_t nr = q1 - q < step ? q1 - q : step;
            /* B: the packed pair, or x's rows themselves (ig->inplace, a whole pair: the
             * tile reads all 32 columns; a partial one is packed) */
            bool inpl = ig->inplace && nr == step;
            const float *bp = inpl ? xg + ig->off[k0] + q : pb;
            int64_t bs = inpl ? RX_GEMM_NR : IG_PB, bld = inpl ? ig->bld : RX_GEMM_NR;
            if (inpl && q + step < q1) /* the next pair's rows: bld apart, unfollowed */
                for (int64_t p = 0; p < kc; p++) {
                    __builtin_prefetch(bp + p * bld + step);
                    __builtin_prefetch(bp + p * bld + step + RX_GEMM_NR);
                }
            if (!inpl) {
                pack_panel(ig, xg, k0, kc, q, nr < RX_GEMM_NR ? nr : RX_GEMM_NR, pb);
                if (nr > RX_GEMM_NR) pack_panel(ig, xg, k0, kc, q + RX_GEMM_NR, nr - RX_GEMM_NR, pb + IG_PB);
            }
            for (ig_cut u = cut; u.i < m1;) {
                int64_t i, mr = ig_cut_next(&u, &i);
                ig_put(ig, kc, ap + i * (raw ? c->Kc : kc), bp, bs, bld, yg + i * plane + q,
                       g * c->Og + i, mr, nr, b > 0, epi);
            }
        }
    }
    ig_epilogue(ig, n, g * c->Og + m0, g * c->Og + m1, q0, q1);
}

/* Task k of a wide cut (plan_tasks; image k / mchunks, its output channels chunk k %
 * mchunks, every pixel): per reduction block, the chunk's weights packed into ab
 * (IG_WIDE_ROWS x kcb: L1/L2) and multiplied by every prepacked panel of B (ig_panels:
 * L2), so each weight is read once a call (and once an image), not once per pixel chunk. */
static void ig_task_wide(const igemm *ig, int64_t k, float *ab)
{
    const conv *c = ig->c;
    int64_t plane = c->OH * c->OW, n = k / ig->mchunks, m0 = k % ig->mchunks * ig->mrows;
    int64_t m1 = m0 + ig->mrows < c->Og ? m0 + ig->mrows : c->Og;
    float *yn = c->y + n * c->O * plane;
    for (int64_t b = 0; b < ig->nkb; b++) {
        int64_t k0 = b * ig->kcb, kc = c->Kc - k0 < ig->kcb ? c->Kc - k0 : ig->kcb;
        const float *bb = ig->bfull + (n * ig->nkb + b) * ig->panels * ig->pstride;
        bool epi = b == ig->nkb - 1 && (c->bias || c->res || c->act);
        bool raw = ig->tile == RX_CONV_TILE_AVX512; /* the weights unpacked */
        if (!raw) rx_rt_gemm_pack_a(ab, c->w + m0 * c->Kc + k0, c->Kc, m1 - m0, kc);
        int64_t step = raw ? 2 : 1; /* panels a tile (AVX-512: two) */
        for (ig_cut u = ig_cut_of(ig, m0, m1); u.i < m1;) {
            int64_t i, mr = ig_cut_next(&u, &i);
            for (int64_t q = 0; q < ig->panels; q += step) {
                int64_t nr = plane - q * RX_GEMM_NR, most = step * RX_GEMM_NR;
                ig_put(ig, kc, raw ? c->w + i * c->Kc + k0 : ab + (i - m0) * kc,
                       bb + q * ig->pstride, ig->pstride, RX_GEMM_NR,
                       yn + i * plane + q * RX_GEMM_NR, i, mr, nr < most ? nr : most, b > 0, epi);
            }
        }
    }
    ig_epilogue(ig, n, m0, m1, 0, plane);
}

/* Lane l of nt: the tasks [tasks * l / nt, tasks * (l + 1) / nt), taken from the front by
 * its thread and from the back by the others once theirs are done. Its state is one word
 * changed by compare-and-swap: LANE_ON | end << 32 | front, both relative to the lane's
 * first task (below 2^31: igemm_job); 0 is "not started" (the first taker, owner or not,
 * sets the whole lane; LANE_ON keeps an emptied lane from reading as 0 again), so a
 * thread that has not run yet leaves its lane to the others. Returns the task, or -1. */
#define LANE_ON ((uint64_t)1 << 63)
static int64_t lane_take(const igemm *ig, int64_t l, int nt, bool back)
{
    int64_t lo = ig->tasks * l / nt, len = ig->tasks * (l + 1) / nt - lo;
    _Atomic uint64_t *st = &ig->lanes[l];
    uint64_t v = atomic_load(st);
    if (v == 0) {
        uint64_t want = LANE_ON | (uint64_t)len << 32;
        if (atomic_compare_exchange_strong(st, &v, want)) v = want;
    }
    for (;;) {
        uint64_t f = v & 0xffffffffu, e = v >> 32 & 0x7fffffffu;
        if (f >= e) return -1;
        uint64_t nv = back ? LANE_ON | (e - 1) << 32 | f : v + 1;
        if (atomic_compare_exchange_weak(st, &v, nv)) return lo + (int64_t)(back ? e - 1 : f);
    }
}

/* Until *done reaches want (preparation units done): a short spin (the last unit takes
 * tens of microseconds); sched_yield only after a millisecond (the unit's thread
 * preempted). A yield from the start gave the core to any other process on the machine
 * until the next scheduler tick: 4 ms stalls under load, 2-thread calls slower than
 * 1-thread ones. */
static void ig_wait(_Atomic int64_t *done, int64_t want)
{
    for (int64_t spins = 0; atomic_load_explicit(done, memory_order_acquire) < want; spins++) {
        if (spins < IG_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}

/* Image n's phase planes, built before its first task: the channels claimed one at a
 * time from the image's counter (every thread that needs the image helps), then a wait
 * for the ones other threads claimed. */
static void ig_image(const igemm *ig, int64_t n)
{
    const conv *c = ig->c;
    _Atomic int64_t *claim = &ig->imgs[4 * n], *built = claim + 1;
    if (atomic_load_explicit(built, memory_order_acquire) == c->C) return;
    for (int64_t ch; (ch = atomic_fetch_add(claim, 1)) < c->C;) {
        phase_planes(ig, n, ch);
        atomic_fetch_add_explicit(built, 1, memory_order_release);
    }
    ig_wait(built, c->C);
}

/* Wide: image n's B panels packed (after its planes) into bfull, a panel at a time
 * claimed from the image's counter, as ig_image. */
static void ig_panels(const igemm *ig, int64_t n)
{
    const conv *c = ig->c;
    _Atomic int64_t *claim = &ig->imgs[4 * n + 2], *built = claim + 1;
    int64_t plane = c->OH * c->OW;
    if (atomic_load_explicit(built, memory_order_acquire) == ig->panels) return;
    for (int64_t q; (q = atomic_fetch_add(claim, 1)) < ig->panels;) {
        int64_t nr = plane - q * RX_GEMM_NR < RX_GEMM_NR ? plane - q * RX_GEMM_NR : RX_GEMM_NR;
        for (int64_t b = 0; b < ig->nkb; b++) {
            int64_t k0 = b * ig->kcb, kc = c->Kc - k0 < ig->kcb ? c->Kc - k0 : ig->kcb;
            pack_panel(ig, ig->xt + n * ig->img, k0, kc, q * RX_GEMM_NR, nr,
                       ig->bfull + ((n * ig->nkb + b) * ig->panels + q) * ig->pstride);
        }
        atomic_fetch_add_explicit(built, 1, memory_order_release);
    }
    ig_wait(built, ig->panels);
}

/* Task k of a bx cut (plan_tasks: image, group, a chunk of output rows, of 32-channel
 * chunks): library_conv_bx.c's tiles over those rows and channels. */
static void ig_task_bx(const igemm *ig, int64_t k)
{
    const conv *c = ig->c;
    int64_t plane = c->OH * c->OW, mc = k % ig->mchunks, pc = k / ig->mchunks % ig->nchunk;
    int64_t g = k / ig->mchunks / ig->nchunk % c->groups, n = k / ig->mchunks / ig->nchunk / c->groups;
    int64_t m0 = mc * ig->mrows, m1 = m0 + ig->mrows < c->Og ? m0 + ig->mrows : c->Og;
    int64_t at = (n * c->O + g * c->Og) * plane;
    rx_rt_conv_bx a = {ig->xt + n * ig->img + g * (ig->img / c->C * c->Cg), ig->off,
                       ig->wp + g * ig->wstride, c->Kc, ig->kcb, ig->Wq, c->OW, plane, c->y + at,
                       c->bias ? c->bias + g * c->Og : NULL, c->res ? c->res + at : NULL, c->act,
                       c->lo, c->hi};
    rx_rt_conv_bx_rows(&a, pc * c->OH / ig->nchunk, (pc + 1) * c->OH / ig->nchunk, m0, m1);
}

/* Task k after what it reads: its image's planes (ig_image; wide: and B's panels) and,
 * on the thread's first task, every packed weight block (nw units; after the image, so
 * that a thread builds planes while another still packs weights). pb: a B panel, or
 * wide, the task's packed weights. */
static void ig_run(igemm *ig, int64_t k, int64_t nw, bool *weighed, float *pb)
{
    int64_t n = ig->wide ? k / ig->mchunks : k / ig->mchunks / ig->nchunk / ig->c->groups;
    if (ig->xbuf) ig_image(ig, n);
    if (ig->wide) {
        ig_panels(ig, n);
        ig_task_wide(ig, k, pb);
        return;
    }
    if (!*weighed) ig_wait(&ig->c->prepped, nw), *weighed = true;
    if (ig->bx) ig_task_bx(ig, k);
    else ig_task(ig, k, pb);
}

static void igemm_job(void *ud, int t, int nt)
{
    igemm *shared = ud, me = *shared, *ig = &me; /* the cut is this thread's (the same) */
    conv *c = ig->c;
    plan_tasks(ig, nt);
    /* The first units of a shared counter pack the weights (one reduction block of a
     * group each, with its own slack (rt_int.h): no thread writes into another's); an
     * image's phase planes are built just before its first task (ig_image: at batch > 1
     * the planes of every image first left them in L3 by the time their tasks ran, and
     * the threads waited for each other's images). Then each thread takes the tasks of
     * its own lane in order (a
     * contiguous run of pixel chunks: its rows of y and x are streams the prefetchers
     * follow, and no cache line is written by both threads; tasks dealt from one counter
     * interleaved the threads every 64 pixels, and 2 threads ran the 1x1 and stem layers
     * no faster than one), then the others' lanes from their ends. No barrier: a thread
     * the OS has not started yet (or preempted) leaves its share to the others. */
    int64_t nw = ig->bx ? c->groups * ((c->Og + 31) / 32)
                 : ig->wide || ig->tile == RX_CONV_TILE_AVX512 ? 0 : c->groups * ig->nkb;
    bool weighed = false;
    _Alignas(64) float pbuf[2 * IG_PB]; /* two B panels (AVX-512 tile), else one */
    float *pb = pbuf; /* wide: the task's weights (+ 8: pack_a's slack) */
    if (ig->wide && ig->tile != RX_CONV_TILE_AVX512 && !(pb = malloc(sizeof(float) * (size_t)(IG_WIDE_ROWS * ig->kcb + 8)))) {
        c->failed = 1; /* this thread's lane is left to the others */
        return;
    }
    for (int64_t k; (k = atomic_fetch_add(&c->next, 1)) < nw;) {
        int64_t g = k / ig->nkb, k0 = k % ig->nkb * ig->kcb, j = k % (nw / c->groups) * 32;
        int64_t kc = c->Kc - k0 < ig->kcb ? c->Kc - k0 : ig->kcb, r = c->Og - j < 32 ? c->Og - j : 32;
        if (ig->bx) /* bx: group k / chunks' 32-channel chunk j (its r rows) */
            rx_rt_conv_bx_pack(ig->wp + k / (nw / c->groups) * ig->wstride + j * c->Kc,
                               c->w + (k / (nw / c->groups) * c->Og + j) * c->Kc, c->Kc, r, r > 16 ? 32 : 16);
        else
            rx_rt_gemm_pack_a(ig->wp + k * ig->wstride, c->w + g * c->Og * c->Kc + k0, c->Kc, c->Og,
                              kc);
        atomic_fetch_add_explicit(&c->prepped, 1, memory_order_release);
    }
    if (ig->tasks / nt >= INT32_MAX) { /* a lane's end is 31 bits (lane_take) */
        for (int64_t k; (k = atomic_fetch_add(&c->next, 1) - nw) < ig->tasks;)
            ig_run(ig, k, nw, &weighed, pb);
        return;
    }
    for (int i = 0; i < nt; i++)
        for (int64_t k; (k = lane_take(ig, (t + i) % nt, nt, i > 0)) >= 0;)
            ig_run(ig, k, nw, &weighed, pb);
    if (pb != pbuf) free(pb);
}

/* The calling thread's buffers (packed weights and phase planes; tap offsets), grown on
 * demand and kept for the thread's life: a fresh megabyte a call cost a page fault per
 * 4 KiB (3% of the probe's time in the kernel's page clearing). A thread-specific key's
 * destructor frees them when the thread exits (libgomp ends the threads past a smaller
 * count; a server's or an agent's worker threads come and go), as library_gemm.c's. */
static _Thread_local void *tl_mem, *tl_off, *tl_imgs;
static _Thread_local size_t tl_mem_cap, tl_off_cap, tl_imgs_cap;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;
static bool tl_key_ok;

/* The key's value is only a mark (destructors run for non-NULL values); the buffers are
 * the exiting thread's own thread-locals, still valid while its destructors run. */
static void tl_free(void *mark)
{
    (void)mark;
    free(tl_mem), free(tl_off), free(tl_imgs);
    tl_mem = tl_off = tl_imgs = NULL;
    tl_mem_cap = tl_off_cap = tl_imgs_cap = 0;
}

static void tl_key_make(void) { tl_key_ok = pthread_key_create(&tl_key, tl_free) == 0; }

static void *ig_scratch(void **buf, size_t *cap, size_t bytes)
{
    bytes = (bytes + 63) / 64 * 64;
    if (bytes == 0) bytes = 64; /* nothing to hold (a pointwise call on the AVX-512 tile) */
    if (bytes > *cap) {
        pthread_once(&tl_once, tl_key_make);
        free(*buf);
        *buf = aligned_alloc(64, bytes);
        *cap = *buf ? bytes : 0;
        if (tl_key_ok) pthread_setspecific(tl_key, &tl_key);
    }
    return *buf;
}

/* blas.conv2d's KxK, strided, dilated and grouped ways (Cg > 1) on rx_rt_gemm's
 * micro-kernel: y_g (Og, pixels) = w_g (Og, Kc) @ the im2col matrix of x_g, whose
 * panels are packed from the phase planes as the kernel needs them (the essay). */
static int32_t conv_igemm(conv *c)
{
    igemm ig = {.c = c, .kern = rx_rt_gemm_micro(), .tile = rx_rt_conv_tile_kind()};
    ig.mt = ig.tile == RX_CONV_TILE_AVX512 ? RX_CONV_TILE_ROWS : RX_GEMM_MR;
    if (c->Kc == 0) { /* an empty window (0 channels or a 0-extent kernel): the epilogue of 0 */
        int64_t plane = c->OH * c->OW;
        memset(c->y, 0, sizeof(float) * (size_t)(c->N * c->O * plane));
        for (int64_t p = 0; p < c->N * c->O; p++)
            epilogue(c, p % c->O, c->y + p * plane, c->res ? c->res + p * plane : NULL, plane);
        return CV_OK;
    }
    ig.nkb = (c->Kc + IG_KC - 1) / IG_KC;
    ig.kcb = (c->Kc + ig.nkb - 1) / ig.nkb;
    ig.wstride = (c->Og + RX_GEMM_MR - 1) / RX_GEMM_MR * RX_GEMM_MR * ig.kcb + 8;
    int64_t KK = c->KH * c->KW, ppl; /* floats per phase plane */
    if (c->pointwise) { /* x itself: one phase, Hq x Wq = H x W = OH x OW */
        ig.Hq = c->H, ig.Wq = c->W, ppl = c->H * c->W;
    } else {
        ig.Hq = ((c->OH - 1) * c->sh + (c->KH - 1) * c->dh) / c->sh + 1;
        ig.Wq = ((c->OW - 1) * c->sw + (c->KW - 1) * c->dw) / c->sw + 1;
        ppl = ig.Hq * ig.Wq;
    }
    ig.img = c->C * (c->pointwise ? 1 : c->sh * c->sw) * ppl;
    /* wide (the essay): a small plane, one group, weights too large for L2 */
    int64_t panels = (c->OH * c->OW + RX_GEMM_NR - 1) / RX_GEMM_NR;
    ig.pstride = (ig.kcb + 1) * RX_GEMM_NR;
    ig.wide = c->groups == 1 && panels <= IG_WIDE_PANELS && c->Og >= 4 * RX_GEMM_MR &&
              c->Og * c->Kc >= IG_WIDE_W && ig.nkb * panels * ig.pstride <= IG_WIDE_B &&
              c->N * ig.nkb * panels * ig.pstride <= 4 * IG_WIDE_B;
    /* bx where it wins (the essay; its packing and transposes paid back) */
    bool strided = c->sh * c->sw > 1;
    ig.bx = ig.tile == RX_CONV_TILE_AVX512 && !ig.wide && (c->KH * c->KW > 1 || (c->Kc >= 3 * c->Og && c->Og % 32 == 0)) &&
            c->Og % 16 == 0 && (c->Og <= 128 || strided) && c->OH * c->OW >= 16 && c->Kc >= 32 &&
            (!strided || (c->Og + 31) / 32 * c->Cg * c->H * c->W <= BX_STRIDED_FLOATS) &&
            rx_rt_conv_bx_ok();
    if (ig.bx) ig.wstride = (c->Og + 31) / 32 * 32 * c->Kc; /* a group's chunks */
    size_t wfl = ig.bx ? (size_t)(c->groups * ig.wstride)
                 : ig.wide || ig.tile == RX_CONV_TILE_AVX512 ? 0
                 : (size_t)(c->groups * ig.nkb * ig.wstride);
    /* + Wq + 64: the virtual columns of the last row read up to (KW - 1) * dw past it */
    size_t xfl = c->pointwise ? 0 : (size_t)(c->N * ig.img + ig.Wq + 64);
    size_t bfl = ig.wide ? (size_t)(c->N * ig.nkb * panels * ig.pstride) : 0;
    float *mem = ig_scratch(&tl_mem, &tl_mem_cap, (wfl + xfl + bfl) * sizeof(float));
    ig.off = ig_scratch(&tl_off, &tl_off_cap, sizeof(int64_t) * (size_t)c->Kc);
    ig.imgs = ig_scratch(&tl_imgs, &tl_imgs_cap, sizeof(int64_t) * (size_t)(4 * c->N));
    if (!mem || !ig.off || !ig.imgs) return CV_NOMEM;
    for (int64_t i = 0; i < 4 * c->N; i++) atomic_init(&ig.imgs[i], 0);
    ig.wp = mem;
    ig.bfull = ig.wide ? mem + wfl + xfl : NULL;
    ig.xbuf = c->pointwise ? NULL : mem + wfl;
    ig.xt = c->pointwise ? c->x : ig.xbuf;
    if (ig.xbuf) memset(ig.xbuf + c->N * ig.img, 0, sizeof(float) * (size_t)(ig.Wq + 64));
    for (int64_t k = 0; k < c->Kc; k++) {
        int64_t ch = k / KK, kh = k % KK / c->KW, kw = k % c->KW;
        if (c->pointwise) {
            ig.off[k] = ch * ppl;
            continue;
        }
        int64_t ph = kh * c->dh % c->sh, pw = kw * c->dw % c->sw;
        ig.off[k] = ((ch * c->sh + ph) * c->sw + pw) * ppl + kh * c->dh / c->sh * ig.Wq +
                    kw * c->dw / c->sw;
    }
    /* 1x1 on the AVX-512 tile: tap k's row of xt is channel k's (virtual pixels are
     * real ones, Wq = OW), a fixed stride apart (a plane, or a channel's phases) */
    ig.inplace = c->KH == 1 && c->KW == 1 && !ig.wide && !ig.bx && ig.tile == RX_CONV_TILE_AVX512;
    ig.bld = c->Kc > 1 ? ig.off[1] - ig.off[0] : 0;
    _Atomic uint64_t lanes[RX_RT_MAX_THREADS];
    for (int i = 0; i < RX_RT_MAX_THREADS; i++) atomic_init(&lanes[i], 0);
    ig.lanes = lanes;
    rx_rt_parallel_for(igemm_job, &ig);
    return c->failed ? CV_NOMEM : CV_OK;
}

/* ---- one input channel per group: direct loops, planes split across threads ---- */

static void direct_job(void *ud, int t, int n)
{
    conv *c = ud;
    int64_t p0, p1, plane = c->OH * c->OW, KK = c->KH * c->KW;
    rx_rt_win g = {c->H, c->W, c->OW, c->KH, c->KW, c->sh, c->sw, c->pt, c->pl, c->dh, c->dw};
    bool dil = c->sh == 1 && c->sw == 1 && (c->dh > 1 || c->dw > 1); /* phase planes */
    bool unit = c->sh == 1 && c->sw == 1 && !dil;
    bool v512 = c->sh == c->sw && c->sh <= 2 && c->dh == 1 && c->dw == 1 &&
                rx_rt_conv_tile_kind() == RX_CONV_TILE_AVX512;
    rx_rt_share(c->N * c->O, t, n, &p0, &p1);
    float *buf = NULL; /* library_dwconv.c's padded plane (phase planes) */
    if ((unit || v512 || dil) && p0 < p1)
        buf = malloc(sizeof(float) * (size_t)(dil ? rx_rt_dwconv_dil_floats(&g, c->OH)
                                              : v512 ? rx_rt_dwconv512_buf_floats(c->OH, c->OW, c->KH, c->KW)
                                                     : rx_rt_dwconv_buf_floats(c->OH, c->OW, c->KH, c->KW)));
    for (int64_t p = p0; p < p1; p++) {
        int64_t img = p / c->O, o = p % c->O, ch = o / c->Og; /* Cg == 1: group o / Og */
        const float *xp = c->x + (img * c->C + ch) * c->H * c->W;
        float *yp = c->y + p * plane;
        rx_rt_conv_epi e = {c->bias ? c->bias + o : NULL, c->res ? c->res + p * plane : NULL,
                            c->act, c->lo, c->hi};
        bool fused = buf && v512 && rx_rt_dwconv_plane512(xp, c->H, c->W, c->w + o * KK, c->KH,
                                                          c->KW, c->sh, c->pt, c->pl, c->OH,
                                                          c->OW, buf, yp, &e);
        bool done = fused || (buf && dil && rx_rt_dwconv_plane_dil(&g, c->OH, xp, c->w + o * KK, buf, yp)) ||
                    (buf && !v512 && !dil && rx_rt_dwconv_plane(xp, c->H, c->W, c->w + o * KK, c->KH, c->KW,
                                                                c->pt, c->pl, c->OH, c->OW, buf, yp));
        for (int64_t oh = 0; oh < c->OH && !done; oh++)
            rx_rt_window_row(&g, xp, c->w + o * KK, RX_RT_ROW_MAC, oh, yp + oh * c->OW);
        if (!fused) epilogue(c, o, yp, e.res, plane);
    }
    free(buf);
}

int32_t rx_rt_conv2d(DLTensor *const *args, int32_t nargs)
{
    conv c;
    int32_t rc = rx_rt_conv_read_args(args, nargs, &c);
    if (rc != CV_OK) return rc;
    if (c.N == 0 || c.O == 0 || c.OH * c.OW == 0) return CV_OK;
    if (c.Cg == 1 && (c.groups > 1 || c.O < 24 || (c.dh * c.dw == 1 && c.sh == c.sw && c.sh < 3))) {
        rx_rt_parallel_for(direct_job, &c);
        return CV_OK;
    }
    c.pointwise = c.KH == 1 && c.KW == 1 && c.sh == 1 && c.sw == 1 && c.OH == c.H && c.OW == c.W;
    if (!rx_rt_gemm_blas_only()) return conv_igemm(&c);
    if (!(c.sgemm = rx_rt_gemm_pick(rx_rt_sgemm(), c.Og, c.OH * c.OW, c.Kc))) return CV_NOLIB;
    rx_rt_parallel_for(gemm_job, &c);
    return c.failed ? CV_NOMEM : CV_OK;
}
