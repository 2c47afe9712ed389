/*
 * onnx_reduce.c — the ONNX importer's reductions: ReduceSum Mean Max Min Prod, and the
 * composite ones as a prologue / epilogue around sum (L1: abs; L2: square, sqrt;
 * SumSquare; LogSum: log). ReduceLogSumExp is log(sum(exp(x - m))) + m with m the max
 * over the axes (0 where infinite, as PyTorch): exp alone overflows f32 past 88.7, and a
 * BiLSTM-CRF's forward algorithm (tests/onnx/zoo_models7c.py, bilstm_crf at 32 steps)
 * read inf where PyTorch and ONNX Runtime read ~100; the shift costs a second max pass.
 * Sum Prod Max Min of a known integer vector such as a Shape fold to a known scalar.
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* ReduceSum / Prod / Max / Min of a 1-d integer vector known up to symbolic dims (a Shape:
 * x.numel() exports as ReduceProd(Shape(x)), pack_padded_sequence's Range bound) over its
 * only axis: the known scalar, so shape operands computed from it still fold. */
static bool reduce_sym(ox_ctx *c, const char *t, const int64_t *ax, int n)
{
    ox_val *v = ox_in(c, 0);
    rx_ekind k = !strcmp(t, "ReduceSum") ? RX_E_ADD : !strcmp(t, "ReduceProd") ? RX_E_MUL
               : !strcmp(t, "ReduceMax") ? RX_E_MAX : RX_E_MIN;
    if (!v || !v->sym || v->symrank != 1 || v->nsym < 1 || n > 1 || (n == 1 && ax[0] != 0 && ax[0] != -1))
        return false;
    if (n <= 0 && ox_attr_i(c, "noop_with_empty_axes", 0)) return false;
    rx_expr *r = v->sym[0];
    for (int i = 1; i < v->nsym; i++) r = rx_e_binary(c->a, k, r, v->sym[i]);
    rx_expr **o = RX_NEWN(c->a, rx_expr *, 1);
    o[0] = ox_simp(c, r);
    ox_out_sym(c, 0, o, 1, ox_attr_i(c, "keepdims", 1) ? 1 : 0, v->symdt);
    return true;
}

/* max(x) over the axes (keepdims as given), 0 where it is infinite (PyTorch's logsumexp
 * shift: a row of -inf gives log(0) = -inf, not NaN). */
static rx_node *shift(ox_ctx *c, rx_node *x, const int64_t *ax, int n, bool keep)
{
    rx_attr *m = ox_amap(c);
    if (n > 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    ox_aset(c, m, "keepdims", ox_abool(c, keep));
    rx_node *mx = ox_call1(c, "max", x, m);
    rx_dtype dt = ox_dtype_of(x);
    rx_node *fin = ox_call2(c, "less", ox_call1(c, "abs", mx, NULL), ox_scalar(c, dt, INFINITY));
    rx_node *a[3] = {fin, mx, ox_scalar(c, dt, 0)};
    return ox_call(c, "where", a, 3, NULL);
}

/* ReduceLogSumExp as log(sum(exp(x - m))) + m, m the max over the axes: without the shift
 * exp overflows f32 past 88.7 (a CRF's forward scores, summed over 32 steps, read inf). */
static bool log_sum_exp(ox_ctx *c, rx_node *x, const int64_t *ax, int n)
{
    if (n <= 0 && ox_attr_i(c, "noop_with_empty_axes", 0)) {
        ox_out_alias(c, 0, ox_in(c, 0));
        return true;
    }
    bool keep = ox_attr_i(c, "keepdims", 1) != 0;
    rx_node *mk = shift(c, x, ax, n, true);
    rx_node *e = ox_call1(c, "exp", ox_call2(c, "subtract", x, mk), NULL);
    rx_attr *m = ox_amap(c);
    if (n > 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    ox_aset(c, m, "keepdims", ox_abool(c, keep));
    rx_node *y = ox_call1(c, "log", ox_call1(c, "sum", e, m), NULL);
    return ox_out_node(c, 0, ox_call2(c, "add", y, keep ? mk : shift(c, x, ax, n, false)));
}

bool ox_c_reduce(ox_ctx *c)
{
    const char *t = c->node->op_type;
    const char *op = !strcmp(t, "ReduceMean") ? "mean" : !strcmp(t, "ReduceMax") ? "max"
                   : !strcmp(t, "ReduceMin") ? "min" : !strcmp(t, "ReduceProd") ? "prod" : "sum";
    int64_t *ax;
    int n;
    if (!ox_get_axes(c, 1, &ax, &n)) return false;
    if ((!strcmp(t, "ReduceSum") || !strcmp(t, "ReduceProd") || !strcmp(t, "ReduceMax") ||
         !strcmp(t, "ReduceMin")) && reduce_sym(c, t, ax, n))
        return true;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    if (!strcmp(t, "ReduceLogSumExp")) return log_sum_exp(c, x, ax, n);
    /* the composite reductions: a prologue before sum, an epilogue after */
    const char *pre = !strcmp(t, "ReduceL1") ? "abs" : NULL;
    const char *post = !strcmp(t, "ReduceL2") ? "sqrt" : !strcmp(t, "ReduceLogSum") ? "log" : NULL;
    if (pre) x = ox_call1(c, pre, x, NULL);
    if (!strcmp(t, "ReduceL2") || !strcmp(t, "ReduceSumSquare")) x = ox_call2(c, "multiply", x, x);
    if (!x) return false;
    if (n == 0 || n < 0) {
        if (ox_attr_i(c, "noop_with_empty_axes", 0)) {
            ox_out_alias(c, 0, ox_in(c, 0));
            return true;
        }
        n = -1;
    }
    rx_attr *m = ox_amap(c);
    if (n > 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    ox_aset(c, m, "keepdims", ox_abool(c, ox_attr_i(c, "keepdims", 1) != 0));
    rx_node *y = ox_call1(c, op, x, m);
    if (y && post) y = ox_call1(c, post, y, NULL);
    return ox_out_node(c, 0, y);
}
