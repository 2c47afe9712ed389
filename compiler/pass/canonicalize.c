/*
 * canonicalize.c — binding canonicalization and constant folding (TVM's
 * CanonicalizeBindings and FoldConstant, the C subset).
 *
 * One forward walk per graph function, bindings in definition order (uses follow
 * definitions in A-normal form, so one walk sees every chain), nested if bodies
 * included. Per binding:
 * Step 1: operands are rewritten through the replacement map.
 * Step 2: the value is simplified:
 *           get_item(t, k) where t is a tuple literal, or a variable bound to one,
 *             becomes field k;
 *           (p0, ..., pn-1) where each pi is bound to get_item(t, i) and t is a tuple
 *             of n fields becomes t;
 *           an op call of the folding subset whose operands are all constants (or
 *             variables bound to constants) becomes a new inline constant.
 * Step 3: a binding y = x (x a variable; not a match_cast) enters the replacement
 *         map y -> x, so later uses of y use x (relax-json keeps every variable visible
 *         to the rest of its function, dataflow or not, so x is always in scope).
 * The bindings made useless stay; dce removes them. Last, the module is deduced again.
 *
 * Folding subset, computed in C on the constant bytes, for f32, f64, i32 and i64
 * operands of one dtype (f32 arithmetic in float, as the kernels do; integer
 * arithmetic wraps as two's complement, as the kernels' does):
 *   add subtract multiply maximum minimum    same shape, or one operand 0-d
 *   divide                                   floats only (integer divide is left)
 *   negative
 *   reshape                                  bytes unchanged, static target shape
 *   zeros ones                               static shape
 * Results larger than FOLD_MAX_BYTES are not folded (a constant is stored in the
 * artifact; a small kernel is cheaper than a large blob).
 * Cost: linear in the module plus the bytes of the folded constants.
 */
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"

#define FOLD_MAX_BYTES (64 * 1024)

typedef struct cz_ctx {
    rx_module *m;
    rx_node **repl; /* variable id -> replacement (a VAR), or NULL */
    rx_node **def;  /* variable id -> bound value (not match_cast), or NULL */
    int nids;
} cz_ctx;

static rx_node *resolve(cz_ctx *c, rx_node *n)
{
    while (n && n->kind == RX_N_VAR && n->u.var.id >= 0 && n->u.var.id < c->nids &&
           c->repl[n->u.var.id])
        n = c->repl[n->u.var.id];
    return n;
}

static rx_node *def_of(cz_ctx *c, rx_node *n)
{
    if (n && n->kind == RX_N_VAR && n->u.var.id >= 0 && n->u.var.id < c->nids)
        return c->def[n->u.var.id];
    return NULL;
}

static void canon_seq(cz_ctx *c, rx_seq *s);

/* Rewrites operands of n (not n itself) through the map; recurses into if bodies. */
static void subst_operands(cz_ctx *c, rx_node *n)
{
    if (!n || n->kind == RX_N_VAR || n->kind == RX_N_GLOBAL || n->kind == RX_N_CONST) return;
    for (int i = 0; i < n->nargs; i++) {
        rx_node *a = n->args[i];
        if (a->kind == RX_N_VAR) n->args[i] = resolve(c, a);
        else subst_operands(c, a);
    }
    if (n->kind == RX_N_CALL && n->u.call.callee && n->u.call.callee->kind == RX_N_VAR)
        n->u.call.callee = resolve(c, n->u.call.callee);
    if (n->kind == RX_N_IF) {
        canon_seq(c, n->u.if_.then_body);
        canon_seq(c, n->u.if_.else_body);
    }
}

/* ---------------------------------------------------------------- folding */

static const rx_const *const_of(cz_ctx *c, rx_node *n)
{
    if (n && n->kind == RX_N_VAR) n = def_of(c, n);
    return n && n->kind == RX_N_CONST ? n->u.konst : NULL;
}

static bool foldable_dtype(rx_dtype t)
{
    return t == RX_DT_F32 || t == RX_DT_F64 || t == RX_DT_I32 || t == RX_DT_I64;
}

static int64_t numel(const rx_const *k)
{
    int64_t n = 1;
    for (int i = 0; i < k->ndim; i++) n *= k->shape[i];
    return n;
}

/* The static shape of the call's deduced tensor annotation; false if not static. */
static bool static_shape(cz_ctx *c, const rx_node *call, rx_dtype *dt, int *ndim, int64_t **shape)
{
    const rx_sinfo *s = call->sinfo;
    if (!s || s->kind != RX_SI_TENSOR || s->ndim < 0 || !s->dims || !foldable_dtype(s->dtype))
        return false;
    int64_t *sh = RX_NEWN(c->m->arena, int64_t, s->ndim + 1), n = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (!rx_expr_is_const(s->dims[i], &sh[i]) || sh[i] < 0) return false;
        n *= sh[i];
        if (n * (rx_dtype_bits(s->dtype) / 8) > FOLD_MAX_BYTES) return false;
    }
    *dt = s->dtype;
    *ndim = s->ndim;
    *shape = sh;
    return true;
}

static rx_const *new_const(cz_ctx *c, rx_dtype dt, int ndim, int64_t *shape)
{
    rx_const *k = RX_NEW(c->m->arena, rx_const);
    k->dtype = dt;
    k->ndim = ndim;
    k->shape = shape;
    k->nbytes = (size_t)numel(k) * (size_t)(rx_dtype_bits(dt) / 8);
    k->data = RX_NEWN(c->m->arena, uint8_t, k->nbytes + 1);
    return k;
}

typedef enum { F_ADD, F_SUB, F_MUL, F_DIV, F_MAX, F_MIN, F_NEG } fop;

static double fapply(fop op, double x, double y)
{
    switch (op) {
    case F_ADD: return x + y;
    case F_SUB: return x - y;
    case F_MUL: return x * y;
    case F_DIV: return x / y;
    case F_MAX: return x > y ? x : y;
    case F_MIN: return x < y ? x : y;
    default: return -x;
    }
}

static float fapplyf(fop op, float x, float y)
{
    switch (op) {
    case F_ADD: return x + y;
    case F_SUB: return x - y;
    case F_MUL: return x * y;
    case F_DIV: return x / y;
    case F_MAX: return x > y ? x : y;
    case F_MIN: return x < y ? x : y;
    default: return -x;
    }
}

static int64_t iapply(fop op, int64_t x, int64_t y)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y, r;
    switch (op) {
    case F_ADD: r = ux + uy; break;
    case F_SUB: r = ux - uy; break;
    case F_MUL: r = ux * uy; break;
    case F_MAX: return x > y ? x : y;
    case F_MIN: return x < y ? x : y;
    default: r = 0 - ux; break;
    }
    int64_t out;
    memcpy(&out, &r, sizeof out);
    return out;
}

/* Element i of k (0-d broadcasts), as double / int64 by dtype. */
#define ELEM(T, k, i) (((const T *)(k)->data)[(k)->ndim == 0 || numel(k) == 1 ? 0 : (i)])

static rx_const *fold_arith(cz_ctx *c, const rx_node *call, fop op, const rx_const *x,
                            const rx_const *y)
{
    rx_dtype dt;
    int ndim;
    int64_t *shape;
    if (!static_shape(c, call, &dt, &ndim, &shape) || x->dtype != dt || (y && y->dtype != dt))
        return NULL;
    if (op == F_DIV && !rx_dtype_is_float(dt)) return NULL;
    rx_const *r = new_const(c, dt, ndim, shape);
    int64_t n = numel(r);
    if (numel(x) != n && x->ndim != 0) return NULL;
    if (y && numel(y) != n && y->ndim != 0) return NULL;
    const rx_const *yy = y ? y : x;
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case RX_DT_F32: ((float *)r->data)[i] = fapplyf(op, ELEM(float, x, i), ELEM(float, yy, i)); break;
        case RX_DT_F64: ((double *)r->data)[i] = fapply(op, ELEM(double, x, i), ELEM(double, yy, i)); break;
        case RX_DT_I32:
            ((int32_t *)r->data)[i] = (int32_t)iapply(op, ELEM(int32_t, x, i), ELEM(int32_t, yy, i));
            break;
        default: ((int64_t *)r->data)[i] = iapply(op, ELEM(int64_t, x, i), ELEM(int64_t, yy, i)); break;
        }
    }
    return r;
}

static rx_const *fold_fill(cz_ctx *c, const rx_node *call, double v)
{
    rx_dtype dt;
    int ndim;
    int64_t *shape;
    if (!static_shape(c, call, &dt, &ndim, &shape)) return NULL;
    rx_const *r = new_const(c, dt, ndim, shape);
    int64_t n = numel(r);
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case RX_DT_F32: ((float *)r->data)[i] = (float)v; break;
        case RX_DT_F64: ((double *)r->data)[i] = v; break;
        case RX_DT_I32: ((int32_t *)r->data)[i] = (int32_t)v; break;
        default: ((int64_t *)r->data)[i] = (int64_t)v; break;
        }
    }
    return r;
}

static rx_node *try_fold(cz_ctx *c, rx_node *n)
{
    if (n->kind != RX_N_CALL || n->call_kind != RX_CALL_OP || !n->sinfo) return NULL;
    const char *op = n->u.call.op->name;
    if (strncmp(op, "relax.", 6) == 0) op += 6;
    static const struct { const char *name; fop op; } bins[] = {
        {"add", F_ADD}, {"subtract", F_SUB}, {"multiply", F_MUL}, {"divide", F_DIV},
        {"maximum", F_MAX}, {"minimum", F_MIN}};
    rx_const *r = NULL;
    for (int i = 0; i < RX_COUNTOF(bins) && !r; i++) {
        if (strcmp(op, bins[i].name) != 0 || n->nargs != 2) continue;
        const rx_const *x = const_of(c, n->args[0]), *y = const_of(c, n->args[1]);
        if (x && y) r = fold_arith(c, n, bins[i].op, x, y);
        if (!r) return NULL;
    }
    if (!r && strcmp(op, "negative") == 0 && n->nargs == 1) {
        const rx_const *x = const_of(c, n->args[0]);
        if (x) r = fold_arith(c, n, F_NEG, x, NULL);
    } else if (!r && strcmp(op, "reshape") == 0 && n->nargs >= 1) {
        const rx_const *x = const_of(c, n->args[0]);
        rx_dtype dt;
        int ndim;
        int64_t *shape;
        if (x && static_shape(c, n, &dt, &ndim, &shape) && dt == x->dtype) {
            r = new_const(c, dt, ndim, shape);
            if (r->nbytes != x->nbytes) return NULL;
            memcpy(r->data, x->data, x->nbytes);
        }
    } else if (!r && (strcmp(op, "zeros") == 0 || strcmp(op, "ones") == 0)) {
        r = fold_fill(c, n, op[0] == 'o' ? 1.0 : 0.0);
    }
    if (!r) return NULL;
    r->loc = n->loc;
    rx_node *k = rx_n_const(c->m, r);
    k->loc = n->loc;
    return k;
}

/* ---------------------------------------------------------------- bindings */

static rx_node *simplify(cz_ctx *c, rx_node *v)
{
    if (v->kind == RX_N_GET_ITEM) {
        rx_node *t = v->args[0];
        rx_node *lit = t->kind == RX_N_TUPLE ? t : def_of(c, t);
        if (lit && lit->kind == RX_N_TUPLE && v->u.index >= 0 && v->u.index < lit->nargs) {
            rx_node *f = lit->args[v->u.index];
            if (f->kind == RX_N_VAR || f->kind == RX_N_CONST || f->kind == RX_N_GLOBAL ||
                f->kind == RX_N_PRIMVAL || f->kind == RX_N_SHAPE)
                return resolve(c, f);
        }
    }
    if (v->kind == RX_N_TUPLE && v->nargs > 0) {
        rx_node *t = NULL;
        for (int i = 0; i < v->nargs; i++) {
            rx_node *g = v->args[i]->kind == RX_N_GET_ITEM ? v->args[i] : def_of(c, v->args[i]);
            if (!g || g->kind != RX_N_GET_ITEM || g->u.index != i || g->args[0]->kind != RX_N_VAR ||
                (t && g->args[0] != t))
                return v;
            t = g->args[0];
        }
        if (t && t->sinfo && t->sinfo->kind == RX_SI_TUPLE && t->sinfo->nfields == v->nargs)
            return t;
    }
    rx_node *k = try_fold(c, v);
    return k ? k : v;
}

static void canon_seq(cz_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            rx_binding *bd = &b->bindings[j];
            if (bd->value->kind == RX_N_VAR) bd->value = resolve(c, bd->value);
            else subst_operands(c, bd->value);
            if (!bd->match_cast) bd->value = simplify(c, bd->value);
            int32_t id = bd->var->u.var.id;
            if (id < 0 || id >= c->nids || bd->match_cast) continue;
            c->def[id] = bd->value;
            rx_node *x = bd->value;
            if (x->kind == RX_N_VAR && x != bd->var) c->repl[id] = x;
        }
    }
    if (s->result) {
        if (s->result->kind == RX_N_VAR) {
            s->result = resolve(c, s->result);
        } else {
            subst_operands(c, s->result);
        }
    }
}

bool rx_pass_canonicalize(rx_module *m, rx_diags *d)
{
    cz_ctx c = {.m = m, .nids = m->next_id + 1};
    c.repl = rx_xcalloc((size_t)c.nids, sizeof *c.repl);
    c.def = rx_xcalloc((size_t)c.nids, sizeof *c.def);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) canon_seq(&c, m->funcs[i]->body);
    free(c.repl);
    free(c.def);
    return rx_deduce_module(m, d);
}
