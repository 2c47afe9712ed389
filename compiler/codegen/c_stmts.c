/*
 * c_stmts.c — what the C emitter (c_kernel.c) asks of a statement list before it
 * writes a loop's pragma: whether an ALLOC lands on the stack, whether the list holds
 * a heap allocation (a failure path that returns, which an OpenMP region must not
 * have) or a FOR (an omp simd loop must not), and how many statement executions one
 * run of it is (a parallel loop with less work than RX_PAR_MIN_WORK runs serially).
 * Each is one walk of the list: O(its size).
 */
#include "cgen_int.h"

enum { STACK_ALLOC_MAX = 262144 /* bytes; larger or non-constant allocs go to the heap */ };

/* True when codegen puts buffer b on the stack (a zeroed C array declared where the
 * ALLOC stands), false when on the heap (rx_alloc, which may fail and return). */
bool rxi_cg_alloc_on_stack(const rx_buffer *b)
{
    int64_t total = 1;
    for (int k = 0; k < b->ndim; k++) {
        int64_t v;
        if (!rx_expr_is_const(b->shape[k], &v) || v < 0 || (v && total > STACK_ALLOC_MAX / v))
            return false;
        total *= v;
    }
    return b->scope != RX_SCOPE_GLOBAL && total * (int64_t)rxi_cg_ssize((rx_dtype)b->dtype) <=
                                              STACK_ALLOC_MAX;
}

/* True when ss (nested statements included) holds no heap allocation: no failure path
 * returns from inside it, as OpenMP's structured blocks require. kind: which
 * statement kind to look for instead (RX_S_FOR), or -1 for heap allocations. */
static bool stmts_find(const rx_stmts *ss, int kind)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (kind >= 0 && s->kind == kind) return true;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (stmts_find(&s->u.for_.body, kind)) return true;
            break;
        case RX_S_BLOCK:
            if (stmts_find(&s->u.block.init, kind) || stmts_find(&s->u.block.body, kind))
                return true;
            break;
        case RX_S_ALLOC:
            if (kind < 0 && !rxi_cg_alloc_on_stack(s->u.alloc.buf)) return true;
            break;
        case RX_S_IF:
            if (stmts_find(&s->u.if_.then_s, kind) || stmts_find(&s->u.if_.else_s, kind))
                return true;
            break;
        case RX_S_LET:
            if (stmts_find(&s->u.let.body, kind)) return true;
            break;
        case RX_S_STORE: break;
        default: return true; /* unknown: assume the worst */
        }
    }
    return false;
}

bool rxi_cg_heap_free(const rx_stmts *ss) { return !stmts_find(ss, -1); }

/* A literal bound of extent x: x itself, or c of min(c, y) / min(y, c) (a split loop's
 * tail). */
static bool extent_bound(const rx_expr *x, int64_t *v)
{
    if (rx_expr_is_const(x, v)) return true;
    return x->kind == RX_E_MIN &&
           (rx_expr_is_const(x->u.op.a, v) || rx_expr_is_const(x->u.op.b, v));
}

/* Statement executions of one run of ss (at most that, with a split loop's tail) when
 * every loop extent in it has a literal bound (saturating at INT64_MAX); -1 when some
 * extent is symbolic (its work is unknown). */
int64_t rxi_cg_work(const rx_stmts *ss)
{
    int64_t w = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        int64_t a = 1, b = 0, ext;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (!extent_bound(s->u.for_.extent, &ext) || (a = rxi_cg_work(&s->u.for_.body)) < 0)
                return -1;
            if (ext < 0) ext = 0;
            if (__builtin_mul_overflow(a, ext, &a)) a = INT64_MAX;
            break;
        case RX_S_BLOCK:
            if ((a = rxi_cg_work(&s->u.block.init)) < 0 || (b = rxi_cg_work(&s->u.block.body)) < 0)
                return -1;
            if (__builtin_add_overflow(a, b, &a)) a = INT64_MAX;
            break;
        case RX_S_IF:
            if ((a = rxi_cg_work(&s->u.if_.then_s)) < 0 || (b = rxi_cg_work(&s->u.if_.else_s)) < 0)
                return -1;
            if (__builtin_add_overflow(a, b, &a)) a = INT64_MAX;
            break;
        case RX_S_LET:
            if ((a = rxi_cg_work(&s->u.let.body)) < 0) return -1;
            break;
        case RX_S_ALLOC: a = 0; break;
        default: a = 1; break; /* a store */
        }
        if (__builtin_add_overflow(w, a, &w)) w = INT64_MAX;
    }
    return w < 1 ? 1 : w;
}
bool rxi_cg_has_for(const rx_stmts *ss) { return stmts_find(ss, RX_S_FOR); }
