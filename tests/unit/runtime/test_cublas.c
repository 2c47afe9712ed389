/*
 * test_cublas.c — cuBLAS through dlopen (runtime/cublas.c) without a GPU: the loading
 * errors, the checks before cuBLAS is called, and the mapping of the runtime's
 * row-major operands onto cuBLAS's column-major call, over mock_cuda.c as the driver
 * and mock_cublas.c as cuBLAS (host memory; the mock computes the column-major GEMM it
 * is given, so a wrong mapping gives wrong numbers). Every case runs in its own process
 * (Check's fork mode): cublas.c remembers a failed load for the process.
 */
#include "relax/cublas.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mock_cublas_call {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    int calls, handles;
} mock_cublas_call;

static mock_cublas_call *last(void)
{
    void *lib = dlopen(RX_MOCK_CUBLAS, RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(lib);
    mock_cublas_call *c = dlsym(lib, "mock_cublas_last");
    ck_assert_ptr_nonnull(c);
    return c; /* the library stays loaded: cublas.c holds it */
}

static rx_dev *open_mock(void)
{
    setenv("RX_CUDA_LIB", RX_MOCK_CUDA, 1);
    setenv("RX_CUBLAS_LIB", RX_MOCK_CUBLAS, 1);
    rx_rt_err e = {{0}};
    rx_dev *d = rx_dev_open(kDLCUDA, 0, &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

START_TEST(missing_library)
{
    rx_rt_err e = {{0}};
    setenv("RX_CUBLAS_LIB", "/nonexistent/libcublas.so.13", 1);
    ck_assert_int_eq(rx_cublas_available(&e), -1);
    ck_assert_msg(strstr(e.msg, "cuBLAS is not available: cannot load /nonexistent/libcublas.so.13 ("),
                  "%s", e.msg);
    rx_rt_err e2 = {{0}};
    ck_assert_int_eq(rx_cublas_sgemm(NULL, 1, 1, 1, 1, 1.0f, NULL, NULL, 0.0f, NULL, &e2), -1);
    ck_assert_str_eq(e2.msg, e.msg); /* remembered: the same answer, no second search */
}
END_TEST

START_TEST(library_lacks_symbol)
{
    rx_rt_err e = {{0}};
    setenv("RX_CUBLAS_LIB", RX_MOCK_CUDA, 1); /* a library, but not cuBLAS */
    ck_assert_int_eq(rx_cublas_available(&e), -1);
    ck_assert_msg(strstr(e.msg, "cuBLAS is not available: ") && strstr(e.msg, " lacks cublasCreate_v2"),
                  "%s", e.msg);
}
END_TEST

/* Row-major reference: C (m x n) = op(A) op(B), A stored (m x k) or (k x m) when trans. */
static void ref(int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                int ldb, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += (double)(ta ? a[l * lda + i] : a[i * lda + l]) * (tb ? b[j * ldb + l] : b[l * ldb + j]);
            c[i * ldc + j] = (float)s;
        }
}

static rx_dev_buf *put(rx_dev *d, const float *x, size_t n)
{
    rx_dev_buf *b;
    rx_rt_err e = {{0}};
    ck_assert_msg(d->ops->alloc(d, n * sizeof *x, &b, &e) == 0, "%s", e.msg);
    ck_assert_msg(d->ops->upload(d, b, 0, x, n * sizeof *x, &e) == 0, "%s", e.msg);
    return b;
}

/* Every transpose combination, at element offsets and padded leading dimensions, one
 * GEMM and a strided batch (B shared: stride 0), against the row-major reference. */
START_TEST(row_major_mapping)
{
    rx_dev *d = open_mock();
    mock_cublas_call *mc = last();
    enum { M = 5, N = 7, K = 3, B = 3, PAD = 2, OFF = 4, CAP = 512 };
    float a[CAP], b[CAP], c0[CAP] = {0}, got[CAP], want[CAP];
    for (int i = 0; i < CAP; i++) {
        a[i] = (float)((i * 7) % 11) - 5.0f;
        b[i] = (float)((i * 5) % 13) * 0.25f - 1.5f;
    }
    for (int batch = 1; batch <= B; batch += B - 1)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                rx_rt_err e = {{0}};
                int lda = (ta ? M : K) + PAD, ldb = (tb ? K : N) + PAD, ldc = N + 1;
                int rows_a = ta ? K : M;
                rx_clblast_mat A = {put(d, a, CAP), OFF, lda, (int64_t)rows_a * lda, ta},
                               Bm = {put(d, b, CAP), OFF + 1, ldb, 0, tb},
                               C = {put(d, c0, CAP), 3, ldc, (int64_t)M * ldc, 0};
                int calls = mc->calls;
                ck_assert_msg(rx_cublas_sgemm(d, batch, M, N, K, 1.0f, &A, &Bm, 0.0f, &C, &e) == 0,
                              "%s", e.msg);
                ck_assert_int_eq(mc->calls, calls + 1);
                /* C^T = op(B)^T op(A)^T: the operands and sizes swap, each keeps its op */
                ck_assert_int_eq(mc->m, N);
                ck_assert_int_eq(mc->n, M);
                ck_assert_int_eq(mc->k, K);
                ck_assert_int_eq(mc->ta, tb);
                ck_assert_int_eq(mc->tb, ta);
                ck_assert_int_eq(mc->lda, ldb);
                ck_assert_int_eq(mc->ldb, lda);
                ck_assert_int_eq(mc->ldc, ldc);
                ck_assert_int_eq(mc->batch, batch == 1 ? 0 : batch);
                ck_assert_msg(d->ops->download(d, got, C.buf, 0, sizeof got, &e) == 0, "%s", e.msg);
                memcpy(want, c0, sizeof want);
                for (int p = 0; p < batch; p++)
                    ref(ta, tb, M, N, K, a + OFF + p * A.stride, lda, b + OFF + 1, ldb,
                        want + 3 + p * C.stride, ldc);
                for (int i = 0; i < CAP; i++)
                    ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-5f,
                                  "batch %d ta %d tb %d: C[%d] = %g, want %g", batch, ta, tb, i,
                                  (double)got[i], (double)want[i]);
                d->ops->free(d, A.buf);
                d->ops->free(d, Bm.buf);
                d->ops->free(d, C.buf);
            }
    ck_assert_int_eq(mc->handles, 1); /* one handle per device, reused */
    rx_dev_close(d);
    ck_assert_int_eq(mc->handles, 0); /* destroyed with the device */
}
END_TEST

/* Bad sizes and operands are our errors, before cuBLAS is called. */
START_TEST(checks_before_cublas)
{
    rx_dev *d = open_mock();
    mock_cublas_call *mc = last();
    float x[16] = {0};
    rx_clblast_mat A = {put(d, x, 16), 0, 4, 0, 0}, B = {put(d, x, 16), 0, 4, 0, 0},
                   C = {put(d, x, 16), 0, 4, 0, 0};
    rx_rt_err e = {{0}};
    int calls = mc->calls;
    ck_assert_int_eq(rx_cublas_sgemm(d, 1, 0, 4, 4, 1.0f, &A, &B, 0.0f, &C, &e), -1);
    ck_assert_str_eq(e.msg, "cuBLAS: sgemm: sizes must be positive and below 2^31 (batch 1, m 0, "
                            "n 4, k 4)");
    ck_assert_int_eq(rx_cublas_sgemm(d, 1, 4, 4, 3000000000LL, 1.0f, &A, &B, 0.0f, &C, &e), -1);
    ck_assert_msg(strstr(e.msg, "below 2^31") != NULL, "%s", e.msg);
    rx_clblast_mat narrow = {A.buf, 0, 3, 0, 0}; /* ld 3 < k 4 */
    ck_assert_int_eq(rx_cublas_sgemm(d, 1, 4, 4, 4, 1.0f, &narrow, &B, 0.0f, &C, &e), -1);
    ck_assert_str_eq(e.msg, "cuBLAS: sgemm: A has offset 0, leading dimension 3 and stride 0 "
                            "(rows of 4 elements)");
    rx_clblast_mat neg = {C.buf, -1, 4, 0, 0};
    ck_assert_int_eq(rx_cublas_sgemm(d, 1, 4, 4, 4, 1.0f, &A, &B, 0.0f, &neg, &e), -1);
    ck_assert_msg(strstr(e.msg, "C has offset -1") != NULL, "%s", e.msg);
    ck_assert_int_eq(rx_cublas_sgemm(d, 1, 4, 4, 4, 1.0f, &A, NULL, 0.0f, &C, &e), -1);
    ck_assert_str_eq(e.msg, "cuBLAS: sgemm: no buffer for B");
    ck_assert_int_eq(rx_cublas_sgemm(NULL, 1, 4, 4, 4, 1.0f, &A, &B, 0.0f, &C, &e), -1);
    ck_assert_str_eq(e.msg, "cuBLAS: sgemm needs a CUDA device (got none)");
    ck_assert_int_eq(mc->calls, calls); /* none reached cuBLAS */
    d->ops->free(d, A.buf);
    d->ops->free(d, B.buf);
    d->ops->free(d, C.buf);
    rx_dev_close(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cublas");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60); /* ASan and a loaded machine */
    tcase_add_test(tc, missing_library);
    tcase_add_test(tc, library_lacks_symbol);
    tcase_add_test(tc, row_major_mapping);
    tcase_add_test(tc, checks_before_cublas);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK); /* a process per case, whatever $CK_FORK says */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
