/*
 * fuzz_http.c — libFuzzer target for relaxd's request path: libmicrohttpd's parser, then
 * everything of ours behind it (admit.c's books, the framing and header checks, the
 * raw-path router, authentication, body limits and the cut-off, every handler's
 * validation), on a real rx_server.
 *
 * One server is started at the first input (LLVMFuzzerInitialize): no listening socket
 * and no event-loop thread (http_threads -1: this thread drives the daemon with
 * rx_http_run, so an input costs no thread hand-offs), a fresh data directory in
 * /dev/shm (else $TMPDIR: the jobs database syncs every write), small limits (4 KiB
 * bodies, a 2 s header deadline, 50 ms agent polls) and its log on /dev/null. Its
 * compile service is stopped at once: a compile request still goes through parsing,
 * validation, the module's key and the cache lookup, and a miss is answered 503
 * shutting_down instead of running the C compiler (the compiler has its own target).
 *
 * Each input is one connection's bytes: a socketpair's end is handed to the daemon
 * (rx_http_add_socket, as if accepted from 127.0.0.1), the input is written and the
 * write side shut, and the daemon is run until it closes its end or four rounds pass
 * without a byte (a request that parks, or waits for the rest of a body, is then
 * dropped by closing). What is checked: the daemon never crashes (ASan/UBSan watch it),
 * every reply starts with a status line, and it still answers GET /healthz 200 after
 * every 4096 inputs.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relax/server.h"
#include "relax/support.h"
#include "../../server/server_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static rx_server *srv;
static char data_dir[256];
static unsigned long runs;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(path);
}

static void stop_server(void)
{
    rx_server_free(srv);
    srv = NULL;
    nftw(data_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    if (!access("/dev/shm", W_OK)) tmp = "/dev/shm";
    snprintf(data_dir, sizeof data_dir, "%s/rx-fuzz-http-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    RX_ASSERT(mkdtemp(data_dir));
    rx_config c;
    rx_config_defaults(&c);
    free(c.data_dir);
    c.data_dir = strdup(data_dir);
    c.port = 0;
    c.http_threads = -1;
    c.workers = 1;
    c.max_body = 4096;
    c.max_header_bytes = 4096;
    c.header_timeout_s = 2;
    c.request_timeout_s = 2;
    c.compile_timeout_s = 1;
    c.agent_poll_ms = 50;
    c.agent_heartbeat_ms = 10;
    c.agent_lease_ms = 50;
    c.max_connections_per_ip = 0;
    char err[256];
    srv = rx_server_start(&c, err, sizeof err);
    rx_config_free(&c);
    if (!srv) {
        fprintf(stderr, "fuzz_http: cannot start the server: %s\n", err);
        abort();
    }
    rx_compiler_stop(rx_server_compiler(srv));
    rx_log *log = rx_server_log(srv);
    log->fd = open("/dev/null", O_WRONLY);
    RX_ASSERT(log->fd >= 0);
    atexit(stop_server);
    return 0;
}

/* Sends the input on a fresh connection; returns the reply's first bytes in out. */
static size_t exchange(const uint8_t *data, size_t n, char *out, size_t cap)
{
    int sv[2];
    RX_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    int big = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    rx_http *h = rx_server_http(srv);
    if (rx_http_add_socket(h, sv[1])) {
        close(sv[0]);
        return 0;
    }
    size_t off = 0, got = 0;
    while (off < n) {
        ssize_t w = send(sv[0], data + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(sv[0], SHUT_WR);
    for (int quiet = 0; quiet < 4;) {
        rx_http_run(h);
        char buf[4096];
        ssize_t r = recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;
        if (r < 0) {
            quiet++;
            continue;
        }
        quiet = 0;
        size_t k = (size_t)r < cap - 1 - got ? (size_t)r : cap - 1 - got;
        memcpy(out + got, buf, k);
        got += k;
    }
    close(sv[0]);
    rx_http_run(h); /* the daemon sees the close and frees the connection */
    out[got] = '\0';
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n > 16384) return 0;
    char reply[256];
    size_t got = exchange(data, n, reply, sizeof reply);
    /* every reply starts with a status line (libmicrohttpd's own or ours) */
    if (got >= 12) RX_ASSERT(!memcmp(reply, "HTTP/1.", 7) && reply[8] == ' ');
    if (++runs % 4096 == 0) {
        static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: f\r\nConnection: close\r\n\r\n";
        got = exchange((const uint8_t *)hz, sizeof hz - 1, reply, sizeof reply);
        if (got < 12 || memcmp(reply, "HTTP/1.1 200", 12)) {
            fprintf(stderr, "fuzz_http: healthz after %lu inputs: %s\n", runs, reply);
            abort();
        }
    }
    return 0;
}
