/*
 * fuse_cost.c — what FuseOps' recompute rule (fuse_ops.c, step 3) asks of a loop
 * function and of two tensors: the function's per-element cost and passes, and
 * whether a consumer's iteration space is at least twice a producer's.
 *
 * Cost: one per operation on values, CALL_COST per math call (exp, log, erf, ...) and
 * per gather (a load at a loaded index); plain loads and address arithmetic are free,
 * since a materialized result is read back through them too. Passes: the most loads of
 * one parameter in the body (softmax reads its input in the max and the exp pass).
 * One walk of the body per parameter, no allocation. Transposes: whether a store reads
 * a tensor with its innermost axis moved (one more walk). Larger spaces: structural, or
 * per dim with the caller's prover (terms built in the caller's arena).
 */
#include "fuse_cost.h"

enum { CALL_COST = 8 }; /* cost of a math intrinsic call or a gather */

/* Whether e loads from a buffer (a gather's data-dependent index). */
static bool loads_any(const rx_expr *e)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (loads_any(rx_expr_child(e, i))) return true;
    return false;
}

/* Cost of evaluating e once beyond reading its operands: one per operation on values,
 * CALL_COST per math call and per gather (a load at a loaded index: random access);
 * *loads counts the loads of buffer buf (NULL: none). Plain loads and address
 * arithmetic (idx set: inside an index) cost nothing: a materialized producer is read
 * back through them as well, and counting them put a causal mask's add (two 4-d loads,
 * 3 multiplies and 3 adds each) over RECOMPUTE_MIN, so masked softmax lost its fused
 * row schedule. */
static int64_t expr_cost_in(const rx_expr *e, const rx_buffer *buf, int32_t *loads, bool idx)
{
    if (!e || e->kind == RX_E_INT || e->kind == RX_E_FLOAT || e->kind == RX_E_VAR) return 0;
    bool load = e->kind == RX_E_LOAD;
    int64_t c = e->kind == RX_E_CALL ? CALL_COST : idx ? 0 : !load ? 1 : 0;
    if (load && buf && e->u.load.buf == buf) ++*loads;
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) {
        const rx_expr *ch = rx_expr_child(e, i);
        if (load && !idx && loads_any(ch)) c += CALL_COST;
        c += expr_cost_in(ch, buf, loads, idx || load);
    }
    return c;
}

static int64_t expr_cost(const rx_expr *e, const rx_buffer *buf, int32_t *loads)
{
    return expr_cost_in(e, buf, loads, false);
}

/* The cost of the stores of a loop function body (per element of a single-op one). */
static int64_t stmts_cost(const rx_stmts *ss, const rx_buffer *buf, int32_t *loads)
{
    int64_t c = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_FOR: c += stmts_cost(&s->u.for_.body, buf, loads); break;
        case RX_S_BLOCK:
            c += stmts_cost(&s->u.block.init, buf, loads) + stmts_cost(&s->u.block.body, buf, loads);
            break;
        case RX_S_STORE:
            c += expr_cost(s->u.store.value, buf, loads);
            for (int k = 0; k < s->u.store.nidx; k++)
                c += expr_cost_in(s->u.store.idx[k], buf, loads, true);
            break;
        case RX_S_LET:
            c += expr_cost(s->u.let.value, buf, loads) + stmts_cost(&s->u.let.body, buf, loads);
            break;
        case RX_S_IF:
            c += expr_cost(s->u.if_.cond, buf, loads) + stmts_cost(&s->u.if_.then_s, buf, loads) +
                 stmts_cost(&s->u.if_.else_s, buf, loads);
            break;
        default: break; /* ALLOC */
        }
    }
    return c;
}

void rxi_fuse_cost(const rx_func *f, int32_t *cost, int32_t *passes)
{
    int32_t loads = 0;
    int64_t c = stmts_cost(&f->tbody, NULL, &loads);
    *cost = (int32_t)(c < INT32_MAX ? c : INT32_MAX);
    *passes = 1;
    for (int k = 0; k < f->ntparams; k++) {
        if (!f->tparams[k].buf) continue;
        loads = 0;
        stmts_cost(&f->tbody, f->tparams[k].buf, &loads);
        if (loads > *passes) *passes = loads;
    }
}

/* Whether e holds a load of rank >= 2 that uses v but not in its last index. */
static bool moved_load(const rx_expr *e, const rx_svar *v)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && e->u.load.nidx >= 2 &&
        !rx_expr_uses_var(e->u.load.idx[e->u.load.nidx - 1], v))
        for (int k = 0; k < e->u.load.nidx - 1; k++)
            if (rx_expr_uses_var(e->u.load.idx[k], v)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (moved_load(rx_expr_child(e, i), v)) return true;
    return false;
}

static bool stmts_transpose(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_FOR:
            if (stmts_transpose(&s->u.for_.body)) return true;
            break;
        case RX_S_BLOCK:
            if (stmts_transpose(&s->u.block.body)) return true;
            break;
        case RX_S_LET:
            if (stmts_transpose(&s->u.let.body)) return true;
            break;
        case RX_S_IF:
            if (stmts_transpose(&s->u.if_.then_s) || stmts_transpose(&s->u.if_.else_s)) return true;
            break;
        case RX_S_STORE: {
            const rx_expr *last = s->u.store.nidx ? s->u.store.idx[s->u.store.nidx - 1] : NULL;
            if (last && last->kind == RX_E_VAR && moved_load(s->u.store.value, last->u.var))
                return true;
            break;
        }
        default: break;
        }
    }
    return false;
}

bool rxi_fuse_transposes(const rx_func *f)
{
    return stmts_transpose(&f->tbody);
}

/* The element count of a static tensor (saturating at 2^40). */
static bool static_numel(const rx_sinfo *t, int64_t *out)
{
    int64_t n = 1, v;
    for (int i = 0; i < t->ndim; i++) {
        if (!rx_expr_is_const(t->dims[i], &v) || v < 0) return false;
        n = v > 0 && n > ((int64_t)1 << 40) / v ? (int64_t)1 << 40 : n * v;
    }
    *out = n;
    return true;
}

/* Whether a >= m * b is proved (ar's interval and canonical-form rules). */
static bool at_least(rx_arith *ar, rx_arena *a, rx_expr *x, int64_t m, rx_expr *y)
{
    rx_expr *rhs = m == 1 ? y : rx_e_binary(a, RX_E_MUL, rx_e_int(a, m), y);
    return rx_arith_prove(ar, rx_e_binary(a, RX_E_GE, x, rhs));
}

/* Equal ranks, every dim of c provably >= the same dim of p and one that is not a
 * literal 1 in p >= twice it (a 2x resize of an (n, c, (h - 1) // 4 * 2 + 2, ...) map:
 * no dim of c equals one of p). A keepdims statistic's 1 read along a row does not
 * count, as in the matching rule: the row schedules hoist it (schedule_rows.c). */
static bool dims_dominate(rx_arith *ar, rx_arena *a, const rx_sinfo *p, const rx_sinfo *c)
{
    if (!ar || !a || p->ndim != c->ndim || !p->ndim) return false;
    bool twice = false;
    for (int i = 0; i < p->ndim; i++) {
        if (rx_expr_same(p->dims[i], c->dims[i])) continue;
        if (!at_least(ar, a, c->dims[i], 1, p->dims[i])) return false;
        twice = twice || (!rx_expr_is_int(p->dims[i], 1) && at_least(ar, a, c->dims[i], 2, p->dims[i]));
    }
    return twice;
}

/* True when tensor c provably has at least twice the elements of tensor p: both static,
 * or every dim of p matched by an equal dim of c and the dims of c left over are a
 * symbolic one or literals of product >= 2, or (ar given) dims_dominate. */
bool rxi_fuse_larger_space(rx_arith *ar, rx_arena *a, const rx_sinfo *p, const rx_sinfo *c)
{
    if (!p || !c || p->kind != RX_SI_TENSOR || c->kind != RX_SI_TENSOR || p->ndim < 0 ||
        c->ndim < 0 || (p->ndim && !p->dims) || (c->ndim && !c->dims) || p->ndim > 16 || c->ndim > 16)
        return false;
    int64_t np, nc, v;
    if (static_numel(p, &np) && static_numel(c, &nc)) return np > 0 && nc / 2 >= np;
    bool used[16] = {false};
    for (int i = 0; i < p->ndim; i++) {
        int j = 0;
        while (j < c->ndim && (used[j] || !rx_expr_same(p->dims[i], c->dims[j]))) j++;
        if (j == c->ndim) return dims_dominate(ar, a, p, c);
        used[j] = true;
    }
    int64_t left = 1;
    for (int j = 0; j < c->ndim; j++) {
        if (used[j]) continue;
        if (!rx_expr_is_const(c->dims[j], &v)) return true;
        left *= v;
        if (left >= 2) return true;
    }
    return false;
}
