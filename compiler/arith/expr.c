/*
 * expr.c — construction and plain structural utilities of scalar expressions:
 * constructors, variable collection, substitution, identity comparison, intrinsics.
 * Nothing here simplifies; that is canonical.c's job.
 */
#include "relax/ir.h"

#include <string.h>

static const struct { const char *name; int arity; } intrins[RX_FN_COUNT] = {
    [RX_FN_EXP] = {"exp", 1},     [RX_FN_LOG] = {"log", 1},     [RX_FN_SQRT] = {"sqrt", 1},
    [RX_FN_RSQRT] = {"rsqrt", 1}, [RX_FN_TANH] = {"tanh", 1},   [RX_FN_SIGMOID] = {"sigmoid", 1},
    [RX_FN_ERF] = {"erf", 1},     [RX_FN_POW] = {"pow", 2},     [RX_FN_ABS] = {"abs", 1},
    [RX_FN_FLOOR] = {"floor", 1}, [RX_FN_CEIL] = {"ceil", 1},   [RX_FN_ROUND] = {"round", 1},
    [RX_FN_SIN] = {"sin", 1},     [RX_FN_COS] = {"cos", 1},
};

const char *rx_intrin_name(rx_intrin f)
{
    return (unsigned)f < RX_FN_COUNT ? intrins[f].name : "?";
}

bool rx_intrin_parse(const char *s, rx_intrin *out)
{
    for (int i = 0; i < RX_FN_COUNT; i++) {
        if (!strcmp(s, intrins[i].name)) {
            *out = (rx_intrin)i;
            return true;
        }
    }
    return false;
}

int rx_intrin_arity(rx_intrin f)
{
    return (unsigned)f < RX_FN_COUNT ? intrins[f].arity : 1;
}

rx_svar *rx_svar_new(rx_arena *a, const char *name, rx_dtype dt, rx_svkind kind, int32_t id)
{
    rx_svar *v = RX_NEW(a, rx_svar);
    v->name = rx_arena_strdup(a, name);
    v->dtype = (uint8_t)dt;
    v->kind = (uint8_t)kind;
    v->id = id;
    return v;
}

static rx_expr *mk(rx_arena *a, rx_ekind k, rx_dtype dt)
{
    rx_expr *e = RX_NEW(a, rx_expr);
    e->kind = (uint8_t)k;
    e->dtype = (uint8_t)dt;
    return e;
}

rx_expr *rx_e_typed_int(rx_arena *a, int64_t v, rx_dtype dt)
{
    rx_expr *e = mk(a, RX_E_INT, dt);
    e->u.ival = v;
    return e;
}

rx_expr *rx_e_int(rx_arena *a, int64_t v)
{
    return rx_e_typed_int(a, v, RX_DT_I64);
}

rx_expr *rx_e_float(rx_arena *a, double v, rx_dtype dt)
{
    rx_expr *e = mk(a, RX_E_FLOAT, dt);
    e->u.fval = v;
    return e;
}

rx_expr *rx_e_var(rx_arena *a, const rx_svar *v)
{
    rx_expr *e = mk(a, RX_E_VAR, (rx_dtype)v->dtype);
    e->u.var = v;
    return e;
}

rx_expr *rx_e_unary(rx_arena *a, rx_ekind k, rx_expr *x)
{
    rx_expr *e = mk(a, k, k == RX_E_NOT ? RX_DT_BOOL : (rx_dtype)x->dtype);
    e->u.op.a = x;
    return e;
}

static bool is_bool_kind(rx_ekind k)
{
    return (k >= RX_E_EQ && k <= RX_E_GE) || k == RX_E_AND || k == RX_E_OR;
}

rx_expr *rx_e_binary(rx_arena *a, rx_ekind k, rx_expr *x, rx_expr *y)
{
    rx_expr *e = mk(a, k, is_bool_kind(k) ? RX_DT_BOOL : (rx_dtype)x->dtype);
    e->u.op.a = x;
    e->u.op.b = y;
    return e;
}

rx_expr *rx_e_select(rx_arena *a, rx_expr *c, rx_expr *t, rx_expr *f)
{
    rx_expr *e = mk(a, RX_E_SELECT, (rx_dtype)t->dtype);
    e->u.op.a = c;
    e->u.op.b = t;
    e->u.op.c = f;
    return e;
}

rx_expr *rx_e_cast(rx_arena *a, rx_dtype dt, rx_expr *x)
{
    rx_expr *e = mk(a, RX_E_CAST, dt);
    e->u.op.a = x;
    return e;
}

rx_expr *rx_e_load(rx_arena *a, struct rx_buffer *buf, rx_expr **idx, int nidx)
{
    rx_expr *e = mk(a, RX_E_LOAD, (rx_dtype)buf->dtype);
    e->u.load.buf = buf;
    e->u.load.idx = rx_arena_dup(a, idx, sizeof(rx_expr *) * (size_t)nidx);
    e->u.load.nidx = nidx;
    return e;
}

rx_expr *rx_e_call(rx_arena *a, rx_intrin fn, rx_expr **args, int nargs, rx_dtype dt)
{
    rx_expr *e = mk(a, RX_E_CALL, dt);
    e->u.call.fn = (uint8_t)fn;
    e->u.call.args = rx_arena_dup(a, args, sizeof(rx_expr *) * (size_t)nargs);
    e->u.call.nargs = nargs;
    return e;
}

bool rx_expr_is_const(const rx_expr *e, int64_t *v)
{
    if (!e || e->kind != RX_E_INT) return false;
    if (v) *v = e->u.ival;
    return true;
}

bool rx_expr_is_int(const rx_expr *e, int64_t v)
{
    return e && e->kind == RX_E_INT && e->u.ival == v;
}

/* Operand count of e (see arith.h). */
int rx_expr_nchildren(const rx_expr *e)
{
    switch (e->kind) {
    case RX_E_INT: case RX_E_FLOAT: case RX_E_VAR: return 0;
    case RX_E_NOT: case RX_E_NEG: case RX_E_BITNOT: case RX_E_CAST: return 1;
    case RX_E_SELECT: return 3;
    case RX_E_LOAD: return e->u.load.nidx;
    case RX_E_CALL: return e->u.call.nargs;
    default: return 2;
    }
}

/* Operand i of e (see arith.h). */
rx_expr *rx_expr_child(const rx_expr *e, int i)
{
    switch (e->kind) {
    case RX_E_LOAD: return e->u.load.idx[i];
    case RX_E_CALL: return e->u.call.args[i];
    default: return i == 0 ? e->u.op.a : i == 1 ? e->u.op.b : e->u.op.c;
    }
}

bool rx_expr_uses_var(const rx_expr *e, const rx_svar *v)
{
    if (!e) return false;
    if (e->kind == RX_E_VAR) return e->u.var == v;
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++)
        if (rx_expr_uses_var(rx_expr_child(e, i), v)) return true;
    return false;
}

bool rx_expr_loads_buf(const rx_expr *e, const struct rx_buffer *b)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && (!b || e->u.load.buf == b)) return true;
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++)
        if (rx_expr_loads_buf(rx_expr_child(e, i), b)) return true;
    return false;
}

bool rx_expr_calls_vmath(const rx_expr *e)
{
    if (!e) return false;
    if (e->kind == RX_E_CALL && (rx_dtype)e->dtype == RX_DT_F32 &&
        (e->u.call.fn == RX_FN_EXP || e->u.call.fn == RX_FN_SIGMOID ||
         e->u.call.fn == RX_FN_ERF || e->u.call.fn == RX_FN_TANH || e->u.call.fn == RX_FN_LOG ||
         e->u.call.fn == RX_FN_SIN || e->u.call.fn == RX_FN_COS))
        return true;
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++)
        if (rx_expr_calls_vmath(rx_expr_child(e, i))) return true;
    return false;
}

void rx_expr_vars(const rx_expr *e, rx_svar_vec *out)
{
    if (!e) return;
    if (e->kind == RX_E_VAR) {
        for (int i = 0; i < out->n; i++)
            if (out->items[i] == e->u.var) return;
        RX_VEC_PUSH(*out, e->u.var);
        return;
    }
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) rx_expr_vars(rx_expr_child(e, i), out);
}

void rx_vmap_set(rx_vmap *m, const rx_svar *k, rx_expr *v)
{
    for (int i = 0; i < m->keys.n; i++) {
        if (m->keys.items[i] == k) {
            m->vals.items[i] = v;
            return;
        }
    }
    RX_VEC_PUSH(m->keys, k);
    RX_VEC_PUSH(m->vals, v);
}

rx_expr *rx_vmap_get(const rx_vmap *m, const rx_svar *k)
{
    for (int i = 0; i < m->keys.n; i++)
        if (m->keys.items[i] == k) return m->vals.items[i];
    return NULL;
}

void rx_vmap_free(rx_vmap *m)
{
    RX_VEC_FREE(m->keys);
    RX_VEC_FREE(m->vals);
}

rx_expr *rx_expr_subst(rx_arena *a, rx_expr *e, const rx_vmap *m)
{
    if (!e) return NULL;
    if (e->kind == RX_E_VAR) {
        rx_expr *r = rx_vmap_get(m, e->u.var);
        return r ? r : e;
    }
    int n = rx_expr_nchildren(e);
    if (n == 0) return e;
    rx_expr *kids[8];
    rx_expr **k = n <= 8 ? kids : RX_NEWN(a, rx_expr *, n);
    bool changed = false;
    for (int i = 0; i < n; i++) {
        k[i] = rx_expr_subst(a, rx_expr_child(e, i), m);
        changed |= k[i] != rx_expr_child(e, i);
    }
    if (!changed) return e;
    return rx_expr_with_children(a, e, k);
}

rx_expr *rx_expr_with_children(rx_arena *a, const rx_expr *e, rx_expr **kids)
{
    int n = rx_expr_nchildren(e);
    rx_expr *c = rx_arena_dup(a, e, sizeof *e);
    switch (e->kind) {
    case RX_E_LOAD: c->u.load.idx = rx_arena_dup(a, kids, sizeof(rx_expr *) * (size_t)n); break;
    case RX_E_CALL: c->u.call.args = rx_arena_dup(a, kids, sizeof(rx_expr *) * (size_t)n); break;
    default:
        c->u.op.a = n > 0 ? kids[0] : NULL;
        c->u.op.b = n > 1 ? kids[1] : NULL;
        c->u.op.c = n > 2 ? kids[2] : NULL;
    }
    return c;
}

const char *rx_ekind_symbol(rx_ekind k)
{
    switch (k) {
    case RX_E_ADD: return "+";
    case RX_E_SUB: return "-";
    case RX_E_MUL: return "*";
    case RX_E_DIV: return "/";
    case RX_E_FLOORDIV: return "//";
    case RX_E_FLOORMOD: return "%";
    case RX_E_EQ: return "==";
    case RX_E_NE: return "!=";
    case RX_E_LT: return "<";
    case RX_E_LE: return "<=";
    case RX_E_GT: return ">";
    case RX_E_GE: return ">=";
    case RX_E_AND: return "&&";
    case RX_E_OR: return "||";
    case RX_E_SHL: return "<<";
    case RX_E_SHR: return ">>";
    case RX_E_BITAND: return "&";
    case RX_E_BITOR: return "|";
    case RX_E_BITXOR: return "^";
    default: return NULL;
    }
}

bool rx_expr_same(const rx_expr *x, const rx_expr *y)
{
    if (x == y) return true;
    if (!x || !y || x->kind != y->kind || x->dtype != y->dtype) return false;
    switch (x->kind) {
    case RX_E_INT: return x->u.ival == y->u.ival;
    case RX_E_FLOAT: return x->u.fval == y->u.fval || (x->u.fval != x->u.fval && y->u.fval != y->u.fval);
    case RX_E_VAR: return x->u.var == y->u.var;
    case RX_E_LOAD:
        if (x->u.load.buf != y->u.load.buf || x->u.load.nidx != y->u.load.nidx) return false;
        break;
    case RX_E_CALL:
        if (x->u.call.fn != y->u.call.fn || x->u.call.nargs != y->u.call.nargs) return false;
        break;
    default: break;
    }
    int n = rx_expr_nchildren(x);
    for (int i = 0; i < n; i++)
        if (!rx_expr_same(rx_expr_child(x, i), rx_expr_child(y, i))) return false;
    return true;
}
