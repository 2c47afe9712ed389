/*
 * arith.h — scalar expressions and symbolic integer arithmetic.
 *
 * One expression system serves both levels, as in the paper (§3.1: "we reuse the
 * loop-level tensor program expression system"): shape dimensions of annotations,
 * prim values, tir_vars, and every scalar expression of a loop-level function are
 * rx_expr trees. Nodes live in an arena and are immutable once built; passes make
 * new nodes (sharing subtrees is fine).
 *
 * Variables (rx_svar) are identified by pointer. Their `id` is unique within a module
 * and gives the deterministic order used by canonical forms (never the name, so that
 * renaming a variable changes nothing).
 *
 * The arithmetic (rx_arith_*) works on the integer subset: +, -, *, //, %, min, max
 * over i64 variables and literals. Its canonical form is a sum of monomials with
 * integer coefficients; a monomial is a product of atoms (variables, or floordiv /
 * floormod / min / max nodes whose operands are themselves canonical). Equality is
 * proved by canonicalizing a - b to 0; constant bounds come from interval analysis
 * over the bounds of variables (shape variables are >= 0; upper bounds come from
 * `upper_bounds`). A proof that fails means "not known", never "false".
 *
 * Node kinds, one line each (a, b: operands; dtype: result type):
 *   RX_E_INT      ival                    integer literal (i64 unless typed otherwise)
 *   RX_E_FLOAT    fval                    float literal (f32 unless typed otherwise)
 *   RX_E_VAR      var                     variable reference
 *   RX_E_ADD..MAX a, b                    + - * / // % min max   (DIV: true division)
 *   RX_E_EQ..GE   a, b                    == != < <= > >=        (dtype bool)
 *   RX_E_AND, OR  a, b                    && ||                  (bool)
 *   RX_E_NOT      a                       !                      (bool)
 *   RX_E_NEG      a                       unary minus
 *   RX_E_SHL..XOR a, b                    << >> & | ^
 *   RX_E_BITNOT   a                       ~
 *   RX_E_SELECT   a=cond, b=then, c=else  select(c, t, f)
 *   RX_E_CAST     a                       dtype(a)
 *   RX_E_LOAD     buf, idx[nidx]          buf[i, j]   (loop level only)
 *   RX_E_CALL     fn, args[nargs]         math intrinsic (exp, log, ...)
 */
#ifndef RELAX_ARITH_H
#define RELAX_ARITH_H

#include "relax/support.h"

typedef enum rx_ekind {
    RX_E_INT, RX_E_FLOAT, RX_E_VAR,
    RX_E_ADD, RX_E_SUB, RX_E_MUL, RX_E_DIV, RX_E_FLOORDIV, RX_E_FLOORMOD, RX_E_MIN, RX_E_MAX,
    RX_E_EQ, RX_E_NE, RX_E_LT, RX_E_LE, RX_E_GT, RX_E_GE,
    RX_E_AND, RX_E_OR, RX_E_NOT,
    RX_E_NEG,
    RX_E_SHL, RX_E_SHR, RX_E_BITAND, RX_E_BITOR, RX_E_BITXOR, RX_E_BITNOT,
    RX_E_SELECT, RX_E_CAST, RX_E_LOAD, RX_E_CALL,
    RX_E_KIND_COUNT
} rx_ekind;

/* Math intrinsics callable in loop-level expressions. */
typedef enum rx_intrin {
    RX_FN_EXP, RX_FN_LOG, RX_FN_SQRT, RX_FN_RSQRT, RX_FN_TANH, RX_FN_SIGMOID, RX_FN_ERF,
    RX_FN_POW, RX_FN_ABS, RX_FN_FLOOR, RX_FN_CEIL, RX_FN_ROUND, RX_FN_SIN, RX_FN_COS,
    RX_FN_COUNT
} rx_intrin;

const char *rx_intrin_name(rx_intrin f);          /* "exp" */
bool rx_intrin_parse(const char *s, rx_intrin *out);
int rx_intrin_arity(rx_intrin f);                 /* 2 for pow, else 1 */

/* Variable kinds: what introduced it (printing and checks use this). */
typedef enum rx_svkind {
    RX_SV_SHAPE,  /* symbolic shape variable of a graph function or buffer signature */
    RX_SV_PARAM,  /* scalar parameter of a loop function */
    RX_SV_LOOP,   /* loop variable or block iterator */
    RX_SV_LET     /* let-bound value */
} rx_svkind;

typedef struct rx_svar {
    const char *name; /* as written; not semantic */
    rx_dtype dtype;   /* i64 for shape, loop and iterator variables */
    uint8_t kind;     /* rx_svkind */
    bool checked_index; /* a LET of schedule_hoist.c: a gather's index read from data,
                           evaluated wherever its let is; codegen checks it once, at the
                           let, against the extent it indexes (c_expr.c) */
    int32_t id;       /* unique in the module; canonical order */
} rx_svar;

struct rx_buffer; /* ir.h */

typedef struct rx_expr rx_expr;
struct rx_expr {
    uint8_t kind;  /* rx_ekind */
    uint8_t dtype; /* rx_dtype of the value */
    union {
        int64_t ival;                                            /* INT */
        double fval;                                             /* FLOAT */
        const rx_svar *var;                                      /* VAR */
        struct { rx_expr *a, *b, *c; } op;                       /* unary/binary/select/cast */
        struct { struct rx_buffer *buf; rx_expr **idx; int nidx; } load; /* LOAD */
        struct { uint8_t fn; rx_expr **args; int nargs; } call;  /* CALL (rx_intrin) */
    } u;
};

/* ---- construction (arena-allocated, no simplification) ---- */
rx_svar *rx_svar_new(rx_arena *a, const char *name, rx_dtype dt, rx_svkind kind, int32_t id);
rx_expr *rx_e_int(rx_arena *a, int64_t v);                 /* i64 */
rx_expr *rx_e_typed_int(rx_arena *a, int64_t v, rx_dtype dt);
rx_expr *rx_e_float(rx_arena *a, double v, rx_dtype dt);
rx_expr *rx_e_var(rx_arena *a, const rx_svar *v);
rx_expr *rx_e_unary(rx_arena *a, rx_ekind k, rx_expr *x);  /* NOT NEG BITNOT; dtype from x */
rx_expr *rx_e_binary(rx_arena *a, rx_ekind k, rx_expr *x, rx_expr *y); /* dtype: bool for
                                                             comparisons/logic, else x's */
rx_expr *rx_e_select(rx_arena *a, rx_expr *c, rx_expr *t, rx_expr *f);
rx_expr *rx_e_cast(rx_arena *a, rx_dtype dt, rx_expr *x);
rx_expr *rx_e_load(rx_arena *a, struct rx_buffer *buf, rx_expr **idx, int nidx); /* idx copied */
rx_expr *rx_e_call(rx_arena *a, rx_intrin fn, rx_expr **args, int nargs, rx_dtype dt);

bool rx_expr_is_int(const rx_expr *e, int64_t v);          /* literal equal to v */
/* The infix symbol of a binary kind in the relax-json grammar ("+", "//", "<=", "&&");
 * NULL for kinds that are not infix (min, max, unary, select, ...). The floor operators
 * "//" and "%" are the only ones whose C meaning differs. */
const char *rx_ekind_symbol(rx_ekind k);
/* A copy of e with its operands replaced by kids (rx_expr_nchildren(e) of them). */
rx_expr *rx_expr_with_children(rx_arena *a, const rx_expr *e, rx_expr **kids);
bool rx_expr_is_const(const rx_expr *e, int64_t *v);       /* integer literal */
bool rx_expr_uses_var(const rx_expr *e, const rx_svar *v);
bool rx_expr_loads_buf(const rx_expr *e, const struct rx_buffer *b); /* a LOAD of b (NULL:
                                                                      any) in e */
/* A call in e of exp, sigmoid, erf, tanh, log, sin or cos computing in f32: the functions the C
 * kernels compute with relax/codegen_math.h's vectorizable code (tens of vector
 * instructions per element), which the schedules and the ISA versioning look for. */
bool rx_expr_calls_vmath(const rx_expr *e);

/* Generic walk over the expression operands of e, in the order of the node table:
 * rx_expr_nchildren is 0 for INT, FLOAT and VAR, 1 for NOT NEG BITNOT CAST, 3 for
 * SELECT (cond, then, else), nidx for LOAD (the indices; the buffer is not an
 * operand), nargs for CALL, 2 for every binary kind. rx_expr_child returns operand
 * i, 0 <= i < rx_expr_nchildren(e), borrowed from e (never NULL in a well-formed
 * tree). Both are O(1). */
int rx_expr_nchildren(const rx_expr *e);
rx_expr *rx_expr_child(const rx_expr *e, int i);

/* Collects the distinct variables of e in first-occurrence order into *out. */
typedef RX_VEC(const rx_svar *) rx_svar_vec;
void rx_expr_vars(const rx_expr *e, rx_svar_vec *out);

/* Substitution: a map from variables to expressions. Builds new nodes only where
 * something changed; unmapped variables stay. */
typedef struct rx_vmap {
    RX_VEC(const rx_svar *) keys;
    RX_VEC(rx_expr *) vals;
} rx_vmap;
void rx_vmap_set(rx_vmap *m, const rx_svar *k, rx_expr *v);
rx_expr *rx_vmap_get(const rx_vmap *m, const rx_svar *k);  /* NULL when absent */
void rx_vmap_free(rx_vmap *m);
rx_expr *rx_expr_subst(rx_arena *a, rx_expr *e, const rx_vmap *m);

/* Text form in the grammar of relax-json (it parses back to an equal expression):
 * "(n + 1) * 4", "n // 2", "min(n, 128)", "A[i, j]", "f32(x)", "select(c, a, b)".
 * Minimal parentheses by precedence. Literal types are printed only where the
 * grammar's typing rule would not reproduce them. */
void rx_expr_print(const rx_expr *e, rx_sb *out);
char *rx_expr_str(rx_arena *a, const rx_expr *e);

/* Structural comparison with variables compared by pointer. */
bool rx_expr_same(const rx_expr *x, const rx_expr *y);

/* ---- symbolic arithmetic ---- */
typedef struct rx_arith rx_arith;

/* A context: new nodes go into `a` (which must outlive every result); bounds of
 * variables are registered with rx_arith_bind_range. */
rx_arith *rx_arith_new(rx_arena *a);
void rx_arith_free(rx_arith *ar);

/* Declares lo <= v <= hi (INT64_MIN / INT64_MAX for no bound). Shape variables are
 * assumed >= 0 without a declaration. A later call narrows, never widens. */
void rx_arith_bind_range(rx_arith *ar, const rx_svar *v, int64_t lo, int64_t hi);

/* The canonical simplified form: equal expressions (under the algebra of the header
 * essay) give rx_expr_same results. Non-integer parts are left as they are, with
 * their integer subexpressions simplified. */
rx_expr *rx_arith_simplify(rx_arith *ar, rx_expr *e);

/* The quotient q with q * d == n as polynomials: d one monomial (or a constant) dividing
 * every term of n: (b * 768, b * 48) gives 16. It equals n // d whenever d != 0 (which
 * n // d's simplification cannot assume); NULL when d does not divide n that way. */
rx_expr *rx_arith_exact_quotient(rx_arith *ar, rx_expr *n, rx_expr *d);

/* True when a == b is proved for every value of the variables (within bounds). */
bool rx_arith_prove_equal(rx_arith *ar, rx_expr *a, rx_expr *b);

/* True when the boolean condition is proved (comparisons, && , ||, !). */
bool rx_arith_prove(rx_arith *ar, rx_expr *cond);

/* Constant bounds of an integer expression: *lo <= e <= *hi, using INT64_MIN/MAX for
 * unbounded sides. Always succeeds (at worst unbounded). */
void rx_arith_const_bound(rx_arith *ar, rx_expr *e, int64_t *lo, int64_t *hi);

/* Evaluates an integer expression with the variables of m bound to literals;
 * false when a variable is unbound or an operation is undefined (division by 0,
 * overflow). */
bool rx_expr_eval_int(const rx_expr *e, const rx_vmap *m, int64_t *out);

#endif
