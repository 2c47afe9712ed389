/*
 * c_rowcopy.c — row copies of large destinations with full-line (64-byte) stores.
 *
 * What it emits for: an innermost vectorized FOR v (from 0) whose only statement is a
 * block without init storing one load of another buffer of the same dtype,
 *
 *   for v in range(E) (vectorized):
 *     block (iterators bound to expressions of v and outer variables): C[..] = X[..]
 *
 * where, with the block's iterators replaced by their bindings, the last index of both
 * C and X steps by one along v and every other index not at all (each step a literal
 * proved by the arithmetic; no index reads data). Each run of the loop then copies one
 * contiguous row of E elements from X to C: a permute keeping the innermost axis
 * (attention's (b, s, h, d) -> (b, h, s, d)), a concat along any axis but the last (the
 * KV-cache append), a slice, a reshape's or a broadcast's materialization:
 *
 *   if (rx_row_on && C's bytes >= RX_ROW_COPY_MIN && E * size >= 64) {
 *       v = 0; the block's iterators;
 *       rx_row_copy(&C[..], &X[..], E * size);
 *   } else
 *       the loop as it was
 *
 * Why: kernels below O3 are compiled for the baseline x86-64 (c_isa.c: memory-bound
 * loops get no ISA versions), so the loop's stores are 16 bytes wide, four per cache
 * line. Past the cache that halves a copy's bandwidth. Measured on this machine (Zen 5,
 * 2 threads, a C loop of this nest against 2-thread memcpy, best of 30, quiet): the
 * (16, 512, 16, 64) f32 permute (32 MiB) ran at 0.50 of memcpy with 16-byte stores,
 * 0.76 with 64-byte AVX-512 stores, 0.78 with 64-byte streaming stores and 0.50 with
 * 16-byte streaming ones; (32, 512, 16, 64) (64 MiB) 0.43, 0.74, 0.71, 0.48; at 8 MiB
 * 0.70, 0.72, 0.44, 0.44. So the width is what counts, not skipping the read for
 * ownership, and plain stores keep a destination that fits the cache there for its
 * consumer: the first version of this file streamed past the cache, and beside the
 * main build (bench_kernels.py --sections copy, quiet) it made the KV-cache concat of
 * (16, 16, 512, 64) 0.7x as fast as the plain loop and the O3 permute (already 64-byte
 * AVX-512 stores in its ISA version) 0.74x.
 *
 * rx_row_copy copies with one 64-byte load and store per line on CPUs with AVX-512
 * (the tail with memcpy), else with memcpy (AVX2's 32-byte moves in glibc). The test
 * runs when the object loads; RX_KERNEL_ISA=base turns the helper off (the plain loop),
 * and at O3 it is not emitted (the full ISA versions store 64 bytes already),
 * which the tests use to compare both paths, and so does a build without x86-64
 * intrinsics (rx_row_on is then 0). RX_ROW_COPY_MIN is 4 MiB: below it the rows are in
 * the L2 or L3 and the width does not matter.
 *
 * Why it is exact: the helper moves the row's bytes (loads and stores of whole
 * registers, no arithmetic), to the same elements the loop writes.
 *
 * Cost: a substitution and a few arithmetic proofs per vectorized loop at emission.
 */
#include <string.h>

#include "cgen_int.h"
#include "relax/arith.h"

enum { ROW_COPY_MIN_BYTES = 4 << 20 };

/* The matched row copy (file essay). */
typedef struct rowcopy {
    const rx_stmt *blk, *st;
    const rx_expr *ld; /* the load of X */
} rowcopy;

/* Whether every index of idx (with the block's iterators substituted by m) steps by
 * (0, .., 0, 1) along v and reads no data. */
static bool row_access(rx_arith *ar, rx_arena *a, rx_expr *const *idx, int n, const rx_vmap *m,
                       const rx_svar *v)
{
    if (n < 1) return false;
    for (int d = 0; d < n; d++) {
        int64_t step;
        if (rx_expr_loads_buf(idx[d], NULL) ||
            !rxi_cg_step_of(ar, a, rx_expr_subst(a, idx[d], m), v, &step) ||
            step != (d == n - 1 ? 1 : 0))
            return false;
    }
    return true;
}

/* Whether the copy can never stream, known at compile time: C's extents are literals
 * whose bytes stay under the threshold, or the row's extent is a literal under 64 bytes.
 * (Symbolic sizes keep the test for run time.) */
static bool literal_below(const rx_buffer *c, const rx_expr *extent)
{
    int64_t size = (int64_t)rxi_cg_ssize((rx_dtype)c->dtype), n, e;
    if (rx_expr_is_const(extent, &e) && e * size < 64) return true;
    for (int d = 0; d < c->ndim; d++) {
        if (!rx_expr_is_const(c->shape[d], &n) || n < 0) return false;
        if (n > 0 && size > INT64_MAX / n) return false;
        size *= n;
    }
    return size < ROW_COPY_MIN_BYTES;
}

static bool match(rx_arith *ar, rx_arena *a, const rx_stmt *s, rowcopy *t)
{
    memset(t, 0, sizeof *t);
    if (s->kind != RX_S_FOR || s->u.for_.loop_kind != RX_LOOP_VECTORIZED || s->u.for_.thread ||
        !rx_expr_is_int(s->u.for_.min, 0))
        return false;
    const rx_stmts *body = &s->u.for_.body;
    if (body->n != 1 || body->items[0]->kind != RX_S_BLOCK) return false;
    t->blk = body->items[0];
    const rx_stmts *bb = &t->blk->u.block.body;
    if (t->blk->u.block.init.n || bb->n != 1 || bb->items[0]->kind != RX_S_STORE) return false;
    t->st = bb->items[0];
    const rx_buffer *c = t->st->u.store.buf;
    const rx_expr *ld = t->st->u.store.value;
    if (ld->kind != RX_E_LOAD || ld->u.load.buf == c || ld->u.load.buf->dtype != c->dtype)
        return false;
    t->ld = ld;
    rx_vmap m = {0};
    bool ok = true;
    for (int i = 0; ok && i < t->blk->u.block.niters; i++) {
        const rx_iter *it = &t->blk->u.block.iters[i];
        ok = it->bind && it->kind == RX_ITER_SPATIAL && !rx_expr_loads_buf(it->bind, NULL);
        if (ok) rx_vmap_set(&m, it->var, it->bind);
    }
    const rx_svar *v = s->u.for_.var;
    ok = ok && row_access(ar, a, t->st->u.store.idx, t->st->u.store.nidx, &m, v) &&
         row_access(ar, a, ld->u.load.idx, ld->u.load.nidx, &m, v);
    rx_vmap_free(&m);
    return ok && !literal_below(c, s->u.for_.extent);
}

bool rxi_cg_row_copy(cg *g, const rx_stmt *s)
{
    /* O3's full ISA versions already store 64 bytes at a time in their AVX-512 version:
       the helper's call per row cost them (a (16, 512, 16, 64) permute 0.95 -> 0.83 of
       memcpy, bench_kernels, quiet) */
    if (!g->cpu || g->glsl || g->isa_versions || s->kind != RX_S_FOR) return false;
    rx_arena *a = rx_arena_new();
    rx_arith *ar = rx_arith_new(a);
    rowcopy t;
    const cg_sym *cs, *xs;
    bool ok = match(ar, a, s, &t) && rxi_cg_copy_syms(g, t.st, t.ld, &cs, &xs);
    if (ok) {
        g->need[H_ROWCOPY] |= 1;
        rx_loc loc = s->loc;
        size_t bytes = rxi_cg_ssize((rx_dtype)t.st->u.store.buf->dtype);
        rxi_cg_indent(g);
        rx_sb_printf(g->out, "if (rx_row_on && (int64_t)%d", (int)bytes);
        for (int k = 0; k < cs->ndim; k++) rx_sb_printf(g->out, " * %s", cs->dims[k]);
        rx_sb_puts(g->out, " >= RX_ROW_COPY_MIN && (");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_printf(g->out, ") * %d >= 64) { /* a full-line row copy (c_rowcopy.c) */\n",
                     (int)bytes);
        g->indent++;
        int mark = g->syms.n;
        rxi_cg_zero_loops(g, &s->u.for_.var, 1);
        rxi_cg_iters(g, t.blk, false);
        rxi_cg_copy_syms(g, t.st, t.ld, &cs, &xs); /* the pushes may have moved the scope */
        rxi_cg_indent(g);
        rx_sb_puts(g->out, "rx_row_copy(");
        rxi_cg_address(g, cs, t.st->u.store.idx, t.st->u.store.nidx, loc);
        rx_sb_puts(g->out, ", ");
        rxi_cg_address(g, xs, t.ld->u.load.idx, t.ld->u.load.nidx, loc);
        rx_sb_puts(g->out, ", (");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_printf(g->out, ") * %d);\n", (int)bytes);
        rxi_cg_pop_syms(g, mark);
        g->indent--;
        rxi_cg_indent(g);
        rx_sb_puts(g->out, "} else {\n");
        g->indent++;
    }
    rx_arith_free(ar);
    rx_arena_free(a);
    return ok;
}

/* The prelude's helper (file essay), else a stand-in that never runs. */
static const char PRELUDE_ROWCOPY[] =
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RX_NO_TR32)\n"
    "#include <immintrin.h>\n"
    "#ifndef RX_ROW_COPY_MIN\n"
    "#define RX_ROW_COPY_MIN INT64_C(%d) /* bytes of a destination whose rows take the helper */\n"
    "#endif\n"
    "/* Whether the row copies run (not under RX_KERNEL_ISA=base) and whether they move 64\n"
    "   bytes at a time (AVX-512), set when the object loads. */\n"
    "static int rx_row_on, rx_row_512;\n"
    "__attribute__((constructor)) static void rx_row_init(void)\n"
    "{\n"
    "    __builtin_cpu_init();\n"
    "    const char *cap = getenv(\"RX_KERNEL_ISA\");\n"
    "    rx_row_on = !(cap && !strcmp(cap, \"base\"));\n"
    "    rx_row_512 = rx_row_on && __builtin_cpu_supports(\"avx512f\");\n"
    "}\n"
    "__attribute__((target(\"avx512f\"))) static void rx_row_copy512(char *d, const char *s,\n"
    "                                                              int64_t n)\n"
    "{\n"
    "    int64_t i = 0;\n"
    "    for (; i + 64 <= n; i += 64)\n"
    "        _mm512_storeu_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));\n"
    "    memcpy(d + i, s + i, (size_t)(n - i));\n"
    "}\n"
    "/* n bytes from s to d with full-line stores. */\n"
    "static void rx_row_copy(void *d, const void *s, int64_t n)\n"
    "{\n"
    "    if (rx_row_512)\n"
    "        rx_row_copy512((char *)d, (const char *)s, n);\n"
    "    else\n"
    "        memcpy(d, s, (size_t)n);\n"
    "}\n"
    "#else\n"
    "#define rx_row_on 0\n"
    "#define rx_row_copy(d, s, n) ((void)0)\n"
    "#endif\n";

void rxi_cg_prelude_rowcopy(const cg *g, rx_sb *out)
{
    if (g->need[H_ROWCOPY]) rx_sb_printf(out, PRELUDE_ROWCOPY, ROW_COPY_MIN_BYTES);
}
