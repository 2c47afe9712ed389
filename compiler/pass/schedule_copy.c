/*
 * schedule_copy.c — tiled transposes for copy nests whose innermost axis moves
 * (pipeline step 7, "schedule", before the loop kinds of schedule.c).
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
 * Cost: linear in the size of the nest; the block is shared, not copied.
 */
#include <string.h>

#include "schedule_int.h"

enum { TILE_BYTES = 64 };

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
    rx_stmt *s = loop(a, ni, nin, RX_LOOP_VECTORIZED, blk);
    s = loop(a, pi, pin, RX_LOOP_SERIAL, s);
    s = loop(a, no, ncount, RX_LOOP_SERIAL, s);
    for (int k = c->k.n - 2; k > c->p; k--)
        s = loop(a, c->k.loops[k]->u.for_.var, c->k.loops[k]->u.for_.extent, RX_LOOP_SERIAL, s);
    s = loop(a, po, pcount, RX_LOOP_SERIAL, s);
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

/* The tiled replacement of FOR s, or NULL when it is not a transposing copy nest. */
static rx_stmt *copy_nest(rx_module *m, rx_stmt *s)
{
    cnest c;
    return match(m, s, &c) ? build(m, &c) : NULL;
}

bool rx_schedule_copy(rx_module *m, int *ntiled)
{
    int n = rx_schedule_nests(m, copy_nest);
    if (ntiled) *ntiled = n;
    return true;
}
