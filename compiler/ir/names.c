/*
 * names.c — unique printed names for the variables of one function (see names.h).
 *
 * One pass over the function in order of definition. Two small open-addressing hash
 * tables keep it linear: `keys` maps a variable (local variable id, or the address of
 * a symbolic variable or buffer) to its entry, and `vis` counts how many visible
 * variables hold each printed name. Scopes are marks on a stack of visible names;
 * leaving a scope decrements their counts.
 *
 * Renamed symbolic variables and buffers get a clone carrying the new name, so
 * expressions print through rx_expr_print after their variables are swapped for the
 * clones (only when the function renamed something: the common case prints directly).
 */
#include "names.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ent {
    uint64_t key;      /* id*2+1 for local variables, else the address */
    const char *name;  /* printed name (arena) */
    const void *clone; /* renamed copy of the svar/buffer, NULL if not renamed */
} ent;

typedef struct vslot {
    const char *name; /* NULL: empty */
    int count;        /* visible variables holding it */
} vslot;

struct rx_names {
    rx_arena *a;                  /* names, clones, renamed expressions */
    RX_VEC(ent) ents;             /* every named variable */
    int *slots;                   /* keys table: ent index + 1, 0 empty */
    int nslots;                   /* power of two */
    vslot *vis;                   /* visible-name counts */
    int nvis, vused;              /* capacity (power of two), used slots */
    RX_VEC(const char *) stack;   /* visible names, innermost last */
    RX_VEC(const rx_svar *) decls; /* declared symbolic variables */
    bool renamed;                 /* some svar or buffer was renamed */
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int find_ent(const rx_names *n, uint64_t key)
{
    if (!n) return -1;
    for (uint64_t i = mix(key) & (uint64_t)(n->nslots - 1);; i = (i + 1) & (uint64_t)(n->nslots - 1)) {
        int s = n->slots[i];
        if (s == 0) return -1;
        if (n->ents.items[s - 1].key == key) return s - 1;
    }
}

static void slots_insert(rx_names *n, uint64_t key, int idx)
{
    uint64_t i = mix(key) & (uint64_t)(n->nslots - 1);
    while (n->slots[i]) i = (i + 1) & (uint64_t)(n->nslots - 1);
    n->slots[i] = idx + 1;
}

static vslot *vis_slot(rx_names *n, const char *name)
{
    uint64_t i = str_hash(name) & (uint64_t)(n->nvis - 1);
    while (n->vis[i].name && strcmp(n->vis[i].name, name) != 0) i = (i + 1) & (uint64_t)(n->nvis - 1);
    return &n->vis[i];
}

static bool vis_taken(rx_names *n, const char *name)
{
    vslot *s = vis_slot(n, name);
    return s->name && s->count > 0;
}

static void vis_add(rx_names *n, const char *name, int delta)
{
    if (delta > 0 && 2 * (n->vused + 1) > n->nvis) {
        vslot *old = n->vis;
        int nold = n->nvis;
        n->nvis *= 2;
        n->vis = rx_xcalloc((size_t)n->nvis, sizeof(vslot));
        for (int i = 0; i < nold; i++)
            if (old[i].name) *vis_slot(n, old[i].name) = old[i];
        free(old);
    }
    vslot *s = vis_slot(n, name);
    if (!s->name) {
        s->name = name;
        n->vused++;
    }
    s->count += delta;
}

static int scope_mark(const rx_names *n) { return n->stack.n; }

static void scope_pop(rx_names *n, int mark)
{
    while (n->stack.n > mark) vis_add(n, n->stack.items[--n->stack.n], -1);
}

/* Gives `key` a printed name based on `raw` unless it has one; returns the entry. */
static int define(rx_names *n, uint64_t key, const char *raw, const char *fallback)
{
    int idx = find_ent(n, key);
    if (idx >= 0) return idx;
    const char *base = raw && *raw ? raw : fallback;
    const char *name = base;
    for (int k = 1; vis_taken(n, name); k++) name = rx_arena_printf(n->a, "%s_%d", base, k);
    if (name == base) name = rx_arena_strdup(n->a, base);
    if (2 * (n->ents.n + 1) > n->nslots) {
        free(n->slots);
        n->nslots *= 2;
        n->slots = rx_xcalloc((size_t)n->nslots, sizeof(int));
        for (int i = 0; i < n->ents.n; i++) slots_insert(n, n->ents.items[i].key, i);
    }
    ent e = {key, name, NULL};
    RX_VEC_PUSH(n->ents, e);
    slots_insert(n, key, n->ents.n - 1);
    vis_add(n, name, 1);
    RX_VEC_PUSH(n->stack, name);
    return n->ents.n - 1;
}

static uint64_t var_key(const rx_node *v) { return ((uint64_t)(uint32_t)v->u.var.id << 1) | 1; }

static void define_var(rx_names *n, const rx_node *v)
{
    if (v && v->kind == RX_N_VAR) define(n, var_key(v), v->u.var.name, "v");
}

static void define_svar(rx_names *n, const rx_svar *v, bool decl)
{
    if (find_ent(n, (uint64_t)(uintptr_t)v) >= 0) return;
    int idx = define(n, (uint64_t)(uintptr_t)v, v->name, "s");
    if (strcmp(n->ents.items[idx].name, v->name ? v->name : "") != 0) {
        rx_svar *c = rx_arena_dup(n->a, v, sizeof(*v));
        c->name = n->ents.items[idx].name;
        n->ents.items[idx].clone = c;
        n->renamed = true;
    }
    if (decl) RX_VEC_PUSH(n->decls, v);
}

static void define_buf(rx_names *n, const rx_buffer *b)
{
    if (find_ent(n, (uint64_t)(uintptr_t)b) >= 0) return;
    int idx = define(n, (uint64_t)(uintptr_t)b, b->name, "buf");
    if (strcmp(n->ents.items[idx].name, b->name ? b->name : "") != 0) {
        rx_buffer *c = rx_arena_dup(n->a, b, sizeof(*b));
        c->name = n->ents.items[idx].name;
        n->ents.items[idx].clone = c;
        n->renamed = true;
    }
}

/* Defines (as declared) the variables of e not yet named, in first-occurrence order. */
static void define_expr_svars(rx_names *n, const rx_expr *e)
{
    if (!e) return;
    rx_svar_vec vs = {0};
    rx_expr_vars(e, &vs);
    for (int i = 0; i < vs.n; i++) define_svar(n, vs.items[i], true);
    RX_VEC_FREE(vs);
}

static void define_sinfo_svars(rx_names *n, const rx_sinfo *s)
{
    if (!s) return;
    switch (s->kind) {
    case RX_SI_PRIM: define_expr_svars(n, s->value); break;
    case RX_SI_SHAPE:
    case RX_SI_TENSOR:
        if (s->dims)
            for (int i = 0; i < s->ndim; i++) define_expr_svars(n, s->dims[i]);
        break;
    case RX_SI_TUPLE:
        for (int i = 0; i < s->nfields; i++) define_sinfo_svars(n, s->fields[i]);
        break;
    default: break; /* a Callable's variables are its own */
    }
}

static void walk_node(rx_names *n, const rx_node *e);

static void walk_seq(rx_names *n, const rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        const rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            const rx_binding *bd = &b->bindings[j];
            walk_node(n, bd->value);
            if (bd->match_cast) define_sinfo_svars(n, bd->given);
            define_var(n, bd->var);
        }
    }
    walk_node(n, s->result);
}

static void walk_node(rx_names *n, const rx_node *e)
{
    if (!e) return;
    if (e->kind == RX_N_IF) {
        walk_node(n, e->args[0]);
        walk_seq(n, e->u.if_.then_body);
        walk_seq(n, e->u.if_.else_body);
        return;
    }
    if (e->kind == RX_N_VAR || e->kind == RX_N_GLOBAL || e->kind == RX_N_CONST) return;
    for (int i = 0; i < e->nargs; i++) walk_node(n, e->args[i]);
}

static void walk_stmts(rx_names *n, const rx_stmts *l)
{
    int mark = scope_mark(n);
    for (int i = 0; i < l->n; i++) {
        const rx_stmt *s = l->items[i];
        int inner = scope_mark(n);
        switch (s->kind) {
        case RX_S_FOR:
            define_svar(n, s->u.for_.var, false);
            walk_stmts(n, &s->u.for_.body);
            scope_pop(n, inner);
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) define_svar(n, s->u.block.iters[k].var, false);
            walk_stmts(n, &s->u.block.init);
            walk_stmts(n, &s->u.block.body);
            scope_pop(n, inner);
            break;
        case RX_S_ALLOC: define_buf(n, s->u.alloc.buf); break;
        case RX_S_IF:
            walk_stmts(n, &s->u.if_.then_s);
            walk_stmts(n, &s->u.if_.else_s);
            break;
        case RX_S_LET:
            define_svar(n, s->u.let.var, false);
            walk_stmts(n, &s->u.let.body);
            scope_pop(n, inner);
            break;
        default: break;
        }
    }
    scope_pop(n, mark);
}

rx_names *rx_names_new(const rx_func *f)
{
    rx_names *n = rx_xcalloc(1, sizeof(*n));
    n->a = rx_arena_new();
    n->nslots = 64;
    n->slots = rx_xcalloc((size_t)n->nslots, sizeof(int));
    n->nvis = 64;
    n->vis = rx_xcalloc((size_t)n->nvis, sizeof(vslot));
    if (f->kind == RX_F_RELAX) {
        for (int i = 0; i < f->nparams; i++) define_var(n, f->params[i]);
        for (int i = 0; i < f->nsvars; i++) define_svar(n, f->svars[i], true);
        for (int i = 0; i < f->nparams; i++) define_sinfo_svars(n, f->params[i]->sinfo);
        walk_seq(n, f->body);
    } else {
        for (int i = 0; i < f->ntparams; i++) {
            if (f->tparams[i].buf) define_buf(n, f->tparams[i].buf);
            else if (f->tparams[i].var) define_svar(n, f->tparams[i].var, false);
        }
        for (int i = 0; i < f->nsvars; i++) define_svar(n, f->svars[i], true);
        for (int i = 0; i < f->ntparams; i++) {
            const rx_buffer *b = f->tparams[i].buf;
            if (b)
                for (int k = 0; k < b->ndim; k++) define_expr_svars(n, b->shape[k]);
        }
        walk_stmts(n, &f->tbody);
    }
    return n;
}

void rx_names_free(rx_names *n)
{
    if (!n) return;
    rx_arena_free(n->a);
    RX_VEC_FREE(n->ents);
    RX_VEC_FREE(n->stack);
    RX_VEC_FREE(n->decls);
    free(n->slots);
    free(n->vis);
    free(n);
}

const char *rx_names_var(const rx_names *n, const rx_node *var)
{
    int idx = var->kind == RX_N_VAR ? find_ent(n, var_key(var)) : -1;
    if (idx >= 0) return n->ents.items[idx].name;
    return var->u.var.name ? var->u.var.name : "v";
}

const char *rx_names_svar(const rx_names *n, const rx_svar *v)
{
    int idx = find_ent(n, (uint64_t)(uintptr_t)v);
    if (idx >= 0) return n->ents.items[idx].name;
    return v->name ? v->name : "s";
}

const char *rx_names_buf(const rx_names *n, const rx_buffer *b)
{
    int idx = find_ent(n, (uint64_t)(uintptr_t)b);
    if (idx >= 0) return n->ents.items[idx].name;
    return b->name ? b->name : "buf";
}

const rx_svar *const *rx_names_decls(const rx_names *n, int *count)
{
    *count = n->decls.n;
    return n->decls.items;
}

const char *rx_names_svar_by_raw(const rx_names *n, const char *raw)
{
    for (int i = 0; n && i < n->decls.n; i++)
        if (n->decls.items[i]->name && strcmp(n->decls.items[i]->name, raw) == 0)
            return rx_names_svar(n, n->decls.items[i]);
    return raw;
}

static const void *clone_of(const rx_names *n, const void *p)
{
    int idx = find_ent(n, (uint64_t)(uintptr_t)p);
    return idx >= 0 && n->ents.items[idx].clone ? n->ents.items[idx].clone : p;
}

/* A copy of e whose renamed variables and buffers are replaced by their clones. */
static rx_expr *renamed(rx_names *n, const rx_expr *e)
{
    if (!e) return NULL;
    rx_expr *c = rx_arena_dup(n->a, e, sizeof(*e));
    switch (e->kind) {
    case RX_E_INT:
    case RX_E_FLOAT: break;
    case RX_E_VAR: c->u.var = clone_of(n, e->u.var); break;
    case RX_E_LOAD:
        c->u.load.buf = (rx_buffer *)clone_of(n, e->u.load.buf);
        c->u.load.idx = RX_NEWN(n->a, rx_expr *, e->u.load.nidx);
        for (int i = 0; i < e->u.load.nidx; i++) c->u.load.idx[i] = renamed(n, e->u.load.idx[i]);
        break;
    case RX_E_CALL:
        c->u.call.args = RX_NEWN(n->a, rx_expr *, e->u.call.nargs);
        for (int i = 0; i < e->u.call.nargs; i++) c->u.call.args[i] = renamed(n, e->u.call.args[i]);
        break;
    default:
        c->u.op.a = renamed(n, e->u.op.a);
        c->u.op.b = renamed(n, e->u.op.b);
        c->u.op.c = renamed(n, e->u.op.c);
        break;
    }
    return c;
}

void rx_names_expr(rx_names *n, const rx_expr *e, rx_sb *out)
{
    if (!e) {
        rx_sb_puts(out, "?");
        return;
    }
    rx_expr_print(n && n->renamed ? renamed(n, e) : e, out);
}

size_t rx_ir_const_numel(const rx_const *c)
{
    size_t n = 1;
    for (int i = 0; i < c->ndim; i++) n *= (size_t)(c->shape[i] > 0 ? c->shape[i] : 0);
    return n;
}

static uint64_t load_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = (double)m / 1024.0 / 16384.0; /* subnormal: m * 2^-24 */
    else if (e == 31) v = m ? (double)NAN : (double)INFINITY;
    else {
        v = 1.0 + (double)m / 1024.0;
        for (int k = e; k < 15; k++) v /= 2;
        for (int k = 15; k < e; k++) v *= 2;
    }
    return (h & 0x8000) ? -v : v;
}

double rx_ir_const_f64(const rx_const *c, size_t i)
{
    int bytes = rx_dtype_bits(c->dtype) / 8;
    if (bytes <= 0 || (i + 1) * (size_t)bytes > c->nbytes) return 0;
    uint64_t raw = load_le(c->data + i * (size_t)bytes, bytes);
    switch (c->dtype) {
    case RX_DT_F16: return half_to_double((uint16_t)raw);
    case RX_DT_BF16: {
        uint32_t u = (uint32_t)raw << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case RX_DT_F32: {
        uint32_t u = (uint32_t)raw;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case RX_DT_F64: {
        double d;
        memcpy(&d, &raw, 8);
        return d;
    }
    default:
        if (rx_dtype_is_uint(c->dtype) || c->dtype == RX_DT_BOOL) return (double)raw;
        return (double)rx_ir_const_i64(c, i);
    }
}

int64_t rx_ir_const_i64(const rx_const *c, size_t i)
{
    int bytes = rx_dtype_bits(c->dtype) / 8;
    if (bytes <= 0 || (i + 1) * (size_t)bytes > c->nbytes) return 0;
    if (rx_dtype_is_float(c->dtype)) return (int64_t)rx_ir_const_f64(c, i);
    uint64_t raw = load_le(c->data + i * (size_t)bytes, bytes);
    if (!rx_dtype_is_uint(c->dtype) && c->dtype != RX_DT_BOOL && bytes < 8 &&
        (raw >> (bytes * 8 - 1)) & 1)
        raw |= ~(uint64_t)0 << (bytes * 8); /* sign-extend */
    return (int64_t)raw;
}

void rx_ir_fmt_double(double v, bool single, rx_sb *out)
{
    if (isnan(v)) {
        rx_sb_puts(out, "nan");
        return;
    }
    if (isinf(v)) {
        rx_sb_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[40];
    for (int prec = single ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (single ? (float)back == (float)v : back == v) break;
    }
    rx_sb_puts(out, buf);
    if (!strpbrk(buf, ".en")) rx_sb_puts(out, ".0");
}
