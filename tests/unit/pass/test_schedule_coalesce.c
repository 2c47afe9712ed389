/*
 * test_schedule_coalesce.c — the CPU schedule's loop coalescing (compiler/pass/
 * schedule_coalesce.c): a short innermost loop merged with its outer neighbour where
 * every access walks one contiguous run.
 *
 * Structure (built with rx_build_module up to lift_workspace at opt level 2):
 *   chan    x (1, 16, 7, 7) * s (1, 16, 1, 1) + t, ReLU (a BatchNorm-style per-channel
 *           affine): height and width merge into one loop of 49; the channel loop, along
 *           which s is read alone, stays (it is the parallel one);
 *   flat    x + y over (2, 3, 5, 6): merged down to one loop of 180 (30, 90, 180 are
 *           all below 256);
 *   wide    x + y over (4, 300): the width 300 is not short, nothing merges;
 *   pad     nn.pad of (1, 4, 5, 5) by 1: the select's bounds test reads h and w outside
 *           an access: not merged;
 *   bcast   x (2, 5, 6) + y (6,): y is read along w alone: not merged;
 *   sym     x (b, 8, h, w) + 1: symbolic extents: not merged;
 *   rsum    sum over the last axis of (3, 4, 7): a reduction over the inner loop: not
 *           merged;
 *   own     a hand-written block with iterators of its own (vi = i, vj = j) read by its
 *           body: not merged (merging renamed the loops under the body's feet: the
 *           f64 LSTM's loops failed verification), while the same nest reading i, j is.
 * Numerics: every kernel after coalescing and scheduling is bit-identical to the one
 * only scheduled, on the baseline ISA.
 */
#include <string.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"

#include "module_text.h"

#include "../../../compiler/pass/schedule_int.h"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("chan", P("x", TS("1,16,7,7")) "," P("s", TS("1,16,1,1")) "," P("t", TS("1,16,1,1")),
       B("a", "{'op':'multiply','args':['x','s']}") ","
       B("b", "{'op':'add','args':['a','t']}") ","
       B("r", "{'op':'nn.relu','args':['b']}"), "r") ","
    FN("flat", P("x", TS("2,3,5,6")) "," P("y", TS("2,3,5,6")),
       B("r", "{'op':'add','args':['x','y']}"), "r") ","
    FN("wide", P("x", TS("4,300")) "," P("y", TS("4,300")),
       B("r", "{'op':'add','args':['x','y']}"), "r") ","
    FN("pad", P("x", TS("1,4,5,5")),
       B("r", "{'op':'nn.pad','args':['x'],'attrs':{'pad_width':[0,0,0,0,1,1,1,1]}}"), "r") ","
    FN("bcast", P("x", TS("2,5,6")) "," P("y", TS("6")),
       B("r", "{'op':'add','args':['x','y']}"), "r") ","
    FN("sym", P("x", TS("'b',8,'h','w'")),
       B("r", "{'op':'add','args':['x',{'const':1.0,'dtype':'f32'}]}"), "r") ","
    FN("rsum", P("x", TS("3,4,7")),
       B("r", "{'op':'sum','args':['x'],'attrs':{'axis':[-1]}}"), "r")
    "}}";

/* A hand-written loop function whose block has iterators of its own bound to the loops
 * (vi = i, vj = j), its body reading them, as legalize_rnn.c's loops are written; and
 * the same with the loop variables read directly (implicit iterators). */
static const char OWN[] =
    "{'format':'relax-json','version':1,'functions':{"
    "'own':{'kind':'tir','params':[{'name':'X','buffer':{'shape':[4,7],'dtype':'f32'}},"
    "{'name':'Y','buffer':{'shape':[4,7],'dtype':'f32'}}],'body':{'for':'i','extent':4,'body':"
    "{'for':'j','extent':7,'body':{'block':'s','iters':["
    "{'var':'vi','kind':'spatial','dom':4,'bind':'i'},{'var':'vj','kind':'spatial','dom':7,'bind':'j'}],"
    "'body':[{'store':'Y[vi, vj]','value':'X[vi, vj] + 1'}]}}}},"
    "'plain':{'kind':'tir','params':[{'name':'X','buffer':{'shape':[4,7],'dtype':'f32'}},"
    "{'name':'Y','buffer':{'shape':[4,7],'dtype':'f32'}}],'body':{'for':'i','extent':4,'body':"
    "{'for':'j','extent':7,'body':{'block':'s',"
    "'body':[{'store':'Y[i, j]','value':'X[i, j] + 1'}]}}}}}}";

static rx_func *kernel(const rx_module *m, const char *gname) { return tir_callee_last(m, gname); }

/* The extents of the FOR chain from the first statement of f's body down (through
 * single-FOR bodies), into e; returns how many. */
static int chain(const rx_func *f, int64_t *e, int max)
{
    const rx_stmts *ss = &f->tbody;
    int n = 0;
    while (ss->n >= 1 && ss->items[0]->kind == RX_S_FOR && n < max) {
        const rx_stmt *s = ss->items[0];
        if (!rx_expr_is_const(s->u.for_.extent, &e[n])) e[n] = -1;
        n++;
        ss = &s->u.for_.body;
        if (ss->n != 1) break;
    }
    return n;
}

START_TEST(which_merged)
{
    rx_module *m = fused_module(MODULE);
    int n = -1;
    ck_assert(rx_schedule_coalesce(m, &n));
    ck_assert_int_eq(n, 2); /* chan, flat */
    int64_t e[8];
    int k = chain(kernel(m, "chan"), e, 8);
    ck_assert_int_eq(k, 3);
    ck_assert(e[0] == 1 && e[1] == 16 && e[2] == 49);
    k = chain(kernel(m, "flat"), e, 8);
    ck_assert_int_eq(k, 1);
    ck_assert_int_eq(e[0], 180);
    ck_assert_int_eq(chain(kernel(m, "wide"), e, 8), 2);
    ck_assert_int_eq(chain(kernel(m, "pad"), e, 8), 4);
    ck_assert_int_eq(chain(kernel(m, "bcast"), e, 8), 3);
    ck_assert_int_eq(chain(kernel(m, "sym"), e, 8), 4);
    ck_assert_int_eq(chain(kernel(m, "rsum"), e, 8), 3);
    /* the channel loop is still the parallel one, the merged loop the vectorized one */
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    const rx_stmt *c = kernel(m, "chan")->tbody.items[0]->u.for_.body.items[0];
    ck_assert_int_eq(c->u.for_.loop_kind, RX_LOOP_PARALLEL);
    ck_assert_int_eq(c->u.for_.body.items[0]->u.for_.loop_kind, RX_LOOP_VECTORIZED);
    rx_module_free(m);
}
END_TEST

START_TEST(own_iterators_kept)
{
    rx_module *m = load_quoted(OWN);
    int n = -1;
    ck_assert(rx_schedule_coalesce(m, &n));
    ck_assert_int_eq(n, 1); /* plain only: own's body reads vi and vj, not i and j */
    int64_t e[4];
    ck_assert_int_eq(chain(rx_module_find(m, "own"), e, 4), 2);
    ck_assert_int_eq(chain(rx_module_find(m, "plain"), e, 4), 1);
    ck_assert_int_eq(e[0], 28);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(rx_verify_module(m, "coalesce", &d), "%s", diags_str(&d));
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(bit_exact)
{
    rx_module *mu = fused_module(MODULE), *ms = fused_module(MODULE);
    ck_assert(rx_schedule_cpu(mu, NULL, NULL));
    ck_assert(rx_schedule_coalesce(ms, NULL));
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    void *hu = kr_load(mu, "base"), *hs = kr_load(ms, "base");
    const char *const gn[] = {"chan", "flat", "wide", "pad", "bcast", "sym", "rsum"};
    const char *const names[] = {"b", "h", "w"};
    static const int64_t vals[][3] = {{1, 7, 7}, {2, 3, 5}};
    for (size_t g = 0; g < sizeof gn / sizeof gn[0]; g++)
        for (size_t v = 0; v < 2; v++) {
            kr_run ru, rs;
            kr_exec(hu, kernel(mu, gn[g]), names, vals[v], 3, 3 + v, &ru);
            kr_exec(hs, kernel(ms, gn[g]), names, vals[v], 3, 3 + v, &rs);
            kr_same(&ru, &rs, gn[g]);
            kr_free(&ru);
            kr_free(&rs);
        }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

static Suite *coalesce_suite(void)
{
    Suite *s = suite_create("schedule_coalesce");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_merged);
    tcase_add_test(tc, own_iterators_kept);
    tcase_add_test(tc, bit_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(coalesce_suite()); }
