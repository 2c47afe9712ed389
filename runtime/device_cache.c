/*
 * device_cache.c — freed device buffers kept for reuse (the storages of rx_rt_storage_dev).
 *
 * A call of a GPU artifact allocates its planned storages and frees them when it
 * returns; on CUDA, cuMemAlloc and cuMemFree of the gigabytes a prefill plan reserves
 * (a plan at the upper bounds) cost milliseconds per call, and cuMemFree waits for the
 * device. So a freed storage's buffer goes to a per-process cache instead, and the next
 * storage of a size it fits takes it back: the caching allocator of PyTorch and TVM's
 * pooled allocator, in its simplest form.
 *
 *   get(dev, n)   the smallest cached buffer of dev with n <= size <= n + n / 8 (exact
 *                 sizes are the common case: a plan's storages are the same every
 *                 call), taken out of the cache; else NULL (the caller allocates).
 *   put(dev, b, size)
 *                 keeps b when the cache's bytes stay within its limit (a quarter of
 *                 the device's memory), else frees it at once.
 *   flush(dev)    frees every cached buffer of dev: before the device closes, and
 *                 when an allocation fails (out of device memory: the cached bytes are
 *                 given back and the allocation is tried once more; rx_dev_buf_alloc).
 *
 * Reuse is safe because every operation of a device is ordered on its one stream or
 * in-order queue: a kernel queued after the reuse runs after every kernel queued
 * before the free. That holds for CUDA (one stream, uploads queued on it), the only API
 * cached here: a Vulkan upload writes mapped memory at once, which could overtake a
 * queued read of a buffer freed and taken again, and OpenCL buffers are cheap to make.
 * RX_DEV_CACHE=0 turns the cache off (every storage is allocated and freed).
 *
 * Buffers keep the size they were allocated with; a storage's nbytes is what it asked
 * for (its views are checked against that), so taking a slightly larger buffer is
 * safe. The cache is one mutex-protected array: a call frees tens of storages, not
 * thousands.
 */
#include "relax/device.h"

#include "rt_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct cached {
    rx_dev *dev;
    rx_dev_buf *b;
    size_t size;
} cached;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cached *g_c;
static size_t g_n, g_cap, g_bytes;

/* Whether dev's freed buffers are cached (the essay). */
static bool cacheable(const rx_dev *dev)
{
    static _Atomic int off = -1;
    int o = atomic_load(&off);
    if (o < 0) {
        const char *e = getenv("RX_DEV_CACHE");
        o = e && !strcmp(e, "0");
        atomic_store(&off, o);
    }
    return !o && dev->info.dl_type == kDLCUDA;
}

static size_t limit_of(const rx_dev *dev)
{
    return dev->info.global_bytes > 0 ? (size_t)dev->info.global_bytes / 4 : (size_t)1 << 30;
}

int rx_dev_buf_alloc(rx_dev *dev, size_t n, rx_dev_buf **out, rx_rt_err *err)
{
    if (!cacheable(dev)) return dev->ops->alloc(dev, n, out, err);
    pthread_mutex_lock(&g_mu);
    size_t best = g_n;
    for (size_t i = 0; i < g_n; i++)
        if (g_c[i].dev == dev && g_c[i].size >= n && g_c[i].size - n <= n / 8 &&
            (best == g_n || g_c[i].size < g_c[best].size))
            best = i;
    if (best < g_n) {
        *out = g_c[best].b;
        g_bytes -= g_c[best].size;
        g_c[best] = g_c[--g_n];
        pthread_mutex_unlock(&g_mu);
        return 0;
    }
    pthread_mutex_unlock(&g_mu);
    if (dev->ops->alloc(dev, n, out, err) == 0) return 0;
    rx_dev_buf_flush(dev); /* out of device memory, perhaps because of the cache */
    return dev->ops->alloc(dev, n, out, err);
}

void rx_dev_buf_release(rx_dev *dev, rx_dev_buf *b, size_t n)
{
    if (!b) return;
    if (cacheable(dev)) {
        pthread_mutex_lock(&g_mu);
        if (g_bytes + n <= limit_of(dev)) {
            if (g_n == g_cap) {
                size_t cap = g_cap ? 2 * g_cap : 32;
                cached *nc = realloc(g_c, cap * sizeof *nc);
                if (nc) g_c = nc, g_cap = cap;
            }
            if (g_n < g_cap) {
                g_c[g_n++] = (cached){dev, b, n};
                g_bytes += n;
                pthread_mutex_unlock(&g_mu);
                return;
            }
        }
        pthread_mutex_unlock(&g_mu);
    }
    dev->ops->free(dev, b);
}

void rx_dev_buf_flush(rx_dev *dev)
{
    for (;;) { /* one buffer at a time: the free runs without the lock */
        rx_dev_buf *b = NULL;
        pthread_mutex_lock(&g_mu);
        for (size_t i = 0; i < g_n && !b; i++)
            if (g_c[i].dev == dev) {
                b = g_c[i].b;
                g_bytes -= g_c[i].size;
                g_c[i] = g_c[--g_n];
            }
        if (!g_n) {
            free(g_c);
            g_c = NULL;
            g_cap = 0;
        }
        pthread_mutex_unlock(&g_mu);
        if (!b) return;
        dev->ops->free(dev, b);
    }
}

size_t rx_dev_buf_cached(const rx_dev *dev)
{
    size_t bytes = 0;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_n; i++)
        if (g_c[i].dev == dev) bytes += g_c[i].size;
    pthread_mutex_unlock(&g_mu);
    return bytes;
}
