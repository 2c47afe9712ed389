/*
 * bench_transpose.c — what bounds a large f32 2-D transpose on this CPU: the tile
 * shape the compiler generates (schedule_copy.c) against hand-written AVX2 variants,
 * on 4 KiB pages and on 2 MiB (transparent huge) pages, each against memcpy of the
 * same bytes on the same pages, same threads, same run.
 *
 *   bench_transpose [--rows R] [--cols C] [--threads T] [--repeat N]
 *
 * x is R x C, y = x^T is C x R (default 4096 x 4104, bench_kernels.py's transpose_2d).
 * Variants, each timed as the best of N calls (ms):
 *   memcpy   each thread copies a contiguous share of x's bytes (the reference)
 *   scalar   the generated kernel's loop nest: 16 x 16 tiles, tiles along y's rows in
 *            groups of 16 outside the tile rows, the groups split over the threads, one
 *            element at a time (what the C compiler makes of it at -O2)
 *   avx      the same nest, each 8 x 16 piece as two in-register 8 x 8 transposes
 *            (8 row loads, unpack / shuffle / permute2f128, 8 stores per block), each
 *            of y's rows written as one whole 64-byte line
 *   avx_nt   avx with non-temporal (streaming) stores, so y's lines are not read first
 * on 4 KiB pages ("4k") and on buffers advised MADV_HUGEPAGE ("2m"; the kernel's THP
 * mode is madvise here). ratio = memcpy ms / variant ms on the same pages.
 *
 * Measured (4096 x 4104, 2 threads, Release build, five runs at load 2.6-3.6; 2 MiB
 * pages took effect: AnonHugePages grows by 132 MiB during the run):
 *   4k: scalar 0.35-0.40, avx 0.49-0.52, avx_nt 0.54-0.65
 *   2m: scalar 0.34-0.51, avx 0.56-0.70, avx_nt 0.69-0.94 (and 1.22 once, against a
 *       memcpy slowed by other load)
 * The scalar nest is the generated kernel's figure (bench_kernels.py transpose_2d:
 * 0.35-0.40). The in-register transpose alone is worth 1.3-1.45x (22 -> 15.5 ms) but stays
 * near half of memcpy on 4 KiB pages, where each 16-row tile touches 32 pages (no
 * hardware counters in this VM; the huge-page runs are the evidence that address
 * translation bounds it); 0.7 of memcpy needs all three: the 8 x 8 transpose,
 * streaming stores of whole lines (y's lines are otherwise read before they are
 * written: 3 passes of traffic against memcpy's 2), and huge pages for large buffers.
 *
 * Every variant's output is compared with a plain reference transpose; a difference
 * exits 1 (the smoke test in CMakeLists.txt runs odd sizes that leave edges). The AVX2
 * variants (runtime/rt_vmath.h's rx_rt_tr8x8, as library_gemm.c packs a transposed B)
 * run only where the CPU has AVX2 and FMA (x86-64 builds; elsewhere they are skipped).
 * Output: one JSON object per page kind on one line.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "../../runtime/rt_vmath.h"
#define HAVE_AVX2_CODE 1
#else
#define HAVE_AVX2_CODE 0
#endif

enum { T = 16, G = 16, MAX_THREADS = 64 };
enum { V_MEMCPY, V_SCALAR, V_AVX, V_AVX_NT, NVARIANTS };
static const char *const VNAMES[NVARIANTS] = {"memcpy", "scalar", "avx", "avx_nt"};

typedef struct job {
    const float *x;
    float *y;
    int64_t rows, cols;   /* x is rows x cols */
    int variant, nthreads, id;
} job;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The scalar tile: y[i0, i1] = x[i1, i0] for i0 in [a0, a1), i1 in [b0, b1). */
static void tile_scalar(const job *j, int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    if (b1 - b0 == T) { /* the literal inner extent of a whole tile, as generated */
        for (int64_t i0 = a0; i0 < a1; i0++)
            for (int64_t n = 0; n < T; n++) j->y[i0 * j->rows + b0 + n] = j->x[(b0 + n) * j->cols + i0];
        return;
    }
    for (int64_t i0 = a0; i0 < a1; i0++)
        for (int64_t i1 = b0; i1 < b1; i1++) j->y[i0 * j->rows + i1] = j->x[i1 * j->cols + i0];
}

#if HAVE_AVX2_CODE
/* The AVX2 tile: whole 8 x 16 pieces in registers, the edges scalar. */
__attribute__((target("avx2,fma"))) static void tile_avx(const job *j, int64_t a0, int64_t a1,
                                                     int64_t b0, int64_t b1, int nt)
{
    int64_t a8 = a0 + (a1 - a0) / 8 * 8;
    if (b1 - b0 == T) {
        for (int64_t i0 = a0; i0 < a8; i0 += 8) {
            __m256 lo[8], hi[8];
            rx_rt_tr8x8(j->x + b0 * j->cols + i0, j->cols, 8, lo);
            rx_rt_tr8x8(j->x + (b0 + 8) * j->cols + i0, j->cols, 8, hi);
            float *d = j->y + i0 * j->rows + b0;
            for (int r = 0; r < 8; r++) {
                if (nt) {
                    _mm256_stream_ps(d + r * j->rows, lo[r]);
                    _mm256_stream_ps(d + r * j->rows + 8, hi[r]);
                } else {
                    _mm256_storeu_ps(d + r * j->rows, lo[r]);
                    _mm256_storeu_ps(d + r * j->rows + 8, hi[r]);
                }
            }
        }
        a0 = a8;
    }
    tile_scalar(j, a0, a1, b0, b1);
}
#endif

static void *worker(void *arg)
{
    const job *j = arg;
    if (j->variant == V_MEMCPY) {
        size_t bytes = (size_t)(j->rows * j->cols) * sizeof(float), share = bytes / (size_t)j->nthreads;
        size_t off = share * (size_t)j->id, n = j->id == j->nthreads - 1 ? bytes - off : share;
        memcpy((char *)j->y + off, (const char *)j->x + off, n);
        return NULL;
    }
    /* the generated nest: groups of G tiles along y's rows (i1) split over the threads,
     * then tile rows (i0), the group's tiles, the tile */
    int64_t ntiles = (j->rows + T - 1) / T, ngroups = (ntiles + G - 1) / G;
    int64_t g0 = ngroups * j->id / j->nthreads, g1 = ngroups * (j->id + 1) / j->nthreads;
    for (int64_t gb = g0; gb < g1; gb++)
        for (int64_t a = 0; a < j->cols; a += T)
            for (int64_t t = gb * G; t < (gb + 1) * G && t < ntiles; t++) {
                int64_t a1 = a + T < j->cols ? a + T : j->cols;
                int64_t b0 = t * T, b1 = b0 + T < j->rows ? b0 + T : j->rows;
#if HAVE_AVX2_CODE
                if (j->variant != V_SCALAR) {
                    tile_avx(j, a, a1, b0, b1, j->variant == V_AVX_NT);
                    continue;
                }
#endif
                tile_scalar(j, a, a1, b0, b1);
            }
#if HAVE_AVX2_CODE
    if (j->variant == V_AVX_NT) _mm_sfence();
#endif
    return NULL;
}

static int run(const float *x, float *y, int64_t rows, int64_t cols, int variant, int nthreads)
{
    pthread_t th[MAX_THREADS];
    job jobs[MAX_THREADS];
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (job){x, y, rows, cols, variant, nthreads, i};
        if (i && pthread_create(&th[i], NULL, worker, &jobs[i]) != 0) return -1;
    }
    worker(&jobs[0]);
    for (int i = 1; i < nthreads; i++) pthread_join(th[i], NULL);
    return 0;
}

static float *alloc(size_t bytes, int huge)
{
    size_t align = (size_t)2 << 20, n = (bytes + align - 1) / align * align;
    float *p = aligned_alloc(align, n);
    if (p && huge) (void)madvise(p, n, MADV_HUGEPAGE);
    if (p) memset(p, 0, n); /* touch every page before timing */
    return p;
}

static int64_t arg_int(int argc, char **argv, const char *name, int64_t dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return strtoll(argv[i + 1], NULL, 10);
    return dflt;
}

int main(int argc, char **argv)
{
    int64_t rows = arg_int(argc, argv, "--rows", 4096), cols = arg_int(argc, argv, "--cols", 4104);
    int64_t nthreads = arg_int(argc, argv, "--threads", 2), repeat = arg_int(argc, argv, "--repeat", 5);
    if (rows < 1 || cols < 1 || rows > (1 << 20) || cols > (1 << 20) || nthreads < 1 ||
        nthreads > MAX_THREADS || repeat < 1) {
        fprintf(stderr, "error: bad arguments (rows, cols in [1, 2^20], threads in [1, %d])\n",
                MAX_THREADS);
        return 1;
    }
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    int avx2 = 0;
#if HAVE_AVX2_CODE
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    int failed = 0;
    for (int huge = 0; huge < 2 && !failed; huge++) {
        float *x = alloc(bytes, huge), *y = alloc(bytes, huge), *want = malloc(bytes);
        if (!x || !y || !want) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
        for (int64_t i = 0; i < rows * cols; i++) x[i] = (float)i;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) want[c * rows + r] = x[r * cols + c];
        double best[NVARIANTS];
        for (int v = 0; v < NVARIANTS; v++) best[v] = -1;
        for (int64_t k = 0; k < repeat && !failed; k++)
            for (int v = 0; v < NVARIANTS; v++) {
                if ((v == V_AVX || v == V_AVX_NT) && (!avx2 || (v == V_AVX_NT && rows % 8)))
                    continue; /* streaming stores need 32-byte aligned rows of y */
                memset(y, 0xff, bytes);
                double t = now_ms();
                if (run(x, y, rows, cols, v, (int)nthreads) != 0) {
                    fprintf(stderr, "error: pthread_create failed\n");
                    return 1;
                }
                t = now_ms() - t;
                if (v != V_MEMCPY && memcmp(y, want, bytes) != 0) {
                    fprintf(stderr, "error: %s on %s pages differs from the reference\n",
                            VNAMES[v], huge ? "2m" : "4k");
                    failed = 1;
                }
                if (best[v] < 0 || t < best[v]) best[v] = t;
            }
        printf("{\"pages\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"threads\": %lld", huge ? "2m" : "4k",
               (long long)rows, (long long)cols, (long long)nthreads);
        for (int v = 0; v < NVARIANTS; v++)
            if (best[v] > 0)
                printf(", \"%s_ms\": %.3f, \"%s_ratio\": %.2f", VNAMES[v], best[v], VNAMES[v],
                       best[V_MEMCPY] / best[v]);
        printf("}\n");
        free(x);
        free(y);
        free(want);
    }
    return failed;
}
