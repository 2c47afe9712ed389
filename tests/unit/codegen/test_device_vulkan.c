/*
 * test_device_vulkan.c — GLSL compute shaders compiled by the compiler's SPIR-V module
 * (spirv.h) and run on this host's Vulkan device (lavapipe in CI, installed by
 * deploy/packages.sh test) through the device interface (device.h): every module passes
 * spirv-val; the launch ABI (buffers as storage-buffer bindings, scalars as push
 * constants, element offsets, the work-group size as specialization constants, queued
 * launches in order); a shared-memory tree reduction at two work-group sizes; a 2-D
 * launch; f32, i32 and i64; the staging path (RX_VULKAN_STAGING=1); and the errors: a
 * GLSL compile error with the log, a missing loader, a device id out of range, a
 * buffer above the device's largest, too many invocations per group, too much shared
 * memory, ABI mismatches and malformed programs. Numbers are checked against host loops.
 */
#include "relax/device.h"
#include "relax/spirv.h"

#include <check.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dev_test.h"
#include "../rx_check.h"

extern char **environ;

/* spirv-val --target-env vulkan1.2 on the module: its exit status. */
static int spirv_val(const uint32_t *w, size_t nw)
{
    char path[] = "/tmp/rx_spv_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, w, nw * 4) == (ssize_t)(nw * 4));
    close(fd);
    char *argv[] = {"spirv-val", "--target-env", "vulkan1.2", path, NULL};
    pid_t pid;
    int st = -1;
    if (posix_spawnp(&pid, "spirv-val", NULL, NULL, argv, environ) == 0) waitpid(pid, &st, 0);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* GLSL -> SPIR-V (checked by spirv-val) -> a one-kernel bundle -> program -> kernel. */
static int kernel_rc(rx_dev *d, const char *name, const char *glsl, rx_dev_program **p,
                     rx_dev_kernel **k, rx_rt_err *e)
{
    char msg[512];
    uint32_t *w;
    size_t nw;
    ck_assert_msg(rx_spirv_compile(name, glsl, strlen(glsl), &w, &nw, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_msg(spirv_val(w, nw) == 0, "spirv-val rejects kernel %s", name);
    free(w);
    rx_sb b = {0};
    ck_assert_msg(rx_spirv_bundle(&name, &glsl, 1, &b, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_msg(d->ops->build(d, b.p, b.n, p, e) == 0, "%s", e->msg);
    rx_sb_free(&b);
    int rc = d->ops->kernel(d, *p, name, k, e);
    if (rc) d->ops->program_free(d, *p);
    return rc;
}

static rx_dev_kernel *kernel_of(rx_dev *d, const char *name, const char *glsl, rx_dev_program **p)
{
    rx_rt_err e = {{0}};
    rx_dev_kernel *k;
    ck_assert_msg(kernel_rc(d, name, glsl, p, &k, &e) == 0, "%s", e.msg);
    return k;
}

static void kernel_done(rx_dev *d, rx_dev_kernel *k, rx_dev_program *p)
{
    d->ops->kernel_free(d, k);
    d->ops->program_free(d, p);
}

static rx_dev *open0(void)
{
    rx_rt_err e = {{0}};
    rx_dev *d = rx_dev_open(kDLVulkan, 0, &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

#define HEAD                                                                              \
    "#version 450\n"                                                                      \
    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"                \
    "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n"

START_TEST(info_is_sane)
{
    rx_dev *d = open0();
    ck_assert_int_eq(d->info.dl_type, kDLVulkan);
    ck_assert_int_eq(d->info.id, 0);
    ck_assert_str_eq(d->ops->api, "Vulkan");
    ck_assert(d->info.name[0] && !strncmp(d->info.platform, "Vulkan 1.", 9));
    ck_assert_int_ge(d->info.max_threads, 128);          /* Vulkan's guaranteed minimum */
    ck_assert_int_ge(d->info.max_local_bytes, 16384);
    ck_assert_int_ge(d->info.max_alloc_bytes, 1 << 20);
    ck_assert_int_ge(d->info.max_push_bytes, 128);
    ck_assert_int_ge(d->info.global_bytes, d->info.max_alloc_bytes);
    ck_assert_int_ge(d->info.align_bytes, 1);
    ck_assert_int_eq(rx_dev_type_of_target("vulkan"), kDLVulkan);
    char why[256];
    ck_assert(rx_spirv_available(why, sizeof why));
    rx_dev_close(d);
}
END_TEST

/* y[yoff + i] = a * x[xoff + i] + y[yoff + i] for i < n, grid-stride: the buffer +
 * element-offset ABI with a symbolic n as a push constant. */
static const char axpy_src[] = HEAD
    "layout(std430, set = 0, binding = 0) buffer Y { float y[]; };\n"
    "layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };\n"
    "layout(push_constant) uniform P { int64_t yoff; int64_t xoff; float a; int64_t n; };\n"
    "void main() {\n"
    "  int64_t step = int64_t(gl_NumWorkGroups.x * gl_WorkGroupSize.x);\n"
    "  for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < n; i += step)\n"
    "    y[uint(yoff + i)] = a * x[uint(xoff + i)] + y[uint(yoff + i)];\n"
    "}\n";

/* The axpy checks on d: several n from one kernel, two queued launches in order, a
 * device copy, a partial download at an offset. */
static void axpy_checks(rx_dev *d)
{
    rx_rt_err e = {{0}};
    enum { N = 5000, OFF = 24 };
    static float x[N + OFF], y[N], back[N];
    for (int i = 0; i < N + OFF; i++) x[i] = (float)i * 0.5f;
    rx_dev_buf *bx, *by, *bz;
    ck_assert(d->ops->alloc(d, sizeof x, &bx, &e) == 0 && d->ops->alloc(d, sizeof y, &by, &e) == 0 &&
              d->ops->alloc(d, sizeof y, &bz, &e) == 0);
    ck_assert(d->ops->upload(d, bx, 0, x, sizeof x, &e) == 0);
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, "axpy", axpy_src, &p);
    const int64_t ns[] = {N, 1, 777, 4097};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int64_t n = ns[t];
        for (int i = 0; i < N; i++) y[i] = (float)(N - i);
        ck_assert(d->ops->upload(d, by, 0, y, sizeof y, &e) == 0);
        rx_dev_arg args[] = {{RX_DEV_ARG_BUF, by, 0, 0}, {RX_DEV_ARG_I64, NULL, 0, 0},
                             {RX_DEV_ARG_BUF, bx, 0, 0}, {RX_DEV_ARG_I64, NULL, OFF, 0},
                             {RX_DEV_ARG_F32, NULL, 0, 2.0f}, {RX_DEV_ARG_I64, NULL, n, 0}};
        size_t global = 256, local = 64; /* fewer invocations than n: the grid stride */
        /* twice, queued: the second reads what the first wrote */
        ck_assert_msg(d->ops->launch(d, k, args, 6, 1, &global, &local, &e) == 0, "%s", e.msg);
        args[4].f = -1.0f;
        ck_assert_msg(d->ops->launch(d, k, args, 6, 1, &global, &local, &e) == 0, "%s", e.msg);
        ck_assert_msg(d->ops->copy(d, bz, 0, by, 0, sizeof y, &e) == 0, "%s", e.msg);
        ck_assert_msg(d->ops->sync(d, &e) == 0, "%s", e.msg);
        memset(back, 0, sizeof back);
        ck_assert(d->ops->download(d, back, bz, 0, sizeof back, &e) == 0);
        for (int i = 0; i < N; i++) {
            float want = i < n ? (2.0f * x[OFF + i] + y[i]) - x[OFF + i] : y[i];
            ck_assert_msg(back[i] == want, "n=%lld: y[%d] = %g, want %g", (long long)n, i, back[i], want);
        }
    }
    float two[2];
    ck_assert(d->ops->download(d, two, bz, 10 * sizeof(float), sizeof two, &e) == 0);
    ck_assert_float_eq(two[0], back[10]);
    ck_assert_float_eq(two[1], back[11]);
    /* overruns are errors */
    ck_assert(d->ops->download(d, two, bz, sizeof y - 4, sizeof two, &e) == -1);
    ck_assert_msg(strstr(e.msg, "overruns a buffer of"), "%s", e.msg);
    kernel_done(d, k, p);
    d->ops->free(d, bx);
    d->ops->free(d, by);
    d->ops->free(d, bz);
}

START_TEST(axpy_symbolic_n_offsets_and_order)
{
    rx_dev *d = open0();
    axpy_checks(d);
    rx_dev_close(d);
}
END_TEST

/* The generator's push constants (gpu_glsl.c): 32-bit element offsets, an int and an
 * int64_t after them at std430's offsets 0, 4, 8, 16; the launch passes I64 offsets,
 * which the device narrows into each member's width: y[yo + i] = x[xo + i] + k. */
static const char narrow_src[] =
    HEAD "layout(std430, set = 0, binding = 0) buffer Y { float y[]; };\n"
         "layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };\n"
         "layout(push_constant) uniform P { uint yo; uint xo; int k; int64_t n; };\n"
         "void main() {\n"
         "  int64_t i = int64_t(gl_GlobalInvocationID.x);\n"
         "  if (i < n) y[uint(int64_t(yo) + i)] = x[uint(int64_t(xo) + i)] + float(k);\n"
         "}\n";

START_TEST(narrow_push_members)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    enum { N = 100, XO = 7, YO = 3 };
    static float x[N + XO], y[N + YO];
    for (int i = 0; i < N + XO; i++) x[i] = (float)i;
    rx_dev_buf *bx, *by;
    ck_assert(d->ops->alloc(d, sizeof x, &bx, &e) == 0 && d->ops->alloc(d, sizeof y, &by, &e) == 0);
    ck_assert(d->ops->upload(d, bx, 0, x, sizeof x, &e) == 0);
    memset(y, 0, sizeof y);
    ck_assert(d->ops->upload(d, by, 0, y, sizeof y, &e) == 0);
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, "narrow", narrow_src, &p);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, by, 0, 0},    {RX_DEV_ARG_I64, NULL, YO, 0},
                         {RX_DEV_ARG_BUF, bx, 0, 0},    {RX_DEV_ARG_I64, NULL, XO, 0},
                         {RX_DEV_ARG_I64, NULL, -5, 0}, {RX_DEV_ARG_I64, NULL, N, 0}};
    size_t g = 128, l = 64;
    ck_assert_msg(d->ops->launch(d, k, args, 6, 1, &g, &l, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->sync(d, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->download(d, y, by, 0, sizeof y, &e) == 0);
    for (int i = 0; i < N + YO; i++)
        ck_assert_msg(y[i] == (i < YO ? 0.0f : (float)(i - YO + XO) - 5.0f), "y[%d] = %g", i, y[i]);
    /* an offset past 2^32 elements, a negative offset, an int past 2^31: refused */
    args[1].i = (int64_t)1 << 32;
    ck_assert(d->ops->launch(d, k, args, 6, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "argument 1 rejected (4294967296 does not fit its 32-bit unsigned"),
                  "%s", e.msg);
    args[1].i = -1;
    ck_assert(d->ops->launch(d, k, args, 6, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "argument 1 rejected (-1 does not fit"), "%s", e.msg);
    args[1].i = YO;
    args[4].i = (int64_t)1 << 31;
    ck_assert(d->ops->launch(d, k, args, 6, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "argument 4 rejected (2147483648 does not fit its 32-bit push"),
                  "%s", e.msg);
    /* a scalar too few for the block's members */
    args[4].i = -5;
    ck_assert(d->ops->launch(d, k, args, 5, 1, &g, &l, &e) == -1);
    ck_assert_msg(
        strstr(e.msg, "passes 3 scalar arguments, the shader's push constants have 4 members"),
        "%s", e.msg);
    ck_assert(d->ops->sync(d, &e) == 0);
    kernel_done(d, k, p);
    d->ops->free(d, bx);
    d->ops->free(d, by);
    rx_dev_close(d);
}
END_TEST

START_TEST(staging_path)
{
    setenv("RX_VULKAN_STAGING", "1", 1);
    rx_dev *d = open0();
    unsetenv("RX_VULKAN_STAGING");
    axpy_checks(d);
    /* more than one staging chunk (4 MiB) each way */
    rx_rt_err e = {{0}};
    enum { M = (9 << 20) / 4 };
    int32_t *h = malloc(M * sizeof *h), *g = malloc(M * sizeof *g);
    for (int i = 0; i < M; i++) h[i] = i * 7 - 3;
    rx_dev_buf *b;
    ck_assert(d->ops->alloc(d, M * sizeof *h, &b, &e) == 0);
    ck_assert_msg(d->ops->upload(d, b, 0, h, M * sizeof *h, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->download(d, g, b, 0, M * sizeof *g, &e) == 0, "%s", e.msg);
    ck_assert(!memcmp(h, g, M * sizeof *h));
    d->ops->free(d, b);
    free(h);
    free(g);
    rx_dev_close(d);
}
END_TEST

/* One work-group per row, tree reduction in shared memory sized by the work-group. */
static const char rowsum_src[] = HEAD
    "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
    "layout(std430, binding = 1) readonly buffer X { float x[]; };\n"
    "layout(push_constant) uniform P { int64_t cols; };\n"
    "shared float s[gl_WorkGroupSize.x];\n"
    "void main() {\n"
    "  uint t = gl_LocalInvocationID.x; int64_t r = int64_t(gl_WorkGroupID.x);\n"
    "  float acc = 0.0;\n"
    "  for (int64_t c = t; c < cols; c += gl_WorkGroupSize.x) acc += x[uint(r * cols + c)];\n"
    "  s[t] = acc; barrier();\n"
    "  for (uint w = gl_WorkGroupSize.x / 2; w > 0; w /= 2) { if (t < w) s[t] += s[t + w]; barrier(); }\n"
    "  if (t == 0) o[uint(r)] = s[0];\n"
    "}\n";

START_TEST(shared_memory_tree_and_tensors)
{
    rx_dev *d = open0();
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, "rowsum", rowsum_src, &p);
    const size_t groups[] = {64, 128, 1024}; /* one pipeline per work-group size */
    dev_check_rowsum(d, k, groups, 3);
    kernel_done(d, k, p);
    rx_dev_close(d);
}
END_TEST

/* A 2-D launch over an i32 matrix, edges guarded: o[r][c] = 3 * x[r][c] + r - c. */
static const char grid2d_src[] = HEAD
    "layout(std430, binding = 0) writeonly buffer O { int o[]; };\n"
    "layout(std430, binding = 1) readonly buffer X { int x[]; };\n"
    "layout(push_constant) uniform P { int rows; int cols; };\n"
    "void main() {\n"
    "  int c = int(gl_GlobalInvocationID.x), r = int(gl_GlobalInvocationID.y);\n"
    "  if (r < rows && c < cols) o[r * cols + c] = 3 * x[r * cols + c] + r - c;\n"
    "}\n";

/* i64 arithmetic past 32 bits: o[i] = x[i] * 3000000000 + i. */
static const char i64_src[] = HEAD
    "layout(std430, binding = 0) writeonly buffer O { int64_t o[]; };\n"
    "layout(std430, binding = 1) readonly buffer X { int64_t x[]; };\n"
    "layout(push_constant) uniform P { int64_t n; };\n"
    "void main() {\n"
    "  int64_t i = int64_t(gl_GlobalInvocationID.x);\n"
    "  if (i < n) o[uint(i)] = x[uint(i)] * 3000000000l + i;\n"
    "}\n";

START_TEST(grid_2d_i32_and_i64)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    enum { ROWS = 37, COLS = 53, N = 1000 };
    static int32_t x[ROWS * COLS], o[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = i % 97 - 40;
    rx_dev_buf *bx, *bo, *lx, *lo;
    ck_assert(d->ops->alloc(d, sizeof x, &bx, &e) == 0 && d->ops->alloc(d, sizeof o, &bo, &e) == 0);
    ck_assert(d->ops->upload(d, bx, 0, x, sizeof x, &e) == 0);
    rx_dev_program *p;
    rx_dev_kernel *k = kernel_of(d, "grid2d", grid2d_src, &p);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, bo, 0, 0}, {RX_DEV_ARG_BUF, bx, 0, 0},
                         {RX_DEV_ARG_I32, NULL, ROWS, 0}, {RX_DEV_ARG_I32, NULL, COLS, 0}};
    size_t global[2] = {56, 40}, local[2] = {8, 8};
    ck_assert_msg(d->ops->launch(d, k, args, 4, 2, global, local, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->download(d, o, bo, 0, sizeof o, &e) == 0);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) ck_assert_int_eq(o[r * COLS + c], 3 * x[r * COLS + c] + r - c);
    kernel_done(d, k, p);

    static int64_t y[N], z[N];
    for (int i = 0; i < N; i++) y[i] = i - 500;
    ck_assert(d->ops->alloc(d, sizeof y, &lx, &e) == 0 && d->ops->alloc(d, sizeof z, &lo, &e) == 0);
    ck_assert(d->ops->upload(d, lx, 0, y, sizeof y, &e) == 0);
    k = kernel_of(d, "i64", i64_src, &p);
    rx_dev_arg largs[] = {{RX_DEV_ARG_BUF, lo, 0, 0}, {RX_DEV_ARG_BUF, lx, 0, 0}, {RX_DEV_ARG_I64, NULL, N, 0}};
    size_t g1 = 1024, l1 = 128;
    ck_assert_msg(d->ops->launch(d, k, largs, 3, 1, &g1, &l1, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->download(d, z, lo, 0, sizeof z, &e) == 0);
    for (int i = 0; i < N; i++) ck_assert_int_eq(z[i], y[i] * 3000000000LL + i);
    kernel_done(d, k, p);
    d->ops->free(d, bx);
    d->ops->free(d, bo);
    d->ops->free(d, lx);
    d->ops->free(d, lo);
    rx_dev_close(d);
}
END_TEST

START_TEST(limits_are_errors)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    rx_dev_program *p;
    rx_dev_kernel *k;
    /* a buffer larger than the device's largest */
    rx_dev_buf *b;
    ck_assert(d->ops->alloc(d, (size_t)d->info.max_alloc_bytes + 1, &b, &e) == -1);
    ck_assert_msg(strstr(e.msg, "the device's largest buffer is"), "%s", e.msg);
    /* a fixed shared array over the limit: refused by kernel() */
    char src[512];
    snprintf(src, sizeof src, HEAD "layout(std430, binding = 0) buffer O { float o[]; };\n"
             "shared float s[%lld];\n"
             "void main() { s[gl_LocalInvocationID.x] = 1.0; barrier(); o[0] = s[0]; }\n",
             (long long)(d->info.max_local_bytes / 4 + 1024));
    ck_assert_int_eq(kernel_rc(d, "big", src, &p, &k, &e), -1);
    ck_assert_msg(strstr(e.msg, "kernel big needs") && strstr(e.msg, "bytes of shared memory") &&
                  strstr(e.msg, "maxComputeSharedMemorySize"), "%s", e.msg);
    /* shared memory sized by the work-group: fine at 64, over the limit at 1024 */
    static const char grow[] = HEAD "layout(std430, binding = 0) buffer O { float o[]; };\n"
        "shared float s[gl_WorkGroupSize.x * 16];\n"
        "void main() { s[gl_LocalInvocationID.x] = 1.0; barrier(); o[gl_GlobalInvocationID.x] = s[0]; }\n";
    k = kernel_of(d, "grow", grow, &p);
    ck_assert(d->ops->alloc(d, 4096 * 4, &b, &e) == 0);
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, b, 0, 0}};
    size_t g = 1024, l = 64;
    ck_assert_msg(d->ops->launch(d, k, args, 1, 1, &g, &l, &e) == 0, "%s", e.msg);
    l = 1024;
    ck_assert(d->ops->launch(d, k, args, 1, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "needs 65536 bytes of shared memory (work-group size 1024x1x1)"), "%s", e.msg);
    /* too many invocations per group, per dimension, a bad grid */
    size_t huge = (size_t)d->info.max_threads * 2;
    ck_assert(d->ops->launch(d, k, args, 1, 1, &huge, &huge, &e) == -1);
    ck_assert_msg(strstr(e.msg, "work-items per group, more than the device's limit"), "%s", e.msg);
    size_t odd = 100;
    l = 64;
    ck_assert(d->ops->launch(d, k, args, 1, 1, &odd, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "not a multiple of the group size"), "%s", e.msg);
    /* ABI mismatches: buffer count, push-constant bytes, an int32 out of range */
    ck_assert(d->ops->launch(d, k, args, 0, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "takes 1 buffers (storage buffer bindings), the launch passes 0"), "%s", e.msg);
    rx_dev_arg extra[] = {{RX_DEV_ARG_BUF, b, 0, 0}, {RX_DEV_ARG_I64, NULL, 5, 0}};
    ck_assert(d->ops->launch(d, k, extra, 2, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "take 8 bytes of push constants, the shader's block has 0"), "%s", e.msg);
    rx_dev_arg wide[] = {{RX_DEV_ARG_BUF, b, 0, 0}, {RX_DEV_ARG_I32, NULL, (int64_t)1 << 40, 0}};
    ck_assert(d->ops->launch(d, k, wide, 2, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "argument 1 rejected"), "%s", e.msg);
    ck_assert(d->ops->sync(d, &e) == 0);
    kernel_done(d, k, p);
    /* a fixed work-group size runs only at that size */
    static const char fixed[] = "#version 450\nlayout(local_size_x = 32) in;\n"
        "layout(std430, binding = 0) buffer O { float o[]; };\n"
        "void main() { o[gl_GlobalInvocationID.x] = 1.0; }\n";
    k = kernel_of(d, "fixed", fixed, &p);
    l = 32;
    ck_assert_msg(d->ops->launch(d, k, args, 1, 1, &g, &l, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->launch(d, k, args, 1, 1, &g, NULL, &e) == 0, "%s", e.msg);
    l = 64;
    ck_assert(d->ops->launch(d, k, args, 1, 1, &g, &l, &e) == -1);
    ck_assert_msg(strstr(e.msg, "has a fixed work-group size 32x1x1; the launch asks for 64x1x1"), "%s", e.msg);
    ck_assert(d->ops->sync(d, &e) == 0);
    kernel_done(d, k, p);
    d->ops->free(d, b);
    rx_dev_close(d);
}
END_TEST

START_TEST(compile_and_program_errors)
{
    rx_dev *d = open0();
    rx_rt_err e = {{0}};
    char msg[512];
    uint32_t *w = NULL;
    size_t nw;
    static const char bad[] = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_name = 1; }\n";
    ck_assert_int_eq(rx_spirv_compile("broken", bad, strlen(bad), &w, &nw, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "kernel broken: GLSL -> SPIR-V failed: ") && strstr(msg, "undefined_name") &&
                  !strchr(msg, '\n'), "%s", msg);
    /* warnings (reserved "__" names, as ONNX names give) do not push the error out of
     * the message: twenty warned declarations, then the error */
    rx_sb noisy = {0};
    rx_sb_puts(&noisy, "#version 450\nlayout(local_size_x = 1) in;\n");
    for (int i = 0; i < 20; i++) rx_sb_printf(&noisy, "layout(std430, binding = %d) buffer v__B%d { float v__b%d[]; };\n", i, i, i);
    rx_sb_puts(&noisy, "void main() { undefined_name = 1; }\n");
    ck_assert_int_eq(rx_spirv_compile("noisy", rx_sb_str(&noisy), noisy.n, &w, &nw, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "undefined_name") && !strstr(msg, "reserved"), "%s", msg);
    rx_sb_free(&noisy);
    rx_sb sb = {0};
    const char *names[] = {"ok", "broken"}, *srcs[] = {"#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", bad};
    ck_assert_int_eq(rx_spirv_bundle(names, srcs, 2, &sb, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "kernel broken:"), "%s", msg);
    rx_sb_reset(&sb);
    /* a two-kernel bundle: each kernel by its name; an unknown name is an error */
    ck_assert_msg(rx_spirv_bundle(names, srcs, 1, &sb, msg, sizeof msg) == 0, "%s", msg);
    rx_dev_program *p;
    rx_dev_kernel *k;
    ck_assert_msg(d->ops->build(d, sb.p, sb.n, &p, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->kernel(d, p, "ok", &k, &e) == 0, "%s", e.msg);
    d->ops->kernel_free(d, k);
    ck_assert(d->ops->kernel(d, p, "nope", &k, &e) == -1);
    ck_assert_msg(strstr(e.msg, "no kernel nope in the program"), "%s", e.msg);
    d->ops->program_free(d, p);
    /* truncations of the bundle are errors, never reads past its end */
    for (size_t cut = 0; cut < sb.n; cut += 4) {
        if (d->ops->build(d, sb.p, cut, &p, &e) == 0) {
            if (d->ops->kernel(d, p, "ok", &k, &e) == 0) d->ops->kernel_free(d, k);
            d->ops->program_free(d, p);
        }
    }
    ck_assert(d->ops->build(d, sb.p, 5, &p, &e) == -1);
    ck_assert_msg(strstr(e.msg, "not whole SPIR-V words"), "%s", e.msg);
    ck_assert(d->ops->build(d, "abcdefgh", 8, &p, &e) == -1);
    ck_assert_msg(strstr(e.msg, "neither SPIR-V nor a SPIR-V bundle"), "%s", e.msg);
    rx_sb_free(&sb);
    /* a bare module: its entry point by name; a uniform buffer is outside the ABI */
    static const char ubo[] = "#version 450\nlayout(local_size_x = 1) in;\n"
        "layout(binding = 0) uniform U { float a; };\n"
        "layout(std430, binding = 1) buffer O { float o[]; };\nvoid main() { o[0] = a; }\n";
    ck_assert_int_eq(rx_spirv_compile("ubo", ubo, strlen(ubo), &w, &nw, msg, sizeof msg), 0);
    ck_assert_msg(d->ops->build(d, (const char *)w, nw * 4, &p, &e) == 0, "%s", e.msg);
    ck_assert(d->ops->kernel(d, p, "other", &k, &e) == -1);
    ck_assert(d->ops->kernel(d, p, "main", &k, &e) == -1);
    ck_assert_msg(strstr(e.msg, "kernel main: uses a uniform buffer"), "%s", e.msg);
    d->ops->program_free(d, p);
    free(w);
    rx_dev_close(d);
}
END_TEST

START_TEST(missing_loader_or_device)
{
    rx_rt_err e = {{0}};
    ck_assert_ptr_null(rx_dev_open(kDLVulkan, 99, &e));
    ck_assert_msg(strstr(e.msg, "no Vulkan device 99 (this host has"), "%s", e.msg);
    ck_assert_ptr_null(rx_dev_open(kDLVulkan, -1, &e));
    ck_assert_msg(strstr(e.msg, "no Vulkan device -1"), "%s", e.msg);
    setenv("RX_VULKAN_LIB", "/nonexistent/libvulkan.so.1", 1);
    ck_assert_ptr_null(rx_dev_open(kDLVulkan, 0, &e));
    ck_assert_msg(strstr(e.msg, "no Vulkan device: cannot load /nonexistent/libvulkan.so.1"), "%s", e.msg);
    setenv("RX_VULKAN_LIB", "libm.so.6", 1); /* a library, but not Vulkan */
    ck_assert_ptr_null(rx_dev_open(kDLVulkan, 0, &e));
    ck_assert_msg(strstr(e.msg, "no Vulkan device: libm.so.6 lacks vkGetInstanceProcAddr"), "%s", e.msg);
    unsetenv("RX_VULKAN_LIB");
    /* a loader without a driver: no physical device */
    setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
    ck_assert_ptr_null(rx_dev_open(kDLVulkan, 0, &e));
    ck_assert_msg(strstr(e.msg, "no Vulkan device: no "), "%s", e.msg);
    unsetenv("VK_ICD_FILENAMES");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device_vulkan");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, info_is_sane);
    tcase_add_test(tc, axpy_symbolic_n_offsets_and_order);
    tcase_add_test(tc, staging_path);
    tcase_add_test(tc, narrow_push_members);
    tcase_add_test(tc, shared_memory_tree_and_tensors);
    tcase_add_test(tc, grid_2d_i32_and_i64);
    tcase_add_test(tc, limits_are_errors);
    tcase_add_test(tc, compile_and_program_errors);
    tcase_add_test(tc, missing_loader_or_device);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
