/*
 * op_misc.c — data-dependent ops and shape_of: attribute schemas and deduction rules.
 *
 * unique and nonzero have result shapes that depend on the values of their input, so
 * their annotations carry a rank but no dims (the paper's Figure 2: unique gives
 * Tensor(ndim=1); a later match_cast names the size). Both are marked data_dependent
 * in the table so passes know the result extent is only known at run time.
 *
 *   unique(x)   values: Tensor(ndim=1) of x's dtype (with `axis`: x's rank); with
 *               return_index / return_inverse / return_counts a tuple of the values
 *               and each requested 1-D i64 tensor, in that order (TVM's layout)
 *   nonzero(x)  Tensor(ndim=2, "i64"): one row per dimension of x, one column per
 *               nonzero element
 *   vision.all_class_non_max_suppression(boxes, scores[, max_output_boxes_per_class
 *               [, iou_threshold[, score_threshold]]]; center_point_box)
 *               Tensor((n, 3), "i64"): ONNX NonMaxSuppression's selected indices
 *               (batch, class, box), n known at run time. boxes (B, N, 4) and scores
 *               (B, C, N) of one float dtype; the optional operands are 0-d or
 *               1-element tensors (i64 count, float thresholds)
 *   shape_of(x) Shape of x: its dims when known, else its rank when known
 */
#include "op_int.h"

/* unique: (x; sorted, return_index, return_inverse, return_counts, axis). */
static rx_sinfo *d_unique(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    const rx_attr *axis = rx_call_attr(call, "axis");
    int nd = 1;
    if (axis->kind != RX_A_NULL) {
        int ax;
        nd = x->ndim;
        if (nd == 0) {
            rx_op_fail(c, call, "cannot take unique slices along an axis of 0-d %s",
                       rx_sinfo_str(c->a, x));
            return NULL;
        }
        if (nd > 0 && !rx_d_axis(c, call, axis->u.i, nd, &ax)) return NULL;
    }
    rx_sinfo *fields[4];
    int n = 0;
    fields[n++] = rx_si_tensor(c->a, (rx_dtype)x->dtype, nd, NULL);
    static const char *const extra[] = {"return_index", "return_inverse", "return_counts"};
    for (int i = 0; i < RX_COUNTOF(extra); i++)
        if (rx_call_attr(call, extra[i])->u.b)
            fields[n++] = rx_si_tensor(c->a, RX_DT_I64, 1, NULL);
    return n == 1 ? fields[0] : rx_si_tuple(c->a, fields, n);
}

/* nonzero: (x) -> Tensor(ndim=2, "i64"). */
static rx_sinfo *d_nonzero(rx_dctx *c, const rx_node *call)
{
    if (!rx_d_tensor_arg(c, call, 0)) return NULL;
    return rx_si_tensor(c->a, RX_DT_I64, 2, NULL);
}

/* all_class_non_max_suppression: (boxes, scores[, max, iou, score]) -> Tensor((n, 3), i64). */
static rx_sinfo *d_nms(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *b = rx_d_tensor_arg(c, call, 0), *s = rx_d_tensor_arg(c, call, 1);
    if (!b || !s) return NULL;
    if ((b->ndim >= 0 && b->ndim != 3) || (s->ndim >= 0 && s->ndim != 3))
        return rx_op_fail(c, call, "expects boxes (batch, boxes, 4) and scores (batch, "
                          "classes, boxes), got %s and %s", rx_sinfo_str(c->a, b),
                          rx_sinfo_str(c->a, s));
    int64_t four;
    if (b->dims && rx_expr_is_const(b->dims[2], &four) && four != 4)
        return rx_op_fail(c, call, "boxes' last dim must be 4, got %s", rx_sinfo_str(c->a, b));
    if (b->dtype != RX_DT_UNKNOWN && s->dtype != RX_DT_UNKNOWN &&
        (b->dtype != s->dtype || !rx_dtype_is_float((rx_dtype)b->dtype)))
        return rx_op_fail(c, call, "boxes and scores must be of one float dtype, got %s and %s",
                          rx_sinfo_str(c->a, b), rx_sinfo_str(c->a, s));
    for (int i = 2; i < call->nargs; i++) {
        const rx_sinfo *a = rx_d_tensor_arg(c, call, i);
        if (!a) return NULL;
        if (a->ndim > 1) return rx_op_fail(c, call, "operand %d must be 0-d or 1-element, got %s",
                                           i, rx_sinfo_str(c->a, a));
    }
    return rx_si_tensor(c->a, RX_DT_I64, 2, NULL);
}

/* shape_of: (x) -> Shape of x. */
static rx_sinfo *d_shape_of(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x) return NULL;
    if (!x->dims) return rx_si_shape(c->a, x->ndim, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, x->ndim > 0 ? x->ndim : 1);
    for (int i = 0; i < x->ndim; i++) d[i] = rx_d_simplify(c, x->dims[i]);
    return rx_si_shape(c->a, x->ndim, d);
}

static const rx_attr_spec unique_attrs[] = {
    RX_ATTR_DEF("sorted", RX_AT_BOOL, "true"),
    RX_ATTR_DEF("return_index", RX_AT_BOOL, "false"),
    RX_ATTR_DEF("return_inverse", RX_AT_BOOL, "false"),
    RX_ATTR_DEF("return_counts", RX_AT_BOOL, "false"),
    RX_ATTR_NUL("axis", RX_AT_INT, "null"),
};

static const rx_attr_spec nms_attrs[] = {RX_ATTR_DEF("center_point_box", RX_AT_INT, "0")};

/* The data-dependent ops and shape_of (registered by op/registry.c). */
const rx_op rx_ops_misc[] = {
    {"unique", 1, 1, RX_ATTRS(unique_attrs), d_unique, 1},
    {"nonzero", 1, 1, NULL, 0, d_nonzero, 1},
    {"vision.all_class_non_max_suppression", 2, 5, RX_ATTRS(nms_attrs), d_nms, 1},
    {"shape_of", 1, 1, NULL, 0, d_shape_of, 0},
};
const int rx_ops_misc_count = RX_COUNTOF(rx_ops_misc);
