/*
 * onnx_ops.c — the ONNX op mapping: one table row per op type (its converter and the
 * attributes it understands) and the converters. Contracts in onnx_int.h.
 *
 * A converter reads the current node's inputs (ox_in), emits Relax op calls (ox_call,
 * each deduced on the spot so the next one sees its annotation) and binds the node's
 * outputs. Shape-computing ops (Shape, Size, Gather, Concat, Slice, Unsqueeze, Squeeze,
 * Cast, Add/Sub/Mul/Div, Equal, Where, Range, ConstantOfShape, Reshape of a 1-d value)
 * first try to fold on the symbolic elements of their inputs (ox_syms): a chain from
 * Shape to a Reshape then becomes the reshape's symbolic target shape, and an exported
 * transformer stays dynamic in batch and sequence. When folding does not apply the op
 * is emitted as data.
 *
 * The mapping (ONNX -> Relax), one line per group:
 *   Relu Sigmoid Tanh Exp Log Sqrt Abs Neg Erf Floor Ceil Sin Cos Not Sign Round
 *                     -> nn.relu sigmoid tanh exp log sqrt abs negative erf floor ceil...
 *   Add Sub Mul Div Pow Equal Less Greater LessOrEqual GreaterOrEqual And Or
 *                     -> add subtract multiply divide power equal less ... logical_or
 *   Max Min Sum Mean (variadic)  -> maximum minimum add (chains), divide for Mean
 *   MatMul -> matmul; Gemm -> permute_dims, matmul, multiply, add
 *   Softmax LogSoftmax -> nn.softmax nn.log_softmax (opset < 13: over the flattened
 *                     trailing axes, through reshape)
 *   Reshape Flatten -> reshape; Transpose -> permute_dims; Squeeze Unsqueeze ->
 *                     squeeze expand_dims; Concat -> concat; Gather -> take; Slice ->
 *                     strided_slice; Split -> split; Expand -> broadcast_to; Tile ->
 *                     tile; Where -> where; Cast -> astype; Trilu -> tril/triu
 *   Shape Size Constant ConstantOfShape Range -> folded values, full, arange
 *   ReduceMean/Sum/Max/Min/Prod -> mean sum max min prod; ArgMax ArgMin -> argmax argmin
 *   LayerNormalization -> nn.layer_norm; BatchNormalization -> nn.batch_norm
 *   Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool -> nn.conv2d / nn.conv3d
 *                     (+ add), nn.max_pool2d/3d, nn.avg_pool2d/3d,
 *                     nn.adaptive_avg_pool2d, max; ConvTranspose -> nn.conv2d_transpose /
 *                     nn.conv3d_transpose (1-d ops through 2-d)
 *   Clip LeakyRelu PRelu Elu Selu HardSigmoid HardSwish Softplus Softsign Reciprocal
 *   ThresholdedRelu   -> compositions of the elementwise ops
 *   Identity Dropout  -> the input value
 *   Atan Asin Acos Sinh Cosh Asinh Acosh Atanh Celu Shrink IsInf Hardmax OneHot EyeLike, the window
 *   functions, DepthToSpace SpaceToDepth InstanceNormalization GroupNormalization
 *   MeanVarianceNormalization LRN Einsum Det -> compositions (onnx_compose.c's essay)
 *   ReverseSequence -> gather_elements of where(t < len, len - 1 - t, t)
 *   MaxUnpool -> scatter_elements into zeros (onnx_nn.c)
 *   GatherElements GatherND CumSum BitShift -> gather_elements gather_nd cumsum
 *                     left_shift right_shift; ScatterElements Scatter ScatterND ->
 *                     scatter_elements scatter_nd; Pad -> nn.pad; Compress (constant
 *                     condition) -> take; TopK (k a constant or a known size) -> topk
 *   RNN GRU LSTM      -> unrolled steps of matmul and elementwise ops (onnx_rnn.c)
 *   Resize Upsample   -> image.resize2d; GridSample -> image.grid_sample; Unique -> unique;
 *                     NonZero -> nonzero; NonMaxSuppression ->
 *                     vision.all_class_non_max_suppression; RoiAlign -> take of the four
 *                     bilinear corners per sample point, sum per bin (onnx_roi.c's essay)
 *   QuantizeLinear DequantizeLinear DynamicQuantizeLinear MatMulInteger QLinearMatMul QLinearConv
 *                     -> compositions (onnx_quant.c's essay)
 *   DFT STFT MelWeightMatrix -> matmul with constant cos/sin matrices, a constant
 *                     (onnx_signal.c's essay); Momentum Adagrad Adam of
 *                     ai.onnx.preview.training -> elementwise ops (onnx_train.c)
 *   If Loop Scan      -> the taken branch / unrolled bodies, resolved at import
 *                     (onnx_control.c's essay)
 *   Sequence* ConcatFromSequence SplitToSequence SequenceMap Optional* -> lists of
 *                     values resolved at import (onnx_seq.c's essay)
 *   NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss -> a one-hot mask of the targets
 *                     (equal with arange), where, sum; log_softmax for the latter
 */
#include <string.h>

#include "onnx_int.h"

/* ---------------------------------------------------------------- helpers */

rx_node *ox_in_node(ox_ctx *c, int i) { return ox_node(c, ox_in(c, i)); }

rx_node *ox_call1(ox_ctx *c, const char *op, rx_node *x, rx_attr *at)
{
    return ox_call(c, op, &x, 1, at);
}

rx_node *ox_call2(ox_ctx *c, const char *op, rx_node *x, rx_node *y)
{
    rx_node *a[2] = {x, y};
    return ox_call(c, op, a, 2, NULL);
}

int ox_ndim(const rx_node *n)
{
    return n && n->sinfo && n->sinfo->kind == RX_SI_TENSOR ? n->sinfo->ndim : -1;
}

rx_dtype ox_dtype_of(const rx_node *n)
{
    return n && n->sinfo ? (rx_dtype)n->sinfo->dtype : RX_DT_UNKNOWN;
}

rx_node *ox_shape_node(ox_ctx *c, rx_expr **dims, int n)
{
    rx_node *s = rx_n_shape(c->m, dims, n);
    s->sinfo = rx_si_shape(c->a, n, dims);
    return s;
}

rx_node *ox_reshape(ox_ctx *c, rx_node *x, rx_expr **dims, int n)
{
    return ox_call2(c, "reshape", x, ox_shape_node(c, dims, n));
}

rx_node *ox_reshape_source(ox_ctx *c, rx_node *x)
{
    if (!x || x->kind != RX_N_VAR) return NULL;
    for (int i = c->binds.n - 1, seen = 0; i >= 0 && seen < 64; i--, seen++) {
        const rx_binding *b = &c->binds.items[i];
        if (b->var != x) continue;
        const rx_node *v = b->value;
        if (b->match_cast || v->kind != RX_N_CALL || v->call_kind != RX_CALL_OP ||
            strcmp(v->u.call.op->name, "reshape") != 0 || v->nargs < 1)
            return NULL;
        return v->args[0];
    }
    return NULL;
}

rx_expr *ox_lit(ox_ctx *c, int64_t v) { return rx_e_int(c->a, v); }

rx_expr *ox_simp(ox_ctx *c, rx_expr *e) { return rx_arith_simplify(c->ar, e); }

rx_expr *ox_prod(ox_ctx *c, rx_expr **d, int lo, int hi)
{
    rx_expr *p = ox_lit(c, 1);
    for (int i = lo; i < hi; i++) p = rx_e_binary(c->a, RX_E_MUL, p, d[i]);
    return ox_simp(c, p);
}

bool ox_need_dims(ox_ctx *c, const rx_node *x)
{
    if (x && x->sinfo && x->sinfo->kind == RX_SI_TENSOR && x->sinfo->dims) return true;
    if (x) ox_err(c, "the input's shape must be known (rank and dims)");
    return false;
}

int ox_norm_axis(ox_ctx *c, int64_t axis, int nd)
{
    if (axis < -nd || axis >= nd) {
        ox_err(c, "axis %lld is out of range for rank %d", (long long)axis, nd);
        return -1;
    }
    return (int)(axis < 0 ? axis + nd : axis);
}

/* Axes from the attribute `axes` (older opsets) or from input `idx`; *n = -1 absent. */
bool ox_get_axes(ox_ctx *c, int idx, int64_t **ax, int *n)
{
    int na;
    const int64_t *a = ox_attr_ints(c, "axes", &na);
    if (na >= 0) {
        *ax = RX_NEWN(c->a, int64_t, na ? na : 1);
        if (na) memcpy(*ax, a, sizeof **ax * (size_t)na);
        *n = na;
        return true;
    }
    ox_val *v = ox_in(c, idx);
    if (!v) {
        *n = -1;
        return true;
    }
    if (!ox_ints(c, v, ax, n)) {
        ox_err(c, "axes must be a constant");
        return false;
    }
    return true;
}


rx_node *ox_astype(ox_ctx *c, rx_node *x, rx_dtype dt)
{
    if (!x || ox_dtype_of(x) == dt) return x;
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "dtype", ox_astr(c, rx_dtype_name(dt)));
    return ox_call1(c, "astype", x, m);
}

rx_node *ox_concat(ox_ctx *c, rx_node **v, int n, int64_t axis)
{
    rx_sinfo **si = RX_NEWN(c->a, rx_sinfo *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        if (!v[i]) return NULL;
        si[i] = v[i]->sinfo;
    }
    rx_node *t = rx_n_tuple(c->m, v, n);
    t->sinfo = rx_si_tuple(c->a, si, n);
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, axis));
    return ox_call(c, "concat", &t, 1, m);
}

rx_node *ox_iota(ox_ctx *c, rx_expr *extent, int axis, int nd, rx_dtype dt)
{
    rx_attr *am = ox_amap(c);
    ox_aset(c, am, "end", ox_aexprs(c, &extent, 1)->u.arr.items[0]);
    ox_aset(c, am, "dtype", ox_astr(c, rx_dtype_name(dt)));
    rx_node *r = ox_call(c, "arange", NULL, 0, am);
    if (!r || nd == 1) return r;
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nd);
    for (int i = 0; i < nd; i++) d[i] = i == axis ? extent : ox_lit(c, 1);
    return ox_reshape(c, r, d, nd);
}

/* ---------------------------------------------------------------- the table */

#define UNARY(t) {t, ox_c_unary, ""}
#define BINARY(t) {t, ox_c_binary, "axis,broadcast"} /* both: opsets before 7 */
#define REDUCE(t) {t, ox_c_reduce, "axes,keepdims,noop_with_empty_axes"}

static const ox_opdef ops[] = {
    UNARY("Relu"), UNARY("Sigmoid"), UNARY("Tanh"), UNARY("Exp"), UNARY("Log"), UNARY("Sqrt"),
    UNARY("Abs"), UNARY("Neg"), UNARY("Erf"), UNARY("Floor"), UNARY("Ceil"), UNARY("Sin"),
    UNARY("Cos"), UNARY("Not"), UNARY("Sign"), UNARY("Round"),
    BINARY("Add"), BINARY("Sub"), BINARY("Mul"), BINARY("Div"), BINARY("Pow"), BINARY("Equal"),
    BINARY("Less"), BINARY("Greater"), BINARY("LessOrEqual"), BINARY("GreaterOrEqual"),
    BINARY("And"), BINARY("Or"),
    {"Max", ox_c_variadic, ""}, {"Min", ox_c_variadic, ""}, {"Sum", ox_c_variadic, ""},
    {"Mean", ox_c_variadic, ""},
    {"Identity", ox_c_identity, ""}, {"Dropout", ox_c_identity, "seed,ratio"},
    {"Where", ox_c_where, ""}, {"Cast", ox_c_cast, "to,saturate"}, {"Clip", ox_c_clip, "min,max"},
    {"LeakyRelu", ox_c_activation, "alpha"}, {"PRelu", ox_c_activation, ""},
    {"Elu", ox_c_activation, "alpha"}, {"Selu", ox_c_activation, "alpha,gamma"},
    {"HardSigmoid", ox_c_activation, "alpha,beta"}, {"HardSwish", ox_c_activation, ""},
    {"Softplus", ox_c_activation, ""}, {"Softsign", ox_c_activation, ""},
    {"Reciprocal", ox_c_activation, ""}, {"ThresholdedRelu", ox_c_activation, "alpha"},
    {"MatMul", ox_c_matmul, ""}, {"Gemm", ox_c_gemm, "alpha,beta,broadcast,transA,transB"},
    {"Softmax", ox_c_softmax, "axis"}, {"LogSoftmax", ox_c_softmax, "axis"},
    {"Shape", ox_c_shape, "start,end"}, {"Size", ox_c_size, ""},
    {"Constant", ox_c_constant, "value,value_float,value_int,value_floats,value_ints"},
    {"Reshape", ox_c_reshape, "allowzero"}, {"Flatten", ox_c_flatten, "axis"},
    {"Transpose", ox_c_transpose, "perm"}, {"Squeeze", ox_c_squeeze, "axes"},
    {"Unsqueeze", ox_c_unsqueeze, "axes"}, {"Concat", ox_c_concat, "axis"},
    {"Gather", ox_c_gather, "axis"}, {"Slice", ox_c_slice, "starts,ends,axes"},
    {"Split", ox_c_split, "axis,split"}, {"Expand", ox_c_expand, ""}, {"Tile", ox_c_tile, ""},
    {"Trilu", ox_c_trilu, "upper"}, {"ConstantOfShape", ox_c_constant_of_shape, "value"},
    {"Range", ox_c_range, ""},
    {"NegativeLogLikelihoodLoss", ox_c_nll_loss, "ignore_index,reduction"},
    {"SoftmaxCrossEntropyLoss", ox_c_sce_loss, "ignore_index,reduction"},
    REDUCE("ReduceMean"),
    REDUCE("ReduceSum"),
    REDUCE("ReduceMax"),
    REDUCE("ReduceMin"),
    REDUCE("ReduceProd"),
    REDUCE("ReduceL1"),
    REDUCE("ReduceL2"),
    REDUCE("ReduceLogSum"),
    REDUCE("ReduceLogSumExp"),
    REDUCE("ReduceSumSquare"),
    {"Xor", ox_c_binary, "axis,broadcast"}, {"Tan", ox_c_activation, ""}, {"Mod", ox_c_mod, "fmod"},
    {"CastLike", ox_c_cast, "saturate"}, {"IsNaN", ox_c_activation, ""},
    {"ArgMax", ox_c_argreduce, "axis,keepdims,select_last_index"},
    {"ArgMin", ox_c_argreduce, "axis,keepdims,select_last_index"},
    {"LayerNormalization", ox_c_layer_norm, "axis,epsilon,stash_type"},
    {"ReverseSequence", ox_c_reverse_sequence, "batch_axis,time_axis"},
    {"MaxUnpool", ox_c_max_unpool, "kernel_shape,pads,strides"}, {"Det", ox_c_det, ""},
    {"BatchNormalization", ox_c_batch_norm, "epsilon,is_test,momentum,training_mode,spatial"},
    {"Conv", ox_c_conv, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"ConvInteger", ox_c_conv, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"ConvTranspose", ox_c_conv_transpose,
     "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides"},
    {"MaxPool", ox_c_pool, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides"},
    {"AveragePool", ox_c_pool, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides"},
    {"GlobalAveragePool", ox_c_global_pool, ""}, {"GlobalMaxPool", ox_c_global_pool, ""},
    {"LpPool", ox_c_lp_pool, "auto_pad,ceil_mode,dilations,kernel_shape,p,pads,strides"},
    {"GlobalLpPool", ox_c_lp_reduce, "p"}, {"LpNormalization", ox_c_lp_reduce, "axis,p"},
    {"Sinh", ox_c_math, ""}, {"Cosh", ox_c_math, ""}, {"Asinh", ox_c_math, ""},
    {"Acosh", ox_c_math, ""}, {"Atanh", ox_c_math, ""}, {"Celu", ox_c_math, "alpha"},
    {"Shrink", ox_c_math, "bias,lambd"}, {"IsInf", ox_c_math, "detect_negative,detect_positive"},
    {"Atan", ox_c_atan, ""}, {"Asin", ox_c_atan, ""}, {"Acos", ox_c_atan, ""},
    {"Hardmax", ox_c_hardmax, "axis"}, {"Einsum", ox_c_einsum, "equation"},
#define RNN_ATTRS "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout"
    {"RNN", ox_c_rnn, RNN_ATTRS}, {"GRU", ox_c_rnn, RNN_ATTRS ",linear_before_reset"},
    {"LSTM", ox_c_rnn, RNN_ATTRS ",input_forget"}, {"OneHot", ox_c_one_hot, "axis"},
    {"EyeLike", ox_c_eye_like, "dtype,k"},
    {"HannWindow", ox_c_window, "output_datatype,periodic"},
    {"HammingWindow", ox_c_window, "output_datatype,periodic"},
    {"BlackmanWindow", ox_c_window, "output_datatype,periodic"},
    {"DepthToSpace", ox_c_depth_space, "blocksize,mode"},
    {"SpaceToDepth", ox_c_depth_space, "blocksize"},
    {"InstanceNormalization", ox_c_instance_norm, "epsilon"},
    {"GroupNormalization", ox_c_group_norm, "num_groups,epsilon,stash_type"},
    {"MeanVarianceNormalization", ox_c_mvn, "axes"},
    {"LRN", ox_c_lrn, "alpha,beta,bias,size"},
    {"GatherElements", ox_c_gather_elements, "axis"}, {"GatherND", ox_c_gather_nd, "batch_dims"},
    {"ScatterElements", ox_c_scatter, "axis,reduction"}, {"Scatter", ox_c_scatter, "axis"},
    {"ScatterND", ox_c_scatter, "reduction"}, {"Pad", ox_c_pad, "mode,pads,paddings,value"},
    {"NonZero", ox_c_nonzero, ""}, {"NonMaxSuppression", ox_c_nms, "center_point_box"}, {"Compress", ox_c_compress, "axis"}, {"TopK", ox_c_top_k, "axis,k,largest,sorted"},
    {"CumSum", ox_c_cumsum, "exclusive,reverse"}, {"BitShift", ox_c_bit_shift, "direction"},
    {"Resize", ox_c_resize, "coordinate_transformation_mode,cubic_coeff_a,exclude_outside,"
                            "extrapolation_value,mode,nearest_mode"},
    {"Upsample", ox_c_resize, "mode,scales"}, {"Unique", ox_c_unique, "axis,sorted"},
    {"GridSample", ox_c_grid_sample, "align_corners,mode,padding_mode"},
    {"RoiAlign", ox_c_roi_align, "coordinate_transformation_mode,mode,output_height,output_width,"
                                 "sampling_ratio,spatial_scale"},
    {"QuantizeLinear", ox_c_quantize, "axis"}, {"DequantizeLinear", ox_c_quantize, "axis"},
    {"DynamicQuantizeLinear", ox_c_dynamic_quantize, ""},
    {"QLinearConv", ox_c_qlinear_conv, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"MatMulInteger", ox_c_matmul_integer, ""}, {"QLinearMatMul", ox_c_matmul_integer, ""},
    {"DFT", ox_c_dft, "axis,inverse,onesided"}, {"STFT", ox_c_stft, "onesided"},
    {"MelWeightMatrix", ox_c_mel_weight_matrix, "output_datatype"},
    {"If", ox_c_if, "then_branch,else_branch"}, {"Loop", ox_c_loop, "body"},
    {"Scan", ox_c_scan, "body,directions,num_scan_inputs,scan_input_axes,scan_input_directions,"
                        "scan_output_axes,scan_output_directions"},
    {"SequenceConstruct", ox_c_sequence, ""}, {"SequenceEmpty", ox_c_sequence, "dtype"},
    {"SequenceAt", ox_c_sequence, ""}, {"SequenceInsert", ox_c_sequence, ""},
    {"SequenceErase", ox_c_sequence, ""}, {"SequenceLength", ox_c_sequence, ""},
    {"ConcatFromSequence", ox_c_sequence, "axis,new_axis"},
    {"SplitToSequence", ox_c_sequence, "axis,keepdims"}, {"SequenceMap", ox_c_sequence_map, "body"},
    {"Optional", ox_c_optional, "type"}, {"OptionalHasElement", ox_c_optional, ""},
    {"OptionalGetElement", ox_c_optional, ""},
};

const ox_opdef *ox_op_find(const char *op_type)
{
    for (int i = 0; i < RX_COUNTOF(ops); i++)
        if (!strcmp(ops[i].op_type, op_type)) return &ops[i];
    return NULL;
}

/* ai.onnx.preview.training (onnx_train.c). */
static const ox_opdef training_ops[] = {
    {"Momentum", ox_c_optimizer, "alpha,beta,mode,norm_coefficient"},
    {"Adagrad", ox_c_optimizer, "decay_factor,epsilon,norm_coefficient"},
    {"Adam", ox_c_optimizer, "alpha,beta,epsilon,norm_coefficient,norm_coefficient_post"},
};

const ox_opdef *ox_op_find_in(const char *domain, const char *op_type)
{
    if (!strcmp(domain, "com.microsoft")) return ox_contrib_find(op_type); /* onnx_contrib.c */
    if (strcmp(domain, "ai.onnx.preview.training")) return NULL;
    for (int i = 0; i < RX_COUNTOF(training_ops); i++)
        if (!strcmp(training_ops[i].op_type, op_type)) return &training_ops[i];
    return NULL;
}
