/*
 * lower.c — one graph function to VM bytecode: parameters, bindings, values, calls,
 * if, bodies (the mapping is tabled in vmgen.h).
 *
 * Registers: parameters take 0..n-1, then every binding variable gets a fresh register
 * at its definition, and every operand that is not a variable (a shape literal, a
 * constant, a prim value passed to a call) a fresh temporary released right after the
 * instruction using it. No register is reused: the VM's frames are small and the
 * numbering stays readable in a disassembly. Values are reference counted, so MOVE
 * shares and RELEASE drops one reference; liveness.c says when.
 *
 * call_tir follows Figure 5 with plan.c's storages: an intermediate tensor the plan
 * placed is an ALLOC_TENSOR at its offset in its storage's register (the static arena
 * was allocated at function entry, a symbolic storage is allocated right before its
 * first tensor; a concat's storage holding its fields, plan.c's Step 0, at its own size,
 * the fields at offsets the VM computes from the shape variables) and the storage is
 * released after the item its plan names; any other
 * output gets one ALLOC_STORAGE of exactly its bytes and one ALLOC_TENSOR, the storage
 * register released at once (the tensor keeps it alive). Then the DPS call. With an
 * arena, the function's entry checks each variable its tensors' sizes use against its
 * upper bound ("main: n must be at most 4096 (...), got 4096 != 4097"), so a call past
 * a bound fails instead of overlapping tensors. Jumps are emitted with a placeholder
 * target and patched when the target is known.
 */
#include "vg_int.h"

#include "relax/runtime.h"

#include <stdlib.h>
#include <string.h>

typedef RX_VEC(int64_t) vg_regs;

static bool lower_value(vg_fn *F, const rx_node *n, int64_t dest);
static bool lower_seq(vg_fn *F, const rx_seq *s, int64_t dest);

/* The register holding n: a variable's own, else a temporary (pushed to temps). */
static bool operand(vg_fn *F, const rx_node *n, int64_t *reg, vg_regs *temps)
{
    if (n->kind == RX_N_VAR) {
        int32_t r = F->reg_of[n->u.var.id];
        RX_ASSERT(r >= 0);
        *reg = r;
        return true;
    }
    *reg = vg_new_reg(F);
    RX_VEC_PUSH(*temps, *reg);
    return lower_value(F, n, *reg);
}

static bool operands(vg_fn *F, rx_node *const *args, int n, vg_regs *out, vg_regs *temps)
{
    for (int i = 0; i < n; i++) {
        int64_t r;
        if (!operand(F, args[i], &r, temps)) return false;
        RX_VEC_PUSH(*out, r);
    }
    return true;
}

static void release_all(vg_fn *F, vg_regs *regs)
{
    for (int i = 0; i < regs->n; i++) RX_EMIT(&F->code, RX_OP_RELEASE, regs->items[i]);
    regs->n = 0;
}

/* R[reg] := a new tensor of annotation si: in the planned storage of plan alloc ai, or
 * (ai < 0 or unplanned) in its own storage (Figure 5). */
static bool alloc_tensor(vg_fn *F, rx_loc loc, const char *what, const rx_sinfo *si, int64_t reg,
                         int32_t ai)
{
    if (si->kind != RX_SI_TENSOR || !si->dims || si->dtype == RX_DT_UNKNOWN) {
        char *s = rx_sinfo_str(F->M->tmp, si);
        vg_error(F->M, loc, "%s: cannot allocate the output of %s: %s needs a known shape and dtype",
                 F->f->name, what, s);
        return false;
    }
    const vg_alloc *al = ai >= 0 ? &F->plan.allocs.items[ai] : NULL;
    vg_storage *plan = al && al->storage >= 0 ? &F->plan.st.items[al->storage] : NULL;
    bool fresh = !plan || plan->reg < 0;
    vg_dim nb = {RX_D_IMM, 0};
    if (fresh) {
        rx_arena *a = F->M->m->arena;
        int bits = rx_dtype_bits((rx_dtype)si->dtype);
        rx_expr *bytes = rx_e_int(a, bits < 8 ? 1 : bits / 8);
        for (int i = 0; i < si->ndim; i++) bytes = rx_e_binary(a, RX_E_MUL, bytes, si->dims[i]);
        if (plan && plan->whole) bytes = plan->bytes;
        if (!vg_expr(F, loc, bytes, &nb)) return false;
    }
    vg_dim off = {RX_D_IMM, plan ? al->offset : 0};
    if (plan && al->offset_expr && !vg_expr(F, loc, al->offset_expr, &off)) return false;
    if (plan && plan->reg < 0) plan->reg = vg_new_reg(F);
    vg_words w = {0};
    vg_w(&w, RX_OP_ALLOC_TENSOR);
    int64_t st = plan ? plan->reg : vg_new_reg(F);
    vg_w(&w, reg), vg_w(&w, st), vg_wd(&w, off);
    vg_w(&w, rx_vmgen_dtype((rx_dtype)si->dtype)), vg_w(&w, si->ndim);
    bool ok = true;
    for (int i = 0; i < si->ndim && ok; i++) {
        vg_dim d;
        ok = vg_expr(F, loc, si->dims[i], &d);
        vg_wd(&w, d);
    }
    if (ok) {
        if (fresh) RX_EMIT(&F->code, RX_OP_ALLOC_STORAGE, st, nb.tag, nb.val, F->M->dev_type);
        vg_emit_words(F, &w);
        if (!plan) RX_EMIT(&F->code, RX_OP_RELEASE, st);
    }
    RX_VEC_FREE(w);
    return ok;
}

/* The output annotations of a DPS call: one tensor, or a tuple of tensors. */
static int dps_outputs(const rx_node *n, const rx_sinfo ***outs)
{
    const rx_sinfo *o = n->u.call.out;
    if (o->kind == RX_SI_TUPLE) {
        *outs = (const rx_sinfo **)o->fields;
        return o->nfields;
    }
    *outs = (const rx_sinfo **)&n->u.call.out;
    return 1;
}

/* Allocates the outputs of a DPS call: into dest for one, else fresh registers. The
 * plan's records of a binding's call are its first_alloc onwards, one per output. */
static bool alloc_outputs(vg_fn *F, const rx_node *n, const char *what, int64_t dest,
                          vg_regs *outregs)
{
    const rx_sinfo **outs;
    int nout = dps_outputs(n, &outs);
    bool single = n->u.call.out->kind != RX_SI_TUPLE;
    int32_t first = F->cur_var >= 0 && F->reg_of[F->cur_var] == dest ? F->plan.first_alloc[F->cur_var] : -1;
    for (int i = 0; i < nout; i++) {
        int64_t r = single ? dest : vg_new_reg(F);
        RX_VEC_PUSH(*outregs, r);
        if (!alloc_tensor(F, n->loc, what, outs[i], r, first >= 0 ? first + i : -1)) return false;
    }
    return true;
}

/* After a DPS call: a tuple result is assembled from the output registers. */
static void finish_outputs(vg_fn *F, const rx_node *n, int64_t dest, vg_regs *outregs)
{
    if (n->u.call.out->kind != RX_SI_TUPLE) return;
    vg_words w = {0};
    vg_w(&w, RX_OP_TUPLE), vg_w(&w, dest), vg_w(&w, outregs->n);
    for (int i = 0; i < outregs->n; i++) vg_w(&w, outregs->items[i]);
    vg_emit_words(F, &w);
    RX_VEC_FREE(w);
    release_all(F, outregs);
}

/* Binds the kernel's svars (see vmgen.h) and computes them into dim operands. */
static bool kernel_ivars(vg_fn *F, const rx_node *n, const rx_func *k, const vg_regs *bufregs,
                         vg_words *ivars)
{
    rx_arena *a = F->M->m->arena;
    const rx_sinfo **outs;
    dps_outputs(n, &outs);
    rx_vmap vm = {0};
    bool ok = true;
    int bi = 0, si = 0;
    for (int j = 0; j < k->ntparams && ok; j++) {
        const rx_tparam *p = &k->tparams[j];
        if (!p->buf) {
            if (si >= n->u.call.ntir_vars) {
                vg_error(F->M, n->loc, "%s: call_tir @%s: missing tir_vars for scalar parameter %s",
                         F->f->name, k->name, p->var->name);
                ok = false;
            } else {
                rx_vmap_set(&vm, p->var, n->u.call.tir_vars[si++]);
            }
            continue;
        }
        const rx_sinfo *actual = bi < n->nargs ? n->args[bi]->sinfo : outs[bi - n->nargs];
        rx_sinfo *param = rx_si_tensor(a, (rx_dtype)p->buf->dtype, p->buf->ndim, p->buf->shape);
        if (actual && rx_si_match(F->ar, a, param, actual, &vm) == RX_CMP_NO) {
            vg_error(F->M, n->loc, "%s: call_tir @%s: %s %s does not match buffer %s %s",
                     F->f->name, k->name, bi < n->nargs ? "argument" : "output",
                     rx_sinfo_str(F->M->tmp, actual), p->buf->name, rx_sinfo_str(F->M->tmp, param));
            ok = false;
        }
        bi++;
    }
    if (ok && si != n->u.call.ntir_vars) {
        vg_error(F->M, n->loc, "%s: call_tir @%s: %d tir_vars for %d scalar parameters",
                 F->f->name, k->name, n->u.call.ntir_vars, si);
        ok = false;
    }
    for (int v = 0; v < k->nsvars && ok; v++) {
        rx_expr *e = rx_vmap_get(&vm, k->svars[v]);
        vg_dim d;
        if (e) {
            ok = vg_expr(F, n->loc, e, &d);
        } else { /* read the dim from a buffer argument at run time */
            int b = 0, dim = -1;
            for (int j = 0; j < k->ntparams && dim < 0; j++) {
                const rx_buffer *buf = k->tparams[j].buf;
                if (!buf) continue;
                for (int i = 0; i < buf->ndim && dim < 0; i++)
                    if (buf->shape[i]->kind == RX_E_VAR && buf->shape[i]->u.var == k->svars[v]) dim = i;
                if (dim < 0) b++;
            }
            if (dim < 0) {
                vg_error(F->M, n->loc, "%s: call_tir @%s: cannot determine its variable %s",
                         F->f->name, k->name, k->svars[v]->name);
                ok = false;
                break;
            }
            const rx_buffer *buf = NULL;
            for (int j = 0, c = 0; j < k->ntparams; j++)
                if (k->tparams[j].buf && c++ == b) buf = k->tparams[j].buf;
            int64_t slot = vg_new_slot(F);
            const char *msg = rx_arena_printf(F->M->tmp, "%s: call_tir @%s: buffer %s: expected a %d-d tensor",
                                              F->f->name, k->name, buf->name, buf->ndim);
            vg_words w = {0};
            vg_w(&w, RX_OP_MATCH_TENSOR), vg_w(&w, bufregs->items[b]), vg_w(&w, 0);
            vg_w(&w, buf->ndim), vg_w(&w, rx_rxa_add_string(F->M->b, msg)), vg_w(&w, buf->ndim);
            for (int i = 0; i < buf->ndim; i++)
                vg_w(&w, i == dim ? RX_M_STORE : RX_M_ANY), vg_w(&w, i == dim ? slot : 0);
            vg_emit_words(F, &w);
            RX_VEC_FREE(w);
            d = (vg_dim){RX_D_SLOT, slot};
        }
        if (ok) vg_wd(ivars, d);
    }
    rx_vmap_free(&vm);
    return ok;
}

static bool lower_call_tir(vg_fn *F, const rx_node *n, int64_t dest)
{
    const rx_node *callee = n->u.call.callee;
    rx_func *k = callee->kind == RX_N_GLOBAL ? callee->u.global.fn : NULL;
    int64_t kidx = k ? vg_kernel_index(F->M, k) : -1;
    if (kidx < 0) {
        vg_error(F->M, n->loc, "%s: call_tir needs a loop-level function", F->f->name);
        return false;
    }
    const rx_sinfo **outs;
    int nout = dps_outputs(n, &outs), nbufs = 0;
    for (int j = 0; j < k->ntparams; j++) nbufs += k->tparams[j].buf != NULL;
    if (n->nargs + nout != nbufs) {
        vg_error(F->M, n->loc, "%s: call_tir @%s: %d arguments and %d outputs for %d buffer parameters",
                 F->f->name, k->name, n->nargs, nout, nbufs);
        return false;
    }
    vg_regs temps = {0}, regs = {0}, outregs = {0};
    vg_words ivars = {0}, w = {0};
    const char *what = rx_arena_printf(F->M->tmp, "call_tir @%s", k->name);
    bool ok = operands(F, n->args, n->nargs, &regs, &temps) &&
              alloc_outputs(F, n, what, dest, &outregs);
    for (int i = 0; ok && i < outregs.n; i++) RX_VEC_PUSH(regs, outregs.items[i]);
    ok = ok && kernel_ivars(F, n, k, &regs, &ivars);
    if (ok) {
        vg_w(&w, RX_OP_CALL_KERNEL), vg_w(&w, kidx), vg_w(&w, regs.n);
        for (int i = 0; i < regs.n; i++) vg_w(&w, regs.items[i]);
        vg_w(&w, ivars.n / 2);
        for (int i = 0; i < ivars.n; i++) vg_w(&w, ivars.items[i]);
        vg_emit_words(F, &w);
        finish_outputs(F, n, dest, &outregs);
        release_all(F, &temps);
    }
    RX_VEC_FREE(temps), RX_VEC_FREE(regs), RX_VEC_FREE(outregs), RX_VEC_FREE(ivars), RX_VEC_FREE(w);
    return ok;
}

/* Whether the runtime provides library function `name` for the artifact's device; else
 * a located error listing what it has. OpenCL artifacts have clblast.matmul alone
 * (CLBlast on the device's buffers, vm_device.c), CUDA ones cublas.matmul alone
 * (cuBLAS); other GPU artifacts none; CPU ones the built-ins that run on CPU memory
 * (every one but the device libraries clblast.* and cublas.*). */
static bool device_lib_name(const char *lib)
{
    return !strncmp(lib, "clblast.", 8) || !strncmp(lib, "cublas.", 7);
}

static bool lib_available(vg_fn *F, const rx_node *n)
{
    const char *lib = n->u.call.lib;
    bool device_lib = device_lib_name(lib);
    if (F->M->dev_type == RX_DEV_OPENCL && !strcmp(lib, "clblast.matmul")) return true;
    if (F->M->dev_type == RX_DEV_CUDA && !strcmp(lib, "cublas.matmul")) return true;
    if (F->M->dev_type != RX_DEV_CPU) {
        vg_error(F->M, n->loc, "library function %s is not available on a GPU target (library "
                 "calls run on the CPU; OpenCL artifacts can call clblast.matmul only, CUDA "
                 "ones cublas.matmul)", lib);
        return false;
    }
    const char *const *names = rx_rt_builtin_library_names();
    for (int i = 0; names[i] && !device_lib; i++)
        if (!strcmp(names[i], lib)) return true;
    rx_sb list = {0};
    for (int i = 0, k = 0; names[i]; i++)
        if (!device_lib_name(names[i])) rx_sb_printf(&list, "%s%s", k++ ? ", " : "", names[i]);
    vg_error(F->M, n->loc, "library function %s is not available on target cpu (available: %s)",
             lib, rx_sb_str(&list));
    rx_sb_free(&list);
    return false;
}

/* NOTE "binding lv3 (functions.main.body.blocks[0].bindings[2])" before a library call,
 * so a failure at run time (a shape the library refuses) names the binding and where it
 * is in the source module (vm.c prefixes the function's name). */
static void note_binding(vg_fn *F, const rx_node *n)
{
    const rx_binding *bd = F->cur_bind;
    rx_sb path = {0}, s = {0};
    rx_loc_render(&F->M->m->locs, bd ? bd->loc : n->loc, &path);
    if (bd) rx_sb_printf(&s, "binding %s (%s)", bd->var->u.var.name, rx_sb_str(&path));
    else rx_sb_printf(&s, "call at %s", rx_sb_str(&path));
    RX_EMIT(&F->code, RX_OP_NOTE, rx_rxa_add_string(F->M->b, rx_sb_str(&s)));
    rx_sb_free(&path);
    rx_sb_free(&s);
}

/* The generated fallback of library call n (library_lower.c, OpenCL: a call_tir of the
 * same arguments and output that legalize made of the replaced op), its kernel index in
 * *kidx; NULL when n has none. */
static const rx_node *lib_fallback(vg_fn *F, const rx_node *n, int64_t *kidx)
{
    const rx_node *fb = n->u.call.callee;
    if (!fb) return NULL;
    bool ok = fb->kind == RX_N_CALL && fb->call_kind == RX_CALL_TIR && fb->nargs == n->nargs &&
              fb->u.call.callee->kind == RX_N_GLOBAL && fb->u.call.callee->u.global.fn;
    for (int i = 0; i < n->nargs && ok; i++) ok = fb->args[i] == n->args[i];
    *kidx = ok ? vg_kernel_index(F->M, fb->u.call.callee->u.global.fn) : -1;
    if (*kidx < 0) {
        vg_error(F->M, n->loc, "%s: call_dps_library \"%s\": its fallback is not a loop function "
                 "of the same arguments", F->f->name, n->u.call.lib);
        return NULL;
    }
    return fb;
}

/* CALL_LIB of n's library on regs (arguments then outputs); with a generated fallback
 * (lib_fallback):
 *     LIBJMP lib L        ; the library cannot be loaded here: the kernel instead
 *     NOTE, CALL_LIB lib regs
 *     GOTO E
 *  L: CALL_KERNEL fallback regs ivars
 *  E:                                                                               */
static bool emit_call_lib(vg_fn *F, const rx_node *n, const vg_regs *regs)
{
    int64_t kidx = -1, lib = rx_rxa_add_string(F->M->b, n->u.call.lib);
    const rx_node *fb = lib_fallback(F, n, &kidx);
    vg_words w = {0}, ivars = {0};
    if (n->u.call.callee && !fb) return false;
    if (fb && !kernel_ivars(F, fb, fb->u.call.callee->u.global.fn, regs, &ivars)) {
        RX_VEC_FREE(ivars);
        return false;
    }
    size_t jmp = fb ? RX_EMIT(&F->code, RX_OP_LIBJMP, lib, 0) : 0;
    note_binding(F, n);
    vg_w(&w, RX_OP_CALL_LIB), vg_w(&w, lib), vg_w(&w, regs->n);
    for (int i = 0; i < regs->n; i++) vg_w(&w, regs->items[i]);
    vg_emit_words(F, &w);
    if (fb) {
        size_t go = RX_EMIT(&F->code, RX_OP_GOTO, 0);
        F->code.w[jmp + 2] = (int64_t)F->code.n;
        w.n = 0;
        vg_w(&w, RX_OP_CALL_KERNEL), vg_w(&w, kidx), vg_w(&w, regs->n);
        for (int i = 0; i < regs->n; i++) vg_w(&w, regs->items[i]);
        vg_w(&w, ivars.n / 2);
        for (int i = 0; i < ivars.n; i++) vg_w(&w, ivars.items[i]);
        vg_emit_words(F, &w);
        F->code.w[go + 1] = (int64_t)F->code.n;
    }
    RX_VEC_FREE(w), RX_VEC_FREE(ivars);
    return true;
}

static bool lower_call_lib(vg_fn *F, const rx_node *n, int64_t dest)
{
    vg_regs temps = {0}, regs = {0}, outregs = {0};
    const char *what = rx_arena_printf(F->M->tmp, "call_dps_library \"%s\"", n->u.call.lib);
    bool known = lib_available(F, n);
    bool ok = operands(F, n->args, n->nargs, &regs, &temps) &&
              alloc_outputs(F, n, what, dest, &outregs) && known;
    if (ok) {
        vg_note_lib(F->M, n->u.call.lib);
        for (int i = 0; i < outregs.n; i++) RX_VEC_PUSH(regs, outregs.items[i]);
        ok = emit_call_lib(F, n, &regs);
    }
    if (ok) {
        finish_outputs(F, n, dest, &outregs);
        release_all(F, &temps);
    }
    RX_VEC_FREE(temps), RX_VEC_FREE(regs), RX_VEC_FREE(outregs);
    return ok;
}

static bool lower_call_fn(vg_fn *F, const rx_node *n, int64_t dest)
{
    const rx_node *callee = n->u.call.callee;
    int64_t fidx = -1;
    if (callee->kind == RX_N_GLOBAL) {
        fidx = vg_func_index(F->M, callee->u.global.fn);
        if (fidx < 0) {
            vg_error(F->M, n->loc, "%s: @%s is a loop-level function: call it with call_tir",
                     F->f->name, callee->u.global.name);
            return false;
        }
    }
    vg_regs temps = {0}, regs = {0};
    vg_words w = {0};
    int64_t fr = 0;
    bool ok = (fidx >= 0 || operand(F, callee, &fr, &temps)) &&
              operands(F, n->args, n->nargs, &regs, &temps);
    if (ok) {
        vg_w(&w, fidx >= 0 ? RX_OP_CALL : RX_OP_CALL_VALUE), vg_w(&w, dest);
        vg_w(&w, fidx >= 0 ? fidx : fr), vg_w(&w, regs.n);
        for (int i = 0; i < regs.n; i++) vg_w(&w, regs.items[i]);
        vg_emit_words(F, &w);
        release_all(F, &temps);
    }
    RX_VEC_FREE(temps), RX_VEC_FREE(regs), RX_VEC_FREE(w);
    return ok;
}

/* An int immediate as a new register (a built-in's int argument), released with temps. */
static void int_arg(vg_fn *F, int64_t v, vg_regs *regs, vg_regs *temps)
{
    int64_t r = vg_new_reg(F);
    RX_EMIT(&F->code, RX_OP_LOADI, r, RX_D_IMM, v);
    RX_VEC_PUSH(*regs, r);
    RX_VEC_PUSH(*temps, r);
}

/* unique's attributes as int arguments after x (runtime/builtin.h): none for the
 * default (sorted, nothing extra, no axis), else sorted, return_index, return_inverse,
 * return_counts and, when given, the axis (normalized when x's rank is known; the
 * runtime normalizes and checks it otherwise). The result is the values tensor, or
 * the tuple deduction gives (op_misc.c): values, then each requested i64 tensor. */
static void unique_flags(vg_fn *F, const rx_node *n, vg_regs *regs, vg_regs *temps)
{
    static const char *const flags[] = {"sorted", "return_index", "return_inverse", "return_counts"};
    const rx_attr *axis = rx_call_attr(n, "axis");
    int64_t v[5];
    bool plain = axis->kind == RX_A_NULL;
    for (int i = 0; i < RX_COUNTOF(flags); i++) {
        v[i] = rx_call_attr(n, flags[i])->u.b;
        plain = plain && v[i] == (i == 0);
    }
    if (plain) return;
    int nv = 4;
    if (axis->kind != RX_A_NULL) {
        const rx_sinfo *x = n->args[0]->sinfo;
        v[4] = axis->u.i;
        if (x && x->kind == RX_SI_TENSOR && x->ndim > 0 && v[4] < 0) v[4] += x->ndim;
        nv = 5;
    }
    for (int i = 0; i < nv; i++) int_arg(F, v[i], regs, temps);
}

/* reshape_view's `reshape(x, shape)`: VIEW dest, x, the annotation's dims. */
static bool lower_view(vg_fn *F, const rx_node *n, int64_t dest)
{
    const rx_sinfo *si = n->sinfo;
    if (!si || si->kind != RX_SI_TENSOR || !si->dims) {
        vg_error(F->M, n->loc, "%s: operator reshape was not legalized and its result shape is unknown",
                 F->f->name);
        return false;
    }
    vg_regs temps = {0};
    vg_words w = {0};
    int64_t x;
    bool ok = operand(F, n->args[0], &x, &temps);
    vg_w(&w, RX_OP_VIEW), vg_w(&w, dest), vg_w(&w, x), vg_w(&w, si->ndim);
    for (int i = 0; i < si->ndim && ok; i++) {
        vg_dim d;
        ok = vg_expr(F, n->loc, si->dims[i], &d);
        vg_wd(&w, d);
    }
    if (ok) vg_emit_words(F, &w);
    release_all(F, &temps);
    RX_VEC_FREE(temps), RX_VEC_FREE(w);
    return ok;
}

/* The op calls legalization leaves: shape_of, the data-dependent built-ins, and
 * reshape_view's reshapes. The built-ins' arguments (runtime/builtin.h): unique's x
 * and its flags; nonzero's x; nms's center_point_box, then its operands. */
static bool lower_call_op(vg_fn *F, const rx_node *n, int64_t dest)
{
    const char *name = n->u.call.op->name;
    const char *builtin = NULL;
    if (!strcmp(name, "reshape")) return lower_view(F, n, dest);
    if (!strcmp(name, "unique")) {
        builtin = "unique";
    } else if (!strcmp(name, "nonzero")) {
        builtin = "nonzero";
    } else if (!strcmp(name, "vision.all_class_non_max_suppression")) {
        builtin = "nms";
    } else if (strcmp(name, "shape_of")) {
        vg_error(F->M, n->loc, "%s: operator %s was not legalized and the VM has no built-in for it",
                 F->f->name, name);
        return false;
    }
    vg_regs temps = {0}, regs = {0};
    bool ok = true;
    if (builtin && !strcmp(builtin, "nms"))
        int_arg(F, rx_call_attr(n, "center_point_box")->u.i, &regs, &temps);
    for (int i = 0; ok && i < (builtin ? n->nargs : 1); i++) {
        int64_t x;
        ok = operand(F, n->args[i], &x, &temps);
        if (ok) RX_VEC_PUSH(regs, x);
    }
    if (ok && builtin) {
        if (!strcmp(builtin, "unique")) unique_flags(F, n, &regs, &temps);
        vg_words w = {0};
        vg_note_builtin(F->M, builtin);
        vg_w(&w, RX_OP_CALL_BUILTIN), vg_w(&w, dest), vg_w(&w, rx_rxa_add_string(F->M->b, builtin));
        vg_w(&w, regs.n);
        for (int i = 0; i < regs.n; i++) vg_w(&w, regs.items[i]);
        vg_emit_words(F, &w);
        RX_VEC_FREE(w);
    } else if (ok) {
        RX_EMIT(&F->code, RX_OP_SHAPEOF, dest, regs.items[0]);
    }
    release_all(F, &temps);
    RX_VEC_FREE(temps), RX_VEC_FREE(regs);
    return ok;
}

static bool lower_if(vg_fn *F, const rx_node *n, int64_t dest)
{
    vg_regs temps = {0};
    int64_t c;
    bool ok = operand(F, n->args[0], &c, &temps);
    if (!ok) {
        RX_VEC_FREE(temps);
        return false;
    }
    size_t jmp = RX_EMIT(&F->code, RX_OP_JMPIFNOT, c, 0);
    for (int i = 0; i < temps.n; i++) RX_EMIT(&F->code, RX_OP_RELEASE, temps.items[i]);
    vg_scope sc = vg_scope_enter(F);
    ok = lower_seq(F, n->u.if_.then_body, dest);
    vg_scope_leave(F, sc);
    size_t go = RX_EMIT(&F->code, RX_OP_GOTO, 0);
    F->code.w[jmp + 2] = (int64_t)F->code.n;
    for (int i = 0; i < temps.n; i++) RX_EMIT(&F->code, RX_OP_RELEASE, temps.items[i]);
    ok = ok && lower_seq(F, n->u.if_.else_body, dest);
    vg_scope_leave(F, sc);
    F->code.w[go + 1] = (int64_t)F->code.n;
    RX_VEC_FREE(temps);
    return ok;
}

static bool lower_value(vg_fn *F, const rx_node *n, int64_t dest)
{
    switch (n->kind) {
    case RX_N_VAR: {
        int32_t r = F->reg_of[n->u.var.id];
        RX_ASSERT(r >= 0);
        RX_EMIT(&F->code, RX_OP_MOVE, dest, r);
        return true;
    }
    case RX_N_GLOBAL: {
        int64_t fi = vg_func_index(F->M, n->u.global.fn);
        if (fi < 0) {
            vg_error(F->M, n->loc, "%s: loop-level function @%s cannot be used as a value",
                     F->f->name, n->u.global.name);
            return false;
        }
        RX_EMIT(&F->code, RX_OP_FUNCREF, dest, fi);
        return true;
    }
    case RX_N_CONST: {
        int64_t c = vg_const_index(F->M, n->u.konst);
        if (c < 0) return false;
        RX_EMIT(&F->code, RX_OP_LOADK, dest, c);
        return true;
    }
    case RX_N_PRIMVAL: {
        vg_dim d;
        if (!rx_dtype_is_int((rx_dtype)n->u.prim->dtype) && n->u.prim->dtype != RX_DT_BOOL) {
            vg_error(F->M, n->loc, "%s: the VM has no %s scalar values (integers only)",
                     F->f->name, rx_dtype_name((rx_dtype)n->u.prim->dtype));
            return false;
        }
        if (!vg_expr(F, n->loc, n->u.prim, &d)) return false;
        RX_EMIT(&F->code, RX_OP_LOADI, dest, d.tag, d.val);
        return true;
    }
    case RX_N_SHAPE: {
        vg_words w = {0};
        bool ok = true;
        vg_w(&w, RX_OP_MKSHAPE), vg_w(&w, dest), vg_w(&w, n->u.shape.ndim);
        for (int i = 0; i < n->u.shape.ndim && ok; i++) {
            vg_dim d;
            ok = vg_expr(F, n->loc, n->u.shape.dims[i], &d);
            vg_wd(&w, d);
        }
        if (ok) vg_emit_words(F, &w);
        RX_VEC_FREE(w);
        return ok;
    }
    case RX_N_TUPLE: {
        vg_regs temps = {0}, regs = {0};
        vg_words w = {0};
        bool ok = operands(F, n->args, n->nargs, &regs, &temps);
        if (ok) {
            vg_w(&w, RX_OP_TUPLE), vg_w(&w, dest), vg_w(&w, regs.n);
            for (int i = 0; i < regs.n; i++) vg_w(&w, regs.items[i]);
            vg_emit_words(F, &w);
            release_all(F, &temps);
        }
        RX_VEC_FREE(temps), RX_VEC_FREE(regs), RX_VEC_FREE(w);
        return ok;
    }
    case RX_N_GET_ITEM: {
        vg_regs temps = {0};
        int64_t t;
        bool ok = operand(F, n->args[0], &t, &temps);
        if (ok) RX_EMIT(&F->code, RX_OP_GETITEM, dest, t, n->u.index);
        release_all(F, &temps);
        RX_VEC_FREE(temps);
        return ok;
    }
    case RX_N_CALL:
        switch (n->call_kind) {
        case RX_CALL_TIR: return lower_call_tir(F, n, dest);
        case RX_CALL_LIB: return lower_call_lib(F, n, dest);
        case RX_CALL_FN: return lower_call_fn(F, n, dest);
        default: return lower_call_op(F, n, dest);
        }
    case RX_N_IF: return lower_if(F, n, dest);
    }
    RX_UNREACHABLE();
}

static bool lower_binding(vg_fn *F, const rx_binding *bd)
{
    int64_t dest = vg_new_reg(F);
    F->reg_of[bd->var->u.var.id] = (int32_t)dest;
    if (!bd->match_cast) {
        F->cur_var = bd->var->u.var.id;
        F->cur_bind = bd;
        bool ok = lower_value(F, bd->value, dest);
        F->cur_var = -1;
        F->cur_bind = NULL;
        return ok;
    }
    vg_regs temps = {0};
    int64_t src;
    const char *what = rx_arena_printf(F->M->tmp, "match_cast %s", bd->var->u.var.name);
    bool ok = operand(F, bd->value, &src, &temps) &&
              vg_match(F, bd->loc, src, bd->given ? bd->given : bd->var->sinfo, what, NULL);
    if (ok) RX_EMIT(&F->code, RX_OP_MOVE, dest, src);
    release_all(F, &temps);
    RX_VEC_FREE(temps);
    return ok;
}

typedef struct release_at {
    int32_t item; /* release after this item (-1: before the first) */
    int32_t id;   /* the variable, or -1 - s for planned storage s */
} release_at;

static int cmp_release(const void *x, const void *y)
{
    const release_at *a = x, *b = y;
    return a->item != b->item ? (a->item > b->item) - (a->item < b->item)
                              : (a->id > b->id) - (a->id < b->id);
}

/* Emits RELEASE for the variables of rel[*pos..] due after `item`. */
static void release_due(vg_fn *F, const release_at *rel, int nrel, int *pos, int32_t item)
{
    for (; *pos < nrel && rel[*pos].item <= item; (*pos)++) {
        int32_t id = rel[*pos].id;
        int64_t r = id >= 0 ? F->reg_of[id] : F->plan.st.items[-1 - id].reg;
        if (r >= 0) RX_EMIT(&F->code, RX_OP_RELEASE, r);
    }
}

/* The CUDA Graph region (cuda_graph.c's marks in the function's "cuda_graph" attribute)
 * whose `which` ("first" or "last") binding binds var, or -1. */
static int region_at(const vg_fn *F, const rx_node *var, const char *which)
{
    const rx_attr *rs = rx_attr_map_get(F->f->attrs, "cuda_graph");
    for (int i = 0; rs && rs->kind == RX_A_ARRAY && i < rs->u.arr.n; i++) {
        const rx_attr *v = rx_attr_map_get(rs->u.arr.items[i], which);
        if (v && v->kind == RX_A_STR && !strcmp(v->u.s, var->u.var.name)) return i;
    }
    return -1;
}

/* GRAPH_BEGIN region, with the values of its key's variables (the signature's, by name). */
static bool graph_begin(vg_fn *F, const rx_binding *bd, int region)
{
    const rx_attr *r = rx_attr_map_get(F->f->attrs, "cuda_graph")->u.arr.items[region];
    const rx_attr *key = rx_attr_map_get(r, "key");
    vg_words w = {0};
    bool ok = true;
    vg_w(&w, RX_OP_GRAPH_BEGIN), vg_w(&w, region), vg_w(&w, key ? key->u.arr.n : 0);
    for (int k = 0; key && k < key->u.arr.n && ok; k++) {
        const rx_svar *sv = NULL;
        for (int s = 0; s < F->f->nsvars && !sv; s++)
            if (key->u.arr.items[k]->kind == RX_A_STR && !strcmp(F->f->svars[s]->name, key->u.arr.items[k]->u.s))
                sv = F->f->svars[s];
        vg_dim d;
        ok = sv && vg_expr(F, bd->loc, rx_e_var(F->M->m->arena, sv), &d);
        if (ok) vg_wd(&w, d);
        else vg_error(F->M, bd->loc, "%s: cuda_graph region %d: key variable is not the signature's",
                      F->f->name, region);
    }
    if (ok) vg_emit_words(F, &w);
    RX_VEC_FREE(w);
    return ok;
}

/* Lowers a body; its result goes to dest, or is returned (dest < 0: the function's). */
static bool lower_seq(vg_fn *F, const rx_seq *s, int64_t dest)
{
    int32_t serial = F->seq_serial++;
    RX_VEC(release_at) rel = {0};
    if (serial == 0)
        for (int i = 0; i < F->f->nparams; i++) {
            int32_t id = F->f->params[i]->u.var.id;
            release_at r = {F->last_use[id], id};
            RX_VEC_PUSH(rel, r);
        }
    int32_t nitems = 0;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++, nitems++) {
            int32_t id = s->blocks[b]->bindings[i].var->u.var.id;
            release_at r = {F->last_use[id] >= 0 ? F->last_use[id] : nitems, id};
            RX_VEC_PUSH(rel, r);
        }
    for (int k = 0; k < F->plan.st.n; k++)
        if (F->plan.st.items[k].home == serial) {
            release_at r = {F->plan.st.items[k].release_item, -1 - k};
            RX_VEC_PUSH(rel, r);
        }
    if (rel.n) qsort(rel.items, (size_t)rel.n, sizeof *rel.items, cmp_release);
    int pos = 0, item = 0;
    bool ok = true;
    release_due(F, rel.items, rel.n, &pos, -1);
    for (int b = 0; b < s->nblocks; b++) /* on, after an error: report them all */
        for (int i = 0; i < s->blocks[b]->nbindings; i++, item++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            int rb = serial == 0 ? region_at(F, bd->var, "first") : -1;
            if (rb >= 0) ok = graph_begin(F, bd, rb) && ok;
            ok = lower_binding(F, bd) && ok;
            release_due(F, rel.items, rel.n, &pos, item);
            int re = serial == 0 ? region_at(F, bd->var, "last") : -1;
            if (re >= 0) RX_EMIT(&F->code, RX_OP_GRAPH_END, re);
        }
    if (ok && dest < 0) {
        vg_regs temps = {0};
        int64_t r;
        ok = operand(F, s->result, &r, &temps);
        if (ok) RX_EMIT(&F->code, RX_OP_RET, r);
        RX_VEC_FREE(temps);
    } else if (ok) {
        ok = lower_value(F, s->result, dest);
        release_due(F, rel.items, rel.n, &pos, item);
    }
    RX_VEC_FREE(rel);
    return ok;
}

/* With a static arena, each variable its tensors' sizes use must be within its upper
 * bound: the offsets were computed from the bounds, and a larger tensor would run into
 * its neighbour's bytes. One MIN and ASSERT_EQ per such variable at entry. */
static bool check_bounds(vg_fn *F)
{
    const vg_plan *P = &F->plan;
    if (P->arena < 0) return true;
    rx_svar_vec vs = {0};
    for (int i = 0; i < P->allocs.n; i++)
        if (P->allocs.items[i].storage == P->arena) rx_expr_vars(P->allocs.items[i].bytes, &vs);
    bool ok = true;
    for (int i = 0; i < vs.n && ok; i++) {
        const rx_svar *v = vs.items[i];
        int64_t ub = rx_func_upper_bound(F->f, v);
        if (ub < 0 || vg_sym_slot(F, v) < 0) continue;
        vg_dim d;
        ok = vg_expr(F, F->f->loc, rx_e_var(F->M->m->arena, v), &d);
        if (!ok) break;
        int64_t h = vg_new_slot(F);
        const char *msg = rx_arena_printf(F->M->tmp, "%s: %s must be at most %lld (its upper bound, which the "
                                          "static memory plan is sized for)", F->f->name, v->name, (long long)ub);
        RX_EMIT(&F->code, RX_OP_MIN, h, d.tag, d.val, RX_D_IMM, ub);
        RX_EMIT(&F->code, RX_OP_ASSERT_EQ, rx_rxa_add_string(F->M->b, msg), RX_D_SLOT, h, d.tag, d.val);
    }
    RX_VEC_FREE(vs);
    return ok;
}

bool vg_lower_function(vg_fn *F)
{
    const rx_func *f = F->f;
    vg_liveness(F);
    vg_plan_function(F, &F->plan);
    F->nregs = f->nparams;
    for (int i = 0; i < f->nparams; i++) F->reg_of[f->params[i]->u.var.id] = i;
    vg_defer_vec defer = {0};
    bool ok = true;
    for (int i = 0; i < f->nparams && ok; i++)
        ok = vg_match(F, f->params[i]->loc, i, f->params[i]->sinfo, f->params[i]->u.var.name, &defer);
    ok = ok && vg_flush_defer(F, f->loc, &defer) && check_bounds(F);
    RX_VEC_FREE(defer);
    for (int k = 0; k < F->plan.st.n && ok; k++) { /* static storages: once, at entry */
        vg_storage *st = &F->plan.st.items[k];
        if (st->size < 0) continue;
        st->reg = vg_new_reg(F);
        RX_EMIT(&F->code, RX_OP_ALLOC_STORAGE, st->reg, RX_D_IMM, st->size, F->M->dev_type);
    }
    return ok && lower_seq(F, f->body, -1);
}
