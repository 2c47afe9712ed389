/*
 * onnx_axis.c — the ONNX importer's converters onto the axis ops and the shifts:
 * GatherElements -> gather_elements; CumSum -> cumsum (exclusive and reverse as its
 * attributes; the axis a constant input); TopK -> topk; BitShift ->
 * left_shift / right_shift by `direction`; ReverseSequence -> gather_elements with
 * computed indices; Pad -> nn.pad (constant pads), or with widths computed from sizes
 * (F.pad to a skip's size) nn.pad + a crop strided_slice + full blocks concatenated.
 */
#include <string.h>

#include "onnx_int.h"

bool ox_c_gather_elements(ox_ctx *c)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ox_attr_i(c, "axis", 0)));
    rx_node *a[2] = {ox_in_node(c, 0), ox_in_node(c, 1)};
    if (!a[0] || !a[1]) return false;
    return ox_out_node(c, 0, ox_call(c, "gather_elements", a, 2, m));
}

bool ox_c_gather_nd(ox_ctx *c)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "batch_dims", ox_aint(c, ox_attr_i(c, "batch_dims", 0)));
    rx_node *a[2] = {ox_in_node(c, 0), ox_in_node(c, 1)};
    if (!a[0] || !a[1]) return false;
    return ox_out_node(c, 0, ox_call(c, "gather_nd", a, 2, m));
}

/* ScatterElements, Scatter (its older name) and ScatterND -> scatter_elements,
 * scatter_nd; reduction none is "update". */
/* ScatterElements (reduction none) on a shape vector known symbolically, constant
 * indices: the vector with those entries replaced, folded like shape arithmetic
 * (PyTorch's index_copy builds its expand target so: Shape(cache) with the indexed
 * axis's size scattered in). */
static bool scatter_sym(ox_ctx *c)
{
    ox_val *x = ox_in(c, 0), *iv = ox_in(c, 1), *u = ox_in(c, 2);
    rx_expr **xs, **us;
    int64_t *idx;
    int nx, ni, nu;
    if (!x || !x->sym || x->symrank != 1 || strcmp(ox_attr_s(c, "reduction", "none"), "none") ||
        ox_attr_i(c, "axis", 0) != 0 || !ox_ints(c, iv, &idx, &ni) ||
        !ox_syms(c, x, &xs, &nx) || !ox_syms(c, u, &us, &nu) || nu != ni)
        return false;
    rx_expr **r = RX_NEWN(c->a, rx_expr *, nx ? nx : 1);
    memcpy(r, xs, sizeof *r * (size_t)nx);
    for (int i = 0; i < ni; i++) {
        int64_t j = idx[i] < 0 ? idx[i] + nx : idx[i];
        if (j < 0 || j >= nx) return false; /* the op reports it */
        r[j] = us[i];
    }
    ox_out_sym(c, 0, r, nx, 1, x->symdt);
    return true;
}

bool ox_c_scatter(ox_ctx *c)
{
    bool nd = !strcmp(c->node->op_type, "ScatterND");
    if (!nd && scatter_sym(c)) return true;
    const char *red = ox_attr_s(c, "reduction", "none");
    rx_attr *m = ox_amap(c);
    if (!nd) ox_aset(c, m, "axis", ox_aint(c, ox_attr_i(c, "axis", 0)));
    ox_aset(c, m, "reduction", ox_astr(c, !strcmp(red, "none") ? "update" : red));
    rx_node *a[3] = {ox_in_node(c, 0), ox_in_node(c, 1), ox_in_node(c, 2)};
    if (!a[0] || !a[1] || !a[2]) return false;
    return ox_out_node(c, 0, ox_call(c, nd ? "scatter_nd" : "scatter_elements", a, 3, m));
}

bool ox_c_cumsum(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    int64_t *ax;
    int n;
    if (!x) return false;
    if (!ox_ints(c, ox_in(c, 1), &ax, &n) || n != 1) {
        ox_err(c, "the axis must be a constant scalar");
        return false;
    }
    int nd = ox_ndim(x), a = ox_norm_axis(c, ax[0], nd > 0 ? nd : 1);
    if (a < 0) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, a));
    ox_aset(c, m, "exclusive", ox_abool(c, ox_attr_i(c, "exclusive", 0) != 0));
    ox_aset(c, m, "reverse", ox_abool(c, ox_attr_i(c, "reverse", 0) != 0));
    return ox_out_node(c, 0, ox_call1(c, "cumsum", x, m));
}

bool ox_c_bit_shift(ox_ctx *c)
{
    const char *dir = ox_attr_s(c, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) {
        ox_err(c, "direction must be \"LEFT\" or \"RIGHT\", found \"%s\"", dir);
        return false;
    }
    return ox_out_node(c, 0, ox_call2(c, !strcmp(dir, "LEFT") ? "left_shift" : "right_shift",
                                      ox_in_node(c, 0), ox_in_node(c, 1)));
}

/* The n values of a Resize operand (sizes, scales or roi) of a 3-d NCW input as those of
 * its NC1W lifting: a unit H inserted before W (at H's index of each half of a roi). */
static void lift_ncw(double *v, int n, double unit)
{
    if (n == 6) { /* roi: starts then ends; H's are 0 and 1 (the whole extent) */
        double r[8] = {v[0], v[1], 0, v[2], v[3], v[4], 1, v[5]};
        memcpy(v, r, sizeof r);
    } else { /* n == 3: sizes or scales */
        v[3] = v[2];
        v[2] = unit;
    }
}

/* Scales known as ratios (ox_fvec): 1 for N and C, sizes / extents for H and W (the
 * exporters' interpolate(size=...) before opset 11) or integers; the output sizes. */
static bool scales_of_sizes(ox_ctx *c, ox_val *v, rx_expr **d, rx_expr **size)
{
    rx_expr **e;
    int n;
    int64_t s;
    if (!ox_fvec(c, v, &e, &n) || n != 4) return false;
    for (int i = 0; i < 4; i++) {
        rx_expr *q = e[i];
        if (q->kind == RX_E_DIV && i >= 2 && rx_arith_prove_equal(c->ar, q->u.op.b, d[i])) {
            size[i - 2] = ox_simp(c, q->u.op.a);
        } else if (q->kind == RX_E_DIV && rx_arith_prove_equal(c->ar, q->u.op.a, q->u.op.b)) {
            if (i >= 2) size[i - 2] = d[i];
        } else if (rx_expr_is_const(ox_simp(c, q), &s) && s >= 1 && (i >= 2 || s == 1)) {
            if (i >= 2) size[i - 2] = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, d[i], ox_lit(c, s)));
        } else {
            return false;
        }
    }
    return true;
}

/* floor(d * s) for a symbolic extent d: s as p / 2^k exactly (a float scale such as 1.5
 * or 0.75 is), the size (d * p) // 2^k; ONNX Runtime and PyTorch take floor(d * s), exact
 * here since d * s needs no rounding at these magnitudes. false when s needs k > 16. */
static bool dyadic_size(ox_ctx *c, rx_expr *d, double s, rx_expr **out)
{
    int64_t q = 1;
    if (!(s > 0) || s > (double)(1 << 24)) return false; /* (int64_t) below stays defined */
    while (q <= 65536 && s * (double)q != (double)(int64_t)(s * (double)q)) q *= 2;
    if (q > 65536 || s * (double)q > (double)(1 << 24)) return false;
    rx_expr *e = rx_e_binary(c->a, RX_E_MUL, d, ox_lit(c, (int64_t)(s * (double)q)));
    if (q > 1) e = rx_e_binary(c->a, RX_E_FLOORDIV, e, ox_lit(c, q));
    *out = ox_simp(c, e);
    return true;
}

/* image.resize2d of x (NCHW) to size (H, W): method, coordinates, rounding (floor before
 * opset 11), cubic and extrapolation attributes, roi's H and W of an 8-value roi, the
 * scales of H and W where known (NULL: sizes / extents at run time). */
static rx_node *resize2d(ox_ctx *c, rx_node *x, rx_expr **size, const char *method,
                         const char *mode, bool old, const double *roi, const double *sc)
{
    rx_attr *a = ox_amap(c);
    double r4[4] = {roi[2], roi[3], roi[6], roi[7]};
    ox_aset(c, a, "roi", ox_afloats(c, r4, 4));
    ox_aset(c, a, "method", ox_astr(c, method));
    ox_aset(c, a, "coordinate_transformation_mode", ox_astr(c, mode));
    ox_aset(c, a, "rounding_method", ox_astr(c, old ? "floor" : ox_attr_s(c, "nearest_mode",
                                                                           "round_prefer_floor")));
    ox_aset(c, a, "cubic_alpha", ox_afloat(c, ox_attr_f(c, "cubic_coeff_a", -0.75)));
    ox_aset(c, a, "cubic_exclude", ox_aint(c, ox_attr_i(c, "exclude_outside", 0)));
    ox_aset(c, a, "extrapolation_value", ox_afloat(c, ox_attr_f(c, "extrapolation_value", 0)));
    if (sc) ox_aset(c, a, "scales", ox_afloats(c, sc, 2));
    rx_node *args[2] = {x, ox_shape_node(c, size, 2)};
    return x ? ox_call(c, "image.resize2d", args, 2, a) : NULL;
}

/* A 5-d NCDHW input (F.interpolate(mode="trilinear" or "nearest") in a 3-d U-Net), opset
 * 11 on: nearest and linear are separable, so H and W are resized as (N, C * D, H, W),
 * then D as the H of (N, C, D, H' * W') whose W keeps its extent (the identity at every
 * coordinate mode), reshaped to (N, C, D', H', W'). Scales constant (extents floor(D *
 * s): dyadic_size where symbolic) or sizes known symbolically; cubic (ONNX Runtime has no
 * tricubic either) and tf_crop_and_resize are refused. */
static bool resize_5d(ox_ctx *c, rx_node *x, const char *method, const char *mode)
{
    rx_expr **d = x->sinfo->dims, *size[5];
    double sc[5] = {1, 1, 1, 1, 1}, roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    bool have_scales = true;
    if (c->opset < 11 || !strcmp(c->node->op_type, "Upsample") || !strcmp(method, "cubic") ||
        !strcmp(mode, "tf_crop_and_resize")) {
        ox_err(c, "a 5-d input is resized in nearest or linear mode from opset 11, without "
               "tf_crop_and_resize");
        return false;
    }
    if (ox_in(c, 3)) {
        rx_expr **zs;
        int n;
        if (!ox_syms(c, ox_in(c, 3), &zs, &n) || n != 5) {
            ox_err(c, "sizes must be 5 values known at compile time");
            return false;
        }
        for (int i = 0; i < 5; i++) size[i] = ox_simp(c, zs[i]);
        have_scales = false; /* the op divides the sizes by the extents at run time */
    } else {
        rx_const *k = ox_in(c, 2) ? ox_const(c, ox_in(c, 2)) : NULL;
        if (!k || ox_numel(k) != 5) {
            ox_err(c, "scales must be 5 constants");
            return false;
        }
        for (int i = 0; i < 5; i++) {
            int64_t v;
            sc[i] = ox_cf(k, i);
            if (i < 2) {
                size[i] = d[i];
            } else if (!(sc[i] > 0)) {
                break;
            } else if (rx_expr_is_const(ox_simp(c, d[i]), &v)) {
                size[i] = ox_lit(c, (int64_t)((double)v * sc[i]));
            } else if (!dyadic_size(c, d[i], sc[i], &size[i])) {
                ox_err(c, "a non-integer scale must be a multiple of 1/65536 with a symbolic "
                       "input extent");
                return false;
            }
        }
    }
    if (sc[0] != 1 || sc[1] != 1 || !(sc[2] > 0) || !(sc[3] > 0) || !(sc[4] > 0) ||
        !rx_arith_prove_equal(c->ar, d[0], size[0]) || !rx_arith_prove_equal(c->ar, d[1], size[1])) {
        ox_err(c, "only D, H and W can be resized (N and C kept, scales positive)");
        return false;
    }
    rx_expr *cd = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, d[1], d[2]));
    rx_expr *hw = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, size[3], size[4]));
    rx_expr *a4[4] = {d[0], cd, d[3], d[4]}, *b4[4] = {d[0], d[1], d[2], hw};
    rx_expr *z2[2] = {size[2], hw}, *out[5] = {d[0], d[1], size[2], size[3], size[4]};
    double s_hw[2] = {sc[3], sc[4]}, s_d[2] = {sc[2], 1};
    rx_node *y = resize2d(c, ox_reshape(c, x, a4, 4), size + 3, method, mode, false, roi,
                          have_scales ? s_hw : NULL);
    y = resize2d(c, y ? ox_reshape(c, y, b4, 4) : NULL, z2, method, mode, false, roi,
                 have_scales ? s_d : NULL);
    return ox_out_node(c, 0, y ? ox_reshape(c, y, out, 5) : NULL);
}

/* Resize (opsets 10-17) and Upsample onto image.resize2d: a 4-d NCHW input whose N and
 * C are kept; sizes (the output's H and W) or scales (H and W from the literal input
 * extents, floor(D * s), or (D * p) // 2^k for a symbolic extent and s = p / 2^k:
 * dyadic_size, e.g. nearest at 1.5; or sizes / extents known as ratios:
 * scales_of_sizes); roi for tf_crop_and_resize. Before opset 11 (and for Upsample) the
 * coordinates are asymmetric and nearest rounds down. A 3-d NCW input (nn.Upsample after
 * a Conv1d) is resized as NC1W, H kept: expand_dims before, squeeze after; a 5-d one in
 * two steps (resize_5d). */
bool ox_c_resize(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    int rank = x->sinfo->ndim;
    bool old = c->opset < 11 || !strcmp(c->node->op_type, "Upsample");
    const char *mode = ox_attr_s(c, "coordinate_transformation_mode", old ? "asymmetric" : "half_pixel");
    const char *how = ox_attr_s(c, "mode", "nearest");
    const char *method = !strcmp(how, "nearest") ? "nearest_neighbor" : !strcmp(how, "linear") ||
                         !strcmp(how, "bilinear") || !strcmp(how, "trilinear") ? "linear"
                         : !strcmp(how, "cubic") ? "cubic" : NULL;
    if (!method) {
        ox_err(c, "mode '%s' is not supported (nearest, linear, cubic)", how);
        return false;
    }
    if (rank == 5) return resize_5d(c, x, method, mode);
    if (rank != 3 && rank != 4) {
        ox_err(c, "only 3-d (NCW), 4-d (NCHW) and 5-d (NCDHW) inputs are supported, found %d-d",
               rank);
        return false;
    }
    if (rank == 3) {
        rx_attr *m = ox_amap(c);
        int64_t h = 2;
        ox_aset(c, m, "axis", ox_aints(c, &h, 1));
        if (!(x = ox_call1(c, "expand_dims", x, m)) || !ox_need_dims(c, x)) return false;
    }
    int si = old ? 1 : 2, zi = old ? -1 : 3;
    double sc[4] = {1, 1, 1, 1}, roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    rx_expr **d = x->sinfo->dims, *size[2];
    rx_const *k;
    bool have_scales = true;
    if (zi >= 0 && ox_in(c, zi)) {
        rx_expr **zs;
        int n;
        if (!ox_syms(c, ox_in(c, zi), &zs, &n) || n != rank) {
            ox_err(c, "sizes must be %d values known at compile time (constants or a chain "
                   "from Shape)", rank);
            return false;
        }
        rx_expr *z4[4];
        for (int i = 0; i < rank; i++) z4[i] = ox_simp(c, zs[i]);
        if (rank == 3) z4[3] = z4[2], z4[2] = ox_lit(c, 1);
        for (int i = 0; i < 2; i++)
            if (!rx_arith_prove_equal(c->ar, d[i], z4[i])) {
                ox_err(c, "only H and W can be resized (sizes must keep N and C)");
                return false;
            }
        size[0] = z4[2];
        size[1] = z4[3];
        /* literal extents and sizes give the scales; otherwise the op divides the sizes
         * by the extents at run time (scales null): interpolate(size=skip.shape[-2:]) */
        for (int i = 2; i < 4; i++) {
            int64_t v, z;
            if (!rx_expr_is_const(ox_simp(c, d[i]), &v) || v < 1 || !rx_expr_is_const(z4[i], &z))
                have_scales = false;
            else
                sc[i] = (double)z / (double)v;
        }
    } else if (rank == 4 && si < ox_nin(c) && !ox_const(c, ox_in(c, si)) &&
               scales_of_sizes(c, ox_in(c, si), d, size)) {
        have_scales = false; /* the op divides the sizes by the extents at run time */
    } else {
        k = si < ox_nin(c) ? ox_const(c, ox_in(c, si)) : NULL;
        int na;
        const float *fs = NULL;
        if (!k && c->opset < 9 && ox_attr(c, "scales")) {
            fs = ox_attr(c, "scales")->floats;
            na = (int)ox_attr(c, "scales")->n_floats;
        } else if (k) {
            na = (int)ox_numel(k);
        } else {
            ox_err(c, "scales (or sizes) must be constants");
            return false;
        }
        if (na != rank) {
            ox_err(c, "scales must have %d values", rank);
            return false;
        }
        for (int i = 0; i < rank; i++) sc[i] = fs ? fs[i] : ox_cf(k, i);
        if (rank == 3) lift_ncw(sc, 3, 1);
        if (sc[0] != 1 || sc[1] != 1 || !(sc[2] > 0) || !(sc[3] > 0)) {
            ox_err(c, "only H and W can be resized (scales must be 1 for N and C, positive)");
            return false;
        }
        for (int i = 0; i < 2; i++) {
            int64_t v;
            double s = sc[2 + i];
            if (rx_expr_is_const(ox_simp(c, d[2 + i]), &v)) {
                size[i] = ox_lit(c, (int64_t)((double)v * s));
            } else if (!dyadic_size(c, d[2 + i], s, &size[i])) {
                ox_err(c, "a non-integer scale must be a multiple of 1/65536 with a symbolic "
                       "input extent");
                return false;
            }
        }
    }
    if (!strcmp(mode, "tf_crop_and_resize")) {
        k = ox_const(c, ox_in(c, 1));
        if (!k || ox_numel(k) != 2 * rank) {
            ox_err(c, "roi must be a constant of %d values", 2 * rank);
            return false;
        }
        for (int i = 0; i < 2 * rank; i++) roi[i] = ox_cf(k, i);
        if (rank == 3) lift_ncw(roi, 6, 0);
    }
    rx_node *y = resize2d(c, x, size, method, mode, old, roi, have_scales ? sc + 2 : NULL);
    if (y && rank == 3) {
        rx_attr *sq = ox_amap(c);
        int64_t h = 2;
        ox_aset(c, sq, "axis", ox_aints(c, &h, 1));
        y = ox_call1(c, "squeeze", y, sq);
    }
    return ox_out_node(c, 0, y);
}

/* Unique -> unique with every extra result asked for when the node has more outputs:
 * Y, indices, inverse_indices, counts in ONNX's order (the op's). */
bool ox_c_unique(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "sorted", ox_abool(c, ox_attr_i(c, "sorted", 1) != 0));
    if (ox_attr(c, "axis")) ox_aset(c, m, "axis", ox_aint(c, ox_attr_i(c, "axis", 0)));
    bool extra = ox_nout(c) > 1;
    if (!extra) return ox_out_node(c, 0, ox_call1(c, "unique", x, m));
    ox_aset(c, m, "return_index", ox_abool(c, true));
    ox_aset(c, m, "return_inverse", ox_abool(c, true));
    ox_aset(c, m, "return_counts", ox_abool(c, true));
    rx_node *t = ox_call1(c, "unique", x, m);
    if (!t) return false;
    for (int i = 0; i < ox_nout(c) && i < 4; i++)
        if (*c->node->output[i] && !ox_out_node(c, i, ox_field(c, t, i, "uq"))) return false;
    return true;
}

/* GridSample (opset 16) -> image.grid_sample: mode bilinear / nearest / bicubic. */
bool ox_c_grid_sample(ox_ctx *c)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "method", ox_astr(c, ox_attr_s(c, "mode", "bilinear")));
    ox_aset(c, m, "padding_mode", ox_astr(c, ox_attr_s(c, "padding_mode", "zeros")));
    ox_aset(c, m, "align_corners", ox_abool(c, ox_attr_i(c, "align_corners", 0) != 0));
    rx_node *a[2] = {ox_in_node(c, 0), ox_in_node(c, 1)};
    if (!a[0] || !a[1]) return false;
    return ox_out_node(c, 0, ox_call(c, "image.grid_sample", a, 2, m));
}

static rx_node *full_of(ox_ctx *c, rx_expr **dims, int nd, rx_dtype dt, double value)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *a[2] = {ox_shape_node(c, dims, nd), ox_scalar(c, dt, value)};
    return ox_call(c, "full", a, 2, m);
}

/* e simplified */
static rx_expr *bin(ox_ctx *c, int op, rx_expr *x, rx_expr *y)
{
    return ox_simp(c, rx_e_binary(c->a, op, x, y));
}

/* Pad in constant mode whose pads are shape arithmetic (milesial's U-Net pads the
 * upsampled map to its skip's size: `F.pad(x1, [dx // 2, dx - dx // 2, ...])` with `dx`
 * a difference of sizes): nn.pad of the literal widths (the symbolic ones 0), then along
 * each axis with a symbolic width w a strided_slice dropping max(-w, 0) (a negative
 * width crops, as ONNX says) and a concat of full(value) blocks of max(w, 0) before and
 * after. The slice is the identity when w >= 0, a view the fused concat reads. */
static bool pad_symbolic(ox_ctx *c, rx_node *x, rx_expr **p, int nd, double value)
{
    if (!ox_need_dims(c, x)) return false;
    if (strcmp(ox_attr_s(c, "mode", "constant"), "constant") != 0) {
        ox_err(c, "pads computed from sizes need mode constant");
        return false;
    }
    int64_t pw[128], v;
    rx_expr **cur = RX_NEWN(c->a, rx_expr *, nd), *zero = ox_lit(c, 0);
    for (int i = 0; i < 2 * nd; i++) {
        p[i] = ox_simp(c, p[i]);
        if (!rx_expr_is_const(p[i], &pw[2 * (i % nd) + i / nd])) pw[2 * (i % nd) + i / nd] = 0;
    }
    for (int i = 0; i < nd; i++)
        cur[i] = bin(c, RX_E_ADD, x->sinfo->dims[i], ox_lit(c, pw[2 * i] + pw[2 * i + 1]));
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "pad_width", ox_aints(c, pw, 2 * nd));
    ox_aset(c, m, "pad_mode", ox_astr(c, "constant"));
    ox_aset(c, m, "pad_value", ox_afloat(c, value));
    bool lit = false;
    for (int i = 0; i < 2 * nd; i++) lit |= pw[i] != 0;
    rx_node *y = lit ? ox_call1(c, "nn.pad", x, m) : x;
    rx_dtype dt = ox_dtype_of(x);
    for (int i = 0; i < nd && y; i++) {
        rx_expr *w[2] = {p[i], p[nd + i]}, *grow[2], *crop[2];
        bool sym[2];
        for (int s = 0; s < 2; s++) {
            sym[s] = !rx_expr_is_const(w[s], &v);
            grow[s] = sym[s] ? bin(c, RX_E_MAX, w[s], zero) : zero;
            crop[s] = sym[s] ? bin(c, RX_E_MAX, rx_e_unary(c->a, RX_E_NEG, w[s]), zero) : zero;
        }
        if (!sym[0] && !sym[1]) continue;
        if (!rx_expr_is_const(crop[0], &v) || v || !rx_expr_is_const(crop[1], &v) || v) {
            int64_t axis = i, one = 1;
            rx_expr *end = bin(c, RX_E_SUB, cur[i], crop[1]);
            rx_attr *sm = ox_amap(c);
            ox_aset(c, sm, "axes", ox_aints(c, &axis, 1));
            ox_aset(c, sm, "begin", ox_aexprs(c, &crop[0], 1));
            ox_aset(c, sm, "end", ox_aexprs(c, &end, 1));
            ox_aset(c, sm, "strides", ox_aints(c, &one, 1));
            cur[i] = bin(c, RX_E_SUB, end, crop[0]);
            rx_expr **dims = RX_NEWN(c->a, rx_expr *, nd); /* deduction may not see these */
            memcpy(dims, cur, sizeof *dims * (size_t)nd);
            y = ox_match_dims(c, ox_call1(c, "strided_slice", y, sm), dims, nd);
        }
        rx_node *parts[3];
        int np = 0;
        for (int s = 0; s < 2 && y; s++) {
            if (s == 1) parts[np++] = y;
            if (!sym[s]) continue;
            rx_expr *keep = cur[i];
            cur[i] = grow[s];
            parts[np++] = full_of(c, cur, nd, dt, value);
            cur[i] = keep;
        }
        /* the axis is d + w0 + w1 whatever the signs: stated so, not as the maxes */
        cur[i] = bin(c, RX_E_ADD, x->sinfo->dims[i], bin(c, RX_E_ADD, w[0], w[1]));
        rx_expr **dims = RX_NEWN(c->a, rx_expr *, nd);
        memcpy(dims, cur, sizeof *dims * (size_t)nd);
        y = y ? ox_match_dims(c, ox_concat(c, parts, np, i), dims, nd) : NULL;
    }
    return y && ox_out_node(c, 0, y);
}

/* Pad: pads [x1_begin, ..., x1_end, ...] (an attribute before opset 11, a constant
 * input after), the constant value, mode constant / edge / reflect -> nn.pad. */
bool ox_c_pad(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    int nd = ox_ndim(x), np = -1;
    if (!x) return false;
    const int64_t *p = NULL;
    int64_t *pi = NULL;
    double value = 0;
    if (c->opset < 11) {
        p = ox_attr_ints(c, ox_attr(c, "paddings") ? "paddings" : "pads", &np);
        value = ox_attr_f(c, "value", 0);
    } else {
        if (!ox_ints(c, ox_in(c, 1), &pi, &np)) np = -1;
        p = pi;
        if (ox_in(c, 2)) {
            rx_const *k = ox_const(c, ox_in(c, 2));
            if (!k || ox_numel(k) != 1) {
                ox_err(c, "constant_value must be a constant scalar");
                return false;
            }
            value = ox_cf(k, 0);
        }
    }
    rx_expr **ps;
    int ns;
    if (!p && c->opset >= 11 && nd > 0 && nd <= 64 && ox_syms(c, ox_in(c, 1), &ps, &ns) &&
        ns == 2 * nd)
    {
        rx_expr **cp = RX_NEWN(c->a, rx_expr *, ns); /* pad_symbolic simplifies in place */
        memcpy(cp, ps, sizeof(*ps) * (size_t)ns);
        return pad_symbolic(c, x, cp, nd, value);
    }
    if (nd < 0 || np != 2 * nd || nd > 64) {
        ox_err(c, "pads must be a constant, or shape arithmetic in constant mode, of 2 values "
               "per axis of the input (rank %d)", nd);
        return false;
    }
    int64_t pw[128];
    for (int i = 0; i < nd; i++) {
        pw[2 * i] = p[i];
        pw[2 * i + 1] = p[nd + i];
    }
    const char *mode = ox_attr_s(c, "mode", "constant");
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "pad_width", ox_aints(c, pw, 2 * nd));
    ox_aset(c, m, "pad_mode", ox_astr(c, mode));
    ox_aset(c, m, "pad_value", ox_afloat(c, value));
    return ox_out_node(c, 0, ox_call1(c, "nn.pad", x, m));
}

/* Compress with a condition known at import: take of the indices where it is true
 * (along axis, or of the raveled input without one). */
bool ox_c_compress(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    rx_const *k = ox_const(c, ox_in(c, 1));
    if (!x) return false;
    if (!k || k->ndim != 1) {
        ox_err(c, "the condition must be a 1-d constant (the result's size depends on it)");
        return false;
    }
    int64_t n = ox_numel(k), cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += ox_ci(k, i) != 0;
    rx_const *ix = ox_new_const(c, RX_DT_I64, 1, &cnt);
    for (int64_t i = 0, j = 0; i < n; i++)
        if (ox_ci(k, i)) {
            memcpy(ix->data + 8 * j, &i, 8);
            j++;
        }
    rx_attr *m = ox_amap(c);
    if (ox_attr(c, "axis")) {
        int nd = ox_ndim(x), ax = ox_norm_axis(c, ox_attr_i(c, "axis", 0), nd > 0 ? nd : 1);
        if (ax < 0) return false;
        ox_aset(c, m, "axis", ox_aint(c, ax));
    }
    rx_node *a[2] = {x, ox_const_node(c, ix)};
    return ox_out_node(c, 0, ox_call(c, "take", a, 2, m));
}

/* TopK -> topk(x; k, axis, largest, ret_type "both", dtype i64): k a constant or a
 * value known symbolically (torch.sort and torch.argsort export TopK of the axis's own
 * extent, read with Shape and Gather); `sorted` = 0 allows any order, and the sorted
 * one is used. Ties: the lower index first; NaN greater than every number (op_sort.c). */
bool ox_c_top_k(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    rx_expr **kv = NULL;
    int nk = 0;
    if (!x || !ox_need_dims(c, x)) return false;
    if (c->opset < 10) {
        kv = RX_NEWN(c->a, rx_expr *, 1);
        kv[0] = ox_lit(c, ox_attr_i(c, "k", 0));
        nk = 1;
    } else if (!ox_syms(c, ox_in(c, 1), &kv, &nk) || nk != 1) {
        ox_err(c, "k must be a single value known at compile time (a constant or a size)");
        return false;
    }
    int nd = x->sinfo->ndim, ax = ox_norm_axis(c, ox_attr_i(c, "axis", -1), nd > 0 ? nd : 1);
    if (ax < 0) return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "k", ox_aexprs(c, kv, 1)->u.arr.items[0]);
    ox_aset(c, m, "axis", ox_aint(c, ax));
    ox_aset(c, m, "largest", ox_abool(c, ox_attr_i(c, "largest", 1) != 0));
    ox_aset(c, m, "dtype", ox_astr(c, "i64"));
    rx_node *t = ox_call1(c, "topk", x, m);
    if (!t) return false;
    return ox_out_node(c, 0, ox_field(c, t, 0, "values")) &&
           (ox_nout(c) < 2 || ox_out_node(c, 1, ox_field(c, t, 1, "indices")));
}

/* NonZero -> nonzero (i64 [rank, count], the count known at run time), match_cast to
 * (rank, nnzK) with a fresh variable when the input's rank is known: the ops after it
 * (a masked_select's Transpose and GatherND, then Shape / ReduceProd of the selection)
 * get shapes in that count instead of unknown dims. */
bool ox_c_nonzero(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *nz = ox_call1(c, "nonzero", x, NULL);
    if (nz && x->sinfo && x->sinfo->kind == RX_SI_TENSOR && x->sinfo->ndim >= 0) {
        rx_expr **d = RX_NEWN(c->a, rx_expr *, 2);
        d[0] = ox_lit(c, x->sinfo->ndim);
        d[1] = ox_fresh_dim(c, "nnz");
        nz = ox_match_dims(c, nz, d, 2);
    }
    return ox_out_node(c, 0, nz);
}

/* NonMaxSuppression -> vision.all_class_non_max_suppression (i64 (n, 3), n known at
 * run time: match_cast to (nmsK, 3) with a fresh variable, as NonZero). An omitted
 * max_output_boxes_per_class or iou_threshold before a given later input is its ONNX
 * default (0: nothing selected; 0.0), a trailing omitted one is left out (the built-in
 * has the same defaults, and no score threshold at all when that one is absent). */
bool ox_c_nms(ox_ctx *c)
{
    int n = ox_nin(c);
    rx_node *a[5];
    for (int i = 0; i < n && i < 5; i++) {
        a[i] = ox_in(c, i) ? ox_in_node(c, i)
                           : ox_scalar(c, i == 2 ? RX_DT_I64 : RX_DT_F32, 0);
        if (!a[i]) return false;
    }
    int64_t cpb = ox_attr_i(c, "center_point_box", 0);
    if (cpb != 0 && cpb != 1) {
        ox_err(c, "center_point_box must be 0 or 1, got %lld", (long long)cpb);
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "center_point_box", ox_aint(c, cpb));
    rx_node *r = ox_call(c, "vision.all_class_non_max_suppression", a, n < 5 ? n : 5, m);
    if (!r) return false;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, 2);
    d[0] = ox_fresh_dim(c, "nms");
    d[1] = ox_lit(c, 3);
    return ox_out_node(c, 0, ox_match_dims(c, r, d, 2));
}

/* ReverseSequence: gather_elements along time_axis with the index
 * t < len[b] ? len[b] - 1 - t : t (t the time position, b the batch one), built from
 * arange and the sequence_lens input and broadcast to the input's shape. */
bool ox_c_reverse_sequence(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *lens = ox_astype(c, ox_in_node(c, 1), RX_DT_I64);
    if (!ox_need_dims(c, x) || !lens) return false;
    int nd = ox_ndim(x);
    int64_t ta = ox_attr_i(c, "time_axis", 0), ba = ox_attr_i(c, "batch_axis", 1);
    if (nd < 2 || (ta != 0 && ta != 1) || ba != 1 - ta) {
        ox_err(c, "needs an input of rank 2 or more and time_axis, batch_axis 0 and 1 "
               "(either order)");
        return false;
    }
    rx_expr **d = x->sinfo->dims, **ld = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) ld[i] = i == ba ? d[ba] : ox_lit(c, 1);
    rx_node *t = ox_iota(c, d[ta], (int)ta, nd, RX_DT_I64);
    rx_node *l = ox_reshape(c, lens, ld, nd);
    rx_node *rev = ox_call2(c, "subtract", ox_call2(c, "subtract", l, ox_scalar(c, RX_DT_I64, 1)), t);
    rx_node *w[3] = {ox_call2(c, "less", t, l), rev, t};
    if (!w[0] || !w[1] || !w[2]) return false;
    rx_node *idx = ox_call2(c, "broadcast_to", ox_call(c, "where", w, 3, NULL),
                            ox_shape_node(c, d, nd));
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ta));
    rx_node *a[2] = {x, idx};
    if (!idx) return false;
    return ox_out_node(c, 0, ox_call(c, "gather_elements", a, 2, m));
}
