/*
 * tir_eval_int.h — internal to the loop-function interpreter (tir_eval.h): the run
 * state shared by tir_eval.c (statements, scopes, the entry) and tir_eval_expr.c
 * (values, conversions, expressions).
 *
 * A value (tv) is kept in the compute type of its dtype, as the generated C keeps it
 * (compiler/codegen/cgen_int.h): bool an int (0 or 1 after a comparison; + of two
 * bools may give 2, as C's int does), signed integers an int64_t holding a value of
 * their width, unsigned ones a uint64_t, f32, f16 and bf16 a float (f16/bf16 exactly
 * representable in the narrow type), f64 a double. Scopes are stacks searched from the
 * innermost entry (functions nest a handful of variables deep).
 *
 * Errors: tev_fail records the first failure (ok = false and its reason); every
 * evaluation checks ok and returns at once afterwards, so callers test t->ok after a
 * sequence of calls rather than after each.
 */
#ifndef RELAX_TIR_EVAL_INT_H
#define RELAX_TIR_EVAL_INT_H

#include <string.h>

#include "tir_eval.h"

typedef union tv {
    int64_t i;  /* bool and signed integers */
    uint64_t u; /* unsigned integers */
    float f;    /* f32, f16, bf16 */
    double d;   /* f64 */
} tv;

typedef enum vclass { C_BOOL, C_SINT, C_UINT, C_F32, C_F64 } vclass;

typedef struct tev_var {
    const rx_svar *v; /* the variable */
    tv val;           /* its value in its dtype's compute type */
} tev_var;

typedef struct tev_buf {
    const rx_buffer *b; /* the parameter or ALLOC it stands for */
    uint8_t *data;      /* elements in storage form */
    int64_t *dims;      /* evaluated extents (heap) */
    int64_t numel;      /* product of dims */
    rx_dtype dt;        /* element dtype */
    bool ro;            /* stores fail */
    bool owned;         /* data came from an ALLOC: freed when popped */
} tev_buf;

typedef struct tev_loop {
    const rx_svar *var; /* an enclosing FOR's variable */
    int64_t start;      /* its first value */
} tev_loop;

typedef struct tev {
    const rx_func *f;
    RX_VEC(tev_var) vars;             /* scope stack, innermost last */
    RX_VEC(tev_buf) bufs;             /* scope stack, innermost last */
    RX_VEC(tev_loop) loops;           /* enclosing FORs, innermost last */
    RX_VEC(const rx_stmt *) hoisted;  /* blocks whose init ran before their reduce loops */
    int64_t steps, max_steps;         /* budget */
    int64_t alloc, max_alloc;         /* bytes of live ALLOC'd buffers, and the limit */
    bool ok;                          /* no failure yet */
    rx_sb *why;                       /* the first failure's reason, or NULL */
} tev;

/* ---- tir_eval_expr.c ---- */
void tev_fail(tev *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* e in its own dtype; e converted to dt (unless dt is e's or UNKNOWN); e as a bool. */
tv tev_eval(tev *t, const rx_expr *e);
tv tev_eval_as(tev *t, const rx_expr *e, rx_dtype dt);
bool tev_eval_bool(tev *t, const rx_expr *e);
tv tev_lit_int(int64_t v, rx_dtype dt);                 /* an integer literal of dtype dt */
tv tev_conv(tev *t, tv x, rx_dtype from, rx_dtype to);  /* codegen's emit_cast */
const tv *tev_lookup_var(const tev *t, const rx_svar *v); /* NULL when unbound */
void tev_push_var(tev *t, const rx_svar *v, tv val);
tev_buf *tev_lookup_buf(tev *t, const rx_buffer *b);    /* NULL when not in scope */
void tev_pop_bufs(tev *t, int mark);                    /* frees owned data past mark */
/* Row-major flat position of idx in b, checked against its size; -1 after a failure. */
int64_t tev_flat_index(tev *t, const tev_buf *b, rx_expr *const *idx, int nidx);
void tev_store_elem(tev_buf *b, int64_t i, tv v);       /* v in b's storage form */

/* ---- dtypes ---- */
/* UNKNOWN is computed as i64, as codegen's compute type for it is int64_t. */
static inline rx_dtype norm(rx_dtype t) { return t == RX_DT_UNKNOWN ? RX_DT_I64 : t; }

static inline vclass cls(rx_dtype t)
{
    switch (norm(t)) {
    case RX_DT_BOOL: return C_BOOL;
    case RX_DT_U8: case RX_DT_U16: case RX_DT_U32: case RX_DT_U64: return C_UINT;
    case RX_DT_F16: case RX_DT_BF16: case RX_DT_F32: return C_F32;
    case RX_DT_F64: return C_F64;
    default: return C_SINT;
    }
}

/* Bits of a value of dtype t (bool: 8, its storage), by table: this is on every path. */
static inline int bits(rx_dtype t)
{
    static const uint8_t B[RX_DT_COUNT] = {
        [RX_DT_UNKNOWN] = 64, [RX_DT_BOOL] = 8, [RX_DT_I8] = 8, [RX_DT_I16] = 16,
        [RX_DT_I32] = 32, [RX_DT_I64] = 64, [RX_DT_U8] = 8, [RX_DT_U16] = 16, [RX_DT_U32] = 32,
        [RX_DT_U64] = 64, [RX_DT_F16] = 16, [RX_DT_BF16] = 16, [RX_DT_F32] = 32, [RX_DT_F64] = 64};
    return (unsigned)t < RX_DT_COUNT ? B[t] : 64;
}

/* 8- and 16-bit integers, which codegen computes in 32 bits. */
static inline bool is_narrow(rx_dtype t)
{
    return (cls(t) == C_SINT || cls(t) == C_UINT) && bits(t) < 32;
}

static inline bool is_float(rx_dtype t) { vclass c = cls(t); return c == C_F32 || c == C_F64; }

/* v's low `nb` bits, sign-extended. */
static inline int64_t wrap_s(uint64_t v, int nb)
{
    if (nb < 64) {
        uint64_t m = (UINT64_C(1) << nb) - 1;
        v &= m;
        if (v >> (nb - 1)) v |= ~m;
    }
    int64_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

static inline uint64_t wrap_u(uint64_t v, int nb)
{
    return nb < 64 ? v & ((UINT64_C(1) << nb) - 1) : v;
}

static inline bool tev_step(tev *t)
{
    if (!t->ok) return false;
    if (++t->steps > t->max_steps) {
        tev_fail(t, "step budget of %lld exhausted", (long long)t->max_steps);
        return false;
    }
    return true;
}

#endif
