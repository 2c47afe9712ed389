/*
 * sched.h — the server side of remote benchmarking (rxsched): benchmark jobs persisted
 * in sqlite, the registry of agents, leases, matching, timeouts and cancellation. The
 * protocol it implements is docs/rpc.md; relaxd's HTTP layer (server/bench.c) is a thin
 * mapping of those endpoints onto the calls below, so everything here can be tested
 * without HTTP (tests/unit/rpc/test_sched.c).
 *
 * Objects:
 *   job     a benchmark request: artifact, target, labels, function, shapes, repeat,
 *           inputs, ...; states queued -> running -> done | failed, queued|running ->
 *           cancelled, running -> queued (agent lost, attempts left). Every job and
 *           every transition is a row in <data>/jobs.db, committed before the call
 *           that made it returns. Queued and running jobs are also held in memory.
 *   agent   a registered relax-agent: name, targets, labels, machine facts, state
 *           idle | busy | offline, at most one running job. In memory only: after a
 *           restart agents register again (heartbeat and poll answer unknown_agent).
 *   waiter  an agent's long poll parked by the HTTP layer (rx_sched_poll): woken once,
 *           by a job assignment, by its deadline (poll_ms), by the agent's next poll or
 *           registration, or by rx_sched_stop.
 *
 * Operations and their costs (n: queued jobs in memory, a: agents, w: parked polls):
 *   register     O(a) name lookup; re-queues the job of an agent that restarted
 *   heartbeat    O(a); no database write
 *   poll         O(a + n) to pick the best queued job (priority desc, then FIFO) the
 *                agent matches; one committed UPDATE when it assigns
 *   submit       validation, one INSERT, then O(w) to hand the job to a parked poll
 *   result       one UPDATE; cancel one UPDATE; job / jobs one SELECT
 *   tick         O(a + n + w): poll deadlines, lease expiry, queue and run timeouts;
 *                one UPDATE per job it moves
 * Everything runs under one mutex; a database write (synchronous=FULL: one fsync of
 * the WAL, about 0.25 ms here) is the longest thing held.
 *
 * Clocks: deadlines (leases, poll, queue and run timeouts) use a monotonic clock; the
 * database keeps Unix milliseconds (wall), converted to monotonic deadlines when the
 * jobs are loaded at open. Both clocks can be injected (tests use a fake clock and call
 * rx_sched_tick themselves, so nothing sleeps).
 *
 * Errors: calls that answer a request fill an rx_sched_err with an HTTP status, a code
 * and a one-line message naming the field ("targets: expected a non-empty array of
 * strings"); the HTTP layer replies with them as they are.
 */
#ifndef RELAX_SCHED_H
#define RELAX_SCHED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rx_sched rx_sched;

#define RX_SCHED_PROTOCOL 1     /* the agent protocol version this server speaks */
#define RX_SCHED_ID_LEN 32      /* job and agent ids: 32 lowercase hex digits */
#define RX_SCHED_DISPATCH_BUCKETS 10 /* dispatch latency histogram buckets */

/* Log sink: obj is a JSON object {"event": ..., ...}; the callee takes the reference. */
typedef void (*rx_sched_log_fn)(void *ctx, int level, json_t *obj);
enum { RX_SCHED_LOG_DEBUG, RX_SCHED_LOG_INFO, RX_SCHED_LOG_WARN, RX_SCHED_LOG_ERROR };

/* Whether an artifact exists: 0 yes (*bytes set, and kind[kind_cap] the kind of the
 * target it was compiled for, "cpu", "vulkan", ..., or "" when unknown), 1 no, -1 the
 * store failed. */
typedef int (*rx_sched_artifact_fn)(void *ctx, const char *id, int64_t *bytes, char *kind,
                                    size_t kind_cap);

typedef struct rx_sched_opts {
    const char *db_path;       /* the jobs database, e.g. <data>/jobs.db (created) */
    int64_t heartbeat_ms;      /* told to agents: heartbeat period while running */
    int64_t lease_ms;          /* an agent silent this long is offline */
    int64_t poll_ms;           /* longest long poll */
    int timeout_s;             /* default run time limit of a job */
    int queue_timeout_s;       /* default queue time limit */
    int max_attempts;          /* default runs before agent_lost */
    int max_queued;            /* queued + running jobs at most (503 queue_full) */
    int max_agents;            /* registrations held at most (oldest offline forgotten) */
    int64_t history;           /* finished jobs kept in the database (older pruned) */
    int64_t (*now_ms)(void *ctx);  /* monotonic ms; NULL: CLOCK_MONOTONIC */
    int64_t (*wall_ms)(void *ctx); /* Unix ms; NULL: CLOCK_REALTIME */
    void *clock_ctx;
    bool manual_tick;          /* no reaper thread: the caller runs rx_sched_tick */
    int tick_ms;               /* reaper period (default 100) */
    rx_sched_log_fn log;       /* NULL: no logs */
    void *log_ctx;
} rx_sched_opts;

/* Fills o with the defaults of docs/rpc.md (heartbeat 1 s, lease 5 s, poll 20 s,
 * timeout 60 s, queue timeout 600 s, 3 attempts, 10000 queued, 1024 agents, 100000
 * finished jobs kept, 100 ms ticks); db_path stays NULL. */
void rx_sched_opts_default(rx_sched_opts *o);

typedef struct rx_sched_err {
    int status;                /* HTTP status: 400, 404, 409, 500, 503 */
    char code[32];             /* "bad_request", "unknown_agent", "not_assigned", ... */
    char message[320];         /* one line, names the field or the object */
} rx_sched_err;

/* Opens (creating when missing) the database and loads its queued jobs; running jobs
 * of a previous process are re-queued (or failed agent_lost once their attempts are
 * used up), since their agents must register again. A file that is not a jobs database
 * (garbage, damaged, newer schema) is refused with a message naming it. Starts the
 * reaper thread unless manual_tick. NULL with a message in err. */
rx_sched *rx_sched_open(const rx_sched_opts *o, char *err, size_t errlen);

/* Stops taking work: parked polls are woken (they answer "no job"), new polls answer at
 * once, submissions are refused (503 shutting_down); the reaper thread is joined. Jobs
 * stay as they are in the database. Idempotent. */
void rx_sched_stop(rx_sched *s);

/* rx_sched_stop, then closes the database and frees everything. NULL is a no-op. */
void rx_sched_close(rx_sched *s);

/* ---- agent side ---- */

/* POST /v1/agents/register. body: {name, targets, labels?, cpu?, cores?, memory_bytes?,
 * runtime_version?, protocol?}. Returns {"agent", "heartbeat_ms", "lease_ms",
 * "poll_ms"} (new reference) or NULL with *e. The id is stable per name while the
 * process lives; re-registering re-queues the job the agent held (it restarted). */
json_t *rx_sched_register(rx_sched *s, const json_t *body, rx_sched_err *e);

/* POST /v1/agents/<agent>/heartbeat. body: {"job": id | null} (NULL or {}: null).
 * Renews the lease; returns {"cancel": bool}: true when the job named is not running
 * on this agent any more (cancelled, timed out, re-queued). NULL with *e. */
json_t *rx_sched_heartbeat(rx_sched *s, const char *agent, const json_t *body,
                           rx_sched_err *e);

/* A long poll, parked by the caller. Owned by the caller; linked into the scheduler
 * while parked. The fields are the scheduler's (read them through rx_sched_poll_end). */
typedef struct rx_sched_waiter {
    char agent[RX_SCHED_ID_LEN + 1]; /* the polling agent */
    void (*wake)(void *ctx);   /* called once, under the scheduler's mutex: must not block */
    void *ctx;
    int64_t deadline;          /* monotonic ms: answer "no job" past it */
    json_t *job;               /* the JOBSPEC assigned (owned), or NULL */
    char job_id[RX_SCHED_ID_LEN + 1]; /* its id ("" none): for rx_sched_poll_undelivered */
    rx_sched_err err;          /* status != 0: the poll failed (unknown agent, ...) */
    bool linked;               /* in the scheduler's list, wake not called yet */
    bool woken;                /* wake has been called */
    struct rx_sched_waiter *prev, *next;
} rx_sched_waiter;

/* POST /v1/agents/<agent>/poll. The caller suspends its request first, then calls
 * this; wake(ctx) is called exactly once — at once (inside this call) when the answer
 * is already known (a job to hand out, an error, stopping), otherwise later from any
 * thread. A job running on this agent is re-queued first (the agent gave it up). */
void rx_sched_poll(rx_sched *s, const char *agent, const json_t *body, rx_sched_waiter *w,
                   void (*wake)(void *ctx), void *ctx);

/* Ends a poll after its wake (or abandons one still parked: it is unlinked). Returns
 * the JOBSPEC (new reference; NULL: no job, 204) and copies w->err into *e when it
 * failed. May be called more than once; only the first call returns the job. */
json_t *rx_sched_poll_end(rx_sched *s, rx_sched_waiter *w, rx_sched_err *e);

/* The reply carrying w's job could not be delivered (the connection failed): the job
 * goes back to the queue without counting the attempt, if it is still running on
 * that agent and nothing was heard from it since. */
void rx_sched_poll_undelivered(rx_sched *s, rx_sched_waiter *w);

/* POST /v1/agents/<agent>/jobs/<job>/result. body: {"status": "done", "result": {...}}
 * or {"status": "failed", "error": {"code", "message"}, "result"?}. Returns
 * {"accepted": true} or NULL with *e (409 not_assigned when the job is not running on
 * this agent). A failure with code agent_shutdown re-queues the job like a lost lease. */
json_t *rx_sched_result(rx_sched *s, const char *agent, const char *job, const json_t *body,
                        rx_sched_err *e);

/* GET /v1/agents: {"agents": [...]} (new reference). */
json_t *rx_sched_agents(rx_sched *s);

/* ---- client side ---- */

/* POST /v1/benchmarks. Validates body (every field located), asks artifact() whether
 * the artifact exists (404 not_found otherwise), stores the job and hands it to a
 * parked poll of a matching agent at once. Returns {"job", "status": "queued" |
 * "running"} (new reference) or NULL with *e. */
json_t *rx_sched_submit(rx_sched *s, const json_t *body, rx_sched_artifact_fn artifact,
                        void *actx, rx_sched_err *e);

/* GET /v1/benchmarks/<id>: the job object (new reference) or NULL with *e (404). */
json_t *rx_sched_job(rx_sched *s, const char *id, rx_sched_err *e);

/* GET /v1/benchmarks?status=S&limit=N: {"jobs": [...]}, newest first. status may be
 * NULL (all); limit 1..1000. NULL with *e for a bad status or limit. */
json_t *rx_sched_jobs(rx_sched *s, const char *status, const char *limit, rx_sched_err *e);

/* POST /v1/benchmarks/<id>/cancel: the job object, now cancelled (new reference), or
 * NULL with *e: 404 unknown, 409 finished. A running job's agent hears cancel=true on
 * its next heartbeat. */
json_t *rx_sched_cancel(rx_sched *s, const char *id, rx_sched_err *e);

/* ---- upkeep ---- */

/* One reaper pass: poll deadlines, lease expiry (agent offline, its job re-queued or
 * failed agent_lost), queue timeouts, run timeouts (+ lease_ms of grace), history
 * pruning. The reaper thread calls it every tick_ms; tests call it directly. */
void rx_sched_tick(rx_sched *s);

typedef struct rx_sched_stats {
    int agents_idle, agents_busy, agents_offline;
    int64_t jobs_queued, jobs_running, jobs_done, jobs_failed, jobs_cancelled;
    uint64_t dispatch_buckets[RX_SCHED_DISPATCH_BUCKETS]; /* raw counts per bucket */
    uint64_t dispatch_count;   /* assignments */
    double dispatch_sum_s;     /* their total queue wait */
} rx_sched_stats;

/* The upper bounds (seconds) of the dispatch histogram's buckets. */
extern const double rx_sched_dispatch_bounds[RX_SCHED_DISPATCH_BUCKETS];

/* Current gauges and the dispatch histogram (submit or re-queue -> assignment). */
void rx_sched_get_stats(rx_sched *s, rx_sched_stats *out);

/* True when id is 32 lowercase hex digits (job and agent ids). */
bool rx_sched_valid_id(const char *id);

#endif
