/*
 * fuse_tir_copy.c — FuseTIR's statement copier and the compute-inline test
 * (fuse_tir_int.h states the maps).
 *
 * Copying: one recursive walk over a constituent's statements builds new statements
 * in the fused function's terms. Expressions are rebuilt only where something
 * changed: a variable with a mapping becomes its image, a load reads the mapped
 * buffer, and a load of an inlined intermediate becomes the producer's formula with
 * its index variables replaced by the load's (already copied) indices. Since the
 * constituents are copied in order and a formula is registered in copied form, a
 * chain of inlined producers collapses in one forward sweep. Binders get fresh
 * variables (same name, dtype and kind, a new module id): a block's implicit iterator
 * is the enclosing loop's variable itself (read_tir.c), so an iterator whose variable
 * already has a mapping keeps it.
 *
 * Compute inline (TVM's compute_inline, the paper's "intermediates do not reach global
 * memory when they can be computed inline"): ft_match_inline recognizes a producer
 * that stores each element of its output exactly once with a value that depends only
 * on that element's indices (and the function's symbolic variables), the shape every
 * ElementWise, Broadcast and Injective loop function the tensor-expression builder
 * generates has. Its value can then be evaluated wherever the element is read.
 * Cost: linear in the size of the statements copied (map lookups are linear in the
 * handful of entries a constituent has).
 */
#include <string.h>

#include "fuse_tir_int.h"

void ft_map_buffer(ft_copier *c, const rx_buffer *b, rx_buffer *to)
{
    RX_VEC_PUSH(c->from, b);
    RX_VEC_PUSH(c->to, to);
}

void ft_copier_free(ft_copier *c)
{
    rx_vmap_free(&c->vars);
    RX_VEC_FREE(c->from);
    RX_VEC_FREE(c->to);
}

static rx_buffer *buffer_of(const ft_copier *c, const rx_buffer *b)
{
    for (int i = c->from.n - 1; i >= 0; i--)
        if (c->from.items[i] == b) return c->to.items[i];
    return NULL;
}

static const ft_inline *inline_of(const ft_copier *c, const rx_buffer *b)
{
    for (int i = 0; c->inl && i < c->inl->n; i++)
        if (c->inl->items[i].buf == b) return &c->inl->items[i];
    return NULL;
}

/* ---------------------------------------------------------------- expressions */

/* The formula of an inlined buffer at indices idx. */
static rx_expr *inline_at(ft_copier *c, const ft_inline *in, rx_expr **idx)
{
    rx_vmap m = {0};
    for (int i = 0; i < in->ndim; i++) {
        rx_vmap_set(&m, in->ivars[i], idx[i]);
        if (in->lvars[i] != in->ivars[i]) rx_vmap_set(&m, in->lvars[i], idx[i]);
    }
    rx_expr *r = rx_expr_subst(c->a, in->value, &m);
    rx_vmap_free(&m);
    return r;
}

rx_expr *ft_copy_expr(ft_copier *c, rx_expr *e)
{
    if (!e) return NULL;
    if (e->kind == RX_E_VAR) {
        rx_expr *r = rx_vmap_get(&c->vars, e->u.var);
        return r ? r : e;
    }
    int n = rx_expr_nchildren(e);
    if (n == 0 && e->kind != RX_E_LOAD) return e; /* a 0-d load has no operand */
    rx_expr *small[8];
    rx_expr **k = n <= 8 ? small : RX_NEWN(c->a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        k[i] = ft_copy_expr(c, rx_expr_child(e, i));
        changed |= k[i] != rx_expr_child(e, i);
    }
    if (e->kind == RX_E_LOAD) {
        rx_buffer *b = buffer_of(c, e->u.load.buf);
        if (!b) b = e->u.load.buf;
        const ft_inline *in = inline_of(c, b);
        if (in) return inline_at(c, in, k);
        if (b != e->u.load.buf || changed) return rx_e_load(c->a, b, k, n);
        return e;
    }
    return changed ? rx_expr_with_children(c->a, e, k) : e;
}

/* ---------------------------------------------------------------- statements */

static bool taken(const ft_name_vec *v, const char *s)
{
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->items[i], s)) return true;
    return false;
}

const char *ft_unique_name(rx_arena *a, ft_name_vec *v, const char *base)
{
    const char *s = base;
    for (int k = 1; taken(v, s); k++) s = rx_arena_printf(a, "%s_%d", base, k);
    RX_VEC_PUSH(*v, s);
    return s;
}

/* A loop variable's name: its own unless a symbolic variable of the fused function
 * has it. */
static const char *var_name(ft_copier *c, const char *base)
{
    const ft_name_vec *v = &c->names->vars;
    if (!taken(v, base)) return base;
    const char *s = base;
    for (int k = 1; taken(v, s); k++) s = rx_arena_printf(c->a, "%s_%d", base, k);
    return s;
}

static const rx_svar *fresh_var(ft_copier *c, const rx_svar *v)
{
    const char *name = v->name ? v->name : "v";
    if (c->names) name = var_name(c, name);
    rx_svar *f = rx_svar_new(c->a, name, (rx_dtype)v->dtype, (rx_svkind)v->kind, rx_module_new_id(c->m));
    rx_vmap_set(&c->vars, v, rx_e_var(c->a, f));
    return f;
}

static rx_buffer *fresh_buffer(ft_copier *c, const rx_buffer *b)
{
    rx_buffer *f = rx_arena_dup(c->a, b, sizeof *b);
    f->shape = RX_NEWN(c->a, rx_expr *, b->ndim > 0 ? b->ndim : 1);
    for (int i = 0; i < b->ndim; i++) f->shape[i] = ft_copy_expr(c, b->shape[i]);
    f->id = rx_module_new_id(c->m);
    if (c->names) f->name = ft_unique_name(c->a, &c->names->bufs, b->name ? b->name : "buf");
    ft_map_buffer(c, b, f);
    return f;
}

static rx_stmt *copy_stmt(ft_copier *c, const rx_stmt *s)
{
    rx_stmt *r = rx_arena_dup(c->a, s, sizeof *s);
    switch ((rx_skind)s->kind) {
    case RX_S_FOR:
        r->u.for_.min = ft_copy_expr(c, s->u.for_.min);
        r->u.for_.extent = ft_copy_expr(c, s->u.for_.extent);
        r->u.for_.var = fresh_var(c, s->u.for_.var);
        r->u.for_.body = ft_copy_stmts(c, &s->u.for_.body);
        break;
    case RX_S_BLOCK: {
        int n = s->u.block.niters;
        r->u.block.iters = RX_NEWN(c->a, rx_iter, n > 0 ? n : 1);
        for (int i = 0; i < n; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            rx_iter *ni = &r->u.block.iters[i];
            *ni = *it;
            ni->dom = ft_copy_expr(c, it->dom);
            ni->bind = ft_copy_expr(c, it->bind);
            rx_expr *known = rx_vmap_get(&c->vars, it->var);
            ni->var = known && known->kind == RX_E_VAR ? known->u.var : fresh_var(c, it->var);
        }
        r->u.block.init = ft_copy_stmts(c, &s->u.block.init);
        r->u.block.body = ft_copy_stmts(c, &s->u.block.body);
        break;
    }
    case RX_S_STORE: {
        rx_buffer *b = buffer_of(c, s->u.store.buf);
        r->u.store.buf = b ? b : s->u.store.buf;
        int n = s->u.store.nidx;
        r->u.store.idx = RX_NEWN(c->a, rx_expr *, n > 0 ? n : 1);
        for (int i = 0; i < n; i++) r->u.store.idx[i] = ft_copy_expr(c, s->u.store.idx[i]);
        r->u.store.value = ft_copy_expr(c, s->u.store.value);
        break;
    }
    case RX_S_ALLOC:
        r->u.alloc.buf = fresh_buffer(c, s->u.alloc.buf);
        break;
    case RX_S_IF:
        r->u.if_.cond = ft_copy_expr(c, s->u.if_.cond);
        r->u.if_.then_s = ft_copy_stmts(c, &s->u.if_.then_s);
        r->u.if_.else_s = ft_copy_stmts(c, &s->u.if_.else_s);
        break;
    case RX_S_LET:
        r->u.let.value = ft_copy_expr(c, s->u.let.value);
        r->u.let.var = fresh_var(c, s->u.let.var);
        r->u.let.body = ft_copy_stmts(c, &s->u.let.body);
        break;
    default: RX_UNREACHABLE();
    }
    return r;
}

rx_stmts ft_copy_stmts(ft_copier *c, const rx_stmts *ss)
{
    rx_stmts out = {NULL, ss->n};
    out.items = RX_NEWN(c->a, rx_stmt *, ss->n > 0 ? ss->n : 1);
    for (int i = 0; i < ss->n; i++) out.items[i] = copy_stmt(c, ss->items[i]);
    return out;
}

/* ---------------------------------------------------------------- compute inline */

bool ft_stmts_touch(const rx_stmts *ss, const rx_buffer *b)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (rx_expr_loads_buf(s->u.for_.min, b) || rx_expr_loads_buf(s->u.for_.extent, b) ||
                ft_stmts_touch(&s->u.for_.body, b))
                return true;
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++)
                if (rx_expr_loads_buf(s->u.block.iters[k].bind, b) ||
                    rx_expr_loads_buf(s->u.block.iters[k].dom, b))
                    return true;
            if (ft_stmts_touch(&s->u.block.init, b) || ft_stmts_touch(&s->u.block.body, b)) return true;
            break;
        case RX_S_STORE:
            if (s->u.store.buf == b || rx_expr_loads_buf(s->u.store.value, b)) return true;
            for (int k = 0; k < s->u.store.nidx; k++)
                if (rx_expr_loads_buf(s->u.store.idx[k], b)) return true;
            break;
        case RX_S_IF:
            if (rx_expr_loads_buf(s->u.if_.cond, b) || ft_stmts_touch(&s->u.if_.then_s, b) ||
                ft_stmts_touch(&s->u.if_.else_s, b))
                return true;
            break;
        case RX_S_LET:
            if (rx_expr_loads_buf(s->u.let.value, b) || ft_stmts_touch(&s->u.let.body, b))
                return true;
            break;
        default: break;
        }
    }
    return false;
}

enum { MAX_RANK = 16 };

/* Size of e, counting up to limit + 1. */
static int expr_size(const rx_expr *e, int limit)
{
    if (!e) return 0;
    int n = 1, k = rx_expr_nchildren(e);
    for (int i = 0; i < k && n <= limit; i++) n += expr_size(rx_expr_child(e, i), limit - n);
    return n;
}

static int index_of(const rx_svar *const *vs, int n, const rx_svar *v)
{
    for (int i = 0; i < n; i++)
        if (vs[i] == v) return i;
    return -1;
}

/* True when e reads y, or uses a loop or let variable that is not in vars[0..n). */
static bool bad_use(const rx_expr *e, const rx_buffer *y, const rx_svar *const *vars, int n)
{
    if (!e) return false;
    if (e->kind == RX_E_VAR)
        return (e->u.var->kind == RX_SV_LOOP || e->u.var->kind == RX_SV_LET) &&
               index_of(vars, n, e->u.var) < 0;
    if (e->kind == RX_E_LOAD && e->u.load.buf == y) return true;
    int k = rx_expr_nchildren(e);
    for (int i = 0; i < k; i++)
        if (bad_use(rx_expr_child(e, i), y, vars, n)) return true;
    return false;
}

bool ft_match_inline(rx_arena *a, const rx_stmts *ss, const rx_buffer *y, int max_nodes,
                     ft_inline *out)
{
    const rx_svar *loops[MAX_RANK], *iters[MAX_RANK];
    int nl = 0;
    if (ss->n != 1 || y->ndim > MAX_RANK) return false;
    const rx_stmt *s = ss->items[0];
    while (s->kind == RX_S_FOR) {
        if (nl == MAX_RANK || s->u.for_.body.n != 1 || !rx_expr_is_int(s->u.for_.min, 0) ||
            s->u.for_.thread)
            return false;
        loops[nl++] = s->u.for_.var;
        s = s->u.for_.body.items[0];
    }
    int ni = 0;
    const rx_svar *bound[MAX_RANK]; /* per iterator: the loop it is bound to */
    if (s->kind == RX_S_BLOCK) {
        if (s->u.block.init.n || s->u.block.body.n != 1 || s->u.block.niters != nl) return false;
        for (int i = 0; i < s->u.block.niters; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            if (it->kind != RX_ITER_SPATIAL || !it->bind || it->bind->kind != RX_E_VAR) return false;
            int l = index_of(loops, nl, it->bind->u.var);
            if (l < 0 || index_of(bound, ni, loops[l]) >= 0) return false;
            bound[ni] = loops[l];
            iters[ni++] = it->var;
        }
        s = s->u.block.body.items[0];
    } else {
        for (int i = 0; i < nl; i++) bound[i] = iters[i] = loops[i];
        ni = nl;
    }
    if (s->kind != RX_S_STORE || s->u.store.buf != y || s->u.store.nidx != y->ndim ||
        y->ndim != nl)
        return false;
    const rx_svar **iv = RX_NEWN(a, const rx_svar *, nl > 0 ? nl : 1);
    const rx_svar **lv = RX_NEWN(a, const rx_svar *, nl > 0 ? nl : 1);
    for (int d = 0; d < nl; d++) {
        const rx_expr *x = s->u.store.idx[d];
        if (x->kind != RX_E_VAR) return false;
        int k = index_of(iters, ni, x->u.var);
        if (k < 0 || index_of(iv, d, x->u.var) >= 0) return false;
        iv[d] = iters[k];
        lv[d] = bound[k];
    }
    const rx_svar *allowed[2 * MAX_RANK];
    for (int d = 0; d < nl; d++) allowed[d] = iv[d], allowed[nl + d] = lv[d];
    rx_expr *v = s->u.store.value;
    if (bad_use(v, y, allowed, 2 * nl) || expr_size(v, max_nodes) > max_nodes) return false;
    if ((rx_dtype)v->dtype != (rx_dtype)y->dtype) v = rx_e_cast(a, (rx_dtype)y->dtype, v);
    out->buf = y;
    out->ivars = iv;
    out->lvars = lv;
    out->ndim = nl;
    out->value = v;
    return true;
}
