/*
 * ir.h — the Relax IR: graph level (paper §3) and loop level (TensorIR) in one module.
 *
 * A module owns one arena; every node below is allocated from it and freed with the
 * module. Passes build new nodes rather than mutating nodes another function shares.
 * Every node carries an rx_loc (its JSON path when it came from relax-json, 0 when a
 * pass made it) so that errors found at any stage are located.
 *
 * Annotations (rx_sinfo, the paper's Table 1), one line per kind:
 *   OBJECT    anything
 *   PRIM      scalar of `dtype`, with an optional known `value`
 *   SHAPE     a shape value: `ndim` (-1 unknown) and `dims` (NULL when unknown)
 *   TENSOR    `dtype` (UNKNOWN allowed), `ndim` (-1 unknown), `dims` (NULL when unknown)
 *             (for ndim 0 the constructors give a non-NULL empty `dims`: known, no dims)
 *   TUPLE     `fields[nfields]`
 *   CALLABLE  `params[nparams]` -> `ret`; `svars` are its own symbolic variables
 *
 * Graph-level expressions (rx_node), one line per kind:
 *   VAR       a local variable: `name`, `id`; its annotation is `sinfo`
 *   GLOBAL    `@name`, resolved to `fn`
 *   CONST     `konst` (a tensor of bytes; 0-d for scalars)
 *   PRIMVAL   `prim` (scalar expression)
 *   SHAPE     `dims[ndim]` (a first-class shape value)
 *   TUPLE     `args[nargs]`
 *   GET_ITEM  `args[0]` is the tuple, `index`
 *   CALL      `call_kind` says which: OP (`op`, `attrs`), TIR (`callee` a GLOBAL of a
 *             loop function, `out`, `tir_vars`), LIB (`lib` name, `out`), FN (`callee` a
 *             GLOBAL of a graph function or a VAR of Callable annotation); `args[nargs]`
 *   IF        `args[0]` the condition, `then_body`, `else_body`
 * After deduction every node's `sinfo` is set (for a VAR, that is its annotation).
 *
 * Loop-level statements (rx_stmt), one line per kind:
 *   FOR       `var` from `min` for `extent`, `loop_kind`, optional `thread` axis, `body`
 *   BLOCK     `name`, `iters[niters]` (var, spatial|reduce, dom, bind), `init`, `body`
 *   STORE     `buf[idx...] = value`
 *   ALLOC     `buf` (visible to the statements after it in the same list)
 *   IF        `cond`, `then`, `else`
 *   LET       `var = value` in `body`
 * The reader turns `grid` into nested FORs and fills implicit block iterators, so
 * every BLOCK has its iterators.
 */
#ifndef RELAX_IR_H
#define RELAX_IR_H

#include "relax/arith.h"

typedef struct rx_module rx_module;
typedef struct rx_func rx_func;
typedef struct rx_node rx_node;
typedef struct rx_op rx_op;
typedef struct rx_attr rx_attr;

/* ---------------------------------------------------------------- annotations */
typedef enum rx_sikind {
    RX_SI_OBJECT, RX_SI_PRIM, RX_SI_SHAPE, RX_SI_TENSOR, RX_SI_TUPLE, RX_SI_CALLABLE
} rx_sikind;

typedef struct rx_sinfo rx_sinfo;
struct rx_sinfo {
    uint8_t kind;      /* rx_sikind */
    uint8_t dtype;     /* PRIM, TENSOR: rx_dtype (UNKNOWN allowed) */
    int32_t ndim;      /* SHAPE, TENSOR: -1 when unknown */
    rx_expr **dims;    /* SHAPE, TENSOR: ndim expressions, NULL when unknown */
    rx_expr *value;    /* PRIM: known value or NULL */
    rx_sinfo **fields; /* TUPLE: fields; CALLABLE: params */
    int32_t nfields;   /* TUPLE: field count; CALLABLE: param count */
    rx_sinfo *ret;     /* CALLABLE: result */
    const rx_svar **svars; /* CALLABLE: symbolic variables its annotations define */
    int32_t nsvars;
};

rx_sinfo *rx_si_object(rx_arena *a);
rx_sinfo *rx_si_prim(rx_arena *a, rx_dtype dt, rx_expr *value);
rx_sinfo *rx_si_shape(rx_arena *a, int ndim, rx_expr **dims);      /* dims copied; may be NULL */
rx_sinfo *rx_si_tensor(rx_arena *a, rx_dtype dt, int ndim, rx_expr **dims); /* dims copied */
rx_sinfo *rx_si_tuple(rx_arena *a, rx_sinfo **fields, int n);      /* fields copied */
rx_sinfo *rx_si_callable(rx_arena *a, rx_sinfo **params, int n, rx_sinfo *ret);

/* Paper notation: R.Tensor((n, 4), "f32"), R.Tensor(ndim=2, dtype="f32"),
 * R.Shape([n, 4]), R.Tuple(A, B), R.Callable((A,), R), R.Prim("i64"), R.Object. */
void rx_sinfo_print(const rx_sinfo *s, rx_sb *out);
char *rx_sinfo_str(rx_arena *a, const rx_sinfo *s);

/* ---------------------------------------------------------------- attributes */
/* Attribute values: op attributes (typed by the op's schema), function and module
 * attributes (free-form JSON except where this project gives a key meaning). */
typedef enum rx_akind {
    RX_A_NULL, RX_A_BOOL, RX_A_INT, RX_A_FLOAT, RX_A_STR, RX_A_EXPR, RX_A_ARRAY, RX_A_MAP
} rx_akind;

struct rx_attr {
    uint8_t kind; /* rx_akind */
    rx_loc loc;
    union {
        bool b;
        int64_t i;
        double f;
        const char *s;
        rx_expr *e;                                      /* symbolic integer */
        struct { rx_attr **items; int n; } arr;
        struct { const char **keys; rx_attr **vals; int n; } map; /* keys in input order */
    } u;
};

rx_attr *rx_attr_map_get(const rx_attr *map, const char *key); /* NULL when absent */
/* Sets f's attribute key to v (arena of m): f->attrs becomes a new map with the other
 * entries in their order and key last (replacing an entry of that key). */
void rx_func_set_attr(rx_module *m, rx_func *f, const char *key, rx_attr *v);
/* The indices of map's entries ordered by key (strcmp), for output that must not
 * depend on input order. Returns a malloc'd array of max(n, 1) ints that the caller
 * frees. O(n^2) (insertion sort: maps are small). */
int *rx_attr_sorted_keys(const rx_attr *map);

/* ---------------------------------------------------------------- constants */
typedef struct rx_const {
    const char *name; /* module constant name, NULL for inline constants */
    rx_dtype dtype;
    int32_t ndim;
    int64_t *shape;   /* ndim extents */
    uint8_t *data;    /* little-endian elements, nbytes long */
    size_t nbytes;    /* product(shape) * element size */
    rx_loc loc;
} rx_const;

/* ---------------------------------------------------------------- graph level */
typedef enum rx_nkind {
    RX_N_VAR, RX_N_GLOBAL, RX_N_CONST, RX_N_PRIMVAL, RX_N_SHAPE, RX_N_TUPLE, RX_N_GET_ITEM,
    RX_N_CALL, RX_N_IF
} rx_nkind;

typedef enum rx_callkind { RX_CALL_OP, RX_CALL_TIR, RX_CALL_LIB, RX_CALL_FN } rx_callkind;

typedef struct rx_block rx_block;

typedef struct rx_seq { /* a body: blocks then a result (TVM's SeqExpr) */
    rx_block **blocks;
    int32_t nblocks;
    rx_node *result;
    rx_loc loc;
} rx_seq;

struct rx_node {
    uint8_t kind;       /* rx_nkind */
    uint8_t call_kind;  /* rx_callkind, CALL only */
    rx_loc loc;
    rx_sinfo *sinfo;    /* deduced annotation (VAR: the variable's annotation) */
    int32_t nargs;
    rx_node **args;     /* CALL args; TUPLE fields; GET_ITEM/IF: args[0] */
    union {
        struct { const char *name; int32_t id; bool dataflow; } var;   /* VAR */
        struct { const char *name; rx_func *fn; } global;             /* GLOBAL */
        rx_const *konst;                                              /* CONST */
        rx_expr *prim;                                                /* PRIMVAL */
        struct { rx_expr **dims; int32_t ndim; } shape;               /* SHAPE */
        int32_t index;                                                /* GET_ITEM */
        struct {
            const rx_op *op;      /* OP */
            rx_attr **attrs;      /* OP: one per entry of op->attrs, defaults filled */
            rx_node *callee;      /* TIR, FN: GLOBAL or VAR */
            const char *lib;      /* LIB: registered library function name */
            rx_sinfo *out;        /* TIR, LIB: output annotation */
            rx_expr **tir_vars;   /* TIR: extra symbolic arguments (NULL if none) */
            int32_t ntir_vars;
        } call;
        struct { rx_seq *then_body, *else_body; } if_;               /* IF */
    } u;
};

struct rx_block {
    bool dataflow;
    int32_t nbindings;
    struct rx_binding *bindings;
    rx_loc loc;
};

typedef struct rx_binding {
    rx_node *var;       /* the VAR bound here */
    rx_node *value;     /* the bound expression (match_cast: the value cast) */
    rx_sinfo *given;    /* the annotation written in the module, NULL if none */
    bool match_cast;    /* var = match_cast(value, given) */
    rx_loc loc;
} rx_binding;

/* ---------------------------------------------------------------- loop level */
typedef enum rx_scope { RX_SCOPE_GLOBAL, RX_SCOPE_LOCAL, RX_SCOPE_SHARED } rx_scope;

typedef struct rx_buffer {
    const char *name;
    rx_dtype dtype;
    int32_t ndim;
    rx_expr **shape; /* ndim extents */
    uint8_t scope;   /* rx_scope */
    int32_t id;      /* unique in the module */
    rx_loc loc;
} rx_buffer;

typedef enum rx_skind {
    RX_S_FOR, RX_S_BLOCK, RX_S_STORE, RX_S_ALLOC, RX_S_IF, RX_S_LET
} rx_skind;

typedef enum rx_loopkind {
    RX_LOOP_SERIAL, RX_LOOP_PARALLEL, RX_LOOP_VECTORIZED, RX_LOOP_UNROLLED
} rx_loopkind;

typedef enum rx_iterkind { RX_ITER_SPATIAL, RX_ITER_REDUCE } rx_iterkind;

/* The loop-level enums as relax-json spells them: "serial" "parallel" "vectorized"
 * "unrolled", "spatial" "reduce", "global" "local" "shared". A value out of range
 * names as "?". Each parse is the inverse of its name: true and *out set for one of
 * those strings, false (*out untouched) for any other string or NULL. */
const char *rx_loopkind_name(rx_loopkind k);
bool rx_loopkind_parse(const char *s, rx_loopkind *out);
const char *rx_iterkind_name(rx_iterkind k);
bool rx_iterkind_parse(const char *s, rx_iterkind *out);
const char *rx_scope_name(rx_scope s);
bool rx_scope_parse(const char *s, rx_scope *out);

typedef struct rx_stmt rx_stmt;
typedef struct rx_stmts { rx_stmt **items; int32_t n; } rx_stmts;

typedef struct rx_iter {
    const rx_svar *var; /* the block iterator */
    uint8_t kind;       /* rx_iterkind */
    rx_expr *dom;       /* extent of its domain [0, dom) */
    rx_expr *bind;      /* value in terms of enclosing loop variables */
} rx_iter;

struct rx_stmt {
    uint8_t kind; /* rx_skind */
    rx_loc loc;
    union {
        struct {
            const rx_svar *var; rx_expr *min, *extent;
            uint8_t loop_kind;   /* rx_loopkind */
            const char *thread;  /* "blockIdx.x" etc., NULL if unbound */
            rx_stmts body;
        } for_;
        struct { const char *name; rx_iter *iters; int32_t niters; rx_stmts init, body; } block;
        struct { rx_buffer *buf; rx_expr **idx; int32_t nidx; rx_expr *value; } store;
        struct { rx_buffer *buf; } alloc;
        struct { rx_expr *cond; rx_stmts then_s, else_s; } if_;
        struct { const rx_svar *var; rx_expr *value; rx_stmts body; } let;
    } u;
};

typedef struct rx_tparam { /* one of the two is set */
    rx_buffer *buf;
    const rx_svar *var;   /* scalar parameter (receives a tir_var) */
} rx_tparam;

/* Statement constructors (arena a; loc 0; kind-specific fields as given, the rest
 * zero). Lists: rx_stmts_of copies items; rx_stmts_one is a list of one. A BLOCK's
 * iters array is used as given (arena memory). */
rx_stmt *rx_s_for(rx_arena *a, const rx_svar *var, rx_expr *min, rx_expr *extent,
                  rx_loopkind kind, rx_stmts body);
rx_stmt *rx_s_block(rx_arena *a, const char *name, rx_iter *iters, int niters, rx_stmts init,
                    rx_stmts body);
rx_stmt *rx_s_store(rx_arena *a, rx_buffer *buf, rx_expr **idx, int nidx, rx_expr *value);
rx_stmt *rx_s_alloc(rx_arena *a, rx_buffer *buf);
rx_stmt *rx_s_if(rx_arena *a, rx_expr *cond, rx_stmts then_s, rx_stmts else_s);
rx_stmt *rx_s_let(rx_arena *a, const rx_svar *var, rx_expr *value, rx_stmts body);
rx_stmts rx_stmts_of(rx_arena *a, rx_stmt *const *items, int n);
rx_stmts rx_stmts_one(rx_arena *a, rx_stmt *s);

/* True when v occurs in an index of a STORE anywhere in ss, nested statements
 * included: relax-json's rule for the kind of an implicit block iterator (spatial
 * when stored with, else reduce). O(size of ss). */
bool rx_stmts_store_uses(const rx_stmts *ss, const rx_svar *v);

/* True when v occurs anywhere in ss: expressions, loop bounds, iterator binds and
 * domains, allocated shapes, nested statements (an unknown statement kind counts as a
 * use). O(size of ss). */
bool rx_stmts_use_var(const rx_stmts *ss, const rx_svar *v);

/* True when ss holds a FOR, looking through BLOCK (init and body), IF and LET bodies:
 * whether a loop holding ss is not innermost. O(size of ss). */
bool rx_stmts_hold_for(const rx_stmts *ss);

/* Where a reduction's init may run once instead of under a guard: for FOR s heading a
 * chain of single-statement FORs that ends in a BLOCK with an init, whose reduce
 * iterators are bound exactly to the chain's loop variables (each starting at a fixed
 * point, at 0 for an explicit iterator) and whose init uses none of them, that BLOCK;
 * else NULL. The C code generator emits the init before s, and the compiler's loop
 * evaluator (tir_eval.c) runs it there, so both compute the same. O(chain length x
 * iterators x init size). */
const rx_stmt *rx_init_hoist_target(const rx_stmt *s);

/* ---------------------------------------------------------------- functions */
typedef enum rx_fkind { RX_F_RELAX, RX_F_TIR } rx_fkind;

struct rx_func {
    uint8_t kind;        /* rx_fkind */
    const char *name;    /* global name without '@' */
    rx_loc loc;
    rx_attr *attrs;      /* RX_A_MAP or NULL */
    const rx_svar **svars; /* symbolic variables the signature defines, in order */
    int32_t nsvars;
    /* RX_F_RELAX */
    rx_node **params;    /* VARs with their annotations */
    int32_t nparams;
    rx_sinfo *ret_given; /* written `ret`, NULL if none */
    rx_sinfo *ret;       /* deduced result annotation (after deduction) */
    rx_seq *body;
    /* RX_F_TIR */
    rx_tparam *tparams;
    int32_t ntparams;
    rx_stmts tbody;
    int32_t nouts;       /* unknown until a call: buffers after the inputs; -1 */
};

/* The annotation of a function as a value: Callable(params) -> ret. For a loop
 * function, its params are the buffers' tensor annotations. */
rx_sinfo *rx_func_sinfo(rx_arena *a, const rx_func *f);
/* `upper_bounds` of a graph function: the bound for v or -1 when none. */
int64_t rx_func_upper_bound(const rx_func *f, const rx_svar *v);

/* ---------------------------------------------------------------- module */
struct rx_module {
    rx_arena *arena;      /* owns every node */
    rx_loctab locs;       /* JSON paths of nodes */
    rx_attr *attrs;       /* module attrs (RX_A_MAP) or NULL */
    rx_func **funcs;      /* in input order */
    int32_t nfuncs;
    rx_const **consts;    /* named constants, in input order */
    int32_t nconsts;
    int32_t next_id;      /* ids for variables and buffers */
    bool unchanged;       /* set by a pass that rewrote nothing: the driver then skips
                             the deduction it runs after passes that rewrite bindings */
};

rx_module *rx_module_new(void);
void rx_module_free(rx_module *m);
rx_func *rx_module_find(const rx_module *m, const char *name);
rx_const *rx_module_find_const(const rx_module *m, const char *name);
int32_t rx_module_new_id(rx_module *m);

/* Node constructors (arena of m; loc 0). Arrays are copied. */
rx_node *rx_n_var(rx_module *m, const char *name, rx_sinfo *si, bool dataflow);
rx_node *rx_n_global(rx_module *m, const char *name, rx_func *fn);
rx_node *rx_n_const(rx_module *m, rx_const *c);
rx_node *rx_n_primval(rx_module *m, rx_expr *v);
rx_node *rx_n_shape(rx_module *m, rx_expr **dims, int ndim);
rx_node *rx_n_tuple(rx_module *m, rx_node **fields, int n);
rx_node *rx_n_get_item(rx_module *m, rx_node *t, int index);
rx_node *rx_n_call_op(rx_module *m, const rx_op *op, rx_node **args, int nargs, rx_attr **attrs);
rx_node *rx_n_call_tir(rx_module *m, rx_node *callee, rx_node **args, int nargs,
                       rx_sinfo *out, rx_expr **tir_vars, int ntir_vars);
rx_node *rx_n_call_lib(rx_module *m, const char *lib, rx_node **args, int nargs, rx_sinfo *out);
rx_node *rx_n_call_fn(rx_module *m, rx_node *callee, rx_node **args, int nargs);
rx_node *rx_n_if(rx_module *m, rx_node *cond, rx_seq *then_body, rx_seq *else_body);

/* ---------------------------------------------------------------- verification */

/* Checks that m is well formed (compiler/ir/verify.c lists the rules: scopes, single
 * assignment, dataflow variables kept inside their blocks, annotations present, calls
 * resolving to functions of m, loop-level buffers and variables in scope). Returns false
 * after one diagnostic per malformed function, "malformed module after AFTER: @f: ...";
 * after names the stage that produced m (NULL or "": none). Linear in m's size. */
bool rx_verify_module(const rx_module *m, const char *after, rx_diags *d);

#endif
