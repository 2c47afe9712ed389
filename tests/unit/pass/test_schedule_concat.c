/*
 * test_schedule_concat.c — concat nests split into one copy loop per field under one
 * parallel loop over the axes before the concat axis (compiler/pass/schedule_concat.c;
 * issue 13, item 3).
 *
 * Structure (built with rx_build_module up to lift_workspace at opt level 2, so FuseTIR's
 * fused producers are there, then split): the KV-cache append with symbolic b and c
 * (cache (b, 4, c, 16) and one new step), the same with the new step fused from a
 * projection (b, 1, 64) through reshape and permute_dims as a decoder writes it, three
 * fields on axis 1 of a matrix, and the last axis (a K-transposed cache); each becomes
 * one parallel FOR from 0 holding one FOR per field, the first from 0 and the others
 * from the previous field's end, with no select left in any store. Not split: a concat
 * on axis 0. A batch of one ((1, 6, c, 8) and (1, 3, c, 8) on axis 1): the loop over the
 * batch stays serial and each field loop is parallel instead.
 * Numerics: every split kernel is bit-identical to the unsplit kernel at sizes with an
 * empty cache (c = 0), one row (b = 1) and ragged ones, and the appended cache equals
 * the cache then the new step, element by element.
 */
#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"

#include "module_text.h"

#define CAT(args, axis) "{'op':'concat','args':[{'tuple':[" args "]}],'attrs':{'axis':" axis "}}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("kv", P("k", TS("'b',4,'c',16")) "," P("kn", TS("'b',4,1,16")),
       B("r", CAT("'k','kn'", "2")), "r") ","
    FN("kv_fused", P("k", TS("'b',4,'c',16")) "," P("x", TS("'b',1,64")),
       B("h", "{'op':'reshape','args':['x',{'shape':['b',1,4,16]}]}") ","
       B("t", "{'op':'permute_dims','args':['h'],'attrs':{'axes':[0,2,1,3]}}") ","
       B("r", CAT("'k','t'", "2")), "r") ","
    FN("three", P("x", TS("'b','c'")) "," P("y", TS("'b',5")) "," P("z", TS("'b',7")),
       B("r", CAT("'x','y','z'", "1")), "r") ","
    FN("last", P("k", TS("'b',4,16,'c'")) "," P("kn", TS("'b',4,16,1")),
       B("r", CAT("'k','kn'", "3")), "r") ","
    FN("axis0", P("x", TS("'c',64")) "," P("y", TS("'b',64")), B("r", CAT("'x','y'", "0")), "r") ","
    FN("batch1", P("x", TS("1,6,'c',8")) "," P("y", TS("1,3,'c',8")),
       B("r", CAT("'x','y'", "1")), "r")
    "}}";

static rx_module *fused(void)
{
    return fused_module(MODULE);
}

/* The loop function the graph function gname calls last. */
static rx_func *kernel(const rx_module *m, const char *gname) { return tir_callee_last(m, gname); }

/* Stores (in *n) whose value holds a select, in ss. */
static void selects(const rx_stmts *ss, int *n)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) selects(&s->u.for_.body, n);
        else if (s->kind == RX_S_BLOCK) selects(&s->u.block.body, n);
        else if (s->kind == RX_S_STORE) *n += kr_has_select(s->u.store.value);
    }
}

START_TEST(which_split)
{
    rx_module *m = fused();
    int n = -1;
    ck_assert(rx_schedule_concat(m, &n));
    ck_assert_int_eq(n, 5);
    const char *const split[] = {"kv", "kv_fused", "three", "last"};
    const int fields[] = {2, 2, 3, 2};
    for (int g = 0; g < 4; g++) {
        const rx_func *f = kernel(m, split[g]);
        ck_assert_int_eq(f->tbody.n, 1);
        const rx_stmt *s = f->tbody.items[0];
        ck_assert_int_eq(s->kind, RX_S_FOR);
        ck_assert_msg(s->u.for_.loop_kind == RX_LOOP_PARALLEL, "%s: not parallel", split[g]);
        ck_assert(rx_expr_is_int(s->u.for_.min, 0));
        ck_assert_int_eq(s->u.for_.body.n, fields[g]);
        for (int k = 0; k < fields[g]; k++) {
            const rx_stmt *fl = s->u.for_.body.items[k];
            ck_assert_int_eq(fl->kind, RX_S_FOR);
            ck_assert_int_eq(fl->u.for_.loop_kind, RX_LOOP_SERIAL);
            ck_assert_msg(k == 0 ? rx_expr_is_int(fl->u.for_.min, 0)
                                 : !rx_expr_is_int(fl->u.for_.min, 0),
                          "%s: field %d starts at the wrong place", split[g], k);
        }
        int sel = 0;
        selects(&f->tbody, &sel);
        ck_assert_msg(sel == 0, "%s: %d selects left", split[g], sel);
    }
    /* the append's parallel loop covers b x heads: b * 4 iterations */
    const rx_stmt *kv = kernel(m, "kv")->tbody.items[0];
    ck_assert_int_eq(kv->u.for_.extent->kind, RX_E_MUL);
    /* a batch of one: g runs once, serial; each field loop (channels) is the parallel one */
    const rx_stmt *b1 = kernel(m, "batch1")->tbody.items[0];
    ck_assert_int_eq(b1->kind, RX_S_FOR);
    ck_assert_int_eq(b1->u.for_.loop_kind, RX_LOOP_SERIAL);
    ck_assert_int_eq(b1->u.for_.body.n, 2);
    for (int k = 0; k < 2; k++) {
        const rx_stmt *fl = b1->u.for_.body.items[k];
        ck_assert_int_eq(fl->kind, RX_S_FOR);
        ck_assert_msg(fl->u.for_.loop_kind == RX_LOOP_PARALLEL, "batch1: field %d not parallel", k);
        ck_assert(rx_expr_is_int(fl->u.for_.min, k ? 6 : 0));
        ck_assert(rx_expr_is_int(fl->u.for_.extent, k ? 3 : 6));
    }
    const rx_func *a0 = kernel(m, "axis0");
    int sel = 0;
    selects(&a0->tbody, &sel);
    ck_assert_int_eq(sel, 1);
    rx_module_free(m);
}
END_TEST

START_TEST(bit_exact)
{
    rx_module *mu = fused(), *ms = fused();
    ck_assert(rx_schedule_concat(ms, NULL));
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    void *hu = kr_load(mu, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"b", "c"};
    static const int64_t vals[][2] = {{1, 0}, {1, 7}, {3, 40}, {2, 1}};
    const char *const gn[] = {"kv", "kv_fused", "three", "last", "axis0", "batch1"};
    for (size_t g = 0; g < sizeof gn / sizeof gn[0]; g++)
        for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
            kr_run ru, rs;
            char what[64];
            snprintf(what, sizeof what, "%s b=%lld c=%lld", gn[g], (long long)vals[v][0],
                     (long long)vals[v][1]);
            kr_exec(hu, kernel(mu, gn[g]), names, vals[v], 2, 3 + v, &ru);
            kr_exec(hs, kernel(ms, gn[g]), names, vals[v], 2, 3 + v, &rs);
            kr_same(&ru, &rs, what);
            if (g == 0) /* the append: cache rows, then the new step, per (b, head) */
                kr_check_append(&rs, vals[v][0] * 4, vals[v][1], 16, what);
            kr_free(&ru);
            kr_free(&rs);
        }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

static Suite *concat_suite(void)
{
    Suite *s = suite_create("schedule_concat");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_split);
    tcase_add_test(tc, bit_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(concat_suite()); }
