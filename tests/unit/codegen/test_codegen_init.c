/*
 * test_codegen_init.c — where the C generator puts a block's `init`.
 *
 * A reduction's init must run once per output element before its first update, and
 * also when the reduction is empty (a zero-extent sum is its init, not garbage). The
 * generator hoists init before the outermost reduce loop in the common form (a nest of
 * FORs whose variables the reduce iterators are bound to) and keeps the guarded form
 * "every reduce iterator at its start" otherwise; these tests run both shapes through
 * the kernel ABI, with zero and nonzero reduce extents and loops starting at nonzero
 * minima, and check which form the text uses. Output buffers are filled with a
 * sentinel first, so an init that did not run shows.
 */
#include "cg_test.h"

#define MOD(body) "{'format': 'relax-json', 'version': 1, 'functions': {" body "}}"

enum { SENTINEL = 77777 };

/* The generated C of m (heap; the caller frees it). */
static char *gen_c(const rx_module *m)
{
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    if (!rx_codegen_c(m, &c, &d)) cg_dump(&d, "codegen failed");
    rx_diags_free(&d);
    return rx_sb_take(&c);
}

/* Y[i, j] = sum_k X[i, k] * W[k, j] with implicit iterators (grid from 0), for the
 * reduce extent k in {0, 1, 5}: k = 0 must give zeros. */
START_TEST(zero_extent_implicit)
{
    rx_module *m = cg_read(MOD(
        "'mm': {'kind': 'tir', 'params': ["
        " {'name': 'X', 'buffer': {'shape': ['n', 'k'], 'dtype': 'f32'}},"
        " {'name': 'W', 'buffer': {'shape': ['k', 3], 'dtype': 'f32'}},"
        " {'name': 'Y', 'buffer': {'shape': ['n', 3], 'dtype': 'f32'}}],"
        " 'body': [{'grid': ['i', 'j', 'r'], 'extents': ['n', 3, 'k'], 'body': ["
        "   {'block': 'mm', 'init': [{'store': 'Y[i, j]', 'value': '0'}],"
        "    'body': [{'store': 'Y[i, j]', 'value': 'Y[i, j] + X[i, r] * W[r, j]'}]}]}]}"));
    char *c = gen_c(m);
    ck_assert_msg(strstr(c, "init of block mm") != NULL, "init not hoisted:\n%s", c);
    ck_assert_msg(strstr(c, "if (r_") == NULL, "guarded init left:\n%s", c);
    free(c);
    cg_lib lib = cg_build(m);
    cg_kernel kern = cg_get(lib, "mm");
    const rx_func *f = m->funcs[0];
    static const int64_t ks[] = {0, 1, 5};
    for (int t = 0; t < 3; t++) {
        enum { N = 4 };
        int64_t K = ks[t];
        float x[N * 5 + 1], w[5 * 3 + 1], y[N * 3];
        for (int i = 0; i < N * 5; i++) x[i] = (float)(i % 7) - 2.5f;
        for (int i = 0; i < 15; i++) w[i] = (float)(i % 4) * 0.25f + 1.0f;
        for (int i = 0; i < N * 3; i++) y[i] = SENTINEL;
        void *data[] = {x, w, y};
        int64_t iv[2];
        for (int j = 0; j < f->nsvars; j++) iv[j] = !strcmp(f->svars[j]->name, "n") ? N : K;
        ck_assert_int_eq(kern(data, iv), 0);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < 3; j++) {
                float s = 0;
                for (int r = 0; r < K; r++) s += x[i * K + r] * w[r * 3 + j];
                ck_assert_float_eq_tol(y[i * 3 + j], s, 1e-5f);
            }
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* Explicit iterators bound to loops from 0 (the user-written form), two reduce loops
 * and a nonzero spatial start; the reduce extent m may be 0. */
START_TEST(zero_extent_explicit)
{
    rx_module *m = cg_read(MOD(
        "'rsum': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [3, 'm', 2], 'dtype': 'f64'}},"
        " {'name': 'R', 'buffer': {'shape': [3], 'dtype': 'f64'}}],"
        " 'body': [{'for': 'io', 'min': 2, 'extent': 3, 'body': ["
        "  {'for': 'ka', 'extent': 'm', 'body': ["
        "   {'for': 'kb', 'extent': 2, 'body': ["
        "    {'block': 'red', 'iters': ["
        "      {'var': 'vi', 'kind': 'spatial', 'dom': 3, 'bind': 'io - 2'},"
        "      {'var': 'va', 'kind': 'reduce', 'dom': 'm', 'bind': 'ka'},"
        "      {'var': 'vb', 'kind': 'reduce', 'dom': 2, 'bind': 'kb'}],"
        "     'init': [{'store': 'R[vi]', 'value': 'f64(vi) + 100.0'}],"
        "     'body': [{'store': 'R[vi]', 'value': 'R[vi] + A[vi, va, vb]'}]}]}]}]}]}"));
    char *c = gen_c(m);
    ck_assert_msg(strstr(c, "init of block red") != NULL, "init not hoisted:\n%s", c);
    free(c);
    cg_lib lib = cg_build(m);
    cg_kernel kern = cg_get(lib, "rsum");
    for (int64_t M = 0; M <= 2; M++) {
        double a[3 * 2 * 2 + 1], r[3] = {SENTINEL, SENTINEL, SENTINEL};
        for (int i = 0; i < 12; i++) a[i] = i * 0.5;
        void *data[] = {a, r};
        int64_t iv[] = {M};
        ck_assert_int_eq(kern(data, iv), 0);
        for (int i = 0; i < 3; i++) {
            double s = i + 100.0;
            for (int k = 0; k < M * 2; k++) s += a[i * M * 2 + k];
            ck_assert_double_eq(r[i], s);
        }
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* Implicit reduce iterators over loops starting at 3: hoisted when the reduce loop is
 * innermost (extent 0 included); guarded by "k == 3" (its start, not 0) when a spatial
 * loop sits inside the reduce loop, or when init reads the reduce iterator. */
START_TEST(nonzero_min)
{
    rx_module *m = cg_read(MOD(
        "'inner': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [4, 'e'], 'dtype': 'f64'}},"
        " {'name': 'R', 'buffer': {'shape': [4], 'dtype': 'f64'}}],"
        " 'body': [{'for': 'i', 'extent': 4, 'body': ["
        "  {'for': 'k', 'min': 3, 'extent': 'e', 'body': ["
        "   {'block': 'b', 'init': [{'store': 'R[i]', 'value': '1.0'}],"
        "    'body': [{'store': 'R[i]', 'value': 'R[i] + A[i, k - 3]'}]}]}]}]},"
        "'outer': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [4, 'e'], 'dtype': 'f64'}},"
        " {'name': 'R', 'buffer': {'shape': [4], 'dtype': 'f64'}}],"
        " 'body': [{'for': 'k', 'min': 3, 'extent': 'e', 'body': ["
        "  {'for': 'i', 'extent': 4, 'body': ["
        "   {'block': 'b', 'init': [{'store': 'R[i]', 'value': '1.0'}],"
        "    'body': [{'store': 'R[i]', 'value': 'R[i] + A[i, k - 3]'}]}]}]}]},"
        "'uses_k': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [4, 'e'], 'dtype': 'f64'}},"
        " {'name': 'R', 'buffer': {'shape': [4], 'dtype': 'f64'}}],"
        " 'body': [{'for': 'i', 'extent': 4, 'body': ["
        "  {'for': 'k', 'min': 3, 'extent': 'e', 'body': ["
        "   {'block': 'b', 'init': [{'store': 'R[i]', 'value': 'f64(k)'}],"
        "    'body': [{'store': 'R[i]', 'value': 'R[i] + A[i, k - 3]'}]}]}]}]}"));
    char *c = gen_c(m);
    const char *outer = strstr(c, "rxk_outer("), *uses_k = strstr(c, "rxk_uses_k(");
    ck_assert(outer && uses_k && outer < uses_k);
    const char *hoisted = strstr(c, "init of block b");
    ck_assert_msg(hoisted && hoisted < outer && !strstr(hoisted + 1, "init of block b"),
                  "only 'inner' hoists:\n%s", c);
    const char *guard = strstr(outer, "== 3)");
    ck_assert_msg(guard && guard < uses_k && strstr(uses_k, "== 3)"), "guards:\n%s", c);
    free(c);
    cg_lib lib = cg_build(m);
    static const char *const names[] = {"inner", "outer", "uses_k"};
    for (int fi = 0; fi < 3; fi++) {
        cg_kernel kern = cg_get(lib, names[fi]);
        for (int64_t E = 0; E <= 3; E++) {
            double a[4 * 3 + 1], r[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
            for (int i = 0; i < 12; i++) a[i] = i + 0.25;
            void *data[] = {a, r};
            int64_t iv[] = {E};
            ck_assert_int_eq(kern(data, iv), 0);
            for (int i = 0; i < 4; i++) {
                /* the guarded forms keep the empty-reduction hazard: nothing runs */
                double s = fi == 2 ? 3.0 : 1.0;
                for (int k = 0; k < E; k++) s += a[i * E + k];
                if (E == 0 && fi > 0) s = SENTINEL;
                ck_assert_double_eq(r[i], s);
            }
        }
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen_init");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, zero_extent_implicit);
    tcase_add_test(tc, zero_extent_explicit);
    tcase_add_test(tc, nonzero_min);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
