/*
 * sched.c — the benchmark scheduler (sched.h): agents, parked polls, matching, leases,
 * timeouts, cancellation and the reaper.
 *
 * State. Under one mutex: the agents (in memory only), the active jobs (queued and
 * running; finished ones live in the database only), the parked polls (oldest first)
 * and the gauges. Each transition is written to the database (jobs_db.c) first and
 * applied in memory only when the commit succeeded, so memory never runs ahead of
 * what a restart would load; a failed write is answered 500 store_error (requests)
 * or retried on the next tick (the reaper).
 *
 * Matching. A job fits an agent when job.target is one of the agent's targets and
 * every job label is one of its labels. Jobs are handed out only to polling agents:
 *   - a poll takes the best fitting queued job (priority desc, then submission order)
 *     at once, or parks;
 *   - a submission (or a re-queue) offers the job to the parked polls, oldest first,
 *     and wakes the first that fits — so an idle agent gets a new job within one
 *     commit and one resume of its connection (dispatch latency, docs/rpc.md).
 * An agent runs at most one job: assignment needs it polling, and a poll from an agent
 * that still runs a job re-queues that job first (the agent gave it up).
 *
 * Liveness. Every agent request renews its lease (last_seen); a parked poll counts as
 * alive for as long as it is parked (its connection is open), and its end renews the
 * lease. The reaper, every tick_ms, marks agents silent for lease_ms offline and
 * re-queues their job: attempts counts runs started, and a job whose attempts are used
 * up fails "agent_lost" instead, naming the agent and the attempts. A queued job
 * waiting longer than its queue_timeout_s fails "queue_timeout" with a message naming
 * the target, labels and the agents that exist; a running job past timeout_s plus
 * lease_ms of grace fails "timeout" on the server even if its agent never reports.
 *
 * Cancellation needs no message to the agent: a heartbeat naming a job that is not
 * (any more) running on that agent answers cancel=true — cancelled, timed out, or
 * re-queued after a lost lease all look the same to the agent: stop, report nothing.
 * A result for such a job is 409 not_assigned and dropped.
 *
 * Waiters. rx_sched_poll links the caller's rx_sched_waiter; whoever answers it
 * (an assignment, the deadline in the reaper, a newer poll or registration of the same
 * agent, stop) unlinks it and calls wake exactly once, under the mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "relax/base.h"
#include "sched_int.h"

#define PRUNE_EVERY_MS 10000
#define QUEUE_TIMEOUT_AGENTS 8 /* agents named in a queue_timeout message */

const double rx_sched_dispatch_bounds[RX_SCHED_DISPATCH_BUCKETS] = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 10, 60};


/* ---- clocks and logs ---- */

int64_t sc_now_ms(const rx_sched *s)
{
    return s->o.now_ms ? s->o.now_ms(s->o.clock_ctx) : rx_now_ms_int();
}

static int64_t wall_ms(const rx_sched *s)
{
    return s->o.wall_ms ? s->o.wall_ms(s->o.clock_ctx) : rx_wall_ms();
}

void sc_slog(rx_sched *s, int level, json_t *obj)
{
    if (s->o.log && obj) s->o.log(s->o.log_ctx, level, obj);
    else json_decref(obj);
}

void sc_log_db_error(rx_sched *s, const char *msg)
{
    sc_slog(s, RX_SCHED_LOG_ERROR, json_pack("{s:s, s:s}", "event", "jobs_db_error", "message", msg));
}

void sc_random_id(char out[RX_SCHED_ID_LEN + 1])
{
    uint8_t b[RX_SCHED_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0 && errno == EINTR) continue;
        RX_ASSERT(r > 0);
        got += (size_t)r;
    }
    rx_hex(b, sizeof b, out);
}

bool rx_sched_valid_id(const char *id)
{
    return id && strlen(id) == RX_SCHED_ID_LEN && strspn(id, "0123456789abcdef") == RX_SCHED_ID_LEN;
}

void rx_sched_opts_default(rx_sched_opts *o)
{
    memset(o, 0, sizeof *o);
    o->heartbeat_ms = 1000;
    o->lease_ms = 5000;
    o->poll_ms = 20000;
    o->timeout_s = 60;
    o->queue_timeout_s = 600;
    o->max_attempts = 3;
    o->max_queued = 10000;
    o->max_agents = 1024;
    o->history = 100000;
    o->tick_ms = 100;
}

/* ---- jobs and agents in memory ---- */

void sjob_free(sjob *j)
{
    if (!j) return;
    json_decref(j->labels);
    json_decref(j->spec);
    json_decref(j->data);
    free(j);
}

void sc_agent_free(sagent *a)
{
    json_decref(a->targets);
    json_decref(a->labels);
    json_decref(a->facts);
    free(a);
}

sagent *sc_find_agent(rx_sched *s, const char *id)
{
    for (int i = 0; i < s->agents.n; i++)
        if (!strcmp(s->agents.items[i]->id, id)) return s->agents.items[i];
    return NULL;
}

sjob *sc_find_active(rx_sched *s, const char *id)
{
    for (int i = 0; i < s->active.n; i++)
        if (!strcmp(s->active.items[i]->id, id)) return s->active.items[i];
    return NULL;
}

static void remove_active(rx_sched *s, sjob *j)
{
    for (int i = 0; i < s->active.n; i++)
        if (s->active.items[i] == j) {
            memmove(&s->active.items[i], &s->active.items[i + 1],
                    (size_t)(s->active.n - i - 1) * sizeof *s->active.items);
            s->active.n--;
            return;
        }
}

static bool has_string(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!strcmp(json_string_value(v), s)) return true;
    }
    return false;
}

bool sc_fits(const sagent *a, const sjob *j)
{
    if (!has_string(a->targets, j->target)) return false;
    size_t i;
    json_t *v;
    json_array_foreach(j->labels, i, v) {
        if (!has_string(a->labels, json_string_value(v))) return false;
    }
    return true;
}

/* True when a goes before b in dispatch order: priority desc, then submission order. */
bool sc_before(const sjob *a, const sjob *b)
{
    return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}

const char *sc_agent_state(const sagent *a)
{
    return a->offline ? "offline" : a->job ? "busy" : "idle";
}

/* ---- waiters ---- */

void sc_waiter_unlink_locked(rx_sched *s, rx_sched_waiter *w)
{
    if (!w->linked) return;
    if (w->prev) w->prev->next = w->next;
    else s->whead = w->next;
    if (w->next) w->next->prev = w->prev;
    else s->wtail = w->prev;
    w->prev = w->next = NULL;
    w->linked = false;
    sagent *a = sc_find_agent(s, w->agent);
    if (a && a->waiter == w) {
        a->waiter = NULL;
        a->last_seen = sc_now_ms(s); /* the poll was alive until now */
    }
}

/* Answers w (its job, error or nothing already set) and wakes its request. */
void sc_waiter_wake_locked(rx_sched *s, rx_sched_waiter *w)
{
    sc_waiter_unlink_locked(s, w);
    if (w->woken) return;
    w->woken = true;
    w->wake(w->ctx);
}

/* ---- transitions ---- */

void sc_set_state_count(rx_sched *s, sj_state from, sj_state to)
{
    s->counts[from]--;
    s->counts[to]++;
}

/* What the agent runs: the JOBSPEC of docs/rpc.md (new reference). */
static json_t *jobspec(const sjob *j)
{
    char url[96];
    snprintf(url, sizeof url, "/v1/artifacts/%s", j->artifact);
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I}", "id", j->id, "artifact", j->artifact,
                          "artifact_url", url, "artifact_bytes", (json_int_t)j->artifact_bytes,
                          "timeout_ms", (json_int_t)j->timeout_s * 1000);
    json_t *spec = json_deep_copy(j->spec);
    json_object_update(o, spec);
    json_decref(spec);
    if (j->data) {
        json_t *data = json_deep_copy(j->data);
        json_object_update(o, data);
        json_decref(data);
    }
    return o;
}

static void observe_dispatch(rx_sched *s, double seconds)
{
    for (int i = 0; i < RX_SCHED_DISPATCH_BUCKETS; i++)
        if (seconds <= rx_sched_dispatch_bounds[i]) {
            s->dbuckets[i]++;
            break;
        }
    s->dcount++;
    s->dsum += seconds;
}

/* Assigns queued job j to agent a (committed); returns the JOBSPEC, or NULL when the
 * database refused (nothing changed). */
json_t *sc_assign_locked(rx_sched *s, sjob *j, sagent *a)
{
    char err[320];
    int64_t now = sc_now_ms(s);
    j->attempts++;
    if (jdb_assign(s->db, j, a->name, wall_ms(s), err, sizeof err)) {
        j->attempts--;
        sc_log_db_error(s, err);
        return NULL;
    }
    j->state = SJ_RUNNING;
    j->agent = a;
    j->started_mono = now;
    j->heard = false;
    a->job = j;
    a->offline = false;
    sc_set_state_count(s, SJ_QUEUED, SJ_RUNNING);
    int64_t waited = now - j->enqueued_mono;
    observe_dispatch(s, (double)(waited > 0 ? waited : 0) / 1e3);
    sc_slog(s, RX_SCHED_LOG_INFO,
         json_pack("{s:s, s:s, s:s, s:s, s:i, s:I}", "event", "bench_assigned", "job", j->id,
                   "agent", a->id, "name", a->name, "attempt", j->attempts, "queue_ms",
                   (json_int_t)waited));
    return jobspec(j);
}

/* Offers queued job j to the parked polls, oldest first; the first that fits gets it. */
void sc_dispatch_locked(rx_sched *s, sjob *j)
{
    for (rx_sched_waiter *w = s->whead; w && j->state == SJ_QUEUED; w = w->next) {
        sagent *a = sc_find_agent(s, w->agent);
        if (!a || a->job || !sc_fits(a, j)) continue;
        json_t *spec = sc_assign_locked(s, j, a);
        if (!spec) return;
        w->job = spec;
        snprintf(w->job_id, sizeof w->job_id, "%s", j->id);
        sc_waiter_wake_locked(s, w);
        return;
    }
}

/* Finishes active job j in state st (committed), frees it. 0, or -1 (logged, nothing
 * changed). result and error are borrowed. */
int sc_finish_locked(rx_sched *s, sjob *j, sj_state st, const json_t *result,
                         const json_t *error)
{
    char err[320];
    if (jdb_finish(s->db, j->id, st, result, error, wall_ms(s), err, sizeof err)) {
        sc_log_db_error(s, err);
        return -1;
    }
    sc_set_state_count(s, j->state, st);
    json_t *line = json_pack("{s:s, s:s, s:s, s:s?, s:i}", "event", "bench_finished", "job",
                             j->id, "status", sj_state_name(st), "agent",
                             j->agent ? j->agent->name : NULL, "attempts", j->attempts);
    if (error) json_object_set(line, "error", json_object_get(error, "code"));
    sc_slog(s, st == SJ_DONE ? RX_SCHED_LOG_INFO : RX_SCHED_LOG_WARN, line);
    if (j->agent && j->agent->job == j) j->agent->job = NULL;
    remove_active(s, j);
    sjob_free(j);
    return 0;
}

/* Running job j lost its agent (why: "agent X was lost (...)"): back to the queue, or
 * failed agent_lost when its attempts are used up. 0 or -1 (logged). */
int sc_requeue_or_fail_locked(rx_sched *s, sjob *j, const char *why)
{
    if (j->attempts >= j->max_attempts) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s; %d of %d attempts used", why, j->attempts,
                 j->max_attempts);
        json_t *e = json_pack("{s:s, s:s}", "code", "agent_lost", "message", msg);
        int r = sc_finish_locked(s, j, SJ_FAILED, NULL, e);
        json_decref(e);
        return r;
    }
    char err[320];
    int64_t wall = wall_ms(s);
    if (jdb_requeue(s->db, j, wall, err, sizeof err)) {
        sc_log_db_error(s, err);
        return -1;
    }
    sc_slog(s, RX_SCHED_LOG_WARN,
         json_pack("{s:s, s:s, s:s?, s:s, s:i}", "event", "bench_requeued", "job", j->id,
                   "agent", j->agent ? j->agent->name : NULL, "reason", why, "attempts",
                   j->attempts));
    if (j->agent && j->agent->job == j) j->agent->job = NULL;
    j->agent = NULL;
    j->state = SJ_QUEUED;
    j->enqueued_mono = sc_now_ms(s);
    j->enqueued_wall = wall;
    sc_set_state_count(s, SJ_RUNNING, SJ_QUEUED);
    sc_dispatch_locked(s, j);
    return 0;
}

/* ---- open and close ---- */

static void load_one(void *ctx, sjob *j)
{
    rx_sched *s = ctx;
    /* a deadline in monotonic time from the wall-clock time it was queued */
    j->enqueued_mono = sc_now_ms(s) - (wall_ms(s) - j->enqueued_wall);
    RX_VEC_PUSH(s->active, j);
}

static void *reaper_main(void *arg)
{
    rx_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        pthread_mutex_unlock(&s->mu);
        rx_sched_tick(s);
        pthread_mutex_lock(&s->mu);
        if (s->stopping) break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += (long)s->o.tick_ms * 1000000L;
        t.tv_sec += t.tv_nsec / 1000000000L;
        t.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &t);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

rx_sched *rx_sched_open(const rx_sched_opts *o, char *err, size_t errlen)
{
    if (!o->db_path || o->lease_ms <= 0 || o->poll_ms <= 0 || o->heartbeat_ms <= 0 ||
        o->max_queued <= 0 || o->max_agents <= 0 || o->max_attempts <= 0) {
        snprintf(err, errlen, "scheduler options: a database path and positive limits are needed");
        return NULL;
    }
    rx_sched *s = calloc(1, sizeof *s);
    RX_ASSERT(s);
    s->o = *o;
    if (s->o.tick_ms <= 0) s->o.tick_ms = 100;
    s->db_path = rx_xstrdup(o->db_path);
    s->o.db_path = s->db_path;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->db = jdb_open(o->db_path, wall_ms(s), err, errlen);
    if (!s->db || jdb_prune(s->db, s->o.history, err, errlen) < 0 ||
        jdb_load_queued(s->db, load_one, s, err, errlen) ||
        jdb_counts(s->db, s->counts, err, errlen)) {
        rx_sched_close(s);
        return NULL;
    }
    s->next_prune = sc_now_ms(s) + PRUNE_EVERY_MS;
    sc_slog(s, RX_SCHED_LOG_INFO,
         json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "event", "jobs_db_open", "path",
                   o->db_path, "queued", (json_int_t)s->counts[SJ_QUEUED], "done",
                   (json_int_t)s->counts[SJ_DONE], "failed", (json_int_t)s->counts[SJ_FAILED],
                   "cancelled", (json_int_t)s->counts[SJ_CANCELLED]));
    if (!o->manual_tick) {
        int e = pthread_create(&s->reaper, NULL, reaper_main, s);
        if (e) {
            snprintf(err, errlen, "cannot start the scheduler's reaper: %s", strerror(e));
            rx_sched_close(s);
            return NULL;
        }
        s->reaper_started = true;
    }
    return s;
}

void rx_sched_stop(rx_sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    while (s->whead) sc_waiter_wake_locked(s, s->whead);
    pthread_cond_broadcast(&s->cv);
    bool join = s->reaper_started;
    s->reaper_started = false;
    pthread_mutex_unlock(&s->mu);
    if (join) pthread_join(s->reaper, NULL);
}

void rx_sched_close(rx_sched *s)
{
    if (!s) return;
    rx_sched_stop(s);
    for (int i = 0; i < s->agents.n; i++) sc_agent_free(s->agents.items[i]);
    RX_VEC_FREE(s->agents);
    for (int i = 0; i < s->active.n; i++) sjob_free(s->active.items[i]);
    RX_VEC_FREE(s->active);
    jdb_close(s->db);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->db_path);
    free(s);
}

/* ---- clients ---- */

json_t *rx_sched_submit(rx_sched *s, const json_t *body, rx_sched_artifact_fn artifact,
                        void *actx, rx_sched_err *e)
{
    sv_defaults d = {s->o.timeout_s, s->o.queue_timeout_s, s->o.max_attempts};
    sjob *j = sv_submit(body, &d, e);
    if (!j) return NULL;
    char kind[RX_SCHED_NAME_MAX + 1] = "";
    int r = artifact(actx, j->artifact, &j->artifact_bytes, kind, sizeof kind);
    if (r == 0 && kind[0] && !j->target_given) {
        snprintf(j->target, sizeof j->target, "%s", kind);
    } else if (r == 0 && kind[0] && strcmp(kind, j->target)) {
        sv_fail(e, 409, "target_mismatch",
                "target: the job names %s but artifact %.12s was compiled for %s "
                "(omit target, or compile the module for %s)",
                j->target, j->artifact, kind, j->target);
        sjob_free(j);
        return NULL;
    }
    if (r) {
        sjob_free(j);
        if (r > 0)
            sv_fail(e, 404, "not_found",
                    "artifact: no such artifact on this server (compile the module first)");
        else
            sv_fail(e, 500, "store_error", "the artifact store failed (see the log)");
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    if (s->stopping || s->active.n >= s->o.max_queued) {
        pthread_mutex_unlock(&s->mu);
        if (s->stopping) sv_fail(e, 503, "shutting_down", "the server is shutting down");
        else
            sv_fail(e, 503, "queue_full", "%d benchmark jobs are queued or running (the limit)",
                    s->o.max_queued);
        sjob_free(j);
        return NULL;
    }
    sc_random_id(j->id);
    char err[320];
    int64_t wall = wall_ms(s);
    j->state = SJ_QUEUED;
    j->enqueued_mono = sc_now_ms(s);
    j->enqueued_wall = wall;
    if (jdb_insert(s->db, j, wall, err, sizeof err)) {
        pthread_mutex_unlock(&s->mu);
        sc_log_db_error(s, err);
        sjob_free(j);
        sv_fail(e, 500, "store_error", "the jobs database failed (see the log)");
        return NULL;
    }
    RX_VEC_PUSH(s->active, j);
    s->counts[SJ_QUEUED]++;
    sc_slog(s, RX_SCHED_LOG_INFO,
         json_pack("{s:s, s:s, s:s, s:s, s:O, s:i}", "event", "bench_submitted", "job", j->id,
                   "artifact", j->artifact, "target", j->target, "labels", j->labels,
                   "priority", j->priority));
    sc_dispatch_locked(s, j);
    json_t *out = json_pack("{s:s, s:s}", "job", j->id, "status", sj_state_name(j->state));
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* Adds "position" (queued jobs ahead in dispatch order) to a queued job's object. */
static void add_position_locked(rx_sched *s, json_t *o)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    sjob *j = id ? sc_find_active(s, id) : NULL;
    if (!j || j->state != SJ_QUEUED) return;
    int ahead = 0;
    for (int i = 0; i < s->active.n; i++) {
        sjob *k = s->active.items[i];
        if (k != j && k->state == SJ_QUEUED && sc_before(k, j)) ahead++;
    }
    json_object_set_new(o, "position", json_integer(ahead));
}

static json_t *job_locked(rx_sched *s, const char *id, rx_sched_err *e)
{
    char err[320];
    bool found = false;
    json_t *o = jdb_job_json(s->db, id, wall_ms(s), &found, err, sizeof err);
    if (!o) {
        if (found) {
            sc_log_db_error(s, err);
            sv_fail(e, 500, "store_error", "the jobs database failed (see the log)");
        } else {
            sv_fail(e, 404, "not_found", "no such benchmark job");
        }
        return NULL;
    }
    add_position_locked(s, o);
    return o;
}

json_t *rx_sched_job(rx_sched *s, const char *id, rx_sched_err *e)
{
    if (!rx_sched_valid_id(id)) {
        sv_fail(e, 404, "not_found", "no such benchmark job");
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    json_t *o = job_locked(s, id, e);
    pthread_mutex_unlock(&s->mu);
    return o;
}

json_t *rx_sched_jobs(rx_sched *s, const char *status, const char *limit, rx_sched_err *e)
{
    sj_state st = SJ_NSTATES;
    if (status && !sj_state_parse(status, &st)) {
        sv_fail(e, 400, "bad_request",
                "status: expected one of queued, running, done, failed, cancelled");
        return NULL;
    }
    long n = 50;
    if (limit) {
        char *end;
        errno = 0;
        n = strtol(limit, &end, 10);
        if (!*limit || *end || errno || n < 1 || n > 1000) {
            sv_fail(e, 400, "bad_request", "limit: expected an integer 1..1000");
            return NULL;
        }
    }
    char err[320];
    pthread_mutex_lock(&s->mu);
    json_t *arr = jdb_jobs_json(s->db, st, (int)n, wall_ms(s), err, sizeof err);
    if (arr) {
        size_t i;
        json_t *o;
        json_array_foreach(arr, i, o) add_position_locked(s, o);
    } else {
        sc_log_db_error(s, err);
    }
    pthread_mutex_unlock(&s->mu);
    if (!arr) {
        sv_fail(e, 500, "store_error", "the jobs database failed (see the log)");
        return NULL;
    }
    return json_pack("{s:o}", "jobs", arr);
}

json_t *rx_sched_cancel(rx_sched *s, const char *id, rx_sched_err *e)
{
    if (!rx_sched_valid_id(id)) {
        sv_fail(e, 404, "not_found", "no such benchmark job");
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    sjob *j = sc_find_active(s, id);
    json_t *o = NULL;
    if (j) {
        char msg[160];
        snprintf(msg, sizeof msg, "cancelled by a client while %s%s%s", sj_state_name(j->state),
                 j->agent ? " on agent " : "", j->agent ? j->agent->name : "");
        json_t *err = json_pack("{s:s, s:s}", "code", "cancelled", "message", msg);
        int r = sc_finish_locked(s, j, SJ_CANCELLED, NULL, err);
        json_decref(err);
        if (r) sv_fail(e, 500, "store_error", "the jobs database failed (see the log)");
        else o = job_locked(s, id, e);
    } else {
        o = job_locked(s, id, e);
        if (o) {
            sv_fail(e, 409, "finished", "the job has already finished (%s)",
                    json_string_value(json_object_get(o, "status")));
            json_decref(o);
            o = NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return o;
}

/* ---- the reaper ---- */

/* "no agent with target T [and labels a, b] became available within N s (agents: x
 * [cpu] idle, ...)" */
static char *queue_timeout_message_locked(rx_sched *s, const sjob *j)
{
    rx_sb b = {0};
    rx_sb_printf(&b, "no agent with target %s", j->target);
    if (json_array_size(j->labels)) {
        rx_sb_puts(&b, " and labels ");
        size_t i;
        json_t *v;
        json_array_foreach(j->labels, i, v) {
            rx_sb_printf(&b, "%s%s", i ? ", " : "", json_string_value(v));
        }
    }
    rx_sb_printf(&b, " became available within %d s (", j->queue_timeout_s);
    if (!s->agents.n) rx_sb_puts(&b, "no agents are registered");
    else rx_sb_puts(&b, "agents: ");
    for (int i = 0; i < s->agents.n && i < QUEUE_TIMEOUT_AGENTS; i++) {
        sagent *a = s->agents.items[i];
        rx_sb_printf(&b, "%s%s [", i ? ", " : "", a->name);
        size_t k;
        json_t *v;
        json_array_foreach(a->targets, k, v) {
            rx_sb_printf(&b, "%s%s", k ? "," : "", json_string_value(v));
        }
        if (json_array_size(a->labels)) {
            rx_sb_puts(&b, "; ");
            json_array_foreach(a->labels, k, v) {
                rx_sb_printf(&b, "%s%s", k ? "," : "", json_string_value(v));
            }
        }
        rx_sb_printf(&b, "] %s", sc_agent_state(a));
    }
    if (s->agents.n > QUEUE_TIMEOUT_AGENTS)
        rx_sb_printf(&b, " and %d more", s->agents.n - QUEUE_TIMEOUT_AGENTS);
    rx_sb_puts(&b, ")");
    return rx_sb_take(&b);
}

static void tick_locked(rx_sched *s)
{
    int64_t now = sc_now_ms(s);
    /* poll deadlines */
    for (rx_sched_waiter *w = s->whead, *next; w; w = next) {
        next = w->next;
        if (now >= w->deadline) sc_waiter_wake_locked(s, w);
    }
    /* leases */
    for (int i = 0; i < s->agents.n; i++) {
        sagent *a = s->agents.items[i];
        if (!a->offline && !a->waiter && now - a->last_seen > s->o.lease_ms) {
            a->offline = true;
            sc_slog(s, RX_SCHED_LOG_WARN,
                 json_pack("{s:s, s:s, s:s, s:I, s:s?}", "event", "agent_offline", "agent",
                           a->id, "name", a->name, "silent_ms", (json_int_t)(now - a->last_seen),
                           "job", a->job ? a->job->id : NULL));
        }
        if (a->offline && a->job) {
            char why[200];
            snprintf(why, sizeof why, "agent %s was lost (no heartbeat within its %lld ms lease)",
                     a->name, (long long)s->o.lease_ms);
            sc_requeue_or_fail_locked(s, a->job, why);
        }
    }
    /* queue and run timeouts (finishing removes from active: walk backwards) */
    for (int i = s->active.n - 1; i >= 0; i--) {
        if (i >= s->active.n) continue;
        sjob *j = s->active.items[i];
        if (j->state == SJ_QUEUED && now - j->enqueued_mono > (int64_t)j->queue_timeout_s * 1000) {
            char *msg = queue_timeout_message_locked(s, j);
            json_t *e = json_pack("{s:s, s:s}", "code", "queue_timeout", "message", msg);
            sc_finish_locked(s, j, SJ_FAILED, NULL, e);
            json_decref(e);
            free(msg);
        } else if (j->state == SJ_RUNNING &&
                   now - j->started_mono > (int64_t)j->timeout_s * 1000 + s->o.lease_ms) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "the job ran longer than its timeout of %d s (+%lld ms grace) on agent %s",
                     j->timeout_s, (long long)s->o.lease_ms, j->agent ? j->agent->name : "?");
            json_t *e = json_pack("{s:s, s:s}", "code", "timeout", "message", msg);
            sc_finish_locked(s, j, SJ_FAILED, NULL, e);
            json_decref(e);
        }
    }
    int64_t finished = s->counts[SJ_DONE] + s->counts[SJ_FAILED] + s->counts[SJ_CANCELLED];
    if (now >= s->next_prune && finished > s->o.history) {
        char err[320];
        s->next_prune = now + PRUNE_EVERY_MS;
        int64_t n = jdb_prune(s->db, s->o.history, err, sizeof err);
        if (n < 0) {
            sc_log_db_error(s, err);
        } else if (n > 0) {
            jdb_counts(s->db, s->counts, err, sizeof err);
            sc_slog(s, RX_SCHED_LOG_INFO, json_pack("{s:s, s:I}", "event", "bench_pruned", "jobs",
                                                 (json_int_t)n));
        }
    }
}

void rx_sched_tick(rx_sched *s)
{
    pthread_mutex_lock(&s->mu);
    tick_locked(s);
    pthread_mutex_unlock(&s->mu);
}

void rx_sched_get_stats(rx_sched *s, rx_sched_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->agents.n; i++) {
        sagent *a = s->agents.items[i];
        if (a->offline) out->agents_offline++;
        else if (a->job) out->agents_busy++;
        else out->agents_idle++;
    }
    out->jobs_queued = s->counts[SJ_QUEUED];
    out->jobs_running = s->counts[SJ_RUNNING];
    out->jobs_done = s->counts[SJ_DONE];
    out->jobs_failed = s->counts[SJ_FAILED];
    out->jobs_cancelled = s->counts[SJ_CANCELLED];
    memcpy(out->dispatch_buckets, s->dbuckets, sizeof s->dbuckets);
    out->dispatch_count = s->dcount;
    out->dispatch_sum_s = s->dsum;
    pthread_mutex_unlock(&s->mu);
}
