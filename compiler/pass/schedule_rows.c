/*
 * schedule_rows.c — row reductions and row-wise elementwise nests fused per row, their
 * reductions over vector lanes, the rows collapsed into one parallel loop (pipeline
 * step 7, "schedule", before the tiles of schedule_tile.c and the loop kinds of
 * schedule.c).
 *
 * What is matched: a run of consecutive top-level nests of one loop function, each a
 * "row nest" over the same p >= 1 row loops (structurally equal extents):
 *
 *   for r_1 .. for r_p [for k]:            serial, unbound, from 0, extents free of the nest
 *     block (iterators bound to exactly r_1 .. r_p [, k]; the row ones spatial):
 *       [init: C[r_1, .., r_p] = INIT]
 *       C[r_1, .., r_p [, k]] = VALUE
 *
 * — an inner row loop k that is a reduction (C[rows] = OP(C[rows], G), OP add, max or
 * min), an elementwise loop (C[rows, k] = VALUE, VALUE reading no C), or no inner loop
 * at all (a per-row scalar such as layer_norm's mean). The legalized rms_norm (sum of
 * squares, normalize), layer_norm (sum, mean, variance, normalize) and softmax (max,
 * exp, sum, divide; an additive causal mask from full + triu or a where fused into
 * max and exp as a select, never materialized) are such runs, as are PyTorch's exported
 * forms once simplify.c has rewritten their spellings (ReduceMean of x * x, Pow,
 * Sqrt, Div: the same sum over the row). A reduction may also read a buffer that other
 * rows share (rx_rows_reduction: a mask every head reads, GPT-2's where(mask[:, :, s0:s1,
 * :k], scores / c, lo) or an additive (b, 1, 1, s) one, scale before or after, a
 * masked_fill, a factor of a product: schedule_rows_share.c) as long as some load is
 * the row's own (a matmul's are not: schedule_tile.c's). Measured
 * before: GPT-2's masked softmax (1, 12, 128, 128) went to the tile schedule (the
 * mask packed per tile, scalar selects): 1.64 ms; now one run with the select's loads
 * bound to LETs (eager arms, below): 0.37 ms, same run, 2 threads.
 *
 * The run becomes one nest, when the run holds a reduction or, with two row loops or
 * more, its first row extent is symbolic (an elementwise nest over a batch that is
 * often 1 at run time; with one row loop schedule.c makes that loop parallel anyway):
 *
 *   for g in range(E_1 * .. * E_p) (parallel):      r_j := g // S_j % E_j (LETs)
 *     nest 1's inner part, nest 2's inner part, ..   (in the original order)
 *
 * S_j the product of E_{j+1} .. E_p. An elementwise inner loop is marked vectorized; a
 * reduction whose loads move along k only through their last index, by a unit step
 * (contiguous: proved with the arithmetic), with OP's identity as INIT (0 for add, the
 * dtype's lowest/highest or an infinity for max/min) and a floating C, becomes
 *
 *   acc = alloc local (L,)        L = 64 bytes of C's element (16 f32: two AVX2 vectors;
 *                                 32 lanes measured slower: softmax over (1, 16, 128, 128)
 *                                 0.57 -> 0.47 ms, rms_norm 0.032 -> 0.020 ms with 16, the
 *                                 serial combine of the lanes costing more than the chains
 *                                 gain on rows of 128 to 1024)
 *   for l (vectorized): acc[l] = INIT
 *   for ko in range(K // L): for l (vectorized): acc[l] = OP(acc[l], G[k := ko * L + l])
 *   for t in range(K % L) (vectorized): acc[t] = OP(acc[t], G[k := K // L * L + t])
 *   for h in L / 2, .., 2, 1: for l in range(h) (vectorized): acc[l] = OP(acc[l], acc[l + h])
 *   C[rows] = OP(INIT, acc[0])
 *
 * L independent chains in vector registers instead of one serial scalar chain, the tail
 * folded into the first lanes and the lanes combined in log2 L halving steps (a serial
 * combine and tail through C were a chain of up to 31 dependent steps per row: a softmax
 * over rows of 42 ran 1.5x slower, most of its time in them).
 *
 * Why it is legal: every buffer the run stores is accessed (loaded or stored) in every
 * nest of the run only with the nest's row iterators at index positions 1 .. p
 * (checked; otherwise the run ends before that nest). So the work of one row tuple
 * reads and writes only that row's elements of the run's outputs: running nest 1 .. m
 * row by row instead of nest by nest computes the same values, and distinct row tuples
 * touch disjoint elements, so the g loop may run in parallel. The mixed-radix g
 * enumerates each row tuple once. An elementwise inner loop reads no C and stores C at
 * distinct k: a simd loop.
 *
 * Exactness: max and min are exact in any order (NaN inputs aside: which NaN payload
 * propagates may differ). A sum is reassociated: L partial sums over the lanes, the tail
 * added to the first ones, combined pairwise. Its rounding error is bounded like the serial
 * sum's, (K - 1) * eps * sum |terms| to first order; tests/unit/pass/test_schedule_rowred.c
 * checks O0 (serial) against O2 (lanes) within 1e-6 relative per row on rms_norm,
 * layer_norm and softmax and each against float64 NumPy-equivalent references.
 *
 * Cost: O(run length x nest size) per run; the rewritten nest is about the size of the
 * run plus a few statements per reduction.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fuse_tir_int.h"
#include "schedule_int.h"

enum { MAX_ROWS = 8, MAX_RUN = 16, LANE_BYTES = 64, MIN_INNER = 8, LANE_STMTS = 9 };

/* One row nest of a run (file essay). */
typedef struct rnest {
    rx_stmt *top;                 /* the nest's outermost FOR */
    const rx_stmt *loops[MAX_ROWS + 1];
    int q;                        /* loops in the chain: p, or p + 1 with an inner loop */
    rx_stmt *blk;                 /* the block */
    const rx_stmt *st;            /* its one store */
    bool reduce;                  /* the inner iterator is a reduce one */
} rnest;

static bool is_var(const rx_expr *e, const rx_svar *v)
{
    return e && e->kind == RX_E_VAR && e->u.var == v;
}

/* True when FOR s is a chain of loops around one block with iterators bound to exactly
 * the chain's variables, one store (file essay's shape, before the row count is known). */
static bool match_nest(rx_stmt *s, rnest *n)
{
    memset(n, 0, sizeof *n);
    n->top = s;
    const rx_stmt *c = s;
    while (c->kind == RX_S_FOR) {
        if (n->q > MAX_ROWS || c->u.for_.loop_kind != RX_LOOP_SERIAL || c->u.for_.thread ||
            !rx_expr_is_int(c->u.for_.min, 0) || c->u.for_.body.n != 1)
            return false;
        for (int i = 0; i < n->q; i++)
            if (rx_expr_uses_var(c->u.for_.extent, n->loops[i]->u.for_.var)) return false;
        n->loops[n->q++] = c;
        c = c->u.for_.body.items[0];
    }
    if (c->kind != RX_S_BLOCK || c->u.block.niters != n->q || c->u.block.body.n != 1 ||
        c->u.block.body.items[0]->kind != RX_S_STORE || c->u.block.init.n > 1)
        return false;
    n->blk = (rx_stmt *)c;
    n->st = c->u.block.body.items[0];
    for (int i = 0; i < n->q; i++) {
        const rx_iter *it = &c->u.block.iters[i];
        if (!is_var(it->bind, n->loops[i]->u.for_.var)) return false;
        if (it->kind == RX_ITER_REDUCE) {
            if (i != n->q - 1 || n->q < 2) return false;
            n->reduce = true;
        }
    }
    const rx_stmt *st = n->st;
    int want = n->reduce ? n->q - 1 : n->q;
    if (st->u.store.nidx != want) return false;
    for (int i = 0; i < want; i++)
        if (!is_var(st->u.store.idx[i], c->u.block.iters[i].var)) return false;
    if (c->u.block.init.n) { /* init: C[rows] = INIT, INIT free of C and of k */
        const rx_stmt *in = c->u.block.init.items[0];
        if (!n->reduce || in->kind != RX_S_STORE || in->u.store.buf != st->u.store.buf ||
            rx_expr_loads_buf(in->u.store.value, st->u.store.buf) ||
            rx_expr_uses_var(in->u.store.value, c->u.block.iters[n->q - 1].var))
            return false;
        for (int i = 0; i < want; i++)
            if (!rx_expr_same(in->u.store.idx[i], st->u.store.idx[i])) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- the run's legality */

typedef RX_VEC(const rx_buffer *) rbuf_vec;

typedef struct rrun {
    rnest n[MAX_RUN];
    int m;        /* nests in the run */
    int p;        /* row loops */
    rbuf_vec out; /* buffers the run stores */
} rrun;

/* True when the access b[idx] (n indices) of nest t is row-local: b not stored by the
   run, or its first p indices are t's row iterators (or loop variables). */
static bool row_local(const rrun *r, const rnest *t, const rx_buffer *b, rx_expr *const *idx,
                      int n)
{
    bool stored = false;
    for (int i = 0; i < r->out.n && !stored; i++) stored = r->out.items[i] == b;
    if (!stored) return true;
    if (n < r->p) return false;
    for (int i = 0; i < r->p; i++)
        if (!is_var(idx[i], t->blk->u.block.iters[i].var) && !is_var(idx[i], t->loops[i]->u.for_.var))
            return false;
    return true;
}

static bool expr_row_local(const rrun *r, const rnest *t, const rx_expr *e)
{
    if (!e) return true;
    if (e->kind == RX_E_LOAD &&
        !row_local(r, t, e->u.load.buf, e->u.load.idx, e->u.load.nidx))
        return false;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!expr_row_local(r, t, rx_expr_child(e, i))) return false;
    return true;
}

static bool store_row_local(const rrun *r, const rnest *t, const rx_stmt *st)
{
    if (!row_local(r, t, st->u.store.buf, st->u.store.idx, st->u.store.nidx)) return false;
    for (int i = 0; i < st->u.store.nidx; i++)
        if (!expr_row_local(r, t, st->u.store.idx[i])) return false;
    return expr_row_local(r, t, st->u.store.value);
}

/* True when every nest of r accesses every buffer r stores row-locally. */
static bool run_legal(const rrun *r)
{
    for (int k = 0; k < r->m; k++) {
        const rnest *t = &r->n[k];
        if (!store_row_local(r, t, t->st)) return false;
        if (t->blk->u.block.init.n && !store_row_local(r, t, t->blk->u.block.init.items[0]))
            return false;
        for (int i = 0; i < t->q; i++)
            if (!expr_row_local(r, t, t->loops[i]->u.for_.extent)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- building */

typedef struct rbuild {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    const rx_svar *rows[MAX_ROWS]; /* the fused nest's row variables (nest 1's) */
    int p;
    int nlanes;                    /* reductions turned into lanes */
    int nrow;                      /* per-row LETs made (their names: row0, row1, ..) */
} rbuild;

static rx_expr *bin(rbuild *B, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_arith_simplify(B->ar, rx_e_binary(B->a, k, x, y));
}

static rx_svar *fresh_var(rbuild *B, const char *name)
{
    return rx_svar_new(B->a, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(B->m));
}

/* True when e is OP's identity for a C of dtype dt (add 0, max lowest, min highest). */
static bool identity(rx_ekind op, const rx_expr *e, rx_dtype dt)
{
    if (!e || e->kind != RX_E_FLOAT) return false;
    double v = e->u.fval, big = dt == RX_DT_F32 ? FLT_MAX : DBL_MAX;
    switch (op) {
    case RX_E_ADD: return v == 0.0;
    case RX_E_MAX: return v <= -big;
    case RX_E_MIN: return v >= big;
    default: return false;
    }
}

/* ---------------------------------------------------------------- reshaped rows */
/* A reduction that reads its row through a reshape (GroupNorm: (N, C, H, W) viewed as
 * (N, G, C / G * H * W), exported as Reshape + InstanceNormalization) loads
 * x[b, g * 4 + (k >> 12), (k >> 6) & 63, k & 63]: k in several indices as the digits
 * of a mixed radix, contiguous in memory although no index moves by a unit step. Such a
 * load is read flat: its offset from the first index using k on, sum idx_j * stride_j
 * (strides from literal extents), is expanded into c * atom terms; the atoms using k
 * must be digits (k // lo) % (hi / lo) (spelled k, k >> s, k // c, & m, % c) each with
 * coefficient lo, chained from lo = 1 up (each hi the next lo) and the last unbounded
 * or hi >= K: together exactly k. The load becomes x[b, 0, 0, rest + k], the same flat
 * position (the C code and the evaluator address a buffer by its flat row-major offset)
 * and a unit step along k, so the lanes form applies (each index of the original read
 * a mixed-radix digit: 4 x 16 rows of scalar chains, per-element divides and masks, in
 * schedule_tile.c's form). Measured: a small UNet's GroupNorm kernel over (1, 32, 64, 64),
 * 8 groups (two sums, the normalize, SiLU), 2 threads, same run: 373-570 -> 281-337 us. */
enum { MAX_TERMS = 24 };
#define BIG_COEF (INT64_C(1) << 40)

typedef struct lterm {
    int64_t c;
    const rx_expr *atom; /* NULL: the constant c */
} lterm;

/* e * c expanded into terms t[*n..]; false when too many or a coefficient too big. */
static bool lin_terms(const rx_expr *e, int64_t c, lterm *t, int *n)
{
    int64_t v;
    if (c > BIG_COEF || c < -BIG_COEF) return false;
    if (rx_expr_is_const(e, &v)) {
        if (v > BIG_COEF || v < -BIG_COEF || *n == MAX_TERMS) return false;
        t[(*n)++] = (lterm){c * v, NULL};
        return true;
    }
    switch (e->kind) {
    case RX_E_ADD: return lin_terms(e->u.op.a, c, t, n) && lin_terms(e->u.op.b, c, t, n);
    case RX_E_SUB: return lin_terms(e->u.op.a, c, t, n) && lin_terms(e->u.op.b, -c, t, n);
    case RX_E_MUL:
        if (rx_expr_is_const(e->u.op.b, &v)) return lin_terms(e->u.op.a, c * v, t, n);
        if (rx_expr_is_const(e->u.op.a, &v)) return lin_terms(e->u.op.b, c * v, t, n);
        break;
    default: break;
    }
    if (*n == MAX_TERMS) return false;
    t[(*n)++] = (lterm){c, e};
    return true;
}

/* The digit of k that atom e is: e == (k // *lo) % (*hi / *lo), *hi 0 when unbounded. */
static bool digit(const rx_expr *e, const rx_svar *k, int64_t *lo, int64_t *hi)
{
    int64_t v;
    if (e->kind == RX_E_VAR) {
        *lo = 1;
        *hi = 0;
        return e->u.var == k;
    }
    if (e->kind != RX_E_SHR && e->kind != RX_E_FLOORDIV && e->kind != RX_E_BITAND &&
        e->kind != RX_E_FLOORMOD)
        return false;
    if (!rx_expr_is_const(e->u.op.b, &v) || !digit(e->u.op.a, k, lo, hi) || *hi) return false;
    switch (e->kind) {
    case RX_E_SHR:
        if (v < 0 || v > 40) return false;
        *lo <<= v;
        return true;
    case RX_E_FLOORDIV:
        if (v <= 0 || v > BIG_COEF) return false;
        *lo *= v;
        return true;
    case RX_E_BITAND:
        if (v <= 0 || v > BIG_COEF || (v & (v + 1))) return false;
        *hi = *lo * (v + 1);
        return true;
    default:
        if (v <= 0 || v > BIG_COEF) return false;
        *hi = *lo * v;
        return true;
    }
}

/* Load e (using k) read flat as described above, or NULL. */
static rx_expr *flat_load(rbuild *B, const rx_expr *e, const rx_svar *k, const rx_expr *K)
{
    const rx_buffer *buf = e->u.load.buf;
    int n = e->u.load.nidx, j0 = 0;
    if (n < 2 || buf->ndim != n) return NULL;
    while (j0 < n && !rx_expr_uses_var(e->u.load.idx[j0], k)) j0++;
    lterm t[MAX_TERMS];
    int nt = 0;
    int64_t stride = 1, ext;
    for (int j = n - 1; j >= j0; j--) {
        if (!lin_terms(e->u.load.idx[j], stride, t, &nt)) return NULL;
        if (j > j0 && (!rx_expr_is_const(buf->shape[j], &ext) || ext <= 0 || ext > BIG_COEF ||
                       (stride *= ext) > BIG_COEF))
            return NULL;
    }
    int64_t want = 1, kc = 0;
    bool bounded = rx_expr_is_const(K, &kc), done = false;
    rx_expr *rest = rx_e_var(B->a, k);
    for (int step = 0; step < nt && !done; step++) {
        int found = -1;
        for (int i = 0; i < nt; i++) {
            int64_t lo, hi;
            if (t[i].atom && rx_expr_uses_var(t[i].atom, k) && digit(t[i].atom, k, &lo, &hi) &&
                lo == want && t[i].c == lo) {
                found = i;
                done = !hi || (bounded && hi >= kc);
                want = hi;
                break;
            }
        }
        if (found < 0) return NULL;
        t[found].atom = NULL; /* consumed: its digit is part of k */
        t[found].c = 0;
    }
    if (!done) return NULL;
    for (int i = 0; i < nt; i++) {
        if (t[i].atom && rx_expr_uses_var(t[i].atom, k)) return NULL;
        rx_expr *term = t[i].atom ? bin(B, RX_E_MUL, (rx_expr *)t[i].atom, rx_e_int(B->a, t[i].c))
                                  : rx_e_int(B->a, t[i].c);
        rest = bin(B, RX_E_ADD, rest, term);
    }
    rx_expr **idx = RX_NEWN(B->a, rx_expr *, n);
    for (int j = 0; j < n; j++)
        idx[j] = j < j0 ? e->u.load.idx[j] : j + 1 < n ? rx_e_int(B->a, 0) : rest;
    return rx_e_load(B->a, (rx_buffer *)buf, idx, n);
}

typedef struct rcontig {
    rbuild *B;
    const rx_svar *k;
    const rx_expr *K;
    int moving;
    bool bad;
} rcontig;

static rx_expr *contig_cb(void *h, rx_expr *e);
static rx_expr *map_children(rx_arena *a, rx_expr *e, rx_expr *(*f)(void *, rx_expr *), void *ctx);

/* e with every load that uses k reading along k by a unit step: those that use it only
   in their last index by a unit step as they are, mixed-radix ones read flat
   (flat_load); h->bad when some other load uses k. h->moving counts the loads. */
static rx_expr *contig(rcontig *h, rx_expr *e)
{
    if (!e || h->bad) return e;
    if (e->kind == RX_E_LOAD && rx_expr_uses_var(e, h->k)) {
        int n = e->u.load.nidx;
        bool last_only = true;
        for (int i = 0; i + 1 < n; i++) last_only &= !rx_expr_uses_var(e->u.load.idx[i], h->k);
        h->moving++;
        if (last_only && rx_load_unit_step(h->B->ar, h->B->a, e, h->k)) return e;
        rx_expr *f = flat_load(h->B, e, h->k, h->K);
        if (!f) h->bad = true;
        return f ? f : e;
    }
    return map_children(h->B->a, e, contig_cb, h);
}

static rx_expr *contig_cb(void *h, rx_expr *e)
{
    return contig(h, e);
}

/* STORE b[idx] = v with an arena copy of idx (rx_s_store keeps the array it gets). */
static rx_stmt *store(rbuild *B, rx_buffer *b, rx_expr *const *idx, int n, rx_expr *v)
{
    rx_expr **k = RX_NEWN(B->a, rx_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) k[i] = idx[i];
    return rx_s_store(B->a, b, k, n, v);
}

static rx_stmt *store1(rbuild *B, rx_buffer *b, rx_expr *i, rx_expr *v)
{
    return store(B, b, &i, 1, v);
}

static rx_stmt *loop(rbuild *B, const rx_svar *v, rx_expr *ext, rx_loopkind kind, rx_stmt *body)
{
    return rx_s_for(B->a, v, rx_e_int(B->a, 0), ext, kind, rx_stmts_one(B->a, body));
}

/* e with each child c replaced by f(ctx, c); e itself when none changed. */
static rx_expr *map_children(rx_arena *a, rx_expr *e, rx_expr *(*f)(void *, rx_expr *), void *ctx)
{
    int n = rx_expr_nchildren(e);
    if (!n) return e;
    rx_expr **kids = RX_NEWN(a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        kids[i] = f(ctx, rx_expr_child(e, i));
        changed |= kids[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(a, e, kids) : e;
}

/* ---------------------------------------------------------------- eager select arms */

/* A float select whose arms load (a masked softmax's where(mask, x / c, lo): x read
   only where the mask holds) is a branch to gcc, which does not if-convert it (the
   load and, under trapping math, the division stay conditional): the inner loop stayed
   scalar, 1.77 ms for GPT-2's (1, 12, 128, 128) softmax. When every load in the arms is
   in bounds at every iteration (each index a loop variable or block iterator of the
   nest whose extent is the buffer's dimension, or a literal inside a literal one), the
   loads are bound to LETs inside the loop, ahead of the select; the arms then read no
   buffer and codegen (c_expr.c's eager_arm) picks on the bits, no branch. Same values:
   the loads read what they would have, only also where the other arm is taken. */

enum { MAX_ARM_LETS = 8 };

typedef struct rarms {
    rbuild *B;
    const rnest *t;
    rx_svar *vars[MAX_ARM_LETS];
    rx_expr *vals[MAX_ARM_LETS];
    int n;
} rarms;

/* The extent of v in nest t: a loop's extent or a block iterator's domain (NULL: neither). */
static rx_expr *extent_of(const rnest *t, const rx_svar *v)
{
    for (int i = 0; i < t->q; i++) {
        if (t->loops[i]->u.for_.var == v) return t->loops[i]->u.for_.extent;
        if (t->blk->u.block.iters[i].var == v) return t->blk->u.block.iters[i].dom;
    }
    return NULL;
}

/* True when every load of e (0-d ones aside) is in bounds at every iteration of h->t;
   *n counts them. */
static bool arm_loads_in_bounds(rarms *h, const rx_expr *e, int *n)
{
    if (!e) return true;
    if (e->kind == RX_E_LOAD && e->u.load.nidx > 0) {
        const rx_buffer *b = e->u.load.buf;
        if (e->u.load.nidx != b->ndim) return false;
        for (int i = 0; i < b->ndim; i++) {
            rx_expr *x = e->u.load.idx[i], *ext;
            int64_t c, d;
            if (x->kind == RX_E_VAR && (ext = extent_of(h->t, x->u.var))) {
                if (!rx_expr_same(ext, b->shape[i]) && !rx_arith_prove_equal(h->B->ar, ext, b->shape[i]))
                    return false;
            } else if (!rx_expr_is_const(x, &c) || !rx_expr_is_const(b->shape[i], &d) || c < 0 ||
                       c >= d) {
                return false;
            }
        }
        (*n)++;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!arm_loads_in_bounds(h, rx_expr_child(e, i), n)) return false;
    return true;
}

/* e with each load (0-d ones aside) replaced by the variable of its LET (made once per
   distinct load). */
static rx_expr *bind_cb(void *h, rx_expr *e);

static rx_expr *bind_loads(rarms *h, rx_expr *e)
{
    rx_arena *a = h->B->a;
    if (e->kind == RX_E_LOAD && e->u.load.nidx > 0) {
        for (int i = 0; i < h->n; i++)
            if (rx_expr_same(h->vals[i], e)) return rx_e_var(a, h->vars[i]);
        rx_svar *v = rx_svar_new(a, rx_arena_printf(a, "arm%d", h->B->nrow++), (rx_dtype)e->dtype,
                                 RX_SV_LOOP, rx_module_new_id(h->B->m));
        h->vars[h->n] = v;
        h->vals[h->n++] = e;
        return rx_e_var(a, v);
    }
    return map_children(a, e, bind_cb, h);
}

static rx_expr *bind_cb(void *h, rx_expr *e)
{
    return bind_loads(h, e);
}

/* e with the loads of its float selects' arms bound to LETs where they are in bounds
   (above); h collects the LETs. */
static rx_expr *eager_cb(void *h, rx_expr *e);

static rx_expr *eager_arms(rarms *h, rx_expr *e)
{
    if (!e) return e;
    int cnt = 0;
    if (e->kind == RX_E_SELECT && rx_dtype_is_float((rx_dtype)e->dtype) &&
        arm_loads_in_bounds(h, e->u.op.b, &cnt) && arm_loads_in_bounds(h, e->u.op.c, &cnt) &&
        cnt > 0 && h->n + cnt <= MAX_ARM_LETS) {
        rx_expr *kids[3] = {eager_arms(h, e->u.op.a), bind_loads(h, e->u.op.b),
                            bind_loads(h, e->u.op.c)};
        return rx_expr_with_children(h->B->a, e, kids);
    }
    return map_children(h->B->a, e, eager_cb, h);
}

static rx_expr *eager_cb(void *h, rx_expr *e)
{
    return eager_arms(h, e);
}

/* s inside the LETs of h, outermost first, their values through vm1 then vm2 (either
   may be NULL). */
static rx_stmt *wrap_arms(const rarms *h, const rx_vmap *vm1, const rx_vmap *vm2, rx_stmt *s)
{
    rx_arena *a = h->B->a;
    for (int i = h->n - 1; i >= 0; i--) {
        rx_expr *v = h->vals[i];
        if (vm1) v = rx_expr_subst(a, v, vm1);
        if (vm2) v = rx_expr_subst(a, v, vm2);
        s = rx_s_let(a, h->vars[i], v, rx_stmts_one(a, s));
    }
    return s;
}

/* The lanes form of reduction nest t's inner loop (file essay) written to out (returns
   how many statements, at most LANE_STMTS), or 0 when it does not qualify (with out
   NULL only the check: 1 when it does).
   The nest's row variables are B->rows when building (t a copy when needed). */
static int lanes(rbuild *B, const rnest *t, int p, rx_stmt **out)
{
    rx_arena *a = B->a;
    const rx_stmt *st = t->st;
    rx_buffer *C = st->u.store.buf;
    rx_dtype dt = (rx_dtype)C->dtype;
    if ((dt != RX_DT_F32 && dt != RX_DT_F64) || !t->blk->u.block.init.n) return 0;
    const rx_expr *v = st->u.store.value;
    rx_ekind op = (rx_ekind)v->kind;
    if (op != RX_E_ADD && op != RX_E_MAX && op != RX_E_MIN) return 0;
    rx_expr *x = v->u.op.a, *y = v->u.op.b, *g;
    rx_expr *cl = rx_e_load(a, C, st->u.store.idx, st->u.store.nidx);
    if (rx_expr_same(x, cl) && !rx_expr_loads_buf(y, C)) g = y;
    else if (rx_expr_same(y, cl) && !rx_expr_loads_buf(x, C)) g = x;
    else return 0;
    rx_expr *init = t->blk->u.block.init.items[0]->u.store.value;
    if (!identity(op, init, dt)) return 0;
    const rx_stmt *kl = t->loops[t->q - 1];
    const rx_svar *kv = kl->u.for_.var, *ki = t->blk->u.block.iters[t->q - 1].var;
    if (!rx_rows_reduction(t->blk, t->loops, p, g, kv, ki)) return 0;
    rx_vmap vm = {0};
    for (int i = 0; out && i < p; i++) {
        const rx_svar *iv = t->blk->u.block.iters[i].var;
        if (iv != B->rows[i]) rx_vmap_set(&vm, iv, rx_e_var(a, B->rows[i]));
    }
    /* contiguity along k, judged on G with the rows substituted and k itself */
    if (ki != kv) rx_vmap_set(&vm, ki, rx_e_var(a, kv));
    rx_expr *K = kl->u.for_.extent;
    rcontig cg = {.B = B, .k = kv, .K = K};
    rx_expr *gk = contig(&cg, rx_expr_subst(a, g, &vm));
    bool ok = !cg.bad && cg.moving > 0;
    int64_t kc;
    int L = LANE_BYTES / (dt == RX_DT_F32 ? 4 : 8);
    if (ok && rx_expr_is_const(K, &kc) && kc < L) ok = false;
    if (!ok || !out) {
        rx_vmap_free(&vm);
        return ok ? 1 : 0;
    }
    rarms arms = {.B = B, .t = t};
    rx_expr *ge = eager_arms(&arms, g);
    if (arms.n) {
        rcontig ca = {.B = B, .k = kv, .K = K};
        gk = contig(&ca, rx_expr_subst(a, ge, &vm));
        RX_ASSERT(!ca.bad); /* the arms' LETs load what g loads */
    }
    rx_buffer *acc = RX_NEW(a, rx_buffer);
    acc->name = rx_arena_printf(a, "%s_lanes", C->name);
    acc->dtype = dt;
    acc->ndim = 1;
    acc->shape = RX_NEWN(a, rx_expr *, 1);
    acc->shape[0] = rx_e_int(a, L);
    acc->scope = RX_SCOPE_LOCAL;
    acc->id = rx_module_new_id(B->m);
    rx_svar *l0 = fresh_var(B, "l"), *ko = fresh_var(B, "ko"), *l1 = fresh_var(B, "l"),
            *l2 = fresh_var(B, "l"), *tk = fresh_var(B, "kt");
    rx_expr *lit_l = rx_e_int(a, L);
    rx_expr *nfull = bin(B, RX_E_FLOORDIV, K, lit_l);
    rx_expr *rows[MAX_ROWS];
    for (int i = 0; i < B->p; i++) rows[i] = rx_e_var(a, B->rows[i]);
    /* G at k = ko * L + l1 and at the tail's k = K // L * L + t */
    rx_vmap km = {0};
    rx_vmap_set(&km, kv, bin(B, RX_E_ADD, bin(B, RX_E_MUL, rx_e_var(a, ko), lit_l), rx_e_var(a, l1)));
    rx_expr *g_body = rx_expr_subst(a, gk, &km);
    rx_vmap kt = {0};
    rx_vmap_set(&kt, kv, bin(B, RX_E_ADD, bin(B, RX_E_MUL, nfull, lit_l), rx_e_var(a, tk)));
    rx_expr *g_tail = rx_expr_subst(a, gk, &kt);
    rx_expr *a1 = rx_e_var(a, l1);
    rx_stmt **s = out;
    s[0] = rx_s_alloc(a, acc);
    s[1] = loop(B, l0, lit_l, RX_LOOP_VECTORIZED, store1(B, acc, rx_e_var(a, l0), init));
    s[2] = loop(B, ko, nfull, RX_LOOP_SERIAL,
                loop(B, l1, lit_l, RX_LOOP_VECTORIZED,
                     wrap_arms(&arms, &vm, &km,
                               store1(B, acc, a1, rx_e_binary(a, op, rx_e_load(a, acc, &a1, 1), g_body)))));
    rx_expr *rest = bin(B, RX_E_FLOORMOD, K, lit_l), *at = rx_e_var(a, tk);
    int ns = 3;
    if (!rx_expr_is_int(rest, 0))
        s[ns++] = loop(B, tk, rest, RX_LOOP_VECTORIZED,
                       wrap_arms(&arms, &vm, &kt,
                                 store1(B, acc, at, rx_e_binary(a, op, rx_e_load(a, acc, &at, 1), g_tail))));
    for (int h = L / 2; h >= 1; h /= 2, l2 = fresh_var(B, "l")) {
        rx_expr *a2 = rx_e_var(a, l2), *a3 = bin(B, RX_E_ADD, a2, rx_e_int(a, h));
        s[ns++] = loop(B, l2, rx_e_int(a, h), RX_LOOP_VECTORIZED,
                       store1(B, acc, a2, rx_e_binary(a, op, rx_e_load(a, acc, &a2, 1), rx_e_load(a, acc, &a3, 1))));
    }
    rx_expr *a0 = rx_e_int(a, 0);
    s[ns++] = store(B, C, rows, B->p, rx_e_binary(a, op, init, rx_e_load(a, acc, &a0, 1)));
    rx_vmap_free(&km);
    rx_vmap_free(&kt);
    rx_vmap_free(&vm);
    B->nlanes++;
    return ns;
}

/* True when e is worth a LET of its own: it loads or calls (a per-row statistic, its
   rsqrt), as opposed to a literal, a variable or plain index arithmetic. */
static bool costly(const rx_expr *e)
{
    if (e->kind == RX_E_LOAD || e->kind == RX_E_CALL) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (costly(rx_expr_child(e, i))) return true;
    return false;
}

typedef struct rhoist {
    rbuild *B;
    const rnest *t;
    const rx_svar *k, *ki;  /* the inner loop's variable and its block iterator */
    const rx_vmap *rows;    /* the row iterators -> the row variables */
    rx_stmt *lets[8];       /* the LETs made, outermost first (bodies filled later) */
    int n;
} rhoist;

/* e with its largest subexpressions free of the inner loop that load or call replaced
   by fresh variables, each bound by a LET before the loop (in h->lets). */
static rx_expr *hoist_cb(void *h, rx_expr *e);

static rx_expr *hoist(rhoist *h, rx_expr *e)
{
    if (!e) return e;
    bool inner = rx_expr_uses_var(e, h->k) || rx_expr_uses_var(e, h->ki);
    if (inner && e->kind == RX_E_SELECT) { /* an arm's loads are hoisted (run whichever arm
        is taken) only where in bounds: DGCNN's cat((x_j - x_i, x_i)) read channel c - 3 of
        3 on the first arm's rows, past the buffer on the last batch */
        rarms ah = {.B = h->B, .t = h->t};
        int cnt = 0;
        rx_expr *k[3] = {hoist(h, e->u.op.a), e->u.op.b, e->u.op.c};
        for (int i = 1; i < 3; i++)
            if (arm_loads_in_bounds(&ah, k[i], &cnt)) k[i] = hoist(h, k[i]);
        return rx_expr_with_children(h->B->a, e, k);
    }
    if (!inner && costly(e) && h->n < 8 && !(e->kind == RX_E_LOAD && e->u.load.nidx == 0)) {
        rx_arena *a = h->B->a;
        rx_svar *v = rx_svar_new(a, rx_arena_printf(a, "row%d", h->B->nrow++), (rx_dtype)e->dtype,
                                 RX_SV_LOOP, rx_module_new_id(h->B->m));
        h->lets[h->n++] = rx_s_let(a, v, rx_expr_subst(a, e, h->rows), (rx_stmts){0});
        return rx_e_var(a, v);
    }
    if (!inner) return e;
    return map_children(h->B->a, e, hoist_cb, h);
}

static rx_expr *hoist_cb(void *h, rx_expr *e)
{
    return hoist(h, e);
}

/* Elementwise inner loop `in` of nest t, vectorized, behind LETs of the per-row values
   its store computes (file essay: a row's statistic and its rsqrt once per row, not per
   element; a sqrtf per element also kept GCC from vectorizing the loop). */
static rx_stmt *elementwise(rbuild *B, const rnest *t, rx_stmt *in)
{
    in->u.for_.loop_kind = RX_LOOP_VECTORIZED;
    rx_vmap rows = {0};
    for (int i = 0; i < B->p; i++)
        rx_vmap_set(&rows, t->blk->u.block.iters[i].var, t->blk->u.block.iters[i].bind);
    rhoist h = {.B = B, .t = t, .k = in->u.for_.var, .ki = t->blk->u.block.iters[B->p].var, .rows = &rows};
    rx_stmt *st = (rx_stmt *)t->st;
    st->u.store.value = hoist(&h, st->u.store.value);
    rx_vmap_free(&rows);
    rarms arms = {.B = B, .t = t};
    st->u.store.value = eager_arms(&arms, st->u.store.value);
    t->blk->u.block.body.items[0] = wrap_arms(&arms, NULL, NULL, st);
    rx_stmt *s = in;
    for (int i = h.n - 1; i >= 0; i--) {
        h.lets[i]->u.let.body = rx_stmts_one(B->a, s);
        s = h.lets[i];
    }
    return s;
}

/* Nest t's part inside the fused row loop, written to out (at most LANE_STMTS
   statements; returns how many): the lanes of a reduction (every reduction of a run
   qualifies: fits), its inner loop vectorized when elementwise, or its block alone (a
   per-row scalar). t's row variables are B->rows already. */
static int inner_part(rbuild *B, rnest *t, rx_stmt **out)
{
    if (t->q == B->p) {
        out[0] = t->blk;
        return 1;
    }
    rx_stmt *in = (rx_stmt *)t->loops[t->q - 1];
    int n = t->reduce ? lanes(B, t, B->p, out) : 0;
    if (n) return n;
    out[0] = t->reduce ? in : elementwise(B, t, in);
    return 1;
}

/* Nest k of the run copied with fresh binders, its row loop variables replaced by the
   fused nest's (B->rows), re-matched. */
static void renamed(rbuild *B, rrun *r, int k, rnest *out)
{
    ft_copier c = {0};
    c.m = B->m;
    c.a = B->a;
    for (int i = 0; i < r->p; i++)
        rx_vmap_set(&c.vars, r->n[k].loops[i]->u.for_.var, rx_e_var(B->a, B->rows[i]));
    /* copy the part under the row loops, then rebuild the row chain around it */
    const rx_stmt *under = r->n[k].loops[r->p - 1];
    rx_stmts body = ft_copy_stmts(&c, &under->u.for_.body);
    ft_copier_free(&c);
    rx_stmt *s = body.items[0];
    for (int i = r->p - 1; i >= 0; i--)
        s = rx_s_for(B->a, B->rows[i], rx_e_int(B->a, 0), r->n[0].loops[i]->u.for_.extent,
                     RX_LOOP_SERIAL, rx_stmts_one(B->a, s));
    bool ok = match_nest(s, out);
    (void)ok; /* the same shape by construction */
    /* the copier gave the inner loop and its block iterator (one variable when the
       block was relax-json's implicit one) fresh variables of the same name; the block
       is explicit now (LETs, not loops, bind the rows), and an explicit iterator may
       not shadow a loop variable: the loop's gets the suffix the rows' have */
    rx_vmap vm = {0};
    rx_iter *its = out->blk->u.block.iters;
    for (int i = 0; i < r->p; i++)
        if (its[i].var == B->rows[i]) { /* the row's LET variable itself: a new iterator */
            rx_svar *iv = fresh_var(B, r->n[k].blk->u.block.iters[i].var->name);
            rx_vmap_set(&vm, its[i].var, rx_e_var(B->a, iv));
            its[i].var = iv;
        }
    rx_stmts *lists[2] = {&out->blk->u.block.init, &out->blk->u.block.body};
    for (int l = 0; l < 2 && vm.keys.n; l++)
        for (int j = 0; j < lists[l]->n; j++) {
            const rx_stmt *st = lists[l]->items[j];
            rx_expr **idx = RX_NEWN(B->a, rx_expr *, st->u.store.nidx > 0 ? st->u.store.nidx : 1);
            for (int q = 0; q < st->u.store.nidx; q++)
                idx[q] = rx_expr_subst(B->a, st->u.store.idx[q], &vm);
            lists[l]->items[j] = rx_s_store(B->a, st->u.store.buf, idx, st->u.store.nidx,
                                            rx_expr_subst(B->a, st->u.store.value, &vm));
        }
    out->st = out->blk->u.block.body.items[0];
    rx_vmap_free(&vm);
    if (out->q == r->p + 1) {
        rx_stmt *in = (rx_stmt *)out->loops[r->p];
        rx_svar *nv = fresh_var(B, rx_arena_printf(B->a, "%s_r", in->u.for_.var->name));
        in->u.for_.var = nv;
        out->blk->u.block.iters[r->p].bind = rx_e_var(B->a, nv);
    }
}

/* The fused nest of run r (file essay). */
static rx_stmt *build_run(rbuild *B, rrun *r)
{
    rx_arena *a = B->a;
    B->p = r->p;
    /* fresh row variables, named apart from the blocks' iterators (which keep the
       loops' names: a LET of the same name would shadow them in relax-json) */
    for (int i = 0; i < r->p; i++)
        B->rows[i] = fresh_var(B, rx_arena_printf(a, "%s_r", r->n[0].loops[i]->u.for_.var->name));
    rx_stmt **parts = RX_NEWN(a, rx_stmt *, (size_t)r->m * LANE_STMTS);
    int np = 0;
    for (int k = 0; k < r->m; k++) {
        rnest t;
        renamed(B, r, k, &t);
        np += inner_part(B, &t, parts + np);
    }
    rx_stmts body = rx_stmts_of(a, parts, np);
    /* g over the rows, each row variable a LET of its mixed-radix digit */
    rx_svar *g = fresh_var(B, "rows");
    rx_expr *stride = rx_e_int(a, 1), *total = rx_e_int(a, 1);
    for (int j = r->p - 1; j >= 0; j--) {
        rx_expr *ext = r->n[0].loops[j]->u.for_.extent;
        rx_expr *q = bin(B, RX_E_FLOORDIV, rx_e_var(a, g), stride);
        rx_expr *digit = j == 0 ? q : bin(B, RX_E_FLOORMOD, q, ext);
        body = rx_stmts_one(a, rx_s_let(a, B->rows[j], digit, body));
        stride = bin(B, RX_E_MUL, stride, ext);
    }
    total = stride;
    return rx_s_for(a, g, rx_e_int(a, 0), total, RX_LOOP_PARALLEL, body);
}

/* True when nest t fits run r (p row loops of the same extents, t's own shape, a
   reduction that takes the lanes form). */
static bool fits(rbuild *B, const rrun *r, const rnest *t)
{
    if (t->q != r->p && t->q != r->p + 1) return false;
    if (t->reduce && (t->q != r->p + 1 || !lanes(B, t, r->p, NULL))) return false;
    const rnest *f = r->m ? &r->n[0] : t;
    for (int i = 0; i < r->p; i++)
        if (!rx_expr_same(t->loops[i]->u.for_.extent, f->loops[i]->u.for_.extent)) return false;
    if (t->q == r->p + 1 && !t->reduce &&
        rx_expr_loads_buf(t->st->u.store.value, t->st->u.store.buf))
        return false; /* an elementwise inner loop reading its own output */
    return true;
}

/* ---------------------------------------------------------------- the walk */

/* True when run r is worth rewriting: it holds a reduction, or it has two row loops
   or more and starts with a symbolic one; the inner loops are not tiny. */
static bool worth(const rrun *r)
{
    bool reduce = false;
    int64_t e;
    for (int k = 0; k < r->m; k++) {
        const rnest *t = &r->n[k];
        reduce |= t->reduce;
        if (t->q == r->p + 1 && rx_expr_is_const(t->loops[r->p]->u.for_.extent, &e) &&
            e < MIN_INNER)
            return false;
    }
    bool inner = false;
    for (int k = 0; k < r->m; k++) inner |= r->n[k].q == r->p + 1;
    if (!inner) return false;
    /* an elementwise run over one row loop is parallel over it already (schedule.c) */
    return reduce || (r->p >= 2 && !rx_expr_is_const(r->n[0].loops[0]->u.for_.extent, &e));
}

/* The run starting at ss->items[i] (greedy: nests are added while they fit and keep
   the run legal); its length in *len (0: none). */
static bool find_run(rbuild *B, const rx_stmts *ss, int i, rrun *r, int *len)
{
    *len = 0;
    r->m = 0;
    r->out.n = 0;
    rnest first;
    if (ss->items[i]->kind != RX_S_FOR || !match_nest(ss->items[i], &first)) return false;
    r->p = first.reduce || first.q >= 2 ? first.q - 1 : first.q;
    for (int k = i; k < ss->n && r->m < MAX_RUN; k++) {
        rnest t;
        if (ss->items[k]->kind != RX_S_FOR || !match_nest(ss->items[k], &t)) break;
        if (!fits(B, r, &t)) break;
        r->n[r->m++] = t;
        RX_VEC_PUSH(r->out, t.st->u.store.buf);
        if (!run_legal(r)) {
            r->m--;
            r->out.n--;
            break;
        }
    }
    *len = r->m;
    return r->m > 0 && worth(r);
}

static int rows_list(rbuild *B, rx_stmts *ss)
{
    int n = 0;
    rrun r = {0};
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        int len = 0;
        if (s->kind == RX_S_FOR) {
            if (find_run(B, ss, i, &r, &len)) {
                ss->items[i] = build_run(B, &r);
                for (int k = i + 1; k + len - 1 < ss->n; k++) ss->items[k] = ss->items[k + len - 1];
                ss->n -= len - 1;
                n++;
            }
        } else if (s->kind == RX_S_BLOCK) {
            n += rows_list(B, &s->u.block.body);
        } else if (s->kind == RX_S_IF) {
            n += rows_list(B, &s->u.if_.then_s);
            n += rows_list(B, &s->u.if_.else_s);
        } else if (s->kind == RX_S_LET) {
            n += rows_list(B, &s->u.let.body);
        }
    }
    RX_VEC_FREE(r.out);
    return n;
}

bool rx_schedule_rows(rx_module *m, int *nruns, int *nlanes)
{
    rbuild B = {0};
    B.m = m;
    B.a = m->arena;
    B.ar = rx_arith_new(m->arena);
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) n += rows_list(&B, &m->funcs[i]->tbody);
    rx_arith_free(B.ar);
    if (nruns) *nruns = n;
    if (nlanes) *nlanes = B.nlanes;
    return true;
}
