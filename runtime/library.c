/*
 * library.c — the library registry (name -> destination-passing function) and the
 * built-in BLAS entries.
 *
 * The registry is a small array per context searched linearly; names are resolved
 * once per module at load time (CALL_LIB carries a string index), so lookup cost does
 * not matter. The built-ins reach OpenBLAS through dlopen at their first call so that
 * rxrt links and loads on devices without it; a missing library is a clean call-time
 * error. Which OpenBLAS: $RX_BLAS_LIB when set (a path or soname; only that one), else
 * the OpenMP build of OpenBLAS where Debian installs it (RX_OPENBLAS_OPENMP, from the
 * build's multiarch directory), else whatever libopenblas.so.0 resolves to (Debian's
 * default is the pthreads build). The OpenMP build comes first because the generated
 * kernels run on libgomp's threads: with the pthreads build two pools of busy-waiting
 * threads take turns on the same cores between a kernel and a BLAS call (measured on a
 * decoder block's prefill: 10-15% of its time in sched_yield and spinning).
 * rx_rt_blas_library() names the one that was loaded. The library ABI (int32_t
 * fn(DLTensor *const *, int32_t)) has no context argument, so the built-ins keep the
 * opened handle (and its name, copied) in one process-wide slot initialised under
 * pthread_once — the only global state of the runtime (the handle is never closed; the
 * library stays loaded for the process's life).
 *
 * blas.sgemm / blas.matmul: args A, B, C (C is the destination), f32, dense:
 *   A (m, k), B (k, n), C (m, n);  or batched A (b, m, k), B (b, k, n) or (k, n),
 *   C (b, m, n).
 * The fused matmul entries (what compiler/pass/library_lower.c emits) run the same
 * cblas_sgemm into C and then one epilogue pass over C, while the rows are still warm:
 *   blas.matmul_bias           (A, B, bias, C)  C = A @ B + bias   (bias (n,), over the
 *                                                last axis)
 *   blas.matmul_bias_ACT       (A, B, bias, C)  C = act(A @ B + bias)
 *   blas.matmul_ACT            (A, B, C)        C = act(A @ B)
 * with ACT one of relu (max(x, 0)), gelu (0.5 x (1 + erf(x / sqrt 2))), silu
 * (x / (1 + exp(-x))) — the formulas of the generated loops (legalize_elemwise.c),
 * evaluated in float like them. Cost: the epilogue is one read and write of C, O(b m n),
 * against the O(b m n k) of the product.
 * blas.conv2d (convolutions on the same sgemm, with their epilogues) is library_conv.c's.
 * The runtime-native "rt.*" functions live in library_rt.c; the table of every
 * built-in name (RX_RT_BUILTIN_LIBS below) is the one list both the registration and
 * rx_rt_builtin_library_names read, so the compiler's check and the loader agree.
 */
#include "rt_int.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { BLAS_OK = 0, BLAS_NOLIB = 1, BLAS_ARGS = 2, BLAS_DTYPE = 3, BLAS_SHAPE = 4 };

/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
typedef rx_rt_sgemm_fn sgemm_fn;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT; /* guards blas_sgemm, blas_name */
static sgemm_fn blas_sgemm;                           /* process-wide, see the essay */
static char blas_name[512];                           /* the library blas_sgemm is from */
static void *blas_handle;                             /* its dlopen handle (threads.c) */

/* cblas_sgemm from the library `name`, or false. */
static bool blas_try(const char *name)
{
    if (strlen(name) >= sizeof blas_name) return false; /* no such library name */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    void *sym = dlsym(h, "cblas_sgemm");
    if (!sym) {
        dlclose(h);
        return false;
    }
    memcpy(&blas_sgemm, &sym, sizeof blas_sgemm);
    memcpy(blas_name, name, strlen(name) + 1);
    blas_handle = h;
    return true;
}

static void blas_open(void)
{
    const char *env = getenv("RX_BLAS_LIB");
    if (env && *env) {
        blas_try(env);
        return;
    }
#ifdef RX_OPENBLAS_OPENMP
    if (blas_try(RX_OPENBLAS_OPENMP)) return;
#endif
    blas_try("libopenblas.so.0");
}

rx_rt_sgemm_fn rx_rt_sgemm(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_sgemm;
}

const char *rx_rt_blas_library(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_sgemm ? blas_name : NULL;
}

void *rx_rt_blas_handle(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_handle;
}

static const char *blas_strerr(int32_t code)
{
    switch (code) {
    case BLAS_NOLIB: {
        const char *env = getenv("RX_BLAS_LIB");
        return env && *env ? "OpenBLAS is not available (dlopen of $RX_BLAS_LIB failed)"
                           : "OpenBLAS is not available (dlopen libopenblas.so.0 failed)";
    }
    case BLAS_ARGS: return "expects 3 tensors (A, B, C)";
    case BLAS_DTYPE: return "expects float32 tensors";
    case BLAS_SHAPE: return "shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C (b?, m, n))";
    default: return NULL;
    }
}

/* The fused entries' messages: blas_strerr's, with the bias. */
static const char *blas_fused_strerr(int32_t code)
{
    switch (code) {
    case BLAS_ARGS: return "expects 3 tensors (A, B, C), or 4 (A, B, bias, C) with a bias";
    case BLAS_SHAPE:
        return "shape mismatch (A (b?, m, k) @ B (b?, k, n) [+ bias (n,)] -> C (b?, m, n))";
    default: return blas_strerr(code);
    }
}

static bool is_f32(const DLTensor *t)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static const float *fdata(const DLTensor *t)
{
    return (const float *)(const void *)((const char *)t->data + t->byte_offset);
}

/* C = A @ B for the shapes of the essay: the whole of blas.matmul, and the first step
 * of the fused entries. *rows and *cols get C's row count (b * m) and n. */
static int32_t blas_gemm(const DLTensor *A, const DLTensor *B, DLTensor *C, int64_t *rows,
                         int64_t *cols)
{
    if (!is_f32(A) || !is_f32(B) || !is_f32(C)) return BLAS_DTYPE;
    int64_t batch = 1, m, k, n;
    if (A->ndim == 2 && B->ndim == 2 && C->ndim == 2) {
        m = A->shape[0], k = A->shape[1], n = B->shape[1];
        if (B->shape[0] != k || C->shape[0] != m || C->shape[1] != n) return BLAS_SHAPE;
    } else if (A->ndim == 3 && C->ndim == 3 && (B->ndim == 3 || B->ndim == 2)) {
        batch = A->shape[0], m = A->shape[1], k = A->shape[2];
        n = B->shape[B->ndim - 1];
        if (B->shape[B->ndim - 2] != k || C->shape[0] != batch || C->shape[1] != m ||
            C->shape[2] != n || (B->ndim == 3 && B->shape[0] != batch))
            return BLAS_SHAPE;
    } else {
        return BLAS_SHAPE;
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return BLAS_SHAPE;
    pthread_once(&blas_once, blas_open);
    if (!blas_sgemm) return BLAS_NOLIB;
    const float *a = fdata(A), *b = fdata(B);
    float *c = (float *)(uintptr_t)fdata(C);
    int64_t bstride = B->ndim == 3 ? k * n : 0;
    if (B->ndim == 2 && batch > 1 && batch <= INT32_MAX / (m ? m : 1)) {
        m *= batch; /* one shared B: the batch is more rows of one product */
        batch = 1;
    }
    for (int64_t i = 0; i < batch; i++) {
        if (m == 0 || n == 0) break;
        if (k == 0) {
            memset(c + i * m * n, 0, sizeof(float) * (size_t)(m * n));
            continue;
        }
        /* CblasRowMajor = 101, CblasNoTrans = 111 */
        blas_sgemm(101, 111, 111, (int)m, (int)n, (int)k, 1.0f, a + i * m * k, (int)k,
                   b + i * bstride, (int)n, 0.0f, c + i * m * n, (int)n);
    }
    *rows = batch * m;
    *cols = n;
    return BLAS_OK;
}

static int32_t blas_sgemm_entry(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return BLAS_ARGS;
    int64_t rows, cols;
    return blas_gemm(args[0], args[1], args[2], &rows, &cols);
}

/* The epilogue activations (the essay's formulas). */
enum { ACT_NONE, ACT_RELU, ACT_GELU, ACT_SILU };

static float act_apply(int act, float x)
{
    switch (act) {
    case ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case ACT_SILU: return x / (1.0f + expf(-x));
    default: return x;
    }
}

/* C = act(A @ B [+ bias]): the fused entries. With a bias, args are (A, B, bias, C). */
static int32_t blas_fused(DLTensor *const *args, int32_t nargs, bool bias, int act)
{
    if (nargs != (bias ? 4 : 3)) return BLAS_ARGS;
    DLTensor *C = args[nargs - 1];
    const DLTensor *bt = bias ? args[2] : NULL;
    if (bt && !is_f32(bt)) return BLAS_DTYPE;
    int64_t rows, cols;
    if (bt && (bt->ndim != 1 || C->ndim < 1 || bt->shape[0] != C->shape[C->ndim - 1]))
        return is_f32(C) ? BLAS_SHAPE : BLAS_DTYPE;
    int32_t rc = blas_gemm(args[0], args[1], C, &rows, &cols);
    if (rc != BLAS_OK) return rc;
    float *c = (float *)(uintptr_t)fdata(C);
    const float *b = bt ? fdata(bt) : NULL;
    for (int64_t i = 0; i < rows; i++) {
        float *row = c + i * cols;
        if (b)
            for (int64_t j = 0; j < cols; j++) row[j] += b[j];
        if (act != ACT_NONE)
            for (int64_t j = 0; j < cols; j++) row[j] = act_apply(act, row[j]);
    }
    return BLAS_OK;
}

#define BLAS_FUSED(fname, bias, act)                                   \
    static int32_t fname(DLTensor *const *args, int32_t nargs)         \
    {                                                                  \
        return blas_fused(args, nargs, bias, act);                     \
    }
BLAS_FUSED(blas_matmul_bias, true, ACT_NONE)
BLAS_FUSED(blas_matmul_bias_relu, true, ACT_RELU)
BLAS_FUSED(blas_matmul_bias_gelu, true, ACT_GELU)
BLAS_FUSED(blas_matmul_bias_silu, true, ACT_SILU)
BLAS_FUSED(blas_matmul_relu, false, ACT_RELU)
BLAS_FUSED(blas_matmul_gelu, false, ACT_GELU)
BLAS_FUSED(blas_matmul_silu, false, ACT_SILU)
#undef BLAS_FUSED

int rx_rt_register_library(rx_rt_ctx *ctx, const char *name, rx_rt_libfn fn,
                           const char *(*strerr)(int32_t code))
{
    int rc = 0;
    pthread_mutex_lock(&ctx->lib_mu);
    for (size_t i = 0; i < ctx->nlibs; i++)
        if (!strcmp(ctx->libs[i].name, name)) {
            ctx->libs[i].fn = fn;
            ctx->libs[i].strerr = strerr;
            goto out;
        }
    if (ctx->nlibs == ctx->clibs) {
        size_t cap = ctx->clibs ? ctx->clibs * 2 : 8;
        rx_rt_libentry *nl = realloc(ctx->libs, sizeof *nl * cap);
        if (!nl) {
            rc = -1;
            goto out;
        }
        ctx->libs = nl;
        ctx->clibs = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        rc = -1;
        goto out;
    }
    ctx->libs[ctx->nlibs++] = (rx_rt_libentry){copy, fn, strerr};
out:
    pthread_mutex_unlock(&ctx->lib_mu);
    return rc;
}

int rx_rt_lib_find(rx_rt_ctx *ctx, const char *name, rx_rt_libentry *out)
{
    int rc = -1;
    pthread_mutex_lock(&ctx->lib_mu);
    for (size_t i = 0; i < ctx->nlibs; i++)
        if (!strcmp(ctx->libs[i].name, name)) {
            *out = ctx->libs[i];
            rc = 0;
        }
    pthread_mutex_unlock(&ctx->lib_mu);
    return rc;
}

/* clblast.matmul on CPU tensors: it runs on OpenCL device tensors only, where the VM
 * calls CLBlast instead (vm_device.c); an artifact for cpu never names it (vmgen). */
static int32_t clblast_on_host(DLTensor *const *args, int32_t nargs)
{
    (void)args, (void)nargs;
    return 1;
}

static const char *clblast_on_host_strerr(int32_t code)
{
    (void)code;
    return "runs on OpenCL device tensors only (artifacts built for opencl,clblast=1)";
}

/* The built-in library functions, sorted by name: what every context registers and
 * what rx_rt_builtin_library_names lists. */
#define RX_RT_BUILTIN_LIBS(X)                                               \
    X("blas.conv2d", rx_rt_conv2d, rx_rt_conv2d_strerr)                     \
    X("blas.matmul", blas_sgemm_entry, blas_strerr)                         \
    X("blas.matmul_bias", blas_matmul_bias, blas_fused_strerr)              \
    X("blas.matmul_bias_gelu", blas_matmul_bias_gelu, blas_fused_strerr)    \
    X("blas.matmul_bias_relu", blas_matmul_bias_relu, blas_fused_strerr)    \
    X("blas.matmul_bias_silu", blas_matmul_bias_silu, blas_fused_strerr)    \
    X("blas.matmul_gelu", blas_matmul_gelu, blas_fused_strerr)              \
    X("blas.matmul_relu", blas_matmul_relu, blas_fused_strerr)              \
    X("blas.matmul_silu", blas_matmul_silu, blas_fused_strerr)              \
    X("blas.sgemm", blas_sgemm_entry, blas_strerr)                          \
    X("clblast.matmul", clblast_on_host, clblast_on_host_strerr)            \
    X("rt.matmul", rx_rt_matmul, rx_rt_matmul_strerr)                       \
    X("rt.pool2d", rx_rt_pool2d, rx_rt_pool2d_strerr)                       \
    X("rt.rms_norm", rx_rt_rms_norm, rx_rt_rms_norm_strerr)

const char *const *rx_rt_builtin_library_names(void)
{
#define RX_RT_X_NAME(name, fn, strerr) name,
    static const char *const names[] = {RX_RT_BUILTIN_LIBS(RX_RT_X_NAME) NULL};
#undef RX_RT_X_NAME
    return names;
}

int rx_rt_lib_builtins(rx_rt_ctx *ctx)
{
#define RX_RT_X_REG(name, fn, strerr) \
    if (rx_rt_register_library(ctx, name, fn, strerr)) return -1;
    RX_RT_BUILTIN_LIBS(RX_RT_X_REG)
#undef RX_RT_X_REG
    return 0;
}

void rx_rt_lib_close(rx_rt_ctx *ctx)
{
    (void)ctx; /* the OpenBLAS handle is process-wide (see the essay) */
}
