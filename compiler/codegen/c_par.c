/*
 * c_par.c — the pragma of a parallel loop in the CPU's C: whether it forks threads,
 * always, never, or when a run-time count of its work says so.
 *
 * Forking and joining the kernels' OpenMP team costs microseconds on a quiet machine
 * (waking the pool, the join's barrier), and far more on a busy one, where the join
 * waits for a thread the scheduler has not run yet. A loop nest with less than
 * RX_PAR_MIN_WORK statement executions (stores, counted by rxi_cg_work) therefore runs
 * on the calling thread:
 *   literal extents           the count is known: a nest under the bound gets a comment
 *                             and no pragma; a larger one gets RX_PARALLEL.
 *   symbolic extents          the count is a product of the nest's extents evaluated
 *                             at run time, before the loop: RX_PARALLEL_IF(count >=
 *                             RX_PAR_MIN_WORK). Every loop of the nest contributes its
 *                             extent (a literal bound, or the extent's C expression when
 *                             it reads only the kernel's symbolic variables and the
 *                             bounds of enclosing loops: names already in scope, no
 *                             buffer loads; else c for a split tile's min(c, x): a bound
 *                             that can only make the loop fork where it did before),
 *                             blocks and branches the sum of their parts.
 *                             The count is computed in double: no overflow, and a
 *                             negative (empty) extent only makes it smaller.
 *   anything else             (an inner extent that depends on an outer loop's variable,
 *                             a LET's or a block iterator's, or on a load): RX_PARALLEL,
 *                             as before.
 * A decode step's tiny kernels (a (2, b, 24) state slice, a (b, 8, 1, 64) cache append)
 * thus stay on one thread, while the same kernel at a prefill's size still forks.
 * GPU dialects have no RX_PARALLEL_IF (their loops are thread-bound): this file is the
 * CPU's alone (cg.cpu), and a GPU dialect's parallel loop keeps RX_PARALLEL.
 *
 * Cost: one walk of the loop's body per parallel loop; at run time a few multiplies
 * per kernel call.
 */
#include "cgen_int.h"


enum { RX_PAR_MIN_WORK = 32768 /* statement executions below which a parallel loop runs
                                  serially: forking and joining threads costs microseconds */
};

/* Whether e can be evaluated before the loop: literals, variables already in scope and
 * arithmetic on them (no loads, no calls). */
static bool in_scope(const cg *g, const rx_expr *e)
{
    switch ((rx_ekind)e->kind) {
    case RX_E_INT: return true;
    case RX_E_VAR: return rxi_cg_lookup(g, e->u.var) != NULL;
    case RX_E_ADD: case RX_E_SUB: case RX_E_MUL: case RX_E_FLOORDIV: case RX_E_FLOORMOD:
    case RX_E_MIN: case RX_E_MAX: case RX_E_SHL: case RX_E_SHR: case RX_E_BITAND:
        return in_scope(g, e->u.op.a) && in_scope(g, e->u.op.b);
    case RX_E_NEG: case RX_E_CAST: return in_scope(g, e->u.op.a);
    default: return false;
    }
}

/* Appends the run-time count of statement executions of one run of ss to out as a C
 * double expression; false when some extent cannot be evaluated before the loop. */
static bool work_text(cg *g, const rx_stmts *ss, rx_sb *out);

static bool term_text(cg *g, const rx_stmt *s, rx_sb *out)
{
    int64_t ext;
    switch ((rx_skind)s->kind) {
    case RX_S_FOR: {
        const rx_expr *x = s->u.for_.extent;
        if (rx_expr_is_const(x, &ext) ||
            (!in_scope(g, x) && x->kind == RX_E_MIN &&
             (rx_expr_is_const(x->u.op.a, &ext) || rx_expr_is_const(x->u.op.b, &ext)))) {
            rx_sb_printf(out, "%lld.0 * ", (long long)(ext < 0 ? 0 : ext));
        } else {
            if (!in_scope(g, x)) return false;
            rx_sb *keep = g->out;
            g->out = out;
            rx_sb_puts(out, "(double)(");
            rxi_cg_expr_as(g, x, RX_DT_I64, s->loc);
            rx_sb_puts(out, ") * ");
            g->out = keep;
        }
        return work_text(g, &s->u.for_.body, out);
    }
    case RX_S_BLOCK:
        if (!work_text(g, &s->u.block.init, out)) return false;
        rx_sb_puts(out, " + ");
        return work_text(g, &s->u.block.body, out);
    case RX_S_IF:
        if (!work_text(g, &s->u.if_.then_s, out)) return false;
        rx_sb_puts(out, " + ");
        return work_text(g, &s->u.if_.else_s, out);
    case RX_S_LET: return work_text(g, &s->u.let.body, out); /* its variable is not in
                                                                 scope: an extent using it
                                                                 fails in_scope */
    case RX_S_ALLOC: rx_sb_puts(out, "0.0"); return true;
    default: rx_sb_puts(out, "1.0"); return true;
    }
}

static bool work_text(cg *g, const rx_stmts *ss, rx_sb *out)
{
    rx_sb_putc(out, '(');
    if (ss->n == 0) rx_sb_puts(out, "1.0");
    for (int i = 0; i < ss->n; i++) {
        if (i) rx_sb_puts(out, " + ");
        if (!term_text(g, ss->items[i], out)) return false;
    }
    rx_sb_putc(out, ')');
    return true;
}

void rxi_cg_par_pragma(cg *g, const rx_stmt *s, const char *name, bool lit, bool simple)
{
    int64_t ext = 0;
    const rx_expr *ex = s->u.for_.extent;
    if (lit) rx_expr_is_const(ex, &ext);
    if (!rxi_cg_heap_free(&s->u.for_.body)) {
        rx_sb_puts(g->out, "/* parallel: runs serially (a heap allocation inside may fail "
                           "and return) */\n");
        return;
    }
    int64_t inner = rxi_cg_work(&s->u.for_.body), total;
    if (inner >= 0 && lit && !__builtin_mul_overflow(inner, ext < 0 ? 0 : ext, &total) &&
        total < RX_PAR_MIN_WORK) {
        rx_sb_printf(g->out, "/* parallel: runs serially (%lld statement executions) */\n",
                     (long long)total);
        return;
    }
    g->need[H_OMP] |= 1;
    if (inner >= 0 && !lit && inner < RX_PAR_MIN_WORK) {
        rx_sb_puts(g->out, "RX_PARALLEL_IF((int64_t)(");
        if (simple) rxi_cg_expr_as(g, ex, RX_DT_I64, s->loc);
        else rx_sb_printf(g->out, "%s_hi - %s_lo", name, name);
        rx_sb_printf(g->out, ") * %lld >= %lld)\n", (long long)inner,
                     (long long)RX_PAR_MIN_WORK);
        return;
    }
    rx_sb body = {0};
    if (inner < 0 && g->cpu && work_text(g, &s->u.for_.body, &body)) {
        rx_sb_puts(g->out, "RX_PARALLEL_IF((double)(");
        if (lit) rx_sb_printf(g->out, "%lld", (long long)(ext < 0 ? 0 : ext));
        else if (simple) rxi_cg_expr_as(g, ex, RX_DT_I64, s->loc);
        else rx_sb_printf(g->out, "%s_hi - %s_lo", name, name);
        rx_sb_printf(g->out, ") * %s >= %lld.0)\n", rx_sb_str(&body),
                     (long long)RX_PAR_MIN_WORK);
    } else {
        rx_sb_puts(g->out, "RX_PARALLEL\n");
    }
    rx_sb_free(&body);
}
