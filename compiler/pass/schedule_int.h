/*
 * schedule_int.h — what the schedule steps share inside compiler/pass: the copy nest
 * matcher of schedule_copy.c, which schedule_concat.c starts from too.
 */
#ifndef RX_SCHEDULE_INT_H
#define RX_SCHEDULE_INT_H

#include "relax/pass.h"

enum { RX_COPY_MAX_LOOPS = 16, RX_COPY_MIN_VOLUME = 4096 };

/* A copy nest: for v_0 .. for v_{n-1} (n >= 2; serial, unbound, from 0, extents free
 * of the nest) { block (n spatial iterators bound to exactly v_0 .. v_{n-1}, no init) {
 * C[x_0, .., x_{n-1}] = VALUE } } with VALUE loading no C, and at least
 * RX_COPY_MIN_VOLUME iterations when every extent is a literal. */
typedef struct rx_copy_nest {
    rx_stmt *loops[RX_COPY_MAX_LOOPS]; /* the chain, outermost first */
    int n;                             /* loops */
    rx_stmt *blk;                      /* the block */
    const rx_stmt *st;                 /* its one store */
} rx_copy_nest;

/* True (and *c filled) when FOR s is a copy nest. */
bool rx_copy_nest_match(rx_stmt *s, rx_copy_nest *c);

/* True when some load in e is of b. */
bool rx_expr_loads(const rx_expr *e, const rx_buffer *b);

/* The per-nest steps the schedule passes are made of (rx_schedule_nests callbacks):
 * FOR s split by concat field (schedule_concat.c), tiled as a transpose
 * (schedule_copy.c), or NULL when s is not of that shape. */
rx_stmt *rx_schedule_concat_nest(rx_module *m, rx_stmt *s);
rx_stmt *rx_schedule_copy_nest(rx_module *m, rx_stmt *s);

/* Runs of row nests (row reductions and row-wise elementwise nests over the same row
 * loops) fused per row, their reductions over vector lanes, the rows one parallel loop
 * (schedule_rows.c's essay). *nruns and *nlanes (may be NULL) get the number of runs
 * rewritten and of reductions given lanes. Never fails. */
bool rx_schedule_rows(rx_module *m, int *nruns, int *nlanes);

/* True when G, reduced along loop variable k (block iterator ki) in the nest of block
 * blk under loops[0 .. p] (p row loops, then k's), is a row reduction: some load of G
 * that moves with k uses every row iterator (schedule_rows_share.c's essay). */
bool rx_rows_reduction(const rx_stmt *blk, const rx_stmt *const *loops, int p, const rx_expr *g,
                       const rx_svar *k, const rx_svar *ki);

/* Flat loops whose index math splits the flat index by one chain of radices, one of
 * them symbolic, rebuilt as a parallel loop over rows and a vectorized run
 * (schedule_radix.c's essay); *nnests (may be NULL) gets how many. Never fails. */
bool rx_schedule_radix(rx_module *m, int *nnests);
/* FOR s as schedule_radix.c's nest (its loops already parallel and vectorized), or NULL
 * when it does not qualify. */
rx_stmt *rx_schedule_radix_nest(rx_module *m, rx_stmt *s);

/* Loads through a reshape's (A + x // D, x % D) index pairs read flat, (A, x)
 * (schedule_flat.c's essay); *nmerged (may be NULL) gets how many pairs. Never fails. */
bool rx_schedule_flat(rx_module *m, int *nmerged);

/* Reductions of a few literal steps unrolled into elementwise nests, else their trailing
 * reduce loops merged into one where they walk the trailing axes of every buffer they
 * index (schedule_reduce.c's essay: a global pooling's h and w); *nmerged (may be NULL)
 * gets how many nests changed. Never fails. */
bool rx_schedule_reduce(rx_module *m, int *nmerged);

/* Perfect spatial nests whose math does not change along an outer loop that their
 * loads read contiguously: that loop moved innermost (schedule_hoist.c's essay,
 * "Interchange"); *nswapped (may be NULL) gets how many nests. Never fails. */
bool rx_schedule_interchange(rx_module *m, int *nswapped);

/* Costly terms invariant along an innermost loop bound by LETs before it
 * (schedule_hoist.c's essay); *nhoisted (may be NULL) gets how many. Never fails. */
bool rx_schedule_hoist(rx_module *m, int *nhoisted);

/* Short innermost loops merged with the loop around them where every access walks one
 * contiguous run (schedule_coalesce.c's essay); *nmerged (may be NULL) gets how many
 * nests changed. Never fails. */
bool rx_schedule_coalesce(rx_module *m, int *nmerged);

/* rx_schedule_cpu's loop kinds for the one top-level nest FOR s (schedule.c). */
void rx_schedule_nest_kinds(rx_stmt *s, int *npar, int *nvec);

#endif
