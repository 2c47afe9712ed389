/*
 * te.h — the tensor-expression builder: loop-level functions from index formulas, in
 * the spirit of TVM's te.compute (paper §4.7: "generate tensor programs for all
 * high-level operator calls").
 *
 * A builder (rx_te) collects tensors, then emits one RX_F_TIR function:
 *
 *   PLACEHOLDER  an input: name, dtype, shape (caller-level dims)
 *   COMPUTE      out[i...] = f(i...): the callback gets fresh index variables and
 *                returns the element as an rx_expr (loads from earlier tensors via
 *                rx_te_at, literals via rx_te_const, casts via rx_te_cast)
 *   REDUCE       out[i...] = op over r... of f(i..., r...), op in sum prod max min,
 *                with an init value (NULL: the op's identity; max of floats starts at
 *                the lowest finite value, as TVM's min_value, since the grammar has no
 *                infinity literal)
 *   ARGREDUCE    out[i...] = the flat row-major position over r... of the first
 *                maximum (minimum) of f(i..., r...), i64; a two-value reduction: one
 *                block with two stores, the running value in an ALLOC'd buffer
 *                (index first, then value, both from the old value)
 *
 * Shapes and formulas are written in the CALLER's symbolic variables (a graph
 * function's n). rx_te_build gives the loop function its own variables (fresh ids
 * from rx_module_new_id, same names) and maps the caller's onto them:
 *   - a caller variable that stands as a whole dim of some buffer parameter (inputs,
 *     then outputs, in order) is defined by that buffer (an RX_SV_SHAPE svar);
 *   - any other caller variable used anywhere (an input (n * 4,) where n never stands
 *     alone, a formula dividing by n) becomes a scalar parameter (RX_SV_PARAM, i64),
 *     and the call must pass the caller's variable in `tir_vars`, in the order of
 *     rx_te_func.tir_vars.
 * Parameters are the inputs' buffers, then the outputs' (destination-passing style),
 * then the scalar parameters; svars are the whole-dim variables in order of first
 * appearance, then the scalar parameters: exactly what the relax-json reader builds
 * for the same function written in JSON, so the printer, the writer and structural
 * equality treat generated and read functions alike (a written generated module reads
 * back structurally equal).
 *
 * Emitted body, per non-inlined compute in creation order: an ALLOC for an
 * intermediate (a compute that is not an output), then serial FORs over its dims
 * (index variables i0, i1, ... from 0), then FORs over its reduce axes (k0, k1, ...),
 * then one BLOCK named after the compute whose iterators are the implicit ones the
 * reader derives (the loop variables themselves; spatial for dims, reduce for reduce
 * axes), with `init` for reductions and one STORE (two for ARGREDUCE).
 *
 * Inlining: rx_te_inline(t) marks an injective compute to be substituted into its
 * consumers at build time instead of being materialized (its formula is re-evaluated
 * at each use). Reductions are always materialized. Nothing is inlined by default.
 *
 * Memory: every node lives in the module's arena; the builder itself holds heap
 * vectors freed by rx_te_free. One builder builds one function. Misuse (a load with
 * the wrong number of indices, an output that is a placeholder, a placeholder used
 * but not listed as an input) is a broken invariant: RX_ASSERT.
 */
#ifndef RELAX_TE_H
#define RELAX_TE_H

#include "relax/ir.h"

typedef struct rx_te rx_te;
typedef struct rx_te_tensor rx_te_tensor;

typedef enum rx_te_redop { RX_TE_SUM, RX_TE_PROD, RX_TE_MAX, RX_TE_MIN } rx_te_redop;
typedef enum rx_te_argop { RX_TE_ARGMAX, RX_TE_ARGMIN } rx_te_argop;

/* A new builder whose nodes go into m's arena. Free with rx_te_free. */
rx_te *rx_te_new(rx_module *m);
void rx_te_free(rx_te *te);
rx_arena *rx_te_arena(const rx_te *te);

/* An input tensor. shape (ndim caller-level dims) is copied. */
rx_te_tensor *rx_te_placeholder(rx_te *te, const char *name, rx_dtype dt, int ndim,
                                rx_expr *const *shape);

/* out[idx...] = the callback's expression (of dtype dt). idx are ndim index variables
 * (i64); ud is passed through. The callback runs once, during this call. */
typedef rx_expr *(*rx_te_fcompute)(rx_te *te, rx_expr *const *idx, void *ud);
rx_te_tensor *rx_te_compute(rx_te *te, const char *name, rx_dtype dt, int ndim,
                            rx_expr *const *shape, rx_te_fcompute f, void *ud);

/* out[idx...] = op over ridx (nred axes with extents rdom) of the callback's value,
 * starting from init (NULL: the op's identity for dt). The value must have dtype dt. */
typedef rx_expr *(*rx_te_freduce)(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx,
                                  void *ud);
rx_te_tensor *rx_te_reduce(rx_te *te, const char *name, rx_dtype dt, int ndim,
                           rx_expr *const *shape, rx_te_redop op, int nred,
                           rx_expr *const *rdom, rx_expr *init, rx_te_freduce f, void *ud);

/* out[idx...] (i64) = row-major position, over the nred reduce axes, of the first
 * extreme of the callback's value (ties keep the earliest, as NumPy). */
rx_te_tensor *rx_te_argreduce(rx_te *te, const char *name, int ndim, rx_expr *const *shape,
                              rx_te_argop op, int nred, rx_expr *const *rdom,
                              rx_te_freduce f, void *ud);

/* Marks a compute (not a reduction) to be inlined into its consumers. */
void rx_te_inline(rx_te_tensor *t);

/* ---- expression helpers for callbacks ---- */
/* t[idx...]: a load (t's ndim indices, i64). */
rx_expr *rx_te_at(rx_te *te, const rx_te_tensor *t, rx_expr *const *idx);
/* A literal of dtype dt holding v (a float literal for float dtypes, an integer one,
 * saturated, for integers, bool(v != 0) for bool). */
rx_expr *rx_te_const(rx_te *te, double v, rx_dtype dt);
/* x converted to dt: x itself when already dt, a literal when x is a literal, a
 * comparison x != 0 for bool, else a cast node. */
rx_expr *rx_te_cast(rx_te *te, rx_dtype dt, rx_expr *x);
/* The lowest / highest finite value of dt as a literal expression. */
rx_expr *rx_te_min_value(rx_te *te, rx_dtype dt);
rx_expr *rx_te_max_value(rx_te *te, rx_dtype dt);
/* Integer index arithmetic simplified with the loop variables' ranges known. */
rx_expr *rx_te_simplify(rx_te *te, rx_expr *e);
/* True when a == b is proved for every value of the variables. */
bool rx_te_prove_equal(rx_te *te, rx_expr *a, rx_expr *b);

int rx_te_ndim(const rx_te_tensor *t);
rx_expr *rx_te_dim(const rx_te_tensor *t, int i);   /* caller-level dim */
rx_dtype rx_te_dtype(const rx_te_tensor *t);

/* ---- building ---- */
typedef struct rx_te_func {
    rx_func *fn;          /* the loop function (arena of m; not yet in the module) */
    rx_expr **tir_vars;   /* caller-level expressions for its scalar params, in order */
    int ntir_vars;
} rx_te_func;

/* Emits the loop function `name` computing outs[0..nout) from ins[0..nin) (see the
 * header essay). The function is not added to the module (see rx_te_add_func), so a
 * caller can compare it with existing ones first. Call once per builder. */
void rx_te_build(rx_te *te, const char *name, rx_te_tensor *const *ins, int nin,
                 rx_te_tensor *const *outs, int nout, rx_te_func *out);

/* Appends f to m's function list (the list is reallocated in m's arena). The caller
 * keeps names unique. */
void rx_te_add_func(rx_module *m, rx_func *f);

#endif
