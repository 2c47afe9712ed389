/*
 * c_transpose.c — a transposing tile of 32-bit elements as in-register 8 x 8 AVX2
 * transposes in the generated C (16-bit elements: SSE2), with streaming stores into
 * large destinations.
 *
 * What it emits for: the tile of compiler/pass/schedule_copy.c, a FOR pi (serial, from
 * 0) whose only statement is a vectorized FOR ni (from 0) whose only statement is a
 * block without init storing one load:
 *
 *   for pi in range(E1): for ni in range(E2) (vectorized):
 *     block (.., P := .. + pi, .., N := .. + ni, ..): C[..] = X[..]
 *
 * where C and X are different buffers of one 32-bit dtype (f32, i32, u32) or 16-bit
 * dtype (f16, bf16, i16, u16), exactly one
 * iterator (P) moves with pi and one (N) with ni, each by one per step, no other does,
 * and, the step of every index proved a literal with the arithmetic (so each index is
 * affine in P and N): C's last index steps by one along N and its others not at all,
 * X's last index by one along P and its others not at all. C's rows along P and X's
 * along N are then a constant number of elements apart (computed in the C as the
 * difference of two flat indices), and the tile is y[pi, ni] = x[ni, pi] for the
 * E2 x E1 matrix x at X's element (pi, ni) = (0, 0) and the E1 x E2 matrix y at C's:
 *
 *   if (rx_tr_avx2 && E1 % 8 == 0 && E2 % 8 == 0) {
 *       pi = ni = 0; the block's iterators;
 *       rx_tr32(&X[..], X's row step, &C[..], C's row step, E2, E1, C's bytes);
 *   } else
 *       the loops as they were (edge tiles, CPUs without AVX2)
 *
 * rx_tr32 (the prelude, below) transposes 8 x 16 pieces: sixteen row loads, two
 * RX_TR8X8_SHUFFLE (runtime/rt_transpose.h: the shuffle sequence of the runtime's
 * rx_rt_tr8x8, one source), then each of y's eight rows gets its 16 elements, one
 * 64-byte line of a tile aligned as schedule_copy.c's are. Measured by tests/bench/
 * bench_transpose.c on this nest: 1.3-1.45x faster than the scalar tile. rx_tr16 does
 * the same for 16-bit elements with SSE2 (x86-64's baseline: no CPU check): 8 x 8
 * blocks of 16-byte rows unpacked by 16, 32 and 64 bits, four blocks side by side so
 * that each of y's rows again gets a whole 64-byte line (one block at a time, streaming
 * 16-byte pieces of eight lines in turn, took twice the scalar tile's time on a 4096 x
 * 4104 f16 transpose; four at a time, 5.3 ms against 8.6, same run). The scalar f16 tile
 * converts every element to float and back, the register path only moves bits (a
 * signalling NaN keeps its payload, as in NumPy).
 *
 * Streaming stores: when the destination holds at least RX_TR_NT_MIN bytes (4 MiB, half
 * of the L3) and the tile's rows are 32-byte aligned, the stores are non-temporal, so
 * y's lines are written without being read first (two passes of memory traffic as in
 * memcpy instead of three) and do not evict the source. An sfence orders them before
 * anything the thread does next: at the end of each iteration of the enclosing parallel
 * loop (rx_tr_fence; c_kernel.c asks rxi_cg_tr_fence there), so before the join, or in
 * the helper itself when no parallel loop encloses the tile. One sfence per tile (1 KiB)
 * cost a quarter of the time: a 4096 x 4104 transpose ran 9.8 ms with it and 7.8 without,
 * against 9.8 for 2-thread memcpy, same run. A smaller destination stays in the cache
 * for its consumer.
 *
 * Why it is exact: a transpose only moves bits (32-bit loads, shuffles and stores of
 * __m256 lanes, no arithmetic; an i32 goes through the float lanes unchanged), and
 * every (pi, ni) of the tile is written once with X's element at the same indices as
 * the loops would. The evaluator and the fallback loops write the same bytes.
 *
 * The helpers exist only on x86-64 under gcc or clang; RX_KERNEL_ISA=base turns them off
 * (as it caps the kernels' ISA versions), which the tests use to compare both paths.
 *
 * Cost: a few arithmetic proofs per candidate tile at emission time.
 */
#include <string.h>

#include "../../runtime/rt_transpose.h"
#include "cgen_int.h"
#include "relax/arith.h"

enum { NT_MIN_BYTES = 4 << 20 };

/* The literal step of integer expression e along v (e at v + 1 minus e), proved by the
 * arithmetic; false when it is not a literal. */
bool rxi_cg_step_of(rx_arith *ar, rx_arena *a, rx_expr *e, const rx_svar *v, int64_t *step)
{
    if (!rx_dtype_is_int((rx_dtype)e->dtype)) return false;
    if (!rx_expr_uses_var(e, v)) {
        *step = 0;
        return true;
    }
    rx_vmap m = {0};
    rx_vmap_set(&m, v, rx_e_binary(a, RX_E_ADD, rx_e_var(a, v), rx_e_int(a, 1)));
    rx_expr *next = rx_expr_subst(a, e, &m);
    rx_vmap_free(&m);
    return rx_expr_is_const(rx_arith_simplify(ar, rx_e_binary(a, RX_E_SUB, next, e)), step);
}

/* Whether the indices of an access step along u by (0, .., 0, 1) and along w by
 * literals (any), none reading data or naming the tile's loop variables l[0], l[1]
 * other than through the iterators. */
static bool access_ok(rx_arith *ar, rx_arena *a, rx_expr *const *idx, int n, const rx_svar *u,
                      const rx_svar *w, const rx_svar *const *l)
{
    if (n < 1) return false;
    for (int d = 0; d < n; d++) {
        int64_t su, sw;
        if (rx_expr_loads_buf(idx[d], NULL) || rx_expr_uses_var(idx[d], l[0]) ||
            rx_expr_uses_var(idx[d], l[1]) || !rxi_cg_step_of(ar, a, idx[d], u, &su) ||
            !rxi_cg_step_of(ar, a, idx[d], w, &sw) || su != (d == n - 1 ? 1 : 0))
            return false;
    }
    return true;
}

/* The matched tile (file essay). */
typedef struct trtile {
    const rx_stmt *pi, *ni, *blk, *st;
    const rx_expr *ld;      /* the load of X */
    const rx_svar *p, *n;   /* the iterators moving with pi and ni */
} trtile;

static bool only_stmt(const rx_stmts *ss, int kind, const rx_stmt **out)
{
    if (ss->n != 1 || ss->items[0]->kind != kind) return false;
    *out = ss->items[0];
    return true;
}

static bool match(rx_arith *ar, rx_arena *a, const rx_stmt *s, trtile *t)
{
    memset(t, 0, sizeof *t);
    t->pi = s;
    if (s->kind != RX_S_FOR || s->u.for_.loop_kind != RX_LOOP_SERIAL || s->u.for_.thread ||
        !rx_expr_is_int(s->u.for_.min, 0) || !only_stmt(&s->u.for_.body, RX_S_FOR, &t->ni))
        return false;
    const rx_stmt *ni = t->ni;
    if (ni->u.for_.loop_kind != RX_LOOP_VECTORIZED || ni->u.for_.thread ||
        !rx_expr_is_int(ni->u.for_.min, 0) || !only_stmt(&ni->u.for_.body, RX_S_BLOCK, &t->blk) ||
        t->blk->u.block.init.n || !only_stmt(&t->blk->u.block.body, RX_S_STORE, &t->st))
        return false;
    const rx_buffer *c = t->st->u.store.buf;
    const rx_expr *v = t->st->u.store.value;
    if (v->kind != RX_E_LOAD || v->u.load.buf == c || v->u.load.buf->dtype != c->dtype ||
        (rxi_cg_ssize((rx_dtype)c->dtype) != 4 && rxi_cg_ssize((rx_dtype)c->dtype) != 2))
        return false;
    t->ld = v;
    const rx_svar *vp = s->u.for_.var, *vn = ni->u.for_.var;
    if (rx_expr_uses_var(s->u.for_.extent, vn)) return false;
    for (int i = 0; i < t->blk->u.block.niters; i++) {
        const rx_iter *it = &t->blk->u.block.iters[i];
        if (!it->bind) return false;
        int64_t sp, sn;
        if (!rxi_cg_step_of(ar, a, it->bind, vp, &sp) || !rxi_cg_step_of(ar, a, it->bind, vn, &sn)) return false;
        if (sp == 0 && sn == 0) continue;
        if (it->kind != RX_ITER_SPATIAL || (sp && sn) || (sp && (sp != 1 || t->p)) ||
            (sn && (sn != 1 || t->n)))
            return false;
        if (sp) t->p = it->var;
        else t->n = it->var;
    }
    const rx_svar *const l[2] = {vp, vn};
    return t->p && t->n &&
           access_ok(ar, a, t->st->u.store.idx, t->st->u.store.nidx, t->n, t->p, l) &&
           access_ok(ar, a, v->u.load.idx, v->u.load.nidx, t->p, t->n, l);
}

/* `&NAME[flat index]` of buffer b at idx. */
void rxi_cg_address(cg *g, const cg_sym *b, rx_expr *const *idx, int n, rx_loc loc)
{
    rx_sb_puts(g->out, "&");
    rxi_cg_sub_open(g, b);
    rxi_cg_index(g, b, idx, n, loc);
    rxi_cg_sub_close(g, b);
}

/* `(flat at v + 1) - (flat at v)`: the elements between the rows of b along v. */
static void row_step(cg *g, rx_arena *a, const cg_sym *b, rx_expr *const *idx, int n,
                     const rx_svar *v, rx_loc loc)
{
    rx_vmap m = {0};
    rx_vmap_set(&m, v, rx_e_binary(a, RX_E_ADD, rx_e_var(a, v), rx_e_int(a, 1)));
    rx_expr **next = RX_NEWN(a, rx_expr *, n);
    for (int d = 0; d < n; d++) next[d] = rx_expr_subst(a, idx[d], &m);
    rx_vmap_free(&m);
    rx_sb_puts(g->out, "(");
    rxi_cg_index(g, b, next, n, loc);
    rx_sb_puts(g->out, ") - (");
    rxi_cg_index(g, b, idx, n, loc);
    rx_sb_puts(g->out, ")");
}

bool rxi_cg_copy_syms(const cg *g, const rx_stmt *st, const rx_expr *ld, const cg_sym **cs,
                      const cg_sym **xs)
{
    *cs = rxi_cg_lookup(g, st->u.store.buf);
    *xs = rxi_cg_lookup(g, ld->u.load.buf);
    return *cs && (*cs)->dims && *xs && (*xs)->dims && !(*cs)->view && !(*xs)->view;
}

void rxi_cg_zero_loops(cg *g, const rx_svar *const *vars, int n)
{
    for (int k = 0; k < n; k++) {
        char *name = rxi_cg_fresh(g, vars[k]->name);
        rxi_cg_indent(g);
        rx_sb_printf(g->out, "const %s %s = 0;\n", rxi_cg_ctype((rx_dtype)vars[k]->dtype), name);
        rxi_cg_unused(g, name);
        rxi_cg_push_sym(g, vars[k], name);
    }
}

bool rxi_cg_tr_tile(cg *g, const rx_stmt *s)
{
    if (!g->cpu || g->glsl || s->kind != RX_S_FOR) return false;
    rx_arena *a = rx_arena_new();
    rx_arith *ar = rx_arith_new(a);
    trtile t;
    const cg_sym *cs, *xs;
    bool ok = match(ar, a, s, &t) && rxi_cg_copy_syms(g, t.st, t.ld, &cs, &xs);
    if (ok) {
        g->need[H_TR32] |= 1;
        rx_loc loc = s->loc;
        size_t bytes = rxi_cg_ssize((rx_dtype)t.st->u.store.buf->dtype);
        rxi_cg_indent(g);
        rx_sb_printf(g->out, "if (%s && ((", bytes == 4 ? "rx_tr_avx2" : "rx_tr_sse2");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_puts(g->out, ") & 7) == 0 && ((");
        rxi_cg_expr_as(g, t.ni->u.for_.extent, RX_DT_I64, loc);
        rx_sb_puts(g->out, ") & 7) == 0) { /* 8 x 8 register transposes (c_transpose.c) */\n");
        g->indent++;
        int mark = g->syms.n;
        const rx_svar *loops[2] = {s->u.for_.var, t.ni->u.for_.var};
        rxi_cg_zero_loops(g, loops, 2);
        rxi_cg_iters(g, t.blk, false);
        rxi_cg_copy_syms(g, t.st, t.ld, &cs, &xs); /* the pushes may have moved the scope */
        rxi_cg_indent(g);
        rx_sb_puts(g->out, bytes == 4 ? "rx_tr32(" : "rx_tr16(");
        rxi_cg_address(g, xs, t.ld->u.load.idx, t.ld->u.load.nidx, loc);
        rx_sb_puts(g->out, ", ");
        row_step(g, a, xs, t.ld->u.load.idx, t.ld->u.load.nidx, t.n, loc);
        rx_sb_puts(g->out, ", ");
        rxi_cg_address(g, cs, t.st->u.store.idx, t.st->u.store.nidx, loc);
        rx_sb_puts(g->out, ", ");
        row_step(g, a, cs, t.st->u.store.idx, t.st->u.store.nidx, t.p, loc);
        rx_sb_puts(g->out, ", ");
        rxi_cg_expr_as(g, t.ni->u.for_.extent, RX_DT_I64, loc);
        rx_sb_puts(g->out, ", ");
        rxi_cg_expr_as(g, s->u.for_.extent, RX_DT_I64, loc);
        rx_sb_printf(g->out, ", (int64_t)%d", (int)bytes);
        for (int k = 0; k < cs->ndim; k++) rx_sb_printf(g->out, " * %s", cs->dims[k]);
        rx_sb_printf(g->out, ", %d);\n", g->par_depth == 0); /* no parallel loop: fence here */
        g->tr_tiles++;
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

void rxi_cg_tr_fence(cg *g, int tiles)
{
    if (g->tr_tiles == tiles) return;
    rxi_cg_indent(g);
    rx_sb_puts(g->out, "rx_tr_fence();\n");
}

void rxi_cg_tr_tile_end(cg *g)
{
    g->indent--;
    rxi_cg_indent(g);
    rx_sb_puts(g->out, "}\n");
}

/* The prelude's helper: rx_tr32 and the CPU check (file essay), else stand-ins that
   never run. */
#define RX_TR_STR_(...) #__VA_ARGS__
#define RX_TR_STR(...) RX_TR_STR_(__VA_ARGS__)
static const char PRELUDE_TR32_HEAD[] =
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RX_NO_TR32)\n"
    "#include <immintrin.h>\n"
    "#ifndef RX_TR_NT_MIN\n"
    "#define RX_TR_NT_MIN INT64_C(%d) /* bytes of a destination that gets streaming stores */\n"
    "#endif\n"
    "#define RX_TR_UNROLL _Pragma(\"GCC unroll 8\") /* the blocks' rows stay in registers */\n"
    "/* Whether this CPU has AVX2 (32-bit tiles), and whether the 16-bit tiles' SSE2 path is\n"
    "   on (always, as x86-64's baseline), set when the object loads; RX_KERNEL_ISA=base turns\n"
    "   both off (the scalar tiles). */\n"
    "static int rx_tr_avx2, rx_tr_sse2;\n"
    "__attribute__((constructor)) static void rx_tr_init(void)\n"
    "{\n"
    "    __builtin_cpu_init();\n"
    "    const char *cap = getenv(\"RX_KERNEL_ISA\");\n"
    "    rx_tr_sse2 = !(cap && !strcmp(cap, \"base\"));\n"
    "    rx_tr_avx2 = rx_tr_sse2 && __builtin_cpu_supports(\"avx2\");\n"
    "}\n";
static const char PRELUDE_TR32_BODY[] =
    "/* y[j, i] = x[i, j] for i < rows, j < cols (multiples of 8) of 32-bit elements; x's\n"
    "   rows sx elements apart, y's sy; streaming stores when y is large and aligned, then\n"
    "   an sfence when `fence` (else the enclosing parallel loop's rx_tr_fence). */\n"
    "__attribute__((target(\"avx2\"))) static void rx_tr32(const void *xv, int64_t sx, void *yv,\n"
    "                                                    int64_t sy, int64_t rows, int64_t cols,\n"
    "                                                    int64_t ybytes, int fence)\n"
    "{\n"
    "    const float *x = (const float *)xv;\n"
    "    float *y = (float *)yv;\n"
    "    int nt = ybytes >= RX_TR_NT_MIN && ((uintptr_t)y & 31u) == 0 && (sy & 7) == 0;\n"
    "    for (int64_t j = 0; j < cols; j += 8) {\n"
    "        int64_t i = 0;\n"
    "        for (; i + 16 <= rows; i += 16) {\n"
    "            __m256 t[8], lo[8], hi[8];\n"
    "            const float *s = x + i * sx + j;\n"
    "            float *d = y + j * sy + i;\n"
    "            RX_TR_UNROLL for (int k = 0; k < 8; k++) t[k] = _mm256_loadu_ps(s + k * sx);\n"
    "            " RX_TR_STR(RX_TR8X8_SHUFFLE(t, lo)) ";\n"
    "            RX_TR_UNROLL for (int k = 0; k < 8; k++) t[k] = _mm256_loadu_ps(s + (k + 8) * sx);\n"
    "            " RX_TR_STR(RX_TR8X8_SHUFFLE(t, hi)) ";\n"
    "            if (nt)\n"
    "                RX_TR_UNROLL for (int k = 0; k < 8; k++) {\n"
    "                    _mm256_stream_ps(d + k * sy, lo[k]);\n"
    "                    _mm256_stream_ps(d + k * sy + 8, hi[k]);\n"
    "                }\n"
    "            else\n"
    "                RX_TR_UNROLL for (int k = 0; k < 8; k++) {\n"
    "                    _mm256_storeu_ps(d + k * sy, lo[k]);\n"
    "                    _mm256_storeu_ps(d + k * sy + 8, hi[k]);\n"
    "                }\n"
    "        }\n"
    "        for (; i < rows; i += 8) {\n"
    "            __m256 t[8], r[8];\n"
    "            const float *s = x + i * sx + j;\n"
    "            float *d = y + j * sy + i;\n"
    "            RX_TR_UNROLL for (int k = 0; k < 8; k++) t[k] = _mm256_loadu_ps(s + k * sx);\n"
    "            " RX_TR_STR(RX_TR8X8_SHUFFLE(t, r)) ";\n"
    "            if (nt)\n"
    "                RX_TR_UNROLL for (int k = 0; k < 8; k++) _mm256_stream_ps(d + k * sy, r[k]);\n"
    "            else\n"
    "                RX_TR_UNROLL for (int k = 0; k < 8; k++) _mm256_storeu_ps(d + k * sy, r[k]);\n"
    "        }\n"
    "    }\n"
    "    if (nt && fence) _mm_sfence();\n"
    "}\n"
    "/* The same for 16-bit elements in SSE2 registers: 8 x 8 blocks of 16-byte rows, unpacked\n"
    "   by 16, 32 and 64 bits. */\n"
    "static void rx_tr16(const void *xv, int64_t sx, void *yv, int64_t sy, int64_t rows,\n"
    "                    int64_t cols, int64_t ybytes, int fence)\n"
    "{\n"
    "    const uint16_t *x = (const uint16_t *)xv;\n"
    "    uint16_t *y = (uint16_t *)yv;\n"
    "    int nt = ybytes >= RX_TR_NT_MIN && ((uintptr_t)y & 15u) == 0 && (sy & 7) == 0;\n"
    "    for (int64_t j = 0; j < cols; j += 8)\n"
    "        for (int64_t i = 0; i < rows;) {\n"
    "            /* up to four blocks side by side: each of y's rows gets 64 contiguous bytes */\n"
    "            int nb = rows - i >= 32 ? 4 : 1;\n"
    "            __m128i r[4][8];\n"
    "            for (int q = 0; q < nb; q++) {\n"
    "                __m128i t[8], a[8], b[8];\n"
    "                const uint16_t *s = x + (i + 8 * q) * sx + j;\n"
    "                RX_TR_UNROLL for (int k = 0; k < 8; k++) t[k] = _mm_loadu_si128((const __m128i *)(s + k * sx));\n"
    "                RX_TR_UNROLL for (int k = 0; k < 4; k++) {\n"
    "                    a[2 * k] = _mm_unpacklo_epi16(t[2 * k], t[2 * k + 1]);\n"
    "                    a[2 * k + 1] = _mm_unpackhi_epi16(t[2 * k], t[2 * k + 1]);\n"
    "                }\n"
    "                RX_TR_UNROLL for (int k = 0; k < 2; k++) {\n"
    "                    b[4 * k] = _mm_unpacklo_epi32(a[4 * k], a[4 * k + 2]);\n"
    "                    b[4 * k + 1] = _mm_unpackhi_epi32(a[4 * k], a[4 * k + 2]);\n"
    "                    b[4 * k + 2] = _mm_unpacklo_epi32(a[4 * k + 1], a[4 * k + 3]);\n"
    "                    b[4 * k + 3] = _mm_unpackhi_epi32(a[4 * k + 1], a[4 * k + 3]);\n"
    "                }\n"
    "                RX_TR_UNROLL for (int k = 0; k < 4; k++) {\n"
    "                    r[q][2 * k] = _mm_unpacklo_epi64(b[k], b[k + 4]);\n"
    "                    r[q][2 * k + 1] = _mm_unpackhi_epi64(b[k], b[k + 4]);\n"
    "                }\n"
    "            }\n"
    "            uint16_t *d = y + j * sy + i;\n"
    "            RX_TR_UNROLL for (int k = 0; k < 8; k++)\n"
    "                for (int q = 0; q < nb; q++) {\n"
    "                    if (nt) _mm_stream_si128((__m128i *)(d + k * sy + 8 * q), r[q][k]);\n"
    "                    else _mm_storeu_si128((__m128i *)(d + k * sy + 8 * q), r[q][k]);\n"
    "                }\n"
    "            i += 8 * nb;\n"
    "        }\n"
    "    if (nt && fence) _mm_sfence();\n"
    "}\n"
    "/* Orders this thread's streaming stores before what it does next (the join). */\n"
    "#define rx_tr_fence() _mm_sfence()\n"
    "#else\n"
    "#define rx_tr_avx2 0\n"
    "#define rx_tr_sse2 0\n"
    "#define rx_tr32(x, sx, y, sy, rows, cols, ybytes, fence) ((void)0)\n"
    "#define rx_tr16(x, sx, y, sy, rows, cols, ybytes, fence) ((void)0)\n"
    "#define rx_tr_fence() ((void)0)\n"
    "#endif\n";

void rxi_cg_prelude_tr32(const cg *g, rx_sb *out)
{
    if (!g->need[H_TR32]) return;
    rx_sb_printf(out, PRELUDE_TR32_HEAD, NT_MIN_BYTES);
    rx_sb_puts(out, PRELUDE_TR32_BODY);
}
