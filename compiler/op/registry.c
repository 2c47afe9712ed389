/*
 * registry.c — the operator table and the binding of written attributes to schemas.
 *
 * The table is the concatenation of the constant op groups listed in op_int.h
 * (RX_OP_GROUPS); nothing here is mutable, so lookups need no initialization. Lookup
 * is a linear scan over about a hundred names: cheap next to reading the JSON that
 * names the op.
 *
 * rx_op_bind_attrs turns the attribute object of a call, as the reader builds it from
 * JSON (strings as STR, numbers as INT or FLOAT, lists as ARRAY, null as NULL), into
 * an array with one typed entry per schema entry (op.h lists the kinds and the stored
 * forms). Every written value is checked against its kind; every absent one takes
 * the schema default, a JSON literal parsed here by a small literal parser and then
 * converted by the same code as a written value, so defaults and written values can
 * never disagree in form. All errors are collected (the reader reports every error of
 * a module in one run); any error makes the result NULL.
 */
#include "op_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct rx_opgroup {
    const rx_op *ops;  /* the group's array */
    const int *count;  /* its length (a pointer: the count is not a constant expression) */
} rx_opgroup;

#define RX_GROUP_ENTRY(arr, cnt) { arr, &cnt },
static const rx_opgroup groups[] = { RX_OP_GROUPS(RX_GROUP_ENTRY) };
#undef RX_GROUP_ENTRY

/* Returns the number of ops in the registry. */
int rx_op_count(void)
{
    int n = 0;
    for (int g = 0; g < RX_COUNTOF(groups); g++) n += *groups[g].count;
    return n;
}

/* Returns op i (0 <= i < rx_op_count()) in registry order, NULL when out of range. */
const rx_op *rx_op_at(int i)
{
    if (i < 0) return NULL;
    for (int g = 0; g < RX_COUNTOF(groups); g++) {
        if (i < *groups[g].count) return &groups[g].ops[i];
        i -= *groups[g].count;
    }
    return NULL;
}

/* Finds an op by TVM name ("nn.softmax" or "relax.nn.softmax"); NULL when unknown. */
const rx_op *rx_op_find(const char *name)
{
    if (!name) return NULL;
    if (strncmp(name, "relax.", 6) == 0) name += 6;
    for (int g = 0; g < RX_COUNTOF(groups); g++)
        for (int i = 0; i < *groups[g].count; i++)
            if (strcmp(groups[g].ops[i].name, name) == 0) return &groups[g].ops[i];
    return NULL;
}

/* Index of attribute `name` in op's schema, -1 when the schema has no such entry. */
int rx_op_attr_index(const rx_op *op, const char *name)
{
    for (int i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) return i;
    return -1;
}

/* The bound attribute `name` of an op call; the name must be in the op's schema and
 * the call's attrs must have been bound (rx_op_bind_attrs). Never NULL. */
const rx_attr *rx_call_attr(const rx_node *call, const char *name)
{
    RX_ASSERT(call->kind == RX_N_CALL && call->call_kind == RX_CALL_OP);
    int i = rx_op_attr_index(call->u.call.op, name);
    if (i < 0) rx_fatal(__FILE__, __LINE__, "op %s has no attribute \"%s\"",
                        call->u.call.op->name, name);
    RX_ASSERT(call->u.call.attrs && call->u.call.attrs[i]);
    return call->u.call.attrs[i];
}

/* ---------------------------------------------------------------- literal parser */
/* Parses the JSON literal of a schema default: integers, floats, true/false/null,
 * strings (escapes \" and \\ only), and lists of those. A malformed default is a bug
 * in a schema table, hence fatal. */
typedef struct rx_litp {
    const char *s;       /* cursor */
    const char *whole;   /* the literal, for the fatal message */
    rx_arena *a;         /* where the values go */
    rx_loc loc;          /* given to every value */
} rx_litp;

static void lit_fail(const rx_litp *p)
{
    rx_fatal(__FILE__, __LINE__, "malformed attribute default literal: %s", p->whole);
}

static void lit_ws(rx_litp *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n') p->s++;
}

static rx_attr *lit_value(rx_litp *p, int depth)
{
    lit_ws(p);
    rx_attr *v = RX_NEW(p->a, rx_attr);
    v->loc = p->loc;
    const char *s = p->s;
    if (strncmp(s, "null", 4) == 0) { v->kind = RX_A_NULL; p->s += 4; return v; }
    if (strncmp(s, "true", 4) == 0) { v->kind = RX_A_BOOL; v->u.b = true; p->s += 4; return v; }
    if (strncmp(s, "false", 5) == 0) { v->kind = RX_A_BOOL; p->s += 5; return v; }
    if (*s == '"') {
        rx_sb b = {0};
        for (s++; *s != '"'; s++) {
            if (!*s) lit_fail(p);
            if (*s == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
            rx_sb_putc(&b, *s);
        }
        p->s = s + 1;
        v->kind = RX_A_STR;
        v->u.s = rx_arena_strdup(p->a, rx_sb_str(&b));
        rx_sb_free(&b);
        return v;
    }
    if (*s == '[') {
        if (depth > 4) lit_fail(p);
        RX_VEC(rx_attr *) items = {0};
        p->s++;
        lit_ws(p);
        if (*p->s == ']') {
            p->s++;
        } else {
            for (;;) {
                RX_VEC_PUSH(items, lit_value(p, depth + 1));
                lit_ws(p);
                if (*p->s == ',') { p->s++; continue; }
                if (*p->s == ']') { p->s++; break; }
                lit_fail(p);
            }
        }
        v->kind = RX_A_ARRAY;
        v->u.arr.n = items.n;
        v->u.arr.items = items.n ? rx_arena_dup(p->a, items.items, sizeof(rx_attr *) * (size_t)items.n)
                                 : NULL;
        RX_VEC_FREE(items);
        return v;
    }
    if (*s == '-' || (*s >= '0' && *s <= '9')) {
        char *end;
        size_t span = strspn(s, "-+0123456789");
        if (s[span] == '.' || s[span] == 'e' || s[span] == 'E') {
            v->kind = RX_A_FLOAT;
            v->u.f = strtod(s, &end);
        } else {
            v->kind = RX_A_INT;
            v->u.i = strtoll(s, &end, 10);
        }
        if (end == s) lit_fail(p);
        p->s = end;
        return v;
    }
    lit_fail(p);
    return NULL;
}

static rx_attr *lit_parse(rx_arena *a, const char *text, rx_loc loc)
{
    rx_litp p = { text, text, a, loc };
    rx_attr *v = lit_value(&p, 0);
    lit_ws(&p);
    if (*p.s) lit_fail(&p);
    return v;
}

/* ---------------------------------------------------------------- binding */
typedef struct rx_binder {
    rx_module *m;        /* arena and location table */
    const rx_op *op;     /* the op whose schema applies */
    rx_symparse_fn sp;   /* parses symbolic size strings; may be NULL */
    void *ud;            /* for sp */
    rx_diags *d;         /* errors go here */
    bool is_default;     /* converting a schema default: errors are fatal */
} rx_binder;

static const char *kind_expect(const rx_attr_spec *s)
{
    switch (s->kind) {
    case RX_AT_BOOL: return s->nullable ? "a boolean or null" : "a boolean";
    case RX_AT_INT: return s->nullable ? "an integer or null" : "an integer";
    case RX_AT_FLOAT: return s->nullable ? "a number or null" : "a number";
    case RX_AT_STR: return s->nullable ? "a string or null" : "a string";
    case RX_AT_DTYPE: return s->nullable ? "a dtype name or null" : "a dtype name";
    case RX_AT_SIZE: return s->nullable ? "an integer, a symbolic size or null"
                                        : "an integer or a symbolic size";
    case RX_AT_INTS: return s->nullable ? "a list of integers or null" : "a list of integers";
    case RX_AT_SIZES: return s->nullable ? "a list of sizes or null" : "a list of sizes";
    case RX_AT_AXES: return s->nullable ? "an integer, a list of integers or null"
                                        : "an integer or a list of integers";
    case RX_AT_SCALAR: return s->nullable ? "a number, a boolean or null" : "a number or a boolean";
    case RX_AT_FLOATS: return s->nullable ? "a list of numbers or null" : "a list of numbers";
    case RX_AT_SPLIT: return s->nullable ? "an integer, a list of sizes or null"
                                         : "an integer or a list of sizes";
    default: RX_UNREACHABLE();
    }
}

/* Short description of a written value for "found ..." */
static void describe(const rx_attr *v, rx_sb *out)
{
    switch (v->kind) {
    case RX_A_NULL: rx_sb_puts(out, "null"); break;
    case RX_A_BOOL: rx_sb_puts(out, v->u.b ? "true" : "false"); break;
    case RX_A_INT: rx_sb_printf(out, "%lld", (long long)v->u.i); break;
    case RX_A_FLOAT: rx_sb_printf(out, "%g", v->u.f); break;
    case RX_A_STR: {
        size_t n = strlen(v->u.s);
        rx_sb_printf(out, "\"%.*s%s\"", n > 40 ? 40 : (int)n, v->u.s, n > 40 ? "..." : "");
        break;
    }
    case RX_A_EXPR: rx_sb_puts(out, "an expression"); break;
    case RX_A_ARRAY: rx_sb_puts(out, "a list"); break;
    case RX_A_MAP: rx_sb_puts(out, "an object"); break;
    default: rx_sb_puts(out, "a value"); break;
    }
}

/* Reports a wrong kind; `elem` is the offending value (an element of a list when
 * index >= 0). Returns NULL for the caller's convenience. */
static rx_attr *wrong(rx_binder *b, const rx_attr_spec *s, const rx_attr *elem, int index)
{
    rx_sb f = {0};
    describe(elem, &f);
    if (index >= 0) rx_sb_printf(&f, " at index %d", index);
    if (b->is_default)
        rx_fatal(__FILE__, __LINE__, "default of attribute \"%s\" of %s does not fit its kind",
                 s->name, b->op->name);
    rx_diag_at(b->d, &b->m->locs, elem->loc, "attribute \"%s\" of %s: expected %s, found %s",
               s->name, b->op->name, kind_expect(s), rx_sb_str(&f));
    rx_sb_free(&f);
    return NULL;
}

static rx_attr *new_attr(rx_binder *b, rx_akind k, rx_loc loc)
{
    rx_attr *r = RX_NEW(b->m->arena, rx_attr);
    r->kind = (uint8_t)k;
    r->loc = loc;
    return r;
}

/* A size: INT stays, EXPR stays, STR is parsed (a literal result becomes INT).
 * *failed is set when the parser reported an error itself. */
static rx_attr *conv_size(rx_binder *b, const rx_attr_spec *s, rx_attr *v, int index,
                          bool *failed) {
    if (v->kind == RX_A_INT || v->kind == RX_A_EXPR) return v;
    if (v->kind != RX_A_STR || !b->sp) return wrong(b, s, v, index);
    rx_expr *e = b->sp(b->ud, v->u.s, v->loc);
    if (!e) {
        *failed = true;
        return NULL;
    }
    rx_attr *r;
    int64_t k;
    if (rx_expr_is_const(e, &k)) {
        r = new_attr(b, RX_A_INT, v->loc);
        r->u.i = k;
    } else {
        r = new_attr(b, RX_A_EXPR, v->loc);
        r->u.e = e;
    }
    return r;
}

/* A list whose elements are integers (sizes when `sizes`); a lone element is taken
 * as a list of one, as TVM's Python API does for strides=1. */
static rx_attr *conv_list(rx_binder *b, const rx_attr_spec *s, rx_attr *v, bool sizes)
{
    bool failed = false;
    if (v->kind != RX_A_ARRAY) {
        rx_attr *one = sizes ? conv_size(b, s, v, -1, &failed)
                             : (v->kind == RX_A_INT ? v : wrong(b, s, v, -1));
        if (!one) return NULL;
        rx_attr *r = new_attr(b, RX_A_ARRAY, v->loc);
        r->u.arr.n = 1;
        r->u.arr.items = RX_NEWN(b->m->arena, rx_attr *, 1);
        r->u.arr.items[0] = one;
        return r;
    }
    rx_attr *r = new_attr(b, RX_A_ARRAY, v->loc);
    r->u.arr.n = v->u.arr.n;
    r->u.arr.items = RX_NEWN(b->m->arena, rx_attr *, v->u.arr.n > 0 ? v->u.arr.n : 1);
    bool ok = true;
    for (int i = 0; i < v->u.arr.n; i++) {
        rx_attr *e = v->u.arr.items[i];
        rx_attr *c = sizes ? conv_size(b, s, e, i, &failed)
                           : (e->kind == RX_A_INT ? e : wrong(b, s, e, i));
        if (!c) ok = false;
        r->u.arr.items[i] = c;
    }
    return ok ? r : NULL;
}

/* A list of numbers, each stored as FLOAT (an INT element is converted); a lone
 * number is a list of one. */
static rx_attr *conv_floats(rx_binder *b, const rx_attr_spec *s, rx_attr *v)
{
    bool lone = v->kind != RX_A_ARRAY;
    int n = lone ? 1 : v->u.arr.n;
    rx_attr *r = new_attr(b, RX_A_ARRAY, v->loc);
    r->u.arr.n = n;
    r->u.arr.items = RX_NEWN(b->m->arena, rx_attr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        rx_attr *e = lone ? v : v->u.arr.items[i];
        if (e->kind != RX_A_INT && e->kind != RX_A_FLOAT) return wrong(b, s, e, lone ? -1 : i);
        rx_attr *f = new_attr(b, RX_A_FLOAT, e->loc);
        f->u.f = e->kind == RX_A_INT ? (double)e->u.i : e->u.f;
        r->u.arr.items[i] = f;
    }
    return r;
}

/* Converts one written (or default) value to the stored form of its kind; NULL after
 * an error. */
static rx_attr *conv(rx_binder *b, const rx_attr_spec *s, rx_attr *v)
{
    bool failed = false;
    if (v->kind == RX_A_NULL) return s->nullable ? v : wrong(b, s, v, -1);
    switch (s->kind) {
    case RX_AT_BOOL: return v->kind == RX_A_BOOL ? v : wrong(b, s, v, -1);
    case RX_AT_INT: return v->kind == RX_A_INT ? v : wrong(b, s, v, -1);
    case RX_AT_STR: return v->kind == RX_A_STR ? v : wrong(b, s, v, -1);
    case RX_AT_FLOAT: {
        if (v->kind == RX_A_FLOAT) return v;
        if (v->kind != RX_A_INT) return wrong(b, s, v, -1);
        rx_attr *r = new_attr(b, RX_A_FLOAT, v->loc);
        r->u.f = (double)v->u.i;
        return r;
    }
    case RX_AT_DTYPE: {
        rx_dtype dt;
        if (v->kind != RX_A_STR || !rx_dtype_parse(v->u.s, &dt)) return wrong(b, s, v, -1);
        rx_attr *r = new_attr(b, RX_A_STR, v->loc);
        r->u.s = rx_dtype_name(dt);
        return r;
    }
    case RX_AT_SIZE: return conv_size(b, s, v, -1, &failed);
    case RX_AT_INTS: return conv_list(b, s, v, false);
    case RX_AT_SIZES: return conv_list(b, s, v, true);
    case RX_AT_AXES:
        if (v->kind == RX_A_INT) return v;
        return v->kind == RX_A_ARRAY ? conv_list(b, s, v, false) : wrong(b, s, v, -1);
    case RX_AT_SCALAR:
        return (v->kind == RX_A_INT || v->kind == RX_A_FLOAT || v->kind == RX_A_BOOL)
                   ? v : wrong(b, s, v, -1);
    case RX_AT_FLOATS: return conv_floats(b, s, v);
    case RX_AT_SPLIT:
        if (v->kind == RX_A_INT) return v;
        return v->kind == RX_A_ARRAY ? conv_list(b, s, v, true) : wrong(b, s, v, -1);
    default: RX_UNREACHABLE();
    }
}

static void unknown_attr(rx_binder *b, const char *key, rx_loc loc)
{
    if (b->op->nattrs == 0) {
        rx_diag_at(b->d, &b->m->locs, loc, "%s takes no attributes, found \"%s\"",
                   b->op->name, key);
        return;
    }
    rx_sb names = {0};
    for (int i = 0; i < b->op->nattrs; i++)
        rx_sb_printf(&names, "%s%s", i ? ", " : "", b->op->attrs[i].name);
    rx_diag_at(b->d, &b->m->locs, loc, "%s has no attribute \"%s\" (its attributes: %s)",
               b->op->name, key, rx_sb_str(&names));
    rx_sb_free(&names);
}

/* Binds written attributes to op's schema: one entry per schema entry, defaults for
 * the absent ones (op.h). Arrays and converted values live in m's arena; written
 * values already in stored form are shared, not copied. Returns NULL after reporting
 * errors to d (an op without attributes gets a non-NULL array nonetheless). */
rx_attr **rx_op_bind_attrs(rx_module *m, const rx_op *op, const rx_attr *given, rx_loc loc,
                           rx_symparse_fn sp, void *ud, rx_diags *d) {
    rx_binder b = { m, op, sp, ud, d, false };
    rx_attr **out = RX_NEWN(m->arena, rx_attr *, op->nattrs > 0 ? op->nattrs : 1);
    bool ok = true;
    if (given && given->kind == RX_A_NULL) given = NULL;
    if (given && given->kind != RX_A_MAP) {
        rx_sb f = {0};
        describe(given, &f);
        rx_diag_at(d, &m->locs, given->loc, "attributes of %s: expected an object, found %s",
                   op->name, rx_sb_str(&f));
        rx_sb_free(&f);
        return NULL;
    }
    int n = given ? given->u.map.n : 0;
    for (int k = 0; k < n; k++) {
        const char *key = given->u.map.keys[k];
        rx_attr *v = given->u.map.vals[k];
        int i = rx_op_attr_index(op, key);
        if (i < 0) {
            unknown_attr(&b, key, v->loc);
            ok = false;
            continue;
        }
        if (out[i]) {
            rx_diag_at(d, &m->locs, v->loc, "attribute \"%s\" of %s is given twice", key,
                       op->name);
            ok = false;
            continue;
        }
        rx_attr *c = conv(&b, &op->attrs[i], v);
        if (!c) {
            ok = false;
            continue;
        }
        out[i] = c;
    }
    for (int i = 0; i < op->nattrs; i++) {
        const rx_attr_spec *s = &op->attrs[i];
        if (out[i]) continue;
        if (!s->dflt) {
            if (!given || rx_attr_map_get(given, s->name) == NULL) {
                rx_diag_at(d, &m->locs, loc, "%s: missing required attribute \"%s\"", op->name,
                           s->name);
                ok = false;
            }
            continue;
        }
        rx_binder db = b;
        db.is_default = true;
        out[i] = conv(&db, s, lit_parse(m->arena, s->dflt, loc));
        RX_ASSERT(out[i]);
    }
    return ok ? out : NULL;
}
