/*
 * onnx_roi.c — RoiAlign (opsets 10 and 16; Mask R-CNN's box and mask heads as torchvision
 * exports roi_align) as a composition of existing Relax ops: no op of its own.
 *
 * Each RoI r (x1, y1, x2, y2 times spatial_scale, minus 0.5 for half_pixel) is split into
 * output_height x output_width bins of sampling_ratio x sampling_ratio points; a point's
 * coordinate along an axis is start + bin * (p + (s + 0.5) / sr), separable: ys (R, oh *
 * sr) and xs (R, ow * sr). The bilinear weights follow ONNX's reference (and ONNX
 * Runtime's and torchvision's CPU kernels): a point beyond [-1, extent] weighs 0, a
 * point below 0 is clamped to 0, one at or beyond extent - 1 takes the last row with
 * weight 1. The weights factor per axis (lo and hi rows, lo and hi columns), so the
 * four corner products and the validity mask are broadcasts of (R, P, 1) by (R, 1, Q).
 * The features are seen as (N * H * W, C) (permute to NHWC, reshape): each corner is one
 * take of rows by batch * H * W + y * W + x, (R, P, Q, C), so the work is the samples
 * times C, not R copies of the map. Mode avg sums the four weighted corners and averages
 * over the sr x sr points of each bin (reshape (R, oh, sr, ow, sr, C), sum, scale), then
 * permutes to (R, C, oh, ow).
 *
 * Not supported (located errors): sampling_ratio 0 (adaptive: ceil(roi extent / bins)
 * points per RoI, a count known only at run time, Detectron2's default), mode max (ONNX
 * Runtime's max is over the weighted corners, unlike torchvision's).
 */
#include <string.h>

#include "onnx_int.h"

static rx_node *mul(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "multiply", x, y); }
static rx_node *add(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "add", x, y); }
static rx_node *sub(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "subtract", x, y); }

/* e as a (1,) tensor of dtype dt (an extent that may be symbolic) */
static rx_node *dim_value(ox_ctx *c, rx_expr *e, rx_dtype dt)
{
    rx_attr *am = ox_amap(c);
    rx_expr *e1 = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, e, ox_lit(c, 1)));
    ox_aset(c, am, "start", ox_aexprs(c, &e, 1)->u.arr.items[0]);
    ox_aset(c, am, "end", ox_aexprs(c, &e1, 1)->u.arr.items[0]);
    ox_aset(c, am, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_call(c, "arange", NULL, 0, am);
}

/* The (1, n * sr) offsets p + (s + 0.5) / sr of the sample points, in bins. */
static rx_node *grid(ox_ctx *c, int64_t n, int64_t sr, rx_dtype dt)
{
    int64_t shape[2] = {1, n * sr};
    rx_const *k = ox_new_const(c, RX_DT_F64, 2, shape);
    for (int64_t i = 0; i < n * sr; i++) {
        double v = (double)(i / sr) + ((double)(i % sr) + 0.5) / (double)sr;
        memcpy(k->data + 8 * i, &v, 8);
    }
    return ox_astype(c, ox_const_node(c, k), dt);
}

typedef struct {
    rx_node *lo, *hi;    /* i64 rows (columns): the two neighbours */
    rx_node *wlo, *whi;  /* their weights, 0 where the point is out of range */
} axis_taps;

/* One axis: v (the sample coordinates, (R, P, 1) or (R, 1, Q)) against extent n. */
static bool taps(ox_ctx *c, rx_node *v, rx_expr *n, rx_dtype dt, axis_taps *t)
{
    rx_node *nf = dim_value(c, n, dt), *one = ox_scalar(c, dt, 1), *zero = ox_scalar(c, dt, 0);
    rx_node *last = sub(c, nf, one);
    rx_node *valid = ox_call2(c, "logical_and", ox_call2(c, "greater_equal", v, ox_scalar(c, dt, -1)),
                              ox_call2(c, "less_equal", v, nf));
    v = ox_call2(c, "maximum", v, zero);
    rx_node *fl = ox_call1(c, "floor", v, NULL);
    rx_node *at_end = ox_call2(c, "greater_equal", fl, last);
    rx_node *lo = ox_call2(c, "minimum", fl, last);
    rx_node *hi = ox_call2(c, "minimum", add(c, lo, one), last);
    rx_node *a[3] = {at_end, zero, sub(c, v, fl)};
    rx_node *l = ox_call(c, "where", a, 3, NULL);
    rx_node *vf = ox_astype(c, valid, dt);
    t->wlo = mul(c, sub(c, one, l), vf);
    t->whi = mul(c, l, vf);
    t->lo = ox_astype(c, lo, RX_DT_I64);
    t->hi = ox_astype(c, hi, RX_DT_I64);
    return t->wlo && t->whi && t->lo && t->hi;
}

bool ox_c_roi_align(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *rois = ox_in_node(c, 1), *bidx = ox_in_node(c, 2);
    if (!x || !rois || !bidx || !ox_need_dims(c, x) || !ox_need_dims(c, rois)) return false;
    if (ox_ndim(x) != 4 || ox_ndim(rois) != 2) {
        ox_err(c, "needs a 4-d X (N, C, H, W) and 2-d rois (R, 4)");
        return false;
    }
    const char *mode = ox_attr_s(c, "mode", "avg");
    const char *ctm = ox_attr_s(c, "coordinate_transformation_mode",
                                c->opset >= 16 ? "half_pixel" : "output_half_pixel");
    int64_t oh = ox_attr_i(c, "output_height", 1), ow = ox_attr_i(c, "output_width", 1);
    int64_t sr = ox_attr_i(c, "sampling_ratio", 0);
    double scale = ox_attr_f(c, "spatial_scale", 1.0);
    bool half = !strcmp(ctm, "half_pixel");
    if (strcmp(mode, "avg") != 0) {
        ox_err(c, "mode '%s' is not supported (avg)", mode);
        return false;
    }
    if (!half && strcmp(ctm, "output_half_pixel") != 0) {
        ox_err(c, "coordinate_transformation_mode '%s' is not supported", ctm);
        return false;
    }
    if (sr <= 0 || sr > 64 || oh < 1 || ow < 1 || oh * sr > 4096 || ow * sr > 4096) {
        ox_err(c, "sampling_ratio must be 1..64 (0, adaptive per RoI, is not supported) and "
               "output_height / output_width positive, found %lld, %lld, %lld",
               (long long)sr, (long long)oh, (long long)ow);
        return false;
    }
    rx_dtype dt = ox_dtype_of(x);
    rx_expr **xd = x->sinfo->dims, *r = rois->sinfo->dims[0];
    /* the RoI's start and bin size per axis, (R, 1) */
    rx_node *rs = sub(c, mul(c, rois, ox_scalar(c, dt, scale)), ox_scalar(c, dt, half ? 0.5 : 0));
    rx_node *st[2], *bin[2], *pts[2];
    for (int a = 0; a < 2; a++) { /* 0: y (rois column 1, 3), 1: x (0, 2) */
        st[a] = ox_slice1(c, rs, 1, 1 - a, 2 - a, 1);
        rx_node *ext = sub(c, ox_slice1(c, rs, 1, 3 - a, 4 - a, 1), st[a]);
        if (!half) ext = ox_call2(c, "maximum", ext, ox_scalar(c, dt, 1));
        bin[a] = ox_call2(c, "divide", ext, ox_scalar(c, dt, (double)(a ? ow : oh)));
        rx_node *g = grid(c, a ? ow : oh, sr, dt);
        rx_expr *shp[3] = {r, a ? ox_lit(c, 1) : ox_lit(c, oh * sr), a ? ox_lit(c, ow * sr) : ox_lit(c, 1)};
        pts[a] = ox_reshape(c, add(c, st[a], mul(c, bin[a], g)), shp, 3);
        if (!pts[a]) return false;
    }
    axis_taps ty, tx;
    if (!taps(c, pts[0], xd[2], dt, &ty) || !taps(c, pts[1], xd[3], dt, &tx)) return false;
    /* rows of the (N * H * W, C) view: batch * H * W + y * W + x */
    rx_expr *hw = ox_simp(c, rx_e_binary(c->a, RX_E_MUL, xd[2], xd[3]));
    rx_expr *b3[3] = {r, ox_lit(c, 1), ox_lit(c, 1)};
    rx_node *base = ox_reshape(c, mul(c, ox_astype(c, bidx, RX_DT_I64), dim_value(c, hw, RX_DT_I64)), b3, 3);
    rx_node *wv = dim_value(c, xd[3], RX_DT_I64);
    rx_node *ylo = add(c, base, mul(c, ty.lo, wv)), *yhi = add(c, base, mul(c, ty.hi, wv));
    rx_attr *pm = ox_amap(c);
    int64_t nhwc[4] = {0, 2, 3, 1};
    ox_aset(c, pm, "axes", ox_aints(c, nhwc, 4));
    rx_expr *rows[2] = {ox_simp(c, rx_e_binary(c->a, RX_E_MUL, xd[0], hw)), xd[1]};
    rx_node *flat = ox_reshape(c, ox_call1(c, "permute_dims", x, pm), rows, 2);
    rx_node *yi[2] = {ylo, yhi}, *xi[2] = {tx.lo, tx.hi};
    rx_node *wy[2] = {ty.wlo, ty.whi}, *wx[2] = {tx.wlo, tx.whi}, *acc = NULL;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            rx_attr *tm = ox_amap(c);
            ox_aset(c, tm, "axis", ox_aint(c, 0));
            rx_node *ta[2] = {flat, add(c, yi[i], xi[j])};
            rx_attr *em = ox_amap(c);
            int64_t last = 3;
            ox_aset(c, em, "axis", ox_aints(c, &last, 1));
            rx_node *w = ox_call1(c, "expand_dims", mul(c, wy[i], wx[j]), em);
            rx_node *term = mul(c, ox_call(c, "take", ta, 2, tm), w);
            acc = acc ? add(c, acc, term) : term;
        }
    rx_expr *six[6] = {r, ox_lit(c, oh), ox_lit(c, sr), ox_lit(c, ow), ox_lit(c, sr), xd[1]};
    rx_attr *sm = ox_amap(c);
    int64_t ax[2] = {2, 4};
    ox_aset(c, sm, "axis", ox_aints(c, ax, 2));
    rx_node *avg = mul(c, ox_call1(c, "sum", ox_reshape(c, acc, six, 6), sm),
                       ox_scalar(c, dt, 1.0 / (double)(sr * sr)));
    rx_attr *om = ox_amap(c);
    int64_t nchw[4] = {0, 3, 1, 2};
    ox_aset(c, om, "axes", ox_aints(c, nchw, 4));
    return ox_out_node(c, 0, ox_call1(c, "permute_dims", avg, om));
}
