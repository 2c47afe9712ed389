/*
 * device_vulkan.c — the Vulkan device (device.h), with the loader opened by dlopen.
 *
 * The Vulkan headers give the types (VK_NO_PROTOTYPES); the functions come from
 * dlopen("libvulkan.so.1") ($RX_VULKAN_LIB overrides the name): vkGetInstanceProcAddr
 * by dlsym, the instance's functions through it, the device's through
 * vkGetDeviceProcAddr, all into one table per device (`vk`). The runtime links no GPU
 * library; a host without the loader, a driver or a device fails when a Vulkan device
 * is opened, with "no Vulkan device: ..." naming what is missing.
 *
 * Opening: an instance (the highest of the loader's version and 1.3), its physical
 * devices in the loader's order (device `id` is the id-th), the first queue family
 * that computes, and a logical device with the shader features the device has among
 * shaderInt64, shaderInt16, shaderFloat64 and, on Vulkan 1.2, shaderInt8,
 * shaderFloat16 and 8/16-bit storage-buffer access. A module that declares a
 * capability whose feature the device lacks is refused by `kernel` with its name
 * ("needs shaderInt64, which the device lacks").
 *
 * Limits (rx_dev_info, read at open): max_threads = maxComputeWorkGroupInvocations,
 * max_local_bytes = maxComputeSharedMemorySize, max_alloc_bytes = the least of
 * maxStorageBufferRange (every buffer is bound whole as one storage buffer),
 * maxMemoryAllocationSize and the largest device-local heap, global_bytes = that heap,
 * align_bytes = minStorageBufferOffsetAlignment, max_push_bytes = maxPushConstantsSize.
 *
 * Memory. A buffer is one VkBuffer with its own VkDeviceMemory. When the device has a
 * memory type that is device-local, host-visible and host-coherent (lavapipe, and
 * integrated or resizable-BAR GPUs), buffers live there, mapped for their lifetime, and
 * upload/download are memcpy after the queue is idle: no staging copy. Otherwise (or
 * with RX_VULKAN_STAGING=1, which the tests use to run the other path on lavapipe)
 * buffers are device-local only and upload/download go through one host-visible
 * staging buffer of 4 MiB, chunk by chunk, each chunk a vkCmdCopyBuffer and a wait.
 *
 * Programs and kernels. `build` takes SPIR-V, not source (device.h, "SPIR-V bundle"):
 * it checks the bundle's structure and keeps a copy of each module. `kernel` reads the
 * module (spirv_reflect.c) and checks it against the launch ABI and the device — SPIR-V
 * version, capabilities, storage buffers at set 0 bindings 0..n-1 (at most
 * maxPerStageDescriptorStorageBuffers), the push-constant block within
 * maxPushConstantsSize, shared memory within maxComputeSharedMemorySize — then makes the
 * shader module, a descriptor-set layout of n storage buffers and a pipeline layout
 * with one push-constant range. A compute pipeline is made per work-group size at the
 * first launch with it (the size is specialization constants, device.h "Vulkan launch
 * ABI"), its shared memory checked again at that size; a kernel keeps up to 8.
 *
 * Launches are recorded, not run: one command buffer collects dispatches and copies,
 * with a global memory barrier between consecutive commands (so they run as if in
 * order, like OpenCL's in-order queue), each dispatch with its own descriptor set from
 * one pool. `sync`, `upload`, `download`, `free` and `kernel_free` first submit what is
 * recorded and wait on a fence (then reset the command and descriptor pools); a full
 * descriptor pool (512 sets, 4096 buffers) submits too. So a call's kernels cost one
 * submit at its sync, and errors the driver reports at execution surface there.
 * Everything runs under the device's mutex.
 *
 * Built without <vulkan/vulkan.h>, rx_dev_vulkan_open always fails with "Vulkan support
 * was not built". Programs, kernels and launches are in device_vulkan_kernels.c; what
 * the two files share (the function table, vk_dev, the handles' structs) in
 * device_vulkan_int.h.
 */
#define _GNU_SOURCE 1 /* dl_iterate_phdr, RTLD_NODELETE */
#include "relax/device.h"

#include "rt_int.h"
#include "spirv_reflect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<vulkan/vulkan.h>)
#define RX_HAVE_VULKAN 1
#endif
#endif

#ifndef RX_HAVE_VULKAN

rx_dev *rx_dev_vulkan_open(int32_t id, rx_rt_err *err)
{
    (void)id;
    rx_rt_fail(err, "no Vulkan device: Vulkan support was not built (no vulkan/vulkan.h at build time)");
    return NULL;
}

#else

#include "device_vulkan_int.h"

/* ---- loading and opening ---- */

static int load_api(vk_api *a, rx_rt_err *err)
{
    const char *name;
    a->lib = rx_dev_load_lib("Vulkan", "RX_VULKAN_LIB", "libvulkan.so.1", &name, err);
    if (!a->lib) return -1;
    *(void **)&a->vkGetInstanceProcAddr = dlsym(a->lib, "vkGetInstanceProcAddr");
    if (!a->vkGetInstanceProcAddr) {
        dlclose(a->lib);
        return rx_rt_fail(err, "no Vulkan device: %s lacks vkGetInstanceProcAddr", name);
    }
    a->vkCreateInstance = (PFN_vkCreateInstance)a->vkGetInstanceProcAddr(NULL, "vkCreateInstance");
    a->vkEnumerateInstanceVersion =
        (PFN_vkEnumerateInstanceVersion)a->vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (!a->vkCreateInstance) return rx_rt_fail(err, "no Vulkan device: %s lacks vkCreateInstance", name);
    return 0;
}

/* a->f from get(h, "f"), or a failure naming who lacks it */
#define VK_SYM(get, h, who, f)                                                              \
    a->f = (PFN_##f)a->get(h, #f);                                                          \
    if (!a->f) return rx_rt_fail(err, "no Vulkan device: the %s lacks %s", who, #f);

static int load_instance(vk_api *a, VkInstance inst, rx_rt_err *err)
{
#define VK_ISYM(f) VK_SYM(vkGetInstanceProcAddr, inst, "loader", f)
    VK_INST_FUNCS(VK_ISYM)
#undef VK_ISYM
    a->vkGetPhysicalDeviceFeatures2 =
        (PFN_vkGetPhysicalDeviceFeatures2)a->vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceFeatures2");
    a->vkGetPhysicalDeviceProperties2 =
        (PFN_vkGetPhysicalDeviceProperties2)a->vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceProperties2");
    return 0;
}

static int load_device(vk_api *a, VkDevice dev, rx_rt_err *err)
{
#define VK_DSYM(f) VK_SYM(vkGetDeviceProcAddr, dev, "driver", f)
    VK_DEV_FUNCS(VK_DSYM)
#undef VK_DSYM
    return 0;
}

/* ---- keeping drivers loaded ----
 * The loader unloads a driver when its last instance goes. Mesa's drivers keep
 * process-wide state (lavapipe its LLVM JIT) that then dangles, and loading one again
 * initializes it again, so every shared object that vkCreateInstance brought in is
 * pinned (RTLD_NODELETE): drivers stay loaded for the process, as the OpenCL ICD
 * loader does. */

#define VK_MAX_OBJS 512

typedef struct obj_list {
    char *names[VK_MAX_OBJS];
    int n;
} obj_list;

static int note_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    obj_list *l = arg;
    if (info->dlpi_name && info->dlpi_name[0] && l->n < VK_MAX_OBJS) l->names[l->n++] = strdup(info->dlpi_name);
    return 0;
}

static void drop_objs(obj_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    l->n = 0;
}

/* Pins the objects loaded now that `before` did not list. */
static void pin_new_objs(obj_list *before)
{
    obj_list *now = calloc(1, sizeof *now);
    if (!now) return;
    dl_iterate_phdr(note_obj, now);
    for (int i = 0; i < now->n; i++) {
        bool old = false;
        for (int j = 0; j < before->n && !old; j++) old = before->names[j] && !strcmp(now->names[i], before->names[j]);
        void *h = old ? NULL : dlopen(now->names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (h) dlclose(h); /* the reference goes; RTLD_NODELETE stays */
    }
    drop_objs(now);
    free(now);
}

static int make_instance(vk_dev *c, rx_rt_err *err)
{
    uint32_t v = VK_API_VERSION_1_0;
    if (c->vk.vkEnumerateInstanceVersion) c->vk.vkEnumerateInstanceVersion(&v);
    if (v > VK_API_VERSION_1_3) v = VK_API_VERSION_1_3;
    c->api = v;
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "relax", 1, "relax", 1, v};
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    obj_list *before = calloc(1, sizeof *before);
    if (!before) return rx_rt_fail(err, "out of memory");
    dl_iterate_phdr(note_obj, before);
    VkResult rc = c->vk.vkCreateInstance(&ci, NULL, &c->inst);
    if (rc == VK_SUCCESS) pin_new_objs(before);
    drop_objs(before);
    free(before);
    if (rc != VK_SUCCESS) {
        c->inst = VK_NULL_HANDLE;
        return rx_rt_fail(err, "no Vulkan device: no driver (vkCreateInstance: %d)", (int)rc);
    }
    return load_instance(&c->vk, c->inst, err);
}

static int find_device(vk_dev *c, int32_t id, rx_rt_err *err)
{
    VkPhysicalDevice ps[16];
    uint32_t n = 16;
    VkResult rc = c->vk.vkEnumeratePhysicalDevices(c->inst, &n, ps);
    if ((rc != VK_SUCCESS && rc != VK_INCOMPLETE) || n == 0)
        return rx_rt_fail(err, "no Vulkan device: no physical device (vkEnumeratePhysicalDevices: "
                          "%d, %u devices)", (int)rc, n);
    if (id >= (int32_t)n)
        return rx_rt_fail(err, "no Vulkan device %d (this host has %u: 0..%u)", (int)id, n, n - 1);
    c->phys = ps[id];
    return 0;
}

/* Enables the shader features the device has; fills c->feat. */
static int make_device(vk_dev *c, int32_t id, rx_rt_err *err)
{
    VkPhysicalDeviceProperties p;
    c->vk.vkGetPhysicalDeviceProperties(c->phys, &p);
    if (p.apiVersion < c->api) c->api = p.apiVersion;
    uint32_t nq = 16;
    VkQueueFamilyProperties qs[16];
    c->vk.vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &nq, qs);
    uint32_t fam = UINT32_MAX;
    for (uint32_t i = 0; i < nq && i < 16 && fam == UINT32_MAX; i++)
        if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) fam = i;
    if (fam == UINT32_MAX) return rx_rt_fail(err, "no Vulkan device: device %d has no compute queue", (int)id);

    VkPhysicalDeviceFeatures have, want = {0};
    c->vk.vkGetPhysicalDeviceFeatures(c->phys, &have);
    want.shaderInt64 = have.shaderInt64;
    want.shaderInt16 = have.shaderInt16;
    want.shaderFloat64 = have.shaderFloat64;
    c->feat = (have.shaderInt64 ? FEAT_INT64 : 0) | (have.shaderInt16 ? FEAT_INT16 : 0) |
              (have.shaderFloat64 ? FEAT_FLOAT64 : 0);
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = NULL};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f11};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12, want};
    bool v12 = c->api >= VK_API_VERSION_1_2 && c->vk.vkGetPhysicalDeviceFeatures2;
    if (v12) {
        VkPhysicalDeviceVulkan11Features h11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = NULL};
        VkPhysicalDeviceVulkan12Features h12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &h11};
        VkPhysicalDeviceFeatures2 h2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &h12};
        c->vk.vkGetPhysicalDeviceFeatures2(c->phys, &h2);
        f11.storageBuffer16BitAccess = h11.storageBuffer16BitAccess;
        f12.storageBuffer8BitAccess = h12.storageBuffer8BitAccess;
        f12.shaderInt8 = h12.shaderInt8;
        f12.shaderFloat16 = h12.shaderFloat16;
        c->feat |= (h11.storageBuffer16BitAccess ? FEAT_SB16 : 0) |
                   (h12.storageBuffer8BitAccess ? FEAT_SB8 : 0) | (h12.shaderInt8 ? FEAT_INT8 : 0) |
                   (h12.shaderFloat16 ? FEAT_FLOAT16 : 0);
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, fam, 1, &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, v12 ? &f2 : NULL, 0, 1, &qci,
                              0, NULL, 0, NULL, v12 ? NULL : &want};
    VkResult rc = c->vk.vkCreateDevice(c->phys, &dci, NULL, &c->dev);
    if (rc != VK_SUCCESS) {
        c->dev = VK_NULL_HANDLE;
        return rx_rt_fail(err, "no Vulkan device: device %d cannot be opened (vkCreateDevice: %d)",
                          (int)id, (int)rc);
    }
    if (load_device(&c->vk, c->dev, err)) return -1;
    c->vk.vkGetDeviceQueue(c->dev, fam, 0, &c->q);
    VkCommandPoolCreateInfo cp = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, fam};
    VkCommandBufferAllocateInfo ca = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL,
                                      VK_NULL_HANDLE, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkFenceCreateInfo fc = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_MAX_DESCS};
    VkDescriptorPoolCreateInfo dp = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0,
                                     VK_MAX_SETS, 1, &ps};
    rc = c->vk.vkCreateCommandPool(c->dev, &cp, NULL, &c->cpool);
    if (rc == VK_SUCCESS) {
        ca.commandPool = c->cpool;
        rc = c->vk.vkAllocateCommandBuffers(c->dev, &ca, &c->cmd);
    }
    if (rc == VK_SUCCESS) rc = c->vk.vkCreateFence(c->dev, &fc, NULL, &c->fence);
    if (rc == VK_SUCCESS) rc = c->vk.vkCreateDescriptorPool(c->dev, &dp, NULL, &c->dpool);
    if (rc != VK_SUCCESS)
        return rx_rt_fail(err, "no Vulkan device: device %d: cannot make its command pool, fence "
                          "or descriptor pool (%d)", (int)id, (int)rc);
    return 0;
}

static void fill_info(vk_dev *c, rx_dev_info *in)
{
    VkPhysicalDeviceProperties p;
    c->vk.vkGetPhysicalDeviceProperties(c->phys, &p);
    c->lim = p.limits;
    c->vk.vkGetPhysicalDeviceMemoryProperties(c->phys, &c->mem);
    snprintf(in->name, sizeof in->name, "%.*s", (int)sizeof in->name - 1, p.deviceName);
    snprintf(in->platform, sizeof in->platform, "Vulkan %u.%u.%u", VK_API_VERSION_MAJOR(p.apiVersion),
             VK_API_VERSION_MINOR(p.apiVersion), VK_API_VERSION_PATCH(p.apiVersion));
    int64_t heap = 0;
    for (uint32_t i = 0; i < c->mem.memoryHeapCount; i++)
        if ((c->mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            (int64_t)c->mem.memoryHeaps[i].size > heap)
            heap = (int64_t)c->mem.memoryHeaps[i].size;
    int64_t most = p.limits.maxStorageBufferRange;
    if (c->api >= VK_API_VERSION_1_1 && c->vk.vkGetPhysicalDeviceProperties2) {
        VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, .pNext = NULL};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
        c->vk.vkGetPhysicalDeviceProperties2(c->phys, &p2);
        if (m3.maxMemoryAllocationSize && (int64_t)m3.maxMemoryAllocationSize < most)
            most = (int64_t)m3.maxMemoryAllocationSize;
    }
    if (heap && heap < most) most = heap;
    in->max_threads = p.limits.maxComputeWorkGroupInvocations;
    in->max_local_bytes = p.limits.maxComputeSharedMemorySize;
    in->max_alloc_bytes = most;
    in->global_bytes = heap;
    in->align_bytes = (int64_t)p.limits.minStorageBufferOffsetAlignment;
    in->max_push_bytes = p.limits.maxPushConstantsSize;
}

/* ---- recording and submitting ---- */

const char *rxvk_err(VkResult rc)
{
    switch (rc) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    default: return "error";
    }
}

/* Begins the command buffer if needed and, after an earlier command, records a barrier
 * that orders every shader and transfer access before it with those after. */
int rxvk_begin(vk_dev *c, rx_rt_err *err)
{
    if (!c->recording) {
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                       VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
        VkResult rc = c->vk.vkBeginCommandBuffer(c->cmd, &bi);
        if (rc != VK_SUCCESS) return rx_rt_fail(err, "Vulkan: vkBeginCommandBuffer: %s (%d)", rxvk_err(rc), (int)rc);
        c->recording = true;
        c->ncmds = 0;
        return 0;
    }
    if (c->ncmds) {
        VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL,
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                  VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
        VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
        c->vk.vkCmdPipelineBarrier(c->cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
    }
    return 0;
}

/* Submits what is recorded and waits for it; resets the pools. */
int rxvk_flush(vk_dev *c, rx_rt_err *err)
{
    if (!c->recording) return 0;
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL,
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          VK_ACCESS_HOST_READ_BIT};
    c->vk.vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    c->recording = false;
    VkResult rc = c->vk.vkEndCommandBuffer(c->cmd);
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &c->cmd, 0, NULL};
    if (rc == VK_SUCCESS) rc = c->vk.vkQueueSubmit(c->q, 1, &si, c->fence);
    if (rc == VK_SUCCESS) rc = c->vk.vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
    c->vk.vkResetFences(c->dev, 1, &c->fence);
    c->vk.vkResetCommandPool(c->dev, c->cpool, 0);
    c->vk.vkResetDescriptorPool(c->dev, c->dpool, 0);
    c->sets = c->descs = 0;
    c->ncmds = 0;
    return rc == VK_SUCCESS ? 0 : rx_rt_fail(err, "Vulkan: running the queued work failed: %s (%d)",
                                             rxvk_err(rc), (int)rc);
}

/* ---- buffers ---- */

/* A memory type of bits with all of flags, or -1. */
static int mem_type(const vk_dev *c, uint32_t bits, VkMemoryPropertyFlags flags)
{
    for (uint32_t i = 0; i < c->mem.memoryTypeCount; i++)
        if ((bits >> i & 1) && (c->mem.memoryTypes[i].propertyFlags & flags) == flags) return (int)i;
    return -1;
}

/* A buffer of n bytes: mapped in host-visible device memory when `mapped` allows and
 * the device has it, else device-local. */
static int new_buffer(vk_dev *c, size_t n, bool mapped, rx_dev_buf **out, rx_rt_err *err)
{
    rx_dev_buf *b = calloc(1, sizeof *b);
    if (!b) return rx_rt_fail(err, "out of memory");
    b->size = n;
    size_t bytes = n < 4 ? 4 : (n + 3) & ~(size_t)3;
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, bytes,
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    VkResult rc = c->vk.vkCreateBuffer(c->dev, &bi, NULL, &b->b);
    if (rc != VK_SUCCESS) {
        free(b);
        return rx_rt_fail(err, "Vulkan: cannot allocate %zu bytes (vkCreateBuffer: %d)", n, (int)rc);
    }
    VkMemoryRequirements mr;
    c->vk.vkGetBufferMemoryRequirements(c->dev, b->b, &mr);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int t = mapped ? mem_type(c, mr.memoryTypeBits, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) : -1;
    if (t >= 0) {
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, mr.size, (uint32_t)t};
        rc = c->vk.vkAllocateMemory(c->dev, &ai, NULL, &b->m);
        if (rc == VK_SUCCESS && c->vk.vkMapMemory(c->dev, b->m, 0, VK_WHOLE_SIZE, 0, &b->map) != VK_SUCCESS) {
            c->vk.vkFreeMemory(c->dev, b->m, NULL);
            b->map = NULL;
            rc = VK_ERROR_MEMORY_MAP_FAILED;
        }
        if (rc != VK_SUCCESS) t = -1; /* that heap is full: try device-local */
    }
    if (t < 0) {
        t = mem_type(c, mr.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (t < 0) t = mem_type(c, mr.memoryTypeBits, 0);
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, mr.size, (uint32_t)t};
        rc = t < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : c->vk.vkAllocateMemory(c->dev, &ai, NULL, &b->m);
    }
    if (rc == VK_SUCCESS) rc = c->vk.vkBindBufferMemory(c->dev, b->b, b->m, 0);
    if (rc != VK_SUCCESS) {
        if (b->m) c->vk.vkFreeMemory(c->dev, b->m, NULL);
        c->vk.vkDestroyBuffer(c->dev, b->b, NULL);
        free(b);
        return rx_rt_fail(err, "Vulkan: cannot allocate %zu bytes: %s (%d)", n, rxvk_err(rc), (int)rc);
    }
    *out = b;
    return 0;
}

static void drop_buffer(vk_dev *c, rx_dev_buf *b)
{
    c->vk.vkDestroyBuffer(c->dev, b->b, NULL);
    c->vk.vkFreeMemory(c->dev, b->m, NULL); /* unmaps */
    free(b);
}

static int vk_alloc(rx_dev *d, size_t n, rx_dev_buf **out, rx_rt_err *err)
{
    if ((int64_t)n > d->info.max_alloc_bytes)
        return rx_rt_fail(err, "Vulkan: cannot allocate %zu bytes (the device's largest buffer is %lld "
                          "bytes: maxStorageBufferRange, maxMemoryAllocationSize, heap)", n,
                          (long long)d->info.max_alloc_bytes);
    vk_dev *c = V(d);
    return new_buffer(c, n, !c->staging_only, out, err);
}

static void vk_free(rx_dev *d, rx_dev_buf *b)
{
    if (!b) return;
    vk_dev *c = V(d);
    pthread_mutex_lock(&c->mu);
    rxvk_flush(c, NULL); /* recorded work may use b */
    drop_buffer(c, b);
    pthread_mutex_unlock(&c->mu);
}

static int span_ok(const rx_dev_buf *b, size_t off, size_t n, const char *what, rx_rt_err *err)
{
    if (off > b->size || n > b->size - off)
        return rx_rt_fail(err, "Vulkan: %s of %zu bytes at offset %zu overruns a buffer of %zu bytes",
                          what, n, off, b->size);
    return 0;
}

/* Copies n bytes between host memory and b at off through the staging buffer. */
static int staged(vk_dev *c, rx_dev_buf *b, size_t off, void *host, size_t n, bool up, rx_rt_err *err)
{
    if (!c->staging && new_buffer(c, VK_STAGING, true, &c->staging, err)) return -1;
    if (!c->staging->map) return rx_rt_fail(err, "Vulkan: the device has no host-visible memory for staging");
    for (size_t done = 0; done < n;) {
        size_t k = n - done < VK_STAGING ? n - done : VK_STAGING;
        if (up) memcpy(c->staging->map, (char *)host + done, k);
        VkBufferCopy r = {up ? 0 : off + done, up ? off + done : 0, k};
        if (rxvk_begin(c, err)) return -1;
        c->vk.vkCmdCopyBuffer(c->cmd, up ? c->staging->b : b->b, up ? b->b : c->staging->b, 1, &r);
        c->ncmds++;
        if (rxvk_flush(c, err)) return -1;
        if (!up) memcpy((char *)host + done, c->staging->map, k);
        done += k;
    }
    return 0;
}

static int vk_upload(rx_dev *d, rx_dev_buf *dst, size_t off, const void *src, size_t n, rx_rt_err *err)
{
    vk_dev *c = V(d);
    if (!n) return 0;
    if (span_ok(dst, off, n, "upload", err)) return -1;
    pthread_mutex_lock(&c->mu);
    int rc = rxvk_flush(c, err);
    if (!rc && dst->map) memcpy((char *)dst->map + off, src, n);
    else if (!rc) rc = staged(c, dst, off, (void *)(uintptr_t)src, n, true, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int vk_download(rx_dev *d, void *dst, rx_dev_buf *src, size_t off, size_t n, rx_rt_err *err)
{
    vk_dev *c = V(d);
    if (!n) return 0;
    if (span_ok(src, off, n, "download", err)) return -1;
    pthread_mutex_lock(&c->mu);
    int rc = rxvk_flush(c, err);
    if (!rc && src->map) memcpy(dst, (char *)src->map + off, n);
    else if (!rc) rc = staged(c, src, off, dst, n, false, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int vk_copy(rx_dev *d, rx_dev_buf *dst, size_t doff, rx_dev_buf *src, size_t soff, size_t n,
                   rx_rt_err *err)
{
    vk_dev *c = V(d);
    if (!n) return 0;
    if (span_ok(src, soff, n, "copy", err) || span_ok(dst, doff, n, "copy", err)) return -1;
    pthread_mutex_lock(&c->mu);
    int rc = rxvk_begin(c, err);
    if (!rc) {
        VkBufferCopy r = {soff, doff, n};
        c->vk.vkCmdCopyBuffer(c->cmd, src->b, dst->b, 1, &r);
        c->ncmds++;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int vk_sync(rx_dev *d, rx_rt_err *err)
{
    vk_dev *c = V(d);
    pthread_mutex_lock(&c->mu);
    int rc = rxvk_flush(c, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void vk_close(rx_dev *d)
{
    vk_dev *c = V(d);
    if (c->dev && c->cmd) { /* made whole: every function loaded */
        rxvk_flush(c, NULL);
        c->vk.vkDeviceWaitIdle(c->dev);
        if (c->staging) drop_buffer(c, c->staging);
        if (c->dpool) c->vk.vkDestroyDescriptorPool(c->dev, c->dpool, NULL);
        if (c->fence) c->vk.vkDestroyFence(c->dev, c->fence, NULL);
        if (c->cpool) c->vk.vkDestroyCommandPool(c->dev, c->cpool, NULL);
        c->vk.vkDestroyDevice(c->dev, NULL);
    } else if (c->dev && c->vk.vkDestroyDevice) {
        c->vk.vkDestroyDevice(c->dev, NULL);
    }
    if (c->inst && c->vk.vkDestroyInstance) c->vk.vkDestroyInstance(c->inst, NULL);
    pthread_mutex_destroy(&c->mu);
    /* the loader stays loaded: drivers do not all survive dlclose */
    rx_dev_free_shell(d);
}

static const rx_dev_ops vk_ops = {
    "Vulkan", vk_alloc, vk_free, vk_upload, vk_download, vk_copy, rxvk_build, rxvk_program_free,
    rxvk_get_kernel, rxvk_kernel_free, rxvk_launch, vk_sync, vk_close,
};

rx_dev *rx_dev_vulkan_open(int32_t id, rx_rt_err *err)
{
    rx_dev *d = rx_dev_alloc("Vulkan", id, sizeof(vk_dev), err);
    if (!d) return NULL;
    vk_dev *c = d->impl;
    if (load_api(&c->vk, err)) {
        rx_dev_free_shell(d);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    d->ops = &vk_ops;
    const char *st = getenv("RX_VULKAN_STAGING");
    c->staging_only = st && !strcmp(st, "1");
    if (make_instance(c, err) || find_device(c, id, err) || make_device(c, id, err)) {
        vk_close(d);
        return NULL;
    }
    fill_info(c, &d->info);
    d->info.dl_type = kDLVulkan;
    d->info.id = id;
    return d;
}

#endif
