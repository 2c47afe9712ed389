/*
 * simplify.c — algebraic simplification of op calls as model exporters write them
 * (pipeline step 1a, opt level 1; `--disable-pass simplify`).
 *
 * An exporter spells a fused op as the elementwise ops of its definition: PyTorch's
 * RMSNorm `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w` reaches ONNX
 * (and so relaxc import) as Pow(x, 2), ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul.
 * Legalized as written, the square is a libm powf per element (a call the C compiler
 * cannot vectorize) in the reduction's inner loop, several times slower than the x * x
 * of the hand-written nn.rms_norm. The rewrites below give the same loop body as the
 * op the author meant, on every formulation, not on one pattern of one exporter:
 *
 *   power(x, 2)         -> multiply(x, x)   (powf(x, 2) is x * x rounded once: the same
 *                                            float; C99 F.10.4.4 makes pow exact here)
 *   power(x, 1)         -> x                (a copy: canonicalize forwards it)
 *   power(x, -1)        -> divide(1, x)     (one division, rounded once: the same float)
 *   power(x, 3)         -> x * x * x        (GPT-2's tanh GELU, `torch.pow(h, 3.0)`: two
 *   power(x, 4)         -> (x * x) * (x * x) roundings instead of powf's one, within
 *                                            1.5 ulp of it; nested calls, which the
 *                                            deduction after the pass binds (normalize.c))
 *   divide(1, sqrt(y))  -> rsqrt(y)         (rsqrt is 1 / sqrt in the generated code and
 *                                            in the interpreter: the same float)
 *   astype(x, dt)       -> x                when x already has dtype dt (Hugging Face's
 *                                            `.to(torch.float32)` around RMSNorm and
 *                                            softmax of an f32 model: left in, each is a
 *                                            copy or splits a fusable chain)
 *   permute_dims(x, p)  -> reshape(x, out)  when p moves only dims of extent 1 (the
 *                                            others keep their order): the same elements
 *                                            in the same order, so no copy. At batch 1,
 *                                            nn.MultiheadAttention's (b, s, d) -> (s, b, d)
 *                                            transpose is one, and the matmul behind it
 *                                            then goes to BLAS as one product
 *
 *   f(move(x))          -> move(f(x))       f a unary float elementwise op (sigmoid,
 *                                            tanh, exp, erf, silu, gelu, gelu_tanh),
 *                                            move a reshape, permute_dims or concat
 *                                            read only by f (recursively: through a
 *                                            chain of them, into each concat field):
 *                                            the same function of the same elements.
 *                                            YOLO's head, sigmoid of the permuted
 *                                            concat of the flattened maps, was one
 *                                            kernel computing the sigmoid per element
 *                                            of a strided, select-chained read (1.12
 *                                            ms for (1, 2100, 85), 2 threads); applied
 *                                            to the maps, 0.35 ms
 *
 *   t[0] of t = nn.batch_norm(x, gamma, beta, mean, var) (inference form, f32 or f64,
 *   every operand but x a constant of C elements, C x's literal extent at `axis`)
 *                       -> x * s + o        s = gamma / sqrt(var + eps), o = beta -
 *                                            mean * s per channel, computed in double
 *                                            and rounded once, as constants of shape
 *                                            (C, 1, .., 1) broadcasting along `axis`
 *                                            (gamma 1 when scale=false, beta 0 when
 *                                            center=false). The tuple-valued call is
 *                                            never fused (fuse_ops.c: a tuple `out`
 *                                            is Opaque), so a pre-activation BatchNorm
 *                                            (DenseNet's concat -> BatchNorm -> ReLU ->
 *                                            1x1 conv; the exporter folds only a norm
 *                                            after a conv) was one kernel writing the
 *                                            normalized map and two copies of the
 *                                            statistics, then a ReLU kernel; the
 *                                            affine fuses with the ReLU. Within a few
 *                                            ulp of the definition's (x - mean) /
 *                                            sqrt(var + eps) * gamma + beta, as ONNX
 *                                            Runtime's own fold of the norm. The call
 *                                            stays for other readers of its tuple.
 *
 * where the constant is a scalar (one element, f32/f64/i32/i64, inline or a variable
 * bound to one) and the call's result has the operand's annotation (same dtype and
 * dims: the scalar broadcasts nothing), x and y of a float dtype. The sqrt binding
 * stays for dce when nothing else reads it. Scope: every binding of every graph
 * function, in definition order, nested if bodies included (a variable bound to a
 * constant or a sqrt is seen through the map of definitions).
 * Cost: one walk, O(size of the module); the driver deduces the module again after.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "relax/pass.h"
#include "relax/op.h"

typedef struct sp_ctx {
    rx_module *m;
    rx_node **def; /* variable id -> bound value (not match_cast), or NULL */
    int32_t *uses; /* variable id -> references in the module */
    int nids;
} sp_ctx;

static void simplify_seq(sp_ctx *c, rx_seq *s);

static rx_node *def_of(sp_ctx *c, rx_node *n)
{
    if (n && n->kind == RX_N_VAR && n->u.var.id >= 0 && n->u.var.id < c->nids)
        return c->def[n->u.var.id];
    return NULL;
}

static bool is_op(const rx_node *n, const char *name, int nargs)
{
    return n && n->kind == RX_N_CALL && n->call_kind == RX_CALL_OP && n->nargs == nargs &&
           !strcmp(n->u.call.op->name, name);
}

/* The value of a one-element constant (inline, or a variable bound to one). */
static bool scalar_of(sp_ctx *c, rx_node *n, double *v)
{
    if (n && n->kind == RX_N_VAR) n = def_of(c, n);
    if (!n || n->kind != RX_N_CONST) return false;
    const rx_const *k = n->u.konst;
    size_t es = k->dtype == RX_DT_F32 || k->dtype == RX_DT_I32 ? 4
                : k->dtype == RX_DT_F64 || k->dtype == RX_DT_I64 ? 8 : 0;
    if (!es || k->nbytes != es) return false;
    if (k->dtype == RX_DT_F32) {
        float f;
        memcpy(&f, k->data, 4);
        *v = f;
    } else if (k->dtype == RX_DT_F64) {
        memcpy(v, k->data, 8);
    } else if (k->dtype == RX_DT_I32) {
        int32_t i;
        memcpy(&i, k->data, 4);
        *v = i;
    } else {
        int64_t i;
        memcpy(&i, k->data, 8);
        *v = (double)i;
    }
    return true;
}

/* a and b are tensors of one float dtype and the same known dims. */
static bool same_float_tensor(const rx_sinfo *a, const rx_sinfo *b)
{
    if (!a || !b || a->kind != RX_SI_TENSOR || b->kind != RX_SI_TENSOR || a->dtype != b->dtype ||
        !rx_dtype_is_float((rx_dtype)a->dtype) || a->ndim < 0 || a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (!rx_expr_same(a->dims[i], b->dims[i])) return false;
    return true;
}

static rx_node *call(sp_ctx *c, const char *op, rx_node *a, rx_node *b, rx_loc loc)
{
    const rx_op *o = rx_op_find(op);
    if (!o || o->nattrs) return NULL; /* the ops used here take no attributes */
    rx_node *args[2] = {a, b};
    rx_node *n = rx_n_call_op(c->m, o, args, b ? 2 : 1, NULL);
    n->loc = loc;
    return n;
}

/* A 0-d constant 1 of float dtype dt (f32 or f64). */
static rx_node *float_one(sp_ctx *c, rx_dtype dt, rx_loc loc)
{
    rx_const *one = RX_NEW(c->m->arena, rx_const);
    one->dtype = dt;
    one->nbytes = dt == RX_DT_F64 ? 8 : 4;
    one->data = rx_arena_alloc(c->m->arena, one->nbytes);
    double d = 1;
    float f = 1;
    memcpy(one->data, dt == RX_DT_F64 ? (const void *)&d : (const void *)&f, one->nbytes);
    one->loc = loc;
    rx_node *r = rx_n_const(c->m, one);
    r->loc = loc;
    return r;
}

/* permute_dims call n (known dims, explicit axes) moves only dims of literal extent 1:
 * the other dims appear in the result in their order in the operand. */
static bool unit_moves_only(const rx_node *n)
{
    const rx_sinfo *x = n->args[0]->sinfo, *o = n->sinfo;
    const rx_attr *axes = rx_call_attr(n, "axes");
    if (!x || !o || x->kind != RX_SI_TENSOR || o->kind != RX_SI_TENSOR || !x->dims ||
        !o->dims || x->ndim != o->ndim || x->ndim < 2 || !axes || axes->kind != RX_A_ARRAY ||
        axes->u.arr.n != x->ndim)
        return false;
    int64_t last = -1, v;
    bool moved = false;
    for (int i = 0; i < x->ndim; i++) {
        const rx_attr *ai = axes->u.arr.items[i];
        if (ai->kind != RX_A_INT || ai->u.i < 0 || ai->u.i >= x->ndim) return false;
        int64_t a = ai->u.i;
        moved |= a != i;
        if (rx_expr_is_const(x->dims[a], &v) && v == 1) continue;
        if (a < last) return false; /* a non-unit dim out of order */
        last = a;
    }
    return moved;
}

/* ---------------------------------------------------------------- sinking unary ops */
/* Unary float elementwise ops: one function of each element, so f(move(x)) equals
 * move(f(x)) for a pure data movement (reshape, permute_dims, concat of the same
 * elements). */
static const char *const SINKABLE[] = {"sigmoid", "tanh", "exp", "erf", "nn.silu", "nn.gelu",
                                       "nn.gelu_tanh", NULL};

static bool sinkable(const rx_node *n)
{
    if (!n || n->kind != RX_N_CALL || n->call_kind != RX_CALL_OP || n->nargs != 1) return false;
    for (int i = 0; SINKABLE[i]; i++)
        if (!strcmp(n->u.call.op->name, SINKABLE[i])) return true;
    return false;
}

/* The value bound to variable n when n is read once (by the op being sunk), or NULL. */
static rx_node *sole_def(sp_ctx *c, rx_node *n)
{
    if (!n || n->kind != RX_N_VAR || n->u.var.id < 0 || n->u.var.id >= c->nids ||
        c->uses[n->u.var.id] != 1)
        return NULL;
    return c->def[n->u.var.id];
}

static rx_node *sink(sp_ctx *c, const rx_op *f, rx_node *x, rx_loc loc);

/* f applied to x: sunk through x's data movement when it has one, else f(x). */
static rx_node *apply(sp_ctx *c, const rx_op *f, rx_node *x, rx_loc loc)
{
    rx_node *r = sink(c, f, x, loc);
    if (r) return r;
    r = rx_n_call_op(c->m, f, &x, 1, NULL);
    r->loc = loc;
    return r;
}

/* move(f(y)) for x = move(y) read only here (move a reshape, permute_dims or concat),
 * recursively; NULL when x is no such movement. */
static rx_node *sink(sp_ctx *c, const rx_op *f, rx_node *x, rx_loc loc)
{
    rx_node *d = sole_def(c, x), *r = NULL;
    if (is_op(d, "permute_dims", 1) || is_op(d, "reshape", 2)) {
        rx_node *args[2] = {apply(c, f, d->args[0], loc), d->nargs == 2 ? d->args[1] : NULL};
        r = rx_n_call_op(c->m, d->u.call.op, args, d->nargs, d->u.call.attrs);
    } else if (is_op(d, "concat", 1)) {
        rx_node *t = d->args[0]->kind == RX_N_TUPLE ? d->args[0] : sole_def(c, d->args[0]);
        if (!t || t->kind != RX_N_TUPLE || t->nargs < 1) return NULL;
        rx_node **fs = RX_NEWN(c->m->arena, rx_node *, t->nargs);
        for (int i = 0; i < t->nargs; i++) fs[i] = apply(c, f, t->args[i], loc);
        rx_node *tt = rx_n_tuple(c->m, fs, t->nargs);
        tt->loc = t->loc;
        r = rx_n_call_op(c->m, d->u.call.op, &tt, 1, d->u.call.attrs);
    }
    if (r) r->loc = d->loc;
    return r;
}

/* ---------------------------------------------------------------- inference batch_norm */
/* Element i of a float constant (inline, or a variable bound to one) of n elements
 * along one axis (rank 1, or rank r with every other extent 1), or false. */
static bool float_vec(sp_ctx *c, rx_node *n, int64_t count, double *out)
{
    if (n && n->kind == RX_N_VAR) n = def_of(c, n);
    if (!n || n->kind != RX_N_CONST) return false;
    const rx_const *k = n->u.konst;
    size_t es = k->dtype == RX_DT_F32 ? 4 : k->dtype == RX_DT_F64 ? 8 : 0;
    if (!es || k->nbytes != es * (size_t)count) return false;
    for (int64_t i = 0; i < count; i++) {
        if (es == 4) {
            float f;
            memcpy(&f, k->data + 4 * i, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], k->data + 8 * i, 8);
        }
    }
    return true;
}

/* A constant of dtype dt (f32 or f64) and shape (count, 1, ..., 1), ones trailing. */
static rx_node *channel_const(sp_ctx *c, rx_dtype dt, int64_t count, int ones,
                              const double *v, rx_loc loc)
{
    rx_const *k = RX_NEW(c->m->arena, rx_const);
    k->dtype = dt;
    k->ndim = 1 + ones;
    k->shape = RX_NEWN(c->m->arena, int64_t, k->ndim);
    k->shape[0] = count;
    for (int i = 1; i < k->ndim; i++) k->shape[i] = 1;
    size_t es = dt == RX_DT_F64 ? 8 : 4;
    k->nbytes = es * (size_t)count;
    k->data = rx_arena_alloc(c->m->arena, k->nbytes);
    for (int64_t i = 0; i < count; i++) {
        float f = (float)v[i];
        memcpy(k->data + es * i, es == 8 ? (const void *)&v[i] : (const void *)&f, es);
    }
    k->loc = loc;
    rx_node *r = rx_n_const(c->m, k);
    r->loc = loc;
    return r;
}

/* get_item(t, 0) of t = nn.batch_norm(x, gamma, beta, mean, var) with constant
 * statistics and parameters -> x * s + o, s = gamma / sqrt(var + eps) and
 * o = beta - mean * s per channel (computed in double, rounded once to x's dtype), as
 * constants of shape (C, 1, ..., 1) broadcasting along `axis`. NULL when the rule does
 * not apply. */
static rx_node *batch_norm_affine(sp_ctx *c, rx_node *n)
{
    if (!n || n->kind != RX_N_GET_ITEM || n->u.index != 0) return NULL;
    rx_node *t = def_of(c, n->args[0]);
    if (!is_op(t, "nn.batch_norm", 5)) return NULL;
    rx_node *x = t->args[0];
    const rx_sinfo *xs = x->sinfo;
    if (!same_float_tensor(n->sinfo, xs) || (xs->dtype != RX_DT_F32 && xs->dtype != RX_DT_F64))
        return NULL;
    int64_t ax = rx_call_attr(t, "axis")->u.i, cnt;
    if (ax < 0) ax += xs->ndim;
    if (ax < 0 || ax >= xs->ndim || !rx_expr_is_const(xs->dims[ax], &cnt) || cnt < 1 ||
        cnt > (1 << 20))
        return NULL;
    double eps = rx_call_attr(t, "epsilon")->u.f;
    bool scale = rx_call_attr(t, "scale")->u.b, center = rx_call_attr(t, "center")->u.b;
    double *p = rx_xcalloc((size_t)cnt * 4, sizeof *p); /* gamma, beta, mean, var */
    bool ok = (!scale || float_vec(c, t->args[1], cnt, p)) &&
              (!center || float_vec(c, t->args[2], cnt, p + cnt)) &&
              float_vec(c, t->args[3], cnt, p + 2 * cnt) && float_vec(c, t->args[4], cnt, p + 3 * cnt);
    rx_node *r = NULL;
    if (ok) {
        for (int64_t i = 0; i < cnt; i++) {
            double s = (scale ? p[i] : 1.0) / sqrt(p[3 * cnt + i] + eps);
            p[i] = s;                                              /* the scale */
            p[cnt + i] = (center ? p[cnt + i] : 0.0) - p[2 * cnt + i] * s; /* the offset */
        }
        rx_dtype dt = (rx_dtype)xs->dtype;
        int ones = xs->ndim - 1 - (int)ax;
        rx_node *s = channel_const(c, dt, cnt, ones, p, t->loc);
        rx_node *o = channel_const(c, dt, cnt, ones, p + cnt, t->loc);
        r = call(c, "add", call(c, "multiply", x, s, n->loc), o, n->loc);
    }
    free(p);
    return r;
}

/* The simplified value of n, or NULL when none of the rules applies. */
static rx_node *simplify_value(sp_ctx *c, rx_node *n)
{
    double v;
    rx_node *bn = batch_norm_affine(c, n);
    if (bn) return bn;
    if (sinkable(n) && n->args[0]->sinfo && n->args[0]->sinfo->kind == RX_SI_TENSOR &&
        rx_dtype_is_float((rx_dtype)n->args[0]->sinfo->dtype)) {
        rx_node *r = sink(c, n->u.call.op, n->args[0], n->loc);
        if (r) return r;
    }
    if (is_op(n, "power", 2) && same_float_tensor(n->sinfo, n->args[0]->sinfo) &&
        scalar_of(c, n->args[1], &v)) {
        rx_node *x = n->args[0];
        if (v == 2) return call(c, "multiply", x, x, n->loc);
        if (v == 1) return x;
        if (v == 3) return call(c, "multiply", call(c, "multiply", x, x, n->loc), x, n->loc);
        if (v == 4) {
            rx_node *sq = call(c, "multiply", x, x, n->loc);
            return call(c, "multiply", sq, sq, n->loc);
        }
        rx_dtype dt = (rx_dtype)n->sinfo->dtype;
        if (v == -1 && (dt == RX_DT_F32 || dt == RX_DT_F64))
            return call(c, "divide", float_one(c, dt, n->loc), x, n->loc);
    }
    if (is_op(n, "astype", 1) && n->sinfo && n->args[0]->sinfo &&
        n->sinfo->kind == RX_SI_TENSOR && n->args[0]->sinfo->kind == RX_SI_TENSOR &&
        n->sinfo->dtype != RX_DT_UNKNOWN && n->sinfo->dtype == n->args[0]->sinfo->dtype)
        return n->args[0];
    if (is_op(n, "permute_dims", 1) && unit_moves_only(n)) {
        const rx_sinfo *o = n->sinfo;
        rx_node *shape = rx_n_shape(c->m, o->dims, o->ndim);
        shape->loc = n->loc;
        return call(c, "reshape", n->args[0], shape, n->loc);
    }
    if (is_op(n, "divide", 2) && scalar_of(c, n->args[0], &v) && v == 1) {
        rx_node *s = def_of(c, n->args[1]);
        if (is_op(s, "sqrt", 1) && same_float_tensor(n->sinfo, s->args[0]->sinfo))
            return call(c, "rsqrt", s->args[0], NULL, n->loc);
    }
    return NULL;
}

static void simplify_seq(sp_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            rx_binding *bd = &b->bindings[j];
            if (bd->value->kind == RX_N_IF) {
                simplify_seq(c, bd->value->u.if_.then_body);
                simplify_seq(c, bd->value->u.if_.else_body);
            }
            if (!bd->match_cast) {
                rx_node *r = simplify_value(c, bd->value);
                if (r) bd->value = r;
            }
            int id = bd->var->u.var.id;
            if (!bd->match_cast && id >= 0 && id < c->nids) c->def[id] = bd->value;
        }
    }
}

bool rx_pass_simplify(rx_module *m, rx_diags *d)
{
    (void)d;
    sp_ctx c = {.m = m, .nids = m->next_id + 1};
    c.def = rx_xcalloc((size_t)c.nids, sizeof *c.def);
    c.uses = rx_xcalloc((size_t)c.nids, sizeof *c.uses);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) rx_count_var_uses(m->funcs[i]->body, c.uses, c.nids);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) simplify_seq(&c, m->funcs[i]->body);
    free(c.uses);
    free(c.def);
    return true;
}
