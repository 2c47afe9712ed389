/*
 * onnx_quant.c — the ONNX importer's linear quantization, as compositions (the
 * arithmetic of the ONNX reference, rounding half to even as `round`):
 *   QuantizeLinear     y = clip(round(x / scale) + zp, qmin, qmax) as zp's dtype (u8
 *                      without zp); scale and zp scalars or 1-d along `axis`
 *   DequantizeLinear   y = (x - zp) * scale in f32 (a constant when its operands are:
 *                      dequantize_const); each result is noted (ox_qdq) so that a MatMul
 *                      of an activation's by a weight's takes the 8-bit product
 *                      (ox_qdq_matmul, the QDQ format)
 *   DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255, zp =
 *                      clip(round(-min(0, min x) / scale), 0, 255), y as QuantizeLinear
 *   MatMulInteger      (a - a_zp) @ (b - b_zp) in i32 (a_zp per row, b_zp per column):
 *                      8-bit operands with a 2-d b as an 8-bit matmul into i32 (the
 *                      runtime's int8 GEMM rt.qmatmul on the CPU) and the zero points
 *                      as i32 corrections (int8_product); other 8-bit forms as exact
 *                      f32 blocks (blocked_product), else i32
 *   QLinearMatMul      round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale))
 *                      + y_zp, saturated to y_zp's dtype
 *   QLinearConv        the same around ConvInteger's i32 convolution plus the i32 bias
 *                      (w_scale per tensor or per output channel)
 */
#include <string.h>

#include "onnx_int.h"

/* A DequantizeLinear result a MatMul may take in 8 bits (ox_qdq_matmul): key is the
 * folded f32 constant of a weight (qk, sk, zk its quantized data, scale, zero point,
 * axis its normalized axis) or the result node of an activation's (q, s, z its input
 * nodes, zk z's constant if it is one). */
typedef struct ox_qdq {
    struct ox_qdq *next;
    const void *key;
    rx_node *q, *s, *z;
    const rx_const *qk, *sk, *zk;
    int axis;
} ox_qdq;

static void qdq_note(ox_ctx *c, const void *key, rx_node *q, rx_node *s, rx_node *z,
                     const rx_const *qk, const rx_const *sk, const rx_const *zk, int axis)
{
    ox_qdq *r = RX_NEW(c->a, ox_qdq);
    *r = (ox_qdq){c->qdq, key, q, s, z, qk, sk, zk, axis};
    c->qdq = r;
}

static const ox_qdq *qdq_find(const ox_ctx *c, const void *key)
{
    for (const ox_qdq *r = c->qdq; r; r = r->next)
        if (r->key == key) return r;
    return NULL;
}

/* v (a scalar or a 1-d tensor) shaped to broadcast along axis ax of a rank-nd tensor. */
static rx_node *along(ox_ctx *c, rx_node *v, int64_t axis, int nd)
{
    if (!v || ox_ndim(v) != 1 || nd <= 1) return v;
    int ax = ox_norm_axis(c, axis, nd);
    if (ax < 0 || !ox_need_dims(c, v)) return NULL;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == ax ? v->sinfo->dims[0] : ox_lit(c, 1);
    return ox_reshape(c, v, d, nd);
}

/* round(q) + zp saturated to dtype dt's range, as dt (q, zp f32). */
static rx_node *saturate(ox_ctx *c, rx_node *q, rx_node *zpf, rx_dtype dt)
{
    double lo = dt == RX_DT_U8 ? 0 : dt == RX_DT_I8 ? -128 : dt == RX_DT_U16 ? 0 : -32768;
    double hi = dt == RX_DT_U8 ? 255 : dt == RX_DT_I8 ? 127 : dt == RX_DT_U16 ? 65535 : 32767;
    if (dt == RX_DT_I32) {
        lo = -2147483648.0;
        hi = 2147483647.0;
    }
    rx_node *r = ox_call1(c, "round", q, NULL);
    if (zpf) r = ox_call2(c, "add", r, zpf);
    r = ox_call2(c, "minimum", ox_call2(c, "maximum", r, ox_scalar(c, RX_DT_F32, lo)),
                 ox_scalar(c, RX_DT_F32, hi));
    return ox_astype(c, r, dt);
}

static bool quant_dtype_ok(ox_ctx *c, rx_dtype dt)
{
    if (dt == RX_DT_U8 || dt == RX_DT_I8 || dt == RX_DT_U16 || dt == RX_DT_I16 || dt == RX_DT_I32)
        return true;
    ox_err(c, "quantized dtype %s is not supported (u8, i8, u16, i16, i32)", rx_dtype_name(dt));
    return false;
}

/* DequantizeLinear of constants (x, scale and zero point): the f32 result as a new
 * constant, as ONNX's reference computes it ((x - zp) * scale in f32), instead of a
 * kernel that dequantizes the weight on every call (the fold pass keeps a result four
 * times its 8-bit operand's bytes). A QDQ model's weights come this way. NULL when an
 * operand is not a constant. */
static rx_const *dequantize_const(ox_ctx *c, int64_t axis)
{
    rx_const *x = ox_const(c, ox_in(c, 0)), *s = ox_const(c, ox_in(c, 1));
    rx_const *z = ox_in(c, 2) ? ox_const(c, ox_in(c, 2)) : NULL;
    if (!x || !x->data || !s || !s->data || (ox_in(c, 2) && (!z || !z->data)) ||
        s->dtype != RX_DT_F32 || !rx_dtype_is_int(x->dtype))
        return NULL;
    int64_t n = (int64_t)(x->nbytes / ox_esize(x->dtype));
    int64_t ns = (int64_t)(s->nbytes / sizeof(float)), nz = z ? (int64_t)(z->nbytes / ox_esize(z->dtype)) : 0;
    int64_t inner = 1, len = 1;
    if (ns > 1) { /* per axis: element i's channel is (i / inner) % len */
        int ax = ox_norm_axis(c, axis, x->ndim);
        if (ax < 0) return NULL;
        len = x->shape[ax];
        for (int d = ax + 1; d < x->ndim; d++) inner *= x->shape[d];
        if (len != ns || (nz > 1 && nz != ns)) return NULL;
    }
    rx_const *k = ox_new_const(c, RX_DT_F32, x->ndim, x->shape);
    float *o = (float *)(void *)k->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = ns > 1 ? (i / inner) % len : 0;
        float zp = nz ? (float)ox_ci(z, nz > 1 ? ch : 0) : 0.0f;
        o[i] = ((float)ox_ci(x, i) - zp) * (float)ox_cf(s, ch);
    }
    return k;
}

/* The value var is bound to among the block's last RQ_SCAN bindings (a QuantizeLinear's
 * input is produced just before it in the exporters' order), or NULL. */
enum { RQ_SCAN = 64 };
static rx_node *recent_value(ox_ctx *c, const rx_node *var)
{
    for (int i = c->binds.n, k = 0; i > 0 && k < RQ_SCAN; i--, k++)
        if (c->binds.items[i - 1].var == var) return c->binds.items[i - 1].value;
    return NULL;
}

/* Whether nodes a and b (a constant, or a variable bound to one, or NULL) hold the same
 * bytes of the same dtype. */
static bool same_const_node(ox_ctx *c, rx_node *a, rx_node *b)
{
    if (!a || !b) return !a && !b;
    if (a == b) return true;
    if (a->kind == RX_N_VAR) a = recent_value(c, a);
    if (b && b->kind == RX_N_VAR) b = recent_value(c, b);
    if (!a || !b || a->kind != RX_N_CONST || b->kind != RX_N_CONST) return false;
    const rx_const *x = a->u.konst, *y = b->u.konst;
    return x->data && y->data && x->dtype == y->dtype && x->nbytes == y->nbytes &&
           !memcmp(x->data, y->data, x->nbytes);
}

/* QuantizeLinear(x, s, z) to qt where x is DequantizeLinear(q, s, z) of a qt tensor q
 * with the same scale and zero point, or a Concat of such: q (the concat of the q's)
 * itself. Exact: (q - z) s / s rounds back to q - z (|q - z| <= 255, two f32
 * roundings). What ONNX Runtime's QDQ propagation does; the 8-bit concat moves a quarter
 * of the f32 one's bytes. (A MaxPool commutes with the dequantization too, but an 8-bit
 * max pool runs as generated loops, 8x rt.pool2d's f32 time on ResNet-18's stem.) NULL
 * when x is none of these. */
static rx_node *requantized(ox_ctx *c, rx_node *x, rx_node *s, rx_node *zp, rx_dtype qt, int depth)
{
    const ox_qdq *r = x ? qdq_find(c, x) : NULL;
    if (r && r->q && ox_dtype_of(r->q) == qt && same_const_node(c, r->s, s) &&
        same_const_node(c, r->z, zp))
        return r->q;
    rx_node *v = x && x->kind == RX_N_VAR && depth == 0 ? recent_value(c, x) : NULL;
    if (!v || v->kind != RX_N_CALL || v->call_kind != RX_CALL_OP) return NULL;
    const rx_op *op = v->u.call.op;
    if (!strcmp(op->name, "concat") && v->nargs == 1 && v->args[0]->kind == RX_N_TUPLE) {
        const rx_node *t = v->args[0];
        int n = t->nargs;
        rx_node **qs = RX_NEWN(c->a, rx_node *, n > 0 ? n : 1);
        for (int i = 0; i < n; i++)
            if (!(qs[i] = requantized(c, t->args[i], s, zp, qt, depth + 1))) return NULL;
        return ox_concat(c, qs, n, rx_call_attr(v, "axis")->u.i);
    }
    return NULL;
}

bool ox_c_quantize(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0), *s = ox_in_node(c, 1);
    rx_node *zp = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
    if (!x || !s || (ox_in(c, 2) && !zp)) return false;
    int nd = ox_ndim(x);
    int64_t axis = ox_attr_i(c, "axis", 1);
    bool deq = !strcmp(c->node->op_type, "DequantizeLinear");
    rx_dtype qt = deq ? ox_dtype_of(x) : zp ? ox_dtype_of(zp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    s = along(c, ox_astype(c, s, RX_DT_F32), axis, nd);
    rx_node *zpf = zp ? along(c, ox_astype(c, zp, RX_DT_F32), axis, nd) : NULL;
    rx_const *folded = deq ? dequantize_const(c, axis) : NULL;
    if (folded) {
        rx_const *xk = ox_const(c, ox_in(c, 0));
        if ((xk->ndim == 2 || xk->ndim == 4) && axis >= -xk->ndim && axis < xk->ndim)
            qdq_note(c, folded, NULL, NULL, NULL, xk, ox_const(c, ox_in(c, 1)), /* a weight */
                     ox_in(c, 2) ? ox_const(c, ox_in(c, 2)) : NULL,
                     (int)(axis < 0 ? axis + xk->ndim : axis));
        ox_out_const(c, 0, folded);
        return true;
    }
    if (deq) {
        rx_node *raw_s = ox_in_node(c, 1), *raw_z = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
        const rx_const *zk = raw_z ? ox_const(c, ox_in(c, 2)) : NULL;
        rx_node *v = ox_astype(c, x, RX_DT_F32);
        if (zpf) v = ox_call2(c, "subtract", v, zpf);
        v = ox_call2(c, "multiply", v, s);
        if (v) qdq_note(c, v, x, raw_s, raw_z, NULL, NULL, zk, 0);
        return ox_out_node(c, 0, v);
    }
    rx_node *same = requantized(c, x, ox_in_node(c, 1), zp, qt, 0);
    if (same) return ox_out_node(c, 0, same);
    x = ox_astype(c, x, RX_DT_F32);
    return ox_out_node(c, 0, saturate(c, ox_call2(c, "divide", x, s), zpf, qt));
}

/* The min or max of all of x in two stages: along the last axis (a row reduction: the
 * rows in parallel, each over vector lanes), then of those. Order does not change a
 * min or max, and a whole-tensor reduction is one serial loop: a (128, 3072) min took
 * 2.2 ms where half the elements are zeros (a ReLU's output: the select's branch
 * mispredicted every other element), 0.1 ms otherwise. */
static rx_node *whole(ox_ctx *c, const char *op, rx_node *x)
{
    int nd = ox_ndim(x);
    if (nd >= 2) {
        int64_t last = nd - 1;
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aints(c, &last, 1));
        x = ox_call1(c, op, x, m);
    }
    return x ? ox_call1(c, op, x, NULL) : NULL;
}

bool ox_c_dynamic_quantize(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x) return false;
    rx_node *zero = ox_scalar(c, RX_DT_F32, 0);
    rx_node *lo = ox_call2(c, "minimum", whole(c, "min", x), zero);
    rx_node *hi = ox_call2(c, "maximum", whole(c, "max", x), zero);
    rx_node *s = ox_call2(c, "divide", ox_call2(c, "subtract", hi, lo), ox_scalar(c, RX_DT_F32, 255));
    rx_node *zp = saturate(c, ox_call2(c, "divide", ox_call1(c, "negative", lo, NULL), s), NULL, RX_DT_U8);
    rx_node *y = saturate(c, ox_call2(c, "divide", x, s), ox_astype(c, zp, RX_DT_F32), RX_DT_U8);
    return ox_out_node(c, 0, y) && (ox_nout(c) < 2 || ox_out_node(c, 1, s)) &&
           (ox_nout(c) < 3 || ox_out_node(c, 2, zp));
}

/* (v - zp) in dtype dt (i32, or f32 for the blocked product); zp along axis `ax` of v's
 * rank (a per-row or per-column zero point). */
static rx_node *centered(ox_ctx *c, rx_node *v, int zi, int ax, rx_dtype dt)
{
    v = ox_astype(c, v, dt);
    if (!v || !ox_in(c, zi)) return v;
    rx_node *zp = ox_astype(c, ox_in_node(c, zi), dt);
    return ox_call2(c, "subtract", v, along(c, zp, ax, ox_ndim(v)));
}

/* Largest |element| of input i as an integer constant (0 when absent), or the bound of
 * its 8-bit dtype when it is not a constant; -1 for wider dtypes. */
static int64_t abs_bound(ox_ctx *c, int i)
{
    ox_val *v = ox_in(c, i);
    if (!v) return 0;
    rx_node *n = ox_in_node(c, i);
    rx_dtype dt = n ? ox_dtype_of(n) : RX_DT_UNKNOWN;
    if (dt != RX_DT_U8 && dt != RX_DT_I8) return -1;
    rx_const *k = ox_const(c, v);
    if (!k) return dt == RX_DT_U8 ? 255 : 128;
    int64_t m = 0;
    for (size_t j = 0; j < k->nbytes; j++) {
        int64_t e = dt == RX_DT_U8 ? k->data[j] : (int8_t)k->data[j];
        if (e < 0) e = -e;
        if (e > m) m = e;
    }
    return m;
}

/* (a - a_zp) @ (b - b_zp) in i32 through f32 products that are exact: the contraction
 * is cut into blocks of kb terms with kb * max|a - a_zp| * max|b - b_zp| <= 2^24, so each
 * block's f32 sums are integers computed without rounding; each is converted to i32
 * and the blocks added in i32. The f32 products take the matmul rules (BLAS, the own
 * GEMM) instead of i32 loops: a dynamically quantized 128 x 768 x 3072 two-layer MLP
 * took 508 ms in i32 loops (the quantization fused into the product and recomputed per
 * multiply-add), ONNX Runtime 1.8. a's bound is its dtype's (255 for 8 bits: any zero
 * point), b's its constant's values when it is one (int8 weights: 127 or 128) plus its
 * zero point's. NULL when the form does not apply (not 8-bit, a 1-d operand, a
 * symbolic contraction): the caller keeps the i32 product. */
/* The elements of constant w whose index along `axis` is in [lo, hi), less the zero
 * point zp (NULL, a scalar, or one per index along zaxis), as a new f32 constant: what
 * the blocked products' weight side would compute on every call (the fold pass keeps a
 * result larger than its constant operand, and the f32 block is four times the 8-bit
 * weight). A matmul's b: rows (nd - 2) per column zero point (nd - 1); a convolution's
 * w: input channels (1) per output channel zero point (0). */
static rx_node *weight_f32(ox_ctx *c, const rx_const *w, const rx_const *zp, int axis,
                           int64_t lo, int64_t hi, int zaxis)
{
    int nd = w->ndim;
    int64_t *shape = RX_NEWN(c->a, int64_t, nd), outer = 1, inner = 1, zin = 1;
    memcpy(shape, w->shape, sizeof *shape * (size_t)nd);
    shape[axis] = hi - lo;
    for (int i = 0; i < axis; i++) outer *= w->shape[i];
    for (int i = axis + 1; i < nd; i++) inner *= w->shape[i];
    for (int i = zaxis + 1; i < nd; i++) zin *= w->shape[i];
    int64_t nz = zp ? (int64_t)(zp->nbytes / ox_esize(zp->dtype)) : 0, len = w->shape[axis];
    rx_const *k = ox_new_const(c, RX_DT_F32, nd, shape);
    float *o = (float *)(void *)k->data;
    for (int64_t t = 0; t < outer; t++)
        for (int64_t r = lo; r < hi; r++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t i = (t * len + r) * inner + j;
                int64_t z = nz ? ox_ci(zp, nz == 1 ? 0 : (i / zin) % w->shape[zaxis]) : 0;
                *o++ = (float)(ox_ci(w, i) - z);
            }
    return ox_const_node(c, k);
}

/* Terms per exact f32 block of a product of an 8-bit activation (|a - a_zp| <= 255 for
 * any zero point) and weight input wi less zero point wz: 2^24 / (255 * max|w - w_zp|);
 * 0 when the weight is not an 8-bit constant (with a constant zero point, if any). */
static int64_t block_terms(ox_ctx *c, int xi, int wi, int wz, rx_const **wk, rx_const **zk)
{
    int64_t rw = abs_bound(c, wi), rz = abs_bound(c, wz);
    *wk = ox_const(c, ox_in(c, wi));
    *zk = ox_in(c, wz) ? ox_const(c, ox_in(c, wz)) : NULL;
    if (abs_bound(c, xi) < 0 || rw < 0 || rz < 0 || !*wk || !(*wk)->data ||
        (ox_in(c, wz) && (!*zk || !(*zk)->data)))
        return 0;
    return ((int64_t)1 << 24) / (255 * (rw + rz > 0 ? rw + rz : 1));
}

/* ConvInteger's (and QLinearConv's) i32 convolution as exact f32 blocks, as
 * blocked_product does for matmuls: a contraction of (C / group) * prod(kernel) terms in
 * one f32 convolution when that is at most block_terms, else (one group) the input
 * channels cut into blocks, each block's convolution converted to i32 and the blocks
 * added; bias (input `bias`, i32 per output channel) added after. The f32 convolutions
 * take the conv library (blas.conv2d); a 3x3 64 -> 64 dynamic-quantized convolution on
 * 56 x 56 ran 360-470 ms as an i32 loop nest, ONNX Runtime 16 ms. NULL when the form does
 * not apply (not 8-bit, the weight not a constant, several groups past one block). */
rx_node *ox_conv_blocked(ox_ctx *c, int xi, int xz, int wi, int wz, int bias)
{
    rx_const *wk, *zk;
    int64_t kb = block_terms(c, xi, wi, wz, &wk, &zk), taps = 1, group = ox_attr_i(c, "group", 1);
    rx_node *x = ox_in_node(c, xi);
    if (!kb || !x || wk->ndim < 3) return NULL;
    for (int i = 2; i < wk->ndim; i++) taps *= wk->shape[i];
    int64_t ci = wk->shape[1], cb = ci * taps <= kb ? ci : group == 1 ? kb / taps : 0;
    if (cb < 1) return NULL;
    rx_node *xf = ox_astype(c, x, RX_DT_F32), *acc = NULL;
    if (ox_in(c, xz)) xf = ox_call2(c, "subtract", xf, ox_astype(c, ox_in_node(c, xz), RX_DT_F32));
    for (int64_t lo = 0; lo < ci && xf; lo += cb) {
        int64_t hi = lo + cb < ci ? lo + cb : ci;
        rx_node *xb = cb < ci ? ox_slice1(c, xf, 1, lo, hi, 1) : xf;
        rx_node *p = ox_astype(c, ox_conv_window(c, xb, weight_f32(c, wk, zk, 1, lo, hi, 0)),
                               RX_DT_I32);
        acc = acc ? ox_call2(c, "add", acc, p) : p;
        if (!acc) return NULL;
    }
    if (!acc || bias < 0 || !ox_in(c, bias)) return acc;
    int nd = ox_ndim(acc);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == 1 ? ox_lit(c, wk->shape[0]) : ox_lit(c, 1);
    return ox_call2(c, "add", acc, ox_reshape(c, ox_astype(c, ox_in_node(c, bias), RX_DT_I32), d, nd));
}

/* True when input i is absent or a constant of zeros. */
static bool zero_or_absent(ox_ctx *c, int i)
{
    ox_val *v = ox_in(c, i);
    if (!v) return true;
    rx_const *k = ox_const(c, v);
    if (!k || !k->data) return false;
    for (size_t j = 0; j < k->nbytes; j++)
        if (k->data[j]) return false;
    return true;
}

static rx_node *sum_axis(ox_ctx *c, rx_node *x, int64_t axis, bool keep)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, &axis, 1));
    ox_aset(c, m, "keepdims", ox_abool(c, keep));
    return ox_call1(c, "sum", x, m);
}

/* The column sums of b as i32 (n,): a constant when b is one (a weight: not recomputed
 * per call), else a reduction. */
static rx_node *colsum(ox_ctx *c, const rx_const *k, rx_node *b)
{
    if (!k || !k->data || k->ndim != 2) return sum_axis(c, ox_astype(c, b, RX_DT_I32), 0, false);
    int64_t rows = k->shape[0], n = k->shape[1];
    rx_const *s = ox_new_const(c, RX_DT_I32, 1, &k->shape[1]);
    int32_t *o = (int32_t *)(void *)s->data;
    for (int64_t j = 0; j < n; j++) {
        int64_t t = 0;
        for (int64_t r = 0; r < rows; r++) t += ox_ci(k, r * n + j);
        o[j] = (int32_t)t;
    }
    return ox_const_node(c, s);
}

static bool byte_dt(rx_dtype dt) { return dt == RX_DT_U8 || dt == RX_DT_I8; }

/* (a - a_zp) @ (b - b_zp) in i32 for 8-bit a (rank >= 2) and b (k, n): the product of
 * the 8-bit operands themselves (matmul into i32: the runtime's rt.qmatmul on the CPU,
 * runtime/library_qgemm.c) and the zero points as i32 corrections,
 *   (a - za)(b - zb) = a b - rowsum(a) zb - za colsum(b) + k za zb,
 * each left out when its zero point is absent or a constant 0 (quantize_dynamic's int8
 * weights: only za colsum(b), a constant vector times the activation's zero point,
 * folded into the elementwise ops after the product). Exact in i32 as ONNX Runtime's
 * integer product. NULL when the form does not apply. */
static bool int8_form(ox_ctx *c, rx_node *a, rx_node *b, int64_t *k)
{
    int na = ox_ndim(a);
    return byte_dt(ox_dtype_of(a)) && byte_dt(ox_dtype_of(b)) && na >= 2 && ox_ndim(b) == 2 &&
           ox_need_dims(c, a) && rx_expr_is_const(ox_simp(c, a->sinfo->dims[na - 1]), k);
}

/* The product of int8_form's a and b less the zero points za (i32, along a's rows) and
 * zb (i32, along b's columns), either NULL for none; bk b's constant or NULL. */
static rx_node *int8_core(ox_ctx *c, rx_node *a, rx_node *b, const rx_const *bk, rx_node *za,
                          rx_node *zb, int64_t k)
{
    int na = ox_ndim(a);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "out_dtype", ox_astr(c, "int32"));
    rx_node *args[2] = {a, b};
    rx_node *p = ox_call(c, "matmul", args, 2, m);
    if (zb) p = ox_call2(c, "subtract", p, ox_call2(c, "multiply", sum_axis(c, ox_astype(c, a, RX_DT_I32), na - 1, true), zb));
    if (za) p = ox_call2(c, "subtract", p, ox_call2(c, "multiply", za, colsum(c, bk, b)));
    if (za && zb)
        p = ox_call2(c, "add", p, ox_call2(c, "multiply", ox_call2(c, "multiply", za, zb),
                                           ox_scalar(c, RX_DT_I32, (double)k)));
    return p;
}

static rx_node *int8_product(ox_ctx *c, rx_node *a, rx_node *b, int bi, int az, int bz)
{
    int64_t k;
    if (!int8_form(c, a, b, &k)) return NULL;
    int na = ox_ndim(a);
    rx_node *za = zero_or_absent(c, az) ? NULL : along(c, ox_astype(c, ox_in_node(c, az), RX_DT_I32), na - 2, na);
    rx_node *zb = zero_or_absent(c, bz) ? NULL : ox_astype(c, ox_in_node(c, bz), RX_DT_I32);
    return int8_core(c, a, b, ox_const(c, ox_in(c, bi)), za, zb, k);
}

static rx_node *blocked_product(ox_ctx *c, rx_node *a, rx_node *b, int ai, int az, int bi,
                                int bz)
{
    int na = ox_ndim(a), nb = ox_ndim(b);
    int64_t k;
    if (na < 2 || nb < 2 || !ox_need_dims(c, a) ||
        !rx_expr_is_const(ox_simp(c, a->sinfo->dims[na - 1]), &k))
        return NULL;
    rx_const *bk, *zk;
    int64_t kb = block_terms(c, ai, bi, bz, &bk, &zk);
    bool konst = kb > 0;
    if (!konst) { /* b given at run time: its dtype's bound */
        int64_t rb = abs_bound(c, bi), zb = abs_bound(c, bz);
        if (abs_bound(c, ai) < 0 || rb < 0 || zb < 0) return NULL;
        kb = ((int64_t)1 << 24) / (255 * (rb + zb > 0 ? rb + zb : 1));
    }
    if (kb < 16) return NULL;
    rx_node *af = centered(c, a, az, na - 2, RX_DT_F32);
    rx_node *bf = konst ? b : centered(c, b, bz, nb - 1, RX_DT_F32), *acc = NULL;
    for (int64_t lo = 0; lo < k && af && bf; lo += kb) {
        rx_node *aj = af, *bj = bf;
        int64_t hi = lo + kb < k ? lo + kb : k;
        if (konst) bj = weight_f32(c, bk, zk, nb - 2, lo, hi, nb - 1);
        if (kb < k) aj = ox_slice1(c, af, na - 1, lo, hi, 1);
        if (kb < k && !konst) bj = ox_slice1(c, bf, nb - 2, lo, hi, 1);
        rx_node *p = ox_astype(c, ox_call2(c, "matmul", aj, bj), RX_DT_I32);
        acc = acc ? ox_call2(c, "add", acc, p) : p;
        if (!acc) return NULL;
    }
    return acc;
}

bool ox_c_matmul_integer(ox_ctx *c)
{
    bool q = !strcmp(c->node->op_type, "QLinearMatMul");
    int ai = 0, bi = q ? 3 : 1, az = 2, bz = q ? 5 : 3;
    rx_node *a = ox_in_node(c, ai), *b = ox_in_node(c, bi);
    if (!a || !b) return false;
    int na = ox_ndim(a), nb = ox_ndim(b);
    rx_node *p = int8_product(c, a, b, bi, az, bz);
    if (!p) p = blocked_product(c, a, b, ai, az, bi, bz);
    if (!p)
        p = ox_call2(c, "matmul", centered(c, a, az, na - 2 >= 0 ? na - 2 : 0, RX_DT_I32),
                     centered(c, b, bz, nb - 1, RX_DT_I32));
    if (!q) return ox_out_node(c, 0, p);
    rx_node *as = ox_in_node(c, 1), *bs = ox_in_node(c, 4), *ys = ox_in_node(c, 6);
    rx_node *yzp = ox_in(c, 7) ? ox_in_node(c, 7) : NULL;
    if (!as || !bs || !ys) return false;
    rx_dtype qt = yzp ? ox_dtype_of(yzp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    rx_node *k = ox_call2(c, "divide", ox_call2(c, "multiply", as, bs), ys);
    rx_node *v = ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32), k);
    return ox_out_node(c, 0, saturate(c, v, yzp ? ox_astype(c, yzp, RX_DT_F32) : NULL, qt));
}

bool ox_c_qlinear_conv(ox_ctx *c)
{
    rx_node *p = ox_conv_integer(c, 0, 2, 3, 5, 8);
    rx_node *xs = ox_in_node(c, 1), *ws = ox_in_node(c, 4), *ys = ox_in_node(c, 6);
    rx_node *yzp = ox_in(c, 7) ? ox_in_node(c, 7) : NULL;
    if (!p || !xs || !ws || !ys) return false;
    rx_dtype qt = yzp ? ox_dtype_of(yzp) : RX_DT_U8;
    if (!quant_dtype_ok(c, qt)) return false;
    rx_node *k = ox_call2(c, "divide", ox_call2(c, "multiply", xs, ws), ys);
    rx_node *v = ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32), along(c, k, 1, ox_ndim(p)));
    return ox_out_node(c, 0, saturate(c, v, yzp ? ox_astype(c, yzp, RX_DT_F32) : NULL, qt));
}

static int64_t numel_of(const rx_const *k)
{
    int64_t n = 1;
    for (int i = 0; i < k->ndim; i++) n *= k->shape[i];
    return n;
}

static bool all_zero(const rx_const *k)
{
    for (size_t j = 0; k && j < k->nbytes; j++)
        if (k->data[j]) return false;
    return true;
}

/* Whether node v is one element: 0-d, or 1-d of extent 1. */
static bool one_elem(const rx_node *v)
{
    int nd = ox_ndim(v);
    return nd == 0 || (nd == 1 && v->sinfo->dims && rx_expr_is_int(v->sinfo->dims[0], 1));
}

/* The noted DequantizeLinear results a QDQ product or convolution reads: *qa input 0's
 * (an activation with one scale), *qb input 1's (a constant 8-bit weight with f32
 * scales); false when either is not. */
static bool qdq_operands(ox_ctx *c, const ox_qdq **qa, const ox_qdq **qb)
{
    ox_val *av = ox_in(c, 0), *bv = ox_in(c, 1);
    if (!av || !bv || !av->node || !bv->k) return false;
    *qa = qdq_find(c, av->node);
    *qb = qdq_find(c, bv->k);
    return *qa && *qb && (*qa)->q && (*qa)->s && one_elem((*qa)->s) && (*qb)->qk &&
           (*qb)->qk->data && (*qb)->sk && (*qb)->sk->data && (*qb)->sk->dtype == RX_DT_F32;
}

/* The (n, k) 8-bit constant k transposed to (k, n), a new constant. */
static rx_const *transposed(ox_ctx *c, const rx_const *k)
{
    int64_t r = k->shape[0], n = k->shape[1], shape[2] = {n, r};
    rx_const *t = ox_new_const(c, k->dtype, 2, shape);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < n; j++) t->data[j * r + i] = k->data[i * n + j];
    return t;
}

/* x @ w for x = DequantizeLinear(q, s, z) (q 8-bit, s and z one element) and w the
 * dequantized constant of an 8-bit (k, n) weight (scale and zero point per tensor or per
 * column; with trans_b, Gemm's transB = 1, an (n, k) weight per row, transposed here):
 * (q - z) @ (w_q - w_z) as int8_core's exact i32 product (rt.qmatmul), then times s * w_s
 * in f32, as ONNX Runtime's fused QDQ MatMul (MatMulIntegerToFloat)
 * computes it, instead of an f32 product of the dequantized operands (the weight stored
 * as f32, four times its bytes). */
rx_node *ox_qdq_product(ox_ctx *c, bool trans_b)
{
    const ox_qdq *qa, *qb;
    if (!qdq_operands(c, &qa, &qb) || qb->qk->ndim != 2 || (qb->zk && !qb->zk->data) ||
        (qa->z && !one_elem(qa->z)))
        return NULL;
    int ax = trans_b ? 0 : 1; /* the weight's axis of the output columns */
    int64_t n = qb->qk->shape[ax], k, ns = numel_of(qb->sk), nz = qb->zk ? numel_of(qb->zk) : 0;
    if ((ns != 1 && (ns != n || qb->axis != ax)) || (nz > 1 && (nz != n || qb->axis != ax)))
        return NULL;
    const rx_const *wk = trans_b ? transposed(c, qb->qk) : qb->qk;
    rx_node *w = ox_const_node(c, (rx_const *)wk);
    if (!int8_form(c, qa->q, w, &k)) return NULL;
    rx_node *za = qa->z && !all_zero(qa->zk) ? ox_astype(c, qa->z, RX_DT_I32) : NULL;
    rx_node *zb = qb->zk && !all_zero(qb->zk) ? ox_astype(c, ox_const_node(c, (rx_const *)qb->zk), RX_DT_I32) : NULL;
    if (zb && nz == n) zb = along(c, zb, 1, 2);
    rx_node *sw = ox_const_node(c, (rx_const *)qb->sk);
    if (ns == n) sw = along(c, sw, 1, 2);
    rx_node *p = int8_core(c, qa->q, w, wk, za, zb, k);
    return p ? ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32),
                        ox_call2(c, "multiply", ox_astype(c, qa->s, RX_DT_F32), sw))
             : NULL;
}

rx_node *ox_qdq_matmul(ox_ctx *c) { return ox_qdq_product(c, false); }

/* The convolution of 8-bit x by the constant 8-bit weight wk less x's zero point zx,
 * in i32: ox_conv_int8's nn.conv2d (rt.qconv2d; x padded with zx) less zx times each
 * output channel's weight sum (a constant), the taps' (x - zx) w summed exactly. NULL
 * when the form does not apply. */
static rx_node *int8_conv(ox_ctx *c, rx_node *x, const rx_const *wk, int64_t zx)
{
    rx_node *y = ox_conv_int8(c, x, ox_const_node(c, (rx_const *)wk), zx);
    if (!y || !zx) return y;
    int64_t co = wk->shape[0], per = numel_of(wk) / co, shape[4] = {1, co, 1, 1};
    rx_const *k = ox_new_const(c, RX_DT_I32, 4, shape);
    int32_t *o = (int32_t *)(void *)k->data;
    for (int64_t j = 0; j < co; j++) {
        int64_t t = 0;
        for (int64_t i = 0; i < per; i++) t += ox_ci(wk, j * per + i);
        o[j] = (int32_t)(zx * t);
    }
    return ox_call2(c, "subtract", y, ox_const_node(c, k));
}

/* The one integer of zero point k (NULL: 0) into v; false when k is not one constant
 * element. */
static bool one_zp(const rx_const *k, int64_t *v)
{
    *v = 0;
    if (!k) return true;
    if (!k->data || numel_of(k) != 1) return false;
    *v = ox_ci(k, 0);
    return true;
}

/* ConvInteger's and QLinearConv's (x - x_zp) conv (w - w_zp) in i32 (plus the i32 bias
 * input `bias` when present) as int8_conv, for an 8-bit x with a constant zero point
 * and a constant 2-d 8-bit weight of one group whose zero point is 0 (quantize_static's
 * and quantize_dynamic's symmetric int8 weights). NULL when the form does not apply. */
rx_node *ox_conv_q8(ox_ctx *c, int xi, int xz, int wi, int wz, int bias)
{
    rx_node *x = ox_in_node(c, xi);
    rx_const *wk = ox_const(c, ox_in(c, wi));
    rx_const *zk = ox_in(c, xz) ? ox_const(c, ox_in(c, xz)) : NULL;
    int64_t zx;
    if (!x || !byte_dt(ox_dtype_of(x)) || !wk || !wk->data || wk->ndim != 4 ||
        !byte_dt(wk->dtype) || !zero_or_absent(c, wz) || (ox_in(c, xz) && !zk) || !one_zp(zk, &zx))
        return NULL;
    rx_node *y = int8_conv(c, x, wk, zx);
    if (!y || bias < 0 || !ox_in(c, bias)) return y;
    return ox_call2(c, "add", y, along(c, ox_astype(c, ox_in_node(c, bias), RX_DT_I32), 1, 4));
}

/* Conv of x = DequantizeLinear(q, s, z) (q 8-bit, s one element, z a constant or
 * absent) by w the dequantized constant of an 8-bit (Co, C, kh, kw) weight (scale per
 * tensor or per output channel, zero point 0): int8_conv's exact i32 convolution
 * (rt.qconv2d) times s * w_s in f32, plus the bias (input 2), as ONNX Runtime's QDQ
 * Conv runs on its integer kernel, instead of an f32 convolution of the dequantized
 * operands. NULL when the form does not apply. */
rx_node *ox_qdq_conv(ox_ctx *c)
{
    const ox_qdq *qa, *qb;
    if (!qdq_operands(c, &qa, &qb) || qb->qk->ndim != 4 || (qb->zk && !all_zero(qb->zk)))
        return NULL;
    int64_t co = qb->qk->shape[0], ns = numel_of(qb->sk), zx;
    if ((ns != 1 && (ns != co || qb->axis != 0)) || (qa->z && !qa->zk) || !one_zp(qa->zk, &zx))
        return NULL;
    rx_node *p = int8_conv(c, qa->q, qb->qk, zx);
    if (!p) return NULL;
    rx_node *sw = ox_const_node(c, (rx_const *)qb->sk);
    if (ns == co) sw = along(c, sw, 1, 4);
    rx_node *y = ox_call2(c, "multiply", ox_astype(c, p, RX_DT_F32),
                          ox_call2(c, "multiply", ox_astype(c, qa->s, RX_DT_F32), sw));
    if (!y || !ox_in(c, 2)) return y;
    return ox_call2(c, "add", y, along(c, ox_astype(c, ox_in_node(c, 2), RX_DT_F32), 1, 4));
}

/* (q - z) * s in f32 (z may be NULL; s and z scalars or broadcastable): the
 * DequantizeLinear of com.microsoft's QLinear* ops (onnx_contrib.c). */
rx_node *ox_dequantize(ox_ctx *c, rx_node *q, rx_node *s, rx_node *z)
{
    if (!q || !s) return NULL;
    rx_node *v = ox_astype(c, q, RX_DT_F32);
    if (z) v = ox_call2(c, "subtract", v, ox_astype(c, z, RX_DT_F32));
    return ox_call2(c, "multiply", v, ox_astype(c, s, RX_DT_F32));
}

/* QuantizeLinear of f32 y with scale s and zero point z (NULL: 0) as dtype dt (u8 or
 * i8): round half to even, plus z, saturated. */
rx_node *ox_quantize_to(ox_ctx *c, rx_node *y, rx_node *s, rx_node *z, rx_dtype dt)
{
    if (!y || !s || !quant_dtype_ok(c, dt)) return NULL;
    return saturate(c, ox_call2(c, "divide", y, ox_astype(c, s, RX_DT_F32)),
                    z ? ox_astype(c, z, RX_DT_F32) : NULL, dt);
}
