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

/* call_dps_library("rt.rnn", the 7 operands of the nn.rnn call, params) with the call's
 * annotation and location (library_lower.c; legalize.c takes every nn.rnn this way). */
rx_node *rx_lib_rnn_call(rx_module *m, rx_node *call);

#endif
