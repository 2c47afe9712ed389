/*
 * ir.c — construction of IR nodes and modules (ir.h), and the small queries that the
 * reader, the writer, the printer and structural equality share: the names of the
 * loop-level enums, sorted attribute keys, and the store-use rule for implicit block
 * iterators.
 *
 * Constructors allocate from the module's arena, copy the arrays they are given and
 * set loc 0; the reader sets locations afterwards. Nothing here checks semantics:
 * the reader validates, deduction annotates.
 */
#include "relax/ir.h"

#include <string.h>

/* ---- annotations ---- */
static rx_sinfo *si_new(rx_arena *a, rx_sikind k)
{
    rx_sinfo *s = RX_NEW(a, rx_sinfo);
    s->kind = (uint8_t)k;
    s->ndim = -1;
    return s;
}

static rx_expr **dup_exprs(rx_arena *a, rx_expr **p, int n)
{
    return p && n > 0 ? rx_arena_dup(a, p, sizeof(rx_expr *) * (size_t)n) : NULL;
}

rx_sinfo *rx_si_object(rx_arena *a)
{
    return si_new(a, RX_SI_OBJECT);
}

rx_sinfo *rx_si_prim(rx_arena *a, rx_dtype dt, rx_expr *value)
{
    rx_sinfo *s = si_new(a, RX_SI_PRIM);
    s->dtype = (uint8_t)dt;
    s->value = value;
    return s;
}

rx_sinfo *rx_si_shape(rx_arena *a, int ndim, rx_expr **dims)
{
    rx_sinfo *s = si_new(a, RX_SI_SHAPE);
    s->ndim = ndim;
    s->dims = ndim == 0 ? RX_NEWN(a, rx_expr *, 1) : dup_exprs(a, dims, ndim);
    return s;
}

rx_sinfo *rx_si_tensor(rx_arena *a, rx_dtype dt, int ndim, rx_expr **dims)
{
    rx_sinfo *s = si_new(a, RX_SI_TENSOR);
    s->dtype = (uint8_t)dt;
    s->ndim = ndim;
    s->dims = ndim == 0 ? RX_NEWN(a, rx_expr *, 1) : dup_exprs(a, dims, ndim);
    return s;
}

rx_sinfo *rx_si_tuple(rx_arena *a, rx_sinfo **fields, int n)
{
    rx_sinfo *s = si_new(a, RX_SI_TUPLE);
    s->fields = n > 0 ? rx_arena_dup(a, fields, sizeof(rx_sinfo *) * (size_t)n) : NULL;
    s->nfields = n;
    return s;
}

rx_sinfo *rx_si_callable(rx_arena *a, rx_sinfo **params, int n, rx_sinfo *ret)
{
    rx_sinfo *s = si_new(a, RX_SI_CALLABLE);
    s->fields = n > 0 ? rx_arena_dup(a, params, sizeof(rx_sinfo *) * (size_t)n) : NULL;
    s->nfields = n;
    s->ret = ret;
    return s;
}

/* ---- attributes ---- */
rx_attr *rx_attr_map_get(const rx_attr *map, const char *key)
{
    if (!map || map->kind != RX_A_MAP) return NULL;
    for (int i = 0; i < map->u.map.n; i++)
        if (!strcmp(map->u.map.keys[i], key)) return map->u.map.vals[i];
    return NULL;
}

/* f->attrs with key set to v: a new map, the other entries kept in order (see ir.h). */
void rx_func_set_attr(rx_module *m, rx_func *f, const char *key, rx_attr *v)
{
    rx_attr *old = f->attrs && f->attrs->kind == RX_A_MAP ? f->attrs : NULL;
    int n = old ? old->u.map.n : 0;
    rx_attr *map = RX_NEW(m->arena, rx_attr);
    map->kind = RX_A_MAP;
    map->loc = old ? old->loc : 0;
    map->u.map.keys = RX_NEWN(m->arena, const char *, n + 1);
    map->u.map.vals = RX_NEWN(m->arena, rx_attr *, n + 1);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(old->u.map.keys[i], key)) continue;
        map->u.map.keys[k] = old->u.map.keys[i];
        map->u.map.vals[k++] = old->u.map.vals[i];
    }
    map->u.map.keys[k] = key;
    map->u.map.vals[k++] = v;
    map->u.map.n = k;
    f->attrs = map;
}

/* Entry indices of a map sorted by key (see ir.h). */
int *rx_attr_sorted_keys(const rx_attr *map)
{
    int n = map->u.map.n;
    int *ix = rx_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && strcmp(map->u.map.keys[ix[j - 1]], map->u.map.keys[i]) > 0) {
            ix[j] = ix[j - 1];
            j--;
        }
        ix[j] = i;
    }
    return ix;
}

/* ---- loop level ---- */
static const char *const LOOP_KINDS[] = {"serial", "parallel", "vectorized", "unrolled"};
static const char *const ITER_KINDS[] = {"spatial", "reduce"};
static const char *const SCOPES[] = {"global", "local", "shared"};

/* names[v] when v is in range, else "?". */
static const char *enum_name(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

/* The index of s in names[0..n), or -1. */
static int enum_parse(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

const char *rx_loopkind_name(rx_loopkind k)
{
    return enum_name(LOOP_KINDS, RX_COUNTOF(LOOP_KINDS), (int)k);
}

bool rx_loopkind_parse(const char *s, rx_loopkind *out)
{
    int i = enum_parse(LOOP_KINDS, RX_COUNTOF(LOOP_KINDS), s);
    if (i >= 0) *out = (rx_loopkind)i;
    return i >= 0;
}

const char *rx_iterkind_name(rx_iterkind k)
{
    return enum_name(ITER_KINDS, RX_COUNTOF(ITER_KINDS), (int)k);
}

bool rx_iterkind_parse(const char *s, rx_iterkind *out)
{
    int i = enum_parse(ITER_KINDS, RX_COUNTOF(ITER_KINDS), s);
    if (i >= 0) *out = (rx_iterkind)i;
    return i >= 0;
}

const char *rx_scope_name(rx_scope s)
{
    return enum_name(SCOPES, RX_COUNTOF(SCOPES), (int)s);
}

bool rx_scope_parse(const char *s, rx_scope *out)
{
    int i = enum_parse(SCOPES, RX_COUNTOF(SCOPES), s);
    if (i >= 0) *out = (rx_scope)i;
    return i >= 0;
}

/* Whether v is used by a store index in ss (see ir.h). */
bool rx_stmts_store_uses(const rx_stmts *ss, const rx_svar *v)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_STORE:
            for (int k = 0; k < s->u.store.nidx; k++)
                if (rx_expr_uses_var(s->u.store.idx[k], v)) return true;
            break;
        case RX_S_FOR:
            if (rx_stmts_store_uses(&s->u.for_.body, v)) return true;
            break;
        case RX_S_BLOCK:
            if (rx_stmts_store_uses(&s->u.block.body, v)) return true;
            break;
        case RX_S_IF:
            if (rx_stmts_store_uses(&s->u.if_.then_s, v) ||
                rx_stmts_store_uses(&s->u.if_.else_s, v))
                return true;
            break;
        case RX_S_LET:
            if (rx_stmts_store_uses(&s->u.let.body, v)) return true;
            break;
        default:
            break;
        }
    }
    return false;
}

/* ---- functions ---- */
rx_sinfo *rx_func_sinfo(rx_arena *a, const rx_func *f)
{
    if (f->kind == RX_F_RELAX) {
        rx_sinfo **ps = RX_NEWN(a, rx_sinfo *, f->nparams > 0 ? f->nparams : 1);
        for (int i = 0; i < f->nparams; i++) ps[i] = f->params[i]->sinfo;
        rx_sinfo *ret = f->ret ? f->ret : f->ret_given ? f->ret_given : rx_si_object(a);
        rx_sinfo *s = rx_si_callable(a, ps, f->nparams, ret);
        s->svars = f->svars;
        s->nsvars = f->nsvars;
        return s;
    }
    int nbuf = 0;
    for (int i = 0; i < f->ntparams; i++) nbuf += f->tparams[i].buf != NULL;
    rx_sinfo **ps = RX_NEWN(a, rx_sinfo *, nbuf > 0 ? nbuf : 1);
    int k = 0;
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (b) ps[k++] = rx_si_tensor(a, (rx_dtype)b->dtype, b->ndim, b->shape);
    }
    rx_sinfo *s = rx_si_callable(a, ps, nbuf, rx_si_object(a));
    s->svars = f->svars;
    s->nsvars = f->nsvars;
    return s;
}

int64_t rx_func_upper_bound(const rx_func *f, const rx_svar *v)
{
    rx_attr *ub = rx_attr_map_get(f->attrs, "upper_bounds");
    rx_attr *b = ub ? rx_attr_map_get(ub, v->name) : NULL;
    return b && b->kind == RX_A_INT ? b->u.i : -1;
}

/* ---- module ---- */
rx_module *rx_module_new(void)
{
    rx_arena *a = rx_arena_new();
    rx_module *m = RX_NEW(a, rx_module);
    m->arena = a;
    rx_loctab_init(&m->locs);
    m->next_id = 1;
    return m;
}

void rx_module_free(rx_module *m)
{
    if (!m) return;
    rx_loctab_free(&m->locs);
    rx_arena_free(m->arena); /* m itself lives in the arena */
}

rx_func *rx_module_find(const rx_module *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, name)) return m->funcs[i];
    return NULL;
}

rx_const *rx_module_find_const(const rx_module *m, const char *name)
{
    for (int i = 0; i < m->nconsts; i++)
        if (m->consts[i]->name && !strcmp(m->consts[i]->name, name)) return m->consts[i];
    return NULL;
}

int32_t rx_module_new_id(rx_module *m)
{
    return m->next_id++;
}

/* ---- graph-level nodes ---- */
static rx_node *node(rx_module *m, rx_nkind k, rx_node **args, int nargs)
{
    rx_node *n = RX_NEW(m->arena, rx_node);
    n->kind = (uint8_t)k;
    n->nargs = nargs;
    if (nargs > 0) n->args = rx_arena_dup(m->arena, args, sizeof(rx_node *) * (size_t)nargs);
    return n;
}

rx_node *rx_n_var(rx_module *m, const char *name, rx_sinfo *si, bool dataflow)
{
    rx_node *n = node(m, RX_N_VAR, NULL, 0);
    n->u.var.name = rx_arena_strdup(m->arena, name);
    n->u.var.id = rx_module_new_id(m);
    n->u.var.dataflow = dataflow;
    n->sinfo = si;
    return n;
}

rx_node *rx_n_global(rx_module *m, const char *name, rx_func *fn)
{
    rx_node *n = node(m, RX_N_GLOBAL, NULL, 0);
    n->u.global.name = rx_arena_strdup(m->arena, name);
    n->u.global.fn = fn;
    return n;
}

rx_node *rx_n_const(rx_module *m, rx_const *c)
{
    rx_node *n = node(m, RX_N_CONST, NULL, 0);
    n->u.konst = c;
    return n;
}

rx_node *rx_n_primval(rx_module *m, rx_expr *v)
{
    rx_node *n = node(m, RX_N_PRIMVAL, NULL, 0);
    n->u.prim = v;
    return n;
}

rx_node *rx_n_shape(rx_module *m, rx_expr **dims, int ndim)
{
    rx_node *n = node(m, RX_N_SHAPE, NULL, 0);
    n->u.shape.dims = ndim > 0 ? rx_arena_dup(m->arena, dims, sizeof(rx_expr *) * (size_t)ndim)
                               : RX_NEWN(m->arena, rx_expr *, 1);
    n->u.shape.ndim = ndim;
    return n;
}

rx_node *rx_n_tuple(rx_module *m, rx_node **fields, int nfields)
{
    return node(m, RX_N_TUPLE, fields, nfields);
}

rx_node *rx_n_get_item(rx_module *m, rx_node *t, int index)
{
    rx_node *n = node(m, RX_N_GET_ITEM, &t, 1);
    n->u.index = index;
    return n;
}

rx_node *rx_n_call_op(rx_module *m, const rx_op *op, rx_node **args, int nargs, rx_attr **attrs)
{
    rx_node *n = node(m, RX_N_CALL, args, nargs);
    n->call_kind = RX_CALL_OP;
    n->u.call.op = op;
    n->u.call.attrs = attrs;
    return n;
}

rx_node *rx_n_call_tir(rx_module *m, rx_node *callee, rx_node **args, int nargs, rx_sinfo *out,
                       rx_expr **tir_vars, int ntir_vars)
{
    rx_node *n = node(m, RX_N_CALL, args, nargs);
    n->call_kind = RX_CALL_TIR;
    n->u.call.callee = callee;
    n->u.call.out = out;
    n->u.call.tir_vars = dup_exprs(m->arena, tir_vars, ntir_vars);
    n->u.call.ntir_vars = ntir_vars;
    return n;
}

rx_node *rx_n_call_lib(rx_module *m, const char *lib, rx_node **args, int nargs, rx_sinfo *out)
{
    rx_node *n = node(m, RX_N_CALL, args, nargs);
    n->call_kind = RX_CALL_LIB;
    n->u.call.lib = rx_arena_strdup(m->arena, lib);
    n->u.call.out = out;
    return n;
}

rx_node *rx_n_call_fn(rx_module *m, rx_node *callee, rx_node **args, int nargs)
{
    rx_node *n = node(m, RX_N_CALL, args, nargs);
    n->call_kind = RX_CALL_FN;
    n->u.call.callee = callee;
    return n;
}

rx_node *rx_n_if(rx_module *m, rx_node *cond, rx_seq *then_body, rx_seq *else_body)
{
    rx_node *n = node(m, RX_N_IF, &cond, 1);
    n->u.if_.then_body = then_body;
    n->u.if_.else_body = else_body;
    return n;
}

/* ---- statement constructors (ir.h) ---- */

static rx_stmt *stmt(rx_arena *a, rx_skind k)
{
    rx_stmt *s = RX_NEW(a, rx_stmt);
    s->kind = (uint8_t)k;
    return s;
}

rx_stmt *rx_s_for(rx_arena *a, const rx_svar *var, rx_expr *min, rx_expr *extent,
                  rx_loopkind kind, rx_stmts body)
{
    rx_stmt *s = stmt(a, RX_S_FOR);
    s->u.for_.var = var;
    s->u.for_.min = min;
    s->u.for_.extent = extent;
    s->u.for_.loop_kind = (uint8_t)kind;
    s->u.for_.body = body;
    return s;
}

rx_stmt *rx_s_block(rx_arena *a, const char *name, rx_iter *iters, int niters, rx_stmts init,
                    rx_stmts body)
{
    rx_stmt *s = stmt(a, RX_S_BLOCK);
    s->u.block.name = name;
    s->u.block.iters = iters;
    s->u.block.niters = niters;
    s->u.block.init = init;
    s->u.block.body = body;
    return s;
}

rx_stmt *rx_s_store(rx_arena *a, rx_buffer *buf, rx_expr **idx, int nidx, rx_expr *value)
{
    rx_stmt *s = stmt(a, RX_S_STORE);
    s->u.store.buf = buf;
    s->u.store.idx = idx;
    s->u.store.nidx = nidx;
    s->u.store.value = value;
    return s;
}

rx_stmt *rx_s_alloc(rx_arena *a, rx_buffer *buf)
{
    rx_stmt *s = stmt(a, RX_S_ALLOC);
    s->u.alloc.buf = buf;
    return s;
}

rx_stmt *rx_s_if(rx_arena *a, rx_expr *cond, rx_stmts then_s, rx_stmts else_s)
{
    rx_stmt *s = stmt(a, RX_S_IF);
    s->u.if_.cond = cond;
    s->u.if_.then_s = then_s;
    s->u.if_.else_s = else_s;
    return s;
}

rx_stmt *rx_s_let(rx_arena *a, const rx_svar *var, rx_expr *value, rx_stmts body)
{
    rx_stmt *s = stmt(a, RX_S_LET);
    s->u.let.var = var;
    s->u.let.value = value;
    s->u.let.body = body;
    return s;
}

rx_stmts rx_stmts_of(rx_arena *a, rx_stmt *const *items, int n)
{
    rx_stmts l = {RX_NEWN(a, rx_stmt *, n > 0 ? n : 1), n};
    for (int i = 0; i < n; i++) l.items[i] = items[i];
    return l;
}

rx_stmts rx_stmts_one(rx_arena *a, rx_stmt *s) { return rx_stmts_of(a, &s, 1); }

bool rx_stmts_hold_for(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: return true;
        case RX_S_BLOCK:
            if (rx_stmts_hold_for(&s->u.block.init) || rx_stmts_hold_for(&s->u.block.body))
                return true;
            break;
        case RX_S_IF:
            if (rx_stmts_hold_for(&s->u.if_.then_s) || rx_stmts_hold_for(&s->u.if_.else_s))
                return true;
            break;
        case RX_S_LET:
            if (rx_stmts_hold_for(&s->u.let.body)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Whether v occurs anywhere in ss (see ir.h). */
bool rx_stmts_use_var(const rx_stmts *ss, const rx_svar *v)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (rx_expr_uses_var(s->u.for_.min, v) || rx_expr_uses_var(s->u.for_.extent, v) ||
                rx_stmts_use_var(&s->u.for_.body, v))
                return true;
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) {
                const rx_iter *it = &s->u.block.iters[k];
                if ((it->bind && rx_expr_uses_var(it->bind, v)) ||
                    (it->dom && rx_expr_uses_var(it->dom, v)))
                    return true;
            }
            if (rx_stmts_use_var(&s->u.block.init, v) || rx_stmts_use_var(&s->u.block.body, v)) return true;
            break;
        case RX_S_STORE:
            for (int k = 0; k < s->u.store.nidx; k++)
                if (rx_expr_uses_var(s->u.store.idx[k], v)) return true;
            if (rx_expr_uses_var(s->u.store.value, v)) return true;
            break;
        case RX_S_ALLOC:
            for (int k = 0; k < s->u.alloc.buf->ndim; k++)
                if (rx_expr_uses_var(s->u.alloc.buf->shape[k], v)) return true;
            break;
        case RX_S_IF:
            if (rx_expr_uses_var(s->u.if_.cond, v) || rx_stmts_use_var(&s->u.if_.then_s, v) ||
                rx_stmts_use_var(&s->u.if_.else_s, v))
                return true;
            break;
        case RX_S_LET:
            if (rx_expr_uses_var(s->u.let.value, v) || rx_stmts_use_var(&s->u.let.body, v)) return true;
            break;
        default:
            return true; /* unknown: assume the worst */
        }
    }
    return false;
}

/* The block whose init runs once before FOR s (see ir.h). */
const rx_stmt *rx_init_hoist_target(const rx_stmt *s)
{
    enum { MAX_CHAIN = 16 };
    const rx_stmt *chain[MAX_CHAIN];
    int n = 0;
    const rx_stmt *cur = s;
    while (cur->kind == RX_S_FOR) {
        if (n == MAX_CHAIN || cur->u.for_.body.n != 1) return NULL;
        chain[n++] = cur;
        cur = cur->u.for_.body.items[0];
    }
    if (cur->kind != RX_S_BLOCK || !cur->u.block.init.n) return NULL;
    const rx_stmt *b = cur;
    const rx_stmts *init = &b->u.block.init;
    for (int c = 0; c < n; c++) {
        const rx_svar *lv = chain[c]->u.for_.var;
        bool bound = false;
        for (int i = 0; i < b->u.block.niters; i++) {
            const rx_iter *it = &b->u.block.iters[i];
            if (!it->bind || !rx_expr_uses_var(it->bind, lv)) continue;
            if (it->kind != RX_ITER_REDUCE) return NULL; /* spatial value varies in the nest */
            bound = true;
        }
        if (!bound || rx_stmts_use_var(init, lv)) return NULL;
        for (int k = 0; k < n; k++)
            if (rx_expr_uses_var(chain[k]->u.for_.min, lv)) return NULL; /* start not fixed */
    }
    for (int i = 0; i < b->u.block.niters; i++) {
        const rx_iter *it = &b->u.block.iters[i];
        if (it->kind != RX_ITER_REDUCE) continue;
        if (!it->bind || it->bind->kind != RX_E_VAR) return NULL;
        int c = 0;
        while (c < n && chain[c]->u.for_.var != it->bind->u.var) c++;
        if (c == n) return NULL; /* bound outside the chain: not its outermost loop */
        if (it->var != it->bind->u.var && !rx_expr_is_int(chain[c]->u.for_.min, 0))
            return NULL; /* explicit iterator that does not start at its domain's 0 */
        if (rx_stmts_use_var(init, it->var)) return NULL;
    }
    return b;
}
