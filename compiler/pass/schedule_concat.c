/*
 * schedule_concat.c — concat nests split into one copy loop per field (pipeline step 7,
 * "schedule", after schedule_tile.c and before schedule_copy.c and the loop kinds of
 * schedule.c).
 *
 * What is split: a top-level loop nest of spatial loops only whose one store picks its
 * value by position along one axis, the shape legalize gives concat (legalize_slice.c)
 * and FuseTIR keeps when it fuses a producer into a field (the KV-cache append of a
 * decode step: k_all = concat(k_cache, permute(reshape(k_proj))) on the sequence axis):
 *
 *   for v_0 .. for v_{n-1} (n >= 2; serial, unbound, from 0, extents free of the nest):
 *     block (n spatial iterators x_0 .. x_{n-1} bound to exactly v_0 .. v_{n-1}, no init):
 *       C[x_0, .., x_{n-1}] = select(x_p < B_0, V_0, select(x_p < B_1, V_1, .. V_{f-1}))
 *
 * with f >= 2 fields, one axis p >= 1 tested by every condition, bounds B_k free of the
 * nest's variables, and no V_k loading C. Written so, every element evaluates the
 * chain of conditions, the outermost loop is the parallel one (v_0: the batch, one
 * iteration in a decode step of one sequence, so one thread copies the whole cache),
 * and the C compiler vectorizes the select poorly (measured 9 GB/s for the append, a
 * quarter of memcpy). The nest becomes
 *
 *   for g in range(E_0 * .. * E_{p-1}) (parallel):        x_j := g // S_j % E_j (j < p)
 *     for y_0 in range(lo_0, hi_0): for v_{p+1} .. v_{n-1}:  C[..] = V_0   (x_p := y_0)
 *     ..
 *     for y_{f-1} in range(lo_{f-1}, hi_{f-1}): ..           C[..] = V_{f-1}
 *
 * where S_j is the product of the extents E_{j+1} .. E_{p-1} (a power-of-two literal
 * makes // and % shifts and masks; one evaluation per field loop, not per element),
 * lo_0 = 0, hi_k = max(lo_k, min(B_k, E_p)), lo_{k+1} = hi_k and hi_{f-1} = E_p. The
 * innermost loops are contiguous copies that schedule.c vectorizes (or, for p = n - 1,
 * the field loops themselves).
 *
 * Why it is exact: the field loops cover [0, E_p) in order, without overlap (lo and
 * hi are monotone by construction), and every position y in field k's range satisfies
 * y < B_k (hi_k <= B_k whenever the range is not empty) and y >= B_j for every j < k
 * (y >= hi_j >= min(B_j, E_p), with y < E_p), so the chain selects V_k there: every
 * element of C is written exactly once with the value the select gave it. The g loop
 * enumerates the tuples (x_0, .., x_{p-1}) exactly once each (mixed radix), so its
 * iterations write disjoint elements of C and, loading no C, read none another writes:
 * it may run in parallel.
 *
 * With one g (a literal extent of 1: a batch of one, YOLO's neck concat((1, 64, 40, 40),
 * (1, 32, 40, 40)) on the channels after a nearest upsample) nothing would run in
 * parallel, and schedule.c's rule finds no candidate (g runs once and holds several
 * loops): each field loop y_k becomes the parallel loop instead, when inner loops
 * remain under it (p < n - 1). Its iterations store C only at x_p = y, distinct per
 * iteration, and load no C: the same argument as for g, one parallel region per field.
 * Measured (2 threads, same run, load ~6-7): YOLO's upsample + concat into
 * (1, 96, 40, 40) 242-282 -> 123-140 us, its head's sigmoid + concat + permute
 * (1, 2100, 85) 390-608 -> 190-257 us; a smaller (1, 192, 20, 20) one 54-60 us either
 * way when parallel, but 120-125 us when left serial behind the parallel ones (a floor
 * on the volume was tried and dropped for that).
 *
 * Not split: p = 0 (nothing outside the axis to share among threads; the fields are
 * already contiguous runs), a condition on another axis or with a bound that mentions
 * the nest, and nests of a literal volume below RX_COPY_MIN_VOLUME elements.
 *
 * Cost: linear in the size of the nest; each V_k appears once in the new nest.
 */
#include <string.h>

#include "schedule_int.h"

enum { MAX_FIELDS = 64 };

/* One matched nest. */
typedef struct catnest {
    rx_copy_nest k;                /* the copy nest */
    int p;                         /* the axis the conditions test */
    int nf;                        /* fields */
    rx_expr *bound[MAX_FIELDS];    /* B_k (k < nf - 1) */
    rx_expr *val[MAX_FIELDS];      /* V_k */
} catnest;

/* True when e mentions a loop variable or an iterator of the nest. */
static bool uses_nest(const catnest *c, const rx_expr *e)
{
    for (int j = 0; j < c->k.n; j++)
        if (rx_expr_uses_var(e, c->k.loops[j]->u.for_.var) ||
            rx_expr_uses_var(e, c->k.blk->u.block.iters[j].var))
            return true;
    return false;
}

/* The axis (iterator index) of condition e when it is x_p < B with B free of the nest;
 * -1 otherwise. */
static int cond_axis(const catnest *c, const rx_expr *e)
{
    if (e->kind != RX_E_LT || e->u.op.a->kind != RX_E_VAR || uses_nest(c, e->u.op.b)) return -1;
    for (int k = 0; k < c->k.n; k++)
        if (e->u.op.a->u.var == c->k.blk->u.block.iters[k].var) return k;
    return -1;
}

/* Matches FOR s against the nest shape of the file essay. */
static bool match(rx_stmt *s, catnest *c)
{
    memset(c, 0, sizeof *c);
    if (!rx_copy_nest_match(s, &c->k)) return false;
    c->p = -1;
    rx_expr *v = c->k.st->u.store.value;
    while (v->kind == RX_E_SELECT && c->nf < MAX_FIELDS - 1) {
        int p = cond_axis(c, v->u.op.a);
        if (p < 1 || (c->p >= 0 && p != c->p)) break;
        c->p = p;
        c->bound[c->nf] = v->u.op.a->u.op.b;
        c->val[c->nf++] = v->u.op.b;
        v = v->u.op.c;
    }
    c->val[c->nf++] = v;
    return c->nf >= 2;
}

/* ---------------------------------------------------------------- building */

static rx_stmt *mk_for(rx_arena *a, const rx_svar *v, rx_expr *min, rx_expr *extent,
                       rx_loopkind kind, rx_stmts body)
{
    return rx_s_for(a, v, min, extent, kind, body);
}

static rx_stmts one(rx_arena *a, rx_stmt *s)
{
    return rx_stmts_one(a, s);
}

static rx_svar *fresh(rx_module *m, const rx_svar *base, const char *suffix)
{
    const char *name = rx_arena_printf(m->arena, "%s_%s", base->name, suffix);
    return rx_svar_new(m->arena, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
}

/* x k y, folded when both are literals (k: ADD, SUB, MUL, MIN, MAX, FLOORDIV, FLOORMOD). */
static rx_expr *arith(rx_arena *a, rx_ekind k, rx_expr *x, rx_expr *y)
{
    int64_t u, v;
    if (rx_expr_is_const(x, &u) && rx_expr_is_const(y, &v)) {
        switch (k) {
        case RX_E_ADD: return rx_e_int(a, u + v);
        case RX_E_SUB: return rx_e_int(a, u - v);
        case RX_E_MUL: return rx_e_int(a, u * v);
        case RX_E_MIN: return rx_e_int(a, u < v ? u : v);
        case RX_E_MAX: return rx_e_int(a, u > v ? u : v);
        default: break;
        }
    }
    if ((k == RX_E_MUL || k == RX_E_FLOORDIV) && rx_expr_is_int(y, 1)) return x;
    if (k == RX_E_MUL && rx_expr_is_int(x, 1)) return y;
    return rx_e_binary(a, k, x, y);
}

/* Field k's loop: for y in [lo, hi): the loops p+1 .. n-1 (fresh variables) around a
 * copy of the block whose iterators bind to gidx (j < p), y, and those loops, storing
 * V_k. */
static rx_stmt *field_loop(rx_module *m, const catnest *c, int k, rx_expr *const *gidx,
                           rx_expr *lo, rx_expr *hi)
{
    rx_arena *a = m->arena;
    rx_stmt *blk = rx_arena_dup(a, c->k.blk, sizeof(rx_stmt)); /* a copy, then edited */
    blk->u.block.iters = RX_NEWN(a, rx_iter, c->k.n);
    memcpy(blk->u.block.iters, c->k.blk->u.block.iters, sizeof(rx_iter) * (size_t)c->k.n);
    rx_stmt *st = rx_arena_dup(a, c->k.st, sizeof(rx_stmt)); /* a copy, then edited */
    st->u.store.value = c->val[k];
    blk->u.block.body = one(a, st);
    rx_svar *vars[RX_COPY_MAX_LOOPS];
    for (int j = c->p; j < c->k.n; j++) {
        vars[j] = fresh(m, c->k.loops[j]->u.for_.var, rx_arena_printf(a, "f%d", k));
        blk->u.block.iters[j].bind = rx_e_var(a, vars[j]);
    }
    for (int j = 0; j < c->p; j++) blk->u.block.iters[j].bind = gidx[j];
    rx_stmt *s = blk;
    for (int j = c->k.n - 1; j > c->p; j--)
        s = mk_for(a, vars[j], rx_e_int(a, 0), c->k.loops[j]->u.for_.extent, RX_LOOP_SERIAL, one(a, s));
    return mk_for(a, vars[c->p], lo, arith(a, RX_E_SUB, hi, lo), RX_LOOP_SERIAL, one(a, s));
}

static rx_stmt *build(rx_module *m, const catnest *c)
{
    rx_arena *a = m->arena;
    /* g and the mixed-radix digits x_j = g // S_j % E_j */
    rx_svar *g = c->p == 1 ? (rx_svar *)c->k.loops[0]->u.for_.var : fresh(m, c->k.loops[0]->u.for_.var, "g");
    rx_expr *gidx[RX_COPY_MAX_LOOPS], *stride = rx_e_int(a, 1);
    for (int j = c->p - 1; j >= 0; j--) {
        rx_expr *q = arith(a, RX_E_FLOORDIV, rx_e_var(a, g), stride);
        gidx[j] = j == 0 ? q : arith(a, RX_E_FLOORMOD, q, c->k.loops[j]->u.for_.extent);
        stride = arith(a, RX_E_MUL, stride, c->k.loops[j]->u.for_.extent);
    }
    rx_stmts fields = {RX_NEWN(a, rx_stmt *, c->nf), c->nf};
    rx_expr *ep = c->k.loops[c->p]->u.for_.extent, *lo = rx_e_int(a, 0);
    for (int k = 0; k < c->nf; k++) {
        rx_expr *hi = k == c->nf - 1 ? ep : arith(a, RX_E_MAX, lo, arith(a, RX_E_MIN, c->bound[k], ep));
        fields.items[k] = field_loop(m, c, k, gidx, lo, hi);
        lo = hi;
    }
    int64_t e;
    bool par = !rx_expr_is_const(stride, &e) || e >= 2;
    if (!par && c->p + 1 < c->k.n) /* one g (a batch of one): each field's loop instead */
        for (int k = 0; k < c->nf; k++) fields.items[k]->u.for_.loop_kind = RX_LOOP_PARALLEL;
    return mk_for(a, g, rx_e_int(a, 0), stride, par ? RX_LOOP_PARALLEL : RX_LOOP_SERIAL, fields);
}

/* The split replacement of FOR s, or NULL when it is not a concat nest. */
rx_stmt *rx_schedule_concat_nest(rx_module *m, rx_stmt *s)
{
    catnest c;
    return match(s, &c) ? build(m, &c) : NULL;
}

bool rx_schedule_concat(rx_module *m, int *nsplit)
{
    int n = rx_schedule_nests(m, rx_schedule_concat_nest);
    if (nsplit) *nsplit = n;
    return true;
}
