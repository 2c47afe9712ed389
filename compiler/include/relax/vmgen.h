/*
 * vmgen.h — lowering graph functions to VM bytecode and writing the `.rxa` artifact
 * (docs/design.md pipeline steps 8, 10 and 11's packaging; paper §4.7, Figure 5).
 *
 * Library rxvmgen. It links the runtime library rxrt on purpose: the artifact builder
 * (runtime/include/relax/rxa.h) and the instruction set (vm.h) live with the runtime
 * that reads them, so writer and reader share one definition of the format and one
 * set of checks; likewise the names of the library functions the CPU runtime provides
 * (rx_rt_builtin_library_names). Nothing else of the runtime is used by the compiler.
 *
 * The input is a deduced module whose high-level op calls have been legalized into
 * call_tir (rx_pass_legalize); the only op calls left may be the data-dependent ones
 * the runtime has built-ins for (unique, nonzero) and shape_of. rx_vmgen lowers, per
 * graph function, in module order (function index = position among graph functions;
 * kernel index = position among loop functions):
 *
 *   parameters       registers 0..n-1; MATCH_TENSOR / MATCH_SHAPE / MATCH_INT per
 *                    parameter (tuples: GETITEM then a match per field) storing each
 *                    symbolic variable into a shape-heap slot at its first whole-dim
 *                    occurrence and checking later ones; dims that are expressions of
 *                    variables defined later are stored and checked with ASSERT_EQ
 *                    once every variable is known. Messages: "main: x: expected
 *                    (n, 128)" (the VM appends ", got (4, 64)").
 *   symbolic exprs   simplified, then computed into heap slots with ADD SUB MUL
 *                    FLOORDIV FLOORMOD MIN MAX, each distinct (op, operand, operand)
 *                    once per scope (a branch's values are forgotten after it)
 *   call_tir         per output ALLOC_TENSOR of a storage: intermediates share the
 *                    storages static memory planning gives them (plan.c: Algorithm 3,
 *                    sizes proved equal; or, static under upper_bounds, at an offset
 *                    of one arena allocated once at entry), other outputs
 *                    ALLOC_STORAGE their own at offset 0; then CALL_KERNEL with the kernel's ivars: its svars bound by
 *                    matching its buffer parameters against the call's argument and
 *                    output annotations (rx_si_match) and its scalar parameters to
 *                    tir_vars, each then an expression over the caller's variables; a
 *                    variable no annotation determines is read from the argument
 *                    tensor at run time (a MATCH_TENSOR storing that dim)
 *   call_dps_library allocations + CALL_LIB; the name must be one the CPU runtime
 *                    provides, else "library function cutlass.rms_norm is not
 *                    available on target cpu (available: blas.matmul, ...)"
 *   graph calls      CALL (a global) or CALL_VALUE (a callable value; FUNCREF makes one)
 *   values           tuples TUPLE, get_item GETITEM, constants LOADK, shapes MKSHAPE,
 *                    integer prim values LOADI, shape_of SHAPEOF, reshape (what
 *                    reshape_view leaves) VIEW of its input, unique/nonzero
 *                    CALL_BUILTIN (unique's attributes as LOADI int arguments unless
 *                    all default), match_cast MATCH_* (may define new variables)
 *   if               JMPIFNOT/GOTO, both branches writing the same register
 *   result           RET
 * After its last use a register is RELEASEd (liveness per body, uses inside a branch
 * count at the branch's binding), so the VM's peak memory is what the program needs.
 *
 * Errors are located diagnostics (an op the VM cannot run, a float prim value, a
 * symbolic variable that cannot be determined at run time, a call_tir whose arguments
 * contradict the loop function's buffers). Cost: linear in the module size (times the
 * small per-function symbol tables).
 */
#ifndef RELAX_VMGEN_H
#define RELAX_VMGEN_H

#include "relax/ir.h"
#include "relax/rxa.h"
#include "relax/target.h"

/* Memory of one graph function with and without static planning (plan.c). Bytes are
 * the sum of the storages' sizes: an expression over the function's symbolic
 * variables (module arena; "n * 24 + 32768"), and its constant bound under
 * upper_bounds. The lower bounds (lifetime.c) are the most bytes live at one program
 * point: of the intermediates (what the planned storages hold; no plan of them can
 * need less), and of every output tensor of the function's DPS calls, escaping ones
 * included (what a call's live bytes must reach; without planning they reach it). */
typedef struct rx_vmgen_mem {
    bool planned;             /* planning ran (not disabled by "memory_plan": false) */
    int32_t allocs;           /* tensor allocations = storages without planning */
    int32_t storages;         /* storages with planning: planned + tensors' own */
    int32_t planned_storages; /* of which shared by planned intermediates */
    int32_t static_storages;  /* of which static (the arena), allocated at function entry */
    int32_t planned_tensors;  /* tensors placed in planned storages */
    int64_t arena_bytes;      /* size of the static arena, 0 when none */
    int64_t arena_live_bytes; /* most bytes of its tensors live at once: the size a
                                 perfect packing would need (<= arena_bytes) */
    const rx_expr *bytes_without; /* total bytes without planning */
    const rx_expr *bytes_with;    /* with planning */
    const rx_expr *planned_bytes; /* of which the planned storages' */
    const rx_expr *lower_bound;   /* max over program points of live intermediate bytes */
    const rx_expr *peak_bound;    /* ... of live tensor bytes, escaping tensors included */
    int64_t max_without;      /* constant bound of bytes_without, -1 when unbounded */
    int64_t max_with;         /* of bytes_with */
    int64_t max_planned;      /* of planned_bytes */
    int64_t max_lower_bound;  /* of lower_bound */
    int64_t max_peak_bound;   /* of peak_bound */
} rx_vmgen_mem;

/* What the lowering used, for the artifact's metadata. Strings point into the module
 * (its arena), so the module must outlive the info. */
typedef struct rx_vmgen_info {
    RX_VEC(const char *) libs;     /* distinct call_dps_library names, first-use order */
    RX_VEC(const char *) builtins; /* distinct CALL_BUILTIN names, first-use order */
    RX_VEC(uint32_t) nregs;        /* per graph function (function index order) */
    RX_VEC(uint32_t) heap;         /* heap slots per graph function */
    RX_VEC(uint32_t) words;        /* code words per graph function */
    RX_VEC(rx_vmgen_mem) mem;      /* memory plan per graph function */
} rx_vmgen_info;

/* Lowers every graph function of m (deduced and legalized) into b: one kernel entry
 * per loop function (symbol rx_codegen_symbol(name), section KERNELS_CPU, its buffer
 * parameters, its svars as ivars), one function entry per graph function with its
 * signature descriptors and code, the constants and strings they use. m's arena gets
 * scratch nodes (simplified expressions); m is otherwise unchanged. Fills *info (free
 * with rx_vmgen_info_free; zero it first). Returns false after adding located
 * diagnostics to d; b then holds partial content the caller must not serialize. */
bool rx_vmgen(rx_module *m, rx_rxa_builder *b, rx_vmgen_info *info, rx_diags *d);

/* How rx_vmgen_with lowers; zero (or NULL) is rx_vmgen's behaviour. */
typedef struct rx_vmgen_opts {
    bool no_plan;             /* no static memory planning: one storage per tensor (opt
                                 level 0, --disable-pass memory_plan) */
    int64_t dev_type;         /* device type of ALLOC_STORAGE (vm.h RX_DEV_*; 0: CPU) */
    uint32_t kernel_section;  /* section of the kernel entries (0: KERNELS_CPU) */
} rx_vmgen_opts;

bool rx_vmgen_with(rx_module *m, rx_rxa_builder *b, const rx_vmgen_opts *o,
                   rx_vmgen_info *info, rx_diags *d);

void rx_vmgen_info_free(rx_vmgen_info *info);

/* The packed artifact dtype (rxa.h) of an IR dtype; 0 for unknown. */
uint32_t rx_vmgen_dtype(rx_dtype t);

/* ---- the artifact (artifact.c) ---- */

typedef struct rx_pass_time {
    const char *name; /* pass name */
    double ms;        /* wall time */
} rx_pass_time;

typedef struct rx_artifact_meta {
    const char *target;         /* "cpu" */
    int opt_level;              /* 0..3 */
    const char *module_hash;    /* lowercase hex cache key of the input module */
    const rx_pass_time *passes; /* the passes run, pipeline order (names only are written) */
    int npasses;
    const rx_target *tgt;       /* the parsed target: "target_options" lists its values
                                   (NULL: none written) */
} rx_artifact_meta;

/* Appends the METADATA JSON of the artifact (compact, deterministic key order):
 * format and version, compiler version, target (normalized) and every target option's
 * value ("target_options", defaults included), opt level, module name and hash, the
 * graph functions with their signatures (relax-json annotations and the text form),
 * the kernels (function name, symbol, buffers, ivars), libraries and built-ins used,
 * the names of the passes that ran (never their times: the bytes must not depend on the
 * build's circumstances). m is the module after lowering (its graph functions' signatures are
 * the input's). */
void rx_artifact_metadata(const rx_module *m, const rx_vmgen_info *info,
                          const rx_artifact_meta *meta, rx_sb *out);

/* Finishes b: METADATA from rx_artifact_metadata, KERNELS_CPU from so[0..so_n) when
 * so_n > 0, then serializes into *out (heap, caller frees). Returns false with one
 * diagnostic on out of memory. */
bool rx_artifact_write(rx_rxa_builder *b, const rx_module *m, const rx_vmgen_info *info,
                       const rx_artifact_meta *meta, const uint8_t *so, size_t so_n,
                       uint8_t **out, size_t *out_n, rx_diags *d);

#endif
