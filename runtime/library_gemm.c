/*
 * library_gemm.c — the runtime's own f32 GEMM (rx_rt_gemm): C = alpha * op(A) op(B) +
 * beta * C, row-major, cblas_sgemm's arguments, no external library.
 *
 * Algorithm (Goto / BLIS): the product is cut into blocks of KC rows of B (the
 * reduction) by NC columns; each B block is packed into micro-panels of NR = 16 columns
 * (p-major: the 16 values of one reduction index together, zero-padded past N), each
 * MC-row block of A into micro-panels of MR = 6 rows (the 6 values of one reduction
 * index together, zero-padded past M). The micro-kernel multiplies one A micro-panel by
 * one B micro-panel over the KC reduction indices in 12 vector registers (6 rows x 2
 * vectors of 8) and writes the 6x16 tile of C once: C = alpha * acc + beta * C on the
 * first KC block (beta 0 never reads C, so uninitialised C is fine), C += alpha * acc
 * on the later ones. Tiles cut by M or N go through a 6x16 buffer and copy only the
 * valid part. Packing reads A and B through (row stride, column stride), so a transpose
 * is only another pair of strides and costs nothing extra.
 * Blocking on the machine this was tuned on (Zen, 32 KiB L1d, 512 KiB L2 per core,
 * docs/runtime.md): KC = 256 (a B micro-panel, 16 KiB, stays in L1 while the A
 * block streams past it), MC = 96 (an A block, 96 KiB, in L2), NC = 2048 (a B block,
 * 2 MiB, in L3).
 * Small M (at most DIRECT_ROWS = 24 rows, 4 micro-tiles): B is not packed when it is
 * not transposed: the kernel reads its 16 columns straight from B's rows (packing would
 * read B and write it once for at most 4 uses). With more rows the packed panel wins:
 * B's rows read in place sit a power-of-two-like stride apart (1024, 2816, 4096
 * floats), so a 256-deep panel maps onto a few L1 and L2 sets and is evicted before
 * the next row tile reuses it (measured: 64 x 1024 x 4096 at 0.64x OpenBLAS in place,
 * 0.95-1.03x packed, one thread).
 * Up to STREAM_ROWS = 192 rows (prefill's and an encoder's products, 128..192 tokens)
 * B is packed SG = 4 micro-panels at a time (gemm_stream): all the rows of A packed per
 * KC block (at most 192 KiB, in L2), then each 64-column group of B packed into a 64 KiB
 * buffer (L2) and each of its panels multiplied by every row tile while it is in L1.
 * Packing a whole NC-wide block first writes 2 MiB to L3 and reads it back per MC block:
 * on a weight that comes from memory that was 0.1 of the product's time (perf, 128 x
 * 768 x 3072, one thread); streamed, B is read once, 256 bytes of a row at a time, the
 * next group's rows prefetched a slice per row tile. perf on the mlp probe (64 x 1024 x
 * 4096 and back, 2 threads), share of the time in packing and its waits: one panel at
 * a time with the panel after next prefetched at once 13.3%; one panel, prefetch spread
 * over the tiles 11.7%; groups of 4 panels 9.8% (8: 11.3%, 16: 16.7%; 4 without the
 * prefetch 11.9%).
 * Past STREAM_ROWS rows (whole blocks), the B block packed next (the next KC rows of
 * these columns, else the next NC columns' first) is prefetched a slice per tile while
 * the current one computes, as gemm_stream does for its groups: an encoder's weights
 * (ViT, BERT: 197-256 rows) come from memory or L3 each call, and pack_b waited on
 * every line (perf, one thread, Zen 5: pack_b 11-14% of a ViT block's and of a chain of
 * 768 -> 3072 -> 768 linears' time at 256 rows, 3.5% after; the prefetch itself 5-6%).
 * One thread, CPU time, alternated with the build before, medians of 5: linears 768 ->
 * 3072 -> 768 x 3 at 256 rows 0.966x, 384 -> 1536 -> 384 x 4 at 197 rows 0.91x.
 * Prefetching into L2 only (_MM_HINT_T1) measured the same. Copying a panel row with
 * a constant-size memcpy, or 8 rows per sweep over the panels, did not change pack_b's
 * share: its time is the loads of B.
 *
 * The micro-kernel: an AVX2+FMA one (6 broadcasts of A, 2 loads of B, 12 FMAs per
 * reduction index: at the FMA unit's peak on L1-resident panels) compiled with a target
 * attribute and chosen at run time when the CPU has AVX2 and FMA
 * (__builtin_cpu_supports); elsewhere a portable C kernel with the same packing. Its
 * reduction loop is inline assembly with the 12 accumulators as register operands:
 * from the same intrinsics gcc 12 (-O3) spilled accumulators to the stack and copied
 * registers in the loop. A last row tile of 1 to 4 rows (M = 128 and 512 leave 2) has
 * kernels of its own with 2 to 8 accumulators (intrinsics; few enough to stay in
 * registers): the 6-row kernel on a 2-row tile did 3x its arithmetic, ~3% of a
 * 128-row product (one thread, CPU time of a decoder block's seven products at 128
 * rows: 84.0-84.5 ms against 86.2-87.3, same run).
 *
 * The AVX-512 tile (library_gemm512.c): on a CPU with AVX-512F the products run on an
 * 8x32 tile instead (16 zmm accumulators; its reduction loop assembly as well), with
 * the same driver: the tile and the blocking are a gemm_geom per product (6x16: the
 * figures above; 8x32: KC = 256 (a B micro-panel, 32 KiB, in a 48 KiB L1d), MC = 128
 * (an A block, 128 KiB), NC = 256 (a packed B block, 256 KiB: with A's block in the
 * 1 MiB L2, where the 2048-wide one, 1-2 MiB, was not), B in place up to 24 rows, B
 * streamed two 32-column panels at a time up to 128 rows (a weight that comes from
 * memory: a decoder block's 44 MB of weights do not fit the 32 MiB L3). Short tiles run
 * the kernel instantiated for their rows and write through
 * column masks (no buffer). Packing is the same code at 8 rows / 32 columns. Measured
 * on the Zen 5 (2 x 512-bit FMA a cycle, one thread, CPU time of 10-40 calls, three
 * runs each, load 7-14): 233-235 GFLOP/s on 512x512x64 (the FMA peak; OpenBLAS SkylakeX
 * 211-218, Haswell 118-120); NC 2048 -> 256: 512x1024x2816 163-166 -> 139-145 ms (~205
 * GFLOP/s, SkylakeX 207-212), 512x2816x1024 182-191 -> 144-151. Streaming B against
 * packing whole blocks: with B from memory (6 weights in turn, 69 MB) 0.90-0.93x the
 * time at 32 and 64 rows, 0.93-0.98x at 128 (128x1024x2816 190-193 against 203-208
 * ms), 1.0x at 512 (the blocks then); with B in L3 (one weight) 1.04-1.14x at 32-256
 * rows: the rows where a weight is read once a call (prefill, an MLP) stream. KC
 * 128..512 and MC 64..256 within the noise. The 6x16 kernel gets 107 and 118 GFLOP/s there (an AVX2 FMA is half as wide).
 *
 * Threads: rx_rt_gemm runs on the runtime's pool (rx_rt_parallel_for) from 2^19
 * multiply-adds up: the columns are split in NR multiples over the threads when there
 * are at least 4 micro-panels of them (or no fewer than row tiles), else the rows in MR
 * multiples; each thread packs its own panels into its own thread-local buffer (grown on
 * demand, kept for the thread's life: no allocation per call; when it cannot be
 * allocated the block is computed by plain loops, slower but right). Inside a parallel
 * region (blas.matmul_view's batch items, conv2d's bands) the call runs on the calling
 * thread.
 *
 * rx_rt_gemm_pick decides per call between this GEMM and the BLAS library's sgemm
 * (library.c, library_conv.c): $RX_GEMM = "own" always this one (no BLAS needed),
 * "blas" always the library's, unset or "auto" this one where it measured faster on the
 * decoder's and the MLP's shapes (docs/runtime.md has the figures): with the AVX2
 * kernel, from OWN_ROWS = 48 rows of C up; with the AVX-512 tile from OWN_ROWS512 = 9
 * (one thread, CPU time, own / OpenBLAS-Haswell time on n x k = 1024 x 2816 and 2816 x
 * 1024: 9 rows 1.06 and 0.60, 12 rows 0.92 / 0.77, 16 rows 0.71 / 0.60, 24-48 rows
 * 0.58-0.78; against OpenBLAS's SkylakeX kernels 0.54-0.93 at 9-24 rows); 1 to 8 rows
 * (12 with its AVX-512 loops: rx_rt_matvec_rows) of a weight of at least 32768 elements
 * go to rx_rt_matvec (library_matvec.c: K split
 * over the threads, at memory bandwidth); with the AVX-512 tile a product of one column
 * (n = 1: a recommender's gates and logit, a batch of matrix-vector products) goes to
 * rx_rt_gemm_col1, row dots (the tile computed 32 columns for the one: DCN-v2's 2048 x
 * 109 gate 74 -> 9.7 us, its 2048 x 365 logit 280 -> 54 us, its batched 109 x 4 by 4 x 1
 * at batch 2048 910 -> 480 us, one thread, medians of 50); the rest (9 to 47 rows with
 * the 6x16 kernel, the portable kernel) stays with the BLAS.
 * $RX_GEMM_KERNEL=avx2 forces the 6x16 AVX2 kernel (no AVX-512 tile), =portable the C
 * kernel (the test's second and third runs). library_conv.c's micro-kernel
 * (rx_rt_gemm_micro) is the 6x16 one in any case.
 * Cost: 2 M N K flops; packing copies A once per NC-column block (per KC block and
 * thread up to STREAM_ROWS rows) and B once (once per MC-row block past STREAM_ROWS
 * rows; not at all up to DIRECT_ROWS rows).
 */
#include "rt_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_X86 1
#include <immintrin.h>

#include "rt_vmath.h"
#else
#define GEMM_X86 0
#endif

enum { MR = 6, NR = 16, KC = 256, MC = 96, NC = 2048 };
/* The kernel prefetches A 384 and 448 bytes ahead (16 reduction steps). */
enum { DIRECT_ROWS = 4 * MR }; /* B read in place (not packed) up to this many rows */
enum { OWN_ROWS = 48 };        /* auto: the own sgemm from this many rows of C up (AVX2) */
enum { OWN_ROWS512 = 9 };      /* the same with the AVX-512 tile (rx_rt_matvec's first) */
enum { STREAM_ROWS = 2 * MC }; /* B packed SG panels at a time up to this many rows */
enum { SG = 4 };               /* gemm_stream's group of B panels (64 columns, 64 KiB) */
/* The AVX-512 8x32 tile's blocking (48 KiB L1d, 1 MiB L2: the essay). */
enum { KC512 = 256, MC512 = 128, NC512 = 256, SG512 = 2 };
enum { DIRECT_ROWS512 = 3 * RX_GEMM512_MR, STREAM_ROWS512 = 128 };
enum { KC_MAX = (int)KC512 > (int)KC ? (int)KC512 : (int)KC, NR_MAX = (int)RX_GEMM512_NR };

/* A product's register tile and blocking (the essay): the 6x16 kernels' or the AVX-512
 * 8x32 one's. */
typedef struct gemm_geom {
    int64_t mr, nr;                   /* the register tile */
    int64_t kc, mc, nc;               /* reduction, row and column blocks */
    int64_t direct_rows, stream_rows; /* B in place / B streamed up to this many rows */
    int64_t sg;                       /* gemm_stream's group: sg panels of nr columns */
    bool wide;                        /* rx_rt_gemm512_tile (else the 6x16 kernels) */
} gemm_geom;

static const gemm_geom geom6x16 = {MR, NR, KC, MC, NC, DIRECT_ROWS, STREAM_ROWS, SG, false};
static const gemm_geom geom8x32 = {RX_GEMM512_MR, RX_GEMM512_NR, KC512, MC512, NC512,
                                   DIRECT_ROWS512, STREAM_ROWS512, SG512, true};

/* The micro-kernel: acc = A panel (kc x MR, packed) times B panel (kc rows of NR, row
 * stride ldb: NR when packed, B's own when read in place); then c (MR x NR, row stride
 * ldc) = alpha * acc + beta * c, c not read when beta is 0. */
typedef void (*kern_fn)(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                        int64_t ldc, float alpha, float beta);

/* ---- the portable kernel ---- */

static void kern_c(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                   int64_t ldc, float alpha, float beta)
{
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++, a += MR, b += ldb)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++)
            c[i * ldc + j] = alpha * acc[i][j] + (beta != 0.0f ? beta * c[i * ldc + j] : 0.0f);
}

/* ---- the AVX2 + FMA kernel ---- */

#if GEMM_X86
#define AVX2_FN __attribute__((target("avx2,fma")))

AVX2_FN static inline void row_out(float *c, __m256 lo, __m256 hi, __m256 va, __m256 vb,
                                   float beta)
{
    lo = _mm256_mul_ps(lo, va);
    hi = _mm256_mul_ps(hi, va);
    if (beta != 0.0f) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(c), vb, lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8), vb, hi);
    }
    _mm256_storeu_ps(c, lo);
    _mm256_storeu_ps(c + 8, hi);
}

/* One reduction index of the 6x16 tile in assembly: B's two vectors into ymm12/13,
 * each of A's 6 values broadcast into ymm14/15 (alternating), 12 FMAs; then A and B
 * step on. The accumulators are the asm operands %0..%11 (registers the compiler picks;
 * with ymm12-15 clobbered, the 12 left). */
#define K_STEP(aoff)                                                                       \
    "vmovups (%[b]), %%ymm12\n\t"                                                          \
    "vmovups 32(%[b]), %%ymm13\n\t"                                                        \
    "add %[ldb], %[b]\n\t"                                                                 \
    "vbroadcastss " #aoff "+0(%[a]), %%ymm14\n\t"                                          \
    "vfmadd231ps %%ymm12, %%ymm14, %0\n\t"                                                 \
    "vfmadd231ps %%ymm13, %%ymm14, %1\n\t"                                                 \
    "vbroadcastss " #aoff "+4(%[a]), %%ymm15\n\t"                                          \
    "vfmadd231ps %%ymm12, %%ymm15, %2\n\t"                                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %3\n\t"                                                 \
    "vbroadcastss " #aoff "+8(%[a]), %%ymm14\n\t"                                          \
    "vfmadd231ps %%ymm12, %%ymm14, %4\n\t"                                                 \
    "vfmadd231ps %%ymm13, %%ymm14, %5\n\t"                                                 \
    "vbroadcastss " #aoff "+12(%[a]), %%ymm15\n\t"                                         \
    "vfmadd231ps %%ymm12, %%ymm15, %6\n\t"                                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %7\n\t"                                                 \
    "vbroadcastss " #aoff "+16(%[a]), %%ymm14\n\t"                                         \
    "vfmadd231ps %%ymm12, %%ymm14, %8\n\t"                                                 \
    "vfmadd231ps %%ymm13, %%ymm14, %9\n\t"                                                 \
    "vbroadcastss " #aoff "+20(%[a]), %%ymm15\n\t"                                         \
    "vfmadd231ps %%ymm12, %%ymm15, %10\n\t"                                                \
    "vfmadd231ps %%ymm13, %%ymm15, %11\n\t"

/* The reduction loop is assembly (the essay): 4 steps per iteration with A prefetched
 * 16 steps ahead, then the kc % 4 left one at a time. */
AVX2_FN static void kern_avx2(int64_t kc, const float *a, const float *b, int64_t ldb,
                              float *c, int64_t ldc, float alpha, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int r = 0; r < MR; r++) _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
    int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
    const float *a4 = a + kc / 4 * 4 * MR, *a1 = a + kc * MR; /* where each loop stops */
/* The loop "1: BODY; a += STEP bytes; until a reaches END" as one asm statement. */
#define K_LOOP(BODY, STEP, END)                                                            \
    __asm__ volatile("1:\n\t" BODY "add $" #STEP ", %[a]\n\t"                             \
                     "cmp %[end], %[a]\n\t"                                                \
                     "jb 1b\n\t"                                                           \
                     : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21),  \
                       "+x"(c30), "+x"(c31), "+x"(c40), "+x"(c41), "+x"(c50), "+x"(c51),  \
                       [a] "+r"(a), [b] "+r"(b)                                            \
                     : [end] "r"(END), [ldb] "r"(ldb_bytes)                                \
                     : "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc")
    if (a < a4)
        K_LOOP("prefetcht0 384(%[a])\n\t"
               "prefetcht0 448(%[a])\n\t" K_STEP(0) K_STEP(24) K_STEP(48) K_STEP(72),
               96, a4);
    if (a < a1) K_LOOP(K_STEP(0), 24, a1);
#undef K_LOOP
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    row_out(c, c00, c01, va, vb, beta);
    row_out(c + ldc, c10, c11, va, vb, beta);
    row_out(c + 2 * ldc, c20, c21, va, vb, beta);
    row_out(c + 3 * ldc, c30, c31, va, vb, beta);
    row_out(c + 4 * ldc, c40, c41, va, vb, beta);
    row_out(c + 5 * ldc, c50, c51, va, vb, beta);
}
#undef K_STEP

/* The kernel for a last row tile of R < MR rows (R = 1..4: M = 128 or 512 leaves 2),
 * with R x 2 accumulators: the 6-row kernel would do MR / R times the arithmetic.
 * The A panel is still MR wide (zero rows past R, not read); only R rows of C are
 * written. The accumulators are named variables, the rows past R dead code: as arrays
 * gcc 12 stored them to the stack on every reduction step. */
#define ROW_FMA(R, r, l, h)                                                                \
    if (R > r) {                                                                           \
        __m256 ar = _mm256_broadcast_ss(a + r);                                            \
        l = _mm256_fmadd_ps(ar, b0, l);                                                    \
        h = _mm256_fmadd_ps(ar, b1, h);                                                    \
    }
#define KERN_ROWS(R)                                                                       \
    AVX2_FN static void kern_avx2_r##R(int64_t kc, const float *a, const float *b,         \
                                       int64_t ldb, float *c, int64_t ldc, float alpha,    \
                                       float beta)                                         \
    {                                                                                      \
        __m256 l0 = _mm256_setzero_ps(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0,      \
               l3 = l0, h3 = l0;                                                           \
        for (int64_t p = 0; p < kc; p++, a += MR, b += ldb) {                              \
            __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);                   \
            ROW_FMA(R, 0, l0, h0) ROW_FMA(R, 1, l1, h1) ROW_FMA(R, 2, l2, h2)               \
            ROW_FMA(R, 3, l3, h3)                                                          \
        }                                                                                  \
        __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);                      \
        row_out(c, l0, h0, va, vb, beta);                                                  \
        if (R > 1) row_out(c + ldc, l1, h1, va, vb, beta);                                 \
        if (R > 2) row_out(c + 2 * ldc, l2, h2, va, vb, beta);                             \
        if (R > 3) row_out(c + 3 * ldc, l3, h3, va, vb, beta);                             \
    }
KERN_ROWS(1)
KERN_ROWS(2)
KERN_ROWS(3)
KERN_ROWS(4)
#undef KERN_ROWS
#undef ROW_FMA

/* A full nr-column micro-panel (nr a multiple of 8) of a transposed B (column j of the
 * panel is the contiguous row src + j * ld), reduction indices [0, kc8) with kc8 a
 * multiple of 8. */
AVX2_FN static void pack_bt_avx2(float *dst, const float *src, int64_t ld, int64_t kc8,
                                 int64_t nr)
{
    __m256 r[8];
    for (int64_t p = 0; p < kc8; p += 8)
        for (int64_t h = 0; h < nr / 8; h++) {
            rx_rt_tr8x8(src + h * 8 * ld + p, ld, 8, r);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (p + q) * nr + h * 8, r[q]);
        }
}

/* A full mr-row micro-panel (mr 6 or 8) of a non-transposed A (row i of the panel is the
 * contiguous row src + i * ld), reduction indices [0, kc8) with kc8 a multiple of 8.
 * Each store writes 8 lanes; with 6 rows the last 2 land in the next reduction index's
 * slots (rewritten by the next store, or by the caller's tail; the last one lands in
 * the buffer's slack). */
AVX2_FN static void pack_a_avx2(float *dst, const float *src, int64_t ld, int64_t kc8,
                                int64_t mr)
{
    __m256 r[8];
    for (int64_t p = 0; p < kc8; p += 8) {
        rx_rt_tr8x8(src + p, ld, (int)mr, r);
        for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (p + q) * mr, r[q]);
    }
}
#endif

static pthread_once_t kern_once = PTHREAD_ONCE_INIT;
static kern_fn kern_best = kern_c; /* process-wide: the CPU does not change */
/* kern_rows[r]: the kernel for a tile of r rows (NULL: kern_best, all MR rows). */
static kern_fn kern_rows[MR];
static bool have_avx2;             /* the AVX2 packing routines may run */
static bool use512;                /* products on the AVX-512 8x32 tile */
static enum { PICK_AUTO, PICK_OWN, PICK_BLAS } pick_mode; /* $RX_GEMM */

static void kern_choose(void)
{
#if GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        kern_best = kern_avx2;
        have_avx2 = true;
        kern_rows[1] = kern_avx2_r1, kern_rows[2] = kern_avx2_r2;
        kern_rows[3] = kern_avx2_r3, kern_rows[4] = kern_avx2_r4;
        use512 = __builtin_cpu_supports("avx512f");
    }
#endif
    const char *env = getenv("RX_GEMM_KERNEL");
    if (env && (strcmp(env, "portable") == 0 || strcmp(env, "avx2") == 0)) use512 = false;
    if (env && strcmp(env, "portable") == 0) {
        kern_best = kern_c, have_avx2 = false;
        memset(kern_rows, 0, sizeof kern_rows);
    }
    const char *mode = getenv("RX_GEMM");
    pick_mode = !mode ? PICK_AUTO
                : strcmp(mode, "own") == 0 ? PICK_OWN
                : strcmp(mode, "blas") == 0 ? PICK_BLAS : PICK_AUTO;
}

const char *rx_rt_gemm_kernel(void)
{
    pthread_once(&kern_once, kern_choose);
    return kern_best == kern_c ? "portable 6x16" : "avx2+fma 6x16";
}

const char *rx_rt_gemm_isa(void)
{
    pthread_once(&kern_once, kern_choose);
    return use512 ? "avx512 8x32" : rx_rt_gemm_kernel();
}

/* ---- packing ---- */

/* A block rows [0, mc) x reduction [0, kc) of A (element (i, p) at a[i * rs + p * cs])
 * into PR-row micro-panels (PR = 6 or 8: the tile's rows), zero rows past mc. */
static void pack_a(float *dst, const float *a, int64_t rs, int64_t cs, int64_t mc, int64_t kc,
                   int64_t PR)
{
    for (int64_t i0 = 0; i0 < mc; i0 += PR, dst += PR * kc) {
        int64_t mr = mc - i0 < PR ? mc - i0 : PR;
        const float *ai = a + i0 * rs;
        if (cs == 1) {
            int64_t p0 = 0;
#if GEMM_X86
            if (have_avx2 && mr == PR) pack_a_avx2(dst, ai, rs, p0 = kc / 8 * 8, PR);
#endif
            for (int64_t i = 0; i < mr; i++)
                for (int64_t p = p0; p < kc; p++) dst[p * PR + i] = ai[i * rs + p];
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int64_t i = 0; i < mr; i++) dst[p * PR + i] = ai[i * rs + p * cs];
        }
        for (int64_t i = mr; i < PR; i++)
            for (int64_t p = 0; p < kc; p++) dst[p * PR + i] = 0.0f;
    }
}

/* A block reduction [0, kc) x columns [0, nc) of B (element (p, j) at b[p * rs + j * cs])
 * into PN-column micro-panels (PN = 16 or 32: the tile's columns), zero columns past nc. */
static void pack_b(float *dst, const float *b, int64_t rs, int64_t cs, int64_t kc, int64_t nc,
                   int64_t PN)
{
    if (cs == 1 && nc >= PN) {
        /* Row by row: each of B's rows is read once, front to back (the hardware
         * prefetcher streams it), and cut into the panels' 64-byte slots. Panel by panel
         * instead reads 64 bytes from each of kc rows a whole row stride apart: on a
         * weight that comes from memory, 0.1 of the GEMM's time went to those loads. */
        int64_t full = nc / PN * PN;
        for (int64_t p = 0; p < kc; p++) {
            const float *src = b + p * rs;
            float *d = dst + p * PN;
            for (int64_t j0 = 0; j0 < full; j0 += PN, d += PN * kc)
                memcpy(d, src + j0, sizeof(float) * (size_t)PN);
        }
        if (full == nc) return;
        dst += full * kc, b += full, nc -= full;
    }
    for (int64_t j0 = 0; j0 < nc; j0 += PN, dst += PN * kc) {
        int64_t nr = nc - j0 < PN ? nc - j0 : PN;
        const float *bj = b + j0 * cs;
        if (cs == 1 && nr == PN) {
            for (int64_t p = 0; p < kc; p++)
                memcpy(dst + p * PN, bj + p * rs, sizeof(float) * (size_t)PN);
        } else if (cs == 1) {
            for (int64_t p = 0; p < kc; p++) {
                memcpy(dst + p * PN, bj + p * rs, sizeof(float) * (size_t)nr);
                memset(dst + p * PN + nr, 0, sizeof(float) * (size_t)(PN - nr));
            }
        } else {
            int64_t p0 = 0;
#if GEMM_X86
            if (have_avx2 && rs == 1 && nr == PN) pack_bt_avx2(dst, bj, cs, p0 = kc / 8 * 8, PN);
#endif
            for (int64_t j = 0; j < nr; j++)
                for (int64_t p = p0; p < kc; p++) dst[p * PN + j] = bj[j * cs + p * rs];
            for (int64_t p = 0; p < kc && nr < PN; p++)
                for (int64_t j = nr; j < PN; j++) dst[p * PN + j] = 0.0f;
        }
    }
}

/* Rows [p0, p1) of a group of B's columns (nb: its first element, row stride rs, unit
 * column stride; lines 64-byte lines a row) prefetched: the next group's slice for one
 * row tile. A weight read from memory arrives a few lines a row, a row stride apart, out
 * of reach of the hardware prefetcher; prefetching a whole panel at once (256 rows)
 * filled the core's miss buffers and the packing loop waited on them (perf, mlp probe
 * 64 x 1024 x 4096 on 2 threads: ~9% of the time on that prefetch); a few lines per row
 * tile overlap with the kernel's arithmetic instead. */
static inline void prefetch_rows(const float *nb, int64_t rs, int64_t lines, int64_t p0,
                                 int64_t p1)
{
#if GEMM_X86
    for (int64_t p = p0; p < p1; p++)
        for (int64_t l = 0; l < lines; l++)
            _mm_prefetch((const char *)(nb + p * rs + l * 16), _MM_HINT_T0);
#else
    (void)nb, (void)rs, (void)lines, (void)p0, (void)p1;
#endif
}

/* ---- the blocked product on one thread ---- */

typedef struct gemm_job {
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t ars, acs, brs, bcs; /* element strides of A (i, p) and B (p, j) */
    float *c;
    int64_t ldc;
    kern_fn kern;
    const gemm_geom *g; /* the tile and blocking */
    bool split_n;      /* threads take column ranges (else row ranges) */
    const float *bias; /* the epilogue: C[i][j] += bias[j], then the activation */
    int act;           /* RX_RT_ACT_* (library_act.c) */
} gemm_job;

/* Per-thread packing buffers, grown on demand and kept for the thread's life: a
 * thread-specific key's destructor frees one when its thread exits (libgomp ends the
 * threads past a smaller count when the thread count goes down; a server's workers come
 * and go), as library_rnn.c's workspace. */
static _Thread_local float *tl_buf;
static _Thread_local size_t tl_cap;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;
static bool tl_key_ok;

static void tl_key_make(void) { tl_key_ok = pthread_key_create(&tl_key, free) == 0; }

static float *scratch(size_t floats)
{
    if (floats > tl_cap) {
        pthread_once(&tl_once, tl_key_make);
        free(tl_buf);
        tl_buf = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
        tl_cap = tl_buf ? floats : 0;
        if (tl_key_ok) pthread_setspecific(tl_key, tl_buf);
    }
    return tl_buf;
}

/* The epilogue on rows x cols of C at c (its first column is C's column col), while
 * they are in L1: bias, then the activation (rx_rt_epilogue_rows). */
static void epilogue(const gemm_job *j, float *c, int64_t rows, int64_t cols, int64_t col)
{
    rx_rt_epilogue_rows(c, rows, cols, j->ldc, j->bias ? j->bias + col : NULL, j->act);
}

/* One MR x NR tile (or the mr x nr corner of one) of C at c, C's column col: the kernel
 * into c directly when full, else through a buffer; the epilogue after the last
 * reduction block (last). */
static void tile(const gemm_job *j, int64_t kc, const float *ap, const float *bp, int64_t ldb,
                 float *c, int64_t mr, int64_t nr, float beta, int64_t col, bool last)
{
    if (j->g->wide) { /* short tiles in the kernel itself */
        rx_rt_gemm512_tile(kc, ap, bp, ldb, c, j->ldc, j->alpha, beta, mr, nr);
        if (last && (j->bias || j->act != RX_RT_ACT_NONE)) epilogue(j, c, mr, nr, col);
        return;
    }
    /* A short tile's own kernel when there is one (the job's kernel is kern_best's). */
    kern_fn kern = mr < MR && kern_rows[mr] && j->kern == kern_best ? kern_rows[mr] : j->kern;
    if (nr == NR && (mr == MR || kern != j->kern)) {
        kern(kc, ap, bp, ldb, c, j->ldc, j->alpha, beta);
    } else {
        float t[MR * NR];
        kern(kc, ap, bp, ldb, t, NR, j->alpha, 0.0f);
        for (int64_t i = 0; i < mr; i++)
            for (int64_t q = 0; q < nr; q++)
                c[i * j->ldc + q] =
                    t[i * NR + q] + (beta != 0.0f ? beta * c[i * j->ldc + q] : 0.0f);
    }
    if (last && (j->bias || j->act != RX_RT_ACT_NONE)) epilogue(j, c, mr, nr, col);
}

/* C[m0:m1, n0:n1] without packing buffers: the answer when they cannot be allocated. */
static void gemm_plain(const gemm_job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    for (int64_t i = m0; i < m1; i++)
        for (int64_t q = n0; q < n1; q++) {
            float acc = 0.0f, *c = j->c + i * j->ldc + q;
            for (int64_t p = 0; p < j->k; p++)
                acc += j->a[i * j->ars + p * j->acs] * j->b[p * j->brs + q * j->bcs];
            *c = j->alpha * acc + (j->beta != 0.0f ? j->beta * *c : 0.0f);
        }
    epilogue(j, j->c + m0 * j->ldc + n0, m1 - m0, n1 - n0, n0);
}

/* C[m0:m1, n0:n1] for at most STREAM_ROWS rows, B packed SG micro-panels at a time:
 * all the rows of A packed per KC block (at most 192 x 256 floats, in L2), then each
 * group of SG 16-column panels of B packed (64 KiB, in L2; each of B's rows read 256
 * contiguous bytes at a time: four lines for one row visit, where one panel at a time
 * took one) and each panel multiplied by every row tile while it is in L1; the next
 * group's rows prefetched a slice per row tile. B is read once and its packed copy
 * never leaves L2 (a whole NC-wide packed block, 2 MiB, is written to and read back from
 * L3). */
static void gemm_stream(const gemm_job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const gemm_geom *g = j->g;
    const int64_t MR_ = g->mr, NR_ = g->nr, KC_ = g->kc;
    int64_t mb = m1 - m0, mcap = (mb + MR_ - 1) / MR_ * MR_, kcap = j->k < KC_ ? j->k : KC_;
    /* + 8: pack_a_avx2's last store (with 6 rows only 6 of its 8 lanes are the panel's) */
    float *pa = scratch((size_t)(mcap * kcap + 8 + g->sg * NR_ * kcap));
    if (!pa) {
        gemm_plain(j, m0, m1, n0, n1);
        return;
    }
    float *pb = pa + mcap * kcap + 8;
    int64_t tiles = (mb + MR_ - 1) / MR_, gw = g->sg * NR_;
    for (int64_t pc = 0; pc < j->k; pc += KC_) {
        int64_t kc = j->k - pc < KC_ ? j->k - pc : KC_;
        float beta = pc == 0 ? j->beta : 1.0f;
        pack_a(pa, j->a + m0 * j->ars + pc * j->acs, j->ars, j->acs, mb, kc, MR_);
        for (int64_t jg = n0; jg < n1; jg += gw) {
            int64_t ng = n1 - jg < gw ? n1 - jg : gw;
            pack_b(pb, j->b + pc * j->brs + jg * j->bcs, j->brs, j->bcs, kc, ng, NR_);
            /* The group packed next: the next columns, else the next block's first. */
            const float *nb = NULL;
            int64_t nkc = 0, nw = 0;
            if (j->bcs == 1 && jg + gw < n1) {
                nb = j->b + pc * j->brs + jg + gw, nkc = kc;
                nw = n1 - jg - gw < gw ? n1 - jg - gw : gw;
            } else if (j->bcs == 1 && pc + kc < j->k) {
                nb = j->b + (pc + kc) * j->brs + n0;
                nkc = j->k - pc - kc < KC_ ? j->k - pc - kc : KC_;
                nw = n1 - n0 < gw ? n1 - n0 : gw;
            }
            int64_t lines = (nw + 15) / 16, calls = tiles * ((ng + NR_ - 1) / NR_), t = 0;
            for (int64_t jr = 0; jr < ng; jr += NR_) {
                int64_t nr = ng - jr < NR_ ? ng - jr : NR_;
                for (int64_t ir = 0; ir < mb; ir += MR_, t++) {
                    int64_t mr = mb - ir < MR_ ? mb - ir : MR_;
                    if (nb) prefetch_rows(nb, j->brs, lines, nkc * t / calls, nkc * (t + 1) / calls);
                    tile(j, kc, pa + ir * kc, pb + jr * kc, NR_,
                         j->c + (m0 + ir) * j->ldc + jg + jr, mr, nr, beta, jg + jr,
                         pc + kc == j->k);
                }
            }
        }
    }
}

/* C[m0:m1, n0:n1] of the job, on the calling thread. */
static void gemm_block(const gemm_job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    int64_t mb = m1 - m0, nb = n1 - n0;
    if (mb <= 0 || nb <= 0) return;
    const gemm_geom *g = j->g;
    const int64_t MR_ = g->mr, NR_ = g->nr, KC_ = g->kc, MC_ = g->mc, NC_ = g->nc;
    /* B in place: small M, B's columns unit-stride (not transposed). */
    bool b_direct = mb <= g->direct_rows && j->bcs == 1;
    if (!b_direct && mb <= g->stream_rows) {
        gemm_stream(j, m0, m1, n0, n1);
        return;
    }
    int64_t mcap = mb < MC_ ? (mb + MR_ - 1) / MR_ * MR_ : MC_;
    int64_t ncap = nb < NC_ ? (nb + NR_ - 1) / NR_ * NR_ : NC_;
    int64_t kcap = j->k < KC_ ? j->k : KC_;
    /* + 8: pack_a_avx2's last store (with 6 rows only 6 of its 8 lanes are the panel's) */
    float *buf = scratch((size_t)(mcap * kcap + 8 + (b_direct ? 0 : ncap * kcap)));
    if (!buf) {
        gemm_plain(j, m0, m1, n0, n1);
        return;
    }
    float *pa = buf, *pb = buf + mcap * kcap + 8;
    for (int64_t jc = n0; jc < n1; jc += NC_) {
        int64_t nc = n1 - jc < NC_ ? n1 - jc : NC_;
        for (int64_t pc = 0; pc < j->k; pc += KC_) {
            int64_t kc = j->k - pc < KC_ ? j->k - pc : KC_;
            float beta = pc == 0 ? j->beta : 1.0f;
            const float *bsrc = j->b + pc * j->brs + jc * j->bcs;
            if (!b_direct) pack_b(pb, bsrc, j->brs, j->bcs, kc, nc, NR_);
            /* The B block packed next (the next reduction block, else the next columns'
             * first) prefetched a slice per tile while this one computes. */
            const float *nbp = NULL;
            int64_t nkc = 0, nw = 0;
            if (!b_direct && j->bcs == 1 && pc + kc < j->k) {
                nbp = j->b + (pc + kc) * j->brs + jc, nw = nc;
                nkc = j->k - pc - kc < KC_ ? j->k - pc - kc : KC_;
            } else if (!b_direct && j->bcs == 1 && jc + nc < n1) {
                nbp = j->b + jc + nc, nkc = kcap;
                nw = n1 - jc - nc < NC_ ? n1 - jc - nc : NC_;
            }
            int64_t plines = (nw + 15) / 16, t = 0;
            int64_t calls = (mb + MR_ - 1) / MR_ * ((nc + NR_ - 1) / NR_);
            for (int64_t ic = m0; ic < m1; ic += MC_) {
                int64_t mc = m1 - ic < MC_ ? m1 - ic : MC_;
                pack_a(pa, j->a + ic * j->ars + pc * j->acs, j->ars, j->acs, mc, kc, MR_);
                for (int64_t jr = 0; jr < nc; jr += NR_) {
                    int64_t nr = nc - jr < NR_ ? nc - jr : NR_;
                    const float *bp;
                    int64_t ldb;
                    float bt[KC_MAX * NR_MAX];
                    if (!b_direct) bp = pb + jr * kc, ldb = NR_;
                    else if (nr == NR_) bp = bsrc + jr, ldb = j->brs;
                    else { /* the last, partial micro-panel: packed, zero-padded */
                        pack_b(bt, bsrc + jr, j->brs, 1, kc, nr, NR_);
                        bp = bt, ldb = NR_;
                    }
                    for (int64_t ir = 0; ir < mc; ir += MR_) {
                        int64_t mr = mc - ir < MR_ ? mc - ir : MR_;
                        if (nbp)
                            prefetch_rows(nbp, j->brs, plines, nkc * t / calls,
                                          nkc * (t + 1) / calls);
                        t++;
                        tile(j, kc, pa + ir * kc, bp, ldb, j->c + (ic + ir) * j->ldc + jc + jr,
                             mr, nr, beta, jc + jr, pc + kc == j->k);
                    }
                }
            }
        }
    }
}

/* ---- threads ---- */

/* Thread t of n: its share of the columns (NR multiples) or rows (MR multiples). */
static void gemm_worker(void *ud, int t, int n)
{
    const gemm_job *j = ud;
    int64_t total = j->split_n ? j->n : j->m, unit = j->split_n ? j->g->nr : j->g->mr;
    int64_t units = (total + unit - 1) / unit, per = units / n, extra = units % n;
    int64_t lo = (t * per + (t < extra ? t : extra)) * unit;
    int64_t hi = lo + (per + (t < extra)) * unit;
    if (hi > total) hi = total;
    if (j->split_n) gemm_block(j, 0, j->m, lo, hi);
    else gemm_block(j, lo, hi, 0, j->n);
}

void rx_rt_gemm_ex(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc, bool threads)
{
    rx_rt_gemm_epi(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads, NULL,
                   false);
}

void rx_rt_gemm_epi(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                    float *c, int64_t ldc, bool threads, const float *bias, bool relu)
{
    rx_rt_gemm_act(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads, bias,
                   relu ? RX_RT_ACT_RELU : RX_RT_ACT_NONE);
}

void rx_rt_gemm_act(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                    float *c, int64_t ldc, bool threads, const float *bias, int act)
{
    pthread_once(&kern_once, kern_choose);
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) { /* C = beta * C */
        gemm_job z = {.ldc = ldc, .bias = bias, .act = act};
        for (int64_t i = 0; i < m; i++)
            for (int64_t q = 0; q < n; q++)
                c[i * ldc + q] = beta != 0.0f ? beta * c[i * ldc + q] : 0.0f;
        epilogue(&z, c, m, n, 0);
        return;
    }
    gemm_job j = {m, n, k, alpha, beta, a, b,
                  trans_a ? 1 : lda, trans_a ? lda : 1, trans_b ? 1 : ldb, trans_b ? ldb : 1,
                  c, ldc, kern_best, use512 ? &geom8x32 : &geom6x16, false, bias, act};
    int64_t ntiles = (n + j.g->nr - 1) / j.g->nr, mtiles = (m + j.g->mr - 1) / j.g->mr;
    j.split_n = ntiles >= 4 || ntiles >= mtiles;
    int id, nt;
    rx_rt_parallel_id(&id, &nt);
    /* Not inside a region already (a batch item, a conv band), and at least ~1 MFLOP:
     * below that a second thread costs more than it saves. */
    if (threads && nt == 1 && m * n * k >= (1 << 19)) rx_rt_parallel_for(gemm_worker, &j);
    else gemm_block(&j, 0, m, 0, n);
}

void rx_rt_gemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    (void)order;
    rx_rt_gemm_ex(ta == 112, tb == 112, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true);
}

/* rx_rt_gemm_col1 (rt_int.h): the dot of each row of A with B's column
 * (rx_rt_matvec_dots512, 4 rows a pass), rows split over the threads from 2^19
 * multiply-adds outside a region. */
typedef struct col1_job {
    const float *a, *b;
    int64_t m, k, lda, ldc;
    float alpha, beta, *c;
} col1_job;

static void col1_rows(const col1_job *j, int64_t r0, int64_t r1)
{
    enum { STEP = 256 };
    float d[STEP];
    for (int64_t r = r0; r < r1; r += STEP) {
        int64_t e = r1 - r < STEP ? r1 - r : STEP;
        rx_rt_matvec_dots512(j->b, j->k, 1, j->a + r * j->lda, j->lda, j->k, e, 0, e, d);
        for (int64_t i = 0; i < e; i++) {
            float *ci = j->c + (r + i) * j->ldc;
            *ci = j->alpha * d[i] + (j->beta != 0.0f ? j->beta * *ci : 0.0f);
        }
    }
}

static void col1_worker(void *ud, int t, int nt)
{
    const col1_job *j = ud;
    col1_rows(j, j->m * t / nt, j->m * (t + 1) / nt);
}

void rx_rt_gemm_col1(int order, int ta, int tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    /* column 0 of op(B): b[p * ldb], or b[p] transposed; contiguous ones only */
    if (n != 1 || ta == 112 || k <= 0 || m <= 0 || (tb != 112 && ldb != 1) || !use512) {
        rx_rt_gemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    col1_job j = {a, b, m, k, lda, ldc, alpha, beta, c};
    int id, nt;
    rx_rt_parallel_id(&id, &nt);
    if (nt == 1 && (int64_t)m * k >= (1 << 19)) rx_rt_parallel_for(col1_worker, &j);
    else col1_rows(&j, 0, m);
}

rx_rt_sgemm_fn rx_rt_gemm_pick(rx_rt_sgemm_fn blas, int64_t m, int64_t n, int64_t k)
{
    pthread_once(&kern_once, kern_choose);
    switch (pick_mode) {
    case PICK_OWN: return rx_rt_gemm;
    case PICK_BLAS: return blas;
    default: break;
    }
    /* auto: no BLAS stays the callers' "not available" error (the blas.* contract); one
     * to rx_rt_matvec_rows() rows are rx_rt_matvec's (library_matvec.c); the portable
     * kernel and fewer than OWN_ROWS rows (decode's products: OpenBLAS's small-M path measured 1.1-1.3x faster
     * on one thread at 16-32 rows) are the BLAS's; the rest is ours (docs/runtime.md has
     * the measurements behind the rule). */
    if (blas && rx_rt_matvec_takes(m, n, k)) return rx_rt_matvec; /* few rows: library_matvec.c */
    if (blas && use512 && n == 1 && m > 1) return rx_rt_gemm_col1; /* one column */
    if (!blas || !have_avx2 || m < (use512 ? OWN_ROWS512 : OWN_ROWS)) return blas;
    return rx_rt_gemm;
}

rx_rt_sgemm_fn rx_rt_gemm_pick_items(rx_rt_sgemm_fn blas, int64_t batch, int64_t m, int64_t n,
                                     int64_t k)
{
    pthread_once(&kern_once, kern_choose);
    /* Batch items run inside one parallel region (blas.matmul_view): a few-row item has no
     * threads of its own to start, so rx_rt_matvec takes it at any size (attention's
     * per-head q . K^T and p . V at decode: 1 x 64 by 64 x 257, ~20 us each in OpenBLAS). */
    if (pick_mode == PICK_AUTO && blas && batch >= 2 && rx_rt_matvec_takes_items(m, n, k))
        return rx_rt_matvec;
    return rx_rt_gemm_pick(blas, m, n, k);
}

/* ---- pieces for library_conv.c's implicit GEMM (rt_int.h) ---- */

_Static_assert((int)MR == (int)RX_GEMM_MR && (int)NR == (int)RX_GEMM_NR,
               "rt_int.h's tile is this file's");

rx_rt_gemm_kern_fn rx_rt_gemm_micro(void)
{
    pthread_once(&kern_once, kern_choose);
    return kern_best;
}

void rx_rt_gemm_pack_a(float *dst, const float *a, int64_t lda, int64_t mc, int64_t kc)
{
    pthread_once(&kern_once, kern_choose);
    pack_a(dst, a, lda, 1, mc, kc, MR);
}

bool rx_rt_gemm_blas_only(void)
{
    pthread_once(&kern_once, kern_choose);
    return pick_mode == PICK_BLAS;
}
