/*
 * library_rt.c — the runtime-native library functions "rt.*": plain C loops with the
 * library ABI (vm.h), so call_dps_library can be built and run on any CPU without an
 * external library. They are registered with the BLAS entries (library.c) and listed
 * by rx_rt_builtin_library_names, which the compiler checks call_dps_library names
 * against.
 *
 * Every function is destination passing (the last argument is the preallocated
 * output), reads dense row-major tensors at data + byte_offset, accumulates in double
 * and stores in the output's dtype, and keeps no state. The output may be the input
 * (rms_norm reads a whole row before writing it).
 *
 *   rt.rms_norm (x, y)   f32 or f64, y of x's dtype and shape, ndim >= 1: every row
 *                        along the last axis is normalized,
 *                        y[..., j] = x[..., j] / sqrt(mean(x[..., :]^2) + 1e-5)
 *                        (no weight; the paper's cutlass.rms_norm). Rows of length 0
 *                        write nothing. Codes: 2 arguments, 3 dtype, 4 shape.
 *   rt.matmul (a, b, c)  f32 or f64 (all three alike): c = a @ b for a (m, k),
 *                        b (k, n), c (m, n); or batched a (B, m, k), b (B, k, n) or
 *                        (k, n), c (B, m, n) — blas.matmul's shapes without BLAS.
 *                        Codes: 2 arguments, 3 dtype, 4 shape.
 * Cost: rms_norm O(numel), matmul O(B m n k), both single-threaded.
 */
#include "rt_int.h"

#include <math.h>

enum { RT_OK = 0, RT_ARGS = 2, RT_DTYPE = 3, RT_SHAPE = 4 };

/* The element size of a supported dtype (f32 4, f64 8), 0 otherwise. */
static int real_size(const DLTensor *t)
{
    if (t->dtype.code != kDLFloat || t->dtype.lanes != 1) return 0;
    return t->dtype.bits == 32 ? 4 : t->dtype.bits == 64 ? 8 : 0;
}

static bool same_dtype(const DLTensor *a, const DLTensor *b)
{
    return a->dtype.code == b->dtype.code && a->dtype.bits == b->dtype.bits &&
           a->dtype.lanes == b->dtype.lanes;
}

static char *data_of(const DLTensor *t)
{
    return (char *)t->data + t->byte_offset;
}

/* Element i of a real tensor of element size es, as a double. */
static inline double ld(const char *p, int es, int64_t i)
{
    return es == 4 ? (double)((const float *)(const void *)p)[i] : ((const double *)(const void *)p)[i];
}

static inline void st(char *p, int es, int64_t i, double v)
{
    if (es == 4) ((float *)(void *)p)[i] = (float)v;
    else ((double *)(void *)p)[i] = v;
}

/* ---- rt.rms_norm ---- */

const char *rx_rt_rms_norm_strerr(int32_t code)
{
    switch (code) {
    case RT_ARGS: return "expects 2 tensors (x, out)";
    case RT_DTYPE: return "expects float32 or float64 tensors of one dtype";
    case RT_SHAPE: return "out must have x's shape, and x at least one dim";
    default: return NULL;
    }
}

int32_t rx_rt_rms_norm(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 2) return RT_ARGS;
    const DLTensor *x = args[0], *y = args[1];
    int es = real_size(x);
    if (!es || !same_dtype(x, y)) return RT_DTYPE;
    if (x->ndim < 1 || x->ndim != y->ndim) return RT_SHAPE;
    int64_t rows = 1, len = x->shape[x->ndim - 1];
    for (int32_t i = 0; i < x->ndim; i++) {
        if (x->shape[i] != y->shape[i]) return RT_SHAPE;
        if (i < x->ndim - 1) rows *= x->shape[i];
    }
    if (len == 0) return RT_OK;
    const char *xp = data_of(x);
    char *yp = data_of(y);
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t j = 0; j < len; j++) {
            double v = ld(xp, es, r * len + j);
            ss += v * v;
        }
        double scale = 1.0 / sqrt(ss / (double)len + 1e-5);
        for (int64_t j = 0; j < len; j++) st(yp, es, r * len + j, ld(xp, es, r * len + j) * scale);
    }
    return RT_OK;
}

/* ---- rt.matmul ---- */

const char *rx_rt_matmul_strerr(int32_t code)
{
    switch (code) {
    case RT_ARGS: return "expects 3 tensors (A, B, C)";
    case RT_DTYPE: return "expects float32 or float64 tensors of one dtype";
    case RT_SHAPE: return "shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C (b?, m, n))";
    default: return NULL;
    }
}

int32_t rx_rt_matmul(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return RT_ARGS;
    const DLTensor *A = args[0], *B = args[1], *C = args[2];
    int es = real_size(A);
    if (!es || !same_dtype(A, B) || !same_dtype(A, C)) return RT_DTYPE;
    int64_t batch = 1, m, k, n;
    if (A->ndim == 2 && B->ndim == 2 && C->ndim == 2) {
        m = A->shape[0], k = A->shape[1], n = B->shape[1];
        if (B->shape[0] != k || C->shape[0] != m || C->shape[1] != n) return RT_SHAPE;
    } else if (A->ndim == 3 && C->ndim == 3 && (B->ndim == 3 || B->ndim == 2)) {
        batch = A->shape[0], m = A->shape[1], k = A->shape[2];
        n = B->shape[B->ndim - 1];
        if (B->shape[B->ndim - 2] != k || C->shape[0] != batch || C->shape[1] != m ||
            C->shape[2] != n || (B->ndim == 3 && B->shape[0] != batch))
            return RT_SHAPE;
    } else {
        return RT_SHAPE;
    }
    const char *a = data_of(A), *b = data_of(B);
    char *c = data_of(C);
    int64_t bstride = B->ndim == 3 ? k * n : 0;
    for (int64_t t = 0; t < batch; t++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += ld(a, es, (t * m + i) * k + p) * ld(b, es, t * bstride + p * n + j);
                st(c, es, (t * m + i) * n + j, s);
            }
    return RT_OK;
}
