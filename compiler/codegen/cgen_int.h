/*
 * cgen_int.h — internals shared by the C kernel generator's files.
 *
 * c_kernel.c walks functions and statements, c_expr.c emits scalar expressions and,
 * at the end, the prelude of helper functions the kernels used. Both write through
 * one cg context per call of rx_codegen_c; nothing is global.
 *
 * Value representation in the generated C (the "compute type" of a dtype): bool is
 * an int holding 0 or 1; integers are their <stdint.h> type; f32 and f64 are float
 * and double; f16 and bf16 are a float holding a value exactly representable in the
 * narrow type (every operation rounds its result back). Storage types differ for
 * bool (uint8_t) and f16/bf16 (uint16_t bit patterns).
 */
#ifndef RELAX_CGEN_INT_H
#define RELAX_CGEN_INT_H

#include "relax/codegen.h"

/* Helpers the prelude can define; cg.need[h] has bit (1 << dtype) set when the
 * helper for that dtype was used (H_SEL: a float select of both arms, c_expr.c's
 * eager_arms; the helpers defined once use bit 0: H_F16, H_BF16,
 * H_BITS, H_ALLOC; H_OMP: a parallel loop, which pins the OpenMP runtime; H_ISA: a
 * kernel with ISA versions, which needs the CPU check; H_EXPF, H_ERFF, H_TANHF, H_LOGF,
 * H_SINF, H_COSF: exp, erf, tanh, log, sin, cos in float (relax/codegen_math.h); H_CHECK: an index read from
 * data, checked (rx_chk); H_CKARITH: overflow-checked size arithmetic (c_check.c);
 * H_F64MATH: GLSL's exp, log, pow, tanh of doubles (gpu_dialect.c's GLSL_F64); H_TR32: a
 * transposing tile's 8 x 8 register transposes (c_transpose.c); H_ROWCOPY: a full-line row
 * copy (c_rowcopy.c); see c_expr.c and c_kernel.c). */
typedef enum cg_helper {
    H_FLOORDIV, H_FLOORMOD, H_MIN, H_MAX, H_ABS, H_SEL, /* per dtype */
    H_F16, H_BF16, H_BITS, H_ALLOC, H_OMP, H_ISA, H_EXPF, H_ERFF, H_TANHF, H_LOGF, H_SINF,
    H_COSF, H_CHECK, H_CKARITH, H_F64MATH, H_TR32, H_ROWCOPY, /* once */
    H_COUNT
} cg_helper;

/* A name in scope: a variable or a buffer of the loop function being emitted. */
typedef struct cg_sym {
    const void *key; /* rx_svar * or rx_buffer * */
    char *name;      /* C identifier (heap) */
    char **dims;     /* buffers: ndim extents as C text (heap each), else NULL */
    int ndim;        /* buffers: rank */
    bool view;       /* GLSL buffer parameter: subscripts are NAME_b[uint(NAME_o + i)] */
    bool scalar;     /* a read-only 0-d parameter read once into the local NAME_s */
    bool data;       /* a let whose value reads tensor data: an index using it is checked */
    const char *chk; /* a let checked at its let (rx_svar.checked_index): the extent, the
                        text of a buffer's dims[k] (owned by that buffer's symbol) */
} cg_sym;

/* An enclosing FOR while its body is emitted. */
typedef struct cg_loop {
    const rx_svar *var; /* the loop variable */
    char *start;        /* C text of its first value: a literal or a const local (heap) */
} cg_loop;

typedef struct cg {
    const rx_module *m;
    const rx_func *f;        /* the function being emitted */
    rx_diags *d;             /* errors go here */
    rx_sb *out;              /* kernel text */
    uint32_t need[H_COUNT];  /* helpers used (see cg_helper) */
    RX_VEC(cg_sym) syms;     /* scope stack, innermost last */
    RX_VEC(const char *) heap; /* live heap allocations (names owned by syms) */
    RX_VEC(cg_loop) loops;   /* enclosing FORs, innermost last */
    RX_VEC(const rx_stmt *) hoisted; /* blocks whose init was emitted before their reduce loops */
    int counter;             /* suffix of fresh names, per function */
    int nchecks;             /* checked indices emitted so far (rx_chk) */
    int tr_tiles;            /* register-transpose tiles emitted so far (c_transpose.c) */
    int par_depth;           /* parallel loops around the statement being emitted */
    bool checked_arith;      /* i64 + - * as rx_ckadd/rx_cksub/rx_ckmul (c_check.c) */
    int indent;              /* current indentation level */
    bool ok;                 /* no error reported yet */
    bool isa_versions;       /* rx_codegen_opts.isa_versions */
    bool isa_exact;          /* rx_codegen_opts.exact_isa_versions, isa_versions off */
    bool cpu;                /* the CPU's C (c_kernel.c), not a GPU dialect: float selects
                                of arms that load nothing as rx_sel_f32/f64 (c_expr.c) */
    bool glsl;               /* GLSL 450 spelling (gpu_dialect.c): casts T(x), 64-bit literals
                                Nl, no (void) statements, 32-bit subscripts, bools as int
                                values tested with != 0 */
} cg;

/* c_expr.c */
const char *rxi_cg_ctype(rx_dtype t);   /* compute type: "float" for f16 */
const char *rxi_cg_stype(rx_dtype t);   /* storage type: "uint16_t" for f16 */
size_t rxi_cg_ssize(rx_dtype t);        /* bytes of one stored element */
void rxi_cg_expr(cg *g, const rx_expr *e, rx_loc loc);
void rxi_cg_expr_as(cg *g, const rx_expr *e, rx_dtype t, rx_loc loc); /* converted to t */
void rxi_cg_index(cg *g, const cg_sym *b, rx_expr *const *idx, int nidx, rx_loc loc);
/* x checked as index k of buffer b: rx_chk(x, extent, &rx_ke, "name", k). */
void rxi_cg_checked(cg *g, const cg_sym *b, const rx_expr *x, int k, rx_loc loc);
/* Whether x reads tensor data: a load, or a let variable whose value does (cg_sym.data). */
bool rxi_cg_reads_data(const cg *g, const rx_expr *x);
void rxi_cg_encode(cg *g, rx_dtype t, const rx_expr *e, rx_loc loc); /* stored form */
/* The suffix naming a helper's type: the compute type's (f16 and bf16 share f32's). */
const char *rxi_cg_hsuffix(rx_dtype t);
/* c_prelude.c: the prelude (includes, macros, the helpers cg.need names). */
void rxi_cg_prelude(const cg *g, rx_sb *out);

/* c_expr.c: the spellings that differ in GLSL (cg.glsl). `rxi_cg_cast_open(g, T)`, the
 * operand, then "))": a conversion to T, `((T)(x))` in C and `T((x))` in GLSL. */
void rxi_cg_cast_open(cg *g, const char *type);
void rxi_cg_i64_lit(const cg *g, rx_sb *o, int64_t v); /* INT64_C(v) or vl */
/* `NAME[` and `]` around a subscript of buffer s: `NAME_b[uint(NAME_o + ` and `)]` for
 * a GLSL buffer parameter, `NAME[uint(` and `)]` for another GLSL array. */
void rxi_cg_sub_open(cg *g, const cg_sym *s);
void rxi_cg_sub_close(cg *g, const cg_sym *s);

/* c_kernel.c */
/* `(void)NAME;` at the current indentation (nothing in GLSL, which has no such cast). */
void rxi_cg_unused(cg *g, const char *name);
void rxi_cg_indent(cg *g); /* the current indentation */
const cg_sym *rxi_cg_lookup(const cg *g, const void *key);
void rxi_cg_err(cg *g, rx_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* c_kernel.c, for the GPU generator (gpu_kernel.c): the statement emitter, fresh
 * names, the scope stack, a buffer's extents as C text. */
void rxi_cg_stmts(cg *g, const rx_stmts *ss);
char *rxi_cg_fresh(cg *g, const char *base);
cg_sym *rxi_cg_push_sym(cg *g, const void *key, char *name);
void rxi_cg_pop_syms(cg *g, int mark);
void rxi_cg_declare_dims(cg *g, cg_sym *s, const rx_buffer *b);
/* Binds block s's iterators (the spatial ones only when spatial_only) as const locals. */
void rxi_cg_iters(cg *g, const rx_stmt *s, bool spatial_only);

/* c_stmts.c: whether codegen puts ALLOC b on the stack (a private array) rather than
 * the heap; whether ss (nested statements included) holds no heap allocation, or a
 * FOR; the statement executions of one run of ss when every loop extent in it has a
 * literal bound (a literal, or c of a split tail's min(c, x)), saturating at
 * INT64_MAX, or -1 when some extent is symbolic. */
bool rxi_cg_alloc_on_stack(const rx_buffer *b);
bool rxi_cg_heap_free(const rx_stmts *ss);
bool rxi_cg_has_for(const rx_stmts *ss);
int64_t rxi_cg_work(const rx_stmts *ss);

/* c_prelude.c: the per-dtype operation helpers (floor division and modulo, min, max, abs)
 * the kernels used, as RX_HELPER definitions: plain C that OpenCL C also compiles. */
void rxi_cg_prelude_ops(const cg *g, rx_sb *out);

/* c_check.c: emits the size checks of body at the top of a kernel (after its symbolic
 * variables): `int32_t rx_ovf`, the checks, `if (rx_ovf) return RX_KERNEL_EOVERFLOW`.
 * Returns whether there were any. */
bool rxi_cg_size_checks(cg *g, const rx_stmts *body);

/* c_par.c: the pragma line of parallel FOR s (emitted as `name`; lit: literal bounds,
 * simple: a literal start and a variable extent, else name_lo / name_hi in scope):
 * RX_PARALLEL, RX_PARALLEL_IF(the work counted at run time >= the bound), or a comment
 * when it runs serially. */
void rxi_cg_par_pragma(cg *g, const rx_stmt *s, const char *name, bool lit, bool simple);

/* c_isa.c: which code gets ISA versions. */
bool rxi_cg_wants_isa(const rx_stmts *ss);       /* full versions: a vectorized loop */
bool rxi_cg_hot(const rx_stmts *ss);             /* exact versions: exp or a product tile */
bool rxi_cg_hot_at(const rx_stmts *ss, int i);   /* rxi_cg_hot of top-level statement i */

/* c_transpose.c: a transposing tile of 32-bit elements as 8 x 8 register transposes.
 * rxi_cg_tr_tile emits `if (the fast path applies) { .. } else {` before FOR s and
 * returns true when s is such a tile (the caller then emits s and rxi_cg_tr_tile_end);
 * rxi_cg_prelude_tr32 writes the helper the tiles call, when one was emitted. */
bool rxi_cg_tr_tile(cg *g, const rx_stmt *s);
void rxi_cg_tr_tile_end(cg *g);
/* At the end of a parallel loop's body: the sfence of the tiles emitted in it (when
 * g->tr_tiles passed `tiles`), once per iteration instead of once per tile. */
void rxi_cg_tr_fence(cg *g, int tiles);
void rxi_cg_prelude_tr32(const cg *g, rx_sb *out);
/* c_transpose.c, shared with c_rowcopy.c: the literal step of integer expression e along
 * v (e at v + 1 minus e), proved by the arithmetic (false when not a literal);
 * `&NAME[flat index]` of buffer b at idx; whether the copy of store st from load ld has
 * both buffers in scope as plain C arrays (their extents known), into *cs and *xs; and
 * the loops' variables bound to 0 (`const T v = 0;`) and pushed, before a helper call
 * takes the place of the loops. */
bool rxi_cg_step_of(rx_arith *ar, rx_arena *a, rx_expr *e, const rx_svar *v, int64_t *step);
void rxi_cg_address(cg *g, const cg_sym *b, rx_expr *const *idx, int n, rx_loc loc);
bool rxi_cg_copy_syms(const cg *g, const rx_stmt *st, const rx_expr *ld, const cg_sym **cs,
                      const cg_sym **xs);
void rxi_cg_zero_loops(cg *g, const rx_svar *const *vars, int n);

/* c_rowcopy.c: a row copy of a large destination with 64-byte stores. rxi_cg_row_copy
 * emits `if (the fast path applies) { .. } else {` before the vectorized FOR s and
 * returns true when s is such a copy (the caller then emits s and rxi_cg_tr_tile_end);
 * rxi_cg_prelude_rowcopy writes the helper they call. */
bool rxi_cg_row_copy(cg *g, const rx_stmt *s);
void rxi_cg_prelude_rowcopy(const cg *g, rx_sb *out);

#endif
