/*
 * schedule_matvec.c — matrix-vector products at memory bandwidth (pipeline step 7b,
 * "schedule_matvec", right before schedule and its schedule_tile.c; issue 13, item 2).
 *
 * A decode step multiplies a few rows (M <= 16: one token per sequence) by a weight
 * matrix that is read once per call and is far larger than every cache level, so the
 * time is the weight's bytes over the memory bandwidth, if the kernel streams it: wide
 * loads along contiguous memory, enough independent accumulators, every core reading.
 * schedule_tile.c's plans were built for sgemm-sized products (register tiles of 6 x
 * 16, packed panels) and read an (N, K) weight through a transposing copy, one column
 * at a time; this step gives such nests a plan of their own. It runs as the pipeline's
 * own step, schedule_matvec (`--disable-pass schedule_matvec`: the A/B in
 * docs/passes.md), right before schedule.
 *
 * Which products reach it on the CPU: library lowering gives a symbolic row count, and
 * a symbolic batch of rows times a 2-d weight (decode's (b, 1, k) @ W), to the runtime's
 * few-row product (runtime/library_matvec.c, measured 2-3x this file's columns plan's
 * bandwidth at b = 4 on the Zen 5 build machine), so this step sees literal row counts,
 * products with a weight per batch item (attention's), fused producers the library
 * patterns do not take, `--lib none`, and the GPU targets.
 *
 * What is rewritten: a top-level nest of the tensor-expression builder's reduction
 * shape (the one schedule_tile.c describes: spatial loops s_1 .. s_p, then exactly one
 * reduce loop K; a block whose iterators are bound to exactly those variables; body
 * C[s] = UPD, init C[s] = INIT optional, UPD loading C only at C[s]) where, with J =
 * s_p (C's last index):
 *   - C's dtype is f32 or f64 (a half-precision sum rounds at every step: reassociating
 *     it would move results far more) and UPD is C[s] + E or E + C[s], E
 *     loading no C (a sum of products: matmul, batch matmul, their fused producers);
 *   - the weight: some load W of E (the first, left to right) has indices that use K
 *     and J; the spatial loops other than J whose iterators W's indices use are the
 *     batch loops (attention's batch and heads: a weight per (b, h)), the others are
 *     the rows;
 *   - the vector: some other load of E uses K and not J (x[.., k]: a product, not a
 *     plain row sum, which keeps its exact order in schedule_tile.c);
 *   - at most one row loop has an extent other than the literal 1 (x (m, k), (b, 1, k),
 *     (b, h, 1, d)); its extent R, the row count, is a literal <= the plan's most rows
 *     (16 dots, 4 columns, below) or symbolic (then the rewritten nest runs under IF
 *     (R <= that) and the original nest, which schedule_tile.c tiles next, is the ELSE;
 *     the columns plan of a long-rowed weight also needs R >= 2, below);
 *   - W's last index steps by exactly 1 with J (W stored (K, N): "columns") or with K
 *     (W stored (N, K), read as matmul(x, permute_dims(w)) or through any producer
 *     whose index arithmetic proves it: "dots"), and the weight is not tiny (a literal
 *     N * K below MIN_VOLUME is left alone). A weight contiguous only in its flat
 *     offset (W[j, k // 4, k % 4]) is not proved so and keeps schedule_tile.c's plans.
 *
 * The columns plan (W (K, N)): J in tiles of NB = 64 bytes of elements (16 f32: two
 * AVX2 vectors, each an unrolled jc of a vectorized jl), rows in one tile of MR = 4
 * (the literal count when smaller), K in blocks of KB = 128:
 *
 *   for batch loops (kept, in order)
 *     for jo in range(ceil(N / NB)):                  parallel (see below)
 *       for ko in range(ceil(K / KB)):
 *         for ro in range(ceil(R / MR)):              (only with rows)
 *           acc = alloc local (MR, NB)
 *           for ri, jj: acc[ri, jj] = ko == 0 ? INIT : C[.., r, j]   (C without INIT)
 *           for kk in range(min(KB, K - ko * KB)):
 *             for ri (unrolled) for jj: acc[ri, jj] = UPD[C := acc, k := ko * KB + kk]
 *           for ri, jj: C[.., r, j] = acc[ri, jj]
 *
 * (r = ro * MR + ri, j = jo * NB + jj; a tile that may run past N is an IF of the full
 * tile with literal extents and a partial one with min extents; rows past the last full
 * row tile run one at a time, each a tile of one literal row, so b = 1 keeps its
 * accumulators in registers.) The 4 x 2 vector accumulators stay in registers; a K
 * block spans KB rows of W, 128 pages at most, which the TLB holds while the rows of a
 * tile reuse them, and C carries the running sums between blocks. Every element keeps
 * its reduction order: results are bit-identical to the untiled nest. Why only up to 4
 * rows: with more, each row tile re-reads the block's rows of W (N * e bytes apart, so
 * they fall in a few L1 sets) from L2; schedule_tile.c's rows-from-the-batch plan packs
 * the panel first and measured faster at b = 16 (6.6-6.9 ms against 7.1-11 ms here on
 * one thread, x (16, 1, 1024) @ (1024, 2816)). And not one row of a weight with rows
 * longer than WIDE_ONE_ROW (64) elements (a literal row count of 1, no row loop, or the
 * symbolic count, then under IF (2 <= R <= 4)): schedule_tile.c's one-row plan reads 4 KB
 * of each row of W at a time, which the prefetchers follow across the row; in a decoder
 * block's decode step at b = 1 (minimum kernel times, old and new interleaved, load
 * about 25) the projections took 490 -> 642 us (1024 x 1024), 1758 -> 2394 us (2816 x
 * 1024) with this plan. Attention's probs @ v (64 columns per head) gained (107 -> 77 us).
 *
 * The split plan (one row of a W (K, N) of at least SPLIT_MIN_BYTES, 128 KiB, with literal
 * N and K, no batch loop: a decode projection at b = 1). Every plan above splits the
 * columns among the threads, so each thread reads a piece of every row of W: 1 KB of
 * each 4 KB row of a 1024-column weight per pass, a new page every kilobyte, which the
 * prefetchers follow badly (one row at 1024 columns read ~9.5 GB/s where a plain read
 * of the same bytes on the two threads took ~19). This plan splits K instead: SLICES = 4
 * slices of whole rows of W, each a contiguous range of memory, the parallel loop (a
 * thread's static share of slices is one contiguous range), each slice summed into an
 * L1 accumulator of up to SPLIT_BYTES (4 KiB) of columns, then the slices' sums added
 * in slice order:
 *
 *   part = alloc global (SLICES, N)                   (the heap, outside the region)
 *   for ks in range(SLICES):                          parallel
 *     for so in range(ceil(N / NS)):                  NS = 4 KiB of elements
 *       acc = alloc local (NS), zeroed
 *       for kk in range((k1 - k0) // 4):              k0 = ks * K // SLICES, k1 likewise
 *         for si (vectorized): acc[si] = U(k + 3, U(k + 2, U(k + 1, U(k, acc[si]))))
 *                                                     (U(k, a) = UPD[C := a, k, j := so * NS + si],
 *                                                      k = k0 + 4 kk)
 *       for kt in range((k1 - k0) % 4): the same, one row (k = the rows left)
 *       for si (vectorized): part[ks, j] = acc[si]
 *   for sj in range(N) (vectorized): C[.., sj] = (((INIT (or C) + part[0, sj]) + part[1, sj]) + ..)
 *
 * (the partial column tile has extent min(NS, N - so * NS); four rows per update add in
 * row order, the same sums as one row at a time, with a quarter of acc's loads and stores:
 * the decoder block's decode b = 1, O2, minimum of 30 calls alternated, load 8.6-9.7:
 * gqa 3.40 -> 2.48 ms, pt 4.02 -> 3.19 ms). A literal one row is this
 * alone, its statements under a LET of the slice count (the rewrite replaces one
 * statement); a symbolic row count R gets IF (R == 1) this ELSE the plans above. The sum
 * is reassociated as in the dots plan: each slice sums its K / 4 terms in order, then
 * INIT and the 4 slice sums are added in slice order, the same whatever the thread count:
 * the bound (K / 4 + 4) * eps * sum |x_k w_k| and the same checked tolerance. Measured in
 * one run (load 3-4, relax-run --bench minimum, main's plan and this one alternated):
 * x (1, 2816) @ W (2816, 1024) 1.20-1.41 -> 0.42-0.49 ms, x (1, 1024) @ W (1024, 2816)
 * 0.85-0.86 -> 0.62 ms, x (b, 1, 2816) @ W at b = 1 1.67 -> 0.63 ms.
 *
 * The dots plan (W (N, K)): each output is a dot product of a row of W with a row of
 * x along K, which is contiguous in both, so K is split into LANES = 32 bytes of
 * elements (8 f32: one AVX2 vector) summed side by side, JR = 4 rows of W by MR = 3
 * rows of x per tile (12 vector accumulators, W's 4 vectors and x's: the 16 AVX2
 * registers):
 *
 *   for batch loops
 *     for jo in range(ceil(N / JR)):                  parallel
 *       for ro in range(ceil(R / MR)):
 *         acc = alloc local (MR, JR, LANES), zeroed
 *         for ko in range(K // LANES):
 *           for ri (unrolled) for jr (unrolled) for l (vectorized):
 *             acc[ri, jr, l] = acc[ri, jr, l] + E[k := ko * LANES + l]
 *         for kt in range(K % LANES): for ri, jr: acc[ri, jr, kt] += E[k := K // LANES * LANES + kt]
 *         for ri, jr: C[.., r, j] = INIT (or C[..]); for l: C[.., r, j] = C[.., r, j] + acc[ri, jr, l]
 *
 * Four streams of W (one per row) are read in order, each within its pages, which the
 * prefetchers follow: one thread measured 13-14 GB/s here where one sequential stream
 * (and the columns plan) reads about 8. This reassociates the sum: lane l adds the terms
 * k = l (mod 8) in order, then INIT and the 8 lane sums are added in lane order. The
 * result is no longer bit-identical to the untiled nest (O0): each lane's partial sum
 * has at most K / 8 terms, so the bound on the rounding error, (K / 8 + 8) * eps *
 * sum |x_k w_k|, is below the sequential sum's K * eps * sum |x_k w_k|. Agreement with
 * O0 and with a float64 product is checked within 1e-5 * sqrt(K) * (1 + max |result|)
 * (tests/unit/pass/test_schedule_matvec.c; tests/bench/bench_kernels.py's matvec section
 * checks 1e-5 * sqrt(K) * max |float64 result|); docs/passes.md states it.
 *
 * Which loop is parallel: the first batch loop with a literal extent >= 2 (attention's
 * heads), else jo when its extent is not a literal < FEW_TILES (8), else the first
 * symbolic batch loop, else jo when its extent is not a literal < 2. A few column tiles
 * are too little work to split under a serial batch loop: a two-tower model's mean of
 * history embeddings (b = 1024 rows of 50 gathered 64-wide embeddings, a weight per
 * batch row, jo of 4 tiles) stayed under the kernels' parallel-if threshold in every
 * iteration and ran on one thread; with the batch loop parallel its minimum took 17.1 ->
 * 8.3 ms at two threads (zoo8 two_tower, relax-run --profile, 20 calls, load 5-7); the
 * whole model, main's build and this one alternated (relax-run --bench, 20 calls each):
 * 5 rounds at load 5.5, medians 7.5-20.1 -> 6.7-17.0 ms, minimums 6.4 -> 5.4 ms; 6 rounds
 * at load 6.4-7.0 (RX_THREADS_ADAPT=0), medians 70-257 -> 23-113 ms, minimums 32-45 ->
 * 11-31 ms (ONNX Runtime 9-13 ms on the same machine that hour).
 * Legal as in schedule_tile.c: distinct iterations of a batch loop or of jo write
 * disjoint elements of C, each read of C is of an element the same iteration wrote,
 * acc is allocated inside the iteration. schedule.c then finds no other parallel loop.
 * The threads are the kernels' OpenMP pool, which BLAS calls share (runtime/threads.c):
 * `relax-run --threads N` sets both.
 *
 * Cost: linear in the nest; the new nest holds E (or UPD) up to four times (full and
 * partial tiles, the K tail), once more for the split plan under a symbolic R, and the
 * original nest once more under a symbolic R.
 */
#include <string.h>

#include "relax/pass.h"

enum {
    MAX_LOOPS = 16,   /* loops of a nest that can be rewritten */
    MAX_ROWS = 16,    /* most rows (decode's batch) that count as matrix-vector */
    FEW_TILES = 8,    /* jo extents below which a symbolic batch loop is the parallel one */
    MIN_VOLUME = 4096, /* literal N * K below which the nest is left alone */
    MR_COLS = 4,      /* rows per columns tile */
    MR_DOTS = 3,      /* rows per dots tile */
    COL_BYTES = 64,   /* bytes of a columns tile along J (16 f32: two AVX2 vectors) */
    LANE_BYTES = 32,  /* bytes of the dots plan's lanes along K (8 f32: one AVX2 vector) */
    JR_DOTS = 4,      /* rows of W per dots tile */
    KB_COLS = 128,    /* rows of W per K block of the columns plan (the pages it spans) */
    WIDE_ONE_ROW = 64, /* most columns of a one-row columns nest the columns plan takes */
    SPLIT_SLICES = 4,  /* K slices of the split plan (the parallel loop's iterations) */
    SPLIT_BYTES = 4096, /* bytes of a split tile's row of W (its L1 accumulator) */
    SPLIT_UNROLL = 4,   /* rows of W per update of the split plan's accumulator */
    SPLIT_MIN_BYTES = 131072 /* literal weight bytes below which one row is not split */
};

/* One matched nest and its plan. */
typedef struct mvn {
    rx_module *m;
    rx_arena *a;
    rx_stmt *loops[MAX_LOOPS];     /* the chain, outermost first */
    const rx_iter *its[MAX_LOOPS]; /* the block iterator of each loop */
    int n;                         /* loops (spatial p = n - 1, then K) */
    const rx_stmt *blk;
    rx_buffer *C;
    rx_expr *init, *upd, *e;       /* INIT (or NULL), UPD, and E of UPD = C + E */
    const rx_expr *w;              /* the weight load */
    bool batch[MAX_LOOPS];         /* spatial loops W uses (J excluded) */
    int row;                       /* the row loop (extent not a literal 1), or -1 */
    bool dots;                     /* W's last index steps with K */
    int64_t mr, nb, lanes, kb;     /* tile sizes (kb: the columns plan's K block) */
    rx_svar *jo, *jj, *jc, *jl, *ro, *ri, *rr, *ko, *kl; /* new loop variables */
    bool split;                    /* one row of a (K, N) weight: the split plan */
} mvn;

/* ---------------------------------------------------------------- matching */

static bool is_var(const rx_expr *e, const rx_svar *v)
{
    return e && e->kind == RX_E_VAR && e->u.var == v;
}

/* True when e is the load C[vars[0], .., vars[p - 1]]. */
static bool is_c(const mvn *t, const rx_expr *e)
{
    int p = t->n - 1;
    if (!e || e->kind != RX_E_LOAD || e->u.load.buf != t->C || e->u.load.nidx != p) return false;
    for (int k = 0; k < p; k++)
        if (!is_var(e->u.load.idx[k], t->its[k]->var)) return false;
    return true;
}

static bool idx_uses(const rx_expr *ld, const rx_svar *v)
{
    for (int i = 0; i < ld->u.load.nidx; i++)
        if (rx_expr_uses_var(ld->u.load.idx[i], v)) return true;
    return false;
}

/* The first load of e (left to right, not of C) whose indices use a and, when b, b;
   and not c when c. */
static const rx_expr *find_load(const mvn *t, const rx_expr *e, const rx_svar *a,
                                const rx_svar *b, const rx_svar *c, const rx_expr *skip)
{
    if (!e) return NULL;
    if (e->kind == RX_E_LOAD && e != skip && e->u.load.buf != t->C && idx_uses(e, a) &&
        (!b || idx_uses(e, b)) && (!c || !idx_uses(e, c)))
        return e;
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        const rx_expr *r = find_load(t, rx_expr_child(e, i), a, b, c, skip);
        if (r) return r;
    }
    return NULL;
}

static bool float_dtype(rx_dtype d)
{
    return d == RX_DT_F32 || d == RX_DT_F64;
}

/* The single STORE of a statement list at exactly C[iterators], or NULL. */
static const rx_stmt *c_store(const mvn *t, const rx_stmts *ss)
{
    if (ss->n != 1 || ss->items[0]->kind != RX_S_STORE) return NULL;
    const rx_stmt *st = ss->items[0];
    int p = t->n - 1;
    if (st->u.store.buf != t->C || st->u.store.nidx != p) return NULL;
    for (int k = 0; k < p; k++)
        if (!is_var(st->u.store.idx[k], t->its[k]->var)) return NULL;
    return st;
}

/* Matches FOR s (file essay); fills the nest part of *t. */
static bool match(rx_stmt *s, mvn *t)
{
    rx_stmt *cur = s;
    while (cur->kind == RX_S_FOR) {
        if (t->n == MAX_LOOPS || cur->u.for_.body.n != 1 || cur->u.for_.thread ||
            cur->u.for_.loop_kind != RX_LOOP_SERIAL || !rx_expr_is_int(cur->u.for_.min, 0))
            return false;
        t->loops[t->n++] = cur;
        cur = cur->u.for_.body.items[0];
    }
    if (cur->kind != RX_S_BLOCK || t->n < 2 || cur->u.block.niters != t->n) return false;
    t->blk = cur;
    for (int k = 0; k < t->n; k++) {
        const rx_iter *it = &cur->u.block.iters[k];
        if (!is_var(it->bind, t->loops[k]->u.for_.var)) return false;
        if (it->kind != (k < t->n - 1 ? RX_ITER_SPATIAL : RX_ITER_REDUCE)) return false;
        t->its[k] = it;
        for (int j = 0; j < t->n; j++)
            if (rx_expr_uses_var(t->loops[k]->u.for_.extent, t->loops[j]->u.for_.var) ||
                rx_expr_uses_var(t->loops[k]->u.for_.extent, cur->u.block.iters[j].var))
                return false;
    }
    if (cur->u.block.body.n != 1 || cur->u.block.body.items[0]->kind != RX_S_STORE) return false;
    t->C = cur->u.block.body.items[0]->u.store.buf;
    if (!float_dtype((rx_dtype)t->C->dtype)) return false;
    const rx_stmt *body = c_store(t, &cur->u.block.body);
    if (!body) return false;
    t->upd = body->u.store.value;
    if (t->upd->kind != RX_E_ADD) return false;
    rx_expr *l = t->upd->u.op.a, *r = t->upd->u.op.b;
    t->e = is_c(t, l) ? r : is_c(t, r) ? l : NULL;
    if (!t->e || rx_expr_loads_buf(t->e, t->C)) return false;
    if (cur->u.block.init.n) {
        const rx_stmt *init = c_store(t, &cur->u.block.init);
        if (!init || rx_expr_loads_buf(init->u.store.value, t->C)) return false;
        const rx_stmt *kl = t->loops[t->n - 1];
        if (rx_expr_uses_var(init->u.store.value, t->its[t->n - 1]->var) ||
            rx_expr_uses_var(init->u.store.value, kl->u.for_.var))
            return false;
        t->init = init->u.store.value;
    }
    return true;
}

static rx_expr *ext_of(const mvn *t, int k) { return t->loops[k]->u.for_.extent; }

/* The most rows the plan takes: 16 dots; one tile of columns (file essay). */
static int64_t max_rows(const mvn *t) { return t->dots ? MAX_ROWS : MR_COLS; }

/* The fewest rows the plan takes: 2 for columns of a weight with long rows (N not a
   literal <= WIDE_ONE_ROW), whose one row schedule_tile.c streams faster (file essay);
   else 1. */
static int64_t min_rows(const mvn *t)
{
    int64_t nv;
    if (t->dots) return 1;
    return rx_expr_is_const(ext_of(t, t->n - 2), &nv) && nv <= WIDE_ONE_ROW ? 1 : 2;
}

/* The split plan takes the nest (file essay): columns, no batch loop, one row (none
   but literal-1 rows, or a symbolic row count, then under IF (R == 1)), literal N and K
   with K >= SPLIT_SLICES and a weight of at least SPLIT_MIN_BYTES. */
static bool split_ok(const mvn *t)
{
    int p = t->n - 1;
    int64_t nv, kv, esz = rx_dtype_bits((rx_dtype)t->C->dtype) / 8;
    if (t->dots || (t->row >= 0 && rx_expr_is_const(ext_of(t, t->row), NULL))) return false;
    for (int k = 0; k < p - 1; k++)
        if (t->batch[k]) return false;
    return rx_expr_is_const(ext_of(t, p - 1), &nv) && rx_expr_is_const(ext_of(t, p), &kv) &&
           kv >= SPLIT_SLICES && nv * kv * esz >= SPLIT_MIN_BYTES;
}

/* The weight, the vector, the rows and the layout (file essay). */
static bool classify(mvn *t)
{
    int p = t->n - 1;
    const rx_svar *kv = t->its[p]->var, *jv = t->its[p - 1]->var;
    t->w = find_load(t, t->e, kv, jv, NULL, NULL);
    if (!t->w || !find_load(t, t->e, kv, NULL, jv, t->w)) return false;
    t->row = -1;
    int64_t ext;
    for (int k = 0; k < p - 1; k++) {
        t->batch[k] = idx_uses(t->w, t->its[k]->var) ||
                      idx_uses(t->w, t->loops[k]->u.for_.var);
        if (t->batch[k]) continue;
        if (rx_expr_is_const(t->loops[k]->u.for_.extent, &ext) && ext == 1) continue;
        if (t->row >= 0) return false; /* two row loops */
        t->row = k;
    }
    int64_t nv, kx;
    if (rx_expr_is_const(t->loops[p - 1]->u.for_.extent, &nv) &&
        rx_expr_is_const(t->loops[p]->u.for_.extent, &kx) && nv * kx < MIN_VOLUME)
        return false;
    rx_arith *ar = rx_arith_new(t->a);
    bool cols = rx_load_unit_step(ar, t->a, t->w, jv);
    t->dots = !cols && rx_load_unit_step(ar, t->a, t->w, kv);
    rx_arith_free(ar);
    if (!cols && !t->dots) return false;
    t->split = split_ok(t);
    if (t->row >= 0 && rx_expr_is_const(ext_of(t, t->row), &ext) && ext > max_rows(t)) return false;
    if (cols && min_rows(t) > 1 && (t->row < 0 || (rx_expr_is_const(ext_of(t, t->row), &ext) && ext < 2)))
        return t->split; /* one row: split, or schedule_tile.c's one-row plan */
    return true;
}

/* ---------------------------------------------------------------- building */

static rx_expr *lit(mvn *t, int64_t v) { return rx_e_int(t->a, v); }
static rx_expr *var(mvn *t, const rx_svar *v) { return rx_e_var(t->a, v); }
static rx_expr *bin(mvn *t, rx_ekind k, rx_expr *x, rx_expr *y) { return rx_e_binary(t->a, k, x, y); }

static rx_svar *new_var(mvn *t, const rx_svar *base, const char *suffix)
{
    const char *name = rx_arena_printf(t->a, "%s_%s", base->name, suffix);
    return rx_svar_new(t->a, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(t->m));
}

static rx_stmt *mk_for(mvn *t, const rx_svar *v, rx_expr *extent, rx_loopkind kind,
                       rx_stmts body)
{
    return rx_s_for(t->a, v, lit(t, 0), extent, kind, body);
}

static rx_stmt *for1(mvn *t, const rx_svar *v, rx_expr *extent, rx_loopkind kind, rx_stmt *s)
{
    return mk_for(t, v, extent, kind, rx_stmts_one(t->a, s));
}

/* o * sz + in */
static rx_expr *tiled(mvn *t, const rx_svar *o, int64_t sz, const rx_svar *in)
{
    return bin(t, RX_E_ADD, bin(t, RX_E_MUL, var(t, o), lit(t, sz)), var(t, in));
}

/* min(sz, x - o * sz): a partial tile's extent */
static rx_expr *part(mvn *t, rx_expr *x, const rx_svar *o, int64_t sz)
{
    return bin(t, RX_E_MIN, lit(t, sz), bin(t, RX_E_SUB, x, bin(t, RX_E_MUL, var(t, o), lit(t, sz))));
}

/* ceil(x / sz) */
static rx_expr *ceil_div(mvn *t, rx_expr *x, int64_t sz)
{
    int64_t v;
    if (rx_expr_is_const(x, &v)) return lit(t, (v + sz - 1) / sz);
    return bin(t, RX_E_FLOORDIV, bin(t, RX_E_ADD, x, lit(t, sz - 1)), lit(t, sz));
}

/* True when literal x is a multiple of sz (tiles never run past it). */
static bool always_full(const rx_expr *x, int64_t sz)
{
    int64_t v;
    return rx_expr_is_const(x, &v) && v % sz == 0;
}

/* Maps iterator and loop variable of loop k to value. */
static void map2(mvn *t, rx_vmap *sub, int k, rx_expr *value)
{
    rx_vmap_set(sub, t->its[k]->var, value);
    rx_vmap_set(sub, t->loops[k]->u.for_.var, value);
}

/* The substitution of a tile: batch iterators -> their loops, rows -> r, literal-1 rows
   -> 0, J -> j; K is mapped by the caller. */
static void tile_map(mvn *t, rx_vmap *sub, rx_expr *r, rx_expr *j)
{
    int p = t->n - 1;
    for (int k = 0; k < p - 1; k++)
        map2(t, sub, k, t->batch[k] ? var(t, t->loops[k]->u.for_.var) : k == t->row ? r : lit(t, 0));
    map2(t, sub, p - 1, j);
}

/* A copy of e with every load of C replaced by repl. */
static rx_expr *swap_c(mvn *t, rx_expr *e, rx_expr *repl)
{
    if (e->kind == RX_E_LOAD && e->u.load.buf == t->C) return repl;
    int n = rx_expr_nchildren(e);
    if (!n) return e;
    rx_expr **kids = RX_NEWN(t->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        kids[i] = swap_c(t, rx_expr_child(e, i), repl);
        changed |= kids[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(t->a, e, kids) : e;
}

static rx_buffer *acc_buffer(mvn *t, const int64_t *dims, int nd)
{
    rx_buffer *acc = RX_NEW(t->a, rx_buffer);
    acc->name = rx_arena_printf(t->a, "%s_mv", t->C->name);
    acc->dtype = t->C->dtype;
    acc->ndim = nd;
    acc->shape = RX_NEWN(t->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) acc->shape[i] = lit(t, dims[i]);
    acc->scope = RX_SCOPE_LOCAL;
    acc->id = rx_module_new_id(t->m);
    return acc;
}

static rx_stmt *store(mvn *t, rx_buffer *b, rx_expr **idx, int n, rx_expr *v)
{
    return rx_s_store(t->a, b, rx_arena_dup(t->a, idx, sizeof(rx_expr *) * (size_t)n), n, v);
}

/* C[.., r, j] (its indices under sub) */
static rx_expr **c_index(mvn *t, const rx_vmap *sub)
{
    int p = t->n - 1;
    const rx_stmt *st = t->blk->u.block.body.items[0];
    rx_expr **idx = RX_NEWN(t->a, rx_expr *, p);
    for (int k = 0; k < p; k++) idx[k] = rx_expr_subst(t->a, st->u.store.idx[k], sub);
    return idx;
}

/* The columns loops around s: jc (unrolled) over vectors of LANES x jl (vectorized)
   for a full tile (vec), else jj (vectorized) over nb_e. */
static rx_stmt *jloop(mvn *t, bool vec, rx_expr *nb_e, rx_stmt *s)
{
    if (!vec) return for1(t, t->jj, nb_e, RX_LOOP_VECTORIZED, s);
    return for1(t, t->jc, lit(t, t->nb / t->lanes), RX_LOOP_UNROLLED,
                for1(t, t->jl, lit(t, t->lanes), RX_LOOP_VECTORIZED, s));
}

/* The statements of one tile: mr rows from row rbase (ri's literal extent) by nb_e
   columns (jj's). */
static rx_stmts tile_body(mvn *t, rx_expr *rbase, int64_t mr, rx_expr *nb_e)
{
    int p = t->n - 1;
    rx_arena *a = t->a;
    rx_expr *mr_e = lit(t, mr);
    rx_expr *r = rbase ? bin(t, RX_E_ADD, rbase, var(t, t->ri)) : lit(t, 0);
    int64_t nbv;
    bool vec = !t->dots && rx_expr_is_const(nb_e, &nbv) && nbv == t->nb && nbv % t->lanes == 0;
    rx_expr *jidx = vec ? tiled(t, t->jc, t->lanes, t->jl) : var(t, t->jj);
    rx_expr *j = bin(t, RX_E_ADD, bin(t, RX_E_MUL, var(t, t->jo), lit(t, t->nb)), jidx);
    rx_vmap sub = {0};
    tile_map(t, &sub, r, j);
    rx_expr **cidx = c_index(t, &sub);
    rx_expr *cur = rx_e_load(a, t->C, cidx, p);
    rx_expr *initv = t->init ? rx_expr_subst(a, t->init, &sub) : cur;
    rx_loopkind rk = mr > 1 ? RX_LOOP_UNROLLED : RX_LOOP_SERIAL;
    rx_stmt *items[5];
    int ni = 0;
    if (!t->dots) {
        int64_t dims[2] = {mr, t->nb};
        rx_buffer *acc = acc_buffer(t, dims, 2);
        rx_expr *ai[2] = {var(t, t->ri), jidx};
        rx_expr *accv = rx_e_load(a, acc, ai, 2);
        map2(t, &sub, p, tiled(t, t->ko, t->kb, t->kl));
        rx_expr *upd = rx_expr_subst(a, swap_c(t, t->upd, accv), &sub);
        if (t->init) /* K blocks after the first start from C */
            initv = rx_e_select(a, bin(t, RX_E_EQ, var(t, t->ko), lit(t, 0)), initv, cur);
        items[ni++] = rx_s_alloc(a, acc);
        items[ni++] = for1(t, t->ri, mr_e, RX_LOOP_SERIAL, jloop(t, vec, nb_e, store(t, acc, ai, 2, initv)));
        rx_stmt *red = for1(t, t->ri, mr_e, rk, jloop(t, vec, nb_e, store(t, acc, ai, 2, upd)));
        rx_expr *kx = always_full(ext_of(t, p), t->kb) ? lit(t, t->kb) : part(t, ext_of(t, p), t->ko, t->kb);
        items[ni++] = for1(t, t->kl, kx, RX_LOOP_SERIAL, red);
        items[ni++] = for1(t, t->ri, mr_e, RX_LOOP_SERIAL, jloop(t, vec, nb_e, store(t, t->C, cidx, p, accv)));
    } else {
        int64_t dims[3] = {mr, t->nb, t->lanes};
        rx_buffer *acc = acc_buffer(t, dims, 3);
        rx_expr *K = ext_of(t, p);
        rx_expr *ai[3] = {var(t, t->ri), var(t, t->jj), var(t, t->kl)};
        rx_expr *accv = rx_e_load(a, acc, ai, 3);
        rx_dtype dt = (rx_dtype)t->C->dtype;
        items[ni++] = rx_s_alloc(a, acc);
        items[ni++] = for1(t, t->ri, mr_e, RX_LOOP_SERIAL, for1(t, t->jj, nb_e, RX_LOOP_SERIAL,
                           for1(t, t->kl, lit(t, t->lanes), RX_LOOP_VECTORIZED,
                                store(t, acc, ai, 3, rx_e_float(a, 0.0, dt)))));
        /* main: k = ko * LANES + l */
        rx_expr *kbase = bin(t, RX_E_MUL, bin(t, RX_E_FLOORDIV, K, lit(t, t->lanes)), lit(t, t->lanes));
        map2(t, &sub, p, tiled(t, t->ko, t->lanes, t->kl));
        rx_expr *e = rx_expr_subst(a, t->e, &sub);
        rx_stmt *red = for1(t, t->ri, mr_e, rk, for1(t, t->jj, nb_e, RX_LOOP_UNROLLED,
                            for1(t, t->kl, lit(t, t->lanes), RX_LOOP_VECTORIZED,
                                 store(t, acc, ai, 3, bin(t, RX_E_ADD, accv, e)))));
        items[ni++] = for1(t, t->ko, bin(t, RX_E_FLOORDIV, K, lit(t, t->lanes)), RX_LOOP_SERIAL, red);
        if (!always_full(K, t->lanes)) { /* the tail: k = K // LANES * LANES + kt, lane kt */
            map2(t, &sub, p, bin(t, RX_E_ADD, kbase, var(t, t->kl)));
            rx_expr *et = rx_expr_subst(a, t->e, &sub);
            rx_stmt *tail = for1(t, t->ri, mr_e, RX_LOOP_SERIAL, for1(t, t->jj, nb_e, RX_LOOP_SERIAL,
                                 store(t, acc, ai, 3, bin(t, RX_E_ADD, accv, et))));
            items[ni++] = for1(t, t->kl, bin(t, RX_E_SUB, K, kbase), RX_LOOP_SERIAL, tail);
        }
        rx_stmt *fin[2] = {store(t, t->C, cidx, p, initv),
                           for1(t, t->kl, lit(t, t->lanes), RX_LOOP_SERIAL,
                                store(t, t->C, cidx, p, bin(t, RX_E_ADD, cur, accv)))};
        items[ni++] = for1(t, t->ri, mr_e, RX_LOOP_SERIAL,
                           mk_for(t, t->jj, nb_e, RX_LOOP_SERIAL, rx_stmts_of(a, fin, 2)));
    }
    rx_vmap_free(&sub);
    return rx_stmts_of(a, items, ni);
}

/* The tiles of one jo: the full body with literal extents, or IF (it fits) full ELSE
   partial: columns min(NB, N - jo * NB) wide, and the rows left past the last full row
   tile one at a time (a tile of one literal row: b = 1 keeps its registers). */
static rx_stmts tile(mvn *t)
{
    int p = t->n - 1;
    rx_arena *a = t->a;
    rx_expr *R = t->row >= 0 ? ext_of(t, t->row) : NULL, *N = ext_of(t, p - 1);
    bool fr = !t->ro || always_full(R, t->mr), fj = always_full(N, t->nb);
    rx_expr *rbase = t->ro ? bin(t, RX_E_MUL, var(t, t->ro), lit(t, t->mr)) : NULL;
    rx_expr *nb_e = fj ? lit(t, t->nb) : part(t, N, t->jo, t->nb);
    rx_stmts cols = tile_body(t, rbase, t->mr, lit(t, t->nb));
    if (!fj) { /* jo * NB + NB <= N */
        rx_expr *cj = bin(t, RX_E_LE, bin(t, RX_E_ADD, bin(t, RX_E_MUL, var(t, t->jo), lit(t, t->nb)),
                                          lit(t, t->nb)), N);
        cols = rx_stmts_one(a, rx_s_if(a, cj, cols, tile_body(t, rbase, t->mr, nb_e)));
    }
    if (fr) return cols;
    /* rows: IF (ro * MR + MR <= R) the tile ELSE for rr in range(R - ro * MR): one row */
    rx_expr *left = bin(t, RX_E_SUB, R, rbase);
    rx_expr *one = bin(t, RX_E_ADD, rbase, var(t, t->rr));
    rx_stmts single = tile_body(t, one, 1, nb_e);
    rx_stmt *rest = mk_for(t, t->rr, left, RX_LOOP_SERIAL, single);
    rx_expr *cr = bin(t, RX_E_LE, bin(t, RX_E_ADD, rbase, lit(t, t->mr)), R);
    return rx_stmts_one(a, rx_s_if(a, cr, cols, rx_stmts_one(a, rest)));
}

/* The rewritten nest (file essay), without the IF of a symbolic R. */
static rx_stmt *build(mvn *t)
{
    int p = t->n - 1;
    int bits = rx_dtype_bits((rx_dtype)t->C->dtype);
    int64_t esz = bits >= 8 ? bits / 8 : 1, v;
    const rx_svar *jv = t->loops[p - 1]->u.for_.var, *kv = t->loops[p]->u.for_.var;
    rx_expr *R = t->row >= 0 ? ext_of(t, t->row) : NULL, *N = ext_of(t, p - 1);
    t->mr = R ? (t->dots ? MR_DOTS : MR_COLS) : 1;
    if (R && rx_expr_is_const(R, &v) && v < t->mr) t->mr = v;
    t->nb = t->dots ? JR_DOTS : COL_BYTES / esz;
    if (rx_expr_is_const(N, &v) && v < t->nb) t->nb = v;
    t->lanes = LANE_BYTES / esz;
    t->kb = KB_COLS;
    if (rx_expr_is_const(ext_of(t, p), &v) && v < t->kb) t->kb = v > 0 ? v : 1;
    t->jo = new_var(t, jv, "mo");
    t->jj = new_var(t, jv, "mi");
    t->jc = new_var(t, jv, "mc");
    t->jl = new_var(t, jv, "ml");
    t->ri = new_var(t, jv, "ri");
    t->ro = R ? new_var(t, t->loops[t->row]->u.for_.var, "mo") : NULL;
    t->rr = R ? new_var(t, t->loops[t->row]->u.for_.var, "mr") : NULL;
    t->ko = new_var(t, kv, "lo");
    t->kl = new_var(t, kv, "li");
    rx_stmts body = tile(t);
    if (t->ro) body = rx_stmts_one(t->a, mk_for(t, t->ro, ceil_div(t, R, t->mr), RX_LOOP_SERIAL, body));
    if (!t->dots) /* K blocks: the columns tile's rows of W span few pages */
        body = rx_stmts_one(t->a, mk_for(t, t->ko, ceil_div(t, ext_of(t, p), t->kb), RX_LOOP_SERIAL, body));
    /* the parallel loop */
    int par = -1;
    for (int k = 0; k < p - 1 && par < 0; k++)
        if (t->batch[k] && rx_expr_is_const(ext_of(t, k), &v) && v >= 2) par = k;
    rx_expr *jn = ceil_div(t, N, t->nb);
    bool jpar = par < 0 && !(rx_expr_is_const(jn, &v) && v < FEW_TILES);
    for (int k = 0; k < p - 1 && par < 0 && !jpar; k++)
        if (t->batch[k] && !rx_expr_is_const(ext_of(t, k), NULL)) par = k;
    jpar = jpar || (par < 0 && !(rx_expr_is_const(jn, &v) && v < 2));
    rx_stmt *s = mk_for(t, t->jo, jn, jpar ? RX_LOOP_PARALLEL : RX_LOOP_SERIAL, body);
    for (int k = p - 2; k >= 0; k--)
        if (t->batch[k])
            s = for1(t, t->loops[k]->u.for_.var, ext_of(t, k),
                     k == par ? RX_LOOP_PARALLEL : RX_LOOP_SERIAL, s);
    return s;
}

/* The split plan (file essay) of one row (r = 0): its statements, in order. */
static rx_stmts build_split(mvn *t)
{
    int p = t->n - 1;
    rx_arena *a = t->a;
    rx_dtype dt = (rx_dtype)t->C->dtype;
    int64_t esz = rx_dtype_bits(dt) / 8, nv = 0, kv = 0;
    rx_expr_is_const(ext_of(t, p - 1), &nv);
    rx_expr_is_const(ext_of(t, p), &kv);
    int64_t nb = SPLIT_BYTES / esz < nv ? SPLIT_BYTES / esz : nv;
    const rx_svar *jv = t->loops[p - 1]->u.for_.var, *kx = t->loops[p]->u.for_.var;
    rx_svar *ks = new_var(t, kx, "ks"), *kk = new_var(t, kx, "kk"), *kt = new_var(t, kx, "kt"),
            *so = new_var(t, jv, "so"),
            *si = new_var(t, jv, "si"), *sj = new_var(t, jv, "sj");
    /* part (SLICES, N): each slice's sums, global (the heap: outside the parallel loop) */
    rx_buffer *pb = RX_NEW(a, rx_buffer);
    pb->name = rx_arena_printf(a, "%s_mvpart", t->C->name);
    pb->dtype = t->C->dtype;
    pb->ndim = 2;
    pb->shape = RX_NEWN(a, rx_expr *, 2);
    pb->shape[0] = lit(t, SPLIT_SLICES);
    pb->shape[1] = lit(t, nv);
    pb->scope = RX_SCOPE_GLOBAL;
    pb->id = rx_module_new_id(t->m);
    int64_t accd[1] = {nb};
    rx_buffer *acc = acc_buffer(t, accd, 1);
    /* the slice: k0 = ks * K // SLICES .. (ks + 1) * K // SLICES */
    rx_expr *k0 = bin(t, RX_E_FLOORDIV, bin(t, RX_E_MUL, var(t, ks), lit(t, kv)), lit(t, SPLIT_SLICES));
    rx_expr *k1 = bin(t, RX_E_FLOORDIV, bin(t, RX_E_MUL, bin(t, RX_E_ADD, var(t, ks), lit(t, 1)), lit(t, kv)),
                      lit(t, SPLIT_SLICES));
    rx_expr *j = tiled(t, so, nb, si);
    rx_expr *nb_e = always_full(ext_of(t, p - 1), nb) ? lit(t, nb) : part(t, lit(t, nv), so, nb);
    rx_expr *ai[1] = {var(t, si)};
    rx_expr *accv = rx_e_load(a, acc, ai, 1);
    /* SPLIT_UNROLL rows of W per update, in order: acc = U(k + 3, U(k + 2, U(k + 1, U(k, acc)))),
       the same sums as one row at a time without storing acc between them */
    rx_expr *rows = bin(t, RX_E_SUB, k1, k0);
    rx_expr *kq0 = bin(t, RX_E_ADD, k0, bin(t, RX_E_MUL, var(t, kk), lit(t, SPLIT_UNROLL)));
    rx_expr *kt0 = bin(t, RX_E_ADD, k0, bin(t, RX_E_MUL, bin(t, RX_E_FLOORDIV, rows, lit(t, SPLIT_UNROLL)),
                                            lit(t, SPLIT_UNROLL)));
    rx_expr *upd4 = accv, *upd1 = NULL;
    for (int u = 0; u <= SPLIT_UNROLL; u++) {
        rx_vmap sub = {0};
        tile_map(t, &sub, lit(t, 0), j);
        map2(t, &sub, p, u < SPLIT_UNROLL ? bin(t, RX_E_ADD, kq0, lit(t, u)) : bin(t, RX_E_ADD, kt0, var(t, kt)));
        if (u < SPLIT_UNROLL) upd4 = rx_expr_subst(a, swap_c(t, t->upd, upd4), &sub);
        else upd1 = rx_expr_subst(a, swap_c(t, t->upd, accv), &sub);
        rx_vmap_free(&sub);
    }
    rx_expr *pi[2] = {var(t, ks), j};
    rx_stmt *tl[5] = {
        rx_s_alloc(a, acc),
        for1(t, si, nb_e, RX_LOOP_VECTORIZED, store(t, acc, ai, 1, rx_e_float(a, 0.0, dt))),
        for1(t, kk, bin(t, RX_E_FLOORDIV, rows, lit(t, SPLIT_UNROLL)), RX_LOOP_SERIAL,
             for1(t, si, nb_e, RX_LOOP_VECTORIZED, store(t, acc, ai, 1, upd4))),
        for1(t, kt, bin(t, RX_E_FLOORMOD, rows, lit(t, SPLIT_UNROLL)), RX_LOOP_SERIAL,
             for1(t, si, nb_e, RX_LOOP_VECTORIZED, store(t, acc, ai, 1, upd1))),
        for1(t, si, nb_e, RX_LOOP_VECTORIZED, store(t, pb, pi, 2, accv))};
    rx_stmt *slices = for1(t, ks, lit(t, SPLIT_SLICES), RX_LOOP_PARALLEL,
                           mk_for(t, so, ceil_div(t, lit(t, nv), nb), RX_LOOP_SERIAL, rx_stmts_of(a, tl, 5)));
    /* C[.., j] = INIT (or C) + part[0, j] + .. + part[SLICES - 1, j], in slice order */
    rx_vmap fsub = {0};
    tile_map(t, &fsub, lit(t, 0), var(t, sj));
    rx_expr **cidx = c_index(t, &fsub);
    rx_expr *sum = t->init ? rx_expr_subst(a, t->init, &fsub) : rx_e_load(a, t->C, cidx, p);
    for (int64_t q = 0; q < SPLIT_SLICES; q++) {
        rx_expr *qi[2] = {lit(t, q), var(t, sj)};
        sum = bin(t, RX_E_ADD, sum, rx_e_load(a, pb, qi, 2));
    }
    rx_stmt *items[3] = {rx_s_alloc(a, pb), slices,
                         for1(t, sj, lit(t, nv), RX_LOOP_VECTORIZED, store(t, t->C, cidx, p, sum))};
    rx_vmap_free(&fsub);
    return rx_stmts_of(a, items, 3);
}

/* The replacement of FOR s, or NULL when it is not a matrix-vector nest. */
static rx_stmt *matvec_nest(rx_module *m, rx_stmt *s)
{
    mvn t;
    memset(&t, 0, sizeof t);
    t.m = m;
    t.a = m->arena;
    if (!match(s, &t) || !classify(&t)) return NULL;
    if (t.split && t.row < 0) { /* one row: the split plan, its statements under a LET */
        rx_svar *n = new_var(&t, t.loops[t.n - 1]->u.for_.var, "slices");
        return rx_s_let(t.a, n, lit(&t, SPLIT_SLICES), build_split(&t));
    }
    rx_stmt *r = build(&t);
    if (t.row < 0 || rx_expr_is_const(ext_of(&t, t.row), NULL)) return r;
    rx_expr *cond = bin(&t, RX_E_LE, ext_of(&t, t.row), lit(&t, max_rows(&t)));
    if (min_rows(&t) > 1)
        cond = bin(&t, RX_E_AND, bin(&t, RX_E_GE, ext_of(&t, t.row), lit(&t, min_rows(&t))), cond);
    rx_stmt *els = rx_s_if(t.a, cond, rx_stmts_one(t.a, r), rx_stmts_one(t.a, s));
    if (!t.split) return els;
    /* a symbolic row count: IF (R == 1) the split plan ELSE the other plans */
    rx_expr *one = bin(&t, RX_E_EQ, ext_of(&t, t.row), lit(&t, 1));
    return rx_s_if(t.a, one, build_split(&t), rx_stmts_one(t.a, els));
}

bool rx_schedule_matvec(rx_module *m, int *nrewritten)
{
    int n = rx_schedule_nests(m, matvec_nest);
    if (nrewritten) *nrewritten = n;
    return true;
}
