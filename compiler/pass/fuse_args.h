/*
 * fuse_args.h — FuseOps' per-target argument limit (fuse_args.c), used by fuse_ops.c.
 */
#ifndef RX_FUSE_ARGS_H
#define RX_FUSE_ARGS_H

#include <stdint.h>

#include "relax/arith.h"
#include "relax/ir.h"
#include "relax/pass.h"

/* The bytes of scalar arguments a kernel of the group calls[0..n) (its members' call_tir
 * nodes, their bound variables vars[0..n), their patterns pats[0..n)) would take under
 * lim: buf_bytes per buffer (the distinct external inputs, constants included, the one
 * output and the intermediates FuseTIR would materialize; scratch holds its terms), then, aligned
 * to var_bytes, var_bytes per symbolic variable the inputs' and members' annotations
 * use (an upper bound of the fused loop function's); *nbuf gets the buffers. */
int64_t rxi_fuse_arg_bytes(const rx_node *const *calls, const rx_node *const *vars,
                           const uint8_t *pats, int n, rx_arena *scratch, const rx_fuse_limit *lim,
                           int *nbuf);

/* Appends the symbolic variables annotation s uses (dims, a prim value, tuple fields). */
void rxi_fuse_sinfo_vars(const rx_sinfo *s, rx_svar_vec *out);

#endif
