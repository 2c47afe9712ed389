/*
 * vmgen.c — the module-level half of the VM lowering (contract in vmgen.h).
 *
 * Step 1: number the functions. Graph functions become VM functions in module order
 * and loop functions kernels in module order, so a CALL or CALL_KERNEL can name any
 * callee before its code exists. Step 2: one kernel entry per loop function (the C
 * symbol of codegen.h, its buffer count, its svars as ivars). Step 3: lower each graph
 * function (lower.c) and add it with its signature descriptors. Errors in one function
 * do not stop the others, so one build reports every problem.
 */
#include "vg_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void vg_error(vg_module *M, rx_loc loc, const char *fmt, ...)
{
    rx_sb path = {0};
    rx_loc_render(&M->m->locs, loc, &path);
    va_list ap;
    va_start(ap, fmt);
    rx_diag_vadd(M->d, rx_sb_str(&path), fmt, ap);
    va_end(ap);
    rx_sb_free(&path);
    M->ok = false;
}

uint32_t rx_vmgen_dtype(rx_dtype t)
{
    switch (t) {
    case RX_DT_BOOL: return RX_RXA_BOOL;
    case RX_DT_I8: return RX_RXA_DTYPE(0, 8, 1);
    case RX_DT_I16: return RX_RXA_DTYPE(0, 16, 1);
    case RX_DT_I32: return RX_RXA_I32;
    case RX_DT_I64: return RX_RXA_I64;
    case RX_DT_U8: return RX_RXA_DTYPE(1, 8, 1);
    case RX_DT_U16: return RX_RXA_DTYPE(1, 16, 1);
    case RX_DT_U32: return RX_RXA_DTYPE(1, 32, 1);
    case RX_DT_U64: return RX_RXA_DTYPE(1, 64, 1);
    case RX_DT_F16: return RX_RXA_F16;
    case RX_DT_BF16: return RX_RXA_DTYPE(4, 16, 1);
    case RX_DT_F32: return RX_RXA_F32;
    case RX_DT_F64: return RX_RXA_F64;
    default: return 0;
    }
}

int64_t vg_kernel_index(const vg_module *M, const rx_func *f)
{
    for (int i = 0; i < M->kfuncs.n; i++)
        if (M->kfuncs.items[i] == f) return i;
    return -1;
}

int64_t vg_func_index(const vg_module *M, const rx_func *f)
{
    for (int i = 0; i < M->gfuncs.n; i++)
        if (M->gfuncs.items[i] == f) return i;
    return -1;
}

int64_t vg_const_index(vg_module *M, const rx_const *c)
{
    for (int i = 0; i < M->consts.n; i++)
        if (M->consts.items[i] == c) return i;
    uint32_t dt = rx_vmgen_dtype(c->dtype);
    uint32_t k = dt ? rx_rxa_add_const(M->b, dt, c->ndim, c->shape, c->data, c->nbytes) : RX_RXA_NONE;
    if (k == RX_RXA_NONE) {
        vg_error(M, c->loc, "constant%s%s: cannot be stored (dtype %s, %zu bytes)",
                 c->name ? " " : "", c->name ? c->name : "", rx_dtype_name(c->dtype), c->nbytes);
        return -1;
    }
    RX_ASSERT((int)k == M->consts.n);
    RX_VEC_PUSH(M->consts, c);
    return k;
}

#define NOTE(vec, name)                                       \
    do {                                                      \
        for (int i_ = 0; i_ < (vec).n; i_++)                  \
            if (!strcmp((vec).items[i_], (name))) return;     \
        RX_VEC_PUSH(vec, name);                               \
    } while (0)

void vg_note_lib(vg_module *M, const char *name) { NOTE(M->info->libs, name); }
void vg_note_builtin(vg_module *M, const char *name) { NOTE(M->info->builtins, name); }

/* Step 2: the kernel table. */
static void add_kernels(vg_module *M)
{
    rx_sb sym = {0};
    for (int i = 0; i < M->kfuncs.n; i++) {
        const rx_func *k = M->kfuncs.items[i];
        int nbufs = 0;
        for (int j = 0; j < k->ntparams; j++) nbufs += k->tparams[j].buf != NULL;
        const char **names = RX_NEWN(M->tmp, const char *, k->nsvars > 0 ? k->nsvars : 1);
        for (int j = 0; j < k->nsvars; j++) names[j] = k->svars[j]->name;
        rx_sb_reset(&sym);
        rx_codegen_symbol(k->name, &sym);
        uint32_t idx = rx_rxa_add_kernel(M->b, rx_sb_str(&sym), M->kernel_section,
                                         (uint32_t)nbufs, (uint32_t)k->nsvars, names);
        RX_ASSERT((int)idx == i);
    }
    rx_sb_free(&sym);
}

/* Step 3 for one function: lower, then add it with its descriptors. */
static void add_function(vg_module *M, rx_func *f)
{
    vg_fn F = {0};
    F.M = M;
    F.f = f;
    F.ar = rx_arith_new(M->m->arena);
    F.nids = M->m->next_id > 0 ? M->m->next_id : 1;
    int32_t *arrays = rx_xmalloc(sizeof(int32_t) * 4 * (size_t)F.nids);
    F.reg_of = arrays;
    F.def_seq = arrays + F.nids;
    F.def_item = arrays + 2 * F.nids;
    F.last_use = arrays + 3 * F.nids;
    for (int32_t i = 0; i < F.nids; i++) F.reg_of[i] = -1;
    F.cur_var = -1;

    bool ok = vg_lower_function(&F);
    if (ok && (F.nregs > (1 << 20) || F.nheap > (1 << 24))) {
        vg_error(M, f->loc, "%s: too large for the VM (%lld registers, %lld heap slots)",
                 f->name, (long long)F.nregs, (long long)F.nheap);
        ok = false;
    }
    if (ok) {
        rx_rxa_func desc = {0};
        desc.name = f->name;
        desc.nsym = (uint32_t)f->nsvars;
        const char **syms = RX_NEWN(M->tmp, const char *, f->nsvars > 0 ? f->nsvars : 1);
        for (int i = 0; i < f->nsvars; i++) syms[i] = f->svars[i]->name;
        desc.syms = syms;
        desc.nparams = (uint32_t)f->nparams;
        rx_rxa_type *params = RX_NEWN(M->tmp, rx_rxa_type, f->nparams > 0 ? f->nparams : 1);
        for (int i = 0; i < f->nparams; i++)
            vg_descriptor(M, f, f->params[i]->sinfo, f->params[i]->u.var.name, &params[i]);
        desc.params = params;
        vg_descriptor(M, f, f->ret, NULL, &desc.result);
        desc.nregs = (uint32_t)F.nregs;
        desc.heap_size = (uint32_t)F.nheap;
        rx_rxa_add_function(M->b, &desc, F.code.w, F.code.n);
        RX_VEC_PUSH(M->info->nregs, desc.nregs);
        RX_VEC_PUSH(M->info->heap, desc.heap_size);
        RX_VEC_PUSH(M->info->words, (uint32_t)F.code.n);
        rx_vmgen_mem mem;
        vg_plan_summary(&F, &mem);
        RX_VEC_PUSH(M->info->mem, mem);
    }
    rx_rxa_code_free(&F.code);
    vg_plan_free(&F.plan);
    vg_liveness_free(&F);
    RX_VEC_FREE(F.syms);
    RX_VEC_FREE(F.cse);
    free(arrays);
    rx_arith_free(F.ar);
}

bool rx_vmgen(rx_module *m, rx_rxa_builder *b, rx_vmgen_info *info, rx_diags *d)
{
    return rx_vmgen_with(m, b, NULL, info, d);
}

bool rx_vmgen_with(rx_module *m, rx_rxa_builder *b, const rx_vmgen_opts *o,
                   rx_vmgen_info *info, rx_diags *d)
{
    vg_module M = {0};
    M.no_plan = o && o->no_plan;
    M.dev_type = o && o->dev_type ? o->dev_type : RX_DEV_CPU;
    M.kernel_section = o && o->kernel_section ? o->kernel_section : RX_RXA_KERNELS_CPU;
    M.m = m;
    M.b = b;
    M.d = d;
    M.info = info;
    M.tmp = rx_arena_new();
    M.ok = true;
    /* Step 1 */
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i]->kind == RX_F_RELAX) RX_VEC_PUSH(M.gfuncs, m->funcs[i]);
        else RX_VEC_PUSH(M.kfuncs, m->funcs[i]);
    }
    add_kernels(&M);
    for (int i = 0; i < M.gfuncs.n; i++) add_function(&M, M.gfuncs.items[i]);
    RX_VEC_FREE(M.gfuncs);
    RX_VEC_FREE(M.kfuncs);
    RX_VEC_FREE(M.consts);
    rx_arena_free(M.tmp);
    return M.ok;
}

void rx_vmgen_info_free(rx_vmgen_info *info)
{
    RX_VEC_FREE(info->libs);
    RX_VEC_FREE(info->builtins);
    RX_VEC_FREE(info->nregs);
    RX_VEC_FREE(info->heap);
    RX_VEC_FREE(info->words);
    RX_VEC_FREE(info->mem);
}
