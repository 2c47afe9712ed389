/*
 * test_schedule_arms.c — the row schedule's eager select arms (compiler/pass/
 * schedule_rows.c, "eager select arms") never read outside a buffer.
 *
 * The row schedule binds the loads of a float select's arms to LETs ahead of the
 * select, so both arms are read at every element, only where it proves each such load
 * in bounds at every iteration. A concat fused into a softmax is the case that rule
 * must turn down: softmax(concat(a (n, 48), b (n, 80))) reads select(k < 48, a[i, k],
 * b[i, k - 48]), and b[i, k - 48] taken eagerly reads before b's row for k < 48 (for
 * row 0, before the buffer: the flat position -48). A masked softmax's
 * where(m, x, y), whose arms read x[i, k] and y[i, k] with k over their own extent, is
 * the case it must take.
 *
 * Each module is built to lift_workspace at opt level 2 with no library calls (the
 * concat fused into the softmax), scheduled for the CPU (rx_pass_schedule_cpu), and
 * checked two ways: structurally (the masked softmax's kernel binds LETs named arm*;
 * the concat's binds none, its select keeps a load in an arm) and by running the
 * scheduled kernel in the loop-function interpreter (compiler/interp/tir_eval.c),
 * which fails any load outside its buffer, at n = 1, 3 and 7 on seeded inputs; every
 * output element agrees with a float64 softmax of the concatenated (or selected) rows
 * computed here, within 1e-5 relative. An arm rule that dropped its extent check fails
 * the interpreter run (row 0, flat position -48).
 * The per-row values hoisted before an elementwise row's inner loop follow the same
 * rule: DGCNN's edge feature cat((e - x, x), 3).permute(0, 3, 1, 2) reads x[0, p, c]
 * and x[0, p, c - 3] in its two arms, free of the neighbour loop; hoisted unconditionally
 * they read past x (it crashed at 2 x 1024 points). Its kernel runs in the interpreter
 * too, every element compared with the reference exactly.
 */
#include <math.h>
#include <stdio.h>

#include "pass_test.h"
#include "../../../compiler/interp/tir_eval.h"
#include "../rx_check.h"

#include "relax/driver.h"

enum { WA = 48, WB = 80, W = WA + WB, MAXN = 7, MAXBUF = 8 };

#define TS(dt, ...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'" dt "'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define FN2(name, params, v1, v2)                                                             \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[{'dataflow':true,"  \
    "'bindings':[{'var':'c','value':" v1 "},{'var':'r','value':" v2 "}]}],'result':'r'}}"
#define SOFTMAX "{'op':'nn.softmax','args':['c'],'attrs':{'axis':-1}}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN2("cat", P("a", TS("f32", "'n',48")) "," P("b", TS("f32", "'n',80")),
        "{'op':'concat','args':[{'tuple':['a','b']}],'attrs':{'axis':1}}", SOFTMAX) ","
    FN2("masked", P("m", TS("bool", "'n',128")) "," P("x", TS("f32", "'n',128")) ","
        P("y", TS("f32", "'n',128")), "{'op':'where','args':['m','x','y']}", SOFTMAX)
    "}}";

/* ---------------------------------------------------------------- structure */

typedef struct afacts {
    int arm_lets;    /* LETs whose variable is named arm* */
    int lazy_loads;  /* selects of floats with a load in an arm */
} afacts;

static bool loads(const rx_expr *e)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (loads(rx_expr_child(e, i))) return true;
    return false;
}

static void expr_facts(const rx_expr *e, afacts *f)
{
    if (!e) return;
    if (e->kind == RX_E_SELECT && rx_dtype_is_float((rx_dtype)e->dtype) &&
        (loads(e->u.op.b) || loads(e->u.op.c)))
        f->lazy_loads++;
    for (int i = 0; i < rx_expr_nchildren(e); i++) expr_facts(rx_expr_child(e, i), f);
}

static void stmt_facts(const rx_stmts *ss, afacts *f)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: stmt_facts(&s->u.for_.body, f); break;
        case RX_S_BLOCK:
            stmt_facts(&s->u.block.init, f);
            stmt_facts(&s->u.block.body, f);
            break;
        case RX_S_STORE: expr_facts(s->u.store.value, f); break;
        case RX_S_IF:
            expr_facts(s->u.if_.cond, f);
            stmt_facts(&s->u.if_.then_s, f);
            stmt_facts(&s->u.if_.else_s, f);
            break;
        case RX_S_LET:
            f->arm_lets += !strncmp(s->u.let.var->name, "arm", 3);
            expr_facts(s->u.let.value, f);
            stmt_facts(&s->u.let.body, f);
            break;
        default: break;
        }
    }
}

/* DGCNN's edge feature, cat((e - x, x), dim=3).permute(0, 3, 1, 2) with x broadcast
   over the k neighbours, n clouds of 16 points: a row nest over the output (n, 6, 16,
   20) (rows (b, c, p), the 20 neighbours inner; a symbolic batch keeps the concat from
   the split by field) whose select reads x[b, p, c] in one arm and x[b, p, c - 3] in
   the other. Both loads are free of the inner loop; hoisted before it, each would run
   on every row, the first past x's 3 channels (past the buffer on the last rows). */
static const char EDGE[] =
    "{'format':'relax-json','version':1,'functions':{'edge':{'kind':'relax','params':["
    P("x", TS("f32", "'n',16,3")) "," P("e", TS("f32", "'n',16,20,3")) "],'body':{'blocks':[{"
    "'dataflow':true,'bindings':["
    "{'var':'x4','value':{'op':'expand_dims','args':['x'],'attrs':{'axis':[2]}}},"
    "{'var':'d','value':{'op':'subtract','args':['e','x4']}},"
    "{'var':'r','value':{'op':'broadcast_to','args':['x4',{'shape':['n',16,20,3]}]}},"
    "{'var':'c','value':{'op':'concat','args':[{'tuple':['d','r']}],'attrs':{'axis':3}}},"
    "{'var':'o','value':{'op':'permute_dims','args':['c'],'attrs':{'axes':[0,3,1,2]}}}]}],"
    "'result':'o'}}}}";

/* text at opt level 2 up to lift_workspace (no library calls), then CPU-scheduled. */
static rx_module *scheduled_text(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    rx_build_opts o = {.opt_level = 2, .lib = {.mode = RX_LIB_NONE}};
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    ck_assert_msg(rx_build_module(s, strlen(s), &o, "lift_workspace", &m, NULL, &d), "build: %s",
                  diags_str(&d));
    free(s);
    ck_assert_msg(rx_pass_schedule_cpu(m, &d), "schedule: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

static rx_module *scheduled(void) { return scheduled_text(MODULE); }

START_TEST(which_arms_are_eager)
{
    rx_module *m = scheduled();
    afacts c = {0}, k = {0};
    stmt_facts(&tir_callee(m, "cat")->tbody, &c);
    stmt_facts(&tir_callee(m, "masked")->tbody, &k);
    ck_assert_msg(c.arm_lets == 0 && c.lazy_loads > 0,
                  "concat: %d arm LETs, %d selects loading in an arm", c.arm_lets, c.lazy_loads);
    ck_assert_msg(k.arm_lets > 0 && k.lazy_loads == 0,
                  "masked: %d arm LETs, %d selects loading in an arm", k.arm_lets, k.lazy_loads);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- runs */

/* cnt elements of t (f32 in [-4, 4), bool 0 or 1: a mask taking both arms in every
   row; anything else zero) from seed *s. */
static void fill(uint8_t *p, rx_dtype t, int64_t cnt, uint64_t *s)
{
    for (int64_t e = 0; e < cnt; e++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = *s >> 33;
        if (t == RX_DT_F32) {
            float v = (float)(r % 8000) / 1000.0f - 4.0f;
            memcpy(p + 4 * e, &v, 4);
        } else if (t == RX_DT_BOOL) {
            p[e] = (uint8_t)(r & 1);
        } else {
            memset(p + e * (int64_t)rx_tev_elem_size(t), 0, rx_tev_elem_size(t));
        }
    }
}

/* Runs loop function f (buffers: inputs, then the output and the softmax's lifted
   workspaces) in the interpreter at n rows on inputs from seed; bufs[k] and bytes[k] get
   buffer k after the run (heap, the caller frees them); returns how many. */
static int run(const rx_func *f, int64_t n, uint64_t seed, uint8_t **bufs, size_t *bytes)
{
    rx_arena *a = rx_arena_new();
    rx_vmap vm = {0};
    ck_assert_int_eq(f->nsvars, 1);
    rx_vmap_set(&vm, f->svars[0], rx_e_int(a, n));
    int64_t shapes[MAXBUF][4];
    rx_tev_buf tb[MAXBUF];
    int nb = 0;
    for (int p = 0; p < f->ntparams; p++) {
        const rx_buffer *b = f->tparams[p].buf;
        ck_assert_ptr_nonnull(b);
        ck_assert_int_lt(nb, MAXBUF);
        ck_assert_int_le(b->ndim, 4);
        int64_t cnt = 1;
        for (int d = 0; d < b->ndim; d++) {
            ck_assert(rx_expr_eval_int(b->shape[d], &vm, &shapes[nb][d]));
            cnt *= shapes[nb][d];
        }
        bytes[nb] = (size_t)cnt * rx_tev_elem_size(b->dtype);
        bufs[nb] = malloc(bytes[nb] + 1);
        fill(bufs[nb], (rx_dtype)b->dtype, cnt, &seed);
        tb[nb] = (rx_tev_buf){bufs[nb], (rx_dtype)b->dtype, b->ndim, shapes[nb], false};
        nb++;
    }
    rx_sb why = {0};
    ck_assert_msg(rx_tir_eval(f, tb, nb, NULL, 0, NULL, &why), "%s at n = %lld: %s", f->name,
                  (long long)n, rx_sb_str(&why));
    rx_sb_free(&why);
    rx_vmap_free(&vm);
    rx_arena_free(a);
    return nb;
}

/* Asserts out (n, W) is the softmax of each row of row(i, k), in float64. */
static void check_softmax(const float *out, int64_t n, double (*row)(uint8_t **, int64_t, int64_t),
                          uint8_t **in, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double mx = -INFINITY, s = 0, v[W];
        for (int k = 0; k < W; k++) mx = fmax(mx, v[k] = row(in, i, k));
        for (int k = 0; k < W; k++) s += exp(v[k] - mx);
        for (int k = 0; k < W; k++) {
            double want = exp(v[k] - mx) / s;
            ck_assert_msg(fabs(out[i * W + k] - want) <= 1e-5 * want + 1e-9,
                          "%s n=%lld [%lld, %d]: %g vs %g", what, (long long)n, (long long)i, k,
                          (double)out[i * W + k], want);
        }
    }
}

static double cat_row(uint8_t **in, int64_t i, int64_t k)
{
    const float *a = (const float *)in[0], *b = (const float *)in[1];
    return k < WA ? a[i * WA + k] : b[i * WB + k - WA];
}

static double masked_row(uint8_t **in, int64_t i, int64_t k)
{
    const uint8_t *m = in[0];
    const float *x = (const float *)in[1], *y = (const float *)in[2];
    return m[i * W + k] ? x[i * W + k] : y[i * W + k];
}

START_TEST(in_bounds_and_reference)
{
    rx_module *m = scheduled();
    static const int64_t ns[] = {1, 3, MAXN};
    const char *const gn[] = {"cat", "masked"};
    double (*const rows[])(uint8_t **, int64_t, int64_t) = {cat_row, masked_row};
    const int nin[] = {2, 3};
    for (int g = 0; g < 2; g++)
        for (size_t v = 0; v < sizeof ns / sizeof ns[0]; v++) {
            uint8_t *bufs[MAXBUF];
            size_t bytes[MAXBUF];
            int nb = run(tir_callee(m, gn[g]), ns[v], 11 + v, bufs, bytes);
            ck_assert_int_gt(nb, nin[g]);
            ck_assert_uint_eq(bytes[nin[g]], (size_t)ns[v] * W * 4);
            check_softmax((const float *)bufs[nin[g]], ns[v], rows[g], bufs, gn[g]);
            for (int b = 0; b < nb; b++) free(bufs[b]);
        }
    rx_module_free(m);
}
END_TEST

/* The edge feature's scheduled kernel in the interpreter (which fails a load outside
   its buffer) at n = 1, 3, 7: in bounds, and every element the reference. */
START_TEST(hoisted_arms_in_bounds)
{
    rx_module *m = scheduled_text(EDGE);
    static const int64_t ns[] = {1, 3, MAXN};
    for (size_t v = 0; v < sizeof ns / sizeof ns[0]; v++) {
        int64_t n = ns[v];
        uint8_t *bufs[MAXBUF];
        size_t bytes[MAXBUF];
        int nb = run(tir_callee(m, "edge"), n, 21 + v, bufs, bytes);
        ck_assert_int_ge(nb, 3);
        ck_assert_uint_eq(bytes[2], (size_t)(n * 6 * 16 * 20) * 4);
        const float *x = (const float *)bufs[0], *e = (const float *)bufs[1], *o = (const float *)bufs[2];
        for (int64_t b = 0; b < n; b++)
            for (int64_t c = 0; c < 6; c++)
                for (int64_t p = 0; p < 16; p++)
                    for (int64_t k = 0; k < 20; k++) {
                        int64_t q = b * 16 + p;
                        float want = c < 3 ? e[(q * 20 + k) * 3 + c] - x[q * 3 + c] : x[q * 3 + c - 3];
                        ck_assert_msg(o[((b * 6 + c) * 16 + p) * 20 + k] == want,
                                      "edge n=%lld [%lld, %lld, %lld, %lld]", (long long)n, (long long)b,
                                      (long long)c, (long long)p, (long long)k);
                    }
        for (int b = 0; b < nb; b++) free(bufs[b]);
    }
    rx_module_free(m);
}
END_TEST

static Suite *arms_suite(void)
{
    Suite *s = suite_create("schedule_arms");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, which_arms_are_eager);
    tcase_add_test(tc, in_bounds_and_reference);
    tcase_add_test(tc, hoisted_arms_in_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(arms_suite()); }
