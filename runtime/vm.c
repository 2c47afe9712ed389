/*
 * vm.c — the interpreter for the instruction set of vm.h.
 *
 * One C loop runs every frame of a call: CALL and CALL_VALUE push a frame on an
 * explicit stack (bounded by the context's max_depth) and RET pops it, so deep Relax
 * recursion never grows the C stack. A frame owns `nregs` values and `heap_size`
 * int64 slots in one allocation. The code was verified at load (vm_verify.c): operand
 * indices are in range and instruction lengths are right, so the loop reads operands
 * without bounds checks and checks only what depends on run-time values — value kinds,
 * shapes, arithmetic overflow, allocation failure, kernel return codes.
 *
 * Errors: any failing instruction formats one message and jumps to `fail`, which
 * releases the registers of every frame of the call; nothing escapes the call. Messages
 * are "<function>: <what>" except the MATCH and ASSERT_EQ failures, whose message string comes from
 * the compiler ("main: x: expected (n, 128)") and gets ", got (4, 64)" appended. A
 * failing library call names its binding when a NOTE instruction right before it says
 * which one ("main: binding lv3 (functions.main...bindings[2]): blas.matmul: shape
 * mismatch (...); arguments (2, 3) f32, (4, 5) f32, (2, 5) f32"): the NOTE records its string
 * and where the next instruction starts, and CALL_LIB uses it only when it starts there.
 *
 * Dispatch hides behind vmcase/vmbreak and the operand macros ARG, R, H, DIM so the
 * loop reads like the opcode table.
 *
 * Allocation: the call owns an object cache (rx_rt_cache, tensor.c). ALLOC_STORAGE and
 * ALLOC_TENSOR take storage records, blocks and tensor objects from it, and every
 * reference the loop drops (RELEASE, overwritten registers, popped frames) parks what
 * it frees there, so a steady-state op takes no lock and no malloc. The cache is
 * flushed back to the context when the call returns, on success or failure. The
 * kernel and library call counts go to the context once per call, not per instruction.
 * CALL_BUILTIN targets were resolved at load (rx_rt_module.builtins).
 *
 * GPU artifacts (vm_device.c's essay): ALLOC_STORAGE of device type 4 is a device
 * buffer, CALL_KERNEL of an OpenCL kernel queues its launches (profiled: and waits, so
 * the time is the kernel's), JMPIFNOT reads a device condition through a host copy,
 * CALL_BUILTIN gets host copies of its arguments and puts its result on the device, and
 * CALL_LIB refuses device tensors. rx_vm_run moves the arguments to the device before
 * the code runs and, after waiting once and reading the index-check status, the result
 * back to the host.
 *
 * Profiling: a call reads the module's switch once at entry; `V->prof` is then the
 * module's aggregate or NULL. CALL_KERNEL and CALL_LIB test it once (a branch that
 * always goes the same way within a call) and, when set, read CLOCK_MONOTONIC before
 * and after the callee and add the difference to its slot (by kernel index, by name
 * string index); rx_vm_run times the whole call the same way. Off, no clock is read.
 */
#include "relax/device.h"

#include "builtin.h"
#include "rt_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    uint32_t fn;         /* function index */
    const int64_t *code; /* its code */
    size_t pc;           /* saved pc while a callee runs */
    rx_vm_value *regs;   /* nregs values */
    int64_t *heap;       /* heap_size slots (after regs in the same block) */
    int64_t ret_reg;     /* caller register receiving our result (-1 for the API) */
} frame;

typedef struct vm {
    rx_rt_module *m;   /* module */
    const rx_rxa *a;   /* its artifact */
    frame *frames;     /* the frame stack */
    int nframes, cap;  /* depth / allocated */
    int64_t kernels;   /* kernel calls made */
    int64_t libcalls;  /* library calls made */
    rx_rt_err *err;    /* message sink (never NULL inside the VM) */
    rx_rt_cache cache; /* free objects of this call (flushed when it returns) */
    rx_rt_prof *prof;  /* the module's profile when this call is profiled, else NULL */
    rx_rt_graph_call graph; /* CUDA Graph regions of this call (vm_device.c) */
} vm;

/* "<function>: message" */
static void vm_fail(vm *V, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vm_fail(vm *V, const char *fmt, ...)
{
    const char *fname = V->nframes ? V->a->funcs[V->frames[V->nframes - 1].fn].name : "?";
    int k = snprintf(V->err->msg, sizeof V->err->msg, "%s: ", fname);
    if (k < 0 || (size_t)k >= sizeof V->err->msg) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(V->err->msg + k, sizeof V->err->msg - (size_t)k, fmt, ap);
    va_end(ap);
}

static int push_frame(vm *V, uint32_t fn, int64_t ret_reg)
{
    const rx_rxa_func *f = &V->a->funcs[fn];
    if (V->nframes >= V->m->ctx->max_depth) {
        vm_fail(V, "call depth limit (%d) exceeded calling %s", V->m->ctx->max_depth, f->name);
        return -1;
    }
    if (V->nframes == V->cap) {
        int cap = V->cap ? V->cap * 2 : 8;
        frame *nf = realloc(V->frames, sizeof *nf * (size_t)cap);
        if (!nf) {
            vm_fail(V, "out of memory");
            return -1;
        }
        V->frames = nf;
        V->cap = cap;
    }
    size_t rbytes = sizeof(rx_vm_value) * f->nregs;
    void *mem = calloc(1, rbytes + sizeof(int64_t) * f->heap_size + 1);
    if (!mem) {
        vm_fail(V, "out of memory");
        return -1;
    }
    frame *fr = &V->frames[V->nframes++];
    fr->fn = fn;
    fr->code = V->a->code + f->code_offset;
    fr->pc = 0;
    fr->regs = mem;
    fr->heap = (int64_t *)(void *)((char *)mem + rbytes);
    fr->ret_reg = ret_reg;
    return 0;
}

static void pop_frame(vm *V)
{
    frame *fr = &V->frames[--V->nframes];
    uint32_t n = V->a->funcs[fr->fn].nregs;
    for (uint32_t i = 0; i < n; i++)
        if (fr->regs[i].kind != RX_V_NONE) rx_rt_cache_release(&V->cache, &fr->regs[i]);
    free(fr->regs);
}

/* dst := v, taking ownership of v's reference. */
static void set_reg(vm *V, rx_vm_value *dst, rx_vm_value v)
{
    rx_vm_value old = *dst;
    *dst = v;
    if (old.kind != RX_V_NONE) rx_rt_cache_release(&V->cache, &old);
}

static void append_shape(char *buf, size_t n, const int64_t *dims, int32_t ndim)
{
    size_t k = strlen(buf);
    k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "(");
    for (int32_t i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (k < n) snprintf(buf + k, n - k, ndim == 1 ? ",)" : ")");
}

/* A failed library call: "[note: ]lib: why; arguments (2, 3) f32, (4, 5) f32". */
static void lib_fail(vm *V, const char *note, const char *lib, const char *why, DLTensor **args,
                     int64_t n)
{
    vm_fail(V, "%s%s%s: %s; arguments ", note ? note : "", note ? ": " : "", lib, why);
    char *b = V->err->msg;
    size_t cap = sizeof V->err->msg;
    for (int64_t i = 0; i < n; i++) {
        char dn[32];
        size_t k = strlen(b);
        if (i && k < cap) snprintf(b + k, cap - k, ", ");
        append_shape(b, cap, args[i]->shape, args[i]->ndim);
        k = strlen(b);
        if (k < cap)
            snprintf(b + k, cap - k, " %s", rx_rxa_dtype_name(rx_rt_dtype_pack(args[i]->dtype), dn, sizeof dn));
    }
}

/* Checks dims against match items starting at code[*pc]; stores STORE items. */
static bool match_dims(const int64_t *code, size_t *pc, int64_t n, const int64_t *dims,
                       int64_t *heap)
{
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        int64_t mode = code[*pc], val = code[*pc + 1];
        *pc += 2;
        if (mode == RX_M_STORE) heap[val] = dims[i];
        else if (mode == RX_M_SLOT) ok = ok && dims[i] == heap[val];
        else if (mode == RX_M_IMM) ok = ok && dims[i] == val;
    }
    return ok;
}

/* A MATCH_* failure: the compiler's message, then ", got <actual>". */
static void match_fail(vm *V, const char *msg, const rx_vm_value *v, bool dtype_wrong)
{
    char *b = V->err->msg;
    size_t n = sizeof V->err->msg;
    snprintf(b, n, "%s, got ", msg);
    if (v->kind == RX_V_TENSOR) {
        const DLTensor *t = &v->u.t->dl;
        append_shape(b, n, t->shape, t->ndim);
        if (dtype_wrong) {
            char dn[32];
            size_t k = strlen(b);
            snprintf(b + k, n - k, " %s",
                     rx_rxa_dtype_name(rx_rt_dtype_pack(t->dtype), dn, sizeof dn));
        }
    } else if (v->kind == RX_V_SHAPE) {
        append_shape(b, n, v->u.s->dims, v->u.s->ndim);
    } else if (v->kind == RX_V_INT) {
        size_t k = strlen(b);
        snprintf(b + k, n - k, "%" PRId64, v->u.i);
    } else {
        size_t k = strlen(b);
        snprintf(b + k, n - k, "%s", rx_vm_kind_desc(v->kind));
    }
}

static bool truthy(const rx_vm_value *v, bool *out)
{
    if (v->kind == RX_V_INT) {
        *out = v->u.i != 0;
        return true;
    }
    if (v->kind != RX_V_TENSOR) return false;
    const DLTensor *t = &v->u.t->dl;
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] != 1) return false;
    const char *p = (const char *)t->data + t->byte_offset;
    int bits = t->dtype.bits, code = t->dtype.code;
    if (t->dtype.lanes != 1) return false;
    if (code == kDLFloat && bits == 32) *out = *(const float *)(const void *)p != 0;
    else if (code == kDLFloat && bits == 64) *out = *(const double *)(const void *)p != 0;
    else if ((code == kDLInt || code == kDLUInt) && bits == 64) *out = *(const int64_t *)(const void *)p != 0;
    else if ((code == kDLInt || code == kDLUInt) && bits == 32) *out = *(const int32_t *)(const void *)p != 0;
    else if ((code == kDLInt || code == kDLUInt) && bits == 16) *out = *(const int16_t *)(const void *)p != 0;
    else if ((code == kDLInt || code == kDLUInt) && bits <= 8) *out = *(const uint8_t *)p != 0;
    else return false;
    return true;
}

static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Operand access for the current frame (code/pc/fr are the loop's locals). */
#define ARG() (code[pc++])
#define R(i) (fr->regs[(i)])
#define H(i) (fr->heap[(i)])
#define DIM() (pc += 2, code[pc - 2] == RX_D_SLOT ? H(code[pc - 1]) : code[pc - 1])
#define RX_GPU_MAX_IVARS 64 /* symbolic arguments of one GPU kernel */
#define FAIL(...) do { vm_fail(V, __VA_ARGS__); goto fail; } while (0)
#define vmcase(name) case RX_OP_##name:
#define vmbreak break
/* (Re)load the locals from the top frame after a push or pop. */
#define LOAD_FRAME() (fr = &V->frames[V->nframes - 1], code = fr->code, pc = fr->pc)

static int run(vm *V, rx_vm_value *result)
{
    frame *fr;
    const int64_t *code;
    size_t pc;
    const int64_t *note_code = NULL; /* the last NOTE: its code, where the next instruction */
    size_t note_at = 0;              /* starts, and its string */
    int64_t note = 0;
    LOAD_FRAME();
    for (;;) {
        size_t at = pc;
        int64_t op = ARG();
        switch (op) {
        vmcase(NOP) vmbreak;
        vmcase(MOVE) {
            int64_t a = ARG(), b = ARG();
            rx_vm_value v = R(b);
            rx_vm_value_retain(&v);
            set_reg(V, &R(a), v);
            vmbreak;
        }
        vmcase(RELEASE) {
            rx_vm_value *v = &R(ARG());
            if (v->kind != RX_V_NONE) rx_rt_cache_release(&V->cache, v);
            vmbreak;
        }
        vmcase(LOADI) {
            int64_t a = ARG();
            rx_vm_value v = {RX_V_INT, {.i = DIM()}};
            set_reg(V, &R(a), v);
            vmbreak;
        }
        vmcase(LOADK) {
            int64_t a = ARG();
            rx_vm_value v = {RX_V_TENSOR, {.t = V->m->consts[ARG()]}};
            rx_vm_value_retain(&v);
            set_reg(V, &R(a), v);
            vmbreak;
        }
        vmcase(FUNCREF) {
            int64_t a = ARG();
            rx_vm_value v = {RX_V_FUNC, {.f = (uint32_t)ARG()}};
            set_reg(V, &R(a), v);
            vmbreak;
        }
        vmcase(MATCH_TENSOR) {
            const rx_vm_value *v = &R(ARG());
            int64_t dtype = ARG(), ndim = ARG(), msg = ARG(), n = ARG();
            if (v->kind != RX_V_TENSOR) {
                match_fail(V, V->a->strings[msg], v, false);
                goto fail;
            }
            const DLTensor *t = &v->u.t->dl;
            bool dt_ok = dtype == 0 || rx_rt_dtype_pack(t->dtype) == (uint32_t)dtype;
            bool ok = dt_ok && (ndim < 0 || t->ndim == ndim);
            if (ok) ok = match_dims(code, &pc, n, t->shape, fr->heap);
            if (!ok) {
                match_fail(V, V->a->strings[msg], v, !dt_ok);
                goto fail;
            }
            vmbreak;
        }
        vmcase(MATCH_SHAPE) {
            const rx_vm_value *v = &R(ARG());
            int64_t ndim = ARG(), msg = ARG(), n = ARG();
            bool ok = v->kind == RX_V_SHAPE && (ndim < 0 || v->u.s->ndim == ndim);
            if (ok) ok = match_dims(code, &pc, n, v->u.s->dims, fr->heap);
            if (!ok) {
                match_fail(V, V->a->strings[msg], v, false);
                goto fail;
            }
            vmbreak;
        }
        vmcase(MATCH_INT) {
            const rx_vm_value *v = &R(ARG());
            int64_t msg = ARG();
            if (v->kind != RX_V_INT || !match_dims(code, &pc, 1, &v->u.i, fr->heap)) {
                match_fail(V, V->a->strings[msg], v, false);
                goto fail;
            }
            vmbreak;
        }
        vmcase(ASSERT_EQ) {
            int64_t msg = ARG(), x = DIM(), y = DIM();
            if (x != y) {
                snprintf(V->err->msg, sizeof V->err->msg, "%s, got %" PRId64 " != %" PRId64,
                         V->a->strings[msg], x, y);
                goto fail;
            }
            vmbreak;
        }
        vmcase(ADD) vmcase(SUB) vmcase(MUL) vmcase(FLOORDIV) vmcase(FLOORMOD) vmcase(MIN)
        vmcase(MAX) {
            int64_t h = ARG(), x = DIM(), y = DIM(), r = 0;
            bool ovf = false;
            switch (op) {
            case RX_OP_ADD: ovf = __builtin_add_overflow(x, y, &r); break;
            case RX_OP_SUB: ovf = __builtin_sub_overflow(x, y, &r); break;
            case RX_OP_MUL: ovf = __builtin_mul_overflow(x, y, &r); break;
            case RX_OP_MIN: r = x < y ? x : y; break;
            case RX_OP_MAX: r = x > y ? x : y; break;
            default:
                if (y == 0) FAIL("pc %zu: %s by zero", at, rx_vm_op_name(op));
                if (x == INT64_MIN && y == -1) {
                    ovf = true;
                    break;
                }
                r = floordiv64(x, y);
                if (op == RX_OP_FLOORMOD) r = x - r * y;
            }
            if (ovf) FAIL("pc %zu: integer overflow in %s", at, rx_vm_op_name(op));
            H(h) = r;
            vmbreak;
        }
        vmcase(MKSHAPE) {
            int64_t a = ARG(), n = ARG();
            rx_vm_shape *s = rx_vm_shape_new((int32_t)n);
            if (!s) FAIL("out of memory");
            for (int64_t i = 0; i < n; i++) s->dims[i] = DIM();
            set_reg(V, &R(a), (rx_vm_value){RX_V_SHAPE, {.s = s}});
            vmbreak;
        }
        vmcase(SHAPEOF) {
            int64_t a = ARG(), b = ARG();
            if (R(b).kind != RX_V_TENSOR)
                FAIL("pc %zu: SHAPEOF of %s", at, rx_vm_kind_desc(R(b).kind));
            const DLTensor *t = &R(b).u.t->dl;
            rx_vm_shape *s = rx_vm_shape_new(t->ndim);
            if (!s) FAIL("out of memory");
            memcpy(s->dims, t->shape, sizeof(int64_t) * (size_t)t->ndim);
            set_reg(V, &R(a), (rx_vm_value){RX_V_SHAPE, {.s = s}});
            vmbreak;
        }
        vmcase(ALLOC_STORAGE) {
            int64_t a = ARG(), bytes = DIM(), dev = ARG();
            bool on_dev = dev == RX_DEV_OPENCL || dev == RX_DEV_VULKAN || dev == RX_DEV_CUDA;
            if (dev != RX_DEV_CPU && (!on_dev || !V->m->gpu || rx_rt_gpu_dev_type(V->m) != dev))
                FAIL("pc %zu: device type %" PRId64 " is not supported%s", at, dev,
                     on_dev ? " (storage on a device the artifact's kernels are not for)" : "");
            if (bytes < 0) FAIL("pc %zu: storage of %" PRId64 " bytes", at, bytes);
            if (on_dev) {
                rx_rt_err e;
                rx_rt_storage *s = rx_rt_gpu_storage(V->m, &V->graph, (int64_t)at, V->nframes == 1,
                                                     (size_t)bytes, &e);
                if (!s) FAIL("pc %zu: %s", at, e.msg);
                set_reg(V, &R(a), (rx_vm_value){RX_V_STORAGE, {.st = s}});
                vmbreak;
            }
            rx_rt_storage *s = rx_rt_cache_storage(&V->cache, (size_t)bytes);
            if (!s && (size_t)bytes >= RX_RT_RESERVE_MIN)
                FAIL("out of memory reserving %" PRId64 " bytes of address space for a storage "
                     "(a memory plan's arena is sized for the function's upper_bounds: lower "
                     "them)", bytes);
            if (!s) FAIL("out of memory allocating %" PRId64 " bytes", bytes);
            set_reg(V, &R(a), (rx_vm_value){RX_V_STORAGE, {.st = s}});
            vmbreak;
        }
        vmcase(ALLOC_TENSOR) {
            int64_t a = ARG(), b = ARG(), off = DIM(), dtype = ARG(), n = ARG();
            int64_t dims[RX_RXA_MAX_NDIM];
            for (int64_t i = 0; i < n; i++) dims[i] = DIM();
            if (R(b).kind != RX_V_STORAGE)
                FAIL("pc %zu: ALLOC_TENSOR in %s, not a storage", at, rx_vm_kind_desc(R(b).kind));
            if (off < 0) FAIL("pc %zu: negative offset %" PRId64, at, off);
            rx_rt_err e;
            rx_rt_tensor *t = rx_rt_cache_view(&V->cache, R(b).u.st, (size_t)off,
                                               rx_rt_dtype_unpack((uint32_t)dtype), (int32_t)n,
                                               dims, &e);
            if (!t) FAIL("pc %zu: %s", at, e.msg);
            set_reg(V, &R(a), (rx_vm_value){RX_V_TENSOR, {.t = t}});
            vmbreak;
        }
        vmcase(VIEW) {
            int64_t a = ARG(), b = ARG(), n = ARG();
            int64_t dims[RX_RXA_MAX_NDIM];
            for (int64_t i = 0; i < n; i++) dims[i] = DIM();
            if (R(b).kind != RX_V_TENSOR) FAIL("pc %zu: VIEW of %s", at, rx_vm_kind_desc(R(b).kind));
            const DLTensor *x = &R(b).u.t->dl;
            int64_t want = rx_rt_dense_bytes(x->dtype, (int32_t)n, dims);
            if (want < 0 || want != rx_rt_dense_bytes(x->dtype, x->ndim, x->shape)) {
                char from[160] = "", to[160] = "";
                append_shape(from, sizeof from, x->shape, x->ndim);
                append_shape(to, sizeof to, dims, (int32_t)n);
                FAIL("pc %zu: cannot view a %s tensor as %s: the element counts differ", at, from, to);
            }
            rx_rt_err e;
            rx_rt_tensor *t;
            if (R(b).u.t->storage) {
                t = rx_rt_cache_view(&V->cache, R(b).u.t->storage, (size_t)x->byte_offset, x->dtype,
                                     (int32_t)n, dims, &e);
            } else { /* an argument: borrowed memory, viewed for this call alike */
                DLTensor v = *x;
                v.ndim = (int32_t)n;
                v.shape = dims;
                v.strides = NULL;
                t = rx_rt_tensor_borrow(&v, &e);
            }
            if (!t) FAIL("pc %zu: %s", at, e.msg);
            set_reg(V, &R(a), (rx_vm_value){RX_V_TENSOR, {.t = t}});
            vmbreak;
        }
        vmcase(CALL_KERNEL) {
            const rx_rxa_kernel *k = &V->a->kernels[ARG()];
            int64_t kidx = code[pc - 1];
            int64_t nb = ARG();
            if (k->section == RX_RXA_KERNELS_OPENCL || k->section == RX_RXA_KERNELS_PTX ||
                k->section == RX_RXA_KERNELS_SPIRV) {
                /* queued on the device (vm_device.c) */
                rx_vm_value *bsmall[16], **bufs = nb <= 16 ? bsmall : malloc(sizeof *bufs * (size_t)nb);
                int64_t ivs[RX_GPU_MAX_IVARS];
                if (!bufs) FAIL("out of memory");
                for (int64_t i = 0; i < nb; i++) bufs[i] = &R(code[pc + i]);
                pc += (size_t)nb;
                int64_t ni = ARG();
                for (int64_t i = 0; i < ni; i++) {
                    int64_t v = DIM();
                    if (i < RX_GPU_MAX_IVARS) ivs[i] = v;
                }
                rx_rt_err e;
                int64_t t0 = V->prof ? rx_rt_now_ns() : 0;
                int rc = ni > RX_GPU_MAX_IVARS
                             ? rx_rt_fail(&e, "kernel %s: %" PRId64 " symbolic variables (at most %d)",
                                          k->name, ni, RX_GPU_MAX_IVARS)
                             : rx_rt_gpu_launch(V->m, &V->graph, (uint32_t)kidx, bufs, nb, ivs, ni, &e);
                if (!rc && V->prof) { /* profiled: the kernel's time, not its queueing */
                    rc = rx_rt_gpu_sync(V->m, &e);
                    rx_rt_prof_add(&V->prof->kernels[kidx], rx_rt_now_ns() - t0);
                }
                if (bufs != bsmall) free(bufs);
                V->kernels++;
                if (rc) FAIL("%s", e.msg);
                vmbreak;
            }
            void *small[16], **data = nb < 16 ? small : malloc(sizeof(void *) * (size_t)(nb + 1));
            rx_vm_kernel_err kerr = {0, 0, 0, 0, NULL};
            int64_t ismall[16], *iv;
            if (!data) FAIL("out of memory");
            for (int64_t i = 0; i < nb; i++) {
                const rx_vm_value *v = &R(code[pc + i]);
                if (v->kind != RX_V_TENSOR) {
                    if (data != small) free(data);
                    FAIL("kernel %s: buffer %" PRId64 " is %s", k->name, i, rx_vm_kind_desc(v->kind));
                }
                data[i] = (char *)v->u.t->dl.data + v->u.t->dl.byte_offset;
            }
            pc += (size_t)nb;
            data[nb] = &kerr; /* where a failing index check leaves its details */
            int64_t ni = ARG();
            iv = ni <= 16 ? ismall : malloc(sizeof(int64_t) * (size_t)ni);
            if (!iv) {
                if (data != small) free(data);
                FAIL("out of memory");
            }
            for (int64_t i = 0; i < ni; i++) iv[i] = DIM();
            typedef int32_t (*kfn)(void *const *, const int64_t *);
            kfn fnp;
            void *sym = V->m->kernel_fn[kidx];
            memcpy(&fnp, &sym, sizeof fnp);
            int32_t rc;
            if (__builtin_expect(V->prof != NULL, 0)) {
                int64_t t0 = rx_rt_now_ns();
                rc = fnp(data, ni ? iv : NULL);
                rx_rt_prof_add(&V->prof->kernels[kidx], rx_rt_now_ns() - t0);
            } else {
                rc = fnp(data, ni ? iv : NULL);
            }
            if (data != small) free(data);
            if (iv != ismall) free(iv);
            V->kernels++;
            if (rc == RX_VM_KERNEL_EINDEX && kerr.state)
                FAIL("kernel %s: index %" PRId64 " out of range for axis %" PRId32 " of %s (extent %" PRId64 ")",
                     k->name, kerr.index, kerr.axis, kerr.buf ? kerr.buf : "?", kerr.extent);
            if (rc == RX_VM_KERNEL_EOVERFLOW)
                FAIL("kernel %s: a size overflows int64 (a shape of more than 2^63 - 1 elements)", k->name);
            if (rc != 0) FAIL("kernel %s failed with code %" PRId32, k->name, rc);
            vmbreak;
        }
        vmcase(CALL_LIB) {
            int64_t name = ARG(), n = ARG();
            const rx_rt_libentry *e = &V->m->libs[name];
            if (V->m->gpu && n > 0 && rx_rt_on_device(&R(code[pc]))) {
                /* a device library (clblast.matmul), queued on the device (vm_device.c) */
                rx_vm_value *vsmall[16], **vals = n <= 16 ? vsmall : malloc(sizeof *vals * (size_t)n);
                if (!vals) FAIL("out of memory");
                for (int64_t i = 0; i < n; i++) vals[i] = &R(code[pc + i]);
                pc += (size_t)n;
                rx_rt_err le;
                int64_t t0 = V->prof ? rx_rt_now_ns() : 0;
                int rc = rx_rt_gpu_call_lib(V->m, e->name, vals, n, &le);
                if (!rc && V->prof) { /* profiled: the GEMM's time, not its queueing */
                    rc = rx_rt_gpu_sync(V->m, &le);
                    rx_rt_prof_add(&V->prof->libs[name], rx_rt_now_ns() - t0);
                }
                if (vals != vsmall) free(vals);
                V->libcalls++;
                if (rc) {
                    const char *note_s = note_code == code && note_at == at ? V->a->strings[note] : NULL;
                    FAIL("%s%s%s", note_s ? note_s : "", note_s ? ": " : "", le.msg);
                }
                vmbreak;
            }
            DLTensor *small[16], **args = n <= 16 ? small : malloc(sizeof(DLTensor *) * (size_t)n);
            if (!args) FAIL("out of memory");
            for (int64_t i = 0; i < n; i++) {
                rx_vm_value *v = &R(code[pc + i]);
                if (v->kind != RX_V_TENSOR) {
                    if (args != small) free(args);
                    FAIL("%s: argument %" PRId64 " is %s", e->name, i, rx_vm_kind_desc(v->kind));
                }
                args[i] = &v->u.t->dl;
                if (rx_rt_on_device(v)) {
                    if (args != small) free(args);
                    FAIL("%s: argument %" PRId64 " is in device memory; library functions run on "
                         "the CPU", e->name, i);
                }
            }
            pc += (size_t)n;
            int32_t rc;
            if (__builtin_expect(V->prof != NULL, 0)) {
                int64_t t0 = rx_rt_now_ns();
                rc = e->fn(args, (int32_t)n);
                rx_rt_prof_add(&V->prof->libs[name], rx_rt_now_ns() - t0);
            } else {
                rc = e->fn(args, (int32_t)n);
            }
            V->libcalls++;
            if (rc != 0) {
                const char *why = e->strerr ? e->strerr(rc) : NULL;
                char codemsg[48];
                snprintf(codemsg, sizeof codemsg, "failed with code %" PRId32, rc);
                lib_fail(V, note_code == code && note_at == at ? V->a->strings[note] : NULL,
                         e->name, why ? why : codemsg, args, n);
                if (args != small) free(args);
                goto fail;
            }
            if (args != small) free(args);
            vmbreak;
        }
        vmcase(GRAPH_BEGIN) {
            int64_t region = ARG(), n = ARG(), key[16];
            for (int64_t i = 0; i < n; i++) {
                int64_t v = DIM();
                if (i < 16) key[i] = v;
            }
            rx_rt_err e;
            /* the entry function's regions only: a callee's storages are not kept */
            if (V->m->gpu && V->nframes == 1 &&
                rx_rt_gpu_graph_begin(V->m, &V->graph, region, key, n, &e))
                FAIL("pc %zu: %s", at, e.msg);
            vmbreak;
        }
        vmcase(GRAPH_END) {
            int64_t region = ARG();
            rx_rt_err e;
            if (V->m->gpu && V->nframes == 1 && rx_rt_gpu_graph_end(V->m, &V->graph, region, &e))
                FAIL("pc %zu: %s", at, e.msg);
            vmbreak;
        }
        vmcase(LIBJMP) { /* a device library with a generated fallback (vm_device.c) */
            int64_t name = ARG(), t = ARG();
            if (!V->m->gpu || rx_rt_gpu_lib_missing(V->m, V->a->strings[name])) pc = (size_t)t;
            vmbreak;
        }
        vmcase(NOTE) {
            note = ARG();
            note_code = code;
            note_at = pc;
            vmbreak;
        }
        vmcase(CALL) vmcase(CALL_VALUE) {
            int64_t dst = ARG(), callee;
            if (op == RX_OP_CALL) {
                callee = ARG();
            } else {
                const rx_vm_value *fv = &R(ARG());
                if (fv->kind != RX_V_FUNC) FAIL("pc %zu: calling %s", at, rx_vm_kind_desc(fv->kind));
                callee = fv->u.f;
            }
            int64_t n = ARG();
            const rx_rxa_func *cf = &V->a->funcs[callee];
            if (n != cf->nparams)
                FAIL("pc %zu: %s takes %" PRIu32 " arguments, got %" PRId64, at, cf->name,
                     cf->nparams, n);
            fr->pc = pc + (size_t)n;
            if (push_frame(V, (uint32_t)callee, dst)) goto fail;
            frame *caller = &V->frames[V->nframes - 2];
            for (int64_t i = 0; i < n; i++) {
                rx_vm_value v = caller->regs[caller->code[pc + (size_t)i]];
                rx_vm_value_retain(&v);
                V->frames[V->nframes - 1].regs[i] = v;
            }
            LOAD_FRAME();
            vmbreak;
        }
        vmcase(TUPLE) {
            int64_t a = ARG(), n = ARG();
            rx_vm_tuple *t = rx_vm_tuple_new((uint32_t)n);
            if (!t) FAIL("out of memory");
            for (int64_t i = 0; i < n; i++) {
                t->v[i] = R(ARG());
                rx_vm_value_retain(&t->v[i]);
            }
            set_reg(V, &R(a), (rx_vm_value){RX_V_TUPLE, {.tu = t}});
            vmbreak;
        }
        vmcase(GETITEM) {
            int64_t a = ARG(), b = ARG(), i = ARG();
            if (R(b).kind != RX_V_TUPLE) FAIL("pc %zu: GETITEM of %s", at, rx_vm_kind_desc(R(b).kind));
            if (i < 0 || (uint64_t)i >= R(b).u.tu->n)
                FAIL("pc %zu: tuple index %" PRId64 " out of range (%" PRIu32 " fields)", at, i,
                     R(b).u.tu->n);
            rx_vm_value v = R(b).u.tu->v[i];
            rx_vm_value_retain(&v);
            set_reg(V, &R(a), v);
            vmbreak;
        }
        vmcase(JMPIFNOT) {
            int64_t a = ARG(), t = ARG();
            bool c;
            bool ok;
            if (rx_rt_on_device(&R(a))) { /* the condition is read on the host, from a copy */
                rx_vm_value hv = R(a);
                rx_rt_err e;
                rx_vm_value_retain(&hv);
                if (rx_rt_gpu_move(V->m, &hv, false, &e)) {
                    rx_vm_value_release(&hv);
                    FAIL("pc %zu: %s", at, e.msg);
                }
                ok = truthy(&hv, &c);
                rx_vm_value_release(&hv);
            } else {
                ok = truthy(&R(a), &c);
            }
            if (!ok)
                FAIL("pc %zu: condition is %s, not an int or a one-element tensor", at,
                     rx_vm_kind_desc(R(a).kind));
            if (!c) pc = (size_t)t;
            vmbreak;
        }
        vmcase(GOTO) pc = (size_t)code[pc]; vmbreak;
        vmcase(RET) {
            rx_vm_value v = R(ARG());
            R(code[pc - 1]).kind = RX_V_NONE; /* moved out */
            int64_t dst = fr->ret_reg;
            pop_frame(V);
            if (dst < 0) {
                *result = v;
                return 0;
            }
            LOAD_FRAME();
            set_reg(V, &R(dst), v);
            vmbreak;
        }
        vmcase(CALL_BUILTIN) {
            int64_t a = ARG(), name = ARG(), n = ARG();
            int bi = V->m->builtins[name];
            RX_RT_ASSERT(bi >= 0); /* resolved at load */
            rx_vm_value small[8], *args = n <= 8 ? small : malloc(sizeof(rx_vm_value) * (size_t)n);
            if (!args) FAIL("out of memory");
            rx_rt_err e;
            int rc = 0;
            for (int64_t i = 0; i < n; i++) {
                args[i] = R(code[pc + i]);
                rx_vm_value_retain(&args[i]);
                if (!rc && V->m->gpu) rc = rx_rt_gpu_move(V->m, &args[i], false, &e); /* on the host */
            }
            pc += (size_t)n;
            rx_vm_value res = {RX_V_NONE, {0}};
            if (!rc) rc = rx_vm_builtin_call(bi, V->m->ctx, args, n, &res, &e);
            if (!rc && V->m->gpu && rx_rt_gpu_move(V->m, &res, true, &e)) {
                rx_vm_value_release(&res);
                rc = -1;
            }
            for (int64_t i = 0; i < n; i++) rx_vm_value_release(&args[i]);
            if (args != small) free(args);
            if (rc) FAIL("%s", e.msg);
            set_reg(V, &R(a), res);
            vmbreak;
        }
        default:
            RX_RT_ASSERT(!"unverified opcode");
        }
    }
fail:
    while (V->nframes) pop_frame(V);
    return -1;
}

int rx_vm_run(rx_rt_module *m, uint32_t fn, const rx_vm_value *args, uint32_t nargs,
              bool dev_out, rx_vm_value *ret, int64_t *kernels, int64_t *libcalls, rx_rt_err *err)
{
    rx_rt_err dummy;
    vm V;
    V.m = m;
    V.a = m->a;
    V.frames = NULL;
    V.nframes = V.cap = 0;
    V.kernels = V.libcalls = 0;
    V.graph = (rx_rt_graph_call){0};
    V.err = err ? err : &dummy;
    V.err->msg[0] = 0;
    ret->kind = RX_V_NONE;
    if (fn >= m->a->nfuncs) return rx_rt_fail(V.err, "no function %" PRIu32, fn);
    const rx_rxa_func *f = &m->a->funcs[fn];
    if (nargs != f->nparams)
        return rx_rt_fail(V.err, "%s takes %" PRIu32 " arguments, got %" PRIu32, f->name,
                          f->nparams, nargs);
    int rc = -1;
    rx_rt_gov_mark gov = {0}; /* CPU calls: fewer threads while delayed (threads_gov.c) */
    if (!m->gpu) rx_rt_gov_begin(&gov);
    V.prof = atomic_load_explicit(&m->prof.on, memory_order_relaxed) ? &m->prof : NULL;
    int64_t t0 = V.prof ? rx_rt_now_ns() : 0;
    rx_rt_cache_init(&V.cache, m->ctx);
    if (push_frame(&V, fn, -1) == 0) {
        for (uint32_t i = 0; i < nargs; i++) {
            V.frames[0].regs[i] = args[i];
            rx_vm_value_retain(&args[i]);
        }
        bool moved = true; /* a GPU artifact: CPU tensors among the arguments go to the device */
        if (m->gpu) rx_rt_gpu_call_begin(m, &V.graph, fn, V.prof != NULL);
        for (uint32_t i = 0; m->gpu && i < nargs && moved; i++)
            moved = rx_rt_gpu_move_arg(m, &V.graph, i, &V.frames[0].regs[i], V.err) == 0;
        if (moved) rc = run(&V, ret);
        else
            while (V.nframes) pop_frame(&V);
        if (m->gpu) { /* wait once; index errors; results to the host */
            rx_rt_err e;
            rx_rt_gpu_graph_abort(m, &V.graph);
            int frc = rx_rt_gpu_finish(m, &e);
            if (rc == 0 && (frc || (!dev_out && rx_rt_gpu_move(m, ret, false, &e)))) {
                snprintf(V.err->msg, sizeof V.err->msg, "%.100s: %.400s", f->name, e.msg);
                rx_vm_value_release(ret);
                rc = -1;
            }
            rx_rt_gpu_call_end(m, &V.graph); /* the results are on the host: storages free */
        }
    }
    free(V.frames);
    rx_rt_cache_flush(&V.cache);
    rx_rt_gov_end(&gov);
    if (V.prof) {
        atomic_fetch_add_explicit(&V.prof->wall_ns, rx_rt_now_ns() - t0, memory_order_relaxed);
        atomic_fetch_add_explicit(&V.prof->runs, 1, memory_order_relaxed);
    }
    if (V.kernels) atomic_fetch_add(&m->ctx->kernel_calls, V.kernels);
    if (V.libcalls) atomic_fetch_add(&m->ctx->library_calls, V.libcalls);
    if (kernels) *kernels += V.kernels;
    if (libcalls) *libcalls += V.libcalls;
    return rc;
}
