/*
 * sched_test.h — fixtures shared by the scheduler tests (test_sched.c: validation,
 * matching, order, wakes; test_sched_life.c: leases, timeouts, cancellation, results,
 * persistence): a fake clock, a scratch jobs database, and one-line wrappers of the
 * rx_sched calls that assert success. Header-only (static functions) so each test file
 * stays one executable.
 */
#ifndef SCHED_TEST_H
#define SCHED_TEST_H

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


typedef struct fake_clock {
    int64_t mono, wall;
} fake_clock;

static fake_clock clk;
static char dir[512];
static char dbpath[600];

static inline int64_t fake_mono(void *ctx) { return ((fake_clock *)ctx)->mono; }
static inline int64_t fake_wall(void *ctx) { return ((fake_clock *)ctx)->wall; }

static inline void advance(int64_t ms)
{
    clk.mono += ms;
    clk.wall += ms;
}

#define ART "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MISSING_ART "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define VULKAN_ART "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

/* The artifact check: everything exists (1234 bytes) but MISSING_ART. */
static inline int fake_artifact(void *ctx, const char *id, int64_t *bytes, char *kind,
                         size_t kind_cap)
{
    (void)ctx;
    if (!strcmp(id, MISSING_ART)) return 1;
    *bytes = 1234;
    /* VULKAN_ART was compiled for vulkan; the others' target is unknown (no check). */
    snprintf(kind, kind_cap, "%s", strcmp(id, VULKAN_ART) ? "" : "vulkan");
    return 0;
}

static inline void setup(void)
{
    clk.mono = 1000000;
    clk.wall = 1700000000000;
    snprintf(dir, sizeof dir, "%s/sched-test-XXXXXX", RX_BINARY_DIR);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/jobs.db", dir);
}

static inline void teardown(void)
{
    char p[700];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", dbpath, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}

static inline rx_sched_opts test_opts(void)
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

static inline rx_sched *open_with(const rx_sched_opts *o)
{
    char err[512] = "";
    rx_sched *s = rx_sched_open(o, err, sizeof err);
    ck_assert_msg(s != NULL, "open: %s", err);
    return s;
}

static inline rx_sched *open_default(void)
{
    rx_sched_opts o = test_opts();
    return open_with(&o);
}

static inline json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    ck_assert_msg(v != NULL, "bad test JSON %s: %s", text, je.text);
    return v;
}

/* Registers an agent from a JSON body; returns its id (static buffer per call site). */
static inline void reg(rx_sched *s, const char *body, char id[RX_SCHED_ID_LEN + 1])
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

static inline void submit(rx_sched *s, const char *body, char id[RX_SCHED_ID_LEN + 1])
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
static inline void submit_fails(rx_sched *s, const char *body, int status, const char *code,
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

static inline void count_wake(void *ctx) { (*(int *)ctx)++; }
static inline void atomic_wake(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

/* A poll that must be answered at once; returns its JOBSPEC (NULL: none). */
static inline json_t *poll_now(rx_sched *s, const char *agent)
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
static inline void take_id(json_t *spec, char id[RX_SCHED_ID_LEN + 1])
{
    ck_assert_ptr_nonnull(spec);
    snprintf(id, RX_SCHED_ID_LEN + 1, "%s", json_string_value(json_object_get(spec, "id")));
    json_decref(spec);
}

static inline json_t *job(rx_sched *s, const char *id)
{
    rx_sched_err e = {0};
    json_t *o = rx_sched_job(s, id, &e);
    ck_assert_msg(o != NULL, "job %s: %s", id, e.message);
    return o;
}

static inline const char *status_of(json_t *o) { return json_string_value(json_object_get(o, "status")); }

static inline void expect_status(rx_sched *s, const char *id, const char *status)
{
    json_t *o = job(s, id);
    ck_assert_str_eq(status_of(o), status);
    json_decref(o);
}

static inline json_int_t int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
    return json_integer_value(v);
}

static inline bool heartbeat_cancel(rx_sched *s, const char *agent, const char *jobid)
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
static inline int result(rx_sched *s, const char *agent, const char *jobid, const char *body)
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

static inline const char *agent_state(rx_sched *s, const char *name, char buf[16])
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

#endif
