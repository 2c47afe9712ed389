/*
 * cublas.c — cuBLAS GEMMs on the runtime's CUDA device (relax/cublas.h).
 *
 * Loading. cuBLAS is opened once per process, at the first call, under a mutex, with
 * dlopen(RTLD_NOW | RTLD_LOCAL): $RX_CUBLAS_LIB when set, else the first of
 * libcublas.so.13, libcublas.so.12, libcublas.so on the loader's path, else
 * /usr/local/cuda/lib64/libcublas.so (the toolkit's place, not on the default path).
 * Its five entry points (cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2,
 * cublasSgemm_v2, cublasSgemmStridedBatched) come from dlsym. A failure is remembered
 * with its message, so a host without cuBLAS pays one failed search and every call
 * answers the same clear error. The library is never closed (it keeps per-process state
 * and static destructors, as CLBlast does; clblast.c).
 *
 * The ABI is cuBLAS's C API (cublas_api.h, stable across 11..13): handles are opaque
 * pointers, operations plain ints (CUBLAS_OP_N 0, CUBLAS_OP_T 1), statuses ints named
 * below for the errors. cuBLAS's header is not needed to build this file.
 *
 * Handle. One cublasHandle_t per device, made at the device's first GEMM with its
 * context current and bound to the device's stream (cublasSetStream_v2), kept on the
 * device (rx_dev_cuda_set_blas) and destroyed when the device closes. The GEMMs are
 * queued on that stream behind the generated kernels, like a launch; nothing waits.
 *
 * Row-major over column-major. The runtime's matrices are row-major (rx_clblast_mat:
 * buffer, element offset, leading dimension = elements between rows); cuBLAS's are
 * column-major. A row-major m x n matrix with leading dimension ld is, read
 * column-major, its n x m transpose with the same ld, so C = op(A) op(B) is computed
 * as C^T = op(B)^T op(A)^T: cuBLAS gets (opB, opA, n, m, k, B, ldb, A, lda, C, ldc),
 * each op the operand's own (a transposed row-major operand is an untransposed
 * column-major one and vice versa cancels out: see the essay's test in
 * tests/unit/runtime/test_cublas.c, which checks every combination against a host
 * GEMM). Offsets become device pointers (buffer + 4 * offset). Sizes are checked
 * before cuBLAS sees them: positive, ld at least the stored row length, and every
 * size, ld and stride within cuBLAS's int (sizes, ld) and long long (strides).
 */
#include "relax/cublas.h"

#include "rt_int.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cublas_ctx *cublas_handle; /* cublasHandle_t */
enum { OP_N = 0, OP_T = 1 };

typedef int (*create_fn)(cublas_handle *h);
typedef int (*destroy_fn)(cublas_handle h);
typedef int (*set_stream_fn)(cublas_handle h, void *stream);
typedef int (*sgemm_fn)(cublas_handle h, int ta, int tb, int m, int n, int k, const float *alpha,
                        const float *a, int lda, const float *b, int ldb, const float *beta,
                        float *c, int ldc);
typedef int (*sgemm_sb_fn)(cublas_handle h, int ta, int tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, long long sa,
                           const float *b, int ldb, long long sb, const float *beta, float *c,
                           int ldc, long long sc, int batch);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_state; /* 0 not tried, 1 loaded, -1 failed (g_why) */
static char g_why[600];
static create_fn g_create;
static destroy_fn g_destroy;
static set_stream_fn g_set_stream;
static sgemm_fn g_sgemm;
static sgemm_sb_fn g_sgemm_sb;

/* dlopen of the names tried in order (the essay); the handle or NULL with g_why. */
static void *open_lib(const char **used)
{
    const char *env = getenv("RX_CUBLAS_LIB");
    if (env && *env) {
        *used = env;
        void *lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            snprintf(g_why, sizeof g_why, "cuBLAS is not available: cannot load %s (%s)", env,
                     dlerror());
        return lib;
    }
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                        "/usr/local/cuda/lib64/libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *used = names[i];
            return lib;
        }
    }
    snprintf(g_why, sizeof g_why,
             "cuBLAS is not available: cannot load libcublas.so.13 (nor .so.12, .so, "
             "/usr/local/cuda/lib64/libcublas.so): install the CUDA toolkit's cuBLAS or set "
             "RX_CUBLAS_LIB");
    return NULL;
}

int rx_cublas_available(rx_rt_err *err)
{
    pthread_mutex_lock(&g_mu);
    if (g_state == 0) {
        const char *name = "";
        void *lib = open_lib(&name);
        g_state = -1;
        if (lib) {
            static const char *const syms[] = {"cublasCreate_v2", "cublasDestroy_v2",
                                               "cublasSetStream_v2", "cublasSgemm_v2",
                                               "cublasSgemmStridedBatched"};
            void *f[5];
            size_t i = 0;
            for (; i < 5 && (f[i] = dlsym(lib, syms[i])) != NULL; i++) {}
            if (i < 5) {
                snprintf(g_why, sizeof g_why, "cuBLAS is not available: %s lacks %s", name, syms[i]);
                dlclose(lib);
            } else {
                *(void **)&g_create = f[0];
                *(void **)&g_destroy = f[1];
                *(void **)&g_set_stream = f[2];
                *(void **)&g_sgemm = f[3];
                *(void **)&g_sgemm_sb = f[4];
                g_state = 1; /* kept loaded (the essay) */
            }
        }
    }
    int ok = g_state == 1;
    pthread_mutex_unlock(&g_mu);
    return ok ? 0 : rx_rt_fail(err, "%s", g_why);
}

/* cuBLAS's status codes by name (cublas_api.h), for the errors. */
static const char *status_name(int s)
{
    static const rx_code_name names[] = {
        {1, "CUBLAS_STATUS_NOT_INITIALIZED"}, {3, "CUBLAS_STATUS_ALLOC_FAILED"},
        {7, "CUBLAS_STATUS_INVALID_VALUE"},   {8, "CUBLAS_STATUS_ARCH_MISMATCH"},
        {11, "CUBLAS_STATUS_MAPPING_ERROR"},  {13, "CUBLAS_STATUS_EXECUTION_FAILED"},
        {14, "CUBLAS_STATUS_INTERNAL_ERROR"}, {15, "CUBLAS_STATUS_NOT_SUPPORTED"},
        {16, "CUBLAS_STATUS_LICENSE_ERROR"},
    };
    return rx_code_name_of(names, sizeof names / sizeof names[0], s, "cublasStatus_t");
}

static void destroy_handle(void *h) { g_destroy((cublas_handle)h); }

/* d's handle, made and bound to its stream at the first call (the essay). */
static cublas_handle handle_of(rx_dev *d, void *stream, rx_rt_err *err)
{
    pthread_mutex_lock(&g_mu);
    cublas_handle h = rx_dev_cuda_blas(d);
    int s = 0;
    if (!h) {
        s = g_create(&h);
        if (!s) {
            s = g_set_stream(h, stream);
            if (s) g_destroy(h);
            else rx_dev_cuda_set_blas(d, h, destroy_handle);
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (s) {
        rx_rt_fail(err, "cuBLAS: cannot make a handle for the device: %s (%d)", status_name(s), s);
        return NULL;
    }
    return h;
}

/* Operand checks: offset, ld and stride >= 0 and within cuBLAS's types; ld at least
 * the stored row length (cols) and 1. */
static int check_mat(const char *what, const rx_clblast_mat *x, int64_t cols, rx_rt_err *err)
{
    if (!x || !x->buf) return rx_rt_fail(err, "cuBLAS: sgemm: no buffer for %s", what);
    if (x->off < 0 || x->stride < 0 || x->ld < cols || x->ld < 1 || x->ld > INT_MAX)
        return rx_rt_fail(err,
                          "cuBLAS: sgemm: %s has offset %lld, leading dimension %lld and "
                          "stride %lld (rows of %lld elements)",
                          what, (long long)x->off, (long long)x->ld, (long long)x->stride,
                          (long long)cols);
    return 0;
}

static const float *dptr(const rx_clblast_mat *x)
{
    return (const float *)((uintptr_t)x->buf + (uintptr_t)x->off * sizeof(float));
}

int rx_cublas_sgemm(rx_dev *d, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                    const rx_clblast_mat *a, const rx_clblast_mat *b, float beta,
                    const rx_clblast_mat *c, rx_rt_err *err)
{
    if (rx_cublas_available(err)) return -1;
    if (!d || d->info.dl_type != kDLCUDA)
        return rx_rt_fail(err, "cuBLAS: sgemm needs a CUDA device (got %s)", d ? d->ops->api : "none");
    if (batch < 1 || m < 1 || n < 1 || k < 1 || batch > INT_MAX || m > INT_MAX || n > INT_MAX ||
        k > INT_MAX)
        return rx_rt_fail(err,
                          "cuBLAS: sgemm: sizes must be positive and below 2^31 (batch %lld, "
                          "m %lld, n %lld, k %lld)",
                          (long long)batch, (long long)m, (long long)n, (long long)k);
    if (check_mat("A", a, a && a->trans ? m : k, err) ||
        check_mat("B", b, b && b->trans ? k : n, err) ||
        check_mat("C", c, n, err))
        return -1;
    void *stream = rx_dev_cuda_stream(d, err);
    if (!stream) return -1;
    cublas_handle h = handle_of(d, stream, err);
    if (!h) return -1;
    /* C^T (n x m, column-major) = op(B)^T op(A)^T: the essay */
    int ta = a->trans ? OP_T : OP_N, tb = b->trans ? OP_T : OP_N, s;
    if (batch == 1)
        s = g_sgemm(h, tb, ta, (int)n, (int)m, (int)k, &alpha, dptr(b), (int)b->ld, dptr(a),
                    (int)a->ld, &beta, (float *)dptr(c), (int)c->ld);
    else
        s = g_sgemm_sb(h, tb, ta, (int)n, (int)m, (int)k, &alpha, dptr(b), (int)b->ld,
                       (long long)b->stride, dptr(a), (int)a->ld, (long long)a->stride, &beta,
                       (float *)dptr(c), (int)c->ld, (long long)c->stride, (int)batch);
    if (s != 0)
        return rx_rt_fail(err, "cuBLAS: sgemm failed: %s (%d) (batch %lld, m %lld, n %lld, k %lld)",
                          status_name(s), s, (long long)batch, (long long)m, (long long)n,
                          (long long)k);
    return 0;
}
