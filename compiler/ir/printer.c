/*
 * printer.c — the module in the paper's notation (TVMScript-like), for people and for
 * golden files.
 *
 * Graph functions print as `@R.function def f(x: R.Tensor((n, 4), "f32")) -> ...:`,
 * then the symbolic variables the function defines (`n = T.int64()`, signature first,
 * then those match_cast defines), the attributes (`R.func_attr({...})`), the bindings
 * and `return`. Every binding carries its variable's annotation (the deduced one; the
 * written one before deduction; none when neither exists). Dataflow blocks are
 * `with R.dataflow():` sections. An `if` binding prints as
 *
 *     if cond:
 *         ...bindings of the then branch...
 *         lv: A = then_result
 *     else:
 *         ...
 *         lv: A = else_result
 *
 * Loop functions print as `@T.prim_func` with `T.Buffer` parameters, `for` loops
 * (`range`, `T.parallel`, `T.vectorized`, `T.unroll`, `T.thread_binding`), blocks with
 * their iterators and `with T.init():`, stores, allocs, if/else and let (`v = e`
 * followed by its body when it ends its list, else `with T.LetStmt(e) as v:`). A loop
 * from a nonzero min prints `range(min, end)` with end = min + extent simplified by
 * the arithmetic (`range(1, n)`, not `range(1, 1 + (n - 1))`).
 *
 * Block iterators. An iterator with its own variable prints as TVMScript does,
 * `vi = T.axis.spatial(n, i)` (domain [0, n), bound to the loop value i). An iterator
 * that IS the enclosing loop's variable (bound to itself: the iterators the reader
 * derives when a block omits `iters`) would print as the redundant `i = T.axis...(n,
 * i)`; instead each run of such iterators prints as one comment line naming the
 * variable, its kind and its domain, in iterator order:
 *
 *     with T.block("C"):
 *         # i: spatial(n), j: spatial(4), k: reduce(128)
 *
 * The line is a comment so the text stays Python-shaped; it still carries everything
 * the iterators hold (the binding is the variable itself).
 *
 * Variables print by name, made unique per function by names.c. Attribute maps print
 * with sorted keys; op attributes print in schema order as keyword arguments, except
 * those equal to the schema's default (`R.unique(x)`, `R.nn.softmax(x, axis=0)`;
 * floats compare by value, so `epsilon=1e-05` is omitted when the default is 1e-5),
 * so the text depends only on the module. Scalar expressions print through
 * rx_expr_print.
 */
#include "relax/text.h"

#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "relax/op.h"

typedef struct pctx {
    const rx_module *m;
    rx_names *nm;  /* names of the function being printed (NULL outside one) */
    rx_arena *tmp; /* scratch expressions (range ends, store targets) */
    rx_arith *ar;  /* simplifies range ends; no variable bounds, results in tmp */
    rx_sb *out;
} pctx;

static void indent(rx_sb *out, int level)
{
    for (int i = 0; i < level; i++) rx_sb_puts(out, "    ");
}

static void put_quoted(rx_sb *out, const char *s)
{
    rx_sb_putc(out, '"');
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') rx_sb_printf(out, "\\%c", ch);
        else if (ch == '\n') rx_sb_puts(out, "\\n");
        else if (ch < 0x20) rx_sb_printf(out, "\\x%02x", ch);
        else rx_sb_putc(out, (char)ch);
    }
    rx_sb_putc(out, '"');
}

static const char *long_dtype(rx_dtype t)
{
    static const char *const names[RX_DT_COUNT] = {
        "void",   "bool",   "int8",    "int16",   "int32",   "int64",   "uint8",
        "uint16", "uint32", "uint64",  "float16", "bfloat16", "float32", "float64"};
    return t < RX_DT_COUNT ? names[t] : "void";
}

/* Comma-separated expressions; a 1-element tuple (open "(") gets a trailing comma. */
static void put_dims(rx_names *nm, rx_expr **dims, int n, const char *open, const char *close,
                     rx_sb *out) {
    rx_sb_puts(out, open);
    for (int i = 0; i < n; i++) {
        if (i) rx_sb_puts(out, ", ");
        rx_names_expr(nm, dims[i], out);
    }
    if (n == 1 && open[0] == '(') rx_sb_putc(out, ',');
    rx_sb_puts(out, close);
}

static void put_sinfo(rx_names *nm, const rx_sinfo *s, rx_sb *out)
{
    if (!s) {
        rx_sb_puts(out, "R.Object");
        return;
    }
    bool dt = s->dtype != RX_DT_UNKNOWN;
    switch (s->kind) {
    case RX_SI_OBJECT: rx_sb_puts(out, "R.Object"); break;
    case RX_SI_PRIM:
        if (!s->value) {
            if (dt) rx_sb_printf(out, "R.Prim(\"%s\")", rx_dtype_name(s->dtype));
            else rx_sb_puts(out, "R.Prim");
            break;
        }
        rx_sb_puts(out, "R.Prim(");
        if (s->dtype != RX_DT_I64 && dt) rx_sb_printf(out, "\"%s\", ", rx_dtype_name(s->dtype));
        rx_sb_puts(out, "value=");
        rx_names_expr(nm, s->value, out);
        rx_sb_putc(out, ')');
        break;
    case RX_SI_SHAPE:
        if (s->dims) put_dims(nm, s->dims, s->ndim, "R.Shape([", "])", out);
        else if (s->ndim >= 0) rx_sb_printf(out, "R.Shape(ndim=%d)", (int)s->ndim);
        else rx_sb_puts(out, "R.Shape");
        break;
    case RX_SI_TENSOR:
        if (s->dims) {
            rx_sb_puts(out, "R.Tensor(");
            put_dims(nm, s->dims, s->ndim, "(", ")", out);
            if (dt) rx_sb_printf(out, ", \"%s\"", rx_dtype_name(s->dtype));
            rx_sb_putc(out, ')');
        } else if (s->ndim >= 0) {
            rx_sb_printf(out, "R.Tensor(ndim=%d", (int)s->ndim);
            if (dt) rx_sb_printf(out, ", dtype=\"%s\"", rx_dtype_name(s->dtype));
            rx_sb_putc(out, ')');
        } else if (dt) {
            rx_sb_printf(out, "R.Tensor(dtype=\"%s\")", rx_dtype_name(s->dtype));
        } else {
            rx_sb_puts(out, "R.Tensor");
        }
        break;
    case RX_SI_TUPLE:
        rx_sb_puts(out, "R.Tuple(");
        for (int i = 0; i < s->nfields; i++) {
            if (i) rx_sb_puts(out, ", ");
            put_sinfo(nm, s->fields[i], out);
        }
        rx_sb_putc(out, ')');
        break;
    case RX_SI_CALLABLE:
        rx_sb_puts(out, "R.Callable((");
        for (int i = 0; i < s->nfields; i++) {
            if (i) rx_sb_puts(out, ", ");
            put_sinfo(nm, s->fields[i], out);
        }
        rx_sb_puts(out, s->nfields == 1 ? ",), " : "), ");
        put_sinfo(nm, s->ret, out);
        rx_sb_putc(out, ')');
        break;
    default: rx_sb_puts(out, "R.Object"); break;
    }
}

/* Paper notation of an annotation; symbolic variables by their own names. */
void rx_sinfo_print(const rx_sinfo *s, rx_sb *out) { put_sinfo(NULL, s, out); }

/* The same as a string in arena a. */
char *rx_sinfo_str(rx_arena *a, const rx_sinfo *s)
{
    rx_sb b = {0};
    put_sinfo(NULL, s, &b);
    char *r = rx_arena_strdup(a, rx_sb_str(&b));
    rx_sb_free(&b);
    return r;
}

/* An attribute value in Python-like notation. `svkeys`: the map's keys are names of
 * symbolic variables (upper_bounds), printed by their function-unique names. */
static void put_attr(rx_names *nm, const rx_attr *a, bool svkeys, rx_sb *out)
{
    if (!a) {
        rx_sb_puts(out, "None");
        return;
    }
    switch (a->kind) {
    case RX_A_NULL: rx_sb_puts(out, "None"); break;
    case RX_A_BOOL: rx_sb_puts(out, a->u.b ? "True" : "False"); break;
    case RX_A_INT: rx_sb_printf(out, "%lld", (long long)a->u.i); break;
    case RX_A_FLOAT: rx_ir_fmt_double(a->u.f, false, out); break;
    case RX_A_STR: put_quoted(out, a->u.s); break;
    case RX_A_EXPR: rx_names_expr(nm, a->u.e, out); break;
    case RX_A_ARRAY:
        rx_sb_putc(out, '[');
        for (int i = 0; i < a->u.arr.n; i++) {
            if (i) rx_sb_puts(out, ", ");
            put_attr(nm, a->u.arr.items[i], false, out);
        }
        rx_sb_putc(out, ']');
        break;
    case RX_A_MAP: {
        int *ix = rx_attr_sorted_keys(a);
        rx_sb_putc(out, '{');
        for (int i = 0; i < a->u.map.n; i++) {
            const char *k = a->u.map.keys[ix[i]];
            if (i) rx_sb_puts(out, ", ");
            put_quoted(out, svkeys ? rx_names_svar_by_raw(nm, k) : k);
            rx_sb_puts(out, ": ");
            put_attr(nm, a->u.map.vals[ix[i]], !svkeys && strcmp(k, "upper_bounds") == 0, out);
        }
        rx_sb_putc(out, '}');
        free(ix);
        break;
    }
    default: rx_sb_puts(out, "None"); break;
    }
}

/* Compact JSON text of an attribute value, as the registry writes defaults; false for
 * kinds a default never has (symbolic expressions, maps). */
static bool json_lit(const rx_attr *a, rx_sb *out)
{
    if (!a || a->kind == RX_A_NULL) {
        rx_sb_puts(out, "null");
        return true;
    }
    switch (a->kind) {
    case RX_A_BOOL: rx_sb_puts(out, a->u.b ? "true" : "false"); return true;
    case RX_A_INT: rx_sb_printf(out, "%lld", (long long)a->u.i); return true;
    case RX_A_FLOAT: rx_ir_fmt_double(a->u.f, false, out); return true;
    case RX_A_STR: rx_sb_printf(out, "\"%s\"", a->u.s); return true;
    case RX_A_ARRAY:
        rx_sb_putc(out, '[');
        for (int i = 0; i < a->u.arr.n; i++) {
            if (i) rx_sb_putc(out, ',');
            if (!json_lit(a->u.arr.items[i], out)) return false;
        }
        rx_sb_putc(out, ']');
        return true;
    default: return false;
    }
}

/* True when the attribute holds the schema's default: a float compared numerically
 * with the default literal ("1e-5" is 1e-05), anything else as JSON text with the
 * spaces of the default removed. */
static bool is_default(const rx_attr *a, const rx_attr_spec *sp)
{
    if (!sp->dflt) return false;
    if (a && a->kind == RX_A_FLOAT) {
        char *end;
        double d = strtod(sp->dflt, &end);
        while (*end == ' ') end++;
        return end != sp->dflt && *end == '\0' && d == a->u.f;
    }
    rx_sb x = {0}, d = {0};
    bool same = json_lit(a, &x);
    for (const char *p = sp->dflt; *p; p++)
        if (*p != ' ') rx_sb_putc(&d, *p);
    same = same && strcmp(rx_sb_str(&x), rx_sb_str(&d)) == 0;
    rx_sb_free(&x);
    rx_sb_free(&d);
    return same;
}

static void put_scalar(const rx_const *k, size_t i, rx_sb *out)
{
    if (k->dtype == RX_DT_BOOL) rx_sb_puts(out, rx_ir_const_i64(k, i) ? "True" : "False");
    else if (rx_dtype_is_float(k->dtype))
        rx_ir_fmt_double(rx_ir_const_f64(k, i), k->dtype != RX_DT_F64, out);
    else if (k->dtype == RX_DT_U64)
        rx_sb_printf(out, "%llu", (unsigned long long)rx_ir_const_i64(k, i));
    else rx_sb_printf(out, "%lld", (long long)rx_ir_const_i64(k, i));
}

/* Nested lists of the elements of dimension d onward, starting at element *pos. */
static void put_elems(const rx_const *k, int d, size_t *pos, rx_sb *out)
{
    if (d == k->ndim) {
        put_scalar(k, (*pos)++, out);
        return;
    }
    rx_sb_putc(out, '[');
    for (int64_t i = 0; i < k->shape[d]; i++) {
        if (i) rx_sb_puts(out, ", ");
        put_elems(k, d + 1, pos, out);
    }
    rx_sb_putc(out, ']');
}

/* metadata["w0"] for a named constant; the values of a small inline one
 * (R.const([1, 2], "i32")); the shape of a large one (R.const((128, 256), "f32")). */
static void put_const(const rx_const *k, rx_sb *out)
{
    if (k->name) {
        rx_sb_puts(out, "metadata[");
        put_quoted(out, k->name);
        rx_sb_putc(out, ']');
        return;
    }
    rx_sb_puts(out, "R.const(");
    if (rx_ir_const_numel(k) <= 16) {
        size_t pos = 0;
        put_elems(k, 0, &pos, out);
    } else {
        rx_sb_putc(out, '(');
        for (int i = 0; i < k->ndim; i++)
            rx_sb_printf(out, "%s%lld", i ? ", " : "", (long long)k->shape[i]);
        rx_sb_puts(out, k->ndim == 1 ? ",)" : ")");
    }
    rx_sb_printf(out, ", \"%s\")", rx_dtype_name(k->dtype));
}

static void put_node(pctx *c, const rx_node *e);

/* The arguments of e between open and close; as a tuple, one element gets a comma. */
static void put_args(pctx *c, const rx_node *e, const char *open, const char *close, bool tuple)
{
    rx_sb_puts(c->out, open);
    for (int i = 0; i < e->nargs; i++) {
        if (i) rx_sb_puts(c->out, ", ");
        put_node(c, e->args[i]);
    }
    if (e->nargs == 1 && tuple) rx_sb_putc(c->out, ',');
    rx_sb_puts(c->out, close);
}

static void put_call(pctx *c, const rx_node *e)
{
    rx_sb *out = c->out;
    switch (e->call_kind) {
    case RX_CALL_OP: {
        const rx_op *op = e->u.call.op;
        rx_sb_printf(out, "R.%s(", op ? op->name : "?");
        for (int i = 0; i < e->nargs; i++) {
            if (i) rx_sb_puts(out, ", ");
            put_node(c, e->args[i]);
        }
        bool first = e->nargs == 0;
        for (int i = 0; op && e->u.call.attrs && i < op->nattrs; i++) {
            if (is_default(e->u.call.attrs[i], &op->attrs[i])) continue;
            rx_sb_printf(out, "%s%s=", first ? "" : ", ", op->attrs[i].name);
            put_attr(c->nm, e->u.call.attrs[i], false, out);
            first = false;
        }
        rx_sb_putc(out, ')');
        break;
    }
    case RX_CALL_TIR:
    case RX_CALL_LIB:
        if (e->call_kind == RX_CALL_TIR) {
            rx_sb_puts(out, "R.call_tir(");
            put_node(c, e->u.call.callee);
        } else {
            rx_sb_puts(out, "R.call_dps_library(");
            put_quoted(out, e->u.call.lib);
        }
        put_args(c, e, ", (", ")", true);
        rx_sb_puts(out, ", out=");
        put_sinfo(c->nm, e->u.call.out, out);
        if (e->u.call.ntir_vars > 0)
            put_dims(c->nm, e->u.call.tir_vars, e->u.call.ntir_vars, ", tir_vars=R.shape([", "])",
                     out);
        if (e->call_kind == RX_CALL_LIB && e->u.call.callee) { /* OpenCL's generated fallback */
            rx_sb_puts(out, ", fallback=");
            put_node(c, e->u.call.callee);
        }
        rx_sb_putc(out, ')');
        break;
    default:
        put_node(c, e->u.call.callee);
        put_args(c, e, "(", ")", false);
        break;
    }
}

static void put_node(pctx *c, const rx_node *e)
{
    rx_sb *out = c->out;
    if (!e) {
        rx_sb_puts(out, "None");
        return;
    }
    switch (e->kind) {
    case RX_N_VAR: rx_sb_puts(out, rx_names_var(c->nm, e)); break;
    case RX_N_GLOBAL: rx_sb_printf(out, "@%s", e->u.global.name); break;
    case RX_N_CONST: put_const(e->u.konst, out); break;
    case RX_N_PRIMVAL:
        rx_sb_puts(out, "R.prim_value(");
        rx_names_expr(c->nm, e->u.prim, out);
        rx_sb_putc(out, ')');
        break;
    case RX_N_SHAPE: put_dims(c->nm, e->u.shape.dims, e->u.shape.ndim, "R.shape([", "])", out); break;
    case RX_N_TUPLE:
        if (e->nargs == 0) rx_sb_puts(out, "R.tuple()");
        else put_args(c, e, "(", ")", true);
        break;
    case RX_N_GET_ITEM:
        put_node(c, e->args[0]);
        rx_sb_printf(out, "[%d]", (int)e->u.index);
        break;
    case RX_N_CALL: put_call(c, e); break;
    case RX_N_IF: /* only as a binding's value in normal form; elsewhere just results */
        rx_sb_puts(out, "R.if_(");
        put_node(c, e->args[0]);
        rx_sb_puts(out, ", ");
        put_node(c, e->u.if_.then_body ? e->u.if_.then_body->result : NULL);
        rx_sb_puts(out, ", ");
        put_node(c, e->u.if_.else_body ? e->u.if_.else_body->result : NULL);
        rx_sb_putc(out, ')');
        break;
    default: rx_sb_puts(out, "?"); break;
    }
}

/* `lv: A = ` for a binding's variable (no annotation when none is known). */
static void put_lhs(pctx *c, const rx_binding *b, int level)
{
    indent(c->out, level);
    rx_sb_puts(c->out, rx_names_var(c->nm, b->var));
    const rx_sinfo *s = b->var->sinfo ? b->var->sinfo : b->given;
    if (s) {
        rx_sb_puts(c->out, ": ");
        put_sinfo(c->nm, s, c->out);
    }
    rx_sb_puts(c->out, " = ");
}

static void put_blocks(pctx *c, const rx_seq *s, int level);

static void put_binding(pctx *c, const rx_binding *b, int level)
{
    rx_sb *out = c->out;
    const rx_node *v = b->value;
    if (!b->match_cast && v && v->kind == RX_N_IF) {
        const rx_seq *br[2] = {v->u.if_.then_body, v->u.if_.else_body};
        for (int k = 0; k < 2; k++) {
            indent(out, level);
            if (k == 0) {
                rx_sb_puts(out, "if ");
                put_node(c, v->args[0]);
                rx_sb_puts(out, ":\n");
            } else {
                rx_sb_puts(out, "else:\n");
            }
            put_blocks(c, br[k], level + 1);
            put_lhs(c, b, level + 1);
            put_node(c, br[k] ? br[k]->result : NULL);
            rx_sb_putc(out, '\n');
        }
        return;
    }
    put_lhs(c, b, level);
    if (b->match_cast) {
        rx_sb_puts(out, "R.match_cast(");
        put_node(c, v);
        rx_sb_puts(out, ", ");
        put_sinfo(c->nm, b->given, out);
        rx_sb_putc(out, ')');
    } else {
        put_node(c, v);
    }
    rx_sb_putc(out, '\n');
}

static void put_blocks(pctx *c, const rx_seq *s, int level)
{
    for (int i = 0; s && i < s->nblocks; i++) {
        const rx_block *b = s->blocks[i];
        int l = level;
        if (b->dataflow) {
            indent(c->out, level);
            rx_sb_puts(c->out, "with R.dataflow():\n");
            l++;
            if (b->nbindings == 0) {
                indent(c->out, l);
                rx_sb_puts(c->out, "pass\n");
            }
        }
        for (int j = 0; j < b->nbindings; j++) put_binding(c, &b->bindings[j], l);
    }
}

/* The declarations and attributes that open a function body. */
static void put_preamble(pctx *c, const rx_func *f, const char *ns)
{
    int nd;
    const rx_svar *const *d = rx_names_decls(c->nm, &nd);
    for (int i = 0; i < nd; i++) {
        indent(c->out, 1);
        rx_sb_printf(c->out, "%s = T.%s()\n", rx_names_svar(c->nm, d[i]), long_dtype(d[i]->dtype));
    }
    if (f->attrs && f->attrs->kind == RX_A_MAP && f->attrs->u.map.n > 0) {
        indent(c->out, 1);
        rx_sb_printf(c->out, "%s.func_attr(", ns);
        put_attr(c->nm, f->attrs, false, c->out);
        rx_sb_puts(c->out, ")\n");
    }
}

static void put_relax_func(pctx *c, const rx_func *f)
{
    rx_sb *out = c->out;
    rx_sb_printf(out, "@R.function\ndef %s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
        rx_sb_printf(out, "%s%s: ", i ? ", " : "", rx_names_var(c->nm, f->params[i]));
        put_sinfo(c->nm, f->params[i]->sinfo, out);
    }
    rx_sb_putc(out, ')');
    const rx_sinfo *ret = f->ret ? f->ret : f->ret_given;
    if (ret) {
        rx_sb_puts(out, " -> ");
        put_sinfo(c->nm, ret, out);
    }
    rx_sb_puts(out, ":\n");
    put_preamble(c, f, "R");
    put_blocks(c, f->body, 1);
    indent(out, 1);
    rx_sb_puts(out, "return ");
    put_node(c, f->body ? f->body->result : NULL);
    rx_sb_putc(out, '\n');
}

/* buf[i, j] through rx_expr_print (so 0-d and renamed buffers print as loads do). */
static void put_access(pctx *c, rx_buffer *buf, rx_expr **idx, int n)
{
    rx_names_expr(c->nm, rx_e_load(c->tmp, buf, idx, n), c->out);
}

static void put_stmts(pctx *c, const rx_stmts *l, int level);

static void put_for(pctx *c, const rx_stmt *s, int level)
{
    static const char *const kinds[] = {"range", "T.parallel", "T.vectorized", "T.unroll"};
    rx_sb *out = c->out;
    int kind = s->u.for_.loop_kind < 4 ? s->u.for_.loop_kind : 0;
    rx_sb_printf(out, "for %s in %s(", rx_names_svar(c->nm, s->u.for_.var),
                 s->u.for_.thread ? "T.thread_binding" : kinds[kind]);
    rx_expr *mn = s->u.for_.min;
    if (mn && !rx_expr_is_int(mn, 0)) {
        rx_names_expr(c->nm, mn, out);
        rx_sb_puts(out, ", ");
        rx_names_expr(c->nm, rx_arith_simplify(c->ar, rx_e_binary(c->tmp, RX_E_ADD, mn,
                                                                  s->u.for_.extent)), out);
    } else {
        rx_names_expr(c->nm, s->u.for_.extent, out);
    }
    if (s->u.for_.thread) {
        rx_sb_puts(out, ", thread=");
        put_quoted(out, s->u.for_.thread);
        if (kind) rx_sb_printf(out, ", kind=\"%s\"", rx_loopkind_name((rx_loopkind)kind));
    }
    rx_sb_puts(out, "):\n");
    put_stmts(c, &s->u.for_.body, level + 1);
}

/* True when the iterator is bound to itself: the loop variable serving as the block
 * iterator (the reader's implicit iterators). */
static bool self_bound(const rx_iter *it)
{
    return it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var;
}

/* A block's iterators (header essay): `v = T.axis.kind(dom, bind)`, except that a run
 * of self-bound iterators prints as one comment line `# i: spatial(n), k: reduce(4)`. */
static void put_iters(pctx *c, const rx_stmt *s, int level)
{
    const rx_iter *its = s->u.block.iters;
    int n = s->u.block.niters;
    rx_sb *out = c->out;
    for (int i = 0; i < n;) {
        indent(out, level);
        if (!self_bound(&its[i])) {
            rx_sb_printf(out, "%s = T.axis.%s(", rx_names_svar(c->nm, its[i].var),
                         rx_iterkind_name((rx_iterkind)its[i].kind));
            rx_names_expr(c->nm, its[i].dom, out);
            rx_sb_puts(out, ", ");
            rx_names_expr(c->nm, its[i].bind, out);
            rx_sb_puts(out, ")\n");
            i++;
            continue;
        }
        for (int first = i; i < n && self_bound(&its[i]); i++) {
            rx_sb_printf(out, "%s%s: %s(", i == first ? "# " : ", ",
                         rx_names_svar(c->nm, its[i].var),
                         rx_iterkind_name((rx_iterkind)its[i].kind));
            rx_names_expr(c->nm, its[i].dom, out);
            rx_sb_putc(out, ')');
        }
        rx_sb_putc(out, '\n');
    }
}

static void put_stmt(pctx *c, const rx_stmt *s, int level, bool last)
{
    rx_sb *out = c->out;
    indent(out, level);
    switch (s->kind) {
    case RX_S_FOR: put_for(c, s, level); break;
    case RX_S_BLOCK:
        rx_sb_puts(out, "with T.block(");
        put_quoted(out, s->u.block.name ? s->u.block.name : "");
        rx_sb_puts(out, "):\n");
        put_iters(c, s, level + 1);
        if (s->u.block.init.n > 0) {
            indent(out, level + 1);
            rx_sb_puts(out, "with T.init():\n");
            put_stmts(c, &s->u.block.init, level + 2);
        }
        if (s->u.block.body.n > 0 || s->u.block.niters == 0) put_stmts(c, &s->u.block.body, level + 1);
        break;
    case RX_S_STORE:
        put_access(c, s->u.store.buf, s->u.store.idx, s->u.store.nidx);
        rx_sb_puts(out, " = ");
        rx_names_expr(c->nm, s->u.store.value, out);
        rx_sb_putc(out, '\n');
        break;
    case RX_S_ALLOC: {
        const rx_buffer *b = s->u.alloc.buf;
        rx_sb_printf(out, "%s = T.alloc_buffer(", rx_names_buf(c->nm, b));
        put_dims(c->nm, b->shape, b->ndim, "(", ")", out);
        rx_sb_printf(out, ", \"%s\"", rx_dtype_name(b->dtype));
        if (b->scope != RX_SCOPE_GLOBAL)
            rx_sb_printf(out, ", scope=\"%s\"", rx_scope_name((rx_scope)b->scope));
        rx_sb_puts(out, ")\n");
        break;
    }
    case RX_S_IF:
        rx_sb_puts(out, "if ");
        rx_names_expr(c->nm, s->u.if_.cond, out);
        rx_sb_puts(out, ":\n");
        put_stmts(c, &s->u.if_.then_s, level + 1);
        if (s->u.if_.else_s.n > 0) {
            indent(out, level);
            rx_sb_puts(out, "else:\n");
            put_stmts(c, &s->u.if_.else_s, level + 1);
        }
        break;
    case RX_S_LET:
        if (last) {
            rx_sb_printf(out, "%s = ", rx_names_svar(c->nm, s->u.let.var));
            rx_names_expr(c->nm, s->u.let.value, out);
            rx_sb_putc(out, '\n');
            for (int i = 0; i < s->u.let.body.n; i++)
                put_stmt(c, s->u.let.body.items[i], level, i == s->u.let.body.n - 1);
        } else {
            rx_sb_puts(out, "with T.LetStmt(");
            rx_names_expr(c->nm, s->u.let.value, out);
            rx_sb_printf(out, ") as %s:\n", rx_names_svar(c->nm, s->u.let.var));
            put_stmts(c, &s->u.let.body, level + 1);
        }
        break;
    default: rx_sb_puts(out, "?\n"); break;
    }
}

static void put_stmts(pctx *c, const rx_stmts *l, int level)
{
    if (l->n == 0) {
        indent(c->out, level);
        rx_sb_puts(c->out, "pass\n");
    }
    for (int i = 0; i < l->n; i++) put_stmt(c, l->items[i], level, i == l->n - 1);
}

static void put_tir_func(pctx *c, const rx_func *f)
{
    rx_sb *out = c->out;
    rx_sb_printf(out, "@T.prim_func\ndef %s(", f->name);
    for (int i = 0; i < f->ntparams; i++) {
        const rx_tparam *p = &f->tparams[i];
        if (i) rx_sb_puts(out, ", ");
        if (p->buf) {
            rx_sb_printf(out, "%s: T.Buffer(", rx_names_buf(c->nm, p->buf));
            put_dims(c->nm, p->buf->shape, p->buf->ndim, "(", ")", out);
            rx_sb_printf(out, ", \"%s\"", rx_dtype_name(p->buf->dtype));
            if (p->buf->scope != RX_SCOPE_GLOBAL)
                rx_sb_printf(out, ", scope=\"%s\"", rx_scope_name((rx_scope)p->buf->scope));
            rx_sb_putc(out, ')');
        } else if (p->var) {
            rx_sb_printf(out, "%s: T.%s", rx_names_svar(c->nm, p->var), long_dtype(p->var->dtype));
        }
    }
    rx_sb_puts(out, "):\n");
    put_preamble(c, f, "T");
    put_stmts(c, &f->tbody, 1);
}

/* Appends one function in the paper's notation. */
void rx_print_func(const rx_module *m, const rx_func *f, rx_sb *out)
{
    pctx c = {m, rx_names_new(f), rx_arena_new(), NULL, out};
    c.ar = rx_arith_new(c.tmp);
    if (f->kind == RX_F_TIR) put_tir_func(&c, f);
    else put_relax_func(&c, f);
    rx_arith_free(c.ar);
    rx_names_free(c.nm);
    rx_arena_free(c.tmp);
}

/* Appends the whole module: module attributes, named constants, then every function
 * in module order, separated by blank lines. */
void rx_print_module(const rx_module *m, rx_sb *out)
{
    bool head = false;
    if (m->attrs && m->attrs->kind == RX_A_MAP && m->attrs->u.map.n > 0) {
        rx_sb_puts(out, "I.module_attrs(");
        put_attr(NULL, m->attrs, false, out);
        rx_sb_puts(out, ")\n");
        head = true;
    }
    for (int i = 0; i < m->nconsts; i++) {
        const rx_const *k = m->consts[i];
        put_const(k, out);
        rx_sb_puts(out, ": R.Tensor(");
        rx_sb_putc(out, '(');
        for (int d = 0; d < k->ndim; d++)
            rx_sb_printf(out, "%s%lld", d ? ", " : "", (long long)k->shape[d]);
        rx_sb_printf(out, "%s), \"%s\")\n", k->ndim == 1 ? "," : "", rx_dtype_name(k->dtype));
        head = true;
    }
    for (int i = 0; i < m->nfuncs; i++) {
        if (i || head) rx_sb_putc(out, '\n');
        rx_print_func(m, m->funcs[i], out);
    }
}
