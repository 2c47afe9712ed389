/*
 * relaxd.c — the compilation server's main(): configuration, signals, life cycle.
 *
 *   relaxd [--config FILE] [--listen HOST:PORT] [--data DIR] [--workers N] ...
 *
 * Signals: SIGTERM and SIGINT are blocked in every thread (the mask is set before any
 * thread starts and threads inherit it), and the main thread waits for them with
 * sigwait(). So no signal handler runs, and the program needs no global signal flag
 * at all: "a signal arrived" is the return of sigwait. SIGPIPE is ignored (a client
 * that hangs up must not kill the server).
 *
 * Exit status: 0 after a clean shutdown, 1 when the server cannot start (one "error:"
 * line on stderr), 2 for bad usage.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "relax/server.h"

int main(int argc, char **argv)
{
    rx_config cfg;
    rx_config_defaults(&cfg);
    char err[512] = "";
    const char *info = NULL;
    int rc = rx_config_load(&cfg, argc, argv, &info, err, sizeof err);
    if (rc == 3) {
        fputs(info, stdout);
        rx_config_free(&cfg);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "error: %s\n", err);
        rx_config_free(&cfg);
        return rc == 2 ? 2 : 1;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    rx_server *s = rx_server_start(&cfg, err, sizeof err);
    rx_config_free(&cfg);
    if (!s) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {}
    rx_server_shutdown(s);
    rx_server_free(s);
    return 0;
}
