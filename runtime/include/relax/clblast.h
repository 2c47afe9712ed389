/*
 * clblast.h — CLBlast, the OpenCL BLAS, on the runtime's OpenCL device (library rxrt;
 * runtime/clblast.c; docs/gpu.md "CLBlast").
 *
 * The library is loaded at run time with dlopen("libclblast.so.1") ($RX_CLBLAST_LIB
 * names another) at the first call, so the runtime links no GPU library and a host
 * without CLBlast only fails when a GEMM is asked for, with an error naming what is
 * missing: "CLBlast is not available: cannot load libclblast.so.1 (...): install
 * libclblast1 (Debian) or set RX_CLBLAST_LIB". The GEMMs are queued on the device's
 * in-order queue (nothing waits: the next sync, download or upload does), so they order
 * with the generated kernels like any launch.
 *
 * Matrices are row-major f32 in device buffers at element offsets (the launch ABI's
 * scheme: a tensor planned inside a storage is its buffer plus an element offset).
 */
#ifndef RELAX_CLBLAST_H
#define RELAX_CLBLAST_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <stdint.h>

#include "relax/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row-major matrix operand: buffer, element offset, leading dimension (elements
 * between rows), and for batches the elements between consecutive matrices. */
typedef struct rx_clblast_mat {
    rx_dev_buf *buf;
    int64_t off, ld, stride;
    int trans; /* A and B only: use the transpose (the matrix is stored k x m / n x k) */
} rx_clblast_mat;

/* 0 when CLBlast can be loaded (loading it now), or -1 with err (the message above). */
int rx_clblast_available(rx_rt_err *err);

/* C = alpha * A @ B + beta * C for batch matrices (batch 1: one GEMM, CLBlastSgemm;
 * more: CLBlastSgemmStridedBatched), A m x k, B k x n, C m x n, on OpenCL device d.
 * Returns 0, or -1 with err: CLBlast missing, d not OpenCL, a size out of range, or
 * CLBlast's status by name ("CLBlast: sgemm failed: kInsufficientMemoryC (-1009)"). */
int rx_clblast_sgemm(rx_dev *d, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                     const rx_clblast_mat *a, const rx_clblast_mat *b, float beta,
                     const rx_clblast_mat *c, rx_rt_err *err);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
