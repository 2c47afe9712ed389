/*
 * library_view.c — matmul operands read as strided views, for blas.matmul_view (the
 * view half of partial library lowering; library_lower.c decides when to use it).
 *
 * Attention as exporters write it multiplies tensors that are only re-indexings of a
 * contiguous one: q = permute(reshape(q_proj, (b, s, h, d)), (0, 2, 1, 3)), k^T one more
 * permute of the same, grouped-query k/v repeated along the heads (relax `repeat`, or
 * PyTorch's expand_dims + broadcast_to + reshape), a scale multiplied in before or after.
 * Materializing those views costs a copy each and leaves the product to a generated
 * kernel; OpenBLAS reads them directly when each batch item's matrix is a 2-D strided
 * slab with one unit stride (row-major, or transposed: the trans flag and lda say which).
 *
 * The model. An operand L (rank r) is described relative to a base tensor X (any
 * producer; dense row-major at run time) as
 *   V = reshape(X, S)                 S: r extents, so V is X itself, re-shaped (free)
 *   W = repeat(V, R)                  R: r constant factors, W's axis i has S[i] * R[i]
 *                                     elements and index i reads V's i / R[i] (numpy's
 *                                     repeat; R on an extent-1 axis is a broadcast)
 *   L = permute(W, P)                 L's axis j is W's axis P[j]
 *   times alpha                       scalar constants multiplied in (sgemm's alpha)
 * rx_lv_view_of builds it from the operand outwards (recursively through the producers
 * bound in the function), absorbing
 *   permute_dims                      P composed;
 *   repeat(axis)                      R[P[axis]] *= repeats;
 *   expand_dims                       a new V axis of extent 1 at V's front (strides of the
 *                                     others unchanged), mapped where the axis is inserted;
 *   broadcast_to                      new leading axes and extent-1 axes get R = the
 *                                     (literal) target extent;
 *   reshape                           identical extents (nothing); a plain view (P the
 *                                     identity, R all 1): S becomes the target; L axes
 *                                     j, j+1 merged where j+1 is a broadcast extent-1 V
 *                                     axis (PyTorch's repeat_kv): R[P[j]] *= its R;
 *   multiply by a scalar constant     alpha *= c (either operand order, f32 result of the
 *                                     other operand's shape);
 * and stops at anything else, which becomes the base (a plain view of itself). Each
 * absorbed op stays in the function for its other users (DCE drops it when none).
 *
 * Encoding (the int64 descriptor blas.matmul_view reads, runtime/library.c): S must be
 * expressible from X's run-time shape: each extent a literal (> 0), one of X's dims
 * (-(1 + i)), or at most one inferred from X's element count (0). rx_lv_encode_operand
 * appends r, S, R, P; false when an extent is none of these.
 *
 * Cost: O(depth * r) per operand, depth at most LV_MAX_DEPTH producers.
 */
#include "library_int.h"

#include <string.h>

#include "relax/op.h"

enum { LV_MAX_DEPTH = 16 };

static bool is_op(const rx_node *n, const char *name)
{
    return n && n->kind == RX_N_CALL && n->call_kind == RX_CALL_OP &&
           !strcmp(n->u.call.op->name, name);
}

static bool tensor_of_rank(const rx_sinfo *s, int lo, int hi)
{
    return s && s->kind == RX_SI_TENSOR && s->dims && s->ndim >= lo && s->ndim <= hi;
}

/* The plain view of n: X = n, S its extents. */
static bool plain(rx_lv_view *v, rx_node *n)
{
    if (!tensor_of_rank(n->sinfo, 1, RX_LV_MAXR) || n->sinfo->dtype != RX_DT_F32) return false;
    memset(v, 0, sizeof *v);
    v->base = n;
    v->r = n->sinfo->ndim;
    v->alpha = 1.0;
    for (int i = 0; i < v->r; i++) {
        v->S[i] = n->sinfo->dims[i];
        v->R[i] = 1;
        v->P[i] = i;
    }
    return true;
}

static bool is_plain(const rx_lv_view *v)
{
    for (int i = 0; i < v->r; i++)
        if (v->P[i] != i || v->R[i] != 1) return false;
    return true;
}

/* Whether L's axis j has extent e (symbolically, or both literal). */
static bool lsize_is(const rx_lv_view *v, int j, const rx_expr *e)
{
    int a = v->P[j];
    int64_t s, t;
    if (v->R[a] == 1 && rx_expr_same(v->S[a], e)) return true;
    return rx_expr_is_const(v->S[a], &s) && rx_expr_is_const(e, &t) && s * v->R[a] == t;
}

static bool norm_axis(int64_t ax, int r, int *out)
{
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r) return false;
    *out = (int)ax;
    return true;
}

/* Inserts a V axis of extent one (V's front) as L's axis `at`, repeated rep times. */
static void insert_axis(rx_lv_view *v, int at, int64_t rep, rx_arena *a)
{
    for (int i = v->r; i > 0; i--) v->S[i] = v->S[i - 1], v->R[i] = v->R[i - 1];
    v->S[0] = rx_e_int(a, 1);
    v->R[0] = rep;
    for (int j = v->r; j > at; j--) v->P[j] = v->P[j - 1] + 1;
    for (int j = 0; j < at; j++) v->P[j] += 1;
    v->P[at] = 0;
    v->r++;
}

/* Drops L's axis j and its V axis (extent one). */
static void drop_axis(rx_lv_view *v, int j)
{
    int a = v->P[j];
    for (int i = a; i < v->r - 1; i++) v->S[i] = v->S[i + 1], v->R[i] = v->R[i + 1];
    for (int k = j; k < v->r - 1; k++) v->P[k] = v->P[k + 1];
    v->r--;
    for (int k = 0; k < v->r; k++)
        if (v->P[k] > a) v->P[k]--;
}

static bool apply_reshape(rx_lv_view *v, const rx_sinfo *out)
{
    int t = out->ndim;
    if (t == v->r) {
        bool same = true;
        for (int j = 0; j < t && same; j++) same = lsize_is(v, j, out->dims[j]);
        if (same) return true;
    }
    if (is_plain(v)) {
        v->r = t;
        for (int i = 0; i < t; i++) v->S[i] = out->dims[i], v->R[i] = 1, v->P[i] = i;
        return true;
    }
    if (t != v->r - 1) return false;
    for (int j = 0; j + 1 < v->r; j++) { /* merge j, j+1: j+1 a broadcast axis */
        int64_t one, ej, want;
        int b = v->P[j + 1], a = v->P[j];
        if (!rx_expr_is_const(v->S[b], &one) || one != 1) continue;
        bool ok = true;
        for (int k = 0; k < j && ok; k++) ok = lsize_is(v, k, out->dims[k]);
        for (int k = j + 2; k < v->r && ok; k++) ok = lsize_is(v, k, out->dims[k - 1]);
        if (!ok) return false;
        if (!(rx_expr_is_const(v->S[a], &ej) && rx_expr_is_const(out->dims[j], &want) &&
              ej * v->R[a] * v->R[b] == want))
            return false;
        v->R[a] *= v->R[b];
        drop_axis(v, j + 1);
        return true;
    }
    return false;
}

static bool apply_broadcast(rx_lv_view *v, const rx_sinfo *out, rx_arena *a)
{
    int t = out->ndim;
    if (t < v->r || t > RX_LV_MAXR) return false;
    while (v->r < t) { /* t <= RX_LV_MAXR */
        int64_t e;
        if (!rx_expr_is_const(out->dims[t - v->r - 1], &e) || e < 1) return false;
        insert_axis(v, 0, e, a);
    }
    for (int j = 0; j < t; j++) {
        if (lsize_is(v, j, out->dims[j])) continue;
        int64_t one, e;
        int ax = v->P[j];
        if (v->R[ax] != 1 || !rx_expr_is_const(v->S[ax], &one) || one != 1 ||
            !rx_expr_is_const(out->dims[j], &e) || e < 1)
            return false;
        v->R[ax] = e;
    }
    return true;
}

/* The literal value of a scalar f32/f64 constant (seen through a variable), or false. */
static bool scalar_const(const rx_lv_defs *defs, const rx_node *n, double *out)
{
    if (n && n->kind == RX_N_VAR) n = defs->def(defs->ctx, n);
    if (!n || n->kind != RX_N_CONST) return false;
    const rx_const *k = n->u.konst;
    int64_t numel = 1;
    for (int i = 0; i < k->ndim; i++) numel *= k->shape[i];
    if (numel != 1) return false;
    if (k->dtype == RX_DT_F32 && k->nbytes >= 4) {
        float f;
        memcpy(&f, k->data, sizeof f);
        *out = f;
        return true;
    }
    if (k->dtype == RX_DT_F64 && k->nbytes >= 8) {
        memcpy(out, k->data, sizeof *out);
        return true;
    }
    return false;
}

/* Applies the op call n (whose first view operand is described by *v) to *v. */
static bool apply(const rx_lv_defs *defs, rx_lv_view *v, const rx_node *n, rx_arena *a)
{
    const rx_sinfo *out = n->sinfo;
    if (!tensor_of_rank(out, 1, RX_LV_MAXR) || out->dtype != RX_DT_F32) return false;
    if (is_op(n, "permute_dims")) {
        const rx_attr *ax = rx_call_attr(n, "axes");
        int np[RX_LV_MAXR];
        for (int j = 0; j < v->r; j++) {
            int k = v->r - 1 - j;
            if (ax->kind == RX_A_ARRAY &&
                (ax->u.arr.n != v->r || ax->u.arr.items[j]->kind != RX_A_INT ||
                 !norm_axis(ax->u.arr.items[j]->u.i, v->r, &k)))
                return false;
            np[j] = v->P[k];
        }
        memcpy(v->P, np, sizeof(int) * (size_t)v->r);
        return true;
    }
    if (is_op(n, "repeat")) {
        const rx_attr *ax = rx_call_attr(n, "axis"), *rep = rx_call_attr(n, "repeats");
        int k;
        if (ax->kind != RX_A_INT || rep->kind != RX_A_INT || rep->u.i < 1 ||
            !norm_axis(ax->u.i, v->r, &k))
            return false;
        v->R[v->P[k]] *= rep->u.i;
        return true;
    }
    if (is_op(n, "expand_dims")) {
        if (out->ndim > RX_LV_MAXR) return false;
        bool inserted[RX_LV_MAXR] = {false};
        const rx_attr *ax = rx_call_attr(n, "axis");
        int cnt = ax->kind == RX_A_ARRAY ? ax->u.arr.n : 1;
        for (int i = 0; i < cnt; i++) {
            const rx_attr *it = ax->kind == RX_A_ARRAY ? ax->u.arr.items[i] : ax;
            int k;
            if (it->kind != RX_A_INT || !norm_axis(it->u.i, out->ndim, &k)) return false;
            inserted[k] = true;
        }
        for (int k = 0; k < out->ndim; k++)
            if (inserted[k] && v->r < RX_LV_MAXR) insert_axis(v, k, 1, a);
        return v->r == out->ndim;
    }
    if (is_op(n, "broadcast_to")) return apply_broadcast(v, out, a);
    if (is_op(n, "reshape")) return apply_reshape(v, out);
    if (is_op(n, "multiply")) { /* the caller made *v from the non-constant operand */
        double c;
        if (!scalar_const(defs, n->args[0], &c) && !scalar_const(defs, n->args[1], &c))
            return false;
        v->alpha *= c;
        return true;
    }
    return false;
}

/* The view operand of the op call n: its first argument, or for a multiply the operand
 * that is not a scalar constant; NULL when n is not an op the view absorbs. */
static rx_node *view_arg(const rx_lv_defs *defs, const rx_node *n)
{
    static const char *const ops[] = {"permute_dims", "repeat", "expand_dims",
                                      "broadcast_to", "reshape"};
    if (!n || n->kind != RX_N_CALL || n->call_kind != RX_CALL_OP || n->nargs < 1) return NULL;
    for (int i = 0; i < RX_COUNTOF(ops); i++)
        if (is_op(n, ops[i])) return n->args[0];
    if (is_op(n, "multiply") && n->nargs == 2) {
        double c;
        if (scalar_const(defs, n->args[1], &c)) return n->args[0];
        if (scalar_const(defs, n->args[0], &c)) return n->args[1];
    }
    return NULL;
}

static bool view_rec(const rx_lv_defs *defs, rx_node *n, rx_lv_view *v, int depth, rx_arena *a)
{
    const rx_node *d = n->kind == RX_N_VAR ? defs->def(defs->ctx, n) : NULL;
    rx_node *arg = depth < LV_MAX_DEPTH ? view_arg(defs, d) : NULL;
    rx_lv_view sub;
    if (arg && view_rec(defs, arg, &sub, depth + 1, a) && apply(defs, &sub, d, a) &&
        sub.r == n->sinfo->ndim) {
        sub.moved = true;
        *v = sub;
        return true;
    }
    return plain(v, n);
}

bool rx_lv_view_of(const rx_lv_defs *defs, rx_node *n, rx_lv_view *v, rx_arena *a)
{
    return n->sinfo && view_rec(defs, n, v, 0, a);
}

bool rx_lv_blas_able(const rx_lv_view *v)
{
    int r = v->r;
    if (r < 2) return false;
    int ra = v->P[r - 2], ca = v->P[r - 1];
    return v->R[ra] == 1 && v->R[ca] == 1 && (ca == r - 1 || ra == r - 1);
}

bool rx_lv_encode_operand(const rx_lv_view *v, int64_t *out, int *n)
{
    const rx_sinfo *xs = v->base->sinfo;
    int at = *n, inferred = 0;
    out[at++] = v->r;
    for (int i = 0; i < v->r; i++) {
        int64_t c;
        if (rx_expr_is_const(v->S[i], &c) && c > 0) {
            out[at + i] = c;
            continue;
        }
        int k = -1;
        for (int j = 0; j < xs->ndim && k < 0; j++)
            if (rx_expr_same(v->S[i], xs->dims[j])) k = j;
        if (k >= 0) out[at + i] = -(int64_t)(k + 1);
        else if (inferred++ == 0) out[at + i] = 0;
        else return false;
    }
    at += v->r;
    for (int i = 0; i < v->r; i++) out[at++] = v->R[i];
    for (int i = 0; i < v->r; i++) out[at++] = v->P[i];
    *n = at;
    return true;
}
