/*
 * relax — the command-line client of relaxd (docs/server.md, "The relax CLI").
 *
 *   relax compile MODULE.json [--target cpu] [--opt-level N] [-o OUT.rxa] [--async] [--json]
 *                 (MODEL.onnx too: sent as {"onnx": base64}, imported by relaxd)
 *   relax fetch ID -o OUT.rxa
 *   relax meta ID
 *   relax status
 *   relax bench ARTIFACT|MODULE.json [--target cpu] [--fn F] [--shape n=128]... [--repeat R]
 *               [--number K] [--label L]... [--priority P] [--run-timeout S] [--queue-timeout S]
 *               [--in NAME=FILE.npy]... [--expect FILE.npy]... [--rtol R] [--atol A]
 *               [--json] [--no-wait]                                    (bench.c)
 *   relax agents [--json]; relax jobs [--status S] [--limit N] [--json];
 *   relax jobs cancel ID (or relax cancel ID)                           (bench.c)
 *   global: --server URL (env RELAX_SERVER, default http://127.0.0.1:8080)
 *           --token T (env RELAX_TOKEN)  --timeout S (default 600, 0: none)
 *
 * The driver: Step 1 parse the command line (options before or after the command, either
 * `--opt V` or `--opt=V`; anything malformed exits 2 with "error: ... (see relax --help)");
 * Step 2 set up the connection (http.c) — the token from --token or RELAX_TOKEN, the
 * deadline from --timeout covering the whole command; Step 3 run the command.
 *
 * compile reads the module locally (so a JSON syntax error is reported with its file,
 * line and column without a round trip), posts {"module", "target", "options":
 * {"opt_level"}, "async"} to /v1/compile and gets either the result (200) or a job (202:
 * always with --async, and whenever the server chooses to queue). Jobs are polled at
 * GET /v1/jobs/<id> with a backoff from 100 ms growing by half up to 2 s. The result's
 * artifact id goes to stdout as one line, "<id>  cached" or "<id>  compiled in N ms (B
 * bytes)" (--json prints the server's result object instead, for scripts that want the
 * key or the size). With -o the artifact is then downloaded and verified (download.c).
 * fetch is that download alone; meta pretty-prints /v1/artifacts/<id>/meta; status checks
 * /healthz and summarizes /metrics (metrics.c). The benchmark commands live in bench.c;
 * --timeout is the command's own limit everywhere; bench has none unless it is given
 * (the wait is bounded by the job's queue and run limits, --queue-timeout and
 * --run-timeout, which the server enforces). An artifact id may be shortened to an
 * unambiguous prefix of at least 4 hex digits (resolve.c).
 *
 * Output discipline: stdout carries only results (the id line, meta JSON, status lines);
 * stderr carries errors, "wrote OUT" notes, and the elapsed-time line when it is a
 * terminal. Exit status: 0 success, 1 a failure (one "error:" line on stderr, plus
 * "  path: message" lines for located module errors), 2 bad usage.
 */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_SERVER "http://127.0.0.1:8080"
#define DEFAULT_TIMEOUT_S 600.0
#define MODULE_CAP ((off_t)64 << 20) /* largest module file read */
#define MAX_POS 4                    /* positional arguments kept (command + operands) */

typedef struct cli {
    const char *pos[MAX_POS]; /* command and its operands */
    int npos;
    const char *server;       /* --server, else RELAX_SERVER, else DEFAULT_SERVER */
    const char *token;        /* --token, else RELAX_TOKEN, else NULL */
    double timeout;           /* --timeout seconds; 0: none */
    int timeout_set;          /* --timeout was given */
    const char *target;       /* compile/bench --target */
    int target_given;         /* --target was given */
    int opt_level;            /* compile/bench --opt-level; -1: the server's default */
    const char *out;          /* compile/fetch -o */
    int async;                /* compile --async */
    int json;                 /* compile/bench/agents/jobs --json */
    const char *status;       /* jobs --status */
    int limit;                /* jobs --limit; 0: the server's default */
    int bench_only;           /* an option of bench alone was given (its name) */
    const char *bench_opt;    /* that option, for the message */
    rxc_bench_opts b;         /* bench's options */
} cli;

static void usage(FILE *f)
{
    fputs("usage: relax [options] COMMAND [args]\n"
          "\n"
          "commands:\n"
          "  compile MODULE.json [--target cpu] [--opt-level 0..3] [-o OUT.rxa] [--async] [--json]\n"
          "                     compile on the server; prints '<artifact id>  cached|compiled ...'\n"
          "                     (--json: the server's result object); -o also downloads the\n"
          "                     artifact and checks its SHA-256 against the id\n"
          "  fetch ID -o OUT.rxa  download an artifact (SHA-256 verified, written atomically)\n"
          "  meta ID            print an artifact's metadata JSON\n"
          "  status             server health and cache/queue numbers from /metrics\n"
          "  bench ARTIFACT|MODULE.json [--target cpu] [--fn F] [--shape VAR=N]... [--repeat R]\n"
          "        [--number K] [--label L]... [--priority P] [--run-timeout S] [--queue-timeout S]\n"
          "        [--in NAME=FILE.npy]... [--expect FILE.npy]... [--rtol R] [--atol A]\n"
          "        [--json] [--no-wait]\n"
          "                     benchmark on a device agent: ARTIFACT is an id or an .rxa file\n"
          "                     (uploaded when the server lacks it); a .json module is compiled\n"
          "                     first. Waits, printing\n"
          "                     progress on stderr, then the statistics; --expect checks the\n"
          "                     outputs (NumPy allclose with --rtol/--atol); --run-timeout and\n"
          "                     --queue-timeout are the job's limits; --no-wait prints the job id\n"
          "  agents [--json]    the registered agents\n"
          "  jobs [--status S] [--limit N] [--json]\n"
          "                     benchmark jobs, newest first\n"
          "  jobs cancel ID, cancel ID\n"
          "                     cancel a queued or running benchmark job\n"
          "\n"
          "options:\n"
          "  --server URL       relaxd's address (env RELAX_SERVER; default " DEFAULT_SERVER ")\n"
          "  --token T          bearer token (env RELAX_TOKEN; prefer the variable: arguments\n"
          "                     are visible to other users in ps)\n"
          "  --timeout S        give up after S seconds in all (default 600, bench: none; 0: none)\n"
          "\n"
          "an artifact ID may be any unambiguous prefix of at least 4 hex digits\n"
          "  --help, --version\n"
          "\n"
          "exit status: 0 success, 1 failure (error: ... on stderr), 2 bad usage\n",
          f);
}

#define bad_usage(fmt, arg) rx_usage_error("relax", fmt, arg)

/* An integer in [lo, hi]; -1 when malformed. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* NAME=VALUE with a non-empty name of [A-Za-z0-9_.:-]... and a non-empty value. */
static int valid_kv(const char *s)
{
    const char *eq = strchr(s, '=');
    return eq && eq != s && eq[1] && (size_t)(eq - s) < 200;
}

/* The options of bench (name is the option without "=VALUE"). Returns 0, or 2 on bad
 * usage; *i advances past a separate value. */
static int parse_bench_opt(cli *o, const char *name, const char *a, int argc, char **argv, int *i,
                           const char *eq)
{
    static const char *const valued[] = {"--fn", "--shape", "--repeat", "--number", "--label",
                                         "--priority", "--queue-timeout", "--run-timeout", "--in",
                                         "--expect",
                                         "--rtol", "--atol"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(name, valued[k]);
    if (!known) return bad_usage("unknown option '%s'", a);
    const char *val;
    if (eq && a[1] == '-') {
        val = eq + 1;
    } else {
        if (*i + 1 >= argc) return bad_usage("%s needs a value", name);
        val = argv[++*i];
    }
    rxc_bench_opts *b = &o->b;
    o->bench_opt = a;
    if (!*val) return bad_usage("%s needs a value", name);
    if (!strcmp(name, "--fn")) {
        b->fn = val;
    } else if (!strcmp(name, "--shape") || !strcmp(name, "--in")) {
        int is_shape = name[2] == 's';
        const char **list = is_shape ? b->shapes : b->ins;
        int *cnt = is_shape ? &b->nshapes : &b->nins;
        if (!valid_kv(val))
            return bad_usage(is_shape ? "--shape wants VAR=N, got '%s'"
                                      : "--in wants NAME=FILE.npy, got '%s'",
                             val);
        if (is_shape) {
            int64_t v;
            char *end;
            errno = 0;
            v = strtoll(strchr(val, '=') + 1, &end, 10);
            if (*end || errno || v < 0)
                return bad_usage("--shape wants VAR=N with an integer N >= 0, got '%s'", val);
        }
        if (*cnt >= RXC_MAX_LIST) return bad_usage("too many %s options", name);
        list[(*cnt)++] = val;
    } else if (!strcmp(name, "--label") || !strcmp(name, "--expect")) {
        int is_label = name[2] == 'l';
        int *cnt = is_label ? &b->nlabels : &b->nexpect;
        if (*cnt >= RXC_MAX_LIST) return bad_usage("too many %s options", name);
        (is_label ? b->labels : b->expect)[(*cnt)++] = val;
    } else if (!strcmp(name, "--repeat") || !strcmp(name, "--number")) {
        if (parse_int(val, 1, 1000000, name[2] == 'r' ? &b->repeat : &b->number))
            return bad_usage("%s wants an integer 1..1000000", name);
    } else if (!strcmp(name, "--priority")) {
        if (parse_int(val, -1000, 1000, &b->priority))
            return bad_usage("--priority wants -1000..1000, got '%s'", val);
        b->has_priority = 1;
    } else if (!strcmp(name, "--queue-timeout")) {
        if (parse_int(val, 1, 30 * 86400, &b->queue_timeout_s))
            return bad_usage("--queue-timeout wants whole seconds 1..2592000, got '%s'", val);
    } else if (!strcmp(name, "--run-timeout")) {
        if (parse_int(val, 1, 86400, &b->timeout_s))
            return bad_usage("--run-timeout wants whole seconds 1..86400, got '%s'", val);
    } else { /* --rtol, --atol */
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (end == val || *end || errno || !(d >= 0) || !isfinite(d))
            return bad_usage("%s wants a number >= 0", name);
        if (name[2] == 'r') b->rtol = d;
        else b->atol = d;
    }
    return 0;
}

/* Returns 0 to go on, 2 on bad usage, -1 after --help/--version (exit 0). */
static int parse_args(int argc, char **argv, cli *o)
{
    o->opt_level = -1;
    o->timeout = DEFAULT_TIMEOUT_S;
    o->target = "cpu";
    o->b.rtol = o->b.atol = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--version")) {
            printf("relax %s (libcurl %s)\n", RX_VERSION, curl_version_info(CURLVERSION_NOW)->version);
            return -1;
        }
        if (!strcmp(a, "--async")) {
            o->async = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--no-wait")) {
            o->b.no_wait = 1;
            o->bench_opt = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            for (i++; i < argc; i++) {
                if (o->npos == MAX_POS) return bad_usage("unexpected argument '%s'", argv[i]);
                o->pos[o->npos++] = argv[i];
            }
            break;
        }
        if (a[0] != '-' || !a[1]) {
            if (o->npos == MAX_POS) return bad_usage("unexpected argument '%s'", a);
            o->pos[o->npos++] = a;
            continue;
        }
        /* -o V, --opt V or --opt=V */
        char name[32];
        const char *eq = strchr(a, '='), *val = NULL;
        size_t n = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof name) return bad_usage("unknown option '%s'", a);
        memcpy(name, a, n);
        name[n] = 0;
        static const char *const valued[] = {"-o", "--server", "--token", "--timeout",
                                             "--target", "--opt-level", "--status", "--limit"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(name, valued[k]);
        if (!known) {
            int r = parse_bench_opt(o, name, a, argc, argv, &i, eq);
            if (r) return r;
            continue;
        }
        if (eq && a[1] == '-') {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) return bad_usage("%s needs a value", name);
            val = argv[++i];
        }
        if (!strcmp(name, "-o")) {
            if (!*val) return bad_usage("%s needs a value", name);
            o->out = val;
        } else if (!strcmp(name, "--server")) {
            o->server = val;
        } else if (!strcmp(name, "--token")) {
            o->token = val;
        } else if (!strcmp(name, "--target")) {
            if (!*val) return bad_usage("%s needs a value", name);
            o->target = val;
            o->target_given = 1;
        } else if (!strcmp(name, "--timeout")) {
            char *end;
            errno = 0;
            double t = strtod(val, &end);
            if (end == val || *end || errno || !isfinite(t) || t < 0 || t > 1e7)
                return bad_usage("--timeout wants seconds >= 0, got '%s'", val);
            o->timeout = t;
            o->timeout_set = 1;
        } else if (!strcmp(name, "--status")) {
            if (!*val) return bad_usage("%s needs a value", name);
            o->status = val;
        } else if (!strcmp(name, "--limit")) {
            if (parse_int(val, 1, 1000, &o->limit))
                return bad_usage("--limit wants 1..1000, got '%s'", val);
        } else { /* --opt-level */
            if (strlen(val) != 1 || val[0] < '0' || val[0] > '3')
                return bad_usage("--opt-level wants 0, 1, 2 or 3, got '%s'", val);
            o->opt_level = val[0] - '0';
        }
    }
    if (!o->server) o->server = getenv("RELAX_SERVER");
    if (!o->server || !*o->server) o->server = DEFAULT_SERVER;
    if (!o->token) o->token = getenv("RELAX_TOKEN");
    if (!o->npos) {
        usage(stderr);
        return 2;
    }
    const char *cmd = o->pos[0];
    static const struct {
        const char *name; /* command */
        int min, max;     /* positional arguments with the command */
        const char *need; /* message when too few */
    } cmds[] = {{"compile", 2, 2, "%s needs a MODULE.json"},
                {"fetch", 2, 2, "%s needs an artifact ID"},
                {"meta", 2, 2, "%s needs an artifact ID"},
                {"status", 1, 1, ""},
                {"bench", 2, 2, "%s needs an ARTIFACT (id or .rxa) or a MODULE.json"},
                {"agents", 1, 1, ""},
                {"jobs", 1, 3, ""},
                {"cancel", 2, 2, "%s needs a job ID"}};
    int k = -1;
    for (int i = 0; i < (int)(sizeof cmds / sizeof cmds[0]); i++)
        if (!strcmp(cmd, cmds[i].name)) k = i;
    if (k < 0) return bad_usage("unknown command '%s'", cmd);
    if (o->npos < cmds[k].min) return bad_usage(cmds[k].need, cmd);
    if (o->npos > cmds[k].max) return bad_usage("unexpected argument '%s'", o->pos[cmds[k].max]);
    int is_compile = !strcmp(cmd, "compile"), is_fetch = !strcmp(cmd, "fetch");
    int is_bench = !strcmp(cmd, "bench"), is_jobs = !strcmp(cmd, "jobs");
    if (is_jobs && o->npos > 1 && (strcmp(o->pos[1], "cancel") || o->npos != 3))
        return bad_usage(strcmp(o->pos[1], "cancel")
                             ? "unknown jobs subcommand '%s' (jobs [cancel ID])"
                             : "%s needs a job ID",
                         o->pos[1]);
    if (!is_compile && !is_bench && (o->async || o->opt_level >= 0 || strcmp(o->target, "cpu")))
        return bad_usage("--target, --opt-level and --async are options of compile (and bench), "
                         "not %s",
                         cmd);
    if (is_bench && o->async) return bad_usage("--async is an option of compile, not %s", cmd);
    if (o->json && (is_fetch || !strcmp(cmd, "meta") || !strcmp(cmd, "status")))
        return bad_usage("--json is not an option of %s", cmd);
    if ((o->status || o->limit) && !(is_jobs && o->npos == 1))
        return bad_usage("--status and --limit are options of jobs, not %s", cmd);
    if (o->bench_opt && !is_bench) return bad_usage("%s is an option of bench", o->bench_opt);
    if (o->out && !is_compile && !is_fetch) return bad_usage("-o is not an option of %s", cmd);
    if (is_fetch && !o->out) return bad_usage("%s needs -o OUT.rxa", cmd);
    if ((is_fetch || !strcmp(cmd, "meta")) && !rxc_valid_id(o->pos[1]) &&
        !rxc_id_prefix(o->pos[1]))
        return bad_usage("'%s' is not an artifact id (64 lowercase hex digits, or an "
                         "unambiguous prefix of at least 4)",
                         o->pos[1]);
    return 0;
}

/* ---- compile ---- */

/* Reads and parses the module file. NULL after printing "error: FILE:line:col: ...". */
static json_t *read_module(const char *file)
{
    struct stat st;
    if (stat(file, &st)) {
        fprintf(stderr, "error: %s: %s\n", file, strerror(errno));
        return NULL;
    }
    if (st.st_size > MODULE_CAP) {
        fprintf(stderr, "error: %s: too large (%lld bytes, limit %lld)\n", file,
                (long long)st.st_size, (long long)MODULE_CAP);
        return NULL;
    }
    json_error_t e;
    json_t *m = json_load_file(file, JSON_REJECT_DUPLICATES, &e);
    if (!m) {
        if (e.line > 0)
            fprintf(stderr, "error: %s:%d:%d: %s\n", file, e.line, e.column, e.text);
        else
            fprintf(stderr, "error: %s: %s\n", file, e.text);
    }
    return m;
}

/* True for ids relaxd hands out for jobs: short, URL-safe. */
static int valid_job_id(const char *s)
{
    return rx_is_word(s, 128);
}

/* Polls job until it is done (new reference to its result in *result) or failed
 * (error printed). Returns 0 or 1. */
static int wait_job(rxc_conn *c, const char *job, json_t **result)
{
    char path[192];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    double delay = 0.1;
    for (;;) {
        rxc_resp r;
        if (rxc_request(c, "GET", path, NULL, NULL, NULL, 0, &r)) return 1;
        if (r.status != 200) {
            rxc_progress_clear(&c->progress);
            rxc_http_error(&r);
            rxc_resp_free(&r);
            return 1;
        }
        json_t *j = rxc_resp_json(&r, "job status");
        rxc_resp_free(&r);
        if (!j) return 1;
        const char *st = json_string_value(json_object_get(j, "status"));
        int ret = -1;
        if (st && !strcmp(st, "done")) {
            *result = json_incref(json_object_get(j, "result"));
            ret = 0;
            if (!json_is_object(*result)) {
                json_decref(*result);
                *result = NULL;
                rxc_progress_clear(&c->progress);
                fprintf(stderr, "error: bad response from relaxd (job %s): done without a result\n",
                        job);
                ret = 1;
            }
        } else if (st && !strcmp(st, "failed")) {
            rxc_progress_clear(&c->progress);
            const json_t *err = json_object_get(j, "error");
            if (json_is_object(err)) {
                rxc_print_error_obj(err, 0);
            } else {
                fprintf(stderr, "error: compile job %s failed%s%s\n", job,
                        json_is_string(err) ? ": " : "", json_is_string(err) ? json_string_value(err) : "");
            }
            ret = 1;
        } else if (st && (!strcmp(st, "queued") || !strcmp(st, "running"))) {
            c->progress.state = !strcmp(st, "queued") ? "queued" : "running";
        } else {
            rxc_progress_clear(&c->progress);
            fprintf(stderr, "error: bad response from relaxd (job %s): unknown status\n", job);
            ret = 1;
        }
        json_decref(j);
        if (ret >= 0) return ret;
        rxc_sleep(c, delay);
        delay = delay * 1.5 < 2.0 ? delay * 1.5 : 2.0;
    }
}

int rxc_compile_file(rxc_conn *c, const char *file, const char *target, int opt_level, int async,
                     json_t **out)
{
    *out = NULL;
    size_t fl = strlen(file);
    int onnx = fl > 5 && !strcmp(file + fl - 5, ".onnx"); /* sent as {"onnx": base64} */
    json_t *module = onnx ? rxc_onnx_b64(file) : read_module(file);
    if (!module) return 1;
    json_t *req = json_pack("{s:o, s:s, s:b}", onnx ? "onnx" : "module", module, "target", target,
                            "async", async);
    if (req && opt_level >= 0)
        json_object_set_new(req, "options", json_pack("{s:i}", "opt_level", opt_level));
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) {
        fputs("error: out of memory\n", stderr);
        return 1;
    }
    rxc_progress_start(&c->progress, "compiling");
    rxc_resp r;
    int rc = rxc_request(c, "POST", "/v1/compile", body, NULL, NULL, 0, &r);
    free(body);
    if (rc) return 1;
    if (r.status != 200 && r.status != 202) {
        rxc_progress_clear(&c->progress);
        rxc_http_error(&r);
        rxc_resp_free(&r);
        return 1;
    }
    json_t *j = rxc_resp_json(&r, "compile");
    long status = r.status;
    rxc_resp_free(&r);
    if (!j) return 1;
    json_t *result = NULL;
    if (status == 202) {
        const char *job = json_string_value(json_object_get(j, "job"));
        if (!job || !valid_job_id(job)) {
            rxc_progress_clear(&c->progress);
            fputs("error: bad response from relaxd (compile): 202 without a valid job id\n", stderr);
            json_decref(j);
            return 1;
        }
        c->progress.state = "queued";
        rc = wait_job(c, job, &result);
        json_decref(j);
        if (rc) return 1;
    } else {
        result = j;
    }
    rxc_progress_clear(&c->progress);
    const char *id = json_string_value(json_object_get(result, "artifact"));
    if (!id || !rxc_valid_id(id)) {
        fputs("error: bad response from relaxd (compile): no valid artifact id\n", stderr);
        json_decref(result);
        return 1;
    }
    *out = result;
    return 0;
}

static int cmd_compile(rxc_conn *c, const cli *o)
{
    json_t *result;
    if (rxc_compile_file(c, o->pos[1], o->target, o->opt_level, o->async, &result)) return 1;
    const char *id = json_string_value(json_object_get(result, "artifact"));
    if (o->json) {
        char *s = json_dumps(result, JSON_INDENT(2));
        if (s) puts(s);
        free(s);
    } else if (json_is_true(json_object_get(result, "cached"))) {
        printf("%s  cached\n", id);
    } else {
        double ms = json_number_value(json_object_get(result, "compile_ms")); /* int or real */
        double size = json_number_value(json_object_get(result, "size"));
        printf("%s  compiled in %.0f ms (%.0f bytes)\n", id, ms, size);
    }
    fflush(stdout);
    int rc = 0;
    if (o->out) {
        int64_t n = 0;
        rxc_progress_start(&c->progress, "fetching");
        rc = rxc_download(c, id, o->out, &n);
        rxc_progress_clear(&c->progress);
        if (!rc) fprintf(stderr, "wrote %s (%lld bytes, SHA-256 verified)\n", o->out, (long long)n);
    }
    json_decref(result);
    return rc;
}

/* ---- fetch, meta, status ---- */

static int cmd_fetch(rxc_conn *c, const cli *o)
{
    int64_t n = 0;
    char id[65];
    if (rxc_resolve_id(c, o->pos[1], id)) return 1;
    rxc_progress_start(&c->progress, "fetching");
    int rc = rxc_download(c, id, o->out, &n);
    rxc_progress_clear(&c->progress);
    if (!rc) fprintf(stderr, "wrote %s (%lld bytes, SHA-256 verified)\n", o->out, (long long)n);
    return rc;
}

static int cmd_meta(rxc_conn *c, const cli *o)
{
    char path[160], id[65];
    if (rxc_resolve_id(c, o->pos[1], id)) return 1;
    snprintf(path, sizeof path, "/v1/artifacts/%s/meta", id);
    rxc_resp r;
    if (rxc_request(c, "GET", path, NULL, NULL, NULL, 0, &r)) return 1;
    if (r.status != 200) {
        rxc_http_error(&r);
        rxc_resp_free(&r);
        return 1;
    }
    json_error_t e;
    json_t *j = json_loadb(r.body ? r.body : "", r.len, JSON_DECODE_ANY, &e);
    rxc_resp_free(&r);
    if (!j) {
        fprintf(stderr, "error: bad response from relaxd (meta): %s\n", e.text);
        return 1;
    }
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
    json_decref(j);
    if (!s) {
        fputs("error: out of memory\n", stderr);
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

/* Prints v as a count, or "?" when unknown. */
static void put_num(double v)
{
    if (v < 0) fputs("?", stdout);
    else printf("%.0f", v);
}

static void put_bytes(double v)
{
    char buf[32];
    if (v < 0) {
        fputs("? bytes", stdout);
        return;
    }
    rx_format_bytes(v, buf, sizeof buf);
    fputs(buf, stdout);
}

static int cmd_status(rxc_conn *c, const cli *o)
{
    json_t *h = rxc_get_json(c, "/healthz", "healthz");
    if (!h) return 1;
    const char *st = json_string_value(json_object_get(h, "status"));
    printf("relaxd at %s: %s\n", c->http.base, st ? st : "?");
    int ok = st && !strcmp(st, "ok");
    json_decref(h);
    fflush(stdout);
    if (!ok) {
        fprintf(stderr, "error: relaxd at %s reports status '%s'\n", c->http.base, st ? st : "?");
        return 1;
    }
    rxc_resp r;
    if (rxc_request(c, "GET", "/metrics", NULL, NULL, NULL, 0, &r)) return 1;
    if (r.status != 200) {
        printf("metrics: unavailable (HTTP %ld)\n", r.status);
        rxc_resp_free(&r);
        return 0;
    }
    rxc_metrics m;
    rxc_metrics_parse(r.body ? r.body : "", &m);
    rxc_resp_free(&r);
    fputs("cache: ", stdout);
    put_num(m.cache_entries);
    fputs(" entries, ", stdout);
    put_bytes(m.cache_bytes);
    fputs(", ", stdout);
    put_num(m.cache_hits);
    fputs(" hits, ", stdout);
    put_num(m.cache_misses);
    fputs(" misses\nqueue: ", stdout);
    put_num(m.queue_depth);
    fputs(" jobs waiting\n", stdout);
    return 0;
}

int main(int argc, char **argv)
{
    cli o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    rxc_conn c;
    const char *cmd = o.pos[0];
    int is_bench = !strcmp(cmd, "bench");
    /* bench waits as long as the server's queue and run limits: no overall deadline
     * unless --timeout was given */
    if (rxc_conn_init(&c, o.server, o.token, is_bench && !o.timeout_set ? 0 : o.timeout))
        return 1;
    if (!strcmp(cmd, "compile")) {
        rc = cmd_compile(&c, &o);
    } else if (!strcmp(cmd, "fetch")) {
        rc = cmd_fetch(&c, &o);
    } else if (!strcmp(cmd, "meta")) {
        rc = cmd_meta(&c, &o);
    } else if (!strcmp(cmd, "status")) {
        rc = cmd_status(&c, &o);
    } else if (is_bench) {
        o.b.what = o.pos[1];
        o.b.target = o.target;
        o.b.target_given = o.target_given;
        o.b.opt_level = o.opt_level;
        o.b.json = o.json;
        rc = rxc_cmd_bench(&c, &o.b);
    } else if (!strcmp(cmd, "agents")) {
        rc = rxc_cmd_agents(&c, o.json);
    } else if (!strcmp(cmd, "jobs") && o.npos == 1) {
        rc = rxc_cmd_jobs(&c, o.status, o.limit, o.json);
    } else {
        rc = rxc_cmd_cancel(&c, o.pos[o.npos - 1], o.json);
    }
    rxc_conn_fini(&c);
    if (fflush(stdout) || ferror(stdout)) {
        fputs("error: cannot write to stdout\n", stderr);
        return 1;
    }
    return rc;
}
