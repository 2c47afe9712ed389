/*
 * te_int.h — internal to the tensor-expression builder: the builder and tensor
 * records shared by te.c (construction, expression helpers) and te_build.c (the
 * emission of the loop function).
 */
#ifndef RELAX_TE_INT_H
#define RELAX_TE_INT_H

#include "relax/arith.h"
#include "relax/te.h"

typedef enum te_kind { TE_PLACEHOLDER, TE_COMPUTE, TE_REDUCE, TE_ARGREDUCE } te_kind;

struct rx_te_tensor {
    te_kind kind;
    const char *name;       /* buffer and block name */
    rx_buffer *buf;         /* its buffer; shape in caller variables until the build */
    rx_svar **ivars;        /* index variables (ndim), NULL for a placeholder */
    int nred;               /* reduce axes (REDUCE, ARGREDUCE) */
    rx_svar **rvars;        /* reduce variables */
    rx_expr **rdom;         /* their extents (caller variables until the build) */
    rx_expr *body;          /* COMPUTE: the element; REDUCE/ARGREDUCE: the operand */
    rx_expr *init;          /* REDUCE: the start value */
    int op;                 /* rx_te_redop or rx_te_argop */
    rx_buffer *vbuf;        /* ARGREDUCE: the running value (an ALLOC'd buffer) */
    bool inlined;           /* COMPUTE substituted into its consumers */
    int index;              /* creation order */
};

struct rx_te {
    rx_module *m;
    rx_arena *a;                    /* m->arena */
    rx_arith *ar;                   /* index simplification (loop ranges bound) */
    RX_VEC(rx_te_tensor *) tensors; /* in creation order */
    RX_VEC(const rx_svar *) own;    /* loop variables the builder made */
    bool built;
};

/* True when v is a loop variable made by this builder. */
bool rx_te_owns(const rx_te *te, const rx_svar *v);

#endif
