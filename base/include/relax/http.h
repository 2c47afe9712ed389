/*
 * http.h — the one HTTP client of the project (base/http.c, library rxhttp): a small
 * layer over libcurl that the agent (relax-agent) and the command-line client (relax)
 * share. It knows nothing about relaxd's JSON: it sends METHOD base+path with an
 * optional body and collects a bounded answer. What to do with the answer (retries,
 * error wording, JSON) stays with the caller.
 *
 *   * one connection object per thread: a CURL easy handle kept across requests (the TCP
 *     connection is reused) driven by a private multi handle, so the wait can also watch
 *     a "wake" file descriptor: an interruptible request ends within a millisecond once
 *     that fd turns readable (the agent's stop pipe);
 *   * bodies are bounded: a buffered body by the request's body_cap, a 2xx body given to
 *     a sink by sink_cap (checked against Content-Length up front and while streaming);
 *     only a 2xx body reaches the sink, so an error body never lands in an artifact file;
 *   * the answer's ETag (quotes removed) and Retry-After (delta-seconds; an HTTP-date
 *     counts as 1 s) are kept; redirects are not followed; "Expect:" is cleared.
 *
 * libcurl's global state (curl_global_init) belongs to the program's main().
 * Kept apart from rxbase (its own library) so the compiler does not link libcurl.
 */
#ifndef RELAX_HTTP_H
#define RELAX_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* A server and the handles that talk to it; one thread at a time. */
typedef struct rx_http {
    char base[1024];       /* server URL without a trailing '/' */
    char auth[600];        /* "Authorization: Bearer <token>" or "" */
    char user_agent[64];   /* "relax/1.2.3" */
    int wake_fd;           /* readable once the caller is stopping (-1: none) */
    void *easy;            /* CURL * (kept: connection reuse) */
    void *multi;           /* CURLM * driving it */
} rx_http;

/* Receives a 2xx body's bytes as they arrive. Returns 0 to go on, nonzero to abort. */
typedef int (*rx_http_sink)(void *ud, const void *data, size_t n);

/* One request. Zero-initialize and set what applies. */
typedef struct rx_http_req {
    const char *method;       /* "GET", "POST", "HEAD" (no body read), ... */
    const char *path;         /* appended to the base URL */
    const void *body;         /* request body or NULL */
    size_t body_len;          /* its bytes */
    const char *content_type; /* the whole header line, e.g. "Content-Type: application/json" */
    long timeout_ms;          /* whole transfer; 0: none */
    long connect_timeout_ms;  /* 0: 10 s (or timeout_ms when shorter) */
    int interruptible;        /* stop (RX_HTTP_STOPPED) when wake_fd turns readable */
    size_t body_cap;          /* most bytes buffered into resp->body */
    rx_http_sink sink;        /* 2xx bodies go here when set */
    void *sink_ud;            /* its argument */
    int64_t sink_cap;         /* most bytes the sink may receive */
    void (*tick)(void *ud);   /* called while waiting (progress), may be NULL */
    void *tick_ud;            /* its argument */
} rx_http_req;

/* The outcome of one exchange. Owns body. */
typedef struct rx_http_resp {
    long status;         /* HTTP status, 0 when none arrived */
    char *body;          /* NUL-terminated heap copy of a buffered body, or NULL */
    size_t len;          /* bytes in body */
    char etag[160];      /* ETag value, quotes removed; "" if absent */
    double retry_after;  /* Retry-After seconds; -1: none */
} rx_http_resp;

/* Results of rx_http_request. */
typedef enum rx_http_rc {
    RX_HTTP_OK = 0,          /* a response arrived (any status) */
    RX_HTTP_FAILED = -1,     /* none: see rx_http_err.kind */
    RX_HTTP_STOPPED = -2     /* interrupted: wake_fd turned readable */
} rx_http_rc;

/* Why a request failed, for the caller's own wording. */
typedef struct rx_http_err {
    enum {
        RX_HTTP_E_NONE,
        RX_HTTP_E_CONNECT,   /* could not connect or resolve */
        RX_HTTP_E_TIMEOUT,   /* timeout_ms passed */
        RX_HTTP_E_TOO_LARGE, /* a body cap was hit (the cap in .cap) */
        RX_HTTP_E_SINK,      /* the sink aborted */
        RX_HTTP_E_OTHER      /* anything else (out of memory, URL too long, ...) */
    } kind;
    int64_t cap;       /* the cap hit (E_TOO_LARGE) */
    char msg[256];     /* libcurl's message, or ours */
} rx_http_err;

/* Sets up c for server (http:// or https://, trailing '/' dropped), token (may be NULL
 * or "") and the User-Agent. Returns 0, or -1 with a one-line reason in err (control
 * characters of the URL replaced by '?'). */
int rx_http_init(rx_http *c, const char *server, const char *token, const char *user_agent,
                 int wake_fd, char *err, size_t errlen);

/* Releases the handles (c may be half set up or already released). */
void rx_http_fini(rx_http *c);

/* Performs q. r is reset on entry; free it with rx_http_resp_free (also after a
 * failure). Returns RX_HTTP_OK, or FAILED/STOPPED with e filled. */
rx_http_rc rx_http_request(rx_http *c, const rx_http_req *q, rx_http_resp *r, rx_http_err *e);

/* Frees r's body (r stays valid and empty). */
void rx_http_resp_free(rx_http_resp *r);

#endif
