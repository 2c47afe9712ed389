/*
 * store.h — relaxd's persistent state behind one interface (DESIGN.md, "When one machine
 * is not enough"): the artifact cache now; the benchmark job queue joins it later.
 *
 * The artifact cache maps a cache key (hex: structural hash of the module + target +
 * build options + compiler version, computed by the server) to an artifact, identified
 * by its content address (hex SHA-256 of the .rxa bytes). Metadata rows (key, id, size,
 * target, times, metadata JSON) live in the store's database; artifact bytes live as
 * content-addressed blob files written atomically (temp file, fsync, rename, then the
 * row in a transaction) and verified against their address on every read. A blob found
 * missing or corrupt is dropped (row and file) and reported, so the caller rebuilds.
 * Eviction is least-recently-used by last access, keeping the total blob bytes under
 * `max_bytes`.
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

typedef struct rx_artifact_info {
    char id[65];            /* content address: hex SHA-256 of the artifact bytes */
    char key[65];           /* the cache key it was stored under */
    char target[32];        /* "cpu", ... */
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
} rx_store_stats;

/* Opens (creating when needed) the store in o->dir; NULL with a message in err. Runs
 * recovery: temp files of interrupted writes are removed, rows whose blob is missing
 * (or has the wrong size) are dropped, blobs without a row are removed, and max_bytes
 * is enforced. One process owns a data directory while the store is open (a second
 * process's open fails); open it once per process. */
rx_store *rx_store_open(const rx_store_opts *o, char *err, size_t errlen);

/* Closes the store (checkpointing the database). NULL is a no-op. */
void rx_store_close(rx_store *s);

/* Looks up key. Returns 1 on a hit (info filled, last access updated), 0 on a miss,
 * -1 on an error. A hit whose blob is missing counts as a miss (and is dropped). */
int rx_store_lookup(rx_store *s, const char *key, rx_artifact_info *info, char *err,
                    size_t errlen);

/* Stores bytes under key (replacing an older entry for the key), with the artifact's
 * metadata JSON (may be NULL). The blob is written atomically before the row; then
 * least-recently-used entries are evicted while the total exceeds max_bytes (never the
 * entry just stored). Fills info. Returns 0 or -1. */
int rx_store_put(rx_store *s, const char *key, const char *target, const uint8_t *bytes,
                 size_t n, const char *meta_json, rx_artifact_info *info, char *err,
                 size_t errlen);

/* Reads the artifact with content address id into *bytes (heap; caller frees) after
 * verifying its SHA-256. Returns 0 ok, 1 not found (unknown id, or an id that is not
 * 64 lowercase hex digits), 2 corrupt or missing blob (dropped, with what was wrong in
 * err; the caller should rebuild), -1 error. Updates last access. */
int rx_store_read(rx_store *s, const char *id, uint8_t **bytes, size_t *n, char *err,
                  size_t errlen);

/* The info (and, when meta is not NULL, the metadata JSON: heap, caller frees; NULL if
 * none was stored) of artifact id. Returns 0, 1 not found, -1 error. */
int rx_store_info(rx_store *s, const char *id, rx_artifact_info *info, char **meta,
                  char *err, size_t errlen);

/* Current counters. */
void rx_store_get_stats(rx_store *s, rx_store_stats *out);

/* True when id is 64 lowercase hex digits (the only ids that name files). */
int rx_store_valid_id(const char *id);

#endif
