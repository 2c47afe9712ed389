/*
 * server.c — rx_server: wiring the parts together, start and graceful shutdown
 * (server.h).
 *
 * Start order: refuse a non-loopback address without tokens, logger, metrics, auth,
 * store (recovery runs inside rx_store_open; its lock makes this process the data
 * directory's only user), the benchmark scheduler (<data>/jobs.db: queued jobs kept,
 * running ones re-queued), compile workers, HTTP daemon; then the "listening" line
 * with the actual address (port 0 resolved) so scripts can read it.
 *
 * Shutdown order (each step needs the ones after it still alive):
 *   1. quiesce the daemon: the listening socket closes, no new connections;
 *   2. stop the compile service: queued jobs fail with 503 shutting_down (their
 *      waiters answer at once), running compiles finish and are stored;
 *   3. stop the scheduler: parked agent polls answer 204, new ones answer at once,
 *      submissions get 503; benchmark jobs stay in jobs.db as they are;
 *   4. drain: wait (at most DRAIN_MS) until the requests parked on the compile service
 *      or the scheduler have sent the replies steps 2 and 3 gave them;
 *   5. stop the daemon: in-flight requests finish, connections close, threads join;
 *   6. close the scheduler's database and the store (checkpoints), log "stopped".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "relax/support.h"
#include "server_int.h"

#define DRAIN_MS 2000 /* longest wait for parked requests' replies at shutdown */

struct rx_server {
    rx_config cfg;         /* our copy (tokens duplicated) */
    rx_log log;
    rx_metrics metrics;
    rx_auth auth;
    rx_store *store;
    rx_sched *sched;       /* benchmark jobs and agents */
    rx_compiler *compiler;
    rx_http *http;
    int port;              /* bound port */
    bool down;             /* shutdown done */
};

rx_store *rx_server_store(rx_server *s) { return s->store; }
rx_compiler *rx_server_compiler(rx_server *s) { return s->compiler; }
rx_sched *rx_server_sched(rx_server *s) { return s->sched; }
rx_metrics *rx_server_metrics(rx_server *s) { return &s->metrics; }
rx_log *rx_server_log(rx_server *s) { return &s->log; }
const rx_config *rx_server_config(const rx_server *s) { return &s->cfg; }
const rx_auth *rx_server_auth(const rx_server *s) { return &s->auth; }
int rx_server_port(const rx_server *s) { return s->port; }
rx_http *rx_server_http(rx_server *s) { return s->http; }

static char *dup_or_null(const char *p)
{
    if (!p) return NULL;
    char *d = strdup(p);
    RX_ASSERT(d);
    return d;
}

static void copy_config(rx_config *dst, const rx_config *src)
{
    *dst = *src;
    dst->data_dir = dup_or_null(src->data_dir);
    dst->config_path = dup_or_null(src->config_path);
    for (int i = 0; i < src->ntokens; i++) dst->tokens[i].token = dup_or_null(src->tokens[i].token);
}

rx_server *rx_server_start(const rx_config *c, char *err, size_t errlen)
{
    if (c->ntokens == 0 && !rx_config_is_loopback(c->host)) {
        snprintf(err, errlen,
                 "refusing to listen on %s without authentication: configure tokens in the "
                 "config file, or listen on 127.0.0.1",
                 c->host);
        return NULL;
    }
    rx_server *s = calloc(1, sizeof *s);
    RX_ASSERT(s);
    copy_config(&s->cfg, c);
    rx_log_init(&s->log, 2);
    rx_metrics_init(&s->metrics);
    rx_auth_init(&s->auth, &s->cfg);
    rx_store_opts so = {s->cfg.data_dir, s->cfg.cache_max_bytes};
    char serr[256];
    s->store = rx_store_open(&so, serr, sizeof serr);
    if (!s->store) {
        snprintf(err, errlen, "cannot open the store in %s: %s", s->cfg.data_dir, serr);
        s->down = true;
        rx_server_free(s);
        return NULL;
    }
    s->sched = rx_bench_open(&s->cfg, &s->log, err, errlen);
    if (s->sched)
        s->compiler = rx_compiler_new(&s->cfg, s->store, &s->log, &s->metrics, err, errlen);
    if (s->compiler) s->http = rx_http_start(s, &s->cfg, &s->port, err, errlen);
    if (!s->sched || !s->compiler || !s->http) {
        rx_server_shutdown(s);
        rx_server_free(s);
        return NULL;
    }
    struct stat st;
    if (s->cfg.ntokens > 0 && s->cfg.config_path && !stat(s->cfg.config_path, &st) &&
        (st.st_mode & (S_IRWXG | S_IRWXO)))
        rx_log_event(&s->log, RX_LOG_WARN, "config_permissions",
                     "the config file holds tokens but is readable by group or others "
                     "(chmod 600 it)");
    char addr[96];
    snprintf(addr, sizeof addr, "%s:%d",
             strcmp(s->cfg.host, "localhost") ? s->cfg.host : "127.0.0.1", s->port);
    rx_log_json(&s->log, RX_LOG_INFO,
                json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:b}", "event", "listening", "address",
                          addr, "version", RX_VERSION, "data", s->cfg.data_dir, "workers",
                          s->cfg.workers, "queue", s->cfg.queue, "auth", s->cfg.ntokens > 0));
    return s;
}

void rx_server_shutdown(rx_server *s)
{
    if (!s || s->down) return;
    s->down = true;
    rx_log_event(&s->log, RX_LOG_INFO, "shutdown", "stopping: no new connections");
    rx_http_quiesce(s->http);
    if (s->compiler) rx_compiler_stop(s->compiler);
    rx_sched_stop(s->sched);
    rx_http_drain(s->http, DRAIN_MS);
    rx_http_stop(s->http);
    s->http = NULL;
    rx_sched_close(s->sched);
    s->sched = NULL;
    rx_store_close(s->store);
    s->store = NULL;
    rx_log_event(&s->log, RX_LOG_INFO, "stopped", "clean shutdown");
}

void rx_server_free(rx_server *s)
{
    if (!s) return;
    rx_server_shutdown(s);
    rx_compiler_free(s->compiler);
    rx_sched_close(s->sched);
    rx_store_close(s->store);
    rx_auth_free(&s->auth);
    rx_metrics_destroy(&s->metrics);
    rx_log_destroy(&s->log);
    rx_config_free(&s->cfg);
    free(s);
}
