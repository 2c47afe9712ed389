/*
 * reader_int.h — internals shared by the relax-json reader's files (not public).
 *
 * The reader is split by level: reader.c reads the document, the module, constants
 * and attributes; read_sinfo.c reads annotations and symbolic dims; read_graph.c reads graph-level function bodies and
 * their expressions; read_tir.c reads loop-level functions; exprparse.c parses the
 * scalar expression grammar of strings. They share one rx_reader, which holds the
 * module being built, the diagnostics, the limits and the scopes of the function
 * being read:
 *   syms    symbolic, scalar-parameter, loop, iterator and let variables in scope
 *           (innermost last; lookup by name from the end);
 *   bufs    loop-level buffers in scope (parameters, then allocations);
 *   locals  graph-level variables bound so far in the function; entries bound inside
 *           an `if` branch are marked hidden when the branch ends, so that "bound once
 *           per function" and "not visible here" can both be reported;
 *   loops   enclosing loops of a loop-level function, for implicit block iterators;
 *   later   every binding name of the graph function being read, with its location:
 *           built by one walk of the function's JSON at its first unknown variable, so
 *           a use before the binding is reported as such (valid modules never build it).
 * Every scope is emptied at the start of each function: variables are per function.
 *
 * Errors are reported through rxi_rd_err at a location of the module's table; a
 * failed construct returns NULL (or false) and its parent keeps reading its
 * siblings, so one run reports every error. The module is discarded at the end if
 * any error was reported.
 */
#ifndef RELAX_JSON_READER_INT_H
#define RELAX_JSON_READER_INT_H

#include <jansson.h>

#include "relax/json.h"
#include "relax/op.h"

/* A scoped name index: a stack of (name, value) entries with a hash chain through
 * them, so lookups are O(1) however many names a (hostile) function defines, and
 * popping back to a mark (leaving a scope) is linear in what is dropped. The
 * innermost entry of a name wins. */
typedef struct rxi_rd_ent {
    const char *name; /* key (must outlive the entry) */
    void *p;          /* value */
    int32_t next;     /* older entry of the same bucket + 1, 0 at the end */
} rxi_rd_ent;

typedef struct rxi_rd_scope {
    RX_VEC(rxi_rd_ent) e; /* entries, innermost last */
    int32_t *heads;      /* per bucket: newest entry + 1, 0 when empty */
    int32_t nb;          /* bucket count, a power of two (0 before the first push) */
} rxi_rd_scope;

#define RX_RD_AT(s, i) ((s).e.items[i].p) /* value of entry i */

void rxi_rd_scope_push(rxi_rd_scope *s, const char *name, void *p);
/* The value of the innermost entry named s[0..n), or NULL. */
void *rxi_rd_scope_get(const rxi_rd_scope *s, const char *name, size_t n);
/* Drops the entries from index mark on. */
void rxi_rd_scope_pop(rxi_rd_scope *s, int mark);
void rxi_rd_scope_free(rxi_rd_scope *s);

typedef struct rxi_rd_local {
    const char *name; /* as written (arena) */
    rx_node *var;     /* the VAR node; every use refers to it */
    rx_loc loc;       /* where it was bound */
    bool param;       /* a function parameter */
    bool hidden;      /* bound inside an `if` branch that has ended */
} rxi_rd_local;

typedef struct rxi_rd_loop {
    const rx_svar *var; /* loop variable */
    rx_expr *min;       /* first value */
    rx_expr *extent;    /* trip count */
} rxi_rd_loop;

typedef struct rx_reader {
    rx_module *m;                 /* module being built */
    rx_arena *a;                  /* m->arena */
    rx_diags *d;                  /* where errors go */
    rx_read_opts o;               /* limits, defaults filled in */
    int nerr0;                    /* rx_diags_count(d) when reading started */
    rxi_rd_scope syms;             /* const rx_svar *: usable in expressions */
    rxi_rd_scope bufs;             /* rx_buffer *: buffers in scope */
    rxi_rd_scope locals;           /* rxi_rd_local *: graph variables bound in the function */
    rxi_rd_scope globals;          /* rx_func *: the module's functions */
    rxi_rd_scope consts;           /* rx_const *: the module's constants */
    RX_VEC(rxi_rd_loop) loops;     /* enclosing loops (loop level) */
    int loop_base;                /* loops below this index belong to outer blocks */
    bool in_dataflow;             /* reading a dataflow block's bindings */
    /* For "used before its binding" (read_graph.c, on the error path only): */
    const json_t *fn_body;        /* body of the graph function being read */
    rx_loc fn_body_loc;
    rxi_rd_scope later;            /* every binding name of fn_body (built lazily) */
    bool later_built;             /* `later` holds fn_body's names */
    RX_VEC(const json_t *) open;  /* bindings whose value is being read, outermost first */
} rx_reader;

/* ---- reader.c: errors, locations, keys, values ---- */

/* Reports an error at loc (printf-style message, no trailing period). */
void rxi_rd_err(rx_reader *r, rx_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* True when errors were reported since the reader started. */
bool rxi_rd_failed(const rx_reader *r);
/* Child locations; `key` must be a string literal (static storage). */
rx_loc rxi_rd_key(rx_reader *r, rx_loc parent, const char *key);
rx_loc rxi_rd_idx(rx_reader *r, rx_loc parent, int index);
/* Child location whose key comes from the input: it is copied into the arena. */
rx_loc rxi_rd_dkey(rx_reader *r, rx_loc parent, const char *key);
/* A short description of a JSON value for messages: `true`, `1.5`, `"abc"`, `an array`
 * (arena string; long strings are cut). */
const char *rxi_rd_desc(rx_reader *r, const json_t *j);
/* Reports every key of obj not in `allowed` (NULL-terminated). False if any. */
bool rxi_rd_keys(rx_reader *r, const json_t *obj, rx_loc loc, const char *const *allowed);
/* The member `key` of obj; when absent and `required`, reports `missing key`. */
json_t *rxi_rd_get(rx_reader *r, const json_t *obj, rx_loc loc, const char *key, bool required);
/* Requires j to be an object/array/string; reports "expected <what>, found ..." */
bool rxi_rd_want_object(rx_reader *r, const json_t *j, rx_loc loc, const char *what);
bool rxi_rd_want_array(rx_reader *r, const json_t *j, rx_loc loc, const char *what);
const char *rxi_rd_want_string(rx_reader *r, const json_t *j, rx_loc loc, const char *what);
/* An identifier ([A-Za-z_][A-Za-z0-9_]*) naming something of kind `what`; returns the
 * arena copy, or NULL after an error. */
const char *rxi_rd_ident(rx_reader *r, const json_t *j, rx_loc loc, const char *what);
/* True when s[0..n) is an identifier. */
bool rxi_rd_is_ident(const char *s, size_t n);
/* A dtype name (aliases accepted). */
bool rxi_rd_dtype(rx_reader *r, const json_t *j, rx_loc loc, rx_dtype *out);
/* Free-form JSON converted to an attribute (strings stay RX_A_STR). */
rx_attr *rxi_rd_attr(rx_reader *r, const json_t *j, rx_loc loc);
/* Function attributes: free-form, with `upper_bounds` and `compute_pattern` checked
 * against f (whose svars are already set). */
rx_attr *rxi_rd_func_attrs(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc);

/* ---- read_sinfo.c: symbolic variables and annotations ---- */

/* The innermost variable in scope named s[0..n), or NULL. */
const rx_svar *rxi_rd_lookup(const rx_reader *r, const char *s, size_t n);
/* Creates a variable, pushes it onto the scope and returns it. */
const rx_svar *rxi_rd_define(rx_reader *r, const char *name, rx_dtype dt, rx_svkind kind);
/* The whole-dimension identifier of a dim string ("n", " n "), or NULL. Sets *len. */
const char *rxi_rd_whole_ident(const char *s, size_t *len);
/* Defines (as shape variables) every whole-dimension identifier of an annotation that
 * is not in scope yet: the first step of reading a defining annotation (parameters,
 * match_cast). Ignores malformed parts (reading reports them). */
void rxi_rd_predefine(rx_reader *r, const json_t *annot);
/* One dimension: a non-negative integer (>= min_int) or a symbolic string; every
 * variable must be in scope. NULL after an error. */
rx_expr *rxi_rd_dim(rx_reader *r, const json_t *j, rx_loc loc, int64_t min_int);
/* The value of a prim annotation or expression of dtype t: for integer dtypes an
 * integer or symbolic string (cast to t when t is not i64), a number for floats, a
 * JSON bool for bool. NULL after an error. */
rx_expr *rxi_rd_prim_value(rx_reader *r, const json_t *val, rx_dtype t, rx_loc loc);
/* An annotation (struct info). Variables must be in scope, except inside callables,
 * which define their own. NULL after an error. */
rx_sinfo *rxi_rd_sinfo(rx_reader *r, const json_t *j, rx_loc loc);
/* ---- reader.c: constants ---- */

/* A constant object {"dtype", "shape", "data"}; name NULL for inline constants. */
rx_const *rxi_rd_const_obj(rx_reader *r, const json_t *j, rx_loc loc, const char *name);
/* A scalar constant from a JSON number/bool and an optional dtype value. */
rx_const *rxi_rd_const_scalar(rx_reader *r, const json_t *v, const json_t *dt, rx_loc loc,
                             rx_loc dtloc);

/* ---- read_graph.c ---- */

/* Reads the signature and body of a graph-level function into f. */
void rxi_rd_relax_func(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc);

/* ---- read_tir.c ---- */

/* Reads the signature and body of a loop-level function into f. */
void rxi_rd_tir_func(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc);

/* ---- exprparse.c ---- */

typedef enum rx_xmode {
    RX_XP_SYM, /* graph-level symbolic integers: ints, vars, + - * // % min max, () */
    RX_XP_FULL /* loop-level scalar expressions: the whole grammar */
} rx_xmode;

/* Parses the expression text s[0..n) in the current scope. `want` is the type an
 * untyped literal at the top takes (a store's buffer dtype), RX_DT_UNKNOWN for the
 * defaults. Errors are located at loc and name the column; NULL after an error. */
rx_expr *rxi_rd_parse(rx_reader *r, const char *s, size_t n, rx_loc loc, rx_xmode mode,
                     rx_dtype want);

#endif
