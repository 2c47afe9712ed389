/*
 * builtin.c — the VM's built-in functions: unique and nonzero (contracts in builtin.h).
 *
 * Both read a dense tensor and allocate a result whose size they only learn from the
 * data. unique sorts a private copy of the elements with a comparator chosen by dtype
 * (qsort, O(n log n)), squeezes out repeats, then allocates exactly the result; nonzero
 * counts first (one pass), allocates (ndim, count) i64, and fills it in a second pass
 * with a running multi-index. Neither keeps state between calls.
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

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* A new dense tensor of the pool; NULL with err set. */
static rx_rt_tensor *new_tensor(rx_rt_ctx *ctx, const char *who, DLDataType dt, int32_t ndim,
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

static int bi_unique(rx_rt_ctx *ctx, const rx_vm_value *args, int64_t nargs, rx_vm_value *out,
                     rx_rt_err *err)
{
    const DLTensor *x = tensor_arg("unique", args, nargs, err);
    if (!x) return -1;
    cmp_fn cmp = comparator(x->dtype);
    char dn[32];
    if (!cmp)
        return rx_rt_fail(err, "unique: unsupported dtype %s",
                          rx_rxa_dtype_name(rx_rt_dtype_pack(x->dtype), dn, sizeof dn));
    size_t es = rx_rxa_dtype_bytes(rx_rt_dtype_pack(x->dtype));
    int64_t n = numel(x);
    char *tmp = malloc(es * (size_t)(n > 0 ? n : 1));
    if (!tmp) return rx_rt_fail(err, "unique: out of memory");
    memcpy(tmp, (const char *)x->data + x->byte_offset, es * (size_t)n);
    qsort(tmp, (size_t)n, es, cmp);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *e = tmp + es * (size_t)i;
        if (k > 0 && cmp(tmp + es * (size_t)(k - 1), e) == 0) continue;
        if (k != i) memcpy(tmp + es * (size_t)k, e, es);
        k++;
    }
    rx_rt_tensor *t = new_tensor(ctx, "unique", x->dtype, 1, &k, err);
    if (t) memcpy(t->dl.data, tmp, es * (size_t)k);
    free(tmp);
    if (!t) return -1;
    out->kind = RX_V_TENSOR;
    out->u.t = t;
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
    int64_t n = numel(x), count = 0;
    int32_t nd = x->ndim > 0 ? x->ndim : 1;
    for (int64_t i = 0; i < n; i++) count += elem_nonzero(x, base, es, i);
    int64_t shape[2] = {nd, count};
    DLDataType i64 = {kDLInt, 64, 1};
    rx_rt_tensor *t = new_tensor(ctx, "nonzero", i64, 2, shape, err);
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
