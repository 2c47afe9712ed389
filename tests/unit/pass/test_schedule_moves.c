/*
 * test_schedule_moves.c — data movement scheduled at every opt level, O0 included
 * (pipeline step 7m, "schedule_moves": compiler/pass/schedule_copy.c; issue 13, item 3:
 * copies at memcpy speed at every opt level).
 *
 * Structure (built with rx_build_module at opt level 0 up to analysis, so only
 * legalize's one kernel per op is there, then the step; the pipeline's reshape_view
 * would make the reshape a view first, which reshape_is_a_view_at_o0 checks): the KV-cache append (concat on axis 2 with
 * symbolic b and c) is split by field under one parallel loop with no select left; a
 * permute keeping the innermost axis and a reshape materialization get a parallel
 * loop and a vectorized innermost loop; a permute moving the innermost axis is tiled
 * (two more loops, a parallel one, the innermost vectorized); an elementwise GELU (erf:
 * vector math, codegen_math.h) gets a parallel loop and a vectorized innermost loop too;
 * an elementwise add, which computes cheaply, is left serial (O1's schedule step owns
 * it). Without the step at O0, every
 * one of these loops stays serial: one thread, one element at a time (O0's KV append
 * measured at 0.29x of memcpy).
 * Numerics: every scheduled O0 kernel is bit-identical to the same kernel unscheduled
 * (built up to analysis) on seeded inputs, at several symbolic sizes, and the append
 * equals the cache then the new step, element by element.
 *
 * Inner runs (schedule_copy.c, at every level): the attention output's permute +
 * reshape as FuseTIR fuses it at O2 ((b, 4, s, 16) -> (b, s, 64): its loads index by
 * i // 16 and i % 16, which GCC copies one scalar at a time) and a reshape materialized
 * at O0 get their innermost loop split into runs of 16 (4 x 16), the run loop vectorized
 * and every load a unit step along it; the split kernels write the unsplit kernels'
 * bytes, and the fused one equals the permute, element by element.
 */
#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"
#include "relax/pass.h"

#include "module_text.h"

#define PERM(x, axes) "{'op':'permute_dims','args':['" x "'],'attrs':{'axes':[" axes "]}}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("kv", P("k", TS("'b',4,'c',16")) "," P("kn", TS("'b',4,1,16")),
       B("r", "{'op':'concat','args':[{'tuple':['k','kn']}],'attrs':{'axis':2}}"), "r") ","
    FN("keep", P("x", TS("'b',64,4,16")), B("r", PERM("x", "0,2,1,3")), "r") ","
    FN("move", P("x", TS("'b',64,16,8")), B("r", PERM("x", "0,1,3,2")), "r") ","
    FN("resh", P("x", TS("'b',64,4,16")), B("r", "{'op':'reshape','args':['x',{'shape':['b',64,64]}]}"),
       "r") ","
    FN("calc", P("x", TS("'b',128")), B("r", "{'op':'add','args':['x','x']}"), "r") ","
    FN("gelu", P("x", TS("'b',128")), B("r", "{'op':'nn.gelu','args':['x']}"), "r")
    "}}";

static const char RUNS[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("attn_out", P("x", TS("'b',4,'s',16")),
       B("t", PERM("x", "0,2,1,3")) ","
       B("r", "{'op':'reshape','args':['t',{'shape':['b','s',64]}]}"), "r") ","
    FN("flat", P("x", TS("'b','s',4,16")), B("r", "{'op':'reshape','args':['x',{'shape':['b','s',64]}]}"),
       "r")
    "}}";

/* Module text src at opt level lv after stage `after`. */
static rx_module *built(const char *src, int lv, const char *after)
{
    return kr_module_at(src, lv, after);
}

/* MODULE at O0 after `after`; for schedule_moves, the build up to analysis and then the
 * step itself: the pipeline's reshape_view, between them, makes "resh" a view (no
 * kernel), and the materialized reshape is what a module keeping one gets scheduled. */
static rx_module *at_o0(const char *after)
{
    if (strcmp(after, "schedule_moves")) return built(MODULE, 0, after);
    rx_module *m = built(MODULE, 0, "analysis");
    ck_assert(rx_schedule_moves(m, true, NULL));
    return m;
}

/* The loop function graph function gname calls (its one call_tir). */
static rx_func *kernel(const rx_module *m, const char *gname) { return tir_callee(m, gname); }

/* Per loop kind, the FORs of ss (kinds[]), the innermost ones of each kind (inner[]),
 * stores holding a select (*sel) and the deepest FOR nesting (*depth). */
typedef struct shape {
    int kinds[8], inner[8], sel, depth;
} shape;

static bool holds_for(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) return true;
        if (s->kind == RX_S_BLOCK && holds_for(&s->u.block.body)) return true;
        if (s->kind == RX_S_LET && holds_for(&s->u.let.body)) return true;
        if (s->kind == RX_S_IF && (holds_for(&s->u.if_.then_s) || holds_for(&s->u.if_.else_s)))
            return true;
    }
    return false;
}

static void walk(const rx_stmts *ss, int depth, shape *sh)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            int k = s->u.for_.loop_kind;
            ck_assert(k >= 0 && k < 8);
            sh->kinds[k]++;
            if (!holds_for(&s->u.for_.body)) sh->inner[k]++;
            if (depth + 1 > sh->depth) sh->depth = depth + 1;
            walk(&s->u.for_.body, depth + 1, sh);
            break;
        }
        case RX_S_BLOCK: walk(&s->u.block.body, depth, sh); break;
        case RX_S_LET: walk(&s->u.let.body, depth, sh); break;
        case RX_S_IF:
            walk(&s->u.if_.then_s, depth, sh);
            walk(&s->u.if_.else_s, depth, sh);
            break;
        case RX_S_STORE: sh->sel += kr_has_select(s->u.store.value); break;
        default: break;
        }
    }
}

static shape shape_of(const rx_module *m, const char *g)
{
    shape sh = {0};
    walk(&kernel(m, g)->tbody, 0, &sh);
    return sh;
}

START_TEST(scheduled_at_o0)
{
    rx_module *m = at_o0("schedule_moves");
    /* the append: one parallel loop, two field loops, no select */
    shape kv = shape_of(m, "kv");
    ck_assert_int_eq(kv.kinds[RX_LOOP_PARALLEL], 1);
    ck_assert_int_eq(kv.sel, 0);
    const rx_stmt *top = kernel(m, "kv")->tbody.items[0];
    ck_assert_int_eq(top->kind, RX_S_FOR);
    ck_assert_int_eq(top->u.for_.loop_kind, RX_LOOP_PARALLEL);
    ck_assert_int_eq(top->u.for_.body.n, 2);
    ck_assert_int_eq(kv.inner[RX_LOOP_VECTORIZED], 2);
    /* permute keeping the innermost axis, reshape: parallel + vectorized innermost */
    const char *const flat[] = {"keep", "resh"};
    for (int i = 0; i < 2; i++) {
        shape sh = shape_of(m, flat[i]);
        ck_assert_msg(sh.kinds[RX_LOOP_PARALLEL] == 1, "%s: %d parallel loops", flat[i],
                      sh.kinds[RX_LOOP_PARALLEL]);
        ck_assert_msg(sh.inner[RX_LOOP_VECTORIZED] == 1 && sh.inner[RX_LOOP_SERIAL] == 0,
                      "%s: innermost loop not vectorized", flat[i]);
    }
    /* permute moving the innermost axis: tiled (4 loops -> 6), parallel, vectorized */
    shape mv = shape_of(m, "move");
    ck_assert_int_eq(mv.depth, 6);
    ck_assert_int_eq(mv.kinds[RX_LOOP_PARALLEL], 1);
    ck_assert_int_eq(mv.inner[RX_LOOP_VECTORIZED], 1);
    /* an elementwise nest computing vector math: parallel + vectorized innermost */
    shape ge = shape_of(m, "gelu");
    ck_assert_int_eq(ge.kinds[RX_LOOP_PARALLEL], 1);
    ck_assert(ge.inner[RX_LOOP_VECTORIZED] == 1 && ge.inner[RX_LOOP_SERIAL] == 0);
    /* other computing nests are not this step's */
    shape ca = shape_of(m, "calc");
    ck_assert_int_eq(ca.kinds[RX_LOOP_PARALLEL] + ca.kinds[RX_LOOP_VECTORIZED], 0);
    rx_module_free(m);
}
END_TEST

/* The pipeline at O0: reshape_view leaves "resh" a view of its parameter (no kernel to
 * schedule) and the permute a kernel. */
START_TEST(reshape_is_a_view_at_o0)
{
    rx_module *m = built(MODULE, 0, "schedule_moves");
    const rx_node *v = rx_module_find(m, "resh")->body->blocks[0]->bindings[0].value;
    ck_assert_int_eq(v->call_kind, RX_CALL_OP);
    ck_assert_str_eq(v->u.call.op->name, "reshape");
    ck_assert_int_eq(kernel(m, "keep")->kind, RX_F_TIR);
    rx_module_free(m);
}
END_TEST

START_TEST(bit_exact)
{
    rx_module *mu = at_o0("analysis"), *ms = at_o0("schedule_moves");
    void *hu = kr_load(mu, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"b", "c"};
    static const int64_t vals[][2] = {{1, 0}, {1, 7}, {3, 40}, {2, 1}};
    const char *const gn[] = {"kv", "keep", "move", "resh", "calc", "gelu"};
    for (size_t g = 0; g < sizeof gn / sizeof gn[0]; g++)
        for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
            kr_run rs;
            char what[64];
            snprintf(what, sizeof what, "O0 %s b=%lld c=%lld", gn[g], (long long)vals[v][0],
                     (long long)vals[v][1]);
            kr_exec_same(hu, kernel(mu, gn[g]), hs, kernel(ms, gn[g]), names, vals[v], 2, 5 + v,
                         what, &rs);
            if (g == 0) kr_check_append(&rs, vals[v][0] * 4, vals[v][1], 16, what);
            if (g == 2) { /* the moved permute: out[b, s, d, h] = x[b, s, h, d] */
                int64_t b = vals[v][0];
                const float *x = (const float *)rs.buf[0], *out = (const float *)rs.buf[1];
                for (int64_t bs = 0; bs < b * 64; bs++)
                    for (int64_t h = 0; h < 16; h++)
                        for (int64_t d = 0; d < 8; d++)
                            ck_assert_msg(out[(bs * 8 + d) * 16 + h] == x[(bs * 16 + h) * 8 + d],
                                          "%s [%lld, %lld, %lld]", what, (long long)bs,
                                          (long long)h, (long long)d);
            }
            kr_free(&rs);
        }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

/* From O1 an elementwise vector-math nest is "schedule"'s (its row schedules take it with
 * the reductions around it: softmax's exp between max and sum), so schedule_moves leaves
 * it as it is there, while it still schedules the copies. */
START_TEST(math_left_to_schedule_at_o1)
{
    rx_module *m = built(MODULE, 1, "schedule_moves");
    shape ge = shape_of(m, "gelu");
    ck_assert_int_eq(ge.kinds[RX_LOOP_PARALLEL] + ge.kinds[RX_LOOP_VECTORIZED], 0);
    shape kp = shape_of(m, "keep");
    ck_assert_int_eq(kp.kinds[RX_LOOP_PARALLEL], 1);
    rx_module_free(m);
}
END_TEST

/* The innermost FOR of FOR s's chain. */
static const rx_stmt *innermost(const rx_stmt *s)
{
    while (s->kind == RX_S_FOR && s->u.for_.body.n == 1 && s->u.for_.body.items[0]->kind == RX_S_FOR)
        s = s->u.for_.body.items[0];
    return s;
}

/* True when every load in e steps by one along v (proved). */
static bool unit_loads(rx_arith *ar, rx_arena *a, const rx_expr *e, const rx_svar *v)
{
    if (e->kind == RX_E_LOAD && !rx_load_unit_step(ar, a, e, v)) return false;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (!unit_loads(ar, a, rx_expr_child(e, i), v)) return false;
    return true;
}

START_TEST(inner_runs)
{
    rx_module *fu = built(RUNS, 2, "lift_workspace"), *fs = built(RUNS, 2, "lift_workspace");
    rx_module *ou = built(RUNS, 0, "analysis"), *os = built(RUNS, 0, "analysis");
    ck_assert(rx_schedule_moves(os, true, NULL)); /* the pipeline would view "flat" first */
    int n = -1;
    ck_assert(rx_schedule_copy(fs, &n));
    ck_assert_int_eq(n, 2);
    ck_assert(rx_schedule_cpu(fs, NULL, NULL));
    const struct {
        rx_module *m;
        const char *g;
    } split[] = {{fs, "attn_out"}, {fs, "flat"}, {os, "flat"}};
    for (int i = 0; i < 3; i++) {
        const rx_func *f = kernel(split[i].m, split[i].g);
        const rx_stmt *in = innermost(f->tbody.items[0]);
        int64_t e;
        ck_assert_msg(in->kind == RX_S_FOR && in->u.for_.loop_kind == RX_LOOP_VECTORIZED &&
                          rx_expr_is_const(in->u.for_.extent, &e) && e == 16,
                      "%s #%d: innermost loop not a vectorized run of 16", split[i].g, i);
        const rx_stmt *blk = in->u.for_.body.items[0];
        ck_assert_int_eq(blk->kind, RX_S_BLOCK);
        const rx_svar *xi = blk->u.block.iters[blk->u.block.niters - 1].var;
        const rx_stmt *st = blk->u.block.body.items[0];
        ck_assert_int_eq(st->kind, RX_S_STORE);
        rx_arith *ar = rx_arith_new(split[i].m->arena);
        ck_assert_msg(unit_loads(ar, split[i].m->arena, st->u.store.value, xi),
                      "%s #%d: a load is not contiguous along the run", split[i].g, i);
        rx_arith_free(ar);
        shape sh = shape_of(split[i].m, split[i].g);
        ck_assert_int_eq(sh.kinds[RX_LOOP_PARALLEL], 1);
    }
    /* same bytes as unsplit, at O2 and at O0; the fused one is the permute */
    const char *const names[] = {"b", "s"};
    static const int64_t vals[][2] = {{1, 1}, {1, 33}, {2, 7}};
    rx_module *pairs[][2] = {{fu, fs}, {ou, os}};
    for (int p = 0; p < 2; p++) {
        void *hu = kr_load(pairs[p][0], NULL), *hs = kr_load(pairs[p][1], NULL);
        for (int g = p; g < 2; g++) /* O0 has attn_out as two kernels: flat is the reshape */
            for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                const char *gn = g == 0 ? "attn_out" : "flat";
                kr_run rs;
                char what[64];
                snprintf(what, sizeof what, "O%d %s b=%lld s=%lld", p ? 0 : 2, gn,
                         (long long)vals[v][0], (long long)vals[v][1]);
                kr_exec_same(hu, kernel(pairs[p][0], gn), hs, kernel(pairs[p][1], gn), names,
                             vals[v], 2, 9 + v, what, &rs);
                if (g == 0) { /* r[b, s, h * 16 + d] = x[b, h, s, d] */
                    int64_t b = vals[v][0], sl = vals[v][1];
                    const float *x = (const float *)rs.buf[0], *r = (const float *)rs.buf[1];
                    for (int64_t bi = 0; bi < b; bi++)
                        for (int64_t h = 0; h < 4; h++)
                            for (int64_t si = 0; si < sl; si++)
                                for (int64_t d = 0; d < 16; d++)
                                    ck_assert_msg(r[((bi * sl + si) * 4 + h) * 16 + d] ==
                                                      x[((bi * 4 + h) * sl + si) * 16 + d],
                                                  "%s [%lld %lld %lld %lld]", what, (long long)bi,
                                                  (long long)h, (long long)si, (long long)d);
                }
                kr_free(&rs);
            }
        dlclose(hu);
        dlclose(hs);
    }
    rx_module_free(fu);
    rx_module_free(fs);
    rx_module_free(ou);
    rx_module_free(os);
}
END_TEST

static Suite *moves_suite(void)
{
    Suite *s = suite_create("schedule_moves");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, scheduled_at_o0);
    tcase_add_test(tc, reshape_is_a_view_at_o0);
    tcase_add_test(tc, bit_exact);
    tcase_add_test(tc, math_left_to_schedule_at_o1);
    tcase_add_test(tc, inner_runs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(moves_suite()); }
