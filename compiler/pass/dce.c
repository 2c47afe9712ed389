/*
 * dce.c — dead code elimination (TVM's relax.transform.DeadCodeElimination).
 *
 * Step 1: per graph function, repeat until nothing changes: count the uses of every
 *         variable (binding values, if branches, the body's result, nested bodies),
 *         then drop each binding whose variable has no use and whose value may be
 *         dropped; blocks left empty disappear. A value may be dropped when
 *           - it is in a dataflow block: dataflow blocks are pure by definition
 *             (paper §3: no side effects inside), or
 *           - it is in a plain block and pure: every v1 op call (ops have no
 *             effects: unique/nonzero/shape_of only compute), call_tir (destination
 *             passing: it writes only the output it allocates), tuples, get_item,
 *             leaves. Kept in plain blocks: calls of graph functions and callables
 *             (a callee may be a packed function from outside), call_dps_library
 *             (library code), and `if` (whose branches may hold such calls).
 *         match_cast bindings are always kept: they are run-time checks and may define
 *         symbolic variables used by later annotations, so dropping one could change
 *         what a program accepts.
 * Step 2: loop functions that no graph function references any more (after
 *         legalization or fusion replaced their calls) are removed. Every graph
 *         function is kept: v1 has no export marker, any may be called by name. A
 *         module without graph functions keeps its loop functions (they are its API).
 * Step 3: deduce the module again.
 * Cost: O(size × rounds); a round removes every binding dead at that point, so the
 * rounds are bounded by the longest chain of dead bindings (in practice 1–3).
 */
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"

typedef RX_VEC(int32_t) count_vec; /* uses per variable id */

static void count_node(const rx_node *n, int32_t *uses, int32_t nids)
{
    if (!n) return;
    if (n->kind == RX_N_VAR) {
        if (n->u.var.id >= 0 && n->u.var.id < nids) uses[n->u.var.id]++;
        return;
    }
    if (n->kind == RX_N_CALL && n->u.call.callee) count_node(n->u.call.callee, uses, nids);
    if (n->kind == RX_N_IF) {
        rx_count_var_uses(n->u.if_.then_body, uses, nids);
        rx_count_var_uses(n->u.if_.else_body, uses, nids);
    }
    for (int i = 0; i < n->nargs; i++) count_node(n->args[i], uses, nids);
}

void rx_count_var_uses(const rx_seq *s, int32_t *uses, int32_t n)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++)
        for (int j = 0; j < s->blocks[i]->nbindings; j++)
            count_node(s->blocks[i]->bindings[j].value, uses, n);
    count_node(s->result, uses, n);
}

static bool droppable(const rx_node *v, bool dataflow)
{
    if (dataflow) return true;
    if (v->kind == RX_N_IF) return false;
    if (v->kind == RX_N_CALL && (v->call_kind == RX_CALL_FN || v->call_kind == RX_CALL_LIB))
        return false;
    for (int i = 0; i < v->nargs; i++)
        if (!droppable(v->args[i], false)) return false;
    return true;
}

/* Drops dead bindings of s and of nested bodies; true when something was dropped. */
static bool sweep_seq(rx_seq *s, const count_vec *uses)
{
    if (!s) return false;
    bool changed = false;
    int nb = 0;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        int k = 0;
        for (int j = 0; j < b->nbindings; j++) {
            rx_binding *bd = &b->bindings[j];
            int32_t id = bd->var->u.var.id;
            bool used = id < 0 || id >= uses->n || uses->items[id] > 0;
            if (!used && !bd->match_cast && droppable(bd->value, b->dataflow)) {
                changed = true;
                continue;
            }
            if (bd->value->kind == RX_N_IF) {
                changed = sweep_seq(bd->value->u.if_.then_body, uses) || changed;
                changed = sweep_seq(bd->value->u.if_.else_body, uses) || changed;
            }
            b->bindings[k++] = *bd;
        }
        b->nbindings = k;
        if (k) s->blocks[nb++] = b;
        else changed = true;
    }
    s->nblocks = nb;
    return changed;
}

static void dce_func(rx_module *m, rx_func *f)
{
    count_vec uses = {0};
    for (;;) {
        RX_VEC_GROW(uses, m->next_id + 1);
        uses.n = m->next_id + 1;
        memset(uses.items, 0, sizeof *uses.items * (size_t)uses.n);
        rx_count_var_uses(f->body, uses.items, uses.n);
        if (!sweep_seq(f->body, &uses)) break;
    }
    RX_VEC_FREE(uses);
}

/* ---------------------------------------------------------------- loop functions */

static void mark_seq(const rx_seq *s, const rx_module *m, bool *live);

static void mark_node(const rx_node *n, const rx_module *m, bool *live)
{
    if (!n) return;
    if (n->kind == RX_N_GLOBAL) {
        for (int i = 0; i < m->nfuncs; i++)
            if (m->funcs[i] == n->u.global.fn || strcmp(m->funcs[i]->name, n->u.global.name) == 0)
                live[i] = true;
        return;
    }
    if (n->kind == RX_N_CALL && n->u.call.callee) mark_node(n->u.call.callee, m, live);
    if (n->kind == RX_N_IF) {
        mark_seq(n->u.if_.then_body, m, live);
        mark_seq(n->u.if_.else_body, m, live);
    }
    for (int i = 0; i < n->nargs; i++) mark_node(n->args[i], m, live);
}

static void mark_seq(const rx_seq *s, const rx_module *m, bool *live)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++)
        for (int j = 0; j < s->blocks[i]->nbindings; j++)
            mark_node(s->blocks[i]->bindings[j].value, m, live);
    mark_node(s->result, m, live);
}

void rx_drop_uncalled_loop_funcs(rx_module *m)
{
    bool *live = RX_NEWN(m->arena, bool, m->nfuncs + 1), any_graph = false;
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i]->kind != RX_F_RELAX) continue;
        live[i] = any_graph = true;
        mark_seq(m->funcs[i]->body, m, live);
    }
    if (!any_graph) return;
    int k = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (live[i]) m->funcs[k++] = m->funcs[i];
    m->nfuncs = k;
}

bool rx_pass_dce(rx_module *m, rx_diags *d)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) dce_func(m, m->funcs[i]);
    rx_drop_uncalled_loop_funcs(m);
    return true;
}
