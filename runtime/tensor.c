/*
 * tensor.c — storages and tensors: reference-counted DLTensor views of device memory.
 *
 * A storage is the unit of allocation (Figure 5's alloc_storage); tensors are views
 * into one storage at a byte offset and keep it alive. Storages come from the
 * context's pool or wrap the artifact buffer (constants). Tensors without a storage
 * borrow the caller's memory for the duration of a call. All tensors the runtime makes
 * are dense, row-major (dl.strides NULL) and on kDLCPU device 0.
 */
#include "rt_int.h"

#include <stdlib.h>
#include <string.h>

DLDataType rx_rt_dtype_unpack(uint32_t packed)
{
    DLDataType t;
    t.code = (uint8_t)(packed & 0xff);
    t.bits = (uint8_t)((packed >> 8) & 0xff);
    t.lanes = (uint16_t)(packed >> 16);
    if (t.lanes == 0) t.lanes = 1;
    return t;
}

uint32_t rx_rt_dtype_pack(DLDataType t)
{
    return RX_RXA_DTYPE(t.code, t.bits, t.lanes);
}

int64_t rx_rt_dense_bytes(DLDataType dtype, int32_t ndim, const int64_t *shape)
{
    int64_t n = (int64_t)rx_rxa_dtype_bytes(rx_rt_dtype_pack(dtype));
    if (n == 0) return -1;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n)) return -1;
    }
    return n;
}

rx_rt_storage *rx_rt_storage_new(rx_rt_ctx *ctx, size_t nbytes)
{
    rx_rt_storage *s = malloc(sizeof *s);
    if (!s) return NULL;
    s->block = rx_rt_pool_get(&ctx->pool, nbytes);
    if (!s->block) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->kind = RX_STORAGE_POOL;
    s->ctx = ctx;
    s->data = s->block->data;
    s->nbytes = nbytes;
    return s;
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
    atomic_fetch_add(&s->refs, 1);
}

void rx_rt_storage_release(rx_rt_storage *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    if (s->kind == RX_STORAGE_POOL)
        rx_rt_pool_put(&s->ctx->pool, s->block, s->nbytes);
    else
        free(s->data);
    free(s);
}

static bool valid_dtype(DLDataType t)
{
    return t.code <= kDLComplex && t.bits > 0 && t.lanes > 0;
}

rx_rt_tensor *rx_rt_tensor_view(rx_rt_storage *s, size_t offset, DLDataType dtype,
                                int32_t ndim, const int64_t *shape, rx_rt_err *err)
{
    if (!valid_dtype(dtype) || ndim < 0 || ndim > RX_RXA_MAX_NDIM) {
        rx_rt_fail(err, "bad tensor dtype or ndim %d", (int)ndim);
        return NULL;
    }
    int64_t bytes = rx_rt_dense_bytes(dtype, ndim, shape);
    if (bytes < 0) {
        rx_rt_fail(err, "bad tensor shape (negative or overflowing dims)");
        return NULL;
    }
    if (offset > s->nbytes || (uint64_t)bytes > s->nbytes - offset) {
        rx_rt_fail(err, "tensor of %lld bytes at offset %zu does not fit in storage of %zu bytes",
                   (long long)bytes, offset, s->nbytes);
        return NULL;
    }
    rx_rt_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    rx_rt_storage_retain(s);
    t->storage = s;
    if (ndim) memcpy(t->shape_, shape, sizeof *shape * (size_t)ndim);
    t->dl.data = s->data;
    t->dl.byte_offset = offset;
    t->dl.device.device_type = kDLCPU;
    t->dl.device.device_id = 0;
    t->dl.ndim = ndim;
    t->dl.dtype = dtype;
    t->dl.shape = t->shape_;
    t->dl.strides = NULL;
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
    atomic_fetch_add(&t->refs, 1);
}

void rx_rt_tensor_release(rx_rt_tensor *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    rx_rt_storage_release(t->storage);
    free(t);
}
