/*
 * tensor.c — storages and tensors: reference-counted DLTensor views of device memory.
 *
 * A storage is the unit of allocation (Figure 5's alloc_storage); tensors are views
 * into one storage at a byte offset and keep it alive. Storages come from the
 * context's pool or wrap the artifact buffer (constants). Tensors without a storage
 * borrow the caller's memory for the duration of a call. All tensors the runtime makes
 * are dense, row-major (dl.strides NULL) and on kDLCPU device 0.
 *
 * The per-call cache (rx_rt_cache, declared in rt_int.h) is the interpreter's
 * allocator. Objects reach it when the VM drops their last reference
 * (rx_rt_cache_release): a tensor object onto `tensors`, a POOL storage of the same
 * context onto `storages` with its block onto `blocks[class]` (live_bytes drops at
 * once, through the pool's lock-free charge). The VM's ALLOC_STORAGE/ALLOC_TENSOR pop
 * from those lists; an empty list refills with up to RX_RT_CACHE_BATCH objects from
 * the context (tensors and storage records together, one lock) or blocks of that class
 * from the pool (one lock), and only then falls back to malloc. rx_vm_run flushes the
 * cache when the call ends: one lock returns everything. So a call takes a lock per
 * RX_RT_CACHE_BATCH objects it holds live at once (plus one per size class it uses and
 * one to flush), not two per allocation, and the lists are bounded by the number of
 * objects the context's calls held live at once. Recycled objects are rewritten field
 * by field, never zeroed whole. Everything else (outputs freed by the embedder,
 * builtins' results, API tensors) uses malloc/free as before; objects of both origins
 * are plain malloc blocks, so either path may free the other's.
 *
 * Split storages. A memory plan's arena on a device is one buffer, and a device bounds
 * its buffers (lavapipe: 128 MiB, maxStorageBufferRange, since a Vulkan kernel binds
 * each buffer whole), while an arena is sized for the function's upper bounds (the
 * Llama generator's prefill: 873 MB). A DEV storage larger than the device's largest
 * buffer therefore gets no buffer: each view of it (ALLOC_TENSOR) gets a segment, a
 * buffer holding exactly the view's bytes [off, off + n) of the storage, made at the
 * view's first use of those bytes. A later view within an existing segment shares it
 * (the newest such segment: the plan only places a view inside a live tensor's bytes
 * to alias that tensor, and a segment overlapping a live tensor's bytes is made only
 * for such a view); any other view gets a new segment, since the bytes it overlaps
 * belong to tensors whose lifetimes ended (the plan's invariant). So every tensor is
 * one whole buffer at an element offset, as the kernels' ABI wants, each within the
 * device's limit; a single tensor above it is the device's clear error. Segments live
 * until the storage is released (a call's storages are released when it returns): the
 * device memory of a split storage is the sum of its views' sizes, at most the number
 * of views times the largest, and shrinks to what the run's actual sizes need (the
 * arena's size is the upper bounds', the segments' the run's).
 */
#include "rt_int.h"

#include "relax/device.h"

#include <stdlib.h>
#include <string.h>

int64_t rx_rt_dense_bytes(DLDataType dtype, int32_t ndim, const int64_t *shape)
{
    /* rx_rxa_dtype_bytes, unpacked: bool takes a byte, lanes 0 reads as 1. */
    int64_t bits = dtype.code == kDLUInt && dtype.bits == 1 ? 8 : dtype.bits;
    int64_t n = (bits * (dtype.lanes ? dtype.lanes : 1) + 7) / 8;
    if (n == 0) return -1;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n)) return -1;
    }
    return n;
}

/* Fills a POOL storage record. */
static void storage_fill(rx_rt_storage *s, rx_rt_ctx *ctx, rx_rt_block *b, size_t nbytes)
{
    s->next_free = NULL;
    atomic_init(&s->refs, 1);
    s->kind = RX_STORAGE_POOL;
    s->ctx = ctx;
    s->block = b;
    s->data = b->data;
    s->nbytes = nbytes;
    s->split = false;
}

rx_rt_storage *rx_rt_storage_new(rx_rt_ctx *ctx, size_t nbytes)
{
    rx_rt_storage *s = malloc(sizeof *s);
    if (!s) return NULL;
    rx_rt_block *b = rx_rt_pool_get(&ctx->pool, nbytes);
    if (!b) {
        free(s);
        return NULL;
    }
    storage_fill(s, ctx, b, nbytes);
    return s;
}

/* rx_rt_storage_dev; a segment (may_split false) is always one buffer, so a view larger
 * than the device allows is the device's error. */
static rx_rt_storage *storage_dev(rx_rt_ctx *ctx, rx_dev *dev, size_t nbytes, bool may_split,
                                  rx_rt_err *err)
{
    rx_rt_storage *s = calloc(1, sizeof *s);
    rx_dev_buf *b = NULL;
    if (!s) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    if (may_split && dev->info.max_alloc_bytes > 0 && nbytes > (uint64_t)dev->info.max_alloc_bytes) {
        atomic_init(&s->refs, 1); /* split: segments at its views */
        s->kind = RX_STORAGE_DEV;
        s->ctx = ctx;
        s->dev = dev;
        s->nbytes = nbytes;
        s->split = true;
        return s;
    }
    if (rx_dev_buf_alloc(dev, nbytes, &b, err)) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->kind = RX_STORAGE_DEV;
    s->ctx = ctx;
    s->dev = dev;
    s->data = b;
    s->nbytes = nbytes;
    /* device bytes count as live (peak_bytes), not as resident host memory */
    (void)rx_rt_pool_charge(&ctx->pool, nbytes, 0);
    return s;
}

rx_rt_storage *rx_rt_storage_dev(rx_rt_ctx *ctx, rx_dev *dev, size_t nbytes, rx_rt_err *err)
{
    return storage_dev(ctx, dev, nbytes, true, err);
}

rx_rt_storage *rx_rt_storage_blob(void *buf, size_t nbytes)
{
    rx_rt_storage *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    atomic_init(&s->refs, 1);
    s->kind = RX_STORAGE_BLOB;
    s->data = buf;
    s->nbytes = nbytes;
    return s;
}

void rx_rt_storage_retain(rx_rt_storage *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void rx_rt_storage_release(rx_rt_storage *s)
{
    if (!s || !rx_rt_ref_drop(&s->refs)) return;
    if (s->kind == RX_STORAGE_POOL) {
        rx_rt_pool_put(&s->ctx->pool, s->block, s->nbytes);
    } else if (s->kind == RX_STORAGE_DEV && s->split) {
        for (int i = 0; i < s->nsegs; i++) rx_rt_storage_release(s->segs[i].st);
        free(s->segs);
    } else if (s->kind == RX_STORAGE_DEV) {
        rx_dev_buf_release(s->dev, s->data, s->nbytes);
        rx_rt_pool_uncharge(&s->ctx->pool, s->nbytes, 0);
    } else {
        free(s->data);
    }
    free(s);
}

static bool valid_dtype(DLDataType t)
{
    return t.code <= kDLComplex && t.bits > 0 && t.lanes > 0;
}

/* Checks that a dense view fits in s and commits its bytes; -1 with err otherwise. */
static int view_check(rx_rt_storage *s, size_t offset, DLDataType dtype, int32_t ndim,
                      const int64_t *shape, rx_rt_err *err)
{
    if (!valid_dtype(dtype) || ndim < 0 || ndim > RX_RXA_MAX_NDIM)
        return rx_rt_fail(err, "bad tensor dtype or ndim %d", (int)ndim);
    int64_t bytes = rx_rt_dense_bytes(dtype, ndim, shape);
    if (bytes < 0) return rx_rt_fail(err, "bad tensor shape (negative or overflowing dims)");
    if (offset > s->nbytes || (uint64_t)bytes > s->nbytes - offset)
        return rx_rt_fail(err,
                          "tensor of %lld bytes at offset %zu does not fit in storage of %zu bytes",
                          (long long)bytes, offset, s->nbytes);
    /* A reserved block (device_cpu.c) becomes usable where its views are. */
    if (s->kind == RX_STORAGE_POOL &&
        rx_rt_block_commit(&s->ctx->pool, s->block, offset, (size_t)bytes, err))
        return -1;
    return 0;
}

/* The segment of split storage *s holding bytes [*offset, *offset + bytes) (the essay):
 * *s and *offset become the segment's storage and the offset in it. -1 with err (the
 * device's) when a new segment cannot be made. */
static int split_at(rx_rt_storage **s, size_t *offset, size_t bytes, rx_rt_err *err)
{
    rx_rt_storage *p = *s;
    size_t off = *offset;
    for (int i = p->nsegs - 1; i >= 0; i--) {
        const rx_rt_seg *g = &p->segs[i];
        if (off >= g->off && bytes <= g->n && off - g->off <= g->n - bytes) {
            *s = g->st;
            *offset = off - g->off;
            return 0;
        }
    }
    if (p->nsegs == p->capsegs) {
        int cap = p->capsegs ? 2 * p->capsegs : 8;
        rx_rt_seg *ns = realloc(p->segs, sizeof *ns * (size_t)cap);
        if (!ns) return rx_rt_fail(err, "out of memory");
        p->segs = ns;
        p->capsegs = cap;
    }
    rx_rt_storage *st = storage_dev(p->ctx, p->dev, bytes ? bytes : 1, false, err);
    if (!st) return -1;
    p->segs[p->nsegs++] = (rx_rt_seg){off, bytes ? bytes : 1, st};
    *s = st;
    *offset = 0;
    return 0;
}

/* view_check, then the segment of a split storage (*s and *offset move to it). */
static int view_place(rx_rt_storage **s, size_t *offset, DLDataType dtype, int32_t ndim,
                      const int64_t *shape, rx_rt_err *err)
{
    if (view_check(*s, *offset, dtype, ndim, shape, err)) return -1;
    if ((*s)->kind != RX_STORAGE_DEV || !(*s)->split) return 0;
    return split_at(s, offset, (size_t)rx_rt_dense_bytes(dtype, ndim, shape), err);
}

/* Fills every field of a view of s (the caller already holds the reference to s). */
static void view_fill(rx_rt_tensor *t, rx_rt_storage *s, size_t offset, DLDataType dtype,
                      int32_t ndim, const int64_t *shape)
{
    t->next_free = NULL;
    atomic_init(&t->refs, 1);
    t->storage = s;
    for (int32_t i = 0; i < ndim; i++) t->shape_[i] = shape[i];
    t->dl.data = s->data;
    t->dl.byte_offset = offset;
    t->dl.device.device_type = s->kind == RX_STORAGE_DEV ? (DLDeviceType)s->dev->info.dl_type : kDLCPU;
    t->dl.device.device_id = s->kind == RX_STORAGE_DEV ? s->dev->info.id : 0;
    t->dl.ndim = ndim;
    t->dl.dtype = dtype;
    t->dl.shape = t->shape_;
    t->dl.strides = NULL;
}

rx_rt_tensor *rx_rt_tensor_view(rx_rt_storage *s, size_t offset, DLDataType dtype,
                                int32_t ndim, const int64_t *shape, rx_rt_err *err)
{
    if (view_place(&s, &offset, dtype, ndim, shape, err)) return NULL;
    rx_rt_tensor *t = malloc(sizeof *t);
    if (!t) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    rx_rt_storage_retain(s);
    view_fill(t, s, offset, dtype, ndim, shape);
    return t;
}

rx_rt_tensor *rx_rt_tensor_borrow(const DLTensor *dl, rx_rt_err *err)
{
    if (!dl || dl->ndim < 0 || dl->ndim > RX_RXA_MAX_NDIM || !valid_dtype(dl->dtype)) {
        rx_rt_fail(err, "bad input tensor (ndim or dtype)");
        return NULL;
    }
    if (dl->device.device_type != kDLCPU) {
        rx_rt_fail(err, "input tensor is not on the CPU");
        return NULL;
    }
    if (rx_rt_dense_bytes(dl->dtype, dl->ndim, dl->shape) < 0) {
        rx_rt_fail(err, "bad input tensor shape");
        return NULL;
    }
    if (dl->strides) { /* accept explicit compact strides */
        int64_t expect = 1;
        for (int32_t i = dl->ndim - 1; i >= 0; i--) {
            if (dl->shape[i] != 1 && dl->strides[i] != expect) {
                rx_rt_fail(err, "input tensor is not compact (row-major)");
                return NULL;
            }
            expect *= dl->shape[i];
        }
    }
    rx_rt_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    t->dl = *dl;
    if (dl->ndim) memcpy(t->shape_, dl->shape, sizeof(int64_t) * (size_t)dl->ndim);
    t->dl.shape = t->shape_;
    t->dl.strides = NULL;
    return t;
}

rx_rt_tensor *rx_rt_tensor_new(rx_rt_ctx *ctx, DLDataType dtype, int32_t ndim,
                               const int64_t *shape, rx_rt_err *err)
{
    if (ndim < 0 || ndim > RX_RXA_MAX_NDIM || !valid_dtype(dtype)) {
        rx_rt_fail(err, "bad dtype or ndim %d", (int)ndim);
        return NULL;
    }
    int64_t bytes = rx_rt_dense_bytes(dtype, ndim, shape);
    if (bytes < 0) {
        rx_rt_fail(err, "bad shape");
        return NULL;
    }
    rx_rt_storage *s = rx_rt_storage_new(ctx, (size_t)bytes);
    if (!s) {
        rx_rt_fail(err, "out of memory allocating %lld bytes", (long long)bytes);
        return NULL;
    }
    rx_rt_tensor *t = rx_rt_tensor_view(s, 0, dtype, ndim, shape, err);
    rx_rt_storage_release(s);
    return t;
}

DLTensor *rx_rt_tensor_dl(rx_rt_tensor *t)
{
    return &t->dl;
}

void rx_rt_tensor_retain(rx_rt_tensor *t)
{
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void rx_rt_tensor_release(rx_rt_tensor *t)
{
    if (!t || !rx_rt_ref_drop(&t->refs)) return;
    rx_rt_storage_release(t->storage);
    free(t);
}

/* ---- the per-call cache ---- */

void rx_rt_cache_init(rx_rt_cache *c, rx_rt_ctx *ctx)
{
    c->ctx = ctx;
    c->tensors = NULL;
    c->storages = NULL;
    memset(c->have, 0, sizeof c->have);
    c->allocs = c->hits = 0;
}

void rx_rt_cache_flush(rx_rt_cache *c)
{
    bool any = c->tensors || c->storages || c->allocs;
    for (int w = 0; w < RX_RT_NCLASS / 64; w++) any = any || c->have[w];
    if (!any) return;
    rx_rt_ctx *ctx = c->ctx;
    pthread_mutex_lock(&ctx->pool.mu);
    while (c->tensors) {
        rx_rt_tensor *t = c->tensors;
        c->tensors = t->next_free;
        t->next_free = ctx->free_tensors;
        ctx->free_tensors = t;
    }
    while (c->storages) {
        rx_rt_storage *s = c->storages;
        c->storages = s->next_free;
        s->next_free = ctx->free_storages;
        ctx->free_storages = s;
    }
    for (int w = 0; w < RX_RT_NCLASS / 64; w++) {
        for (uint64_t bits = c->have[w]; bits; bits &= bits - 1) {
            int cls = w * 64 + __builtin_ctzll(bits);
            while (c->blocks[cls]) {
                rx_rt_block *b = c->blocks[cls];
                c->blocks[cls] = b->next;
                rx_rt_pool_stash(&ctx->pool, b);
            }
        }
        c->have[w] = 0;
    }
    ctx->pool.allocs += c->allocs;
    ctx->pool.hits += c->hits;
    pthread_mutex_unlock(&ctx->pool.mu);
    c->allocs = c->hits = 0;
}

/* Moves up to RX_RT_CACHE_BATCH tensor objects and storage records from the context
 * into the cache (one lock). */
static void refill(rx_rt_cache *c)
{
    rx_rt_ctx *ctx = c->ctx;
    pthread_mutex_lock(&ctx->pool.mu);
    for (int i = 0; i < RX_RT_CACHE_BATCH && ctx->free_tensors; i++) {
        rx_rt_tensor *t = ctx->free_tensors;
        ctx->free_tensors = t->next_free;
        t->next_free = c->tensors;
        c->tensors = t;
    }
    for (int i = 0; i < RX_RT_CACHE_BATCH && ctx->free_storages; i++) {
        rx_rt_storage *s = ctx->free_storages;
        ctx->free_storages = s->next_free;
        s->next_free = c->storages;
        c->storages = s;
    }
    pthread_mutex_unlock(&ctx->pool.mu);
}

static rx_rt_storage *pop_storage(rx_rt_cache *c)
{
    if (!c->storages) refill(c);
    rx_rt_storage *s = c->storages;
    if (!s) return malloc(sizeof *s);
    c->storages = s->next_free;
    RX_RT_UNPOISON(s, sizeof *s);
    return s;
}

static void park_storage(rx_rt_cache *c, rx_rt_storage *s)
{
    s->next_free = c->storages;
    c->storages = s;
    RX_RT_POISON((char *)s + sizeof s->next_free, sizeof *s - sizeof s->next_free);
}

rx_rt_storage *rx_rt_cache_storage(rx_rt_cache *c, size_t nbytes)
{
    size_t cap;
    if (nbytes > ((size_t)1 << 60)) return NULL;
    int cls = rx_rt_pool_class(nbytes, &cap);
    RX_RT_ASSERT(cls >= 0 && cls < RX_RT_NCLASS && cap >= nbytes);
    rx_rt_pool *p = &c->ctx->pool;
    rx_rt_storage *s = pop_storage(c);
    if (!s) return NULL;
    /* A reserved block (cap >= RX_RT_RESERVE_MIN) is resident only as far as its views
     * commit it (rx_rt_cache_view); its already committed chunks are charged below. */
    size_t resident = cap >= RX_RT_RESERVE_MIN ? 0 : nbytes;
    if (rx_rt_pool_charge(p, nbytes, resident)) {
        park_storage(c, s);
        return NULL;
    }
    uint64_t bit = (uint64_t)1 << (cls % 64);
    if (!(c->have[cls / 64] & bit)) {
        c->have[cls / 64] |= bit;
        c->blocks[cls] = NULL;
    }
    if (!c->blocks[cls]) c->blocks[cls] = rx_rt_pool_take(p, cls, RX_RT_CACHE_BATCH);
    rx_rt_block *b = c->blocks[cls];
    if (b) {
        c->blocks[cls] = b->next;
        b->next = NULL;
        rx_rt_block_unpoison(b);
        c->hits++;
    } else if (!(b = rx_rt_pool_fresh(p, cls, cap))) {
        rx_rt_pool_uncharge(p, nbytes, resident);
        park_storage(c, s);
        return NULL;
    }
    if (b->committed && rx_rt_pool_charge(p, 0, b->committed)) {
        rx_rt_pool_uncharge(p, nbytes, resident);
        b->next = c->blocks[cls];
        c->blocks[cls] = b;
        park_storage(c, s);
        return NULL;
    }
    c->allocs++;
    storage_fill(s, c->ctx, b, nbytes);
    return s;
}

rx_rt_tensor *rx_rt_cache_view(rx_rt_cache *c, rx_rt_storage *s, size_t offset,
                               DLDataType dtype, int32_t ndim, const int64_t *shape,
                               rx_rt_err *err)
{
    if (view_place(&s, &offset, dtype, ndim, shape, err)) return NULL;
    if (!c->tensors) refill(c);
    rx_rt_tensor *t = c->tensors;
    if (t) {
        c->tensors = t->next_free;
        RX_RT_UNPOISON(t, sizeof *t);
    } else if (!(t = malloc(sizeof *t))) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    /* The caller's reference to s is held by this thread; when it is the only one, no
     * other thread can see the count, so a plain store suffices. */
    if (atomic_load_explicit(&s->refs, memory_order_relaxed) == 1)
        atomic_store_explicit(&s->refs, 2, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    view_fill(t, s, offset, dtype, ndim, shape);
    return t;
}

/* Drops one reference to s; the last parks a POOL storage of this context and its
 * block in the cache. */
static void cache_storage_release(rx_rt_cache *c, rx_rt_storage *s)
{
    if (!s) return;
    if (s->kind != RX_STORAGE_POOL || s->ctx != c->ctx) {
        rx_rt_storage_release(s);
        return;
    }
    if (!rx_rt_ref_drop(&s->refs)) return;
    rx_rt_block *b = s->block;
    rx_rt_pool_uncharge(&c->ctx->pool, s->nbytes, rx_rt_block_resident(b, s->nbytes));
    uint64_t bit = (uint64_t)1 << (b->cls % 64);
    if (!(c->have[b->cls / 64] & bit)) {
        c->have[b->cls / 64] |= bit;
        c->blocks[b->cls] = NULL;
    }
    rx_rt_block_poison(b);
    b->next = c->blocks[b->cls];
    c->blocks[b->cls] = b;
    park_storage(c, s);
}

void rx_rt_cache_release(rx_rt_cache *c, rx_vm_value *v)
{
    if (v->kind == RX_V_TENSOR) {
        rx_rt_tensor *t = v->u.t;
        if (rx_rt_ref_drop(&t->refs)) {
            cache_storage_release(c, t->storage);
            t->next_free = c->tensors;
            c->tensors = t;
            RX_RT_POISON((char *)t + sizeof t->next_free, sizeof *t - sizeof t->next_free);
        }
    } else if (v->kind == RX_V_STORAGE) {
        cache_storage_release(c, v->u.st);
    } else {
        rx_vm_value_release(v);
        return;
    }
    v->kind = RX_V_NONE;
    v->u.i = 0;
}
