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

typedef struct rxi_ar_range {
    const rx_svar *var; /* the variable */
    int64_t lo, hi;     /* declared bounds, already intersected with the defaults */
} rxi_ar_range;

struct rx_arith {
    rx_arena *a;              /* where result nodes go; owned by the caller */
    RX_VEC(rxi_ar_range) ranges; /* one entry per bound variable, in binding order */
};

typedef struct rxi_ar_iv {
    int64_t lo, hi; /* lo <= hi; INT64_MIN / INT64_MAX mean unbounded */
} rxi_ar_iv;

#define RXA_NEG_INF INT64_MIN
#define RXA_POS_INF INT64_MAX

/* Interval arithmetic, saturating (bound.c). */
rxi_ar_iv rxi_ar_iv_full(void);
rxi_ar_iv rxi_ar_iv_point(int64_t v);
rxi_ar_iv rxi_ar_iv_add(rxi_ar_iv x, rxi_ar_iv y);
rxi_ar_iv rxi_ar_iv_neg(rxi_ar_iv x);
rxi_ar_iv rxi_ar_iv_mul(rxi_ar_iv x, rxi_ar_iv y);
rxi_ar_iv rxi_ar_iv_floordiv(rxi_ar_iv x, rxi_ar_iv y);
rxi_ar_iv rxi_ar_iv_floormod(rxi_ar_iv x, rxi_ar_iv y);
rxi_ar_iv rxi_ar_iv_intersect(rxi_ar_iv x, rxi_ar_iv y);

/* The range of a variable: its bound_range declarations intersected with the
 * defaults of its kind and dtype (shape and loop variables and unsigned ones >= 0). */
rxi_ar_iv rxi_ar_var_range(const rx_arith *ar, const rx_svar *v);

/* Interval analysis of e as written (no simplification); always sound. */
rxi_ar_iv rxi_ar_bound_expr(const rx_arith *ar, const rx_expr *e);

/* Floor division and modulo of constants; false on division by zero or overflow. */
bool rxi_ar_floordiv(int64_t a, int64_t b, int64_t *out);
bool rxi_ar_floormod(int64_t a, int64_t b, int64_t *out);

/* Deterministic structural order of expressions (variables by id): <0, 0, >0. */
int rxi_ar_expr_cmp(const rx_expr *x, const rx_expr *y);

/* ---- canonical forms (canonical.c) ----
 * A sum is c + Σ coef_i * mono_i: monomials sorted (degree descending, then atoms in
 * rxi_ar_expr_cmp order), no zero coefficients, no two equal monomials. Sums live in a
 * scratch arena of one top-level call; their atoms live in the result arena. */
typedef struct rxi_ar_mono {
    rx_expr **atoms; /* sorted by rxi_ar_expr_cmp; repeated for powers */
    int n;           /* degree (>= 1) */
    int64_t coef;    /* non-zero */
} rxi_ar_mono;

typedef struct rxi_ar_sum {
    rxi_ar_mono *t; /* terms */
    int n;       /* number of terms */
    int64_t c;   /* constant */
} rxi_ar_sum;

typedef struct rxi_ar_cx {
    rx_arith *ar;  /* context: result arena and variable ranges */
    rx_arena *tmp; /* scratch for sums, freed when the top-level call returns */
} rxi_ar_cx;

/* Canonical form of an integer expression; never NULL (parts whose folding would
 * overflow stay opaque atoms). */
rxi_ar_sum *rxi_ar_canon(rxi_ar_cx *cx, rx_expr *e);
/* The kinds canonical forms represent (the rest are opaque atoms). */
bool rxi_ar_is_arith_kind(int k);
/* x + sign * y (sign is 1 or -1); NULL on int64 overflow. */
rxi_ar_sum *rxi_ar_sum_add(rxi_ar_cx *cx, const rxi_ar_sum *x, const rxi_ar_sum *y, int sign);
rxi_ar_iv rxi_ar_sum_bound(rxi_ar_cx *cx, const rxi_ar_sum *s);
/* The q with q * d == n as polynomials (canonical.c's essay), or NULL. */
rxi_ar_sum *rxi_ar_exact_quotient(rxi_ar_cx *cx, const rxi_ar_sum *n, const rxi_ar_sum *d);
/* The expression of a sum, in the printing order described in canonical.c. */
rx_expr *rxi_ar_rebuild(rxi_ar_cx *cx, const rxi_ar_sum *s, int dtype);

/* ---- generic simplification (simplify.c) ---- */
/* Simplifies any expression: integer arithmetic through canonical forms, other nodes
 * by simplifying their operands and folding what is decided. */
rx_expr *rxi_ar_simp(rxi_ar_cx *cx, rx_expr *e);

#endif
