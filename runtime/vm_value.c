/*
 * vm_value.c — VM values (none, int64, tensor, shape, tuple, storage, function) and
 * the runtime's two small error helpers.
 *
 * Shapes and tuples are immutable once built, so sharing them between registers,
 * frames and outputs is safe; their counts are atomic because outputs may be freed on
 * another thread. Releasing a tuple releases its fields recursively (tuples are acyclic
 * since they are immutable).
 */
#include "rt_int.h"

#include <stdio.h>
#include <stdlib.h>

_Noreturn void rx_rt_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "%s:%d: runtime invariant failed: %s\n", file, line, cond);
    abort();
}

int rx_rt_fail(rx_rt_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

rx_vm_shape *rx_vm_shape_new(int32_t ndim)
{
    rx_vm_shape *s = malloc(sizeof *s + sizeof(int64_t) * (size_t)(ndim > 0 ? ndim : 0));
    if (!s) return NULL;
    atomic_init(&s->refs, 1);
    s->ndim = ndim;
    return s;
}

rx_vm_tuple *rx_vm_tuple_new(uint32_t n)
{
    rx_vm_tuple *t = calloc(1, sizeof *t + sizeof(rx_vm_value) * n);
    if (!t) return NULL;
    atomic_init(&t->refs, 1);
    t->n = n;
    return t;
}

void rx_vm_value_retain(const rx_vm_value *v)
{
    switch (v->kind) {
    case RX_V_TENSOR: rx_rt_tensor_retain(v->u.t); break;
    case RX_V_SHAPE: atomic_fetch_add(&v->u.s->refs, 1); break;
    case RX_V_TUPLE: atomic_fetch_add(&v->u.tu->refs, 1); break;
    case RX_V_STORAGE: rx_rt_storage_retain(v->u.st); break;
    default: break;
    }
}

void rx_vm_value_release(rx_vm_value *v)
{
    switch (v->kind) {
    case RX_V_TENSOR: rx_rt_tensor_release(v->u.t); break;
    case RX_V_SHAPE:
        if (atomic_fetch_sub(&v->u.s->refs, 1) == 1) free(v->u.s);
        break;
    case RX_V_TUPLE:
        if (atomic_fetch_sub(&v->u.tu->refs, 1) == 1) {
            for (uint32_t i = 0; i < v->u.tu->n; i++) rx_vm_value_release(&v->u.tu->v[i]);
            free(v->u.tu);
        }
        break;
    case RX_V_STORAGE: rx_rt_storage_release(v->u.st); break;
    default: break;
    }
    v->kind = RX_V_NONE;
    v->u.i = 0;
}

const char *rx_vm_kind_desc(int kind)
{
    switch (kind) {
    case RX_V_NONE: return "none";
    case RX_V_INT: return "an int";
    case RX_V_TENSOR: return "a tensor";
    case RX_V_SHAPE: return "a shape";
    case RX_V_TUPLE: return "a tuple";
    case RX_V_STORAGE: return "a storage";
    case RX_V_FUNC: return "a function";
    default: return "?";
    }
}
