/*
 * bench.c — relaxd's benchmark and agent endpoints (docs/rpc.md), a thin mapping of
 * HTTP onto the scheduler (rpc/include/relax/sched.h):
 *
 *   POST /v1/agents/register                     agent    rx_sched_register
 *   POST /v1/agents/{agent}/heartbeat            agent    rx_sched_heartbeat
 *   POST /v1/agents/{agent}/poll                 agent    rx_sched_poll (parked)
 *   POST /v1/agents/{agent}/jobs/{job}/result    agent    rx_sched_result
 *   GET  /v1/agents                              any role rx_sched_agents
 *   POST /v1/benchmarks                          client   rx_sched_submit
 *   GET  /v1/benchmarks[?status=S&limit=N]       client   rx_sched_jobs
 *   GET  /v1/benchmarks/{id}                     client   rx_sched_job
 *   POST /v1/benchmarks/{id}/cancel              client   rx_sched_cancel
 *
 * Bodies are parsed here (400 bad_json with line and column); everything else — field
 * validation, unknown ids, states — is the scheduler's, whose rx_sched_err becomes the
 * reply as it is. Path parameters reach the scheduler as captured; it answers 404 for
 * anything that is not a 32-hex id.
 *
 * The long poll holds no event-loop thread: the handler parks its request
 * (rx_req_park: the connection is suspended) and hands a waiter to the scheduler, which
 * wakes it once — at once when the answer is known, otherwise when a job is assigned to
 * that agent, at poll_ms, or at shutdown; the finish step replies 200 {"job": ...} or
 * 204. A suspended connection is not watched, so an agent that died while parked is
 * noticed only then: the finish step peeks at the socket (rx_req_peer_closed) before
 * handing out a job, and the completion callback reports a reply carrying a job that
 * did not go out completely; either way the job returns to the queue without counting
 * an attempt (rx_sched_poll_undelivered). The waiter lives on the heap until the
 * request's completion callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/support.h"
#include "server_int.h"

/* The request body parsed (NULL for an empty body, *ok true), or *ok false with a 400
 * already queued. */
static json_t *body_json(rx_request *q, bool *ok)
{
    size_t n;
    const char *body = rx_req_body(q, &n);
    *ok = true;
    if (n == 0) return NULL;
    json_error_t je;
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char msg[256];
        snprintf(msg, sizeof msg, "body is not JSON: line %d column %d: %s", je.line, je.column,
                 je.text);
        rx_reply_error(q, 400, "bad_json", msg);
        *ok = false;
    }
    return root;
}

/* Replies with a scheduler answer: out (consumed) with status, or the error in e. */
static void reply(rx_request *q, int status, json_t *out, const rx_sched_err *e)
{
    if (out) rx_reply_json(q, status, out);
    else rx_reply_error(q, e->status ? e->status : 500, e->status ? e->code : "internal",
                        e->status ? e->message : "the scheduler gave no answer");
}

/* ---- agents ---- */

void rx_h_agent_register(rx_server *s, rx_request *q)
{
    bool ok;
    json_t *body = body_json(q, &ok);
    if (!ok) return;
    rx_sched_err e = {0};
    reply(q, 200, rx_sched_register(rx_server_sched(s), body, &e), &e);
    json_decref(body);
}

void rx_h_agent_heartbeat(rx_server *s, rx_request *q)
{
    bool ok;
    json_t *body = body_json(q, &ok);
    if (!ok) return;
    rx_sched_err e = {0};
    reply(q, 200, rx_sched_heartbeat(rx_server_sched(s), rx_req_param(q, 0), body, &e), &e);
    json_decref(body);
}

/* The poll's wake: runs once, under the scheduler's mutex, on any thread. */
static void poll_wake(void *ctx) { rx_req_resume(ctx); }

/* The poll's second half, after the resume. */
static void poll_finish(rx_server *s, rx_request *q)
{
    rx_sched_waiter *w = rx_req_park_data(q);
    rx_sched_err e = {0};
    rx_sched *sched = rx_server_sched(s);
    json_t *job = rx_sched_poll_end(sched, w, &e);
    if (job && rx_req_peer_closed(q)) { /* the agent left while parked: keep the job */
        rx_sched_poll_undelivered(sched, w);
        json_decref(job);
        job = NULL;
    }
    if (job) rx_reply_json(q, 200, json_pack("{s:o}", "job", job));
    else if (e.status) rx_reply_error(q, e.status, e.code, e.message);
    else rx_reply_empty(q, 204);
}

/* Completion: drops a wait that never ended, returns an undelivered job, frees. */
static void poll_end(rx_server *s, rx_request *q, void *data, bool replied_ok)
{
    rx_sched_waiter *w = data;
    rx_sched *sched = rx_server_sched(s);
    json_decref(rx_sched_poll_end(sched, w, NULL));
    if (!replied_ok) rx_sched_poll_undelivered(sched, w);
    free(w);
}

void rx_h_agent_poll(rx_server *s, rx_request *q)
{
    bool ok;
    json_t *body = body_json(q, &ok);
    if (!ok) return;
    rx_sched_waiter *w = calloc(1, sizeof *w);
    if (!w) {
        json_decref(body);
        rx_reply_error(q, 503, "out_of_memory", "cannot hold the poll now");
        return;
    }
    rx_req_park(q, poll_finish, poll_end, w);
    rx_sched_poll(rx_server_sched(s), rx_req_param(q, 0), body, w, poll_wake, q);
    json_decref(body);
}

void rx_h_agent_result(rx_server *s, rx_request *q)
{
    bool ok;
    json_t *body = body_json(q, &ok);
    if (!ok) return;
    rx_sched_err e = {0};
    reply(q, 200,
          rx_sched_result(rx_server_sched(s), rx_req_param(q, 0), rx_req_param(q, 1), body, &e),
          &e);
    json_decref(body);
}

void rx_h_agents(rx_server *s, rx_request *q)
{
    rx_reply_json(q, 200, rx_sched_agents(rx_server_sched(s)));
}

/* ---- clients ---- */

/* The scheduler's artifact check against the store: 0 present (*bytes, and kind[] the
 * kind of its normalized target: "vulkan" of "vulkan,max_threads=64"), 1 absent, -1. */
static int artifact_size(void *ctx, const char *id, int64_t *bytes, char *kind,
                         size_t kind_cap)
{
    rx_server *s = ctx;
    rx_artifact_info info;
    char err[256];
    int r = rx_store_info(rx_server_store(s), id, &info, NULL, err, sizeof err);
    if (r == 0) {
        *bytes = info.size;
        snprintf(kind, kind_cap, "%.*s", (int)strcspn(info.target, ","), info.target);
    } else if (r < 0)
        rx_log_json(rx_server_log(s), RX_LOG_ERROR,
                    json_pack("{s:s, s:s, s:s}", "event", "store_error", "artifact", id,
                              "message", err));
    return r == 0 ? 0 : r == 1 ? 1 : -1;
}

void rx_h_bench_submit(rx_server *s, rx_request *q)
{
    bool ok;
    json_t *body = body_json(q, &ok);
    if (!ok) return;
    rx_sched_err e = {0};
    if (!body) {
        rx_reply_error(q, 400, "bad_request", "the body must be a JSON object");
        return;
    }
    reply(q, 202, rx_sched_submit(rx_server_sched(s), body, artifact_size, s, &e), &e);
    json_decref(body);
}

void rx_h_bench_list(rx_server *s, rx_request *q)
{
    rx_sched_err e = {0};
    reply(q, 200,
          rx_sched_jobs(rx_server_sched(s), rx_req_query(q, "status"), rx_req_query(q, "limit"),
                        &e),
          &e);
}

void rx_h_bench_get(rx_server *s, rx_request *q)
{
    rx_sched_err e = {0};
    reply(q, 200, rx_sched_job(rx_server_sched(s), rx_req_param(q, 0), &e), &e);
}

void rx_h_bench_cancel(rx_server *s, rx_request *q)
{
    rx_sched_err e = {0};
    reply(q, 200, rx_sched_cancel(rx_server_sched(s), rx_req_param(q, 0), &e), &e);
}

/* ---- the scheduler ---- */

static void sched_log(void *ctx, int level, json_t *obj)
{
    static const rx_log_level levels[] = {RX_LOG_DEBUG, RX_LOG_INFO, RX_LOG_WARN, RX_LOG_ERROR};
    rx_log_json(ctx, levels[level >= 0 && level < 4 ? level : 1], obj);
}

rx_sched *rx_bench_open(const rx_config *c, rx_log *log, char *err, size_t errlen)
{
    rx_sched_opts o;
    rx_sched_opts_default(&o);
    rx_sb path = {0};
    rx_sb_printf(&path, "%s/jobs.db", c->data_dir);
    o.db_path = rx_sb_str(&path);
    o.heartbeat_ms = c->agent_heartbeat_ms;
    o.lease_ms = c->agent_lease_ms;
    o.poll_ms = c->agent_poll_ms;
    o.timeout_s = c->bench_timeout_s;
    o.queue_timeout_s = c->bench_queue_timeout_s;
    o.max_attempts = c->bench_max_attempts;
    o.max_queued = c->bench_queue;
    o.history = c->bench_history;
    o.log = sched_log;
    o.log_ctx = log;
    rx_sched *s = rx_sched_open(&o, err, errlen);
    rx_sb_free(&path);
    return s;
}
