/*
 * http.c — one HTTP exchange between relax-agent and relaxd, on libcurl.
 *
 * Each thread of the agent (the main loop, the heartbeat thread) owns one rxag_conn: a
 * CURL easy handle kept across requests (libcurl then reuses the TCP connection, so a
 * poll that returns a job and the heartbeats that follow cost no new handshakes) driven
 * by a private CURLM multi handle. The multi interface is used for one reason: the wait
 * (curl_multi_poll) also watches the agent's stop pipe, so SIGTERM ends a 20-second
 * long poll, a heartbeat or a download within a millisecond instead of at the next
 * libcurl progress tick. Requests that must still go out while stopping (the final
 * "agent_shutdown" report) pass interruptible = 0.
 *
 * Bodies are bounded: buffered bodies by RXAG_JSON_CAP, a sink's by the caller's cap
 * (also checked against Content-Length up front). Only a 2xx body reaches the sink, so
 * an error body never lands in an artifact file. Redirects are not followed.
 */
#include "agent.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one transfer, seen by the write callback. */
typedef struct xfer {
    CURL *h;         /* for the status code */
    rxag_resp *r;    /* buffered bodies go here */
    rxag_sink sink;  /* 2xx bodies go here when set */
    void *ud;        /* its argument */
    int64_t cap;     /* sink cap */
    int64_t sunk;    /* bytes given to the sink */
    size_t alloc;    /* capacity of r->body */
    int too_large;   /* a cap was hit */
    int sink_failed; /* the sink aborted */
} xfer;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    long st = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
    if (x->sink && st >= 200 && st < 300) {
        if ((int64_t)n > x->cap - x->sunk) {
            x->too_large = 1;
            return 0;
        }
        if (x->sink(x->ud, p, n)) {
            x->sink_failed = 1;
            return 0;
        }
        x->sunk += (int64_t)n;
        return n;
    }
    rxag_resp *r = x->r;
    if (n > RXAG_JSON_CAP - r->len) {
        x->too_large = 1;
        return 0;
    }
    if (r->len + n + 1 > x->alloc) {
        size_t na = x->alloc ? x->alloc : 4096;
        while (na < r->len + n + 1) na *= 2;
        char *nb = realloc(r->body, na);
        if (!nb) {
            x->too_large = 1;
            return 0;
        }
        r->body = nb;
        x->alloc = na;
    }
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = 0;
    return n;
}

int rxag_conn_init(rxag_conn *c, const char *server, const char *token, int wake_fd, char *err,
                   size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->wake_fd = wake_fd;
    size_t n = strlen(server);
    while (n && server[n - 1] == '/') n--;
    if (strncmp(server, "http://", 7) && strncmp(server, "https://", 8)) {
        snprintf(err, errlen, "--server must start with http:// or https:// (got '%.200s')",
                 server);
        return -1;
    }
    if (n >= sizeof c->base) {
        snprintf(err, errlen, "--server URL too long");
        return -1;
    }
    memcpy(c->base, server, n);
    c->base[n] = 0;
    if (token && *token &&
        (size_t)snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", token) >=
            sizeof c->auth) {
        snprintf(err, errlen, "token too long (at most 256 characters)");
        return -1;
    }
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    if (!c->easy || !c->multi) {
        rxag_conn_fini(c);
        snprintf(err, errlen, "cannot create libcurl handles");
        return -1;
    }
    return 0;
}

void rxag_conn_fini(rxag_conn *c)
{
    if (c->multi) curl_multi_cleanup(c->multi);
    if (c->easy) curl_easy_cleanup(c->easy);
    c->multi = c->easy = NULL;
}

void rxag_resp_free(rxag_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* Drives the transfer until it ends, the deadline passes (libcurl's own timeout), or
 * the wake fd turns readable. Returns the CURLcode, or -1 when stopped. */
static int drive(rxag_conn *c, int interruptible)
{
    CURLM *m = c->multi;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) return CURLE_FAILED_INIT;
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) return (int)msg->data.result;
        if (!running) return CURLE_OK;
        struct curl_waitfd wfd = {.fd = c->wake_fd, .events = CURL_WAIT_POLLIN};
        int nfds = 0;
        int use_wake = interruptible && c->wake_fd >= 0;
        if (curl_multi_poll(m, use_wake ? &wfd : NULL, use_wake ? 1 : 0, 1000, &nfds) != CURLM_OK)
            return CURLE_FAILED_INIT;
        if (use_wake && (wfd.revents & CURL_WAIT_POLLIN)) return -1;
    }
}

int rxag_request(rxag_conn *c, const char *method, const char *path, const char *json_body,
                 long timeout_ms, int interruptible, rxag_sink sink, void *ud, int64_t sink_cap,
                 rxag_resp *r, char *err, size_t errlen)
{
    char url[2048], ebuf[CURL_ERROR_SIZE];
    memset(r, 0, sizeof *r);
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, path) >= sizeof url) {
        snprintf(err, errlen, "request URL too long");
        return RXAG_HTTP_FAILED;
    }
    CURL *h = c->easy;
    curl_easy_reset(h);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
    struct curl_slist *t = hdrs;
    if (t && json_body) t = curl_slist_append(t, "Content-Type: application/json");
    if (t && c->auth[0]) t = curl_slist_append(t, c->auth);
    if (!t) {
        curl_slist_free_all(hdrs);
        snprintf(err, errlen, "out of memory");
        return RXAG_HTTP_FAILED;
    }
    xfer x = {.h = h, .r = r, .sink = sink, .ud = ud, .cap = sink_cap};
    ebuf[0] = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (json_body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "relax-agent/" RX_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (sink) curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sink_cap);
    curl_multi_add_handle(c->multi, h);
    int rc = drive(c, interruptible);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_multi_remove_handle(c->multi, h);
    curl_slist_free_all(hdrs);
    if (rc == -1) {
        rxag_resp_free(r);
        r->status = 0;
        snprintf(err, errlen, "interrupted: the agent is stopping");
        return RXAG_HTTP_STOPPED;
    }
    if (rc != CURLE_OK) {
        rxag_resp_free(r);
        r->status = 0;
        if (x.sink_failed)
            snprintf(err, errlen, "the download was aborted while writing it");
        else if (x.too_large || rc == CURLE_FILESIZE_EXCEEDED)
            snprintf(err, errlen, "response from relaxd at %s is too large (limit %lld bytes)",
                     c->base, (long long)(sink ? sink_cap : (int64_t)RXAG_JSON_CAP));
        else
            snprintf(err, errlen, "%s %s%s: %s", method, c->base, path,
                     ebuf[0] ? ebuf : curl_easy_strerror((CURLcode)rc));
        return RXAG_HTTP_FAILED;
    }
    return RXAG_HTTP_OK;
}

const char *rxag_resp_error(const rxag_resp *r, char *code, char *buf, size_t n)
{
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *c = json_string_value(json_object_get(e, "code"));
    code[0] = 0;
    if (c) snprintf(code, 32, "%s", c);
    if (msg)
        snprintf(buf, n, "%s (HTTP %ld%s%s)", msg, r->status, c ? " " : "", c ? c : "");
    else
        snprintf(buf, n, "relaxd answered HTTP %ld%s%.200s", r->status, r->len ? ": " : "",
                 r->len ? r->body : "");
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
    json_decref(j);
    return buf;
}
