/*
 * schedule_copy.c — tiled transposes for copy nests whose innermost axis moves, inner
 * runs split out of the others, and the data-movement step that schedules copies at
 * every opt level (pipeline steps 7m, "schedule_moves", and 7, "schedule", before the
 * loop kinds of schedule.c).
 *
 * What is tiled: a top-level loop nest of spatial loops only, the shape legalize gives
 * permute_dims and the permutes FuseTIR fuses with reshapes:
 *
 *   for v_1 .. for v_n (n >= 2; serial, unbound, from 0, extents free of the nest):
 *     block (n spatial iterators bound to exactly v_1 .. v_n, no init):
 *       C[v_1, .., v_n] = VALUE      (VALUE loads no C)
 *
 * where VALUE holds a load X of another buffer whose last index steps by exactly 1
 * with some v_p, p < n, and not with v_n, while some index of X does use v_n (proved
 * with the arithmetic, as schedule_tile.c judges contiguity; a load free of v_n, such
 * as softmax's row maximum, is a broadcast, not a transpose). Written as it is, the
 * innermost loop writes C contiguously but reads X with the stride of one of X's
 * rows: for a 4096 x 4104 f32 transpose, every read is in a different 4 KiB page, so
 * every element costs a TLB and a cache miss (0.05 GB/s measured). The nest becomes
 *
 *   for v_1 .. v_{p-1}
 *     for po in range(ceil(E_p / T))
 *       for v_{p+1} .. v_{n-1}
 *         for no in range(ceil(E_n / T))
 *           for pi in range(min(T, E_p - po * T))
 *             for ni in range(min(T, E_n - no * T)) (vectorized):
 *               block (v_p := po * T + pi, v_n := no * T + ni)
 *
 * a T x T tile (T = 64 bytes of C's element, 16 f32: one cache line) whose reads
 * (along X's rows, by pi) and writes (along C's rows, by ni) both stay in T lines.
 * A literal extent that T divides keeps the literal T as the inner extents.
 *
 * Pages. With no directly inside po, one po strip reads a 64-byte piece of every one
 * of X's rows along n: for the 4096 x 4104 transpose, 4096 rows 16 KiB apart, each in
 * its own page, more than the TLB holds, so the next strip (the same pages, the next
 * 64 bytes) missed again. When no's tile count is a literal >= 2 * G (G = 16), no is
 * split into nb (outside po) and a group of G tiles (inside it, min(G, count - nb * G)
 * for the last group): one group reads 16 G rows of X for every po, which stay in the
 * TLB. Measured (4096 x 4104 f32, 2 threads, same run, load ~7): 26.5 -> 20.5 ms median.
 * Written as loops, still 0.3-0.4 of memcpy: the tile's strided reads are scalar loads.
 * The C generator emits the tiles of 32-bit types as in-register 8 x 8 AVX2 transposes
 * with streaming stores into large destinations (compiler/codegen/c_transpose.c), and
 * the runtime puts large buffers on 2 MiB pages (runtime/device_cpu.c): tests/bench/
 * bench_transpose.c measured that all three are needed for 0.7 of memcpy (4 KiB pages
 * bound every variant near half of it).
 *
 * Why it is exact: the store's indices are the nest's loop variables, so every element
 * of C is written exactly once, by the same VALUE at the same indices, whatever the
 * order; VALUE reads no C. For the same reason any loop of the new nest may run its
 * iterations in parallel (distinct iterations write disjoint elements of C and read
 * only other buffers) and the innermost may be a simd loop: the outermost loop whose
 * extent is not a literal below 2 becomes RX_LOOP_PARALLEL and ni RX_LOOP_VECTORIZED
 * (schedule.c's rule then finds no other parallel loop in the nest).
 *
 * Copies whose innermost axis stays innermost (a permute of outer axes, a reshape of a
 * contiguous tensor) are left to schedule.c: their inner loops already read and write
 * consecutive elements and are vectorized there; concat nests, split by field first
 * (schedule_concat.c, which starts from rx_copy_nest_match too), no longer match.
 *
 * Inner runs. A copy nest that is not a transpose but whose innermost loop (a literal
 * extent E) reads some buffer by other than a unit step, through an index that divides
 * the innermost iterator x by a literal c (c divides E), is a sequence of contiguous
 * runs of c elements: the attention output's permute + reshape, (b, h, s, d) -> (b, s,
 * h * d), reads x[b, x // d, s, x % d], and a reshape materialized unfused reads
 * x[b, s, x // d, x % d]. Written so, GCC copies one scalar at a time (neither the
 * division nor the run is visible to it; measured 0.17x of memcpy). The innermost loop
 * becomes two, over xo in [0, E / c) and xi in [0, c) (vectorized), the block's last
 * iterator replaced by the two, the store at xo * c + xi, and the value's indices
 * simplified with those ranges (x // c = xo, x % c = xi), so every load steps by one
 * along xi; it is kept only when that is proved for every load that moves with x (the
 * longest such run first, at least 16 bytes). Exact for the reason above: each element
 * is stored once, at the same indices, with the same value.
 *
 * Data movement at every opt level (rx_schedule_moves, step 7m, O0 included): a copy
 * nest whose stored value is a load or a select chain of loads (no arithmetic on the
 * values) is rebuilt from the radices its index math divides the flat index by
 * (schedule_radix.c, where a divisor is symbolic), split by field (a concat), tiled (a
 * transpose) or run-split as above, then given schedule.c's loop kinds
 * (rx_schedule_nest_kinds). None of that changes a bit
 * of any result, so O0 stays the reference build while its KV-cache append, permutes
 * and reshapes run on every thread, vectorized (O0's append: 0.29x of memcpy before).
 * So does an elementwise nest of the same shape computing exp, sigmoid, erf, tanh or
 * log in f32 (rx_expr_calls_vmath: an activation, GELU or SiLU): each element is
 * computed once by the same scalar code, so the bits are the serial nest's, and those
 * functions, tens of vector instructions per element, ran at 0.05-0.13x of memcpy
 * serial and scalar at O0 (docs/passes.md). That only where "schedule" does not run
 * (O0, or --disable-pass schedule: the driver's math flag): from O1 its row schedules
 * take such a nest together with the reductions around it (softmax's exp between its
 * max and its sum, one pass over each row); scheduled here first, the exp nest was a
 * pass of its own and a decoder block's masked softmax at prefill 512 took 4.8 ms
 * instead of 1.8 (O2, 2 threads). Other nests that compute are left to "schedule",
 * which finds these already marked.
 *
 * Cost: linear in the size of the nest; the block is shared, not copied.
 */
#include <string.h>

#include "schedule_int.h"

enum { TILE_BYTES = 64, GROUP_TILES = 16 };

/* One matched nest. */
typedef struct cnest {
    rx_copy_nest k;                 /* the copy nest */
    int p;                          /* the loop X's last index steps with */
    int64_t t;                      /* tile edge */
} cnest;

bool rx_expr_loads(const rx_expr *e, const rx_buffer *b)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && e->u.load.buf == b) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (rx_expr_loads(rx_expr_child(e, i), b)) return true;
    return false;
}

bool rx_load_unit_step(rx_arith *ar, rx_arena *a, const rx_expr *x, const rx_svar *v)
{
    rx_expr *last = x->u.load.idx[x->u.load.nidx - 1];
    if (!rx_expr_uses_var(last, v) || !rx_dtype_is_int((rx_dtype)last->dtype)) return false;
    rx_vmap m = {0};
    rx_vmap_set(&m, v, rx_e_binary(a, RX_E_ADD, rx_e_var(a, v), rx_e_int(a, 1)));
    rx_expr *next = rx_expr_subst(a, last, &m);
    rx_vmap_free(&m);
    return rx_arith_prove_equal(ar, rx_e_binary(a, RX_E_SUB, next, last), rx_e_int(a, 1));
}

/* The loop index p (< n - 1) that the first load in e with a unit step reads along,
 * when that load does not also read along the innermost iterator; -1 when none. */
static int read_axis(rx_arith *ar, rx_arena *a, const rx_expr *e, const cnest *c,
                     const rx_buffer *out)
{
    if (!e) return -1;
    if (e->kind == RX_E_LOAD && e->u.load.buf != out && e->u.load.nidx >= 1) {
        const rx_iter *its = c->k.blk->u.block.iters;
        if (rx_load_unit_step(ar, a, e, its[c->k.n - 1].var)) return -1;
        /* A load that does not move with the innermost iterator (softmax's row
         * maximum, a broadcast bias) reads one element per inner sweep: no transpose. */
        bool inner = false;
        for (int d = 0; d < e->u.load.nidx && !inner; d++)
            inner = rx_expr_uses_var(e->u.load.idx[d], its[c->k.n - 1].var);
        if (!inner) goto children;
        for (int k = c->k.n - 2; k >= 0; k--)
            if (rx_load_unit_step(ar, a, e, its[k].var)) return k;
    }
children:
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        int r = read_axis(ar, a, rx_expr_child(e, i), c, out);
        if (r >= 0) return r;
    }
    return -1;
}

bool rx_copy_nest_match(rx_stmt *s, rx_copy_nest *c)
{
    memset(c, 0, sizeof *c);
    rx_stmt *cur = s;
    while (cur->kind == RX_S_FOR) {
        if (c->n == RX_COPY_MAX_LOOPS || cur->u.for_.body.n != 1) return false;
        if (cur->u.for_.loop_kind != RX_LOOP_SERIAL || cur->u.for_.thread) return false;
        if (!rx_expr_is_int(cur->u.for_.min, 0)) return false;
        c->loops[c->n++] = cur;
        cur = cur->u.for_.body.items[0];
    }
    if (cur->kind != RX_S_BLOCK || c->n < 2 || cur->u.block.niters != c->n ||
        cur->u.block.init.n || cur->u.block.body.n != 1)
        return false;
    c->blk = cur;
    const rx_stmt *st = cur->u.block.body.items[0];
    if (st->kind != RX_S_STORE || st->u.store.nidx != c->n) return false;
    c->st = st;
    int64_t vol = 1, e;
    bool lit = true;
    for (int k = 0; k < c->n; k++) {
        const rx_iter *it = &cur->u.block.iters[k];
        const rx_stmt *l = c->loops[k];
        if (it->kind != RX_ITER_SPATIAL || !it->bind || it->bind->kind != RX_E_VAR ||
            it->bind->u.var != l->u.for_.var)
            return false;
        const rx_expr *x = st->u.store.idx[k];
        if (x->kind != RX_E_VAR || x->u.var != it->var) return false;
        for (int j = 0; j < c->n; j++)
            if (rx_expr_uses_var(l->u.for_.extent, c->loops[j]->u.for_.var) ||
                rx_expr_uses_var(l->u.for_.extent, cur->u.block.iters[j].var))
                return false;
        if (!rx_expr_is_const(l->u.for_.extent, &e)) lit = false;
        else if (vol < RX_COPY_MIN_VOLUME) vol *= e < 0 ? 0 : e;
    }
    return !rx_expr_loads(st->u.store.value, st->u.store.buf) &&
           !(lit && vol < RX_COPY_MIN_VOLUME);
}

/* Matches FOR s against the nest shape of the file essay. */
static bool match(rx_module *m, rx_stmt *s, cnest *c)
{
    memset(c, 0, sizeof *c);
    if (!rx_copy_nest_match(s, &c->k)) return false;
    const rx_buffer *out = c->k.st->u.store.buf;
    int bits = rx_dtype_bits((rx_dtype)out->dtype);
    if (bits < 8) return false;
    rx_arith *ar = rx_arith_new(m->arena);
    c->p = read_axis(ar, m->arena, c->k.st->u.store.value, c, out);
    rx_arith_free(ar);
    c->t = TILE_BYTES / (bits / 8);
    if (c->t < 4) c->t = 4;
    return c->p >= 0;
}

/* FOR v in [0, extent) of the given kind around one statement. */
static rx_stmt *loop(rx_arena *a, const rx_svar *v, rx_expr *extent, rx_loopkind kind,
                     rx_stmt *body)
{
    return rx_s_for(a, v, rx_e_int(a, 0), extent, kind, rx_stmts_one(a, body));
}

/* The tile count and the inner extent of loop l tiled by t: (ceil(E / t), min(t, E -
 * o * t)); the count a literal when E is, the extent the literal t when t divides it. */
static void split(rx_arena *a, const rx_stmt *l, int64_t t, const rx_svar *o, rx_expr **count,
                  rx_expr **inner)
{
    rx_expr *x = l->u.for_.extent;
    int64_t v;
    bool lit = rx_expr_is_const(x, &v) && v >= 0;
    if (lit && v % t == 0) {
        *count = rx_e_int(a, v / t);
        *inner = rx_e_int(a, t);
        return;
    }
    *count = lit ? rx_e_int(a, (v + t - 1) / t)
                 : rx_e_binary(a, RX_E_FLOORDIV, rx_e_binary(a, RX_E_ADD, x, rx_e_int(a, t - 1)),
                               rx_e_int(a, t));
    *inner = rx_e_binary(a, RX_E_MIN, rx_e_int(a, t),
                         rx_e_binary(a, RX_E_SUB, x, rx_e_binary(a, RX_E_MUL, rx_e_var(a, o),
                                                                 rx_e_int(a, t))));
}

static rx_svar *fresh(rx_module *m, const rx_svar *base, const char *suffix)
{
    const char *name = rx_arena_printf(m->arena, "%s_%s", base->name, suffix);
    return rx_svar_new(m->arena, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
}

static rx_stmt *build(rx_module *m, const cnest *c)
{
    rx_arena *a = m->arena;
    const rx_stmt *lp = c->k.loops[c->p], *ln = c->k.loops[c->k.n - 1];
    rx_svar *po = fresh(m, lp->u.for_.var, "o"), *pi = fresh(m, lp->u.for_.var, "i");
    rx_svar *no = fresh(m, ln->u.for_.var, "o"), *ni = fresh(m, ln->u.for_.var, "i");
    rx_expr *pcount, *pin, *ncount, *nin;
    split(a, lp, c->t, po, &pcount, &pin);
    split(a, ln, c->t, no, &ncount, &nin);
    /* the block, its two tiled iterators rebound */
    rx_stmt *blk = rx_arena_dup(a, c->k.blk, sizeof(rx_stmt)); /* a copy, then edited */
    blk->u.block.iters = RX_NEWN(a, rx_iter, c->k.n);
    memcpy(blk->u.block.iters, c->k.blk->u.block.iters, sizeof(rx_iter) * (size_t)c->k.n);
    blk->u.block.iters[c->p].bind = rx_e_binary(
        a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, rx_e_var(a, po), rx_e_int(a, c->t)), rx_e_var(a, pi));
    blk->u.block.iters[c->k.n - 1].bind = rx_e_binary(
        a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, rx_e_var(a, no), rx_e_int(a, c->t)), rx_e_var(a, ni));
    /* tiles along n in groups of GROUP_TILES, nb outside po (file essay: pages) */
    int64_t nc;
    rx_svar *nb = NULL;
    rx_expr *gcount = ncount, *nbcount = NULL;
    if (rx_expr_is_const(ncount, &nc) && nc >= 2 * GROUP_TILES) {
        nb = fresh(m, ln->u.for_.var, "b");
        rx_svar *ng = fresh(m, ln->u.for_.var, "g");
        rx_expr *noe = rx_e_binary(a, RX_E_ADD,
                                   rx_e_binary(a, RX_E_MUL, rx_e_var(a, nb), rx_e_int(a, GROUP_TILES)),
                                   rx_e_var(a, ng));
        rx_vmap vm = {0};
        rx_vmap_set(&vm, no, noe);
        nin = rx_expr_subst(a, nin, &vm);
        blk->u.block.iters[c->k.n - 1].bind = rx_expr_subst(a, blk->u.block.iters[c->k.n - 1].bind, &vm);
        rx_vmap_free(&vm);
        nbcount = rx_e_int(a, (nc + GROUP_TILES - 1) / GROUP_TILES);
        gcount = nc % GROUP_TILES == 0
                     ? rx_e_int(a, GROUP_TILES)
                     : rx_e_binary(a, RX_E_MIN, rx_e_int(a, GROUP_TILES),
                                   rx_e_binary(a, RX_E_SUB, rx_e_int(a, nc),
                                               rx_e_binary(a, RX_E_MUL, rx_e_var(a, nb),
                                                           rx_e_int(a, GROUP_TILES))));
        no = ng;
    }
    rx_stmt *s = loop(a, ni, nin, RX_LOOP_VECTORIZED, blk);
    s = loop(a, pi, pin, RX_LOOP_SERIAL, s);
    s = loop(a, no, gcount, RX_LOOP_SERIAL, s);
    for (int k = c->k.n - 2; k > c->p; k--)
        s = loop(a, c->k.loops[k]->u.for_.var, c->k.loops[k]->u.for_.extent, RX_LOOP_SERIAL, s);
    s = loop(a, po, pcount, RX_LOOP_SERIAL, s);
    if (nb) s = loop(a, nb, nbcount, RX_LOOP_SERIAL, s);
    for (int k = c->p - 1; k >= 0; k--)
        s = loop(a, c->k.loops[k]->u.for_.var, c->k.loops[k]->u.for_.extent, RX_LOOP_SERIAL, s);
    /* the parallel loop: the outermost one not a literal below 2 (never ni) */
    int64_t e;
    for (rx_stmt *l = s; l->kind == RX_S_FOR && l->u.for_.var != ni;
         l = l->u.for_.body.items[0]) {
        if (!rx_expr_is_const(l->u.for_.extent, &e) || e >= 2) {
            l->u.for_.loop_kind = RX_LOOP_PARALLEL;
            break;
        }
    }
    return s;
}

/* ---------------------------------------------------------------- inner runs */

enum { MAX_RUNS = 8, MIN_RUN_BYTES = 16 };

/* Collects into r the literal divisors c (1 < c < e, c divides e) of the FLOORDIV and
 * FLOORMOD nodes of x whose dividend uses v. */
static void run_divisors(const rx_expr *x, const rx_svar *v, int64_t e, int64_t *r, int *n)
{
    if (!x) return;
    int64_t c;
    if ((x->kind == RX_E_FLOORDIV || x->kind == RX_E_FLOORMOD) && rx_expr_is_const(x->u.op.b, &c) &&
        c > 1 && c < e && e % c == 0 && rx_expr_uses_var(x->u.op.a, v)) {
        bool seen = false;
        for (int i = 0; i < *n; i++) seen |= r[i] == c;
        if (!seen && *n < MAX_RUNS) r[(*n)++] = c;
    }
    for (int i = 0; i < rx_expr_nchildren(x); i++) run_divisors(rx_expr_child(x, i), v, e, r, n);
}

/* True when every load in x of a buffer other than out whose indices use v has a unit
 * step in v; *any is set when some load uses v. */
static bool loads_step(rx_arith *ar, rx_arena *a, const rx_expr *x, const rx_svar *v,
                       const rx_buffer *out, bool *any)
{
    if (!x) return true;
    if (x->kind == RX_E_LOAD && x->u.load.buf != out && x->u.load.nidx >= 1) {
        bool uses = false;
        for (int d = 0; d < x->u.load.nidx; d++) uses |= rx_expr_uses_var(x->u.load.idx[d], v);
        if (uses) {
            *any = true;
            if (!rx_load_unit_step(ar, a, x, v)) return false;
        }
    }
    for (int i = 0; i < rx_expr_nchildren(x); i++)
        if (!loads_step(ar, a, rx_expr_child(x, i), v, out, any)) return false;
    return true;
}

/* The nest with its innermost loop split into runs of c (file essay, "Inner runs"), or
 * NULL when the loads are not then unit-step along the run. */
static rx_stmt *split_runs(rx_module *m, const rx_copy_nest *k, int64_t c, int64_t e)
{
    rx_arena *a = m->arena;
    int n = k->n;
    const rx_iter *it = k->blk->u.block.iters;
    const rx_svar *x = it[n - 1].var, *lv = k->loops[n - 1]->u.for_.var;
    rx_svar *xo = fresh(m, x, "o"), *xi = fresh(m, x, "i");
    rx_svar *vo = fresh(m, lv, "o"), *vi = fresh(m, lv, "i");
    /* the value and the store's last index over (xo, xi) */
    rx_expr *at = rx_e_binary(a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, rx_e_var(a, xo), rx_e_int(a, c)),
                              rx_e_var(a, xi));
    rx_vmap vm = {0};
    rx_vmap_set(&vm, x, at);
    rx_arith *ar = rx_arith_new(a);
    rx_arith_bind_range(ar, xo, 0, e / c - 1);
    rx_arith_bind_range(ar, xi, 0, c - 1);
    rx_expr *val = rx_arith_simplify(ar, rx_expr_subst(a, k->st->u.store.value, &vm));
    rx_vmap_free(&vm);
    bool any = false;
    bool ok = loads_step(ar, a, val, xi, k->st->u.store.buf, &any) && any;
    rx_arith_free(ar);
    if (!ok) return NULL;
    rx_expr **idx = RX_NEWN(a, rx_expr *, n);
    memcpy(idx, k->st->u.store.idx, sizeof(rx_expr *) * (size_t)n);
    idx[n - 1] = at;
    rx_stmt *st = rx_s_store(a, k->st->u.store.buf, idx, n, val);
    rx_iter *its = RX_NEWN(a, rx_iter, n + 1);
    memcpy(its, it, sizeof(rx_iter) * (size_t)(n - 1));
    its[n - 1] = (rx_iter){xo, RX_ITER_SPATIAL, rx_e_int(a, e / c), rx_e_var(a, vo)};
    its[n] = (rx_iter){xi, RX_ITER_SPATIAL, rx_e_int(a, c), rx_e_var(a, vi)};
    rx_stmt *blk = rx_arena_dup(a, k->blk, sizeof(rx_stmt)); /* a copy, then edited */
    blk->u.block.iters = its;
    blk->u.block.niters = n + 1;
    blk->u.block.body = rx_stmts_one(a, st);
    rx_stmt *s = loop(a, vi, rx_e_int(a, c), RX_LOOP_VECTORIZED, blk);
    s = loop(a, vo, rx_e_int(a, e / c), RX_LOOP_SERIAL, s);
    for (int j = n - 2; j >= 0; j--)
        s = loop(a, k->loops[j]->u.for_.var, k->loops[j]->u.for_.extent, RX_LOOP_SERIAL, s);
    return s;
}

/* The run-split replacement of FOR s: a copy nest whose innermost extent e is a literal
 * and some load of which steps along it by other than one, but by one within runs of a
 * divisor c of e that a FLOORDIV / FLOORMOD of its indices names; NULL otherwise. */
static rx_stmt *inner_runs(rx_module *m, rx_stmt *s)
{
    rx_copy_nest k;
    int64_t e;
    if (!rx_copy_nest_match(s, &k) || !rx_expr_is_const(k.loops[k.n - 1]->u.for_.extent, &e))
        return NULL;
    const rx_buffer *out = k.st->u.store.buf;
    const rx_svar *x = k.blk->u.block.iters[k.n - 1].var;
    rx_arith *ar = rx_arith_new(m->arena);
    bool any = false, unit = loads_step(ar, m->arena, k.st->u.store.value, x, out, &any);
    rx_arith_free(ar);
    if (unit) return NULL; /* already contiguous (or reading nothing along it) */
    int64_t cs[MAX_RUNS];
    int nc = 0, bytes = rx_dtype_bits((rx_dtype)out->dtype) / 8;
    run_divisors(k.st->u.store.value, x, e, cs, &nc);
    for (int i = 0; i < nc; i++) /* the longest runs first */
        for (int j = i + 1; j < nc; j++)
            if (cs[j] > cs[i]) {
                int64_t t = cs[i];
                cs[i] = cs[j];
                cs[j] = t;
            }
    for (int i = 0; i < nc; i++) {
        if (cs[i] * bytes < MIN_RUN_BYTES) break;
        rx_stmt *r = split_runs(m, &k, cs[i], e);
        if (r) return r;
    }
    return NULL;
}

/* The tiled (or run-split) replacement of FOR s, or NULL when it is neither a
 * transposing copy nest nor one with inner runs. */
rx_stmt *rx_schedule_copy_nest(rx_module *m, rx_stmt *s)
{
    cnest c;
    return match(m, s, &c) ? build(m, &c) : inner_runs(m, s);
}

bool rx_schedule_copy(rx_module *m, int *ntiled)
{
    int n = rx_schedule_nests(m, rx_schedule_copy_nest);
    if (ntiled) *ntiled = n;
    return true;
}

/* ---------------------------------------------------------------- data movement, O0 */

/* True when e only moves data: a load, or a select between such values (a concat). */
static bool moves_data(const rx_expr *e)
{
    if (e->kind == RX_E_LOAD) return true;
    return e->kind == RX_E_SELECT && moves_data(e->u.op.b) && moves_data(e->u.op.c);
}

/* A data-movement nest (or, with math, an elementwise one computing vector math) split,
 * tiled and given its loop kinds in place; the new nest, or NULL when s is not one (or
 * only its kinds changed). */
static rx_stmt *move_nest_kinds(rx_module *m, rx_stmt *s, bool math)
{
    rx_copy_nest k;
    if (!rx_copy_nest_match(s, &k) ||
        !(moves_data(k.st->u.store.value) || (math && rx_expr_calls_vmath(k.st->u.store.value))))
        return NULL;
    rx_stmt *r = rx_schedule_radix_nest(m, s);
    if (r) return r; /* a flat copy rebuilt from its radices, kinds given */
    r = rx_schedule_concat_nest(m, s);
    if (!r) r = rx_schedule_copy_nest(m, s);
    int np = 0, nv = 0;
    rx_schedule_nest_kinds(r ? r : s, &np, &nv);
    return r;
}

static rx_stmt *move_nest(rx_module *m, rx_stmt *s)
{
    return move_nest_kinds(m, s, false);
}

static rx_stmt *move_or_math_nest(rx_module *m, rx_stmt *s)
{
    return move_nest_kinds(m, s, true);
}

bool rx_schedule_moves(rx_module *m, bool math, int *nmoves)
{
    int n = rx_schedule_nests(m, math ? move_or_math_nest : move_nest);
    if (nmoves) *nmoves = n;
    return true;
}
