/*
 * onnx_bag.c — a Loop with a run-time trip count that is a segment reduction of
 * embedding rows: PyTorch's nn.EmbeddingBag (and F.embedding_bag) export.
 *
 * torch.onnx (opsets 10-17) writes EmbeddingBag(mode "sum" or "mean") as a Loop over the
 * bags whose trip count is the number of bags, known only at run time (the batch of a
 * 2-d input, or the offsets' length), and whose body is
 *     s = Gather(A, i); e = Gather(B, i)          (A, B: outer starts / ends)
 *     rows = Gather(W, Slice(X, [s], [e], [0]))   (X: the flat indices, W: the table)
 *     out = ReduceSum / ReduceMean(rows, axes [0], keepdims 0)
 * (mode sum with per_sample_weights: ReduceSum of rows times
 * Unsqueeze(Slice(Q, [s], [e], [0]), axes [1])), with the condition passed through (Cast /
 * Identity) and no carried values. The importer unrolls loops only over known trip counts (onnx_control.c), so such a loop was
 * a located error. ox_loop_bag recognizes exactly that body (any other Loop is left to
 * onnx_control.c's message) and imports it as data flow over the M bags at once, by
 * prefix sums, exact for any segments within [0, L] (overlapping, empty, out of order, as
 * the loop; L the number of indices). PyTorch rejects offsets outside [0, L]; here a
 * bound past L is a run-time index error and a negative one reads as 0 (Slice would
 * count it from the end).
 *     s, e = take(A, arange(M)), take(B, arange(M))
 *     C = cumsum(take(W, X) [times Q[:, None]], axis 0) in f64, C[-1] read as 0
 *     out = e > s ? (C[e - 1] - C[s - 1]) [/ (e - s) for a mean] : 0,   cast back
 * An empty bag gives 0 for both modes, as PyTorch (ONNX's ReduceMean of no rows would be
 * 0 / 0). The sums are f64 because a bag is the difference of two running sums over up
 * to L rows: in f32 it would carry their rounding (~L x 6e-8 of a row's size), in f64
 * ~L x 1e-16. Mode "max" (ReduceMax) is not taken: a max
 * has no prefix form (its Loop stays a located error).
 * Cost: L x d adds and 2 M x d gathers, as the loop. First written as a (M, L) 0/1 mask
 * of the segments times the rows (matmul): M x L x d multiply-adds, hash_embed at 512
 * bags of 64 (tests/bench/bench_torch_blocks.py zoo7:hash_embed) 5.8x ONNX Runtime's
 * loop at load 15, 60 ms of its 118 in the matmul; as prefix sums 0.83x at load 5
 * (16.6 ms), bag_offsets (256 bags over 8192 indices, three bags) 0.81x. Clamping the
 * bounds to [0, L] by an L scalar (a sum of ones) cost 5 ms more: fusion re-summed it
 * for each bag.
 */
#include <string.h>

#include "onnx_int.h"

typedef struct bag_body {
    const Onnx__GraphProto *g;
    const char *iter;       /* the body's iteration-number input */
} bag_body;

/* The body node producing name (NULL: an outer value or a body input). */
static const Onnx__NodeProto *producer(const bag_body *b, const char *name)
{
    for (size_t i = 0; i < b->g->n_node; i++) {
        const Onnx__NodeProto *n = b->g->node[i];
        for (size_t j = 0; j < n->n_output; j++)
            if (!strcmp(n->output[j], name)) return n;
    }
    return NULL;
}

static bool is_op(const Onnx__NodeProto *n, const char *op, size_t nin)
{
    return n && !strcmp(n->op_type, op) && n->n_input >= nin && n->n_output == 1;
}

/* Integer attribute name of n (dflt when absent). */
static int64_t attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name)) return n->attribute[i]->i;
    return dflt;
}

/* Whether the value named name (a Constant of the body or a known outer value), or n's
 * INTS attribute "axes" (when name is NULL), holds exactly the one integer want. */
static bool one_int(ox_ctx *c, const bag_body *b, const Onnx__NodeProto *n, const char *name,
                    int64_t want)
{
    if (!name) {
        for (size_t i = 0; i < n->n_attribute; i++)
            if (!strcmp(n->attribute[i]->name, "axes"))
                return n->attribute[i]->n_ints == 1 && n->attribute[i]->ints[0] == want;
        return false;
    }
    const Onnx__NodeProto *k = producer(b, name);
    if (!k) { /* an outer constant */
        ox_val *o = ox_find(c, name);
        int64_t *v;
        int nv;
        return o && ox_ints(c, o, &v, &nv) && nv == 1 && v[0] == want;
    }
    if (!is_op(k, "Constant", 0) || k->n_attribute != 1 || !k->attribute[0]->t) return false;
    rx_const *v = ox_tensor_const(c, k->attribute[0]->t, "a Loop body's constant");
    return v && !rx_dtype_is_float(v->dtype) && ox_numel(v) == 1 && ox_ci(v, 0) == want;
}

/* Whether the axes of n are [want] (the attribute, or the Constant of input 1). */
static bool axes_are(ox_ctx *c, const bag_body *b, const Onnx__NodeProto *n, int64_t want)
{
    return one_int(c, b, n, n->n_input >= 2 && n->input[1][0] ? n->input[1] : NULL, want);
}

/* Slice(outer, starts, ends, axes [0]) with the default steps: the outer value's name. */
static const char *outer_slice(ox_ctx *c, const bag_body *b, const Onnx__NodeProto *sl)
{
    if (!is_op(sl, "Slice", 4) || sl->n_input > 5 || producer(b, sl->input[0]) ||
        !one_int(c, b, sl, sl->input[3], 0) || (sl->n_input == 5 && sl->input[4][0]))
        return NULL;
    return sl->input[0];
}

/* mul = Mul(Gather(W, ids slice), Unsqueeze(Slice(P, the same bounds), axes [1])) in
 * either order (per_sample_weights): the Gather in *tab, P's name returned, or NULL. */
static const char *weighted(ox_ctx *c, const bag_body *b, const Onnx__NodeProto *mul,
                            const Onnx__NodeProto **tab)
{
    for (int k = 0; k < 2; k++) {
        const Onnx__NodeProto *g = producer(b, mul->input[k]), *u = producer(b, mul->input[1 - k]);
        if (!is_op(g, "Gather", 2) || !is_op(u, "Unsqueeze", 1) || !axes_are(c, b, u, 1)) continue;
        const Onnx__NodeProto *ws = producer(b, u->input[0]), *is = producer(b, g->input[1]);
        if (!ws || !is || !outer_slice(c, b, ws) || strcmp(ws->input[1], is->input[1]) ||
            strcmp(ws->input[2], is->input[2]))
            continue;
        *tab = g;
        return ws->input[0];
    }
    return NULL;
}

/* Unsqueeze(Gather(outer, i), axes [0]): the outer value's name, or NULL. */
static const char *bound(ox_ctx *c, const bag_body *b, const char *name)
{
    const Onnx__NodeProto *u = producer(b, name), *g;
    if (!is_op(u, "Unsqueeze", 1) || !axes_are(c, b, u, 0)) return NULL;
    g = producer(b, u->input[0]);
    if (!is_op(g, "Gather", 2) || attr_i(g, "axis", 0) != 0 || strcmp(g->input[1], b->iter) ||
        producer(b, g->input[0]))
        return NULL;
    return g->input[0];
}

/* Whether the body's condition output is its condition input, a Constant, or a Cast /
 * Identity of either or of an outer value known to be true (the exporter's). */
static bool cond_passes(ox_ctx *c, const bag_body *b)
{
    const char *out = b->g->output[0]->name, *in = b->g->input[1]->name;
    if (!strcmp(out, in)) return true;
    const Onnx__NodeProto *n = producer(b, out);
    if (is_op(n, "Constant", 0)) return true;
    if (!is_op(n, "Cast", 1) && !is_op(n, "Identity", 1)) return false;
    if (!strcmp(n->input[0], in) || is_op(producer(b, n->input[0]), "Constant", 0)) return true;
    ox_val *o = producer(b, n->input[0]) ? NULL : ox_find(c, n->input[0]);
    rx_const *k = o ? ox_const(c, o) : NULL;
    return k && ox_numel(k) == 1 && ox_ci(k, 0) != 0;
}

/* 1: converted; 0: not an embedding-bag loop (nothing emitted); -1: an error. */
int ox_loop_bag(ox_ctx *c)
{
    const Onnx__AttributeProto *at = ox_attr(c, "body");
    const Onnx__GraphProto *g = at ? at->g : NULL;
    if (!g || c->node->n_input != 2 || ox_nout(c) != 1 || g->n_input != 2 || g->n_output != 2 ||
        !ox_in(c, 0) || !ox_in(c, 1))
        return 0;
    rx_const *cond = ox_const(c, ox_in(c, 1)); /* the loop runs all M iterations */
    if (!cond || ox_numel(cond) != 1 || ox_ci(cond, 0) == 0) return 0;
    bag_body b = {g, g->input[0]->name};
    const Onnx__NodeProto *red = producer(&b, g->output[1]->name), *tab, *sl;
    bool mean = is_op(red, "ReduceMean", 1);
    if (!mean && !is_op(red, "ReduceSum", 1)) return 0;
    if (attr_i(red, "keepdims", 1) != 0 || !axes_are(c, &b, red, 0)) return 0;
    tab = producer(&b, red->input[0]);
    const char *pn = NULL; /* per_sample_weights (mode sum) */
    if (!mean && is_op(tab, "Mul", 2) && !(pn = weighted(c, &b, tab, &tab))) return 0;
    if (!is_op(tab, "Gather", 2) || attr_i(tab, "axis", 0) != 0 || producer(&b, tab->input[0])) return 0;
    sl = producer(&b, tab->input[1]);
    if (!outer_slice(c, &b, sl)) return 0;
    const char *an = bound(c, &b, sl->input[1]), *bn = bound(c, &b, sl->input[2]);
    if (!an || !bn || !cond_passes(c, &b)) return 0;
    size_t busy = 0;
    for (size_t i = 0; i < g->n_node; i++) busy += strcmp(g->node[i]->op_type, "Constant") != 0;
    if (busy > (pn ? 11u : 8u)) return 0; /* 2 Gather, 2 Unsqueeze, Slice, Gather, Reduce, Cast */

    ox_val *av = ox_find(c, an), *bv = ox_find(c, bn), *xv = ox_find(c, sl->input[0]);
    ox_val *wv = ox_find(c, tab->input[0]), *pv = pn ? ox_find(c, pn) : NULL;
    rx_expr **m;
    int nm;
    if (!av || !bv || !xv || !wv || (pn && !pv) || !ox_syms(c, ox_in(c, 0), &m, &nm) || nm != 1)
        return 0;
    rx_node *a = ox_node(c, av), *bb = ox_node(c, bv), *x = ox_node(c, xv), *w = ox_node(c, wv);
    if (!a || !bb || !x || !w) return -1;
    if (!ox_need_dims(c, x) || !ox_need_dims(c, w) || ox_ndim(x) != 1 || ox_ndim(w) != 2) {
        ox_err(c, "an embedding-bag loop needs 1-d indices and a 2-d table");
        return -1;
    }
    rx_dtype dt = ox_dtype_of(w);
    rx_expr *cols[2] = {m[0], ox_lit(c, 1)};
    rx_attr *ax0 = ox_amap(c);
    ox_aset(c, ax0, "axis", ox_aint(c, 0));
    /* the bounds as given: PyTorch's offsets lie in [0, L] (it rejects others) */
    rx_node *im = ox_iota(c, m[0], 0, 1, RX_DT_I64), *bnd[2];
    for (int k = 0; k < 2; k++) {
        rx_node *ta[2] = {ox_astype(c, k ? bb : a, RX_DT_I64), im};
        bnd[k] = ox_reshape(c, ox_call(c, "take", ta, 2, ax0), cols, 2);
    }
    rx_node *ta[2] = {w, ox_astype(c, x, RX_DT_I64)}, *rows = ox_call(c, "take", ta, 2, ax0);
    if (pv) {
        rx_node *p = ox_node(c, pv);
        if (!p || !ox_need_dims(c, p) || ox_ndim(p) != 1) {
            ox_err(c, "an embedding-bag loop's per-sample weights must be 1-d");
            return -1;
        }
        rx_expr *pd[2] = {p->sinfo->dims[0], ox_lit(c, 1)};
        rows = ox_call2(c, "multiply", rows, ox_reshape(c, ox_astype(c, p, dt), pd, 2));
    }
    /* C (L, d): C[k] the f64 sum of rows [0, k]; a bag is C[e - 1] - C[s - 1], C[-1] = 0 */
    rx_attr *cm = ox_amap(c);
    ox_aset(c, cm, "axis", ox_aint(c, 0));
    rx_node *pre = ox_call1(c, "cumsum", ox_astype(c, rows, RX_DT_F64), cm), *cum[2];
    for (int k = 0; k < 2; k++) {
        rx_node *i1 = ox_call2(c, "subtract", bnd[k], ox_scalar(c, RX_DT_I64, 1));
        rx_node *ga[2] = {pre, ox_reshape(c, ox_call2(c, "maximum", i1, ox_scalar(c, RX_DT_I64, 0)), m, 1)};
        rx_node *wa[3] = {ox_call2(c, "greater", bnd[k], ox_scalar(c, RX_DT_I64, 0)), ox_call(c, "take", ga, 2, ax0),
                          ox_scalar(c, RX_DT_F64, 0)};
        cum[k] = ox_call(c, "where", wa, 3, NULL);
    }
    rx_node *cnt = ox_call2(c, "subtract", bnd[1], bnd[0]);
    rx_node *y = ox_call2(c, "subtract", cum[1], cum[0]);
    rx_node *div = mean ? ox_call2(c, "maximum", cnt, ox_scalar(c, RX_DT_I64, 1)) : NULL;
    rx_node *wy[3] = {ox_call2(c, "greater", cnt, ox_scalar(c, RX_DT_I64, 0)),
                      mean ? ox_call2(c, "divide", y, ox_astype(c, div, RX_DT_F64)) : y,
                      ox_scalar(c, RX_DT_F64, 0)};
    y = ox_astype(c, ox_call(c, "where", wy, 3, NULL), dt);
    return y && ox_out_node(c, 0, y) ? 1 : -1;
}
