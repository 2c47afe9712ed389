/*
 * schedule_tile.c — register and cache tiling of reductions and matmuls in loop
 * functions (pipeline step 7, "schedule", before the loop kinds of schedule.c).
 *
 * What is tiled: a top-level loop nest of the exact shape the tensor-expression
 * builder gives a reduction (te_build.c's nest(), and FuseTIR's copies of it):
 *
 *   for s_1 .. for s_p (spatial) for r_1 .. for r_q (reduce):     p >= 1, q >= 1
 *     block (iterators bound to exactly those loop variables, in order):
 *       init: C[s_1, .., s_p] = INIT          (optional; INIT loads no C, uses no r)
 *       body: C[s_1, .., s_p] = UPD           (UPD loads C only as C[s_1, .., s_p])
 *
 * every loop serial, unbound, starting at 0, with an extent that mentions no loop
 * variable of the nest, and at least MIN_VOLUME iterations when all extents are
 * literals. Matmul, batch matmul, sum/max/min/prod over any axes, mean's sum, the
 * max and sum of softmax, conv2d and pooling windows all have it.
 *
 * Names: J = s_p (the last spatial index, contiguous in C), I = s_{p-1} when p >= 2,
 * the batch loops s_1 .. s_{p-2}; K = r_1 when q = 1. The nest becomes
 *
 *   for batch loops (kept)
 *     for jo in range(ceil(N / NR)):                 N, M, K: the extents of J, I, K
 *       for ko in range(max(ceil(K / KC), 1)):       (only when K is blocked)
 *         for io in range(ceil(M / MR)):             (only with I)
 *           acc = alloc local (MR, NR)               registers after the C compiler's
 *           for ii, jj: acc[ii, jj] = ko == 0 ? INIT : C[i, j]       scalarization
 *           for kk in range(min(KC, K - ko * KC)) (or the reduce loops as they were):
 *             for ii (unrolled) for jj (vectorized): acc[ii, jj] = UPD[C[..] := acc[ii, jj]]
 *           for ii, jj: C[i, j] = acc[ii, jj]
 *
 * with i = io * MR + ii, j = jo * NR + jj, k = ko * KC + kk substituted everywhere.
 * A tile that may run past M or N (an extent not a multiple of its tile, or
 * symbolic) is an IF: the full tile above with literal extents MR and NR (which the C
 * compiler unrolls and keeps in registers), else the same statements with extents
 * min(MR, M - io * MR) and min(NR, N - jo * NR). Without I there is no io loop and acc
 * is (NR,). When few J tiles exist (N a literal below 4 * NR) the order is io, jo and
 * K is not blocked, so the parallel loop has iterations to share, unless a batch loop
 * of literal extent >= 2 will be the parallel one (attention's heads): then jo stays
 * first, and B can be packed.
 *
 * Why it is exact: for every output element (i, j) the new code computes INIT, then
 * applies UPD for the reduce indices in the original lexicographic order (ko
 * ascending, kk ascending inside; or the reduce loops unchanged), with the running
 * value held in acc — in C's dtype, so an f16 sum still rounds after every step — and
 * carried through C itself between K blocks (stored, then reloaded when ko > 0). Only
 * the interleaving of different elements changes, and UPD of one element reads no
 * other element of C (checked) and no buffer the nest writes. So results are
 * bit-identical to the untiled nest, for every dtype and combiner (no reassociation:
 * float sums keep their order; tests/unit/pass/test_schedule_tile.c compares bits).
 * An empty reduction (K = 0) still stores INIT: the ko loop runs at least once with
 * an empty kk loop.
 *
 * Which loop is parallel: the first batch loop with a literal extent >= 2, else the
 * outermost tile loop (jo, or io in the io-first order) when its extent is a literal
 * >= 2, else the first symbolic batch loop (a batch of decode steps may well be 1,
 * while the tile count is known), else the outermost tile loop when its extent is
 * symbolic (none when it is 1). A symbolic batch loop chosen while the outermost tile
 * loop is symbolic too (softmax's row max and sum over (b, heads, s, s): b is 1 in a
 * prefill, the s / 8 row tiles are many) makes the nest IF (batch >= 2) that ELSE the
 * same nest with the tile loop parallel: a prefill's reductions ran on one thread.
 * Why that is legal: distinct iterations of a batch loop
 * write C at distinct values of its own index; distinct jo (io) write disjoint column
 * (row) ranges of C; every read of C is of an element the same iteration wrote before;
 * acc is allocated inside the iteration. schedule.c then finds no other parallel loop
 * in the nest.
 *
 * Tile sizes, by the element size e of C. J is "contiguous" when the last index of a
 * load in UPD steps by exactly 1 with J (B[k, j] of a matmul, x[.., h + r, w + s] of a
 * conv2d; proved with the arithmetic). Then NR = 64 / e (16 f32: two AVX2 vectors,
 * one AVX-512 vector), MR = 6, KC = 256: a 6 x 16 f32 tile is 12 AVX2 registers, which
 * leaves room for B's two vectors and A's broadcast in the 16 (the classic Haswell
 * sgemm tile). Until 2026-11 the tile was 8 x 32 (16 AVX-512 registers); on a CPU
 * without AVX-512 (this project's build machines since) its AVX2 version holds 32
 * accumulators, which GCC keeps in memory (a load-add-store per step): attention's
 * scores kernel ran at 0.31x of OpenBLAS's sgemm rate for the same FLOPs, 0.53x with
 * 6 x 16 (one thread, CPU time, same process; bench_attention.py --cpu: pt 0.28 ->
 * 0.56, pv 0.38 -> 0.85). The AVX-512 version of 6 x 16 fills 6 of 32 registers: fewer
 * chains than the FMA latency wants, the price of one tile for every ISA. Else (a row
 * reduction: J only strides) NR = 8 rows with the jj loop unrolled, not vectorized:
 * eight independent chains instead of one. A contiguous nest with one row (no I, or a
 * literal M = 1: matrix-vector, column sums) streams whole rows instead: NR = 4 KB of
 * elements (an L1-resident accumulator, not registers), or N / 4 when that is smaller,
 * so the parallel loop keeps four tiles. A literal extent smaller than its tile
 * shrinks the tile to it; one that the tile does not divide but MR = 4 (rows) or NR / 2
 * (contiguous columns) does takes that instead, so the tiles fit exactly. K is blocked
 * when q = 1, there is more than one row, the order is jo first, and K is not a
 * literal <= 2 * KC (with packing, below: KC is the panel's depth, 2048 f32 rows, and
 * a literal K up to it stays unblocked). The ii loop is unrolled when MR > 1 (a
 * one-row tile has nothing to unroll). The sizes are fixed for every ISA: at O3
 * codegen compiles such kernels for AVX-512, AVX2 and the baseline (c_kernel.c).
 *
 * Packing (GotoBLAS's copy of B). A matmul's B[k, j0 : j0 + NR] rows lie N * e bytes
 * apart: at N = 1024 f32 every row of a (jo, ko) panel falls in the same few L1 sets
 * and in a different 4 KiB page, so the panel is fetched again from L2 (and the TLB)
 * for each of the M / MR row tiles that use it. So when the nest is
 *   - a contiguous register tile with I and more than one row, in the jo-first order,
 *     with one reduce loop K,
 *   - M a literal >= PACK_MIN_ROWS (16: each panel serves at least two row tiles), or
 *     symbolic: then the nest is IF (M >= PACK_MIN_ROWS) the packed nest ELSE the
 *     unpacked one (a symbolic M may be 1, a decode step, where the copy would be pure
 *     overhead; attention's probs @ v over a symbolic s reads v's rows heads * d apart,
 *     the strided case packing is for),
 *   - K symbolic or a literal >= PACK_MIN_K (128; below that the panel is small and
 *     packing measured no gain: the batched attention products, K = 64),
 *   - and UPD has a load whose indices use K but not I and whose last index steps by
 *     exactly 1 with J (B[k, j], B[b, k, j]; the first such load, left to right),
 * that load is read from a panel instead: a local buffer (KC, NR) of its dtype,
 * allocated in the jo loop's body (inside the parallel loop, or inside the parallel
 * batch loop's iteration: one panel per thread, on its stack), filled right before the
 * io loop for every (jo, ko):
 *
 *   for jo:  panel = alloc local (KC, NR)
 *     for ko:
 *       for kp in range(min(KC, K - ko * KC)): for jp in range(NR or the partial
 *         width) (vectorized): panel[kp, jp] = B[ko * KC + kp, jo * NR + jp]
 *       for io: ... UPD with B[k, j] := panel[kk, jj] ...
 *
 * The panel's depth is KC = PACK_BYTES / (NR * e_B) (2048 rows of f32: 128 KiB, which
 * codegen puts on the stack, behind a pointer: c_kernel.c), and K is then blocked by it
 * when it is longer (a literal K <= KC stays unblocked, the panel holding all of it,
 * with the pack before the io loop). A symbolic K gets PACK_SYM_BYTES (512 f32 rows,
 * 32 KiB): codegen zeroes
 * the panel at its full depth on every jo, which a short K would pay for. The panel
 * outgrows L1 (48 KiB) on purpose: it streams from L2 in order, while every K block
 * costs a reload and a store of each C tile (eight rows N * e apart, evicted to L3 by
 * the stream of A in between), so fewer, deeper blocks win. Measured here (Sapphire
 * Rapids, GCC 12, OpenBLAS / generated, medians of interleaved runs on one thread,
 * the other core busy): 1024^3 0.7x at KC = 256, 0.82-0.88x at 512, 0.94-1.0x at 1024
 * (unblocked); 256x4096x4096 0.87-0.92x at 512, 0.97-1.02x at 1024, 0.99-1.03x at
 * 2048; 128x2048x5632 about 1.05-1.15x at every depth; and packing itself took 1024^3
 * from 0.6x (a deeper K block without packing is slower: the strided rows are the
 * cost). Tried and slower at 1024^3: K outermost (ko { jo (parallel) }: A's KC block
 * stays in L2 across jo, but C makes K / KC round trips), blocks of 64-256 rows
 * around jo (A's block in L2, but the panel is packed again per row block), and
 * copying the tile's 8 x KC sliver of A (used once, so the copy is pure cost); not
 * zeroing the panel was within the noise (about 1%). Exactness is untouched: the
 * panel holds copies of B's values, read at the same (k, j) as before, and the
 * accumulation order of every element is the one described above. The panel costs
 * one copy of B per jo (K * N elements in all) and up to PACK_BYTES of stack per
 * thread.
 *
 * Computed panels. The panel holds not just the load but the largest subexpression of
 * UPD holding it that the rows do not change (no variable of I, no load of C;
 * panel_expr): CapsNet's routing agreement sum_k u[b, i, j, k] * (|s_j|^2 / (1 + |s_j|^2)
 * * s[b, j, k] / sqrt(|s_j|^2 + eps)), the squash of v fused into the product, divided
 * and took a square root per (i, j, k); packed, once per (j, k) for all 3200 rows (that
 * kernel 2.7x faster, one thread, same run). The values are those of the same
 * expression at the same (k, j), so exactness is as above. A plain matmul's largest such
 * subexpression is its B load.
 *
 * Transposing panels (attention's Q @ K^T). When no load of UPD steps by 1 with J but
 * one, B, has indices free of I that use both K and J (scores[h, i, j] += q[h, i, k] *
 * k[h, j, k]: K's rows are J), the nest has rows (I, and M not a literal below 2) and one
 * reduce loop, B is packed whatever M and K are: the panel (KC or the literal K, NR)
 * holds B transposed (for jp { for kp { panel[kp, jp] = B[.., j, k] } }, reading along
 * B's rows), which makes the tile contiguous in J, so it is the 6 x 16 vectorized
 * register tile instead of eight unrolled row chains; the order is jo first. The copy
 * is K * NR elements per J tile against M * K * NR multiply-adds. Measured on one
 * decoder block's prefill at s = 128 (32 heads, K = 64): the scores kernel 18 ms ->
 * 1.1 ms at O3 (5.9 -> 1.5 ms at O2). Exactness is as above: copies of B's values, the
 * same accumulation order.
 *
 * Rows from the batch (decode's products). A decode step's projection is x (b, 1, K) @
 * W (K, N): the nest is batch b { I of literal extent 1 { J { K } } }, so the plan above
 * has one row, and the symbolic b, the parallel loop, streams all of W once per batch
 * row (16 times at b = 16, each pass its own parallel region). When the nest has one
 * reduce loop, I is a literal 1, and the batch loop L right outside I is not a literal
 * below 2 and some load using K and J does not use L (W is shared by all of L's
 * iterations), L and I trade places: L's iterations are the rows of the register tile
 * (W packed whatever their count: the panel is filled from W's one read, and the
 * unpacked variant would double the kernel's code), the extent-1 loop a batch loop, and
 * J's tiles the parallel loop, so W is read once, in one parallel region. A symbolic L
 * gets IF (L >= 2) that nest ELSE the one-row plan (b = 1 keeps the streaming rows). Exactness as above: the
 * loops only change roles, every element still reduces in K's order. Measured here on
 * x (16, 1, 1024) @ (1024, 2816), medians beside NumPy's sgemm of the same product in
 * the same run on a loaded machine: one thread 0.27x -> 0.52x of sgemm with the rows
 * unpacked, 0.69x packed (hence PACK_MIN_ROWS = 16; 0.29x -> 0.93x in a later run); two
 * threads 0.07x -> 0.45x (the 16 parallel regions cost most).
 *
 * Cost: linear in the size of the nest; the new nest holds UPD three times at most
 * (full tile, partial tile), four times under rows from the batch.
 */
#include <string.h>

#include "relax/pass.h"

enum {
    MAX_LOOPS = 16,     /* loops of a nest that can be tiled */
    MIN_VOLUME = 4096,  /* iterations below which a literal nest is left as it is */
    MR_TILE = 6,        /* rows of the register tile */
    MR_ALT = 4,         /* ... when it divides a literal M that MR_TILE does not */
    TILE_BYTES = 64,    /* bytes of a contiguous tile row (16 f32: two AVX2 vectors) */
    KC_TILE = 256,      /* reduce block */
    ROW_LANES = 8,      /* rows reduced side by side when J strides */
    FEW_TILES = 4,      /* fewer J tiles than this: io first, no K blocking */
    WIDE_BYTES = 4096,  /* most bytes of a one-row tile (it lives in L1, not registers) */
    PACK_BYTES = 131072,    /* most bytes of a packed B panel (KC_pack x NR, on the stack) */
    PACK_SYM_BYTES = 32768, /* ... when K is symbolic (the panel is zeroed at full depth) */
    PACK_MIN_ROWS = 16,     /* literal M below which B is not packed (< 2 row tiles use it) */
    PACK_MIN_K = 128        /* literal K below which B is not packed */
};

/* One matched nest. */
typedef struct tnest {
    rx_stmt *loops[MAX_LOOPS]; /* the chain, outermost first */
    const rx_iter *its[MAX_LOOPS]; /* the block iterator bound to each loop's variable */
    int n;                     /* loops */
    int p;                     /* spatial loops (the first p) */
    const rx_stmt *blk;        /* the block */
    rx_buffer *C;              /* the stored buffer */
    rx_expr *init;             /* INIT, or NULL (the running value starts as C) */
    rx_expr *upd;              /* UPD */
} tnest;

/* The tiling of one nest. */
typedef struct tplan {
    rx_module *m;
    rx_arena *a;
    const tnest *t;
    bool has_i;                /* p >= 2 */
    bool kblock;               /* K blocked by KC */
    bool io_first;             /* io outer, jo inner */
    bool contiguous;           /* J is the last index of a load in UPD (or of the panel) */
    bool transposed;           /* bload has J in another index: packing transposes it */
    bool pack_sym_rows;        /* B may be packed with a symbolic M (the M >= 16 branch) */
    const rx_expr *bload;      /* the load of UPD read from the packed panel, or NULL */
    const rx_expr *bexpr;      /* the subexpression of UPD packed: bload or a row-free
                                  expression holding it (panel_expr) */
    rx_buffer *panel;          /* the packed panel (kc or K, NR), when bload */
    int64_t mr, nr, kc;        /* tile sizes */
    rx_expr *M, *N, *K;        /* extents of I (or NULL), J, K (or NULL) */
    rx_svar *io, *jo, *ko, *ii, *jj, *kk; /* new loop variables (NULL when absent) */
    rx_vmap sub;               /* block iterators and old loop variables -> new indices */
    rx_buffer *acc;            /* the tile's accumulator (one per tile body) */
} tplan;

/* ---------------------------------------------------------------- matching */

/* True when every LOAD of b in e is b[idx] with idx the p variables vars. */
static bool loads_exact(const rx_expr *e, const rx_buffer *b, const rx_svar *const *vars, int p)
{
    if (!e) return true;
    if (e->kind == RX_E_LOAD && e->u.load.buf == b) {
        if (e->u.load.nidx != p) return false;
        for (int k = 0; k < p; k++) {
            const rx_expr *x = e->u.load.idx[k];
            if (x->kind != RX_E_VAR || x->u.var != vars[k]) return false;
        }
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!loads_exact(rx_expr_child(e, i), b, vars, p)) return false;
    return true;
}

/* True when load e (of a buffer other than b) has a last index that steps by exactly 1
 * when v does (v, v + k, k + v - 1, ...: consecutive elements). */
static bool unit_step(rx_arith *ar, rx_arena *a, const rx_expr *e, const rx_buffer *b,
                      const rx_svar *v)
{
    if (e->kind != RX_E_LOAD || e->u.load.buf == b || e->u.load.nidx < 1) return false;
    return rx_load_unit_step(ar, a, e, v);
}

/* True when some LOAD in e passes unit_step. */
static bool unit_stride_load(rx_arith *ar, rx_arena *a, const rx_expr *e, const rx_buffer *b,
                             const rx_svar *v)
{
    if (!e) return false;
    if (unit_step(ar, a, e, b, v)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (unit_stride_load(ar, a, rx_expr_child(e, i), b, v)) return true;
    return false;
}

/* True when some index of load e uses x or y. */
static bool idx_uses(const rx_expr *e, const rx_svar *x, const rx_svar *y)
{
    for (int k = 0; k < e->u.load.nidx; k++)
        if (rx_expr_uses_var(e->u.load.idx[k], x) || rx_expr_uses_var(e->u.load.idx[k], y))
            return true;
    return false;
}

/* The variables a panel's load is judged by: I's iterator and loop variable, then K's,
 * then J's (v[0..5]; nest t has I). */
static void ikj_vars(const tnest *t, const rx_svar *v[6])
{
    for (int k = 0; k < 3; k++) {
        int at = k == 0 ? t->p - 2 : k == 1 ? t->p : t->p - 1; /* I, K, J */
        v[2 * k] = t->its[at]->var;
        v[2 * k + 1] = t->loops[at]->u.for_.var;
    }
}

/* The first LOAD of e (outermost first, left to right) that a panel can serve: a
 * buffer other than b of whole bytes, indices free of I but using K (v: ikj_vars),
 * and either the last one stepping by 1 with J (B[k, j]: a copying panel) or, when
 * transposed, some index using J (k[h, j, k]: a transposing one). NULL when none. */
static const rx_expr *panel_load(rx_arith *ar, rx_arena *a, const rx_expr *e,
                                 const rx_buffer *b, const rx_svar *const v[6], bool transposed)
{
    if (!e) return NULL;
    if (e->kind == RX_E_LOAD && e->u.load.buf != b &&
        rx_dtype_bits((rx_dtype)e->u.load.buf->dtype) >= 8 && !idx_uses(e, v[0], v[1]) &&
        idx_uses(e, v[2], v[3]) &&
        (transposed ? idx_uses(e, v[4], v[5]) : unit_step(ar, a, e, b, v[4])))
        return e;
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        const rx_expr *r = panel_load(ar, a, rx_expr_child(e, i), b, v, transposed);
        if (r) return r;
    }
    return NULL;
}

/* The single STORE of a statement list, or NULL. */
static const rx_stmt *only_store(const rx_stmts *ss)
{
    return ss->n == 1 && ss->items[0]->kind == RX_S_STORE ? ss->items[0] : NULL;
}

/* True when the store writes b at exactly the p iterator variables vars. */
static bool store_exact(const rx_stmt *st, const rx_buffer *b, const rx_svar *const *vars, int p)
{
    if (!st || st->u.store.buf != b || st->u.store.nidx != p) return false;
    for (int k = 0; k < p; k++) {
        const rx_expr *x = st->u.store.idx[k];
        if (x->kind != RX_E_VAR || x->u.var != vars[k]) return false;
    }
    return true;
}

/* Matches FOR s against the nest shape of the file essay. */
static bool match(rx_stmt *s, tnest *t)
{
    memset(t, 0, sizeof *t);
    rx_stmt *cur = s;
    while (cur->kind == RX_S_FOR) {
        if (t->n == MAX_LOOPS || cur->u.for_.body.n != 1) return false;
        if (cur->u.for_.loop_kind != RX_LOOP_SERIAL || cur->u.for_.thread) return false;
        if (!rx_expr_is_int(cur->u.for_.min, 0)) return false;
        t->loops[t->n++] = cur;
        cur = cur->u.for_.body.items[0];
    }
    if (cur->kind != RX_S_BLOCK || t->n < 2 || cur->u.block.niters != t->n) return false;
    t->blk = cur;
    const rx_svar *vars[MAX_LOOPS];
    int p = 0;
    for (int k = 0; k < t->n; k++) {
        const rx_iter *it = &cur->u.block.iters[k];
        const rx_stmt *l = t->loops[k];
        if (!it->bind || it->bind->kind != RX_E_VAR || it->bind->u.var != l->u.for_.var)
            return false;
        if (it->kind == RX_ITER_SPATIAL) {
            if (p != k) return false; /* spatial iterators first */
            p++;
        }
        vars[k] = it->var;
        t->its[k] = it;
        for (int j = 0; j < t->n; j++) /* extents free of the nest's variables */
            if (rx_expr_uses_var(l->u.for_.extent, t->loops[j]->u.for_.var) ||
                rx_expr_uses_var(l->u.for_.extent, cur->u.block.iters[j].var))
                return false;
    }
    if (p < 1 || p == t->n) return false;
    t->p = p;
    const rx_stmt *body = only_store(&cur->u.block.body);
    if (!body) return false;
    t->C = body->u.store.buf;
    if (!store_exact(body, t->C, vars, p) || !loads_exact(body->u.store.value, t->C, vars, p))
        return false;
    if (cur->u.block.init.n) {
        const rx_stmt *init = only_store(&cur->u.block.init);
        if (!store_exact(init, t->C, vars, p) || rx_expr_loads_buf(init->u.store.value, t->C))
            return false;
        for (int k = p; k < t->n; k++)
            if (rx_expr_uses_var(init->u.store.value, vars[k]) ||
                rx_expr_uses_var(init->u.store.value, t->loops[k]->u.for_.var))
                return false;
        t->init = init->u.store.value;
    }
    t->upd = body->u.store.value;
    int64_t vol = 1, e;
    bool lit = true;
    for (int k = 0; k < t->n && lit; k++) {
        lit = rx_expr_is_const(t->loops[k]->u.for_.extent, &e) && e >= 0;
        if (lit) vol = vol > INT64_MAX / (e ? e : 1) ? INT64_MAX : vol * e;
    }
    return !lit || vol >= MIN_VOLUME;
}

/* ---------------------------------------------------------------- building */

/* Statements through ir.h's constructors; the few shorthands the builder repeats. */
static rx_stmts list_of(rx_arena *a, rx_stmt *const *items, int n)
{
    return rx_stmts_of(a, items, n);
}

static rx_stmt *for_list(rx_arena *a, const rx_svar *v, rx_expr *extent, rx_loopkind kind,
                         rx_stmts body)
{
    return rx_s_for(a, v, rx_e_int(a, 0), extent, kind, body);
}

static rx_stmt *mk_for(rx_arena *a, const rx_svar *v, rx_expr *extent, rx_loopkind kind,
                       rx_stmt *body)
{
    return for_list(a, v, extent, kind, rx_stmts_one(a, body));
}

/* STORE b[idx] = v with a copy of idx (callers reuse their index arrays). */
static rx_stmt *mk_store(rx_arena *a, rx_buffer *b, rx_expr **idx, int n, rx_expr *v)
{
    return rx_s_store(a, b, rx_arena_dup(a, idx, sizeof(rx_expr *) * (size_t)(n > 0 ? n : 1)),
                      n, v);
}

static rx_svar *new_var(tplan *P, const rx_svar *base, const char *suffix)
{
    const char *name = rx_arena_printf(P->a, "%s_%s", base->name, suffix);
    return rx_svar_new(P->a, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(P->m));
}

static rx_expr *lit(tplan *P, int64_t v) { return rx_e_int(P->a, v); }
static rx_expr *var(tplan *P, const rx_svar *v) { return rx_e_var(P->a, v); }
static rx_expr *bin(tplan *P, rx_ekind k, rx_expr *x, rx_expr *y) { return rx_e_binary(P->a, k, x, y); }

/* o * t + in: the index of a tiled loop. */
static rx_expr *tiled(tplan *P, const rx_svar *o, int64_t t, const rx_svar *in)
{
    return bin(P, RX_E_ADD, bin(P, RX_E_MUL, var(P, o), lit(P, t)), var(P, in));
}

/* ceil(x / t) (max(.., 1) when at_least_one), folded for a literal x. */
static rx_expr *ceil_div(tplan *P, rx_expr *x, int64_t t, bool at_least_one)
{
    int64_t v;
    if (rx_expr_is_const(x, &v)) {
        int64_t c = v <= 0 ? 0 : (v - 1) / t + 1;
        return lit(P, at_least_one && c < 1 ? 1 : c);
    }
    rx_expr *c = bin(P, RX_E_FLOORDIV, bin(P, RX_E_ADD, x, lit(P, t - 1)), lit(P, t));
    return at_least_one ? bin(P, RX_E_MAX, c, lit(P, 1)) : c;
}

/* min(t, x - o * t): the extent of the last, partial tile. */
static rx_expr *part_extent(tplan *P, rx_expr *x, const rx_svar *o, int64_t t)
{
    return bin(P, RX_E_MIN, lit(P, t), bin(P, RX_E_SUB, x, bin(P, RX_E_MUL, var(P, o), lit(P, t))));
}

/* True when tiles of t always fit in extent x (a literal multiple of t). */
static bool always_full(rx_expr *x, int64_t t)
{
    int64_t v;
    return rx_expr_is_const(x, &v) && v % t == 0;
}

/* e with every LOAD of C replaced by acc[ai] (nai indices). */
static rx_expr *to_acc(tplan *P, rx_expr *e, rx_expr **ai, int nai)
{
    if (e->kind == RX_E_LOAD && e->u.load.buf == P->t->C) return rx_e_load(P->a, P->acc, ai, nai);
    int n = rx_expr_nchildren(e);
    if (!n) return e;
    rx_expr **kids = RX_NEWN(P->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        kids[i] = to_acc(P, rx_expr_child(e, i), ai, nai);
        changed |= kids[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(P->a, e, kids) : e;
}

/* e with the packed expression (P->bexpr, by identity) replaced by panel[k, jj]: k the kk
 * of the K block, or the K loop's own variable when K is not blocked. */
static rx_expr *to_panel(tplan *P, rx_expr *e)
{
    if (e == P->bexpr) {
        const rx_svar *kv = P->kblock ? P->kk : P->t->loops[P->t->p]->u.for_.var;
        rx_expr *pi[2] = {var(P, kv), var(P, P->jj)};
        return rx_e_load(P->a, P->panel, pi, 2);
    }
    int n = rx_expr_nchildren(e);
    if (!n) return e;
    rx_expr **kids = RX_NEWN(P->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        kids[i] = to_panel(P, rx_expr_child(e, i));
        changed |= kids[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(P->a, e, kids) : e;
}

/* The loop over ii (when there is I) and jj around one statement. */
static rx_stmt *tile_loops(tplan *P, bool full, rx_loopkind ik, rx_loopkind jk, rx_stmt *s)
{
    bool fj = full || always_full(P->N, P->nr); /* the partial tile of one side only */
    rx_expr *ej = fj ? lit(P, P->nr) : part_extent(P, P->N, P->jo, P->nr);
    rx_stmt *r = mk_for(P->a, P->jj, ej, fj || jk != RX_LOOP_UNROLLED ? jk : RX_LOOP_SERIAL, s);
    if (!P->has_i) return r;
    bool fi = full || always_full(P->M, P->mr);
    rx_expr *ei = fi ? lit(P, P->mr) : part_extent(P, P->M, P->io, P->mr);
    return mk_for(P->a, P->ii, ei, fi ? ik : RX_LOOP_SERIAL, r);
}

/* One tile: alloc acc; init; reduce; store back (full: literal tile extents). The
 * list is the body of a loop or of an IF branch, so acc is declared per tile. */
static rx_stmts tile_body(tplan *P, bool full)
{
    rx_arena *a = P->a;
    const tnest *t = P->t;
    rx_buffer *acc = RX_NEW(a, rx_buffer);
    acc->name = rx_arena_printf(a, "%s_acc", t->C->name);
    acc->dtype = t->C->dtype;
    acc->ndim = P->has_i ? 2 : 1;
    acc->shape = RX_NEWN(a, rx_expr *, 2);
    acc->shape[0] = lit(P, P->has_i ? P->mr : P->nr);
    acc->shape[1] = lit(P, P->nr);
    acc->scope = RX_SCOPE_LOCAL;
    acc->id = rx_module_new_id(P->m);
    P->acc = acc;
    rx_expr *ai[2];
    int nai = 0;
    if (P->has_i) ai[nai++] = var(P, P->ii);
    ai[nai++] = var(P, P->jj);
    /* C[i, j] in the new variables */
    const rx_stmt *bst = t->blk->u.block.body.items[0];
    rx_expr **cidx = RX_NEWN(a, rx_expr *, t->p);
    for (int k = 0; k < t->p; k++) cidx[k] = rx_expr_subst(a, bst->u.store.idx[k], &P->sub);
    rx_expr *cur = rx_e_load(a, t->C, cidx, t->p);
    rx_expr *initv = t->init ? rx_expr_subst(a, t->init, &P->sub) : cur;
    if (P->kblock && t->init)
        initv = rx_e_select(a, bin(P, RX_E_EQ, var(P, P->ko), lit(P, 0)), initv, cur);
    rx_stmt *s_init = tile_loops(P, full, RX_LOOP_SERIAL, RX_LOOP_VECTORIZED,
                                 mk_store(a, acc, ai, nai, initv));
    rx_expr *upd = rx_expr_subst(a, to_acc(P, to_panel(P, t->upd), ai, nai), &P->sub);
    rx_loopkind jk = P->contiguous ? RX_LOOP_VECTORIZED : RX_LOOP_UNROLLED;
    rx_loopkind ik = P->mr > 1 ? RX_LOOP_UNROLLED : RX_LOOP_SERIAL; /* one row: nothing to unroll */
    rx_stmt *red = tile_loops(P, full, ik, jk, mk_store(a, acc, ai, nai, upd));
    if (P->kblock) {
        red = mk_for(a, P->kk, part_extent(P, P->K, P->ko, P->kc), RX_LOOP_SERIAL, red);
    } else {
        for (int k = t->n - 1; k >= t->p; k--)
            red = mk_for(a, t->loops[k]->u.for_.var, t->loops[k]->u.for_.extent, RX_LOOP_SERIAL, red);
    }
    rx_stmt *s_out = tile_loops(P, full, RX_LOOP_SERIAL, RX_LOOP_VECTORIZED,
                                mk_store(a, t->C, cidx, t->p, rx_e_load(a, acc, ai, nai)));
    rx_stmt *items[] = {rx_s_alloc(a, acc), s_init, red, s_out};
    return list_of(a, items, 4);
}

/* The tile: the full body, or IF (it fits) full ELSE partial. */
static rx_stmts tile(tplan *P)
{
    bool fi = !P->has_i || always_full(P->M, P->mr), fj = always_full(P->N, P->nr);
    rx_stmts full = tile_body(P, true);
    if (fi && fj) return full;
    rx_expr *cond = NULL;
    if (!fi) /* io * MR + MR <= M */
        cond = bin(P, RX_E_LE, bin(P, RX_E_ADD, bin(P, RX_E_MUL, var(P, P->io), lit(P, P->mr)),
                                   lit(P, P->mr)), P->M);
    if (!fj) {
        rx_expr *cj = bin(P, RX_E_LE, bin(P, RX_E_ADD, bin(P, RX_E_MUL, var(P, P->jo), lit(P, P->nr)),
                                          lit(P, P->nr)), P->N);
        cond = cond ? bin(P, RX_E_AND, cond, cj) : cj;
    }
    return rx_stmts_one(P->a, rx_s_if(P->a, cond, full, tile_body(P, false)));
}

/* The tile for extent x: t, or alt when x is a literal that alt divides and t does not
 * (no partial tiles), or x itself when it is a literal below t. */
static int64_t fit_tile(const rx_expr *x, int64_t t, int64_t alt)
{
    int64_t v;
    if (!rx_expr_is_const(x, &v)) return t;
    if (v < t) return v > 0 ? v : 1;
    return v % t != 0 && v % alt == 0 ? alt : t;
}

/* The packed panel's depth in rows (file essay, "Packing"): PACK_BYTES / (NR * e) of
 * the packed load's element size e, PACK_SYM_BYTES / (NR * e) when K is symbolic. */
static int64_t pack_depth(const tplan *P)
{
    int64_t v, bytes = rx_expr_is_const(P->K, &v) ? PACK_BYTES : PACK_SYM_BYTES;
    int bits = rx_dtype_bits((rx_dtype)P->bexpr->dtype);
    return bytes / (P->nr * (bits >= 8 ? bits / 8 : 1));
}

/* True when e holds the node x (by identity). */
static bool holds(const rx_expr *e, const rx_expr *x)
{
    if (e == x) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (holds(rx_expr_child(e, i), x)) return true;
    return false;
}

/* The expression the panel holds (file essay, "Packing", computed panels): the largest
 * subexpression of e holding the packed load b that the rows do not change (no variable
 * of I, no load of C), or NULL when e does not hold b. */
static const rx_expr *panel_expr(const tnest *t, const rx_expr *e, const rx_expr *b)
{
    if (e == b) return b;
    if (!holds(e, b)) return NULL;
    const rx_svar *lv = t->loops[t->p - 2]->u.for_.var, *iv = t->its[t->p - 2]->var;
    if (!rx_expr_uses_var(e, lv) && !rx_expr_uses_var(e, iv) && !rx_expr_loads_buf(e, t->C))
        return e;
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        const rx_expr *r = panel_expr(t, rx_expr_child(e, i), b);
        if (r) return r;
    }
    return NULL;
}

/* Decides whether B is packed (file essay, "Packing") and picks the load; with packing
 * the K block is the panel's depth (pack_depth). */
static void plan_pack(tplan *P, bool one_row)
{
    const tnest *t = P->t;
    int64_t v;
    if (P->transposed) { /* plan_sizes chose the load; the panel is what vectorizes */
        P->kc = pack_depth(P);
        return;
    }
    if (!P->contiguous || one_row || P->io_first || t->n - t->p != 1) return;
    if (rx_expr_is_const(P->M, &v) ? v < PACK_MIN_ROWS : !P->pack_sym_rows) return;
    if (rx_expr_is_const(P->K, &v) && v < PACK_MIN_K) return;
    const rx_svar *vars[6];
    ikj_vars(t, vars);
    rx_arith *ar = rx_arith_new(P->a);
    P->bload = panel_load(ar, P->a, t->upd, t->C, vars, false);
    rx_arith_free(ar);
    if (P->bload) {
        P->bexpr = panel_expr(t, t->upd, P->bload);
        P->kc = pack_depth(P);
    }
}

/* Chooses the tile sizes and the order (file essay). */
static void plan_sizes(tplan *P)
{
    const tnest *t = P->t;
    int bits = rx_dtype_bits((rx_dtype)t->C->dtype);
    int64_t esz = bits >= 8 ? bits / 8 : 1, v;
    const rx_svar *jv = t->its[t->p - 1]->var;
    rx_arith *ar = rx_arith_new(P->a);
    P->contiguous = unit_stride_load(ar, P->a, t->upd, t->C, jv);
    if (!P->contiguous && P->has_i && t->n - t->p == 1 &&
        !(rx_expr_is_const(P->M, &v) && v < 2)) { /* Q @ K^T: a transposing panel */
        const rx_svar *vars[6];
        ikj_vars(t, vars);
        P->bload = panel_load(ar, P->a, t->upd, t->C, vars, true);
        P->transposed = P->contiguous = P->bload != NULL;
        if (P->bload) P->bexpr = panel_expr(t, t->upd, P->bload);
    }
    rx_arith_free(ar);
    P->nr = P->contiguous ? TILE_BYTES / esz : ROW_LANES;
    if (P->nr > 64) P->nr = 64;
    P->mr = MR_TILE;
    P->kc = KC_TILE;
    if (P->has_i) P->mr = fit_tile(P->M, MR_TILE, MR_ALT);
    bool one_row = !P->has_i || P->mr == 1;
    if (one_row && P->contiguous) { /* streaming rows: a wide tile, a few per thread */
        int64_t unit = P->nr, wide = WIDE_BYTES / esz;
        if (rx_expr_is_const(P->N, &v)) {
            wide = v / FEW_TILES / unit * unit;
            wide = wide < unit ? unit : wide > WIDE_BYTES / esz ? WIDE_BYTES / esz : wide;
        }
        P->nr = wide;
    }
    P->nr = fit_tile(P->N, P->nr, P->contiguous ? P->nr / 2 : P->nr);
    bool lit_batch = false; /* a batch loop that will be the parallel one (build) */
    for (int k = 0; k + 2 < t->p; k++)
        lit_batch |= rx_expr_is_const(t->loops[k]->u.for_.extent, &v) && v >= 2;
    P->io_first = P->has_i && !one_row && !P->transposed && !lit_batch &&
                  rx_expr_is_const(P->N, &v) && (v + P->nr - 1) / P->nr < FEW_TILES;
    plan_pack(P, one_row);
    int64_t kmax = P->bload ? P->kc : 2 * KC_TILE; /* the longest K left unblocked */
    P->kblock = P->has_i && !one_row && !P->io_first && t->n - t->p == 1 &&
                !(rx_expr_is_const(P->K, &v) && v <= kmax);
}

/* The packed panel's buffer: (KC or the literal K, NR) of the packed load's dtype. */
static rx_buffer *panel_buffer(tplan *P)
{
    const rx_buffer *x = P->bload->u.load.buf;
    rx_buffer *b = RX_NEW(P->a, rx_buffer);
    b->name = rx_arena_printf(P->a, "%s_pack", x->name);
    b->dtype = P->bexpr->dtype;
    b->ndim = 2;
    b->shape = RX_NEWN(P->a, rx_expr *, 2);
    b->shape[0] = P->kblock ? lit(P, P->kc) : P->K; /* unblocked: a literal K <= kc */
    b->shape[1] = lit(P, P->nr);
    b->scope = RX_SCOPE_LOCAL;
    b->id = rx_module_new_id(P->m);
    return b;
}

/* The packing loops: panel[kp, jp] = the packed load at k = ko * KC + kp (or kp), j =
 * jo * NR + jp, for the rows of this K block and the columns of this J tile. */
static rx_stmt *pack_loops(tplan *P)
{
    const tnest *t = P->t;
    const rx_stmt *lk = t->loops[t->p], *lj = t->loops[t->p - 1];
    rx_svar *kp = new_var(P, lk->u.for_.var, "p"), *jp = new_var(P, lj->u.for_.var, "p");
    rx_expr *kto = P->kblock ? tiled(P, P->ko, P->kc, kp) : var(P, kp);
    rx_expr *jto = tiled(P, P->jo, P->nr, jp);
    rx_vmap pm = {0};
    for (int k = 0; k < t->n; k++) {
        const rx_svar *lv = t->loops[k]->u.for_.var, *iv = t->its[k]->var;
        rx_expr *to = k == t->p ? kto : k == t->p - 1 ? jto : var(P, lv);
        rx_vmap_set(&pm, lv, to);
        if (iv != lv) rx_vmap_set(&pm, iv, to);
    }
    rx_expr *val = rx_expr_subst(P->a, (rx_expr *)P->bexpr, &pm);
    rx_vmap_free(&pm);
    rx_expr *pi[2] = {var(P, kp), var(P, jp)};
    rx_stmt *st = mk_store(P->a, P->panel, pi, 2, val);
    bool fj = always_full(P->N, P->nr);
    rx_expr *ej = fj ? lit(P, P->nr) : part_extent(P, P->N, P->jo, P->nr);
    rx_expr *ek = P->kblock ? part_extent(P, P->K, P->ko, P->kc) : P->K;
    if (P->transposed) /* read along the source's rows (k), write the panel's columns */
        return mk_for(P->a, jp, ej, RX_LOOP_SERIAL, mk_for(P->a, kp, ek, RX_LOOP_SERIAL, st));
    return mk_for(P->a, kp, ek, RX_LOOP_SERIAL, mk_for(P->a, jp, ej, RX_LOOP_VECTORIZED, st));
}

/* The tiled replacement of nest t; pack_sym_rows: B may be packed with a symbolic M
 (*sym_packed then says whether it was). */
static rx_stmt *build_one(rx_module *m, const tnest *t, bool pack_sym_rows, bool *sym_packed,
                          bool outer_par)
{
    tplan P = {0};
    P.m = m;
    P.a = m->arena;
    P.t = t;
    P.pack_sym_rows = pack_sym_rows;
    P.has_i = t->p >= 2;
    const rx_stmt *lj = t->loops[t->p - 1], *li = P.has_i ? t->loops[t->p - 2] : NULL;
    P.N = lj->u.for_.extent;
    P.M = li ? li->u.for_.extent : NULL;
    P.K = t->n - t->p == 1 ? t->loops[t->p]->u.for_.extent : NULL;
    plan_sizes(&P);
    P.jo = new_var(&P, lj->u.for_.var, "o");
    P.jj = new_var(&P, lj->u.for_.var, "i");
    if (li) {
        P.io = new_var(&P, li->u.for_.var, "o");
        P.ii = new_var(&P, li->u.for_.var, "i");
    }
    if (P.kblock) {
        P.ko = new_var(&P, t->loops[t->p]->u.for_.var, "o");
        P.kk = new_var(&P, t->loops[t->p]->u.for_.var, "i");
    }
    /* substitution: iterators and loop variables to their new index expressions */
    for (int k = 0; k < t->n; k++) {
        const rx_svar *lv = t->loops[k]->u.for_.var, *iv = t->its[k]->var;
        rx_expr *to = var(&P, lv);
        if (k == t->p - 1) to = tiled(&P, P.jo, P.nr, P.jj);
        else if (li && k == t->p - 2) to = tiled(&P, P.io, P.mr, P.ii);
        else if (P.kblock && k == t->p) to = tiled(&P, P.ko, P.kc, P.kk);
        rx_vmap_set(&P.sub, lv, to);
        if (iv != lv) rx_vmap_set(&P.sub, iv, to);
    }
    if (P.bload) P.panel = panel_buffer(&P);
    rx_stmts body = tile(&P);
    rx_stmt *s;
    rx_expr *nj = ceil_div(&P, P.N, P.nr, false), *ni = li ? ceil_div(&P, P.M, P.mr, false) : NULL;
    rx_stmt *outer;
    if (P.io_first) {
        s = for_list(P.a, P.jo, nj, RX_LOOP_SERIAL, body);
        outer = s = mk_for(P.a, P.io, ni, RX_LOOP_SERIAL, s);
    } else if (P.bload) { /* jo { alloc panel; [ko {] pack; io {..} [}] } (li, q = 1) */
        rx_stmt *items[3] = {pack_loops(&P), for_list(P.a, P.io, ni, RX_LOOP_SERIAL, body)};
        rx_stmts in = list_of(P.a, items, 2);
        if (P.kblock) {
            items[1] = for_list(P.a, P.ko, ceil_div(&P, P.K, P.kc, true), RX_LOOP_SERIAL, in);
            in = list_of(P.a, items + 1, 1);
        }
        items[0] = rx_s_alloc(P.a, P.panel);
        for (int k = 0; k < in.n; k++) items[k + 1] = in.items[k];
        outer = s = for_list(P.a, P.jo, nj, RX_LOOP_SERIAL, list_of(P.a, items, in.n + 1));
    } else {
        s = li ? for_list(P.a, P.io, ni, RX_LOOP_SERIAL, body) : NULL;
        if (P.kblock) s = mk_for(P.a, P.ko, ceil_div(&P, P.K, P.kc, true), RX_LOOP_SERIAL, s);
        outer = s = s ? mk_for(P.a, P.jo, nj, RX_LOOP_SERIAL, s)
                      : for_list(P.a, P.jo, nj, RX_LOOP_SERIAL, body);
    }
    /* the batch loops, rebuilt around it; then the parallel loop (file essay) */
    rx_stmt *lit_batch = NULL, *sym_batch = NULL;
    int64_t e;
    for (int k = t->p - 3; k >= 0; k--) {
        const rx_stmt *l = t->loops[k];
        s = mk_for(P.a, l->u.for_.var, l->u.for_.extent, RX_LOOP_SERIAL, s);
        if (!rx_expr_is_const(l->u.for_.extent, &e)) sym_batch = s;
        else if (e >= 2) lit_batch = s;
    }
    bool olit = rx_expr_is_const(outer->u.for_.extent, &e);
    rx_stmt *par = lit_batch;
    if (!par && olit && e >= 2) par = outer;
    if (!par && !outer_par) par = sym_batch;
    if (!par && !olit) par = outer;
    if (par) par->u.for_.loop_kind = RX_LOOP_PARALLEL;
    rx_vmap_free(&P.sub);
    if (sym_packed) *sym_packed = P.bload && !P.transposed && li && !rx_expr_is_const(P.M, &e);
    if (par && par == sym_batch && !olit) { /* IF (batch >= 2) s ELSE the tiles parallel */
        rx_arena *a = m->arena;
        rx_stmt *alt = build_one(m, t, pack_sym_rows, NULL, true);
        return rx_s_if(a, rx_e_binary(a, RX_E_GE, sym_batch->u.for_.extent, rx_e_int(a, 2)),
                       rx_stmts_one(a, s), rx_stmts_one(a, alt));
    }
    return s;
}

/* The tiled replacement of nest t: with a symbolic M that packing would serve, IF (M >=
 * PACK_MIN_ROWS) the packed nest ELSE the unpacked one (file essay, "Packing"). */
static rx_stmt *build_nest(rx_module *m, const tnest *t)
{
    bool sym = false;
    rx_stmt *packed = build_one(m, t, true, &sym, false);
    if (!sym) return packed;
    rx_arena *a = m->arena;
    rx_stmt *plain = build_one(m, t, false, NULL, false);
    return rx_s_if(a, rx_e_binary(a, RX_E_GE, t->loops[t->p - 2]->u.for_.extent,
                                  rx_e_int(a, PACK_MIN_ROWS)),
                   rx_stmts_one(a, packed), rx_stmts_one(a, plain));
}

/* True when some LOAD of e (of a buffer other than b) has indices free of I that use K
 * and J (v: ikj_vars): an operand all rows share, a weight. */
static bool shared_load(const rx_expr *e, const rx_buffer *b, const rx_svar *const v[6])
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && e->u.load.buf != b && !idx_uses(e, v[0], v[1]) &&
        idx_uses(e, v[2], v[3]) && idx_uses(e, v[4], v[5]))
        return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (shared_load(rx_expr_child(e, i), b, v)) return true;
    return false;
}

/* Rows from the batch (file essay): when nest t has one reduce loop, an I of literal
 * extent 1 and a batch loop L right outside it (not a literal below 2) whose variable
 * some load that uses K and J does not use, *r is t with L and I exchanged: L's
 * iterations become the rows of the register tile, the I of extent 1 a batch loop. */
static bool rows_from_batch(const tnest *t, tnest *r)
{
    int64_t e;
    int i = t->p - 2, l = t->p - 3;
    if (l < 0 || t->n - t->p != 1) return false;
    if (!rx_expr_is_const(t->loops[i]->u.for_.extent, &e) || e != 1) return false;
    if (rx_expr_is_const(t->loops[l]->u.for_.extent, &e) && e < 2) return false;
    *r = *t;
    r->loops[i] = t->loops[l];
    r->its[i] = t->its[l];
    r->loops[l] = t->loops[i];
    r->its[l] = t->its[i];
    const rx_svar *v[6];
    ikj_vars(r, v);
    return shared_load(r->upd, r->C, v);
}

/* The tiled replacement of nest t (file essay): rows from the batch where they apply,
 * under IF (L >= 2) with t's own tiling in the ELSE when L's extent is symbolic. */
static rx_stmt *build(rx_module *m, const tnest *t)
{
    tnest r;
    if (!rows_from_batch(t, &r)) return build_nest(m, t);
    rx_stmt *rows = build_one(m, &r, true, NULL, false); /* packed at any row count: no IF */
    rx_expr *ext = r.loops[r.p - 2]->u.for_.extent;
    if (rx_expr_is_const(ext, NULL)) return rows;
    rx_arena *a = m->arena;
    rx_stmt *one = build_nest(m, t);
    return rx_s_if(a, rx_e_binary(a, RX_E_GE, ext, rx_e_int(a, 2)), rx_stmts_one(a, rows),
                   rx_stmts_one(a, one));
}

/* The tiled replacement of FOR s, or NULL when it is not a reduction nest. */
static rx_stmt *tile_nest(rx_module *m, rx_stmt *s)
{
    tnest t;
    return match(s, &t) ? build(m, &t) : NULL;
}

bool rx_schedule_tile(rx_module *m, int *ntiled)
{
    int n = rx_schedule_nests(m, tile_nest);
    if (ntiled) *ntiled = n;
    return true;
}
