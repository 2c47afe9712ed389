/*
 * onnx_compose.c — ONNX ops the importer writes as compositions of existing Relax ops
 * (no op of their own: each is a few elementwise, reduction or layout calls).
 *
 *   Sinh Cosh          (exp(x) -+ exp(-x)) / 2
 *   Asinh Acosh        log(x + sqrt(x * x +- 1))
 *   Atanh              log((1 + x) / (1 - x)) / 2
 *   Atan Asin Acos     a Taylor polynomial after range reduction (atan_of; within 2e-6),
 *                      asin(x) = atan(x / sqrt(1 - x^2)), acos = pi/2 - asin
 *   Celu               max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
 *   Shrink             where(x < -lambd, x + bias, where(x > lambd, x - bias, 0))
 *   IsInf              x - x is NaN exactly for +-inf and NaN: isnan(x - x) and not
 *                      isnan(x), and'ed with the sign for detect_positive/negative
 *   Hardmax            equal(argmax(x, axis, keepdims), iota along axis) as x's dtype
 *                      (opset < 13: over x seen as 2-d at axis, as Softmax)
 *   OneHot             where(equal(expand_dims(idx, axis), iota(depth)), on, off);
 *                      negative indices count from depth; depth a constant
 *   EyeLike            equal(iota(rows)[:, None] + k, iota(cols)[None, :]) as dtype
 *   HannWindow HammingWindow BlackmanWindow
 *                      constants: the size must be known at import (computed in f64)
 *   DepthToSpace SpaceToDepth
 *                      reshape, permute_dims, reshape (DCR and CRD modes)
 *   InstanceNormalization GroupNormalization
 *                      nn.group_norm (InstanceNormalization: one channel per group, C
 *                      literal; else mean / variance over the spatial axes, then scale,
 *                      bias); PyTorch's GroupNorm export (Reshape to (N, g, -1),
 *                      InstanceNormalization, Reshape back) as group_norm of the
 *                      Reshape's input (torch_group_norm); per-group scale and bias
 *                      (GroupNormalization-18) repeated per channel
 *   MeanVarianceNormalization
 *                      mean / variance over the given axes; each mean in stages
 *                      (staged_mean: one axis at a time, a product extent split in
 *                      two), as one f32 chain over 67584 terms was 1e-3 off (docs/onnx.md)
 *   LRN                the square sum over the channel window as a matmul with a 0/1
 *                      band matrix (C x C), x / (bias + alpha / size * sum) ^ beta
 *   Einsum             diagonals, then a batched matmul (two operands, at ein_matmul) or
 *                      permute_dims, broadcast multiply, sum (at ox_c_einsum)
 *   Det                the Leibniz formula over the n! permutations (literal n <= 4)
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

static rx_node *mul(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "multiply", x, y); }
static rx_node *add(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "add", x, y); }
static rx_node *sub(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "subtract", x, y); }
static rx_node *where(ox_ctx *c, rx_node *cond, rx_node *x, rx_node *y)
{
    rx_node *a[3] = {cond, x, y};
    return ox_call(c, "where", a, 3, NULL);
}
static rx_node *f1(ox_ctx *c, const char *op, rx_node *x) { return ox_call1(c, op, x, NULL); }

/* Sinh Cosh Asinh Acosh Atanh Celu Shrink IsInf. */
bool ox_c_math(ox_ctx *c)
{
    const char *t = c->node->op_type;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = ox_dtype_of(x);
    rx_node *one = ox_scalar(c, dt, 1), *half = ox_scalar(c, dt, 0.5), *zero = ox_scalar(c, dt, 0);
    rx_node *r = NULL;
    if (!strcmp(t, "Sinh") || !strcmp(t, "Cosh")) {
        rx_node *e = f1(c, "exp", x), *en = f1(c, "exp", f1(c, "negative", x));
        r = mul(c, !strcmp(t, "Sinh") ? sub(c, e, en) : add(c, e, en), half);
    } else if (!strcmp(t, "Asinh") || !strcmp(t, "Acosh")) {
        rx_node *sq = mul(c, x, x);
        sq = !strcmp(t, "Asinh") ? add(c, sq, one) : sub(c, sq, one);
        r = f1(c, "log", add(c, x, f1(c, "sqrt", sq)));
    } else if (!strcmp(t, "Atanh")) {
        r = mul(c, f1(c, "log", ox_call2(c, "divide", add(c, one, x), sub(c, one, x))), half);
    } else if (!strcmp(t, "Celu")) {
        rx_node *al = ox_scalar(c, dt, ox_attr_f(c, "alpha", 1.0));
        rx_node *neg = mul(c, al, sub(c, f1(c, "exp", ox_call2(c, "divide", x, al)), one));
        r = add(c, ox_call2(c, "maximum", x, zero), ox_call2(c, "minimum", neg, zero));
    } else if (!strcmp(t, "Shrink")) {
        double l = ox_attr_f(c, "lambd", 0.5), b = ox_attr_f(c, "bias", 0.0);
        rx_node *hi = where(c, ox_call2(c, "greater", x, ox_scalar(c, dt, l)),
                            sub(c, x, ox_scalar(c, dt, b)), zero);
        r = where(c, ox_call2(c, "less", x, ox_scalar(c, dt, -l)), add(c, x, ox_scalar(c, dt, b)), hi);
    } else if (!strcmp(t, "IsInf")) {
        rx_node *d = sub(c, x, x);
        r = ox_call2(c, "logical_and", ox_call2(c, "not_equal", d, d), ox_call2(c, "equal", x, x));
        bool pos = ox_attr_i(c, "detect_positive", 1) != 0, neg = ox_attr_i(c, "detect_negative", 1) != 0;
        if (!pos) r = ox_call2(c, "logical_and", r, ox_call2(c, "less", x, zero));
        if (!neg) r = ox_call2(c, "logical_and", r, ox_call2(c, "greater", x, zero));
    }
    return ox_out_node(c, 0, r);
}

/* atan(x) without an arctangent intrinsic: |x| > 1 folds to pi/2 - atan(1/|x|), the
 * half-angle identity atan(z) = 2 atan(z / (1 + sqrt(1 + z^2))) brings z into
 * [0, tan(pi/8)], where the Taylor series to z^11 is within 2e-6 (the next terms after
 * doubling; measured 1.4e-6 against np.arctan over [-50, 50]); the sign is restored last. */
static rx_node *atan_of(ox_ctx *c, rx_node *x)
{
    rx_dtype dt = ox_dtype_of(x);
    rx_node *one = ox_scalar(c, dt, 1), *a = f1(c, "abs", x);
    rx_node *big = ox_call2(c, "greater", a, one);
    rx_node *z = where(c, big, ox_call2(c, "divide", one, a), a);
    z = ox_call2(c, "divide", z, add(c, one, f1(c, "sqrt", add(c, one, mul(c, z, z)))));
    rx_node *z2 = mul(c, z, z), *p = ox_scalar(c, dt, -1.0 / 11);
    for (int k = 9; k >= 1; k -= 2)
        p = add(c, mul(c, p, z2), ox_scalar(c, dt, ((k / 2) % 2 ? -1.0 : 1.0) / k));
    rx_node *r = mul(c, ox_scalar(c, dt, 2), mul(c, p, z));
    r = where(c, big, sub(c, ox_scalar(c, dt, 1.57079632679489661923), r), r);
    return mul(c, f1(c, "sign", x), r);
}

/* Atan; Asin = atan(x / sqrt(1 - x^2)) (+-inf at +-1 gives +-pi/2); Acos = pi/2 - Asin. */
bool ox_c_atan(ox_ctx *c)
{
    const char *t = c->node->op_type;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = ox_dtype_of(x);
    if (!rx_dtype_is_float(dt)) {
        ox_err(c, "needs a float input");
        return false;
    }
    if (!strcmp(t, "Atan")) return ox_out_node(c, 0, atan_of(c, x));
    rx_node *one = ox_scalar(c, dt, 1);
    rx_node *as = atan_of(c, ox_call2(c, "divide", x, f1(c, "sqrt", sub(c, one, mul(c, x, x)))));
    if (!strcmp(t, "Asin")) return ox_out_node(c, 0, as);
    return ox_out_node(c, 0, sub(c, ox_scalar(c, dt, 1.57079632679489661923), as));
}

/* Hardmax: the one-hot of the first maximum along the axis. */
bool ox_c_hardmax(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    if (nd == 0) {
        ox_err(c, "needs an input of rank 1 or more");
        return false;
    }
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", c->opset >= 13 ? -1 : 1), nd);
    if (ax < 0) return false;
    rx_expr **d = x->sinfo->dims;
    rx_node *v = x;
    int vn = nd, vax = ax;
    if (c->opset < 13) { /* over x seen as 2-d [prod(:axis), prod(axis:)] */
        rx_expr *two[2] = {ox_prod(c, d, 0, ax), ox_prod(c, d, ax, nd)};
        v = ox_reshape(c, x, two, 2);
        vn = 2;
        vax = 1;
    }
    if (!v) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, vax));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    rx_node *am = ox_call1(c, "argmax", v, m);
    if (!am) return false;
    rx_node *hot = ox_call2(c, "equal", am, ox_iota(c, v->sinfo->dims[vax], vax, vn, RX_DT_I64));
    rx_node *r = ox_astype(c, hot, ox_dtype_of(x));
    if (r && vn != nd) r = ox_reshape(c, r, d, nd);
    return ox_out_node(c, 0, r);
}

/* A scalar element of a 1-d value: take(v, i) with a 0-d index. */
static rx_node *element(ox_ctx *c, rx_node *v, int64_t i)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 0));
    rx_node *a[2] = {v, ox_scalar(c, RX_DT_I64, (double)i)};
    return ox_call(c, "take", a, 2, m);
}

bool ox_c_one_hot(ox_ctx *c)
{
    rx_node *ind = ox_in_node(c, 0), *vals = ox_in_node(c, 2);
    rx_const *dk = ox_const(c, ox_in(c, 1));
    if (!ind || !vals) return false;
    if (!dk || ox_numel(dk) != 1) {
        ox_err(c, "depth must be a constant scalar");
        return false;
    }
    int64_t depth = (int64_t)ox_cf(dk, 0);
    int nd = ox_ndim(ind);
    if (depth < 1 || depth > ((int64_t)1 << 40) || nd < 0) {
        ox_err(c, depth < 1 || depth > ((int64_t)1 << 40) ? "depth %lld is out of range"
                                                         : "the indices' rank must be known",
               (long long)depth);
        return false;
    }
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", -1), nd + 1);
    if (ax < 0) return false;
    rx_node *i = ox_astype(c, ind, RX_DT_I64), *dn = ox_scalar(c, RX_DT_I64, (double)depth);
    i = where(c, ox_call2(c, "less", i, ox_scalar(c, RX_DT_I64, 0)), add(c, i, dn), i);
    rx_attr *em = ox_amap(c);
    int64_t a64 = ax;
    ox_aset(c, em, "axis", ox_aints(c, &a64, 1));
    rx_node *hot = ox_call2(c, "equal", ox_call1(c, "expand_dims", i, em),
                            ox_iota(c, ox_lit(c, depth), ax, nd + 1, RX_DT_I64));
    return ox_out_node(c, 0, where(c, hot, element(c, vals, 1), element(c, vals, 0)));
}

bool ox_c_eye_like(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    if (x->sinfo->ndim != 2) {
        ox_err(c, "the input must be 2-d");
        return false;
    }
    rx_dtype dt = ox_attr(c, "dtype") ? ox_dtype((int32_t)ox_attr_i(c, "dtype", 0)) : ox_dtype_of(x);
    if (dt == RX_DT_UNKNOWN) {
        ox_err(c, "unsupported dtype %lld", (long long)ox_attr_i(c, "dtype", 0));
        return false;
    }
    rx_node *rows = ox_iota(c, x->sinfo->dims[0], 0, 2, RX_DT_I64);
    rx_node *cols = ox_iota(c, x->sinfo->dims[1], 1, 2, RX_DT_I64);
    rx_node *k = ox_scalar(c, RX_DT_I64, (double)ox_attr_i(c, "k", 0));
    return ox_out_node(c, 0, ox_astype(c, ox_call2(c, "equal", add(c, rows, k), cols), dt));
}

/* HannWindow HammingWindow BlackmanWindow of a size known at import. */
bool ox_c_window(ox_ctx *c)
{
    rx_const *sk = ox_const(c, ox_in(c, 0));
    if (!sk || ox_numel(sk) != 1) {
        ox_err(c, "the size must be a constant scalar");
        return false;
    }
    int64_t n = ox_ci(sk, 0);
    rx_dtype dt = ox_dtype((int32_t)ox_attr_i(c, "output_datatype", 1));
    if (n < 0 || n > ((int64_t)1 << 24) || dt == RX_DT_UNKNOWN) {
        ox_err(c, n < 0 || n > ((int64_t)1 << 24) ? "size %lld is out of range"
                                                : "unsupported output_datatype", (long long)n);
        return false;
    }
    double den = (double)(ox_attr_i(c, "periodic", 1) ? n : n - 1);
    const char *t = c->node->op_type;
    double a0 = !strcmp(t, "HannWindow") ? 0.5 : !strcmp(t, "HammingWindow") ? 25.0 / 46 : 0.42;
    double a1 = !strcmp(t, "BlackmanWindow") ? 0.5 : 1 - a0, a2 = !strcmp(t, "BlackmanWindow") ? 0.08 : 0;
    rx_const *k = ox_new_const(c, RX_DT_F64, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        double w = 2 * 3.14159265358979323846 * (double)i / den;
        double v = a0 - a1 * cos(w) + a2 * cos(2 * w);
        memcpy(k->data + 8 * i, &v, 8);
    }
    return ox_out_node(c, 0, ox_astype(c, ox_const_node(c, k), dt));
}

/* DepthToSpace (DCR, CRD) and SpaceToDepth on 4-d NCHW with block size b. */
bool ox_c_depth_space(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    if (x->sinfo->ndim != 4) {
        ox_err(c, "the input must be 4-d (NCHW)");
        return false;
    }
    int64_t b = ox_attr_i(c, "blocksize", 0);
    if (b < 1 || b > 4096) {
        ox_err(c, "blocksize %lld is out of range", (long long)b);
        return false;
    }
    rx_expr **d = x->sinfo->dims, *bb = ox_lit(c, b), *b2 = ox_lit(c, b * b);
    rx_expr *n = d[0], *ch = d[1], *h = d[2], *w = d[3];
    rx_expr *six[6], *four[4];
    int64_t perm[6];
    if (!strcmp(c->node->op_type, "DepthToSpace")) {
        rx_expr *cc = ox_simp(c, rx_e_binary(c->a, RX_E_FLOORDIV, ch, b2));
        bool crd = !strcmp(ox_attr_s(c, "mode", "DCR"), "CRD");
        rx_expr *s_dcr[6] = {n, bb, bb, cc, h, w}, *s_crd[6] = {n, cc, bb, bb, h, w};
        int64_t p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
        memcpy(six, crd ? s_crd : s_dcr, sizeof six);
        memcpy(perm, crd ? p_crd : p_dcr, sizeof perm);
        rx_expr *o[4] = {n, cc, ox_simp(c, rx_e_binary(c->a, RX_E_MUL, h, bb)),
                         ox_simp(c, rx_e_binary(c->a, RX_E_MUL, w, bb))};
        memcpy(four, o, sizeof four);
    } else {
        rx_expr *hb = ox_simp(c, rx_e_binary(c->a, RX_E_FLOORDIV, h, bb));
        rx_expr *wb = ox_simp(c, rx_e_binary(c->a, RX_E_FLOORDIV, w, bb));
        rx_expr *s[6] = {n, ch, hb, bb, wb, bb};
        int64_t p[6] = {0, 3, 5, 1, 2, 4};
        memcpy(six, s, sizeof six);
        memcpy(perm, p, sizeof perm);
        rx_expr *o[4] = {n, ox_simp(c, rx_e_binary(c->a, RX_E_MUL, ch, b2)), hb, wb};
        memcpy(four, o, sizeof four);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, perm, 6));
    rx_node *t = ox_call1(c, "permute_dims", ox_reshape(c, x, six, 6), m);
    return ox_out_node(c, 0, t ? ox_reshape(c, t, four, 4) : NULL);
}

static rx_node *mean1(ox_ctx *c, rx_node *x, int64_t axis)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, &axis, 1));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    return ox_call1(c, "mean", x, m);
}

/* The factors of a product tree, leaves in order after the n already in out: the new
 * count, or -1 past max. */
static int factors(rx_expr *d, rx_expr **out, int n, int max)
{
    if (n < 0) return -1;
    if (d->kind == RX_E_MUL) return factors(d->u.op.b, out, factors(d->u.op.a, out, n, max), max);
    if (n >= max) return -1;
    out[n] = d;
    return n + 1;
}

/* The extent d as a * b with b the inner factor: a literal's divisor nearest below its
 * square root (at least 8), or a symbolic product's last symbolic factor (`h * w * 2`:
 * w, and a = h * 2; any split of a flat extent is a reshape). */
static bool split_extent(ox_ctx *c, rx_expr *d, rx_expr **a, rx_expr **b)
{
    int64_t v;
    d = ox_simp(c, d);
    if (rx_expr_is_const(d, &v)) {
        int64_t q = (int64_t)sqrt((double)v);
        while (q >= 8 && v % q) q--;
        if (q < 8 || v < 4096) return false;
        *a = ox_lit(c, v / q);
        *b = ox_lit(c, q);
        return true;
    }
    rx_expr *f[16];
    int n = factors(d, f, 0, 16), k = n - 1;
    while (k >= 0 && rx_expr_is_const(f[k], &v)) k--;
    if (n < 2 || k < 0) { /* a sum of terms with a common literal factor (GroupNorm's
                            * 32 * (h' * w') after the simplifier expanded h' and w'):
                            * that factor outer, the rest inner (split again) */
        for (int64_t q = 64; q >= 4; q /= 2) {
            rx_expr *r = rx_arith_exact_quotient(c->ar, d, ox_lit(c, q));
            if (r && !rx_expr_is_const(ox_simp(c, r), &v)) {
                *a = ox_lit(c, q);
                *b = ox_simp(c, r);
                return true;
            }
        }
        return false;
    }
    *b = f[k];
    *a = ox_lit(c, 1);
    for (int i = 0; i < n; i++)
        if (i != k) *a = rx_e_binary(c->a, RX_E_MUL, *a, f[i]);
    *a = ox_simp(c, *a);
    return true;
}

/* mean(x) over axes ax[0..n) keeping dims, in stages: the generated reduction adds its
 * terms one after another in f32, so InstanceNorm's mean over H * W = 67584 elements in
 * one loop was off by 1e-3 of the normalized output (ONNX Runtime: 2e-4), and it runs as
 * one scalar chain per channel. One axis at a time (innermost first), and one axis whose
 * extent is a product (GroupNorm's export reshapes to (N, G, C / G * H * W)) split in
 * two first, the mean is a mean of row means, each over the inner extent: the same value
 * (equal counts), nested sums of ~sqrt(count) terms, and rows in parallel. */
static rx_node *staged_mean(ox_ctx *c, rx_node *x, const int64_t *ax, int n)
{
    if (!x) return NULL;
    rx_expr *a, *b;
    int64_t order[64];
    int nd = ox_ndim(x);
    if (nd < 0 || n > 64) return NULL;
    for (int i = 0; i < n; i++) {
        order[i] = ax[i] < 0 ? ax[i] + nd : ax[i];
        if (order[i] < 0 || order[i] >= nd) {
            ox_err(c, "axis %lld is out of range for rank %d", (long long)ax[i], nd);
            return NULL;
        }
    }
    ax = order;
    if (n == 1 && ox_need_dims(c, x) && split_extent(c, x->sinfo->dims[ax[0]], &a, &b)) {
        rx_expr **sd = RX_NEWN(c->a, rx_expr *, nd + 1), **kd = RX_NEWN(c->a, rx_expr *, nd);
        for (int i = 0, j = 0; i < nd; i++) {
            kd[i] = i == ax[0] ? ox_lit(c, 1) : x->sinfo->dims[i];
            if (i == ax[0]) {
                sd[j++] = a;
                sd[j++] = b;
            } else {
                sd[j++] = x->sinfo->dims[i];
            }
        }
        int64_t inner = ax[0] + 1;
        rx_node *r = staged_mean(c, ox_reshape(c, x, sd, nd + 1), &inner, 1);
        return ox_reshape(c, mean1(c, r, ax[0]), kd, nd);
    }
    for (int i = 1; i < n; i++) /* innermost first */
        for (int j = i; j > 0 && order[j] > order[j - 1]; j--) {
            int64_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    rx_node *r = x;
    for (int i = 0; i < n && r; i++) r = mean1(c, r, order[i]);
    return r;
}

/* (x - mean) / sqrt(var + eps) over axes ax[0..n), reductions keeping dims (staged). */
static rx_node *normalize(ox_ctx *c, rx_node *x, const int64_t *ax, int n, double eps)
{
    rx_node *dx = sub(c, x, staged_mean(c, x, ax, n));
    rx_node *var = staged_mean(c, mul(c, dx, dx), ax, n);
    return ox_call2(c, "divide", dx, f1(c, "sqrt", add(c, var, ox_scalar(c, ox_dtype_of(x), eps))));
}

/* A per-channel vector (C) shaped to broadcast along axis 1 of a rank-nd tensor. */
static rx_node *per_channel(ox_ctx *c, rx_node *v, int nd)
{
    if (!ox_need_dims(c, v) || v->sinfo->ndim != 1) {
        if (v && v->sinfo && v->sinfo->ndim != 1) ox_err(c, "scale and bias must be 1-d");
        return NULL;
    }
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == 1 ? v->sinfo->dims[0] : ox_lit(c, 1);
    return ox_reshape(c, v, d, nd);
}

/* nn.group_norm(x, gamma, beta; num_groups = g, epsilon): the runtime's rt.group_norm
 * on the CPU (docs/ops.md), loops elsewhere. The composition of means it replaces
 * fused into one kernel that ran a (2, 256, 64, 64) GroupNorm 10x slower than ONNX
 * Runtime. */
static rx_node *group_norm(ox_ctx *c, rx_node *x, rx_node *gamma, rx_node *beta, int64_t g)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "num_groups", ox_aint(c, g));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-5)));
    rx_node *a[3] = {x, gamma, beta};
    return ox_call(c, "nn.group_norm", a, 3, m);
}

/* A (g,) vector with each value repeated r times: (g * r,), group-major. */
static rx_node *per_group(ox_ctx *c, rx_node *v, int64_t r)
{
    if (r == 1) return v;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "repeats", ox_aint(c, r));
    ox_aset(c, m, "axis", ox_aint(c, 0));
    return ox_call1(c, "repeat", v, m);
}

/* PyTorch's GroupNorm export: InstanceNormalization of x0 (N, C, D...) reshaped to
 * (N, g, R), R = C / g * prod D (scale and bias of g values), reshaped back after, then
 * the affine. Recognized at the InstanceNormalization: group_norm of x0 itself with the
 * scale and bias repeated per channel, reshaped to (N, g, R) (a view of the result,
 * which the Reshape back then undoes); NULL when x is not such a reshape. */
static rx_node *torch_group_norm(ox_ctx *c, rx_node *x, rx_node *s, rx_node *b)
{
    rx_node *x0 = ox_reshape_source(c, x);
    int64_t g, ch;
    if (!x0 || !x->sinfo || !x->sinfo->dims || x->sinfo->ndim != 3 ||
        !rx_expr_is_const(ox_simp(c, x->sinfo->dims[1]), &g))
        return NULL;
    const rx_sinfo *s0 = x0->sinfo;
    if (!s0 || s0->kind != RX_SI_TENSOR || !s0->dims || s0->ndim < 3 ||
        !rx_expr_is_const(ox_simp(c, s0->dims[1]), &ch) || g < 1 || ch % g ||
        !rx_arith_prove_equal(c->ar, s0->dims[0], x->sinfo->dims[0]))
        return NULL;
    rx_node *y = group_norm(c, x0, per_group(c, s, ch / g), per_group(c, b, ch / g), g);
    return y ? ox_reshape(c, y, x->sinfo->dims, 3) : NULL;
}

bool ox_c_instance_norm(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *s = ox_in_node(c, 1), *b = ox_in_node(c, 2);
    int nd = ox_ndim(x);
    int64_t ch;
    if (!x || !s || !b) return false;
    if (nd < 3 || nd > 66) {
        ox_err(c, "needs an input of rank 3 to 66 (N, C, D...)");
        return false;
    }
    rx_node *y = torch_group_norm(c, x, s, b);
    if (y) return ox_out_node(c, 0, y);
    if (x->sinfo->dims && rx_expr_is_const(ox_simp(c, x->sinfo->dims[1]), &ch))
        return ox_out_node(c, 0, group_norm(c, x, s, b, ch)); /* one channel per group */
    int64_t ax[64];
    for (int i = 2; i < nd; i++) ax[i - 2] = i;
    y = normalize(c, x, ax, nd - 2, ox_attr_f(c, "epsilon", 1e-5));
    return ox_out_node(c, 0, add(c, mul(c, y, per_channel(c, s, nd)), per_channel(c, b, nd)));
}

/* GroupNormalization: opset 18's scale and bias per group (repeated per channel) or
 * 21's per channel (told apart by their length; equal when num_groups = C). C must be
 * a literal multiple of num_groups; the other dims may be symbolic. */
bool ox_c_group_norm(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *s = ox_in_node(c, 1), *b = ox_in_node(c, 2);
    if (!x || !s || !b || !ox_need_dims(c, x) || !ox_need_dims(c, s)) return false;
    int64_t g = ox_attr_i(c, "num_groups", 0), ch, sl;
    if (x->sinfo->ndim < 3 || g < 1 || !rx_expr_is_const(ox_simp(c, x->sinfo->dims[1]), &ch) ||
        ch % g || s->sinfo->ndim != 1 || !rx_expr_is_const(ox_simp(c, s->sinfo->dims[0]), &sl) ||
        (sl != g && sl != ch)) {
        ox_err(c, "needs rank >= 3, a literal channel count that num_groups divides, and "
               "scale / bias of num_groups or C values");
        return false;
    }
    int64_t r = sl == ch ? 1 : ch / g;
    return ox_out_node(c, 0, group_norm(c, x, per_group(c, s, r), per_group(c, b, r), g));
}

bool ox_c_mvn(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    int na;
    const int64_t *a = ox_attr_ints(c, "axes", &na);
    static const int64_t dflt[3] = {0, 2, 3};
    if (na < 0) {
        a = dflt;
        na = 3;
    }
    return ox_out_node(c, 0, normalize(c, x, a, na, 1e-9));
}

/* LRN over the channels of NC... with a band matrix: sum[n, i] = sum over channels j in
 * [i - floor((size-1)/2), i + ceil((size-1)/2)] of x[n, j]^2. */
bool ox_c_lrn(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t ch, size = ox_attr_i(c, "size", 0);
    if (nd < 3 || !rx_expr_is_const(ox_simp(c, x->sinfo->dims[1]), &ch) || ch > 4096 || size < 1) {
        ox_err(c, "needs rank 3 or more, a static channel count up to 4096 and size >= 1");
        return false;
    }
    rx_dtype dt = ox_dtype_of(x);
    int64_t shape[2] = {ch, ch}, lo = (size - 1) / 2, hi = size - 1 - lo;
    rx_const *band = ox_new_const(c, RX_DT_F64, 2, shape);
    for (int64_t i = 0; i < ch; i++)
        for (int64_t j = 0; j < ch; j++) {
            double v = j >= i - lo && j <= i + hi;
            memcpy(band->data + 8 * (i * ch + j), &v, 8);
        }
    rx_expr **d = x->sinfo->dims;
    rx_expr *three[3] = {d[0], d[1], ox_prod(c, d, 2, nd)};
    rx_node *sq = ox_reshape(c, mul(c, x, x), three, 3);
    rx_node *sum = ox_call2(c, "matmul", ox_astype(c, ox_const_node(c, band), dt), sq);
    if (!sum) return false;
    sum = ox_reshape(c, sum, d, nd);
    double alpha = ox_attr_f(c, "alpha", 1e-4), beta = ox_attr_f(c, "beta", 0.75);
    rx_node *den = add(c, ox_scalar(c, dt, ox_attr_f(c, "bias", 1.0)),
                       mul(c, ox_scalar(c, dt, alpha / (double)size), sum));
    return ox_out_node(c, 0, ox_call2(c, "divide", x, ox_call2(c, "power", den, ox_scalar(c, dt, beta))));
}

/* ---------------------------------------------------------------- Einsum */
/* Einsum as broadcasting: each operand's repeated labels are first reduced to their
 * diagonal (where(equal(iota, iota), x, 0) summed over the second occurrence), its axes
 * permuted to the order of all labels (the output's first, then the summed ones) with
 * 1s for the labels it lacks; the operands are multiplied and the summed labels
 * reduced. Ellipsis dims are labels of their own, right-aligned across operands. Memory
 * is the broadcast product's: fine for the small contractions of model graphs, no
 * substitute for matmul on large ones, so two operands whose labels fit a batched
 * matmul become one (ein_matmul). */
enum { EIN_MAX = 52 + 16 };

typedef struct ein_term {
    int lab[EIN_MAX]; /* label per axis: letters 0..51, ellipsis dims 52.. */
    int n;
} ein_term;

static int ein_label(char ch)
{
    return ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
}

/* Parses one term of rank nd (nd < 0: the output, whose ellipsis has `ell` dims). */
static bool ein_term_parse(ox_ctx *c, const char *s, const char *e, int nd, int *ell, ein_term *t)
{
    int letters = 0;
    bool dots = false;
    for (const char *p = s; p < e; p++) {
        if (*p == '.') {
            if (dots || e - p < 3 || p[1] != '.' || p[2] != '.') goto bad;
            dots = true;
            p += 2;
        } else if (*p != ' ') {
            if (ein_label(*p) < 0) goto bad;
            letters++;
        }
    }
    int ne = dots ? (nd >= 0 ? nd - letters : *ell) : 0;
    if (ne < 0 || (nd >= 0 && !dots && letters != nd) || letters + ne > EIN_MAX) goto bad;
    if (nd >= 0 && dots && ne > *ell) *ell = ne; /* the ellipses broadcast: the widest */
    t->n = 0;
    for (const char *p = s; p < e; p++) {
        if (*p == '.') {
            for (int k = 0; k < ne; k++) t->lab[t->n++] = 52 + (16 - ne + k); /* right-aligned */
            p += 2;
        } else if (*p != ' ') {
            t->lab[t->n++] = ein_label(*p);
        }
    }
    return true;
bad:
    ox_err(c, "equation term '%.*s' does not fit its operand", (int)(e - s), s);
    return false;
}

/* Operand v with labels t reduced to distinct labels (diagonals taken). */
static rx_node *ein_diag(ox_ctx *c, rx_node *v, ein_term *t)
{
    for (int i = 0; v && i < t->n; i++)
        for (int j = i + 1; v && j < t->n; j++) {
            if (t->lab[i] != t->lab[j]) continue;
            int nd = t->n;
            rx_node *mask = ox_call2(c, "equal", ox_iota(c, v->sinfo->dims[i], i, nd, RX_DT_I64),
                                     ox_iota(c, v->sinfo->dims[j], j, nd, RX_DT_I64));
            v = where(c, mask, v, ox_scalar(c, ox_dtype_of(v), 0));
            rx_attr *m = ox_amap(c);
            int64_t ax = j;
            ox_aset(c, m, "axis", ox_aints(c, &ax, 1));
            v = ox_call1(c, "sum", v, m);
            memmove(&t->lab[j], &t->lab[j + 1], sizeof(int) * (size_t)(t->n - j - 1));
            t->n--;
            j--;
        }
    return v;
}

/* x's axes permuted to the labels `want` of term t (each in t once), then reshaped to
 * dims (n of them). */
static rx_node *ein_arrange(ox_ctx *c, rx_node *x, const ein_term *t, const int *want, int nw,
                            rx_expr **dims, int n)
{
    int64_t perm[EIN_MAX];
    for (int o = 0; o < nw; o++)
        for (int k = 0; k < t->n; k++)
            if (t->lab[k] == want[o]) perm[o] = k;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, perm, nw));
    x = ox_call1(c, "permute_dims", x, m);
    return x ? ox_reshape(c, x, dims, n) : NULL;
}

/* The axis of label l in term t, -1 when t lacks it. */
static int ein_axis(const ein_term *t, int l)
{
    for (int k = 0; k < t->n; k++)
        if (t->lab[k] == l) return k;
    return -1;
}

static bool ein_has(const ein_term *t, int l) { return ein_axis(t, l) >= 0; }

/* Operand x's extent along label l of its term t (t has l). */
static rx_expr *ein_dim(rx_node *x, const ein_term *t, int l)
{
    return x->sinfo->dims[ein_axis(t, l)];
}

/* Two operands (diagonals taken) as one batched matmul: the labels in both operands and
 * the output are batch axes, those summed are the reduction (several only with literal,
 * equal extents: merged into one axis), those of one operand and the output its rows
 * (a) or columns (b). A (batch, a-rows but the last, 1 per b-column label but the last,
 * last a-row or 1, k) times B (batch, 1 per a-row label but the last, b-columns but the
 * last, k, last b-column or 1): matmul broadcasts the 1s; the product is reshaped
 * without its unit placeholders and permuted to the output's order. That is matmul's
 * cost instead of the broadcast product's memory and time (einsum attention's
 * "bihd,bjhd->bhij" was a fused multiply-and-sum kernel at ~1 GFLOP/s: 3.5 of its
 * model's 6 ms at one thread). *fits is false (NULL returned) for anything else: a label
 * summed inside one operand, no summed label, or merged extents that are not literal. */
static rx_node *ein_matmul(ox_ctx *c, rx_node *const x[2], const ein_term t[2],
                           const ein_term *out, bool *fits)
{
    int bat[EIN_MAX], ra[EIN_MAX], cb[EIN_MAX], red[EIN_MAX], nb = 0, na = 0, nc = 0, nr = 0;
    *fits = false;
    for (int k = 0; k < out->n; k++) {
        int l = out->lab[k];
        bool i0 = ein_has(&t[0], l), i1 = ein_has(&t[1], l);
        if (i0 && i1) bat[nb++] = l;
        else if (i0) ra[na++] = l;
        else if (i1) cb[nc++] = l;
        else return NULL;
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < t[i].n; k++) {
            int l = t[i].lab[k];
            if (ein_has(out, l)) continue;
            if (!ein_has(&t[1 - i], l)) return NULL; /* summed inside one operand */
            if (i == 0) red[nr++] = l;
        }
    if (nr == 0) return NULL;
    /* literal extents must agree (1 against n stays the broadcast form); several summed
     * labels merge only when all are literal */
    int64_t kprod = 1;
    for (int r = 0; r < nr; r++) {
        int64_t d0, d1;
        bool lit = rx_expr_is_const(ein_dim(x[0], &t[0], red[r]), &d0) &&
                   rx_expr_is_const(ein_dim(x[1], &t[1], red[r]), &d1);
        if ((lit && d0 != d1) || (!lit && nr > 1)) return NULL;
        kprod *= lit ? d0 : 1;
    }
    rx_expr *kdim = nr > 1 ? ox_lit(c, kprod) : ein_dim(x[0], &t[0], red[0]);
    *fits = true;
    int wa[EIN_MAX], wb[EIN_MAX], n0 = 0, n1 = 0, nd = 0, nbd = 0;
    rx_expr *da[EIN_MAX], *db[EIN_MAX];
    for (int k = 0; k < nb; k++) {
        wa[n0++] = wb[n1++] = bat[k];
        da[nd++] = ein_dim(x[0], &t[0], bat[k]);
        db[nbd++] = ein_dim(x[1], &t[1], bat[k]);
    }
    for (int k = 0; k + 1 < na; k++) {
        wa[n0++] = ra[k];
        da[nd++] = ein_dim(x[0], &t[0], ra[k]);
        db[nbd++] = ox_lit(c, 1);
    }
    for (int k = 0; k + 1 < nc; k++) {
        wb[n1++] = cb[k];
        da[nd++] = ox_lit(c, 1);
        db[nbd++] = ein_dim(x[1], &t[1], cb[k]);
    }
    if (na) wa[n0++] = ra[na - 1];
    da[nd++] = na ? ein_dim(x[0], &t[0], ra[na - 1]) : ox_lit(c, 1);
    for (int r = 0; r < nr; r++) wa[n0++] = wb[n1++] = red[r];
    da[nd++] = kdim;
    db[nbd++] = kdim;
    if (nc) wb[n1++] = cb[nc - 1];
    db[nbd++] = nc ? ein_dim(x[1], &t[1], cb[nc - 1]) : ox_lit(c, 1);
    rx_node *a = ein_arrange(c, x[0], &t[0], wa, n0, da, nd);
    rx_node *b = ein_arrange(c, x[1], &t[1], wb, n1, db, nbd);
    rx_node *p = a && b ? ox_call2(c, "matmul", a, b) : NULL;
    if (!p || !ox_need_dims(c, p)) return NULL;
    /* the product's labels: batch, a-rows but the last, b-columns but the last, then the
     * last a-row and b-column (each -1 when a unit placeholder) */
    ein_term res = {.n = 0};
    rx_expr *rd[EIN_MAX];
    int nrd = 0, pd = 0;
    for (int k = 0; k < nb; k++) res.lab[res.n++] = bat[k], rd[nrd++] = p->sinfo->dims[pd++];
    for (int k = 0; k + 1 < na; k++) res.lab[res.n++] = ra[k], rd[nrd++] = p->sinfo->dims[pd++];
    for (int k = 0; k + 1 < nc; k++) res.lab[res.n++] = cb[k], rd[nrd++] = p->sinfo->dims[pd++];
    if (na) res.lab[res.n++] = ra[na - 1], rd[nrd++] = p->sinfo->dims[pd];
    pd++;
    if (nc) res.lab[res.n++] = cb[nc - 1], rd[nrd++] = p->sinfo->dims[pd];
    if (!na || !nc) p = ox_reshape(c, p, rd, nrd);
    int64_t perm[EIN_MAX];
    bool ident = true;
    for (int o = 0; o < out->n; o++) {
        perm[o] = ein_axis(&res, out->lab[o]);
        ident &= perm[o] == o;
    }
    if (!p || ident) return p;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, perm, out->n));
    return ox_call1(c, "permute_dims", p, m);
}

bool ox_c_einsum(ox_ctx *c)
{
    const char *eq = ox_attr_s(c, "equation", "");
    int nin = ox_nin(c), ell = -1;
    const char *arrow = strstr(eq, "->");
    const char *end = arrow ? arrow : eq + strlen(eq);
    ein_term in[8], out;
    rx_node *v[8];
    if (nin < 1 || nin > 8) {
        ox_err(c, "needs 1 to 8 inputs");
        return false;
    }
    const char *s = eq;
    for (int i = 0; i < nin; i++) {
        const char *e = memchr(s, ',', (size_t)(end - s));
        if (!e) e = end;
        if ((i < nin - 1) != (e != end)) {
            ox_err(c, "equation '%s' does not have %d terms", eq, nin);
            return false;
        }
        v[i] = ox_in_node(c, i);
        if (!v[i] || !ox_need_dims(c, v[i])) return false;
        if (!ein_term_parse(c, s, e, v[i]->sinfo->ndim, &ell, &in[i])) return false;
        s = e + 1;
    }
    if (ell < 0) ell = 0;
    int count[EIN_MAX] = {0};
    for (int i = 0; i < nin; i++)
        for (int k = 0; k < in[i].n; k++) count[in[i].lab[k]]++;
    if (arrow) {
        if (!ein_term_parse(c, arrow + 2, eq + strlen(eq), -1, &ell, &out)) return false;
    } else { /* implicit: the ellipsis, then the labels seen once, alphabetically */
        out.n = 0;
        for (int k = 0; k < ell; k++) out.lab[out.n++] = 52 + 16 - ell + k;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) out.lab[out.n++] = l;
    }
    int order[EIN_MAX], no = 0; /* all labels: the output's, then the summed ones */
    bool placed[EIN_MAX] = {false};
    for (int k = 0; k < out.n; k++) {
        order[no++] = out.lab[k];
        placed[out.lab[k]] = true;
    }
    for (int l = 0; l < EIN_MAX; l++)
        if (count[l] && !placed[l]) order[no++] = l;
    for (int i = 0; i < nin; i++)
        if (!(v[i] = ein_diag(c, v[i], &in[i]))) return false;
    if (nin == 2) {
        bool fits;
        rx_node *mm = ein_matmul(c, v, in, &out, &fits);
        if (fits) return mm && ox_out_node(c, 0, mm);
    }
    rx_node *prod = NULL;
    for (int i = 0; i < nin; i++) {
        rx_node *x = v[i];
        int64_t perm[EIN_MAX];
        rx_expr *dims[EIN_MAX];
        int np = 0;
        for (int o = 0; o < no; o++) {
            dims[o] = ox_lit(c, 1);
            for (int k = 0; k < in[i].n; k++)
                if (in[i].lab[k] == order[o]) {
                    perm[np++] = k;
                    dims[o] = x->sinfo->dims[k];
                }
        }
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axes", ox_aints(c, perm, np));
        x = ox_call1(c, "permute_dims", x, m);
        x = x ? ox_reshape(c, x, dims, no) : NULL;
        prod = prod && x ? ox_call2(c, "multiply", prod, x) : x;
        if (!prod) return false;
    }
    if (no > out.n) {
        int64_t ax[EIN_MAX];
        for (int k = out.n; k < no; k++) ax[k - out.n] = k;
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aints(c, ax, no - out.n));
        prod = ox_call1(c, "sum", prod, m);
    }
    return ox_out_node(c, 0, prod);
}

/* ---------------------------------------------------------------- Det */

/* Det of (..., n, n) for a literal n <= 4: the Leibniz formula, the sum over the n!
 * permutations p of sign(p) * prod_i x[..., i, p(i)] (exact for singular matrices,
 * no pivoting), each entry a strided_slice of the last two axes reshaped to the batch
 * dims. Larger n is a located error. */
enum { DET_MAX = 4 };

static rx_node *det_entry(ox_ctx *c, rx_node *x, int i, int j)
{
    int nd = ox_ndim(x);
    int64_t axes[2] = {nd - 2, nd - 1}, b[2] = {i, j}, e[2] = {i + 1, j + 1}, st[2] = {1, 1};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, 2));
    ox_aset(c, m, "begin", ox_aints(c, b, 2));
    ox_aset(c, m, "end", ox_aints(c, e, 2));
    ox_aset(c, m, "strides", ox_aints(c, st, 2));
    return ox_reshape(c, ox_call1(c, "strided_slice", x, m), x->sinfo->dims, nd - 2);
}

bool ox_c_det(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    int nd = ox_ndim(x);
    int64_t n, n2;
    if (nd < 2 || !rx_expr_is_const(x->sinfo->dims[nd - 1], &n) ||
        !rx_expr_is_const(x->sinfo->dims[nd - 2], &n2) || n != n2 || n < 1 || n > DET_MAX) {
        ox_err(c, "needs square matrices of a literal size 1 to %d in the last two axes",
               DET_MAX);
        return false;
    }
    rx_node *ent[DET_MAX][DET_MAX];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (!(ent[i][j] = det_entry(c, x, i, j))) return false;
    /* the permutations in lexicographic order (next permutation), the sign by parity */
    int p[DET_MAX];
    for (int i = 0; i < n; i++) p[i] = i;
    rx_node *sum = NULL;
    for (;;) {
        int inv = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) inv += p[i] > p[j];
        rx_node *t = ent[0][p[0]];
        for (int i = 1; i < n; i++) t = ox_call2(c, "multiply", t, ent[i][p[i]]);
        sum = !sum ? (inv & 1 ? ox_call1(c, "negative", t, NULL) : t)
                   : ox_call2(c, inv & 1 ? "subtract" : "add", sum, t);
        int k = (int)n - 2;
        while (k >= 0 && p[k] > p[k + 1]) k--;
        if (k < 0) break;
        int l = (int)n - 1;
        while (p[l] < p[k]) l--;
        int tmp = p[k];
        p[k] = p[l];
        p[l] = tmp;
        for (int a = k + 1, b = (int)n - 1; a < b; a++, b--) {
            tmp = p[a];
            p[a] = p[b];
            p[b] = tmp;
        }
    }
    return ox_out_node(c, 0, sum);
}
