/*
 * test_device_cuda.c — the CUDA device (device_cuda.c) without a GPU: a missing driver,
 * and every operation over mock_cuda.c (a stand-in libcuda.so.1 over host memory, named
 * by $RX_CUDA_LIB): the device's limits, copies, PTX loading and its JIT log, kernel
 * lookup, a launch's grid, block and arguments (the mock runs mock_iota on the host),
 * the launch and allocation limits, device tensors, the cache of freed storage buffers
 * (device_cache.c). Runs on a real driver are the GPU machine's check (tests/gpu/run.sh).
 */
#include "relax/device.h"

#include "../../../runtime/rt_int.h"

#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../rx_check.h"

typedef struct mock_launch {
    char name[64];
    unsigned grid[3], block[3];
    int count;
} mock_launch;

static rx_dev *open_mock(void)
{
    setenv("RX_CUDA_LIB", RX_MOCK_CUDA, 1);
    rx_rt_err e = {{0}};
    rx_dev *d = rx_dev_open(kDLCUDA, 0, &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

START_TEST(no_driver)
{
    rx_rt_err e = {{0}};
    setenv("RX_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
    ck_assert_ptr_null(rx_dev_open(kDLCUDA, 0, &e));
    ck_assert_msg(strstr(e.msg, "no CUDA driver (cannot load /nonexistent/libcuda.so.1"), "%s", e.msg);
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!real) { /* a host without a driver: the message the runtime promises */
        unsetenv("RX_CUDA_LIB");
        ck_assert_ptr_null(rx_dev_open(kDLCUDA, 0, &e));
        ck_assert_str_eq(e.msg, "no CUDA driver (libcuda.so.1 not found)");
    }
    setenv("RX_CUDA_LIB", "libm.so.6", 1); /* a library, but not the driver */
    ck_assert_ptr_null(rx_dev_open(kDLCUDA, 0, &e));
    ck_assert_str_eq(e.msg, "no CUDA driver: libm.so.6 lacks cuInit");
    setenv("RX_CUDA_LIB", RX_MOCK_CUDA, 1);
    ck_assert_ptr_null(rx_dev_open(kDLCUDA, 1, &e));
    ck_assert_str_eq(e.msg, "no CUDA device 1 (this host has 1: 0..0)");
    ck_assert_ptr_null(rx_dev_open(kDLCUDA, -1, &e));
    ck_assert_str_eq(e.msg, "no CUDA device -1 (device ids start at 0)");
}
END_TEST

START_TEST(info_from_attributes)
{
    rx_dev *d = open_mock();
    ck_assert_str_eq(d->ops->api, "CUDA");
    ck_assert_str_eq(d->info.name, "Mock GPU");
    ck_assert_msg(strstr(d->info.platform, "CUDA driver 13.0, compute capability 9.0"), "%s",
                  d->info.platform);
    ck_assert_str_eq(d->info.compute, "9.0"); /* what relax-agent registers */
    ck_assert_int_eq(d->info.dl_type, kDLCUDA);
    ck_assert_int_eq(d->info.max_threads, 1024);
    ck_assert_int_eq(d->info.max_local_bytes, 232448); /* the opt-in maximum */
    ck_assert_int_eq(d->info.global_bytes, 64 << 20);
    ck_assert_int_eq(rx_dev_type_of_target("cuda"), kDLCUDA);
    ck_assert_str_eq(rx_dev_type_name(kDLCUDA), "CUDA");
    rx_dev_close(d);
}
END_TEST

START_TEST(copies)
{
    rx_dev *d = open_mock();
    rx_rt_err e = {{0}};
    rx_dev_buf *a, *b;
    ck_assert_msg(d->ops->alloc(d, 64 * sizeof(float), &a, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->alloc(d, 64 * sizeof(float), &b, &e) == 0, "%s", e.msg);
    float x[64], y[64] = {0};
    for (int i = 0; i < 64; i++) x[i] = (float)i * 0.5f;
    ck_assert(d->ops->upload(d, a, 0, x, sizeof x, &e) == 0);
    ck_assert(d->ops->copy(d, b, 16 * sizeof(float), a, 0, 48 * sizeof(float), &e) == 0);
    ck_assert(d->ops->download(d, y, b, 16 * sizeof(float), 48 * sizeof(float), &e) == 0);
    ck_assert(memcmp(x, y, 48 * sizeof(float)) == 0);
    ck_assert(d->ops->download(d, y, a, 8 * sizeof(float), 4 * sizeof(float), &e) == 0);
    ck_assert(y[0] == 4.0f && y[3] == 5.5f);
    rx_dev_buf *big;
    ck_assert_int_eq(d->ops->alloc(d, (size_t)1 << 30, &big, &e), -1);
    ck_assert_msg(strstr(e.msg, "CUDA: cannot allocate 1073741824 bytes (the device has 67108864 bytes)"),
                  "%s", e.msg);
    ck_assert_int_eq(d->ops->alloc(d, (size_t)60 << 20, &big, &e), 0);
    rx_dev_buf *more;
    ck_assert_int_eq(d->ops->alloc(d, (size_t)8 << 20, &more, &e), -1);
    ck_assert_msg(strstr(e.msg, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY"), "%s", e.msg);
    d->ops->free(d, big);
    d->ops->free(d, a);
    d->ops->free(d, b);
    rx_dev_close(d);
}
END_TEST

static const char ptx[] = "//\n.version 8.0\n.target sm_80\n.visible .entry mock_iota(\n)\n{\n}\n";

START_TEST(build_kernel_launch)
{
    rx_dev *d = open_mock();
    rx_rt_err e = {{0}};
    rx_dev_program *p;
    static const char bad[] = ".version 8.0\n.target sm_80\n";
    ck_assert_int_eq(d->ops->build(d, bad, sizeof bad - 1, &p, &e), -1);
    ck_assert_msg(strstr(e.msg, "CUDA: cannot load the PTX (cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX): "
                                "ptxas fatal: mock: no .entry"), "%s", e.msg);
    /* not NUL-terminated, as in the artifact: the device copies and terminates it */
    char *text = malloc(sizeof ptx - 1);
    memcpy(text, ptx, sizeof ptx - 1);
    ck_assert_msg(d->ops->build(d, text, sizeof ptx - 1, &p, &e) == 0, "%s", e.msg);
    free(text);
    rx_dev_kernel *k;
    ck_assert_int_eq(d->ops->kernel(d, p, "nope", &k, &e), -1);
    ck_assert_msg(strstr(e.msg, "CUDA: no kernel nope in the module (CUDA_ERROR_NOT_FOUND)"), "%s", e.msg);
    ck_assert_msg(d->ops->kernel(d, p, "mock_iota", &k, &e) == 0, "%s", e.msg);

    rx_dev_buf *b;
    ck_assert(d->ops->alloc(d, 300 * sizeof(float), &b, &e) == 0);
    float zero[300] = {0}, got[300];
    ck_assert(d->ops->upload(d, b, 0, zero, sizeof zero, &e) == 0);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, b, 0, 0}, {RX_DEV_ARG_I64, NULL, 7, 0},
                         {RX_DEV_ARG_I64, NULL, 250, 0}, {RX_DEV_ARG_F32, NULL, 0, 0.5f},
                         {RX_DEV_ARG_I32, NULL, -3, 0}};
    size_t global = 512, local = 256;
    ck_assert_msg(d->ops->launch(d, k, args, 5, 1, &global, &local, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->sync(d, &e) == 0);
    ck_assert(d->ops->download(d, got, b, 0, sizeof got, &e) == 0);
    for (int i = 0; i < 300; i++)
        ck_assert_msg(got[i] == (i >= 7 && i < 257 ? 0.5f * (float)(i - 7) - 3.0f : 0.0f),
                      "element %d: %g", i, (double)got[i]);
    mock_launch *ml = dlsym(dlopen(RX_MOCK_CUDA, RTLD_NOW | RTLD_NOLOAD), "mock_last_launch");
    ck_assert_ptr_nonnull(ml);
    ck_assert_str_eq(ml->name, "mock_iota");
    ck_assert(ml->grid[0] == 2 && ml->grid[1] == 1 && ml->block[0] == 256 && ml->block[2] == 1);
    int launched = ml->count;

    /* limits: the function's 512 threads per block, group multiples, int32 range */
    global = local = 1024;
    ck_assert_int_eq(d->ops->launch(d, k, args, 5, 1, &global, &local, &e), -1);
    ck_assert_msg(strstr(e.msg, "1024 threads per block, more than the kernel can run on this device (512)"),
                  "%s", e.msg);
    global = 300, local = 256;
    ck_assert_int_eq(d->ops->launch(d, k, args, 5, 1, &global, &local, &e), -1);
    ck_assert_msg(strstr(e.msg, "global size 300 is not a multiple of the block size 256"), "%s", e.msg);
    global = 256;
    args[4].i = (int64_t)1 << 40;
    ck_assert_int_eq(d->ops->launch(d, k, args, 5, 1, &global, &local, &e), -1);
    ck_assert_msg(strstr(e.msg, "argument 4 (1099511627776) is not an int32"), "%s", e.msg);
    ck_assert_int_eq(d->ops->launch(d, k, args, 5, 4, &global, &local, &e), -1);
    global = 0;
    ck_assert_int_eq(d->ops->launch(d, k, args, 5, 1, &global, &local, &e), 0); /* empty grid */
    ck_assert_int_eq(ml->count, launched);

    d->ops->free(d, b);
    d->ops->kernel_free(d, k);
    d->ops->program_free(d, p);
    rx_dev_close(d);
}
END_TEST

START_TEST(tensors)
{
    rx_dev *d = open_mock();
    rx_rt_err e = {{0}};
    int64_t shape[2] = {3, 5};
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *t = rx_dev_tensor_new(d, f32, 2, shape, &e);
    ck_assert_msg(t != NULL, "%s", e.msg);
    ck_assert_int_eq(t->device.device_type, kDLCUDA);
    float h[15], back[15] = {0};
    for (int i = 0; i < 15; i++) h[i] = (float)i - 7.0f;
    DLTensor src = {h, {kDLCPU, 0}, 2, f32, shape, NULL, 0};
    DLTensor dst = {back, {kDLCPU, 0}, 2, f32, shape, NULL, 0};
    ck_assert_msg(rx_dev_tensor_upload(d, t, &src, &e) == 0, "%s", e.msg);
    ck_assert_msg(rx_dev_tensor_download(d, &dst, t, &e) == 0, "%s", e.msg);
    ck_assert(memcmp(h, back, sizeof h) == 0);
    rx_dev_tensor_free(d, t);
    rx_dev_close(d);
}
END_TEST

/* device_cache.c over the mock (64 MiB of device memory: the cache keeps 16 MiB). */
START_TEST(buffer_cache)
{
    rx_dev *d = open_mock();
    rx_rt_err e = {{0}};
    const size_t MB = 1 << 20;
    rx_dev_buf *a = NULL, *b = NULL, *c = NULL;
    ck_assert_msg(rx_dev_buf_alloc(d, MB, &a, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(rx_dev_buf_cached(d), 0);
    rx_dev_buf_release(d, a, MB); /* kept */
    ck_assert_uint_eq(rx_dev_buf_cached(d), MB);
    ck_assert(rx_dev_buf_alloc(d, MB, &b, &e) == 0);
    ck_assert_ptr_eq(a, b); /* the same size: the cached buffer */
    ck_assert_uint_eq(rx_dev_buf_cached(d), 0);
    rx_dev_buf_release(d, b, MB);
    ck_assert(rx_dev_buf_alloc(d, MB - 64 * 1024, &b, &e) == 0);
    ck_assert_ptr_eq(a, b); /* within an eighth larger: taken */
    rx_dev_buf_release(d, b, MB - 64 * 1024);
    ck_assert(rx_dev_buf_alloc(d, MB / 2, &c, &e) == 0);
    ck_assert_ptr_ne(c, a); /* twice the size asked for: not taken */
    ck_assert_uint_eq(rx_dev_buf_cached(d), MB - 64 * 1024);
    rx_dev_buf_release(d, c, MB / 2);
    /* the limit: a quarter of the device's 64 MiB; beyond it buffers are freed */
    rx_dev_buf *big[6];
    for (int i = 0; i < 6; i++) ck_assert_msg(rx_dev_buf_alloc(d, 4 * MB, &big[i], &e) == 0, "%s", e.msg);
    for (int i = 0; i < 6; i++) rx_dev_buf_release(d, big[i], 4 * MB);
    ck_assert_uint_le(rx_dev_buf_cached(d), 16 * MB);
    ck_assert_uint_ge(rx_dev_buf_cached(d), 12 * MB);
    /* out of device memory with buffers cached: they are given back and it succeeds */
    rx_dev_buf *huge = NULL;
    ck_assert_msg(rx_dev_buf_alloc(d, 56 * MB, &huge, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(rx_dev_buf_cached(d), 0);
    rx_dev_buf_release(d, huge, 56 * MB); /* over the limit: freed at once */
    ck_assert_uint_eq(rx_dev_buf_cached(d), 0);
    ck_assert(rx_dev_buf_alloc(d, MB, &a, &e) == 0);
    rx_dev_buf_release(d, a, MB);
    ck_assert_uint_eq(rx_dev_buf_cached(d), MB);
    rx_dev_close(d); /* frees the cached buffer (LeakSanitizer: nothing left) */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device_cuda");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, no_driver);
    tcase_add_test(tc, info_from_attributes);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, build_kernel_launch);
    tcase_add_test(tc, tensors);
    tcase_add_test(tc, buffer_cache);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
