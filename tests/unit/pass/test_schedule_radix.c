/*
 * test_schedule_radix.c — flat loops rebuilt from the mixed radix of their index math
 * (compiler/pass/schedule_radix.c), a step of the CPU schedule after its row runs.
 *
 * Structure (built with rx_build_module up to lift_workspace at opt level 2, no library
 * calls, then rx_pass_schedule_cpu):
 *   head    sigmoid(reshape(permute_dims(x (1, 12, h, w), (0, 2, 3, 1)), (h * w * 12,)))
 *           (a detection head's class scores): one flat loop whose load divides by
 *           w * 12 and 12; rebuilt as a parallel loop over h * w around a vectorized
 *           loop of 12, no division or modulo left in the stored value, and the load
 *           read flat;
 *   batch   the same over x (b, 12, h, w): the digits (12, w, h, b) merge into three
 *           runs (12; h * w, contiguous in x; b): two LETs (o's digits, the h * w and b
 *           runs) inside the parallel loop over b * h * w, no division in the value;
 *   box     reshape(permute_dims(x (1, 8, h, w), (0, 2, 3, 1)), (h * w * 2, 4)) (box
 *           deltas: a copy, a two-loop nest whose load reads (i0 * 4 + i1) // (w * 8)):
 *           rebuilt by the data-movement step (rx_schedule_moves) as the head is, a
 *           parallel loop over h * w around a vectorized loop of 8;
 *   lit     the head over a literal (1, 12, 5, 7): every divisor a literal, left to the
 *           flat split of schedule.c (no loop named *_c);
 *   masked  a softmax over (b, 4, 8, h * w) after where(mask, -1e9, x), the (b, h, w)
 *           mask reshaped to (b, 1, 1, h * w) (DETR's key padding mask): the row
 *           schedule keeps all of it (reductions over lanes, no loop named *_c), its exp
 *           nest not taken by the radix step, which runs after the row runs.
 *   grid    g (h, w) + arange(w) reshaped to (1, h * w, 1), plus x (b, h * w, 1): fusion
 *           leaves the column as f32((h * w * 0 + i1 + 0) % w) (a reshape's index with
 *           the broadcast row 0 substituted, unfolded: zoo6 stn_grid's linspace grid):
 *           its index math canonicalized first, a run of w in a parallel loop over
 *           b * h (its two digits LETs), no division in the value (grid_values:
 *           bit-identical, and against g + i % w + x).
 * Numerics: every rebuilt kernel (baseline ISA version) is bit-identical to the same
 * function given only schedule.c's loop kinds (the flat split) at (b, h, w) = (1, 1, 1),
 * (1, 3, 5), (2, 4, 1) and (3, 7, 6), agrees with sigmoid(x[n, c, y, x]) (box: x[n, c,
 * y, x]) at out[((n * h + y) * w + x) * C + c] computed here, and runs in the loop-function
 * interpreter (compiler/interp/tir_eval.c), which fails any load outside its buffer
 * (the flat loads included).
 */
#include <math.h>

#include "kernel_run.h"
#include "../../../compiler/interp/tir_eval.h"
#include "../rx_check.h"

#include "relax/driver.h"

#include "module_text.h"

#include "../../../compiler/pass/schedule_int.h"

enum { CH = 12 };

#define HEAD(x, flat)                                                                      \
    B("p", "{'op':'permute_dims','args':['" x "'],'attrs':{'axes':[0,2,3,1]}}") ","         \
    B("q", "{'op':'reshape','args':['p',{'shape':[" flat "]}]}") ","                         \
    B("r", "{'op':'sigmoid','args':['q']}")

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("head", P("x", TS("1,12,'h','w'")), HEAD("x", "'h * w * 12'"), "r") ","
    FN("batch", P("x", TS("'b',12,'h','w'")), HEAD("x", "'b * h * w * 12'"), "r") ","
    FN("box", P("x", TS("1,8,'h','w'")),
       B("p", "{'op':'permute_dims','args':['x'],'attrs':{'axes':[0,2,3,1]}}") ","
       B("r", "{'op':'reshape','args':['p',{'shape':['h * w * 2',4]}]}"), "r") ","
    FN("lit", P("x", TS("1,12,5,7")), HEAD("x", "420"), "r") ","
    FN("masked", P("x", TS("'b',4,8,'h * w'")) "," P("m", "{'tensor':{'shape':['b','h','w'],'dtype':'bool'}}"),
       B("mr", "{'op':'reshape','args':['m',{'shape':['b',1,1,'h * w']}]}") ","
       B("a", "{'op':'where','args':['mr',{'const':-1e9,'dtype':'f32'},'x']}") ","
       B("r", "{'op':'nn.softmax','args':['a'],'attrs':{'axis':-1}}"), "r") ","
    FN("grid", P("g", TS("'h','w'")) "," P("x", TS("'b','h * w',1")),
       B("a", "{'op':'arange','args':[],'attrs':{'end':'w','dtype':'f32'}}") ","
       B("e", "{'op':'expand_dims','args':['a'],'attrs':{'axis':[0]}}") ","
       B("c", "{'op':'add','args':['g','e']}") ","
       B("d", "{'op':'reshape','args':['c',{'shape':[1,'h * w',1]}]}") ","
       B("r", "{'op':'add','args':['d','x']}"), "r")
    "}}";

/* ---------------------------------------------------------------- structure */

typedef struct nfacts {
    int par, vec, lets, divs; /* parallel / vectorized loops, LETs, // and % in stores */
    int lanes;                /* local *_lanes buffers (the row schedule's reductions) */
    const rx_stmt *inner;     /* the loop named *_c */
} nfacts;

static int divs(const rx_expr *e)
{
    if (!e) return 0;
    int n = e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD;
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += divs(rx_expr_child(e, i));
    return n;
}

static void walk(const rx_stmts *ss, nfacts *f)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: {
            const char *nm = s->u.for_.var->name;
            size_t n = strlen(nm);
            f->par += s->u.for_.loop_kind == RX_LOOP_PARALLEL;
            f->vec += s->u.for_.loop_kind == RX_LOOP_VECTORIZED;
            if (n >= 2 && !strcmp(nm + n - 2, "_c")) f->inner = s;
            walk(&s->u.for_.body, f);
            break;
        }
        case RX_S_BLOCK: walk(&s->u.block.body, f); break;
        case RX_S_LET:
            f->lets++;
            walk(&s->u.let.body, f);
            break;
        case RX_S_STORE: f->divs += divs(s->u.store.value); break;
        case RX_S_ALLOC: f->lanes += strstr(s->u.alloc.buf->name, "_lanes") != NULL; break;
        default: break;
        }
    }
}

static nfacts facts(const rx_module *m, const char *g)
{
    nfacts f = {0};
    walk(&tir_callee_last(m, g)->tbody, &f);
    return f;
}

static rx_module *scheduled(void)
{
    rx_module *m = fused_module(MODULE);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(rx_pass_schedule_cpu(m, &d), "schedule: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

START_TEST(which_rebuilt)
{
    rx_module *m = fused_module(MODULE);
    int n = -1;
    ck_assert(rx_schedule_moves(m, false, &n));
    nfacts x = facts(m, "box");
    ck_assert_msg(x.inner && x.par == 1 && x.vec == 1 && x.lets == 0,
                  "box: inner %p, %d parallel, %d vectorized, %d LETs", (const void *)x.inner,
                  x.par, x.vec, x.lets);
    ck_assert(rx_expr_is_int(x.inner->u.for_.extent, 8));
    ck_assert(rx_schedule_flat(m, NULL) && rx_schedule_rows(m, NULL, NULL)); /* as the pipeline */
    ck_assert(rx_schedule_radix(m, &n));
    ck_assert_int_eq(n, 3); /* head, batch, grid (box is rebuilt already, masked is the rows') */
    rx_module_free(m);
    m = scheduled();
    nfacts h = facts(m, "head"), b = facts(m, "batch"), l = facts(m, "lit");
    ck_assert_msg(h.inner && h.par == 1 && h.vec == 1 && h.divs == 0 && h.lets == 0,
                  "head: inner %p, %d parallel, %d vectorized, %d divisions, %d LETs",
                  (const void *)h.inner, h.par, h.vec, h.divs, h.lets);
    ck_assert(rx_expr_is_int(h.inner->u.for_.extent, CH));
    ck_assert_msg(b.inner && b.par == 1 && b.vec == 1 && b.divs == 0 && b.lets == 2,
                  "batch: inner %p, %d parallel, %d vectorized, %d divisions, %d LETs",
                  (const void *)b.inner, b.par, b.vec, b.divs, b.lets);
    ck_assert(rx_expr_is_int(b.inner->u.for_.extent, CH));
    ck_assert_msg(!l.inner, "lit: rebuilt");
    /* grid's value f32((h * w * 0 + i1 + 0) % w) as fusion leaves it: a run of w (the
       column, a digit the value uses) inside a parallel loop over b * h whose two digits
       (g is broadcast over b) are LETs, no division left in the value (refused before
       the index math was canonicalized) */
    nfacts gd = facts(m, "grid");
    ck_assert_msg(gd.inner && gd.par == 1 && gd.vec == 1 && gd.divs == 0 && gd.lets == 2,
                  "grid: inner %p, %d parallel, %d vectorized, %d divisions, %d LETs",
                  (const void *)gd.inner, gd.par, gd.vec, gd.divs, gd.lets);
    ck_assert(gd.inner->u.for_.extent->kind == RX_E_VAR &&
              !strcmp(gd.inner->u.for_.extent->u.var->name, "w"));
    nfacts k = facts(m, "masked");
    ck_assert_msg(!k.inner && k.lanes == 2, "masked: inner %p, %d lane buffers", (const void *)k.inner,
                  k.lanes);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- numerics */

/* Asserts buf (x (b, ch, h, w), then the output) holds x permuted, through the sigmoid
   when sig. */
static void check_head(const uint8_t *const *buf, int64_t b, int64_t ch, int64_t h, int64_t w,
                       bool sig, const char *what)
{
    const float *x = (const float *)buf[0], *out = (const float *)buf[1];
    for (int64_t n = 0; n < b; n++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t xx = 0; xx < w; xx++)
                for (int64_t c = 0; c < ch; c++) {
                    double v = x[((n * ch + c) * h + y) * w + xx], want = sig ? 1 / (1 + exp(-v)) : v;
                    float got = out[((n * h + y) * w + xx) * ch + c];
                    ck_assert_msg(fabs(got - want) <= 1e-6, "%s [%lld, %lld, %lld, %lld]: %g vs %g",
                                  what, (long long)n, (long long)y, (long long)xx, (long long)c,
                                  (double)got, want);
                }
}

/* Runs f in the interpreter on r's inputs (buffer 0) and asserts it completes and
   writes what r's kernel wrote within 1e-6. */
static void interpret(const rx_func *f, const kr_run *r, int64_t b, int64_t ch, int64_t h,
                      int64_t w, const char *what)
{
    int64_t xs[4] = {b, ch, h, w}, os[2] = {b * h * w * ch, 1};
    int orank = f->tparams[1].buf->ndim;
    if (orank == 2) { /* box: (h * w * 2, 4) */
        os[0] = b * h * w * ch / 4;
        os[1] = 4;
    }
    uint8_t *x = malloc(r->bytes[0]), *o = calloc(1, r->bytes[1]);
    memcpy(x, r->buf[0], r->bytes[0]);
    rx_tev_buf tb[2] = {{x, RX_DT_F32, 4, xs, true}, {o, RX_DT_F32, orank, os, false}};
    rx_sb why = {0};
    ck_assert_msg(rx_tir_eval(f, tb, 2, NULL, 0, NULL, &why), "%s: %s", what, rx_sb_str(&why));
    rx_sb_free(&why);
    const float *got = (const float *)o, *want = (const float *)r->buf[1];
    for (int64_t i = 0; i < os[0] * os[1]; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-6f, "%s: interpreter [%lld]: %g vs %g", what,
                      (long long)i, (double)got[i], (double)want[i]);
    free(x);
    free(o);
}

START_TEST(bit_exact_and_reference)
{
    rx_module *mu = fused_module(MODULE), *ms = scheduled();
    ck_assert(rx_schedule_cpu(mu, NULL, NULL));
    void *hu = kr_load(mu, "base"), *hs = kr_load(ms, "base");
    const char *const names[] = {"b", "h", "w"};
    static const int64_t sizes[][3] = {{1, 1, 1}, {1, 3, 5}, {2, 4, 1}, {3, 7, 6}};
    const char *const gn[] = {"head", "batch", "box"};
    for (int g = 0; g < 3; g++)
        for (size_t v = 0; v < sizeof sizes / sizeof sizes[0]; v++) {
            int64_t b = g == 1 ? sizes[v][0] : 1, h = sizes[v][1], w = sizes[v][2], ch = g == 2 ? 8 : CH;
            int64_t vals[3] = {b, h, w};
            char what[64];
            snprintf(what, sizeof what, "%s (%lld, %lld, %lld)", gn[g], (long long)b, (long long)h,
                     (long long)w);
            const rx_func *fu = tir_callee_last(mu, gn[g]), *fs = tir_callee_last(ms, gn[g]);
            kr_run rs;
            kr_exec_same(hu, fu, hs, fs, names, vals, 3, 7 + v, what, &rs);
            ck_assert_int_eq(rs.nbuf, 2);
            check_head((const uint8_t *const *)rs.buf, b, ch, h, w, g < 2, what);
            interpret(fs, &rs, b, ch, h, w, what);
            kr_free(&rs);
        }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

/* grid: bit-identical to the flat split, and r[n, i, 0] = g[i] + i % w + x[n, i, 0] */
START_TEST(grid_values)
{
    rx_module *mu = fused_module(MODULE), *ms = scheduled();
    ck_assert(rx_schedule_cpu(mu, NULL, NULL));
    void *hu = kr_load(mu, "base"), *hs = kr_load(ms, "base");
    const char *const names[] = {"b", "h", "w"};
    static const int64_t sizes[][3] = {{1, 1, 1}, {1, 3, 5}, {2, 4, 1}, {3, 7, 6}};
    for (size_t v = 0; v < sizeof sizes / sizeof sizes[0]; v++) {
        int64_t b = sizes[v][0], hw = sizes[v][1] * sizes[v][2], w = sizes[v][2];
        char what[64];
        snprintf(what, sizeof what, "grid (%lld, %lld, %lld)", (long long)b,
                 (long long)sizes[v][1], (long long)w);
        const rx_func *fu = tir_callee_last(mu, "grid"), *fs = tir_callee_last(ms, "grid");
        kr_run rs;
        kr_exec_same(hu, fu, hs, fs, names, sizes[v], 3, 3 + v, what, &rs);
        ck_assert_int_eq(rs.nbuf, 3);
        const float *g = (const float *)rs.buf[0], *x = (const float *)rs.buf[1],
                    *r = (const float *)rs.buf[2];
        for (int64_t n = 0; n < b; n++)
            for (int64_t i = 0; i < hw; i++) {
                float want = g[i] + (float)(i % w) + x[n * hw + i];
                ck_assert_msg(r[n * hw + i] == want, "%s [%lld, %lld]: %g vs %g", what,
                              (long long)n, (long long)i, (double)r[n * hw + i], (double)want);
            }
        kr_free(&rs);
    }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

static Suite *radix_suite(void)
{
    Suite *s = suite_create("schedule_radix");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_rebuilt);
    tcase_add_test(tc, bit_exact_and_reference);
    tcase_add_test(tc, grid_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(radix_suite()); }
