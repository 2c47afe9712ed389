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
 * that would pass it; the groups stay as they were, each its own kernel. Counting is
 * over the group's members only (at most MAX_GROUP = 64 nodes, a few operands each).
 */
#include "fuse_args.h"

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

int64_t rxi_fuse_arg_bytes(const rx_node *const *calls, const rx_node *const *vars, int n,
                           const rx_fuse_limit *lim, int *nbuf)
{
    RX_VEC(const rx_node *) in = {0};
    rx_svar_vec sv = {0};
    for (int k = 0; k < n; k++) {
        const rx_node *call = calls[k];
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
    *nbuf = in.n + 1;
    int64_t bytes = (int64_t)(in.n + 1) * lim->buf_bytes;
    if (nvar && lim->var_bytes > 0)
        bytes = (bytes + lim->var_bytes - 1) / lim->var_bytes * lim->var_bytes +
                (int64_t)nvar * lim->var_bytes;
    RX_VEC_FREE(in);
    RX_VEC_FREE(sv);
    return bytes;
}
