/*
 * schedule_radix.c — flat loops rebuilt as loop nests from the mixed radix their index
 * math splits the flat index by (TVM's iterator-map detection): a step of the CPU
 * schedule (rx_pass_schedule_cpu) after the row runs (schedule_rows.c), which keep the
 * nests they fuse (a masked softmax's exp nest would otherwise be taken here and leave
 * the row pass: DETR's cross-attention), and before tiling.
 *
 * Why: a fused kernel that ends in a reshape to 1-d (a detection head's
 * permute(0, 2, 3, 1) + reshape(-1) + sigmoid) is one loop over the flat output, and
 * every load decomposes the flat index with divisions: RetinaNet's class scores read
 * x[0, i % 20 + i // 20 % 9 * 20, i // (w * 180), i // 180 % w], two 64-bit divisions
 * by a symbolic divisor and four by literals per element, in a loop GCC cannot
 * vectorize (zoo4 retina_post: its top kernel, 1.71x ONNX Runtime).
 *
 * What is rewritten: a top-level perfect nest for v_0 .. for v_{n-1} (serial, unbound,
 * from 0, extents s_k free of loads and loop variables) whose body is one STORE
 * C[v_0, .., v_{n-1}] = VALUE (directly or in a block without init whose spatial
 * iterators are bound to exactly v_0 .. v_{n-1}), C's extents the loops' (structurally)
 * and VALUE loading no C: one pass over C in order, the flat index i = Σ v_k S_k (S_k
 * the product of the extents after k), E = Π s_k iterations. (A fused reshape to 1-d
 * is the one-loop case; RetinaNet's box deltas, reshaped to (h * w * 9, 4), the
 * two-loop one.) Every occurrence of the v_k in VALUE is read as a digit range of i,
 * floordiv(floormod(i, M), D) for a pair of points D | M: v_k is (S_k, S_k s_k) (v_0:
 * (S_0, E)); (x // q) of a range x = (D, M) is (D q, M) and (x % q) is (D, D q), q a
 * positive literal or a product of sizes (shape variables, scalar parameters); and
 * lo + hi * W of adjacent ranges lo = (D, P), hi = (P, M) with W = P / D is (D, M)
 * (a flat offset spelled out: i % 20 + i // 20 % 9 * 20 is (1, 180)). The points, with
 * 1 and E, must form one chain under exact division (rx_arith_exact_quotient:
 * monomials, p_0 = 1 | p_1 | .. | p_K = E), and some range must divide by a
 * non-literal (a literal divisor costs GCC a multiply and a shift; such nests are left
 * as they were, as are nests without divisions). The chain gives digits t_j in
 * [0, p_{j+1} / p_j), i = Σ t_j p_j, and each range (D, M) = Σ_{D <= p_j < M} t_j
 * (p_j / D): no division left.
 *
 * Digits merge. The head over a batch, x (b, 12, h, w) permuted and flattened, has the
 * chain (1, 12, 12 w, 12 h w, E): four digits (c, x, y, n), four loops whose innermost
 * runs 12 elements. Each load whose indices load nothing is an access with a flat
 * offset (its Horner offset with the digits substituted); when it is linear in the
 * digits (proved: off == off(0) + Σ coef_j t_j, the coefficients taken as off(e_j) -
 * off(0)), digits j and j + 1 (a merged run and the next) can be one loop for it when
 * coef_{j+1} == coef_j * extent_j: the offset moves the same. A point is kept when some
 * range outside a linear access uses it (a condition, a value, a data-dependent or
 * non-linear load), or some linear access does not merge across it; the store's offset
 * i always merges. There x's offset is n * 12 h w + c * h w + y * w + x: x and y merge,
 * three runs (12; h w; b). RetinaNet's scores: (1, 180, E), out[a * 180 + c] =
 * sigmoid(x[c * h * w + a]).
 *
 * The new nest: `for o in range(E / R) (parallel) { let b_k = o // (P_k / R) % R_k
 * (each outer run k) { for c in range(R) (vectorized) { C[0, .., 0, o * R + c] =
 * VALUE' } } }`, R the innermost run's extent; the outer runs are o's digits, found
 * once per R elements. VALUE' has each linear load read flat, (0, .., 0, offset) (the
 * IR reads a LOAD or STORE as its Horner offset: schedule_flat.c; the interpreter and
 * the C generator index flat), and every other range written over the runs, which its
 * points bound. When everything merges into one run (every access steps with i: a
 * reshape read in order), nothing is rewritten: schedule_flat.c and schedule.c's flat
 * split already serve it. Exact: o * R + c is i, each element of C is stored once
 * with the same VALUE at the same indices; iterations are independent (distinct
 * elements of C, VALUE reads no C), so o may be parallel and c a simd loop, whatever R
 * is at run time (the parallel loop over E / R keeps every thread busy when the
 * outermost digit is a batch of 1).
 *
 * Canonical index math. VALUE is read after canon(): each division's and modulo's
 * operands and each load's indices simplified (rx_arith_simplify; float math left as
 * written, so the rebuilt value computes the same floats). Fusion inlines a reshape
 * with a broadcast row substituted unfolded: zoo6 stn_grid's linspace grid read
 * f32((h * w * 0 + i1) % w), which range_of cannot read (h * w * 0 is no digit), so the
 * nest kept schedule.c's flat split: four int64 divisions per element of (b, h * w, 3).
 * Now: o over b * h * w, its three digits LETs, a run of the 3 fields. Measured (b 32,
 * 128 x 132, 2 threads, same run, load 15): that kernel's fastest call 3.8 -> 2.8 ms.
 *
 * Copies (a VALUE that only loads) are rebuilt by the data-movement step at every opt
 * level (schedule_copy.c's rx_schedule_moves calls rx_schedule_radix_nest first); other
 * nests by the "schedule" step, after its row runs.
 *
 * Cost: per candidate nest, a walk of VALUE, one proof per access and digit, new nodes
 * only for a rewritten nest.
 */
#include <string.h>

#include "relax/arith.h"
#include "schedule_int.h"

enum { MAX_POINTS = 12, MAX_ACC = 32, MAX_LOOPS = 8, MAX_KIDS = 16 };

typedef struct radix {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    const rx_svar *iv[MAX_LOOPS]; /* the nest's indices (block iterators, or the loops') */
    rx_expr *ivD[MAX_LOOPS], *ivM[MAX_LOOPS]; /* index k is the range (ivD[k], ivM[k]) */
    const rx_svar *lv[MAX_LOOPS]; /* the loop variables */
    int nv;
    rx_expr *E;          /* the flat extent: the product of the loops' */
    rx_expr *pt[MAX_POINTS]; /* points (unsorted while collected; then the chain) */
    int npt;
    bool forced[MAX_POINTS]; /* kept: a range outside a linear access uses it */
    bool symbolic;       /* a range divides by a non-literal (while collecting) */
    bool ok;
    /* the full-digit substitution */
    rx_svar *t[MAX_POINTS];  /* digit j in [0, pt[j + 1] / pt[j]) */
    rx_expr *ext[MAX_POINTS];
    /* the runs after merging */
    bool keep[MAX_POINTS];   /* point j bounds a run */
    rx_expr *run_var[MAX_POINTS]; /* at a kept point j < K: the run's variable */
} radix;

/* ---------------------------------------------------------------- ranges */

static rx_expr *mul(radix *r, rx_expr *x, rx_expr *y)
{
    return rx_arith_simplify(r->ar, rx_e_binary(r->a, RX_E_MUL, x, y));
}

/* True when e's variables are shape variables or scalar parameters (sizes, >= 0). */
static bool shape_only(const rx_expr *e)
{
    if (e->kind == RX_E_VAR) return e->u.var->kind == RX_SV_SHAPE || e->u.var->kind == RX_SV_PARAM;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!shape_only(rx_expr_child(e, i))) return false;
    return true;
}

static bool range_of(radix *r, const rx_expr *e, rx_expr **D, rx_expr **M);

/* e as W * (a range): a range, or a range times a factor free of the nest (*W = NULL
   for a range alone). */
static bool weighted(radix *r, const rx_expr *e, rx_expr **D, rx_expr **M, rx_expr **W)
{
    *W = NULL;
    if (range_of(r, e, D, M)) return true;
    if (e->kind != RX_E_MUL) return false;
    for (int s = 0; s < 2; s++) {
        rx_expr *x = s ? e->u.op.b : e->u.op.a, *q = s ? e->u.op.a : e->u.op.b;
        if (shape_only(q) && !rx_expr_loads_buf(q, NULL) && range_of(r, x, D, M)) {
            *W = q;
            return true;
        }
    }
    return false;
}

/* e as a digit range of the flat index i: *D, *M set (not yet checked against the
   chain): an index of the nest, (x // q), (x % q), or lo + hi * (M_lo / D_lo) for
   adjacent ranges lo = (D, P) and hi = (P, M) (a flat offset written out). */
static bool range_of(radix *r, const rx_expr *e, rx_expr **D, rx_expr **M)
{
    if (e->kind == RX_E_VAR) {
        for (int k = 0; k < r->nv; k++)
            if (e->u.var == r->iv[k]) {
                *D = r->ivD[k];
                *M = r->ivM[k];
                return true;
            }
        return false;
    }
    if (e->kind == RX_E_ADD) {
        for (int s = 0; s < 2; s++) {
            rx_expr *lo = s ? e->u.op.b : e->u.op.a, *hi = s ? e->u.op.a : e->u.op.b;
            rx_expr *d0, *m0, *w0, *d1, *m1, *w1;
            if (!weighted(r, lo, &d0, &m0, &w0) || w0 || !weighted(r, hi, &d1, &m1, &w1) || !w1 ||
                !rx_arith_prove_equal(r->ar, m0, d1) ||
                !rx_arith_prove_equal(r->ar, mul(r, w1, d0), m0))
                continue;
            *D = d0;
            *M = m1;
            return true;
        }
        return false;
    }
    if (e->kind != RX_E_FLOORDIV && e->kind != RX_E_FLOORMOD) return false;
    rx_expr *q = e->u.op.b;
    int64_t c;
    if (rx_expr_loads_buf(q, NULL) || (rx_expr_is_const(q, &c) && c <= 0) || !shape_only(q))
        return false;
    rx_expr *d, *mm;
    if (!range_of(r, e->u.op.a, &d, &mm)) return false;
    r->symbolic |= !rx_expr_is_const(q, &c);
    if (e->kind == RX_E_FLOORDIV) {
        *D = mul(r, d, q);
        *M = mm;
    } else {
        *D = d;
        *M = mul(r, d, q);
    }
    return true;
}

/* The index of point p in r->pt (adding it while collecting), or -1. */
static int point(radix *r, rx_expr *p, bool add)
{
    for (int i = 0; i < r->npt; i++)
        if (rx_expr_same(r->pt[i], p) || rx_arith_prove_equal(r->ar, r->pt[i], p)) return i;
    if (!add) return -1;
    if (r->npt == MAX_POINTS) {
        r->ok = false;
        return -1;
    }
    r->pt[r->npt] = p;
    r->forced[r->npt] = false;
    return r->npt++;
}

/* True when some index of load e loads (a data-dependent read). */
static bool data_dependent(const rx_expr *e)
{
    for (int j = 0; j < e->u.load.nidx; j++)
        if (rx_expr_loads_buf(e->u.load.idx[j], NULL)) return true;
    return false;
}

/* Collects the points of the ranges in e; in_access: e is (in) an index of a load that
   may be linear (its points are forced later when it is not). */
static void collect(radix *r, const rx_expr *e, bool in_access)
{
    if (!e || !r->ok) return;
    rx_expr *D, *M;
    if (range_of(r, e, &D, &M)) {
        int a = point(r, D, true), b = point(r, M, true);
        if (a >= 0 && b >= 0 && !in_access) r->forced[a] = r->forced[b] = true;
        return;
    }
    for (int k = 0; e->kind == RX_E_VAR && k < r->nv; k++)
        if (e->u.var == r->lv[k] && r->lv[k] != r->iv[k]) r->ok = false;
    if (e->kind == RX_E_LOAD) {
        bool acc = e->u.load.nidx == e->u.load.buf->ndim && !data_dependent(e);
        for (int j = 0; j < e->u.load.nidx; j++) collect(r, e->u.load.idx[j], acc);
        return;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++) collect(r, rx_expr_child(e, i), in_access);
}

/* Sorts the points into the chain 1 | p_1 | .. | E under exact division; false when
   they are not one chain. */
static bool chain(radix *r)
{
    for (int i = 1; i < r->npt; i++) /* insertion sort by divisibility */
        for (int j = i; j > 0; j--) {
            rx_expr *q = rx_arith_exact_quotient(r->ar, r->pt[j], r->pt[j - 1]);
            if (q) break; /* pt[j - 1] | pt[j]: in order */
            if (!rx_arith_exact_quotient(r->ar, r->pt[j - 1], r->pt[j])) return false;
            rx_expr *t = r->pt[j];
            r->pt[j] = r->pt[j - 1];
            r->pt[j - 1] = t;
            bool f = r->forced[j];
            r->forced[j] = r->forced[j - 1];
            r->forced[j - 1] = f;
        }
    for (int i = 1; i < r->npt; i++)
        if (!rx_arith_exact_quotient(r->ar, r->pt[i], r->pt[i - 1])) return false;
    return rx_expr_is_int(r->pt[0], 1) && rx_arith_prove_equal(r->ar, r->pt[r->npt - 1], r->E);
}

/* Range (D, M) over the digits when which == NULL (Σ t_j (p_j / D)), else over the
   runs (D and M then kept points): Σ b_run (P_run / D). NULL when a bound is not a
   point. */
static rx_expr *range_value(radix *r, rx_expr *D, rx_expr *M, bool runs)
{
    int lo = point(r, D, false), hi = point(r, M, false);
    if (lo < 0 || hi < 0 || (runs && (!r->keep[lo] || !r->keep[hi]))) return NULL;
    rx_expr *s = rx_e_int(r->a, 0);
    for (int j = lo; j < hi; j++) {
        if (runs && !r->keep[j]) continue;
        rx_expr *v = runs ? r->run_var[j] : rx_e_var(r->a, r->t[j]);
        rx_expr *w = rx_arith_exact_quotient(r->ar, r->pt[j], D);
        if (!w) return NULL;
        s = rx_e_binary(r->a, RX_E_ADD, s, rx_e_binary(r->a, RX_E_MUL, v, w));
    }
    return rx_arith_simplify(r->ar, s);
}

typedef struct accs accs;
static rx_expr *subst(radix *r, const accs *as, rx_expr *e, bool runs);

/* ---------------------------------------------------------------- accesses */

typedef struct access {
    const rx_expr *load;            /* the LOAD */
    rx_expr *off0;                  /* its flat offset with every digit 0 */
    rx_expr *coef[MAX_POINTS];      /* per digit */
} access;

struct accs {
    access items[MAX_ACC];
    int n;
};

/* The Horner offset of load e's indices (ranges over the digits). */
static rx_expr *flat_offset(radix *r, const rx_expr *e)
{
    const rx_buffer *b = e->u.load.buf;
    rx_expr *off = rx_e_int(r->a, 0);
    for (int k = 0; k < e->u.load.nidx; k++) {
        off = k ? rx_e_binary(r->a, RX_E_MUL, off, b->shape[k]) : off;
        off = rx_e_binary(r->a, RX_E_ADD, off, subst(r, NULL, e->u.load.idx[k], false));
    }
    return rx_arith_simplify(r->ar, off);
}

/* Forces the points of every range in e. */
static void force(radix *r, const rx_expr *e)
{
    rx_expr *D, *M;
    if (range_of(r, e, &D, &M)) {
        int a = point(r, D, false), b = point(r, M, false);
        if (a >= 0) r->forced[a] = true;
        if (b >= 0) r->forced[b] = true;
        return;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++) force(r, rx_expr_child(e, i));
}

/* Every load of e whose indices load nothing and use i: linear (kept in *as) or its
   points forced. */
static void accesses(radix *r, const rx_expr *e, accs *as)
{
    if (!e || !r->ok) return;
    if (e->kind == RX_E_LOAD && e->u.load.nidx > 0) {
        bool uses = false;
        for (int j = 0; j < e->u.load.nidx; j++)
            for (int k = 0; k < r->nv; k++) uses |= rx_expr_uses_var(e->u.load.idx[j], r->iv[k]);
        if (e->u.load.nidx != e->u.load.buf->ndim) {
            force(r, e);
            return;
        }
        if (data_dependent(e)) {
            for (int j = 0; j < e->u.load.nidx; j++) accesses(r, e->u.load.idx[j], as);
            return;
        }
        if (!uses) return;
        int K = r->npt - 1;
        rx_expr *off = flat_offset(r, e);
        rx_vmap z = {0};
        for (int j = 0; j < K; j++) rx_vmap_set(&z, r->t[j], rx_e_int(r->a, 0));
        rx_expr *off0 = rx_arith_simplify(r->ar, rx_expr_subst(r->a, off, &z));
        access *x = as->n < MAX_ACC ? &as->items[as->n] : NULL;
        rx_expr *lin = off0;
        for (int j = 0; x && j < K; j++) {
            rx_vmap_set(&z, r->t[j], rx_e_int(r->a, 1));
            rx_expr *cj = rx_e_binary(r->a, RX_E_SUB, rx_expr_subst(r->a, off, &z), off0);
            x->coef[j] = rx_arith_simplify(r->ar, cj);
            rx_vmap_set(&z, r->t[j], rx_e_int(r->a, 0));
            lin = rx_e_binary(r->a, RX_E_ADD, lin, rx_e_binary(r->a, RX_E_MUL, x->coef[j],
                                                              rx_e_var(r->a, r->t[j])));
        }
        rx_vmap_free(&z);
        if (x && rx_arith_prove_equal(r->ar, off, lin)) {
            x->load = e;
            x->off0 = off0;
            as->n++;
        } else {
            force(r, e);
        }
        return;
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++) accesses(r, rx_expr_child(e, i), as);
}

/* Decides the runs: r->keep[j] for each point (1 and E always). */
static void merge(radix *r, const accs *as)
{
    int K = r->npt - 1;
    r->keep[0] = r->keep[K] = true;
    int lo = 0;                        /* the current run's first digit */
    rx_expr *ext = r->ext[0];          /* its extent */
    for (int j = 1; j < K; j++) {
        bool cut = r->forced[j];
        for (int x = 0; !cut && x < as->n; x++) {
            rx_expr *want = mul(r, as->items[x].coef[lo], ext);
            cut = !rx_arith_prove_equal(r->ar, as->items[x].coef[j], want);
        }
        r->keep[j] = cut;
        if (cut) {
            lo = j;
            ext = r->ext[j];
        } else {
            ext = mul(r, ext, r->ext[j]);
        }
    }
}

/* ---------------------------------------------------------------- rewrite */

/* e with every range of i replaced by its value: over the digits (runs false, as
   NULL), or over the runs, the linear loads of as read flat. */
static rx_expr *subst(radix *r, const accs *as, rx_expr *e, bool runs)
{
    if (!e) return e;
    for (int x = 0; as && e->kind == RX_E_LOAD && x < as->n; x++) {
        const access *ac = &as->items[x];
        if (ac->load != e) continue;
        rx_expr *off = ac->off0;
        for (int j = 0; j < r->npt - 1; j++)
            if (r->keep[j])
                off = rx_e_binary(r->a, RX_E_ADD, off, rx_e_binary(r->a, RX_E_MUL, ac->coef[j], r->run_var[j]));
        int n = e->u.load.nidx;
        rx_expr **idx = RX_NEWN(r->a, rx_expr *, n);
        for (int k = 0; k < n - 1; k++) idx[k] = rx_e_int(r->a, 0);
        idx[n - 1] = rx_arith_simplify(r->ar, off);
        return rx_e_load(r->a, e->u.load.buf, idx, n);
    }
    rx_expr *D, *M;
    if (range_of(r, e, &D, &M)) {
        rx_expr *v = range_value(r, D, M, runs);
        if (!v) r->ok = false;
        return v ? v : e;
    }
    int nk = rx_expr_nchildren(e);
    if (!nk) return e;
    rx_expr *kids[8], **k = nk <= 8 ? kids : RX_NEWN(r->a, rx_expr *, nk);
    bool changed = false;
    for (int i = 0; i < nk; i++) {
        rx_expr *c = rx_expr_child(e, i);
        k[i] = subst(r, as, c, runs);
        changed |= k[i] != c;
    }
    return changed ? rx_expr_with_children(r->a, e, k) : e;
}

static rx_svar *fresh(radix *r, const char *what)
{
    return rx_svar_new(r->a, rx_arena_printf(r->a, "%s_%s", r->lv[0]->name, what), RX_DT_I64,
                       RX_SV_LOOP, rx_module_new_id(r->m));
}

/* e with every integer division's and modulo's operands and every load's indices in
   the simplifier's canonical form (index math only: float operations are left as
   written). A fused producer's index math often reaches here with its shape algebra
   unfolded: linspace / meshgrid grids reshaped to (b, h * w, 3) read
   (h * w * 0 + i1) % w, whose zero term range_of cannot read as a digit, so the nest
   kept its per-element divisions (zoo6 stn_grid: four int64 divisions per element). */
static rx_expr *canon(radix *r, rx_expr *e)
{
    if (!e) return e;
    if (e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD) return rx_arith_simplify(r->ar, e);
    int n = rx_expr_nchildren(e);
    if (!n) return e;
    rx_expr *kids[MAX_KIDS];
    if (n > MAX_KIDS) return e;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        rx_expr *c = rx_expr_child(e, i);
        kids[i] = e->kind == RX_E_LOAD ? rx_arith_simplify(r->ar, c) : canon(r, c);
        changed |= kids[i] != c;
    }
    return changed ? rx_expr_with_children(r->a, e, kids) : e;
}

static bool serial0(const rx_stmt *s)
{
    return s->kind == RX_S_FOR && s->u.for_.loop_kind == RX_LOOP_SERIAL && !s->u.for_.thread &&
           rx_expr_is_int(s->u.for_.min, 0) && s->u.for_.body.n == 1;
}

rx_stmt *rx_schedule_radix_nest(rx_module *m, rx_stmt *s)
{
    radix r = {.m = m, .a = m->arena, .ok = true};
    rx_stmt *b = s;
    while (b->kind == RX_S_FOR) {
        if (!serial0(b) || r.nv == MAX_LOOPS) return NULL;
        r.lv[r.nv] = r.iv[r.nv] = b->u.for_.var;
        r.nv++;
        b = b->u.for_.body.items[0];
    }
    rx_stmt *st = b;
    if (b->kind == RX_S_BLOCK) {
        if (b->u.block.init.n || b->u.block.niters != r.nv || b->u.block.body.n != 1) return NULL;
        for (int k = 0; k < r.nv; k++) {
            const rx_iter *it = &b->u.block.iters[k];
            if (it->kind != RX_ITER_SPATIAL || !it->bind || it->bind->kind != RX_E_VAR ||
                it->bind->u.var != r.lv[k])
                return NULL;
            r.iv[k] = it->var;
        }
        st = b->u.block.body.items[0];
    }
    if (st->kind != RX_S_STORE || st->u.store.nidx != r.nv || st->u.store.buf->ndim != r.nv ||
        rx_expr_loads_buf(st->u.store.value, st->u.store.buf))
        return NULL;
    /* the store is C[v_0, .., v_{n-1}], C's extents the loops': a flat index */
    const rx_stmt *l = s;
    for (int k = 0; k < r.nv; k++, l = l->u.for_.body.items[0]) {
        rx_expr *x = st->u.store.idx[k], *ek = l->u.for_.extent;
        if (x->kind != RX_E_VAR || x->u.var != r.iv[k] || !shape_only(ek) ||
            !rx_expr_same(ek, st->u.store.buf->shape[k]))
            return NULL;
    }
    r.ar = rx_arith_new(r.a);
    rx_stmt *out = NULL;
    rx_expr *stride = rx_e_int(r.a, 1);
    for (int k = r.nv - 1; k >= 0; k--) {
        r.ivD[k] = stride;
        stride = mul(&r, stride, st->u.store.buf->shape[k]);
        r.ivM[k] = stride;
    }
    r.E = stride;
    point(&r, rx_e_int(r.a, 1), true);
    point(&r, r.E, true);
    rx_expr *val = canon(&r, st->u.store.value);
    collect(&r, val, false);
    if (!r.ok || !r.symbolic || r.npt < 3 || !chain(&r)) goto done;
    int K = r.npt - 1;
    for (int j = 0; j < K; j++) {
        r.t[j] = fresh(&r, "t");
        r.ext[j] = rx_arith_exact_quotient(r.ar, r.pt[j + 1], r.pt[j]);
    }
    accs as = {.n = 0};
    accesses(&r, val, &as);
    if (!r.ok) goto done;
    merge(&r, &as);
    /* the runs: innermost c over R, o over E / R, each outer run a digit of o */
    int first_outer = 1;
    while (!r.keep[first_outer]) first_outer++;
    if (first_outer == K) goto done; /* one run: every access steps with i (schedule.c) */
    rx_expr *R = r.pt[first_outer], *nout = rx_arith_exact_quotient(r.ar, r.E, R);
    if (!nout) goto done;
    rx_svar *o = fresh(&r, "o"), *c = fresh(&r, "c");
    r.run_var[0] = rx_e_var(r.a, c);
    typedef struct { rx_svar *v; rx_expr *val; } let_t;
    let_t lets[MAX_POINTS];
    int nlets = 0;
    for (int j = first_outer; j < K; j++) {
        if (!r.keep[j]) continue;
        int nx = j + 1;
        while (!r.keep[nx]) nx++;
        rx_expr *div = rx_arith_exact_quotient(r.ar, r.pt[j], R);
        rx_expr *v = rx_e_binary(r.a, RX_E_FLOORDIV, rx_e_var(r.a, o), div);
        if (nx < K) v = rx_e_binary(r.a, RX_E_FLOORMOD, v, rx_arith_exact_quotient(r.ar, r.pt[nx], r.pt[j]));
        v = rx_arith_simplify(r.ar, v);
        if (v->kind == RX_E_VAR) {
            r.run_var[j] = v;
        } else {
            lets[nlets].v = fresh(&r, "b");
            lets[nlets].val = v;
            r.run_var[j] = rx_e_var(r.a, lets[nlets++].v);
        }
    }
    rx_expr *value = subst(&r, &as, val, true);
    if (!r.ok) goto done;
    rx_expr **at = RX_NEWN(r.a, rx_expr *, r.nv); /* the store keeps the array; read flat */
    for (int k = 0; k < r.nv - 1; k++) at[k] = rx_e_int(r.a, 0);
    at[r.nv - 1] = rx_arith_simplify(r.ar, rx_e_binary(r.a, RX_E_ADD, rx_e_binary(r.a, RX_E_MUL,
                                                      rx_e_var(r.a, o), R), rx_e_var(r.a, c)));
    rx_stmt *nst = rx_s_store(r.a, st->u.store.buf, at, r.nv, value);
    nst->loc = st->loc;
    rx_stmt *inner = rx_s_for(r.a, c, rx_e_int(r.a, 0), R, RX_LOOP_VECTORIZED, rx_stmts_one(r.a, nst));
    for (int i = nlets - 1; i >= 0; i--) inner = rx_s_let(r.a, lets[i].v, lets[i].val, rx_stmts_one(r.a, inner));
    out = rx_s_for(r.a, o, rx_e_int(r.a, 0), nout, RX_LOOP_PARALLEL, rx_stmts_one(r.a, inner));
    out->loc = s->loc;
done:
    rx_arith_free(r.ar);
    return out;
}

bool rx_schedule_radix(rx_module *m, int *nnests)
{
    int n = rx_schedule_nests(m, rx_schedule_radix_nest);
    if (nnests) *nnests = n;
    return true;
}
