/*
 * lifetime.c — the output tensors of a graph function's DPS calls and how long they
 * live, for memory planning (plan.c) and for the liveness lower bound of the
 * function's memory. Runs after liveness.c.
 *
 * Step 1 (records): every output tensor of a call_tir / call_dps_library gets a
 * vg_alloc, in lowering order: the binding it is the value of (var, field: -1 for a
 * single output, k for field k of a tuple output, as FuseTIR's multi-output and
 * workspace-lifted calls have), its byte size (element bytes × Π dims, simplified in
 * the plan's arithmetic where upper_bounds are bound) and that size's constant bound.
 *
 * Step 2 (aliases): a variable refers to the tensors of a DPS binding when it is that
 * binding, a copy `u = v` or `u = match_cast(v, ...)` of one, a view `u = reshape(v,
 * s)` of one (what reshape_view leaves: VIEW shares v's bytes), or `u = t[k]` of a
 * tuple-output binding t (then to field k only). Each use of a referring variable is
 * benign — an argument of a DPS call, of shape_of or of a graph function that never
 * returns (an alias of) a parameter, an if's condition, the source of a tracked alias —
 * or makes the tensors it refers to escape: a body result (the function's or a
 * branch's), a tuple field, an argument of a built-in, of a callable value or of a
 * graph function that may return a parameter. Whether a graph function may return a
 * parameter is decided once per callee by following its result back through copies,
 * tuples, get_item, ifs and calls (a DPS call or a constant never is one; a callee
 * being decided, as in recursion, may). Parameters have no record: never planned.
 *
 * Step 3 (live ranges): a tensor is dead after the last item of its binding's body at
 * which any referring variable of that body is used (liveness.c's last uses: a use
 * inside a branch counts at the if; a referring variable defined inside a branch is
 * itself derived from a use there). Its program points are [tick(def), end_tick(death)]
 * (liveness.c); an escaping tensor's run to the end of the function.
 *
 * Step 4 (the lower bounds): the bytes live at a program point are the sum of the sizes
 * of the tensors live there. Over the intermediates (the tensors that do not escape,
 * which planning places) the maximum over program points is what any plan of them must
 * hold at once: the lower bound its storages are measured against. Over every tensor,
 * escaping ones included, it is what a call's live bytes must reach (the runtime's
 * peak without planning meets it exactly, RELEASE being exact). The maximum is
 * attained where some tensor starts, and of two starts with no death between them the
 * later dominates (the live set only grew), so the candidates are the starts a death
 * follows and the last one. A sweep in tick order keeps the live bytes as a constant
 * plus a count per distinct symbolic size, so a candidate's sum has as many terms as
 * there are distinct sizes, not live tensors (a function returning N tensors must not
 * cost N² nodes). The sums are simplified, duplicates dropped, and a candidate proved
 * <= another (rx_arith_prove, variables >= 0 and within upper_bounds) dropped too. The
 * result is max(candidate, ...) over the symbolic variables, and its constant bound
 * under upper_bounds. Callees' tensors are counted in their own functions, not in
 * their callers'.
 *
 * Cost: linear walks, a sort of the allocs by tick, (candidates × distinct sizes) for
 * the sums and (candidates × frontier) proofs, where the frontier of undominated sums
 * is small in practice.
 */
#include "vg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { WHOLE = -2 }; /* ref_field: every tensor of the binding */

typedef struct callee_memo {
    const rx_func *f; /* a graph function */
    int state;        /* 1 deciding, 2 never returns a parameter, 3 may */
} callee_memo;

typedef struct lctx {
    vg_fn *F;
    vg_plan *P;
    int32_t *ref_root;  /* VAR id -> VAR id of the DPS binding it refers to, -1 */
    int32_t *ref_field; /* VAR id -> field it refers to, WHOLE for all */
    int32_t *nouts;     /* VAR id of a DPS binding -> its output count */
    RX_VEC(callee_memo) callees;
    int32_t serial;     /* bodies entered by the record walk */
} lctx;

/* ---- may a graph function return an alias of a parameter? ---- */

typedef struct actx {
    const rx_node **def; /* VAR id -> bound value (NULL: parameter or unknown) */
    uint8_t *memo;       /* VAR id -> 0 unknown, 1 deciding, 2 no, 3 yes */
    int32_t n;           /* ids */
} actx;

static bool returns_param(lctx *c, const rx_func *f);

static void collect_defs(actx *a, const rx_seq *s);

static void collect_node(actx *a, const rx_node *n)
{
    if (n && n->kind == RX_N_IF) {
        collect_defs(a, n->u.if_.then_body);
        collect_defs(a, n->u.if_.else_body);
    }
}

static void collect_defs(actx *a, const rx_seq *s)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            int32_t id = bd->var->u.var.id;
            if (id >= 0 && id < a->n) a->def[id] = bd->value;
            collect_node(a, bd->value);
        }
}

static bool may_alias(lctx *c, actx *a, const rx_node *n)
{
    if (!n) return false;
    switch (n->kind) {
    case RX_N_VAR: {
        int32_t id = n->u.var.id;
        if (id < 0 || id >= a->n || !a->def[id]) return true; /* a parameter */
        if (a->memo[id] == 1) return true;
        if (!a->memo[id]) {
            a->memo[id] = 1;
            a->memo[id] = may_alias(c, a, a->def[id]) ? 3 : 2;
        }
        return a->memo[id] == 3;
    }
    case RX_N_TUPLE:
        for (int i = 0; i < n->nargs; i++)
            if (may_alias(c, a, n->args[i])) return true;
        return false;
    case RX_N_GET_ITEM: return may_alias(c, a, n->args[0]);
    case RX_N_IF:
        return may_alias(c, a, n->u.if_.then_body->result) ||
               may_alias(c, a, n->u.if_.else_body->result);
    case RX_N_CALL:
        switch (n->call_kind) {
        case RX_CALL_TIR:
        case RX_CALL_LIB: return false;
        case RX_CALL_OP: return strcmp(n->u.call.op->name, "shape_of") != 0;
        default: /* a graph call: fresh unless the callee may return a parameter */
            if (n->u.call.callee->kind != RX_N_GLOBAL) return true;
            if (!returns_param(c, n->u.call.callee->u.global.fn)) return false;
            for (int i = 0; i < n->nargs; i++)
                if (may_alias(c, a, n->args[i])) return true;
            return false;
        }
    default: return false; /* constants, shapes, prim values, globals */
    }
}

static bool returns_param(lctx *c, const rx_func *f)
{
    if (!f || f->kind != RX_F_RELAX || !f->body) return true;
    for (int i = 0; i < c->callees.n; i++)
        if (c->callees.items[i].f == f) return c->callees.items[i].state != 2;
    callee_memo mm = {f, 1};
    RX_VEC_PUSH(c->callees, mm);
    int at = c->callees.n - 1;
    actx a = {0};
    a.n = c->F->nids;
    a.def = rx_xcalloc((size_t)a.n, sizeof *a.def);
    a.memo = rx_xcalloc((size_t)a.n, 1);
    collect_defs(&a, f->body);
    bool yes = may_alias(c, &a, f->body->result);
    free(a.def), free(a.memo);
    c->callees.items[at].state = yes ? 3 : 2;
    return yes;
}

/* ---- Step 1 and 2: records, references, escapes ---- */

/* The byte size of one DPS output annotation (NULL when not a sized tensor). */
static rx_expr *out_bytes(lctx *c, const rx_sinfo *si)
{
    if (!si || si->kind != RX_SI_TENSOR || !si->dims || si->dtype == RX_DT_UNKNOWN) return NULL;
    rx_arena *a = c->F->M->m->arena;
    int bits = rx_dtype_bits((rx_dtype)si->dtype);
    rx_expr *e = rx_e_int(a, bits < 8 ? 1 : bits / 8);
    for (int i = 0; i < si->ndim; i++) e = rx_e_binary(a, RX_E_MUL, e, si->dims[i]);
    return rx_arith_simplify(c->P->ar, e);
}

/* Records the outputs of DPS call n, the value of variable var (-1: not a binding). */
static void record(lctx *c, const rx_node *n, int32_t var, int32_t body, int32_t item)
{
    const rx_sinfo *o = n->u.call.out;
    bool tuple = o && o->kind == RX_SI_TUPLE;
    int nout = tuple ? o->nfields : 1;
    if (var >= 0) {
        c->P->first_alloc[var] = c->P->allocs.n;
        c->ref_root[var] = var;
        c->ref_field[var] = WHOLE;
        c->nouts[var] = nout;
    }
    for (int k = 0; k < nout; k++) {
        vg_alloc al = {0};
        al.var = var;
        al.field = tuple ? k : -1;
        al.body = body;
        al.def = item;
        al.death = item;
        al.bytes = out_bytes(c, tuple ? o->fields[k] : o);
        al.bound = -1;
        al.escapes = var < 0;
        al.storage = -1;
        if (al.bytes) {
            int64_t lo, hi;
            rx_arith_const_bound(c->P->ar, al.bytes, &lo, &hi);
            al.bound = hi < INT64_MAX / 4 && hi >= 0 ? hi : -1;
        }
        RX_VEC_PUSH(c->P->allocs, al);
    }
}

/* Marks the tensors variable id refers to as escaping. */
static void escape(lctx *c, int32_t id)
{
    int32_t r = c->ref_root[id];
    if (r < 0) return;
    int32_t f = c->ref_field[id], first = c->P->first_alloc[r];
    for (int k = 0; k < c->nouts[r]; k++)
        if (f == WHOLE || f == k) c->P->allocs.items[first + k].escapes = true;
}

static void walk_seq(lctx *c, const rx_seq *s);

/* A use of every variable in n; benign: n's variables are used harmlessly there. */
static void use(lctx *c, const rx_node *n, bool benign, int32_t body, int32_t item)
{
    if (!n) return;
    switch (n->kind) {
    case RX_N_VAR:
        if (!benign) escape(c, n->u.var.id);
        return;
    case RX_N_IF:
        use(c, n->args[0], true, body, item);
        walk_seq(c, n->u.if_.then_body);
        walk_seq(c, n->u.if_.else_body);
        return;
    case RX_N_CALL: {
        bool ok = n->call_kind == RX_CALL_TIR || n->call_kind == RX_CALL_LIB ||
                  (n->call_kind == RX_CALL_OP && !strcmp(n->u.call.op->name, "shape_of"));
        if (n->call_kind == RX_CALL_FN) {
            const rx_node *callee = n->u.call.callee;
            ok = callee->kind == RX_N_GLOBAL && !returns_param(c, callee->u.global.fn);
            use(c, callee, false, body, item);
        }
        if (n->call_kind == RX_CALL_TIR || n->call_kind == RX_CALL_LIB) record(c, n, -1, body, item);
        for (int i = 0; i < n->nargs; i++) use(c, n->args[i], ok, body, item);
        return;
    }
    default:
        for (int i = 0; i < n->nargs; i++) use(c, n->args[i], false, body, item);
        return;
    }
}

/* A binding: records its DPS outputs or the alias it makes, then its uses. */
static void binding(lctx *c, const rx_binding *bd, int32_t body, int32_t item)
{
    const rx_node *v = bd->value;
    int32_t id = bd->var->u.var.id;
    if (!bd->match_cast && v->kind == RX_N_CALL &&
        (v->call_kind == RX_CALL_TIR || v->call_kind == RX_CALL_LIB)) {
        record(c, v, id, body, item);
        for (int i = 0; i < v->nargs; i++) use(c, v->args[i], true, body, item);
        return;
    }
    /* a copy or match_cast of a variable, or a VIEW of one (reshape_view.c) */
    const rx_node *src = v->kind == RX_N_VAR ? v
                         : !bd->match_cast && v->kind == RX_N_CALL && v->call_kind == RX_CALL_OP &&
                                   !strcmp(v->u.call.op->name, "reshape")
                             ? v->args[0]
                             : NULL;
    if (src && src->kind == RX_N_VAR && c->ref_root[src->u.var.id] >= 0) {
        c->ref_root[id] = c->ref_root[src->u.var.id];
        c->ref_field[id] = c->ref_field[src->u.var.id];
        return;
    }
    if (!bd->match_cast && v->kind == RX_N_GET_ITEM && v->args[0]->kind == RX_N_VAR) {
        int32_t t = v->args[0]->u.var.id, r = c->ref_root[t];
        if (r >= 0 && c->ref_field[t] == WHOLE && c->P->allocs.items[c->P->first_alloc[r]].field >= 0 &&
            v->u.index >= 0 && v->u.index < c->nouts[r]) {
            c->ref_root[id] = r;
            c->ref_field[id] = v->u.index;
            return;
        }
    }
    use(c, v, false, body, item);
}

static void walk_seq(lctx *c, const rx_seq *s)
{
    int32_t serial = c->serial++, item = 0;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++, item++)
            binding(c, &s->blocks[b]->bindings[i], serial, item);
    use(c, s->result, false, serial, item);
}

/* ---- Step 3 ---- */

static int32_t var_death(const vg_fn *F, int32_t id)
{
    return F->last_use[id] >= 0 ? F->last_use[id] : F->def_item[id];
}

static void live_ranges(lctx *c)
{
    vg_fn *F = c->F;
    vg_plan *P = c->P;
    for (int32_t id = 0; id < F->nids; id++) {
        int32_t r = c->ref_root[id];
        if (r < 0) continue;
        int32_t f = c->ref_field[id], first = P->first_alloc[r];
        for (int k = 0; k < c->nouts[r]; k++) {
            vg_alloc *a = &P->allocs.items[first + k];
            if (f != WHOLE && f != k) continue;
            if (F->def_seq[id] != a->body) continue;
            int32_t d = var_death(F, id);
            if (d > a->death) a->death = d;
        }
    }
    for (int i = 0; i < P->allocs.n; i++) {
        vg_alloc *a = &P->allocs.items[i];
        const vg_body *b = &F->bodies.items[a->body];
        a->tick0 = b->tick[a->def];
        a->tick1 = a->escapes ? F->nticks - 1 : b->end_tick[a->death];
    }
}

/* ---- Step 4 ---- */

static rx_expr *add(rx_arena *a, rx_expr *sum, rx_expr *e)
{
    return sum ? rx_e_binary(a, RX_E_ADD, sum, e) : e;
}

/* Whether alloc a counts: every sized tensor, or (intermediates) the plannable ones. */
static bool counted(const vg_alloc *a, bool all)
{
    return a->bytes && (all || (!a->escapes && a->var >= 0));
}

/* The live bytes of the sweep: a constant plus a count of each distinct symbolic
 * size, so a point's sum costs the distinct sizes, not the live tensors. */
typedef struct live_term {
    rx_expr *bytes; /* a symbolic size */
    int64_t count;  /* live tensors of that size */
} live_term;

typedef struct live_sum {
    int64_t konst;            /* the constant sizes' sum */
    RX_VEC(live_term) terms;  /* the symbolic ones */
    int8_t *in_konst;         /* alloc -> 1 when its size went into konst */
} live_sum;

static void live_change(live_sum *L, const vg_alloc *a, int32_t i, int64_t sign)
{
    int64_t v, r;
    if (sign > 0) L->in_konst[i] = rx_expr_is_const(a->bytes, &v) && !__builtin_add_overflow(L->konst, v, &r);
    if (L->in_konst[i]) {
        RX_ASSERT(rx_expr_is_const(a->bytes, &v));
        L->konst += sign * v;
        return;
    }
    for (int k = 0; k < L->terms.n; k++)
        if (rx_expr_same(L->terms.items[k].bytes, a->bytes)) {
            L->terms.items[k].count += sign;
            return;
        }
    RX_ASSERT(sign > 0);
    live_term t = {a->bytes, 1};
    RX_VEC_PUSH(L->terms, t);
}

static rx_expr *live_expr(rx_arith *ar, rx_arena *a, const live_sum *L)
{
    rx_expr *sum = L->konst ? rx_e_int(a, L->konst) : NULL;
    for (int k = 0; k < L->terms.n; k++) {
        const live_term *t = &L->terms.items[k];
        if (t->count)
            sum = add(a, sum, t->count == 1 ? t->bytes : rx_e_binary(a, RX_E_MUL, rx_e_int(a, t->count), t->bytes));
    }
    return rx_arith_simplify(ar, sum ? sum : rx_e_int(a, 0));
}

typedef struct tick_ref { /* an alloc at one of its ticks, for sorting */
    int64_t tick;
    int32_t alloc;
} tick_ref;

static int by_tick(const void *x, const void *y)
{
    const tick_ref *a = x, *b = y;
    if (a->tick != b->tick) return a->tick < b->tick ? -1 : 1;
    return a->alloc < b->alloc ? -1 : a->alloc > b->alloc;
}

/* The maximum over program points of the counted tensors' live bytes (NULL: none),
 * and its constant bound in *max (-1 unbounded). A sweep over the starts in tick
 * order, dropping the tensors dead before each: a start followed by another with no
 * death in between is dominated by the later one (its live set only grows), so sums
 * are made only at the starts a death follows and at the last start. */
static rx_expr *lower_bound(lctx *c, bool all, int64_t *max)
{
    vg_plan *P = c->P;
    rx_arena *ar = c->F->M->m->arena;
    int32_t n = 0;
    tick_ref *start = rx_xmalloc(sizeof(tick_ref) * 2 * ((size_t)P->allocs.n + 1));
    tick_ref *death = start + P->allocs.n + 1;
    for (int32_t i = 0; i < P->allocs.n; i++)
        if (counted(&P->allocs.items[i], all)) {
            start[n] = (tick_ref){P->allocs.items[i].tick0, i};
            death[n++] = (tick_ref){P->allocs.items[i].tick1, i};
        }
    qsort(start, (size_t)n, sizeof *start, by_tick);
    qsort(death, (size_t)n, sizeof *death, by_tick);
    live_sum L = {0, {0}, rx_xcalloc((size_t)P->allocs.n + 1, 1)};
    RX_VEC(rx_expr *) front = {0};
    for (int32_t i = 0, d = 0; i < n;) {
        int64_t t = start[i].tick;
        for (; d < n && death[d].tick < t; d++)
            live_change(&L, &P->allocs.items[death[d].alloc], death[d].alloc, -1);
        for (; i < n && start[i].tick == t; i++)
            live_change(&L, &P->allocs.items[start[i].alloc], start[i].alloc, 1);
        if (i < n && (d >= n || death[d].tick >= start[i].tick))
            continue; /* nothing dies before the next start: that one dominates */
        rx_expr *sum = live_expr(P->ar, ar, &L);
        bool dominated = false;
        for (int k = 0; k < front.n && !dominated; k++)
            dominated = rx_expr_same(front.items[k], sum) ||
                        rx_arith_prove(P->ar, rx_e_binary(ar, RX_E_LE, sum, front.items[k]));
        if (dominated) continue;
        int kept = 0;
        for (int k = 0; k < front.n; k++)
            if (!rx_arith_prove(P->ar, rx_e_binary(ar, RX_E_LE, front.items[k], sum)))
                front.items[kept++] = front.items[k];
        front.n = kept;
        RX_VEC_PUSH(front, sum);
    }
    free(start);
    free(L.in_konst);
    RX_VEC_FREE(L.terms);
    rx_expr *lb = NULL;
    *max = 0;
    for (int k = 0; k < front.n; k++) {
        rx_expr *e = front.items[k];
        lb = lb ? rx_e_binary(ar, RX_E_MAX, lb, e) : e;
        int64_t lo, hi;
        rx_arith_const_bound(P->ar, e, &lo, &hi);
        if (hi == INT64_MAX || *max < 0) *max = -1;
        else if (hi > *max) *max = hi;
    }
    RX_VEC_FREE(front);
    return lb;
}

void vg_lifetimes(vg_fn *F, vg_plan *P)
{
    lctx c = {0};
    c.F = F;
    c.P = P;
    P->first_alloc = rx_xmalloc(sizeof(int32_t) * (size_t)F->nids);
    c.ref_root = rx_xmalloc(sizeof(int32_t) * (size_t)F->nids);
    c.ref_field = rx_xmalloc(sizeof(int32_t) * (size_t)F->nids);
    c.nouts = rx_xcalloc((size_t)F->nids, sizeof(int32_t));
    for (int32_t i = 0; i < F->nids; i++) P->first_alloc[i] = c.ref_root[i] = -1;
    /* Steps 1-2 */
    walk_seq(&c, F->f->body);
    RX_ASSERT(c.serial == F->bodies.n);
    /* Step 3 */
    live_ranges(&c);
    for (int i = 0; i < P->allocs.n; i++)
        if (P->allocs.items[i].bytes)
            P->bytes_without = add(F->M->m->arena, P->bytes_without, P->allocs.items[i].bytes);
    /* Step 4 */
    P->lower_bound = lower_bound(&c, false, &P->max_lower_bound);
    P->peak_bound = lower_bound(&c, true, &P->max_peak_bound);
    free(c.ref_root), free(c.ref_field), free(c.nouts);
    RX_VEC_FREE(c.callees);
}
