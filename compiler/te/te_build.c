/*
 * te_build.c — the tensor-expression builder's back half: one loop function from
 * the collected tensors (te.h states the result's shape; this file is the how).
 *
 * Step 1: roles. Inputs must be placeholders, outputs materialized computes; every
 *         other non-inlined compute is an intermediate (ALLOC'd in the function).
 * Step 2: inlining. In creation order, loads of inlined computes are replaced by
 *         their formulas with the index variables substituted; since a tensor only
 *         reads earlier ones, one forward sweep inlines chains too.
 * Step 3: symbolic variables. Every variable of every shape, extent and formula that
 *         the builder did not make is a caller variable. A caller variable standing
 *         as a whole dim of a buffer parameter (inputs then outputs, dims in order)
 *         gets a fresh shape variable; every other one, in order of first use, a
 *         fresh scalar parameter whose caller expression goes to tir_vars.
 * Step 4: substitution of caller variables by the function's, in place for buffer
 *         shapes (buffers are the builder's own) and by rebuilding for formulas.
 * Step 5: statements: per materialized compute, [ALLOC] FOR.. FOR.. BLOCK, the
 *         block's iterators being the implicit ones of the relax-json reader.
 * Cost: linear in the size of the formulas times the number of tensors (variable and
 * tensor lookups are linear scans over a handful of entries).
 */
#include <string.h>

#include "te_int.h"

typedef struct bctx {
    rx_te *te;
    rx_arena *a;
    rx_vmap vm;          /* caller variable -> function variable */
    rx_svar_vec callers; /* caller variables in order of first use */
} bctx;

/* The tensor whose buffer is b, or NULL. */
static rx_te_tensor *tensor_of(const rx_te *te, const rx_buffer *b)
{
    for (int i = 0; i < te->tensors.n; i++)
        if (te->tensors.items[i]->buf == b) return te->tensors.items[i];
    return NULL;
}

/* ---------------------------------------------------------------- step 2: inlining */
static rx_expr *inline_loads(rx_te *te, rx_expr *e)
{
    if (!e) return NULL;
    int n = rx_expr_nchildren(e);
    if (n == 0) return e;
    rx_expr *small[8];
    rx_expr **k = n <= 8 ? small : RX_NEWN(te->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        k[i] = inline_loads(te, rx_expr_child(e, i));
        changed |= k[i] != rx_expr_child(e, i);
    }
    if (e->kind == RX_E_LOAD) {
        rx_te_tensor *t = tensor_of(te, e->u.load.buf);
        if (t && t->inlined) {
            rx_vmap m = {0};
            for (int i = 0; i < n; i++) rx_vmap_set(&m, t->ivars[i], k[i]);
            rx_expr *r = rx_expr_subst(te->a, t->body, &m);
            rx_vmap_free(&m);
            return r;
        }
    }
    return changed ? rx_expr_with_children(te->a, e, k) : e;
}

/* Asserts that every buffer e loads is an input or a materialized compute. */
static void check_loads(const rx_te *te, const rx_expr *e, const bool *is_input)
{
    if (!e) return;
    if (e->kind == RX_E_LOAD) {
        const rx_te_tensor *t = tensor_of(te, e->u.load.buf);
        RX_ASSERT(t != NULL && !t->inlined);
        if (t->kind == TE_PLACEHOLDER && !is_input[t->index])
            rx_fatal(__FILE__, __LINE__, "te: placeholder %s is used but not an input", t->name);
    }
    for (int i = 0; i < rx_expr_nchildren(e); i++) check_loads(te, rx_expr_child(e, i), is_input);
}

/* ---------------------------------------------------------------- step 3: variables */
static void collect(bctx *c, const rx_expr *e)
{
    rx_svar_vec vs = {0};
    rx_expr_vars(e, &vs);
    for (int i = 0; i < vs.n; i++) {
        const rx_svar *v = vs.items[i];
        if (rx_te_owns(c->te, v)) continue;
        bool seen = false;
        for (int k = 0; k < c->callers.n && !seen; k++) seen = c->callers.items[k] == v;
        if (!seen) RX_VEC_PUSH(c->callers, v);
    }
    RX_VEC_FREE(vs);
}

static void collect_buf(bctx *c, const rx_buffer *b)
{
    for (int i = 0; i < b->ndim; i++) collect(c, b->shape[i]);
}

static void collect_tensor(bctx *c, const rx_te_tensor *t)
{
    collect_buf(c, t->buf);
    for (int i = 0; i < t->nred; i++) collect(c, t->rdom[i]);
    collect(c, t->body);
    collect(c, t->init);
}

static rx_svar *fresh(bctx *c, const rx_svar *v, rx_svkind kind)
{
    rx_svar *f = rx_svar_new(c->a, v->name ? v->name : "n", RX_DT_I64, kind,
                             rx_module_new_id(c->te->m));
    rx_vmap_set(&c->vm, v, rx_e_var(c->a, f));
    return f;
}

/* ---------------------------------------------------------------- step 4: substitution */
static rx_expr *sub(bctx *c, rx_expr *e) { return e ? rx_expr_subst(c->a, e, &c->vm) : NULL; }

static void sub_buf(bctx *c, rx_buffer *b)
{
    for (int i = 0; i < b->ndim; i++) b->shape[i] = sub(c, b->shape[i]);
}

/* ---------------------------------------------------------------- step 5: statements */
static rx_stmts two(rx_arena *a, rx_stmt *s, rx_stmt *t)
{
    rx_stmt *both[2] = {s, t};
    return rx_stmts_of(a, both, 2);
}

static rx_expr **ivar_exprs(rx_arena *a, rx_svar **v, int n)
{
    rx_expr **e = RX_NEWN(a, rx_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) e[i] = rx_e_var(a, v[i]);
    return e;
}

static rx_stmt *store(rx_arena *a, rx_buffer *b, rx_expr **idx, rx_expr *v)
{
    return rx_s_store(a, b, idx, b->ndim, v);
}

/* The row-major position of rvars over rdom. */
static rx_expr *flat_index(rx_arena *a, const rx_te_tensor *t)
{
    rx_expr *f = NULL;
    for (int i = 0; i < t->nred; i++) {
        rx_expr *v = rx_e_var(a, t->rvars[i]);
        f = f ? rx_e_binary(a, RX_E_ADD, rx_e_binary(a, RX_E_MUL, f, t->rdom[i]), v) : v;
    }
    return f ? f : rx_e_int(a, 0);
}

/* The block of a materialized tensor (its formulas already substituted). */
static rx_stmt *block(rx_arena *a, rx_te_tensor *t)
{
    int nd = t->buf->ndim, n = nd + t->nred;
    rx_stmt *s = rx_s_block(a, t->name, RX_NEWN(a, rx_iter, n > 0 ? n : 1), n, (rx_stmts){0},
                            (rx_stmts){0});
    for (int i = 0; i < n; i++) {
        rx_iter *it = &s->u.block.iters[i];
        it->var = i < nd ? t->ivars[i] : t->rvars[i - nd];
        it->kind = i < nd ? RX_ITER_SPATIAL : RX_ITER_REDUCE;
        it->dom = i < nd ? t->buf->shape[i] : t->rdom[i - nd];
        it->bind = rx_e_var(a, it->var);
    }
    rx_expr **idx = ivar_exprs(a, t->ivars, nd);
    rx_expr *cur = rx_e_load(a, t->buf, idx, nd);
    switch (t->kind) {
    case TE_COMPUTE:
        s->u.block.body = rx_stmts_one(a, store(a, t->buf, idx, t->body));
        break;
    case TE_REDUCE: {
        static const rx_ekind comb[] = {RX_E_ADD, RX_E_MUL, RX_E_MAX, RX_E_MIN};
        s->u.block.init = rx_stmts_one(a, store(a, t->buf, idx, t->init));
        s->u.block.body =
            rx_stmts_one(a, store(a, t->buf, idx, rx_e_binary(a, comb[t->op], cur, t->body)));
        break;
    }
    case TE_ARGREDUCE: {
        rx_expr *best = rx_e_load(a, t->vbuf, idx, nd);
        rx_expr *better = rx_e_binary(a, t->op == RX_TE_ARGMAX ? RX_E_GT : RX_E_LT, t->body, best);
        s->u.block.init = two(a, store(a, t->buf, idx, rx_e_int(a, 0)),
                              store(a, t->vbuf, idx, t->init));
        s->u.block.body =
            two(a, store(a, t->buf, idx, rx_e_select(a, better, flat_index(a, t), cur)),
                store(a, t->vbuf, idx, rx_e_select(a, better, t->body, best)));
        break;
    }
    default: RX_UNREACHABLE();
    }
    return s;
}

/* FOR nests around the block of t. */
static rx_stmt *nest(rx_arena *a, rx_te_tensor *t)
{
    rx_stmt *inner = block(a, t);
    int nd = t->buf->ndim;
    for (int i = nd + t->nred - 1; i >= 0; i--) {
        inner = rx_s_for(a, i < nd ? t->ivars[i] : t->rvars[i - nd], rx_e_int(a, 0),
                         i < nd ? t->buf->shape[i] : t->rdom[i - nd], RX_LOOP_SERIAL,
                         rx_stmts_one(a, inner));
    }
    return inner;
}

/* ---------------------------------------------------------------- the build */
void rx_te_build(rx_te *te, const char *name, rx_te_tensor *const *ins, int nin,
                 rx_te_tensor *const *outs, int nout, rx_te_func *out)
{
    RX_ASSERT(!te->built && nout >= 1);
    te->built = true;
    rx_arena *a = te->a;
    int nt = te->tensors.n;
    bctx c = {0};
    c.te = te;
    c.a = a;

    /* Step 1: roles. */
    bool *is_input = rx_xcalloc((size_t)nt + 1, 1), *is_output = rx_xcalloc((size_t)nt + 1, 1);
    for (int i = 0; i < nin; i++) {
        RX_ASSERT(ins[i]->kind == TE_PLACEHOLDER && !is_input[ins[i]->index]);
        is_input[ins[i]->index] = true;
    }
    for (int i = 0; i < nout; i++) {
        RX_ASSERT(outs[i]->kind != TE_PLACEHOLDER && !outs[i]->inlined);
        RX_ASSERT(!is_output[outs[i]->index]);
        is_output[outs[i]->index] = true;
    }

    /* Step 2: inlining, then the check that every load reads something real. */
    for (int i = 0; i < nt; i++) {
        rx_te_tensor *t = te->tensors.items[i];
        t->body = inline_loads(te, t->body);
        t->init = inline_loads(te, t->init);
    }
    for (int i = 0; i < nt; i++) {
        rx_te_tensor *t = te->tensors.items[i];
        if (t->kind != TE_PLACEHOLDER && !t->inlined) check_loads(te, t->body, is_input);
    }

    /* Step 3: caller variables: whole dims of buffer parameters first. */
    RX_VEC(const rx_svar *) svars = {0};
    for (int p = 0; p < nin + nout; p++) {
        const rx_buffer *b = p < nin ? ins[p]->buf : outs[p - nin]->buf;
        for (int i = 0; i < b->ndim; i++) {
            const rx_expr *d = b->shape[i];
            if (d->kind != RX_E_VAR || rx_vmap_get(&c.vm, d->u.var)) continue;
            RX_VEC_PUSH(svars, fresh(&c, d->u.var, RX_SV_SHAPE));
        }
    }
    for (int p = 0; p < nin + nout; p++) collect_buf(&c, p < nin ? ins[p]->buf : outs[p - nin]->buf);
    for (int i = 0; i < nt; i++) {
        rx_te_tensor *t = te->tensors.items[i];
        if (t->kind != TE_PLACEHOLDER && !t->inlined) collect_tensor(&c, t);
    }
    int nshape = svars.n;
    RX_VEC(rx_expr *) tvars = {0};
    for (int i = 0; i < c.callers.n; i++) {
        const rx_svar *v = c.callers.items[i];
        if (rx_vmap_get(&c.vm, v)) continue;
        RX_VEC_PUSH(svars, fresh(&c, v, RX_SV_PARAM));
        RX_VEC_PUSH(tvars, rx_e_var(a, v));
    }

    /* Step 4: substitution. */
    for (int i = 0; i < nt; i++) {
        rx_te_tensor *t = te->tensors.items[i];
        sub_buf(&c, t->buf);
        if (t->vbuf) sub_buf(&c, t->vbuf);
        for (int k = 0; k < t->nred; k++) t->rdom[k] = sub(&c, t->rdom[k]);
        t->body = sub(&c, t->body);
        t->init = sub(&c, t->init);
    }

    /* Step 5: statements in creation order. */
    RX_VEC(rx_stmt *) body = {0};
    for (int i = 0; i < nt; i++) {
        rx_te_tensor *t = te->tensors.items[i];
        if (t->kind == TE_PLACEHOLDER || t->inlined) continue;
        if (!is_output[i]) RX_VEC_PUSH(body, rx_s_alloc(a, t->buf));
        if (t->vbuf) RX_VEC_PUSH(body, rx_s_alloc(a, t->vbuf));
        RX_VEC_PUSH(body, nest(a, t));
    }

    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_TIR;
    f->name = rx_arena_strdup(a, name ? name : "");
    f->nsvars = svars.n;
    f->svars = RX_NEWN(a, const rx_svar *, svars.n > 0 ? svars.n : 1);
    if (svars.n) memcpy(f->svars, svars.items, sizeof(*svars.items) * (size_t)svars.n);
    f->ntparams = nin + nout + (svars.n - nshape);
    f->tparams = RX_NEWN(a, rx_tparam, f->ntparams > 0 ? f->ntparams : 1);
    for (int p = 0; p < nin + nout; p++) f->tparams[p].buf = p < nin ? ins[p]->buf : outs[p - nin]->buf;
    for (int k = nshape; k < svars.n; k++) f->tparams[nin + nout + k - nshape].var = svars.items[k];
    f->tbody.n = body.n;
    f->tbody.items = RX_NEWN(a, rx_stmt *, body.n > 0 ? body.n : 1);
    if (body.n) memcpy(f->tbody.items, body.items, sizeof(*body.items) * (size_t)body.n);
    f->nouts = -1;

    out->fn = f;
    out->ntir_vars = tvars.n;
    out->tir_vars = RX_NEWN(a, rx_expr *, tvars.n > 0 ? tvars.n : 1);
    if (tvars.n) memcpy(out->tir_vars, tvars.items, sizeof(*tvars.items) * (size_t)tvars.n);

    RX_VEC_FREE(svars);
    RX_VEC_FREE(tvars);
    RX_VEC_FREE(body);
    RX_VEC_FREE(c.callers);
    rx_vmap_free(&c.vm);
    free(is_input);
    free(is_output);
}

void rx_te_add_func(rx_module *m, rx_func *f)
{
    rx_func **fs = RX_NEWN(m->arena, rx_func *, m->nfuncs + 1);
    if (m->nfuncs) memcpy(fs, m->funcs, sizeof(*fs) * (size_t)m->nfuncs);
    fs[m->nfuncs++] = f;
    m->funcs = fs;
}
