/*
 * store.h — relaxd's persistent state behind one interface (docs/design.md, "When one machine
 * is not enough"): the artifact cache now; the benchmark job queue joins it later.
 *
 * The artifact cache maps a cache key (hex: structural hash of the module + target +
 * build options + compiler version, computed by the server) to an artifact, identified
 * by its content address (hex SHA-256 of the .rxa bytes). Metadata rows (key, id, size,
 * target, times, metadata JSON) live in the store's database; artifact bytes live as
 * content-addressed blob files written atomically (temp file, fsync, rename, then the
 * row in a transaction). A blob found missing or corrupt is dropped (row and file) and
 * reported, so the caller rebuilds. Eviction is least-recently-used by last access,
 * keeping the total blob bytes under `max_bytes`.
 *
 * "Verified on read", exactly. rx_store_read returns bytes whose SHA-256 matched the
 * id either during this read or during an earlier read of the very same file, unchanged
 * since as far as the filesystem can tell:
 *   - every read opens the blob and fstats it; the size must match the row;
 *   - the store remembers, per blob, the file's (device, inode, size, mtime_ns, ctime_ns)
 *     at its last successful full verification; a read whose fstat matches that record,
 *     within `verify_interval_ms` of the verification, returns the bytes without hashing;
 *   - any other read hashes the whole file: the first read, a file written, truncated,
 *     replaced, renamed over or touched since (every write through the filesystem moves
 *     mtime and ctime, and ctime cannot be set back), and every read once the interval
 *     has passed since the last verification;
 *   - a verification is remembered only when the file's mtime and ctime are at least
 *     2 s older than the verification, so a write in the same timestamp tick (coarse
 *     or 1 s granular filesystem clocks) cannot leave the record looking current.
 * What this does not catch within the interval: the content changing without the
 * filesystem noticing (bit rot under the page cache, writes to the raw device). Those
 * are found by the first full hash after the interval; set verify_interval_ms to
 * RX_STORE_VERIFY_EVERY_READ to hash on every read. rx_store_lookup checks presence and
 * size only (a stat); the server verifies hits through rx_store_read.
 *
 * Access times. Hits and reads record the access in memory (no database write per
 * hit); the pending accesses are written in one transaction, in access order, at most
 * every `access_flush_ms` (by the next hit after that), before every put (which is
 * where eviction runs, so LRU order is exact for eviction) and at close. A crash
 * forgets at most the accesses since the last flush: only the LRU order suffers.
 * rx_artifact_info.last_access_ms includes pending accesses.
 *
 * Backends: sqlite in WAL mode (store_sqlite.c, the embedded default: database and
 * blobs under one data directory). The functions below dispatch through an ops table
 * (rx_store_ops in cache/store_int.h) so a PostgreSQL backend with blobs on shared
 * storage can slot in without touching the server.
 *
 * Thread safety: one rx_store may be used from many threads at once.
 * Errors: functions returning int give 0 on success and -1 on an error with a one-line
 * message in err (which may be NULL); lookups distinguish hit and miss separately.
 */
#ifndef RELAX_STORE_H
#define RELAX_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rx_store rx_store;

typedef struct rx_store_opts {
    const char *dir;        /* data directory (created if missing): db + blobs/ */
    int64_t max_bytes;      /* cap on total artifact bytes; 0: unlimited */
} rx_store_opts;

/* verify_interval_ms: hash the whole blob on every read. */
#define RX_STORE_VERIFY_EVERY_READ (-1)
#define RX_STORE_VERIFY_INTERVAL_DEFAULT_MS 300000 /* 5 min */
#define RX_STORE_ACCESS_FLUSH_DEFAULT_MS 1000

/* Cost/assurance trade-offs (rx_store_open_tuned); zero fields take the defaults. */
typedef struct rx_store_tuning {
    int64_t verify_interval_ms; /* trust an unchanged, verified blob this long; 0: the
                                   default (5 min); RX_STORE_VERIFY_EVERY_READ (< 0):
                                   hash on every read */
    int64_t access_flush_ms;    /* write pending access times at most this often; 0:
                                   the default (1 s); must be >= 0 */
} rx_store_tuning;

typedef struct rx_artifact_info {
    char id[65];            /* content address: hex SHA-256 of the artifact bytes */
    char key[65];           /* the cache key it was stored under */
    char target[128];       /* the normalized target: "cpu", "opencl,tile=8" (RX_TARGET_STR_MAX) */
    int64_t size;           /* bytes */
    int64_t created_ms;     /* Unix time in milliseconds */
    int64_t last_access_ms; /* Unix time in milliseconds (LRU order) */
} rx_artifact_info;

typedef struct rx_store_stats {
    int64_t entries;        /* artifacts held (distinct blobs; -1: unknown) */
    int64_t bytes;          /* their total size (-1: unknown) */
    int64_t hits, misses;   /* lookups since open */
    int64_t evictions;      /* artifacts evicted since open */
    int64_t dropped;        /* corrupt or missing blobs dropped since open */
    int64_t verified;       /* reads that hashed the whole blob since open (the others
                               matched a recent verification of the same file) */
} rx_store_stats;

/* Opens (creating when needed) the store in o->dir; NULL with a message in err. Runs
 * recovery: temp files of interrupted writes are removed, rows whose blob is missing
 * (or has the wrong size) are dropped, blobs without a row are removed, and max_bytes
 * is enforced. One process owns a data directory while the store is open (a second
 * process's open fails); open it once per process. */
rx_store *rx_store_open(const rx_store_opts *o, char *err, size_t errlen);

/* rx_store_open with tuning t (NULL: all defaults, which is what rx_store_open uses). */
rx_store *rx_store_open_tuned(const rx_store_opts *o, const rx_store_tuning *t, char *err,
                              size_t errlen);

/* Closes the store (writing pending access times, checkpointing the database). NULL is
 * a no-op. */
void rx_store_close(rx_store *s);

/* Looks up key. Returns 1 on a hit (info filled, access recorded), 0 on a miss, -1 on
 * an error. A hit whose blob is missing or has the wrong size counts as a miss (and is
 * dropped). The blob's content is not hashed here (see "Verified on read"). Cost: one
 * SELECT and a stat. */
int rx_store_lookup(rx_store *s, const char *key, rx_artifact_info *info, char *err,
                    size_t errlen);

/* Stores bytes under key (replacing an older entry for the key), with the artifact's
 * metadata JSON (may be NULL). The blob is written atomically before the row; then
 * least-recently-used entries are evicted while the total exceeds max_bytes (never the
 * entry just stored). Fills info. Returns 0 or -1. */
int rx_store_put(rx_store *s, const char *key, const char *target, const uint8_t *bytes,
                 size_t n, const char *meta_json, rx_artifact_info *info, char *err,
                 size_t errlen);

/* Reads the artifact with content address id into *bytes (heap; caller frees), verified
 * as described in "Verified on read". Returns 0 ok, 1 not found (unknown id, or an id
 * that is not 64 lowercase hex digits), 2 corrupt or missing blob (dropped, with what
 * was wrong in err; the caller should rebuild), -1 error. Records the access. Cost of a
 * repeated read of a known, unchanged blob: open, fstat, read, close, no SQL; otherwise
 * one SELECT and/or a SHA-256 of the blob. */
int rx_store_read(rx_store *s, const char *id, uint8_t **bytes, size_t *n, char *err,
                  size_t errlen);

/* The info (and, when meta is not NULL, the metadata JSON: heap, caller frees; NULL if
 * none was stored) of artifact id. Returns 0, 1 not found, -1 error. */
int rx_store_info(rx_store *s, const char *id, rx_artifact_info *info, char **meta,
                  char *err, size_t errlen);

/* The ids of the artifacts held whose id starts with prefix (1..64 lowercase hex
 * digits; anything else finds nothing), in id order, at most max of them into ids;
 * *n gets how many. Ask for one more than you show to tell "exactly these" from "more".
 * Returns 0 or -1. */
int rx_store_find_prefix(rx_store *s, const char *prefix, char (*ids)[65], int max, int *n,
                         char *err, size_t errlen);

/* Current counters. */
void rx_store_get_stats(rx_store *s, rx_store_stats *out);

/* True when id is 64 lowercase hex digits (the only ids that name files). */
int rx_store_valid_id(const char *id);

#endif
