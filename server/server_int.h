/*
 * server_int.h — what relaxd's files share inside rxserver (not installed).
 *
 *   log.c      structured logs: one JSON object per line on stderr (rx_log_*)
 *   metrics.c  counters and histograms, rendered as Prometheus text (rx_metrics_*)
 *   auth.c     bearer tokens, roles, constant-time comparison (rx_auth_*)
 *   compile.c  the compile service: key, lookup, single-flight, queue, workers, jobs
 *   bench.c    the benchmark and agent endpoints over the scheduler (rpc/, sched.h)
 *   http.c     the libmicrohttpd daemon: request state, bodies, limits, parking, dispatch
 *   routes.c   the routing table and the endpoint handlers
 *   config.c   defaults, file, environment, flags
 *   server.c   rx_server: wiring, start and graceful shutdown
 *
 * Ownership: rx_server owns one of each object; the objects hold pointers to the ones
 * they use (the compile service uses the store, the logger and the metrics). All of them
 * are thread-safe unless said otherwise.
 */
#ifndef RELAX_SERVER_INT_H
#define RELAX_SERVER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "relax/sched.h"
#include "relax/server.h"
#include "relax/store.h"
#include "relax/target.h"

/* Stack of every thread relaxd starts (HTTP pool, compile workers): modules are read and
 * compiled by recursive code whose depth the JSON nesting limit (512) bounds, so the
 * stack is set here rather than inherited from whatever `ulimit -s` the server started
 * under (glibc gives threads 2 MiB when it is unlimited, ASan frames are large). */
#define RX_SERVER_THREAD_STACK ((size_t)16 << 20)

/* ---- log.c ---- */

typedef enum rx_log_level { RX_LOG_DEBUG, RX_LOG_INFO, RX_LOG_WARN, RX_LOG_ERROR } rx_log_level;

typedef struct rx_log {
    pthread_mutex_t mu;    /* one line at a time */
    int fd;                /* where lines go (2: stderr) */
    rx_log_level min;      /* lines below this level are dropped */
} rx_log;

void rx_log_init(rx_log *l, int fd);
void rx_log_destroy(rx_log *l);

/* Adds "ts" and "level" to obj, writes it as one compact JSON line, and releases obj
 * (the caller's reference is consumed; NULL is ignored). */
void rx_log_json(rx_log *l, rx_log_level lv, json_t *obj);

/* The access line of one request, {"event": "request", "request_id", "method", "path",
 * "status", "latency_ms"} plus "terminated" when not 0, with the bytes rx_log_json
 * would write but built without jansson (the per-request path). Strings are escaped. */
void rx_log_request(rx_log *l, rx_log_level lv, const char *request_id, const char *method,
                    const char *path, int status, double latency_ms, int terminated);

/* A line {"event": event, "message": msg}; msg may be NULL. */
void rx_log_event(rx_log *l, rx_log_level lv, const char *event, const char *msg);

/* Milliseconds on the monotonic and the wall clock. */

/* ---- metrics.c ---- */

#define RX_METRICS_ROUTES 32   /* route slots (routing table size + "unmatched") */
#define RX_METRICS_STATUSES 20 /* status slots, see metrics.c */
#define RX_METRICS_BUCKETS 12  /* latency histogram buckets */

typedef struct rx_metrics {
    pthread_mutex_t mu;
    const char *route_names[RX_METRICS_ROUTES]; /* static strings, set once at start */
    int nroutes;
    uint64_t requests[RX_METRICS_ROUTES][RX_METRICS_STATUSES]; /* by route, status */
    uint64_t lat_buckets[RX_METRICS_BUCKETS]; /* cumulative at render, raw here */
    uint64_t lat_count;
    double lat_sum_s;
    uint64_t compiles_started, compiles_succeeded, compiles_failed;
    double compile_seconds;
    uint64_t singleflight_joins; /* requests that waited on another's compile */
    uint64_t queue_rejected;     /* 503s from a full queue */
    uint64_t cache_hits;         /* compile requests answered from the cache (compile.c
                                    step 2; the store's record, blob present) */
    uint64_t cache_misses;       /* compile requests the cache could not answer (one per
                                    request: the worker's re-check is not counted) */
} rx_metrics;

void rx_metrics_init(rx_metrics *m);
void rx_metrics_destroy(rx_metrics *m);
/* Registers route names (static strings) in order; index = route id. */
int rx_metrics_add_route(rx_metrics *m, const char *name);
void rx_metrics_request(rx_metrics *m, int route, int status, double latency_s);
void rx_metrics_compile(rx_metrics *m, int phase, double seconds); /* 0 start, 1 ok, 2 fail */
void rx_metrics_inc(rx_metrics *m, uint64_t *counter);

/* Gauges the renderer asks for at render time. */
typedef struct rx_metrics_gauges {
    rx_store_stats store;
    int queue_depth, queue_cap, workers_busy, workers;
    int jobs;
    rx_sched_stats sched;  /* agents, benchmark jobs, dispatch latency */
} rx_metrics_gauges;

/* Renders everything in the Prometheus text format (version 0.0.4) into a heap string. */
char *rx_metrics_render(rx_metrics *m, const rx_metrics_gauges *g);

/* ---- auth.c ---- */

typedef struct rx_auth {
    uint8_t (*digests)[32]; /* SHA-256 of each configured token (heap) */
    rx_role *roles;
    int n;
} rx_auth;

void rx_auth_init(rx_auth *a, const rx_config *c);
void rx_auth_free(rx_auth *a);

/* The role of the token in an Authorization header value ("Bearer T"), comparing
 * against every configured token in constant time. RX_ROLE_NONE when the header is
 * missing, malformed or the token unknown. */
rx_role rx_auth_check(const rx_auth *a, const char *authorization);

/* ---- compile.c ---- */

typedef struct rx_compiler rx_compiler;
typedef struct rx_job rx_job;

/* The build options of a compile request beyond opt_level (compile_opts.c), held by
 * value: lib, lib_disable, disable_passes, as relaxc's flags. Zeroed: relaxc's defaults. */
#define RX_COMPILE_NAMES 24     /* names in one list at most */
#define RX_COMPILE_NAME_MAX 32  /* longest pass or pattern name + NUL */

typedef struct rx_compile_opts {
    int lib_mode;          /* rx_lib_mode: auto (0), none, all */
    int nlib_disable, ndisable;
    char lib_disable[RX_COMPILE_NAMES][RX_COMPILE_NAME_MAX]; /* in the order given */
    char disable[RX_COMPILE_NAMES][RX_COMPILE_NAME_MAX];
    /* target options go here (see compile_opts.c) */
} rx_compile_opts;

/* Pointer arrays rx_compile_opts_apply hands to rx_build_opts (live as long as it). */
typedef struct rx_compile_names {
    const char *lib_disable[RX_COMPILE_NAMES + 1];
    const char *disable[RX_COMPILE_NAMES + 1];
} rx_compile_names;

struct rx_build_opts;

/* Reads the request's "options" object into *opt_level and *o; NULL, or a message for
 * a 400 bad_request (unknown option, wrong type, unknown pass or pattern name: the
 * message lists the valid ones), possibly written into msg. */
const char *rx_compile_opts_parse(const json_t *options, int *opt_level, rx_compile_opts *o,
                                  char *msg, size_t cap);
/* Sets bo's lib and disable from o, pointing into hold. */
void rx_compile_opts_apply(const rx_compile_opts *o, struct rx_build_opts *bo,
                           rx_compile_names *hold);

typedef struct rx_compile_req {
    const char *module;    /* relax-json text, or NULL when module_json is set */
    size_t module_n;
    const json_t *module_json; /* the module already parsed (borrowed), or NULL: read
                                  without a second parse; serialized only on a miss */
    const char *target;    /* normalized (rx_target_check): "cpu", "opencl,tile=8" */
    int opt_level;         /* 0..3 */
    rx_compile_opts opts;  /* lib, lib_disable, disable_passes (part of the key) */
    bool async;
} rx_compile_req;

typedef enum rx_job_state { RX_JOB_QUEUED, RX_JOB_RUNNING, RX_JOB_DONE, RX_JOB_FAILED } rx_job_state;

/* The answer to a compile request: an HTTP status and a JSON body (owned). */
typedef struct rx_compile_reply {
    int status;            /* 200, 202, 400, 500, 503; 0: pending (see rx_compiler_submit) */
    json_t *body;          /* new reference */
    int retry_after;       /* seconds for Retry-After when > 0 */
} rx_compile_reply;

/* A synchronous request waiting for its job without holding a thread: http.c suspends
 * the connection and the service calls wake exactly once — from the worker that
 * finishes the job, from the timer thread at the deadline, from rx_compiler_stop for a
 * cancelled job, or from rx_compiler_wait when the job had already finished. wake runs
 * under the service mutex and must not block (it resumes the connection). Owned by the
 * request; linked into the service while waiting. */
typedef struct rx_waiter {
    rx_job *job;           /* referenced while set */
    struct timespec deadline; /* CLOCK_MONOTONIC: 503 timeout past it */
    void (*wake)(void *ctx);
    void *ctx;
    bool linked;           /* in the service's waiter list (wake not called yet) */
    bool timed_out;        /* woken by the deadline */
    struct rx_waiter *prev, *next;
} rx_waiter;

rx_compiler *rx_compiler_new(const rx_config *c, rx_store *store, rx_log *log,
                             rx_metrics *metrics, char *err, size_t errlen);

/* Handles one compile request (key, lookup, single-flight, queue) without blocking.
 * Fills *out, except for a synchronous request whose job is queued or running: then
 * out->status is 0 and *pending holds a reference to the job, for rx_compiler_wait. */
/* POST /v1/compile's {"onnx": "<base64>"}: the ONNX model imported (onnx.h, weights
 * inline) and returned as a parsed relax-json module (owned), or NULL with *error set
 * to a 400 error object: "bad_request" for bad base64, "invalid_module" with the
 * importer's located errors. */
json_t *rx_compile_onnx_module(const char *b64, size_t n, json_t **error);

void rx_compiler_submit(rx_compiler *k, const rx_compile_req *r, const char *request_id,
                        rx_compile_reply *out, rx_job **pending);

/* Starts waiting on job (the reference from rx_compiler_submit passes to w); wake(ctx)
 * is called once when the job ends or the wait times out (2 x compile timeout + 5 s). */
void rx_compiler_wait(rx_compiler *k, rx_waiter *w, rx_job *job, void (*wake)(void *ctx),
                      void *ctx);

/* Ends a wait: unlinks w if it is still waiting, fills *out (may be NULL) with the job's
 * reply or 503 timeout, and drops the job reference. No-op when w holds no job. */
void rx_compiler_wait_end(rx_compiler *k, rx_waiter *w, rx_compile_reply *out);

/* The job's status JSON (new reference) or NULL for an unknown id. */
json_t *rx_compiler_job_json(rx_compiler *k, const char *id);

void rx_compiler_gauges(rx_compiler *k, rx_metrics_gauges *g);

/* Stops taking work, fails queued jobs with 503 shutting_down, waits for running ones,
 * joins the workers. Idempotent. */
void rx_compiler_stop(rx_compiler *k);
void rx_compiler_free(rx_compiler *k);

/* ---- admit.c: connection limits, the header deadline, raw replies ---- */

typedef struct rx_admit rx_admit;
struct MHD_Connection;

rx_admit *rx_admit_new(const rx_config *c, rx_log *log); /* starts the reaper thread */
void rx_admit_free(rx_admit *a);                          /* after the daemon stopped */
/* libmicrohttpd's own connection limit for `threads` event loops: never reached first. */
unsigned rx_admit_mhd_limit(const rx_config *c, unsigned threads);
/* From MHD_OPTION_NOTIFY_CONNECTION: a connection opened (counted or refused) or closed. */
void rx_admit_notify(rx_admit *a, struct MHD_Connection *c, void **socket_context, bool opened);
void rx_admit_request_line(rx_admit *a, struct MHD_Connection *c); /* URI callback */
void rx_admit_headers_done(rx_admit *a, struct MHD_Connection *c); /* first access call */
void rx_admit_request_done(rx_admit *a, struct MHD_Connection *c); /* completion */

/* Writes a whole JSON error reply ({"error": {"code", "message"}}, Connection: close,
 * X-Request-Id, Retry-After when > 0) straight onto a connection's socket, for replies
 * libmicrohttpd cannot send (a connection refused as it opens, a body cut off midway).
 * msg must need no JSON escaping. 0, or -1 when it did not fit the socket buffer. */
int rx_raw_reply(int fd, int status, const char *request_id, const char *code, const char *msg,
                 int retry_after);
/* Ends the stream after a raw reply (FIN after the reply), reading and dropping what the
 * client had already sent so the close is not a reset. libmicrohttpd then closes it. */
void rx_raw_close(int fd);

/* ---- http.c / routes.c ---- */

typedef struct rx_request rx_request;

typedef enum rx_perm {
    RX_PERM_PUBLIC,        /* anyone */
    RX_PERM_CLIENT,        /* client or admin */
    RX_PERM_AGENT,         /* agent or admin */
    RX_PERM_CLIENT_OR_AGENT, /* client, agent or admin */
    RX_PERM_ADMIN          /* admin */
} rx_perm;

#define RX_ROUTE_MAX_PARAMS 2
#define RX_ROUTE_PARAM_MAX 128

typedef void (*rx_handler)(rx_server *s, rx_request *q);

typedef struct rx_route {
    const char *method;    /* "GET" (also answers HEAD), "POST" */
    const char *pattern;   /* "/v1/artifacts/{id}": {name} matches one segment */
    rx_handler fn;
    rx_perm perm;
    bool body;             /* takes a request body */
} rx_route;

/* The routing table (routes.c) and its length. */
const rx_route *rx_routes(int *n);

/* Matches path against pattern; fills params (copies, NUL-terminated) on a match. */
bool rx_route_match(const char *pattern, const char *path,
                    char params[RX_ROUTE_MAX_PARAMS][RX_ROUTE_PARAM_MAX]);

/* Request accessors for handlers (http.c). */
const char *rx_req_method(const rx_request *q);
const char *rx_req_header(const rx_request *q, const char *name);
const char *rx_req_param(const rx_request *q, int i);
const char *rx_req_id(const rx_request *q);
const char *rx_req_body(const rx_request *q, size_t *n);
const char *rx_req_query(const rx_request *q, const char *name); /* ?name=value, or NULL */

/* Runs in the completion callback of a request that was parked with it: frees data,
 * drops a wait still registered. replied_ok: the reply was queued and sent completely. */
typedef void (*rx_park_end)(rx_server *s, rx_request *q, void *data, bool replied_ok);

/* Parks a request without holding its thread: the connection is suspended until
 * rx_req_resume; then finish runs on an event-loop thread and queues the reply (it
 * finds data with rx_req_park_data). Call it before registering the wait anywhere (the
 * wake may come at once, even before the handler returns). end (may be NULL) runs once
 * in the completion callback. */
void rx_req_park(rx_request *q, rx_handler finish, rx_park_end end, void *data);
void rx_req_resume(rx_request *q); /* any thread, once per park */
void *rx_req_park_data(const rx_request *q);
/* True when the client has closed its end (seen without blocking: a parked client may
 * have gone away while its connection was suspended and not watched). */
bool rx_req_peer_closed(const rx_request *q);

/* Parks a request on a compile job (rx_req_park + rx_compiler_wait): when the job ends
 * (or the wait times out) finish runs; it calls rx_req_wait_end and queues the reply.
 * The job reference (from rx_compiler_submit) passes to the request. */
void rx_req_wait(rx_request *q, rx_job *job, rx_handler finish);
void rx_req_wait_end(rx_request *q, rx_compile_reply *out);

/* Replies (http.c). Each queues exactly one response; json is consumed. Extra headers
 * are name/value pairs ending with NULL. */
void rx_reply_json(rx_request *q, int status, json_t *json);
void rx_reply_error(rx_request *q, int status, const char *code, const char *msg);
void rx_reply_error_json(rx_request *q, int status, json_t *error_obj, int retry_after);
void rx_reply_bytes(rx_request *q, int status, uint8_t *bytes, size_t n, const char *ctype,
                    const char *etag);
void rx_reply_text(rx_request *q, int status, char *text, const char *ctype);
void rx_reply_not_modified(rx_request *q, const char *etag);
void rx_reply_empty(rx_request *q, int status); /* no body (204) */

/* An {"error": {"code", "message"}} object (new reference). */
json_t *rx_error_json(const char *code, const char *msg);

/* What the handlers need from the server (server.c). */
rx_store *rx_server_store(rx_server *s);
rx_compiler *rx_server_compiler(rx_server *s);
rx_sched *rx_server_sched(rx_server *s);
rx_metrics *rx_server_metrics(rx_server *s);
rx_log *rx_server_log(rx_server *s);
const rx_config *rx_server_config(const rx_server *s);
const rx_auth *rx_server_auth(const rx_server *s);

/* ---- bench.c: the benchmark and agent endpoints (routes.c lists them) ---- */

void rx_h_agent_register(rx_server *s, rx_request *q);
void rx_h_agent_heartbeat(rx_server *s, rx_request *q);
void rx_h_agent_poll(rx_server *s, rx_request *q);
void rx_h_agent_result(rx_server *s, rx_request *q);
void rx_h_agents(rx_server *s, rx_request *q);
void rx_h_bench_submit(rx_server *s, rx_request *q);
void rx_h_bench_list(rx_server *s, rx_request *q);
void rx_h_bench_get(rx_server *s, rx_request *q);
void rx_h_bench_cancel(rx_server *s, rx_request *q);

/* ---- targets.c: GET /v1/targets, and the compile request's target ---- */

/* {"targets": [{"kind", "available", "reason" (when not), "options": [...]}, ...]}: every
 * target kind, its options with defaults and ranges, and whether this server compiles
 * for it (new reference). */
json_t *rx_targets_json(void);
void rx_h_targets(rx_server *s, rx_request *q);

/* Parses and normalizes a compile request's target text into *t. False with the error
 * code ("unsupported_target": an unknown kind or one this server cannot compile for;
 * "bad_request": bad options) and a message written into msg[0..cap). */
bool rx_target_check(const char *text, rx_target *t, const char **code, char *msg, size_t cap);

/* Opens the scheduler on <data>/jobs.db with the configuration's agent and bench
 * settings, logging through log. NULL with a message in err. */
rx_sched *rx_bench_open(const rx_config *c, rx_log *log, char *err, size_t errlen);

/* ---- upload.c: PUT /v1/artifacts/{id}, artifact metadata ---- */

struct rx_rxa;
void rx_h_artifact_put(rx_server *s, rx_request *q);
/* The METADATA section's text (heap, NUL-terminated) of an artifact, or NULL when it
 * has none (or, for rx_meta_text, does not parse). */
char *rx_meta_text(const uint8_t *bytes, size_t n);
char *rx_meta_text_of(const struct rx_rxa *a);

/* The daemon (http.c). */
typedef struct rx_http rx_http;
rx_http *rx_http_start(rx_server *s, const rx_config *c, int *port, char *err, size_t errlen);
void rx_http_quiesce(rx_http *h);
/* Waits up to timeout_ms until no request is parked or finishing a parked reply (the
 * services they waited on have been stopped, so they are all being answered). */
void rx_http_drain(rx_http *h, int timeout_ms);
void rx_http_stop(rx_http *h);
/* For the fuzz target (tests/fuzz/fuzz_http.c): with http_threads = -1 the daemon has
 * no threads and no listening socket; rx_http_add_socket serves a connected socket as
 * if accepted from 127.0.0.1 (takes fd; 0 or -1) and rx_http_run does the work that is
 * ready, without blocking. The whole request path, without threads or TCP. */
int rx_http_add_socket(rx_http *h, int fd);
void rx_http_run(rx_http *h);
rx_http *rx_server_http(rx_server *s);

#endif
