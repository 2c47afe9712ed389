/*
 * test_cleanup.c — canonicalize (compiler/pass/canonicalize.c) and dce
 * (compiler/pass/dce.c): golden tests (input module, expected module, both
 * relax-json, compared with rx_struct_equal; both printed on a difference), and the
 * e2e modules through canonicalize, dce, legalize, analysis, dce: deduction still
 * succeeds and every function's result annotation is unchanged.
 */
#include "pass_test.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/text.h"

/* Runs the passes on `before` and compares with `expected`. */
static void golden(const char *before, const char *expected, const rx_pass_fn *passes, int n)
{
    rx_module *m = load_quoted(before), *want = load_quoted(expected);
    rx_diags d;
    rx_diags_init(&d);
    for (int i = 0; i < n; i++) ck_assert_msg(passes[i](m, &d), "pass %d: %s", i, diags_str(&d));
    rx_sb why = {0};
    if (!rx_struct_equal(m, want, &why)) {
        rx_sb got = {0}, exp = {0};
        rx_print_module(m, &got);
        rx_print_module(want, &exp);
        fprintf(stderr, "--- got\n%s\n--- expected\n%s\n", rx_sb_str(&got), rx_sb_str(&exp));
        ck_abort_msg("modules differ: %s", rx_sb_str(&why));
    }
    rx_sb_free(&why);
    rx_diags_free(&d);
    rx_module_free(m);
    rx_module_free(want);
}

#define T4 "{'tensor':{'shape':[4],'dtype':'f32'}}"
#define MAIN(params, blocks, result)                                                       \
    "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax','params':[" params \
    "],'body':{'blocks':[" blocks "],'result':" result "}}"
#define END "}}"
#define B(v, val) "{'var':'" v "','value':" val "}"
#define DF(...) "{'dataflow':true,'bindings':[" __VA_ARGS__ "]}"
#define PLAIN(...) "{'bindings':[" __VA_ARGS__ "]}"
#define X "{'name':'x','type':" T4 "}"
#define TP "{'name':'t','type':{'tuple':[" T4 "," T4 "]}}"
/* f32[4] constants, little-endian base64: */
#define C_1234 "AACAPwAAAEAAAEBAAACAQA=="   /* 1 2 3 4 */
#define C_10_40 "AAAgQQAAoEEAAPBBAAAgQg==" /* 10 20 30 40 */
#define C_2222 "AAAAQAAAAEAAAABAAAAAQA=="   /* 2 2 2 2 */
#define C_22_88 "AACwQQAAMEIAAIRCAACwQg==" /* 22 44 66 88 */
#define CONST4(data) "{'const':{'dtype':'f32','shape':[4],'data':'" data "'}}"
#define LOOP_EXP                                                                           \
    ",'exp':{'kind':'tir','params':[{'name':'A','buffer':{'shape':[4],'dtype':'f32'}},"      \
    "{'name':'B','buffer':{'shape':[4],'dtype':'f32'}}],"                                   \
    "'body':{'grid':['i'],'extents':[4],'body':{'store':'B[i]','value':'exp(A[i])'}}}"

static const rx_pass_fn CANON_DCE[] = {rx_pass_canonicalize, rx_pass_dce};
static const rx_pass_fn DCE[] = {rx_pass_dce};

START_TEST(canonicalize_bindings)
{
    golden(MAIN(X "," TP,
                DF(B("a", "'x'") "," B("u", "{'tuple':['a','x']}") ","
                   B("b", "{'get_item':'u','index':0}") ","
                   B("c", "{'op':'add','args':['b','b']}") ","
                   B("p", "{'get_item':'t','index':0}") "," B("q", "{'get_item':'t','index':1}") ","
                   B("w", "{'tuple':['p','q']}") "," B("r", "{'tuple':['c','w']}")),
                "'r'") END,
           MAIN(X "," TP,
                DF(B("c", "{'op':'add','args':['x','x']}") "," B("r", "{'tuple':['c','t']}")),
                "'r'") END,
           CANON_DCE, 2);
}
END_TEST

START_TEST(fold_constants)
{
    golden(MAIN(X,
                DF(B("k", "{'op':'add','args':[" CONST4(C_1234) "," CONST4(C_10_40) "]}") ","
                   B("k2", "{'op':'multiply','args':['k'," CONST4(C_2222) "]}") ","
                   B("y", "{'op':'add','args':['x','k2']}")),
                "'y'") END,
           /* the folded value stays bound to k2 (constants are not propagated into uses) */
           MAIN(X, DF(B("k2", CONST4(C_22_88)) "," B("y", "{'op':'add','args':['x','k2']}")), "'y'") END,
           CANON_DCE, 2);
}
END_TEST

START_TEST(dce_bindings_and_functions)
{
    /* a dead call_tir in a dataflow block and a dead op call in a plain block go, and
     * with them the loop function nobody calls; a dead graph-function call in a plain
     * block and a match_cast stay, as does the unused graph function `g`. */
    golden("{'format':'relax-json','version':1,'functions':{"
           "'g':{'kind':'relax','params':[" X "],'body':{'blocks':[],'result':'x'}},"
           "'main':{'kind':'relax','params':[" X "],'body':{'blocks':["
           DF(B("d0", "{'call_tir':'@exp','args':['x'],'out':" T4 "}") ","
              B("y", "{'op':'negative','args':['x']}")) ","
           PLAIN(B("d1", "{'op':'exp','args':['y']}") "," B("d2", "{'call':'@g','args':['y']}") ","
                 "{'var':'mc','match_cast':'y','type':{'tensor':{'shape':['m'],'dtype':'f32'}}}")
           "],'result':'y'}}" LOOP_EXP "}}",
           "{'format':'relax-json','version':1,'functions':{"
           "'g':{'kind':'relax','params':[" X "],'body':{'blocks':[],'result':'x'}},"
           "'main':{'kind':'relax','params':[" X "],'body':{'blocks':["
           DF(B("y", "{'op':'negative','args':['x']}")) ","
           PLAIN(B("d2", "{'call':'@g','args':['y']}") ","
                 "{'var':'mc','match_cast':'y','type':{'tensor':{'shape':['m'],'dtype':'f32'}}}")
           "],'result':'y'}}}}",
           DCE, 1);
}
END_TEST

/* The e2e modules through the cleanups around legalize: still deduced, same results. */
START_TEST(e2e_modules_unchanged)
{
    static const char *const files[] = {"e2e_binary.json", "e2e_create.json", "e2e_manip.json",
        "e2e_matmul.json", "e2e_mlp_small.json", "e2e_nn.json", "e2e_reduce.json",
        "e2e_unary.json", "e2e_data_dependent.json", "e2e_lib_fig02.json",
        "e2e_lib_fig04.json", "e2e_unique_full.json"};
    static const rx_pass_fn passes[] = {rx_pass_canonicalize, rx_pass_dce, rx_pass_legalize,
                                        rx_pass_annotate_patterns, rx_pass_canonicalize,
                                        rx_pass_dce};
    for (int i = 0; i < RX_COUNTOF(files); i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/e2e/modules/%s", RX_SOURCE_DIR, files[i]);
        rx_diags d;
        rx_diags_init(&d);
        rx_module *m = rx_json_read_file(path, NULL, &d);
        ck_assert_msg(m && rx_deduce_module(m, &d), "%s: %s", files[i], diags_str(&d));
        int nf = m->nfuncs;
        char **rets = calloc((size_t)nf, sizeof *rets);
        for (int k = 0; k < nf; k++)
            if (m->funcs[k]->kind == RX_F_RELAX) rets[k] = rx_sinfo_str(m->arena, m->funcs[k]->ret);
        for (int p = 0; p < RX_COUNTOF(passes); p++)
            ck_assert_msg(passes[p](m, &d), "%s: pass %d: %s", files[i], p, diags_str(&d));
        for (int k = 0; k < nf; k++) {
            if (!rets[k]) continue;
            rx_func *f = rx_module_find(m, m->funcs[k]->name);
            ck_assert(f != NULL);
            ck_assert_str_eq(rx_sinfo_str(m->arena, f->ret), rets[k]);
        }
        for (int k = 0; k < m->nfuncs; k++)
            if (m->funcs[k]->kind == RX_F_TIR)
                ck_assert(rx_attr_map_get(m->funcs[k]->attrs, "compute_pattern") != NULL);
        free(rets);
        rx_diags_free(&d);
        rx_module_free(m);
    }
}
END_TEST

static Suite *cleanup_suite(void)
{
    Suite *s = suite_create("cleanup");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, canonicalize_bindings);
    tcase_add_test(tc, fold_constants);
    tcase_add_test(tc, dce_bindings_and_functions);
    tcase_add_test(tc, e2e_modules_unchanged);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(cleanup_suite()); }
