/*
 * mock_cuda.c — a stand-in for libcuda.so.1 on hosts without an NVIDIA driver, loaded by
 * runtime/device_cuda.c through $RX_CUDA_LIB in tests (test_device_cuda.c, cuda_e2e).
 *
 * It implements the driver API entry points the runtime resolves, over host memory:
 * one device ("Mock GPU", compute capability 9.0, 1024 threads per block, 64 MiB),
 * device pointers are malloc'd blocks, copies are memcpy, streams and contexts are
 * tokens. A module is the PTX text it was given (refused with a JIT log when it has no
 * `.entry`); a function is found when the text has `.entry NAME(`. Launches run no PTX:
 * they are recorded (mock_last_launch) and one kernel is executed on the host, so the
 * argument marshalling can be checked end to end:
 *
 *   mock_iota(u64 buf, i64 off, i64 n, f32 scale, i32 bias)
 *       buf[off + i] = scale * i + bias for i < n (floats)
 *
 * Functions report 512 threads per block at most (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
 * below the device's 1024, as with register-heavy kernels). Stream capture
 * (cuStreamBeginCapture_v2 .. cuStreamEndCapture) records launches as graph nodes
 * instead of running them; cuGraphLaunch counts a replay (mock_graphs). Not
 * thread-safe; a test double, not a driver.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

enum {
    OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_DEVICE = 101, INVALID_PTX = 218,
    NO_BINARY_FOR_GPU = 209, NOT_FOUND = 500, MEM_BYTES = 64 << 20
};

typedef struct mock_mod {
    char *text;
} mock_mod;

typedef struct mock_fn {
    char name[256];
} mock_fn;

/* The last launch: what a test inspects (dlsym "mock_last_launch"). */
typedef struct mock_launch {
    char name[64];
    unsigned grid[3], block[3];
    int count;
} mock_launch;

mock_launch mock_last_launch;

/* CUDA Graph capture and replay (below): what tests inspect (dlsym "mock_graphs"). */
typedef struct mock_graph_stats {
    int capturing, captures, instantiated, replays, nodes_last, live_execs;
} mock_graph_stats;

mock_graph_stats mock_graphs;
static size_t live_bytes;
static int ctx_token, stream_token;

/* The entry points: exported with the driver's names (prototypes here, for -Wmissing-prototypes). */
CUresult cuInit(unsigned flags);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(int *d, int id);
CUresult cuDeviceGetName(char *name, int len, int d);
CUresult cuDeviceGetAttribute(int *v, int attr, int d);
CUresult cuDeviceTotalMem_v2(size_t *b, int d);
CUresult cuDriverGetVersion(int *v);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d);
CUresult cuDevicePrimaryCtxRelease_v2(int d);
CUresult cuCtxSetCurrent(void *ctx);
CUresult cuStreamCreate(void **s, unsigned flags);
CUresult cuStreamDestroy_v2(void *s);
CUresult cuStreamSynchronize(void *s);
CUresult cuMemAlloc_v2(uint64_t *p, size_t n);
CUresult cuMemFree_v2(uint64_t p);
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s);
CUresult cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s);
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s);
CUresult cuModuleLoadDataEx(mock_mod **m, const void *image, unsigned n, int *opts, void **vals);
CUresult cuModuleUnload(mock_mod *m);
CUresult cuModuleGetFunction(mock_fn **f, mock_mod *m, const char *name);
CUresult cuFuncGetAttribute(int *v, int attr, mock_fn *f);
CUresult cuLaunchKernel(mock_fn *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *s, void **params,
                        void **extra);
CUresult cuGetErrorName(CUresult r, const char **s);

CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }

CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return OK;
}

CUresult cuDeviceGet(int *d, int id)
{
    if (id != 0) return INVALID_DEVICE;
    *d = 0;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, int d)
{
    (void)d;
    strncpy(name, "Mock GPU", (size_t)len);
    return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int d)
{
    (void)d;
    switch (attr) {
    case 1: *v = 1024; break;     /* threads per block */
    case 8: *v = 49152; break;    /* shared memory per block */
    case 97: *v = 232448; break;  /* opt-in shared memory per block */
    case 75: *v = 9; break;       /* compute capability */
    case 76: *v = 0; break;
    default: *v = 0;
    }
    return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *b, int d)
{
    (void)d;
    *b = MEM_BYTES;
    return OK;
}

CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    (void)d;
    *ctx = &ctx_token;
    return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(int d) { return d == 0 ? OK : INVALID_DEVICE; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &ctx_token ? OK : INVALID_VALUE; }

CUresult cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    *s = &stream_token;
    return OK;
}

CUresult cuStreamDestroy_v2(void *s) { return s == &stream_token ? OK : INVALID_VALUE; }
CUresult cuStreamSynchronize(void *s) { return s == &stream_token ? OK : INVALID_VALUE; }

CUresult cuMemAlloc_v2(uint64_t *p, size_t n)
{
    if (n == 0) return INVALID_VALUE;
    if (live_bytes + n > MEM_BYTES) return OUT_OF_MEMORY;
    size_t *b = malloc(sizeof(size_t) * 2 + n); /* the size, then padding to 16 bytes */
    if (!b) return OUT_OF_MEMORY;
    b[0] = n;
    live_bytes += n;
    *p = (uint64_t)(uintptr_t)(b + 2);
    return OK;
}

CUresult cuMemFree_v2(uint64_t p)
{
    size_t *b = (size_t *)(uintptr_t)p - 2;
    live_bytes -= b[0];
    free(b);
    return OK;
}

CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s)
{
    memcpy((void *)(uintptr_t)dst, src, n);
    return s == &stream_token ? OK : INVALID_VALUE;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s)
{
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return s == &stream_token ? OK : INVALID_VALUE;
}

CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s)
{
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return s == &stream_token ? OK : INVALID_VALUE;
}

CUresult cuModuleLoadDataEx(mock_mod **m, const void *image, unsigned n, int *opts, void **vals)
{
    const char *text = image;
    if (!memcmp(text, "\x7f" "ELF", 4)) return NO_BINARY_FOR_GPU; /* a cubin: not for this mock */
    if (!strstr(text, ".entry ")) {
        for (unsigned i = 0; i + 1 < n; i++)
            if (opts[i] == 5 && opts[i + 1] == 6) { /* the error log buffer and its size */
                size_t cap = (size_t)(uintptr_t)vals[i + 1];
                strncpy(vals[i], "ptxas fatal: mock: no .entry in the module", cap - 1);
            }
        return INVALID_PTX;
    }
    mock_mod *mm = malloc(sizeof *mm);
    if (!mm) return OUT_OF_MEMORY;
    mm->text = malloc(strlen(text) + 1);
    if (!mm->text) {
        free(mm);
        return OUT_OF_MEMORY;
    }
    strcpy(mm->text, text);
    *m = mm;
    return OK;
}

/* Functions live until their module is unloaded: kept in a small table. */
static mock_fn fns[1024];
static int nfns;

CUresult cuModuleUnload(mock_mod *m)
{
    free(m->text);
    free(m);
    return OK;
}

CUresult cuModuleGetFunction(mock_fn **f, mock_mod *m, const char *name)
{
    char pat[300];
    if (strlen(name) > 250) return NOT_FOUND;
    strcpy(pat, ".entry ");
    strcat(pat, name);
    strcat(pat, "(");
    if (!strstr(m->text, pat)) return NOT_FOUND;
    for (int i = 0; i < nfns; i++)
        if (!strcmp(fns[i].name, name)) {
            *f = &fns[i];
            return OK;
        }
    if (nfns == 1024) return OUT_OF_MEMORY;
    strcpy(fns[nfns].name, name);
    *f = &fns[nfns++];
    return OK;
}

CUresult cuFuncGetAttribute(int *v, int attr, mock_fn *f)
{
    (void)f;
    *v = attr == 0 ? 512 : 0;
    return OK;
}

CUresult cuLaunchKernel(mock_fn *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *s, void **params,
                        void **extra)
{
    if (s != &stream_token || shared || extra || !gx || !gy || !gz || !bx || !by || !bz)
        return INVALID_VALUE;
    if (mock_graphs.capturing) { /* recorded into the graph being captured, not run */
        mock_graphs.nodes_last++;
        return OK;
    }
    snprintf(mock_last_launch.name, sizeof mock_last_launch.name, "%.*s",
             (int)sizeof mock_last_launch.name - 1, f->name);
    mock_last_launch.grid[0] = gx, mock_last_launch.grid[1] = gy, mock_last_launch.grid[2] = gz;
    mock_last_launch.block[0] = bx, mock_last_launch.block[1] = by, mock_last_launch.block[2] = bz;
    mock_last_launch.count++;
    if (!strcmp(f->name, "mock_iota")) {
        float *buf = (float *)(uintptr_t)*(uint64_t *)params[0];
        int64_t off = *(int64_t *)params[1], n = *(int64_t *)params[2];
        float scale = *(float *)params[3];
        int32_t bias = *(int32_t *)params[4];
        for (int64_t i = 0; i < n; i++) buf[off + i] = scale * (float)i + (float)bias;
    }
    return OK;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
    switch (r) {
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
    case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
    case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return OK;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
    default: return INVALID_VALUE;
    }
}

/* ---- CUDA Graphs: a capture records the launches made on the stream instead of
 * running them; a graph launch "replays" them (counted). mock_graphs is what tests
 * inspect. ---- */
typedef struct mock_graph {
    int nodes;
} mock_graph;

CUresult cuStreamBeginCapture_v2(void *s, int mode);
CUresult cuStreamEndCapture(void *s, mock_graph **g);
CUresult cuGraphInstantiateWithFlags(mock_graph **x, mock_graph *g, unsigned long long flags);
CUresult cuGraphLaunch(mock_graph *x, void *s);
CUresult cuGraphExecDestroy(mock_graph *x);
CUresult cuGraphDestroy(mock_graph *g);

CUresult cuStreamBeginCapture_v2(void *s, int mode)
{
    if (s != &stream_token || mock_graphs.capturing || mode < 0 || mode > 2) return INVALID_VALUE;
    mock_graphs.capturing = 1;
    mock_graphs.nodes_last = 0;
    return OK;
}

CUresult cuStreamEndCapture(void *s, mock_graph **g)
{
    if (s != &stream_token || !mock_graphs.capturing) return INVALID_VALUE;
    mock_graphs.capturing = 0;
    mock_graphs.captures++;
    *g = malloc(sizeof **g);
    if (!*g) return OUT_OF_MEMORY;
    (*g)->nodes = mock_graphs.nodes_last;
    return OK;
}

CUresult cuGraphInstantiateWithFlags(mock_graph **x, mock_graph *g, unsigned long long flags)
{
    if (!g || flags) return INVALID_VALUE;
    *x = malloc(sizeof **x);
    if (!*x) return OUT_OF_MEMORY;
    **x = *g;
    mock_graphs.instantiated++;
    mock_graphs.live_execs++;
    return OK;
}

CUresult cuGraphLaunch(mock_graph *x, void *s)
{
    if (!x || s != &stream_token || mock_graphs.capturing) return INVALID_VALUE;
    mock_graphs.replays++;
    return OK;
}

CUresult cuGraphExecDestroy(mock_graph *x)
{
    free(x);
    mock_graphs.live_execs--;
    return OK;
}

CUresult cuGraphDestroy(mock_graph *g)
{
    free(g);
    return OK;
}
