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
 *
 * The same walk numbers program points (ticks) for lifetime.c: every item gets the
 * next tick when the walk reaches it, the items of a branch the ticks after its if's,
 * and each item records the last tick inside it (its end tick). So a value defined at
 * item d and dead after item e of one body is live exactly at ticks tick[d] through
 * end_tick[e], and the two branches of an if have disjoint ticks, as only one runs.
 */
#include "vg_int.h"

#include <stdlib.h>

typedef struct open_body {
    int32_t serial; /* body serial */
    int32_t item;   /* item being walked */
} open_body;

typedef struct lctx {
    vg_fn *F;
    RX_VEC(open_body) stack;
    int32_t next_serial;
} lctx;

static int32_t count_items(const rx_seq *s)
{
    int32_t n = 1;
    for (int b = 0; b < s->nblocks; b++) n += s->blocks[b]->nbindings;
    return n;
}

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
    vg_fn *F = c->F;
    open_body ob = {c->next_serial++, 0};
    vg_body body = {-1, -1, count_items(s), NULL, NULL};
    if (c->stack.n) {
        body.parent = c->stack.items[c->stack.n - 1].serial;
        body.parent_item = c->stack.items[c->stack.n - 1].item;
    }
    body.tick = rx_xmalloc(sizeof(int64_t) * 2 * (size_t)body.nitems);
    body.end_tick = body.tick + body.nitems;
    RX_VEC_PUSH(F->bodies, body);
    RX_ASSERT(F->bodies.n == ob.serial + 1);
    RX_VEC_PUSH(c->stack, ob);
    int top = c->stack.n - 1, item = 0;
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++, item++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            c->stack.items[top].item = item;
            F->bodies.items[ob.serial].tick[item] = F->nticks++;
            walk_node(c, bd->value);
            F->bodies.items[ob.serial].end_tick[item] = F->nticks - 1;
            int32_t id = bd->var->u.var.id;
            F->def_seq[id] = ob.serial;
            F->def_item[id] = item;
        }
    c->stack.items[top].item = item;
    F->bodies.items[ob.serial].tick[item] = F->nticks++;
    walk_node(c, s->result);
    F->bodies.items[ob.serial].end_tick[item] = F->nticks - 1;
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
    F->nticks = 0;
    lctx c = {F, {0}, 0};
    walk_seq(&c, F->f->body);
    RX_VEC_FREE(c.stack);
}

void vg_liveness_free(vg_fn *F)
{
    for (int i = 0; i < F->bodies.n; i++) free(F->bodies.items[i].tick);
    RX_VEC_FREE(F->bodies);
}

int32_t vg_item_in(const vg_fn *F, int32_t body, int32_t item, int32_t home)
{
    while (body != home) {
        RX_ASSERT(body > 0);
        item = F->bodies.items[body].parent_item;
        body = F->bodies.items[body].parent;
    }
    return item;
}
