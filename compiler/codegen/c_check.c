/*
 * c_check.c — the size checks a C kernel makes before its first loop.
 *
 * A kernel's sizes are computed in C from its symbolic variables: loop extents (`n * 4`)
 * and the element counts of heap buffers. Fusion keeps the intermediate tensors of a
 * group inside one kernel, so the VM, which checks every size it computes (its MUL,
 * ADD, SUB fail on overflow), never sees theirs: a tile of 2^62 + 1 repeats summed in
 * one kernel would wrap to a small extent and give a wrong answer, a broadcast of
 * 2^64 elements would loop for ever. So every kernel checks its own sizes first:
 *
 *   for every chain of nested FORs (outermost to a FOR holding no other), the product
 *   of the extents that only use the kernel's symbolic variables, and for every ALLOC
 *   whose dims only use them, the product of its dims,
 *
 * each computed with overflow-checked arithmetic (rx_ckmul, rx_ckadd, rx_cksub in
 * the prelude: every +, - and * of the extents themselves too), before anything runs.
 * One that overflows int64 makes the kernel return RX_KERNEL_EOVERFLOW (codegen.h;
 * the VM reports "kernel NAME: a size overflows int64 (fused shapes of more than
 * 2^63 - 1 elements)"). An extent using a loop variable or a LET value cannot be
 * computed up front and is left out of its chain (its enclosing extents still count);
 * a chain of literal extents whose product fits is not emitted (nothing to check), so
 * kernels of static shapes are unchanged. Cost: one multiply-with-overflow per extent
 * per chain, once per call, outside every loop.
 */
#include <stdlib.h>
#include <string.h>

#include "cgen_int.h"

typedef struct sctx {
    cg *g;
    RX_VEC(const rx_expr *) path; /* the evaluable extents of the enclosing FORs */
    RX_VEC(char *) lines;         /* checks emitted (deduplicated) */
} sctx;

/* Whether e can be computed at the top of the kernel: integer arithmetic over literals
 * and the function's symbolic variables only. */
static bool evaluable(const rx_func *f, const rx_expr *e)
{
    switch ((rx_ekind)e->kind) {
    case RX_E_INT: return true;
    case RX_E_VAR:
        for (int j = 0; j < f->nsvars; j++)
            if (f->svars[j] == e->u.var) return true;
        return false;
    case RX_E_ADD: case RX_E_SUB: case RX_E_MUL: case RX_E_FLOORDIV: case RX_E_FLOORMOD:
    case RX_E_MIN: case RX_E_MAX:
        return evaluable(f, e->u.op.a) && evaluable(f, e->u.op.b);
    default: return false;
    }
}

/* Emits the product of es[0..n) as one check, unless all are literals whose product
 * fits, or the same check was emitted already. */
static void check_product(sctx *c, const rx_expr *const *es, int n)
{
    bool literal = true;
    int64_t p = 1, v;
    for (int i = 0; i < n && literal; i++)
        literal = rx_expr_is_const(es[i], &v) && !__builtin_mul_overflow(p, v, &p);
    if (n == 0 || literal) return;
    cg *g = c->g;
    rx_sb *out = g->out, line = {0};
    g->out = &line;
    g->checked_arith = true;
    rx_sb_puts(&line, "(void)");
    for (int i = 0; i < n; i++) rx_sb_puts(&line, "rx_ckmul(");
    rx_sb_putc(&line, '1');
    for (int i = 0; i < n; i++) {
        rx_sb_puts(&line, ", ");
        rxi_cg_expr_as(g, es[i], RX_DT_I64, 0);
        rx_sb_puts(&line, ", &rx_ovf)");
    }
    g->checked_arith = false;
    g->out = out;
    for (int i = 0; i < c->lines.n; i++)
        if (!strcmp(c->lines.items[i], rx_sb_str(&line))) {
            rx_sb_free(&line);
            return;
        }
    RX_VEC_PUSH(c->lines, rx_sb_take(&line));
}

static void walk(sctx *c, const rx_stmts *ss)
{
    const rx_func *f = c->g->f;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            int mark = c->path.n;
            if (evaluable(f, s->u.for_.extent)) RX_VEC_PUSH(c->path, s->u.for_.extent);
            if (rx_stmts_hold_for(&s->u.for_.body)) walk(c, &s->u.for_.body);
            else {
                check_product(c, c->path.items, c->path.n);
                walk(c, &s->u.for_.body); /* allocations inside */
            }
            c->path.n = mark;
            break;
        }
        case RX_S_BLOCK:
            walk(c, &s->u.block.init);
            walk(c, &s->u.block.body);
            break;
        case RX_S_IF:
            walk(c, &s->u.if_.then_s);
            walk(c, &s->u.if_.else_s);
            break;
        case RX_S_LET: walk(c, &s->u.let.body); break;
        case RX_S_ALLOC: {
            const rx_buffer *b = s->u.alloc.buf;
            bool ok = true;
            for (int k = 0; k < b->ndim && ok; k++) ok = evaluable(f, b->shape[k]);
            if (ok) check_product(c, (const rx_expr *const *)b->shape, b->ndim);
            break;
        }
        default: break;
        }
    }
}

bool rxi_cg_size_checks(cg *g, const rx_stmts *body)
{
    sctx c = {g, {0}, {0}};
    walk(&c, body);
    if (c.lines.n) {
        rx_sb_puts(g->out, "    int32_t rx_ovf = 0;\n");
        for (int i = 0; i < c.lines.n; i++) {
            rx_sb_printf(g->out, "    %s;\n", c.lines.items[i]);
            free(c.lines.items[i]);
        }
        rx_sb_printf(g->out, "    if (rx_ovf) return %d;\n", RX_KERNEL_EOVERFLOW);
        g->need[H_CKARITH] |= 1;
    }
    bool any = c.lines.n > 0;
    RX_VEC_FREE(c.path);
    RX_VEC_FREE(c.lines);
    return any;
}
