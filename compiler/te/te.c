/*
 * te.c — the tensor-expression builder's front half: tensors and the expression
 * helpers callbacks use (te.h has the model; te_build.c emits the loop function).
 *
 * Creating a compute or a reduction makes its index (and reduce) variables at once,
 * registers their ranges with the builder's arithmetic context ([0, extent - 1] for a
 * literal extent, [0, +inf) otherwise, so rx_te_simplify can fold (i0 * 4 + i1) // 4
 * to i0) and runs the callback once; the returned formula is kept as it is. Nothing
 * is checked against the caller's annotations here: legalization built the shapes
 * from deduced annotations, and deduction of the resulting call_tir re-checks them.
 *
 * Literals are made with the dtype the relax-json grammar would give them where they
 * stand, through rx_te_const, so generated functions print and read back unchanged.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "te_int.h"

rx_te *rx_te_new(rx_module *m)
{
    rx_te *te = rx_xcalloc(1, sizeof *te);
    te->m = m;
    te->a = m->arena;
    te->ar = rx_arith_new(m->arena);
    return te;
}

void rx_te_free(rx_te *te)
{
    if (!te) return;
    rx_arith_free(te->ar);
    RX_VEC_FREE(te->tensors);
    RX_VEC_FREE(te->own);
    free(te);
}

rx_arena *rx_te_arena(const rx_te *te) { return te->a; }

bool rx_te_owns(const rx_te *te, const rx_svar *v)
{
    for (int i = 0; i < te->own.n; i++)
        if (te->own.items[i] == v) return true;
    return false;
}

int rx_te_ndim(const rx_te_tensor *t) { return t->buf->ndim; }
rx_expr *rx_te_dim(const rx_te_tensor *t, int i)
{
    RX_ASSERT(i >= 0 && i < t->buf->ndim);
    return t->buf->shape[i];
}
rx_dtype rx_te_dtype(const rx_te_tensor *t) { return (rx_dtype)t->buf->dtype; }

/* ---------------------------------------------------------------- tensors */

static rx_buffer *new_buffer(rx_te *te, const char *name, rx_dtype dt, int ndim,
                             rx_expr *const *shape)
{
    RX_ASSERT(ndim >= 0 && dt != RX_DT_UNKNOWN);
    rx_buffer *b = RX_NEW(te->a, rx_buffer);
    b->name = rx_arena_strdup(te->a, name);
    b->dtype = dt;
    b->ndim = ndim;
    b->shape = RX_NEWN(te->a, rx_expr *, ndim > 0 ? ndim : 1);
    for (int i = 0; i < ndim; i++) {
        RX_ASSERT(shape[i] && rx_dtype_is_int((rx_dtype)shape[i]->dtype));
        b->shape[i] = shape[i];
    }
    b->scope = RX_SCOPE_GLOBAL;
    b->id = rx_module_new_id(te->m);
    return b;
}

static rx_te_tensor *new_tensor(rx_te *te, te_kind k, const char *name, rx_dtype dt, int ndim,
                                rx_expr *const *shape)
{
    RX_ASSERT(!te->built);
    rx_te_tensor *t = RX_NEW(te->a, rx_te_tensor);
    t->kind = k;
    t->name = rx_arena_strdup(te->a, name);
    t->buf = new_buffer(te, name, dt, ndim, shape);
    t->index = te->tensors.n;
    RX_VEC_PUSH(te->tensors, t);
    return t;
}

/* Fresh loop variables prefix0, prefix1, ... over extents ext[0..n). */
static rx_svar **loop_vars(rx_te *te, const char *prefix, int n, rx_expr *const *ext)
{
    rx_svar **v = RX_NEWN(te->a, rx_svar *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        char nm[24];
        snprintf(nm, sizeof nm, "%s%d", prefix, i);
        v[i] = rx_svar_new(te->a, nm, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(te->m));
        int64_t c;
        if (rx_expr_is_const(ext[i], &c) && c >= 1) rx_arith_bind_range(te->ar, v[i], 0, c - 1);
        else rx_arith_bind_range(te->ar, v[i], 0, INT64_MAX);
        RX_VEC_PUSH(te->own, v[i]);
    }
    return v;
}

static rx_expr **var_exprs(rx_te *te, rx_svar **v, int n)
{
    rx_expr **e = RX_NEWN(te->a, rx_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) e[i] = rx_e_var(te->a, v[i]);
    return e;
}

rx_te_tensor *rx_te_placeholder(rx_te *te, const char *name, rx_dtype dt, int ndim,
                                rx_expr *const *shape)
{
    return new_tensor(te, TE_PLACEHOLDER, name, dt, ndim, shape);
}

rx_te_tensor *rx_te_compute(rx_te *te, const char *name, rx_dtype dt, int ndim,
                            rx_expr *const *shape, rx_te_fcompute f, void *ud)
{
    rx_te_tensor *t = new_tensor(te, TE_COMPUTE, name, dt, ndim, shape);
    t->ivars = loop_vars(te, "i", ndim, shape);
    t->body = f(te, var_exprs(te, t->ivars, ndim), ud);
    RX_ASSERT(t->body && t->body->dtype == dt);
    return t;
}

/* The loop variables, reduction domain and body of a reduction tensor t (REDUCE and
 * ARGREDUCE share them): spatial variables i..., reduce variables k..., f's element. */
static void reduce_body(rx_te *te, rx_te_tensor *t, int ndim, rx_expr *const *shape,
                        int nred, rx_expr *const *rdom, rx_te_freduce f, void *ud)
{
    t->ivars = loop_vars(te, "i", ndim, shape);
    t->nred = nred;
    t->rdom = RX_NEWN(te->a, rx_expr *, nred > 0 ? nred : 1);
    for (int i = 0; i < nred; i++) t->rdom[i] = rdom[i];
    t->rvars = loop_vars(te, "k", nred, rdom);
    t->body = f(te, var_exprs(te, t->ivars, ndim), var_exprs(te, t->rvars, nred), ud);
}

rx_te_tensor *rx_te_reduce(rx_te *te, const char *name, rx_dtype dt, int ndim,
                           rx_expr *const *shape, rx_te_redop op, int nred,
                           rx_expr *const *rdom, rx_expr *init, rx_te_freduce f, void *ud)
{
    rx_te_tensor *t = new_tensor(te, TE_REDUCE, name, dt, ndim, shape);
    t->op = op;
    reduce_body(te, t, ndim, shape, nred, rdom, f, ud);
    RX_ASSERT(t->body && t->body->dtype == dt);
    if (!init) {
        switch (op) {
        case RX_TE_SUM: init = rx_te_const(te, 0, dt); break;
        case RX_TE_PROD: init = rx_te_const(te, 1, dt); break;
        case RX_TE_MAX: init = rx_te_min_value(te, dt); break;
        default: init = rx_te_max_value(te, dt); break;
        }
    }
    RX_ASSERT(init->dtype == dt);
    t->init = init;
    return t;
}

rx_te_tensor *rx_te_argreduce(rx_te *te, const char *name, int ndim, rx_expr *const *shape,
                              rx_te_argop op, int nred, rx_expr *const *rdom,
                              rx_te_freduce f, void *ud)
{
    rx_te_tensor *t = new_tensor(te, TE_ARGREDUCE, name, RX_DT_I64, ndim, shape);
    t->op = op;
    reduce_body(te, t, ndim, shape, nred, rdom, f, ud);
    RX_ASSERT(t->body);
    rx_dtype vt = (rx_dtype)t->body->dtype;
    char vname[96];
    snprintf(vname, sizeof vname, "%s_v", name);
    t->vbuf = new_buffer(te, vname, vt, ndim, shape);
    t->init = op == RX_TE_ARGMAX ? rx_te_min_value(te, vt) : rx_te_max_value(te, vt);
    return t;
}

void rx_te_inline(rx_te_tensor *t)
{
    RX_ASSERT(t->kind == TE_COMPUTE);
    t->inlined = true;
}

/* ---------------------------------------------------------------- expression helpers */

rx_expr *rx_te_at(rx_te *te, const rx_te_tensor *t, rx_expr *const *idx)
{
    int n = t->buf->ndim;
    for (int i = 0; i < n; i++) RX_ASSERT(idx[i] && rx_dtype_is_int((rx_dtype)idx[i]->dtype));
    return rx_e_load(te->a, t->buf, (rx_expr **)idx, n);
}

/* The range of an integer dtype. */
static void int_range(rx_dtype dt, int64_t *lo, int64_t *hi)
{
    int bits = rx_dtype_bits(dt);
    if (rx_dtype_is_uint(dt)) {
        *lo = 0;
        *hi = bits >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << bits) - 1);
    } else {
        *lo = bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
        *hi = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
    }
}

/* An integer literal of dtype dt. INT64_MIN has no literal in the grammar (its
 * magnitude overflows the reader), so it is built as -9223372036854775807 - 1. */
static rx_expr *int_lit(rx_te *te, int64_t v, rx_dtype dt)
{
    if (v == INT64_MIN)
        return rx_e_binary(te->a, RX_E_SUB, rx_e_typed_int(te->a, -INT64_MAX, dt),
                           rx_e_typed_int(te->a, 1, dt));
    return rx_e_typed_int(te->a, v, dt);
}

rx_expr *rx_te_const(rx_te *te, double v, rx_dtype dt)
{
    if (rx_dtype_is_float(dt)) return rx_e_float(te->a, v, dt);
    if (dt == RX_DT_BOOL) return rx_e_typed_int(te->a, v != 0, RX_DT_BOOL);
    RX_ASSERT(rx_dtype_is_int(dt));
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    double t = trunc(v);
    int64_t k;
    if (!(t == t)) k = 0;
    else if (t <= (double)lo) k = lo;
    else if (t >= (double)hi) k = hi;
    else k = (int64_t)t;
    return int_lit(te, k, dt);
}

rx_expr *rx_te_cast(rx_te *te, rx_dtype dt, rx_expr *x)
{
    if (x->dtype == dt) return x;
    if (dt == RX_DT_BOOL) {
        if (x->kind == RX_E_INT) return rx_e_typed_int(te->a, x->u.ival != 0, RX_DT_BOOL);
        if (x->kind == RX_E_FLOAT) return rx_e_typed_int(te->a, x->u.fval != 0, RX_DT_BOOL);
        return rx_e_binary(te->a, RX_E_NE, x, rx_te_const(te, 0, (rx_dtype)x->dtype));
    }
    if (x->kind == RX_E_INT && rx_dtype_is_int(dt)) {
        int64_t lo, hi;
        int_range(dt, &lo, &hi);
        if (x->u.ival >= lo && x->u.ival <= hi) return int_lit(te, x->u.ival, dt);
    }
    if (x->kind == RX_E_INT) return rx_te_const(te, (double)x->u.ival, dt);
    if (x->kind == RX_E_FLOAT) return rx_te_const(te, x->u.fval, dt);
    return rx_e_cast(te->a, dt, x);
}

/* Largest finite value of a float dtype. */
static double float_max(rx_dtype dt)
{
    switch (dt) {
    case RX_DT_F16: return 65504.0;
    case RX_DT_BF16: return 3.3895313892515355e+38;
    case RX_DT_F32: return (double)FLT_MAX;
    default: return DBL_MAX;
    }
}

rx_expr *rx_te_min_value(rx_te *te, rx_dtype dt)
{
    if (rx_dtype_is_float(dt)) return rx_e_float(te->a, -float_max(dt), dt);
    if (dt == RX_DT_BOOL) return rx_e_typed_int(te->a, 0, dt);
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    return int_lit(te, lo, dt);
}

rx_expr *rx_te_max_value(rx_te *te, rx_dtype dt)
{
    if (rx_dtype_is_float(dt)) return rx_e_float(te->a, float_max(dt), dt);
    if (dt == RX_DT_BOOL) return rx_e_typed_int(te->a, 1, dt);
    if (dt == RX_DT_U64) return rx_e_typed_int(te->a, -1, dt); /* all ones */
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    return int_lit(te, hi, dt);
}

rx_expr *rx_te_simplify(rx_te *te, rx_expr *e)
{
    return rx_arith_simplify(te->ar, e);
}

bool rx_te_prove_equal(rx_te *te, rx_expr *a, rx_expr *b)
{
    return rx_arith_prove_equal(te->ar, a, b);
}
