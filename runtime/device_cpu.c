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
 */
#include "rt_int.h"

#include <stdlib.h>
#include <string.h>

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
            RX_RT_UNPOISON(b->data, b->cap);
            free(b->data);
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

int rx_rt_pool_charge(rx_rt_pool *p, size_t nbytes)
{
    int64_t n = (int64_t)nbytes, live;
    int64_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
    if (!limit) {
        live = atomic_fetch_add_explicit(&p->live_bytes, n, memory_order_relaxed) + n;
    } else {
        int64_t cur = atomic_load_explicit(&p->live_bytes, memory_order_relaxed);
        do {
            if (n > limit - cur) return -1;
        } while (!atomic_compare_exchange_weak_explicit(&p->live_bytes, &cur, cur + n,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed));
        live = cur + n;
    }
    int64_t peak = atomic_load_explicit(&p->peak_bytes, memory_order_relaxed);
    while (live > peak &&
           !atomic_compare_exchange_weak_explicit(&p->peak_bytes, &peak, live,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return 0;
}

void rx_rt_pool_uncharge(rx_rt_pool *p, size_t nbytes)
{
    atomic_fetch_sub_explicit(&p->live_bytes, (int64_t)nbytes, memory_order_relaxed);
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

rx_rt_block *rx_rt_pool_fresh(rx_rt_pool *p, int cls, size_t cap)
{
    rx_rt_block *b = malloc(sizeof *b);
    void *data = NULL;
    if (!b || posix_memalign(&data, 64, cap) != 0) {
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
    if (rx_rt_pool_charge(p, nbytes)) return NULL;
    pthread_mutex_lock(&p->mu);
    rx_rt_block *b = p->free_[c];
    if (b) {
        p->free_[c] = b->next;
        p->hits++;
    }
    p->allocs++;
    pthread_mutex_unlock(&p->mu);
    if (b) {
        RX_RT_UNPOISON(b->data, b->cap);
        return b;
    }
    b = rx_rt_pool_fresh(p, c, cap);
    if (!b) {
        pthread_mutex_lock(&p->mu);
        p->allocs--;
        pthread_mutex_unlock(&p->mu);
        rx_rt_pool_uncharge(p, nbytes);
    }
    return b;
}

void rx_rt_pool_put(rx_rt_pool *p, rx_rt_block *b, size_t requested)
{
    RX_RT_POISON(b->data, b->cap);
    pthread_mutex_lock(&p->mu);
    rx_rt_pool_stash(p, b);
    pthread_mutex_unlock(&p->mu);
    rx_rt_pool_uncharge(p, requested);
}

int64_t rx_rt_pool_reset_peak(rx_rt_pool *p)
{
    int64_t live = atomic_load_explicit(&p->live_bytes, memory_order_relaxed);
    atomic_store_explicit(&p->peak_bytes, live, memory_order_relaxed);
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

void rx_rt_set_memory_limit(rx_rt_ctx *ctx, int64_t bytes)
{
    atomic_store(&ctx->pool.limit, bytes > 0 ? bytes : 0);
}

void rx_rt_get_stats(rx_rt_ctx *ctx, rx_rt_stats *out)
{
    out->live_bytes = atomic_load(&ctx->pool.live_bytes);
    out->peak_bytes = atomic_load(&ctx->pool.peak_bytes);
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
