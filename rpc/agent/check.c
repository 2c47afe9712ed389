/*
 * check.c — the optional correctness check of a benchmark job: the outputs of one call
 * against expected arrays sent with the job (.npy images, typically computed by NumPy
 * on the submitting side).
 *
 * The outputs are flattened as relax-run writes them (a tuple result (a, (b, c)) is
 * a, b, c); output i is compared with expected i. The counts must match, each output must
 * be a tensor (or an int / shape, compared as a 0-d / 1-D int64 array) of the expected
 * shape; dtypes may differ (an f32 output against an f64 expectation is compared in
 * double). Per element, with d = |out - exp|:
 *   max_abs_error = max d;   max_rel_error = max d / |exp| over exp != 0;
 *   passed when every d <= atol + rtol * |exp| (numpy.allclose), NaN matching NaN and
 *   an infinity matching the same infinity.
 * The message names the first element that violates the tolerance ("output 0 [3, 1]:
 * 0.5012 vs expected 0.25 (|diff| 0.2512 > atol 1e-06 + rtol 1e-05 * 0.25)").
 */
#include "agent.h"

#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "(2, 3)" into buf. */
static const char *shape_str(const int64_t *shape, int32_t ndim, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int32_t i = 0; i < ndim && len < n - 24; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(buf + len, n - len, "%s)", ndim == 1 ? "," : "");
    return buf;
}

/* "[3, 1]": the multi-index of flat element i. */
static void index_str(int64_t i, const int64_t *shape, int32_t ndim, char *buf, size_t n)
{
    int64_t idx[RX_RXA_MAX_NDIM];
    for (int32_t d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int32_t d = 0; d < ndim && len < n - 24; d++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)idx[d]);
    snprintf(buf + len, n - len, "]");
}

/* One output as (data, dtype, ndim, shape); ints and shapes as int64 arrays. */
typedef struct view {
    const void *data;     /* elements */
    uint32_t dtype;       /* packed dtype */
    int32_t ndim;         /* rank */
    const int64_t *shape; /* dims */
    int64_t scalar;       /* storage for an int output */
    int64_t len;          /* storage for a shape output's length */
} view;

static int output_view(rx_rt_outputs *out, int i, view *v)
{
    int kind = rx_rt_outputs_kind(out, i);
    if (kind == RX_RT_ARG_TENSOR) {
        DLTensor *t = rx_rt_outputs_tensor(out, i);
        v->data = (const char *)t->data + t->byte_offset;
        v->dtype = RX_RXA_DTYPE(t->dtype.code, t->dtype.bits, t->dtype.lanes ? t->dtype.lanes : 1);
        v->ndim = t->ndim;
        v->shape = t->shape;
        return 0;
    }
    if (kind == RX_RT_ARG_INT) {
        v->scalar = rx_rt_outputs_int(out, i);
        v->data = &v->scalar;
        v->dtype = RX_RXA_I64;
        v->ndim = 0;
        v->shape = NULL;
        return 0;
    }
    if (kind == RX_RT_ARG_SHAPE) {
        const int64_t *dims;
        v->len = rx_rt_outputs_shape(out, i, &dims);
        v->data = dims;
        v->dtype = RX_RXA_I64;
        v->ndim = 1;
        v->shape = &v->len;
        return 0;
    }
    return -1;
}

/* Compares one output with its expectation, updating res. */
static void compare(int i, const view *o, const rx_npy *e, double rtol, double atol,
                    rxag_check *res)
{
    char a[160], b[160];
    if (o->ndim != e->ndim ||
        (o->ndim && memcmp(o->shape, e->shape, sizeof(int64_t) * (size_t)o->ndim))) {
        if (res->passed)
            snprintf(res->message, sizeof res->message, "output %d: shape %s, expected %s", i,
                     shape_str(o->shape, o->ndim, a, sizeof a),
                     shape_str(e->shape, e->ndim, b, sizeof b));
        res->passed = 0;
        return;
    }
    for (int64_t k = 0; k < e->count; k++) {
        double x = rx_bench_elem(o->data, o->dtype, k), y = rx_bench_elem(e->data, e->dtype, k);
        double d;
        int ok;
        if (isnan(x) || isnan(y)) {
            ok = isnan(x) && isnan(y);
            d = ok ? 0 : INFINITY;
        } else if (isinf(x) || isinf(y)) {
            ok = x == y;
            d = ok ? 0 : INFINITY;
        } else {
            d = fabs(x - y);
            ok = d <= atol + rtol * fabs(y);
        }
        if (d > res->max_abs_error) res->max_abs_error = d;
        if (y != 0 && !isnan(y) && d / fabs(y) > res->max_rel_error)
            res->max_rel_error = d / fabs(y);
        if (!ok && res->passed) {
            index_str(k, e->shape, e->ndim, a, sizeof a);
            snprintf(res->message, sizeof res->message,
                     "output %d %s: %.9g vs expected %.9g (|diff| %.3g > atol %g + rtol %g * %.3g)",
                     i, a, x, y, d, atol, rtol, fabs(y));
            res->passed = 0;
        }
    }
}

int rxag_check_outputs(rx_rt_outputs *out, uint8_t *const *exp, const size_t *exp_len, int nexp,
                       double rtol, double atol, rxag_check *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->passed = 1;
    int nout = rx_rt_outputs_count(out);
    for (int i = 0; i < nexp; i++) {
        rx_npy e;
        char msg[320];
        if (rx_npy_read_mem(exp[i], exp_len[i], &e, msg, sizeof msg)) {
            snprintf(err, errlen, "expected[%d]: %s", i, msg);
            return -1;
        }
        view o;
        if (i >= nout) {
            if (res->passed)
                snprintf(res->message, sizeof res->message,
                         "the function returned %d output%s, %d expected", nout,
                         nout == 1 ? "" : "s", nexp);
            res->passed = 0;
        } else if (output_view(out, i, &o)) {
            if (res->passed)
                snprintf(res->message, sizeof res->message,
                         "output %d has no array form to compare", i);
            res->passed = 0;
        } else {
            compare(i, &o, &e, rtol, atol, res);
        }
        free(e.data);
    }
    if (nout > nexp && res->passed) {
        snprintf(res->message, sizeof res->message, "the function returned %d outputs, %d expected",
                 nout, nexp);
        res->passed = 0;
    }
    return 0;
}
