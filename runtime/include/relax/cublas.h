/*
 * cublas.h — cuBLAS GEMMs on the runtime's CUDA device (library rxrt; runtime/cublas.c;
 * docs/gpu.md "cuBLAS").
 *
 * The library is loaded at run time with dlopen ($RX_CUBLAS_LIB, else libcublas.so.13,
 * libcublas.so.12, libcublas.so, then /usr/local/cuda/lib64/libcublas.so), so the
 * runtime links no CUDA library and a host without cuBLAS fails only when a GEMM is
 * asked for: "cuBLAS is not available: cannot load libcublas.so.13 (...): install the
 * CUDA toolkit's cuBLAS or set RX_CUBLAS_LIB". Operands are row-major, as everywhere in
 * the runtime (rx_clblast_mat, relax/clblast.h); the column-major call cuBLAS takes is
 * derived here (C^T = B^T A^T). The GEMMs are queued on the device's stream.
 */
#ifndef RELAX_CUBLAS_H
#define RELAX_CUBLAS_H

#pragma GCC visibility push(default)
#include <stdint.h>

#include "relax/clblast.h"
#include "relax/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when cuBLAS can be loaded (loading it now), or -1 with err (the message above). */
int rx_cublas_available(rx_rt_err *err);

/* C = alpha * A @ B + beta * C for batch row-major matrices (batch 1: cublasSgemm_v2;
 * more: cublasSgemmStridedBatched; a stride of 0 repeats one matrix), A m x k, B k x n,
 * C m x n, on CUDA device d. Returns 0, or -1 with err: cuBLAS missing, d not a CUDA
 * device, a size out of range (also beyond cuBLAS's 32-bit int sizes), or cuBLAS's
 * status by name ("cuBLAS: sgemm failed: CUBLAS_STATUS_INVALID_VALUE (7)"). */
int rx_cublas_sgemm(rx_dev *d, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                    const rx_clblast_mat *a, const rx_clblast_mat *b, float beta,
                    const rx_clblast_mat *c, rx_rt_err *err);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop

#endif
