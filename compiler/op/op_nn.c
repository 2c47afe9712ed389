/*
 * op_nn.c — neural-network ops: softmax and log_softmax, layer/RMS/batch/group norm,
 * conv2d / conv3d (and their transposes), max/avg pooling in 2-d and 3-d, adaptive
 * average pooling; nn.rnn, the recurrence of ONNX's LSTM / GRU / RNN (docs/ops.md).
 *
 * Layouts: v1 computes in NCHW / NCDHW (data) and OIHW / OIDHW (kernels) only; any
 * other layout attribute is a clear error rather than a silently wrong shape. One
 * deduction serves both ranks: S = 3 spatial dims for the *3d* ops, else 2.
 *
 * Window arithmetic (conv and pooling), per spatial dim, symbolic-aware:
 *   out = (in + pad_before + pad_after - dilation * (k - 1) - 1 + extra) // stride + 1
 * with extra = stride - 1 in ceil_mode and 0 otherwise, simplified by the arithmetic.
 * A result that simplifies to a literal below 1 is an error (window larger than the
 * padded input). Padding takes 1 value (all sides), S (each dim's both sides) or 2 * S
 * (the befores, then the afters: top, left, bottom, right in 2-d), as in TVM.
 *
 * Checks that need dims (channels, gamma shapes) are errors only when proved wrong;
 * unknown dims or ndim degrade to the coarsest correct annotation (Tensor(ndim=S+2)
 * for conv and pooling, whose inputs must be (S + 2)-D).
 */
#include "op_int.h"

#include <stdio.h>
#include <string.h>

/* True when a and b are proved different (literals, or the arithmetic). */
static bool proved_ne(rx_dctx *c, rx_expr *a, rx_expr *b)
{
    int64_t ka, kb;
    if (rx_expr_is_const(a, &ka) && rx_expr_is_const(b, &kb)) return ka != kb;
    return rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_NE, a, b));
}

static bool check_float(rx_dctx *c, const rx_node *call, const rx_sinfo *x)
{
    rx_dtype dt = (rx_dtype)x->dtype;
    if (dt == RX_DT_UNKNOWN || rx_dtype_is_float(dt)) return true;
    rx_op_fail(c, call, "requires a float tensor, found dtype %s", rx_dtype_name(dt));
    return false;
}

/* A known ndim must equal want. */
static bool check_ndim(rx_dctx *c, const rx_node *call, const rx_sinfo *x, int argi, int want)
{
    if (x->ndim < 0 || x->ndim == want) return true;
    rx_op_fail(c, call, "argument %d must be %d-D, found %s", argi, want,
               rx_op_dims_str(c->a, x->dims, x->ndim));
    return false;
}

/* The dtype of x combined with every further tensor argument from `from` on. */
static bool common_dtype(rx_dctx *c, const rx_node *call, const rx_sinfo **args, int n,
                         rx_dtype *dt) {
    *dt = (rx_dtype)args[0]->dtype;
    for (int i = 1; i < n; i++)
        if (!rx_d_same_dtype(c, call, *dt, (rx_dtype)args[i]->dtype, dt)) return false;
    return true;
}

static bool check_layout(rx_dctx *c, const rx_node *call, const char *attr, const char *want)
{
    const char *got = rx_call_attr(call, attr)->u.s;
    if (strcmp(got, want) == 0) return true;
    rx_op_fail(c, call, "%s \"%s\" is not supported (v1 supports \"%s\" only)", attr, got,
               want);
    return false;
}

/* ---------------------------------------------------------------- softmax */
static rx_sinfo *deduce_softmax(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x || !check_float(c, call, x)) return NULL;
    int ax;
    if (x->ndim >= 0 && !rx_d_axis(c, call, rx_call_attr(call, "axis")->u.i, x->ndim, &ax))
        return NULL;
    return rx_op_like(c, x, (rx_dtype)x->dtype);
}

/* ---------------------------------------------------------------- norms */
enum { MAX_AXES = 64 };

/* Reads and normalizes the "axes" attribute against x's known ndim into ax[0..*n);
 * repeated axes are an error. */
static bool norm_axes(rx_dctx *c, const rx_node *call, const rx_sinfo *x, int *ax, int *n)
{
    int64_t raw[MAX_AXES];
    if (!rx_op_int_list(c, call, "axes", raw, MAX_AXES, n)) return false;
    for (int i = 0; i < *n; i++) {
        if (!rx_d_axis(c, call, raw[i], x->ndim, &ax[i])) return false;
        for (int j = 0; j < i; j++)
            if (ax[j] == ax[i]) {
                rx_op_fail(c, call, "axis %d is repeated in axes", ax[i]);
                return false;
            }
    }
    return true;
}

/* A parameter tensor (gamma, beta, weight) must have one dim per normalized axis,
 * each matching x's dim at that axis. */
static bool check_param(rx_dctx *c, const rx_node *call, const rx_sinfo *x, const int *ax,
                        int n, const rx_sinfo *p, int argi) {
    if (p->ndim < 0) return true;
    if (p->ndim != n) {
        rx_op_fail(c, call, "argument %d must have %d dimension%s (one per normalized "
                   "axis), found %s", argi, n, n == 1 ? "" : "s",
                   rx_op_dims_str(c->a, p->dims, p->ndim));
        return false;
    }
    if (!x->dims || !p->dims) return true;
    for (int j = 0; j < n; j++)
        if (proved_ne(c, p->dims[j], x->dims[ax[j]])) {
            rx_op_fail(c, call, "argument %d has shape %s, but the normalized dims of the "
                       "input %s are not that", argi,
                       rx_op_dims_str(c->a, p->dims, p->ndim),
                       rx_op_dims_str(c->a, x->dims, x->ndim));
            return false;
        }
    return true;
}

/* group_norm(x, gamma, beta; num_groups, channel_axis = 1, axes = null, epsilon,
 * center, scale): x float of rank >= 2 with channels at axis 1 (a multiple of
 * num_groups when literal), normalized per (n, group) over the group's channels and
 * every axis after 1; gamma and beta (C,). TVM's relax.op.nn.group_norm with
 * channel_axis 1 and axes 2.. (null): the only layout accepted. */
static rx_sinfo *deduce_group_norm(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *args[3];
    for (int i = 0; i < 3; i++)
        if (!(args[i] = rx_d_tensor_arg(c, call, i))) return NULL;
    const rx_sinfo *x = args[0];
    rx_dtype dt;
    if (!check_float(c, call, x) || !common_dtype(c, call, args, 3, &dt)) return NULL;
    int64_t g = rx_call_attr(call, "num_groups")->u.i, ch;
    const rx_attr *axes = rx_call_attr(call, "axes");
    if (g < 1) return rx_op_fail(c, call, "num_groups must be at least 1, found %lld", (long long)g);
    if (rx_call_attr(call, "channel_axis")->u.i != 1 || axes->kind != RX_A_NULL)
        return rx_op_fail(c, call, "only channel_axis 1 with the axes after it (axes null) is supported");
    if (x->ndim >= 0 && x->ndim < 2) return rx_op_fail(c, call, "needs an input of rank 2 or more");
    if (x->dims && rx_expr_is_const(x->dims[1], &ch) && ch % g)
        return rx_op_fail(c, call, "num_groups %lld does not divide the %lld channels", (long long)g,
                          (long long)ch);
    int ax = 1;
    for (int i = 1; i < 3 && x->ndim >= 0; i++)
        if (!check_param(c, call, x, &ax, 1, args[i], i)) return NULL;
    return rx_op_like(c, x, dt);
}

/* layer_norm (nparams 2: gamma, beta) and rms_norm (nparams 1: weight). */
static rx_sinfo *deduce_norm(rx_dctx *c, const rx_node *call)
{
    int nargs = call->u.call.op->max_args; /* 3 or 2; a missing one is an error */
    const rx_sinfo *args[3] = {NULL, NULL, NULL};
    RX_ASSERT(nargs >= 2 && nargs <= 3);
    for (int i = 0; i < nargs; i++)
        if (!(args[i] = rx_d_tensor_arg(c, call, i))) return NULL;
    const rx_sinfo *x = args[0];
    rx_dtype dt;
    if (!check_float(c, call, x) || !common_dtype(c, call, args, nargs, &dt)) return NULL;
    if (x->ndim >= 0) {
        int ax[MAX_AXES], n;
        if (!norm_axes(c, call, x, ax, &n)) return NULL;
        for (int i = 1; i < nargs; i++)
            if (!check_param(c, call, x, ax, n, args[i], i)) return NULL;
    }
    return rx_op_like(c, x, dt);
}

static rx_sinfo *deduce_batch_norm(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *args[5];
    for (int i = 0; i < 5; i++)
        if (!(args[i] = rx_d_tensor_arg(c, call, i))) return NULL;
    const rx_sinfo *x = args[0];
    rx_dtype dt;
    if (!check_float(c, call, x) || !common_dtype(c, call, args, 5, &dt)) return NULL;
    if (x->ndim >= 0) {
        int ax;
        if (!rx_d_axis(c, call, rx_call_attr(call, "axis")->u.i, x->ndim, &ax)) return NULL;
        for (int i = 1; i < 5; i++)
            if (!check_param(c, call, x, &ax, 1, args[i], i)) return NULL;
    }
    rx_sinfo *fields[3] = { rx_op_like(c, x, dt), rx_op_like(c, args[3], dt),
                            rx_op_like(c, args[4], dt) };
    return rx_si_tuple(c->a, fields, 3);
}

/* ---------------------------------------------------------------- windows */
enum { MAXSP = 3 }; /* spatial dims: 2 (the *2d ops) or 3 (the *3d ops) */

/* The number of spatial dims of a windowed op: 3 for the *3d* ops, else 2. */
static int op_nsp(const rx_node *call)
{
    return strstr(call->u.call.op->name, "3d") ? 3 : 2;
}

/* Reads an S-value attribute (1 value: all) into v; each must be >= lo. */
static bool sp_attr(rx_dctx *c, const rx_node *call, const char *name, int64_t lo, int S,
                    int64_t v[MAXSP]) {
    int64_t raw[2 * MAXSP];
    int n;
    if (!rx_op_int_list(c, call, name, raw, 2 * MAXSP, &n)) return false;
    if (n != 1 && n != S) {
        rx_op_fail(c, call, "attribute \"%s\" needs 1 or %d values, found %d", name, S, n);
        return false;
    }
    for (int i = 0; i < S; i++) {
        v[i] = raw[n == 1 ? 0 : i];
        if (v[i] < lo) {
            rx_op_fail(c, call, "attribute \"%s\" must be at least %lld, found %lld",
                       name, (long long)lo, (long long)v[i]);
            return false;
        }
    }
    return true;
}

/* Reads "padding" as (before[0..S), after[0..S)): 1 value (all sides), S (each dim's
 * both sides) or 2 * S as written. */
static bool pad_attr(rx_dctx *c, const rx_node *call, int S, int64_t p[2 * MAXSP])
{
    int64_t raw[2 * MAXSP];
    int n;
    if (!rx_op_int_list(c, call, "padding", raw, 2 * MAXSP, &n)) return false;
    if (n != 1 && n != S && n != 2 * S) {
        rx_op_fail(c, call, "attribute \"padding\" needs 1, %d or %d values, found %d", S,
                   2 * S, n);
        return false;
    }
    for (int i = 0; i < 2 * S; i++) {
        p[i] = n == 1 ? raw[0] : n == S ? raw[i % S] : raw[i];
        if (p[i] < 0) {
            rx_op_fail(c, call, "padding must not be negative, found %lld", (long long)p[i]);
            return false;
        }
    }
    return true;
}

/* The output extent of one spatial dim (essay); NULL after an error. */
static rx_expr *window(rx_dctx *c, const rx_node *call, rx_expr *in, rx_expr *k, int64_t pads,
                       int64_t stride, int64_t dil, bool ceil_mode) {
    rx_arena *a = c->a;
    int64_t extra = ceil_mode ? stride - 1 : 0, kk;
    rx_expr *num, *out;
    if (rx_expr_is_const(k, &kk)) { /* fold the constant parts before simplifying */
        int64_t c0 = pads - dil * (kk - 1) - 1 + extra;
        if (stride == 1) c0 += 1; /* then (in + c0) // 1 + 1 is in + c0 + 1 */
        num = c0 ? rx_e_binary(a, RX_E_ADD, in, rx_e_int(a, c0)) : in;
        if (stride == 1) {
            out = rx_d_simplify(c, num);
            goto check;
        }
    } else {
        rx_expr *span = rx_e_binary(a, RX_E_MUL, rx_e_int(a, dil),
                                    rx_e_binary(a, RX_E_SUB, k, rx_e_int(a, 1)));
        num = rx_e_binary(a, RX_E_SUB, rx_e_binary(a, RX_E_ADD, in,
                                                   rx_e_int(a, pads - 1 + extra)), span);
    }
    if (stride != 1) num = rx_e_binary(a, RX_E_FLOORDIV, num, rx_e_int(a, stride));
    out = rx_d_simplify(c, rx_e_binary(a, RX_E_ADD, num, rx_e_int(a, 1)));
check:;
    int64_t v;
    if (rx_expr_is_const(out, &v) && v < 1) {
        rx_op_fail(c, call, "the window (%s with dilation %lld) does not fit the padded "
                   "input extent %s", rx_expr_str(a, k), (long long)dil,
                   rx_expr_str(a, in));
        return NULL;
    }
    return out;
}

/* The S spatial output dims of an input x with kernel dims k[0..S) (out all NULL when
 * x's dims are unknown); false after an error. */
static bool spatial(rx_dctx *c, const rx_node *call, const rx_sinfo *x, int S,
                    rx_expr *const *k, bool ceil_mode, rx_expr *out[MAXSP]) {
    int64_t st[MAXSP], dl[MAXSP], pd[2 * MAXSP];
    if (!sp_attr(c, call, "strides", 1, S, st) || !sp_attr(c, call, "dilation", 1, S, dl) ||
        !pad_attr(c, call, S, pd))
        return false;
    for (int i = 0; i < S; i++) {
        out[i] = NULL;
        if (x->dims &&
            !(out[i] = window(c, call, x->dims[2 + i], k[i], pd[i] + pd[S + i], st[i], dl[i],
                              ceil_mode)))
            return false;
    }
    return true;
}

/* The (N, C, spatial...) result; Tensor(ndim = S + 2) when a dim is unknown. */
static rx_sinfo *nchw(rx_dctx *c, rx_dtype dt, rx_expr *n, rx_expr *ch, int S,
                      rx_expr *const *sp) {
    rx_expr *d[2 + MAXSP];
    bool known = n && ch;
    for (int i = 0; i < S; i++) known = known && sp[i];
    if (!known) return rx_si_tensor(c->a, dt, 2 + S, NULL);
    d[0] = rx_d_simplify(c, n);
    d[1] = rx_d_simplify(c, ch);
    for (int i = 0; i < S; i++) d[2 + i] = sp[i];
    return rx_si_tensor(c->a, dt, 2 + S, d);
}

/* ---------------------------------------------------------------- conv */
/* The operands of a convolution ((S + 2)-d x and w), the layouts checked (NCHW / NCDHW
 * data, kernel_layout2 or its 3-d form with a D), the result dtype (out_dtype or the
 * operands'); false after an error. */
static bool conv_args(rx_dctx *c, const rx_node *call, int S, const char *kernel_layout2,
                      const rx_sinfo **x, const rx_sinfo **w, rx_dtype *dt) {
    const rx_sinfo *args[2] = { rx_d_tensor_arg(c, call, 0), rx_d_tensor_arg(c, call, 1) };
    if (!args[0] || !args[1]) return false;
    *x = args[0];
    *w = args[1];
    char kl[8];
    snprintf(kl, sizeof kl, "%.2s%s", kernel_layout2, S == 3 ? "DHW" : "HW");
    if (!check_layout(c, call, "data_layout", S == 3 ? "NCDHW" : "NCHW") ||
        !check_layout(c, call, "kernel_layout", kl))
        return false;
    const rx_attr *od = rx_call_attr(call, "out_dtype");
    if (od->kind == RX_A_STR) {
        bool ok = rx_dtype_parse(od->u.s, dt);
        RX_ASSERT(ok);
    } else if (!common_dtype(c, call, args, 2, dt)) {
        return false;
    }
    return check_ndim(c, call, *x, 0, S + 2) && check_ndim(c, call, *w, 1, S + 2);
}

/* nn.conv2d, nn.conv3d. */
static rx_sinfo *deduce_conv(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *w;
    rx_dtype dt;
    int S = op_nsp(call);
    if (!conv_args(c, call, S, "OIHW", &x, &w, &dt)) return NULL;
    int64_t groups = rx_call_attr(call, "groups")->u.i;
    if (groups < 1)
        return rx_op_fail(c, call, "groups must be at least 1, found %lld", (long long)groups);
    rx_expr *sp[MAXSP] = { NULL, NULL, NULL };
    if (!w->dims) {
        int64_t dummy[MAXSP], pd[2 * MAXSP];
        if (!sp_attr(c, call, "strides", 1, S, dummy) ||
            !sp_attr(c, call, "dilation", 1, S, dummy) || !pad_attr(c, call, S, pd))
            return NULL;
        return rx_si_tensor(c->a, dt, S + 2, NULL);
    }
    rx_expr *o = w->dims[0], *i = w->dims[1];
    int64_t ko;
    if (rx_expr_is_const(o, &ko) && ko % groups != 0)
        return rx_op_fail(c, call, "output channels %lld are not a multiple of groups %lld",
                          (long long)ko, (long long)groups);
    if (x->dims) {
        rx_expr *want = rx_d_simplify(c, rx_e_binary(c->a, RX_E_MUL, i, rx_e_int(c->a, groups)));
        if (proved_ne(c, x->dims[1], want))
            return rx_op_fail(c, call, "input channels %s do not match the weight's %s * "
                              "groups %lld (input %s, weight %s)", rx_expr_str(c->a, x->dims[1]),
                              rx_expr_str(c->a, i), (long long)groups,
                              rx_op_dims_str(c->a, x->dims, S + 2),
                              rx_op_dims_str(c->a, w->dims, S + 2));
    }
    if (!spatial(c, call, x, S, w->dims + 2, false, sp)) return NULL;
    return nchw(c, dt, x->dims ? x->dims[0] : NULL, o, S, sp);
}

/* ---------------------------------------------------------------- conv_transpose */
/* x (N, C, spatial...), w (C, O / groups, K...) in "IOHW" / "IODHW": per spatial dim
 * the output is
 * (in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + output_padding + 1
 * (an output_padding below the stride or the dilation, as TVM). */
static rx_sinfo *deduce_conv_transpose(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x, *w;
    rx_dtype dt;
    int S = op_nsp(call);
    if (!conv_args(c, call, S, "IOHW", &x, &w, &dt)) return NULL;
    int64_t groups = rx_call_attr(call, "groups")->u.i, st[MAXSP], dl[MAXSP], pd[2 * MAXSP],
            op[MAXSP];
    if (groups < 1)
        return rx_op_fail(c, call, "groups must be at least 1, found %lld", (long long)groups);
    if (!sp_attr(c, call, "strides", 1, S, st) || !sp_attr(c, call, "dilation", 1, S, dl) ||
        !sp_attr(c, call, "output_padding", 0, S, op) || !pad_attr(c, call, S, pd))
        return NULL;
    for (int i = 0; i < S; i++)
        if (op[i] >= st[i] && op[i] >= dl[i])
            return rx_op_fail(c, call, "output_padding %lld must be smaller than the stride or "
                              "the dilation", (long long)op[i]);
    if (!x->dims || !w->dims) return rx_si_tensor(c->a, dt, S + 2, NULL);
    if (proved_ne(c, x->dims[1], w->dims[0]))
        return rx_op_fail(c, call, "input channels %s do not match the weight's %s (input %s, "
                          "weight %s)", rx_expr_str(c->a, x->dims[1]), rx_expr_str(c->a, w->dims[0]),
                          rx_op_dims_str(c->a, x->dims, S + 2),
                          rx_op_dims_str(c->a, w->dims, S + 2));
    rx_arena *a = c->a;
    rx_expr *sp[MAXSP];
    for (int i = 0; i < S; i++) {
        rx_expr *e = rx_e_binary(a, RX_E_MUL, rx_e_binary(a, RX_E_SUB, x->dims[2 + i], rx_e_int(a, 1)),
                                 rx_e_int(a, st[i]));
        e = rx_e_binary(a, RX_E_ADD, e, rx_e_binary(a, RX_E_MUL, rx_e_int(a, dl[i]),
                                                    rx_e_binary(a, RX_E_SUB, w->dims[2 + i], rx_e_int(a, 1))));
        e = rx_e_binary(a, RX_E_ADD, e, rx_e_int(a, op[i] + 1 - pd[i] - pd[S + i]));
        sp[i] = rx_d_simplify(c, e);
        int64_t v;
        if (rx_expr_is_const(sp[i], &v) && v < 1)
            return rx_op_fail(c, call, "the padding leaves no output (extent %lld)", (long long)v);
    }
    rx_expr *o = rx_e_binary(a, RX_E_MUL, w->dims[1], rx_e_int(a, groups));
    return nchw(c, dt, x->dims[0], o, S, sp);
}

/* ---------------------------------------------------------------- pooling */
/* nn.max_pool2d, nn.avg_pool2d, nn.max_pool3d, nn.avg_pool3d. */
static rx_sinfo *deduce_pool(rx_dctx *c, const rx_node *call)
{
    int S = op_nsp(call);
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x || !check_layout(c, call, "layout", S == 3 ? "NCDHW" : "NCHW") ||
        !check_ndim(c, call, x, 0, S + 2))
        return NULL;
    int64_t ps[MAXSP];
    if (!sp_attr(c, call, "pool_size", 1, S, ps)) return NULL;
    bool ceil_mode = rx_call_attr(call, "ceil_mode")->u.b;
    rx_expr *k[MAXSP], *sp[MAXSP];
    for (int i = 0; i < S; i++) k[i] = rx_e_int(c->a, ps[i]);
    if (!spatial(c, call, x, S, k, ceil_mode, sp)) return NULL;
    if (!x->dims) return rx_si_tensor(c->a, (rx_dtype)x->dtype, S + 2, NULL);
    return nchw(c, (rx_dtype)x->dtype, x->dims[0], x->dims[1], S, sp);
}

static rx_sinfo *deduce_adaptive_pool2d(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    if (!x || !check_layout(c, call, "layout", "NCHW") || !check_ndim(c, call, x, 0, 4))
        return NULL;
    if (rx_call_attr(call, "output_size")->kind == RX_A_NULL)
        return rx_op_like(c, x, (rx_dtype)x->dtype);
    int64_t os[MAXSP];
    if (!sp_attr(c, call, "output_size", 1, 2, os)) return NULL;
    if (!x->dims) return rx_si_tensor(c->a, (rx_dtype)x->dtype, 4, NULL);
    rx_expr *sp[2] = { rx_e_int(c->a, os[0]), rx_e_int(c->a, os[1]) };
    return nchw(c, (rx_dtype)x->dtype, x->dims[0], x->dims[1], 2, sp);
}

/* ---------------------------------------------------------------- recurrence */
/* nn.rnn(x (T, B, I), w (D, G*H, I), r (D, G*H, H), b (D, 2*G*H), h0 (D, B, H),
 * c0 (D, B, H), p (D, 3*H)) -> (T + 2, D, B, H): rows 0..T-1 the hidden state after each
 * step, row T the last hidden state, row T+1 the last cell state (LSTM; else row T
 * again). f32 or f64, every operand of one dtype: f32 runs as the runtime library's
 * rt.rnn on the CPU, everything else as loops (legalize_rnn.c; docs/ops.md). */
static const char *const rnn_modes[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
static const char *const rnn_dirs[] = {"forward", "reverse", "bidirectional"};

static int rnn_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

static rx_sinfo *deduce_rnn(rx_dctx *c, const rx_node *call)
{
    static const int ndims[7] = {3, 3, 3, 2, 3, 3, 2};
    int mode = rnn_index(rnn_modes, 4, rx_call_attr(call, "mode")->u.s);
    int dir = rnn_index(rnn_dirs, 3, rx_call_attr(call, "direction")->u.s);
    if (mode < 0 || dir < 0) {
        rx_op_fail(c, call, "%s \"%s\" is not one of %s", mode < 0 ? "mode" : "direction",
                   rx_call_attr(call, mode < 0 ? "mode" : "direction")->u.s,
                   mode < 0 ? "lstm, gru, rnn_tanh, rnn_relu" : "forward, reverse, bidirectional");
        return NULL;
    }
    const rx_sinfo *a[7];
    rx_dtype dt = RX_DT_UNKNOWN;
    for (int i = 0; i < 7; i++) {
        a[i] = rx_d_tensor_arg(c, call, i);
        if (!a[i] || !check_ndim(c, call, a[i], i, ndims[i])) return NULL;
        rx_dtype t = (rx_dtype)a[i]->dtype;
        if (t == RX_DT_UNKNOWN) continue;
        if (t != RX_DT_F32 && t != RX_DT_F64) {
            rx_op_fail(c, call, "argument %d must be f32 or f64, found %s", i, rx_dtype_name(t));
            return NULL;
        }
        if (dt != RX_DT_UNKNOWN && t != dt) {
            rx_op_fail(c, call, "argument %d is %s where the ones before are %s (one dtype for "
                       "all)", i, rx_dtype_name(t), rx_dtype_name(dt));
            return NULL;
        }
        dt = t;
    }
    const rx_sinfo *x = a[0], *r = a[2];
    if (!x->dims || !r->dims) return rx_si_tensor(c->a, dt, 4, NULL);
    int64_t g = mode == 0 ? 4 : mode == 1 ? 3 : 1;
    rx_expr *h = r->dims[2];
    if (proved_ne(c, r->dims[1], rx_e_binary(c->a, RX_E_MUL, rx_e_int(c->a, g), h)) ||
        proved_ne(c, r->dims[0], rx_e_int(c->a, dir == 2 ? 2 : 1))) {
        rx_op_fail(c, call, "r must be (%d, %lld * hidden, hidden) for mode %s, direction %s, "
                   "found %s", dir == 2 ? 2 : 1, (long long)g, rnn_modes[mode], rnn_dirs[dir],
                   rx_op_dims_str(c->a, r->dims, r->ndim));
        return NULL;
    }
    rx_expr *d[4] = {rx_e_binary(c->a, RX_E_ADD, x->dims[0], rx_e_int(c->a, 2)),
                     rx_e_int(c->a, dir == 2 ? 2 : 1), x->dims[1], h};
    d[0] = rx_arith_simplify(c->ar, d[0]);
    return rx_si_tensor(c->a, dt, 4, d);
}

/* ---------------------------------------------------------------- table */
static const rx_attr_spec softmax_attrs[] = {
    RX_ATTR_DEF("axis", RX_AT_INT, "-1"),
};
static const rx_attr_spec layer_norm_attrs[] = {
    RX_ATTR_REQ("axes", RX_AT_AXES),
    RX_ATTR_DEF("epsilon", RX_AT_FLOAT, "1e-5"),
    RX_ATTR_DEF("center", RX_AT_BOOL, "true"),
    RX_ATTR_DEF("scale", RX_AT_BOOL, "true"),
};
static const rx_attr_spec group_norm_attrs[] = {
    RX_ATTR_REQ("num_groups", RX_AT_INT),
    RX_ATTR_DEF("channel_axis", RX_AT_INT, "1"),
    RX_ATTR_NUL("axes", RX_AT_AXES, "null"),
    RX_ATTR_DEF("epsilon", RX_AT_FLOAT, "1e-5"),
    RX_ATTR_DEF("center", RX_AT_BOOL, "true"),
    RX_ATTR_DEF("scale", RX_AT_BOOL, "true"),
};
static const rx_attr_spec rms_norm_attrs[] = {
    RX_ATTR_DEF("axes", RX_AT_AXES, "-1"),
    RX_ATTR_DEF("epsilon", RX_AT_FLOAT, "1e-5"),
};
static const rx_attr_spec batch_norm_attrs[] = {
    RX_ATTR_DEF("axis", RX_AT_INT, "1"),
    RX_ATTR_DEF("epsilon", RX_AT_FLOAT, "1e-5"),
    RX_ATTR_DEF("center", RX_AT_BOOL, "true"),
    RX_ATTR_DEF("scale", RX_AT_BOOL, "true"),
};
/* The window ops' schemas, written once for both ranks: ONE, ZERO are the per-dim
 * default lists, DL, KL the layouts (same order in both ranks: the printed and hashed
 * attributes of the 2-d ops are unchanged). */
#define CONV_ATTRS(ONE, ZERO, DL, KL, OP_PAD)                                             \
    RX_ATTR_DEF("strides", RX_AT_INTS, ONE), RX_ATTR_DEF("padding", RX_AT_INTS, ZERO),     \
    OP_PAD RX_ATTR_DEF("dilation", RX_AT_INTS, ONE), RX_ATTR_DEF("groups", RX_AT_INT, "1"), \
    RX_ATTR_DEF("data_layout", RX_AT_STR, DL), RX_ATTR_DEF("kernel_layout", RX_AT_STR, KL), \
    RX_ATTR_NUL("out_dtype", RX_AT_DTYPE, "null")
#define OUT_PAD(ZERO) RX_ATTR_DEF("output_padding", RX_AT_INTS, ZERO),
#define POOL_ATTRS(ONE, ZERO, LAYOUT, CIP)                                                 \
    RX_ATTR_REQ("pool_size", RX_AT_INTS), RX_ATTR_DEF("strides", RX_AT_INTS, ONE),         \
    RX_ATTR_DEF("padding", RX_AT_INTS, ZERO), RX_ATTR_DEF("dilation", RX_AT_INTS, ONE),    \
    RX_ATTR_DEF("ceil_mode", RX_AT_BOOL, "false"), CIP RX_ATTR_DEF("layout", RX_AT_STR, LAYOUT)
#define CIP_ATTR RX_ATTR_DEF("count_include_pad", RX_AT_BOOL, "false"),
#define ONE2 "[1, 1]"
#define ZERO2 "[0, 0]"
#define ONE3 "[1, 1, 1]"
#define ZERO3 "[0, 0, 0]"

static const rx_attr_spec conv2d_attrs[] = {
    CONV_ATTRS(ONE2, ZERO2, "\"NCHW\"", "\"OIHW\"", ),
};
static const rx_attr_spec conv2d_transpose_attrs[] = {
    CONV_ATTRS(ONE2, ZERO2, "\"NCHW\"", "\"IOHW\"", OUT_PAD(ZERO2)),
};
static const rx_attr_spec max_pool2d_attrs[] = { POOL_ATTRS(ONE2, ZERO2, "\"NCHW\"", ) };
static const rx_attr_spec avg_pool2d_attrs[] = { POOL_ATTRS(ONE2, ZERO2, "\"NCHW\"", CIP_ATTR) };
static const rx_attr_spec conv3d_attrs[] = {
    CONV_ATTRS(ONE3, ZERO3, "\"NCDHW\"", "\"OIDHW\"", ),
};
static const rx_attr_spec conv3d_transpose_attrs[] = {
    CONV_ATTRS(ONE3, ZERO3, "\"NCDHW\"", "\"IODHW\"", OUT_PAD(ZERO3)),
};
static const rx_attr_spec max_pool3d_attrs[] = { POOL_ATTRS(ONE3, ZERO3, "\"NCDHW\"", ) };
static const rx_attr_spec avg_pool3d_attrs[] = { POOL_ATTRS(ONE3, ZERO3, "\"NCDHW\"", CIP_ATTR) };
static const rx_attr_spec rnn_attrs[] = {
    RX_ATTR_REQ("mode", RX_AT_STR),
    RX_ATTR_DEF("direction", RX_AT_STR, "\"forward\""),
    RX_ATTR_DEF("linear_before_reset", RX_AT_BOOL, "false"),
};
static const rx_attr_spec adaptive_pool2d_attrs[] = {
    RX_ATTR_NUL("output_size", RX_AT_INTS, "null"),
    RX_ATTR_DEF("layout", RX_AT_STR, "\"NCHW\""),
};

#define OP(nm, lo, hi, at, fn) { nm, lo, hi, RX_ATTRS(at), fn, 0 }

const rx_op rx_ops_nn[] = {
    OP("nn.softmax", 1, 1, softmax_attrs, deduce_softmax),
    OP("nn.log_softmax", 1, 1, softmax_attrs, deduce_softmax),
    OP("nn.layer_norm", 3, 3, layer_norm_attrs, deduce_norm),
    OP("nn.rms_norm", 2, 2, rms_norm_attrs, deduce_norm),
    OP("nn.group_norm", 3, 3, group_norm_attrs, deduce_group_norm),
    OP("nn.batch_norm", 5, 5, batch_norm_attrs, deduce_batch_norm),
    OP("nn.conv2d", 2, 2, conv2d_attrs, deduce_conv),
    OP("nn.conv2d_transpose", 2, 2, conv2d_transpose_attrs, deduce_conv_transpose),
    OP("nn.max_pool2d", 1, 1, max_pool2d_attrs, deduce_pool),
    OP("nn.avg_pool2d", 1, 1, avg_pool2d_attrs, deduce_pool),
    OP("nn.conv3d", 2, 2, conv3d_attrs, deduce_conv),
    OP("nn.conv3d_transpose", 2, 2, conv3d_transpose_attrs, deduce_conv_transpose),
    OP("nn.max_pool3d", 1, 1, max_pool3d_attrs, deduce_pool),
    OP("nn.avg_pool3d", 1, 1, avg_pool3d_attrs, deduce_pool),
    OP("nn.adaptive_avg_pool2d", 1, 1, adaptive_pool2d_attrs, deduce_adaptive_pool2d),
    OP("nn.rnn", 7, 7, rnn_attrs, deduce_rnn),
};
const int rx_ops_nn_count = RX_COUNTOF(rx_ops_nn);
