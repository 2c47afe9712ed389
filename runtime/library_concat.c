/*
 * library_concat.c — rt.concat, a concat whose fields are already in memory, with an
 * optional per-channel affine and relu on the way (compiler/pass/library_concat_lower.c
 * makes the call):
 *
 *   rt.concat (params, [scale,] [shift,] x_0, .., x_{f-1}, y): params i64 (2,) = the
 *   axis a (normalized) and flags (1 scale, 2 shift, 4 relu); every x_k and y dense, one
 *   dtype of whole bytes, one rank; y's extents equal every field's but at a, where y's
 *   is the sum of theirs. y = the fields one after another along a; with flags, f32 only:
 *   y = max(concat * scale[c] + shift[c], 0) (each part when its flag is set; c the
 *   index along a; scale and shift f32 of y's extent at a elements).
 *
 * Row-major, y is O = prod(y's extents before a) rows, each the fields' chunks one
 * after another: chunk_k = x_k's extent at a times the extents after a, in bytes, read
 * from x_k at o * chunk_k for row o. The call splits y's bytes, not its rows, evenly
 * over the threads (each range starting on a 64-byte line, so no two threads write one
 * line), and each thread copies the pieces of the chunks its range covers with memcpy,
 * or, with flags, in runs of one channel (the extents after a: one scale and shift per
 * run): every element of y written once, from the one source element the definition
 * gives it; work balanced whatever the number of rows (a batch of one: one row of f
 * chunks, the case the generated concat ran on one thread when the batch was symbolic)
 * and whatever the fields' sizes. Below COPY_MIN bytes per thread fewer threads start
 * (one for a small concat: no region at all). The affine is a product then a sum,
 * each rounded (C11 mode contracts no multiply-add).
 *
 * Fields in place. The memory plan (compiler/vmgen/plan.c, Step 0) makes a field's
 * producer write straight into its place in y when y is one row (the extents before
 * the axis are 1): such a field's bytes are then the very bytes it would be copied to,
 * and the call skips them (memcpy onto itself is not made); with flags they are
 * rewritten in place, each element read before it is written. A call whose fields are
 * all in place and has no flags returns at once.
 *
 * Cost: y's bytes read once and written once, O(f + bytes / thread); no scratch; a field
 * in place costs nothing.
 */
#include "rt_int.h"

#include <string.h>

enum { CC_OK, CC_ARGS, CC_DTYPE, CC_SHAPE, CC_PARAMS };
enum { MAX_FIELDS = 1024, LINE = 64 };
#define COPY_MIN ((int64_t)64 * 1024) /* bytes worth a thread of their own */

const char *rx_rt_concat_strerr(int32_t code)
{
    switch (code) {
    case CC_ARGS: return "expects params, the scale and shift its flags name, 1 to 1024 fields "
                         "and the output (params, [scale,] [shift,] x.., y)";
    case CC_DTYPE: return "the fields and the output must share one dtype of whole bytes, "
                          "params be i64";
    case CC_SHAPE: return "shape mismatch (fields and output of one rank, extents equal "
                          "but on the axis, where the output's is the fields' sum)";
    case CC_PARAMS: return "params must be i64 (2,): an axis within the output's rank and flags "
                           "(1 scale, 2 shift, 4 relu; f32 only), scale and shift f32 of the "
                           "output's extent on the axis";
    default: return NULL;
    }
}

typedef struct concat {
    char *y;                     /* the output's bytes */
    const char *x[MAX_FIELDS];   /* each field's bytes */
    int64_t chunk[MAX_FIELDS];   /* bytes of field k in one row */
    int64_t row;                 /* bytes of one row of y: the chunks' sum */
    int64_t total;               /* y's bytes */
    int nf;
    int64_t coff[MAX_FIELDS];    /* field k's first index along the axis */
    int64_t inner;               /* bytes of one index along the axis (a run) */
    const float *scale, *shift;  /* flags 1 and 2, or NULL */
    bool relu;                   /* flag 4 */
} concat;

static bool same_dtype(DLDataType a, DLDataType b)
{
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* n bytes of field k at byte in of its row o to dst: copied, or through the epilogue
 * in runs of one channel. */
static void emit(const concat *c, int k, int64_t o, int64_t in, int64_t n, char *dst)
{
    const char *src = c->x[k] + o * c->chunk[k] + in;
    if (!c->scale && !c->shift && !c->relu) {
        if (src != dst) memcpy(dst, src, (size_t)n); /* equal: the field is in place */
        return;
    }
    while (n > 0) {
        int64_t ch = c->coff[k] + in / c->inner, run = c->inner - in % c->inner;
        if (run > n) run = n;
        float s = c->scale ? c->scale[ch] : 1.0f, b = c->shift ? c->shift[ch] : 0.0f;
        const float *x = (const float *)(const void *)src;
        float *y = (float *)(void *)dst;
        int64_t m = run / 4;
        if (c->scale && c->shift && c->relu)
            for (int64_t i = 0; i < m; i++) {
                float v = x[i] * s + b;
                y[i] = v > 0.0f ? v : 0.0f;
            }
        else
            for (int64_t i = 0; i < m; i++) {
                float v = x[i];
                if (c->scale) v = v * s;
                if (c->shift) v = v + b;
                y[i] = c->relu ? (v > 0.0f ? v : 0.0f) : v;
            }
        src += run, dst += run, in += run, n -= run;
    }
}

/* Copies y's bytes [lo, hi) from the fields. */
static void copy_range(const concat *c, int64_t lo, int64_t hi)
{
    if (lo >= hi || c->row == 0) return;
    int64_t o = lo / c->row, off = lo % c->row, pos = lo;
    int k = 0;
    int64_t start = 0; /* field k's first byte in a row */
    while (start + c->chunk[k] <= off) start += c->chunk[k++];
    while (pos < hi) {
        int64_t in = off - start, n = c->chunk[k] - in;
        if (n > hi - pos) n = hi - pos;
        emit(c, k, o, in, n, c->y + pos);
        pos += n;
        off += n;
        if (off == start + c->chunk[k]) { /* the next field, or the next row's first */
            start += c->chunk[k++];
            if (k == c->nf) {
                k = 0, start = 0, off = 0, o++;
            }
            while (k < c->nf && c->chunk[k] == 0) k++; /* empty fields */
            if (k == c->nf) return;                    /* only empty fields remain */
        }
    }
}

/* Thread t's part: [t * total / n, (t + 1) * total / n), both ends on a line. */
static void concat_job(void *ud, int t, int n)
{
    const concat *c = ud;
    int64_t lo = c->total / n * t + c->total % n * t / n;
    int64_t hi = c->total / n * (t + 1) + c->total % n * (t + 1) / n;
    lo = t == 0 ? 0 : (lo + LINE - 1) / LINE * LINE;
    hi = t == n - 1 ? c->total : (hi + LINE - 1) / LINE * LINE;
    if (lo > c->total) lo = c->total;
    if (hi > c->total) hi = c->total;
    copy_range(c, lo, hi);
}

static char *bytes_of(const DLTensor *t)
{
    return (char *)t->data + t->byte_offset;
}

int32_t rx_rt_concat(DLTensor *const *args, int32_t nargs)
{
    if (nargs < 3) return CC_ARGS;
    const DLTensor *pr = args[0], *y = args[nargs - 1];
    if (pr->dtype.code != kDLInt || pr->dtype.bits != 64 || pr->dtype.lanes != 1)
        return CC_DTYPE;
    if (pr->ndim != 1 || pr->shape[0] != 2) return CC_PARAMS;
    int64_t a, flags;
    memcpy(&a, bytes_of(pr), sizeof a);
    memcpy(&flags, bytes_of(pr) + 8, sizeof flags);
    if (a < 0 || a >= y->ndim || flags < 0 || flags > 7) return CC_PARAMS;
    int nx = (flags & 1) + ((flags >> 1) & 1); /* scale, shift */
    if (nargs - 2 - nx < 1 || nargs - 2 - nx > MAX_FIELDS) return CC_ARGS;
    if (y->dtype.bits == 0 || y->dtype.bits % 8 || y->dtype.lanes != 1) return CC_DTYPE;
    if (flags && (y->dtype.code != kDLFloat || y->dtype.bits != 32)) return CC_PARAMS;
    concat c;
    memset(&c, 0, sizeof c);
    c.nf = nargs - 2 - nx;
    c.y = bytes_of(y);
    c.relu = (flags & 4) != 0;
    for (int i = 0; i < nx; i++) {
        const DLTensor *v = args[1 + i];
        int64_t n = 1;
        for (int32_t d = 0; d < v->ndim; d++) n *= v->shape[d];
        if (v->dtype.code != kDLFloat || v->dtype.bits != 32 || v->dtype.lanes != 1 ||
            n != y->shape[a])
            return CC_PARAMS;
        if (i == 0 && (flags & 1)) c.scale = (const float *)(const void *)bytes_of(v);
        else c.shift = (const float *)(const void *)bytes_of(v);
    }
    int64_t inner = y->dtype.bits / 8, outer = 1, sum = 0;
    for (int32_t d = 0; d < y->ndim; d++) {
        if (d < a) outer *= y->shape[d];
        if (d > a) inner *= y->shape[d];
    }
    c.inner = inner;
    for (int k = 0; k < c.nf; k++) {
        const DLTensor *x = args[1 + nx + k];
        if (!same_dtype(x->dtype, y->dtype)) return CC_DTYPE;
        if (x->ndim != y->ndim) return CC_SHAPE;
        for (int32_t d = 0; d < y->ndim; d++)
            if (d != a && x->shape[d] != y->shape[d]) return CC_SHAPE;
        c.coff[k] = sum;
        sum += x->shape[a];
        c.x[k] = bytes_of(x);
        c.chunk[k] = x->shape[a] * inner;
        c.row += c.chunk[k];
    }
    if (sum != y->shape[a]) return CC_SHAPE;
    c.total = outer * c.row;
    bool placed = !flags && outer == 1; /* every field already where it belongs */
    for (int k = 0; k < c.nf && placed; k++)
        placed = c.chunk[k] == 0 || c.x[k] == c.y + c.coff[k] * c.inner;
    if (c.total == 0 || placed) return CC_OK;
    int64_t n = c.total / COPY_MIN;
    rx_rt_parallel_for_n(concat_job, &c, n < 1 ? 1 : n > 1024 ? 1024 : (int)n);
    return CC_OK;
}
