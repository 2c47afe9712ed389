/*
 * fuse_args.c — FuseOps' per-target argument limit (TVM's max_function_args).
 *
 * A Vulkan kernel takes its scalar arguments as push constants (gpu_glsl.c): per buffer
 * its element offset (4 bytes), per symbolic variable 8 bytes, in at most
 * max_push_bytes (128 on most devices), and its buffers are storage-buffer bindings,
 * at most maxPerStageDescriptorStorageBuffers (32 on lavapipe, the status record one
 * of them). FuseOps groups by compute pattern with no regard
 * to how many tensors a group reads, so a chain of gathers and scatters (Swin's shifted
 * windows: five scatter_nd, 37 buffers, 304 bytes at 8 bytes each, 156 at 4) or a QDQ
 * block (20 buffers: per-channel scales, zero points and clamp bounds as constants) was
 * refused at codegen. fuse_ops.c asks rxi_fuse_arg_bytes for every merge it would make
 * when the target sets a limit (rx_fuse_limit, from the driver) and refuses the merge
 * that would pass it; the groups stay as they were, each its own kernel. A fused
 * loop function's kernels take all its buffers: its inputs, its output, and the
 * intermediates FuseTIR materializes (workspaces after lift_workspace): a member read
 * by another member whose loop function FuseTIR would not inline (its rule, asked of
 * the member's own body: ft_match_inline), and each member's own top-level
 * allocations (gpu_workspace.c and lift_workspace.c make them parameters). Swin's chain
 * of nine scatter_nd had 19 inputs, 9 such intermediates and 9 scatter workspaces:
 * 38 buffers in each of its kernels, counted as 20 before. Counting is over the group's members only (at most MAX_GROUP =
 * 64 nodes, a few operands each).
 */
#include "fuse_args.h"

#include "fuse_tir_int.h"

enum { MAX_INLINE_NODES = 256 }; /* fuse_tir.c's bound on an inlined formula */

static bool is_member(const rx_node *const *vars, int n, const rx_node *a)
{
    for (int k = 0; k < n; k++)
        if (vars[k] == a) return true;
    return false;
}

void rxi_fuse_sinfo_vars(const rx_sinfo *s, rx_svar_vec *out)
{
    if (!s) return;
    if ((s->kind == RX_SI_TENSOR || s->kind == RX_SI_SHAPE) && s->dims)
        for (int i = 0; i < s->ndim; i++) rx_expr_vars(s->dims[i], out);
    if (s->kind == RX_SI_PRIM) rx_expr_vars(s->value, out);
    if (s->kind == RX_SI_TUPLE)
        for (int i = 0; i < s->nfields; i++) rxi_fuse_sinfo_vars(s->fields[i], out);
}

/* Whether FuseTIR computes the output of call (pattern pat) inline in a group rather
 * than materializing it (fuse_tir.c step 3: at most Injective, one top-level nest that
 * is its one plain writer and that no other nest touches). */
static bool inlined(rx_arena *a, const rx_node *call, rx_pattern pat)
{
    const rx_func *f = call->u.call.callee->kind == RX_N_GLOBAL ? call->u.call.callee->u.global.fn : NULL;
    if (!f || f->kind != RX_F_TIR || pat > RX_PAT_INJECTIVE || !call->u.call.out ||
        call->u.call.out->kind == RX_SI_TUPLE)
        return false;
    const rx_buffer *y = NULL;
    for (int i = 0; i < f->ntparams; i++)
        if (f->tparams[i].buf) y = f->tparams[i].buf;
    for (int i = 0; y && i < f->tbody.n; i++) {
        ft_inline found;
        if (!ft_match_inline(a, &(rx_stmts){&f->tbody.items[i], 1}, y, MAX_INLINE_NODES, &found))
            continue;
        bool alone = true;
        for (int j = 0; j < f->tbody.n && alone; j++)
            alone = j == i || !ft_stmts_touch(&(rx_stmts){&f->tbody.items[j], 1}, y);
        return alone;
    }
    return false;
}

int64_t rxi_fuse_arg_bytes(const rx_node *const *calls, const rx_node *const *vars,
                           const uint8_t *pats, int n, rx_arena *scratch, const rx_fuse_limit *lim,
                           int *nbuf)
{
    RX_VEC(const rx_node *) in = {0};
    rx_svar_vec sv = {0};
    int mat = 0; /* intermediates FuseTIR materializes: workspaces, parameters too */
    for (int k = 0; k < n; k++) {
        const rx_node *call = calls[k];
        bool read = false; /* by another member: an intermediate (the root is not) */
        for (int j = 0; j < n && !read; j++)
            for (int q = 0; q < calls[j]->nargs && !read; q++) read = calls[j]->args[q] == vars[k];
        if (read && !inlined(scratch, call, (rx_pattern)pats[k])) mat++;
        const rx_func *f = call->u.call.callee->kind == RX_N_GLOBAL ? call->u.call.callee->u.global.fn : NULL;
        for (int i = 0; f && f->kind == RX_F_TIR && i < f->tbody.n; i++)
            mat += f->tbody.items[i]->kind == RX_S_ALLOC; /* its own workspaces, lifted too */
        for (int a = 0; a < call->nargs; a++) {
            const rx_node *x = call->args[a];
            if (is_member(vars, n, x)) continue;
            bool seen = false;
            for (int i = 0; i < in.n && !seen; i++)
                seen =
                    in.items[i] == x || (x->kind == RX_N_CONST && in.items[i]->kind == RX_N_CONST &&
                                         in.items[i]->u.konst == x->u.konst);
            if (seen) continue;
            RX_VEC_PUSH(in, x);
            rxi_fuse_sinfo_vars(x->sinfo, &sv);
        }
        rxi_fuse_sinfo_vars(call->u.call.out, &sv);
        for (int t = 0; t < call->u.call.ntir_vars; t++)
            rx_expr_vars(call->u.call.tir_vars[t], &sv);
    }
    int nvar = 0;
    for (int i = 0; i < sv.n; i++) {
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) dup = sv.items[j] == sv.items[i];
        nvar += !dup;
    }
    *nbuf = in.n + 1 + mat;
    int64_t bytes = (int64_t)*nbuf * lim->buf_bytes;
    if (nvar && lim->var_bytes > 0)
        bytes = (bytes + lim->var_bytes - 1) / lim->var_bytes * lim->var_bytes +
                (int64_t)nvar * lim->var_bytes;
    RX_VEC_FREE(in);
    RX_VEC_FREE(sv);
    return bytes;
}
