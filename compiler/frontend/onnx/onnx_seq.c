/*
 * onnx_seq.c — ONNX sequences and optionals, resolved at import.
 *
 * Relax has tensors and tuples but no growable sequence, so a sequence is resolved while
 * importing: its length and every position used on it must be import-time constants. A
 * sequence value (ox_val kind OX_SEQ) is the list of its element values, each an
 * ordinary tensor value (a graph value, a constant, or a symbolic shape); an optional
 * (OX_OPT) holds zero or one element. The ops then only rearrange lists:
 *   SequenceConstruct SequenceEmpty SequenceInsert SequenceErase -> a new list
 *   SequenceAt -> the element (an alias); SequenceLength -> a constant
 *   ConcatFromSequence -> concat (new_axis: expand_dims first) of the elements
 *   SplitToSequence -> strided_slice (or take, for keepdims 0 without split) per piece
 *   SequenceMap -> the body converted once per position (onnx_control.c's subgraphs),
 *                  its outputs collected into sequences
 *   Optional OptionalHasElement OptionalGetElement -> a list of 0 or 1, a constant, the
 *                  element (an empty optional's element is a located error)
 * A position out of range, or not constant, is a located error naming the length. Graph
 * outputs that are sequences or optionals contribute their tensors in place to the result
 * tuple (ox_flatten); sequence and optional graph inputs are not parameters: the
 * conformance runner's --freeze-shape-inputs rewrites them into tensor inputs and a
 * SequenceConstruct / Optional node for each data set (tests/onnx/run.py). Sequences of
 * strings are out of scope (no string dtype). Costs: O(elements) per op.
 */
#include <string.h>

#include "onnx_int.h"

#define OX_MAX_SEQ 65536

static ox_val *new_list(ox_ctx *c, int kind, int n)
{
    ox_val *v = RX_NEW(c->a, ox_val);
    v->name = "";
    v->kind = (int8_t)kind;
    v->nelems = n;
    v->elems = RX_NEWN(c->a, ox_val *, n > 0 ? n : 1);
    return v;
}

/* Input i when it has kind (OX_SEQ or OX_TENSOR), or NULL (and an error). */
static ox_val *kind_in(ox_ctx *c, int i, int kind)
{
    ox_val *v = ox_in(c, i);
    if (!v || v->kind != kind) {
        ox_err(c, "input %d must be a %s", i, kind == OX_SEQ ? "sequence" : "tensor");
        return NULL;
    }
    return v;
}

static ox_val *seq_in(ox_ctx *c, int i) { return kind_in(c, i, OX_SEQ); }
static ox_val *tensor_in(ox_ctx *c, int i) { return kind_in(c, i, OX_TENSOR); }

/* The constant position of input i (dflt when absent) checked against [-n, hi] and
 * normalized; false after an error. */
static bool position(ox_ctx *c, int i, int64_t n, int64_t hi, int64_t dflt, int64_t *pos)
{
    *pos = dflt;
    if (ox_in(c, i)) {
        int64_t *p;
        int np;
        if (!ox_ints(c, ox_in(c, i), &p, &np) || np != 1) {
            ox_err(c, "the position must be a constant integer scalar");
            return false;
        }
        *pos = p[0];
    }
    if (*pos < -n || *pos > hi) {
        ox_err(c, "position %lld is out of range for a sequence of %lld elements",
               (long long)*pos, (long long)n);
        return false;
    }
    if (*pos < 0) *pos += n;
    return true;
}

static bool split_to_sequence(ox_ctx *c)
{
    ox_val *xv = tensor_in(c, 0);
    rx_node *x = xv ? ox_node(c, xv) : NULL;
    if (!x || !ox_need_dims(c, x)) return false;
    int nd = x->sinfo->ndim, ax = ox_norm_axis(c, ox_attr_i(c, "axis", 0), nd);
    int64_t ext;
    if (ax < 0) return false;
    if (!rx_expr_is_const(ox_simp(c, x->sinfo->dims[ax]), &ext) || ext > OX_MAX_SEQ) {
        ox_err(c, "the split axis must have a static extent (at most %d)", OX_MAX_SEQ);
        return false;
    }
    int64_t *sz = NULL;
    int nsz = 0;
    if (ox_in(c, 1) && !ox_ints(c, ox_in(c, 1), &sz, &nsz)) {
        ox_err(c, "split must be a constant");
        return false;
    }
    bool scalar = ox_in(c, 1) && ox_const(c, ox_in(c, 1))->ndim == 0;
    int64_t n = !ox_in(c, 1) ? ext : scalar ? (sz[0] > 0 ? (ext + sz[0] - 1) / sz[0] : -1) : nsz;
    int64_t sum = 0;
    for (int i = 0; !scalar && i < nsz; i++) sum += sz[i] >= 0 ? sz[i] : INT64_MIN / 4;
    if (n < 0 || (!scalar && ox_in(c, 1) && sum != ext)) {
        ox_err(c, "split does not divide the axis' %lld elements", (long long)ext);
        return false;
    }
    bool drop = !ox_in(c, 1) && !ox_attr_i(c, "keepdims", 1);
    ox_val *s = new_list(c, OX_SEQ, (int)n);
    for (int64_t i = 0, at = 0; i < n; i++) {
        int64_t len = !ox_in(c, 1) ? 1 : scalar ? (ext - at < sz[0] ? ext - at : sz[0]) : sz[i];
        rx_node *piece;
        rx_attr *m = ox_amap(c);
        if (drop) {
            ox_aset(c, m, "axis", ox_aint(c, ax));
            rx_node *a[2] = {x, ox_scalar(c, RX_DT_I64, (double)i)};
            piece = ox_call(c, "take", a, 2, m);
        } else {
            int64_t axis = ax, end = at + len, one = 1;
            ox_aset(c, m, "axes", ox_aints(c, &axis, 1));
            ox_aset(c, m, "begin", ox_aints(c, &at, 1));
            ox_aset(c, m, "end", ox_aints(c, &end, 1));
            ox_aset(c, m, "strides", ox_aints(c, &one, 1));
            piece = ox_call1(c, "strided_slice", x, m);
        }
        if (!piece) return false;
        s->elems[i] = RX_NEW(c->a, ox_val);
        s->elems[i]->name = "";
        s->elems[i]->node = piece;
        at += len;
    }
    ox_out_alias(c, 0, s);
    return true;
}

static bool concat_from_sequence(ox_ctx *c, ox_val *s)
{
    if (!s->nelems) {
        ox_err(c, "the sequence is empty");
        return false;
    }
    bool stack = ox_attr_i(c, "new_axis", 0) != 0;
    rx_node **v = RX_NEWN(c->a, rx_node *, s->nelems);
    int nd = -1;
    for (int i = 0; i < s->nelems; i++) {
        if (!(v[i] = ox_node(c, s->elems[i])) || !ox_need_dims(c, v[i])) return false;
        nd = ox_ndim(v[i]);
    }
    int ax = ox_norm_axis(c, ox_attr_i(c, "axis", 0), nd + (stack ? 1 : 0));
    if (ax < 0) return false;
    for (int i = 0; stack && i < s->nelems; i++) {
        rx_attr *m = ox_amap(c);
        int64_t a = ax;
        ox_aset(c, m, "axis", ox_aints(c, &a, 1));
        if (!(v[i] = ox_call1(c, "expand_dims", v[i], m))) return false;
    }
    return ox_out_node(c, 0, s->nelems == 1 ? v[0] : ox_concat(c, v, s->nelems, ax));
}

bool ox_c_sequence(ox_ctx *c)
{
    const char *t = c->node->op_type;
    if (!strcmp(t, "SequenceConstruct")) {
        int n = ox_nin(c);
        ox_val *s = new_list(c, OX_SEQ, n);
        for (int i = 0; i < n; i++)
            if (!(s->elems[i] = tensor_in(c, i))) return false;
        ox_out_alias(c, 0, s);
        return true;
    }
    if (!strcmp(t, "SequenceEmpty")) {
        ox_val *s = new_list(c, OX_SEQ, 0);
        s->elemdt = ox_dtype((int32_t)ox_attr_i(c, "dtype", 1));
        ox_out_alias(c, 0, s);
        return true;
    }
    if (!strcmp(t, "SplitToSequence")) return split_to_sequence(c);
    ox_val *s = seq_in(c, 0);
    if (!s) return false;
    int64_t n = s->nelems, p;
    if (!strcmp(t, "SequenceLength")) {
        rx_const *k = ox_new_const(c, RX_DT_I64, 0, NULL);
        memcpy(k->data, &n, 8);
        ox_out_const(c, 0, k);
        return true;
    }
    if (!strcmp(t, "SequenceAt")) {
        if (!position(c, 1, n, n - 1, 0, &p)) return false;
        if (!ox_in(c, 1)) {
            ox_err(c, "needs a position");
            return false;
        }
        ox_out_alias(c, 0, s->elems[p]);
        return true;
    }
    if (!strcmp(t, "ConcatFromSequence")) return concat_from_sequence(c, s);
    bool insert = !strcmp(t, "SequenceInsert");
    if (insert && n >= OX_MAX_SEQ) {
        ox_err(c, "the sequence would exceed %d elements", OX_MAX_SEQ);
        return false;
    }
    if (!position(c, insert ? 2 : 1, n, insert ? n : n - 1, insert ? n : n - 1, &p)) return false;
    ox_val *e = insert ? tensor_in(c, 1) : NULL;
    if (insert && !e) return false;
    ox_val *r = new_list(c, OX_SEQ, (int)(insert ? n + 1 : n - 1));
    r->elemdt = s->elemdt;
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (insert && i == p) r->elems[j++] = e;
        if (insert || i != p) r->elems[j++] = s->elems[i];
    }
    if (insert && p == n) r->elems[n] = e;
    ox_out_alias(c, 0, r);
    return true;
}

bool ox_c_optional(ox_ctx *c)
{
    const char *t = c->node->op_type;
    ox_val *v = ox_in(c, 0);
    if (!strcmp(t, "Optional")) {
        ox_val *o = new_list(c, OX_OPT, v ? 1 : 0);
        if (v) o->elems[0] = v;
        ox_out_alias(c, 0, o);
        return true;
    }
    if (!strcmp(t, "OptionalHasElement")) { /* opset 18: a tensor or sequence has one */
        bool has = v && (v->kind != OX_OPT || v->nelems);
        rx_const *k = ox_new_const(c, RX_DT_BOOL, 0, NULL);
        k->data[0] = has;
        ox_out_const(c, 0, k);
        return true;
    }
    if (!v || (v->kind == OX_OPT && !v->nelems)) {
        ox_err(c, "the optional is empty (known at import)");
        return false;
    }
    ox_out_alias(c, 0, v->kind == OX_OPT ? v->elems[0] : v);
    return true;
}

bool ox_c_sequence_map(ox_ctx *c)
{
    int nin = ox_nin(c), nout = ox_nout(c);
    ox_val *s0 = seq_in(c, 0);
    if (!s0) return false;
    int n = s0->nelems;
    ox_val **ins = RX_NEWN(c->a, ox_val *, nin > 0 ? nin : 1);
    for (int j = 0; j < nin; j++) {
        ox_val *v = ox_in(c, j);
        if (!v || v->kind == OX_OPT || (v->kind == OX_SEQ && v->nelems != n)) {
            ox_err(c, "input %d must be a tensor or a sequence of %d elements", j, n);
            return false;
        }
    }
    ox_val **res = RX_NEWN(c->a, ox_val *, nout > 0 ? nout : 1);
    for (int k = 0; k < nout; k++) res[k] = new_list(c, OX_SEQ, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < nin; j++) {
            ox_val *v = ox_in(c, j);
            ins[j] = v->kind == OX_SEQ ? v->elems[i] : v;
        }
        ox_val **outs;
        int no;
        if (!ox_subgraph(c, "body", ins, nin, &outs, &no)) return false;
        if (no != nout) {
            ox_err(c, "the body has %d outputs, the node %d", no, nout);
            return false;
        }
        for (int k = 0; k < nout; k++) res[k]->elems[i] = outs[k];
    }
    for (int k = 0; k < nout; k++) ox_out_alias(c, k, res[k]);
    return true;
}

typedef RX_VEC(rx_node *) node_list;

static bool flatten(ox_ctx *c, ox_val *v, node_list *out, int depth)
{
    if (v->kind == OX_TENSOR) {
        rx_node *n = ox_node(c, v);
        if (n) RX_VEC_PUSH(*out, n);
        return n != NULL;
    }
    if (depth > 8) {
        rx_diag_add(c->d, c->where, "sequences nested deeper than 8");
        return false;
    }
    for (int i = 0; i < v->nelems; i++)
        if (!flatten(c, v->elems[i], out, depth + 1)) return false;
    return true;
}

bool ox_flatten(ox_ctx *c, ox_val *v, rx_node ***out, int *n)
{
    node_list l = {0};
    bool ok = flatten(c, v, &l, 0);
    *n = l.n;
    *out = RX_NEWN(c->a, rx_node *, l.n ? l.n : 1);
    if (l.n) memcpy(*out, l.items, sizeof **out * (size_t)l.n);
    RX_VEC_FREE(l);
    return ok;
}
