/*
 * onnx_rnn.c — RNN, GRU and LSTM (opset 7-14) unrolled over a sequence length known at
 * import. The input's part of every gate, x W^T + Wb, is one matmul over all T steps
 * per direction (a (T*B, I) x (I, G*H) product, where the library's GEMM is efficient,
 * instead of T products of B rows); each step is then the recurrence's matmul
 * (transposed weights taken once per direction, folded when constant), the gates
 * sliced from the sum and the ONNX cell equations with the default activations
 * (Sigmoid, Tanh):
 *   RNN   H = tanh(x W^T + H R^T + Wb + Rb)
 *   GRU   z, r = sigmoid(...), h~ = tanh(x Wh^T + (r * H) Rh^T + Rbh + Wbh), or with
 *         linear_before_reset tanh(x Wh^T + r * (H Rh^T + Rbh) + Wbh);
 *         H = (1 - z) * h~ + z * H
 *   LSTM  i, f = sigmoid(... + P * C), c~ = tanh(...), C = f * C + i * c~,
 *         o = sigmoid(... + Po * C), H = o * tanh(C)   (gate order i, o, f, c; P i, o, f)
 * Directions forward, reverse and bidirectional; layout 0 ([T, B, I]) and 1 ([B, T,
 * I]); Y stacks H per step ([T, D, B, H] or [B, T, D, H]), Y_h and Y_c the last. The
 * graph grows with the sequence length (T steps of a few ops each): meant for the
 * short, static sequences of exported models. sequence_lens must be a constant equal
 * to T everywhere; other activations, clip and input_forget are located errors.
 */
#include <string.h>

#include "onnx_int.h"

enum { RNN, GRU, LSTM };

typedef struct cell {
    int kind, g;          /* gates per cell: 1, 3, 4 */
    int64_t h;            /* hidden size */
    bool lbr;             /* GRU linear_before_reset */
    rx_node *wt, *rt;     /* W^T (I, G*H), R^T (H, G*H) of the direction */
    rx_node *wb, *rb;     /* biases (G*H) or NULL */
    rx_node *p;           /* LSTM peepholes (3H) or NULL */
} cell;

/* Element i along axis 0 of v (a 0-d index take). */
static rx_node *pick(ox_ctx *c, rx_node *v, int64_t i, int axis)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, axis));
    rx_node *a[2] = {v, ox_scalar(c, RX_DT_I64, (double)i)};
    return ox_call(c, "take", a, 2, m);
}

/* v[..., k*h : (k+1)*h] along its last axis. */
static rx_node *gate(ox_ctx *c, rx_node *v, int k, int64_t h)
{
    if (!v) return NULL;
    int64_t ax = ox_ndim(v) - 1, b = k * h, e = (k + 1) * h;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &ax, 1));
    ox_aset(c, m, "begin", ox_aints(c, &b, 1));
    ox_aset(c, m, "end", ox_aints(c, &e, 1));
    return ox_call1(c, "strided_slice", v, m);
}

static rx_node *add(ox_ctx *c, rx_node *x, rx_node *y)
{
    return x && y ? ox_call2(c, "add", x, y) : x ? x : y;
}
static rx_node *mul(ox_ctx *c, rx_node *x, rx_node *y) { return ox_call2(c, "multiply", x, y); }
static rx_node *act(ox_ctx *c, const char *f, rx_node *x) { return ox_call1(c, f, x, NULL); }

/* One step: the new H (and C for LSTM) from the input's gates xg = xt W^T + Wb (B, G*H). */
static bool step(ox_ctx *c, const cell *k, rx_node *xg, rx_node **h, rx_node **cs)
{
    if (!xg) return false;
    rx_node *hg = ox_call2(c, "matmul", *h, k->rt);
    if (k->kind == RNN) {
        *h = act(c, "tanh", add(c, add(c, xg, hg), k->rb));
        return *h != NULL;
    }
    if (k->kind == GRU) {
        rx_node *hb = add(c, hg, k->rb);
        rx_node *z = act(c, "sigmoid", add(c, gate(c, xg, 0, k->h), gate(c, hb, 0, k->h)));
        rx_node *r = act(c, "sigmoid", add(c, gate(c, xg, 1, k->h), gate(c, hb, 1, k->h)));
        rx_node *hh;
        if (k->lbr) {
            hh = mul(c, r, gate(c, hb, 2, k->h));
        } else {
            rx_node *rt2 = gate(c, k->rt, 2, k->h);
            hh = add(c, ox_call2(c, "matmul", mul(c, r, *h), rt2), gate(c, k->rb, 2, k->h));
        }
        rx_node *ht = act(c, "tanh", add(c, gate(c, xg, 2, k->h), hh));
        rx_node *one = ox_scalar(c, ox_dtype_of(xg), 1);
        *h = add(c, mul(c, ox_call2(c, "subtract", one, z), ht), mul(c, z, *h));
        return *h != NULL;
    }
    rx_node *all = add(c, add(c, xg, hg), k->rb);
    rx_node *gi = gate(c, all, 0, k->h), *go = gate(c, all, 1, k->h);
    rx_node *gf = gate(c, all, 2, k->h), *gc = gate(c, all, 3, k->h);
    if (k->p) {
        gi = add(c, gi, mul(c, gate(c, k->p, 0, k->h), *cs));
        gf = add(c, gf, mul(c, gate(c, k->p, 2, k->h), *cs));
    }
    rx_node *cn = add(c, mul(c, act(c, "sigmoid", gf), *cs), mul(c, act(c, "sigmoid", gi), act(c, "tanh", gc)));
    if (k->p) go = add(c, go, mul(c, gate(c, k->p, 1, k->h), cn));
    *cs = cn;
    *h = mul(c, act(c, "sigmoid", go), act(c, "tanh", cn));
    return *h != NULL;
}

static rx_node *unsqueeze(ox_ctx *c, rx_node *v, int64_t axis)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aints(c, &axis, 1));
    return ox_call1(c, "expand_dims", v, m);
}

static rx_node *swap01(ox_ctx *c, rx_node *v, int nd)
{
    int64_t p[4] = {1, 0, 2, 3};
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, p, nd));
    return ox_call1(c, "permute_dims", v, m);
}

bool ox_c_rnn(ox_ctx *c)
{
    const char *t = c->node->op_type;
    cell k = {0};
    k.kind = !strcmp(t, "RNN") ? RNN : !strcmp(t, "GRU") ? GRU : LSTM;
    k.g = k.kind == RNN ? 1 : k.kind == GRU ? 3 : 4;
    k.h = ox_attr_i(c, "hidden_size", 0);
    k.lbr = ox_attr_i(c, "linear_before_reset", 0) != 0;
    int layout = (int)ox_attr_i(c, "layout", 0);
    const char *dir = ox_attr_s(c, "direction", "forward");
    int nd = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (ox_attr(c, "activations") || ox_attr(c, "clip") || ox_attr_i(c, "input_forget", 0)) {
        ox_err(c, "only the default activations, no clip and no input_forget are supported");
        return false;
    }
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && nd != 2) {
        ox_err(c, "direction '%s' is not supported", dir);
        return false;
    }
    rx_node *x = ox_in_node(c, 0), *w = ox_in_node(c, 1), *r = ox_in_node(c, 2);
    if (!ox_need_dims(c, x) || !w || !r) return false;
    if (layout) x = swap01(c, x, 3); /* [T, B, I] */
    int64_t steps;
    if (!x || x->sinfo->ndim != 3 || !rx_expr_is_const(ox_simp(c, x->sinfo->dims[0]), &steps) ||
        steps > 4096 || k.h < 1) {
        ox_err(c, "needs a 3-d input with a literal sequence length (at most 4096) and hidden_size");
        return false;
    }
    if (ox_in(c, 4)) { /* sequence_lens: every sequence full length */
        int64_t *sl;
        int n;
        bool full = ox_ints(c, ox_in(c, 4), &sl, &n);
        for (int i = 0; full && i < n; i++) full = sl[i] == steps;
        if (!full) {
            ox_err(c, "sequence_lens must be a constant equal to the sequence length %lld",
                   (long long)steps);
            return false;
        }
    }
    rx_dtype dt = ox_dtype_of(x);
    rx_node **ys = RX_NEWN(c->a, rx_node *, (size_t)(steps > 0 ? steps : 1) * (size_t)nd);
    rx_node *yh[2], *yc[2];
    for (int d = 0; d < nd; d++) {
        bool rev = !strcmp(dir, "reverse") || d == 1;
        k.wt = ox_call1(c, "permute_dims", pick(c, w, d, 0), NULL);
        k.rt = ox_call1(c, "permute_dims", pick(c, r, d, 0), NULL);
        k.wb = k.rb = k.p = NULL;
        if (ox_in(c, 3)) {
            rx_node *b = pick(c, ox_in_node(c, 3), d, 0);
            k.wb = gate(c, b, 0, k.g * k.h);
            k.rb = gate(c, b, 1, k.g * k.h);
        }
        if (k.kind == LSTM && ox_in(c, 7)) k.p = pick(c, ox_in_node(c, 7), d, 0);
        rx_expr *hd[2] = {x->sinfo->dims[1], ox_lit(c, k.h)};
        rx_attr *m = ox_amap(c);
        ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
        rx_node *a[2] = {ox_shape_node(c, hd, 2), ox_scalar(c, dt, 0)};
        rx_node *zero = ox_call(c, "full", a, 2, m), *cs = NULL;
        rx_node *h = ox_in(c, 5) ? pick(c, ox_in_node(c, 5), d, layout ? 1 : 0) : zero;
        if (k.kind == LSTM) cs = ox_in(c, 6) ? pick(c, ox_in_node(c, 6), d, layout ? 1 : 0) : zero;
        rx_node *xg = add(c, ox_call2(c, "matmul", x, k.wt), k.wb); /* (T, B, G*H) */
        for (int64_t s = 0; s < steps; s++) {
            int64_t ti = rev ? steps - 1 - s : s;
            if (!step(c, &k, pick(c, xg, ti, 0), &h, &cs)) return false;
            ys[ti * nd + d] = h;
        }
        yh[d] = h;
        yc[d] = cs;
    }
    /* Y: [T, D, B, H] */
    if (ox_nout(c) > 0 && *c->node->output[0]) {
        rx_node **rows = RX_NEWN(c->a, rx_node *, (size_t)(steps > 0 ? steps : 1));
        for (int64_t s = 0; s < steps; s++) {
            rx_node *dirs[2];
            for (int d = 0; d < nd; d++) dirs[d] = unsqueeze(c, ys[s * nd + d], 0);
            rows[s] = unsqueeze(c, ox_concat(c, dirs, nd, 0), 0);
        }
        rx_node *y = ox_concat(c, rows, (int)steps, 0);
        if (y && layout) { /* [B, T, D, H] */
            int64_t p[4] = {2, 0, 1, 3};
            rx_attr *m = ox_amap(c);
            ox_aset(c, m, "axes", ox_aints(c, p, 4));
            y = ox_call1(c, "permute_dims", y, m);
        }
        if (!ox_out_node(c, 0, y)) return false;
    }
    for (int o = 1; o < 3 && o < ox_nout(c); o++) {
        if (!*c->node->output[o]) continue;
        rx_node *dirs[2];
        for (int d = 0; d < nd; d++) dirs[d] = unsqueeze(c, o == 1 ? yh[d] : yc[d], layout ? 1 : 0);
        if (!ox_out_node(c, o, ox_concat(c, dirs, nd, layout ? 1 : 0))) return false;
    }
    return true;
}
