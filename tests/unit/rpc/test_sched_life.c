/*
 * test_sched_life.c — the benchmark scheduler after a job is queued: leases, attempts,
 * queue and run timeouts, cancellation, results, re-registration, persistence across
 * close and reopen, refusing files that are not a jobs database, the queue limit and
 * the reaper thread. Fake time as in test_sched.c (sched_test.h).
 */
#include "sched_test.h"

/* ---- leases, attempts, timeouts ---- */

START_TEST(lease_expiry_requeues_then_fails)
{
    rx_sched *s = open_default();
    char a[33], b[33], j[33], got[33], st[16];
    reg(s, CPU_AGENT("lab-1"), a);
    reg(s, CPU_AGENT("lab-2"), b);
    submit(s, JOB_BODY ", \"max_attempts\": 2}", j);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, j);
    /* heartbeats keep a alive */
    for (int i = 0; i < 10; i++) {
        advance(1000);
        ck_assert(!heartbeat_cancel(s, a, j));
        rx_sched_tick(s);
    }
    expect_status(s, j, "running");
    ck_assert(!heartbeat_cancel(s, b, NULL)); /* b stays alive too */
    advance(5001);
    rx_sched_tick(s);
    ck_assert_str_eq(agent_state(s, "lab-1", st), "offline");
    ck_assert_str_eq(agent_state(s, "lab-2", st), "offline");
    json_t *o = job(s, j);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "attempts"), 1);
    json_decref(o);
    /* a comes back: its heartbeat for the lost job says cancel, its result is refused */
    ck_assert(heartbeat_cancel(s, a, j));
    ck_assert_str_eq(agent_state(s, "lab-1", st), "idle");
    ck_assert_int_eq(result(s, a, j, DONE_EMPTY), 409);
    /* b runs it (attempt 2) and is lost too: attempts used up -> agent_lost */
    take_id(poll_now(s, b), got);
    ck_assert_str_eq(got, j);
    advance(5001);
    rx_sched_tick(s);
    o = job(s, j);
    ck_assert_str_eq(status_of(o), "failed");
    json_t *err = json_object_get(o, "error");
    ck_assert_str_eq(json_string_value(json_object_get(err, "code")), "agent_lost");
    const char *msg = json_string_value(json_object_get(err, "message"));
    ck_assert_msg(strstr(msg, "lab-2") && strstr(msg, "2 of 2"), "message %s", msg);
    json_decref(o);
    rx_sched_close(s);
}
END_TEST

START_TEST(parked_poll_keeps_lease)
{
    rx_sched *s = open_default();
    char a[33], st[16];
    reg(s, CPU_AGENT("lab-1"), a);
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    advance(15000); /* longer than the lease, shorter than the poll */
    rx_sched_tick(s);
    ck_assert_str_eq(agent_state(s, "lab-1", st), "idle");
    advance(5000);
    rx_sched_tick(s); /* poll deadline: answered, lease renewed at its end */
    ck_assert_int_eq(n, 1);
    rx_sched_poll_end(s, &w, NULL);
    advance(4000);
    rx_sched_tick(s);
    ck_assert_str_eq(agent_state(s, "lab-1", st), "idle");
    advance(1001);
    rx_sched_tick(s);
    ck_assert_str_eq(agent_state(s, "lab-1", st), "offline");
    rx_sched_stats ss;
    rx_sched_get_stats(s, &ss);
    ck_assert_int_eq(ss.agents_offline, 1);
    rx_sched_close(s);
}
END_TEST

START_TEST(queue_timeout_names_agents)
{
    rx_sched *s = open_default();
    char a[33], j[33], k[33];
    reg(s, CPU_AGENT("lab-x86-1"), a);
    submit(s, JOB_BODY ", \"target\": \"cuda\", \"queue_timeout_s\": 30}", j);
    submit(s, JOB_BODY ", \"target\": \"cuda\", \"labels\": [\"sm90\"]}", k);
    advance(30000);
    rx_sched_tick(s);
    expect_status(s, j, "queued");
    advance(1);
    rx_sched_tick(s);
    json_t *o = job(s, j);
    ck_assert_str_eq(status_of(o), "failed");
    json_t *err = json_object_get(o, "error");
    ck_assert_str_eq(json_string_value(json_object_get(err, "code")), "queue_timeout");
    ck_assert_str_eq(json_string_value(json_object_get(err, "message")),
                     "no agent with target cuda became available within 30 s (agents: "
                     "lab-x86-1 [cpu; x86,avx2] offline)");
    ck_assert(json_is_null(json_object_get(o, "run_ms")));
    ck_assert_int_eq(int_of(o, "queue_ms"), 30001);
    json_decref(o);
    expect_status(s, k, "queued"); /* 600 s default */
    advance(600000);
    rx_sched_tick(s);
    o = job(s, k);
    const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
    ck_assert_msg(strstr(msg, "target cuda and labels sm90"), "%s", msg);
    json_decref(o);
    rx_sched_close(s);
}
END_TEST

START_TEST(run_timeout_cancels_agent)
{
    rx_sched *s = open_default();
    char a[33], j[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY ", \"timeout_s\": 2}", j);
    take_id(poll_now(s, a), got);
    /* timeout 2 s + 5 s grace (the lease); heartbeats keep the agent alive */
    for (int t = 0; t < 7; t++) {
        advance(1000);
        ck_assert(!heartbeat_cancel(s, a, j));
        rx_sched_tick(s);
    }
    expect_status(s, j, "running");
    advance(1);
    rx_sched_tick(s);
    json_t *o = job(s, j);
    ck_assert_str_eq(status_of(o), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "code")),
                     "timeout");
    ck_assert_int_eq(int_of(o, "run_ms"), 7001);
    json_decref(o);
    ck_assert(heartbeat_cancel(s, a, j));
    ck_assert_int_eq(result(s, a, j, "{\"status\": \"failed\", \"error\": {\"code\": \"timeout\","
                                     " \"message\": \"late\"}}"),
                     409);
    rx_sched_close(s);
}
END_TEST

/* ---- cancel and results ---- */

START_TEST(cancel_queued_and_running)
{
    rx_sched *s = open_default();
    char a[33], q[33], r[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY "}", r);
    submit(s, JOB_BODY "}", q);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, r);
    rx_sched_err e = {0};
    json_t *o = rx_sched_cancel(s, q, &e);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(status_of(o), "cancelled");
    json_decref(o);
    ck_assert_ptr_null(rx_sched_cancel(s, q, &e));
    ck_assert_int_eq(e.status, 409);
    ck_assert_str_eq(e.code, "finished");
    o = rx_sched_cancel(s, r, &e);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(json_string_value(json_object_get(o, "agent")), "lab-1");
    json_decref(o);
    ck_assert(heartbeat_cancel(s, a, r));
    ck_assert_int_eq(result(s, a, r, DONE_EMPTY), 409);
    ck_assert_ptr_null(rx_sched_cancel(s, "0123456789abcdef0123456789abcdef", &e));
    ck_assert_int_eq(e.status, 404);
    ck_assert_ptr_null(rx_sched_cancel(s, "bogus/../id", &e));
    ck_assert_int_eq(e.status, 404);
    rx_sched_stats st;
    rx_sched_get_stats(s, &st);
    ck_assert_int_eq(st.jobs_cancelled, 2);
    ck_assert_int_eq(st.jobs_running + st.jobs_queued, 0);
    rx_sched_close(s);
}
END_TEST

START_TEST(results)
{
    rx_sched *s = open_default();
    char a[33], j1[33], j2[33], j3[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY "}", j1);
    submit(s, JOB_BODY "}", j2);
    submit(s, JOB_BODY "}", j3);
    take_id(poll_now(s, a), got);
    /* bad bodies are 400 and leave the job running */
    ck_assert_int_eq(result(s, a, j1, "{\"status\": \"finished\"}"), 400);
    ck_assert_int_eq(result(s, a, j1, "{\"status\": \"done\"}"), 400);
    ck_assert_int_eq(
        result(s, a, j1, "{\"status\": \"done\", \"result\": {\"mean_ms\": \"x\"}}"), 400);
    ck_assert_int_eq(result(s, a, j1, "{\"status\": \"failed\", \"error\": {\"code\": \"a b\","
                                      " \"message\": \"\"}}"),
                     400);
    ck_assert_int_eq(result(s, a, j2, DONE_EMPTY), 409);
    ck_assert_int_eq(result(s, "0123456789abcdef0123456789abcdef", j1, DONE_EMPTY), 404);
    advance(250);
    ck_assert_int_eq(result(s, a, j1, "{\"status\": \"done\", \"result\": {\"mean_ms\": 1.25,"
                                      " \"repeat\": 10, \"kernels\": 3}}"),
                     200);
    json_t *o = job(s, j1);
    ck_assert_str_eq(status_of(o), "done");
    ck_assert(json_real_value(json_object_get(json_object_get(o, "result"), "mean_ms")) == 1.25);
    ck_assert_int_eq(int_of(o, "run_ms"), 250);
    ck_assert_str_eq(json_string_value(json_object_get(o, "agent")), "lab-1");
    ck_assert(json_is_null(json_object_get(o, "error")));
    json_decref(o);
    /* a failed correctness check keeps its statistics */
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, j2);
    ck_assert_int_eq(result(s, a, j2,
                            "{\"status\": \"failed\", \"error\": {\"code\": \"check_failed\","
                            " \"message\": \"max_abs_error 0.5 > atol\"}, \"result\":"
                            " {\"max_abs_error\": 0.5, \"check\": \"failed\"}}"),
                     200);
    o = job(s, j2);
    ck_assert_str_eq(status_of(o), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "code")),
                     "check_failed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "result"), "check")),
                     "failed");
    json_decref(o);
    /* agent_shutdown: re-queued like a lost lease */
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, j3);
    ck_assert_int_eq(result(s, a, j3, "{\"status\": \"failed\", \"error\": {\"code\":"
                                      " \"agent_shutdown\", \"message\": \"SIGTERM\"}}"),
                     200);
    o = job(s, j3);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "attempts"), 1);
    json_decref(o);
    /* the listing: newest first, filters, limits */
    rx_sched_err e = {0};
    json_t *l = rx_sched_jobs(s, NULL, NULL, &e);
    json_t *arr = json_object_get(l, "jobs");
    ck_assert_int_eq(json_array_size(arr), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "id")), j3);
    json_decref(l);
    l = rx_sched_jobs(s, "failed", "5", &e);
    ck_assert_int_eq(json_array_size(json_object_get(l, "jobs")), 1);
    json_decref(l);
    l = rx_sched_jobs(s, NULL, "1", &e);
    ck_assert_int_eq(json_array_size(json_object_get(l, "jobs")), 1);
    json_decref(l);
    ck_assert_ptr_null(rx_sched_jobs(s, "sleeping", NULL, &e));
    ck_assert_int_eq(e.status, 400);
    ck_assert_ptr_null(rx_sched_jobs(s, NULL, "0", &e));
    ck_assert_ptr_null(rx_sched_jobs(s, NULL, "10x", &e));
    ck_assert_ptr_null(rx_sched_jobs(s, NULL, "", &e));
    ck_assert_int_eq(e.status, 400);
    rx_sched_close(s);
}
END_TEST

START_TEST(reregister_and_undelivered)
{
    rx_sched *s = open_default();
    char a[33], a2[33], j[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY "}", j);
    take_id(poll_now(s, a), got);
    reg(s, CPU_AGENT("lab-1"), a2); /* it restarted */
    ck_assert_str_eq(a, a2);
    json_t *o = job(s, j);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "attempts"), 1);
    json_decref(o);
    /* an assignment whose reply never reached the agent: back, attempt not counted */
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    ck_assert_int_eq(n, 1);
    json_t *spec = rx_sched_poll_end(s, &w, NULL);
    ck_assert_ptr_nonnull(spec);
    json_decref(spec);
    expect_status(s, j, "running");
    rx_sched_poll_undelivered(s, &w);
    o = job(s, j);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "attempts"), 1);
    json_decref(o);
    /* once the agent spoke of the job, a failed reply no longer takes it back */
    rx_sched_poll(s, a, NULL, &w, count_wake, &n);
    json_decref(rx_sched_poll_end(s, &w, NULL));
    ck_assert(!heartbeat_cancel(s, a, j));
    rx_sched_poll_undelivered(s, &w);
    expect_status(s, j, "running");
    rx_sched_close(s);
}
END_TEST

/* ---- persistence ---- */

START_TEST(restart_keeps_queued_requeues_running)
{
    rx_sched_opts opts = test_opts();
    rx_sched *s = open_with(&opts);
    char a[33], run[33], q1[33], q2[33], last[33], done[33], got[33];
    reg(s, CPU_AGENT("lab-1"), a);
    submit(s, JOB_BODY "}", done);
    take_id(poll_now(s, a), got);
    ck_assert_int_eq(
        result(s, a, done, "{\"status\": \"done\", \"result\": {\"mean_ms\": 2}}"), 200);
    submit(s, JOB_BODY ", \"priority\": 9}", run);
    submit(s, JOB_BODY ", \"labels\": [\"none\"]}", q1);
    submit(s, JOB_BODY ", \"max_attempts\": 1, \"labels\": [\"x86\"]}", last);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, run);
    reg(s, CPU_AGENT("lab-2"), got);
    take_id(poll_now(s, got), q2);
    ck_assert_str_eq(q2, last);
    rx_sched_close(s);

    advance(60000);
    s = open_with(&opts);
    json_t *o = job(s, run);
    ck_assert_str_eq(status_of(o), "queued");
    ck_assert_int_eq(int_of(o, "attempts"), 1);
    ck_assert_int_eq(int_of(o, "position"), 0);
    ck_assert(json_is_null(json_object_get(o, "agent")));
    json_decref(o);
    expect_status(s, q1, "queued");
    o = job(s, last); /* one attempt allowed, used: failed */
    ck_assert_str_eq(status_of(o), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "code")),
                     "agent_lost");
    json_decref(o);
    o = job(s, done);
    ck_assert_str_eq(status_of(o), "done");
    ck_assert_int_eq(int_of(json_object_get(o, "result"), "mean_ms"), 2);
    json_decref(o);
    rx_sched_stats st;
    rx_sched_get_stats(s, &st);
    ck_assert_int_eq(st.jobs_queued, 2);
    ck_assert_int_eq(st.jobs_running, 0);
    ck_assert_int_eq(st.jobs_done, 1);
    ck_assert_int_eq(st.jobs_failed, 1);
    /* agents are gone; a new registration gets the re-queued job first (priority 9) */
    rx_sched_err e = {0};
    ck_assert_ptr_null(rx_sched_heartbeat(s, a, NULL, &e));
    ck_assert_str_eq(e.code, "unknown_agent");
    reg(s, CPU_AGENT("lab-1"), a);
    take_id(poll_now(s, a), got);
    ck_assert_str_eq(got, run);
    /* the queue time of a job still queued counts across the restart */
    o = job(s, q1);
    ck_assert_int_ge(int_of(o, "queue_ms"), 60000);
    json_decref(o);
    rx_sched_close(s);

    /* history: only the newest finished job is kept */
    opts.history = 1;
    s = open_with(&opts);
    rx_sched_get_stats(s, &st);
    ck_assert_int_eq(st.jobs_done + st.jobs_failed + st.jobs_cancelled, 1);
    ck_assert_ptr_null(rx_sched_job(s, done, &e));
    ck_assert_int_eq(e.status, 404);
    rx_sched_close(s);
}
END_TEST

static void write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static void open_fails(const char *needle)
{
    rx_sched_opts o = test_opts();
    char err[512] = "";
    rx_sched *s = rx_sched_open(&o, err, sizeof err);
    ck_assert_msg(s == NULL, "opened");
    ck_assert_msg(strstr(err, dbpath) && strstr(err, needle), "message: %s", err);
}

START_TEST(bad_database_files)
{
    /* garbage */
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 7 + 3);
    write_file(dbpath, junk, sizeof junk);
    open_fails("move it aside");
    /* a database of a newer schema */
    unlink(dbpath);
    rx_sched *s = open_default();
    rx_sched_close(s);
    {
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    open_fails("newer");
    /* another program's database claiming our version */
    char p[700];
    snprintf(p, sizeof p, "%s-wal", dbpath);
    unlink(p);
    unlink(dbpath);
    {
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE other(x); PRAGMA user_version = 1", NULL,
                                      NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    open_fails("not a relaxd jobs database");
    /* a truncated database (a valid header, pages missing) */
    unlink(dbpath);
    s = open_default();
    char id[33];
    for (int i = 0; i < 50; i++)
        submit(s, JOB_BODY ", \"function\": \"a_fairly_long_function_name_to_fill_pages\"}", id);
    rx_sched_close(s);
    FILE *f = fopen(dbpath, "rb");
    ck_assert_ptr_nonnull(f);
    char head[4096];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    ck_assert_int_gt(n, 100);
    memset(head + 100, 0xA5, n - 100); /* the first page's b-tree destroyed */
    write_file(dbpath, head, n);
    open_fails("jobs database");
}
END_TEST

START_TEST(queue_limit_and_stop)
{
    rx_sched_opts o = test_opts();
    o.max_queued = 2;
    rx_sched *s = open_with(&o);
    char j[33];
    submit(s, JOB_BODY "}", j);
    submit(s, JOB_BODY "}", j);
    submit_fails(s, JOB_BODY "}", 503, "queue_full", "2 benchmark jobs");
    rx_sched_stop(s);
    json_t *b = parse(JOB_BODY "}");
    rx_sched_err e = {0};
    ck_assert_ptr_null(rx_sched_submit(s, b, fake_artifact, NULL, &e));
    ck_assert_str_eq(e.code, "shutting_down");
    json_decref(b);
    rx_sched_close(s);
}
END_TEST

START_TEST(reaper_thread_runs)
{
    /* the real clock and the reaper thread: a 150 ms poll answers by itself */
    rx_sched_opts o;
    rx_sched_opts_default(&o);
    o.db_path = dbpath;
    o.poll_ms = 150;
    o.tick_ms = 20;
    rx_sched *s = open_with(&o);
    char a[33];
    reg(s, CPU_AGENT("lab-1"), a);
    rx_sched_waiter w;
    atomic_int n = 0;
    rx_sched_poll(s, a, NULL, &w, atomic_wake, &n);
    for (int i = 0; i < 200 && !atomic_load(&n); i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    ck_assert_int_eq(atomic_load(&n), 1);
    rx_sched_poll_end(s, &w, NULL);
    rx_sched_close(s);
}
END_TEST

static Suite *sched_life_suite(void)
{
    Suite *s = suite_create("sched_life");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, lease_expiry_requeues_then_fails);
    tcase_add_test(t, parked_poll_keeps_lease);
    tcase_add_test(t, queue_timeout_names_agents);
    tcase_add_test(t, run_timeout_cancels_agent);
    tcase_add_test(t, cancel_queued_and_running);
    tcase_add_test(t, results);
    tcase_add_test(t, reregister_and_undelivered);
    tcase_add_test(t, restart_keeps_queued_requeues_running);
    tcase_add_test(t, bad_database_files);
    tcase_add_test(t, queue_limit_and_stop);
    tcase_add_test(t, reaper_thread_runs);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return rx_check_run(sched_life_suite()); }
