/*
 * schedule_coalesce.c — a short innermost loop merged with the loop around it when both
 * walk one contiguous run of every buffer they touch (loop coalescing): a step of the
 * CPU schedule (rx_pass_schedule_cpu), after the row, tile, concat and copy steps and
 * before the parallel and vector rules (schedule.c).
 *
 * Why: an elementwise kernel over an NCHW map keeps the tensor's nest, its innermost
 * loop the width (56, 28, 14, 7 in a ResNet). gcc vectorizes that loop with a vector
 * factor set by its narrowest type (32 lanes of a u8 quantized value in a ymm) and runs
 * the rest of each row in a scalar epilogue: a quantized ResNet block's requantization
 * (i32 -> f32 scale, round, clip, u8, and back) took 565 us per (1, 64, 56, 56) call on
 * one thread, 24 of each 56 elements scalar at ~30 cycles each. The merged loop
 * (3136 iterations) runs all but nothing in vectors.
 *
 * The rule, for FOR a [0, Ea) whose body is exactly one FOR b [0, Eb) (both serial,
 * unbound, from 0; b innermost: its body holds no FOR; Eb a literal below COALESCE_MIN;
 * no loop of the whole nest already given a kind by an earlier step): every occurrence
 * of a and of b in b's body (stores' and loads' indices, values, conditions, lets, block
 * iterators) is in an access X[.., a, 0, .., 0, b, ..] of a buffer whose extents from
 * a's position + 1 through b's multiply to Eb (structurally literal), a and b nowhere
 * else in that access; and block iterators of a and b are the loop variables themselves
 * (legalize's implicit iterators) and spatial: a block with iterators of its own bound
 * to them (`d = T.axis.spatial(2, d0)`, its body reading d) is left alone. Then
 *     for a { for b { S } }  ->  for j [0, Ea * Eb) { S' }
 * where S' has each such access as X[.., 0, 0, .., 0, j, ..]: the same flat offset,
 * a * Eb + b == j, for every (a, b) (the IR reads a LOAD and a STORE as the Horner
 * offset of its indices; an index may exceed its own extent, as schedule_flat.c's
 * loads do), and block iterators of a and b replaced by one spatial iterator of j. The
 * step repeats on the merged loop while its extent stays below COALESCE_MIN (a
 * (1, 3, 7, 7) map merges its width, height and channels). A loop an access reads
 * along any other axis (a per-channel scale X[0, c, 0, 0] against the channel loop)
 * stops the merge there: that loop keeps its own iterations for the parallel rule.
 *
 * Cost: one walk of the nest's expressions per merge tried; new nodes only for the
 * accesses of a merged pair.
 */
#include "schedule_int.h"

enum { COALESCE_MIN = 256 };

static bool is_var(const rx_expr *e, const rx_svar *v) { return e->kind == RX_E_VAR && e->u.var == v; }

static bool plain_for(const rx_stmt *s)
{
    return s->kind == RX_S_FOR && s->u.for_.loop_kind == RX_LOOP_SERIAL && !s->u.for_.thread &&
           rx_expr_is_int(s->u.for_.min, 0);
}

/* The merge being checked: a (outer) and b (inner, extent eb). */
typedef struct co {
    const rx_svar *a, *b;
    int64_t eb;
    bool ok;
} co;

/* The position of b in access indices idx (n of them, of buffer buf) when the access
 * is X[.., a, 0, .., 0, b, ..] with the extents after a's position through b's
 * multiplying to eb, a and b in no other index; -1 when a and b do not occur; -2 when
 * they occur otherwise. *pa gets a's position. */
static int access_pos(const co *c, const rx_buffer *buf, rx_expr *const *idx, int n, int *pa)
{
    int ia = -1, ib = -1;
    bool other = false;
    for (int k = 0; k < n; k++) {
        bool ua = rx_expr_uses_var(idx[k], c->a), ub = rx_expr_uses_var(idx[k], c->b);
        if (!ua && !ub) continue;
        if (ua && is_var(idx[k], c->a) && ia < 0) ia = k;
        else if (ub && is_var(idx[k], c->b) && ib < 0) ib = k;
        else other = true;
    }
    if (ia < 0 && ib < 0 && !other) return -1;
    if (other || ia < 0 || ib <= ia || buf->ndim != n) return -2;
    int64_t prod = 1, e;
    for (int k = ia + 1; k <= ib; k++) {
        if (k < ib && !rx_expr_is_int(idx[k], 0)) return -2;
        if (!rx_expr_is_const(buf->shape[k], &e)) return -2;
        prod *= e;
    }
    if (prod != c->eb) return -2;
    *pa = ia;
    return ib;
}

static void check_expr(co *c, const rx_expr *e)
{
    if (!c->ok || !e) return;
    if (e->kind == RX_E_VAR) {
        if (e->u.var == c->a || e->u.var == c->b) c->ok = false; /* outside an access */
        return;
    }
    if (e->kind == RX_E_LOAD) {
        int pa;
        if (access_pos(c, e->u.load.buf, e->u.load.idx, e->u.load.nidx, &pa) == -2) {
            c->ok = false;
            return;
        }
        for (int k = 0; k < e->u.load.nidx; k++) /* indices' own loads (a gather) */
            if (!is_var(e->u.load.idx[k], c->a) && !is_var(e->u.load.idx[k], c->b))
                check_expr(c, e->u.load.idx[k]);
        return;
    }
    int nk = rx_expr_nchildren(e);
    for (int i = 0; i < nk; i++) check_expr(c, rx_expr_child(e, i));
}

static void check_stmts(co *c, const rx_stmts *ss)
{
    for (int i = 0; i < ss->n && c->ok; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) {
                const rx_iter *it = &s->u.block.iters[k];
                bool self = it->var == c->a || it->var == c->b; /* the loop's own variable */
                if (self ? it->kind != RX_ITER_SPATIAL : rx_expr_uses_var(it->bind, c->a) ||
                                                             rx_expr_uses_var(it->bind, c->b))
                    c->ok = false; /* an iterator of its own bound to a or b: its uses are
                                      not the loops' (a hand-written block's d = d0) */
            }
            check_stmts(c, &s->u.block.init);
            check_stmts(c, &s->u.block.body);
            break;
        case RX_S_STORE: {
            int pa;
            if (access_pos(c, s->u.store.buf, s->u.store.idx, s->u.store.nidx, &pa) == -2) c->ok = false;
            for (int k = 0; k < s->u.store.nidx; k++)
                if (!is_var(s->u.store.idx[k], c->a) && !is_var(s->u.store.idx[k], c->b))
                    check_expr(c, s->u.store.idx[k]);
            check_expr(c, s->u.store.value);
            break;
        }
        case RX_S_IF:
            check_expr(c, s->u.if_.cond);
            check_stmts(c, &s->u.if_.then_s);
            check_stmts(c, &s->u.if_.else_s);
            break;
        case RX_S_LET:
            check_expr(c, s->u.let.value);
            check_stmts(c, &s->u.let.body);
            break;
        case RX_S_ALLOC: c->ok = false; break; /* a per-iteration buffer: left alone */
        default: c->ok = false; break;
        }
    }
}

/* The indices of an accepted access with (a, 0.., b) as (0, 0.., j); NULL when the
 * access does not move with a and b. */
static rx_expr **merged_idx(rx_arena *ar, const co *c, const rx_buffer *buf, rx_expr *const *idx,
                            int n, const rx_svar *j)
{
    int pa, pb = access_pos(c, buf, idx, n, &pa);
    if (pb < 0) return NULL;
    rx_expr **r = RX_NEWN(ar, rx_expr *, n);
    for (int k = 0; k < n; k++) r[k] = idx[k];
    for (int k = pa; k < pb; k++) r[k] = rx_e_int(ar, 0);
    r[pb] = rx_e_var(ar, j);
    return r;
}

static rx_expr *merge_expr(rx_arena *ar, const co *c, rx_expr *e, const rx_svar *j)
{
    int nk = e ? rx_expr_nchildren(e) : 0;
    if (!nk) return e;
    rx_expr *kids[8], **k = nk <= 8 ? kids : RX_NEWN(ar, rx_expr *, nk);
    bool changed = false;
    for (int i = 0; i < nk; i++) {
        rx_expr *ch = rx_expr_child(e, i);
        k[i] = merge_expr(ar, c, ch, j);
        changed |= k[i] != ch;
    }
    rx_expr *r = changed ? rx_expr_with_children(ar, e, k) : e;
    if (r->kind != RX_E_LOAD) return r;
    rx_expr **idx = merged_idx(ar, c, r->u.load.buf, r->u.load.idx, r->u.load.nidx, j);
    return idx ? rx_e_load(ar, r->u.load.buf, idx, r->u.load.nidx) : r;
}

static void merge_stmts(rx_arena *ar, const co *c, const rx_stmts *ss, const rx_svar *j,
                        rx_expr *ej)
{
    for (int i = 0; i < ss->n; i++) {
        rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_BLOCK: {
            rx_iter *its = RX_NEWN(ar, rx_iter, s->u.block.niters + 1);
            int n = 0;
            bool added = false;
            for (int k = 0; k < s->u.block.niters; k++) {
                const rx_iter *it = &s->u.block.iters[k];
                if (it->var == c->a || it->var == c->b) {
                    if (!added) its[n++] = (rx_iter){j, RX_ITER_SPATIAL, ej, rx_e_var(ar, j)};
                    added = true;
                    continue;
                }
                its[n++] = *it;
            }
            s->u.block.iters = its;
            s->u.block.niters = n;
            merge_stmts(ar, c, &s->u.block.init, j, ej);
            merge_stmts(ar, c, &s->u.block.body, j, ej);
            break;
        }
        case RX_S_STORE: {
            for (int k = 0; k < s->u.store.nidx; k++)
                s->u.store.idx[k] = merge_expr(ar, c, s->u.store.idx[k], j);
            rx_expr **idx = merged_idx(ar, c, s->u.store.buf, s->u.store.idx, s->u.store.nidx, j);
            if (idx) s->u.store.idx = idx;
            s->u.store.value = merge_expr(ar, c, s->u.store.value, j);
            break;
        }
        case RX_S_IF:
            s->u.if_.cond = merge_expr(ar, c, s->u.if_.cond, j);
            merge_stmts(ar, c, &s->u.if_.then_s, j, ej);
            merge_stmts(ar, c, &s->u.if_.else_s, j, ej);
            break;
        case RX_S_LET:
            s->u.let.value = merge_expr(ar, c, s->u.let.value, j);
            merge_stmts(ar, c, &s->u.let.body, j, ej);
            break;
        default: break;
        }
    }
}

/* FOR s (outer) and its one inner FOR merged (file essay), or NULL. */
static rx_stmt *merge_pair(rx_module *m, rx_stmt *s)
{
    int64_t ea, eb;
    if (!plain_for(s) || s->u.for_.body.n != 1) return NULL;
    rx_stmt *in = s->u.for_.body.items[0];
    if (!plain_for(in) || rx_stmts_hold_for(&in->u.for_.body) ||
        !rx_expr_is_const(in->u.for_.extent, &eb) || eb >= COALESCE_MIN ||
        !rx_expr_is_const(s->u.for_.extent, &ea))
        return NULL;
    co c = {s->u.for_.var, in->u.for_.var, eb, true};
    check_stmts(&c, &in->u.for_.body);
    if (!c.ok) return NULL;
    rx_arena *ar = m->arena;
    rx_svar *j = rx_svar_new(ar, rx_arena_printf(ar, "%s_%s", s->u.for_.var->name, in->u.for_.var->name),
                             RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_expr *ej = rx_e_int(ar, ea * eb);
    merge_stmts(ar, &c, &in->u.for_.body, j, ej);
    rx_stmt *r = rx_s_for(ar, j, rx_e_int(ar, 0), ej, RX_LOOP_SERIAL, in->u.for_.body);
    r->loc = s->loc;
    return r;
}

/* True when no loop of the statements has a kind other than serial. */
static bool all_serial(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (s->u.for_.loop_kind != RX_LOOP_SERIAL || s->u.for_.thread ||
                !all_serial(&s->u.for_.body))
                return false;
            break;
        case RX_S_BLOCK:
            if (!all_serial(&s->u.block.init) || !all_serial(&s->u.block.body)) return false;
            break;
        case RX_S_IF:
            if (!all_serial(&s->u.if_.then_s) || !all_serial(&s->u.if_.else_s)) return false;
            break;
        case RX_S_LET:
            if (!all_serial(&s->u.let.body)) return false;
            break;
        default: break;
        }
    }
    return true;
}

enum { MAX_CHAIN = 16 };

/* A top-level nest FOR s with its innermost pairs merged while the merged extent stays
 * short (the chain of single-FOR bodies from s down), or NULL when nothing merged. */
static rx_stmt *coalesce_nest(rx_module *m, rx_stmt *s)
{
    if (!all_serial(&(rx_stmts){.items = &s, .n = 1})) return NULL;
    rx_stmt *top = s, **chain[MAX_CHAIN];
    int n = 0;
    chain[n++] = &top;
    while (n < MAX_CHAIN && (*chain[n - 1])->u.for_.body.n == 1 &&
           (*chain[n - 1])->u.for_.body.items[0]->kind == RX_S_FOR)
        chain[n] = &(*chain[n - 1])->u.for_.body.items[0], n++;
    int merged = 0;
    for (int k = n - 2; k >= 0; k--) {
        rx_stmt *r = merge_pair(m, *chain[k]);
        if (!r) break;
        *chain[k] = r;
        merged++;
    }
    return merged ? top : NULL;
}

bool rx_schedule_coalesce(rx_module *m, int *nmerged)
{
    int n = rx_schedule_nests(m, coalesce_nest);
    if (nmerged) *nmerged = n;
    return true;
}
