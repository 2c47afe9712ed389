/*
 * bench_device.c — launch overhead and copy cost of a GPU device (device.h): OpenCL, or
 * Vulkan with --api vulkan (its kernel compiled from GLSL by the compiler's spirv.c).
 *
 * On this machine the devices are PoCL and lavapipe on the CPU, so what is meaningful is the
 * runtime's cost per kernel launch and per copy, not kernel speed. Measured, each as the
 * median of `repeat` samples of `number` operations (per operation):
 *
 *   launch_sync_us     one launch of an empty kernel (1 work-group of 64) + sync: what a
 *                      call pays when it waits for every kernel
 *   launch_queued_us   `number` launches back to back, one sync at the end: what a call
 *                      pays when the queue runs ahead (the VM's normal case)
 *   cpu_call_us        the reference: one call of an empty C kernel through a function
 *                      pointer with the CPU kernel ABI (what the VM pays per CPU kernel)
 *   roundtrip_us       upload + download of `bytes` bytes (blocking)
 *   memcpy_us          the reference: two memcpy of the same bytes on the host
 *
 * and the ratios launch_sync / cpu_call, launch_queued / cpu_call, roundtrip / memcpy.
 * Correctness: the kernel writes its group count into a buffer that is read back and
 * checked, and the round trip's bytes must come back equal, so the smoke run is a test.
 *
 *   bench_device [--api opencl|vulkan] [--device-id N] [--repeat R] [--number K] [--bytes B]
 * Output: one JSON object on one line; exit 1 with "error: ..." when no device opens.
 */
#include "relax/device.h"
#include "relax/spirv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int32_t empty_kernel(void *const *data, const int64_t *ivars)
{
    (void)ivars;
    __asm__ volatile("" : : "r"(data) : "memory"); /* not optimized away */
    return 0;
}

static const char src[] =
    "__kernel void mark(__global int *out) {\n"
    "  if (get_global_id(0) == 0) out[0] = (int)get_num_groups(0);\n"
    "}\n";

static const char glsl[] =
    "#version 450\n"
    "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n"
    "layout(std430, binding = 0) writeonly buffer O { int o[]; };\n"
    "void main() { if (gl_GlobalInvocationID.x == 0u) o[0] = int(gl_NumWorkGroups.x); }\n";

/* The program of the "mark" kernel for d: OpenCL C source, or a SPIR-V bundle. */
static int build_mark(rx_dev *d, rx_dev_program **p, rx_rt_err *e)
{
    if (d->info.dl_type != kDLVulkan) return d->ops->build(d, src, strlen(src), p, e);
    const char *name = "mark", *text = glsl;
    rx_sb b = {0};
    int rc = rx_spirv_bundle(&name, &text, 1, &b, e->msg, sizeof e->msg);
    if (!rc) rc = d->ops->build(d, b.p, b.n, p, e);
    rx_sb_free(&b);
    return rc;
}

static int fail(const char *msg)
{
    fprintf(stderr, "error: %s\n", msg);
    return 1;
}

int main(int argc, char **argv)
{
    int id = 0, repeat = 7, number = 200;
    int32_t api = kDLOpenCL;
    long bytes = 1 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--api") && (!strcmp(argv[i + 1], "opencl") || !strcmp(argv[i + 1], "vulkan")))
            api = rx_dev_type_of_target(argv[i + 1]);
        else if (!strcmp(argv[i], "--device-id")) id = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--number")) number = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bytes")) bytes = atol(argv[i + 1]);
        else return fail("usage: bench_device [--api opencl|vulkan] [--device-id N] [--repeat R] "
                         "[--number K] [--bytes B]");
    }
    if (repeat < 1 || repeat > 1000 || number < 1 || number > 1000000 || bytes < 1 || bytes > (1L << 30))
        return fail("bad --repeat, --number or --bytes");
    rx_rt_err e = {{0}};
    rx_dev *d = rx_dev_open(api, id, &e);
    if (!d) return fail(e.msg);
    rx_dev_program *p = NULL;
    rx_dev_kernel *k = NULL;
    rx_dev_buf *out = NULL, *buf = NULL;
    char *host = malloc((size_t)bytes), *back = malloc((size_t)bytes), *copy = malloc((size_t)bytes);
    double *s = calloc((size_t)repeat, sizeof *s);
    int rc = 1;
    if (!host || !back || !copy || !s) {
        fail("out of memory");
        goto done;
    }
    if (build_mark(d, &p, &e) || d->ops->kernel(d, p, "mark", &k, &e) ||
        d->ops->alloc(d, sizeof(int), &out, &e) || d->ops->alloc(d, (size_t)bytes, &buf, &e)) {
        fail(e.msg);
        goto done;
    }
    rx_dev_arg arg = {RX_DEV_ARG_BUF, out, 0, 0};
    size_t global = 64, local = 64;
    double sync_us, queued_us, call_us, rt_us, mc_us;
    /* launch + sync */
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        for (int i = 0; i < number; i++)
            if (d->ops->launch(d, k, &arg, 1, 1, &global, &local, &e) || d->ops->sync(d, &e)) {
                fail(e.msg);
                goto done;
            }
        s[r] = (now_us() - t0) / number;
    }
    sync_us = median(s, repeat);
    /* queued launches, one sync */
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        for (int i = 0; i < number; i++)
            if (d->ops->launch(d, k, &arg, 1, 1, &global, &local, &e)) {
                fail(e.msg);
                goto done;
            }
        if (d->ops->sync(d, &e)) {
            fail(e.msg);
            goto done;
        }
        s[r] = (now_us() - t0) / number;
    }
    queued_us = median(s, repeat);
    int got = 0;
    if (d->ops->download(d, &got, out, 0, sizeof got, &e) || got != 1) {
        fprintf(stderr, "error: the kernel wrote %d, expected 1 group (%s)\n", got, e.msg);
        goto done;
    }
    /* the reference: CPU kernel ABI calls */
    int32_t (*volatile fn)(void *const *, const int64_t *) = empty_kernel;
    void *data[1] = {host};
    int64_t iv[1] = {0};
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        for (int i = 0; i < number * 100; i++) fn(data, iv);
        s[r] = (now_us() - t0) / (number * 100.0);
    }
    call_us = median(s, repeat);
    /* round trip vs memcpy */
    for (long i = 0; i < bytes; i++) host[i] = (char)(i * 7 + 1);
    memset(copy, 0, (size_t)bytes); /* pages touched before any timing */
    memset(back, 0, (size_t)bytes);
    int nrt = number / 20 > 0 ? number / 20 : 1;
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        for (int i = 0; i < nrt; i++)
            if (d->ops->upload(d, buf, 0, host, (size_t)bytes, &e) ||
                d->ops->download(d, back, buf, 0, (size_t)bytes, &e)) {
                fail(e.msg);
                goto done;
            }
        s[r] = (now_us() - t0) / nrt;
    }
    rt_us = median(s, repeat);
    if (memcmp(host, back, (size_t)bytes)) {
        fail("the round trip changed the bytes");
        goto done;
    }
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        for (int i = 0; i < nrt; i++) {
            memcpy(copy, host, (size_t)bytes);
            __asm__ volatile("" : : "r"(copy) : "memory");
            memcpy(back, copy, (size_t)bytes);
            __asm__ volatile("" : : "r"(back) : "memory");
        }
        s[r] = (now_us() - t0) / nrt;
    }
    mc_us = median(s, repeat);
    printf("{\"api\": \"%s\", \"device\": \"%s\", \"platform\": \"%s\", \"launch_sync_us\": %.3f, "
           "\"launch_queued_us\": %.3f, \"cpu_call_us\": %.5f, \"launch_sync_vs_cpu_call\": %.1f, "
           "\"launch_queued_vs_cpu_call\": %.1f, \"bytes\": %ld, \"roundtrip_us\": %.1f, "
           "\"memcpy_us\": %.1f, \"roundtrip_vs_memcpy\": %.2f, \"repeat\": %d, \"number\": %d}\n",
           d->ops->api, d->info.name, d->info.platform, sync_us, queued_us, call_us, sync_us / call_us,
           queued_us / call_us, bytes, rt_us, mc_us, rt_us / mc_us, repeat, number);
    rc = 0;
done:
    if (k) d->ops->kernel_free(d, k);
    if (p) d->ops->program_free(d, p);
    d->ops->free(d, out);
    d->ops->free(d, buf);
    rx_dev_close(d);
    free(host);
    free(back);
    free(copy);
    free(s);
    return rc;
}
