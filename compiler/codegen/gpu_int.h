/*
 * gpu_int.h — internals of the GPU kernel generator (gpu_kernel.c, gpu_dialect.c).
 *
 * One generator, several source dialects: everything that differs between OpenCL C,
 * GLSL 450 compute and CUDA C is a field of rx_gpu_dialect, so the schedules and the
 * statement emitter (c_kernel.c, shared with the CPU target) never test which dialect
 * they write. Kernels index buffers as arrays (buf[i], no pointer arithmetic in the
 * statements), declare work-group memory at kernel scope, and take symbolic values as
 * scalar arguments (push constants where the API has no scalar arguments).
 */
#ifndef RELAX_GPU_INT_H
#define RELAX_GPU_INT_H

#include "cgen_int.h"
#include "relax/target.h"

typedef struct rx_gpu_dialect {
    const char *name;         /* "OpenCL C 1.2" */
    rx_target_kind kind;      /* the target kind it serves */
    const char *kernel;       /* what precedes the kernel's name: "__kernel void" */
    const char *bounds;       /* NULL, or printf format of the kernel's work-group size
                                 bound (max_threads), written after `kernel` */
    const char *buf_qual;     /* qualifier of a buffer parameter: "__global" */
    const char *i64;          /* the 64-bit integer of scalar arguments: "long" */
    const char *global_id;    /* this work-item's index in the 1-D grid */
    const char *global_size;  /* work-items in the grid */
    const char *local_id;     /* index in the work-group */
    const char *local_id64;   /* the same as a 64-bit integer (GLSL: from the unsigned id) */
    const char *group_id;     /* the work-group's index */
    const char *local_size;   /* work-items per work-group */
    const char *num_groups;   /* work-groups in the grid */
    const char *barrier;      /* work-group barrier with local memory fence */
    const char *local_decl;   /* qualifier of work-group memory: "__local" */
    const char *atomic_cas;   /* printf format of a 32-bit compare-and-swap on a buffer
                                 element: (buffer, index, expected, new) */
    /* A buffer parameter as the emitter sees it: printf format taking (qualifier,
     * storage type, name, name, name) that declares NAME over the parameter pair
     * NAME_b, NAME_o (the buffer and the tensor's element offset in it). */
    const char *buf_view;
    const char *lidx;         /* type of indices into work-group memory: "long" (GLSL: int) */
    const char *vec4;         /* NULL (no vectorized loads), or the type of four floats */
    const char *vload4;       /* printf format of a load of four adjacent floats: (view,
                                 element index); NULL with vec4: GLSL's aliased vec4 view
                                 (rx_gpu_glsl_vload4) */
    /* NULL, or printf format of a warp shuffle down (value text, lane delta text): the
     * rows schedule then reduces within warps of `warp` lanes and only combines the
     * warps' partials in local memory (CUDA: __shfl_down_sync) */
    const char *shfl_down;
    int warp;                 /* lanes per warp where shfl_down is set */
    bool shader_per_kernel;   /* GLSL: each kernel is its own shader, parameters are
                                 bindings and push constants (gpu_glsl.c), cg.glsl */
    const char *prelude;      /* types, math names and helpers the expressions use */
    const char *prelude_f16;  /* f16/bf16 conversions (rx_h2f, rx_f2h, ...) */
    const char *prelude_f64;  /* NULL, or f64 math the dialect lacks (GLSL: rx_dexp, ...) */
    const char *exact_begin;  /* NULL, or a file-scope line before a kernel whose float
                                 arithmetic must not contract (a*b+c into fma): kernels
                                 that round floats to integers (quantize), so that their
                                 results equal the CPU target's bit for bit */
    const char *exact_end;    /* the line after such a kernel, contraction back on */
} rx_gpu_dialect;

/* The dialect of target kind k, NULL when the generator has none yet (with *why). */
const rx_gpu_dialect *rx_gpu_dialect_of(rx_target_kind k, const char **why);

/* ---- gpu_kernel.c: the generator's state and the grid chain ---- */

enum {
    RX_GPU_MAX_CHAIN = 8, /* loops flattened into the grid index, at most */
    RX_GPU_MV_ROWS = 8    /* a matmul of at most this many rows runs on the grid, not in
                             tiles (a tile of 16 rows would idle most of its work-items) */
};

/* One kernel's text in the generator's output: [at, end). */
typedef struct gk_shader {
    char *name; /* the kernel's name (heap) */
    size_t at, end;
} gk_shader;

typedef struct gk {
    cg *g;
    const rx_gpu_dialect *dl;
    const rx_target *t;
    int kidx;       /* the loop function's index in the kernel table */
    rx_sb *launch;  /* the LAUNCH section being built */
    RX_VEC(gk_shader) shaders; /* every kernel emitted, in order */
    const rx_stmt *hloop; /* the host loop whose body is being emitted (gpu_kernel.c's
                             "Host loop"): its kernels take the iteration `rx_it` */
} gk;

/* ---- gpu_affine.c: the affine independence rule ---- */

/* The longest chain of perfectly nested loops from s (into chain) whose iterations write
 * distinct elements through one affine index per stored buffer (gpu_affine.c's essay);
 * 0 when not even s alone qualifies. */
int rx_gpu_affine_chain(const rx_stmt *s, const rx_stmt **chain);

/* ---- gpu_glsl.c: kernels as GLSL compute shaders (shader_per_kernel) ---- */

/* The head of kernel `name` of f as a shader: bindings, push constants, `void main()`,
 * with the parameters in scope (emit_head's contract). */
void rx_gpu_glsl_head(gk *k, const rx_func *f, const char *name);
/* `const vec4 DST = ...;`: the four floats of buffer b at element index idx (C text,
 * relative to b's element offset), through a vec4 view of b's binding (declared in the
 * body and hoisted to module scope) when the absolute index is a multiple of 4, else
 * four scalar loads: a vec4 of a float[] must start at 16 bytes. */
void rx_gpu_glsl_vload4(gk *k, const rx_buffer *b, const char *dst, const char *idx);
/* Each kernel of body (k->shaders) as one shader with the prelude, appended to src;
 * their SPIR-V bundle to bin. Errors go to k->g. */
void rx_gpu_glsl_shaders(gk *k, const rx_sb *body, rx_sb *src, rx_sb *bin);

void rx_gpu_ind(cg *g); /* the current indentation */
/* Whether loop s's extent and start are free of the variables of chain[0..n). */
bool rx_gpu_free_of_chain(const rx_stmt *s, const rx_stmt *const *chain, int n);
/* `const long rx_eI = extent;` per chain loop and `const long rx_n = rx_e0 * ...;` (1 for
 * an empty chain). */
void rx_gpu_chain_count(cg *g, const rx_stmt *const *chain, int n);
/* Binds the chain's variables from the flat index `rx_g` (pushed on the scope and as
 * enclosing loops; the caller pops them). */
void rx_gpu_chain_bind(cg *g, const rx_stmt *const *chain, int n);

/* ---- gpu_reduce.c: the rows schedule ---- */

/* A row reduction (gpu_reduce.c's essay): `for r: block { init: C[idx] = init;
 * body: C[idx] = C[idx] OP val }` under the grid chain. */
typedef struct rx_gpu_red {
    const rx_stmt *loop;    /* the reduce FOR */
    const rx_stmt *block;   /* its block */
    const rx_stmt *store;   /* the body's store C[idx] = C[idx] OP val */
    const rx_expr *init;    /* the init's value */
    const rx_expr *val;     /* what is combined */
    int op;                 /* RX_E_ADD, RX_E_MAX, RX_E_MIN */
    uint32_t local_bytes;   /* the tree's __local array (tiles: both tiles) */
    int tile;               /* 0: the rows schedule; else the matmul tiles' edge
                               (gpu_matmul.c): val = x * y */
    const rx_expr *x, *y;   /* tiles and matvec: x free of the chain's last loop, y of the
                               one before */
    int cols;               /* matvec (gpu_matvec.c): output columns per work-group; 0
                               for the other schedules */
    int micro;              /* tiles: each work-item's register micro-tile edge R (an
                               R x R block of outputs; the group's block is tile R) */
    const rx_expr *vec;     /* matvec: y as a load whose four adjacent columns are
                               adjacent elements (float4/vec4 loads), else NULL */
    bool kdot;              /* matvec on CUDA: y's elements are adjacent along K (a (N, K)
                               weight, K^T of attention): a warp per output column */
    uint32_t rowmask;       /* matvec on CUDA with vec or kdot: bit i set when chain loop i (of the
                               loops before the columns) is one of the rows each work-item
                               keeps in registers (y is free of it); 0: the portable form */
    bool xunit;             /* matvec on CUDA with rows in registers: x is a load of a
                               buffer parameter free of the columns whose element index
                               grows by 1 with K: each row's offset at k = 0 is computed
                               once per pass and the K loop reads X[offset + k] */
} rx_gpu_red;

/* Whether the statements under a grid chain are one fold C[idx] = C[idx] OP val over one
 * reduce loop (the shape above; *r filled, schedule fields zero). */
bool rx_gpu_match_fold(const rx_stmts *under, rx_gpu_red *r);
/* Whether `bytes` of local memory fit the target's max_local_bytes (*out = bytes); else
 * a located error naming `what`, the bytes and the option. */
bool rx_gpu_local_fits(const gk *k, const rx_stmt *at, int64_t bytes, const char *what,
                       uint32_t *out);
/* Whether the statements under a grid chain are one row reduction the rows schedule
 * runs (*r filled), for k's target. */
bool rx_gpu_match_rows(const gk *k, const rx_stmts *under, rx_gpu_red *r);
/* The rows schedule's body for chain[0..n) and r. */
void rx_gpu_emit_rows(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r);

/* ---- gpu_matmul.c: the tiles schedule ---- */

/* Whether the nest chain[0..n) over under is a matmul the tiles schedule runs (*r
 * filled, r->tile set). */
bool rx_gpu_match_tiles(const gk *k, const rx_stmt *const *chain, int n, const rx_stmts *under,
                        rx_gpu_red *r);
/* Whether the fold under chain[0..n) is an f32 matmul C[.., i, j] += x * y with x free
 * of j and y free of i (r->x, r->y set; no schedule field). */
bool rx_gpu_match_matmul(const rx_stmt *const *chain, int n, const rx_stmts *under, rx_gpu_red *r);
/* `const T NAME = (T)(MIN + OFFSET);` for loop s's variable, pushed on the scope. */
void rx_gpu_bind_loop(cg *g, const rx_stmt *s, const char *offset);
/* `const long rx_nb = rx_e0 * ... * rx_e(outer-1) * PER;` and the grid-stride loop over
 * the work-group's blocks, opened (indent raised) with `long rx_r = rx_g;` in it. */
void rx_gpu_blocks_open(gk *k, int outer, const char *per);
/* Binds chain[outer - 1] .. chain[0] from rx_r (rx_r % rx_eI, then rx_r /= rx_eI),
 * pushed on the scope (the caller pops them). */
void rx_gpu_bind_outer(cg *g, const rx_stmt *const *chain, int outer);
/* The tiles schedule's body. */
void rx_gpu_emit_tiles(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r);
/* Emits `a OP b` for r's OP (placeholders a and b named by C text). */
void rx_gpu_combine(cg *g, const rx_gpu_red *r, const char *a, const char *b);
/* Emits r's final store: C[idx] = init OP total (total: C text), the block's spatial
 * iterators bound from the variables in scope. */
void rx_gpu_final_store(cg *g, const rx_gpu_red *r, const char *total);

/* ---- gpu_matvec.c: the matvec schedule (few rows) ---- */

/* Whether the nest chain[0..n) over under is a matmul the matvec schedule runs (*r
 * filled, r->cols set): rows_any, a symbolic row count is accepted (the launch records
 * choose at run time); else only a literal of at most RX_GPU_MV_ROWS. */
bool rx_gpu_match_matvec(const gk *k, const rx_stmt *const *chain, int n, const rx_stmts *under,
                         bool rows_any, rx_gpu_red *r);
/* The matvec schedule's body. */
void rx_gpu_emit_matvec(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r);

#endif
