/*
 * test_sched.c — the benchmark scheduler (rpc/include/relax/sched.h) without HTTP:
 * validation, matching by target and labels, priority and FIFO order, one job per
 * agent, parked polls woken by submissions, leases, attempts, queue and run timeouts,
 * cancellation, results, persistence across close and reopen, and refusing files that
 * are not a jobs database.
 *
 * Time is fake: the scheduler reads a counter the tests advance, and the tests run
 * rx_sched_tick themselves (manual_tick), so nothing sleeps.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../rx_check.h"
#include "relax/sched.h"
#include "relax/base.h"

/* ---- fixtures ---- */

typedef struct fake_clock {
    int64_t mono, wall;
} fake_clock;

static fake_clock clk;
static char dir[512];
static char dbpath[600];

static int64_t fake_mono(void *ctx) { return ((fake_clock *)ctx)->mono; }
static int64_t fake_wall(void *ctx) { return ((fake_clock *)ctx)->wall; }

static void advance(int64_t ms)
{
    clk.mono += ms;
    clk.wall += ms;
}

#define ART "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MISSING_ART "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define VULKAN_ART "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

/* The artifact check: everything exists (1234 bytes) but MISSING_ART. */
static int fake_artifact(void *ctx, const char *id, int64_t *bytes, char *kind,
                         size_t kind_cap)
{
    (void)ctx;
    if (!strcmp(id, MISSING_ART)) return 1;
    *bytes = 1234;
    /* VULKAN_ART was compiled for vulkan; the others' target is unknown (no check). */
    snprintf(kind, kind_cap, "%s", strcmp(id, VULKAN_ART) ? "" : "vulkan");
    return 0;
}

static void setup(void)
{
    clk.mono = 1000000;
    clk.wall = 1700000000000;
    snprintf(dir, sizeof dir, "%s/sched-test-XXXXXX", RX_BINARY_DIR);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/jobs.db", dir);
}

static void teardown(void)
{
    char p[700];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", dbpath, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}

static rx_sched_opts test_opts(void)
{
    rx_sched_opts o;
    rx_sched_opts_default(&o);
    o.db_path = dbpath;
    o.now_ms = fake_mono;
    o.wall_ms = fake_wall;
    o.clock_ctx = &clk;
    o.manual_tick = true;
    return o;
}

static rx_sched *open_with(const rx_sched_opts *o)
{
    char err[512] = "";
    rx_sched *s = rx_sched_open(o, err, sizeof err);
    ck_assert_msg(s != NULL, "open: %s", err);
    return s;
}

static rx_sched *open_default(void)
{
    rx_sched_opts o = test_opts();
    return open_with(&o);
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    ck_assert_msg(v != NULL, "bad test JSON %s: %s", text, je.text);
    return v;
}

/* Registers an agent from a JSON body; returns its id (static buffer per call site). */
static void reg(rx_sched *s, const char *body, char id[RX_SCHED_ID_LEN + 1])
{
    json_t *b = parse(body);
    rx_sched_err e = {0};
    json_t *r = rx_sched_register(s, b, &e);
    ck_assert_msg(r != NULL, "register: %s", e.message);
    snprintf(id, RX_SCHED_ID_LEN + 1, "%s", json_string_value(json_object_get(r, "agent")));
    ck_assert(rx_sched_valid_id(id));
    json_decref(r);
    json_decref(b);
}

static void submit(rx_sched *s, const char *body, char id[RX_SCHED_ID_LEN + 1])
{
    json_t *b = parse(body);
    rx_sched_err e = {0};
    json_t *r = rx_sched_submit(s, b, fake_artifact, NULL, &e);
    ck_assert_msg(r != NULL, "submit: %s", e.message);
    snprintf(id, RX_SCHED_ID_LEN + 1, "%s", json_string_value(json_object_get(r, "job")));
    json_decref(r);
    json_decref(b);
}

/* A submission that must fail with status and code, its message containing needle. */
static void submit_fails(rx_sched *s, const char *body, int status, const char *code,
                         const char *needle)
{
    json_t *b = parse(body);
    rx_sched_err e = {0};
    json_t *r = rx_sched_submit(s, b, fake_artifact, NULL, &e);
    ck_assert_msg(r == NULL, "accepted: %s", body);
    ck_assert_int_eq(e.status, status);
    ck_assert_str_eq(e.code, code);
    ck_assert_msg(strstr(e.message, needle), "message \"%s\" lacks \"%s\"", e.message, needle);
    json_decref(b);
}

static void count_wake(void *ctx) { (*(int *)ctx)++; }
static void atomic_wake(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

/* A poll that must be answered at once; returns its JOBSPEC (NULL: none). */
static json_t *poll_now(rx_sched *s, const char *agent)
{
    rx_sched_waiter w;
    int n = 0;
    rx_sched_poll(s, agent, NULL, &w, count_wake, &n);
    ck_assert_msg(n == 1, "the poll was parked");
    rx_sched_err e = {0};
    json_t *job = rx_sched_poll_end(s, &w, &e);
    ck_assert_msg(e.status == 0, "poll: %s", e.message);
    return job;
}

/* The job's id out of a JOBSPEC, then frees the spec. */
static void take_id(json_t *spec, char id[RX_SCHED_ID_LEN + 1])
{
    ck_assert_ptr_nonnull(spec);
    snprintf(id, RX_SCHED_ID_LEN + 1, "%s", json_string_value(json_object_get(spec, "id")));
    json_decref(spec);
}

static json_t *job(rx_sched *s, const char *id)
{
    rx_sched_err e = {0};
    json_t *o = rx_sched_job(s, id, &e);
    ck_assert_msg(o != NULL, "job %s: %s", id, e.message);
    return o;
}

static const char *status_of(json_t *o) { return json_string_value(json_object_get(o, "status")); }

static void expect_status(rx_sched *s, const char *id, const char *status)
{
    json_t *o = job(s, id);
    ck_assert_str_eq(status_of(o), status);
    json_decref(o);
}

static json_int_t int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
    return json_integer_value(v);
}

static bool heartbeat_cancel(rx_sched *s, const char *agent, const char *jobid)
{
    json_t *b = jobid ? json_pack("{s:s}", "job", jobid) : json_pack("{s:n}", "job");
    rx_sched_err e = {0};
    json_t *r = rx_sched_heartbeat(s, agent, b, &e);
    ck_assert_msg(r != NULL, "heartbeat: %s", e.message);
    bool c = json_is_true(json_object_get(r, "cancel"));
    json_decref(r);
    json_decref(b);
    return c;
}

/* Reports a result; returns the status (200 accepted, else the error's). */
static int result(rx_sched *s, const char *agent, const char *jobid, const char *body)
{
    json_t *b = parse(body);
    rx_sched_err e = {0};
    json_t *r = rx_sched_result(s, agent, jobid, b, &e);
    json_decref(b);
    if (r) {
        ck_assert(json_is_true(json_object_get(r, "accepted")));
        json_decref(r);
        return 200;
    }
    return e.status;
}

static const char *agent_state(rx_sched *s, const char *name, char buf[16])
{
    json_t *all = rx_sched_agents(s);
    size_t i;
    json_t *a;
    buf[0] = '\0';
    json_array_foreach(json_object_get(all, "agents"), i, a) {
        if (!strcmp(json_string_value(json_object_get(a, "name")), name))
            snprintf(buf, 16, "%s", json_string_value(json_object_get(a, "state")));
    }
    json_decref(all);
    return buf;
}

#define CPU_AGENT(name)                                                                   \
    "{\"name\": \"" name "\", \"targets\": [\"cpu\"], \"labels\": [\"x86\", \"avx2\"],"            \
    " \"cores\": 2, \"protocol\": 1}"
#define DONE_EMPTY "{\"status\": \"done\", \"result\": {}}"
#define JOB_BODY "{\"artifact\": \"" ART "\""

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

int main(void) { return rx_check_run(sched_suite()); }
