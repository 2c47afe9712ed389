/*
 * library_int.h — what library_lower.c shares with library_view.c: a matmul operand
 * as a strided view of a base tensor (library_view.c's essay has the model).
 */
#ifndef RX_PASS_LIBRARY_INT_H
#define RX_PASS_LIBRARY_INT_H

#include "relax/arith.h"
#include "relax/ir.h"

enum { RX_LV_MAXR = 8 }; /* the highest rank of a view (runtime/library.c's VIEW_MAXR) */

/* L = alpha * permute(repeat(reshape(base, S), R), P), rank r. */
typedef struct rx_lv_view {
    rx_node *base;
    int r;
    rx_expr *S[RX_LV_MAXR];
    int64_t R[RX_LV_MAXR];
    int P[RX_LV_MAXR];
    double alpha;
    bool moved; /* absorbed at least one producer (base is not the operand itself) */
} rx_lv_view;

/* The value bound to a variable (NULL: a parameter, or not bound by a plain binding). */
typedef struct rx_lv_defs {
    rx_node *(*def)(void *ctx, const rx_node *var);
    void *ctx;
} rx_lv_defs;

/* The view of f32 tensor n (false when n is not an f32 tensor of rank 1..RX_LV_MAXR);
 * new extents are allocated in a. */
bool rx_lv_view_of(const rx_lv_defs *defs, rx_node *n, rx_lv_view *v, rx_arena *a);
/* Whether each batch item of v's last two axes is a matrix BLAS reads: no repeat on them,
 * one of them the base's innermost (unit-stride) axis. */
bool rx_lv_blas_able(const rx_lv_view *v);
/* Appends r, S, R, P to out at *n (1 + 3 r words, out has room); false when an extent of
 * S is not a literal, one of the base's dims, or the one inferred. */
bool rx_lv_encode_operand(const rx_lv_view *v, int64_t *out, int *n);

/* The activations of the library epilogues (runtime/library_act.c's RX_RT_ACT_* codes,
 * which blas.matmul_view's descriptor carries). */
enum { RX_LE_ACT_NONE, RX_LE_ACT_RELU, RX_LE_ACT_GELU, RX_LE_ACT_SILU, RX_LE_ACT_GELU_TANH };

/* What rx_le_match reads of the function: use counts by variable id (nids of them) and
 * the bindings' values (scalar constants seen through variables). */
typedef struct rx_le_ctx {
    const int32_t *uses;
    int32_t nids;
    rx_lv_defs defs;
} rx_le_ctx;

/* The activation that op-call bindings of block b after index `after` (none marked in
 * drop) compute from the variable x alone, with x and every intermediate used only by
 * them (library_epi.c's essay): their binding indices into chain (ascending, the result's
 * last; room for 16) and the activation into *act; returns how many, or 0. */
int rx_le_match(const rx_le_ctx *c, rx_block *b, rx_node *x, int after, const bool *drop,
                int *chain, int *act);

/* call_dps_library("rt.rnn", the 7 operands of the nn.rnn call, params) with the call's
 * annotation and location (library_lower.c; legalize.c takes every nn.rnn this way). */
rx_node *rx_lib_rnn_call(rx_module *m, rx_node *call);

#endif
