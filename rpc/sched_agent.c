/*
 * sched_agent.c — the agent side of the scheduler (sched.h): registration, heartbeats,
 * parked polls, results and the agents listing. The state, the matching rules, leases
 * and the transitions these calls make are sched.c's (its essay); everything here runs
 * under the scheduler's mutex.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/base.h"
#include "sched_int.h"

/* Makes room for one more agent: forgets the longest-registered offline agent without
 * a job. False when every slot is taken by a live agent. */
static bool agent_room_locked(rx_sched *s)
{
    if (s->agents.n < s->o.max_agents) return true;
    for (int i = 0; i < s->agents.n; i++) {
        sagent *a = s->agents.items[i];
        if (a->offline && !a->job && !a->waiter) {
            memmove(&s->agents.items[i], &s->agents.items[i + 1],
                    (size_t)(s->agents.n - i - 1) * sizeof *s->agents.items);
            s->agents.n--;
            sc_agent_free(a);
            return true;
        }
    }
    return false;
}

json_t *rx_sched_register(rx_sched *s, const json_t *body, rx_sched_err *e)
{
    sv_agent in;
    if (!sv_register(body, &in, e)) return NULL;
    pthread_mutex_lock(&s->mu);
    sagent *a = NULL;
    for (int i = 0; i < s->agents.n && !a; i++)
        if (!strcmp(s->agents.items[i]->name, in.name)) a = s->agents.items[i];
    bool again = a != NULL;
    if (!a) {
        if (!agent_room_locked(s)) {
            pthread_mutex_unlock(&s->mu);
            sv_fail(e, 503, "too_many_agents",
                    "%d agents are registered and alive (the limit); retry later",
                    s->o.max_agents);
            json_decref(in.targets);
            json_decref(in.labels);
            json_decref(in.facts);
            return NULL;
        }
        a = calloc(1, sizeof *a);
        RX_ASSERT(a);
        sc_random_id(a->id);
        snprintf(a->name, sizeof a->name, "%s", in.name);
        a->order = ++s->agent_order;
        RX_VEC_PUSH(s->agents, a);
    } else {
        json_decref(a->targets);
        json_decref(a->labels);
        json_decref(a->facts);
    }
    a->targets = in.targets;
    a->labels = in.labels;
    a->facts = in.facts;
    a->last_seen = sc_now_ms(s);
    a->offline = false;
    if (a->waiter) sc_waiter_wake_locked(s, a->waiter); /* its old poll: nothing */
    if (a->job) {
        char why[160];
        snprintf(why, sizeof why, "agent %s registered again (it restarted) while running it",
                 a->name);
        sc_requeue_or_fail_locked(s, a->job, why); /* on failure its next poll retries */
    }
    sc_slog(s, RX_SCHED_LOG_INFO,
         json_pack("{s:s, s:s, s:s, s:O, s:O, s:b}", "event", "agent_registered", "agent",
                   a->id, "name", a->name, "targets", a->targets, "labels", a->labels, "again",
                   again));
    json_t *r = json_pack("{s:s, s:I, s:I, s:I}", "agent", a->id, "heartbeat_ms",
                          (json_int_t)s->o.heartbeat_ms, "lease_ms", (json_int_t)s->o.lease_ms,
                          "poll_ms", (json_int_t)s->o.poll_ms);
    pthread_mutex_unlock(&s->mu);
    return r;
}

static void unknown_agent(rx_sched_err *e)
{
    sv_fail(e, 404, "unknown_agent",
            "no such agent (the server may have restarted): register again");
}

json_t *rx_sched_heartbeat(rx_sched *s, const char *agent, const json_t *body,
                           rx_sched_err *e)
{
    const char *job;
    pthread_mutex_lock(&s->mu);
    sagent *a = rx_sched_valid_id(agent) ? sc_find_agent(s, agent) : NULL;
    if (!a || !sv_heartbeat(body, &job, e)) {
        pthread_mutex_unlock(&s->mu);
        if (!a) unknown_agent(e);
        return NULL;
    }
    a->last_seen = sc_now_ms(s);
    a->offline = false;
    bool mine = job && a->job && !strcmp(a->job->id, job);
    if (mine) a->job->heard = true;
    pthread_mutex_unlock(&s->mu);
    return json_pack("{s:b}", "cancel", job && !mine);
}

void rx_sched_poll(rx_sched *s, const char *agent, const json_t *body, rx_sched_waiter *w,
                   void (*wake)(void *ctx), void *ctx)
{
    memset(w, 0, sizeof *w);
    w->wake = wake;
    w->ctx = ctx;
    snprintf(w->agent, sizeof w->agent, "%s", rx_sched_valid_id(agent) ? agent : "");
    pthread_mutex_lock(&s->mu);
    sagent *a = w->agent[0] ? sc_find_agent(s, w->agent) : NULL;
    if (body && !json_is_object(body)) {
        sv_fail(&w->err, 400, "bad_request", "the body must be a JSON object");
    } else if (!a) {
        unknown_agent(&w->err);
    } else {
        int64_t now = sc_now_ms(s);
        a->last_seen = now;
        a->offline = false;
        if (a->waiter) sc_waiter_wake_locked(s, a->waiter); /* an older poll: nothing */
        if (a->job) {
            char why[160];
            snprintf(why, sizeof why, "agent %s polled while running it (it gave the job up)",
                     a->name);
            if (sc_requeue_or_fail_locked(s, a->job, why))
                sv_fail(&w->err, 500, "store_error", "the jobs database failed (see the log)");
        }
        if (!s->stopping && !w->err.status) {
            sjob *best = NULL;
            for (int i = 0; i < s->active.n; i++) {
                sjob *j = s->active.items[i];
                if (j->state == SJ_QUEUED && sc_fits(a, j) && (!best || sc_before(j, best))) best = j;
            }
            if (best) {
                w->job = sc_assign_locked(s, best, a);
                if (w->job) snprintf(w->job_id, sizeof w->job_id, "%s", best->id);
                else sv_fail(&w->err, 500, "store_error", "the jobs database failed (see the log)");
            } else {
                w->deadline = now + s->o.poll_ms;
                w->prev = s->wtail;
                if (s->wtail) s->wtail->next = w;
                else s->whead = w;
                s->wtail = w;
                w->linked = true;
                a->waiter = w;
            }
        }
    }
    if (!w->linked) {
        w->woken = true;
        wake(ctx);
    }
    pthread_mutex_unlock(&s->mu);
}

json_t *rx_sched_poll_end(rx_sched *s, rx_sched_waiter *w, rx_sched_err *e)
{
    pthread_mutex_lock(&s->mu);
    sc_waiter_unlink_locked(s, w);
    w->woken = true;
    json_t *job = w->job;
    w->job = NULL;
    if (w->err.status && e) *e = w->err;
    pthread_mutex_unlock(&s->mu);
    return job;
}

void rx_sched_poll_undelivered(rx_sched *s, rx_sched_waiter *w)
{
    if (!w->job_id[0]) return;
    pthread_mutex_lock(&s->mu);
    sjob *j = sc_find_active(s, w->job_id);
    if (j && j->state == SJ_RUNNING && j->agent && !strcmp(j->agent->id, w->agent) &&
        !j->heard) {
        char err[320];
        j->attempts--;
        if (jdb_requeue(s->db, j, j->enqueued_wall, err, sizeof err)) {
            j->attempts++;
            sc_log_db_error(s, err);
        } else {
            sc_slog(s, RX_SCHED_LOG_WARN,
                 json_pack("{s:s, s:s, s:s}", "event", "bench_undelivered", "job", j->id,
                           "agent", j->agent->name));
            j->agent->job = NULL;
            j->agent = NULL;
            j->state = SJ_QUEUED;
            sc_set_state_count(s, SJ_RUNNING, SJ_QUEUED);
            sc_dispatch_locked(s, j);
        }
    }
    w->job_id[0] = '\0';
    pthread_mutex_unlock(&s->mu);
}

json_t *rx_sched_result(rx_sched *s, const char *agent, const char *job, const json_t *body,
                        rx_sched_err *e)
{
    sj_state st;
    json_t *result, *error;
    pthread_mutex_lock(&s->mu);
    sagent *a = rx_sched_valid_id(agent) ? sc_find_agent(s, agent) : NULL;
    if (!a || !sv_result(body, &st, &result, &error, e)) {
        pthread_mutex_unlock(&s->mu);
        if (!a) unknown_agent(e);
        return NULL;
    }
    a->last_seen = sc_now_ms(s);
    a->offline = false;
    sjob *j = a->job;
    if (!j || !rx_sched_valid_id(job) || strcmp(j->id, job)) {
        pthread_mutex_unlock(&s->mu);
        sv_fail(e, 409, "not_assigned",
                "this job is not running on this agent (cancelled, timed out or re-queued); "
                "the report is dropped");
        return NULL;
    }
    j->heard = true;
    int r;
    const char *code = error ? json_string_value(json_object_get(error, "code")) : NULL;
    if (code && !strcmp(code, "agent_shutdown")) {
        char why[160];
        snprintf(why, sizeof why, "agent %s shut down while running it", a->name);
        r = sc_requeue_or_fail_locked(s, j, why);
    } else {
        json_t *err = error ? json_pack("{s:s, s:O}", "code", code, "message",
                                        json_object_get(error, "message"))
                            : NULL;
        r = sc_finish_locked(s, j, st, result, err);
        json_decref(err);
        if (r == 0) a->jobs_done++;
    }
    pthread_mutex_unlock(&s->mu);
    if (r) {
        sv_fail(e, 500, "store_error", "the jobs database failed (see the log)");
        return NULL;
    }
    return json_pack("{s:b}", "accepted", 1);
}

json_t *rx_sched_agents(rx_sched *s)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&s->mu);
    int64_t now = sc_now_ms(s);
    for (int i = 0; i < s->agents.n; i++) {
        sagent *a = s->agents.items[i];
        json_t *o = json_pack("{s:s, s:s, s:O, s:O, s:s, s:I, s:s?, s:I}", "id", a->id, "name",
                              a->name, "targets", a->targets, "labels", a->labels, "state",
                              sc_agent_state(a), "last_seen_ms_ago",
                              (json_int_t)(a->waiter ? 0 : now - a->last_seen), "job",
                              a->job ? a->job->id : NULL, "jobs_done",
                              (json_int_t)a->jobs_done);
        static const char *const facts[] = {"cpu", "cores", "memory_bytes", "runtime_version"};
        for (int k = 0; k < RX_COUNTOF(facts); k++) {
            json_t *v = json_object_get(a->facts, facts[k]);
            json_object_set_new(o, facts[k], v ? json_deep_copy(v) : json_null());
        }
        json_t *devs = json_object_get(a->facts, "devices");
        json_object_set_new(o, "devices", devs ? json_deep_copy(devs) : json_array());
        json_object_set_new(o, "polling", json_boolean(a->waiter != NULL));
        json_array_append_new(arr, o);
    }
    pthread_mutex_unlock(&s->mu);
    return json_pack("{s:o}", "agents", arr);
}

