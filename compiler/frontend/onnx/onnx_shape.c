/*
 * onnx_shape.c — the ONNX importer's shape converters: Shape Size Constant Reshape
 * Flatten Transpose Squeeze Unsqueeze Concat Gather Slice Split Expand Tile Trilu
 * ConstantOfShape Range. Each first tries to fold on symbolic elements (ox_syms, the
 * output of Shape and everything computed from it, and small integer constants: Expand
 * and Split of a known vector too), so a chain from Shape to a Reshape becomes the
 * reshape's symbolic target shape; otherwise it emits the Relax op. Tile with symbolic
 * repeats becomes reshape + broadcast_to + reshape; Split with constant sizes on a
 * symbolic axis match_casts that axis to their sum (ONNX Runtime's run-time check).
 * Known values may be 2-d (F.pad's pads as pairs, reversed: reshape_known, slice_known,
 * the Transpose); Trilu with a non-constant k is a where over iotas.
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* ---------------------------------------------------------------- shapes */

bool ox_c_shape(ox_ctx *c)
{
    ox_val *xv = ox_in(c, 0);
    rx_expr *vdim[1];
    rx_expr **dims;
    int nd;
    if (xv && xv->sym && xv->symrank < 2) { /* a shape value itself (PyTorch's expand: Shape of the target
                          * shape, for ConstantOfShape/Equal/Where): its shape is literal */
        nd = xv->symrank;
        vdim[0] = ox_lit(c, xv->nsym);
        dims = vdim;
    } else {
        rx_node *x = ox_in_node(c, 0);
        if (!ox_need_dims(c, x)) return false;
        nd = x->sinfo->ndim;
        dims = x->sinfo->dims;
    }
    int64_t s = ox_attr_i(c, "start", 0), e = ox_attr_i(c, "end", nd);
    if (s < 0) s += nd;
    if (e < 0) e += nd;
    s = s < 0 ? 0 : s > nd ? nd : s;
    e = e < 0 ? 0 : e > nd ? nd : e;
    int n = e > s ? (int)(e - s) : 0;
    rx_expr **sym = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) sym[i] = dims[s + i];
    ox_out_sym(c, 0, sym, n, 1, RX_DT_I64);
    return true;
}

bool ox_c_size(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    rx_expr **sym = RX_NEWN(c->a, rx_expr *, 1);
    sym[0] = ox_prod(c, x->sinfo->dims, 0, x->sinfo->ndim);
    ox_out_sym(c, 0, sym, 1, 0, RX_DT_I64);
    return true;
}

bool ox_c_constant(ox_ctx *c)
{
    rx_const *k = NULL;
    const Onnx__AttributeProto *a;
    if ((a = ox_attr(c, "value"))) {
        k = ox_attr_tensor(c, "value");
        if (!k) return false;
    } else if ((a = ox_attr(c, "value_float"))) {
        k = ox_new_const(c, RX_DT_F32, 0, NULL);
        memcpy(k->data, &a->f, 4);
    } else if ((a = ox_attr(c, "value_int"))) {
        k = ox_new_const(c, RX_DT_I64, 0, NULL);
        memcpy(k->data, &a->i, 8);
    } else if ((a = ox_attr(c, "value_floats"))) {
        int64_t n = (int64_t)a->n_floats;
        k = ox_new_const(c, RX_DT_F32, 1, &n);
        if (n) memcpy(k->data, a->floats, 4 * (size_t)n);
    } else if ((a = ox_attr(c, "value_ints"))) {
        int64_t n = (int64_t)a->n_ints;
        k = ox_new_const(c, RX_DT_I64, 1, &n);
        if (n) memcpy(k->data, a->ints, 8 * (size_t)n);
    } else {
        ox_err(c, "needs a value attribute (value, value_float(s), value_int(s))");
        return false;
    }
    ox_out_const(c, 0, k);
    return true;
}

/* The target shape (input 1) of Reshape and Expand as symbolic dims. */
static bool target_shape(ox_ctx *c, rx_expr ***t, int *n)
{
    if (ox_syms(c, ox_in(c, 1), t, n)) return true;
    ox_err(c, "the target shape must be computable at compile time (a constant or a chain "
           "from Shape)");
    return false;
}

/* Target dims of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred. */
/* ---- known integer values of rank 2. PyTorch's F.pad with sizes computed at run time
 * (a U-Net padding its upsampled map to the skip's size) writes its pads as the Concat
 * of the computed widths and zeros, Reshape to (-1, 2), Slice with step -1 on axis 0,
 * Transpose, Reshape to (-1): each stays a list of symbolic elements, so the Pad sees
 * its widths as shape arithmetic. Literal shapes, bounds and steps only. */

/* Dims of a known value: (nsym), (rows, cols) or (). */
static int sym_dims(const ox_val *v, int64_t d[2])
{
    if (v->symrank == 2) {
        d[0] = v->nsym / v->symcols;
        d[1] = v->symcols;
    } else {
        d[0] = v->nsym;
    }
    return v->symrank;
}

/* Reshape of a known value of rank 1 or 2 to a literal shape of rank 1 or 2. */
static bool reshape_known(ox_ctx *c, ox_val *xv, rx_expr **t, int n)
{
    int64_t d[2], xd[2], rest = 1;
    int infer = -1, xr = sym_dims(xv, xd);
    if (xr < 1 || n < 1 || n > 2) return false;
    for (int i = 0; i < n; i++) {
        if (!rx_expr_is_const(ox_simp(c, t[i]), &d[i])) return false;
        if (d[i] == 0 && !ox_attr_i(c, "allowzero", 0)) {
            if (i >= xr) return false;
            d[i] = xd[i];
        }
        if (d[i] == -1 && infer < 0) infer = i;
        else if (d[i] < 0) return false;
        else rest *= d[i];
    }
    if (infer >= 0) {
        if (rest == 0 || xv->nsym % rest) return false;
        d[infer] = xv->nsym / rest;
    }
    if ((n == 2 ? d[0] * d[1] : d[0]) != xv->nsym) return false;
    if (n == 1) ox_out_sym(c, 0, xv->sym, xv->nsym, 1, xv->symdt);
    else if (d[1] == 0) return false;
    else ox_out_sym2(c, 0, xv->sym, (int)d[0], (int)d[1], xv->symdt);
    return true;
}

/* ONNX Slice's indices along an axis of extent len (negative steps too): count. */
static int slice_indices(int64_t s, int64_t e, int64_t step, int64_t len, int64_t *out)
{
    if (s < 0) s += len;
    if (e < 0) e += len;
    if (step > 0) {
        s = s < 0 ? 0 : s > len ? len : s;
        e = e < 0 ? 0 : e > len ? len : e;
    } else {
        s = s < 0 ? 0 : s > len - 1 ? len - 1 : s;
        e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
    }
    int n = 0;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) out[n++] = i;
    return n;
}

/* Slice of a known value of rank 2 (or rank 1 with a step other than 1) with literal
 * starts, ends, axes and steps. */
static bool slice_known(ox_ctx *c, ox_val *xv, rx_expr **st, rx_expr **en, int ns,
                        const int64_t *ax, const int64_t *steps)
{
    int64_t d[2] = {0, 1}, keep[2][256];
    int r = sym_dims(xv, d), cnt[2];
    if (r < 1 || d[0] > 256 || d[1] > 256) return false;
    for (int a = 0; a < r; a++) cnt[a] = slice_indices(0, d[a], 1, d[a], keep[a]);
    for (int i = 0; i < ns; i++) {
        int64_t s, e, a = ax ? ax[i] : i, step = steps ? steps[i] : 1;
        if (a < 0) a += r;
        if (a < 0 || a >= r || step == 0 || !rx_expr_is_const(ox_simp(c, st[i]), &s) ||
            !rx_expr_is_const(ox_simp(c, en[i]), &e))
            return false;
        cnt[a] = slice_indices(s, e, step, d[a], keep[a]);
    }
    int n1 = r == 2 ? cnt[1] : 1, total = cnt[0] * n1;
    rx_expr **o = RX_NEWN(c->a, rx_expr *, total > 0 ? total : 1);
    for (int i = 0; i < cnt[0]; i++)
        for (int j = 0; j < n1; j++)
            o[i * n1 + j] = xv->sym[r == 2 ? keep[0][i] * d[1] + keep[1][j] : keep[0][i]];
    if (r == 2 && n1 > 0) ox_out_sym2(c, 0, o, cnt[0], n1, xv->symdt);
    else if (r == 2) return false;
    else ox_out_sym(c, 0, o, cnt[0], 1, xv->symdt);
    return true;
}

bool ox_c_reshape(ox_ctx *c)
{
    ox_val *xv = ox_in(c, 0);
    rx_expr **t;
    int n;
    if (!target_shape(c, &t, &n)) return false;
    if (xv && xv->sym && xv->symrank == 1 && n == 1) { /* a 1-d shape value stays symbolic */
        ox_out_alias(c, 0, xv);
        return true;
    }
    if (xv && xv->sym && reshape_known(c, xv, t, n)) return true;
    rx_node *x = ox_node(c, xv);
    if (!ox_need_dims(c, x)) return false;
    bool allowzero = ox_attr_i(c, "allowzero", 0) != 0;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    int infer = -1;
    for (int i = 0; i < n; i++) {
        int64_t v;
        d[i] = t[i];
        if (!rx_expr_is_const(ox_simp(c, t[i]), &v)) continue;
        if (v == 0 && !allowzero) {
            if (i >= x->sinfo->ndim) {
                ox_err(c, "dim %d is 0 (copy) but the input has rank %d", i, x->sinfo->ndim);
                return false;
            }
            d[i] = x->sinfo->dims[i];
        } else if (v == -1) {
            if (infer >= 0) {
                ox_err(c, "more than one -1 in the target shape");
                return false;
            }
            infer = i;
        } else if (v < 0) {
            ox_err(c, "target dim %d is %lld", i, (long long)v);
            return false;
        }
    }
    if (infer >= 0) {
        d[infer] = ox_lit(c, 1);
        /* dims of the target equal to dims of the input cancel first: ShuffleNet's
         * x.view(b, -1, h, w) of a (b, 2, 24, h', w') map is 48 even when h' and w' are
         * expressions the simplifier expands into sums (the quotient of the expanded
         * products is no monomial division; it was a floordiv, and the reshape then
         * flattened every index through it) */
        int xn = x->sinfo->ndim;
        rx_expr **xl = RX_NEWN(c->a, rx_expr *, xn ? xn : 1), **tl = RX_NEWN(c->a, rx_expr *, n);
        for (int i = 0; i < xn; i++) xl[i] = x->sinfo->dims[i];
        for (int i = 0; i < n; i++) {
            tl[i] = d[i];
            int64_t lit;
            if (i == infer || rx_expr_is_const(ox_simp(c, d[i]), &lit)) continue;
            for (int j = 0; j < xn; j++)
                if (xl[j] && rx_arith_prove_equal(c->ar, xl[j], d[i])) {
                    xl[j] = tl[i] = NULL;
                    break;
                }
        }
        for (int i = 0; i < xn; i++) xl[i] = xl[i] ? xl[i] : ox_lit(c, 1);
        for (int i = 0; i < n; i++) tl[i] = tl[i] ? tl[i] : ox_lit(c, 1);
        rx_expr *total = ox_prod(c, xl, 0, xn);
        rx_expr *rest = ox_prod(c, tl, 0, n);
        /* the quotient by cancelling common factors: (b * 768) / (b * 48) is 16 (a
         * reshape of b * 768 elements to b * 48 * q has q == 16 whenever b > 0) */
        d[infer] = rx_arith_exact_quotient(c->ar, total, rest);
        if (!d[infer]) d[infer] = ox_simp(c, rx_e_binary(c->a, RX_E_FLOORDIV, total, rest));
    }
    for (int i = 0; i < n; i++) d[i] = ox_simp(c, d[i]);
    rx_node *src = ox_reshape_source(c, x); /* reshape(reshape(y)) is reshape(y) */
    return ox_out_node(c, 0, ox_reshape(c, src ? src : x, d, n));
}

bool ox_c_flatten(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t axis = ox_attr_i(c, "axis", 1);
    if (axis < 0) axis += nd;
    if (axis < 0 || axis > nd) {
        ox_err(c, "axis %lld is out of range for rank %d", (long long)ox_attr_i(c, "axis", 1), nd);
        return false;
    }
    rx_expr *two[2] = {ox_prod(c, x->sinfo->dims, 0, (int)axis), ox_prod(c, x->sinfo->dims, (int)axis, nd)};
    return ox_out_node(c, 0, ox_reshape(c, x, two, 2));
}

bool ox_c_transpose(ox_ctx *c)
{
    int n;
    const int64_t *perm = ox_attr_ints(c, "perm", &n);
    ox_val *xv = ox_in(c, 0);
    if (xv && xv->sym && xv->symrank == 2 && (n < 0 || (n == 2 && perm[0] == 1 && perm[1] == 0))) {
        int rows = xv->nsym / xv->symcols, cols = xv->symcols;
        rx_expr **o = RX_NEWN(c->a, rx_expr *, xv->nsym ? xv->nsym : 1);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) o[j * rows + i] = xv->sym[i * cols + j];
        ox_out_sym2(c, 0, o, cols, rows, xv->symdt);
        return true;
    }
    rx_node *u = n >= 0 ? ox_untranspose(c, ox_in_node(c, 0), perm, n) : NULL;
    if (u) return ox_out_node(c, 0, u); /* tf2onnx's NHWC pairs cancel */
    rx_attr *m = ox_amap(c);
    if (n >= 0) ox_aset(c, m, "axes", ox_aints(c, perm, n));
    return ox_out_node(c, 0, ox_call1(c, "permute_dims", ox_in_node(c, 0), m));
}

bool ox_c_squeeze(ox_ctx *c)
{
    int64_t *ax;
    int n;
    if (!ox_get_axes(c, 1, &ax, &n)) return false;
    ox_val *xv = ox_in(c, 0);
    if (xv && xv->sym && xv->symrank == 1 && xv->nsym == 1) { /* [n] -> n */
        ox_out_sym(c, 0, xv->sym, 1, 0, xv->symdt);
        return true;
    }
    rx_attr *m = ox_amap(c);
    if (n >= 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    return ox_out_node(c, 0, ox_call1(c, "squeeze", ox_node(c, xv), m));
}

bool ox_c_unsqueeze(ox_ctx *c)
{
    int64_t *ax;
    int n;
    if (!ox_get_axes(c, 1, &ax, &n)) return false;
    if (n < 0) {
        ox_err(c, "needs axes");
        return false;
    }
    ox_val *xv = ox_in(c, 0);
    rx_expr **xs;
    int nxs;
    if (n == 1 && ox_syms(c, xv, &xs, &nxs) && xv->symrank == 0) { /* n -> [n] */
        ox_out_sym(c, 0, xv->sym, 1, 1, xv->symdt);
        return true;
    }
    rx_node *x = ox_node(c, xv);
    int nd = ox_ndim(x);
    if (nd < 0) {
        if (x) ox_err(c, "the input's rank must be known");
        return false;
    }
    /* ONNX axes index the output; expand_dims inserts in increasing order */
    int64_t *s = RX_NEWN(c->a, int64_t, n ? n : 1);
    for (int i = 0; i < n; i++) s[i] = ax[i] < 0 ? ax[i] + nd + n : ax[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            int64_t t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, s, n));
    return ox_out_node(c, 0, ox_call1(c, "expand_dims", x, m));
}

bool ox_c_concat(ox_ctx *c)
{
    int n = ox_nin(c);
    int64_t axis = ox_attr_i(c, "axis", 0);
    bool anysym = false, allsym = true;
    for (int i = 0; i < n; i++) {
        ox_val *v = ox_in(c, i);
        rx_expr **s;
        int k;
        anysym |= v && v->sym;
        allsym &= v && (v->sym || (v->k && v->k->ndim == 1)) && ox_syms(c, v, &s, &k);
    }
    if (anysym && allsym) {
        int total = 0;
        for (int i = 0; i < n; i++) total += ox_in(c, i)->nsym;
        rx_expr **r = RX_NEWN(c->a, rx_expr *, total ? total : 1);
        int at = 0;
        for (int i = 0; i < n; i++) {
            ox_val *v = ox_in(c, i);
            for (int j = 0; j < v->nsym; j++) r[at++] = v->sym[j];
        }
        ox_out_sym(c, 0, r, total, 1, ox_in(c, 0)->symdt);
        return true;
    }
    rx_node **fs = RX_NEWN(c->a, rx_node *, n ? n : 1);
    for (int i = 0; i < n; i++)
        if (!(fs[i] = ox_in_node(c, i))) return false;
    int nd = n > 0 && fs[0]->sinfo && fs[0]->sinfo->kind == RX_SI_TENSOR ? fs[0]->sinfo->ndim : -1;
    if (nd > 0 && axis >= -nd && axis < nd) /* dims other than the axis must agree */
        ox_unify_bcast(c, fs, n, (int)(axis < 0 ? axis + nd : axis));
    if (!ox_out_node(c, 0, ox_concat(c, fs, n, axis))) return false;
    bool known = nd == 1, anyf = false; /* known float vectors (ox_fvec): scales stay known */
    rx_expr **fv = RX_NEWN(c->a, rx_expr *, 16), **e;
    int total = 0, k;
    for (int i = 0; i < n && known; i++) {
        anyf |= ox_in(c, i)->fvec != NULL;
        known = ox_fvec(c, ox_in(c, i), &e, &k) && total + k <= 16;
        for (int j = 0; known && j < k; j++) fv[total++] = e[j];
    }
    if (known && anyf) ox_set_fvec(c, 0, fv, total);
    return true;
}

/* Gather of one constant index i (0-d, or a 1-element vector) along literal axis ax of
 * x: strided_slice(x, [i, i + 1)) along ax, reshaped without ax for a 0-d index. Timm's
 * and Swin's q, k, v = qkv[0], qkv[1], qkv[2] of the permuted (3, B, heads, N, d)
 * projection: as a take, each was a kernel of its own checking the index per element
 * (Swin's (16, 3, 64, 32) slices, 2 threads: 200 us each, about 2 GB/s); a slice is a
 * view the fused copies and matmul_view read. *out is that, or NULL when the form does
 * not apply; false after an error (the index out of range). */
static bool one_index(ox_ctx *c, rx_node *x, const rx_const *ik, int ax, rx_node **out)
{
    int64_t dv, nd = ox_ndim(x);
    if (!ik || ik->ndim > 1 || ox_numel(ik) != 1 || !x->sinfo->dims ||
        !rx_expr_is_const(x->sinfo->dims[ax], &dv))
        return true;
    int64_t i = ox_ci(ik, 0), j = i < 0 ? i + dv : i;
    if (j < 0 || j >= dv) {
        ox_err(c, "index %lld is out of range for an axis of %lld", (long long)i, (long long)dv);
        return false;
    }
    rx_expr *b = ox_lit(c, j), *e = ox_lit(c, j + 1), *one = ox_lit(c, 1);
    int64_t axes = ax;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &axes, 1));
    ox_aset(c, m, "begin", ox_aexprs(c, &b, 1));
    ox_aset(c, m, "end", ox_aexprs(c, &e, 1));
    ox_aset(c, m, "strides", ox_aexprs(c, &one, 1));
    rx_node *y = ox_call1(c, "strided_slice", x, m);
    if (y && ik->ndim == 0) {
        rx_expr **d = RX_NEWN(c->a, rx_expr *, nd > 1 ? nd - 1 : 1);
        for (int k = 0, n = 0; k < nd; k++)
            if (k != ax) d[n++] = x->sinfo->dims[k];
        y = ox_reshape(c, y, d, (int)nd - 1);
    }
    *out = y;
    return y != NULL;
}

bool ox_c_gather(ox_ctx *c)
{
    ox_val *xv = ox_in(c, 0), *iv = ox_in(c, 1);
    int64_t axis = ox_attr_i(c, "axis", 0);
    int64_t *idx;
    int ni;
    if (xv && xv->sym && xv->symrank == 1 && axis == 0 && ox_ints(c, iv, &idx, &ni)) {
        rx_const *ik = ox_const(c, iv);
        if (ik->ndim <= 1) {
            rx_expr **r = RX_NEWN(c->a, rx_expr *, ni ? ni : 1);
            for (int i = 0; i < ni; i++) {
                int64_t j = idx[i] < 0 ? idx[i] + xv->nsym : idx[i];
                if (j < 0 || j >= xv->nsym) {
                    ox_err(c, "index %lld is out of range for %d elements", (long long)idx[i],
                           xv->nsym);
                    return false;
                }
                r[i] = xv->sym[j];
            }
            ox_out_sym(c, 0, r, ni, ik->ndim, xv->symdt);
            return true;
        }
    }
    rx_node *x = ox_node(c, xv);
    int nd = ox_ndim(x);
    if (!x) return false;
    if (nd < 0) {
        ox_err(c, "the input's rank must be known");
        return false;
    }
    int ax = ox_norm_axis(c, axis, nd);
    if (ax < 0) return false;
    rx_node *in = ox_node(c, iv);
    if (!in) return false;
    /* negative constant indices count from the end of a literal dim */
    rx_const *ik = ox_const(c, iv);
    int64_t dv;
    rx_node *one = NULL;
    if (!one_index(c, x, ik, ax, &one)) return false;
    if (one) return ox_out_node(c, 0, one);
    if (ik && x->sinfo->dims && rx_expr_is_const(x->sinfo->dims[ax], &dv)) {
        bool neg = false;
        for (int64_t i = 0; i < ox_numel(ik); i++) neg |= ox_ci(ik, i) < 0;
        if (neg) {
            rx_const *k2 = ox_new_const(c, RX_DT_I64, ik->ndim, ik->shape);
            for (int64_t i = 0; i < ox_numel(ik); i++) {
                int64_t v = ox_ci(ik, i);
                v = v < 0 ? v + dv : v;
                memcpy(k2->data + 8 * i, &v, 8);
            }
            ox_val tmp = {.name = iv->name, .k = k2};
            in = ox_node(c, &tmp);
        }
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ax));
    rx_node *a[2] = {x, in};
    return ox_out_node(c, 0, ox_call(c, "take", a, 2, m));
}

/* A symbolic bound v <= 0 (PyTorch's x[:, -ids.shape[1]:], a Neg of a Shape) counted
 * from the end of extent d, as ONNX counts a negative one: v < 0 is d + v clamped at 0,
 * v == 0 stays 0, which max(d + v, 0) * min(-v, 1) is for every v <= 0. strided_slice
 * takes symbolic bounds as nonnegative indices, so without this such a slice builds and
 * every call fails its nonnegativity check. v itself when it is a literal or not proved
 * <= 0. */
static rx_expr *from_end(ox_ctx *c, rx_expr *d, rx_expr *v)
{
    int64_t k;
    if (rx_expr_is_const(v, &k) ||
        !rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_LE, v, ox_lit(c, 0))))
        return v;
    rx_expr *from = rx_e_binary(c->a, RX_E_MAX, rx_e_binary(c->a, RX_E_ADD, d, v), ox_lit(c, 0));
    rx_expr *neg = rx_e_binary(c->a, RX_E_MIN, rx_e_binary(c->a, RX_E_SUB, ox_lit(c, 0), v),
                               ox_lit(c, 1));
    return ox_simp(c, rx_e_binary(c->a, RX_E_MUL, from, neg));
}

/* The extent of a unit-step slice of a symbolic extent d whose bounds are each 0, 1, d - 1
 * or d (x[:, :1], x[:, 1:], x[:, :-1], x[:, -1:]) when d >= 1: e - b; NULL for other
 * bounds. strided_slice's own extent clamps the bounds to [0, d] (max(0, n - min(n, 1))
 * for x[:, 1:]), exact for every n >= 0 but related to nothing: NeRF's z[:, 1:] -
 * z[:, :-1] (max(0, n - min(n, 1)) against max(0, n - 1)) had unknown dims and did not
 * compile. The slice's result is asserted to this extent (a match_cast: a call with d = 0
 * fails there, with both shapes named); wider literal bounds (x[:, :512] of a shorter
 * sequence) keep their clamp. */
static rx_expr *slice_unclamped(ox_ctx *c, rx_expr *d, rx_expr *b, rx_expr *e)
{
    rx_expr *bd[2] = {b, e};
    for (int i = 0; i < 2; i++) {
        int64_t k;
        if (rx_expr_is_const(bd[i], &k) ? k < 0 || k > 1 :
            !rx_expr_is_const(ox_simp(c, rx_e_binary(c->a, RX_E_SUB, bd[i], d)), &k) || k < -1 ||
                k > 0)
            return NULL;
    }
    return ox_simp(c, rx_e_binary(c->a, RX_E_SUB, e, b));
}

/* Slice: starts/ends/axes/steps as inputs (opset >= 10) or attributes. */
bool ox_c_slice(ox_ctx *c)
{
    rx_expr **st, **en;
    int ns, ne, na = -1, nst = -1;
    int64_t *ax = NULL, *steps = NULL;
    if (c->opset < 10) {
        const int64_t *s = ox_attr_ints(c, "starts", &ns), *e = ox_attr_ints(c, "ends", &ne);
        if (ns < 0 || ne < 0) {
            ox_err(c, "needs starts and ends");
            return false;
        }
        st = RX_NEWN(c->a, rx_expr *, ns ? ns : 1);
        en = RX_NEWN(c->a, rx_expr *, ne ? ne : 1);
        for (int i = 0; i < ns; i++) st[i] = ox_lit(c, s[i]);
        for (int i = 0; i < ne; i++) en[i] = ox_lit(c, e[i]);
        if (!ox_get_axes(c, 99, &ax, &na)) return false;
    } else {
        if (!ox_syms(c, ox_in(c, 1), &st, &ns) || !ox_syms(c, ox_in(c, 2), &en, &ne)) {
            ox_err(c, "starts and ends must be computable at compile time");
            return false;
        }
        if (ox_in(c, 3) && !ox_ints(c, ox_in(c, 3), &ax, &na)) {
            ox_err(c, "axes must be a constant");
            return false;
        }
        if (ox_in(c, 4) && !ox_ints(c, ox_in(c, 4), &steps, &nst)) {
            ox_err(c, "steps must be a constant");
            return false;
        }
    }
    if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns)) {
        ox_err(c, "starts, ends, axes and steps differ in length");
        return false;
    }
    ox_val *xv = ox_in(c, 0);
    if (xv && xv->sym && (xv->symrank == 2 || (xv->symrank == 1 && nst >= 0 && steps[0] != 1)) &&
        slice_known(c, xv, st, en, ns, na >= 0 ? ax : NULL, nst >= 0 ? steps : NULL))
        return true;
    if (xv && xv->sym && xv->symrank == 1 && ns == 1 && (na < 0 || ax[0] == 0 || ax[0] == -1)) {
        int64_t s, e, step = nst >= 0 ? steps[0] : 1, len = xv->nsym;
        if (step == 1 && rx_expr_is_const(ox_simp(c, st[0]), &s) && rx_expr_is_const(ox_simp(c, en[0]), &e)) {
            if (s < 0) s += len;
            if (e < 0) e += len;
            s = s < 0 ? 0 : s > len ? len : s;
            e = e < 0 ? 0 : e > len ? len : e;
            int n = e > s ? (int)(e - s) : 0;
            ox_out_sym(c, 0, xv->sym + s, n, 1, xv->symdt);
            return true;
        }
    }
    rx_node *x = ox_node(c, xv);
    if (!ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t *axes = RX_NEWN(c->a, int64_t, ns ? ns : 1);
    rx_expr **b = RX_NEWN(c->a, rx_expr *, ns ? ns : 1), **e = RX_NEWN(c->a, rx_expr *, ns ? ns : 1);
    rx_expr **sd = RX_NEWN(c->a, rx_expr *, ns ? ns : 1);
    rx_expr **un = RX_NEWN(c->a, rx_expr *, ns ? ns : 1); /* slice_unclamped per bound */
    for (int i = 0; i < ns; i++) {
        int a = ox_norm_axis(c, na >= 0 ? ax[i] : i, nd);
        if (a < 0) return false;
        axes[i] = a;
        int64_t step = nst >= 0 ? steps[i] : 1, dv, bv, ev;
        if (step == 0) {
            ox_err(c, "step %d is 0", i);
            return false;
        }
        sd[i] = ox_lit(c, step);
        rx_expr *dim = x->sinfo->dims[a];
        b[i] = ox_simp(c, st[i]);
        e[i] = ox_simp(c, en[i]);
        bool litdim = rx_expr_is_const(dim, &dv);
        /* symbolic extent: negative bounds count from it, huge ends are the extent */
        if (!litdim && rx_expr_is_const(b[i], &bv) && bv < 0 && step > 0)
            b[i] = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, dim, b[i]));
        if (!litdim && rx_expr_is_const(e[i], &ev) && step > 0) {
            if (ev >= (INT64_C(1) << 40)) e[i] = dim;
            else if (ev < 0) e[i] = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, dim, e[i]));
        }
        if (step > 0) {
            b[i] = from_end(c, dim, b[i]);
            e[i] = from_end(c, dim, e[i]);
        }
        un[i] = !litdim && step == 1 ? slice_unclamped(c, dim, b[i], e[i]) : NULL;
        if (litdim && rx_expr_is_const(e[i], &ev) && ev > dv) e[i] = ox_lit(c, dv);
        if (litdim && rx_expr_is_const(e[i], &ev) && ev < -dv - 1) e[i] = ox_lit(c, -dv - 1);
        if (litdim && rx_expr_is_const(b[i], &bv) && bv > dv) b[i] = ox_lit(c, dv);
        if (litdim && rx_expr_is_const(b[i], &bv) && bv < -dv - 1) b[i] = ox_lit(c, -dv - 1);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, ns));
    ox_aset(c, m, "begin", ox_aexprs(c, b, ns));
    ox_aset(c, m, "end", ox_aexprs(c, e, ns));
    ox_aset(c, m, "strides", ox_aexprs(c, sd, ns));
    rx_node *y = ox_call1(c, "strided_slice", x, m);
    if (!y || !y->sinfo || y->sinfo->kind != RX_SI_TENSOR || !y->sinfo->dims)
        return ox_out_node(c, 0, y);
    rx_expr **yd = NULL;
    for (int i = 0; i < ns; i++) {
        if (!un[i] || rx_arith_prove_equal(c->ar, y->sinfo->dims[axes[i]], un[i])) continue;
        if (!yd) {
            yd = RX_NEWN(c->a, rx_expr *, nd ? nd : 1);
            memcpy(yd, y->sinfo->dims, sizeof *yd * (size_t)nd);
        }
        yd[axes[i]] = un[i];
    }
    return ox_out_node(c, 0, yd ? ox_match_dims(c, y, yd, nd) : y);
}

/* Split of a known integer vector along its axis (PyTorch's repeat_interleave splits its
 * expanded repeat counts): known parts, or false (the op is emitted). */
static bool split_known(ox_ctx *c, int nout)
{
    ox_val *xv = ox_in(c, 0);
    rx_expr **xs;
    int nx, nsz = -1;
    int64_t ax = ox_attr_i(c, "axis", 0), *sizes = NULL, len[64];
    if (!xv || !(xv->sym || (xv->k && !rx_dtype_is_float(xv->k->dtype))) ||
        !ox_syms(c, xv, &xs, &nx) || xv->symrank != 1 || (ax != 0 && ax != -1) || nout < 1 ||
        nout > 64)
        return false;
    const int64_t *as = ox_attr_ints(c, "split", &nsz);
    if (nsz < 0 && ox_in(c, 1) && !ox_ints(c, ox_in(c, 1), &sizes, &nsz)) return false;
    if ((nsz >= 0 && nsz != nout) || (nsz < 0 && nx % nout)) return false;
    int64_t off = 0;
    for (int i = 0; i < nout; i++) {
        len[i] = nsz < 0 ? nx / nout : sizes ? sizes[i] : as[i];
        if (len[i] < 0 || len[i] > nx - off) return false;
        off += len[i];
    }
    if (off != nx) return false;
    off = 0;
    for (int i = 0; i < nout; off += len[i++]) ox_out_sym(c, i, xs + off, (int)len[i], 1, xv->symdt);
    return true;
}

bool ox_c_split(ox_ctx *c)
{
    if (split_known(c, ox_nout(c))) return true;
    rx_node *x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim, nout = ox_nout(c);
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", 0), nd);
    if (ax < 0) return false;
    int64_t *sizes = NULL;
    int nsz = -1;
    const int64_t *as = ox_attr_ints(c, "split", &nsz);
    if (nsz >= 0) {
        sizes = RX_NEWN(c->a, int64_t, nsz ? nsz : 1);
        if (nsz) memcpy(sizes, as, sizeof *sizes * (size_t)nsz);
    } else if (ox_in(c, 1) && !ox_ints(c, ox_in(c, 1), &sizes, &nsz)) {
        ox_err(c, "split sizes must be a constant");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ax));
    if (nsz >= 0) {
        if (nsz != nout) {
            ox_err(c, "%d split sizes for %d outputs", nsz, nout);
            return false;
        }
        int64_t *ind = RX_NEWN(c->a, int64_t, nsz ? nsz : 1), acc = 0, total = 0;
        for (int i = 0; i + 1 < nsz; i++) ind[i] = acc += sizes[i];
        for (int i = 0; i < nsz; i++) total += sizes[i];
        rx_expr *ext = x->sinfo->dims[ax], *lit = ox_lit(c, total);
        if (nsz > 0 && !rx_expr_is_const(ext, NULL) && !rx_arith_prove_equal(c->ar, ext, lit)) {
            /* constant sizes on a symbolic axis (a traced x.split(x.shape[-1] // 2)): the
             * axis must equal their sum, as ONNX Runtime checks at the op; asserted by a
             * match_cast so each piece has its size (else the last one is ext - acc) */
            rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
            memcpy(d, x->sinfo->dims, sizeof *d * (size_t)nd);
            d[ax] = lit;
            x = ox_match_dims(c, x, d, nd);
        }
        ox_aset(c, m, "indices_or_sections", ox_aints(c, ind, nsz - 1));
    } else {
        ox_aset(c, m, "indices_or_sections", ox_aint(c, nout));
    }
    rx_node *t = ox_call1(c, "split", x, m);
    if (!t) return false;
    for (int i = 0; i < nout; i++) {
        rx_node *g = rx_n_get_item(c->m, t, i);
        g->sinfo = t->sinfo->fields[i];
        rx_node *v = rx_n_var(c->m, "split", g->sinfo, true);
        rx_binding b = {v, g, NULL, false, 0};
        RX_VEC_PUSH(c->binds, b);
        ox_out_node(c, i, v);
    }
    return true;
}

/* Expand of a known integer value of rank <= 1 to a literal shape of rank <= 1 (PyTorch's
 * repeat_interleave expands its repeat count to a vector): the elements, or false. */
static bool expand_known(ox_ctx *c, rx_expr **t, int n)
{
    ox_val *xv = ox_in(c, 0);
    rx_expr **xs;
    int nx;
    int64_t t0 = 1;
    if (!xv || !(xv->sym || (xv->k && !rx_dtype_is_float(xv->k->dtype))) || n > 1 ||
        (n == 1 && !rx_expr_is_const(ox_simp(c, t[0]), &t0)) || !ox_syms(c, xv, &xs, &nx))
        return false;
    int rank = xv->symrank > n ? xv->symrank : n;
    int64_t len = rank == 0 ? 1 : xv->symrank == 0 || nx == 1 ? (t0 == 1 ? 1 : t0) : nx;
    if (len < 0 || len > 4096 || (rank == 1 && xv->symrank == 1 && nx != 1 && t0 != 1 && t0 != nx))
        return false;
    rx_expr **r = RX_NEWN(c->a, rx_expr *, len ? len : 1);
    for (int64_t i = 0; i < len; i++) r[i] = xs[nx == 1 ? 0 : i];
    ox_out_sym(c, 0, r, (int)len, rank, xv->symdt);
    return true;
}

bool ox_c_expand(ox_ctx *c)
{
    rx_node *x;
    rx_expr **t;
    int n;
    if (!target_shape(c, &t, &n)) return false;
    if (expand_known(c, t, n)) return true;
    x = ox_in_node(c, 0);
    if (!ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim, r = n > nd ? n : nd;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, r ? r : 1), **lit = RX_NEWN(c->a, rx_expr *, r ? r : 1);
    bool assert_dims = false;
    for (int i = 0; i < r; i++) { /* bidirectional: 1 on either side takes the other */
        int xi = i - (r - nd), ti = i - (r - n);
        rx_expr *a = xi >= 0 ? x->sinfo->dims[xi] : NULL, *b = ti >= 0 ? ox_simp(c, t[ti]) : NULL;
        /* a target at most 1 that is not a literal (min(n, 1): the shape of a first-row
         * slice, PyTorch's index_add export Expand(src, Shape(zeros[0:1]))) takes the
         * input's extent as a 1 does (its 0 case is an empty target, 0 or 1 wide) */
        bool b_one = b && (rx_expr_is_int(b, 1) ||
                           (!rx_expr_is_const(b, NULL) &&
                            rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_LE, b, ox_lit(c, 1)))));
        d[i] = lit[i] = !a ? b : !b ? a : b_one ? a : b;
        int64_t k, kb;
        if (a && b && rx_expr_is_const(ox_simp(c, a), &k) && rx_expr_is_const(b, &kb) && k != 1 &&
            kb != 1 && kb != k) {
            ox_err(c, "cannot expand extent %lld to %lld", (long long)k, (long long)kb);
            return false;
        }
        if (a && b && rx_expr_is_const(ox_simp(c, a), &k) && k != 1 && !rx_expr_is_const(b, NULL) &&
            !rx_arith_prove_equal(c->ar, a, b)) {
            /* a literal extent k != 1 against a symbolic one: the target must be k (a
             * traced batch baked into a constant, PyTorch's packed RNN's zero state
             * Expand(const (2, 2, H), [2, b, H])): the copy is k wide and a match_cast
             * asserts target == k at run time, as ONNX Runtime fails on other extents
             * (reading k-wide data b wide would run past it) */
            lit[i] = a;
            assert_dims = true;
        }
    }
    rx_node *y = ox_call2(c, "broadcast_to", x, ox_shape_node(c, lit, r));
    return ox_out_node(c, 0, assert_dims && y ? ox_match_dims(c, y, d, r) : y);
}

/* Tile whose repeats are symbolic (DETR's query_embed.repeat(1, b, 1) with a dynamic
 * batch: Concat of constants and a Shape element): x (d0 .. dn-1) is reshaped to
 * (1, d0, 1, d1, ..), broadcast to (r0, d0, r1, d1, ..) and reshaped to (r0 * d0, ..),
 * which is what tile computes (each axis' copies outermost). One injective chain for the
 * fusion pass; an axis whose input extent is 1 skips the pair (broadcast only). */
static bool tile_symbolic(ox_ctx *c)
{
    rx_expr **rep;
    int n;
    rx_node *x = ox_in_node(c, 0);
    if (!ox_syms(c, ox_in(c, 1), &rep, &n)) {
        ox_err(c, "repeats must be computable at compile time (constants or shape arithmetic)");
        return false;
    }
    if (!ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    if (n != nd) {
        ox_err(c, "%d repeats for an input of rank %d", n, nd);
        return false;
    }
    rx_expr **pair = RX_NEWN(c->a, rx_expr *, 2 * nd + 1), **full = RX_NEWN(c->a, rx_expr *, 2 * nd + 1);
    rx_expr **out = RX_NEWN(c->a, rx_expr *, nd + 1);
    int np = 0;
    for (int i = 0; i < nd; i++) {
        rx_expr *d = x->sinfo->dims[i], *r = ox_simp(c, rep[i]);
        out[i] = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, r, d));
        if (!rx_expr_is_int(d, 1)) {
            pair[np] = ox_lit(c, 1);
            full[np++] = r;
        }
        pair[np] = d;
        full[np++] = rx_expr_is_int(d, 1) ? r : d;
    }
    rx_node *p = ox_reshape(c, x, pair, np);
    rx_node *b = p ? ox_call2(c, "broadcast_to", p, ox_shape_node(c, full, np)) : NULL;
    return b && ox_out_node(c, 0, ox_reshape(c, b, out, nd));
}

bool ox_c_tile(ox_ctx *c)
{
    int64_t *rep;
    int n;
    if (!ox_ints(c, ox_in(c, 1), &rep, &n)) return tile_symbolic(c);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "repeats", ox_aints(c, rep, n));
    return ox_out_node(c, 0, ox_call1(c, "tile", ox_in_node(c, 0), m));
}

/* Trilu whose k is not a constant (T5's decoder mask `triu(ones(n, past + n), past + 1)`
 * over a cache of run-time length, a k read from data): where(col - row >= k (upper) or
 * <= k (lower), x, 0) over iotas of the last two dims; k's symbolic value becomes a 0-d
 * tensor computed on the host. */
static bool trilu_dynamic(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *k = ox_astype(c, ox_in_node(c, 1), RX_DT_I64);
    if (!ox_need_dims(c, x) || !k) return false;
    int nd = ox_ndim(x);
    if (nd < 2) {
        ox_err(c, "the input must have rank 2 or more");
        return false;
    }
    rx_expr **d = x->sinfo->dims;
    rx_node *diff = ox_call2(c, "subtract", ox_iota(c, d[nd - 1], nd - 1, nd, RX_DT_I64),
                             ox_iota(c, d[nd - 2], nd - 2, nd, RX_DT_I64));
    if (ox_ndim(k) != 0) k = ox_reshape(c, k, NULL, 0);
    rx_node *w[3] = {ox_call2(c, ox_attr_i(c, "upper", 1) ? "greater_equal" : "less_equal",
                              diff, k), x, ox_scalar(c, ox_dtype_of(x), 0)};
    if (!w[0] || !w[2]) return false;
    return ox_out_node(c, 0, ox_call(c, "where", w, 3, NULL));
}

bool ox_c_trilu(ox_ctx *c)
{
    int64_t *k = NULL;
    int n = 0;
    if (ox_in(c, 1) && (!ox_ints(c, ox_in(c, 1), &k, &n) || n != 1)) return trilu_dynamic(c);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "k", ox_aint(c, k ? k[0] : 0));
    return ox_out_node(c, 0, ox_call1(c, ox_attr_i(c, "upper", 1) ? "triu" : "tril", ox_in_node(c, 0), m));
}

bool ox_c_constant_of_shape(ox_ctx *c)
{
    rx_expr **t;
    int n;
    if (!ox_syms(c, ox_in(c, 0), &t, &n)) {
        ox_err(c, "the shape must be computable at compile time");
        return false;
    }
    rx_const *val = ox_attr(c, "value") ? ox_attr_tensor(c, "value") : NULL;
    if (ox_attr(c, "value") && !val) return false;
    rx_dtype dt = val ? val->dtype : RX_DT_F32;
    int64_t *dims = RX_NEWN(c->a, int64_t, n ? n : 1), total = 1;
    bool literal = true;
    for (int i = 0; i < n && literal; i++) {
        literal = rx_expr_is_const(ox_simp(c, t[i]), &dims[i]);
        if (literal) total *= dims[i];
        if (total > 4096) literal = false;
    }
    if (literal) { /* small and static: fold (it often feeds shape arithmetic) */
        rx_const *k = ox_new_const(c, dt, n, dims);
        size_t es = (size_t)(rx_dtype_bits(dt) + 7) / 8;
        for (int64_t i = 0; val && i < total; i++) memcpy(k->data + (size_t)i * es, val->data, es);
        ox_out_const(c, 0, k);
        return true;
    }
    rx_node *fill = val ? ox_scalar(c, dt, ox_cf(val, 0)) : ox_scalar(c, dt, 0);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *a[2] = {ox_shape_node(c, t, n), fill};
    return ox_out_node(c, 0, ox_call(c, "full", a, 2, m));
}

/* A float Range whose bounds are whole numbers: constants, or a symbolic size cast to
 * float (ox_val.fsym; torch.arange(h, dtype=torch.float32) over a feature map's height,
 * anchors and positional encodings): the integer arange, cast. Steps of whole numbers
 * only (an integer count); false when it does not apply. */
static bool float_range(ox_ctx *c)
{
    rx_expr *v[3];
    rx_dtype dt = RX_DT_UNKNOWN;
    bool sym = false;
    for (int i = 0; i < 3; i++) {
        ox_val *x = ox_in(c, i);
        rx_const *k = x ? ox_const(c, x) : NULL;
        if (x && x->fsym && x->node && rx_dtype_is_float(ox_dtype_of(x->node))) {
            v[i] = x->fsym;
            dt = ox_dtype_of(x->node);
            sym = true;
        } else if (k && ox_numel(k) == 1 && rx_dtype_is_float(k->dtype) &&
                   ox_cf(k, 0) == floor(ox_cf(k, 0)) && fabs(ox_cf(k, 0)) < 9.0e15) {
            v[i] = ox_lit(c, (int64_t)ox_cf(k, 0));
            dt = k->dtype;
        } else {
            return false;
        }
    }
    int64_t step;
    if (!sym || !rx_expr_is_const(v[2], &step) || step == 0) return false;
    rx_attr *m = ox_amap(c);
    for (int i = 0; i < 3; i++)
        ox_aset(c, m, i == 0 ? "start" : i == 1 ? "end" : "step", ox_aexprs(c, &v[i], 1)->u.arr.items[0]);
    ox_aset(c, m, "dtype", ox_astr(c, "i64"));
    rx_attr *f = ox_amap(c);
    ox_aset(c, f, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_out_node(c, 0, ox_call1(c, "astype", ox_call(c, "arange", NULL, 0, m), f));
}

bool ox_c_range(ox_ctx *c)
{
    rx_const *k[3];
    for (int i = 0; i < 3; i++) k[i] = ox_const(c, ox_in(c, i));
    if (k[0] && k[1] && k[2] && ox_numel(k[0]) == 1 && ox_numel(k[1]) == 1 && ox_numel(k[2]) == 1) {
        double st = ox_cf(k[0], 0), lim = ox_cf(k[1], 0), d = ox_cf(k[2], 0);
        double cnt = d != 0 ? ceil((lim - st) / d) : -1;
        if (d != 0 && cnt <= 4096) { /* small and static: a constant */
            int64_t n = cnt > 0 ? (int64_t)cnt : 0;
            rx_const *r = ox_new_const(c, k[0]->dtype, 1, &n);
            for (int64_t i = 0; i < n; i++) {
                double v = st + (double)i * d;
                uint8_t *p = r->data + (size_t)i * ox_esize(r->dtype);
                if (r->dtype == RX_DT_F32) { float f = (float)v; memcpy(p, &f, 4); }
                else if (r->dtype == RX_DT_F64) memcpy(p, &v, 8);
                else { int64_t iv = (int64_t)v; memcpy(p, &iv, ox_esize(r->dtype)); }
            }
            ox_out_const(c, 0, r);
            return true;
        }
    }
    rx_expr *v[3];
    rx_dtype dt = RX_DT_UNKNOWN;
    if (float_range(c)) return true;
    for (int i = 0; i < 3; i++) {
        ox_val *x = ox_in(c, i);
        rx_expr **s;
        int n;
        if (!x || !ox_syms(c, x, &s, &n) || n != 1) {
            ox_err(c, "start, limit and delta must be integer scalars computable at compile "
                   "time");
            return false;
        }
        v[i] = ox_simp(c, s[0]);
        dt = x->symdt;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "start", ox_aexprs(c, &v[0], 1)->u.arr.items[0]);
    ox_aset(c, m, "end", ox_aexprs(c, &v[1], 1)->u.arr.items[0]);
    ox_aset(c, m, "step", ox_aexprs(c, &v[2], 1)->u.arr.items[0]);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_out_node(c, 0, ox_call(c, "arange", NULL, 0, m));
}

