/*
 * read_tir.c — loop-level functions of relax-json (the paper's TensorIR).
 *
 * A loop function's signature is a list of buffers and scalars. Its variables are
 * defined in parameter order before any shape is read: a scalar parameter
 * {"name": "n", "dtype": "i64"} is the variable n itself; every other whole-dimension
 * identifier of a buffer shape is a fresh shape variable. Both become rx_func.svars;
 * then buffer shapes may be expressions over any of them.
 *
 * The body is a statement list (an array, or one statement object). The reader
 * desugars `grid` into nested serial FORs from 0 and gives every block its
 * iterators: when `iters` is absent, each loop enclosing the block (inside the
 * function, and inside the nearest enclosing block) becomes an iterator whose var is
 * the loop variable itself, dom its extent (min + extent when min is not 0), bind the
 * loop variable; it is spatial when it appears in an index of a store of the block's
 * body, a reduction otherwise.
 *
 * Scopes: loop variables, iterators and let variables are visible in their bodies;
 * an `alloc` is visible to the statements after it in the same list. Shadowing a
 * variable or buffer in scope is an error. Scalar expressions are strings parsed by
 * exprparse.c (JSON numbers are accepted as literals); a store's value is typed by
 * its buffer.
 */
#include <string.h>

#include "reader_int.h"

static rx_stmts read_stmts(rx_reader *r, const json_t *j, rx_loc loc);

/* ---------------------------------------------------------------- helpers */

/* A scalar expression from a string or a JSON number/bool; `want` types a bare
 * literal (RX_DT_UNKNOWN: i64 / f32 defaults). NULL after an error. */
static rx_expr *texpr(rx_reader *r, const json_t *j, rx_loc loc, rx_dtype want)
{
    if (json_is_string(j))
        return rxi_rd_parse(r, json_string_value(j), json_string_length(j), loc, RX_XP_FULL, want);
    if (json_is_integer(j)) {
        int64_t v = json_integer_value(j);
        if (rx_dtype_is_float(want)) return rx_e_float(r->a, (double)v, want);
        if (rx_dtype_is_int(want)) return rx_e_typed_int(r->a, v, want);
        if (want == RX_DT_BOOL && (v == 0 || v == 1)) return rx_e_typed_int(r->a, v, want);
        if (want == RX_DT_UNKNOWN) return rx_e_int(r->a, v);
    } else if (json_is_real(j)) {
        if (rx_dtype_is_float(want)) return rx_e_float(r->a, json_real_value(j), want);
        if (want == RX_DT_UNKNOWN) return rx_e_float(r->a, json_real_value(j), RX_DT_F32);
    } else if (json_is_boolean(j)) {
        if (want == RX_DT_BOOL || want == RX_DT_UNKNOWN)
            return rx_e_typed_int(r->a, json_is_true(j), RX_DT_BOOL);
    } else {
        rxi_rd_err(r, loc, "expected an expression string or a number, found %s", rxi_rd_desc(r, j));
        return NULL;
    }
    rxi_rd_err(r, loc, "%s is not a %s value", rxi_rd_desc(r, j), rx_dtype_name(want));
    return NULL;
}

/* An integer-typed scalar expression (extents, bounds, iterator bindings). */
static rx_expr *texpr_int(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_expr *e = texpr(r, j, loc, RX_DT_I64);
    if (e && !rx_dtype_is_int((rx_dtype)e->dtype)) {
        rxi_rd_err(r, loc, "expected an integer expression, found %s", rx_dtype_name(e->dtype));
        return NULL;
    }
    return e;
}

/* A new variable name: an identifier not naming a variable in scope. */
static const char *new_var_name(rx_reader *r, const json_t *j, rx_loc loc, const char *what)
{
    const char *name = rxi_rd_ident(r, j, loc, what);
    if (name && rxi_rd_lookup(r, name, strlen(name))) {
        rxi_rd_err(r, loc, "%s \"%s\" shadows a variable in scope", what, name);
        return NULL;
    }
    return name;
}

/* The buffer in scope named `name`, or NULL. */
static rx_buffer *find_buf(rx_reader *r, const char *name)
{
    return rxi_rd_scope_get(&r->bufs, name, strlen(name));
}

/* Reads {shape, dtype, scope} of a buffer parameter or an alloc into a new buffer
 * (not yet in scope). NULL after an error. */
static rx_buffer *read_buffer(rx_reader *r, const char *name, const json_t *j, rx_loc loc,
                              const char *shape_key)
{
    json_t *sh = rxi_rd_get(r, j, loc, shape_key, true), *dt = rxi_rd_get(r, j, loc, "dtype", true),
           *sc = json_object_get(j, "scope");
    rx_buffer *b = RX_NEW(r->a, rx_buffer);
    b->name = name;
    b->loc = loc;
    bool ok = dt && rxi_rd_dtype(r, dt, rxi_rd_key(r, loc, "dtype"), &b->dtype);
    if (sc) {
        rx_scope scope;
        if (rx_scope_parse(json_string_value(sc), &scope)) {
            b->scope = (uint8_t)scope;
        } else {
            rxi_rd_err(r, rxi_rd_key(r, loc, "scope"), "expected \"global\", \"local\" or "
                                                     "\"shared\", found %s", rxi_rd_desc(r, sc));
            ok = false;
        }
    }
    rx_loc sl = rx_loc_key(&r->m->locs, loc, shape_key);
    if (!sh || !rxi_rd_want_array(r, sh, sl, "a list of dimensions")) return NULL;
    b->ndim = (int)json_array_size(sh);
    b->shape = RX_NEWN(r->a, rx_expr *, b->ndim ? b->ndim : 1);
    for (int i = 0; i < b->ndim; i++) {
        b->shape[i] = rxi_rd_dim(r, json_array_get(sh, (size_t)i), rxi_rd_idx(r, sl, i), 0);
        ok = ok && b->shape[i];
    }
    if (!ok) return NULL;
    b->id = rx_module_new_id(r->m);
    return b;
}

static rx_stmt *new_stmt(rx_reader *r, rx_skind k, rx_loc loc)
{
    rx_stmt *s = RX_NEW(r->a, rx_stmt);
    s->kind = (uint8_t)k;
    s->loc = loc;
    return s;
}

/* ---------------------------------------------------------------- statements */

static const char *const THREADS[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x",
                                      "threadIdx.y", "threadIdx.z", NULL};

static rx_stmt *read_for(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_stmt *s = new_stmt(r, RX_S_FOR, loc);
    bool ok = true;
    json_t *mn = json_object_get(j, "min"), *ex = rxi_rd_get(r, j, loc, "extent", true),
           *kd = json_object_get(j, "kind"), *th = json_object_get(j, "thread"),
           *body = rxi_rd_get(r, j, loc, "body", true);
    s->u.for_.min = mn ? texpr_int(r, mn, rxi_rd_key(r, loc, "min")) : rx_e_int(r->a, 0);
    s->u.for_.extent = ex ? texpr_int(r, ex, rxi_rd_key(r, loc, "extent")) : NULL;
    ok = s->u.for_.min && s->u.for_.extent;
    if (kd) {
        rx_loopkind k = RX_LOOP_SERIAL;
        if (!rx_loopkind_parse(json_string_value(kd), &k)) {
            rxi_rd_err(r, rxi_rd_key(r, loc, "kind"), "expected one of serial, parallel, "
                                                    "vectorized, unrolled, found %s",
                      rxi_rd_desc(r, kd));
            ok = false;
        }
        s->u.for_.loop_kind = (uint8_t)k;
    }
    if (th) {
        bool known = false;
        for (int i = 0; THREADS[i] && json_is_string(th); i++)
            known = known || strcmp(THREADS[i], json_string_value(th)) == 0;
        if (!known) {
            rxi_rd_err(r, rxi_rd_key(r, loc, "thread"), "expected a thread axis (blockIdx.x/y/z, "
                                                      "threadIdx.x/y/z), found %s",
                      rxi_rd_desc(r, th));
            ok = false;
        } else {
            s->u.for_.thread = rx_arena_strdup(r->a, json_string_value(th));
        }
    }
    const char *name = new_var_name(r, json_object_get(j, "for"), rxi_rd_key(r, loc, "for"),
                                    "loop variable");
    if (!name) return NULL;
    int smark = r->syms.e.n;
    s->u.for_.var = rxi_rd_define(r, name, RX_DT_I64, RX_SV_LOOP);
    rxi_rd_loop lp = {s->u.for_.var, s->u.for_.min, s->u.for_.extent};
    RX_VEC_PUSH(r->loops, lp);
    if (body) s->u.for_.body = read_stmts(r, body, rxi_rd_key(r, loc, "body"));
    r->loops.n--;
    rxi_rd_scope_pop(&r->syms, smark);
    return ok ? s : NULL;
}

static rx_stmt *read_grid(rx_reader *r, const json_t *j, rx_loc loc)
{
    json_t *g = json_object_get(j, "grid"), *ex = rxi_rd_get(r, j, loc, "extents", true),
           *body = rxi_rd_get(r, j, loc, "body", true);
    rx_loc gl = rxi_rd_key(r, loc, "grid"), el = rxi_rd_key(r, loc, "extents");
    if (!rxi_rd_want_array(r, g, gl, "a list of loop variables") || !ex ||
        !rxi_rd_want_array(r, ex, el, "a list of extents"))
        return NULL;
    int n = (int)json_array_size(g);
    if (n == 0 || json_array_size(ex) != (size_t)n) {
        rxi_rd_err(r, el, "a grid needs one extent per loop variable: %d variables, %zu extents",
                  n, json_array_size(ex));
        return NULL;
    }
    int smark = r->syms.e.n, lmark = r->loops.n;
    rx_stmt **loops = RX_NEWN(r->a, rx_stmt *, n);
    bool ok = true;
    for (int k = 0; k < n; k++) {
        rx_stmt *s = new_stmt(r, RX_S_FOR, k ? rxi_rd_idx(r, gl, k) : loc);
        s->u.for_.min = rx_e_int(r->a, 0);
        s->u.for_.extent = texpr_int(r, json_array_get(ex, (size_t)k), rxi_rd_idx(r, el, k));
        const char *name = new_var_name(r, json_array_get(g, (size_t)k), rxi_rd_idx(r, gl, k),
                                        "loop variable");
        ok = ok && s->u.for_.extent && name;
        s->u.for_.var = rxi_rd_define(r, name ? name : "?", RX_DT_I64, RX_SV_LOOP);
        rxi_rd_loop lp = {s->u.for_.var, s->u.for_.min, s->u.for_.extent};
        RX_VEC_PUSH(r->loops, lp);
        loops[k] = s;
    }
    rx_stmts inner = body ? read_stmts(r, body, rxi_rd_key(r, loc, "body")) : (rx_stmts){0};
    for (int k = n - 1; k >= 0; k--) {
        loops[k]->u.for_.body = inner;
        inner.items = RX_NEWN(r->a, rx_stmt *, 1);
        inner.items[0] = loops[k];
        inner.n = 1;
    }
    r->loops.n = lmark;
    rxi_rd_scope_pop(&r->syms, smark);
    return ok ? loops[0] : NULL;
}

static rx_stmt *read_block(rx_reader *r, const json_t *j, rx_loc loc)
{
    static const char *const ikeys[] = {"var", "kind", "dom", "bind", NULL};
    rx_stmt *s = new_stmt(r, RX_S_BLOCK, loc);
    const char *name = rxi_rd_ident(r, json_object_get(j, "block"), rxi_rd_key(r, loc, "block"),
                                   "a block");
    bool ok = name != NULL;
    s->u.block.name = name;
    int smark = r->syms.e.n, base = r->loop_base, enclosing = r->loops.n;
    json_t *its = json_object_get(j, "iters");
    if (its) {
        rx_loc il = rxi_rd_key(r, loc, "iters");
        if (!rxi_rd_want_array(r, its, il, "a list of block iterators")) return NULL;
        int n = (int)json_array_size(its);
        s->u.block.niters = n;
        s->u.block.iters = RX_NEWN(r->a, rx_iter, n ? n : 1);
        const char **names = RX_NEWN(r->a, const char *, n ? n : 1);
        for (int i = 0; i < n; i++) { /* doms and binds see the enclosing scope only */
            json_t *it = json_array_get(its, (size_t)i);
            rx_loc l = rxi_rd_idx(r, il, i);
            rx_iter *iv = &s->u.block.iters[i];
            if (!rxi_rd_want_object(r, it, l, "a block iterator") || !rxi_rd_keys(r, it, l, ikeys)) {
                ok = false;
                continue;
            }
            json_t *dj = rxi_rd_get(r, it, l, "dom", true), *bj = rxi_rd_get(r, it, l, "bind", true),
                   *kj = rxi_rd_get(r, it, l, "kind", true), *vj = rxi_rd_get(r, it, l, "var", true);
            iv->dom = dj ? texpr_int(r, dj, rxi_rd_key(r, l, "dom")) : NULL;
            iv->bind = bj ? texpr_int(r, bj, rxi_rd_key(r, l, "bind")) : NULL;
            rx_iterkind k = RX_ITER_SPATIAL;
            if (kj && !rx_iterkind_parse(json_string_value(kj), &k)) {
                rxi_rd_err(r, rxi_rd_key(r, l, "kind"), "expected \"spatial\" or \"reduce\", "
                                                      "found %s", rxi_rd_desc(r, kj));
                ok = false;
            }
            iv->kind = (uint8_t)k;
            names[i] = vj ? new_var_name(r, vj, rxi_rd_key(r, l, "var"), "block iterator") : NULL;
            ok = ok && iv->dom && iv->bind && kj && names[i];
        }
        for (int i = 0; i < n; i++)
            s->u.block.iters[i].var =
                rxi_rd_define(r, names[i] ? names[i] : "?", RX_DT_I64, RX_SV_LOOP);
    }
    r->loop_base = r->loops.n;
    json_t *init = json_object_get(j, "init"), *body = rxi_rd_get(r, j, loc, "body", true);
    if (init) s->u.block.init = read_stmts(r, init, rxi_rd_key(r, loc, "init"));
    if (body) s->u.block.body = read_stmts(r, body, rxi_rd_key(r, loc, "body"));
    r->loop_base = base;
    if (!its) {
        int n = enclosing - base;
        s->u.block.niters = n;
        s->u.block.iters = RX_NEWN(r->a, rx_iter, n ? n : 1);
        for (int i = 0; i < n; i++) {
            const rxi_rd_loop *lp = &r->loops.items[base + i];
            rx_iter *iv = &s->u.block.iters[i];
            iv->var = lp->var;
            iv->dom = rx_expr_is_int(lp->min, 0)
                          ? lp->extent
                          : rx_e_binary(r->a, RX_E_ADD, lp->min, lp->extent);
            iv->bind = rx_e_var(r->a, lp->var);
            iv->kind = rx_stmts_store_uses(&s->u.block.body, lp->var) ? RX_ITER_SPATIAL
                                                                       : RX_ITER_REDUCE;
        }
    }
    rxi_rd_scope_pop(&r->syms, smark);
    return ok ? s : NULL;
}

static rx_stmt *read_store(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_loc tl = rxi_rd_key(r, loc, "store");
    const char *t = rxi_rd_want_string(r, json_object_get(j, "store"), tl,
                                      "a buffer element like \"Y[i, j]\"");
    json_t *vj = rxi_rd_get(r, j, loc, "value", true);
    rx_expr *target = t ? rxi_rd_parse(r, t, strlen(t), tl, RX_XP_FULL, RX_DT_UNKNOWN) : NULL;
    if (target && target->kind != RX_E_LOAD) {
        rxi_rd_err(r, tl, "expected a buffer element like \"Y[i, j]\", found \"%.40s\"", t);
        target = NULL;
    }
    if (!target || !vj) return NULL;
    rx_buffer *buf = target->u.load.buf;
    rx_expr *v = texpr(r, vj, rxi_rd_key(r, loc, "value"), buf->dtype);
    if (!v) return NULL;
    if (v->dtype != buf->dtype) {
        rxi_rd_err(r, rxi_rd_key(r, loc, "value"), "the value has type %s, but buffer \"%s\" "
                                                 "holds %s", rx_dtype_name(v->dtype), buf->name,
                  rx_dtype_name(buf->dtype));
        return NULL;
    }
    rx_stmt *s = new_stmt(r, RX_S_STORE, loc);
    s->u.store.buf = buf;
    s->u.store.idx = target->u.load.idx;
    s->u.store.nidx = target->u.load.nidx;
    s->u.store.value = v;
    return s;
}

/* An alloc; on success the buffer is pushed into the current list's scope. */
static rx_stmt *read_alloc(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_loc nl = rxi_rd_key(r, loc, "alloc");
    const char *name = rxi_rd_ident(r, json_object_get(j, "alloc"), nl, "a buffer");
    if (name && find_buf(r, name)) {
        rxi_rd_err(r, nl, "buffer \"%s\" is already defined", name);
        name = NULL;
    }
    rx_buffer *b = read_buffer(r, name, j, loc, "shape");
    if (!b || !name) return NULL;
    rxi_rd_scope_push(&r->bufs, b->name, b);
    rx_stmt *s = new_stmt(r, RX_S_ALLOC, loc);
    s->u.alloc.buf = b;
    return s;
}

static rx_stmt *read_if(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_stmt *s = new_stmt(r, RX_S_IF, loc);
    rx_loc cl = rxi_rd_key(r, loc, "if");
    rx_expr *c = texpr(r, json_object_get(j, "if"), cl, RX_DT_BOOL);
    if (c && c->dtype != RX_DT_BOOL) {
        rxi_rd_err(r, cl, "the condition must be bool, found %s", rx_dtype_name(c->dtype));
        c = NULL;
    }
    s->u.if_.cond = c;
    json_t *t = rxi_rd_get(r, j, loc, "then", true), *e = json_object_get(j, "else");
    if (t) s->u.if_.then_s = read_stmts(r, t, rxi_rd_key(r, loc, "then"));
    if (e) s->u.if_.else_s = read_stmts(r, e, rxi_rd_key(r, loc, "else"));
    return c && t ? s : NULL;
}

static rx_stmt *read_let(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_stmt *s = new_stmt(r, RX_S_LET, loc);
    json_t *vj = rxi_rd_get(r, j, loc, "value", true), *body = rxi_rd_get(r, j, loc, "body", true);
    rx_expr *v = vj ? texpr(r, vj, rxi_rd_key(r, loc, "value"), RX_DT_UNKNOWN) : NULL;
    const char *name = new_var_name(r, json_object_get(j, "let"), rxi_rd_key(r, loc, "let"),
                                    "let variable");
    if (!v || !name) return NULL;
    int smark = r->syms.e.n;
    s->u.let.var = rxi_rd_define(r, name, (rx_dtype)v->dtype, RX_SV_LET);
    s->u.let.value = v;
    if (body) s->u.let.body = read_stmts(r, body, rxi_rd_key(r, loc, "body"));
    rxi_rd_scope_pop(&r->syms, smark);
    return body ? s : NULL;
}

static const char *const STMT_KINDS[] = {"for", "grid", "block", "store", "alloc", "if", "let",
                                         NULL};
static const char *const STMT_KEYS[][7] = {
    {"for", "min", "extent", "kind", "thread", "body", NULL},
    {"grid", "extents", "body", NULL},
    {"block", "iters", "init", "body", NULL},
    {"store", "value", NULL},
    {"alloc", "shape", "dtype", "scope", NULL},
    {"if", "then", "else", NULL},
    {"let", "value", "body", NULL},
};

/* One statement object. NULL after an error. */
static rx_stmt *read_stmt(rx_reader *r, const json_t *j, rx_loc loc)
{
    if (!rxi_rd_want_object(r, j, loc, "a statement")) return NULL;
    int kind = -1;
    for (int k = 0; STMT_KINDS[k]; k++) {
        if (!json_object_get(j, STMT_KINDS[k])) continue;
        if (kind >= 0) {
            rxi_rd_err(r, loc, "a statement has one kind key, found both \"%s\" and \"%s\"",
                      STMT_KINDS[kind], STMT_KINDS[k]);
            return NULL;
        }
        kind = k;
    }
    if (kind < 0) {
        rxi_rd_err(r, loc, "expected a statement object with one of the keys: for, grid, block, "
                          "store, alloc, if, let");
        return NULL;
    }
    if (!rxi_rd_keys(r, j, loc, STMT_KEYS[kind])) return NULL;
    switch (kind) {
    case 0: return read_for(r, j, loc);
    case 1: return read_grid(r, j, loc);
    case 2: return read_block(r, j, loc);
    case 3: return read_store(r, j, loc);
    case 4: return read_alloc(r, j, loc);
    case 5: return read_if(r, j, loc);
    default: return read_let(r, j, loc);
    }
}

/* A statement list: an array, or one statement standing alone. Allocations made in
 * the list go out of scope at its end. */
static rx_stmts read_stmts(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_stmts out = {0};
    int bmark = r->bufs.e.n;
    if (json_is_array(j)) {
        int n = (int)json_array_size(j);
        out.items = RX_NEWN(r->a, rx_stmt *, n ? n : 1);
        for (int i = 0; i < n; i++) {
            rx_stmt *s = read_stmt(r, json_array_get(j, (size_t)i), rxi_rd_idx(r, loc, i));
            if (s) out.items[out.n++] = s;
        }
    } else if (json_is_object(j)) {
        out.items = RX_NEWN(r->a, rx_stmt *, 1);
        rx_stmt *s = read_stmt(r, j, loc);
        if (s) out.items[out.n++] = s;
    } else {
        rxi_rd_err(r, loc, "expected a statement or a list of statements, found %s",
                  rxi_rd_desc(r, j));
    }
    rxi_rd_scope_pop(&r->bufs, bmark);
    return out;
}

/* ---------------------------------------------------------------- functions */


/* Defines the scalar parameter p (its dtype read leniently: errors come later). */
static void define_scalar(rx_reader *r, const json_t *p)
{
    rx_dtype t = RX_DT_I64;
    const char *ds = json_string_value(json_object_get(p, "dtype"));
    if (!ds || !rx_dtype_parse(ds, &t) || t == RX_DT_UNKNOWN) t = RX_DT_I64;
    rxi_rd_define(r, json_string_value(json_object_get(p, "name")), t, RX_SV_PARAM);
}

/* Step 1 of a signature: scalar parameters and whole-dim identifiers, in order. */
static void define_signature_vars(rx_reader *r, const json_t *ps)
{
    size_t i;
    json_t *p;
    rxi_rd_scope scalars = {0}; /* json_t *: scalar parameters by name */
    json_array_foreach(ps, i, p) {
        json_t *nj = json_object_get(p, "name");
        if (json_is_object(p) && !json_object_get(p, "buffer") && json_is_string(nj))
            rxi_rd_scope_push(&scalars, json_string_value(nj), p);
    }
    json_array_foreach(ps, i, p) {
        json_t *nj = json_object_get(p, "name"), *bj = json_object_get(p, "buffer");
        if (!json_is_object(p)) continue;
        if (!bj) {
            if (json_is_string(nj) && rxi_rd_is_ident(json_string_value(nj), json_string_length(nj)) &&
                !rxi_rd_lookup(r, json_string_value(nj), json_string_length(nj)))
                define_scalar(r, p);
            continue;
        }
        json_t *sh = json_object_get(bj, "shape"), *d;
        size_t k, n;
        if (!json_is_array(sh)) continue;
        json_array_foreach(sh, k, d) {
            const char *id = json_is_string(d) ? rxi_rd_whole_ident(json_string_value(d), &n) : NULL;
            if (!id || rxi_rd_lookup(r, id, n)) continue;
            json_t *sp = rxi_rd_scope_get(&scalars, id, n);
            if (sp) define_scalar(r, sp);
            else rxi_rd_define(r, rx_arena_strndup(r->a, id, n), RX_DT_I64, RX_SV_SHAPE);
        }
    }
    rxi_rd_scope_free(&scalars);
}

void rxi_rd_tir_func(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc)
{
    static const char *const keys[] = {"kind", "params", "attrs", "body", NULL};
    static const char *const pkeys[] = {"name", "buffer", "dtype", NULL};
    static const char *const bkeys[] = {"shape", "dtype", "scope", NULL};
    rxi_rd_keys(r, j, loc, keys);
    json_t *ps = rxi_rd_get(r, j, loc, "params", true);
    rx_loc pl = rxi_rd_key(r, loc, "params");
    int n = 0;
    if (ps && rxi_rd_want_array(r, ps, pl, "a list of parameters")) n = (int)json_array_size(ps);
    if (n) define_signature_vars(r, ps);
    f->nsvars = r->syms.e.n;
    f->svars = RX_NEWN(r->a, const rx_svar *, f->nsvars ? f->nsvars : 1);
    for (int i = 0; i < f->nsvars; i++) f->svars[i] = RX_RD_AT(r->syms, i);
    f->ntparams = n;
    f->tparams = RX_NEWN(r->a, rx_tparam, n ? n : 1);
    rxi_rd_scope names = {0}; /* parameter names seen */
    for (int i = 0; i < n; i++) {
        json_t *p = json_array_get(ps, (size_t)i);
        rx_loc l = rxi_rd_idx(r, pl, i);
        if (!rxi_rd_want_object(r, p, l, "a parameter") || !rxi_rd_keys(r, p, l, pkeys)) continue;
        json_t *nj = rxi_rd_get(r, p, l, "name", true), *bj = json_object_get(p, "buffer"),
               *dj = json_object_get(p, "dtype");
        rx_loc nl = rxi_rd_key(r, l, "name");
        const char *name = nj ? rxi_rd_ident(r, nj, nl, "a parameter") : NULL;
        if (name && rxi_rd_scope_get(&names, name, strlen(name))) {
            rxi_rd_err(r, nl, "duplicate parameter \"%s\"", name);
            name = NULL;
        } else if (name) {
            rxi_rd_scope_push(&names, name, (void *)name);
        }
        if (!bj == !dj) {
            rxi_rd_err(r, l, "a parameter has either \"buffer\" (a buffer) or \"dtype\" (a "
                            "scalar)%s", bj ? ", not both" : "");
            continue;
        }
        if (dj) {
            rx_dtype t;
            if (rxi_rd_dtype(r, dj, rxi_rd_key(r, l, "dtype"), &t) && name)
                f->tparams[i].var = rxi_rd_lookup(r, name, strlen(name));
            continue;
        }
        rx_loc bl = rxi_rd_key(r, l, "buffer");
        if (!rxi_rd_want_object(r, bj, bl, "a buffer {\"shape\", \"dtype\"}") ||
            !rxi_rd_keys(r, bj, bl, bkeys))
            continue;
        rx_buffer *b = read_buffer(r, name, bj, bl, "shape");
        if (b && name) {
            b->loc = l;
            f->tparams[i].buf = b;
            rxi_rd_scope_push(&r->bufs, b->name, b);
        }
    }
    rxi_rd_scope_free(&names);
    json_t *at = json_object_get(j, "attrs");
    if (at) f->attrs = rxi_rd_func_attrs(r, f, at, rxi_rd_key(r, loc, "attrs"));
    json_t *body = rxi_rd_get(r, j, loc, "body", true);
    if (body) f->tbody = read_stmts(r, body, rxi_rd_key(r, loc, "body"));
    f->nouts = -1;
}
