/*
 * c_isa.c — which loop-function code gets ISA versions (c_kernel.c emits them).
 *
 * Full versions (opt level 3, contracting a * b + c into fused multiply-adds): every
 * kernel that holds a vectorized loop or computes f32 exp, erf, tanh or log anywhere
 * (their fmaf, below) (rxi_cg_wants_isa), except a kernel whose
 * register tile gathers: an innermost unrolled loop (a tile's columns, no vectorized
 * loop inside) around an accumulator update that loads an operand along the loop's
 * variable by other than one element per step: in another index than the last, so
 * each column is another row (decode's q . K^T per head, K's rows being the tile's
 * columns; a row reduction's unrolled rows), or through a last index whose step is not
 * proved 1 (a transposed convolution's (w - k + 1) // 2, which ran 1.09-1.16x slower at
 * O3 in tests/e2e's nn3d case). The C compiler packs those strided scalars into vectors with shuffles, which
 * cost more at 16 and 8 lanes than at SSE's 4: measured on a hidden-1024 decoder layer,
 * decode b = 16 over 512 cached, the q . K^T kernel took 12.0-13.3 ms in its AVX-512
 * version against 9.3-10.1 ms in the baseline, interleaved runs (O3 1.08-1.22x of O2
 * in bench_opt_levels.py). Such a kernel is compiled once, as at O2. A matmul tile
 * (rows unrolled around a vectorized loop of columns) is not one. Nor does a padded
 * window's sum or maximum get full versions (a vectorized loop storing a select whose
 * arm loads, the padding test, where no store multiplies floats: nothing to
 * contract): the AVX versions test the padding with 64-bit index compares and masked
 * loads where the baseline runs scalar, over short rows; tests/e2e's nn3d avg_pool3d
 * (3x3x3, padded, on 6 x 7 planes) took 65.2-65.4 us in its AVX2 version against
 * 62.3-63.3 at O2, and 62.5-62.7 compiled once at O3 (loops aligned: cc.c). A padded
 * convolution multiplies and keeps its versions (0.75x of O2 there).
 *
 * Exact versions (opt levels 0 to 2, no contraction, so every version writes the baseline's
 * bits, which constant folding promises): only code where wider vectors pay, the hot
 * top-level statements (rxi_cg_hot_at). A statement is hot when
 *   - it computes exp, erf, tanh, log, sin or cos in f32 (exp, sigmoid, gelu: rx_expf and the
 *     other functions of relax/codegen_math.h, 30-70 vector instructions per element,
 *     which 4 SSE lanes leave compute-bound at a third of memory bandwidth), inside a
 *     vectorized loop or not: their explicit fmaf is a libm call per operation in the
 *     baseline (8-13x slower than the vector form), so any loop computing them, an
 *     O0 kernel's unscheduled nest or a reduction's serial loop, gets the versions
 *     where fmaf is one instruction; or
 *   - it holds the full tile of a tiled matmul or matrix-vector product: multiply-adds
 *     into a local accumulator inside a vectorized loop of literal extent (stmt_tile_update),
 *     which SSE without fused multiply-adds leaves compute-bound. Measured on a
 *     decoder block at O2: decode (b = 1) 23-38 ms -> 16 ms (the weights' memory
 *     bandwidth), prefill (s = 128) 122-131 -> 113-118 ms, for +35% C compile time on
 *     the 32-layer Llama module (4.5 -> 6.1 s).
 *   - it rounds a float to an integral value (round, floor, ceil: a quantization's
 *     round(x / scale)): the baseline calls libm's nearbyintf / floorf per element and
 *     leaves the loop scalar, SSE4.1's roundps is one instruction and vectorizes (the
 *     same bits: nearbyint is roundps with the inexact exception suppressed). Measured
 *     on a dynamic quantization of a (128, 3072) f32 tensor (round, add the zero point,
 *     clip, to u8 and back), one thread: baseline 0.56 ms, AVX2 0.11, AVX-512 0.06.
 * Memory-bound loops (elementwise, row sums and maxima) gain nothing from wider
 * vectors and are compiled once: versioning every kernel with a vectorized loop at O2
 * more than doubled that module's compile time.
 *
 * Cost: one walk of the statements per question (any_in_simd), no allocation.
 */
#include "cgen_int.h"

/* A test of one statement found inside a vectorized loop. */
typedef bool (*simd_test)(const rx_stmt *s);

/* Whether some statement of ss inside a vectorized loop passes test (in_simd: ss is in
 * one already; literal: only loops of literal extent count). */
static bool any_in_simd(const rx_stmts *ss, bool in_simd, bool literal, simd_test test)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (in_simd && test(s)) return true;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            int64_t e;
            bool v = s->u.for_.loop_kind == RX_LOOP_VECTORIZED &&
                     (!literal || rx_expr_is_const(s->u.for_.extent, &e));
            if (any_in_simd(&s->u.for_.body, in_simd || v, literal, test)) return true;
            break;
        }
        case RX_S_BLOCK:
            if (any_in_simd(&s->u.block.init, in_simd, literal, test) ||
                any_in_simd(&s->u.block.body, in_simd, literal, test))
                return true;
            break;
        case RX_S_IF:
            if (any_in_simd(&s->u.if_.then_s, in_simd, literal, test) ||
                any_in_simd(&s->u.if_.else_s, in_simd, literal, test))
                return true;
            break;
        case RX_S_LET:
            if (any_in_simd(&s->u.let.body, in_simd, literal, test)) return true;
            break;
        default: break;
        }
    }
    return false;
}

static bool any_stmt(const rx_stmt *s)
{
    (void)s;
    return true;
}

/* Whether load x moves along v other than by one element per step: v in another index
 * than the last only, or a last index whose step in v is not proved to be 1 (a
 * transposed conv's (w - k + 1) // 2). ar and a: an arithmetic context and its arena. */
static bool strided_load(rx_arith *ar, rx_arena *a, const rx_expr *x, const rx_svar *v)
{
    rx_expr *last = x->u.load.idx[x->u.load.nidx - 1];
    if (!rx_expr_uses_var(last, v)) {
        for (int d = 0; d < x->u.load.nidx - 1; d++)
            if (rx_expr_uses_var(x->u.load.idx[d], v)) return true;
        return false; /* the same element for every v: a broadcast */
    }
    rx_vmap m = {0};
    rx_vmap_set(&m, v, rx_e_binary(a, RX_E_ADD, rx_e_var(a, v), rx_e_int(a, 1)));
    rx_expr *next = rx_expr_subst(a, last, &m);
    rx_vmap_free(&m);
    return !rx_arith_prove_equal(ar, rx_e_binary(a, RX_E_SUB, next, last), rx_e_int(a, 1));
}

/* Whether e holds a load that moves along v by other than one element per step. */
static bool gathers_in(rx_arith *ar, rx_arena *a, const rx_expr *e, const rx_svar *v)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && e->u.load.nidx >= 1 && strided_load(ar, a, e, v)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (gathers_in(ar, a, rx_expr_child(e, i), v)) return true;
    return false;
}

static bool gathers(const rx_expr *e, const rx_svar *v)
{
    rx_arena *a = rx_arena_new();
    rx_arith *ar = rx_arith_new(a);
    bool r = gathers_in(ar, a, e, v);
    rx_arith_free(ar);
    rx_arena_free(a);
    return r;
}

static bool stmt_tile_update(const rx_stmt *s);

/* Whether ss holds a gathering register tile (file essay): an accumulator update whose
 * innermost enclosing loop is unrolled (v: its variable, NULL otherwise) and loads along
 * v in another index than the last. */
static bool gather_tile(const rx_stmts *ss, const rx_svar *v)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            bool inner = s->u.for_.loop_kind == RX_LOOP_UNROLLED &&
                         !rx_stmts_hold_for(&s->u.for_.body);
            if (gather_tile(&s->u.for_.body, inner ? s->u.for_.var : NULL)) return true;
            break;
        }
        case RX_S_STORE:
            if (v && stmt_tile_update(s) && gathers(s->u.store.value, v)) return true;
            break;
        case RX_S_BLOCK:
            if (gather_tile(&s->u.block.init, v) || gather_tile(&s->u.block.body, v)) return true;
            break;
        case RX_S_IF:
            if (gather_tile(&s->u.if_.then_s, v) || gather_tile(&s->u.if_.else_s, v)) return true;
            break;
        case RX_S_LET:
            if (gather_tile(&s->u.let.body, v)) return true;
            break;
        default: break;
        }
    }
    return false;
}

static bool stmt_expf(const rx_stmt *s);
static bool float_mul(const rx_expr *e);

/* Whether e loads. */
static bool loads_any(const rx_expr *e)
{
    if (e->kind == RX_E_LOAD) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (loads_any(rx_expr_child(e, i))) return true;
    return false;
}

/* Whether e holds a conditional load: a select with a load in an arm (a window's
 * padding test around the input it reads). */
static bool cond_load(const rx_expr *e)
{
    if (e->kind == RX_E_SELECT && (loads_any(e->u.op.b) || loads_any(e->u.op.c))) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (cond_load(rx_expr_child(e, i))) return true;
    return false;
}

static bool stmt_cond_load(const rx_stmt *s)
{
    return s->kind == RX_S_STORE && cond_load(s->u.store.value);
}

static bool stmt_float_mul(const rx_stmt *s)
{
    return s->kind == RX_S_STORE && float_mul(s->u.store.value);
}

/* Whether ss is a padded window's sum or maximum (file essay): a vectorized store holds
 * a conditional load and none multiplies floats. */
static bool padded_window(const rx_stmts *ss)
{
    return any_in_simd(ss, false, false, stmt_cond_load) &&
           !any_in_simd(ss, false, false, stmt_float_mul);
}

bool rxi_cg_wants_isa(const rx_stmts *ss)
{
    return ((any_in_simd(ss, false, false, any_stmt) && !padded_window(ss)) ||
            any_in_simd(ss, true, false, stmt_expf)) &&
           !gather_tile(ss, NULL);
}

/* Whether statement s (its own expressions, not nested statements) computes exp, erf,
 * tanh, log, sin or cos in f32 (exp or sigmoid: an inlined rx_expf, some thirty vector
 * instructions per element; the others: codegen_math.h's, thirty to sixty). */
static bool stmt_expf(const rx_stmt *s)
{
    switch ((rx_skind)s->kind) {
    case RX_S_STORE: return rx_expr_calls_vmath(s->u.store.value);
    case RX_S_IF: return rx_expr_calls_vmath(s->u.if_.cond);
    case RX_S_LET: return rx_expr_calls_vmath(s->u.let.value);
    default: return false;
    }
}

/* Whether e multiplies floats. */
static bool float_mul(const rx_expr *e)
{
    if (e->kind == RX_E_MUL && rx_dtype_is_float((rx_dtype)e->dtype)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (float_mul(rx_expr_child(e, i))) return true;
    return false;
}

/* Whether s accumulates products into a local buffer: acc[..] = acc[..] + a * b, the
 * update of schedule_tile.c's register and one-row tiles (matmul, matrix-vector),
 * whose multiply-adds are the kernel's work. Asked only inside vectorized loops of
 * literal extent, a full tile's columns: row reductions (sum, max, sum of squares)
 * unroll rows in their full tiles instead (only a partial tile's columns, of symbolic
 * extent, are vectorized), and they are memory-bound. */
static bool stmt_tile_update(const rx_stmt *s)
{
    return s->kind == RX_S_STORE && s->u.store.buf->scope == RX_SCOPE_LOCAL &&
           rx_expr_loads_buf(s->u.store.value, s->u.store.buf) && float_mul(s->u.store.value);
}

/* Whether e rounds a float to an integral value (round, floor, ceil). */
static bool rounds(const rx_expr *e)
{
    if (e->kind == RX_E_CALL && rx_dtype_is_float((rx_dtype)e->dtype) &&
        (e->u.call.fn == RX_FN_ROUND || e->u.call.fn == RX_FN_FLOOR || e->u.call.fn == RX_FN_CEIL))
        return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (rounds(rx_expr_child(e, i))) return true;
    return false;
}

static bool stmt_round(const rx_stmt *s)
{
    switch ((rx_skind)s->kind) {
    case RX_S_STORE: return rounds(s->u.store.value);
    case RX_S_LET: return rounds(s->u.let.value);
    default: return false;
    }
}

bool rxi_cg_hot(const rx_stmts *ss)
{
    return any_in_simd(ss, true, false, stmt_expf) || /* anywhere: see the file essay */
           any_in_simd(ss, true, false, stmt_round) ||
           any_in_simd(ss, false, true, stmt_tile_update);
}

bool rxi_cg_hot_at(const rx_stmts *ss, int i)
{
    rx_stmts one = {ss->items + i, 1};
    return rxi_cg_hot(&one);
}
