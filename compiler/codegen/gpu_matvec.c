/*
 * gpu_matvec.c — the matvec schedule: matmuls with few rows (decode) as a cooperative
 * reduction over K, a work-group per block of output columns.
 *
 * A decode step's matmuls have a handful of rows (the batch b, at most RX_GPU_MV_ROWS)
 * and long K and N: (1, 4096) x (4096, 4096). The tiles schedule (gpu_matmul.c) would
 * idle all but b of each tile's rows; one work-item per output (the grid) runs K
 * multiply-adds serially in each of only b N work-items, each reading a column of the
 * weight with a stride of N. The matvec schedule (TVM dlight's GEMV rule, without its
 * cross-thread shuffles: OpenCL 1.2 has none) splits K across a work-group instead:
 *
 *     C = cols (32, a warp: adjacent work-items read 128 contiguous bytes of a row of a
 *     (K, N) weight), S = max_threads / C slices of K
 *     __local float rx_mv[max_threads]                             at kernel scope
 *     c = local_id % C, s = local_id / C
 *     for each block (batch..., i, bj) of this group (grid-stride over the blocks):
 *         j = bj C + c
 *         acc = 0
 *         if j < J:  for k = s, s + S, ... < K:  acc += x(i, k) * y(k, j)
 *         rx_mv[local_id] = acc; barrier
 *         for h = S / 2, S / 4, ..., 1:                       the tree over the slices
 *             if local_id < h C: rx_mv[local_id] += rx_mv[local_id + h C]; barrier
 *         if s == 0 and j < J:  C[.., i, j] = init + rx_mv[c]
 *         barrier                                              rx_mv is the next block's
 *
 * Each element of the weight is read once per row (by the one work-item of its column
 * and slice), x(i, k) once per column: the same element for the C work-items of a slice
 * (a broadcast). The edge guard on j and the K loop's bound make any symbolic I, J, K
 * correct; the barriers are outside the guards (every work-item of a group walks the
 * same blocks). The additions are a tree of S partial sums, within a float reduction's
 * tolerance of the CPU's serial order. x and y are expressions (reshape, permute and
 * casts folded by FuseTIR), so the loads are scalar: a float4 load needs a proof that
 * four adjacent columns are adjacent and 16-byte aligned in the buffer, which the
 * generator does not make yet (docs/gpu.md).
 *
 * Taken for a matmul (rx_gpu_match_matmul) whose row count is a literal of at most
 * RX_GPU_MV_ROWS, or symbolic (then next to the tiles kernel, the launch records choose
 * at run time, gpu_kernel.c), K symbolic or at least S, J symbolic or at least C.
 * Local memory: max_threads floats, checked against max_local_bytes.
 */
#include <stdio.h>

#include "gpu_int.h"

enum { COLS = 32 }; /* output columns per work-group (fewer when max_threads is smaller) */

bool rx_gpu_match_matvec(const gk *k, const rx_stmt *const *chain, int n, const rx_stmts *under,
                         bool rows_any, rx_gpu_red *r)
{
    int64_t v;
    if (!rx_gpu_match_matmul(chain, n, under, r)) return false;
    int64_t threads = rx_target_int(k->t, "max_threads");
    int cols = threads < COLS ? (int)threads : COLS;
    int64_t slices = threads / cols;
    bool lit = rx_expr_is_const(chain[n - 2]->u.for_.extent, &v);
    if (lit ? v > RX_GPU_MV_ROWS : !rows_any) return false;
    if (rx_expr_is_const(r->loop->u.for_.extent, &v) && v < slices) return false;
    if (rx_expr_is_const(chain[n - 1]->u.for_.extent, &v) && v < cols) return false;
    r->cols = cols;
    return rx_gpu_local_fits(k, r->loop, threads * 4, "the matvec schedule of this matmul",
                             &r->local_bytes);
}

void rx_gpu_emit_matvec(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    int C = r->cols;
    int64_t threads = rx_target_int(k->t, "max_threads");
    int S = (int)(threads / C);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_mv[%lld];\n", dl->local_decl, (long long)threads);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s rx_t = %s;\n", dl->lidx, dl->local_id);
    /* 64-bit column and slice from the unsigned id: lavapipe miscompiles a sign-extended
     * int compared with a constant (gpu_dialect.c) */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_cl = %s %% %d, rx_sl = %s / %d;\n", dl->local_id64, C,
                 dl->local_id64, C);
    rx_gpu_chain_count(g, chain, n);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_tj = (rx_e%d + %d) / %d;\n", n - 1, C - 1, C);
    rx_gpu_blocks_open(k, n - 1, "rx_tj");
    int mark = g->syms.n;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_j = (rx_r % rx_tj) * ");
    rx_sb_printf(g->out, "%d + rx_cl;\n", C);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_r /= rx_tj;\n");
    rx_gpu_bind_outer(g, chain, n - 1); /* the row and the batch loops */
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "float rx_acc = 0.0f;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_j < rx_e%d) {\n", n - 1);
    g->indent++;
    int jmark = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, r->loop->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_sl; rx_k < rx_ext; rx_k += %d) {\n", S);
    g->indent++;
    int kmark = g->syms.n;
    rx_gpu_bind_loop(g, r->loop, "rx_k");
    rxi_cg_iters(g, r->block, false);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_acc += ");
    rxi_cg_expr_as(g, r->val, RX_DT_F32, r->store->loc);
    rx_sb_puts(g->out, ";\n");
    rxi_cg_pop_syms(g, kmark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rxi_cg_pop_syms(g, jmark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* the tree over the slices */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "rx_mv[rx_t] = rx_acc;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (%s rx_h = %d; rx_h >= %d; rx_h /= 2) {\n", dl->lidx, S / 2 * C, C);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    if (rx_t < rx_h) rx_mv[rx_t] = rx_mv[rx_t] + rx_mv[rx_t + rx_h];\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "    %s;\n", dl->barrier);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* slice 0 stores init + total */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_sl == 0 && rx_j < rx_e%d) {\n", n - 1);
    g->indent++;
    int smark = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_final_store(g, r, "rx_mv[rx_t]");
    rxi_cg_pop_syms(g, smark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s; /* rx_mv is the next block's */\n", dl->barrier);
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}
