/*
 * test_matvec.c — 1 to 8 rows (12 with the AVX-512 loops: rx_rt_matvec_rows) times a weight
 * (runtime/library_matvec.c, rx_rt_matvec) against a double-precision reference: W stored
 * (K, N) (the K split: N past one column tile and ragged, past the last 16-column vector,
 * K not a multiple of the 4 slices, K smaller than the slices) and (N, K) (the dots: K past
 * and under the 8 and 16 lanes), leading dimensions larger than the matrix
 * (the gap holds NaN: reading it poisons the result), alpha / beta (beta 0 with a
 * NaN-filled C: C must not be read), C's gap and the row past it never written, on 1, 2
 * and 3 threads, with results identical across thread counts (the order of each sum is
 * the slices' and lanes', not the threads'); each row of a 7-row and of a most-row product
 * bit for bit the one-row product of that row; what it hands to rx_rt_gemm (one row past
 * the most, A transposed: checked by the same reference); and the per-call rule
 * (rx_rt_gemm_pick: 1 to the most rows and at least 32768 weight elements under auto with
 * a BLAS; any size for the items of a batch, rx_rt_gemm_pick_items).
 * ctest runs it three times: with the CPU's best loops (AVX-512 here), with
 * RX_GEMM_KERNEL=avx2 (the AVX2+FMA loops, 8 rows at most) and =portable.
 */
#include "rt_test.h"

#include "../../../runtime/rt_int.h"
#include "gemm_ref.h"
#include "../rx_check.h"

#include <math.h>

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

typedef struct mcase {
    int m, n, k;
    bool ta, tb;
    int pad; /* extra elements in every leading dimension */
    float alpha, beta;
} mcase;

/* Runs g on `threads` threads into c (m + 1 rows of ldc, sentinel outside the product);
   returns c (caller frees). a, b, c0 as stored. */
static float *run(const mcase *g, const float *a, int lda, const float *b, int ldb,
                  const float *c0, int ldc, int threads)
{
    rx_rt_err e = {0};
    ck_assert_int_eq(rx_rt_set_threads(threads, &e), 0);
    size_t nc = (size_t)(g->m + 1) * (size_t)ldc;
    float *c = malloc(sizeof(float) * nc);
    ck_assert_ptr_nonnull(c);
    memcpy(c, c0, sizeof(float) * nc);
    rx_rt_matvec(101, g->ta ? 112 : 111, g->tb ? 112 : 111, g->m, g->n, g->k, g->alpha, a, lda,
                 b, ldb, g->beta, c, ldc);
    return c;
}

static void check_case(const mcase *g)
{
    uint32_t s = (uint32_t)(g->n * 17 + g->k * 7 + g->tb + g->m * 3);
    int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    int lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
    float *a = malloc(sizeof(float) * (size_t)ar * (size_t)lda);
    float *b = malloc(sizeof(float) * (size_t)br * (size_t)ldb);
    float *c0 = malloc(sizeof(float) * (size_t)(g->m + 1) * (size_t)ldc);
    ck_assert(a && b && c0);
    for (int i = 0; i < ar * lda; i++) a[i] = i % lda < ac ? rnd(&s) : NAN;
    for (int i = 0; i < br * ldb; i++) b[i] = i % ldb < bc ? rnd(&s) : NAN;
    const float sentinel = 12345.0f;
    for (int i = 0; i < (g->m + 1) * ldc; i++) {
        bool inside = i / ldc < g->m && i % ldc < g->n;
        c0[i] = !inside ? sentinel : g->beta == 0.0f ? NAN : rnd(&s);
    }
    float *c1 = run(g, a, lda, b, ldb, c0, ldc, 1);
    for (int threads = 2; threads <= 3; threads++) {
        float *ct = run(g, a, lda, b, ldb, c0, ldc, threads);
        ck_assert_msg(memcmp(c1, ct, sizeof(float) * (size_t)(g->m + 1) * (size_t)ldc) == 0,
                      "%dx%dx%d tb=%d: %d threads differ from 1", g->m, g->n, g->k, g->tb, threads);
        free(ct);
    }
    for (int i = 0; i <= g->m; i++)
        for (int j = 0; j < ldc; j++) {
            float got = c1[i * ldc + j];
            if (i == g->m || j >= g->n) {
                ck_assert_msg(got == sentinel, "%dx%dx%d tb=%d: C[%d][%d] outside the product "
                              "written (%g)", g->m, g->n, g->k, g->tb, i, j, (double)got);
                continue;
            }
            double mag, ref = gemm_ref(g->ta, g->tb, i, j, g->k, a, lda, b, ldb, g->alpha,
                                       g->beta, c0[i * ldc + j], &mag);
            ck_assert_msg(fabs(got - ref) <= 1e-5 * mag + 1e-6,
                          "%dx%dx%d ta=%d tb=%d pad=%d alpha=%g beta=%g: C[%d][%d] = %.8g, "
                          "reference %.8g", g->m, g->n, g->k, g->ta, g->tb, g->pad,
                          (double)g->alpha, (double)g->beta, i, j, (double)got, ref);
        }
    free(a);
    free(b);
    free(c0);
    free(c1);
}

/* (n, k): N ragged and past one tile (1100, 2500), K not a multiple of 4 slices or 8
   lanes, K under 4 (3: some slices empty), one column. */
static const int shapes[][2] = {
    {1024, 1024}, {1100, 301}, {2500, 67}, {37, 1031}, {5, 3}, {1, 517}, {256, 40},
};

START_TEST(test_matvec_shapes)
{
    const float ab[][2] = {{1.0f, 0.0f}, {-0.5f, 2.0f}, {2.0f, 1.0f}};
    const int rows[] = {1, 3, 8, 12, 5};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tb = 0; tb < 2; tb++) {
            size_t v = (s + (size_t)tb) % 3;
            mcase g = {rows[(s + (size_t)tb) % 5], shapes[s][0], shapes[s][1], false, tb,
                       (int)(s % 3) * 3, ab[v][0], ab[v][1]};
            check_case(&g);
        }
}
END_TEST

/* Several rows: row i of an m-row product is bit for bit the one-row product of x's row
   i (each sum's order is one row's, whatever m and the column tile it implies). */
START_TEST(test_matvec_rows_as_one)
{
    for (int t = 0; t < 4; t++) {
        const int tb = t % 2, M = t < 2 ? 7 : (int)rx_rt_matvec_rows();
        enum { N = 1100, K = 301 };
        uint32_t s = 99u + (uint32_t)t;
        int lda = K + 2, ldb = tb ? K + 1 : N + 1, ldc = N + 3;
        float *a = malloc(sizeof(float) * (size_t)M * (size_t)lda);
        float *b = malloc(sizeof(float) * (size_t)(tb ? N : K) * (size_t)ldb);
        float *c = malloc(sizeof(float) * (size_t)M * (size_t)ldc), *c1 = malloc(sizeof(float) * N);
        ck_assert(a && b && c && c1);
        for (int i = 0; i < M * lda; i++) a[i] = rnd(&s);
        for (int i = 0; i < (tb ? N : K) * ldb; i++) b[i] = rnd(&s);
        rx_rt_matvec(101, 111, tb ? 112 : 111, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        for (int i = 0; i < M; i++) {
            rx_rt_matvec(101, 111, tb ? 112 : 111, 1, N, K, 1.0f, a + i * lda, lda, b, ldb, 0.0f,
                         c1, N);
            ck_assert_msg(memcmp(c1, c + i * ldc, sizeof(float) * N) == 0,
                          "tb=%d: row %d of %d differs from the one-row product", tb, i, M);
        }
        free(a);
        free(b);
        free(c);
        free(c1);
    }
}
END_TEST

/* More than the most rows, or A transposed: rx_rt_gemm computes it (same reference). */
START_TEST(test_matvec_passes_on)
{
    mcase g9 = {(int)rx_rt_matvec_rows() + 1, 300, 200, false, false, 1, 1.0f, 0.0f},
          gt = {1, 300, 200, true, true, 2, 1.5f, 0.5f};
    check_case(&g9);
    check_case(&gt);
}
END_TEST

/* The rule: auto gives 1 to the most rows (12 with the AVX-512 loops, else 8) times >=
   32768 weight elements to rx_rt_matvec when a BLAS is there (no BLAS stays the "not
   available" NULL), more rows and small weights not (the own sgemm with the AVX-512 tile,
   else the BLAS: test_gemm.c). */
START_TEST(test_matvec_pick)
{
    ck_assert_ptr_null(getenv("RX_GEMM"));
    rx_rt_sgemm_fn blas = rx_rt_sgemm();
    ck_assert_ptr_nonnull(blas);
    bool t512 = strcmp(rx_rt_gemm_isa(), "avx512 8x32") == 0;
    rx_rt_sgemm_fn nine = t512 ? rx_rt_gemm : blas;
    int most = t512 ? 12 : 8; /* RX_GEMM_KERNEL=avx2 / portable: neither tile nor loops */
    ck_assert_int_eq(rx_rt_matvec_rows(), most);
    ck_assert(rx_rt_gemm_pick(blas, 1, 1024, 1024) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick(blas, 1, 128, 256) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick(blas, 1, 100, 100) == blas);
    ck_assert(rx_rt_gemm_pick(blas, 2, 1024, 1024) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick(blas, 8, 1024, 1024) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick(blas, most, 1024, 1024) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick(blas, most + 1, 1024, 1024) == nine);
    ck_assert(rx_rt_gemm_pick(NULL, 1, 1024, 1024) == NULL);
    /* items of a batch (one parallel region): a few rows at any size, else the rule */
    ck_assert(rx_rt_gemm_pick_items(blas, 48, 1, 257, 64) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick_items(blas, 2, 8, 64, 257) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick_items(blas, 1, 1, 257, 64) == blas);
    ck_assert(rx_rt_gemm_pick_items(blas, 48, most, 257, 64) == rx_rt_matvec);
    ck_assert(rx_rt_gemm_pick_items(blas, 48, most + 1, 257, 64) == nine);
    ck_assert(rx_rt_gemm_pick_items(NULL, 48, 1, 257, 64) == NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("matvec");
    TCase *tc = tcase_create("matvec");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_matvec_shapes);
    tcase_add_test(tc, test_matvec_rows_as_one);
    tcase_add_test(tc, test_matvec_passes_on);
    tcase_add_test(tc, test_matvec_pick);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
