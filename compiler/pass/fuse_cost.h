/*
 * fuse_cost.h — the recompute rule's measures (fuse_cost.c), used by fuse_ops.c.
 */
#ifndef RX_FUSE_COST_H
#define RX_FUSE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "relax/arith.h"
#include "relax/ir.h"

/* Loop function f's cost per element (saturating at INT32_MAX) and its passes: the
 * most loads of one of its parameters (at least 1). */
void rxi_fuse_cost(const rx_func *f, int32_t *cost, int32_t *passes);

/* True when a store of loop function f reads a tensor transposed: the store's last index
 * is a variable that a load of rank >= 2 in its value uses, but not in its last index
 * (permute_dims moving the innermost axis: each element read strides through memory). */
bool rxi_fuse_transposes(const rx_func *f);

/* True when tensor c provably has at least twice the elements of tensor p (ar and a,
 * when given, prove per-dim bounds of symbolic dims; a holds the terms built). */
bool rxi_fuse_larger_space(rx_arith *ar, rx_arena *a, const rx_sinfo *p, const rx_sinfo *c);

#endif
