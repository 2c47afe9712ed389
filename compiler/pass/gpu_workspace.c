/*
 * gpu_workspace.c — GPU targets: FuseTIR's small intermediates become workspaces.
 *
 * FuseTIR (fuse_tir.c) allocates an intermediate of a constant size up to 16 KiB with
 * local scope: on the CPU it is a stack array of the one thread running the call. On a
 * GPU a local buffer is a work-item's private array, so a loop function with one at its
 * top level cannot be split into grid kernels that share it: gpu_kernel.c runs the
 * whole function in one work-item. That is slow everywhere, and wrong on lavapipe,
 * whose loop limiter ends a work-item's loops after 65535 iterations in all (docs/gpu.md,
 * "Lavapipe's defects"): a QDQ ResNet block's int8 conv at 32 channels on 8 x 8 (an i32
 * accumulator of 8 KiB, 32 x 9 x 2048 = 590k iterations in one work-item) returned
 * garbage for most channels. Here every top-level local ALLOC of a loop function becomes
 * global before workspace lifting (lift_workspace.c), which makes it an output the graph
 * plans; each nest is then its own kernel, scheduled as a grid, rows or tiles.
 * Allocations inside loops stay private (a work-item's own scratch).
 *
 * Cost: one pass over each loop function's top-level statements.
 */
#include "relax/pass.h"

int rx_gpu_promote_local_allocs(rx_module *m)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *k = m->funcs[i];
        if (k->kind != RX_F_TIR) continue;
        for (int s = 0; s < k->tbody.n; s++) {
            rx_stmt *st = k->tbody.items[s];
            if (st->kind != RX_S_ALLOC || st->u.alloc.buf->scope != RX_SCOPE_LOCAL) continue;
            st->u.alloc.buf->scope = RX_SCOPE_GLOBAL;
            n++;
        }
    }
    return n;
}
