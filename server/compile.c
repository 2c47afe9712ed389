/*
 * compile.c — the compile service: cache key, lookup, single-flight, a bounded queue
 * and a pool of worker threads (server_int.h).
 *
 * A request goes through these steps:
 *
 *   1. key      read + deduce + structural hash salted with target, opt level and
 *               compiler version (the one key of driver.h's rx_build_key, which
 *               `relaxc hash` prints) on the request thread: cheap, and it turns an
 *               invalid module into a 400 with located errors before anything is
 *               queued. The module comes as the request body's parsed tree
 *               (rx_json_read_value: no second parse; max_module_bytes bounds its
 *               compact text, counted only when the body could be near the limit) or
 *               as text (rx_module_key); a miss serializes the tree for the job.
 *   2. lookup   rx_store_lookup: a hit answers at once from the record (id, size) without
 *               reading the blob. The store reports a missing blob as a miss (dropped,
 *               so it is rebuilt); the bytes are verified where they are served (every
 *               rx_store_read), so a damaged blob is dropped by the next fetch and the
 *               compile after it rebuilds. This step is the one that counts:
 *               relaxd_cache_{hits,misses}_total say, per compile request with a valid
 *               module, whether it was answered from the cache.
 *   3. join     under the service mutex, a queued or running job with the same key is
 *               joined (single-flight): every identical request waits on that one
 *               compile and gets its artifact.
 *   4. enqueue  otherwise a new job enters the bounded ring; a full ring is 503 with
 *               Retry-After. Async requests return the job id (202) here.
 *   5. wait     sync requests wait on the job without blocking their thread: submit
 *               returns the job (status 0), the HTTP layer suspends the connection and
 *               registers a waiter (rx_compiler_wait); the service wakes it exactly once
 *               — the worker finishing the job, shutdown cancelling it, or the timer
 *               thread at the deadline (2 x compile timeout + 5 s, then 503 "timeout"
 *               while the job goes on and fills the cache).
 *
 * A worker pops a job, looks the key up once more (a job queued just after an identical
 * one finished is answered from the cache instead of compiling twice; this re-check
 * counts neither a hit nor a miss, its request was counted at step 2), runs rx_build_run
 * with the C compiler limited to the compile timeout, stores the artifact, and wakes
 * the waiters. Failures are not cached.
 *
 * Jobs live in one table (insertion order) so GET /v1/jobs/<id> can find them; finished
 * jobs beyond max_jobs are forgotten oldest first. A job is reference counted: the table,
 * the queue/worker and each waiter hold one reference; the last one frees it. All job
 * fields, and the list of waiters, are guarded by the service mutex; one condition
 * variable signals "work queued" (workers), another wakes the timer thread (the waiter
 * list changed, or stop). A waiter's wake runs under the mutex and must not block.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relax/deduce.h"
#include "relax/driver.h"
#include "relax/json.h"
#include "relax/onnx.h"
#include "relax/rxa.h"
#include "relax/support.h"
#include "server_int.h"

struct rx_job {
    char id[33];           /* random hex */
    char key[65];          /* cache key */
    char target[RX_TARGET_STR_MAX]; /* normalized */
    int opt_level;
    rx_compile_opts opts;  /* lib, lib_disable, disable_passes */
    char request_id[65];   /* the request that created it (logs) */
    char *module;          /* relax-json text (heap) until a worker is done with it */
    size_t module_n;
    rx_job_state state;
    json_t *result;        /* DONE: the compile result object */
    json_t *error;         /* FAILED: the error object {"code", "message", ...} */
    int err_status;        /* FAILED: the HTTP status */
    int retry_after;       /* FAILED: Retry-After seconds, 0: none */
    int refs;              /* table + queue/worker + waiters */
    bool in_table;
};

struct rx_compiler {
    const rx_config *cfg;  /* borrowed from the server */
    char *ccdir;           /* DATA/cc-tmp: parent of the C compiler's private dirs (heap) */
    rx_store *store;
    rx_log *log;
    rx_metrics *metrics;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a job was queued, or stopping */
    rx_job **ring;         /* the bounded queue (cap = cfg->queue) */
    int head, len, cap;
    RX_VEC(rx_job *) table; /* every remembered job, oldest first */
    pthread_t *threads;
    int nthreads;
    int busy;              /* workers compiling now */
    bool stopping;
    rx_waiter *waiters;    /* synchronous requests waiting (suspended connections) */
    pthread_cond_t timer_cv; /* the waiter list changed, or the timer must stop */
    pthread_t timer;       /* fires waiters' deadlines */
    bool timer_started, timer_stop;
};

/* ---- jobs ---- */

static void job_unref_locked(rx_job *j)
{
    if (--j->refs > 0) return;
    json_decref(j->result);
    json_decref(j->error);
    free(j->module);
    free(j);
}

static void random_hex(char *out, size_t bytes)
{
    uint8_t b[32];
    RX_ASSERT(bytes <= sizeof b);
    size_t got = 0;
    while (got < bytes) {
        ssize_t r = getrandom(b + got, bytes - got, 0);
        if (r < 0 && errno == EINTR) continue;
        RX_ASSERT(r > 0);
        got += (size_t)r;
    }
    rx_hex(b, bytes, out);
}

static rx_job *job_new(const char *key, const rx_compile_req *r, const char *request_id)
{
    rx_job *j = calloc(1, sizeof *j);
    RX_ASSERT(j);
    random_hex(j->id, 16);
    snprintf(j->key, sizeof j->key, "%s", key);
    snprintf(j->target, sizeof j->target, "%s", r->target);
    snprintf(j->request_id, sizeof j->request_id, "%s", request_id ? request_id : "");
    j->opt_level = r->opt_level;
    j->opts = r->opts;
    return j;
}

/* Adds j to the table (one reference) and forgets the oldest finished jobs beyond
 * max_jobs (unfinished ones are kept: they are bounded by the queue and the workers). */
static void table_add_locked(rx_compiler *k, rx_job *j)
{
    j->refs++;
    j->in_table = true;
    RX_VEC_PUSH(k->table, j);
    int excess = k->table.n - k->cfg->max_jobs;
    for (int i = 0; i < k->table.n - 1 && excess > 0;) { /* never j itself (the last) */
        rx_job *o = k->table.items[i];
        if (o->state == RX_JOB_DONE || o->state == RX_JOB_FAILED) {
            memmove(&k->table.items[i], &k->table.items[i + 1],
                    (size_t)(k->table.n - i - 1) * sizeof *k->table.items);
            k->table.n--;
            o->in_table = false;
            job_unref_locked(o);
            excess--;
        } else {
            i++;
        }
    }
}

static rx_job *table_find_locked(rx_compiler *k, const char *id)
{
    for (int i = 0; i < k->table.n; i++)
        if (!strcmp(k->table.items[i]->id, id)) return k->table.items[i];
    return NULL;
}

static rx_job *inflight_find_locked(rx_compiler *k, const char *key, const char *target)
{
    for (int i = k->table.n - 1; i >= 0; i--) {
        rx_job *j = k->table.items[i];
        if ((j->state == RX_JOB_QUEUED || j->state == RX_JOB_RUNNING) && !strcmp(j->key, key) &&
            !strcmp(j->target, target))
            return j;
    }
    return NULL;
}

static const char *state_name(rx_job_state s)
{
    static const char *const names[] = {"queued", "running", "done", "failed"};
    return names[s];
}

static json_t *result_json(const rx_artifact_info *info, const char *key, const char *target,
                           int opt_level, bool cached, double compile_ms)
{
    return json_pack("{s:s, s:b, s:s, s:I, s:s, s:i, s:f}", "artifact", info->id, "cached",
                     cached, "key", key, "size", (json_int_t)info->size, "target", target,
                     "opt_level", opt_level, "compile_ms", (double)(int64_t)(compile_ms * 1000) / 1000);
}

static json_t *diags_error(const char *code, const char *stage, const rx_diags *d)
{
    json_t *list = json_array();
    for (int i = 0; i < d->list.n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s}", "path", d->list.items[i].path,
                                               "message", d->list.items[i].msg));
    int n = rx_diags_count(d);
    char msg[96];
    if (n == 1 && d->list.n == 1) snprintf(msg, sizeof msg, "1 error");
    else snprintf(msg, sizeof msg, "%d errors", n);
    json_t *e = json_pack("{s:s, s:s, s:o}", "code", code, "message", msg, "errors", list);
    if (e && stage) json_object_set_new(e, "stage", json_string(stage));
    return e;
}

/* ---- the cache ---- */

/* 1 hit (info filled), 0 miss, -1 error. The blob is not read: the store's lookup
 * reports a missing blob as a miss, and every fetch verifies the bytes (a damaged blob
 * is dropped there and the next compile rebuilds it). When count, a hit or a miss is
 * added to the cache metrics (step 2 only). */
static int lookup_cached(rx_compiler *k, const char *key, const char *request_id, bool count,
                         rx_artifact_info *info)
{
    char err[256];
    int r = rx_store_lookup(k->store, key, info, err, sizeof err);
    if (r < 0)
        rx_log_json(k->log, RX_LOG_ERROR,
                    json_pack("{s:s, s:s, s:s}", "event", "store_error", "request_id",
                              request_id, "message", err));
    if (count && r >= 0) rx_metrics_inc(k->metrics, r ? &k->metrics->cache_hits
                                                       : &k->metrics->cache_misses);
    return r;
}

/* The artifact's embedded metadata JSON text (heap) or NULL. */
/* ---- waiters ---- */

static void waiter_unlink_locked(rx_compiler *k, rx_waiter *w)
{
    if (!w->linked) return;
    if (w->prev) w->prev->next = w->next;
    else k->waiters = w->next;
    if (w->next) w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->linked = false;
}

/* Wakes every request waiting on j (which has just finished). */
static void wake_job_locked(rx_compiler *k, rx_job *j)
{
    rx_waiter *w = k->waiters;
    while (w) {
        rx_waiter *next = w->next;
        if (w->job == j) {
            waiter_unlink_locked(k, w);
            w->wake(w->ctx);
        }
        w = next;
    }
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* The timer thread: wakes waiters whose deadline passed; sleeps until the next one. */
static void *timer_main(void *arg)
{
    rx_compiler *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->timer_stop) {
        struct timespec now, next = {0, 0};
        clock_gettime(CLOCK_MONOTONIC, &now);
        bool any = false;
        rx_waiter *w = k->waiters;
        while (w) {
            rx_waiter *after = w->next;
            if (!ts_before(&now, &w->deadline)) {
                w->timed_out = true;
                waiter_unlink_locked(k, w);
                w->wake(w->ctx);
            } else if (!any || ts_before(&w->deadline, &next)) {
                next = w->deadline;
                any = true;
            }
            w = after;
        }
        if (any) pthread_cond_timedwait(&k->timer_cv, &k->mu, &next);
        else pthread_cond_wait(&k->timer_cv, &k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* ---- workers ---- */

/* Compiles j (not holding the mutex); fills result or error fields for the caller to
 * publish. */
static void run_job(rx_compiler *k, rx_job *j, json_t **result, json_t **error, int *status,
                    int *retry_after)
{
    rx_artifact_info info;
    int hit = lookup_cached(k, j->key, j->request_id, false, &info);
    if (hit == 1) {
        *result = result_json(&info, j->key, j->target, j->opt_level, true, 0);
        return;
    }
    rx_cc_opts cc = {0};
    cc.timeout_s = k->cfg->compile_timeout_s;
    cc.tmpdir = k->ccdir;
    rx_build_opts bo = {0};
    bo.target = j->target;
    bo.opt_level = j->opt_level;
    rx_compile_names names;
    rx_compile_opts_apply(&j->opts, &bo, &names);
    bo.cc = &cc;
    bo.max_memory = (size_t)k->cfg->max_compile_memory;
    bo.max_module_bytes = (size_t)k->cfg->max_module_bytes; /* parsed against it already */
    rx_build_result br;
    rx_diags d;
    rx_diags_init(&d);
    rx_metrics_compile(k->metrics, 0, 0);
    rx_log_json(k->log, RX_LOG_INFO,
                json_pack("{s:s, s:s, s:s, s:s}", "event", "compile_start", "request_id",
                          j->request_id, "job", j->id, "key", j->key));
    double t0 = rx_now_ms();
    bool ok = rx_build_run(j->module, j->module_n, &bo, &br, &d);
    double ms = rx_now_ms() - t0;
    rx_metrics_compile(k->metrics, ok ? 1 : 2, ms / 1e3);
    if (ok) {
        char *meta = rx_meta_text(br.rxa, br.rxa_n);
        char err[256];
        if (rx_store_put(k->store, j->key, j->target, br.rxa, br.rxa_n, meta, &info, err,
                         sizeof err)) {
            *status = 500;
            *error = rx_error_json("store_error", err);
            ok = false;
        } else {
            *result = result_json(&info, j->key, j->target, j->opt_level, false, ms);
            json_object_set_new(*result, "passes", rx_build_times_json(&br)); /* not in the bytes */
        }
        free(meta);
    } else {
        const char *stage = br.failed ? br.failed : "build";
        bool timeout = d.list.n && strstr(d.list.items[0].msg, "timed out");
        bool user = !strcmp(stage, "options") || !strcmp(stage, "parse") ||
                    !strcmp(stage, "deduce") || !strcmp(stage, "legalize") ||
                    !strcmp(stage, "lower_vm") || !strcmp(stage, "memory");
        *status = timeout ? 503 : user ? 400 : 500;
        if (timeout) *retry_after = 60;
        *error = diags_error(timeout ? "compile_timeout"
                             : (!strcmp(stage, "parse") || !strcmp(stage, "deduce"))
                                 ? "invalid_module"
                                 : "compile_failed",
                             stage, &d);
    }
    rx_log_json(k->log, ok ? RX_LOG_INFO : RX_LOG_WARN,
                json_pack("{s:s, s:s, s:s, s:s, s:b, s:f, s:o, s:s?, s:s?}", "event",
                          "compile_end", "request_id", j->request_id, "job", j->id, "key",
                          j->key, "ok", ok, "compile_ms", (double)(int64_t)(ms * 1000) / 1000,
                          "passes", rx_build_times_json(&br), "stage", ok ? NULL : br.failed,
                          "error", !ok && d.list.n ? d.list.items[0].msg : NULL));
    free(br.rxa);
    rx_diags_free(&d);
    /* The build's arenas are freed; hand the pages back to the system so a large
     * compile does not stay in the server's resident size (glibc keeps freed heap
     * otherwise). */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

static void *worker_main(void *arg)
{
    rx_compiler *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->stopping && k->len == 0) pthread_cond_wait(&k->work_cv, &k->mu);
        if (k->len == 0) break; /* stopping and nothing queued */
        rx_job *j = k->ring[k->head];
        k->head = (k->head + 1) % k->cap;
        k->len--;
        j->state = RX_JOB_RUNNING;
        k->busy++;
        pthread_mutex_unlock(&k->mu);

        json_t *result = NULL, *error = NULL;
        int status = 0, retry_after = 0;
        run_job(k, j, &result, &error, &status, &retry_after);

        pthread_mutex_lock(&k->mu);
        k->busy--;
        if (result) {
            j->state = RX_JOB_DONE;
            j->result = result;
        } else {
            j->state = RX_JOB_FAILED;
            j->error = error ? error : rx_error_json("internal", "compile failed");
            j->err_status = status ? status : 500;
            j->retry_after = retry_after;
        }
        free(j->module);
        j->module = NULL;
        wake_job_locked(k, j);
        job_unref_locked(j); /* the queue's reference */
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* ---- the C compiler's scratch space ---- */

/* Makes DATA/cc-tmp (0700) and removes what a killed server left there: the private
 * "rxcc.*" directories of interrupted C compiles (flat: source, object, log). Never
 * follows a symbolic link. Returns false with a message when the directory is unusable. */
static bool prepare_ccdir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
        return false;
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
        return false;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "rxcc.", 5)) continue;
        int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        DIR *sd = fdopendir(sub);
        if (!sd) {
            close(sub);
            continue;
        }
        struct dirent *f;
        while ((f = readdir(sd)))
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) unlinkat(sub, f->d_name, 0);
        closedir(sd);
        unlinkat(dfd, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
    return true;
}

/* ---- the service ---- */

rx_compiler *rx_compiler_new(const rx_config *c, rx_store *store, rx_log *log,
                             rx_metrics *metrics, char *err, size_t errlen)
{
    rx_compiler *k = calloc(1, sizeof *k);
    RX_ASSERT(k);
    k->cfg = c;
    k->store = store;
    k->log = log;
    k->metrics = metrics;
    k->cap = c->queue;
    k->ring = calloc((size_t)k->cap, sizeof *k->ring);
    k->threads = calloc((size_t)c->workers, sizeof *k->threads);
    RX_ASSERT(k->ring && k->threads);
    rx_sb dir = {0};
    rx_sb_printf(&dir, "%s/cc-tmp", c->data_dir);
    k->ccdir = rx_sb_take(&dir);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->work_cv, NULL);
    /* waiters use timed waits on CLOCK_MONOTONIC: immune to wall clock jumps */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->timer_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!prepare_ccdir(k->ccdir, err, errlen)) {
        rx_compiler_free(k);
        return NULL;
    }
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setstacksize(&ta, RX_SERVER_THREAD_STACK);
    for (int i = 0; i < c->workers; i++) {
        int e = pthread_create(&k->threads[i], &ta, worker_main, k);
        if (e) {
            pthread_attr_destroy(&ta);
            snprintf(err, errlen, "cannot start compile worker: %s", strerror(e));
            rx_compiler_free(k);
            return NULL;
        }
        k->nthreads++;
    }
    pthread_attr_destroy(&ta);
    int e = pthread_create(&k->timer, NULL, timer_main, k);
    if (e) {
        snprintf(err, errlen, "cannot start the compile timer: %s", strerror(e));
        rx_compiler_free(k);
        return NULL;
    }
    k->timer_started = true;
    return k;
}

static void reply_job_locked(const rx_job *j, rx_compile_reply *out)
{
    if (j->state == RX_JOB_DONE) {
        out->status = 200;
        out->body = json_deep_copy(j->result);
    } else {
        out->status = j->err_status;
        out->body = json_pack("{s:O}", "error", j->error);
        out->retry_after = j->retry_after;
    }
}

static void reply_error(rx_compile_reply *out, int status, const char *code, const char *msg,
                        int retry_after)
{
    out->status = status;
    out->body = json_pack("{s:o}", "error", rx_error_json(code, msg));
    out->retry_after = retry_after;
}

/* jansson's dump callback for counting: stops once past the limit. */
typedef struct size_count {
    size_t n, limit;
} size_count;

static int count_bytes(const char *buf, size_t size, void *data)
{
    (void)buf;
    size_count *c = data;
    c->n += size;
    return c->n > c->limit ? -1 : 0;
}

/* Step 1: the key, from the parsed module when the caller has it (no second parse) or
 * from the text. False with diagnostics in d. */
static bool request_key(rx_compiler *k, const rx_compile_req *r, char key[65], rx_diags *d)
{
    rx_build_opts bo = {0};
    bo.target = r->target;
    bo.opt_level = r->opt_level;
    rx_compile_names names;
    rx_compile_opts_apply(&r->opts, &bo, &names);
    rx_read_opts ro = {0};
    ro.max_bytes = (size_t)k->cfg->max_module_bytes;
    ro.max_depth = k->cfg->max_json_depth;
    if (!r->module_json) return rx_module_key(r->module, r->module_n, &bo, &ro, key, d);
    /* max_module_bytes bounds the module's compact text, as it would be queued. A compact
     * dump is at most 7 times its source (a 3-byte real such as 0.1 prints as 19), so
     * only a module that could be near the limit is counted. */
    if ((uint64_t)r->module_n > (uint64_t)k->cfg->max_module_bytes / 7) {
        size_count c = {0, ro.max_bytes};
        if (json_dump_callback(r->module_json, count_bytes, &c, JSON_COMPACT) || c.n > c.limit) {
            rx_diag_add(d, "", "document is over the limit of %zu bytes", ro.max_bytes);
            return false;
        }
    }
    rx_module *m = rx_json_read_value(r->module_json, &ro, d);
    if (!m) return false;
    bool ok = rx_deduce_module(m, d) && rx_build_key(m, &bo, key, d);
    rx_module_free(m);
    return ok;
}

json_t *rx_compile_onnx_module(const char *b64, size_t n, json_t **error)
{
    uint8_t *bytes = NULL;
    size_t nb = 0;
    *error = NULL;
    if (!rx_base64_decode(b64, n, &bytes, &nb)) {
        *error = rx_error_json("bad_request", "\"onnx\" must be a base64 ONNX model");
        return NULL;
    }
    rx_diags d;
    rx_diags_init(&d);
    rx_sb text = {0};
    json_t *m = NULL;
    if (rx_onnx_to_json(bytes, nb, NULL, &text, &d)) {
        json_error_t je;
        m = json_loadb(rx_sb_str(&text), text.n, 0, &je);
    }
    if (!m) *error = diags_error("invalid_module", "import", &d);
    free(bytes);
    rx_sb_free(&text);
    rx_diags_free(&d);
    return m;
}

void rx_compiler_submit(rx_compiler *k, const rx_compile_req *r, const char *request_id,
                        rx_compile_reply *out, rx_job **pending)
{
    memset(out, 0, sizeof *out);
    *pending = NULL;
    /* Step 1: the key (validates the module) */
    char key[65];
    rx_diags d;
    rx_diags_init(&d);
    if (!request_key(k, r, key, &d)) {
        out->status = 400;
        out->body = json_pack("{s:o}", "error", diags_error("invalid_module", NULL, &d));
        rx_diags_free(&d);
        return;
    }
    rx_diags_free(&d);

    /* Step 2: the cache */
    rx_artifact_info info;
    int hit = lookup_cached(k, key, request_id, true, &info);
    if (hit < 0) {
        reply_error(out, 500, "store_error", "the artifact store failed (see the log)", 0);
        return;
    }
    json_t *cached = hit ? result_json(&info, key, r->target, r->opt_level, true, 0) : NULL;
    if (cached && !r->async) {
        out->status = 200;
        out->body = cached;
        return;
    }
    /* a miss queues the module's text: made here, outside the mutex, only when needed */
    char *text = NULL;
    size_t text_n = r->module_n;
    if (!cached && r->module_json) {
        text = json_dumps(r->module_json, JSON_COMPACT);
        if (!text) {
            reply_error(out, 503, "out_of_memory", "cannot hold the module now", 5);
            return;
        }
        text_n = strlen(text);
    }

    /* Steps 3 and 4: join or enqueue */
    pthread_mutex_lock(&k->mu);
    if (k->stopping) {
        pthread_mutex_unlock(&k->mu);
        json_decref(cached);
        free(text);
        reply_error(out, 503, "shutting_down", "the server is shutting down", 5);
        return;
    }
    rx_job *j = NULL;
    if (cached) {
        j = job_new(key, r, request_id);
        j->state = RX_JOB_DONE;
        j->result = cached;
        table_add_locked(k, j);
    } else if ((j = inflight_find_locked(k, key, r->target))) {
        rx_metrics_inc(k->metrics, &k->metrics->singleflight_joins);
    } else if (k->len == k->cap) {
        pthread_mutex_unlock(&k->mu);
        free(text);
        rx_metrics_inc(k->metrics, &k->metrics->queue_rejected);
        reply_error(out, 503, "queue_full", "the compile queue is full; retry later", 5);
        return;
    } else {
        j = job_new(key, r, request_id);
        if (text) {
            j->module = text;
            text = NULL;
        } else {
            j->module = malloc(r->module_n + 1);
            RX_ASSERT(j->module);
            memcpy(j->module, r->module, r->module_n);
            j->module[r->module_n] = '\0';
        }
        j->module_n = text_n;
        table_add_locked(k, j);
        j->refs++; /* the queue's */
        k->ring[(k->head + k->len) % k->cap] = j;
        k->len++;
        pthread_cond_signal(&k->work_cv);
    }
    free(text);
    if (r->async) {
        out->status = 202;
        out->body = json_pack("{s:s, s:s}", "job", j->id, "status", state_name(j->state));
        pthread_mutex_unlock(&k->mu);
        return;
    }

    /* Step 5: the caller waits (rx_compiler_wait) without holding its thread */
    j->refs++;
    *pending = j;
    pthread_mutex_unlock(&k->mu);
}

void rx_compiler_wait(rx_compiler *k, rx_waiter *w, rx_job *job, void (*wake)(void *ctx),
                      void *ctx)
{
    pthread_mutex_lock(&k->mu);
    w->job = job;
    w->wake = wake;
    w->ctx = ctx;
    w->timed_out = false;
    clock_gettime(CLOCK_MONOTONIC, &w->deadline);
    w->deadline.tv_sec += 2 * k->cfg->compile_timeout_s + 5;
    if (job->state == RX_JOB_DONE || job->state == RX_JOB_FAILED) {
        wake(ctx);
    } else {
        w->prev = NULL;
        w->next = k->waiters;
        if (k->waiters) k->waiters->prev = w;
        k->waiters = w;
        w->linked = true;
        pthread_cond_signal(&k->timer_cv);
    }
    pthread_mutex_unlock(&k->mu);
}

void rx_compiler_wait_end(rx_compiler *k, rx_waiter *w, rx_compile_reply *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!w->job) return;
    pthread_mutex_lock(&k->mu);
    waiter_unlink_locked(k, w);
    rx_job *j = w->job;
    w->job = NULL;
    if (out) {
        if (j->state == RX_JOB_DONE || j->state == RX_JOB_FAILED)
            reply_job_locked(j, out);
        else
            reply_error(out, 503, "timeout",
                        "the compile did not finish in time; it goes on: retry", 5);
    }
    job_unref_locked(j);
    pthread_mutex_unlock(&k->mu);
}

json_t *rx_compiler_job_json(rx_compiler *k, const char *id)
{
    pthread_mutex_lock(&k->mu);
    rx_job *j = table_find_locked(k, id);
    json_t *o = NULL;
    if (j) {
        o = json_pack("{s:s, s:s}", "job", j->id, "status", state_name(j->state));
        if (j->state == RX_JOB_DONE) json_object_set(o, "result", j->result);
        if (j->state == RX_JOB_FAILED) json_object_set(o, "error", j->error);
    }
    pthread_mutex_unlock(&k->mu);
    return o;
}

void rx_compiler_gauges(rx_compiler *k, rx_metrics_gauges *g)
{
    pthread_mutex_lock(&k->mu);
    g->queue_depth = k->len;
    g->queue_cap = k->cap;
    g->workers_busy = k->busy;
    g->workers = k->nthreads;
    g->jobs = k->table.n;
    pthread_mutex_unlock(&k->mu);
}

void rx_compiler_stop(rx_compiler *k)
{
    pthread_mutex_lock(&k->mu);
    if (k->stopping && k->nthreads == 0) {
        pthread_mutex_unlock(&k->mu);
        return;
    }
    k->stopping = true;
    int cancelled = k->len;
    while (k->len) {
        rx_job *j = k->ring[k->head];
        k->head = (k->head + 1) % k->cap;
        k->len--;
        j->state = RX_JOB_FAILED;
        j->error = rx_error_json("shutting_down", "the server shut down before this compile ran");
        j->err_status = 503;
        j->retry_after = 5;
        wake_job_locked(k, j);
        job_unref_locked(j);
    }
    pthread_cond_broadcast(&k->work_cv);
    int n = k->nthreads;
    pthread_mutex_unlock(&k->mu);
    if (cancelled) {
        char msg[64];
        snprintf(msg, sizeof msg, "%d queued compiles cancelled", cancelled);
        rx_log_event(k->log, RX_LOG_WARN, "compiles_cancelled", msg);
    }
    for (int i = 0; i < n; i++) pthread_join(k->threads[i], NULL);
    pthread_mutex_lock(&k->mu);
    k->nthreads = 0;
    /* every job has ended, so every waiter has been woken; the timer has nothing left */
    while (k->waiters) {
        rx_waiter *w = k->waiters;
        waiter_unlink_locked(k, w);
        w->wake(w->ctx);
    }
    bool timer = k->timer_started;
    k->timer_started = false;
    k->timer_stop = true;
    pthread_cond_signal(&k->timer_cv);
    pthread_mutex_unlock(&k->mu);
    if (timer) pthread_join(k->timer, NULL);
}

void rx_compiler_free(rx_compiler *k)
{
    if (!k) return;
    rx_compiler_stop(k);
    for (int i = 0; i < k->table.n; i++) job_unref_locked(k->table.items[i]);
    RX_VEC_FREE(k->table);
    pthread_cond_destroy(&k->work_cv);
    pthread_cond_destroy(&k->timer_cv);
    pthread_mutex_destroy(&k->mu);
    free(k->ring);
    free(k->threads);
    free(k->ccdir);
    free(k);
}
