/*
 * test_roundtrip.c — relax-json write -> read round trips (the writer with the
 * reader): what the writer writes reads back to a structurally equal module that
 * writes the same text; a module whose names are all changed and whose keys are
 * reordered reads to an equal module with the same hash, before and after deduction.
 */
#include "fixtures.h"
#include "../rx_check.h"

/* ---- round trips through the reader ---- */
static const char *const rt_json =
    "{\"format\": \"relax-json\", \"version\": 1, \"attrs\": {\"name\": \"mlp\"},"
    " \"functions\": {"
    "  \"main\": {\"kind\": \"relax\","
    "   \"params\": [{\"name\": \"x\", \"type\": {\"tensor\": {\"shape\": [\"n\", 128], \"dtype\": \"f32\"}}},"
    "              {\"name\": \"w\", \"type\": {\"tensor\": {\"shape\": [128, 256], \"dtype\": \"f32\"}}}],"
    "   \"attrs\": {\"upper_bounds\": {\"n\": 4096}},"
    "   \"body\": {\"blocks\": ["
    "     {\"dataflow\": true, \"bindings\": ["
    "       {\"var\": \"lv0\", \"value\": {\"call_tir\": \"@mm\", \"args\": [\"x\", \"w\"],"
    "        \"out\": {\"tensor\": {\"shape\": [\"n\", 256], \"dtype\": \"f32\"}}, \"tir_vars\": [\"n\"]}},"
    "       {\"var\": \"lv1\", \"type\": {\"tensor\": {\"shape\": [\"n\", 256], \"dtype\": \"f32\"}},"
    "        \"value\": {\"op\": \"nn.relu\", \"args\": [\"lv0\"]}},"
    "       {\"var\": \"lv2\", \"value\": {\"op\": \"add\", \"args\": [\"lv1\", {\"const\": \"b0\"}]}}]},"
    "     {\"bindings\": ["
    "       {\"var\": \"lv3\", \"value\": {\"op\": \"flatten\", \"args\": [\"lv2\"]}},"
    "       {\"var\": \"lv4\", \"value\": {\"op\": \"unique\", \"args\": [\"lv3\"]}},"
    "       {\"var\": \"lv5\", \"match_cast\": \"lv4\", \"type\": {\"tensor\": {\"shape\": [\"m\"], \"dtype\": \"f32\"}}},"
    "       {\"var\": \"lv6\", \"value\": {\"op\": \"nn.softmax\", \"args\": [\"lv5\"], \"attrs\": {\"axis\": 0}}}]}],"
    "    \"result\": \"lv6\"}},"
    "  \"mm\": {\"kind\": \"tir\","
    "   \"params\": [{\"name\": \"X\", \"buffer\": {\"shape\": [\"n\", 128], \"dtype\": \"f32\"}},"
    "              {\"name\": \"W\", \"buffer\": {\"shape\": [128, 256], \"dtype\": \"f32\"}},"
    "              {\"name\": \"Y\", \"buffer\": {\"shape\": [\"n\", 256], \"dtype\": \"f32\"}},"
    "              {\"name\": \"n\", \"dtype\": \"i64\"}],"
    "   \"body\": [{\"grid\": [\"i\", \"j\", \"k\"], \"extents\": [\"n\", 256, 128], \"body\": ["
    "     {\"block\": \"mm\", \"init\": [{\"store\": \"Y[i, j]\", \"value\": \"0\"}],"
    "      \"body\": [{\"store\": \"Y[i, j]\", \"value\": \"Y[i, j] + X[i, k] * W[k, j]\"}]}]}]}},"
    " \"constants\": {\"b0\": {\"dtype\": \"f32\", \"shape\": [1], \"data\": \"AACAPw==\"}}}";

/* The same module with every local, symbolic, buffer, loop and constant name changed and
 * keys reordered. */
static const char *const rt_json_renamed =
    "{\"version\": 1, \"format\": \"relax-json\","
    " \"constants\": {\"bias\": {\"shape\": [1], \"data\": \"AACAPw==\", \"dtype\": \"f32\"}},"
    " \"functions\": {"
    "  \"mm\": {\"kind\": \"tir\","
    "   \"body\": [{\"extents\": [\"batch\", 256, 128], \"grid\": [\"p\", \"q\", \"r\"], \"body\": ["
    "     {\"body\": [{\"value\": \"C[p, q] + A[p, r] * B[r, q]\", \"store\": \"C[p, q]\"}],"
    "      \"init\": [{\"store\": \"C[p, q]\", \"value\": \"0\"}], \"block\": \"mm\"}]}],"
    "   \"params\": [{\"buffer\": {\"dtype\": \"f32\", \"shape\": [\"batch\", 128]}, \"name\": \"A\"},"
    "              {\"name\": \"B\", \"buffer\": {\"shape\": [128, 256], \"dtype\": \"f32\"}},"
    "              {\"name\": \"C\", \"buffer\": {\"shape\": [\"batch\", 256], \"dtype\": \"f32\"}},"
    "              {\"dtype\": \"i64\", \"name\": \"batch\"}]},"
    "  \"main\": {"
    "   \"body\": {\"result\": \"out\", \"blocks\": ["
    "     {\"bindings\": ["
    "       {\"value\": {\"args\": [\"inp\", \"wt\"], \"call_tir\": \"@mm\", \"tir_vars\": [\"batch\"],"
    "        \"out\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [\"batch\", 256]}}}, \"var\": \"a\"},"
    "       {\"type\": {\"tensor\": {\"shape\": [\"batch\", 256], \"dtype\": \"f32\"}}, \"var\": \"b\","
    "        \"value\": {\"op\": \"relax.nn.relu\", \"args\": [\"a\"]}},"
    "       {\"var\": \"c\", \"value\": {\"op\": \"add\", \"args\": [\"b\", {\"const\": \"bias\"}]}}],"
    "      \"dataflow\": true},"
    "     {\"bindings\": ["
    "       {\"var\": \"d\", \"value\": {\"op\": \"flatten\", \"args\": [\"c\"]}},"
    "       {\"var\": \"e\", \"value\": {\"op\": \"unique\", \"args\": [\"d\"]}},"
    "       {\"type\": {\"tensor\": {\"shape\": [\"len\"], \"dtype\": \"f32\"}}, \"match_cast\": \"e\", \"var\": \"f\"},"
    "       {\"var\": \"out\", \"value\": {\"attrs\": {\"axis\": 0}, \"op\": \"nn.softmax\", \"args\": [\"f\"]}}]}]},"
    "   \"attrs\": {\"upper_bounds\": {\"batch\": 4096}},"
    "   \"params\": [{\"type\": {\"tensor\": {\"dtype\": \"f32\", \"shape\": [\"batch\", 128]}}, \"name\": \"inp\"},"
    "              {\"name\": \"wt\", \"type\": {\"tensor\": {\"shape\": [128, 256], \"dtype\": \"f32\"}}}],"
    "   \"kind\": \"relax\"}},"
    " \"attrs\": {\"name\": \"mlp\"}}";

static rx_module *read_ok(const char *text, size_t n)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, n, NULL, &d);
    rx_sb e = {0};
    rx_diags_format(&d, &e);
    if (!m) fprintf(stderr, "read failed:\n%s\n%.*s\n", rx_sb_str(&e), (int)n, text);
    ck_assert_msg(m != NULL, "read failed");
    rx_sb_free(&e);
    rx_diags_free(&d);
    return m;
}

static void deduce_ok(rx_module *m)
{
    rx_diags d;
    rx_diags_init(&d);
    bool ok = rx_deduce_module(m, &d);
    rx_sb e = {0};
    rx_diags_format(&d, &e);
    if (!ok) fprintf(stderr, "deduction failed:\n%s", rx_sb_str(&e));
    ck_assert_msg(ok, "deduction failed");
    rx_sb_free(&e);
    rx_diags_free(&d);
}

/* write(m) reads back to an equal module, which writes the same text. With
 * RX_JSON_DEDUCED the written annotations become `given` ones (a different module), so
 * only the text is compared, after deducing the module read back. */
static void check_round_trip(const rx_module *m, int flags)
{
    rx_sb j1 = {0}, j2 = {0}, why = {0};
    rx_json_write(m, flags, &j1);
    rx_module *r = read_ok(j1.p, j1.n);
    if (flags & RX_JSON_DEDUCED) deduce_ok(r);
    bool eq = (flags & RX_JSON_DEDUCED) || rx_struct_equal(m, r, &why);
    if (!eq) fprintf(stderr, "written:\n%s\n", rx_sb_str(&j1));
    ck_assert_msg(eq, "why: %s", rx_sb_str(&why));
    rx_json_write(r, flags, &j2);
    ck_assert_str_eq(rx_sb_str(&j1), rx_sb_str(&j2));
    rx_sb_free(&j1);
    rx_sb_free(&j2);
    rx_sb_free(&why);
    rx_module_free(r);
}

START_TEST(test_round_trip_json)
{
    rx_module *m = read_ok(rt_json, strlen(rt_json));
    check_round_trip(m, 0);
    check_round_trip(m, RX_JSON_COMPACT);
    rx_module *r = read_ok(rt_json_renamed, strlen(rt_json_renamed));
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(m, r, &why), "why: %s", rx_sb_str(&why));
    ck_assert(same_hash(m, r, "x86", "x86"));
    /* after deduction too, and through the deduced form */
    deduce_ok(m);
    deduce_ok(r);
    ck_assert_msg(rx_struct_equal(m, r, &why), "why: %s", rx_sb_str(&why));
    ck_assert(same_hash(m, r, "", ""));
    check_round_trip(m, RX_JSON_DEDUCED);
    /* op attributes print when not at their defaults */
    char *text = print_module(m);
    ck_assert_ptr_nonnull(strstr(text, " = R.nn.softmax(lv5, axis=0)\n"));
    ck_assert_ptr_nonnull(strstr(text, "lv4: R.Tensor(ndim=1, dtype=\"f32\") = R.unique(lv3)\n"));
    ck_assert_ptr_nonnull(strstr(text, "lv3: R.Tensor((n * 256,), \"f32\") = R.flatten(lv2)\n"));
    free(text);
    rx_sb_free(&why);
    rx_module_free(m);
    rx_module_free(r);
}
END_TEST

/* Modules built in memory (duplicate names included) survive write -> read -> write. */
START_TEST(test_round_trip_built)
{
    variant v = base;
    v.lv1 = "lv0";
    v.i = "X";
    rx_module *ms[3] = {build(&base), build(&v), build_constructs()};
    for (int i = 0; i < 3; i++) {
        rx_sb j = {0};
        rx_json_write(ms[i], 0, &j);
        rx_module *r = read_ok(j.p, j.n);
        check_round_trip(r, 0);
        rx_module_free(r);
        rx_sb_free(&j);
        rx_module_free(ms[i]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("roundtrip");
    TCase *tc = tcase_create("roundtrip");
    tcase_add_test(tc, test_round_trip_json);
    tcase_add_test(tc, test_round_trip_built);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
