/*
 * gpu_affine.c — the affine independence rule: a perfect nest whose iterations write
 * distinct elements through a flattened index.
 *
 * The grid schedule shares a nest's outer loops between work-items when each
 * iteration writes its own elements (rx_loop_independent, schedule.c's rule: every
 * stored buffer indexed by the loop variable itself at one position). A workspace
 * written through a flat index, `ws[k0 * 4096 + j]` (the paper's figure 11, a split-k
 * matmul whose partial sums share one buffer), breaks that rule although every
 * iteration of (k0, j) still owns its element. This rule proves it for a chain of
 * perfectly nested loops L0 .. Lm-1 (each the only statement of the one before, its
 * extent and start free of the chain's variables):
 *
 *   One tuple.  Every access (store or load) of a buffer the body stores uses one index
 *               tuple E_b (the same expression, rx_expr_same), free of the variables of
 *               loops inside the body: an iteration reads and writes only its element.
 *   Injective.  E_b flattened row-major over b's shape is affine in each chain variable
 *               v_i with a literal stride s_i (F[v_i := v_i + 1] - F simplifies to a
 *               literal) and the strides are a mixed radix: sorted ascending, s_0 >= 1
 *               and s_k+1 >= s_k * extent_k (literal extents; the outermost stride's
 *               extent may be symbolic), so distinct iterations give distinct elements.
 *
 * The body may hold loops, stores, and ifs; a block with iterators, an allocation or a
 * let ends the proof (false). Loads of buffers the body does not store are free. A
 * chain proved this way is the grid chain of the nest (gpu_kernel.c's grid schedule);
 * the rule is tried only where schedule.c's rule gave no chain, so the CPU target's
 * OpenMP decisions are unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

typedef struct acc {
    const rx_buffer *buf;
    rx_expr *const *idx; /* the first store's indices (its tuple) */
} acc;

typedef struct aff_ck {
    RX_VEC(acc) stored;
    RX_VEC(const rx_svar *) inner; /* variables of loops inside the body */
    bool ok;
} aff_ck;

static acc *find(aff_ck *c, const rx_buffer *b)
{
    for (int i = 0; i < c->stored.n; i++)
        if (c->stored.items[i].buf == b) return &c->stored.items[i];
    return NULL;
}

static bool same_tuple(const rx_buffer *b, rx_expr *const *x, rx_expr *const *y)
{
    for (int d = 0; d < b->ndim; d++)
        if (!rx_expr_same(x[d], y[d])) return false;
    return true;
}

/* Walk 1: stored buffers and their tuples, inner loop variables; what ends the proof. */
static void collect(aff_ck *c, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n && c->ok; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (s->u.for_.thread) c->ok = false;
            RX_VEC_PUSH(c->inner, s->u.for_.var);
            collect(c, &s->u.for_.body);
            break;
        case RX_S_STORE: {
            const rx_buffer *b = s->u.store.buf;
            acc *a = find(c, b);
            if (s->u.store.nidx != b->ndim) c->ok = false;
            else if (!a) RX_VEC_PUSH(c->stored, ((acc){b, s->u.store.idx}));
            else if (!same_tuple(b, a->idx, s->u.store.idx)) c->ok = false;
            break;
        }
        case RX_S_IF:
            collect(c, &s->u.if_.then_s);
            collect(c, &s->u.if_.else_s);
            break;
        case RX_S_BLOCK:
            if (s->u.block.niters) c->ok = false;
            collect(c, &s->u.block.init);
            collect(c, &s->u.block.body);
            break;
        default: c->ok = false; break; /* ALLOC, LET */
        }
    }
}

/* Walk 2: every load of a stored buffer uses its tuple. */
static void check_loads(aff_ck *c, const rx_expr *e)
{
    if (!e || !c->ok) return;
    if (e->kind == RX_E_LOAD) {
        const acc *a = find(c, e->u.load.buf);
        if (a && (e->u.load.nidx != a->buf->ndim || !same_tuple(a->buf, a->idx, e->u.load.idx)))
            c->ok = false;
    }
    int n = rx_expr_nchildren(e);
    for (int i = 0; i < n; i++) check_loads(c, rx_expr_child(e, i));
}

static void check_stmts(aff_ck *c, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n && c->ok; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            check_loads(c, s->u.for_.min);
            check_loads(c, s->u.for_.extent);
            check_stmts(c, &s->u.for_.body);
            break;
        case RX_S_STORE:
            for (int k = 0; k < s->u.store.nidx; k++) check_loads(c, s->u.store.idx[k]);
            check_loads(c, s->u.store.value);
            break;
        case RX_S_IF:
            check_loads(c, s->u.if_.cond);
            check_stmts(c, &s->u.if_.then_s);
            check_stmts(c, &s->u.if_.else_s);
            break;
        case RX_S_BLOCK:
            check_stmts(c, &s->u.block.init);
            check_stmts(c, &s->u.block.body);
            break;
        default: break;
        }
    }
}

typedef struct radix {
    int64_t stride, extent; /* extent -1: symbolic */
} radix;

static int by_stride(const void *x, const void *y)
{
    const radix *a = x, *b = y;
    return (a->stride > b->stride) - (a->stride < b->stride);
}

/* Whether a's tuple, flattened over its buffer, is injective over chain[0..n). */
static bool injective(rx_arena *ar_mem, const rx_stmt *const *chain, int n, const acc *a,
                      const aff_ck *c)
{
    const rx_buffer *b = a->buf;
    rx_expr *flat = NULL;
    for (int d = 0; d < b->ndim; d++) {
        rx_expr *ix = a->idx[d], *ext = b->shape[d];
        if (rx_expr_loads_buf(ix, NULL)) return false; /* read from data: not affine */
        for (int k = 0; k < c->inner.n; k++)
            if (rx_expr_uses_var(ix, c->inner.items[k])) return false;
        if ((rx_dtype)ix->dtype != RX_DT_I64) ix = rx_e_cast(ar_mem, RX_DT_I64, ix);
        if ((rx_dtype)ext->dtype != RX_DT_I64) ext = rx_e_cast(ar_mem, RX_DT_I64, ext);
        flat = d ? rx_e_binary(ar_mem, RX_E_ADD, rx_e_binary(ar_mem, RX_E_MUL, flat, ext), ix) : ix;
    }
    if (!flat) return false; /* a scalar buffer: every iteration writes it */
    radix rs[RX_GPU_MAX_CHAIN];
    rx_arith *ar = rx_arith_new(ar_mem);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const rx_svar *v = chain[i]->u.for_.var;
        rx_vmap step = {0};
        rx_vmap_set(&step, v, rx_e_binary(ar_mem, RX_E_ADD, rx_e_var(ar_mem, v),
                                          rx_e_typed_int(ar_mem, 1, (rx_dtype)v->dtype)));
        rx_expr *d = rx_arith_simplify(ar, rx_e_binary(ar_mem, RX_E_SUB,
                                                       rx_expr_subst(ar_mem, flat, &step), flat));
        rx_vmap_free(&step);
        int64_t st, ext;
        ok = rx_expr_is_const(d, &st) && st >= 0;
        rs[i] = (radix){st, rx_expr_is_const(chain[i]->u.for_.extent, &ext) ? ext : -1};
        if (ok && st == 0) ok = rs[i].extent == 1; /* several iterations, one element */
    }
    rx_arith_free(ar);
    if (!ok) return false;
    qsort(rs, (size_t)n, sizeof *rs, by_stride);
    for (int i = 0; i + 1 < n; i++) {
        if (rs[i].extent == 1) continue;
        if (rs[i].extent < 0 || rs[i].stride == 0 ||
            rs[i + 1].stride / rs[i].stride < rs[i].extent) /* s_i+1 < s_i * e_i */
            return false;
    }
    return true;
}

/* Whether chain[0..n) satisfies the rule (the essay). */
static bool affine_ok(const rx_stmt *const *chain, int n)
{
    aff_ck c = {.ok = true};
    collect(&c, &chain[n - 1]->u.for_.body);
    if (c.ok) check_stmts(&c, &chain[n - 1]->u.for_.body);
    bool ok = c.ok && c.stored.n > 0;
    rx_arena *a = ok ? rx_arena_new() : NULL;
    for (int i = 0; i < c.stored.n && ok; i++) ok = injective(a, chain, n, &c.stored.items[i], &c);
    if (a) rx_arena_free(a);
    RX_VEC_FREE(c.stored);
    RX_VEC_FREE(c.inner);
    return ok;
}

int rx_gpu_affine_chain(const rx_stmt *s, const rx_stmt **chain)
{
    int m = 0;
    while (s && s->kind == RX_S_FOR && m < RX_GPU_MAX_CHAIN && !s->u.for_.thread &&
           rx_gpu_free_of_chain(s, chain, m)) {
        chain[m++] = s;
        s = s->u.for_.body.n == 1 ? s->u.for_.body.items[0] : NULL;
    }
    for (; m > 0; m--)
        if (affine_ok(chain, m)) return m;
    return 0;
}
