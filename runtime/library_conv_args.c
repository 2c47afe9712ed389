/*
 * library_conv_args.c — blas.conv2d's calling convention (library_conv.c's essay has the
 * contract): the arguments checked and decoded into library_conv_int.h's conv, and the
 * error strings of its codes. The params' forms: i64 (11,) (act 0 none, 1 relu, 3 SiLU,
 * 4 hardswish), (12,) with act 5 (leaky relu: v > 0 ? v : v * slope, the slope's f32
 * bit pattern in p[11], not NaN), (13,) with act 2 (clamp: lo, hi's f32 bit patterns in
 * p[11], p[12], lo <= hi, neither NaN).
 *
 * Cost: O(1) a call.
 */
#include "library_conv_int.h"

#include <string.h>

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
        return "bad params (11 int64: strides, padding, dilation >= 1, groups, flags, act 0, 1, 3, 4; "
               "12 with act 5 and the leaky relu's f32 slope; or 13 with act 2 and the clamp's "
               "f32 bounds lo <= hi)";
    case CV_NOMEM: return "out of memory for the packing buffers or the im2col panel";
    default: return NULL;
    }
}

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


int32_t rx_rt_conv_read_args(DLTensor *const *args, int32_t nargs, conv *c)
{
    if (nargs < 4) return CV_ARGS;
    const DLTensor *x = args[0], *w = args[1], *pr = args[2], *y = args[nargs - 1];
    if (pr->dtype.code != kDLInt || pr->dtype.bits != 64 || pr->dtype.lanes != 1) return CV_DTYPE;
    if (pr->ndim != 1 || (pr->shape[0] != CV_NPARAMS && pr->shape[0] != CV_NPARAMS_LEAKY &&
                          pr->shape[0] != CV_NPARAMS_CLAMP))
        return CV_PARAMS;
    const int64_t *p = data(pr);
    int64_t flags = p[9];
    int want = 4 + !!(flags & CV_FLAG_BIAS) + !!(flags & CV_FLAG_RES);
    bool clamp = pr->shape[0] == CV_NPARAMS_CLAMP, leaky = pr->shape[0] == CV_NPARAMS_LEAKY;
    if (flags & ~(int64_t)(CV_FLAG_BIAS | CV_FLAG_RES) ||
        (clamp   ? p[10] != CV_ACT_CLAMP
         : leaky ? p[10] != CV_ACT_LEAKY
                 : p[10] != 0 && p[10] != CV_ACT_RELU && p[10] != RX_RT_CONV_ACT_SILU &&
                       p[10] != RX_RT_CONV_ACT_HARDSWISH))
        return CV_PARAMS;
    float bounds[2] = {0.0f, 0.0f}; /* the clamp's lo, hi; the leaky relu's slope, 0 */
    for (int i = 0; (clamp || (leaky && i == 0)) && i < 2; i++) {
        if (p[11 + i] < 0 || p[11 + i] > (int64_t)UINT32_MAX) return CV_PARAMS;
        uint32_t bits = (uint32_t)p[11 + i];
        memcpy(&bounds[i], &bits, sizeof bits);
    }
    if (clamp && !(bounds[0] <= bounds[1])) return CV_PARAMS; /* also refuses a NaN */
    if (leaky && bounds[0] != bounds[0]) return CV_PARAMS; /* a NaN slope */
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
