/*
 * arith_int.h — private interface between the files of compiler/arith.
 *
 * The context (struct rx_arith) lives in canonical.c; bound.c reads its variable
 * ranges. Intervals are closed [lo, hi] over int64 where INT64_MIN and INT64_MAX
 * stand for -inf and +inf: every interval operation saturates to them instead of
 * overflowing, so a bound is always sound (at worst unbounded), never wrapped.
 */
#ifndef RELAX_ARITH_INT_H
#define RELAX_ARITH_INT_H

#include "relax/arith.h"

typedef struct rxa_range {
    const rx_svar *var; /* the variable */
    int64_t lo, hi;     /* declared bounds, already intersected with the defaults */
} rxa_range;

struct rx_arith {
    rx_arena *a;              /* where result nodes go; owned by the caller */
    RX_VEC(rxa_range) ranges; /* one entry per bound variable, in binding order */
};

typedef struct rxa_iv {
    int64_t lo, hi; /* lo <= hi; INT64_MIN / INT64_MAX mean unbounded */
} rxa_iv;

#define RXA_NEG_INF INT64_MIN
#define RXA_POS_INF INT64_MAX

/* Interval arithmetic, saturating (bound.c). */
rxa_iv rxa_iv_full(void);
rxa_iv rxa_iv_point(int64_t v);
rxa_iv rxa_iv_add(rxa_iv x, rxa_iv y);
rxa_iv rxa_iv_neg(rxa_iv x);
rxa_iv rxa_iv_mul(rxa_iv x, rxa_iv y);
rxa_iv rxa_iv_floordiv(rxa_iv x, rxa_iv y);
rxa_iv rxa_iv_floormod(rxa_iv x, rxa_iv y);
rxa_iv rxa_iv_intersect(rxa_iv x, rxa_iv y);

/* The range of a variable: its bound_range declarations intersected with the
 * defaults of its kind and dtype (shape and loop variables and unsigned ones >= 0). */
rxa_iv rxa_var_range(const rx_arith *ar, const rx_svar *v);

/* Interval analysis of e as written (no simplification); always sound. */
rxa_iv rxa_bound_expr(const rx_arith *ar, const rx_expr *e);

/* Floor division and modulo of constants; false on division by zero or overflow. */
bool rxa_floordiv(int64_t a, int64_t b, int64_t *out);
bool rxa_floormod(int64_t a, int64_t b, int64_t *out);

/* Deterministic structural order of expressions (variables by id): <0, 0, >0. */
int rxa_expr_cmp(const rx_expr *x, const rx_expr *y);

/* ---- canonical forms (canonical.c) ----
 * A sum is c + Σ coef_i * mono_i: monomials sorted (degree descending, then atoms in
 * rxa_expr_cmp order), no zero coefficients, no two equal monomials. Sums live in a
 * scratch arena of one top-level call; their atoms live in the result arena. */
typedef struct rxa_mono {
    rx_expr **atoms; /* sorted by rxa_expr_cmp; repeated for powers */
    int n;           /* degree (>= 1) */
    int64_t coef;    /* non-zero */
} rxa_mono;

typedef struct rxa_sum {
    rxa_mono *t; /* terms */
    int n;       /* number of terms */
    int64_t c;   /* constant */
} rxa_sum;

typedef struct rxa_cx {
    rx_arith *ar;  /* context: result arena and variable ranges */
    rx_arena *tmp; /* scratch for sums, freed when the top-level call returns */
} rxa_cx;

/* Canonical form of an integer expression; never NULL (parts whose folding would
 * overflow stay opaque atoms). */
rxa_sum *rxa_canon(rxa_cx *cx, rx_expr *e);
/* The kinds canonical forms represent (the rest are opaque atoms). */
bool rxa_is_arith_kind(int k);
/* x + sign * y (sign is 1 or -1); NULL on int64 overflow. */
rxa_sum *rxa_sum_add(rxa_cx *cx, const rxa_sum *x, const rxa_sum *y, int sign);
rxa_iv rxa_sum_bound(rxa_cx *cx, const rxa_sum *s);
/* The expression of a sum, in the printing order described in canonical.c. */
rx_expr *rxa_rebuild(rxa_cx *cx, const rxa_sum *s, int dtype);

/* ---- generic simplification (simplify.c) ---- */
/* Simplifies any expression: integer arithmetic through canonical forms, other nodes
 * by simplifying their operands and folding what is decided. */
rx_expr *rxa_simp(rxa_cx *cx, rx_expr *e);

#endif
