/*
 * onnx_transpose.c — a Transpose that undoes an earlier one across elementwise ops
 * cancels at import (ONNX Runtime's transpose optimizer does this for every session).
 *
 * tf2onnx writes a TensorFlow NHWC model as NCHW convolutions each between a Transpose
 * to NCHW and one back: Transpose(NCHW->NHWC) -> Relu (-> Add with the shortcut, also
 * transposed back) -> Transpose(NHWC->NCHW) -> Conv. Imported as written, every
 * activation between two convolutions is a permute, the op and a permute back (one
 * fused strided kernel per pair), and the ReLU after a convolution cannot join the
 * convolution's epilogue. At Transpose(x, perm), undo(x, perm) rebuilds x's producer
 * chain without the transposes when every leaf of the chain is a permute_dims whose
 * axes perm composes to the identity (or a scalar), through
 *   unary elementwise ops (nn.relu, clip, sigmoid, tanh, exp, ...: same op, same attrs)
 *   binary elementwise ops (add, subtract, multiply, divide, maximum, minimum) whose
 *   operands both undo, or one undoes and the other is a scalar (one element)
 *   nn.pad (TensorFlow's SAME padding before a strided conv), its widths permuted
 * and the Transpose's value is the rebuilt chain on the NCHW operands. The NHWC chain
 * stays for its other readers (dce drops it when there is none); an op read by two
 * such Transposes is computed twice, as elementwise work beside a saved copy. Bounded:
 * depth 8, 16 ops rebuilt per Transpose; only chains within the last 256 bindings are
 * seen.
 * zoo4 tf_mobilenet / tf_resnet (Keras MobileNet and ResNet bottlenecks at 224): 13 and 12
 * permute_dims loops after fuse_ops -> 2; relax-run, main's build and this one
 * alternated three times at load 1, 2 threads: tf_mobilenet 6.88 -> 4.06 ms, tf_resnet
 * 16.8 -> 14.5 ms (its convolutions dominate); one thread 5.14 -> 3.14, 13.4 -> 12.6.
 */
#include <string.h>

#include "onnx_int.h"

static const char *const UNARY[] = {"nn.relu", "clip", "sigmoid", "tanh", "exp", "negative",
                                    "sqrt", "abs", "nn.silu", "nn.gelu", "nn.leakyrelu", NULL};
static const char *const BINARY[] = {"add", "subtract", "multiply", "divide", "maximum",
                                     "minimum", NULL};

typedef struct {
    ox_ctx *c;
    int budget;
} undo_ctx;

static bool in_list(const char *const *l, const char *s)
{
    for (int i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return true;
    return false;
}

/* The call bound to variable x (not a match_cast), within the last 256 bindings. */
static const rx_node *def_of(ox_ctx *c, const rx_node *x)
{
    if (!x || x->kind != RX_N_VAR) return NULL;
    for (int i = c->binds.n - 1, seen = 0; i >= 0 && seen < 256; i--, seen++) {
        const rx_binding *b = &c->binds.items[i];
        if (b->var != x) continue;
        if (b->match_cast || b->value->kind != RX_N_CALL || b->value->call_kind != RX_CALL_OP)
            return NULL;
        return b->value;
    }
    return NULL;
}

static bool scalar(const rx_node *x)
{
    if (x && x->kind == RX_N_CONST) {
        const rx_const *k = x->u.konst;
        for (int i = 0; i < k->ndim; i++)
            if (k->shape[i] != 1) return false;
        return true;
    }
    const rx_sinfo *s = x ? x->sinfo : NULL;
    if (!s || s->kind != RX_SI_TENSOR || s->ndim < 0 || (s->ndim > 0 && !s->dims)) return false;
    for (int i = 0; i < s->ndim; i++) {
        int64_t v;
        if (!rx_expr_is_const(s->dims[i], &v) || v != 1) return false;
    }
    return true;
}

/* The call op(args) with call's attributes, deduced and bound. */
static rx_node *rebuild(ox_ctx *c, const rx_node *call, rx_node **args)
{
    rx_node *n = rx_n_call_op(c->m, call->u.call.op, args, call->nargs, call->u.call.attrs);
    n->loc = call->loc;
    n->sinfo = call->u.call.op->deduce(&c->dc, n);
    if (!n->sinfo) return NULL;
    rx_node *var = rx_n_var(c->m, rx_arena_printf(c->a, "v_untransposed_%d", c->binds.n), n->sinfo, true);
    var->loc = n->loc;
    rx_binding b = {var, n, NULL, false, n->loc};
    RX_VEC_PUSH(c->binds, b);
    return var;
}

/* x as permute_dims(x, perm) would give it, without a transpose; NULL when x's chain
 * does not end in transposes that perm undoes. */
static rx_node *undo(undo_ctx *u, rx_node *x, const int64_t *perm, int nd, int depth)
{
    const rx_node *d = def_of(u->c, x);
    if (!d || depth > 8) return NULL;
    const char *op = d->u.call.op->name;
    if (!strcmp(op, "permute_dims") && d->nargs == 1) {
        const rx_attr *ax = rx_call_attr(d, "axes");
        if (!ax || ax->kind != RX_A_ARRAY || ax->u.arr.n != nd) return NULL;
        for (int i = 0; i < nd; i++) {
            const rx_attr *e = ax->u.arr.items[perm[i]];
            if (e->kind != RX_A_INT || e->u.i != i) return NULL;
        }
        return d->args[0];
    }
    if (!strcmp(op, "nn.pad") && d->nargs == 1 && u->budget-- > 0) { /* its widths permuted */
        const rx_attr *pw = rx_call_attr(d, "pad_width");
        int64_t w[16];
        if (!pw || pw->kind != RX_A_ARRAY || pw->u.arr.n != 2 * nd) return NULL;
        for (int i = 0; i < 2 * nd; i++) {
            const rx_attr *e = pw->u.arr.items[2 * perm[i / 2] + i % 2];
            if (e->kind != RX_A_INT) return NULL;
            w[i] = e->u.i;
        }
        rx_node *in = undo(u, d->args[0], perm, nd, depth + 1);
        if (!in) return NULL;
        rx_attr *m = ox_amap(u->c);
        ox_aset(u->c, m, "pad_width", ox_aints(u->c, w, 2 * nd));
        const char *keep[2] = {"pad_mode", "pad_value"};
        for (int k = 0; k < 2; k++)
            if (rx_call_attr(d, keep[k])) ox_aset(u->c, m, keep[k], (rx_attr *)rx_call_attr(d, keep[k]));
        return ox_call(u->c, "nn.pad", &in, 1, m);
    }
    bool un = in_list(UNARY, op) && d->nargs == 1, bin = in_list(BINARY, op) && d->nargs == 2;
    if ((!un && !bin) || u->budget-- <= 0) return NULL;
    rx_node *args[2] = {NULL, NULL};
    bool any = false;
    for (int i = 0; i < d->nargs; i++) {
        if (bin && scalar(d->args[i])) {
            args[i] = d->args[i];
            continue;
        }
        if (!(args[i] = undo(u, d->args[i], perm, nd, depth + 1))) return NULL;
        any = true;
    }
    return any ? rebuild(u->c, d, args) : NULL;
}

rx_node *ox_untranspose(ox_ctx *c, rx_node *x, const int64_t *perm, int nd)
{
    if (!x || nd < 2 || nd > 8 || !x->sinfo || x->sinfo->kind != RX_SI_TENSOR || x->sinfo->ndim != nd)
        return NULL;
    for (int i = 0; i < nd; i++)
        if (perm[i] < 0 || perm[i] >= nd) return NULL;
    undo_ctx u = {c, 16};
    return undo(&u, x, perm, nd, 0);
}
