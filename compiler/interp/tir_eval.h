/*
 * tir_eval.h — internal to compiler/pass: an exact interpreter of loop functions,
 * used by constant folding (canonicalize.c) and by its tests.
 *
 * rx_tir_eval runs one RX_F_TIR function on buffers the caller provides, computing
 * what the kernel compiler/codegen emits for that function computes: the same compute
 * types (f16 and bf16 in float, rounded after every operation; narrow integers in 32
 * bits, wrapped back), the same helpers (floor division with division by zero giving
 * 0, NaN-propagating float min/max), the same libm functions (expf for f32, exp for
 * f64), the same guarded or hoisted block init, the same storage encodings. Anything
 * the generated C leaves undefined (integer division by zero, a shift count out of
 * range, a float-to-integer conversion out of range, a load or store outside its
 * buffer) fails the run instead of guessing; so does anything codegen rejects
 * (thread-bound loops, shifts of floats, an intrinsic of an integer). Signed overflow
 * of + - * wraps, as the kernels do in practice. Parallel and vectorized loops run
 * serially (their iterations are independent when the schedule is right). Exactness
 * assumes the kernels are built as compiler/codegen/cc.c builds them (ISO C11, no
 * -ffast-math, so no fused multiply-add and no reassociation) and call the same libm
 * (glibc's expf & co. on the machine that folds).
 *
 * Buffers: one rx_tev_buf per buffer parameter, in parameter order (inputs, then
 * outputs); scalar parameters take one 64-bit word each, in parameter order, as the
 * kernel ABI passes them (integers as values, floats as the bits of a double). The
 * function's shape variables are bound from the buffers' shapes (a variable standing
 * as a whole dim of a buffer takes that extent); then every buffer extent must
 * evaluate to the given shape.
 *
 * Limits keep a fold cheap: a budget of steps (expression nodes evaluated, statements
 * run, loop iterations) and of bytes held by ALLOC'd buffers at once; running out
 * fails the run. When every loop extent is a literal, an upper estimate of the steps
 * (both branches of each IF counted) is made first and a run known to be too long
 * fails before it starts. Cost: proportional to the steps, about 30 ns each on
 * x86-64 (a 128^3 matmul is 37 M steps); memory: the live allocations plus scope
 * stacks the depth of the function's nesting.
 */
#ifndef RELAX_TIR_EVAL_H
#define RELAX_TIR_EVAL_H

#include "relax/ir.h"

typedef struct rx_tev_buf {
    uint8_t *data;        /* elements in storage form: little-endian, bool 1 byte, f16 and
                             bf16 as 16-bit patterns; numel * element size bytes */
    rx_dtype dtype;       /* must equal the buffer parameter's */
    int32_t ndim;         /* must equal the buffer parameter's */
    const int64_t *shape; /* ndim extents */
    bool readonly;        /* a store into it fails the run (constant inputs) */
} rx_tev_buf;

typedef struct rx_tev_limits {
    int64_t max_steps;       /* <= 0: RX_TEV_MAX_STEPS */
    int64_t max_alloc_bytes; /* <= 0: RX_TEV_MAX_ALLOC */
    int64_t steps_used;      /* out: the steps the run took */
} rx_tev_limits;

#define RX_TEV_MAX_STEPS (INT64_C(1) << 25)
#define RX_TEV_MAX_ALLOC (INT64_C(64) << 20)

/* Runs f on bufs[0..nbufs) (one per buffer parameter) and scalars[0..nscalars) (one
 * per scalar parameter), writing the outputs in place. Returns true when the run
 * completed with every step defined. Returns false otherwise, with the reason ("integer
 * division by zero in ...", "step budget exhausted") appended to why when why is not
 * NULL; the writable buffers then hold partial results. lim may be NULL (defaults);
 * else lim->steps_used is set either way. Reads f only; allocates nothing that
 * outlives the call. */
bool rx_tir_eval(const rx_func *f, const rx_tev_buf *bufs, int nbufs, const int64_t *scalars,
                 int nscalars, rx_tev_limits *lim, rx_sb *why);

/* Bytes of one stored element of dt (bool 1, f16 2, ...); 0 for unknown. */
size_t rx_tev_elem_size(rx_dtype dt);

#endif
