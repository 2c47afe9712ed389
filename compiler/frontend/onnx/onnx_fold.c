/*
 * onnx_fold.c — elementwise ops on constant scalars evaluated at import.
 *
 * Control flow is resolved at import (onnx_control.c), so a trip count or a condition
 * computed from constants must become a constant: ONNX's Range function body computes
 * its Loop's trip count as Cast(Relu(Ceil(Div(Sub(limit, start), delta)))), and a Loop
 * body may branch on Not(OptionalHasElement(...)). Before its converter runs, a node of
 * the ops below whose inputs are all constants of one element (rank 0 or 1) and of a
 * plain dtype (f32, f64, i32, i64, bool) is evaluated here and its output becomes a
 * constant. Floats are computed in double and rounded once to the output dtype (exact
 * for one f32 operation: double carries more than 2*24+2 bits); integers in int64 (an
 * integer Div truncates toward zero, as ONNX Runtime and the ONNX reference do: PyTorch's
 * chunk computes its chunk size as (n + chunks - 1) / chunks; a division by zero or
 * INT64_MIN / -1 is left to the op; overflow wraps). Anything else (a NaN cast to an integer, a larger tensor) is left
 * to the converter, which emits the op as usual. Costs: O(1) per node.
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

static const char *const fold_ops[] = {
    "Not", "Neg", "Abs", "Ceil", "Floor", "Relu", "Cast", "Add", "Sub", "Mul", "Div",
    "And", "Or", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
};

static bool plain(rx_dtype dt)
{
    return dt == RX_DT_F32 || dt == RX_DT_F64 || dt == RX_DT_I32 || dt == RX_DT_I64 ||
           dt == RX_DT_BOOL;
}

/* op applied to a (and b) as doubles (*r) and, for integer inputs, as int64 (*ir, with
 * wrap-around: no undefined overflow); false when the result is not folded. */
static bool eval(const char *op, bool isf, double a, double b, int64_t ia, int64_t ib,
                 double *r, int64_t *ir)
{
    uint64_t ua = (uint64_t)ia, ub = (uint64_t)ib;
    *ir = ia;
    if (!strcmp(op, "Not")) *r = a == 0;
    else if (!strcmp(op, "Neg")) *r = -a, *ir = (int64_t)(0 - ua);
    else if (!strcmp(op, "Abs")) *r = fabs(a), *ir = ia < 0 ? (int64_t)(0 - ua) : ia;
    else if (!strcmp(op, "Ceil")) *r = ceil(a);
    else if (!strcmp(op, "Floor")) *r = floor(a);
    else if (!strcmp(op, "Relu")) *r = a > 0 ? a : 0, *ir = ia > 0 ? ia : 0;
    else if (!strcmp(op, "Cast")) *r = a;
    else if (!strcmp(op, "Add")) *r = a + b, *ir = (int64_t)(ua + ub);
    else if (!strcmp(op, "Sub")) *r = a - b, *ir = (int64_t)(ua - ub);
    else if (!strcmp(op, "Mul")) *r = a * b, *ir = (int64_t)(ua * ub);
    else if (!strcmp(op, "Div")) {
        *r = a / b;
        if (ib == 0 || (ib == -1 && ia == INT64_MIN)) *ir = INT64_MIN; /* left to the op */
        else *ir = ia / ib; /* C truncates toward zero */
    }
    else if (!strcmp(op, "And")) *r = a != 0 && b != 0;
    else if (!strcmp(op, "Or")) *r = a != 0 || b != 0;
    else if (!strcmp(op, "Equal")) *r = isf ? a == b : ia == ib;
    else if (!strcmp(op, "Less")) *r = isf ? a < b : ia < ib;
    else if (!strcmp(op, "Greater")) *r = isf ? a > b : ia > ib;
    else if (!strcmp(op, "LessOrEqual")) *r = isf ? a <= b : ia <= ib;
    else *r = isf ? a >= b : ia >= ib; /* GreaterOrEqual */
    return true;
}

bool ox_fold_scalar(ox_ctx *c)
{
    const char *op = c->node->op_type;
    bool known = false;
    for (int i = 0; i < RX_COUNTOF(fold_ops) && !known; i++) known = !strcmp(op, fold_ops[i]);
    int n = ox_nin(c);
    if (!known || n < 1 || n > 2 || ox_nout(c) != 1 || (int)c->node->n_input != n) return false;
    rx_const *k[2] = {NULL, NULL};
    for (int i = 0; i < n; i++) {
        ox_val *v = ox_in(c, i);
        if (!v || v->kind != OX_TENSOR || (v->node && !v->k && !v->sym)) return false;
        k[i] = ox_const(c, v);
        if (!k[i] || ox_numel(k[i]) != 1 || k[i]->ndim > 1 || !plain(k[i]->dtype)) return false;
    }
    rx_dtype in = k[0]->dtype, out = in;
    if (n == 2 && (k[1]->dtype != in || k[1]->ndim != k[0]->ndim)) return false;
    bool cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
               !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual");
    if (cmp) out = RX_DT_BOOL;
    if (!strcmp(op, "Cast")) out = ox_dtype((int32_t)ox_attr_i(c, "to", 0));
    if (!plain(out)) return false;
    bool isf = rx_dtype_is_float(in);
    double a = ox_cf(k[0], 0), b = n == 2 ? ox_cf(k[1], 0) : 0, r;
    int64_t ia = isf ? 0 : ox_ci(k[0], 0), ib = isf || n < 2 ? 0 : ox_ci(k[1], 0), ir;
    if (!eval(op, isf, a, b, ia, ib, &r, &ir)) return false;
    if (!isf && !strcmp(op, "Div") && ir == INT64_MIN) return false; /* undefined */
    rx_const *res = ox_new_const(c, out, k[0]->ndim, k[0]->shape);
    if (out == RX_DT_F32) {
        float f = (float)r;
        memcpy(res->data, &f, 4);
    } else if (out == RX_DT_F64) {
        memcpy(res->data, &r, 8);
    } else if (out == RX_DT_BOOL) {
        res->data[0] = isf || cmp || !strcmp(op, "Not") || !strcmp(op, "And") ||
                               !strcmp(op, "Or") ? r != 0 : ir != 0;
    } else {
        if (isf && !(r > -9.2e18 && r < 9.2e18)) return false; /* NaN, or beyond int64 */
        int64_t i = isf ? (int64_t)r : ir; /* a float truncates, as ONNX's Cast */
        if (out == RX_DT_I32) {
            int32_t j = (int32_t)i;
            memcpy(res->data, &j, 4);
        } else {
            memcpy(res->data, &i, 8);
        }
    }
    ox_out_const(c, 0, res);
    return true;
}
