/*
 * deduce.c — forward annotation deduction over a whole module (paper §4.1).
 *
 * Step 1: every graph function is deduced once, callees before callers when a caller
 *         needs a callee's result annotation (a recursive call needs a written `ret`).
 * Step 2: within a function, bindings are visited in order; each value's annotation
 *         is computed from its operands' (ops by their registered rule; call_tir and
 *         call_dps_library from `out`; calls through the callee's signature with
 *         symbolic substitution, Figure 7), then reconciled with the written one.
 * Step 3: the function's result annotation is the body result's, erased to the
 *         symbolic variables its signature defines (a caller cannot see variables
 *         that match_cast defined inside), or the written `ret` after a check.
 *
 * Error recovery: an expression whose deduction failed gets a NULL annotation, and
 * anything computed from it is skipped silently, so one mistake gives one error.
 * Cost: linear in the number of bindings (each op rule is local).
 */
#include "relax/deduce.h"

#include <string.h>

typedef struct fstate {
    uint8_t *state;  /* per function: 0 not started, 1 in progress, 2 done */
} fstate;

typedef struct walk {
    rx_dctx c;       /* context handed to op rules */
    fstate *fs;      /* shared across the functions of the module */
    bool in_dataflow;
} walk;

static rx_sinfo *deduce_expr(walk *w, rx_node *n);
static rx_sinfo *deduce_seq(walk *w, rx_seq *s);
static void deduce_func(rx_module *m, rx_diags *d, fstate *fs, rx_func *f);

static void err(walk *w, rx_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err(walk *w, rx_loc loc, const char *fmt, ...)
{
    rx_sb path = {0};
    rx_loc_render(&w->c.m->locs, loc, &path);
    va_list ap;
    va_start(ap, fmt);
    rx_diag_vadd(w->c.diags, rx_sb_str(&path), fmt, ap);
    va_end(ap);
    rx_sb_free(&path);
}

rx_loc rx_d_arg_loc(rx_dctx *c, const rx_node *n, int i)
{
    const rx_node *arg = n->args[i];
    if (arg->kind != RX_N_VAR && arg->kind != RX_N_GLOBAL) return arg->loc;
    rx_loctab *t = &c->m->locs;
    switch (n->kind) {
    case RX_N_IF: return rx_loc_key(t, n->loc, "if");
    case RX_N_GET_ITEM: return rx_loc_key(t, n->loc, "get_item");
    case RX_N_TUPLE: return rx_loc_index(t, rx_loc_key(t, n->loc, "tuple"), i);
    default: return rx_loc_index(t, rx_loc_key(t, n->loc, "args"), i);
    }
}

/* Simplifies every dim and prim value of an annotation (a new annotation). */
static rx_sinfo *si_simplify(walk *w, const rx_sinfo *s)
{
    rx_arena *a = w->c.a;
    rx_sinfo *r = rx_arena_dup(a, s, sizeof *s);
    switch (s->kind) {
    case RX_SI_SHAPE:
    case RX_SI_TENSOR:
        if (s->dims && s->ndim > 0) {
            r->dims = RX_NEWN(a, rx_expr *, s->ndim);
            for (int i = 0; i < s->ndim; i++) r->dims[i] = rx_arith_simplify(w->c.ar, s->dims[i]);
        }
        break;
    case RX_SI_PRIM:
        if (s->value) r->value = rx_arith_simplify(w->c.ar, s->value);
        break;
    case RX_SI_TUPLE:
        r->fields = RX_NEWN(a, rx_sinfo *, s->nfields > 0 ? s->nfields : 1);
        for (int i = 0; i < s->nfields; i++) r->fields[i] = si_simplify(w, s->fields[i]);
        break;
    default:
        break;
    }
    return r;
}

static const char *si_str(walk *w, const rx_sinfo *s)
{
    return rx_sinfo_str(w->c.a, s);
}

/* ---- calls ---- */

typedef struct defpred {
    const rx_svar **vars; /* the callee's signature variables */
    int n;
    const rx_vmap *bound; /* those bound by the call */
} defpred;

/* A variable survives substitution unless it is a callee variable the call left unbound. */
static bool call_defined(void *ud, const rx_svar *v)
{
    defpred *p = ud;
    for (int i = 0; i < p->n; i++)
        if (p->vars[i] == v) return rx_vmap_get(p->bound, v) != NULL;
    return true;
}

/* Call of a graph function or a callable value through its signature (Figure 7). */
static rx_sinfo *deduce_call_fn(walk *w, rx_node *n, const char *what, const rx_sinfo *sig)
{
    if (sig->kind != RX_SI_CALLABLE) {
        err(w, n->loc, "call: %s is not callable, its annotation is %s", what, si_str(w, sig));
        return NULL;
    }
    if (sig->nfields != n->nargs) {
        err(w, n->loc, "call: %s takes %d argument%s, given %d", what, sig->nfields,
            sig->nfields == 1 ? "" : "s", n->nargs);
        return NULL;
    }
    /* Match all parameters at once: a variable bound by a later parameter (Figure 8's
     * s: Shape([n])) then checks the dims of earlier ones (x: Tensor((n * 2,))). */
    rx_vmap vm = {0};
    rx_sinfo *res = NULL;
    rx_sinfo **as = RX_NEWN(w->c.a, rx_sinfo *, n->nargs > 0 ? n->nargs : 1);
    for (int i = 0; i < n->nargs; i++) as[i] = n->args[i]->sinfo;
    rx_sinfo *ptup = rx_si_tuple(w->c.a, sig->fields, sig->nfields);
    rx_sinfo *atup = rx_si_tuple(w->c.a, as, n->nargs);
    bool ok = rx_si_match(w->c.ar, w->c.a, ptup, atup, &vm) != RX_CMP_NO;
    for (int i = 0; !ok && i < n->nargs; i++) {
        rx_sinfo *want = rx_si_subst(w->c.a, sig->fields[i], &vm);
        if (rx_si_is_base_of(w->c.ar, want, as[i]) == RX_CMP_NO)
            err(w, rx_d_arg_loc(&w->c, n, i), "call: argument %d of %s: expected %s, found %s", i, what,
                si_str(w, want), si_str(w, as[i]));
    }
    if (!ok && rx_diags_count(w->c.diags) == 0)
        err(w, n->loc, "call: the arguments of %s contradict its signature", what);
    if (ok) {
        rx_sinfo *ret = sig->ret ? sig->ret : rx_si_object(w->c.a);
        ret = rx_si_subst(w->c.a, ret, &vm);
        defpred p = {sig->svars, sig->nsvars, &vm};
        ret = rx_si_erase(w->c.a, ret, call_defined, &p);
        res = si_simplify(w, ret);
    }
    rx_vmap_free(&vm);
    return res;
}

/* Destination-passing call of a loop function: checks the arguments and the outputs
 * against the buffers, binds the function's symbolic variables, returns `out`. */
static rx_sinfo *deduce_call_tir(walk *w, rx_node *n)
{
    rx_func *f = n->u.call.callee->u.global.fn;
    rx_sinfo *out = n->u.call.out;
    int nouts = out->kind == RX_SI_TUPLE ? out->nfields : 1;
    int nbuf = 0, nscalar = 0;
    for (int i = 0; i < f->ntparams; i++) {
        if (f->tparams[i].buf) nbuf++;
        else nscalar++;
    }
    if (nbuf != n->nargs + nouts) {
        err(w, n->loc, "call_tir @%s: the function has %d buffer parameters, the call passes "
            "%d argument%s and %d output%s", f->name, nbuf, n->nargs, n->nargs == 1 ? "" : "s",
            nouts, nouts == 1 ? "" : "s");
        return NULL;
    }
    if (nscalar != n->u.call.ntir_vars) {
        err(w, n->loc, "call_tir @%s: the function has %d scalar parameter%s, the call passes "
            "%d tir_vars", f->name, nscalar, nscalar == 1 ? "" : "s", n->u.call.ntir_vars);
        return NULL;
    }
    /* Step 1: scalar parameters are bound to tir_vars; every buffer gets the annotation
     * it is called with (arguments, then outputs). Step 2: all buffers are matched at
     * once, so a variable a later buffer binds checks the dims of earlier ones. */
    rx_vmap vm = {0};
    rx_sinfo **want = RX_NEWN(w->c.a, rx_sinfo *, nbuf > 0 ? nbuf : 1);
    rx_sinfo **have = RX_NEWN(w->c.a, rx_sinfo *, nbuf > 0 ? nbuf : 1);
    const rx_buffer **bufs = RX_NEWN(w->c.a, const rx_buffer *, nbuf > 0 ? nbuf : 1);
    int bi = 0, si = 0;
    bool ok = true;
    for (int i = 0; i < f->ntparams; i++) {
        const rx_tparam *p = &f->tparams[i];
        if (p->var) {
            rx_vmap_set(&vm, p->var, n->u.call.tir_vars[si++]);
            continue;
        }
        const rx_buffer *b = p->buf;
        bufs[bi] = b;
        want[bi] = rx_si_tensor(w->c.a, (rx_dtype)b->dtype, b->ndim, b->shape);
        have[bi] = bi < n->nargs ? n->args[bi]->sinfo
                                 : out->kind == RX_SI_TUPLE ? out->fields[bi - n->nargs] : out;
        if (have[bi]->kind != RX_SI_TENSOR) {
            bool arg = bi < n->nargs;
            err(w, arg ? rx_d_arg_loc(&w->c, n, bi) : n->loc,
                "call_tir @%s: %s %d must be a tensor, found %s", f->name,
                arg ? "argument" : "output", arg ? bi : bi - n->nargs, si_str(w, have[bi]));
            ok = false;
        }
        bi++;
    }
    if (ok && rx_si_match(w->c.ar, w->c.a, rx_si_tuple(w->c.a, want, nbuf),
                          rx_si_tuple(w->c.a, have, nbuf), &vm) == RX_CMP_NO) {
        ok = false;
        int reported = 0;
        for (int i = 0; i < nbuf; i++) {
            rx_sinfo *exp = si_simplify(w, rx_si_subst(w->c.a, want[i], &vm));
            if (rx_si_is_base_of(w->c.ar, exp, have[i]) != RX_CMP_NO) continue;
            bool arg = i < n->nargs;
            err(w, arg ? rx_d_arg_loc(&w->c, n, i) : n->loc,
                "call_tir @%s: %s %d is %s, buffer %s expects %s", f->name,
                arg ? "argument" : "output", arg ? i : i - n->nargs, si_str(w, have[i]),
                bufs[i]->name, si_str(w, exp));
            reported++;
        }
        if (!reported)
            err(w, n->loc, "call_tir @%s: the arguments and outputs contradict the buffers' "
                "shapes", f->name);
    }
    rx_vmap_free(&vm);
    return ok ? si_simplify(w, out) : NULL;
}

/* Whether a tensor of sinfo s provably has more than INT64_MAX bytes (elements when
 * the dtype is unknown): the product of its constant dims overflows. A dim with no
 * variable that did not fold to a literal is a constant the simplifier could not fold,
 * i.e. one that overflows by itself. Sizes with variables are checked at run time (the
 * VM's arithmetic, the kernels' size checks). */
static bool too_big(const rx_sinfo *s)
{
    if (s->kind == RX_SI_TUPLE) {
        for (int i = 0; i < s->nfields; i++)
            if (too_big(s->fields[i])) return true;
        return false;
    }
    if (s->kind != RX_SI_TENSOR || !s->dims) return false;
    int bits = rx_dtype_bits((rx_dtype)s->dtype);
    int64_t p = bits > 8 ? bits / 8 : 1, v;
    bool zero = false, over = false;
    for (int i = 0; i < s->ndim; i++) {
        if (rx_expr_is_const(s->dims[i], &v)) {
            zero |= v == 0;
            over |= v > 0 && __builtin_mul_overflow(p, v, &p);
            continue;
        }
        rx_svar_vec vars = {0};
        rx_expr_vars(s->dims[i], &vars);
        over |= vars.n == 0;
        RX_VEC_FREE(vars);
    }
    return over && !zero;
}

static rx_sinfo *deduce_call(walk *w, rx_node *n)
{
    switch (n->call_kind) {
    case RX_CALL_OP: {
        rx_sinfo *s = n->u.call.op->deduce(&w->c, n);
        if (s && too_big(s)) {
            err(w, n->loc, "%s: the result %s has more than 2^63 - 1 bytes", n->u.call.op->name,
                si_str(w, s));
            return NULL;
        }
        return s;
    }
    case RX_CALL_TIR:
        return deduce_call_tir(w, n);
    case RX_CALL_LIB:
        return si_simplify(w, n->u.call.out);
    case RX_CALL_FN: {
        rx_node *callee = n->u.call.callee;
        rx_sinfo *sig = deduce_expr(w, callee);
        if (!sig) return NULL;
        const char *what = callee->kind == RX_N_GLOBAL
                               ? rx_arena_printf(w->c.a, "@%s", callee->u.global.name)
                               : rx_arena_printf(w->c.a, "\"%s\"", callee->u.var.name);
        return deduce_call_fn(w, n, what, sig);
    }
    }
    RX_UNREACHABLE();
}

/* ---- expressions ---- */
static rx_sinfo *deduce_expr(walk *w, rx_node *n)
{
    rx_arena *a = w->c.a;
    rx_sinfo *s = NULL;
    switch (n->kind) {
    case RX_N_VAR:
        return n->sinfo; /* set where the variable is bound (NULL after an error) */
    case RX_N_GLOBAL: {
        rx_func *f = n->u.global.fn;
        if (f->kind == RX_F_RELAX) deduce_func(w->c.m, w->c.diags, w->fs, f);
        s = rx_func_sinfo(a, f);
        break;
    }
    case RX_N_CONST: {
        const rx_const *k = n->u.konst;
        rx_expr **dims = RX_NEWN(a, rx_expr *, k->ndim > 0 ? k->ndim : 1);
        for (int i = 0; i < k->ndim; i++) dims[i] = rx_e_int(a, k->shape[i]);
        s = rx_si_tensor(a, k->dtype, k->ndim, dims);
        break;
    }
    case RX_N_PRIMVAL:
        s = rx_si_prim(a, (rx_dtype)n->u.prim->dtype, rx_arith_simplify(w->c.ar, n->u.prim));
        break;
    case RX_N_SHAPE: {
        int nd = n->u.shape.ndim;
        rx_expr **dims = RX_NEWN(a, rx_expr *, nd > 0 ? nd : 1);
        for (int i = 0; i < nd; i++) dims[i] = rx_arith_simplify(w->c.ar, n->u.shape.dims[i]);
        s = rx_si_shape(a, nd, dims);
        break;
    }
    case RX_N_TUPLE: {
        rx_sinfo **fs = RX_NEWN(a, rx_sinfo *, n->nargs > 0 ? n->nargs : 1);
        bool ok = true;
        for (int i = 0; i < n->nargs; i++) ok &= (fs[i] = deduce_expr(w, n->args[i])) != NULL;
        s = ok ? rx_si_tuple(a, fs, n->nargs) : NULL;
        break;
    }
    case RX_N_GET_ITEM: {
        rx_sinfo *t = deduce_expr(w, n->args[0]);
        if (!t) break;
        if (t->kind != RX_SI_TUPLE) {
            if (t->kind == RX_SI_OBJECT) {
                s = rx_si_object(a);
                break;
            }
            err(w, n->loc, "get_item: expected a tuple, found %s", si_str(w, t));
            break;
        }
        if (n->u.index >= t->nfields) {
            err(w, n->loc, "get_item: index %d out of range for %s (%d field%s)", n->u.index,
                si_str(w, t), t->nfields, t->nfields == 1 ? "" : "s");
            break;
        }
        s = t->fields[n->u.index];
        break;
    }
    case RX_N_CALL: {
        bool ok = true;
        for (int i = 0; i < n->nargs; i++) ok &= deduce_expr(w, n->args[i]) != NULL;
        if (ok) s = deduce_call(w, n);
        break;
    }
    case RX_N_IF: {
        if (w->in_dataflow) {
            err(w, n->loc, "if: control flow is not allowed in a dataflow block");
            break;
        }
        rx_sinfo *c = deduce_expr(w, n->args[0]);
        if (!c) break;
        bool scalar_bool = (c->kind == RX_SI_PRIM && c->dtype == RX_DT_BOOL) ||
                           (c->kind == RX_SI_TENSOR && c->ndim == 0 &&
                            (c->dtype == RX_DT_BOOL || c->dtype == RX_DT_UNKNOWN));
        if (!scalar_bool && !(c->kind == RX_SI_TENSOR && c->ndim < 0)) {
            err(w, rx_d_arg_loc(&w->c, n, 0), "if: the condition must be a boolean scalar, found %s",
                si_str(w, c));
            break;
        }
        rx_sinfo *t = deduce_seq(w, n->u.if_.then_body);
        rx_sinfo *e = deduce_seq(w, n->u.if_.else_body);
        if (t && e) s = rx_si_join(w->c.ar, a, t, e);
        break;
    }
    }
    n->sinfo = s;
    return s;
}

/* Reconciles a binding's deduced annotation with the written one; sets the var's. */
static void deduce_binding(walk *w, rx_binding *b)
{
    rx_sinfo *vs = deduce_expr(w, b->value);
    rx_node *var = b->var;
    if (!vs) {
        var->sinfo = b->match_cast ? b->given : NULL;
        return;
    }
    if (b->match_cast) {
        if (rx_si_is_base_of(w->c.ar, b->given, vs) == RX_CMP_NO &&
            rx_si_is_base_of(w->c.ar, vs, b->given) == RX_CMP_NO) {
            err(w, b->loc, "match_cast can never succeed: the value is %s, the cast is to %s",
                si_str(w, vs), si_str(w, b->given));
            var->sinfo = NULL;
            return;
        }
        var->sinfo = b->given;
        return;
    }
    if (!b->given) {
        var->sinfo = vs;
        return;
    }
    switch (rx_si_is_base_of(w->c.ar, b->given, vs)) {
    case RX_CMP_YES:
        var->sinfo = b->given;
        break;
    case RX_CMP_NO:
        err(w, b->loc, "annotation %s of \"%s\" contradicts the deduced %s", si_str(w, b->given),
            var->u.var.name, si_str(w, vs));
        var->sinfo = NULL;
        break;
    case RX_CMP_MAYBE:
        err(w, b->loc, "annotation %s of \"%s\" is more specific than the deduced %s "
            "(use match_cast to assert it)", si_str(w, b->given), var->u.var.name, si_str(w, vs));
        var->sinfo = NULL;
        break;
    }
}

static rx_sinfo *deduce_seq(walk *w, rx_seq *s)
{
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *blk = s->blocks[i];
        bool saved = w->in_dataflow;
        w->in_dataflow = blk->dataflow;
        for (int j = 0; j < blk->nbindings; j++) deduce_binding(w, &blk->bindings[j]);
        w->in_dataflow = saved;
    }
    return deduce_expr(w, s->result);
}

/* ---- functions ---- */
typedef struct sigpred { const rx_func *f; } sigpred;

static bool in_signature(void *ud, const rx_svar *v)
{
    const rx_func *f = ((sigpred *)ud)->f;
    for (int i = 0; i < f->nsvars; i++)
        if (f->svars[i] == v) return true;
    return false;
}

static int func_index(const rx_module *m, const rx_func *f)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i] == f) return i;
    RX_UNREACHABLE();
}

static void deduce_func(rx_module *m, rx_diags *d, fstate *fs, rx_func *f)
{
    int idx = func_index(m, f);
    if (fs->state[idx] == 2) return;
    if (fs->state[idx] == 1) {
        if (!f->ret_given) {
            rx_diag_at(d, &m->locs, f->loc,
                       "function @%s is called recursively and needs a written \"ret\"", f->name);
            f->ret = rx_si_object(m->arena);
        }
        return;
    }
    fs->state[idx] = 1;
    walk w = {{m, m->arena, rx_arith_new(m->arena), d, f}, fs, false};
    for (int i = 0; i < f->nsvars; i++) {
        int64_t ub = rx_func_upper_bound(f, f->svars[i]);
        if (ub >= 0) rx_arith_bind_range(w.c.ar, f->svars[i], 0, ub);
    }
    rx_sinfo *res = deduce_seq(&w, f->body);
    if (res) {
        sigpred p = {f};
        rx_sinfo *erased = rx_si_erase(m->arena, res, in_signature, &p);
        if (f->ret_given) {
            rx_loc rl = rx_loc_key(&m->locs, f->loc, "ret");
            switch (rx_si_is_base_of(w.c.ar, f->ret_given, erased)) {
            case RX_CMP_YES:
                break;
            case RX_CMP_NO:
                err(&w, rl, "the result %s contradicts the function's ret %s",
                    si_str(&w, erased), si_str(&w, f->ret_given));
                break;
            case RX_CMP_MAYBE:
                err(&w, rl, "the result %s is not provably the function's ret "
                    "%s (use match_cast to assert it)", si_str(&w, erased), si_str(&w, f->ret_given));
                break;
            }
            f->ret = f->ret_given;
        } else {
            f->ret = erased;
        }
    } else {
        f->ret = f->ret_given ? f->ret_given : rx_si_object(m->arena);
    }
    rx_arith_free(w.c.ar);
    fs->state[idx] = 2;
}

bool rx_deduce_module(rx_module *m, rx_diags *d)
{
    int before = rx_diags_count(d);
    rx_normalize_module(m);
    fstate fs = {rx_xcalloc((size_t)(m->nfuncs > 0 ? m->nfuncs : 1), 1)};
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) deduce_func(m, d, &fs, m->funcs[i]);
    free(fs.state);
    return rx_diags_count(d) == before;
}
