/*
 * device_cuda.c — the CUDA device (device.h) over the driver API, loaded by dlopen.
 *
 * The runtime links no CUDA library: the driver's entry points come from
 * dlopen("libcuda.so.1") ($RX_CUDA_LIB names another) and dlsym, into one table per
 * device, with the driver API's types declared here (handles are opaque pointers,
 * CUdeviceptr a 64-bit integer), so the runtime builds without the CUDA toolkit. A
 * host without a driver fails only when a CUDA device is opened, with the reason:
 * "no CUDA driver (libcuda.so.1 not found)", "no CUDA driver: cuInit failed
 * (CUDA_ERROR_STUB_LIBRARY ...)" (the toolkit's link stub), "no CUDA device 3 (this
 * host has 1: 0..0)".
 *
 * Opening: cuInit, cuDeviceGet(id), the device's primary context (shared with any
 * other CUDA user of the process, as the runtime API does), one stream. Every
 * operation makes the context current on the calling thread first (cuCtxSetCurrent:
 * a thread-local pointer store), so a device may be used from any thread.
 *
 * Buffers are CUdeviceptr values carried in rx_dev_buf pointers. Copies are queued on
 * the device's stream and waited for (cuMemcpy*Async + cuStreamSynchronize): the
 * driver's synchronous copies use the legacy default stream, which would not be
 * ordered after the launches queued on ours. Programs are PTX text (the artifact's
 * KERNELS_PTX section) loaded with cuModuleLoadDataEx, which JITs it for the GPU; a
 * JIT failure carries the driver's error log. A kernel is refused at load when it
 * needs more threads per block than the JIT allows it (registers) or more shared
 * memory than the device has. Launches pass every argument by address (buffers as
 * 64-bit device pointers, scalars as 64/32-bit integers or floats) with cuLaunchKernel
 * on the stream; the launch itself is asynchronous and sync waits for the stream.
 *
 * Limits read at open (cuDeviceGetAttribute): threads per block, shared memory per
 * block (the opt-in maximum), memory size (cuDeviceTotalMem); the largest buffer is the
 * memory size, the buffer alignment 256 bytes (cuMemAlloc's guarantee).
 */
#include "relax/device.h"

#include "rt_int.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
    ATTR_MAX_THREADS_PER_BLOCK = 1,      /* CU_DEVICE_ATTRIBUTE_... */
    ATTR_MAX_SHARED_PER_BLOCK = 8,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97,
    FATTR_MAX_THREADS = 0,               /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
    FATTR_SHARED_BYTES = 1,              /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
    JIT_ERROR_LOG_BUFFER = 5,            /* CU_JIT_ERROR_LOG_BUFFER */
    JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6, /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
    JIT_LOG_BYTES = 2048,
    CAPTURE_MODE_RELAXED = 2             /* CU_STREAM_CAPTURE_MODE_RELAXED: allocations
                                            (cuMemAlloc of a region's outputs) allowed */
};

/* The entry points used: name in the table, symbol, prototype. */
#define CU_FUNCS(X)                                                                         \
    X(cuInit, "cuInit", (unsigned))                                                         \
    X(cuDeviceGetCount, "cuDeviceGetCount", (int *))                                        \
    X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                                        \
    X(cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                          \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))                 \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))                        \
    X(cuDriverGetVersion, "cuDriverGetVersion", (int *))                                    \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))        \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))                \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                      \
    X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                             \
    X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                                    \
    X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                               \
    X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                                 \
    X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                             \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream)) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream))   \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx", (CUmodule *, const void *, unsigned, int *, void **)) \
    X(cuModuleUnload, "cuModuleUnload", (CUmodule))                                         \
    X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *))   \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", (int *, int, CUfunction))                   \
    X(cuLaunchKernel, "cuLaunchKernel", (CUfunction, unsigned, unsigned, unsigned, unsigned, \
                                         unsigned, unsigned, unsigned, CUstream, void **, void **)) \
    X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                          \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream, int))                     \
    X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream, CUgraph *))                      \
    X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", (CUgraphExec *, CUgraph, unsigned long long)) \
    X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec, CUstream))                              \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec))                              \
    X(cuGraphDestroy, "cuGraphDestroy", (CUgraph))

#define CU_PTR(fn, sym, args) CUresult(*fn) args;
typedef struct cu_api {
    void *lib; /* dlopen handle */
    CU_FUNCS(CU_PTR)
} cu_api;

typedef struct cu_dev {
    cu_api cu;
    CUdevice dev;
    CUcontext ctx; /* the primary context, retained */
    CUstream s;
    void *blas;                  /* cuBLAS's handle (cublas.c), or NULL */
    void (*blas_free)(void *);   /* its destructor, run at close with the context current */
} cu_dev;

struct rx_dev_program {
    CUmodule mod;
};

struct rx_dev_kernel {
    CUfunction f;
    char name[64];
};

/* The driver's name for code r ("CUDA_ERROR_OUT_OF_MEMORY"), or its number. The codes
 * a host without a working driver gets are named here: the toolkit's link stub answers
 * every call with 34 and names nothing. */
static const char *cu_name(const cu_api *a, CUresult r, char *buf, size_t n)
{
    static const rx_code_name known[] = {
        {3, "CUDA_ERROR_NOT_INITIALIZED"},
        {34, "CUDA_ERROR_STUB_LIBRARY: libcuda.so.1 is the CUDA toolkit's link stub, not a driver"},
        {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
        {100, "CUDA_ERROR_NO_DEVICE"},
    };
    const char *s = NULL;
    if (a->cuGetErrorName && a->cuGetErrorName(r, &s) == 0 && s) return s;
    s = rx_code_name_of(known, sizeof known / sizeof known[0], r, NULL);
    if (s) return s;
    snprintf(buf, n, "CUresult %d", r);
    return buf;
}

/* Fails with "CUDA: WHAT failed (NAME)". */
static int cu_fail(const cu_dev *c, rx_rt_err *err, const char *what, CUresult r)
{
    char b[32];
    return rx_rt_fail(err, "CUDA: %s failed (%s)", what, cu_name(&c->cu, r, b, sizeof b));
}

/* ---- loading ---- */

static int load_api(cu_api *a, rx_rt_err *err)
{
    const char *env = getenv("RX_CUDA_LIB"), *name = env && *env ? env : "libcuda.so.1";
    a->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        if (name == env) return rx_rt_fail(err, "no CUDA driver (cannot load %s: %s)", name, dlerror());
        return rx_rt_fail(err, "no CUDA driver (libcuda.so.1 not found)");
    }
#define CU_SYM(fn, sym, args)                                                               \
    *(void **)&a->fn = dlsym(a->lib, sym);                                                  \
    if (!a->fn) {                                                                           \
        dlclose(a->lib);                                                                    \
        return rx_rt_fail(err, "no CUDA driver: %s lacks %s", name, sym);                   \
    }
    CU_FUNCS(CU_SYM)
#undef CU_SYM
    return 0;
}

static int attr(cu_dev *c, int what)
{
    int v = 0;
    return c->cu.cuDeviceGetAttribute(&v, what, c->dev) == 0 ? v : 0;
}

static void fill_info(cu_dev *c, rx_dev_info *in)
{
    c->cu.cuDeviceGetName(in->name, (int)sizeof in->name - 1, c->dev);
    int drv = 0;
    c->cu.cuDriverGetVersion(&drv);
    snprintf(in->platform, sizeof in->platform, "CUDA driver %d.%d, compute capability %d.%d",
             drv / 1000, drv % 1000 / 10, attr(c, ATTR_CC_MAJOR), attr(c, ATTR_CC_MINOR));
    snprintf(in->compute, sizeof in->compute, "%d.%d", attr(c, ATTR_CC_MAJOR) % 1000,
             attr(c, ATTR_CC_MINOR) % 1000);
    size_t mem = 0;
    c->cu.cuDeviceTotalMem(&mem, c->dev);
    int shared = attr(c, ATTR_MAX_SHARED_PER_BLOCK_OPTIN);
    in->max_threads = attr(c, ATTR_MAX_THREADS_PER_BLOCK);
    in->max_local_bytes = shared > 0 ? shared : attr(c, ATTR_MAX_SHARED_PER_BLOCK);
    in->global_bytes = (int64_t)mem;
    in->max_alloc_bytes = (int64_t)mem;
    in->align_bytes = 256;
}

/* ---- operations ---- */

static cu_dev *C(rx_dev *d) { return d->impl; }

/* Makes d's context current on this thread; 0 or the driver's code. */
static CUresult cur(cu_dev *c)
{
    return c->cu.cuCtxSetCurrent(c->ctx);
}

static CUdeviceptr P(const rx_dev_buf *b) { return (CUdeviceptr)(uintptr_t)b; }

static int cu_alloc(rx_dev *d, size_t n, rx_dev_buf **out, rx_rt_err *err)
{
    cu_dev *c = C(d);
    if ((int64_t)n > d->info.max_alloc_bytes)
        return rx_rt_fail(err, "CUDA: cannot allocate %zu bytes (the device has %lld bytes)", n,
                          (long long)d->info.max_alloc_bytes);
    CUdeviceptr p = 0;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuMemAlloc(&p, n ? n : 1);
    if (r) {
        char b[32];
        return rx_rt_fail(err, "CUDA: cannot allocate %zu bytes (cuMemAlloc: %s)", n,
                          cu_name(&c->cu, r, b, sizeof b));
    }
    *out = (rx_dev_buf *)(uintptr_t)p;
    return 0;
}

static void cu_free(rx_dev *d, rx_dev_buf *b)
{
    cu_dev *c = C(d);
    if (b && !cur(c)) c->cu.cuMemFree(P(b));
}

static int cu_upload(rx_dev *d, rx_dev_buf *dst, size_t off, const void *src, size_t n,
                     rx_rt_err *err)
{
    cu_dev *c = C(d);
    if (!n) return 0;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuMemcpyHtoDAsync(P(dst) + off, src, n, c->s);
    if (!r) r = c->cu.cuStreamSynchronize(c->s);
    return r ? cu_fail(c, err, "upload", r) : 0;
}

static int cu_download(rx_dev *d, void *dst, rx_dev_buf *src, size_t off, size_t n, rx_rt_err *err)
{
    cu_dev *c = C(d);
    if (!n) return 0;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuMemcpyDtoHAsync(dst, P(src) + off, n, c->s);
    if (!r) r = c->cu.cuStreamSynchronize(c->s);
    return r ? cu_fail(c, err, "download", r) : 0;
}

static int cu_copy(rx_dev *d, rx_dev_buf *dst, size_t doff, rx_dev_buf *src, size_t soff, size_t n,
                   rx_rt_err *err)
{
    cu_dev *c = C(d);
    if (!n) return 0;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuMemcpyDtoDAsync(P(dst) + doff, P(src) + soff, n, c->s);
    if (!r) r = c->cu.cuStreamSynchronize(c->s);
    return r ? cu_fail(c, err, "device copy", r) : 0;
}

/* src[0..n) is PTX text; the driver wants it NUL-terminated. */
static int cu_build(rx_dev *d, const char *src, size_t n, rx_dev_program **out, rx_rt_err *err)
{
    cu_dev *c = C(d);
    char *text = malloc(n + 1), log[JIT_LOG_BYTES] = "";
    rx_dev_program *pr = malloc(sizeof *pr);
    if (!text || !pr) {
        free(text);
        free(pr);
        return rx_rt_fail(err, "out of memory");
    }
    memcpy(text, src, n);
    text[n] = '\0';
    int opts[] = {JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};
    CUresult r = cur(c);
    if (!r) r = c->cu.cuModuleLoadDataEx(&pr->mod, text, 2, opts, vals);
    free(text);
    if (r) {
        free(pr);
        log[sizeof log - 1] = '\0';
        for (char *s = log; *s; s++)
            if (*s == '\n' || *s == '\r') *s = ' ';
        char b[32];
        return rx_rt_fail(err, "CUDA: cannot load the PTX (cuModuleLoadDataEx: %s)%s%s",
                          cu_name(&c->cu, r, b, sizeof b), *log ? ": " : "", log);
    }
    *out = pr;
    return 0;
}

static void cu_program_free(rx_dev *d, rx_dev_program *p)
{
    cu_dev *c = C(d);
    if (!p) return;
    if (!cur(c)) c->cu.cuModuleUnload(p->mod);
    free(p);
}

static int cu_get_kernel(rx_dev *d, rx_dev_program *p, const char *name, rx_dev_kernel **out,
                         rx_rt_err *err)
{
    cu_dev *c = C(d);
    CUfunction f = NULL;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuModuleGetFunction(&f, p->mod, name);
    if (r) {
        char b[32];
        return rx_rt_fail(err, "CUDA: no kernel %s in the module (%s)", name, cu_name(&c->cu, r, b, sizeof b));
    }
    int shared = 0;
    c->cu.cuFuncGetAttribute(&shared, FATTR_SHARED_BYTES, f);
    if (shared > d->info.max_local_bytes)
        return rx_rt_fail(err, "CUDA: kernel %s needs %d bytes of shared memory, more than the "
                          "device's limit of %lld", name, shared, (long long)d->info.max_local_bytes);
    rx_dev_kernel *k = calloc(1, sizeof *k);
    if (!k) return rx_rt_fail(err, "out of memory");
    k->f = f;
    snprintf(k->name, sizeof k->name, "%s", name);
    *out = k;
    return 0;
}

static void cu_kernel_free(rx_dev *d, rx_dev_kernel *k)
{
    (void)d;
    free(k); /* functions belong to their module */
}

/* One argument's value, addressed by cuLaunchKernel's parameter array. */
typedef union cu_argval {
    CUdeviceptr p;
    int64_t i64;
    int32_t i32;
    float f32;
} cu_argval;

static int cu_launch(rx_dev *d, rx_dev_kernel *k, const rx_dev_arg *args, int nargs, int ndim,
                     const size_t *global, const size_t *local, rx_rt_err *err)
{
    cu_dev *c = C(d);
    if (ndim < 1 || ndim > 3) return rx_rt_fail(err, "CUDA: kernel %s: %d grid dimensions", k->name, ndim);
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    size_t threads = 1;
    for (int i = 0; i < ndim; i++) {
        size_t l = local ? local[i] : 1;
        if (l == 0 || global[i] % l)
            return rx_rt_fail(err, "CUDA: kernel %s: global size %zu is not a multiple of the "
                              "block size %zu (dimension %d)", k->name, global[i], l, i);
        if (global[i] == 0) return 0; /* an empty grid runs nothing */
        if (global[i] / l > 0x7fffffffu)
            return rx_rt_fail(err, "CUDA: kernel %s: %zu blocks in dimension %d", k->name, global[i] / l, i);
        grid[i] = (unsigned)(global[i] / l);
        block[i] = (unsigned)l;
        threads *= l;
    }
    int fmax = 0;
    c->cu.cuFuncGetAttribute(&fmax, FATTR_MAX_THREADS, k->f);
    int64_t limit = fmax > 0 && fmax < d->info.max_threads ? fmax : d->info.max_threads;
    if ((int64_t)threads > limit)
        return rx_rt_fail(err, "CUDA: kernel %s: %zu threads per block, more than the kernel can "
                          "run on this device (%lld)", k->name, threads, (long long)limit);
    cu_argval small[48], *vals = nargs <= 48 ? small : malloc(sizeof *vals * (size_t)nargs);
    void *psmall[48], **ptrs = nargs <= 48 ? psmall : malloc(sizeof *ptrs * (size_t)nargs);
    int rc = vals && ptrs ? 0 : rx_rt_fail(err, "out of memory");
    for (int i = 0; i < nargs && !rc; i++) {
        const rx_dev_arg *a = &args[i];
        switch (a->kind) {
        case RX_DEV_ARG_BUF: vals[i].p = P(a->buf); break;
        case RX_DEV_ARG_I64: vals[i].i64 = a->i; break;
        case RX_DEV_ARG_I32:
            if (a->i < INT32_MIN || a->i > INT32_MAX)
                rc = rx_rt_fail(err, "CUDA: kernel %s: argument %d (%" PRId64 ") is not an int32",
                                k->name, i, a->i);
            vals[i].i32 = (int32_t)a->i;
            break;
        case RX_DEV_ARG_F32: vals[i].f32 = a->f; break;
        default: rc = rx_rt_fail(err, "CUDA: kernel %s: argument %d of kind %d", k->name, i, a->kind);
        }
        ptrs[i] = &vals[i];
    }
    CUresult r = rc ? 0 : cur(c);
    if (!rc && !r)
        r = c->cu.cuLaunchKernel(k->f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                 c->s, ptrs, NULL);
    if (!rc && r) {
        char b[32];
        rc = rx_rt_fail(err, "CUDA: kernel %s: launch failed (%s)", k->name, cu_name(&c->cu, r, b, sizeof b));
    }
    if (vals != small) free(vals);
    if (ptrs != psmall) free(ptrs);
    return rc;
}

static int cu_sync(rx_dev *d, rx_rt_err *err)
{
    cu_dev *c = C(d);
    CUresult r = cur(c);
    if (!r) r = c->cu.cuStreamSynchronize(c->s);
    return r ? cu_fail(c, err, "cuStreamSynchronize (a kernel faulted, or the device was lost)", r) : 0;
}

static void cu_close(rx_dev *d)
{
    cu_dev *c = C(d);
    if (c->ctx && !cur(c)) {
        if (c->blas) c->blas_free(c->blas);
        if (c->s) {
            c->cu.cuStreamSynchronize(c->s);
            c->cu.cuStreamDestroy(c->s);
        }
        c->cu.cuDevicePrimaryCtxRelease(c->dev);
    }
    /* the driver stays loaded: it keeps process-lifetime state */
    free(c);
    free(d);
}

void *rx_dev_cuda_stream(rx_dev *d, rx_rt_err *err)
{
    if (!d || d->info.dl_type != kDLCUDA) {
        rx_rt_fail(err, "not a CUDA device");
        return NULL;
    }
    cu_dev *c = C(d);
    CUresult r = cur(c);
    if (r) {
        cu_fail(c, err, "cuCtxSetCurrent", r);
        return NULL;
    }
    return c->s;
}

void *rx_dev_cuda_blas(rx_dev *d) { return C(d)->blas; }

void rx_dev_cuda_set_blas(rx_dev *d, void *h, void (*free_fn)(void *))
{
    C(d)->blas = h;
    C(d)->blas_free = free_fn;
}

/* ---- CUDA Graphs (vm_device.c's regions): capture on the device's stream ---- */

int rx_dev_cuda_capture_begin(rx_dev *d, rx_rt_err *err)
{
    cu_dev *c = C(d);
    CUresult r = cur(c);
    if (!r) r = c->cu.cuStreamBeginCapture(c->s, CAPTURE_MODE_RELAXED);
    return r ? cu_fail(c, err, "cuStreamBeginCapture", r) : 0;
}

int rx_dev_cuda_capture_end(rx_dev *d, void **exec, rx_rt_err *err)
{
    cu_dev *c = C(d);
    CUgraph graph = NULL;
    CUgraphExec x = NULL;
    CUresult r = cur(c);
    if (!r) r = c->cu.cuStreamEndCapture(c->s, &graph);
    if (r) return cu_fail(c, err, "cuStreamEndCapture", r);
    r = c->cu.cuGraphInstantiate(&x, graph, 0);
    c->cu.cuGraphDestroy(graph); /* the executable graph is independent of it */
    if (r) return cu_fail(c, err, "cuGraphInstantiateWithFlags", r);
    *exec = x;
    return 0;
}

int rx_dev_cuda_graph_launch(rx_dev *d, void *exec, rx_rt_err *err)
{
    cu_dev *c = C(d);
    CUresult r = cur(c);
    if (!r) r = c->cu.cuGraphLaunch((CUgraphExec)exec, c->s);
    return r ? cu_fail(c, err, "cuGraphLaunch", r) : 0;
}

void rx_dev_cuda_graph_free(rx_dev *d, void *exec)
{
    cu_dev *c = C(d);
    if (exec && !cur(c)) c->cu.cuGraphExecDestroy((CUgraphExec)exec);
}

static const rx_dev_ops cu_ops = {
    "CUDA", cu_alloc, cu_free, cu_upload, cu_download, cu_copy, cu_build, cu_program_free,
    cu_get_kernel, cu_kernel_free, cu_launch, cu_sync, cu_close,
};

/* cuInit, then device id of the driver's devices into c->dev. */
static int find_device(cu_dev *c, int32_t id, rx_rt_err *err)
{
    char b[32];
    CUresult r = c->cu.cuInit(0);
    if (r) return rx_rt_fail(err, "no CUDA driver: cuInit failed (%s)", cu_name(&c->cu, r, b, sizeof b));
    int n = 0;
    r = c->cu.cuDeviceGetCount(&n);
    if (r) return rx_rt_fail(err, "no CUDA device: cuDeviceGetCount failed (%s)", cu_name(&c->cu, r, b, sizeof b));
    if (n == 0) return rx_rt_fail(err, "no CUDA device: the driver sees none");
    if (id >= n) return rx_rt_fail(err, "no CUDA device %d (this host has %d: 0..%d)", (int)id, n, n - 1);
    r = c->cu.cuDeviceGet(&c->dev, id);
    return r ? rx_rt_fail(err, "no CUDA device %d (cuDeviceGet: %s)", (int)id, cu_name(&c->cu, r, b, sizeof b)) : 0;
}

rx_dev *rx_dev_cuda_open(int32_t id, rx_rt_err *err)
{
    if (id < 0) {
        rx_rt_fail(err, "no CUDA device %d (device ids start at 0)", (int)id);
        return NULL;
    }
    rx_dev *d = calloc(1, sizeof *d);
    cu_dev *c = calloc(1, sizeof *c);
    if (!d || !c) {
        free(d);
        free(c);
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    if (load_api(&c->cu, err) || find_device(c, id, err)) {
        free(d);
        free(c);
        return NULL;
    }
    d->impl = c;
    d->ops = &cu_ops;
    char b[32];
    CUresult r = c->cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
    if (r) {
        c->ctx = NULL;
        rx_rt_fail(err, "no CUDA device: device %d has no context (%s)", (int)id, cu_name(&c->cu, r, b, sizeof b));
        cu_close(d);
        return NULL;
    }
    r = cur(c);
    if (!r) r = c->cu.cuStreamCreate(&c->s, 0);
    if (r) {
        c->s = NULL;
        rx_rt_fail(err, "no CUDA device: device %d: no stream (%s)", (int)id, cu_name(&c->cu, r, b, sizeof b));
        cu_close(d);
        return NULL;
    }
    fill_info(c, &d->info);
    d->info.dl_type = kDLCUDA;
    d->info.id = id;
    return d;
}
