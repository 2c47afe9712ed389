/*
 * test_profile.c — the runtime's per-call profiler (runtime.h: rx_rt_set_profiling,
 * rx_rt_profile_get, rx_rt_bench with profiling on).
 *
 * The artifact has one function that calls two different kernels (k_add twice, k_mul
 * once; compiled from C at test time, as in test_vm.c) and one registered library
 * function (my.slow_neg, which sleeps 2 ms so its time dominates and bounds its min
 * from below). Per profiled call the counts are therefore exactly 2, 1 and 1; the tests
 * check the counts, the names and kinds, the sort order, the time invariants (min <=
 * mean <= max, wall >= the sum of the parts), that nothing is recorded while profiling
 * is off, that rx_rt_bench profiles exactly its timed calls, and that concurrent calls
 * aggregate without losing updates.
 */
#include "rt_test.h"

#include <pthread.h>
#include <time.h>

static const char kernel_src[] =
    "#include <stdint.h>\n"
    "int32_t k_add(void *const *data, const int64_t *iv) {\n"
    "  (void)iv; const float *x = data[0]; float *y = data[1];\n"
    "  for (int i = 0; i < 4; i++) y[i] = x[i] + 1.0f;\n"
    "  return 0;\n"
    "}\n"
    "int32_t k_mul(void *const *data, const int64_t *iv) {\n"
    "  (void)iv; const float *x = data[0]; float *y = data[1];\n"
    "  for (int i = 0; i < 4; i++) y[i] = x[i] * 2.0f;\n"
    "  return 0;\n"
    "}\n";

#define SLEEP_NS 2000000 /* my.slow_neg's sleep */

static int32_t slow_neg(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 2) return 1;
    struct timespec ts = {0, SLEEP_NS};
    while (nanosleep(&ts, &ts) != 0) {
    }
    const float *x = args[0]->data;
    float *y = args[1]->data;
    for (int i = 0; i < 4; i++) y[i] = -x[i];
    return 0;
}

/* main(x: (4,) f32) -> -(2 (x + 1) + 1): k_add, k_mul, k_add, my.slow_neg. */
static rx_rt_module *profile_module(rx_rt_ctx *ctx)
{
    static const rx_rxa_tok four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, four}};
    rx_rxa_type params[1] = {rt_tensor("x", RX_RXA_F32, 1, dims)};
    rx_rxa_func f = rt_func("main", 1, params, 4, 0);
    f.result = rt_tensor(NULL, RX_RXA_F32, 1, dims);
    size_t nso;
    uint8_t *so = rt_compile_so(kernel_src, &nso);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, nso);
    free(so);
    uint32_t kadd = rx_rxa_add_kernel(b, "k_add", RX_RXA_KERNELS_CPU, 2, 0, NULL);
    uint32_t kmul = rx_rxa_add_kernel(b, "k_mul", RX_RXA_KERNELS_CPU, 2, 0, NULL);
    uint32_t msg = rx_rxa_add_string(b, "main: x: expected (4,)");
    uint32_t neg = rx_rxa_add_string(b, "my.slow_neg");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 1, msg, 1, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_IMM, 32, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, RX_RXA_F32, 1, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 1, RX_D_IMM, 16, RX_RXA_F32, 1, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_RELEASE, 1);
    RX_EMIT(&c, RX_OP_CALL_KERNEL, kadd, 2, 0, 2, 0);
    RX_EMIT(&c, RX_OP_CALL_KERNEL, kmul, 2, 2, 3, 0);
    RX_EMIT(&c, RX_OP_CALL_KERNEL, kadd, 2, 3, 2, 0);
    RX_EMIT(&c, RX_OP_CALL_LIB, neg, 2, 2, 3);
    RX_EMIT(&c, RX_OP_RET, 3);
    return rt_load_func(ctx, b, &f, &c);
}

static rx_rt_ctx *new_ctx(void)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(rx_rt_register_library(ctx, "my.slow_neg", slow_neg, NULL), 0);
    return ctx;
}

static float xin[4] = {0, 1, 2, 3};
static int64_t xshape[1] = {4};

/* One call of main; checks the result. */
static void call_once(rx_rt_module *m)
{
    DLTensor X = rt_dl(xin, RX_RXA_F32, 1, xshape);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_msg(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err) == 0, "%s", err.msg);
    const float *z = rx_rt_outputs_tensor(out, 0)->data;
    for (int i = 0; i < 4; i++) ck_assert_float_eq(z[i], -(2.0f * (xin[i] + 1.0f) + 1.0f));
    rx_rt_outputs_free(out);
}

static const rx_rt_prof_entry *find(const rx_rt_profile *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->entries[i].name, name)) return &p->entries[i];
    ck_abort_msg("no profile entry %s", name);
    return NULL;
}

/* The profile of `runs` calls: exact counts, kinds, order and time invariants. */
static void check_profile(rx_rt_module *m, int64_t runs)
{
    rx_rt_profile p;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_profile_get(m, &p, &err), 0);
    ck_assert_int_eq(p.runs, runs);
    ck_assert_int_eq(p.n, 3);
    const rx_rt_prof_entry *add = find(&p, "k_add"), *mul = find(&p, "k_mul");
    const rx_rt_prof_entry *neg = find(&p, "my.slow_neg");
    ck_assert_int_eq(add->calls, 2 * runs);
    ck_assert_int_eq(mul->calls, runs);
    ck_assert_int_eq(neg->calls, runs);
    ck_assert_int_eq(add->kind, RX_RT_PROF_KERNEL);
    ck_assert_int_eq(mul->kind, RX_RT_PROF_KERNEL);
    ck_assert_int_eq(neg->kind, RX_RT_PROF_LIBRARY);
    ck_assert_ptr_eq(neg, &p.entries[0]); /* it sleeps: the largest total comes first */
    ck_assert_int_ge(neg->min_ns, SLEEP_NS);
    int64_t sum = 0;
    for (int i = 0; i < p.n; i++) {
        const rx_rt_prof_entry *e = &p.entries[i];
        if (i) ck_assert_int_ge(p.entries[i - 1].total_ns, e->total_ns);
        ck_assert_int_ge(e->min_ns, 0);
        ck_assert_int_le(e->min_ns * e->calls, e->total_ns);
        ck_assert_int_ge(e->max_ns * e->calls, e->total_ns);
        sum += e->total_ns;
    }
    ck_assert_int_eq(p.parts_ns, sum);
    ck_assert_int_ge(p.wall_ns, sum);
    ck_assert_int_ge(p.wall_ns, runs * SLEEP_NS);
    rx_rt_profile_free(&p);
    ck_assert_ptr_null(p.entries);
    ck_assert_int_eq(p.n, 0);
}

/* Nothing recorded: no entries, no runs. */
static void check_empty(rx_rt_module *m)
{
    rx_rt_profile p;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_profile_get(m, &p, &err), 0);
    ck_assert_int_eq(p.n, 0);
    ck_assert_int_eq(p.runs, 0);
    ck_assert_int_eq(p.wall_ns, 0);
    ck_assert_int_eq(p.parts_ns, 0);
    rx_rt_profile_free(&p);
}

START_TEST(counts_names_and_times)
{
    rx_rt_ctx *ctx = new_ctx();
    rx_rt_module *m = profile_module(ctx);
    ck_assert_int_eq(rx_rt_set_profiling(m, 1), 0);
    for (int i = 0; i < 3; i++) call_once(m);
    ck_assert_int_eq(rx_rt_set_profiling(m, 0), 1);
    check_profile(m, 3);
    /* off: further calls change nothing; the aggregate stays until reset */
    for (int i = 0; i < 2; i++) call_once(m);
    check_profile(m, 3);
    rx_rt_profile_reset(m);
    check_empty(m);
    ck_assert_int_eq(rx_rt_set_profiling(m, 1), 0);
    call_once(m);
    check_profile(m, 1);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(off_records_nothing)
{
    rx_rt_ctx *ctx = new_ctx();
    rx_rt_module *m = profile_module(ctx);
    check_empty(m);
    for (int i = 0; i < 3; i++) call_once(m);
    check_empty(m);
    /* a benchmark with profiling off leaves it off */
    DLTensor X = rt_dl(xin, RX_RXA_F32, 1, xshape);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_bench_opts o = {1, 2, 1, 0, 0};
    rx_rt_bench_result r;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), 0);
    check_empty(m);
    ck_assert_int_eq(rx_rt_set_profiling(m, 0), 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(bench_profiles_timed_calls_only)
{
    rx_rt_ctx *ctx = new_ctx();
    rx_rt_module *m = profile_module(ctx);
    DLTensor X = rt_dl(xin, RX_RXA_F32, 1, xshape);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_bench_opts o = {3, 3, 2, 0, 0}; /* 3 warm-up calls, then 3 x 2 timed */
    rx_rt_bench_result r;
    rx_rt_err err;
    rx_rt_set_profiling(m, 1);
    call_once(m); /* profiled, then dropped by the bench's reset */
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), 0);
    check_profile(m, 6);
    ck_assert_int_eq(r.kernels, 4);
    ck_assert_int_eq(rx_rt_set_profiling(m, 0), 1); /* still on afterwards */
    /* a failing bench (bad shape) restores the setting too */
    int64_t bad[1] = {5};
    X.shape = bad;
    rx_rt_set_profiling(m, 1);
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), -1);
    ck_assert_int_eq(rx_rt_set_profiling(m, 0), 1);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static void *caller(void *arg)
{
    for (int i = 0; i < 10; i++) call_once(arg);
    return NULL;
}

START_TEST(concurrent_calls_aggregate)
{
    rx_rt_ctx *ctx = new_ctx();
    rx_rt_module *m = profile_module(ctx);
    rx_rt_set_profiling(m, 1);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, caller, m), 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    check_profile(m, 30);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(failed_call_still_counts)
{
    /* A failing call (bad shape, before any kernel) counts as a run with no parts. */
    rx_rt_ctx *ctx = new_ctx();
    rx_rt_module *m = profile_module(ctx);
    rx_rt_set_profiling(m, 1);
    int64_t bad[1] = {3};
    DLTensor X = rt_dl(xin, RX_RXA_F32, 1, bad);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    rx_rt_profile p;
    ck_assert_int_eq(rx_rt_profile_get(m, &p, &err), 0);
    ck_assert_int_eq(p.runs, 1);
    ck_assert_int_eq(p.n, 0);
    rx_rt_profile_free(&p);
    rx_rt_profile_free(NULL);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("profile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, counts_names_and_times);
    tcase_add_test(tc, off_records_nothing);
    tcase_add_test(tc, bench_profiles_timed_calls_only);
    tcase_add_test(tc, concurrent_calls_aggregate);
    tcase_add_test(tc, failed_call_still_counts);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(profile_suite)
