/*
 * c_ntrow.c — row copies into large destinations with streaming (non-temporal) stores.
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
 *   if (rx_nt_on && C's bytes >= RX_NT_ROW_MIN && E * size >= 64) {
 *       v = 0; the block's iterators;
 *       rx_nt_row(&C[..], &X[..], E * size, fence);
 *   } else
 *       the loop as it was
 *
 * Why: a plain store first reads the line it writes (read-for-ownership), so a copy
 * into a destination that does not fit the cache moves three times its bytes, and the
 * destination evicts the source. Streaming stores write whole lines without reading
 * them, as glibc's memcpy does above its non-temporal threshold. Measured on this
 * machine (Zen 5, 32 MiB L3, 2 threads, /tmp micro-benchmark of this nest against
 * 2-thread memcpy, best of 30, load 5): the (16, 512, 16, 64) f32 permute (32 MiB)
 * 0.75 of memcpy's bandwidth with plain stores, 0.97-0.99 with 64-byte streaming
 * stores (AVX-512), 0.71-0.79 with 16-byte ones (SSE2); (32, 512, 16, 64) (64 MiB) 0.42
 * plain, 0.97 and 0.78. A destination that fits the cache loses: at 8 MiB the plain
 * stores ran 1.39x memcpy (both buffers stay in the L3 from call to call), streaming
 * stores 0.82; at 16 MiB 0.90 against 0.92. So RX_NT_ROW_MIN is 16 MiB (the L3 here is
 * 32 MiB; glibc's sysconf reports it as 384 MiB in this VM, so it is not read at run
 * time). A smaller destination stays in the cache for its consumer.
 *
 * rx_nt_row copies the row's unaligned head and tail with memcpy and the 64-byte
 * aligned middle with one 64-byte streaming store per line on CPUs with AVX-512 (16-byte
 * ones otherwise: SSE2 is x86-64's baseline). An sfence orders a thread's streaming
 * stores before what it does next: at the end of each iteration of the enclosing
 * parallel loop (the fence c_transpose.c's tiles share: g->tr_tiles counts these rows
 * too), or in the helper itself when no parallel loop encloses the row.
 *
 * Why it is exact: the helper moves the row's bytes (loads and stores of whole
 * registers, no arithmetic), to the same elements the loop writes. RX_KERNEL_ISA=base
 * turns the helper off (the plain loop), which the tests use to compare both paths;
 * so does a build without x86-64 intrinsics (rx_nt_on is then 0).
 *
 * Cost: a substitution and a few arithmetic proofs per vectorized loop at emission.
 */
#include <string.h>

#include "cgen_int.h"
#include "relax/arith.h"

enum { NT_ROW_MIN_BYTES = 16 << 20 };

/* The matched row copy (file essay). */
typedef struct ntrow {
    const rx_stmt *blk, *st;
    const rx_expr *ld; /* the load of X */
} ntrow;

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
    return size < NT_ROW_MIN_BYTES;
}

static bool match(rx_arith *ar, rx_arena *a, const rx_stmt *s, ntrow *t)
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

static void indent(cg *g)
{
    for (int i = 0; i < g->indent; i++) rx_sb_puts(g->out, "    ");
}

bool rxi_cg_nt_row(cg *g, const rx_stmt *s)
{
    if (!g->cpu || g->glsl || s->kind != RX_S_FOR) return false;
    rx_arena *a = rx_arena_new();
    rx_arith *ar = rx_arith_new(a);
    ntrow t;
    bool ok = match(ar, a, s, &t);
    const cg_sym *cs = ok ? rxi_cg_lookup(g, t.st->u.store.buf) : NULL;
    const cg_sym *xs = ok ? rxi_cg_lookup(g, t.ld->u.load.buf) : NULL;
    ok = ok && cs && cs->dims && xs && xs->dims && !cs->view && !xs->view;
    if (ok) {
        g->need[H_NTROW] |= 1;
        rx_loc loc = s->loc;
        size_t bytes = rxi_cg_ssize((rx_dtype)t.st->u.store.buf->dtype);
        indent(g);
        rx_sb_printf(g->out, "if (rx_nt_on && (int64_t)%d", (int)bytes);
        for (int k = 0; k < cs->ndim; k++) rx_sb_printf(g->out, " * %s", cs->dims[k]);
        rx_sb_puts(g->out, " >= RX_NT_ROW_MIN && (");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_printf(g->out, ") * %d >= 64) { /* a streaming row copy (c_ntrow.c) */\n",
                     (int)bytes);
        g->indent++;
        int mark = g->syms.n;
        const rx_svar *v = s->u.for_.var;
        char *name = rxi_cg_fresh(g, v->name);
        indent(g);
        rx_sb_printf(g->out, "const %s %s = 0;\n", rxi_cg_ctype((rx_dtype)v->dtype), name);
        rxi_cg_unused(g, name);
        rxi_cg_push_sym(g, v, name);
        rxi_cg_iters(g, t.blk, false);
        cs = rxi_cg_lookup(g, t.st->u.store.buf); /* the pushes may have moved the scope */
        xs = rxi_cg_lookup(g, t.ld->u.load.buf);
        indent(g);
        rx_sb_puts(g->out, "rx_nt_row(");
        rxi_cg_address(g, cs, t.st->u.store.idx, t.st->u.store.nidx, loc);
        rx_sb_puts(g->out, ", ");
        rxi_cg_address(g, xs, t.ld->u.load.idx, t.ld->u.load.nidx, loc);
        rx_sb_puts(g->out, ", (");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_printf(g->out, ") * %d, %d);\n", (int)bytes, g->par_depth == 0);
        g->tr_tiles++; /* the enclosing parallel loop's rx_tr_fence */
        rxi_cg_pop_syms(g, mark);
        g->indent--;
        indent(g);
        rx_sb_puts(g->out, "} else {\n");
        g->indent++;
    }
    rx_arith_free(ar);
    rx_arena_free(a);
    return ok;
}

/* The prelude's helper (file essay), else stand-ins that never run. rx_tr_fence is
   c_transpose.c's when its prelude came first, the same sfence. */
static const char PRELUDE_NTROW[] =
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RX_NO_TR32)\n"
    "#include <immintrin.h>\n"
    "#ifndef RX_NT_ROW_MIN\n"
    "#define RX_NT_ROW_MIN INT64_C(%d) /* bytes of a destination whose rows stream */\n"
    "#endif\n"
    "/* Whether the streaming row copies run (not under RX_KERNEL_ISA=base) and whether\n"
    "   they store 64 bytes at a time (AVX-512), set when the object loads. */\n"
    "static int rx_nt_on, rx_nt_512;\n"
    "__attribute__((constructor)) static void rx_nt_init(void)\n"
    "{\n"
    "    __builtin_cpu_init();\n"
    "    const char *cap = getenv(\"RX_KERNEL_ISA\");\n"
    "    rx_nt_on = !(cap && !strcmp(cap, \"base\"));\n"
    "    rx_nt_512 = rx_nt_on && __builtin_cpu_supports(\"avx512f\");\n"
    "}\n"
    "__attribute__((target(\"avx512f\"))) static void rx_nt_lines512(char *d, const char *s,\n"
    "                                                              int64_t n)\n"
    "{\n"
    "    for (int64_t i = 0; i < n; i += 64)\n"
    "        _mm512_stream_si512((__m512i *)(d + i), _mm512_loadu_si512(s + i));\n"
    "}\n"
    "/* n bytes from s to d: the 64-byte lines of d with streaming stores, the partial\n"
    "   lines at both ends with memcpy; an sfence after when `fence`. */\n"
    "static void rx_nt_row(void *dv, const void *sv, int64_t n, int fence)\n"
    "{\n"
    "    char *d = (char *)dv;\n"
    "    const char *s = (const char *)sv;\n"
    "    int64_t head = (int64_t)((64u - ((uintptr_t)d & 63u)) & 63u);\n"
    "    if (head > n) head = n;\n"
    "    memcpy(d, s, (size_t)head);\n"
    "    d += head, s += head, n -= head;\n"
    "    int64_t body = n & ~(int64_t)63;\n"
    "    if (rx_nt_512)\n"
    "        rx_nt_lines512(d, s, body);\n"
    "    else\n"
    "        for (int64_t i = 0; i < body; i += 16)\n"
    "            _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));\n"
    "    memcpy(d + body, s + body, (size_t)(n - body));\n"
    "    if (fence) _mm_sfence();\n"
    "}\n"
    "#ifndef rx_tr_fence\n"
    "#define rx_tr_fence() _mm_sfence()\n"
    "#endif\n"
    "#else\n"
    "#define rx_nt_on 0\n"
    "#define rx_nt_row(d, s, n, fence) ((void)0)\n"
    "#ifndef rx_tr_fence\n"
    "#define rx_tr_fence() ((void)0)\n"
    "#endif\n"
    "#endif\n";

void rxi_cg_prelude_ntrow(const cg *g, rx_sb *out)
{
    if (g->need[H_NTROW]) rx_sb_printf(out, PRELUDE_NTROW, NT_ROW_MIN_BYTES);
}
