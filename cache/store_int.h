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
 *   - reads verify SHA-256; a corrupt or missing blob is dropped (row and file) and
 *     reported as 2; counters go through rx_store_count().
 *
 * The blob layer (blob.c) is shared by backends that keep blobs in a directory:
 * content-addressed files ROOT/ab/abcdef... (the full id as the name), written through
 * a temp file ROOT/ab/.tmp-... with O_EXCL, fsync, rename, fsync of the directory.
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
} rx_store_counters;

typedef struct rx_store_ops {
    const char *name; /* "sqlite" */
    /* Opens the backend state for o into *impl; the counters outlive it. 0 or -1. */
    int (*open)(const rx_store_opts *o, rx_store_counters *c, void **impl, char *err,
                size_t errlen);
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

/* out = hex SHA-256 of p[0..n) (65 bytes). */
void rx_blob_hash(const uint8_t *p, size_t n, char out[65]);

/* Writes p[0..n) as the blob id under root durably: temp file (O_EXCL|O_CLOEXEC) in the
 * blob's directory, full write, fsync, rename into place, fsync of the directory. tag
 * makes the temp name unique within the process (callers pass a per-store sequence
 * number). 0 or -1 (the temp file is removed on failure). */
int rx_blob_write(const char *root, const char *id, const uint8_t *p, size_t n,
                  uint64_t tag, char *err, size_t errlen);

/* Reads blob id (expected size `size`) into *out (heap, caller frees) and verifies its
 * SHA-256 against id. 0 ok, 1 missing, 2 corrupt (wrong size or hash), -1 I/O error. */
int rx_blob_read(const char *root, const char *id, int64_t size, uint8_t **out,
                 size_t *n, char *err, size_t errlen);

/* 1 when blob id exists as a regular file of `size` bytes (size < 0: any size), else 0. */
int rx_blob_present(const char *root, const char *id, int64_t size);

/* Unlinks blob id; a missing file is fine. 0, or -1 on another error. */
int rx_blob_unlink(const char *root, const char *id);

/* Recovery scan of root: removes every temp file (.tmp-*) and calls keep(id, ud) for
 * every blob file with a valid name; a blob for which keep returns false is unlinked
 * (an orphan). Other names are left alone. Counts into *temps and *orphans. 0 or -1. */
int rx_blob_scan(const char *root, bool (*keep)(const char *id, void *ud), void *ud,
                 int *temps, int *orphans, char *err, size_t errlen);

#endif
