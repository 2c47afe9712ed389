/*
 * library_int.h — what library_lower.c shares with library_view.c (a matmul operand
 * as a strided view of a base tensor: library_view.c's essay has the model),
 * library_epi.c (the activation a chain computes) and library_conv_lower.c (the conv,
 * pool and rnn rules, on library_lower.c's use counts and rewriting).
 */
#ifndef RX_PASS_LIBRARY_INT_H
#define RX_PASS_LIBRARY_INT_H

#include "relax/arith.h"
#include "relax/ir.h"
#include "relax/pass.h"

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

/* ---- what library_lower.c's matmul rules share with library_conv_lower.c's rules ---- */

enum { RX_LL_NPATTERNS = 9 }; /* library_lower.c's matmul registry (checked there) */

/* One library lowering run: the options and the function's use and def tables. */
typedef struct rx_ll_ctx {
    rx_module *m;
    const rx_lib_opts *o;
    bool enabled[RX_LL_NPATTERNS];     /* by pattern index: not disabled */
    bool conv_enabled;                  /* the conv rule: not disabled, not opencl or cuda */
    bool pool_enabled;                  /* the pool rule: likewise */
    bool concat_enabled;                /* the concat rule (library_concat_lower.c): likewise */
    int32_t *uses;                      /* by variable id: occurrences in the function */
    rx_block **user_block;              /* by variable id: the block of the last use */
    int32_t *user_idx;                  /* ... and the binding index there (-1: a result) */
    rx_node **def;                      /* by variable id: the value bound to it, or NULL */
    rx_block **def_block;               /* ... and the block of that binding */
    rx_block *cur;                      /* the block try_view works in */
    int32_t nids;                       /* m->next_id when the arrays were made */
    int rewritten;                      /* chains replaced */
} rx_ll_ctx;

/* Whether n is a call of op name. */
bool rx_ll_is_op(const rx_node *n, const char *name);
/* Whether s is an f32 tensor annotation of rank ndim with known dims. */
bool rx_ll_f32_tensor(const rx_sinfo *s, int ndim);
/* The binding that alone uses v, in block b after index after; NULL when v has another
 * use, is used elsewhere, or by a match_cast. */
rx_binding *rx_ll_sole_user(const rx_ll_ctx *c, const rx_node *v, rx_block *b, int after);
/* The value bound to var in the block being lowered (c->cur), or NULL (ctx: the rx_ll_ctx). */
rx_node *rx_ll_def_of(void *ctx, const rx_node *var);
/* The value of a scalar f32 constant operand (inline or bound), or false. */
bool rx_ll_scalar_f32(const rx_ll_ctx *c, const rx_node *n, double *out);
/* Binding at (the last of a rewritten chain) becomes call_dps_library(lib, args) with its
 * annotation and location; counted as one rewrite. */
void rx_ll_put_lib(rx_ll_ctx *c, rx_binding *at, const char *lib, rx_node **args, int nargs);
/* library_conv_lower.c's rules on binding j of dataflow block b (its essay): the conv
 * chain (the bindings it replaces marked in drop) and the pools; true when rewritten. */
bool rx_ll_try_conv(rx_ll_ctx *c, rx_block *b, int j, bool *drop);
bool rx_ll_try_pool(rx_ll_ctx *c, rx_binding *bd);
/* library_qconv_lower.c's rule on binding j of dataflow block b (its essay): an 8-bit
 * convolution with the elementwise chain after it -> rt.qconv2d with an epilogue
 * program (the bindings it replaces marked in drop); true when rewritten. */
bool rx_ll_try_qconv(rx_ll_ctx *c, rx_block *b, int j, bool *drop);
/* library_concat_lower.c's rule on binding j of dataflow block b (c->cur): a concat of
 * fields FuseOps could not fuse into it, with its per-channel affine / relu epilogue (the
 * bindings it replaces marked in drop) -> rt.concat; true when rewritten. */
bool rx_ll_try_concat(rx_ll_ctx *c, rx_block *b, int j, bool *drop);

#endif
