/*
 * tir_eval.c — the loop-function interpreter of tir_eval.h: statements, scopes and the
 * entry; tir_eval_expr.c evaluates the expressions. A tree walk over one function,
 * mirroring compiler/codegen/c_kernel.c rule by rule so that a folded constant holds
 * the bytes the compiled kernel would write.
 *
 * Mirrored from c_kernel.c, one line per statement kind:
 *   FOR     bounds evaluated once, in the loop variable's dtype; thread-bound loops
 *           fail (codegen rejects them); parallel and vectorized loops run serially
 *   BLOCK   iterators bound (an implicit one is its loop variable); init guarded by
 *           "every reduce iterator at its start" (an implicit iterator's loop min,
 *           else 0), or run once before the reduce loop chain exactly where the
 *           C code generator hoists it (rx_init_hoist_target, ir.h): an empty sum
 *           is 0 there and an empty guarded reduction writes nothing, as in the
 *           kernel
 *   STORE   into a writable buffer in scope (a read-only input fails the run)
 *   ALLOC   zero-filled (the stack arrays are; heap ones are written before read by
 *           any well-defined function), released at the end of its statement list;
 *           bytes live at once are limited
 *   IF, LET as written
 * Where an init is hoisted is decided by rx_init_hoist_target (ir.h), the one rule
 * the C code generator also follows; test_tir_eval_c.c compares this interpreter with
 * compiled kernels byte for byte to keep both honest.
 *
 * The entry binds the signature (scalar parameters from their ABI words, shape
 * variables from the buffers' shapes, then every extent checked), estimates the cost
 * when every loop extent is a literal (a run known to exceed the step budget fails
 * before it starts), runs the body, and frees everything it allocated.
 */
#include <stdio.h>
#include <string.h>

#include "tir_eval_int.h"

/* No a * b + c fused into one rounding: the kernels are built -std=c11, whose gcc
 * default is -ffp-contract=off; clang's default contracts within an expression. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---------------------------------------------------------------- hoisted init */

/* ---------------------------------------------------------------- statements */

static void run_stmts(tev *t, const rx_stmts *ss);

/* emit_iters: binds block s's iterators (only the spatial ones when spatial_only); an
 * implicit iterator already in scope is its loop variable. */
static void bind_iters(tev *t, const rx_stmt *s, bool spatial_only)
{
    for (int i = 0; i < s->u.block.niters && t->ok; i++) {
        const rx_iter *it = &s->u.block.iters[i];
        if (spatial_only && it->kind == RX_ITER_REDUCE) continue;
        if (it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var &&
            tev_lookup_var(t, it->var))
            continue;
        tv v = {0};
        if (it->bind) v = tev_eval_as(t, it->bind, (rx_dtype)it->var->dtype);
        else v = tev_lit_int(0, (rx_dtype)it->var->dtype);
        tev_push_var(t, it->var, v);
    }
}

/* iter_start: the loop's start for an implicit iterator, else 0. */
static int64_t iter_start(const tev *t, const rx_iter *it)
{
    if (it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var)
        for (int k = t->loops.n - 1; k >= 0; k--)
            if (t->loops.items[k].var == it->var) return t->loops.items[k].start;
    return 0;
}

static bool is_hoisted(const tev *t, const rx_stmt *s)
{
    for (int k = 0; k < t->hoisted.n; k++)
        if (t->hoisted.items[k] == s) return true;
    return false;
}

static void run_block(tev *t, const rx_stmt *s)
{
    int mark = t->vars.n;
    bind_iters(t, s, false);
    if (t->ok && s->u.block.init.n && !is_hoisted(t, s)) {
        bool at_start = true;
        for (int i = 0; i < s->u.block.niters && at_start; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            if (it->kind != RX_ITER_REDUCE) continue;
            const tv *v = tev_lookup_var(t, it->var);
            at_start = (v ? v->i : 0) == iter_start(t, it);
        }
        if (at_start) run_stmts(t, &s->u.block.init);
    }
    run_stmts(t, &s->u.block.body);
    t->vars.n = mark;
}

static void run_for(tev *t, const rx_stmt *s)
{
    const rx_svar *v = s->u.for_.var;
    rx_dtype vt = norm((rx_dtype)v->dtype);
    if (s->u.for_.thread) {
        tev_fail(t, "thread-bound loop \"%s\" (%s) needs a GPU target", v->name, s->u.for_.thread);
        return;
    }
    if (cls(vt) != C_SINT) {
        tev_fail(t, "loop variable \"%s\" of dtype %s", v->name, rx_dtype_name(vt));
        return;
    }
    const rx_stmt *hoist = rx_init_hoist_target(s);
    if (hoist) { /* emit_hoisted_init */
        int mark = t->vars.n;
        bind_iters(t, hoist, true);
        run_stmts(t, &hoist->u.block.init);
        t->vars.n = mark;
        RX_VEC_PUSH(t->hoisted, hoist);
    }
    tv lo = tev_eval_as(t, s->u.for_.min, vt), ext = tev_eval_as(t, s->u.for_.extent, vt);
    int64_t hi = 0;
    if (t->ok && (__builtin_add_overflow(lo.i, ext.i, &hi) || wrap_s((uint64_t)hi, bits(vt)) != hi))
        tev_fail(t, "bounds of loop \"%s\" overflow", v->name);
    tev_loop lp = {v, lo.i};
    RX_VEC_PUSH(t->loops, lp);
    for (int64_t i = lo.i; t->ok && i < hi; i++) {
        if (!tev_step(t)) break;
        int mark = t->vars.n;
        tv iv = {.i = i};
        tev_push_var(t, v, iv);
        run_stmts(t, &s->u.for_.body);
        t->vars.n = mark;
    }
    t->loops.n--;
    if (hoist) t->hoisted.n--;
}

static void run_store(tev *t, const rx_stmt *s)
{
    tev_buf *b = tev_lookup_buf(t, s->u.store.buf);
    if (!b) {
        tev_fail(t, "buffer \"%s\" is not in scope", s->u.store.buf ? s->u.store.buf->name : "?");
        return;
    }
    if (b->ro) {
        tev_fail(t, "store into input buffer \"%s\"", b->b->name);
        return;
    }
    int64_t i = tev_flat_index(t, b, s->u.store.idx, s->u.store.nidx);
    if (i < 0) return;
    tv v = tev_eval_as(t, s->u.store.value, b->dt);
    if (t->ok) tev_store_elem(b, i, v);
}

/* Evaluates the extents of b into a new scope entry (data not set). */
static tev_buf *push_buf(tev *t, const rx_buffer *b)
{
    tev_buf e = {0};
    e.b = b;
    e.dt = b->dtype;
    e.dims = rx_xcalloc((size_t)(b->ndim > 0 ? b->ndim : 1), sizeof *e.dims);
    e.numel = 1;
    RX_VEC_PUSH(t->bufs, e);
    tev_buf *p = &t->bufs.items[t->bufs.n - 1];
    for (int k = 0; k < b->ndim && t->ok; k++) {
        p->dims[k] = tev_eval_as(t, b->shape[k], RX_DT_I64).i;
        if (t->ok && (p->dims[k] < 0 || __builtin_mul_overflow(p->numel, p->dims[k], &p->numel)))
            tev_fail(t, "buffer \"%s\" has a bad size", b->name);
    }
    return p;
}

static void run_alloc(tev *t, const rx_stmt *s)
{
    const rx_buffer *b = s->u.alloc.buf;
    if (rx_tev_elem_size(b->dtype) == 0) {
        tev_fail(t, "buffer \"%s\" has an unknown dtype", b->name);
        return;
    }
    tev_buf *p = push_buf(t, b);
    if (!t->ok) return;
    int64_t bytes;
    if (__builtin_mul_overflow(p->numel, (int64_t)rx_tev_elem_size(b->dtype), &bytes) ||
        bytes > t->max_alloc - t->alloc) {
        tev_fail(t, "allocation of \"%s\" exceeds the %lld-byte limit", b->name,
             (long long)t->max_alloc);
        return;
    }
    p->data = rx_xcalloc((size_t)bytes + 1, 1);
    p->owned = true;
    t->alloc += bytes;
}

static void run_stmt(tev *t, const rx_stmt *s)
{
    if (!tev_step(t)) return;
    switch ((rx_skind)s->kind) {
    case RX_S_FOR: run_for(t, s); return;
    case RX_S_BLOCK: run_block(t, s); return;
    case RX_S_STORE: run_store(t, s); return;
    case RX_S_ALLOC: run_alloc(t, s); return;
    case RX_S_IF:
        if (tev_eval_bool(t, s->u.if_.cond)) run_stmts(t, &s->u.if_.then_s);
        else run_stmts(t, &s->u.if_.else_s);
        return;
    case RX_S_LET: {
        const rx_svar *v = s->u.let.var;
        tv val = tev_eval_as(t, s->u.let.value, (rx_dtype)v->dtype);
        int mark = t->vars.n;
        tev_push_var(t, v, val);
        run_stmts(t, &s->u.let.body);
        t->vars.n = mark;
        return;
    }
    default:
        tev_fail(t, "unknown statement kind %d", s->kind);
        return;
    }
}

/* A statement list: its allocations go out of scope (and are freed) at its end. */
static void run_stmts(tev *t, const rx_stmts *ss)
{
    int bmark = t->bufs.n, vmark = t->vars.n;
    for (int i = 0; i < ss->n && t->ok; i++) run_stmt(t, ss->items[i]);
    tev_pop_bufs(t, bmark);
    t->vars.n = vmark;
}

/* ---------------------------------------------------------------- cost estimate */

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t expr_size(const rx_expr *e)
{
    if (!e) return 0;
    int64_t n = 1;
    for (int i = 0; i < rx_expr_nchildren(e); i++) n = sat_add(n, expr_size(rx_expr_child(e, i)));
    return n;
}

/* An upper estimate of the steps ss takes (both branches of an IF counted), or -1
 * when a loop extent is not a literal. Linear in the size of ss. */
static int64_t cost(const rx_stmts *ss)
{
    int64_t total = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        int64_t c = 1, a, b, ext;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (!rx_expr_is_const(s->u.for_.extent, &ext) || (a = cost(&s->u.for_.body)) < 0)
                return -1;
            c = sat_add(c, sat_mul(ext > 0 ? ext : 0, sat_add(a, 1)));
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++)
                c = sat_add(c, expr_size(s->u.block.iters[k].bind));
            if ((a = cost(&s->u.block.init)) < 0 || (b = cost(&s->u.block.body)) < 0) return -1;
            c = sat_add(c, sat_add(a, b));
            break;
        case RX_S_STORE:
            for (int k = 0; k < s->u.store.nidx; k++) c = sat_add(c, expr_size(s->u.store.idx[k]));
            c = sat_add(c, expr_size(s->u.store.value));
            break;
        case RX_S_IF:
            if ((a = cost(&s->u.if_.then_s)) < 0 || (b = cost(&s->u.if_.else_s)) < 0) return -1;
            c = sat_add(c, sat_add(expr_size(s->u.if_.cond), sat_add(a, b)));
            break;
        case RX_S_LET:
            if ((a = cost(&s->u.let.body)) < 0) return -1;
            c = sat_add(c, sat_add(expr_size(s->u.let.value), a));
            break;
        default: /* ALLOC */
            break;
        }
        total = sat_add(total, c);
    }
    return total;
}

/* ---------------------------------------------------------------- the entry */

/* emit_svar: a scalar parameter's value from its 64-bit ABI word. */
static tv scalar_value(tev *t, const rx_svar *v, int64_t w)
{
    rx_dtype dt = norm((rx_dtype)v->dtype);
    if (is_float(dt)) { /* the bits of a double, converted as emit_svar's rx_f16r & co. */
        tv d;
        memcpy(&d.d, &w, sizeof d.d);
        return tev_conv(t, d, RX_DT_F64, dt);
    }
    tv x = {.i = w};
    return dt == RX_DT_BOOL ? (tv){.i = w != 0} : tev_conv(t, x, RX_DT_I64, dt);
}

/* Binds f's variables: scalar parameters from scalars, shape variables from the first
 * buffer with the variable as a whole dim; then checks every buffer extent. */
static void bind_signature(tev *t, const rx_func *f, const rx_tev_buf *bufs, int nbufs,
                           const int64_t *scalars, int nscalars)
{
    int nb = 0, ns = 0;
    for (int p = 0; p < f->ntparams; p++) {
        if (f->tparams[p].buf) nb++;
        else ns++;
    }
    if (nb != nbufs || ns != nscalars) {
        tev_fail(t, "%d buffer(s) and %d scalar(s) given for %d and %d parameters", nbufs, nscalars,
             nb, ns);
        return;
    }
    for (int p = 0, si = 0; p < f->ntparams; p++)
        if (f->tparams[p].var) tev_push_var(t, f->tparams[p].var,
                         scalar_value(t, f->tparams[p].var, scalars[si++]));
    for (int p = 0, bi = 0; p < f->ntparams; p++) {
        const rx_buffer *b = f->tparams[p].buf;
        if (!b) continue;
        const rx_tev_buf *g = &bufs[bi++];
        if (g->dtype != b->dtype || g->ndim != b->ndim) {
            tev_fail(t, "buffer \"%s\" is %s with %d dims, given %s with %d", b->name,
                 rx_dtype_name(b->dtype), b->ndim, rx_dtype_name(g->dtype), g->ndim);
            return;
        }
        for (int k = 0; k < b->ndim; k++) {
            const rx_expr *d = b->shape[k];
            if (d->kind == RX_E_VAR && !tev_lookup_var(t, d->u.var))
                tev_push_var(t, d->u.var, tev_lit_int(g->shape[k], (rx_dtype)d->u.var->dtype));
        }
    }
    for (int p = 0, bi = 0; p < f->ntparams && t->ok; p++) {
        const rx_buffer *b = f->tparams[p].buf;
        if (!b) continue;
        const rx_tev_buf *g = &bufs[bi++];
        tev_buf *e = push_buf(t, b);
        for (int k = 0; k < b->ndim && t->ok; k++)
            if (e->dims[k] != g->shape[k])
                tev_fail(t, "buffer \"%s\" dim %d is %lld, given %lld", b->name, k,
                     (long long)e->dims[k], (long long)g->shape[k]);
        e->data = g->data;
        e->ro = g->readonly;
    }
}

bool rx_tir_eval(const rx_func *f, const rx_tev_buf *bufs, int nbufs, const int64_t *scalars,
                 int nscalars, rx_tev_limits *lim, rx_sb *why)
{
    tev t = {0};
    t.f = f;
    t.ok = true;
    t.why = why;
    t.max_steps = lim && lim->max_steps > 0 ? lim->max_steps : RX_TEV_MAX_STEPS;
    t.max_alloc = lim && lim->max_alloc_bytes > 0 ? lim->max_alloc_bytes : RX_TEV_MAX_ALLOC;
    int64_t est;
    if (f->kind != RX_F_TIR) tev_fail(&t, "not a loop function");
    else if ((est = cost(&f->tbody)) > t.max_steps) /* known too long: spend nothing */
        tev_fail(&t, "about %lld steps needed, over the step budget of %lld", (long long)est,
             (long long)t.max_steps);
    else bind_signature(&t, f, bufs, nbufs, scalars, nscalars);
    if (t.ok) run_stmts(&t, &f->tbody);
    tev_pop_bufs(&t, 0);
    if (lim) lim->steps_used = t.steps;
    RX_VEC_FREE(t.vars);
    RX_VEC_FREE(t.bufs);
    RX_VEC_FREE(t.loops);
    RX_VEC_FREE(t.hoisted);
    return t.ok;
}
