/*
 * threads_gov.c — fewer threads while the machine is oversubscribed.
 *
 * Every parallel kernel is a libgomp region (or an OpenBLAS call on the same pool) whose
 * end waits for every thread of its team. On a machine with more runnable threads than
 * cores, the OS preempts one of ours mid-region and the others wait at the join for its
 * next time slice (milliseconds): a model of a hundred kernels pays that a hundred times.
 * Measured on 2 cores with other work running (load 2-7), relax-run --threads 2 against
 * --threads 1 and ONNX Runtime (2 threads), medians: ResNet-50 382 / 148 / 121 ms, a
 * Llama block 432 / 47 / 37 ms (quiet: 10.9 / 19.3 / 18.9 ms and 16 / 15 / 19 ms). A
 * region's join cannot go (OpenBLAS's GEMM threads wait for each other's packed panels,
 * so its shares must run at the same time), so the count goes down instead: a calling
 * thread whose calls are delayed runs them on fewer threads, and goes back when they
 * would no longer be.
 *
 * The signal: the calling thread's run-queue delay (the second field of
 * /proc/thread-self/schedstat, the nanoseconds it was runnable and not running). During a
 * call the calling thread is always runnable (it computes or spins at the join: libgomp
 * spins for milliseconds before it sleeps), so its delay over the time spent inside calls
 * is the share of the call it lost to other threads: ~0 on an idle machine, about a third
 * with one busy thread beside our two on two cores.
 *
 * The steps, per calling thread (its OpenMP thread count is per thread too):
 *   windows. rx_rt_gov_begin / rx_rt_gov_end bracket every CPU call of rx_vm_run and add
 *            its wall time to the window; the window closes at the first call that
 *            begins after RX_GOV_WINDOW_NS of calls (one clock read per call otherwise;
 *            the schedstat file is read once per window, ~3 us).
 *   decide.  rx_rt_gov_decide, a pure function of the window's busy time and delay:
 *            FULL (the requested count): delay > 1/10 of busy in two windows in a
 *            row (one is a passing blip: a daemon waking) -> REDUCED at half the
 *            threads. REDUCED: still delayed -> halve again (down to 1); not delayed and
 *            the probe time reached -> PROBE. PROBE (one window at the requested count):
 *            delayed -> REDUCED again with the probe interval doubled (200 ms up to
 *            3.2 s); not delayed -> FULL. A reduced thread is rarely delayed (it leaves a
 *            core to the others), so only a probe can tell that the load has gone.
 *   apply.   omp_set_num_threads and openblas_set_num_threads (threads.c,
 *            rx_rt_apply_threads) when the count changes.
 * The requested count is what rx_rt_set_threads set on this thread, else libgomp's
 * default at the first call. RX_THREADS_ADAPT=0 in the environment turns the governor
 * off (a fixed count, as before); RX_THREADS_TRACE=1 prints each window's decision to
 * stderr. Without a readable schedstat (not Linux, schedstats compiled out) it stays off.
 * rx_rt_gov_stats reports calls run below the requested count: relax-run --bench says
 * how many of its timed calls were ("reduced_calls").
 */
#include "rt_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RX_GOV_OFF = -1, RX_GOV_UNKNOWN = 0, RX_GOV_ON = 1 };
static int gov_enabled = RX_GOV_UNKNOWN; /* process-wide, set once (racy but idempotent) */
static int gov_trace;

static _Thread_local rx_rt_gov G;
static _Thread_local int64_t win_delay = -1; /* run_delay at the window's start */

/* The calling thread's run-queue delay in ns, -1 when unknown. */
static int64_t run_delay(void)
{
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[96];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end;
    strtoull(buf, &end, 10); /* time on the CPU */
    if (end == buf) return -1;
    char *p = end;
    unsigned long long d = strtoull(p, &end, 10);
    return end == p ? -1 : (int64_t)d;
}

static bool enabled(void)
{
    if (gov_enabled == RX_GOV_UNKNOWN) {
        const char *e = getenv("RX_THREADS_ADAPT"), *t = getenv("RX_THREADS_TRACE");
        gov_trace = t && *t && strcmp(t, "0") != 0;
        gov_enabled = (e && !strcmp(e, "0")) || run_delay() < 0 ? RX_GOV_OFF : RX_GOV_ON;
    }
    return gov_enabled == RX_GOV_ON;
}

int rx_rt_gov_decide(rx_rt_gov *g, int64_t now, int64_t busy_ns, int64_t delay_ns)
{
    bool delayed = delay_ns * 10 > busy_ns;
    switch (g->state) {
    case RX_GOV_FULL: /* two delayed windows in a row: one is a passing blip */
        g->strikes = delayed ? g->strikes + 1 : 0;
        if (g->strikes >= 2 && g->want > 1) {
            g->strikes = 0;
            g->state = RX_GOV_REDUCED;
            g->low = g->want / 2;
            g->backoff = RX_GOV_PROBE_MIN_NS;
            g->next_probe = now + g->backoff;
            g->reductions++;
        }
        break;
    case RX_GOV_REDUCED:
        if (delayed) {
            if (g->low > 1) g->low /= 2;
        } else if (now >= g->next_probe) {
            g->state = RX_GOV_PROBE;
            g->probes++;
        }
        break;
    case RX_GOV_PROBE:
        if (delayed) {
            g->state = RX_GOV_REDUCED;
            g->backoff = g->backoff * 2 > RX_GOV_PROBE_MAX_NS ? RX_GOV_PROBE_MAX_NS
                                                                : g->backoff * 2;
            g->next_probe = now + g->backoff;
        } else {
            g->state = RX_GOV_FULL;
            g->strikes = 0;
        }
        break;
    }
    return g->state == RX_GOV_REDUCED ? g->low : g->want;
}

void rx_rt_gov_request(int n)
{
    memset(&G, 0, sizeof G);
    G.want = n;
    G.state = RX_GOV_FULL;
    win_delay = -1;
}

void rx_rt_gov_begin(rx_rt_gov_mark *mark)
{
    mark->t0 = 0;
    if (!enabled()) return;
    if (!G.want) rx_rt_gov_request(rx_rt_max_threads());
    if (G.want <= 1) return;
    int64_t now = rx_rt_now_ns();
    if (win_delay < 0 || G.win_ns >= RX_GOV_WINDOW_NS) {
        int64_t d = run_delay();
        if (d < 0) return;
        if (win_delay >= 0) {
            int before = G.state == RX_GOV_REDUCED ? G.low : G.want;
            int n = rx_rt_gov_decide(&G, now, G.win_ns, d - win_delay);
            if (gov_trace)
                fprintf(stderr, "relax: threads %d -> %d (delay %.1f%% of %.1f ms)\n", before,
                        n, 100.0 * (double)(d - win_delay) / (double)G.win_ns,
                        (double)G.win_ns / 1e6);
            if (n != before) rx_rt_apply_threads(n);
        }
        win_delay = d;
        G.win_ns = 0;
    }
    mark->t0 = now;
}

void rx_rt_gov_end(const rx_rt_gov_mark *mark)
{
    if (!mark->t0) return;
    G.win_ns += rx_rt_now_ns() - mark->t0;
    G.calls++;
    if (G.state == RX_GOV_REDUCED) G.reduced_calls++;
}

void rx_rt_gov_stats(int *want, int64_t *calls, int64_t *reduced_calls)
{
    *want = G.want;
    *calls = G.calls;
    *reduced_calls = G.reduced_calls;
}
