/*
 * plan.c — dynamic shape-aware static memory planning (paper §4.3, Algorithm 3), run
 * per graph function after liveness.c and before lower.c emits code.
 *
 * What is planned: the output tensors of call_tir / call_dps_library (each field of a
 * tuple output on its own) that do not escape, as lifetime.c decides: used only as
 * arguments of DPS calls, shape_of, graph functions that never return a parameter,
 * through copies, match_cast and get_item of the call's tuple. A body result (the
 * function's, or a branch's, which flows to the if's register), a tuple field, a
 * built-in's or callable value's argument lets a tensor escape, and it keeps a storage
 * of its own. Parameters are never planned. So a planned tensor is dead, with nothing
 * aliasing it, after its last program point (lifetime.c), and a lifted workspace (a
 * trailing field of a call_tir's tuple output that nothing extracts) dies with the
 * call.
 *
 * Sizes (lifetime.c): element bytes × Π dims, simplified where the function's
 * `upper_bounds` are bound (rx_arith_bind_range, in a private arithmetic context so
 * they never leak into the emitted code's simplification). A size with a finite
 * constant upper bound (rx_arith_const_bound) is static: its bound.
 *
 * Step 0 (concat fields in place, concat_place.c): the fields of an rt.concat that
 * its producers can write straight into its output are placed inside it (host: the
 * output's alloc, off: the byte offset, maybe symbolic), and the output's points are
 * widened over theirs; Steps 1 and 2 place the output only, and its fields with it.
 * Step 1 (static arena): every static tensor gets an offset in one arena allocated once
 * at function entry (so with upper bounds the whole function allocates once, whatever
 * the shapes at run time). Two tensors whose live ranges share a program point get
 * disjoint byte ranges; tensors of the two branches of an if never share one (their
 * program points are disjoint), so they may overlap. Placement is greedy (TFLite's
 * greedy-by-size family): in some order, each tensor at the best-fitting (or lowest)
 * gap among the ranges of the tensors already placed that conflict with it, else above
 * them all; offsets are multiples of 64 bytes. A few orders (largest first, largest
 * bytes × lifetime first, longest-lived first, program order) and both gap rules are
 * tried and the smallest arena kept. It is never less than the most bytes of its
 * tensors live at one point (arena_live_bytes in the metadata), which it usually meets
 * within a few percent (exactly, on the benchmark's Llama decoders). Why offsets rather
 * than Algorithm 3's whole storages for static sizes: a storage serves one tensor at a
 * time, so tensors of different sizes leave gaps (a 2-layer Llama prefill planned so
 * needed 9% above the lower bound). Offsets are only valid up to the bounds, so the
 * function's entry checks each variable they depend on (lower.c: check_bounds).
 * Step 2 (symbolic pool, Algorithm 3): the tensors of symbolic size, in program order:
 * at each program point, first the tensors starting there request a storage, then the
 * tensors whose last point it is free theirs (so an output never shares with an input
 * of the same call). RequestReuseWithSymShape: a free storage whose size is proved
 * equal (rx_arith_prove_equal: `n * 2 * 4` serves `2 * n * 4`; dtype plays no part),
 * else NewStorage of that size, allocated right before its first tensor in that
 * tensor's body (its home). A storage made in a branch leaves the pool when the branch
 * ends (its register is not set on the other path).
 * Step 3 (release): each storage is released after the item of its home body holding
 * the last death of its tensors (the arena's home is the function body).
 *
 * A function with attribute `"memory_plan": false` is not planned (one storage per
 * tensor), nor is any function when the build turns planning off (opt level 0, or
 * --disable-pass memory_plan: rx_vmgen_opts.no_plan); that also gives the baseline
 * for measurements. Cost: 8 × O(t² log t) for the arena's t static tensors (conflict
 * scans), plus, per symbolic request, one equality proof per free storage.
 */
#include "vg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ALIGN = 64 }; /* arena offsets: what the pool guarantees for a storage */

typedef struct pctx {
    vg_fn *F;
    vg_plan *P;
    bool *busy;  /* storage -> holds a live tensor */
    bool *gone;  /* storage -> left the pool (branch-local, branch ended) */
    int cap;     /* of busy and gone */
    int32_t *host;   /* alloc -> the rt.concat output it is placed inside (Step 0), -1 */
    rx_expr **off;   /* alloc placed so -> its byte offset in the output's storage */
    rx_expr **size;  /* rt.concat output with fields inside -> its storage's bytes */
} pctx;

static bool candidate(const vg_plan *P, const vg_alloc *a) { return vg_plannable(P, a); }

static int64_t round_up(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* ---- Step 1: the static arena ---- */

typedef struct sortkey { /* what the sorts order allocs by (qsort has no context) */
    int64_t k1, k2;          /* primary and secondary keys, ascending */
    int32_t i;               /* alloc index, the last key */
    int64_t end;             /* conflicts: end of the byte range */
} sortkey;

static int by_keys(const void *x, const void *y)
{
    const sortkey *a = x, *b = y;
    if (a->k1 != b->k1) return a->k1 < b->k1 ? -1 : 1;
    if (a->k2 != b->k2) return a->k2 < b->k2 ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int64_t need_of(const vg_alloc *a) { return round_up(a->bound > 0 ? a->bound : 1); }

/* Places the tensors of order[0..n) in that order, each at the best-fitting gap
 * (best_fit) or the lowest one that holds it, among the ranges of the tensors placed
 * before it that it conflicts with; off[k] gets order[k]'s offset. Returns the arena
 * size. */
static int64_t pack(const vg_plan *P, const sortkey *order, int n, bool best_fit, int64_t *off)
{
    RX_VEC(sortkey) conflict = {0};
    int64_t size = 0;
    for (int k = 0; k < n; k++) {
        const vg_alloc *a = &P->allocs.items[order[k].i];
        int64_t need = need_of(a);
        conflict.n = 0;
        for (int j = 0; j < k; j++) {
            const vg_alloc *b = &P->allocs.items[order[j].i];
            if (b->tick0 <= a->tick1 && a->tick0 <= b->tick1) {
                sortkey ck = {off[j], 0, order[j].i, off[j] + need_of(b)};
                RX_VEC_PUSH(conflict, ck);
            }
        }
        if (conflict.n) qsort(conflict.items, (size_t)conflict.n, sizeof *conflict.items, by_keys);
        int64_t at = 0, best = -1, best_gap = INT64_MAX;
        for (int j = 0; j < conflict.n && (best_fit || best < 0); j++) {
            int64_t gap = conflict.items[j].k1 - at;
            if (gap >= need && gap < best_gap) best = at, best_gap = gap;
            if (conflict.items[j].end > at) at = conflict.items[j].end;
        }
        off[k] = best >= 0 ? best : at;
        if (off[k] + need > size) size = off[k] + need;
    }
    RX_VEC_FREE(conflict);
    return size;
}

/* Step 1: packs the static tensors with a few orders (largest first; largest area of
 * bytes × program points first; longest-lived first; program order) and both gap
 * rules, keeps the smallest arena, and records arena_min (what a perfect packing
 * would need: the most arena bytes live at one program point). */
static void arena(pctx *c)
{
    vg_plan *P = c->P;
    RX_VEC(sortkey) order = {0};
    for (int32_t i = 0; i < P->allocs.n; i++)
        if (candidate(P, &P->allocs.items[i]) && P->allocs.items[i].bound >= 0 && c->host[i] < 0) {
            sortkey k = {0, 0, i, 0};
            RX_VEC_PUSH(order, k);
        }
    if (!order.n) return;
    int n = order.n;
    int64_t *off = rx_xmalloc(sizeof(int64_t) * 2 * (size_t)n), *best_off = off + n;
    sortkey *best_order = rx_xmalloc(sizeof *best_order * (size_t)n);
    int64_t best = INT64_MAX;
    for (int rule = 0; rule < 4; rule++) {
        for (int k = 0; k < n; k++) {
            const vg_alloc *a = &P->allocs.items[order.items[k].i];
            int64_t len = a->tick1 - a->tick0 + 1, sz = need_of(a);
            sortkey *o = &order.items[k];
            switch (rule) {
            case 0: o->k1 = -sz, o->k2 = a->tick0; break;
            case 1: o->k1 = -(sz / ALIGN) * len, o->k2 = -sz; break;
            case 2: o->k1 = -len, o->k2 = -sz; break;
            default: o->k1 = a->tick0, o->k2 = -sz; break;
            }
        }
        qsort(order.items, (size_t)n, sizeof *order.items, by_keys);
        for (int fit = 0; fit < 2; fit++) {
            int64_t size = pack(P, order.items, n, fit == 0, off);
            if (size < best) {
                best = size;
                memcpy(best_off, off, sizeof(int64_t) * (size_t)n);
                memcpy(best_order, order.items, sizeof *best_order * (size_t)n);
            }
        }
    }
    vg_storage st = {NULL, best, 0, -1, -1, false};
    P->arena = P->st.n;
    RX_VEC_PUSH(P->st, st);
    for (int k = 0; k < n; k++) {
        vg_alloc *a = &P->allocs.items[best_order[k].i];
        a->offset = best_off[k];
        a->storage = P->arena;
        P->nplanned++;
    }
    for (int32_t i = 0; i < P->allocs.n; i++) {
        int32_t h = c->host[i];
        if (h < 0 || P->allocs.items[h].storage != P->arena) continue;
        vg_alloc *a = &P->allocs.items[i];
        int64_t rel;
        RX_ASSERT(rx_expr_is_const(c->off[i], &rel));
        a->storage = P->arena;
        a->offset = P->allocs.items[h].offset + rel;
        P->nplanned++;
    }
    for (int k = 0; k < n; k++) {
        const vg_alloc *a = &P->allocs.items[order.items[k].i];
        int64_t live = 0;
        for (int j = 0; j < n; j++) {
            const vg_alloc *b = &P->allocs.items[order.items[j].i];
            if (b->tick0 <= a->tick0 && a->tick0 <= b->tick1) live += need_of(b);
        }
        if (live > P->arena_min) P->arena_min = live;
    }
    free(off), free(best_order);
    RX_VEC_FREE(order);
}

/* ---- Step 2: the symbolic pool ---- */

static int new_storage(pctx *c, rx_expr *bytes, int32_t home)
{
    vg_storage s = {bytes, -1, home, -1, -1, false};
    RX_VEC_PUSH(c->P->st, s);
    if (c->P->st.n > c->cap) {
        int nc = c->cap ? 2 * c->cap : 16;
        c->busy = rx_xrealloc(c->busy, sizeof(bool) * (size_t)nc);
        c->gone = rx_xrealloc(c->gone, sizeof(bool) * (size_t)nc);
        c->cap = nc;
    }
    c->busy[c->P->st.n - 1] = c->gone[c->P->st.n - 1] = false;
    return c->P->st.n - 1;
}

/* RequestReuseWithSymShape, else NewStorage: the storage for alloc a. */
static void request(pctx *c, vg_alloc *a)
{
    vg_plan *P = c->P;
    int best = -1;
    for (int s = 0; s < P->st.n && best < 0; s++) {
        const vg_storage *st = &P->st.items[s];
        if (s != P->arena && !c->busy[s] && !c->gone[s] && rx_arith_prove_equal(P->ar, st->bytes, a->bytes))
            best = s;
    }
    int32_t ai = (int32_t)(a - P->allocs.items);
    if (c->size[ai]) { /* with fields inside: a storage of its own size */
        best = new_storage(c, c->size[ai], a->body);
        P->st.items[best].whole = true;
    }
    if (best < 0) best = new_storage(c, a->bytes, a->body);
    c->busy[best] = true;
    a->storage = best;
    a->offset = 0;
    P->nplanned++;
}

static void pool(pctx *c)
{
    vg_fn *F = c->F;
    vg_plan *P = c->P;
    RX_VEC(int32_t) sym = {0};
    RX_VEC(sortkey) dying = {0};
    RX_VEC(sortkey) starting = {0};
    for (int32_t i = 0; i < P->allocs.n; i++)
        if (candidate(P, &P->allocs.items[i]) && P->allocs.items[i].bound < 0 && c->host[i] < 0) {
            sortkey k = {P->allocs.items[i].tick0, 0, i, 0}; /* program order but for hosts */
            RX_VEC_PUSH(starting, k);
            k.k1 = P->allocs.items[i].tick1;
            RX_VEC_PUSH(dying, k);
        }
    if (starting.n) qsort(starting.items, (size_t)starting.n, sizeof *starting.items, by_keys);
    for (int i = 0; i < starting.n; i++) RX_VEC_PUSH(sym, starting.items[i].i);
    RX_VEC_FREE(starting);
    if (dying.n) qsort(dying.items, (size_t)dying.n, sizeof *dying.items, by_keys);
    if (P->st.n > c->cap) {
        c->cap = P->st.n;
        c->busy = rx_xrealloc(c->busy, sizeof(bool) * (size_t)c->cap);
        c->gone = rx_xrealloc(c->gone, sizeof(bool) * (size_t)c->cap);
    }
    for (int s = 0; s < P->st.n; s++) c->busy[s] = c->gone[s] = false;
    int si = 0, di = 0;
    for (int64_t t = 0; t < F->nticks && (si < sym.n || di < dying.n); t++) {
        for (; si < sym.n && P->allocs.items[sym.items[si]].tick0 == t; si++)
            request(c, &P->allocs.items[sym.items[si]]);
        for (; di < dying.n && dying.items[di].k1 == t; di++)
            c->busy[P->allocs.items[dying.items[di].i].storage] = false;
        for (int32_t b = 1; b < F->bodies.n; b++) { /* branches ending here */
            const vg_body *bd = &F->bodies.items[b];
            if (bd->end_tick[bd->nitems - 1] != t) continue;
            for (int s = 0; s < P->st.n; s++)
                if (P->st.items[s].home == b && s != P->arena) c->gone[s] = true;
        }
    }
    RX_VEC_FREE(sym), RX_VEC_FREE(dying);
    for (int32_t i = 0; i < P->allocs.n; i++) { /* the fields inside a pool storage */
        int32_t h = c->host[i];
        if (h < 0 || P->allocs.items[h].storage < 0 || P->allocs.items[h].storage == P->arena) continue;
        vg_alloc *a = &P->allocs.items[i];
        a->storage = P->allocs.items[h].storage;
        a->offset = 0;
        if (!rx_expr_is_const(c->off[i], &a->offset)) a->offset_expr = c->off[i];
        P->nplanned++;
    }
}

/* ---- Step 3 ---- */

static void release_items(pctx *c)
{
    vg_plan *P = c->P;
    for (int i = 0; i < P->allocs.n; i++) {
        const vg_alloc *a = &P->allocs.items[i];
        if (a->storage < 0) continue;
        vg_storage *st = &P->st.items[a->storage];
        int32_t it = vg_item_in(c->F, a->body, a->death, st->home);
        if (it > st->release_item) st->release_item = it;
    }
}

void vg_plan_function(vg_fn *F, vg_plan *P)
{
    const rx_func *f = F->f;
    rx_attr *on = rx_attr_map_get(f->attrs, "memory_plan");
    P->enabled = !F->M->no_plan && !(on && on->kind == RX_A_BOOL && !on->u.b);
    P->arena = -1;
    P->ar = rx_arith_new(F->M->m->arena);
    for (int i = 0; i < f->nsvars; i++) {
        int64_t ub = rx_func_upper_bound(f, f->svars[i]);
        if (ub >= 0) rx_arith_bind_range(P->ar, f->svars[i], 0, ub);
    }
    vg_lifetimes(F, P);
    pctx c = {F, P, NULL, NULL, 0, NULL, NULL, NULL};
    if (P->enabled) {
        c.host = rx_xmalloc(sizeof(int32_t) * ((size_t)P->allocs.n + 1));
        c.off = rx_xmalloc(sizeof(rx_expr *) * ((size_t)P->allocs.n + 1));
        c.size = rx_xmalloc(sizeof(rx_expr *) * ((size_t)P->allocs.n + 1));
        vg_concat_fields(F, P, c.host, c.off, c.size); /* Step 0 */
        arena(&c);      /* Step 1 */
        pool(&c);       /* Step 2 */
        release_items(&c); /* Step 3 */
    }
    for (int i = 0; i < P->allocs.n; i++) {
        const vg_alloc *a = &P->allocs.items[i];
        if (a->bytes && a->storage < 0)
            P->bytes_unplanned = P->bytes_unplanned
                                     ? rx_e_binary(F->M->m->arena, RX_E_ADD, P->bytes_unplanned, a->bytes)
                                     : a->bytes;
    }
    free(c.busy), free(c.gone), free(c.host), free(c.off), free(c.size);
}

void vg_plan_free(vg_plan *P)
{
    free(P->first_alloc);
    RX_VEC_FREE(P->allocs);
    RX_VEC_FREE(P->st);
    if (P->ar) rx_arith_free(P->ar);
    memset(P, 0, sizeof *P);
}

/* A byte total simplified, and its constant bound (e NULL: nothing allocated). */
static void total(vg_fn *F, rx_expr *e, const rx_expr **out, int64_t *max)
{
    rx_arena *a = F->M->m->arena;
    if (!e) e = rx_e_int(a, 0);
    e = rx_arith_simplify(F->plan.ar, e);
    *out = e;
    int64_t lo, hi;
    rx_arith_const_bound(F->plan.ar, e, &lo, &hi);
    *max = hi < INT64_MAX ? hi : -1;
}

void vg_plan_summary(vg_fn *F, rx_vmgen_mem *out)
{
    const vg_plan *P = &F->plan;
    rx_arena *a = F->M->m->arena;
    memset(out, 0, sizeof *out);
    out->planned = P->enabled;
    int32_t unplanned = 0;
    for (int i = 0; i < P->allocs.n; i++) {
        out->allocs += P->allocs.items[i].bytes != NULL;
        unplanned += P->allocs.items[i].bytes && P->allocs.items[i].storage < 0;
    }
    out->storages = unplanned + P->st.n;
    out->planned_storages = P->st.n;
    out->planned_tensors = P->nplanned;
    rx_expr *with = P->bytes_unplanned;
    for (int s = 0; s < P->st.n; s++) {
        const vg_storage *st = &P->st.items[s];
        out->static_storages += st->size >= 0;
        if (st->size >= 0) out->arena_bytes += st->size;
        rx_expr *e = st->size >= 0 ? rx_e_int(a, st->size) : st->bytes;
        with = with ? rx_e_binary(a, RX_E_ADD, with, e) : e;
    }
    total(F, P->bytes_without, &out->bytes_without, &out->max_without);
    total(F, with, &out->bytes_with, &out->max_with);
    rx_expr *planned = NULL;
    for (int s = 0; s < P->st.n; s++) {
        const vg_storage *st = &P->st.items[s];
        rx_expr *e = st->size >= 0 ? rx_e_int(a, st->size) : st->bytes;
        planned = planned ? rx_e_binary(a, RX_E_ADD, planned, e) : e;
    }
    total(F, planned, &out->planned_bytes, &out->max_planned);
    out->arena_live_bytes = P->arena_min;
    out->lower_bound = P->lower_bound ? P->lower_bound : rx_e_int(a, 0);
    out->max_lower_bound = P->lower_bound ? P->max_lower_bound : 0;
    out->peak_bound = P->peak_bound ? P->peak_bound : rx_e_int(a, 0);
    out->max_peak_bound = P->peak_bound ? P->max_peak_bound : 0;
}
