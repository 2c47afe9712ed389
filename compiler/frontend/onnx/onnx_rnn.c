/*
 * onnx_rnn.c — RNN, GRU and LSTM (opset 7-14) onto one nn.rnn call (docs/ops.md), the
 * recurrence the runtime library runs step after step (rt.rnn), for a sequence length
 * known only at run time: an export with a dynamic sequence axis builds one artifact
 * for every length.
 *
 * nn.rnn takes the sequence time major, x (T, B, I), ONNX's W, R (D, G*H, ...) as they
 * are, B (D, 2*G*H), initial states (D, B, H) and LSTM peepholes (D, 3*H); what the node
 * omits is given as zeros of those shapes. Its result (T+2, D, B, H) holds Y (rows
 * 0..T-1), Y_h (row T) and Y_c (row T+1): the outputs are slices of it, counted from
 * the end so that T may be symbolic. layout 1 ([B, T, I], ONNX opset 14) is permuted to
 * time major on the way in and back on the way out; PyTorch's batch_first exports
 * arrive with layout 0 and their own Transposes.
 * Supported: the default activations (an explicit list equal to the default is
 * accepted; RNN's Relu becomes mode rnn_relu), directions forward, reverse and
 * bidirectional, GRU's linear_before_reset, f32 and f64. sequence_lens equal to a literal
 * sequence length everywhere is dropped; any other (PyTorch's pack_padded_sequence) is
 * composed around per-direction nn.rnn calls in onnx_rnn_lens.c (Y_c then unavailable);
 * other activations, clip and input_forget are located errors.
 */
#include <string.h>

#include "onnx_int.h"

enum { RNN, GRU, LSTM };

/* Whether the node's `activations` (absent, or per direction the default list want of
 * n names) is the default; RNN's may be Relu instead (*relu set). */
static bool default_acts(ox_ctx *c, int kind, int nd, bool *relu)
{
    static const char *const lstm[] = {"Sigmoid", "Tanh", "Tanh"}, *const gru[] = {"Sigmoid", "Tanh"};
    const Onnx__AttributeProto *a = ox_attr(c, "activations");
    *relu = false;
    if (!a) return true;
    int n = kind == LSTM ? 3 : kind == GRU ? 2 : 1;
    if (a->n_strings != (size_t)(n * nd)) return false;
    for (int i = 0; i < n * nd; i++) {
        const ProtobufCBinaryData *s = &a->strings[i];
        const char *want = kind == LSTM ? lstm[i % n] : kind == GRU ? gru[i % n] : "Tanh";
        bool is_relu = kind == RNN && s->len == 4 && !memcmp(s->data, "Relu", 4);
        if (kind == RNN && i > 0 && is_relu != *relu) return false;
        if (is_relu) *relu = true;
        else if (s->len != strlen(want) || memcmp(s->data, want, s->len)) return false;
    }
    return true;
}

static rx_node *permute(ox_ctx *c, rx_node *v, const int64_t *p, int nd)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, p, nd));
    return ox_call1(c, "permute_dims", v, m);
}

/* Zeros of dtype dt and shape d (n dims). */
static rx_node *zeros(ox_ctx *c, rx_expr **d, int n, rx_dtype dt)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *a[2] = {ox_shape_node(c, d, n), ox_scalar(c, dt, 0)};
    return ox_call(c, "full", a, 2, m);
}

/* Rows [b, e) of v's axis 0, counted from the end (e = 0: to the end). */
static rx_node *tail_rows(ox_ctx *c, rx_node *v, int64_t b, int64_t e)
{
    int64_t ax = 0, end = e ? e : INT64_MAX;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, &ax, 1));
    ox_aset(c, m, "begin", ox_aints(c, &b, 1));
    ox_aset(c, m, "end", ox_aints(c, &end, 1));
    return ox_call1(c, "strided_slice", v, m);
}

/* An initial state input (D, B, H), or [B, D, H] in layout 1, as (D, B, H); zeros when
 * absent. */
static rx_node *state(ox_ctx *c, int i, int layout, rx_expr **dbh, rx_dtype dt)
{
    static const int64_t swap[3] = {1, 0, 2};
    if (!ox_in(c, i)) return zeros(c, dbh, 3, dt);
    rx_node *v = ox_in_node(c, i);
    return v && layout ? permute(c, v, swap, 3) : v;
}

/* The outputs under run-time sequence_lens (onnx_rnn_lens.c): Y, Y_h; Y_c unavailable. */
static bool varlen_outputs(ox_ctx *c, rx_node *x, rx_node **a, const char *mode, bool lbr,
                           const char *dir, int nd, int layout)
{
    static const int64_t to_bt[4] = {2, 0, 1, 3}, swap01[3] = {1, 0, 2};
    rx_node *y, *yh;
    if (!ox_rnn_lens(c, x, a, mode, lbr, dir, nd, &y, &yh)) return false;
    if (layout) {
        y = permute(c, y, to_bt, 4);
        yh = permute(c, yh, swap01, 3);
    }
    if (ox_nout(c) > 0 && *c->node->output[0] && !ox_out_node(c, 0, y)) return false;
    if (ox_nout(c) > 1 && *c->node->output[1] && !ox_out_node(c, 1, yh)) return false;
    if (ox_nout(c) > 2 && *c->node->output[2])
        ox_out_unavail(c, 2, "Y_c under sequence_lens known only at run time is not supported");
    return true;
}

bool ox_c_rnn(ox_ctx *c)
{
    const char *t = c->node->op_type;
    int kind = !strcmp(t, "RNN") ? RNN : !strcmp(t, "GRU") ? GRU : LSTM;
    int64_t g = kind == RNN ? 1 : kind == GRU ? 3 : 4, h = ox_attr_i(c, "hidden_size", 0);
    int layout = (int)ox_attr_i(c, "layout", 0);
    const char *dir = ox_attr_s(c, "direction", "forward");
    int nd = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool relu;
    if (!default_acts(c, kind, nd, &relu) || ox_attr(c, "clip") || ox_attr_i(c, "input_forget", 0)) {
        ox_err(c, "only the default activations (and Relu for RNN), no clip and no input_forget "
                  "are supported");
        return false;
    }
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && nd != 2) {
        ox_err(c, "direction '%s' is not supported", dir);
        return false;
    }
    rx_node *x = ox_in_node(c, 0), *w = ox_in_node(c, 1), *r = ox_in_node(c, 2);
    if (!ox_need_dims(c, x) || !w || !r) return false;
    static const int64_t swap01[3] = {1, 0, 2};
    if (layout) x = permute(c, x, swap01, 3); /* [T, B, I] */
    if (!x || x->sinfo->ndim != 3 || h < 1) {
        ox_err(c, "needs a 3-d input and a positive hidden_size");
        return false;
    }
    rx_dtype dt = ox_dtype_of(x);
    if (dt != RX_DT_F32 && dt != RX_DT_F64) {
        ox_err(c, "runs in float32 or float64, found %s", rx_dtype_name(dt));
        return false;
    }
    bool varlen = false;
    if (ox_in(c, 4)) { /* sequence_lens: every sequence full length, or onnx_rnn_lens.c */
        int64_t steps, *sl;
        int n;
        bool full = rx_expr_is_const(ox_simp(c, x->sinfo->dims[0]), &steps) &&
                    ox_const(c, ox_in(c, 4)) && ox_ints(c, ox_in(c, 4), &sl, &n);
        for (int i = 0; full && i < n; i++) full = sl[i] == steps;
        varlen = !full;
    }
    rx_expr *dbh[3] = {ox_lit(c, nd), x->sinfo->dims[1], ox_lit(c, h)};
    rx_expr *db[2] = {ox_lit(c, nd), ox_lit(c, 2 * g * h)}, *dp[2] = {ox_lit(c, nd), ox_lit(c, 3 * h)};
    rx_node *a[7] = {x, w, r, ox_in(c, 3) ? ox_in_node(c, 3) : zeros(c, db, 2, dt),
                     state(c, 5, layout, dbh, dt),
                     kind == LSTM ? state(c, 6, layout, dbh, dt) : zeros(c, dbh, 3, dt),
                     kind == LSTM && ox_in(c, 7) ? ox_in_node(c, 7) : zeros(c, dp, 2, dt)};
    for (int i = 0; i < 7; i++)
        if (!a[i]) return false;
    const char *mode = kind == LSTM ? "lstm" : kind == GRU ? "gru" : relu ? "rnn_relu" : "rnn_tanh";
    bool lbr = ox_attr_i(c, "linear_before_reset", 0) != 0;
    if (varlen) return varlen_outputs(c, x, a, mode, lbr, dir, nd, layout);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "mode", ox_astr(c, mode));
    ox_aset(c, m, "direction", ox_astr(c, dir));
    ox_aset(c, m, "linear_before_reset", ox_abool(c, lbr));
    rx_node *all = ox_call(c, "nn.rnn", a, 7, m); /* (T+2, D, B, H) */
    if (!all) return false;
    if (ox_nout(c) > 0 && *c->node->output[0]) { /* Y: [T, D, B, H] or [B, T, D, H] */
        static const int64_t to_bt[4] = {2, 0, 1, 3};
        rx_node *y = tail_rows(c, all, 0, -2);
        /* rows [0, T + 2 - 2) have extent max(0, T) for a symbolic T, which no proof
         * relates to T (Demucs adds Y to a skip cut to its length): T it is */
        rx_expr *ydims[4] = {x->sinfo->dims[0], ox_lit(c, nd), x->sinfo->dims[1], ox_lit(c, h)};
        if (y && ox_ndim(y) == 4 && y->sinfo->dims &&
            !rx_arith_prove_equal(c->ar, y->sinfo->dims[0], ydims[0]))
            y = ox_match_dims(c, y, ydims, 4);
        if (y && layout) y = permute(c, y, to_bt, 4);
        if (!ox_out_node(c, 0, y)) return false;
    }
    for (int o = 1; o < 3 && o < ox_nout(c); o++) { /* Y_h, Y_c: [D, B, H] or [B, D, H] */
        if (!*c->node->output[o]) continue;
        int64_t ax = 0;
        rx_attr *sq = ox_amap(c);
        ox_aset(c, sq, "axis", ox_aints(c, &ax, 1));
        rx_node *v = ox_call1(c, "squeeze", tail_rows(c, all, o == 1 ? -2 : -1, o == 1 ? -1 : 0), sq);
        if (v && layout) v = permute(c, v, swap01, 3);
        if (!ox_out_node(c, o, v)) return false;
    }
    return true;
}
