/*
 * builtin_nms.c — the VM's nms built-in: ONNX NonMaxSuppression (contract in builtin.h).
 *
 * Per batch and class, the boxes whose score passes the threshold are sorted by score
 * (descending; equal scores by box index, so the result does not depend on the sort)
 * and taken greedily: a box is selected unless its IoU with a box already selected of
 * the same batch and class exceeds iou_threshold, until max_output_boxes_per_class are
 * selected. The result is i64 (n, 3) of (batch, class, box) rows in that order (batch,
 * then class, then selection order), as ONNX Runtime writes them; n is only known at
 * the end, so the rows grow in a scratch array and are copied into a tensor of the
 * pool once.
 *
 * The IoU follows ONNX Runtime's: corners from either diagonal (center_point_box 0:
 * [y1, x1, y2, x2] in any order) or from the center form (1: [x, y, w, h]); an empty
 * intersection, or a box of area <= 0, never suppresses. It is computed in double, so a
 * pair exactly at the threshold in float arithmetic may land on the other side than in
 * an f32 implementation (no test data sits there). A NaN score is never selected.
 *
 * Cost: O(C * (N log N + N * k)) per batch for k selected boxes per class; scratch N
 * (score, index) pairs, N corner quadruples and the rows.
 */
#include "builtin.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    double score;
    int64_t box;
} cand;

static int by_score(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? 1 : -1;
    return (a->box > b->box) - (a->box < b->box);
}

/* Element i of a float tensor (f32 or f64) as a double. */
static double fval(const DLTensor *t, int64_t i)
{
    const char *p = (const char *)t->data + t->byte_offset;
    if (t->dtype.bits == 64) {
        double d;
        memcpy(&d, p + i * 8, sizeof d);
        return d;
    }
    float f;
    memcpy(&f, p + i * 4, sizeof f);
    return f;
}

static bool is_float(DLDataType t)
{
    return t.code == kDLFloat && t.lanes == 1 && (t.bits == 32 || t.bits == 64);
}

/* A tensor argument of one element (0-d or any shape of numel 1); -1 with err set. */
static int scalar_arg(const rx_vm_value *v, const char *what, bool integer, double *f,
                      int64_t *i, rx_rt_err *err)
{
    if (v->kind != RX_V_TENSOR)
        return rx_rt_fail(err, "nms: %s is %s, not a tensor", what, rx_vm_kind_desc(v->kind));
    const DLTensor *t = &v->u.t->dl;
    if (rx_bi_numel(t) != 1)
        return rx_rt_fail(err, "nms: %s must hold one element, got %" PRId64, what,
                          rx_bi_numel(t));
    const char *p = (const char *)t->data + t->byte_offset;
    if (integer) {
        if (t->dtype.code != kDLInt || (t->dtype.bits != 64 && t->dtype.bits != 32))
            return rx_rt_fail(err, "nms: %s must be i64 or i32", what);
        int32_t i32;
        if (t->dtype.bits == 64) memcpy(i, p, sizeof *i);
        else memcpy(&i32, p, sizeof i32), *i = i32;
        return 0;
    }
    if (!is_float(t->dtype)) return rx_rt_fail(err, "nms: %s must be f32 or f64", what);
    *f = fval(t, 0);
    return 0;
}

/* Corners (ymin, xmin, ymax, xmax) of every box of batch b into c[4 * n]. */
static void corners(const DLTensor *boxes, int64_t b, int64_t n, int64_t cpb, double *c)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t o = (b * n + i) * 4;
        double v0 = fval(boxes, o), v1 = fval(boxes, o + 1), v2 = fval(boxes, o + 2),
               v3 = fval(boxes, o + 3);
        double *q = c + 4 * i;
        if (cpb) { /* x center, y center, width, height */
            q[0] = v1 - v3 / 2, q[1] = v0 - v2 / 2, q[2] = v1 + v3 / 2, q[3] = v0 + v2 / 2;
        } else {
            q[0] = v0 < v2 ? v0 : v2, q[2] = v0 < v2 ? v2 : v0;
            q[1] = v1 < v3 ? v1 : v3, q[3] = v1 < v3 ? v3 : v1;
        }
    }
}

/* Whether box a suppresses box b: IoU > thr (file essay). */
static bool suppresses(const double *a, const double *b, double thr)
{
    double ymin = a[0] > b[0] ? a[0] : b[0], xmin = a[1] > b[1] ? a[1] : b[1];
    double ymax = a[2] < b[2] ? a[2] : b[2], xmax = a[3] < b[3] ? a[3] : b[3];
    if (ymax <= ymin || xmax <= xmin) return false;
    double inter = (ymax - ymin) * (xmax - xmin);
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return false;
    double uni = area_a + area_b - inter;
    return uni > 0 && inter / uni > thr;
}

/* The rows found so far. */
typedef struct rows {
    int64_t *v;
    int64_t n, cap;
} rows;

static bool push_row(rows *r, int64_t b, int64_t c, int64_t box)
{
    if (r->n == r->cap) {
        int64_t cap = r->cap ? 2 * r->cap : 64;
        int64_t *v = realloc(r->v, (size_t)cap * 3 * sizeof *v);
        if (!v) return false;
        r->v = v, r->cap = cap;
    }
    int64_t *q = r->v + 3 * r->n++;
    q[0] = b, q[1] = c, q[2] = box;
    return true;
}

/* Selects the boxes of batch b, class k into r; false on allocation failure. */
static bool select_class(const DLTensor *scores, int64_t b, int64_t k, int64_t n,
                         const double *box, int64_t max_out, double iou, bool has_thr,
                         double thr, cand *cs, int64_t *sel, rows *r)
{
    int64_t nc = 0, nsel = 0, base = (b * scores->shape[1] + k) * n;
    for (int64_t i = 0; i < n; i++) {
        double s = fval(scores, base + i);
        if (s == s && (!has_thr || s > thr)) cs[nc].score = s, cs[nc++].box = i;
    }
    qsort(cs, (size_t)nc, sizeof *cs, by_score);
    for (int64_t i = 0; i < nc && nsel < max_out; i++) {
        const double *q = box + 4 * cs[i].box;
        bool keep = true;
        for (int64_t j = 0; j < nsel && keep; j++) keep = !suppresses(box + 4 * sel[j], q, iou);
        if (!keep) continue;
        sel[nsel++] = cs[i].box;
        if (!push_row(r, b, k, cs[i].box)) return false;
    }
    return true;
}

int rx_bi_nms(rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs, rx_vm_value *out,
              rx_rt_err *err)
{
    if (nargs < 3 || nargs > 6)
        return rx_rt_fail(err, "nms takes 3 to 6 arguments, got %" PRId64, nargs);
    if (args[0].kind != RX_V_INT)
        return rx_rt_fail(err, "nms: center_point_box is %s, not an int",
                          rx_vm_kind_desc(args[0].kind));
    int64_t cpb = args[0].u.i, max_out = 0;
    double iou = 0, thr = 0;
    if (cpb != 0 && cpb != 1)
        return rx_rt_fail(err, "nms: center_point_box must be 0 or 1, got %" PRId64, cpb);
    for (int i = 1; i < 3; i++)
        if (args[i].kind != RX_V_TENSOR)
            return rx_rt_fail(err, "nms: %s is %s, not a tensor", i == 1 ? "boxes" : "scores",
                              rx_vm_kind_desc(args[i].kind));
    const DLTensor *boxes = &args[1].u.t->dl, *scores = &args[2].u.t->dl;
    if (boxes->ndim != 3 || boxes->shape[2] != 4 || scores->ndim != 3 ||
        scores->shape[0] != boxes->shape[0] || scores->shape[2] != boxes->shape[1])
        return rx_rt_fail(err, "nms: expects boxes (batch, n, 4) and scores (batch, classes, "
                          "n) of the same batch and n");
    if (!is_float(boxes->dtype) || boxes->dtype.bits != scores->dtype.bits ||
        scores->dtype.code != kDLFloat)
        return rx_rt_fail(err, "nms: boxes and scores must both be f32 or both f64");
    if ((nargs > 3 && scalar_arg(&args[3], "max_output_boxes_per_class", true, NULL, &max_out,
                                 err)) ||
        (nargs > 4 && scalar_arg(&args[4], "iou_threshold", false, &iou, NULL, err)) ||
        (nargs > 5 && scalar_arg(&args[5], "score_threshold", false, &thr, NULL, err)))
        return -1;
    if (!(iou >= 0 && iou <= 1))
        return rx_rt_fail(err, "nms: iou_threshold must be in [0, 1], got %g", iou);
    int64_t nb = boxes->shape[0], n = boxes->shape[1], ncls = scores->shape[1];
    rows r = {0};
    double *box = malloc(((size_t)n * 4 + 1) * sizeof *box);
    cand *cs = malloc(((size_t)n + 1) * sizeof *cs);
    int64_t *sel = malloc(((size_t)n + 1) * sizeof *sel);
    bool ok = box && cs && sel;
    for (int64_t b = 0; ok && max_out > 0 && b < nb; b++) {
        corners(boxes, b, n, cpb, box);
        for (int64_t k = 0; ok && k < ncls; k++)
            ok = select_class(scores, b, k, n, box, max_out, iou, nargs > 5, thr, cs, sel, &r);
    }
    free(box), free(cs), free(sel);
    if (!ok) {
        free(r.v);
        return rx_rt_fail(err, "nms: out of memory");
    }
    int64_t shape[2] = {r.n, 3};
    DLDataType i64 = {kDLInt, 64, 1};
    rx_rt_tensor *t = rx_bi_new_tensor(ctx, "nms", i64, 2, shape, err);
    if (t && r.n) memcpy(t->dl.data, r.v, (size_t)r.n * 3 * sizeof *r.v);
    free(r.v);
    if (!t) return -1;
    out->kind = RX_V_TENSOR;
    out->u.t = t;
    return 0;
}
