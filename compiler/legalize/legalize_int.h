/*
 * legalize_int.h — internal to the legalize pass: the rule interface and the rule
 * tables of the op groups.
 *
 * A rule turns one deduced op call into tensor expressions (te.h). It declares the
 * call's tensor operands it reads with lg_input (each becomes a placeholder and, in
 * the same order, an argument of the call_tir), builds computes whose shapes are the
 * deduced result dims (lg_out_dims), and hands each result tensor to lg_output, in
 * the order of the call's result (one for a tensor, one per field for a tuple). It
 * returns false after lg_fail (a located "cannot legalize ..." error).
 *
 * Preconditions the driver has checked before a rule runs: the call's result is a
 * tensor or a tuple of tensors with known dtype and dims; an lg_input operand is
 * checked when the rule asks for it. Attributes are read with rx_call_attr (defaults
 * filled).
 *
 * Adding a group is: a file legalize_<group>.c defining `const lg_rule_entry
 * rx_lg_<group>[]` and its count, their declarations below, and one line in
 * LG_GROUPS.
 */
#ifndef RELAX_LEGALIZE_INT_H
#define RELAX_LEGALIZE_INT_H

#include "relax/deduce.h"
#include "relax/pass.h"
#include "relax/te.h"

typedef struct lg_check { /* have == want at run time, else the call must not run */
    rx_expr *have, *want;    /* in the caller's variables */
    const char *what;        /* names the check's variable: VAR_OP_WHAT */
} lg_check;

typedef struct lg_ctx {
    rx_module *m;
    rx_arena *a;             /* m->arena */
    rx_te *te;               /* the builder of this call's function */
    const rx_node *call;     /* the op call (deduced) */
    rx_diags *d;
    RX_VEC(rx_node *) args;  /* call_tir arguments, one per lg_input */
    RX_VEC(rx_te_tensor *) ins;
    RX_VEC(rx_te_tensor *) outs;
    RX_VEC(lg_check) checks; /* run-time checks asked for (lg_require_equal) */
} lg_ctx;

typedef bool (*lg_rule)(lg_ctx *c);

typedef struct lg_rule_entry {
    const char *op; /* registry name ("nn.softmax") */
    lg_rule rule;
} lg_rule_entry;

/* ---- for rules (legalize.c) ---- */
/* Asks for a run-time check that have == want (expressions in the caller's
 * variables), unless they are provably equal: the driver puts a binding
 * `VAR_OP_WHAT = match_cast(R.shape([have]), R.Shape([want]))` before the binding
 * VAR = OP(...), so the VM stops with "match_cast VAR_OP_WHAT: expected (want,), got
 * (have,)" before the kernel could read outside its operand. */
void lg_require_equal(lg_ctx *c, rx_expr *have, rx_expr *want, const char *what);
/* The same for e >= 0 (e == max(e, 0)): a symbolic slice start deduction assumed
 * nonnegative. */
void lg_require_nonneg(lg_ctx *c, rx_expr *e, const char *what);
/* A placeholder for operand i of the call (a tensor of known dims and dtype), named
 * `name`; NULL after an error. Each call adds one call_tir argument. */
rx_te_tensor *lg_input(lg_ctx *c, int i, const char *name);
/* A placeholder for field k of operand i, a tuple of tensors (concat's); the call_tir
 * argument is the tuple node's field itself, or get_item(operand, k) when the operand
 * is a variable (the final deduction binds it to a temporary). NULL after an error. */
rx_te_tensor *lg_input_field(lg_ctx *c, int i, int k, const char *name);
/* Declares the next result tensor. */
void lg_output(lg_ctx *c, rx_te_tensor *t);
/* Reports "cannot legalize <op>: <message>" at the call; returns false. */
bool lg_fail(lg_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The deduced annotation of result k (k = 0 for a tensor result). */
const rx_sinfo *lg_out(const lg_ctx *c, int k);
/* The op's name as "add" and as a C identifier tail "nn_relu" (for names). */
const char *lg_opname(const lg_ctx *c);
const char *lg_ident(const lg_ctx *c);
/* "T_" + lg_ident: the conventional name of a result tensor. */
const char *lg_tname(const lg_ctx *c);
/* Indices into t (of rank t's ndim) for the output position idx (rank nd) under NumPy
 * broadcasting: right-aligned, a literal-1 dim of t reads index 0. */
rx_expr **lg_bcast_index(lg_ctx *c, const rx_te_tensor *t, rx_expr *const *idx, int nd);
/* Normalizes axis against ndim (negative counts from the end); false after lg_fail. */
bool lg_axis(lg_ctx *c, int64_t axis, int ndim, int *out);
/* Indices into t for the row-major flat position f (an i64 index expression) over t's
 * dims, simplified: t[f // (d1*...*dk), ..., f % dk]. */
rx_expr **lg_unravel(lg_ctx *c, const rx_te_tensor *t, rx_expr *f);
/* A SIZE attribute (an integer or a symbolic size in the caller's variables) as an
 * i64 expression; NULL for null. */
rx_expr *lg_attr_size(lg_ctx *c, const rx_attr *a);
/* The integers of an INT / INTS / AXES attribute into out[0..*n) (max entries);
 * *n = -1 for null. */
void lg_attr_ints(const rx_attr *a, int64_t *out, int max, int *n);

/* nn.rnn as one loop function with a serial time loop (legalize_rnn.c): the function
 * (not yet in the module) and the call_tir's `out`, a tuple whose field 0 is the call's
 * result and the rest workspaces; c->args gets the call's 7 operands. False after
 * lg_fail. */
bool lg_rnn(lg_ctx *c, rx_func **fn, rx_sinfo **out);

/* The runtime library forms (legalize_lib.c): lg_lib_form says 1 when call (deduced)
 * becomes a library call (topk / sort / argsort, cumsum in f32/f64/i32/i64,
 * nn.group_norm in f32/f64) on this
 * target, -1 when the op has no form at all there (the sorts on a GPU target), 0 when
 * the rules take it; lg_lib_call builds the call_dps_library with the call's annotation
 * and location. */
int lg_lib_form(const rx_node *call, bool device);
bool lg_lib_only(const char *op); /* topk, sort, argsort: the library form on the CPU */
rx_node *lg_lib_call(rx_module *m, rx_node *call);
/* What compiler/pass/library_qconv_lower.c shares of the rt.qconv2d form: whether call
 * is an nn.conv2d rt.qconv2d takes (its 12 params into p when p), the packed constant of
 * its 8-bit OIHW weight w (depthwise: groups > 1, unpacked), and an i64 (n,) constant
 * of p (a library call's params). */
bool lg_qconv_form(const rx_node *call, int64_t *p);
rx_node *lg_qconv_weight(rx_module *m, const rx_const *w, int64_t groups);
rx_node *lg_i64_const(rx_module *m, const int64_t *p, int n);

/* nn.group_norm's loops (legalize_gnorm.c; in rx_lg_norm's table). */
bool lg_group_norm(lg_ctx *c);

/* ---- the groups ---- */
extern const lg_rule_entry rx_lg_elemwise[]; /* legalize_elemwise.c: unary, binary, where */
extern const int rx_lg_elemwise_count;
extern const lg_rule_entry rx_lg_reduce[];   /* legalize_reduce.c: sum ... argmax, softmax */
extern const int rx_lg_reduce_count;
extern const lg_rule_entry rx_lg_manip[];    /* legalize_manip.c: reshape ... full_like */
extern const int rx_lg_manip_count;
extern const lg_rule_entry rx_lg_linalg[];   /* legalize_linalg.c: matmul */
extern const int rx_lg_linalg_count;
extern const lg_rule_entry rx_lg_norm[];     /* legalize_norm.c: variance, layer/rms/batch norm */
extern const int rx_lg_norm_count;
extern const lg_rule_entry rx_lg_nn[];       /* legalize_nn.c: conv2d, pooling */
extern const int rx_lg_nn_count;
extern const lg_rule_entry rx_lg_slice[];    /* legalize_slice.c: concat split strided_slice take */
extern const int rx_lg_slice_count;
extern const lg_rule_entry rx_lg_index[];    /* legalize_index.c: repeat tile tril triu arange */
extern const int rx_lg_index_count;
extern const lg_rule_entry rx_lg_axis[];     /* legalize_axis.c: gather_elements cumsum */
extern const int rx_lg_axis_count;
extern const lg_rule_entry rx_lg_image[];    /* legalize_image.c: image.resize2d */
extern const int rx_lg_image_count;
extern const lg_rule_entry rx_lg_sort[];     /* legalize_sort.c: topk sort argsort (GPU) */
extern const int rx_lg_sort_count;

#define LG_GROUPS(X)                          \
    X(rx_lg_elemwise, rx_lg_elemwise_count)   \
    X(rx_lg_reduce, rx_lg_reduce_count)       \
    X(rx_lg_manip, rx_lg_manip_count)         \
    X(rx_lg_linalg, rx_lg_linalg_count)       \
    X(rx_lg_norm, rx_lg_norm_count)           \
    X(rx_lg_nn, rx_lg_nn_count)               \
    X(rx_lg_slice, rx_lg_slice_count)         \
    X(rx_lg_index, rx_lg_index_count)         \
    X(rx_lg_axis, rx_lg_axis_count)           \
    X(rx_lg_image, rx_lg_image_count)         \
    X(rx_lg_sort, rx_lg_sort_count)

#endif
