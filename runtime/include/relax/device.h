/*
 * device.h — the runtime's device interface (library rxrt; docs/gpu.md "Devices").
 *
 * A device is memory that kernels read and write, a queue that runs kernels in order,
 * and a compiler for kernel source. One table of operations (rx_dev_ops) hides the API:
 *
 *   op        what                                         OpenCL (device_opencl.c)
 *   alloc     a buffer of n bytes                          clCreateBuffer
 *   free      release a buffer                             clReleaseMemObject
 *   upload    host -> device bytes at a byte offset        clEnqueueWriteBuffer (blocking)
 *   download  device -> host bytes at a byte offset        clEnqueueReadBuffer (blocking)
 *   copy      device -> device                             clEnqueueCopyBuffer
 *   build     kernel source -> program (build log on error) clCreateProgramWithSource + clBuildProgram
 *   kernel    a program's kernel by name, checked against  clCreateKernel + clGetKernelWorkGroupInfo
 *             the device's local-memory limit
 *   launch    kernel, arguments, grid and group sizes      clSetKernelArg + clEnqueueNDRangeKernel
 *   sync      wait for everything queued                   clFinish
 *
 * Vulkan (device_vulkan.c) fills the same table: buffers are VkBuffers, `build` takes
 * SPIR-V (one module or a bundle, below) instead of source, `kernel` makes a compute
 * pipeline layout from what the module declares, and `launch` records a dispatch that
 * runs at the next sync, download or upload (the file's essay has the details).
 *
 * Each implementation loads its driver at run time with dlopen (OpenCL:
 * "libOpenCL.so.1", or $RX_OPENCL_LIB; Vulkan: "libvulkan.so.1", or $RX_VULKAN_LIB):
 * the runtime links no GPU library, and a host without the driver, a platform or a
 * device gets rx_dev_open's error "no OpenCL device: ..." (or Vulkan) naming what is
 * missing.
 *
 * Launch ABI (what generated kernels expect; docs/gpu.md "Launch ABI"): arguments are
 * passed in order, each a buffer (its device handle) or a scalar (64-bit or 32-bit
 * integer, 32-bit float). A tensor planned inside a larger storage is passed as the
 * storage's buffer plus its element offset as a scalar, so planning needs no
 * sub-buffer alignment. Grids have 1 to 3 dimensions; global sizes are multiples of
 * the group sizes (the kernels guard their edges).
 *
 * Vulkan launch ABI (docs/gpu.md "Vulkan"): the buffer arguments, in order, are the
 * storage buffers of descriptor set 0 at bindings 0, 1, 2, ... (each bound whole); the
 * scalar arguments, in order, are the members of the shader's one push-constant block,
 * each at its natural alignment (I64 8 bytes, I32 and F32 4), so the block declares
 * exactly those members in that order (std430 gives the same offsets). The work-group
 * size is the launch's `local`: a shader declares it with `layout(local_size_x_id = 0,
 * local_size_y_id = 1, local_size_z_id = 2) in;` and the pipeline is specialized per
 * size; a shader with a fixed local_size runs only with that size.
 *
 * SPIR-V bundle (what `build` takes on Vulkan; written by the compiler, spirv.h): a
 * sequence of little-endian 32-bit words
 *   RX_SPIRV_BUNDLE_MAGIC, RX_SPIRV_BUNDLE_VERSION, count,
 *   then per kernel: w, the kernel's name (NUL-terminated, zero-padded) in w words,
 *                    m, its SPIR-V module (entry point "main") in m words.
 * A single bare SPIR-V module (first word 0x07230203) is also accepted; its kernels
 * are then its GLCompute entry points, by their own names.
 *
 * Tensors: a device tensor is a DLPack DLTensor whose device is {kDLOpenCL, id} and
 * whose data is the buffer handle (byte_offset 0), as TVM does; rx_dev_tensor_new makes
 * one, rx_dev_tensor_upload/download copy it from/to a CPU tensor of the same shape and
 * dtype.
 *
 * Thread safety: an rx_dev may be used from several threads; launches are serialized
 * by the implementation (a kernel's arguments are set and the kernel queued under one
 * lock), and the queue runs them in submission order.
 */
#ifndef RELAX_DEVICE_H
#define RELAX_DEVICE_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rx_dev rx_dev;
typedef struct rx_dev_buf rx_dev_buf;         /* a device buffer (opaque) */
typedef struct rx_dev_program rx_dev_program; /* built kernel source (opaque) */
typedef struct rx_dev_kernel rx_dev_kernel;   /* one kernel of a program (opaque) */

typedef enum rx_dev_argkind {
    RX_DEV_ARG_BUF = 0, /* buf */
    RX_DEV_ARG_I64 = 1, /* i (OpenCL `long`) */
    RX_DEV_ARG_I32 = 2, /* i, range-checked to int32 (OpenCL `int`) */
    RX_DEV_ARG_F32 = 3  /* f (OpenCL `float`) */
} rx_dev_argkind;

typedef struct rx_dev_arg {
    int kind;        /* rx_dev_argkind */
    rx_dev_buf *buf; /* BUF */
    int64_t i;       /* I64, I32 */
    float f;         /* F32 */
} rx_dev_arg;

/* What the device is and what it allows (filled by rx_dev_open). */
typedef struct rx_dev_info {
    char name[128];          /* "pthread-haswell-AMD EPYC ..." */
    char platform[128];      /* "Portable Computing Language" */
    int32_t dl_type;         /* DLPack device type: kDLOpenCL */
    int32_t id;              /* index among the API's devices */
    int64_t max_threads;     /* work-items per work-group */
    int64_t max_local_bytes; /* local (shared) memory per work-group */
    int64_t max_alloc_bytes; /* largest one buffer */
    int64_t global_bytes;    /* device memory */
    int64_t align_bytes;     /* base address alignment of buffers */
    int64_t max_push_bytes;  /* bytes of scalar arguments per launch (Vulkan push
                                constants); 0: no limit of that kind (OpenCL) */
    char compute[16];        /* CUDA: the compute capability, "9.0"; else "" */
} rx_dev_info;

#define RX_SPIRV_BUNDLE_MAGIC 0x42535852u /* "RXSB": a SPIR-V bundle (above) */
#define RX_SPIRV_BUNDLE_VERSION 1u

typedef struct rx_dev_ops {
    const char *api; /* "OpenCL" */
    int (*alloc)(rx_dev *d, size_t n, rx_dev_buf **out, rx_rt_err *err);
    void (*free)(rx_dev *d, rx_dev_buf *b);
    int (*upload)(rx_dev *d, rx_dev_buf *dst, size_t off, const void *src, size_t n,
                  rx_rt_err *err);
    int (*download)(rx_dev *d, void *dst, rx_dev_buf *src, size_t off, size_t n, rx_rt_err *err);
    int (*copy)(rx_dev *d, rx_dev_buf *dst, size_t doff, rx_dev_buf *src, size_t soff, size_t n,
                rx_rt_err *err);
    int (*build)(rx_dev *d, const char *src, size_t n, rx_dev_program **out, rx_rt_err *err);
    void (*program_free)(rx_dev *d, rx_dev_program *p);
    int (*kernel)(rx_dev *d, rx_dev_program *p, const char *name, rx_dev_kernel **out,
                  rx_rt_err *err);
    void (*kernel_free)(rx_dev *d, rx_dev_kernel *k);
    int (*launch)(rx_dev *d, rx_dev_kernel *k, const rx_dev_arg *args, int nargs, int ndim,
                  const size_t *global, const size_t *local, rx_rt_err *err);
    int (*sync)(rx_dev *d, rx_rt_err *err);
    void (*close)(rx_dev *d);
} rx_dev_ops;

struct rx_dev {
    const rx_dev_ops *ops; /* the implementation */
    rx_dev_info info;      /* what it is */
    void *impl;            /* the implementation's state */
};

/* Opens device `id` of DLPack type dl_type (kDLOpenCL, kDLVulkan). Returns it, or NULL
 * with err: "no OpenCL device: cannot load libOpenCL.so.1 (...)", "no OpenCL device: no
 * platform (clGetPlatformIDs: -1001)", "no OpenCL device 3 (this host has 1: 0..0)",
 * "no Vulkan device: no physical device", "device type 2 (CUDA) is not supported by
 * this runtime (supported: OpenCL, Vulkan)". */
rx_dev *rx_dev_open(int32_t dl_type, int32_t id, rx_rt_err *err);

/* Closes d after waiting for its queue; every buffer, program and kernel made from it
 * must be freed first. NULL is a no-op. */
void rx_dev_close(rx_dev *d);

/* The DLPack device type named by a target kind ("opencl" -> kDLOpenCL, "cpu" ->
 * kDLCPU), or -1. */
int32_t rx_dev_type_of_target(const char *kind);

/* The API's name for a DLPack device type ("OpenCL", "CPU"), "?" when unknown. */
const char *rx_dev_type_name(int32_t dl_type);

/* ---- tensors on a device (DLPack) ---- */

/* A new dense row-major tensor on d: a heap DLTensor (shape copied) whose data is a new
 * buffer of d (device {d->info.dl_type, d->info.id}). NULL with err on a bad dtype or
 * shape, or a failed allocation ("OpenCL: cannot allocate 4294967296 bytes (the device's
 * largest buffer is 1073741824 bytes)"). */
DLTensor *rx_dev_tensor_new(rx_dev *d, DLDataType dtype, int32_t ndim, const int64_t *shape,
                            rx_rt_err *err);

/* Frees a tensor from rx_dev_tensor_new and its buffer. NULL is a no-op. */
void rx_dev_tensor_free(rx_dev *d, DLTensor *t);

/* The tensor's buffer (its data). */
rx_dev_buf *rx_dev_tensor_buf(const DLTensor *t);

/* Copies the compact CPU tensor src into the device tensor dst (same dtype and shape),
 * or back; 0, or -1 with err naming the mismatch or the API's failure. */
int rx_dev_tensor_upload(rx_dev *d, DLTensor *dst, const DLTensor *src, rx_rt_err *err);
int rx_dev_tensor_download(rx_dev *d, DLTensor *dst, const DLTensor *src, rx_rt_err *err);

/* ---- implementations ---- */

/* Opens OpenCL device id (device_opencl.c); what rx_dev_open calls for kDLOpenCL. */
rx_dev *rx_dev_opencl_open(int32_t id, rx_rt_err *err);

/* Opens Vulkan physical device id (device_vulkan.c); what rx_dev_open calls for
 * kDLVulkan. */
rx_dev *rx_dev_vulkan_open(int32_t id, rx_rt_err *err);

/* Opens CUDA device id (device_cuda.c, the driver API by dlopen("libcuda.so.1") or
 * $RX_CUDA_LIB); what rx_dev_open calls for kDLCUDA. Without a driver: "no CUDA driver
 * (libcuda.so.1 not found)". */
rx_dev *rx_dev_cuda_open(int32_t id, rx_rt_err *err);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
