/*
 * bench_clblast.c — CLBlast's SGEMM against the generated tiles kernel of a matmul, on
 * the same OpenCL device, buffers and sizes, in the same run (relax/clblast.h).
 *
 *   bench_clblast --src MATMUL.cl --kernel rxk_matmul_s0 [--m M] [--k K] [--n N]
 *                 [--tile T] [--block B] [--repeat R] [--number C] [--device-id D]
 *
 * MATMUL.cl is what `relaxc print M.json --target opencl --after codegen` gives for a
 * module main(a: (m, K) f32, b: (K, N) f32) = matmul(a, b) with K and N literals (as
 * bench_gpu.py writes it): its tiles kernel takes (a_b, a_o, b_b, b_o, y_b, y_o, m, rx_st)
 * and runs one work-group of T x T work-items per B x B block of outputs (B = T R: each
 * work-item computes an R x R register micro-tile; B defaults to T; the launch the VM
 * makes). Both compute C = A @ B for the same random A and B; each output is checked
 * against a double-precision host loop (|diff| <= 1e-3 * (1 + |ref|)), so a wrong kernel
 * is an error, not a figure. Times: after one warm-up call of each (CLBlast compiles its
 * kernels at its first call), `repeat` samples alternating between the two, each
 * `number` calls then one sync, per call; the medians, their ratio (tiles / CLBlast) and
 * GFLOP/s. Output: one JSON line; exit 1 with "error: ..." on any failure.
 */
#include "relax/clblast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "error: %s: %s\n", what, msg);
    return 1;
}

static char *read_text(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 24);
    *n = buf ? fread(buf, 1, (1 << 24) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*n] = 0;
    return buf;
}

typedef struct gemm {
    rx_dev *d;
    rx_dev_kernel *k;
    rx_dev_buf *a, *b, *c1, *c2, *st;
    int64_t m, n, kk, tile, block;
} gemm;

static int run_tiles(gemm *g, rx_rt_err *e)
{
    rx_dev_arg args[] = {{RX_DEV_ARG_BUF, g->a, 0, 0},    {RX_DEV_ARG_I64, NULL, 0, 0},
                         {RX_DEV_ARG_BUF, g->b, 0, 0},    {RX_DEV_ARG_I64, NULL, 0, 0},
                         {RX_DEV_ARG_BUF, g->c1, 0, 0},   {RX_DEV_ARG_I64, NULL, 0, 0},
                         {RX_DEV_ARG_I64, NULL, g->m, 0}, {RX_DEV_ARG_BUF, g->st, 0, 0}};
    size_t groups =
        (size_t)(((g->m + g->block - 1) / g->block) * ((g->n + g->block - 1) / g->block));
    size_t local = (size_t)(g->tile * g->tile), global = groups * local;
    return g->d->ops->launch(g->d, g->k, args, 8, 1, &global, &local, e);
}

static int run_clblast(gemm *g, rx_rt_err *e)
{
    rx_clblast_mat a = {g->a, 0, g->kk, 0, 0}, b = {g->b, 0, g->n, 0, 0},
                   c = {g->c2, 0, g->n, 0, 0};
    return rx_clblast_sgemm(g->d, 1, g->m, g->n, g->kk, 1.0f, &a, &b, 0.0f, &c, e);
}

/* Median ms per call of fn over repeat samples of number calls, interleaved by the
 * caller through sample index s (times[s]). */
static int sample(gemm *g, int (*fn)(gemm *, rx_rt_err *), int number, double *out, rx_rt_err *e)
{
    double t0 = now_ms();
    for (int i = 0; i < number; i++)
        if (fn(g, e)) return -1;
    if (g->d->ops->sync(g->d, e)) return -1;
    *out = (now_ms() - t0) / number;
    return 0;
}

static int check(gemm *g, rx_dev_buf *c, const float *a, const float *b, const char *who,
                 double *maxerr, rx_rt_err *e)
{
    size_t nc = (size_t)(g->m * g->n);
    float *got = malloc(nc * sizeof *got);
    if (!got || g->d->ops->download(g->d, got, c, 0, nc * sizeof *got, e)) {
        free(got);
        return -1;
    }
    *maxerr = 0;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double s = 0;
            for (int64_t p = 0; p < g->kk; p++) s += (double)a[i * g->kk + p] * b[p * g->n + j];
            double diff = fabs(got[i * g->n + j] - s);
            if (diff > *maxerr) *maxerr = diff;
            if (diff > 1e-3 * (1 + fabs(s))) {
                snprintf(e->msg, sizeof e->msg, "%s: C[%lld, %lld] = %g, expected %g", who,
                         (long long)i, (long long)j, (double)got[i * g->n + j], s);
                free(got);
                return -1;
            }
        }
    free(got);
    return 0;
}

int main(int argc, char **argv)
{
    const char *src_path = NULL, *kname = "rxk_matmul_s0";
    gemm g = {0};
    g.m = 256, g.n = 256, g.kk = 256, g.tile = 16;
    int repeat = 7, number = 5, id = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--src"))
            src_path = argv[i + 1];
        else if (!strcmp(argv[i], "--kernel"))
            kname = argv[i + 1];
        else if (!strcmp(argv[i], "--m"))
            g.m = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--n"))
            g.n = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--k"))
            g.kk = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--tile"))
            g.tile = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--block"))
            g.block = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--number"))
            number = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--device-id"))
            id = atoi(argv[i + 1]);
        else
            return fail("usage", argv[i]);
    }
    if (!g.block) g.block = g.tile;
    if (!src_path || g.m < 1 || g.n < 1 || g.kk < 1 || g.tile < 1 || g.block < g.tile ||
        repeat < 1 || repeat > 1000 || number < 1)
        return fail("usage", "bench_clblast --src MATMUL.cl [--kernel K] [--m M] [--k K] [--n N] "
                             "[--tile T] [--block B] [--repeat R] [--number C] [--device-id D]");
    rx_rt_err e = {{0}};
    size_t srclen;
    char *src = read_text(src_path, &srclen);
    if (!src) return fail(src_path, "cannot read");
    g.d = rx_dev_open(kDLOpenCL, id, &e);
    if (!g.d) return fail("device", e.msg);
    rx_dev_program *prog = NULL;
    size_t na = (size_t)(g.m * g.kk), nb = (size_t)(g.kk * g.n), nc = (size_t)(g.m * g.n);
    float *a = malloc(na * 4), *b = malloc(nb * 4);
    for (size_t i = 0; i < na; i++) a[i] = (float)((int)((i * 37) % 29) - 14) / 8.0f;
    for (size_t i = 0; i < nb; i++) b[i] = (float)((int)((i * 53) % 31) - 15) / 8.0f;
    double tiles[1000], blas[1000], err_tiles = 0, err_blas = 0;
    int rc = 1;
    const char *stage = "build";
    if (g.d->ops->build(g.d, src, srclen, &prog, &e) ||
        g.d->ops->kernel(g.d, prog, kname, &g.k, &e))
        goto out;
    stage = "buffers";
    if (g.d->ops->alloc(g.d, na * 4, &g.a, &e) || g.d->ops->alloc(g.d, nb * 4, &g.b, &e) ||
        g.d->ops->alloc(g.d, nc * 4, &g.c1, &e) || g.d->ops->alloc(g.d, nc * 4, &g.c2, &e) ||
        g.d->ops->alloc(g.d, 64, &g.st, &e) || g.d->ops->upload(g.d, g.a, 0, a, na * 4, &e) ||
        g.d->ops->upload(g.d, g.b, 0, b, nb * 4, &e))
        goto out;
    int zero[16] = {0};
    stage = "warm-up";
    if (g.d->ops->upload(g.d, g.st, 0, zero, sizeof zero, &e) || run_tiles(&g, &e) ||
        run_clblast(&g, &e) || g.d->ops->sync(g.d, &e))
        goto out;
    stage = "check";
    if (check(&g, g.c1, a, b, "tiles", &err_tiles, &e) ||
        check(&g, g.c2, a, b, "CLBlast", &err_blas, &e))
        goto out;
    stage = "timing";
    for (int s = 0; s < repeat; s++)
        if (sample(&g, run_tiles, number, &tiles[s], &e) ||
            sample(&g, run_clblast, number, &blas[s], &e))
            goto out;
    qsort(tiles, (size_t)repeat, sizeof *tiles, cmp_double);
    qsort(blas, (size_t)repeat, sizeof *blas, cmp_double);
    double mt = tiles[repeat / 2], mb = blas[repeat / 2], flop = 2.0 * (double)g.m * g.n * g.kk;
    printf("{\"bench\": \"clblast_vs_tiles\", \"device\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": "
           "%lld, \"tile\": %lld, \"block\": %lld, \"repeat\": %d, \"number\": %d, "
           "\"tiles_ms\": %.4f, \"clblast_ms\": %.4f, "
           "\"ratio_tiles_to_clblast\": %.3f, \"tiles_gflops\": %.2f, \"clblast_gflops\": %.2f, "
           "\"max_abs_error_tiles\": %.3g, \"max_abs_error_clblast\": %.3g}\n",
           g.d->info.name, (long long)g.m, (long long)g.n, (long long)g.kk, (long long)g.tile,
           (long long)g.block, repeat, number, mt, mb, mt / mb, flop / mt / 1e6, flop / mb / 1e6,
           err_tiles, err_blas);
    rc = 0;
out:
    if (rc) fail(stage, e.msg);
    rx_dev_buf *bufs[] = {g.a, g.b, g.c1, g.c2, g.st};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) g.d->ops->free(g.d, bufs[i]);
    if (g.k) g.d->ops->kernel_free(g.d, g.k);
    if (prog) g.d->ops->program_free(g.d, prog);
    rx_dev_close(g.d);
    free(src), free(a), free(b);
    return rc;
}
