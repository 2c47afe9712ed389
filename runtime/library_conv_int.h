/*
 * library_conv_int.h — what library_conv.c (blas.conv2d's ways) and library_conv_args.c
 * (its calling convention: params, argument checks, error strings) share: the call's
 * decoded form. library_conv.c's essay has the contract of blas.conv2d.
 */
#ifndef RX_LIBRARY_CONV_INT_H
#define RX_LIBRARY_CONV_INT_H

#include "rt_int.h"

#include <stdatomic.h>

enum { CV_OK = 0, CV_NOLIB = 1, CV_ARGS = 2, CV_DTYPE = 3, CV_SHAPE = 4, CV_PARAMS = 5,
       CV_NOMEM = 6 };
enum { CV_NPARAMS = 11, CV_NPARAMS_LEAKY = 12, CV_NPARAMS_CLAMP = 13, CV_FLAG_BIAS = 1,
       CV_FLAG_RES = 2, CV_ACT_RELU = RX_RT_CONV_ACT_RELU, CV_ACT_CLAMP = RX_RT_CONV_ACT_CLAMP,
       CV_ACT_LEAKY = RX_RT_CONV_ACT_LEAKY };

/* One blas.conv2d call, decoded (rx_rt_conv_read_args), and the state its ways share. */
typedef struct conv {
    const float *x, *w, *bias, *res;
    float *y;
    int64_t N, C, H, W, O, KH, KW, OH, OW;
    int64_t sh, sw, pt, pl, dh, dw, groups, Cg, Og, Kc;
    int act;                   /* RX_RT_CONV_ACT_* (0: none) */
    float lo, hi;              /* the clamp's bounds (act CLAMP); lo: the slope (act LEAKY) */
    bool pointwise;            /* 1x1, stride 1, no padding: sgemm reads x in place */
    rx_rt_sgemm_fn sgemm;
    _Atomic int64_t next;      /* the next band task (gemm_job) */
    _Atomic int failed;        /* a thread could not get its panel */
    _Atomic int64_t prepped;   /* igemm_job's preparation units done */
} conv;

/* Checks blas.conv2d's arguments (x, w, params, [bias], [residual], y) and decodes them
 * into *c (the CV_* code: CV_OK, or what is wrong). */
int32_t rx_rt_conv_read_args(DLTensor *const *args, int32_t nargs, conv *c);

#endif
