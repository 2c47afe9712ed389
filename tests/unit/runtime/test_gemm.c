/*
 * test_gemm.c — the runtime's own sgemm (runtime/library_gemm.c) against a double-precision
 * reference: ragged shapes (M, N, K not multiples of the 6x16 tile, K past one 256-deep
 * block, N past one 2048-wide block, M past one 96-row block and under one micro-tile;
 * last row tiles of 1 to 5 rows, which the AVX2 build runs on kernels of their own),
 * the four transpose combinations, leading dimensions larger than the matrix (the gap
 * holds NaN: reading it poisons the result), alpha / beta (beta 0 with a NaN-filled C:
 * C must not be read), C's gap and the rows past M never written, on 1 and 2 threads
 * (both the column and the row split); the per-call choice between it and the BLAS
 * (rx_rt_gemm_pick); the epilogue activations (library_act.c). The shapes cover the
 * AVX-512 8x32 tile (library_gemm512.c) as well: last row tiles of 1 to 7 rows, column
 * tails of 1 to 31, its 128-row and 256-column blocks. ctest runs it
 * three times: with the CPU's best kernel (AVX-512 here), with RX_GEMM_KERNEL=avx2 (the
 * 6x16 AVX2 kernel) and with RX_GEMM_KERNEL=portable (the C fallback).
 */
#include "rt_test.h"

#include "../../../runtime/rt_int.h"
#include "gemm_ref.h"

#include <math.h>

/* A deterministic pseudo-random value in [-1, 1). */
static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* A (rows x cols) matrix with row stride ld >= cols; the gap past cols is NaN. */
static float *matrix(int64_t rows, int64_t cols, int64_t ld, uint32_t *s)
{
    float *m = malloc(sizeof(float) * (size_t)(rows * ld + 1));
    ck_assert_ptr_nonnull(m);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < ld; j++) m[i * ld + j] = j < cols ? rnd(s) : NAN;
    return m;
}

typedef struct gcase {
    int64_t m, n, k;
    bool ta, tb;
    int64_t pad; /* extra elements in every leading dimension */
    float alpha, beta;
    bool bias, relu; /* rx_rt_gemm_epi's epilogue: + bias[j], then max(., 0) */
} gcase;

static bool via_pick; /* check_case through the sgemm rx_rt_gemm_pick gives (no epilogue) */

/* Runs one case and checks every element of C (and that C's gap and an extra row past M
 * keep their sentinel). */
static void check_case(const gcase *g, bool threads)
{
    uint32_t s = (uint32_t)(g->m * 131 + g->n * 17 + g->k * 7 + g->ta * 3 + g->tb);
    int64_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k; /* A as stored */
    int64_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    int64_t lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
    float *a = matrix(ar, ac, lda, &s), *b = matrix(br, bc, ldb, &s);
    float *c = malloc(sizeof(float) * (size_t)((g->m + 1) * ldc));
    float *c0 = malloc(sizeof(float) * (size_t)((g->m + 1) * ldc));
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(c0);
    const float sentinel = 12345.0f;
    for (int64_t i = 0; i < (g->m + 1) * ldc; i++) {
        bool inside = i / ldc < g->m && i % ldc < g->n;
        c0[i] = !inside ? sentinel : g->beta == 0.0f ? NAN : rnd(&s);
    }
    memcpy(c, c0, sizeof(float) * (size_t)((g->m + 1) * ldc));
    float *bias = g->bias ? matrix(1, g->n, g->n, &s) : NULL;
    if (via_pick) {
        rx_rt_sgemm_fn f = rx_rt_gemm_pick(rx_rt_sgemm(), g->m, g->n, g->k);
        ck_assert_ptr_nonnull(f);
        f(101, g->ta ? 112 : 111, g->tb ? 112 : 111, (int)g->m, (int)g->n, (int)g->k, g->alpha, a,
          (int)lda, b, (int)ldb, g->beta, c, (int)ldc);
    } else if (g->bias || g->relu)
        rx_rt_gemm_epi(g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb, g->beta, c, ldc,
                       threads, bias, g->relu);
    else
        rx_rt_gemm_ex(g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb, g->beta, c, ldc,
                      threads);
    for (int64_t i = 0; i <= g->m; i++)
        for (int64_t j = 0; j < ldc; j++) {
            float got = c[i * ldc + j];
            if (i == g->m || j >= g->n) {
                ck_assert_msg(got == sentinel, "%lldx%lldx%lld ta=%d tb=%d: C[%lld][%lld] "
                              "outside the product was written (%g)", (long long)g->m,
                              (long long)g->n, (long long)g->k, g->ta, g->tb, (long long)i,
                              (long long)j, (double)got);
                continue;
            }
            double mag, ref = gemm_ref(g->ta, g->tb, i, j, g->k, a, lda, b, ldb, g->alpha,
                                       g->beta, c0[i * ldc + j], &mag);
            if (bias) ref += bias[j], mag += fabs(bias[j]);
            if (g->relu && ref < 0.0) ref = 0.0;
            ck_assert_msg(fabs(got - ref) <= 1e-5 * mag + 1e-6,
                          "%lldx%lldx%lld ta=%d tb=%d pad=%lld alpha=%g beta=%g threads=%d: "
                          "C[%lld][%lld] = %.8g, reference %.8g", (long long)g->m,
                          (long long)g->n, (long long)g->k, g->ta, g->tb, (long long)g->pad,
                          (double)g->alpha, (double)g->beta, threads, (long long)i,
                          (long long)j, (double)got, ref);
        }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(bias);
}

/* Shapes: (m, n, k). Ragged around the 6x16 tile, the 256-deep and 96-row blocks; one
 * wider than the 2048-column block; ones large enough (>= 2^19 multiply-adds) to split
 * over threads by columns (100x70x75) and, n under 4 tiles, by rows (200x20x140); the
 * two sides of STREAM_ROWS = 192 (B packed 64-column groups at a time, the next group
 * prefetched, against the whole-block packing), each over two 256-deep blocks; groups
 * cut by N (70, 150: a full group, then a partial one ending in a partial panel) and by
 * the threads' column ranges (64 x 150 on 2 threads: 80 columns each). */
static const int64_t shapes[][3] = {
    {1, 1, 1},    {5, 15, 3},   {6, 16, 8},    {7, 17, 9},    {13, 33, 31},
    {1, 40, 300}, {12, 48, 256}, {97, 23, 257}, {100, 70, 75}, {200, 20, 140},
    {3, 2100, 5}, {25, 37, 513}, {192, 50, 260}, {193, 20, 260}, {64, 150, 300},
    /* the 8x32 tile: row tails 2, 3, 6, 7 past full tiles, one exact tile, column tails
     * 1 and 31 past full ones; 129 and 257 rows: past one and two 128-row blocks (each
     * with a 1-row tail); 300 columns: past the 256-column block, ending in 12 */
    {10, 70, 33}, {11, 97, 260}, {14, 40, 7}, {31, 63, 129}, {8, 32, 5},
    {129, 100, 64}, {257, 45, 300}, {40, 300, 70},
    /* whole blocks past the streamed rows, the next B block prefetched while one
     * computes: the next reduction block (300 deep), then the next columns' (the 8x32
     * tile's 256-column blocks of 600, the last ending in a partial panel) */
    {200, 600, 300},
};

START_TEST(test_gemm_shapes_transposes)
{
    /* _i: 0 one thread, 1 two threads */
    rx_rt_err e = {0};
    ck_assert_int_eq(rx_rt_set_threads(_i ? 2 : 1, &e), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, 0, 1.0f, 0.0f,
                       false, false};
            check_case(&g, true);
        }
}
END_TEST

/* Three threads, then one: libgomp ends the third thread, whose packing buffer its
 * thread-specific key frees (under LeakSanitizer, the sanitizer build, a leaked buffer
 * fails this test at exit). */
START_TEST(test_gemm_threads_shrink)
{
    rx_rt_err e = {0};
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(rx_rt_set_threads(round ? 1 : 3, &e), 0);
        for (size_t s = 8; s < 10; s++) { /* 100x70x75, 200x20x140: split over threads */
            gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, 1.0f, 0.0f, false,
                       false};
            check_case(&g, true);
        }
    }
}
END_TEST

START_TEST(test_gemm_strides_alpha_beta)
{
    rx_rt_err e = {0};
    ck_assert_int_eq(rx_rt_set_threads(_i ? 2 : 1, &e), 0);
    const float ab[][2] = {{1.0f, 0.0f}, {-0.5f, 2.0f}, {2.0f, 1.0f}, {0.0f, -1.0f}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            size_t v = (s + (size_t)t) % 4; /* every pair meets every shape's transposes */
            gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1,
                       (int64_t)(3 + s % 5), ab[v][0], ab[v][1], false, false};
            check_case(&g, true);
        }
}
END_TEST

/* The write-back epilogue (bias, relu, both) on every shape, both splits over threads,
 * alpha and beta: applied once, after the last 256-deep block (K = 257, 260, 513 have
 * more than one), on every tile including the cut ones. */
START_TEST(test_gemm_epilogue)
{
    rx_rt_err e = {0};
    ck_assert_int_eq(rx_rt_set_threads(_i ? 2 : 1, &e), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int v = (int)(s % 3), t = (int)(s % 4); /* 0 bias, 1 relu, 2 both with alpha, beta */
        gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, 1,
                   v == 2 ? 0.5f : 1.0f, v == 2 ? -1.0f : 0.0f, v != 1, v != 0};
        check_case(&g, true);
    }
    /* k = 0: C = relu(beta C + bias) */
    gcase g = {30, 40, 0, false, false, 0, 1.0f, 2.0f, true, true};
    check_case(&g, true);
}
END_TEST

/* k = 0 and alpha = 0: C = beta * C (beta 0: zeros, C not read). */
/* The epilogue activations (library_act.c) against double-precision formulas: every
 * length 1..40 (the vector body and its padded tail), values over [-12, 12] and the
 * extremes; then rx_rt_gemm_act on a ragged product, C = act(A B + bias) (act_ref:
 * gemm_ref.h). */
START_TEST(test_gemm_activations)
{
    static const int acts[] = {RX_RT_ACT_RELU, RX_RT_ACT_GELU, RX_RT_ACT_SILU,
                               RX_RT_ACT_GELU_TANH, RX_RT_ACT_NONE};
    enum { NACTS = sizeof acts / sizeof *acts };
    for (int ai = 0; ai < NACTS; ai++) {
        int act = acts[ai];
        for (int n = 1; n <= 40; n++) {
            float x[40];
            for (int i = 0; i < n; i++) x[i] = -12.0f + 24.0f * (float)(i * 7 + n) / 287.0f;
            if (n == 40) x[0] = -100.0f, x[1] = 100.0f, x[2] = 0.0f, x[3] = -1e-30f;
            /* two rows 41 apart: without a bias, then with one (the sum's f32 rounding
             * is the reference's input) */
            float y[82], bias[40];
            memcpy(y, x, sizeof(float) * (size_t)n);
            memcpy(y + 41, x, sizeof(float) * (size_t)n);
            for (int i = 0; i < n; i++) bias[i] = 0.25f * (float)i - 3.0f;
            rx_rt_epilogue_rows(y, 1, n, 41, NULL, act);
            rx_rt_epilogue_rows(y + 41, 1, n, 41, bias, act);
            for (int i = 0; i < n; i++)
                for (int r = 0; r < 2; r++) {
                    double in = r ? (double)(x[i] + bias[i]) : (double)x[i];
                    double want = act_ref(act, in), tol = 1e-6 * fmax(1.0, fabs(in));
                    ck_assert_msg(fabs(y[41 * r + i] - want) <= tol,
                                  "act %d n %d bias %d: f(%g) = %.9g, want %.9g", act, n, r, in,
                                  (double)y[41 * r + i], want);
                }
        }
    }
    uint32_t s = 7;
    int64_t m = 67, n = 45, k = 300;
    float *a = matrix(m, k, k, &s), *b = matrix(k, n, n, &s), *bias = matrix(1, n, n, &s);
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    ck_assert_ptr_nonnull(c);
    for (int ai = 0; ai < NACTS; ai++) {
        rx_rt_gemm_act(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n, true, bias, acts[ai]);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = bias[j];
                for (int64_t p = 0; p < k; p++) acc += (double)a[i * k + p] * b[p * n + j];
                double want = act_ref(acts[ai], acc);
                ck_assert_msg(fabs(c[i * n + j] - want) <= 1e-4 * fmax(1.0, fabs(want)),
                              "gemm act %d [%lld][%lld]: %g vs %g", acts[ai], (long long)i,
                              (long long)j, (double)c[i * n + j], want);
            }
    }
    free(a), free(b), free(bias), free(c);
}
END_TEST

START_TEST(test_gemm_degenerate)
{
    gcase g0 = {7, 9, 0, false, false, 2, 1.0f, 0.0f, false, false},
          g1 = {7, 9, 0, true, true, 0, 1.0f, 3.0f, false, false},
          g2 = {20, 30, 40, false, true, 1, 0.0f, 0.5f, false, false};
    check_case(&g0, true);
    check_case(&g1, true);
    check_case(&g2, true);
    float c = 5.0f; /* m or n 0: nothing written */
    rx_rt_gemm_ex(false, false, 0, 1, 1, 1.0f, &c, 1, &c, 1, 0.0f, &c, 1, true);
    ck_assert(c == 5.0f);
}
END_TEST

/* The kernel per $RX_GEMM_KERNEL: unset, the CPU's best (the AVX-512 8x32 tile where it
 * has AVX-512F); avx2, the 6x16 AVX2 one; portable, the C one. The 6x16 micro-kernel
 * library_conv.c calls (rx_rt_gemm_kernel) is the AVX2 one under both unset and avx2.
 * Then the choice per call: RX_GEMM unset (auto) gives 1 to 8 rows to rx_rt_matvec, the
 * BLAS's sgemm to CPUs without AVX2+FMA and, with the 6x16 kernel, to products of 9 to 47
 * rows, this one to the rest; no BLAS stays NULL (the blas.* "not available" error). */
START_TEST(test_gemm_pick)
{
    ck_assert_ptr_null(getenv("RX_GEMM"));
    rx_rt_sgemm_fn blas = rx_rt_sgemm();
    ck_assert_ptr_nonnull(blas);
    const char *want = getenv("RX_GEMM_KERNEL");
    bool portable = want && strcmp(want, "portable") == 0;
    bool avx2 = strcmp(rx_rt_gemm_kernel(), "avx2+fma 6x16") == 0;
    ck_assert_int_eq(avx2, !portable && __builtin_cpu_supports("avx2") &&
                               __builtin_cpu_supports("fma"));
    bool wide = strcmp(rx_rt_gemm_isa(), "avx512 8x32") == 0;
    ck_assert_int_eq(wide, avx2 && !(want && strcmp(want, "avx2") == 0) &&
                               __builtin_cpu_supports("avx512f"));
    if (!wide) ck_assert_str_eq(rx_rt_gemm_isa(), rx_rt_gemm_kernel());
    ck_assert(rx_rt_gemm_pick(blas, 1, 1024, 1024) == rx_rt_matvec); /* one row: test_matvec.c */
    ck_assert(rx_rt_gemm_pick(blas, 8, 1024, 1024) == rx_rt_matvec); /* up to 8 rows */
    /* up to 12 rows with the AVX-512 loops (rx_rt_matvec_rows), then the tile */
    ck_assert(rx_rt_gemm_pick(blas, 9, 1024, 1024) == (wide ? rx_rt_matvec : blas));
    ck_assert(rx_rt_gemm_pick(blas, 12, 1024, 1024) == (wide ? rx_rt_matvec : blas));
    ck_assert(rx_rt_gemm_pick(blas, 13, 1024, 1024) == (wide ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(blas, 47, 1024, 1024) == (wide ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(blas, 48, 1024, 1024) == (avx2 ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(blas, 128, 64, 128) == (avx2 ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(NULL, 128, 1024, 1024) == NULL);
}
END_TEST

/* One column (n = 1: gates, logits, a batch of matrix-vector products): auto gives it
 * to rx_rt_gemm_col1's row dots with the AVX-512 tile, to rx_rt_gemm / the BLAS as before
 * on the other kernels; checked through the picked sgemm on every transpose (A
 * transposed and a strided column fall back inside), with and without a leading-dimension
 * gap, alpha and beta, K 1 to 365 (16-lane tails), rows in 4-row passes with 1-3 left,
 * and 2048 x 365 (2^19+ multiply-adds: rows split over the threads). */
START_TEST(test_gemm_one_column)
{
    rx_rt_err e = {0};
    ck_assert_int_eq(rx_rt_set_threads(_i ? 2 : 1, &e), 0);
    ck_assert_ptr_null(getenv("RX_GEMM"));
    rx_rt_sgemm_fn blas = rx_rt_sgemm();
    bool wide = strcmp(rx_rt_gemm_isa(), "avx512 8x32") == 0;
    bool avx2 = strcmp(rx_rt_gemm_kernel(), "avx2+fma 6x16") == 0;
    ck_assert(rx_rt_gemm_pick(blas, 2048, 1, 109) ==
              (wide ? rx_rt_gemm_col1 : avx2 ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(blas, 109, 1, 4) == (wide ? rx_rt_gemm_col1 : avx2 ? rx_rt_gemm : blas));
    ck_assert(rx_rt_gemm_pick(blas, 2048, 2, 109) == (avx2 ? rx_rt_gemm : blas));
    static const int64_t cols1[][2] = {{2, 1}, {109, 4}, {7, 17}, {300, 33}, {2048, 109},
                                       {5, 16}, {2048, 365}};
    const float ab[][2] = {{1.0f, 0.0f}, {-0.5f, 2.0f}, {2.0f, 1.0f}, {0.0f, -1.0f}};
    for (size_t s = 0; s < sizeof cols1 / sizeof cols1[0]; s++)
        for (int t = 0; t < 8; t++) {
            size_t v = (s + (size_t)t) % 4;
            gcase g = {cols1[s][0], 1, cols1[s][1], t & 1, (t >> 1) & 1, t >> 2 ? 3 : 0,
                       ab[v][0], ab[v][1], false, false};
            via_pick = true;
            check_case(&g, true);
            via_pick = false;
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_gemm_shapes_transposes, 0, 2);
    tcase_add_test(tc, test_gemm_threads_shrink);
    tcase_add_loop_test(tc, test_gemm_strides_alpha_beta, 0, 2);
    tcase_add_loop_test(tc, test_gemm_epilogue, 0, 2);
    tcase_add_test(tc, test_gemm_activations);
    tcase_add_test(tc, test_gemm_degenerate);
    tcase_add_test(tc, test_gemm_pick);
    tcase_add_loop_test(tc, test_gemm_one_column, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
