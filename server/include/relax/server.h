/*
 * server.h — relaxd, the compilation server, as a library (rxserver): configuration,
 * start and stop. relaxd.c is only argument handling, signals and this API, so tests
 * and other programs can embed the server.
 *
 * A server is one rx_server object that owns everything: the configuration, the
 * logger, the metrics, the store (cache/), the compile service (a bounded queue and
 * worker threads), the benchmark scheduler (rpc/, jobs in <data>/jobs.db) and the
 * libmicrohttpd daemon. There is no global mutable state.
 *
 * Configuration sources, highest priority first: command-line flags, RELAXD_*
 * environment variables, the JSON file named by --config (or RELAXD_CONFIG), built-in
 * defaults (rx_config_defaults). rx_config_load applies all of them in that order.
 *
 * Life cycle: rx_server_start (binds, logs {"event":"listening","address":...}),
 * then, typically after SIGTERM, rx_server_shutdown (stop accepting, finish running
 * compiles, cancel queued ones with 503, stop the daemon, close the store), then
 * rx_server_free.
 */
#ifndef RELAX_SERVER_H
#define RELAX_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rx_role {
    RX_ROLE_NONE = 0,      /* anonymous (allowed only with no tokens, on loopback) */
    RX_ROLE_CLIENT = 1,    /* compile, fetch artifacts, jobs, benchmarks, metrics */
    RX_ROLE_AGENT = 2,     /* agent endpoints, GET /v1/agents, artifact bytes */
    RX_ROLE_ADMIN = 4      /* everything */
} rx_role;

#define RX_CONFIG_MAX_TOKENS 64
#define RX_CONFIG_TOKEN_MAX 256  /* longest accepted token, bytes */

typedef struct rx_token {
    char *token;           /* the secret (heap) */
    rx_role role;
} rx_token;

typedef struct rx_config {
    char host[64];         /* IPv4 literal or "localhost" (listen) */
    int port;              /* 0: ephemeral */
    char *data_dir;        /* heap; store directory */
    int workers;           /* compile worker threads, 1..64 */
    int http_threads;      /* HTTP event-loop threads, 0..256 (0: one per online core;
                              -1, set only by code: none, the caller drives the daemon,
                              see rx_http_run in server_int.h) */
    int queue;             /* bounded compile queue length, 1..100000 */
    int compile_timeout_s; /* C compiler limit and sync wait bound, seconds */
    int64_t max_body;      /* request body limit, bytes */
    int64_t cache_max_bytes; /* store cap; 0: unlimited */
    int max_connections;   /* connections served at once (more: 503, admit.c) */
    int max_connections_per_ip; /* of them from one address; 0: no limit */
    int header_timeout_s;  /* a header block must be complete this long after the
                              connection opened or its previous request ended */
    int request_timeout_s; /* per-connection idle timeout, seconds */
    int64_t max_header_bytes; /* request header block limit (431 past it), bytes */
    int max_json_depth;    /* module JSON nesting limit */
    int64_t max_module_bytes; /* serialized module size limit */
    int64_t max_compile_memory; /* compiler arena budget per compile (rx_build_opts
                              max_memory), bytes; 0: none */
    int max_jobs;          /* finished async jobs remembered */
    int agent_heartbeat_ms; /* told to agents: heartbeat period while running a job */
    int agent_lease_ms;    /* an agent silent this long is offline (its job re-queued) */
    int agent_poll_ms;     /* longest agent long poll */
    int bench_timeout_s;   /* default run time limit of a benchmark job */
    int bench_queue_timeout_s; /* default queue time limit of a benchmark job */
    int bench_max_attempts; /* default runs of a benchmark job before agent_lost */
    int bench_queue;       /* queued + running benchmark jobs at most (503 past it) */
    int bench_history;     /* finished benchmark jobs kept in jobs.db */
    rx_token tokens[RX_CONFIG_MAX_TOKENS]; /* bearer tokens from the config file */
    int ntokens;
    char *config_path;     /* heap; the file read, or NULL */
} rx_config;

/* Fills c with the defaults (127.0.0.1:8080, ./var, 2 workers, queue 64, ...). */
void rx_config_defaults(rx_config *c);

/* Applies the config file, environment and argv (argv[0] is skipped) to c, which holds
 * the defaults. Returns 0 ok, 1 with a one-line message in err (bad file, bad value),
 * 2 for bad usage (unknown flag, missing value) with the message in err, 3 when
 * --help or --version was given: *info is then the static text to print on stdout. */
int rx_config_load(rx_config *c, int argc, char **argv, const char **info, char *err,
                   size_t errlen);

/* Frees what c owns (not c itself). */
void rx_config_free(rx_config *c);

/* True when host names a loopback address (127.0.0.0/8, "localhost"). */
bool rx_config_is_loopback(const char *host);

typedef struct rx_server rx_server;

/* Opens the store, starts the workers and the HTTP daemon. c is copied (tokens too).
 * Returns NULL with a one-line message in err. Logs the listening address. */
rx_server *rx_server_start(const rx_config *c, char *err, size_t errlen);

/* The bound port (useful with port 0). */
int rx_server_port(const rx_server *s);

/* Graceful stop: quiesce, cancel queued compiles (503), finish running ones, stop the
 * daemon, close the store, log {"event":"stopped"}. Idempotent. */
void rx_server_shutdown(rx_server *s);

/* Shuts down if needed and frees everything. NULL is a no-op. */
void rx_server_free(rx_server *s);

#endif
