/*
 * normalize.c — A-normal form for graph functions (pipeline step 1, with deduction).
 *
 * relax-json lets an operand be any expression ({"op": "matmul", "args": ["z",
 * {"op": "permute_dims", "args": ["z"]}]}); every later pass wants operands that are
 * leaves, as TVM's normalizer guarantees. This pass binds every non-leaf operand to a
 * fresh variable in a binding placed just before the one that uses it, in the same
 * block (so a dataflow block stays one). Leaves are variables, globals, constants,
 * prim values and shape values; a tuple of leaves is a leaf where it is a call
 * argument (concat takes one). A function body's result becomes a leaf the same way,
 * through a binding in a new plain block. `if` branches are normalized inside.
 *
 * The new variables are named "_tN" (names carry no meaning: the printer disambiguates
 * and the structural hash ignores them) and take the operand's location, so deduction
 * errors about them point at the operand as written. Runs before deduction; the new
 * variables get their annotations there. Cost: linear in the size of the bodies.
 */
#include "relax/deduce.h"

#include <stdio.h>

typedef struct norm {
    rx_module *m;
    int ntemp;                  /* temporaries made so far (for names) */
    RX_VEC(rx_binding) out;     /* the block being rebuilt */
    bool dataflow;              /* of that block */
} norm;

static void norm_seq(norm *n, rx_seq *s);

static bool is_leaf(const rx_node *e)
{
    switch (e->kind) {
    case RX_N_VAR: case RX_N_GLOBAL: case RX_N_CONST: case RX_N_PRIMVAL: case RX_N_SHAPE:
        return true;
    default:
        return false;
    }
}

/* Binds e to a fresh variable appended to the block being rebuilt; returns the var. */
static rx_node *bind_temp(norm *n, rx_node *e)
{
    char name[32];
    snprintf(name, sizeof name, "_t%d", n->ntemp++);
    rx_node *v = rx_n_var(n->m, name, NULL, n->dataflow);
    v->loc = e->loc;
    rx_binding b = {.var = v, .value = e, .loc = e->loc};
    RX_VEC_PUSH(n->out, b);
    return v;
}

static rx_node *norm_value(norm *n, rx_node *e);

/* An operand: a leaf stays; anything else is normalized and bound to a temporary.
 * tuple_ok: a tuple of leaves may stay (call arguments). */
static rx_node *norm_operand(norm *n, rx_node *e, bool tuple_ok)
{
    if (is_leaf(e)) return e;
    if (tuple_ok && e->kind == RX_N_TUPLE) {
        for (int i = 0; i < e->nargs; i++) e->args[i] = norm_operand(n, e->args[i], false);
        return e;
    }
    return bind_temp(n, norm_value(n, e));
}

/* A bound value: its own operands become leaves; the value itself may stay compound. */
static rx_node *norm_value(norm *n, rx_node *e)
{
    switch (e->kind) {
    case RX_N_CALL:
        if (e->call_kind == RX_CALL_FN && !is_leaf(e->u.call.callee))
            e->u.call.callee = norm_operand(n, e->u.call.callee, false);
        for (int i = 0; i < e->nargs; i++) e->args[i] = norm_operand(n, e->args[i], true);
        break;
    case RX_N_TUPLE:
    case RX_N_GET_ITEM:
        for (int i = 0; i < e->nargs; i++) e->args[i] = norm_operand(n, e->args[i], false);
        break;
    case RX_N_IF:
        e->args[0] = norm_operand(n, e->args[0], false);
        norm_seq(n, e->u.if_.then_body);
        norm_seq(n, e->u.if_.else_body);
        break;
    default:
        break;
    }
    return e;
}

static void norm_block(norm *n, rx_block *b)
{
    RX_VEC(rx_binding) saved = {n->out.items, n->out.n, n->out.cap};
    bool saved_df = n->dataflow;
    n->out.items = NULL, n->out.n = n->out.cap = 0;
    n->dataflow = b->dataflow;
    for (int i = 0; i < b->nbindings; i++) {
        rx_binding bd = b->bindings[i];
        bd.value = norm_value(n, bd.value);
        RX_VEC_PUSH(n->out, bd);
    }
    if (n->out.n != b->nbindings) {
        b->bindings = rx_arena_dup(n->m->arena, n->out.items, sizeof(rx_binding) * (size_t)n->out.n);
        b->nbindings = n->out.n;
    } else {
        for (int i = 0; i < n->out.n; i++) b->bindings[i] = n->out.items[i];
    }
    RX_VEC_FREE(n->out);
    n->out.items = saved.items, n->out.n = saved.n, n->out.cap = saved.cap;
    n->dataflow = saved_df;
}

static void norm_seq(norm *n, rx_seq *s)
{
    for (int i = 0; i < s->nblocks; i++) norm_block(n, s->blocks[i]);
    if (is_leaf(s->result)) return;
    /* The result: normalized and bound in a new plain block at the end. */
    RX_VEC(rx_binding) saved = {n->out.items, n->out.n, n->out.cap};
    bool saved_df = n->dataflow;
    n->out.items = NULL, n->out.n = n->out.cap = 0;
    n->dataflow = false;
    rx_node *r = s->result;
    if (r->kind == RX_N_TUPLE) { /* a tuple of results stays a tuple of leaves */
        for (int i = 0; i < r->nargs; i++) r->args[i] = norm_operand(n, r->args[i], false);
    } else {
        s->result = bind_temp(n, norm_value(n, r));
    }
    if (n->out.n > 0) {
        rx_block *b = RX_NEW(n->m->arena, rx_block);
        b->loc = s->loc;
        b->nbindings = n->out.n;
        b->bindings = rx_arena_dup(n->m->arena, n->out.items, sizeof(rx_binding) * (size_t)n->out.n);
        rx_block **bs = RX_NEWN(n->m->arena, rx_block *, s->nblocks + 1);
        for (int i = 0; i < s->nblocks; i++) bs[i] = s->blocks[i];
        bs[s->nblocks] = b;
        s->blocks = bs;
        s->nblocks++;
    }
    RX_VEC_FREE(n->out);
    n->out.items = saved.items, n->out.n = saved.n, n->out.cap = saved.cap;
    n->dataflow = saved_df;
}

void rx_normalize_module(rx_module *m)
{
    norm n = {.m = m};
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX && m->funcs[i]->body) norm_seq(&n, m->funcs[i]->body);
}
