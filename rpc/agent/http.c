/*
 * http.c — one HTTP exchange between relax-agent and relaxd, in the agent's terms, on the
 * project's one client (base/http.c, relax/http.h): a connection per thread (the main
 * loop, the heartbeat thread) whose handle is reused across requests and whose wait
 * watches the agent's stop pipe, so SIGTERM ends a 20-second long poll, a heartbeat or
 * a download within a millisecond. Requests that must still go out while stopping (the
 * final "agent_shutdown" report) pass interruptible = 0. What is the agent's own: the
 * JSON body type, RXAG_JSON_CAP, and one-line reasons for its log.
 */
#include "agent.h"

#include <stdio.h>
#include <string.h>

int rxag_conn_init(rxag_conn *c, const char *server, const char *token, int wake_fd, char *err,
                   size_t errlen)
{
    char why[320];
    if (rx_http_init(c, server, token, "relax-agent/" RX_VERSION, wake_fd, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

int rxag_request(rxag_conn *c, const char *method, const char *path, const char *json_body,
                 long timeout_ms, int interruptible, rxag_sink sink, void *ud, int64_t sink_cap,
                 rxag_resp *r, char *err, size_t errlen)
{
    rx_http_req q = {.method = method, .path = path, .body = json_body,
                     .body_len = json_body ? strlen(json_body) : 0,
                     .content_type = "Content-Type: application/json", .timeout_ms = timeout_ms,
                     .interruptible = interruptible, .body_cap = RXAG_JSON_CAP, .sink = sink,
                     .sink_ud = ud, .sink_cap = sink_cap};
    rx_http_err e;
    rx_http_rc rc = rx_http_request(c, &q, r, &e);
    if (rc == RX_HTTP_STOPPED)
        snprintf(err, errlen, "interrupted: the agent is stopping");
    else if (rc != RX_HTTP_OK && e.kind == RX_HTTP_E_TOO_LARGE)
        snprintf(err, errlen, "response from relaxd at %s is too large (limit %lld bytes)",
                 c->base, (long long)e.cap);
    else if (rc != RX_HTTP_OK && e.kind == RX_HTTP_E_SINK)
        snprintf(err, errlen, "%s", e.msg);
    else if (rc != RX_HTTP_OK)
        snprintf(err, errlen, "%s %s%s: %s", method, c->base, path, e.msg);
    return rc;
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
