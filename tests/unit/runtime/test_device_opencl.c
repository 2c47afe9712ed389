/*
 * test_device_opencl.c — the OpenCL device (device.h) on this host's OpenCL (PoCL in CI,
 * installed by deploy/packages.sh test): buffers and copies, the launch ABI (buffer +
 * element offset, scalars), a local-memory tree reduction, and the errors: a build log,
 * a kernel over the local-memory limit, bad launch shapes, a missing driver or platform,
 * a device id out of range. Every numeric result is checked against a host loop.
 */
#include "relax/device.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../dev_test.h"
#include "../rx_check.h"

static rx_dev *open0(void)
{
    rx_rt_err e = {{0}};
    rx_dev *d = rx_dev_open(kDLOpenCL, 0, &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

static rx_dev_kernel *kernel_of(rx_dev *d, const char *src, const char *name, rx_dev_program **p)
{
    rx_rt_err e = {{0}};
    ck_assert_msg(d->ops->build(d, src, strlen(src), p, &e) == 0, "%s", e.msg);
    rx_dev_kernel *k;
    ck_assert_msg(d->ops->kernel(d, *p, name, &k, &e) == 0, "%s", e.msg);
    return k;
}

START_TEST(info_is_sane)
{
    rx_dev *d = open0();
    ck_assert_int_eq(d->info.dl_type, kDLOpenCL);
    ck_assert_int_eq(d->info.id, 0);
    ck_assert(d->info.name[0] && d->info.platform[0]);
    ck_assert_int_ge(d->info.max_threads, 1);
    ck_assert_int_ge(d->info.max_local_bytes, 1024);
    ck_assert_int_ge(d->info.max_alloc_bytes, 1 << 20);
    ck_assert_str_eq(d->ops->api, "OpenCL");
    ck_assert_int_eq(rx_dev_type_of_target("opencl"), kDLOpenCL);
    ck_assert_int_eq(rx_dev_type_of_target("cpu"), kDLCPU);
    ck_assert_int_eq(rx_dev_type_of_target("tpu"), -1);
    rx_dev_close(d);
}
END_TEST

/* y[yoff + i] = a * x[xoff + i] + y[yoff + i] for i < n: the planned-offset ABI. */
static const char axpy_src[] =
    "__kernel void axpy(__global float *y, long yoff, __global const float *x, long xoff,\n"
    "                   float a, long n) {\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0))\n"
    "    y[yoff + i] = a * x[xoff + i] + y[yoff + i];\n"
    "}\n";

START_TEST(copies_and_offset_abi)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    enum { N = 1000, OFF = 24 };
    float x[N + OFF], y[N], back[N];
    for (int i = 0; i < N + OFF; i++) x[i] = (float)i * 0.5f;
    for (int i = 0; i < N; i++) y[i] = (float)(N - i);
    rx_dev_buf *bx, *by, *bz;
    ck_assert(d->ops->alloc(d, sizeof x, &bx, &e) == 0 && d->ops->alloc(d, sizeof y, &by, &e) == 0 &&
              d->ops->alloc(d, sizeof y, &bz, &e) == 0);
    ck_assert(d->ops->upload(d, bx, 0, x, sizeof x, &e) == 0);
    ck_assert(d->ops->upload(d, by, 0, y, sizeof y, &e) == 0);
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, axpy_src, "axpy", &p);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, by, 0, 0}, {RX_DEV_ARG_I64, NULL, 0, 0},
                         {RX_DEV_ARG_BUF, bx, 0, 0}, {RX_DEV_ARG_I64, NULL, OFF, 0},
                         {RX_DEV_ARG_F32, NULL, 0, 2.0f}, {RX_DEV_ARG_I64, NULL, N, 0}};
    size_t global = 256, local = 64; /* fewer items than n: the grid-stride loop */
    ck_assert_msg(d->ops->launch(d, k, args, 6, 1, &global, &local, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->sync(d, &e) == 0);
    ck_assert(d->ops->copy(d, bz, 0, by, 0, sizeof y, &e) == 0);
    memset(back, 0, sizeof back);
    ck_assert(d->ops->download(d, back, bz, 0, sizeof back, &e) == 0);
    for (int i = 0; i < N; i++) ck_assert_float_eq(back[i], 2.0f * x[OFF + i] + y[i]);
    /* a partial download at a byte offset */
    float two[2];
    ck_assert(d->ops->download(d, two, bz, 10 * sizeof(float), sizeof two, &e) == 0);
    ck_assert_float_eq(two[0], back[10]);
    ck_assert_float_eq(two[1], back[11]);
    /* bad launches are errors, not crashes */
    size_t odd = 100;
    ck_assert(d->ops->launch(d, k, args, 6, 1, &odd, &local, &e) == -1);
    ck_assert_msg(strstr(e.msg, "not a multiple of the group size"), "%s", e.msg);
    size_t huge = (size_t)d->info.max_threads * 2;
    ck_assert(d->ops->launch(d, k, args, 6, 1, &huge, &huge, &e) == -1);
    ck_assert_msg(strstr(e.msg, "work-items per group, more than the device's limit"), "%s", e.msg);
    rx_dev_arg bad = {RX_DEV_ARG_I32, NULL, (int64_t)1 << 40, 0};
    rx_dev_arg args2[6];
    memcpy(args2, args, sizeof args);
    args2[5] = bad;
    ck_assert(d->ops->launch(d, k, args2, 6, 1, &global, &local, &e) == -1);
    ck_assert_msg(strstr(e.msg, "argument 5 rejected"), "%s", e.msg);
    d->ops->kernel_free(d, k);
    d->ops->program_free(d, p);
    d->ops->free(d, bx);
    d->ops->free(d, by);
    d->ops->free(d, bz);
    rx_dev_close(d);
}
END_TEST

/* One work-group per row, tree reduction in local memory (the row-reduction schedule). */
static const char rowsum_src[] =
    "#define T 64\n"
    "__kernel void rowsum(__global float *out, __global const float *x, long cols) {\n"
    "  __local float s[T];\n"
    "  long r = get_group_id(0); int t = get_local_id(0);\n"
    "  float acc = 0.0f;\n"
    "  for (long c = t; c < cols; c += T) acc += x[r * cols + c];\n"
    "  s[t] = acc; barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (int w = T / 2; w > 0; w /= 2) { if (t < w) s[t] += s[t + w]; barrier(CLK_LOCAL_MEM_FENCE); }\n"
    "  if (t == 0) out[r] = s[0];\n"
    "}\n";

START_TEST(local_memory_tree_and_tensors)
{
    rx_dev *d = open0();
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, rowsum_src, "rowsum", &p);
    const size_t groups[] = {64};
    dev_check_rowsum(d, k, groups, 1);
    d->ops->kernel_free(d, k);
    d->ops->program_free(d, p);
    rx_dev_close(d);
}
END_TEST

START_TEST(build_errors_and_local_limit)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    rx_dev_program *p;
    static const char bad[] = "__kernel void f(__global float *x) { x[0] = undefined_name; }\n";
    ck_assert(d->ops->build(d, bad, strlen(bad), &p, &e) == -1);
    ck_assert_msg(strstr(e.msg, "clBuildProgram failed") && strstr(e.msg, "undefined_name"), "%s", e.msg);
    /* a kernel whose __local array is larger than the device allows */
    char src[256];
    snprintf(src, sizeof src,
             "__kernel void big(__global float *x) { __local float s[%lld]; s[get_local_id(0)] = 1.0f;"
             " barrier(CLK_LOCAL_MEM_FENCE); x[0] = s[0]; }\n",
             (long long)(d->info.max_local_bytes / 4 + 1024));
    int rc = d->ops->build(d, src, strlen(src), &p, &e);
    if (rc == 0) {
        rx_dev_kernel *k;
        rc = d->ops->kernel(d, p, "big", &k, &e);
        d->ops->program_free(d, p);
    }
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(e.msg, "local memory") || strstr(e.msg, "clBuildProgram failed"), "%s", e.msg);
    /* a buffer larger than the device's largest */
    rx_dev_buf *b;
    ck_assert(d->ops->alloc(d, (size_t)d->info.max_alloc_bytes + 1, &b, &e) == -1);
    ck_assert_msg(strstr(e.msg, "the device's largest buffer is"), "%s", e.msg);
    rx_dev_close(d);
}
END_TEST

START_TEST(missing_driver_platform_or_device)
{
    rx_rt_err e = {{0}};
    ck_assert_ptr_null(rx_dev_open(kDLOpenCL, 99, &e));
    ck_assert_msg(strstr(e.msg, "no OpenCL device 99 (this host has"), "%s", e.msg);
    ck_assert_ptr_null(rx_dev_open(kDLOpenCL, -1, &e));
    ck_assert_msg(strstr(e.msg, "no OpenCL device -1"), "%s", e.msg);
    ck_assert_ptr_null(rx_dev_open(kDLCUDA, 0, &e));
    ck_assert_msg(strstr(e.msg, "device type 2 (CUDA) is not supported by this runtime"), "%s", e.msg);
    setenv("RX_OPENCL_LIB", "/nonexistent/libOpenCL.so.1", 1);
    ck_assert_ptr_null(rx_dev_open(kDLOpenCL, 0, &e));
    ck_assert_msg(strstr(e.msg, "no OpenCL device: cannot load /nonexistent/libOpenCL.so.1"), "%s", e.msg);
    setenv("RX_OPENCL_LIB", "libm.so.6", 1); /* a library, but not OpenCL */
    ck_assert_ptr_null(rx_dev_open(kDLOpenCL, 0, &e));
    ck_assert_msg(strstr(e.msg, "no OpenCL device: libm.so.6 lacks clGetPlatformIDs"), "%s", e.msg);
    unsetenv("RX_OPENCL_LIB");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device_opencl");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, info_is_sane);
    tcase_add_test(tc, copies_and_offset_abi);
    tcase_add_test(tc, local_memory_tree_and_tensors);
    tcase_add_test(tc, build_errors_and_local_limit);
    tcase_add_test(tc, missing_driver_platform_or_device);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
