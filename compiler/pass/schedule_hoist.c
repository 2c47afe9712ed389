/*
 * schedule_hoist.c — math that does not change along an innermost loop computed once
 * before it (loop-invariant code motion: the last step of the CPU schedule,
 * rx_pass_schedule_cpu), and nests whose math does not change along an outer loop
 * turned so that loop is innermost (interchange: an early step of the same pass).
 *
 * Why: fusion inlines a producer into its consumer's loop nest, so a value computed
 * per row of a small tensor and broadcast along the consumer's inner axis is
 * recomputed for every element. A GCN layer as PyG writes it (deg.pow(-0.5), the
 * inf masked to 0, gathered by the edge's source and target, times the (edges,
 * features) messages) fused into one nest computing four powf per message element:
 * 22.7 ms of a 34 ms call (2000 nodes, 12000 edges, 256 features, 2 threads), 0.44 ms
 * with the terms once per edge. The C compiler cannot move them itself: the gathers'
 * bounds checks (rx_chk) record errors, a side effect. schedule_rows.c does the same
 * for its row nests (a row's statistic once per row); this step covers every other
 * nest.
 *
 * Hoisting. Which loops: each innermost FOR F (no FOR inside it) of a loop function.
 * Which terms: the largest subexpressions of the value of a STORE in F that
 *   1. are evaluated whenever the store runs, the store being reached in every
 *      iteration of F (through BLOCK bodies and LETs; not under an IF, not in a
 *      block's init); a term under a select's arm or the right side of && / || (where a
 *      load may be out of bounds when the branch is not taken: a padding guard) moves
 *      only when it is speculable: every load in it is one the store evaluates
 *      unconditionally (same buffer, same indices) and it divides no integer by
 *      anything but a nonzero literal;
 *   2. mention neither F's variable nor a variable bound inside F in terms of it (block
 *      iterators bound to an expression of F's variable, LETs inside F), and load no
 *      buffer stored inside F (a reduction's accumulator changes along F);
 *   3. are costly: a math call (exp, pow, floor, ...), a gather (a load whose index
 *      loads) or an integer division by a non-literal (a shape expression's `//` and
 *      `%`: tens of cycles each, per element, where a symbolic reshape's index math
 *      sits in the innermost loop's address: SAM's window partition at (64, 67) spent
 *      25 ms in one such copy kernel, 3.2 ms with the divisions bound before the loop).
 *   3b. or are a gather's index that reads data (a take's index load and its wrap of
 *      negatives, emb[idx[i, k], j] along j), the gather itself not under an arm and
 *      changing along F. Such a term is not costly in itself, but codegen checks an
 *      index read from data (rx_chk), and the check, the index load and the select
 *      stayed in the innermost loop for every vector lane: zoo8's two_tower (an
 *      embedding bag written by hand, emb[hist] * mask summed over the history)
 *      spent most of its gather-sum kernel there. Its let variable is marked
 *      checked_index: codegen checks the value at the let against the extent of the
 *      buffer it indexes (c_kernel.c), and the uses of that buffer's axis by exactly
 *      the variable are not checked again (c_expr.c); the variable replaces only the
 *      same index of the same buffer and axis. The let is reached exactly when the
 *      gather would be (condition 1, F's extent >= 1 or the guard below), so the
 *      check records the same error and gives the same row. Measured (two_tower at
 *      1024 x 50 history items of a 50000 x 64 table, 2 threads, load 5-6, same run
 *      against the branch before the rule): the gather-sum kernel's minimum 4.8 ->
 *      1.6 ms, the plain take kernels (now a row copy, c_rowcopy.c) 115 -> 42 us;
 *      the model's medians 8.7-20 ms -> 2.9-7.8 ms; relax / ORT 1.02-1.10 (main) ->
 *      0.59-0.69 in bench_torch_blocks (0.24-0.77 at load 2, main 1.29-1.62); zoo
 *      BERT (embedding takes now row copies) unchanged: 0.97-1.03 x ORT, main
 *      1.02-1.38, minima 9.3 vs 9.7 ms, same runs.
 * A term of the form of one already hoisted from F is replaced by its variable
 * anywhere (it is computed anyway). Each term becomes `let t = term` around F, with
 * the block iterators it mentions replaced by their binds (which mention only
 * variables bound outside F); at most HOIST_MAX per loop. When F's extent is not a
 * literal >= 1 the lets and F go under `if (extent > 0)`, so a loop that runs zero
 * times evaluates nothing, as before. Loop kinds are kept (the step runs after the
 * parallel and vector rules); the lets land inside the enclosing loop's body (private
 * per iteration) or, for a one-loop nest, before it. Values are bit-identical: the
 * same operations in the same order, evaluated fewer times.
 *
 * Interchange. Bilinear grid_sample computes, per output element (n, c, y, x), the
 * sampling position from grid[n, y, x], its floor, four weights, four in-bounds flags
 * and four taps; everything but the taps' loads is the same for every channel c, yet
 * the channel loop is outside the loop over x, so hoisting finds nothing. Deformable
 * DETR's attention (zoo3 deform_attn) spent 89% of its time there. A perfect nest of
 * serial loops from 0 around one spatial block with one store (reading nothing it
 * stores) moves its outer loop L innermost when
 *   a. every math call in the value is free of L, and some call uses the innermost
 *      loop (else hoisting already applies);
 *   b. every load that moves with L reads along its last index by a unit step (the
 *      channel-last value of Deformable DETR, read through the permute FuseOps
 *      inlined), or is a gather (an index computed by a call or a load: the taps of an
 *      NCHW image, at sampled positions whatever the order);
 *   c. L's extent is a literal >= SWAP_MIN_EXTENT (the largest such L is taken).
 * Rule b keeps exp(c[j]) * x[i, j] as it is: moving i innermost would walk x's rows
 * with a stride to save a vector exp. The loops keep their variables and extents; the
 * spatial iterations are independent, so any order computes the same elements. Then
 * the parallel rule takes the outermost loop and hoisting binds the positions,
 * weights, flags and tap offsets (12 terms for bilinear) before the channel loop,
 * whose body is four loads and four multiply-adds per element. Measured (deform_attn,
 * 8 x 300 queries, 8 heads of 32 channels, 2 levels, 4 points, 2 threads, a loaded
 * machine, fastest of 10 calls): the sampling kernel 122-159 ms -> 21-27 ms.
 *
 * Cost: one walk of each loop function, O(nest size x (stored buffers + inner
 * variables)) per innermost loop; the interchange, O(nest size x loops) per nest.
 */
#include "schedule_int.h"

#include "relax/pass.h"

enum { HOIST_MAX = 16 };

typedef RX_VEC(const rx_svar *) hvar_vec;
typedef RX_VEC(const rx_buffer *) hbuf_vec;

typedef RX_VEC(const rx_expr *) hexpr_vec;

typedef struct hoist_ctx {
    rx_module *m;
    hexpr_vec sure;        /* loads the store evaluates whenever it runs (condition 1) */
    const rx_svar *v;      /* F's loop variable */
    hvar_vec inner;        /* variables bound inside F in terms of v (and v) */
    hbuf_vec stored;       /* buffers stored inside F */
    rx_vmap binds;         /* block iterators free of v -> their binds */
    rx_expr *terms[HOIST_MAX]; /* hoisted terms as written in F */
    rx_svar *vars[HOIST_MAX];
    const rx_buffer *ibuf[HOIST_MAX]; /* a gather's index: the buffer it indexes, else NULL */
    int iaxis[HOIST_MAX];             /* ... and the axis */
    int n;
} hoist_ctx;

static bool mentions_inner(const hoist_ctx *h, const rx_expr *e)
{
    for (int i = 0; i < h->inner.n; i++)
        if (rx_expr_uses_var(e, h->inner.items[i])) return true;
    return false;
}

/* Fills h->inner, h->stored and h->binds from F's body. */
static void collect(hoist_ctx *h, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) {
                const rx_iter *it = &s->u.block.iters[k];
                if (mentions_inner(h, it->bind))
                    RX_VEC_PUSH(h->inner, it->var);
                else
                    rx_vmap_set(&h->binds, it->var, it->bind);
            }
            collect(h, &s->u.block.init);
            collect(h, &s->u.block.body);
            break;
        case RX_S_STORE: RX_VEC_PUSH(h->stored, s->u.store.buf); break;
        case RX_S_LET:
            RX_VEC_PUSH(h->inner, s->u.let.var);
            collect(h, &s->u.let.body);
            break;
        case RX_S_IF:
            collect(h, &s->u.if_.then_s);
            collect(h, &s->u.if_.else_s);
            break;
        case RX_S_ALLOC: RX_VEC_PUSH(h->stored, s->u.alloc.buf); break;
        default: break;
        }
    }
}

/* Condition 2 of the file essay. */
static bool invariant(const hoist_ctx *h, const rx_expr *e)
{
    if (mentions_inner(h, e)) return false;
    for (int i = 0; i < h->stored.n; i++)
        if (rx_expr_loads_buf(e, h->stored.items[i])) return false;
    return true;
}

/* Condition 3: a math call, a gather or an integer division by a non-literal somewhere
 * in e. */
static bool costly(const rx_expr *e)
{
    if (e->kind == RX_E_CALL) return true;
    if ((e->kind == RX_E_DIV || e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD) &&
        rx_dtype_is_int((rx_dtype)e->dtype) && !rx_expr_is_const(e->u.op.b, NULL))
        return true;
    if (e->kind == RX_E_LOAD)
        for (int i = 0; i < e->u.load.nidx; i++)
            if (rx_expr_loads_buf(e->u.load.idx[i], NULL)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (costly(rx_expr_child(e, i))) return true;
    return false;
}

static bool is_lazy_child(const rx_expr *e, int i)
{
    return (e->kind == RX_E_SELECT && i > 0) || ((e->kind == RX_E_AND || e->kind == RX_E_OR) && i == 1);
}

/* Adds the loads e evaluates whenever it is evaluated to h->sure. */
static void sure_loads(hoist_ctx *h, const rx_expr *e)
{
    if (!e) return;
    if (e->kind == RX_E_LOAD) RX_VEC_PUSH(h->sure, e);
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!is_lazy_child(e, i)) sure_loads(h, rx_expr_child(e, i));
}

/* Whether e may be evaluated where it is not (under an arm): every load in it is one
 * the store evaluates anyway (same buffer, same indices), and it divides no integer
 * (x // 0 is undefined in C). */
static bool speculable(const hoist_ctx *h, const rx_expr *e)
{
    if (e->kind == RX_E_LOAD) {
        bool found = false;
        for (int i = 0; i < h->sure.n && !found; i++) found = rx_expr_same(h->sure.items[i], e);
        if (!found) return false;
    }
    if ((e->kind == RX_E_DIV || e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD) &&
        rx_dtype_is_int((rx_dtype)e->dtype)) {
        int64_t c;
        if (!rx_expr_is_const(e->u.op.b, &c) || c == 0) return false;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!speculable(h, rx_expr_child(e, i))) return false;
    return true;
}

static rx_svar *add_term(hoist_ctx *h, rx_expr *e, const rx_buffer *ibuf, int iaxis)
{
    rx_arena *a = h->m->arena;
    rx_svar *t = rx_svar_new(a, rx_arena_printf(a, "inv%d", h->n), (rx_dtype)e->dtype, RX_SV_LET,
                             rx_module_new_id(h->m));
    t->checked_index = ibuf != NULL;
    h->terms[h->n] = e;
    h->ibuf[h->n] = ibuf;
    h->iaxis[h->n] = iaxis;
    h->vars[h->n++] = t;
    return t;
}

/* Index k of gather e (not lazy) when it reads data and is invariant (rule 3b of the
 * file essay): its let variable, else NULL. */
static rx_svar *gather_index(hoist_ctx *h, const rx_expr *e, int k)
{
    rx_expr *x = e->u.load.idx[k];
    if (x->kind == RX_E_VAR || !rx_expr_loads_buf(x, NULL) || !invariant(h, x)) return NULL;
    for (int i = 0; i < h->n; i++)
        if (h->ibuf[i] == e->u.load.buf && h->iaxis[i] == k && rx_expr_same(h->terms[i], x))
            return h->vars[i];
    return h->n < HOIST_MAX ? add_term(h, x, e->u.load.buf, k) : NULL;
}

/* e with its hoistable terms replaced by let variables; lazy: e is under a select arm
 * or a short-circuit operand (a term there moves only when it is speculable). */
static rx_expr *rewrite(hoist_ctx *h, rx_expr *e, bool lazy)
{
    if (!e || e->kind == RX_E_INT || e->kind == RX_E_FLOAT || e->kind == RX_E_VAR) return e;
    if (invariant(h, e) && costly(e)) {
        for (int i = 0; i < h->n; i++)
            if (!h->ibuf[i] && rx_expr_same(h->terms[i], e)) return rx_e_var(h->m->arena, h->vars[i]);
        if ((!lazy || speculable(h, e)) && h->n < HOIST_MAX)
            return rx_e_var(h->m->arena, add_term(h, e, NULL, 0));
    }
    if (e->kind == RX_E_LOAD && !lazy) {
        rx_expr **idx = NULL;
        for (int k = 0; k < e->u.load.nidx; k++) {
            rx_svar *t = gather_index(h, e, k);
            if (!t) continue;
            if (!idx) {
                idx = RX_NEWN(h->m->arena, rx_expr *, e->u.load.nidx);
                for (int j = 0; j < e->u.load.nidx; j++) idx[j] = e->u.load.idx[j];
            }
            idx[k] = rx_e_var(h->m->arena, t);
        }
        if (idx) {
            for (int k = 0; k < e->u.load.nidx; k++) idx[k] = rewrite(h, idx[k], lazy);
            return rx_e_load(h->m->arena, e->u.load.buf, idx, e->u.load.nidx);
        }
    }
    int nk = rx_expr_nchildren(e);
    rx_expr *kids[8], **k = nk <= 8 ? kids : RX_NEWN(h->m->arena, rx_expr *, nk);
    bool changed = false;
    for (int i = 0; i < nk; i++) {
        rx_expr *c = rx_expr_child(e, i);
        k[i] = rewrite(h, c, lazy || is_lazy_child(e, i));
        changed |= k[i] != c;
    }
    return changed ? rx_expr_with_children(h->m->arena, e, k) : e;
}

/* The stores of ss reached in every iteration (condition 1), rewritten in place. */
static void rewrite_stores(hoist_ctx *h, rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_STORE) {
            h->sure.n = 0;
            sure_loads(h, s->u.store.value);
            s->u.store.value = rewrite(h, s->u.store.value, false);
        }
        else if (s->kind == RX_S_BLOCK)
            rewrite_stores(h, &s->u.block.body);
        else if (s->kind == RX_S_LET)
            rewrite_stores(h, &s->u.let.body);
    }
}

/* Innermost FOR f with its invariant terms hoisted: the statement to stand in its place
 * (f itself when nothing moved). */
static rx_stmt *hoist_loop(rx_module *m, rx_stmt *f, int *count)
{
    hoist_ctx h = {.m = m, .v = f->u.for_.var};
    RX_VEC_PUSH(h.inner, h.v);
    collect(&h, &f->u.for_.body);
    rewrite_stores(&h, &f->u.for_.body);
    rx_stmt *r = f;
    rx_arena *a = m->arena;
    for (int i = h.n - 1; i >= 0; i--)
        r = rx_s_let(a, h.vars[i], rx_expr_subst(a, h.terms[i], &h.binds), rx_stmts_one(a, r));
    int64_t ext;
    if (h.n && !(rx_expr_is_const(f->u.for_.extent, &ext) && ext >= 1))
        r = rx_s_if(a, rx_e_binary(a, RX_E_GT, f->u.for_.extent, rx_e_int(a, 0)),
                    rx_stmts_one(a, r), (rx_stmts){0});
    *count += h.n;
    RX_VEC_FREE(h.inner);
    RX_VEC_FREE(h.stored);
    RX_VEC_FREE(h.sure);
    rx_vmap_free(&h.binds);
    return r;
}

static void hoist_list(rx_module *m, rx_stmts *ss, int *count)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (rx_stmts_hold_for(&s->u.for_.body))
                hoist_list(m, &s->u.for_.body, count);
            else
                ss->items[i] = hoist_loop(m, s, count);
            break;
        case RX_S_BLOCK:
            hoist_list(m, &s->u.block.init, count);
            hoist_list(m, &s->u.block.body, count);
            break;
        case RX_S_IF:
            hoist_list(m, &s->u.if_.then_s, count);
            hoist_list(m, &s->u.if_.else_s, count);
            break;
        case RX_S_LET: hoist_list(m, &s->u.let.body, count); break;
        default: break;
        }
    }
}

/* ---------------------------------------------------------------- interchange */

enum { SWAP_MAX_LOOPS = 8, SWAP_MIN_EXTENT = 8 };

typedef struct swap_nest {
    rx_stmt *loops[SWAP_MAX_LOOPS]; /* outermost first */
    int n;
    const rx_stmt *blk;
    const rx_stmt *st;
} swap_nest;

/* True (and *w filled) when s is a perfect nest of serial loops from 0 (extents free of
 * the nest) around one spatial block without init holding one store whose value loads
 * nothing the nest stores. */
static bool swap_match(rx_stmt *s, swap_nest *w)
{
    w->n = 0;
    while (s->kind == RX_S_FOR) {
        if (w->n == SWAP_MAX_LOOPS || s->u.for_.loop_kind != RX_LOOP_SERIAL || s->u.for_.thread ||
            !rx_expr_is_int(s->u.for_.min, 0) || s->u.for_.body.n != 1)
            return false;
        for (int k = 0; k < w->n; k++)
            if (rx_expr_uses_var(s->u.for_.extent, w->loops[k]->u.for_.var)) return false;
        w->loops[w->n++] = s;
        s = s->u.for_.body.items[0];
    }
    if (w->n < 2 || s->kind != RX_S_BLOCK || s->u.block.init.n || s->u.block.body.n != 1 ||
        s->u.block.body.items[0]->kind != RX_S_STORE)
        return false;
    for (int i = 0; i < s->u.block.niters; i++)
        if (s->u.block.iters[i].kind != RX_ITER_SPATIAL) return false;
    w->blk = s;
    w->st = s->u.block.body.items[0];
    return !rx_expr_loads_buf(w->st->u.store.value, w->st->u.store.buf);
}

/* The block iterator bound to exactly loop variable v, or NULL when v reaches the
 * block otherwise (or not at all). */
static const rx_svar *alias_of(const swap_nest *w, const rx_svar *v)
{
    const rx_svar *a = NULL;
    for (int i = 0; i < w->blk->u.block.niters; i++) {
        const rx_iter *it = &w->blk->u.block.iters[i];
        if (it->bind->kind == RX_E_VAR && it->bind->u.var == v) a = it->var;
        else if (rx_expr_uses_var(it->bind, v)) return NULL;
    }
    return a;
}

typedef struct swap_ck {
    const rx_svar *v, *in; /* the candidate's iterator, the innermost loop's */
    int calls;             /* math calls */
    bool inner_math;       /* some call uses the innermost iterator */
    bool ok;
} swap_ck;

static bool has_call(const rx_expr *e)
{
    if (e->kind == RX_E_CALL) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (has_call(rx_expr_child(e, i))) return true;
    return false;
}

/* Whether load e is a gather: an index holds a call or a load (a sampled position). */
static bool gather(const rx_expr *e)
{
    for (int k = 0; k < e->u.load.nidx; k++)
        if (rx_expr_loads_buf(e->u.load.idx[k], NULL) || has_call(e->u.load.idx[k])) return true;
    return false;
}

/* Walks e: every call free of c->v, every load using c->v but a gather reads along
 * its last index only, by a unit step. */
static void swap_walk(swap_ck *c, rx_arith *ar, rx_arena *a, const rx_expr *e)
{
    if (!e || !c->ok) return;
    if (e->kind == RX_E_CALL) {
        c->calls++;
        if (rx_expr_uses_var(e, c->v)) c->ok = false;
        if (rx_expr_uses_var(e, c->in)) c->inner_math = true;
    }
    if (e->kind == RX_E_LOAD && rx_expr_uses_var(e, c->v) && !gather(e)) {
        int n = e->u.load.nidx;
        for (int k = 0; k + 1 < n; k++)
            if (rx_expr_uses_var(e->u.load.idx[k], c->v)) c->ok = false;
        if (c->ok && (n < 1 || !rx_load_unit_step(ar, a, e, c->v))) c->ok = false;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++) swap_walk(c, ar, a, rx_expr_child(e, i));
}

/* Nest s with one of its outer loops moved innermost (file essay, "Interchange"), or
 * NULL when s is not such a nest. */
static rx_stmt *swap_nest_fn(rx_module *m, rx_stmt *s)
{
    swap_nest w;
    if (!swap_match(s, &w)) return NULL;
    const rx_svar *in = alias_of(&w, w.loops[w.n - 1]->u.for_.var);
    if (!in) return NULL;
    rx_arith *ar = rx_arith_new(m->arena);
    int best = -1;
    int64_t best_ext = 0;
    for (int k = 0; k + 1 < w.n; k++) {
        int64_t ext;
        const rx_svar *v = alias_of(&w, w.loops[k]->u.for_.var);
        if (!v || !rx_expr_is_const(w.loops[k]->u.for_.extent, &ext) || ext < SWAP_MIN_EXTENT ||
            ext <= best_ext)
            continue;
        swap_ck c = {.v = v, .in = in, .ok = true};
        swap_walk(&c, ar, m->arena, w.st->u.store.value);
        if (c.ok && c.calls && c.inner_math) {
            best = k;
            best_ext = ext;
        }
    }
    rx_arith_free(ar);
    if (best < 0) return NULL;
    /* the loop statements keep their bodies' shape: rebuild the chain in the new order */
    rx_stmt *order[SWAP_MAX_LOOPS];
    int n = 0;
    for (int k = 0; k < w.n; k++)
        if (k != best) order[n++] = w.loops[k];
    order[n++] = w.loops[best];
    rx_stmt *body = (rx_stmt *)w.blk;
    for (int k = n - 1; k >= 0; k--) {
        const rx_stmt *l = order[k];
        body = rx_s_for(m->arena, l->u.for_.var, l->u.for_.min, l->u.for_.extent, RX_LOOP_SERIAL,
                        rx_stmts_one(m->arena, body));
    }
    return body;
}

bool rx_schedule_interchange(rx_module *m, int *nswapped)
{
    int n = rx_schedule_nests(m, swap_nest_fn);
    if (nswapped) *nswapped = n;
    return true;
}

bool rx_schedule_hoist(rx_module *m, int *nhoisted)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) hoist_list(m, &m->funcs[i]->tbody, &n);
    if (nhoisted) *nhoisted = n;
    return true;
}
