/*
 * store_int.h — the inside of rxcache: the backend seam and the blob layer.
 *
 * rx_store (store.h) is a thin front: it validates arguments that every backend would
 * validate the same way (ids, key lengths), keeps the counters, and forwards to the
 * backend through an rx_store_ops table. A backend owns everything persistent: the
 * metadata rows and the blob files. sqlite (store_sqlite.c) is the only one today; a
 * PostgreSQL backend with blobs on shared storage implements the same table (its
 * open() picks it from the options) and the server never learns which one it talks to.
 *
 * Backend obligations (what the tests check of any backend):
 *   - a row is written only after its blob is durable (blob first, row second);
 *   - a blob is unlinked only while the backend holds the write lock that a put must
 *     also hold to publish a row for that id, so a concurrent put of the same bytes
 *     never ends up with a row and no file;
 *   - reads verify SHA-256 as store.h's "Verified on read" says (a full hash, or a
 *     file unchanged since a recent full hash); a corrupt or missing blob is dropped
 *     (row and file) and reported as 2; counters go through rx_store_count();
 *   - accesses may be recorded lazily, but before anything orders by access (eviction)
 *     they are in the order the backend uses.
 *
 * The blob layer (blob.c) is shared by backends that keep blobs in a directory:
 * content-addressed files ROOT/ab/abcdef... (the full id as the name), written through
 * a temp file ROOT/ab/.tmp-... with O_EXCL, fsync, rename, fsync of the directory.
 * The memo (memo.c) is a backend's in-memory knowledge per blob: size, the stat of the
 * last full verification, and accesses not yet written.
 */
#ifndef RX_CACHE_STORE_INT_H
#define RX_CACHE_STORE_INT_H

#include "relax/store.h"

#include <stdatomic.h>
#include <stdbool.h>

/* Counters of one open store (store.h, rx_store_stats). Atomic: bumped from any thread. */
typedef struct rx_store_counters {
    _Atomic int64_t hits;      /* lookups that returned 1 */
    _Atomic int64_t misses;    /* lookups that returned 0 */
    _Atomic int64_t evictions; /* artifacts evicted by the LRU policy */
    _Atomic int64_t dropped;   /* artifacts dropped because their blob was bad/missing */
    _Atomic int64_t verified;  /* reads that hashed the whole blob */
} rx_store_counters;

typedef struct rx_store_ops {
    const char *name; /* "sqlite" */
    /* Opens the backend state for o into *impl; the counters outlive it. t has its
     * defaults filled in (no zero fields). 0 or -1. */
    int (*open)(const rx_store_opts *o, const rx_store_tuning *t, rx_store_counters *c,
                void **impl, char *err, size_t errlen);
    void (*close)(void *impl);
    /* As in store.h, with key already checked (1..64 chars). Counts nothing but
     * evictions and drops; the front counts hits and misses. */
    int (*lookup)(void *impl, const char *key, rx_artifact_info *info, char *err,
                  size_t errlen);
    /* As in store.h; id is the hex SHA-256 of bytes (computed by the front). */
    int (*put)(void *impl, const char *key, const char *target, const char *id,
               const uint8_t *bytes, size_t n, const char *meta_json,
               rx_artifact_info *info, char *err, size_t errlen);
    /* As in store.h; id already passed rx_store_valid_id. */
    int (*read)(void *impl, const char *id, uint8_t **bytes, size_t *n, char *err,
                size_t errlen);
    int (*info)(void *impl, const char *id, rx_artifact_info *info, char **meta, char *err,
                size_t errlen);
    /* As in store.h (rx_store_find_prefix); prefix already checked (1..64 hex digits). */
    int (*find_prefix)(void *impl, const char *prefix, char (*ids)[65], int max, int *n,
                       char *err, size_t errlen);
    /* Fills entries and bytes (the persistent part of the stats); 0 or -1. */
    int (*totals)(void *impl, int64_t *entries, int64_t *bytes);
} rx_store_ops;

extern const rx_store_ops rx_store_sqlite_ops;

/* Formats a one-line message into err (when err is not NULL) and returns -1. */
int rx_store_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds d to counter *c. */
static inline void rx_store_count(_Atomic int64_t *c, int64_t d)
{
    atomic_fetch_add_explicit(c, d, memory_order_relaxed);
}

/* Unix time in milliseconds. */
int64_t rx_store_now_ms(void);

/* ---- blob files (blob.c); root is the blobs directory, ids are valid ---- */

/* What fstat says about one blob file: equal stats mean "unchanged as far as the
 * filesystem can tell" (every write moves mtime and ctime; ctime cannot be set back). */
typedef struct rx_blob_stat {
    uint64_t dev, ino;  /* which file */
    int64_t size;       /* bytes */
    int64_t mtime_ns;   /* content change time, ns since the epoch */
    int64_t ctime_ns;   /* inode change time, ns since the epoch */
} rx_blob_stat;

/* out = hex SHA-256 of p[0..n) (65 bytes), through libcrypto (hardware accelerated
 * where the CPU has SHA extensions). */
void rx_blob_hash(const uint8_t *p, size_t n, char out[65]);

/* Writes p[0..n) as the blob id under root durably: temp file (O_EXCL|O_CLOEXEC) in the
 * blob's directory, full write, fsync, rename into place, fsync of the directory. tag
 * makes the temp name unique within the process (callers pass a per-store sequence
 * number). 0 or -1 (the temp file is removed on failure). */
int rx_blob_write(const char *root, const char *id, const uint8_t *p, size_t n,
                  uint64_t tag, char *err, size_t errlen);

/* Reads blob id (expected size `size`) into *out (heap, caller frees). The content is
 * hashed and compared with id unless trusted is not NULL and the open file's fstat
 * equals *trusted. *seen (may be NULL) gets that fstat, *hashed (may be NULL) whether
 * the content was hashed. 0 ok, 1 missing, 2 corrupt (wrong size or hash), -1 I/O
 * error. */
int rx_blob_read(const char *root, const char *id, int64_t size,
                 const rx_blob_stat *trusted, rx_blob_stat *seen, bool *hashed,
                 uint8_t **out, size_t *n, char *err, size_t errlen);

/* 1 when blob id exists as a regular file of `size` bytes (size < 0: any size), else 0. */
int rx_blob_present(const char *root, const char *id, int64_t size);

/* Unlinks blob id; a missing file is fine. 0, or -1 on another error. */
int rx_blob_unlink(const char *root, const char *id);

/* Recovery scan of root: removes every temp file (.tmp-*) and calls keep(id, ud) for
 * every blob file with a valid name; a blob for which keep returns false is unlinked
 * (an orphan). Other names are left alone. Counts into *temps and *orphans. 0 or -1. */
int rx_blob_scan(const char *root, bool (*keep)(const char *id, void *ud), void *ud,
                 int *temps, int *orphans, char *err, size_t errlen);

/* ---- the memo (memo.c): per-blob knowledge in memory, one mutex inside ----
 *
 * An entry per blob id holds: the artifact's size when a row is known to exist (-1:
 * not vouched for), the stat of the last full verification, and the last access (with
 * a place in the pending list when it is not yet in the database). The backend keeps
 * it true: sizes are set from committed rows (rx_memo_known, or rx_memo_hit with the
 * epoch read before the row's SELECT) and removed after every commit that deletes rows
 * (rx_memo_forget, which bumps the epoch so a reader whose SELECT straddled the delete
 * does not put the size back). */

typedef struct rx_memo rx_memo;

/* What the memo knows about one id (rx_memo_get). */
typedef struct rx_memo_view {
    uint64_t epoch;       /* rx_memo_forget count when read: pass to rx_memo_hit */
    int64_t size;         /* artifact size; -1: unknown (ask the database) */
    bool verified;        /* st and verified_ms are set */
    rx_blob_stat st;      /* the file at its last full verification */
    int64_t verified_ms;  /* when that verification started, Unix ms */
    int64_t last_access_ms; /* last recorded access, Unix ms; 0: none */
} rx_memo_view;

/* A pending access (rx_memo_take). */
typedef struct rx_memo_access {
    char id[65];
    int64_t at_ms;        /* Unix ms */
} rx_memo_access;

/* An empty memo; NULL when out of memory. */
rx_memo *rx_memo_new(void);
void rx_memo_free(rx_memo *m);

/* The current epoch (read it before a SELECT whose size goes to rx_memo_hit). */
uint64_t rx_memo_epoch(rx_memo *m);

/* Fills *v for id (size -1 and verified false when id is unknown). */
void rx_memo_get(rx_memo *m, const char *id, rx_memo_view *v);

/* Records an access to id at now_ms (moving it to the end of the pending list). size
 * >= 0 is remembered when epoch is still current (or RX_MEMO_AUTHORITATIVE: the caller
 * holds the backend's write lock); verified (may be NULL) replaces the verification
 * record, with its time verified_ms. Returns the number of pending accesses, or -1 out
 * of memory (the access is lost: LRU order only). */
#define RX_MEMO_AUTHORITATIVE UINT64_MAX
int rx_memo_hit(rx_memo *m, const char *id, int64_t size, uint64_t epoch,
                const rx_blob_stat *verified, int64_t verified_ms, int64_t now_ms);

/* Remembers that a committed row gives id this size (no access recorded); under the
 * backend's write lock. 0, or -1 out of memory (nothing is remembered). */
int rx_memo_known(rx_memo *m, const char *id, int64_t size);

/* Forgets ids[0..n) (rows deleted and committed, or maybe deleted) and bumps the
 * epoch. */
void rx_memo_forget(rx_memo *m, const char (*ids)[65], int n);

/* Detaches the pending accesses, oldest first, into *out (heap, caller frees; NULL
 * when none) and returns their count, or -1 out of memory (nothing detached). Entries
 * of unknown size (made by a hit that raced a delete) are dropped with them, so the
 * memo never outgrows the rows by more than the pending accesses. */
int rx_memo_take(rx_memo *m, rx_memo_access **out);

#endif
