/*
 * op_deduce.c — helpers shared by the op deduction rules (op_int.h, "helpers for the
 * rules"): located errors, argument checks, axis normalization, NumPy broadcasting
 * over symbolic dims, and small arithmetic conveniences.
 *
 * Error messages start with the op name ("add: cannot broadcast (n, 4) and (3,)")
 * and are located at the call node; the diagnostic list adds the JSON path.
 *
 * Broadcasting follows NumPy, right-aligned, one pair of dims at a time:
 *   (a) the two are proved equal            -> that dim
 *   (b) one side is the literal 1           -> the other side
 *   (c) two different integer literals      -> error
 *   (d) anything else (n vs m, n vs 3)      -> undecidable at compile time
 * As in TVM, one undecidable pair makes the whole result shape unknown: the caller
 * gets dims == NULL with the result ndim known, and builds Tensor(ndim=k). The run
 * time checks what the compiler could not. A side with unknown dims gives the same
 * result; a side with unknown ndim gives ndim -1.
 */
#include "op_int.h"

#include <stdarg.h>

/* Reports an error located at `at` (the call under deduction; NULL: the root). */
void rx_d_error(rx_dctx *c, const rx_node *at, const char *fmt, ...)
{
    rx_sb path = {0};
    rx_loc_render(&c->m->locs, at ? at->loc : 0, &path);
    va_list ap;
    va_start(ap, fmt);
    rx_diag_vadd(c->diags, rx_sb_str(&path), fmt, ap);
    va_end(ap);
    rx_sb_free(&path);
}

/* The op's name for messages ("nn.softmax"); "call" for a non-op call. */
const char *rx_d_opname(const rx_node *call)
{
    if (call && call->kind == RX_N_CALL && call->call_kind == RX_CALL_OP && call->u.call.op)
        return call->u.call.op->name;
    return "call";
}

/* Argument i as a tensor annotation, or NULL after an error (missing argument, or an
 * annotation other than Tensor). */
const rx_sinfo *rx_d_tensor_arg(rx_dctx *c, const rx_node *call, int i)
{
    if (i >= call->nargs) {
        rx_d_error(c, call, "%s: missing argument %d", rx_d_opname(call), i);
        return NULL;
    }
    const rx_sinfo *si = call->args[i]->sinfo;
    RX_ASSERT(si != NULL);
    if (si->kind != RX_SI_TENSOR) {
        rx_d_error(c, call, "%s: argument %d must be a tensor, found %s", rx_d_opname(call), i,
                   rx_sinfo_str(c->a, si));
        return NULL;
    }
    return si;
}

/* Normalizes axis against a known ndim (>= 0) into *out; error when out of range. */
bool rx_d_axis(rx_dctx *c, const rx_node *call, int64_t axis, int ndim, int *out)
{
    RX_ASSERT(ndim >= 0);
    if (axis < -(int64_t)ndim || axis >= ndim) {
        rx_d_error(c, call, "%s: axis %lld is out of range for a tensor of %d dimension%s",
                   rx_d_opname(call), (long long)axis, ndim, ndim == 1 ? "" : "s");
        return false;
    }
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return true;
}

/* Broadcasts x (nx dims) with y (ny dims); see the essay. A dims pointer may be NULL
 * with its n >= 0 (unknown dims) and n may be -1 (unknown ndim). Returns the result
 * dims (arena, simplified) with *ndim_out set; or NULL with *ndim_out >= -1 when the
 * result dims are unknown (not an error); or NULL with *ndim_out == -2 after an
 * error. */
rx_expr **rx_d_broadcast(rx_dctx *c, const rx_node *call, rx_expr **x, int nx, rx_expr **y,
                         int ny, int *ndim_out) {
    if (nx < 0 || ny < 0) {
        *ndim_out = -1;
        return NULL;
    }
    int nd = nx > ny ? nx : ny;
    *ndim_out = nd;
    if ((!x && nx > 0) || (!y && ny > 0)) return NULL;
    rx_expr **out = RX_NEWN(c->a, rx_expr *, nd > 0 ? nd : 1);
    bool unknown = false;
    for (int i = 0; i < nd; i++) {
        rx_expr *xa = i >= nd - nx ? x[i - (nd - nx)] : NULL;
        rx_expr *ya = i >= nd - ny ? y[i - (nd - ny)] : NULL;
        int64_t kx, ky;
        if (!xa || !ya) {
            out[i] = rx_d_simplify(c, xa ? xa : ya);
        } else if (rx_expr_is_int(xa, 1)) {
            out[i] = rx_d_simplify(c, ya);
        } else if (rx_expr_is_int(ya, 1)) {
            out[i] = rx_d_simplify(c, xa);
        } else if (rx_arith_prove_equal(c->ar, xa, ya)) {
            out[i] = rx_d_simplify(c, xa);
        } else if (rx_expr_is_const(xa, &kx) && rx_expr_is_const(ya, &ky)) {
            rx_d_error(c, call, "%s: cannot broadcast %s and %s", rx_d_opname(call),
                       rx_op_dims_str(c->a, x, nx), rx_op_dims_str(c->a, y, ny));
            *ndim_out = -2;
            return NULL;
        } else {
            unknown = true;
        }
    }
    return unknown ? NULL : out;
}

/* The simplified form of e through the context's arithmetic (NULL stays NULL). */
rx_expr *rx_d_simplify(rx_dctx *c, rx_expr *e)
{
    return e ? rx_arith_simplify(c->ar, e) : NULL;
}

/* Product of ndim dims, simplified; the literal 1 for ndim 0. */
rx_expr *rx_d_numel(rx_dctx *c, rx_expr **dims, int ndim)
{
    rx_expr *p = rx_e_int(c->a, 1);
    for (int i = 0; i < ndim; i++) p = i ? rx_e_binary(c->a, RX_E_MUL, p, dims[i]) : dims[i];
    return rx_d_simplify(c, p);
}

/* Combines two operand dtypes: equal, or one unknown -> the other; a mismatch is an
 * error and false. */
bool rx_d_same_dtype(rx_dctx *c, const rx_node *call, rx_dtype x, rx_dtype y, rx_dtype *out)
{
    if (x == RX_DT_UNKNOWN || x == y) {
        *out = y;
        return true;
    }
    if (y == RX_DT_UNKNOWN) {
        *out = x;
        return true;
    }
    rx_d_error(c, call, "%s: operand dtypes differ: %s and %s", rx_d_opname(call),
               rx_dtype_name(x), rx_dtype_name(y));
    return false;
}

/* A SIZE attribute value as an expression: INT as a literal, EXPR as is; NULL for a
 * null value. */
rx_expr *rx_d_attr_size(rx_dctx *c, const rx_attr *a)
{
    if (!a || a->kind == RX_A_NULL) return NULL;
    if (a->kind == RX_A_INT) return rx_e_int(c->a, a->u.i);
    RX_ASSERT(a->kind == RX_A_EXPR);
    return a->u.e;
}
