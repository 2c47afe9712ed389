/*
 * c_isa.c — which loop-function code gets ISA versions (c_kernel.c emits them).
 *
 * Full versions (opt level 3, contracting a * b + c into fused multiply-adds): every
 * kernel that holds a vectorized loop (rx_cg_wants_isa).
 *
 * Exact versions (opt level 2, no contraction, so every version writes the baseline's
 * bits, which constant folding promises): only code where wider vectors pay, the hot
 * top-level statements (rx_cg_hot_at). A statement is hot when
 *   - it computes exp in f32 (exp, sigmoid: rx_expf, ~30 vector instructions per
 *     element, which 4 SSE lanes leave compute-bound at a third of memory bandwidth)
 *     inside a vectorized loop; or
 *   - it holds the full tile of a tiled matmul or matrix-vector product: multiply-adds
 *     into a local accumulator inside a vectorized loop of literal extent (tile_simd),
 *     which SSE without fused multiply-adds leaves compute-bound. Measured on a
 *     decoder block at O2: decode (b = 1) 23-38 ms -> 16 ms (the weights' memory
 *     bandwidth), prefill (s = 128) 122-131 -> 113-118 ms, for +35% C compile time on
 *     the 32-layer Llama module (4.5 -> 6.1 s).
 * Memory-bound loops (elementwise, row sums and maxima) gain nothing from wider
 * vectors and are compiled once: versioning every kernel with a vectorized loop at O2
 * more than doubled that module's compile time.
 *
 * Cost: one walk of the statements per question, no allocation.
 */
#include "cgen_int.h"

bool rx_cg_wants_isa(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (s->u.for_.loop_kind == RX_LOOP_VECTORIZED || rx_cg_wants_isa(&s->u.for_.body))
                return true;
            break;
        case RX_S_BLOCK:
            if (rx_cg_wants_isa(&s->u.block.init) || rx_cg_wants_isa(&s->u.block.body)) return true;
            break;
        case RX_S_IF:
            if (rx_cg_wants_isa(&s->u.if_.then_s) || rx_cg_wants_isa(&s->u.if_.else_s)) return true;
            break;
        case RX_S_LET:
            if (rx_cg_wants_isa(&s->u.let.body)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Whether e computes exp in f32 (exp or sigmoid: an inlined rx_expf, some thirty
 * vector instructions per element). */
static bool expr_expf(const rx_expr *e)
{
    if (!e) return false;
    if (e->kind == RX_E_CALL && (rx_dtype)e->dtype == RX_DT_F32 &&
        (e->u.call.fn == RX_FN_EXP || e->u.call.fn == RX_FN_SIGMOID))
        return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (expr_expf(rx_expr_child(e, i))) return true;
    return false;
}

/* Whether ss computes exp in f32 inside a vectorized loop (in_simd: ss is in one). */
static bool simd_expf(const rx_stmts *ss, bool in_simd)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (simd_expf(&s->u.for_.body, in_simd || s->u.for_.loop_kind == RX_LOOP_VECTORIZED))
                return true;
            break;
        case RX_S_BLOCK:
            if (simd_expf(&s->u.block.init, in_simd) || simd_expf(&s->u.block.body, in_simd))
                return true;
            break;
        case RX_S_STORE:
            if (in_simd && expr_expf(s->u.store.value)) return true;
            break;
        case RX_S_IF:
            if ((in_simd && expr_expf(s->u.if_.cond)) || simd_expf(&s->u.if_.then_s, in_simd) ||
                simd_expf(&s->u.if_.else_s, in_simd))
                return true;
            break;
        case RX_S_LET:
            if ((in_simd && expr_expf(s->u.let.value)) || simd_expf(&s->u.let.body, in_simd))
                return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Whether e loads buffer b. */
static bool loads_of(const rx_expr *e, const rx_buffer *b)
{
    if (e->kind == RX_E_LOAD && e->u.load.buf == b) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (loads_of(rx_expr_child(e, i), b)) return true;
    return false;
}

/* Whether e multiplies floats. */
static bool float_mul(const rx_expr *e)
{
    if (e->kind == RX_E_MUL && rx_dtype_is_float((rx_dtype)e->dtype)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (float_mul(rx_expr_child(e, i))) return true;
    return false;
}

/* Whether ss accumulates products into a local buffer inside a vectorized loop of
 * literal extent (in_simd: ss is in one): acc[..] = acc[..] + a * b in the full tile of
 * schedule_tile.c's register and one-row tiles (matmul, matrix-vector), whose
 * multiply-adds are the kernel's work. Row reductions (sum, max, sum of squares) are
 * not: their full tiles unroll rows instead of vectorizing (only a partial tile's
 * columns, of symbolic extent, are vectorized), and they are memory-bound. */
static bool tile_simd(const rx_stmts *ss, bool in_simd)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            int64_t e;
            bool full = s->u.for_.loop_kind == RX_LOOP_VECTORIZED &&
                        rx_expr_is_const(s->u.for_.extent, &e); /* a full tile's columns */
            if (tile_simd(&s->u.for_.body, in_simd || full)) return true;
            break;
        }
        case RX_S_STORE:
            if (in_simd && s->u.store.buf->scope == RX_SCOPE_LOCAL &&
                loads_of(s->u.store.value, s->u.store.buf) && float_mul(s->u.store.value))
                return true;
            break;
        case RX_S_BLOCK:
            if (tile_simd(&s->u.block.init, in_simd) || tile_simd(&s->u.block.body, in_simd))
                return true;
            break;
        case RX_S_IF:
            if (tile_simd(&s->u.if_.then_s, in_simd) || tile_simd(&s->u.if_.else_s, in_simd))
                return true;
            break;
        case RX_S_LET:
            if (tile_simd(&s->u.let.body, in_simd)) return true;
            break;
        default: break;
        }
    }
    return false;
}

bool rx_cg_hot(const rx_stmts *ss)
{
    return simd_expf(ss, false) || tile_simd(ss, false);
}

bool rx_cg_hot_at(const rx_stmts *ss, int i)
{
    rx_stmts one = {ss->items + i, 1};
    return rx_cg_hot(&one);
}
