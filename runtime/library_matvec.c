/*
 * library_matvec.c — one to MV_ROWS (8) rows times a weight at memory bandwidth
 * (rx_rt_matvec): the blas.* products of a decode step with a symbolic row count (an
 * imported model's x (b, s, K) @ W (K, N) at s = 1, b <= 8), where the library lowering
 * has to pick the library at compile time (docs/passes.md) and a few rows arrive at run
 * time (issue 13, item 2). Several rows share each pass over W (below); every row's
 * sums run in one row's order, so row i equals the one-row product of row i.
 *
 * Why: a one-row product reads the whole weight once and does two flops per element, so
 * its time is the weight's bytes over the memory bandwidth. A thin sgemm splits the
 * columns among the threads, so each thread reads a piece of every row of W (at 1024
 * columns, 2 KB of every 4 KB row: a new page per row, which the prefetchers follow
 * badly); this splits K instead, as schedule_matvec.c's split plan does for the
 * generated kernels (that file's essay has the measurements): SLICES = 4 slices of whole
 * rows of W, each contiguous memory, a thread's share of the slices one contiguous
 * range. Each slice is summed into an L1 accumulator of TILE (1024) columns at a time
 * (acc[j] += x[k] * W[k, j] over the slice's rows, four rows per pass over acc, added in
 * row order: a quarter of the accumulator's loads and stores), stored into its row of a (SLICES, N)
 * buffer, and then C[j] = alpha * (((s0 + s1) + s2) + s3) + beta * C[j] (C not read when
 * beta is 0). W stored transposed (N, K) (blas.matmul_view's views): each C[j] is a dot
 * product along K, contiguous in both; the threads split the columns, each dot summed in
 * 8 lanes. The order of every sum is fixed by the slices and lanes, never by the thread
 * count, so results do not depend on --threads; they are reassociated (error bound (K / 4
 * + 4) eps sum |x_k w_k|, the generated split plan's; test_matvec.c checks against a
 * double reference within 1e-5 of sum |x_k w_k|).
 *
 * When: rx_rt_gemm_pick (library_gemm.c) returns rx_rt_matvec for 1 to MV_ROWS rows of C
 * with N * K >= MIN_ELEMS under RX_GEMM=auto (the default) and a BLAS present (the same
 * "not available" contract as the rest of auto); RX_GEMM=blas or own keeps one sgemm for
 * every shape (the A/B). Anything else that reaches rx_rt_matvec (more rows, A
 * transposed, a column-major order) is passed on to rx_rt_gemm. OpenBLAS on 2 to 8 rows
 * packs all of W on every call and its threads wait on each other: docs/runtime.md.
 *
 * Threads: the runtime's pool (rx_rt_parallel_for); inside a region already (a batch
 * item of blas.matmul_view), on the calling thread. The loops are compiled once more
 * for AVX2+FMA (a target attribute) and chosen by cpuid; the portable build is the same
 * C. The slice buffer is one allocation per call (N * SLICES floats); when it cannot be
 * allocated the product goes to rx_rt_gemm.
 *
 * Cost: N * K multiply-adds, W read once; SLICES * N floats written and read back.
 */
#include "rt_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MV_X86 1
#define MV_AVX2 __attribute__((target("avx2,fma")))
#else
#define MV_X86 0
#endif

enum { SLICES = 4, TILE = 1024, LANES = 8 };
enum { MIN_ELEMS = 32768 }; /* N * K below which auto keeps the BLAS (the call costs more) */
enum { MV_ROWS = 8 };       /* the most rows of C it takes */

typedef struct mv_job {
    int64_t m, n, k;
    const float *x, *w;
    int64_t ldx, ldw;
    bool trans;  /* W stored (N, K) */
    float *part; /* (SLICES, m, N) slice sums; trans: C's unscaled dots (m, N) */
    bool avx2;
} mv_job;

/* Slice s of the K split: rows [lo, hi) of W, summed into part[s] for each of the m rows
   of x; TILE / m columns at a time, so the m accumulators stay in L1 while the four rows
   of W under them are reused m times. Each row's sums run in the order of one row's.
   Inlined into a portable and an AVX2+FMA caller (the compiler vectorizes the column
   loop for each). */
static inline __attribute__((always_inline)) void slice_body(const mv_job *j, int64_t s)
{
    int64_t lo = s * j->k / SLICES, hi = (s + 1) * j->k / SLICES, tile = TILE / j->m;
    for (int64_t j0 = 0; j0 < j->n; j0 += tile) {
        int64_t w = j->n - j0 < tile ? j->n - j0 : tile;
        float acc[TILE];
        memset(acc, 0, sizeof(float) * (size_t)(w * j->m));
        int64_t r = lo;
        for (; r + 4 <= hi; r += 4) { /* four rows per pass over acc, added in row order */
            const float *w0 = j->w + r * j->ldw + j0, *w1 = w0 + j->ldw, *w2 = w1 + j->ldw,
                        *w3 = w2 + j->ldw;
            for (int64_t i = 0; i < j->m; i++) {
                const float *xr = j->x + i * j->ldx + r;
                const float x0 = xr[0], x1 = xr[1], x2 = xr[2], x3 = xr[3];
                float *a = acc + i * w;
                for (int64_t q = 0; q < w; q++)
                    a[q] = (((a[q] + x0 * w0[q]) + x1 * w1[q]) + x2 * w2[q]) + x3 * w3[q];
            }
        }
        for (; r < hi; r++) {
            const float *wr = j->w + r * j->ldw + j0;
            for (int64_t i = 0; i < j->m; i++) {
                const float xv = j->x[i * j->ldx + r];
                float *a = acc + i * w;
                for (int64_t q = 0; q < w; q++) a[q] += xv * wr[q];
            }
        }
        for (int64_t i = 0; i < j->m; i++)
            memcpy(j->part + (s * j->m + i) * j->n + j0, acc + i * w, sizeof(float) * (size_t)w);
    }
}

/* Columns [c0, c1) of W (N, K): for each, the dots of the m rows of x with row c (read
   from memory once, then from L1), K summed in LANES lanes, then the lanes in order. */
static inline __attribute__((always_inline)) void dots_body(const mv_job *j, int64_t c0,
                                                             int64_t c1)
{
    for (int64_t c = c0; c < c1; c++) {
        const float *wr = j->w + c * j->ldw;
        for (int64_t i = 0; i < j->m; i++) {
            const float *xr = j->x + i * j->ldx;
            float lane[LANES] = {0};
            int64_t kk = 0;
            for (; kk + LANES <= j->k; kk += LANES)
                for (int l = 0; l < LANES; l++) lane[l] += xr[kk + l] * wr[kk + l];
            for (int l = 0; kk < j->k; kk++, l++) lane[l] += xr[kk] * wr[kk];
            float sum = 0.0f;
            for (int l = 0; l < LANES; l++) sum += lane[l];
            j->part[i * j->n + c] = sum;
        }
    }
}

static void slice_c(const mv_job *j, int64_t s) { slice_body(j, s); }
static void dots_c(const mv_job *j, int64_t c0, int64_t c1) { dots_body(j, c0, c1); }
#if MV_X86
MV_AVX2 static void slice_avx2(const mv_job *j, int64_t s) { slice_body(j, s); }
MV_AVX2 static void dots_avx2(const mv_job *j, int64_t c0, int64_t c1) { dots_body(j, c0, c1); }
#endif

/* Thread t of nt: its slices (a contiguous range of W's rows), or its columns. */
static void mv_worker(void *ud, int t, int nt)
{
    const mv_job *j = ud;
    if (!j->trans) {
        for (int64_t s = (int64_t)t * SLICES / nt; s < (int64_t)(t + 1) * SLICES / nt; s++) {
#if MV_X86
            if (j->avx2) {
                slice_avx2(j, s);
                continue;
            }
#endif
            slice_c(j, s);
        }
        return;
    }
    int64_t c0 = (int64_t)t * j->n / nt, c1 = (int64_t)(t + 1) * j->n / nt;
#if MV_X86
    if (j->avx2) {
        dots_avx2(j, c0, c1);
        return;
    }
#endif
    dots_c(j, c0, c1);
}

static pthread_once_t mv_once = PTHREAD_ONCE_INIT;
static bool mv_avx2;

static void mv_choose(void)
{
#if MV_X86
    __builtin_cpu_init();
    mv_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    const char *env = getenv("RX_GEMM_KERNEL");
    if (env && strcmp(env, "portable") == 0) mv_avx2 = false;
}

void rx_rt_matvec(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    float *part = NULL;
    if (order == 101 && ta != 112 && m >= 1 && m <= MV_ROWS && n > 0 && k > 0 && alpha != 0.0f)
        part = malloc(sizeof(float) * (size_t)n * (size_t)m * (tb == 112 ? 1 : SLICES));
    if (!part) { /* too many rows, or no memory: the general GEMM */
        rx_rt_gemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    pthread_once(&mv_once, mv_choose);
    mv_job j = {m, n, k, a, b, lda, ldb, tb == 112, part, mv_avx2};
    int id, nt;
    rx_rt_parallel_id(&id, &nt);
    if (nt == 1) {
        rx_rt_parallel_for(mv_worker, &j);
    } else {
        mv_worker(&j, 0, 1);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < n; q++) {
            float s = part[i * (int64_t)n + q];
            if (!j.trans)
                for (int p = 1; p < SLICES; p++) s += part[(p * (int64_t)m + i) * n + q];
            float *cq = c + i * (int64_t)ldc + q;
            *cq = beta != 0.0f ? alpha * s + beta * *cq : alpha * s;
        }
    free(part);
}

bool rx_rt_matvec_takes_items(int64_t m, int64_t n, int64_t k)
{
    return m >= 1 && m <= MV_ROWS && n >= 1 && k >= 1;
}

bool rx_rt_matvec_takes(int64_t m, int64_t n, int64_t k)
{
    return rx_rt_matvec_takes_items(m, n, k) && n * k >= MIN_ELEMS;
}
