/*
 * onnx_control.c — ONNX control flow resolved at import: If, Loop and Scan.
 *
 * The module is one dataflow block, so control flow is resolved while importing:
 *   If    a known condition (a constant, or an input frozen into the model): the taken
 *         branch is converted in place and its outputs become the node's. A condition
 *         computed at run time (TorchScript's `if bool(y.mean() > 0)`): both branches are
 *         converted and each output is where(cond, then, else), which needs the two
 *         outputs alike in dtype and shape (else a located error); both branches run.
 *   Loop  the trip count and the condition must be known (but for PyTorch's EmbeddingBag,
 *         a segment reduction over a run-time number of bags: onnx_bag.c); the body is converted once per
 *         iteration (unrolled), its iteration number a constant (so shape operands that
 *         use it fold), its carried values threaded from one copy to the next; the loop
 *         stops when the trip count is reached or the body's condition output, which must
 *         then be known too, is false. Scan outputs are stacked along a new axis 0.
 *   Scan  unrolled over the scan axis' static extent: each iteration takes slice t
 *         (reversed directions count from the end) of every scan input; scan outputs are
 *         stacked along their output axes (prepended when reversed). Opset 8's batch axis
 *         is unrolled too (each batch row scanned alone, the results stacked).
 * A trip count or a loop condition computed at run time is a located error: the
 * importer has no run-time loops.
 *
 * Subgraphs see the values of enclosing graphs by name (ONNX's lexical scoping): a body
 * is converted in a scope (onnx_read.c's ox_scope_pop) where its inputs and nodes shadow
 * outer names, and everything it defined is dropped after its outputs are copied out.
 * Nesting is bounded (OX_MAX_DEPTH) and so is the work of unrolling (OX_MAX_TRIP
 * iterations per loop, OX_MAX_UNROLLED body nodes over the whole import), so a hostile
 * trip count or a deep nest is a located error, never a runaway.
 * Costs: O(iterations x body nodes) graph growth; each copy is deduced like any node.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

#define OX_MAX_DEPTH 16
#define OX_MAX_TRIP 4096
#define OX_MAX_UNROLLED ((int64_t)1 << 18)

typedef RX_VEC(rx_node *) node_vec;

/* dst takes src's value (every form) and keeps its own name and depth. */
static void assign(ox_val *dst, const ox_val *src)
{
    const char *nm = dst->name;
    int8_t d = dst->depth;
    *dst = *src;
    dst->name = nm;
    dst->depth = d;
}

static ox_val *copy_val(ox_ctx *c, const ox_val *v)
{
    ox_val *r = RX_NEW(c->a, ox_val);
    *r = *v;
    return r;
}

/* A value holding constant k (not in the table). */
static ox_val *const_val(ox_ctx *c, rx_const *k)
{
    ox_val *v = RX_NEW(c->a, ox_val);
    v->name = "";
    v->k = k;
    return v;
}

static ox_val *scalar_val(ox_ctx *c, rx_dtype dt, int64_t x)
{
    rx_const *k = ox_new_const(c, dt, 0, NULL);
    memcpy(k->data, &x, ox_esize(dt)); /* little-endian narrowing */
    return const_val(c, k);
}

bool ox_subgraph(ox_ctx *c, const char *attr, ox_val **ins, int nins, ox_val ***outs, int *nouts)
{
    const Onnx__AttributeProto *at = ox_attr(c, attr);
    const Onnx__GraphProto *g = at ? at->g : NULL;
    if (!g) {
        ox_err(c, "graph attribute '%s' is missing", attr);
        return false;
    }
    if (c->depth >= OX_MAX_DEPTH) {
        ox_err(c, "subgraphs are nested deeper than %d", OX_MAX_DEPTH);
        return false;
    }
    if ((int)g->n_input != nins) {
        ox_err(c, "the '%s' subgraph has %zu inputs, expected %d", attr, g->n_input, nins);
        return false;
    }
    c->unrolled += (int64_t)g->n_node;
    if (c->unrolled > OX_MAX_UNROLLED) {
        ox_err(c, "unrolling control flow exceeds %lld nodes", (long long)OX_MAX_UNROLLED);
        return false;
    }
    const Onnx__NodeProto *node = c->node;
    int idx = c->node_index;
    char where[sizeof c->where], path[sizeof c->path];
    memcpy(where, c->where, sizeof where);
    memcpy(path, c->path, sizeof path);
    snprintf(c->path, sizeof c->path, "%.100s.%.20s.", where, attr);
    int mark = c->vals.n, e0 = rx_diags_count(c->d);
    c->depth++;
    for (size_t i = 0; i < g->n_initializer && rx_diags_count(c->d) == e0; i++) {
        char w[sizeof c->where + 32];
        snprintf(w, sizeof w, "%sinitializer[%zu]", c->path, i);
        const Onnx__TensorProto *t = g->initializer[i];
        rx_const *k = t->name && *t->name ? ox_tensor_const(c, t, w) : NULL;
        if (k) ox_define(c, t->name)->k = k;
        else if (!t->name || !*t->name) rx_diag_add(c->d, w, "initializer without a name");
    }
    for (int i = 0; i < nins && rx_diags_count(c->d) == e0; i++) {
        const char *nm = g->input[i]->name;
        if (nm && *nm) assign(ox_define(c, nm), ins[i]);
    }
    for (size_t i = 0; i < g->n_node && rx_diags_count(c->d) == e0; i++)
        ox_convert_node(c, g->node[i], (int)i);
    ox_val **o = RX_NEWN(c->a, ox_val *, g->n_output ? g->n_output : 1);
    const char *missing = NULL;
    for (size_t i = 0; i < g->n_output && rx_diags_count(c->d) == e0 && !missing; i++) {
        ox_val *v = g->output[i]->name ? ox_find(c, g->output[i]->name) : NULL;
        if (v) o[i] = copy_val(c, v);
        else missing = g->output[i]->name ? g->output[i]->name : "";
    }
    ox_scope_pop(c, mark);
    c->depth--;
    c->node = node;
    c->node_index = idx;
    memcpy(c->where, where, sizeof where);
    memcpy(c->path, path, sizeof path);
    if (missing) ox_err(c, "the '%s' subgraph's output '%s' is not produced", attr, missing);
    *outs = o;
    *nouts = (int)g->n_output;
    return rx_diags_count(c->d) == e0;
}

/* A known boolean/integer scalar; false (and an error naming what) when not known. */
static bool known_scalar(ox_ctx *c, ox_val *v, const char *what, int64_t *out)
{
    rx_const *k = ox_const(c, v);
    if (!k || ox_numel(k) != 1) {
        ox_err(c, "%s must be known at import (a constant, or an input frozen into the model): "
               "run-time control flow is not supported", what);
        return false;
    }
    *out = rx_dtype_is_float(k->dtype) ? (int64_t)ox_cf(k, 0) : ox_ci(k, 0);
    return true;
}

/* Both dims lists equal (the same expressions, or proven equal). */
static bool same_dims(ox_ctx *c, const rx_sinfo *a, const rx_sinfo *b)
{
    if (!a || !b || a->ndim != b->ndim || a->ndim < 0 || !a->dims || !b->dims) return false;
    for (int i = 0; i < a->ndim; i++)
        if (!rx_expr_same(a->dims[i], b->dims[i]) &&
            !rx_arith_prove_equal(c->ar, a->dims[i], b->dims[i]))
            return false;
    return true;
}

/* An If whose condition is computed at run time: both branches are converted and each
 * output is where(cond, then, else). Sound because ONNX ops have no side effects; the
 * branches' outputs must agree in dtype and shape (a shape that depends on the branch
 * cannot be selected element-wise). */
static bool if_select(ox_ctx *c, ox_val *cv)
{
    const rx_sinfo *cs = ox_tensor(c, cv);
    if (!cs) return false;
    if (cs->ndim < 0 || !cs->dims) {
        ox_err(c, "the condition has no known shape");
        return false;
    }
    for (int i = 0; i < cs->ndim; i++) {
        int64_t e;
        if (!rx_expr_is_const(cs->dims[i], &e) || e != 1) {
            ox_err(c, "the condition must hold one element");
            return false;
        }
    }
    ox_val **t, **e;
    int nt, ne;
    if (!ox_subgraph(c, "then_branch", NULL, 0, &t, &nt)) return false;
    if (!ox_subgraph(c, "else_branch", NULL, 0, &e, &ne)) return false;
    if (nt != ox_nout(c) || ne != nt) {
        ox_err(c, "the branches have %d and %d outputs, the node %d", nt, ne, ox_nout(c));
        return false;
    }
    rx_node *cond = ox_reshape(c, ox_astype(c, ox_node(c, cv), RX_DT_BOOL), NULL, 0);
    for (int i = 0; i < nt; i++) {
        if (t[i]->kind != OX_TENSOR || e[i]->kind != OX_TENSOR) {
            ox_err(c, "output %d: a sequence or optional chosen at run time is not supported", i);
            return false;
        }
        rx_node *a = ox_node(c, t[i]), *b = ox_node(c, e[i]);
        if (!a || !b) return false;
        if (ox_dtype_of(a) != ox_dtype_of(b) || !same_dims(c, a->sinfo, b->sinfo)) {
            ox_err(c, "output %d: the branches differ in dtype or shape (a run-time condition "
                   "is a select, which needs both alike)", i);
            return false;
        }
        if (!ox_out_node(c, i, ox_call(c, "where", (rx_node *[]){cond, a, b}, 3, NULL)))
            return false;
    }
    return true;
}

bool ox_c_if(ox_ctx *c)
{
    ox_val *cv = ox_in(c, 0);
    if (cv && !ox_const(c, cv) && !cv->sym) return if_select(c, cv);
    int64_t cond;
    if (!known_scalar(c, cv, "the condition", &cond)) return false;
    ox_val **outs;
    int n;
    if (!ox_subgraph(c, cond ? "then_branch" : "else_branch", NULL, 0, &outs, &n)) return false;
    if (n != ox_nout(c)) {
        ox_err(c, "the branch has %d outputs, the node %d", n, ox_nout(c));
        return false;
    }
    for (int i = 0; i < n; i++) ox_out_alias(c, i, outs[i]);
    return true;
}

/* v[0..n) stacked along a new axis (expand_dims + concat); NULL after an error. */
static rx_node *stack(ox_ctx *c, rx_node **v, int n, int axis)
{
    rx_node **e = RX_NEWN(c->a, rx_node *, n);
    for (int i = 0; i < n; i++) {
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "axis", ox_aints(c, (int64_t[]){axis}, 1));
        if (!(e[i] = ox_call1(c, "expand_dims", v[i], m))) return NULL;
    }
    return n == 1 ? e[0] : ox_concat(c, e, n, axis);
}

bool ox_c_loop(ox_ctx *c)
{
    int64_t trip = -1, cond = 1;
    if (ox_in(c, 0) && !ox_const(c, ox_in(c, 0))) { /* nn.EmbeddingBag's loop over the bags */
        int bag = ox_loop_bag(c);
        if (bag) return bag > 0;
    }
    if (ox_in(c, 0) && !known_scalar(c, ox_in(c, 0), "the trip count M", &trip)) return false;
    if (ox_in(c, 1) && !known_scalar(c, ox_in(c, 1), "the condition", &cond)) return false;
    if (trip < 0 && !ox_in(c, 1) && !ox_in(c, 0)) {
        ox_err(c, "has neither a trip count nor a condition (an infinite loop)");
        return false;
    }
    int nv = (int)c->node->n_input - 2;
    if (nv < 0) {
        ox_err(c, "expects M and cond (possibly empty) before the carried values");
        return false;
    }
    int nscan = ox_nout(c) - nv;
    if (nscan < 0) {
        ox_err(c, "has fewer outputs (%d) than carried values (%d)", ox_nout(c), nv);
        return false;
    }
    ox_val **cur = RX_NEWN(c->a, ox_val *, nv + 2);
    for (int i = 0; i < nv; i++) {
        cur[2 + i] = ox_in(c, 2 + i);
        if (!cur[2 + i]) {
            ox_err(c, "loop-carried value %d is missing", i);
            return false;
        }
    }
    node_vec *scans = RX_NEWN(c->a, node_vec, nscan ? nscan : 1);
    int64_t it = 0;
    bool ok = true;
    for (; ok && (trip < 0 || it < trip) && cond; it++) {
        if (it >= OX_MAX_TRIP) {
            ox_err(c, "more than %d iterations (trip count %lld) to unroll", OX_MAX_TRIP,
                   (long long)trip);
            ok = false;
            break;
        }
        cur[0] = scalar_val(c, RX_DT_I64, it);
        cur[1] = scalar_val(c, RX_DT_BOOL, cond != 0);
        ox_val **outs;
        int n;
        if (!ox_subgraph(c, "body", cur, nv + 2, &outs, &n)) {
            ok = false;
            break;
        }
        if (n != 1 + nv + nscan) {
            ox_err(c, "the body has %d outputs, expected %d", n, 1 + nv + nscan);
            ok = false;
            break;
        }
        if (!known_scalar(c, outs[0], "the body's condition output", &cond)) {
            ok = false;
            break;
        }
        for (int i = 0; i < nv; i++) cur[2 + i] = outs[1 + i];
        for (int j = 0; j < nscan && ok; j++) {
            rx_node *s = ox_node(c, outs[1 + nv + j]);
            ok = s != NULL;
            RX_VEC_PUSH(scans[j], s);
        }
    }
    for (int i = 0; i < nv && ok; i++) ox_out_alias(c, i, cur[2 + i]);
    for (int j = 0; j < nscan && ok; j++) {
        if (!it) {
            ox_err(c, "runs no iteration: its scan outputs have no known shape");
            ok = false;
        } else {
            ok = ox_out_node(c, nv + j, stack(c, scans[j].items, scans[j].n, 0));
        }
    }
    for (int j = 0; j < nscan; j++) RX_VEC_FREE(scans[j]);
    return ok;
}

/* Per-input / per-output attribute list with a default (0). */
static int64_t list_at(ox_ctx *c, const char *name, int i, int n)
{
    int na;
    const int64_t *v = ox_attr_ints(c, name, &na);
    if (na < 0) return 0;
    if (na != n) {
        ox_err(c, "attribute '%s' has %d values, expected %d", name, na, n);
        return INT64_MIN;
    }
    return v[i];
}

/* One Scan over states[0..ns) and scan inputs xs[0..nx) (opset 9 semantics); the final
 * states and the stacked scan outputs in res[0..n outputs). */
static bool scan_core(ox_ctx *c, ox_val **states, int ns, rx_node **xs, int nx, bool opset8,
                      rx_node **res)
{
    int nout = ox_nout(c) - ns;
    int64_t steps = -1;
    int *ax = RX_NEWN(c->a, int, nx ? nx : 1);
    bool *rev = RX_NEWN(c->a, bool, nx ? nx : 1);
    for (int j = 0; j < nx; j++) {
        int nd = ox_ndim(xs[j]);
        int64_t a = opset8 ? 0 : list_at(c, "scan_input_axes", j, nx);
        int64_t d = list_at(c, opset8 ? "directions" : "scan_input_directions", j, nx);
        if (a == INT64_MIN || d == INT64_MIN || !ox_need_dims(c, xs[j])) return false;
        if ((ax[j] = ox_norm_axis(c, a, nd)) < 0) return false;
        rev[j] = d != 0;
        int64_t e;
        if (!rx_expr_is_const(ox_simp(c, xs[j]->sinfo->dims[ax[j]]), &e)) {
            ox_err(c, "scan input %d's scanned axis must have a static extent", j);
            return false;
        }
        if (steps >= 0 && e != steps) {
            ox_err(c, "scan inputs have %lld and %lld steps", (long long)steps, (long long)e);
            return false;
        }
        steps = e;
    }
    if (steps < 1 || steps > OX_MAX_TRIP) {
        ox_err(c, "%lld scan steps (1..%d can be unrolled)", (long long)steps, OX_MAX_TRIP);
        return false;
    }
    ox_val **ins = RX_NEWN(c->a, ox_val *, ns + nx);
    for (int i = 0; i < ns; i++) ins[i] = states[i];
    rx_node ***outs_t = RX_NEWN(c->a, rx_node **, nout ? nout : 1);
    for (int j = 0; j < nout; j++) outs_t[j] = RX_NEWN(c->a, rx_node *, steps);
    for (int64_t t = 0; t < steps; t++) {
        for (int j = 0; j < nx; j++) {
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "axis", ox_aint(c, ax[j]));
            rx_node *a[2] = {xs[j], ox_scalar(c, RX_DT_I64, (double)(rev[j] ? steps - 1 - t : t))};
            rx_node *s = ox_call(c, "take", a, 2, m);
            if (!s) return false;
            ins[ns + j] = RX_NEW(c->a, ox_val);
            ins[ns + j]->name = "";
            ins[ns + j]->node = s;
        }
        ox_val **outs;
        int n;
        if (!ox_subgraph(c, "body", ins, ns + nx, &outs, &n)) return false;
        if (n != ns + nout) {
            ox_err(c, "the body has %d outputs, expected %d", n, ns + nout);
            return false;
        }
        for (int i = 0; i < ns; i++) ins[i] = outs[i];
        for (int j = 0; j < nout; j++)
            if (!(outs_t[j][t] = ox_node(c, outs[ns + j]))) return false;
    }
    for (int i = 0; i < ns; i++)
        if (!(res[i] = ox_node(c, ins[i]))) return false;
    for (int j = 0; j < nout; j++) {
        int64_t a = opset8 ? 0 : list_at(c, "scan_output_axes", j, nout);
        int64_t d = opset8 ? 0 : list_at(c, "scan_output_directions", j, nout);
        if (a == INT64_MIN || d == INT64_MIN) return false;
        int nd = ox_ndim(outs_t[j][0]) + 1, axis = ox_norm_axis(c, a, nd);
        if (axis < 0) return false;
        if (d) /* prepended: the last step first */
            for (int64_t t = 0; t < steps / 2; t++) {
                rx_node *tmp = outs_t[j][t];
                outs_t[j][t] = outs_t[j][steps - 1 - t];
                outs_t[j][steps - 1 - t] = tmp;
            }
        if (!(res[ns + j] = stack(c, outs_t[j], (int)steps, axis))) return false;
    }
    return true;
}

bool ox_c_scan(ox_ctx *c)
{
    bool opset8 = c->opset < 9;
    int first = opset8 ? 1 : 0, nin = (int)c->node->n_input - first;
    int nx = (int)ox_attr_i(c, "num_scan_inputs", 0), ns = nin - nx;
    if (opset8 && ox_in(c, 0)) {
        ox_err(c, "sequence_lens is not supported (every row scans the full length)");
        return false;
    }
    if (nx < 1 || ns < 0 || ox_nout(c) < ns) {
        ox_err(c, "num_scan_inputs %d does not fit %d inputs and %d outputs", nx, nin, ox_nout(c));
        return false;
    }
    rx_node **in = RX_NEWN(c->a, rx_node *, nin);
    for (int i = 0; i < nin; i++)
        if (!(in[i] = ox_in_node(c, first + i))) {
            if (!ox_in(c, first + i)) ox_err(c, "input %d is missing", first + i);
            return false;
        }
    int nres = ox_nout(c);
    rx_node **res = RX_NEWN(c->a, rx_node *, nres);
    ox_val **st = RX_NEWN(c->a, ox_val *, ns ? ns : 1);
    if (!opset8) {
        for (int i = 0; i < ns; i++) st[i] = ox_in(c, i);
        if (!scan_core(c, st, ns, in + ns, nx, false, res)) return false;
    } else { /* a batch axis 0 on everything: each row scanned alone */
        int64_t b;
        if (!ox_need_dims(c, in[0]) || ox_ndim(in[0]) < 1 ||
            !rx_expr_is_const(ox_simp(c, in[0]->sinfo->dims[0]), &b) || b < 1 || b > OX_MAX_TRIP) {
            if (!rx_diags_count(c->d)) ox_err(c, "the batch axis must have a static extent");
            return false;
        }
        rx_node ***rows = RX_NEWN(c->a, rx_node **, nres);
        for (int j = 0; j < nres; j++) rows[j] = RX_NEWN(c->a, rx_node *, b);
        rx_node **row = RX_NEWN(c->a, rx_node *, nin), **r = RX_NEWN(c->a, rx_node *, nres);
        for (int64_t k = 0; k < b; k++) {
            for (int i = 0; i < nin; i++) {
                rx_attr *m = ox_amap(c);
                ox_aset(c, m, "axis", ox_aint(c, 0));
                rx_node *a[2] = {in[i], ox_scalar(c, RX_DT_I64, (double)k)};
                if (!(row[i] = ox_call(c, "take", a, 2, m))) return false;
            }
            for (int i = 0; i < ns; i++) {
                st[i] = RX_NEW(c->a, ox_val);
                st[i]->name = "";
                st[i]->node = row[i];
            }
            /* opset 8 scans axis 1 of the batched input: axis 0 of a row */
            if (!scan_core(c, st, ns, row + ns, nx, true, r)) return false;
            for (int j = 0; j < nres; j++) rows[j][k] = r[j];
        }
        for (int j = 0; j < nres; j++)
            if (!(res[j] = stack(c, rows[j], (int)b, 0))) return false;
    }
    for (int j = 0; j < nres; j++)
        if (!ox_out_node(c, j, res[j])) return false;
    return true;
}
