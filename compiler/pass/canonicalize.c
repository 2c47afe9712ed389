/*
 * canonicalize.c — binding canonicalization and constant folding (TVM's
 * CanonicalizeBindings and FoldConstant).
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
 *           a call whose tensor operands are all constants (or variables bound to
 *             constants) becomes a new inline constant (a tuple of them for a tuple
 *             result), see "Folding".
 * Step 3: a binding y = x (x a variable; not a match_cast) enters the replacement
 *         map y -> x, so later uses of y use x (relax-json keeps every variable visible
 *         to the rest of its function, dataflow or not, so x is always in scope).
 * The bindings made useless stay; dce removes them. Last, the module is deduced again.
 *
 * Folding. Candidates:
 *   op call      an op with a legalization rule (all but unique, nonzero, shape_of)
 *                whose operands are constants, tuples of constants (concat), shapes
 *                of literal dims or literal prim values, directly or through
 *                variables bound to them. The call is copied into a scratch module
 *                (`fold() { r = op(constants) }`), deduced and legalized there; the
 *                loop function legalize generates runs on the constants in the
 *                interpreter of tir_eval.h, which computes exactly what the compiled
 *                kernel would (same compute types, helpers and libm calls): a folded
 *                module gives the bytes the unfolded one gives, unless a later pass
 *                reorders a float reduction (a library GEMM, a reordering tiling).
 *                The scratch module is freed at once.
 *   call_tir     of a loop function of the module, every tensor argument constant,
 *                every tir_var an integer literal: the function itself runs.
 *   reshape      of a constant: the same bytes under the static target shape (no run).
 *   permute_dims of a constant: its elements moved by a strided copy (no run). An
 *                imported Gemm(transB=1) or a Transpose of a weight is such a call:
 *                left in place it transposes the weight on every call.
 * reshape and permute_dims keep the bytes of their operand (a weight used only through
 * them is then dead), so they fold up to FOLD_MOVE_MAX_ELEMS elements. Other folding
 * happens only when every result has a static shape of at most FOLD_MAX_ELEMS elements and the results take at most FOLD_FREE_BYTES or no more
 * bytes than the constant operands (a constant is stored in the artifact: a chain
 * over a weight folds, zeros((1024, 1024)) stays a small kernel). A run that fails
 * (division by zero, an out-of-bounds access: anything the kernel leaves undefined)
 * or exceeds its step budget leaves the call as it was; one run of the pass spends at
 * most FOLD_PASS_STEPS interpreter steps on folding in all.
 * Cost: linear in the module plus the interpreter's steps (bounded as above).
 */
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"
#include "../interp/tir_eval.h"

#define FOLD_MAX_ELEMS (INT64_C(1) << 20)  /* elements of one folded tensor */
#define FOLD_MOVE_MAX_ELEMS (INT64_C(1) << 30) /* ... of a folded reshape or permute_dims */
#define FOLD_FREE_BYTES (INT64_C(64) << 10) /* results this small fold whatever their inputs */
#define FOLD_PASS_STEPS (INT64_C(1) << 27)  /* interpreter steps per run of the pass */
#define FOLD_MAX_BUFS 64                    /* operands + results of one folded call */
#define FOLD_MAX_OUTS 16                    /* results of one folded call (a tuple) */

typedef struct cz_ctx {
    rx_module *m;
    rx_node **repl;     /* variable id -> replacement (a VAR), or NULL */
    rx_node **def;      /* variable id -> bound value (not match_cast), or NULL */
    int nids;
    int64_t steps_left; /* interpreter steps this run may still spend on folding */
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

/* The static extents of tensor annotation s into a new array (m's arena) with *n
 * elements and *bytes bytes; false unless dtype and dims are known literals and the
 * tensor has at most FOLD_MAX_ELEMS elements. */
static bool static_tensor_max(cz_ctx *c, const rx_sinfo *s, int64_t max, int64_t **shape,
                              int64_t *n, int64_t *bytes)
{
    if (!s || s->kind != RX_SI_TENSOR || s->ndim < 0 || !s->dims || !rx_tev_elem_size(s->dtype))
        return false;
    int64_t *sh = RX_NEWN(c->m->arena, int64_t, s->ndim + 1), k = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (!rx_expr_is_const(s->dims[i], &sh[i]) || sh[i] < 0 ||
            __builtin_mul_overflow(k, sh[i], &k) || k > max)
            return false;
    }
    *shape = sh;
    *n = k;
    *bytes = k * (int64_t)rx_tev_elem_size(s->dtype);
    return true;
}

static bool static_tensor(cz_ctx *c, const rx_sinfo *s, int64_t **shape, int64_t *n,
                          int64_t *bytes)
{
    return static_tensor_max(c, s, FOLD_MAX_ELEMS, shape, n, bytes);
}

/* The tensors of a call's result annotation: s itself or the fields of a tuple of
 * tensors; 0 when it is neither. */
static int out_count(const rx_sinfo *s)
{
    if (s && s->kind == RX_SI_TENSOR) return 1;
    if (!s || s->kind != RX_SI_TUPLE || s->nfields < 1 || s->nfields > FOLD_MAX_OUTS) return 0;
    for (int k = 0; k < s->nfields; k++)
        if (s->fields[k]->kind != RX_SI_TENSOR) return 0;
    return s->nfields;
}

static const rx_sinfo *out_field(const rx_sinfo *s, int k)
{
    return s->kind == RX_SI_TUPLE ? s->fields[k] : s;
}

/* Runs loop function fn on the constant inputs ins[0..nin) and new outputs of the
 * annotation out (a tensor or a tuple of them), scalars as its scalar parameters.
 * Returns the folded value (a CONST, or a TUPLE of CONSTs, in m's arena) or NULL when
 * an output is not static, the size rule refuses (see the file essay) or the run
 * fails. */
static rx_node *run_fold(cz_ctx *c, const rx_func *fn, const rx_const *const *ins, int nin,
                         const int64_t *scalars, int nscalars, const rx_sinfo *out, rx_loc loc)
{
    int nout = out_count(out);
    if (nout == 0 || nin + nout > FOLD_MAX_BUFS) return NULL;
    rx_tev_buf bufs[FOLD_MAX_BUFS];
    int64_t in_bytes = 0, out_bytes = 0;
    for (int i = 0; i < nin; i++) {
        bufs[i] = (rx_tev_buf){ins[i]->data, ins[i]->dtype, ins[i]->ndim, ins[i]->shape, true};
        in_bytes += (int64_t)ins[i]->nbytes;
    }
    for (int k = 0; k < nout; k++) {
        const rx_sinfo *s = out_field(out, k);
        int64_t *shape, n, bytes;
        if (!static_tensor(c, s, &shape, &n, &bytes)) return NULL;
        bufs[nin + k] = (rx_tev_buf){NULL, (rx_dtype)s->dtype, s->ndim, shape, false};
        out_bytes += bytes;
    }
    if (out_bytes > FOLD_FREE_BYTES && out_bytes > in_bytes) return NULL;
    if (c->steps_left <= 0) return NULL;
    for (int k = 0; k < nout; k++) {
        const rx_tev_buf *b = &bufs[nin + k];
        int64_t n = 1;
        for (int i = 0; i < b->ndim; i++) n *= b->shape[i];
        bufs[nin + k].data = rx_xcalloc((size_t)n * rx_tev_elem_size(b->dtype) + 1, 1);
    }
    rx_tev_limits lim = {.max_steps = c->steps_left < RX_TEV_MAX_STEPS ? c->steps_left
                                                                        : RX_TEV_MAX_STEPS};
    bool ok = rx_tir_eval(fn, bufs, nin + nout, scalars, nscalars, &lim, NULL);
    c->steps_left -= lim.steps_used;
    rx_node *fields[FOLD_MAX_OUTS];
    for (int k = 0; k < nout; k++) {
        rx_tev_buf *b = &bufs[nin + k];
        if (ok) {
            rx_const *r = RX_NEW(c->m->arena, rx_const);
            r->dtype = b->dtype;
            r->ndim = b->ndim;
            r->shape = (int64_t *)b->shape;
            r->nbytes = rx_tev_elem_size(b->dtype);
            for (int i = 0; i < b->ndim; i++) r->nbytes *= (size_t)b->shape[i];
            r->data = rx_arena_dup(c->m->arena, b->data, r->nbytes + 1);
            r->loc = loc;
            fields[k] = rx_n_const(c->m, r);
            fields[k]->loc = loc;
        }
        free(b->data);
    }
    if (!ok) return NULL;
    if (out->kind == RX_SI_TENSOR) return fields[0];
    rx_node *t = rx_n_tuple(c->m, fields, nout);
    t->loc = loc;
    return t;
}

/* call_tir of a loop function of the module whose tensor arguments are constants and
 * whose tir_vars are integer literals. */
static rx_node *fold_call_tir(cz_ctx *c, rx_node *n)
{
    rx_node *g = n->u.call.callee;
    if (!g || g->kind != RX_N_GLOBAL || !g->u.global.fn || g->u.global.fn->kind != RX_F_TIR ||
        n->nargs > FOLD_MAX_BUFS || n->u.call.ntir_vars > FOLD_MAX_BUFS)
        return NULL;
    const rx_const *ins[FOLD_MAX_BUFS];
    int64_t scalars[FOLD_MAX_BUFS];
    for (int i = 0; i < n->nargs; i++)
        if (!(ins[i] = const_of(c, n->args[i]))) return NULL;
    for (int i = 0; i < n->u.call.ntir_vars; i++)
        if (!rx_expr_eval_int(n->u.call.tir_vars[i], NULL, &scalars[i])) return NULL;
    return run_fold(c, g->u.global.fn, ins, n->nargs, scalars, n->u.call.ntir_vars,
                    n->u.call.out, n->loc);
}

/* reshape of a constant: the same bytes under the static target shape. */
static rx_node *fold_reshape(cz_ctx *c, rx_node *n)
{
    const rx_const *x = const_of(c, n->args[0]);
    int64_t *shape, k, bytes;
    if (!x || !static_tensor_max(c, n->sinfo, FOLD_MOVE_MAX_ELEMS, &shape, &k, &bytes) ||
        n->sinfo->dtype != x->dtype || (size_t)bytes != x->nbytes)
        return NULL;
    rx_const *r = RX_NEW(c->m->arena, rx_const);
    *r = (rx_const){NULL, x->dtype, n->sinfo->ndim, shape, x->data, x->nbytes, n->loc};
    rx_node *kn = rx_n_const(c->m, r);
    kn->loc = n->loc;
    return kn;
}

/* permute_dims of a constant: out[i] = x[j] with j's digit axes[d] = i's digit d, by an
 * odometer over the output (O(elements) moves, the innermost run copied at once when
 * the last axis stays last). */
static rx_node *fold_permute(cz_ctx *c, rx_node *n)
{
    enum { MAXD = 16 };
    const rx_const *x = const_of(c, n->args[0]);
    int64_t *shape, k, bytes;
    if (!x || x->ndim > MAXD || !static_tensor_max(c, n->sinfo, FOLD_MOVE_MAX_ELEMS, &shape, &k,
                                                   &bytes) ||
        n->sinfo->dtype != x->dtype || (size_t)bytes != x->nbytes || n->sinfo->ndim != x->ndim)
        return NULL;
    int nd = x->ndim;
    int64_t ax[MAXD], xstride[MAXD], ostride[MAXD], idx[MAXD] = {0};
    const rx_attr *a = rx_call_attr(n, "axes");
    if (!a || a->kind == RX_A_NULL) {
        for (int d = 0; d < nd; d++) ax[d] = nd - 1 - d;
    } else if (a->kind == RX_A_ARRAY && a->u.arr.n == nd) {
        for (int d = 0; d < nd; d++) {
            const rx_attr *e = a->u.arr.items[d];
            if (e->kind != RX_A_INT) return NULL;
            ax[d] = e->u.i < 0 ? e->u.i + nd : e->u.i;
            if (ax[d] < 0 || ax[d] >= nd || shape[d] != x->shape[ax[d]]) return NULL;
        }
    } else {
        return NULL;
    }
    size_t es = (size_t)rx_tev_elem_size(x->dtype);
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        xstride[d] = s;
        s *= x->shape[d];
    }
    for (int d = 0; d < nd; d++) ostride[d] = xstride[ax[d]];
    uint8_t *out = RX_NEWN(c->m->arena, uint8_t, x->nbytes ? x->nbytes : 1);
    /* the innermost output run: contiguous in x too when the last axis stays last */
    int64_t run = nd && ax[nd - 1] == nd - 1 ? shape[nd - 1] : 1;
    int inner = run > 1 ? nd - 1 : nd;
    for (int64_t o = 0, src = 0; o < k; o += run) {
        memcpy(out + (size_t)o * es, x->data + (size_t)src * es, (size_t)run * es);
        for (int d = inner - 1; d >= 0; d--) { /* odometer over the outer output digits */
            src += ostride[d];
            if (++idx[d] < shape[d]) break;
            src -= ostride[d] * shape[d];
            idx[d] = 0;
        }
    }
    rx_const *r = RX_NEW(c->m->arena, rx_const);
    *r = (rx_const){NULL, x->dtype, nd, shape, out, x->nbytes, n->loc};
    rx_node *kn = rx_n_const(c->m, r);
    kn->loc = n->loc;
    return kn;
}

/* Operand a of an op call as a node of the scratch module s: a constant (or a tuple of
 * constants), a shape of literal dims or a literal prim value, seen through variables
 * bound to those; NULL for anything else. With s NULL, only checks (non-NULL: ok). */
static rx_node *scratch_operand(cz_ctx *c, rx_module *s, rx_node *a, bool tuple_ok)
{
    rx_node *v = a->kind == RX_N_VAR ? def_of(c, a) : a;
    if (!v) return NULL;
    int64_t lit;
    switch (v->kind) {
    case RX_N_CONST: return s ? rx_n_const(s, v->u.konst) : v;
    case RX_N_SHAPE:
        for (int i = 0; i < v->u.shape.ndim; i++)
            if (!rx_expr_is_const(v->u.shape.dims[i], &lit)) return NULL;
        return s ? rx_n_shape(s, v->u.shape.dims, v->u.shape.ndim) : v;
    case RX_N_PRIMVAL:
        if (v->u.prim->kind != RX_E_INT && v->u.prim->kind != RX_E_FLOAT) return NULL;
        return s ? rx_n_primval(s, v->u.prim) : v;
    case RX_N_TUPLE: {
        if (!tuple_ok || v->nargs > FOLD_MAX_BUFS) return NULL;
        rx_node *f[FOLD_MAX_BUFS];
        for (int i = 0; i < v->nargs; i++) {
            const rx_const *k = const_of(c, v->args[i]);
            if (!k) return NULL;
            if (s) f[i] = rx_n_const(s, (rx_const *)k);
        }
        return s ? rx_n_tuple(s, f, v->nargs) : v;
    }
    default: return NULL;
    }
}

/* The constant a call_tir argument of the scratch function stands for: a constant, or
 * a field of a tuple of constants. */
static const rx_const *scratch_const(rx_node *a)
{
    if (a->kind == RX_N_CONST) return a->u.konst;
    if (a->kind == RX_N_GET_ITEM && a->args[0]->kind == RX_N_TUPLE && a->u.index >= 0 &&
        a->u.index < a->args[0]->nargs)
        return scratch_const(a->args[0]->args[a->u.index]);
    return NULL;
}

/* Makes `fold() { r = call }` the one function of the scratch module s. */
static rx_func *scratch_func(rx_module *s, rx_node *call)
{
    rx_block *blk = RX_NEW(s->arena, rx_block);
    blk->nbindings = 1;
    blk->bindings = RX_NEW(s->arena, rx_binding);
    blk->bindings[0].var = rx_n_var(s, "r", NULL, false);
    blk->bindings[0].value = call;
    rx_seq *body = RX_NEW(s->arena, rx_seq);
    body->blocks = RX_NEWN(s->arena, rx_block *, 1);
    body->blocks[0] = blk;
    body->nblocks = 1;
    body->result = blk->bindings[0].var;
    rx_func *f = RX_NEW(s->arena, rx_func);
    f->kind = RX_F_RELAX;
    f->name = "fold";
    f->body = body;
    f->nouts = -1;
    s->funcs = RX_NEWN(s->arena, rx_func *, 1);
    s->funcs[0] = f;
    s->nfuncs = 1;
    return f;
}

/* An op call with a legalization rule whose operands are all constant: legalized, in a
 * scratch module holding `fold() { r = op(constants) }`, into its loop function, which
 * runs on the constants. */
static rx_node *fold_op(cz_ctx *c, rx_node *n)
{
    if (!rx_legalize_has_rule(n->u.call.op->name) || !out_count(n->sinfo) ||
        n->nargs > FOLD_MAX_BUFS)
        return NULL;
    for (int i = 0; i < n->nargs; i++) /* before any allocation: most calls stop here */
        if (!scratch_operand(c, NULL, n->args[i], true)) return NULL;
    rx_module *s = rx_module_new();
    s->next_id = c->m->next_id;
    rx_node *args[FOLD_MAX_BUFS], *res = NULL;
    for (int i = 0; i < n->nargs; i++)
        if (!(args[i] = scratch_operand(c, s, n->args[i], true))) goto out;
    rx_func *f = scratch_func(s, rx_n_call_op(s, n->u.call.op, args, n->nargs, n->u.call.attrs));
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    bool ok = rx_deduce_module(s, &d) && rx_legalize(s, &rep, &d) && rx_deduce_module(s, &d) &&
              rep.legalized == 1;
    rx_diags_free(&d);
    if (!ok || s->nfuncs != 2 || f->body->nblocks != 1 || f->body->blocks[0]->nbindings != 1)
        goto out;
    rx_node *tc = f->body->blocks[0]->bindings[0].value;
    if (tc->kind != RX_N_CALL || tc->call_kind != RX_CALL_TIR || tc->nargs > FOLD_MAX_BUFS)
        goto out;
    const rx_const *ins[FOLD_MAX_BUFS];
    int64_t scalars[FOLD_MAX_BUFS];
    for (int i = 0; i < tc->nargs; i++)
        if (!(ins[i] = scratch_const(tc->args[i]))) goto out;
    if (tc->u.call.ntir_vars > FOLD_MAX_BUFS) goto out;
    for (int i = 0; i < tc->u.call.ntir_vars; i++)
        if (!rx_expr_eval_int(tc->u.call.tir_vars[i], NULL, &scalars[i])) goto out;
    /* the scratch call's annotation: static even where m's is coarser (an operand
     * annotated Tensor(ndim=2)); run_fold copies the extents into m */
    res = run_fold(c, tc->u.call.callee->u.global.fn, ins, tc->nargs, scalars,
                   tc->u.call.ntir_vars, tc->u.call.out, n->loc);
out:
    rx_module_free(s);
    return res;
}

static rx_node *try_fold(cz_ctx *c, rx_node *n)
{
    if (n->kind != RX_N_CALL || !n->sinfo) return NULL;
    if (n->call_kind == RX_CALL_TIR) return fold_call_tir(c, n);
    if (n->call_kind != RX_CALL_OP) return NULL;
    const char *op = n->u.call.op->name;
    if (strncmp(op, "relax.", 6) == 0) op += 6;
    if (strcmp(op, "reshape") == 0 && n->nargs >= 1) {
        rx_node *k = fold_reshape(c, n);
        if (k) return k;
    }
    if (strcmp(op, "permute_dims") == 0 && n->nargs == 1) {
        rx_node *k = fold_permute(c, n);
        if (k) return k;
    }
    return fold_op(c, n);
}

rx_node *rx_fold_call(rx_module *m, rx_node *call, int64_t *steps_left)
{
    cz_ctx c = {.m = m, .steps_left = *steps_left};
    rx_node *k = try_fold(&c, call);
    *steps_left = c.steps_left;
    return k && k->kind == RX_N_CONST ? k : NULL;
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
    cz_ctx c = {.m = m, .nids = m->next_id + 1, .steps_left = FOLD_PASS_STEPS};
    c.repl = rx_xcalloc((size_t)c.nids, sizeof *c.repl);
    c.def = rx_xcalloc((size_t)c.nids, sizeof *c.def);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) canon_seq(&c, m->funcs[i]->body);
    free(c.repl);
    free(c.def);
    return true;
}
