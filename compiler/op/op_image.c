/*
 * op_image.c — image.resize2d (TVM's relax.op.image.resize2d), the resampling of the
 * two spatial dims of an NCHW tensor to `size`, and image.grid_sample (at its rule).
 *
 *   image.resize2d(x, size; roi = [0, 0, 0, 0], layout = "NCHW",
 *       method = "linear", coordinate_transformation_mode = "half_pixel",
 *       rounding_method = "round", cubic_alpha = -0.5, cubic_exclude = 0,
 *       extrapolation_value = 0.0, out_dtype = null, scales = null)
 * x is 4-d; size a shape of 2 (out H, W); the result (N, C, H', W') of out_dtype (null:
 * x's). `method`: "nearest_neighbor", "linear", "cubic" (linear and cubic need a float
 * x). `coordinate_transformation_mode`: "half_pixel", "align_corners", "asymmetric",
 * "pytorch_half_pixel", "tf_half_pixel_for_nn", "tf_crop_and_resize" (roi: start h,
 * start w, end h, end w as fractions of the extent). `rounding_method` (nearest only):
 * "round" (half away from zero), "round_prefer_floor", "round_prefer_ceil", "floor",
 * "ceil". `scales` (an addition to TVM's signature, for ONNX's Resize): the h and w
 * scale factors the coordinate transformation divides by; null takes out / in (ONNX
 * computes coordinates with the given scale, not with the rounded size). The
 * semantics are those of ONNX Resize (legalize_image.c's essay). O(1) per rule.
 */
#include <string.h>

#include "op_int.h"

static bool one_of(const char *s, const char *const *set, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, set[i])) return true;
    return false;
}

static rx_sinfo *d_resize2d(rx_dctx *c, const rx_node *call)
{
    static const char *const methods[] = {"nearest_neighbor", "linear", "cubic"};
    static const char *const modes[] = {"half_pixel", "align_corners", "asymmetric",
                                        "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                        "tf_crop_and_resize"};
    static const char *const rounds[] = {"round", "round_prefer_floor", "round_prefer_ceil",
                                         "floor", "ceil"};
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    int sn;
    rx_expr **sd;
    if (!x || !rx_op_shape_arg(c, call, 1, &sn, &sd)) return NULL;
    if (x->ndim >= 0 && x->ndim != 4) return rx_op_fail(c, call, "x must be 4-d (NCHW), found %d-d", x->ndim);
    if (sn >= 0 && sn != 2) return rx_op_fail(c, call, "size must have 2 dims (H, W), found %d", sn);
    const char *layout = rx_call_attr(call, "layout")->u.s;
    const char *method = rx_call_attr(call, "method")->u.s;
    const char *mode = rx_call_attr(call, "coordinate_transformation_mode")->u.s;
    const char *round = rx_call_attr(call, "rounding_method")->u.s;
    if (strcmp(layout, "NCHW"))
        return rx_op_fail(c, call, "layout \"%s\" is not supported (v1 supports \"NCHW\" only)", layout);
    if (!one_of(method, methods, RX_COUNTOF(methods)))
        return rx_op_fail(c, call, "method \"%s\" is not supported (nearest_neighbor, linear, cubic)", method);
    if (!one_of(mode, modes, RX_COUNTOF(modes)))
        return rx_op_fail(c, call, "coordinate_transformation_mode \"%s\" is not supported", mode);
    if (!one_of(round, rounds, RX_COUNTOF(rounds)))
        return rx_op_fail(c, call, "rounding_method \"%s\" is not supported", round);
    if (rx_call_attr(call, "roi")->u.arr.n != 4)
        return rx_op_fail(c, call, "roi must have 4 values (start h, start w, end h, end w)");
    const rx_attr *sc = rx_call_attr(call, "scales");
    if (sc->kind != RX_A_NULL) {
        if (sc->u.arr.n != 2) return rx_op_fail(c, call, "scales must have 2 values (h, w)");
        for (int i = 0; i < 2; i++)
            if (!(sc->u.arr.items[i]->u.f > 0))
                return rx_op_fail(c, call, "scales must be positive, found %g", sc->u.arr.items[i]->u.f);
    }
    rx_dtype dt = (rx_dtype)x->dtype;
    const rx_attr *od = rx_call_attr(call, "out_dtype");
    if (od->kind != RX_A_NULL) rx_dtype_parse(od->u.s, &dt);
    if (strcmp(method, "nearest_neighbor") && x->dtype != RX_DT_UNKNOWN &&
        !rx_dtype_is_float((rx_dtype)x->dtype))
        return rx_op_fail(c, call, "method \"%s\" needs a float x, found %s", method,
                          rx_dtype_name((rx_dtype)x->dtype));
    if (!x->dims || !sd) return rx_si_tensor(c->a, dt, 4, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, 4);
    d[0] = rx_d_simplify(c, x->dims[0]);
    d[1] = rx_d_simplify(c, x->dims[1]);
    d[2] = rx_d_simplify(c, sd[0]);
    d[3] = rx_d_simplify(c, sd[1]);
    return rx_si_tensor(c->a, dt, 4, d);
}

/* image.grid_sample(x, grid; method = "bilinear", layout = "NCHW", padding_mode =
 * "zeros", align_corners = false): x (N, C, H, W) float, grid (N, H', W', 2) of
 * normalized (x, y) positions in [-1, 1]; the result (N, C, H', W') of x's dtype
 * (PyTorch's grid_sample, ONNX GridSample-16; legalize_image.c). */
static rx_sinfo *d_grid_sample(rx_dctx *c, const rx_node *call)
{
    static const char *const methods[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0), *g = rx_d_tensor_arg(c, call, 1);
    if (!x || !g) return NULL;
    const char *method = rx_call_attr(call, "method")->u.s;
    const char *pm = rx_call_attr(call, "padding_mode")->u.s;
    const char *layout = rx_call_attr(call, "layout")->u.s;
    if (strcmp(layout, "NCHW"))
        return rx_op_fail(c, call, "layout \"%s\" is not supported (v1 supports \"NCHW\" only)", layout);
    if (!one_of(method, methods, RX_COUNTOF(methods)))
        return rx_op_fail(c, call, "method \"%s\" is not supported (bilinear, nearest, bicubic)", method);
    if (!one_of(pm, pads, RX_COUNTOF(pads)))
        return rx_op_fail(c, call, "padding_mode \"%s\" is not supported (zeros, border, reflection)", pm);
    if (x->ndim >= 0 && x->ndim != 4) return rx_op_fail(c, call, "x must be 4-d (NCHW), found %d-d", x->ndim);
    if (g->ndim >= 0 && g->ndim != 4) return rx_op_fail(c, call, "grid must be 4-d (N, H, W, 2), found %d-d", g->ndim);
    rx_dtype dt;
    if (!rx_d_same_dtype(c, call, (rx_dtype)x->dtype, (rx_dtype)g->dtype, &dt)) return NULL;
    if (dt != RX_DT_UNKNOWN && !rx_dtype_is_float(dt))
        return rx_op_fail(c, call, "needs float tensors, found %s", rx_dtype_name(dt));
    if (!x->dims || !g->dims) return rx_si_tensor(c->a, dt, 4, NULL);
    int64_t two;
    if (!rx_expr_is_const(g->dims[3], &two) || two != 2)
        return rx_op_fail(c, call, "the grid's last dim must be 2, found %s", rx_expr_str(c->a, g->dims[3]));
    if (!rx_arith_prove_equal(c->ar, x->dims[0], g->dims[0]))
        return rx_op_fail(c, call, "x and grid must have the same batch, found %s and %s",
                          rx_expr_str(c->a, x->dims[0]), rx_expr_str(c->a, g->dims[0]));
    rx_expr *d[4] = {rx_d_simplify(c, x->dims[0]), rx_d_simplify(c, x->dims[1]),
                     rx_d_simplify(c, g->dims[1]), rx_d_simplify(c, g->dims[2])};
    return rx_si_tensor(c->a, dt, 4, d);
}

static const rx_attr_spec grid_attrs[] = {
    RX_ATTR_DEF("method", RX_AT_STR, "\"bilinear\""),
    RX_ATTR_DEF("layout", RX_AT_STR, "\"NCHW\""),
    RX_ATTR_DEF("padding_mode", RX_AT_STR, "\"zeros\""),
    RX_ATTR_DEF("align_corners", RX_AT_BOOL, "false"),
};

static const rx_attr_spec resize_attrs[] = {
    RX_ATTR_DEF("roi", RX_AT_FLOATS, "[0.0, 0.0, 0.0, 0.0]"),
    RX_ATTR_DEF("layout", RX_AT_STR, "\"NCHW\""),
    RX_ATTR_DEF("method", RX_AT_STR, "\"linear\""),
    RX_ATTR_DEF("coordinate_transformation_mode", RX_AT_STR, "\"half_pixel\""),
    RX_ATTR_DEF("rounding_method", RX_AT_STR, "\"round\""),
    RX_ATTR_DEF("cubic_alpha", RX_AT_FLOAT, "-0.5"),
    RX_ATTR_DEF("cubic_exclude", RX_AT_INT, "0"),
    RX_ATTR_DEF("extrapolation_value", RX_AT_FLOAT, "0.0"),
    RX_ATTR_NUL("out_dtype", RX_AT_DTYPE, "null"),
    RX_ATTR_NUL("scales", RX_AT_FLOATS, "null"),
};

/* The image ops (registered by op/registry.c). */
const rx_op rx_ops_image[] = {
    {"image.resize2d", 2, 2, RX_ATTRS(resize_attrs), d_resize2d, 0},
    {"image.grid_sample", 2, 2, RX_ATTRS(grid_attrs), d_grid_sample, 0},
};
const int rx_ops_image_count = RX_COUNTOF(rx_ops_image);
