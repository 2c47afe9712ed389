/*
 * schedule.c — CPU scheduling of loop functions: parallel outer loops, vectorized
 * inner loops (pipeline step 7, "schedule").
 *
 * The pass only changes loop kinds; codegen (c_kernel.c) turns a parallel loop into
 * `#pragma omp parallel for schedule(static)` and a vectorized one into `#pragma omp
 * simd` when kernels are built with OpenMP. Both pragmas are promises that iterations
 * are independent, so the rule is conservative: correctness first, a missed loop is
 * only slower.
 *
 * Candidates: the outermost FOR of each top-level loop nest of a loop function (FORs
 * found in the function body, looking through top-level BLOCK, LET and IF bodies but
 * never through another FOR) — or, when that loop runs at most once (a literal extent
 * below 2, as the batch loop of a (1, s, d) tensor) and its body is a single FOR that
 * is not innermost, that FOR, and so on down (without this, every kernel over a batch
 * of one ran on one core) — or, when that loop's extent is symbolic and its body is
 * one FOR of a literal extent >= HEADS_MIN (8) whose body is one FOR holding another
 * (attention's (b, heads, s, s) scores, softmax and scale: b is often 1 at run time),
 * that heads FOR when it passes the rules below (else the outer loop as before). The
 * cost is one parallel region per batch element, each over heads x s x s elements;
 * nests with less inside (no two loop levels under the heads) keep the outer loop.
 * Measured: a prefill's (1, 16, 512, 512) scale multiply ran on one of two threads.
 * Such a loop L with variable v becomes PARALLEL when
 *   1. its kind is serial (a kind written by the user is kept) and it is not bound to
 *      a thread axis, and no loop of the nest already has a non-serial kind other
 *      than vectorized/unrolled (no nested parallel regions);
 *   2. its extent is not an integer literal < 2 (nothing to share);
 *   3. the aliases of v are v and every block iterator bound to exactly v; every
 *      block iterator whose bind mentions v is such an alias and is spatial (a reduce
 *      iterator over v, or an iterator bound to an expression of v, rejects L);
 *   4. for every buffer B stored in the nest (buffers allocated inside the nest are
 *      private to an iteration and exempt) there is one index position p such that
 *      every STORE to B and every LOAD of B in the nest has an alias of v, alone, at
 *      position p. Then distinct iterations write disjoint elements of B and read only
 *      elements their own iteration writes, so no iteration sees another's writes;
 *   5. the nest allocates no buffer of global scope, and every allocation in it is of
 *      local or shared scope (codegen declares those inside the loop body: one copy
 *      per iteration, private to its thread).
 * Reads of buffers that the nest never stores are unrestricted.
 *
 * The innermost FORs of a nest (those whose body holds no FOR) become VECTORIZED by
 * the same rules 1, 3 and 4 applied to the loop alone, with p fixed to the LAST index
 * of every stored buffer (contiguous, stride-1 writes), and no allocation in the body.
 * Vectorization is a hint: codegen emits it only where OpenMP simd applies.
 *
 * Flat nests: a nest that is one loop, outermost and innermost at once (an elementwise
 * op over a 1-d tensor, or over (1, n): loops that run at most once are looked
 * through), would be parallel but never vectorized (gcc's -O2 cost model leaves a loop
 * whose trip count per thread is unknown scalar: a 16M-element 1-d gelu ran 4x slower
 * than the same op over (16384, 1024)), or, under a unit loop, vectorized on one
 * thread. When it passes both rules it is split (split_flat): `for o (parallel) { for
 * i (vectorized, FLAT_RUN or the tail) { let v = o * FLAT_RUN + i { body } } }`; the let
 * keeps the body as it was (no substitution). A literal extent below FLAT_PAR_MIN,
 * which codegen would run serially anyway, is vectorized instead of split.
 *
 * Matrix-vector nests are rewritten before, by the pipeline's step schedule_matvec
 * (rx_pass_schedule_matvec: schedule_matvec.c), which `--disable-pass schedule_matvec`
 * turns off. The pass (rx_pass_schedule_cpu) first reads loads through a reshape's
 * (x // w, x % w) index pairs flat (schedule_flat.c) and turns nests whose math does not
 * change along an outer loop so that loop is innermost (schedule_hoist.c), unrolls
 * reductions of a few literal steps into elementwise nests and merges a reduction's
 * trailing reduce loops that walk the trailing axes of the buffers they read
 * (schedule_reduce.c: a global pooling's h and w), then fuses runs of row nests per row
 * (schedule_rows.c: rms_norm, layer_norm, softmax; one parallel loop over the rows,
 * reductions over vector lanes), rebuilds nests whose index math divides their flat
 * index by symbolic sizes as row loops (schedule_radix.c), tiles reduction nests
 * (schedule_tile.c), splits
 * concat nests by field (schedule_concat.c) and tiles transposing copies
 * (schedule_copy.c), each of which
 * marks the parallel loop of each tiled nest itself, and merges short innermost loops
 * with their outer neighbour where every access is one contiguous run (schedule_coalesce.c:
 * an NCHW map's width of 56 with its height); the parallel rule here then finds
 * nothing more in those nests (they hold a parallel loop), while their innermost loops
 * still left serial (a partial tile's) may be vectorized by the rule above.
 * Last, math that does not change along an innermost loop is bound before it
 * (schedule_hoist.c).
 *
 * Cost: O(nest size x stored buffers) per candidate loop; no new nodes are built.
 */
#include <string.h>

#include "schedule_int.h"

enum {
    HEADS_MIN = 8,  /* literal extent of a heads loop that is parallel in a batch's stead */
    FLAT_RUN = 1024,    /* iterations of a flat nest's vectorized inner loop */
    FLAT_PAR_MIN = 32768 /* a literal flat nest shorter than this is vectorized, not split
                            (codegen runs smaller parallel loops serially: RX_PAR_MIN_WORK) */
};

typedef RX_VEC(const rx_svar *) svar_vec;
typedef RX_VEC(const rx_buffer *) buf_vec;

/* What the walk of one candidate loop learns. */
typedef struct sched_ck {
    const rx_svar *v;  /* the candidate's loop variable */
    svar_vec alias;    /* v and block iterators bound to exactly v */
    buf_vec local;     /* buffers allocated inside the nest */
    buf_vec stored;    /* buffers stored in the nest (not local) */
    int *pos;          /* per stored buffer: the alias position, -1 unknown */
    int npos;
    bool last_only;    /* vectorize rule: the position must be the last index */
    bool ok;           /* no rule broken so far */
} sched_ck;

static bool has_buf(const buf_vec *bv, const rx_buffer *b)
{
    for (int i = 0; i < bv->n; i++)
        if (bv->items[i] == b) return true;
    return false;
}

static bool is_alias(const sched_ck *c, const rx_expr *e)
{
    if (!e || e->kind != RX_E_VAR) return false;
    for (int i = 0; i < c->alias.n; i++)
        if (c->alias.items[i] == e->u.var) return true;
    return false;
}

/* True when e mentions v or an alias of it. */
static bool uses_alias(const sched_ck *c, const rx_expr *e)
{
    for (int i = 0; i < c->alias.n; i++)
        if (rx_expr_uses_var(e, c->alias.items[i])) return true;
    return false;
}

/* Checks one access (store or load) of b with indices idx[n] against rule 4. */
static void access(sched_ck *c, const rx_buffer *b, rx_expr *const *idx, int n)
{
    if (has_buf(&c->local, b)) return;
    int k = 0;
    while (k < c->stored.n && c->stored.items[k] != b) k++;
    if (k == c->stored.n) return; /* loads are checked in a second walk */
    int p = c->pos[k];
    if (p < 0) { /* first access decides: the one position holding an alias */
        if (c->last_only) {
            p = n - 1;
        } else {
            for (int i = 0; i < n && p < 0; i++)
                if (is_alias(c, idx[i])) p = i;
        }
        c->pos[k] = p;
    }
    if (p < 0 || p >= n || !is_alias(c, idx[p])) c->ok = false;
}

static void expr_loads(sched_ck *c, const rx_expr *e)
{
    if (!e || !c->ok) return;
    if (e->kind == RX_E_LOAD) access(c, e->u.load.buf, e->u.load.idx, e->u.load.nidx);
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) expr_loads(c, rx_expr_child(e, i));
}

/* Walk 1: aliases, local buffers, stored buffers; rules 1, 3, 5. nested: inside a
 * FOR of the nest (the candidate itself excluded). */
static void collect(sched_ck *c, const rx_stmts *ss, bool vec)
{
    for (int i = 0; i < ss->n && c->ok; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (vec || s->u.for_.thread || s->u.for_.loop_kind == RX_LOOP_PARALLEL ||
                uses_alias(c, s->u.for_.min) || uses_alias(c, s->u.for_.extent)) {
                c->ok = false;
                return;
            }
            collect(c, &s->u.for_.body, vec);
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) {
                const rx_iter *it = &s->u.block.iters[k];
                if (!it->bind || !uses_alias(c, it->bind)) continue;
                if (it->kind != RX_ITER_SPATIAL || !is_alias(c, it->bind)) {
                    c->ok = false;
                    return;
                }
                if (it->var != it->bind->u.var) RX_VEC_PUSH(c->alias, it->var);
            }
            collect(c, &s->u.block.init, vec);
            collect(c, &s->u.block.body, vec);
            break;
        case RX_S_STORE:
            if (!has_buf(&c->local, s->u.store.buf) && !has_buf(&c->stored, s->u.store.buf))
                RX_VEC_PUSH(c->stored, s->u.store.buf);
            break;
        case RX_S_ALLOC:
            if (vec || s->u.alloc.buf->scope == RX_SCOPE_GLOBAL) {
                c->ok = false;
                return;
            }
            RX_VEC_PUSH(c->local, s->u.alloc.buf);
            break;
        case RX_S_IF:
            collect(c, &s->u.if_.then_s, vec);
            collect(c, &s->u.if_.else_s, vec);
            break;
        case RX_S_LET:
            collect(c, &s->u.let.body, vec);
            break;
        default:
            c->ok = false;
            return;
        }
    }
}

/* Walk 2: every store and load of a stored buffer (rule 4). */
static void check_access(sched_ck *c, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n && c->ok; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            expr_loads(c, s->u.for_.min);
            expr_loads(c, s->u.for_.extent);
            check_access(c, &s->u.for_.body);
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) {
                expr_loads(c, s->u.block.iters[k].bind);
                expr_loads(c, s->u.block.iters[k].dom);
            }
            check_access(c, &s->u.block.init);
            check_access(c, &s->u.block.body);
            break;
        case RX_S_STORE:
            access(c, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
            for (int k = 0; k < s->u.store.nidx; k++) expr_loads(c, s->u.store.idx[k]);
            expr_loads(c, s->u.store.value);
            break;
        case RX_S_ALLOC:
            for (int k = 0; k < s->u.alloc.buf->ndim; k++) expr_loads(c, s->u.alloc.buf->shape[k]);
            break;
        case RX_S_IF:
            expr_loads(c, s->u.if_.cond);
            check_access(c, &s->u.if_.then_s);
            check_access(c, &s->u.if_.else_s);
            break;
        case RX_S_LET:
            expr_loads(c, s->u.let.value);
            check_access(c, &s->u.let.body);
            break;
        default:
            c->ok = false;
            return;
        }
    }
}

/* True when FOR s satisfies the parallel rule (vec false) or the vectorize rule. */
static bool loop_ok(const rx_stmt *s, bool vec)
{
    int64_t ext;
    if (s->u.for_.loop_kind != RX_LOOP_SERIAL || s->u.for_.thread) return false;
    if (!vec && rx_expr_is_const(s->u.for_.extent, &ext) && ext < 2) return false;
    sched_ck c = {0};
    c.v = s->u.for_.var;
    c.last_only = vec;
    c.ok = true;
    RX_VEC_PUSH(c.alias, c.v);
    collect(&c, &s->u.for_.body, vec);
    if (c.ok) {
        c.npos = c.stored.n;
        c.pos = rx_xcalloc((size_t)(c.npos ? c.npos : 1), sizeof(int));
        for (int k = 0; k < c.npos; k++) c.pos[k] = -1;
        check_access(&c, &s->u.for_.body);
        for (int k = 0; k < c.npos && c.ok; k++)
            if (c.pos[k] < 0) c.ok = false; /* stored without an alias anywhere */
        if (!c.stored.n) c.ok = false;        /* nothing to share */
        free(c.pos);
    }
    RX_VEC_FREE(c.alias);
    RX_VEC_FREE(c.local);
    RX_VEC_FREE(c.stored);
    return c.ok;
}

/* Marks the innermost FORs below ss (vectorize rule). */
static void mark_inner(const rx_stmts *ss, int *nvec)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (rx_stmts_hold_for(&s->u.for_.body)) mark_inner(&s->u.for_.body, nvec);
            else if (loop_ok(s, true)) {
                s->u.for_.loop_kind = RX_LOOP_VECTORIZED;
                (*nvec)++;
            }
            break;
        case RX_S_BLOCK:
            mark_inner(&s->u.block.init, nvec);
            mark_inner(&s->u.block.body, nvec);
            break;
        case RX_S_IF:
            mark_inner(&s->u.if_.then_s, nvec);
            mark_inner(&s->u.if_.else_s, nvec);
            break;
        case RX_S_LET: mark_inner(&s->u.let.body, nvec); break;
        default: break;
        }
    }
}

/* True when FOR s runs at most once (a literal extent below 2: a batch of one) and its
   body is one FOR that holds another (the innermost loop stays the vectorized one):
   that FOR is the nest's candidate instead. */
static bool unit_loop(const rx_stmt *s)
{
    int64_t ext;
    if (s->u.for_.loop_kind != RX_LOOP_SERIAL || s->u.for_.thread) return false;
    if (!rx_expr_is_const(s->u.for_.extent, &ext) || ext >= 2) return false;
    if (s->u.for_.body.n != 1) return false;
    const rx_stmt *in = s->u.for_.body.items[0];
    return in->kind == RX_S_FOR && rx_stmts_hold_for(&in->u.for_.body);
}

/* The FOR of a symbolic batch's heads (file essay): s's body is one FOR of a literal
   extent >= HEADS_MIN whose body is one FOR that holds another; NULL otherwise. */
static rx_stmt *heads_loop(const rx_stmt *s)
{
    int64_t ext;
    if (rx_expr_is_const(s->u.for_.extent, &ext) || s->u.for_.body.n != 1) return NULL;
    rx_stmt *in = s->u.for_.body.items[0];
    if (in->kind != RX_S_FOR || !rx_expr_is_const(in->u.for_.extent, &ext) ||
        ext < HEADS_MIN || in->u.for_.body.n != 1)
        return NULL;
    const rx_stmt *rows = in->u.for_.body.items[0];
    return rows->kind == RX_S_FOR && rx_stmts_hold_for(&rows->u.for_.body) ? in : NULL;
}

void rx_schedule_nest_kinds(rx_stmt *s, int *npar, int *nvec)
{
    rx_stmt *c = s;
    while (unit_loop(c)) c = c->u.for_.body.items[0];
    rx_stmt *h = heads_loop(c);
    if (h && c->u.for_.loop_kind == RX_LOOP_SERIAL && !c->u.for_.thread && loop_ok(h, false))
        c = h;
    if (loop_ok(c, false)) {
        c->u.for_.loop_kind = RX_LOOP_PARALLEL;
        (*npar)++;
    }
    if (rx_stmts_hold_for(&s->u.for_.body)) mark_inner(&s->u.for_.body, nvec);
}

/* A one-loop nest (file essay: flat nests): FOR s, serial and unbound, holding no FOR,
   that passes both the parallel and the vectorize rule. With a literal extent below
   FLAT_PAR_MIN, s itself vectorized; else `for o (parallel) { for i (vectorized) { let
   v = min + o * FLAT_RUN + i { body } } }`, i's extent min(FLAT_RUN, E - o * FLAT_RUN)
   (FLAT_RUN when it divides a literal E). NULL when s is not such a nest. */
static rx_stmt *split_flat(rx_module *m, rx_stmt *s)
{
    int64_t e;
    bool lit = rx_expr_is_const(s->u.for_.extent, &e);
    if (rx_stmts_hold_for(&s->u.for_.body) || !loop_ok(s, false) || !loop_ok(s, true)) return NULL;
    if (lit && e < FLAT_PAR_MIN) { /* vectorized on one thread */
        s->u.for_.loop_kind = RX_LOOP_VECTORIZED;
        return s;
    }
    rx_arena *a = m->arena;
    const rx_svar *v = s->u.for_.var;
    rx_svar *o = rx_svar_new(a, rx_arena_printf(a, "%s_o", v->name), RX_DT_I64, RX_SV_LOOP,
                             rx_module_new_id(m));
    rx_svar *in = rx_svar_new(a, rx_arena_printf(a, "%s_i", v->name), RX_DT_I64, RX_SV_LOOP,
                              rx_module_new_id(m));
    rx_expr *run = rx_e_int(a, FLAT_RUN), *start = rx_e_binary(a, RX_E_MUL, rx_e_var(a, o), run);
    rx_expr *count, *inner;
    if (lit) {
        count = rx_e_int(a, (e + FLAT_RUN - 1) / FLAT_RUN);
        inner = e % FLAT_RUN == 0 ? run
                                  : rx_e_binary(a, RX_E_MIN, run, rx_e_binary(a, RX_E_SUB, rx_e_int(a, e), start));
    } else {
        count = rx_e_binary(a, RX_E_FLOORDIV,
                            rx_e_binary(a, RX_E_ADD, s->u.for_.extent, rx_e_int(a, FLAT_RUN - 1)), run);
        inner = rx_e_binary(a, RX_E_MIN, run, rx_e_binary(a, RX_E_SUB, s->u.for_.extent, start));
    }
    rx_expr *at = rx_e_binary(a, RX_E_ADD, s->u.for_.min,
                              rx_e_binary(a, RX_E_ADD, start, rx_e_var(a, in)));
    rx_stmt *body = rx_s_let(a, v, at, s->u.for_.body);
    rx_stmt *vl = rx_s_for(a, in, rx_e_int(a, 0), inner, RX_LOOP_VECTORIZED, rx_stmts_one(a, body));
    rx_stmt *ol = rx_s_for(a, o, rx_e_int(a, 0), count, RX_LOOP_PARALLEL, rx_stmts_one(a, vl));
    ol->loc = vl->loc = body->loc = s->loc;
    return ol;
}

/* Finds the top-level nests of ss and schedules each: a flat nest, directly or under
   loops that run at most once (a (1, n) tensor), split (split_flat), the others given
   their kinds. */
static void schedule_list(rx_module *m, const rx_stmts *ss, int *npar, int *nvec)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i], **at = &ss->items[i], *r;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            int64_t ext;
            while ((*at)->u.for_.loop_kind == RX_LOOP_SERIAL && !(*at)->u.for_.thread &&
                   rx_expr_is_const((*at)->u.for_.extent, &ext) && ext < 2 &&
                   (*at)->u.for_.body.n == 1 && (*at)->u.for_.body.items[0]->kind == RX_S_FOR)
                at = &(*at)->u.for_.body.items[0];
            if ((*at)->u.for_.loop_kind == RX_LOOP_SERIAL && !(*at)->u.for_.thread &&
                (r = split_flat(m, *at))) {
                *npar += r != *at;
                (*nvec)++;
                *at = r;
            } else {
                rx_schedule_nest_kinds(s, npar, nvec);
            }
            break;
        }
        case RX_S_BLOCK:
            schedule_list(m, &s->u.block.init, npar, nvec);
            schedule_list(m, &s->u.block.body, npar, nvec);
            break;
        case RX_S_IF:
            schedule_list(m, &s->u.if_.then_s, npar, nvec);
            schedule_list(m, &s->u.if_.else_s, npar, nvec);
            break;
        case RX_S_LET: schedule_list(m, &s->u.let.body, npar, nvec); break;
        default: break;
        }
    }
}

bool rx_schedule_cpu(rx_module *m, int *nparallel, int *nvectorized)
{
    int np = 0, nv = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *f = m->funcs[i];
        if (f->kind == RX_F_TIR) schedule_list(m, &f->tbody, &np, &nv);
    }
    if (nparallel) *nparallel = np;
    if (nvectorized) *nvectorized = nv;
    return true;
}

/* rx_schedule_nests over the statements of ss (looking through non-FOR containers). */
static int nests_list(rx_module *m, rx_stmts *ss, rx_stmt *(*fn)(rx_module *, rx_stmt *))
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i], *r;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if ((r = fn(m, s))) {
                ss->items[i] = r;
                n++;
            }
            break;
        case RX_S_BLOCK:
            n += nests_list(m, &s->u.block.init, fn);
            n += nests_list(m, &s->u.block.body, fn);
            break;
        case RX_S_IF:
            n += nests_list(m, &s->u.if_.then_s, fn);
            n += nests_list(m, &s->u.if_.else_s, fn);
            break;
        case RX_S_LET: n += nests_list(m, &s->u.let.body, fn); break;
        default: break;
        }
    }
    return n;
}

int rx_schedule_nests(rx_module *m, rx_stmt *(*fn)(rx_module *, rx_stmt *))
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) n += nests_list(m, &m->funcs[i]->tbody, fn);
    return n;
}

bool rx_pass_schedule_cpu(rx_module *m, rx_diags *d)
{
    (void)d;
    return rx_schedule_flat(m, NULL) && rx_schedule_interchange(m, NULL) &&
           rx_schedule_reduce(m, NULL) && rx_schedule_rows(m, NULL, NULL) && rx_schedule_radix(m, NULL) && rx_schedule_tile(m, NULL) &&
           rx_schedule_concat(m, NULL) && rx_schedule_copy(m, NULL) && rx_schedule_coalesce(m, NULL) &&
           rx_schedule_cpu(m, NULL, NULL) &&
           rx_schedule_hoist(m, NULL);
}

bool rx_loop_independent(const rx_stmt *s)
{
    return s && s->kind == RX_S_FOR && loop_ok(s, false);
}

bool rx_pass_schedule_matvec(rx_module *m, rx_diags *d)
{
    (void)d;
    return rx_schedule_matvec(m, NULL);
}
