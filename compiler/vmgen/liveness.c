/*
 * liveness.c — the last use of every variable of a graph function, for RELEASE.
 *
 * A body (the function's, or a branch of an if) is a list of items: its bindings in
 * order, then its result. Each body gets a serial number in the order the lowering
 * meets them (the function body 0, then each if's then- and else-branch, depth first),
 * and every variable records the body defining it and the item there (parameters:
 * item -1 of body 0). A use is charged to the item of the defining body that contains
 * it: a use deep inside a branch counts as a use by the if binding, so a variable of an
 * outer body lives until the whole if is done. The lowering releases a variable right
 * after the item recorded as its last use (or right after its definition when it has
 * none). One walk over the function; a stack of open bodies as deep as the if nesting.
 */
#include "vg_int.h"

typedef struct open_body {
    int32_t serial; /* body serial */
    int32_t item;   /* item being walked */
} open_body;

typedef struct lctx {
    vg_fn *F;
    RX_VEC(open_body) stack;
    int32_t next_serial;
} lctx;

static void use(lctx *c, const rx_node *var)
{
    int32_t id = var->u.var.id;
    RX_ASSERT(id >= 0 && id < c->F->nids);
    for (int i = c->stack.n - 1; i >= 0; i--)
        if (c->stack.items[i].serial == c->F->def_seq[id]) {
            if (c->stack.items[i].item > c->F->last_use[id])
                c->F->last_use[id] = c->stack.items[i].item;
            return;
        }
}

static void walk_seq(lctx *c, const rx_seq *s);

static void walk_node(lctx *c, const rx_node *n)
{
    if (!n) return;
    switch (n->kind) {
    case RX_N_VAR: use(c, n); return;
    case RX_N_CALL:
        if (n->call_kind == RX_CALL_FN) walk_node(c, n->u.call.callee);
        break;
    case RX_N_IF:
        walk_node(c, n->args[0]);
        walk_seq(c, n->u.if_.then_body);
        walk_seq(c, n->u.if_.else_body);
        return;
    default: break;
    }
    for (int i = 0; i < n->nargs; i++) walk_node(c, n->args[i]);
}

static void walk_seq(lctx *c, const rx_seq *s)
{
    open_body ob = {c->next_serial++, 0};
    RX_VEC_PUSH(c->stack, ob);
    int top = c->stack.n - 1, item = 0;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++, item++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            c->stack.items[top].item = item;
            walk_node(c, bd->value);
            int32_t id = bd->var->u.var.id;
            c->F->def_seq[id] = ob.serial;
            c->F->def_item[id] = item;
        }
    c->stack.items[top].item = item;
    walk_node(c, s->result);
    c->stack.n--;
}

void vg_liveness(vg_fn *F)
{
    for (int32_t i = 0; i < F->nids; i++) {
        F->def_seq[i] = -1;
        F->def_item[i] = -1;
        F->last_use[i] = -1;
    }
    for (int i = 0; i < F->f->nparams; i++) F->def_seq[F->f->params[i]->u.var.id] = 0;
    lctx c = {F, {0}, 0};
    walk_seq(&c, F->f->body);
    RX_VEC_FREE(c.stack);
}
