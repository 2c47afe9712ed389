/*
 * read_graph.c — graph-level functions of relax-json: signatures, bodies (blocks of
 * bindings and a result) and the expressions of the spec's table.
 *
 * Scoping (per function, see reader_int.h): parameters are bound first; a binding's
 * value is read before its variable is bound, so a variable never refers to itself;
 * variables of every block stay visible to the rest of the function, those bound in
 * an `if` branch only in that branch. A name is bound once per function: rebinding
 * it, even after its branch ended, is an error. Every use of a local variable refers
 * to the one VAR node of its binding (as in TVM, where uses share the Var). A name not
 * in scope is reported as used before its binding when the function binds it later
 * (found by one walk of the function's JSON, made at the first such error), as used
 * in its own binding when it is the variable of a binding whose value is being read,
 * and as unknown otherwise.
 *
 * Symbolic variables: the parameters' whole-dimension identifiers are all defined
 * before any parameter annotation is read (so `["n * 2"]` may use an n defined by a
 * later parameter); they become rx_func.svars. A match_cast annotation defines its
 * new whole-dimension identifiers the same way; everywhere else (binding types, ret,
 * call_tir out, tir_vars, shape values, prim values, op size attributes) every
 * variable must already be defined.
 *
 * Expressions are objects with one kind key; each kind has a fixed key set and
 * unknown keys are errors. Op attributes are converted to a generic map and bound
 * to the op's schema by rx_op_bind_attrs, which parses symbolic sizes through the
 * callback below, in the current scope.
 */
#include <string.h>

#include "reader_int.h"

static rx_node *read_expr(rx_reader *r, const json_t *j, rx_loc loc);
static rx_seq *read_seq(rx_reader *r, const json_t *j, rx_loc loc);

/* ---------------------------------------------------------------- variables */

/* The last entry bound under name (visible or not), or NULL. */
static rxi_rd_local *find_local(rx_reader *r, const char *name)
{
    return rxi_rd_scope_get(&r->locals, name, strlen(name));
}

/* Checks that name may be bound here (never bound before in this function). */
static bool may_bind(rx_reader *r, const char *name, rx_loc loc)
{
    rxi_rd_local *old = find_local(r, name);
    if (!old) return true;
    rx_sb where = {0};
    rx_loc_render(&r->m->locs, old->loc, &where);
    if (old->param)
        rxi_rd_err(r, loc, "variable \"%s\" shadows a parameter", name);
    else
        rxi_rd_err(r, loc, "variable \"%s\" is already bound (at %s); a variable is bound once "
                          "per function", name, rx_sb_str(&where));
    rx_sb_free(&where);
    return false;
}

/* Creates the VAR node of a binding or parameter and puts it in scope. */
static rx_node *bind_var(rx_reader *r, const char *name, rx_sinfo *si, bool dataflow,
                         bool param, rx_loc loc)
{
    rx_node *v = rx_n_var(r->m, name, si, dataflow);
    v->loc = loc;
    rxi_rd_local *l = RX_NEW(r->a, rxi_rd_local);
    *l = (rxi_rd_local){v->u.var.name, v, loc, param, false};
    rxi_rd_scope_push(&r->locals, l->name, l);
    return v;
}

/* ---- binding names of the whole function, for messages about later bindings ---- */

/* A binding of the function body: its JSON object and the location of its "var". */
typedef struct later_binding {
    const json_t *binding;
    rx_loc loc;
} later_binding;

/* A JSON path below the function body, kept on the C stack while walking it and made
 * into an rx_loc only where a binding is found. */
typedef struct jpath {
    const struct jpath *up; /* NULL: the body itself */
    const char *key;        /* static key, or NULL for the index idx */
    int idx;
} jpath;

static rx_loc jpath_loc(rx_reader *r, const jpath *p)
{
    if (!p) return r->fn_body_loc;
    rx_loc up = jpath_loc(r, p->up);
    return p->key ? rxi_rd_key(r, up, p->key) : rxi_rd_idx(r, up, p->idx);
}

static void index_seq(rx_reader *r, const json_t *j, const jpath *at);

/* The `if` expressions anywhere inside an expression: their branches bind names. */
static void index_expr(rx_reader *r, const json_t *j, const jpath *at)
{
    static const char *const exprs[] = {"args", "tuple", "get_item", "if"};
    static const char *const seqs[] = {"then", "else"};
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            jpath pi = {at, NULL, (int)i};
            index_expr(r, json_array_get(j, i), &pi);
        }
        return;
    }
    if (!json_is_object(j)) return;
    for (int k = 0; k < RX_COUNTOF(exprs); k++) {
        jpath pk = {at, exprs[k], 0};
        index_expr(r, json_object_get(j, exprs[k]), &pk);
    }
    for (int k = 0; json_object_get(j, "if") && k < RX_COUNTOF(seqs); k++) {
        jpath pk = {at, seqs[k], 0};
        index_seq(r, json_object_get(j, seqs[k]), &pk);
    }
}

/* Records the first binding of each name in the body j (malformed parts are skipped:
 * reading reports them). */
static void index_seq(rx_reader *r, const json_t *j, const jpath *at)
{
    const json_t *bs = json_object_get(j, "blocks");
    jpath pb = {at, "blocks", 0};
    for (size_t i = 0; i < json_array_size(bs); i++) {
        jpath pi = {&pb, NULL, (int)i};
        const json_t *bl = json_object_get(json_array_get(bs, i), "bindings");
        jpath pbl = {&pi, "bindings", 0};
        for (size_t k = 0; k < json_array_size(bl); k++) {
            const json_t *b = json_array_get(bl, k);
            jpath pk = {&pbl, NULL, (int)k}, pv = {&pk, "var", 0}, pval = {&pk, "value", 0},
                  pmc = {&pk, "match_cast", 0};
            const char *name = json_string_value(json_object_get(b, "var"));
            if (name && !rxi_rd_scope_get(&r->later, name, strlen(name))) {
                later_binding *lb = RX_NEW(r->a, later_binding);
                *lb = (later_binding){b, jpath_loc(r, &pv)};
                rxi_rd_scope_push(&r->later, name, lb);
            }
            index_expr(r, json_object_get(b, "value"), &pval);
            index_expr(r, json_object_get(b, "match_cast"), &pmc);
        }
    }
    jpath pr = {at, "result", 0};
    index_expr(r, json_object_get(j, "result"), &pr);
}

/* The first binding of name anywhere in the function, or NULL. The index is built at
 * the first call per function: O(size of the body) once, O(1) per call after. */
static const later_binding *find_later(rx_reader *r, const char *name)
{
    if (!r->later_built) {
        r->later_built = true;
        index_seq(r, r->fn_body, NULL);
    }
    return rxi_rd_scope_get(&r->later, name, strlen(name));
}

/* True when the binding's value is being read (the use is inside its own binding). */
static bool binding_open(const rx_reader *r, const json_t *binding)
{
    for (int i = 0; i < r->open.n; i++)
        if (r->open.items[i] == binding) return true;
    return false;
}

/* A use of a local variable. */
static rx_node *use_var(rx_reader *r, const char *name, rx_loc loc)
{
    rxi_rd_local *l = find_local(r, name);
    if (l) {
        if (!l->hidden) return l->var;
        rx_sb where = {0};
        rx_loc_render(&r->m->locs, l->loc, &where);
        rxi_rd_err(r, loc, "variable \"%s\" is not visible here: it is bound inside an if "
                          "branch (at %s)", name, rx_sb_str(&where));
        rx_sb_free(&where);
        return NULL;
    }
    const later_binding *lb = r->fn_body ? find_later(r, name) : NULL;
    if (lb && binding_open(r, lb->binding)) {
        rxi_rd_err(r, loc, "unknown variable \"%.60s\" (a binding cannot use its own "
                          "variable)", name);
    } else if (lb) {
        rx_sb where = {0};
        rx_loc_render(&r->m->locs, lb->loc, &where);
        rxi_rd_err(r, loc, "variable \"%.60s\" is used before its binding at %s", name,
                  rx_sb_str(&where));
        rx_sb_free(&where);
    } else {
        rxi_rd_err(r, loc, "unknown variable \"%.60s\"", name);
    }
    return NULL;
}

/* A "@name" reference: a GLOBAL node resolved to its function. */
static rx_node *use_global(rx_reader *r, const char *s, rx_loc loc)
{
    rx_func *f = rxi_rd_scope_get(&r->globals, s + 1, strlen(s + 1));
    if (!f) {
        rxi_rd_err(r, loc, "unknown function \"%.60s\"", s);
        return NULL;
    }
    rx_node *g = rx_n_global(r->m, f->name, f);
    g->loc = loc;
    return g;
}

/* ---------------------------------------------------------------- expressions */

/* The optional "args" list of a call; *ok is false after an error. */
static rx_node **read_args(rx_reader *r, const json_t *j, rx_loc loc, int *n, bool *ok)
{
    json_t *aj = json_object_get(j, "args");
    *n = 0;
    if (!aj) return NULL;
    rx_loc al = rxi_rd_key(r, loc, "args");
    if (!rxi_rd_want_array(r, aj, al, "a list of arguments")) {
        *ok = false;
        return NULL;
    }
    *n = (int)json_array_size(aj);
    rx_node **args = RX_NEWN(r->a, rx_node *, *n ? *n : 1);
    for (int i = 0; i < *n; i++) {
        args[i] = read_expr(r, json_array_get(aj, (size_t)i), rxi_rd_idx(r, al, i));
        *ok = *ok && args[i];
    }
    return args;
}

/* Parses a symbolic size attribute for rx_op_bind_attrs. */
static rx_expr *symparse(void *ud, const char *text, rx_loc loc)
{
    rx_reader *r = ud;
    return rxi_rd_parse(r, text, strlen(text), loc, RX_XP_SYM, RX_DT_UNKNOWN);
}

static rx_node *read_op(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_loc ol = rxi_rd_key(r, loc, "op");
    const char *name = rxi_rd_want_string(r, json_object_get(j, "op"), ol, "an op name");
    const rx_op *op = name ? rx_op_find(name) : NULL;
    if (name && !op) rxi_rd_err(r, ol, "unknown op \"%.60s\"", name);
    int n;
    bool ok = op != NULL;
    rx_node **args = read_args(r, j, loc, &n, &ok);
    if (op && (n < op->min_args || n > op->max_args)) {
        rx_loc al = json_object_get(j, "args") ? rxi_rd_key(r, loc, "args") : loc;
        if (op->min_args == op->max_args)
            rxi_rd_err(r, al, "op \"%s\" takes %d argument%s, found %d", op->name, op->min_args,
                      op->min_args == 1 ? "" : "s", n);
        else
            rxi_rd_err(r, al, "op \"%s\" takes %d to %d arguments, found %d", op->name,
                      op->min_args, op->max_args, n);
        ok = false;
    }
    json_t *aj = json_object_get(j, "attrs");
    rx_attr *given = NULL;
    rx_loc atl = loc;
    if (aj) {
        atl = rxi_rd_key(r, loc, "attrs");
        if (rxi_rd_want_object(r, aj, atl, "op attributes")) given = rxi_rd_attr(r, aj, atl);
        else ok = false;
    }
    if (!op || (aj && !given)) return NULL;
    int before = rx_diags_count(r->d);
    rx_attr **attrs = rx_op_bind_attrs(r->m, op, given, atl, symparse, r, r->d);
    if (!ok || rx_diags_count(r->d) != before) return NULL;
    rx_node *c = rx_n_call_op(r->m, op, args, n, attrs);
    c->loc = loc;
    return c;
}

/* The `out` annotation of a DPS call: a tensor or a tuple of tensors. */
static rx_sinfo *read_out(rx_reader *r, const json_t *j, rx_loc loc)
{
    json_t *oj = rxi_rd_get(r, j, loc, "out", true);
    if (!oj) return NULL;
    rx_loc ol = rxi_rd_key(r, loc, "out");
    rx_sinfo *s = rxi_rd_sinfo(r, oj, ol);
    if (!s) return NULL;
    bool ok = s->kind == RX_SI_TENSOR;
    if (s->kind == RX_SI_TUPLE) {
        ok = true;
        for (int i = 0; i < s->nfields; i++) ok = ok && s->fields[i]->kind == RX_SI_TENSOR;
    }
    if (!ok) {
        rxi_rd_err(r, ol, "\"out\" must be a tensor annotation or a tuple of them, found %s",
                  rx_sinfo_str(r->a, s));
        return NULL;
    }
    return s;
}

/* The callee of call_tir / call: "@name" of a function of kind `want`. */
static rx_node *read_callee(rx_reader *r, const json_t *cj, rx_loc cl, rx_fkind want,
                            bool allow_local)
{
    const char *s = json_string_value(cj);
    if (!s || (!allow_local && s[0] != '@')) {
        rxi_rd_err(r, cl, "expected \"@name\" of a %s function%s, found %s",
                  want == RX_F_TIR ? "loop-level (tir)" : "graph-level",
                  allow_local ? " or a variable" : "", rxi_rd_desc(r, cj));
        return NULL;
    }
    if (s[0] != '@') return use_var(r, s, cl);
    rx_node *g = use_global(r, s, cl);
    if (g && g->u.global.fn->kind != want) {
        if (want == RX_F_TIR)
            rxi_rd_err(r, cl, "call_tir needs a loop-level (tir) function, but %s is a "
                             "graph-level (relax) function", s);
        else
            rxi_rd_err(r, cl, "%s is a loop-level (tir) function: call it with call_tir", s);
        return NULL;
    }
    return g;
}

static rx_node *read_call_tir(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_node *callee = read_callee(r, json_object_get(j, "call_tir"),
                                  rxi_rd_key(r, loc, "call_tir"), RX_F_TIR, false);
    int n, ntv = 0;
    bool ok = callee != NULL;
    rx_node **args = read_args(r, j, loc, &n, &ok);
    rx_sinfo *out = read_out(r, j, loc);
    rx_expr **tv = NULL;
    json_t *tj = json_object_get(j, "tir_vars");
    if (tj) {
        rx_loc tl = rxi_rd_key(r, loc, "tir_vars");
        if (rxi_rd_want_array(r, tj, tl, "a list of symbolic values")) {
            ntv = (int)json_array_size(tj);
            tv = RX_NEWN(r->a, rx_expr *, ntv ? ntv : 1);
            for (int i = 0; i < ntv; i++) {
                tv[i] = rxi_rd_dim(r, json_array_get(tj, (size_t)i), rxi_rd_idx(r, tl, i), INT64_MIN);
                ok = ok && tv[i];
            }
        } else {
            ok = false;
        }
    }
    if (!ok || !out) return NULL;
    rx_node *c = rx_n_call_tir(r->m, callee, args, n, out, tv, ntv);
    c->loc = loc;
    return c;
}

static rx_node *read_call_lib(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_loc nl = rxi_rd_key(r, loc, "call_dps_library");
    const char *name = rxi_rd_want_string(r, json_object_get(j, "call_dps_library"), nl,
                                         "a library function name");
    if (name && !name[0]) rxi_rd_err(r, nl, "empty library function name");
    int n;
    bool ok = name && name[0];
    rx_node **args = read_args(r, j, loc, &n, &ok);
    rx_sinfo *out = read_out(r, j, loc);
    if (!ok || !out) return NULL;
    rx_node *c = rx_n_call_lib(r->m, rx_arena_strdup(r->a, name), args, n, out);
    c->loc = loc;
    return c;
}

static rx_node *read_call(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_node *callee = read_callee(r, json_object_get(j, "call"), rxi_rd_key(r, loc, "call"),
                                  RX_F_RELAX, true);
    int n;
    bool ok = callee != NULL;
    rx_node **args = read_args(r, j, loc, &n, &ok);
    if (!ok) return NULL;
    rx_node *c = rx_n_call_fn(r->m, callee, args, n);
    c->loc = loc;
    return c;
}

static rx_node *read_const(rx_reader *r, const json_t *j, rx_loc loc)
{
    json_t *v = json_object_get(j, "const"), *dt = json_object_get(j, "dtype");
    rx_loc vl = rxi_rd_key(r, loc, "const");
    rx_const *c = NULL;
    if ((json_is_string(v) || json_is_object(v)) && dt) {
        rxi_rd_err(r, rxi_rd_key(r, loc, "dtype"), "\"dtype\" is only allowed with a scalar "
                                                 "constant");
        return NULL;
    }
    if (json_is_string(v)) {
        c = rxi_rd_scope_get(&r->consts, json_string_value(v), json_string_length(v));
        if (!c) rxi_rd_err(r, vl, "unknown constant %s", rxi_rd_desc(r, v));
        else if (c->ndim < 0) return NULL; /* its definition was invalid (reported there) */
    } else if (json_is_object(v)) {
        c = rxi_rd_const_obj(r, v, vl, NULL);
    } else {
        c = rxi_rd_const_scalar(r, v, dt, vl, rxi_rd_key(r, loc, "dtype"));
    }
    if (!c) return NULL;
    rx_node *e = rx_n_const(r->m, c);
    e->loc = loc;
    return e;
}

static rx_node *read_prim_expr(rx_reader *r, const json_t *j, rx_loc loc)
{
    json_t *dt = json_object_get(j, "dtype");
    rx_dtype t = RX_DT_I64;
    if (dt && !rxi_rd_dtype(r, dt, rxi_rd_key(r, loc, "dtype"), &t)) return NULL;
    rx_expr *e = rxi_rd_prim_value(r, json_object_get(j, "prim"), t, rxi_rd_key(r, loc, "prim"));
    if (!e) return NULL;
    rx_node *p = rx_n_primval(r->m, e);
    p->loc = loc;
    return p;
}

/* A branch body of `if`: its bindings (and match_cast variables) are local to it. */
static rx_seq *read_branch(rx_reader *r, const json_t *j, rx_loc loc)
{
    int lmark = r->locals.e.n, smark = r->syms.e.n;
    rx_seq *s = read_seq(r, j, loc);
    for (int i = lmark; i < r->locals.e.n; i++) ((rxi_rd_local *)RX_RD_AT(r->locals, i))->hidden = true;
    rxi_rd_scope_pop(&r->syms, smark);
    return s;
}

static rx_node *read_if(rx_reader *r, const json_t *j, rx_loc loc)
{
    if (r->in_dataflow) {
        rxi_rd_err(r, loc, "control flow (if) is not allowed in a dataflow block");
        return NULL;
    }
    rx_node *c = read_expr(r, json_object_get(j, "if"), rxi_rd_key(r, loc, "if"));
    json_t *tj = rxi_rd_get(r, j, loc, "then", true), *ej = rxi_rd_get(r, j, loc, "else", true);
    rx_seq *t = tj ? read_branch(r, tj, rxi_rd_key(r, loc, "then")) : NULL;
    rx_seq *e = ej ? read_branch(r, ej, rxi_rd_key(r, loc, "else")) : NULL;
    if (!c || !t || !e) return NULL;
    rx_node *n = rx_n_if(r->m, c, t, e);
    n->loc = loc;
    return n;
}

static const char *const EXPR_KINDS[] = {"op", "call_tir", "call_dps_library", "call", "tuple",
                                         "get_item", "shape", "const", "prim", "if", NULL};

/* Key sets per kind, in the order of EXPR_KINDS. */
static const char *const EXPR_KEYS[][5] = {
    {"op", "args", "attrs", NULL},
    {"call_tir", "args", "out", "tir_vars", NULL},
    {"call_dps_library", "args", "out", NULL},
    {"call", "args", NULL},
    {"tuple", NULL},
    {"get_item", "index", NULL},
    {"shape", NULL},
    {"const", "dtype", NULL},
    {"prim", "dtype", NULL},
    {"if", "then", "else", NULL},
};

/* Reads the expression object j (kind `k`, an index into EXPR_KINDS). */
static rx_node *read_expr_obj(rx_reader *r, const json_t *j, rx_loc loc, int k)
{
    if (!rxi_rd_keys(r, j, loc, EXPR_KEYS[k])) return NULL;
    json_t *v = json_object_get(j, EXPR_KINDS[k]);
    rx_loc vl = rxi_rd_key(r, loc, EXPR_KINDS[k]);
    switch (k) {
    case 0: return read_op(r, j, loc);
    case 1: return read_call_tir(r, j, loc);
    case 2: return read_call_lib(r, j, loc);
    case 3: return read_call(r, j, loc);
    case 4: { /* tuple */
        if (!rxi_rd_want_array(r, v, vl, "a list of tuple fields")) return NULL;
        int n = (int)json_array_size(v);
        bool ok = true;
        rx_node **fs = RX_NEWN(r->a, rx_node *, n ? n : 1);
        for (int i = 0; i < n; i++) {
            fs[i] = read_expr(r, json_array_get(v, (size_t)i), rxi_rd_idx(r, vl, i));
            ok = ok && fs[i];
        }
        if (!ok) return NULL;
        rx_node *t = rx_n_tuple(r->m, fs, n);
        t->loc = loc;
        return t;
    }
    case 5: { /* get_item */
        rx_node *t = read_expr(r, v, vl);
        json_t *ij = rxi_rd_get(r, j, loc, "index", true);
        if (ij && (!json_is_integer(ij) || json_integer_value(ij) < 0 ||
                   json_integer_value(ij) > INT32_MAX)) {
            rxi_rd_err(r, rxi_rd_key(r, loc, "index"), "expected a non-negative integer index, "
                                                     "found %s", rxi_rd_desc(r, ij));
            return NULL;
        }
        if (!t || !ij) return NULL;
        rx_node *g = rx_n_get_item(r->m, t, (int)json_integer_value(ij));
        g->loc = loc;
        return g;
    }
    case 6: { /* shape */
        if (!rxi_rd_want_array(r, v, vl, "a list of dimensions")) return NULL;
        int n = (int)json_array_size(v);
        bool ok = true;
        rx_expr **dims = RX_NEWN(r->a, rx_expr *, n ? n : 1);
        for (int i = 0; i < n; i++) {
            dims[i] = rxi_rd_dim(r, json_array_get(v, (size_t)i), rxi_rd_idx(r, vl, i), -1);
            ok = ok && dims[i];
        }
        if (!ok) return NULL;
        rx_node *s = rx_n_shape(r->m, dims, n);
        s->loc = loc;
        return s;
    }
    case 7: return read_const(r, j, loc);
    case 8: return read_prim_expr(r, j, loc);
    default: return read_if(r, j, loc);
    }
}

/* An expression: a variable name, "@global", or an object with one kind key. */
static rx_node *read_expr(rx_reader *r, const json_t *j, rx_loc loc)
{
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        return s[0] == '@' ? use_global(r, s, loc) : use_var(r, s, loc);
    }
    if (!json_is_object(j)) {
        rxi_rd_err(r, loc, "expected an expression (a variable name, \"@function\" or an "
                          "object), found %s", rxi_rd_desc(r, j));
        return NULL;
    }
    int kind = -1;
    for (int k = 0; EXPR_KINDS[k]; k++) {
        if (!json_object_get(j, EXPR_KINDS[k])) continue;
        if (kind >= 0) {
            rxi_rd_err(r, loc, "an expression has one kind key, found both \"%s\" and \"%s\"",
                      EXPR_KINDS[kind], EXPR_KINDS[k]);
            return NULL;
        }
        kind = k;
    }
    if (kind < 0) {
        rxi_rd_err(r, loc, "expected an expression object with one of the keys: op, call_tir, "
                          "call_dps_library, call, tuple, get_item, shape, const, prim, if");
        return NULL;
    }
    return read_expr_obj(r, j, loc, kind);
}

/* ---------------------------------------------------------------- bodies */

/* One binding into *b; the variable is bound even when its value has errors, so that
 * later uses do not report it again. */
static void read_binding(rx_reader *r, const json_t *j, rx_loc loc, bool dataflow, rx_binding *b)
{
    static const char *const keys[] = {"var", "value", "match_cast", "type", NULL};
    b->loc = loc;
    if (!rxi_rd_want_object(r, j, loc, "a binding")) return;
    rxi_rd_keys(r, j, loc, keys);
    json_t *vj = rxi_rd_get(r, j, loc, "var", true), *val = json_object_get(j, "value"),
           *mc = json_object_get(j, "match_cast"), *ty = json_object_get(j, "type");
    if (val && mc) {
        rxi_rd_err(r, loc, "a binding has \"value\" or \"match_cast\", not both");
        return;
    }
    if (!val && !mc) {
        rxi_rd_err(r, loc, "missing key \"value\" (or \"match_cast\")");
        return;
    }
    b->match_cast = mc != NULL;
    RX_VEC_PUSH(r->open, j);
    b->value = read_expr(r, mc ? mc : val, rxi_rd_key(r, loc, mc ? "match_cast" : "value"));
    r->open.n--;
    if (mc && !ty) rxi_rd_err(r, loc, "missing key \"type\" (match_cast needs the annotation)");
    if (ty) {
        if (mc) rxi_rd_predefine(r, ty);
        b->given = rxi_rd_sinfo(r, ty, rxi_rd_key(r, loc, "type"));
    }
    rx_loc vl = rxi_rd_key(r, loc, "var");
    const char *name = vj ? rxi_rd_ident(r, vj, vl, "a variable") : NULL;
    if (name && may_bind(r, name, vl)) b->var = bind_var(r, name, b->given, dataflow, false, vl);
}

static rx_block *read_block(rx_reader *r, const json_t *j, rx_loc loc)
{
    static const char *const keys[] = {"dataflow", "bindings", NULL};
    if (!rxi_rd_want_object(r, j, loc, "a block")) return NULL;
    rxi_rd_keys(r, j, loc, keys);
    rx_block *b = RX_NEW(r->a, rx_block);
    b->loc = loc;
    json_t *df = json_object_get(j, "dataflow"), *bs = rxi_rd_get(r, j, loc, "bindings", true);
    if (df && !json_is_boolean(df))
        rxi_rd_err(r, rxi_rd_key(r, loc, "dataflow"), "expected true or false, found %s",
                  rxi_rd_desc(r, df));
    b->dataflow = json_is_true(df);
    rx_loc bl = rxi_rd_key(r, loc, "bindings");
    if (!bs || !rxi_rd_want_array(r, bs, bl, "a list of bindings")) return b;
    b->nbindings = (int)json_array_size(bs);
    b->bindings = RX_NEWN(r->a, rx_binding, b->nbindings ? b->nbindings : 1);
    bool saved = r->in_dataflow;
    r->in_dataflow = b->dataflow;
    for (int i = 0; i < b->nbindings; i++)
        read_binding(r, json_array_get(bs, (size_t)i), rxi_rd_idx(r, bl, i), b->dataflow,
                     &b->bindings[i]);
    r->in_dataflow = saved;
    return b;
}

static rx_seq *read_seq(rx_reader *r, const json_t *j, rx_loc loc)
{
    static const char *const keys[] = {"blocks", "result", NULL};
    if (!rxi_rd_want_object(r, j, loc, "a body {\"blocks\", \"result\"}")) return NULL;
    rxi_rd_keys(r, j, loc, keys);
    rx_seq *s = RX_NEW(r->a, rx_seq);
    s->loc = loc;
    json_t *bs = json_object_get(j, "blocks"), *res = rxi_rd_get(r, j, loc, "result", true);
    rx_loc bl = rxi_rd_key(r, loc, "blocks");
    bool saved = r->in_dataflow;
    r->in_dataflow = false;
    if (bs && rxi_rd_want_array(r, bs, bl, "a list of blocks")) {
        s->nblocks = (int)json_array_size(bs);
        s->blocks = RX_NEWN(r->a, rx_block *, s->nblocks ? s->nblocks : 1);
        for (int i = 0; i < s->nblocks; i++)
            s->blocks[i] = read_block(r, json_array_get(bs, (size_t)i), rxi_rd_idx(r, bl, i));
    }
    if (res) s->result = read_expr(r, res, rxi_rd_key(r, loc, "result"));
    r->in_dataflow = saved;
    return s->result ? s : NULL;
}

/* ---------------------------------------------------------------- functions */

void rxi_rd_relax_func(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc)
{
    static const char *const keys[] = {"kind", "params", "ret", "attrs", "body", NULL};
    static const char *const pkeys[] = {"name", "type", NULL};
    rxi_rd_keys(r, j, loc, keys);
    json_t *ps = rxi_rd_get(r, j, loc, "params", true);
    rx_loc pl = rxi_rd_key(r, loc, "params");
    int n = 0;
    if (ps && rxi_rd_want_array(r, ps, pl, "a list of parameters")) n = (int)json_array_size(ps);
    /* Step 1: every whole-dimension identifier of every parameter is defined. */
    for (int i = 0; i < n; i++) {
        json_t *p = json_array_get(ps, (size_t)i);
        if (json_is_object(p)) rxi_rd_predefine(r, json_object_get(p, "type"));
    }
    f->nsvars = r->syms.e.n;
    f->svars = RX_NEWN(r->a, const rx_svar *, f->nsvars ? f->nsvars : 1);
    for (int i = 0; i < f->nsvars; i++) f->svars[i] = RX_RD_AT(r->syms, i);
    /* Step 2: the annotations, with all of them in scope; then the VARs. */
    f->nparams = n;
    f->params = RX_NEWN(r->a, rx_node *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        json_t *p = json_array_get(ps, (size_t)i);
        rx_loc l = rxi_rd_idx(r, pl, i);
        if (!rxi_rd_want_object(r, p, l, "a parameter {\"name\", \"type\"}")) continue;
        rxi_rd_keys(r, p, l, pkeys);
        json_t *nj = rxi_rd_get(r, p, l, "name", true), *tj = rxi_rd_get(r, p, l, "type", true);
        rx_sinfo *si = tj ? rxi_rd_sinfo(r, tj, rxi_rd_key(r, l, "type")) : NULL;
        rx_loc nl = rxi_rd_key(r, l, "name");
        const char *name = nj ? rxi_rd_ident(r, nj, nl, "a parameter") : NULL;
        if (!name) continue;
        rxi_rd_local *old = find_local(r, name);
        if (old) rxi_rd_err(r, nl, "duplicate parameter \"%s\"", name);
        else f->params[i] = bind_var(r, name, si, false, true, l);
    }
    json_t *rt = json_object_get(j, "ret");
    if (rt) f->ret_given = rxi_rd_sinfo(r, rt, rxi_rd_key(r, loc, "ret"));
    json_t *at = json_object_get(j, "attrs");
    if (at) f->attrs = rxi_rd_func_attrs(r, f, at, rxi_rd_key(r, loc, "attrs"));
    json_t *body = rxi_rd_get(r, j, loc, "body", true);
    r->fn_body = body;
    r->fn_body_loc = rxi_rd_key(r, loc, "body");
    rxi_rd_scope_pop(&r->later, 0);
    r->later_built = false;
    if (body) f->body = read_seq(r, body, r->fn_body_loc);
    r->fn_body = NULL;
}
