/*
 * op_int.h — internal to the op library: the op groups that make up the registry.
 *
 * Each group file (op_elemwise.c, op_linalg.c, ...) defines one constant array of
 * rx_op and its length; registry.c concatenates the groups, in the order of
 * RX_OP_GROUPS below, into the table that rx_op_find and rx_op_at see. Adding a
 * group is two lines: its extern declarations here and its entry in RX_OP_GROUPS.
 */
#ifndef RELAX_OP_INT_H
#define RELAX_OP_INT_H

#include "relax/deduce.h"

extern const rx_op rx_ops_elemwise[]; /* op_elemwise.c: unary, binary, compare, where */
extern const int rx_ops_elemwise_count;
extern const rx_op rx_ops_linalg[];   /* op_linalg.c: matmul */
extern const int rx_ops_linalg_count;
extern const rx_op rx_ops_nn[];       /* op_nn.c: softmax, norms, conv2d, pools */
extern const int rx_ops_nn_count;
extern const rx_op rx_ops_manip[];    /* op_manip.c: reshape, permute_dims, concat, ... */
extern const int rx_ops_manip_count;
extern const rx_op rx_ops_reduce[];   /* op_reduce.c: sum, mean, argmax, ... */
extern const int rx_ops_reduce_count;
extern const rx_op rx_ops_create[];   /* op_create.c: zeros, full, arange, ... */
extern const int rx_ops_create_count;
extern const rx_op rx_ops_misc[];     /* op_misc.c: unique, nonzero, shape_of, ... */
extern const int rx_ops_misc_count;
extern const rx_op rx_ops_axis[];     /* op_axis.c: gather_elements, cumsum */
extern const int rx_ops_axis_count;
extern const rx_op rx_ops_image[];    /* op_image.c: image.resize2d */
extern const int rx_ops_image_count;
extern const rx_op rx_ops_sort[];     /* op_sort.c: topk, sort, argsort */
extern const int rx_ops_sort_count;

/* The groups in registry order: X(array, count). */
#define RX_OP_GROUPS(X)                           \
    X(rx_ops_elemwise, rx_ops_elemwise_count)     \
    X(rx_ops_linalg, rx_ops_linalg_count)         \
    X(rx_ops_nn, rx_ops_nn_count)                 \
    X(rx_ops_manip, rx_ops_manip_count)           \
    X(rx_ops_reduce, rx_ops_reduce_count)         \
    X(rx_ops_create, rx_ops_create_count)         \
    X(rx_ops_misc, rx_ops_misc_count)             \
    X(rx_ops_axis, rx_ops_axis_count)             \
    X(rx_ops_image, rx_ops_image_count)           \
    X(rx_ops_sort, rx_ops_sort_count)

/* Schema entry shorthands for the group files. */
#define RX_ATTR_REQ(nm, k) { (nm), (k), false, NULL }          /* required */
#define RX_ATTR_DEF(nm, k, d) { (nm), (k), false, (d) }        /* with a default */
#define RX_ATTR_NUL(nm, k, d) { (nm), (k), true, (d) }         /* nullable, default */
/* An op entry's schema fields from a schema array: `{"sum", 1, 1, RX_ATTRS(s), ...}`. */
#define RX_ATTRS(a) (a), (int8_t)RX_COUNTOF(a)

/* ---- helpers for the rules (op_deduce.c): the direction is op -> deduce. The rules
 * use the deduction context and the lattice (deduce.h); deduction reaches the rules
 * only through the registry's rx_op.deduce pointers and never includes this file. */
void rx_d_error(rx_dctx *c, const rx_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The op's name for messages. */
const char *rx_d_opname(const rx_node *call);
/* Argument i as a tensor annotation, or NULL after an error ("nn.softmax: argument 0
 * (x) must be a tensor, found Tuple[...]"). */
const rx_sinfo *rx_d_tensor_arg(rx_dctx *c, const rx_node *call, int i);
/* Normalizes axis (negative counts from the end) against ndim; error when out of range. */
bool rx_d_axis(rx_dctx *c, const rx_node *call, int64_t axis, int ndim, int *out);
/* NumPy broadcasting of two dims lists (right-aligned). A pair of dims is compatible
 * when proved equal or one is the literal 1; two different literals are an error; any
 * other pair (n vs m) cannot be decided, and then, as in TVM, the whole result has
 * known ndim and unknown dims. A dims pointer may be NULL (unknown dims) and an ndim
 * -1 (unknown). Returns the result dims (arena) with *ndim_out set; or NULL with
 * *ndim_out >= -1 when the dims (or the ndim) are unknown, which is not an error; or
 * NULL with *ndim_out == -2 after reporting an error. */
rx_expr **rx_d_broadcast(rx_dctx *c, const rx_node *call, rx_expr **x, int nx, rx_expr **y,
                         int ny, int *ndim_out);
/* Simplified copy of an expression (through c->ar). */
rx_expr *rx_d_simplify(rx_dctx *c, rx_expr *e);
/* Product of dims, simplified (1 for ndim 0). */
rx_expr *rx_d_numel(rx_dctx *c, rx_expr **dims, int ndim);
/* The dtype result of combining two operand dtypes: equal, or one unknown → the other;
 * mismatch is an error. */
bool rx_d_same_dtype(rx_dctx *c, const rx_node *call, rx_dtype x, rx_dtype y, rx_dtype *out);
/* An integer attribute value (INT, or EXPR when symbolic) as an expression. */
rx_expr *rx_d_attr_size(rx_dctx *c, const rx_attr *a);

/* ---- helpers for the group files (op_util.c) ---- */
/* Reports "<op>: <message>" (the message formatted from fmt) as an error located at
 * the call, and returns NULL so a rule can end with `return rx_op_fail(...)`. */
rx_sinfo *rx_op_fail(rx_dctx *c, const rx_node *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "(n, 4)", "(3,)", "()"; unknown dims print as "?" per dim, unknown ndim as "(...)".
 * The string is in arena a. */
char *rx_op_dims_str(rx_arena *a, rx_expr **dims, int ndim);
/* Reads the list attribute `name` of the call (INTS or AXES: an INT is a list of one)
 * into out[0..*n). Returns false after an error when it has more than `max` entries;
 * a null value gives *n = -1. */
bool rx_op_int_list(rx_dctx *c, const rx_node *call, const char *name, int64_t *out,
                    int max, int *n);
/* The dims of shape operand i (a SHAPE node or anything annotated Shape; op_manip.c);
 * *dims is NULL when unknown. False after an error. */
bool rx_op_shape_arg(rx_dctx *c, const rx_node *call, int i, int *ndim, rx_expr ***dims);
/* A tensor annotation with x's ndim and dims (simplified) and dtype dt. */
rx_sinfo *rx_op_like(rx_dctx *c, const rx_sinfo *x, rx_dtype dt);

#endif
