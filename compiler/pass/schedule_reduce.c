/*
 * schedule_reduce.c — reductions reshaped for the CPU schedule: a reduction of a few
 * literal steps unrolled into an elementwise nest, else its trailing reduce loops merged
 * into one when they walk the trailing axes of every buffer they index. A step of
 * rx_pass_schedule_cpu, before the row reductions of schedule_rows.c.
 *
 * Why: a global pooling as people write it (x.mean((2, 3), keepdim=True),
 * F.adaptive_avg_pool2d(x, 1) or adaptive_max_pool2d(x, 1) kept as a reduction, amax,
 * SKNet's feats.sum(1).mean((2, 3)), CBAM's channel gate) legalizes to
 *
 *   for b for c [for 1 for 1] for h for w:  block (spatial b, c [, 1, 1]; reduce h, w):
 *     init C[b, c, ..] = INIT;  C[b, c, ..] = OP(C[b, c, ..], G(x[b, c, h, w]))
 *
 * with two reduce loops. schedule_rows.c's lanes want one reduce loop, so the nest went
 * to schedule_tile.c, whose tiles have nothing to tile here (every spatial extent 1 or
 * the channels, none contiguous along the reduction): one serial scalar chain of H * W
 * dependent steps per plane (rxk_max at 6.7 ns per element was a fifth of CBAM's
 * time; SKNet's fused_sum_mean a quarter of SKNet's).
 *
 * The rule, for a top-level nest (schedule_rows.c's shape: loops serial, unbound, from
 * 0, each around the next alone, extents free of the nest, a block whose iterators are
 * bound to exactly the loop variables in order, the spatial ones first, then q >= 2
 * reduce ones): take the largest t, 2 <= t <= q, such that every use of the last t
 * reduce iterators r_1 .. r_t (extents E_1 .. E_t) in the block's init and body is a
 * LOAD of a buffer B (rank n) whose last t indices are exactly r_1 .. r_t, in order,
 * with B's extents d_{n-t+2} .. d_{n-1} equal to E_2 .. E_t (the same node, equal
 * literals, or proved equal by the canonical forms) and no other index using them.
 * Then the t loops become one loop k over E_1 * .. * E_t, bound to one reduce
 * iterator, and each such load reads B[.., 0, .., 0, k]: the flat row-major offset
 * (.. (A * d + r_1) * E_2 + r_2 ..) * E_t + r_t == (.. A * d * E_2 .. E_t) + k with
 * k = (.. r_1 * E_2 + r_2 ..) * E_t + r_t. The IR's LOAD is read as that flat offset
 * (schedule_flat.c writes such loads too: an index may exceed its extent; only
 * data-dependent indices are checked), so every element read is the one read before.
 *
 * Exactness: k ascending enumerates (r_1, .., r_t) in lexicographic order, the order
 * of the nest, so the merged nest applies OP in the same order: bit-identical. The
 * merged nest is then schedule_rows.c's (one reduce loop, unit step along k): its lanes
 * reassociate a sum as that file's essay says (max and min exact).
 *
 * Few steps. ResNeSt's and SKNet's xs.sum(1) over the radix (2 branches of (b, 2, C,
 * h, w)) is a reduction of 2 steps over a non-last axis: schedule_tile.c gave it 6 x 16
 * register tiles around a loop of 2, with partial tiles at every symbolic edge. When
 * every reduce loop has a literal extent, their product (the steps) is at most
 * RD_UNROLL, there is a spatial loop, the block's init stores INIT to the element its
 * body stores, INIT reads no C and UPD reads C once, at that element, the reduce loops
 * go: the block keeps its spatial iterators and stores UPD_{T-1}(.. UPD_0(INIT) ..),
 * step t's UPD with the reduce iterators replaced by t's digits (lexicographic order)
 * and its load of C by the value so far. The same operations in the same order:
 * bit-identical. The nest is elementwise then (vectorized along its last axis, its rows
 * one parallel loop: schedule_rows.c and schedule.c), the expression at most RD_UNROLL
 * times UPD's size.
 *
 * Cost: one walk of each top-level nest's block; nodes only where a nest changes.
 */
#include "schedule_int.h"

enum { RD_MAX_LOOPS = 16, RD_UNROLL = 4 /* most steps of a reduction unrolled */ };

/* One matched nest. */
typedef struct rnest {
    rx_stmt *loops[RD_MAX_LOOPS]; /* the chain, outermost first */
    int n;                        /* loops (= the block's iterators) */
    int q;                        /* trailing reduce iterators */
    rx_stmt *blk;                 /* the block */
} rnest;

/* True when FOR s is a chain of loops around one block, iterators bound to exactly the
   loop variables, spatial ones then q >= 1 reduce ones. */
static bool match(rx_stmt *s, rnest *r)
{
    r->n = r->q = 0;
    rx_stmt *c = s;
    while (c->kind == RX_S_FOR) {
        if (r->n == RD_MAX_LOOPS || c->u.for_.loop_kind != RX_LOOP_SERIAL || c->u.for_.thread ||
            !rx_expr_is_int(c->u.for_.min, 0) || c->u.for_.body.n != 1)
            return false;
        for (int i = 0; i < r->n; i++)
            if (rx_expr_uses_var(c->u.for_.extent, r->loops[i]->u.for_.var)) return false;
        r->loops[r->n++] = c;
        c = c->u.for_.body.items[0];
    }
    if (c->kind != RX_S_BLOCK || c->u.block.niters != r->n) return false;
    r->blk = c;
    for (int i = 0; i < r->n; i++) {
        const rx_iter *it = &c->u.block.iters[i];
        if (!it->bind || it->bind->kind != RX_E_VAR || it->bind->u.var != r->loops[i]->u.for_.var)
            return false;
        if (it->kind == RX_ITER_REDUCE) r->q++;
        else if (r->q) return false; /* a spatial iterator after a reduce one */
    }
    return r->q >= 1;
}

/* True when x and y are the same extent (schedule_flat.c's same_div). */
static bool same_ext(rx_arith *ar, const rx_expr *x, const rx_expr *y)
{
    int64_t u, v;
    if (rx_expr_same(x, y)) return true;
    if (rx_expr_is_const(x, &u) && rx_expr_is_const(y, &v)) return u == v;
    return rx_arith_prove_equal(ar, (rx_expr *)x, (rx_expr *)y);
}

static bool uses_any(const rx_expr *e, const rx_svar *const *v, int t)
{
    for (int j = 0; j < t; j++)
        if (rx_expr_uses_var(e, v[j])) return true;
    return false;
}

/* True when every use of v[0 .. t) in e is a load whose last t indices are exactly
   v[0 .. t) with the buffer's trailing extents ext[1 .. t) (file essay). */
static bool uses_ok(rx_arith *ar, const rx_expr *e, const rx_svar *const *v,
                    rx_expr *const *ext, int t)
{
    if (!e) return true;
    if (e->kind == RX_E_VAR) return !uses_any(e, v, t);
    if (e->kind == RX_E_LOAD && uses_any(e, v, t)) {
        const rx_buffer *b = e->u.load.buf;
        int n = e->u.load.nidx;
        if (n < t || b->ndim != n) return false;
        for (int i = 0; i < n - t; i++)
            if (uses_any(e->u.load.idx[i], v, t)) return false;
        for (int j = 0; j < t; j++) {
            const rx_expr *x = e->u.load.idx[n - t + j];
            if (x->kind != RX_E_VAR || x->u.var != v[j]) return false;
            if (j && !same_ext(ar, b->shape[n - t + j], ext[j])) return false;
        }
        return true;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!uses_ok(ar, rx_expr_child(e, i), v, ext, t)) return false;
    return true;
}

/* The same check over a block's init or body (one store each, as the nests have). */
static bool stmts_ok(rx_arith *ar, const rx_stmts *ss, const rx_svar *const *v,
                     rx_expr *const *ext, int t)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *st = ss->items[i];
        if (st->kind != RX_S_STORE) return false;
        for (int k = 0; k < st->u.store.nidx; k++)
            if (uses_any(st->u.store.idx[k], v, t)) return false;
        if (!uses_ok(ar, st->u.store.value, v, ext, t)) return false;
    }
    return true;
}

/* e with each load through v[0 .. t) reading (.., 0, .., 0, k) */
static rx_expr *merge_expr(rx_arena *a, rx_expr *e, const rx_svar *const *v, int t, rx_expr *k)
{
    int nk = e ? rx_expr_nchildren(e) : 0;
    rx_expr *r = e;
    if (nk) {
        rx_expr *kids[8], **kk = nk <= 8 ? kids : RX_NEWN(a, rx_expr *, nk);
        bool changed = false;
        for (int i = 0; i < nk; i++) {
            rx_expr *c = rx_expr_child(e, i);
            kk[i] = merge_expr(a, c, v, t, k);
            changed |= kk[i] != c;
        }
        if (changed) r = rx_expr_with_children(a, e, kk);
    }
    if (r && r->kind == RX_E_LOAD && uses_any(r, v, t)) {
        int n = r->u.load.nidx;
        rx_expr **idx = RX_NEWN(a, rx_expr *, n);
        for (int i = 0; i < n; i++) idx[i] = r->u.load.idx[i];
        for (int j = 0; j < t - 1; j++) idx[n - t + j] = rx_e_int(a, 0);
        idx[n - 1] = k;
        r = rx_e_load(a, r->u.load.buf, idx, n);
    }
    return r;
}

/* True when every load of C in e is at exactly the indices idx (n of them). */
static bool loads_at(const rx_expr *e, const rx_buffer *C, rx_expr *const *idx, int n)
{
    if (!e) return true;
    if (e->kind == RX_E_LOAD && e->u.load.buf == C) {
        if (e->u.load.nidx != n) return false;
        for (int i = 0; i < n; i++)
            if (!rx_expr_same(e->u.load.idx[i], idx[i])) return false;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!loads_at(rx_expr_child(e, i), C, idx, n)) return false;
    return true;
}

/* The number of loads of b in e. */
static int count_loads(const rx_expr *e, const rx_buffer *b)
{
    if (!e) return 0;
    int n = e->kind == RX_E_LOAD && e->u.load.buf == b;
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += count_loads(rx_expr_child(e, i), b);
    return n;
}

/* e with its one load of b replaced by v */
static rx_expr *put_value(rx_arena *a, rx_expr *e, const rx_buffer *b, rx_expr *v)
{
    if (e->kind == RX_E_LOAD && e->u.load.buf == b) return v;
    int nk = rx_expr_nchildren(e);
    if (!nk) return e;
    rx_expr **kk = RX_NEWN(a, rx_expr *, nk);
    bool changed = false;
    for (int i = 0; i < nk; i++) {
        rx_expr *c = rx_expr_child(e, i);
        kk[i] = put_value(a, c, b, v);
        changed |= kk[i] != c;
    }
    return changed ? rx_expr_with_children(a, e, kk) : e;
}

/* True when r's reduction has at most RD_UNROLL literal steps and was rewritten as an
   elementwise nest with the steps unrolled in order (file essay, "Few steps"). */
static bool unroll_small(rx_module *m, const rnest *r)
{
    int n = r->n, p = n - r->q;
    int64_t ext[RD_MAX_LOOPS], steps = 1;
    rx_stmt *blk = r->blk;
    if (p < 1 || blk->u.block.init.n != 1 || blk->u.block.body.n != 1) return false;
    for (int j = p; j < n; j++)
        if (!rx_expr_is_const(r->loops[j]->u.for_.extent, &ext[j]) || ext[j] < 1 ||
            (steps *= ext[j]) > RD_UNROLL)
            return false;
    const rx_stmt *in = blk->u.block.init.items[0], *st = blk->u.block.body.items[0];
    if (in->kind != RX_S_STORE || st->kind != RX_S_STORE || in->u.store.buf != st->u.store.buf ||
        in->u.store.nidx != st->u.store.nidx)
        return false;
    const rx_buffer *C = st->u.store.buf;
    for (int i = 0; i < st->u.store.nidx; i++)
        if (!rx_expr_same(in->u.store.idx[i], st->u.store.idx[i])) return false;
    /* UPD reads C once, at the stored element (its running value); INIT not at all */
    if (count_loads(in->u.store.value, C) || count_loads(st->u.store.value, C) != 1) return false;
    for (int i = 0; i < st->u.store.nidx; i++)
        if (rx_expr_loads_buf(st->u.store.idx[i], C)) return false;
    for (int j = p; j < n; j++) { /* the loops go: only their iterators, substituted, stay */
        const rx_svar *lv = r->loops[j]->u.for_.var, *iv = blk->u.block.iters[j].var;
        if ((lv != iv && rx_expr_uses_var(st->u.store.value, lv)) ||
            rx_expr_uses_var(in->u.store.value, lv) || rx_expr_uses_var(in->u.store.value, iv))
            return false;
        for (int i = 0; i < st->u.store.nidx; i++)
            if (rx_expr_uses_var(st->u.store.idx[i], lv) || rx_expr_uses_var(st->u.store.idx[i], iv))
                return false;
    }
    if (!loads_at(st->u.store.value, C, st->u.store.idx, st->u.store.nidx)) return false;
    rx_arena *a = m->arena;
    rx_expr *cur = in->u.store.value;
    for (int64_t t = 0; t < steps; t++) {
        rx_vmap vm = {0};
        for (int64_t j = n - 1, rest = t; j >= p; j--) {
            rx_vmap_set(&vm, blk->u.block.iters[j].var, rx_e_int(a, rest % ext[j]));
            rest /= ext[j];
        }
        rx_expr *u = rx_expr_subst(a, st->u.store.value, &vm);
        rx_vmap_free(&vm);
        cur = put_value(a, u, C, cur);
    }
    rx_stmt *body = rx_s_store(a, st->u.store.buf, st->u.store.idx, st->u.store.nidx, cur);
    blk->u.block.niters = p;
    blk->u.block.init = (rx_stmts){0};
    blk->u.block.body = rx_stmts_one(a, body);
    r->loops[p - 1]->u.for_.body = rx_stmts_one(a, blk);
    return true;
}

/* FOR s with its trailing reduce loops merged (file essay), or NULL. */
static rx_stmt *reduce_nest(rx_module *m, rx_stmt *s)
{
    rnest r;
    if (!match(s, &r)) return NULL;
    if (unroll_small(m, &r)) return s;
    if (r.q < 2) return NULL;
    rx_arena *a = m->arena;
    rx_arith *ar = rx_arith_new(a);
    const rx_svar *v[RD_MAX_LOOPS];
    rx_expr *ext[RD_MAX_LOOPS];
    int t = r.q, n = r.n;
    for (; t >= 2; t--) {
        for (int j = 0; j < t; j++) {
            v[j] = r.blk->u.block.iters[n - t + j].var;
            ext[j] = r.loops[n - t + j]->u.for_.extent;
        }
        if (stmts_ok(ar, &r.blk->u.block.init, v, ext, t) &&
            stmts_ok(ar, &r.blk->u.block.body, v, ext, t))
            break;
    }
    if (t < 2) {
        rx_arith_free(ar);
        return NULL;
    }
    rx_expr *E = ext[0];
    for (int j = 1; j < t; j++) E = rx_e_binary(a, RX_E_MUL, E, ext[j]);
    E = rx_arith_simplify(ar, E);
    rx_arith_free(ar);
    rx_svar *kl = rx_svar_new(a, "k", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *ki = rx_svar_new(a, "k", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_expr *kv = rx_e_var(a, ki);
    rx_stmt *blk = r.blk;
    for (int i = 0; i < blk->u.block.init.n; i++)
        blk->u.block.init.items[i]->u.store.value =
            merge_expr(a, blk->u.block.init.items[i]->u.store.value, v, t, kv);
    for (int i = 0; i < blk->u.block.body.n; i++)
        blk->u.block.body.items[i]->u.store.value =
            merge_expr(a, blk->u.block.body.items[i]->u.store.value, v, t, kv);
    int ni = n - t + 1;
    rx_iter *its = RX_NEWN(a, rx_iter, ni);
    for (int i = 0; i < ni - 1; i++) its[i] = blk->u.block.iters[i];
    its[ni - 1] = (rx_iter){ki, RX_ITER_REDUCE, E, rx_e_var(a, kl)};
    blk->u.block.iters = its;
    blk->u.block.niters = ni;
    rx_stmt *f = r.loops[n - t];
    f->u.for_.var = kl;
    f->u.for_.extent = E;
    f->u.for_.body = rx_stmts_one(a, blk);
    return s;
}

bool rx_schedule_reduce(rx_module *m, int *nmerged)
{
    int n = rx_schedule_nests(m, reduce_nest);
    if (nmerged) *nmerged = n;
    return true;
}
