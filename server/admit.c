/*
 * admit.c — which connections relaxd keeps: the connection limits, the header deadline,
 * and the raw replies for connections it will not serve (server_int.h).
 *
 * libmicrohttpd 0.9.75 has two behaviours that let a few clients starve everyone:
 *   - at its connection limit it stops polling the listening socket, so further
 *     connections sit in the kernel's accept queue, accepted by TCP and unanswered,
 *     until a slot frees (a burst of 100 over the limit waited a whole request timeout,
 *     and nothing was logged);
 *   - its only timeout is an idle timeout, reset by every byte, so 300 connections that
 *     send one header byte every few seconds hold every slot for as long as they like
 *     (slowloris).
 * So relaxd keeps its own books. libmicrohttpd's own limit is set well above
 * max_connections (rx_admit_mhd_limit), so it always accepts; every connection it
 * accepts is announced here (MHD_OPTION_NOTIFY_CONNECTION, on the event-loop thread
 * that owns it) and counted, in total and per peer address. One over max_connections,
 * or over max_connections_per_ip for its address, gets a 503 `too_many_connections`
 * written straight onto the socket (rx_raw_reply; Retry-After, Connection: close),
 * its socket is shut down so libmicrohttpd closes it at once, and a
 * `connection_refused` line is logged.
 *
 * The header deadline: a connection must deliver a complete header block within
 * header_timeout of opening, and of the end of its previous request (a keep-alive
 * connection idle that long is closed too). http.c tells this file when a request's
 * line arrives (rx_admit_request_line), when its headers are complete (rx_admit_headers_done:
 * the deadline stops; the body and the reply are under request_timeout, the idle
 * timeout) and when it ends (rx_admit_request_done: the deadline starts again). A reaper
 * thread looks every 100 ms and shuts down (shutdown(2), SHUT_RDWR) the socket of any
 * connection past its deadline; libmicrohttpd sees the end of the stream, closes the
 * connection and reports its request, if any, as terminated. It logs
 * `connection_timeout` with the phase: `headers` (a request line or part of the
 * headers came, not the rest: warn) or `idle` (nothing came: info).
 *
 * Safety of the reaper: it only touches a socket while holding the mutex, and a
 * connection leaves the books (NOTIFY_CONNECTION_CLOSED, under the mutex) before
 * libmicrohttpd closes its descriptor, so the reaper never shuts down a descriptor that
 * has been reused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <unistd.h>

#include <microhttpd.h>

#include "relax/support.h"
#include "server_int.h"

#define REAP_PERIOD_MS 100
#define MHD_LIMIT_HEADROOM 1024 /* refused connections alive in libmicrohttpd at once */

typedef struct conn {
    struct MHD_Connection *c;
    int fd;
    uint32_t ip;           /* IPv4, network order (0: unknown, not counted per address) */
    char peer[INET_ADDRSTRLEN];
    bool counted;          /* admitted: counts in total and per address */
    bool in_request;       /* a request line arrived and the request has not ended */
    double deadline;       /* monotonic ms by which the headers must be complete; 0: none */
    double since;          /* when the deadline's wait began */
    struct conn *prev, *next;
} conn;

/* Per-address counts: open addressing, linear probing, backward-shift deletion. Holds
 * at most max_connections addresses, so it is sized at twice that (a power of two). */
typedef struct ipslot {
    uint32_t ip;           /* 0: empty */
    int n;
} ipslot;

struct rx_admit {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t reaper;
    bool stop;
    rx_log *log;
    int max, per_ip;       /* max_connections, max_connections_per_ip (0: no limit) */
    double header_ms;
    int total;             /* admitted connections */
    conn *head;
    ipslot *ips;
    size_t nips;           /* slots, a power of two */
};

/* ---- raw replies ---- */

int rx_raw_reply(int fd, int status, const char *request_id, const char *code, const char *msg,
                 int retry_after)
{
    const char *reason = status == 413 ? "Content Too Large"
                         : status == 503 ? "Service Unavailable" : "Bad Request";
    char body[384], head[512], ra[32] = "";
    int nb = snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
                      code, msg);
    if (nb < 0 || (size_t)nb >= sizeof body) return -1;
    if (retry_after > 0) snprintf(ra, sizeof ra, "Retry-After: %d\r\n", retry_after);
    int nh = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "X-Request-Id: %s\r\n%sContent-Length: %d\r\n\r\n",
                      status, reason, request_id, ra, nb);
    if (nh < 0 || (size_t)nh >= sizeof head) return -1;
    /* both fit an empty socket buffer: nothing has been sent on this connection yet */
    if (send(fd, head, (size_t)nh, MSG_NOSIGNAL | MSG_DONTWAIT) != nh) return -1;
    if (send(fd, body, (size_t)nb, MSG_NOSIGNAL | MSG_DONTWAIT) != nb) return -1;
    return 0;
}

void rx_raw_close(int fd)
{
    shutdown(fd, SHUT_WR); /* the reply, then FIN */
    /* what the client already sent is read and dropped, so the close that follows is
     * not a reset that could destroy the reply before the client reads it */
    char sink[4096];
    for (int i = 0; i < 64 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {}
    shutdown(fd, SHUT_RD);
}

/* ---- per-address counts ---- */

static size_t ip_home(const rx_admit *a, uint32_t ip)
{
    return (size_t)((ip * 2654435761u) >> 7) & (a->nips - 1);
}

static ipslot *ip_find(rx_admit *a, uint32_t ip, bool add)
{
    for (size_t i = ip_home(a, ip);; i = (i + 1) & (a->nips - 1)) {
        if (a->ips[i].ip == ip) return &a->ips[i];
        if (!a->ips[i].ip) {
            if (!add) return NULL;
            a->ips[i].ip = ip;
            a->ips[i].n = 0;
            return &a->ips[i];
        }
    }
}

static void ip_drop(rx_admit *a, uint32_t ip)
{
    ipslot *s = ip_find(a, ip, false);
    if (!s || --s->n > 0) return;
    size_t i = (size_t)(s - a->ips), mask = a->nips - 1;
    a->ips[i].ip = 0;
    for (size_t j = (i + 1) & mask; a->ips[j].ip; j = (j + 1) & mask) {
        size_t h = ip_home(a, a->ips[j].ip);
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (stays) continue;
        a->ips[i] = a->ips[j];
        a->ips[j].ip = 0;
        i = j;
    }
}

/* ---- the books ---- */

static void log_refused(rx_admit *a, const conn *k, const char *reason, int limit)
{
    rx_log_json(a->log, RX_LOG_WARN,
                json_pack("{s:s, s:s, s:s, s:i, s:i}", "event", "connection_refused", "peer",
                          k->peer, "reason", reason, "limit", limit, "connections", a->total));
}

/* NOTIFY_CONNECTION STARTED: count the connection or refuse it. */
static void started(rx_admit *a, struct MHD_Connection *c, void **ctx)
{
    conn *k = calloc(1, sizeof *k);
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!k || !fi) {
        free(k);
        if (fi) shutdown(fi->connect_fd, SHUT_RDWR);
        return;
    }
    k->c = c;
    k->fd = fi->connect_fd;
    snprintf(k->peer, sizeof k->peer, "?");
    if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ai->client_addr;
        k->ip = sin->sin_addr.s_addr ? sin->sin_addr.s_addr : 1;
        inet_ntop(AF_INET, &sin->sin_addr, k->peer, sizeof k->peer);
    }
    *ctx = k;
    pthread_mutex_lock(&a->mu);
    const char *reason = NULL;
    int limit = 0;
    ipslot *s = k->ip ? ip_find(a, k->ip, false) : NULL;
    if (a->total >= a->max) {
        reason = "max_connections";
        limit = a->max;
    } else if (a->per_ip && s && s->n >= a->per_ip) {
        reason = "max_connections_per_ip";
        limit = a->per_ip;
    }
    if (reason) {
        log_refused(a, k, reason, limit);
        pthread_mutex_unlock(&a->mu);
        uint8_t b[12];
        char id[25];
        if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) memset(b, 0, sizeof b);
        rx_hex(b, sizeof b, id);
        rx_raw_reply(k->fd, 503, id, "too_many_connections",
                     "the server has too many connections open (from this address, or in all)",
                     1);
        rx_raw_close(k->fd); /* libmicrohttpd reads the end of the stream and closes it */
        return;
    }
    k->counted = true;
    a->total++;
    if (k->ip) ip_find(a, k->ip, true)->n++;
    k->since = rx_now_ms();
    k->deadline = k->since + a->header_ms;
    k->next = a->head;
    if (a->head) a->head->prev = k;
    a->head = k;
    pthread_mutex_unlock(&a->mu);
}

static void closed(rx_admit *a, void **ctx)
{
    conn *k = *ctx;
    if (!k) return;
    *ctx = NULL;
    pthread_mutex_lock(&a->mu);
    if (k->counted) {
        a->total--;
        if (k->ip) ip_drop(a, k->ip);
        if (k->prev) k->prev->next = k->next;
        else a->head = k->next;
        if (k->next) k->next->prev = k->prev;
    }
    pthread_mutex_unlock(&a->mu);
    free(k);
}

void rx_admit_notify(rx_admit *a, struct MHD_Connection *c, void **socket_context, bool opened)
{
    if (opened) started(a, c, socket_context);
    else closed(a, socket_context);
}

static conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void rx_admit_request_line(rx_admit *a, struct MHD_Connection *c)
{
    conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&a->mu);
    k->in_request = true;
    pthread_mutex_unlock(&a->mu);
}

void rx_admit_headers_done(rx_admit *a, struct MHD_Connection *c)
{
    conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&a->mu);
    k->deadline = 0;
    pthread_mutex_unlock(&a->mu);
}

void rx_admit_request_done(rx_admit *a, struct MHD_Connection *c)
{
    conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&a->mu);
    k->in_request = false;
    k->since = rx_now_ms();
    k->deadline = k->since + a->header_ms;
    pthread_mutex_unlock(&a->mu);
}

/* ---- the reaper ---- */

static void *reaper(void *arg)
{
    rx_admit *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += REAP_PERIOD_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&a->cv, &a->mu, &ts);
        double now = rx_now_ms();
        for (conn *k = a->head; k && !a->stop; k = k->next) {
            if (!k->deadline || now < k->deadline) continue;
            k->deadline = 0;
            shutdown(k->fd, SHUT_RDWR);
            rx_log_json(a->log, k->in_request ? RX_LOG_WARN : RX_LOG_INFO,
                        json_pack("{s:s, s:s, s:s, s:f}", "event", "connection_timeout", "peer",
                                  k->peer, "phase", k->in_request ? "headers" : "idle",
                                  "waited_ms", (double)(int64_t)(now - k->since)));
        }
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

rx_admit *rx_admit_new(const rx_config *c, rx_log *log)
{
    rx_admit *a = calloc(1, sizeof *a);
    RX_ASSERT(a);
    a->log = log;
    a->max = c->max_connections;
    a->per_ip = c->max_connections_per_ip;
    a->header_ms = c->header_timeout_s * 1000.0;
    a->nips = 16;
    while (a->nips < (size_t)c->max_connections * 2) a->nips *= 2;
    a->ips = calloc(a->nips, sizeof *a->ips);
    RX_ASSERT(a->ips);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    RX_ASSERT(pthread_create(&a->reaper, NULL, reaper, a) == 0);
    return a;
}

unsigned rx_admit_mhd_limit(const rx_config *c, unsigned threads)
{
    /* every event-loop thread can hold all of them, plus refused ones on their way out */
    uint64_t n = ((uint64_t)c->max_connections + MHD_LIMIT_HEADROOM) * threads;
    return n > 1000000 ? 1000000u : (unsigned)n;
}

void rx_admit_free(rx_admit *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->reaper, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->ips);
    free(a);
}
