/*
 * op_linalg.c — matmul with NumPy semantics.
 *
 * A 1-D first operand is promoted to (1, k) and a 1-D second operand to (k, 1); the
 * promoted dims are removed from the result. The batch dims (all but the last two)
 * broadcast as in elementwise ops. The reduction dims (x1's last, x2's second to
 * last) are an error only when proved different; when they cannot be proved equal
 * the run time checks them (as TVM does). The result dtype is `out_dtype` when given,
 * else the operands' common dtype.
 *
 * Coarse fallbacks: an operand of unknown ndim gives Tensor(ndim=-1); unknown dims,
 * or undecidable batch broadcasting, give a tensor of known ndim and unknown dims.
 */
#include "op_int.h"

static rx_sinfo *deduce_matmul(rx_dctx *c, const rx_node *call)
{
    const rx_sinfo *x = rx_d_tensor_arg(c, call, 0);
    const rx_sinfo *y = rx_d_tensor_arg(c, call, 1);
    if (!x || !y) return NULL;
    rx_dtype dt;
    const rx_attr *od = rx_call_attr(call, "out_dtype");
    if (od->kind == RX_A_STR) {
        bool ok = rx_dtype_parse(od->u.s, &dt);
        RX_ASSERT(ok);
    } else if (!rx_d_same_dtype(c, call, (rx_dtype)x->dtype, (rx_dtype)y->dtype, &dt)) {
        return NULL;
    }
    int nx = x->ndim, ny = y->ndim;
    if (nx == 0 || ny == 0) {
        rx_op_fail(c, call, "operands must have at least 1 dimension, found %s and %s",
                   rx_op_dims_str(c->a, x->dims, nx), rx_op_dims_str(c->a, y->dims, ny));
        return NULL;
    }
    if (nx < 0 || ny < 0) return rx_si_tensor(c->a, dt, -1, NULL);
    bool prepend = nx == 1, append = ny == 1;
    int ex = nx < 2 ? 2 : nx, ey = ny < 2 ? 2 : ny;
    int out_nd = (ex > ey ? ex : ey) - prepend - append;
    if (!x->dims || !y->dims) return rx_si_tensor(c->a, dt, out_nd, NULL);

    /* Step 1: the reduction dims must not be proved different. */
    rx_expr *kx = x->dims[nx - 1];
    rx_expr *ky = append ? y->dims[0] : y->dims[ny - 2];
    int64_t ckx, cky;
    if ((rx_expr_is_const(kx, &ckx) && rx_expr_is_const(ky, &cky) && ckx != cky) ||
        rx_arith_prove(c->ar, rx_e_binary(c->a, RX_E_NE, kx, ky))) {
        rx_op_fail(c, call, "reduction dimensions differ: %s of %s and %s of %s",
                   rx_expr_str(c->a, kx), rx_op_dims_str(c->a, x->dims, nx),
                   rx_expr_str(c->a, ky), rx_op_dims_str(c->a, y->dims, ny));
        return NULL;
    }

    /* Step 2: broadcast the batch dims. */
    int nb;
    int bx = nx > 2 ? nx - 2 : 0, by = ny > 2 ? ny - 2 : 0;
    rx_expr **batch = rx_d_broadcast(c, call, x->dims, bx, y->dims, by, &nb);
    if (!batch) return nb == -2 ? NULL : rx_si_tensor(c->a, dt, out_nd, NULL);

    /* Step 3: batch dims, then the rows of x and the columns of y when not promoted. */
    rx_expr **out = RX_NEWN(c->a, rx_expr *, out_nd > 0 ? out_nd : 1);
    int k = 0;
    for (int i = 0; i < nb; i++) out[k++] = batch[i];
    if (!prepend) out[k++] = rx_d_simplify(c, x->dims[nx - 2]);
    if (!append) out[k++] = rx_d_simplify(c, y->dims[ny - 1]);
    RX_ASSERT(k == out_nd);
    return rx_si_tensor(c->a, dt, out_nd, out);
}

static const rx_attr_spec matmul_attrs[] = {
    RX_ATTR_NUL("out_dtype", RX_AT_DTYPE, "null"),
};

const rx_op rx_ops_linalg[] = {
    { "matmul", 2, 2, RX_ATTRS(matmul_attrs), deduce_matmul, 0 },
};
const int rx_ops_linalg_count = RX_COUNTOF(rx_ops_linalg);
