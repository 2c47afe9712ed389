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
 * The transfer itself (bounded bodies, sinks, ETag and Retry-After, the progress tick)
 * is the project's one HTTP client, base/http.c (relax/http.h); this file is the CLI's
 * policy on top: retries, the deadline, and the messages. libcurl is initialized once
 * in rxc_conn_init.
 */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Prints s with control characters (and DEL) replaced by '?'. */
static void put_clean(FILE *f, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
    }
}

int rxc_conn_init(rxc_conn *c, const char *server, const char *token, double timeout_s)
{
    char why[320];
    memset(c, 0, sizeof *c);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("error: cannot initialize libcurl\n", stderr);
        return 1;
    }
    c->curl_ready = 1;
    if (rx_http_init(&c->http, server, token, "relax/" RX_VERSION, -1, why, sizeof why)) {
        fprintf(stderr, "error: %s\n", why);
        return 1;
    }
    c->timeout_s = timeout_s;
    c->deadline = timeout_s > 0 ? rx_now_s() + timeout_s : 0;
    return 0;
}

void rxc_conn_fini(rxc_conn *c)
{
    rxc_progress_clear(&c->progress);
    rx_http_fini(&c->http);
    if (c->curl_ready) curl_global_cleanup();
}

void rxc_resp_free(rxc_resp *r)
{
    rx_http_resp_free(r);
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

static void tick(void *ud)
{
    rxc_progress_tick(ud);
}

/* Reports a failed transfer. Returns 1. */
static int transport_error(rxc_conn *c, const rx_http_err *e)
{
    const char *base = c->http.base;
    rxc_progress_clear(&c->progress);
    switch (e->kind) {
    case RX_HTTP_E_SINK:
        return 1; /* the sink printed why */
    case RX_HTTP_E_TOO_LARGE:
        fprintf(stderr, "error: response from relaxd at %s is too large (limit %lld bytes)\n",
                base, (long long)e->cap);
        return 1;
    case RX_HTTP_E_CONNECT:
        fprintf(stderr, "error: cannot reach relaxd at %s: %s\n", base, e->msg);
        return 1;
    case RX_HTTP_E_TIMEOUT:
        fprintf(stderr, "error: relaxd at %s did not answer within %g s (--timeout): %s\n",
                base, c->timeout_s, e->msg);
        return 1;
    default:
        fprintf(stderr, "error: request to relaxd at %s failed: %s\n", base, e->msg);
        return 1;
    }
}

/* rxc_request with any body: n bytes at body (NULL: none), sent with the header line
 * ctype ("Content-Type: ..."). */
static int exchange(rxc_conn *c, const char *method, const char *path, const void *body,
                    size_t n, const char *ctype, rxc_sink sink, void *ud, int64_t sink_cap,
                    rxc_resp *r)
{
    rx_http_req q = {.method = method, .path = path, .body = body, .body_len = n,
                     .content_type = ctype, .body_cap = RXC_JSON_CAP, .sink = sink,
                     .sink_ud = ud, .sink_cap = sink_cap,
                     .tick = c->progress.enabled ? tick : NULL, .tick_ud = &c->progress};
    memset(r, 0, sizeof *r);
    for (int attempt = 0;; attempt++) {
        if (c->deadline > 0) {
            double left = c->deadline - rx_now_s();
            if (left <= 0) {
                rxc_progress_clear(&c->progress);
                fprintf(stderr, "error: relaxd at %s did not answer within %g s (--timeout)\n",
                        c->http.base, c->timeout_s);
                return 1;
            }
            q.timeout_ms = (long)(left * 1000) + 1;
        }
        rx_http_err e;
        if (rx_http_request(&c->http, &q, r, &e) != RX_HTTP_OK) {
            rxc_resp_free(r);
            return transport_error(c, &e);
        }
        if (r->status != 503 || r->retry_after < 0 || attempt >= RXC_MAX_RETRIES) return 0;
        double wait = r->retry_after < RXC_RETRY_CAP_S ? r->retry_after : RXC_RETRY_CAP_S;
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
