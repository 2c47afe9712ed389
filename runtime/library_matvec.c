/*
 * library_matvec.c — one to MV_ROWS (8; MV_ROWS512 = 12 with the AVX-512 loops) rows
 * times a weight at memory bandwidth (rx_rt_matvec): the blas.* products of a decode step
 * with a symbolic row count (an imported model's x (b, s, K) @ W (K, N) at s = 1, and
 * (b, 1, K) @ W with a symbolic b: docs/passes.md), where the library lowering
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
 * range. Each slice is summed into its rows of a (SLICES, m, N) buffer a tile of columns
 * at a time, the tile as wide as ACC_FLOATS (8192) / m floats allow (the m accumulator
 * rows in 32 KiB of L1), N cut into the fewest such tiles of equal width, so each row of W
 * is read in long runs (acc[j] += x[k] * W[k, j] over the slice's rows, four rows per pass
 * over acc, added in row order: a quarter of the accumulator's loads and stores), and
 * then C[j] = alpha * (((s0 + s1) + s2) + s3) + beta * C[j] (C not read when
 * beta is 0). W stored transposed (N, K) (blas.matmul_view's views): each C[j] is a dot
 * product along K, contiguous in both; the threads split the columns, each dot summed in
 * 8 lanes. The order of every sum is fixed by the slices and lanes, never by the thread
 * count, so results do not depend on --threads; they are reassociated (error bound (K / 4
 * + 4) eps sum |x_k w_k|, the generated split plan's; test_matvec.c checks against a
 * double reference within 1e-5 of sum |x_k w_k|).
 *
 * When: rx_rt_gemm_pick (library_gemm.c) returns rx_rt_matvec for 1 to rx_rt_matvec_rows()
 * rows of C
 * with N * K >= MIN_ELEMS under RX_GEMM=auto (the default) and a BLAS present (the same
 * "not available" contract as the rest of auto); RX_GEMM=blas or own keeps one sgemm for
 * every shape (the A/B). Anything else that reaches rx_rt_matvec (more rows, A
 * transposed, a column-major order) is passed on to rx_rt_gemm. OpenBLAS on 2 to 8 rows
 * packs all of W on every call and its threads wait on each other: docs/runtime.md.
 *
 * Threads: the runtime's pool (rx_rt_parallel_for); inside a region already (a batch
 * item of blas.matmul_view), on the calling thread. ISA: with AVX-512F the slices and
 * dots run library_matvec512.c's loops (fused multiply-adds in the same row order; the
 * dots in 16 lanes reduced by a fixed tree) and take up to 12 rows (at 16 its broadcasts
 * make it load-bound: docs/runtime.md); else these loops, compiled once more for
 * AVX2+FMA (a target attribute) and chosen by cpuid, the portable build the same C.
 * $RX_GEMM_KERNEL=avx2 / portable force the lower loops (the tests' runs). The three
 * differ in rounding (fused or not, 8 or 16 lanes) within the bound above; each is
 * deterministic. The slice buffer is one allocation per call (SLICES * m * N floats);
 * when it cannot be allocated the product goes to rx_rt_gemm.
 *
 * Cost: m * N * K multiply-adds, W read once; SLICES * m * N floats written and read back.
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

enum { SLICES = 4, ACC_FLOATS = 8192, LANES = 8 };
enum { MIN_ELEMS = 32768 }; /* N * K below which auto keeps the BLAS (the call costs more) */
enum { MV_ROWS = 8 };       /* the most rows of C it takes (AVX2, portable) */
enum { MV_ROWS512 = 12 };   /* the same with the AVX-512 loops */
enum { ISA_PORTABLE, ISA_AVX2, ISA_AVX512 };

typedef struct mv_job {
    int64_t m, n, k;
    const float *x, *w;
    int64_t ldx, ldw;
    bool trans;  /* W stored (N, K) */
    float *part; /* (SLICES, m, N) slice sums; trans: C's unscaled dots (m, N) */
    int isa;     /* ISA_*: which loops run */
} mv_job;

/* The columns of a slice's tile: N in the fewest tiles of at most ACC_FLOATS / m
   columns (the m rows of accumulators in L1), as even as 16-column vectors allow. */
static int64_t tile_cols(int64_t m, int64_t n)
{
    int64_t most = ACC_FLOATS / m / 16 * 16, tiles = (n + most - 1) / most;
    int64_t w = ((n + tiles - 1) / tiles + 15) / 16 * 16;
    return w < n ? w : n;
}

/* Slice s of the K split: rows [lo, hi) of W, summed for each of the m rows of x into
   part[s] (its rows at stride N) a tile of columns at a time, so the m accumulator rows
   stay in L1 while the four rows of W under them are reused m times and each row of W is
   read in long runs. Each row's sums run in the order of one row's. Inlined into a
   portable and an AVX2+FMA caller (the compiler vectorizes the column loop for each). */
static inline __attribute__((always_inline)) void slice_body(const mv_job *j, int64_t s)
{
    int64_t lo = s * j->k / SLICES, hi = (s + 1) * j->k / SLICES, tile = tile_cols(j->m, j->n);
    for (int64_t j0 = 0; j0 < j->n; j0 += tile) {
        int64_t w = j->n - j0 < tile ? j->n - j0 : tile;
        float *acc = j->part + s * j->m * j->n + j0;
        for (int64_t i = 0; i < j->m; i++) memset(acc + i * j->n, 0, sizeof(float) * (size_t)w);
        int64_t r = lo;
        for (; r + 4 <= hi; r += 4) { /* four rows per pass over acc, added in row order */
            const float *w0 = j->w + r * j->ldw + j0, *w1 = w0 + j->ldw, *w2 = w1 + j->ldw,
                        *w3 = w2 + j->ldw;
            for (int64_t i = 0; i < j->m; i++) {
                const float *xr = j->x + i * j->ldx + r;
                const float x0 = xr[0], x1 = xr[1], x2 = xr[2], x3 = xr[3];
                float *a = acc + i * j->n;
                for (int64_t q = 0; q < w; q++)
                    a[q] = (((a[q] + x0 * w0[q]) + x1 * w1[q]) + x2 * w2[q]) + x3 * w3[q];
            }
        }
        for (; r < hi; r++) {
            const float *wr = j->w + r * j->ldw + j0;
            for (int64_t i = 0; i < j->m; i++) {
                const float xv = j->x[i * j->ldx + r];
                float *a = acc + i * j->n;
                for (int64_t q = 0; q < w; q++) a[q] += xv * wr[q];
            }
        }
    }
}

#if MV_X86
/* The same slice with library_matvec512.c's loops (an empty slice: zeros). */
static void slice_512(const mv_job *j, int64_t s)
{
    int64_t lo = s * j->k / SLICES, hi = (s + 1) * j->k / SLICES, tile = tile_cols(j->m, j->n);
    for (int64_t j0 = 0; j0 < j->n; j0 += tile) {
        int64_t w = j->n - j0 < tile ? j->n - j0 : tile;
        float *acc = j->part + s * j->m * j->n + j0;
        if (lo == hi)
            for (int64_t i = 0; i < j->m; i++) memset(acc + i * j->n, 0, sizeof(float) * (size_t)w);
        else
            rx_rt_matvec_slice512(j->x, j->ldx, j->m, j->w + j0, j->ldw, lo, hi, w, acc, j->n);
    }
}
#endif

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
            if (j->isa == ISA_AVX512) {
                slice_512(j, s);
                continue;
            }
            if (j->isa == ISA_AVX2) {
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
    if (j->isa == ISA_AVX512) {
        rx_rt_matvec_dots512(j->x, j->ldx, j->m, j->w, j->ldw, j->k, j->n, c0, c1, j->part);
        return;
    }
    if (j->isa == ISA_AVX2) {
        dots_avx2(j, c0, c1);
        return;
    }
#endif
    dots_c(j, c0, c1);
}

static pthread_once_t mv_once = PTHREAD_ONCE_INIT;
static int mv_isa = ISA_PORTABLE;

static void mv_choose(void)
{
#if MV_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        mv_isa = __builtin_cpu_supports("avx512f") ? ISA_AVX512 : ISA_AVX2;
#endif
    const char *env = getenv("RX_GEMM_KERNEL");
    if (env && strcmp(env, "portable") == 0) mv_isa = ISA_PORTABLE;
    if (env && strcmp(env, "avx2") == 0 && mv_isa == ISA_AVX512) mv_isa = ISA_AVX2;
}

/* The most rows this CPU's loops take. */
static int64_t mv_rows(void) { return mv_isa == ISA_AVX512 ? MV_ROWS512 : MV_ROWS; }

int64_t rx_rt_matvec_rows(void)
{
    pthread_once(&mv_once, mv_choose);
    return mv_rows();
}

void rx_rt_matvec(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    float *part = NULL;
    pthread_once(&mv_once, mv_choose);
    if (order == 101 && ta != 112 && m >= 1 && m <= mv_rows() && n > 0 && k > 0 && alpha != 0.0f)
        part = malloc(sizeof(float) * (size_t)n * (size_t)m * (tb == 112 ? 1 : SLICES));
    if (!part) { /* too many rows, or no memory: the general GEMM */
        rx_rt_gemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    mv_job j = {m, n, k, a, b, lda, ldb, tb == 112, part, mv_isa};
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
    pthread_once(&mv_once, mv_choose);
    return m >= 1 && m <= mv_rows() && n >= 1 && k >= 1;
}

bool rx_rt_matvec_takes(int64_t m, int64_t n, int64_t k)
{
    return rx_rt_matvec_takes_items(m, n, k) && n * k >= MIN_ELEMS;
}
