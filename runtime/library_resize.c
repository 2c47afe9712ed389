/*
 * library_resize.c — rt.resize2d, image.resize2d's nearest and bilinear modes on the
 * CPU in f32 NCHW (compiler/legalize/legalize_lib.c makes the call; cubic,
 * tf_crop_and_resize and other dtypes keep legalize_image.c's loops, whose essay gives
 * the semantics this file reproduces).
 *
 *   rt.resize2d (x, params, y): x (N, C, H, W), y (N, C, H', W'), f32. params i64 (5,)
 *     = method (0 nearest, 1 linear), coordinate mode (0 half_pixel, 1
 *     pytorch_half_pixel, 2 align_corners, 3 asymmetric, 4 tf_half_pixel_for_nn),
 *     rounding (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil, 4 round),
 *     then the h and w scales as f32 bit patterns (0: H' / H, W' / W).
 *
 * Per axis, a table per output index: the clamped source indices and weights, computed
 * once per call in f32 with legalize_image.c's expressions (so indices match the loops
 * exactly). Then per (n, c) plane, per output row:
 *   nearest  the row gathered through the w table, or a copy of the previous output row
 *            when it maps to the same source row (every other row at 2x);
 *   linear   the output row is wy0 * A + wy1 * B, A and B the two source rows resampled
 *            along w (ww0 * x[w0] + ww1 * x[w1]); each resampled source row is computed
 *            once and kept while consecutive output rows use it (a 2x upsample gathers
 *            half the output's elements), the final blend is contiguous and vectorized.
 * Planes go over the threads (rx_rt_parallel_for) from 32768 output elements, each
 * thread with two row buffers. Cost: O(N C H' W') with one gather per output element at
 * most. The weights blend in another order than the loops' (wy * (ww * x) summed per
 * row first): within f32 rounding of them. Codes: 2 arguments, 3 dtype, 4 shape, 5 params,
 * 6 out of memory.
 */
#include "rt_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RS_OK = 0, RS_ARGS = 2, RS_DTYPE = 3, RS_SHAPE = 4, RS_PARAMS = 5, RS_NOMEM = 6 };
enum { M_HALF, M_PYTORCH, M_ALIGN, M_ASYM, M_TFNN };
enum { R_PFLOOR, R_PCEIL, R_FLOOR, R_CEIL, R_ROUND };

typedef struct taps {
    int64_t *i0, *i1;  /* source indices (clamped) */
    float *w0, *w1;    /* weights (nearest: 1, 0) */
} taps;

typedef struct resize {
    const float *x;
    float *y;
    bool linear;
    int64_t planes, H, W, OH, OW;
    taps th, tw;
    _Atomic int failed;
} resize;

/* legalize_image.c's coord(): the input coordinate of output index i. */
static float coord(int mode, int64_t i, int64_t d, int64_t o, float sc_attr)
{
    float x = (float)i, df = (float)d, sc = sc_attr != 0 ? sc_attr : (float)o / df;
    float len = sc * df, half = (x + 0.5f) / sc - 0.5f;
    switch (mode) {
    case M_HALF: return half;
    case M_PYTORCH: return len == 1 ? -0.5f : half;
    case M_ASYM: return x / sc;
    case M_TFNN: return (x + 0.5f) / sc;
    default: return len == 1 ? 0.0f : x * (df - 1) / (len - 1);
    }
}

static float round_by(int r, float u)
{
    switch (r) {
    case R_PFLOOR: return ceilf(u - 0.5f);
    case R_PCEIL: return floorf(u + 0.5f);
    case R_FLOOR: return floorf(u);
    case R_CEIL: return ceilf(u);
    default: return u >= 0 ? floorf(u + 0.5f) : ceilf(u - 0.5f);
    }
}

static int64_t clampi(int64_t v, int64_t d) { return v < 0 ? 0 : v > d - 1 ? d - 1 : v; }

static void fill_taps(taps *t, bool linear, int mode, int rnd, int64_t d, int64_t o, float sc)
{
    for (int64_t i = 0; i < o; i++) {
        float u = coord(mode, i, d, o, sc);
        if (!linear) {
            t->i0[i] = t->i1[i] = clampi((int64_t)round_by(rnd, u), d);
            t->w0[i] = 1;
            t->w1[i] = 0;
            continue;
        }
        float f = floorf(u), r = u - f;
        t->i0[i] = clampi((int64_t)f, d);
        t->i1[i] = clampi((int64_t)f + 1, d);
        t->w0[i] = 1 - r;
        t->w1[i] = r;
    }
}

/* Source row src resampled along w into out (OW values). */
static void hrow(const resize *s, const float *src, float *out)
{
    const taps *t = &s->tw;
    if (!s->linear) {
        for (int64_t j = 0; j < s->OW; j++) out[j] = src[t->i0[j]];
        return;
    }
    for (int64_t j = 0; j < s->OW; j++) out[j] = t->w0[j] * src[t->i0[j]] + t->w1[j] * src[t->i1[j]];
}

static void planes_part(void *ud, int t, int nt)
{
    resize *s = ud;
    int64_t p0 = s->planes * t / nt, p1 = s->planes * (t + 1) / nt;
    if (p0 >= p1) return;
    float *buf = s->linear ? malloc((size_t)s->OW * 2 * sizeof *buf) : NULL;
    if (s->linear && !buf) {
        s->failed = 1;
        return;
    }
    for (int64_t p = p0; p < p1; p++) {
        const float *x = s->x + p * s->H * s->W;
        float *y = s->y + p * s->OH * s->OW;
        int64_t tag[2] = {-1, -1}; /* the source rows in buf's two halves */
        for (int64_t oy = 0; oy < s->OH; oy++) {
            float *yr = y + oy * s->OW;
            int64_t r0 = s->th.i0[oy], r1 = s->th.i1[oy];
            if (!s->linear) {
                if (oy > 0 && s->th.i0[oy - 1] == r0) memcpy(yr, yr - s->OW, (size_t)s->OW * sizeof *yr);
                else hrow(s, x + r0 * s->W, yr);
                continue;
            }
            float *a = NULL, *b = NULL;
            for (int k = 0; k < 2; k++) {
                if (tag[k] == r0) a = buf + k * s->OW;
                if (tag[k] == r1) b = buf + k * s->OW;
            }
            if (!a) { /* into the half not holding r1 */
                int k = tag[0] == r1 ? 1 : 0;
                a = buf + k * s->OW;
                hrow(s, x + r0 * s->W, a);
                tag[k] = r0;
            }
            if (!b) {
                int k = a == buf ? 1 : 0;
                b = buf + k * s->OW;
                hrow(s, x + r1 * s->W, b);
                tag[k] = r1;
            }
            float w0 = s->th.w0[oy], w1 = s->th.w1[oy];
            for (int64_t j = 0; j < s->OW; j++) yr[j] = w0 * a[j] + w1 * b[j];
        }
    }
    free(buf);
}

const char *rx_rt_resize2d_strerr(int32_t code)
{
    switch (code) {
    case RS_ARGS: return "expects 3 tensors (x, params, y)";
    case RS_DTYPE: return "x and y must be f32";
    case RS_SHAPE: return "x and y must be 4-d (N, C, H, W) with one N and C, H and W above 0";
    case RS_PARAMS: return "params must be i64 (method, mode, rounding, scale bits h, w)";
    case RS_NOMEM: return "out of memory for the index tables";
    default: return NULL;
    }
}

static bool is_f32(const DLTensor *t)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

int32_t rx_rt_resize2d(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return RS_ARGS;
    const DLTensor *x = args[0], *p = args[1], *y = args[2];
    if (p->dtype.code != kDLInt || p->dtype.bits != 64 || p->ndim != 1 || p->shape[0] != 5)
        return RS_PARAMS;
    if (!is_f32(x) || !is_f32(y)) return RS_DTYPE;
    if (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
        return RS_SHAPE;
    int64_t pv[5];
    memcpy(pv, (const char *)p->data + p->byte_offset, sizeof pv);
    if (pv[0] < 0 || pv[0] > 1 || pv[1] < 0 || pv[1] > M_TFNN || pv[2] < 0 || pv[2] > R_ROUND)
        return RS_PARAMS;
    resize s = {0};
    s.planes = x->shape[0] * x->shape[1];
    s.H = x->shape[2];
    s.W = x->shape[3];
    s.OH = y->shape[2];
    s.OW = y->shape[3];
    if (s.planes == 0 || s.OH == 0 || s.OW == 0) return RS_OK;
    if (s.H <= 0 || s.W <= 0) return RS_SHAPE;
    uint32_t bits[2] = {(uint32_t)pv[3], (uint32_t)pv[4]};
    float sc[2];
    memcpy(sc, bits, sizeof sc);
    size_t n = (size_t)(s.OH + s.OW);
    int64_t *ix = malloc(n * 2 * sizeof *ix);
    float *wt = malloc(n * 2 * sizeof *wt);
    if (!ix || !wt) {
        free(ix);
        free(wt);
        return RS_NOMEM;
    }
    s.th = (taps){ix, ix + s.OH, wt, wt + s.OH};
    s.tw = (taps){ix + 2 * s.OH, ix + 2 * s.OH + s.OW, wt + 2 * s.OH, wt + 2 * s.OH + s.OW};
    s.linear = pv[0] == 1;
    fill_taps(&s.th, s.linear, (int)pv[1], (int)pv[2], s.H, s.OH, sc[0]);
    fill_taps(&s.tw, s.linear, (int)pv[1], (int)pv[2], s.W, s.OW, sc[1]);
    s.x = (const float *)(const void *)((const char *)x->data + x->byte_offset);
    s.y = (float *)(void *)((char *)y->data + y->byte_offset);
    if (s.planes > 1 && s.planes * s.OH * s.OW >= 32768) rx_rt_parallel_for(planes_part, &s);
    else planes_part(&s, 0, 1);
    free(ix);
    free(wt);
    return s.failed ? RS_NOMEM : RS_OK;
}
