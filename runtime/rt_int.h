/*
 * rt_int.h — internals shared by the runtime's files (not installed).
 *
 * Object model. Every runtime object that can sit in a VM register is reference
 * counted with an atomic count (outputs may be released on another thread than the
 * one that ran the call):
 *   rx_rt_storage  a block of device memory: from the context's pool (POOL), or the
 *                  artifact buffer itself (BLOB, for constants; freeing the last
 *                  reference frees the buffer), plus the byte size.
 *   rx_rt_tensor   a DLTensor viewing a storage at byte_offset, or borrowing caller
 *                  memory (storage NULL: call inputs).
 *   rx_vm_shape    an immutable int64 vector.
 *   rx_vm_tuple    an immutable vector of values.
 * A value (rx_vm_value) is a tag plus an int64, function index or object pointer; it
 * owns one reference to its object. Dropping a reference skips the atomic
 * read-modify-write when the count reads 1 (the holder is the only one, so no other
 * thread can touch the count): see rx_rt_ref_drop.
 *
 * Recycling. Tensor objects, storage records and pool blocks that the interpreter
 * frees go into a per-call cache (rx_rt_cache, tensor.c) owned by the running
 * rx_vm_run, and the interpreter allocates from it without locks; the cache refills in
 * batches of RX_RT_CACHE_BATCH from the context's shared lists (under the pool mutex)
 * only when it runs dry, and flushes back to them once when the call ends. Objects freed outside the VM go back to malloc.
 * Under AddressSanitizer every cached object and block is poisoned (RX_RT_POISON), so a
 * use after release is still reported.
 */
#ifndef RX_RT_INT_H
#define RX_RT_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/device.h"
#include "relax/runtime.h"

/* Broken invariants (never user input): file:line and abort. */
#define RX_RT_ASSERT(c) \
    ((c) ? (void)0 : rx_rt_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void rx_rt_assert_fail(const char *cond, const char *file, int line);

/* AddressSanitizer hooks: objects parked on a free list are poisoned. */
#if defined(__SANITIZE_ADDRESS__)
#define RX_RT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RX_RT_ASAN 1
#endif
#endif
#ifdef RX_RT_ASAN
#include <sanitizer/asan_interface.h>
#define RX_RT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define RX_RT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RX_RT_POISON(p, n) ((void)(p), (void)(n))
#define RX_RT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Drops one reference from *refs (the caller holds it); true when it was the last. */
static inline bool rx_rt_ref_drop(_Atomic int32_t *refs)
{
    return atomic_load_explicit(refs, memory_order_acquire) == 1 ||
           atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

/* Formats into err (NULL ok); always returns -1 for `return rx_rt_fail(...)`. */
int rx_rt_fail(rx_rt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- device memory (device_cpu.c) ---- */

#define RX_RT_NCLASS 256 /* size classes: 4 per power of two */
#define RX_RT_RESERVE_MIN ((size_t)64 << 20) /* blocks of this class size or more are
                                                reserved, not committed (device_cpu.c) */
#define RX_RT_COMMIT_CHUNK ((size_t)1 << 20) /* commit granularity of a reserved block */
#define RX_RT_HUGE_MIN ((size_t)4 << 20) /* blocks of this class size or more start on a 2 MiB
                                            boundary, advised for transparent huge pages */

typedef struct rx_rt_block {
    struct rx_rt_block *next; /* free-list link (header lives in a side allocation) */
    void *data;               /* 64-byte aligned payload (poisoned while cached, ASan) */
    size_t cap;               /* class size */
    int cls;                  /* size class of cap */
    int reserved;             /* address space only (mmap PROT_NONE): chunks are committed
                                 by rx_rt_block_commit as views of them are made */
    int mapped;               /* not reserved, but mmap'ed (RX_RT_HUGE_MIN or more): munmap */
    uint64_t *chunks;         /* reserved: bit i set = chunk i is committed */
    size_t committed;         /* reserved: committed bytes (whole chunks) */
} rx_rt_block;

/* ASan poisoning of a block's payload; a reserved block is never poisoned (its shadow
 * would be as large as the reservation, and uncommitted pages fault anyway). */
static inline void rx_rt_block_poison(rx_rt_block *b)
{
    if (!b->reserved) RX_RT_POISON(b->data, b->cap);
}
static inline void rx_rt_block_unpoison(rx_rt_block *b)
{
    if (!b->reserved) RX_RT_UNPOISON(b->data, b->cap);
}
/* The resident bytes a live block holds for a storage of `requested` bytes. */
static inline size_t rx_rt_block_resident(const rx_rt_block *b, size_t requested)
{
    return b->reserved ? b->committed : requested;
}

typedef struct rx_rt_pool {
    pthread_mutex_t mu;                 /* guards free_, pool_bytes, allocs, hits and the
                                           context's free_tensors/free_storages */
    rx_rt_block *free_[RX_RT_NCLASS];   /* cached free blocks per class */
    _Atomic int64_t live_bytes;         /* requested bytes of live storages (lock-free) */
    _Atomic int64_t peak_bytes;         /* max live_bytes since the last reset (lock-free) */
    _Atomic int64_t resident_bytes;     /* bytes of live storages backed by memory: the
                                           requested bytes of a malloc'ed block, the
                                           committed chunks of a reserved one */
    _Atomic int64_t peak_resident;      /* max resident_bytes since the last reset */
    int64_t pool_bytes;                 /* class bytes obtained from the system */
    int64_t allocs, hits;               /* counters */
    _Atomic int64_t limit;              /* max resident_bytes (0 = unlimited) */
} rx_rt_pool;

void rx_rt_pool_init(rx_rt_pool *p);
void rx_rt_pool_destroy(rx_rt_pool *p);
/* Size class of nbytes (<= 2^60); *cap gets the class size. */
int rx_rt_pool_class(size_t nbytes, size_t *cap);
/* A block of at least nbytes (64-byte aligned) whose first nbytes are usable (a
 * reserved block is committed that far), NULL on OOM or past the limit. */
rx_rt_block *rx_rt_pool_get(rx_rt_pool *p, size_t nbytes);
/* Gives a block back (cached for reuse); `requested` is what was asked for. */
void rx_rt_pool_put(rx_rt_pool *p, rx_rt_block *b, size_t requested);
void rx_rt_pool_trim(rx_rt_pool *p);
/* Sets both peaks to the current levels; returns the live bytes, *resident gets the
 * resident bytes. */
int64_t rx_rt_pool_reset_peak(rx_rt_pool *p, int64_t *resident);
/* The pieces of get/put, for the per-call cache: charge adds `live` to live_bytes and
 * `resident` to resident_bytes (raising the peaks) and returns -1, changing nothing,
 * when resident_bytes would pass the limit; uncharge subtracts.
 * take unlinks up to max cached blocks of class cls (a list, poisoned, not counted);
 * fresh makes a new block of class cls from the system (NULL on OOM; reserved when cap
 * >= RX_RT_RESERVE_MIN); stash pushes a block on its class list (caller holds p->mu; b
 * may be poisoned). */
int rx_rt_pool_charge(rx_rt_pool *p, size_t live, size_t resident);
void rx_rt_pool_uncharge(rx_rt_pool *p, size_t live, size_t resident);
rx_rt_block *rx_rt_pool_take(rx_rt_pool *p, int cls, int max);
rx_rt_block *rx_rt_pool_fresh(rx_rt_pool *p, int cls, size_t cap);
void rx_rt_pool_stash(rx_rt_pool *p, rx_rt_block *b);
/* Makes [off, off + len) of a live block usable: commits the reserved chunks it covers
 * that are not yet committed (charging them as resident). A block that is not reserved
 * is usable already. Returns 0, or -1 with err ("out of memory committing ...") when the
 * system refuses the pages or they pass the context's memory limit. */
int rx_rt_block_commit(rx_rt_pool *p, rx_rt_block *b, size_t off, size_t len, rx_rt_err *err);

/* ---- the context ---- */

typedef struct rx_rt_libentry {
    char *name;                          /* registered name (owned) */
    rx_rt_libfn fn;                      /* the function */
    const char *(*strerr)(int32_t code); /* optional message for return codes */
} rx_rt_libentry;

struct rx_rt_tensor;
struct rx_rt_storage;

struct rx_rt_ctx {
    rx_rt_pool pool;              /* CPU memory */
    struct rx_rt_tensor *free_tensors;   /* recycled tensor objects (pool.mu; poisoned) */
    struct rx_rt_storage *free_storages; /* recycled storage records (pool.mu; poisoned) */
    pthread_mutex_t lib_mu;       /* guards the registry */
    rx_rt_libentry *libs;         /* library registry */
    size_t nlibs, clibs;
    int max_depth;                /* VM frame limit */
    int32_t device_id;            /* GPU artifacts: the device modules open (rx_rt_set_device_id) */
    _Atomic int64_t kernel_calls; /* totals */
    _Atomic int64_t library_calls;
};

/* Copies the registry entry for name into *out; -1 when absent. */
int rx_rt_lib_find(rx_rt_ctx *ctx, const char *name, rx_rt_libentry *out);
/* Registers the built-ins (library.c). Returns 0 or -1 on OOM. */
int rx_rt_lib_builtins(rx_rt_ctx *ctx);
/* The dlopen handle of the BLAS library the blas.* built-ins use (opened on the first
 * call), NULL when none could be opened (threads.c sets its thread count). */
void *rx_rt_blas_handle(void);
/* threads.c: runs fn(data) on every thread of one libgomp parallel region (the calling
 * thread's thread count) and returns that count; 0 (running nothing) when libgomp is
 * missing or the count is 1. Inside fn, rx_rt_parallel_id gives this thread's number
 * and the region's size. */
int rx_rt_parallel(void (*fn)(void *data), void *data);
void rx_rt_parallel_id(int *id, int *n);
/* Inside rx_rt_parallel's region: waits until every thread of the region reached it
 * (GOMP_barrier); a no-op when there is no libgomp. Every thread must call it. */
void rx_rt_barrier(void);
/* rt.rnn (library_rnn.c) and its messages. */
int32_t rx_rt_rnn(DLTensor *const *args, int32_t nargs);
const char *rx_rt_rnn_strerr(int32_t code);
/* rt.topk (library_sort.c), rt.cumsum (library_scan.c), rt.resize2d (library_resize.c),
 * rt.group_norm (library_norm.c) and their messages. */
int32_t rx_rt_resize2d(DLTensor *const *args, int32_t nargs);
const char *rx_rt_resize2d_strerr(int32_t code);
int32_t rx_rt_group_norm(DLTensor *const *args, int32_t nargs);
const char *rx_rt_group_norm_strerr(int32_t code);
/* The widest of 0 portable, 1 AVX2 + FMA, 2 AVX-512F that the CPU runs, lowered by
 * $var = "portable" or "avx2" (library_scan.c; callers cache it). */
int rx_rt_isa_choice(const char *var);
int32_t rx_rt_topk(DLTensor *const *args, int32_t nargs);
const char *rx_rt_topk_strerr(int32_t code);
int32_t rx_rt_cumsum(DLTensor *const *args, int32_t nargs);
const char *rx_rt_cumsum_strerr(int32_t code);
/* rt.concat (library_concat.c): fields copied into their places, split over threads. */
int32_t rx_rt_concat(DLTensor *const *args, int32_t nargs);
const char *rx_rt_concat_strerr(int32_t code);
/* rt.qmatmul (library_qgemm.c): the exact i32 product of two 8-bit matrices; the kernel
 * it runs ("avx512-vnni", "avx2", "portable"). */
int32_t rx_rt_qmatmul(DLTensor *const *args, int32_t nargs);
const char *rx_rt_qmatmul_strerr(int32_t code);
const char *rx_rt_qgemm_kernel(void);
/* rt.qmatmul's tile kernel (library_qgemm.c): the raw A'B' of rows [0, mr) (mr <=
 * RX_QG_MR) of A' (u8, rows lda bytes apart) by one packed 64-column block of B'
 * (runtime/rt_qpack.h, kp reduction indices), columns [0, ncols) written to C (row
 * stride ldc); rx_rt_qgemm_tile gives the one chosen for this CPU ($RX_QGEMM_KERNEL). */
enum { RX_QG_MR = 6 };
typedef void (*rx_qkern_fn)(const uint8_t *ap, int64_t lda, const int8_t *bp, int64_t kp, int mr,
                            int32_t *c, int64_t ldc, int ncols);
rx_qkern_fn rx_rt_qgemm_tile(void);
/* rt.qconv2d (library_qconv.c): the exact i32 convolution of an 8-bit X by a weight
 * packed at compile time. */
int32_t rx_rt_qconv2d(DLTensor *const *args, int32_t nargs);
const char *rx_rt_qconv2d_strerr(int32_t code);
/* rt.scatter (library_scatter.c): scatter_elements / scatter_nd in one pass. */
int32_t rx_rt_scatter(DLTensor *const *args, int32_t nargs);
const char *rx_rt_scatter_strerr(int32_t code);
/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) of
 * that library (opened on the first call), NULL when none could be opened. */
typedef void (*rx_rt_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);
rx_rt_sgemm_fn rx_rt_sgemm(void);
/* The runtime's own f32 GEMM (library_gemm.c): C (m x n, row stride ldc) = alpha *
 * op(A) op(B) + beta * C, A (m x k) and B (k x n) row-major with leading dimensions lda
 * and ldb, stored transposed when trans_a / trans_b; C is not read when beta is 0. On
 * the runtime's thread pool when threads and not already inside a parallel region. */
void rx_rt_gemm_ex(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc, bool threads);
/* rx_rt_gemm_ex and then the epilogue C[i][j] += bias[j] (bias NULL: none), then
 * C = max(C, 0) when relu, applied to each tile of C as its last block is written (while
 * it is in L1: no pass over C of its own). */
void rx_rt_gemm_epi(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                    float *c, int64_t ldc, bool threads, const float *bias, bool relu);
/* The epilogue activations (library_act.c's essay has the formulas). */
enum { RX_RT_ACT_NONE, RX_RT_ACT_RELU, RX_RT_ACT_GELU, RX_RT_ACT_SILU, RX_RT_ACT_GELU_TANH,
       RX_RT_ACT_HARDSWISH };
/* The epilogue on rows x cols of C at c (row stride ldc), in place: c[i][j] = act(c[i][j]
 * + bias[j]) (bias NULL: none); nothing when there is neither. Vectorized where the CPU
 * has AVX-512 (16 lanes) or AVX2 and FMA (8 lanes). */
void rx_rt_epilogue_rows(float *c, int64_t rows, int64_t cols, int64_t ldc, const float *bias,
                         int act);
/* The epilogue's path on this CPU: "avx512", "avx2+fma" or "portable" ($RX_ACT_KERNEL =
 * avx2 or portable caps it, read once). */
const char *rx_rt_act_kernel(void);
/* rx_rt_gemm_epi with any RX_RT_ACT_* activation after the bias. */
void rx_rt_gemm_act(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                    float *c, int64_t ldc, bool threads, const float *bias, int act);
/* rx_rt_gemm_ex with cblas_sgemm's arguments (order 101 only; trans 112 transposes). */
void rx_rt_gemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* Which sgemm an (m x k) @ (k x n) product runs on: rx_rt_gemm or blas (the BLAS's,
 * NULL when none), by $RX_GEMM (own / blas / auto, the default: library_gemm.c's rule). */
rx_rt_sgemm_fn rx_rt_gemm_pick(rx_rt_sgemm_fn blas, int64_t m, int64_t n, int64_t k);
/* A product of one column (n = 1: a gate, a logit, a batched matrix-vector product) as
 * row dots on AVX-512 (library_gemm.c; auto picks it there for n = 1 past rx_rt_matvec's
 * rows), cblas_sgemm's arguments; A transposed, a strided B column or another CPU go to
 * rx_rt_gemm. */
void rx_rt_gemm_col1(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                     int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* 1 to rx_rt_matvec_rows() rows times a weight at memory bandwidth (library_matvec.c),
 * with cblas_sgemm's arguments: A not transposed, order 101; anything else goes to rx_rt_gemm. */
void rx_rt_matvec(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc);
/* rx_rt_matvec's AVX-512 loops (library_matvec512.c; call only where avx512f runs):
 * acc[i * ldacc + q] (i < m, q < w_cols) = sum over rows r in [lo, hi) of W, four at a
 * time in row order, of x[i * ldx + r] * w[r * ldw + q] (acc not read; hi > lo); and
 * dots[i * n + c] = the dot of row i of x with row c of W (N, K), c in [c0, c1). */
void rx_rt_matvec_slice512(const float *x, int64_t ldx, int64_t m, const float *w, int64_t ldw,
                           int64_t lo, int64_t hi, int64_t w_cols, float *acc, int64_t ldacc);
void rx_rt_matvec_dots512(const float *x, int64_t ldx, int64_t m, const float *w, int64_t ldw,
                          int64_t k, int64_t n, int64_t c0, int64_t c1, float *dots);
/* The most rows rx_rt_matvec takes on this CPU (12 with its AVX-512 loops, else 8). */
int64_t rx_rt_matvec_rows(void);
/* Whether auto gives an (m x k) @ (k x n) product to rx_rt_matvec (library_matvec.c). */
bool rx_rt_matvec_takes(int64_t m, int64_t n, int64_t k);
/* The same for the items of a batch run inside one parallel region: any size. */
bool rx_rt_matvec_takes_items(int64_t m, int64_t n, int64_t k);
/* rx_rt_gemm_pick for a batch of `batch` products (m x k) @ (k x n) that run inside one
 * parallel region (library_gemm.c): a few-row item goes to rx_rt_matvec at any size. */
rx_rt_sgemm_fn rx_rt_gemm_pick_items(rx_rt_sgemm_fn blas, int64_t batch, int64_t m, int64_t n,
                                     int64_t k);
/* The 6x16 micro-kernel of this CPU (rx_rt_gemm_micro's: "avx2+fma 6x16" or "portable
 * 6x16"; $RX_GEMM_KERNEL=portable forces the second). */
const char *rx_rt_gemm_kernel(void);
/* The tile rx_rt_gemm's products run on: "avx512 8x32" (library_gemm512.c, where the CPU
 * has AVX-512F and $RX_GEMM_KERNEL is neither avx2 nor portable), else
 * rx_rt_gemm_kernel()'s. */
const char *rx_rt_gemm_isa(void);
/* rx_rt_gemm's AVX-512 tile (library_gemm512.c; call only where the CPU has AVX-512F):
 * acc = the packed A panel (kc x RX_GEMM512_MR, zero rows past mr) times the B panel (kc
 * rows of RX_GEMM512_NR, row stride ldb, zero columns past nr); then rows [0, mr) x
 * columns [0, nr) of c (row stride ldc) = alpha * acc + beta * c, c not read when beta is
 * 0; nothing else of c is read or written. 1 <= mr <= MR, 1 <= nr <= NR. */
enum { RX_GEMM512_MR = 8, RX_GEMM512_NR = 32 };
void rx_rt_gemm512_tile(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                        int64_t ldc, float alpha, float beta, int64_t mr, int64_t nr);
/* rx_rt_gemm's pieces for library_conv.c's implicit GEMM (library_gemm.c): its
 * micro-kernel (acc = the packed A panel (kc x RX_GEMM_MR) times the B panel (kc rows
 * of RX_GEMM_NR, row stride ldb); c (MR x NR, row stride ldc) = alpha * acc + beta * c,
 * c not read when beta is 0), its packing of rows [0, mc) x reduction [0, kc) of a
 * row-major A (row stride lda) into MR-row panels (zero rows past mc; with AVX2 the
 * last store of a panel writes up to 8 floats past it: leave that slack), and whether
 * $RX_GEMM=blas asks for the BLAS's sgemm everywhere. */
enum { RX_GEMM_MR = 6, RX_GEMM_NR = 16 };
typedef void (*rx_rt_gemm_kern_fn)(int64_t kc, const float *a, const float *b, int64_t ldb,
                                   float *c, int64_t ldc, float alpha, float beta);
rx_rt_gemm_kern_fn rx_rt_gemm_micro(void);
void rx_rt_gemm_pack_a(float *dst, const float *a, int64_t lda, int64_t mc, int64_t kc);
bool rx_rt_gemm_blas_only(void);
/* blas.conv2d (library_conv.c) and rt.pool2d (library_pool.c) and their messages. */
int32_t rx_rt_conv2d(DLTensor *const *args, int32_t nargs);
const char *rx_rt_conv2d_strerr(int32_t code);
int32_t rx_rt_pool2d(DLTensor *const *args, int32_t nargs);
const char *rx_rt_pool2d_strerr(int32_t code);
/* library_conv.c's window rows, which library_pool.c shares. The window geometry of
 * one plane; output row oh of plane xp: yr[ow] = the sum of taps[k] * x (ROW_MAC), the
 * max (ROW_MAX, from -FLT_MAX: padding never wins) or the sum (ROW_SUM) over the
 * window's taps inside the input. rx_rt_valid_range: [lo, hi) of the outputs ow whose
 * input column ow * s + off lies in [0, W). rx_rt_share: the slice [total * t / n,
 * total * (t + 1) / n) of [0, total). */
typedef struct rx_rt_win {
    int64_t H, W, OW, KH, KW, sh, sw, pt, pl, dh, dw;
} rx_rt_win;
enum { RX_RT_ROW_MAC, RX_RT_ROW_MAX, RX_RT_ROW_SUM };
void rx_rt_window_row(const rx_rt_win *g, const float *xp, const float *taps, int mode,
                      int64_t oh, float *yr);
void rx_rt_valid_range(int64_t OW, int64_t W, int64_t s, int64_t off, int64_t *lo, int64_t *hi);
void rx_rt_share(int64_t total, int t, int n, int64_t *lo, int64_t *hi);
/* One output plane yp (OH x OW) of a stride-1, undilated depthwise convolution of the
 * plane xp (H x W) with the KH x KW taps k, padding pt on top and pl on the left, zero
 * outside (library_dwconv.c); buf: rx_rt_dwconv_buf_floats(OH, OW, KH, KW) floats of
 * scratch. False (nothing written) where it is not built (no vector extensions). */
/* One output plane yp (OH x g->OW) of a stride-1 depthwise convolution dilated by
 * (g->dh, g->dw) as dh x dw undilated ones on the input's phase planes
 * (library_dwconv.c); buf: rx_rt_dwconv_dil_floats(g, OH) floats. False (nothing
 * written) where the plane kernels are not built. */
int64_t rx_rt_dwconv_dil_floats(const rx_rt_win *g, int64_t OH);
bool rx_rt_dwconv_plane_dil(const rx_rt_win *g, int64_t OH, const float *xp, const float *k,
                            float *buf, float *yp);
bool rx_rt_dwconv_plane(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                        int64_t KW, int64_t pt, int64_t pl, int64_t OH, int64_t OW, float *buf,
                        float *yp);
int64_t rx_rt_dwconv_buf_floats(int64_t OH, int64_t OW, int64_t KH, int64_t KW);

/* blas.conv2d's implicit-GEMM tile (library_conv_kern.c): y (mr x nr, row stride ldy)
 * = the packed 6-row A panel a times the 16-column B panel b over kc (+ y when acc),
 * then with epi: + bias[i], + res (row stride ldy), then act (1 relu, 2 clamp [lo, hi],
 * 3 SiLU, 4 hardswish, 5 leaky relu of slope lo).
 * rx_rt_conv_tile_ok(): false where it cannot run (no AVX2 + FMA, or the portable
 * GEMM kernel or $RX_CONV_KERNEL=portable chosen); the caller then uses
 * rx_rt_gemm_micro and its own epilogue. */
typedef struct rx_rt_conv_epi {
    const float *bias, *res;
    int act;       /* RX_RT_CONV_ACT_* */
    float lo, hi;  /* the clamp's bounds; lo: the leaky relu's slope */
} rx_rt_conv_epi;
/* blas.conv2d's act codes. The tiles apply relu, clamp and leaky relu (v > 0 ? v : v *
 * lo) in registers; SiLU and hardswish (rx_rt_conv_act_rt's code not NONE) on AVX-512
 * in registers too, elsewhere after their stores, on the tile while it is in L1
 * (rx_rt_epilogue_rows with that code). */
enum { RX_RT_CONV_ACT_RELU = 1, RX_RT_CONV_ACT_CLAMP = 2, RX_RT_CONV_ACT_SILU = 3,
       RX_RT_CONV_ACT_HARDSWISH = 4, RX_RT_CONV_ACT_LEAKY = 5 };
/* The RX_RT_ACT_* code of a conv act past the clamp (0 for the others). */
static inline int rx_rt_conv_act_rt(int act)
{
    return act == RX_RT_CONV_ACT_SILU ? RX_RT_ACT_SILU
           : act == RX_RT_CONV_ACT_HARDSWISH ? RX_RT_ACT_HARDSWISH : RX_RT_ACT_NONE;
}
bool rx_rt_conv_tile_ok(void);
/* Which tile runs (once a process): RX_CONV_TILE_AVX512 where the CPU has AVX-512F
 * (rx_rt_conv_tile512: up to RX_CONV_TILE_ROWS rows of the weights unpacked, row r at
 * a + r * lda, by up to 32 columns: the 16 of the B panel b and, past 16, the next
 * panel's at b + bs; masked), else RX_CONV_TILE_AVX2
 * (rx_rt_conv_tile) with AVX2 + FMA, else NONE; $RX_CONV_KERNEL=avx2 / portable forces a
 * lower one (tests). */
enum { RX_CONV_TILE_NONE = 0, RX_CONV_TILE_AVX2 = 1, RX_CONV_TILE_AVX512 = 2,
       RX_CONV_TILE_ROWS = 12 };
int rx_rt_conv_tile_kind(void);
/* rx_rt_dwconv_plane for stride S of 1 or 2 (both axes), undilated, where the AVX-512
 * rows run (rx_rt_conv_tile_kind), with the epilogue in it (epi: bias[0], res a plane of
 * y's shape, act; NULL: none); false otherwise; buf: rx_rt_dwconv512_buf_floats(...)
 * floats. */
bool rx_rt_dwconv_plane512(const float *xp, int64_t H, int64_t W, const float *k, int64_t KH,
                           int64_t KW, int64_t S, int64_t pt, int64_t pl, int64_t OH, int64_t OW,
                           float *buf, float *yp, const rx_rt_conv_epi *epi);
int64_t rx_rt_dwconv512_buf_floats(int64_t OH, int64_t OW, int64_t KH, int64_t KW);
void rx_rt_conv_tile512(int64_t kc, const float *a, int64_t lda, const float *b, int64_t bs,
                        int64_t bld, float *y, int64_t ldy, int mr, int nr, bool acc,
                        const rx_rt_conv_epi *epi);
void rx_rt_conv_tile(int64_t kc, const float *a, const float *b, float *y, int64_t ldy, int mr,
                     int nr, bool acc, const rx_rt_conv_epi *epi);
/* library_conv.c's B panel (16 floats a tap) with AVX-512 moves, for the AVX-512 tile:
 * per tap p < kc, for each run r < runs (ascending) the 16 floats at
 * src + off[p] + rv[r] to dst + p * 16 + rj[r] (a run's excess lands where the next run
 * or tap overwrites it, the last in the panel's slack), then zeros past nr; exact: only
 * the nr floats at src + off[p] + rv[0] read (runs 1), the rest zero. */
void rx_rt_conv_pack512(const float *src, const int64_t *off, int64_t kc, const int64_t *rj,
                        const int64_t *rv, int64_t runs, int64_t nr, bool exact, float *dst);
/* blas.conv2d's implicit GEMM with pixels broadcast from the phase planes and the
 * weights packed once a call (library_conv_bx.c, AVX-512 only: rx_rt_conv_bx_ok()). One
 * image and group: */
typedef struct rx_rt_conv_bx {
    const float *x;          /* the group's phase planes: tap k of (oh, ow) at off[k] + oh Wq + ow */
    const int64_t *off;      /* Kc tap offsets */
    const float *w;          /* the group's weights, rx_rt_conv_bx_pack'ed per 32 channels */
    int64_t Kc, kcb;         /* reduction indices, and a block's (the sums' order) */
    int64_t Wq, OW, plane;   /* x's row stride, y's row length, y's channel stride */
    float *y;                /* the group's first output channel */
    const float *bias, *res; /* the group's first channel's bias; residual at y's place */
    int act;                 /* RX_RT_CONV_ACT_* */
    float lo, hi;            /* the clamp's bounds; lo: the leaky relu's slope */
} rx_rt_conv_bx;
bool rx_rt_conv_bx_ok(void);
void rx_rt_conv_bx_pack(float *dst, const float *w, int64_t Kc, int64_t rows, int64_t width);
void rx_rt_conv_bx_rows(const rx_rt_conv_bx *a, int64_t oh0, int64_t oh1, int64_t c0, int64_t c1);
/* dst[j] = src[2 j] for j from 0 while j + 17 <= n (reading no further than src[2 n - 2]),
 * with AVX-512 where rx_rt_conv_tile_kind() is AVX512; returns how many were done (0
 * elsewhere: the caller does the rest). */
int64_t rx_rt_conv_evens512(float *dst, const float *src, int64_t n);
/* Runs fn(ud, t, n) for t in [0, n) on the kernels' OpenMP pool (rx_rt_parallel's one
 * region; n = 1 on the calling thread when there is none). threads.c. */
void rx_rt_parallel_for(void (*fn)(void *ud, int t, int n), void *ud);
/* The threads a region of the calling thread would have (1 without libgomp). */
int rx_rt_max_threads(void);
/* rx_rt_parallel_for on min(n, rx_rt_max_threads()) threads: a work too small for the
 * whole pool starts only the threads it can use (n <= 1: the calling thread alone, no
 * region). */
void rx_rt_parallel_for_n(void (*fn)(void *ud, int t, int n), void *ud, int n);
/* Closes libraries opened by the built-ins. */
void rx_rt_lib_close(rx_rt_ctx *ctx);
/* n threads for this thread's kernels and the BLAS, the governor's request unchanged
 * (threads.c; rx_rt_set_threads is this plus rx_rt_gov_request): 0, or -1 when libgomp
 * has no omp_set_num_threads. */
int rx_rt_apply_threads(int n);

/* ---- threads_gov.c: fewer threads while the calling thread's calls are delayed ---- */
#define RX_GOV_WINDOW_NS 10000000LL     /* calls' wall time per decision: 10 ms */
#define RX_GOV_PROBE_MIN_NS 200000000LL /* first probe of the full count: 200 ms */
#define RX_GOV_PROBE_MAX_NS 3200000000LL
enum { RX_GOV_FULL, RX_GOV_REDUCED, RX_GOV_PROBE };
typedef struct rx_rt_gov {
    int state;            /* RX_GOV_* */
    int want;             /* the requested count (0: not known yet) */
    int low;              /* the count while REDUCED */
    int strikes;          /* FULL: delayed windows in a row */
    int64_t win_ns;       /* wall time of the window's calls */
    int64_t next_probe;   /* REDUCED: when (rx_rt_now_ns) to try the full count again */
    int64_t backoff;      /* ns between probes */
    int64_t calls, reduced_calls, reductions, probes;
} rx_rt_gov;
typedef struct rx_rt_gov_mark {
    int64_t t0; /* 0: this call is not governed */
} rx_rt_gov_mark;
/* One window's decision (a pure function, tested alone): the window had busy_ns of calls
 * and the calling thread waited delay_ns on the run queue; returns the next count. */
int rx_rt_gov_decide(rx_rt_gov *g, int64_t now, int64_t busy_ns, int64_t delay_ns);
/* The calling thread's requested count is n: FULL, statistics reset. */
void rx_rt_gov_request(int n);
/* Around each CPU call of rx_vm_run. */
void rx_rt_gov_begin(rx_rt_gov_mark *mark);
void rx_rt_gov_end(const rx_rt_gov_mark *mark);
/* The calling thread's requested count and its governed calls, in all and reduced. */
void rx_rt_gov_stats(int *want, int64_t *calls, int64_t *reduced_calls);
/* The runtime-native library functions "rt.*" and their messages (library_rt.c). */
int32_t rx_rt_rms_norm(DLTensor *const *args, int32_t nargs);
const char *rx_rt_rms_norm_strerr(int32_t code);
int32_t rx_rt_matmul(DLTensor *const *args, int32_t nargs);
const char *rx_rt_matmul_strerr(int32_t code);

/* ---- storage and tensors (tensor.c) ---- */

typedef enum { RX_STORAGE_POOL, RX_STORAGE_BLOB, RX_STORAGE_DEV } rx_rt_storage_kind;
struct rx_dev;
struct rx_dev_buf;

/* A part of a split DEV storage: bytes [off, off + n) of it live in buffer st. */
typedef struct rx_rt_seg {
    size_t off, n;
    struct rx_rt_storage *st; /* a DEV storage of n bytes (the parent's reference) */
} rx_rt_seg;

typedef struct rx_rt_storage {
    struct rx_rt_storage *next_free; /* free-list link while recycled (first: stays
                                        unpoisoned) */
    _Atomic int32_t refs;  /* references */
    int kind;              /* rx_rt_storage_kind */
    rx_rt_ctx *ctx;        /* owning context (POOL) */
    rx_rt_block *block;    /* POOL: the block */
    struct rx_dev *dev;    /* DEV: the device holding the buffer (ctx: charged to its pool) */
    void *data;            /* first byte; DEV: the buffer (struct rx_dev_buf *) */
    size_t nbytes;         /* usable (requested) bytes */
    /* DEV, larger than the device's largest buffer: no buffer of its own (data NULL);
     * each view gets a buffer of its own bytes, a segment (tensor.c, "Split storages") */
    bool split;
    int nsegs, capsegs;
    rx_rt_seg *segs;
} rx_rt_storage;

struct rx_rt_tensor {
    struct rx_rt_tensor *next_free; /* free-list link while recycled (first: stays
                                       unpoisoned) */
    _Atomic int32_t refs;           /* references */
    DLTensor dl;                    /* the view; dl.shape points at shape_ */
    rx_rt_storage *storage;         /* NULL: borrowed memory */
    int64_t shape_[RX_RXA_MAX_NDIM]; /* dims */
};

rx_rt_storage *rx_rt_storage_new(rx_rt_ctx *ctx, size_t nbytes);
/* A DEV storage: a buffer of nbytes on dev, counted in ctx's pool statistics (live and
 * peak bytes) like CPU storages. NULL with err (the device's message: out of device
 * memory). A storage larger than the device's largest buffer is split (tensor.c): its
 * views get buffers of their own, and a view larger than the device allows is the
 * device's error then. */
rx_rt_storage *rx_rt_storage_dev(rx_rt_ctx *ctx, struct rx_dev *dev, size_t nbytes, rx_rt_err *err);
/* A BLOB storage owning `buf` (freed with free() by the last release). */
rx_rt_storage *rx_rt_storage_blob(void *buf, size_t nbytes);
void rx_rt_storage_retain(rx_rt_storage *s);
void rx_rt_storage_release(rx_rt_storage *s);
/* A tensor viewing s at offset (retains s); NULL with err when it does not fit. */
rx_rt_tensor *rx_rt_tensor_view(rx_rt_storage *s, size_t offset, DLDataType dtype,
                                int32_t ndim, const int64_t *shape, rx_rt_err *err);
/* A tensor borrowing dl's memory and copying its shape. NULL with err when dl is not a
 * compact CPU tensor. */
rx_rt_tensor *rx_rt_tensor_borrow(const DLTensor *dl, rx_rt_err *err);
/* Bytes of a dense tensor, -1 on overflow or negative dims. */
int64_t rx_rt_dense_bytes(DLDataType dtype, int32_t ndim, const int64_t *shape);
static inline DLDataType rx_rt_dtype_unpack(uint32_t packed)
{
    DLDataType t;
    t.code = (uint8_t)(packed & 0xff);
    t.bits = (uint8_t)((packed >> 8) & 0xff);
    t.lanes = (uint16_t)(packed >> 16);
    if (t.lanes == 0) t.lanes = 1;
    return t;
}

static inline uint32_t rx_rt_dtype_pack(DLDataType t)
{
    return RX_RXA_DTYPE(t.code, t.bits, t.lanes);
}

/* ---- values (vm_value.c) ---- */

typedef enum rx_vm_kind {
    RX_V_NONE = 0, RX_V_INT, RX_V_TENSOR, RX_V_SHAPE, RX_V_TUPLE, RX_V_STORAGE, RX_V_FUNC
} rx_vm_kind;

struct rx_vm_shape;
struct rx_vm_tuple;

typedef struct rx_vm_value {
    int kind; /* rx_vm_kind */
    union {
        int64_t i;                 /* INT */
        uint32_t f;                /* FUNC: function index in its module */
        rx_rt_tensor *t;           /* TENSOR */
        struct rx_vm_shape *s;     /* SHAPE */
        struct rx_vm_tuple *tu;    /* TUPLE */
        rx_rt_storage *st;         /* STORAGE */
    } u;
} rx_vm_value;

typedef struct rx_vm_shape {
    _Atomic int32_t refs; /* references */
    int32_t ndim;         /* dims */
    int64_t dims[];       /* values */
} rx_vm_shape;

typedef struct rx_vm_tuple {
    _Atomic int32_t refs; /* references */
    uint32_t n;           /* fields */
    rx_vm_value v[];      /* owned values */
} rx_vm_tuple;

void rx_vm_value_retain(const rx_vm_value *v);
void rx_vm_value_release(rx_vm_value *v); /* and sets it to none */
rx_vm_shape *rx_vm_shape_new(int32_t ndim);
rx_vm_tuple *rx_vm_tuple_new(uint32_t n);
/* "a tuple", "an int", ... for messages. */
const char *rx_vm_kind_desc(int kind);

/* ---- the per-call object cache (tensor.c) ---- */

#define RX_RT_CACHE_BATCH 32 /* objects or blocks moved per refill */

/* Free objects owned by one running call (see the essay above). Only the thread
 * running the call touches it; `blocks[c]` is meaningful only where bit c of `have` is
 * set, so starting a cache writes a few words, not the whole table. */
typedef struct rx_rt_cache {
    rx_rt_ctx *ctx;                     /* where objects refill from and flush to */
    struct rx_rt_tensor *tensors;       /* free tensor objects (poisoned) */
    struct rx_rt_storage *storages;     /* free storage records, no block (poisoned) */
    rx_rt_block *blocks[RX_RT_NCLASS];  /* free blocks per size class (data poisoned) */
    uint64_t have[RX_RT_NCLASS / 64];   /* bit c: blocks[c] is initialised */
    int64_t allocs, hits;               /* pool counters not yet added to the pool */
} rx_rt_cache;

void rx_rt_cache_init(rx_rt_cache *c, rx_rt_ctx *ctx);
/* Gives everything cached back to the context and adds the counters; c is empty
 * (and reusable) afterwards. */
void rx_rt_cache_flush(rx_rt_cache *c);
/* rx_rt_storage_new from the cache. */
rx_rt_storage *rx_rt_cache_storage(rx_rt_cache *c, size_t nbytes);
/* rx_rt_tensor_view from the cache. */
rx_rt_tensor *rx_rt_cache_view(rx_rt_cache *c, rx_rt_storage *s, size_t offset,
                               DLDataType dtype, int32_t ndim, const int64_t *shape,
                               rx_rt_err *err);
/* rx_vm_value_release, parking what it frees in the cache. */
void rx_rt_cache_release(rx_rt_cache *c, rx_vm_value *v);

/* ---- modules (runtime.c) and the interpreter (vm.c) ---- */

/* One callee's profile aggregate (rx_rt_prof_entry's numbers), updated lock-free by
 * concurrent calls: calls and total with fetch_add, min and max with CAS loops. */
typedef struct rx_rt_prof_slot {
    _Atomic int64_t calls;    /* times called */
    _Atomic int64_t total_ns; /* summed wall time */
    _Atomic int64_t min_ns;   /* fastest (INT64_MAX when never called) */
    _Atomic int64_t max_ns;   /* slowest */
} rx_rt_prof_slot;

/* The profile of one module: a slot per kernel index and per string index (CALL_LIB
 * names are string indices; only those the code calls ever count), allocated at load
 * so turning profiling on never allocates. */
typedef struct rx_rt_prof {
    _Atomic int on;           /* rx_rt_set_profiling; read once per call */
    rx_rt_prof_slot *kernels; /* by kernel index (nkernels) */
    rx_rt_prof_slot *libs;    /* by string index (nstrings) */
    _Atomic int64_t runs;     /* profiled VM calls */
    _Atomic int64_t wall_ns;  /* their summed wall time */
} rx_rt_prof;

/* Adds one timed call of ns to a slot. */
void rx_rt_prof_add(rx_rt_prof_slot *s, int64_t ns);
/* CLOCK_MONOTONIC now, in ns. */
int64_t rx_rt_now_ns(void);

struct rx_rt_module {
    rx_rt_ctx *ctx;               /* the context it was loaded into */
    rx_rxa *a;                    /* parsed artifact */
    rx_rt_storage *blob;          /* the artifact bytes (constants view it) */
    rx_rt_tensor **consts;        /* one tensor per constant */
    void *kernel_so;              /* dlopen handle or NULL */
    int kernel_fd;                /* memfd kept open while loaded (-1 none) */
    void **kernel_fn;             /* resolved kernel symbols, by kernel index */
    rx_rt_libentry *libs;         /* by string index: CALL_LIB targets (fn NULL: unused) */
    int *builtins;                /* by string index: CALL_BUILTIN targets (-1: unused) */
    rx_rt_prof prof;              /* the profiler's aggregate and switch */
    struct rx_rt_gpu *gpu;        /* GPU artifacts: device, program, kernels (vm_device.c) */
};

/* ---- GPU artifacts (vm_device.c) ---- */

/* Opens the device of a GPU artifact (one with KERNELS_OPENCL: OpenCL, or
 * KERNELS_SPIRV: Vulkan), builds its kernels, checks them against the device's limits
 * and moves the constants there. A CPU artifact is left alone. 0, or -1 with err. */
int rx_rt_gpu_load(rx_rt_module *m, rx_rt_err *err);
void rx_rt_gpu_unload(rx_rt_module *m);
/* The VM device type of a GPU module's device (RX_DEV_OPENCL, RX_DEV_VULKAN). */
int64_t rx_rt_gpu_dev_type(const rx_rt_module *m);
/* The module's device; waiting for it (0, or -1 with err). */
struct rx_dev *rx_rt_gpu_dev(const rx_rt_module *m);
int rx_rt_gpu_sync(rx_rt_module *m, rx_rt_err *err);
/* Whether v is a tensor in device memory. */
bool rx_rt_on_device(const rx_vm_value *v);
/* Replaces every CPU tensor in *v (tuples included) by a copy on m's device (to_dev)
 * or every device tensor by a CPU copy (to host); values of other kinds are kept.
 * 0, or -1 with err (c may be NULL: objects come from malloc). */
int rx_rt_gpu_move(rx_rt_module *m, rx_vm_value *v, bool to_dev, rx_rt_err *err);
/* Runs device library function name ("clblast.matmul" on OpenCL, "cublas.matmul" on
 * CUDA: A (m, k) or (b, m, k), B
 * (k, n) or (b, k, n), out; f32 device tensors) on m's device, queued like a launch.
 * Returns 0, or -1 with err ("clblast.matmul: ...", CLBlast's own errors). */
/* Whether device library `name` (clblast.matmul) cannot be loaded on this host: then the
 * first time in the process a one-line notice goes to stderr and the VM runs the
 * artifact's generated kernel instead (LIBJMP). */
bool rx_rt_gpu_lib_missing(rx_rt_module *m, const char *name);
int rx_rt_gpu_call_lib(rx_rt_module *m, const char *name, rx_vm_value *const *vals, int64_t n,
                       rx_rt_err *err);
/* One call's CUDA Graph state (vm_device.c's "Graphs"): whether it holds the module's
 * kept storages, and the region it is in. */
enum { RX_GR_NONE = 0, RX_GR_CAPTURE = 1, RX_GR_REPLAY = 2 };
typedef struct rx_rt_graph_call {
    bool held;       /* this call uses the kept storages (the module's lock) */
    int mode;        /* RX_GR_*: inside a region being captured or replayed */
    uint32_t fn;     /* the entry function */
    int64_t region;  /* the region's index */
    size_t entry;    /* REPLAY: the captured graph's index */
    int64_t nkey, key[16]; /* CAPTURE: the key */
} rx_rt_graph_call;
/* At a call's start: takes the module's kept storages when it has regions, is CUDA and
 * no other call holds them (profiled calls never do). At its end: releases them. */
void rx_rt_gpu_call_begin(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t fn, bool profiled);
void rx_rt_gpu_call_end(rx_rt_module *m, rx_rt_graph_call *gc);
/* Ends a capture left open by an error inside a region (before the device is waited
 * for: a capturing stream cannot be). */
void rx_rt_gpu_graph_abort(rx_rt_module *m, rx_rt_graph_call *gc);
/* ALLOC_STORAGE on the device: the kept storage of (entry function, pc) when gc holds
 * them and entry (the entry function's frame), else a new one. NULL with err. */
rx_rt_storage *rx_rt_gpu_storage(rx_rt_module *m, rx_rt_graph_call *gc, int64_t pc, bool entry,
                                 size_t bytes, rx_rt_err *err);
/* Argument i to the device: uploaded into its kept storage when gc holds them, else as
 * rx_rt_gpu_move. */
int rx_rt_gpu_move_arg(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t i, rx_vm_value *v,
                       rx_rt_err *err);
/* GRAPH_BEGIN / GRAPH_END of region with key[0..nkey) (capture, or replay of the graph
 * captured for that key at the current addresses). 0, or -1 with err. */
int rx_rt_gpu_graph_begin(rx_rt_module *m, rx_rt_graph_call *gc, int64_t region,
                          const int64_t *key, int64_t nkey, rx_rt_err *err);
int rx_rt_gpu_graph_end(rx_rt_module *m, rx_rt_graph_call *gc, int64_t region, rx_rt_err *err);
/* Totals of the module: device launches made (a graph launch counts one) and graph
 * launches. */
void rx_rt_gpu_counters(const rx_rt_module *m, int64_t *launches, int64_t *graphs);
/* Launches the device kernels of kernel kidx with buffers bufs[0..nb) and symbolic
 * values iv[0..ni) (queued; nothing waits); nothing while gc replays a region. 0, or -1
 * with err. */
int rx_rt_gpu_launch(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t kidx,
                     rx_vm_value *const *bufs, int64_t nb, const int64_t *iv, int64_t ni,
                     rx_rt_err *err);
/* Waits for the device and reports a failed index check of a kernel since the last
 * call ("kernel K: index I out of range for axis A (extent E)"). 0, or -1 with err. */
int rx_rt_gpu_finish(rx_rt_module *m, rx_rt_err *err);

/* Loads the KERNELS_CPU object of m and resolves every kernel (kernels.c). */
int rx_rt_kernels_load(rx_rt_module *m, rx_rt_err *err);
void rx_rt_kernels_unload(rx_rt_module *m);

/* Runs function fn with args (ownership of the values stays with the caller; they are
 * retained as needed). On success stores the result in *ret (caller releases) and
 * returns 0; on failure -1 with err. Adds the calls it made to *kernels and *libcalls.
 * A GPU module's arguments may be device tensors (used in place); its results come
 * back to the host unless dev_out (rx_rt_bench's resident inputs: then they stay in
 * device memory, valid until the module's next call, which may reuse their storage). */
int rx_vm_run(rx_rt_module *m, uint32_t fn, const rx_vm_value *args, uint32_t nargs,
              bool dev_out, rx_vm_value *ret, int64_t *kernels, int64_t *libcalls,
              rx_rt_err *err);

/* ---- devices (device.c): what the device backends share ---- */

/* A zeroed rx_dev with a zeroed impl of impl_size bytes, for opening device id of api;
 * NULL with err "no API device -1 (device ids start at 0)" or "out of memory". */
rx_dev *rx_dev_alloc(const char *api, int32_t id, size_t impl_size, rx_rt_err *err);

/* Frees d->impl and d (what a backend's close does last). */
void rx_dev_free_shell(rx_dev *d);

/* Device buffers of storages, through the cache of freed ones (device_cache.c): a
 * buffer of at least n bytes (a cached one, else the device's alloc; on failure the
 * cache is flushed and the alloc tried again), 0 or -1 with err; giving one back (n:
 * the bytes asked for when it was taken), kept for reuse or freed; freeing every cached
 * buffer of dev (before it closes); the bytes cached for dev. */
int rx_dev_buf_alloc(rx_dev *dev, size_t n, rx_dev_buf **out, rx_rt_err *err);
void rx_dev_buf_release(rx_dev *dev, rx_dev_buf *b, size_t n);
void rx_dev_buf_flush(rx_dev *dev);
size_t rx_dev_buf_cached(const rx_dev *dev);
/* RX_HAVE_CL: the OpenCL headers were there at build time (device_opencl.c, clblast.c
 * fall back to "not built" errors without them). */
#if defined(__has_include)
#if __has_include(<CL/cl.h>)
#define RX_HAVE_CL 1
#endif
#endif

/* An OpenCL device's command queue (cl_command_queue *; device_opencl.c), NULL when d is
 * not one: what clblast.c enqueues on. */
void *rx_dev_opencl_queue(rx_dev *d);
/* A CUDA device's stream (CUstream; device_cuda.c) with its context made current on
 * this thread, what cublas.c queues on; NULL with err when d is not a CUDA device or
 * the context cannot be made current. */
void *rx_dev_cuda_stream(rx_dev *d, rx_rt_err *err);
/* The cuBLAS handle kept on CUDA device d (NULL: none yet), and keeping one: free_fn(h)
 * runs when the device closes, with its context current. */
void *rx_dev_cuda_blas(rx_dev *d);
/* CUDA Graphs on CUDA device d's stream (device_cuda.c): begin capturing (relaxed
 * mode), end it into an executable graph (*exec), launch one, free one. 0, or -1 with
 * err naming the driver call. */
int rx_dev_cuda_capture_begin(rx_dev *d, rx_rt_err *err);
int rx_dev_cuda_capture_end(rx_dev *d, void **exec, rx_rt_err *err);
int rx_dev_cuda_graph_launch(rx_dev *d, void *exec, rx_rt_err *err);
void rx_dev_cuda_graph_free(rx_dev *d, void *exec);
void rx_dev_cuda_set_blas(rx_dev *d, void *h, void (*free_fn)(void *));
/* A library's status code and its name, for errors (cublas.c, device_cuda.c). */
typedef struct rx_code_name {
    int code;
    const char *name;
} rx_code_name;
/* The name of code in t[0..n), else deflt. */
const char *rx_code_name_of(const rx_code_name *t, size_t n, int code, const char *deflt);
/* dlopen(RTLD_NOW | RTLD_LOCAL) of $env when set and not empty, else of deflt: the
 * handle, or NULL with err "no API device: cannot load NAME (dlerror)". *used is the
 * name tried. */
void *rx_dev_load_lib(const char *api, const char *env, const char *deflt, const char **used,
                      rx_rt_err *err);

/* The launch checks every backend makes: 1 to 3 dimensions, each global size a multiple
 * of its group size, at most d->info.max_threads work-items per group. Returns 0 to go
 * on, 1 when the grid is empty (nothing to run), -1 with err "API: kernel K: ...". */
int rx_dev_launch_shape(const rx_dev *d, const char *kernel, int ndim, const size_t *global,
                        const size_t *local, rx_rt_err *err);

#endif
