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
 * CUDA, rows in registers (emit_rows_in_registers): a block covers 16 columns, 4
 * work-items across them with a float4 each and max_threads / 4 slices of K, each
 * work-item keeping up to MR rows of the loops y is free of (the batch b of decode) in
 * registers, so a weight element is read once for all rows. With 16 rows a K step is
 * one float4 of y and 16 loads of x for 64 multiply-adds, so the step's integer work
 * decides the speed: where x's flat element index grows by exactly 1 with k
 * (unit_stride, as for y's columns; r->xunit), each row's index at k = 0 is computed
 * once per pass (x_offsets) and the loop reads X[rx_xo[q] + rx_k] instead of the
 * index expression (a reshape's (i0 * 32 + k >> 7) * 128 + (k & 127) per row and step
 * was 4x slower on an H100); and when the thread's first two float4s of y are 16-byte
 * aligned (w_aligned; then all are: the step is their difference) the loop reads them
 * with plain __ldg float4 loads instead of rx_ld4's test per load.
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
    COLS = 32,      /* work-items across the output columns (fewer when max_threads is smaller) */
    VEC = 4,        /* columns per work-item with vectorized loads */
    CUDA_LANES = 4, /* CUDA with vector loads: work-items across a block's 16 columns */
    MR = 16         /* CUDA: rows a work-item accumulates in registers per pass */
};

/* Whether y is a load of a buffer parameter whose element index grows by exactly 1 with
 * loop variable vj (through the block's iterators, flattened row-major over the
 * buffer's shape, proved for every value of the other variables): with the output
 * column, four adjacent columns are four adjacent elements of one buffer, a
 * float4/vec4 load; with K, x's element at k is its element at 0 plus k. */
static bool unit_stride(const rx_func *f, const rx_gpu_red *r, const rx_expr *y, const rx_svar *vj)
{
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

/* Whether load y (its indices with the block's iterators substituted) uses loop
 * variable v. */
static bool load_uses(const rx_gpu_red *r, const rx_expr *y, const rx_svar *v)
{
    rx_arena *a = rx_arena_new();
    rx_vmap its = {0};
    for (int i = 0; i < r->block->u.block.niters; i++) {
        const rx_iter *it = &r->block->u.block.iters[i];
        if (it->bind) rx_vmap_set(&its, it->var, it->bind);
    }
    bool uses = false;
    for (int d = 0; d < y->u.load.nidx && !uses; d++)
        uses = rx_expr_uses_var(rx_expr_subst(a, y->u.load.idx[d], &its), v);
    rx_vmap_free(&its);
    rx_arena_free(a);
    return uses;
}

/* The loops before the columns that y is free of (rx_gpu_red.rowmask's bits): each
 * work-item keeps their rows in registers. */
static uint32_t row_loops(const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    uint32_t mask = 0;
    for (int i = 0; i < n - 1; i++)
        if (!load_uses(r, r->y, chain[i]->u.for_.var)) mask |= 1u << i;
    return mask;
}

bool rx_gpu_match_matvec(const gk *k, const rx_stmt *const *chain, int n, const rx_stmts *under,
                         bool rows_any, rx_gpu_red *r)
{
    int64_t v;
    if (!rx_gpu_match_matmul(chain, n, under, r)) return false;
    int64_t threads = rx_target_int(k->t, "max_threads");
    int cols = threads < COLS ? (int)threads : COLS;
    bool lit = rx_expr_is_const(chain[n - 2]->u.for_.extent, &v);
    if (lit ? v > RX_GPU_MV_ROWS : !rows_any) return false;
    bool jlit = rx_expr_is_const(chain[n - 1]->u.for_.extent, &v);
    if (jlit && v < cols) return false;
    /* four columns per work-item when they are four adjacent floats, the group's block
     * is no wider than a literal J and its accumulators fit the local memory; on CUDA
     * then CUDA_LANES work-items across the block (the essay) */
    int across = k->dl->kind == RX_TARGET_CUDA && threads >= CUDA_LANES ? CUDA_LANES : cols;
    if (k->dl->vec4 && cols == COLS && (!jlit || v >= VEC * across) &&
        threads * VEC * 4 <= rx_target_int(k->t, "max_local_bytes") &&
        unit_stride(k->g->f, r, r->y, chain[n - 1]->u.for_.var)) {
        r->vec = r->y;
        cols = across * VEC;
    }
    const rx_gpu_dialect *dl = k->dl;
    if (!r->vec && k->dl->kind == RX_TARGET_CUDA && dl->shfl_down && threads % dl->warp == 0 &&
        threads >= dl->warp && unit_stride(k->g->f, r, r->y, r->loop->u.for_.var)) {
        r->kdot = true; /* a warp per column, its lanes along K (the essay) */
        r->cols = (int)(threads / dl->warp);
        r->rowmask = row_loops(chain, n, r);
        r->local_bytes = 0;
        return true;
    }
    r->cols = cols;
    int64_t per = r->vec ? VEC : 1, slices = threads / (cols / per), bytes = threads * per * 4;
    if (rx_expr_is_const(r->loop->u.for_.extent, &v) && v < slices) return false;
    if (r->vec && across == CUDA_LANES && dl->shfl_down && threads % dl->warp == 0 &&
        threads > dl->warp) { /* rows in registers (the essay) */
        r->rowmask = row_loops(chain, n, r);
        r->xunit = r->x->kind == RX_E_LOAD && !load_uses(r, r->x, chain[n - 1]->u.for_.var) &&
                   unit_stride(k->g->f, r, r->x, r->loop->u.for_.var);
        int64_t folded = (int64_t)MR * (threads / dl->warp) * CUDA_LANES * VEC * 4;
        if (folded > bytes) bytes = folded;
    }
    return rx_gpu_local_fits(k, r->loop, bytes, "the matvec schedule of this matmul",
                             &r->local_bytes);
}

/* `ACC(c) += val` at column rx_j + c and k = rx_k for c < W (acc: a printf format of
 * the accumulator taking c); with several columns each is guarded (the block's edge). */
static void scalar_columns(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int W,
                           const char *acc)
{
    cg *g = k->g;
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
        rx_sb_printf(g->out, acc, c);
        rx_sb_puts(g->out, " += ");
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
    scalar_columns(k, chain, n, r, W, "rx_a%d");
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
    if (dl->kind == RX_TARGET_CUDA) { /* independent loads in flight: the bandwidth */
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "#pragma unroll 4\n");
    }
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

/* Binds the loops of chain[0..n - 1) selected by `rows` (rows set: the bits of mask;
 * else the others) from the flat index in C variable `var` (destroyed), innermost
 * fastest. */
static void bind_some(cg *g, const rx_stmt *const *chain, int n, uint32_t mask, bool rows,
                      const char *var)
{
    for (int i = n - 2; i >= 0; i--) {
        if (((mask >> i) & 1u) != rows) continue;
        rx_sb off = {0};
        rx_sb_printf(&off, "%s %% rx_e%d", var, i);
        rx_gpu_bind_loop(g, chain[i], rx_sb_str(&off));
        rx_sb_free(&off);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "%s /= rx_e%d;\n", var, i);
    }
}

/* `for (int rx_q = 0; rx_q < m; rx_q++) if (rx_q < rx_nq)` unrolled (a literal trip
 * count and no break: the accumulators' indices are constants, so they stay in
 * registers), row rx_q0 + rx_q bound: the body that follows runs per row of the pass.
 * Closed by close_rows. */
static int open_rows(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int m)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) if (rx_q < rx_nq) {\n", m);
    g->indent++;
    int mark = g->syms.n;
    for (int i = 0; i < n - 1; i++) /* the offsets of row_offsets, registers once unrolled */
        if (r->rowmask >> i & 1u) {
            char off[32];
            snprintf(off, sizeof off, "rx_ro%d[rx_q]", i);
            rx_gpu_bind_loop(g, chain[i], off);
        }
    return mark;
}

/* Binds the row loops at the pass's first row (row_offsets' q = 0). */
static void bind_first_row(cg *g, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    for (int i = 0; i < n - 1; i++)
        if (r->rowmask >> i & 1u) {
            char off[32];
            snprintf(off, sizeof off, "rx_ro%d[0]", i);
            rx_gpu_bind_loop(g, chain[i], off);
        }
}

/* PRE then fmt (a printf format of y's buffer and flat index) and ";": y at the bound
 * column and k, its rows bound at the pass's first (y is free of them). */
static void put_y(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r,
                  const char *pre, const char *fmt)
{
    cg *g = k->g;
    int ym = g->syms.n;
    bind_first_row(g, chain, n, r);
    rxi_cg_iters(g, r->block, false);
    const cg_sym *bs = rxi_cg_lookup(g, r->y->u.load.buf);
    rx_sb idx = {0}, *save = g->out;
    g->out = &idx;
    rxi_cg_index(g, bs, r->y->u.load.idx, r->y->u.load.nidx, r->store->loc);
    g->out = save;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, pre);
    rx_sb_printf(g->out, fmt, bs->name, rx_sb_str(&idx));
    rx_sb_puts(g->out, ";\n");
    rx_sb_free(&idx);
    rxi_cg_pop_syms(g, ym);
}

/* `const float4 rx_w = rx_ld4(...)`: the four adjacent elements of y from the one at the
 * bound column and k; with fmt (a printf format of the buffer and the index), that load
 * instead. */
static void load_w4(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r,
                    const char *fmt)
{
    put_y(k, chain, n, r, "const float4 rx_w = ", fmt ? fmt : k->dl->vload4);
}

/* `const bool rx_wal`: whether y's elements at the bound column and k = 0 and 1 are
 * 16-byte aligned: then every float4 of the K loop is (the step is their difference),
 * and the loop reads them with plain 16-byte loads, no test per load. */
static void w_aligned(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "unsigned long long rx_wa = 0;\n");
    for (int e = 0; e < 2; e++) {
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "{\n");
        g->indent++;
        int ym = g->syms.n;
        rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
        rx_gpu_bind_loop(g, r->loop, e ? "1" : "0");
        put_y(k, chain, n, r, "rx_wa |= ", "(unsigned long long)(%s + (%s))");
        rxi_cg_pop_syms(g, ym);
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const bool rx_wal = (rx_wa & 15) == 0;\n");
}

/* `long rx_roI[m]`: for each row loop I, its offset in row rx_q0 + q of the pass (q <
 * m), computed once per pass rather than with 64-bit divisions in the K loop. */
static void row_offsets(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int m)
{
    cg *g = k->g;
    for (int i = 0; i < n - 1; i++)
        if (r->rowmask >> i & 1u) {
            rx_gpu_ind(g);
            rx_sb_printf(g->out, "long rx_ro%d[%d];\n", i, m);
        }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) {\n", m);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    long rx_rr = rx_q0 + rx_q;\n");
    for (int i = n - 2; i >= 0; i--)
        if (r->rowmask >> i & 1u) {
            rx_gpu_ind(g);
            rx_sb_printf(g->out, "    rx_ro%d[rx_q] = rx_rr %% rx_e%d; rx_rr /= rx_e%d;\n", i, i, i);
        }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    (void)rx_rr;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

static void close_rows(gk *k, int mark)
{
    cg *g = k->g;
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* The CUDA forms' counts, group loop and pass loop (opened): C columns per group (rx_j
 * its first plus the C text jlane), rx_R rows folded into each work-item, rx_nb groups of
 * columns and batches (the batches fastest, bound), rx_ext the K extent, passes of MR
 * rows from rx_q0 (rx_nq of them). Returns the symbol mark to pop at the end. */
static int open_groups(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int C,
                       const char *jlane)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    rx_gpu_chain_count(g, chain, n);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_tj = (rx_e%d + %d) / %d;\n", n - 1, C - 1, C);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_R = 1");
    for (int i = 0; i < n - 1; i++)
        if (r->rowmask >> i & 1u) rx_sb_printf(g->out, " * rx_e%d", i);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_nb = rx_tj");
    for (int i = 0; i < n - 1; i++)
        if (!(r->rowmask >> i & 1u)) rx_sb_printf(g->out, " * rx_e%d", i);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_no = rx_nb / rx_tj;\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, r->loop->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_g = %s; rx_g < rx_nb; rx_g += %s) {\n", dl->group_id,
                 dl->num_groups);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "long rx_r = rx_g % rx_no;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_j = (rx_g / rx_no) * %d + %s;\n", C, jlane);
    int mark = g->syms.n;
    bind_some(g, chain, n, r->rowmask, false, "rx_r"); /* the batch loops */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_q0 = 0; rx_q0 < rx_R; rx_q0 += %d) {\n", MR);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_nq = rx_R - rx_q0 < %d ? rx_R - rx_q0 : %d;\n", MR, MR);
    return mark;
}

/* Opens the branch of pass width wi (0: one row, 1: up to 4, 2: up to MR; literal trip
 * counts for open_rows) and returns the width; the caller closes the last with "}". */
static int open_width(gk *k, int wi)
{
    static const int widths[] = {1, 4, MR};
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, wi == 0 ? "if (rx_nq == 1) {\n" : wi == 1 ? "} else if (rx_nq <= 4) {\n" : "} else {\n");
    g->indent++;
    return widths[wi];
}

/* `long rx_xo[m]` (r->xunit): x's flat element index at k = 0 in each row of the pass;
 * the K loop reads X[rx_xo[q] + rx_k], one add per row and step where the index
 * expression (a reshape's divisions, 64-bit products) would be evaluated per row. */
static void x_offsets(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int m)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "long rx_xo[%d];\n", m);
    int rm = open_rows(k, chain, n, r, m);
    int km = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_bind_loop(g, r->loop, "0");
    rxi_cg_iters(g, r->block, false);
    const cg_sym *xs = rxi_cg_lookup(g, r->x->u.load.buf);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_xo[rx_q] = ");
    rxi_cg_index(g, xs, r->x->u.load.idx, r->x->u.load.nidx, r->store->loc);
    rx_sb_puts(g->out, ";\n");
    rxi_cg_pop_syms(g, km);
    close_rows(k, rm);
}

/* The K loop of the rows in registers over four in-range columns from rx_j: one float4
 * of y per step (load_w4's fmt), x per row of the pass, 16 multiply-adds per row. */
static void k_loop_rows(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int m,
                        int S, const char *fmt)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll 4\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_sl; rx_k < rx_ext; rx_k += %d) {\n", S);
    g->indent++;
    int km = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_bind_loop(g, r->loop, "rx_k");
    load_w4(k, chain, n, r, fmt);
    int rm = open_rows(k, chain, n, r, m);
    if (!r->xunit) rxi_cg_iters(g, r->block, false);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const float rx_x = ");
    if (r->xunit)
        rx_sb_printf(g->out, "%s[rx_xo[rx_q] + rx_k]", rxi_cg_lookup(g, r->x->u.load.buf)->name);
    else
        rxi_cg_expr_as(g, r->x, RX_DT_F32, r->store->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_a[rx_q][0] += rx_x * rx_w.x; rx_a[rx_q][1] += rx_x * rx_w.y; "
                       "rx_a[rx_q][2] += rx_x * rx_w.z; rx_a[rx_q][3] += rx_x * rx_w.w;\n");
    close_rows(k, rm);
    rxi_cg_pop_syms(g, km);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* The matvec on CUDA with rows in registers (the essay's "CUDA"): each work-item keeps
 * four columns of up to MR rows, so a pass reads each weight once for all its rows. */
static void emit_rows_in_registers(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    const int L = CUDA_LANES, C = r->cols;
    int64_t threads = rx_target_int(k->t, "max_threads");
    const int S = (int)(threads / L), NW = (int)(threads / dl->warp);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "__shared__ float rx_mv[%d];\n", MR * NW * L * VEC);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_t = (long)threadIdx.x;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_cl = rx_t %% %d, rx_sl = rx_t / %d;\n", L, L);
    char jx[64];
    snprintf(jx, sizeof jx, "rx_cl * %d", VEC);
    int mark = open_groups(k, chain, n, r, C, jx);
    for (int wi = 0; wi < 3; wi++) {
        const int m = open_width(k, wi);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "float rx_a[%d][4];\n", m);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) "
                         "rx_a[rx_q][0] = rx_a[rx_q][1] = rx_a[rx_q][2] = rx_a[rx_q][3] = 0.0f;\n", m);
    row_offsets(k, chain, n, r, m);
    if (r->xunit) x_offsets(k, chain, n, r, m);
    w_aligned(k, chain, n, r);
    /* the vector loop: four columns in range */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_j + 3 < rx_e%d) {\n", n - 1);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "if (rx_wal) {\n");
    g->indent++;
    k_loop_rows(k, chain, n, r, m, S, "__ldg((const float4 *)(%s + (%s)))");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "} else {\n");
    g->indent++;
    k_loop_rows(k, chain, n, r, m, S, NULL);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "} else {\n"); /* the block's edge: scalar loads, a guard per column */
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_sl; rx_k < rx_ext; rx_k += %d) {\n", S);
    g->indent++;
    int rm = open_rows(k, chain, n, r, m);
    scalar_columns(k, chain, n, r, VEC, "rx_a[rx_q][%d]");
    close_rows(k, rm);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* each warp folds its 32 / L slices; lane < L of warp w writes slot w L + lane */
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) if (rx_q < rx_nq) {\n", m);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_o = %d; rx_o >= %d; rx_o /= 2) {\n", dl->warp / 2, L);
    for (int c = 0; c < VEC; c++) {
        char a[32];
        snprintf(a, sizeof a, "rx_a[rx_q][%d]", c);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "    %s += ", a);
        rx_sb_printf(g->out, dl->shfl_down, a, "rx_o");
        rx_sb_puts(g->out, ";\n");
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_t %% %d < %d) {\n", dl->warp, L);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "    const long rx_s = (rx_q * %d + rx_t / %d) * %d + rx_t %% %d;\n", NW,
                 dl->warp, L, dl->warp);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    rx_mv[rx_s * 4 + 0] = rx_a[rx_q][0]; rx_mv[rx_s * 4 + 1] = rx_a[rx_q][1]; "
                       "rx_mv[rx_s * 4 + 2] = rx_a[rx_q][2]; rx_mv[rx_s * 4 + 3] = rx_a[rx_q][3];\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    /* work-item t < rx_nq L: row t / L of the pass, its lane's four columns (rx_j: the
     * lane is t % L = rx_cl), summed over the warps */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_t < rx_nq * %d) {\n", L);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_qq = rx_t / %d;\n", L);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "float rx_s0 = 0.0f, rx_s1 = 0.0f, rx_s2 = 0.0f, rx_s3 = 0.0f;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_w = 0; rx_w < %d; rx_w++) {\n", NW);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "    const long rx_s = (rx_qq * %d + rx_w) * %d + rx_cl;\n", NW, L);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    rx_s0 += rx_mv[rx_s * 4 + 0]; rx_s1 += rx_mv[rx_s * 4 + 1]; "
                       "rx_s2 += rx_mv[rx_s * 4 + 2]; rx_s3 += rx_mv[rx_s * 4 + 3];\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "long rx_rr = rx_q0 + rx_qq;\n");
    int sm = g->syms.n;
    bind_some(g, chain, n, r->rowmask, true, "rx_rr");
    for (int c = 0; c < VEC; c++) {
        rx_sb jo = {0}, tot = {0};
        rx_sb_printf(&jo, "rx_j + %d", c);
        rx_sb_printf(&tot, "rx_s%d", c);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "if (%s < rx_e%d) {\n", rx_sb_str(&jo), n - 1);
        g->indent++;
        int cm = g->syms.n;
        rx_gpu_bind_loop(g, chain[n - 1], rx_sb_str(&jo));
        rx_gpu_final_store(g, r, rx_sb_str(&tot));
        rxi_cg_pop_syms(g, cm);
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
        rx_sb_free(&jo);
        rx_sb_free(&tot);
    }
    rxi_cg_pop_syms(g, sm);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s; /* rx_mv is the next pass's */\n", dl->barrier);
        g->indent--;
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* rx_a[rx_q] += the product at k = rx_k + c (c = 0..3 with w: x times w's lane c; else
 * the product val itself, one k) for the pass's rows: the kdot schedule's step. */
static void kdot_rows(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r, int m,
                      bool w, int c)
{
    cg *g = k->g;
    int rm = open_rows(k, chain, n, r, m);
    if (w) {
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "float rx_x4 = 0.0f;\n");
        static const char lane[] = "xyzw";
        for (int e = 0; e < VEC; e++) {
            char ko[24];
            snprintf(ko, sizeof ko, "rx_k + %d", e);
            int sm = g->syms.n;
            rx_gpu_bind_loop(g, r->loop, ko);
            rxi_cg_iters(g, r->block, false);
            rx_gpu_ind(g);
            rx_sb_puts(g->out, "rx_x4 += ");
            rxi_cg_expr_as(g, r->x, RX_DT_F32, r->store->loc);
            rx_sb_printf(g->out, " * rx_w.%c;\n", lane[e]);
            rxi_cg_pop_syms(g, sm);
        }
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "rx_a[rx_q] += rx_x4;\n");
    } else {
        char ko[24];
        snprintf(ko, sizeof ko, "rx_k + %d", c);
        int sm = g->syms.n;
        rx_gpu_bind_loop(g, r->loop, ko);
        rxi_cg_iters(g, r->block, false);
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "rx_a[rx_q] += ");
        rxi_cg_expr_as(g, r->val, RX_DT_F32, r->store->loc);
        rx_sb_puts(g->out, ";\n");
        rxi_cg_pop_syms(g, sm);
    }
    close_rows(k, rm);
}

/* The matvec on CUDA for a weight adjacent along K (the essay's "CUDA"): warp w of a
 * group takes column rx_j, its lanes read four adjacent k each (one float4 of y), the
 * rows of a pass in registers, a shuffle tree, lane 0 stores. No local memory. */
static void emit_kdot(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    const int NW = r->cols, WP = dl->warp;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_lane = (long)threadIdx.x %% %d, rx_wid = (long)threadIdx.x / %d;\n",
                 WP, WP);
    int mark = open_groups(k, chain, n, r, NW, "rx_wid");
    for (int wi = 0; wi < 3; wi++) {
        const int m = open_width(k, wi);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "float rx_a[%d];\n", m);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) rx_a[rx_q] = 0.0f;\n", m);
    row_offsets(k, chain, n, r, m);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_j < rx_e%d) {\n", n - 1);
    g->indent++;
    int jm = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_lane * 4; rx_k < rx_ext; rx_k += %d) {\n", 4 * WP);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "if (rx_k + 3 < rx_ext) {\n");
    g->indent++;
    {
        int ym = g->syms.n;
        rx_gpu_bind_loop(g, r->loop, "rx_k");
        load_w4(k, chain, n, r, NULL);
        rxi_cg_pop_syms(g, ym);
    }
    kdot_rows(k, chain, n, r, m, true, 0);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "} else {\n");
    g->indent++;
    for (int c = 0; c < VEC; c++) {
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "if (rx_k + %d < rx_ext) {\n", c);
        g->indent++;
        kdot_rows(k, chain, n, r, m, false, c);
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
    }
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rxi_cg_pop_syms(g, jm);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* the warp's tree (every lane: rx_j is the warp's), lane 0 stores each row */
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "#pragma unroll\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_q = 0; rx_q < %d; rx_q++) if (rx_q < rx_nq) {\n", m);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_o = %d; rx_o > 0; rx_o /= 2) rx_a[rx_q] += ", WP / 2);
    rx_sb_printf(g->out, dl->shfl_down, "rx_a[rx_q]", "rx_o");
    rx_sb_puts(g->out, ";\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_lane == 0 && rx_j < rx_e%d) {\n", n - 1);
    g->indent++;
    int rm = open_rows(k, chain, n, r, m);
    int sm = g->syms.n;
    rx_gpu_bind_loop(g, chain[n - 1], "rx_j");
    rx_gpu_final_store(g, r, "rx_a[rx_q]");
    rxi_cg_pop_syms(g, sm);
    close_rows(k, rm);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
        g->indent--;
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

void rx_gpu_emit_matvec(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    if (r->kdot) {
        emit_kdot(k, chain, n, r);
        return;
    }
    if (r->rowmask) {
        emit_rows_in_registers(k, chain, n, r);
        return;
    }
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
    /* the rows and batches vary fastest: the groups running side by side read the same
     * weight columns (one read from memory, the others from the cache; the essay) */
    rx_sb_puts(g->out, "const long rx_no = rx_nb / rx_tj;\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_j = (rx_r / rx_no) * %d + rx_cl * %d;\n", C, W);
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_r %= rx_no;\n");
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
    /* the tree over the slices, W partial sums per work-item; with warp shuffles each
     * warp first folds its 32 / L slices, and only the warps' partials meet in local
     * memory (slot w L + lane of warp w) */
    int wp = dl->shfl_down && L <= dl->warp && dl->warp % L == 0 && threads % dl->warp == 0 &&
             S * L > dl->warp;
    if (wp) {
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "for (int rx_o = %d; rx_o >= %d; rx_o /= 2) {\n", dl->warp / 2, L);
        for (int c = 0; c < W; c++) {
            rx_gpu_ind(g);
            rx_sb_printf(g->out, "    rx_a%d += ", c);
            char a[16];
            snprintf(a, sizeof a, "rx_a%d", c);
            rx_sb_printf(g->out, dl->shfl_down, a, "rx_o");
            rx_sb_puts(g->out, ";\n");
        }
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "if (rx_t %% %d < %d) {\n", dl->warp, L);
        g->indent++;
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "const long rx_s = (rx_t / %d) * %d + rx_t %% %d;\n", dl->warp, L,
                     dl->warp);
        rx_gpu_ind(g);
        for (int c = 0; c < W; c++)
            rx_sb_printf(g->out, "%srx_mv[rx_s * %d + %d] = rx_a%d;", c ? " " : "", W, c, c);
        rx_sb_puts(g->out, "\n");
        g->indent--;
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
        S = (int)(threads / dl->warp); /* the partials left: one per warp and lane < L */
    } else {
        rx_gpu_ind(g);
        for (int c = 0; c < W; c++)
            rx_sb_printf(g->out, "%srx_mv[rx_t * %d + %d] = rx_a%d;", c ? " " : "", W, c, c);
        rx_sb_puts(g->out, "\n");
    }
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
