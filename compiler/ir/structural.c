/*
 * structural.c — structural equality and hashing of modules (text.h).
 *
 * Both are one canonical serialization into bytes: equal modules serialize to equal
 * bytes by construction, the hash is SHA-256 over a version tag, the salt and the
 * bytes, and equality compares the bytes of both modules.
 *
 * What is written (every node kind and field behind a tag byte, integers as 8 bytes
 * little-endian, strings with their length):
 *   - module attributes, sorted by key;
 *   - the functions sorted by name; a function's global name is written (names of
 *     globals are the API), as are its kind, attributes (sorted by key), signature
 *     symbolic variables, parameters, written and deduced result annotations, body;
 *   - local variables, symbolic variables, buffers, loop variables, block iterators and
 *     let variables as numbers in order of first occurrence within their function
 *     (signature variables, then parameters, then bindings / statements in order), the
 *     first occurrence carrying the variable's type; their names are never written.
 *     `upper_bounds` is keyed by variable name in the IR, so its keys are written as
 *     the numbers of the signature variables they name;
 *   - every binding's variable annotation (the effective one: deduced, or the written
 *     one where written — a written annotation equal to the deduced one changes
 *     nothing, a coarser one changes the variable's annotation and so the key),
 *     whether it is a match_cast, its value; a function's effective result annotation;
 *   - ops by name and their attributes in schema order (the attribute array always has
 *     one entry per schema entry, defaults filled, so absent and default are equal);
 *   - constants by content (dtype, shape, SHA-256 of the bytes) where they are used,
 *     never by name; the module's named constants as the sorted multiset of their
 *     contents, so an unused constant still counts (it ships with the module);
 *   - scalar expressions as trees, as they are (no simplification: after deduction
 *     dims are already canonical); floats by their bits.
 * Block names are written (they name schedulable units, not variables).
 *
 * Alongside the bytes, equality records "where" marks (offset, function, construct);
 * the mark before the first differing byte becomes the message
 * "function main: binding 3 (lv2): annotation".
 *
 * Cost: linear in the module plus the hashing of constant bytes; memory is the
 * serialization (constant data contributes 32 bytes each).
 */
#include "relax/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "relax/op.h"

enum { /* tags */
    T_NULL = 0x01, T_MODULE, T_FUNC, T_SINFO, T_EXPR, T_NEW, T_REF, T_NODE, T_ATTR, T_STMT,
    T_CONST, T_SEQ, T_BLOCK, T_BIND, T_STR
};

enum { /* where marks */
    W_MODULE, W_FUNCS, W_FUNC, W_FATTRS, W_SIG, W_PARAM, W_RET, W_BLOCK, W_ANNOT,
    W_VALUE, W_RESULT, W_STMT, W_CONSTS
};

typedef struct where {
    size_t off;       /* first byte this mark covers */
    const char *fn;   /* function, NULL at module level */
    uint8_t what;     /* W_* */
    int idx;          /* parameter / block / binding / statement number */
    const char *name; /* variable name or statement kind */
} where;

typedef struct ser {
    rx_sb b;              /* the serialization */
    bool track;           /* record where marks */
    RX_VEC(where) wh;
    const char *fn;       /* current function */
    const rx_func *f;
    uint64_t *keys;       /* numbering: open addressing, 0 empty */
    int32_t *nums;
    int nslots, used;
    int32_t next[3];      /* next number per class: local, symbolic, buffer */
    int bind, stmt;       /* running binding / statement counters in the function */
} ser;

/* ---------------------------------------------------------------- primitives */
static void put_u8(ser *s, uint8_t v) { rx_sb_putc(&s->b, (char)v); }

static void put_i64(ser *s, int64_t v)
{
    char b[8];
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++) b[i] = (char)(u >> (8 * i));
    rx_sb_putn(&s->b, b, 8);
}

static void put_str(ser *s, const char *str)
{
    if (!str) {
        put_u8(s, T_NULL);
        return;
    }
    size_t n = strlen(str);
    put_u8(s, T_STR);
    put_i64(s, (int64_t)n);
    rx_sb_putn(&s->b, str, n);
}

static void put_f64(ser *s, double d)
{
    int64_t bits;
    if (isnan(d)) d = NAN; /* one NaN */
    memcpy(&bits, &d, 8);
    put_i64(s, bits);
}

static void mark(ser *s, uint8_t what, int idx, const char *name)
{
    if (!s->track) return;
    where w = {s->b.n, s->fn, what, idx, name};
    RX_VEC_PUSH(s->wh, w);
}

/* ---------------------------------------------------------------- numbering */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 29;
    return x;
}

static void nums_reset(ser *s)
{
    if (s->nslots) memset(s->keys, 0, sizeof(uint64_t) * (size_t)s->nslots);
    s->used = 0;
    memset(s->next, 0, sizeof s->next);
}

static int slot_of(const ser *s, uint64_t key)
{
    uint64_t m = (uint64_t)s->nslots - 1, i = mix(key) & m;
    while (s->keys[i] && s->keys[i] != key) i = (i + 1) & m;
    return (int)i;
}

/* The number of `key` in class cls, or -1 after numbering it (its first occurrence). */
static int32_t number(ser *s, uint64_t key, int cls)
{
    if (2 * (s->used + 1) > s->nslots) {
        uint64_t *ok = s->keys;
        int32_t *on = s->nums;
        int n = s->nslots;
        s->nslots = n ? 2 * n : 256;
        s->keys = rx_xcalloc((size_t)s->nslots, sizeof(uint64_t));
        s->nums = rx_xcalloc((size_t)s->nslots, sizeof(int32_t));
        for (int i = 0; i < n; i++)
            if (ok[i]) {
                int j = slot_of(s, ok[i]);
                s->keys[j] = ok[i];
                s->nums[j] = on[i];
            }
        free(ok);
        free(on);
    }
    int i = slot_of(s, key);
    if (s->keys[i]) return s->nums[i];
    s->keys[i] = key;
    s->nums[i] = s->next[cls]++;
    s->used++;
    return -1;
}

static void put_expr(ser *s, const rx_expr *e);

static void put_svar(ser *s, const rx_svar *v)
{
    int32_t k = number(s, (uint64_t)(uintptr_t)v, 1);
    if (k >= 0) {
        put_u8(s, T_REF);
        put_i64(s, k);
    } else {
        put_u8(s, T_NEW);
        put_u8(s, v->dtype);
        put_u8(s, v->kind);
    }
}

static void put_buf(ser *s, const rx_buffer *b)
{
    int32_t k = number(s, (uint64_t)(uintptr_t)b | 2, 2);
    if (k >= 0) {
        put_u8(s, T_REF);
        put_i64(s, k);
        return;
    }
    put_u8(s, T_NEW);
    put_u8(s, b->dtype);
    put_u8(s, b->scope);
    put_i64(s, b->ndim);
    for (int i = 0; i < b->ndim; i++) put_expr(s, b->shape[i]);
}

static void put_var(ser *s, const rx_node *v)
{
    int32_t k = number(s, ((uint64_t)(uint32_t)v->u.var.id << 2) | 1, 0);
    if (k >= 0) {
        put_u8(s, T_REF);
        put_i64(s, k);
    } else {
        put_u8(s, T_NEW);
        put_u8(s, v->u.var.dataflow);
    }
}

/* ---------------------------------------------------------------- expressions, annotations */
static void put_expr(ser *s, const rx_expr *e)
{
    if (!e) {
        put_u8(s, T_NULL);
        return;
    }
    put_u8(s, T_EXPR);
    put_u8(s, e->kind);
    put_u8(s, e->dtype);
    switch (e->kind) {
    case RX_E_INT: put_i64(s, e->u.ival); break;
    case RX_E_FLOAT: put_f64(s, e->u.fval); break;
    case RX_E_VAR: put_svar(s, e->u.var); break;
    case RX_E_LOAD:
        put_buf(s, e->u.load.buf);
        put_i64(s, e->u.load.nidx);
        for (int i = 0; i < e->u.load.nidx; i++) put_expr(s, e->u.load.idx[i]);
        break;
    case RX_E_CALL:
        put_u8(s, e->u.call.fn);
        put_i64(s, e->u.call.nargs);
        for (int i = 0; i < e->u.call.nargs; i++) put_expr(s, e->u.call.args[i]);
        break;
    default:
        put_expr(s, e->u.op.a);
        put_expr(s, e->u.op.b);
        put_expr(s, e->u.op.c);
        break;
    }
}

static void put_exprs(ser *s, rx_expr **v, int n)
{
    put_i64(s, v ? n : -1);
    for (int i = 0; v && i < n; i++) put_expr(s, v[i]);
}

static void put_sinfo(ser *s, const rx_sinfo *si)
{
    if (!si) {
        put_u8(s, T_NULL);
        return;
    }
    put_u8(s, T_SINFO);
    put_u8(s, si->kind);
    switch (si->kind) {
    case RX_SI_PRIM:
        put_u8(s, si->dtype);
        put_expr(s, si->value);
        break;
    case RX_SI_SHAPE:
    case RX_SI_TENSOR:
        put_u8(s, si->kind == RX_SI_TENSOR ? si->dtype : 0);
        put_i64(s, si->ndim);
        put_exprs(s, si->dims, si->ndim);
        break;
    case RX_SI_TUPLE:
    case RX_SI_CALLABLE:
        put_i64(s, si->nfields);
        for (int i = 0; i < si->nfields; i++) put_sinfo(s, si->fields[i]);
        if (si->kind == RX_SI_CALLABLE) {
            put_sinfo(s, si->ret);
            put_i64(s, si->nsvars);
            for (int i = 0; i < si->nsvars; i++) put_svar(s, si->svars[i]);
        }
        break;
    default: break;
    }
}

/* ---------------------------------------------------------------- attributes */
static void put_attr(ser *s, const rx_attr *a, bool fattrs);

/* upper_bounds: entries naming signature variables by their numbers, in signature
 * order; any other key by name, sorted. */
static void put_bounds(ser *s, const rx_attr *a)
{
    bool *done = rx_xcalloc((size_t)a->u.map.n + 1, 1);
    for (int v = 0; s->f && v < s->f->nsvars; v++) {
        const rx_svar *sv = s->f->svars[v];
        for (int i = 0; i < a->u.map.n; i++)
            if (!done[i] && sv->name && strcmp(sv->name, a->u.map.keys[i]) == 0) {
                done[i] = true;
                put_u8(s, T_REF);
                put_svar(s, sv);
                put_attr(s, a->u.map.vals[i], false);
                break;
            }
    }
    int *ix = rx_attr_sorted_keys(a);
    for (int i = 0; i < a->u.map.n; i++)
        if (!done[ix[i]]) {
            put_str(s, a->u.map.keys[ix[i]]);
            put_attr(s, a->u.map.vals[ix[i]], false);
        }
    put_u8(s, T_NULL);
    free(ix);
    free(done);
}

static void put_attr(ser *s, const rx_attr *a, bool fattrs)
{
    if (!a) {
        put_u8(s, T_NULL);
        return;
    }
    put_u8(s, T_ATTR);
    put_u8(s, a->kind);
    switch (a->kind) {
    case RX_A_BOOL: put_u8(s, a->u.b); break;
    case RX_A_INT: put_i64(s, a->u.i); break;
    case RX_A_FLOAT: put_f64(s, a->u.f); break;
    case RX_A_STR: put_str(s, a->u.s); break;
    case RX_A_EXPR: put_expr(s, a->u.e); break;
    case RX_A_ARRAY:
        put_i64(s, a->u.arr.n);
        for (int i = 0; i < a->u.arr.n; i++) put_attr(s, a->u.arr.items[i], false);
        break;
    case RX_A_MAP: {
        int *ix = rx_attr_sorted_keys(a);
        put_i64(s, a->u.map.n);
        for (int i = 0; i < a->u.map.n; i++) {
            const char *k = a->u.map.keys[ix[i]];
            const rx_attr *v = a->u.map.vals[ix[i]];
            put_str(s, k);
            if (fattrs && strcmp(k, "upper_bounds") == 0 && v && v->kind == RX_A_MAP) put_bounds(s, v);
            else put_attr(s, v, false);
        }
        free(ix);
        break;
    }
    default: break;
    }
}

/* ---------------------------------------------------------------- constants */
/* dtype, shape and the digest of the bytes: the identity of a constant. */
static void const_record(const rx_const *k, rx_sb *out)
{
    ser tmp = {0};
    uint8_t d[32];
    rx_sha256 h;
    rx_sha256_init(&h);
    rx_sha256_update(&h, k->data, k->nbytes);
    rx_sha256_final(&h, d);
    put_u8(&tmp, T_CONST);
    put_u8(&tmp, k->dtype);
    put_i64(&tmp, k->ndim);
    for (int i = 0; i < k->ndim; i++) put_i64(&tmp, k->shape[i]);
    put_i64(&tmp, (int64_t)k->nbytes);
    rx_sb_putn(&tmp.b, (const char *)d, 32);
    rx_sb_putn(out, tmp.b.p, tmp.b.n);
    rx_sb_free(&tmp.b);
}

static int cmp_records(const void *x, const void *y)
{
    const rx_sb *a = x, *b = y;
    size_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void put_consts(ser *s, const rx_module *m)
{
    mark(s, W_CONSTS, 0, NULL);
    rx_sb *recs = rx_xcalloc((size_t)m->nconsts + 1, sizeof(rx_sb));
    for (int i = 0; i < m->nconsts; i++) const_record(m->consts[i], &recs[i]);
    qsort(recs, (size_t)m->nconsts, sizeof(rx_sb), cmp_records);
    put_i64(s, m->nconsts);
    for (int i = 0; i < m->nconsts; i++) {
        rx_sb_putn(&s->b, recs[i].p, recs[i].n);
        rx_sb_free(&recs[i]);
    }
    free(recs);
}

/* ---------------------------------------------------------------- graph level */
static void put_seq(ser *s, const rx_seq *q);

static void put_node(ser *s, const rx_node *e)
{
    if (!e) {
        put_u8(s, T_NULL);
        return;
    }
    put_u8(s, T_NODE);
    put_u8(s, e->kind);
    switch (e->kind) {
    case RX_N_VAR: put_var(s, e); return;
    case RX_N_GLOBAL: put_str(s, e->u.global.name); return;
    case RX_N_CONST: const_record(e->u.konst, &s->b); return;
    case RX_N_PRIMVAL: put_expr(s, e->u.prim); return;
    case RX_N_SHAPE: put_exprs(s, e->u.shape.dims, e->u.shape.ndim); return;
    case RX_N_GET_ITEM: put_i64(s, e->u.index); break;
    case RX_N_IF:
        put_seq(s, e->u.if_.then_body);
        put_seq(s, e->u.if_.else_body);
        break;
    case RX_N_CALL:
        put_u8(s, e->call_kind);
        switch (e->call_kind) {
        case RX_CALL_OP: {
            const rx_op *op = e->u.call.op;
            put_str(s, op ? op->name : NULL);
            int n = op && e->u.call.attrs ? op->nattrs : 0;
            put_i64(s, n);
            for (int i = 0; i < n; i++) put_attr(s, e->u.call.attrs[i], false);
            break;
        }
        case RX_CALL_TIR:
        case RX_CALL_LIB:
            if (e->call_kind == RX_CALL_TIR) put_node(s, e->u.call.callee);
            else put_str(s, e->u.call.lib);
            put_sinfo(s, e->u.call.out);
            put_exprs(s, e->u.call.tir_vars, e->u.call.ntir_vars);
            break;
        default: put_node(s, e->u.call.callee); break;
        }
        break;
    default: break;
    }
    put_i64(s, e->nargs);
    for (int i = 0; i < e->nargs; i++) put_node(s, e->args[i]);
}

static void put_seq(ser *s, const rx_seq *q)
{
    if (!q) {
        put_u8(s, T_NULL);
        return;
    }
    put_u8(s, T_SEQ);
    put_i64(s, q->nblocks);
    for (int i = 0; i < q->nblocks; i++) {
        const rx_block *bl = q->blocks[i];
        mark(s, W_BLOCK, i, NULL);
        put_u8(s, T_BLOCK);
        put_u8(s, bl->dataflow);
        put_i64(s, bl->nbindings);
        for (int j = 0; j < bl->nbindings; j++) {
            const rx_binding *b = &bl->bindings[j];
            int k = s->bind++;
            const char *name = b->var ? b->var->u.var.name : NULL;
            mark(s, W_ANNOT, k, name);
            put_u8(s, T_BIND);
            put_u8(s, b->match_cast);
            if (b->var) put_var(s, b->var);
            else put_u8(s, T_NULL);
            put_sinfo(s, b->var ? b->var->sinfo : NULL);
            mark(s, W_VALUE, k, name);
            put_node(s, b->value);
        }
    }
    mark(s, W_RESULT, 0, NULL);
    put_node(s, q->result);
}

/* ---------------------------------------------------------------- loop level */
static void put_stmts(ser *s, const rx_stmts *l)
{
    static const char *const kinds[] = {"for", "block", "store", "alloc", "if", "let"};
    put_i64(s, l->n);
    for (int i = 0; i < l->n; i++) {
        const rx_stmt *st = l->items[i];
        mark(s, W_STMT, s->stmt++, st->kind < 6 ? kinds[st->kind] : "?");
        put_u8(s, T_STMT);
        put_u8(s, st->kind);
        switch (st->kind) {
        case RX_S_FOR:
            put_svar(s, st->u.for_.var);
            put_expr(s, st->u.for_.min);
            put_expr(s, st->u.for_.extent);
            put_u8(s, st->u.for_.loop_kind);
            put_str(s, st->u.for_.thread);
            put_stmts(s, &st->u.for_.body);
            break;
        case RX_S_BLOCK:
            put_str(s, st->u.block.name);
            put_i64(s, st->u.block.niters);
            for (int k = 0; k < st->u.block.niters; k++) {
                const rx_iter *it = &st->u.block.iters[k];
                put_svar(s, it->var);
                put_u8(s, it->kind);
                put_expr(s, it->dom);
                put_expr(s, it->bind);
            }
            put_stmts(s, &st->u.block.init);
            put_stmts(s, &st->u.block.body);
            break;
        case RX_S_STORE:
            put_buf(s, st->u.store.buf);
            put_exprs(s, st->u.store.idx, st->u.store.nidx);
            put_expr(s, st->u.store.value);
            break;
        case RX_S_ALLOC: put_buf(s, st->u.alloc.buf); break;
        case RX_S_IF:
            put_expr(s, st->u.if_.cond);
            put_stmts(s, &st->u.if_.then_s);
            put_stmts(s, &st->u.if_.else_s);
            break;
        case RX_S_LET:
            put_svar(s, st->u.let.var);
            put_expr(s, st->u.let.value);
            put_stmts(s, &st->u.let.body);
            break;
        default: break;
        }
    }
}

/* ---------------------------------------------------------------- functions, module */
static void put_func(ser *s, const rx_func *f)
{
    s->fn = f->name;
    s->f = f;
    s->bind = s->stmt = 0;
    nums_reset(s);
    mark(s, W_FUNC, 0, NULL);
    put_u8(s, T_FUNC);
    put_str(s, f->name);
    put_u8(s, f->kind);
    mark(s, W_SIG, 0, NULL);
    put_i64(s, f->nsvars);
    for (int i = 0; i < f->nsvars; i++) put_svar(s, f->svars[i]);
    mark(s, W_FATTRS, 0, NULL);
    put_attr(s, f->attrs, true);
    if (f->kind == RX_F_RELAX) {
        put_i64(s, f->nparams);
        for (int i = 0; i < f->nparams; i++) {
            mark(s, W_PARAM, i, f->params[i]->u.var.name);
            put_var(s, f->params[i]);
            put_sinfo(s, f->params[i]->sinfo);
        }
        mark(s, W_RET, 0, NULL);
        put_sinfo(s, f->ret ? f->ret : f->ret_given);
        put_seq(s, f->body);
    } else {
        put_i64(s, f->ntparams);
        for (int i = 0; i < f->ntparams; i++) {
            const rx_tparam *p = &f->tparams[i];
            mark(s, W_PARAM, i, p->buf ? p->buf->name : p->var ? p->var->name : NULL);
            if (p->buf) {
                put_u8(s, 1);
                put_buf(s, p->buf);
            } else if (p->var) {
                put_u8(s, 2);
                put_svar(s, p->var);
            } else {
                put_u8(s, T_NULL);
            }
        }
        put_stmts(s, &f->tbody);
    }
    s->fn = NULL;
    s->f = NULL;
}

static int cmp_funcs(const void *x, const void *y)
{
    const rx_func *a = *(const rx_func *const *)x, *b = *(const rx_func *const *)y;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static void serialize(ser *s, const rx_module *m)
{
    mark(s, W_MODULE, 0, NULL);
    put_u8(s, T_MODULE);
    put_attr(s, m->attrs, false);
    const rx_func **fs = rx_xmalloc(sizeof(*fs) * (size_t)(m->nfuncs + 1));
    for (int i = 0; i < m->nfuncs; i++) fs[i] = m->funcs[i];
    qsort(fs, (size_t)m->nfuncs, sizeof(*fs), cmp_funcs);
    mark(s, W_FUNCS, 0, NULL);
    put_i64(s, m->nfuncs);
    for (int i = 0; i < m->nfuncs; i++) put_func(s, fs[i]);
    free(fs);
    put_consts(s, m);
}

static void ser_free(ser *s)
{
    rx_sb_free(&s->b);
    RX_VEC_FREE(s->wh);
    free(s->keys);
    free(s->nums);
}

/* SHA-256 of "relax-struct-v1", the salt (length-prefixed) and the serialization. */
void rx_struct_hash(const rx_module *m, const char *salt, uint8_t out[32])
{
    ser s = {0};
    serialize(&s, m);
    rx_sha256 h;
    rx_sha256_init(&h);
    rx_sha256_update(&h, "relax-struct-v1", 16);
    uint64_t n = salt ? strlen(salt) : 0;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(n >> (8 * i));
    rx_sha256_update(&h, len, 8);
    if (n) rx_sha256_update(&h, salt, (size_t)n);
    rx_sha256_update(&h, s.b.p ? s.b.p : "", s.b.n);
    rx_sha256_final(&h, out);
    ser_free(&s);
}

void rx_func_struct_hash(rx_func *f, const char *salt, uint8_t out[32])
{
    rx_module tmp;
    memset(&tmp, 0, sizeof tmp);
    rx_func *fs[1] = {f};
    const char *name = f->name;
    f->name = "";
    tmp.funcs = fs;
    tmp.nfuncs = 1;
    rx_struct_hash(&tmp, salt, out);
    f->name = name;
}

static const where *mark_at(const ser *s, size_t off)
{
    const where *w = NULL;
    for (int i = 0; i < s->wh.n && s->wh.items[i].off <= off; i++) w = &s->wh.items[i];
    return w;
}

static void describe(const where *w, const where *wy, rx_sb *why)
{
    static const char *const what[] = {
        "module attributes", "number of functions", "function kind or name", "attributes",
        "signature symbolic variables", "parameter", "result annotation", "block",
        "annotation", "value", "result", "statement", "constants"};
    if (!w) {
        rx_sb_puts(why, "modules differ");
        return;
    }
    if (w->fn) {
        rx_sb_printf(why, "function %s", w->fn);
        if (wy && wy->fn && strcmp(wy->fn, w->fn) != 0) rx_sb_printf(why, " (vs %s)", wy->fn);
        rx_sb_puts(why, ": ");
    }
    switch (w->what) {
    case W_PARAM: rx_sb_printf(why, "parameter %d (%s)", w->idx, w->name ? w->name : "?"); break;
    case W_BLOCK: rx_sb_printf(why, "block %d (dataflow flag or binding count)", w->idx); break;
    case W_ANNOT:
    case W_VALUE:
        rx_sb_printf(why, "binding %d (%s): %s", w->idx, w->name ? w->name : "?", what[w->what]);
        break;
    case W_STMT: rx_sb_printf(why, "statement %d (%s)", w->idx, w->name); break;
    default: rx_sb_puts(why, what[w->what]); break;
    }
    bool plural = w->what == W_MODULE || w->what == W_FATTRS || w->what == W_SIG ||
                  w->what == W_CONSTS;
    rx_sb_puts(why, plural ? " differ" : " differs");
}

/* Equal when the canonical serializations are; otherwise `why` (if not NULL) gets
 * where they first differ. */
bool rx_struct_equal(const rx_module *x, const rx_module *y, rx_sb *why)
{
    ser sx = {0}, sy = {0};
    sx.track = sy.track = why != NULL;
    serialize(&sx, x);
    serialize(&sy, y);
    bool eq = sx.b.n == sy.b.n && (sx.b.n == 0 || memcmp(sx.b.p, sy.b.p, sx.b.n) == 0);
    if (!eq && why) {
        size_t n = sx.b.n < sy.b.n ? sx.b.n : sy.b.n, d = 0;
        while (d < n && sx.b.p[d] == sy.b.p[d]) d++;
        describe(mark_at(&sx, d), mark_at(&sy, d), why);
    }
    ser_free(&sx);
    ser_free(&sy);
    return eq;
}
