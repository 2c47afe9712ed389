/*
 * gpu_matmul.c — the tiles schedule: matmuls as work-group tiles staged in local memory.
 *
 * A matmul, batched or not, and whatever reshape or permute FuseTIR folded into its
 * operands, is a fold (gpu_reduce.c) under a grid chain whose last two loops I and J
 * are the output's rows and columns:
 *
 *     for batch..., i, j:  for k:  C[idx] = C[idx] + x * y
 *
 * where x does not depend on j and y does not depend on i (through the block's
 * iterators; x and y are any expressions: A[b, i, k], A[k, i] of a transpose, a
 * reshape's index arithmetic, a cast). One work-group of tile × tile work-items (the
 * target's `tile`) computes a tile × tile block of C (TVM dlight's matmul rule, without
 * its register micro-tiles):
 *
 *     __local T As[tile * tile], Bs[tile * tile]                 at kernel scope
 *     for each block (batch, bi, bj) of this group (grid-stride over the blocks):
 *         acc = 0
 *         for k0 = 0, tile, 2 tile, ... < K:
 *             As[ty][tx] = x(i = bi tile + ty, k = k0 + tx)   0 outside I or K
 *             Bs[ty][tx] = y(k = k0 + ty, j = bj tile + tx)   0 outside K or J
 *             barrier
 *             acc += sum over kk of As[ty][kk] * Bs[kk][tx]
 *             barrier
 *         if (bi tile + ty, bj tile + tx) is inside I × J:  C[idx] = init + acc
 *
 * Each element of x and y is read from global memory once per tile it takes part in
 * (K / tile times fewer reads than one work-item per output), the edge guards make any
 * symbolic I, J, K correct, and the zeros of the padding add nothing. The schedule is
 * taken when K is symbolic or at least `tile`, I is not a literal of at most
 * RX_GPU_MV_ROWS and J not a literal below 2 (a matrix-vector product with one row would
 * idle all but one row of the tile: it stays one work-item per output; a symbolic I
 * gets both kernels and the launch records choose at run time, gpu_kernel.c). Local
 * memory: 2 tile² elements, checked against max_local_bytes like the rows schedule's.
 * GLSL: the tiles are `shared` (hoisted), indexed with `int`s; the 64-bit index
 * arithmetic starts from the unsigned local id (rx_tyl, rx_txl), since lavapipe
 * miscompiles a sign-extended int compared with a constant (gpu_dialect.c).
 */
#include <stdio.h>

#include "gpu_int.h"

/* Whether e depends on loop variable v: directly or through an iterator of block b
 * whose bind does. */
static bool depends(const rx_expr *e, const rx_stmt *b, const rx_svar *v)
{
    if (rx_expr_uses_var(e, v)) return true;
    for (int i = 0; i < b->u.block.niters; i++) {
        const rx_iter *it = &b->u.block.iters[i];
        if (it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var) continue;
        if (rx_expr_uses_var(e, it->var) && (!it->bind || rx_expr_uses_var(it->bind, v)))
            return true;
    }
    return false;
}

bool rx_gpu_match_matmul(const rx_stmt *const *chain, int n, const rx_stmts *under, rx_gpu_red *r)
{
    if (n < 2 || !rx_gpu_match_fold(under, r) || r->op != RX_E_ADD) return false;
    rx_dtype t = (rx_dtype)r->store->u.store.buf->dtype;
    if (t != RX_DT_F32 || r->val->kind != RX_E_MUL || (rx_dtype)r->val->dtype != t) return false;
    const rx_svar *vi = chain[n - 2]->u.for_.var, *vj = chain[n - 1]->u.for_.var;
    const rx_expr *a = r->val->u.op.a, *b = r->val->u.op.b;
    const rx_stmt *blk = r->block;
    if (depends(a, blk, vj) || depends(b, blk, vi)) {
        const rx_expr *tmp = a;
        a = b;
        b = tmp;
    }
    if (depends(a, blk, vj) || depends(b, blk, vi)) return false;
    r->x = a;
    r->y = b;
    return true;
}

bool rx_gpu_match_tiles(const gk *k, const rx_stmt *const *chain, int n, const rx_stmts *under,
                        rx_gpu_red *r)
{
    int64_t v;
    if (!rx_gpu_match_matmul(chain, n, under, r)) return false;
    int tile = (int)rx_target_int(k->t, "tile");
    if (rx_expr_is_const(r->loop->u.for_.extent, &v) && v < tile) return false;
    if (rx_expr_is_const(chain[n - 2]->u.for_.extent, &v) && v <= RX_GPU_MV_ROWS) return false;
    if (rx_expr_is_const(chain[n - 1]->u.for_.extent, &v) && v < 2) return false;
    r->tile = tile;
    return rx_gpu_local_fits(k, r->loop, 2LL * tile * tile * 4, "the tiles schedule of this matmul",
                             &r->local_bytes);
}

void rx_gpu_bind_loop(cg *g, const rx_stmt *s, const char *offset)
{
    const rx_svar *v = s->u.for_.var;
    const char *ct = rxi_cg_ctype((rx_dtype)v->dtype);
    char *nm = rxi_cg_fresh(g, v->name);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s %s = ", ct, nm);
    rxi_cg_cast_open(g, ct);
    rxi_cg_expr_as(g, s->u.for_.min, (rx_dtype)v->dtype, s->loc);
    rx_sb_printf(g->out, " + %s));\n", offset);
    rxi_cg_unused(g, nm);
    rxi_cg_push_sym(g, v, nm);
}

/* One tile's load: DST[rx_ty * T + rx_tx] = e with I, J, K at the given offsets, or 0
 * outside the guard. */
static void load_tile(cg *g, const rx_stmt *const *chain, int n, const rx_gpu_red *r,
                      const char *dst, const rx_expr *e, const char *guard, const char *io,
                      const char *jo, const char *ko)
{
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "{\n");
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "float rx_v = 0.0f;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (%s) {\n", guard);
    g->indent++;
    int mark = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 2], io);
    rx_gpu_bind_loop(g, chain[n - 1], jo);
    rx_gpu_bind_loop(g, r->loop, ko);
    rxi_cg_iters(g, r->block, false);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_v = ");
    rxi_cg_expr_as(g, e, RX_DT_F32, r->store->loc);
    rx_sb_puts(g->out, ";\n");
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s[rx_ty * %d + rx_tx] = rx_v;\n", dst, r->tile);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

void rx_gpu_blocks_open(gk *k, int outer, const char *per)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_nb = ");
    for (int i = 0; i < outer; i++) rx_sb_printf(g->out, "rx_e%d * ", i);
    rx_sb_printf(g->out, "%s;\n", per);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_g = %s; rx_g < rx_nb; rx_g += %s) {\n", k->dl->group_id,
                 k->dl->num_groups);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "long rx_r = rx_g;\n");
}

void rx_gpu_bind_outer(cg *g, const rx_stmt *const *chain, int outer)
{
    for (int i = outer - 1; i >= 0; i--) {
        rx_sb off = {0};
        rx_sb_printf(&off, "rx_r %% rx_e%d", i);
        rx_gpu_bind_loop(g, chain[i], rx_sb_str(&off));
        rx_sb_free(&off);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "rx_r /= rx_e%d;\n", i);
    }
}

void rx_gpu_emit_tiles(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    int T = r->tile;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_As[%d];\n", dl->local_decl, T * T);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_Bs[%d];\n", dl->local_decl, T * T);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s rx_t = %s, rx_ty = rx_t / %d, rx_tx = rx_t %% %d;\n",
                 dl->lidx, dl->local_id, T, T);
    /* the same as 64-bit values for the index arithmetic, converted from the unsigned id:
     * lavapipe miscompiles a sign-extended int compared with a constant (gpu_dialect.c) */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_tyl = %s / %d, rx_txl = %s %% %d;\n", dl->local_id64, T,
                 dl->local_id64, T);
    rx_gpu_chain_count(g, chain, n);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_ti = (rx_e%d + %d) / %d, rx_tj = (rx_e%d + %d) / %d;\n",
                 n - 2, T - 1, T, n - 1, T - 1, T);
    rx_gpu_blocks_open(k, n - 2, "rx_ti * rx_tj");
    int mark = g->syms.n;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_bj = rx_r % rx_tj;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_r /= rx_tj;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_bi = rx_r % rx_ti;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_r /= rx_ti;\n");
    rx_gpu_bind_outer(g, chain, n - 2); /* the batch loops */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_i = rx_bi * %d + rx_tyl, rx_j = rx_bj * %d + rx_txl;\n", T, T);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "float rx_acc = 0.0f;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, r->loop->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k0 = 0; rx_k0 < rx_ext; rx_k0 += %d) {\n", T);
    g->indent++;
    rx_sb gx = {0}, gy = {0}, ka = {0}, kb = {0};
    rx_sb_printf(&gx, "rx_i < rx_e%d && rx_k0 + rx_txl < rx_ext", n - 2);
    rx_sb_printf(&gy, "rx_bj * %d + rx_txl < rx_e%d && rx_k0 + rx_tyl < rx_ext", T, n - 1);
    rx_sb_printf(&ka, "rx_bi * %d + rx_tyl", T);
    rx_sb_printf(&kb, "rx_bj * %d + rx_txl", T);
    /* x at (i, k0 + tx) with j at its first value; y at (k0 + ty, j) with i at its first */
    load_tile(g, chain, n, r, "rx_As", r->x, rx_sb_str(&gx), rx_sb_str(&ka), "0", "rx_k0 + rx_txl");
    load_tile(g, chain, n, r, "rx_Bs", r->y, rx_sb_str(&gy), "0", rx_sb_str(&kb), "rx_k0 + rx_tyl");
    rx_sb_free(&gx);
    rx_sb_free(&gy);
    rx_sb_free(&ka);
    rx_sb_free(&kb);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_kk = 0; rx_kk < %d; rx_kk++)\n", T);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "    rx_acc += rx_As[rx_ty * %d + rx_kk] * rx_Bs[rx_kk * %d + rx_tx];\n", T, T);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_i < rx_e%d && rx_j < rx_e%d) {\n", n - 2, n - 1);
    g->indent++;
    int smark = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 2], "rx_i");
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_final_store(g, r, "rx_acc");
    rxi_cg_pop_syms(g, smark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}
