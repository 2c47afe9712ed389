/*
 * test_text.c — the printer, structural equality and hashing, and the relax-json
 * writer on modules built in memory (fixtures.h). The printer is checked against
 * exact text; equality and hashing on pairs of builds that differ only in names (equal)
 * or in one semantic field (different, with a located reason).
 */
#include "fixtures.h"
#include "../rx_check.h"

static void check_differs(const variant *v, const char *where)
{
    rx_module *x = build(&base), *y = build(v);
    rx_sb why = {0};
    ck_assert(!same_hash(x, y, "", ""));
    ck_assert(!rx_struct_equal(x, y, &why));
    ck_assert_msg(why.n > 0 && strstr(rx_sb_str(&why), where), "why: %s", rx_sb_str(&why));
    ck_assert(!rx_struct_equal(x, y, NULL));
    rx_sb_free(&why);
    rx_module_free(x);
    rx_module_free(y);
}

START_TEST(test_print_module)
{
    rx_module *m = build(&base);
    char *s = print_module(m);
    ck_assert_str_eq(s,
        "metadata[\"w0\"]: R.Tensor((2,), \"f32\")\n"
        "\n"
        "@R.function\n"
        "def main(x: R.Tensor((n, 4), \"f32\")) -> R.Tensor((n, 4), \"f32\"):\n"
        "    n = T.int64()\n"
        "    with R.dataflow():\n"
        "        lv0: R.Tensor((n, 4), \"f32\") = R.exp(x)\n"
        "        lv1: R.Tensor((n, 4), \"f32\") = R.add(lv0, metadata[\"w0\"])\n"
        "    lv2: R.Tensor((n, 4), \"f32\") = R.call_tir(@mm, (lv1,), out=R.Tensor((n, 4), \"f32\"))\n"
        "    return lv2\n"
        "\n"
        "@T.prim_func\n"
        "def mm(X: T.Buffer((n, 4), \"f32\"), Y: T.Buffer((n, 4), \"f32\")):\n"
        "    n = T.int64()\n"
        "    for i in range(n):\n"
        "        for j in range(4):\n"
        "            with T.block(\"b\"):\n"
        "                vi = T.axis.spatial(n, i)\n"
        "                vj = T.axis.spatial(4, j)\n"
        "                Y[vi, vj] = exp(X[vi, vj])\n");
    /* printing is deterministic */
    char *again = print_module(m);
    ck_assert_str_eq(s, again);
    free(again);
    free(s);
    rx_module_free(m);
}
END_TEST

START_TEST(test_print_sinfo)
{
    rx_arena *a = rx_arena_new();
    rx_svar *n = rx_svar_new(a, "n", RX_DT_I64, RX_SV_SHAPE, 1);
    rx_expr *d[2] = {rx_e_var(a, n), rx_e_int(a, 4)};
    rx_expr *np1 = rx_e_binary(a, RX_E_ADD, rx_e_var(a, n), rx_e_int(a, 1));
    struct { rx_sinfo *s; const char *want; } cases[] = {
        {rx_si_object(a), "R.Object"},
        {rx_si_prim(a, RX_DT_I64, NULL), "R.Prim(\"i64\")"},
        {rx_si_prim(a, RX_DT_I64, np1), "R.Prim(value=n + 1)"},
        {rx_si_prim(a, RX_DT_UNKNOWN, NULL), "R.Prim"},
        {rx_si_shape(a, 2, d), "R.Shape([n, 4])"},
        {rx_si_shape(a, 2, NULL), "R.Shape(ndim=2)"},
        {rx_si_shape(a, -1, NULL), "R.Shape"},
        {rx_si_tensor(a, RX_DT_F32, 2, d), "R.Tensor((n, 4), \"f32\")"},
        {rx_si_tensor(a, RX_DT_F32, 1, d), "R.Tensor((n,), \"f32\")"},
        {rx_si_tensor(a, RX_DT_F16, 0, d), "R.Tensor((), \"f16\")"},
        {rx_si_tensor(a, RX_DT_F32, 2, NULL), "R.Tensor(ndim=2, dtype=\"f32\")"},
        {rx_si_tensor(a, RX_DT_F32, -1, NULL), "R.Tensor(dtype=\"f32\")"},
        {rx_si_tensor(a, RX_DT_UNKNOWN, -1, NULL), "R.Tensor"},
        {rx_si_tensor(a, RX_DT_UNKNOWN, 3, NULL), "R.Tensor(ndim=3)"},
    };
    for (int i = 0; i < RX_COUNTOF(cases); i++) ck_assert_str_eq(rx_sinfo_str(a, cases[i].s), cases[i].want);
    rx_sinfo *f[2] = {cases[7].s, cases[4].s};
    ck_assert_str_eq(rx_sinfo_str(a, rx_si_tuple(a, f, 2)), "R.Tuple(R.Tensor((n, 4), \"f32\"), R.Shape([n, 4]))");
    ck_assert_str_eq(rx_sinfo_str(a, rx_si_callable(a, f, 1, cases[0].s)),
                     "R.Callable((R.Tensor((n, 4), \"f32\"),), R.Object)");
    rx_sb b = {0};
    rx_sinfo_print(cases[5].s, &b);
    ck_assert_str_eq(rx_sb_str(&b), "R.Shape(ndim=2)");
    rx_sb_free(&b);
    rx_arena_free(a);
}
END_TEST

START_TEST(test_print_duplicate_names)
{
    variant v = base;
    v.lv1 = "lv0"; /* two graph variables called lv0 */
    v.i = "X";     /* a loop variable named like a buffer */
    rx_module *m = build(&v);
    char *s = print_module(m);
    ck_assert_ptr_nonnull(strstr(s, "        lv0_1: R.Tensor((n, 4), \"f32\") = R.add(lv0, metadata[\"w0\"])\n"));
    ck_assert_ptr_nonnull(strstr(s, "R.call_tir(@mm, (lv0_1,), out="));
    ck_assert_ptr_nonnull(strstr(s, "    for X_1 in range(n):\n"));
    ck_assert_ptr_nonnull(strstr(s, "vi = T.axis.spatial(n, X_1)\n"));
    /* the writer uses the same names */
    rx_sb j = {0};
    rx_json_write(m, RX_JSON_COMPACT, &j);
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&j), "\"var\":\"lv0_1\""));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&j), "\"bind\":\"X_1\""));
    rx_sb_free(&j);
    free(s);
    rx_module_free(m);
}
END_TEST

START_TEST(test_equal_renamed)
{
    variant v = {"a", "b", "c", "lv0", "k", "exp", 4, 0, "weights", "mm", "ii", "XX"};
    rx_module *x = build(&base), *y = build(&v);
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(x, y, &why), "why: %s", rx_sb_str(&why));
    ck_assert_int_eq((int)why.n, 0);
    ck_assert(same_hash(x, y, "t", "t"));
    /* duplicate names are names too */
    variant d = base;
    d.lv1 = "lv0";
    rx_module *z = build(&d);
    ck_assert(rx_struct_equal(x, z, NULL));
    ck_assert(same_hash(x, z, "", ""));
    rx_sb_free(&why);
    rx_module_free(x);
    rx_module_free(y);
    rx_module_free(z);
}
END_TEST

START_TEST(test_differs_const_byte)
{
    variant v = base;
    v.cbyte = 1;
    check_differs(&v, "function main: binding 1 (lv1): value differs");
}
END_TEST

START_TEST(test_differs_op)
{
    variant v = base;
    v.op = "log";
    check_differs(&v, "function main: binding 0 (lv0): value differs");
}
END_TEST

START_TEST(test_differs_dim)
{
    variant v = base;
    v.dim = 8;
    check_differs(&v, "function main");
}
END_TEST

START_TEST(test_differs_global)
{
    variant v = base;
    v.tir = "mm2";
    check_differs(&v, "function main: binding 2 (lv2): value differs");
}
END_TEST

START_TEST(test_hash_salt)
{
    rx_module *x = build(&base), *y = build(&base);
    ck_assert(same_hash(x, y, "cuda", "cuda"));
    ck_assert(!same_hash(x, y, "cuda", "cpu"));
    ck_assert(same_hash(x, y, NULL, ""));
    rx_module_free(x);
    rx_module_free(y);
}
END_TEST

START_TEST(test_json_write)
{
    rx_module *m = build(&base);
    rx_sb b = {0};
    rx_json_write(m, RX_JSON_COMPACT, &b);
    json_error_t err;
    json_t *j = json_loads(rx_sb_str(&b), 0, &err);
    ck_assert_msg(j != NULL, "%s", err.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "format")), "relax-json");
    json_t *main_fn = json_object_get(json_object_get(j, "functions"), "main");
    ck_assert_str_eq(json_string_value(json_object_get(main_fn, "kind")), "relax");
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&b), "{\"call_tir\":\"@mm\",\"args\":[\"lv1\"],\"out\":"
                                                "{\"tensor\":{\"shape\":[\"n\",4],\"dtype\":\"f32\"}}}"));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&b), "\"constants\":{\"w0\":{\"dtype\":\"f32\",\"shape\":[2],"
                                                "\"data\":\"AAAAPwAAAAA=\"}}"));
    json_decref(j);
    /* without RX_JSON_DEDUCED only the written type of lv1 appears; with it, every binding has one */
    ck_assert_ptr_null(strstr(rx_sb_str(&b), "{\"var\":\"lv0\",\"type\""));
    rx_sb_reset(&b);
    rx_json_write(m, RX_JSON_COMPACT | RX_JSON_DEDUCED, &b);
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&b), "{\"var\":\"lv0\",\"type\""));
    rx_sb_free(&b);
    rx_module_free(m);
}
END_TEST

START_TEST(test_print_constructs)
{
    rx_module *m = build_constructs();
    char *s = print_module(m);
    ck_assert_str_eq(s,
        "@R.function\n"
        "def g(x: R.Tensor(ndim=1, dtype=\"f32\"), f0: R.Callable((R.Tensor(dtype=\"f32\"),), R.Object), "
        "c: R.Prim(\"bool\"), sh: R.Shape([k])) -> R.Tensor(dtype=\"f32\"):\n"
        "    k = T.int64()\n"
        "    n = T.int64()\n"
        "    R.func_attr({\"upper_bounds\": {\"k\": 1024}})\n"
        "    lv0: R.Tensor((n,), \"f32\") = R.match_cast(x, R.Tensor((n,), \"f32\"))\n"
        "    lv1: R.Tensor((n,), \"f32\") = R.nn.softmax(lv0)\n"
        "    lv2 = (lv1, R.shape([n, 4]))\n"
        "    lv3 = lv2[0]\n"
        "    lv4 = R.call_dps_library(\"blas.copy\", (lv3,), out=R.Tensor((n,), \"f32\"))\n"
        "    lv5 = @sub(lv4)\n"
        "    lv6 = f0(lv5)\n"
        "    lv7 = R.prim_value(n + 1)\n"
        "    lv8 = R.add(R.const(1.5, \"f32\"), R.const([1, -2, 3], \"i32\"))\n"
        "    if c:\n"
        "        lv9 = R.exp(lv8)\n"
        "        lv10 = lv9\n"
        "    else:\n"
        "        lv10 = lv8\n"
        "    return lv10\n"
        "\n"
        "@R.function\n"
        "def sub(a: R.Tensor(dtype=\"f32\")):\n"
        "    return a\n"
        "\n"
        "@T.prim_func\n"
        "def k2(A: T.Buffer((16,), \"f32\"), s: T.int64):\n"
        "    for t in T.thread_binding(16, thread=\"threadIdx.x\"):\n"
        "        W = T.alloc_buffer((16,), \"f16\", scope=\"local\")\n"
        "        with T.LetStmt(s) as v:\n"
        "            W[v] = f16(2.0)\n"
        "        for p in T.parallel(2, 6):\n"
        "            if p < 4:\n"
        "                A[p] = 0.0\n"
        "            else:\n"
        "                v = p * 2\n"
        "                A[v] = 1.0\n");
    free(s);
    rx_module_free(m);
}
END_TEST

START_TEST(test_equal_constructs)
{
    rx_module *x = build_constructs(), *y = build_constructs();
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(x, y, &why), "why: %s", rx_sb_str(&why));
    ck_assert(same_hash(x, y, "", ""));
    /* a loop-level change: the parallel loop's min */
    rx_stmt *thr = y->funcs[2]->tbody.items[0];
    thr->u.for_.body.items[2]->u.for_.min = rx_e_int(y->arena, 3);
    ck_assert(!rx_struct_equal(x, y, &why));
    ck_assert_msg(strstr(rx_sb_str(&why), "function k2: statement 4 (for) differs"), "why: %s",
                  rx_sb_str(&why));
    ck_assert(!same_hash(x, y, "", ""));
    /* an upper bound is semantic; its key names a variable by name */
    rx_module *z = build_constructs();
    z->funcs[0]->attrs->u.map.vals[0]->u.map.vals[0]->u.i = 2048;
    ck_assert(!rx_struct_equal(x, z, NULL));
    rx_sb_free(&why);
    rx_module_free(x);
    rx_module_free(y);
    rx_module_free(z);
}
END_TEST

START_TEST(test_json_write_constructs)
{
    rx_module *m = build_constructs();
    rx_sb b = {0};
    rx_json_write(m, RX_JSON_COMPACT, &b);
    const char *s = rx_sb_str(&b);
    const char *want[] = {
        "{\"var\":\"lv0\",\"match_cast\":\"x\",\"type\":{\"tensor\":{\"shape\":[\"n\"],\"dtype\":\"f32\"}}}",
        "{\"op\":\"nn.softmax\",\"args\":[\"lv0\"],\"attrs\":{\"axis\":-1}}",
        "{\"tuple\":[\"lv1\",{\"shape\":[\"n\",4]}]}",
        "{\"get_item\":\"lv2\",\"index\":0}",
        "{\"call\":\"@sub\",\"args\":[\"lv4\"]}",
        "{\"call\":\"f0\",\"args\":[\"lv5\"]}",
        "{\"prim\":\"n + 1\",\"dtype\":\"i64\"}",
        "{\"const\":1.5,\"dtype\":\"f32\"}",
        "{\"const\":{\"dtype\":\"i32\",\"shape\":[3],\"data\":\"AQAAAP7///8DAAAA\"}}",
        "\"else\":{\"blocks\":[],\"result\":\"lv8\"}",
        "\"attrs\":{\"upper_bounds\":{\"k\":1024}}",
        "{\"name\":\"s\",\"dtype\":\"i64\"}",
        "{\"for\":\"t\",\"extent\":16,\"thread\":\"threadIdx.x\",\"body\":[",
        "{\"alloc\":\"W\",\"shape\":[16],\"dtype\":\"f16\",\"scope\":\"local\"}",
        "{\"for\":\"p\",\"min\":2,\"extent\":4,\"kind\":\"parallel\",\"body\":[{\"if\":\"p < 4\"",
        "{\"let\":\"v\",\"value\":\"p * 2\",\"body\":[{\"store\":\"A[v]\",\"value\":\"1.0\"}]}",
    };
    for (int i = 0; i < RX_COUNTOF(want); i++) ck_assert_msg(strstr(s, want[i]), "missing %s in %s", want[i], s);
    /* indented output is the same document */
    rx_sb ind = {0};
    rx_json_write(m, 0, &ind);
    json_t *x = json_loads(s, 0, NULL), *y = json_loads(rx_sb_str(&ind), 0, NULL);
    ck_assert(x && y && json_equal(x, y));
    ck_assert_ptr_nonnull(strchr(rx_sb_str(&ind), '\n'));
    json_decref(x);
    json_decref(y);
    rx_sb_free(&ind);
    rx_sb_free(&b);
    rx_module_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, test_print_module);
    tcase_add_test(tc, test_print_sinfo);
    tcase_add_test(tc, test_print_constructs);
    tcase_add_test(tc, test_equal_constructs);
    tcase_add_test(tc, test_json_write_constructs);
    tcase_add_test(tc, test_print_duplicate_names);
    tcase_add_test(tc, test_equal_renamed);
    tcase_add_test(tc, test_differs_const_byte);
    tcase_add_test(tc, test_differs_op);
    tcase_add_test(tc, test_differs_dim);
    tcase_add_test(tc, test_differs_global);
    tcase_add_test(tc, test_hash_salt);
    tcase_add_test(tc, test_json_write);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
