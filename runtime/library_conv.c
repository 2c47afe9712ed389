/*
 * library_conv.c — the NCHW f32 window ops of library lowering (compiler/pass/
 * library_lower.c's conv and pool rules): blas.conv2d, convolutions on OpenBLAS's sgemm
 * with the epilogue the compiler fused into the call, and rt.pool2d.
 *
 *   blas.conv2d (x, w, params, [bias], [residual], y)
 *     x (N, C, H, W), w (O, C / groups, KH, KW), y (N, O, OH, OW), all f32 and dense;
 *     params: i64 (11,) = stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
 *       dilation_h, dilation_w, groups, flags (1: a bias follows, 2: a residual follows),
 *       act (0: none, 1: relu, 2: clamp), or i64 (13,) with act 2: the same and the
 *       clamp's bounds lo, hi as the bit patterns of two f32 (relu6 is clamp(0, 6);
 *       lo <= hi, neither NaN);
 *     bias: f32 with O elements (one per output channel: (O,), (O, 1, 1), (1, O, 1, 1));
 *     residual: f32 of y's shape.
 *   y = act(conv(x, w) + bias[o] + residual), in that order — the order of the bindings
 *   the call replaces, so the result is the generated loops' up to summation order
 *   (clamp is min(max(v, lo), hi), the order of the maximum and minimum it replaces).
 *
 * Three ways, by the shapes:
 *   - pointwise (1x1, stride 1, no padding): y_g[band] (Og, cols) = w_g (Og, Cg) @
 *     x_g[band] (Cg, cols, ldb = H*W), sgemm reading x in place;
 *   - one input channel per group (depthwise, any channel multiplier): output planes
 *     split across threads; stride 1 undilated, a plane at a time through a zero-padded
 *     copy in vector registers, edges included (library_dwconv.c: ConvNeXt's 7x7, the
 *     MobileNet 3x3); otherwise direct loops per output row (window_row: each tap row
 *     clipped to its valid outputs once, so the inner loop has no bounds test);
 *   - otherwise (KxK, strides, dilation, grouped): im2col — a panel col (Cg*KH*KW,
 *     rows*OW) of the input taps for a band of output rows, zero where the tap falls in
 *     the padding — then y_g[band] = w_g (Og, Cg*KH*KW) @ col, ldc = OH*OW.
 * The sgemm ways cut the output into bands (image, group, output rows): the panel under
 * PANEL_FLOATS (4 MiB), two bands a thread where the output has enough rows, at least
 * LEAST_COLS columns each (OpenBLAS 0.3.21's single-threaded sgemm falls from ~33 to
 * ~11 GFLOP/s on this machine when N drops from 336 to 320 columns, at M 64..128 and
 * K 576..1152: the probe's 28x28 layers had 196-column bands). One parallel region per call (rx_rt_parallel_for: the kernels'
 * libgomp pool, so --threads applies); each thread takes bands from an atomic counter
 * and runs im2col into its own panel, a single-threaded sgemm (OpenBLAS's OpenMP build
 * runs one thread inside a parallel region) and the epilogue on the band while it is
 * warm. One region instead of three per band matters on a loaded machine: every
 * region's barrier waits for a thread the OS may have preempted.
 * Cost: O(N O OH OW Cg KH KW) multiply-adds; im2col copies O(N C KH KW OH OW), 1/Og of
 * the product's work; the epilogue O(N O OH OW).
 *
 *   rt.pool2d (x, params, y): max / avg pooling, f32 NCHW, params i64 (13,) = pool
 *     size (h, w), strides, padding (top, left, bottom, right), dilation, ceil_mode, max
 *     (1) or avg (0), count_include_pad; y's extents must be op_nn.c's window
 *     arithmetic of x's. Max starts from -FLT_MAX (padding never wins); avg divides by
 *     legalize_nn.c's tap count. Planes split across threads; each output row reduces
 *     the window's input rows column by column, then the columns (pool_row: KH + KW
 *     contiguous or strided passes instead of KH * KW; window_row if the row buffer
 *     cannot be had).
 *     Cost O(N C OH OW KH KW).
 * Codes: 2 arguments, 3 dtype, 4 shape, 5 params, 6 out of memory, 1 no BLAS.
 */
#include "rt_int.h"

#include <float.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { CV_OK = 0, CV_NOLIB = 1, CV_ARGS = 2, CV_DTYPE = 3, CV_SHAPE = 4, CV_PARAMS = 5,
       CV_NOMEM = 6 };
enum { CV_NPARAMS = 11, CV_NPARAMS_CLAMP = 13, CV_FLAG_BIAS = 1, CV_FLAG_RES = 2,
       CV_ACT_RELU = 1, CV_ACT_CLAMP = 2 };
#define PANEL_FLOATS ((int64_t)1 << 20) /* 4 MiB: the largest im2col panel */
#define LEAST_COLS 384                  /* the fewest columns of a band's sgemm (essay) */

const char *rx_rt_conv2d_strerr(int32_t code)
{
    switch (code) {
    case CV_NOLIB: return "OpenBLAS is not available (dlopen failed)";
    case CV_ARGS: return "expects (x, w, params, [bias], [residual], y) as params' flags say";
    case CV_DTYPE: return "expects float32 x, w, bias, residual, y and int64 params";
    case CV_SHAPE:
        return "shape mismatch (x (N, C, H, W), w (O, C / groups, KH, KW), y (N, O, OH, OW), "
               "bias O elements, residual y's shape)";
    case CV_PARAMS:
        return "bad params (11 int64: strides, padding, dilation >= 1, groups, flags, act 0..1; "
               "or 13 with act 2 and the clamp's f32 bounds lo <= hi)";
    case CV_NOMEM: return "out of memory for the im2col panel";
    default: return NULL;
    }
}

typedef struct conv {
    const float *x, *w, *bias, *res;
    float *y;
    int64_t N, C, H, W, O, KH, KW, OH, OW;
    int64_t sh, sw, pt, pl, dh, dw, groups, Cg, Og, Kc;
    int act;
    float lo, hi;              /* the clamp's bounds (act CV_ACT_CLAMP) */
    bool pointwise;            /* 1x1, stride 1, no padding: sgemm reads x in place */
    rx_rt_sgemm_fn sgemm;
    _Atomic int64_t next;      /* the next band task (gemm_job) */
    _Atomic int failed;        /* a thread could not get its panel */
} conv;

/* One band: output rows [r0, r1) of image n, group g. */
typedef struct band {
    int64_t n, g, r0, r1;
} band;

static bool f32(const DLTensor *t)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static void *data(const DLTensor *t)
{
    return (char *)t->data + t->byte_offset;
}

static int64_t numel(const DLTensor *t)
{
    int64_t k = 1;
    for (int32_t i = 0; i < t->ndim; i++) k *= t->shape[i];
    return k;
}

/* [lo, hi) of the outputs ow whose input column ow * s + off lies in [0, W). */
static void valid_range(int64_t OW, int64_t W, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
    /* ow * s >= -off and ow * s <= W - 1 - off */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = W - 1 - off < 0 ? 0 : (W - 1 - off) / s + 1;
    *lo = a < OW ? a : OW;
    *hi = b < *lo ? *lo : b > OW ? OW : b;
}

/* The slice [total * t / n, total * (t + 1) / n) of [0, total). */
static void share(int64_t total, int t, int n, int64_t *lo, int64_t *hi)
{
    *lo = total * t / n;
    *hi = total * (t + 1) / n;
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
        valid_range(c->OW, c->W, c->sw, off, &lo, &hi);
        for (int64_t r = bd->r0; r < bd->r1; r++, dst += c->OW) {
            int64_t ih = r * c->sh - c->pt + kh * c->dh;
            if (ih < 0 || ih >= c->H || lo == hi) {
                memset(dst, 0, sizeof(float) * (size_t)c->OW);
                continue;
            }
            const float *row = xp + ih * c->W + off;
            for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0.0f;
            if (c->sw == 1) memcpy(dst + lo, row + lo, sizeof(float) * (size_t)(hi - lo));
            else
                for (int64_t ow = lo; ow < hi; ow++) dst[ow] = row[ow * c->sw];
            for (int64_t ow = hi; ow < c->OW; ow++) dst[ow] = 0.0f;
        }
    }
}

/* ---- the epilogue over one plane's span [0, len) of output channel o ---- */

static void epilogue(const conv *c, int64_t o, float *y, const float *res, int64_t len)
{
    if (c->bias) {
        float b = c->bias[o];
        for (int64_t i = 0; i < len; i++) y[i] += b;
    }
    if (res)
        for (int64_t i = 0; i < len; i++) y[i] += res[i];
    if (c->act == CV_ACT_RELU)
        for (int64_t i = 0; i < len; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    if (c->act == CV_ACT_CLAMP) {
        float lo = c->lo, hi = c->hi;
        for (int64_t i = 0; i < len; i++) {
            float v = y[i] > lo ? y[i] : lo;
            y[i] = v < hi ? v : hi;
        }
    }
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

/* ---- one output row of a window op (depthwise conv, pooling) ---- */

/* The window geometry of one plane. */
typedef struct win {
    int64_t H, W, OW, KH, KW, sh, sw, pt, pl, dh, dw;
} win;

enum { ROW_MAC, ROW_MAX, ROW_SUM };

/* Output row oh of a plane xp: yr[ow] = the sum of taps[k] * x (ROW_MAC), the max
 * (ROW_MAX, from -FLT_MAX: padding never wins) or the sum (ROW_SUM) over the window's
 * taps inside the input. Each tap row is clipped to its valid outputs once, so the
 * inner loop has no bounds test (and for stride 1 is contiguous: vectorized). */
static void window_row(const win *g, const float *xp, const float *taps, int mode, int64_t oh,
                       float *yr)
{
    for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = mode == ROW_MAX ? -FLT_MAX : 0.0f;
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        for (int64_t kw = 0; kw < g->KW; kw++) {
            int64_t off = kw * g->dw - g->pl, lo, hi, s = g->sw;
            valid_range(g->OW, g->W, s, off, &lo, &hi);
            const float *row = xp + ih * g->W + off;
            if (mode == ROW_MAX) {
                for (int64_t ow = lo; ow < hi; ow++) yr[ow] = row[ow * s] > yr[ow] ? row[ow * s] : yr[ow];
            } else if (mode == ROW_SUM) {
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

/* ---- one input channel per group: direct loops, planes split across threads ---- */

static void direct_job(void *ud, int t, int n)
{
    conv *c = ud;
    int64_t p0, p1, plane = c->OH * c->OW, KK = c->KH * c->KW;
    win g = {c->H, c->W, c->OW, c->KH, c->KW, c->sh, c->sw, c->pt, c->pl, c->dh, c->dw};
    bool unit = c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1;
    share(c->N * c->O, t, n, &p0, &p1);
    float *buf = NULL; /* library_dwconv.c's padded plane */
    if (unit && p0 < p1)
        buf = malloc(sizeof(float) * (size_t)rx_rt_dwconv_buf_floats(c->OH, c->OW, c->KH, c->KW));
    for (int64_t p = p0; p < p1; p++) {
        int64_t img = p / c->O, o = p % c->O, ch = o / c->Og; /* Cg == 1: group o / Og */
        const float *xp = c->x + (img * c->C + ch) * c->H * c->W;
        float *yp = c->y + p * plane;
        bool done = buf && rx_rt_dwconv_plane(xp, c->H, c->W, c->w + o * KK, c->KH, c->KW, c->pt,
                                               c->pl, c->OH, c->OW, buf, yp);
        for (int64_t oh = 0; oh < c->OH && !done; oh++)
            window_row(&g, xp, c->w + o * KK, ROW_MAC, oh, yp + oh * c->OW);
        epilogue(c, o, yp, c->res ? c->res + p * plane : NULL, plane);
    }
    free(buf);
}

/* ---- rt.pool2d ---- */

enum { PL_NPARAMS = 13 };

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
static void pool_row(const win *g, const float *xp, bool is_max, int64_t oh, float *col, float *yr)
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
        valid_range(g->OW, g->W, s, off, &lo, &hi);
        if (is_max)
            for (int64_t ow = lo; ow < hi; ow++) {
                float v = col[ow * s + off];
                yr[ow] = v > yr[ow] ? v : yr[ow];
            }
        else
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += col[ow * s + off];
    }
}

static void pool_job(void *ud, int t, int n)
{
    const pool *p = ud;
    int64_t p0, p1;
    win g = {p->H, p->W, p->OW, p->kh, p->kw, p->sh, p->sw, p->pt, p->pl, p->dh, p->dw};
    share(p->NC, t, n, &p0, &p1);
    if (p0 == p1) return;
    /* col: one input row's column reductions; cw: avg's tap counts along W per column */
    float *col = malloc(sizeof(float) * (size_t)(p->W + p->OW)), *cw = col ? col + p->W : NULL;
    for (int64_t ow = 0; cw && !p->is_max && ow < p->OW; ow++)
        cw[ow] = (float)taps(p, ow, p->kw, p->sw, p->dw, p->pl, p->pr, p->W);
    for (int64_t pl = p0; pl < p1; pl++) {
        for (int64_t oh = 0; oh < p->OH; oh++) {
            float *yr = p->y + (pl * p->OH + oh) * p->OW;
            const float *xp = p->x + pl * p->H * p->W;
            if (col) pool_row(&g, xp, p->is_max, oh, col, yr);
            else window_row(&g, xp, NULL, p->is_max ? ROW_MAX : ROW_SUM, oh, yr);
            if (p->is_max) continue;
            int64_t ch = taps(p, oh, p->kh, p->sh, p->dh, p->pt, p->pb, p->H);
            for (int64_t ow = 0; ow < p->OW; ow++) {
                int64_t cnt = ch * (cw ? (int64_t)cw[ow] : taps(p, ow, p->kw, p->sw, p->dw, p->pl, p->pr, p->W));
                if ((p->ceil_mode || !p->cip) && cnt < 1) cnt = 1;
                yr[ow] /= (float)cnt;
            }
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
               "max, count_include_pad)";
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
    const int64_t *q = data(pr);
    for (int i = 0; i < PL_NPARAMS; i++)
        if (q[i] < (i >= 4 && i < 8 ? 0 : i >= 10 ? 0 : 1) || (i >= 10 && q[i] > 1)) return CV_PARAMS;
    if (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
        return CV_SHAPE;
    pool p = {data(x), data(y), x->shape[0] * x->shape[1], x->shape[2], x->shape[3], y->shape[2],
              y->shape[3], q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
              q[10] != 0, q[11] != 0, q[12] != 0};
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

/* ---- argument checks ---- */

static int32_t read_args(DLTensor *const *args, int32_t nargs, conv *c)
{
    if (nargs < 4) return CV_ARGS;
    const DLTensor *x = args[0], *w = args[1], *pr = args[2], *y = args[nargs - 1];
    if (pr->dtype.code != kDLInt || pr->dtype.bits != 64 || pr->dtype.lanes != 1) return CV_DTYPE;
    if (pr->ndim != 1 || (pr->shape[0] != CV_NPARAMS && pr->shape[0] != CV_NPARAMS_CLAMP))
        return CV_PARAMS;
    const int64_t *p = data(pr);
    int64_t flags = p[9];
    int want = 4 + !!(flags & CV_FLAG_BIAS) + !!(flags & CV_FLAG_RES);
    bool clamp = pr->shape[0] == CV_NPARAMS_CLAMP;
    if (flags & ~(int64_t)(CV_FLAG_BIAS | CV_FLAG_RES) ||
        (clamp ? p[10] != CV_ACT_CLAMP : p[10] != 0 && p[10] != CV_ACT_RELU))
        return CV_PARAMS;
    float bounds[2] = {0.0f, 0.0f};
    for (int i = 0; clamp && i < 2; i++) {
        if (p[11 + i] < 0 || p[11 + i] > (int64_t)UINT32_MAX) return CV_PARAMS;
        uint32_t bits = (uint32_t)p[11 + i];
        memcpy(&bounds[i], &bits, sizeof bits);
    }
    if (clamp && !(bounds[0] <= bounds[1])) return CV_PARAMS; /* also refuses a NaN */
    if (nargs != want) return CV_ARGS;
    for (int i = 0; i < nargs; i++)
        if (i != 2 && !f32(args[i])) return CV_DTYPE;
    if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4) return CV_SHAPE;
    for (int i = 0; i < 9; i++)
        if (p[i] < (i >= 2 && i < 6 ? 0 : 1)) return CV_PARAMS;
    *c = (conv){.x = data(x), .w = data(w), .y = data(y), .N = x->shape[0], .C = x->shape[1],
                .H = x->shape[2], .W = x->shape[3], .O = w->shape[0], .KH = w->shape[2],
                .KW = w->shape[3], .OH = y->shape[2], .OW = y->shape[3], .sh = p[0], .sw = p[1],
                .pt = p[2], .pl = p[3], .dh = p[6], .dw = p[7], .groups = p[8], .act = (int)p[10],
                .lo = bounds[0], .hi = bounds[1]};
    if (c->C % c->groups || c->O % c->groups || w->shape[1] != c->C / c->groups) return CV_SHAPE;
    c->Cg = c->C / c->groups, c->Og = c->O / c->groups, c->Kc = c->Cg * c->KH * c->KW;
    int64_t eh = c->H + p[2] + p[4] - c->dh * (c->KH - 1), ew = c->W + p[3] + p[5] - c->dw * (c->KW - 1);
    if (eh < 1 || ew < 1 || y->shape[0] != c->N || y->shape[1] != c->O ||
        c->OH != (eh - 1) / c->sh + 1 || c->OW != (ew - 1) / c->sw + 1)
        return CV_SHAPE;
    int k = 3;
    if (flags & CV_FLAG_BIAS) {
        if (numel(args[k]) != c->O) return CV_SHAPE;
        c->bias = data(args[k++]);
    }
    if (flags & CV_FLAG_RES) {
        const DLTensor *r = args[k];
        if (r->ndim != 4) return CV_SHAPE;
        for (int i = 0; i < 4; i++)
            if (r->shape[i] != y->shape[i]) return CV_SHAPE;
        c->res = data(r);
    }
    if (c->Og > INT32_MAX || c->Kc > INT32_MAX || c->OH * c->OW > INT32_MAX ||
        c->H * c->W > INT32_MAX)
        return CV_SHAPE;
    return CV_OK;
}

int32_t rx_rt_conv2d(DLTensor *const *args, int32_t nargs)
{
    conv c;
    int32_t rc = read_args(args, nargs, &c);
    if (rc != CV_OK) return rc;
    if (c.N == 0 || c.O == 0 || c.OH * c.OW == 0) return CV_OK;
    if (c.Cg == 1) {
        rx_rt_parallel_for(direct_job, &c);
        return CV_OK;
    }
    if (!(c.sgemm = rx_rt_gemm_pick(rx_rt_sgemm(), c.Og, c.OH * c.OW, c.Kc))) return CV_NOLIB;
    c.pointwise = c.KH == 1 && c.KW == 1 && c.sh == 1 && c.sw == 1 && c.OH == c.H && c.OW == c.W;
    rx_rt_parallel_for(gemm_job, &c);
    return c.failed ? CV_NOMEM : CV_OK;
}
