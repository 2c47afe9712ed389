/*
 * builtin.h — the VM's built-in functions (CALL_BUILTIN), internal to the runtime.
 *
 * A built-in is a host function the compiler calls by name for what no generated
 * kernel can do because the result's shape depends on the input's values (paper
 * Figure 3: unique; nonzero). Unlike kernels and library functions (destination
 * passing), a built-in allocates its result itself, from the context's pool, so the
 * bytes count in the call's peak. The table is constant; names are resolved when the
 * bytecode is verified (an unknown name fails the load), and the loader stores each
 * name's index in the module (rx_rt_module.builtins), so a call costs no lookup.
 *
 *   unique(x)   1-D tensor of the sorted distinct elements of x (any rank, flattened;
 *               TVM's default sorted=true without the extra outputs).
 *   unique(x, sorted, return_index, return_inverse, return_counts[, axis])
 *               the full op (ints; nonzero = true). Without axis x is flattened; with
 *               it (in [-ndim, ndim)) the unique values are the distinct slices along
 *               it, compared lexicographically (NumPy's axis). Results: the values
 *               (1-D, or x's shape with the axis' extent the number of uniques), then
 *               as requested, each 1-D i64: index (the first occurrence of each
 *               unique), inverse (for each element / slice of x its unique's position;
 *               flattened, as TVM's 1-D annotation), counts. A tensor when nothing
 *               extra is requested, else a tuple in that (NumPy's) order.
 *               sorted=true orders ascending; false by first occurrence.
 *               Floats compare numerically with every NaN after +inf; without axis
 *               all NaNs collapse into one (NumPy >= 1.24's equal_nan=True), with axis
 *               a slice holding a NaN is never equal to another (NumPy compares
 *               slices with ==). -0.0 equals 0.0; the first occurrence is kept.
 *               dtypes: bool, i8..i64, u8..u64, f16, bf16, f32, f64.
 *   nonzero(x)  i64 tensor (ndim, count): row d holds the index along dim d of each
 *               nonzero element in row-major order (NumPy's nonzero stacked; a 0-d x
 *               reads as a 1-element 1-D tensor). Float -0.0 is zero, NaN nonzero.
 *   nms(center_point_box, boxes, scores[, max_output_boxes_per_class[, iou_threshold
 *       [, score_threshold]]])
 *               ONNX NonMaxSuppression (builtin_nms.c): boxes (B, N, 4) and scores
 *               (B, C, N), both f32 or both f64; the optional arguments one-element
 *               tensors (i64 / i32 count, default 0: nothing selected; float
 *               thresholds, iou default 0, in [0, 1], no score threshold when absent:
 *               a box passes when its score is greater). Result i64 (n, 3): (batch,
 *               class, box) per selected box, by batch, class, then descending score.
 */
#ifndef RX_RT_BUILTIN_H
#define RX_RT_BUILTIN_H

#include "rt_int.h"

/* Index of the built-in called `name`, or -1. */
int rx_vm_builtin_find(const char *name);

/* Calls built-in `idx` on args[0..nargs). On success returns 0 with *out holding a new
 * value (the caller owns its reference); on failure -1 with a message in err (without
 * the function-name prefix the VM adds). */
int rx_vm_builtin_call(int idx, rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs,
                       rx_vm_value *out, rx_rt_err *err);

/* For the built-ins' files: the element count of t; a new dense tensor of the pool
 * (NULL with err set, `who` naming the built-in); nms (builtin_nms.c). */
int64_t rx_bi_numel(const DLTensor *t);
rx_rt_tensor *rx_bi_new_tensor(rx_rt_ctx *ctx, const char *who, DLDataType dt, int32_t ndim,
                               const int64_t *shape, rx_rt_err *err);
int rx_bi_nms(rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs, rx_vm_value *out,
              rx_rt_err *err);

#endif
