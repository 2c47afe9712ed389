/*
 * gpu_int.h — internals of the GPU kernel generator (gpu_kernel.c, gpu_dialect.c).
 *
 * One generator, several source dialects: everything that differs between OpenCL C,
 * GLSL 450 compute and CUDA C is a field of rx_gpu_dialect, so the schedules and the
 * statement emitter (c_kernel.c, shared with the CPU target) never test which dialect
 * they write. Kernels index buffers as arrays (buf[i], no pointer arithmetic in the
 * statements), declare work-group memory at kernel scope, and take symbolic values as
 * scalar arguments (push constants where the API has no scalar arguments).
 */
#ifndef RELAX_GPU_INT_H
#define RELAX_GPU_INT_H

#include "cgen_int.h"
#include "relax/target.h"

typedef struct rx_gpu_dialect {
    const char *name;         /* "OpenCL C 1.2" */
    rx_target_kind kind;      /* the target kind it serves */
    const char *kernel;       /* what precedes the kernel's name: "__kernel void" */
    const char *buf_qual;     /* qualifier of a buffer parameter: "__global" */
    const char *i64;          /* the 64-bit integer of scalar arguments: "long" */
    const char *global_id;    /* this work-item's index in the 1-D grid */
    const char *global_size;  /* work-items in the grid */
    const char *local_id;     /* index in the work-group */
    const char *group_id;     /* the work-group's index */
    const char *local_size;   /* work-items per work-group */
    const char *barrier;      /* work-group barrier with local memory fence */
    const char *local_decl;   /* qualifier of work-group memory: "__local" */
    const char *atomic_cas;   /* printf format of a 32-bit compare-and-swap on a buffer
                                 element: (buffer, index, expected, new) */
    /* A buffer parameter as the emitter sees it: printf format taking (qualifier,
     * storage type, name, name, name) that declares NAME over the parameter pair
     * NAME_b, NAME_o (the buffer and the tensor's element offset in it). */
    const char *buf_view;
    const char *prelude;      /* types, math names and helpers the expressions use */
    const char *prelude_f16;  /* f16/bf16 conversions (rx_h2f, rx_f2h, ...) */
} rx_gpu_dialect;

/* The dialect of target kind k, NULL when the generator has none yet (with *why). */
const rx_gpu_dialect *rx_gpu_dialect_of(rx_target_kind k, const char **why);

#endif
