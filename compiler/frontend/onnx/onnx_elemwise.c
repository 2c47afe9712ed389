/*
 * onnx_elemwise.c — the ONNX importer's elementwise and linear-algebra converters
 * (the mapping table is onnx_ops.c's essay): unary and binary math, variadic Max Min
 * Sum Mean, Where, Cast, Mod, Clip, the composite activations, MatMul, Gemm, Softmax.
 * Integer binary ops, Neg and Where on values known symbolically (shape arithmetic)
 * fold on their elements instead of emitting ops.
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* Folds a binary integer op on symbolic elements with broadcasting. */
static bool fold_binary(ox_ctx *c, rx_ekind k, rx_dtype dt)
{
    ox_val *x = ox_in(c, 0), *y = ox_in(c, 1);
    if (!x || !y) return false;
    /* two constants fold when the result is exact (Add Sub Mul of small integer tensors:
     * a loop's iteration number + 1 as a Slice bound) */
    bool consts = x->k && y->k && (k == RX_E_ADD || k == RX_E_SUB || k == RX_E_MUL);
    if (!x->sym && !y->sym && !consts) return false;
    rx_expr **xs, **ys;
    int nx, ny;
    if (!ox_syms(c, x, &xs, &nx) || !ox_syms(c, y, &ys, &ny)) return false;
    if (nx != ny && nx != 1 && ny != 1) return false;
    int n = nx > ny ? nx : ny;
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        rx_expr *a = xs[nx == 1 ? 0 : i], *b = ys[ny == 1 ? 0 : i];
        if (k == RX_E_EQ) {
            if (rx_arith_prove_equal(c->ar, a, b)) r[i] = ox_lit(c, 1);
            else if (rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_NE, a, b))) r[i] = ox_lit(c, 0);
            else return false;
        } else {
            r[i] = rx_e_binary(c->a, k, a, b);
        }
    }
    int rank = x->symrank > y->symrank ? x->symrank : y->symrank;
    ox_out_sym(c, 0, r, n, rank, dt);
    return true;
}

/* Float values known exactly: the exporters before opset 11 write interpolate(size=...)
 * as Upsample / Resize-10 with scales = Cast(sizes, float) / Cast(Shape(x)[2:], float),
 * concatenated after the constant scales of N and C; the elements stay expressions
 * (ratios RX_E_DIV of the integer ones) beside the emitted ops, so that the Resize sees
 * sizes / extents (ox_c_resize). */
bool ox_fvec(ox_ctx *c, ox_val *v, rx_expr ***out, int *n)
{
    if (!v) return false;
    if (v->fvec || v->fsym) {
        *out = v->fvec ? v->fvec : &v->fsym;
        *n = v->fvec ? v->nfvec : 1;
        return true;
    }
    if (!v->k || !rx_dtype_is_float(v->k->dtype) || v->k->ndim > 1 || ox_numel(v->k) > 16) return false;
    int64_t cnt = ox_numel(v->k);
    rx_expr **r = RX_NEWN(c->a, rx_expr *, cnt ? cnt : 1);
    for (int64_t i = 0; i < cnt; i++) {
        double f = ox_cf(v->k, i);
        if (!(f > -1e15 && f < 1e15) || f != (double)(int64_t)f) return false;
        r[i] = ox_lit(c, (int64_t)f);
    }
    *out = r;
    *n = (int)cnt;
    return true;
}

void ox_set_fvec(ox_ctx *c, int i, rx_expr **e, int n)
{
    ox_val *v = (size_t)i < c->node->n_output ? ox_find(c, c->node->output[i]) : NULL;
    if (v) {
        v->fvec = e;
        v->nfvec = n;
    }
}

/* Div of two known float vectors: their ratios (a symbolic sizes / extents scale). */
static void fvec_div(ox_ctx *c)
{
    ox_val *x = ox_in(c, 0), *y = ox_in(c, 1);
    rx_expr **xs, **ys;
    int nx, ny;
    if (!x || !y || !(x->fvec || y->fvec) || !ox_fvec(c, x, &xs, &nx) || !ox_fvec(c, y, &ys, &ny) ||
        (nx != ny && nx != 1 && ny != 1))
        return;
    int n = nx > ny ? nx : ny;
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1);
    for (int i = 0; i < n; i++) r[i] = rx_e_binary(c->a, RX_E_DIV, xs[nx == 1 ? 0 : i], ys[ny == 1 ? 0 : i]);
    ox_set_fvec(c, 0, r, n);
}

/* ---------------------------------------------------------------- elementwise */

static const struct { const char *onnx, *relax; } unary_map[] = {
    {"Relu", "nn.relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},
    {"Log", "log"}, {"Sqrt", "sqrt"}, {"Abs", "abs"}, {"Neg", "negative"}, {"Erf", "erf"},
    {"Floor", "floor"}, {"Ceil", "ceil"}, {"Sin", "sin"}, {"Cos", "cos"},
    {"Not", "logical_not"}, {"Sign", "sign"}, {"Round", "round"},
};

bool ox_c_unary(ox_ctx *c)
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
            return ox_out_node(c, 0, ox_call1(c, unary_map[i].relax, ox_in_node(c, 0), NULL));
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

/* Opsets before 7: with broadcast = 1 and `axis`, b's dims line up with a's from axis
 * on; trailing 1s make that NumPy's right-aligned broadcasting. */
static rx_node *legacy_broadcast(ox_ctx *c, rx_node *a, rx_node *b)
{
    int na = ox_ndim(a), nb = ox_ndim(b);
    if (!ox_need_dims(c, b) || na < 0) return NULL;
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", 0), na > 0 ? na : 1);
    if (ax < 0) return NULL;
    if (ax + nb > na) {
        ox_err(c, "axis %d and the second input's rank %d do not fit the first's rank %d", ax, nb, na);
        return NULL;
    }
    if (ax + nb == na) return b;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, na - ax);
    for (int i = 0; i < na - ax; i++) d[i] = i < nb ? b->sinfo->dims[i] : ox_lit(c, 1);
    return ox_reshape(c, b, d, na - ax);
}

bool ox_c_binary(ox_ctx *c)
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
    if (ox_attr_i(c, "broadcast", 0) && ox_attr(c, "axis") && !(b = legacy_broadcast(c, a, b)))
        return false;
    if (!strcmp(c->node->op_type, "Pow") && ox_dtype_of(a) != ox_dtype_of(b)) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(ox_dtype_of(a))));
        b = ox_call1(c, "astype", b, m);
    }
    rx_node *ab[2] = {a, b};
    ox_unify_bcast(c, ab, 2, -1);
    if (!ox_out_node(c, 0, ox_call2(c, binary_map[i].relax, ab[0], ab[1]))) return false;
    if (binary_map[i].fold == RX_E_FLOORDIV && rx_dtype_is_float(ox_dtype_of(a))) fvec_div(c);
    return true;
}

/* Max Min Sum Mean: a chain of the binary op over the inputs. */
bool ox_c_variadic(ox_ctx *c)
{
    const char *t = c->node->op_type;
    const char *op = !strcmp(t, "Max") ? "maximum" : !strcmp(t, "Min") ? "minimum" : "add";
    int n = ox_nin(c);
    if (n < 1) {
        ox_err(c, "needs at least one input");
        return false;
    }
    rx_node *acc = ox_in_node(c, 0);
    for (int i = 1; i < n && acc; i++) acc = ox_call2(c, op, acc, ox_in_node(c, i));
    if (acc && !strcmp(t, "Mean") && n > 1)
        acc = ox_call2(c, "divide", acc, ox_scalar(c, ox_dtype_of(acc), n));
    return ox_out_node(c, 0, acc);
}

bool ox_c_identity(ox_ctx *c)
{
    bool drop = !strcmp(c->node->op_type, "Dropout");
    if (drop && ox_in(c, 2)) { /* training_mode: a constant false, or a ratio of 0 */
        int64_t *tm;
        int n;
        rx_const *r = ox_in(c, 1) ? ox_const(c, ox_in(c, 1)) : NULL;
        bool keep_all = r && ox_numel(r) == 1 && ox_cf(r, 0) == 0;
        if (!ox_ints(c, ox_in(c, 2), &tm, &n) || n != 1 || (tm[0] && !keep_all)) {
            ox_err(c, "training_mode must be a constant false, or the ratio a constant 0 "
                   "(random masks are not supported)");
            return false;
        }
    }
    ox_out_alias(c, 0, ox_in(c, 0));
    if (drop && ox_nout(c) > 1 && *c->node->output[1]) { /* the mask: all true */
        rx_node *x = ox_in_node(c, 0);
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "dtype", ox_astr(c, "bool"));
        return ox_out_node(c, 1, ox_call1(c, "ones_like", x, m));
    }
    return true;
}

bool ox_c_where(ox_ctx *c)
{
    ox_val *cv = ox_in(c, 0), *x = ox_in(c, 1), *y = ox_in(c, 2);
    rx_expr **cs, **xs, **ys;
    int nc, nx, ny;
    /* integer vectors known at compile time (PyTorch's repeat_interleave picks a shape
     * entry with Where(Equal(...), ones, sizes) on constants) fold like shape values */
    bool known_ints = x && y && x->k && y->k && !rx_dtype_is_float(x->k->dtype) &&
                      !rx_dtype_is_float(y->k->dtype) && cv && (cv->k || cv->sym);
    if ((x && x->sym) || (y && y->sym) || known_ints) {
        if (ox_syms(c, cv, &cs, &nc) && ox_syms(c, x, &xs, &nx) && ox_syms(c, y, &ys, &ny)) {
            int n = nc > nx ? nc : nx;
            n = n > ny ? n : ny;
            bool ok = (nc == n || nc == 1) && (nx == n || nx == 1) && (ny == n || ny == 1);
            rx_expr **r = RX_NEWN(c->a, rx_expr *, n ? n : 1);
            for (int i = 0; ok && i < n; i++) {
                int64_t b;
                if (!rx_expr_is_const(ox_simp(c, cs[nc == 1 ? 0 : i]), &b)) ok = false;
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
    ox_unify_bcast(c, a, 3, -1);
    return ox_out_node(c, 0, ox_call(c, "where", a, 3, NULL));
}

bool ox_c_cast(ox_ctx *c)
{
    rx_dtype dt = ox_dtype((int32_t)ox_attr_i(c, "to", 0));
    if (!strcmp(c->node->op_type, "CastLike")) {
        rx_node *like = ox_in_node(c, 1);
        if (!like) return false;
        dt = ox_dtype_of(like);
    }
    if (dt == RX_DT_UNKNOWN) {
        ox_err(c, "unsupported target type %lld", (long long)ox_attr_i(c, "to", 0));
        return false;
    }
    ox_val *x = ox_in(c, 0);
    if (x && x->sym && !rx_dtype_is_float(dt) && dt != RX_DT_BOOL) {
        if (x->symrank == 2) ox_out_sym2(c, 0, x->sym, x->nsym / x->symcols, x->symcols, dt);
        else ox_out_sym(c, 0, x->sym, x->nsym, x->symrank, dt);
        return true;
    }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    if (!ox_out_node(c, 0, ox_call1(c, "astype", ox_node(c, x), m))) return false;
    if (x && x->sym && x->symrank == 0 && x->nsym == 1 && rx_dtype_is_float(dt))
        ox_out_fsym(c, 0, x->sym[0]); /* the node stays the value; Range may read it */
    else if (x && x->sym && x->symrank == 1 && x->nsym <= 16 && rx_dtype_is_float(dt))
        ox_set_fvec(c, 0, x->sym, x->nsym); /* sizes as floats: Upsample-9's scales */
    return true;
}

/* Mod: fmod = 0 is the floor modulo (the divisor's sign), x - floor(x / y) * y; fmod = 1
 * truncates (the dividend's sign), x - trunc(x / y) * y. On integer shape values fmod = 0
 * folds (SAM pads to its window by (ws - h % ws) % ws). */
bool ox_c_mod(ox_ctx *c)
{
    ox_val *xv = ox_in(c, 0);
    rx_dtype sdt = xv && xv->sym ? xv->symdt : xv && xv->k ? xv->k->dtype : RX_DT_UNKNOWN;
    if (!ox_attr_i(c, "fmod", 0) && sdt != RX_DT_UNKNOWN && !rx_dtype_is_float(sdt) &&
        fold_binary(c, RX_E_FLOORMOD, sdt))
        return true;
    rx_node *x = ox_in_node(c, 0), *y = ox_in_node(c, 1);
    if (!x || !y) return false;
    bool fmod = ox_attr_i(c, "fmod", 0) != 0, flt = rx_dtype_is_float(ox_dtype_of(x));
    if (!fmod && flt) {
        ox_err(c, "fmod = 0 needs integer inputs");
        return false;
    }
    rx_node *q;
    if (!flt && !fmod) {
        q = ox_call2(c, "floor_divide", x, y);
    } else {
        rx_node *xf = x, *yf = y;
        if (!flt) {
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "dtype", ox_astr(c, "f64"));
            xf = ox_call1(c, "astype", x, m);
            yf = ox_call1(c, "astype", y, m);
        }
        rx_node *d = ox_call2(c, "divide", xf, yf);
        rx_node *w[3] = {ox_call2(c, "less", d, ox_scalar(c, ox_dtype_of(d), 0)),
                         ox_call1(c, "ceil", d, NULL), ox_call1(c, "floor", d, NULL)};
        q = ox_call(c, "where", w, 3, NULL);
        if (!flt && q) {
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(ox_dtype_of(x))));
            q = ox_call1(c, "astype", q, m);
        }
    }
    return ox_out_node(c, 0, ox_call2(c, "subtract", x, ox_call2(c, "multiply", q, y)));
}

/* Clip: maximum with min, minimum with max (ONNX's order: max wins when min > max). */
bool ox_c_clip(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = ox_dtype_of(x);
    rx_node *lo = NULL, *hi = NULL;
    if (c->opset < 11) {
        if (ox_attr(c, "min")) lo = ox_scalar(c, dt, ox_attr_f(c, "min", 0));
        if (ox_attr(c, "max")) hi = ox_scalar(c, dt, ox_attr_f(c, "max", 0));
    } else {
        if (ox_in(c, 1)) lo = ox_in_node(c, 1);
        if (ox_in(c, 2)) hi = ox_in_node(c, 2);
    }
    if (lo) x = ox_call2(c, "maximum", x, lo);
    if (hi && x) x = ox_call2(c, "minimum", x, hi);
    return ox_out_node(c, 0, x);
}

/* The activations that are compositions of elementwise ops. */
bool ox_c_activation(ox_ctx *c)
{
    const char *t = c->node->op_type;
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_dtype dt = ox_dtype_of(x);
    rx_node *zero = ox_scalar(c, dt, 0), *one = ox_scalar(c, dt, 1), *r = NULL;
    if (!strcmp(t, "LeakyRelu")) {
        rx_node *w[3] = {ox_call2(c, "greater", x, zero), x,
                         ox_call2(c, "multiply", x, ox_scalar(c, dt, ox_attr_f(c, "alpha", 0.01)))};
        r = ox_call(c, "where", w, 3, NULL);
    } else if (!strcmp(t, "PRelu")) {
        rx_node *slope = ox_in_node(c, 1);
        int nd = ox_ndim(x);
        if (!slope) return false;
        if (nd > 2 && ox_ndim(slope) == 1 && x->sinfo->dims && slope->sinfo->dims &&
            rx_arith_prove_equal(c->ar, slope->sinfo->dims[0], x->sinfo->dims[1]) &&
            !rx_arith_prove_equal(c->ar, slope->sinfo->dims[0], x->sinfo->dims[nd - 1])) {
            rx_expr **d = RX_NEWN(c->a, rx_expr *, nd - 1); /* a per-channel slope (C,) */
            for (int i = 0; i < nd - 1; i++) d[i] = i ? ox_lit(c, 1) : slope->sinfo->dims[0];
            slope = ox_reshape(c, slope, d, nd - 1);
        }
        rx_node *w[3] = {ox_call2(c, "less", x, zero), ox_call2(c, "multiply", x, slope), x};
        r = ox_call(c, "where", w, 3, NULL);
    } else if (!strcmp(t, "Elu") || !strcmp(t, "Selu")) {
        bool selu = !strcmp(t, "Selu");
        double alpha = ox_attr_f(c, "alpha", selu ? 1.67326319217681884765625 : 1.0);
        rx_node *neg = ox_call2(c, "multiply", ox_call2(c, "subtract", ox_call1(c, "exp", x, NULL), one),
                             ox_scalar(c, dt, alpha));
        rx_node *w[3] = {ox_call2(c, "greater", x, zero), x, neg};
        r = ox_call(c, "where", w, 3, NULL);
        if (selu && r)
            r = ox_call2(c, "multiply", r, ox_scalar(c, dt, ox_attr_f(c, "gamma",
                                                                     1.05070102214813232421875)));
    } else if (!strcmp(t, "HardSigmoid") || !strcmp(t, "HardSwish")) {
        bool sw = !strcmp(t, "HardSwish");
        double alpha = sw ? 1.0 / 6 : ox_attr_f(c, "alpha", 0.2);
        double beta = sw ? 0.5 : ox_attr_f(c, "beta", 0.5);
        r = ox_call2(c, "add", ox_call2(c, "multiply", x, ox_scalar(c, dt, alpha)), ox_scalar(c, dt, beta));
        r = ox_call2(c, "minimum", ox_call2(c, "maximum", r, zero), one);
        if (sw) r = ox_call2(c, "multiply", x, r);
    } else if (!strcmp(t, "Softplus")) {
        r = ox_call1(c, "log", ox_call2(c, "add", ox_call1(c, "exp", x, NULL), one), NULL);
    } else if (!strcmp(t, "Softsign")) {
        r = ox_call2(c, "divide", x, ox_call2(c, "add", ox_call1(c, "abs", x, NULL), one));
    } else if (!strcmp(t, "Reciprocal")) {
        r = ox_call2(c, "divide", one, x);
    } else if (!strcmp(t, "Tan")) {
        r = ox_call2(c, "divide", ox_call1(c, "sin", x, NULL), ox_call1(c, "cos", x, NULL));
    } else if (!strcmp(t, "IsNaN")) {
        r = ox_call2(c, "not_equal", x, x);
    } else if (!strcmp(t, "ThresholdedRelu")) {
        rx_node *w[3] = {ox_call2(c, "greater", x, ox_scalar(c, dt, ox_attr_f(c, "alpha", 1.0))), x,
                         zero};
        r = ox_call(c, "where", w, 3, NULL);
    }
    return ox_out_node(c, 0, r);
}

/* ---------------------------------------------------------------- linear algebra */

bool ox_c_matmul(ox_ctx *c)
{
    rx_node *q = ox_qdq_matmul(c); /* a QDQ model's 8-bit product (onnx_quant.c) */
    if (q) return ox_out_node(c, 0, q);
    return ox_out_node(c, 0, ox_call2(c, "matmul", ox_in_node(c, 0), ox_in_node(c, 1)));
}

bool ox_c_gemm(ox_ctx *c)
{
    rx_node *a = ox_in_node(c, 0), *b = ox_in_node(c, 1), *y = NULL;
    if (!a || !b) return false;
    if (!ox_attr_i(c, "transA", 0)) /* a QDQ model's 8-bit product (onnx_quant.c) */
        y = ox_qdq_product(c, ox_attr_i(c, "transB", 0) != 0);
    if (!y && ox_attr_i(c, "transA", 0)) a = ox_call1(c, "permute_dims", a, NULL);
    if (!y && ox_attr_i(c, "transB", 0)) b = ox_call1(c, "permute_dims", b, NULL);
    if (!y) y = ox_call2(c, "matmul", a, b);
    double alpha = ox_attr_f(c, "alpha", 1.0), beta = ox_attr_f(c, "beta", 1.0);
    if (y && alpha != 1.0) y = ox_call2(c, "multiply", y, ox_scalar(c, ox_dtype_of(y), alpha));
    if (y && ox_in(c, 2) && beta != 0.0) {
        rx_node *cc = ox_in_node(c, 2);
        if (cc && beta != 1.0) cc = ox_call2(c, "multiply", cc, ox_scalar(c, ox_dtype_of(y), beta));
        y = ox_call2(c, "add", y, cc);
    }
    return ox_out_node(c, 0, y);
}

bool ox_c_softmax(ox_ctx *c)
{
    const char *op = !strcmp(c->node->op_type, "Softmax") ? "nn.softmax" : "nn.log_softmax";
    rx_node *x = ox_in_node(c, 0);
    int nd = ox_ndim(x);
    if (nd < 0) {
        if (x) ox_err(c, "the input's rank must be known");
        return false;
    }
    int64_t axis = ox_attr_i(c, "axis", c->opset >= 13 ? -1 : 1);
    int ax = ox_norm_axis(c, axis, nd > 0 ? nd : 1);
    if (ax < 0) return false;
    if (c->opset >= 13 || ax == nd - 1 || nd == 0) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aint(c, nd ? ax : -1));
        return ox_out_node(c, 0, ox_call1(c, op, x, m));
    }
    /* opset < 13: the input is seen as 2-d [ox_prod(:axis), ox_prod(axis:)] */
    if (!ox_need_dims(c, x)) return false;
    rx_expr **d = x->sinfo->dims;
    rx_expr *two[2] = {ox_prod(c, d, 0, ax), ox_prod(c, d, ax, nd)};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    rx_node *y = ox_call1(c, op, ox_reshape(c, x, two, 2), m);
    return ox_out_node(c, 0, y ? ox_reshape(c, y, d, nd) : NULL);
}

