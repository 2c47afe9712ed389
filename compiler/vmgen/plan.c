/*
 * plan.c — dynamic shape-aware static memory planning (paper §4.3, Algorithm 3), run
 * per graph function after liveness.c and before lower.c emits code.
 *
 * What is planned: a binding `v = call_tir(...)` or `call_dps_library(...)` with one
 * tensor output of known shape and dtype, when every use of v is as an argument of a
 * DPS call (call_tir, call_dps_library) or of shape_of. Any other use — a body result
 * (the function's, or a branch's, which flows to the if's register), a tuple field, an
 * argument of a graph call, a MOVE or match_cast alias, a built-in — lets the tensor
 * escape, and it keeps a storage of its own as before. Parameters are never planned.
 * So a planned tensor is dead, with nothing aliasing it, right after the item of its
 * last use (liveness.c: a use inside a branch counts at the if's binding).
 *
 * Step 1 (sizes): each planned tensor's byte size, element bytes × Π dims, simplified
 * in a private arithmetic context where the function's `upper_bounds` are bound
 * (rx_arith_bind_range), so they never leak into the emitted code's simplification. A
 * size whose constant upper bound (rx_arith_const_bound) is finite is static: its bound.
 * Step 2 (pool walk): the bodies in lowering order; at each item, first the tensor it
 * defines requests a storage, then the tensors whose last use it is free theirs (an
 * output never shares with an input of the same call):
 *   static request S:   best fit among free static storages (the smallest of size
 *                       ≥ S), else the largest free one grown to S, else a new one;
 *   symbolic request e: a free symbolic storage whose size is proved equal to e
 *                       (rx_arith_prove_equal: `n * 2 * 4` serves `2 * n * 4`; dtype
 *                       plays no part), else a new one of size e.
 * Step 3 (placement): static storages are allocated once at function entry (their size
 * is known then) and belong to body 0; a symbolic storage is allocated right before its
 * first tensor, in that tensor's body, its home. Each storage is released after the item
 * of its home body containing the last death of its tensors; a symbolic storage made in
 * a branch leaves the pool when the branch ends (its register is not set on the other
 * path), a static one stays (it was allocated at entry).
 *
 * The walk over bodies mirrors liveness.c's so body serials agree. Cost: linear in the
 * function, times the free storages scanned per request (prove_equal per candidate).
 * A function with attribute `"memory_plan": false` is not planned (one storage per
 * tensor), nor is any function when the build turns planning off (opt level 0, or
 * --disable-pass memory_plan: rx_vmgen_opts.no_plan); that also gives the baseline
 * for measurements.
 */
#include "vg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct body_info {
    int32_t parent;      /* serial of the enclosing body, -1 for body 0 */
    int32_t parent_item; /* item of the parent containing this body */
} body_info;

typedef struct pctx {
    vg_fn *F;
    vg_plan *P;
    rx_arith *ar;          /* with the upper bounds bound */
    bool *escapes;         /* VAR id -> used other than as a DPS / shape_of argument */
    rx_expr **bytes;       /* VAR id -> byte size of a planned candidate, else NULL */
    int64_t *bound;        /* VAR id -> static bound, -1 symbolic */
    bool *busy;            /* storage -> holds a live tensor */
    bool *gone;            /* storage -> left the pool (branch-local, branch ended) */
    int busy_cap;
    RX_VEC(body_info) bodies;
    int32_t next_serial;
} pctx;

/* ---- escape analysis ---- */

static void scan_node(pctx *c, const rx_node *n, bool arg_ok);

static void scan_seq(pctx *c, const rx_seq *s)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) scan_node(c, s->blocks[b]->bindings[i].value, false);
    scan_node(c, s->result, false);
}

/* arg_ok: n is a direct argument of a DPS call or shape_of. */
static void scan_node(pctx *c, const rx_node *n, bool arg_ok)
{
    if (!n) return;
    switch (n->kind) {
    case RX_N_VAR:
        if (!arg_ok) c->escapes[n->u.var.id] = true;
        return;
    case RX_N_IF:
        scan_node(c, n->args[0], false);
        scan_seq(c, n->u.if_.then_body);
        scan_seq(c, n->u.if_.else_body);
        return;
    case RX_N_CALL: {
        bool ok = n->call_kind == RX_CALL_TIR || n->call_kind == RX_CALL_LIB ||
                  (n->call_kind == RX_CALL_OP && !strcmp(n->u.call.op->name, "shape_of"));
        if (n->call_kind == RX_CALL_FN) scan_node(c, n->u.call.callee, false);
        for (int i = 0; i < n->nargs; i++) scan_node(c, n->args[i], ok);
        return;
    }
    default:
        for (int i = 0; i < n->nargs; i++) scan_node(c, n->args[i], false);
        return;
    }
}

/* The byte size of one DPS output annotation (NULL when not a sized tensor). */
static rx_expr *out_bytes(pctx *c, const rx_sinfo *si)
{
    if (!si || si->kind != RX_SI_TENSOR || !si->dims || si->dtype == RX_DT_UNKNOWN) return NULL;
    rx_arena *a = c->F->M->m->arena;
    int bits = rx_dtype_bits((rx_dtype)si->dtype);
    rx_expr *e = rx_e_int(a, bits < 8 ? 1 : bits / 8);
    for (int i = 0; i < si->ndim; i++) e = rx_e_binary(a, RX_E_MUL, e, si->dims[i]);
    return rx_arith_simplify(c->ar, e);
}

static rx_expr *add(pctx *c, rx_expr *sum, rx_expr *e)
{
    return sum ? rx_e_binary(c->F->M->m->arena, RX_E_ADD, sum, e) : e;
}

static void sizes_node(pctx *c, const rx_node *n, int32_t id);

static void sizes_seq(pctx *c, const rx_seq *s)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            sizes_node(c, bd->value, bd->match_cast ? -1 : bd->var->u.var.id);
        }
    sizes_node(c, s->result, -1);
}

/* Every DPS allocation of n (the value of variable id, or -1) into the totals without
 * planning and, when not planned, with; a planned candidate gets its size and bound. */
static void sizes_node(pctx *c, const rx_node *n, int32_t id)
{
    if (!n) return;
    if (n->kind == RX_N_IF) {
        sizes_seq(c, n->u.if_.then_body);
        sizes_seq(c, n->u.if_.else_body);
        return;
    }
    for (int i = 0; i < n->nargs; i++) sizes_node(c, n->args[i], -1);
    if (n->kind != RX_N_CALL || (n->call_kind != RX_CALL_TIR && n->call_kind != RX_CALL_LIB)) return;
    const rx_sinfo *o = n->u.call.out;
    bool tuple = o && o->kind == RX_SI_TUPLE;
    for (int k = 0; k < (tuple ? o->nfields : 1); k++) {
        rx_expr *e = out_bytes(c, tuple ? o->fields[k] : o);
        if (!e) continue;
        c->P->nallocs++;
        c->P->bytes_without = add(c, c->P->bytes_without, e);
        if (!tuple && id >= 0 && !c->escapes[id] && c->P->enabled) {
            int64_t lo, hi;
            rx_arith_const_bound(c->ar, e, &lo, &hi);
            c->bytes[id] = e;
            c->bound[id] = hi < INT64_MAX / 4 && hi >= 0 ? hi : -1;
        } else {
            c->P->nunplanned++;
            c->P->bytes_unplanned = add(c, c->P->bytes_unplanned, e);
        }
    }
}

/* ---- the pool ---- */

static int new_storage(pctx *c, rx_expr *bytes, int64_t size, int32_t home, int32_t id)
{
    vg_storage s = {bytes, size, home, -1, id, -1};
    RX_VEC_PUSH(c->P->st, s);
    if (c->P->st.n > c->busy_cap) {
        int nc = c->busy_cap ? 2 * c->busy_cap : 16;
        c->busy = rx_xrealloc(c->busy, sizeof(bool) * (size_t)nc);
        c->gone = rx_xrealloc(c->gone, sizeof(bool) * (size_t)nc);
        c->busy_cap = nc;
    }
    c->busy[c->P->st.n - 1] = c->gone[c->P->st.n - 1] = false;
    return c->P->st.n - 1;
}

/* RequestReuseWithSymShape, else NewStorage: the storage for candidate id in body. */
static int request(pctx *c, int32_t id, int32_t body)
{
    vg_plan *P = c->P;
    int64_t need = c->bound[id];
    int best = -1;
    for (int s = 0; s < P->st.n; s++) {
        vg_storage *st = &P->st.items[s];
        if (c->busy[s] || c->gone[s] || (st->size < 0) != (need < 0)) continue;
        if (need < 0) {
            if (rx_arith_prove_equal(c->ar, st->bytes, c->bytes[id])) {
                best = s;
                break;
            }
        } else if (best < 0) {
            best = s;
        } else {
            int64_t bs = P->st.items[best].size;
            bool fits = st->size >= need, bfits = bs >= need;
            /* fitting beats not fitting; among fitting the smallest, else the largest */
            if ((fits && !bfits) || (fits && bfits && st->size < bs) ||
                (!fits && !bfits && st->size > bs))
                best = s;
        }
    }
    if (best < 0) best = new_storage(c, need < 0 ? c->bytes[id] : NULL, need, need < 0 ? body : 0, id);
    else if (need > P->st.items[best].size) P->st.items[best].size = need;
    c->busy[best] = true;
    P->storage_of[id] = best;
    return best;
}

/* The item of body `home` containing item `item` of body `body` (an ancestor chain). */
static int32_t item_in(const pctx *c, int32_t body, int32_t item, int32_t home)
{
    while (body != home) {
        RX_ASSERT(body > 0);
        item = c->bodies.items[body].parent_item;
        body = c->bodies.items[body].parent;
    }
    return item;
}

static void walk_seq(pctx *c, const rx_seq *s, int32_t parent, int32_t parent_item);

static void walk_node(pctx *c, const rx_node *n, int32_t body, int32_t item)
{
    if (!n) return;
    if (n->kind == RX_N_IF) {
        walk_node(c, n->args[0], body, item);
        walk_seq(c, n->u.if_.then_body, body, item);
        walk_seq(c, n->u.if_.else_body, body, item);
        return;
    }
    if (n->kind == RX_N_CALL && n->call_kind == RX_CALL_FN) walk_node(c, n->u.call.callee, body, item);
    for (int i = 0; i < n->nargs; i++) walk_node(c, n->args[i], body, item);
}

/* The item after which candidate id is dead (lower.c releases it then). */
static int32_t death(const vg_fn *F, int32_t id)
{
    return F->last_use[id] >= 0 ? F->last_use[id] : F->def_item[id];
}

static void walk_seq(pctx *c, const rx_seq *s, int32_t parent, int32_t parent_item)
{
    vg_fn *F = c->F;
    int32_t serial = c->next_serial++;
    body_info bi = {parent, parent_item};
    RX_VEC_PUSH(c->bodies, bi);
    RX_ASSERT(c->bodies.n == serial + 1);
    RX_VEC(int32_t) defs = {0}; /* candidates defined in this body */
    int32_t item = 0;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++, item++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            int32_t id = bd->var->u.var.id;
            walk_node(c, bd->value, serial, item);
            if (c->bytes[id]) {
                request(c, id, serial);
                RX_VEC_PUSH(defs, id);
            }
            for (int k = 0; k < defs.n; k++)
                if (death(F, defs.items[k]) == item) c->busy[c->P->storage_of[defs.items[k]]] = false;
        }
    walk_node(c, s->result, serial, item);
    for (int k = 0; k < defs.n; k++) /* dead by now: uses are never the result */
        c->busy[c->P->storage_of[defs.items[k]]] = false;
    for (int k = 0; k < c->P->st.n; k++)
        if (c->P->st.items[k].home == serial && serial > 0) c->gone[k] = true;
    RX_VEC_FREE(defs);
}

/* Step 3's release items: per storage, the last death of its tensors, in its home. */
static void release_items(pctx *c)
{
    vg_fn *F = c->F;
    for (int32_t id = 0; id < F->nids; id++) {
        int s = c->P->storage_of[id];
        if (s < 0) continue;
        vg_storage *st = &c->P->st.items[s];
        int32_t it = item_in(c, F->def_seq[id], death(F, id), st->home);
        if (it > st->release_item) st->release_item = it;
    }
}

void vg_plan_function(vg_fn *F, vg_plan *P)
{
    P->storage_of = rx_xmalloc(sizeof(int32_t) * (size_t)F->nids);
    for (int32_t i = 0; i < F->nids; i++) P->storage_of[i] = -1;
    const rx_func *f = F->f;
    rx_attr *on = rx_attr_map_get(f->attrs, "memory_plan");
    P->enabled = !F->M->no_plan && !(on && on->kind == RX_A_BOOL && !on->u.b);
    pctx c = {0};
    c.F = F;
    c.P = P;
    c.ar = rx_arith_new(F->M->m->arena);
    for (int i = 0; i < f->nsvars; i++) {
        int64_t ub = rx_func_upper_bound(f, f->svars[i]);
        if (ub >= 0) rx_arith_bind_range(c.ar, f->svars[i], 0, ub);
    }
    P->ar = c.ar;
    /* Step 1 */
    c.escapes = rx_xcalloc((size_t)F->nids, sizeof(bool));
    c.bytes = rx_xcalloc((size_t)F->nids, sizeof(rx_expr *));
    c.bound = rx_xmalloc(sizeof(int64_t) * (size_t)F->nids);
    for (int32_t i = 0; i < F->nids; i++) c.bound[i] = -1;
    for (int i = 0; i < f->nparams; i++) c.escapes[f->params[i]->u.var.id] = true;
    scan_seq(&c, f->body);
    sizes_seq(&c, f->body);
    if (P->enabled) {
        /* Step 2 */
        walk_seq(&c, f->body, -1, -1);
        /* Step 3 */
        release_items(&c);
    }
    free(c.escapes), free(c.bytes), free(c.bound), free(c.busy), free(c.gone);
    RX_VEC_FREE(c.bodies);
}

void vg_plan_free(vg_plan *P)
{
    free(P->storage_of);
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
    out->allocs = P->nallocs;
    out->storages = P->nunplanned + P->st.n;
    out->planned_storages = P->st.n;
    rx_expr *with = P->bytes_unplanned;
    for (int s = 0; s < P->st.n; s++) {
        const vg_storage *st = &P->st.items[s];
        out->static_storages += st->size >= 0;
        rx_expr *e = st->size >= 0 ? rx_e_int(a, st->size) : st->bytes;
        with = with ? rx_e_binary(a, RX_E_ADD, with, e) : e;
    }
    total(F, P->bytes_without, &out->bytes_without, &out->max_without);
    total(F, with, &out->bytes_with, &out->max_with);
}
