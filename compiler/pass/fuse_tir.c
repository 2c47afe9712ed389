/*
 * fuse_tir.c — FuseTIR (paper §4.2, Figure 9, TVM's relax.transform.FuseTIR): every
 * primitive graph function FuseOps made becomes ONE loop function, and every call of
 * it one call_tir.
 *
 * Input (the FuseOps contract): a graph function with attrs {"primitive": true} whose
 * parameters are tensors (plus, optionally, Shape or Prim parameters that carry extra
 * symbolic variables, Figure 8), whose body binds call_tir of loop functions (and
 * get_item of their tuple results) and whose result is a variable or a tuple of
 * variables; callers call it like any graph function.
 *
 * Step 1: index. One walk over the graph functions records each binding that calls a
 *         primitive function; a primitive function used any other way (as a value)
 *         is left alone.
 * Step 2: per primitive function P, the fused signature. Every tensor value of P is a
 *         "slot": P's tensor parameters and constant arguments are the inputs, the
 *         values in P's result (in order) the outputs, every other call result an
 *         intermediate. Each call's loop function has its symbolic variables bound by
 *         matching its buffers against the call's argument and output annotations
 *         (rx_si_match, as deduction and vmgen/lower.c do) and its scalar parameters
 *         by tir_vars: expressions over P's variables. P's variables become the fused
 *         function's: those standing as a whole dim of an input or output buffer are
 *         shape variables (the VM binds them from the tensors), every other one used
 *         anywhere (Figure 8's n under 2 * n) a scalar parameter the call passes in
 *         tir_vars.
 * Step 3: the body. The constituents are copied in order (fuse_tir_copy.c) with their
 *         buffers replaced by the slots' buffers, their symbolic variables by those
 *         expressions, and fresh loop variables. A constituent whose pattern is at
 *         most Injective and that stores one plain value per element of an
 *         intermediate (ft_match_inline) is not emitted: its value is substituted into
 *         every later load of the intermediate (compute inline; a chain of elementwise
 *         ops becomes one loop nest, Figure 9's decode_q4 becomes part of the matmul's
 *         loads). Any other intermediate is an ALLOC at the top of the body: local
 *         scope when its size is a constant of at most 16 KiB (codegen keeps it on the
 *         stack), global otherwise (a heap workspace, which lift_workspace turns into a
 *         graph-level allocation, Figure 11). A constituent with several outputs
 *         (split) is inlined nest by nest. Load indices are then simplified with the
 *         loops' symbolic ranges (fuse_tir_simplify.c: an inlined reshape's // and %
 *         would otherwise run in the consumer's innermost loop). Buffer names are made
 *         unique and loop variables never shadow the function's symbolic variables,
 *         so the result reads back from relax-json. attrs.compute_pattern is the
 *         maximum of the constituents' patterns.
 * Step 4: the calls. `lv = P(args...)` becomes `lv = call_tir(@fused, tensor args +
 *         constants, out=<the call's annotation>, tir_vars=<the scalar parameters'
 *         values at the caller>)`; a tuple result gives a tuple `out`, and the
 *         caller's get_item bindings stay as they are. The fused function takes P's
 *         name and place; P and the loop functions no graph function calls any more
 *         are removed, and the module is deduced again.
 *
 * What is not fused: a primitive function whose body holds anything else (an op call,
 * a library call, match_cast), whose tensors have unknown dims or dtype, whose result
 * repeats a value or returns a parameter, or whose callers cannot supply every scalar
 * parameter (an argument of unknown shape). It loses its "primitive" mark and stays an
 * ordinary graph function, which the VM calls like any other (the report counts it).
 * Cost: linear in the size of the constituents per primitive function, plus one walk
 * over the graph functions; lookups are binary searches or short linear lists.
 */
#include <stdlib.h>
#include <string.h>

#include "fuse_tir_int.h"
#include "relax/deduce.h"

enum {
    MAX_INLINE_NODES = 256,  /* an inlined formula larger than this is materialized */
    LOCAL_ALLOC_MAX = 16384  /* bytes: codegen's stack limit (c_kernel.c) */
};

/* ---------------------------------------------------------------- the group */

typedef struct slot {
    rx_sinfo *si;        /* P-level tensor annotation, dims and dtype known */
    const char *name;    /* buffer name */
    int producer;        /* index of the call writing it, -1 for an input */
    int out;             /* output position, -1 when not an output */
    rx_buffer *buf;      /* its buffer in the fused function */
} slot;

typedef struct val {     /* a variable of P and the slot(s) it names */
    const rx_node *var;
    const int *slots;    /* its slots, n of them (arena) */
    int n;
    bool tuple;          /* a tuple of n tensors (else n == 1) */
} val;

typedef struct call {
    rx_func *fn;         /* the constituent loop function */
    int *args;           /* slot per argument */
    int nargs;
    int first_out, nout; /* its output slots */
    rx_vmap vm;          /* fn's symbolic variables -> P-level expressions */
    rx_pattern pat;
} call;

typedef struct group {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    rx_func *p;                          /* the primitive graph function */
    RX_VEC(slot) slots;
    RX_VEC(val) vals;
    RX_VEC(call) calls;
    RX_VEC(const rx_node *) consts;      /* constant arguments, in order of first use */
    RX_VEC(int) outs;                    /* output slots, in result order */
    int nin;                             /* input slots: P's tensor params, then consts */
    rx_vmap pmap;                        /* P's variables -> the fused function's */
    RX_VEC(const rx_svar *) svars;       /* the fused function's variables */
    int nshape;                          /* the first nshape of them are shape variables */
    RX_VEC(const rx_svar *) tvars;       /* P's variables behind the scalar parameters */
    ft_inline_vec inl;
    ft_names names;                      /* buffer and variable names in use */
    int ninlined, nallocs;
    const char *why;                     /* why the group is not fused (static text) */
} group;

static bool fail(group *g, const char *why)
{
    if (!g->why) g->why = why;
    return false;
}

static void group_free(group *g)
{
    for (int i = 0; i < g->calls.n; i++) rx_vmap_free(&g->calls.items[i].vm);
    RX_VEC_FREE(g->slots);
    RX_VEC_FREE(g->vals);
    RX_VEC_FREE(g->calls);
    RX_VEC_FREE(g->consts);
    RX_VEC_FREE(g->outs);
    rx_vmap_free(&g->pmap);
    RX_VEC_FREE(g->svars);
    RX_VEC_FREE(g->tvars);
    RX_VEC_FREE(g->inl);
    RX_VEC_FREE(g->names.bufs);
    RX_VEC_FREE(g->names.vars);
}

static bool known_tensor(const rx_sinfo *s)
{
    return s && s->kind == RX_SI_TENSOR && s->dims && s->ndim >= 0 && s->dtype != RX_DT_UNKNOWN;
}

static int add_slot(group *g, rx_sinfo *si, const char *name, int producer)
{
    slot s = {si, name, producer, -1, NULL};
    RX_VEC_PUSH(g->slots, s);
    return g->slots.n - 1;
}

static const val *val_of(const group *g, const rx_node *var)
{
    for (int i = g->vals.n - 1; i >= 0; i--)
        if (g->vals.items[i].var == var) return &g->vals.items[i];
    return NULL;
}

static void add_val(group *g, const rx_node *var, const int *slots, int n, bool tuple)
{
    val v = {var, rx_arena_dup(g->a, slots, sizeof(int) * (size_t)(n > 0 ? n : 1)), n, tuple};
    RX_VEC_PUSH(g->vals, v);
}

static void add_val1(group *g, const rx_node *var, int s) { add_val(g, var, &s, 1, false); }

/* ---------------------------------------------------------------- step 2: slots */

/* The slot of call argument n: a tensor variable of P or a constant (a new input). */
static int arg_slot(group *g, const rx_node *n)
{
    if (n->kind == RX_N_VAR) {
        const val *v = val_of(g, n);
        return v && !v->tuple ? v->slots[0] : -1;
    }
    if (n->kind != RX_N_CONST) return -1;
    for (int i = 0; i < g->consts.n; i++)
        if (g->consts.items[i]->u.konst == n->u.konst) return g->nin - g->consts.n + i;
    return -2; /* a new constant: the caller adds it */
}

static rx_sinfo *const_sinfo(group *g, const rx_const *k)
{
    rx_expr **dims = RX_NEWN(g->a, rx_expr *, k->ndim > 0 ? k->ndim : 1);
    for (int i = 0; i < k->ndim; i++) dims[i] = rx_e_int(g->a, k->shape[i]);
    return rx_si_tensor(g->a, k->dtype, k->ndim, dims);
}

static rx_func *callee_fn(const rx_module *m, const rx_node *callee)
{
    if (!callee || callee->kind != RX_N_GLOBAL) return NULL;
    return callee->u.global.fn ? callee->u.global.fn : rx_module_find(m, callee->u.global.name);
}

/* Constant arguments are inputs too: they are numbered after P's tensor parameters,
 * so the first pass over the bindings collects them before any call is recorded. */
static void collect_consts(group *g)
{
    const rx_seq *body = g->p->body;
    for (int b = 0; b < body->nblocks; b++)
        for (int i = 0; i < body->blocks[b]->nbindings; i++) {
            const rx_node *v = body->blocks[b]->bindings[i].value;
            if (v->kind != RX_N_CALL || v->call_kind != RX_CALL_TIR) continue;
            for (int k = 0; k < v->nargs; k++) {
                const rx_node *a = v->args[k];
                bool seen = false;
                for (int c = 0; a->kind == RX_N_CONST && c < g->consts.n && !seen; c++)
                    seen = g->consts.items[c]->u.konst == a->u.konst;
                if (a->kind == RX_N_CONST && !seen) RX_VEC_PUSH(g->consts, a);
            }
        }
}

static bool add_inputs(group *g)
{
    rx_func *p = g->p;
    for (int i = 0; i < p->nparams; i++) {
        rx_node *v = p->params[i];
        const rx_sinfo *si = v->sinfo;
        if (si && (si->kind == RX_SI_SHAPE || si->kind == RX_SI_PRIM)) continue;
        if (!known_tensor(si)) return fail(g, "a parameter is not a tensor of known shape");
        add_val1(g, v, add_slot(g, (rx_sinfo *)si, v->u.var.name, -1));
    }
    collect_consts(g);
    for (int c = 0; c < g->consts.n; c++) {
        const rx_const *k = g->consts.items[c]->u.konst;
        add_slot(g, const_sinfo(g, k), k->name ? k->name : "c", -1);
    }
    g->nin = g->slots.n;
    return true;
}

static bool add_call(group *g, const rx_binding *bd)
{
    const rx_node *n = bd->value;
    call c = {0};
    c.fn = callee_fn(g->m, n->u.call.callee);
    if (!c.fn || c.fn->kind != RX_F_TIR) return fail(g, "call_tir of an unknown function");
    c.nargs = n->nargs;
    c.args = RX_NEWN(g->a, int, n->nargs > 0 ? n->nargs : 1);
    for (int k = 0; k < n->nargs; k++)
        if ((c.args[k] = arg_slot(g, n->args[k])) < 0) return fail(g, "an argument is not a tensor");
    const rx_sinfo *out = n->u.call.out;
    bool tuple = out->kind == RX_SI_TUPLE;
    c.nout = tuple ? out->nfields : 1;
    c.first_out = g->slots.n;
    for (int k = 0; k < c.nout; k++) {
        rx_sinfo *fs = tuple ? out->fields[k] : (rx_sinfo *)out;
        if (!known_tensor(fs)) return fail(g, "an output is not a tensor of known shape");
        const char *name = tuple ? rx_arena_printf(g->a, "%s_%d", bd->var->u.var.name, k)
                                 : bd->var->u.var.name;
        add_slot(g, fs, name, g->calls.n);
    }
    rx_pattern pat;
    const rx_attr *pa = rx_attr_map_get(c.fn->attrs, "compute_pattern");
    c.pat = pa && pa->kind == RX_A_STR && rx_pattern_parse(pa->u.s, &pat)
                ? pat : rx_analyze_pattern(g->a, c.fn);
    int *outs = RX_NEWN(g->a, int, c.nout);
    for (int k = 0; k < c.nout; k++) outs[k] = c.first_out + k;
    add_val(g, bd->var, outs, c.nout, tuple);
    RX_VEC_PUSH(g->calls, c);
    return true;
}

static bool add_bindings(group *g)
{
    const rx_seq *body = g->p->body;
    for (int b = 0; b < body->nblocks; b++)
        for (int i = 0; i < body->blocks[b]->nbindings; i++) {
            const rx_binding *bd = &body->blocks[b]->bindings[i];
            const rx_node *v = bd->value;
            if (bd->match_cast) return fail(g, "match_cast in the body");
            if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR) {
                if (!add_call(g, bd)) return false;
            } else if (v->kind == RX_N_GET_ITEM && v->args[0]->kind == RX_N_VAR) {
                const val *t = val_of(g, v->args[0]);
                if (!t || !t->tuple || v->u.index < 0 || v->u.index >= t->n)
                    return fail(g, "get_item of something other than a call result");
                add_val1(g, bd->var, t->slots[v->u.index]);
            } else if (v->kind == RX_N_VAR && val_of(g, v)) {
                const val *t = val_of(g, v);
                add_val(g, bd->var, t->slots, t->n, t->tuple);
            } else if (v->kind == RX_N_TUPLE) {
                int *fs = RX_NEWN(g->a, int, v->nargs > 0 ? v->nargs : 1);
                for (int k = 0; k < v->nargs; k++) {
                    const val *t = v->args[k]->kind == RX_N_VAR ? val_of(g, v->args[k]) : NULL;
                    if (!t || t->tuple) return fail(g, "a tuple of something other than tensors");
                    fs[k] = t->slots[0];
                }
                add_val(g, bd->var, fs, v->nargs, true);
            } else {
                return fail(g, "a binding other than call_tir, get_item and tuple");
            }
        }
    return true;
}

static bool add_output(group *g, int s)
{
    if (s < 0 || g->slots.items[s].producer < 0) return fail(g, "the result returns a parameter");
    if (g->slots.items[s].out >= 0) return fail(g, "the result repeats a value");
    g->slots.items[s].out = g->outs.n;
    RX_VEC_PUSH(g->outs, s);
    return true;
}

static bool add_outputs(group *g)
{
    const rx_node *r = g->p->body->result;
    if (r->kind == RX_N_VAR) {
        const val *v = val_of(g, r);
        if (!v) return fail(g, "the result is not a call result");
        for (int k = 0; k < v->n; k++)
            if (!add_output(g, v->slots[k])) return false;
        return true;
    }
    if (r->kind != RX_N_TUPLE) return fail(g, "the result is not a variable or a tuple");
    for (int i = 0; i < r->nargs; i++) {
        const val *v = r->args[i]->kind == RX_N_VAR ? val_of(g, r->args[i]) : NULL;
        if (!v || v->tuple) return fail(g, "a result field is not a tensor call result");
        if (!add_output(g, v->slots[0])) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- step 2: variables */

/* Binds call c's symbolic variables to P-level expressions. */
static bool bind_call(group *g, call *c, const rx_node *n)
{
    rx_func *f = c->fn;
    int nbuf = 0, si = 0;
    for (int j = 0; j < f->ntparams; j++) nbuf += f->tparams[j].buf != NULL;
    if (nbuf != c->nargs + c->nout || f->ntparams - nbuf != n->u.call.ntir_vars)
        return fail(g, "a call_tir does not match its function's parameters");
    rx_sinfo **want = RX_NEWN(g->a, rx_sinfo *, nbuf > 0 ? nbuf : 1);
    rx_sinfo **have = RX_NEWN(g->a, rx_sinfo *, nbuf > 0 ? nbuf : 1);
    int bi = 0;
    for (int j = 0; j < f->ntparams; j++) {
        const rx_tparam *tp = &f->tparams[j];
        if (tp->var) {
            rx_vmap_set(&c->vm, tp->var, n->u.call.tir_vars[si++]);
            continue;
        }
        want[bi] = rx_si_tensor(g->a, (rx_dtype)tp->buf->dtype, tp->buf->ndim, tp->buf->shape);
        int s = bi < c->nargs ? c->args[bi] : c->first_out + bi - c->nargs;
        have[bi++] = g->slots.items[s].si;
    }
    if (rx_si_match(g->ar, g->a, rx_si_tuple(g->a, want, nbuf), rx_si_tuple(g->a, have, nbuf),
                    &c->vm) == RX_CMP_NO)
        return fail(g, "a call_tir contradicts its function's buffers");
    for (int v = 0; v < f->nsvars; v++)
        if (!rx_vmap_get(&c->vm, f->svars[v])) return fail(g, "a loop function variable is unbound");
    return true;
}

static void define_shape_vars(group *g, const rx_sinfo *si)
{
    for (int d = 0; d < si->ndim; d++) {
        const rx_expr *e = si->dims[d];
        if (e->kind != RX_E_VAR || rx_vmap_get(&g->pmap, e->u.var)) continue;
        rx_svar *f = rx_svar_new(g->a, e->u.var->name, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(g->m));
        rx_vmap_set(&g->pmap, e->u.var, rx_e_var(g->a, f));
        RX_VEC_PUSH(g->svars, f);
        RX_VEC_PUSH(g->names.vars, f->name);
    }
}

/* Every variable of e without a fused counterpart yet becomes a scalar parameter. */
static void define_params(group *g, const rx_expr *e)
{
    rx_svar_vec vs = {0};
    rx_expr_vars(e, &vs);
    for (int i = 0; i < vs.n; i++) {
        const rx_svar *v = vs.items[i];
        if (rx_vmap_get(&g->pmap, v)) continue;
        rx_svar *f = rx_svar_new(g->a, v->name, (rx_dtype)v->dtype, RX_SV_PARAM, rx_module_new_id(g->m));
        rx_vmap_set(&g->pmap, v, rx_e_var(g->a, f));
        RX_VEC_PUSH(g->svars, f);
        RX_VEC_PUSH(g->names.vars, f->name);
        RX_VEC_PUSH(g->tvars, v);
    }
    RX_VEC_FREE(vs);
}

static bool define_vars(group *g)
{
    for (int s = 0; s < g->nin; s++) define_shape_vars(g, g->slots.items[s].si);
    for (int o = 0; o < g->outs.n; o++) define_shape_vars(g, g->slots.items[g->outs.items[o]].si);
    g->nshape = g->svars.n;
    for (int s = 0; s < g->slots.n; s++)
        for (int d = 0; d < g->slots.items[s].si->ndim; d++) define_params(g, g->slots.items[s].si->dims[d]);
    for (int c = 0; c < g->calls.n; c++)
        for (int k = 0; k < g->calls.items[c].vm.vals.n; k++) define_params(g, g->calls.items[c].vm.vals.items[k]);
    return true;
}

static void make_buffers(group *g)
{
    for (int s = 0; s < g->slots.n; s++) {
        slot *sl = &g->slots.items[s];
        rx_buffer *b = RX_NEW(g->a, rx_buffer);
        b->name = ft_unique_name(g->a, &g->names.bufs, sl->name);
        b->dtype = sl->si->dtype;
        b->ndim = sl->si->ndim;
        b->shape = RX_NEWN(g->a, rx_expr *, b->ndim > 0 ? b->ndim : 1);
        for (int d = 0; d < b->ndim; d++) b->shape[d] = rx_expr_subst(g->a, sl->si->dims[d], &g->pmap);
        b->scope = RX_SCOPE_GLOBAL;
        b->id = rx_module_new_id(g->m);
        sl->buf = b;
    }
}

/* ---------------------------------------------------------------- step 3: the body */

typedef RX_VEC(rx_stmt *) stmt_vec;

/* Local scope for a constant size of at most LOCAL_ALLOC_MAX bytes, else global. */
static rx_stmt *alloc_stmt(group *g, rx_buffer *b)
{
    int64_t bytes = rx_dtype_bits((rx_dtype)b->dtype) / 8;
    if (bytes < 1) bytes = 1;
    for (int d = 0; d < b->ndim && bytes <= LOCAL_ALLOC_MAX; d++) {
        int64_t v;
        if (!rx_expr_is_const(b->shape[d], &v) || v < 0) bytes = LOCAL_ALLOC_MAX + 1;
        else bytes *= v;
    }
    b->scope = bytes <= LOCAL_ALLOC_MAX ? RX_SCOPE_LOCAL : RX_SCOPE_GLOBAL;
    g->nallocs++;
    return rx_s_alloc(g->a, b);
}

static void copy_call(group *g, int k, stmt_vec *allocs, stmt_vec *body)
{
    call *c = &g->calls.items[k];
    rx_func *f = c->fn;
    ft_copier cp = {0};
    cp.m = g->m;
    cp.a = g->a;
    cp.inl = &g->inl;
    cp.names = &g->names;
    for (int v = 0; v < f->nsvars; v++)
        rx_vmap_set(&cp.vars, f->svars[v], rx_expr_subst(g->a, rx_vmap_get(&c->vm, f->svars[v]), &g->pmap));
    for (int j = 0, bi = 0; j < f->ntparams; j++) {
        const rx_buffer *b = f->tparams[j].buf;
        if (!b) continue;
        int s = bi < c->nargs ? c->args[bi] : c->first_out + bi - c->nargs;
        ft_map_buffer(&cp, b, g->slots.items[s].buf);
        bi++;
    }
    rx_stmts ss = ft_copy_stmts(&cp, &f->tbody);
    ft_copier_free(&cp);
    /* Each top-level nest that is the one plain writer of an intermediate output of
     * this call, read by no other nest of it, is computed inline. */
    int *claim = RX_NEWN(g->a, int, ss.n > 0 ? ss.n : 1); /* slot inlined by item i, or -1 */
    ft_inline *found = RX_NEWN(g->a, ft_inline, ss.n > 0 ? ss.n : 1);
    for (int i = 0; i < ss.n; i++) {
        claim[i] = -1;
        for (int s = c->first_out; c->pat <= RX_PAT_INJECTIVE && s < c->first_out + c->nout; s++) {
            const slot *o = &g->slots.items[s];
            rx_stmts one = {&ss.items[i], 1};
            if (o->out >= 0 || !ft_match_inline(g->a, &one, o->buf, MAX_INLINE_NODES, &found[i]))
                continue;
            bool alone = true;
            for (int j = 0; j < ss.n && alone; j++)
                alone = j == i || !ft_stmts_touch(&(rx_stmts){&ss.items[j], 1}, o->buf);
            if (alone) claim[i] = s;
            break;
        }
    }
    for (int s = c->first_out; s < c->first_out + c->nout; s++) {
        bool inl = false;
        for (int i = 0; i < ss.n && !inl; i++) inl = claim[i] == s;
        if (!inl && g->slots.items[s].out < 0) RX_VEC_PUSH(*allocs, alloc_stmt(g, g->slots.items[s].buf));
    }
    for (int i = 0; i < ss.n; i++) {
        if (claim[i] < 0) {
            RX_VEC_PUSH(*body, ss.items[i]);
            continue;
        }
        RX_VEC_PUSH(g->inl, found[i]);
        g->ninlined++;
    }
}

static rx_attr *str_attr(rx_arena *a, const char *s)
{
    rx_attr *v = RX_NEW(a, rx_attr);
    v->kind = RX_A_STR;
    v->u.s = s;
    return v;
}

/* A name for the fused function: P's own (P goes away), else P's with a suffix. */
static const char *fused_name(group *g)
{
    const char *base = g->p->name;
    rx_func *other = rx_module_find(g->m, base);
    if (!other || other == g->p) return base;
    for (int k = 1;; k++) {
        const char *n = rx_arena_printf(g->a, "%s_%d", base, k);
        if (!rx_module_find(g->m, n)) return n;
    }
}

static rx_func *build_func(group *g)
{
    stmt_vec allocs = {0}, body = {0};
    rx_pattern pat = RX_PAT_ELEMWISE;
    for (int k = 0; k < g->calls.n; k++) {
        copy_call(g, k, &allocs, &body);
        if (g->calls.items[k].pat > pat) pat = g->calls.items[k].pat;
    }
    rx_arena *a = g->a;
    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_TIR;
    f->name = fused_name(g);
    f->loc = g->p->loc;
    f->attrs = RX_NEW(a, rx_attr);
    f->attrs->kind = RX_A_MAP;
    f->attrs->u.map.n = 1;
    f->attrs->u.map.keys = RX_NEWN(a, const char *, 1);
    f->attrs->u.map.vals = RX_NEWN(a, rx_attr *, 1);
    f->attrs->u.map.keys[0] = "compute_pattern";
    f->attrs->u.map.vals[0] = str_attr(a, rx_pattern_name(pat));
    f->nsvars = g->svars.n;
    f->svars = RX_NEWN(a, const rx_svar *, g->svars.n > 0 ? g->svars.n : 1);
    if (g->svars.n) memcpy(f->svars, g->svars.items, sizeof *g->svars.items * (size_t)g->svars.n);
    int nbuf = g->nin + g->outs.n, nscalar = g->svars.n - g->nshape;
    f->ntparams = nbuf + nscalar;
    f->tparams = RX_NEWN(a, rx_tparam, f->ntparams > 0 ? f->ntparams : 1);
    for (int s = 0; s < g->nin; s++) f->tparams[s].buf = g->slots.items[s].buf;
    for (int o = 0; o < g->outs.n; o++) f->tparams[g->nin + o].buf = g->slots.items[g->outs.items[o]].buf;
    for (int k = 0; k < nscalar; k++) f->tparams[nbuf + k].var = g->svars.items[g->nshape + k];
    f->tbody.n = allocs.n + body.n;
    f->tbody.items = RX_NEWN(a, rx_stmt *, f->tbody.n > 0 ? f->tbody.n : 1);
    for (int i = 0; i < allocs.n; i++) f->tbody.items[i] = allocs.items[i];
    for (int i = 0; i < body.n; i++) f->tbody.items[allocs.n + i] = body.items[i];
    f->nouts = -1;
    ft_simplify_indices(a, &f->tbody);
    RX_VEC_FREE(allocs);
    RX_VEC_FREE(body);
    return f;
}

/* Steps 2 and 3 for P: the fused loop function, or NULL with g->why set. */
static rx_func *fuse_group(group *g)
{
    if (!add_inputs(g) || !add_bindings(g) || !add_outputs(g)) return NULL;
    if (g->calls.n == 0) {
        fail(g, "no call_tir in the body");
        return NULL;
    }
    const rx_seq *body = g->p->body;
    int k = 0;
    for (int b = 0; b < body->nblocks; b++)
        for (int i = 0; i < body->blocks[b]->nbindings; i++) {
            const rx_node *v = body->blocks[b]->bindings[i].value;
            if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR &&
                !bind_call(g, &g->calls.items[k++], v))
                return NULL;
        }
    if (!define_vars(g)) return NULL;
    make_buffers(g);
    return build_func(g);
}

/* ---------------------------------------------------------------- step 1: index */

typedef struct fentry { const rx_func *f; int idx; } fentry;

static int cmp_fentry(const void *x, const void *y)
{
    const rx_func *a = ((const fentry *)x)->f, *b = ((const fentry *)y)->f;
    return a < b ? -1 : a > b;
}

typedef struct site {    /* one binding calling a primitive function */
    rx_binding *bd;
    int fn;              /* index of the callee in m->funcs */
} site;

typedef struct index {
    rx_module *m;
    fentry *byptr;       /* m->funcs sorted by pointer */
    bool *prim;          /* per function: primitive and not escaped */
    RX_VEC(site) sites;
} index;

/* The position of f in m->funcs (as the pass started), or -1. */
static int position(const index *ix, const rx_func *f)
{
    fentry key = {f, 0};
    const fentry *e = f ? bsearch(&key, ix->byptr, (size_t)ix->m->nfuncs, sizeof key, cmp_fentry) : NULL;
    return e ? e->idx : -1;
}

static int func_index(const index *ix, const rx_node *global)
{
    return position(ix, callee_fn(ix->m, global));
}

static void walk_seq(index *ix, rx_seq *s);

/* A global in any position but a binding's callee: its function escapes. */
static void walk_node(index *ix, rx_node *n)
{
    if (!n) return;
    if (n->kind == RX_N_GLOBAL) {
        int i = func_index(ix, n);
        if (i >= 0) ix->prim[i] = false;
        return;
    }
    if (n->kind == RX_N_CALL && n->u.call.callee) walk_node(ix, n->u.call.callee);
    if (n->kind == RX_N_IF) {
        walk_seq(ix, n->u.if_.then_body);
        walk_seq(ix, n->u.if_.else_body);
    }
    for (int i = 0; i < n->nargs; i++) walk_node(ix, n->args[i]);
}

static void walk_seq(index *ix, rx_seq *s)
{
    if (!s) return;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            rx_binding *bd = &s->blocks[b]->bindings[i];
            rx_node *v = bd->value;
            int f = v->kind == RX_N_CALL && v->call_kind == RX_CALL_FN ? func_index(ix, v->u.call.callee) : -1;
            if (f >= 0 && ix->m->funcs[f]->kind == RX_F_RELAX && !bd->match_cast) {
                site st = {bd, f};
                RX_VEC_PUSH(ix->sites, st);
                for (int k = 0; k < v->nargs; k++) walk_node(ix, v->args[k]);
            } else {
                walk_node(ix, v);
            }
        }
    walk_node(ix, s->result);
}

static bool is_primitive(const rx_func *f)
{
    const rx_attr *p = f->kind == RX_F_RELAX ? rx_attr_map_get(f->attrs, "primitive") : NULL;
    return p && ((p->kind == RX_A_BOOL && p->u.b) || (p->kind == RX_A_INT && p->u.i != 0));
}

/* f's attrs without "primitive" (NULL when nothing else is left). */
static void drop_primitive(rx_module *m, rx_func *f)
{
    const rx_attr *old = f->attrs;
    int n = 0;
    for (int i = 0; i < old->u.map.n; i++) n += strcmp(old->u.map.keys[i], "primitive") != 0;
    if (!n) {
        f->attrs = NULL;
        return;
    }
    rx_attr *map = RX_NEW(m->arena, rx_attr);
    map->kind = RX_A_MAP;
    map->loc = old->loc;
    map->u.map.keys = RX_NEWN(m->arena, const char *, n);
    map->u.map.vals = RX_NEWN(m->arena, rx_attr *, n);
    for (int i = 0; i < old->u.map.n; i++) {
        if (!strcmp(old->u.map.keys[i], "primitive")) continue;
        map->u.map.keys[map->u.map.n] = old->u.map.keys[i];
        map->u.map.vals[map->u.map.n++] = old->u.map.vals[i];
    }
    f->attrs = map;
}

/* ---------------------------------------------------------------- step 4: calls */

typedef struct newcall {
    rx_binding *bd;
    rx_node *value;
} newcall;

typedef RX_VEC(newcall) newcall_vec;

static bool uses_any(const rx_expr *e, const rx_func *p)
{
    for (int i = 0; i < p->nsvars; i++)
        if (rx_expr_uses_var(e, p->svars[i])) return true;
    return false;
}

/* The call_tir replacing the call at st, or NULL with g->why set. */
static rx_node *make_call(group *g, rx_func *fused, const site *st)
{
    const rx_node *n = st->bd->value;
    rx_func *p = g->p;
    if (n->nargs != p->nparams) {
        fail(g, "a call passes the wrong number of arguments");
        return NULL;
    }
    const rx_sinfo *out = n->sinfo;
    bool ok = out && (out->kind == RX_SI_TUPLE ? out->nfields == g->outs.n
                                               : g->outs.n == 1 && known_tensor(out));
    for (int i = 0; ok && out->kind == RX_SI_TUPLE && i < out->nfields; i++)
        ok = known_tensor(out->fields[i]);
    if (!ok) {
        fail(g, "a call's result annotation is not known");
        return NULL;
    }
    rx_vmap vm = {0};
    rx_sinfo **ps = RX_NEWN(g->a, rx_sinfo *, p->nparams > 0 ? p->nparams : 1);
    rx_sinfo **as = RX_NEWN(g->a, rx_sinfo *, p->nparams > 0 ? p->nparams : 1);
    for (int i = 0; i < p->nparams; i++) {
        ps[i] = p->params[i]->sinfo;
        as[i] = n->args[i]->sinfo;
    }
    for (int i = 0; i < p->nparams && ok; i++) ok = as[i] != NULL;
    ok = ok && rx_si_match(g->ar, g->a, rx_si_tuple(g->a, ps, p->nparams),
                           rx_si_tuple(g->a, as, p->nparams), &vm) != RX_CMP_NO;
    rx_expr **tv = RX_NEWN(g->a, rx_expr *, g->tvars.n > 0 ? g->tvars.n : 1);
    for (int k = 0; ok && k < g->tvars.n; k++) {
        tv[k] = rx_expr_subst(g->a, rx_e_var(g->a, g->tvars.items[k]), &vm);
        ok = !uses_any(tv[k], p);
    }
    rx_vmap_free(&vm);
    if (!ok) {
        fail(g, "a caller cannot supply the symbolic variables");
        return NULL;
    }
    int nargs = g->nin;
    rx_node **args = RX_NEWN(g->a, rx_node *, nargs > 0 ? nargs : 1);
    int k = 0;
    for (int i = 0; i < p->nparams; i++) {
        const rx_sinfo *si = p->params[i]->sinfo;
        if (si->kind != RX_SI_SHAPE && si->kind != RX_SI_PRIM) args[k++] = n->args[i];
    }
    for (int c = 0; c < g->consts.n; c++) args[k++] = (rx_node *)g->consts.items[c];
    RX_ASSERT(k == nargs);
    rx_node *r = rx_n_call_tir(g->m, rx_n_global(g->m, fused->name, fused), args, nargs,
                               (rx_sinfo *)out, tv, g->tvars.n);
    r->loc = n->loc;
    return r;
}

/* ---------------------------------------------------------------- step 4: clean-up */

static void mark_seq(const rx_seq *s, const index *ix, bool *live);

static void mark_node(const rx_node *n, const index *ix, bool *live)
{
    if (!n) return;
    if (n->kind == RX_N_GLOBAL) {
        int i = func_index(ix, n);
        if (i >= 0) live[i] = true;
        return;
    }
    if (n->kind == RX_N_CALL && n->u.call.callee) mark_node(n->u.call.callee, ix, live);
    if (n->kind == RX_N_IF) {
        mark_seq(n->u.if_.then_body, ix, live);
        mark_seq(n->u.if_.else_body, ix, live);
    }
    for (int i = 0; i < n->nargs; i++) mark_node(n->args[i], ix, live);
}

static void mark_seq(const rx_seq *s, const index *ix, bool *live)
{
    if (!s) return;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) mark_node(s->blocks[b]->bindings[i].value, ix, live);
    mark_node(s->result, ix, live);
}

/* The new function list: each fused function in its primitive function's place, the
 * constituents (cand) that no remaining graph function calls dropped. */
static void replace_funcs(rx_module *m, const index *ix, rx_func *const *made, const bool *cand)
{
    int nf = m->nfuncs;
    bool *live = rx_xcalloc((size_t)nf + 1, 1);
    for (int i = 0; i < nf; i++)
        if (m->funcs[i]->kind == RX_F_RELAX && !made[i]) mark_seq(m->funcs[i]->body, ix, live);
    int k = 0;
    for (int i = 0; i < nf; i++) {
        if (made[i]) m->funcs[k++] = made[i];
        else if (!cand[i] || live[i]) m->funcs[k++] = m->funcs[i];
    }
    m->nfuncs = k;
    free(live);
}

/* ---------------------------------------------------------------- the pass */

bool rx_fuse_tir(rx_module *m, rx_fuse_tir_report *rep, rx_diags *d)
{
    rx_fuse_tir_report r = {0};
    int nf = m->nfuncs;
    index ix = {m, rx_xcalloc((size_t)nf + 1, sizeof(fentry)), rx_xcalloc((size_t)nf + 1, 1), {0}};
    bool any = false;
    for (int i = 0; i < nf; i++) {
        ix.byptr[i] = (fentry){m->funcs[i], i};
        ix.prim[i] = is_primitive(m->funcs[i]);
        any |= ix.prim[i];
    }
    if (!any) {
        free(ix.byptr);
        free(ix.prim);
        if (rep) *rep = r;
        return true;
    }
    qsort(ix.byptr, (size_t)nf, sizeof *ix.byptr, cmp_fentry);

    /* Step 1: the calls of primitive functions (and which ones escape). */
    for (int i = 0; i < nf; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) walk_seq(&ix, m->funcs[i]->body);

    /* Steps 2-4 per primitive function. */
    rx_arith *ar = rx_arith_new(m->arena);
    bool *cand = rx_xcalloc((size_t)nf + 1, 1);
    rx_func **made = rx_xcalloc((size_t)nf + 1, sizeof *made);
    newcall_vec calls = {0};
    for (int i = 0; i < nf; i++) {
        rx_func *p = m->funcs[i];
        if (!is_primitive(p)) continue;
        group g = {0};
        g.m = m;
        g.a = m->arena;
        g.ar = ar;
        g.p = p;
        rx_func *f = ix.prim[i] ? fuse_group(&g) : NULL;
        if (!ix.prim[i]) fail(&g, "used as a value");
        int mark = calls.n;
        for (int s = 0; f && s < ix.sites.n; s++) {
            if (ix.sites.items[s].fn != i) continue;
            rx_node *v = make_call(&g, f, &ix.sites.items[s]);
            if (!v) {
                f = NULL;
                break;
            }
            newcall nc = {ix.sites.items[s].bd, v};
            RX_VEC_PUSH(calls, nc);
        }
        if (!f) {
            calls.n = mark;
            drop_primitive(m, p);
            if (!r.kept++) r.why_kept = g.why;
            group_free(&g);
            continue;
        }
        made[i] = f;
        r.fused++;
        r.inlined += g.ninlined;
        r.allocated += g.nallocs;
        for (int k = 0; k < g.calls.n; k++) {
            int c = position(&ix, g.calls.items[k].fn);
            if (c >= 0) cand[c] = true;
        }
        group_free(&g);
    }
    for (int c = 0; c < calls.n; c++) calls.items[c].bd->value = calls.items[c].value;
    r.calls = calls.n;

    /* The fused functions take their primitive functions' places. */
    replace_funcs(m, &ix, made, cand);
    RX_VEC_FREE(calls);
    RX_VEC_FREE(ix.sites);
    free(ix.byptr);
    free(ix.prim);
    free(cand);
    free(made);
    rx_arith_free(ar);
    if (rep) *rep = r;
    return true;
}

bool rx_pass_fuse_tir(rx_module *m, rx_diags *d)
{
    return rx_fuse_tir(m, NULL, d);
}
