/*
 * device_cpu.c — the CPU device: a caching pool of 64-byte aligned blocks.
 *
 * Requests are rounded up to a size class (64 bytes, then four classes per power of
 * two: 80, 96, 112, 128, 160, ... so at most 25% is wasted) and freed blocks go onto
 * that class's free list, so a function called in a loop reaches a steady state with
 * no system allocation. The pool never returns cached memory by itself; rx_rt_trim
 * does. One mutex guards the lists and the counters; allocation is O(1).
 *
 * Accounting: live_bytes counts requested bytes of live storages (what a memory plan
 * asks for, independent of class rounding); pool_bytes counts class bytes held from
 * the system, live or cached.
 */
#include "rt_int.h"

#include <stdlib.h>
#include <string.h>

static int size_class(size_t n, size_t *cap)
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
    pthread_mutex_init(&p->mu, NULL);
}

static void free_lists(rx_rt_pool *p)
{
    for (int c = 0; c < RX_RT_NCLASS; c++) {
        while (p->free_[c]) {
            rx_rt_block *b = p->free_[c];
            p->free_[c] = b->next;
            p->pool_bytes -= (int64_t)b->cap;
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

rx_rt_block *rx_rt_pool_get(rx_rt_pool *p, size_t nbytes)
{
    size_t cap;
    if (nbytes > ((size_t)1 << 60)) return NULL;
    int c = size_class(nbytes, &cap);
    RX_RT_ASSERT(c >= 0 && c < RX_RT_NCLASS && cap >= nbytes);
    pthread_mutex_lock(&p->mu);
    if (p->limit && (int64_t)nbytes > p->limit - p->live_bytes) {
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    rx_rt_block *b = p->free_[c];
    if (b) {
        p->free_[c] = b->next;
        p->hits++;
    }
    p->allocs++;
    p->live_bytes += (int64_t)nbytes;
    if (p->live_bytes > p->peak_bytes) p->peak_bytes = p->live_bytes;
    pthread_mutex_unlock(&p->mu);
    if (b) return b;

    b = malloc(sizeof *b);
    void *data = NULL;
    if (!b || posix_memalign(&data, 64, cap) != 0) {
        free(b);
        pthread_mutex_lock(&p->mu);
        p->allocs--;
        p->live_bytes -= (int64_t)nbytes;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    b->next = NULL;
    b->data = data;
    b->cap = cap;
    pthread_mutex_lock(&p->mu);
    p->pool_bytes += (int64_t)cap;
    pthread_mutex_unlock(&p->mu);
    return b;
}

void rx_rt_pool_put(rx_rt_pool *p, rx_rt_block *b, size_t requested)
{
    size_t cap;
    int c = size_class(b->cap, &cap);
    RX_RT_ASSERT(cap == b->cap);
    pthread_mutex_lock(&p->mu);
    b->next = p->free_[c];
    p->free_[c] = b;
    p->live_bytes -= (int64_t)requested;
    pthread_mutex_unlock(&p->mu);
}

int64_t rx_rt_pool_reset_peak(rx_rt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int64_t live = p->live_bytes;
    p->peak_bytes = live;
    pthread_mutex_unlock(&p->mu);
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

void rx_rt_ctx_free(rx_rt_ctx *ctx)
{
    if (!ctx) return;
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
    pthread_mutex_lock(&ctx->pool.mu);
    ctx->pool.limit = bytes > 0 ? bytes : 0;
    pthread_mutex_unlock(&ctx->pool.mu);
}

void rx_rt_get_stats(rx_rt_ctx *ctx, rx_rt_stats *out)
{
    pthread_mutex_lock(&ctx->pool.mu);
    out->live_bytes = ctx->pool.live_bytes;
    out->peak_bytes = ctx->pool.peak_bytes;
    out->pool_bytes = ctx->pool.pool_bytes;
    out->allocs = ctx->pool.allocs;
    out->pool_hits = ctx->pool.hits;
    pthread_mutex_unlock(&ctx->pool.mu);
    out->kernel_calls = atomic_load(&ctx->kernel_calls);
    out->library_calls = atomic_load(&ctx->library_calls);
}

void rx_rt_trim(rx_rt_ctx *ctx)
{
    rx_rt_pool_trim(&ctx->pool);
}
