/*
 * store_sqlite.c — the embedded store backend: sqlite in WAL mode for the metadata,
 * blob files (blob.c) under DIR/blobs for the bytes. Layout of the data directory:
 *
 *     DIR/cache.db (+ -wal, -shm)   metadata, schema below
 *     DIR/store.lock                fcntl write lock: one process owns DIR
 *     DIR/blobs/ab/abcdef...        artifact bytes, named by their SHA-256
 *
 * Schema (version 1, PRAGMA user_version; `migrations` lists one script per step, run
 * in order inside one transaction at open, so an old database is brought forward and a
 * newer one is refused rather than misread):
 *     artifacts(id PK, size, target, created_ms, last_access_ms, access_seq, meta)
 *     entries(key PK, id -> artifacts ON DELETE CASCADE, created_ms)
 * An artifact is a blob (several keys may name the same bytes); an entry maps a cache
 * key to it. Invariant: every artifact has at least one entry (a put that moves a key
 * off an artifact deletes the artifact when no other key holds it). "entries" in the
 * stats counts artifacts, "bytes" their sizes: what the blobs occupy.
 * LRU order is access_seq, a counter bumped (max + 1, inside the write) on every put and
 * on every flushed access: millisecond timestamps tie too often to order accesses.
 * last_access_ms is the wall-clock time reported to callers.
 *
 * The hit path touches no table (memo.c holds what it needs):
 *   - sizes: the memo knows the size of every artifact that recovery saw, that was put,
 *     or that a read found by SELECT since open, so a repeated read does no query. It
 *     is kept true by forgetting ids after every commit that deleted rows (tx_commit)
 *     and by its epoch (a SELECT that raced such a commit does not re-add the size).
 *   - verification: the memo keeps the fstat of each blob at its last full SHA-256
 *     check; read passes it to rx_blob_read as trusted while it is younger than
 *     verify_interval_ms, and records a new one after a full hash only when the file's
 *     mtime and ctime are RACY_NS older than the start of the read (store.h, "Verified
 *     on read").
 *   - accesses: hits and reads append to the memo's pending list (access order); a
 *     flush writes them with one Q_TOUCH each, oldest first, in one transaction, so
 *     their access_seq order is their access order. Flushes run inside every put
 *     before its own row (so an artifact read before a put stays older than it, and
 *     eviction, which runs inside put, sees every access), at close, and from the
 *     first hit after access_flush_ms, which only tries the write lock (a put holding
 *     it flushes anyway). A failed flush, or a put that rolls back after flushing,
 *     loses those accesses: LRU order only.
 *
 * Connections and locking. A pool of connections, each used by one thread at a time
 * (SQLITE_OPEN_NOMUTEX: sqlite's multi-thread mode): a thread checks one out for the
 * duration of a call and gives it back; the pool grows to the number of threads that
 * were ever inside the store at once. Chosen over one mutex-guarded connection because
 * WAL lets readers run in parallel with each other and with the writer, and the common
 * call (read of a hit: a SELECT plus a file read and a SHA-256 over megabytes) should
 * not queue behind other readers. Chosen over thread-local connections because those
 * need per-thread destructors and cannot be closed by rx_store_close from one thread.
 * Writers (puts, access-time updates, drops) are serialized twice: by write_mu inside
 * this process, so threads queue on a mutex instead of polling sqlite's busy handler,
 * and by BEGIN IMMEDIATE (sqlite's write lock) with a busy timeout, which also covers
 * a second process reading the database (the lock file forbids a second writer).
 *
 * Ordering rules that make crashes and races harmless:
 *   - put: the blob is written and fsynced (or found present) before the write
 *     transaction; inside it the blob's presence is checked again, since an eviction
 *     may have removed it between the write and the lock; then the rows are written.
 *   - blobs are unlinked only inside a write transaction (just before COMMIT), so no
 *     put can publish a row for a file that is about to disappear. A crash between the
 *     unlink and the COMMIT leaves a row without a blob: recovery drops it at open.
 *   - a crash between the blob's rename and the row's COMMIT leaves an orphan blob:
 *     recovery removes it at open. An interrupted write leaves a temp file: removed.
 *   - a failed check outside the lock (missing file at lookup, bad hash at read) is
 *     re-checked under the lock before anything is dropped, so a concurrent eviction
 *     or rewrite is told apart from real corruption.
 * synchronous=NORMAL: in WAL mode a power loss may forget the last commits but never
 * corrupts; a forgotten row leaves an orphan blob, a forgotten delete a row without a
 * blob, and recovery handles both.
 *
 * Costs: lookup = 1 SELECT + stat; read of a known, unchanged, recently verified blob
 * = open + fstat + read + close (no SQL, no hash); other reads add 1 SELECT (size not
 * known yet) and/or a SHA-256 (libcrypto); every access_flush_ms, one hit also writes
 * the pending accesses (1 UPDATE each, one transaction); put = blob write (2 fsyncs) +
 * 1 write transaction (+ pending accesses) + one DELETE per evicted artifact; open = a
 * stat per row and a readdir of the blob tree.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCHEMA_VERSION 1
/* A verification is remembered only for a file whose mtime and ctime are this much
 * older than the read: covers coarse (jiffy) and 1 s granular filesystem timestamps. */
#define RACY_NS 2000000000ll
#define BUSY_TIMEOUT_MS 10000
#define PUT_ATTEMPTS 4

/* migrations[v] brings a database from version v to v + 1. */
static const char *const migrations[SCHEMA_VERSION] = {
    "CREATE TABLE artifacts ("
    "  id TEXT PRIMARY KEY NOT NULL,"      /* hex SHA-256 of the bytes */
    "  size INTEGER NOT NULL,"             /* bytes */
    "  target TEXT NOT NULL,"              /* target name */
    "  created_ms INTEGER NOT NULL,"       /* first stored, Unix ms */
    "  last_access_ms INTEGER NOT NULL,"   /* last put/hit/read, Unix ms */
    "  access_seq INTEGER NOT NULL,"       /* LRU order: larger is more recent */
    "  meta TEXT);"                        /* metadata JSON or NULL */
    "CREATE INDEX artifacts_lru ON artifacts(access_seq);"
    "CREATE TABLE entries ("
    "  key TEXT PRIMARY KEY NOT NULL,"     /* cache key */
    "  id TEXT NOT NULL REFERENCES artifacts(id) ON DELETE CASCADE,"
    "  created_ms INTEGER NOT NULL);"
    "CREATE INDEX entries_by_id ON entries(id);",
};

#define NEXT_SEQ "(SELECT coalesce(max(access_seq), 0) + 1 FROM artifacts)"

enum {
    Q_BEGIN, Q_COMMIT, Q_ROLLBACK, Q_LOOKUP, Q_INFO, Q_SIZE, Q_TOUCH, Q_PUT_ART,
    Q_ENTRY_ID, Q_PUT_ENTRY, Q_DEL_UNREF, Q_DEL_ART, Q_TOTALS, Q_LRU, Q_ALL, Q_PREFIX, Q_COUNT
};

static const char *const query_sql[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_LOOKUP] = "SELECT e.id, a.target, a.size, a.created_ms, a.last_access_ms"
                 " FROM entries e JOIN artifacts a ON a.id = e.id WHERE e.key = ?1",
    [Q_INFO] = "SELECT a.target, a.size, a.created_ms, a.last_access_ms, a.meta,"
               " (SELECT key FROM entries WHERE id = a.id ORDER BY created_ms DESC, key"
               " LIMIT 1) FROM artifacts a WHERE a.id = ?1",
    [Q_SIZE] = "SELECT size FROM artifacts WHERE id = ?1",
    [Q_TOUCH] = "UPDATE artifacts SET last_access_ms = max(last_access_ms, ?2),"
                " access_seq = " NEXT_SEQ " WHERE id = ?1",
    [Q_PUT_ART] = "INSERT INTO artifacts(id, size, target, created_ms, last_access_ms,"
                  " access_seq, meta) VALUES (?1, ?2, ?3, ?4, ?4, " NEXT_SEQ ", ?5)"
                  " ON CONFLICT(id) DO UPDATE SET target = excluded.target,"
                  " meta = excluded.meta, access_seq = excluded.access_seq,"
                  " last_access_ms = max(last_access_ms, excluded.last_access_ms)",
    [Q_ENTRY_ID] = "SELECT id FROM entries WHERE key = ?1",
    [Q_PUT_ENTRY] = "INSERT INTO entries(key, id, created_ms) VALUES (?1, ?2, ?3)"
                    " ON CONFLICT(key) DO UPDATE SET id = excluded.id,"
                    " created_ms = excluded.created_ms",
    [Q_DEL_UNREF] = "DELETE FROM artifacts WHERE id = ?1"
                    " AND NOT EXISTS (SELECT 1 FROM entries WHERE id = ?1)",
    [Q_DEL_ART] = "DELETE FROM artifacts WHERE id = ?1",
    [Q_TOTALS] = "SELECT count(*), coalesce(sum(size), 0) FROM artifacts",
    [Q_LRU] = "SELECT id, size FROM artifacts WHERE id <> ?1 ORDER BY access_seq LIMIT 1",
    [Q_ALL] = "SELECT id, size FROM artifacts",
    /* ids starting with a hex prefix p lie in [p, p || 'g'): the primary key's index */
    [Q_PREFIX] = "SELECT id FROM artifacts WHERE id >= ?1 AND id < ?1 || 'g' ORDER BY id"
                 " LIMIT ?2",
};

typedef struct conn {
    sqlite3 *db;                 /* one connection, one thread at a time */
    sqlite3_stmt *q[Q_COUNT];    /* prepared once, reset after every use */
    struct conn *next;           /* in the idle pool */
} conn;

typedef struct sq {
    char *dbpath;                /* DIR/cache.db */
    char *blobs;                 /* DIR/blobs */
    int64_t max_bytes;           /* 0: unlimited */
    int64_t verify_ms;           /* trust a verification this long; < 0: never */
    int64_t flush_ms;            /* write pending accesses at most this often */
    rx_memo *memo;               /* sizes, verifications, pending accesses */
    _Atomic int64_t next_flush_ms; /* a hit after this time flushes pending accesses */
    rx_store_counters *c;        /* the front's counters */
    int lock_fd;                 /* DIR/store.lock, write-locked while open */
    pthread_mutex_t pool_mu;     /* guards pool */
    conn *pool;                  /* idle connections */
    pthread_mutex_t write_mu;    /* this process's write transactions, one at a time */
    _Atomic uint64_t tmp_seq;    /* makes temp blob names unique */
} sq;

/* A list of ids to unlink just before COMMIT. */
typedef struct idlist {
    char (*ids)[65];
    int n, cap;
} idlist;

static int idlist_add(idlist *l, const char *id)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        void *p = realloc(l->ids, (size_t)cap * sizeof *l->ids);
        if (!p) return -1;
        l->ids = p;
        l->cap = cap;
    }
    snprintf(l->ids[l->n++], 65, "%s", id);
    return 0;
}

static int db_fail(conn *c, const char *what, char *err, size_t errlen)
{
    return rx_store_fail(err, errlen, "sqlite %s: %s", what, sqlite3_errmsg(c->db));
}

/* The prepared statement i, ready for binding (statements are reset after use so
 * that no read transaction outlives a call). */
static sqlite3_stmt *Q(conn *c, int i) { return c->q[i]; }

static void done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

/* Runs a statement that returns no rows; 0 or -1. */
static int run(conn *c, int i, char *err, size_t errlen)
{
    int rc = sqlite3_step(Q(c, i));
    done(Q(c, i));
    return rc == SQLITE_DONE ? 0 : db_fail(c, query_sql[i], err, errlen);
}

static void copy_text(char *dst, size_t n, const unsigned char *src)
{
    snprintf(dst, n, "%s", src ? (const char *)src : "");
}

/* ---- write transactions ---- */

static int tx_begin(sq *s, conn *c, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->write_mu);
    if (run(c, Q_BEGIN, err, errlen) == 0) return 0;
    pthread_mutex_unlock(&s->write_mu);
    return -1;
}

static void tx_rollback(sq *s, conn *c)
{
    if (!sqlite3_get_autocommit(c->db)) run(c, Q_ROLLBACK, NULL, 0);
    pthread_mutex_unlock(&s->write_mu);
}

/* Unlinks the blobs of gone, commits, then makes the memo forget them (also when the
 * commit failed: their files are gone either way) and, when put_id is not NULL and the
 * commit succeeded, learn that put_id's row has put_size bytes; all before the write
 * lock is released, so no other writer's delete can come between commit and memo.
 * 0, or -1 (rolled back). */
static int tx_commit_put(sq *s, conn *c, const idlist *gone, const char *put_id,
                         int64_t put_size, char *err, size_t errlen)
{
    for (int i = 0; gone && i < gone->n; i++) rx_blob_unlink(s->blobs, gone->ids[i]);
    int r = run(c, Q_COMMIT, err, errlen);
    if (r != 0 && !sqlite3_get_autocommit(c->db)) run(c, Q_ROLLBACK, NULL, 0);
    if (gone && gone->n > 0) rx_memo_forget(s->memo, (const char (*)[65])gone->ids, gone->n);
    if (r == 0 && put_id) rx_memo_known(s->memo, put_id, put_size);
    pthread_mutex_unlock(&s->write_mu);
    return r;
}

static int tx_commit(sq *s, conn *c, const idlist *gone, char *err, size_t errlen)
{
    return tx_commit_put(s, c, gone, NULL, 0, err, errlen);
}

/* ---- connections ---- */

static int exec_sql(conn *c, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    rx_store_fail(err, errlen, "sqlite: %s", msg ? msg : sqlite3_errmsg(c->db));
    sqlite3_free(msg);
    return -1;
}

static void conn_close(conn *c)
{
    if (!c) return;
    for (int i = 0; i < Q_COUNT; i++) sqlite3_finalize(c->q[i]);
    sqlite3_close(c->db);
    free(c);
}

/* Brings the schema to SCHEMA_VERSION in one transaction. 0 or -1. */
static int migrate(conn *c, char *err, size_t errlen)
{
    if (exec_sql(c, "BEGIN IMMEDIATE", err, errlen)) return -1;
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (v < 0 || v > SCHEMA_VERSION) {
        exec_sql(c, "ROLLBACK", NULL, 0);
        if (v < 0) return db_fail(c, "reading user_version", err, errlen);
        return rx_store_fail(err, errlen,
                             "store: database schema version %d is newer than this relaxd "
                             "understands (%d)", v, SCHEMA_VERSION);
    }
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version = %d", SCHEMA_VERSION);
    for (; v < SCHEMA_VERSION; v++)
        if (exec_sql(c, migrations[v], err, errlen)) goto fail;
    if (exec_sql(c, set, err, errlen) || exec_sql(c, "COMMIT", err, errlen)) goto fail;
    return 0;
fail:
    exec_sql(c, "ROLLBACK", NULL, 0);
    return -1;
}

/* Opens and configures a connection; the first one of a store also switches the
 * database to WAL and migrates the schema. NULL on failure. */
static conn *conn_open(sq *s, int first, char *err, size_t errlen)
{
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        rx_store_fail(err, errlen, "store: out of memory");
        return NULL;
    }
    int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(s->dbpath, &c->db, fl, NULL) != SQLITE_OK) {
        rx_store_fail(err, errlen, "sqlite open %s: %s", s->dbpath,
                      c->db ? sqlite3_errmsg(c->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    if (exec_sql(c, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;", err, errlen))
        goto fail;
    if (first) {
        sqlite3_stmt *st = NULL;
        int wal = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL) ==
                      SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
                  !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        if (!wal) {
            rx_store_fail(err, errlen, "sqlite %s: cannot switch to WAL mode", s->dbpath);
            goto fail;
        }
        if (migrate(c, err, errlen)) goto fail;
    }
    for (int i = 0; i < Q_COUNT; i++) {
        if (sqlite3_prepare_v3(c->db, query_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->q[i],
                               NULL) != SQLITE_OK) {
            db_fail(c, "prepare", err, errlen);
            goto fail;
        }
    }
    return c;
fail:
    conn_close(c);
    return NULL;
}

/* An idle connection (a new one when none is idle); give it back with checkin. */
static conn *checkout(sq *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->pool_mu);
    conn *c = s->pool;
    if (c) s->pool = c->next;
    pthread_mutex_unlock(&s->pool_mu);
    return c ? c : conn_open(s, 0, err, errlen);
}

static void checkin(sq *s, conn *c)
{
    pthread_mutex_lock(&s->pool_mu);
    c->next = s->pool;
    s->pool = c;
    pthread_mutex_unlock(&s->pool_mu);
}

/* ---- row helpers (callers hold a connection) ---- */

/* The entry of key with its artifact into info: 1 found, 0 not, -1 error. */
static int lookup_row(conn *c, const char *key, rx_artifact_info *info, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = Q(c, Q_LOOKUP);
    bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(info, 0, sizeof *info);
        copy_text(info->id, sizeof info->id, sqlite3_column_text(st, 0));
        copy_text(info->key, sizeof info->key, (const unsigned char *)key);
        copy_text(info->target, sizeof info->target, sqlite3_column_text(st, 1));
        info->size = sqlite3_column_int64(st, 2);
        info->created_ms = sqlite3_column_int64(st, 3);
        info->last_access_ms = sqlite3_column_int64(st, 4);
    }
    done(st);
    if (rc == SQLITE_ROW) return 1;
    return rc == SQLITE_DONE ? 0 : db_fail(c, "lookup", err, errlen);
}

/* The size of artifact id: 1 found (*size set), 0 not, -1 error. */
static int size_row(conn *c, const char *id, int64_t *size, char *err, size_t errlen)
{
    sqlite3_stmt *st = Q(c, Q_SIZE);
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *size = sqlite3_column_int64(st, 0);
    done(st);
    if (rc == SQLITE_ROW) return 1;
    return rc == SQLITE_DONE ? 0 : db_fail(c, "size", err, errlen);
}

/* ---- access times ---- */

/* Writes the pending accesses, oldest first (caller holds write_mu inside a write
 * transaction). Best effort: a failure only makes the LRU order stale. */
static void flush_locked(sq *s, conn *c)
{
    rx_memo_access *a;
    int n = rx_memo_take(s->memo, &a);
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = Q(c, Q_TOUCH);
        bind_text(st, 1, a[i].id);
        sqlite3_bind_int64(st, 2, a[i].at_ms);
        sqlite3_step(st);
        done(st);
    }
    free(a);
    atomic_store_explicit(&s->next_flush_ms, rx_store_now_ms() + s->flush_ms,
                          memory_order_relaxed);
}

/* Writes the pending accesses in a transaction of their own; when !wait, only if the
 * write lock is free (whoever holds it is a put, which flushes, or a flush). */
static void flush(sq *s, conn *c, bool wait)
{
    if (wait) pthread_mutex_lock(&s->write_mu);
    else if (pthread_mutex_trylock(&s->write_mu) != 0) return;
    if (run(c, Q_BEGIN, NULL, 0) == 0) {
        flush_locked(s, c);
        if (run(c, Q_COMMIT, NULL, 0) != 0 && !sqlite3_get_autocommit(c->db))
            run(c, Q_ROLLBACK, NULL, 0);
    }
    pthread_mutex_unlock(&s->write_mu);
}

/* Records a hit on id at now (see rx_memo_hit for size, epoch and verified) and
 * flushes when access_flush_ms has passed since the last flush. Outside write_mu. */
static void note_hit(sq *s, conn *c, const char *id, int64_t size, uint64_t epoch,
                     const rx_blob_stat *verified, int64_t verified_ms, int64_t now)
{
    int pending = rx_memo_hit(s->memo, id, size, epoch, verified, verified_ms, now);
    int64_t due = atomic_load_explicit(&s->next_flush_ms, memory_order_relaxed);
    if (pending > 0 && now >= due &&
        atomic_compare_exchange_strong_explicit(&s->next_flush_ms, &due, now + s->flush_ms,
                                                memory_order_relaxed, memory_order_relaxed))
        flush(s, c, false);
}

/* Unix time in nanoseconds (the clock file timestamps come from). */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The verification record to keep after a full hash of a file seen as st, the read
 * having started at t0 (ns): st when the file is old enough that a later write must
 * move its mtime or ctime, else NULL. */
static const rx_blob_stat *settled(const sq *s, const rx_blob_stat *st, int64_t t0)
{
    if (s->verify_ms < 0 || st->mtime_ns > t0 - RACY_NS || st->ctime_ns > t0 - RACY_NS)
        return NULL;
    return st;
}

/* Deletes artifact id (its entries cascade) and queues its blob for unlinking. */
static int drop_row(conn *c, const char *id, idlist *gone, char *err, size_t errlen)
{
    sqlite3_stmt *st = Q(c, Q_DEL_ART);
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    done(st);
    if (rc != SQLITE_DONE) return db_fail(c, "delete", err, errlen);
    return idlist_add(gone, id) ? rx_store_fail(err, errlen, "store: out of memory") : 0;
}

/* Evicts least-recently-used artifacts other than keep (may be "") while the total
 * exceeds max_bytes; inside a write transaction. Adds the count to *evicted. */
static int evict_locked(sq *s, conn *c, const char *keep, idlist *gone, int64_t *evicted,
                        char *err, size_t errlen)
{
    if (s->max_bytes <= 0) return 0;
    sqlite3_stmt *st = Q(c, Q_TOTALS);
    int rc = sqlite3_step(st);
    int64_t total = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) : 0;
    done(st);
    if (rc != SQLITE_ROW) return db_fail(c, "totals", err, errlen);
    while (total > s->max_bytes) {
        char victim[65];
        int64_t size = 0;
        st = Q(c, Q_LRU);
        bind_text(st, 1, keep);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            copy_text(victim, sizeof victim, sqlite3_column_text(st, 0));
            size = sqlite3_column_int64(st, 1);
        }
        done(st);
        if (rc == SQLITE_DONE) break; /* only keep is left */
        if (rc != SQLITE_ROW) return db_fail(c, "lru", err, errlen);
        if (drop_row(c, victim, gone, err, errlen)) return -1;
        total -= size;
        (*evicted)++;
    }
    return 0;
}

/* Re-checks artifact id under the write lock after a check outside it failed; full:
 * read and verify (into *bytes, *n), else only presence and size. 0 the blob is fine
 * (access recorded), 1 the row is gone, 2 the artifact was dropped, -1 error. */
static int settle(sq *s, conn *c, const char *id, int full, uint8_t **bytes, size_t *n,
                  char *err, size_t errlen)
{
    if (tx_begin(s, c, err, errlen)) return -1;
    int64_t size = 0;
    int r = size_row(c, id, &size, err, errlen);
    if (r <= 0) {
        tx_rollback(s, c);
        return r < 0 ? -1 : 1;
    }
    int64_t t0 = now_ns();
    rx_blob_stat seen;
    bool hashed = false;
    if (full) r = rx_blob_read(s->blobs, id, size, NULL, &seen, &hashed, bytes, n, err, errlen);
    else r = rx_blob_present(s->blobs, id, size) ? 0 : 1;
    if (hashed) rx_store_count(&s->c->verified, 1);
    if (r < 0) {
        tx_rollback(s, c);
        return -1;
    }
    idlist gone = {0};
    if (r == 0)
        rx_memo_hit(s->memo, id, size, RX_MEMO_AUTHORITATIVE,
                    full ? settled(s, &seen, t0) : NULL, t0 / 1000000, rx_store_now_ms());
    else if (drop_row(c, id, &gone, err, errlen)) {
        tx_rollback(s, c);
        free(gone.ids);
        return -1;
    }
    int ok = tx_commit(s, c, &gone, err, errlen) == 0;
    free(gone.ids);
    if (r == 0) return 0; /* the bytes are good whether or not the commit stuck */
    if (!ok) return -1;
    rx_store_count(&s->c->dropped, 1);
    rx_store_fail(err, errlen, "artifact %s: blob %s; dropped", id,
                  r == 1 ? "missing" : "corrupt (size or SHA-256 mismatch)");
    return 2;
}

/* ---- the operations ---- */

static int sq_lookup(void *impl, const char *key, rx_artifact_info *info, char *err,
                     size_t errlen)
{
    sq *s = impl;
    conn *c = checkout(s, err, errlen);
    if (!c) return -1;
    uint64_t epoch = rx_memo_epoch(s->memo); /* before the SELECT */
    int r = lookup_row(c, key, info, err, errlen);
    if (r == 1 && !rx_blob_present(s->blobs, info->id, info->size)) {
        /* Missing (or truncated) blob: a miss; dropped unless a race explains it. */
        int t = settle(s, c, info->id, 0, NULL, NULL, err, errlen);
        r = t < 0 ? -1 : t == 0 ? lookup_row(c, key, info, err, errlen) : 0;
    } else if (r == 1) {
        note_hit(s, c, info->id, info->size, epoch, NULL, 0, rx_store_now_ms());
    }
    if (r == 1) {
        int64_t now = rx_store_now_ms();
        if (info->last_access_ms < now) info->last_access_ms = now;
    }
    checkin(s, c);
    return r;
}

/* The body of a put, inside the write transaction. */
static int put_locked(sq *s, conn *c, const char *key, const char *target, const char *id,
                      size_t n, const char *meta, rx_artifact_info *info, idlist *gone,
                      int64_t *evicted, char *err, size_t errlen)
{
    int64_t now = rx_store_now_ms();
    char old[65] = "";
    sqlite3_stmt *st = Q(c, Q_ENTRY_ID);
    bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) copy_text(old, sizeof old, sqlite3_column_text(st, 0));
    done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(c, "entry", err, errlen);

    st = Q(c, Q_PUT_ART);
    bind_text(st, 1, id);
    sqlite3_bind_int64(st, 2, (int64_t)n);
    bind_text(st, 3, target);
    sqlite3_bind_int64(st, 4, now);
    if (meta) bind_text(st, 5, meta);
    rc = sqlite3_step(st);
    done(st);
    if (rc != SQLITE_DONE) return db_fail(c, "insert artifact", err, errlen);

    st = Q(c, Q_PUT_ENTRY);
    bind_text(st, 1, key);
    bind_text(st, 2, id);
    sqlite3_bind_int64(st, 3, now);
    rc = sqlite3_step(st);
    done(st);
    if (rc != SQLITE_DONE) return db_fail(c, "insert entry", err, errlen);

    if (old[0] && strcmp(old, id) != 0) { /* the key moved: free its old artifact */
        st = Q(c, Q_DEL_UNREF);
        bind_text(st, 1, old);
        rc = sqlite3_step(st);
        done(st);
        if (rc != SQLITE_DONE) return db_fail(c, "delete old artifact", err, errlen);
        if (sqlite3_changes(c->db) > 0 && idlist_add(gone, old))
            return rx_store_fail(err, errlen, "store: out of memory");
    }
    if (evict_locked(s, c, id, gone, evicted, err, errlen)) return -1;
    rc = lookup_row(c, key, info, err, errlen);
    return rc == 1 ? 0 : rc < 0 ? -1 : rx_store_fail(err, errlen, "store: entry vanished");
}

static int sq_put(void *impl, const char *key, const char *target, const char *id,
                  const uint8_t *bytes, size_t n, const char *meta, rx_artifact_info *info,
                  char *err, size_t errlen)
{
    sq *s = impl;
    conn *c = checkout(s, err, errlen);
    if (!c) return -1;
    int r = -1;
    /* Step 1: the blob, durable, before any row; step 2: under the write lock, check
     * that no eviction removed it meanwhile (else write it again). */
    for (int attempt = 0;; attempt++) {
        if (attempt == PUT_ATTEMPTS) {
            rx_store_fail(err, errlen, "store: blob %s keeps disappearing", id);
            goto out;
        }
        if (!rx_blob_present(s->blobs, id, (int64_t)n) &&
            rx_blob_write(s->blobs, id, bytes, n,
                          atomic_fetch_add_explicit(&s->tmp_seq, 1, memory_order_relaxed),
                          err, errlen))
            goto out;
        if (tx_begin(s, c, err, errlen)) goto out;
        if (rx_blob_present(s->blobs, id, (int64_t)n)) break;
        tx_rollback(s, c);
    }
    /* Step 3: the pending accesses (older than this put), rows, eviction, and the
     * unlinks of what they freed, then COMMIT; the memo learns the new row's size. */
    flush_locked(s, c);
    idlist gone = {0};
    int64_t evicted = 0;
    if (put_locked(s, c, key, target, id, n, meta, info, &gone, &evicted, err, errlen)) {
        tx_rollback(s, c);
    } else if (tx_commit_put(s, c, &gone, id, (int64_t)n, err, errlen) == 0) {
        rx_store_count(&s->c->evictions, evicted);
        r = 0;
    }
    free(gone.ids);
out:
    checkin(s, c);
    return r;
}

static int sq_read(void *impl, const char *id, uint8_t **bytes, size_t *n, char *err,
                   size_t errlen)
{
    sq *s = impl;
    conn *c = checkout(s, err, errlen);
    if (!c) return -1;
    /* Step 1: the size, from the memo or the row. */
    rx_memo_view v;
    rx_memo_get(s->memo, id, &v);
    int64_t size = v.size;
    int r = size >= 0 ? 1 : size_row(c, id, &size, err, errlen);
    if (r == 0) {
        r = 1;
    } else if (r == 1) {
        /* Step 2: the bytes, hashed unless the file is the one verified recently. */
        int64_t t0 = now_ns(), t0_ms = t0 / 1000000;
        const rx_blob_stat *trusted =
            v.verified && s->verify_ms > 0 && t0_ms >= v.verified_ms &&
                    t0_ms - v.verified_ms < s->verify_ms ? &v.st : NULL;
        rx_blob_stat seen;
        bool hashed = false;
        r = rx_blob_read(s->blobs, id, size, trusted, &seen, &hashed, bytes, n, err, errlen);
        if (hashed) rx_store_count(&s->c->verified, 1);
        /* Step 3: record the access (and a new verification), or settle a failure. */
        if (r == 0)
            note_hit(s, c, id, size, v.epoch, hashed ? settled(s, &seen, t0) : NULL, t0_ms,
                     rx_store_now_ms());
        else if (r > 0)
            r = settle(s, c, id, 1, bytes, n, err, errlen);
    }
    checkin(s, c);
    return r;
}

static int sq_info(void *impl, const char *id, rx_artifact_info *info, char **meta,
                   char *err, size_t errlen)
{
    sq *s = impl;
    conn *c = checkout(s, err, errlen);
    if (!c) return -1;
    sqlite3_stmt *st = Q(c, Q_INFO);
    bind_text(st, 1, id);
    int rc = sqlite3_step(st), r = 1;
    if (rc == SQLITE_ROW) {
        memset(info, 0, sizeof *info);
        copy_text(info->id, sizeof info->id, (const unsigned char *)id);
        copy_text(info->target, sizeof info->target, sqlite3_column_text(st, 0));
        info->size = sqlite3_column_int64(st, 1);
        info->created_ms = sqlite3_column_int64(st, 2);
        info->last_access_ms = sqlite3_column_int64(st, 3);
        copy_text(info->key, sizeof info->key, sqlite3_column_text(st, 5));
        rx_memo_view v;
        rx_memo_get(s->memo, id, &v); /* an access not yet written */
        if (v.last_access_ms > info->last_access_ms) info->last_access_ms = v.last_access_ms;
        r = 0;
        const unsigned char *m = sqlite3_column_text(st, 4);
        if (meta && m && !(*meta = strdup((const char *)m)))
            r = rx_store_fail(err, errlen, "store: out of memory");
    } else if (rc != SQLITE_DONE) {
        r = db_fail(c, "info", err, errlen);
    }
    done(st);
    checkin(s, c);
    return r;
}

static int sq_find_prefix(void *impl, const char *prefix, char (*ids)[65], int max, int *n,
                          char *err, size_t errlen)
{
    sq *s = impl;
    *n = 0;
    conn *c = checkout(s, err, errlen);
    if (!c) return -1;
    sqlite3_stmt *st = Q(c, Q_PREFIX);
    bind_text(st, 1, prefix);
    sqlite3_bind_int(st, 2, max);
    int rc, r = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
        copy_text(ids[(*n)++], 65, sqlite3_column_text(st, 0));
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) r = db_fail(c, "find_prefix", err, errlen);
    done(st);
    checkin(s, c);
    return r;
}

static int sq_totals(void *impl, int64_t *entries, int64_t *bytes)
{
    sq *s = impl;
    conn *c = checkout(s, NULL, 0);
    if (!c) return -1;
    sqlite3_stmt *st = Q(c, Q_TOTALS);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *entries = sqlite3_column_int64(st, 0);
        *bytes = sqlite3_column_int64(st, 1);
    }
    done(st);
    checkin(s, c);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* ---- open, recovery, close ---- */

/* rx_blob_scan's question (ud: the conn): does a row name this blob? Errors keep it. */
static bool has_row(const char *id, void *ud)
{
    int64_t size;
    return size_row(ud, id, &size, NULL, 0) != 0;
}

/* Recovery at open, in one write transaction: rows whose blob is missing or has the
 * wrong size are dropped; temp files and orphan blobs are removed; the cap (which may
 * have shrunk since the last run) is enforced. */
static int recover(sq *s, conn *c, char *err, size_t errlen)
{
    if (tx_begin(s, c, err, errlen)) return -1;
    idlist all = {0}, gone = {0};
    int64_t dropped = 0, evicted = 0;
    sqlite3_stmt *st = Q(c, Q_ALL);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        int64_t size = sqlite3_column_int64(st, 1);
        if (!rx_store_valid_id(id) || !rx_blob_present(s->blobs, id, size)) {
            if (idlist_add(&all, id)) rc = SQLITE_NOMEM;
        } else {
            rx_memo_known(s->memo, id, size); /* evictions below forget theirs */
        }
        if (rc != SQLITE_ROW) break;
    }
    done(st);
    if (rc != SQLITE_DONE) {
        db_fail(c, "recovery scan", err, errlen);
        goto fail;
    }
    for (int i = 0; i < all.n; i++, dropped++) {
        st = Q(c, Q_DEL_ART); /* the file, if any, is wrong: unlinked with the row */
        bind_text(st, 1, all.ids[i]);
        rc = sqlite3_step(st);
        done(st);
        if (rc != SQLITE_DONE) {
            db_fail(c, "recovery delete", err, errlen);
            goto fail;
        }
        if (rx_store_valid_id(all.ids[i]) && idlist_add(&gone, all.ids[i])) {
            rx_store_fail(err, errlen, "store: out of memory");
            goto fail;
        }
    }
    int temps, orphans;
    if (rx_blob_scan(s->blobs, has_row, c, &temps, &orphans, err, errlen)) goto fail;
    if (evict_locked(s, c, "", &gone, &evicted, err, errlen)) goto fail;
    free(all.ids);
    rc = tx_commit(s, c, &gone, err, errlen);
    free(gone.ids);
    if (rc) return -1;
    rx_store_count(&s->c->dropped, dropped);
    rx_store_count(&s->c->evictions, evicted);
    return 0;
fail:
    tx_rollback(s, c);
    free(all.ids);
    free(gone.ids);
    return -1;
}

/* mkdir -p path. 0 or -1 with errno. */
static int mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void sq_close(void *impl)
{
    sq *s = impl;
    if (!s) return;
    if (s->pool && s->memo) flush(s, s->pool, true);
    if (s->pool) sqlite3_exec(s->pool->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    while (s->pool) {
        conn *c = s->pool;
        s->pool = c->next;
        conn_close(c);
    }
    rx_memo_free(s->memo);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    if (s->lock_fd >= 0) close(s->lock_fd); /* releases the fcntl lock */
    free(s->dbpath);
    free(s->blobs);
    free(s);
}

static int sq_open(const rx_store_opts *o, const rx_store_tuning *t,
                   rx_store_counters *counters, void **impl, char *err, size_t errlen)
{
    if (!sqlite3_threadsafe())
        return rx_store_fail(err, errlen, "store: sqlite was built without thread support");
    sq *s = calloc(1, sizeof *s);
    if (!s) return rx_store_fail(err, errlen, "store: out of memory");
    s->lock_fd = -1;
    s->max_bytes = o->max_bytes;
    s->verify_ms = t->verify_interval_ms;
    s->flush_ms = t->access_flush_ms;
    s->next_flush_ms = rx_store_now_ms() + s->flush_ms;
    s->c = counters;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    char *lockpath = path_join(o->dir, "store.lock");
    s->dbpath = path_join(o->dir, "cache.db");
    s->blobs = path_join(o->dir, "blobs");
    s->memo = rx_memo_new();
    if (!lockpath || !s->dbpath || !s->blobs || !s->memo) {
        rx_store_fail(err, errlen, "store: out of memory");
        goto fail;
    }
    if (mkdirs(s->blobs) != 0) {
        rx_store_fail(err, errlen, "store: mkdir %s: %s", s->blobs, strerror(errno));
        goto fail;
    }
    /* One process owns the directory: recovery removes temp files, which would break a
     * second writer's puts. (fcntl locks are per process: a second rx_store on the
     * same directory inside one process is not detected and not supported.) */
    s->lock_fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (s->lock_fd < 0 || fcntl(s->lock_fd, F_SETLK, &fl) != 0) {
        rx_store_fail(err, errlen, "store: %s is in use by another process (%s)", o->dir,
                      strerror(errno));
        goto fail;
    }
    conn *c = conn_open(s, 1, err, errlen);
    if (!c) goto fail;
    if (recover(s, c, err, errlen)) {
        conn_close(c);
        goto fail;
    }
    s->pool = c;
    free(lockpath);
    *impl = s;
    return 0;
fail:
    free(lockpath);
    sq_close(s);
    return -1;
}

const rx_store_ops rx_store_sqlite_ops = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .lookup = sq_lookup,
    .put = sq_put,
    .read = sq_read,
    .info = sq_info,
    .totals = sq_totals,
    .find_prefix = sq_find_prefix,
};
