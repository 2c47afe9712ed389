/*
 * legalize_slice.c — legalization rules of the ops that cut and join along an axis:
 * concat, split, strided_slice, take.
 *
 * Each output is one compute over its deduced dims whose element is a load of an
 * operand at a shifted index; the shifts are exactly the offsets deduction used
 * (op_manip.c), so a kernel never reads outside what the annotation promised.
 *   concat          fields x0..xk-1 of the tuple operand (each one call_tir argument);
 *                   out[.., i, ..] = select(i < o1, x0[.., i, ..], select(i < o2,
 *                   x1[.., i - o1, ..], ...)) with o the running sums of the fields'
 *                   extents along `axis` (symbolic: n, n + m). `axis` null
 *                   concatenates the raveled fields (each unraveled row-major).
 *                   Relies on select reading only the chosen operand (C: `?:`).
 *   split           output j reads x[.., i + off_j, ..]: off_j = j * (d // sections)
 *                   for a number of sections; for indices, off_j is the j-th
 *                   boundary normalized as NumPy's d[lo:hi] (a negative literal counts
 *                   from the end when d is literal; otherwise min(lo, d), as deduction
 *                   clamped it). A negative index against a symbolic extent is
 *                   reported (deduction cannot size it either); a symbolic index is
 *                   checked nonnegative at run time (lg_require_nonneg).
 *   strided_slice   per sliced axis, out index i reads begin' + i * stride, begin'
 *                   normalized as deduction's slice_index: a negative literal begin
 *                   is max(d + begin, lo), anything else min(begin, hi), with [lo, hi]
 *                   = [0, d] for a positive stride and [-1, d - 1] for a negative one
 *                   (so begin=-1, stride=-1 starts at d - 1 and walks down). Strides
 *                   must be literals (deduction gives no dims otherwise). A symbolic
 *                   begin is assumed nonnegative, as in deduction, and checked at run
 *                   time (lg_require_nonneg: it could read before x otherwise).
 *   take            out[pre, j..., post] = x[pre, fix(ind[j...]), post] along `axis`;
 *                   `axis` null indexes the raveled x (the result has ind's shape).
 *                   By `mode`: "error" (default) fix(v) = v + d when v < 0 (NumPy's
 *                   negative indices), and a v still outside [0, d) is left for the
 *                   kernel's index check (codegen: a load at a data-dependent index is
 *                   checked, the kernel fails naming buffer, axis, index and extent);
 *                   "clip" then clamps into [0, d - 1] (TVM's mode "clip"); "wrap" is
 *                   v mod d (floor). i32 and i64 indices are widened to i64 first.
 *                   (docs/ops.md)
 * Cost: one pass over the output; concat's select chain is O(fields) per element.
 */
#include <string.h>

#include "legalize_int.h"

enum { MAXD = 64 };

typedef struct sctx {
    lg_ctx *c;
    rx_te_tensor *x, *ind;
    rx_te_tensor **xs;       /* concat: the fields */
    rx_expr **off;           /* concat: offsets o0 = 0, o1, ..., ok; slice: begin' per axis */
    int nx;                  /* concat: field count */
    int ax;                  /* the axis (-1: flattened) */
    int nd;                  /* result rank */
    rx_expr *shift;          /* split: this output's offset */
    bool sliced[MAXD];       /* strided_slice: the axis is sliced */
    int64_t step[MAXD];      /* strided_slice: stride per axis */
    int mode;                /* take: TAKE_ERROR, TAKE_CLIP, TAKE_WRAP */
} sctx;

enum { TAKE_ERROR, TAKE_CLIP, TAKE_WRAP }; /* take's `mode` */

static rx_expr *lit(lg_ctx *c, int64_t v) { return rx_e_int(c->a, v); }
static rx_expr *bin(lg_ctx *c, rx_ekind k, rx_expr *x, rx_expr *y)
{
    return rx_e_binary(c->a, k, x, y);
}

static rx_expr **copy_idx(lg_ctx *c, rx_expr *const *idx, int n)
{
    rx_expr **o = RX_NEWN(c->a, rx_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) o[i] = idx[i];
    return o;
}

/* The element count of t (simplified). */
static rx_expr *numel(lg_ctx *c, const rx_te_tensor *t)
{
    rx_expr *n = lit(c, 1);
    for (int k = 0; k < rx_te_ndim(t); k++) n = bin(c, RX_E_MUL, n, rx_te_dim(t, k));
    return rx_te_simplify(c->te, n);
}

static bool check_rank(lg_ctx *c, int n)
{
    return n <= MAXD ? true : lg_fail(c, "more than %d dimensions", MAXD);
}

/* ---------------------------------------------------------------- concat */
/* Field k's element at position p along the axis (the flat position when ax < 0). */
static rx_expr *field_at(rx_te *te, sctx *s, int k, rx_expr *const *idx, rx_expr *p)
{
    if (s->ax < 0) return rx_te_at(te, s->xs[k], lg_unravel(s->c, s->xs[k], p));
    rx_expr **xi = copy_idx(s->c, idx, s->nd);
    xi[s->ax] = p;
    return rx_te_at(te, s->xs[k], xi);
}

static rx_expr *concat_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    lg_ctx *c = s->c;
    rx_expr *i = idx[s->ax < 0 ? 0 : s->ax];
    int last = s->nx - 1;
    rx_expr *v = field_at(te, s, last, idx, rx_te_simplify(te, bin(c, RX_E_SUB, i, s->off[last])));
    for (int k = last - 1; k >= 0; k--) {
        rx_expr *p = rx_te_simplify(te, bin(c, RX_E_SUB, i, s->off[k]));
        v = rx_e_select(c->a, bin(c, RX_E_LT, i, s->off[k + 1]), field_at(te, s, k, idx, p), v);
    }
    return v;
}

static bool rule_concat(lg_ctx *c)
{
    sctx s = {0};
    s.c = c;
    const rx_sinfo *ts = c->call->args[0]->sinfo;
    if (!ts || ts->kind != RX_SI_TUPLE || ts->nfields == 0)
        return lg_fail(c, "argument 0 must be a nonempty tuple of tensors");
    s.nx = ts->nfields;
    s.xs = RX_NEWN(c->a, rx_te_tensor *, s.nx);
    for (int k = 0; k < s.nx; k++)
        if (!(s.xs[k] = lg_input_field(c, 0, k, rx_arena_printf(c->a, "x%d", k)))) return false;
    const rx_sinfo *o = lg_out(c, 0);
    s.nd = o->ndim;
    if (!check_rank(c, s.nd)) return false;
    const rx_attr *axis = rx_call_attr(c->call, "axis");
    s.ax = -1;
    if (axis->kind != RX_A_NULL) {
        if (!lg_axis(c, axis->u.i, s.nd, &s.ax)) return false;
        for (int k = 0; k < s.nx; k++)
            if (rx_te_ndim(s.xs[k]) != s.nd) return lg_fail(c, "field %d has a different rank", k);
    }
    s.off = RX_NEWN(c->a, rx_expr *, s.nx + 1);
    s.off[0] = lit(c, 0);
    for (int k = 0; k < s.nx; k++) {
        rx_expr *ext = s.ax < 0 ? numel(c, s.xs[k]) : rx_te_dim(s.xs[k], s.ax);
        s.off[k + 1] = rx_te_simplify(c->te, bin(c, RX_E_ADD, s.off[k], ext));
    }
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               concat_cb, &s));
    return true;
}

/* ---------------------------------------------------------------- split */
static rx_expr *split_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    rx_expr **xi = copy_idx(s->c, idx, s->nd);
    xi[s->ax] = rx_te_simplify(te, bin(s->c, RX_E_ADD, idx[s->ax], s->shift));
    return rx_te_at(te, s->x, xi);
}

/* The start of the piece after boundary lo along an axis of extent d, as deduction
 * normalized it (a negative literal counts from the end, as in NumPy). */
static rx_expr *split_start(lg_ctx *c, rx_expr *lo, rx_expr *d)
{
    int64_t lv, dv;
    if (rx_expr_is_const(lo, &lv) && rx_expr_is_const(d, &dv)) {
        if (lv < 0) lv = lv + dv < 0 ? 0 : lv + dv;
        return lit(c, lv > dv ? dv : lv);
    }
    if (rx_expr_is_const(lo, &lv) && lv < 0) /* counts from the end: max(d + lo, 0) */
        lo = bin(c, RX_E_MAX, bin(c, RX_E_ADD, d, lo), lit(c, 0));
    return rx_te_simplify(c->te, bin(c, RX_E_MIN, lo, d));
}

static bool rule_split(lg_ctx *c)
{
    sctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    s.nd = rx_te_ndim(s.x);
    if (s.nd == 0) return lg_fail(c, "cannot split a 0-d tensor");
    if (!check_rank(c, s.nd)) return false;
    if (!lg_axis(c, rx_call_attr(c->call, "axis")->u.i, s.nd, &s.ax)) return false;
    const rx_sinfo *os = c->call->sinfo;
    RX_ASSERT(os->kind == RX_SI_TUPLE);
    const rx_attr *ios = rx_call_attr(c->call, "indices_or_sections");
    rx_expr *d = rx_te_dim(s.x, s.ax);
    for (int j = 0; j < os->nfields; j++) {
        if (ios->kind == RX_A_INT) {
            rx_expr *len = bin(c, RX_E_FLOORDIV, d, lit(c, ios->u.i));
            s.shift = rx_te_simplify(c->te, bin(c, RX_E_MUL, lit(c, j), len));
        } else {
            RX_ASSERT(ios->kind == RX_A_ARRAY && ios->u.arr.n == os->nfields - 1);
            rx_expr *lo = j == 0 ? lit(c, 0) : lg_attr_size(c, ios->u.arr.items[j - 1]);
            int64_t lv;
            if (!rx_expr_is_const(lo, &lv)) lg_require_nonneg(c, lo, "index");
            if (!(s.shift = split_start(c, lo, d))) return false;
        }
        const rx_sinfo *o = lg_out(c, j);
        lg_output(c, rx_te_compute(c->te, rx_arena_printf(c->a, "%s_%d", lg_tname(c), j),
                                   (rx_dtype)o->dtype, o->ndim, o->dims, split_cb, &s));
    }
    return true;
}

/* ---------------------------------------------------------------- strided_slice */
static rx_expr *slice_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    lg_ctx *c = s->c;
    rx_expr **xi = copy_idx(c, idx, s->nd);
    for (int k = 0; k < s->nd; k++)
        if (s->sliced[k])
            xi[k] = rx_te_simplify(te, bin(c, RX_E_ADD, s->off[k],
                                           bin(c, RX_E_MUL, idx[k], lit(c, s->step[k]))));
    return rx_te_at(te, s->x, xi);
}

/* begin normalized against extent d for stride st (the header essay). */
static rx_expr *slice_begin(lg_ctx *c, rx_expr *d, rx_expr *b, int64_t st)
{
    int64_t bv;
    if (rx_expr_is_const(b, &bv) && bv < 0)
        return rx_te_simplify(c->te, bin(c, RX_E_MAX, bin(c, RX_E_ADD, d, b), lit(c, st > 0 ? 0 : -1)));
    rx_expr *hi = st > 0 ? d : bin(c, RX_E_SUB, d, lit(c, 1));
    return rx_te_simplify(c->te, bin(c, RX_E_MIN, b, hi));
}

static bool rule_strided_slice(lg_ctx *c)
{
    sctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x"))) return false;
    s.nd = rx_te_ndim(s.x);
    if (!check_rank(c, s.nd)) return false;
    int64_t ax[MAXD];
    int na;
    lg_attr_ints(rx_call_attr(c->call, "axes"), ax, MAXD, &na);
    const rx_attr *ba = rx_call_attr(c->call, "begin"), *ea = rx_call_attr(c->call, "end");
    const rx_attr *sa = rx_call_attr(c->call, "strides");
    RX_ASSERT(ba->kind == RX_A_ARRAY && ea->kind == RX_A_ARRAY && ba->u.arr.n == na);
    s.off = RX_NEWN(c->a, rx_expr *, s.nd > 0 ? s.nd : 1);
    for (int i = 0; i < na; i++) {
        int p;
        if (!lg_axis(c, ax[i], s.nd, &p)) return false;
        int64_t st = 1;
        if (sa->kind == RX_A_ARRAY) {
            rx_expr *se = lg_attr_size(c, sa->u.arr.items[i]);
            if (!rx_expr_is_const(se, &st) || st == 0)
                return lg_fail(c, "strides must be nonzero integer literals");
        }
        int64_t bv;
        rx_expr *be = lg_attr_size(c, ba->u.arr.items[i]);
        if (!rx_expr_is_const(be, &bv)) lg_require_nonneg(c, be, "begin");
        s.sliced[p] = true;
        s.step[p] = st;
        s.off[p] = slice_begin(c, rx_te_dim(s.x, p), lg_attr_size(c, ba->u.arr.items[i]), st);
    }
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               slice_cb, &s));
    return true;
}

/* ---------------------------------------------------------------- take */
static rx_expr *take_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    sctx *s = ud;
    lg_ctx *c = s->c;
    int ni = rx_te_ndim(s->ind), xn = rx_te_ndim(s->x), a = s->ax < 0 ? 0 : s->ax;
    rx_expr *v = rx_te_cast(te, RX_DT_I64, rx_te_at(te, s->ind, idx + a));
    rx_expr *d = s->ax < 0 ? numel(c, s->x) : rx_te_dim(s->x, s->ax);
    if (s->mode == TAKE_WRAP) { /* d > 0: v mod d; d == 0 keeps v, which the check rejects */
        v = rx_e_select(c->a, bin(c, RX_E_GT, d, lit(c, 0)), bin(c, RX_E_FLOORMOD, v, d), v);
    } else {
        if (!rx_dtype_is_uint(rx_te_dtype(s->ind)))
            v = rx_e_select(c->a, bin(c, RX_E_LT, v, lit(c, 0)), bin(c, RX_E_ADD, v, d), v);
        if (s->mode == TAKE_CLIP)
            v = bin(c, RX_E_MAX,
                    bin(c, RX_E_MIN, v, rx_te_simplify(te, bin(c, RX_E_SUB, d, lit(c, 1)))), lit(c, 0));
    }
    if (s->ax < 0) return rx_te_at(te, s->x, lg_unravel(c, s->x, v));
    rx_expr **xi = RX_NEWN(c->a, rx_expr *, xn);
    for (int k = 0; k < xn; k++) xi[k] = k < a ? idx[k] : k == a ? v : idx[k - 1 + ni];
    return rx_te_at(te, s->x, xi);
}

static bool rule_take(lg_ctx *c)
{
    sctx s = {0};
    s.c = c;
    if (!(s.x = lg_input(c, 0, "x")) || !(s.ind = lg_input(c, 1, "indices"))) return false;
    if (!rx_dtype_is_int(rx_te_dtype(s.ind))) return lg_fail(c, "indices must be integers");
    const rx_attr *axis = rx_call_attr(c->call, "axis");
    s.ax = -1;
    if (axis->kind != RX_A_NULL && !lg_axis(c, axis->u.i, rx_te_ndim(s.x), &s.ax)) return false;
    const char *mode = rx_call_attr(c->call, "mode")->u.s;
    s.mode = !strcmp(mode, "clip") ? TAKE_CLIP : !strcmp(mode, "wrap") ? TAKE_WRAP : TAKE_ERROR;
    const rx_sinfo *o = lg_out(c, 0);
    lg_output(c, rx_te_compute(c->te, lg_tname(c), (rx_dtype)o->dtype, o->ndim, o->dims,
                               take_cb, &s));
    return true;
}

const lg_rule_entry rx_lg_slice[] = {
    {"concat", rule_concat},
    {"split", rule_split},
    {"strided_slice", rule_strided_slice},
    {"take", rule_take},
};
const int rx_lg_slice_count = RX_COUNTOF(rx_lg_slice);
