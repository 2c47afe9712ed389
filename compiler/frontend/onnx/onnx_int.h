/*
 * onnx_int.h — internals of the ONNX importer (not public), shared by onnx_read.c
 * (model, graph, values, tensors), onnx_ops.c (the op table and converters) and
 * onnx_weights.c (safetensors).
 *
 * Every ONNX value name maps to one ox_val. A value is known in up to three forms:
 *   node   the graph value (a VAR bound in the dataflow block, or a CONST), with its
 *          annotation in node->sinfo; built lazily for constants (ox_node);
 *   k      its data when constant (initializers, Constant, folded integer chains);
 *   sym    its elements as symbolic integers when it is a 0-d or 1-d integer tensor
 *          whose values are known at compile time up to symbolic dims (the output of
 *          Shape and everything computed from it): nsym elements, scalar when rank 0.
 * Shape-computing ops compute on `sym`; data ops read `node`. A sym value that is not
 * all literals cannot become a graph value: using it as data is a located error.
 */
#ifndef RELAX_ONNX_INT_H
#define RELAX_ONNX_INT_H

#include "relax/deduce.h"
#include "relax/onnx.h"
#include "relax/op.h"
#include "onnx.pb-c.h"

typedef struct ox_val {
    const char *name;  /* ONNX name (arena) */
    rx_node *node;     /* graph value or NULL (not built yet) */
    rx_const *k;       /* constant data or NULL */
    rx_expr **sym;     /* known integer elements or NULL */
    int32_t nsym;      /* element count of sym */
    int8_t symrank;    /* 0 (scalar), 1, or 2 (a (nsym / symcols, symcols) matrix: F.pad's
                          pads reshaped to pairs and reversed; ox_syms refuses it) */
    int32_t symcols;   /* symrank 2: the inner extent */
    rx_dtype symdt;    /* dtype of the sym tensor */
    rx_expr *fsym;     /* a float scalar known to hold this integer (a Cast of a symbolic
                          size to float: torch.arange(h, dtype=float)'s Range bound) */
    rx_expr **fvec;    /* a float vector known to hold these values (nfvec; integer
                          expressions or RX_E_DIV ratios of them: Upsample-9's scales
                          written as Cast(sizes) / Cast(Shape); ox_fvec) */
    int32_t nfvec;
    bool absent;       /* the empty name: an omitted optional input */
    int8_t depth;      /* subgraph nesting depth that defined it (0: the main graph) */
    int8_t kind;       /* OX_TENSOR, or a sequence / optional resolved at import: */
    int32_t nelems;    /* its elements (an optional: 0 or 1) */
    struct ox_val **elems;
    rx_dtype elemdt;   /* an empty sequence's element dtype (SequenceEmpty) */
    const char *unavail; /* an output the converter could not compute (why): using it is
                            a located error (LSTM's Y_c under run-time sequence_lens) */
} ox_val;
enum { OX_TENSOR, OX_SEQ, OX_OPT };

/* A weight left in its external-data file (params mode): copied when written. */
typedef struct ox_extref {
    rx_const *k;       /* the weight (data NULL) */
    const char *path;  /* file (arena) */
    int64_t off;       /* byte offset */
} ox_extref;

typedef struct ox_ctx {
    rx_module *m;
    rx_arena *a;
    rx_diags *d;
    rx_arith *ar;                 /* arithmetic for folding and deduction */
    int64_t fold_steps;           /* interpreter steps import-time folding may still spend */
    rx_dctx dc;                   /* deduction context for op rules */
    rx_func *fn;                  /* @main */
    const rx_onnx_opts *o;
    int64_t opset;                /* default-domain opset */
    RX_VEC(ox_val *) vals;        /* all values, hashed below */
    int32_t *heads;               /* hash buckets: index + 1 */
    int32_t *next;                /* chain per value: index + 1 */
    int32_t nb, cap_next;
    RX_VEC(rx_binding) binds;     /* the dataflow block being built */
    RX_VEC(const rx_svar *) svars;/* symbolic variables of the signature */
    RX_VEC(rx_node *) params;
    RX_VEC(rx_const *) weights;   /* params mode: the weight parameters' data */
    RX_VEC(ox_extref) ext;        /* params mode: weights still in external files */
    /* the node being converted, for messages */
    const Onnx__NodeProto *node;
    int node_index;
    char where[160];              /* "graph.node[12]", "graph.node[3].body.node[1]" */
    char path[128];               /* the prefix of where: "graph." */
    int depth;                    /* subgraph nesting (onnx_control.c) */
    int64_t unrolled;             /* subgraph nodes converted so far (bounded) */
    struct ox_qdq *qdq;           /* onnx_quant.c: DequantizeLinear results a MatMul can take
                                     in 8 bits (QDQ models) */
} ox_ctx;

/* ---- onnx_read.c (values, the node's I/O) and onnx_tensor.c (tensors, attributes) ---- */

/* Reports an error about the current node: "<where>: <op_type> '<name>' (opset N): msg". */
void ox_err(ox_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The value named name, or NULL. */
ox_val *ox_find(ox_ctx *c, const char *name);
/* A new value named name (must not exist). */
ox_val *ox_define(ox_ctx *c, const char *name);
/* Subgraph scopes (onnx_control.c): a value defined in a subgraph shadows an outer one
 * of the same name until ox_scope_pop(c, mark) drops every value defined since
 * mark = c->vals.n. */
void ox_scope_pop(ox_ctx *c, int mark);
/* Converts the graph attribute `attr` of the current node in a new scope, its inputs
 * bound to ins[0..nins); copies of its outputs in *outs (*nouts). False after an error
 * (onnx_control.c). */
bool ox_subgraph(ox_ctx *c, const char *attr, ox_val **ins, int nins, ox_val ***outs, int *nouts);
/* Converts node n (index idx of the graph at c->path): checks and its converter. */
void ox_convert_node(ox_ctx *c, const Onnx__NodeProto *n, int idx);
/* Input i of the current node, or NULL when absent/omitted. */
ox_val *ox_in(ox_ctx *c, int i);
int ox_nin(ox_ctx *c);           /* inputs of the node, trailing omitted ones dropped */
int ox_nout(ox_ctx *c);
/* The graph value of v (builds constants; a symbolic-only value is an error). */
rx_node *ox_node(ox_ctx *c, ox_val *v);
/* Its annotation (tensor), NULL if unknown or after an error. */
const rx_sinfo *ox_tensor(ox_ctx *c, ox_val *v);
/* The constant of a v known at compile time, or NULL (sym values with all literals
 * are turned into a constant). */
rx_const *ox_const(ox_ctx *c, ox_val *v);
/* Integer elements of a known value (constant or all-literal sym): arena array;
 * returns false when not known. */
bool ox_ints(ox_ctx *c, ox_val *v, int64_t **out, int *n);
/* Symbolic elements of a known integer value (sym, or a constant): false when not known. */
bool ox_syms(ox_ctx *c, ox_val *v, rx_expr ***out, int *n);

/* Binds output i of the current node to the value of a call (deduced here). */
bool ox_out_node(ox_ctx *c, int i, rx_node *call);
/* Output i of the current node is known symbolically / as an existing value. */
void ox_out_sym(ox_ctx *c, int i, rx_expr **sym, int n, int rank, rx_dtype dt);
/* The same for a 2-d known value of rows x cols elements (row-major). */
void ox_out_sym2(ox_ctx *c, int i, rx_expr **sym, int rows, int cols, rx_dtype dt);
void ox_out_alias(ox_ctx *c, int i, ox_val *v);
void ox_out_unavail(ox_ctx *c, int i, const char *why); /* using output i: error `why` */
void ox_out_const(ox_ctx *c, int i, rx_const *k); /* a constant (folded) */
/* Output i (a float scalar node) is known to hold the integer e (ox_val.fsym). */
void ox_out_fsym(ox_ctx *c, int i, rx_expr *e);

/* An op call: op name, args, attributes given as a map (NULL: defaults), deduced and
 * bound to a fresh variable. NULL after an error. */
rx_node *ox_call(ox_ctx *c, const char *op, rx_node **args, int nargs, rx_attr *attrs);
/* Operands of a broadcasting op whose dims no proof relates to another's plain
 * variable dim are match_cast to it (onnx_read.c). */
void ox_unify_bcast(ox_ctx *c, rx_node **args, int nargs, int skip);
/* A fresh shape variable named BASE0, BASE1, ... (the first unused). */
rx_expr *ox_fresh_dim(ox_ctx *c, const char *base);
/* x bound by match_cast to a tensor of its dtype with the n dims d: a data-dependent
 * result (NonZero's count) gets a fresh variable that later shapes use (Shape of a
 * masked_select, a ReduceProd of it). x itself when it is not a tensor. */
rx_node *ox_match_dims(ox_ctx *c, rx_node *x, rx_expr **d, int n);
/* Attribute maps for ox_call. */
rx_attr *ox_amap(ox_ctx *c);
void ox_aset(ox_ctx *c, rx_attr *map, const char *key, rx_attr *v);
rx_attr *ox_aint(ox_ctx *c, int64_t v);
rx_attr *ox_afloat(ox_ctx *c, double v);
rx_attr *ox_abool(ox_ctx *c, bool v);
rx_attr *ox_astr(ox_ctx *c, const char *s);
rx_attr *ox_aints(ox_ctx *c, const int64_t *v, int n);
rx_attr *ox_aexprs(ox_ctx *c, rx_expr **v, int n);
rx_attr *ox_afloats(ox_ctx *c, const double *v, int n);

/* The graph value of constant k. */
rx_node *ox_const_node(ox_ctx *c, rx_const *k);
/* A scalar constant node of dtype dt. */
rx_node *ox_scalar(ox_ctx *c, rx_dtype dt, double v);
/* A new constant of dtype dt and shape (arena), data zeroed. */
rx_const *ox_new_const(ox_ctx *c, rx_dtype dt, int ndim, const int64_t *shape);

/* Attributes of the current node. */
const Onnx__AttributeProto *ox_attr(ox_ctx *c, const char *name);
int64_t ox_attr_i(ox_ctx *c, const char *name, int64_t dflt);
double ox_attr_f(ox_ctx *c, const char *name, double dflt);
const char *ox_attr_s(ox_ctx *c, const char *name, const char *dflt);
/* INTS attribute; *n = -1 when absent. */
const int64_t *ox_attr_ints(ox_ctx *c, const char *name, int *n);
/* TENSOR attribute converted to a constant; NULL when absent or after an error. */
rx_const *ox_attr_tensor(ox_ctx *c, const char *name);

/* Bytes per element (bool: 1). */
size_t ox_esize(rx_dtype dt);
/* The dtype of an ONNX TensorProto.DataType; RX_DT_UNKNOWN when unsupported. */
rx_dtype ox_dtype(int32_t onnx_type);
/* A TensorProto as a constant (payload checked against the dims). */
rx_const *ox_tensor_const(ox_ctx *c, const Onnx__TensorProto *t, const char *where);
/* Element i of a constant as i64 / double. */
int64_t ox_ci(const rx_const *k, int64_t i);
double ox_cf(const rx_const *k, int64_t i);
int64_t ox_numel(const rx_const *k);

/* False (and an error) when the raw model nests messages beyond what protobuf-c's
 * recursive decoder may be given (onnx_wire.c). */
bool ox_wire_nesting_ok(const uint8_t *buf, size_t n, rx_diags *d);

/* ---- onnx_ops.c ---- */

typedef bool (*ox_conv_fn)(ox_ctx *c);
typedef struct ox_opdef {
    const char *op_type;
    ox_conv_fn conv;
    const char *attrs;   /* supported attributes, comma-separated */
} ox_opdef;
const ox_opdef *ox_op_find(const char *op_type);
/* The op of another domain (ai.onnx.preview.training), or NULL. */
const ox_opdef *ox_op_find_in(const char *domain, const char *op_type);


/* ---- onnx_ops.c: helpers shared by the converters ---- */

rx_node *ox_in_node(ox_ctx *c, int i);
rx_node *ox_call1(ox_ctx *c, const char *op, rx_node *x, rx_attr *at);
rx_node *ox_call2(ox_ctx *c, const char *op, rx_node *x, rx_node *y);
int ox_ndim(const rx_node *n);
rx_dtype ox_dtype_of(const rx_node *n);
rx_node *ox_shape_node(ox_ctx *c, rx_expr **dims, int n);
rx_node *ox_reshape(ox_ctx *c, rx_node *x, rx_expr **dims, int n);
/* y when x is bound (among the last 64 bindings) to reshape(y, ...), else NULL: a
 * reshape of x is the same reshape of y, and a reshape of a reshape whose dims the
 * legalizer cannot group (a flatten to an expanded product) indexes through divisions
 * by symbolic sums per element. */
rx_node *ox_reshape_source(ox_ctx *c, rx_node *x);
rx_expr *ox_lit(ox_ctx *c, int64_t v);
rx_expr *ox_simp(ox_ctx *c, rx_expr *e);
rx_expr *ox_prod(ox_ctx *c, rx_expr **d, int lo, int hi);
bool ox_need_dims(ox_ctx *c, const rx_node *x);
int ox_norm_axis(ox_ctx *c, int64_t axis, int nd);
bool ox_get_axes(ox_ctx *c, int idx, int64_t **ax, int *n);
/* x converted to dt (x itself when it has dt already; NULL stays NULL). */
rx_node *ox_astype(ox_ctx *c, rx_node *x, rx_dtype dt);
/* arange(extent) of dtype dt shaped as rank nd with the extent at `axis` and 1s
 * elsewhere: compared with a tensor broadcast along axis it gives one-hot masks. */
rx_node *ox_iota(ox_ctx *c, rx_expr *extent, int axis, int nd, rx_dtype dt);
/* Field i of tuple value t bound to a fresh variable (onnx_nn.c). */
rx_node *ox_field(ox_ctx *c, rx_node *t, int i, const char *name);
/* concat of v[0..n) along axis (NULL if any is NULL). */
rx_node *ox_concat(ox_ctx *c, rx_node **v, int n, int64_t axis);
/* x reversed along axis ax (onnx_nn.c). */
/* strided_slice of x along one axis: elements begin, begin + step, .. before end. */
rx_node *ox_slice1(ox_ctx *c, rx_node *x, int64_t axis, int64_t begin, int64_t end, int64_t step);
rx_node *ox_flip(ox_ctx *c, rx_node *x, int ax);

/* ---- the converters (onnx_elemwise.c, onnx_shape.c, onnx_nn.c) ---- */

bool ox_c_activation(ox_ctx *c);
bool ox_c_math(ox_ctx *c);
bool ox_c_gather_elements(ox_ctx *c);
bool ox_c_cumsum(ox_ctx *c);
bool ox_c_gather_nd(ox_ctx *c);
bool ox_c_reverse_sequence(ox_ctx *c);
bool ox_c_max_unpool(ox_ctx *c);
bool ox_c_qlinear_conv(ox_ctx *c);
bool ox_c_det(ox_ctx *c);
/* onnx_rnn_lens.c: an RNN / GRU / LSTM node with sequence_lens known at run time; x time
 * major (T, B, I), a the 7 nn.rnn operands; Y (T, D, B, H) and Y_h (D, B, H) */
bool ox_rnn_lens(ox_ctx *c, rx_node *x, rx_node **a, const char *mode, bool lbr,
                 const char *dir, int nd, rx_node **y, rx_node **yh);
/* MaxPool's Indices (output 1) of the 2-d pool x -> y, row- or column-major
 * (onnx_pool_indices.c). */
bool ox_pool_indices(ox_ctx *c, rx_node *x, rx_node *y, const int64_t k[2],
                     const int64_t s[2], const int64_t dil[2], const int64_t pads[4],
                     bool col_major);
/* The i32 convolution of inputs xi, wi less their zero points xz, wz (per output
 * channel for the weight), plus the bias input (when >= 0 and present); onnx_nn.c. */
/* The node's convolution of x and w (its window attributes, no bias: onnx_nn.c); the
 * i32 convolution of ConvInteger / QLinearConv as exact f32 blocks, NULL when they do
 * not apply (onnx_quant.c). */
rx_node *ox_conv_window(ox_ctx *c, rx_node *x, rx_node *w);
rx_node *ox_conv_blocked(ox_ctx *c, int xi, int xz, int wi, int wz, int bias);
rx_node *ox_conv_integer(ox_ctx *c, int xi, int xz, int wi, int wz, int bias);
bool ox_c_scatter(ox_ctx *c);
bool ox_c_pad(ox_ctx *c);
bool ox_c_compress(ox_ctx *c);
bool ox_c_top_k(ox_ctx *c);
bool ox_c_nonzero(ox_ctx *c);
bool ox_c_nms(ox_ctx *c);
bool ox_c_lp_pool(ox_ctx *c);
bool ox_c_lp_reduce(ox_ctx *c);
bool ox_c_bit_shift(ox_ctx *c);
bool ox_c_resize(ox_ctx *c);
bool ox_c_unique(ox_ctx *c);
bool ox_c_grid_sample(ox_ctx *c);
bool ox_c_roi_align(ox_ctx *c);
/* Transpose(x, perm) without a transpose when x's elementwise chain starts at permutes
 * that perm undoes (onnx_transpose.c), or NULL. */
rx_node *ox_untranspose(ox_ctx *c, rx_node *x, const int64_t *perm, int nd);
/* The known values of a float vector (ox_val.fvec, a float scalar's fsym, or a small
 * constant of integral values); ox_set_fvec records them on output i. */
bool ox_fvec(ox_ctx *c, ox_val *v, rx_expr ***out, int *n);
void ox_set_fvec(ox_ctx *c, int i, rx_expr **e, int n);
bool ox_c_quantize(ox_ctx *c);
bool ox_c_dynamic_quantize(ox_ctx *c);
bool ox_c_matmul_integer(ox_ctx *c);
/* MatMul of a per-tensor DequantizeLinear result by a dequantized constant 8-bit 2-d
 * weight (static quantization's QDQ form) as the 8-bit product scaled in f32, or NULL
 * when its operands are not that (onnx_quant.c). */
rx_node *ox_qdq_matmul(ox_ctx *c);
rx_node *ox_qdq_product(ox_ctx *c, bool trans_b); /* MatMul's, or Gemm's with transB */
/* onnx_quant.c: the 8-bit convolutions (rt.qconv2d on the CPU): ConvInteger /
 * QLinearConv's i32 product, a QDQ Conv's f32 result; NULL when the form does not
 * apply. onnx_nn.c: the nn.conv2d into i32 they make. */
rx_node *ox_conv_q8(ox_ctx *c, int xi, int xz, int wi, int wz, int bias);
rx_node *ox_qdq_conv(ox_ctx *c);
rx_node *ox_conv_int8(ox_ctx *c, rx_node *x, rx_node *w, int64_t zx);
/* onnx_quant.c: DequantizeLinear / QuantizeLinear arithmetic for the QLinear* contrib
 * ops; onnx_contrib.c: the com.microsoft operators (NULL when not one). */
rx_node *ox_dequantize(ox_ctx *c, rx_node *q, rx_node *s, rx_node *z);
rx_node *ox_quantize_to(ox_ctx *c, rx_node *y, rx_node *s, rx_node *z, rx_dtype dt);
const ox_opdef *ox_contrib_find(const char *op_type);
bool ox_c_hardmax(ox_ctx *c);
bool ox_c_einsum(ox_ctx *c);
bool ox_c_rnn(ox_ctx *c);
bool ox_c_atan(ox_ctx *c);
bool ox_c_one_hot(ox_ctx *c);
bool ox_c_eye_like(ox_ctx *c);
bool ox_c_window(ox_ctx *c);
bool ox_c_depth_space(ox_ctx *c);
bool ox_c_instance_norm(ox_ctx *c);
bool ox_c_group_norm(ox_ctx *c);
bool ox_c_mvn(ox_ctx *c);
bool ox_c_lrn(ox_ctx *c);
bool ox_c_argreduce(ox_ctx *c);
bool ox_c_batch_norm(ox_ctx *c);
bool ox_c_binary(ox_ctx *c);
bool ox_c_cast(ox_ctx *c);
bool ox_c_clip(ox_ctx *c);
bool ox_c_concat(ox_ctx *c);
bool ox_c_constant(ox_ctx *c);
bool ox_c_constant_of_shape(ox_ctx *c);
bool ox_c_conv(ox_ctx *c);
bool ox_c_conv_transpose(ox_ctx *c);
bool ox_c_expand(ox_ctx *c);
bool ox_c_flatten(ox_ctx *c);
bool ox_c_gather(ox_ctx *c);
bool ox_c_gemm(ox_ctx *c);
bool ox_c_global_pool(ox_ctx *c);
bool ox_c_identity(ox_ctx *c);
bool ox_c_layer_norm(ox_ctx *c);
bool ox_c_matmul(ox_ctx *c);
bool ox_c_mod(ox_ctx *c);
bool ox_c_nll_loss(ox_ctx *c);
bool ox_c_sce_loss(ox_ctx *c);
bool ox_c_pool(ox_ctx *c);
bool ox_c_range(ox_ctx *c);
bool ox_c_reduce(ox_ctx *c);
bool ox_c_reshape(ox_ctx *c);
bool ox_c_shape(ox_ctx *c);
bool ox_c_size(ox_ctx *c);
bool ox_c_slice(ox_ctx *c);
bool ox_c_softmax(ox_ctx *c);
bool ox_c_split(ox_ctx *c);
bool ox_c_squeeze(ox_ctx *c);
bool ox_c_tile(ox_ctx *c);
bool ox_c_transpose(ox_ctx *c);
bool ox_c_trilu(ox_ctx *c);
bool ox_c_unary(ox_ctx *c);
bool ox_c_unsqueeze(ox_ctx *c);
bool ox_c_variadic(ox_ctx *c);
bool ox_c_where(ox_ctx *c);
bool ox_c_optimizer(ox_ctx *c);   /* onnx_train.c */
bool ox_c_dft(ox_ctx *c);         /* onnx_signal.c */
bool ox_c_stft(ox_ctx *c);
bool ox_c_mel_weight_matrix(ox_ctx *c);
bool ox_c_if(ox_ctx *c);          /* onnx_control.c */
bool ox_c_loop(ox_ctx *c);
bool ox_c_scan(ox_ctx *c);
/* A Loop over a run-time trip count that is PyTorch's EmbeddingBag (onnx_bag.c): 1 when
 * converted, 0 when the body is not that segment reduction, -1 after an error. */
int ox_loop_bag(ox_ctx *c);
bool ox_c_sequence(ox_ctx *c);    /* onnx_seq.c */
/* Evaluates the current node when it is an elementwise op on constant scalars (its output
 * becomes a constant); false when it is not (onnx_fold.c). */
bool ox_fold_scalar(ox_ctx *c);
bool ox_c_optional(ox_ctx *c);
bool ox_c_sequence_map(ox_ctx *c);
/* The tensors of a graph output in order: a sequence's elements, an optional's element
 * (none when empty), or the value itself (onnx_seq.c). */
bool ox_flatten(ox_ctx *c, ox_val *v, rx_node ***out, int *n);

#endif
