/*
 * metrics.c — relaxd's counters and histograms, rendered in the Prometheus text
 * exposition format 0.0.4 (server_int.h).
 *
 * Everything is a fixed-size array inside rx_metrics, updated under one mutex (updates
 * are a few additions; contention is negligible next to an HTTP request). Requests are
 * counted by route (the routing table's patterns plus "unmatched") and by status; the
 * status set is fixed (statuses[] below, anything else counts as "other"), so the
 * number of series is bounded whatever clients send. Gauges that other objects own
 * (store counters, queue depth, busy workers) are passed in at render time.
 *
 * Series:
 *   relaxd_http_requests_total{route,status}       counter
 *   relaxd_http_request_duration_seconds            histogram
 *   relaxd_compiles_{started,succeeded,failed}_total counter
 *   relaxd_compile_seconds_total                    counter
 *   relaxd_compile_singleflight_joins_total         counter
 *   relaxd_compile_queue_rejected_total             counter
 *   relaxd_cache_{hits,misses}_total                counter (compile requests, counted
 *                                                   here: compile.c step 2)
 *   relaxd_cache_{evictions,dropped}_total          counter (the store's)
 *   relaxd_cache_bytes, relaxd_cache_entries        gauge
 *   relaxd_compile_queue_depth, relaxd_compile_queue_capacity gauge
 *   relaxd_workers_busy, relaxd_workers             gauge
 *   relaxd_jobs                                     gauge (jobs remembered)
 *   relaxd_agents{state}                            gauge (idle, busy, offline)
 *   relaxd_bench_jobs{state}                        gauge (benchmark jobs in jobs.db)
 *   relaxd_bench_dispatch_seconds                   histogram (queued -> assigned; the
 *                                                   scheduler's own, rx_sched_stats)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/support.h"
#include "server_int.h"

static const int statuses[] = {200, 201, 202, 204, 304, 400, 401, 403, 404,
                               405, 409, 413, 431, 500, 503, 504};
_Static_assert(sizeof statuses / sizeof statuses[0] < RX_METRICS_STATUSES,
               "one status slot is kept for \"other\"");
static const double buckets[RX_METRICS_BUCKETS] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25, 0.5, 1, 2.5, 10, 60};

void rx_metrics_init(rx_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void rx_metrics_destroy(rx_metrics *m) { pthread_mutex_destroy(&m->mu); }

int rx_metrics_add_route(rx_metrics *m, const char *name)
{
    RX_ASSERT(m->nroutes < RX_METRICS_ROUTES);
    m->route_names[m->nroutes] = name;
    return m->nroutes++;
}

static int status_slot(int status)
{
    for (int i = 0; i < RX_COUNTOF(statuses); i++)
        if (statuses[i] == status) return i;
    return RX_METRICS_STATUSES - 1;
}

void rx_metrics_request(rx_metrics *m, int route, int status, double latency_s)
{
    pthread_mutex_lock(&m->mu);
    if (route >= 0 && route < m->nroutes) m->requests[route][status_slot(status)]++;
    for (int i = 0; i < RX_METRICS_BUCKETS; i++)
        if (latency_s <= buckets[i]) {
            m->lat_buckets[i]++;
            break;
        }
    m->lat_count++;
    m->lat_sum_s += latency_s;
    pthread_mutex_unlock(&m->mu);
}

void rx_metrics_compile(rx_metrics *m, int phase, double seconds)
{
    pthread_mutex_lock(&m->mu);
    if (phase == 0) m->compiles_started++;
    else if (phase == 1) m->compiles_succeeded++;
    else m->compiles_failed++;
    if (phase) m->compile_seconds += seconds;
    pthread_mutex_unlock(&m->mu);
}

void rx_metrics_inc(rx_metrics *m, uint64_t *counter)
{
    pthread_mutex_lock(&m->mu);
    (*counter)++;
    pthread_mutex_unlock(&m->mu);
}

static void counter(rx_sb *b, const char *name, const char *help, double v)
{
    rx_sb_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %.17g\n", name, help, name, name, v);
}

static void gauge(rx_sb *b, const char *name, const char *help, double v)
{
    rx_sb_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

/* The scheduler's series: agents and benchmark jobs by state, dispatch latency. */
static void render_sched(rx_sb *b, const rx_sched_stats *st)
{
    rx_sb_printf(b, "# HELP relaxd_agents Registered agents by state.\n"
                    "# TYPE relaxd_agents gauge\n"
                    "relaxd_agents{state=\"idle\"} %d\nrelaxd_agents{state=\"busy\"} %d\n"
                    "relaxd_agents{state=\"offline\"} %d\n",
                 st->agents_idle, st->agents_busy, st->agents_offline);
    rx_sb_printf(b, "# HELP relaxd_bench_jobs Benchmark jobs by state (jobs.db).\n"
                    "# TYPE relaxd_bench_jobs gauge\n"
                    "relaxd_bench_jobs{state=\"queued\"} %lld\n"
                    "relaxd_bench_jobs{state=\"running\"} %lld\n"
                    "relaxd_bench_jobs{state=\"done\"} %lld\n"
                    "relaxd_bench_jobs{state=\"failed\"} %lld\n"
                    "relaxd_bench_jobs{state=\"cancelled\"} %lld\n",
                 (long long)st->jobs_queued, (long long)st->jobs_running,
                 (long long)st->jobs_done, (long long)st->jobs_failed,
                 (long long)st->jobs_cancelled);
    rx_sb_puts(b, "# HELP relaxd_bench_dispatch_seconds Benchmark job queue wait: submitted "
                  "(or re-queued) to assigned to an agent.\n"
                  "# TYPE relaxd_bench_dispatch_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < RX_SCHED_DISPATCH_BUCKETS; i++) {
        cum += st->dispatch_buckets[i];
        rx_sb_printf(b, "relaxd_bench_dispatch_seconds_bucket{le=\"%g\"} %llu\n",
                     rx_sched_dispatch_bounds[i], (unsigned long long)cum);
    }
    rx_sb_printf(b, "relaxd_bench_dispatch_seconds_bucket{le=\"+Inf\"} %llu\n",
                 (unsigned long long)st->dispatch_count);
    rx_sb_printf(b, "relaxd_bench_dispatch_seconds_sum %.6f\n", st->dispatch_sum_s);
    rx_sb_printf(b, "relaxd_bench_dispatch_seconds_count %llu\n",
                 (unsigned long long)st->dispatch_count);
}

char *rx_metrics_render(rx_metrics *m, const rx_metrics_gauges *g)
{
    rx_sb b = {0};
    pthread_mutex_lock(&m->mu);
    rx_sb_puts(&b, "# HELP relaxd_http_requests_total HTTP requests by route and status.\n"
                   "# TYPE relaxd_http_requests_total counter\n");
    for (int r = 0; r < m->nroutes; r++)
        for (int st = 0; st < RX_METRICS_STATUSES; st++) {
            if (!m->requests[r][st]) continue;
            char code[8];
            if (st < RX_COUNTOF(statuses)) snprintf(code, sizeof code, "%d", statuses[st]);
            else snprintf(code, sizeof code, "other");
            rx_sb_printf(&b, "relaxd_http_requests_total{route=\"%s\",status=\"%s\"} %llu\n",
                         m->route_names[r], code, (unsigned long long)m->requests[r][st]);
        }
    rx_sb_puts(&b, "# HELP relaxd_http_request_duration_seconds HTTP request latency.\n"
                   "# TYPE relaxd_http_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < RX_METRICS_BUCKETS; i++) {
        cum += m->lat_buckets[i];
        rx_sb_printf(&b, "relaxd_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
                     buckets[i], (unsigned long long)cum);
    }
    rx_sb_printf(&b, "relaxd_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                 (unsigned long long)m->lat_count);
    rx_sb_printf(&b, "relaxd_http_request_duration_seconds_sum %.6f\n", m->lat_sum_s);
    rx_sb_printf(&b, "relaxd_http_request_duration_seconds_count %llu\n",
                 (unsigned long long)m->lat_count);
    counter(&b, "relaxd_compiles_started_total", "Compiles started by workers.",
            (double)m->compiles_started);
    counter(&b, "relaxd_compiles_succeeded_total", "Compiles that produced an artifact.",
            (double)m->compiles_succeeded);
    counter(&b, "relaxd_compiles_failed_total", "Compiles that failed.",
            (double)m->compiles_failed);
    counter(&b, "relaxd_compile_seconds_total", "Wall time spent compiling.", m->compile_seconds);
    counter(&b, "relaxd_compile_singleflight_joins_total",
            "Requests that waited on an identical compile in flight.",
            (double)m->singleflight_joins);
    counter(&b, "relaxd_compile_queue_rejected_total", "Compiles refused: queue full.",
            (double)m->queue_rejected);
    counter(&b, "relaxd_cache_hits_total", "Compile requests answered from the cache.",
            (double)m->cache_hits);
    counter(&b, "relaxd_cache_misses_total",
            "Compile requests the cache could not answer (one per request).",
            (double)m->cache_misses);
    pthread_mutex_unlock(&m->mu);
    counter(&b, "relaxd_cache_evictions_total", "Artifacts evicted (LRU).",
            (double)g->store.evictions);
    counter(&b, "relaxd_cache_dropped_total", "Corrupt or missing blobs dropped.",
            (double)g->store.dropped);
    gauge(&b, "relaxd_cache_bytes", "Artifact bytes held.", (double)g->store.bytes);
    gauge(&b, "relaxd_cache_entries", "Artifacts held.", (double)g->store.entries);
    gauge(&b, "relaxd_compile_queue_depth", "Compiles waiting for a worker.",
          (double)g->queue_depth);
    gauge(&b, "relaxd_compile_queue_capacity", "Compile queue capacity.", (double)g->queue_cap);
    gauge(&b, "relaxd_workers_busy", "Workers compiling now.", (double)g->workers_busy);
    gauge(&b, "relaxd_workers", "Compile workers.", (double)g->workers);
    gauge(&b, "relaxd_jobs", "Compile jobs remembered.", (double)g->jobs);
    render_sched(&b, &g->sched);
    return rx_sb_take(&b);
}
