/*
 * test_schedule_hoist.c — the CPU schedule's first and last steps: loads through a
 * reshape read flat (compiler/pass/schedule_flat.c) and costly loop-invariant terms
 * bound once before their innermost loop (compiler/pass/schedule_hoist.c).
 *
 * Structure (built with rx_build_module up to lift_workspace at opt level 2, so the
 * fused kernels are there):
 *   gcn     a per-node value sqrt(d * d + 1) gathered by each edge's source and target
 *           (take), multiplied, viewed as (e, 1) and times the (e, 16) messages (PyG's
 *           GCN normalization): one fused nest; the product of the two gathered terms
 *           (two sqrt and two gathers) is bound once per edge: one LET before the
 *           feature loop;
 *   gcn_f   the same with a symbolic feature count f: the LET and the loop under an IF
 *           (f > 0), so an empty feature loop evaluates nothing;
 *   arm     the gathered term only under a select's arm (where(x > 0, t * x, x)): not
 *           hoisted (the gather may be out of range where the branch is not taken);
 *   grid    bilinear grid_sample of an NCHW x (b, 16, 6, 7) at (b, 5, w) points: the
 *           sampling positions, weights and bounds (floor calls) do not change along
 *           the channels, and the taps are gathers: the channel loop moves innermost
 *           (rx_schedule_interchange) and the four weights, in-bounds flags and tap
 *           offsets become LETs before it (the flags' and offsets' terms sit under the
 *           taps' selects but load only what the weights load: speculable);
 *   bias_exp x (b, 32) times exp(c): exp does not change along b, but x's load moves
 *           along b in a non-last index: not interchanged (a strided row walk would
 *           cost more than the vector exp);
 *   masked  a softmax over (b, 4, 8, h * w) after where(mask, -1e9, x), the (b, h, w)
 *           bool mask reshaped to (b, 1, 1, h * w) as DETR's key padding mask is: the
 *           mask load's (k // w, k % w) pair becomes (0, k) (in the max and the exp
 *           pass: two pairs merged), after
 *           which the row schedule takes the softmax (without the merge it turns it
 *           down: its mask load does not step by one along the row);
 *   chain   a flattened x (n, 3, 4, 8) plus one: the add's load x[i // 96, i // 32 % 3,
 *           i // 8 % 4, i % 8] (trailing literal extents) reads x[0, 0, 0, i];
 *   symchain x (n, 3, h, w) flattened to (n, 3 h w) plus one (CenterNet's heatmap
 *           flattened for topk): the load x[j, i // (h w), i // w % h, i % w] over
 *           symbolic extents reads x[j, 0, 0, i] (before, three 64-bit divisions per
 *           element and a scalar loop);
 *   bag     an embedding bag as people write it by hand (emb[idx].sum(1): take of a
 *           (n, 32) table by (b, s) indices, summed over s): the gather's index (the
 *           index load, its wrap of negatives; codegen checks it) is bound once before
 *           the innermost (embedding-dim) loop, which reads the row at a let variable:
 *           no load of the innermost loop has an index reading data (before the step,
 *           one does: the test would see the rule missing), the LET is marked
 *           checked_index, and the kernel gives the same bits as without the step
 *           (both after rx_schedule_matvec, which puts the embedding dim innermost).
 * Numerics: the kernels with both steps are bit-identical to the ones given only the
 * parallel and vector loop kinds (neither step changes an operation or its order) at
 * several sizes, f = 0 and h * w not a multiple of 16 included.
 */
#include <string.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"

#include "module_text.h"

#include "../../../compiler/pass/schedule_int.h"

#define IDX(n) "{'tensor':{'shape':[" n "],'dtype':'i64'}}"
#define C1(v) "{'const':" v ",'dtype':'f32'}"
#define NORM                                                                 \
    B("dd", "{'op':'multiply','args':['d','d']}") ","                         \
    B("d1", "{'op':'add','args':['dd'," C1("1.0") "]}") ","                   \
    B("p", "{'op':'sqrt','args':['d1']}") ","                                 \
    B("t1", "{'op':'take','args':['p','row'],'attrs':{'axis':0}}") ","        \
    B("t2", "{'op':'take','args':['p','col'],'attrs':{'axis':0}}") ","        \
    B("nm", "{'op':'multiply','args':['t1','t2']}") ","                       \
    B("nr", "{'op':'reshape','args':['nm',{'shape':['e',1]}]}") ","

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("gcn", P("d", TS("'n'")) "," P("row", IDX("'e'")) "," P("col", IDX("'e'")) "," P("x", TS("'e',16")),
       NORM B("r", "{'op':'multiply','args':['nr','x']}"), "r") ","
    FN("gcn_f", P("d", TS("'n'")) "," P("row", IDX("'e'")) "," P("col", IDX("'e'")) "," P("x", TS("'e','f'")),
       NORM B("r", "{'op':'multiply','args':['nr','x']}"), "r") ","
    FN("arm", P("d", TS("'n'")) "," P("row", IDX("'e'")) "," P("col", IDX("'e'")) "," P("x", TS("'e',16")),
       NORM
       B("g", "{'op':'greater','args':['x'," C1("0.0") "]}") ","
       B("tx", "{'op':'multiply','args':['nr','x']}") ","
       B("r", "{'op':'where','args':['g','tx','x']}"), "r") ","
    FN("grid", P("x", TS("'b',16,6,7")) "," P("g", TS("'b',5,'w',2")),
       B("r", "{'op':'image.grid_sample','args':['x','g'],'attrs':{'method':'bilinear'}}"), "r") ","
    FN("bias_exp", P("x", TS("'b',32")) "," P("c", TS("32")),
       B("e", "{'op':'exp','args':['c']}") ","
       B("r", "{'op':'multiply','args':['x','e']}"), "r")
    "}}";

static const char MASKED[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("masked", P("x", TS("'b',4,8,'h * w'")) "," P("m", "{'tensor':{'shape':['b','h','w'],'dtype':'bool'}}"),
       B("mr", "{'op':'reshape','args':['m',{'shape':['b',1,1,'h * w']}]}") ","
       B("a", "{'op':'where','args':['mr'," C1("-1e9") ",'x']}") ","
       B("r", "{'op':'nn.softmax','args':['a'],'attrs':{'axis':-1}}"), "r")
    "}}";

/* x (shape xs) reshaped to fs, plus one: the add's load of x is a reshape's index chain. */
#define FLAT_ADD(name, xs, fs)                                                   \
    "{'format':'relax-json','version':1,'functions':{"                           \
    FN(name, P("x", TS(xs)),                                                     \
       B("f", "{'op':'reshape','args':['x',{'shape':[" fs "]}]}") ","            \
       B("r", "{'op':'add','args':['f'," C1("1.0") "]}"), "r")                   \
    "}}"

/* A flattened x (n, 3, 4, 8) plus one: the add reads x[i // 96, i // 32 % 3, i // 8 % 4,
   i % 8], a chain of trailing literal extents (schedule_flat.c, "Chains"). */
static const char CHAIN[] = FLAT_ADD("chain", "'n',3,4,8", "'n * 96'");

/* x (n, 3, h, w) flattened to (n, 3 h w) plus one: the add reads x[j, i // (h w), i // w % h,
   i % w], a chain over symbolic extents. */
static const char SYMCHAIN[] = FLAT_ADD("symchain", "'n',3,'h','w'", "'n','h * w * 3'");

static const char BAG[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("bag", P("w", TS("'n',32")) "," P("idx", IDX("'b','s'")),
       B("t", "{'op':'take','args':['w','idx'],'attrs':{'axis':0}}") ","
       B("r", "{'op':'sum','args':['t'],'attrs':{'axis':[1]}}"), "r")
    "}}";

/* The loop function the graph function gname calls last. */
static rx_func *kernel(const rx_module *m, const char *gname) { return tir_callee_last(m, gname); }

/* LETs of let variables (the hoisted terms) in ss; *guarded: one is under an IF. */
static int lets(const rx_stmts *ss, bool under_if, bool *guarded)
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: n += lets(&s->u.for_.body, under_if, guarded); break;
        case RX_S_BLOCK:
            n += lets(&s->u.block.init, under_if, guarded) + lets(&s->u.block.body, under_if, guarded);
            break;
        case RX_S_IF:
            n += lets(&s->u.if_.then_s, true, guarded) + lets(&s->u.if_.else_s, true, guarded);
            break;
        case RX_S_LET:
            if (s->u.let.var->kind == RX_SV_LET) {
                n++;
                *guarded |= under_if;
            }
            n += lets(&s->u.let.body, under_if, guarded);
            break;
        default: break;
        }
    }
    return n;
}

/* Local buffers of reductions over vector lanes (schedule_rows.c's *_lanes) in ss. */
static int lane_bufs(const rx_stmts *ss)
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: n += lane_bufs(&s->u.for_.body); break;
        case RX_S_BLOCK: n += lane_bufs(&s->u.block.init) + lane_bufs(&s->u.block.body); break;
        case RX_S_IF: n += lane_bufs(&s->u.if_.then_s) + lane_bufs(&s->u.if_.else_s); break;
        case RX_S_LET: n += lane_bufs(&s->u.let.body); break;
        case RX_S_ALLOC: n += strstr(s->u.alloc.buf->name, "_lanes") != NULL; break;
        default: break;
        }
    }
    return n;
}

static int gathers_e(const rx_expr *e)
{
    int n = 0;
    if (e->kind == RX_E_LOAD)
        for (int k = 0; k < e->u.load.nidx; k++) n += rx_expr_loads_buf(e->u.load.idx[k], NULL);
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += gathers_e(rx_expr_child(e, i));
    return n;
}

/* Loads whose index reads data in the innermost loops of ss (inner: ss is one's body);
 * *checked: LETs marked checked_index. */
static int inner_gathers(const rx_stmts *ss, bool inner, int *checked)
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            n += inner_gathers(&s->u.for_.body, !rx_stmts_hold_for(&s->u.for_.body), checked);
            break;
        case RX_S_BLOCK: n += inner_gathers(&s->u.block.body, inner, checked); break;
        case RX_S_IF: n += inner_gathers(&s->u.if_.then_s, inner, checked); break;
        case RX_S_LET:
            *checked += s->u.let.var->checked_index;
            n += inner_gathers(&s->u.let.body, inner, checked);
            break;
        case RX_S_STORE: n += inner ? gathers_e(s->u.store.value) : 0; break;
        default: break;
        }
    }
    return n;
}

START_TEST(gather_index)
{
    rx_module *mu = fused_module(BAG), *ms = fused_module(BAG);
    /* the pipeline's order: the embedding-dim loop innermost (schedule_matvec.c) */
    ck_assert(rx_schedule_matvec(mu, NULL) && rx_schedule_tile(mu, NULL) && rx_schedule_cpu(mu, NULL, NULL));
    ck_assert(rx_schedule_matvec(ms, NULL) && rx_schedule_tile(ms, NULL) && rx_schedule_cpu(ms, NULL, NULL));
    int n = -1, cu = 0, cs = 0;
    ck_assert(rx_schedule_hoist(ms, &n));
    ck_assert_int_ge(n, 1);
    ck_assert_int_ge(inner_gathers(&kernel(mu, "bag")->tbody, false, &cu), 1);
    ck_assert_int_eq(inner_gathers(&kernel(ms, "bag")->tbody, false, &cs), 0);
    ck_assert_int_eq(cu, 0);
    ck_assert_int_ge(cs, 1);
    void *hu = kr_load(mu, "base"), *hs = kr_load(ms, "base");
    const char *const names[] = {"n", "b", "s"};
    static const int64_t vals[][3] = {{64, 1, 1}, {64, 3, 7}, {64, 5, 50}, {64, 2, 0}};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
        kr_run ru, rs;
        char what[64];
        snprintf(what, sizeof what, "bag b=%lld s=%lld", (long long)vals[v][1], (long long)vals[v][2]);
        kr_exec(hu, kernel(mu, "bag"), names, vals[v], 3, 3 + v, &ru);
        kr_exec(hs, kernel(ms, "bag"), names, vals[v], 3, 3 + v, &rs);
        kr_same(&ru, &rs, what);
        kr_free(&ru);
        kr_free(&rs);
    }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

START_TEST(which_hoisted)
{
    rx_module *m = fused_module(MODULE);
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    int n = -1;
    ck_assert(rx_schedule_hoist(m, &n));
    bool g = false;
    ck_assert_int_eq(lets(&kernel(m, "gcn")->tbody, false, &g), 1);
    ck_assert_msg(!g, "gcn: a literal feature loop needs no guard");
    g = false;
    ck_assert_int_eq(lets(&kernel(m, "gcn_f")->tbody, false, &g), 1);
    ck_assert_msg(g, "gcn_f: the symbolic feature loop's LET is not under an IF");
    g = false;
    ck_assert_int_eq(lets(&kernel(m, "arm")->tbody, false, &g), 0);
    ck_assert_int_eq(n, 2);
    rx_module_free(m);
}
END_TEST

START_TEST(interchanged)
{
    rx_module *m = fused_module(MODULE);
    int n = -1, h = -1;
    ck_assert(rx_schedule_flat(m, NULL)); /* as the pipeline does first */
    ck_assert(rx_schedule_interchange(m, &n));
    ck_assert_int_eq(n, 1);
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    ck_assert(rx_schedule_hoist(m, &h));
    ck_assert_int_eq(h, 14); /* gcn 1, gcn_f 1, grid 12 */
    bool g = false;
    ck_assert_int_eq(lets(&kernel(m, "grid")->tbody, false, &g), 12);
    ck_assert(!g);
    bool guarded = false;
    ck_assert_int_eq(lets(&kernel(m, "bias_exp")->tbody, false, &guarded), 0);
    rx_module_free(m);
}
END_TEST

START_TEST(flat_enables_rows)
{
    rx_module *m = fused_module(MASKED), *plain = fused_module(MASKED);
    int merged = -1, runs = -1, runs_plain = -1;
    ck_assert(rx_schedule_flat(m, &merged));
    ck_assert_int_eq(merged, 2); /* the mask is read by the max pass and the exp pass */
    ck_assert(rx_schedule_rows(m, &runs, NULL));
    ck_assert(rx_schedule_rows(plain, &runs_plain, NULL));
    /* read flat, the max and the sum both run over vector lanes in one row pass; as
       written, the max (whose mask load divides) is left to the other schedules */
    ck_assert_int_eq(runs, 1);
    ck_assert_int_eq(lane_bufs(&kernel(m, "masked")->tbody), 2);
    ck_assert_int_lt(lane_bufs(&kernel(plain, "masked")->tbody), 2);
    const rx_stmt *s = kernel(m, "masked")->tbody.items[0];
    ck_assert_int_eq(s->kind, RX_S_FOR);
    ck_assert_int_eq(s->u.for_.loop_kind, RX_LOOP_PARALLEL);
    rx_module_free(m);
    rx_module_free(plain);
}
END_TEST

/* The load of x in e (NULL when none). */
static const rx_expr *load_of(const rx_expr *e, const char *buf)
{
    if (!e) return NULL;
    if (e->kind == RX_E_LOAD && !strcmp(e->u.load.buf->name, buf)) return e;
    for (int i = 0; i < rx_expr_nchildren(e); i++) {
        const rx_expr *l = load_of(rx_expr_child(e, i), buf);
        if (l) return l;
    }
    return NULL;
}

/* Runs rx_schedule_flat on text: the pairs merged must be `merged`, and the load of x in
   fn's innermost store must read indices [0, first) and [first, 3) as they are
   (variables) and zeros, and its last index as one variable (the flat position). */
static void check_chain(const char *text, const char *fn, int merged_want, int first)
{
    rx_module *m = fused_module(text);
    int merged = -1;
    ck_assert(rx_schedule_flat(m, &merged));
    ck_assert_int_eq(merged, merged_want);
    const rx_stmt *s = kernel(m, fn)->tbody.items[0];
    while (s->kind == RX_S_FOR || s->kind == RX_S_BLOCK)
        s = s->kind == RX_S_FOR ? s->u.for_.body.items[0] : s->u.block.body.items[0];
    ck_assert_int_eq(s->kind, RX_S_STORE);
    const rx_expr *l = load_of(s->u.store.value, "x");
    ck_assert_ptr_nonnull(l);
    for (int k = 0; k < first; k++) ck_assert_int_eq(l->u.load.idx[k]->kind, RX_E_VAR);
    for (int k = first; k < 3; k++) ck_assert_msg(rx_expr_is_int(l->u.load.idx[k], 0), "index %d", k);
    ck_assert_int_eq(l->u.load.idx[3]->kind, RX_E_VAR);
    rx_module_free(m);
}

/* two trailing pairs collapsed, then i // 96 */
START_TEST(flat_chain) { check_chain(CHAIN, "chain", 3, 0); }
END_TEST

/* i // w % h with i % w, then i // (h w) */
START_TEST(flat_symchain) { check_chain(SYMCHAIN, "symchain", 2, 1); }
END_TEST

START_TEST(bit_exact)
{
    const char *const texts[] = {MODULE, MASKED, CHAIN, SYMCHAIN};
    const char *const gn[] = {"gcn", "gcn_f", "arm", "grid", "bias_exp", "masked", "chain", "symchain"};
    for (int t = 0; t < 4; t++) {
        rx_module *mu = fused_module(texts[t]), *ms = fused_module(texts[t]);
        ck_assert(rx_schedule_cpu(mu, NULL, NULL));
        ck_assert(rx_schedule_flat(ms, NULL));
        ck_assert(rx_schedule_interchange(ms, NULL));
        ck_assert(rx_schedule_cpu(ms, NULL, NULL));
        ck_assert(rx_schedule_hoist(ms, NULL));
        /* the baseline ISA: the O3 versions may contract a * b + c differently in the two
           nest forms (one rounding less), which is not what this compares */
        void *hu = kr_load(mu, "base"), *hs = kr_load(ms, "base");
        /* indices are filled in [-50, 50): n = 64 keeps them in range (negatives from
           the end) */
        const char *const names[] = {"n", "e", "f", "b", "h", "w"};
        static const int64_t vals[][6] = {{64, 1, 0, 1, 1, 1}, {64, 7, 5, 1, 3, 5},
                                          {64, 40, 17, 2, 5, 7}, {64, 3, 1, 3, 4, 4}};
        for (size_t g = t ? (size_t)t + 4 : 0; g < (t ? (size_t)t + 5 : 5u); g++)
            for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                kr_run ru, rs;
                char what[96];
                snprintf(what, sizeof what, "%s e=%lld f=%lld b=%lld h=%lld w=%lld", gn[g],
                         (long long)vals[v][1], (long long)vals[v][2], (long long)vals[v][3],
                         (long long)vals[v][4], (long long)vals[v][5]);
                kr_exec(hu, kernel(mu, gn[g]), names, vals[v], 6, 5 + v, &ru);
                kr_exec(hs, kernel(ms, gn[g]), names, vals[v], 6, 5 + v, &rs);
                kr_same(&ru, &rs, what);
                kr_free(&ru);
                kr_free(&rs);
            }
        kr_unload_pair(hu, hs, mu, ms);
    }
}
END_TEST

static Suite *hoist_suite(void)
{
    Suite *s = suite_create("schedule_hoist");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_hoisted);
    tcase_add_test(tc, interchanged);
    tcase_add_test(tc, flat_enables_rows);
    tcase_add_test(tc, flat_chain);
    tcase_add_test(tc, flat_symchain);
    tcase_add_test(tc, bit_exact);
    tcase_add_test(tc, gather_index);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(hoist_suite()); }
