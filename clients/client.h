/*
 * client.h — the internals of `relax`, the command-line client of relaxd, shared by its
 * few files. Nothing here is a library API: `relax` is one executable that links libcurl,
 * jansson and libcrypto, and neither the compiler nor the runtime.
 *
 *   http.c      rxc_request: one HTTP exchange with relaxd (bounded bodies, bearer token,
 *               a deadline, bounded retries of 503 + Retry-After), error reporting
 *   progress.c  rxc_progress_*: an elapsed-time line on stderr, only when it is a terminal
 *   download.c  rxc_download: an artifact streamed to OUT atomically, SHA-256 verified
 *   metrics.c   rxc_metrics_parse: the few numbers `relax status` shows, from /metrics
 *   bench.c     the remote-benchmark commands: bench (submit, wait, print), agents, jobs,
 *               cancel
 *   relax.c     main: the command line, compile, fetch, meta, status
 *
 * Error convention: functions returning int give 0 on success and 1 on a failure whose
 * one-line "error: ..." message (plus any located detail lines) is already on stderr, so
 * callers just propagate 1 to the exit status. Bad usage (exit 2) is decided in relax.c.
 */
#ifndef RELAX_CLIENT_H
#define RELAX_CLIENT_H

#include <jansson.h>

#include "relax/base.h"
#include "relax/http.h"
#include <stddef.h>
#include <stdint.h>

#define RXC_JSON_CAP ((size_t)16 << 20)     /* largest JSON (or error) body accepted */
#define RXC_ARTIFACT_CAP ((int64_t)1 << 30) /* largest artifact accepted: 1 GiB */
#define RXC_MAX_RETRIES 5                   /* 503 + Retry-After retries per request */
#define RXC_RETRY_CAP_S 60.0                /* longest single Retry-After honored */

/* The elapsed-time line. Drawn only when enabled (stderr is a terminal). */
typedef struct rxc_progress {
    int enabled;        /* stderr is a tty */
    int drawn;          /* a line is on screen and must be cleared */
    const char *label;  /* "compiling", "fetching", ... (static string) */
    const char *state;  /* optional detail ("queued", "running", "retrying"), static */
    double t0;          /* start, seconds on the monotonic clock */
    double last;        /* time of the last redraw */
} rxc_progress;

/* One server and how to talk to it. */
typedef struct rxc_conn {
    rx_http http;           /* the server URL (http.base), token and libcurl handles */
    int curl_ready;         /* curl_global_init succeeded */
    double deadline;        /* monotonic time after which waiting stops; 0: none */
    double timeout_s;       /* the --timeout value, for messages (0: none) */
    rxc_progress progress;  /* the line drawn while waiting */
} rxc_conn;

/* The outcome of one exchange (status, body, len, etag). Owns body. */
typedef rx_http_resp rxc_resp;

/* Receives a 2xx body's bytes as they arrive instead of the buffer. Returns 0 to go on,
 * nonzero to abort the transfer (having printed its error). */
typedef rx_http_sink rxc_sink;

/* ---- http.c ---- */

/* Initializes libcurl (once per process) and c from a server URL (trailing '/' dropped),
 * a token (may be NULL) and a timeout in seconds (0: none). Returns 0, or 1 with an
 * error printed (URL too long or not http(s)://). */
int rxc_conn_init(rxc_conn *c, const char *server, const char *token, double timeout_s);

/* Releases libcurl's global state. */
void rxc_conn_fini(rxc_conn *c);

/* Performs METHOD base+path, with json_body (may be NULL) as an application/json body.
 * A 2xx body goes to sink when one is given (its size capped by sink_cap), else into
 * r->body (capped by RXC_JSON_CAP); non-2xx bodies always go into r->body. A 503 with
 * Retry-After is retried up to RXC_MAX_RETRIES times, sleeping as told (capped by
 * RXC_RETRY_CAP_S and the deadline). Returns 0 when a response arrived (any status: the
 * caller judges r->status), 1 when none did (cannot reach, timeout, body too large,
 * sink abort; the message is printed). r is reset on entry; free it with rxc_resp_free. */
int rxc_request(rxc_conn *c, const char *method, const char *path, const char *json_body,
                rxc_sink sink, void *ud, int64_t sink_cap, rxc_resp *r);

/* PUT path with n raw bytes as an application/octet-stream body; as rxc_request. */
int rxc_put_bytes(rxc_conn *c, const char *path, const void *bytes, size_t n, rxc_resp *r);

/* Frees r's body (r stays valid and empty). */
void rxc_resp_free(rxc_resp *r);

/* Parses r->body as a JSON object. Returns a new reference, or NULL after printing
 * "error: bad response from relaxd (WHAT): ..." */
json_t *rxc_resp_json(const rxc_resp *r, const char *what);

/* GETs path and parses the 200 reply as a JSON object (new reference); NULL after
 * printing the error (what names the reply in a parse error). */
json_t *rxc_get_json(rxc_conn *c, const char *path, const char *what);

/* Prints the error of a non-2xx response: "error: <message> (HTTP <status> <code>)" then
 * one "  path: message" line per located error. Bodies that are not relaxd's error JSON
 * print their first line. Always returns 1 (so callers can `return rxc_http_error(r)`). */
int rxc_http_error(const rxc_resp *r);

/* Prints an error object {"code","message","errors"} (as in a failed job), `status` > 0
 * adding "HTTP <status> " before the code. Returns 1. */
int rxc_print_error_obj(const json_t *err, long status);

/* Sleeps s seconds (fractions allowed), redrawing progress meanwhile. */
void rxc_sleep(rxc_conn *c, double s);

/* ---- progress.c ---- */

/* Starts the line with a label; enabled when stderr is a terminal. */
void rxc_progress_start(rxc_progress *p, const char *label);

/* Redraws "label… 3.2 s (state)" when at least 100 ms passed since the last redraw. */
void rxc_progress_tick(rxc_progress *p);

/* Clears the line (if drawn). Call before printing anything to stderr. */
void rxc_progress_clear(rxc_progress *p);

/* ---- download.c ---- */

/* Fetches /v1/artifacts/<id> into out: streamed into a temp file beside out, hashed
 * while written, fsync'ed, and renamed over out only when its SHA-256 equals id (else
 * the temp file is removed and an error printed). Prints nothing on success; *size gets
 * the byte count. Returns 0 or 1. */
int rxc_download(rxc_conn *c, const char *id, const char *out, int64_t *size);

/* True when s is 64 lowercase hex digits (an artifact id). */
int rxc_valid_id(const char *s);

#define RXC_MIN_PREFIX 4 /* hex digits of the shortest id prefix the CLI resolves */

/* True when s is RXC_MIN_PREFIX..63 lowercase hex digits: a short artifact id. */
int rxc_id_prefix(const char *s);

/* The full id (into id[65]) of what: a full id as is, or an unambiguous prefix resolved
 * with GET /v1/artifacts?prefix=. 0, or 1 after printing the error: no artifact starts
 * with it, or several do (listed). */
int rxc_resolve_id(rxc_conn *c, const char *what, char *id);

/* ---- metrics.c ---- */

/* The numbers `relax status` shows; -1 when /metrics did not carry them. */
typedef struct rxc_metrics {
    double cache_entries;   /* artifacts held */
    double cache_bytes;     /* their total size */
    double cache_hits;      /* lookups that hit */
    double cache_misses;    /* lookups that missed */
    double queue_depth;     /* compile jobs waiting */
} rxc_metrics;

/* Parses Prometheus text exposition (text is not modified). Samples of one metric with
 * several label sets are summed; unknown metrics are ignored. */
void rxc_metrics_parse(const char *text, rxc_metrics *m);

/* ---- relax.c ---- */

/* Compiles the module file on the server (posting it as `relax compile` does and waiting
 * for a 202 job). Returns 0 with *result (new reference, the server's compile result with
 * a valid "artifact"), or 1 after printing the error. */
/* An ONNX model file as a JSON string of its base64 (at most 1 GiB; bench.c), or NULL
 * (printed). */
json_t *rxc_onnx_b64(const char *path);

int rxc_compile_file(rxc_conn *c, const char *file, const char *target, int opt_level, int async,
                     json_t **result);

/* ---- bench.c ---- */

#define RXC_MAX_LIST 64 /* repeated options (--shape, --in, --expect, --label) kept */

/* What `relax bench` was asked for. Strings are borrowed from argv. */
typedef struct rxc_bench_opts {
    const char *what;                     /* ARTIFACT id, ARTIFACT.rxa or MODULE.json */
    const char *target;                   /* --target (default cpu) */
    int target_given;                     /* --target was given (else the artifact's) */
    const char *fn;                       /* --fn, NULL: the server's default (main) */
    int opt_level;                        /* --opt-level for a module; -1: default */
    const char *shapes[RXC_MAX_LIST];     /* --shape VAR=N */
    int nshapes;
    const char *labels[RXC_MAX_LIST];     /* --label L */
    int nlabels;
    const char *ins[RXC_MAX_LIST];        /* --in NAME=FILE.npy */
    int nins;
    const char *expect[RXC_MAX_LIST];     /* --expect FILE.npy */
    int nexpect;
    int repeat, number;                   /* 0: the server's default */
    int priority, has_priority;           /* --priority */
    int timeout_s, queue_timeout_s;       /* the job's limits; 0: the server's default */
    double rtol, atol;                    /* tolerance; < 0: the server's default */
    int json;                             /* --json: print the job object */
    int no_wait;                          /* --no-wait: print the job id and return */
} rxc_bench_opts;

/* relax bench: resolves the artifact (compiling a module first), submits the job, waits
 * with progress lines on stderr, prints the result. Returns 0 when the job is done, 1
 * otherwise (failed, cancelled, or an error; printed). */
int rxc_cmd_bench(rxc_conn *c, const rxc_bench_opts *o);

/* relax agents: the registered agents as a table (or the server's JSON). */
int rxc_cmd_agents(rxc_conn *c, int json);

/* relax jobs: benchmark jobs, newest first (status may be NULL; limit 0: default). */
int rxc_cmd_jobs(rxc_conn *c, const char *status, int limit, int json);

/* relax jobs cancel ID / relax cancel ID. */
int rxc_cmd_cancel(rxc_conn *c, const char *id, int json);

#endif
