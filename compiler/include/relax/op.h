/*
 * op.h — the operator registry: TVM's relax.op names, their operands, their typed
 * attributes with defaults, and the annotation deduction rule of each (paper §4.1:
 * "each tensor operator has a registered shape deduction rule").
 *
 * The registry is a constant table (no mutable global state). Attributes are typed by
 * a schema per op; the reader converts a call's JSON attributes through
 * rx_op_bind_attrs, which rejects unknown names and wrong kinds with located errors
 * and fills every absent attribute with its default, so a call's `attrs` array always
 * has one entry per schema entry (RX_A_NULL for "null").
 *
 * Attribute kinds, one line each (stored rx_attr kind in brackets):
 *   BOOL    true/false                       [BOOL]
 *   INT     integer                          [INT]
 *   FLOAT   number                           [FLOAT]
 *   STR     string                           [STR]
 *   DTYPE   dtype name, normalized ("f32")   [STR]
 *   SIZE    integer or symbolic expression   [INT or EXPR]
 *   INTS    list of integers                 [ARRAY of INT]
 *   SIZES   list of sizes                    [ARRAY of INT/EXPR]
 *   AXES    an integer or a list of integers [INT or ARRAY of INT]
 *   SCALAR  a number or bool (clip bounds)   [INT, FLOAT or BOOL]
 *   SPLIT   integer or list of sizes         [INT or ARRAY of INT/EXPR]
 *   FLOATS  list of numbers (resize's roi)   [ARRAY of FLOAT]
 */
#ifndef RELAX_OP_H
#define RELAX_OP_H

#include "relax/ir.h"

typedef enum rx_atkind {
    RX_AT_BOOL, RX_AT_INT, RX_AT_FLOAT, RX_AT_STR, RX_AT_DTYPE, RX_AT_SIZE, RX_AT_INTS,
    RX_AT_SIZES, RX_AT_AXES, RX_AT_SCALAR, RX_AT_SPLIT, RX_AT_FLOATS
} rx_atkind;

typedef struct rx_attr_spec {
    const char *name;  /* TVM's parameter name */
    uint8_t kind;      /* rx_atkind */
    bool nullable;     /* JSON null is accepted */
    const char *dflt;  /* default as a JSON literal ("-1", "[1, 1]", "null", "\"NCHW\"");
                          NULL: the attribute is required */
} rx_attr_spec;

typedef struct rx_dctx rx_dctx; /* deduce.h */

/* Returns the annotation of the call's result, or NULL after reporting at least one
 * error through rx_d_error. The arguments' annotations are set (call->args[i]->sinfo). */
typedef rx_sinfo *(*rx_deduce_fn)(rx_dctx *c, const rx_node *call);

struct rx_op {
    const char *name;           /* "nn.softmax" */
    int8_t min_args, max_args;  /* operand count range */
    const rx_attr_spec *attrs;  /* schema */
    int8_t nattrs;
    rx_deduce_fn deduce;
    uint8_t data_dependent;     /* result shape depends on values (unique, nonzero) */
};

/* Finds an op by name; accepts a "relax." prefix. NULL when unknown. */
const rx_op *rx_op_find(const char *name);
int rx_op_count(void);
const rx_op *rx_op_at(int i);
int rx_op_attr_index(const rx_op *op, const char *name); /* -1 when not in the schema */

/* The attribute `name` of an op call (defaults filled); RX_ASSERTs the name exists. */
const rx_attr *rx_call_attr(const rx_node *call, const char *name);

/* Parses a symbolic size expression written as a string attribute, in the scope of
 * the reader. Reports its own errors; returns NULL on failure. */
typedef rx_expr *(*rx_symparse_fn)(void *ud, const char *text, rx_loc loc);

/* Converts the written attributes `given` (an RX_A_MAP as read from JSON, strings
 * left as STR, or NULL) into the op's attribute array, one entry per schema entry.
 * Errors (unknown name, wrong kind, missing required) go to d, located at the
 * attribute; returns NULL if there were any. */
rx_attr **rx_op_bind_attrs(rx_module *m, const rx_op *op, const rx_attr *given, rx_loc loc,
                           rx_symparse_fn sp, void *ud, rx_diags *d);

#endif
