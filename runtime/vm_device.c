/*
 * vm_device.c — running a GPU artifact: its device, kernels, tensors and launches.
 *
 * A GPU artifact (one with a KERNELS_OPENCL section, OpenCL C; KERNELS_PTX, PTX loaded
 * by the CUDA driver; or KERNELS_SPIRV, a SPIR-V bundle for Vulkan; docs/artifact.md)
 * keeps its host
 * side in the VM: shape arithmetic, checks, allocations and the order of launches are
 * bytecode as on the CPU. What changes is where tensors live and how kernels run:
 *
 *   Load.    rx_rt_gpu_load opens device ctx->device_id of the artifact's API
 *            (rx_dev_open: the driver is dlopen'ed, a host without it gets "no OpenCL
 *            device: ..." or "no CUDA driver ..."), builds the kernel source once
 *            (OpenCL C by the driver, PoCL caches the binary; for CUDA the cubin when
 *            the driver takes it, a GPU of the target's arch, else the PTX, JIT'ed),
 *            creates every launch's kernel, and checks each against the device's
 *            limits: work-items per group (a launch record asks for the target's
 *            max_threads) and local memory (the device op refuses a kernel needing
 *            more than CL_DEVICE_LOCAL_MEM_SIZE). The constants are copied to device
 *            buffers once; a 32-byte status buffer is made for index checks.
 *   Memory.  ALLOC_STORAGE with device type 4 (OpenCL) is a device buffer
 *            (rx_rt_storage_dev): a storage of a static memory plan is one buffer and
 *            its tensors are views at byte offsets, passed to kernels as the buffer
 *            plus an element offset, so plans need no sub-buffer alignment. Device
 *            bytes count in the context's live and peak bytes (peak_bytes of --bench)
 *            and not as resident host memory. A buffer larger than the device allows
 *            fails the call with the device's message.
 *   Calls.   rx_vm_run uploads the CPU tensors among the arguments, runs the code
 *            (launches are queued, nothing waits), then waits once, reads the status
 *            buffer (an index check that failed in a kernel becomes the call's
 *            error) and downloads the result's tensors: callers see CPU tensors in
 *            and out, as with a CPU artifact. A condition tensor (JMPIFNOT) and the
 *            arguments of built-in functions (unique, nonzero: data-dependent
 *            shapes, computed on the host) are copied down, a built-in's result up.
 *   Launch.  Each kernel of the table is one or more device kernels (launch records,
 *            gpu_kernel.c); each gets the same arguments: per buffer the buffer and
 *            the element offset, the symbolic values, the status buffer. The grid is
 *            the record's iteration count evaluated from the symbolic values, in
 *            whole work-groups, capped at its maximum number of groups (the kernels
 *            loop with a grid stride); a count of zero launches nothing. A host-loop
 *            record (RX_RXA_SCHED_LOOP) runs the records of its body once per
 *            iteration of its count, each launch given the iteration as one more
 *            int64 argument after the symbolic values.
 *   Library. CALL_LIB of "clblast.matmul" (library_lower.c, target opencl; clblast=0 off)
 *            with device tensors is CLBlast's SGEMM (clblast.c) on the same in-order
 *            queue: A (m, k) @ B (k, n) one GEMM, A (b, m, k) @ B (k, n) one GEMM of
 *            b * m rows, A (b, m, k) @ B (b, k, n) a strided batch; tensors are the
 *            buffer plus the element offset as for kernels. Empty outputs do nothing,
 *            k = 0 writes zeros. Compiled calls carry a generated fallback: a LIBJMP
 *            before the CALL_LIB asks rx_rt_gpu_lib_missing whether CLBlast loads on
 *            this host; where it does not (a notice once per process, not an error)
 *            the VM jumps to a CALL_KERNEL of the same matmul's loop function. A
 *            CALL_LIB without one (written by hand) fails the call naming the library
 *            ("CLBlast is not available: cannot load libclblast.so.1 ...").
 *            "cublas.matmul" (target cuda, cublas=1) is the same call on a CUDA
 *            device through cuBLAS (cublas.c), queued on the device's stream.
 *
 * The status buffer is shared by the calls of one module; concurrent calls of a GPU
 * module may see each other's index errors (the first wins).
 */
#include "relax/clblast.h"
#include "relax/cublas.h"
#include "relax/device.h"

#include "rt_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STATUS_INTS = 8 }; /* state, kernel, axis, index lo/hi, extent lo/hi, spare */

/* A device storage kept across calls (CUDA Graphs): the entry function's allocation at
 * pc `site`, or its parameter -1 - site. */
typedef struct gr_keep {
    uint32_t fn;
    int64_t site;      /* ALLOC_STORAGE's pc; -1 - i: argument i uploaded; GR_DEV_ARG - i:
                          argument i given in device memory (st is the caller's storage) */
    rx_rt_storage *st;
    uint64_t off;      /* GR_DEV_ARG sites: the argument's byte offset in st */
} gr_keep;

#define GR_DEV_ARG (INT64_MIN / 2)

enum { GR_MAX_KEY = 16 };

/* A captured region: its key values and the executable graph, valid while the
 * module's epoch is the one it was captured at. */
typedef struct gr_entry {
    uint32_t fn;
    int64_t region, nkey, key[GR_MAX_KEY];
    uint64_t epoch;
    void *exec;
} gr_entry;

typedef struct rx_rt_gpu {
    rx_dev *dev;
    uint32_t section;      /* the kernels' section: KERNELS_OPENCL, KERNELS_PTX or KERNELS_SPIRV */
    rx_dev_program *prog;
    rx_dev_kernel ***kern; /* by kernel index: one per launch record */
    rx_dev_buf *status;    /* STATUS_INTS ints */
    /* CUDA Graphs (the essay's "Graphs") */
    _Atomic bool graphs;   /* a GRAPH_BEGIN ran: later calls keep their storages */
    pthread_mutex_t gmu;   /* held by the one call using keep[] and entries[] */
    uint64_t epoch;        /* bumped whenever a kept storage is reallocated */
    gr_keep *keep;
    size_t nkeep, capkeep;
    gr_entry *entries;
    size_t nentries, capentries;
    _Atomic int64_t launches, replays; /* device launches (a graph: 1), graph launches */
} rx_rt_gpu;

bool rx_rt_on_device(const rx_vm_value *v)
{
    return v->kind == RX_V_TENSOR && v->u.t->storage && v->u.t->storage->kind == RX_STORAGE_DEV;
}

int64_t rx_rt_gpu_dev_type(const rx_rt_module *m)
{
    return m->gpu->section == RX_RXA_KERNELS_SPIRV ? RX_DEV_VULKAN
           : m->gpu->section == RX_RXA_KERNELS_PTX ? RX_DEV_CUDA
                                                   : RX_DEV_OPENCL;
}

rx_dev *rx_rt_gpu_dev(const rx_rt_module *m)
{
    return m->gpu->dev;
}

int rx_rt_gpu_sync(rx_rt_module *m, rx_rt_err *err)
{
    return m->gpu->dev->ops->sync(m->gpu->dev, err);
}

/* ---- loading ---- */

void rx_rt_gpu_unload(rx_rt_module *m)
{
    rx_rt_gpu *g = m->gpu;
    if (!g) return;
    if (g->kern) {
        for (uint32_t i = 0; i < m->a->nkernels; i++) {
            for (uint32_t k = 0; g->kern[i] && k < m->a->kernels[i].nlaunch; k++)
                if (g->kern[i][k]) g->dev->ops->kernel_free(g->dev, g->kern[i][k]);
            free(g->kern[i]);
        }
        free(g->kern);
    }
    for (size_t i = 0; i < g->nentries; i++) rx_dev_cuda_graph_free(g->dev, g->entries[i].exec);
    free(g->entries);
    for (size_t i = 0; i < g->nkeep; i++) rx_rt_storage_release(g->keep[i].st);
    free(g->keep);
    pthread_mutex_destroy(&g->gmu);
    if (g->prog) g->dev->ops->program_free(g->dev, g->prog);
    if (g->status) g->dev->ops->free(g->dev, g->status);
    rx_dev_close(g->dev);
    free(g);
    m->gpu = NULL;
}

/* The kernels of every launch record, checked against the device's limits. */
static int load_kernels(rx_rt_module *m, rx_rt_gpu *g, rx_rt_err *err)
{
    const rx_rxa *a = m->a;
    const rx_dev_info *in = &g->dev->info;
    const char *target = g->section == RX_RXA_KERNELS_SPIRV ? "vulkan"
                         : g->section == RX_RXA_KERNELS_PTX ? "cuda"
                                                             : "opencl";
    g->kern = calloc(a->nkernels ? a->nkernels : 1, sizeof *g->kern);
    if (!g->kern) return rx_rt_fail(err, "out of memory");
    for (uint32_t i = 0; i < a->nkernels; i++) {
        const rx_rxa_kernel *k = &a->kernels[i];
        if (k->section != g->section)
            return rx_rt_fail(err, "kernel %s is in %s, this artifact's device kernels are in %s",
                              k->name, rx_rxa_kind_name(k->section), rx_rxa_kind_name(g->section));
        if (!k->nlaunch)
            return rx_rt_fail(err, "kernel %s has no launch records (no LAUNCH section)", k->name);
        g->kern[i] = calloc(k->nlaunch, sizeof *g->kern[i]);
        if (!g->kern[i]) return rx_rt_fail(err, "out of memory");
        for (uint32_t j = 0; j < k->nlaunch; j++) {
            const rx_rxa_launch *l = &k->launches[j];
            if (l->sched == RX_RXA_SCHED_LOOP) continue; /* a host loop: no kernel */
            if ((int64_t)l->local > in->max_threads)
                return rx_rt_fail(err, "kernel %s needs %" PRIu32 " work-items per group, more than "
                                  "device %s allows (%lld): build for --target %s,max_threads=N "
                                  "with N <= %lld", l->name, l->local, in->name,
                                  (long long)in->max_threads, target, (long long)in->max_threads);
            if ((int64_t)l->local_bytes > in->max_local_bytes)
                return rx_rt_fail(err, "kernel %s needs %" PRIu32 " bytes of local memory, more than "
                                  "device %s has (%lld)", l->name, l->local_bytes, in->name,
                                  (long long)in->max_local_bytes);
            if (g->dev->ops->kernel(g->dev, g->prog, l->name, &g->kern[i][j], err)) return -1;
        }
    }
    return 0;
}

/* Replaces the constants (CPU views of the artifact) by device copies. */
static int load_consts(rx_rt_module *m, rx_rt_err *err)
{
    for (uint32_t i = 0; i < m->a->nconsts; i++) {
        rx_vm_value v = {RX_V_TENSOR, {.t = m->consts[i]}};
        if (rx_rt_gpu_move(m, &v, true, err)) return -1;
        m->consts[i] = v.u.t;
    }
    return 0;
}

int rx_rt_gpu_load(rx_rt_module *m, rx_rt_err *err)
{
    const rx_rxa_section *src = rx_rxa_section_get(m->a, RX_RXA_KERNELS_OPENCL);
    const rx_rxa_section *ptxs = rx_rxa_section_get(m->a, RX_RXA_KERNELS_PTX);
    const rx_rxa_section *spv = rx_rxa_section_get(m->a, RX_RXA_KERNELS_SPIRV);
    if ((src != NULL) + (ptxs != NULL) + (spv != NULL) == 0) return 0; /* a CPU artifact */
    if ((src != NULL) + (ptxs != NULL) + (spv != NULL) > 1)
        return rx_rt_fail(err, "artifact has kernels for more than one device (KERNELS_OPENCL, "
                               "KERNELS_PTX, KERNELS_SPIRV: one at most)");
    bool ptx = ptxs != NULL;
    rx_rt_gpu *g = calloc(1, sizeof *g);
    if (!g) return rx_rt_fail(err, "out of memory");
    pthread_mutex_init(&g->gmu, NULL);
    m->gpu = g;
    g->section = spv ? RX_RXA_KERNELS_SPIRV : ptx ? RX_RXA_KERNELS_PTX : RX_RXA_KERNELS_OPENCL;
    if (spv) src = spv;
    if (ptx) src = ptxs;
    g->dev = rx_dev_open(spv ? kDLVulkan : ptx ? kDLCUDA : kDLOpenCL, m->ctx->device_id, err);
    if (!g->dev) {
        free(g);
        m->gpu = NULL;
        return -1;
    }
    int32_t zero[STATUS_INTS] = {0};
    if (g->dev->ops->alloc(g->dev, sizeof zero, &g->status, err) ||
        g->dev->ops->upload(g->dev, g->status, 0, zero, sizeof zero, err))
        return -1;
    if (m->a->nkernels) {
        /* CUDA: the cubin when the GPU is of its arch, else the PTX (JIT'ed) */
        const rx_rxa_section *bin = ptx ? rx_rxa_section_get(m->a, RX_RXA_KERNELS_CUBIN) : NULL;
        rx_rt_err ignored;
        if (bin && g->dev->ops->build(g->dev, (const char *)bin->data, (size_t)bin->size, &g->prog,
                                      &ignored))
            bin = NULL;
        if (!bin && g->dev->ops->build(g->dev, (const char *)src->data, (size_t)src->size, &g->prog, err))
            return -1;
        if (load_kernels(m, g, err)) return -1;
    }
    return load_consts(m, err);
}

/* ---- tensors between host and device ---- */

/* A copy of tensor t on the device (to_dev) or the host, as a new value in *out. */
static int move_tensor(rx_rt_module *m, const rx_rt_tensor *t, bool to_dev, rx_vm_value *out,
                       rx_rt_err *err)
{
    const DLTensor *dl = &t->dl;
    int64_t bytes = rx_rt_dense_bytes(dl->dtype, dl->ndim, dl->shape);
    if (bytes < 0) return rx_rt_fail(err, "bad tensor shape");
    rx_dev *dev = m->gpu->dev;
    rx_rt_storage *s;
    if (to_dev) {
        s = rx_rt_storage_dev(m->ctx, dev, (size_t)bytes, err);
    } else {
        s = rx_rt_storage_new(m->ctx, (size_t)bytes);
        if (!s) rx_rt_fail(err, "out of memory allocating %" PRId64 " bytes for an output", bytes);
    }
    if (!s) return -1;
    int rc = to_dev ? dev->ops->upload(dev, s->data, 0, (const char *)dl->data + dl->byte_offset,
                                       (size_t)bytes, err)
                    : dev->ops->download(dev, s->data, t->storage->data, dl->byte_offset,
                                         (size_t)bytes, err);
    rx_rt_tensor *nt = rc ? NULL : rx_rt_tensor_view(s, 0, dl->dtype, dl->ndim, dl->shape, err);
    rx_rt_storage_release(s);
    if (!nt) return -1;
    *out = (rx_vm_value){RX_V_TENSOR, {.t = nt}};
    return 0;
}

int rx_rt_gpu_move(rx_rt_module *m, rx_vm_value *v, bool to_dev, rx_rt_err *err)
{
    if (v->kind == RX_V_TENSOR) {
        if (rx_rt_on_device(v) == to_dev) return 0;
        rx_vm_value nv;
        if (move_tensor(m, v->u.t, to_dev, &nv, err)) return -1;
        rx_vm_value_release(v);
        *v = nv;
        return 0;
    }
    if (v->kind != RX_V_TUPLE) return 0;
    rx_vm_tuple *old = v->u.tu, *nt = rx_vm_tuple_new(old->n);
    if (!nt) return rx_rt_fail(err, "out of memory");
    int rc = 0;
    for (uint32_t i = 0; i < old->n; i++) {
        nt->v[i] = old->v[i];
        rx_vm_value_retain(&nt->v[i]);
        if (!rc) rc = rx_rt_gpu_move(m, &nt->v[i], to_dev, err);
    }
    rx_vm_value nv = {RX_V_TUPLE, {.tu = nt}};
    if (rc) {
        rx_vm_value_release(&nv);
        return -1;
    }
    rx_vm_value_release(v);
    *v = nv;
    return 0;
}

/* ---- launches ---- */

/* Bytes of one element as the kernels address them (bool: one byte). */
static size_t elem_bytes(DLDataType t)
{
    size_t b = ((size_t)t.bits * t.lanes + 7) / 8;
    return b ? b : 1;
}

/* Launch record l of kernel kidx with args[0..nargs) (iv[0..ni): the values its items
 * are evaluated over). */
static int launch_one(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t kidx, uint32_t l,
                      rx_dev_arg *args, int nargs, const int64_t *iv, int64_t ni, rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    const rx_rxa_launch *L = &m->a->kernels[kidx].launches[l];
    int64_t items = 0, groups = L->max_groups;
    char why[96];
    if (L->items.ntok) {
        if (rx_rxa_dim_eval(&L->items, iv, NULL, (uint32_t)ni, &items, why, sizeof why))
            return rx_rt_fail(err, "kernel %s: grid size: %s", L->name, why);
        if (items <= 0) return 0; /* nothing to do */
        int64_t need = L->sched == RX_RXA_SCHED_ROWS ? items /* a group per row */
                                                     : items / L->local + (items % L->local != 0);
        if (need < groups) groups = need;
    }
    size_t global = (size_t)groups * L->local, local = L->local;
    int rc = g->dev->ops->launch(g->dev, g->kern[kidx][l], args, nargs, 1, &global, &local, err);
    if (!rc && !(gc && gc->mode == RX_GR_CAPTURE)) atomic_fetch_add(&g->launches, 1);
    return rc;
}

/* Host loop record l (RX_RXA_SCHED_LOOP): its body's records, once per iteration, each
 * given the iteration after the symbolic values (args has room for it). */
static int host_loop(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t kidx, uint32_t l,
                     rx_dev_arg *args, int nargs, const int64_t *iv, int64_t ni, rx_rt_err *err)
{
    const rx_rxa_launch *L = &m->a->kernels[kidx].launches[l];
    int64_t iters = 0, small[32], *ivx = ni < 32 ? small : malloc(sizeof *ivx * (size_t)(ni + 1));
    char why[96];
    if (!ivx) return rx_rt_fail(err, "out of memory");
    int rc = 0;
    if (rx_rxa_dim_eval(&L->items, iv, NULL, (uint32_t)ni, &iters, why, sizeof why))
        rc = rx_rt_fail(err, "kernel %s: host loop count: %s", L->name, why);
    if (ni) memcpy(ivx, iv, sizeof *ivx * (size_t)ni);
    rx_dev_arg status = args[nargs - 1];
    for (int64_t it = 0; it < iters && !rc; it++) {
        ivx[ni] = it;
        args[nargs - 1] = (rx_dev_arg){RX_DEV_ARG_I64, NULL, it, 0};
        args[nargs] = status;
        for (uint32_t b = 1; b <= L->local && !rc; b++)
            rc = launch_one(m, gc, kidx, l + b, args, nargs + 1, ivx, ni + 1, err);
    }
    args[nargs - 1] = status;
    if (ivx != small) free(ivx);
    return rc;
}

int rx_rt_gpu_launch(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t kidx,
                     rx_vm_value *const *bufs, int64_t nb, const int64_t *iv, int64_t ni,
                     rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    const rx_rxa_kernel *k = &m->a->kernels[kidx];
    if (!g) return rx_rt_fail(err, "kernel %s: no device (not a GPU artifact)", k->name);
    if (gc && gc->mode == RX_GR_REPLAY) return 0; /* the region's graph launches it */
    int64_t nargs = 2 * nb + ni + 1; /* + 1 spare: a host loop's iteration */
    rx_dev_arg small[48], *args = nargs < 48 ? small : malloc(sizeof *args * (size_t)(nargs + 1));
    if (!args) return rx_rt_fail(err, "out of memory");
    int rc = 0;
    for (int64_t i = 0; i < nb && !rc; i++) {
        if (!rx_rt_on_device(bufs[i])) {
            rc = rx_rt_fail(err, "kernel %s: buffer %" PRId64 " is not in device memory", k->name, i);
            break;
        }
        const DLTensor *dl = &bufs[i]->u.t->dl;
        args[2 * i] = (rx_dev_arg){RX_DEV_ARG_BUF, bufs[i]->u.t->storage->data, 0, 0};
        args[2 * i + 1] = (rx_dev_arg){RX_DEV_ARG_I64, NULL, (int64_t)(dl->byte_offset / elem_bytes(dl->dtype)), 0};
        if (dl->byte_offset % elem_bytes(dl->dtype))
            rc = rx_rt_fail(err, "kernel %s: buffer %" PRId64 " at byte offset %" PRIu64
                            " is not aligned to its elements", k->name, i, dl->byte_offset);
    }
    for (int64_t j = 0; j < ni; j++) args[2 * nb + j] = (rx_dev_arg){RX_DEV_ARG_I64, NULL, iv[j], 0};
    args[nargs - 1] = (rx_dev_arg){RX_DEV_ARG_BUF, g->status, 0, 0};
    for (uint32_t l = 0; l < k->nlaunch && !rc; l++) {
        if (k->launches[l].sched != RX_RXA_SCHED_LOOP) {
            rc = launch_one(m, gc, kidx, l, args, (int)nargs, iv, ni, err);
            continue;
        }
        rc = host_loop(m, gc, kidx, l, args, (int)nargs, iv, ni, err);
        l += k->launches[l].local; /* its body ran in the loop */
    }
    if (args != small) free(args);
    return rc;
}

/* ---- library calls ---- */

/* The f32 device tensor of vals[i] with ndim 2 or 3, or NULL with err. */
static const DLTensor *lib_tensor(const char *name, rx_vm_value *const *vals, int64_t i,
                                  rx_rt_err *err)
{
    const rx_vm_value *v = vals[i];
    if (!rx_rt_on_device(v)) {
        rx_rt_fail(err, "%s: argument %" PRId64 " is not a tensor in device memory", name, i);
        return NULL;
    }
    const DLTensor *dl = &v->u.t->dl;
    if (dl->dtype.code != kDLFloat || dl->dtype.bits != 32 || dl->dtype.lanes != 1 ||
        (dl->ndim != 2 && dl->ndim != 3) || dl->byte_offset % 4) {
        rx_rt_fail(err, "%s: argument %" PRId64 " must be an f32 matrix or batch of matrices "
                   "(ndim %" PRId32 ")", name, i, dl->ndim);
        return NULL;
    }
    return dl;
}

bool rx_rt_gpu_lib_missing(rx_rt_module *m, const char *name)
{
    static atomic_bool told;
    rx_rt_err err;
    (void)m;
    if (strcmp(name, "clblast.matmul") || !rx_clblast_available(&err)) return false;
    if (!atomic_exchange(&told, true))
        fprintf(stderr, "relax: notice: %s; matmuls run the artifact's generated kernels instead\n",
                err.msg);
    return true;
}

int rx_rt_gpu_call_lib(rx_rt_module *m, const char *name, rx_vm_value *const *vals, int64_t n,
                       rx_rt_err *err)
{
    bool cublas = !strcmp(name, "cublas.matmul");
    if (!cublas && strcmp(name, "clblast.matmul"))
        return rx_rt_fail(err, "%s: not a device library function (device tensors given)", name);
    if (n != 3) return rx_rt_fail(err, "%s: takes A, B and the output, got %" PRId64 " tensors", name, n);
    const DLTensor *a = lib_tensor(name, vals, 0, err), *b = a ? lib_tensor(name, vals, 1, err) : NULL,
                   *c = b ? lib_tensor(name, vals, 2, err) : NULL;
    if (!c) return -1;
    int64_t batch = 1, M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1], N = b->shape[b->ndim - 1];
    bool batched = b->ndim == 3;
    if (batched) batch = a->shape[0];
    else if (a->ndim == 3) M *= a->shape[0]; /* (b, m, k) rows are one (b * m, k) matrix */
    bool shapes_ok = b->shape[b->ndim - 2] == K && c->ndim == a->ndim &&
                     c->shape[c->ndim - 2] == a->shape[a->ndim - 2] && c->shape[c->ndim - 1] == N &&
                     (a->ndim == 3 || !batched) &&
                     (!batched || (b->shape[0] == batch && c->shape[0] == batch)) &&
                     (a->ndim == 2 || c->shape[0] == a->shape[0]);
    if (!shapes_ok)
        return rx_rt_fail(err, "%s: shapes do not match: A (%s), B (%s), out (%s)", name,
                          a->ndim == 3 ? "b, m, k" : "m, k", batched ? "b, k, n" : "k, n",
                          c->ndim == 3 ? "b, m, n" : "m, n");
    if (!batch || !M || !N) return 0; /* nothing to compute */
    rx_dev *dev = m->gpu->dev;
    rx_dev_buf *cb = vals[2]->u.t->storage->data;
    if (!K) { /* a sum of nothing: zeros */
        size_t bytes = (size_t)batch * (size_t)M * (size_t)N * 4;
        void *z = calloc(1, bytes);
        if (!z) return rx_rt_fail(err, "out of memory");
        int rc = dev->ops->upload(dev, cb, (size_t)c->byte_offset, z, bytes, err);
        free(z);
        return rc;
    }
    rx_clblast_mat A = {vals[0]->u.t->storage->data, (int64_t)(a->byte_offset / 4), K, M * K, 0},
                   B = {vals[1]->u.t->storage->data, (int64_t)(b->byte_offset / 4), N, batched ? K * N : 0, 0},
                   C = {cb, (int64_t)(c->byte_offset / 4), N, M * N, 0};
    if (cublas) return rx_cublas_sgemm(dev, batch, M, N, K, 1.0f, &A, &B, 0.0f, &C, err);
    return rx_clblast_sgemm(dev, batch, M, N, K, 1.0f, &A, &B, 0.0f, &C, err);
}

int rx_rt_gpu_finish(rx_rt_module *m, rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    int32_t st[STATUS_INTS];
    if (g->dev->ops->sync(g->dev, err) ||
        g->dev->ops->download(g->dev, st, g->status, 0, sizeof st, err))
        return -1;
    if (!st[0]) return 0;
    int32_t zero[STATUS_INTS] = {0};
    if (g->dev->ops->upload(g->dev, g->status, 0, zero, sizeof zero, err)) return -1;
    uint32_t kidx = (uint32_t)st[1];
    int64_t index = (int64_t)(((uint64_t)(uint32_t)st[4] << 32) | (uint32_t)st[3]);
    int64_t extent = (int64_t)(((uint64_t)(uint32_t)st[6] << 32) | (uint32_t)st[5]);
    return rx_rt_fail(err, "kernel %s: index %" PRId64 " out of range for axis %" PRId32
                      " (extent %" PRId64 ")", kidx < m->a->nkernels ? m->a->kernels[kidx].name : "?",
                      index, st[2], extent);
}

const char *rx_rt_module_device(const rx_rt_module *m, char *buf, size_t n)
{
    if (m->gpu) snprintf(buf, n, "%s: %s", m->gpu->dev->ops->api, m->gpu->dev->info.name);
    else snprintf(buf, n, "cpu");
    return buf;
}

/* ---- CUDA Graphs ---- */

/* The kept entry of (fn, site), or NULL. */
static gr_keep *keep_find(rx_rt_gpu *g, uint32_t fn, int64_t site)
{
    for (size_t i = 0; i < g->nkeep; i++)
        if (g->keep[i].fn == fn && g->keep[i].site == site) return &g->keep[i];
    return NULL;
}

/* Entry k of (fn, site) (NULL: a new one) now holds storage s at byte offset off,
 * retained, and the epoch moves (an address the captured graphs may hold has changed).
 * -1 when the table cannot grow (nothing changed). */
static int keep_set(rx_rt_gpu *g, gr_keep *k, uint32_t fn, int64_t site, rx_rt_storage *s,
                    uint64_t off)
{
    if (!k) {
        if (g->nkeep == g->capkeep) {
            size_t cap = g->capkeep ? 2 * g->capkeep : 16;
            gr_keep *nk = realloc(g->keep, cap * sizeof *nk);
            if (!nk) return -1;
            g->keep = nk, g->capkeep = cap;
        }
        k = &g->keep[g->nkeep++];
        *k = (gr_keep){fn, site, NULL, 0};
    } else {
        rx_rt_storage_release(k->st);
    }
    rx_rt_storage_retain(s);
    k->st = s;
    k->off = off;
    g->epoch++;
    return 0;
}

/* The kept storage of (fn, site) with at least bytes, growing (and bumping the epoch)
 * when it is smaller; NULL with err. */
static rx_rt_storage *kept(rx_rt_module *m, uint32_t fn, int64_t site, size_t bytes,
                           rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    gr_keep *k = keep_find(g, fn, site);
    if (k && k->st->nbytes >= bytes) {
        rx_rt_storage_retain(k->st);
        return k->st;
    }
    rx_rt_storage *s = rx_rt_storage_dev(m->ctx, g->dev, bytes, err);
    if (!s) return NULL;
    if (!s->split) /* larger than one buffer: not kept (nor when the table cannot grow) */
        (void)keep_set(g, k, fn, site, s, 0);
    return s;
}

void rx_rt_gpu_call_begin(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t fn, bool profiled)
{
    *gc = (rx_rt_graph_call){0};
    gc->fn = fn;
    rx_rt_gpu *g = m->gpu;
    /* one call at a time keeps storages; profiling synchronizes, which a capture forbids */
    if (g && g->section == RX_RXA_KERNELS_PTX && atomic_load(&g->graphs) && !profiled)
        gc->held = pthread_mutex_trylock(&g->gmu) == 0;
}

void rx_rt_gpu_graph_abort(rx_rt_module *m, rx_rt_graph_call *gc)
{
    if (gc->mode == RX_GR_CAPTURE) { /* an error inside a region: end the capture */
        void *exec = NULL;
        rx_rt_err e;
        if (!rx_dev_cuda_capture_end(m->gpu->dev, &exec, &e)) rx_dev_cuda_graph_free(m->gpu->dev, exec);
    }
    gc->mode = RX_GR_NONE;
}

void rx_rt_gpu_call_end(rx_rt_module *m, rx_rt_graph_call *gc)
{
    rx_rt_gpu_graph_abort(m, gc);
    if (gc->held) pthread_mutex_unlock(&m->gpu->gmu);
    gc->held = false;
    gc->mode = RX_GR_NONE;
}

rx_rt_storage *rx_rt_gpu_storage(rx_rt_module *m, rx_rt_graph_call *gc, int64_t pc, bool entry,
                                 size_t bytes, rx_rt_err *err)
{
    if (gc && gc->held && entry) return kept(m, gc->fn, pc, bytes, err);
    return rx_rt_storage_dev(m->ctx, m->gpu->dev, bytes, err);
}

/* Argument i of gc's function given in device memory (rx_rt_bench's resident inputs):
 * captured graphs hold its address, so a different storage or offset than the last
 * call's bumps the epoch (every graph is captured again). */
static int note_dev_arg(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t i, const rx_rt_tensor *t,
                        rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    int64_t site = GR_DEV_ARG - (int64_t)i;
    gr_keep *k = keep_find(g, gc->fn, site);
    if (k && k->st->data == t->storage->data && k->off == t->dl.byte_offset) return 0;
    if (keep_set(g, k, gc->fn, site, t->storage, t->dl.byte_offset))
        return rx_rt_fail(err, "out of memory");
    return 0;
}

int rx_rt_gpu_move_arg(rx_rt_module *m, rx_rt_graph_call *gc, uint32_t i, rx_vm_value *v,
                       rx_rt_err *err)
{
    if (gc->held && rx_rt_on_device(v)) return note_dev_arg(m, gc, i, v->u.t, err);
    if (!gc->held || v->kind != RX_V_TENSOR || rx_rt_on_device(v))
        return rx_rt_gpu_move(m, v, true, err);
    const DLTensor *dl = &v->u.t->dl;
    int64_t bytes = rx_rt_dense_bytes(dl->dtype, dl->ndim, dl->shape);
    if (bytes < 0) return rx_rt_fail(err, "bad tensor shape");
    rx_rt_storage *s = kept(m, gc->fn, -1 - (int64_t)i, (size_t)(bytes ? bytes : 1), err);
    if (!s) return -1;
    rx_dev *dev = m->gpu->dev;
    int rc = dev->ops->upload(dev, s->data, 0, (const char *)dl->data + dl->byte_offset,
                              (size_t)bytes, err);
    rx_rt_tensor *nt = rc ? NULL : rx_rt_tensor_view(s, 0, dl->dtype, dl->ndim, dl->shape, err);
    rx_rt_storage_release(s);
    if (!nt) return -1;
    rx_vm_value_release(v);
    *v = (rx_vm_value){RX_V_TENSOR, {.t = nt}};
    return 0;
}

int rx_rt_gpu_graph_begin(rx_rt_module *m, rx_rt_graph_call *gc, int64_t region,
                          const int64_t *key, int64_t nkey, rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    if (gc->mode != RX_GR_NONE) return rx_rt_fail(err, "CUDA Graph region %" PRId64 " inside region %" PRId64, region, gc->region);
    if (g->section != RX_RXA_KERNELS_PTX) return 0; /* only CUDA captures */
    atomic_store(&g->graphs, true); /* from the next call on, storages are kept */
    if (!gc->held || nkey > GR_MAX_KEY) return 0; /* this call launches every kernel */
    gc->region = region;
    for (size_t i = 0; i < g->nentries; i++) {
        gr_entry *e = &g->entries[i];
        if (e->fn != gc->fn || e->region != region || e->nkey != nkey ||
            memcmp(e->key, key, sizeof *key * (size_t)nkey))
            continue;
        if (e->epoch == g->epoch) {
            gc->mode = RX_GR_REPLAY;
            gc->entry = i;
            return 0;
        }
        rx_dev_cuda_graph_free(g->dev, e->exec); /* addresses moved: capture again */
        *e = g->entries[--g->nentries];
        break;
    }
    if (rx_dev_cuda_capture_begin(g->dev, err)) return -1;
    gc->mode = RX_GR_CAPTURE;
    gc->nkey = nkey;
    memcpy(gc->key, key, sizeof *key * (size_t)nkey);
    return 0;
}

int rx_rt_gpu_graph_end(rx_rt_module *m, rx_rt_graph_call *gc, int64_t region, rx_rt_err *err)
{
    rx_rt_gpu *g = m->gpu;
    int mode = gc->mode;
    if (mode == RX_GR_NONE) return 0;
    if (region != gc->region) return rx_rt_fail(err, "CUDA Graph region %" PRId64 " ends region %" PRId64, gc->region, region);
    gc->mode = RX_GR_NONE;
    void *exec;
    if (mode == RX_GR_REPLAY) {
        exec = g->entries[gc->entry].exec;
    } else {
        if (rx_dev_cuda_capture_end(g->dev, &exec, err)) return -1;
        if (g->nentries == g->capentries) {
            size_t cap = g->capentries ? 2 * g->capentries : 8;
            gr_entry *ne = realloc(g->entries, cap * sizeof *ne);
            if (!ne) {
                rx_dev_cuda_graph_free(g->dev, exec);
                return rx_rt_fail(err, "out of memory");
            }
            g->entries = ne, g->capentries = cap;
        }
        gr_entry *e = &g->entries[g->nentries++];
        *e = (gr_entry){gc->fn, region, gc->nkey, {0}, g->epoch, exec};
        memcpy(e->key, gc->key, sizeof *gc->key * (size_t)gc->nkey);
    }
    /* captured launches did not run: the graph runs them, now and at every replay */
    if (rx_dev_cuda_graph_launch(g->dev, exec, err)) return -1;
    atomic_fetch_add(&g->launches, 1);
    atomic_fetch_add(&g->replays, 1);
    return 0;
}

void rx_rt_gpu_counters(const rx_rt_module *m, int64_t *launches, int64_t *graphs)
{
    *launches = m->gpu ? atomic_load(&m->gpu->launches) : 0;
    *graphs = m->gpu ? atomic_load(&m->gpu->replays) : 0;
}
