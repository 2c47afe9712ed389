/*
 * device_opencl.c — the OpenCL device (device.h), with the driver loaded by dlopen.
 *
 * The OpenCL headers give the types and the prototypes' shapes at compile time; the
 * functions themselves come from dlopen("libOpenCL.so.1") (the ICD loader; $RX_OPENCL_LIB
 * overrides the name) and dlsym, into one table per device (`cl`), so the runtime links
 * no GPU library and a host without OpenCL only fails when an OpenCL device is opened.
 * Opening: load the library, take platforms in order and count their devices of any
 * type; device `id` is the id-th of that list (so `--device-id` counts across
 * platforms), then one context and one in-order queue for it.
 *
 * Buffers are cl_mem objects; every copy is blocking, so a download's data is there when
 * it returns and uploads never race host memory reuse. Launches set every argument and
 * queue the kernel under the device's mutex (a cl_kernel's arguments are shared state).
 * Program builds report the build log in the error (at most ~400 bytes of it).
 *
 * Built without <CL/cl.h> (a host without opencl-headers), rx_dev_opencl_open always
 * fails with "OpenCL support was not built".
 */
#include "relax/device.h"

#include "rt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RX_HAVE_CL

rx_dev *rx_dev_opencl_open(int32_t id, rx_rt_err *err)
{
    (void)id;
    rx_rt_fail(err, "no OpenCL device: OpenCL support was not built (no CL/cl.h at build time)");
    return NULL;
}

void *rx_dev_opencl_queue(rx_dev *d)
{
    (void)d;
    return NULL;
}

#else

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>

/* The entry points used, each as a pointer of the prototype's type. */
#define CL_FUNCS(X)                                                                         \
    X(clGetPlatformIDs, cl_int, (cl_uint, cl_platform_id *, cl_uint *))                     \
    X(clGetPlatformInfo, cl_int, (cl_platform_id, cl_platform_info, size_t, void *, size_t *)) \
    X(clGetDeviceIDs, cl_int, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *)) \
    X(clGetDeviceInfo, cl_int, (cl_device_id, cl_device_info, size_t, void *, size_t *))    \
    X(clCreateContext, cl_context, (const cl_context_properties *, cl_uint, const cl_device_id *, \
                                    void (*)(const char *, const void *, size_t, void *), void *, cl_int *)) \
    X(clReleaseContext, cl_int, (cl_context))                                               \
    X(clCreateCommandQueue, cl_command_queue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *)) \
    X(clReleaseCommandQueue, cl_int, (cl_command_queue))                                    \
    X(clCreateBuffer, cl_mem, (cl_context, cl_mem_flags, size_t, void *, cl_int *))         \
    X(clReleaseMemObject, cl_int, (cl_mem))                                                 \
    X(clEnqueueWriteBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, \
                                     cl_uint, const cl_event *, cl_event *))                \
    X(clEnqueueReadBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, \
                                    cl_uint, const cl_event *, cl_event *))                 \
    X(clEnqueueCopyBuffer, cl_int, (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, \
                                    cl_uint, const cl_event *, cl_event *))                 \
    X(clCreateProgramWithSource, cl_program, (cl_context, cl_uint, const char **, const size_t *, cl_int *)) \
    X(clBuildProgram, cl_int, (cl_program, cl_uint, const cl_device_id *, const char *,    \
                               void (*)(cl_program, void *), void *))                       \
    X(clGetProgramBuildInfo, cl_int, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *)) \
    X(clReleaseProgram, cl_int, (cl_program))                                               \
    X(clCreateKernel, cl_kernel, (cl_program, const char *, cl_int *))                      \
    X(clReleaseKernel, cl_int, (cl_kernel))                                                 \
    X(clGetKernelWorkGroupInfo, cl_int, (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *)) \
    X(clSetKernelArg, cl_int, (cl_kernel, cl_uint, size_t, const void *))                   \
    X(clEnqueueNDRangeKernel, cl_int, (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, \
                                       const size_t *, cl_uint, const cl_event *, cl_event *)) \
    X(clFinish, cl_int, (cl_command_queue))

#define CL_PTR(name, ret, args) ret(*name) args;
typedef struct cl_api {
    void *lib; /* dlopen handle */
    CL_FUNCS(CL_PTR)
} cl_api;

typedef struct cl_dev {
    cl_api cl;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    pthread_mutex_t mu; /* launches: arguments + enqueue */
} cl_dev;

struct rx_dev_program {
    cl_program p;
};

struct rx_dev_kernel {
    cl_kernel k;
    char name[64];
};

/* ---- loading ---- */

static int load_api(cl_api *a, rx_rt_err *err)
{
    const char *name;
    a->lib = rx_dev_load_lib("OpenCL", "RX_OPENCL_LIB", "libOpenCL.so.1", &name, err);
    if (!a->lib) return -1;
#define CL_SYM(fn, ret, args)                                                               \
    *(void **)&a->fn = dlsym(a->lib, #fn);                                                  \
    if (!a->fn) {                                                                           \
        dlclose(a->lib);                                                                    \
        return rx_rt_fail(err, "no OpenCL device: %s lacks %s", name, #fn);                 \
    }
    CL_FUNCS(CL_SYM)
#undef CL_SYM
    return 0;
}

/* Device id of all platforms' devices, in platform order; fills *out. */
static int find_device(cl_api *a, int32_t id, cl_device_id *out, cl_platform_id *plat,
                       rx_rt_err *err)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    cl_int rc = a->clGetPlatformIDs(16, ps, &np);
    if (rc != CL_SUCCESS || np == 0)
        return rx_rt_fail(err, "no OpenCL device: no platform (clGetPlatformIDs: %d)", (int)rc);
    int32_t seen = 0;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        cl_device_id ds[64];
        cl_uint nd = 0;
        if (a->clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS) continue;
        if (nd > 64) nd = 64;
        if (id >= seen && id < seen + (int32_t)nd) {
            *out = ds[id - seen];
            *plat = ps[i];
            return 0;
        }
        seen += (int32_t)nd;
    }
    if (seen == 0) return rx_rt_fail(err, "no OpenCL device: the platforms have no devices");
    return rx_rt_fail(err, "no OpenCL device %d (this host has %d: 0..%d)", (int)id, (int)seen,
                      (int)seen - 1);
}

static int64_t dev_u64(cl_dev *c, cl_device_info what)
{
    cl_ulong v = 0;
    c->cl.clGetDeviceInfo(c->dev, what, sizeof v, &v, NULL);
    return (int64_t)v;
}

static void fill_info(cl_dev *c, cl_platform_id plat, rx_dev_info *in)
{
    size_t wg = 0;
    cl_uint align_bits = 0;
    c->cl.clGetDeviceInfo(c->dev, CL_DEVICE_NAME, sizeof in->name - 1, in->name, NULL);
    c->cl.clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof in->platform - 1, in->platform, NULL);
    c->cl.clGetDeviceInfo(c->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    c->cl.clGetDeviceInfo(c->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    in->max_threads = (int64_t)wg;
    in->max_local_bytes = dev_u64(c, CL_DEVICE_LOCAL_MEM_SIZE);
    in->max_alloc_bytes = dev_u64(c, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    in->global_bytes = dev_u64(c, CL_DEVICE_GLOBAL_MEM_SIZE);
    in->align_bytes = align_bits / 8;
}

/* ---- operations ---- */

static cl_dev *C(rx_dev *d) { return d->impl; }

static int cl_alloc_(rx_dev *d, size_t n, rx_dev_buf **out, rx_rt_err *err)
{
    cl_dev *c = C(d);
    if ((int64_t)n > d->info.max_alloc_bytes)
        return rx_rt_fail(err, "OpenCL: cannot allocate %zu bytes (the device's largest buffer "
                          "is %lld bytes)", n, (long long)d->info.max_alloc_bytes);
    cl_int rc;
    cl_mem m = c->cl.clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, n ? n : 1, NULL, &rc);
    if (!m || rc != CL_SUCCESS)
        return rx_rt_fail(err, "OpenCL: cannot allocate %zu bytes (clCreateBuffer: %d)", n, (int)rc);
    *out = (rx_dev_buf *)m;
    return 0;
}

static void cl_free(rx_dev *d, rx_dev_buf *b)
{
    if (b) C(d)->cl.clReleaseMemObject((cl_mem)b);
}

static int cl_upload(rx_dev *d, rx_dev_buf *dst, size_t off, const void *src, size_t n,
                     rx_rt_err *err)
{
    cl_dev *c = C(d);
    if (!n) return 0;
    cl_int rc = c->cl.clEnqueueWriteBuffer(c->q, (cl_mem)dst, CL_TRUE, off, n, src, 0, NULL, NULL);
    return rc == CL_SUCCESS ? 0 : rx_rt_fail(err, "OpenCL: upload of %zu bytes failed (%d)", n, (int)rc);
}

static int cl_download(rx_dev *d, void *dst, rx_dev_buf *src, size_t off, size_t n, rx_rt_err *err)
{
    cl_dev *c = C(d);
    if (!n) return 0;
    cl_int rc = c->cl.clEnqueueReadBuffer(c->q, (cl_mem)src, CL_TRUE, off, n, dst, 0, NULL, NULL);
    return rc == CL_SUCCESS ? 0 : rx_rt_fail(err, "OpenCL: download of %zu bytes failed (%d)", n, (int)rc);
}

static int cl_copy(rx_dev *d, rx_dev_buf *dst, size_t doff, rx_dev_buf *src, size_t soff, size_t n,
                   rx_rt_err *err)
{
    cl_dev *c = C(d);
    if (!n) return 0;
    cl_int rc = c->cl.clEnqueueCopyBuffer(c->q, (cl_mem)src, (cl_mem)dst, soff, doff, n, 0, NULL, NULL);
    if (rc == CL_SUCCESS) rc = c->cl.clFinish(c->q);
    return rc == CL_SUCCESS ? 0 : rx_rt_fail(err, "OpenCL: copy of %zu bytes failed (%d)", n, (int)rc);
}

static int cl_build(rx_dev *d, const char *src, size_t n, rx_dev_program **out, rx_rt_err *err)
{
    cl_dev *c = C(d);
    cl_int rc;
    cl_program p = c->cl.clCreateProgramWithSource(c->ctx, 1, &src, &n, &rc);
    if (!p || rc != CL_SUCCESS) return rx_rt_fail(err, "OpenCL: clCreateProgramWithSource: %d", (int)rc);
    rc = c->cl.clBuildProgram(p, 1, &c->dev, "-cl-std=CL1.2", NULL, NULL);
    if (rc != CL_SUCCESS) {
        char log[400] = "";
        size_t got = 0;
        c->cl.clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &got);
        if (got == 0 || got > sizeof log - 1) { /* too long for the buffer: the head */
            size_t full = 0;
            c->cl.clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &full);
            char *all = full ? malloc(full + 1) : NULL;
            if (all && c->cl.clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, full, all, NULL) ==
                           CL_SUCCESS) {
                all[full] = '\0';
                snprintf(log, sizeof log, "%s", all);
            }
            free(all);
        }
        for (char *s = log; *s; s++)
            if (*s == '\n' || *s == '\r') *s = ' ';
        c->cl.clReleaseProgram(p);
        return rx_rt_fail(err, "OpenCL: clBuildProgram failed (%d): %s", (int)rc, log);
    }
    rx_dev_program *pr = malloc(sizeof *pr);
    if (!pr) {
        c->cl.clReleaseProgram(p);
        return rx_rt_fail(err, "out of memory");
    }
    pr->p = p;
    *out = pr;
    return 0;
}

static void cl_program_free(rx_dev *d, rx_dev_program *p)
{
    if (!p) return;
    C(d)->cl.clReleaseProgram(p->p);
    free(p);
}

static int cl_get_kernel(rx_dev *d, rx_dev_program *p, const char *name, rx_dev_kernel **out,
                     rx_rt_err *err)
{
    cl_dev *c = C(d);
    cl_int rc;
    cl_kernel k = c->cl.clCreateKernel(p->p, name, &rc);
    if (!k || rc != CL_SUCCESS) return rx_rt_fail(err, "OpenCL: no kernel %s in the program (%d)", name, (int)rc);
    cl_ulong local = 0;
    c->cl.clGetKernelWorkGroupInfo(k, c->dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    if ((int64_t)local > d->info.max_local_bytes) {
        c->cl.clReleaseKernel(k);
        return rx_rt_fail(err, "OpenCL: kernel %s needs %llu bytes of local memory, more than the "
                          "device's limit of %lld (CL_DEVICE_LOCAL_MEM_SIZE)", name,
                          (unsigned long long)local, (long long)d->info.max_local_bytes);
    }
    rx_dev_kernel *kk = calloc(1, sizeof *kk);
    if (!kk) {
        c->cl.clReleaseKernel(k);
        return rx_rt_fail(err, "out of memory");
    }
    kk->k = k;
    snprintf(kk->name, sizeof kk->name, "%s", name);
    *out = kk;
    return 0;
}

static void cl_kernel_free(rx_dev *d, rx_dev_kernel *k)
{
    if (!k) return;
    C(d)->cl.clReleaseKernel(k->k);
    free(k);
}

/* Sets argument i of k from a; 0 or the API's code. */
static cl_int set_arg(cl_dev *c, cl_kernel k, cl_uint i, const rx_dev_arg *a)
{
    switch (a->kind) {
    case RX_DEV_ARG_BUF: {
        cl_mem m = (cl_mem)a->buf;
        return c->cl.clSetKernelArg(k, i, sizeof m, &m);
    }
    case RX_DEV_ARG_I64: {
        cl_long v = a->i;
        return c->cl.clSetKernelArg(k, i, sizeof v, &v);
    }
    case RX_DEV_ARG_I32: {
        if (a->i < INT32_MIN || a->i > INT32_MAX) return CL_INVALID_ARG_VALUE;
        cl_int v = (cl_int)a->i;
        return c->cl.clSetKernelArg(k, i, sizeof v, &v);
    }
    case RX_DEV_ARG_F32: {
        cl_float v = a->f;
        return c->cl.clSetKernelArg(k, i, sizeof v, &v);
    }
    default:
        return CL_INVALID_ARG_VALUE;
    }
}

static int cl_launch(rx_dev *d, rx_dev_kernel *k, const rx_dev_arg *args, int nargs, int ndim,
                     const size_t *global, const size_t *local, rx_rt_err *err)
{
    cl_dev *c = C(d);
    int shape = rx_dev_launch_shape(d, k->name, ndim, global, local, err);
    if (shape) return shape < 0 ? -1 : 0; /* an empty grid runs nothing */
    pthread_mutex_lock(&c->mu);
    cl_int rc = CL_SUCCESS;
    int bad = -1;
    for (int i = 0; i < nargs && rc == CL_SUCCESS; i++) {
        rc = set_arg(c, k->k, (cl_uint)i, &args[i]);
        if (rc != CL_SUCCESS) bad = i;
    }
    if (rc == CL_SUCCESS)
        rc = c->cl.clEnqueueNDRangeKernel(c->q, k->k, (cl_uint)ndim, NULL, global, local, 0, NULL, NULL);
    pthread_mutex_unlock(&c->mu);
    if (bad >= 0) return rx_rt_fail(err, "OpenCL: kernel %s: argument %d rejected (%d)", k->name, bad, (int)rc);
    return rc == CL_SUCCESS ? 0 : rx_rt_fail(err, "OpenCL: kernel %s: launch failed (%d)", k->name, (int)rc);
}

static int cl_sync(rx_dev *d, rx_rt_err *err)
{
    cl_int rc = C(d)->cl.clFinish(C(d)->q);
    return rc == CL_SUCCESS ? 0 : rx_rt_fail(err, "OpenCL: clFinish failed (%d)", (int)rc);
}

static void cl_close(rx_dev *d)
{
    cl_dev *c = C(d);
    if (c->q) {
        c->cl.clFinish(c->q);
        c->cl.clReleaseCommandQueue(c->q);
    }
    if (c->ctx) c->cl.clReleaseContext(c->ctx);
    pthread_mutex_destroy(&c->mu);
    /* the ICD loader stays loaded: vendor libraries do not all survive dlclose */
    rx_dev_free_shell(d);
}

static const rx_dev_ops cl_ops = {
    "OpenCL", cl_alloc_, cl_free, cl_upload, cl_download, cl_copy, cl_build, cl_program_free,
    cl_get_kernel, cl_kernel_free, cl_launch, cl_sync, cl_close,
};

rx_dev *rx_dev_opencl_open(int32_t id, rx_rt_err *err)
{
    rx_dev *d = rx_dev_alloc("OpenCL", id, sizeof(cl_dev), err);
    if (!d) return NULL;
    cl_dev *c = d->impl;
    cl_platform_id plat;
    if (load_api(&c->cl, err) || find_device(&c->cl, id, &c->dev, &plat, err)) {
        rx_dev_free_shell(d);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    d->ops = &cl_ops;
    cl_int rc;
    c->ctx = c->cl.clCreateContext(NULL, 1, &c->dev, NULL, NULL, &rc);
    if (c->ctx) c->q = c->cl.clCreateCommandQueue(c->ctx, c->dev, 0, &rc);
    if (!c->ctx || !c->q) {
        rx_rt_fail(err, "no OpenCL device: device %d cannot be opened (%d)", (int)id, (int)rc);
        cl_close(d);
        return NULL;
    }
    fill_info(c, plat, &d->info);
    d->info.dl_type = kDLOpenCL;
    d->info.id = id;
    return d;
}

/* The device's command queue (a cl_command_queue *), for libraries that enqueue on it
 * (clblast.c); NULL when d is not an OpenCL device. */
void *rx_dev_opencl_queue(rx_dev *d)
{
    return d && d->ops == &cl_ops ? &C(d)->q : NULL;
}

#endif
