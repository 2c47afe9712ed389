/*
 * http.c — the one HTTP client (relax/http.h): one bounded exchange on libcurl, shared by
 * relax-agent and relax.
 *
 * The connection keeps one easy handle (libcurl then reuses the TCP connection: a poll
 * that returns a job and the heartbeats that follow cost no new handshakes) and drives
 * it with a private multi handle for one reason: the wait (curl_multi_poll) can also
 * watch the caller's wake fd, so a stopping agent ends a 20-second long poll or a
 * download within a millisecond, and can call the caller's progress tick between
 * waits. Everything the callers word differently (retries, messages, JSON) is theirs;
 * failures are classified here (rx_http_err) so each can say it its own way.
 */
#include "relax/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* State of one transfer, seen by the libcurl callbacks. */
typedef struct xfer {
    CURL *h;            /* for the status code */
    const rx_http_req *q;
    rx_http_resp *r;    /* buffered bodies and headers go here */
    int64_t sunk;       /* bytes given to the sink */
    size_t alloc;       /* capacity of r->body */
    int too_large;      /* a cap was hit */
    int sink_failed;    /* the sink aborted */
} xfer;

static int buffer_append(xfer *x, const char *p, size_t n)
{
    rx_http_resp *r = x->r;
    if (n > x->q->body_cap - r->len) {
        x->too_large = 1;
        return -1;
    }
    if (r->len + n + 1 > x->alloc) {
        size_t na = x->alloc ? x->alloc : 4096;
        while (na < r->len + n + 1) na *= 2;
        char *nb = realloc(r->body, na);
        if (!nb) {
            x->too_large = 1;
            return -1;
        }
        r->body = nb;
        x->alloc = na;
    }
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = 0;
    return 0;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    long st = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
    if (x->q->sink && st >= 200 && st < 300) {
        if ((int64_t)n > x->q->sink_cap - x->sunk) {
            x->too_large = 1;
            return 0;
        }
        if (x->q->sink(x->q->sink_ud, p, n)) {
            x->sink_failed = 1;
            return 0;
        }
        x->sunk += (int64_t)n;
        return n;
    }
    return buffer_append(x, p, n) ? 0 : n;
}

/* Copies a header value (after "name:"), trimmed, into out. */
static void header_value(const char *p, size_t n, char *out, size_t outlen)
{
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ')) n--;
    if (n >= outlen) n = outlen - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    char v[160];
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after 100, redirects) */
        x->r->retry_after = -1;
        x->r->etag[0] = 0;
    } else if (n > 12 && !strncasecmp(p, "retry-after:", 12)) {
        header_value(p + 12, n - 12, v, sizeof v);
        char *end;
        errno = 0;
        double s = strtod(v, &end);
        /* delta-seconds; an HTTP-date is honored as "soon" (1 s) */
        x->r->retry_after = (end != v && !*end && !errno && s >= 0) ? s : 1.0;
    } else if (n > 5 && !strncasecmp(p, "etag:", 5)) {
        header_value(p + 5, n - 5, v, sizeof v);
        size_t l = strlen(v);
        if (l >= 2 && v[0] == '"' && v[l - 1] == '"') {
            memmove(v, v + 1, l - 2);
            v[l - 2] = 0;
        }
        memcpy(x->r->etag, v, sizeof x->r->etag);
    }
    return n;
}

int rx_http_init(rx_http *c, const char *server, const char *token, const char *user_agent,
                 int wake_fd, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->wake_fd = wake_fd;
    size_t n = strlen(server);
    while (n && server[n - 1] == '/') n--;
    if (strncmp(server, "http://", 7) && strncmp(server, "https://", 8)) {
        snprintf(err, errlen, "server URL must start with http:// or https:// (got '%.200s')", server);
        for (char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        return -1;
    }
    if (n >= sizeof c->base) {
        snprintf(err, errlen, "server URL too long");
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
    snprintf(c->user_agent, sizeof c->user_agent, "%s", user_agent);
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    if (!c->easy || !c->multi) {
        rx_http_fini(c);
        snprintf(err, errlen, "cannot create libcurl handles");
        return -1;
    }
    return 0;
}

void rx_http_fini(rx_http *c)
{
    if (c->multi) curl_multi_cleanup(c->multi);
    if (c->easy) curl_easy_cleanup(c->easy);
    c->multi = c->easy = NULL;
}

void rx_http_resp_free(rx_http_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* Drives the transfer until it ends, libcurl's timeout passes, or (interruptible) the
 * wake fd turns readable. Returns the CURLcode, or -1 when stopped. */
static int drive(rx_http *c, const rx_http_req *q)
{
    CURLM *m = c->multi;
    int use_wake = q->interruptible && c->wake_fd >= 0;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) return CURLE_FAILED_INIT;
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) return (int)msg->data.result;
        if (!running) return CURLE_OK;
        if (q->tick) q->tick(q->tick_ud);
        struct curl_waitfd wfd = {.fd = c->wake_fd, .events = CURL_WAIT_POLLIN};
        int nfds = 0;
        if (curl_multi_poll(m, use_wake ? &wfd : NULL, use_wake ? 1 : 0, q->tick ? 100 : 1000,
                            &nfds) != CURLM_OK)
            return CURLE_FAILED_INIT;
        if (use_wake && (wfd.revents & CURL_WAIT_POLLIN)) return -1;
    }
}

static void set_err(rx_http_err *e, int kind, const char *msg)
{
    e->kind = kind;
    snprintf(e->msg, sizeof e->msg, "%s", msg);
}

rx_http_rc rx_http_request(rx_http *c, const rx_http_req *q, rx_http_resp *r, rx_http_err *e)
{
    char url[2048], ebuf[CURL_ERROR_SIZE];
    memset(r, 0, sizeof *r);
    memset(e, 0, sizeof *e);
    r->retry_after = -1;
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, q->path) >= sizeof url) {
        set_err(e, RX_HTTP_E_OTHER, "request URL too long");
        return RX_HTTP_FAILED;
    }
    CURL *h = c->easy;
    curl_easy_reset(h);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
    struct curl_slist *t = hdrs;
    if (t && q->body && q->content_type) t = curl_slist_append(t, q->content_type);
    if (t && c->auth[0]) t = curl_slist_append(t, c->auth);
    if (!t) {
        curl_slist_free_all(hdrs);
        set_err(e, RX_HTTP_E_OTHER, "out of memory");
        return RX_HTTP_FAILED;
    }
    xfer x = {.h = h, .q = q, .r = r};
    long conn_ms = q->connect_timeout_ms ? q->connect_timeout_ms : 10000L;
    if (q->timeout_ms > 0 && q->timeout_ms < conn_ms) conn_ms = q->timeout_ms;
    ebuf[0] = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    if (!strcmp(q->method, "HEAD")) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (q->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, conn_ms);
    if (q->timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, q->timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (q->sink) curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)q->sink_cap);
    curl_multi_add_handle(c->multi, h);
    int rc = drive(c, q);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_multi_remove_handle(c->multi, h);
    curl_slist_free_all(hdrs);
    if (rc == -1) {
        rx_http_resp_free(r);
        r->status = 0;
        set_err(e, RX_HTTP_E_OTHER, "interrupted");
        return RX_HTTP_STOPPED;
    }
    if (rc == CURLE_OK) return RX_HTTP_OK;
    rx_http_resp_free(r);
    r->status = 0;
    const char *msg = ebuf[0] ? ebuf : curl_easy_strerror((CURLcode)rc);
    if (x.sink_failed) {
        set_err(e, RX_HTTP_E_SINK, "the download was aborted while writing it");
    } else if (x.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
        set_err(e, RX_HTTP_E_TOO_LARGE, "response too large");
        e->cap = q->sink ? q->sink_cap : (int64_t)q->body_cap;
    } else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
               rc == CURLE_COULDNT_RESOLVE_PROXY) {
        set_err(e, RX_HTTP_E_CONNECT, msg);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        set_err(e, RX_HTTP_E_TIMEOUT, msg);
    } else {
        set_err(e, RX_HTTP_E_OTHER, msg);
    }
    return RX_HTTP_FAILED;
}
