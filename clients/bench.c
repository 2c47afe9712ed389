/*
 * bench.c — the remote-benchmark commands of `relax` (docs/agent.md, docs/rpc.md):
 *
 *   relax bench ARTIFACT|MODULE.json [--target cpu] [--fn main] [--shape n=128]...
 *               [--repeat R] [--number K] [--label L]... [--priority P] [--run-timeout S]
 *               [--queue-timeout S] [--in NAME=FILE.npy]... [--expect FILE.npy]...
 *               [--rtol R] [--atol A] [--json] [--no-wait]
 *   relax agents [--json]
 *   relax jobs [--status S] [--limit N] [--json]
 *   relax jobs cancel ID      (also: relax cancel ID)
 *
 * bench, step by step: Step 1 the artifact — a 64-hex id as given; a file ending in
 * .json is compiled on the server first (as `relax compile` would, a "compiled ..." note
 * on stderr); any other existing file is an .rxa whose SHA-256 is its id: when the
 * server lacks it (HEAD /v1/artifacts/<id> is 404) it is uploaded (PUT, where the server
 * checks the hash and parses it; an "uploaded ..." note on stderr); anything else of 4+
 * hex digits is a short id (resolve.c). Step 2 the request —
 * {artifact, target, function, shapes, repeat, number, labels, priority, timeout_s,
 * queue_timeout_s, inputs (base64 .npy), expected (base64 .npy), tolerance}, only what
 * was given (the server fills its defaults) — POSTed to /v1/benchmarks. Step 3 the wait
 * — GET /v1/benchmarks/<id> from 50 ms, growing by half up to 1 s; every change of
 * state is one line on stderr ("queued (position 2)", "running on lab-x86-1 (attempt
 * 1)"). Step 4 the outcome on stdout: the statistics as "key: value" lines (--json: the
 * job object); a failed job prints its error ("error: <message> (<code>)") and exits 1,
 * after printing the statistics when a failed check still carries them.
 *
 * Limits: --run-timeout and --queue-timeout are the job's run and queue limits
 * (seconds, sent as timeout_s / queue_timeout_s); the wait itself has no client-side
 * deadline unless --timeout is given, since the server ends every job within its queue
 * and run limits.
 */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_CAP                                                                                    \
    ((off_t)64 << 20) /* largest .npy file sent (the server's body limit bounds it too) */

/* ---- files ---- */

/* Reads a whole file (at most cap bytes). Returns a malloc'ed buffer or NULL (printed). */
static unsigned char *read_file(const char *path, off_t cap, size_t *n)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "error: %s: %s\n", path, f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return NULL;
    }
    if (st.st_size > cap) {
        fprintf(stderr, "error: %s: too large (%lld bytes, limit %lld)\n", path,
                (long long)st.st_size, (long long)cap);
        fclose(f);
        return NULL;
    }
    unsigned char *b = malloc((size_t)st.st_size + 1);
    size_t got = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!b || got != (size_t)st.st_size) {
        fprintf(stderr, "error: %s: cannot read it\n", path);
        free(b);
        return NULL;
    }
    *n = got;
    return b;
}

/* A file as a JSON string of its base64, when it starts with magic (NULL: any). NULL
 * (printed) when unreadable, too large or of another kind (`what` names it). */
static json_t *file_b64(const char *path, off_t cap, const char *magic, const char *what)
{
    size_t n;
    unsigned char *b = read_file(path, cap, &n);
    if (!b) return NULL;
    if (magic && (n < 10 || memcmp(b, magic, strlen(magic)))) {
        fprintf(stderr, "error: %s: not a %s file (bad magic)\n", path, what);
        free(b);
        return NULL;
    }
    rx_sb enc = {0};
    rx_base64_encode(b, n, &enc);
    free(b);
    json_t *s = json_stringn(rx_sb_str(&enc), enc.n);
    rx_sb_free(&enc);
    return s;
}

/* A .npy file as a JSON string of its base64. NULL (printed) when unreadable or not .npy. */
static json_t *npy_b64(const char *path) { return file_b64(path, NPY_CAP, "\x93NUMPY", ".npy"); }

json_t *rxc_onnx_b64(const char *path) { return file_b64(path, (off_t)1 << 30, NULL, "ONNX"); }

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Step 1 for a file: HEAD the id; upload the bytes when the server lacks them. */
static int upload_if_missing(rxc_conn *c, const char *file, const char *id,
                             const unsigned char *b, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/artifacts/%s", id);
    rxc_resp r;
    if (rxc_request(c, "HEAD", path, NULL, NULL, NULL, 0, &r)) return 1;
    long st = r.status;
    rxc_resp_free(&r);
    if (st == 200) return 0;
    if (st != 404) {
        fprintf(stderr, "error: cannot tell whether relaxd holds %s (HTTP %ld on HEAD %s)\n",
                file, st, path);
        return 1;
    }
    if (rxc_put_bytes(c, path, b, n, &r)) return 1;
    if (r.status != 201 && r.status != 200) {
        rxc_http_error(&r);
        rxc_resp_free(&r);
        return 1;
    }
    rxc_resp_free(&r);
    fprintf(stderr, "uploaded %s: artifact %s (%zu bytes)\n", file, id, n);
    return 0;
}

/* Step 1: the artifact id into id[65]. */
static int resolve_artifact(rxc_conn *c, const rxc_bench_opts *o, char *id)
{
    if (rxc_valid_id(o->what)) {
        snprintf(id, 65, "%s", o->what);
        return 0;
    }
    if (ends_with(o->what, ".json")) {
        json_t *res;
        if (rxc_compile_file(c, o->what, o->target, o->opt_level, 0, &res)) return 1;
        snprintf(id, 65, "%s", json_string_value(json_object_get(res, "artifact")));
        int cached = json_is_true(json_object_get(res, "cached"));
        fprintf(stderr, "%s %s: artifact %s\n", cached ? "cached" : "compiled", o->what, id);
        json_decref(res);
        return 0;
    }
    struct stat sb;
    if (stat(o->what, &sb) && rxc_id_prefix(o->what)) return rxc_resolve_id(c, o->what, id);
    size_t n;
    unsigned char *b = read_file(o->what, (off_t)RXC_ARTIFACT_CAP, &n);
    if (!b) return 1;
    rx_sha256_hex(b, n, id);
    int rc = upload_if_missing(c, o->what, id, b, n);
    free(b);
    return rc;
}

/* ---- the request ---- */

/* Splits "NAME=VALUE" (already checked by relax.c) into name[cap] and returns VALUE. */
static const char *split_kv(const char *s, char *name, size_t cap)
{
    const char *eq = strchr(s, '=');
    size_t n = (size_t)(eq - s);
    if (n >= cap) n = cap - 1;
    memcpy(name, s, n);
    name[n] = 0;
    return eq + 1;
}

/* Step 2: the body of POST /v1/benchmarks; NULL (printed) on a bad file. */
static json_t *request_body(const rxc_bench_opts *o, const char *id)
{
    /* The job's target is the kind ("vulkan,max_threads=64" compiles for those options,
     * and any agent offering vulkan runs it). Without --target the server takes the
     * artifact's own kind (a vulkan .rxa runs on a vulkan agent). */
    char kind[65];
    snprintf(kind, sizeof kind, "%.*s", (int)strcspn(o->target, ","), o->target);
    json_t *b = json_pack("{s:s}", "artifact", id);
    if (!b) return NULL;
    if (o->target_given) json_object_set_new(b, "target", json_string(kind));
    if (o->fn) json_object_set_new(b, "function", json_string(o->fn));
    if (o->nshapes) {
        json_t *sh = json_object();
        for (int i = 0; i < o->nshapes; i++) {
            char name[256];
            const char *v = split_kv(o->shapes[i], name, sizeof name);
            json_object_set_new(sh, name, json_integer(strtoll(v, NULL, 10)));
        }
        json_object_set_new(b, "shapes", sh);
    }
    if (o->repeat) json_object_set_new(b, "repeat", json_integer(o->repeat));
    if (o->number) json_object_set_new(b, "number", json_integer(o->number));
    if (o->nlabels) {
        json_t *l = json_array();
        for (int i = 0; i < o->nlabels; i++) json_array_append_new(l, json_string(o->labels[i]));
        json_object_set_new(b, "labels", l);
    }
    if (o->has_priority) json_object_set_new(b, "priority", json_integer(o->priority));
    if (o->timeout_s) json_object_set_new(b, "timeout_s", json_integer(o->timeout_s));
    if (o->queue_timeout_s)
        json_object_set_new(b, "queue_timeout_s", json_integer(o->queue_timeout_s));
    if (o->nins) {
        json_t *in = json_object();
        json_object_set_new(b, "inputs", in);
        for (int i = 0; i < o->nins; i++) {
            char name[256];
            const char *file = split_kv(o->ins[i], name, sizeof name);
            json_t *s = npy_b64(file);
            if (!s) {
                json_decref(b);
                return NULL;
            }
            json_object_set_new(in, name, s);
        }
    }
    if (o->nexpect) {
        json_t *ex = json_array();
        json_object_set_new(b, "expected", ex);
        for (int i = 0; i < o->nexpect; i++) {
            json_t *s = npy_b64(o->expect[i]);
            if (!s) {
                json_decref(b);
                return NULL;
            }
            json_array_append_new(ex, s);
        }
    }
    if (o->rtol >= 0 || o->atol >= 0) {
        json_t *t = json_object();
        if (o->rtol >= 0) json_object_set_new(t, "rtol", json_real(o->rtol));
        if (o->atol >= 0) json_object_set_new(t, "atol", json_real(o->atol));
        json_object_set_new(b, "tolerance", t);
    }
    return b;
}

/* ---- the wait and the outcome ---- */

static const char *str_or(const json_t *o, const char *k, const char *def)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : def;
}

/* Prints "key: value" lines of a benchmark result. */
static void print_result(const char *job, const json_t *j, const json_t *res)
{
    printf("job: %s\n", job);
    printf("status: %s\n", str_or(j, "status", "?"));
    printf("agent: %s\n", str_or(j, "agent", "-"));
    printf("artifact: %s\n", str_or(j, "artifact", "?"));
    printf("function: %s\n", str_or(j, "function", "?"));
    static const char *const ms[] = {"median_ms", "mean_ms",   "min_ms",
                                     "max_ms",    "stddev_ms", "load_ms"};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        const json_t *v = json_object_get(res, ms[i]);
        if (json_is_number(v)) printf("%s: %.6f\n", ms[i], json_number_value(v));
    }
    static const char *const ints[] = {"repeat", "number", "kernels", "peak_bytes"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const json_t *v = json_object_get(res, ints[i]);
        if (json_is_number(v)) printf("%s: %.0f\n", ints[i], json_number_value(v));
    }
    const json_t *chk = json_object_get(res, "check");
    if (json_is_string(chk)) {
        printf("check: %s\n", json_string_value(chk));
        printf("max_abs_error: %.6g\n", json_number_value(json_object_get(res, "max_abs_error")));
        printf("max_rel_error: %.6g\n", json_number_value(json_object_get(res, "max_rel_error")));
    }
    const json_t *q = json_object_get(j, "queue_ms"), *r = json_object_get(j, "run_ms");
    if (json_is_number(q)) printf("queue_ms: %.0f\n", json_number_value(q));
    if (json_is_number(r)) printf("run_ms: %.0f\n", json_number_value(r));
    printf("attempts: %.0f\n", json_number_value(json_object_get(j, "attempts")));
}

/* One progress line per change of state, position or agent. */
static void progress_line(rxc_conn *c, const char *job, const json_t *j, char *last, size_t cap)
{
    char line[512];
    const char *st = str_or(j, "status", "?");
    if (!strcmp(st, "queued")) {
        const json_t *pos = json_object_get(j, "position");
        if (json_is_integer(pos))
            snprintf(line, sizeof line, "queued (position %lld)",
                     (long long)json_integer_value(pos));
        else
            snprintf(line, sizeof line, "queued");
    } else if (!strcmp(st, "running")) {
        snprintf(line, sizeof line, "running on %s (attempt %lld)", str_or(j, "agent", "?"),
                 (long long)json_integer_value(json_object_get(j, "attempts")));
    } else {
        return;
    }
    if (!strcmp(line, last)) return;
    snprintf(last, cap, "%s", line);
    rxc_progress_clear(&c->progress);
    fprintf(stderr, "job %s: %s\n", job, line);
}

/* Step 3-4: waits for job and prints its outcome. */
static int wait_bench(rxc_conn *c, const char *job, int json)
{
    char path[192], last[512] = "";
    snprintf(path, sizeof path, "/v1/benchmarks/%s", job);
    double delay = 0.05;
    for (;;) {
        json_t *j = rxc_get_json(c, path, "benchmark");
        if (!j) return 1;
        const char *st = str_or(j, "status", "");
        if (!strcmp(st, "queued") || !strcmp(st, "running")) {
            c->progress.state = st[0] == 'q' ? "queued" : "running";
            progress_line(c, job, j, last, sizeof last);
            json_decref(j);
            rxc_sleep(c, delay);
            delay = delay * 1.5 < 1.0 ? delay * 1.5 : 1.0;
            continue;
        }
        rxc_progress_clear(&c->progress);
        int rc = 1;
        const json_t *res = json_object_get(j, "result"), *err = json_object_get(j, "error");
        if (json) {
            char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
            if (s) puts(s);
            free(s);
        } else if (json_is_object(res)) {
            print_result(job, j, res);
        }
        fflush(stdout);
        if (!strcmp(st, "done")) {
            rc = json_is_object(res) ? 0 : 1;
            if (rc)
                fprintf(stderr,
                        "error: bad response from relaxd (benchmark %s): done without a result\n",
                        job);
        } else if (!strcmp(st, "failed") && json_is_object(err)) {
            rxc_print_error_obj(err, 0);
        } else if (!strcmp(st, "cancelled")) {
            fprintf(stderr, "error: benchmark job %s was cancelled\n", job);
        } else {
            fprintf(stderr, "error: benchmark job %s ended with status '%s'\n", job, st);
        }
        json_decref(j);
        return rc;
    }
}

int rxc_cmd_bench(rxc_conn *c, const rxc_bench_opts *o)
{
    char id[65];
    if (resolve_artifact(c, o, id)) return 1;
    json_t *req = request_body(o, id);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return 1;
    rxc_resp r;
    int rc = rxc_request(c, "POST", "/v1/benchmarks", body, NULL, NULL, 0, &r);
    free(body);
    if (rc) return 1;
    if (r.status != 202 && r.status != 200) {
        json_t *e = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        const char *code = json_string_value(json_object_get(json_object_get(e, "error"), "code"));
        rxc_http_error(&r);
        if (r.status == 404 && code && !strcmp(code, "not_found") && rxc_valid_id(o->what))
            fprintf(stderr,
                    "  (relaxd does not hold it: give the .rxa file, which is uploaded, or the "
                    "module: `relax bench MODULE.json`)\n");
        json_decref(e);
        rxc_resp_free(&r);
        return 1;
    }
    json_t *j = rxc_resp_json(&r, "benchmark");
    rxc_resp_free(&r);
    if (!j) return 1;
    const char *job = json_string_value(json_object_get(j, "job"));
    char jid[160];
    if (!job || strlen(job) >= sizeof jid ||
        strspn(job, "0123456789abcdefghijklmnopqrstuvwxyz-_") != strlen(job)) {
        fputs("error: bad response from relaxd (benchmark): no valid job id\n", stderr);
        json_decref(j);
        return 1;
    }
    snprintf(jid, sizeof jid, "%s", job);
    json_decref(j);
    if (o->no_wait) {
        printf("%s\n", jid);
        return 0;
    }
    fprintf(stderr, "job %s: submitted\n", jid);
    rxc_progress_start(&c->progress, "benchmark");
    return wait_bench(c, jid, o->json);
}

/* ---- agents, jobs, cancel ---- */

/* "a,b,c" of a string array into buf. */
static const char *joined(const json_t *arr, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(arr) && len < n - 1; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "",
                                json_string_value(json_array_get(arr, i))
                                    ? json_string_value(json_array_get(arr, i))
                                    : "?");
    if (!buf[0]) snprintf(buf, n, "-");
    return buf;
}

static int print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    if (s) puts(s);
    free(s);
    return s ? 0 : 1;
}

int rxc_cmd_agents(rxc_conn *c, int json)
{
    json_t *j = rxc_get_json(c, "/v1/agents", "agents");
    if (!j) return 1;
    if (json) {
        int rc = print_json(j);
        json_decref(j);
        return rc;
    }
    const json_t *agents = json_object_get(j, "agents");
    printf("%-20s %-8s %-10s %-28s %5s %10s %9s %6s %s\n", "NAME", "STATE", "TARGETS", "LABELS",
           "CORES", "MEMORY", "SEEN", "DONE", "JOB");
    for (size_t i = 0; i < json_array_size(agents); i++) {
        const json_t *a = json_array_get(agents, i);
        char t[128], l[256], mem[32], seen[32];
        rx_format_bytes(json_number_value(json_object_get(a, "memory_bytes")), mem, sizeof mem);
        snprintf(seen, sizeof seen, "%.1fs ago",
                 json_number_value(json_object_get(a, "last_seen_ms_ago")) / 1000);
        printf("%-20s %-8s %-10s %-28s %5.0f %10s %9s %6.0f %s\n", str_or(a, "name", "?"),
               str_or(a, "state", "?"), joined(json_object_get(a, "targets"), t, sizeof t),
               joined(json_object_get(a, "labels"), l, sizeof l),
               json_number_value(json_object_get(a, "cores")), mem, seen,
               json_number_value(json_object_get(a, "jobs_done")), str_or(a, "job", "-"));
        const json_t *devs = json_object_get(a, "devices"); /* one line per GPU device */
        for (size_t k = 0; k < json_array_size(devs); k++) {
            const json_t *d = json_array_get(devs, k);
            rx_format_bytes(json_number_value(json_object_get(d, "global_bytes")), mem, sizeof mem);
            printf("  %s device %.0f: %s (%s, %s, %.0f threads per group)\n",
                   str_or(d, "target", "?"), json_number_value(json_object_get(d, "id")),
                   str_or(d, "name", "?"), str_or(d, "platform", "?"), mem,
                   json_number_value(json_object_get(d, "max_threads")));
        }
    }
    if (!json_array_size(agents)) printf("(no agents registered)\n");
    json_decref(j);
    return 0;
}

int rxc_cmd_jobs(rxc_conn *c, const char *status, int limit, int json)
{
    char path[160];
    int n = snprintf(path, sizeof path, "/v1/benchmarks");
    char sep = '?';
    if (status) {
        n += snprintf(path + n, sizeof path - (size_t)n, "%cstatus=%s", sep, status);
        sep = '&';
    }
    if (limit > 0) snprintf(path + n, sizeof path - (size_t)n, "%climit=%d", sep, limit);
    json_t *j = rxc_get_json(c, path, "jobs");
    if (!j) return 1;
    if (json) {
        int rc = print_json(j);
        json_decref(j);
        return rc;
    }
    const json_t *jobs = json_object_get(j, "jobs");
    printf("%-32s %-9s %-6s %-16s %-16s %4s %12s %s\n", "JOB", "STATUS", "TARGET", "FUNCTION",
           "AGENT", "TRY", "MEDIAN_MS", "ERROR");
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const json_t *b = json_array_get(jobs, i), *res = json_object_get(b, "result");
        const json_t *med = json_object_get(res, "median_ms");
        char m[32] = "-";
        if (json_is_number(med)) snprintf(m, sizeof m, "%.4f", json_number_value(med));
        printf("%-32s %-9s %-6s %-16s %-16s %4.0f %12s %s\n", str_or(b, "id", "?"),
               str_or(b, "status", "?"), str_or(b, "target", "?"), str_or(b, "function", "?"),
               str_or(b, "agent", "-"), json_number_value(json_object_get(b, "attempts")), m,
               str_or(json_object_get(b, "error"), "code", ""));
    }
    if (!json_array_size(jobs)) printf("(no benchmark jobs)\n");
    json_decref(j);
    return 0;
}

int rxc_cmd_cancel(rxc_conn *c, const char *id, int json)
{
    char path[192];
    if (!*id || strlen(id) > 128 ||
        strspn(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.") !=
            strlen(id)) {
        fprintf(stderr, "error: '%.200s' is not a job id\n", id);
        return 1;
    }
    snprintf(path, sizeof path, "/v1/benchmarks/%s/cancel", id);
    rxc_resp r;
    if (rxc_request(c, "POST", path, "{}", NULL, NULL, 0, &r)) return 1;
    if (r.status != 200) {
        rxc_http_error(&r);
        rxc_resp_free(&r);
        return 1;
    }
    json_t *j = rxc_resp_json(&r, "cancel");
    rxc_resp_free(&r);
    if (!j) return 1;
    if (json)
        print_json(j);
    else
        printf("%s  %s\n", id, str_or(j, "status", "?"));
    json_decref(j);
    return 0;
}
