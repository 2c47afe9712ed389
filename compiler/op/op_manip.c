/*
 * op_manip.c — shape-manipulation operators: attribute schemas and deduction rules.
 *
 * reshape, permute_dims, flatten, squeeze, expand_dims, concat, split, strided_slice,
 * take, broadcast_to, repeat, tile, tril and triu follow TVM's relax.op signatures and
 * NumPy's semantics. Each rule takes the operands' annotations and computes the result
 * annotation with symbolic dims (paper §4.1): element counts, sums and quotients are
 * built as expressions and simplified by the arithmetic, so flatten of (n, 4) gives
 * (n * 4,) and concat of (n, 4) and (m, 4) gives (n + m, 4).
 *
 * Two principles govern the rules. First, an error is reported only when the call is
 * provably wrong (literal sizes that disagree, an axis out of range, a literal -1 that
 * cannot be inferred); when the arithmetic can neither prove nor refute a relation the
 * call is accepted and left to a run-time check. Second, when an operand's dims or
 * ndim are unknown the rule degrades to the coarsest correct result (the paper's
 * coarse fallback): Tensor(ndim=k) when only the rank is known, Tensor(ndim=-1) when
 * not even that is. Every rule is O(ndim) arithmetic queries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op_int.h"

/* ---------------------------------------------------------------- helpers */

static rx_expr *lit(rx_dctx *c, int64_t v) { return rx_e_int(c->a, v); }

static rx_expr *bin(rx_dctx *c, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(c->a, k, x, y);
}

static const char *sstr(rx_dctx *c, const rx_sinfo *s) { return rx_sinfo_str(c->a, s); }
static const char *estr(rx_dctx *c, const rx_expr *e) { return rx_expr_str(c->a, e); }

/* "(3, 5)", "(n * 4,)", "()" */
static const char *dims_str(rx_dctx *c, rx_expr **dims, int n)
{
    return rx_op_dims_str(c->a, dims, n);
}

/* A tensor result; dims (when known) are simplified. */
static rx_sinfo *tensor(rx_dctx *c, rx_dtype dt, int ndim, rx_expr **dims)
{
    if (!dims || ndim < 0) return rx_si_tensor(c->a, dt, ndim, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, ndim > 0 ? ndim : 1);
    for (int i = 0; i < ndim; i++) d[i] = rx_d_simplify(c, dims[i]);
    return rx_si_tensor(c->a, dt, ndim, d);
}

static bool is_null(const rx_attr *a) { return !a || a->kind == RX_A_NULL; }

/* The integers of an INT, INTS or AXES attribute (arena array); count in *n. */
static int64_t *attr_ints(rx_dctx *c, const rx_attr *a, int *n)
{
    if (a->kind == RX_A_INT) {
        int64_t *v = RX_NEW(c->a, int64_t);
        v[0] = a->u.i;
        *n = 1;
        return v;
    }
    RX_ASSERT(a->kind == RX_A_ARRAY);
    int64_t *v = RX_NEWN(c->a, int64_t, a->u.arr.n > 0 ? a->u.arr.n : 1);
    for (int i = 0; i < a->u.arr.n; i++) {
        RX_ASSERT(a->u.arr.items[i]->kind == RX_A_INT);
        v[i] = a->u.arr.items[i]->u.i;
    }
    *n = a->u.arr.n;
    return v;
}

/* The expressions of a SIZES attribute (arena array); count in *n. */
static rx_expr **attr_sizes(rx_dctx *c, const rx_attr *a, int *n)
{
    RX_ASSERT(a->kind == RX_A_ARRAY);
    rx_expr **v = RX_NEWN(c->a, rx_expr *, a->u.arr.n > 0 ? a->u.arr.n : 1);
    for (int i = 0; i < a->u.arr.n; i++) v[i] = rx_d_attr_size(c, a->u.arr.items[i]);
    *n = a->u.arr.n;
    return v;
}

/* Normalizes a list of axes against ndim; false after an error (out of range or
 * repeated). */
static bool norm_axes(rx_dctx *c, const rx_node *call, const int64_t *ax, int n, int ndim,
                      int *out)
{
    for (int i = 0; i < n; i++) {
        if (!rx_d_axis(c, call, ax[i], ndim, &out[i])) return false;
        for (int j = 0; j < i; j++)
            if (out[j] == out[i]) {
                rx_op_fail(c, call, "axis %d is repeated", out[i]);
                return false;
            }
    }
    return true;
}

/* Is x == y? YES proved, NO proved different (their difference is a nonzero
 * literal), MAYBE otherwise. */
static rx_cmp dim_cmp(rx_dctx *c, rx_expr *x, rx_expr *y)
{
    if (rx_arith_prove_equal(c->ar, x, y)) return RX_CMP_YES;
    int64_t v;
    if (rx_expr_is_const(rx_d_simplify(c, bin(c, RX_E_SUB, x, y)), &v) && v != 0)
        return RX_CMP_NO;
    return RX_CMP_MAYBE;
}

static bool prove_ge(rx_dctx *c, rx_expr *x, rx_expr *y)
{
    return rx_arith_prove(c->ar, bin(c, RX_E_GE, x, y));
}

bool rx_op_shape_arg(rx_dctx *c, const rx_node *call, int i, int *ndim, rx_expr ***dims)
{
    const rx_node *a = call->args[i];
    const rx_sinfo *s = a->sinfo;
    if (s && s->kind == RX_SI_SHAPE) {
        *ndim = s->ndim;
        *dims = s->dims;
        return true;
    }
    if (!s && a->kind == RX_N_SHAPE) {
        *ndim = a->u.shape.ndim;
        *dims = a->u.shape.dims;
        return true;
    }
    rx_op_fail(c, call, "argument %d (shape) must be a shape, found %s", i,
               s ? sstr(c, s) : "an expression without annotation");
    return false;
}

static rx_expr **dims_copy(rx_dctx *c, rx_expr **d, int n)
{
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n > 0 ? n : 1);
    if (n > 0) memcpy(r, d, sizeof(*r) * (size_t)n);
    return r;
}

/* ---------------------------------------------------------------- reshape */

/* Product of the literal dims (0 when one is 0; 1 when none or on overflow). */
static int64_t literal_factor(rx_expr **dims, int n)
{
    int64_t p = 1, v;
    for (int i = 0; i < n; i++) {
        if (!rx_expr_is_const(dims[i], &v) || v < 0) continue;
        if (__builtin_mul_overflow(p, v, &p)) return 1; /* no usable factor */
    }
    return p;
}

/* Do two element counts provably differ? Beyond dim_cmp, a literal count that is not
 * a multiple of the other side's literal factor can never equal it: (n, 4) never has
 * 15 elements. */
static bool numel_differs(rx_dctx *c, rx_expr **xd, int xn, rx_expr *nx, rx_expr **td,
                          int tn, rx_expr *nt)
{
    if (dim_cmp(c, nx, nt) == RX_CMP_NO) return true;
    int64_t l, f;
    if (rx_expr_is_const(nt, &l) && (f = literal_factor(xd, xn)) > 1 && l % f != 0) return true;
    if (rx_expr_is_const(nx, &l) && (f = literal_factor(td, tn)) > 1 && l % f != 0) return true;
    return false;
}

static rx_sinfo *d_reshape(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    int tn;
    rx_expr **td;
    if (!x || !rx_op_shape_arg(c, call, 1, &tn, &td)) return NULL;
    if (!td) return tensor(c, x->dtype, tn, NULL);

    int infer = -1;
    for (int i = 0; i < tn; i++) {
        int64_t v;
        if (!rx_expr_is_const(td[i], &v) || v >= 0) continue;
        if (v != -1)
            return rx_op_fail(c, call, "negative size %lld in the target shape %s", (long long)v,
                              dims_str(c, td, tn));
        if (infer >= 0)
            return rx_op_fail(c, call, "more than one -1 in the target shape %s",
                              dims_str(c, td, tn));
        infer = i;
    }
    rx_expr **out = dims_copy(c, td, tn);
    if (infer >= 0) {
        if (!x->dims)
            return rx_op_fail(c, call, "cannot infer the -1 of %s: the shape of %s is unknown",
                              dims_str(c, td, tn), sstr(c, x));
        rx_expr *nx = rx_d_numel(c, x->dims, x->ndim);
        rx_expr *rest = lit(c, 1);
        for (int i = 0; i < tn; i++)
            if (i != infer) rest = bin(c, RX_E_MUL, rest, td[i]);
        rest = rx_d_simplify(c, rest);
        int64_t a, b;
        if (rx_expr_is_const(nx, &a) && rx_expr_is_const(rest, &b)) {
            if (b == 0 || a % b != 0)
                return rx_op_fail(c, call, "cannot reshape %s (%lld elements) to %s",
                                  sstr(c, x), (long long)a, dims_str(c, td, tn));
            out[infer] = lit(c, a / b);
        } else {
            /* (b * 768) / (b * 48) is 16 for every b > 0 (and any value fits b == 0) */
            rx_expr *q = rx_arith_exact_quotient(c->ar, nx, rest);
            if (!q) q = rx_d_simplify(c, bin(c, RX_E_FLOORDIV, nx, rest));
            if (!rx_arith_prove_equal(c->ar, bin(c, RX_E_MUL, q, rest), nx))
                return rx_op_fail(c, call,
                                  "cannot infer the -1 of %s from %s (%s elements): a -1 needs "
                                  "static sizes or a provable quotient",
                                  dims_str(c, td, tn), sstr(c, x), estr(c, nx));
            out[infer] = q;
        }
    } else if (x->dims) {
        rx_expr *nx = rx_d_numel(c, x->dims, x->ndim);
        rx_expr *nt = rx_d_numel(c, td, tn);
        if (numel_differs(c, x->dims, x->ndim, nx, td, tn, nt))
            return rx_op_fail(c, call, "cannot reshape %s (%s elements) to %s (%s elements)",
                              sstr(c, x), estr(c, nx), dims_str(c, td, tn), estr(c, nt));
    }
    return tensor(c, x->dtype, tn, out);
}

/* ---------------------------------------------------------------- permute_dims */

static rx_sinfo *d_permute_dims(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *axes = rx_call_attr(call, "axes");
    if (is_null(axes)) {
        if (!x->dims) return tensor(c, x->dtype, x->ndim, NULL);
        rx_expr **d = RX_NEWN(c->a, rx_expr *, x->ndim > 0 ? x->ndim : 1);
        for (int i = 0; i < x->ndim; i++) d[i] = x->dims[x->ndim - 1 - i];
        return tensor(c, x->dtype, x->ndim, d);
    }
    int n;
    int64_t *ax = attr_ints(c, axes, &n);
    if (x->ndim >= 0 && n != x->ndim)
        return rx_op_fail(c, call, "axes has %d entries but %s has %d dimensions", n, sstr(c, x),
                          x->ndim);
    int *p = RX_NEWN(c->a, int, n > 0 ? n : 1);
    if (!norm_axes(c, call, ax, n, n, p)) return NULL;
    if (!x->dims) return tensor(c, x->dtype, n, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) d[i] = x->dims[p[i]];
    return tensor(c, x->dtype, n, d);
}

/* ---------------------------------------------------------------- flatten */

static rx_sinfo *d_flatten(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    if (!x->dims) return tensor(c, x->dtype, 1, NULL);
    rx_expr *n = rx_d_numel(c, x->dims, x->ndim);
    return tensor(c, x->dtype, 1, &n);
}

/* ---------------------------------------------------------------- squeeze */

/* Is d (a dim) 1: YES proved, NO provably not, MAYBE unknown. */
static rx_cmp is_one(rx_dctx *c, rx_expr *d)
{
    if (rx_arith_prove_equal(c->ar, d, lit(c, 1))) return RX_CMP_YES;
    int64_t lo, hi;
    rx_arith_const_bound(c->ar, d, &lo, &hi);
    return (lo > 1 || hi < 1) ? RX_CMP_NO : RX_CMP_MAYBE;
}

static rx_sinfo *d_squeeze(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *axis = rx_call_attr(call, "axis");
    int nd = x->ndim;
    if (is_null(axis)) {
        /* Every dim of size 1 goes; a dim that may or may not be 1 makes the rank
         * depend on the values. */
        if (!x->dims) return tensor(c, x->dtype, -1, NULL);
        rx_expr **d = RX_NEWN(c->a, rx_expr *, nd > 0 ? nd : 1);
        int k = 0;
        for (int i = 0; i < nd; i++) {
            rx_cmp one = is_one(c, x->dims[i]);
            if (one == RX_CMP_MAYBE) return tensor(c, x->dtype, -1, NULL);
            if (one == RX_CMP_NO) d[k++] = x->dims[i];
        }
        return tensor(c, x->dtype, k, d);
    }
    int n;
    int64_t *ax = attr_ints(c, axis, &n);
    if (nd < 0) return tensor(c, x->dtype, -1, NULL);
    int *p = RX_NEWN(c->a, int, n > 0 ? n : 1);
    if (!norm_axes(c, call, ax, n, nd, p)) return NULL;
    if (!x->dims) return tensor(c, x->dtype, nd - n, NULL);
    /* A named axis must be 1: a literal other than 1 is an error, a symbolic dim is
     * dropped and left to a run-time check (as TVM does). */
    bool *drop = RX_NEWN(c->a, bool, nd > 0 ? nd : 1);
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (rx_expr_is_const(x->dims[p[i]], &v) && v != 1)
            return rx_op_fail(c, call, "cannot squeeze axis %d of %s: its size is %lld, not 1",
                              p[i], sstr(c, x), (long long)v);
        drop[p[i]] = true;
    }
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd > 0 ? nd : 1);
    int k = 0;
    for (int i = 0; i < nd; i++)
        if (!drop[i]) d[k++] = x->dims[i];
    return tensor(c, x->dtype, k, d);
}

/* ---------------------------------------------------------------- expand_dims */

static rx_sinfo *d_expand_dims(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    int n;
    int64_t *ax = attr_ints(c, rx_call_attr(call, "axis"), &n);
    if (x->ndim < 0) return tensor(c, x->dtype, -1, NULL);
    int rn = x->ndim + n;
    int *p = RX_NEWN(c->a, int, n > 0 ? n : 1);
    if (!norm_axes(c, call, ax, n, rn, p)) return NULL;
    if (!x->dims) return tensor(c, x->dtype, rn, NULL);
    bool *ins = RX_NEWN(c->a, bool, rn);
    for (int i = 0; i < n; i++) ins[p[i]] = true;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, rn);
    for (int i = 0, j = 0; i < rn; i++) d[i] = ins[i] ? lit(c, 1) : x->dims[j++];
    return tensor(c, x->dtype, rn, d);
}

/* ---------------------------------------------------------------- concat */

static rx_sinfo *d_concat(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *t = call->args[0]->sinfo;
    if (!t || t->kind != RX_SI_TUPLE)
        return rx_op_fail(c, call, "argument 0 (tensors) must be a tuple of tensors, found %s",
                          t ? sstr(c, t) : "an expression without annotation");
    if (t->nfields == 0) return rx_op_fail(c, call, "cannot concatenate an empty tuple");
    rx_dtype dt = RX_DT_UNKNOWN;
    int nd = -1;
    bool all_dims = true;
    for (int i = 0; i < t->nfields; i++) {
        const rx_sinfo *f = t->fields[i];
        if (f->kind != RX_SI_TENSOR)
            return rx_op_fail(c, call, "field %d of %s is not a tensor", i, sstr(c, t));
        if (!rx_d_same_dtype(c, call, dt, (rx_dtype)f->dtype, &dt)) return NULL;
        if (f->ndim >= 0 && nd >= 0 && f->ndim != nd)
            return rx_op_fail(c, call, "fields of %s differ in rank (%d and %d)", sstr(c, t), nd,
                              f->ndim);
        if (f->ndim >= 0) nd = f->ndim;
        if (!f->dims) all_dims = false;
    }
    const rx_attr *axis = rx_call_attr(call, "axis");
    if (is_null(axis)) { /* flattened */
        if (!all_dims) return tensor(c, dt, 1, NULL);
        rx_expr *sum = lit(c, 0);
        for (int i = 0; i < t->nfields; i++)
            sum = bin(c, RX_E_ADD, sum,
                      rx_d_numel(c, t->fields[i]->dims, t->fields[i]->ndim));
        return tensor(c, dt, 1, &sum);
    }
    if (nd < 0) return tensor(c, dt, -1, NULL);
    if (nd == 0) return rx_op_fail(c, call, "cannot concatenate 0-d tensors (%s)", sstr(c, t));
    int ax;
    if (!rx_d_axis(c, call, axis->u.i, nd, &ax)) return NULL;
    if (!all_dims) return tensor(c, dt, nd, NULL);
    const rx_sinfo *f0 = t->fields[0];
    rx_expr **d = dims_copy(c, f0->dims, nd);
    bool unproved = false;
    for (int i = 1; i < t->nfields; i++) {
        const rx_sinfo *f = t->fields[i];
        d[ax] = bin(c, RX_E_ADD, d[ax], f->dims[ax]);
        for (int k = 0; k < nd; k++) {
            if (k == ax) continue;
            rx_cmp r = dim_cmp(c, f0->dims[k], f->dims[k]);
            if (r == RX_CMP_NO)
                return rx_op_fail(c, call, "dimension %d differs between %s and %s (%s vs %s)", k,
                                  sstr(c, f0), sstr(c, f), estr(c, f0->dims[k]),
                                  estr(c, f->dims[k]));
            if (r == RX_CMP_MAYBE) unproved = true;
        }
    }
    /* Dims not proved equal: no single expression is right for every field. */
    if (unproved) return tensor(c, dt, nd, NULL);
    return tensor(c, dt, nd, d);
}

/* ---------------------------------------------------------------- split */

/* min(v, hi) unless v <= hi is proved. */
static rx_expr *clamp_hi(rx_dctx *c, rx_expr *v, rx_expr *hi)
{
    return prove_ge(c, hi, v) ? v : bin(c, RX_E_MIN, v, hi);
}

/* max(v, lo) unless v >= lo is proved. */
static rx_expr *clamp_lo(rx_dctx *c, rx_expr *v, rx_expr *lo)
{
    return prove_ge(c, v, lo) ? v : bin(c, RX_E_MAX, v, lo);
}

static rx_sinfo *d_split(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *ios = rx_call_attr(call, "indices_or_sections");
    int64_t axis_in = rx_call_attr(call, "axis")->u.i;
    int ax = 0;
    if (x->ndim == 0) return rx_op_fail(c, call, "cannot split a 0-d tensor %s", sstr(c, x));
    if (x->ndim > 0 && !rx_d_axis(c, call, axis_in, x->ndim, &ax)) return NULL;
    rx_expr *d = x->dims ? x->dims[ax] : NULL;
    int nout;
    rx_expr **len; /* extent along the axis of each output, NULL when unknown */
    if (ios->kind == RX_A_INT) {
        int64_t k = ios->u.i;
        if (k <= 0)
            return rx_op_fail(c, call, "the number of sections must be positive, got %lld",
                              (long long)k);
        int64_t dv;
        if (d && rx_expr_is_const(d, &dv) && dv % k != 0)
            return rx_op_fail(c, call,
                              "axis %d of %s (size %lld) does not divide into %lld sections",
                              ax, sstr(c, x), (long long)dv, (long long)k);
        if (k > 4096) return rx_op_fail(c, call, "too many sections (%lld)", (long long)k);
        nout = (int)k;
        len = RX_NEWN(c->a, rx_expr *, nout);
        for (int i = 0; i < nout; i++)
            len[i] = d ? bin(c, RX_E_FLOORDIV, d, lit(c, k)) : NULL;
    } else {
        int ni;
        rx_expr **idx = attr_sizes(c, ios, &ni);
        nout = ni + 1;
        len = RX_NEWN(c->a, rx_expr *, nout);
        for (int i = 0; d && i < nout; i++) {
            rx_expr *lo = i == 0 ? lit(c, 0) : idx[i - 1];
            rx_expr *hi = i == ni ? d : idx[i];
            int64_t lv, hv, dv;
            if (rx_expr_is_const(lo, &lv) && rx_expr_is_const(hi, &hv) &&
                rx_expr_is_const(d, &dv)) { /* NumPy slice d[lo:hi] */
                if (lv < 0) lv = lv + dv < 0 ? 0 : lv + dv;
                if (hv < 0) hv = hv + dv < 0 ? 0 : hv + dv;
                lv = lv > dv ? dv : lv;
                hv = hv > dv ? dv : hv;
                len[i] = lit(c, hv > lv ? hv - lv : 0);
                continue;
            }
            /* NumPy: a negative literal index counts from the end (d - |i|, at least 0). */
            if (rx_expr_is_const(lo, &lv) && lv < 0) lo = clamp_lo(c, bin(c, RX_E_ADD, d, lo), lit(c, 0));
            if (i < ni && rx_expr_is_const(hi, &hv) && hv < 0)
                hi = clamp_lo(c, bin(c, RX_E_ADD, d, hi), lit(c, 0));
            lo = clamp_hi(c, lo, d);
            hi = clamp_hi(c, hi, d);
            len[i] = clamp_lo(c, bin(c, RX_E_SUB, hi, lo), lit(c, 0));
        }
    }
    rx_sinfo **fields = RX_NEWN(c->a, rx_sinfo *, nout);
    for (int i = 0; i < nout; i++) {
        if (!d) {
            fields[i] = tensor(c, x->dtype, x->ndim, NULL);
            continue;
        }
        rx_expr **fd = dims_copy(c, x->dims, x->ndim);
        fd[ax] = len[i];
        fields[i] = tensor(c, x->dtype, x->ndim, fd);
    }
    return rx_si_tuple(c->a, fields, nout);
}

/* ---------------------------------------------------------------- strided_slice */

/* Normalizes a begin or end index v against extent d for a literal stride s, NumPy
 * style: negative literals count from the end; the result is clamped to [0, d] for a
 * positive stride and [-1, d - 1] for a negative one. */
static rx_expr *slice_index(rx_dctx *c, rx_expr *d, rx_expr *v, int64_t s)
{
    int64_t k;
    if (rx_expr_is_const(v, &k) && k < 0)
        return clamp_lo(c, bin(c, RX_E_ADD, d, v), lit(c, s > 0 ? 0 : -1));
    return clamp_hi(c, v, s > 0 ? d : bin(c, RX_E_SUB, d, lit(c, 1)));
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The extent of d[b:e:s]; s is a nonzero literal. */
static rx_expr *slice_len(rx_dctx *c, rx_expr *d, rx_expr *b, rx_expr *e, int64_t s)
{
    int64_t dv, bv, ev;
    if (rx_expr_is_const(d, &dv) && rx_expr_is_const(b, &bv) && rx_expr_is_const(e, &ev)) {
        int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dv : dv - 1;
        bv = clamp64(bv < 0 ? bv + dv : bv, lo, hi);
        ev = clamp64(ev < 0 ? ev + dv : ev, lo, hi);
        int64_t span = s > 0 ? ev - bv : bv - ev;
        int64_t as = s > 0 ? s : (s == INT64_MIN ? INT64_MAX : -s);
        return lit(c, span > 0 ? (span - 1) / as + 1 : 0);
    }
    rx_expr *bn = slice_index(c, d, b, s), *en = slice_index(c, d, e, s);
    rx_expr *span = s > 0 ? bin(c, RX_E_SUB, en, bn) : bin(c, RX_E_SUB, bn, en);
    int64_t as = s > 0 ? s : -s;
    rx_expr *len = as == 1 ? span
                           : bin(c, RX_E_FLOORDIV, bin(c, RX_E_ADD, span, lit(c, as - 1)),
                                 lit(c, as));
    return clamp_lo(c, rx_d_simplify(c, len), lit(c, 0));
}

static rx_sinfo *d_strided_slice(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    int na, nb, ne, ns = -1;
    int64_t *ax = attr_ints(c, rx_call_attr(call, "axes"), &na);
    rx_expr **b = attr_sizes(c, rx_call_attr(call, "begin"), &nb);
    rx_expr **e = attr_sizes(c, rx_call_attr(call, "end"), &ne);
    const rx_attr *sa = rx_call_attr(call, "strides");
    rx_expr **s = is_null(sa) ? NULL : attr_sizes(c, sa, &ns);
    if (nb != na || ne != na || (s && ns != na))
        return rx_op_fail(c, call, "axes, begin, end and strides must have one entry per axis "
                          "(got %d, %d, %d, %d)", na, nb, ne, s ? ns : na);
    bool static_strides = true;
    for (int i = 0; s && i < na; i++) {
        int64_t v;
        if (!rx_expr_is_const(s[i], &v)) static_strides = false;
        else if (v == 0) return rx_op_fail(c, call, "stride %d is 0", i);
    }
    if (x->ndim < 0) return tensor(c, x->dtype, -1, NULL);
    int *p = RX_NEWN(c->a, int, na > 0 ? na : 1);
    if (!norm_axes(c, call, ax, na, x->ndim, p)) return NULL;
    if (!x->dims || !static_strides) return tensor(c, x->dtype, x->ndim, NULL);
    rx_expr **d = dims_copy(c, x->dims, x->ndim);
    for (int i = 0; i < na; i++) {
        int64_t sv = 1;
        if (s) rx_expr_is_const(s[i], &sv);
        d[p[i]] = slice_len(c, x->dims[p[i]], b[i], e[i], sv);
    }
    return tensor(c, x->dtype, x->ndim, d);
}

/* ---------------------------------------------------------------- take */

static rx_sinfo *d_take(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    const rx_sinfo *ind = rx_d_tensor_arg(c, call, 1);
    if (!x || !ind) return NULL;
    if (ind->dtype != RX_DT_UNKNOWN && !rx_dtype_is_int((rx_dtype)ind->dtype))
        return rx_op_fail(c, call, "indices must be integers, found %s", sstr(c, ind));
    const char *mode = rx_call_attr(call, "mode")->u.s;
    if (strcmp(mode, "error") && strcmp(mode, "clip") && strcmp(mode, "wrap"))
        return rx_op_fail(c, call, "mode \"%s\" is not supported (known: \"error\", \"clip\", "
                          "\"wrap\")", mode);
    const rx_attr *axis = rx_call_attr(call, "axis");
    if (is_null(axis)) /* x is flattened: the result has the shape of indices */
        return tensor(c, x->dtype, ind->ndim, ind->dims);
    if (x->ndim == 0) return rx_op_fail(c, call, "cannot take along an axis of 0-d %s", sstr(c, x));
    if (x->ndim < 0 || ind->ndim < 0) return tensor(c, x->dtype, -1, NULL);
    int ax;
    if (!rx_d_axis(c, call, axis->u.i, x->ndim, &ax)) return NULL;
    int rn = x->ndim - 1 + ind->ndim;
    if (!x->dims || !ind->dims) return tensor(c, x->dtype, rn, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, rn > 0 ? rn : 1);
    int k = 0;
    for (int i = 0; i < ax; i++) d[k++] = x->dims[i];
    for (int i = 0; i < ind->ndim; i++) d[k++] = ind->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) d[k++] = x->dims[i];
    return tensor(c, x->dtype, rn, d);
}

/* ---------------------------------------------------------------- broadcast_to */

static rx_sinfo *d_broadcast_to(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    int tn;
    rx_expr **td;
    if (!x || !rx_op_shape_arg(c, call, 1, &tn, &td)) return NULL;
    if (tn >= 0 && x->ndim > tn)
        return rx_op_fail(c, call, "cannot broadcast %s to a shape of rank %d", sstr(c, x), tn);
    if (td && x->dims) {
        /* Right-aligned: each dim of x must be 1 or the target's. Refuted only when the
         * dims provably differ and x's dim is provably not 1. */
        for (int i = 0; i < x->ndim; i++) {
            rx_expr *xd = x->dims[x->ndim - 1 - i], *t = td[tn - 1 - i];
            if (dim_cmp(c, xd, t) == RX_CMP_NO && is_one(c, xd) == RX_CMP_NO)
                return rx_op_fail(c, call, "cannot broadcast %s to %s: dimension %d is %s, "
                                  "not 1 or %s", sstr(c, x), dims_str(c, td, tn),
                                  x->ndim - 1 - i, estr(c, xd), estr(c, t));
        }
    }
    return tensor(c, x->dtype, tn, td);
}

/* ---------------------------------------------------------------- repeat, tile */

static rx_sinfo *d_repeat(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    int64_t r = rx_call_attr(call, "repeats")->u.i;
    if (r < 0) return rx_op_fail(c, call, "repeats must be >= 0, got %lld", (long long)r);
    const rx_attr *axis = rx_call_attr(call, "axis");
    if (is_null(axis)) {
        if (!x->dims) return tensor(c, x->dtype, 1, NULL);
        rx_expr *n = bin(c, RX_E_MUL, rx_d_numel(c, x->dims, x->ndim), lit(c, r));
        return tensor(c, x->dtype, 1, &n);
    }
    if (x->ndim < 0) return tensor(c, x->dtype, -1, NULL);
    int ax;
    if (!rx_d_axis(c, call, axis->u.i, x->ndim, &ax)) return NULL;
    if (!x->dims) return tensor(c, x->dtype, x->ndim, NULL);
    rx_expr **d = dims_copy(c, x->dims, x->ndim);
    d[ax] = bin(c, RX_E_MUL, d[ax], lit(c, r));
    return tensor(c, x->dtype, x->ndim, d);
}

static rx_sinfo *d_tile(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    int nr;
    int64_t *r = attr_ints(c, rx_call_attr(call, "repeats"), &nr);
    for (int i = 0; i < nr; i++)
        if (r[i] < 0) return rx_op_fail(c, call, "repeats must be >= 0, got %lld", (long long)r[i]);
    if (x->ndim < 0) return tensor(c, x->dtype, -1, NULL);
    int rn = x->ndim > nr ? x->ndim : nr;
    if (!x->dims) return tensor(c, x->dtype, rn, NULL);
    /* Both lists are right-aligned, padded with 1s on the left. */
    rx_expr **d = RX_NEWN(c->a, rx_expr *, rn > 0 ? rn : 1);
    for (int i = 0; i < rn; i++) {
        int xi = i - (rn - x->ndim), ri = i - (rn - nr);
        rx_expr *xd = xi >= 0 ? x->dims[xi] : lit(c, 1);
        d[i] = ri >= 0 ? bin(c, RX_E_MUL, xd, lit(c, r[ri])) : xd;
    }
    return tensor(c, x->dtype, rn, d);
}

/* ---------------------------------------------------------------- tril, triu */

static rx_sinfo *d_tri(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    if (x->ndim >= 0 && x->ndim < 2)
        return rx_op_fail(c, call, "needs a tensor of at least 2 dimensions, found %s", sstr(c, x));
    return tensor(c, x->dtype, x->ndim, x->dims);
}

/* ---------------------------------------------------------------- the table */

static const rx_attr_spec permute_attrs[] = {{"axes", RX_AT_INTS, true, "null"}};
static const rx_attr_spec squeeze_attrs[] = {{"axis", RX_AT_AXES, true, "null"}};
static const rx_attr_spec expand_attrs[] = {{"axis", RX_AT_AXES, false, NULL}};
static const rx_attr_spec concat_attrs[] = {{"axis", RX_AT_INT, true, "0"}};
static const rx_attr_spec split_attrs[] = {
    {"indices_or_sections", RX_AT_SPLIT, false, NULL},
    {"axis", RX_AT_INT, false, "0"},
};
static const rx_attr_spec slice_attrs[] = {
    {"axes", RX_AT_INTS, false, NULL},
    {"begin", RX_AT_SIZES, false, NULL},
    {"end", RX_AT_SIZES, false, NULL},
    {"strides", RX_AT_SIZES, true, "null"},
};
static const rx_attr_spec take_attrs[] = {{"axis", RX_AT_INT, true, "null"},
                                          {"mode", RX_AT_STR, false, "\"error\""}};
static const rx_attr_spec repeat_attrs[] = {
    {"repeats", RX_AT_INT, false, NULL},
    {"axis", RX_AT_INT, true, "null"},
};
static const rx_attr_spec tile_attrs[] = {{"repeats", RX_AT_INTS, false, NULL}};
static const rx_attr_spec tri_attrs[] = {{"k", RX_AT_INT, false, "0"}};

/* The shape-manipulation ops (registered by op/registry.c). */
const rx_op rx_ops_manip[] = {
    {"reshape", 2, 2, NULL, 0, d_reshape, 0},
    {"permute_dims", 1, 1, RX_ATTRS(permute_attrs), d_permute_dims, 0},
    {"flatten", 1, 1, NULL, 0, d_flatten, 0},
    {"squeeze", 1, 1, RX_ATTRS(squeeze_attrs), d_squeeze, 0},
    {"expand_dims", 1, 1, RX_ATTRS(expand_attrs), d_expand_dims, 0},
    {"concat", 1, 1, RX_ATTRS(concat_attrs), d_concat, 0},
    {"split", 1, 1, RX_ATTRS(split_attrs), d_split, 0},
    {"strided_slice", 1, 1, RX_ATTRS(slice_attrs), d_strided_slice, 0},
    {"take", 2, 2, RX_ATTRS(take_attrs), d_take, 0},
    {"broadcast_to", 2, 2, NULL, 0, d_broadcast_to, 0},
    {"repeat", 1, 1, RX_ATTRS(repeat_attrs), d_repeat, 0},
    {"tile", 1, 1, RX_ATTRS(tile_attrs), d_tile, 0},
    {"tril", 1, 1, RX_ATTRS(tri_attrs), d_tri, 0},
    {"triu", 1, 1, RX_ATTRS(tri_attrs), d_tri, 0},
};
const int rx_ops_manip_count = RX_COUNTOF(rx_ops_manip);
