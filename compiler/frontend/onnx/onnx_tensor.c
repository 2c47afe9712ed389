/*
 * onnx_tensor.c — the ONNX importer's tensors and attributes: TensorProto payloads
 * (raw_data, the typed fields, external-data files under the model's directory) as
 * constants checked against their dims, element access, and the current node's
 * attributes, plus the attribute maps converters hand to ox_call. Contracts in
 * onnx_int.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "onnx_int.h"

#define OX_MAX_DIM (INT64_C(1) << 40)

/* ---------------------------------------------------------------- tensors */

rx_dtype ox_dtype(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return RX_DT_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return RX_DT_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return RX_DT_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return RX_DT_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return RX_DT_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return RX_DT_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return RX_DT_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return RX_DT_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return RX_DT_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return RX_DT_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return RX_DT_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return RX_DT_U64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return RX_DT_BF16;
    default: return RX_DT_UNKNOWN;
    }
}

size_t ox_esize(rx_dtype dt) { return (size_t)(rx_dtype_bits(dt) + 7) / 8; }

int64_t ox_numel(const rx_const *k)
{
    int64_t n = 1;
    for (int i = 0; i < k->ndim; i++) n *= k->shape[i];
    return n;
}

int64_t ox_ci(const rx_const *k, int64_t i)
{
    const uint8_t *p = k->data + (size_t)i * ox_esize(k->dtype);
    switch (k->dtype) {
    case RX_DT_BOOL: case RX_DT_U8: return *p;
    case RX_DT_I8: return (int8_t)*p;
    case RX_DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case RX_DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case RX_DT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case RX_DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case RX_DT_I64: case RX_DT_U64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return (int64_t)ox_cf(k, i);
    }
}

static double half_to_f64(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

double ox_cf(const rx_const *k, int64_t i)
{
    const uint8_t *p = k->data + (size_t)i * ox_esize(k->dtype);
    switch (k->dtype) {
    case RX_DT_F32: { float v; memcpy(&v, p, 4); return v; }
    case RX_DT_F64: { double v; memcpy(&v, p, 8); return v; }
    case RX_DT_F16: { uint16_t v; memcpy(&v, p, 2); return half_to_f64(v); }
    case RX_DT_BF16: { uint16_t v; memcpy(&v, p, 2); uint32_t u = (uint32_t)v << 16; float f;
                       memcpy(&f, &u, 4); return f; }
    case RX_DT_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return (double)ox_ci(k, i);
    }
}

rx_const *ox_new_const(ox_ctx *c, rx_dtype dt, int ndim, const int64_t *shape)
{
    rx_const *k = RX_NEW(c->a, rx_const);
    k->dtype = dt;
    k->ndim = ndim;
    k->shape = RX_NEWN(c->a, int64_t, ndim ? ndim : 1);
    if (ndim) memcpy(k->shape, shape, (size_t)ndim * sizeof *shape);
    k->nbytes = (size_t)ox_numel(k) * ox_esize(dt);
    k->data = RX_NEWN(c->a, uint8_t, k->nbytes ? k->nbytes : 1);
    return k;
}

/* Checks an external-data reference (location under base_dir, offset, length against
 * nbytes, the file long enough) and returns its path (arena) and offset; NULL after an
 * error. */
static const char *external_ref(ox_ctx *c, const Onnx__TensorProto *t, const char *where,
                                size_t nbytes, int64_t *off_out)
{
    const char *loc = NULL, *nm = t->name ? t->name : "";
    int64_t off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value) continue;
        if (!strcmp(e->key, "location")) loc = e->value;
        else if (!strcmp(e->key, "offset")) off = strtoll(e->value, NULL, 10);
        else if (!strcmp(e->key, "length")) len = strtoll(e->value, NULL, 10);
    }
    if (!c->o->base_dir) {
        rx_diag_add(c->d, where, "tensor '%s' has external data but the model was not read "
                    "from a file (no directory to read it from)", nm);
        return NULL;
    }
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, "..")) {
        rx_diag_add(c->d, where, "tensor '%s': external data location '%s' must be a relative "
                    "path below the model's directory", nm, loc ? loc : "");
        return NULL;
    }
    if (off < 0 || (len >= 0 && (uint64_t)len != nbytes)) {
        rx_diag_add(c->d, where, "tensor '%s': external data length %lld does not match its "
                    "%zu bytes", nm, (long long)len, nbytes);
        return NULL;
    }
    const char *path = rx_arena_printf(c->a, "%s/%s", c->o->base_dir, loc);
    struct stat st;
    if (stat(path, &st) || (uint64_t)st.st_size < (uint64_t)off + nbytes) {
        rx_diag_add(c->d, where, "tensor '%s': %s does not hold %zu bytes at offset %lld", nm,
                    path, nbytes, (long long)off);
        return NULL;
    }
    *off_out = off;
    return path;
}

/* Reads nbytes at off of path into dst; false after an error. */
static bool read_at(ox_ctx *c, const char *where, const char *path, int64_t off, uint8_t *dst,
                    size_t nbytes)
{
    FILE *f = fopen(path, "rb");
    bool ok = f && fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(dst, 1, nbytes, f) == nbytes;
    if (!ok)
        rx_diag_add(c->d, where, "cannot read %zu bytes at offset %lld of %s%s%s", nbytes,
                    (long long)off, path, f ? "" : ": ", f ? "" : strerror(errno));
    if (f) fclose(f);
    return ok;
}

rx_const *ox_tensor_const(ox_ctx *c, const Onnx__TensorProto *t, const char *where)
{
    const char *nm = t->name ? t->name : "";
    rx_dtype dt = ox_dtype(t->data_type);
    if (dt == RX_DT_UNKNOWN) {
        rx_diag_add(c->d, where, "tensor '%s': unsupported data type %d", nm, (int)t->data_type);
        return NULL;
    }
    if (t->n_dims > 16) {
        rx_diag_add(c->d, where, "tensor '%s': %zu dims (at most 16)", nm, t->n_dims);
        return NULL;
    }
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || t->dims[i] > OX_MAX_DIM) {
            rx_diag_add(c->d, where, "tensor '%s': dim %zu is %lld", nm, i, (long long)t->dims[i]);
            return NULL;
        }
        numel *= t->dims[i];
        if (numel > OX_MAX_DIM) {
            rx_diag_add(c->d, where, "tensor '%s': more than 2^40 elements", nm);
            return NULL;
        }
    }
    size_t es = ox_esize(dt), nbytes = (size_t)numel * es;
    size_t have = 0;
    bool external = t->has_data_location &&
                    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (!external) {
        if (t->has_raw_data) have = t->raw_data.len;
        else if (dt == RX_DT_F32) have = t->n_float_data * es;
        else if (dt == RX_DT_F64) have = t->n_double_data * es;
        else if (dt == RX_DT_I64) have = t->n_int64_data * es;
        else if (dt == RX_DT_U32 || dt == RX_DT_U64) have = t->n_uint64_data * es;
        else have = t->n_int32_data * es;
        if (have != nbytes) {
            rx_diag_add(c->d, where, "tensor '%s': payload has %zu bytes, its dims need %zu", nm,
                        have, nbytes);
            return NULL;
        }
    }
    rx_const *k = RX_NEW(c->a, rx_const);
    k->dtype = dt;
    k->ndim = (int32_t)t->n_dims;
    k->shape = RX_NEWN(c->a, int64_t, k->ndim ? k->ndim : 1);
    for (int i = 0; i < k->ndim; i++) k->shape[i] = t->dims[i];
    k->nbytes = nbytes;
    if (external) {
        int64_t off = 0;
        const char *path = external_ref(c, t, where, nbytes, &off);
        if (!path) return NULL;
        if (c->o->weights == RX_ONNX_WEIGHTS_PARAMS && rx_dtype_is_float(dt)) {
            ox_extref r = {k, path, off}; /* a weight parameter: copied when written */
            RX_VEC_PUSH(c->ext, r);
            return k;
        }
        k->data = RX_NEWN(c->a, uint8_t, nbytes ? nbytes : 1);
        if (!read_at(c, where, path, off, k->data, nbytes)) return NULL;
        return k;
    }
    k->data = RX_NEWN(c->a, uint8_t, nbytes ? nbytes : 1);
    if (t->has_raw_data) {
        if (nbytes) memcpy(k->data, t->raw_data.data, nbytes);
    } else {
        for (int64_t i = 0; i < numel; i++) {
            uint8_t *p = k->data + (size_t)i * es;
            if (dt == RX_DT_F32) memcpy(p, &t->float_data[i], 4);
            else if (dt == RX_DT_F64) memcpy(p, &t->double_data[i], 8);
            else if (dt == RX_DT_I64) memcpy(p, &t->int64_data[i], 8);
            else if (dt == RX_DT_U64) memcpy(p, &t->uint64_data[i], 8);
            else if (dt == RX_DT_U32) { uint32_t v = (uint32_t)t->uint64_data[i]; memcpy(p, &v, 4); }
            else { int32_t v = t->int32_data[i]; memcpy(p, &v, es); } /* little-endian narrowing */
        }
    }
    return k;
}

/* ---------------------------------------------------------------- attributes */

const Onnx__AttributeProto *ox_attr(ox_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->node->n_attribute; i++)
        if (c->node->attribute[i]->name && !strcmp(c->node->attribute[i]->name, name))
            return c->node->attribute[i];
    return NULL;
}

int64_t ox_attr_i(ox_ctx *c, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(c, name);
    return a ? a->i : dflt;
}

double ox_attr_f(ox_ctx *c, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ox_attr(c, name);
    return a ? a->f : dflt;
}

const char *ox_attr_s(ox_ctx *c, const char *name, const char *dflt)
{
    const Onnx__AttributeProto *a = ox_attr(c, name);
    if (!a || !a->has_s) return dflt;
    return rx_arena_strndup(c->a, (const char *)a->s.data, a->s.len);
}

const int64_t *ox_attr_ints(ox_ctx *c, const char *name, int *n)
{
    const Onnx__AttributeProto *a = ox_attr(c, name);
    *n = a ? (int)a->n_ints : -1;
    return a ? a->ints : NULL;
}

rx_const *ox_attr_tensor(ox_ctx *c, const char *name)
{
    const Onnx__AttributeProto *a = ox_attr(c, name);
    if (!a || !a->t) return NULL;
    return ox_tensor_const(c, a->t, c->where);
}

rx_attr *ox_amap(ox_ctx *c)
{
    rx_attr *m = RX_NEW(c->a, rx_attr);
    m->kind = RX_A_MAP;
    m->u.map.keys = RX_NEWN(c->a, const char *, 8);
    m->u.map.vals = RX_NEWN(c->a, rx_attr *, 8);
    return m;
}

void ox_aset(ox_ctx *c, rx_attr *map, const char *key, rx_attr *v)
{
    (void)c;
    RX_ASSERT(map->u.map.n < 8);
    map->u.map.keys[map->u.map.n] = key;
    map->u.map.vals[map->u.map.n++] = v;
}

static rx_attr *new_attr(ox_ctx *c, rx_akind k)
{
    rx_attr *a = RX_NEW(c->a, rx_attr);
    a->kind = k;
    return a;
}

rx_attr *ox_aint(ox_ctx *c, int64_t v) { rx_attr *a = new_attr(c, RX_A_INT); a->u.i = v; return a; }
rx_attr *ox_afloat(ox_ctx *c, double v) { rx_attr *a = new_attr(c, RX_A_FLOAT); a->u.f = v; return a; }
rx_attr *ox_abool(ox_ctx *c, bool v) { rx_attr *a = new_attr(c, RX_A_BOOL); a->u.b = v; return a; }
rx_attr *ox_astr(ox_ctx *c, const char *s) { rx_attr *a = new_attr(c, RX_A_STR); a->u.s = s; return a; }

rx_attr *ox_aints(ox_ctx *c, const int64_t *v, int n)
{
    rx_attr *a = new_attr(c, RX_A_ARRAY);
    a->u.arr.items = RX_NEWN(c->a, rx_attr *, n ? n : 1);
    a->u.arr.n = n;
    for (int i = 0; i < n; i++) a->u.arr.items[i] = ox_aint(c, v[i]);
    return a;
}

rx_attr *ox_afloats(ox_ctx *c, const double *v, int n)
{
    rx_attr *a = new_attr(c, RX_A_ARRAY);
    a->u.arr.n = n;
    a->u.arr.items = RX_NEWN(c->a, rx_attr *, n ? n : 1);
    for (int i = 0; i < n; i++) a->u.arr.items[i] = ox_afloat(c, v[i]);
    return a;
}

rx_attr *ox_aexprs(ox_ctx *c, rx_expr **v, int n)
{
    rx_attr *a = new_attr(c, RX_A_ARRAY);
    a->u.arr.items = RX_NEWN(c->a, rx_attr *, n ? n : 1);
    a->u.arr.n = n;
    for (int i = 0; i < n; i++) {
        int64_t lit;
        if (rx_expr_is_const(v[i], &lit)) {
            a->u.arr.items[i] = ox_aint(c, lit);
        } else {
            a->u.arr.items[i] = new_attr(c, RX_A_EXPR);
            a->u.arr.items[i]->u.e = v[i];
        }
    }
    return a;
}

