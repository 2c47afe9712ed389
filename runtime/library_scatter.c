/*
 * library_scatter.c — rt.scatter, scatter_elements and scatter_nd on the CPU (compiler/
 * legalize/legalize_lib.c makes the call for f32, f64, i32, i64, and with reduction
 * "update" for bool and u8 data):
 *
 *   rt.scatter (data, indices, updates, params, out): params i64 (3,) = form (0
 *   elements, 1 nd), axis (elements: normalized; nd: unused), reduction (0 update,
 *   1 add, 2 mul, 3 max, 4 min; bool and u8 data: update only). out = data, then each update in the order of its flat
 *   position:
 *     elements: out[i with i[axis] = fix(indices[i])] (op)= updates[i], for every
 *               position i of indices (updates has its shape);
 *     nd:       out[fix(indices[j, 0..m)), ...] (op)= updates[j, ...] for every leading
 *               position j of indices (m its last extent; the slice after the m
 *               leading dims of data).
 *   fix(v) = v + d for v < 0 (d the extent indexed); an index still outside [0, d) fails
 *   the call (SC_RANGE; out is then not defined, as after any failed call).
 *
 * Why a library call: the loop form (legalize_axis.c) is a gather, one reduction over
 * every update per output element, O(outputs x updates); a graph network's scatter_add
 * of E edges into N nodes of F features is N * F * E: GCN's took 7.7 s of 8.3 s where
 * ONNX Runtime loops once over the updates. Here: one copy of data and one pass over
 * the updates, O(outputs + updates), on one thread (the updates may land on one
 * element in any pattern, and "update" keeps the last one in order).
 *
 * elements runs along the last axis of indices: each update's offset is its row's base
 * plus its index times the axis's stride (plus its position along the last axis when
 * that is not the axis), the indices of a run fixed first (SC_RUN at a time), one loop
 * per dtype and reduction, no dispatch per element (the first version fixed each index
 * through a byte copy and called the combine per element: ~2.3 ns per update).
 *
 * Bool data (Hugging Face's top-p warper scatters its sorted mask back to the vocabulary
 * order: sorted_remove.scatter(1, sorted_idx, sorted_remove)) took the loop form,
 * 16 x 32000 x 32000 comparisons, 17 s of zoo6 topp_head's 17 s (ONNX Runtime 0.08 s).
 *
 * Order: ONNX's reference, a serial loop over the updates in flat order, in the data's
 * dtype ("update": the last in flat order wins). The loops (GPU targets) agree exactly
 * on update, max and min; for float add / mul they sum (multiply) the landing updates
 * before combining with the data, so their last bits may differ.
 */
#include "rt_int.h"

#include <string.h>

enum { SC_OK, SC_ARGS, SC_DTYPE, SC_SHAPE, SC_PARAMS, SC_RANGE };

const char *rx_rt_scatter_strerr(int32_t code)
{
    switch (code) {
    case SC_ARGS: return "expects 5 tensors (data, indices, updates, params, out)";
    case SC_DTYPE: return "data, updates and out must share one dtype (f32, f64, i32, i64), "
                          "indices be i32 or i64";
    case SC_SHAPE: return "the shapes of data, indices, updates and out do not agree";
    case SC_PARAMS: return "params must be i64 (form, axis, reduction)";
    case SC_RANGE: return "an index is out of range for the axis it indexes";
    default: return NULL;
    }
}

typedef enum { T_F32, T_F64, T_I32, T_I64, T_B8 } scal;
static const size_t SIZE_OF[] = {4, 8, 4, 8, 1};

static int kind_of(DLDataType d)
{
    if (d.lanes != 1) return -1;
    if (d.code == kDLUInt && (d.bits == 1 || d.bits == 8)) return T_B8; /* bool, u8 */
    if (d.code == kDLFloat) return d.bits == 32 ? T_F32 : d.bits == 64 ? T_F64 : -1;
    if (d.code == kDLInt) return d.bits == 32 ? T_I32 : d.bits == 64 ? T_I64 : -1;
    return -1;
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Index element i of ind (i32 or i64) fixed against extent d; -1 when out of range. */
static int64_t fixed(const DLTensor *ind, int64_t i, int64_t d)
{
    const char *p = (const char *)ind->data + ind->byte_offset;
    int64_t v;
    if (ind->dtype.bits == 32) {
        int32_t w;
        memcpy(&w, p + 4 * i, 4);
        v = w;
    } else {
        memcpy(&v, p + 8 * i, 8);
    }
    if (v < 0) v += d;
    return v >= 0 && v < d ? v : -1;
}

/* at[0 .. n) = fix(indices[i .. i + n)) against extent d; false when one is out of
 * range. */
static bool fix_run(const DLTensor *ind, int64_t i, int64_t n, int64_t d, int64_t *at)
{
    const char *p = (const char *)ind->data + ind->byte_offset;
    bool ok = true;
    if (ind->dtype.bits == 32) {
        const int32_t *w = (const int32_t *)(const void *)p + i;
        for (int64_t e = 0; e < n; e++) {
            int64_t v = w[e] < 0 ? w[e] + d : w[e];
            ok &= v >= 0 && v < d;
            at[e] = v;
        }
    } else {
        const int64_t *w = (const int64_t *)(const void *)p + i;
        for (int64_t e = 0; e < n; e++) {
            int64_t v = w[e] < 0 ? w[e] + d : w[e];
            ok &= v >= 0 && v < d;
            at[e] = v;
        }
    }
    return ok;
}

/* out[b + at[e] * sa + e * se] (op)= upd[u + e] for e in [0, n), in order, in dtype k
 * (T the type, U the one add and multiply run in: integers wrap, as the loops' two's
 * complement arithmetic does). A slice (scatter_nd) is a run with sa = 0. */
#define RUN_LOOP(T, STEP)                                                                 \
    for (int64_t e = 0; e < n; e++) {                                                     \
        T *q = po + b + at[e] * sa + e * se, w = pu[e];                                   \
        STEP;                                                                             \
    }
#define APPLY_RUN(T, U)                                                                   \
    do {                                                                                  \
        T *po = (T *)out;                                                                 \
        const T *pu = (const T *)upd + u;                                                 \
        switch (red) {                                                                    \
        case 0: RUN_LOOP(T, *q = w) break;                                                \
        case 1: RUN_LOOP(T, *q = (T)((U)*q + (U)w)) break;                                \
        case 2: RUN_LOOP(T, *q = (T)((U)*q * (U)w)) break;                                \
        case 3: RUN_LOOP(T, *q = (w > *q || w != w) ? w : *q) break;                      \
        default: RUN_LOOP(T, *q = (w < *q || w != w) ? w : *q) break;                     \
        }                                                                                 \
    } while (0)

static void apply_run(int k, int red, void *out, int64_t b, const int64_t *at, int64_t sa,
                      int64_t se, const void *upd, int64_t u, int64_t n)
{
    switch (k) {
    case T_F32: APPLY_RUN(float, float); break;
    case T_F64: APPLY_RUN(double, double); break;
    case T_I32: APPLY_RUN(int32_t, uint32_t); break;
    case T_I64: APPLY_RUN(int64_t, uint64_t); break;
    default: APPLY_RUN(uint8_t, uint8_t); break; /* "update" only (rx_rt_scatter) */
    }
}
#undef APPLY_RUN
#undef RUN_LOOP

/* scatter_elements: indices and updates of one shape, data's rank. Runs along the last
 * axis of indices: the offset of each update is its row's base plus its index times the
 * axis's stride (plus its position along the last axis when that is not the axis),
 * with the indices of a run fixed first (SC_RUN at a time), and no dispatch per
 * element (file essay). */
enum { SC_RUN = 512 };
static const int64_t ZERO_AT[SC_RUN]; /* a slice's indices: all 0 (times sa = 0) */

static int32_t elements(const DLTensor *ind, const DLTensor *upd, const DLTensor *x,
                        int axis, int k, int red, char *out, const char *u)
{
    int nd = x->ndim;
    if (ind->ndim != nd || upd->ndim != nd || axis < 0 || axis >= nd) return SC_SHAPE;
    for (int d = 0; d < nd; d++)
        if (ind->shape[d] != upd->shape[d] || (d != axis && ind->shape[d] > x->shape[d]))
            return SC_SHAPE;
    int64_t n = numel(ind), len = ind->shape[nd - 1];
    if (n == 0) return SC_OK;
    int64_t sx[RX_RXA_MAX_NDIM], idx[RX_RXA_MAX_NDIM] = {0}, at[SC_RUN];
    sx[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) sx[d] = sx[d + 1] * x->shape[d + 1];
    int64_t sa = sx[axis], se = axis == nd - 1 ? 0 : 1, da = x->shape[axis];
    for (int64_t i = 0; i < n; i += len) {
        int64_t b = 0;
        for (int d = 0; d < nd - 1; d++)
            if (d != axis) b += idx[d] * sx[d];
        for (int64_t e0 = 0; e0 < len; e0 += SC_RUN) {
            int64_t c = len - e0 < SC_RUN ? len - e0 : SC_RUN;
            if (!fix_run(ind, i + e0, c, da, at)) return SC_RANGE;
            apply_run(k, red, out, b + e0 * se, at, sa, se, u, i + e0, c);
        }
        for (int d = nd - 2; d >= 0; d--) { /* the next row of indices */
            if (++idx[d] < ind->shape[d]) break;
            idx[d] = 0;
        }
    }
    return SC_OK;
}

/* scatter_nd: indices (lead..., m), updates (lead..., data's dims after m). */
static int32_t nd_form(const DLTensor *ind, const DLTensor *upd, const DLTensor *x, int k,
                       int red, char *out, const char *u)
{
    int r = ind->ndim;
    if (r < 1) return SC_SHAPE;
    int64_t m = ind->shape[r - 1];
    if (m < 1 || m > x->ndim || upd->ndim != r - 1 + x->ndim - m) return SC_SHAPE;
    int64_t lead = 1, slice = 1;
    for (int d = 0; d < r - 1; d++) {
        if (upd->shape[d] != ind->shape[d]) return SC_SHAPE;
        lead *= ind->shape[d];
    }
    for (int64_t d = m; d < x->ndim; d++) {
        if (upd->shape[r - 1 + d - m] != x->shape[d]) return SC_SHAPE;
        slice *= x->shape[d];
    }
    for (int64_t j = 0; j < lead; j++) {
        int64_t o = 0;
        for (int64_t q = 0; q < m; q++) {
            int64_t at = fixed(ind, j * m + q, x->shape[q]);
            if (at < 0) return SC_RANGE;
            o = o * x->shape[q] + at;
        }
        for (int64_t e0 = 0; e0 < slice; e0 += SC_RUN) /* contiguous: at 0, stride 0 */
            apply_run(k, red, out, o * slice + e0, ZERO_AT, 0, 1, u, j * slice + e0,
                      slice - e0 < SC_RUN ? slice - e0 : SC_RUN);
    }
    return SC_OK;
}

int32_t rx_rt_scatter(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 5) return SC_ARGS;
    const DLTensor *x = args[0], *ind = args[1], *upd = args[2], *p = args[3], *y = args[4];
    if (p->dtype.code != kDLInt || p->dtype.bits != 64 || p->ndim != 1 || p->shape[0] != 3)
        return SC_PARAMS;
    int64_t pv[3];
    memcpy(pv, (const char *)p->data + p->byte_offset, sizeof pv);
    int k = kind_of(x->dtype);
    if (k < 0 || kind_of(upd->dtype) != k || kind_of(y->dtype) != k || ind->dtype.code != kDLInt ||
        (ind->dtype.bits != 32 && ind->dtype.bits != 64) || ind->dtype.lanes != 1)
        return SC_DTYPE;
    if (pv[0] < 0 || pv[0] > 1 || pv[2] < 0 || pv[2] > 4 || (k == T_B8 && pv[2] != 0))
        return SC_PARAMS;
    if (y->ndim != x->ndim) return SC_SHAPE;
    for (int32_t d = 0; d < x->ndim; d++)
        if (y->shape[d] != x->shape[d]) return SC_SHAPE;
    char *out = (char *)y->data + y->byte_offset;
    const char *src = (const char *)x->data + x->byte_offset;
    const char *u = (const char *)upd->data + upd->byte_offset;
    size_t bytes = (size_t)numel(x) * SIZE_OF[k];
    if (out != src) memmove(out, src, bytes);
    return pv[0] == 0 ? elements(ind, upd, x, (int)pv[1], k, (int)pv[2], out, u)
                      : nd_form(ind, upd, x, k, (int)pv[2], out, u);
}
