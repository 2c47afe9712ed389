/*
 * log.c — structured logs: one JSON object per line (server_int.h).
 *
 * Every line has "ts" (UTC, ISO 8601 with milliseconds) and "level" first, then the
 * caller's fields (request id, method, path, status, latency_ms, event, ...). A line,
 * newline included, is built in memory and written with one write(2) under the logger's
 * mutex, so lines from different threads never interleave (and a line under PIPE_BUF
 * reaches a pipe whole even from another process's point of view). Logging never fails
 * the caller: a line that cannot be built or written is dropped.
 *
 * Two builders. rx_log_json takes a jansson object: for the rare events. The access
 * line written once per request (rx_log_request) is the hot one: it is formatted with
 * snprintf into a stack buffer, strings JSON-escaped by hand and the latency printed
 * the way jansson prints a real ("%.17g", ".0" added to an integral value), so its bytes
 * are the ones json_dumps would give, without building and freeing a tree per request.
 */
#include <stdarg.h>
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

static void timestamp(char out[64])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));
}

/* Writes n bytes (a whole line, newline included) with one write(2) when it can. */
static void write_line(rx_log *l, const char *p, size_t n)
{
    pthread_mutex_lock(&l->mu);
    while (n) {
        ssize_t w = write(l->fd, p, n);
        if (w <= 0) break;
        p += w;
        n -= (size_t)w;
    }
    pthread_mutex_unlock(&l->mu);
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
    char *full = realloc(text, n + 2);
    if (!full) {
        free(text);
        return;
    }
    full[n] = '\n';
    write_line(l, full, n + 1);
    free(full);
}

/* Appends s JSON-escaped as jansson escapes it (quotes, backslash, control characters;
 * other bytes as they are) into b at *at, keeping the NUL; false when it does not fit. */
static bool put_str(char *b, size_t cap, size_t *at, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = *at;
    if (i + 1 >= cap) return false;
    b[i++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc = c == '"' ? '"' : c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r'
                 : c == '\t' ? 't' : c == '\b' ? 'b' : c == '\f' ? 'f' : 0;
        if (i + 7 >= cap) return false;
        if (esc) {
            b[i++] = '\\';
            b[i++] = esc;
        } else if (c < 0x20) {
            memcpy(b + i, "\\u00", 4);
            b[i + 4] = hex[c >> 4];
            b[i + 5] = hex[c & 15];
            i += 6;
        } else {
            b[i++] = (char)c;
        }
    }
    if (i + 2 >= cap) return false;
    b[i++] = '"';
    b[i] = '\0';
    *at = i;
    return true;
}

/* Appends formatted text into b at *at; false when it does not fit. */
__attribute__((format(printf, 4, 5))) static bool put_fmt(char *b, size_t cap, size_t *at,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= cap - *at) return false;
    *at += (size_t)w;
    return true;
}

/* A real as jansson writes it: "%.17g", then ".0" when that reads as an integer, and
 * an exponent without '+' or leading zeros. */
static void real_text(double v, char out[40])
{
    char t[32]; /* "%.17g" of a double is at most 24 characters */
    snprintf(t, sizeof t, "%.17g", v);
    if (!strchr(t, '.') && !strchr(t, 'e') && !strchr(t, 'n') && !strchr(t, 'i')) {
        snprintf(out, 40, "%s.0", t);
        return;
    }
    char *e = strchr(t, 'e');
    if (!e) {
        snprintf(out, 40, "%s", t);
        return;
    }
    size_t o = (size_t)(e - t) + 1;
    memcpy(out, t, o);
    const char *p = e + 1;
    if (*p == '+') p++;
    else if (*p == '-') out[o++] = *p++;
    while (*p == '0' && p[1]) p++;
    snprintf(out + o, 40 - o, "%s", p);
}

void rx_log_request(rx_log *l, rx_log_level lv, const char *request_id, const char *method,
                    const char *path, int status, double latency_ms, int terminated)
{
    if (lv < l->min) return;
    char b[2048], ts[64], lat[40];
    size_t at = 0;
    timestamp(ts);
    real_text(latency_ms, lat);
    bool ok = put_fmt(b, sizeof b, &at, "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":\"request\","
                      "\"request_id\":", ts, level_names[lv]) &&
              put_str(b, sizeof b, &at, request_id) &&
              put_fmt(b, sizeof b, &at, ",\"method\":") && put_str(b, sizeof b, &at, method) &&
              put_fmt(b, sizeof b, &at, ",\"path\":") && put_str(b, sizeof b, &at, path) &&
              put_fmt(b, sizeof b, &at, ",\"status\":%d,\"latency_ms\":%s", status, lat) &&
              (!terminated || put_fmt(b, sizeof b, &at, ",\"terminated\":%d", terminated)) &&
              put_fmt(b, sizeof b, &at, "}\n");
    if (ok) write_line(l, b, at);
}

void rx_log_event(rx_log *l, rx_log_level lv, const char *event, const char *msg)
{
    json_t *o = json_object();
    if (!o) return;
    json_object_set_new(o, "event", json_string(event));
    if (msg) json_object_set_new(o, "message", json_string(msg));
    rx_log_json(l, lv, o);
}
