/*
 * test_scratch_exit.c — the library kernels' per-thread buffers die with their thread.
 * blas.conv2d (library_conv.c's packed weights, phase planes and tap offsets) and the
 * runtime's sgemm (library_gemm.c's packing buffer) keep a buffer per thread between
 * calls; a thread that calls them and exits (a server's or an agent's worker, libgomp's
 * threads past a smaller count) must free it. Each case runs the kernel on threads that
 * exit, checks the result against a double-precision loop, and leaves the rest to
 * LeakSanitizer, which checks the whole process at exit (ctest runs it with CK_FORK=no):
 * without the thread-specific keys' destructors the exited threads' buffers are
 * unreachable, and the run fails with a leak report.
 */
#include "rt_test.h"

#include "../../../runtime/rt_int.h"
#include "../rx_check.h"

#include <math.h>
#include <pthread.h>

enum { N = 1, C = 32, H = 20, W = 20, O = 64, K = 3 };

typedef struct conv_case {
    float x[N * C * H * W], w[O * C * K * K], y[N * O * H * W];
    int32_t rc;
} conv_case;

static void fill(float *a, int64_t n, uint32_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

static DLTensor tensor(void *data, int32_t ndim, int64_t *shape, uint8_t code, uint8_t bits)
{
    DLTensor t = {0};
    t.data = data;
    t.ndim = ndim;
    t.shape = shape;
    t.dtype = (DLDataType){code, bits, 1};
    t.device = (DLDevice){kDLCPU, 0};
    return t;
}

/* A 3x3, pad 1, stride 1 convolution of 32 -> 64 channels (the packed-GEMM way). */
static void *run_conv(void *arg)
{
    conv_case *c = arg;
    int64_t xs[4] = {N, C, H, W}, ws[4] = {O, C, K, K}, ys[4] = {N, O, H, W}, ps[1] = {11};
    int64_t p[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    DLTensor x = tensor(c->x, 4, xs, kDLFloat, 32), w = tensor(c->w, 4, ws, kDLFloat, 32);
    DLTensor y = tensor(c->y, 4, ys, kDLFloat, 32), pr = tensor(p, 1, ps, kDLInt, 64);
    DLTensor *args[4] = {&x, &w, &pr, &y};
    c->rc = rx_rt_conv2d(args, 4);
    return NULL;
}

static void check_conv(const conv_case *c)
{
    ck_assert_int_eq(c->rc, 0);
    double worst = 0;
    for (int o = 0; o < O; o++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                double s = 0;
                for (int ci = 0; ci < C; ci++)
                    for (int a = 0; a < K; a++)
                        for (int b = 0; b < K; b++) {
                            int ii = i + a - 1, jj = j + b - 1;
                            if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                            s += (double)c->w[((o * C + ci) * K + a) * K + b] *
                                 c->x[(ci * H + ii) * W + jj];
                        }
                worst = fmax(worst, fabs(s - c->y[(o * H + i) * W + j]));
            }
    ck_assert_msg(worst < 1e-4, "conv off by %g", worst);
}

START_TEST(conv_buffers_freed_at_thread_exit)
{
    static conv_case c;
    fill(c.x, N * C * H * W, 1);
    fill(c.w, O * C * K * K, 2);
    for (int t = 0; t < 3; t++) { /* three threads in turn, each exiting */
        memset(c.y, 0, sizeof c.y);
        c.rc = -1;
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, run_conv, &c), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        check_conv(&c);
    }
}
END_TEST

enum { GM = 96, GN = 80, GK = 300 };

typedef struct gemm_case {
    float a[GM * GK], b[GK * GN], c[GM * GN];
} gemm_case;

static void *run_gemm(void *arg)
{
    gemm_case *g = arg;
    rx_rt_gemm(101, 111, 111, GM, GN, GK, 1.0f, g->a, GK, g->b, GN, 0.0f, g->c, GN);
    return NULL;
}

START_TEST(gemm_buffer_freed_at_thread_exit)
{
    static gemm_case g;
    fill(g.a, GM * GK, 3);
    fill(g.b, GK * GN, 4);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, run_gemm, &g), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    double worst = 0;
    for (int i = 0; i < GM; i++)
        for (int j = 0; j < GN; j++) {
            double s = 0;
            for (int k = 0; k < GK; k++) s += (double)g.a[i * GK + k] * g.b[k * GN + j];
            worst = fmax(worst, fabs(s - g.c[i * GN + j]));
        }
    ck_assert_msg(worst < 1e-4, "gemm off by %g", worst);
}
END_TEST

static Suite *scratch_suite(void)
{
    Suite *s = suite_create("scratch_exit");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, conv_buffers_freed_at_thread_exit);
    tcase_add_test(t, gemm_buffer_freed_at_thread_exit);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return rx_check_run(scratch_suite()); }
