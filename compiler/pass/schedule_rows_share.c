/*
 * schedule_rows_share.c — which reductions schedule_rows.c's lanes take when some of
 * their loads are shared by other rows: the row-reduction test of that file's essay,
 * shared factors of products included.
 *
 * A reduction C[rows] = OP(C[rows], G) along k is a row reduction when some load of G
 * that moves with k is the row's own (uses every row iterator; row extents of literal
 * 1 aside). A load that other rows share (a mask [1, 1, s, s] every head reads, an
 * additive [b, 1, 1, s] one) is taken as long as it only selects or adds: its reuse
 * across rows is the cache's.
 *
 * A shared load may also be a factor of a product with another moving load: CBAM's
 * spatial gate as people write it, mean(relu(r + x * sigmoid(s))) over (h, w) (r, x
 * (b, c, h, w), s (b, 1, h, w) shared by the c rows; the two reduce loops merged into
 * one by schedule_reduce.c), or CapsNet's routing sum, sum_k u[b, i, j, k] * f(v)[b, j,
 * k] (f a squash of v: divides and a square root, shared by the 3200 i rows). Such a
 * product was refused ("a matmul's: schedule_tile.c's"), on the idea that the tiles
 * reuse the shared operand across rows. They do (CapsNet's is packed once per element,
 * not once per row), but their tiles run along the rows' spatial axes, where the row's
 * own operand is strided (K apart): CBAM's went to 6 x 8 scalar chains of loads K apart,
 * CapsNet's to 4 x 10 tiles of gathers, while the lanes read both operands contiguously
 * along k (contiguity is still required of every moving load, below the lanes' check).
 * Measured, same run, 2 threads, load 6-9: CBAM's fused relu-mean (b 2, 64 channels,
 * 112 x 114) fastest call 3.9 -> 0.49 ms; CapsNet's routing sum alone (b 16, 3200 x 10
 * rows of K = 16, the squash recomputed per row by the lanes) 3.3 -> 1.2 ms, and no
 * length where the tiles won (the lanes need K >= 16; a cost rule refusing K < 64 kept
 * CapsNet's slower form and was dropped). What stays refused is a product of loads none
 * of which is the row's own (a matmul's A[i, k] * B[k, j]: schedule_tile.c's).
 * tests/unit/pass/test_schedule_rowred.c (takes_shared_factors, shared_numerics).
 */
#include "schedule_int.h"

/* True when load e uses every row iterator of the nest (row extents of literal 1 aside). */
static bool full_row_load(const rx_stmt *blk, const rx_stmt *const *loops, int p, const rx_expr *e)
{
    for (int i = 0; i < p; i++) {
        const rx_svar *iv = blk->u.block.iters[i].var, *lv = loops[i]->u.for_.var;
        if (!rx_expr_is_int(loops[i]->u.for_.extent, 1) && !rx_expr_uses_var(e, iv) &&
            !rx_expr_uses_var(e, lv))
            return false;
    }
    return true;
}

bool rx_rows_reduction(const rx_stmt *blk, const rx_stmt *const *loops, int p, const rx_expr *g,
                       const rx_svar *k, const rx_svar *ki)
{
    if (!g) return false;
    if (g->kind == RX_E_LOAD && (rx_expr_uses_var(g, k) || rx_expr_uses_var(g, ki)) &&
        full_row_load(blk, loops, p, g))
        return true;
    for (int i = 0; i < rx_expr_nchildren(g); i++)
        if (rx_rows_reduction(blk, loops, p, rx_expr_child(g, i), k, ki)) return true;
    return false;
}
