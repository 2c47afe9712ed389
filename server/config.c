/*
 * config.c — relaxd's configuration: defaults < JSON file < RELAXD_* environment <
 * command-line flags (server.h).
 *
 * One table (options[] below) names every scalar setting once: its flag, its
 * environment variable, its key in the file, its type and its bounds. The three sources
 * are applied in priority order by walking that table, so a setting cannot exist in one
 * source and be forgotten in another. Bearer tokens are the exception: they are secrets
 * and come only from the file ("tokens": [{"token": "...", "role": "client"}]), never
 * from flags (visible in ps) or the environment.
 *
 * Sizes accept plain byte counts or a binary suffix (64MiB, 512K, 1G). Unknown keys in
 * the file and unknown flags are errors (a typo must not silently keep a default).
 * Settings that constrain each other are checked once every source has been applied
 * (agent_heartbeat_ms must be below agent_lease_ms).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relax/json.h"
#include "relax/support.h"
#include "server_int.h"

typedef enum opt_type { T_LISTEN, T_PATH, T_INT, T_SIZE } opt_type;

typedef struct option {
    const char *flag;      /* "--workers" */
    const char *env;       /* "RELAXD_WORKERS" */
    const char *key;       /* "workers" in the file */
    opt_type type;
    size_t off;            /* offset in rx_config (T_INT: int, T_SIZE: int64_t) */
    int64_t min, max;      /* bounds for T_INT and T_SIZE */
    const char *help;
} option;

#define OFF(f) offsetof(rx_config, f)
#define GiB (INT64_C(1) << 30)

static const option options[] = {
    {"--listen", "RELAXD_LISTEN", "listen", T_LISTEN, 0, 0, 0,
     "HOST:PORT to listen on (default 127.0.0.1:8080; port 0: ephemeral)"},
    {"--data", "RELAXD_DATA", "data", T_PATH, OFF(data_dir), 0, 0,
     "data directory: cache database and blobs (default ./var)"},
    {"--workers", "RELAXD_WORKERS", "workers", T_INT, OFF(workers), 1, 64,
     "compile worker threads (default 2)"},
    {"--http-threads", "RELAXD_HTTP_THREADS", "http_threads", T_INT, OFF(http_threads), 0, 256,
     "HTTP event-loop threads (default 0: one per core)"},
    {"--queue", "RELAXD_QUEUE", "queue", T_INT, OFF(queue), 1, 100000,
     "bounded compile queue length (default 64)"},
    {"--compile-timeout", "RELAXD_COMPILE_TIMEOUT", "compile_timeout", T_INT,
     OFF(compile_timeout_s), 1, 86400, "compile time limit, seconds (default 120)"},
    {"--max-body", "RELAXD_MAX_BODY", "max_body", T_SIZE, OFF(max_body), 1024, 16 * GiB,
     "request body limit, bytes (default 64MiB)"},
    {"--cache-max-bytes", "RELAXD_CACHE_MAX_BYTES", "cache_max_bytes", T_SIZE,
     OFF(cache_max_bytes), 0, INT64_MAX, "cache size cap, bytes (default 0: unlimited)"},
    {"--max-connections", "RELAXD_MAX_CONNECTIONS", "max_connections", T_INT,
     OFF(max_connections), 1, 100000, "concurrent connections; more get 503 (default 256)"},
    {"--max-connections-per-ip", "RELAXD_MAX_CONNECTIONS_PER_IP", "max_connections_per_ip",
     T_INT, OFF(max_connections_per_ip), 0, 100000,
     "concurrent connections from one address; more get 503 (default 64, 0: no limit)"},
    {"--header-timeout", "RELAXD_HEADER_TIMEOUT", "header_timeout", T_INT,
     OFF(header_timeout_s), 1, 3600,
     "seconds to send a whole header block, from connect or the last reply (default 10)"},
    {"--request-timeout", "RELAXD_REQUEST_TIMEOUT", "request_timeout", T_INT,
     OFF(request_timeout_s), 1, 86400, "idle connection timeout, seconds (default 60)"},
    {"--max-header-bytes", "RELAXD_MAX_HEADER_BYTES", "max_header_bytes", T_SIZE,
     OFF(max_header_bytes), 4096, 1 << 24,
     "request header block limit, bytes; larger is 431 (default 32KiB)"},
    {"--max-json-depth", "RELAXD_MAX_JSON_DEPTH", "max_json_depth", T_INT,
     OFF(max_json_depth), 8, 4096, "module JSON nesting limit (default 512, as relaxc)"},
    {"--max-module-bytes", "RELAXD_MAX_MODULE_BYTES", "max_module_bytes", T_SIZE,
     OFF(max_module_bytes), 1024, 16 * GiB, "module size limit (default 64MiB)"},
    {"--max-compile-memory", "RELAXD_MAX_COMPILE_MEMORY", "max_compile_memory", T_SIZE,
     OFF(max_compile_memory), 0, INT64_MAX,
     "compiler memory per compile, bytes; past it 400 compile_failed (default 2GiB; 0: none)"},
    {"--max-jobs", "RELAXD_MAX_JOBS", "max_jobs", T_INT, OFF(max_jobs), 16, 1000000,
     "finished async jobs remembered (default 1024)"},
    {"--agent-heartbeat-ms", "RELAXD_AGENT_HEARTBEAT_MS", "agent_heartbeat_ms", T_INT,
     OFF(agent_heartbeat_ms), 10, 600000,
     "agents' heartbeat period while running a job, ms (default 1000)"},
    {"--agent-lease-ms", "RELAXD_AGENT_LEASE_MS", "agent_lease_ms", T_INT, OFF(agent_lease_ms),
     50, 3600000, "an agent silent this long is offline, ms (default 5000)"},
    {"--agent-poll-ms", "RELAXD_AGENT_POLL_MS", "agent_poll_ms", T_INT, OFF(agent_poll_ms), 50,
     600000, "longest agent long poll, ms (default 20000)"},
    {"--bench-timeout", "RELAXD_BENCH_TIMEOUT", "bench_timeout", T_INT, OFF(bench_timeout_s), 1,
     86400, "default benchmark run time limit, seconds (default 60)"},
    {"--bench-queue-timeout", "RELAXD_BENCH_QUEUE_TIMEOUT", "bench_queue_timeout", T_INT,
     OFF(bench_queue_timeout_s), 1, 2592000,
     "default benchmark queue time limit, seconds (default 600)"},
    {"--bench-max-attempts", "RELAXD_BENCH_MAX_ATTEMPTS", "bench_max_attempts", T_INT,
     OFF(bench_max_attempts), 1, 100, "default runs of a benchmark job (default 3)"},
    {"--bench-queue", "RELAXD_BENCH_QUEUE", "bench_queue", T_INT, OFF(bench_queue), 1, 1000000,
     "queued + running benchmark jobs at most (default 10000)"},
    {"--bench-history", "RELAXD_BENCH_HISTORY", "bench_history", T_INT, OFF(bench_history), 0,
     100000000, "finished benchmark jobs kept (default 100000)"},
};

static const char help_text[] =
    "usage: relaxd [--config FILE] [options]\n"
    "the Relax compilation server (HTTP API, configuration, operations: docs/server.md)\n"
    "\n"
    "  --config FILE             JSON configuration (also RELAXD_CONFIG); tokens live there\n"
    "  --listen HOST:PORT        default 127.0.0.1:8080; port 0: ephemeral\n"
    "  --data DIR                default ./var\n"
    "  --workers N               compile workers (default 2)\n"
    "  --http-threads N          HTTP event-loop threads (default 0: one per core)\n"
    "  --queue N                 bounded compile queue (default 64)\n"
    "  --compile-timeout S       compile time limit (default 120)\n"
    "  --max-body BYTES          request body limit (default 64MiB)\n"
    "  --cache-max-bytes BYTES   cache cap (default 0: unlimited)\n"
    "  --max-connections N       connections at once, more get 503 (default 256)\n"
    "  --max-connections-per-ip N  of them from one address (default 64, 0: no limit)\n"
    "  --header-timeout S        time to send a header block (default 10)\n"
    "  --request-timeout S       idle connection timeout (default 60)\n"
    "  --max-header-bytes BYTES  request header limit, larger is 431 (default 32KiB)\n"
    "  --max-json-depth N        module nesting limit (default 512, as relaxc)\n"
    "  --max-module-bytes BYTES  module size limit (default 64MiB)\n"
    "  --max-compile-memory BYTES compiler memory per compile; past it the compile fails\n"
    "                            with 400 compile_failed (default 2GiB; 0: no limit)\n"
    "  --max-jobs N              finished async jobs remembered (default 1024)\n"
    "  --agent-heartbeat-ms MS   agents' heartbeat period (default 1000)\n"
    "  --agent-lease-ms MS       an agent silent this long is offline (default 5000)\n"
    "  --agent-poll-ms MS        longest agent long poll (default 20000)\n"
    "  --bench-timeout S         default benchmark run time limit (default 60)\n"
    "  --bench-queue-timeout S   default benchmark queue time limit (default 600)\n"
    "  --bench-max-attempts N    default runs of a benchmark job (default 3)\n"
    "  --bench-queue N           queued + running benchmark jobs (default 10000)\n"
    "  --bench-history N         finished benchmark jobs kept (default 100000)\n"
    "  --help, --version\n"
    "\n"
    "Every option is also RELAXD_<NAME> in the environment and <name> in the file\n"
    "(e.g. RELAXD_MAX_BODY, \"max_body\"); priority: flags > environment > file > defaults.\n";

static const char version_text[] = "relaxd " RX_VERSION "\n";

void rx_config_defaults(rx_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "127.0.0.1");
    c->port = 8080;
    c->data_dir = strdup("./var");
    RX_ASSERT(c->data_dir);
    c->workers = 2;
    c->queue = 64;
    c->compile_timeout_s = 120;
    c->max_body = 64 << 20;
    c->cache_max_bytes = 0;
    c->max_connections = 256;
    c->max_connections_per_ip = 64;
    c->header_timeout_s = 10;
    c->request_timeout_s = 60;
    c->max_header_bytes = 32 << 10;
    c->max_json_depth = RX_JSON_MAX_DEPTH;
    c->max_module_bytes = 64 << 20;
    c->max_compile_memory = 2 * GiB;
    c->max_jobs = 1024;
    c->agent_heartbeat_ms = 1000;
    c->agent_lease_ms = 5000;
    c->agent_poll_ms = 20000;
    c->bench_timeout_s = 60;
    c->bench_queue_timeout_s = 600;
    c->bench_max_attempts = 3;
    c->bench_queue = 10000;
    c->bench_history = 100000;
}

void rx_config_free(rx_config *c)
{
    free(c->data_dir);
    free(c->config_path);
    for (int i = 0; i < c->ntokens; i++) {
        /* secrets do not linger in freed memory */
        size_t n = strlen(c->tokens[i].token);
        volatile char *p = c->tokens[i].token;
        for (size_t j = 0; j < n; j++) p[j] = 0;
        free(c->tokens[i].token);
    }
    memset(c, 0, sizeof *c);
}

bool rx_config_is_loopback(const char *host)
{
    return !strcmp(host, "localhost") || !strncmp(host, "127.", 4);
}

/* "HOST:PORT" with HOST an IPv4 literal or localhost. */
static bool parse_listen(const char *v, rx_config *c, char *err, size_t errlen)
{
    const char *colon = strrchr(v, ':');
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof c->host) {
        snprintf(err, errlen, "listen address \"%s\" is not HOST:PORT", v);
        return false;
    }
    char host[sizeof c->host];
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port < 0 || port > 65535) {
        snprintf(err, errlen, "listen port \"%s\" is not 0..65535", colon + 1);
        return false;
    }
    if (strcmp(host, "localhost")) {
        int dots = 0;
        for (const char *p = host; *p; p++) {
            if (*p == '.') dots++;
            else if (!isdigit((unsigned char)*p)) dots = -100;
        }
        if (dots != 3) {
            snprintf(err, errlen, "listen host \"%s\" is not an IPv4 address or localhost",
                     host);
            return false;
        }
    }
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = (int)port;
    return true;
}

/* Applies one string value from a flag or the environment (or a file string). */
static bool apply(const option *o, const char *v, const char *src, rx_config *c, char *err,
                  size_t errlen)
{
    switch (o->type) {
    case T_LISTEN:
        return parse_listen(v, c, err, errlen);
    case T_PATH: {
        if (!*v) {
            snprintf(err, errlen, "%s: empty path", src);
            return false;
        }
        char *dup = strdup(v);
        RX_ASSERT(dup);
        char **slot = (char **)((char *)c + o->off);
        free(*slot);
        *slot = dup;
        return true;
    }
    case T_INT:
    case T_SIZE: {
        int64_t n;
        if (!rx_parse_size(v, &n) || (o->type == T_INT && strpbrk(v, "KkMGB"))) {
            snprintf(err, errlen, "%s: \"%s\" is not a %s", src, v,
                     o->type == T_INT ? "number" : "size");
            return false;
        }
        if (n < o->min || n > o->max) {
            snprintf(err, errlen, "%s: %lld is out of range (%lld..%lld)", src, (long long)n,
                     (long long)o->min, (long long)o->max);
            return false;
        }
        if (o->type == T_INT) *(int *)((char *)c + o->off) = (int)n;
        else *(int64_t *)((char *)c + o->off) = n;
        return true;
    }
    }
    return false;
}

static bool parse_role(const char *s, rx_role *r)
{
    if (!strcmp(s, "client")) *r = RX_ROLE_CLIENT;
    else if (!strcmp(s, "agent")) *r = RX_ROLE_AGENT;
    else if (!strcmp(s, "admin")) *r = RX_ROLE_ADMIN;
    else return false;
    return true;
}

static const char *role_name(rx_role r)
{
    return r == RX_ROLE_CLIENT ? "client" : r == RX_ROLE_AGENT ? "agent" : "admin";
}

static bool load_tokens(json_t *arr, rx_config *c, char *err, size_t errlen)
{
    if (!json_is_array(arr) || json_array_size(arr) > RX_CONFIG_MAX_TOKENS) {
        snprintf(err, errlen, "config: \"tokens\" must be a list of at most %d {token, role}",
                 RX_CONFIG_MAX_TOKENS);
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *tok = json_string_value(json_object_get(e, "token"));
        const char *role = json_string_value(json_object_get(e, "role"));
        rx_role r;
        if (!json_is_object(e) || json_object_size(e) != 2 || !tok || !role) {
            snprintf(err, errlen, "config: tokens[%zu] must be {\"token\": ..., \"role\": ...}", i);
            return false;
        }
        size_t n = strlen(tok);
        if (n < 16 || n > RX_CONFIG_TOKEN_MAX || strpbrk(tok, " \t\r\n")) {
            snprintf(err, errlen, "config: tokens[%zu].token must be 16..%d characters, no spaces",
                     i, RX_CONFIG_TOKEN_MAX);
            return false;
        }
        if (strstr(tok, "REPLACE")) {
            snprintf(err, errlen, "config: tokens[%zu] is still the example's placeholder", i);
            return false;
        }
        if (!parse_role(role, &r)) {
            snprintf(err, errlen, "config: tokens[%zu].role \"%s\" is not client, agent or admin",
                     i, role);
            return false;
        }
        for (int k = 0; k < c->ntokens; k++) {
            if (strcmp(c->tokens[k].token, tok)) continue;
            /* one token, one role: a token under two roles would silently get both */
            snprintf(err, errlen,
                     "config: tokens[%zu] (role %s) repeats the token of tokens[%d] (role %s); "
                     "each token must be listed once, with one role",
                     i, role, k, role_name(c->tokens[k].role));
            return false;
        }
        c->tokens[c->ntokens].token = strdup(tok);
        RX_ASSERT(c->tokens[c->ntokens].token);
        c->tokens[c->ntokens++].role = r;
    }
    return true;
}

static bool load_file(const char *path, rx_config *c, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "config %s:%d:%d: %s", path, je.line, je.column, je.text);
        return false;
    }
    bool ok = json_is_object(root);
    if (!ok) snprintf(err, errlen, "config %s: the top level must be an object", path);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!ok) break;
        if (!strcmp(key, "tokens")) {
            ok = load_tokens(v, c, err, errlen);
            continue;
        }
        const option *o = NULL;
        for (int i = 0; i < RX_COUNTOF(options); i++)
            if (!strcmp(options[i].key, key)) o = &options[i];
        if (!o) {
            snprintf(err, errlen, "config %s: unknown key \"%s\"", path, key);
            ok = false;
            break;
        }
        char buf[64], src[96];
        const char *s = json_string_value(v);
        snprintf(src, sizeof src, "config %s: %s", path, key);
        if (json_is_integer(v)) {
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
            s = buf;
        }
        if (!s) {
            snprintf(err, errlen, "%s: expected a string or an integer", src);
            ok = false;
            break;
        }
        ok = apply(o, s, src, c, err, errlen);
    }
    json_decref(root);
    return ok;
}

/* Finds "--flag" or "--flag=value" at argv[*i]; returns its value (advancing *i past a
 * separate value) or NULL with *missing set when the value is absent. */
static const char *flag_value(const char *flag, int argc, char **argv, int *i, bool *missing)
{
    size_t n = strlen(flag);
    const char *a = argv[*i];
    if (strncmp(a, flag, n)) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n]) return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

int rx_config_load(rx_config *c, int argc, char **argv, const char **info, char *err,
                   size_t errlen)
{
    *info = NULL;
    /* Step 1: --help, --version, --config (so the file can be applied first) */
    const char *config = getenv("RELAXD_CONFIG");
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *info = help_text;
            return 3;
        }
        if (!strcmp(argv[i], "--version")) {
            *info = version_text;
            return 3;
        }
        const char *v = flag_value("--config", argc, argv, &i, &missing);
        if (missing) {
            snprintf(err, errlen, "--config needs a value");
            return 2;
        }
        if (v) config = v;
    }
    /* Step 2: the file */
    if (config && *config) {
        free(c->config_path);
        c->config_path = strdup(config);
        RX_ASSERT(c->config_path);
        if (!load_file(config, c, err, errlen)) return 1;
    }
    /* Step 3: the environment */
    for (int k = 0; k < RX_COUNTOF(options); k++) {
        const char *v = getenv(options[k].env);
        if (v && !apply(&options[k], v, options[k].env, c, err, errlen)) return 1;
    }
    /* Step 4: the flags */
    for (int i = 1; i < argc; i++) {
        bool missing = false, known = false;
        if (flag_value("--config", argc, argv, &i, &missing)) continue;
        for (int k = 0; k < RX_COUNTOF(options) && !known; k++) {
            const char *v = flag_value(options[k].flag, argc, argv, &i, &missing);
            if (missing) {
                snprintf(err, errlen, "%s needs a value", options[k].flag);
                return 2;
            }
            if (!v) continue;
            known = true;
            if (!apply(&options[k], v, options[k].flag, c, err, errlen)) return 1;
        }
        if (!known) {
            snprintf(err, errlen, "unknown argument \"%s\" (see relaxd --help)", argv[i]);
            return 2;
        }
    }
    /* Step 5: settings that must agree */
    if (c->agent_heartbeat_ms >= c->agent_lease_ms) {
        snprintf(err, errlen,
                 "agent_heartbeat_ms (%d) must be less than agent_lease_ms (%d): agents would "
                 "lose their lease between two heartbeats",
                 c->agent_heartbeat_ms, c->agent_lease_ms);
        return 1;
    }
    return 0;
}
