/*
 * log.c — structured logs: one JSON object per line (server_int.h).
 *
 * Every line has "ts" (UTC, ISO 8601 with milliseconds) and "level" first, then the
 * caller's fields (request id, method, path, status, latency_ms, event, ...). A line is
 * built in memory and written with one write(2) under the logger's mutex, so lines from
 * different threads never interleave. Logging never fails the caller: a line that
 * cannot be built or written is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void rx_log_init(rx_log *l, int fd)
{
    pthread_mutex_init(&l->mu, NULL);
    l->fd = fd;
    l->min = RX_LOG_INFO;
}

void rx_log_destroy(rx_log *l) { pthread_mutex_destroy(&l->mu); }

double rx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int64_t rx_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timestamp(char out[64])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));
}

void rx_log_json(rx_log *l, rx_log_level lv, json_t *obj)
{
    if (!obj) return;
    if (lv < l->min) {
        json_decref(obj);
        return;
    }
    char ts[64];
    timestamp(ts);
    /* ts and level first: build a fresh object and append the caller's fields */
    json_t *line = json_object();
    if (line) {
        json_object_set_new(line, "ts", json_string(ts));
        json_object_set_new(line, "level", json_string(level_names[lv]));
        json_object_update(line, obj);
    }
    json_decref(obj);
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(line);
    if (!text) return;
    size_t n = strlen(text);
    pthread_mutex_lock(&l->mu);
    const char *p = text;
    size_t left = n;
    while (left) {
        ssize_t w = write(l->fd, p, left);
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
    if (!left) (void)!write(l->fd, "\n", 1);
    pthread_mutex_unlock(&l->mu);
    free(text);
}

void rx_log_event(rx_log *l, rx_log_level lv, const char *event, const char *msg)
{
    json_t *o = json_object();
    if (!o) return;
    json_object_set_new(o, "event", json_string(event));
    if (msg) json_object_set_new(o, "message", json_string(msg));
    rx_log_json(l, lv, o);
}
