/*
 * verify.c — the well-formedness check run between pipeline stages (rx_verify_module).
 *
 * A pass that builds a malformed module rarely fails where it made the mistake: a
 * variable used outside the block that binds it, a store to a buffer nobody allocated
 * or a call of a function that was removed surface stages later as a wrong kernel, a
 * VM verifier error or a crash. The driver runs this check after every graph-level
 * stage (always in debug builds, with `relaxc build --verify-each` in release builds),
 * so the first stage whose output breaks a rule is the one named.
 *
 * What is checked, graph level (every RX_F_RELAX function):
 *   scope      every VAR used is a parameter or bound earlier (relax-json: a variable
 *              bound in any block stays visible to the rest of the function; one bound
 *              in a branch of an if is local to that branch); a variable is bound once
 *              over the function; a dataflow variable is bound in a dataflow block
 *   annotation every value has its deduced annotation (sinfo); every bound variable
 *   calls      op calls name an op and carry one attribute per schema entry; call_tir
 *              names a loop function of this module (a GLOBAL resolving to it), call_fn
 *              a graph function or a variable; call_dps_library names its function;
 *              GLOBALs resolve to a function of this module by name
 * Loop level (every RX_F_TIR function):
 *   buffers    every LOAD and STORE names a parameter buffer or one an ALLOC before it
 *              (in the same statement list or an enclosing one) made, with as many
 *              indices as the buffer has dimensions; buffer ids are unique
 *   variables  every symbolic variable an expression uses is in scope: the signature's
 *              (buffer shapes, scalar parameters), or an enclosing loop's, block
 *              iterator's or let's; a loop or let variable is not re-introduced inside
 *              its own scope (a block iterator may be its enclosing loop's variable
 *              bound to itself: the reader's implicit iterators)
 *
 * The check is linear in the module's size: scopes are id-indexed arrays (variables,
 * buffers and symbolic variables have module-unique ids), reset per function. It
 * reports the first violation of each function (later ones usually follow from it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/ir.h"
#include "relax/op.h"

/* Per-function state: what is in scope, by id. */
typedef struct vstate {
    const rx_module *m;
    const rx_func *f;
    const char *after; /* the stage whose output this is ("" for none) */
    rx_diags *d;
    bool failed;       /* one diagnostic per function */
    /* graph level: var id -> 0 unseen, 1 visible, 2 bound in a closed branch */
    RX_VEC(int32_t) vars;
    /* loop level: buffer id -> visible; svar id -> how many scopes have it open */
    RX_VEC(uint8_t) bufs;
    RX_VEC(uint8_t) svs;
} vstate;

static void fail(vstate *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(vstate *s, const char *fmt, ...)
{
    if (s->failed) return;
    s->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rx_diag_add(s->d, "", "malformed module%s%s: @%s: %s", *s->after ? " after " : "", s->after,
                s->f->name, msg);
}

/* The slot for id in v, growing v; NULL (after a diagnostic) for a negative id. */
#define SLOT(s, v, id, what) slot_((s), (void **)&(v).items, &(v).n, &(v).cap, sizeof *(v).items, (id), (what))

static void *slot_(vstate *s, void **items, int *n, int *cap, size_t size, int32_t id,
                   const char *what)
{
    if (id < 0) {
        fail(s, "%s has a negative id %d", what, (int)id);
        return NULL;
    }
    if (id >= *n) {
        if (id >= *cap) {
            int nc = *cap ? *cap : 64;
            while (nc <= id) nc *= 2;
            void *p = realloc(*items, (size_t)nc * size);
            if (!p) abort();
            *items = p;
            *cap = nc;
        }
        memset((char *)*items + (size_t)*n * size, 0, (size_t)(id + 1 - *n) * size);
        *n = id + 1;
    }
    return (char *)*items + (size_t)id * size;
}

/* ---------------------------------------------------------------- graph level */

static void expr(vstate *s, const rx_node *n);

static void seq(vstate *s, const rx_seq *q, bool scoped);

static void use_var(vstate *s, const rx_node *v)
{
    int32_t *st = SLOT(s, s->vars, v->u.var.id, "a variable");
    if (!st) return;
    if (*st == 0) fail(s, "variable %s is used but never bound before this use", v->u.var.name);
    else if (*st == 2) fail(s, "variable %s is used outside the if branch that binds it",
                            v->u.var.name);
}

static void expr(vstate *s, const rx_node *n)
{
    if (!n) {
        fail(s, "a missing expression");
        return;
    }
    if (!n->sinfo && n->kind != RX_N_GLOBAL)
        fail(s, "an expression without its annotation (not deduced)");
    for (int i = 0; i < n->nargs && n->kind != RX_N_IF; i++) expr(s, n->args[i]);
    switch (n->kind) {
    case RX_N_VAR:
        use_var(s, n);
        break;
    case RX_N_GLOBAL:
        if (rx_module_find(s->m, n->u.global.name) != n->u.global.fn || !n->u.global.fn)
            fail(s, "@%s is not a function of this module", n->u.global.name);
        break;
    case RX_N_CALL: {
        const rx_node *c = n->u.call.callee;
        switch (n->call_kind) {
        case RX_CALL_OP:
            if (!n->u.call.op) fail(s, "an op call without its op");
            else if (n->u.call.op->nattrs && !n->u.call.attrs)
                fail(s, "a call of %s without its attributes", n->u.call.op->name);
            break;
        case RX_CALL_TIR:
            if (!c || c->kind != RX_N_GLOBAL || !c->u.global.fn ||
                c->u.global.fn->kind != RX_F_TIR)
                fail(s, "call_tir of something that is not a loop function");
            else expr(s, c);
            if (!n->u.call.out) fail(s, "call_tir without its output annotation");
            break;
        case RX_CALL_FN:
            if (!c || (c->kind == RX_N_GLOBAL && c->u.global.fn &&
                       c->u.global.fn->kind != RX_F_RELAX) ||
                (c->kind != RX_N_GLOBAL && c->kind != RX_N_VAR))
                fail(s, "a call of something that is not a graph function");
            else expr(s, c);
            break;
        case RX_CALL_LIB:
            if (!n->u.call.lib) fail(s, "call_dps_library without a function name");
            if (!n->u.call.out) fail(s, "call_dps_library without its output annotation");
            break;
        default:
            fail(s, "a call of unknown kind %d", n->call_kind);
        }
        break;
    }
    case RX_N_IF:
        if (n->nargs < 1) {
            fail(s, "an if without its condition");
            break;
        }
        expr(s, n->args[0]);
        seq(s, n->u.if_.then_body, true);
        seq(s, n->u.if_.else_body, true);
        break;
    default:
        break;
    }
}

/* Binds v in the current scope; records it in *bound for closing the scope. */
static void bind_var(vstate *s, const rx_node *v, bool dataflow_block)
{
    if (!v || v->kind != RX_N_VAR) {
        fail(s, "a binding of something that is not a variable");
        return;
    }
    if (!v->sinfo) fail(s, "variable %s has no annotation", v->u.var.name);
    if (v->u.var.dataflow && !dataflow_block)
        fail(s, "dataflow variable %s is bound outside a dataflow block", v->u.var.name);
    int32_t *st = SLOT(s, s->vars, v->u.var.id, "a variable");
    if (!st) return;
    if (*st) fail(s, "variable %s is bound twice", v->u.var.name);
    *st = 1;
}

/* A body; scoped: what a branch of an if binds is not visible after it. */
static void seq(vstate *s, const rx_seq *q, bool scoped)
{
    if (!q) {
        fail(s, "a missing body");
        return;
    }
    RX_VEC(int32_t) bound = {0}; /* ids this body binds */
    for (int b = 0; b < q->nblocks; b++) {
        const rx_block *blk = q->blocks[b];
        for (int i = 0; i < blk->nbindings; i++) {
            const rx_binding *bd = &blk->bindings[i];
            expr(s, bd->value);
            bind_var(s, bd->var, blk->dataflow);
            if (scoped && bd->var && bd->var->kind == RX_N_VAR) RX_VEC_PUSH(bound, bd->var->u.var.id);
        }
    }
    expr(s, q->result);
    for (int i = 0; i < bound.n; i++) {
        int32_t *st = SLOT(s, s->vars, bound.items[i], "a variable");
        if (st) *st = 2;
    }
    RX_VEC_FREE(bound);
}

static void graph_func(vstate *s, const rx_func *f)
{
    for (int i = 0; i < f->nparams; i++) bind_var(s, f->params[i], false);
    seq(s, f->body, false);
}

/* ---------------------------------------------------------------- loop level */

static void tir_stmts(vstate *s, const rx_stmts *ss);

/* Opens v's scope; once: refuse a variable already open (a loop or let inside its own
 * scope). */
static void open_sv(vstate *s, const rx_svar *v, bool once)
{
    uint8_t *st = SLOT(s, s->svs, v->id, "a symbolic variable");
    if (!st) return;
    if (once && *st) fail(s, "variable %s is introduced again inside its own scope", v->name);
    if (*st < 255) (*st)++;
}

static void close_sv(vstate *s, const rx_svar *v)
{
    uint8_t *st = SLOT(s, s->svs, v->id, "a symbolic variable");
    if (st && *st) (*st)--;
}

static void buf_use(vstate *s, const rx_buffer *b, int nidx, const char *how)
{
    if (!b) {
        fail(s, "a %s of a missing buffer", how);
        return;
    }
    uint8_t *st = SLOT(s, s->bufs, b->id, "a buffer");
    if (st && !*st) fail(s, "%s of buffer %s, which is neither a parameter nor allocated before",
                         how, b->name);
    else if (nidx != b->ndim)
        fail(s, "%s of buffer %s with %d indices (it has %d dimensions)", how, b->name, nidx,
             (int)b->ndim);
}

static void texpr(vstate *s, const rx_expr *e)
{
    if (!e) {
        fail(s, "a missing loop-level expression");
        return;
    }
    if (e->kind == RX_E_VAR) {
        uint8_t *st = SLOT(s, s->svs, e->u.var->id, "a symbolic variable");
        if (st && !*st) fail(s, "symbolic variable %s is used out of its scope", e->u.var->name);
        return;
    }
    if (e->kind == RX_E_LOAD) buf_use(s, e->u.load.buf, e->u.load.nidx, "a load");
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) texpr(s, rx_expr_child(e, i));
}

static void tir_stmt(vstate *s, const rx_stmt *st)
{
    switch (st->kind) {
    case RX_S_FOR:
        texpr(s, st->u.for_.min);
        texpr(s, st->u.for_.extent);
        open_sv(s, st->u.for_.var, true);
        tir_stmts(s, &st->u.for_.body);
        close_sv(s, st->u.for_.var);
        break;
    case RX_S_BLOCK:
        for (int i = 0; i < st->u.block.niters; i++) {
            texpr(s, st->u.block.iters[i].dom);
            texpr(s, st->u.block.iters[i].bind);
        }
        for (int i = 0; i < st->u.block.niters; i++) {
            const rx_iter *it = &st->u.block.iters[i];
            bool self = it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var;
            open_sv(s, it->var, !self);
        }
        tir_stmts(s, &st->u.block.init);
        tir_stmts(s, &st->u.block.body);
        for (int i = 0; i < st->u.block.niters; i++) close_sv(s, st->u.block.iters[i].var);
        break;
    case RX_S_STORE:
        buf_use(s, st->u.store.buf, st->u.store.nidx, "a store");
        for (int i = 0; i < st->u.store.nidx; i++) texpr(s, st->u.store.idx[i]);
        texpr(s, st->u.store.value);
        break;
    case RX_S_ALLOC: {
        const rx_buffer *b = st->u.alloc.buf;
        for (int i = 0; b && i < b->ndim; i++) texpr(s, b->shape[i]);
        uint8_t *v = b ? SLOT(s, s->bufs, b->id, "a buffer") : NULL;
        if (!b) fail(s, "an allocation of a missing buffer");
        else if (v) *v = 1;
        break;
    }
    case RX_S_IF:
        texpr(s, st->u.if_.cond);
        tir_stmts(s, &st->u.if_.then_s);
        tir_stmts(s, &st->u.if_.else_s);
        break;
    case RX_S_LET:
        texpr(s, st->u.let.value);
        open_sv(s, st->u.let.var, true);
        tir_stmts(s, &st->u.let.body);
        close_sv(s, st->u.let.var);
        break;
    default:
        fail(s, "a statement of unknown kind %d", st->kind);
    }
}

/* A statement list: ALLOCs are visible to what follows them, until the list ends. */
static void tir_stmts(vstate *s, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n && !s->failed; i++) tir_stmt(s, ss->items[i]);
    for (int i = 0; i < ss->n; i++)
        if (ss->items[i]->kind == RX_S_ALLOC && ss->items[i]->u.alloc.buf) {
            uint8_t *v = SLOT(s, s->bufs, ss->items[i]->u.alloc.buf->id, "a buffer");
            if (v) *v = 0;
        }
}

/* The signature's variables: those in parameter buffers' shapes, and scalar params. */
static void sig_vars(vstate *s, const rx_expr *e)
{
    if (e->kind == RX_E_VAR) {
        open_sv(s, e->u.var, false);
        return;
    }
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) sig_vars(s, rx_expr_child(e, i));
}

static void tir_func(vstate *s, const rx_func *f)
{
    for (int i = 0; i < f->nsvars; i++) open_sv(s, f->svars[i], false);
    for (int i = 0; i < f->ntparams; i++) {
        const rx_tparam *p = &f->tparams[i];
        if (p->var) {
            open_sv(s, p->var, false);
            continue;
        }
        if (!p->buf) {
            fail(s, "parameter %d is neither a buffer nor a scalar", i);
            continue;
        }
        uint8_t *v = SLOT(s, s->bufs, p->buf->id, "a buffer");
        if (v && *v) fail(s, "buffer %s is a parameter twice", p->buf->name);
        else if (v) *v = 1;
        for (int k = 0; k < p->buf->ndim; k++) sig_vars(s, p->buf->shape[k]);
    }
    tir_stmts(s, &f->tbody);
}

bool rx_verify_module(const rx_module *m, const char *after, rx_diags *d)
{
    vstate s = {.m = m, .after = after ? after : "", .d = d};
    bool ok = true;
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_func *f = m->funcs[i];
        s.f = f;
        s.failed = false;
        if (s.vars.n) memset(s.vars.items, 0, sizeof *s.vars.items * (size_t)s.vars.n);
        if (s.bufs.n) memset(s.bufs.items, 0, (size_t)s.bufs.n);
        if (s.svs.n) memset(s.svs.items, 0, (size_t)s.svs.n);
        for (int j = 0; j < i; j++)
            if (!strcmp(m->funcs[j]->name, f->name)) fail(&s, "two functions have this name");
        if (f->kind == RX_F_RELAX) graph_func(&s, f);
        else tir_func(&s, f);
        ok &= !s.failed;
    }
    RX_VEC_FREE(s.vars);
    RX_VEC_FREE(s.bufs);
    RX_VEC_FREE(s.svs);
    return ok;
}
