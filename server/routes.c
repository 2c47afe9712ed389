/*
 * routes.c — the routing table and the endpoint handlers (server_int.h;
 * the contract is docs/server.md, "HTTP API of relaxd").
 *
 *   GET  /healthz                  public   {"status":"ok"}
 *   GET  /metrics                  client   Prometheus text
 *   POST /v1/compile               client   compile (sync 200, async 202 + job)
 *   GET  /v1/jobs/{id}             client   a compile job's status and result
 *   GET  /v1/artifacts?prefix=P    client   the ids starting with P (short ids in the CLI)
 *   GET  /v1/targets               client   target kinds, options, availability (targets.c)
 *   GET  /v1/artifacts/{id}        client, agent   the .rxa bytes (ETag, If-None-Match, HEAD)
 *   GET  /v1/artifacts/{id}/meta   client   the artifact's metadata JSON
 *   PUT  /v1/artifacts/{id}        client   store a client's artifact (upload.c)
 *   /v1/benchmarks*, /v1/agents*   benchmarks (client) and agents (agent): bench.c
 *
 * GET routes answer HEAD too (libmicrohttpd sends the headers only). "client" means a
 * client or admin token, "agent" an agent or admin token; with no tokens configured
 * (loopback only) nobody needs one. Agents download the artifacts they run, so the
 * artifact bytes take either role.
 * A pattern segment {name} matches exactly one non-empty path segment of at most
 * RX_ROUTE_PARAM_MAX - 1 bytes; handlers validate what they capture (artifact ids with
 * rx_store_valid_id, job ids as 32 hex digits) and answer 404 for anything else, so no
 * path trick reaches the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/driver.h"
#include "relax/support.h"
#include "server_int.h"

static void h_healthz(rx_server *s, rx_request *q);
static void h_metrics(rx_server *s, rx_request *q);
static void h_compile(rx_server *s, rx_request *q);
static void h_job(rx_server *s, rx_request *q);
static void h_artifact(rx_server *s, rx_request *q);
static void h_artifact_meta(rx_server *s, rx_request *q);
static void h_artifacts_find(rx_server *s, rx_request *q);

static const rx_route routes[] = {
    {"GET", "/healthz", h_healthz, RX_PERM_PUBLIC, false},
    {"GET", "/metrics", h_metrics, RX_PERM_CLIENT, false},
    {"POST", "/v1/compile", h_compile, RX_PERM_CLIENT, true},
    {"GET", "/v1/jobs/{id}", h_job, RX_PERM_CLIENT, false},
    {"GET", "/v1/artifacts", h_artifacts_find, RX_PERM_CLIENT, false},
    {"GET", "/v1/targets", rx_h_targets, RX_PERM_CLIENT, false},
    {"GET", "/v1/artifacts/{id}", h_artifact, RX_PERM_CLIENT_OR_AGENT, false},
    {"GET", "/v1/artifacts/{id}/meta", h_artifact_meta, RX_PERM_CLIENT, false},
    {"PUT", "/v1/artifacts/{id}", rx_h_artifact_put, RX_PERM_CLIENT, true},
    {"POST", "/v1/benchmarks", rx_h_bench_submit, RX_PERM_CLIENT, true},
    {"GET", "/v1/benchmarks", rx_h_bench_list, RX_PERM_CLIENT, false},
    {"GET", "/v1/benchmarks/{id}", rx_h_bench_get, RX_PERM_CLIENT, false},
    {"POST", "/v1/benchmarks/{id}/cancel", rx_h_bench_cancel, RX_PERM_CLIENT, false},
    {"POST", "/v1/agents/register", rx_h_agent_register, RX_PERM_AGENT, true},
    {"GET", "/v1/agents", rx_h_agents, RX_PERM_CLIENT_OR_AGENT, false},
    {"POST", "/v1/agents/{agent}/heartbeat", rx_h_agent_heartbeat, RX_PERM_AGENT, true},
    {"POST", "/v1/agents/{agent}/poll", rx_h_agent_poll, RX_PERM_AGENT, true},
    {"POST", "/v1/agents/{agent}/jobs/{job}/result", rx_h_agent_result, RX_PERM_AGENT, true},
};

const rx_route *rx_routes(int *n)
{
    *n = RX_COUNTOF(routes);
    return routes;
}

bool rx_route_match(const char *pattern, const char *path,
                    char params[RX_ROUTE_MAX_PARAMS][RX_ROUTE_PARAM_MAX])
{
    int np = 0;
    const char *p = pattern, *u = path;
    while (*p && *u) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            RX_ASSERT(close && np < RX_ROUTE_MAX_PARAMS);
            size_t n = strcspn(u, "/");
            if (n == 0 || n >= RX_ROUTE_PARAM_MAX) return false;
            memcpy(params[np], u, n);
            params[np++][n] = '\0';
            p = close + 1;
            u += n;
            continue;
        }
        if (*p != *u) return false;
        p++;
        u++;
    }
    return !*p && !*u;
}

/* ---- handlers ---- */

static void h_healthz(rx_server *s, rx_request *q)
{
    rx_reply_json(q, 200, json_pack("{s:s}", "status", "ok"));
}

static void h_metrics(rx_server *s, rx_request *q)
{
    rx_metrics_gauges g;
    memset(&g, 0, sizeof g);
    rx_store_get_stats(rx_server_store(s), &g.store);
    rx_compiler_gauges(rx_server_compiler(s), &g);
    rx_sched_get_stats(rx_server_sched(s), &g.sched);
    char *text = rx_metrics_render(rx_server_metrics(s), &g);
    rx_reply_text(q, 200, text, "text/plain; version=0.0.4; charset=utf-8");
}

/* Reads the compile request's fields from root into r and *module; returns NULL or a
 * message for a 400 bad_request (written into msg). */
static const char *parse_compile(json_t *root, rx_compile_req *r, json_t **module,
                                 json_t **onnx, char *msg, size_t cap)
{
    const char *key;
    json_t *v;
    if (!json_is_object(root)) return "the body must be a JSON object";
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "module")) {
            if (!json_is_object(v)) return "\"module\" must be a relax-json object";
            *module = v;
        } else if (!strcmp(key, "onnx")) {
            if (!json_is_string(v)) return "\"onnx\" must be a base64 string";
            *onnx = v;
        } else if (!strcmp(key, "target")) {
            if (!json_is_string(v)) return "\"target\" must be a string";
            r->target = json_string_value(v);
        } else if (!strcmp(key, "async")) {
            if (!json_is_boolean(v)) return "\"async\" must be true or false";
            r->async = json_is_true(v);
        } else if (!strcmp(key, "options")) {
            const char *bad = rx_compile_opts_parse(v, &r->opt_level, &r->opts, msg, cap);
            if (bad) return bad;
        } else {
            snprintf(msg, cap, "unknown key \"%.64s\" (known: module, onnx, target, options, "
                     "async)", key);
            return msg;
        }
    }
    if (*module && *onnx) return "give \"module\" or \"onnx\", not both";
    if (!*module && !*onnx) return "\"module\" (or \"onnx\") is required";
    return NULL;
}

/* Replies with a compile service answer (consumes out->body). */
static void send_compile_reply(rx_request *q, rx_compile_reply *out)
{
    if (out->status >= 400) {
        json_t *err = json_incref(json_object_get(out->body, "error"));
        json_decref(out->body);
        rx_reply_error_json(q, out->status, err ? err : rx_error_json("internal", "no error"),
                            out->retry_after);
    } else {
        rx_reply_json(q, out->status, out->body);
    }
}

/* A synchronous compile's second half: its connection was resumed (job ended or the
 * wait timed out). */
static void h_compile_done(rx_server *s, rx_request *q)
{
    (void)s;
    rx_compile_reply out;
    rx_req_wait_end(q, &out);
    send_compile_reply(q, &out);
}

static void h_compile(rx_server *s, rx_request *q)
{
    size_t n;
    const char *body = rx_req_body(q, &n);
    json_error_t je;
    char msg[256];
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(msg, sizeof msg, "body is not JSON: line %d column %d: %s", je.line, je.column,
                 je.text);
        rx_reply_error(q, 400, "bad_json", msg);
        return;
    }
    rx_compile_req r = {0};
    r.target = "cpu";
    r.opt_level = RX_OPT_LEVEL_DEFAULT; /* as relaxc build and hash: one key for both */
    json_t *module = NULL, *onnx = NULL, *imported = NULL;
    const char *bad = parse_compile(root, &r, &module, &onnx, msg, sizeof msg);
    if (bad) {
        rx_reply_error(q, 400, "bad_request", bad);
        goto done;
    }
    if (onnx) {
        json_t *err = NULL;
        module = imported = rx_compile_onnx_module(json_string_value(onnx),
                                                   json_string_length(onnx), &err);
        if (!module) {
            rx_reply_error_json(q, 400, err, 0);
            goto done;
        }
    }
    rx_target tgt;
    const char *code;
    if (!rx_target_check(r.target, &tgt, &code, msg, sizeof msg)) {
        rx_reply_error(q, 400, code, msg);
        goto done;
    }
    r.target = tgt.norm;
    /* the module goes on as the parsed tree: read once, serialized only for a compile */
    r.module_json = module;
    r.module_n = n;
    rx_compile_reply out;
    rx_job *pending = NULL;
    rx_compiler_submit(rx_server_compiler(s), &r, rx_req_id(q), &out, &pending);
    if (pending) rx_req_wait(q, pending, h_compile_done);
    else send_compile_reply(q, &out);
done:
    json_decref(imported);
    json_decref(root);
}

static bool valid_job_id(const char *id)
{
    size_t n = strlen(id);
    if (n != 32) return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
    return true;
}

static void h_job(rx_server *s, rx_request *q)
{
    const char *id = rx_req_param(q, 0);
    json_t *o = valid_job_id(id) ? rx_compiler_job_json(rx_server_compiler(s), id) : NULL;
    if (!o) {
        rx_reply_error(q, 404, "not_found", "no such job");
        return;
    }
    rx_reply_json(q, 200, o);
}

/* True when an If-None-Match value lists etag (or is "*"). */
static bool etag_matches(const char *inm, const char *etag)
{
    if (!inm) return false;
    size_t n = strlen(etag);
    const char *p = inm;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (*p == '*') return true;
        if (!strncmp(p, "W/", 2)) p += 2;
        if (!strncmp(p, etag, n) && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')) return true;
        while (*p && *p != ',') p++;
    }
    return false;
}

static void h_artifact(rx_server *s, rx_request *q)
{
    const char *id = rx_req_param(q, 0);
    if (!rx_store_valid_id(id)) {
        rx_reply_error(q, 404, "not_found", "no such artifact");
        return;
    }
    char etag[80], err[256];
    snprintf(etag, sizeof etag, "\"%s\"", id);
    rx_store *st = rx_server_store(s);
    rx_artifact_info info;
    if (etag_matches(rx_req_header(q, "If-None-Match"), etag)) {
        int r = rx_store_info(st, id, &info, NULL, err, sizeof err);
        if (r == 0) {
            rx_reply_not_modified(q, etag);
            return;
        }
    }
    uint8_t *bytes = NULL;
    size_t n = 0;
    int r = rx_store_read(st, id, &bytes, &n, err, sizeof err);
    if (r == 0) {
        rx_reply_bytes(q, 200, bytes, n, "application/octet-stream", etag);
    } else if (r == 1) {
        rx_reply_error(q, 404, "not_found", "no such artifact");
    } else if (r == 2) {
        rx_log_json(rx_server_log(s), RX_LOG_WARN,
                    json_pack("{s:s, s:s, s:s, s:s}", "event", "cache_corrupt", "request_id",
                              rx_req_id(q), "artifact", id, "message", err));
        rx_reply_error(q, 404, "artifact_corrupt",
                       "the artifact's stored bytes were damaged and have been dropped; "
                       "compile the module again to rebuild it");
    } else {
        rx_log_json(rx_server_log(s), RX_LOG_ERROR,
                    json_pack("{s:s, s:s, s:s}", "event", "store_error", "request_id",
                              rx_req_id(q), "message", err));
        rx_reply_error(q, 500, "store_error", "the artifact store failed (see the log)");
    }
}

#define FIND_MAX 10 /* ids listed for a prefix */

static void h_artifacts_find(rx_server *s, rx_request *q)
{
    const char *p = rx_req_query(q, "prefix");
    size_t n = p ? strlen(p) : 0;
    bool hex = n >= 1 && n <= 64;
    for (size_t i = 0; hex && i < n; i++)
        hex = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
    if (!hex) {
        rx_reply_error(q, 400, "bad_request", "?prefix= must be 1..64 lowercase hex digits");
        return;
    }
    char ids[FIND_MAX + 1][65], err[256];
    int found = 0;
    if (rx_store_find_prefix(rx_server_store(s), p, ids, FIND_MAX + 1, &found, err, sizeof err)) {
        rx_reply_error(q, 500, "store_error", "the artifact store failed (see the log)");
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < found && i < FIND_MAX; i++) json_array_append_new(list, json_string(ids[i]));
    rx_reply_json(q, 200, json_pack("{s:o, s:b}", "artifacts", list, "more", found > FIND_MAX));
}

static void h_artifact_meta(rx_server *s, rx_request *q)
{
    const char *id = rx_req_param(q, 0);
    if (!rx_store_valid_id(id)) {
        rx_reply_error(q, 404, "not_found", "no such artifact");
        return;
    }
    rx_artifact_info info;
    char *meta = NULL, err[256];
    int r = rx_store_info(rx_server_store(s), id, &info, &meta, err, sizeof err);
    if (r == 1) {
        rx_reply_error(q, 404, "not_found", "no such artifact");
        return;
    }
    if (r != 0) {
        rx_reply_error(q, 500, "store_error", "the artifact store failed (see the log)");
        return;
    }
    json_t *m = meta ? json_loads(meta, 0, NULL) : NULL;
    free(meta);
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "artifact", info.id, "key",
                          info.key, "target", info.target, "size", (json_int_t)info.size,
                          "created_ms", (json_int_t)info.created_ms, "last_access_ms",
                          (json_int_t)info.last_access_ms, "metadata", m ? m : json_null());
    rx_reply_json(q, 200, o);
}
