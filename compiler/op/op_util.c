/*
 * op_util.c — small helpers shared by the op group files (declared in op_int.h):
 * reporting an error prefixed with the op's name, printing a shape for messages,
 * reading integer-list attributes, and building the "like x" result annotation most
 * rules return.
 */
#include <stdarg.h>

#include "op_int.h"

/* Reports "<op>: <message>" at the call and returns NULL (see op_int.h). */
rx_sinfo *rx_op_fail(rx_dctx *c, const rx_node *call, const char *fmt, ...)
{
    rx_sb b = {0};
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&b, fmt, ap);
    va_end(ap);
    rx_d_error(c, call, "%s: %s", rx_d_opname(call), rx_sb_str(&b));
    rx_sb_free(&b);
    return NULL;
}

/* Prints dims as a tuple into arena a (see op_int.h). */
char *rx_op_dims_str(rx_arena *a, rx_expr **dims, int ndim)
{
    if (ndim < 0) return rx_arena_strdup(a, "(...)");
    rx_sb b = {0};
    rx_sb_putc(&b, '(');
    for (int i = 0; i < ndim; i++) {
        if (i) rx_sb_puts(&b, ", ");
        if (dims && dims[i]) rx_expr_print(dims[i], &b);
        else rx_sb_putc(&b, '?');
    }
    if (ndim == 1) rx_sb_putc(&b, ',');
    rx_sb_putc(&b, ')');
    char *s = rx_arena_strdup(a, rx_sb_str(&b));
    rx_sb_free(&b);
    return s;
}

/* Reads an INTS/AXES attribute into out (see op_int.h). */
bool rx_op_int_list(rx_dctx *c, const rx_node *call, const char *name, int64_t *out,
                    int max, int *n) {
    const rx_attr *v = rx_call_attr(call, name);
    if (v->kind == RX_A_NULL) {
        *n = -1;
        return true;
    }
    if (v->kind == RX_A_INT) {
        out[0] = v->u.i;
        *n = 1;
        return true;
    }
    RX_ASSERT(v->kind == RX_A_ARRAY);
    if (v->u.arr.n > max) {
        rx_op_fail(c, call, "attribute \"%s\" has %d values, at most %d allowed", name,
                   v->u.arr.n, max);
        return false;
    }
    for (int i = 0; i < v->u.arr.n; i++) {
        RX_ASSERT(v->u.arr.items[i]->kind == RX_A_INT);
        out[i] = v->u.arr.items[i]->u.i;
    }
    *n = v->u.arr.n;
    return true;
}

/* Tensor like x (ndim, dims simplified) with dtype dt. */
rx_sinfo *rx_op_like(rx_dctx *c, const rx_sinfo *x, rx_dtype dt)
{
    if (x->ndim < 0 || !x->dims) return rx_si_tensor(c->a, dt, x->ndim, NULL);
    rx_expr **d = RX_NEWN(c->a, rx_expr *, x->ndim > 0 ? x->ndim : 1);
    for (int i = 0; i < x->ndim; i++) d[i] = rx_d_simplify(c, x->dims[i]);
    return rx_si_tensor(c->a, dt, x->ndim, d);
}
