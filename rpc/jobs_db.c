/*
 * jobs_db.c — the benchmark jobs database (sched_int.h): <data>/jobs.db, sqlite.
 *
 * Schema (version 1, PRAGMA user_version; migrations[v] brings version v to v + 1 inside
 * the opening transaction, and a database from a newer relaxd is refused):
 *     jobs(seq INTEGER PRIMARY KEY AUTOINCREMENT, id UNIQUE, status, artifact,
 *          artifact_bytes, target, labels JSON, priority, timeout_s, queue_timeout_s,
 *          max_attempts, attempts, spec JSON, data JSON?, agent?, created_ms,
 *          enqueued_ms, started_ms?, finished_ms?, result JSON?, error JSON?)
 * seq is the submission order (FIFO among equal priorities, newest-first listings);
 * AUTOINCREMENT so that a pruned row's seq is never reused. Times are Unix ms.
 * `spec` holds what the agent runs (function, shapes, repeat, number, warmup,
 * tolerance); `data` the inputs and expected outputs (base64 .npy), set to NULL when
 * the job finishes: they are needed only to run it, and can be large. `agent` is the
 * name of the agent of the latest run (NULL while queued).
 *
 * Durability. Every transition is one UPDATE (or the INSERT) in autocommit: atomic, and
 * committed before the scheduler answers. WAL with synchronous=FULL: each commit fsyncs
 * the WAL, so a job a client was told was accepted, or a result an agent was told was
 * accepted, survives a power loss too (NORMAL would only survive a process crash).
 * Unlike the artifact cache, nothing here can be rebuilt: a lost result costs a
 * benchmark run and a lost submission is silently gone. A commit costs about 0.25 ms
 * here (0.02 ms with NORMAL), at most a few per job.
 *
 * Opening checks the file before trusting it: a file that is not sqlite, or whose
 * schema is not this one, fails with a message naming the path; PRAGMA quick_check
 * must say "ok". The statements are prepared once at open (a foreign database whose
 * tables do not match fails there too).
 *
 * Recovery at open (one transaction): jobs left running by the previous process are
 * re-queued (agent NULL, enqueued now) when attempts remain, else failed agent_lost —
 * their agents are gone with the process's memory and must register again.
 *
 * The jdb_* calls are the scheduler's whole view of persistence (sched_int.h): another
 * backend (PostgreSQL, docs/design.md "When one machine is not enough") replaces this file.
 * Several relaxd sharing one queue would also need matching done in the database
 * (SELECT ... FOR UPDATE SKIP LOCKED) instead of in the scheduler's memory: not done.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/base.h"
#include "sched_int.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 5000

static const char *const migrations[SCHEMA_VERSION] = {
    "CREATE TABLE jobs ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT," /* submission order */
    "  id TEXT NOT NULL UNIQUE,"               /* 32 hex digits */
    "  status TEXT NOT NULL,"                  /* queued running done failed cancelled */
    "  artifact TEXT NOT NULL,"                /* hex SHA-256 of the .rxa */
    "  artifact_bytes INTEGER NOT NULL,"
    "  target TEXT NOT NULL,"
    "  labels TEXT NOT NULL,"                  /* JSON array of strings */
    "  priority INTEGER NOT NULL,"
    "  timeout_s INTEGER NOT NULL,"
    "  queue_timeout_s INTEGER NOT NULL,"
    "  max_attempts INTEGER NOT NULL,"
    "  attempts INTEGER NOT NULL,"             /* runs started */
    "  spec TEXT NOT NULL,"                    /* JSON: function, shapes, repeat, ... */
    "  data TEXT,"                             /* JSON: inputs, expected; NULL when done */
    "  agent TEXT,"                            /* agent name of the latest run */
    "  created_ms INTEGER NOT NULL,"
    "  enqueued_ms INTEGER NOT NULL,"          /* last entered the queue */
    "  started_ms INTEGER,"                    /* last assigned */
    "  finished_ms INTEGER,"
    "  result TEXT,"                           /* JSON */
    "  error TEXT);"                           /* JSON {code, message} */
    "CREATE INDEX jobs_by_status ON jobs(status, seq);",
};

#define COLS                                                                              \
    "id, status, artifact, target, labels, priority, timeout_s, queue_timeout_s,"        \
    " max_attempts, attempts, spec, agent, created_ms, enqueued_ms, started_ms,"          \
    " finished_ms, result, error, artifact_bytes"
#define FINISHED "('done', 'failed', 'cancelled')"

enum {
    Q_INSERT, Q_ASSIGN, Q_REQUEUE, Q_FINISH, Q_GET, Q_LIST, Q_LIST_ALL, Q_COUNTS,
    Q_QUEUED, Q_PRUNE, Q_COUNT
};

static const char *const query_sql[Q_COUNT] = {
    [Q_INSERT] = "INSERT INTO jobs(id, status, artifact, artifact_bytes, target, labels,"
                 " priority, timeout_s, queue_timeout_s, max_attempts, attempts, spec, data,"
                 " created_ms, enqueued_ms) VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                 " ?9, 0, ?10, ?11, ?12, ?12)",
    [Q_ASSIGN] = "UPDATE jobs SET status = 'running', attempts = ?2, agent = ?3,"
                 " started_ms = ?4 WHERE id = ?1 AND status IN ('queued', 'running')",
    [Q_REQUEUE] = "UPDATE jobs SET status = 'queued', attempts = ?2, agent = NULL,"
                  " enqueued_ms = ?3 WHERE id = ?1 AND status IN ('queued', 'running')",
    [Q_FINISH] = "UPDATE jobs SET status = ?2, result = ?3, error = ?4, finished_ms = ?5,"
                 " data = NULL WHERE id = ?1 AND status IN ('queued', 'running')",
    [Q_GET] = "SELECT " COLS " FROM jobs WHERE id = ?1",
    [Q_LIST] = "SELECT " COLS " FROM jobs WHERE status = ?1 ORDER BY seq DESC LIMIT ?2",
    [Q_LIST_ALL] = "SELECT " COLS " FROM jobs ORDER BY seq DESC LIMIT ?1",
    [Q_COUNTS] = "SELECT status, count(*) FROM jobs GROUP BY status",
    [Q_QUEUED] = "SELECT seq, id, artifact, artifact_bytes, target, labels, priority,"
                 " timeout_s, queue_timeout_s, max_attempts, attempts, spec, data,"
                 " enqueued_ms FROM jobs WHERE status = 'queued' ORDER BY seq",
    [Q_PRUNE] = "DELETE FROM jobs WHERE status IN " FINISHED " AND seq <= (SELECT seq FROM"
                " jobs WHERE status IN " FINISHED " ORDER BY seq DESC LIMIT 1 OFFSET ?1)",
};

/* Recovery of running jobs at open: ?1 is now (Unix ms). */
static const char recover_sql[] =
    "UPDATE jobs SET status = 'failed', finished_ms = ?1, data = NULL,"
    " error = json_object('code', 'agent_lost', 'message',"
    "   'the server restarted while agent ' || coalesce(agent, '?') || ' ran it; '"
    "   || attempts || ' of ' || max_attempts || ' attempts used')"
    " WHERE status = 'running' AND attempts >= max_attempts;"
    "UPDATE jobs SET status = 'queued', agent = NULL, enqueued_ms = ?1"
    " WHERE status = 'running';";

struct jdb {
    sqlite3 *db;               /* one connection, used under the scheduler's mutex */
    sqlite3_stmt *q[Q_COUNT];  /* prepared at open, reset after every use */
    char *path;                /* for messages */
};

static const char *const state_names[SJ_NSTATES] = {"queued", "running", "done", "failed",
                                                    "cancelled"};

const char *sj_state_name(sj_state st) { return state_names[st]; }

bool sj_state_parse(const char *s, sj_state *out)
{
    for (int i = 0; i < SJ_NSTATES; i++)
        if (!strcmp(s, state_names[i])) {
            *out = (sj_state)i;
            return true;
        }
    return false;
}

static int fail(jdb *d, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "jobs database %s: %s: %s", d->path, what, sqlite3_errmsg(d->db));
    return -1;
}

/* Runs a statement that returns no rows (or whose rows are ignored); resets it. */
static int step_done(jdb *d, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
    int r = rc == SQLITE_DONE ? 0 : fail(d, what, err, errlen);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return r;
}

/* Binds a JSON value as compact text (NULL value: SQL NULL). */
static int bind_json(sqlite3_stmt *st, int i, const json_t *v)
{
    if (!v) return sqlite3_bind_null(st, i);
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) return SQLITE_NOMEM;
    return sqlite3_bind_text(st, i, s, -1, free);
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

/* A TEXT column parsed as JSON (new reference); NULL for SQL NULL or bad text. */
static json_t *col_json(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    if (!s) return NULL;
    return json_loads(s, JSON_DECODE_ANY, NULL);
}

static int exec(jdb *d, const char *sql, const char *what, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    snprintf(err, errlen, "jobs database %s: %s: %s", d->path, what,
             msg ? msg : sqlite3_errmsg(d->db));
    sqlite3_free(msg);
    return -1;
}

/* PRAGMA name (an integer or text answer) into buf. */
static int pragma(jdb *d, const char *sql, char *buf, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(d, sql, err, errlen);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        snprintf(buf, n, "%s", t ? t : "");
    } else if (rc == SQLITE_DONE) {
        buf[0] = '\0';
    }
    int r = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(d, sql, err, errlen);
    sqlite3_finalize(st);
    return r;
}

/* Brings the schema to SCHEMA_VERSION, in one transaction. */
static int migrate(jdb *d, int version, char *err, size_t errlen)
{
    if (version == SCHEMA_VERSION) return 0;
    if (exec(d, "BEGIN IMMEDIATE", "begin", err, errlen)) return -1;
    for (int v = version; v < SCHEMA_VERSION; v++)
        if (exec(d, migrations[v], "creating the schema", err, errlen)) goto rollback;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", SCHEMA_VERSION);
    if (exec(d, sql, "setting the schema version", err, errlen)) goto rollback;
    if (exec(d, "COMMIT", "commit", err, errlen)) goto rollback;
    return 0;
rollback:
    sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* Re-queues (or fails) the jobs a previous process left running, in one transaction. */
static int recover(jdb *d, int64_t now, char *err, size_t errlen)
{
    if (exec(d, "BEGIN IMMEDIATE", "begin", err, errlen)) return -1;
    const char *tail = recover_sql;
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(d->db, tail, -1, &st, &tail) != SQLITE_OK) {
            fail(d, "recovering running jobs", err, errlen);
            goto rollback;
        }
        if (!st) break;
        sqlite3_bind_int64(st, 1, now);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            fail(d, "recovering running jobs", err, errlen);
            goto rollback;
        }
    }
    if (exec(d, "COMMIT", "commit", err, errlen)) goto rollback;
    return 0;
rollback:
    sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

jdb *jdb_open(const char *path, int64_t wall_now, char *err, size_t errlen)
{
    jdb *d = calloc(1, sizeof *d);
    RX_ASSERT(d);
    d->path = rx_xstrdup(path);
    char buf[256];
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &d->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open the jobs database %s: %s", path,
                 d->db ? sqlite3_errmsg(d->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(d->db, BUSY_TIMEOUT_MS);
    /* the first read of the header: a file that is not sqlite fails here */
    if (pragma(d, "PRAGMA user_version", buf, sizeof buf, err, errlen)) {
        snprintf(err, errlen,
                 "the jobs database %s cannot be read (%s): move it aside to start with an "
                 "empty job queue",
                 path, sqlite3_errmsg(d->db));
        goto fail;
    }
    int version = atoi(buf);
    if (version > SCHEMA_VERSION || version < 0) {
        snprintf(err, errlen,
                 "the jobs database %s has schema version %d; this relaxd knows up to %d "
                 "(written by a newer relaxd?)",
                 path, version, SCHEMA_VERSION);
        goto fail;
    }
    if (pragma(d, "PRAGMA journal_mode=WAL", buf, sizeof buf, err, errlen)) goto fail;
    if (strcmp(buf, "wal")) {
        snprintf(err, errlen, "the jobs database %s cannot use WAL mode (journal mode %s)",
                 path, buf);
        goto fail;
    }
    if (exec(d, "PRAGMA synchronous=FULL", "pragma", err, errlen)) goto fail;
    if (pragma(d, "PRAGMA quick_check", buf, sizeof buf, err, errlen)) goto fail;
    if (strcmp(buf, "ok")) {
        snprintf(err, errlen,
                 "the jobs database %s is damaged (quick_check: %.120s): move it aside to "
                 "start with an empty job queue",
                 path, buf);
        goto fail;
    }
    if (migrate(d, version, err, errlen)) goto fail;
    for (int i = 0; i < Q_COUNT; i++)
        if (sqlite3_prepare_v3(d->db, query_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &d->q[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s is not a relaxd jobs database of schema %d: %s", path,
                     SCHEMA_VERSION, sqlite3_errmsg(d->db));
            goto fail;
        }
    if (recover(d, wall_now, err, errlen)) goto fail;
    return d;
fail:
    jdb_close(d);
    return NULL;
}

void jdb_close(jdb *d)
{
    if (!d) return;
    for (int i = 0; i < Q_COUNT; i++) sqlite3_finalize(d->q[i]);
    if (d->db) {
        sqlite3_exec(d->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(d->db);
    }
    free(d->path);
    free(d);
}

/* ---- loading ---- */

/* Row of Q_QUEUED -> a job (NULL: the stored JSON is unreadable). */
static sjob *queued_row(sqlite3_stmt *st)
{
    sjob *j = calloc(1, sizeof *j);
    RX_ASSERT(j);
    j->seq = sqlite3_column_int64(st, 0);
    snprintf(j->id, sizeof j->id, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(j->artifact, sizeof j->artifact, "%s", (const char *)sqlite3_column_text(st, 2));
    j->artifact_bytes = sqlite3_column_int64(st, 3);
    snprintf(j->target, sizeof j->target, "%s", (const char *)sqlite3_column_text(st, 4));
    j->labels = col_json(st, 5);
    j->priority = sqlite3_column_int(st, 6);
    j->timeout_s = sqlite3_column_int(st, 7);
    j->queue_timeout_s = sqlite3_column_int(st, 8);
    j->max_attempts = sqlite3_column_int(st, 9);
    j->attempts = sqlite3_column_int(st, 10);
    j->spec = col_json(st, 11);
    j->data = col_json(st, 12);
    j->enqueued_wall = sqlite3_column_int64(st, 13);
    j->state = SJ_QUEUED;
    if (!json_is_array(j->labels) || !json_is_object(j->spec) ||
        (j->data && !json_is_object(j->data))) {
        sjob_free(j);
        return NULL;
    }
    return j;
}

int jdb_load_queued(jdb *d, void (*fn)(void *ctx, sjob *j), void *ctx, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_QUEUED];
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sjob *j = queued_row(st);
        if (!j) {
            snprintf(err, errlen, "the jobs database %s holds an unreadable job %s",
                     d->path, (const char *)sqlite3_column_text(st, 1));
            sqlite3_reset(st);
            return -1;
        }
        fn(ctx, j);
    }
    int r = rc == SQLITE_DONE ? 0 : fail(d, "loading queued jobs", err, errlen);
    sqlite3_reset(st);
    return r;
}

int jdb_counts(jdb *d, int64_t counts[SJ_NSTATES], char *err, size_t errlen)
{
    memset(counts, 0, sizeof(int64_t) * SJ_NSTATES);
    sqlite3_stmt *st = d->q[Q_COUNTS];
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sj_state s;
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && sj_state_parse(name, &s)) counts[s] = sqlite3_column_int64(st, 1);
    }
    int r = rc == SQLITE_DONE ? 0 : fail(d, "counting jobs", err, errlen);
    sqlite3_reset(st);
    return r;
}

/* ---- transitions ---- */

int jdb_insert(jdb *d, sjob *j, int64_t created_wall, char *err, size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_INSERT];
    bind_text(st, 1, j->id);
    bind_text(st, 2, j->artifact);
    sqlite3_bind_int64(st, 3, j->artifact_bytes);
    bind_text(st, 4, j->target);
    bind_json(st, 5, j->labels);
    sqlite3_bind_int(st, 6, j->priority);
    sqlite3_bind_int(st, 7, j->timeout_s);
    sqlite3_bind_int(st, 8, j->queue_timeout_s);
    sqlite3_bind_int(st, 9, j->max_attempts);
    bind_json(st, 10, j->spec);
    bind_json(st, 11, j->data);
    sqlite3_bind_int64(st, 12, created_wall);
    if (step_done(d, st, "storing a job", err, errlen)) return -1;
    j->seq = sqlite3_last_insert_rowid(d->db);
    return 0;
}

/* One-row UPDATE check: the row must have been in an active state. */
static int changed_one(jdb *d, const char *id, char *err, size_t errlen)
{
    if (sqlite3_changes(d->db) == 1) return 0;
    snprintf(err, errlen, "jobs database %s: job %s is not active in the database", d->path,
             id);
    return -1;
}

int jdb_assign(jdb *d, const sjob *j, const char *agent_name, int64_t wall, char *err,
               size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_ASSIGN];
    bind_text(st, 1, j->id);
    sqlite3_bind_int(st, 2, j->attempts);
    bind_text(st, 3, agent_name);
    sqlite3_bind_int64(st, 4, wall);
    if (step_done(d, st, "assigning a job", err, errlen)) return -1;
    return changed_one(d, j->id, err, errlen);
}

int jdb_requeue(jdb *d, const sjob *j, int64_t enqueued_wall, char *err, size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_REQUEUE];
    bind_text(st, 1, j->id);
    sqlite3_bind_int(st, 2, j->attempts);
    sqlite3_bind_int64(st, 3, enqueued_wall);
    if (step_done(d, st, "re-queueing a job", err, errlen)) return -1;
    return changed_one(d, j->id, err, errlen);
}

int jdb_finish(jdb *d, const char *id, sj_state state, const json_t *result,
               const json_t *error, int64_t wall, char *err, size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_FINISH];
    bind_text(st, 1, id);
    bind_text(st, 2, sj_state_name(state));
    bind_json(st, 3, result);
    bind_json(st, 4, error);
    sqlite3_bind_int64(st, 5, wall);
    if (step_done(d, st, "finishing a job", err, errlen)) return -1;
    return changed_one(d, id, err, errlen);
}

/* ---- reading ---- */

static json_t *int_or_null(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null()
                                                     : json_integer(sqlite3_column_int64(st, i));
}

static json_t *json_or_null(sqlite3_stmt *st, int i)
{
    json_t *v = col_json(st, i);
    return v ? v : json_null();
}

/* A row of COLS -> the API's job object. queue_ms: time in the queue before the latest
 * start (or until now / the end when it never started since it was last queued);
 * run_ms: the latest run's time (until now while running), null when not run. */
static json_t *row_json(sqlite3_stmt *st, int64_t now)
{
    const char *status = (const char *)sqlite3_column_text(st, 1);
    bool has_start = sqlite3_column_type(st, 14) != SQLITE_NULL;
    bool has_end = sqlite3_column_type(st, 15) != SQLITE_NULL;
    int64_t enq = sqlite3_column_int64(st, 13), start = sqlite3_column_int64(st, 14);
    int64_t end = has_end ? sqlite3_column_int64(st, 15) : now;
    bool ran = strcmp(status, "queued") && has_start && start >= enq;
    int64_t queue_ms = (ran ? start : end) - enq;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string((const char *)sqlite3_column_text(st, 0)));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "artifact", json_string((const char *)sqlite3_column_text(st, 2)));
    json_object_set_new(o, "artifact_bytes", json_integer(sqlite3_column_int64(st, 18)));
    json_object_set_new(o, "target", json_string((const char *)sqlite3_column_text(st, 3)));
    json_t *spec = col_json(st, 10);
    if (json_is_object(spec)) json_object_update(o, spec);
    json_decref(spec);
    json_object_set_new(o, "labels", json_or_null(st, 4));
    json_object_set_new(o, "priority", json_integer(sqlite3_column_int(st, 5)));
    json_object_set_new(o, "timeout_s", json_integer(sqlite3_column_int(st, 6)));
    json_object_set_new(o, "queue_timeout_s", json_integer(sqlite3_column_int(st, 7)));
    json_object_set_new(o, "max_attempts", json_integer(sqlite3_column_int(st, 8)));
    json_object_set_new(o, "attempts", json_integer(sqlite3_column_int(st, 9)));
    const char *agent = (const char *)sqlite3_column_text(st, 11);
    json_object_set_new(o, "agent", agent ? json_string(agent) : json_null());
    json_object_set_new(o, "created_ms", json_integer(sqlite3_column_int64(st, 12)));
    json_object_set_new(o, "queue_ms", json_integer(queue_ms > 0 ? queue_ms : 0));
    json_object_set_new(o, "run_ms", ran ? json_integer(end - start > 0 ? end - start : 0)
                                         : json_null());
    json_object_set_new(o, "finished_ms", int_or_null(st, 15));
    json_object_set_new(o, "result", json_or_null(st, 16));
    json_object_set_new(o, "error", json_or_null(st, 17));
    return o;
}

json_t *jdb_job_json(jdb *d, const char *id, int64_t wall_now, bool *found, char *err,
                     size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_GET];
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    json_t *o = NULL;
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) o = row_json(st, wall_now);
    else if (rc != SQLITE_DONE) fail(d, "reading a job", err, errlen);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return o;
}

json_t *jdb_jobs_json(jdb *d, sj_state state, int limit, int64_t wall_now, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = d->q[state == SJ_NSTATES ? Q_LIST_ALL : Q_LIST];
    if (state == SJ_NSTATES) {
        sqlite3_bind_int(st, 1, limit);
    } else {
        bind_text(st, 1, sj_state_name(state));
        sqlite3_bind_int(st, 2, limit);
    }
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, row_json(st, wall_now));
    if (rc != SQLITE_DONE) {
        fail(d, "listing jobs", err, errlen);
        json_decref(arr);
        arr = NULL;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return arr;
}

int64_t jdb_prune(jdb *d, int64_t keep, char *err, size_t errlen)
{
    sqlite3_stmt *st = d->q[Q_PRUNE];
    sqlite3_bind_int64(st, 1, keep);
    if (step_done(d, st, "pruning finished jobs", err, errlen)) return -1;
    return sqlite3_changes(d->db);
}
