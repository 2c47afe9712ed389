/*
 * gpu_kernel.c — loop functions as GPU kernels: the host/device split, the schedules,
 * the launch records.
 *
 * A loop function of a module built for a GPU target runs as one or more device
 * kernels, launched in order by the VM (runtime/vm.c) on the device's in-order queue:
 *
 *   Split.  Each top-level statement of the function's body (looking through a root
 *           block without iterators) becomes its own kernel NAME_s0, NAME_s1, ... .
 *           FuseTIR's functions are sequences of loop nests, each writing a tensor the
 *           next ones read (softmax: max, exp, sum, divide); one kernel per nest gives
 *           every nest its own grid and the queue's order is the barrier between them
 *           (a global barrier inside one kernel does not exist). A body with a
 *           top-level ALLOC (a private buffer later statements read) stays one
 *           kernel: the buffer would not survive the kernel boundary.
 *   Grid.   A nest whose outer loops are independent (rx_loop_independent: each
 *           iteration writes its own elements; schedule.c's parallel rule, the one
 *           the CPU target uses for its OpenMP loops) is spread over the grid: the
 *           longest chain of such perfectly nested loops (each the only statement of
 *           the one before, its extent free of the chain's variables) is flattened to
 *           one index, and work-item g runs iterations g, g + G, g + 2G, ... (G the
 *           grid's size: a grid-stride loop, so any grid size is correct and huge
 *           tensors need no huge grid). The rest of the nest, reduction loops
 *           included, runs inside the work-item. Loops of extent one join the chain
 *           (they run once wherever they are) unless a block's init is hoisted above
 *           them. This is TVM dlight's fallback rule with an elementwise rule's
 *           flattening: injective and elementwise functions get one work-item per
 *           element; a row reduction (softmax, rms_norm, layer_norm, sum/max over the
 *           last axis) gets one work-item per row and reads its row once per nest;
 *           a matmul gets one work-item per output element with its dot product in
 *           registers. The host computes the grid from the symbolic values: the
 *           chain's iteration count is written as a dim expression over the kernel's
 *           symbolic arguments (the launch record), rounded up to whole work-groups
 *           of max_threads and capped at MAX_GROUPS groups. Where that rule gives no
 *           chain, the affine rule (gpu_affine.c) may: a perfect nest writing each
 *           stored buffer through one index tuple that is injective over the loops
 *           (a workspace written at `k0 * 4096 + j`).
 *   Host loop. A loop that no grid shares (its iterations depend on each other: a
 *           scan over rows, a reused workspace) whose extent the host can evaluate and
 *           whose body statements give at least one a grid (or rows, tiles, matvec)
 *           runs on the host: each body statement is its own kernel NAME_sK_bJ,
 *           planned as above, taking the iteration as one more scalar `rx_it` (the
 *           loop variable is MIN + rx_it), and the launch records get a host-loop
 *           record (RX_RXA_SCHED_LOOP) before the body's: the VM launches the body
 *           once per iteration, the in-order queue keeping iterations and statements
 *           in order. Without it such a loop is one work-item, which on lavapipe
 *           (65535 loop iterations per invocation at most) computes garbage when long.
 *   Single. Anything else (a nest whose outer loop carries a dependence, a scan,
 *           an if at the top level, a body with a top-level ALLOC) runs in one
 *           work-item: correct for everything, parallel for nothing. A launch record
 *           says which schedule each kernel got (relaxc print --after codegen shows
 *           the source).
 *   Rows.   A row reduction under the chain (one reduce loop, one block C[i] = C[i] OP
 *           val) whose row is long enough gets a work-group per row and a tree
 *           reduction in local memory instead of a work-item per row (gpu_reduce.c).
 *   Tiles.  A matmul under the chain (its last two loops the output's rows and columns,
 *           one fold C += x * y) gets tile x tile work-groups with x and y staged in
 *           local memory and an R x R register micro-tile per work-item (gpu_matmul.c).
 *           When its row count is symbolic it gets a
 *           second kernel (NAME_sKv) for few rows: each launch record's count is
 *           multiplied by a step of the row count, so NAME_sKv runs for at most
 *           RX_GPU_MV_ROWS rows (decode) and the tiles above, never both.
 *   Matvec. A matmul of at most RX_GPU_MV_ROWS rows (a literal, or NAME_sKv above)
 *           gets a work-group per block of output columns with K split across its
 *           work-items and a tree over the slices in local memory, the weight's
 *           columns read four at a time by vector loads when they are adjacent
 *           (gpu_matvec.c); one too narrow for that (fewer columns than a block)
 *           stays on the grid.
 *
 * Statements and expressions are the CPU target's (c_kernel.c, c_expr.c) written in
 * the target's dialect (gpu_dialect.c): buffers are indexed as arrays, symbolic
 * variables are kernel arguments, loops inside a work-item are C loops. What the
 * device cannot do is refused with a located error at compile time: a heap
 * allocation inside a loop function (workspaces are lifted to parameters by
 * lift_workspace; what is left must be a small private array), a thread-bound loop,
 * a float symbolic variable.
 *
 * Launch ABI (docs/gpu.md): every kernel of a loop function takes the same
 * arguments: per buffer parameter `__global T *NAME_b, long NAME_o` (the storage's
 * buffer and the tensor's element offset in it: memory planning places tensors at
 * byte offsets that need no sub-buffer alignment), then each symbolic variable, then
 * `__global int *rx_st`, the module's status record: a work-item whose index check
 * failed writes state 1, its kernel's index, axis, index and extent there (the first
 * one wins, by compare-and-swap) and the VM reports it after the call.
 *
 * The LAUNCH section (docs/artifact.md): u32 nkernels, then per kernel of the kernel
 * table u32 nlaunch and per launch: u32 name length, the name, u32 schedule (0 single,
 * 1 grid, 2 rows and tiles: a work-group per item, 3 a host loop), u32 work-items per
 * group (a host loop: its body's record count), u32 local-memory bytes, u32 maximum
 * groups, and the iteration count as a dim expression over the kernel's symbolic
 * variables (0 tokens: unknown, the runtime launches the maximum grid; in a host loop's
 * body, variable nsvars is the loop's iteration).
 */
#include <stdio.h>
#include <string.h>

#include "gpu_int.h"
#include "relax/codegen.h"
#include "relax/pass.h"
#include "relax/rxa.h"

enum {
    MAX_GROUPS = 65535 /* work-groups of one launch, at most (grid-stride beyond): Vulkan
                          guarantees 65535 per dimension (maxComputeWorkGroupCount) */
};

/* ---------------------------------------------------------------- launch records */

static void put_u32(rx_sb *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    rx_sb_putn(o, (const char *)b, 4);
}

static void put_i64(rx_sb *o, int64_t v)
{
    put_u32(o, (uint32_t)((uint64_t)v & 0xffffffffu));
    put_u32(o, (uint32_t)((uint64_t)v >> 32));
}

/* Appends e as postfix tokens over f's symbolic variables to toks (*n counts them);
 * false when e is not a dim expression (then toks is garbage). hl: NULL, or the host
 * loop whose variable is MIN + the iteration, variable nsvars of the record. */
static bool dim_tokens(const rx_func *f, const rx_stmt *hl, const rx_expr *e, rx_sb *toks,
                       uint32_t *n)
{
    if (*n + 1 > RX_RXA_MAX_TOKENS) return false;
    switch ((rx_ekind)e->kind) {
    case RX_E_INT:
        put_u32(toks, RX_RXA_TOK_CONST);
        put_i64(toks, e->u.ival);
        (*n)++;
        return true;
    case RX_E_VAR:
        for (int j = 0; j < f->nsvars; j++)
            if (f->svars[j] == e->u.var) {
                put_u32(toks, RX_RXA_TOK_VAR);
                put_u32(toks, (uint32_t)j);
                (*n)++;
                return true;
            }
        if (!hl || hl->u.for_.var != e->u.var || *n + 2 > RX_RXA_MAX_TOKENS) return false;
        put_u32(toks, RX_RXA_TOK_VAR); /* MIN + the iteration */
        put_u32(toks, (uint32_t)f->nsvars);
        (*n)++;
        if (!dim_tokens(f, NULL, hl->u.for_.min, toks, n) || *n + 1 > RX_RXA_MAX_TOKENS)
            return false;
        put_u32(toks, RX_RXA_TOK_ADD);
        (*n)++;
        return true;
    case RX_E_CAST:
        return rx_dtype_is_int((rx_dtype)e->u.op.a->dtype) && dim_tokens(f, hl, e->u.op.a, toks, n);
    default: break;
    }
    static const struct { int k; uint32_t op; } ops[] = {
        {RX_E_ADD, RX_RXA_TOK_ADD},           {RX_E_SUB, RX_RXA_TOK_SUB},
        {RX_E_MUL, RX_RXA_TOK_MUL},           {RX_E_FLOORDIV, RX_RXA_TOK_FLOORDIV},
        {RX_E_FLOORMOD, RX_RXA_TOK_FLOORMOD}, {RX_E_MIN, RX_RXA_TOK_MIN},
        {RX_E_MAX, RX_RXA_TOK_MAX}};
    for (int i = 0; i < RX_COUNTOF(ops); i++)
        if (ops[i].k == e->kind) {
            if (!dim_tokens(f, hl, e->u.op.a, toks, n) || !dim_tokens(f, hl, e->u.op.b, toks, n) ||
                *n + 1 > RX_RXA_MAX_TOKENS)
                return false;
            put_u32(toks, ops[i].op);
            (*n)++;
            return true;
        }
    return false;
}

/* One launch record (format above). */
static void put_launch(rx_sb *o, const char *name, uint32_t sched, uint32_t local,
                       uint32_t local_bytes, uint32_t ntok, const rx_sb *toks)
{
    put_u32(o, (uint32_t)strlen(name));
    rx_sb_puts(o, name);
    put_u32(o, sched);
    put_u32(o, local);
    put_u32(o, local_bytes);
    put_u32(o, sched == RX_RXA_SCHED_SINGLE || sched == RX_RXA_SCHED_LOOP ? 1 : MAX_GROUPS);
    put_u32(o, ntok);
    if (ntok) rx_sb_putn(o, toks->p, toks->n);
}

/* ---------------------------------------------------------------- analysis */

/* The statements the split works on: f's body, looking through a root block without
 * iterators or init. */
static const rx_stmts *top_stmts(const rx_func *f)
{
    const rx_stmts *ss = &f->tbody;
    while (ss->n == 1 && ss->items[0]->kind == RX_S_BLOCK && ss->items[0]->u.block.niters == 0 &&
           ss->items[0]->u.block.init.n == 0)
        ss = &ss->items[0]->u.block.body;
    return ss;
}

bool rx_gpu_free_of_chain(const rx_stmt *s, const rx_stmt *const *chain, int n)
{
    for (int k = 0; k < n; k++)
        if (rx_expr_uses_var(s->u.for_.extent, chain[k]->u.for_.var) ||
            rx_expr_uses_var(s->u.for_.min, chain[k]->u.for_.var))
            return false;
    return true;
}

/* The grid chain of nest s (see the essay): its loops into chain, their count. */
static int grid_chain(const rx_stmt *s, const rx_stmt **chain)
{
    int n = 0;
    while (s && s->kind == RX_S_FOR && n < RX_GPU_MAX_CHAIN && !s->u.for_.thread) {
        int64_t ext;
        bool unit = rx_expr_is_const(s->u.for_.extent, &ext) && ext < 2;
        if (unit ? rx_init_hoist_target(s) != NULL : !rx_loop_independent(s)) break;
        if (!rx_gpu_free_of_chain(s, chain, n)) break;
        chain[n++] = s;
        s = s->u.for_.body.n == 1 ? s->u.for_.body.items[0] : NULL;
    }
    for (int i = 0; i < n; i++) { /* a chain of unit loops alone shares nothing */
        int64_t ext;
        if (!rx_expr_is_const(chain[i]->u.for_.extent, &ext) || ext >= 2) return n;
    }
    return 0;
}

/* First heap allocation or thread-bound loop in ss: what no device kernel can run. */
static const rx_stmt *device_unfit(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i], *r = NULL;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            if (s->u.for_.thread) return s;
            r = device_unfit(&s->u.for_.body);
            break;
        case RX_S_BLOCK:
            r = device_unfit(&s->u.block.init);
            if (!r) r = device_unfit(&s->u.block.body);
            break;
        case RX_S_ALLOC:
            if (!rxi_cg_alloc_on_stack(s->u.alloc.buf)) return s;
            break;
        case RX_S_IF:
            r = device_unfit(&s->u.if_.then_s);
            if (!r) r = device_unfit(&s->u.if_.else_s);
            break;
        case RX_S_LET: r = device_unfit(&s->u.let.body); break;
        default: break;
        }
        if (r) return r;
    }
    return NULL;
}

/* ---------------------------------------------------------------- emission */

void rx_gpu_ind(cg *g)
{
    for (int i = 0; i < g->indent; i++) rx_sb_puts(g->out, "    ");
}

#define ind rx_gpu_ind

/* `KERNEL NAME(params)\n{\n` with the buffer views, symbolic variables and extents in
 * scope (pushed on g's scope stack). */
static void emit_head(gk *k, const rx_func *f, const char *name)
{
    cg *g = k->g;
    if (k->dl->shader_per_kernel) {
        rx_gpu_glsl_head(k, f, name);
        return;
    }
    rx_sb sig = {0}, views = {0};
    rx_sb_puts(&sig, k->dl->kernel);
    if (k->dl->bounds) rx_sb_printf(&sig, k->dl->bounds, (int)rx_target_int(k->t, "max_threads"));
    rx_sb_printf(&sig, " %s(", name);
    int np = 0;
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        char *nm = rxi_cg_fresh(g, b->name);
        const char *st = rxi_cg_stype((rx_dtype)b->dtype);
        rx_sb_printf(&sig, "%s%s %s *%s_b, %s %s_o", np++ ? ",\n        " : "", k->dl->buf_qual,
                     st, nm, k->dl->i64, nm);
        rx_sb_puts(&views, "    ");
        rx_sb_printf(&views, k->dl->buf_view, k->dl->buf_qual, st, nm, nm, nm);
        rxi_cg_push_sym(g, b, nm);
    }
    for (int j = 0; j < f->nsvars; j++) {
        const rx_svar *v = f->svars[j];
        char *nm = rxi_cg_fresh(g, v->name);
        rx_sb_printf(&sig, "%s%s %s", np++ ? ",\n        " : "", rxi_cg_ctype((rx_dtype)v->dtype), nm);
        rxi_cg_push_sym(g, v, nm);
    }
    if (k->hloop) rx_sb_printf(&sig, "%s%s rx_it", np++ ? ",\n        " : "", k->dl->i64);
    rx_sb_printf(&sig, "%s%s int *rx_st)\n{\n", np ? ",\n        " : "", k->dl->buf_qual);
    rx_sb_puts(g->out, rx_sb_str(&sig));
    rx_sb_puts(g->out, rx_sb_str(&views));
    rx_sb_free(&sig);
    rx_sb_free(&views);
    g->indent = 1;
    for (int i = 0; i < f->ntparams; i++) { /* extents: after every view is declared */
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        cg_sym *s = NULL;
        for (int j = g->syms.n - 1; j >= 0 && !s; j--)
            if (g->syms.items[j].key == b) s = &g->syms.items[j];
        rxi_cg_unused(g, s->name);
        rxi_cg_declare_dims(g, s, b);
    }
    rxi_cg_unused(g, "rx_st");
}

void rx_gpu_chain_count(cg *g, const rx_stmt *const *chain, int n)
{
    for (int i = 0; i < n; i++) {
        ind(g);
        rx_sb_printf(g->out, "const long rx_e%d = ", i);
        rxi_cg_expr_as(g, chain[i]->u.for_.extent, RX_DT_I64, chain[i]->loc);
        rx_sb_puts(g->out, ";\n");
    }
    ind(g);
    rx_sb_puts(g->out, "const long rx_n = ");
    for (int i = 0; i < n; i++) rx_sb_printf(g->out, "%srx_e%d", i ? " * " : "", i);
    rx_sb_puts(g->out, n ? ";\n" : "1;\n");
}

void rx_gpu_chain_bind(cg *g, const rx_stmt *const *chain, int n)
{
    ind(g);
    rx_sb_puts(g->out, "long rx_r = rx_g;\n");
    rxi_cg_unused(g, "rx_r");
    for (int i = n - 1; i >= 0; i--) {
        const rx_svar *v = chain[i]->u.for_.var;
        const char *ct = rxi_cg_ctype((rx_dtype)v->dtype);
        char *nm = rxi_cg_fresh(g, v->name);
        rx_sb start = {0};
        rx_sb *save = g->out;
        g->out = &start;
        rxi_cg_expr_as(g, chain[i]->u.for_.min, (rx_dtype)v->dtype, chain[i]->loc);
        g->out = save;
        ind(g);
        rx_sb_printf(g->out, "const %s %s = ", ct, nm);
        rxi_cg_cast_open(g, ct);
        rx_sb_printf(g->out, "%s + rx_r %% rx_e%d));\n", rx_sb_str(&start), i);
        rxi_cg_unused(g, nm);
        if (i) {
            ind(g);
            rx_sb_printf(g->out, "rx_r /= rx_e%d;\n", i);
        }
        cg_loop lp = {v, rx_sb_take(&start)};
        RX_VEC_PUSH(g->loops, lp);
        rxi_cg_push_sym(g, v, nm);
    }
}

/* The body of kernel `name` running statements ss with schedule chain[0..n) (n 0:
 * single work-item; red: the rows schedule of that reduction), wrapped with the
 * index-check record when the body checks one. */
/* Inserts text at offset at of o. */
static void insert_at(rx_sb *o, size_t at, const char *text)
{
    size_t len = strlen(text), tail = o->n - at;
    rx_sb_putn(o, text, len); /* room: the copy is overwritten below */
    memmove(o->p + at + len, o->p + at, tail);
    memcpy(o->p + at, text, len);
}

static void emit_kernel(gk *k, const rx_func *f, const rx_stmts *ss, const rx_stmt *const *chain,
                        int n, const rx_gpu_red *red, const char *name)
{
    cg *g = k->g;
    g->counter = 0;
    gk_shader sh = {rx_xstrdup(name), g->out->n, 0};
    emit_head(k, f, name);
    int mark = g->syms.n, lmark = g->loops.n;
    rx_sb *out = g->out, body = {0};
    g->out = &body;
    int checks = g->nchecks;
    if (k->hloop) rx_gpu_bind_loop(g, k->hloop, "rx_it"); /* the host loop's iteration */
    if (red && red->tile) {
        rx_gpu_emit_tiles(k, chain, n, red);
    } else if (red && red->cols) {
        rx_gpu_emit_matvec(k, chain, n, red);
    } else if (red) {
        rx_gpu_emit_rows(k, chain, n, red);
    } else if (n == 0) {
        ind(g);
        rx_sb_printf(g->out, "if (%s != 0) return; /* one work-item runs it all */\n", k->dl->global_id);
        rxi_cg_stmts(g, ss);
    } else { /* the grid-stride loop over the chain's iterations */
        rx_gpu_chain_count(g, chain, n);
        ind(g);
        rx_sb_printf(g->out, "for (long rx_g = %s; rx_g < rx_n; rx_g += %s) {\n", k->dl->global_id,
                     k->dl->global_size);
        g->indent++;
        rx_gpu_chain_bind(g, chain, n);
        rxi_cg_stmts(g, &chain[n - 1]->u.for_.body);
        g->indent--;
        ind(g);
        rx_sb_puts(g->out, "}\n");
    }
    while (g->loops.n > lmark) free(g->loops.items[--g->loops.n].start);
    rxi_cg_pop_syms(g, mark);
    g->out = out;
    bool checked = g->nchecks > checks;
    if (checked) {
        ind(g);
        rx_sb_puts(g->out, "rx_kerr rx_ke = {0, 0, 0, 0};\n");
    }
    /* A kernel rounding floats to integers (the emitter spells every rounding
     * nearbyint[f]) is compiled without contraction (gpu_dialect.c): the pragma goes
     * before its head, at file scope (a block would move its __local declarations
     * out of the kernel's outermost scope, which OpenCL refuses). */
    bool exact = k->dl->exact_begin && body.p && strstr(body.p, "nearbyint");
    if (exact) insert_at(g->out, sh.at, k->dl->exact_begin);
    rx_sb_putn(g->out, body.p ? body.p : "", body.n);
    rx_sb_free(&body);
    if (checked) {
        ind(g);
        rx_sb_puts(g->out, "if (rx_ke.state != 0 && ");
        rx_sb_printf(g->out, k->dl->atomic_cas, "rx_st", 0, 0, 1);
        rx_sb_printf(g->out, " == 0) {\n"
                             "        rx_st[1] = %d;\n"
                             "        rx_st[2] = rx_ke.axis;\n", k->kidx);
        static const char *const word[] = {"rx_ke.index & 0xffffffff", "rx_ke.index >> 32",
                                           "rx_ke.extent & 0xffffffff", "rx_ke.extent >> 32"};
        for (int w = 0; w < 4; w++) {
            rx_sb_printf(g->out, "        rx_st[%d] = ", 3 + w);
            rxi_cg_cast_open(g, "int");
            rx_sb_printf(g->out, "%s));\n", word[w]);
        }
        rx_sb_puts(g->out, "    }\n");
    }
    rx_sb_puts(g->out, "}\n");
    if (exact) rx_sb_puts(g->out, k->dl->exact_end);
    rx_sb_puts(g->out, "\n");
    rxi_cg_pop_syms(g, 0);
    sh.end = g->out->n;
    RX_VEC_PUSH(k->shaders, sh);
}

/* Appends `* min(1, max(0, a - b))` (1 when a > b, else 0) to the postfix toks, a over
 * f's symbolic variables and b a constant (ab: true for a - b, false for b - a); false
 * when a is not a dim expression or the tokens would not fit. */
static bool put_step(const gk *k, const rx_func *f, const rx_expr *a, int64_t b, bool ab, rx_sb *toks,
                     uint32_t *n)
{
    if (!ab) {
        put_u32(toks, RX_RXA_TOK_CONST);
        put_i64(toks, b);
        (*n)++;
    }
    if (!dim_tokens(f, k->hloop, a, toks, n) || *n + 8 > RX_RXA_MAX_TOKENS) return false;
    if (ab) {
        put_u32(toks, RX_RXA_TOK_CONST);
        put_i64(toks, b);
    }
    put_u32(toks, RX_RXA_TOK_SUB);
    put_u32(toks, RX_RXA_TOK_CONST);
    put_i64(toks, 0);
    put_u32(toks, RX_RXA_TOK_MAX);
    put_u32(toks, RX_RXA_TOK_CONST);
    put_i64(toks, 1);
    put_u32(toks, RX_RXA_TOK_MIN);
    put_u32(toks, RX_RXA_TOK_MUL);
    *n += ab ? 7 : 6;
    return true;
}

/* Kernel `name`'s launch record for chain[0..n) (red: the rows, tiles or matvec
 * schedule). mv: a matmul whose row count chain[n - 2] decides at run time between the
 * tiles schedule (more than RX_GPU_MV_ROWS rows: mv 1) and the matvec schedule or the
 * grid (at most that many: mv 2); the
 * record's iteration count is multiplied by that condition, so the other launch has no
 * work and is skipped. */
static void record(gk *k, const rx_func *f, const rx_stmt *const *chain, int n,
                   const rx_gpu_red *red, int mv, const char *name)
{
    rx_sb toks = {0};
    uint32_t ntok = 0;
    bool known = true;
    int tile = red ? red->tile : 0, dims = 0;
    for (int i = 0; i < n && known; i++) {
        if (red && i < n - 1 && (red->rowmask >> i & 1u))
            continue; /* a row each work-item keeps in registers: no group of its own */
        known = dim_tokens(f, k->hloop, chain[i]->u.for_.extent, &toks, &ntok);
        /* tiles: ceil(extent / (tile micro)) blocks of rows and columns; matvec: of columns */
        int blk = tile && i >= n - 2               ? tile * red->micro
                  : red && red->cols && i == n - 1 ? red->cols
                                                   : 0;
        if (known && blk) {
            known = ntok + 5 <= RX_RXA_MAX_TOKENS;
            put_u32(&toks, RX_RXA_TOK_CONST);
            put_i64(&toks, blk - 1);
            put_u32(&toks, RX_RXA_TOK_ADD);
            put_u32(&toks, RX_RXA_TOK_CONST);
            put_i64(&toks, blk);
            put_u32(&toks, RX_RXA_TOK_FLOORDIV);
            ntok += 4;
        }
        if (known && dims++) {
            known = ntok + 1 <= RX_RXA_MAX_TOKENS;
            put_u32(&toks, RX_RXA_TOK_MUL);
            ntok++;
        }
    }
    if (n == 0) {
        put_u32(&toks, RX_RXA_TOK_CONST);
        put_i64(&toks, 1);
        ntok = 1;
    }
    if (mv && known) {
        /* past RX_RXA_MAX_TOKENS with the step (plan_stmt checked the row count alone):
         * the launch runs whatever the row count; both launches compute every output
         * alike, so at worst one call does the product twice */
        size_t mark = toks.n;
        uint32_t nmark = ntok;
        if (!put_step(k, f, chain[n - 2]->u.for_.extent, RX_GPU_MV_ROWS + (mv == 2), mv == 1, &toks,
                      &ntok)) {
            toks.n = mark;
            if (toks.p) toks.p[mark] = '\0';
            ntok = nmark;
        }
    }
    uint32_t threads = tile ? (uint32_t)(tile * tile)
                     : n || red ? (uint32_t)rx_target_int(k->t, "max_threads") : 1;
    uint32_t sched = red ? RX_RXA_SCHED_ROWS : n ? RX_RXA_SCHED_GRID : RX_RXA_SCHED_SINGLE;
    put_launch(k->launch, name, sched, threads, red ? red->local_bytes : 0, known ? ntok : 0, &toks);
    rx_sb_free(&toks);
}

/* One statement's schedule (pass 1 of emit_func). */
typedef struct plan {
    const rx_stmt *chain[RX_GPU_MAX_CHAIN];
    int n;             /* the grid chain's loops (0: single, or a host loop) */
    bool rows, mv;     /* rows/tiles/matvec (red); mv: a second, few-row launch */
    rx_gpu_red red;
    int nlaunch;       /* launch records it takes */
    struct plan *body; /* a host loop: its body statements' plans (nbody) */
    int nbody;
} plan;

/* The schedule of statement s (ss: s as a list; s NULL: an empty body; hl: NULL or the
 * host loop s is in). A nest gets the grid chain of schedule.c's rule, else of the affine
 * rule (gpu_affine.c); the statements under the chain may be a row reduction, a
 * matmul's tiles or matvec. A matmul of a symbolic row count gets a second, few-row
 * launch only when its launch record can compute that count (dim_tokens): PVT v2's
 * spatial-reduction attention has a row count the tokens cannot spell, and its build
 * failed on every GPU target; it runs the tiles alone. */
static void plan_stmt(gk *k, const rx_func *f, const rx_stmt *hl, const rx_stmt *s,
                      const rx_stmts *ss, plan *p)
{
    p->n = s ? grid_chain(s, p->chain) : 0;
    if (s && !p->n) p->n = rx_gpu_affine_chain(s, p->chain);
    const rx_stmts *under = p->n ? &p->chain[p->n - 1]->u.for_.body : ss;
    p->rows = s && (rx_gpu_match_tiles(k, p->chain, p->n, under, &p->red) ||
                    rx_gpu_match_matvec(k, p->chain, p->n, under, false, &p->red) ||
                    rx_gpu_match_rows(k, under, &p->red));
    int64_t lit;
    p->mv = p->rows && p->red.tile && !rx_expr_is_const(p->chain[p->n - 2]->u.for_.extent, &lit);
    if (p->mv) { /* the few-row launch needs the row count at launch; else tiles alone */
        rx_sb toks = {0};
        uint32_t ntok = 0;
        p->mv = dim_tokens(f, hl, p->chain[p->n - 2]->u.for_.extent, &toks, &ntok) &&
                ntok + 8 <= RX_RXA_MAX_TOKENS;
        rx_sb_free(&toks);
    }
    p->nlaunch = 1 + p->mv;
}

/* Host loop (the essay): s, a loop that no grid shares (its iterations depend on each
 * other, e.g. through a reused workspace), whose extent the host can evaluate and whose
 * body statements (no allocation or let among them) give at least one shared grid:
 * then each body statement is planned as a kernel of its own and p counts the loop's
 * record and theirs. Else p stays the single work-item. */
static void host_loop(gk *k, const rx_func *f, const rx_stmt *s, plan *p)
{
    if (!s || s->kind != RX_S_FOR || s->u.for_.thread || s->u.for_.body.n < 1) return;
    rx_sb toks = {0};
    uint32_t ntok = 0;
    bool known = dim_tokens(f, NULL, s->u.for_.extent, &toks, &ntok);
    rx_sb_free(&toks);
    const rx_stmts *body = &s->u.for_.body;
    for (int j = 0; j < body->n && known; j++)
        known = body->items[j]->kind != RX_S_ALLOC && body->items[j]->kind != RX_S_LET;
    if (!known) return;
    plan *bp = rx_xcalloc((size_t)body->n, sizeof *bp);
    bool shared = false;
    int nl = 1;
    for (int j = 0; j < body->n; j++) {
        rx_stmts one = {&body->items[j], 1};
        plan_stmt(k, f, s, body->items[j], &one, &bp[j]);
        shared |= bp[j].n > 0 || bp[j].rows;
        nl += bp[j].nlaunch;
    }
    if (!shared) {
        free(bp);
        return;
    }
    p->body = bp;
    p->nbody = body->n;
    p->nlaunch = nl;
}

/* Plan p's kernel(s) `name` (and `namev`) with their launch records. */
static void emit_plan(gk *k, const rx_func *f, const plan *p, const rx_stmts *one,
                      const char *name)
{
    emit_kernel(k, f, p->n || p->rows ? NULL : one, p->chain, p->n, p->rows ? &p->red : NULL, name);
    record(k, f, p->chain, p->n, p->rows ? &p->red : NULL, p->mv ? 1 : 0, name);
    if (!p->mv) return;
    /* few rows (decode): the matvec schedule, else a work-item per output */
    rx_stmts under = p->chain[p->n - 1]->u.for_.body;
    rx_gpu_red mv;
    bool coop = rx_gpu_match_matvec(k, p->chain, p->n, &under, true, &mv);
    rx_sb vname = {0};
    rx_sb_printf(&vname, "%sv", name);
    emit_kernel(k, f, NULL, p->chain, p->n, coop ? &mv : NULL, rx_sb_str(&vname));
    record(k, f, p->chain, p->n, coop ? &mv : NULL, 2, rx_sb_str(&vname));
    rx_sb_free(&vname);
}

/* f as kernels SYM_s0, SYM_s1, ... with their launch records. */
static void emit_func(gk *k, const rx_func *f, const char *sym)
{
    cg *g = k->g;
    g->f = f;
    const rx_stmt *bad = device_unfit(&f->tbody);
    for (int j = 0; j < f->nsvars && !bad; j++)
        if (!rx_dtype_is_int((rx_dtype)f->svars[j]->dtype) && f->svars[j]->dtype != RX_DT_BOOL) {
            rxi_cg_err(g, f->loc, "symbolic variable %s is %s: a %s kernel takes integer symbolic "
                      "variables only", f->svars[j]->name, rx_dtype_name((rx_dtype)f->svars[j]->dtype),
                      rx_target_kind_name(k->t->kind));
            g->f = NULL;
            return;
        }
    if (bad) {
        if (bad->kind == RX_S_FOR)
            rxi_cg_err(g, bad->loc, "thread-bound loop \"%s\" (%s): %s kernels are scheduled by the "
                      "compiler, not by thread bindings", bad->u.for_.var->name, bad->u.for_.thread,
                      rx_target_kind_name(k->t->kind));
        else
            rxi_cg_err(g, bad->loc, "buffer \"%s\" of %s scope would be allocated inside a %s kernel "
                      "(only constant private arrays of at most 256 KiB can be; a global buffer "
                      "must be a parameter: a workspace)", bad->u.alloc.buf->name,
                      rx_scope_name((rx_scope)bad->u.alloc.buf->scope), rx_target_kind_name(k->t->kind));
        g->f = NULL;
        return;
    }
    const rx_stmts *ss = top_stmts(f);
    bool split = ss->n > 1;
    for (int i = 0; i < ss->n && split; i++) split = ss->items[i]->kind != RX_S_ALLOC;
    int cap = split ? ss->n : 1, nlaunch = 0;
    /* pass 1: each statement's schedule (a host loop: its body's), the launch count */
    plan *pl = rx_xcalloc((size_t)cap, sizeof *pl);
    for (int i = 0; i < cap; i++) {
        const rx_stmt *s = split ? ss->items[i] : ss->n == 1 ? ss->items[0] : NULL;
        rx_stmts one = {split ? &ss->items[i] : ss->items, split ? 1 : ss->n};
        plan_stmt(k, f, NULL, s, &one, &pl[i]);
        if (!pl[i].n && !pl[i].rows) host_loop(k, f, s, &pl[i]);
        nlaunch += pl[i].nlaunch;
    }
    put_u32(k->launch, (uint32_t)nlaunch);
    rx_sb name = {0};
    for (int i = 0; i < cap; i++) {
        plan *p = &pl[i];
        rx_stmts one = {split ? &ss->items[i] : ss->items, split ? 1 : ss->n};
        rx_sb_reset(&name);
        rx_sb_printf(&name, "%s_s%d", sym, i);
        if (!p->nbody) {
            emit_plan(k, f, p, &one, rx_sb_str(&name));
            continue;
        }
        /* a host loop: its record, then its body's kernels NAME_bJ taking rx_it */
        const rx_stmt *hl = split ? ss->items[i] : ss->items[0];
        rx_sb toks = {0};
        uint32_t ntok = 0;
        dim_tokens(f, NULL, hl->u.for_.extent, &toks, &ntok); /* host_loop proved it */
        put_launch(k->launch, rx_sb_str(&name), RX_RXA_SCHED_LOOP, (uint32_t)(p->nlaunch - 1), 0,
                   ntok, &toks);
        rx_sb_free(&toks);
        k->hloop = hl;
        rx_sb bname = {0};
        for (int j = 0; j < p->nbody; j++) {
            rx_stmts bone = {&hl->u.for_.body.items[j], 1};
            rx_sb_reset(&bname);
            rx_sb_printf(&bname, "%s_b%d", rx_sb_str(&name), j);
            emit_plan(k, f, &p->body[j], &bone, rx_sb_str(&bname));
        }
        rx_sb_free(&bname);
        k->hloop = NULL;
        free(p->body);
    }
    free(pl);
    rx_sb_free(&name);
    g->f = NULL;
}

bool rx_codegen_gpu(const rx_module *m, const rx_target *t, rx_sb *src, rx_sb *bin,
                    rx_sb *launch, rx_diags *d)
{
    const char *why = "";
    const rx_gpu_dialect *dl = rx_gpu_dialect_of(t->kind, &why);
    if (!dl) {
        rx_diag_add(d, "target", "no code generator for %s: %s", t->norm, why);
        return false;
    }
    rx_sb body = {0};
    cg g = {.m = m, .d = d, .out = &body, .ok = true, .glsl = dl->shader_per_kernel};
    gk k = {&g, dl, t, 0, launch, {0}, NULL};
    int nk = 0;
    for (int i = 0; i < m->nfuncs; i++) nk += m->funcs[i]->kind == RX_F_TIR;
    put_u32(launch, (uint32_t)nk);
    rx_sb sym = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_func *f = m->funcs[i];
        if (f->kind != RX_F_TIR) continue;
        rx_sb_reset(&sym);
        rx_codegen_symbol(f->name, &sym);
        emit_func(&k, f, rx_sb_str(&sym));
        k.kidx++;
    }
    if (dl->shader_per_kernel) {
        if (g.ok) rx_gpu_glsl_shaders(&k, &body, src, bin);
    } else {
        rx_sb_puts(src, dl->prelude);
        if (g.need[H_F16] || g.need[H_BF16]) rx_sb_puts(src, dl->prelude_f16);
        rxi_cg_prelude_ops(&g, src);
        rx_sb_putn(src, body.p ? body.p : "", body.n);
    }
    for (int i = 0; i < k.shaders.n; i++) free(k.shaders.items[i].name);
    RX_VEC_FREE(k.shaders);
    rx_sb_free(&sym);
    rx_sb_free(&body);
    RX_VEC_FREE(g.syms);
    RX_VEC_FREE(g.heap);
    RX_VEC_FREE(g.loops);
    RX_VEC_FREE(g.hoisted);
    return g.ok;
}
