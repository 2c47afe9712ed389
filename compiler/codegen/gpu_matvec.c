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
 * tolerance of the CPU's serial order.
 *
 * Vectorized loads. When y is a load of a buffer parameter whose flat element index
 * grows by exactly 1 with j (proved symbolically with the block's iterators substituted:
 * a (K, N) weight, plain or batched, not one read through a permute), a work-item takes
 * VEC = 4 adjacent columns j .. j + 3 (a group 4 C = 128 of them) with four partial
 * sums: per step it reads x(i, k) once and the four weights with one vector load,
 * OpenCL's vload4 (element alignment is all it needs) or, in GLSL, a vec4 view of the
 * same binding (`readonly buffer W_B4 { vec4 W_b4[]; }`, hoisted to module scope) when
 * the absolute index is a multiple of 4, else four scalar loads into the vec4 (a vec4
 * element of a float[] starts at 16 bytes; a row of an odd N is not aligned). The
 * guard `j + 3 < J` picks that loop; the block's last, partial vector takes the scalar
 * loop with a guard per column. The tree then sums four values per work-item
 * (max_threads x 4 floats of local memory; without the room, or the proof, or for a
 * literal J below 128, or in a dialect without vectors (CUDA here), the scalar form).
 *
 * Taken for a matmul (rx_gpu_match_matmul) whose row count is a literal of at most
 * RX_GPU_MV_ROWS, or symbolic (then next to the tiles kernel, the launch records choose
 * at run time, gpu_kernel.c), K symbolic or at least S, J symbolic or at least C.
 * Local memory: max_threads floats (times 4 with vector loads), checked against
 * max_local_bytes.
 */
#include <stdio.h>

#include "gpu_int.h"

enum {
    COLS = 32, /* work-items across the output columns (fewer when max_threads is smaller) */
    VEC = 4    /* columns per work-item with vectorized loads */
};

/* Whether y is a load of a buffer parameter whose element index grows by exactly 1 with
 * the output column vj (through the block's iterators, flattened row-major over the
 * buffer's shape, proved for every value of the other variables): then four adjacent
 * columns are four adjacent elements of one buffer, a float4/vec4 load. */
static bool columns_adjacent(const rx_func *f, const rx_gpu_red *r, const rx_svar *vj)
{
    const rx_expr *y = r->y;
    if (y->kind != RX_E_LOAD || (rx_dtype)y->dtype != RX_DT_F32) return false;
    const rx_buffer *b = y->u.load.buf;
    bool param = false;
    for (int i = 0; i < f->ntparams; i++) param |= f->tparams[i].buf == b;
    if (!param || b->ndim < 1 || y->u.load.nidx != b->ndim) return false;
    rx_arena *a = rx_arena_new();
    rx_vmap its = {0}, step = {0};
    for (int i = 0; i < r->block->u.block.niters; i++) {
        const rx_iter *it = &r->block->u.block.iters[i];
        if (it->bind) rx_vmap_set(&its, it->var, it->bind);
    }
    rx_expr *flat = NULL;
    bool ok = true;
    for (int d = 0; d < b->ndim && ok; d++) {
        rx_expr *ix = y->u.load.idx[d], *ext = b->shape[d];
        ok = !rx_expr_loads_buf(ix, NULL); /* an index read from data is checked, not linear */
        ix = rx_expr_subst(a, ix, &its);
        if ((rx_dtype)ix->dtype != RX_DT_I64) ix = rx_e_cast(a, RX_DT_I64, ix);
        if ((rx_dtype)ext->dtype != RX_DT_I64) ext = rx_e_cast(a, RX_DT_I64, ext);
        flat = d ? rx_e_binary(a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, flat, ext), ix) : ix;
    }
    if (ok) {
        rx_vmap_set(
            &step, vj,
            rx_e_binary(a, RX_E_ADD, rx_e_var(a, vj), rx_e_typed_int(a, 1, (rx_dtype)vj->dtype)));
        rx_arith *ar = rx_arith_new(a);
        ok = rx_arith_prove_equal(ar, rx_expr_subst(a, flat, &step),
                                  rx_e_binary(a, RX_E_ADD, flat, rx_e_int(a, 1)));
        rx_arith_free(ar);
    }
    rx_vmap_free(&its);
    rx_vmap_free(&step);
    rx_arena_free(a);
    return ok;
}

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
    bool jlit = rx_expr_is_const(chain[n - 1]->u.for_.extent, &v);
    if (jlit && v < cols) return false;
    /* four columns per work-item when they are four adjacent floats, the group's block
     * is no wider than a literal J and its accumulators fit the local memory */
    if (k->dl->vec4 && cols == COLS && (!jlit || v >= VEC * cols) &&
        threads * VEC * 4 <= rx_target_int(k->t, "max_local_bytes") &&
        columns_adjacent(k->g->f, r, chain[n - 1]->u.for_.var)) {
        r->vec = r->y;
        cols *= VEC;
    }
    r->cols = cols;
    int64_t per = r->vec ? VEC : 1;
    return rx_gpu_local_fits(k, r->loop, threads * per * 4, "the matvec schedule of this matmul",
                             &r->local_bytes);
}

/* The K loop of work-item (rx_sl, rx_cl) over its W columns from rx_j, one scalar load
 * of y per column and step; with several columns each is guarded (the block's edge). */
static void k_loop_scalar(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int W,
                          int S)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_sl; rx_k < rx_ext; rx_k += %d) {\n", S);
    g->indent++;
    for (int c = 0; c < W; c++) {
        rx_sb jo = {0};
        rx_sb_printf(&jo, "rx_j + %d", c);
        if (W > 1) {
            rx_gpu_ind(g);
            rx_sb_printf(g->out, "if (%s < rx_e%d) {\n", rx_sb_str(&jo), n - 1);
            g->indent++;
        }
        int mark = g->syms.n;
        rx_gpu_bind_loop(g, chain[n - 1], rx_sb_str(&jo));
        rx_gpu_bind_loop(g, r->loop, "rx_k");
        rxi_cg_iters(g, r->block, false);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "rx_a%d += ", c);
        rxi_cg_expr_as(g, r->val, RX_DT_F32, r->store->loc);
        rx_sb_puts(g->out, ";\n");
        rxi_cg_pop_syms(g, mark);
        if (W > 1) {
            g->indent--;
            rx_gpu_ind(g);
            rx_sb_puts(g->out, "}\n");
        }
        rx_sb_free(&jo);
    }
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* The K loop over four in-range columns from rx_j: x once per step, y as one vector
 * load of the four adjacent floats (r->vec). */
static void k_loop_vec(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int S)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_sl; rx_k < rx_ext; rx_k += %d) {\n", S);
    g->indent++;
    int mark = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_bind_loop(g, r->loop, "rx_k");
    rxi_cg_iters(g, r->block, false);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const float rx_x = ");
    rxi_cg_expr_as(g, r->x, RX_DT_F32, r->store->loc);
    rx_sb_puts(g->out, ";\n");
    const rx_buffer *b = r->vec->u.load.buf;
    const cg_sym *bs = rxi_cg_lookup(g, b);
    rx_sb idx = {0}, *save = g->out;
    g->out = &idx;
    rxi_cg_index(g, bs, r->vec->u.load.idx, r->vec->u.load.nidx, r->store->loc);
    g->out = save;
    if (dl->vload4) {
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "const %s rx_w = ", dl->vec4);
        rx_sb_printf(g->out, dl->vload4, bs->name, rx_sb_str(&idx));
        rx_sb_puts(g->out, ";\n");
    } else {
        rx_gpu_glsl_vload4(k, b, "rx_w", rx_sb_str(&idx));
    }
    rx_sb_free(&idx);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_a0 += rx_x * rx_w.x; rx_a1 += rx_x * rx_w.y; rx_a2 += rx_x * rx_w.z; "
                       "rx_a3 += rx_x * rx_w.w;\n");
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

void rx_gpu_emit_matvec(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    const int W = r->vec ? VEC : 1, C = r->cols, L = C / W; /* L work-items across C columns */
    int64_t threads = rx_target_int(k->t, "max_threads");
    int S = (int)(threads / L);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_mv[%lld];\n", dl->local_decl, (long long)threads * W);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s rx_t = %s;\n", dl->lidx, dl->local_id);
    /* 64-bit column and slice from the unsigned id: lavapipe miscompiles a sign-extended
     * int compared with a constant (gpu_dialect.c) */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_cl = %s %% %d, rx_sl = %s / %d;\n", dl->local_id64, L,
                 dl->local_id64, L);
    rx_gpu_chain_count(g, chain, n);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_tj = (rx_e%d + %d) / %d;\n", n - 1, C - 1, C);
    rx_gpu_blocks_open(k, n - 1, "rx_tj");
    int mark = g->syms.n;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_j = (rx_r %% rx_tj) * %d + rx_cl * %d;\n", C, W);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_r /= rx_tj;\n");
    rx_gpu_bind_outer(g, chain, n - 1); /* the row and the batch loops */
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "float ");
    for (int c = 0; c < W; c++) rx_sb_printf(g->out, "%srx_a%d = 0.0f", c ? ", " : "", c);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, r->loop->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_j + %d < rx_e%d) {%s\n", W - 1, n - 1,
                 W > 1 ? " /* four columns in range: vector loads */" : "");
    g->indent++;
    if (W > 1)
        k_loop_vec(k, chain, n, r, S);
    else
        k_loop_scalar(k, chain, n, r, 1, S);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    if (W > 1) { /* the block's edge: the columns in range, scalar loads */
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "else {\n");
        g->indent++;
        k_loop_scalar(k, chain, n, r, W, S);
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
    }
    /* the tree over the slices, W partial sums per work-item */
    rx_gpu_ind(g);
    for (int c = 0; c < W; c++)
        rx_sb_printf(g->out, "%srx_mv[rx_t * %d + %d] = rx_a%d;", c ? " " : "", W, c, c);
    rx_sb_puts(g->out, "\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (%s rx_h = %d; rx_h >= %d; rx_h /= 2) {\n", dl->lidx, S / 2 * L, L);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "if (rx_t < rx_h) {\n");
    for (int c = 0; c < W; c++) {
        rx_gpu_ind(g);
        rx_sb_printf(
            g->out,
            "    rx_mv[rx_t * %d + %d] = rx_mv[rx_t * %d + %d] + rx_mv[(rx_t + rx_h) * %d + %d];\n",
            W, c, W, c, W, c);
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* slice 0 stores init + total for each column in range */
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "if (rx_sl == 0) {\n");
    g->indent++;
    for (int c = 0; c < W; c++) {
        rx_sb jo = {0}, tot = {0};
        rx_sb_printf(&jo, "rx_j + %d", c);
        rx_sb_printf(&tot, "rx_mv[rx_t * %d + %d]", W, c);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "if (%s < rx_e%d) {\n", rx_sb_str(&jo), n - 1);
        g->indent++;
        int smark = g->syms.n;
        rx_gpu_bind_loop(g, chain[n - 1], rx_sb_str(&jo));
        rx_gpu_final_store(g, r, rx_sb_str(&tot));
        rxi_cg_pop_syms(g, smark);
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
        rx_sb_free(&jo);
        rx_sb_free(&tot);
    }
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
