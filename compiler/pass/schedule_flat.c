/*
 * schedule_flat.c — loads through a reshape read flat: the first step of the CPU
 * schedule (rx_pass_schedule_cpu), before the row, tile and parallel rules look at the
 * nests.
 *
 * Why: a reshape that splits a flat axis into (h, w) is inlined into its consumer as
 * the index pair (x // w, x % w), and the C kernel flattens that back in Horner form,
 * ((.. + x // w) * w + x % w). With literal extents the compiler folds it; with
 * symbolic ones (an image of dynamic size, DETR's key padding mask (b, h, w) flattened
 * to (b, h * w) and added to the attention scores) each load pays two 64-bit divisions,
 * and the row schedule (schedule_rows.c), which wants every load that moves along the
 * row axis to step by one element, turned the masked softmax down, leaving it to the
 * tile schedule's strided reads: 15 ns per score where a row pass costs about one.
 *
 * The rule, for a LOAD of buffer B (rank n, extents d_0 .. d_{n-1}) and k from n - 1
 * down to 1: when index k is x % D and index k - 1 is A + x // D (a sum with that term;
 * A may be absent), D structurally B's extent d_k, and neither x nor A loads (a
 * data-dependent index keeps its bounds check against its own extent), the pair becomes
 * (A, x): the flat offset (.. (A + x // D) * D + x % D ..) == (.. A * D + x ..) is the
 * same for every x (floor division and modulo by the same nonzero D; D == 0 means an
 * empty buffer, never read). Index k may then exceed d_k: the IR's LOAD is read as
 * the flat Horner offset (schedule_rows.c's flat_load writes such loads too), and only
 * data-dependent indices are checked against their extents. Stores are left as they
 * are (the parallel and vector rules read their indices per axis).
 *
 * Chains: a load whose trailing indices decompose one x over extents
 * (s_{k+1}, .., s_{n-1}), as a fused reshape of a flat row writes them,
 * (.., x // (P s_{k+1}) % s_k .., x // P % s_{n-2}, x % P) with P = s_{n-1} and each
 * divisor the product of the extents after it, reads (.., 0, .., 0, x % P') with P'
 * the product of the collapsed extents, and when the next index up is A + x // P',
 * (.., A, 0, .., 0, x): the Horner offset is the same (each step is (x // P % s) * P +
 * x % P == x % (P s)). SAM's window reverse read x[(y // 150528), y // 10752 % 14,
 * y // 768 % 14, y % 768] (four 64-bit divisions per element, scalar) and reads x[0,
 * 0, 0, y] now. The extents may be symbolic: a divisor matches when it is the same
 * node, the same literal, or proved equal by the canonical forms (rx_arith_prove_equal:
 * the reshape writes h * w where the chain builds w * h); a zero extent means an empty
 * buffer, never read, and a literal one below 1 stops the chain. CenterNet's heatmap
 * (b, 80, h', w') flattened to (b, 80 h' w') for topk read x[j, i // (h' w'),
 * i // w' % h', i % w'] at a dynamic image size: a scalar loop of six divisions per
 * element, 4.5x the time of the x[j, 0, 0, i] it reads now.
 *
 * Cost: one walk of each loop function's expressions; new nodes only where a load
 * changes; a canonical-form proof only where a candidate divisor is not the same node.
 */
#include "schedule_int.h"

/* True when x and y are the same divisor: structurally, equal literals, or proved equal
   by the canonical forms (h * w and w * h). */
static bool same_div(rx_arith *ar, const rx_expr *x, const rx_expr *y)
{
    int64_t u, v;
    if (rx_expr_same(x, y)) return true;
    if (rx_expr_is_const(x, &u) && rx_expr_is_const(y, &v)) return u == v;
    return rx_arith_prove_equal(ar, (rx_expr *)x, (rx_expr *)y);
}

/* e (an index) as A + x // D: *rest = A (NULL when e is the term alone). */
static bool strip_div(rx_arena *a, rx_arith *ar, rx_expr *e, const rx_expr *x, const rx_expr *d,
                      rx_expr **rest)
{
    if (e->kind == RX_E_FLOORDIV && rx_expr_same(e->u.op.a, x) && same_div(ar, e->u.op.b, d)) {
        *rest = NULL;
        return true;
    }
    if (e->kind != RX_E_ADD) return false;
    rx_expr *r;
    if (strip_div(a, ar, e->u.op.a, x, d, &r)) {
        *rest = r ? rx_e_binary(a, RX_E_ADD, r, e->u.op.b) : e->u.op.b;
        return true;
    }
    if (strip_div(a, ar, e->u.op.b, x, d, &r)) {
        *rest = r ? rx_e_binary(a, RX_E_ADD, e->u.op.a, r) : e->u.op.a;
        return true;
    }
    return false;
}

/* P * s, the divisor one more collapsed extent s makes: a literal when both are (NULL
   when it is not positive or overflows), else the product node. */
static rx_expr *times(rx_arena *a, rx_expr *P, rx_expr *s)
{
    int64_t u, v, r;
    bool lu = rx_expr_is_const(P, &u), lv = rx_expr_is_const(s, &v);
    if ((lu && u <= 0) || (lv && v <= 0)) return NULL;
    if (lu && lv) return __builtin_mul_overflow(u, v, &r) ? NULL : rx_e_int(a, r);
    return rx_e_binary(a, RX_E_MUL, P, s);
}

/* The trailing indices of a load as a row-major decomposition of one x over literal
   extents (file essay, "Chains"): idx rewritten in place (arena copy in *out); the
   number of indices collapsed, 0 when none. */
static int mod_chain(rx_arena *a, rx_arith *ar, const rx_expr *e, rx_expr ***out)
{
    const rx_buffer *b = e->u.load.buf;
    int n = e->u.load.nidx, last = n - 1;
    rx_expr *m = e->u.load.idx[last];
    int64_t c;
    if (m->kind != RX_E_FLOORMOD || (rx_expr_is_const(m->u.op.b, &c) && c <= 0) ||
        !same_div(ar, m->u.op.b, b->shape[last]) || rx_expr_loads_buf(m->u.op.a, NULL))
        return 0;
    const rx_expr *x = m->u.op.a;
    rx_expr *P = m->u.op.b, *Ps;
    rx_expr **idx = RX_NEWN(a, rx_expr *, n);
    for (int i = 0; i < n; i++) idx[i] = e->u.load.idx[i];
    int done = 0, k = last - 1;
    for (; k >= 0; k--) {
        rx_expr *u = idx[k], *rest;
        if (u->kind == RX_E_FLOORMOD && u->u.op.a->kind == RX_E_FLOORDIV &&
            rx_expr_same(u->u.op.a->u.op.a, x) && same_div(ar, u->u.op.a->u.op.b, P) &&
            same_div(ar, u->u.op.b, b->shape[k]) && (Ps = times(a, P, b->shape[k])) != NULL) {
            P = Ps;
            idx[k] = rx_e_int(a, 0);
            idx[last] = rx_e_binary(a, RX_E_FLOORMOD, (rx_expr *)x, P);
            done++;
            continue;
        }
        if (done && strip_div(a, ar, u, x, P, &rest) && (!rest || !rx_expr_loads_buf(rest, NULL))) {
            idx[k] = rest ? rest : rx_e_int(a, 0);
            idx[last] = (rx_expr *)x;
            done++;
        }
        break;
    }
    *out = idx;
    return done;
}

/* LOAD e with its (A + x // D, x % D) index pairs merged (file essay), or e. */
static rx_expr *flat_load(rx_arena *a, rx_arith *ar, rx_expr *e, int *count)
{
    const rx_buffer *b = e->u.load.buf;
    int n = e->u.load.nidx;
    if (n < 2 || b->ndim != n) return e;
    rx_expr **idx = NULL;
    int nc = mod_chain(a, ar, e, &idx);
    if (!nc) idx = NULL;
    *count += nc;
    for (int k = n - 1; k >= 1; k--) {
        rx_expr *m = idx ? idx[k] : e->u.load.idx[k], *up = idx ? idx[k - 1] : e->u.load.idx[k - 1];
        rx_expr *rest;
        if (m->kind != RX_E_FLOORMOD || !rx_expr_same(m->u.op.b, b->shape[k]) ||
            rx_expr_loads_buf(m->u.op.a, NULL) || !strip_div(a, ar, up, m->u.op.a, m->u.op.b, &rest) ||
            (rest && rx_expr_loads_buf(rest, NULL)))
            continue;
        if (!idx) {
            idx = RX_NEWN(a, rx_expr *, n);
            for (int i = 0; i < n; i++) idx[i] = e->u.load.idx[i];
        }
        idx[k - 1] = rest ? rest : rx_e_int(a, 0);
        idx[k] = m->u.op.a;
        (*count)++;
    }
    return idx ? rx_e_load(a, e->u.load.buf, idx, n) : e;
}

static rx_expr *flat_expr(rx_arena *a, rx_arith *ar, rx_expr *e, int *count)
{
    int nk = e ? rx_expr_nchildren(e) : 0;
    if (!nk) return e;
    rx_expr *kids[8], **k = nk <= 8 ? kids : RX_NEWN(a, rx_expr *, nk);
    bool changed = false;
    for (int i = 0; i < nk; i++) {
        rx_expr *c = rx_expr_child(e, i);
        k[i] = flat_expr(a, ar, c, count);
        changed |= k[i] != c;
    }
    rx_expr *r = changed ? rx_expr_with_children(a, e, k) : e;
    return r->kind == RX_E_LOAD ? flat_load(a, ar, r, count) : r;
}

static void flat_stmts(rx_arena *a, rx_arith *ar, const rx_stmts *ss, int *count)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: flat_stmts(a, ar, &s->u.for_.body, count); break;
        case RX_S_BLOCK:
            flat_stmts(a, ar, &s->u.block.init, count);
            flat_stmts(a, ar, &s->u.block.body, count);
            break;
        case RX_S_STORE:
            for (int k = 0; k < s->u.store.nidx; k++)
                s->u.store.idx[k] = flat_expr(a, ar, s->u.store.idx[k], count);
            s->u.store.value = flat_expr(a, ar, s->u.store.value, count);
            break;
        case RX_S_IF:
            s->u.if_.cond = flat_expr(a, ar, s->u.if_.cond, count);
            flat_stmts(a, ar, &s->u.if_.then_s, count);
            flat_stmts(a, ar, &s->u.if_.else_s, count);
            break;
        case RX_S_LET:
            s->u.let.value = flat_expr(a, ar, s->u.let.value, count);
            flat_stmts(a, ar, &s->u.let.body, count);
            break;
        default: break;
        }
    }
}

bool rx_schedule_flat(rx_module *m, int *nmerged)
{
    int n = 0;
    rx_arith *ar = rx_arith_new(m->arena);
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_TIR) flat_stmts(m->arena, ar, &m->funcs[i]->tbody, &n);
    rx_arith_free(ar);
    if (nmerged) *nmerged = n;
    return true;
}
