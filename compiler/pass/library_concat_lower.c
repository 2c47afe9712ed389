/*
 * library_concat_lower.c — the concat rule of library lowering (pipeline step 2, called
 * from library_lower.c's walk on its use counts; pattern name "concat").
 *
 *   y = concat((x_0, .., x_{f-1}), axis=a)
 *     -> y = call_dps_library("rt.concat", (params, x_0, .., x_{f-1}), out=<y's annotation>)
 *
 * params an i64 (2,) constant holding a (normalized) and the epilogue flags;
 * runtime/library_concat.c copies each field's chunks into place with memcpy, its bytes
 * split evenly over the threads. The epilogue: f32 bindings after the concat, each
 * alone reading the one before, [m = multiply(y, s)] [d = add(m, o)] [r = nn.relu(d)]
 * (operands in either order; at least one of them) with s and o f32 constants of one
 * value per channel along a (shape (C, 1, .., 1) right-aligned to put C on a, as
 * simplify.c writes an inference batch_norm) join the call: flags 1 (s), 2 (o), 4
 * (relu), s and o passed before the fields, the call at the last binding's place and
 * the others dropped. DenseNet's concat -> BatchNorm -> ReLU is then one pass over the
 * fields writing the activated map, where the concat, the fused affine + ReLU kernel
 * (and before simplify's rewrite the norm and the ReLU apart) each made one.
 *
 * When: a concat of two fields or more, float dtype, rank >= 2, at least MIN_ELEMS
 * elements (or a symbolic extent), on the CPU, where no field is a value FuseOps could
 * fuse into the concat: every field is a variable bound to a library call, a tuple
 * field, a graph call, a parameter or a variable of another block, or one used more
 * than once. The generated concat is then a pure copy, and left generated it has two
 * costs the call does not: (1) FuseOps fuses it into an elementwise consumer (DenseNet's
 * concat -> BatchNorm -> ReLU, a pre-activation layer over every earlier feature map),
 * and the fused nest selects its field per element (a chain of conditions and loads
 * from several buffers in the innermost loop, which the C compiler does not vectorize:
 * the fused kernels took 1.7x the concat, the affine and the ReLU run apart); (2) split
 * by field (schedule_concat.c) it runs in parallel over the extents before the axis,
 * the batch, which is one at run time when it is symbolic (every exported CNN with a
 * dynamic batch axis): one thread copies. A field FuseOps would fuse (a single-use
 * elementwise or injective producer: the KV-cache append's permuted projection, YOLO's
 * upsampled map) keeps the generated concat, which computes the field in place; so
 * does a concat that a data movement reads (reshape, permute_dims, concat, split,
 * strided_slice, expand_dims, squeeze, flatten, take: FuseOps makes the two one copy,
 * each element read where it lands; YOLOv8's head concats each level's box and class
 * maps, flattens them and concats the levels: as rt.concat, an extra copy, +5%).
 *
 * Cost: O(fields) per concat binding; the rewrite is the binding's value only.
 */
#include <string.h>

#include "library_int.h"
#include "relax/op.h"

enum { MIN_ELEMS = 4096 };

/* Whether the field n cannot be fused into the concat by FuseOps. */
static bool fixed_field(const rx_ll_ctx *c, const rx_node *n)
{
    if (n->kind == RX_N_CONST) return true;
    if (n->kind != RX_N_VAR || n->u.var.id < 0 || n->u.var.id >= c->nids) return false;
    if (c->uses[n->u.var.id] > 1) return true;
    const rx_node *d = c->def[n->u.var.id];
    if (!d || c->def_block[n->u.var.id] != c->cur) return true;
    if (d->kind == RX_N_GET_ITEM) return true;
    return d->kind == RX_N_CALL && (d->call_kind == RX_CALL_LIB || d->call_kind == RX_CALL_FN);
}

/* Data movement ops a concat fuses into as their input, the element read where it is
 * moved to (no select per element at the concat's own shape: YOLOv8's head concats each
 * level's box and class maps, then flattens and concats the levels in one kernel). */
static const char *const MOVES[] = {"reshape", "permute_dims", "concat", "split",
                                    "strided_slice", "expand_dims", "squeeze", "flatten",
                                    "take", NULL};

static bool reads(const rx_node *n, const rx_node *v)
{
    if (n == v) return true;
    if (!n || (n->kind != RX_N_CALL && n->kind != RX_N_TUPLE)) return false;
    for (int i = 0; i < n->nargs; i++)
        if (reads(n->args[i], v)) return true;
    return false;
}

/* Whether a binding of the block being lowered moves v (an op of MOVES reading it). */
static bool moved(const rx_ll_ctx *c, const rx_node *v)
{
    for (int j = 0; j < c->cur->nbindings; j++) {
        const rx_node *u = c->cur->bindings[j].value;
        if (!u || u->kind != RX_N_CALL || u->call_kind != RX_CALL_OP || !reads(u, v)) continue;
        for (int k = 0; MOVES[k]; k++)
            if (rx_ll_is_op(u, MOVES[k])) return true;
    }
    return false;
}

/* The call's params: an i64 (2,) constant (axis, epilogue flags). */
static rx_node *params(rx_module *m, int64_t axis, int64_t flags)
{
    rx_const *k = RX_NEW(m->arena, rx_const);
    int64_t *shape = RX_NEWN(m->arena, int64_t, 1), v[2] = {axis, flags};
    uint8_t *bytes = RX_NEWN(m->arena, uint8_t, 16);
    shape[0] = 2;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 8; j++) bytes[8 * i + j] = (uint8_t)((uint64_t)v[i] >> (8 * j));
    *k = (rx_const){NULL, RX_DT_I64, 1, shape, bytes, 16, 0};
    rx_node *kn = rx_n_const(m, k);
    rx_expr *d = rx_e_int(m->arena, 2);
    kn->sinfo = rx_si_tensor(m->arena, RX_DT_I64, 1, &d);
    return kn;
}

/* The f32 constant of k when it holds C values along axis a of a rank-nd operand (shape
 * (C, 1, .., 1) right-aligned so that C falls on a, or one value per channel at rank nd);
 * NULL otherwise. */
static rx_node *channel_const(const rx_ll_ctx *c, rx_node *k, int64_t C, int a, int nd)
{
    if (k && k->kind == RX_N_VAR) k = rx_ll_def_of((void *)c, k);
    if (!k || k->kind != RX_N_CONST || k->u.konst->dtype != RX_DT_F32 ||
        k->u.konst->nbytes != 4 * (size_t)C)
        return NULL;
    const rx_const *q = k->u.konst;
    int off = nd - q->ndim; /* the constant's dim i is the operand's off + i */
    if (off < 0 || off > a) return NULL;
    for (int i = 0; i < q->ndim; i++)
        if (q->shape[i] != (off + i == a ? C : 1)) return NULL;
    return k;
}

/* The other operand of binary op call u (op name) when one of them is v, else NULL. */
static rx_node *other(const rx_node *u, const char *op, const rx_node *v)
{
    if (!rx_ll_is_op(u, op) || u->nargs != 2) return NULL;
    return u->args[0] == v ? u->args[1] : u->args[1] == v ? u->args[0] : NULL;
}

/* The epilogue after the concat y (bound at index j of b): y * s [+ o] [relu], y + o
 * [relu] or relu(y), with s and o f32 constants of one value per channel along axis a,
 * each intermediate read only by the next binding. Fills sc, sh (NULL when absent), the
 * chain's binding indices (the concat's first) and returns its length (1: none). */
static int epilogue(const rx_ll_ctx *c, rx_block *b, int j, int64_t C, int a, int nd,
                    rx_node **sc, rx_node **sh, bool *relu, int chain[4])
{
    int len = 1;
    chain[0] = j;
    rx_node *cur = b->bindings[j].var, *k;
    *sc = *sh = NULL;
    *relu = false;
    rx_binding *u = rx_ll_sole_user(c, cur, b, j);
    if (u && (k = other(u->value, "multiply", cur)) && (*sc = channel_const(c, k, C, a, nd))) {
        chain[len++] = (int)(u - b->bindings), cur = u->var;
        u = rx_ll_sole_user(c, cur, b, chain[len - 1]);
    }
    if (u && (k = other(u->value, "add", cur)) && (*sh = channel_const(c, k, C, a, nd))) {
        chain[len++] = (int)(u - b->bindings), cur = u->var;
        u = rx_ll_sole_user(c, cur, b, chain[len - 1]);
    }
    if (u && rx_ll_is_op(u->value, "nn.relu") && u->value->nargs == 1 && u->value->args[0] == cur) {
        chain[len++] = (int)(u - b->bindings);
        *relu = true;
    }
    return len;
}

bool rx_ll_try_concat(rx_ll_ctx *c, rx_block *b, int j, bool *drop)
{
    rx_binding *bd = &b->bindings[j];
    rx_node *call = bd->value;
    if (!rx_ll_is_op(call, "concat") || call->nargs != 1) return false;
    rx_node *t = call->args[0];
    if (t->kind == RX_N_VAR) t = rx_ll_def_of(c, t);
    const rx_sinfo *o = call->sinfo;
    if (!t || t->kind != RX_N_TUPLE || t->nargs < 2 || t->nargs > 1024 || !o ||
        o->kind != RX_SI_TENSOR || o->ndim < 2 || !o->dims ||
        !rx_dtype_is_float((rx_dtype)o->dtype))
        return false;
    int64_t a = rx_call_attr(call, "axis")->u.i, e;
    if (a < 0) a += o->ndim;
    if (a < 0 || a >= o->ndim) return false;
    double volume = 1;
    for (int d = 0; d < o->ndim; d++)
        volume *= rx_expr_is_const(o->dims[d], &e) ? (double)e : (double)MIN_ELEMS;
    if (volume < MIN_ELEMS) return false;
    for (int i = 0; i < t->nargs; i++) {
        const rx_sinfo *f = t->args[i]->sinfo;
        if (!f || f->kind != RX_SI_TENSOR || f->dtype != o->dtype || f->ndim != o->ndim ||
            !fixed_field(c, t->args[i]))
            return false;
    }
    if (moved(c, bd->var)) return false;
    rx_node *sc = NULL, *sh = NULL;
    bool relu = false;
    int chain[4] = {j}, len = 1;
    if (o->dtype == RX_DT_F32 && rx_expr_is_const(o->dims[a], &e))
        len = epilogue(c, b, j, e, (int)a, o->ndim, &sc, &sh, &relu, chain);
    int nx = (sc != NULL) + (sh != NULL);
    rx_node **args = RX_NEWN(c->m->arena, rx_node *, (size_t)t->nargs + 1 + (size_t)nx);
    args[0] = params(c->m, a, (sc ? 1 : 0) | (sh ? 2 : 0) | (relu ? 4 : 0));
    if (sc) args[1] = sc;
    if (sh) args[1 + (sc != NULL)] = sh;
    memcpy(args + 1 + nx, t->args, sizeof *args * (size_t)t->nargs);
    rx_ll_put_lib(c, &b->bindings[chain[len - 1]], "rt.concat", args, t->nargs + 1 + nx);
    for (int i = 0; i < len - 1; i++) drop[chain[i]] = true;
    return true;
}
