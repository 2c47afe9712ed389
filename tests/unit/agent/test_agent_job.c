/*
 * test_agent_job.c — one benchmark job end to end without a server (rpc/agent/job.c and
 * check.c): a JOBSPEC parsed, then run in a forked child on an artifact whose kernels
 * were compiled at test time — statistics as relax-run --bench reports them, the
 * correctness check passing and failing (max errors, the violating element named), and
 * every failure class with its code: load_error, shape_error (from the binding and
 * from the VM's MATCH), input_error, crashed (SIGSEGV in a kernel), timeout (a kernel
 * that never returns, killed), and abandonment by abort_fn and by the stop pipe.
 */
#include "../rx_check.h"
#include "agent_test.h"

#include <math.h>
#include <poll.h>

static const char kernel_src[] =
    "#include <stdint.h>\n"
    "int32_t scale_add(void *const *data, const int64_t *iv) {\n"
    "  const float *x = data[0]; float *y = data[1];\n"
    "  for (int64_t i = 0; i < iv[0] * 4; i++) y[i] = x[i] * 2.0f + 1.0f;\n"
    "  return 0;\n"
    "}\n"
    "int32_t crash(void *const *data, const int64_t *iv) {\n"
    "  (void)data; (void)iv; *(volatile int *)(uintptr_t)8 = 1; return 0;\n"
    "}\n"
    "int32_t spin(void *const *data, const int64_t *iv) {\n"
    "  (void)data; (void)iv; for (volatile int64_t i = 0;; i++) {} return 0;\n"
    "}\n";

static uint8_t *g_art; /* the artifact: main (scale_add), crash, spin */
static size_t g_n;
static char g_id[65];

/* f(x: (n, 4) f32) -> (n, 4) f32 calling kernel k. */
static void add_func(rx_rxa_builder *b, const char *name, uint32_t k)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}}, four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, n_tok}, {1, four}};
    static const char *const syms[] = {"n"};
    rx_rxa_type params[1] = {rt_tensor("x", RX_RXA_F32, 2, dims)};
    rx_rxa_func f = rt_func(name, 1, params, 3, 2);
    f.nsym = 1;
    f.syms = syms;
    f.result = rt_tensor(NULL, RX_RXA_F32, 2, dims);
    char m[64];
    snprintf(m, sizeof m, "%s: x: expected (n, 4)", name);
    uint32_t msg = rx_rxa_add_string(b, m);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_MUL, 1, RX_D_SLOT, 0, RX_D_IMM, 16);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_SLOT, 1, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 0, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_RELEASE, 1);
    RX_EMIT(&c, RX_OP_CALL_KERNEL, k, 2, 0, 2, 1, RX_D_SLOT, 0);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
}

static void setup(void)
{
    static const char *const ivars[] = {"n"};
    size_t nso;
    uint8_t *so = rt_compile_so(kernel_src, &nso);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, nso);
    free(so);
    uint32_t k0 = rx_rxa_add_kernel(b, "scale_add", RX_RXA_KERNELS_CPU, 2, 1, ivars);
    uint32_t k1 = rx_rxa_add_kernel(b, "crash", RX_RXA_KERNELS_CPU, 2, 1, ivars);
    uint32_t k2 = rx_rxa_add_kernel(b, "spin", RX_RXA_KERNELS_CPU, 2, 1, ivars);
    add_func(b, "main", k0);
    add_func(b, "crash", k1);
    add_func(b, "spin", k2);
    ck_assert_int_eq(rx_rxa_serialize(b, &g_art, &g_n), 0);
    rx_rxa_builder_free(b);
    rx_sha256_hex(g_art, g_n, g_id);
}

static void teardown(void)
{
    free(g_art);
    g_art = NULL;
}

/* Parses a spec written with %s for the artifact id; fails the test on a parse error. */
static json_t *spec_of(const char *fmt)
{
    char text[8192];
    snprintf(text, sizeof text, fmt, g_id);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    ck_assert_msg(j != NULL, "spec: %s", e.text);
    return j;
}

/* Runs spec on the artifact; returns the report. */
static json_t *run_spec(json_t *spec, const uint8_t *bytes, size_t n)
{
    rxag_job job;
    char code[32], err[RXAG_ERR];
    ck_assert_msg(rxag_job_parse(spec, &job, code, err, sizeof err) == 0, "%s: %s", code, err);
    json_t *rep = NULL;
    ck_assert_int_eq(rxag_job_run(&job, bytes, n, -1, NULL, NULL, &rep), RXAG_RUN_DONE);
    ck_assert_ptr_nonnull(rep);
    rxag_job_free(&job);
    json_decref(spec);
    return rep;
}

static const char *status_of(const json_t *rep)
{
    return json_string_value(json_object_get(rep, "status"));
}

static const char *code_of(const json_t *rep)
{
    return json_string_value(json_object_get(json_object_get(rep, "error"), "code"));
}

static const char *message_of(const json_t *rep)
{
    const char *m = json_string_value(json_object_get(json_object_get(rep, "error"), "message"));
    return m ? m : "";
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_number(v), "no number %s", k);
    return json_number_value(v);
}

START_TEST(bench_statistics)
{
    json_t *rep = run_spec(spec_of("{\"id\": \"j1\", \"artifact\": \"%s\", \"function\": \"main\","
                                   " \"shapes\": {\"n\": 8}, \"repeat\": 5, \"number\": 3}"),
                           g_art, g_n);
    ck_assert_str_eq(status_of(rep), "done");
    const json_t *r = json_object_get(rep, "result");
    ck_assert_int_eq((int)num(r, "repeat"), 5);
    ck_assert_int_eq((int)num(r, "number"), 3);
    ck_assert_int_eq((int)num(r, "kernels"), 1);
    ck_assert_int_eq((int)num(r, "peak_bytes"), 8 * 4 * 4);
    ck_assert(num(r, "min_ms") <= num(r, "median_ms") && num(r, "median_ms") <= num(r, "max_ms"));
    ck_assert(num(r, "min_ms") > 0 && num(r, "stddev_ms") >= 0 && num(r, "load_ms") > 0);
    ck_assert_ptr_null(json_object_get(r, "check")); /* no expected outputs: no check */
    /* the keys of relax-run --bench's line, in its order, then load_ms */
    static const char *const keys[] = {"mean_ms",        "median_ms",      "min_ms",
                                       "max_ms",         "stddev_ms",      "repeat",
                                       "number",         "kernels",        "peak_bytes",
                                       "reserved_bytes", "resident_bytes", "threads",
                                       "blas_threads",   "reduced_calls",  "device",
                                       "load_ms"};
    ck_assert_int_eq(json_object_size(r), RX_COUNTOF(keys));
    for (int i = 0; i < RX_COUNTOF(keys); i++) ck_assert_ptr_nonnull(json_object_get(r, keys[i]));
    ck_assert(json_is_string(json_object_get(r, "device"))); /* the device the job ran on */
    ck_assert_int_eq((int)num(r, "reserved_bytes"), 8 * 4 * 4);
    ck_assert_int_eq((int)num(r, "resident_bytes"), 8 * 4 * 4); /* malloc'ed: all resident */
    json_decref(rep);
}
END_TEST

/* A job's threads: the child runs the kernels and BLAS with that many (what the runtime
 * reads back from libgomp and OpenBLAS after the timed calls). */
START_TEST(threads_field)
{
    for (int n = 1; n <= 3; n += 2) {
        char fmt[256];
        snprintf(fmt, sizeof fmt,
                 "{\"id\": \"j7\", \"artifact\": \"%%s\", \"shapes\": {\"n\": 8}, "
                 "\"repeat\": 2, \"threads\": %d}", n);
        json_t *rep = run_spec(spec_of(fmt), g_art, g_n);
        ck_assert_str_eq(status_of(rep), "done");
        const json_t *r = json_object_get(rep, "result");
        ck_assert_int_eq((int)num(r, "threads"), n);
        if (rx_rt_blas_library()) ck_assert_int_eq((int)num(r, "blas_threads"), n);
        json_decref(rep);
    }
}
END_TEST

/* A spec with input x (3, 4) = 0..11 and the expected output given (f32 .npy). */
static json_t *check_spec(const float *expected, int64_t rows, double atol)
{
    float x[12], *e = (float *)expected;
    for (int i = 0; i < 12; i++) x[i] = (float)i * 0.5f;
    int64_t sx[2] = {3, 4}, se[2] = {rows, 4};
    size_t nx, ne;
    uint8_t *bx = at_npy_f32(x, 2, sx, &nx), *be = at_npy_f32(e, 2, se, &ne);
    char *b64x = at_b64(bx, nx), *b64e = at_b64(be, ne);
    char text[16384];
    snprintf(text, sizeof text,
             "{\"id\": \"j2\", \"artifact\": \"%s\", \"inputs\": {\"x\": \"%s\"}, \"expected\": "
             "[\"%s\"],"
             " \"tolerance\": {\"rtol\": 0, \"atol\": %g}, \"repeat\": 2}",
             g_id, b64x, b64e, atol);
    free(bx);
    free(be);
    free(b64x);
    free(b64e);
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(check_passes_and_fails)
{
    float want[12];
    for (int i = 0; i < 12; i++) want[i] = (float)i * 0.5f * 2.0f + 1.0f;
    json_t *rep = run_spec(check_spec(want, 3, 1e-6), g_art, g_n);
    ck_assert_msg(!strcmp(status_of(rep), "done"), "%s", message_of(rep));
    const json_t *r = json_object_get(rep, "result");
    ck_assert_str_eq(json_string_value(json_object_get(r, "check")), "passed");
    ck_assert(num(r, "max_abs_error") == 0 && num(r, "max_rel_error") == 0);
    ck_assert_int_eq((int)num(r, "repeat"), 2);
    json_decref(rep);
    /* one element off by 0.25: failed, statistics still attached */
    want[6] += 0.25f;
    rep = run_spec(check_spec(want, 3, 1e-3), g_art, g_n);
    ck_assert_str_eq(status_of(rep), "failed");
    ck_assert_str_eq(code_of(rep), "check_failed");
    ck_assert_msg(strstr(message_of(rep), "output 0 [1, 2]") != NULL, "%s", message_of(rep));
    r = json_object_get(rep, "result");
    ck_assert_str_eq(json_string_value(json_object_get(r, "check")), "failed");
    ck_assert(fabs(num(r, "max_abs_error") - 0.25) < 1e-6);
    ck_assert(fabs(num(r, "max_rel_error") - 0.25 / want[6]) < 1e-6);
    ck_assert(num(r, "median_ms") > 0);
    json_decref(rep);
    /* the tolerance decides: the same error within atol passes */
    rep = run_spec(check_spec(want, 3, 0.3), g_art, g_n);
    ck_assert_str_eq(status_of(rep), "done");
    json_decref(rep);
    /* a shape mismatch fails the check with both shapes named */
    rep = run_spec(check_spec(want, 2, 1e-3), g_art, g_n);
    ck_assert_str_eq(code_of(rep), "check_failed");
    ck_assert_msg(strstr(message_of(rep), "shape (3, 4), expected (2, 4)") != NULL, "%s",
                  message_of(rep));
    json_decref(rep);
}
END_TEST

START_TEST(failure_codes)
{
    /* the binding: a symbolic variable without a value */
    json_t *rep = run_spec(spec_of("{\"id\": \"j3\", \"artifact\": \"%s\"}"), g_art, g_n);
    ck_assert_str_eq(code_of(rep), "shape_error");
    ck_assert_msg(strstr(message_of(rep), "needs symbolic variable n") != NULL, "%s",
                  message_of(rep));
    json_decref(rep);
    /* an unknown variable */
    rep = run_spec(spec_of("{\"id\": \"j3\", \"artifact\": \"%s\", \"shapes\": {\"m\": 2}}"), g_art,
                   g_n);
    ck_assert_str_eq(code_of(rep), "shape_error");
    ck_assert_msg(strstr(message_of(rep), "no symbolic variable m") != NULL, "%s", message_of(rep));
    json_decref(rep);
    /* no such function: the functions are listed */
    rep = run_spec(spec_of("{\"id\": \"j3\", \"artifact\": \"%s\", \"function\": \"nope\"}"), g_art,
                   g_n);
    ck_assert_str_eq(code_of(rep), "input_error");
    ck_assert_msg(strstr(message_of(rep), "no function 'nope' (functions: main, crash, spin)") !=
                      NULL,
                  "%s", message_of(rep));
    json_decref(rep);
    /* an input of the wrong shape: the VM's MATCH message */
    float x[15] = {0};
    int64_t s[2] = {3, 5};
    size_t nx;
    uint8_t *bx = at_npy_f32(x, 2, s, &nx);
    char *b64 = at_b64(bx, nx), text[4096];
    snprintf(text, sizeof text,
             "{\"id\": \"j3\", \"artifact\": \"%s\", \"inputs\": {\"x\": \"%s\"}}", g_id, b64);
    rep = run_spec(json_loads(text, 0, NULL), g_art, g_n);
    ck_assert_str_eq(code_of(rep), "shape_error");
    ck_assert_msg(strstr(message_of(rep), "main: x: expected (n, 4), got (3, 5)") != NULL, "%s",
                  message_of(rep));
    json_decref(rep);
    /* an unknown input name */
    snprintf(text, sizeof text,
             "{\"id\": \"j3\", \"artifact\": \"%s\", \"inputs\": {\"y\": \"%s\"}}", g_id, b64);
    rep = run_spec(json_loads(text, 0, NULL), g_art, g_n);
    ck_assert_str_eq(code_of(rep), "input_error");
    ck_assert_msg(strstr(message_of(rep), "no parameter y (parameters: x)") != NULL, "%s",
                  message_of(rep));
    json_decref(rep);
    free(bx);
    free(b64);
    /* an input that is not an .npy image */
    rep = run_spec(
        spec_of("{\"id\": \"j3\", \"artifact\": \"%s\", \"inputs\": {\"x\": \"aGVsbG8=\"}}"), g_art,
        g_n);
    ck_assert_str_eq(code_of(rep), "input_error");
    ck_assert_msg(strstr(message_of(rep), "input x: inputs.x: not a .npy file") != NULL, "%s",
                  message_of(rep));
    json_decref(rep);
    /* bytes that are no artifact */
    static const uint8_t junk[200] = {1, 2, 3};
    rep = run_spec(spec_of("{\"id\": \"j3\", \"artifact\": \"%s\"}"), junk, sizeof junk);
    ck_assert_str_eq(code_of(rep), "load_error");
    ck_assert_msg(strstr(message_of(rep), "artifact ") != NULL, "%s", message_of(rep));
    json_decref(rep);
}
END_TEST

START_TEST(spec_validation)
{
    rxag_job job;
    char code[32], err[RXAG_ERR];
    json_t *s = spec_of("{\"id\": \"j4\", \"artifact\": \"%s\", \"repeat\": 0}");
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "bad_job");
    ck_assert_msg(strstr(err, "repeat: expected an integer in 1..") != NULL, "%s", err);
    rxag_job_free(&job);
    json_decref(s);
    s = json_loads("{\"id\": \"j4\", \"artifact\": \"abc\"}", 0, NULL);
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "artifact: expected 64 lowercase hex digits") != NULL, "%s", err);
    rxag_job_free(&job);
    json_decref(s);
    s = spec_of("{\"id\": \"j4\", \"artifact\": \"%s\", \"inputs\": {\"x\": \"***\"}}");
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "input_error");
    ck_assert_msg(strstr(err, "inputs.x: expected a base64 string") != NULL, "%s", err);
    rxag_job_free(&job);
    json_decref(s);
    s = spec_of("{\"id\": \"j4\", \"artifact\": \"%s\", \"shapes\": {\"n\": \"8\"}}");
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "shape_error");
    rxag_job_free(&job);
    json_decref(s);
    static const char *const bad_threads[] = {"0", "1025", "\"2\"", "1.5"};
    for (int i = 0; i < 4; i++) {
        char fmt[128];
        snprintf(fmt, sizeof fmt, "{\"id\": \"j4\", \"artifact\": \"%%s\", \"threads\": %s}",
                 bad_threads[i]);
        s = spec_of(fmt);
        ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), -1);
        ck_assert_str_eq(code, "bad_job");
        ck_assert_msg(strstr(err, "threads: expected an integer in 1..1024") != NULL, "%s", err);
        rxag_job_free(&job);
        json_decref(s);
    }
    /* defaults */
    s = spec_of("{\"id\": \"j4\", \"artifact\": \"%s\"}");
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), 0);
    ck_assert_str_eq(job.function, "main");
    ck_assert_int_eq(job.repeat, 10);
    ck_assert_int_eq(job.number, 1);
    ck_assert_int_eq(job.warmup, 1);
    ck_assert_int_eq(job.timeout_ms, 60000);
    ck_assert_int_eq(job.threads, 0); /* the agent's environment decides */
    rxag_job_free(&job);
    json_decref(s);
}
END_TEST

START_TEST(crash_and_timeout)
{
    json_t *rep = run_spec(spec_of("{\"id\": \"j5\", \"artifact\": \"%s\", \"function\": \"crash\","
                                   " \"shapes\": {\"n\": 2}}"),
                           g_art, g_n);
    ck_assert_str_eq(code_of(rep), "crashed");
    ck_assert_msg(strstr(message_of(rep), "killed by signal 11") != NULL, "%s", message_of(rep));
    json_decref(rep);
    double t0 = rx_now_s();
    rep = run_spec(spec_of("{\"id\": \"j6\", \"artifact\": \"%s\", \"function\": \"spin\","
                           " \"shapes\": {\"n\": 2}, \"timeout_ms\": 400}"),
                   g_art, g_n);
    double dt = rx_now_s() - t0;
    ck_assert_str_eq(code_of(rep), "timeout");
    ck_assert_msg(strstr(message_of(rep), "timeout of 400 ms") != NULL, "%s", message_of(rep));
    ck_assert_msg(dt >= 0.4 && dt < 5.0, "took %.2f s", dt);
    json_decref(rep);
}
END_TEST

static int abort_after(void *ud)
{
    double *deadline = ud;
    return rx_now_s() > *deadline;
}

START_TEST(abandoned_runs)
{
    rxag_job job;
    char code[32], err[RXAG_ERR];
    json_t *s = spec_of(
        "{\"id\": \"j7\", \"artifact\": \"%s\", \"function\": \"spin\", \"shapes\": {\"n\": 2}}");
    ck_assert_int_eq(rxag_job_parse(s, &job, code, err, sizeof err), 0);
    json_decref(s);
    /* abort_fn (a cancel from the heartbeat) */
    double t0 = rx_now_s(), deadline = t0 + 0.2;
    json_t *rep = NULL;
    ck_assert_int_eq(rxag_job_run(&job, g_art, g_n, -1, abort_after, &deadline, &rep),
                     RXAG_RUN_ABORTED);
    ck_assert_ptr_null(rep);
    ck_assert_msg(rx_now_s() - t0 < 3.0, "abort took %.2f s", rx_now_s() - t0);
    /* the stop pipe (SIGTERM) */
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    t0 = rx_now_s();
    ck_assert_int_eq(rxag_job_run(&job, g_art, g_n, p[0], NULL, NULL, &rep), RXAG_RUN_ABORTED);
    ck_assert_msg(rx_now_s() - t0 < 3.0, "stop took %.2f s", rx_now_s() - t0);
    close(p[0]);
    close(p[1]);
    rxag_job_free(&job);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("agent_job");
    TCase *t = tcase_create("job");
    tcase_set_timeout(t, 120);
    tcase_add_unchecked_fixture(t, setup, teardown);
    tcase_add_test(t, bench_statistics);
    tcase_add_test(t, threads_field);
    tcase_add_test(t, check_passes_and_fails);
    tcase_add_test(t, failure_codes);
    tcase_add_test(t, spec_validation);
    tcase_add_test(t, crash_and_timeout);
    tcase_add_test(t, abandoned_runs);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
