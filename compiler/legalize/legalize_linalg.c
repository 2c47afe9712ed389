/*
 * legalize_linalg.c — legalization of matmul with NumPy semantics.
 *
 * One REDUCE: out[b..., i, j] = sum over k of A[bA..., i, k] * B[bB..., k, j], the
 * operands converted to the result dtype (out_dtype) before the product, as TVM's
 * topi.matmul. A 1-D A has no i (it reads A[k]) and a 1-D B no j (B[k]); the result
 * dims then lack that position, as deduction made them. Batch dims broadcast
 * right-aligned against the result's batch dims: a literal-1 batch dim reads 0. The
 * reduction extent is A's last dim (deduction left an unprovable k_A == k_B to run
 * time, as TVM does).
 */
#include "legalize_int.h"

typedef struct mm {
    lg_ctx *c;
    rx_te_tensor *a, *b;
    int nb;             /* result batch rank */
    bool has_i, has_j;  /* A is not 1-D, B is not 1-D */
    rx_dtype dt;        /* result dtype */
} mm;

/* Operand index: its batch dims from the result's, then `tail` (1 or 2 entries). */
static rx_expr **operand_index(mm *m, const rx_te_tensor *t, rx_expr *const *idx,
                               rx_expr *t0, rx_expr *t1)
{
    rx_arena *a = m->c->a;
    int n = rx_te_ndim(t), ntail = n == 1 ? 1 : 2, nbt = n - ntail;
    rx_expr **o = RX_NEWN(a, rx_expr *, n);
    for (int k = 0; k < nbt; k++)
        o[k] = rx_expr_is_int(rx_te_dim(t, k), 1) ? rx_e_int(a, 0) : idx[k + m->nb - nbt];
    if (ntail == 1) {
        o[nbt] = t0 ? t0 : t1;
    } else {
        o[nbt] = t0;
        o[nbt + 1] = t1;
    }
    return o;
}

static rx_expr *mm_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *ridx, void *ud)
{
    mm *m = ud;
    rx_expr *i = m->has_i ? idx[m->nb] : NULL;
    rx_expr *j = m->has_j ? idx[m->nb + (m->has_i ? 1 : 0)] : NULL;
    rx_expr *k = ridx[0];
    rx_expr *x = rx_te_at(te, m->a, operand_index(m, m->a, idx, i, k));
    rx_expr *y = rx_te_at(te, m->b, operand_index(m, m->b, idx, k, j));
    return rx_e_binary(rx_te_arena(te), RX_E_MUL, rx_te_cast(te, m->dt, x), rx_te_cast(te, m->dt, y));
}

static bool rule_matmul(lg_ctx *c)
{
    mm m = {c, NULL, NULL, 0, false, false, RX_DT_UNKNOWN};
    m.a = lg_input(c, 0, "A");
    m.b = m.a ? lg_input(c, 1, "B") : NULL;
    if (!m.b) return false;
    int na = rx_te_ndim(m.a), nbn = rx_te_ndim(m.b);
    if (na == 0 || nbn == 0) return lg_fail(c, "operands must have at least 1 dimension");
    const rx_sinfo *o = lg_out(c, 0);
    m.dt = (rx_dtype)o->dtype;
    if (m.dt == RX_DT_BOOL) return lg_fail(c, "not defined on bool tensors");
    m.has_i = na > 1;
    m.has_j = nbn > 1;
    m.nb = o->ndim - m.has_i - m.has_j;
    if (m.nb < 0 || m.nb < na - 2 || m.nb < nbn - 2)
        return lg_fail(c, "the result rank %d does not fit the operands", o->ndim);
    rx_expr *k = rx_te_dim(m.a, na - 1);
    lg_output(c, rx_te_reduce(c->te, lg_tname(c), m.dt, o->ndim, o->dims, RX_TE_SUM, 1, &k,
                              NULL, mm_cb, &m));
    return true;
}

const lg_rule_entry rx_lg_linalg[] = {
    {"matmul", rule_matmul},
};
const int rx_lg_linalg_count = RX_COUNTOF(rx_lg_linalg);
