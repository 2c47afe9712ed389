/*
 * sched_int.h — what rxsched's files share (not installed).
 *
 *   sched.c      the scheduler: state, matching, transitions, clients' calls, the reaper
 *   sched_agent.c  the agents' calls: register, heartbeat, poll, result, listing
 *   jobs_db.c    the jobs database: schema, open and recovery, one call per transition
 *   validate.c   request bodies: register, submit, result (located 400 messages)
 *
 * The database layer is not thread-safe: sched.c calls it under its mutex.
 */
#ifndef RELAX_SCHED_INT_H
#define RELAX_SCHED_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "relax/sched.h"
#include "relax/base.h"

/* Job states; the names are the API's and the database's. */
typedef enum sj_state {
    SJ_QUEUED, SJ_RUNNING, SJ_DONE, SJ_FAILED, SJ_CANCELLED,
    SJ_NSTATES             /* count; also "any state" in jdb_jobs_json */
} sj_state;

const char *sj_state_name(sj_state st);
bool sj_state_parse(const char *s, sj_state *out);

/* Limits of request fields (validate.c and docs/rpc.md). */
#define RX_SCHED_NAME_MAX 64     /* agent names, labels, targets, functions, shape names */
#define RX_SCHED_TEXT_MAX 256    /* cpu, runtime_version */
#define RX_SCHED_LIST_MAX 64     /* targets, labels, shapes, inputs, expected */
#define RX_SCHED_MESSAGE_MAX 4096 /* an agent's error message */

struct sagent;

/* A queued or running job, as held in memory (finished jobs live in the database only). */
typedef struct sjob {
    char id[RX_SCHED_ID_LEN + 1];
    int64_t seq;               /* database row order: FIFO among equal priorities */
    sj_state state;            /* SJ_QUEUED or SJ_RUNNING */
    char artifact[65];         /* hex SHA-256 of the .rxa */
    int64_t artifact_bytes;
    char target[RX_SCHED_NAME_MAX + 1];
    bool target_given;         /* the body named it (else the artifact's kind decides) */
    json_t *labels;            /* array of strings the agent must all have */
    int priority;              /* larger first */
    int timeout_s, queue_timeout_s, max_attempts;
    int attempts;              /* runs started */
    json_t *spec;              /* {function, shapes, repeat, number, warmup, tolerance?} */
    json_t *data;              /* {inputs?, expected?} or NULL */
    int64_t enqueued_mono;     /* when it (re-)entered the queue, monotonic ms */
    int64_t enqueued_wall;     /* the same, Unix ms (restored when a delivery fails) */
    int64_t started_mono;      /* when it was assigned, monotonic ms (running) */
    struct sagent *agent;      /* the agent running it (running) */
    bool heard;                /* the agent spoke of it since the assignment */
} sjob;

/* ---- jobs_db.c ---- */

typedef struct jdb jdb;

/* Opens or creates the database at path (WAL, synchronous=FULL, schema migrated),
 * checks it (quick_check), and re-queues the running jobs of a previous process (or
 * fails them agent_lost when their attempts are used up), committed. NULL with err. */
jdb *jdb_open(const char *path, int64_t wall_now, char *err, size_t errlen);
void jdb_close(jdb *d);

/* Calls fn for every queued job, oldest first; the job is the callee's (sjob_free). */
int jdb_load_queued(jdb *d, void (*fn)(void *ctx, sjob *j), void *ctx, char *err,
                    size_t errlen);

/* Jobs per state (counts[SJ_NSTATES]). */
int jdb_counts(jdb *d, int64_t counts[SJ_NSTATES], char *err, size_t errlen);

/* Transitions, one committed statement each; 0 or -1 with err. */
int jdb_insert(jdb *d, sjob *j, int64_t created_wall, char *err, size_t errlen); /* sets seq */
int jdb_assign(jdb *d, const sjob *j, const char *agent_name, int64_t wall, char *err,
               size_t errlen);
int jdb_requeue(jdb *d, const sjob *j, int64_t enqueued_wall, char *err, size_t errlen);
int jdb_finish(jdb *d, const char *id, sj_state st, const json_t *result, const json_t *error,
               int64_t wall, char *err, size_t errlen);

/* The API object of job id (new reference; "position" is the caller's), NULL when the
 * job is unknown (*found = false) or on an error (err set, *found = true). */
json_t *jdb_job_json(jdb *d, const char *id, int64_t wall_now, bool *found, char *err,
                     size_t errlen);

/* Job objects, newest first, of state st (SJ_NSTATES: all), at most limit. */
json_t *jdb_jobs_json(jdb *d, sj_state st, int limit, int64_t wall_now, char *err,
                      size_t errlen);

/* Deletes finished jobs beyond the newest keep; returns how many, -1 on an error. */
int64_t jdb_prune(jdb *d, int64_t keep, char *err, size_t errlen);

/* ---- sched.c (shared with sched_agent.c; the _locked ones need s->mu) ---- */

void sjob_free(sjob *j);

typedef struct sagent {
    char id[RX_SCHED_ID_LEN + 1];
    char name[RX_SCHED_NAME_MAX + 1];
    json_t *targets;           /* array of strings */
    json_t *labels;            /* array of strings */
    json_t *facts;             /* {cpu, cores, memory_bytes, runtime_version, devices}
                                  (present ones) */
    int64_t last_seen;         /* monotonic ms of its last request (or poll end) */
    bool offline;              /* its lease expired */
    sjob *job;                 /* the job it runs, or NULL */
    rx_sched_waiter *waiter;   /* its parked poll, or NULL */
    int64_t jobs_done;         /* results accepted from it */
    int64_t order;             /* registration order (the oldest offline is forgotten) */
} sagent;

struct rx_sched {
    rx_sched_opts o;           /* copy; db_path below */
    char *db_path;
    jdb *db;
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* the reaper's sleep; signalled on stop */
    pthread_t reaper;
    bool reaper_started;
    bool stopping;
    RX_VEC(sagent *) agents;   /* registration order */
    RX_VEC(sjob *) active;     /* queued and running jobs, submission order */
    rx_sched_waiter *whead, *wtail; /* parked polls, oldest first */
    int64_t counts[SJ_NSTATES]; /* jobs per state (the database's, kept in step) */
    uint64_t dbuckets[RX_SCHED_DISPATCH_BUCKETS];
    uint64_t dcount;
    double dsum;
    int64_t next_prune;        /* monotonic ms */
    int64_t agent_order;
};

/* The helpers below are documented where sched.c defines them. */
int64_t sc_now_ms(const rx_sched *s);
void sc_slog(rx_sched *s, int level, json_t *obj);
void sc_log_db_error(rx_sched *s, const char *msg);
void sc_random_id(char out[RX_SCHED_ID_LEN + 1]);
void sc_agent_free(sagent *a);
sagent *sc_find_agent(rx_sched *s, const char *id);
sjob *sc_find_active(rx_sched *s, const char *id);
bool sc_fits(const sagent *a, const sjob *j);
bool sc_before(const sjob *a, const sjob *b);
const char *sc_agent_state(const sagent *a);
void sc_waiter_unlink_locked(rx_sched *s, rx_sched_waiter *w);
void sc_waiter_wake_locked(rx_sched *s, rx_sched_waiter *w);
void sc_set_state_count(rx_sched *s, sj_state from, sj_state to);
json_t *sc_assign_locked(rx_sched *s, sjob *j, sagent *a);
void sc_dispatch_locked(rx_sched *s, sjob *j);
int sc_finish_locked(rx_sched *s, sjob *j, sj_state st, const json_t *result,
                     const json_t *error);
int sc_requeue_or_fail_locked(rx_sched *s, sjob *j, const char *why);

/* ---- validate.c ---- */

/* Limits the validation applies that come from the options. */
typedef struct sv_defaults {
    int timeout_s, queue_timeout_s, max_attempts;
} sv_defaults;

/* A submission body -> a new job (heap; id, seq and times unset) or NULL with a 400 in *e. */
sjob *sv_submit(const json_t *body, const sv_defaults *d, rx_sched_err *e);

/* A registration body: fills the fields (new references for the arrays, copies of
 * the strings into info) or fills *e with a 400. */
typedef struct sv_agent {
    char name[RX_SCHED_NAME_MAX + 1];
    json_t *targets, *labels;  /* arrays of strings (new references) */
    json_t *facts;             /* {cpu, cores, memory_bytes, runtime_version, devices}
                                  (new ref) */
} sv_agent;
bool sv_register(const json_t *body, sv_agent *out, rx_sched_err *e);

/* A result body: the new state (SJ_DONE or SJ_FAILED), its result and error (borrowed
 * from body; either may be NULL), or false with *e. */
bool sv_result(const json_t *body, sj_state *st, json_t **result, json_t **error,
               rx_sched_err *e);

/* A heartbeat body: the job id named (NULL: none), or false with *e. */
bool sv_heartbeat(const json_t *body, const char **job, rx_sched_err *e);

/* Fills *e (status, code, printf message). */
void sv_fail(rx_sched_err *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
