/*
 * library_norm.c — rt.group_norm, nn.group_norm on the CPU (compiler/legalize/
 * legalize_lib.c makes the call): GroupNorm, InstanceNorm (one channel per group) and
 * PyTorch's exported GroupNorm form (docs/onnx.md).
 *
 *   rt.group_norm (x, gamma, beta, params, y): x and y (N, C, D...) of one dtype, f32
 *     or f64, rank >= 2, contiguous; gamma and beta (C,) of that dtype; params i64 (3,)
 *     = num_groups (dividing C), flags (1 scale: multiply by gamma, 2 center: add beta),
 *     epsilon as the bit pattern of an f64. Each (n, group) is one contiguous block of
 *     C / g * prod D elements: mean, then the variance as the mean of squared
 *     deviations (two passes, as legalize_norm.c's layer_norm: no E[x^2] - E[x]^2
 *     cancellation), then y = (x - mean) / sqrt(var + eps) [* gamma[c]] [+ beta[c]]
 *     per channel sub-block. Sums run in 8 independent accumulators (the compiler
 *     vectorizes the rest), accumulated in double across the block's chunks.
 * Blocks go over the threads (rx_rt_parallel_for) when there are at least two and the
 * tensor has 32768 elements or more. Cost: two reads and one write of x per element.
 * Codes: 2 arguments, 3 dtype, 4 shape, 5 params.
 */
#include "rt_int.h"

#include <math.h>
#include <string.h>

enum { GN_OK = 0, GN_ARGS = 2, GN_DTYPE = 3, GN_SHAPE = 4, GN_PARAMS = 5 };

typedef struct gnorm {
    const char *x, *gamma, *beta;
    char *y;
    bool f64, scale, center;
    int64_t groups, cg, sp, blocks; /* groups, channels per group, prod D, N * groups */
    double eps;
} gnorm;

/* sum of x[0..n) (sq: of (x - m)^2), 8 lanes of T, the lanes and the tail in double. */
#define SUM_FN(name, T)                                                                   \
    static double name(const T *x, int64_t n, bool sq, T m)                               \
    {                                                                                     \
        T a[8] = {0};                                                                     \
        int64_t i = 0;                                                                    \
        if (sq) {                                                                         \
            for (; i + 8 <= n; i += 8)                                                    \
                for (int l = 0; l < 8; l++) {                                             \
                    T d = x[i + l] - m;                                                   \
                    a[l] += d * d;                                                        \
                }                                                                         \
        } else {                                                                          \
            for (; i + 8 <= n; i += 8)                                                    \
                for (int l = 0; l < 8; l++) a[l] += x[i + l];                             \
        }                                                                                 \
        double r = 0;                                                                     \
        for (int l = 0; l < 8; l++) r += (double)a[l];                                    \
        for (; i < n; i++) r += sq ? ((double)x[i] - m) * ((double)x[i] - m) : (double)x[i]; \
        return r;                                                                         \
    }
SUM_FN(sum_f32, float)
SUM_FN(sum_f64, double)
#undef SUM_FN

/* Chunks of at most 4096 elements keep the f32 lanes' partial sums short. */
enum { CHUNK = 4096 };

#define BLOCK_FN(name, T, sumf)                                                           \
    static void name(const gnorm *s, int64_t b)                                           \
    {                                                                                     \
        int64_t len = s->cg * s->sp, c0 = (b % s->groups) * s->cg;                        \
        const T *x = (const T *)(const void *)s->x + b * len;                             \
        T *y = (T *)(void *)s->y + b * len;                                               \
        const T *ga = (const T *)(const void *)s->gamma, *be = (const T *)(const void *)s->beta; \
        double sum = 0, var = 0;                                                          \
        for (int64_t i = 0; i < len; i += CHUNK)                                          \
            sum += sumf(x + i, len - i < CHUNK ? len - i : CHUNK, false, 0);              \
        T mean = (T)(sum / (double)len);                                                  \
        for (int64_t i = 0; i < len; i += CHUNK)                                          \
            var += sumf(x + i, len - i < CHUNK ? len - i : CHUNK, true, mean);            \
        double inv = 1.0 / sqrt(var / (double)len + s->eps);                              \
        for (int64_t c = 0; c < s->cg; c++) {                                             \
            T a = (T)(inv * (s->scale ? (double)ga[c0 + c] : 1.0));                       \
            T o = (T)(s->center ? (double)be[c0 + c] : 0.0) - mean * a;                   \
            const T *xc = x + c * s->sp;                                                  \
            T *yc = y + c * s->sp;                                                        \
            for (int64_t i = 0; i < s->sp; i++) yc[i] = xc[i] * a + o;                    \
        }                                                                                 \
    }
BLOCK_FN(block_f32, float, sum_f32)
BLOCK_FN(block_f64, double, sum_f64)
#undef BLOCK_FN

static void blocks_part(void *ud, int t, int nt)
{
    const gnorm *s = ud;
    for (int64_t b = s->blocks * t / nt; b < s->blocks * (t + 1) / nt; b++) {
        if (s->f64) block_f64(s, b);
        else block_f32(s, b);
    }
}

const char *rx_rt_group_norm_strerr(int32_t code)
{
    switch (code) {
    case GN_ARGS: return "expects 5 tensors (x, gamma, beta, params, y)";
    case GN_DTYPE: return "x, gamma, beta and y must have one dtype, f32 or f64";
    case GN_SHAPE: return "x and y must have one shape (N, C, ...), gamma and beta (C,)";
    case GN_PARAMS: return "params must be i64 (num_groups dividing C, flags, epsilon bits)";
    default: return NULL;
    }
}

static bool same_dt(const DLTensor *a, const DLTensor *b)
{
    return a->dtype.code == b->dtype.code && a->dtype.bits == b->dtype.bits &&
           a->dtype.lanes == b->dtype.lanes;
}

int32_t rx_rt_group_norm(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 5) return GN_ARGS;
    const DLTensor *x = args[0], *ga = args[1], *be = args[2], *p = args[3], *y = args[4];
    if (p->dtype.code != kDLInt || p->dtype.bits != 64 || p->ndim != 1 || p->shape[0] != 3)
        return GN_PARAMS;
    if (x->dtype.code != kDLFloat || (x->dtype.bits != 32 && x->dtype.bits != 64) ||
        x->dtype.lanes != 1 || !same_dt(x, ga) || !same_dt(x, be) || !same_dt(x, y))
        return GN_DTYPE;
    if (x->ndim < 2 || y->ndim != x->ndim || ga->ndim != 1 || be->ndim != 1) return GN_SHAPE;
    int64_t pv[3], numel = 1;
    memcpy(pv, (const char *)p->data + p->byte_offset, sizeof pv);
    gnorm s = {0};
    s.sp = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->shape[d] != y->shape[d]) return GN_SHAPE;
        numel *= x->shape[d];
        if (d >= 2) s.sp *= x->shape[d];
    }
    int64_t C = x->shape[1];
    if (ga->shape[0] != C || be->shape[0] != C) return GN_SHAPE;
    if (pv[0] < 1 || C % pv[0]) return GN_PARAMS;
    if (numel == 0) return GN_OK;
    memcpy(&s.eps, &pv[2], sizeof s.eps);
    s.x = (const char *)x->data + x->byte_offset;
    s.gamma = (const char *)ga->data + ga->byte_offset;
    s.beta = (const char *)be->data + be->byte_offset;
    s.y = (char *)y->data + y->byte_offset;
    s.f64 = x->dtype.bits == 64;
    s.scale = pv[1] & 1;
    s.center = (pv[1] & 2) != 0;
    s.groups = pv[0];
    s.cg = C / pv[0];
    s.blocks = x->shape[0] * s.groups;
    if (s.blocks > 1 && numel >= 32768) rx_rt_parallel_for(blocks_part, &s);
    else blocks_part(&s, 0, 1);
    return GN_OK;
}
