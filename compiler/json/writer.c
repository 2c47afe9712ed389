/*
 * writer.c — the module back to relax-json v1 (json.h).
 *
 * The writer builds a jansson tree in the spec's forms and dumps it with
 * JSON_PRESERVE_ORDER (indentation 2 unless RX_JSON_COMPACT), so output is
 * deterministic: module keys in a fixed order, functions and constants in module
 * order, object members in the order the spec shows them, attribute maps in their
 * stored order, op attributes in schema order (all of them, by schema name).
 *
 * Forms chosen where the spec allows several:
 *   - integer literal dims (shapes, extents, doms, tir_vars, min) are JSON integers;
 *     every other integer expression is a string through rx_expr_print;
 *   - scalar expressions of loop functions (store values, conditions, let values,
 *     block bindings when not literals) and prim values are strings;
 *   - inline constants: 0-d of a finite value as {"const": v, "dtype"} (bool and
 *     integers that fit in an int64 as integers, floats as reals); otherwise the
 *     object form with base64 data;
 *   - optional members are omitted at their defaults (dataflow false, for-loop min 0,
 *     kind serial, no thread, empty init/else, global scope);
 *   - a block's `iters` are omitted when they are exactly the implicit ones the reader
 *     derives (the enclosing loop variables themselves); otherwise written in full.
 * A binding's `type` is its written annotation, or with RX_JSON_DEDUCED its
 * variable's annotation (falling back to the written one); a graph function's `ret`
 * likewise. Variable names go through names.c, which makes them unique per
 * function, so what is written reads back to a structurally equal module.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/names.h"
#include "relax/json.h"
#include "relax/op.h"

typedef struct wctx {
    const rx_module *m;
    rx_names *nm;  /* names of the current function */
    rx_arena *tmp; /* scratch expressions (store targets) */
    int flags;
    rx_sb sb;      /* scratch text */
    RX_VEC(const rx_stmt *) loops; /* enclosing FORs of the statement being written */
    int loop_base; /* loops below this index enclose the nearest block, not ours */
} wctx;

static json_t *str_expr(wctx *c, const rx_expr *e)
{
    rx_sb_reset(&c->sb);
    rx_names_expr(c->nm, e, &c->sb);
    return json_string(rx_sb_str(&c->sb));
}

/* An integer expression: a JSON integer for an i64 literal, else a string. */
static json_t *dim(wctx *c, const rx_expr *e)
{
    if (e && e->kind == RX_E_INT && e->dtype == RX_DT_I64) return json_integer(e->u.ival);
    return str_expr(c, e);
}

/* A prim value in the form the reader's rxi_rd_prim_value takes back: integers as a
 * JSON integer or a symbolic string (a non-i64 value is read as a cast of the i64
 * expression, so the cast is not written), floats as JSON numbers, bools as JSON
 * booleans. */
static json_t *prim_value(wctx *c, const rx_expr *e, rx_dtype t)
{
    if (rx_dtype_is_int(t)) {
        if (e->kind == RX_E_INT) return json_integer(e->u.ival);
        if (e->kind == RX_E_CAST && e->dtype == t && e->u.op.a->dtype == RX_DT_I64)
            return dim(c, e->u.op.a);
        return str_expr(c, e);
    }
    if (rx_dtype_is_float(t) && e->kind == RX_E_FLOAT) return json_real(e->u.fval);
    if (t == RX_DT_BOOL && e->kind == RX_E_INT) return json_boolean(e->u.ival != 0);
    return str_expr(c, e);
}

static json_t *dims(wctx *c, rx_expr **v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, dim(c, v[i]));
    return a;
}

static json_t *w_sinfo(wctx *c, const rx_sinfo *s)
{
    json_t *o = json_object(), *in = json_object();
    if (!s) {
        json_object_set_new(o, "object", in);
        return o;
    }
    switch (s->kind) {
    case RX_SI_PRIM:
        if (s->dtype) json_object_set_new(in, "dtype", json_string(rx_dtype_name(s->dtype)));
        if (s->value) json_object_set_new(in, "value", prim_value(c, s->value, s->dtype));
        json_object_set_new(o, "prim", in);
        break;
    case RX_SI_SHAPE:
        if (s->dims) json_object_set_new(in, "values", dims(c, s->dims, s->ndim));
        else if (s->ndim >= 0) json_object_set_new(in, "ndim", json_integer(s->ndim));
        json_object_set_new(o, "shape", in);
        break;
    case RX_SI_TENSOR:
        if (s->dims) json_object_set_new(in, "shape", dims(c, s->dims, s->ndim));
        else if (s->ndim >= 0) json_object_set_new(in, "ndim", json_integer(s->ndim));
        if (s->dtype) json_object_set_new(in, "dtype", json_string(rx_dtype_name(s->dtype)));
        json_object_set_new(o, "tensor", in);
        break;
    case RX_SI_TUPLE: {
        json_t *a = json_array();
        for (int i = 0; i < s->nfields; i++) json_array_append_new(a, w_sinfo(c, s->fields[i]));
        json_decref(in);
        json_object_set_new(o, "tuple", a);
        break;
    }
    case RX_SI_CALLABLE: {
        json_t *a = json_array();
        for (int i = 0; i < s->nfields; i++) json_array_append_new(a, w_sinfo(c, s->fields[i]));
        json_object_set_new(in, "params", a);
        json_object_set_new(in, "ret", w_sinfo(c, s->ret));
        json_object_set_new(o, "callable", in);
        break;
    }
    default: json_object_set_new(o, "object", in); break;
    }
    return o;
}

enum { A_PLAIN, A_FATTRS, A_SVKEYS }; /* function attrs: upper_bounds keys name svars */

/* An attribute value; symbolic expressions as strings. */
static json_t *w_attr(wctx *c, const rx_attr *a, int mode)
{
    if (!a) return json_null();
    switch (a->kind) {
    case RX_A_BOOL: return json_boolean(a->u.b);
    case RX_A_INT: return json_integer(a->u.i);
    case RX_A_FLOAT: return json_real(a->u.f);
    case RX_A_STR: return json_string(a->u.s);
    case RX_A_EXPR: return str_expr(c, a->u.e);
    case RX_A_ARRAY: {
        json_t *arr = json_array();
        for (int i = 0; i < a->u.arr.n; i++) json_array_append_new(arr, w_attr(c, a->u.arr.items[i], A_PLAIN));
        return arr;
    }
    case RX_A_MAP: {
        json_t *o = json_object();
        for (int i = 0; i < a->u.map.n; i++) {
            const char *k = a->u.map.keys[i];
            bool ub = mode == A_FATTRS && strcmp(k, "upper_bounds") == 0;
            json_object_set_new(o, mode == A_SVKEYS ? rx_names_svar_by_raw(c->nm, k) : k,
                                w_attr(c, a->u.map.vals[i], ub ? A_SVKEYS : A_PLAIN));
        }
        return o;
    }
    default: return json_null();
    }
}

/* The object form of a constant: dtype, shape, base64 data. */
static json_t *const_obj(const rx_const *k)
{
    json_t *o = json_object(), *sh = json_array();
    json_object_set_new(o, "dtype", json_string(rx_dtype_name(k->dtype)));
    for (int i = 0; i < k->ndim; i++) json_array_append_new(sh, json_integer(k->shape[i]));
    json_object_set_new(o, "shape", sh);
    rx_sb b = {0};
    rx_base64_encode(k->data, k->nbytes, &b);
    json_object_set_new(o, "data", json_string(rx_sb_str(&b)));
    rx_sb_free(&b);
    return o;
}

static json_t *w_const(const rx_const *k)
{
    json_t *o = json_object();
    if (k->name) {
        json_object_set_new(o, "const", json_string(k->name));
        return o;
    }
    json_t *v = NULL;
    if (k->ndim == 0 && k->nbytes > 0) {
        if (k->dtype == RX_DT_BOOL) {
            v = json_boolean(rx_ir_const_i64(k, 0) != 0);
        } else if (rx_dtype_is_float(k->dtype)) {
            double d = rx_ir_const_f64(k, 0);
            if (d - d == 0) v = json_real(d); /* finite */
        } else if (k->dtype != RX_DT_U64 || rx_ir_const_i64(k, 0) >= 0) {
            v = json_integer(rx_ir_const_i64(k, 0));
        }
    }
    if (v) {
        json_object_set_new(o, "const", v);
        json_object_set_new(o, "dtype", json_string(rx_dtype_name(k->dtype)));
    } else {
        json_object_set_new(o, "const", const_obj(k));
    }
    return o;
}

static json_t *w_node(wctx *c, const rx_node *e);
static json_t *w_seq(wctx *c, const rx_seq *s);

static json_t *w_args(wctx *c, const rx_node *e)
{
    json_t *a = json_array();
    for (int i = 0; i < e->nargs; i++) json_array_append_new(a, w_node(c, e->args[i]));
    return a;
}

static json_t *w_call(wctx *c, const rx_node *e)
{
    json_t *o = json_object();
    switch (e->call_kind) {
    case RX_CALL_OP: {
        const rx_op *op = e->u.call.op;
        json_object_set_new(o, "op", json_string(op ? op->name : "?"));
        json_object_set_new(o, "args", w_args(c, e));
        if (op && e->u.call.attrs && op->nattrs > 0) {
            json_t *at = json_object();
            for (int i = 0; i < op->nattrs; i++)
                json_object_set_new(at, op->attrs[i].name, w_attr(c, e->u.call.attrs[i], A_PLAIN));
            json_object_set_new(o, "attrs", at);
        }
        break;
    }
    case RX_CALL_TIR:
    case RX_CALL_LIB:
        if (e->call_kind == RX_CALL_TIR) json_object_set_new(o, "call_tir", w_node(c, e->u.call.callee));
        else json_object_set_new(o, "call_dps_library", json_string(e->u.call.lib ? e->u.call.lib : ""));
        json_object_set_new(o, "args", w_args(c, e));
        json_object_set_new(o, "out", w_sinfo(c, e->u.call.out));
        if (e->u.call.ntir_vars > 0)
            json_object_set_new(o, "tir_vars", dims(c, e->u.call.tir_vars, e->u.call.ntir_vars));
        break;
    default:
        json_object_set_new(o, "call", w_node(c, e->u.call.callee));
        json_object_set_new(o, "args", w_args(c, e));
        break;
    }
    return o;
}

static json_t *w_node(wctx *c, const rx_node *e)
{
    if (!e) return json_null();
    json_t *o;
    switch (e->kind) {
    case RX_N_VAR: return json_string(rx_names_var(c->nm, e));
    case RX_N_GLOBAL: {
        rx_sb_reset(&c->sb);
        rx_sb_printf(&c->sb, "@%s", e->u.global.name);
        return json_string(rx_sb_str(&c->sb));
    }
    case RX_N_CONST: return w_const(e->u.konst);
    case RX_N_CALL: return w_call(c, e);
    default: break;
    }
    o = json_object();
    switch (e->kind) {
    case RX_N_PRIMVAL:
        json_object_set_new(o, "prim", prim_value(c, e->u.prim, e->u.prim->dtype));
        json_object_set_new(o, "dtype", json_string(rx_dtype_name(e->u.prim->dtype)));
        break;
    case RX_N_SHAPE: json_object_set_new(o, "shape", dims(c, e->u.shape.dims, e->u.shape.ndim)); break;
    case RX_N_TUPLE: json_object_set_new(o, "tuple", w_args(c, e)); break;
    case RX_N_GET_ITEM:
        json_object_set_new(o, "get_item", w_node(c, e->args[0]));
        json_object_set_new(o, "index", json_integer(e->u.index));
        break;
    case RX_N_IF:
        json_object_set_new(o, "if", w_node(c, e->args[0]));
        json_object_set_new(o, "then", w_seq(c, e->u.if_.then_body));
        json_object_set_new(o, "else", w_seq(c, e->u.if_.else_body));
        break;
    default: break;
    }
    return o;
}

static json_t *w_binding(wctx *c, const rx_binding *b)
{
    json_t *o = json_object();
    const rx_sinfo *t = b->given;
    if ((c->flags & RX_JSON_DEDUCED) && b->var->sinfo) t = b->var->sinfo;
    json_object_set_new(o, "var", json_string(rx_names_var(c->nm, b->var)));
    if (b->match_cast) {
        json_object_set_new(o, "match_cast", w_node(c, b->value));
        json_object_set_new(o, "type", w_sinfo(c, b->given ? b->given : b->var->sinfo));
    } else {
        if (t) json_object_set_new(o, "type", w_sinfo(c, t));
        json_object_set_new(o, "value", w_node(c, b->value));
    }
    return o;
}

static json_t *w_seq(wctx *c, const rx_seq *s)
{
    json_t *o = json_object(), *blocks = json_array();
    for (int i = 0; s && i < s->nblocks; i++) {
        const rx_block *bl = s->blocks[i];
        json_t *jb = json_object(), *bs = json_array();
        if (bl->dataflow) json_object_set_new(jb, "dataflow", json_true());
        for (int j = 0; j < bl->nbindings; j++) json_array_append_new(bs, w_binding(c, &bl->bindings[j]));
        json_object_set_new(jb, "bindings", bs);
        json_array_append_new(blocks, jb);
    }
    json_object_set_new(o, "blocks", blocks);
    json_object_set_new(o, "result", w_node(c, s ? s->result : NULL));
    return o;
}

static json_t *w_stmts(wctx *c, const rx_stmts *l);

/* True when a block's iterators are exactly what the reader derives without `iters`:
 * one per enclosing loop (up to the nearest block), the loop variable itself, bound to
 * itself, over [0, min + extent), spatial iff stored with. Such iterators cannot be
 * written explicitly (an explicit iterator is a new variable), so `iters` is omitted. */
static bool implicit_iters(const wctx *c, const rx_stmt *s)
{
    if (s->u.block.niters != c->loops.n - c->loop_base) return false;
    for (int k = 0; k < s->u.block.niters; k++) {
        const rx_stmt *lp = c->loops.items[c->loop_base + k];
        const rx_iter *it = &s->u.block.iters[k];
        const rx_expr *mn = lp->u.for_.min, *ext = lp->u.for_.extent, *dom = it->dom;
        if (it->var != lp->u.for_.var || !it->bind || it->bind->kind != RX_E_VAR ||
            it->bind->u.var != it->var || !dom)
            return false;
        if (!mn || rx_expr_is_int(mn, 0)) {
            if (!rx_expr_same(dom, ext)) return false;
        } else if (dom->kind != RX_E_ADD || !rx_expr_same(dom->u.op.a, mn) ||
                   !rx_expr_same(dom->u.op.b, ext)) {
            return false;
        }
        bool spatial = rx_stmts_store_uses(&s->u.block.body, it->var);
        if (it->kind != (spatial ? RX_ITER_SPATIAL : RX_ITER_REDUCE)) return false;
    }
    return true;
}

static json_t *w_stmt(wctx *c, const rx_stmt *s)
{
    json_t *o = json_object();
    switch (s->kind) {
    case RX_S_FOR:
        json_object_set_new(o, "for", json_string(rx_names_svar(c->nm, s->u.for_.var)));
        if (s->u.for_.min && !rx_expr_is_int(s->u.for_.min, 0))
            json_object_set_new(o, "min", dim(c, s->u.for_.min));
        json_object_set_new(o, "extent", dim(c, s->u.for_.extent));
        if (s->u.for_.loop_kind != RX_LOOP_SERIAL)
            json_object_set_new(o, "kind",
                                json_string(rx_loopkind_name((rx_loopkind)s->u.for_.loop_kind)));
        if (s->u.for_.thread) json_object_set_new(o, "thread", json_string(s->u.for_.thread));
        RX_VEC_PUSH(c->loops, s);
        json_object_set_new(o, "body", w_stmts(c, &s->u.for_.body));
        c->loops.n--;
        break;
    case RX_S_BLOCK: {
        json_t *its = json_array();
        bool implicit = implicit_iters(c, s);
        int base = c->loop_base;
        json_object_set_new(o, "block", json_string(s->u.block.name ? s->u.block.name : ""));
        for (int i = 0; !implicit && i < s->u.block.niters; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            json_t *ji = json_object();
            json_object_set_new(ji, "var", json_string(rx_names_svar(c->nm, it->var)));
            json_object_set_new(ji, "kind", json_string(rx_iterkind_name((rx_iterkind)it->kind)));
            json_object_set_new(ji, "dom", dim(c, it->dom));
            json_object_set_new(ji, "bind", dim(c, it->bind));
            json_array_append_new(its, ji);
        }
        if (implicit) json_decref(its);
        else json_object_set_new(o, "iters", its);
        c->loop_base = c->loops.n;
        if (s->u.block.init.n > 0) json_object_set_new(o, "init", w_stmts(c, &s->u.block.init));
        json_object_set_new(o, "body", w_stmts(c, &s->u.block.body));
        c->loop_base = base;
        break;
    }
    case RX_S_STORE:
        json_object_set_new(o, "store", str_expr(c, rx_e_load(c->tmp, s->u.store.buf, s->u.store.idx,
                                                               s->u.store.nidx)));
        json_object_set_new(o, "value", str_expr(c, s->u.store.value));
        break;
    case RX_S_ALLOC: {
        const rx_buffer *b = s->u.alloc.buf;
        json_object_set_new(o, "alloc", json_string(rx_names_buf(c->nm, b)));
        json_object_set_new(o, "shape", dims(c, b->shape, b->ndim));
        json_object_set_new(o, "dtype", json_string(rx_dtype_name(b->dtype)));
        if (b->scope != RX_SCOPE_GLOBAL)
            json_object_set_new(o, "scope", json_string(rx_scope_name((rx_scope)b->scope)));
        break;
    }
    case RX_S_IF:
        json_object_set_new(o, "if", str_expr(c, s->u.if_.cond));
        json_object_set_new(o, "then", w_stmts(c, &s->u.if_.then_s));
        if (s->u.if_.else_s.n > 0) json_object_set_new(o, "else", w_stmts(c, &s->u.if_.else_s));
        break;
    case RX_S_LET:
        json_object_set_new(o, "let", json_string(rx_names_svar(c->nm, s->u.let.var)));
        json_object_set_new(o, "value", str_expr(c, s->u.let.value));
        json_object_set_new(o, "body", w_stmts(c, &s->u.let.body));
        break;
    default: break;
    }
    return o;
}

static json_t *w_stmts(wctx *c, const rx_stmts *l)
{
    json_t *a = json_array();
    for (int i = 0; i < l->n; i++) json_array_append_new(a, w_stmt(c, l->items[i]));
    return a;
}

static json_t *w_func(wctx *c, const rx_func *f)
{
    json_t *o = json_object(), *ps = json_array();
    c->nm = rx_names_new(f);
    if (f->kind == RX_F_RELAX) {
        json_object_set_new(o, "kind", json_string("relax"));
        for (int i = 0; i < f->nparams; i++) {
            json_t *p = json_object();
            json_object_set_new(p, "name", json_string(rx_names_var(c->nm, f->params[i])));
            json_object_set_new(p, "type", w_sinfo(c, f->params[i]->sinfo));
            json_array_append_new(ps, p);
        }
        json_object_set_new(o, "params", ps);
        const rx_sinfo *ret = f->ret_given;
        if ((c->flags & RX_JSON_DEDUCED) && f->ret) ret = f->ret;
        if (ret) json_object_set_new(o, "ret", w_sinfo(c, ret));
    } else {
        json_object_set_new(o, "kind", json_string("tir"));
        for (int i = 0; i < f->ntparams; i++) {
            const rx_tparam *tp = &f->tparams[i];
            json_t *p = json_object();
            if (tp->buf) {
                json_t *b = json_object();
                json_object_set_new(p, "name", json_string(rx_names_buf(c->nm, tp->buf)));
                json_object_set_new(b, "shape", dims(c, tp->buf->shape, tp->buf->ndim));
                json_object_set_new(b, "dtype", json_string(rx_dtype_name(tp->buf->dtype)));
                if (tp->buf->scope != RX_SCOPE_GLOBAL)
                    json_object_set_new(b, "scope",
                                        json_string(rx_scope_name((rx_scope)tp->buf->scope)));
                json_object_set_new(p, "buffer", b);
            } else if (tp->var) {
                json_object_set_new(p, "name", json_string(rx_names_svar(c->nm, tp->var)));
                json_object_set_new(p, "dtype", json_string(rx_dtype_name(tp->var->dtype)));
            }
            json_array_append_new(ps, p);
        }
        json_object_set_new(o, "params", ps);
    }
    if (f->attrs && f->attrs->kind == RX_A_MAP && f->attrs->u.map.n > 0)
        json_object_set_new(o, "attrs", w_attr(c, f->attrs, A_FATTRS));
    if (f->kind == RX_F_RELAX) json_object_set_new(o, "body", w_seq(c, f->body));
    else json_object_set_new(o, "body", w_stmts(c, &f->tbody));
    rx_names_free(c->nm);
    c->nm = NULL;
    return o;
}

/* Appends m as relax-json v1 (see the file comment for the forms chosen). */
void rx_json_write(const rx_module *m, int flags, rx_sb *out)
{
    wctx c = {m, NULL, rx_arena_new(), flags, {0}, {0}, 0};
    json_t *root = json_object(), *fs = json_object();
    json_object_set_new(root, "format", json_string("relax-json"));
    json_object_set_new(root, "version", json_integer(1));
    if (m->attrs && m->attrs->kind == RX_A_MAP && m->attrs->u.map.n > 0)
        json_object_set_new(root, "attrs", w_attr(&c, m->attrs, A_PLAIN));
    for (int i = 0; i < m->nfuncs; i++) json_object_set_new(fs, m->funcs[i]->name, w_func(&c, m->funcs[i]));
    json_object_set_new(root, "functions", fs);
    if (m->nconsts > 0) {
        json_t *cs = json_object();
        for (int i = 0; i < m->nconsts; i++) json_object_set_new(cs, m->consts[i]->name, const_obj(m->consts[i]));
        json_object_set_new(root, "constants", cs);
    }
    size_t fl = JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
    fl |= (flags & RX_JSON_COMPACT) ? JSON_COMPACT : JSON_INDENT(2);
    char *text = json_dumps(root, fl);
    RX_ASSERT(text != NULL);
    rx_sb_puts(out, text);
    free(text);
    json_decref(root);
    rx_sb_free(&c.sb);
    RX_VEC_FREE(c.loops);
    rx_arena_free(c.tmp);
}
