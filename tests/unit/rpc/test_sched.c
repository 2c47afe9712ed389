/*
 * test_sched.c — the benchmark scheduler (rpc/include/relax/sched.h) without HTTP:
 * validation, matching by target and labels, priority and FIFO order, one job per
 * agent, parked polls woken by submissions (test_sched_life.c: the rest of a job's life).
 *
 * Time is fake: the scheduler reads a counter the tests advance, and the tests run
 * rx_sched_tick themselves (manual_tick), so nothing sleeps (sched_test.h).
 */
#include "sched_test.h"

/* ---- validation ---- */

START_TEST(register_validation)
{
    rx_sched *s = open_default();
    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"[]", "must be a JSON object"},
        {"{\"targets\": [\"cpu\"]}", "name:"},
        {"{\"name\": \"a b\", \"targets\": [\"cpu\"]}", "name:"},
        {"{\"name\": \"a\"}", "targets: expected a non-empty array"},
        {"{\"name\": \"a\", \"targets\": []}", "targets: expected a non-empty array"},
        {"{\"name\": \"a\", \"targets\": [3]}", "targets[0]"},
        {"{\"name\": \"a\", \"targets\": [\"cpu\"], \"labels\": \"x86\"}", "labels:"},
        {"{\"name\": \"a\", \"targets\": [\"cpu\"], \"cores\": -1}", "cores:"},
        {"{\"name\": \"a\", \"targets\": [\"cpu\"], \"cores\": 2.5}", "cores:"},
        {"{\"name\": \"a\", \"targets\": [\"cpu\"], \"protocol\": 2}", "protocol:"},
        {"{\"name\": \"a\", \"targets\": [\"cpu\"], \"cpu\": 7}", "cpu:"},
    };
    for (int i = 0; i < RX_COUNTOF(bad); i++) {
        json_t *b = parse(bad[i].body);
        rx_sched_err e = {0};
        ck_assert_ptr_null(rx_sched_register(s, b, &e));
        ck_assert_int_eq(e.status, 400);
        ck_assert_str_eq(e.code, "bad_request");
        ck_assert_msg(strstr(e.message, bad[i].needle), "%s: %s", bad[i].body, e.message);
        json_decref(b);
    }
    /* the same name gets the same id; unknown keys from a newer agent are ignored */
    char a[33], b[33], c[33];
    reg(s, CPU_AGENT("lab-1"), a);
    reg(s, "{\"name\": \"lab-1\", \"targets\": [\"cpu\", \"cuda\"], \"future\": {}}", b);
    reg(s, CPU_AGENT("lab-2"), c);
    ck_assert_str_eq(a, b);
    ck_assert_str_ne(a, c);
    json_t *all = rx_sched_agents(s);
    ck_assert_int_eq(json_array_size(json_object_get(all, "agents")), 2);
    json_t *first = json_array_get(json_object_get(all, "agents"), 0);
    ck_assert_int_eq(json_array_size(json_object_get(first, "targets")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(first, "state")), "idle");
    json_decref(all);
    /* heartbeat and poll of an unknown agent: 404 unknown_agent */
    rx_sched_err e = {0};
    ck_assert_ptr_null(rx_sched_heartbeat(s, "00000000000000000000000000000000", NULL, &e));
    ck_assert_int_eq(e.status, 404);
    ck_assert_str_eq(e.code, "unknown_agent");
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, "../../etc", NULL, &w, count_wake, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_null(rx_sched_poll_end(s, &w, &e));
    ck_assert_str_eq(e.code, "unknown_agent");
    rx_sched_close(s);
}
END_TEST

START_TEST(submit_validation)
{
    rx_sched *s = open_default();
    submit_fails(s, "[1]", 400, "bad_request", "JSON object");
    submit_fails(s, "{}", 400, "bad_request", "artifact: required");
    submit_fails(s, "{\"artifact\": \"xyz\"}", 400, "bad_request", "artifact: expected 64");
    submit_fails(s, JOB_BODY ", \"repeats\": 3}", 400, "bad_request", "unknown key \"repeats\"");
    submit_fails(s, JOB_BODY ", \"repeat\": 0}", 400, "bad_request",
                 "repeat: expected an integer 1..");
    submit_fails(s, JOB_BODY ", \"repeat\": 2.0}", 400, "bad_request", "repeat:");
    submit_fails(s, JOB_BODY ", \"repeat\": true}", 400, "bad_request", "repeat:");
    submit_fails(s, JOB_BODY ", \"target\": \"\"}", 400, "bad_request", "target:");
    submit_fails(s, JOB_BODY ", \"shapes\": {\"n\": -1}}", 400, "bad_request", "shapes.n:");
    submit_fails(s, JOB_BODY ", \"shapes\": [1]}", 400, "bad_request", "shapes:");
    submit_fails(s, JOB_BODY ", \"labels\": [\"ok\", \"not ok\"]}", 400, "bad_request",
                 "labels[1]");
    submit_fails(s, JOB_BODY ", \"inputs\": {\"x\": \"@@@\"}}", 400, "bad_request",
                 "inputs.x: not valid base64");
    submit_fails(s, JOB_BODY ", \"inputs\": {\"x\": \"aGVsbG8gd29ybGQ=\"}}", 400, "bad_request",
                 "inputs.x: not a .npy");
    submit_fails(s, JOB_BODY ", \"expected\": []}", 400, "bad_request", "expected:");
    submit_fails(s, JOB_BODY ", \"tolerance\": {\"rtol\": -1}}", 400, "bad_request",
                 "tolerance.rtol");
    submit_fails(s, JOB_BODY ", \"tolerance\": {\"eps\": 1}}", 400, "bad_request",
                 "tolerance: unknown key");
    submit_fails(s, JOB_BODY ", \"priority\": 5000}", 400, "bad_request", "priority:");
    submit_fails(s, JOB_BODY ", \"threads\": 0}", 400, "bad_request",
                 "threads: expected an integer 1..1024");
    submit_fails(s, JOB_BODY ", \"threads\": 1025}", 400, "bad_request", "threads:");
    submit_fails(s, JOB_BODY ", \"threads\": \"2\"}", 400, "bad_request", "threads:");
    submit_fails(s, "{\"artifact\": \"" MISSING_ART "\"}", 404, "not_found", "artifact:");
    /* a valid one with every field; defaults show in the job object */
    rx_sb npy = {0};
    const char raw[] = "\x93NUMPY\x01\x00\x06\x00{}    ";
    rx_base64_encode((const uint8_t *)raw, sizeof raw - 1, &npy);
    char body[1024], id[33];
    snprintf(body, sizeof body,
             JOB_BODY ", \"target\": \"cpu\", \"function\": \"f\", \"shapes\": {\"n\": 128},"
             " \"repeat\": 7, \"number\": 2, \"warmup\": 0, \"threads\": 2, \"labels\": [\"x86\"],"
             " \"priority\": 3, \"timeout_s\": 9, \"queue_timeout_s\": 99, \"max_attempts\": 2,"
             " \"inputs\": {\"x\": \"%s\"}, \"expected\": [\"%s\"],"
             " \"tolerance\": {\"rtol\": 1e-5, \"atol\": 0}}",
             rx_sb_str(&npy), rx_sb_str(&npy));
    submit(s, body, id);
    json_t *o = job(s, id);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "repeat"), 7);
    ck_assert_int_eq(int_of(o, "number"), 2);
    ck_assert_int_eq(int_of(o, "priority"), 3);
    ck_assert_int_eq(int_of(o, "max_attempts"), 2);
    ck_assert_int_eq(int_of(o, "attempts"), 0);
    ck_assert_int_eq(int_of(o, "position"), 0);
    ck_assert_int_eq(int_of(json_object_get(o, "shapes"), "n"), 128);
    ck_assert(json_is_null(json_object_get(o, "agent")));
    ck_assert_ptr_null(json_object_get(o, "inputs")); /* not echoed to clients */
    json_decref(o);
    char d[33];
    submit(s, JOB_BODY "}", d);
    o = job(s, d);
    ck_assert_str_eq(json_string_value(json_object_get(o, "target")), "cpu");
    ck_assert_str_eq(json_string_value(json_object_get(o, "function")), "main");
    ck_assert_int_eq(int_of(o, "repeat"), 10);
    ck_assert_int_eq(int_of(o, "timeout_s"), 60);
    ck_assert_int_eq(int_of(o, "queue_timeout_s"), 600);
    ck_assert_int_eq(int_of(o, "max_attempts"), 3);
    json_decref(o);
    /* the agent gets the inputs, the expected outputs and the tolerance */
    char a[33];
    reg(s, CPU_AGENT("lab-1"), a);
    json_t *spec = poll_now(s, a);
    ck_assert_ptr_nonnull(spec);
    ck_assert_str_eq(json_string_value(json_object_get(spec, "id")), id);
    ck_assert_str_eq(json_string_value(json_object_get(spec, "artifact_url")),
                     "/v1/artifacts/" ART);
    ck_assert_int_eq(int_of(spec, "artifact_bytes"), 1234);
    ck_assert_int_eq(int_of(spec, "timeout_ms"), 9000);
    ck_assert_int_eq(int_of(spec, "warmup"), 0);
    ck_assert_int_eq(int_of(spec, "threads"), 2); /* passed on to the agent */
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "inputs"), "x")),
                     rx_sb_str(&npy));
    ck_assert_int_eq(json_array_size(json_object_get(spec, "expected")), 1);
    ck_assert(json_is_real(json_object_get(json_object_get(spec, "tolerance"), "rtol")));
    json_decref(spec);
    rx_sb_free(&npy);
    rx_sched_close(s);
}
END_TEST

/* ---- matching and order ---- */

/* A job's target is the kind of the artifact's target: named otherwise, 409. */
START_TEST(artifact_target_decides)
{
    rx_sched *s = open_default();
    /* the job's target must be the artifact's kind; without one it is the artifact's */
    submit_fails(s, "{\"artifact\": \"" VULKAN_ART "\", \"target\": \"cpu\"}", 409,
                 "target_mismatch", "names cpu but artifact eeeeeeeeeeee was compiled for vulkan");
    char vid[RX_SCHED_ID_LEN + 1];
    submit(s, "{\"artifact\": \"" VULKAN_ART "\"}", vid);
    json_t *o = job(s, vid);
    ck_assert_str_eq(json_string_value(json_object_get(o, "target")), "vulkan");
    json_decref(o);
    submit(s, "{\"artifact\": \"" VULKAN_ART "\", \"target\": \"vulkan\"}", vid);
    rx_sched_close(s);
}
END_TEST

START_TEST(match_target_and_labels)
{
    rx_sched *s = open_default();
    char a[33], cuda[33], avx512[33], x86[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY ", \"target\": \"cuda\"}", cuda);
    submit(s, JOB_BODY ", \"labels\": [\"x86\", \"avx512\"]}", avx512);
    submit(s, JOB_BODY ", \"labels\": [\"avx2\", \"x86\"]}", x86);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, x86);
    expect_status(s, x86, "running");
    expect_status(s, cuda, "queued");
    expect_status(s, avx512, "queued");
    ck_assert_int_eq(result(s, a, x86, "{\"status\": \"done\", \"result\": {\"mean_ms\": 1.5}}"),
                     200);
    /* nothing else fits: the poll parks */
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    ck_assert_int_eq(n, 0);
    /* an agent with cuda gets the cuda job at once */
    char g[33];
    reg(s, "{\"name\": \"gpu\", \"targets\": [\"cuda\"]}", g);
    take_id(poll_now(s, g), got);
    ck_assert_str_eq(got, cuda);
    ck_assert_int_eq(n, 0);
    rx_sched_stop(s);
    ck_assert_int_eq(n, 1); /* stop answers the parked poll: no job */
    ck_assert_ptr_null(rx_sched_poll_end(s, &w, NULL));
    rx_sched_close(s);
}
END_TEST

START_TEST(priority_then_fifo)
{
    rx_sched *s = open_default();
    char a[33], j1[33], j2[33], j3[33], j4[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY "}", j1);
    submit(s, JOB_BODY ", \"priority\": 5}", j2);
    submit(s, JOB_BODY "}", j3);
    submit(s, JOB_BODY ", \"priority\": -1}", j4);
    json_t *o = job(s, j3);
    ck_assert_int_eq(int_of(o, "position"), 2); /* j2 (priority), then j1 (older) */
    json_decref(o);
    const char *order[] = {j2, j1, j3, j4};
    for (int i = 0; i < 4; i++) {
        take_id(poll_now(s, a), got);
        ck_assert_str_eq(got, order[i]);
        ck_assert_int_eq(result(s, a, got, DONE_EMPTY), 200);
    }
    ck_assert_ptr_null(rx_sched_poll_end(s, &(rx_sched_waiter){0}, NULL));
    json_t *all = rx_sched_agents(s);
    ck_assert_int_eq(int_of(json_array_get(json_object_get(all, "agents"), 0), "jobs_done"), 4);
    json_decref(all);
    rx_sched_close(s);
}
END_TEST

START_TEST(one_job_per_agent)
{
    rx_sched *s = open_default();
    char a[33], b[33], j1[33], j2[33], got[33], st[16];
    reg(s, CPU_AGENT("lab-1"), a);
    reg(s, CPU_AGENT("lab-2"), b);
    submit(s, JOB_BODY "}", j1);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, j1);
    ck_assert_str_eq(agent_state(s, "lab-1", st), "busy");
    /* a's running job is not a reason to give it another one: b gets j2 */
    submit(s, JOB_BODY "}", j2);
    expect_status(s, j2, "queued");
    take_id(poll_now(s, b), got);
    ck_assert_str_eq(got, j2);
    /* a polling while it runs j1: j1 goes back to the queue (attempt counted), and a
     * takes it again (nothing else is queued) */
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, j1);
    json_t *o = job(s, j1);
    ck_assert_int_eq(int_of(o, "attempts"), 2);
    ck_assert_str_eq(status_of(o), "running");
    json_decref(o);
    rx_sched_close(s);
}
END_TEST

START_TEST(submit_wakes_parked_poll)
{
    rx_sched *s = open_default();
    char a[33], j[33];
    reg(s, CPU_AGENT("lab-1"), a);
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    ck_assert_int_eq(n, 0);
    advance(3);
    submit(s, JOB_BODY "}", j);
    ck_assert_int_eq(n, 1); /* woken by the submission itself */
    rx_sched_err e = {0};
    json_t *spec = rx_sched_poll_end(s, &w, &e);
    ck_assert_ptr_nonnull(spec);
    ck_assert_str_eq(json_string_value(json_object_get(spec, "id")), j);
    json_decref(spec);
    ck_assert_ptr_null(rx_sched_poll_end(s, &w, &e)); /* only the first end has it */
    expect_status(s, j, "running");
    rx_sched_stats st;
    rx_sched_get_stats(s, &st);
    ck_assert_int_eq(st.dispatch_count, 1);
    ck_assert_int_eq(st.jobs_running, 1);
    ck_assert_int_eq(st.agents_busy, 1);
    /* waited 0 ms: the first bucket */
    ck_assert_int_eq(st.dispatch_buckets[0], 1);
    /* the poll deadline: a parked idle poll answers "no job" after poll_ms */
    ck_assert_int_eq(result(s, a, j, DONE_EMPTY), 200);
    n = 0;
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    advance(19999);
    rx_sched_tick(s);
    ck_assert_int_eq(n, 0);
    advance(1);
    rx_sched_tick(s);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_null(rx_sched_poll_end(s, &w, NULL));
    /* a second poll from the same agent answers the first */
    int n1 = 0, n2 = 0;
    rx_sched_waiter w1, w2;
    rx_sched_poll(s, a, NULL, &w1, count_wake, &n1);
    rx_sched_poll(s, a, NULL, &w2, count_wake, &n2);
    ck_assert_int_eq(n1, 1);
    ck_assert_int_eq(n2, 0);
    rx_sched_poll_end(s, &w1, NULL);
    rx_sched_poll_end(s, &w2, NULL); /* abandoned while parked: unlinked */
    rx_sched_tick(s);
    ck_assert_int_eq(n2, 0);
    rx_sched_close(s);
}
END_TEST

static Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, register_validation);
    tcase_add_test(t, submit_validation);
    tcase_add_test(t, artifact_target_decides);
    tcase_add_test(t, match_target_and_labels);
    tcase_add_test(t, priority_then_fifo);
    tcase_add_test(t, one_job_per_agent);
    tcase_add_test(t, submit_wakes_parked_poll);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return rx_check_run(sched_suite()); }
