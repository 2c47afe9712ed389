/*
 * builtin.c — the VM's built-in functions: unique and nonzero (contracts in builtin.h;
 * nms is builtin_nms.c's), and the table of them all.
 *
 * Both read a dense tensor and allocate a result whose size they only learn from the
 * data. unique views x as slices (single elements, or the slices along `axis`), sorts
 * their indices with a stable merge sort under a total order chosen by dtype
 * (O(n log n) slice comparisons), cuts the sorted run into groups of equal slices
 * (first occurrence = first of the group, thanks to stability), reorders the groups by
 * first occurrence when sorted=false, then allocates exactly the requested results.
 * Scratch: five int64 words per slice. nonzero counts first (one pass), allocates
 * (ndim, count) i64, and fills it in a second pass with a running multi-index. Neither
 * keeps state between calls.
 */
#include "builtin.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- element comparison ---- */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Total order for unique: numeric, every NaN equal to every other and after +inf. */
static int cmp_real(double a, double b)
{
    int an = a != a, bn = b != b;
    if (an || bn) return an - bn;
    return (a > b) - (a < b);
}

#define CMP_INT(name, T)                                  \
    static int name(const void *x, const void *y)         \
    {                                                     \
        T a, b;                                           \
        memcpy(&a, x, sizeof a);                          \
        memcpy(&b, y, sizeof b);                          \
        return (a > b) - (a < b);                         \
    }
CMP_INT(cmp_i8, int8_t)
CMP_INT(cmp_i16, int16_t)
CMP_INT(cmp_i32, int32_t)
CMP_INT(cmp_i64, int64_t)
CMP_INT(cmp_u8, uint8_t)
CMP_INT(cmp_u16, uint16_t)
CMP_INT(cmp_u32, uint32_t)
CMP_INT(cmp_u64, uint64_t)
#undef CMP_INT

static int cmp_f32(const void *x, const void *y)
{
    float a, b;
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    return cmp_real(a, b);
}

static int cmp_f64(const void *x, const void *y)
{
    double a, b;
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    return cmp_real(a, b);
}

static int cmp_f16(const void *x, const void *y)
{
    uint16_t a, b;
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    return cmp_real(half_to_float(a), half_to_float(b));
}

static int cmp_bf16(const void *x, const void *y)
{
    uint16_t a, b;
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    return cmp_real(bf16_to_float(a), bf16_to_float(b));
}

typedef int (*cmp_fn)(const void *, const void *);

/* The comparator for a scalar dtype, NULL when unsupported. */
static cmp_fn comparator(DLDataType t)
{
    if (t.lanes != 1) return NULL;
    if (t.code == kDLInt) {
        switch (t.bits) {
        case 8: return cmp_i8;
        case 16: return cmp_i16;
        case 32: return cmp_i32;
        case 64: return cmp_i64;
        }
    } else if (t.code == kDLUInt) {
        switch (t.bits) {
        case 1:
        case 8: return cmp_u8;
        case 16: return cmp_u16;
        case 32: return cmp_u32;
        case 64: return cmp_u64;
        }
    } else if (t.code == kDLFloat) {
        switch (t.bits) {
        case 16: return cmp_f16;
        case 32: return cmp_f32;
        case 64: return cmp_f64;
        }
    } else if (t.code == kDLBfloat && t.bits == 16) {
        return cmp_bf16;
    }
    return NULL;
}

/* ---- shared helpers ---- */

/* The single tensor argument, or NULL with err set. */
static const DLTensor *tensor_arg(const char *who, const rx_vm_value *args, int64_t nargs,
                                  rx_rt_err *err)
{
    if (nargs != 1) {
        rx_rt_fail(err, "%s takes 1 argument, got %" PRId64, who, nargs);
        return NULL;
    }
    if (args[0].kind != RX_V_TENSOR) {
        rx_rt_fail(err, "%s: argument is %s, not a tensor", who, rx_vm_kind_desc(args[0].kind));
        return NULL;
    }
    return &args[0].u.t->dl;
}

int64_t rx_bi_numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

rx_rt_tensor *rx_bi_new_tensor(rx_rt_ctx *ctx, const char *who, DLDataType dt, int32_t ndim,
                               const int64_t *shape, rx_rt_err *err)
{
    int64_t bytes = rx_rt_dense_bytes(dt, ndim, shape);
    if (bytes < 0) {
        rx_rt_fail(err, "%s: result too large", who);
        return NULL;
    }
    rx_rt_storage *s = rx_rt_storage_new(ctx, (size_t)bytes);
    if (!s) {
        rx_rt_fail(err, "%s: out of memory allocating %" PRId64 " bytes", who, bytes);
        return NULL;
    }
    rx_rt_tensor *t = rx_rt_tensor_view(s, 0, dt, ndim, shape, err);
    rx_rt_storage_release(s);
    return t;
}

/* ---- unique ---- */

/* Whether the element at p is a NaN (false for integer dtypes). */
typedef bool (*isnan_fn)(const void *p);

static bool nan_f32(const void *p)
{
    float f;
    memcpy(&f, p, sizeof f);
    return f != f;
}

static bool nan_f64(const void *p)
{
    double f;
    memcpy(&f, p, sizeof f);
    return f != f;
}

static bool nan_f16(const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

static bool nan_bf16(const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

static isnan_fn nan_test(DLDataType t)
{
    if (t.code == kDLFloat && t.bits == 32) return nan_f32;
    if (t.code == kDLFloat && t.bits == 64) return nan_f64;
    if (t.code == kDLFloat && t.bits == 16) return nan_f16;
    if (t.code == kDLBfloat && t.bits == 16) return nan_bf16;
    return NULL;
}

/* The slices unique compares: x viewed as (outer, len, inner) around the axis (the
 * flattened case is outer = inner = 1, len = numel); slice k is the outer * inner
 * elements (o, k, i) in row-major (o, i) order, compared lexicographically. */
typedef struct uq_ctx {
    const char *base;  /* x's first element */
    size_t es;         /* element bytes */
    cmp_fn cmp;        /* element total order (NaN after +inf, NaNs equal) */
    isnan_fn isnan_;   /* NaN test, NULL for integers */
    bool nan_distinct; /* slices holding a NaN are never equal (axis given, as NumPy) */
    int64_t outer, len, inner;
} uq_ctx;

static const char *uq_at(const uq_ctx *c, int64_t o, int64_t k)
{
    return c->base + c->es * (size_t)((o * c->len + k) * c->inner);
}

/* Total order of slices a and b. */
static int uq_cmp(const uq_ctx *c, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < c->outer; o++) {
        const char *pa = uq_at(c, o, a), *pb = uq_at(c, o, b);
        for (int64_t i = 0; i < c->inner; i++) {
            int r = c->cmp(pa + c->es * (size_t)i, pb + c->es * (size_t)i);
            if (r) return r;
        }
    }
    return 0;
}

/* Whether slices a and b (adjacent in sorted order) are one unique value. */
static bool uq_same(const uq_ctx *c, int64_t a, int64_t b)
{
    if (uq_cmp(c, a, b)) return false;
    if (!c->nan_distinct || !c->isnan_) return true;
    for (int64_t o = 0; o < c->outer; o++) {
        const char *pa = uq_at(c, o, a);
        for (int64_t i = 0; i < c->inner; i++)
            if (c->isnan_(pa + c->es * (size_t)i)) return false;
    }
    return true;
}

/* Stable bottom-up merge sort of the slice indices a[0..n) (tmp: n scratch words);
 * stability makes the first slice of every run of equal ones its first occurrence. */
static void uq_sort(const uq_ctx *c, int64_t *a, int64_t *tmp, int64_t n)
{
    int64_t *src = a, *dst = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = uq_cmp(c, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, sizeof *a * (size_t)n);
}

static int cmp_i64_plain(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* An int argument of unique, or -1 with err set. */
static int int_arg(const rx_vm_value *args, int64_t i, int64_t *out, rx_rt_err *err)
{
    if (args[i].kind != RX_V_INT)
        return rx_rt_fail(err, "unique: argument %" PRId64 " is %s, not an int", i,
                          rx_vm_kind_desc(args[i].kind));
    *out = args[i].u.i;
    return 0;
}

/* unique(x) or unique(x, sorted, return_index, return_inverse, return_counts[, axis]):
 * see builtin.h. */
static int bi_unique(rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs, rx_vm_value *out,
                     rx_rt_err *err)
{
    if (nargs != 1 && nargs != 5 && nargs != 6)
        return rx_rt_fail(err, "unique takes 1, 5 or 6 arguments, got %" PRId64, nargs);
    const DLTensor *x = tensor_arg("unique", args, 1, err);
    if (!x) return -1;
    int64_t flag[4] = {1, 0, 0, 0}, axis = 0; /* sorted, index, inverse, counts */
    for (int64_t i = 1; i < nargs && i < 5; i++)
        if (int_arg(args, i, &flag[i - 1], err)) return -1;
    bool has_axis = nargs == 6;
    if (has_axis) {
        if (int_arg(args, 5, &axis, err)) return -1;
        if (axis < -x->ndim || axis >= x->ndim || x->ndim == 0)
            return rx_rt_fail(err, "unique: axis %" PRId64 " is out of range for a %d-d tensor",
                              axis, (int)x->ndim);
        if (axis < 0) axis += x->ndim;
    }
    uq_ctx c = {0};
    c.cmp = comparator(x->dtype);
    char dn[32];
    if (!c.cmp)
        return rx_rt_fail(err, "unique: unsupported dtype %s",
                          rx_rxa_dtype_name(rx_rt_dtype_pack(x->dtype), dn, sizeof dn));
    c.es = rx_rxa_dtype_bytes(rx_rt_dtype_pack(x->dtype));
    c.base = (const char *)x->data + x->byte_offset;
    c.isnan_ = nan_test(x->dtype);
    c.nan_distinct = has_axis;
    c.outer = c.inner = 1;
    c.len = rx_bi_numel(x);
    if (has_axis) {
        c.len = x->shape[axis];
        for (int32_t d = 0; d < x->ndim; d++)
            if (d < axis) c.outer *= x->shape[d];
            else if (d > axis) c.inner *= x->shape[d];
    }
    int64_t n = c.len, k = 0;
    size_t words = (size_t)(n > 0 ? n : 1);
    int64_t *perm = malloc(sizeof(int64_t) * words * 5);
    if (!perm) return rx_rt_fail(err, "unique: out of memory");
    /* perm: sorted slices; tmp: scratch, then the group of each slice; first/count per
     * group (in sorted order); ord: (first, group) pairs for sorted=false, then rank */
    int64_t *tmp = perm + words, *first = tmp + words, *count = first + words;
    int64_t *ord = count + words;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    uq_sort(&c, perm, tmp, n);
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || !uq_same(&c, perm[i - 1], perm[i])) {
            first[k] = perm[i];
            count[k++] = 0;
        }
        count[k - 1]++;
        tmp[perm[i]] = k - 1; /* the group of slice perm[i] */
    }
    /* out[j] is group ord[j]; rank[g] its position: identity when sorted */
    int64_t *rank = perm; /* perm is no longer needed */
    if (flag[0]) {
        for (int64_t g = 0; g < k; g++) ord[g] = rank[g] = g;
    } else { /* first-occurrence order: sort the groups by their first slice */
        int64_t *pairs = malloc(sizeof(int64_t) * 2 * (size_t)(k > 0 ? k : 1));
        if (!pairs) {
            free(perm);
            return rx_rt_fail(err, "unique: out of memory");
        }
        for (int64_t g = 0; g < k; g++) pairs[2 * g] = first[g], pairs[2 * g + 1] = g;
        qsort(pairs, (size_t)k, 2 * sizeof(int64_t), cmp_i64_plain);
        for (int64_t j = 0; j < k; j++) ord[j] = pairs[2 * j + 1], rank[pairs[2 * j + 1]] = j;
        free(pairs);
    }

    rx_vm_value res[4];
    int nres = 0;
    int64_t vshape[RX_RXA_MAX_NDIM];
    int32_t vnd = 1;
    vshape[0] = k;
    if (has_axis) {
        vnd = x->ndim;
        for (int32_t d = 0; d < vnd; d++) vshape[d] = d == axis ? k : x->shape[d];
    }
    DLDataType i64 = {kDLInt, 64, 1};
    int rc = 0;
    rx_rt_tensor *t = rx_bi_new_tensor(ctx, "unique", x->dtype, vnd, vshape, err);
    if (t) {
        char *dst = t->dl.data;
        size_t row = c.es * (size_t)c.inner;
        for (int64_t o = 0; o < c.outer && row; o++)
            for (int64_t j = 0; j < k; j++)
                memcpy(dst + row * (size_t)(o * k + j), uq_at(&c, o, first[ord[j]]), row);
        res[nres++] = (rx_vm_value){.kind = RX_V_TENSOR, .u.t = t};
    }
    for (int e = 1; e < 4 && t; e++) {
        if (!flag[e]) continue;
        int64_t len = e == 2 ? n : k;
        t = rx_bi_new_tensor(ctx, "unique", i64, 1, &len, err);
        if (!t) break;
        int64_t *o = t->dl.data;
        for (int64_t j = 0; j < len; j++)
            o[j] = e == 1 ? first[ord[j]] : e == 2 ? rank[tmp[j]] : count[ord[j]];
        res[nres++] = (rx_vm_value){.kind = RX_V_TENSOR, .u.t = t};
    }
    free(perm);
    if (!t) rc = -1;
    if (rc == 0 && nres == 1) {
        *out = res[0];
        return 0;
    }
    rx_vm_tuple *tu = rc == 0 ? rx_vm_tuple_new((uint32_t)nres) : NULL;
    if (!tu) {
        for (int i = 0; i < nres; i++) rx_vm_value_release(&res[i]);
        return rc ? -1 : rx_rt_fail(err, "unique: out of memory");
    }
    for (int i = 0; i < nres; i++) tu->v[i] = res[i];
    out->kind = RX_V_TUPLE;
    out->u.tu = tu;
    return 0;
}

/* ---- nonzero ---- */

/* Whether element i of x is nonzero: typed for f32/f64 (-0.0 is zero, NaN is not),
 * sign-masked for 16-bit floats, any nonzero byte otherwise. */
static bool elem_nonzero(const DLTensor *x, const char *base, size_t es, int64_t i)
{
    const char *p = base + es * (size_t)i;
    if (x->dtype.code == kDLFloat && x->dtype.bits == 32) {
        float f;
        memcpy(&f, p, sizeof f);
        return f != 0;
    }
    if (x->dtype.code == kDLFloat && x->dtype.bits == 64) {
        double f;
        memcpy(&f, p, sizeof f);
        return f != 0;
    }
    if ((x->dtype.code == kDLFloat || x->dtype.code == kDLBfloat) && x->dtype.bits == 16) {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return (h & 0x7fff) != 0;
    }
    for (size_t b = 0; b < es; b++)
        if (p[b]) return true;
    return false;
}

static int bi_nonzero(rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs, rx_vm_value *out,
                      rx_rt_err *err)
{
    const DLTensor *x = tensor_arg("nonzero", args, nargs, err);
    if (!x) return -1;
    char dn[32];
    if (!comparator(x->dtype))
        return rx_rt_fail(err, "nonzero: unsupported dtype %s",
                          rx_rxa_dtype_name(rx_rt_dtype_pack(x->dtype), dn, sizeof dn));
    size_t es = rx_rxa_dtype_bytes(rx_rt_dtype_pack(x->dtype));
    const char *base = (const char *)x->data + x->byte_offset;
    int64_t n = rx_bi_numel(x), count = 0;
    int32_t nd = x->ndim > 0 ? x->ndim : 1;
    for (int64_t i = 0; i < n; i++) count += elem_nonzero(x, base, es, i);
    int64_t shape[2] = {nd, count};
    DLDataType i64 = {kDLInt, 64, 1};
    rx_rt_tensor *t = rx_bi_new_tensor(ctx, "nonzero", i64, 2, shape, err);
    if (!t) return -1;
    int64_t *o = t->dl.data, idx[RX_RXA_MAX_NDIM] = {0}, col = 0;
    for (int64_t i = 0; i < n; i++) {
        if (elem_nonzero(x, base, es, i)) {
            for (int32_t d = 0; d < nd; d++) o[d * count + col] = idx[d];
            col++;
        }
        for (int32_t d = x->ndim - 1; d >= 0; d--) { /* advance the row-major index */
            if (++idx[d] < x->shape[d]) break;
            idx[d] = 0;
        }
    }
    out->kind = RX_V_TENSOR;
    out->u.t = t;
    return 0;
}

/* ---- the table ---- */

typedef int (*builtin_fn)(rx_rt_ctx *, const rx_vm_value *, int64_t, rx_vm_value *,
                          rx_rt_err *);

static const struct {
    const char *name; /* what CALL_BUILTIN's string names */
    builtin_fn fn;    /* the implementation */
} builtins[] = {
    {"unique", bi_unique},
    {"nonzero", bi_nonzero},
    {"nms", rx_bi_nms},
};

int rx_vm_builtin_find(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, name)) return (int)i;
    return -1;
}

int rx_vm_builtin_call(int idx, rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs,
                       rx_vm_value *out, rx_rt_err *err)
{
    RX_RT_ASSERT(idx >= 0 && (size_t)idx < sizeof builtins / sizeof builtins[0]);
    out->kind = RX_V_NONE;
    return builtins[idx].fn(ctx, args, nargs, out, err);
}
