/*
 * analysis.c — pipeline step 4: analysis feedback (paper §4.2, Algorithm 1 "Analysis
 * feedback pass for tensor program pattern kind"): the pattern kind of every loop
 * function, recorded as its `compute_pattern` attribute for FuseOps (Algorithm 2).
 *
 * The kinds, ordered: ElementWise < Broadcast < Injective < Reduction <
 * OutputEwiseFusible < Opaque (TVM's OpPatternKind order).
 *
 * Step 1: find the "blocks". A BLOCK statement is one; a STORE outside any block is an
 *         implicit block whose iterators are the enclosing loops (spatial when the
 *         store's indices use them, reduce otherwise: the reader's rule for implicit
 *         iterators), so the grid-only functions of Figure 9 are analysed like their
 *         TensorIR originals. Inside an implicit block, `if (c) { X[idx] = v }` right
 *         before the statement that stores X[idx], with c over reduce loops only, is the
 *         reduction's init (Figure 9's `if k == 0: Y[i, j] = 0`), as a block's `init`.
 * Step 2: per block, Algorithm 1: collect the block body's single written index list
 *         w and every read index list r (loads nested in indices included; let values
 *         substituted). More than one distinct write (buffer and indices) → Opaque
 *         (line 4). Each read is classified against w: ElementWise (same indices),
 *         Broadcast (its indices are store indices in order, unit dims read at 0
 *         skipped), Injective (store indices are plain variables and the read's indices
 *         use no other variable), else the block's index pattern is Opaque. The block
 *         kind is the max over the reads (no reads: ElementWise, as for `full`).
 *         An Opaque index pattern in a block with reduce iterators becomes
 *         OutputEwiseFusible when the body is a multiply-accumulate
 *         `Y[w] = Y[w] + A[..] * B[..]` (either operand order; operands are loads of
 *         two different buffers, possibly cast or padded as select(c, load, 0)), one
 *         of them read with a store variable (matmul, matrix-vector, conv2d), else
 *         Reduction (sum, max, softmax; a dot product into a scalar; sum of squares).
 * Step 3: the function's kind is the max over its blocks (an injective epilogue after
 *         a reduction keeps Reduction, a bias add after matmul keeps
 *         OutputEwiseFusible); a function without any store is Opaque.
 *
 * Choices, where Algorithm 1 and TVM's implementation leave room:
 *   - Broadcast plus an elementwise read stays Broadcast (C[i, j] = A[i, j] + B[j]),
 *     as TVM's code and relay's registration of `add` (kBroadcast); Algorithm 1's
 *     lines 19–20 would call it ElementWise, which would let FuseOps treat a
 *     broadcasting add as shape-preserving.
 *   - Data-dependent indices (take: T[i, j] = A[I[i], j]) are Injective, as in TVM:
 *     the index's variables are store variables; the nested load I[i] is a read too.
 *   - An IF inside a block, or an IF that is not an init outside one, makes the block
 *     Opaque; allocations (intermediate buffers, any scope) do not change the kind.
 *   - A given `compute_pattern` is kept (hand-written kernels know better); graph
 *     functions get none.
 * Cost: linear in the size of each loop function (index comparisons are structural).
 * Leaves the module otherwise unchanged; re-deduction is not needed (attributes only).
 */
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"

static const char *const PATTERN_NAMES[] = {"ElementWise", "Broadcast", "Injective",
                                            "Reduction", "OutputEwiseFusible", "Opaque"};

const char *rx_pattern_name(rx_pattern p)
{
    return (unsigned)p < RX_COUNTOF(PATTERN_NAMES) ? PATTERN_NAMES[p] : "?";
}

bool rx_pattern_parse(const char *s, rx_pattern *out)
{
    for (int i = 0; s && i < RX_COUNTOF(PATTERN_NAMES); i++)
        if (strcmp(s, PATTERN_NAMES[i]) == 0) {
            *out = (rx_pattern)i;
            return true;
        }
    return false;
}

static rx_pattern pmax(rx_pattern a, rx_pattern b) { return a > b ? a : b; }

/* ---------------------------------------------------------------- one block */

typedef RX_VEC(const rx_expr *) load_vec;
typedef RX_VEC(const rx_stmt *) store_vec;

typedef struct an_ctx {
    rx_arena *a;                    /* for let substitution */
    rx_vmap lets;                   /* let var -> value (substituted into indices) */
    RX_VEC(const rx_svar *) loops;  /* enclosing loop variables (outside blocks) */
    rx_pattern kind;                /* max over the blocks so far */
    bool any;                       /* a block was seen */
} an_ctx;

static void collect_loads(an_ctx *c, const rx_expr *e, load_vec *out)
{
    if (!e) return;
    if (e->kind == RX_E_LOAD) RX_VEC_PUSH(*out, e);
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) collect_loads(c, rx_expr_child(e, i), out);
}

static rx_expr *sub(an_ctx *c, rx_expr *e) { return c->lets.keys.n ? rx_expr_subst(c->a, e, &c->lets) : e; }

static bool same_idx(rx_expr **x, int nx, rx_expr **y, int ny)
{
    if (nx != ny) return false;
    for (int i = 0; i < nx; i++)
        if (!rx_expr_same(x[i], y[i])) return false;
    return true;
}

/* Gathers the stores and loads of a block body. False when the body has something
 * that makes it Opaque (an IF). Nested blocks are analysed on their own. */
static void walk(an_ctx *c, const rx_stmts *ss);
static void analyse_block(an_ctx *c, const rx_stmts *body, bool has_reduce);

static bool gather(an_ctx *c, const rx_stmts *ss, store_vec *stores, load_vec *loads)
{
    bool ok = true;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_STORE:
            RX_VEC_PUSH(*stores, s);
            collect_loads(c, sub(c, s->u.store.value), loads);
            for (int k = 0; k < s->u.store.nidx; k++)
                collect_loads(c, sub(c, s->u.store.idx[k]), loads);
            break;
        case RX_S_FOR: ok = gather(c, &s->u.for_.body, stores, loads) && ok; break;
        case RX_S_LET:
            rx_vmap_set(&c->lets, s->u.let.var, sub(c, s->u.let.value));
            ok = gather(c, &s->u.let.body, stores, loads) && ok;
            break;
        case RX_S_BLOCK: walk(c, &(rx_stmts){(rx_stmt **)&ss->items[i], 1}); break;
        case RX_S_IF: ok = false; break;
        default: break; /* ALLOC */
        }
    }
    return ok;
}

static bool is_broadcast(const rx_expr *st, const rx_expr *ld)
{
    const struct rx_buffer *lb = ld->u.load.buf;
    int j = 0, ns = st->u.load.nidx;
    for (int i = 0; i < ld->u.load.nidx; i++) {
        if (rx_expr_is_int(lb->shape[i], 1) && rx_expr_is_int(ld->u.load.idx[i], 0)) continue;
        while (j < ns && !rx_expr_same(st->u.load.idx[j], ld->u.load.idx[i])) j++;
        if (j == ns) return false;
        j++;
    }
    return true;
}

static bool only_vars_of(const rx_expr *e, const rx_svar_vec *vars)
{
    if (e->kind == RX_E_VAR) {
        for (int i = 0; i < vars->n; i++)
            if (vars->items[i] == e->u.var) return true;
        return e->u.var->kind == RX_SV_SHAPE || e->u.var->kind == RX_SV_PARAM;
    }
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++)
        if (!only_vars_of(rx_expr_child(e, i), vars)) return false;
    return true;
}

static bool is_injective(const rx_expr *st, const rx_expr *ld)
{
    rx_svar_vec vars = {0};
    bool ok = true;
    for (int i = 0; i < st->u.load.nidx && ok; i++) {
        const rx_expr *x = st->u.load.idx[i];
        if (x->kind == RX_E_VAR) RX_VEC_PUSH(vars, x->u.var);
        else if (x->kind != RX_E_INT) ok = false;
    }
    for (int i = 0; i < ld->u.load.nidx && ok; i++) ok = only_vars_of(ld->u.load.idx[i], &vars);
    RX_VEC_FREE(vars);
    return ok;
}

static bool uses_store_var(const rx_expr *st, const rx_expr *ld)
{
    for (int i = 0; i < st->u.load.nidx; i++) {
        const rx_expr *x = st->u.load.idx[i];
        if (x->kind != RX_E_VAR) continue;
        for (int k = 0; k < ld->u.load.nidx; k++)
            if (rx_expr_uses_var(ld->u.load.idx[k], x->u.var)) return true;
    }
    return false;
}

/* An operand of the product: a load, possibly cast, or padded as
 * select(in_bounds, load, 0) (conv2d's padding). NULL when it is not one. */
static const rx_expr *operand_load(const rx_expr *e)
{
    while (e && e->kind == RX_E_CAST) e = e->u.op.a;
    if (e && e->kind == RX_E_SELECT && e->u.op.c &&
        (e->u.op.c->kind == RX_E_FLOAT ? e->u.op.c->u.fval == 0.0 : rx_expr_is_int(e->u.op.c, 0)))
        e = e->u.op.b;
    while (e && e->kind == RX_E_CAST) e = e->u.op.a;
    return e && e->kind == RX_E_LOAD ? e : NULL;
}

/* Y[w] = Y[w] + A[..] * B[..] (or the sum's operands swapped), A and B two different
 * buffers, at least one of them read with a store variable (a reuse axis: matmul,
 * matrix-vector, conv2d; a dot product into a scalar and a sum of squares are plain
 * reductions). */
static bool is_fma(const rx_stmt *s, const rx_expr *st)
{
    const rx_expr *v = s->u.store.value;
    if (!v || v->kind != RX_E_ADD) return false;
    const rx_expr *acc = v->u.op.a, *mul = v->u.op.b;
    if (acc->kind != RX_E_LOAD) { const rx_expr *t = acc; acc = mul; mul = t; }
    if (acc->kind != RX_E_LOAD || mul->kind != RX_E_MUL) return false;
    if (acc->u.load.buf != s->u.store.buf ||
        !same_idx(acc->u.load.idx, acc->u.load.nidx, s->u.store.idx, s->u.store.nidx))
        return false;
    const rx_expr *l = operand_load(mul->u.op.a), *r = operand_load(mul->u.op.b);
    return l && r && l->u.load.buf != r->u.load.buf &&
           (uses_store_var(st, l) || uses_store_var(st, r));
}

static void analyse_block(an_ctx *c, const rx_stmts *body, bool has_reduce)
{
    store_vec stores = {0};
    load_vec loads = {0};
    int lets = c->lets.keys.n;
    bool ok = gather(c, body, &stores, &loads);
    c->lets.keys.n = c->lets.vals.n = lets;
    rx_pattern k = RX_PAT_ELEMWISE;
    if (stores.n == 0) {
        if (!ok) k = RX_PAT_OPAQUE; else goto done; /* a block of nested blocks only */
    }
    const rx_stmt *s0 = stores.n ? stores.items[stores.n - 1] : NULL;
    for (int i = 0; s0 && i < stores.n && ok; i++) /* Algorithm 1, line 4 */
        ok = stores.items[i]->u.store.buf == s0->u.store.buf &&
             same_idx(stores.items[i]->u.store.idx, stores.items[i]->u.store.nidx,
                      s0->u.store.idx, s0->u.store.nidx);
    if (!ok) {
        k = RX_PAT_OPAQUE;
    } else {
        rx_expr st = {.kind = RX_E_LOAD};
        st.u.load.buf = s0->u.store.buf;
        st.u.load.nidx = s0->u.store.nidx;
        st.u.load.idx = RX_NEWN(c->a, rx_expr *, s0->u.store.nidx + 1);
        for (int i = 0; i < s0->u.store.nidx; i++) st.u.load.idx[i] = sub(c, s0->u.store.idx[i]);
        for (int i = 0; i < loads.n && k != RX_PAT_OPAQUE; i++) {
            const rx_expr *ld = loads.items[i];
            if (same_idx(ld->u.load.idx, ld->u.load.nidx, st.u.load.idx, st.u.load.nidx))
                continue;
            if (is_broadcast(&st, ld)) k = pmax(k, RX_PAT_BROADCAST);
            else if (is_injective(&st, ld)) k = pmax(k, RX_PAT_INJECTIVE);
            else k = RX_PAT_OPAQUE;
        }
        if (k == RX_PAT_OPAQUE && has_reduce)
            k = stores.n == 1 && is_fma(s0, &st) ? RX_PAT_OUT_EWISE_FUSIBLE : RX_PAT_REDUCTION;
    }
    c->kind = pmax(c->kind, k);
    c->any = true;
done:
    RX_VEC_FREE(stores);
    RX_VEC_FREE(loads);
}

/* ---------------------------------------------------------------- the walk */

static bool block_has_reduce(const rx_stmt *b)
{
    for (int i = 0; i < b->u.block.niters; i++)
        if (b->u.block.iters[i].kind == RX_ITER_REDUCE) return true;
    return false;
}

/* Implicit block of a store outside blocks: reduce when an enclosing loop is not used
 * by its indices. */
static bool store_has_reduce(an_ctx *c, const rx_stmt *s)
{
    for (int l = 0; l < c->loops.n; l++) {
        bool used = false;
        for (int k = 0; k < s->u.store.nidx && !used; k++)
            used = rx_expr_uses_var(sub(c, s->u.store.idx[k]), c->loops.items[l]);
        if (!used) return true;
    }
    return false;
}

/* `if (c) { X[idx] = v ... }` without else, right before a store to X[idx], whose
 * condition uses no variable of idx: the init of that store's reduction. */
static bool is_init_if(const rx_stmt *s, const rx_stmt *next)
{
    if (!next || next->kind != RX_S_STORE || s->u.if_.else_s.n || !s->u.if_.then_s.n) return false;
    for (int i = 0; i < s->u.if_.then_s.n; i++) {
        const rx_stmt *t = s->u.if_.then_s.items[i];
        if (t->kind != RX_S_STORE || t->u.store.buf != next->u.store.buf ||
            !same_idx(t->u.store.idx, t->u.store.nidx, next->u.store.idx, next->u.store.nidx))
            return false;
    }
    rx_svar_vec vars = {0};
    rx_expr_vars(s->u.if_.cond, &vars);
    bool ok = true;
    for (int v = 0; v < vars.n && ok; v++)
        for (int k = 0; k < next->u.store.nidx && ok; k++)
            ok = !rx_expr_uses_var(next->u.store.idx[k], vars.items[v]);
    RX_VEC_FREE(vars);
    return ok;
}

static void walk(an_ctx *c, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_FOR:
            RX_VEC_PUSH(c->loops, s->u.for_.var);
            walk(c, &s->u.for_.body);
            c->loops.n--;
            break;
        case RX_S_BLOCK: {
            int saved = c->loops.n;
            c->loops.n = 0; /* loops inside a block form its own implicit blocks */
            analyse_block(c, &s->u.block.body, block_has_reduce(s));
            c->loops.n = saved;
            break;
        }
        case RX_S_STORE:
            analyse_block(c, &(rx_stmts){(rx_stmt **)&ss->items[i], 1}, store_has_reduce(c, s));
            break;
        case RX_S_LET: {
            int lets = c->lets.keys.n;
            rx_vmap_set(&c->lets, s->u.let.var, sub(c, s->u.let.value));
            walk(c, &s->u.let.body);
            c->lets.keys.n = c->lets.vals.n = lets;
            break;
        }
        case RX_S_IF:
            if (!is_init_if(s, i + 1 < ss->n ? ss->items[i + 1] : NULL)) {
                c->kind = RX_PAT_OPAQUE;
                c->any = true;
            }
            break;
        default: break; /* ALLOC */
        }
    }
}

rx_pattern rx_analyze_pattern(rx_arena *a, const rx_func *f)
{
    if (f->kind != RX_F_TIR) return RX_PAT_OPAQUE;
    an_ctx c = {.a = a, .kind = RX_PAT_ELEMWISE};
    walk(&c, &f->tbody);
    rx_vmap_free(&c.lets);
    RX_VEC_FREE(c.loops);
    return c.any ? c.kind : RX_PAT_OPAQUE;
}

/* ---------------------------------------------------------------- the pass */

/* f->attrs with key set to a string value. */
static void set_attr_str(rx_module *m, rx_func *f, const char *key, const char *val)
{
    rx_attr *v = RX_NEW(m->arena, rx_attr);
    v->kind = RX_A_STR;
    v->u.s = val;
    rx_func_set_attr(m, f, key, v);
}

bool rx_pass_annotate_patterns(rx_module *m, rx_diags *d)
{
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *f = m->funcs[i];
        if (f->kind != RX_F_TIR || rx_attr_map_get(f->attrs, "compute_pattern")) continue;
        set_attr_str(m, f, "compute_pattern", rx_pattern_name(rx_analyze_pattern(m->arena, f)));
    }
    return true;
}
