/*
 * c_kernel.c — loop functions as C kernels: the ABI, statements, and the unit.
 *
 * rx_codegen_c emits each RX_F_TIR function as
 *
 *   int32_t rxk_NAME(void *const *data, const int64_t *ivars)
 *   {
 *       const int64_t n_0 = ivars[0];              symbolic variables, in svars order
 *       float *X_1 = (float *)data[0];             buffer parameters, in order
 *       const int64_t X_1_d1 = n_0 * 4;            non-literal extents, evaluated once
 *       ... statements ...
 *       return 0;
 *   }
 *
 * Statement lowering, one line per kind:
 *   FOR    `for (int64_t i = lo; i < lo + extent; i++)`; a thread-bound loop is an error
 *          on this target. Loop kinds become prelude macros that expand to OpenMP
 *          pragmas when the unit is built with -fopenmp (cc.c's default) and to
 *          nothing (ivdep for simd) without: parallel -> RX_PARALLEL (`omp parallel
 *          for schedule(static)`; RX_PARALLEL_IF or serial when its work is small:
 *          c_par.c), vectorized -> RX_SIMD (`omp simd`), unrolled ->
 *          RX_UNROLL. Everything a loop body declares (loop variable, iterators, LET
 *          values, stack buffers) is a C local of the body: private to an iteration,
 *          hence to a thread. OpenMP forbids returning out of such a loop, so a
 *          parallel loop whose body holds a heap allocation (whose failure returns
 *          RX_KERNEL_ENOMEM) runs serially, and a vectorized loop holding one, or a
 *          nested loop, keeps the ivdep hint instead of simd. Transposing tiles: c_transpose.c
 *   BLOCK  a C block: each iterator bound to its `bind`, then `init` guarded by
 *          "every reduce iterator is at its start" (always, when there is none), then
 *          `body`. The start of an implicit iterator (the loop variable itself, see
 *          read_tir.c) is its loop's min; that of an explicit one is 0, its domain's.
 *          Hoisted init (rx_init_hoist_target, ir.h): when the block ends a chain
 *          of FORs, each the only statement of the one before, whose variables
 *          are exactly what the reduce iterators are bound to (each bind a chain
 *          variable; an explicit iterator's loop
 *          starting at 0), with no spatial bind and no chain min mentioning a chain
 *          variable and init using no chain variable or reduce iterator, the init is
 *          emitted once before the outermost chain loop, the spatial iterators bound
 *          there. That is the guarded init with the reduce iterators at their
 *          starts, and it also runs when a reduce extent is 0 (the guard never
 *          would; an empty sum must still be 0). Other shapes keep the guard.
 *   STORE  `buf[flat] = value` with value encoded to the storage type
 *   ALLOC  global scope, or a size that is not a small constant: heap (rx_alloc),
 *          freed at the end of the enclosing statement list; on NULL the kernel frees
 *          every live allocation and returns RX_KERNEL_ENOMEM. Constant local or shared
 *          buffers of at most 256 KiB (c_stmts.c STACK_ALLOC_MAX; schedule_tile.c's packed panels
 *          are the largest): a zeroed C array on the stack, used through a `T *const`
 *          pointer above 4 KiB (GCC then keeps register tiles in registers)
 *   IF     if/else;  LET  a C block with a const local
 * Names: every variable and buffer gets `<sanitized name>_<k>` with k a per-function
 * counter, so names never collide with each other, C keywords or the rx_ helpers.
 *
 * Parameters: a buffer pointer is `restrict` when the VM's calling convention rules
 * out aliasing: some graph function of the module calls the kernel, and at every call
 * each buffer the kernel stores into is a DPS output (a parameter at or past the
 * call's argument count). Outputs are fresh allocations (or planned storage that is
 * disjoint from everything live at the call: vmgen/plan.c), so no two written
 * pointers alias and no read pointer aliases a written one; read-only pointers may
 * alias each other, which restrict allows. Read-only buffers are also `const`. A
 * kernel nothing calls, or one that writes into an input, gets plain pointers. With
 * restrict, a reduction's running value C[i] stays in a register across its loop. A
 * read-only 0-d buffer (a fused constant: the -1e9 of a causal mask built with full)
 * is also read once at entry into NAME_s and loads of it use that: a select between it
 * and a literal then vectorizes, where a load under a condition kept GCC from
 * vectorizing softmax's exp loop (2x slower on a prefill's (1, 16, 512, 512) scores).
 * Indices are int64_t (extents are i64 shape values; 32-bit indices would need
 * overflow proofs and x86-64 addressing gains nothing from them); index arithmetic
 * that does not change inside a loop is left to the C compiler's invariant motion.
 *
 * ISA versions, full (rx_codegen_opts.isa_versions; the driver asks at opt level 3, as
 * they triple the kernels' compile time): a kernel holding a vectorized loop
 * (elementwise rows, schedule_tile.c's register and row tiles, rx_expf loops) is
 * emitted as three static definitions, NAME_base, NAME_v4 (RX_TARGET_V4: x86-64-v4,
 * AVX-512) and NAME_v3 (x86-64-v3, AVX2 + FMA), both contracting a * b + c into fused
 * multiply-adds, and the exported NAME calls the best one the CPU runs (rx_isa, set
 * when the object loads; RX_KERNEL_ISA=base|v3 caps it). The versions exist only with
 * gcc >= 12 on x86-64 (RX_ISA_VERSIONS; gcc's OpenMP outlining keeps the target of the
 * enclosing function), elsewhere NAME is the baseline alone. The kernel ABI is
 * unchanged, an artifact still runs on any x86-64, and kernels without a vectorized
 * loop are emitted once.
 * ISA versions, exact (rx_codegen_opts.exact_isa_versions; the driver asks at opt levels
 * 0 to 2): the versions are RX_TARGET_V4_EXACT and RX_TARGET_V3_EXACT, which do not contract,
 * so every version rounds every operation as the baseline does and writes its bits
 * (what constant folding promises). They are made only for hot top-level statements
 * (c_isa.c says which, and why). A kernel whose top-level statements are all hot or
 * all cold is versioned whole or not at all; otherwise each maximal run of hot or of
 * cold statements becomes a static function NAME_pK with the kernel's parameters (hot
 * runs versioned, so the tiled reductions around a softmax's exp are compiled once)
 * and NAME calls them in order. A kernel with a top-level ALLOC (a buffer later
 * statements use) stays whole.
 *
 * The text of all kernels is built first; the prelude (includes and the helpers the
 * kernels used, see c_expr.c) is written in front of it at the end.
 */
#include <stdio.h>
#include <string.h>

#include "cgen_int.h"

enum {
    STACK_DIRECT_MAX = 1024 /* bytes; larger stack arrays are used through a pointer (a
                               register tile's accumulator, 6 x 16 f32, stays an array) */
};

void rxi_cg_err(cg *g, rx_loc loc, const char *fmt, ...)
{
    rx_sb msg = {0};
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    rx_diag_at(g->d, &g->m->locs, loc, "%s (in loop function \"%s\")", rx_sb_str(&msg),
               g->f ? g->f->name : "?");
    rx_sb_free(&msg);
    g->ok = false;
}

const cg_sym *rxi_cg_lookup(const cg *g, const void *key)
{
    for (int i = g->syms.n - 1; i >= 0; i--)
        if (g->syms.items[i].key == key) return &g->syms.items[i];
    return NULL;
}

/* ---------------------------------------------------------------- names */

/* A fresh C identifier "<sanitized base>_<k>" (heap). */
static char *fresh(cg *g, const char *base)
{
    rx_sb sb = {0};
    if (!base || !((base[0] >= 'A' && base[0] <= 'Z') || (base[0] >= 'a' && base[0] <= 'z')))
        rx_sb_putc(&sb, 'v');
    for (int i = 0; base && base[i] && i < 32; i++) {
        unsigned char c = (unsigned char)base[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        rx_sb_putc(&sb, ok ? (char)c : '_');
    }
    rx_sb_printf(&sb, "_%d", g->counter++);
    return rx_sb_take(&sb);
}

static cg_sym *push_sym(cg *g, const void *key, char *name)
{
    cg_sym s = {key, name, NULL, 0, false, false, false, NULL};
    RX_VEC_PUSH(g->syms, s);
    return &g->syms.items[g->syms.n - 1];
}

/* A buffer in scope that the statements index by exactly v along some axis (*axis):
 * where a let marked checked_index (schedule_hoist.c) is checked. NULL when none. */
static const cg_sym *index_use_e(const cg *g, const rx_expr *e, const rx_svar *v, int *axis)
{
    if (!e) return NULL;
    if (e->kind == RX_E_LOAD)
        for (int k = 0; k < e->u.load.nidx; k++) {
            const rx_expr *x = e->u.load.idx[k];
            const cg_sym *b = x->kind == RX_E_VAR && x->u.var == v ? rxi_cg_lookup(g, e->u.load.buf) : NULL;
            if (b && b->dims && k < b->ndim) {
                *axis = k;
                return b;
            }
        }
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        const cg_sym *b = index_use_e(g, rx_expr_child(e, i), v, axis);
        if (b) return b;
    }
    return NULL;
}

static const cg_sym *index_use(const cg *g, const rx_stmts *ss, const rx_svar *v, int *axis)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        const cg_sym *b = NULL;
        switch ((rx_skind)s->kind) {
        case RX_S_STORE: b = index_use_e(g, s->u.store.value, v, axis); break;
        case RX_S_LET:
            if (!(b = index_use_e(g, s->u.let.value, v, axis))) b = index_use(g, &s->u.let.body, v, axis);
            break;
        case RX_S_FOR: b = index_use(g, &s->u.for_.body, v, axis); break;
        case RX_S_BLOCK: b = index_use(g, &s->u.block.body, v, axis); break;
        case RX_S_IF: b = index_use(g, &s->u.if_.then_s, v, axis); break;
        default: break;
        }
        if (b) return b;
    }
    return NULL;
}

static void pop_syms(cg *g, int mark)
{
    while (g->syms.n > mark) {
        cg_sym *s = &g->syms.items[--g->syms.n];
        for (int k = 0; k < s->ndim; k++) free(s->dims[k]);
        free(s->dims);
        free(s->name);
    }
}

static void ind(cg *g)
{
    for (int i = 0; i < g->indent; i++) rx_sb_puts(g->out, "    ");
}

/* Declares the extents of buffer b (already pushed as s): literal extents stay text,
 * others become `const int64_t NAME_dK = expr;`. */
static void declare_dims(cg *g, cg_sym *s, const rx_buffer *b)
{
    s->ndim = b->ndim;
    s->dims = rx_xcalloc((size_t)(b->ndim ? b->ndim : 1), sizeof(char *));
    for (int k = 0; k < b->ndim; k++) {
        int64_t v;
        rx_sb sb = {0};
        if (rx_expr_is_const(b->shape[k], &v)) {
            rxi_cg_i64_lit(g, &sb, v);
        } else {
            rx_sb_printf(&sb, "%s_d%d", s->name, k);
            ind(g);
            rx_sb_printf(g->out, "const int64_t %s = ", rx_sb_str(&sb));
            rxi_cg_expr_as(g, b->shape[k], RX_DT_I64, b->loc);
            rx_sb_printf(g->out, ";\n");
            rxi_cg_unused(g, rx_sb_str(&sb));
        }
        s->dims[k] = rx_sb_take(&sb);
    }
}

/* ---------------------------------------------------------------- statements */

/* Appends `if (COND) ` for a boolean expression, without the doubled parentheses
 * clang's -Wparentheses-equality objects to. */
static void emit_if_head(cg *g, const rx_expr *cond, rx_loc loc)
{
    rx_sb c = {0};
    rx_sb *save = g->out;
    g->out = &c;
    rxi_cg_expr_as(g, cond, RX_DT_BOOL, loc);
    g->out = save;
    const char *p = rx_sb_str(&c);
    size_t n = c.n;
    int depth = 0;
    bool outer = n >= 2 && p[0] == '(' && p[n - 1] == ')';
    for (size_t i = 0; outer && i < n; i++) { /* the first '(' must close at the end */
        depth += p[i] == '(' ? 1 : p[i] == ')' ? -1 : 0;
        if (depth == 0 && i + 1 < n) outer = false;
    }
    rx_sb_puts(g->out, "if (");
    if (g->glsl) rx_sb_printf(g->out, "%s != 0", p); /* bools are int values */
    else if (outer) rx_sb_putn(g->out, p + 1, n - 2);
    else rx_sb_puts(g->out, p);
    rx_sb_puts(g->out, ") ");
    rx_sb_free(&c);
}

static void emit_stmts(cg *g, const rx_stmts *ss);
static void emit_for_plain(cg *g, const rx_stmt *s);

/* "{\n" stmts "}" at the current indentation (the opening line is the caller's). */
static void emit_body(cg *g, const rx_stmts *ss)
{
    rx_sb_puts(g->out, "{\n");
    g->indent++;
    emit_stmts(g, ss);
    g->indent--;
    ind(g);
    rx_sb_puts(g->out, "}\n");
}

/* `{ /<star> block NAME` with the free-form name kept out of comment terminators. */
static void emit_block_head(cg *g, const rx_stmt *s, const char *what)
{
    ind(g);
    rx_sb_printf(g->out, "{ /* %s", what);
    if (s->u.block.name) {
        rx_sb_puts(g->out, " ");
        for (const char *p = s->u.block.name; *p; p++)
            rx_sb_putc(g->out, (*p == '*' || *p == '\n' || (unsigned char)*p < 0x20) ? '_' : *p);
    }
    rx_sb_puts(g->out, " */\n");
}

/* Binds the iterators of block s (only the spatial ones when spatial_only) as const
 * locals pushed on the scope; an implicit iterator is the loop variable itself. */
static void emit_iters(cg *g, const rx_stmt *s, bool spatial_only)
{
    for (int i = 0; i < s->u.block.niters; i++) {
        const rx_iter *it = &s->u.block.iters[i];
        if (spatial_only && it->kind == RX_ITER_REDUCE) continue;
        if (it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var &&
            rxi_cg_lookup(g, it->var))
            continue;
        /* computed before the name is pushed: the bind may mention an outer binding */
        rx_sb val = {0};
        rx_sb *save = g->out;
        g->out = &val;
        if (it->bind) rxi_cg_expr_as(g, it->bind, (rx_dtype)it->var->dtype, s->loc);
        else rx_sb_putc(&val, '0');
        g->out = save;
        char *name = fresh(g, it->var->name);
        ind(g);
        rx_sb_printf(g->out, "const %s %s = %s;\n", rxi_cg_ctype((rx_dtype)it->var->dtype), name,
                     rx_sb_str(&val));
        rxi_cg_unused(g, name);
        rx_sb_free(&val);
        push_sym(g, it->var, name);
    }
}

/* The init of block b, before the outermost of its reduce loops. */
static void emit_hoisted_init(cg *g, const rx_stmt *b)
{
    int mark = g->syms.n;
    emit_block_head(g, b, "init of block");
    g->indent++;
    ind(g);
    rx_sb_puts(g->out, "/* before the reduce loops: runs for an empty reduction too */\n");
    emit_iters(g, b, true);
    emit_stmts(g, &b->u.block.init);
    pop_syms(g, mark);
    g->indent--;
    ind(g);
    rx_sb_puts(g->out, "}\n");
}

static void emit_for(cg *g, const rx_stmt *s)
{
    /* the fast path (a register transpose or a full-line row copy), then this loop as
       its fallback */
    bool tile = rxi_cg_tr_tile(g, s) || rxi_cg_row_copy(g, s);
    emit_for_plain(g, s);
    if (tile) rxi_cg_tr_tile_end(g);
}

static void emit_for_plain(cg *g, const rx_stmt *s)
{
    const rx_svar *v = s->u.for_.var;
    const rx_stmt *hoist = rx_init_hoist_target(s);
    if (hoist) {
        emit_hoisted_init(g, hoist);
        RX_VEC_PUSH(g->hoisted, hoist);
    }
    if (s->u.for_.thread)
        rxi_cg_err(g, s->loc, "thread-bound loop \"%s\" (%s) needs a GPU target; the C "
                  "target runs on the CPU", v->name, s->u.for_.thread);
    int mark = g->syms.n;
    char *name = fresh(g, v->name);
    const char *ct = rxi_cg_ctype((rx_dtype)v->dtype);
    int64_t lo, ext;
    const rx_expr *ex = s->u.for_.extent;
    bool lit = rx_expr_is_const(s->u.for_.min, &lo) && rx_expr_is_const(ex, &ext);
    /* a constant start and a variable extent (a const local): no bound locals needed */
    bool simple = !lit && rx_expr_is_const(s->u.for_.min, &lo) && ex->kind == RX_E_VAR &&
                  (rx_dtype)ex->dtype == (rx_dtype)v->dtype;
    if (!lit && !simple) { /* bounds evaluated once, in an enclosing C block */
        ind(g);
        rx_sb_printf(g->out, "{\n");
        g->indent++;
        ind(g);
        rx_sb_printf(g->out, "const %s %s_lo = ", ct, name);
        rxi_cg_expr_as(g, s->u.for_.min, (rx_dtype)v->dtype, s->loc);
        rx_sb_printf(g->out, ";\n");
        ind(g);
        rx_sb_printf(g->out, "const %s %s_hi = %s_lo + ", ct, name, name);
        rxi_cg_expr_as(g, s->u.for_.extent, (rx_dtype)v->dtype, s->loc);
        rx_sb_printf(g->out, ";\n");
    }
    switch (s->u.for_.loop_kind) {
    case RX_LOOP_PARALLEL:
        ind(g);
        rxi_cg_par_pragma(g, s, name, lit, simple);
        break;
    case RX_LOOP_VECTORIZED:
        ind(g);
        rx_sb_puts(g->out, rxi_cg_heap_free(&s->u.for_.body) && !rxi_cg_has_for(&s->u.for_.body)
                               ? "RX_SIMD\n" : "RX_IVDEP\n");
        break;
    case RX_LOOP_UNROLLED:
        ind(g);
        rx_sb_puts(g->out, "RX_UNROLL\n");
        break;
    default: break;
    }
    ind(g);
    if (lit) {
        rx_sb_printf(g->out, "for (%s %s = %lld; %s < %lld; %s++) ", ct, name, (long long)lo, name,
                     (long long)(lo + ext), name);
    } else if (simple) {
        rx_sb_printf(g->out, "for (%s %s = %lld; %s < ", ct, name, (long long)lo, name);
        if (lo) rx_sb_printf(g->out, "%lld + ", (long long)lo);
        rxi_cg_expr(g, ex, s->loc);
        rx_sb_printf(g->out, "; %s++) ", name);
    } else
        rx_sb_printf(g->out, "for (%s %s = %s_lo; %s < %s_hi; %s++) ", ct, name, name, name,
                     name, name);
    rx_sb start = {0};
    if (lit || simple) rx_sb_printf(&start, "%lld", (long long)lo);
    else rx_sb_printf(&start, "%s_lo", name);
    cg_loop lp = {v, rx_sb_take(&start)};
    RX_VEC_PUSH(g->loops, lp);
    push_sym(g, v, name);
    bool par = s->u.for_.loop_kind == RX_LOOP_PARALLEL;
    int tiles = g->tr_tiles, depth = g->par_depth;
    g->par_depth += par, g->indent++;
    rx_sb_puts(g->out, "{\n");
    emit_stmts(g, &s->u.for_.body);
    if (par) rxi_cg_tr_fence(g, tiles); /* after this thread's streaming stores */
    g->par_depth = depth, g->indent--;
    ind(g);
    rx_sb_puts(g->out, "}\n");
    pop_syms(g, mark);
    free(g->loops.items[--g->loops.n].start);
    if (hoist) g->hoisted.n--;
    if (!lit && !simple) {
        g->indent--;
        ind(g);
        rx_sb_puts(g->out, "}\n");
    }
}

/* The C text of the value at which reduce iterator it starts: its loop's start for an
 * implicit iterator, else 0 (the start of its domain). */
static const char *iter_start(const cg *g, const rx_iter *it)
{
    if (it->bind && it->bind->kind == RX_E_VAR && it->bind->u.var == it->var)
        for (int k = g->loops.n - 1; k >= 0; k--)
            if (g->loops.items[k].var == it->var) return g->loops.items[k].start;
    return "0";
}

static bool is_hoisted(const cg *g, const rx_stmt *s)
{
    for (int k = 0; k < g->hoisted.n; k++)
        if (g->hoisted.items[k] == s) return true;
    return false;
}

static void emit_block(cg *g, const rx_stmt *s)
{
    int mark = g->syms.n;
    emit_block_head(g, s, "block");
    g->indent++;
    emit_iters(g, s, false);
    if (s->u.block.init.n && !is_hoisted(g, s)) {
        ind(g);
        rx_sb_puts(g->out, "if (");
        int nred = 0;
        for (int i = 0; i < s->u.block.niters; i++) {
            const rx_iter *it = &s->u.block.iters[i];
            if (it->kind != RX_ITER_REDUCE) continue;
            const cg_sym *v = rxi_cg_lookup(g, it->var);
            rx_sb_printf(g->out, "%s%s == %s", nred++ ? " && " : "", v ? v->name : "0",
                         iter_start(g, it));
        }
        if (!nred) rx_sb_puts(g->out, "1");
        rx_sb_puts(g->out, ") ");
        emit_body(g, &s->u.block.init);
    }
    emit_stmts(g, &s->u.block.body);
    pop_syms(g, mark);
    g->indent--;
    ind(g);
    rx_sb_puts(g->out, "}\n");
}

static void emit_store(cg *g, const rx_stmt *s)
{
    const rx_buffer *b = s->u.store.buf;
    const cg_sym *bs = rxi_cg_lookup(g, b);
    if (!bs || !bs->dims) {
        rxi_cg_err(g, s->loc, "buffer \"%s\" is not in scope", b ? b->name : "?");
        return;
    }
    ind(g);
    rxi_cg_sub_open(g, bs);
    rxi_cg_index(g, bs, s->u.store.idx, s->u.store.nidx, s->loc);
    rxi_cg_sub_close(g, bs);
    rx_sb_puts(g->out, " = ");
    rxi_cg_encode(g, (rx_dtype)b->dtype, s->u.store.value, s->loc);
    rx_sb_puts(g->out, ";\n");
}

/* Frees every live heap allocation from the innermost out, as text at the current
 * indentation (used before an error return). */
static void emit_free_all(cg *g)
{
    for (int i = g->heap.n - 1; i >= 0; i--) rx_sb_printf(g->out, " free(%s);", g->heap.items[i]);
}

static void emit_alloc(cg *g, const rx_stmt *s)
{
    const rx_buffer *b = s->u.alloc.buf;
    rx_dtype t = (rx_dtype)b->dtype;
    const char *st = rxi_cg_stype(t);
    int64_t total = 1;
    bool stack = rxi_cg_alloc_on_stack(b);
    for (int k = 0; stack && k < b->ndim; k++) {
        int64_t v = 0;
        rx_expr_is_const(b->shape[k], &v);
        total *= v;
    }
    cg_sym *bs = push_sym(g, b, fresh(g, b->name));
    ind(g);
    rx_sb_printf(g->out, "/* alloc %s (%s, %s) */\n", bs->name, rx_dtype_name(t),
                 b->scope == RX_SCOPE_GLOBAL ? "global" : b->scope == RX_SCOPE_LOCAL ? "local"
                                                                                  : "shared");
    declare_dims(g, bs, b);
    bs = &g->syms.items[g->syms.n - 1]; /* declare_dims may not move it, but stay safe */
    ind(g);
    if (stack && g->glsl) { /* GLSL: no pointers, no `= {0}` (an initializer has every element) */
        long long n = (long long)(total ? total : 1);
        rx_sb_printf(g->out, "%s %s[%lld];\n", st, bs->name, n);
        ind(g);
        rx_sb_printf(g->out, "for (int rx_z = 0; rx_z < %lld; rx_z++) %s[rx_z] = %s(0);\n", n,
                     bs->name, st);
    } else if (stack && total * (int64_t)rxi_cg_ssize(t) > STACK_DIRECT_MAX) {
        /* GCC 12 keeps a register tile's accumulator in registers across loads from
         * another stack array only when they go through a pointer (schedule_tile's
         * panels: a 64 x 16 f32 panel of 4 KiB read directly left the 6 x 16 tile's
         * twelve AVX2 accumulators in memory, a load-add-store per step) */
        rx_sb_printf(g->out, "%s %s_s[%lld] = {0};\n", st, bs->name, (long long)total);
        ind(g);
        rx_sb_printf(g->out, "%s *const %s = %s_s;\n", st, bs->name, bs->name);
    } else if (stack) {
        rx_sb_printf(g->out, "%s %s[%lld] = {0};\n", st, bs->name, (long long)(total ? total : 1));
    }
    if (stack) {
        rxi_cg_unused(g, bs->name);
        return;
    }
    g->need[H_ALLOC] |= 1;
    rx_sb_printf(g->out, "%s *%s = (%s *)rx_alloc(", st, bs->name, st);
    for (int k = 0; k < b->ndim; k++) rx_sb_printf(g->out, "%s%s", k ? " * " : "", bs->dims[k]);
    if (!b->ndim) rx_sb_puts(g->out, "1");
    rx_sb_printf(g->out, ", sizeof(%s));\n", st);
    ind(g);
    rx_sb_printf(g->out, "if (!%s) {", bs->name);
    emit_free_all(g);
    rx_sb_printf(g->out, " return %d; }\n", RX_KERNEL_ENOMEM);
    RX_VEC_PUSH(g->heap, bs->name);
}

static void emit_stmt(cg *g, const rx_stmt *s)
{
    switch ((rx_skind)s->kind) {
    case RX_S_FOR: emit_for(g, s); return;
    case RX_S_BLOCK: emit_block(g, s); return;
    case RX_S_STORE: emit_store(g, s); return;
    case RX_S_ALLOC: emit_alloc(g, s); return;
    case RX_S_IF:
        ind(g);
        emit_if_head(g, s->u.if_.cond, s->loc);
        emit_body(g, &s->u.if_.then_s);
        if (s->u.if_.else_s.n) {
            ind(g);
            rx_sb_puts(g->out, "else ");
            emit_body(g, &s->u.if_.else_s);
        }
        return;
    case RX_S_LET: {
        const rx_svar *v = s->u.let.var;
        rx_dtype t = (rx_dtype)v->dtype;
        ind(g);
        rx_sb_puts(g->out, "{\n");
        g->indent++;
        char *name = fresh(g, v->name);
        ind(g);
        rx_sb_printf(g->out, "const %s %s = ", rxi_cg_ctype(t), name);
        bool data = rxi_cg_reads_data(g, s->u.let.value);
        const cg_sym *b = NULL;
        int axis = 0;
        if (data && v->checked_index) b = index_use(g, &s->u.let.body, v, &axis);
        if (b) rxi_cg_checked(g, b, s->u.let.value, axis, s->loc);
        else rxi_cg_expr_as(g, s->u.let.value, t, s->loc);
        rx_sb_puts(g->out, ";\n");
        rxi_cg_unused(g, name);
        int mark = g->syms.n;
        cg_sym *vs = push_sym(g, v, name);
        vs->data = data;
        vs->chk = b ? b->dims[axis] : NULL;
        emit_stmts(g, &s->u.let.body);
        pop_syms(g, mark);
        g->indent--;
        ind(g);
        rx_sb_puts(g->out, "}\n");
        return;
    }
    default:
        rxi_cg_err(g, s->loc, "unknown statement kind %d", s->kind);
        return;
    }
}

/* A statement list: allocations are freed at its end and go out of scope. */
static void emit_stmts(cg *g, const rx_stmts *ss)
{
    int smark = g->syms.n, hmark = g->heap.n;
    for (int i = 0; i < ss->n; i++) emit_stmt(g, ss->items[i]);
    for (int i = g->heap.n - 1; i >= hmark; i--) {
        ind(g);
        rx_sb_printf(g->out, "free(%s);\n", g->heap.items[i]);
    }
    g->heap.n = hmark;
    pop_syms(g, smark);
}

/* ---------------------------------------------------------------- parameters */

/* Lowers *n to the argument count of every call_tir of f found in node e. */
static void calls_in_node(const rx_node *e, const rx_func *f, int *n);

static void calls_in_seq(const rx_seq *q, const rx_func *f, int *n)
{
    if (!q) return;
    for (int b = 0; b < q->nblocks; b++)
        for (int i = 0; i < q->blocks[b]->nbindings; i++)
            calls_in_node(q->blocks[b]->bindings[i].value, f, n);
    calls_in_node(q->result, f, n);
}

static void calls_in_node(const rx_node *e, const rx_func *f, int *n)
{
    if (!e) return;
    if (e->kind == RX_N_CALL && e->call_kind == RX_CALL_TIR && e->u.call.callee &&
        e->u.call.callee->kind == RX_N_GLOBAL && e->u.call.callee->u.global.fn == f)
        *n = *n < 0 || e->nargs < *n ? e->nargs : *n;
    if (e->kind == RX_N_IF) {
        calls_in_seq(e->u.if_.then_body, f, n);
        calls_in_seq(e->u.if_.else_body, f, n);
    }
    for (int i = 0; i < e->nargs; i++) calls_in_node(e->args[i], f, n);
}

/* True when ss stores into b (nested statements included). */
static bool stmts_store(const rx_stmts *ss, const rx_buffer *b)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (stmts_store(&s->u.for_.body, b)) return true;
            break;
        case RX_S_BLOCK:
            if (stmts_store(&s->u.block.init, b) || stmts_store(&s->u.block.body, b)) return true;
            break;
        case RX_S_STORE:
            if (s->u.store.buf == b) return true;
            break;
        case RX_S_IF:
            if (stmts_store(&s->u.if_.then_s, b) || stmts_store(&s->u.if_.else_s, b)) return true;
            break;
        case RX_S_LET:
            if (stmts_store(&s->u.let.body, b)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Whether f's buffer pointers may be `restrict` (see "Parameters" in the file essay):
 * some graph function calls f, and at every call each buffer f stores into is a DPS
 * output. */
static bool may_restrict(const rx_module *m, const rx_func *f)
{
    int nin = -1;
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) calls_in_seq(m->funcs[i]->body, f, &nin);
    if (nin < 0) return false;
    for (int i = 0, ib = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        if (ib++ < nin && stmts_store(&f->tbody, b)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- functions */

/* Loads symbolic variable j of the signature into a const local. */
static void emit_svar(cg *g, const rx_svar *v, int j)
{
    rx_dtype t = (rx_dtype)v->dtype;
    char *name = fresh(g, v->name);
    ind(g);
    rx_sb_printf(g->out, "const %s %s = ", rxi_cg_ctype(t), name);
    if (t == RX_DT_BOOL) {
        rx_sb_printf(g->out, "ivars[%d] != 0", j);
    } else if (rx_dtype_is_float(t)) {
        g->need[H_BITS] |= 1;
        if (t == RX_DT_F16 || t == RX_DT_BF16) {
            g->need[t == RX_DT_F16 ? H_F16 : H_BF16] |= 1;
            rx_sb_printf(g->out, "%s(rx_bits2d(ivars[%d]))", t == RX_DT_F16 ? "rx_f16r" : "rx_bf16r", j);
        } else {
            rx_sb_printf(g->out, "(%s)rx_bits2d(ivars[%d])", rxi_cg_ctype(t), j);
        }
    } else {
        rx_sb_printf(g->out, "(%s)ivars[%d]", rxi_cg_ctype(t), j);
    }
    rx_sb_puts(g->out, ";\n");
    rxi_cg_unused(g, name);
    push_sym(g, v, name);
}

/* One C definition running body (f's, or a run of its top-level statements) with f's
 * parameters: `SPEC int32_t NAME(void *const *data, const int64_t *ivars)`, SPEC being
 * "" (an extern kernel, declared first) or "static ..." . */
static void emit_def(cg *g, const rx_func *f, const rx_stmts *body, const char *spec,
                     const char *name, bool restr)
{
    g->counter = 0;
    if (!*spec) rx_sb_printf(g->out, "int32_t %s(void *const *data, const int64_t *ivars);\n", name);
    rx_sb_printf(g->out, "%sint32_t %s(void *const *data, const int64_t *ivars)\n{\n", spec, name);
    g->indent = 1;
    ind(g);
    rx_sb_puts(g->out, "(void)data;\n");
    ind(g);
    rx_sb_puts(g->out, "(void)ivars;\n");
    for (int j = 0; j < f->nsvars; j++) emit_svar(g, f->svars[j], j);
    rxi_cg_size_checks(g, body);
    int ib = 0;
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        cg_sym *bs = push_sym(g, b, fresh(g, b->name));
        const char *st = rxi_cg_stype((rx_dtype)b->dtype);
        const char *cq = restr && !stmts_store(&f->tbody, b) ? "const " : "";
        ind(g);
        rx_sb_printf(g->out, "%s%s *%s%s = (%s%s *)data[%d];\n", cq, st, restr ? "restrict " : "",
                     bs->name, cq, st, ib++);
        rxi_cg_unused(g, bs->name);
        declare_dims(g, bs, b);
        if (*cq && b->ndim == 0 && !g->glsl) { /* read once: see "Parameters" */
            bs->scalar = true;
            ind(g);
            rx_sb_printf(g->out, "const %s %s_s = %s[0];\n", st, bs->name, bs->name);
            ind(g);
            rx_sb_printf(g->out, "(void)%s_s;\n", bs->name);
        }
    }
    /* the body first, to know whether it checks an index (rx_chk needs rx_ke) */
    rx_sb *out = g->out, text = {0};
    int checks = g->nchecks;
    g->out = &text;
    emit_stmts(g, body);
    g->out = out;
    if (g->nchecks > checks) {
        ind(g);
        rx_sb_puts(g->out, "rx_kerr rx_ke = {0, 0, 0, 0, 0};\n");
    }
    rx_sb_puts(g->out, rx_sb_str(&text));
    rx_sb_free(&text);
    ind(g);
    if (g->nchecks > checks)
        rx_sb_printf(g->out, "if (__atomic_load_n(&rx_ke.state, __ATOMIC_RELAXED)) return "
                             "rx_kfail(data, %d, &rx_ke);\n", ib), ind(g);
    rx_sb_puts(g->out, "return 0;\n}\n\n");
    pop_syms(g, 0);
}

/* body as the C function NAME (SPEC as in emit_def): one definition, or, when
 * versioned, the ISA versions NAME_base, NAME_v4 and NAME_v3 and a NAME that calls the
 * best one this CPU runs ("ISA versions" above; exact or full ones by g's mode). */
static void emit_versions(cg *g, const rx_func *f, const rx_stmts *body, const char *spec,
                          const char *name, bool restr, bool versioned)
{
    if (!versioned) {
        emit_def(g, f, body, spec, name, restr);
        return;
    }
    g->need[H_ISA] |= 1;
    rx_sb vname = {0};
    rx_sb_printf(&vname, "%s_base", name);
    emit_def(g, f, body, "static ", rx_sb_str(&vname), restr);
    if (g->ok) { /* diagnostics once, from the base version */
        rx_sb_puts(g->out, "#if RX_ISA_VERSIONS\n");
        for (int v = 4; v >= 3; v--) {
            rx_sb_reset(&vname);
            rx_sb_printf(&vname, "%s_v%d", name, v);
            const char *vspec = g->isa_exact ? (v == 4 ? "static RX_TARGET_V4_EXACT "
                                                       : "static RX_TARGET_V3_EXACT ")
                                             : (v == 4 ? "static RX_TARGET_V4 "
                                                       : "static RX_TARGET_V3 ");
            emit_def(g, f, body, vspec, rx_sb_str(&vname), restr);
        }
        rx_sb_puts(g->out, "#endif\n");
    }
    if (!*spec) rx_sb_printf(g->out, "int32_t %s(void *const *data, const int64_t *ivars);\n", name);
    rx_sb_printf(g->out, "%sint32_t %s(void *const *data, const int64_t *ivars)\n{\n", spec, name);
    rx_sb_printf(g->out, "#if RX_ISA_VERSIONS\n"
                         "    if (rx_isa >= 4) return %s_v4(data, ivars);\n"
                         "    if (rx_isa >= 3) return %s_v3(data, ivars);\n"
                         "#endif\n"
                         "    return %s_base(data, ivars);\n}\n\n", name, name, name);
    rx_sb_free(&vname);
}

/* Exact versions of f as the kernel `sym` ("ISA versions" above): each maximal run of
 * top-level statements that are all hot or all cold becomes a static function
 * sym_pK, versioned when hot, and sym calls them in order, returning the first
 * nonzero code. A body with a single run, or with a top-level ALLOC (a buffer the
 * later statements use), stays one function, versioned when hot. */
static void emit_parts(cg *g, const rx_func *f, const char *sym, bool restr)
{
    const rx_stmts *ss = &f->tbody;
    int runs = 0;
    bool alloc = false;
    for (int i = 0; i < ss->n; i++) {
        alloc |= ss->items[i]->kind == RX_S_ALLOC;
        if (i == 0 || rxi_cg_hot_at(ss, i) != rxi_cg_hot_at(ss, i - 1)) runs++;
    }
    if (alloc || runs <= 1) {
        emit_versions(g, f, ss, "", sym, restr, rxi_cg_hot(ss));
        return;
    }
    rx_sb pname = {0}, calls = {0};
    for (int i = 0, k = 0; i < ss->n; k++) {
        bool hot = rxi_cg_hot_at(ss, i);
        int j = i + 1;
        while (j < ss->n && rxi_cg_hot_at(ss, j) == hot) j++;
        rx_stmts run = {ss->items + i, j - i};
        rx_sb_reset(&pname);
        rx_sb_printf(&pname, "%s_p%d", sym, k);
        emit_versions(g, f, &run, "static ", rx_sb_str(&pname), restr, hot);
        rx_sb_printf(&calls, "    rc = %s(data, ivars);\n    if (rc) return rc;\n",
                     rx_sb_str(&pname));
        i = j;
    }
    rx_sb_printf(g->out, "int32_t %s(void *const *data, const int64_t *ivars);\n", sym);
    rx_sb_printf(g->out, "int32_t %s(void *const *data, const int64_t *ivars)\n{\n"
                         "    int32_t rc;\n%s    return 0;\n}\n\n", sym, rx_sb_str(&calls));
    rx_sb_free(&pname);
    rx_sb_free(&calls);
}

/* f as the kernel `sym`: one definition; in full mode, when it holds a vectorized loop,
 * ISA versions; in exact mode, parts with versions where hot ("ISA versions" above). A
 * kernel that full mode refuses (a gathering tile, c_isa.c) gets exact mode's treatment,
 * what opt level 2 makes of it, so opt level 3 never runs it slower than 2 does: the
 * gather may share the kernel with a hot tile in another branch (an (N, K) weight's
 * product: a one-row gather for b = 1, a packed 6 x 16 tile above), which left without
 * versions ran 1.57x slower at O3 than O2 (bench_opt_levels.py, gpu_matvec_decode). */
static void emit_func(cg *g, const rx_func *f, const char *sym)
{
    g->f = f;
    bool restr = may_restrict(g->m, f);
    if (g->isa_exact) {
        emit_parts(g, f, sym, restr);
    } else if (g->isa_versions && !rxi_cg_wants_isa(&f->tbody)) {
        g->isa_exact = true;
        emit_parts(g, f, sym, restr);
        g->isa_exact = false;
    } else {
        emit_versions(g, f, &f->tbody, "", sym, restr, g->isa_versions);
    }
    g->f = NULL;
}

void rx_codegen_symbol(const char *fname, rx_sb *out)
{
    rx_sb_puts(out, "rxk_");
    bool changed = false;
    const char *p;
    for (p = fname; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_';
        rx_sb_putc(out, ok ? (char)c : '_');
        changed |= !ok;
    }
    if (changed || !*fname) {
        rx_sha256 h;
        uint8_t dig[32];
        char hex[9];
        rx_sha256_init(&h);
        rx_sha256_update(&h, fname, (size_t)(p - fname));
        rx_sha256_final(&h, dig);
        rx_hex(dig, 4, hex);
        rx_sb_printf(out, "_%s", hex);
    }
}

bool rx_codegen_c(const rx_module *m, rx_sb *out, rx_diags *d)
{
    return rx_codegen_c_with(m, NULL, out, d);
}

bool rx_codegen_c_with(const rx_module *m, const rx_codegen_opts *o, rx_sb *out, rx_diags *d)
{
    rx_sb body = {0};
    cg g = {0};
    g.m = m;
    g.d = d;
    g.out = &body;
    g.ok = true;
    g.cpu = true;
    g.isa_versions = o && o->isa_versions;
    g.isa_exact = o && o->exact_isa_versions && !g.isa_versions;
    RX_VEC(char *) syms = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_func *f = m->funcs[i];
        if (f->kind != RX_F_TIR) continue;
        rx_sb s = {0};
        rx_codegen_symbol(f->name, &s);
        for (int k = 0; k < syms.n; k++)
            if (!strcmp(syms.items[k], rx_sb_str(&s))) {
                rx_diag_at(d, &m->locs, f->loc, "loop function \"%s\" has the same C symbol "
                           "%s as another function; rename one", f->name, rx_sb_str(&s));
                g.ok = false;
            }
        char *sym = rx_sb_take(&s);
        RX_VEC_PUSH(syms, sym);
        emit_func(&g, f, sym);
    }
    rx_sb_puts(out, "/* Generated by relaxd's C kernel generator (compiler/codegen). Kernel ABI:\n"
                    "   int32_t rxk_NAME(void *const *data, const int64_t *ivars); see codegen.h */\n");
    rxi_cg_prelude(&g, out);
    rxi_cg_prelude_tr32(&g, out);
    rxi_cg_prelude_rowcopy(&g, out);
    rx_sb_putn(out, rx_sb_str(&body), body.n);
    for (int k = 0; k < syms.n; k++) free(syms.items[k]);
    RX_VEC_FREE(syms);
    RX_VEC_FREE(g.syms);
    RX_VEC_FREE(g.heap);
    RX_VEC_FREE(g.loops);
    RX_VEC_FREE(g.hoisted);
    rx_sb_free(&body);
    return g.ok;
}

/* ---------------------------------------------------------------- for the GPU generator */

/* gpu_kernel.c emits kernel signatures and schedules itself and the statements inside
 * them with this file's emitter (cgen_int.h). */
void rxi_cg_stmts(cg *g, const rx_stmts *ss) { emit_stmts(g, ss); }
void rxi_cg_indent(cg *g) { ind(g); }
void rxi_cg_unused(cg *g, const char *name)
{
    if (g->glsl) return;
    ind(g);
    rx_sb_printf(g->out, "(void)%s;\n", name);
}
char *rxi_cg_fresh(cg *g, const char *base) { return fresh(g, base); }
cg_sym *rxi_cg_push_sym(cg *g, const void *key, char *name) { return push_sym(g, key, name); }
void rxi_cg_pop_syms(cg *g, int mark) { pop_syms(g, mark); }
void rxi_cg_declare_dims(cg *g, cg_sym *s, const rx_buffer *b) { declare_dims(g, s, b); }
void rxi_cg_iters(cg *g, const rx_stmt *s, bool spatial_only) { emit_iters(g, s, spatial_only); }
