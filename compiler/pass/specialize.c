/*
 * specialize.c — static-shape specialization of loop functions (pipeline step 7a, opt
 * level 3).
 *
 * A loop function's symbolic variables (f->svars: whole-dim shape variables and
 * scalar parameters) are kernel arguments: the C compiler sees `i < n_0`, not
 * `i < 128`, and cannot unroll, pick vector remainders or fold index arithmetic.
 * Legalization already writes literal extents where the graph's shapes are literals;
 * what stays symbolic is a loop function shared by calls of different static shapes,
 * a hand-written one over symbolic buffers, or one that FuseTIR made with extra
 * parameters. This pass gives each call the copy it deserves:
 *
 * Step 1: per call_tir binding (graph functions, if-branches included), bind the
 *         callee's variables as vmgen/lower.c will at run time: scalar parameters to
 *         the call's tir_vars, shape variables by matching each buffer against its
 *         argument's or output's annotation (rx_si_match). A variable whose value
 *         simplifies to an integer literal is static; every other one (a symbolic
 *         dim, a float parameter, a value the match could not bind) stays dynamic.
 * Step 2: a call with at least one static variable gets the callee's copy for its
 *         pattern of static values (calls with the same pattern share one copy,
 *         named NAME_static, NAME_static2, ...): the static variables replaced by
 *         their literals everywhere (buffer shapes, loop bounds, indices, values),
 *         extents and shapes simplified to literals, every buffer, loop variable,
 *         block iterator and let variable fresh; the dynamic variables kept, in
 *         their order (so the kernel ABI is the callee's minus the static slots), as
 *         are the scalar parameters that stay dynamic, whose tir_vars the call keeps.
 *         The call is rebuilt to name the copy.
 * Step 3: loop functions no call names any more are removed; the module is deduced
 *         again (which re-checks every call against its callee's buffers).
 *
 * Then schedule (schedule_tile.c) sees literal extents: full register tiles without
 * run-time tails where the extents divide, and codegen writes literal loop bounds.
 * Symbolic dims stay dynamic: one kernel still serves every n.
 *
 * Cost: one walk over the graph functions; a copy is linear in its function's size;
 * the pattern lookup is linear in the copies made (a handful per function).
 */
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"

/* One specialized copy: the original, its variables' values (dyn[i]: dynamic). */
typedef struct spec_copy {
    rx_func *from;    /* the original loop function */
    int64_t *vals;    /* per svar of from: its literal (when !dyn[i]) */
    bool *dyn;        /* per svar: stays dynamic */
    rx_func *to;      /* the copy */
} spec_copy;

typedef struct spec_ctx {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    RX_VEC(spec_copy) copies;
    int ncalls;       /* calls rewritten */
} spec_ctx;

/* The copier's state for one function. */
typedef struct spec_cp {
    spec_ctx *c;
    rx_vmap vm;                       /* variables -> literals or fresh variables */
    RX_VEC(const rx_buffer *) from;   /* buffer map: from[i] -> to[i] */
    RX_VEC(rx_buffer *) to;
} spec_cp;

/* ---------------------------------------------------------------- copying */

static rx_expr *cp_expr(spec_cp *p, rx_expr *e);

static rx_buffer *map_buf(const spec_cp *p, const rx_buffer *b)
{
    for (int i = p->from.n - 1; i >= 0; i--)
        if (p->from.items[i] == b) return p->to.items[i];
    return (rx_buffer *)b; /* not a buffer of this function: keep (a well-formed body has none) */
}

/* An integer expression substituted and simplified (to a literal when it can be). */
static rx_expr *cp_int(spec_cp *p, rx_expr *e)
{
    if (!e) return NULL;
    rx_expr *x = cp_expr(p, e);
    return rx_dtype_is_int((rx_dtype)x->dtype) ? rx_arith_simplify(p->c->ar, x) : x;
}

static rx_buffer *cp_buf(spec_cp *p, const rx_buffer *b)
{
    rx_arena *a = p->c->a;
    rx_buffer *n = RX_NEW(a, rx_buffer);
    *n = *b;
    n->shape = RX_NEWN(a, rx_expr *, b->ndim > 0 ? b->ndim : 1);
    for (int i = 0; i < b->ndim; i++) n->shape[i] = cp_int(p, b->shape[i]);
    n->id = rx_module_new_id(p->c->m);
    RX_VEC_PUSH(p->from, b);
    RX_VEC_PUSH(p->to, n);
    return n;
}

/* A fresh variable standing for v from here on. */
static const rx_svar *cp_var(spec_cp *p, const rx_svar *v)
{
    rx_svar *n = rx_svar_new(p->c->a, v->name, (rx_dtype)v->dtype, (rx_svkind)v->kind,
                             rx_module_new_id(p->c->m));
    rx_vmap_set(&p->vm, v, rx_e_var(p->c->a, n));
    return n;
}

static rx_expr *cp_expr(spec_cp *p, rx_expr *e)
{
    if (!e) return NULL;
    if (e->kind == RX_E_VAR) {
        rx_expr *to = rx_vmap_get(&p->vm, e->u.var);
        return to ? to : e;
    }
    int n = rx_expr_nchildren(e);
    if (e->kind == RX_E_LOAD) {
        rx_expr **idx = RX_NEWN(p->c->a, rx_expr *, n > 0 ? n : 1);
        for (int i = 0; i < n; i++) idx[i] = cp_expr(p, e->u.load.idx[i]);
        return rx_e_load(p->c->a, map_buf(p, e->u.load.buf), idx, n);
    }
    if (!n) return e;
    rx_expr **kids = RX_NEWN(p->c->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        kids[i] = cp_expr(p, rx_expr_child(e, i));
        changed |= kids[i] != rx_expr_child(e, i);
    }
    return changed ? rx_expr_with_children(p->c->a, e, kids) : e;
}

static rx_stmts cp_stmts(spec_cp *p, const rx_stmts *ss);

static rx_stmt *cp_stmt(spec_cp *p, const rx_stmt *s)
{
    rx_arena *a = p->c->a;
    rx_stmt *n = RX_NEW(a, rx_stmt);
    *n = *s;
    switch ((rx_skind)s->kind) {
    case RX_S_FOR:
        n->u.for_.min = cp_int(p, s->u.for_.min);
        n->u.for_.extent = cp_int(p, s->u.for_.extent);
        n->u.for_.var = cp_var(p, s->u.for_.var);
        n->u.for_.body = cp_stmts(p, &s->u.for_.body);
        break;
    case RX_S_BLOCK: {
        int ni = s->u.block.niters;
        n->u.block.iters = RX_NEWN(a, rx_iter, ni > 0 ? ni : 1);
        for (int i = 0; i < ni; i++) { /* binds and domains see the enclosing variables */
            const rx_iter *it = &s->u.block.iters[i];
            n->u.block.iters[i] = *it;
            n->u.block.iters[i].dom = cp_int(p, it->dom);
            n->u.block.iters[i].bind = cp_int(p, it->bind);
        }
        for (int i = 0; i < ni; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            /* an implicit iterator is its loop's variable: keep it the same copy */
            bool implicit = it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var;
            n->u.block.iters[i].var =
                implicit ? n->u.block.iters[i].bind->u.var : cp_var(p, it->var);
        }
        n->u.block.init = cp_stmts(p, &s->u.block.init);
        n->u.block.body = cp_stmts(p, &s->u.block.body);
        break;
    }
    case RX_S_STORE: {
        int k = s->u.store.nidx;
        n->u.store.buf = map_buf(p, s->u.store.buf);
        n->u.store.idx = RX_NEWN(a, rx_expr *, k > 0 ? k : 1);
        for (int i = 0; i < k; i++) n->u.store.idx[i] = cp_expr(p, s->u.store.idx[i]);
        n->u.store.value = cp_expr(p, s->u.store.value);
        break;
    }
    case RX_S_ALLOC: n->u.alloc.buf = cp_buf(p, s->u.alloc.buf); break;
    case RX_S_IF:
        n->u.if_.cond = cp_expr(p, s->u.if_.cond);
        n->u.if_.then_s = cp_stmts(p, &s->u.if_.then_s);
        n->u.if_.else_s = cp_stmts(p, &s->u.if_.else_s);
        break;
    case RX_S_LET:
        n->u.let.value = cp_expr(p, s->u.let.value);
        n->u.let.var = cp_var(p, s->u.let.var);
        n->u.let.body = cp_stmts(p, &s->u.let.body);
        break;
    default: RX_UNREACHABLE();
    }
    return n;
}

static rx_stmts cp_stmts(spec_cp *p, const rx_stmts *ss)
{
    rx_stmts l = {RX_NEWN(p->c->a, rx_stmt *, ss->n > 0 ? ss->n : 1), ss->n};
    for (int i = 0; i < ss->n; i++) l.items[i] = cp_stmt(p, ss->items[i]);
    return l;
}

/* A name no function of the module has: NAME_static, NAME_static2, ... */
static const char *copy_name(spec_ctx *c, const char *base)
{
    for (int k = 1;; k++) {
        const char *name = k == 1 ? rx_arena_printf(c->a, "%s_static", base)
                                  : rx_arena_printf(c->a, "%s_static%d", base, k);
        if (!rx_module_find(c->m, name)) return name;
    }
}

/* Step 2: the copy of f with the static variables (dyn[i] false) set to vals[i]. */
static rx_func *make_copy(spec_ctx *c, rx_func *f, const int64_t *vals, const bool *dyn)
{
    rx_arena *a = c->a;
    spec_cp p = {0};
    p.c = c;
    rx_func *n = RX_NEW(a, rx_func);
    *n = *f;
    n->name = copy_name(c, f->name);
    n->loc = f->loc;
    n->svars = RX_NEWN(a, const rx_svar *, f->nsvars > 0 ? f->nsvars : 1);
    n->nsvars = 0;
    for (int i = 0; i < f->nsvars; i++) {
        if (dyn[i]) n->svars[n->nsvars++] = f->svars[i]; /* kept: the ABI slot stays */
        else rx_vmap_set(&p.vm, f->svars[i], rx_e_typed_int(a, vals[i], (rx_dtype)f->svars[i]->dtype));
    }
    n->tparams = RX_NEWN(a, rx_tparam, f->ntparams > 0 ? f->ntparams : 1);
    n->ntparams = 0;
    for (int i = 0; i < f->ntparams; i++) {
        const rx_tparam *tp = &f->tparams[i];
        if (tp->var) {
            if (!rx_vmap_get(&p.vm, tp->var)) n->tparams[n->ntparams++] = *tp;
            continue;
        }
        n->tparams[n->ntparams].var = NULL;
        n->tparams[n->ntparams++].buf = cp_buf(&p, tp->buf);
    }
    n->tbody = cp_stmts(&p, &f->tbody);
    rx_vmap_free(&p.vm);
    RX_VEC_FREE(p.from);
    RX_VEC_FREE(p.to);
    rx_func **fs = RX_NEWN(a, rx_func *, c->m->nfuncs + 1); /* the module's list, grown */
    memcpy(fs, c->m->funcs, sizeof(rx_func *) * (size_t)c->m->nfuncs);
    fs[c->m->nfuncs++] = n;
    c->m->funcs = fs;
    return n;
}

/* ---------------------------------------------------------------- calls */

/* The output annotation of field k of a call's out. */
static const rx_sinfo *out_field(const rx_node *call, int k)
{
    const rx_sinfo *o = call->u.call.out;
    return o->kind == RX_SI_TUPLE ? (k < o->nfields ? o->fields[k] : NULL) : (k == 0 ? o : NULL);
}

/* Step 1: the values of f's variables at call n; false when nothing is static. */
static bool bind_call(spec_ctx *c, const rx_node *n, const rx_func *f, int64_t *vals, bool *dyn)
{
    rx_vmap vm = {0};
    int bi = 0, si = 0;
    bool ok = true;
    for (int j = 0; j < f->ntparams && ok; j++) {
        const rx_tparam *tp = &f->tparams[j];
        if (tp->var) {
            if (si < n->u.call.ntir_vars) rx_vmap_set(&vm, tp->var, n->u.call.tir_vars[si]);
            si++;
            continue;
        }
        const rx_sinfo *actual = bi < n->nargs ? n->args[bi]->sinfo : out_field(n, bi - n->nargs);
        bi++;
        if (!actual) continue;
        rx_sinfo *param = rx_si_tensor(c->a, (rx_dtype)tp->buf->dtype, tp->buf->ndim, tp->buf->shape);
        if (rx_si_match(c->ar, c->a, param, actual, &vm) == RX_CMP_NO) ok = false;
    }
    ok = ok && si == n->u.call.ntir_vars;
    bool any = false;
    for (int i = 0; i < f->nsvars; i++) {
        rx_expr *e = ok ? rx_vmap_get(&vm, f->svars[i]) : NULL;
        if (e && rx_dtype_is_int((rx_dtype)f->svars[i]->dtype)) e = rx_arith_simplify(c->ar, e);
        dyn[i] = !(e && rx_dtype_is_int((rx_dtype)f->svars[i]->dtype) &&
                   rx_expr_is_const(e, &vals[i]));
        if (dyn[i]) vals[i] = 0;
        any |= !dyn[i];
    }
    rx_vmap_free(&vm);
    return any;
}

/* The call n with callee g: tir_vars of the scalar parameters g keeps. */
static rx_node *rebuild_call(spec_ctx *c, const rx_node *n, const rx_func *f, rx_func *g)
{
    rx_expr **tv = RX_NEWN(c->a, rx_expr *, n->u.call.ntir_vars > 0 ? n->u.call.ntir_vars : 1);
    int ntv = 0, si = 0;
    for (int j = 0; j < f->ntparams; j++) {
        const rx_tparam *tp = &f->tparams[j];
        if (!tp->var) continue;
        for (int k = 0; k < g->ntparams; k++)
            if (g->tparams[k].var == tp->var) tv[ntv++] = n->u.call.tir_vars[si];
        si++;
    }
    rx_node *r = rx_n_call_tir(c->m, rx_n_global(c->m, g->name, g), n->args, n->nargs,
                               n->u.call.out, ntv ? tv : NULL, ntv);
    r->loc = n->loc;
    r->sinfo = n->sinfo;
    return r;
}

/* The copy of f for the pattern (vals, dyn), made on first use. */
static rx_func *copy_for(spec_ctx *c, rx_func *f, const int64_t *vals, const bool *dyn)
{
    for (int i = 0; i < c->copies.n; i++) {
        const spec_copy *s = &c->copies.items[i];
        if (s->from != f) continue;
        bool same = true;
        for (int k = 0; k < f->nsvars && same; k++)
            same = s->dyn[k] == dyn[k] && (dyn[k] || s->vals[k] == vals[k]);
        if (same) return s->to;
    }
    spec_copy s = {f, RX_NEWN(c->a, int64_t, f->nsvars), RX_NEWN(c->a, bool, f->nsvars), NULL};
    memcpy(s.vals, vals, sizeof(int64_t) * (size_t)f->nsvars);
    memcpy(s.dyn, dyn, sizeof(bool) * (size_t)f->nsvars);
    s.to = make_copy(c, f, vals, dyn);
    RX_VEC_PUSH(c->copies, s);
    return s.to;
}

static void spec_seq(spec_ctx *c, rx_seq *q);

/* A binding's value: rewritten when it is a call_tir with static variables. */
static rx_node *spec_value(spec_ctx *c, rx_node *v)
{
    if (!v) return v;
    if (v->kind == RX_N_IF) {
        spec_seq(c, v->u.if_.then_body);
        spec_seq(c, v->u.if_.else_body);
        return v;
    }
    if (v->kind != RX_N_CALL || v->call_kind != RX_CALL_TIR || !v->u.call.callee ||
        v->u.call.callee->kind != RX_N_GLOBAL)
        return v;
    rx_func *f = v->u.call.callee->u.global.fn;
    if (!f || f->kind != RX_F_TIR || f->nsvars == 0) return v;
    int64_t *vals = RX_NEWN(c->a, int64_t, f->nsvars);
    bool *dyn = RX_NEWN(c->a, bool, f->nsvars);
    if (!bind_call(c, v, f, vals, dyn)) return v;
    c->ncalls++;
    return rebuild_call(c, v, f, copy_for(c, f, vals, dyn));
}

static void spec_seq(spec_ctx *c, rx_seq *q)
{
    if (!q) return;
    for (int b = 0; b < q->nblocks; b++)
        for (int i = 0; i < q->blocks[b]->nbindings; i++) {
            rx_binding *bd = &q->blocks[b]->bindings[i];
            if (!bd->match_cast) bd->value = spec_value(c, bd->value);
        }
}

/* ---------------------------------------------------------------- step 3 */

static bool seq_names(const rx_seq *q, const rx_func *f);

static bool node_names(const rx_node *n, const rx_func *f)
{
    if (!n) return false;
    if (n->kind == RX_N_GLOBAL) return n->u.global.fn == f || !strcmp(n->u.global.name, f->name);
    if (n->kind == RX_N_CALL && n->u.call.callee && node_names(n->u.call.callee, f)) return true;
    if (n->kind == RX_N_IF &&
        (seq_names(n->u.if_.then_body, f) || seq_names(n->u.if_.else_body, f)))
        return true;
    for (int i = 0; i < n->nargs; i++)
        if (node_names(n->args[i], f)) return true;
    return false;
}

static bool seq_names(const rx_seq *q, const rx_func *f)
{
    if (!q) return false;
    for (int b = 0; b < q->nblocks; b++)
        for (int i = 0; i < q->blocks[b]->nbindings; i++)
            if (node_names(q->blocks[b]->bindings[i].value, f)) return true;
    return node_names(q->result, f);
}

/* Removes the originals of the copies that no graph function names any more. */
static void drop_unnamed(spec_ctx *c)
{
    rx_module *m = c->m;
    int k = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *f = m->funcs[i];
        bool orig = false, named = false;
        for (int j = 0; j < c->copies.n && !orig; j++) orig = c->copies.items[j].from == f;
        for (int j = 0; orig && j < m->nfuncs && !named; j++)
            named = m->funcs[j]->kind == RX_F_RELAX && seq_names(m->funcs[j]->body, f);
        if (!orig || named) m->funcs[k++] = f;
    }
    m->nfuncs = k;
}

bool rx_specialize(rx_module *m, int *ncalls, int *ncopies, rx_diags *d)
{
    spec_ctx c = {0};
    c.m = m;
    c.a = m->arena;
    c.ar = rx_arith_new(m->arena);
    int nf = m->nfuncs; /* the copies are appended after these */
    rx_func **funcs = RX_NEWN(m->arena, rx_func *, nf > 0 ? nf : 1);
    memcpy(funcs, m->funcs, sizeof(rx_func *) * (size_t)nf);
    for (int i = 0; i < nf; i++)
        if (funcs[i]->kind == RX_F_RELAX) spec_seq(&c, funcs[i]->body);
    if (c.copies.n) drop_unnamed(&c);
    else m->unchanged = true;
    if (ncalls) *ncalls = c.ncalls;
    if (ncopies) *ncopies = c.copies.n;
    RX_VEC_FREE(c.copies);
    rx_arith_free(c.ar);
    return true;
}

bool rx_pass_specialize(rx_module *m, rx_diags *d)
{
    return rx_specialize(m, NULL, NULL, d);
}
