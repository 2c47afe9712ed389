/*
 * http.c — the libmicrohttpd daemon: per-request state, routing, authentication,
 * body limits, replies and access logs (server_int.h).
 *
 * Connections are admitted, counted and given a header deadline by admit.c (its essay
 * says why libmicrohttpd's own limit and timeout are not enough).
 *
 * Threading: a pool of event-loop threads (MHD_OPTION_THREAD_POOL_SIZE: http_threads,
 * default one per core), each running its own epoll loop over its share of the
 * connections (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO). Handlers run on those
 * threads, so none may block for long: the slow work (compiles) is on the compile
 * workers, and a request that has to wait parks instead (rx_req_park): the connection
 * is suspended (MHD_suspend_connection) before the handler registers a waiter with the
 * service it waits on, and that service's wake resumes it (rx_req_resume:
 * MHD_resume_connection, safe from any thread, also from inside the handler when the
 * answer is already known); libmicrohttpd then calls the access handler again and the
 * route's finish step replies. Two kinds of waits use it: a synchronous compile
 * (rx_req_wait: woken by the worker that finishes the job, the compile timer at the
 * deadline, or shutdown) and an agent's long poll (server/bench.c: woken by the
 * scheduler when a job is assigned to that agent, at the poll deadline, or at
 * shutdown). Shutdown stops the compile service and the scheduler before the daemon,
 * so every parked connection has been resumed when MHD_stop_daemon runs (it refuses
 * suspended connections); in between, rx_http_drain waits (bounded) until the resumed
 * requests have sent their replies, since MHD_stop_daemon closes connections without
 * flushing what is still queued. The completion callback runs the park's end hook (if
 * any) with whether the reply went out completely: a compile wait still registered is
 * dropped, a poll's waiter is freed (and a job whose reply failed goes back to the
 * queue).
 *
 * A request's state (rx_request) is made by the URI callback, as soon as the request
 * line is read and before the headers, so that every request libmicrohttpd hands to us
 * or answers itself is logged and counted by the completion callback. Then it passes
 * through the access handler several times:
 *   first call   tell admit.c the headers are complete (its header deadline stops),
 *                take or make the request id, check the header block against
 *                max_header_bytes (431 headers_too_large), refuse ambiguous body
 *                framing (framing_error: 400 and Connection: close), match the route
 *                on the path as sent (routable: a percent-escape is a 404; 404
 *                unknown path, 405 known path with another method, with Allow),
 *                authenticate (401 / 403), and check Content-Length against max_body
 *                (413 at once, before any of the body is read);
 *   upload calls append the body, counting: past max_body (a chunked upload has no
 *                Content-Length to check) the request is cut off (cut_off: the 413 is
 *                written onto the socket, since libmicrohttpd takes no reply in the
 *                middle of a body, and the connection is closed);
 *   last call    run the route's handler, which queues exactly one reply or parks the
 *                request (then one more call, after the resume, runs its finish step).
 * The completion callback logs one line per request (ts, level, request_id, method,
 * path, status, latency_ms; rx_log_request, no jansson), counts it in the metrics and
 * frees the state. Artifact bytes are handed to libmicrohttpd as the buffer the store
 * returned, freed by the response (no copy).
 *
 * Every reply we make carries X-Request-Id. Errors are {"error": {"code", "message"}}.
 *
 * Header limits. libmicrohttpd keeps a request's header block in the connection's
 * memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT); a block that does not fit is
 * answered by libmicrohttpd itself — 431 with a fixed HTML body and no X-Request-Id —
 * without ever calling us, and no option changes that reply. So the pool is made
 * larger than the configured limit (header_pool(): twice max_header_bytes plus 16 KiB
 * for libmicrohttpd's per-header bookkeeping and the response's header lines), and the
 * first call measures the block itself (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE: the
 * request line, header lines and the blank line, as received) and answers anything
 * over max_header_bytes with our JSON 431 "headers_too_large" and the request id.
 * Only a block past the pool — more than about twice the limit, or fewer bytes spread
 * over thousands of tiny header lines — still gets libmicrohttpd's own 431; it is
 * logged and counted like any request (status from MHD_CONNECTION_INFO_HTTP_STATUS),
 * with a generated request id since its headers were never parsed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "relax/support.h"
#include "server_int.h"

#define PATH_LOG_MAX 256 /* characters of the path kept for the log */
#define RAW_PATH_MAX 320 /* longest request-target path routed (longer: 404) */
#define HEADER_POOL_SLACK (16 << 10) /* pool bytes beyond twice the header limit */

struct rx_request {
    rx_server *srv;
    rx_http *http;         /* the daemon's state (parked count) */
    struct MHD_Connection *conn;
    char method[16];       /* as received, truncated */
    char path[PATH_LOG_MAX + 1]; /* printable copy for logs */
    char raw[RAW_PATH_MAX + 1]; /* the path as sent, before '?' ("" when too long) */
    char id[65];           /* request id */
    double t0;             /* monotonic ms at the first call */
    int route;             /* index in the routing table, -1: none (metrics: unmatched) */
    char params[RX_ROUTE_MAX_PARAMS][RX_ROUTE_PARAM_MAX];
    char *body;            /* request body (heap), NUL-terminated */
    size_t n, cap;
    bool cut;              /* cut off in its body (cut_off): the connection is closing */
    bool begun;            /* the access handler's first call ran */
    bool replied;          /* a response was queued */
    int status;            /* the status queued */
    rx_waiter wait;        /* a synchronous compile's wait (wait.job set while parked) */
    rx_handler finish;     /* runs when the parked request is resumed */
    bool parked;           /* suspended, finish not run yet */
    rx_park_end park_end;  /* runs in the completion callback (NULL: none) */
    void *park_data;       /* the park's state, given to finish and park_end */
    bool counted;          /* counted in http->parked until completion */
};

struct rx_http {
    struct MHD_Daemon *d;
    rx_server *srv;
    rx_admit *admit;       /* connection limits and the header deadline (admit.c) */
    int unmatched;         /* metrics slot for requests that matched no route */
    atomic_int parked;     /* requests parked and not completed yet (rx_http_drain) */
};

/* ---- request accessors ---- */

const char *rx_req_method(const rx_request *q) { return q->method; }
const char *rx_req_param(const rx_request *q, int i) { return q->params[i]; }
const char *rx_req_id(const rx_request *q) { return q->id; }

const char *rx_req_header(const rx_request *q, const char *name)
{
    return MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, name);
}

const char *rx_req_body(const rx_request *q, size_t *n)
{
    *n = q->n;
    return q->body ? q->body : "";
}

const char *rx_req_query(const rx_request *q, const char *name)
{
    return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* ---- parking a request ---- */

void rx_req_park(rx_request *q, rx_handler finish, rx_park_end end, void *data)
{
    q->finish = finish;
    q->park_end = end;
    q->park_data = data;
    q->parked = true;
    if (!q->counted) {
        q->counted = true;
        atomic_fetch_add(&q->http->parked, 1);
    }
    MHD_suspend_connection(q->conn); /* before any waiter exists: wake may come at once */
}

void rx_req_resume(rx_request *q) { MHD_resume_connection(q->conn); }

void *rx_req_park_data(const rx_request *q) { return q->park_data; }

bool rx_req_peer_closed(const rx_request *q)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    char c;
    ssize_t r = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* A compile waiter's wake: runs once, under the compile service's mutex, on any thread. */
static void wake_request(void *ctx) { rx_req_resume(ctx); }

void rx_req_wait(rx_request *q, rx_job *job, rx_handler finish)
{
    rx_req_park(q, finish, NULL, NULL);
    rx_compiler_wait(rx_server_compiler(q->srv), &q->wait, job, wake_request, q);
}

void rx_req_wait_end(rx_request *q, rx_compile_reply *out)
{
    rx_compiler_wait_end(rx_server_compiler(q->srv), &q->wait, out);
}

/* ---- replies ---- */

json_t *rx_error_json(const char *code, const char *msg)
{
    return json_pack("{s:s, s:s}", "code", code, "message", msg);
}

static void queue(rx_request *q, int status, struct MHD_Response *r, const char *ctype)
{
    if (!r || q->replied) {
        if (r) MHD_destroy_response(r);
        return;
    }
    MHD_add_response_header(r, "X-Request-Id", q->id);
    if (ctype) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (MHD_queue_response(q->conn, (unsigned)status, r) == MHD_YES) {
        q->replied = true;
        q->status = status;
    }
    MHD_destroy_response(r);
}

static struct MHD_Response *json_response(json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (!text) text = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
    if (!text) return NULL;
    size_t n = strlen(text);
    char *body = realloc(text, n + 2);
    if (!body) {
        free(text);
        return NULL;
    }
    body[n] = '\n';
    body[n + 1] = '\0';
    return MHD_create_response_from_buffer(n + 1, body, MHD_RESPMEM_MUST_FREE);
}

void rx_reply_json(rx_request *q, int status, json_t *json)
{
    queue(q, status, json_response(json), "application/json");
}

static void reply_error_headers(rx_request *q, int status, json_t *error_obj, int retry_after,
                                const char *name, const char *value)
{
    struct MHD_Response *r = json_response(json_pack("{s:o}", "error", error_obj));
    if (!r) return;
    if (retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (name) MHD_add_response_header(r, name, value);
    queue(q, status, r, "application/json");
}

void rx_reply_error_json(rx_request *q, int status, json_t *error_obj, int retry_after)
{
    reply_error_headers(q, status, error_obj, retry_after, NULL, NULL);
}

void rx_reply_error(rx_request *q, int status, const char *code, const char *msg)
{
    reply_error_headers(q, status, rx_error_json(code, msg), status == 503 ? 5 : 0, NULL, NULL);
}

void rx_reply_bytes(rx_request *q, int status, uint8_t *bytes, size_t n, const char *ctype,
                    const char *etag)
{
    /* the response borrows the buffer and frees it when sent: no copy */
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(n, bytes, free);
    if (!r) {
        free(bytes);
        return;
    }
    if (etag) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
    }
    queue(q, status, r, ctype);
}

void rx_reply_text(rx_request *q, int status, char *text, const char *ctype)
{
    rx_reply_bytes(q, status, (uint8_t *)text, strlen(text), ctype, NULL);
}

void rx_reply_empty(rx_request *q, int status)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    queue(q, status, r, NULL);
}

void rx_reply_not_modified(rx_request *q, const char *etag)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
    queue(q, 304, r, NULL);
}

/* ---- the request's life ---- */

/* A client's X-Request-Id is echoed when it is 1..64 characters of [A-Za-z0-9._:-];
 * otherwise the random one request_new made is kept. */
static void request_id(rx_request *q)
{
    const char *v = rx_req_header(q, "X-Request-Id");
    size_t n = v ? strlen(v) : 0;
    bool sane = n >= 1 && n <= 64;
    for (size_t i = 0; sane && i < n; i++) {
        char c = v[i];
        sane = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '-';
    }
    if (sane) memcpy(q->id, v, n + 1);
}

static void copy_printable(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (src[i] >= 0x20 && src[i] < 0x7f && src[i] != '"') ? src[i] : '?';
    dst[i] = '\0';
}

static bool allowed(const rx_route *r, rx_role role, bool anonymous_ok)
{
    if (r->perm == RX_PERM_PUBLIC || anonymous_ok) return true;
    if (role & RX_ROLE_ADMIN) return true;
    if (r->perm == RX_PERM_CLIENT) return role & RX_ROLE_CLIENT;
    if (r->perm == RX_PERM_AGENT) return role & RX_ROLE_AGENT;
    if (r->perm == RX_PERM_CLIENT_OR_AGENT) return role & (RX_ROLE_CLIENT | RX_ROLE_AGENT);
    return false;
}

/* The bytes of the request's header block as received: request line, header lines and
 * the blank line. libmicrohttpd counts them while parsing; when it cannot say, they
 * are added up from the parsed parts (the same count for well-formed requests). */
typedef struct header_sum {
    size_t n;
} header_sum;

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    (void)kind;
    header_sum *h = cls;
    h->n += strlen(key) + 2 + (value ? strlen(value) : 0) + 2; /* "K: V\r\n" */
    return MHD_YES;
}

static size_t header_bytes(rx_request *q, const char *url, const char *method,
                           const char *version)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci && ci->header_size) return ci->header_size;
    header_sum h = {strlen(method) + 1 + strlen(url) + 1 + strlen(version) + 2 + 2};
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, add_header, &h);
    return h.n;
}

/* The connection memory pool for a header limit (see the essay). */
static size_t header_pool(int64_t max_header_bytes)
{
    return (size_t)max_header_bytes * 2 + HEADER_POOL_SLACK;
}

/* How the body's length is framed (RFC 9112, 6.3): one Content-Length, or
 * Transfer-Encoding: chunked alone. Anything else could be read one way here and
 * another way by a proxy in front (request smuggling), so it is a 400 and the
 * connection is closed. */
typedef struct framing {
    int content_length, transfer_encoding;
    bool chunked_only;     /* every Transfer-Encoding value is exactly "chunked" */
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    framing *f = cls;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) f->content_length++;
    if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->transfer_encoding++;
        if (!value || strcasecmp(value, "chunked")) f->chunked_only = false;
    }
    return MHD_YES;
}

static const char *framing_error(rx_request *q)
{
    framing f = {0, 0, true};
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_length > 1) return "more than one Content-Length header";
    if (f.content_length && f.transfer_encoding)
        return "Content-Length and Transfer-Encoding together";
    if (f.transfer_encoding > 1 || !f.chunked_only)
        return "Transfer-Encoding must be chunked, once (no other coding is accepted)";
    return NULL;
}

/* Routes match the path exactly as sent. A percent-escape never names anything relaxd
 * serves (ids are hex, names are plain words), and decoding one first would let
 * "<id>%2fmeta" become another route or "<id>%00.txt" lose its tail at the NUL. */
static bool routable(const char *raw)
{
    if (!raw[0]) return false;
    for (const char *p = raw; *p; p++)
        if (*p == '%' || *p <= ' ' || *p >= 0x7f) return false;
    return true;
}

/* The first call: header size, route, authenticate, check the declared body size. */
static void begin(rx_request *q, const char *url, const char *method, const char *version)
{
    int64_t max_headers = rx_server_config(q->srv)->max_header_bytes;
    size_t hb = header_bytes(q, url, method, version);
    if (hb > (uint64_t)max_headers) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request headers are %zu bytes; the limit is %lld", hb,
                 (long long)max_headers);
        rx_reply_error(q, 431, "headers_too_large", msg);
        return;
    }
    const char *bad = framing_error(q);
    if (bad) {
        reply_error_headers(q, 400, rx_error_json("bad_request", bad), 0,
                            MHD_HTTP_HEADER_CONNECTION, "close");
        return;
    }
    if (!routable(q->raw)) {
        rx_reply_error(q, 404, "not_found", "no such endpoint");
        return;
    }
    url = q->raw;
    int n;
    const rx_route *routes = rx_routes(&n);
    const rx_route *r = NULL;
    char allow[64] = "";
    char params[RX_ROUTE_MAX_PARAMS][RX_ROUTE_PARAM_MAX];
    bool head = !strcmp(method, "HEAD");
    for (int i = 0; i < n; i++) {
        if (!rx_route_match(routes[i].pattern, url, params)) continue;
        if (!strcmp(routes[i].method, method) || (head && !strcmp(routes[i].method, "GET"))) {
            r = &routes[i];
            q->route = i;
            memcpy(q->params, params, sizeof params);
            break;
        }
        size_t used = strlen(allow);
        snprintf(allow + used, sizeof allow - used, "%s%s%s", used ? ", " : "", routes[i].method,
                 strcmp(routes[i].method, "GET") ? "" : ", HEAD");
    }
    if (!r) {
        if (allow[0]) {
            char msg[128];
            snprintf(msg, sizeof msg, "method %s is not allowed here (allowed: %s)", q->method,
                     allow);
            reply_error_headers(q, 405, rx_error_json("method_not_allowed", msg), 0,
                                MHD_HTTP_HEADER_ALLOW, allow);
        } else {
            rx_reply_error(q, 404, "not_found", "no such endpoint");
        }
        return;
    }
    const rx_auth *auth = rx_server_auth(q->srv);
    if (r->perm != RX_PERM_PUBLIC && auth->n > 0) {
        rx_role role = rx_auth_check(auth, rx_req_header(q, MHD_HTTP_HEADER_AUTHORIZATION));
        if (role == RX_ROLE_NONE) {
            reply_error_headers(q, 401,
                                rx_error_json("unauthorized", "a valid bearer token is required"),
                                0, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"relaxd\"");
            return;
        }
        if (!allowed(r, role, false)) {
            rx_reply_error(q, 403, "forbidden", "this token's role may not use this endpoint");
            return;
        }
    }
    const char *cl = rx_req_header(q, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && r->body) {
        char *end;
        unsigned long long len = strtoull(cl, &end, 10);
        int64_t max = rx_server_config(q->srv)->max_body;
        if (*end || end == cl) {
            rx_reply_error(q, 400, "bad_request", "malformed Content-Length");
            return;
        }
        if (len > (unsigned long long)max) {
            rx_reply_error(q, 413, "body_too_large", "the request body is larger than max_body");
            return;
        }
        q->cap = (size_t)len + 1;
        q->body = malloc(q->cap);
        if (!q->body) {
            rx_reply_error(q, 503, "out_of_memory", "cannot hold the request body now");
            return;
        }
    }
}

/* Ends a request in the middle of its body: libmicrohttpd 0.9.75 takes a reply only
 * before the body or after all of it, so the error is written onto the socket here and
 * the connection closed (the access handler returns MHD_NO). */
static void cut_off(rx_request *q, int status, const char *code, const char *msg)
{
    free(q->body);
    q->body = NULL;
    q->n = q->cap = 0;
    q->cut = true;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return;
    if (rx_raw_reply(ci->connect_fd, status, q->id, code, msg, status == 503 ? 5 : 0) == 0) {
        q->replied = true;
        q->status = status;
    }
    rx_raw_close(ci->connect_fd);
}

/* An upload chunk: append, counting against max_body. False: the request was cut off. */
static bool upload(rx_request *q, const char *data, size_t n)
{
    if (q->replied || q->route < 0) return true;
    const rx_route *r = &rx_routes(&(int){0})[q->route];
    size_t max = (size_t)rx_server_config(q->srv)->max_body;
    if (!r->body) return true; /* a body where none is expected is ignored */
    if (n > max - q->n) {
        cut_off(q, 413, "body_too_large", "the request body is larger than max_body");
        return false;
    }
    if (q->n + n + 1 > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->n + n + 1) cap *= 2;
        if (cap > max + 1) cap = max + 1;
        char *b = realloc(q->body, cap);
        if (!b) {
            cut_off(q, 503, "out_of_memory", "cannot hold the request body now");
            return false;
        }
        q->body = b;
        q->cap = cap;
    }
    memcpy(q->body + q->n, data, n);
    q->n += n;
    q->body[q->n] = '\0';
    return true;
}

/* A request's state, made when its request line has been read (uri: the raw target,
 * for the log until the access handler sees the decoded path). NULL: out of memory. */
static rx_request *request_new(rx_http *h, struct MHD_Connection *conn, const char *uri)
{
    rx_request *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->srv = h->srv;
    q->http = h;
    q->conn = conn;
    q->t0 = rx_now_ms();
    q->route = -1;
    uint8_t b[12];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) memset(b, 0, sizeof b);
    rx_hex(b, sizeof b, q->id);
    copy_printable(q->method, sizeof q->method, "-");
    copy_printable(q->path, sizeof q->path, uri ? uri : "");
    size_t n = uri ? strcspn(uri, "?") : 0;
    if (n <= RAW_PATH_MAX) {
        memcpy(q->raw, uri, n);
        q->raw[n] = '\0';
    }
    return q;
}

/* MHD_OPTION_URI_LOG_CALLBACK: the return value becomes the request's *con_cls. */
static void *uri_logged(void *cls, const char *uri, struct MHD_Connection *conn)
{
    rx_http *h = cls;
    rx_admit_request_line(h->admit, conn);
    return request_new(h, conn, uri);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    rx_http *h = cls;
    rx_request *q = *con_cls;
    if (!q) {
        q = request_new(h, conn, url);
        if (!q) return MHD_NO;
        *con_cls = q;
    }
    if (!q->begun) {
        q->begun = true;
        copy_printable(q->method, sizeof q->method, method);
        copy_printable(q->path, sizeof q->path, url);
        rx_admit_headers_done(h->admit, conn);
        request_id(q);
        begin(q, url, method, version);
        return MHD_YES;
    }
    if (q->cut) return MHD_NO;
    if (*upload_data_size) {
        bool go_on = upload(q, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return go_on ? MHD_YES : MHD_NO;
    }
    if (q->parked) { /* resumed: the wait ended (job done, assigned, deadline, shutdown) */
        q->parked = false;
        q->finish(q->srv, q);
        if (!q->replied) rx_reply_error(q, 500, "internal", "the handler gave no reply");
        return q->replied ? MHD_YES : MHD_NO;
    }
    if (q->replied) return MHD_YES;
    if (q->route < 0) return MHD_NO; /* begin() could not queue its reply: drop */
    int n;
    const rx_route *routes = rx_routes(&n);
    routes[q->route].fn(q->srv, q);
    if (q->parked) return MHD_YES;
    if (!q->replied) rx_reply_error(q, 500, "internal", "the handler gave no reply");
    return q->replied ? MHD_YES : MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    rx_http *h = cls;
    rx_request *q = *con_cls;
    rx_admit_request_done(h->admit, conn);
    if (!q) return;
    *con_cls = NULL;
    double ms = rx_now_ms() - q->t0;
    int status = q->replied ? q->status : 0;
    if (!q->replied) { /* libmicrohttpd answered on its own (431, 400, ...) or nobody did */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        if (ci) status = (int)ci->http_status;
    }
    rx_metrics_request(rx_server_metrics(h->srv), q->route >= 0 ? q->route : h->unmatched,
                       status, ms / 1e3);
    rx_log_request(rx_server_log(h->srv), status >= 500 || !status ? RX_LOG_WARN : RX_LOG_INFO,
                   q->id, q->method, q->path, status, (double)(int64_t)(ms * 1000) / 1000,
                   toe != MHD_REQUEST_TERMINATED_COMPLETED_OK ? (int)toe : 0);
    rx_req_wait_end(q, NULL); /* a parked request that never resumed: drop its wait */
    if (q->park_end)
        q->park_end(h->srv, q, q->park_data,
                    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && q->replied);
    if (q->counted) atomic_fetch_sub(&h->parked, 1);
    free(q->body);
    free(q);
}

static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    rx_http *h = cls;
    rx_admit_notify(h->admit, conn, socket_context, toe == MHD_CONNECTION_NOTIFY_STARTED);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    rx_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    char clean[512];
    copy_printable(clean, sizeof clean, msg);
    rx_log_event(rx_server_log(h->srv), RX_LOG_WARN, "mhd", clean);
}

rx_http *rx_http_start(rx_server *s, const rx_config *c, int *port, char *err, size_t errlen)
{
    rx_http *h = calloc(1, sizeof *h);
    RX_ASSERT(h);
    h->srv = s;
    int n;
    const rx_route *routes = rx_routes(&n);
    rx_metrics *m = rx_server_metrics(s);
    for (int i = 0; i < n; i++) rx_metrics_add_route(m, routes[i].pattern);
    h->unmatched = rx_metrics_add_route(m, "unmatched");

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    const char *host = strcmp(c->host, "localhost") ? c->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "bad listen address %s", c->host);
        free(h);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    bool driven = c->http_threads < 0; /* the embedding program runs it (rx_http_run) */
    if (driven) flags = MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                        MHD_USE_NO_LISTEN_SOCKET;
    unsigned threads = driven ? 1 : (unsigned)c->http_threads;
    if (!threads) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (unsigned)cores : 1;
    }
    if (threads > (unsigned)c->max_connections) threads = (unsigned)c->max_connections;
    h->admit = rx_admit_new(c, rx_server_log(s));
    /* the logger first: options before it would make libmicrohttpd warn on stderr */
    h->d = MHD_start_daemon(
        flags, (uint16_t)c->port, NULL, NULL, access_handler, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
        MHD_OPTION_THREAD_POOL_SIZE, driven ? 0 : threads,
        MHD_OPTION_THREAD_STACK_SIZE, RX_SERVER_THREAD_STACK,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h,
        MHD_OPTION_CONNECTION_LIMIT, rx_admit_mhd_limit(c, threads),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->request_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, header_pool(c->max_header_bytes),
        MHD_OPTION_URI_LOG_CALLBACK, uri_logged, h,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on %s:%d (address in use or not permitted)",
                 c->host, c->port);
        rx_admit_free(h->admit);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : c->port;
    return h;
}

void rx_http_run(rx_http *h) { MHD_run(h->d); }

int rx_http_add_socket(rx_http *h, int fd)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return MHD_add_connection(h->d, fd, (struct sockaddr *)&sa, sizeof sa) == MHD_YES ? 0 : -1;
}

void rx_http_quiesce(rx_http *h)
{
    if (!h || !h->d) return;
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

void rx_http_drain(rx_http *h, int timeout_ms)
{
    if (!h) return;
    for (int waited = 0; atomic_load(&h->parked) > 0 && waited < timeout_ms; waited += 5)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
}

void rx_http_stop(rx_http *h)
{
    if (!h) return;
    if (h->d) MHD_stop_daemon(h->d);
    rx_admit_free(h->admit);
    free(h);
}
