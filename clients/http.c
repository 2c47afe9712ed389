/*
 * http.c — one HTTP exchange between `relax` and relaxd, on libcurl's easy interface.
 *
 * rxc_request sends METHOD base+path with an optional JSON body, the bearer token and
 * "Expect:" cleared (relaxd answers small JSON bodies at once; no 100-continue round
 * trip), and collects the answer:
 *   * bodies are bounded: JSON and error bodies by RXC_JSON_CAP into a heap buffer; a 2xx
 *     body given to a sink (artifact downloads) by the caller's cap, checked against
 *     Content-Length up front (CURLOPT_MAXFILESIZE_LARGE) and while streaming;
 *   * the status code decides, per write, whether bytes go to the sink: only a 2xx body
 *     does, so a 503 or 404 body never lands in an artifact file;
 *   * a 503 carrying Retry-After (delta-seconds) is retried up to RXC_MAX_RETRIES times,
 *     each wait capped at RXC_RETRY_CAP_S and by the deadline; a 503 without it, or the
 *     last one, is returned to the caller like any other status;
 *   * the deadline (--timeout) bounds the whole command: each transfer gets what is left.
 *
 * Transport failures are reported here, in the exact forms of the interface:
 * "error: cannot reach relaxd at URL: <curl message>" when no connection could be made,
 * a timeout naming --timeout, or "error: request to URL failed: ...". HTTP errors are
 * reported by rxc_http_error from relaxd's {"error": {"code", "message", "errors"}}.
 * Text that came from the server is printed with control characters replaced, so a
 * hostile or broken server cannot drive the terminal.
 *
 * One easy handle per request (the CLI makes a handful; polling every few hundred ms
 * does not need connection reuse). libcurl is initialized once in rxc_conn_init.
 */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* State of one transfer, seen by the libcurl callbacks. */
typedef struct xfer {
    rxc_conn *c;         /* for progress */
    CURL *h;             /* the easy handle (status code queries) */
    rxc_resp *r;         /* where buffered bodies and headers go */
    rxc_sink sink;       /* 2xx bodies go here when set */
    void *ud;            /* sink's argument */
    int64_t sink_cap;    /* most bytes the sink may receive */
    int64_t sunk;        /* bytes given to the sink */
    size_t alloc;        /* capacity of r->body */
    int too_large;       /* a cap was hit */
    int sink_failed;     /* the sink aborted (and printed why) */
    double retry_after;  /* Retry-After seconds of the last response; -1: none */
} xfer;

/* Prints s with control characters (and DEL) replaced by '?'. */
static void put_clean(FILE *f, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
    }
}

static long status_of(CURL *h)
{
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    return st;
}

static int buffer_append(xfer *x, const char *p, size_t n)
{
    rxc_resp *r = x->r;
    if (n > RXC_JSON_CAP - r->len) {
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
    long st = status_of(x->h);
    if (x->sink && st >= 200 && st < 300) {
        if ((int64_t)n > x->sink_cap - x->sunk) {
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
        x->retry_after = -1;
        x->r->etag[0] = 0;
    } else if (n > 12 && !strncasecmp(p, "retry-after:", 12)) {
        header_value(p + 12, n - 12, v, sizeof v);
        char *end;
        errno = 0;
        double s = strtod(v, &end);
        /* delta-seconds; an HTTP-date is honored as "soon" (1 s) */
        x->retry_after = (end != v && !*end && !errno && s >= 0) ? s : 1.0;
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

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    xfer *x = ud;
    rxc_progress_tick(&x->c->progress);
    return 0;
}

int rxc_conn_init(rxc_conn *c, const char *server, const char *token, double timeout_s)
{
    memset(c, 0, sizeof *c);
    size_t n = strlen(server);
    while (n && server[n - 1] == '/') n--;
    if (strncmp(server, "http://", 7) && strncmp(server, "https://", 8)) {
        fputs("error: server URL must start with http:// or https:// (got '", stderr);
        put_clean(stderr, server, 200);
        fputs("')\n", stderr);
        return 1;
    }
    if (n >= sizeof c->base) {
        fputs("error: server URL too long\n", stderr);
        return 1;
    }
    memcpy(c->base, server, n);
    c->base[n] = 0;
    c->token = token && *token ? token : NULL;
    c->timeout_s = timeout_s;
    c->deadline = timeout_s > 0 ? rx_now_s() + timeout_s : 0;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("error: cannot initialize libcurl\n", stderr);
        return 1;
    }
    return 0;
}

void rxc_conn_fini(rxc_conn *c)
{
    rxc_progress_clear(&c->progress);
    curl_global_cleanup();
}

void rxc_resp_free(rxc_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

void rxc_sleep(rxc_conn *c, double s)
{
    double end = rx_now_s() + s;
    for (;;) {
        double left = end - rx_now_s();
        if (left <= 0) break;
        if (left > 0.1) left = 0.1;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
        rxc_progress_tick(&c->progress);
    }
}

/* Reports a failed transfer. Returns 1. */
static int transport_error(rxc_conn *c, const xfer *x, CURLcode rc, const char *ebuf)
{
    const char *msg = ebuf[0] ? ebuf : curl_easy_strerror(rc);
    rxc_progress_clear(&c->progress);
    if (x->sink_failed) return 1;
    if (x->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
        fprintf(stderr, "error: response from relaxd at %s is too large (limit %lld bytes)\n",
                c->base, (long long)(x->sink ? x->sink_cap : (int64_t)RXC_JSON_CAP));
        return 1;
    }
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        fprintf(stderr, "error: cannot reach relaxd at %s: %s\n", c->base, msg);
        return 1;
    case CURLE_OPERATION_TIMEDOUT:
        fprintf(stderr, "error: relaxd at %s did not answer within %g s (--timeout): %s\n",
                c->base, c->timeout_s, msg);
        return 1;
    default:
        fprintf(stderr, "error: request to relaxd at %s failed: %s\n", c->base, msg);
        return 1;
    }
}

/* rxc_request with any body: n bytes at body (NULL: none), sent with the header line
 * ctype ("Content-Type: ..."). */
static int exchange(rxc_conn *c, const char *method, const char *path, const void *body,
                    size_t n, const char *ctype, rxc_sink sink, void *ud, int64_t sink_cap,
                    rxc_resp *r)
{
    char url[2048], auth[4096], ebuf[CURL_ERROR_SIZE];
    memset(r, 0, sizeof *r);
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, path) >= sizeof url) {
        fputs("error: request URL too long\n", stderr);
        return 1;
    }
    if (c->token && (size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token) >=
                        sizeof auth) {
        fputs("error: token too long\n", stderr);
        return 1;
    }
    for (int attempt = 0;; attempt++) {
        double left = 0;
        if (c->deadline > 0) {
            left = c->deadline - rx_now_s();
            if (left <= 0) {
                rxc_progress_clear(&c->progress);
                fprintf(stderr, "error: relaxd at %s did not answer within %g s (--timeout)\n",
                        c->base, c->timeout_s);
                return 1;
            }
        }
        CURL *h = curl_easy_init();
        if (!h) {
            fputs("error: cannot create a libcurl handle\n", stderr);
            return 1;
        }
        struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
        struct curl_slist *t = hdrs;
        if (t && body) t = curl_slist_append(t, ctype);
        if (t && c->token) t = curl_slist_append(t, auth);
        if (!t) {
            curl_slist_free_all(hdrs);
            curl_easy_cleanup(h);
            fputs("error: out of memory\n", stderr);
            return 1;
        }
        xfer x = {.c = c, .h = h, .r = r, .sink = sink, .ud = ud, .sink_cap = sink_cap,
                  .retry_after = -1};
        ebuf[0] = 0;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (!strcmp(method, "HEAD")) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "relax/" RX_VERSION);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        if (left > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left * 1000) + 1);
        if (sink) curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)sink_cap);
        if (c->progress.enabled) {
            curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
            curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
            curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
        }
        CURLcode rc = curl_easy_perform(h);
        r->status = status_of(h);
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(h);
        if (rc != CURLE_OK) {
            rxc_resp_free(r);
            return transport_error(c, &x, rc, ebuf);
        }
        if (r->status != 503 || x.retry_after < 0 || attempt >= RXC_MAX_RETRIES) return 0;
        double wait = x.retry_after < RXC_RETRY_CAP_S ? x.retry_after : RXC_RETRY_CAP_S;
        if (c->deadline > 0 && rx_now_s() + wait >= c->deadline) return 0;
        rxc_resp_free(r);
        const char *old = c->progress.state;
        c->progress.state = "server busy, retrying";
        rxc_sleep(c, wait);
        c->progress.state = old;
    }
}

int rxc_request(rxc_conn *c, const char *method, const char *path, const char *json_body,
                rxc_sink sink, void *ud, int64_t sink_cap, rxc_resp *r)
{
    return exchange(c, method, path, json_body, json_body ? strlen(json_body) : 0,
                    "Content-Type: application/json", sink, ud, sink_cap, r);
}

int rxc_put_bytes(rxc_conn *c, const char *path, const void *bytes, size_t n, rxc_resp *r)
{
    return exchange(c, "PUT", path, bytes, n, "Content-Type: application/octet-stream", NULL,
                    NULL, 0, r);
}

json_t *rxc_get_json(rxc_conn *c, const char *path, const char *what)
{
    rxc_resp r;
    if (rxc_request(c, "GET", path, NULL, NULL, NULL, 0, &r)) return NULL;
    if (r.status != 200) {
        rxc_progress_clear(&c->progress);
        rxc_http_error(&r);
        rxc_resp_free(&r);
        return NULL;
    }
    json_t *j = rxc_resp_json(&r, what);
    rxc_resp_free(&r);
    return j;
}

json_t *rxc_resp_json(const rxc_resp *r, const char *what)
{
    json_error_t e;
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, &e) : NULL;
    if (!json_is_object(j)) {
        fprintf(stderr, "error: bad response from relaxd (%s): %s\n", what,
                j ? "not a JSON object" : r->body ? e.text : "empty body");
        json_decref(j);
        return NULL;
    }
    return j;
}

int rxc_print_error_obj(const json_t *err, long status)
{
    const char *msg = json_string_value(json_object_get(err, "message"));
    const char *code = json_string_value(json_object_get(err, "code"));
    fputs("error: ", stderr);
    put_clean(stderr, msg && *msg ? msg : "request failed", 4096);
    if (status > 0 || code) {
        fputs(" (", stderr);
        if (status > 0) fprintf(stderr, "HTTP %ld%s", status, code ? " " : "");
        if (code) put_clean(stderr, code, 200);
        fputc(')', stderr);
    }
    fputc('\n', stderr);
    const json_t *errs = json_object_get(err, "errors");
    size_t i, n = json_array_size(errs);
    for (i = 0; i < n && i < 1000; i++) {
        const json_t *e = json_array_get(errs, i);
        const char *path = json_string_value(json_object_get(e, "path"));
        const char *m = json_string_value(json_object_get(e, "message"));
        if (json_is_string(e)) m = json_string_value(e);
        fputs("  ", stderr);
        if (path && *path) {
            put_clean(stderr, path, 4096);
            fputs(": ", stderr);
        }
        put_clean(stderr, m ? m : "(no message)", 4096);
        fputc('\n', stderr);
    }
    if (n > i) fprintf(stderr, "  ... and %zu more\n", n - i);
    return 1;
}

int rxc_http_error(const rxc_resp *r)
{
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const json_t *err = json_object_get(j, "error");
    if (json_is_object(err)) {
        rxc_print_error_obj(err, r->status);
    } else if (json_is_string(err)) {
        fputs("error: ", stderr);
        put_clean(stderr, json_string_value(err), 4096);
        fprintf(stderr, " (HTTP %ld)\n", r->status);
    } else {
        fprintf(stderr, "error: relaxd answered HTTP %ld", r->status);
        if (r->body && r->len) {
            size_t n = strcspn(r->body, "\r\n");
            fputs(": ", stderr);
            put_clean(stderr, r->body, n < 200 ? n : 200);
        }
        fputc('\n', stderr);
    }
    json_decref(j);
    return 1;
}
