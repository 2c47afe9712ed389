/*
 * reshape_view.c — reshapes that copy nothing (TVM's RewriteDataflowReshape): a call of
 * a loop function that only copies its one input in row-major order becomes the op
 * call `reshape(x, shape)`, which lower_vm turns into the VM's VIEW (a tensor over
 * x's bytes with the new shape, sharing x's storage) instead of an allocation and a
 * copy kernel.
 *
 * Why: the tensors the VM makes are dense and row-major, so a reshape of one is the
 * same bytes under another shape. Below opt level 2 nothing fuses a reshape into its
 * producer or consumer, so an exporter's `permute_dims` then `reshape` (attention's
 * `(b, s, h, d) -> (b, s, h * d)`) was two full copies: 0.42-0.58x memcpy at O0/O1
 * against 0.86-1.6x at O2, where the two fuse into one kernel. At O2 and O3 a reshape
 * FuseOps left alone (its producer is a library call or a parameter, or it feeds
 * several consumers) also stops costing a copy.
 *
 * Which calls: `v = call_tir(@f, [x], out=T)` where f has the attribute "reshape":
 * true (legalize puts it on the functions of reshape, flatten, squeeze and
 * expand_dims; a module may declare it on a loop function of its own that copies its
 * one input in row-major order), x is a tensor of T's dtype and T is one tensor of
 * known dims. The element counts agree: deduction proved it, or legalize inserted
 * the run-time check before the call; VIEW checks again. Calls inside fused
 * functions are not visited (FuseTIR has already inlined them).
 *
 * What keeps it correct: the view shares x's storage, so memory planning must not
 * reuse x's bytes while v lives. lifetime.c treats `v = reshape(x, ...)` as an alias
 * of x (like `v = x`): x's tensor lives to v's last use, and escapes when v does (a
 * returned view keeps its input out of the arena). No kernel writes its inputs.
 *
 * CPU only (the driver's cpu_only list): the device VM's split storages (docs/gpu.md)
 * would need views placed in segments. Loop functions left uncalled are removed
 * (dce's rx_drop_uncalled_loop_funcs; no binding becomes dead here). Runs at every opt
 * level, after workspace lifting and before specialization (so a specialized copy never
 * has to carry the attribute). Cost: one walk of the graph functions.
 */
#include <string.h>

#include "relax/op.h"
#include "relax/pass.h"

typedef struct rv_ctx {
    rx_module *m;
    const rx_op *reshape;
    int views; /* calls rewritten */
} rv_ctx;

/* Whether loop function f declares itself a row-major copy of its input. */
static bool is_reshape_fn(const rx_func *f)
{
    const rx_attr *a = f && f->kind == RX_F_TIR ? rx_attr_map_get(f->attrs, "reshape") : NULL;
    return a && a->kind == RX_A_BOOL && a->u.b;
}

/* The reshape op call replacing n, or NULL when n is not such a call. */
static rx_node *view_of(rv_ctx *c, rx_node *n)
{
    if (n->kind != RX_N_CALL || n->call_kind != RX_CALL_TIR || n->nargs != 1) return NULL;
    const rx_node *callee = n->u.call.callee;
    if (callee->kind != RX_N_GLOBAL || !is_reshape_fn(callee->u.global.fn)) return NULL;
    rx_node *x = n->args[0];
    rx_sinfo *out = n->u.call.out;
    const rx_sinfo *xs = x->sinfo;
    if (!out || out->kind != RX_SI_TENSOR || !out->dims || out->dtype == RX_DT_UNKNOWN) return NULL;
    if (!xs || xs->kind != RX_SI_TENSOR || xs->dtype != out->dtype) return NULL;
    rx_node *args[2] = {x, rx_n_shape(c->m, out->dims, out->ndim)};
    rx_node *r = rx_n_call_op(c->m, c->reshape, args, 2, NULL);
    r->loc = n->loc;
    r->sinfo = out;
    c->views++;
    return r;
}

static void walk_seq(rv_ctx *c, rx_seq *s)
{
    for (int b = 0; s && b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            rx_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->value->kind == RX_N_IF) {
                walk_seq(c, bd->value->u.if_.then_body);
                walk_seq(c, bd->value->u.if_.else_body);
                continue;
            }
            rx_node *v = bd->match_cast ? NULL : view_of(c, bd->value);
            if (v) bd->value = v;
        }
}

bool rx_pass_reshape_view(rx_module *m, rx_diags *d)
{
    rv_ctx c = {m, rx_op_find("reshape"), 0};
    RX_ASSERT(c.reshape);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) walk_seq(&c, m->funcs[i]->body);
    (void)d;
    if (!c.views) m->unchanged = true;
    else rx_drop_uncalled_loop_funcs(m); /* the copy functions no call names any more */
    return true;
}
