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
 * reshape's index arithmetic, a cast). One work-group of tile x tile work-items (T, the
 * target's `tile`) computes a B x B block of C, B = T R, each work-item an R x R
 * register micro-tile of it (TVM dlight's matmul rule):
 *
 *     __local T As[B * T], Bs[T * B]                             at kernel scope
 *     for each block (batch, bi, bj) of this group (grid-stride over the blocks):
 *         c[a][b] = 0 for a, b < R                           R^2 accumulators (registers)
 *         for k0 = 0, T, 2 T, ... < K:
 *             for a < R:  As[ty + a T][tx] = x(i = bi B + ty + a T, k = k0 + tx)
 *             for b < R:  Bs[ty][tx + b T] = y(k = k0 + ty, j = bj B + tx + b T)
 *                                          (0 outside I, J or K: the edge guards)
 *             barrier
 *             for kk < T:  xa[a] = As[ty + a T][kk], yb[b] = Bs[kk][tx + b T],
 *                          c[a][b] += xa[a] * yb[b]
 *             barrier
 *         each (bi B + ty + a T, bj B + tx + b T) inside I x J:  C[idx] = init + c[a][b]
 *
 * A work-item's outputs are strided by T (not adjacent), so adjacent work-items load
 * adjacent tile elements and store adjacent outputs. Per step of T along K a work-item
 * loads 2 R elements from global memory and 2 R T from local memory for its R^2 T
 * multiply-adds: R times fewer of each per output than with one output per work-item
 * (R = 1). The R-loops are unrolled in the source (accumulators rx_cA_B, operands
 * rx_aA, rx_bB): registers on every compiler, and lavapipe counts every loop
 * iteration of an invocation against its limit (gpu_kernel.c). R is MICRO (4), halved
 * until the two tiles (2 T B floats) fit max_local_bytes and the block is not more
 * than twice a literal I and J; at R = 1 this is the plain tiles schedule.
 * Each element of x and y is read from global memory once per block it takes part in
 * (K / B times fewer reads than one work-item per output), the edge guards make any
 * symbolic I, J, K correct, and the zeros of the padding add nothing. The schedule is
 * taken when K is symbolic or at least `tile`, I is not a literal of at most
 * RX_GPU_MV_ROWS and J not a literal below 2 (a matrix-vector product with one row would
 * idle all but one row of the tile: it stays one work-item per output; a symbolic I
 * gets both kernels and the launch records choose at run time, gpu_kernel.c). Local
 * memory: 2 T B floats, checked against max_local_bytes like the rows schedule's (at
 * R = 1 when no micro-tile fits).
 * GLSL: the tiles are `shared` (hoisted), indexed with `int`s; the 64-bit index
 * arithmetic starts from the unsigned local id (rx_tyl, rx_txl), since lavapipe
 * miscompiles a sign-extended int compared with a constant (gpu_dialect.c).
 */
#include <stdarg.h>
#include <stdio.h>

#include "gpu_int.h"

enum { MICRO = 4 }; /* the register micro-tile's edge, at most (halved to fit local memory) */

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
    int64_t v, vi = 0, vj = 0;
    if (!rx_gpu_match_matmul(chain, n, under, r)) return false;
    int tile = (int)rx_target_int(k->t, "tile");
    if (rx_expr_is_const(r->loop->u.for_.extent, &v) && v < tile) return false;
    bool li = rx_expr_is_const(chain[n - 2]->u.for_.extent, &vi);
    bool lj = rx_expr_is_const(chain[n - 1]->u.for_.extent, &vj);
    if (li && vi <= RX_GPU_MV_ROWS) return false;
    if (lj && vj < 2) return false;
    r->tile = tile;
    /* the largest micro-tile whose two tiles fit the local memory and whose block is
     * not more than twice a literal output in both directions */
    int64_t limit = rx_target_int(k->t, "max_local_bytes");
    int R = MICRO;
    while (R > 1 && (2LL * tile * tile * R * 4 > limit ||
                     (li && lj && vi * 2 <= (int64_t)tile * R && vj * 2 <= (int64_t)tile * R)))
        R /= 2;
    r->micro = R;
    return rx_gpu_local_fits(k, r->loop, 2LL * tile * tile * R * 4,
                             "the tiles schedule of this matmul", &r->local_bytes);
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

/* One element of a tile: DST[AT] = e with I, J, K at the given offsets, or 0 outside
 * the guard. */
static void load_tile(cg *g, const rx_stmt *const *chain, int n, const rx_gpu_red *r,
                      const char *dst, const char *at, const rx_expr *e, const char *guard,
                      const char *io, const char *jo, const char *ko)
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
    rx_sb_printf(g->out, "%s[%s] = rx_v;\n", dst, at);
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

/* sb = printf(fmt, ...) from empty: the index and guard texts of the tiles schedule */
static const char *fmt(rx_sb *sb, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt(rx_sb *sb, const char *f, ...)
{
    rx_sb_reset(sb);
    va_list ap;
    va_start(ap, f);
    rx_sb_vprintf(sb, f, ap);
    va_end(ap);
    return rx_sb_str(sb);
}

void rx_gpu_emit_tiles(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    const int T = r->tile, R = r->micro, B = T * R; /* B: the block's edge */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_As[%d];\n", dl->local_decl, B * T);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s float rx_Bs[%d];\n", dl->local_decl, T * B);
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
                 n - 2, B - 1, B, n - 1, B - 1, B);
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
    /* work-item (ty, tx) owns rows i0 + ty + a T and columns j0 + tx + b T (a, b < R):
     * strided, so adjacent work-items read adjacent tile elements and store adjacent
     * outputs */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const long rx_i = rx_bi * %d + rx_tyl, rx_j = rx_bj * %d + rx_txl;\n", B,
                 B);
    for (int a = 0; a < R; a++) {
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "float ");
        for (int b = 0; b < R; b++) rx_sb_printf(g->out, "%srx_c%d_%d = 0.0f", b ? ", " : "", a, b);
        rx_sb_puts(g->out, ";\n");
    }
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, r->loop->loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k0 = 0; rx_k0 < rx_ext; rx_k0 += %d) {\n", T);
    g->indent++;
    rx_sb at = {0}, guard = {0}, io = {0}, jo = {0};
    /* x at (i + a T, k0 + tx) with j at its first value; y at (k0 + ty, j + b T) with i
     * at its first; zeros outside I, J or K */
    for (int a = 0; a < R; a++) {
        fmt(&io, "rx_i + %d", a * T);
        fmt(&guard, "%s < rx_e%d && rx_k0 + rx_txl < rx_ext", rx_sb_str(&io), n - 2);
        fmt(&at, "(rx_ty + %d) * %d + rx_tx", a * T, T);
        load_tile(g, chain, n, r, "rx_As", rx_sb_str(&at), r->x, rx_sb_str(&guard), rx_sb_str(&io),
                  "0", "rx_k0 + rx_txl");
    }
    for (int b = 0; b < R; b++) {
        fmt(&jo, "rx_j + %d", b * T);
        fmt(&guard, "%s < rx_e%d && rx_k0 + rx_tyl < rx_ext", rx_sb_str(&jo), n - 1);
        fmt(&at, "rx_ty * %d + rx_tx + %d", B, b * T);
        load_tile(g, chain, n, r, "rx_Bs", rx_sb_str(&at), r->y, rx_sb_str(&guard), "0",
                  rx_sb_str(&jo), "rx_k0 + rx_tyl");
    }
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    /* the micro-tile's R^2 multiply-adds per step, unrolled here (lavapipe counts every
     * loop iteration of an invocation against its limit, gpu_kernel.c) */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_kk = 0; rx_kk < %d; rx_kk++) {\n", T);
    g->indent++;
    for (int a = 0; a < R; a++) {
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "const float rx_a%d = rx_As[(rx_ty + %d) * %d + rx_kk];\n", a, a * T,
                     T);
    }
    for (int b = 0; b < R; b++) {
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "const float rx_b%d = rx_Bs[rx_kk * %d + rx_tx + %d];\n", b, B, b * T);
    }
    for (int a = 0; a < R; a++) {
        rx_gpu_ind(g);
        for (int b = 0; b < R; b++)
            rx_sb_printf(g->out, "%srx_c%d_%d += rx_a%d * rx_b%d;", b ? " " : "", a, b, a, b);
        rx_sb_puts(g->out, "\n");
    }
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    /* the in-range outputs of the micro-tile */
    for (int a = 0; a < R; a++)
        for (int b = 0; b < R; b++) {
            fmt(&io, "rx_i + %d", a * T);
            fmt(&jo, "rx_j + %d", b * T);
            rx_gpu_ind(g);
            rx_sb_printf(g->out, "if (%s < rx_e%d && %s < rx_e%d) {\n", rx_sb_str(&io), n - 2,
                         rx_sb_str(&jo), n - 1);
            g->indent++;
            int smark = g->syms.n;
            rx_gpu_bind_loop(g, chain[n - 2], rx_sb_str(&io));
            rx_gpu_bind_loop(g, chain[n - 1], rx_sb_str(&jo));
            rx_gpu_final_store(g, r, fmt(&at, "rx_c%d_%d", a, b));
            rxi_cg_pop_syms(g, smark);
            g->indent--;
            rx_gpu_ind(g);
            rx_sb_puts(g->out, "}\n");
        }
    rx_sb_free(&at);
    rx_sb_free(&guard);
    rx_sb_free(&io);
    rx_sb_free(&jo);
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}
