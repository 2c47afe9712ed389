/*
 * test_fold.c — constant folding in canonicalize (compiler/pass/canonicalize.c): op
 * calls and call_tir whose tensor operands are all constants become constants,
 * computed by legalizing the call and running its loop function in the interpreter.
 *
 * Golden tests (input and expected modules, relax-json, rx_struct_equal) whose
 * expected constants are NumPy's bytes (NumPy 1.24, float32, embedded as base64):
 * a chain reshape(permute_dims(c1)) + c2 becomes one constant; split / get_item,
 * concat and full fold; an operand that is a parameter stops folding. Then softmax of
 * a constant against NumPy within 2 ulp, a constant behind a coarser annotation, the
 * size rules (at most 1 Mi elements, but reshape and permute_dims of a larger weight
 * fold natively; a
 * result above 64 KiB only when no larger than its constant operands), call_tir of a
 * user loop function (folded, and left alone when its run is undefined).
 */
#include "pass_test.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../rx_check.h"
#include "relax/pass.h"
#include "relax/text.h"

static const rx_pass_fn CANON_DCE[] = {rx_pass_canonicalize, rx_pass_dce};

/* Runs canonicalize and dce on `before` and compares with `expected`. */
static void golden(const char *before, const char *expected)
{
    rx_module *m = load_quoted(before), *want = load_quoted(expected);
    rx_diags d;
    rx_diags_init(&d);
    for (int i = 0; i < RX_COUNTOF(CANON_DCE); i++)
        ck_assert_msg(CANON_DCE[i](m, &d), "pass %d: %s", i, diags_str(&d));
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

/* The value bound to variable `var` in main (after canonicalize). */
static rx_node *bound(rx_module *m, const char *var)
{
    rx_func *f = rx_module_find(m, "main");
    for (int i = 0; i < f->body->nblocks; i++)
        for (int j = 0; j < f->body->blocks[i]->nbindings; j++) {
            rx_binding *b = &f->body->blocks[i]->bindings[j];
            if (!strcmp(b->var->u.var.name, var)) return b->value;
        }
    ck_abort_msg("no binding %s", var);
    return NULL;
}

static void canonicalize(rx_module *m)
{
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_pass_canonicalize(m, &d) && rx_deduce_module(m, &d)), "canonicalize: %s", diags_str(&d));
    rx_diags_free(&d);
}

#define MODULE(params, blocks, result)                                                    \
    "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax','params':[" params \
    "],'body':{'blocks':[" blocks "],'result':" result "}}}}"
#define B(v, val) "{'var':'" v "','value':" val "}"
#define DF(...) "{'dataflow':true,'bindings':[" __VA_ARGS__ "]}"
#define K(dt, shape, data) "{'const':{'dtype':'" dt "','shape':[" shape "],'data':'" data "'}}"
#define X6 "{'name':'x','type':{'tensor':{'shape':[6],'dtype':'f32'}}}"

/* NumPy, float32:  c1 = [[0.1, 0.2, 0.3], [1.5, -2.25, 3]]
 *                  c2 = [0.7, -1.1, 2.5, 1e-3, 3.3, -0.25]
 *                  c1.T.reshape(6) + c2 (rounded once per add, as IEEE f32 adds) */
#define C1 K("f32", "2, 3", "zczMPc3MTD6amZk+AADAPwAAEMAAAEBA")
#define C2 K("f32", "6", "MzMzP83MjL8AACBAbxKDOjMzU0AAAIC+")
#define CHAIN K("f32", "6", "zcxMP8zMzD7NzCxAnu8PwGZmZkAAADBA")
/* i = [[1, 2, 3, 4], [5, 6, 7, 8]] (int32); i[:, 1:3]; np.concatenate([i, i]) */
#define I24 K("i32", "2, 4", "AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAA=")
#define I_SPLIT1 K("i32", "2, 2", "AgAAAAMAAAAGAAAABwAAAA==")
#define I_CONCAT K("i32", "4, 4", "AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAABAAAAAgAAAAMAAAAEAAAABQAAAAYAAAAHAAAACAAAAA==")
#define FULL22 K("f32", "2, 2", "AAAgQAAAIEAAACBAAAAgQA==") /* np.full((2, 2), 2.5) */

START_TEST(chain_of_constant_ops_becomes_one_constant)
{
    golden(MODULE(X6, DF(B("p", "{'op':'permute_dims','args':[" C1 "]}") ","
                         B("q", "{'op':'reshape','args':['p',{'shape':[6]}]}") ","
                         B("r", "{'op':'add','args':['q'," C2 "]}") ","
                         B("y", "{'op':'multiply','args':['x','r']}")),
                  "'y'"),
           MODULE(X6, DF(B("r", CHAIN) "," B("y", "{'op':'multiply','args':['x','r']}")), "'y'"));
}
END_TEST

START_TEST(tuple_results_concat_and_full_fold)
{
    golden(MODULE(X6, DF(B("s", "{'op':'split','args':[" I24 "],'attrs':{'indices_or_sections':[1,3],'axis':1}}") ","
                         B("s1", "{'get_item':'s','index':1}") ","
                         B("c", "{'op':'concat','args':[{'tuple':[" I24 "," I24 "]}]}") ","
                         B("f", "{'op':'full','args':[{'shape':[2,2]},{'const':2.5,'dtype':'f32'}]}") ","
                         B("t", "{'tuple':['s1','c','f','x']}")),
                  "'t'"),
           MODULE(X6, DF(B("s1", I_SPLIT1) "," B("c", I_CONCAT) "," B("f", FULL22) ","
                         B("t", "{'tuple':['s1','c','f','x']}")),
                  "'t'"));
}
END_TEST

START_TEST(parameter_operand_is_not_folded)
{
    /* add(x, c2) reads a parameter: it stays; multiply(c2, c2) beside it folds */
    rx_module *m = load_quoted(MODULE(X6, DF(B("a", "{'op':'add','args':['x'," C2 "]}") ","
                                             B("b", "{'op':'multiply','args':[" C2 "," C2 "]}") ","
                                             B("y", "{'tuple':['a','b']}")),
                                      "'y'"));
    canonicalize(m);
    rx_node *a = bound(m, "a"), *b = bound(m, "b");
    ck_assert_int_eq(a->kind, RX_N_CALL);
    ck_assert_int_eq(b->kind, RX_N_CONST);
    const float c2[6] = {0.7f, -1.1f, 2.5f, 1e-3f, 3.3f, -0.25f};
    for (int i = 0; i < 6; i++) ck_assert(((const float *)b->u.konst->data)[i] == c2[i] * c2[i]);
    rx_module_free(m);
}
END_TEST

START_TEST(coarse_annotation_still_folds)
{
    /* a is written Tensor(ndim=1): negative(a) is deduced without dims in main, yet the
     * constant behind a is static, so the call folds (to np.negative(c2)) */
    rx_module *m = load_quoted(MODULE(X6, DF("{'var':'a','type':{'tensor':{'ndim':1,'dtype':'f32'}},"
                                             "'value':" C2 "}," B("y", "{'op':'negative','args':['a']}")),
                                      "'y'"));
    canonicalize(m);
    rx_node *y = bound(m, "y");
    ck_assert_int_eq(y->kind, RX_N_CONST);
    ck_assert_int_eq(y->u.konst->ndim, 1);
    ck_assert_int_eq(y->u.konst->shape[0], 6);
    ck_assert(((const float *)y->u.konst->data)[1] == 1.1f);
    rx_module_free(m);
}
END_TEST

START_TEST(softmax_of_a_constant_matches_numpy)
{
    /* s = [0.5, -1, 2, 0.25]; NumPy: e = np.exp(s - s.max()); e / e.sum() */
    rx_module *m = load_quoted(MODULE(X6, DF(B("p", "{'op':'nn.softmax','args':["
                                                    K("f32", "4", "AAAAPwAAgL8AAABAAACAPg==") "]}")),
                                      "'p'"));
    canonicalize(m);
    rx_node *p = bound(m, "p");
    ck_assert_int_eq(p->kind, RX_N_CONST);
    const double want[4] = {0.15423481166362762, 0.03441443666815758, 0.6912325024604797,
                            0.12011819332838058};
    const float *got = (const float *)p->u.konst->data;
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 2 * (nextafterf((float)want[i], 1) - (float)want[i]),
                      "softmax[%d]: got %.9g, NumPy %.9g", i, (double)got[i], want[i]);
    rx_module_free(m);
}
END_TEST

/* main() { y = op(args) } with a constant of n i8 elements (value k % 7 - 3 at k) as
 * the text %s of `value`. */
static rx_module *with_big_const(const char *value, int64_t n)
{
    int8_t *data = malloc((size_t)n);
    for (int64_t k = 0; k < n; k++) data[k] = (int8_t)(k % 7 - 3);
    rx_sb b64 = {0}, kc = {0}, js = {0};
    rx_base64_encode((const uint8_t *)data, (size_t)n, &b64);
    rx_sb_printf(&kc, "{\"const\":{\"dtype\":\"i8\",\"shape\":[%lld],\"data\":\"%s\"}}", (long long)n,
                 rx_sb_str(&b64));
    rx_sb_printf(&js, "{\"format\":\"relax-json\",\"version\":1,\"functions\":{\"main\":{\"kind\":"
                      "\"relax\",\"params\":[],\"body\":{\"blocks\":[{\"dataflow\":true,\"bindings\":"
                      "[{\"var\":\"y\",\"value\":");
    rx_sb_printf(&js, value, rx_sb_str(&kc));
    rx_sb_puts(&js, "}]}],\"result\":\"y\"}}}}");
    rx_module *m = load_text(rx_sb_str(&js));
    free(data);
    rx_sb_free(&b64);
    rx_sb_free(&kc);
    rx_sb_free(&js);
    return m;
}

START_TEST(size_limits)
{
    /* at most 1 Mi elements per folded tensor */
    const int64_t lim = INT64_C(1) << 20;
    for (int over = 0; over < 2; over++) {
        rx_module *m = with_big_const("{\"op\":\"negative\",\"args\":[%s]}", lim + over);
        canonicalize(m);
        rx_node *y = bound(m, "y");
        ck_assert_int_eq(y->kind, over ? RX_N_CALL : RX_N_CONST);
        if (!over) {
            const int8_t *v = (const int8_t *)y->u.konst->data;
            ck_assert(v[0] == 3 && v[1] == 2 && v[6] == -3 && v[lim - 1] == -((lim - 1) % 7 - 3));
        }
        rx_module_free(m);
    }
    /* a result above 64 KiB folds only when its constant operands are at least as
     * large: the chain over a weight above did; zeros and broadcasts of scalars do not */
    static const struct { const char *value; bool folds; } C[] = {
        {"{'op':'zeros','args':[{'shape':[16,16]}],'attrs':{'dtype':'f32'}}", true},
        {"{'op':'zeros','args':[{'shape':[1024,1024]}],'attrs':{'dtype':'f32'}}", false},
        {"{'op':'broadcast_to','args':[{'const':1.5,'dtype':'f32'},{'shape':[128,128]}]}", true},
        {"{'op':'broadcast_to','args':[{'const':1.5,'dtype':'f32'},{'shape':[128,129]}]}", false},
    };
    for (int i = 0; i < RX_COUNTOF(C); i++) {
        rx_sb js = {0};
        rx_sb_printf(&js, MODULE("", DF(B("y", "%s")), "'y'"), C[i].value);
        rx_module *m = load_quoted(rx_sb_str(&js));
        rx_sb_free(&js);
        canonicalize(m);
        ck_assert_msg((bound(m, "y")->kind == RX_N_CONST) == C[i].folds, "%s", C[i].value);
        rx_module_free(m);
    }
}
END_TEST

/* reshape and permute_dims of a weight fold past the 1 Mi limit (they only move its
 * bytes): an imported Gemm(transB=1) would otherwise transpose its weight every call.
 * A (3, 512, 700) i8 constant, value k % 7 - 3 at flat index k, permuted three ways. */
START_TEST(permute_of_a_large_constant_folds)
{
    static const struct { const char *axes; int64_t ax[3]; } P[] = {
        {"[2,0,1]", {2, 0, 1}}, {"[1,0,2]", {1, 0, 2}}, {"null", {2, 1, 0}},
    };
    const int64_t sh[3] = {3, 512, 700}, n = sh[0] * sh[1] * sh[2];
    for (int p = 0; p < RX_COUNTOF(P); p++) {
        char value[256];
        snprintf(value, sizeof value,
                 "{\"op\":\"permute_dims\",\"args\":[{\"op\":\"reshape\",\"args\":[%%s,"
                 "{\"shape\":[3,512,700]}]}],\"attrs\":{\"axes\":%s}}", P[p].axes);
        rx_module *m = with_big_const(value, n);
        canonicalize(m);
        rx_node *y = bound(m, "y");
        ck_assert_msg(y->kind == RX_N_CONST, "axes %s: not folded", P[p].axes);
        const rx_const *k = y->u.konst;
        ck_assert_int_eq(k->ndim, 3);
        for (int d = 0; d < 3; d++) ck_assert_int_eq(k->shape[d], sh[P[p].ax[d]]);
        const int8_t *v = (const int8_t *)k->data;
        int64_t xs[3] = {sh[1] * sh[2], sh[2], 1}, o = 0, bad = 0;
        for (int64_t a = 0; a < k->shape[0]; a++)
            for (int64_t b = 0; b < k->shape[1]; b++)
                for (int64_t c = 0; c < k->shape[2]; c++, o++) {
                    int64_t src = a * xs[P[p].ax[0]] + b * xs[P[p].ax[1]] + c * xs[P[p].ax[2]];
                    bad += v[o] != (int8_t)(src % 7 - 3);
                }
        ck_assert_msg(bad == 0, "axes %s: %lld elements wrong", P[p].axes, (long long)bad);
        rx_module_free(m);
    }
}
END_TEST

START_TEST(call_tir_of_user_function)
{
    /* scale: B[i] = A[i] * f32(k) with k = 3 from tir_vars: folds; shift reads A[i + 1],
     * outside A at i = 3: undefined, so it stays a call */
    rx_module *m = load_quoted(
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[],'body':{'blocks':[" DF(
            B("a", "{'call_tir':'@scale','args':[" K("f32", "4", "AAAAPwAAgL8AAABAAACAPg==") "],"
                   "'out':{'tensor':{'shape':[4],'dtype':'f32'}},'tir_vars':[3]}") ","
            B("b", "{'call_tir':'@shift','args':[" K("f32", "4", "AAAAPwAAgL8AAABAAACAPg==") "],"
                   "'out':{'tensor':{'shape':[4],'dtype':'f32'}}}") ","
            B("y", "{'tuple':['a','b']}")) "],'result':'y'}},"
        "'scale':{'kind':'tir','params':[{'name':'A','buffer':{'shape':[4],'dtype':'f32'}},"
        "{'name':'B','buffer':{'shape':[4],'dtype':'f32'}},{'name':'k','dtype':'i64'}],"
        "'body':{'grid':['i'],'extents':[4],'body':{'store':'B[i]','value':'A[i] * f32(k)'}}},"
        "'shift':{'kind':'tir','params':[{'name':'A','buffer':{'shape':[4],'dtype':'f32'}},"
        "{'name':'B','buffer':{'shape':[4],'dtype':'f32'}}],"
        "'body':{'grid':['i'],'extents':[4],'body':{'store':'B[i]','value':'A[i + 1]'}}}}}");
    canonicalize(m);
    rx_node *a = bound(m, "a"), *b = bound(m, "b");
    ck_assert_int_eq(a->kind, RX_N_CONST);
    const float want[4] = {1.5f, -3, 6, 0.75f};
    ck_assert(!memcmp(a->u.konst->data, want, sizeof want));
    ck_assert_int_eq(b->kind, RX_N_CALL);
    ck_assert_int_eq(b->call_kind, RX_CALL_TIR);
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fold");
    TCase *tc = tcase_create("fold");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, chain_of_constant_ops_becomes_one_constant);
    tcase_add_test(tc, tuple_results_concat_and_full_fold);
    tcase_add_test(tc, parameter_operand_is_not_folded);
    tcase_add_test(tc, coarse_annotation_still_folds);
    tcase_add_test(tc, softmax_of_a_constant_matches_numpy);
    tcase_add_test(tc, size_limits);
    tcase_add_test(tc, permute_of_a_large_constant_folds);
    tcase_add_test(tc, call_tir_of_user_function);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
