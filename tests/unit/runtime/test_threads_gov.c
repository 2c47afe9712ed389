/*
 * test_threads_gov.c — the thread governor (runtime/threads_gov.c).
 *
 * decide_*: rx_rt_gov_decide's state machine alone, on made-up windows (a window of busy
 * ns and run-queue delay ns): when it halves, when it probes, how the probe interval
 * grows and resets. oversubscribed: the glue — the calling thread's calls, with more
 * busy threads than cores beside it, are delayed; the governor lowers the calling
 * thread's OpenMP count (what rx_rt_get_threads reads back) and counts the calls it ran
 * lower, and rx_rt_set_threads restores the request.
 */
#include "rt_test.h"

#include "../../../runtime/rt_int.h"
#include "../rx_check.h"

#include <pthread.h>
#include <stdatomic.h>

#define MS 1000000LL

static rx_rt_gov full(int want)
{
    rx_rt_gov g = {0};
    g.want = want;
    g.state = RX_GOV_FULL;
    return g;
}

START_TEST(decide_stays_full_when_not_delayed)
{
    rx_rt_gov g = full(2);
    /* 9% of the window on the run queue is not enough; exactly 10% neither */
    ck_assert_int_eq(rx_rt_gov_decide(&g, 10 * MS, 10 * MS, 9 * MS / 10), 2);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 20 * MS, 10 * MS, 1 * MS), 2);
    ck_assert_int_eq(g.state, RX_GOV_FULL);
    ck_assert_int_eq((int)g.reductions, 0);
}
END_TEST

START_TEST(decide_halves_when_delayed)
{
    rx_rt_gov g = full(8);
    /* one delayed window between quiet ones is a blip; two in a row are not */
    ck_assert_int_eq(rx_rt_gov_decide(&g, 0, 10 * MS, 3 * MS), 8);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 0, 10 * MS, 0), 8);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 0, 10 * MS, 3 * MS), 8);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 10 * MS, 10 * MS, 3 * MS), 4);
    ck_assert_int_eq(g.state, RX_GOV_REDUCED);
    ck_assert_int_eq(g.next_probe, 10 * MS + RX_GOV_PROBE_MIN_NS);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 20 * MS, 10 * MS, 3 * MS), 2);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 30 * MS, 10 * MS, 3 * MS), 1);
    ck_assert_int_eq(rx_rt_gov_decide(&g, 40 * MS, 10 * MS, 3 * MS), 1); /* never 0 */
    ck_assert_int_eq((int)g.reductions, 1);
    /* one thread asked for: nothing to take away */
    rx_rt_gov one = full(1);
    ck_assert_int_eq(rx_rt_gov_decide(&one, 10 * MS, 10 * MS, 9 * MS), 1);
    ck_assert_int_eq(rx_rt_gov_decide(&one, 20 * MS, 10 * MS, 9 * MS), 1);
    ck_assert_int_eq(one.state, RX_GOV_FULL);
}
END_TEST

START_TEST(decide_probes_and_backs_off)
{
    rx_rt_gov g = full(2);
    int64_t t = 10 * MS;
    ck_assert_int_eq(rx_rt_gov_decide(&g, t - 10 * MS, 10 * MS, 5 * MS), 2);
    ck_assert_int_eq(rx_rt_gov_decide(&g, t, 10 * MS, 5 * MS), 1);
    /* quiet windows before the probe time stay reduced (one thread is not delayed) */
    ck_assert_int_eq(rx_rt_gov_decide(&g, t + RX_GOV_PROBE_MIN_NS - 1, 10 * MS, 0), 1);
    ck_assert_int_eq(g.state, RX_GOV_REDUCED);
    /* at the probe time: one window at the full count */
    ck_assert_int_eq(rx_rt_gov_decide(&g, t + RX_GOV_PROBE_MIN_NS, 10 * MS, 0), 2);
    ck_assert_int_eq(g.state, RX_GOV_PROBE);
    ck_assert_int_eq((int)g.probes, 1);
    /* the probe was delayed: reduced again, the interval doubled each time up to the cap */
    t += RX_GOV_PROBE_MIN_NS;
    int64_t want_backoff = RX_GOV_PROBE_MIN_NS;
    for (int i = 0; i < 8; i++) {
        want_backoff = want_backoff * 2 > RX_GOV_PROBE_MAX_NS ? RX_GOV_PROBE_MAX_NS
                                                                : want_backoff * 2;
        ck_assert_int_eq(rx_rt_gov_decide(&g, t + 10 * MS, 10 * MS, 4 * MS), 1);
        ck_assert_int_eq(g.state, RX_GOV_REDUCED);
        ck_assert_int_eq(g.backoff, want_backoff);
        ck_assert_int_eq(g.next_probe, t + 10 * MS + want_backoff);
        t = g.next_probe;
        ck_assert_int_eq(rx_rt_gov_decide(&g, t, 10 * MS, 0), 2); /* the next probe */
    }
    ck_assert_int_eq((int)g.probes, 9);
    ck_assert_int_eq(g.backoff, RX_GOV_PROBE_MAX_NS);
    /* a clean probe: full again, and the next reduction starts from the short interval */
    ck_assert_int_eq(rx_rt_gov_decide(&g, t + 10 * MS, 10 * MS, 0), 2);
    ck_assert_int_eq(g.state, RX_GOV_FULL);
    ck_assert_int_eq(rx_rt_gov_decide(&g, t + 15 * MS, 10 * MS, 2 * MS), 2);
    ck_assert_int_eq(rx_rt_gov_decide(&g, t + 20 * MS, 10 * MS, 2 * MS), 1);
    ck_assert_int_eq(g.backoff, RX_GOV_PROBE_MIN_NS);
}
END_TEST

static atomic_int stop;

static void *spin(void *arg)
{
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) x++;
    return arg;
}

static void busy_ms(double ms)
{
    int64_t end = rx_rt_now_ns() + (int64_t)(ms * 1e6);
    volatile uint64_t x = 0;
    while (rx_rt_now_ns() < end) x++;
}

START_TEST(oversubscribed)
{
    rx_rt_err e;
    ck_assert_int_eq(rx_rt_set_threads(2, &e), 0);
    int k, b;
    rx_rt_get_threads(&k, &b);
    ck_assert_int_eq(k, 2);
    /* more busy threads than cores: the calling thread waits on the run queue */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = (int)(cpus < 1 ? 2 : cpus > 32 ? 64 : 2 * cpus);
    pthread_t th[64];
    atomic_store(&stop, 0);
    for (int i = 0; i < n; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, spin, NULL), 0);
    int want = 0;
    int64_t calls = 0, reduced = 0;
    int64_t until = rx_rt_now_ns() + 3000 * MS;
    while (rx_rt_now_ns() < until) { /* governed "calls" of 2 ms of work each */
        rx_rt_gov_mark mk;
        rx_rt_gov_begin(&mk);
        busy_ms(2);
        rx_rt_gov_end(&mk);
        rx_rt_gov_stats(&want, &calls, &reduced);
        if (reduced >= 5) break;
    }
    rx_rt_get_threads(&k, &b);
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(want, 2);
    ck_assert_msg(reduced >= 5, "%lld of %lld calls reduced", (long long)reduced,
                  (long long)calls);
    ck_assert_int_eq(k, 1); /* the calling thread's regions run on one thread now */
    if (b) ck_assert_int_eq(b, 1);
    /* asking again restores the count and resets the statistics */
    ck_assert_int_eq(rx_rt_set_threads(2, &e), 0);
    rx_rt_get_threads(&k, &b);
    ck_assert_int_eq(k, 2);
    rx_rt_gov_stats(&want, &calls, &reduced);
    ck_assert_int_eq((int)calls, 0);
    ck_assert_int_eq((int)reduced, 0);
}
END_TEST

int main(void)
{
    /* the governor reads RX_THREADS_ADAPT once: this test is about it being on */
    unsetenv("RX_THREADS_ADAPT");
    Suite *s = suite_create("threads_gov");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, decide_stays_full_when_not_delayed);
    tcase_add_test(tc, decide_halves_when_delayed);
    tcase_add_test(tc, decide_probes_and_backs_off);
    tcase_add_test(tc, oversubscribed);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
