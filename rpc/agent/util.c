/*
 * util.c — small helpers of relax-agent: artifact ids, the jittered exponential
 * backoff used whenever the server is away, and the pipe-and-fork of the child
 * processes that run jobs (job.c) and probe devices (devices.c) (clocks, base64 and
 * SHA-256 come from the base library, base.h).
 *
 * The backoff's randomness only spreads reconnects; it seeds once from the clock and the
 * pid (rand_r on a private state, under a mutex: two threads may back off at once).
 */
#include "agent.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int rxag_valid_artifact_id(const char *s)
{
    size_t i;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 64;
}

static pthread_mutex_t rnd_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned rnd_state; /* rand_r state; 0: not seeded yet */

double rxag_backoff(int k, double base, double cap)
{
    double d = base;
    for (int i = 0; i < k && d < cap; i++) d *= 2;
    if (d > cap) d = cap;
    pthread_mutex_lock(&rnd_mu);
    if (!rnd_state) rnd_state = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16) ^ 0x9e3779b9u;
    int r = rand_r(&rnd_state);
    pthread_mutex_unlock(&rnd_mu);
    return d * (0.75 + 0.5 * ((double)r / ((double)RAND_MAX + 1.0)));
}

pid_t rxag_fork_pipe(int *fd, char *err, size_t errlen)
{
    int p[2];
    if (pipe(p)) {
        snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    close(p[pid == 0 ? 0 : 1]);
    *fd = p[pid == 0 ? 1 : 0];
    return pid;
}

void rxag_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}
