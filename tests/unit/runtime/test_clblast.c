/*
 * test_clblast.c — CLBlast GEMMs on the OpenCL device (relax/clblast.h) on this host's
 * OpenCL (PoCL) and CLBlast (libclblast1, deploy/packages.sh test): one GEMM with
 * element offsets and leading dimensions wider than the rows, a transposed B with
 * beta accumulating into C, a strided batch, each compared element by element with a
 * double-precision host loop (|diff| <= 1e-4 * (1 + |ref|)) and the padding around C
 * left untouched; and the errors (bad sizes, a leading dimension below the row, C
 * beyond its buffer by CLBlast's status name, no device). Run with RX_CLBLAST_LIB=/nonexistent... (a
 * second ctest entry) it checks only the missing-library error.
 */
#include "relax/clblast.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../rx_check.h"

static rx_dev *d; /* OpenCL device 0, opened around each test (the fixture) */

static void open_dev(void)
{
    rx_rt_err e = {{0}};
    d = rx_dev_open(kDLOpenCL, 0, &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
}

static void close_dev(void)
{
    rx_dev_close(d);
    d = NULL;
}

static float val(int i, int salt) { return (float)(((i * 37 + salt * 11) % 29) - 14) / 8.0f; }

static rx_dev_buf *upload(const float *x, size_t n)
{
    rx_rt_err e = {{0}};
    rx_dev_buf *b;
    ck_assert_msg(d->ops->alloc(d, n * sizeof *x, &b, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->upload(d, b, 0, x, n * sizeof *x, &e) == 0, "%s", e.msg);
    return b;
}

/* C[bt] (m x n, ld ldc, at coff + bt*cs) against alpha * A @ B + beta * C0 in double. */
static void expect_gemm(const float *got, const float *a, const float *b, const float *c0,
                        int batch, int m, int n, int k, float alpha, float beta,
                        const rx_clblast_mat *ma, const rx_clblast_mat *mb,
                        const rx_clblast_mat *mc)
{
    for (int bt = 0; bt < batch; bt++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    double x = a[ma->off + bt * ma->stride +
                                 (ma->trans ? p * ma->ld + i : i * ma->ld + p)];
                    double y = b[mb->off + bt * mb->stride +
                                 (mb->trans ? j * mb->ld + p : p * mb->ld + j)];
                    s += x * y;
                }
                int64_t at = mc->off + bt * mc->stride + i * mc->ld + j;
                double ref = alpha * s + beta * (double)c0[at];
                ck_assert_msg(fabs(got[at] - ref) <= 1e-4 * (1 + fabs(ref)),
                              "batch %d [%d, %d]: %g vs %g", bt, i, j, (double)got[at], ref);
            }
}

/* One case: fills A, B, C (sizes na, nb, nc), runs the GEMM, checks C (the padding too:
 * elements outside the matrices keep their values). */
static void run_case(int batch, int m, int n, int k, float alpha, float beta, rx_clblast_mat ma,
                     rx_clblast_mat mb, rx_clblast_mat mc, size_t na, size_t nb, size_t nc)
{
    rx_rt_err e = {{0}};
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *got = malloc(nc * 4);
    for (size_t i = 0; i < na; i++) a[i] = val((int)i, 1);
    for (size_t i = 0; i < nb; i++) b[i] = val((int)i, 2);
    for (size_t i = 0; i < nc; i++) c[i] = val((int)i, 3);
    ma.buf = upload(a, na);
    mb.buf = upload(b, nb);
    mc.buf = upload(c, nc);
    ck_assert_msg(rx_clblast_sgemm(d, batch, m, n, k, alpha, &ma, &mb, beta, &mc, &e) == 0, "%s",
                  e.msg);
    ck_assert_msg(d->ops->download(d, got, mc.buf, 0, nc * 4, &e) == 0, "%s", e.msg);
    expect_gemm(got, a, b, c, batch, m, n, k, alpha, beta, &ma, &mb, &mc);
    /* outside C's rows (offset and ld padding): untouched */
    for (size_t i = 0; i < (size_t)mc.off; i++) ck_assert_float_eq(got[i], c[i]);
    for (int bt = 0; bt < batch; bt++)
        for (int i = 0; i < m; i++)
            for (int64_t j = n; j < mc.ld; j++) {
                int64_t at = mc.off + bt * mc.stride + i * mc.ld + j;
                ck_assert_float_eq(got[at], c[at]);
            }
    d->ops->free(d, ma.buf);
    d->ops->free(d, mb.buf);
    d->ops->free(d, mc.buf);
    free(a), free(b), free(c), free(got);
}

START_TEST(gemm_offsets_and_leading_dims)
{
    enum { M = 67, N = 33, K = 45 };
    /* A at offset 5 with ld K + 3, B at offset 2 with ld N, C at offset 7 with ld N + 4 */
    rx_clblast_mat a = {NULL, 5, K + 3, 0, 0}, b = {NULL, 2, N, 0, 0}, c = {NULL, 7, N + 4, 0, 0};
    run_case(1, M, N, K, 1.0f, 0.0f, a, b, c, 5 + M * (K + 3), 2 + K * N, 7 + M * (N + 4));
}
END_TEST

START_TEST(gemm_transposed_b_and_beta)
{
    enum { M = 16, N = 40, K = 24 };
    /* B stored n x k (a linear layer's weight), C accumulated: C = 0.5 A B^T + 2 C */
    rx_clblast_mat a = {NULL, 0, K, 0, 0}, b = {NULL, 0, K, 0, 1}, c = {NULL, 0, N, 0, 0};
    run_case(1, M, N, K, 0.5f, 2.0f, a, b, c, M * K, N * K, M * N);
}
END_TEST

START_TEST(gemm_strided_batch)
{
    enum { BT = 3, M = 9, N = 20, K = 17 };
    rx_clblast_mat a = {NULL, 0, K, M * K + 1, 0}, b = {NULL, 0, N, K * N, 0},
                   c = {NULL, 0, N, M * N + 3, 0};
    run_case(BT, M, N, K, 1.0f, 0.0f, a, b, c, BT * (M * K + 1), BT * K * N, BT * (M * N + 3));
}
END_TEST

START_TEST(errors)
{
    rx_rt_err e = {{0}};
    rx_dev_buf *buf;
    ck_assert_msg(d->ops->alloc(d, 4096, &buf, &e) == 0, "%s", e.msg); /* 1024 floats */
    rx_clblast_mat a = {buf, 0, 8, 0, 0}, b = {buf, 0, 8, 0, 0}, c = {buf, 0, 8, 0, 0};
    ck_assert(rx_clblast_sgemm(d, 1, 0, 8, 8, 1, &a, &b, 0, &c, &e) == -1);
    ck_assert_msg(strstr(e.msg, "sizes must be positive (batch 1, m 0"), "%s", e.msg);
    c.ld = 4;
    ck_assert(rx_clblast_sgemm(d, 1, 8, 8, 8, 1, &a, &b, 0, &c, &e) == -1);
    ck_assert_msg(strstr(e.msg, "C has offset 0, leading dimension 4"), "%s", e.msg);
    c.ld = 8;
    /* C beyond its buffer: CLBlast's own check, by name */
    ck_assert(rx_clblast_sgemm(d, 1, 200, 8, 8, 1, &a, &b, 0, &c, &e) == -1);
    ck_assert_msg(strstr(e.msg, "CLBlast: sgemm failed: kInsufficientMemory"), "%s", e.msg);
    ck_assert(rx_clblast_sgemm(NULL, 1, 8, 8, 8, 1, &a, &b, 0, &c, &e) == -1);
    ck_assert_msg(strstr(e.msg, "needs an OpenCL device (got none)"), "%s", e.msg);
    d->ops->free(d, buf);
}
END_TEST

START_TEST(missing_library)
{
    rx_rt_err e = {{0}};
    ck_assert(rx_clblast_available(&e) == -1);
    ck_assert_msg(strstr(e.msg, "CLBlast is not available: cannot load /nonexistent") &&
                      strstr(e.msg, "install libclblast1"),
                  "%s", e.msg);
    rx_clblast_mat a = {NULL, 0, 1, 0, 0};
    ck_assert(rx_clblast_sgemm(NULL, 1, 1, 1, 1, 1, &a, &a, 0, &a, &e) == -1);
    ck_assert_msg(strstr(e.msg, "CLBlast is not available"), "%s", e.msg); /* remembered */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("clblast");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 280);
    const char *lib = getenv("RX_CLBLAST_LIB");
    if (lib && !strncmp(lib, "/nonexistent", 12)) {
        tcase_add_test(tc, missing_library);
    } else {
        tcase_add_checked_fixture(tc, open_dev, close_dev);
        tcase_add_test(tc, gemm_offsets_and_leading_dims);
        tcase_add_test(tc, gemm_transposed_b_and_beta);
        tcase_add_test(tc, gemm_strided_batch);
        tcase_add_test(tc, errors);
    }
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
