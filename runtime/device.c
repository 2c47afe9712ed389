/*
 * device.c — opening devices by DLPack type, and tensors on devices (device.h).
 *
 * A device tensor is a heap block holding the DLTensor and its shape: data is the
 * device buffer, device {type, id} says whose, strides NULL (compact, row-major),
 * byte_offset 0. Copies between host and device check dtype and shape first, so a
 * mismatch is an error naming both rather than a short or long copy.
 */
#include "relax/device.h"

#include "rt_int.h"

#include <stdlib.h>
#include <string.h>

rx_dev *rx_dev_open(int32_t dl_type, int32_t id, rx_rt_err *err)
{
    if (dl_type == kDLOpenCL) return rx_dev_opencl_open(id, err);
    if (dl_type == kDLCUDA) return rx_dev_cuda_open(id, err);
    rx_rt_fail(err, "device type %d (%s) is not supported by this runtime (supported: OpenCL, CUDA)",
               (int)dl_type, rx_dev_type_name(dl_type));
    return NULL;
}

void rx_dev_close(rx_dev *d)
{
    if (d) d->ops->close(d);
}

int32_t rx_dev_type_of_target(const char *kind)
{
    static const struct {
        const char *kind;
        int32_t type;
    } map[] = {{"cpu", kDLCPU}, {"opencl", kDLOpenCL}, {"vulkan", kDLVulkan}, {"cuda", kDLCUDA}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(kind, map[i].kind)) return map[i].type;
    return -1;
}

const char *rx_dev_type_name(int32_t dl_type)
{
    switch (dl_type) {
    case kDLCPU: return "CPU";
    case kDLOpenCL: return "OpenCL";
    case kDLVulkan: return "Vulkan";
    case kDLCUDA: return "CUDA";
    default: return "?";
    }
}

/* ---- tensors ---- */

typedef struct dev_tensor {
    DLTensor dl;
    int64_t shape[RX_RXA_MAX_NDIM];
} dev_tensor;

DLTensor *rx_dev_tensor_new(rx_dev *d, DLDataType dtype, int32_t ndim, const int64_t *shape,
                            rx_rt_err *err)
{
    int64_t bytes = ndim >= 0 && ndim <= RX_RXA_MAX_NDIM ? rx_rt_dense_bytes(dtype, ndim, shape) : -1;
    if (bytes < 0) {
        rx_rt_fail(err, "bad dtype or shape for a device tensor (ndim %d)", (int)ndim);
        return NULL;
    }
    dev_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    rx_dev_buf *b;
    if (d->ops->alloc(d, (size_t)bytes, &b, err)) {
        free(t);
        return NULL;
    }
    if (ndim) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->dl.data = b;
    t->dl.device = (DLDevice){(DLDeviceType)d->info.dl_type, d->info.id};
    t->dl.ndim = ndim;
    t->dl.dtype = dtype;
    t->dl.shape = t->shape;
    return &t->dl;
}

void rx_dev_tensor_free(rx_dev *d, DLTensor *t)
{
    if (!t) return;
    d->ops->free(d, t->data);
    free((dev_tensor *)t);
}

rx_dev_buf *rx_dev_tensor_buf(const DLTensor *t)
{
    return t->data;
}

/* Whether t's strides (if any) are row-major compact. */
static bool compact(const DLTensor *t)
{
    int64_t want = 1;
    for (int32_t i = t->ndim - 1; t->strides && i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != want) return false;
        want *= t->shape[i];
    }
    return true;
}

/* The bytes of the compact tensors a (device) and b (CPU) when they match, else -1. */
static int64_t match(const DLTensor *dev, const DLTensor *cpu, rx_rt_err *err)
{
    bool same = dev->ndim == cpu->ndim && dev->dtype.code == cpu->dtype.code &&
                dev->dtype.bits == cpu->dtype.bits && dev->dtype.lanes == cpu->dtype.lanes;
    for (int32_t i = 0; same && i < dev->ndim; i++) same = dev->shape[i] == cpu->shape[i];
    if (!same) {
        rx_rt_fail(err, "device copy: the tensors differ in dtype or shape");
        return -1;
    }
    if (cpu->device.device_type != kDLCPU) {
        rx_rt_fail(err, "device copy: the host tensor is not on the CPU");
        return -1;
    }
    if (!compact(cpu)) {
        rx_rt_fail(err, "device copy: the host tensor is not compact");
        return -1;
    }
    return rx_rt_dense_bytes(dev->dtype, dev->ndim, dev->shape);
}

int rx_dev_tensor_upload(rx_dev *d, DLTensor *dst, const DLTensor *src, rx_rt_err *err)
{
    int64_t n = match(dst, src, err);
    if (n < 0) return -1;
    return d->ops->upload(d, dst->data, 0, (const char *)src->data + src->byte_offset, (size_t)n, err);
}

int rx_dev_tensor_download(rx_dev *d, DLTensor *dst, const DLTensor *src, rx_rt_err *err)
{
    int64_t n = match(src, dst, err);
    if (n < 0) return -1;
    return d->ops->download(d, (char *)dst->data + dst->byte_offset, src->data, 0, (size_t)n, err);
}
