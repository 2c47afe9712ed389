/*
 * onnx_ops.c — the ONNX op mapping: one table row per op type (its converter and the
 * attributes it understands) and the converters. Contracts in onnx_int.h.
 *
 * A converter reads the current node's inputs (ox_in), emits Relax op calls (ox_call,
 * each deduced on the spot so the next one sees its annotation) and binds the node's
 * outputs. Shape-computing ops (Shape, Size, Gather, Concat, Slice, Unsqueeze, Squeeze,
 * Cast, Add/Sub/Mul/Div, Equal, Where, Range, ConstantOfShape, Reshape of a 1-d value)
 * first try to fold on the symbolic elements of their inputs (ox_syms): a chain from
 * Shape to a Reshape then becomes the reshape's symbolic target shape, and an exported
 * transformer stays dynamic in batch and sequence. When folding does not apply the op
 * is emitted as data.
 *
 * The mapping (ONNX -> Relax), one line per group:
 *   Relu Sigmoid Tanh Exp Log Sqrt Abs Neg Erf Floor Ceil Sin Cos Not Sign Round
 *                     -> nn.relu sigmoid tanh exp log sqrt abs negative erf floor ceil...
 *   Add Sub Mul Div Pow Equal Less Greater LessOrEqual GreaterOrEqual And Or
 *                     -> add subtract multiply divide power equal less ... logical_or
 *   Max Min Sum Mean (variadic)  -> maximum minimum add (chains), divide for Mean
 *   MatMul -> matmul; Gemm -> permute_dims, matmul, multiply, add
 *   Softmax LogSoftmax -> nn.softmax nn.log_softmax (opset < 13: over the flattened
 *                     trailing axes, through reshape)
 *   Reshape Flatten -> reshape; Transpose -> permute_dims; Squeeze Unsqueeze ->
 *                     squeeze expand_dims; Concat -> concat; Gather -> take; Slice ->
 *                     strided_slice; Split -> split; Expand -> broadcast_to; Tile ->
 *                     tile; Where -> where; Cast -> astype; Trilu -> tril/triu
 *   Shape Size Constant ConstantOfShape Range -> folded values, full, arange
 *   ReduceMean/Sum/Max/Min/Prod -> mean sum max min prod; ArgMax ArgMin -> argmax argmin
 *   LayerNormalization -> nn.layer_norm; BatchNormalization -> nn.batch_norm
 *   Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool (2-d) -> nn.conv2d (+ add),
 *                     nn.max_pool2d, nn.avg_pool2d, nn.adaptive_avg_pool2d, max
 *   Clip LeakyRelu PRelu Elu Selu HardSigmoid HardSwish Softplus Softsign Reciprocal
 *   ThresholdedRelu   -> compositions of the elementwise ops
 *   Identity Dropout  -> the input value
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* ---------------------------------------------------------------- helpers */

static rx_node *in_node(ox_ctx *c, int i) { return ox_node(c, ox_in(c, i)); }

static rx_node *call1(ox_ctx *c, const char *op, rx_node *x, rx_attr *at)
{
    return ox_call(c, op, &x, 1, at);
}

static rx_node *call2(ox_ctx *c, const char *op, rx_node *x, rx_node *y)
{
    rx_node *a[2] = {x, y};
    return ox_call(c, op, a, 2, NULL);
}

static int ndim_of(const rx_node *n)
{
    return n && n->sinfo && n->sinfo->kind == RX_SI_TENSOR ? n->sinfo->ndim : -1;
}

static rx_dtype dtype_of(const rx_node *n)
{
    return n && n->sinfo ? (rx_dtype)n->sinfo->dtype : RX_DT_UNKNOWN;
}

static rx_node *shape_node(ox_ctx *c, rx_expr **dims, int n)
{
    rx_node *s = rx_n_shape(c->m, dims, n);
    s->sinfo = rx_si_shape(c->a, n, dims);
    return s;
}

static rx_node *reshape(ox_ctx *c, rx_node *x, rx_expr **dims, int n)
{
    return call2(c, "reshape", x, shape_node(c, dims, n));
}

static rx_expr *lit(ox_ctx *c, int64_t v) { return rx_e_int(c->a, v); }

static rx_expr *simp(ox_ctx *c, rx_expr *e) { return rx_arith_simplify(c->ar, e); }

static rx_expr *prod(ox_ctx *c, rx_expr **d, int lo, int hi)
{
    rx_expr *p = lit(c, 1);
    for (int i = lo; i < hi; i++) p = rx_e_binary(c->a, RX_E_MUL, p, d[i]);
    return simp(c, p);
}

static bool need_dims(ox_ctx *c, const rx_node *x)
{
    if (x && x->sinfo && x->sinfo->kind == RX_SI_TENSOR && x->sinfo->dims) return true;
    if (x) ox_err(c, "the input's shape must be known (rank and dims)");
    return false;
}

static int norm_axis(ox_ctx *c, int64_t axis, int nd)
{
    if (axis < -nd || axis >= nd) {
        ox_err(c, "axis %lld is out of range for rank %d", (long long)axis, nd);
        return -1;
    }
    return (int)(axis < 0 ? axis + nd : axis);
}

/* Axes from the attribute `axes` (older opsets) or from input `idx`; *n = -1 absent. */
static bool get_axes(ox_ctx *c, int idx, int64_t **ax, int *n)
{
    int na;
    const int64_t *a = ox_attr_ints(c, "axes", &na);
    if (na >= 0) {
        *ax = RX_NEWN(c->a, int64_t, na ? na : 1);
        if (na) memcpy(*ax, a, sizeof **ax * (size_t)na);
        *n = na;
        return true;
    }
    ox_val *v = ox_in(c, idx);
    if (!v) {
        *n = -1;
        return true;
    }
    if (!ox_ints(c, v, ax, n)) {
        ox_err(c, "axes must be a constant");
        return false;
    }
    return true;
}

/* Folds a binary integer op on symbolic elements with broadcasting. */
static bool fold_binary(ox_ctx *c, rx_ekind k, rx_dtype dt)
{
    ox_val *x = ox_in(c, 0), *y = ox_in(c, 1);
    if (!x || !y || (!x->sym && !y->sym)) return false;
    rx_expr **xs, **ys;
    int nx, ny;
    if (!ox_syms(c, x, &xs, &nx) || !ox_syms(c, y, &ys, &ny)) return false;
    if (nx != ny && nx != 1 && ny != 1) return false;
    int n = nx > ny ? nx : ny;
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        rx_expr *a = xs[nx == 1 ? 0 : i], *b = ys[ny == 1 ? 0 : i];
        if (k == RX_E_EQ) {
            if (rx_arith_prove_equal(c->ar, a, b)) r[i] = lit(c, 1);
            else if (rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_NE, a, b))) r[i] = lit(c, 0);
            else return false;
        } else {
            r[i] = rx_e_binary(c->a, k, a, b);
        }
    }
    int rank = x->symrank > y->symrank ? x->symrank : y->symrank;
    ox_out_sym(c, 0, r, n, rank, dt);
    return true;
}

/* ---------------------------------------------------------------- elementwise */

static const struct { const char *onnx, *relax; } unary_map[] = {
    {"Relu", "nn.relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},
    {"Log", "log"}, {"Sqrt", "sqrt"}, {"Abs", "abs"}, {"Neg", "negative"}, {"Erf", "erf"},
    {"Floor", "floor"}, {"Ceil", "ceil"}, {"Sin", "sin"}, {"Cos", "cos"},
    {"Not", "logical_not"}, {"Sign", "sign"}, {"Round", "round"},
};

static bool c_unary(ox_ctx *c)
{
    ox_val *x = ox_in(c, 0);
    rx_expr **xs;
    int n;
    rx_dtype dt = x && x->sym ? x->symdt : x && x->k ? x->k->dtype : RX_DT_UNKNOWN;
    if (!strcmp(c->node->op_type, "Neg") && rx_dtype_is_int(dt) && ox_syms(c, x, &xs, &n)) {
        rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1); /* folded: shape arithmetic */
        for (int i = 0; i < n; i++) r[i] = rx_e_unary(c->a, RX_E_NEG, xs[i]);
        ox_out_sym(c, 0, r, n, x->symrank, dt);
        return true;
    }
    for (int i = 0; i < RX_COUNTOF(unary_map); i++)
        if (!strcmp(unary_map[i].onnx, c->node->op_type))
            return ox_out_node(c, 0, call1(c, unary_map[i].relax, in_node(c, 0), NULL));
    return false;
}

static const struct { const char *onnx, *relax; rx_ekind fold; } binary_map[] = {
    {"Add", "add", RX_E_ADD}, {"Sub", "subtract", RX_E_SUB}, {"Mul", "multiply", RX_E_MUL},
    {"Div", "divide", RX_E_FLOORDIV}, {"Pow", "power", RX_E_KIND_COUNT},
    {"Equal", "equal", RX_E_EQ}, {"Less", "less", RX_E_KIND_COUNT},
    {"Greater", "greater", RX_E_KIND_COUNT}, {"LessOrEqual", "less_equal", RX_E_KIND_COUNT},
    {"GreaterOrEqual", "greater_equal", RX_E_KIND_COUNT},
    {"And", "logical_and", RX_E_KIND_COUNT}, {"Or", "logical_or", RX_E_KIND_COUNT},
    {"Xor", "not_equal", RX_E_KIND_COUNT},
};

static bool c_binary(ox_ctx *c)
{
    int i = 0;
    while (strcmp(binary_map[i].onnx, c->node->op_type)) i++;
    ox_val *x = ox_in(c, 0), *y = ox_in(c, 1);
    if (!x || !y) {
        ox_err(c, "needs two inputs");
        return false;
    }
    if (binary_map[i].fold != RX_E_KIND_COUNT) {
        rx_dtype dt = x->sym ? x->symdt : x->k ? x->k->dtype : RX_DT_UNKNOWN;
        if (binary_map[i].fold == RX_E_EQ) dt = RX_DT_BOOL;
        if (dt != RX_DT_UNKNOWN && !rx_dtype_is_float(dt) && fold_binary(c, binary_map[i].fold, dt))
            return true;
    }
    rx_node *a = ox_node(c, x), *b = ox_node(c, y);
    if (!a || !b) return false;
    if (!strcmp(c->node->op_type, "Pow") && dtype_of(a) != dtype_of(b)) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dtype_of(a))));
        b = call1(c, "astype", b, m);
    }
    return ox_out_node(c, 0, call2(c, binary_map[i].relax, a, b));
}

/* Max Min Sum Mean: a chain of the binary op over the inputs. */
static bool c_variadic(ox_ctx *c)
{
    const char *t = c->node->op_type;
    const char *op = !strcmp(t, "Max") ? "maximum" : !strcmp(t, "Min") ? "minimum" : "add";
    int n = ox_nin(c);
    if (n < 1) {
        ox_err(c, "needs at least one input");
        return false;
    }
    rx_node *acc = in_node(c, 0);
    for (int i = 1; i < n && acc; i++) acc = call2(c, op, acc, in_node(c, i));
    if (acc && !strcmp(t, "Mean") && n > 1)
        acc = call2(c, "divide", acc, ox_scalar(c, dtype_of(acc), n));
    return ox_out_node(c, 0, acc);
}

static bool c_identity(ox_ctx *c)
{
    bool drop = !strcmp(c->node->op_type, "Dropout");
    if (drop && ox_in(c, 2)) { /* training_mode: only a constant false is inference */
        int64_t *tm;
        int n;
        if (!ox_ints(c, ox_in(c, 2), &tm, &n) || n != 1 || tm[0]) {
            ox_err(c, "training_mode must be a constant false (inference only)");
            return false;
        }
    }
    ox_out_alias(c, 0, ox_in(c, 0));
    if (drop && ox_nout(c) > 1 && *c->node->output[1]) { /* the mask: all true */
        rx_node *x = in_node(c, 0);
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "dtype", ox_astr(c, "bool"));
        return ox_out_node(c, 1, call1(c, "ones_like", x, m));
    }
    return true;
}

static bool c_where(ox_ctx *c)
{
    ox_val *cv = ox_in(c, 0), *x = ox_in(c, 1), *y = ox_in(c, 2);
    rx_expr **cs, **xs, **ys;
    int nc, nx, ny;
    if ((x && x->sym) || (y && y->sym)) {
        if (ox_syms(c, cv, &cs, &nc) && ox_syms(c, x, &xs, &nx) && ox_syms(c, y, &ys, &ny)) {
            int n = nc > nx ? nc : nx;
            n = n > ny ? n : ny;
            bool ok = (nc == n || nc == 1) && (nx == n || nx == 1) && (ny == n || ny == 1);
            rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1);
            for (int i = 0; ok && i < n; i++) {
                int64_t b;
                if (!rx_expr_is_const(simp(c, cs[nc == 1 ? 0 : i]), &b)) ok = false;
                else r[i] = b ? xs[nx == 1 ? 0 : i] : ys[ny == 1 ? 0 : i];
            }
            if (ok) {
                ox_out_sym(c, 0, r, n, x->symrank > y->symrank ? x->symrank : y->symrank,
                           x->sym ? x->symdt : y->symdt);
                return true;
            }
        }
    }
    rx_node *a[3] = {ox_node(c, cv), ox_node(c, x), ox_node(c, y)};
    return ox_out_node(c, 0, ox_call(c, "where", a, 3, NULL));
}

static bool c_cast(ox_ctx *c)
{
    rx_dtype dt = ox_dtype((int32_t)ox_attr_i(c, "to", 0));
    if (!strcmp(c->node->op_type, "CastLike")) {
        rx_node *like = in_node(c, 1);
        if (!like) return false;
        dt = dtype_of(like);
    }
    if (dt == RX_DT_UNKNOWN) {
        ox_err(c, "unsupported target type %lld", (long long)ox_attr_i(c, "to", 0));
        return false;
    }
    ox_val *x = ox_in(c, 0);
    if (x && x->sym && !rx_dtype_is_float(dt) && dt != RX_DT_BOOL) {
        ox_out_sym(c, 0, x->sym, x->nsym, x->symrank, dt);
        return true;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_out_node(c, 0, call1(c, "astype", ox_node(c, x), m));
}

/* Mod: fmod = 0 is the floor modulo (the divisor's sign), x - floor(x / y) * y; fmod = 1
 * truncates (the dividend's sign), x - trunc(x / y) * y. */
static bool c_mod(ox_ctx *c)
{
    rx_node *x = in_node(c, 0), *y = in_node(c, 1);
    if (!x || !y) return false;
    bool fmod = ox_attr_i(c, "fmod", 0) != 0, flt = rx_dtype_is_float(dtype_of(x));
    if (!fmod && flt) {
        ox_err(c, "fmod = 0 needs integer inputs");
        return false;
    }
    rx_node *q;
    if (!flt && !fmod) {
        q = call2(c, "floor_divide", x, y);
    } else {
        rx_node *xf = x, *yf = y;
        if (!flt) {
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "dtype", ox_astr(c, "f64"));
            xf = call1(c, "astype", x, m);
            yf = call1(c, "astype", y, m);
        }
        rx_node *d = call2(c, "divide", xf, yf);
        rx_node *w[3] = {call2(c, "less", d, ox_scalar(c, dtype_of(d), 0)),
                         call1(c, "ceil", d, NULL), call1(c, "floor", d, NULL)};
        q = ox_call(c, "where", w, 3, NULL);
        if (!flt && q) {
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dtype_of(x))));
            q = call1(c, "astype", q, m);
        }
    }
    return ox_out_node(c, 0, call2(c, "subtract", x, call2(c, "multiply", q, y)));
}

/* Clip: maximum with min, minimum with max (ONNX's order: max wins when min > max). */
static bool c_clip(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = dtype_of(x);
    rx_node *lo = NULL, *hi = NULL;
    if (c->opset < 11) {
        if (ox_attr(c, "min")) lo = ox_scalar(c, dt, ox_attr_f(c, "min", 0));
        if (ox_attr(c, "max")) hi = ox_scalar(c, dt, ox_attr_f(c, "max", 0));
    } else {
        if (ox_in(c, 1)) lo = in_node(c, 1);
        if (ox_in(c, 2)) hi = in_node(c, 2);
    }
    if (lo) x = call2(c, "maximum", x, lo);
    if (hi && x) x = call2(c, "minimum", x, hi);
    return ox_out_node(c, 0, x);
}

/* The activations that are compositions of elementwise ops. */
static bool c_activation(ox_ctx *c)
{
    const char *t = c->node->op_type;
    rx_node *x = in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = dtype_of(x);
    rx_node *zero = ox_scalar(c, dt, 0), *one = ox_scalar(c, dt, 1), *r = NULL;
    if (!strcmp(t, "LeakyRelu")) {
        rx_node *w[3] = {call2(c, "greater", x, zero), x,
                         call2(c, "multiply", x, ox_scalar(c, dt, ox_attr_f(c, "alpha", 0.01)))};
        r = ox_call(c, "where", w, 3, NULL);
    } else if (!strcmp(t, "PRelu")) {
        rx_node *w[3] = {call2(c, "less", x, zero), call2(c, "multiply", x, in_node(c, 1)), x};
        r = ox_call(c, "where", w, 3, NULL);
    } else if (!strcmp(t, "Elu") || !strcmp(t, "Selu")) {
        bool selu = !strcmp(t, "Selu");
        double alpha = ox_attr_f(c, "alpha", selu ? 1.67326319217681884765625 : 1.0);
        rx_node *neg = call2(c, "multiply", call2(c, "subtract", call1(c, "exp", x, NULL), one),
                             ox_scalar(c, dt, alpha));
        rx_node *w[3] = {call2(c, "greater", x, zero), x, neg};
        r = ox_call(c, "where", w, 3, NULL);
        if (selu && r)
            r = call2(c, "multiply", r, ox_scalar(c, dt, ox_attr_f(c, "gamma",
                                                                     1.05070102214813232421875)));
    } else if (!strcmp(t, "HardSigmoid") || !strcmp(t, "HardSwish")) {
        bool sw = !strcmp(t, "HardSwish");
        double alpha = sw ? 1.0 / 6 : ox_attr_f(c, "alpha", 0.2);
        double beta = sw ? 0.5 : ox_attr_f(c, "beta", 0.5);
        r = call2(c, "add", call2(c, "multiply", x, ox_scalar(c, dt, alpha)), ox_scalar(c, dt, beta));
        r = call2(c, "minimum", call2(c, "maximum", r, zero), one);
        if (sw) r = call2(c, "multiply", x, r);
    } else if (!strcmp(t, "Softplus")) {
        r = call1(c, "log", call2(c, "add", call1(c, "exp", x, NULL), one), NULL);
    } else if (!strcmp(t, "Softsign")) {
        r = call2(c, "divide", x, call2(c, "add", call1(c, "abs", x, NULL), one));
    } else if (!strcmp(t, "Reciprocal")) {
        r = call2(c, "divide", one, x);
    } else if (!strcmp(t, "Tan")) {
        r = call2(c, "divide", call1(c, "sin", x, NULL), call1(c, "cos", x, NULL));
    } else if (!strcmp(t, "IsNaN")) {
        r = call2(c, "not_equal", x, x);
    } else if (!strcmp(t, "ThresholdedRelu")) {
        rx_node *w[3] = {call2(c, "greater", x, ox_scalar(c, dt, ox_attr_f(c, "alpha", 1.0))), x,
                         zero};
        r = ox_call(c, "where", w, 3, NULL);
    }
    return ox_out_node(c, 0, r);
}

/* ---------------------------------------------------------------- linear algebra */

static bool c_matmul(ox_ctx *c)
{
    return ox_out_node(c, 0, call2(c, "matmul", in_node(c, 0), in_node(c, 1)));
}

static bool c_gemm(ox_ctx *c)
{
    rx_node *a = in_node(c, 0), *b = in_node(c, 1);
    if (!a || !b) return false;
    if (ox_attr_i(c, "transA", 0)) a = call1(c, "permute_dims", a, NULL);
    if (ox_attr_i(c, "transB", 0)) b = call1(c, "permute_dims", b, NULL);
    rx_node *y = call2(c, "matmul", a, b);
    double alpha = ox_attr_f(c, "alpha", 1.0), beta = ox_attr_f(c, "beta", 1.0);
    if (y && alpha != 1.0) y = call2(c, "multiply", y, ox_scalar(c, dtype_of(y), alpha));
    if (y && ox_in(c, 2) && beta != 0.0) {
        rx_node *cc = in_node(c, 2);
        if (cc && beta != 1.0) cc = call2(c, "multiply", cc, ox_scalar(c, dtype_of(y), beta));
        y = call2(c, "add", y, cc);
    }
    return ox_out_node(c, 0, y);
}

static bool c_softmax(ox_ctx *c)
{
    const char *op = !strcmp(c->node->op_type, "Softmax") ? "nn.softmax" : "nn.log_softmax";
    rx_node *x = in_node(c, 0);
    int nd = ndim_of(x);
    if (nd < 0) {
        if (x) ox_err(c, "the input's rank must be known");
        return false;
    }
    int64_t axis = ox_attr_i(c, "axis", c->opset >= 13 ? -1 : 1);
    int ax = norm_axis(c, axis, nd > 0 ? nd : 1);
    if (ax < 0) return false;
    if (c->opset >= 13 || ax == nd - 1 || nd == 0) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aint(c, nd ? ax : -1));
        return ox_out_node(c, 0, call1(c, op, x, m));
    }
    /* opset < 13: the input is seen as 2-d [prod(:axis), prod(axis:)] */
    if (!need_dims(c, x)) return false;
    rx_expr **d = x->sinfo->dims;
    rx_expr *two[2] = {prod(c, d, 0, ax), prod(c, d, ax, nd)};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    rx_node *y = call1(c, op, reshape(c, x, two, 2), m);
    return ox_out_node(c, 0, y ? reshape(c, y, d, nd) : NULL);
}

/* ---------------------------------------------------------------- shapes */

static bool c_shape(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    if (!need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t s = ox_attr_i(c, "start", 0), e = ox_attr_i(c, "end", nd);
    if (s < 0) s += nd;
    if (e < 0) e += nd;
    s = s < 0 ? 0 : s > nd ? nd : s;
    e = e < 0 ? 0 : e > nd ? nd : e;
    int n = e > s ? (int)(e - s) : 0;
    rx_expr **sym = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) sym[i] = x->sinfo->dims[s + i];
    ox_out_sym(c, 0, sym, n, 1, RX_DT_I64);
    return true;
}

static bool c_size(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    if (!need_dims(c, x)) return false;
    rx_expr **sym = RX_NEWN(c->a, rx_expr *, 1);
    sym[0] = prod(c, x->sinfo->dims, 0, x->sinfo->ndim);
    ox_out_sym(c, 0, sym, 1, 0, RX_DT_I64);
    return true;
}

static bool c_constant(ox_ctx *c)
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
    ox_val *v = ox_find(c, c->node->output[0]);
    if (!v) v = ox_define(c, c->node->output[0]);
    v->k = k;
    return true;
}

/* Target dims of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred. */
static bool c_reshape(ox_ctx *c)
{
    ox_val *xv = ox_in(c, 0);
    rx_expr **t;
    int n;
    if (!ox_syms(c, ox_in(c, 1), &t, &n)) {
        ox_err(c, "the target shape must be computable at compile time (a constant or a "
               "chain from Shape)");
        return false;
    }
    if (xv && xv->sym && xv->symrank == 1 && n == 1) { /* a 1-d shape value stays symbolic */
        ox_out_alias(c, 0, xv);
        return true;
    }
    rx_node *x = ox_node(c, xv);
    if (!need_dims(c, x)) return false;
    bool allowzero = ox_attr_i(c, "allowzero", 0) != 0;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    int infer = -1;
    for (int i = 0; i < n; i++) {
        int64_t v;
        d[i] = t[i];
        if (!rx_expr_is_const(simp(c, t[i]), &v)) continue;
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
        d[infer] = lit(c, 1);
        rx_expr *total = prod(c, x->sinfo->dims, 0, x->sinfo->ndim);
        rx_expr *rest = prod(c, d, 0, n);
        d[infer] = simp(c, rx_e_binary(c->a, RX_E_FLOORDIV, total, rest));
    }
    for (int i = 0; i < n; i++) d[i] = simp(c, d[i]);
    return ox_out_node(c, 0, reshape(c, x, d, n));
}

static bool c_flatten(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    if (!need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t axis = ox_attr_i(c, "axis", 1);
    if (axis < 0) axis += nd;
    if (axis < 0 || axis > nd) {
        ox_err(c, "axis %lld is out of range for rank %d", (long long)ox_attr_i(c, "axis", 1), nd);
        return false;
    }
    rx_expr *two[2] = {prod(c, x->sinfo->dims, 0, (int)axis), prod(c, x->sinfo->dims, (int)axis, nd)};
    return ox_out_node(c, 0, reshape(c, x, two, 2));
}

static bool c_transpose(ox_ctx *c)
{
    int n;
    const int64_t *perm = ox_attr_ints(c, "perm", &n);
    rx_attr *m = ox_amap(c);
    if (n >= 0) ox_aset(c, m, "axes", ox_aints(c, perm, n));
    return ox_out_node(c, 0, call1(c, "permute_dims", in_node(c, 0), m));
}

static bool c_squeeze(ox_ctx *c)
{
    int64_t *ax;
    int n;
    if (!get_axes(c, 1, &ax, &n)) return false;
    ox_val *xv = ox_in(c, 0);
    if (xv && xv->sym && xv->symrank == 1 && xv->nsym == 1) { /* [n] -> n */
        ox_out_sym(c, 0, xv->sym, 1, 0, xv->symdt);
        return true;
    }
    rx_attr *m = ox_amap(c);
    if (n >= 0) ox_aset(c, m, "axis", ox_aints(c, ax, n));
    return ox_out_node(c, 0, call1(c, "squeeze", ox_node(c, xv), m));
}

static bool c_unsqueeze(ox_ctx *c)
{
    int64_t *ax;
    int n;
    if (!get_axes(c, 1, &ax, &n)) return false;
    if (n < 0) {
        ox_err(c, "needs axes");
        return false;
    }
    ox_val *xv = ox_in(c, 0);
    if (xv && xv->sym && xv->symrank == 0 && n == 1) { /* n -> [n] */
        ox_out_sym(c, 0, xv->sym, 1, 1, xv->symdt);
        return true;
    }
    rx_node *x = ox_node(c, xv);
    int nd = ndim_of(x);
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
    return ox_out_node(c, 0, call1(c, "expand_dims", x, m));
}

static bool c_concat(ox_ctx *c)
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
    rx_sinfo **si = RX_NEWN(c->a, rx_sinfo *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        fs[i] = in_node(c, i);
        if (!fs[i]) return false;
        si[i] = fs[i]->sinfo;
    }
    rx_node *t = rx_n_tuple(c->m, fs, n);
    t->sinfo = rx_si_tuple(c->a, si, n);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, axis));
    return ox_out_node(c, 0, ox_call(c, "concat", &t, 1, m));
}

static bool c_gather(ox_ctx *c)
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
    int nd = ndim_of(x);
    if (!x) return false;
    if (nd < 0) {
        ox_err(c, "the input's rank must be known");
        return false;
    }
    int ax = norm_axis(c, axis, nd);
    if (ax < 0) return false;
    rx_node *in = ox_node(c, iv);
    if (!in) return false;
    /* negative constant indices count from the end of a literal dim */
    rx_const *ik = ox_const(c, iv);
    int64_t dv;
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

/* Slice: starts/ends/axes/steps as inputs (opset >= 10) or attributes. */
static bool c_slice(ox_ctx *c)
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
        for (int i = 0; i < ns; i++) st[i] = lit(c, s[i]);
        for (int i = 0; i < ne; i++) en[i] = lit(c, e[i]);
        if (!get_axes(c, 99, &ax, &na)) return false;
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
    if (xv && xv->sym && xv->symrank == 1 && ns == 1 && (na < 0 || ax[0] == 0 || ax[0] == -1)) {
        int64_t s, e, step = nst >= 0 ? steps[0] : 1, len = xv->nsym;
        if (step == 1 && rx_expr_is_const(simp(c, st[0]), &s) && rx_expr_is_const(simp(c, en[0]), &e)) {
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
    if (!need_dims(c, x)) return false;
    int nd = x->sinfo->ndim;
    int64_t *axes = RX_NEWN(c->a, int64_t, ns ? ns : 1);
    rx_expr **b = RX_NEWN(c->a, rx_expr *, ns ? ns : 1), **e = RX_NEWN(c->a, rx_expr *, ns ? ns : 1);
    rx_expr **sd = RX_NEWN(c->a, rx_expr *, ns ? ns : 1);
    for (int i = 0; i < ns; i++) {
        int a = norm_axis(c, na >= 0 ? ax[i] : i, nd);
        if (a < 0) return false;
        axes[i] = a;
        int64_t step = nst >= 0 ? steps[i] : 1, dv, bv, ev;
        if (step == 0) {
            ox_err(c, "step %d is 0", i);
            return false;
        }
        sd[i] = lit(c, step);
        rx_expr *dim = x->sinfo->dims[a];
        b[i] = simp(c, st[i]);
        e[i] = simp(c, en[i]);
        bool litdim = rx_expr_is_const(dim, &dv);
        /* symbolic extent: negative bounds count from it, huge ends are the extent */
        if (!litdim && rx_expr_is_const(b[i], &bv) && bv < 0 && step > 0)
            b[i] = simp(c, rx_e_binary(c->a, RX_E_ADD, dim, b[i]));
        if (!litdim && rx_expr_is_const(e[i], &ev) && step > 0) {
            if (ev >= (INT64_C(1) << 40)) e[i] = dim;
            else if (ev < 0) e[i] = simp(c, rx_e_binary(c->a, RX_E_ADD, dim, e[i]));
        }
        if (litdim && rx_expr_is_const(e[i], &ev) && ev > dv) e[i] = lit(c, dv);
        if (litdim && rx_expr_is_const(e[i], &ev) && ev < -dv - 1) e[i] = lit(c, -dv - 1);
        if (litdim && rx_expr_is_const(b[i], &bv) && bv > dv) b[i] = lit(c, dv);
        if (litdim && rx_expr_is_const(b[i], &bv) && bv < -dv - 1) b[i] = lit(c, -dv - 1);
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, ns));
    ox_aset(c, m, "begin", ox_aexprs(c, b, ns));
    ox_aset(c, m, "end", ox_aexprs(c, e, ns));
    ox_aset(c, m, "strides", ox_aexprs(c, sd, ns));
    return ox_out_node(c, 0, call1(c, "strided_slice", x, m));
}

static bool c_split(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    if (!need_dims(c, x)) return false;
    int nd = x->sinfo->ndim, nout = ox_nout(c);
    int ax = norm_axis(c, ox_attr_i(c, "axis", 0), nd);
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
        int64_t *ind = RX_NEWN(c->a, int64_t, nsz ? nsz : 1), acc = 0;
        for (int i = 0; i + 1 < nsz; i++) ind[i] = acc += sizes[i];
        ox_aset(c, m, "indices_or_sections", ox_aints(c, ind, nsz - 1));
    } else {
        ox_aset(c, m, "indices_or_sections", ox_aint(c, nout));
    }
    rx_node *t = call1(c, "split", x, m);
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

static bool c_expand(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    rx_expr **t;
    int n;
    if (!ox_syms(c, ox_in(c, 1), &t, &n)) {
        ox_err(c, "the target shape must be computable at compile time");
        return false;
    }
    if (!need_dims(c, x)) return false;
    int nd = x->sinfo->ndim, r = n > nd ? n : nd;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, r ? r : 1);
    for (int i = 0; i < r; i++) { /* bidirectional: 1 on either side takes the other */
        int xi = i - (r - nd), ti = i - (r - n);
        rx_expr *a = xi >= 0 ? x->sinfo->dims[xi] : NULL, *b = ti >= 0 ? simp(c, t[ti]) : NULL;
        d[i] = !a ? b : !b ? a : rx_expr_is_int(b, 1) ? a : b;
    }
    return ox_out_node(c, 0, call2(c, "broadcast_to", x, shape_node(c, d, r)));
}

static bool c_tile(ox_ctx *c)
{
    int64_t *rep;
    int n;
    if (!ox_ints(c, ox_in(c, 1), &rep, &n)) {
        ox_err(c, "repeats must be a constant");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "repeats", ox_aints(c, rep, n));
    return ox_out_node(c, 0, call1(c, "tile", in_node(c, 0), m));
}

static bool c_trilu(ox_ctx *c)
{
    int64_t *k = NULL;
    int n = 0;
    if (ox_in(c, 1) && (!ox_ints(c, ox_in(c, 1), &k, &n) || n != 1)) {
        ox_err(c, "k must be a constant scalar");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "k", ox_aint(c, k ? k[0] : 0));
    return ox_out_node(c, 0, call1(c, ox_attr_i(c, "upper", 1) ? "triu" : "tril", in_node(c, 0), m));
}

static bool c_constant_of_shape(ox_ctx *c)
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
        literal = rx_expr_is_const(simp(c, t[i]), &dims[i]);
        if (literal) total *= dims[i];
        if (total > 4096) literal = false;
    }
    if (literal) { /* small and static: fold (it often feeds shape arithmetic) */
        rx_const *k = ox_new_const(c, dt, n, dims);
        size_t es = (size_t)(rx_dtype_bits(dt) + 7) / 8;
        for (int64_t i = 0; val && i < total; i++) memcpy(k->data + (size_t)i * es, val->data, es);
        ox_val *v = ox_find(c, c->node->output[0]);
        if (!v) v = ox_define(c, c->node->output[0]);
        v->k = k;
        return true;
    }
    rx_node *fill = val ? ox_scalar(c, dt, ox_cf(val, 0)) : ox_scalar(c, dt, 0);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *a[2] = {shape_node(c, t, n), fill};
    return ox_out_node(c, 0, ox_call(c, "full", a, 2, m));
}

static bool c_range(ox_ctx *c)
{
    rx_expr *v[3];
    rx_dtype dt = RX_DT_UNKNOWN;
    for (int i = 0; i < 3; i++) {
        ox_val *x = ox_in(c, i);
        rx_expr **s;
        int n;
        if (!x || !ox_syms(c, x, &s, &n) || n != 1) {
            ox_err(c, "start, limit and delta must be integer scalars computable at compile "
                   "time");
            return false;
        }
        v[i] = simp(c, s[0]);
        dt = x->symdt;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "start", ox_aexprs(c, &v[0], 1)->u.arr.items[0]);
    ox_aset(c, m, "end", ox_aexprs(c, &v[1], 1)->u.arr.items[0]);
    ox_aset(c, m, "step", ox_aexprs(c, &v[2], 1)->u.arr.items[0]);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_out_node(c, 0, ox_call(c, "arange", NULL, 0, m));
}

/* ---------------------------------------------------------------- reductions */

static bool c_reduce(ox_ctx *c)
{
    const char *t = c->node->op_type;
    const char *op = !strcmp(t, "ReduceMean") ? "mean" : !strcmp(t, "ReduceMax") ? "max"
                   : !strcmp(t, "ReduceMin") ? "min" : !strcmp(t, "ReduceProd") ? "prod" : "sum";
    int64_t *ax;
    int n;
    if (!get_axes(c, 1, &ax, &n)) return false;
    rx_node *x = in_node(c, 0);
    if (!x) return false;
    /* the composite reductions: a prologue before sum, an epilogue after */
    const char *pre = !strcmp(t, "ReduceL1") ? "abs" : !strcmp(t, "ReduceLogSumExp") ? "exp" : NULL;
    const char *post = !strcmp(t, "ReduceL2") ? "sqrt"
                     : !strcmp(t, "ReduceLogSum") || !strcmp(t, "ReduceLogSumExp") ? "log" : NULL;
    if (pre) x = call1(c, pre, x, NULL);
    if (!strcmp(t, "ReduceL2") || !strcmp(t, "ReduceSumSquare")) x = call2(c, "multiply", x, x);
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
    rx_node *y = call1(c, op, x, m);
    if (y && post) y = call1(c, post, y, NULL);
    return ox_out_node(c, 0, y);
}

static bool c_argreduce(ox_ctx *c)
{
    if (ox_attr_i(c, "select_last_index", 0)) {
        ox_err(c, "select_last_index = 1 is not supported");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, ox_attr_i(c, "axis", 0)));
    ox_aset(c, m, "keepdims", ox_abool(c, ox_attr_i(c, "keepdims", 1) != 0));
    return ox_out_node(c, 0, call1(c, !strcmp(c->node->op_type, "ArgMax") ? "argmax" : "argmin",
                                   in_node(c, 0), m));
}

/* ---------------------------------------------------------------- nn */

static bool c_layer_norm(ox_ctx *c)
{
    rx_node *x = in_node(c, 0), *g = in_node(c, 1);
    int nd = ndim_of(x);
    if (!x || !g) return false;
    int ax = norm_axis(c, ox_attr_i(c, "axis", -1), nd > 0 ? nd : 1);
    if (ax < 0) return false;
    int64_t *axes = RX_NEWN(c->a, int64_t, nd);
    for (int i = ax; i < nd; i++) axes[i - ax] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, axes, nd - ax));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-5)));
    rx_node *b = ox_in(c, 2) ? in_node(c, 2) : g;
    if (!ox_in(c, 2)) ox_aset(c, m, "center", ox_abool(c, false));
    rx_node *a[3] = {x, g, b};
    if (!ox_out_node(c, 0, ox_call(c, "nn.layer_norm", a, 3, m))) return false;
    if (ox_nout(c) > 1) { /* Mean and InvStdDev, reduced dims kept as 1 */
        rx_attr *r = ox_amap(c);
        ox_aset(c, r, "axis", ox_aints(c, axes, nd - ax));
        ox_aset(c, r, "keepdims", ox_abool(c, true));
        rx_node *mean = call1(c, "mean", x, r), *dx = call2(c, "subtract", x, mean);
        rx_node *var = call1(c, "mean", call2(c, "multiply", dx, dx), r);
        rx_node *inv = call1(c, "rsqrt", call2(c, "add", var, ox_scalar(c, dtype_of(x),
                                                        ox_attr_f(c, "epsilon", 1e-5))), NULL);
        if (*c->node->output[1] && !ox_out_node(c, 1, mean)) return false;
        if (ox_nout(c) > 2 && *c->node->output[2] && !ox_out_node(c, 2, inv)) return false;
    }
    return true;
}

static bool c_batch_norm(ox_ctx *c)
{
    if (ox_nout(c) > 1 || ox_attr_i(c, "training_mode", 0)) {
        ox_err(c, "training mode is not supported (inference only)");
        return false;
    }
    rx_node *a[5];
    for (int i = 0; i < 5; i++) a[i] = in_node(c, i);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    ox_aset(c, m, "epsilon", ox_afloat(c, ox_attr_f(c, "epsilon", 1e-5)));
    rx_node *t = ox_call(c, "nn.batch_norm", a, 5, m);
    if (!t) return false;
    rx_node *g = rx_n_get_item(c->m, t, 0);
    g->sinfo = t->sinfo->fields[0];
    rx_node *v = rx_n_var(c->m, "bn", g->sinfo, true);
    rx_binding b = {v, g, NULL, false, 0};
    RX_VEC_PUSH(c->binds, b);
    return ox_out_node(c, 0, v);
}

/* Pads of a 2-d window op: explicit pads, or auto_pad from literal input dims. */
static bool window_pads(ox_ctx *c, const rx_node *x, const int64_t *k, const int64_t *s,
                        const int64_t *dil, int64_t pads[4])
{
    int np;
    const int64_t *p = ox_attr_ints(c, "pads", &np);
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    memset(pads, 0, 4 * sizeof *pads);
    if (np >= 0) {
        if (np != 4) {
            ox_err(c, "pads must have 4 values for a 2-d window");
            return false;
        }
        memcpy(pads, p, 4 * sizeof *pads);
    }
    if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) return true;
    if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) {
        ox_err(c, "auto_pad '%s' is not supported", ap);
        return false;
    }
    for (int i = 0; i < 2; i++) {
        int64_t in;
        if (!rx_expr_is_const(x->sinfo->dims[2 + i], &in)) {
            ox_err(c, "auto_pad %s needs literal spatial dims", ap);
            return false;
        }
        int64_t out = (in + s[i] - 1) / s[i];
        int64_t total = (out - 1) * s[i] + (k[i] - 1) * dil[i] + 1 - in;
        if (total < 0) total = 0;
        int64_t small = total / 2, big = total - small;
        bool upper = !strcmp(ap, "SAME_UPPER");
        pads[i] = upper ? small : big;
        pads[2 + i] = upper ? big : small;
    }
    return true;
}

static bool ints2(ox_ctx *c, const char *name, int64_t dflt, int64_t out[2])
{
    int n;
    const int64_t *v = ox_attr_ints(c, name, &n);
    if (n < 0) {
        out[0] = out[1] = dflt;
        return true;
    }
    if (n != 2) {
        ox_err(c, "%s must have 2 values (only 2-d windows are supported)", name);
        return false;
    }
    out[0] = v[0];
    out[1] = v[1];
    return true;
}

static bool c_conv(ox_ctx *c)
{
    rx_node *x = in_node(c, 0), *w = in_node(c, 1);
    if (!need_dims(c, x) || !need_dims(c, w)) return false;
    if (x->sinfo->ndim != 4 || w->sinfo->ndim != 4) {
        ox_err(c, "only 2-d convolution (4-d input and weight) is supported");
        return false;
    }
    int64_t k[2], s[2], dil[2], pads[4];
    k[0] = k[1] = 1;
    rx_expr_is_const(w->sinfo->dims[2], &k[0]);
    rx_expr_is_const(w->sinfo->dims[3], &k[1]);
    if (!ints2(c, "strides", 1, s) || !ints2(c, "dilations", 1, dil) ||
        !window_pads(c, x, k, s, dil, pads))
        return false;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    ox_aset(c, m, "padding", ox_aints(c, pads, 4));
    ox_aset(c, m, "dilation", ox_aints(c, dil, 2));
    ox_aset(c, m, "groups", ox_aint(c, ox_attr_i(c, "group", 1)));
    rx_node *a[2] = {x, w};
    rx_node *y = ox_call(c, "nn.conv2d", a, 2, m);
    if (y && ox_in(c, 2)) {
        rx_expr *d[4] = {lit(c, 1), w->sinfo->dims[0], lit(c, 1), lit(c, 1)};
        y = call2(c, "add", y, reshape(c, in_node(c, 2), d, 4));
    }
    return ox_out_node(c, 0, y);
}

static bool c_pool(ox_ctx *c)
{
    bool maxp = !strcmp(c->node->op_type, "MaxPool");
    rx_node *x = in_node(c, 0);
    if (!need_dims(c, x)) return false;
    if (x->sinfo->ndim != 4) {
        ox_err(c, "only 2-d pooling (4-d input) is supported");
        return false;
    }
    if (ox_nout(c) > 1) {
        ox_err(c, "the Indices output is not supported");
        return false;
    }
    if (ox_attr_i(c, "storage_order", 0)) {
        ox_err(c, "storage_order = 1 is not supported");
        return false;
    }
    int64_t k[2], s[2], dil[2], pads[4];
    if (!ints2(c, "kernel_shape", 0, k) || !ints2(c, "strides", 1, s) ||
        !ints2(c, "dilations", 1, dil) || !window_pads(c, x, k, s, dil, pads))
        return false;
    if (k[0] <= 0 || k[1] <= 0) {
        ox_err(c, "needs kernel_shape");
        return false;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "pool_size", ox_aints(c, k, 2));
    ox_aset(c, m, "strides", ox_aints(c, s, 2));
    ox_aset(c, m, "padding", ox_aints(c, pads, 4));
    ox_aset(c, m, "dilation", ox_aints(c, dil, 2));
    ox_aset(c, m, "ceil_mode", ox_abool(c, ox_attr_i(c, "ceil_mode", 0) != 0));
    if (!maxp)
        ox_aset(c, m, "count_include_pad", ox_abool(c, ox_attr_i(c, "count_include_pad", 0) != 0));
    return ox_out_node(c, 0, call1(c, maxp ? "nn.max_pool2d" : "nn.avg_pool2d", x, m));
}

static bool c_global_pool(ox_ctx *c)
{
    rx_node *x = in_node(c, 0);
    int nd = ndim_of(x);
    if (!x) return false;
    if (nd < 3) {
        ox_err(c, "needs an input of rank 3 or more");
        return false;
    }
    if (!strcmp(c->node->op_type, "GlobalAveragePool") && nd == 4) {
        rx_attr *m = ox_amap(c);
        int64_t one[2] = {1, 1};
        ox_aset(c, m, "output_size", ox_aints(c, one, 2));
        return ox_out_node(c, 0, call1(c, "nn.adaptive_avg_pool2d", x, m));
    }
    int64_t *ax = RX_NEWN(c->a, int64_t, nd);
    for (int i = 2; i < nd; i++) ax[i - 2] = i;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, ax, nd - 2));
    ox_aset(c, m, "keepdims", ox_abool(c, true));
    return ox_out_node(c, 0, call1(c, !strcmp(c->node->op_type, "GlobalMaxPool") ? "max" : "mean",
                                   x, m));
}

/* ---------------------------------------------------------------- the table */

#define UNARY(t) {t, c_unary, ""}
#define BINARY(t) {t, c_binary, ""}

static const ox_opdef ops[] = {
    UNARY("Relu"), UNARY("Sigmoid"), UNARY("Tanh"), UNARY("Exp"), UNARY("Log"), UNARY("Sqrt"),
    UNARY("Abs"), UNARY("Neg"), UNARY("Erf"), UNARY("Floor"), UNARY("Ceil"), UNARY("Sin"),
    UNARY("Cos"), UNARY("Not"), UNARY("Sign"), UNARY("Round"),
    BINARY("Add"), BINARY("Sub"), BINARY("Mul"), BINARY("Div"), BINARY("Pow"), BINARY("Equal"),
    BINARY("Less"), BINARY("Greater"), BINARY("LessOrEqual"), BINARY("GreaterOrEqual"),
    BINARY("And"), BINARY("Or"),
    {"Max", c_variadic, ""}, {"Min", c_variadic, ""}, {"Sum", c_variadic, ""},
    {"Mean", c_variadic, ""},
    {"Identity", c_identity, ""}, {"Dropout", c_identity, "seed,ratio"},
    {"Where", c_where, ""}, {"Cast", c_cast, "to,saturate"}, {"Clip", c_clip, "min,max"},
    {"LeakyRelu", c_activation, "alpha"}, {"PRelu", c_activation, ""},
    {"Elu", c_activation, "alpha"}, {"Selu", c_activation, "alpha,gamma"},
    {"HardSigmoid", c_activation, "alpha,beta"}, {"HardSwish", c_activation, ""},
    {"Softplus", c_activation, ""}, {"Softsign", c_activation, ""},
    {"Reciprocal", c_activation, ""}, {"ThresholdedRelu", c_activation, "alpha"},
    {"MatMul", c_matmul, ""}, {"Gemm", c_gemm, "alpha,beta,transA,transB"},
    {"Softmax", c_softmax, "axis"}, {"LogSoftmax", c_softmax, "axis"},
    {"Shape", c_shape, "start,end"}, {"Size", c_size, ""},
    {"Constant", c_constant, "value,value_float,value_int,value_floats,value_ints"},
    {"Reshape", c_reshape, "allowzero"}, {"Flatten", c_flatten, "axis"},
    {"Transpose", c_transpose, "perm"}, {"Squeeze", c_squeeze, "axes"},
    {"Unsqueeze", c_unsqueeze, "axes"}, {"Concat", c_concat, "axis"},
    {"Gather", c_gather, "axis"}, {"Slice", c_slice, "starts,ends,axes"},
    {"Split", c_split, "axis,split"}, {"Expand", c_expand, ""}, {"Tile", c_tile, ""},
    {"Trilu", c_trilu, "upper"}, {"ConstantOfShape", c_constant_of_shape, "value"},
    {"Range", c_range, ""},
    {"ReduceMean", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceSum", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMax", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMin", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceProd", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceL1", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceL2", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceLogSum", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceLogSumExp", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceSumSquare", c_reduce, "axes,keepdims,noop_with_empty_axes"},
    {"Xor", c_binary, ""}, {"Tan", c_activation, ""}, {"Mod", c_mod, "fmod"},
    {"CastLike", c_cast, "saturate"}, {"IsNaN", c_activation, ""},
    {"ArgMax", c_argreduce, "axis,keepdims,select_last_index"},
    {"ArgMin", c_argreduce, "axis,keepdims,select_last_index"},
    {"LayerNormalization", c_layer_norm, "axis,epsilon,stash_type"},
    {"BatchNormalization", c_batch_norm, "epsilon,momentum,training_mode,spatial"},
    {"Conv", c_conv, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"MaxPool", c_pool, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides"},
    {"AveragePool", c_pool, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides"},
    {"GlobalAveragePool", c_global_pool, ""}, {"GlobalMaxPool", c_global_pool, ""},
};

const ox_opdef *ox_op_find(const char *op_type)
{
    for (int i = 0; i < RX_COUNTOF(ops); i++)
        if (!strcmp(ops[i].op_type, op_type)) return &ops[i];
    return NULL;
}
