/*
 * onnx_rnn_lens.c — RNN, GRU and LSTM with sequence_lens known only at run time (PyTorch's
 * pack_padded_sequence / pad_packed_sequence export them so, with enforce_sorted=False),
 * composed around the same nn.rnn call as onnx_rnn.c, without a new runtime kernel.
 *
 * ONNX's semantics, per batch row b of length L[b] (1 <= L[b] <= T): the forward
 * direction runs steps 0..L[b]-1, the reverse one steps L[b]-1..0; Y is zero at steps
 * t >= L[b]; Y_h is the hidden state after the last step a direction runs. Since a
 * forward recurrence at step t reads steps <= t only, the full-length run agrees with the
 * truncated one before L[b]; so each direction is one nn.rnn (direction forward, that
 * direction's W R B states and peepholes sliced out) over
 *   forward:  x as it is;
 *   reverse:  x reversed within each row's length (ReverseSequence's gather, positions
 *             t >= L[b] kept in place), its output reversed back the same way;
 * then Y = where(t < L[b], Y_run, 0) and Y_h = Y_run[L[b] - 1] (a gather along time;
 * for the reverse direction Y_run is the reversed run's own output, whose step L[b] - 1
 * has consumed x[0]). Directions are concatenated along D.
 * LSTM's Y_c (the cell after step L[b] - 1) is not among nn.rnn's results (it returns the
 * last step's cell only), so Y_c is left unavailable: using it is a located error; models
 * that read the outputs and h_n (the usual packed-sequence encoder) import.
 * Cost: a bidirectional node becomes two nn.rnn calls (each D = 1) plus two gathers over x
 * and Y for the reverse direction and the masks: O(T B (I + H)) extra element work beside
 * the recurrence's O(T B H (I + H)).
 */
#include <string.h>

#include "onnx_int.h"

/* Rows [b, b + 1) of v's axis 0. */
static rx_node *row(ox_ctx *c, rx_node *v, int64_t b)
{
    int64_t ax = 0, e = b + 1;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &ax, 1));
    ox_aset(c, m, "begin", ox_aints(c, &b, 1));
    ox_aset(c, m, "end", ox_aints(c, &e, 1));
    return ox_call1(c, "strided_slice", v, m);
}

/* lens (B,) reshaped to rank nd with B at axis bax, 1 elsewhere. */
static rx_node *lens_at(ox_ctx *c, rx_node *lens, rx_expr *b, int bax, int nd)
{
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == bax ? b : ox_lit(c, 1);
    return ox_reshape(c, lens, d, nd);
}

/* gather_elements of v along axis 0 by idx broadcast to v's shape. */
static rx_node *gather_time(ox_ctx *c, rx_node *v, rx_node *idx, rx_expr **shape, int nd)
{
    rx_node *a[2] = {v, ox_call2(c, "broadcast_to", idx, ox_shape_node(c, shape, nd))};
    if (!a[1]) return NULL;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 0));
    return ox_call(c, "gather_elements", a, 2, m);
}

/* v (time on axis 0, batch on axis bax) reversed within each row's length. */
static rx_node *reverse_in_length(ox_ctx *c, rx_node *v, rx_node *lens, int bax)
{
    if (!v || !ox_need_dims(c, v)) return NULL;
    int nd = ox_ndim(v);
    rx_expr **d = v->sinfo->dims;
    rx_node *t = ox_iota(c, d[0], 0, nd, RX_DT_I64), *l = lens_at(c, lens, d[bax], bax, nd);
    rx_node *rev = ox_call2(c, "subtract", ox_call2(c, "subtract", l, ox_scalar(c, RX_DT_I64, 1)), t);
    rx_node *w[3] = {ox_call2(c, "less", t, l), rev, t};
    if (!w[0] || !w[1] || !w[2]) return NULL;
    return gather_time(c, v, ox_call(c, "where", w, 3, NULL), d, nd);
}

bool ox_rnn_lens(ox_ctx *c, rx_node *x, rx_node **a, const char *mode, bool lbr,
                 const char *dir, int nd, rx_node **y, rx_node **yh)
{
    rx_node *lens = ox_astype(c, ox_in_node(c, 4), RX_DT_I64);
    if (!lens || !ox_need_dims(c, lens) || ox_ndim(lens) != 1) {
        if (lens) ox_err(c, "sequence_lens must be 1-d");
        return false;
    }
    rx_expr **xd = x->sinfo->dims;
    if (!rx_expr_same(lens->sinfo->dims[0], xd[1]) &&
        !rx_arith_prove_equal(c->ar, lens->sinfo->dims[0], xd[1]))
        lens = ox_match_dims(c, lens, &xd[1], 1); /* one length per batch row */
    if (!lens) return false;
    rx_node **ys = RX_NEWN(c->a, rx_node *, nd), **hs = RX_NEWN(c->a, rx_node *, nd);
    /* time mask (T, 1, B, 1) and the last step's index max(L - 1, 0) as (1, 1, B, 1) */
    rx_node *l4 = lens_at(c, lens, xd[1], 2, 4);
    rx_node *mask = ox_call2(c, "less", ox_iota(c, xd[0], 0, 4, RX_DT_I64), l4);
    rx_node *last = ox_call2(c, "maximum", ox_call2(c, "subtract", l4, ox_scalar(c, RX_DT_I64, 1)),
                             ox_scalar(c, RX_DT_I64, 0));
    if (!mask || !last) return false;
    for (int d = 0; d < nd; d++) {
        bool rev = nd == 2 ? d == 1 : !strcmp(dir, "reverse");
        rx_node *in[7] = {rev ? reverse_in_length(c, x, lens, 1) : x};
        for (int i = 1; i < 7; i++) in[i] = nd == 2 ? row(c, a[i], d) : a[i];
        for (int i = 0; i < 7; i++)
            if (!in[i]) return false;
        rx_attr *md = ox_amap(c);
        ox_aset(c, md, "mode", ox_astr(c, mode));
        ox_aset(c, md, "direction", ox_astr(c, "forward"));
        ox_aset(c, md, "linear_before_reset", ox_abool(c, lbr));
        rx_node *all = ox_call(c, "nn.rnn", in, 7, md); /* (T+2, 1, B, H) */
        if (!all || !ox_need_dims(c, all)) return false;
        int64_t ax = 0, b = 0, e = -2;
        rx_attr *sl = ox_amap(c);
        ox_aset(c, sl, "axes", ox_aints(c, &ax, 1));
        ox_aset(c, sl, "begin", ox_aints(c, &b, 1));
        ox_aset(c, sl, "end", ox_aints(c, &e, 1));
        rx_node *run = ox_call1(c, "strided_slice", all, sl); /* (T, 1, B, H) */
        if (!run || !ox_need_dims(c, run)) return false;
        rx_expr *hd[4] = {ox_lit(c, 1), ox_lit(c, 1), xd[1], run->sinfo->dims[3]};
        rx_node *h = gather_time(c, run, last, hd, 4); /* (1, 1, B, H) */
        rx_node *yd = rev ? reverse_in_length(c, run, lens, 2) : run;
        rx_node *w[3] = {mask, yd, ox_scalar(c, ox_dtype_of(x), 0)};
        if (!h || !yd) return false;
        ys[d] = ox_call(c, "where", w, 3, NULL);
        rx_attr *sq = ox_amap(c);
        ox_aset(c, sq, "axis", ox_aints(c, &ax, 1));
        hs[d] = ox_call1(c, "squeeze", h, sq); /* (1, B, H) */
        if (!ys[d] || !hs[d]) return false;
    }
    *y = nd == 2 ? ox_concat(c, ys, 2, 1) : ys[0];
    *yh = nd == 2 ? ox_concat(c, hs, 2, 0) : hs[0];
    return *y && *yh;
}
