/*
 * store.c — the public face of the store (store.h): argument checks that are the same
 * for every backend, the counters, and dispatch through the backend's rx_store_ops.
 *
 * What is checked here, once, before any backend sees a call:
 *   - ids must be 64 lowercase hex digits (rx_store_valid_id), so "../etc/passwd",
 *     uppercase or short ids are "not found" without a query or a filesystem access;
 *   - keys must be 1..64 characters (they are stored, never used as paths) and
 *     targets shorter than rx_artifact_info.target;
 *   - the content address of a put is computed here (SHA-256 of the bytes), so a
 *     backend never trusts a caller-supplied id.
 *   - rx_store_tuning's zero fields get their defaults here, so a backend sees only
 *     explicit values.
 * Hits and misses are counted here from the backend's answers; evictions and drops
 * are counted by the backend where they happen. The counters are atomics in the
 * rx_store, so rx_store_get_stats never blocks on the database for them.
 *
 * Backend choice: sqlite is the only backend; a PostgreSQL backend would be picked
 * from the options (say, a `dsn` field) in rx_store_open and nowhere else.
 */
#include "store_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rx_store {
    const rx_store_ops *ops; /* the backend */
    void *impl;              /* its state */
    rx_store_counters c;     /* since open */
};

int rx_store_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int64_t rx_store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rx_store_valid_id(const char *id)
{
    if (!id) return 0;
    for (int i = 0; i < 64; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return 0;
    return id[64] == 0;
}

/* 1..64 characters: fits rx_artifact_info.key. */
static int valid_key(const char *key)
{
    return key && key[0] && strnlen(key, 65) <= 64;
}

rx_store *rx_store_open(const rx_store_opts *o, char *err, size_t errlen)
{
    return rx_store_open_tuned(o, NULL, err, errlen);
}

rx_store *rx_store_open_tuned(const rx_store_opts *o, const rx_store_tuning *t, char *err,
                              size_t errlen)
{
    if (!o || !o->dir || !o->dir[0]) {
        rx_store_fail(err, errlen, "store: no data directory given");
        return NULL;
    }
    if (o->max_bytes < 0) {
        rx_store_fail(err, errlen, "store: max_bytes must be >= 0");
        return NULL;
    }
    rx_store_tuning tune = t ? *t : (rx_store_tuning){0};
    if (tune.access_flush_ms < 0) {
        rx_store_fail(err, errlen, "store: access_flush_ms must be >= 0");
        return NULL;
    }
    if (!tune.verify_interval_ms) tune.verify_interval_ms = RX_STORE_VERIFY_INTERVAL_DEFAULT_MS;
    if (!tune.access_flush_ms) tune.access_flush_ms = RX_STORE_ACCESS_FLUSH_DEFAULT_MS;
    rx_store *s = calloc(1, sizeof *s);
    if (!s) {
        rx_store_fail(err, errlen, "store: out of memory");
        return NULL;
    }
    s->ops = &rx_store_sqlite_ops;
    if (s->ops->open(o, &tune, &s->c, &s->impl, err, errlen) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void rx_store_close(rx_store *s)
{
    if (!s) return;
    s->ops->close(s->impl);
    free(s);
}

int rx_store_lookup(rx_store *s, const char *key, rx_artifact_info *info, char *err,
                    size_t errlen)
{
    rx_artifact_info tmp;
    if (!info) info = &tmp;
    int r = valid_key(key) ? s->ops->lookup(s->impl, key, info, err, errlen) : 0;
    if (r == 1) rx_store_count(&s->c.hits, 1);
    if (r == 0) rx_store_count(&s->c.misses, 1);
    return r;
}

int rx_store_put(rx_store *s, const char *key, const char *target, const uint8_t *bytes,
                 size_t n, const char *meta_json, rx_artifact_info *info, char *err,
                 size_t errlen)
{
    if (!valid_key(key))
        return rx_store_fail(err, errlen, "store: cache key must be 1..64 characters");
    if (!target) target = "";
    if (strnlen(target, sizeof info->target) >= sizeof info->target)
        return rx_store_fail(err, errlen, "store: target name longer than %zu characters",
                             sizeof info->target - 1);
    if (!bytes && n > 0) return rx_store_fail(err, errlen, "store: NULL bytes");
    if ((uint64_t)n > (uint64_t)INT64_MAX)
        return rx_store_fail(err, errlen, "store: artifact too large");
    char id[65];
    rx_blob_hash(bytes ? bytes : (const uint8_t *)"", n, id);
    rx_artifact_info tmp;
    return s->ops->put(s->impl, key, target, id, bytes ? bytes : (const uint8_t *)"", n,
                       meta_json, info ? info : &tmp, err, errlen);
}

int rx_store_read(rx_store *s, const char *id, uint8_t **bytes, size_t *n, char *err,
                  size_t errlen)
{
    *bytes = NULL;
    *n = 0;
    if (!rx_store_valid_id(id)) return 1;
    return s->ops->read(s->impl, id, bytes, n, err, errlen);
}

int rx_store_info(rx_store *s, const char *id, rx_artifact_info *info, char **meta,
                  char *err, size_t errlen)
{
    if (meta) *meta = NULL;
    if (!rx_store_valid_id(id)) return 1;
    rx_artifact_info tmp;
    return s->ops->info(s->impl, id, info ? info : &tmp, meta, err, errlen);
}

int rx_store_find_prefix(rx_store *s, const char *prefix, char (*ids)[65], int max, int *n,
                         char *err, size_t errlen)
{
    *n = 0;
    size_t len = strlen(prefix);
    if (len < 1 || len > 64 || max < 1) return 0;
    for (size_t i = 0; i < len; i++)
        if (!((prefix[i] >= '0' && prefix[i] <= '9') || (prefix[i] >= 'a' && prefix[i] <= 'f')))
            return 0;
    return s->ops->find_prefix(s->impl, prefix, ids, max, n, err, errlen);
}

void rx_store_get_stats(rx_store *s, rx_store_stats *out)
{
    memset(out, 0, sizeof *out);
    if (s->ops->totals(s->impl, &out->entries, &out->bytes) != 0)
        out->entries = out->bytes = -1; /* database unavailable: unknown */
    out->hits = atomic_load_explicit(&s->c.hits, memory_order_relaxed);
    out->misses = atomic_load_explicit(&s->c.misses, memory_order_relaxed);
    out->evictions = atomic_load_explicit(&s->c.evictions, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&s->c.dropped, memory_order_relaxed);
    out->verified = atomic_load_explicit(&s->c.verified, memory_order_relaxed);
}
