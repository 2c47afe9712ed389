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

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

rx_dev *rx_dev_open(int32_t dl_type, int32_t id, rx_rt_err *err)
{
    if (dl_type == kDLOpenCL) return rx_dev_opencl_open(id, err);
    if (dl_type == kDLVulkan) return rx_dev_vulkan_open(id, err);
    if (dl_type == kDLCUDA) return rx_dev_cuda_open(id, err);
    rx_rt_fail(err, "device type %d (%s) is not supported by this runtime (supported: "
               "OpenCL, Vulkan, CUDA)",
               (int)dl_type, rx_dev_type_name(dl_type));
    return NULL;
}

void rx_dev_close(rx_dev *d)
{
    if (!d) return;
    rx_dev_buf_flush(d); /* the cached buffers of freed storages (device_cache.c) */
    d->ops->close(d);
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
    case kDLMetal: return "Metal";
    case kDLROCM: return "ROCm";
    default: return "?";
    }
}

/* ---- what the backends share ---- */

rx_dev *rx_dev_alloc(const char *api, int32_t id, size_t impl_size, rx_rt_err *err)
{
    if (id < 0) {
        rx_rt_fail(err, "no %s device %d (device ids start at 0)", api, (int)id);
        return NULL;
    }
    rx_dev *d = calloc(1, sizeof *d);
    void *impl = calloc(1, impl_size);
    if (!d || !impl) {
        free(d);
        free(impl);
        rx_rt_fail(err, "out of memory");
        return NULL;
    }
    d->impl = impl;
    return d;
}

void rx_dev_free_shell(rx_dev *d)
{
    free(d->impl);
    free(d);
}

void *rx_dev_load_lib(const char *api, const char *env, const char *deflt, const char **used,
                      rx_rt_err *err)
{
    const char *name = getenv(env);
    if (!name || !*name) name = deflt;
    *used = name;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) rx_rt_fail(err, "no %s device: cannot load %s (%s)", api, name, dlerror());
    return lib;
}

int rx_dev_launch_shape(const rx_dev *d, const char *kernel, int ndim, const size_t *global,
                        const size_t *local, rx_rt_err *err)
{
    const char *api = d->ops->api;
    if (ndim < 1 || ndim > 3) return rx_rt_fail(err, "%s: kernel %s: %d grid dimensions", api, kernel, ndim);
    size_t threads = 1;
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (local && (local[i] == 0 || global[i] % local[i]))
            return rx_rt_fail(err, "%s: kernel %s: global size %zu is not a multiple of the "
                              "group size %zu (dimension %d)", api, kernel, global[i], local[i], i);
        if (local) threads *= local[i];
        if (global[i] == 0) empty = true;
    }
    if (!empty && (int64_t)threads > d->info.max_threads)
        return rx_rt_fail(err, "%s: kernel %s: %zu work-items per group, more than the device's "
                          "limit of %lld", api, kernel, threads, (long long)d->info.max_threads);
    return empty ? 1 : 0;
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

const char *rx_code_name_of(const rx_code_name *t, size_t n, int code, const char *deflt)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].code == code) return t[i].name;
    return deflt;
}
