/*
 * device_vulkan_int.h — what the Vulkan device's two files share: the loader's function
 * table, the device state and the objects behind device.h's handles.
 *
 *   device_vulkan.c          loading, opening, recording and submitting, buffers
 *   device_vulkan_kernels.c  SPIR-V bundles, kernels and their checks, pipelines, launches
 *
 * Only for builds with <vulkan/vulkan.h> (RX_HAVE_VULKAN).
 */
#ifndef RELAX_DEVICE_VULKAN_INT_H
#define RELAX_DEVICE_VULKAN_INT_H

#include "relax/device.h"

#include "rt_int.h"
#include "spirv_reflect.h"

#include <pthread.h>

#define VK_NO_PROTOTYPES 1
#include <dlfcn.h>
#include <link.h>
#include <vulkan/vulkan.h>

#define VK_INST_FUNCS(X)                                                                    \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)     \
    X(vkGetPhysicalDeviceFeatures) X(vkGetPhysicalDeviceQueueFamilyProperties)              \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define VK_DEV_FUNCS(X)                                                                     \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkCreateBuffer)            \
    X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) \
    X(vkBindBufferMemory) X(vkMapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)   \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) \
    X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)             \
    X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool)           \
    X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateCommandPool)            \
    X(vkDestroyCommandPool) X(vkResetCommandPool) X(vkAllocateCommandBuffers)               \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline)                      \
    X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) \
    X(vkCmdCopyBuffer) X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence)                  \
    X(vkWaitForFences) X(vkResetFences)

#define VK_PTR(f) PFN_##f f;
typedef struct vk_api {
    void *lib; /* dlopen handle */
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    PFN_vkCreateInstance vkCreateInstance;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion; /* NULL: a 1.0 loader */
    PFN_vkGetPhysicalDeviceFeatures2 vkGetPhysicalDeviceFeatures2; /* NULL before 1.1 */
    PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2;
    VK_INST_FUNCS(VK_PTR)
    VK_DEV_FUNCS(VK_PTR)
} vk_api;
#undef VK_PTR

#define VK_MAX_SETS 512       /* descriptor sets per pool, then a submit */
#define VK_MAX_DESCS 4096     /* storage-buffer descriptors per pool */
#define VK_STAGING (4u << 20) /* staging buffer bytes */
#define VK_PIPES 8            /* pipelines (work-group sizes) per kernel */

typedef struct vk_dev {
    vk_api vk;
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue q;
    uint32_t api;                 /* the Vulkan version in use (device and instance) */
    VkPhysicalDeviceLimits lim;   /* the device's limits */
    VkPhysicalDeviceMemoryProperties mem;
    bool staging_only;            /* RX_VULKAN_STAGING=1: never map buffers */
    uint32_t feat;                /* FEAT_* enabled */
    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool dpool;
    bool recording;               /* cmd is begun */
    int ncmds;                    /* commands recorded since begin */
    int sets, descs;              /* descriptor sets and buffers taken from dpool */
    rx_dev_buf *staging;          /* lazily made, VK_STAGING bytes, mapped */
    pthread_mutex_t mu;           /* everything */
} vk_dev;

enum { FEAT_INT64 = 1, FEAT_INT16 = 2, FEAT_FLOAT64 = 4, FEAT_INT8 = 8, FEAT_FLOAT16 = 16,
       FEAT_SB8 = 32, FEAT_SB16 = 64 };

struct rx_dev_buf {
    VkBuffer b;
    VkDeviceMemory m;
    void *map;   /* host address of the whole buffer, NULL: device-local (staging) */
    size_t size; /* bytes asked for */
};

enum { VK_NAME_MAX = 256 }; /* a kernel's name with its NUL (the artifact allows 255 bytes) */

typedef struct vk_module {
    char name[VK_NAME_MAX]; /* the kernel's name */
    char entry[64]; /* its entry point in the module */
    uint32_t *w;   /* the module, nw words */
    size_t nw;
} vk_module;

struct rx_dev_program {
    vk_module *mods;
    int n;
};

struct rx_dev_kernel {
    char name[VK_NAME_MAX];
    vk_module mod;              /* a copy: the kernel outlives its program */
    rx_spv_info info;           /* what the module declares, at its default size */
    VkShaderModule sm;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout pl;
    struct {
        uint32_t local[3];
        VkPipeline p;
    } pipes[VK_PIPES];
    int npipes;
};

static inline vk_dev *V(rx_dev *d) { return d->impl; }


/* ---- device_vulkan.c, for device_vulkan_kernels.c ---- */

const char *rxvk_err(VkResult rc);                   /* "VK_ERROR_..." */
int rxvk_begin(vk_dev *c, rx_rt_err *err);           /* cmd recording (under c->mu) */
int rxvk_flush(vk_dev *c, rx_rt_err *err);           /* submit what is recorded, wait */

/* ---- device_vulkan_kernels.c: the device.h operations on programs and kernels ---- */

int rxvk_build(rx_dev *d, const char *src, size_t n, rx_dev_program **out, rx_rt_err *err);
void rxvk_program_free(rx_dev *d, rx_dev_program *p);
int rxvk_get_kernel(rx_dev *d, rx_dev_program *p, const char *name, rx_dev_kernel **out,
                    rx_rt_err *err);
void rxvk_kernel_free(rx_dev *d, rx_dev_kernel *k);
int rxvk_launch(rx_dev *d, rx_dev_kernel *k, const rx_dev_arg *args, int nargs, int ndim,
                const size_t *global, const size_t *local, rx_rt_err *err);

#endif
