/*
 * gemm_ref.h — the double-precision reference of one element of an sgemm, shared by
 * test_gemm.c (the own sgemm) and test_matvec.c (the one-row product), and of the
 * epilogue activations (test_gemm.c, test_act.c; include rt_int.h first).
 */
#ifndef RX_GEMM_REF_H
#define RX_GEMM_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* alpha * sum_p op(A)[i, p] op(B)[p, j] + beta * c0 (beta 0: c0 not used), A and B
 * row-major with leading dimensions lda, ldb, stored transposed when ta / tb; *mag gets
 * the sum of the terms' magnitudes (the scale of the rounding error). */
static inline double gemm_ref(bool ta, bool tb, int64_t i, int64_t j, int64_t k, const float *a,
                              int64_t lda, const float *b, int64_t ldb, float alpha, float beta,
                              float c0, double *mag)
{
    double ref = 0.0, m = 0.0;
    for (int64_t p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p];
        double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        ref += x * y;
        m += fabs(x * y);
    }
    ref *= alpha, m *= fabs(alpha);
    if (beta != 0.0f) {
        ref += (double)beta * c0;
        m += fabs((double)beta * c0);
    }
    *mag = m;
    return ref;
}

#ifdef RX_RT_INT_H
/* An RX_RT_ACT_* activation of x in double (library_act.c's formulas). */
static inline double act_ref(int act, double x)
{
    switch (act) {
    case RX_RT_ACT_RELU: return x > 0 ? x : 0;
    case RX_RT_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case RX_RT_ACT_SILU: return x / (1 + exp(-x));
    case RX_RT_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case RX_RT_ACT_HARDSWISH: return x * fmin(fmax(x / 6 + 0.5, 0), 1);
    default: return x;
    }
}
#endif

#endif
