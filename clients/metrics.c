/*
 * metrics.c — the handful of numbers `relax status` shows, read from relaxd's Prometheus
 * text exposition (GET /metrics).
 *
 * The parser is deliberately forgiving, because metric names are the server's to evolve:
 * it reads each sample line `name{labels} value [timestamp]`, skips comments (# HELP,
 * # TYPE) and matches names by their ending, with or without a `relaxd_` prefix or a
 * `_total` suffix:
 *   cache_entries, cache_bytes               gauges
 *   cache_hits, cache_misses                 counters
 *   cache_lookups{result="hit"|"miss"}       the same, as one labelled counter
 *   queue_depth, queue_length, jobs_queued   the compile queue
 * Several samples of one metric (label sets) are summed. A number absent from the text
 * stays -1 and is shown as "?" — the status command never fails on metrics it does not
 * know. Lines are bounded by the response cap (RXC_JSON_CAP) in http.c.
 */
#include "client.h"

#include <stdlib.h>
#include <string.h>

/* True when name (n bytes) ends with suffix, optionally followed by "_total". */
static int ends_with(const char *name, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    if (n >= 6 && !memcmp(name + n - 6, "_total", 6)) n -= 6;
    return n >= k && !memcmp(name + n - k, suffix, k) &&
           (n == k || name[n - k - 1] == '_');
}

static void add(double *slot, double v)
{
    *slot = *slot < 0 ? v : *slot + v;
}

void rxc_metrics_parse(const char *text, rxc_metrics *m)
{
    m->cache_entries = m->cache_bytes = m->cache_hits = m->cache_misses = -1;
    m->queue_depth = -1;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *next = eol ? eol + 1 : NULL;
        if (len == 0 || line[0] == '#') {
            line = next;
            continue;
        }
        size_t n = strcspn(line, "{ \t\n");
        if (n > len) n = len;
        const char *labels = NULL, *p = line + n;
        size_t labels_len = 0;
        if (*p == '{') {
            const char *close = memchr(p, '}', len - n);
            if (!close) {
                line = next;
                continue;
            }
            labels = p + 1;
            labels_len = (size_t)(close - labels);
            p = close + 1;
        }
        char *end;
        double v = strtod(p, &end);
        if (end == p || end > line + len) {
            line = next;
            continue;
        }
        if (ends_with(line, n, "cache_entries"))
            add(&m->cache_entries, v);
        else if (ends_with(line, n, "cache_bytes"))
            add(&m->cache_bytes, v);
        else if (ends_with(line, n, "cache_hits"))
            add(&m->cache_hits, v);
        else if (ends_with(line, n, "cache_misses"))
            add(&m->cache_misses, v);
        else if (ends_with(line, n, "cache_lookups") && labels) {
            /* a bounded copy so the label search cannot run past this line */
            char lb[256];
            size_t k = labels_len < sizeof lb - 1 ? labels_len : sizeof lb - 1;
            memcpy(lb, labels, k);
            lb[k] = 0;
            if (strstr(lb, "\"hit\""))
                add(&m->cache_hits, v);
            else if (strstr(lb, "\"miss\""))
                add(&m->cache_misses, v);
        } else if (ends_with(line, n, "queue_depth") || ends_with(line, n, "queue_length") ||
                   ends_with(line, n, "jobs_queued"))
            add(&m->queue_depth, v);
        line = next;
    }
}
