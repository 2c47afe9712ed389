/*
 * vg_int.h — internals of the VM lowering shared by its files (not installed).
 *
 *   vmgen.c     the module: kernel and function tables, descriptors, the driver loop
 *   shapes.c    the shape heap: symbolic variables and expressions in slots (with CSE),
 *               annotation matching (MATCH_*), expected-shape text
 *   liveness.c  last use of every variable, for RELEASE; bodies and program points
 *   lifetime.c  the DPS output tensors: sizes, aliases, escapes, live ranges, and the
 *               liveness lower bound of a function's memory
 *   plan.c      static memory planning: which storage (and offset) each intermediate
 *               tensor uses
 *   concat_place.c  plan.c's Step 0: concat fields made inside the concat's output
 *   lower.c     bindings, values, calls, if, bodies, one function
 *
 * A vg_fn is the state of one function being lowered: its code, register and slot
 * counters, the variable → register map, the scoped symbol table and CSE table. Scopes
 * are stack marks: entering a branch records the table lengths, leaving truncates, so
 * what a branch defined or computed is not reused after it.
 */
#ifndef RX_VG_INT_H
#define RX_VG_INT_H

#include "relax/codegen.h"
#include "relax/deduce.h"
#include "relax/vm.h"
#include "relax/vmgen.h"

/* A dim operand ("d"): a heap slot or an immediate. */
typedef struct vg_dim {
    int64_t tag; /* RX_D_SLOT or RX_D_IMM */
    int64_t val; /* slot index or value */
} vg_dim;

typedef struct vg_sym { /* a symbolic variable that has a slot */
    const rx_svar *v;
    int64_t slot;
} vg_sym;

typedef struct vg_cse { /* a computed expression: op(a, b) lives in slot */
    int64_t op;
    vg_dim a, b;
    int64_t slot;
} vg_cse;

typedef struct vg_defer { /* a stored dim to compare with its expression later */
    int64_t slot;      /* where MATCH stored the actual dim */
    rx_expr *expr;     /* what it must equal */
    const char *msg;   /* ASSERT_EQ message (arena) */
} vg_defer;

typedef struct vg_module {
    rx_module *m;
    rx_rxa_builder *b;
    rx_diags *d;
    rx_vmgen_info *info;
    rx_arena *tmp;                   /* scratch: descriptors, messages */
    RX_VEC(rx_func *) gfuncs;        /* graph functions: index = VM function index */
    RX_VEC(rx_func *) kfuncs;        /* loop functions: index = kernel index */
    RX_VEC(const rx_const *) consts; /* constants added, index = CONSTS index */
    bool ok;                         /* false after any error */
    bool no_plan;                    /* rx_vmgen_opts.no_plan: no function is planned */
    int64_t dev_type;                /* rx_vmgen_opts.dev_type (RX_DEV_CPU when 0) */
    uint32_t kernel_section;         /* rx_vmgen_opts.kernel_section (KERNELS_CPU when 0) */
} vg_module;

typedef struct vg_storage { /* a planned storage (plan.c) */
    rx_expr *bytes;       /* symbolic size (its first tensor's), NULL when static */
    int64_t size;         /* static bytes, -1 symbolic */
    int32_t home;         /* serial of the body allocating and releasing it (0: entry) */
    int32_t release_item; /* item of home after which it is released */
    int64_t reg;          /* register while emitting, -1 before its ALLOC_STORAGE */
    bool whole;           /* bytes is the storage's own size (a concat's, its fields
                             inside: plan.c Step 0), not its first tensor's */
} vg_storage;

typedef struct vg_alloc { /* one output tensor of a DPS call (lifetime.c) */
    int32_t var;          /* VAR id of the binding whose value the call is, -1 */
    int32_t field;        /* tuple field of the call's output, -1 for a single tensor */
    int32_t body;         /* serial of the body of the binding */
    int32_t def;          /* item of the binding there */
    int32_t death;        /* item of that body after which no alias of it is used */
    rx_expr *bytes;       /* byte size (bounds-simplified), NULL: not a sized tensor */
    int64_t bound;        /* constant upper bound of bytes under upper_bounds, -1 none */
    bool escapes;         /* may outlive the function or be aliased past tracking */
    int64_t tick0, tick1; /* program points it is live at: [tick0, tick1] */
    int32_t storage;      /* planned storage, -1: a storage of its own */
    int64_t offset;       /* byte offset in the planned storage */
    rx_expr *offset_expr; /* symbolic byte offset there (a concat's field), NULL: offset */
} vg_alloc;

typedef struct vg_body { /* one body (function body or if branch) in lowering order */
    int32_t parent;       /* serial of the enclosing body, -1 for body 0 */
    int32_t parent_item;  /* item of the parent containing it */
    int32_t nitems;       /* bindings + 1 (the result) */
    int64_t *tick;        /* item -> its program point (nitems entries) */
    int64_t *end_tick;    /* item -> last program point inside it (nested bodies) */
} vg_body;

typedef struct vg_plan {
    bool enabled;              /* false: attribute "memory_plan": false, or no_plan */
    RX_VEC(vg_alloc) allocs;   /* every DPS output tensor, in lowering order */
    int32_t *first_alloc;      /* VAR id -> first alloc of its DPS call, -1 */
    RX_VEC(vg_storage) st;     /* the planned storages */
    int32_t arena;             /* index in st of the static arena, -1 when none */
    int64_t arena_min;         /* most arena bytes live at one point (perfect packing) */
    rx_arith *ar;              /* sizes' arithmetic, upper bounds bound */
    int32_t nplanned;          /* allocs placed in planned storages */
    rx_expr *bytes_without;    /* sum of every allocation's bytes (NULL: none) */
    rx_expr *bytes_unplanned;  /* sum over the unplanned ones (NULL: none) */
    rx_expr *lower_bound;      /* max over program points of live intermediates' bytes */
    int64_t max_lower_bound;   /* its constant bound under upper_bounds, -1 none */
    rx_expr *peak_bound;       /* the same over every tensor, escaping ones included */
    int64_t max_peak_bound;    /* its constant bound */
} vg_plan;

typedef struct vg_fn {
    vg_module *M;
    rx_func *f;
    rx_arith *ar;          /* simplification (arena: module's) */
    rx_rxa_code code;      /* the function's words */
    int64_t nregs;         /* registers used */
    int64_t nheap;         /* heap slots used */
    int32_t nids;          /* size of the per-variable arrays */
    int32_t *reg_of;       /* VAR id -> register, -1 */
    int32_t *def_seq;      /* VAR id -> serial of the body defining it */
    int32_t *def_item;     /* VAR id -> item index of its definition there (-1 params) */
    int32_t *last_use;     /* VAR id -> last item (in def_seq) using it, -1 unused */
    RX_VEC(vg_body) bodies; /* by serial (liveness.c) */
    int64_t nticks;        /* program points of the function */
    int32_t seq_serial;    /* bodies entered so far while lowering */
    int32_t cur_var;       /* VAR id of the binding being lowered, -1 */
    const rx_binding *cur_bind; /* that binding (its name and location), NULL */
    vg_plan plan;          /* storages of the intermediate tensors */
    RX_VEC(vg_sym) syms;   /* scoped */
    RX_VEC(vg_cse) cse;    /* scoped */
} vg_fn;

/* ---- vmgen.c ---- */
void vg_error(vg_module *M, rx_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t vg_kernel_index(const vg_module *M, const rx_func *f);   /* -1 when not a kernel */
int64_t vg_func_index(const vg_module *M, const rx_func *f);     /* -1 when not a graph fn */
int64_t vg_const_index(vg_module *M, const rx_const *c);
void vg_note_lib(vg_module *M, const char *name);     /* records a library name once */
void vg_note_builtin(vg_module *M, const char *name); /* records a built-in name once */

/* ---- shapes.c ---- */
int64_t vg_new_slot(vg_fn *F);
int64_t vg_new_reg(vg_fn *F);
/* The slot of a defined variable, -1 when it has none in scope. */
int64_t vg_sym_slot(const vg_fn *F, const rx_svar *v);
void vg_sym_define(vg_fn *F, const rx_svar *v, int64_t slot);
/* Computes an integer expression into a dim operand (emitting arithmetic as needed).
 * False after an error (a variable without a slot, a non-integer node). */
bool vg_expr(vg_fn *F, rx_loc loc, const rx_expr *e, vg_dim *out);
/* Emits the checks of annotation si on register reg. `what` names the value in the
 * message ("x", "match_cast lv3"); deferred checks go to *defer when non-NULL (the
 * caller flushes them with vg_flush_defer once more variables are defined), else are
 * flushed at once. */
typedef RX_VEC(vg_defer) vg_defer_vec;
bool vg_match(vg_fn *F, rx_loc loc, int64_t reg, const rx_sinfo *si, const char *what,
              vg_defer_vec *defer);
bool vg_flush_defer(vg_fn *F, rx_loc loc, vg_defer_vec *defer);
/* The expected text of an annotation in the VM's style: "(n, 128)", "(n,)", "()",
 * "a 2-d f32 tensor", "a shape", "an int". */
void vg_expected(const rx_sinfo *si, rx_sb *out);
/* Scope marks. */
typedef struct vg_scope { int nsyms, ncse; } vg_scope;
vg_scope vg_scope_enter(const vg_fn *F);
void vg_scope_leave(vg_fn *F, vg_scope s);
/* A signature descriptor (tokens in M->tmp) over the function's svars. */
void vg_descriptor(vg_module *M, const rx_func *f, const rx_sinfo *si, const char *name,
                   rx_rxa_type *out);

/* ---- liveness.c ---- */
/* Fills def_seq, def_item, last_use for every variable of F->f, and F->bodies and
 * F->nticks (free with vg_liveness_free). */
void vg_liveness(vg_fn *F);
void vg_liveness_free(vg_fn *F);
/* The item of body `home` containing item `item` of body `body` (home is body or one
 * of its ancestors). */
int32_t vg_item_in(const vg_fn *F, int32_t body, int32_t item, int32_t home);

/* ---- lifetime.c ---- */
/* Fills P->allocs and P->first_alloc (sizes, escapes, deaths, program points) and the
 * totals without planning and the lower bound (after vg_liveness; P->ar set). */
void vg_lifetimes(vg_fn *F, vg_plan *P);

/* ---- plan.c ---- */
/* Whether alloc a may be planned: planning on, a sized tensor of a binding, not escaping. */
static inline bool vg_plannable(const vg_plan *P, const vg_alloc *a)
{
    return P->enabled && a->bytes && !a->escapes && a->var >= 0;
}
/* Plans F's intermediate tensors into shared storages (after vg_liveness). */
void vg_plan_function(vg_fn *F, vg_plan *P);
void vg_plan_free(vg_plan *P);
/* The metadata summary of F->plan (strings in the module's arena). */
void vg_plan_summary(vg_fn *F, rx_vmgen_mem *out);

/* ---- concat_place.c ---- */
/* plan.c's Step 0 (after vg_lifetimes): places the fields of each rt.concat inside its
 * output where each is one contiguous run of it. Fills host (alloc -> the output's
 * alloc, -1), off (a placed alloc's byte offset in the output's storage) and size (an
 * output with fields inside -> its storage's bytes, NULL otherwise), P->allocs.n
 * entries each, and widens each output's program points over its fields'. */
void vg_concat_fields(vg_fn *F, vg_plan *P, int32_t *host, rx_expr **off, rx_expr **size);

/* ---- lower.c ---- */
/* Lowers F->f's parameters and body into F->code. False after errors. */
bool vg_lower_function(vg_fn *F);

/* Emission helpers: a variable-length instruction is built in a word vector. */
typedef RX_VEC(int64_t) vg_words;
static inline void vg_w(vg_words *w, int64_t x) { RX_VEC_PUSH(*w, x); }
static inline void vg_wd(vg_words *w, vg_dim d) { RX_VEC_PUSH(*w, d.tag); RX_VEC_PUSH(*w, d.val); }
static inline size_t vg_emit_words(vg_fn *F, vg_words *w)
{
    size_t at = rx_rxa_emitv(&F->code, w->items, (size_t)w->n);
    w->n = 0;
    return at;
}

#endif
