/*
 * lift_workspace.c — cross-level workspace lifting (paper §4.4, Figure 11): a loop
 * function's global-scope intermediate buffer becomes an output buffer its graph-level
 * callers allocate, so static memory planning (vmgen/plan.c) sees it and reuses its
 * bytes for other tensors instead of the kernel taking a heap block per call.
 *
 * Which buffers (the analysis feedback): an ALLOC statement at the top level of a loop
 * function's body (not inside a loop, block, if or let, so one buffer serves the whole
 * call and no parallel iteration needs its own copy), of global scope, of known dtype,
 * whose extents use only the function's symbolic variables (those of its buffer
 * signature and its scalar parameters). Legalized reductions with a materialized
 * intermediate (softmax's max, exp and sum, rms_norm's sum of squares, ...) and
 * FuseTIR's large or symbolic intermediates (global on purpose) are such buffers.
 *
 * Step 1: every call_tir of every graph function, per callee. Step 2: per loop
 * function with such buffers, each call site binds the function's variables by
 * matching its buffer parameters against the call's argument and output annotations
 * (rx_si_match, as deduction and the VM lowering do) and its scalar parameters to the
 * call's tir_vars; every extent must then be an expression over the caller's
 * variables, at every call site, or the function is left alone. Step 3: the loop
 * function gets the buffers as trailing output parameters (after its outputs) and
 * loses the ALLOCs. Step 4: each call `v = call_tir(@k, args, out=O)` gets the
 * workspaces as extra fields of a tuple output:
 *
 *     v_ws = call_tir(@k, args, out=(O, W1, ..., Wk))      (O a tensor)
 *     v = v_ws[0]
 *
 * and for a tuple O of m fields, `v = call_tir(..., out=(O1..Om, W1..Wk))` in place
 * when v is only ever used through get_item (indices below m mean what they meant),
 * else `v_ws = ...; f_i = v_ws[i]; v = (f_1, ..., f_m)`. No new node kind and no
 * attribute: deduction, the VM lowering and planning already handle tuple outputs, and
 * a workspace field nothing extracts dies with v_ws right after the call, so planning
 * reuses its bytes at once. Then the module is deduced again.
 *
 * Cost: one walk over the graph functions and one over each loop function's top-level
 * statements, plus one signature match per call site of a lifted function.
 */
#include "relax/deduce.h"
#include "relax/pass.h"

#include <string.h>

typedef RX_VEC(rx_node *) node_vec;

typedef struct kinfo {     /* a loop function with liftable buffers */
    rx_func *k;
    RX_VEC(rx_buffer *) ws; /* the buffers, in statement order */
    node_vec calls;         /* its call_tir nodes */
    bool ok;                /* every call site binds every extent */
} kinfo;

typedef struct lw {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    RX_VEC(kinfo) ks;
} lw;

/* ---- which buffers ---- */

static bool known_var(const rx_func *k, const rx_svar *v)
{
    for (int i = 0; i < k->nsvars; i++)
        if (k->svars[i] == v) return true;
    for (int i = 0; i < k->ntparams; i++)
        if (!k->tparams[i].buf && k->tparams[i].var == v) return true;
    return false;
}

static bool liftable(const rx_func *k, const rx_stmt *s)
{
    if (s->kind != RX_S_ALLOC) return false;
    const rx_buffer *b = s->u.alloc.buf;
    if (b->scope != RX_SCOPE_GLOBAL || b->dtype == RX_DT_UNKNOWN) return false;
    rx_svar_vec vs = {0};
    for (int i = 0; i < b->ndim; i++) rx_expr_vars(b->shape[i], &vs);
    bool ok = true;
    for (int i = 0; i < vs.n && ok; i++) ok = known_var(k, vs.items[i]);
    RX_VEC_FREE(vs);
    return ok;
}

static kinfo *find(lw *c, const rx_func *k)
{
    for (int i = 0; i < c->ks.n; i++)
        if (c->ks.items[i].k == k) return &c->ks.items[i];
    return NULL;
}

/* ---- Step 1: call sites ---- */

static void calls_seq(lw *c, const rx_seq *s);

static void calls_node(lw *c, rx_node *n)
{
    if (!n) return;
    if (n->kind == RX_N_IF) {
        calls_seq(c, n->u.if_.then_body);
        calls_seq(c, n->u.if_.else_body);
    }
    if (n->kind == RX_N_CALL && n->call_kind == RX_CALL_TIR && n->u.call.callee->kind == RX_N_GLOBAL) {
        kinfo *ki = find(c, n->u.call.callee->u.global.fn);
        if (ki) RX_VEC_PUSH(ki->calls, n);
    }
    for (int i = 0; i < n->nargs; i++) calls_node(c, n->args[i]);
}

static void calls_seq(lw *c, const rx_seq *s)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) calls_node(c, s->blocks[b]->bindings[i].value);
    calls_node(c, s->result);
}

/* ---- Step 2: the workspaces' annotations at one call site ---- */

/* The output annotations of call n with k's workspaces appended (NULL when some
 * extent cannot be expressed at this call site). */
static rx_sinfo *extended_out(lw *c, const kinfo *ki, const rx_node *n)
{
    const rx_func *k = ki->k;
    const rx_sinfo *o = n->u.call.out;
    if (!o) return NULL;
    int nout = o->kind == RX_SI_TUPLE ? o->nfields : 1;
    rx_vmap vm = {0};
    bool ok = true;
    int bi = 0, si = 0;
    for (int j = 0; j < k->ntparams && ok; j++) {
        const rx_tparam *p = &k->tparams[j];
        if (!p->buf) {
            ok = si < n->u.call.ntir_vars;
            if (ok) rx_vmap_set(&vm, p->var, n->u.call.tir_vars[si++]);
            continue;
        }
        int oi = bi - n->nargs; /* output index, when bi is past the arguments */
        const rx_sinfo *actual = bi < n->nargs ? n->args[bi]->sinfo
                                 : oi < nout    ? (o->kind == RX_SI_TUPLE ? o->fields[oi] : o)
                                                : NULL;
        rx_sinfo *param = rx_si_tensor(c->a, (rx_dtype)p->buf->dtype, p->buf->ndim, p->buf->shape);
        ok = actual && rx_si_match(c->ar, c->a, param, actual, &vm) != RX_CMP_NO;
        bi++;
    }
    ok = ok && bi == n->nargs + nout;
    rx_sinfo **fields = RX_NEWN(c->a, rx_sinfo *, nout + ki->ws.n);
    for (int i = 0; i < nout; i++) fields[i] = o->kind == RX_SI_TUPLE ? o->fields[i] : (rx_sinfo *)o;
    for (int w = 0; w < ki->ws.n && ok; w++) {
        const rx_buffer *b = ki->ws.items[w];
        rx_expr **dims = RX_NEWN(c->a, rx_expr *, b->ndim > 0 ? b->ndim : 1);
        rx_svar_vec vs = {0};
        for (int i = 0; i < b->ndim; i++) rx_expr_vars(b->shape[i], &vs);
        for (int i = 0; i < vs.n && ok; i++) ok = rx_vmap_get(&vm, vs.items[i]) != NULL;
        RX_VEC_FREE(vs);
        for (int i = 0; i < b->ndim && ok; i++)
            dims[i] = rx_arith_simplify(c->ar, rx_expr_subst(c->a, b->shape[i], &vm));
        if (ok) fields[nout + w] = rx_si_tensor(c->a, (rx_dtype)b->dtype, b->ndim, dims);
    }
    rx_vmap_free(&vm);
    return ok ? rx_si_tuple(c->a, fields, nout + ki->ws.n) : NULL;
}

/* ---- Step 3: the loop function ---- */

static void lift_kernel(lw *c, kinfo *ki)
{
    rx_func *k = ki->k;
    rx_tparam *tp = RX_NEWN(c->a, rx_tparam, k->ntparams + ki->ws.n);
    memcpy(tp, k->tparams, sizeof *tp * (size_t)k->ntparams);
    for (int w = 0; w < ki->ws.n; w++) tp[k->ntparams + w] = (rx_tparam){ki->ws.items[w], NULL};
    rx_stmt **body = RX_NEWN(c->a, rx_stmt *, k->tbody.n > 0 ? k->tbody.n : 1);
    int n = 0;
    for (int i = 0; i < k->tbody.n; i++) {
        rx_stmt *s = k->tbody.items[i];
        bool lifted = false;
        for (int w = 0; w < ki->ws.n && !lifted; w++)
            lifted = s->kind == RX_S_ALLOC && s->u.alloc.buf == ki->ws.items[w];
        if (!lifted) body[n++] = s;
    }
    k->tparams = tp;
    k->ntparams += ki->ws.n;
    k->tbody = (rx_stmts){body, n};
    if (k->nouts >= 0) k->nouts += ki->ws.n;
}

/* ---- Step 4: the call sites ---- */

typedef RX_VEC(rx_binding) binding_vec;

/* Whether every use of variable id in n is as the tuple of a get_item. */
static bool only_get_item(const rx_node *n, int32_t id);

static bool only_get_item_seq(const rx_seq *s, int32_t id)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++)
            if (!only_get_item(s->blocks[b]->bindings[i].value, id)) return false;
    return only_get_item(s->result, id);
}

static bool only_get_item(const rx_node *n, int32_t id)
{
    if (!n) return true;
    if (n->kind == RX_N_VAR) return n->u.var.id != id;
    if (n->kind == RX_N_GET_ITEM && n->args[0]->kind == RX_N_VAR) return true;
    if (n->kind == RX_N_IF)
        return only_get_item(n->args[0], id) && only_get_item_seq(n->u.if_.then_body, id) &&
               only_get_item_seq(n->u.if_.else_body, id);
    if (n->kind == RX_N_CALL && n->u.call.callee && !only_get_item(n->u.call.callee, id)) return false;
    for (int i = 0; i < n->nargs; i++)
        if (!only_get_item(n->args[i], id)) return false;
    return true;
}

/* Variable names of a function, for fresh ones. */
typedef RX_VEC(const char *) name_vec;

static void names_seq(name_vec *v, const rx_seq *s)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            RX_VEC_PUSH(*v, bd->var->u.var.name);
            if (bd->value->kind == RX_N_IF) {
                names_seq(v, bd->value->u.if_.then_body);
                names_seq(v, bd->value->u.if_.else_body);
            }
        }
}

static const char *fresh(lw *c, name_vec *names, const char *base, const char *suffix)
{
    for (int k = 0;; k++) {
        const char *s = k ? rx_arena_printf(c->a, "%s%s%d", base, suffix, k)
                          : rx_arena_printf(c->a, "%s%s", base, suffix);
        bool taken = false;
        for (int i = 0; i < names->n && !taken; i++) taken = !strcmp(names->items[i], s);
        if (!taken) {
            RX_VEC_PUSH(*names, s);
            return s;
        }
    }
}

static void push(binding_vec *out, rx_node *var, rx_node *value, rx_sinfo *given, rx_loc loc)
{
    rx_binding b = {var, value, given, false, loc};
    RX_VEC_PUSH(*out, b);
}

/* The bindings replacing bd, a call_tir of a lifted function (see the header). */
static void rewrite(lw *c, const rx_func *g, name_vec *names, bool dataflow, const rx_binding *bd,
                    const kinfo *ki, binding_vec *out)
{
    const rx_node *n = bd->value;
    rx_sinfo *ext = extended_out(c, ki, n);
    RX_ASSERT(ext);
    rx_node *call = rx_n_call_tir(c->m, n->u.call.callee, n->args, n->nargs, ext, n->u.call.tir_vars,
                                  n->u.call.ntir_vars);
    call->loc = n->loc;
    const rx_sinfo *o = n->u.call.out;
    if (o->kind == RX_SI_TUPLE && only_get_item_seq(g->body, bd->var->u.var.id)) {
        push(out, bd->var, call, NULL, bd->loc);
        return;
    }
    rx_node *tmp = rx_n_var(c->m, fresh(c, names, bd->var->u.var.name, "_ws"), NULL, dataflow);
    push(out, tmp, call, NULL, bd->loc);
    if (o->kind != RX_SI_TUPLE) {
        push(out, bd->var, rx_n_get_item(c->m, tmp, 0), bd->given, bd->loc);
        return;
    }
    rx_node **fields = RX_NEWN(c->a, rx_node *, o->nfields);
    for (int i = 0; i < o->nfields; i++) {
        const char *nm = fresh(c, names, bd->var->u.var.name, rx_arena_printf(c->a, "_%d", i));
        fields[i] = rx_n_var(c->m, nm, NULL, dataflow);
        push(out, fields[i], rx_n_get_item(c->m, tmp, i), NULL, bd->loc);
    }
    push(out, bd->var, rx_n_tuple(c->m, fields, o->nfields), bd->given, bd->loc);
}

static int rewrite_seq(lw *c, const rx_func *g, name_vec *names, rx_seq *s)
{
    int changed = 0;
    for (int b = 0; b < s->nblocks; b++) {
        rx_block *blk = s->blocks[b];
        binding_vec out = {0};
        int here = 0;
        for (int i = 0; i < blk->nbindings; i++) {
            const rx_binding *bd = &blk->bindings[i];
            const rx_node *v = bd->value;
            if (v->kind == RX_N_IF) {
                changed += rewrite_seq(c, g, names, v->u.if_.then_body);
                changed += rewrite_seq(c, g, names, v->u.if_.else_body);
            }
            const kinfo *ki = NULL;
            if (!bd->match_cast && v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR &&
                v->u.call.callee->kind == RX_N_GLOBAL)
                ki = find(c, v->u.call.callee->u.global.fn);
            if (ki && ki->ok) {
                rewrite(c, g, names, blk->dataflow, bd, ki, &out);
                here++;
            } else {
                RX_VEC_PUSH(out, *bd);
            }
        }
        if (here) {
            rx_binding *nb = RX_NEWN(c->a, rx_binding, out.n);
            memcpy(nb, out.items, sizeof *nb * (size_t)out.n);
            blk->bindings = nb;
            blk->nbindings = out.n;
        }
        changed += here;
        RX_VEC_FREE(out);
    }
    return changed;
}

bool rx_pass_lift_workspace(rx_module *m, rx_diags *d)
{
    lw c = {m, m->arena, rx_arith_new(m->arena), {0}};
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *k = m->funcs[i];
        if (k->kind != RX_F_TIR) continue;
        kinfo ki = {k, {0}, {0}, true};
        for (int s = 0; s < k->tbody.n; s++)
            if (liftable(k, k->tbody.items[s])) RX_VEC_PUSH(ki.ws, k->tbody.items[s]->u.alloc.buf);
        if (ki.ws.n) RX_VEC_PUSH(c.ks, ki);
    }
    int changed = 0;
    if (c.ks.n) {
        /* Step 1 */
        for (int i = 0; i < m->nfuncs; i++)
            if (m->funcs[i]->kind == RX_F_RELAX) calls_seq(&c, m->funcs[i]->body);
        /* Step 2 */
        for (int i = 0; i < c.ks.n; i++) {
            kinfo *ki = &c.ks.items[i];
            ki->ok = ki->calls.n > 0;
            for (int j = 0; j < ki->calls.n && ki->ok; j++)
                ki->ok = extended_out(&c, ki, ki->calls.items[j]) != NULL;
        }
        /* Step 4 (the calls read the functions' old signatures), then Step 3 */
        for (int i = 0; i < m->nfuncs; i++) {
            rx_func *g = m->funcs[i];
            if (g->kind != RX_F_RELAX) continue;
            name_vec names = {0};
            for (int p = 0; p < g->nparams; p++) RX_VEC_PUSH(names, g->params[p]->u.var.name);
            names_seq(&names, g->body);
            changed += rewrite_seq(&c, g, &names, g->body);
            RX_VEC_FREE(names);
        }
        for (int i = 0; i < c.ks.n; i++)
            if (c.ks.items[i].ok) lift_kernel(&c, &c.ks.items[i]);
    }
    for (int i = 0; i < c.ks.n; i++) RX_VEC_FREE(c.ks.items[i].ws), RX_VEC_FREE(c.ks.items[i].calls);
    RX_VEC_FREE(c.ks);
    rx_arith_free(c.ar);
    if (!changed) m->unchanged = true;
    return true;
}
