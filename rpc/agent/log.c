/*
 * log.c — relax-agent's log: one JSON object per line on stderr, like relaxd's.
 *
 * Every line is {"ts": "2026-11-22T04:57:01.123Z", "level": "info", "event": "...",
 * ...fields}: UTC with milliseconds, the level, the event name, then the event's fields.
 * A line is built whole in memory and written with one write(2) under a mutex, so lines
 * from the main loop and the heartbeat thread never interleave. Lines below the chosen
 * level (--verbose lowers it to debug) are dropped before they are built.
 */
#include "agent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_min = RXAG_INFO; /* the lowest level written */

void rxag_log_level(int level)
{
    log_min = level;
}

static const char *level_name(int level)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    return level >= RXAG_DEBUG && level <= RXAG_ERROR ? names[level] : "info";
}

void rxag_log(int level, const char *event, json_t *fields)
{
    if (level < log_min) {
        json_decref(fields);
        return;
    }
    char ts[40];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t k = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + k, sizeof ts - k, ".%03ldZ", now.tv_nsec / 1000000);
    json_t *o = json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level_name(level), "event", event);
    if (o && json_is_object(fields)) json_object_update(o, fields);
    json_decref(fields);
    char *line =
        o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(o);
    if (!line) return;
    size_t n = strlen(line);
    line[n] = '\n'; /* the NUL is not written */
    pthread_mutex_lock(&log_mu);
    for (size_t off = 0; off <= n;) {
        ssize_t w = write(STDERR_FILENO, line + off, n + 1 - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    pthread_mutex_unlock(&log_mu);
    free(line);
}
