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
 * Unsqueeze(Slice(P, [s], [e], [0]), axes [1])), with the condition passed through (Cast / Identity) and no carried values. The
 * importer unrolls loops only over known trip counts (onnx_control.c), so such a loop was
 * a located error. ox_loop_bag recognizes exactly that body (any other Loop is left to
 * onnx_control.c's message) and imports it as data flow over the M bags at once:
 *     st = take(A, arange(M)), en = take(B, arange(M))
 *     mask (M, L) = arange(L) >= st[:, None] and arange(L) < en[:, None]
 *     out = matmul(mask as the table's dtype, take(W, X, axis 0))     (sum)
 *     (the rows times P[:, None] first, with per_sample_weights)
 *     out / max(sum(mask, axis 1), 1)                                (mean)
 * which is exact for any segments (overlapping, empty, or out of order, as the loop). An
 * empty bag gives 0 for both modes, as PyTorch (ONNX's ReduceMean of no rows would be
 * 0 / 0). Mode "max" (ReduceMax) is not taken: it would need a masked (M, L, d) reduction
 * or segments known to be disjoint.
 * Cost: M x L x d multiply-adds for the matmul (L the number of indices): for the usual
 * 2-d input (b bags of s indices, L = b s) that is b times PyTorch's L x d; measured in
 * tests/bench/bench_torch_blocks.py (zoo7:hash_embed).
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
    rx_node *im = ox_iota(c, m[0], 0, 1, RX_DT_I64);
    rx_attr *ax0 = ox_amap(c);
    ox_aset(c, ax0, "axis", ox_aint(c, 0));
    rx_node *sa[2] = {ox_astype(c, a, RX_DT_I64), im}, *ea[2] = {ox_astype(c, bb, RX_DT_I64), im};
    rx_node *st = ox_reshape(c, ox_call(c, "take", sa, 2, ax0), cols, 2);
    rx_node *en = ox_reshape(c, ox_call(c, "take", ea, 2, ax0), cols, 2);
    rx_node *pos = ox_iota(c, x->sinfo->dims[0], 1, 2, RX_DT_I64);
    rx_node *mask = ox_astype(c, ox_call2(c, "logical_and", ox_call2(c, "greater_equal", pos, st),
                                          ox_call2(c, "less", pos, en)), dt);
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
    rx_node *y = ox_call2(c, "matmul", mask, rows);
    if (y && mean) {
        rx_attr *sm = ox_amap(c);
        int64_t one = 1;
        ox_aset(c, sm, "axis", ox_aints(c, &one, 1));
        ox_aset(c, sm, "keepdims", ox_abool(c, true));
        rx_node *cnt = ox_call2(c, "maximum", ox_call1(c, "sum", mask, sm), ox_scalar(c, dt, 1));
        y = ox_call2(c, "divide", y, cnt);
    }
    return y && ox_out_node(c, 0, y) ? 1 : -1;
}
