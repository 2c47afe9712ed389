/*
 * test_analysis.c — analysis feedback (compiler/pass/analysis.c, paper Algorithm 1).
 *
 * Figure 9's loop functions (decode_q4 Injective, mm OutputEwiseFusible), small loop
 * functions written for one rule each, every legalized op of the corpus against a table
 * of the kinds it may have, a given compute_pattern kept, and the attribute surviving a
 * relax-json round trip.
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

static rx_module *load_path(const char *rel, bool legalize)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", RX_SOURCE_DIR, rel);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read_file(path, NULL, &d);
    ck_assert_msg(m != NULL, "read %s: %s", rel, diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce %s: %s", rel, diags_str(&d));
    if (legalize) ck_assert_msg((rx_pass_legalize(m, &d) && rx_deduce_module(m, &d)), "legalize %s: %s", rel, diags_str(&d));
    rx_diags_free(&d);
    return m;
}

static const char *pattern_attr(const rx_func *f)
{
    rx_attr *a = rx_attr_map_get(f->attrs, "compute_pattern");
    return a && a->kind == RX_A_STR ? a->u.s : NULL;
}

static const char *analyzed(rx_module *m, const char *fn)
{
    rx_func *f = rx_module_find(m, fn);
    ck_assert_msg(f != NULL, "no function %s", fn);
    return rx_pattern_name(rx_analyze_pattern(m->arena, f));
}

START_TEST(figure9)
{
    rx_module *m = load_path("tests/modules/valid/fig09_fusion.json", false);
    ck_assert_str_eq(analyzed(m, "decode_q4"), "Injective");
    ck_assert_str_eq(analyzed(m, "mm"), "OutputEwiseFusible");
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_pass_annotate_patterns(m, &d));
    ck_assert_str_eq(pattern_attr(rx_module_find(m, "mm")), "OutputEwiseFusible");
    ck_assert_str_eq(pattern_attr(rx_module_find(m, "decode_q4")), "Injective");
    ck_assert(rx_module_find(m, "main")->attrs == NULL ||
              !rx_attr_map_get(rx_module_find(m, "main")->attrs, "compute_pattern"));
    /* the attribute is written and read back */
    rx_sb out = {0};
    rx_json_write(m, 0, &out);
    rx_module *m2 = rx_json_read(rx_sb_str(&out), strlen(rx_sb_str(&out)), NULL, &d);
    ck_assert_msg(m2 != NULL && rx_deduce_module(m2, &d), "%s", diags_str(&d));
    ck_assert_str_eq(pattern_attr(rx_module_find(m2, "mm")), "OutputEwiseFusible");
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(m, m2, &why), "round trip: %s", rx_sb_str(&why));
    rx_sb_free(&why);
    rx_sb pr = {0};
    rx_print_module(m, &pr);
    ck_assert(strstr(rx_sb_str(&pr), "\"compute_pattern\": \"OutputEwiseFusible\"") != NULL);
    rx_sb_free(&pr);
    rx_sb_free(&out);
    rx_module_free(m2);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

#define TIR(name, params, body) \
    "'" name "':{'kind':'tir','params':[" params "],'body':[" body "]}"
#define BUF(n, shape) "{'name':'" n "','buffer':{'shape':[" shape "],'dtype':'f32'}}"
#define MOD(fns) "{'format':'relax-json','version':1,'functions':{" fns "}}"

START_TEST(single_rules)
{
    rx_module *m = load_quoted(MOD(
        TIR("add", BUF("A", "'n',4") "," BUF("B", "'n',4") "," BUF("C", "'n',4"),
            "{'grid':['i','j'],'extents':['n',4],'body':{'store':'C[i, j]','value':'A[i, j] + B[i, j]'}}") ","
        TIR("badd", BUF("A", "'n',4") "," BUF("B", "4") "," BUF("C", "'n',4"),
            "{'grid':['i','j'],'extents':['n',4],'body':{'store':'C[i, j]','value':'A[i, j] + B[j]'}}") ","
        TIR("transpose", BUF("A", "4,'n'") "," BUF("C", "'n',4"),
            "{'grid':['i','j'],'extents':['n',4],'body':{'store':'C[i, j]','value':'A[j, i]'}}") ","
        TIR("rowsum", BUF("A", "'n',4") "," BUF("C", "'n'"),
            "{'grid':['i','k'],'extents':['n',4],'body':[{'if':'k == 0','then':{'store':'C[i]','value':'0.0'}},"
            "{'store':'C[i]','value':'C[i] + A[i, k]'}]}") ","
        TIR("sumsq", BUF("A", "'n',4") "," BUF("C", "'n'"),
            "{'grid':['i','k'],'extents':['n',4],'body':{'store':'C[i]','value':'C[i] + A[i, k] * A[i, k]'}}") ","
        TIR("guarded", BUF("A", "'n'") "," BUF("C", "'n'"),
            "{'grid':['i'],'extents':['n'],'body':{'if':'A[i] > 0.0','then':{'store':'C[i]','value':'A[i]'}}}") ","
        TIR("two_outputs", BUF("A", "'n'") "," BUF("C", "'n'") "," BUF("D", "'n'"),
            "{'block':'b','body':{'grid':['i'],'extents':['n'],'body':[{'store':'C[i]','value':'A[i]'},"
            "{'store':'D[i]','value':'A[i]'}]}}")));
    ck_assert_str_eq(analyzed(m, "add"), "ElementWise");
    ck_assert_str_eq(analyzed(m, "badd"), "Broadcast");
    ck_assert_str_eq(analyzed(m, "transpose"), "Injective");
    ck_assert_str_eq(analyzed(m, "rowsum"), "Reduction");
    ck_assert_str_eq(analyzed(m, "sumsq"), "Reduction");
    ck_assert_str_eq(analyzed(m, "guarded"), "Opaque");
    rx_module_free(m);
}
END_TEST

/* Every legalized op of the corpus: the kinds its function may have (ops whose
 * operand shapes decide between two kinds list both). */
static const struct {
    const char *op;
    unsigned kinds; /* bit per rx_pattern */
} EXPECT[] = {
#define K(p) (1u << RX_PAT_##p)
    {"add", K(ELEMWISE) | K(BROADCAST)}, {"subtract", K(ELEMWISE) | K(BROADCAST)},
    {"multiply", K(ELEMWISE) | K(BROADCAST)}, {"divide", K(ELEMWISE) | K(BROADCAST)},
    {"power", K(ELEMWISE) | K(BROADCAST)}, {"maximum", K(ELEMWISE) | K(BROADCAST)},
    {"minimum", K(ELEMWISE) | K(BROADCAST)}, {"floor_divide", K(ELEMWISE) | K(BROADCAST)},
    {"equal", K(ELEMWISE) | K(BROADCAST)}, {"not_equal", K(ELEMWISE) | K(BROADCAST)},
    {"less", K(ELEMWISE) | K(BROADCAST)}, {"less_equal", K(ELEMWISE) | K(BROADCAST)},
    {"greater", K(ELEMWISE) | K(BROADCAST)}, {"greater_equal", K(ELEMWISE) | K(BROADCAST)},
    {"logical_and", K(ELEMWISE) | K(BROADCAST)}, {"logical_or", K(ELEMWISE) | K(BROADCAST)},
    {"where", K(ELEMWISE) | K(BROADCAST)},
    {"zeros", K(ELEMWISE)}, {"ones", K(ELEMWISE)}, {"full", K(BROADCAST)},
    {"zeros_like", K(ELEMWISE)}, {"ones_like", K(ELEMWISE)}, {"full_like", K(BROADCAST)},
    {"arange", K(ELEMWISE)}, {"tril", K(ELEMWISE)}, {"triu", K(ELEMWISE)},
    {"astype", K(ELEMWISE)}, {"clip", K(ELEMWISE)},
    {"reshape", K(INJECTIVE)}, {"permute_dims", K(INJECTIVE)}, {"flatten", K(INJECTIVE)},
    {"squeeze", K(BROADCAST)}, {"expand_dims", K(BROADCAST)}, {"broadcast_to", K(BROADCAST)},
    {"concat", K(INJECTIVE)}, {"split", K(INJECTIVE)},
    {"strided_slice", K(INJECTIVE) | K(ELEMWISE)}, {"take", K(INJECTIVE)},
    {"repeat", K(INJECTIVE)}, {"tile", K(INJECTIVE) | K(BROADCAST)},
    {"matmul", K(OUT_EWISE_FUSIBLE) | K(REDUCTION)}, {"nn_conv2d", K(OUT_EWISE_FUSIBLE)},
    {"nn_softmax", K(REDUCTION)}, {"nn_log_softmax", K(REDUCTION)},
    {"nn_layer_norm", K(REDUCTION)}, {"nn_rms_norm", K(REDUCTION)},
    {"nn_batch_norm", K(BROADCAST)}, {"nn_max_pool2d", K(REDUCTION)},
    {"nn_avg_pool2d", K(REDUCTION)}, {"nn_adaptive_avg_pool2d", K(REDUCTION)},
    {"sum", K(REDUCTION)}, {"mean", K(REDUCTION)}, {"max", K(REDUCTION)},
    {"min", K(REDUCTION)}, {"prod", K(REDUCTION)}, {"variance", K(REDUCTION)},
    {"argmax", K(OPAQUE)}, {"argmin", K(OPAQUE)},
#undef K
};

/* The op of a generated function: its name without a `_<digits>` suffix. */
static int expect_index(const char *fname)
{
    size_t n = strlen(fname);
    const char *u = strrchr(fname, '_');
    if (u && u[1] && strspn(u + 1, "0123456789") == strlen(u + 1)) n = (size_t)(u - fname);
    for (int i = 0; i < RX_COUNTOF(EXPECT); i++)
        if (strlen(EXPECT[i].op) == n && strncmp(EXPECT[i].op, fname, n) == 0) return i;
    return -1;
}

START_TEST(every_legalized_op)
{
    static const char *const files[] = {
        "tests/modules/valid/ops_compare.json", "tests/modules/valid/ops_create.json",
        "tests/modules/valid/ops_manip.json", "tests/modules/valid/ops_matmul.json",
        "tests/modules/valid/ops_nn.json", "tests/modules/valid/ops_reduce.json",
        "tests/e2e/modules/e2e_binary.json", "tests/e2e/modules/e2e_unary.json",
        "tests/e2e/modules/e2e_nn.json", "tests/e2e/modules/e2e_manip.json"};
    static const char *const unary[] = {"abs", "ceil", "cos", "erf", "exp", "floor", "log",
        "logical_not", "negative", "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "square",
        "tanh", "nn_gelu", "nn_gelu_tanh", "nn_relu", "nn_silu"};
    int checked = 0;
    for (int i = 0; i < RX_COUNTOF(files); i++) {
        rx_module *m = load_path(files[i], true);
        rx_diags d;
        rx_diags_init(&d);
        ck_assert(rx_pass_annotate_patterns(m, &d));
        rx_diags_free(&d);
        for (int k = 0; k < m->nfuncs; k++) {
            rx_func *f = m->funcs[k];
            if (f->kind != RX_F_TIR) continue;
            const char *got = pattern_attr(f);
            ck_assert_msg(got != NULL, "%s: %s has no compute_pattern", files[i], f->name);
            rx_pattern p;
            ck_assert(rx_pattern_parse(got, &p));
            int e = expect_index(f->name);
            unsigned kinds = 0;
            if (e >= 0) {
                kinds = EXPECT[e].kinds;
            } else {
                for (int u = 0; u < RX_COUNTOF(unary); u++) {
                    size_t n = strlen(unary[u]);
                    if (strncmp(f->name, unary[u], n) == 0 && (!f->name[n] || f->name[n] == '_'))
                        kinds = 1u << RX_PAT_ELEMWISE;
                }
            }
            ck_assert_msg(kinds != 0, "%s: no expectation for %s (%s)", files[i], f->name, got);
            ck_assert_msg(kinds & (1u << p), "%s: %s is %s", files[i], f->name, got);
            checked++;
        }
        rx_module_free(m);
    }
    ck_assert_int_gt(checked, 100);
}
END_TEST

START_TEST(given_pattern_kept)
{
    rx_module *m = load_quoted(MOD(
        "'f':{'kind':'tir','attrs':{'compute_pattern':'Opaque','note':'x'},"
        "'params':[" BUF("A", "'n'") "," BUF("C", "'n'") "],"
        "'body':{'grid':['i'],'extents':['n'],'body':{'store':'C[i]','value':'A[i]'}}}"));
    ck_assert_str_eq(analyzed(m, "f"), "ElementWise");
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_pass_annotate_patterns(m, &d));
    ck_assert_str_eq(pattern_attr(rx_module_find(m, "f")), "Opaque");
    ck_assert_int_eq(rx_module_find(m, "f")->attrs->u.map.n, 2);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

static Suite *analysis_suite(void)
{
    Suite *s = suite_create("analysis");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, figure9);
    tcase_add_test(tc, single_rules);
    tcase_add_test(tc, every_legalized_op);
    tcase_add_test(tc, given_pattern_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(analysis_suite()); }
