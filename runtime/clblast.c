/*
 * clblast.c — CLBlast GEMMs on the runtime's OpenCL device (relax/clblast.h).
 *
 * Loading. libclblast.so.1 ($RX_CLBLAST_LIB) is opened once per process, at the first
 * call, under a mutex, with dlopen(RTLD_NOW | RTLD_LOCAL); its two entry points
 * (CLBlastSgemm, CLBlastSgemmStridedBatched) come from dlsym. A failure is remembered
 * (the message too), so a host without CLBlast pays one failed dlopen, and every call
 * then answers the same clear error. The library is never closed: CLBlast keeps a
 * process-wide cache of the kernels it compiled per device (its first GEMM of a shape
 * class on a device builds OpenCL programs, which is slow on PoCL), and unloading it
 * would drop that cache and leave its static destructors to run at exit anyway.
 *
 * The ABI is CLBlast's C API (clblast_c.h, stable since 1.0): its enums are plain ints
 * (row-major 101, no transpose 111, transpose 112) and its status codes OpenCL's plus
 * its own, named below for the errors. CLBlast's header is not needed to build this
 * file; CL/cl.h is (for cl_mem and cl_command_queue), as for device_opencl.c.
 *
 * Sizes are checked before CLBlast sees them (positive m, n, k, batch; offsets and
 * leading dimensions >= 0 and within size_t), so a bad call is our error message
 * rather than CLBlast's code. The GEMM is enqueued without an event on the device's
 * queue (rx_dev_opencl_queue): the queue is in order, so it runs after the kernels
 * queued before it and before those queued after, and the device's next sync waits
 * for it.
 */
#include "relax/clblast.h"

#include "rt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RX_HAVE_CL

int rx_clblast_available(rx_rt_err *err)
{
    return rx_rt_fail(err, "CLBlast is not available: OpenCL support was not built");
}

int rx_clblast_sgemm(rx_dev *d, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                     const rx_clblast_mat *a, const rx_clblast_mat *b, float beta,
                     const rx_clblast_mat *c, rx_rt_err *err)
{
    (void)d, (void)batch, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)b, (void)beta,
        (void)c;
    return rx_clblast_available(err);
}

#else

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>

enum { ROW_MAJOR = 101, TRANS_NO = 111, TRANS_YES = 112 };

typedef int (*sgemm_fn)(int layout, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
                        cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff, size_t ldb,
                        float beta, cl_mem c, size_t coff, size_t ldc, cl_command_queue *q,
                        cl_event *ev);
typedef int (*sgemm_sb_fn)(int layout, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
                           cl_mem a, size_t aoff, size_t lda, size_t astride, cl_mem b, size_t boff,
                           size_t ldb, size_t bstride, float beta, cl_mem c, size_t coff,
                           size_t ldc, size_t cstride, size_t batch, cl_command_queue *q,
                           cl_event *ev);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_state; /* 0 not tried, 1 loaded, -1 failed (g_why) */
static char g_why[400];
static sgemm_fn g_sgemm;
static sgemm_sb_fn g_sgemm_sb;

int rx_clblast_available(rx_rt_err *err)
{
    pthread_mutex_lock(&g_mu);
    if (g_state == 0) {
        const char *name = getenv("RX_CLBLAST_LIB");
        if (!name || !*name) name = "libclblast.so.1";
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(g_why, sizeof g_why,
                     "CLBlast is not available: cannot load %s (%s): "
                     "install libclblast1 (Debian) or set RX_CLBLAST_LIB",
                     name, dlerror());
            g_state = -1;
        } else {
            *(void **)&g_sgemm = dlsym(lib, "CLBlastSgemm");
            *(void **)&g_sgemm_sb = dlsym(lib, "CLBlastSgemmStridedBatched");
            if (!g_sgemm || !g_sgemm_sb) {
                snprintf(g_why, sizeof g_why, "CLBlast is not available: %s lacks %s", name,
                         g_sgemm ? "CLBlastSgemmStridedBatched" : "CLBlastSgemm");
                dlclose(lib);
                g_state = -1;
            } else {
                g_state = 1; /* kept loaded (the essay) */
            }
        }
    }
    int ok = g_state == 1;
    pthread_mutex_unlock(&g_mu);
    return ok ? 0 : rx_rt_fail(err, "%s", g_why);
}

/* CLBlast's status codes by name (clblast_c.h), for the errors. */
static const char *status_name(int s)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {-3, "kOpenCLCompilerNotAvailable"}, {-4, "kTempBufferAllocFailure"},
        {-5, "kOpenCLOutOfResources"},       {-6, "kOpenCLOutOfHostMemory"},
        {-11, "kOpenCLBuildProgramFailure"}, {-30, "kInvalidValue"},
        {-36, "kInvalidCommandQueue"},       {-38, "kInvalidMemObject"},
        {-54, "kInvalidLocalThreadsTotal"},  {-1024, "kNotImplemented"},
        {-1022, "kInvalidMatrixA"},          {-1021, "kInvalidMatrixB"},
        {-1020, "kInvalidMatrixC"},          {-1017, "kInvalidDimension"},
        {-1016, "kInvalidLeadDimA"},         {-1015, "kInvalidLeadDimB"},
        {-1014, "kInvalidLeadDimC"},         {-1011, "kInsufficientMemoryA"},
        {-1010, "kInsufficientMemoryB"},     {-1009, "kInsufficientMemoryC"},
        {-2049, "kInvalidBatchCount"},       {-2046, "kInvalidLocalMemUsage"},
        {-2041, "kDatabaseError"},           {-2040, "kUnknownError"},
        {-2039, "kUnexpectedError"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == s) return names[i].name;
    return "status";
}

/* Operand checks: offset, leading dimension and stride >= 0; ld at least the stored
 * row length (cols). */
static int check_mat(const char *what, const rx_clblast_mat *x, int64_t cols, rx_rt_err *err)
{
    if (!x || !x->buf) return rx_rt_fail(err, "CLBlast: sgemm: no buffer for %s", what);
    if (x->off < 0 || x->stride < 0 || x->ld < cols || x->ld < 1)
        return rx_rt_fail(err,
                          "CLBlast: sgemm: %s has offset %lld, leading dimension %lld and "
                          "stride %lld (rows of %lld elements)",
                          what, (long long)x->off, (long long)x->ld, (long long)x->stride,
                          (long long)cols);
    return 0;
}

int rx_clblast_sgemm(rx_dev *d, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                     const rx_clblast_mat *a, const rx_clblast_mat *b, float beta,
                     const rx_clblast_mat *c, rx_rt_err *err)
{
    if (rx_clblast_available(err)) return -1;
    cl_command_queue *q = rx_dev_opencl_queue(d);
    if (!q)
        return rx_rt_fail(err, "CLBlast: sgemm needs an OpenCL device (got %s)",
                          d ? d->ops->api : "none");
    if (batch < 1 || m < 1 || n < 1 || k < 1)
        return rx_rt_fail(err,
                          "CLBlast: sgemm: sizes must be positive (batch %lld, m %lld, n "
                          "%lld, k %lld)",
                          (long long)batch, (long long)m, (long long)n, (long long)k);
    if (check_mat("A", a, a->trans ? m : k, err) || check_mat("B", b, b->trans ? k : n, err) ||
        check_mat("C", c, n, err))
        return -1;
    int ta = a->trans ? TRANS_YES : TRANS_NO, tb = b->trans ? TRANS_YES : TRANS_NO, s;
    cl_mem ab = (cl_mem)a->buf, bb = (cl_mem)b->buf, cb = (cl_mem)c->buf;
    if (batch == 1)
        s = g_sgemm(ROW_MAJOR, ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, ab, (size_t)a->off,
                    (size_t)a->ld, bb, (size_t)b->off, (size_t)b->ld, beta, cb, (size_t)c->off,
                    (size_t)c->ld, q, NULL);
    else
        s = g_sgemm_sb(ROW_MAJOR, ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, ab,
                       (size_t)a->off, (size_t)a->ld, (size_t)a->stride, bb, (size_t)b->off,
                       (size_t)b->ld, (size_t)b->stride, beta, cb, (size_t)c->off, (size_t)c->ld,
                       (size_t)c->stride, (size_t)batch, q, NULL);
    if (s != 0)
        return rx_rt_fail(err,
                          "CLBlast: sgemm failed: %s (%d) (batch %lld, m %lld, n %lld, k "
                          "%lld)",
                          status_name(s), s, (long long)batch, (long long)m, (long long)n,
                          (long long)k);
    return 0;
}

#endif
