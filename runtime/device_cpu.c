/*
 * device_cpu.c — the CPU device: a caching pool of 64-byte aligned blocks.
 *
 * Requests are rounded up to a size class (64 bytes, then four classes per power of
 * two: 80, 96, 112, 128, 160, ... so at most 25% is wasted) and freed blocks go onto
 * that class's free list, so a function called in a loop reaches a steady state with
 * no system allocation. The pool never returns cached memory by itself; rx_rt_trim
 * does (together with the context's recycled tensor objects and storage records). One
 * mutex guards the lists, pool_bytes and the allocs/hits counters; allocation is O(1).
 * The interpreter's per-call cache (tensor.c) takes blocks in batches (take), gives
 * them back in one locked pass (stash), and adds its allocs/hits when it flushes, so
 * those two counters lag while a call runs.
 *
 * Accounting: live_bytes counts requested bytes of live storages (what a memory plan
 * asks for, independent of class rounding); pool_bytes counts class bytes held from
 * the system, live or cached. live_bytes, peak_bytes and limit are atomics outside the
 * mutex (charge/uncharge): the limit check is a compare-and-swap loop, so concurrent
 * allocations never push live_bytes past it, and peak is raised by compare-and-swap
 * after each increase, so it is exact once the racing charges return.
 *
 * Under AddressSanitizer a cached block's payload is poisoned until it is handed out.
 *
 * Reserved blocks. A block of RX_RT_RESERVE_MIN (64 MiB) or more — in practice a memory
 * plan's arena, sized for the function's upper bounds — is address space only: an
 * anonymous private mmap with PROT_NONE, which costs no memory and no commit charge
 * under any overcommit policy (Linux accounts only writable private mappings). Pages
 * become usable per 1 MiB chunk when a tensor view of the block is made
 * (rx_rt_block_commit, called by the view functions of tensor.c with the view's actual
 * byte range): mprotect to read-write, which is where the kernel charges them — under
 * the heuristic policy (vm.overcommit_memory=0) a range larger than RAM + swap is
 * refused, under the strict one (2) anything past the commit limit — and a refusal is
 * a clear error naming the bytes, not a crash. Pages are backed only when touched. So
 * a call's memory is what its views at its actual shapes cover, not the bound: with
 * upper bounds b <= 64, s <= 2048 a decoder block's prefill arena reserves 52 GB, and a
 * call at b = 1, s = 7 commits about 10 MB of it. Committed chunks stay committed
 * while the block is cached (the next call at the same shapes commits nothing);
 * rx_rt_trim unmaps it.
 *
 * Huge pages. A block of RX_RT_HUGE_MIN (4 MiB) or more, reserved or not, is mapped to
 * start on a 2 MiB boundary and advised MADV_HUGEPAGE (the kernel's transparent huge
 * pages in their usual "madvise" mode): a large tensor is then backed by 2 MiB pages
 * where the kernel has them, and a kernel that strides across many rows (a transpose
 * reading 16 KiB-apart rows: 32 pages per 16-row tile on 4 KiB pages, more than the
 * TLB holds) stops missing the TLB. Measured by tests/bench/bench_transpose.c: the
 * in-register transpose with streaming stores went from 0.54-0.65 of memcpy on 4 KiB
 * pages to 0.69-0.94 on 2 MiB pages (NumPy's own large arrays are advised the same
 * way, so its copies, our reference, already run on them). The advice changes neither
 * count below: a malloc'ed-size block is charged its requested bytes as before, a
 * reserved one its committed chunks (the kernel backs a 2 MiB page only where the
 * whole aligned range is committed and touched).
 *
 * Page faults, measured (perf stat -e page-faults over whole relax-run --bench runs of
 * few and many calls, 2 threads): a steady-state call takes none — UNet 256x264 15241
 * faults at 7 calls, 15228 at 27; BERT (batch 2) 67422 at 5 and at 45; Real-ESRGAN,
 * ResNet-50, DenseNet, SqueezeNet, YOLO C2f 640, BERT at batch 16 alike (run-to-run
 * differences of at most a few hundred, of either sign, not growing with the calls) —
 * since every storage, arena and kernel scratch buffer (library_gemm.c's,
 * library_conv.c's per-thread ones) is kept. The kernel's clear_page in a whole-process profile (UNet: 5.75% of 22 calls) is the
 * first call's: 81% of it huge-page zeroing (do_huge_pmd_anonymous_page) on first
 * touch, most under the convolution's im2col packing into its new per-thread buffer
 * and under the load's copy of the weights; warm-up calls absorb it.
 *
 * Two byte counts: live_bytes (and peak_bytes) count requested bytes of live storages,
 * reserved or not — what a plan asks for; resident_bytes (and peak_resident) count what
 * is backed: a malloc'ed block's requested bytes, a reserved block's committed chunks.
 * The memory limit (rx_rt_set_memory_limit) caps resident_bytes, so whether a call
 * runs depends on what it uses.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include "rt_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int rx_rt_pool_class(size_t n, size_t *cap)
{
    if (n <= 64) {
        *cap = 64;
        return 0;
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t step = (size_t)1 << (k - 2);
    size_t q = (n + step - 1) / step; /* 5..8 */
    *cap = q * step;
    return 1 + (k - 6) * 4 + (int)(q - 5);
}

void rx_rt_pool_init(rx_rt_pool *p)
{
    memset(p, 0, sizeof *p);
    atomic_init(&p->live_bytes, 0);
    atomic_init(&p->peak_bytes, 0);
    atomic_init(&p->resident_bytes, 0);
    atomic_init(&p->peak_resident, 0);
    atomic_init(&p->limit, 0);
    pthread_mutex_init(&p->mu, NULL);
}

static void free_lists(rx_rt_pool *p)
{
    for (int c = 0; c < RX_RT_NCLASS; c++) {
        while (p->free_[c]) {
            rx_rt_block *b = p->free_[c];
            p->free_[c] = b->next;
            p->pool_bytes -= (int64_t)b->cap;
            rx_rt_block_unpoison(b);
            if (b->reserved || b->mapped) {
                munmap(b->data, b->cap);
                free(b->chunks);
            } else {
                free(b->data);
            }
            free(b);
        }
    }
}

void rx_rt_pool_destroy(rx_rt_pool *p)
{
    free_lists(p);
    pthread_mutex_destroy(&p->mu);
}

void rx_rt_pool_trim(rx_rt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    free_lists(p);
    pthread_mutex_unlock(&p->mu);
}

/* Raises *peak to at least v (compare-and-swap; exact once racing updates return). */
static void raise_peak(_Atomic int64_t *peak, int64_t v)
{
    int64_t cur = atomic_load_explicit(peak, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(peak, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

/* Adds n to resident_bytes unless that passes the limit (-1, nothing changed). */
static int charge_resident(rx_rt_pool *p, int64_t n)
{
    int64_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed), res;
    if (!limit) {
        res = atomic_fetch_add_explicit(&p->resident_bytes, n, memory_order_relaxed) + n;
    } else {
        int64_t cur = atomic_load_explicit(&p->resident_bytes, memory_order_relaxed);
        do {
            if (n > limit - cur) return -1;
        } while (!atomic_compare_exchange_weak_explicit(&p->resident_bytes, &cur, cur + n,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed));
        res = cur + n;
    }
    raise_peak(&p->peak_resident, res);
    return 0;
}

int rx_rt_pool_charge(rx_rt_pool *p, size_t live, size_t resident)
{
    if (charge_resident(p, (int64_t)resident)) return -1;
    int64_t n = (int64_t)live;
    raise_peak(&p->peak_bytes, atomic_fetch_add_explicit(&p->live_bytes, n, memory_order_relaxed) + n);
    return 0;
}

void rx_rt_pool_uncharge(rx_rt_pool *p, size_t live, size_t resident)
{
    atomic_fetch_sub_explicit(&p->live_bytes, (int64_t)live, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->resident_bytes, (int64_t)resident, memory_order_relaxed);
}

static bool chunk_on(const rx_rt_block *b, size_t c)
{
    return (b->chunks[c / 64] >> (c % 64)) & 1;
}

int rx_rt_block_commit(rx_rt_pool *p, rx_rt_block *b, size_t off, size_t len, rx_rt_err *err)
{
    if (!b->reserved || len == 0) return 0;
    RX_RT_ASSERT(off <= b->cap && len <= b->cap - off);
    size_t last = (off + len - 1) / RX_RT_COMMIT_CHUNK;
    for (size_t c = off / RX_RT_COMMIT_CHUNK; c <= last; c++) {
        if (chunk_on(b, c)) continue;
        size_t e = c; /* the run of uncommitted chunks c..e */
        while (e < last && !chunk_on(b, e + 1)) e++;
        size_t start = c * RX_RT_COMMIT_CHUNK, end = (e + 1) * RX_RT_COMMIT_CHUNK;
        if (end > b->cap) end = b->cap;
        size_t n = end - start;
        int64_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
        if (charge_resident(p, (int64_t)n))
            return rx_rt_fail(err,
                              "out of memory: committing %zu bytes of a %zu-byte storage would "
                              "pass the memory limit of %lld resident bytes (%lld in use)",
                              n, b->cap, (long long)limit,
                              (long long)atomic_load(&p->resident_bytes));
        if (mprotect((char *)b->data + start, n, PROT_READ | PROT_WRITE) != 0) {
            int e_no = errno;
            atomic_fetch_sub_explicit(&p->resident_bytes, (int64_t)n, memory_order_relaxed);
            return rx_rt_fail(err,
                              "out of memory: the system refused to commit %zu bytes of a "
                              "%zu-byte storage (%s; %lld bytes resident)",
                              n, b->cap, strerror(e_no),
                              (long long)atomic_load(&p->resident_bytes));
        }
        for (size_t i = c; i <= e; i++) b->chunks[i / 64] |= (uint64_t)1 << (i % 64);
        b->committed += n;
        c = e;
    }
    return 0;
}

rx_rt_block *rx_rt_pool_take(rx_rt_pool *p, int cls, int max)
{
    pthread_mutex_lock(&p->mu);
    rx_rt_block *head = p->free_[cls], *b = head;
    for (int i = 1; b && i < max; i++) b = b->next;
    if (b) {
        p->free_[cls] = b->next;
        b->next = NULL;
    } else {
        p->free_[cls] = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    return head;
}

/* cap bytes of anonymous memory (prot) starting on a 2 MiB boundary and advised for
 * transparent huge pages (file essay); MAP_FAILED when the system refuses. munmap(r, cap)
 * returns it. */
static void *map_huge(size_t cap, int prot)
{
    const size_t huge = (size_t)2 << 20;
    size_t len = cap + huge;
    char *m = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return MAP_FAILED;
    char *r = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    size_t head = (size_t)(r - m), tail = len - head - cap;
    if (head) munmap(m, head);
    if (tail) munmap(r + cap, tail);
#ifdef MADV_HUGEPAGE
    (void)madvise(r, cap, MADV_HUGEPAGE); /* advice: where refused, 4 KiB pages serve */
#endif
    return r;
}

rx_rt_block *rx_rt_pool_fresh(rx_rt_pool *p, int cls, size_t cap)
{
    rx_rt_block *b = calloc(1, sizeof *b);
    void *data = NULL;
    if (!b) return NULL;
    if (cap >= RX_RT_RESERVE_MIN) {
        size_t nchunks = (cap + RX_RT_COMMIT_CHUNK - 1) / RX_RT_COMMIT_CHUNK;
        b->chunks = calloc((nchunks + 63) / 64, sizeof *b->chunks);
        data = b->chunks ? map_huge(cap, PROT_NONE) : MAP_FAILED;
        if (data == MAP_FAILED) {
            free(b->chunks);
            free(b);
            return NULL;
        }
        b->reserved = 1;
    } else if (cap >= RX_RT_HUGE_MIN) {
        if ((data = map_huge(cap, PROT_READ | PROT_WRITE)) == MAP_FAILED) {
            free(b);
            return NULL;
        }
        b->mapped = 1;
    } else if (posix_memalign(&data, 64, cap) != 0) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->data = data;
    b->cap = cap;
    b->cls = cls;
    pthread_mutex_lock(&p->mu);
    p->pool_bytes += (int64_t)cap;
    pthread_mutex_unlock(&p->mu);
    return b;
}

void rx_rt_pool_stash(rx_rt_pool *p, rx_rt_block *b)
{
    RX_RT_ASSERT(b->cls >= 0 && b->cls < RX_RT_NCLASS);
    b->next = p->free_[b->cls];
    p->free_[b->cls] = b;
}

rx_rt_block *rx_rt_pool_get(rx_rt_pool *p, size_t nbytes)
{
    size_t cap;
    if (nbytes > ((size_t)1 << 60)) return NULL;
    int c = rx_rt_pool_class(nbytes, &cap);
    RX_RT_ASSERT(c >= 0 && c < RX_RT_NCLASS && cap >= nbytes);
    /* A reserved block's resident bytes are charged below, when it is known. */
    if (rx_rt_pool_charge(p, nbytes, cap >= RX_RT_RESERVE_MIN ? 0 : nbytes)) return NULL;
    pthread_mutex_lock(&p->mu);
    rx_rt_block *b = p->free_[c];
    if (b) {
        p->free_[c] = b->next;
        p->hits++;
    }
    p->allocs++;
    pthread_mutex_unlock(&p->mu);
    if (b) {
        rx_rt_block_unpoison(b);
    } else if (!(b = rx_rt_pool_fresh(p, c, cap))) {
        pthread_mutex_lock(&p->mu);
        p->allocs--;
        pthread_mutex_unlock(&p->mu);
        rx_rt_pool_uncharge(p, nbytes, cap >= RX_RT_RESERVE_MIN ? 0 : nbytes);
        return NULL;
    }
    if (b->reserved) {
        /* Its committed chunks count as resident now; then [0, nbytes) is committed (a
         * failing commit keeps, and has charged, the chunks it did commit). */
        if (charge_resident(p, (int64_t)b->committed) == 0) {
            if (rx_rt_block_commit(p, b, 0, nbytes, NULL) == 0) return b;
            rx_rt_pool_uncharge(p, 0, b->committed);
        }
        rx_rt_pool_uncharge(p, nbytes, 0);
        pthread_mutex_lock(&p->mu);
        rx_rt_pool_stash(p, b);
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    return b;
}

void rx_rt_pool_put(rx_rt_pool *p, rx_rt_block *b, size_t requested)
{
    size_t resident = rx_rt_block_resident(b, requested);
    rx_rt_block_poison(b);
    pthread_mutex_lock(&p->mu);
    rx_rt_pool_stash(p, b);
    pthread_mutex_unlock(&p->mu);
    rx_rt_pool_uncharge(p, requested, resident);
}

int64_t rx_rt_pool_reset_peak(rx_rt_pool *p, int64_t *resident)
{
    int64_t live = atomic_load_explicit(&p->live_bytes, memory_order_relaxed);
    int64_t res = atomic_load_explicit(&p->resident_bytes, memory_order_relaxed);
    atomic_store_explicit(&p->peak_bytes, live, memory_order_relaxed);
    atomic_store_explicit(&p->peak_resident, res, memory_order_relaxed);
    if (resident) *resident = res;
    return live;
}

/* ---- the context ---- */

rx_rt_ctx *rx_rt_ctx_new(void)
{
    rx_rt_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    rx_rt_pool_init(&ctx->pool);
    pthread_mutex_init(&ctx->lib_mu, NULL);
    ctx->max_depth = 256;
    if (rx_rt_lib_builtins(ctx) != 0) {
        rx_rt_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Frees the context's recycled tensor objects and storage records (caller holds
 * pool.mu or owns the context). */
static void free_objects(rx_rt_ctx *ctx)
{
    while (ctx->free_tensors) {
        rx_rt_tensor *t = ctx->free_tensors;
        ctx->free_tensors = t->next_free;
        RX_RT_UNPOISON(t, sizeof *t);
        free(t);
    }
    while (ctx->free_storages) {
        rx_rt_storage *s = ctx->free_storages;
        ctx->free_storages = s->next_free;
        RX_RT_UNPOISON(s, sizeof *s);
        free(s);
    }
}

void rx_rt_ctx_free(rx_rt_ctx *ctx)
{
    if (!ctx) return;
    free_objects(ctx);
    rx_rt_lib_close(ctx);
    for (size_t i = 0; i < ctx->nlibs; i++) free(ctx->libs[i].name);
    free(ctx->libs);
    pthread_mutex_destroy(&ctx->lib_mu);
    rx_rt_pool_destroy(&ctx->pool);
    free(ctx);
}

void rx_rt_set_max_depth(rx_rt_ctx *ctx, int depth)
{
    ctx->max_depth = depth < 1 ? 1 : depth;
}

void rx_rt_set_device_id(rx_rt_ctx *ctx, int32_t id)
{
    ctx->device_id = id < 0 ? 0 : id;
}

void rx_rt_set_memory_limit(rx_rt_ctx *ctx, int64_t bytes)
{
    atomic_store(&ctx->pool.limit, bytes > 0 ? bytes : 0);
}

void rx_rt_get_stats(rx_rt_ctx *ctx, rx_rt_stats *out)
{
    out->live_bytes = atomic_load(&ctx->pool.live_bytes);
    out->peak_bytes = atomic_load(&ctx->pool.peak_bytes);
    out->resident_bytes = atomic_load(&ctx->pool.resident_bytes);
    out->peak_resident_bytes = atomic_load(&ctx->pool.peak_resident);
    pthread_mutex_lock(&ctx->pool.mu);
    out->pool_bytes = ctx->pool.pool_bytes;
    out->allocs = ctx->pool.allocs;
    out->pool_hits = ctx->pool.hits;
    pthread_mutex_unlock(&ctx->pool.mu);
    out->kernel_calls = atomic_load(&ctx->kernel_calls);
    out->library_calls = atomic_load(&ctx->library_calls);
}

void rx_rt_trim(rx_rt_ctx *ctx)
{
    pthread_mutex_lock(&ctx->pool.mu);
    free_objects(ctx);
    pthread_mutex_unlock(&ctx->pool.mu);
    rx_rt_pool_trim(&ctx->pool);
}
