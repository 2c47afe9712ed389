/*
 * gpu_reduce.c — the rows schedule: one work-group per row, a tree reduction in local
 * memory.
 *
 * A row reduction is the nest the tensor-expression builder writes for sum, max, min,
 * mean and the reductions inside softmax, layer_norm and rms_norm: spatial loops (the
 * grid chain, gpu_kernel.c) around one reduce loop whose body is one block
 *
 *     for r in [lo, lo + ext):
 *         block (spatial iterators bound to the chain, reduce iterators to r) {
 *             init: C[idx] = init
 *             body: C[idx] = C[idx] OP val        OP: + (floats and ints), max, min (floats)
 *         }
 *
 * with idx free of the reduction. One work-item per row (the grid schedule) reads its
 * row serially; the rows schedule (TVM dlight's reduction rule, without its
 * cross-thread shuffles: OpenCL 1.2 has none) gives each row a work-group of
 * max_threads work-items instead:
 *
 *     __local T rx_red[max_threads];                            at kernel scope
 *     for each row g of this group (g = group, group + groups, ...):
 *         bind the chain from g
 *         acc = identity of OP (0, -inf, +inf)
 *         for (k = local_id; k < ext; k += local_size)  acc = acc OP val(r = lo + k)
 *         rx_red[local_id] = acc; barrier
 *         for (s = local_size / 2; s > 0; s /= 2)        the tree: log2(T) steps
 *             if (local_id < s) rx_red[local_id] = rx_red[local_id] OP rx_red[local_id + s]
 *             barrier
 *         work-item 0: C[idx] = init OP rx_red[0]
 *         barrier                                          rx_red is reused by the next row
 *
 * Adjacent work-items read adjacent elements of the row (coalesced on a GPU), each row
 * is read once, and the launch has one group per row (capped at 65535 groups, a
 * grid-stride loop beyond). The order of the additions differs from the CPU's serial
 * one (a tree of partial sums), within the tolerances of a float reduction. The schedule
 * is taken when the reduction is long enough to share: its extent is symbolic or at
 * least ROWS_MIN; a short row (softmax over 6 classes) stays one work-item per row.
 *
 * Warps (CUDA: the dialect's shfl_down). Where a work-group is whole warps, each warp
 * first folds its lanes' accumulators with log2(32) shuffles down, lane 0 writes the
 * warp's partial to rx_red[warp], one barrier, and the first warp folds those partials
 * the same way: two barriers per row instead of log2(max_threads) + 1, and
 * max_threads / 32 elements of local memory. Every lane of the block runs the row loop
 * (its bounds depend only on the group), so the full-mask shuffles see all 32 lanes.
 *
 * Local memory: max_threads elements of the accumulator's type. More than the target's
 * max_local_bytes is a compile-time error naming the option (`opencl,max_threads=4096,
 * max_local_bytes=8192`: 16384 bytes needed); the launch record carries the bytes and
 * the runtime refuses a device with less local memory at load.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_int.h"

enum { ROWS_MIN = 64 }; /* a literal reduction extent below this stays serial per row */

/* Whether e is a LOAD of store s's buffer at s's indices. */
static bool loads_target(const rx_expr *e, const rx_stmt *s)
{
    if (e->kind != RX_E_LOAD || e->u.load.buf != s->u.store.buf || e->u.load.nidx != s->u.store.nidx)
        return false;
    for (int i = 0; i < e->u.load.nidx; i++)
        if (!rx_expr_same(e->u.load.idx[i], s->u.store.idx[i])) return false;
    return true;
}

/* Whether e mentions the reduce iterators of block b or the loop variable v. */
static bool uses_reduce(const rx_expr *e, const rx_stmt *b, const rx_svar *v)
{
    if (rx_expr_uses_var(e, v)) return true;
    for (int i = 0; i < b->u.block.niters; i++)
        if (b->u.block.iters[i].kind == RX_ITER_REDUCE && rx_expr_uses_var(e, b->u.block.iters[i].var))
            return true;
    return false;
}

bool rx_gpu_match_fold(const rx_stmts *under, rx_gpu_red *r)
{
    if (under->n != 1 || under->items[0]->kind != RX_S_FOR) return false;
    const rx_stmt *L = under->items[0];
    if (L->u.for_.thread || L->u.for_.body.n != 1 || L->u.for_.body.items[0]->kind != RX_S_BLOCK)
        return false;
    const rx_stmt *b = L->u.for_.body.items[0];
    if (b->u.block.init.n != 1 || b->u.block.body.n != 1) return false;
    const rx_stmt *in = b->u.block.init.items[0], *st = b->u.block.body.items[0];
    if (in->kind != RX_S_STORE || st->kind != RX_S_STORE || in->u.store.buf != st->u.store.buf ||
        in->u.store.nidx != st->u.store.nidx)
        return false;
    const rx_svar *v = L->u.for_.var;
    for (int i = 0; i < st->u.store.nidx; i++)
        if (!rx_expr_same(in->u.store.idx[i], st->u.store.idx[i]) ||
            uses_reduce(st->u.store.idx[i], b, v))
            return false;
    for (int i = 0; i < b->u.block.niters; i++) /* reduce iterators move with r alone */
        if (b->u.block.iters[i].kind == RX_ITER_REDUCE && b->u.block.iters[i].bind &&
            !rx_expr_uses_var(b->u.block.iters[i].bind, v))
            return false;
    const rx_expr *e = st->u.store.value;
    rx_dtype t = (rx_dtype)st->u.store.buf->dtype;
    bool fl = t == RX_DT_F32 || t == RX_DT_F64;
    if (!(e->kind == RX_E_ADD && (fl || (rx_dtype_is_int(t) && t != RX_DT_BOOL))) &&
        !((e->kind == RX_E_MAX || e->kind == RX_E_MIN) && fl))
        return false;
    if ((rx_dtype)e->dtype != t || uses_reduce(in->u.store.value, b, v)) return false;
    const rx_expr *val = loads_target(e->u.op.a, st) ? e->u.op.b
                       : loads_target(e->u.op.b, st) ? e->u.op.a : NULL;
    if (!val || rx_expr_loads_buf(val, st->u.store.buf)) return false;
    *r = (rx_gpu_red){
        .loop = L, .block = b, .store = st, .init = in->u.store.value, .val = val, .op = e->kind};
    return true;
}

/* `if (rx_t == 0) { C[idx] = init OP total; }`: work-item 0 stores the row's total. */
static void emit_item0_store(cg *g, const rx_gpu_red *r, const char *total)
{
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "if (rx_t == 0) {\n");
    g->indent++;
    rx_gpu_final_store(g, r, total);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* Warps per work-group when the rows schedule reduces by warp shuffles, else 0. */
static int warps(const gk *k)
{
    int64_t threads = rx_target_int(k->t, "max_threads");
    if (!k->dl->shfl_down || threads < k->dl->warp || threads % k->dl->warp) return 0;
    return (int)(threads / k->dl->warp);
}

/* `rx_acc = rx_acc OP shfl_down(rx_acc, o)` for o = warp / 2 .. 1: the fold of a warp's
 * accumulators into its lane 0. The shuffle is its own statement: OP may be a
 * conditional that would run it under divergence. */
static void emit_warp_fold(gk *k, const rx_gpu_red *r, const char *ct)
{
    cg *g = k->g;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (int rx_o = %d; rx_o > 0; rx_o /= 2) {\n", k->dl->warp / 2);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "    const %s rx_sh = ", ct);
    rx_sb_printf(g->out, k->dl->shfl_down, "rx_acc", "rx_o");
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "    rx_acc = ");
    rx_gpu_combine(g, r, "rx_acc", "rx_sh");
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* The warps' version of the tree (the essay's "Warps"): rx_acc of every lane in, the
 * row's total stored by lane 0 of warp 0. */
static void emit_warp_tree(gk *k, const rx_gpu_red *r, const char *ct, const char *identity)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    int w = warps(k);
    emit_warp_fold(k, r, ct);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_t %% %d == 0) rx_red[rx_t / %d] = rx_acc;\n", dl->warp, dl->warp);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s;\n", dl->barrier);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "if (rx_t < %d) {\n", dl->warp);
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "rx_acc = rx_t < %d ? rx_red[rx_t] : %s;\n", w, identity);
    emit_warp_fold(k, r, ct);
    emit_item0_store(g, r, "rx_acc");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
}

bool rx_gpu_match_rows(const gk *k, const rx_stmts *under, rx_gpu_red *r)
{
    int64_t ext;
    if (!rx_gpu_match_fold(under, r) ||
        (rx_expr_is_const(r->loop->u.for_.extent, &ext) && ext < ROWS_MIN))
        return false;
    rx_dtype t = (rx_dtype)r->store->u.store.buf->dtype;
    int64_t threads = rx_target_int(k->t, "max_threads");
    int w = warps(k);
    int64_t bytes = (w ? w : threads) * (int64_t)rx_dtype_bits(t) / 8;
    return rx_gpu_local_fits(k, r->loop, bytes, "the rows schedule of this reduction", &r->local_bytes);
}

bool rx_gpu_local_fits(const gk *k, const rx_stmt *at, int64_t bytes, const char *what,
                       uint32_t *out)
{
    int64_t limit = rx_target_int(k->t, "max_local_bytes");
    if (bytes > limit) {
        rxi_cg_err(k->g, at->loc, "%s needs %lld bytes of local memory, more than the target's "
                  "max_local_bytes=%lld (max_threads=%lld, tile=%lld)", what, (long long)bytes,
                  (long long)limit, (long long)rx_target_int(k->t, "max_threads"),
                  (long long)rx_target_int(k->t, "tile"));
        return false;
    }
    *out = (uint32_t)bytes;
    return true;
}

/* `a OP b` as an expression over two placeholders named by C text. */
typedef struct combine {
    rx_arena *ar;
    rx_svar *a, *b; /* placeholders: their scope names are the operands' text */
    rx_expr *e;     /* a OP b */
} combine;

static void combine_init(combine *c, const rx_gpu_red *r)
{
    rx_dtype t = (rx_dtype)r->store->u.store.buf->dtype;
    c->ar = rx_arena_new();
    c->a = rx_svar_new(c->ar, "rx_a", t, RX_SV_LET, -1);
    c->b = rx_svar_new(c->ar, "rx_b", t, RX_SV_LET, -2);
    c->e = rx_e_binary(c->ar, (rx_ekind)r->op, rx_e_var(c->ar, c->a), rx_e_var(c->ar, c->b));
}

/* Emits `a OP b` with the operands' C text (scope entries popped again). */
static void combine_emit(cg *g, const combine *c, const char *a, const char *b, rx_loc loc)
{
    int mark = g->syms.n;
    rxi_cg_push_sym(g, c->a, rx_xstrdup(a));
    rxi_cg_push_sym(g, c->b, rx_xstrdup(b));
    rxi_cg_expr(g, c->e, loc);
    rxi_cg_pop_syms(g, mark);
}

void rx_gpu_combine(cg *g, const rx_gpu_red *r, const char *a, const char *b)
{
    combine c;
    combine_init(&c, r);
    combine_emit(g, &c, a, b, r->loop->loc);
    rx_arena_free(c.ar);
}

void rx_gpu_final_store(cg *g, const rx_gpu_red *r, const char *total)
{
    rx_dtype t = (rx_dtype)r->store->u.store.buf->dtype;
    int smark = g->syms.n;
    rxi_cg_iters(g, r->block, true);
    const rx_buffer *buf = r->store->u.store.buf;
    const cg_sym *bs = rxi_cg_lookup(g, buf);
    rx_sb init = {0};
    rx_sb *save = g->out;
    g->out = &init;
    rxi_cg_expr_as(g, r->init, t, r->store->loc);
    g->out = save;
    combine c;
    combine_init(&c, r);
    rx_gpu_ind(g);
    if (bs && bs->dims) {
        rxi_cg_sub_open(g, bs);
        rxi_cg_index(g, bs, r->store->u.store.idx, r->store->u.store.nidx, r->store->loc);
        rxi_cg_sub_close(g, bs);
        rx_sb_puts(g->out, " = ");
        int m2 = g->syms.n;
        rxi_cg_push_sym(g, c.a, rx_xstrdup(rx_sb_str(&init)));
        rxi_cg_push_sym(g, c.b, rx_xstrdup(total));
        rxi_cg_encode(g, t, c.e, r->loop->loc);
        rxi_cg_pop_syms(g, m2);
        rx_sb_puts(g->out, ";\n");
    } else {
        rxi_cg_err(g, r->loop->loc, "buffer \"%s\" is not in scope", buf->name);
    }
    rx_arena_free(c.ar);
    rx_sb_free(&init);
    rxi_cg_pop_syms(g, smark);
}

void rx_gpu_emit_rows(gk *k, const rx_stmt *const *chain, int n, const rx_gpu_red *r)
{
    cg *g = k->g;
    const rx_gpu_dialect *dl = k->dl;
    rx_dtype t = (rx_dtype)r->store->u.store.buf->dtype;
    const char *ct = rxi_cg_ctype(t);
    int64_t threads = rx_target_int(k->t, "max_threads");
    combine c;
    combine_init(&c, r);
    rx_loc loc = r->loop->loc;
    int w = warps(k);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s %s rx_red[%lld];\n", dl->local_decl, ct, (long long)(w ? w : threads));
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s rx_t = %s;\n", dl->lidx, dl->local_id);
    rx_gpu_chain_count(g, chain, n);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_g = %s; rx_g < rx_n; rx_g += %s) {\n", dl->group_id,
                 dl->num_groups);
    g->indent++;
    int mark = g->syms.n;
    if (n) rx_gpu_chain_bind(g, chain, n);
    /* the identity of OP */
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s rx_acc = ", ct);
    rx_expr *id = r->op == RX_E_ADD ? (rx_dtype_is_float(t) ? rx_e_float(c.ar, 0.0, t)
                                                             : rx_e_typed_int(c.ar, 0, t))
                : rx_e_float(c.ar, r->op == RX_E_MAX ? -INFINITY : INFINITY, t);
    rx_sb idtext = {0};
    rx_sb *save = g->out;
    g->out = &idtext;
    rxi_cg_expr(g, id, loc);
    g->out = save;
    rx_sb_printf(g->out, "%s;\n", rx_sb_str(&idtext));
    /* each work-item's share of the row */
    const rx_svar *v = r->loop->u.for_.var;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "{\n");
    g->indent++;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_lo = ");
    rxi_cg_expr_as(g, r->loop->u.for_.min, RX_DT_I64, loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "const long rx_ext = ");
    rxi_cg_expr_as(g, r->loop->u.for_.extent, RX_DT_I64, loc);
    rx_sb_puts(g->out, ";\n");
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "for (long rx_k = rx_t; rx_k < rx_ext; rx_k += %s) {\n", dl->local_size);
    g->indent++;
    int imark = g->syms.n;
    char *vn = rxi_cg_fresh(g, v->name);
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "const %s %s = ", rxi_cg_ctype((rx_dtype)v->dtype), vn);
    rxi_cg_cast_open(g, rxi_cg_ctype((rx_dtype)v->dtype));
    rx_sb_puts(g->out, "rx_lo + rx_k));\n");
    rxi_cg_push_sym(g, v, vn);
    rxi_cg_iters(g, r->block, false);
    rx_sb val = {0};
    g->out = &val;
    rxi_cg_expr_as(g, r->val, t, r->store->loc);
    g->out = save;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "rx_acc = ");
    rx_gpu_combine(g, r, "rx_acc", rx_sb_str(&val));
    rx_sb_puts(g->out, ";\n");
    rx_sb_free(&val);
    rxi_cg_pop_syms(g, imark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    if (w) {
        emit_warp_tree(k, r, ct, rx_sb_str(&idtext));
    } else {
        /* the tree */
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "rx_red[rx_t] = rx_acc;\n");
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "%s;\n", dl->barrier);
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "for (%s rx_s = %s / 2; rx_s > 0; rx_s /= 2) {\n", dl->lidx, dl->local_size);
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "    if (rx_t < rx_s) rx_red[rx_t] = ");
        rx_gpu_combine(g, r, "rx_red[rx_t]", "rx_red[rx_t + rx_s]");
        rx_sb_puts(g->out, ";\n");
        rx_gpu_ind(g);
        rx_sb_printf(g->out, "    %s;\n", dl->barrier);
        rx_gpu_ind(g);
        rx_sb_puts(g->out, "}\n");
        emit_item0_store(g, r, "rx_red[0]");
    }
    rx_gpu_ind(g);
    rx_sb_printf(g->out, "%s; /* rx_red is the next row's */\n", dl->barrier);
    rxi_cg_pop_syms(g, mark);
    g->indent--;
    rx_gpu_ind(g);
    rx_sb_puts(g->out, "}\n");
    rx_sb_free(&idtext);
    rx_arena_free(c.ar);
}
