/*
 * deduce.h — annotation deduction (paper §4.1) and the annotation lattice.
 *
 * rx_deduce_module walks every graph function forward, once, and sets the annotation
 * of every expression and variable: ops by their registered rules, call_tir and
 * call_dps_library from their `out`, calls of graph functions and callables through
 * the callee's signature with symbolic substitution (Figure 7), tuples and get_item,
 * match_cast (which may define new symbolic variables: the reader has already created
 * them), if by joining both branches. A written annotation must be at least as coarse
 * as the deduced one; the variable then carries the written one. A contradiction, or a
 * written annotation finer than what can be proved, is an error naming both.
 *
 * The lattice: Object is the top; Tensor(ndim=-1, dtype=?) is above every tensor;
 * a tensor with unknown dims is above every tensor of its ndim; dims are compared with
 * the arithmetic (proved equal, proved different, or unknown).
 */
#ifndef RELAX_DEDUCE_H
#define RELAX_DEDUCE_H

#include "relax/op.h"

/* Deduction context, passed to op rules. */
struct rx_dctx {
    rx_module *m;
    rx_arena *a;      /* m->arena */
    rx_arith *ar;     /* arithmetic with the current function's variable bounds */
    rx_diags *diags;
    rx_func *fn;      /* function being deduced */
};

/* Deduces every annotation in m, after bringing its graph functions to A-normal form
 * (rx_normalize_module). Returns false if any error was reported. */
bool rx_deduce_module(rx_module *m, rx_diags *d);

/* A-normal form: every operand that is not a leaf (variable, global, constant, prim or
 * shape value; a tuple of leaves as a call argument) is bound to a fresh variable just
 * before its use (normalize.c). Idempotent; run by rx_deduce_module. */
void rx_normalize_module(rx_module *m);

/* ---- for op rules (deduce/deduce.c) ---- */
/* The location of operand i of node n as written at this use: a variable or global
 * node is shared by all its uses and carries the location of its definition, so for
 * those the path is derived from n's (`<n>.args[i]`, `<n>.if`, `<n>.get_item`,
 * `<n>.tuple[i]`). */
rx_loc rx_d_arg_loc(rx_dctx *c, const rx_node *n, int i);

/* ---- the lattice (deduce/sinfo.c) ---- */
typedef enum rx_cmp { RX_CMP_NO = 0, RX_CMP_YES = 1, RX_CMP_MAYBE = 2 } rx_cmp;

/* Is every value of `derived` a value of `base`? YES when proved, NO when
 * contradictory, MAYBE when only a run-time check could tell. */
rx_cmp rx_si_is_base_of(rx_arith *ar, const rx_sinfo *base, const rx_sinfo *derived);
/* Least upper bound (used to join if-branches). */
rx_sinfo *rx_si_join(rx_arith *ar, rx_arena *a, const rx_sinfo *x, const rx_sinfo *y);
/* Substitutes symbolic variables. */
rx_sinfo *rx_si_subst(rx_arena *a, const rx_sinfo *s, const rx_vmap *m);
/* Replaces any dim that uses a variable not accepted by `defined` by an unknown
 * shape of the same ndim (TVM's EraseToWellDefined). */
typedef bool (*rx_var_pred)(void *ud, const rx_svar *v);
rx_sinfo *rx_si_erase(rx_arena *a, const rx_sinfo *s, rx_var_pred defined, void *ud);
/* Matches a signature annotation against an argument annotation, binding the
 * signature's variables that stand as whole dims into m (Figure 7: Shape([n, m])
 * against Shape([n2, 4]) binds n := n2, m := 4). Returns NO on a contradiction. */
rx_cmp rx_si_match(rx_arith *ar, rx_arena *a, const rx_sinfo *param, const rx_sinfo *arg,
                   rx_vmap *m);
bool rx_si_same(const rx_sinfo *x, const rx_sinfo *y); /* structurally, vars by pointer */

#endif
