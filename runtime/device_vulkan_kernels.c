/*
 * device_vulkan_kernels.c — the Vulkan device's programs, kernels and launches
 * (device_vulkan.c's essay describes the device; device_vulkan_int.h the shared state).
 * A program is a SPIR-V bundle read and checked here; a kernel is one of its modules,
 * checked against the device (SPIR-V version, features, bindings, push constants,
 * shared memory) before the driver sees it; a launch records a dispatch with its
 * pipeline for the work-group size.
 */
#include "relax/device.h"

#if defined(__has_include)
#if __has_include(<vulkan/vulkan.h>)
#define RX_HAVE_VULKAN 1
#endif
#endif

#ifdef RX_HAVE_VULKAN

#include "device_vulkan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- programs ---- */

/* Reads the bundle (or bare module) p[0..nw) into pr; 0 or -1 with err. */
static int read_bundle(const uint32_t *p, size_t nw, rx_dev_program *pr, rx_rt_err *err)
{
    if (nw >= 1 && p[0] == RX_SPV_MAGIC) { /* one module: its entry points by name */
        pr->mods = calloc(1, sizeof *pr->mods);
        if (!pr->mods || !(pr->mods[0].w = malloc(nw * 4))) return rx_rt_fail(err, "out of memory");
        memcpy(pr->mods[0].w, p, nw * 4);
        pr->mods[0].nw = nw;
        pr->n = 1;
        return 0;
    }
    if (nw < 3 || p[0] != RX_SPIRV_BUNDLE_MAGIC || p[1] != RX_SPIRV_BUNDLE_VERSION)
        return rx_rt_fail(err, "Vulkan: the program is neither SPIR-V nor a SPIR-V bundle (first "
                          "word %#x)", nw ? (unsigned)p[0] : 0u);
    if (p[2] > nw / 2) return rx_rt_fail(err, "Vulkan: malformed SPIR-V bundle: %u kernels", (unsigned)p[2]);
    pr->mods = calloc(p[2] ? p[2] : 1, sizeof *pr->mods);
    if (!pr->mods) return rx_rt_fail(err, "out of memory");
    size_t at = 3;
    for (uint32_t i = 0; i < p[2]; i++) {
        vk_module *m = &pr->mods[pr->n];
        size_t wn = at < nw ? p[at] : 0;
        if (wn == 0 || wn > VK_NAME_MAX / 4 || wn >= nw - at)
            return rx_rt_fail(err, "Vulkan: malformed SPIR-V bundle: kernel %u's name", (unsigned)i);
        memcpy(m->name, p + at + 1, wn * 4 < sizeof m->name ? wn * 4 : sizeof m->name);
        m->name[sizeof m->name - 1] = '\0';
        at += 1 + wn;
        size_t mn = at < nw ? p[at] : 0;
        if (mn < 5 || mn >= nw - at || p[at + 1] != RX_SPV_MAGIC)
            return rx_rt_fail(err, "Vulkan: malformed SPIR-V bundle: kernel %s's module", m->name);
        if (!(m->w = malloc(mn * 4))) return rx_rt_fail(err, "out of memory");
        memcpy(m->w, p + at + 1, mn * 4);
        m->nw = mn;
        snprintf(m->entry, sizeof m->entry, "main");
        pr->n++;
        at += 1 + mn;
    }
    return 0;
}

void rxvk_program_free(rx_dev *d, rx_dev_program *p)
{
    (void)d;
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->mods[i].w);
    free(p->mods);
    free(p);
}

int rxvk_build(rx_dev *d, const char *src, size_t n, rx_dev_program **out, rx_rt_err *err)
{
    if (n % 4) return rx_rt_fail(err, "Vulkan: the program is %zu bytes, not whole SPIR-V words", n);
    uint32_t *w = malloc(n ? n : 4);
    rx_dev_program *pr = calloc(1, sizeof *pr);
    if (!w || !pr) {
        free(w);
        free(pr);
        return rx_rt_fail(err, "out of memory");
    }
    memcpy(w, src, n);
    int rc = read_bundle(w, n / 4, pr, err);
    free(w);
    if (rc) {
        rxvk_program_free(d, pr);
        return -1;
    }
    *out = pr;
    return 0;
}

/* ---- kernels ---- */

/* The device feature a SPIR-V capability needs, or 0 when none is checked here. */
static const char *missing_feature(const vk_dev *c, uint32_t cap)
{
    static const struct {
        uint32_t cap, feat;
        const char *name;
    } need[] = {{11, FEAT_INT64, "shaderInt64"},  {10, FEAT_FLOAT64, "shaderFloat64"},
                {22, FEAT_INT16, "shaderInt16"},  {39, FEAT_INT8, "shaderInt8"},
                {9, FEAT_FLOAT16, "shaderFloat16"}, {4433, FEAT_SB16, "storageBuffer16BitAccess"},
                {4448, FEAT_SB8, "storageBuffer8BitAccess"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].cap == cap && !(c->feat & need[i].feat)) return need[i].name;
    return NULL;
}

/* The Vulkan version a SPIR-V version needs. */
static uint32_t vulkan_for(uint32_t spv)
{
    return spv <= 0x00010000u ? VK_API_VERSION_1_0 : spv <= 0x00010300u ? VK_API_VERSION_1_1
           : spv <= 0x00010500u ? VK_API_VERSION_1_2 : VK_API_VERSION_1_3;
}

/* Checks what kernel `name` declares (info) against the device. */
static int check_kernel(rx_dev *d, const char *name, const rx_spv_info *in, rx_rt_err *err)
{
    vk_dev *c = V(d);
    uint32_t need = vulkan_for(in->version);
    if (need > c->api)
        return rx_rt_fail(err, "Vulkan: kernel %s is SPIR-V %u.%u, which needs Vulkan %u.%u (the device "
                          "runs %u.%u)", name, in->version >> 16 & 0xff, in->version >> 8 & 0xff,
                          VK_API_VERSION_MAJOR(need), VK_API_VERSION_MINOR(need),
                          VK_API_VERSION_MAJOR(c->api), VK_API_VERSION_MINOR(c->api));
    for (int i = 0; i < in->ncaps; i++) {
        const char *f = missing_feature(c, in->caps[i]);
        if (f) return rx_rt_fail(err, "Vulkan: kernel %s needs %s, which the device lacks", name, f);
    }
    if (in->nbuf > (int)c->lim.maxPerStageDescriptorStorageBuffers || in->nbuf > VK_MAX_DESCS)
        return rx_rt_fail(err, "Vulkan: kernel %s binds %d storage buffers, more than the device's limit "
                          "of %u (maxPerStageDescriptorStorageBuffers)", name, in->nbuf,
                          c->lim.maxPerStageDescriptorStorageBuffers);
    if (in->push_bytes > d->info.max_push_bytes)
        return rx_rt_fail(err, "Vulkan: kernel %s has %lld bytes of push constants, more than the "
                          "device's limit of %lld (maxPushConstantsSize)", name,
                          (long long)in->push_bytes, (long long)d->info.max_push_bytes);
    if (in->shared_bytes > d->info.max_local_bytes)
        return rx_rt_fail(err, "Vulkan: kernel %s needs %lld bytes of shared memory (work-group size "
                          "%ux%ux%u), more than the device's limit of %lld (maxComputeSharedMemorySize)",
                          name, (long long)in->shared_bytes, in->local[0], in->local[1], in->local[2],
                          (long long)d->info.max_local_bytes);
    return 0;
}

static void drop_kernel(vk_dev *c, rx_dev_kernel *k)
{
    for (int i = 0; i < k->npipes; i++) c->vk.vkDestroyPipeline(c->dev, k->pipes[i].p, NULL);
    if (k->pl) c->vk.vkDestroyPipelineLayout(c->dev, k->pl, NULL);
    if (k->dsl) c->vk.vkDestroyDescriptorSetLayout(c->dev, k->dsl, NULL);
    if (k->sm) c->vk.vkDestroyShaderModule(c->dev, k->sm, NULL);
    free(k->mod.w);
    free(k);
}

int rxvk_get_kernel(rx_dev *d, rx_dev_program *p, const char *name, rx_dev_kernel **out,
                         rx_rt_err *err)
{
    vk_dev *c = V(d);
    const vk_module *m = NULL;
    for (int i = 0; i < p->n && !m; i++)
        if (p->mods[i].name[0] ? !strcmp(p->mods[i].name, name)
                               : rx_spv_has_entry(p->mods[i].w, p->mods[i].nw, name))
            m = &p->mods[i];
    if (!m) return rx_rt_fail(err, "Vulkan: no kernel %s in the program", name);
    const char *entry = m->name[0] ? m->entry : name;
    rx_dev_kernel *k = calloc(1, sizeof *k);
    if (!k || !(k->mod.w = malloc(m->nw * 4))) {
        free(k);
        return rx_rt_fail(err, "out of memory");
    }
    memcpy(k->mod.w, m->w, m->nw * 4);
    k->mod.nw = m->nw;
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->mod.entry, sizeof k->mod.entry, "%s", entry);
    rx_rt_err why;
    if (rx_spv_reflect(k->mod.w, k->mod.nw, entry, NULL, &k->info, &why)) {
        drop_kernel(c, k);
        return rx_rt_fail(err, "Vulkan: kernel %s: %s", name, why.msg);
    }
    if (check_kernel(d, name, &k->info, err)) {
        drop_kernel(c, k);
        return -1;
    }
    VkDescriptorSetLayoutBinding bs[RX_SPV_MAX_BUFS];
    for (int i = 0; i < k->info.nbuf; i++)
        bs[i] = (VkDescriptorSetLayoutBinding){(uint32_t)i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                               VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkShaderModuleCreateInfo si = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, k->mod.nw * 4, k->mod.w};
    VkDescriptorSetLayoutCreateInfo li = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0,
                                          (uint32_t)k->info.nbuf, bs};
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)((k->info.push_bytes + 3) & ~3)};
    VkPipelineLayoutCreateInfo pi = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, NULL,
                                     pr.size ? 1 : 0, &pr};
    VkResult rc = c->vk.vkCreateShaderModule(c->dev, &si, NULL, &k->sm);
    if (rc == VK_SUCCESS) rc = c->vk.vkCreateDescriptorSetLayout(c->dev, &li, NULL, &k->dsl);
    pi.pSetLayouts = &k->dsl;
    if (rc == VK_SUCCESS) rc = c->vk.vkCreatePipelineLayout(c->dev, &pi, NULL, &k->pl);
    if (rc != VK_SUCCESS) {
        drop_kernel(c, k);
        return rx_rt_fail(err, "Vulkan: kernel %s: cannot make its shader module or layout: %s (%d)",
                          name, rxvk_err(rc), (int)rc);
    }
    *out = k;
    return 0;
}

void rxvk_kernel_free(rx_dev *d, rx_dev_kernel *k)
{
    if (!k) return;
    vk_dev *c = V(d);
    pthread_mutex_lock(&c->mu);
    rxvk_flush(c, NULL); /* recorded dispatches may use its pipelines */
    drop_kernel(c, k);
    pthread_mutex_unlock(&c->mu);
}

/* ---- launches ---- */

/* The pipeline of k for work-group size l, made (and its shared memory checked) at
 * first use; under the mutex. */
static int pipeline(rx_dev *d, rx_dev_kernel *k, const uint32_t l[3], VkPipeline *out, rx_rt_err *err)
{
    vk_dev *c = V(d);
    for (int i = 0; i < k->npipes; i++)
        if (!memcmp(k->pipes[i].local, l, sizeof k->pipes[i].local)) {
            *out = k->pipes[i].p;
            return 0;
        }
    rx_spv_info at;
    rx_rt_err why;
    if (rx_spv_reflect(k->mod.w, k->mod.nw, k->mod.entry, l, &at, &why))
        return rx_rt_fail(err, "Vulkan: kernel %s: %s", k->name, why.msg);
    if (check_kernel(d, k->name, &at, err)) return -1;
    if (k->npipes == VK_PIPES) { /* full: start over */
        if (rxvk_flush(c, err)) return -1;
        for (int i = 0; i < k->npipes; i++) c->vk.vkDestroyPipeline(c->dev, k->pipes[i].p, NULL);
        k->npipes = 0;
    }
    VkSpecializationMapEntry me[3];
    uint32_t vals[3];
    uint32_t nme = 0;
    for (int i = 0; i < 3; i++)
        if (k->info.spec_id[i] >= 0) {
            vals[nme] = l[i];
            me[nme] = (VkSpecializationMapEntry){(uint32_t)k->info.spec_id[i], nme * 4, 4};
            nme++;
        }
    VkSpecializationInfo spec = {nme, me, nme * 4, vals};
    VkComputePipelineCreateInfo ci = {
        VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, k->sm,
         k->mod.entry, nme ? &spec : NULL},
        k->pl, VK_NULL_HANDLE, -1};
    VkResult rc = c->vk.vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
    if (rc != VK_SUCCESS)
        return rx_rt_fail(err, "Vulkan: kernel %s: cannot make its pipeline: %s (%d)", k->name, rxvk_err(rc), (int)rc);
    memcpy(k->pipes[k->npipes].local, l, sizeof k->pipes[0].local);
    k->pipes[k->npipes++].p = *out;
    return 0;
}

/* Packs the scalar arguments as the push-constant block. When the shader's block is
 * scalars only (info.npush members), scalar argument j is member j, at its Offset and in
 * its width: the generator declares element offsets as 32-bit `uint` (gpu_glsl.c), so
 * an I64 the VM passes is narrowed when it fits the member's type and refused when not.
 * Otherwise (a hand-written shader) each is at its natural alignment, as passed.
 * Returns the bytes, or -1 with err. */
static int64_t push_block(const rx_dev_kernel *k, const rx_dev_arg *args, int nargs, uint8_t *blk,
                          size_t cap, int *nbuf, rx_rt_err *err)
{
    const rx_spv_info *in = &k->info;
    size_t at = 0;
    int nscalar = 0;
    *nbuf = 0;
    for (int i = 0; i < nargs; i++) {
        const rx_dev_arg *a = &args[i];
        if (a->kind == RX_DEV_ARG_BUF) {
            if (!a->buf) return rx_rt_fail(err, "Vulkan: kernel %s: argument %d rejected (no buffer)", k->name, i);
            (*nbuf)++;
            continue;
        }
        if (a->kind != RX_DEV_ARG_I64 && a->kind != RX_DEV_ARG_I32 && a->kind != RX_DEV_ARG_F32)
            return rx_rt_fail(err, "Vulkan: kernel %s: argument %d rejected (kind %d)", k->name, i, a->kind);
        int j = nscalar++;
        bool member = in->npush > 0 && j < in->npush && in->push_size[j];
        size_t size = member ? in->push_size[j] : a->kind == RX_DEV_ARG_I64 ? 8 : 4;
        char kind = member ? (char)in->push_kind[j] : a->kind == RX_DEV_ARG_F32 ? 'f' : 'i';
        if ((kind == 'f') != (a->kind == RX_DEV_ARG_F32) ||
            (a->kind == RX_DEV_ARG_F32 && size != 4))
            return rx_rt_fail(err, "Vulkan: kernel %s: argument %d rejected (an %s for a%s member)",
                              k->name, i, a->kind == RX_DEV_ARG_F32 ? "f32" : "integer",
                              kind == 'f' ? " float" : "n integer");
        if (a->kind == RX_DEV_ARG_I32 && (a->i < INT32_MIN || a->i > INT32_MAX))
            return rx_rt_fail(err, "Vulkan: kernel %s: argument %d rejected (%lld is not an int32)",
                              k->name, i, (long long)a->i);
        if (size == 4 && kind == 'i' && (a->i < INT32_MIN || a->i > INT32_MAX))
            return rx_rt_fail(
                err,
                "Vulkan: kernel %s: argument %d rejected (%lld does not fit its 32-bit "
                "push constant)",
                k->name, i, (long long)a->i);
        if (size == 4 && kind == 'u' && (a->i < 0 || a->i > (int64_t)UINT32_MAX))
            return rx_rt_fail(
                err,
                "Vulkan: kernel %s: argument %d rejected (%lld does not fit its 32-bit "
                "unsigned push constant)",
                k->name, i, (long long)a->i);
        at = member ? (size_t)in->push_off[j] : (at + size - 1) & ~(size - 1);
        if (at + size > cap)
            return rx_rt_fail(err, "Vulkan: kernel %s: the scalar arguments take more than %zu bytes of "
                              "push constants", k->name, cap);
        if (a->kind == RX_DEV_ARG_F32)
            memcpy(blk + at, &a->f, 4);
        else if (size == 8)
            memcpy(blk + at, &a->i, 8);
        else if (kind == 'u') {
            uint32_t v = (uint32_t)a->i;
            memcpy(blk + at, &v, 4);
        } else {
            int32_t v = (int32_t)a->i;
            memcpy(blk + at, &v, 4);
        }
        at += size;
    }
    if (in->npush > 0 && nscalar != in->npush)
        return rx_rt_fail(err,
                          "Vulkan: kernel %s: the launch passes %d scalar arguments, the shader's "
                          "push constants have %d members",
                          k->name, nscalar, in->npush);
    return in->npush > 0 ? in->push_bytes : (int64_t)at;
}

int rxvk_launch(rx_dev *d, rx_dev_kernel *k, const rx_dev_arg *args, int nargs, int ndim,
                     const size_t *global, const size_t *local, rx_rt_err *err)
{
    vk_dev *c = V(d);
    size_t lsz[3] = {1, 1, 1}, gsz[3] = {1, 1, 1};
    for (int i = 0; i < ndim && i < 3; i++) {
        lsz[i] = local ? local[i] : k->info.local[i];
        gsz[i] = global[i];
    }
    int shape = rx_dev_launch_shape(d, k->name, ndim, gsz, lsz, err);
    if (shape) return shape < 0 ? -1 : 0; /* an empty grid runs nothing */
    uint32_t l[3], groups[3];
    for (int i = 0; i < 3; i++) {
        if (k->info.spec_id[i] < 0 && lsz[i] != k->info.local[i])
            return rx_rt_fail(err, "Vulkan: kernel %s has a fixed work-group size %ux%ux%u; the launch "
                              "asks for %zux%zux%zu", k->name, k->info.local[0], k->info.local[1],
                              k->info.local[2], lsz[0], lsz[1], lsz[2]);
        if (lsz[i] > c->lim.maxComputeWorkGroupSize[i])
            return rx_rt_fail(err, "Vulkan: kernel %s: work-group size %zu in dimension %d, more than the "
                              "device's limit of %u (maxComputeWorkGroupSize)", k->name, lsz[i], i,
                              c->lim.maxComputeWorkGroupSize[i]);
        if (gsz[i] / lsz[i] > c->lim.maxComputeWorkGroupCount[i])
            return rx_rt_fail(err, "Vulkan: kernel %s: %zu work-groups in dimension %d, more than the "
                              "device's limit of %u (maxComputeWorkGroupCount)", k->name, gsz[i] / lsz[i],
                              i, c->lim.maxComputeWorkGroupCount[i]);
        l[i] = (uint32_t)lsz[i];
        groups[i] = (uint32_t)(gsz[i] / lsz[i]);
    }
    uint8_t blk[256] = {0};
    int nbuf;
    int64_t push = push_block(k, args, nargs, blk, sizeof blk, &nbuf, err);
    if (push < 0) return -1;
    if (nbuf != k->info.nbuf)
        return rx_rt_fail(err, "Vulkan: kernel %s takes %d buffers (storage buffer bindings), the launch "
                          "passes %d", k->name, k->info.nbuf, nbuf);
    if (push != k->info.push_bytes)
        return rx_rt_fail(err, "Vulkan: kernel %s: the scalar arguments take %lld bytes of push "
                          "constants, the shader's block has %lld", k->name, (long long)push,
                          (long long)k->info.push_bytes);
    pthread_mutex_lock(&c->mu);
    VkPipeline pipe;
    int rc = pipeline(d, k, l, &pipe, err);
    if (!rc && (c->sets + 1 > VK_MAX_SETS || c->descs + nbuf > VK_MAX_DESCS)) rc = rxvk_flush(c, err);
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!rc && nbuf) {
        VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, c->dpool, 1, &k->dsl};
        VkResult vr = c->vk.vkAllocateDescriptorSets(c->dev, &ai, &set);
        if (vr != VK_SUCCESS) rc = rx_rt_fail(err, "Vulkan: kernel %s: no descriptor set (%d)", k->name, (int)vr);
    }
    if (!rc && nbuf) {
        VkDescriptorBufferInfo bi[RX_SPV_MAX_BUFS];
        VkWriteDescriptorSet wr = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, set, 0, 0, (uint32_t)nbuf,
                                   VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, bi, NULL};
        for (int i = 0, j = 0; i < nargs; i++)
            if (args[i].kind == RX_DEV_ARG_BUF) bi[j++] = (VkDescriptorBufferInfo){args[i].buf->b, 0, VK_WHOLE_SIZE};
        c->vk.vkUpdateDescriptorSets(c->dev, 1, &wr, 0, NULL);
        c->sets++;
        c->descs += nbuf;
    }
    if (!rc) rc = rxvk_begin(c, err);
    if (!rc) {
        c->vk.vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        if (nbuf)
            c->vk.vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pl, 0, 1, &set, 0, NULL);
        if (push)
            c->vk.vkCmdPushConstants(c->cmd, k->pl, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                     (uint32_t)((push + 3) & ~3), blk);
        c->vk.vkCmdDispatch(c->cmd, groups[0], groups[1], groups[2]);
        c->ncmds++;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

#endif
