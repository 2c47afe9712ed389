/*
 * session.c — relax-agent's life with a server (rxag_session_loop and the heartbeat
 * thread; the command line and the process setup are relax_agent.c's).
 *
 * The loop, step by step: Step 2 register (POST /v1/agents/register) with the machine
 * facts, retrying with a jittered exponential backoff (0.25 s doubling to 10 s) while
 * the server is away — one log line per failed attempt; 401/403 (the token) and 400
 * (the registration) are refusals for good. Step 3 long-poll for a job; run it —
 * the artifact through the verified cache (cache.c), then a forked child (job.c) —
 * while the heartbeat thread renews the lease every heartbeat_ms and listens for
 * cancel=true; report the result (retried up to REPORT_RETRY_S while the server is
 * away); poll again. A 404 unknown_agent from any endpoint (the server restarted and
 * forgot its agents) means: register again, dropping a job in progress (the restarted
 * server re-queued it). A job the server no longer assigns to us (cancelled, timed out,
 * re-queued) is dropped silently; a 409 on its report likewise.
 *
 * Stopping: every wait here (HTTP in http.c, the child in job.c, backoff naps) also
 * watches the stop pipe, so SIGTERM is acted on within a millisecond; a running job is
 * then reported "agent_shutdown" with a short non-interruptible request.
 *
 * Sharing: the main loop and the heartbeat thread each use their own connection; the
 * agent id, the running job, the cancel/lost flags and the server's periods live in
 * rxag_agent under ag->mu.
 */
#include "agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_BASE_S 0.25
#define BACKOFF_CAP_S 10.0
#define REPORT_RETRY_S 60.0 /* how long a result report is retried while the server is away */

/* Sleeps s seconds or until the stop pipe is readable. Returns 1 when stopping. */
static int nap(rxag_agent *ag, double s)
{
    double end = rx_now_s() + s;
    while (!*ag->stop) {
        double left = end - rx_now_s();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = ag->wake_rd, .events = POLLIN};
        poll(&p, 1, (int)(left * 1000) + 1);
    }
    return 1;
}

/* Sleeps s seconds whatever happens (the last report while stopping). */
static void sleep_plain(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* ---- registration ---- */

static char *register_body(const rxag_agent *ag)
{
    json_t *targets = json_array(), *labels = json_array();
    for (int i = 0; i < ag->o.ntargets; i++)
        json_array_append_new(targets, json_string(ag->o.targets[i]));
    for (int i = 0; i < ag->o.nlabels; i++)
        json_array_append_new(labels, json_string(ag->o.labels[i]));
    json_t *b = json_pack("{s:s, s:o, s:o, s:s, s:i, s:I, s:s, s:i}", "name", ag->o.name, "targets",
                          targets, "labels", labels, "cpu", ag->sys.cpu, "cores", ag->sys.cores,
                          "memory_bytes", (json_int_t)ag->sys.memory_bytes, "runtime_version",
                          RX_VERSION, "protocol", RXAG_PROTOCOL);
    if (b && ag->devices && json_array_size(ag->devices))
        json_object_set(b, "devices", ag->devices);
    char *s = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    return s;
}

/* The server refused us for good: remembered for main's exit 1. */
static void set_fatal(rxag_agent *ag, const char *fmt, const char *detail)
{
    pthread_mutex_lock(&ag->mu);
    if (!ag->fatal) {
        ag->fatal = 1;
        snprintf(ag->fatal_msg, sizeof ag->fatal_msg, fmt, ag->conn.base, detail);
    }
    pthread_mutex_unlock(&ag->mu);
}

/* Registers, retrying while the server is away. Returns 0 registered, -1 stopping or
 * refused for good (ag->fatal set). */
static int do_register(rxag_agent *ag)
{
    char *body = register_body(ag);
    if (!body) {
        set_fatal(ag, "%s: %s", "out of memory");
        return -1;
    }
    int rc = -1;
    for (int attempt = 0; !*ag->stop; attempt++) {
        rxag_resp r;
        char err[RXAG_ERR], code[32], msg[RXAG_ERR];
        int hr = rxag_request(&ag->conn, "POST", "/v1/agents/register", body, 10000, 1, NULL, NULL,
                              0, &r, err, sizeof err);
        if (hr == RXAG_HTTP_STOPPED) break;
        if (hr == RXAG_HTTP_OK && r.status == 200) {
            json_t *j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
            const char *id = json_string_value(json_object_get(j, "agent"));
            if (id && strlen(id) < sizeof ag->id && *id) {
                pthread_mutex_lock(&ag->mu);
                snprintf(ag->id, sizeof ag->id, "%s", id);
                ag->need_register = 0;
                json_int_t hb = json_integer_value(json_object_get(j, "heartbeat_ms"));
                json_int_t lease = json_integer_value(json_object_get(j, "lease_ms"));
                json_int_t poll = json_integer_value(json_object_get(j, "poll_ms"));
                ag->heartbeat_ms = hb > 0 ? hb : 1000;
                ag->lease_ms = lease > 0 ? lease : 5000;
                ag->poll_ms = poll > 0 ? poll : 20000;
                pthread_mutex_unlock(&ag->mu);
                rxag_log(RXAG_INFO, "registered",
                         json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "agent", id, "name",
                                   ag->o.name, "server", ag->conn.base, "heartbeat_ms",
                                   (json_int_t)ag->heartbeat_ms, "lease_ms",
                                   (json_int_t)ag->lease_ms, "poll_ms", (json_int_t)ag->poll_ms));
                json_decref(j);
                rxag_resp_free(&r);
                rc = 0;
                break;
            }
            json_decref(j);
            snprintf(err, sizeof err, "bad response from relaxd (register): no agent id");
        } else if (hr == RXAG_HTTP_OK) {
            rxag_resp_error(&r, code, msg, sizeof msg);
            if (r.status == 401 || r.status == 403) {
                set_fatal(ag, "relaxd at %s refused the agent's token: %s", msg);
                rxag_resp_free(&r);
                break;
            }
            if (r.status == 400) {
                set_fatal(ag, "relaxd at %s rejected the registration: %s", msg);
                rxag_resp_free(&r);
                break;
            }
            snprintf(err, sizeof err, "%s", msg);
        }
        rxag_resp_free(&r);
        double wait = rxag_backoff(attempt, BACKOFF_BASE_S, BACKOFF_CAP_S);
        rxag_log(RXAG_WARN, "register_failed",
                 json_pack("{s:s, s:i, s:I, s:s}", "server", ag->conn.base, "attempt", attempt + 1,
                           "retry_in_ms", (json_int_t)(wait * 1000), "message", err));
        if (nap(ag, wait)) break;
    }
    free(body);
    return rc;
}

/* ---- heartbeat thread ---- */

/* One heartbeat for job (under no lock; timeout_ms read under it by the caller). */
static void heartbeat_once(rxag_agent *ag, const char *id, const char *job, long timeout)
{
    char path[160], body[200], err[RXAG_ERR], code[32], msg[RXAG_ERR];
    snprintf(path, sizeof path, "/v1/agents/%s/heartbeat", id);
    snprintf(body, sizeof body, "{\"job\":\"%s\"}", job);
    rxag_resp r;
    int hr =
        rxag_request(&ag->hb, "POST", path, body, timeout, 1, NULL, NULL, 0, &r, err, sizeof err);
    if (hr == RXAG_HTTP_STOPPED) return;
    if (hr != RXAG_HTTP_OK) {
        rxag_log(RXAG_WARN, "heartbeat_failed",
                 json_pack("{s:s, s:s}", "job", job, "message", err));
        return;
    }
    pthread_mutex_lock(&ag->mu);
    int same = !strcmp(ag->job, job) && !strcmp(ag->id, id);
    if (r.status == 200) {
        json_t *j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
        if (same && json_is_true(json_object_get(j, "cancel")) && !ag->cancel) {
            ag->cancel = 1;
            rxag_log(RXAG_INFO, "job_cancelled",
                     json_pack("{s:s, s:s}", "job", job, "message",
                               "the server no longer assigns this job to us (cancelled, timed out "
                               "or re-queued)"));
        }
        json_decref(j);
        if (ag->o.verbose) rxag_log(RXAG_DEBUG, "heartbeat", json_pack("{s:s}", "job", job));
    } else {
        rxag_resp_error(&r, code, msg, sizeof msg);
        if (r.status == 404 && !strcmp(code, "unknown_agent")) {
            if (same && !ag->lost) {
                ag->lost = 1;
                ag->need_register = 1;
                rxag_log(
                    RXAG_WARN, "agent_unknown",
                    json_pack("{s:s, s:s}", "job", job, "message",
                              "the server does not know this agent (restarted?): dropping the job, "
                              "registering again"));
            }
        } else {
            rxag_log(RXAG_WARN, "heartbeat_failed",
                     json_pack("{s:s, s:s}", "job", job, "message", msg));
        }
    }
    pthread_mutex_unlock(&ag->mu);
    rxag_resp_free(&r);
}

void *rxag_heartbeat_main(void *arg)
{
    rxag_agent *ag = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the main thread */
    pthread_mutex_lock(&ag->mu);
    while (!ag->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns =
            (int64_t)ts.tv_nsec + (ag->heartbeat_ms > 0 ? ag->heartbeat_ms : 1000) * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&ag->cv, &ag->mu, &ts);
        if (ag->stopping) break;
        if (!ag->job[0] || !ag->id[0] || ag->need_register || ag->cancel) continue;
        char id[72], job[129];
        snprintf(id, sizeof id, "%s", ag->id);
        snprintf(job, sizeof job, "%s", ag->job);
        long timeout = ag->lease_ms > 2000 ? (long)ag->lease_ms : 2000;
        pthread_mutex_unlock(&ag->mu);
        heartbeat_once(ag, id, job, timeout);
        pthread_mutex_lock(&ag->mu);
    }
    pthread_mutex_unlock(&ag->mu);
    return NULL;
}

/* ---- one job ---- */

/* The download into the cache's temp file. */
typedef struct fetch_ctx {
    rxag_agent *ag;
    const char *id; /* artifact id */
    int fd;         /* temp file */
    int64_t bytes;  /* received */
} fetch_ctx;

static int sink_fd(void *ud, const void *data, size_t n)
{
    fetch_ctx *f = ud;
    const char *p = data;
    while (n) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        f->bytes += w;
    }
    return 0;
}

static int fetch_artifact(void *ud, int fd, char *err, size_t errlen)
{
    fetch_ctx *f = ud;
    char path[128], code[32], msg[RXAG_ERR];
    snprintf(path, sizeof path, "/v1/artifacts/%s", f->id);
    f->fd = fd;
    f->bytes = 0;
    if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET)) {
        snprintf(err, errlen, "cannot reset the temp file: %s", strerror(errno));
        return -1;
    }
    rxag_resp r;
    int hr = rxag_request(&f->ag->conn, "GET", path, NULL, 600000, 1, sink_fd, f, RXAG_ARTIFACT_CAP,
                          &r, err, errlen);
    if (hr != RXAG_HTTP_OK) return -1;
    if (r.status != 200) {
        snprintf(err, errlen, "GET %s: %s", path, rxag_resp_error(&r, code, msg, sizeof msg));
        rxag_resp_free(&r);
        return -1;
    }
    rxag_resp_free(&r);
    return 0;
}

/* abort_fn of the run: a cancel or a lost registration. */
static int should_abort(void *ud)
{
    rxag_agent *ag = ud;
    pthread_mutex_lock(&ag->mu);
    int a = ag->cancel || ag->lost;
    pthread_mutex_unlock(&ag->mu);
    return a;
}

/* Posts the result of job; retried while the server is away. */
static void report(rxag_agent *ag, const char *job, json_t *body, int interruptible)
{
    char path[256], err[RXAG_ERR], code[32], msg[RXAG_ERR];
    char *text = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(12));
    if (!text) return;
    pthread_mutex_lock(&ag->mu);
    snprintf(path, sizeof path, "/v1/agents/%s/jobs/%s/result", ag->id, job);
    pthread_mutex_unlock(&ag->mu);
    double give_up = rx_now_s() + (interruptible ? REPORT_RETRY_S : 3.0);
    for (int attempt = 0;; attempt++) {
        rxag_resp r;
        int hr = rxag_request(&ag->conn, "POST", path, text, interruptible ? 30000 : 3000,
                              interruptible, NULL, NULL, 0, &r, err, sizeof err);
        if (hr == RXAG_HTTP_STOPPED) break;
        if (hr == RXAG_HTTP_OK && r.status == 200) {
            rxag_resp_free(&r);
            break;
        }
        if (hr == RXAG_HTTP_OK) {
            rxag_resp_error(&r, code, msg, sizeof msg);
            long st = r.status;
            rxag_resp_free(&r);
            if (st == 404 && !strcmp(code, "unknown_agent")) {
                pthread_mutex_lock(&ag->mu);
                ag->need_register = 1;
                pthread_mutex_unlock(&ag->mu);
            }
            if (st < 500) { /* 409 not_assigned, 404: the server moved on; dropped */
                rxag_log(RXAG_WARN, "result_rejected",
                         json_pack("{s:s, s:s}", "job", job, "message", msg));
                break;
            }
            snprintf(err, sizeof err, "%s", msg);
        }
        double wait = rxag_backoff(attempt, BACKOFF_BASE_S, BACKOFF_CAP_S);
        if (rx_now_s() + wait > give_up) {
            rxag_log(RXAG_ERROR, "result_lost",
                     json_pack("{s:s, s:s}", "job", job, "message", err));
            break;
        }
        rxag_log(RXAG_WARN, "result_retry",
                 json_pack("{s:s, s:i, s:I, s:s}", "job", job, "attempt", attempt + 1,
                           "retry_in_ms", (json_int_t)(wait * 1000), "message", err));
        if (interruptible) {
            if (nap(ag, wait)) break;
        } else {
            sleep_plain(wait);
        }
    }
    free(text);
}

/* Logs the end of a job. */
static void log_end(const char *job, const json_t *rep, double t0)
{
    const char *st = json_string_value(json_object_get(rep, "status"));
    const json_t *e = json_object_get(rep, "error"), *res = json_object_get(rep, "result");
    json_t *f = json_pack("{s:s, s:s, s:f}", "job", job, "status", st ? st : "?", "ms",
                          (rx_now_s() - t0) * 1e3);
    if (e) {
        json_object_set(f, "code", json_object_get(e, "code"));
        json_object_set(f, "message", json_object_get(e, "message"));
    }
    if (res) json_object_set(f, "median_ms", json_object_get(res, "median_ms"));
    rxag_log(st && !strcmp(st, "done") ? RXAG_INFO : RXAG_WARN, "job_end", f);
}

/* Runs one assigned job and reports it. */
static void run_job(rxag_agent *ag, const json_t *spec)
{
    rxag_job job;
    char code[32], err[RXAG_ERR];
    double t0 = rx_now_s();
    const char *jid = json_string_value(json_object_get(spec, "id"));
    int perr = rxag_job_parse(spec, &job, code, err, sizeof err);
    if (!jid || strlen(jid) >= sizeof ag->job) {
        rxag_log(RXAG_ERROR, "bad_job", json_pack("{s:s}", "message", "a job without a usable id"));
        rxag_job_free(&job);
        return;
    }
    pthread_mutex_lock(&ag->mu);
    snprintf(ag->job, sizeof ag->job, "%s", jid);
    ag->cancel = ag->lost = 0;
    pthread_mutex_unlock(&ag->mu);
    json_t *rep = NULL;
    int aborted = 0;
    if (perr) {
        rep = rxag_failure(!strcmp(code, "bad_job") ? "input_error" : code, err);
    } else {
        rxag_log(RXAG_INFO, "job_start",
                 json_pack("{s:s, s:s, s:s, s:i, s:I}", "job", job.id, "artifact", job.artifact,
                           "function", job.function, "repeat", job.repeat, "timeout_ms",
                           (json_int_t)job.timeout_ms));
        /* the artifact, through the verified cache */
        fetch_ctx f = {.ag = ag, .id = job.artifact};
        rxag_blob blob;
        double td = rx_now_s();
        if (rxag_cache_get(&ag->cache, job.artifact, fetch_artifact, &f, &blob, code, err,
                           sizeof err)) {
            if (*ag->stop || should_abort(ag))
                aborted = 1;
            else
                rep = rxag_failure(code, err);
        } else {
            rxag_log(RXAG_INFO, blob.hit ? "artifact_cached" : "artifact_downloaded",
                     json_pack("{s:s, s:s, s:I, s:f}", "job", job.id, "artifact", job.artifact,
                               "bytes", (json_int_t)blob.n, "ms", (rx_now_s() - td) * 1e3));
            job.device_id = ag->o.device_id;
            if (!job.threads) job.threads = ag->o.threads; /* --threads, when the job has none */
            if (rxag_job_run(&job, blob.bytes, blob.n, ag->wake_rd, should_abort, ag, &rep) ==
                RXAG_RUN_ABORTED)
                aborted = 1;
            free(blob.bytes);
        }
    }
    if (aborted && *ag->stop) {
        rep = rxag_failure("agent_shutdown",
                           "the agent was stopped (SIGTERM/SIGINT) while running the job");
        log_end(jid, rep, t0);
        report(ag, jid, rep, 0);
    } else if (aborted) {
        pthread_mutex_lock(&ag->mu);
        int lost = ag->lost;
        pthread_mutex_unlock(&ag->mu);
        rxag_log(RXAG_INFO, "job_dropped",
                 json_pack("{s:s, s:s}", "job", jid, "message",
                           lost ? "registration lost: the server re-queues the job"
                                : "cancelled by the server: nothing reported"));
    } else if (rep) {
        log_end(jid, rep, t0);
        report(ag, jid, rep, 1);
    }
    json_decref(rep);
    rxag_job_free(&job);
    pthread_mutex_lock(&ag->mu);
    ag->job[0] = 0;
    ag->cancel = ag->lost = 0;
    pthread_mutex_unlock(&ag->mu);
}

/* ---- the loop ---- */

/* One long poll. Returns 1 when a job was run, 0 otherwise, -1 to stop. */
static int poll_once(rxag_agent *ag, int *failures)
{
    char path[160], err[RXAG_ERR], code[32], msg[RXAG_ERR];
    pthread_mutex_lock(&ag->mu);
    snprintf(path, sizeof path, "/v1/agents/%s/poll", ag->id);
    long timeout = (long)ag->poll_ms + 15000;
    pthread_mutex_unlock(&ag->mu);
    rxag_resp r;
    int hr =
        rxag_request(&ag->conn, "POST", path, "{}", timeout, 1, NULL, NULL, 0, &r, err, sizeof err);
    if (hr == RXAG_HTTP_STOPPED) return -1;
    if (hr == RXAG_HTTP_OK && r.status == 204) {
        rxag_resp_free(&r);
        *failures = 0;
        if (ag->o.verbose) rxag_log(RXAG_DEBUG, "poll", json_pack("{s:s}", "result", "no job"));
        return 0;
    }
    if (hr == RXAG_HTTP_OK && r.status == 200) {
        json_t *j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
        rxag_resp_free(&r);
        *failures = 0;
        const json_t *spec = json_object_get(j, "job");
        if (!json_is_object(spec)) {
            rxag_log(RXAG_ERROR, "bad_response",
                     json_pack("{s:s}", "message", "poll: 200 without a job object"));
            json_decref(j);
            return nap(ag, 1.0) ? -1 : 0;
        }
        run_job(ag, spec);
        json_decref(j);
        return 1;
    }
    if (hr == RXAG_HTTP_OK) {
        rxag_resp_error(&r, code, msg, sizeof msg);
        long st = r.status;
        rxag_resp_free(&r);
        if (st == 404 && !strcmp(code, "unknown_agent")) {
            rxag_log(
                RXAG_WARN, "agent_unknown",
                json_pack("{s:s}", "message",
                          "the server does not know this agent (restarted?): registering again"));
            pthread_mutex_lock(&ag->mu);
            ag->need_register = 1;
            pthread_mutex_unlock(&ag->mu);
            return 0;
        }
        if (st == 401 || st == 403) {
            set_fatal(ag, "relaxd at %s refused the agent's token: %s", msg);
            return -1;
        }
        snprintf(err, sizeof err, "%s", msg);
    }
    double wait = rxag_backoff((*failures)++, BACKOFF_BASE_S, BACKOFF_CAP_S);
    rxag_log(RXAG_WARN, "poll_failed",
             json_pack("{s:s, s:i, s:I, s:s}", "server", ag->conn.base, "attempt", *failures,
                       "retry_in_ms", (json_int_t)(wait * 1000), "message", err));
    return nap(ag, wait) ? -1 : 0;
}

void rxag_session_loop(rxag_agent *ag)
{
    int failures = 0;
    while (!*ag->stop) {
        pthread_mutex_lock(&ag->mu);
        int need = ag->need_register || !ag->id[0];
        pthread_mutex_unlock(&ag->mu);
        if (need && do_register(ag)) break;
        int r = poll_once(ag, &failures);
        if (r < 0) break;
        if (r == 1 && ag->o.once) break;
    }
}
