/*
 * validate.c — request bodies of the agent protocol, checked field by field
 * (sched_int.h). Every rejection is a 400 "bad_request" whose message starts with the
 * field's path: "targets: expected a non-empty array of strings", "inputs.x: not
 * base64 of a .npy file", "shapes.n: expected an integer 0..1099511627776".
 *
 * Policy: a client's submission is strict — an unknown key is an error, so a typo
 * ("repeats") never silently runs with a default. An agent's registration and its
 * result may carry keys this server does not know (a newer agent): they are ignored,
 * while the keys it knows must have the right types. Names (agents, targets, labels)
 * are 1..64 characters of [A-Za-z0-9._:-]; function and shape names also allow what
 * relax-json identifiers allow. Numbers must be JSON integers where counts are meant
 * (10.0 is refused: jansson keeps the distinction, and so does the protocol).
 * Inputs and expected outputs are decoded once here to check that they are base64
 * .npy files (magic "\x93NUMPY"), so a broken payload is refused at submission
 * instead of failing on an agent later.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/base.h"
#include "sched_int.h"

#define FUNCTION_MAX 128
#define SHAPE_MAX (INT64_C(1) << 40)

void sv_fail(rx_sched_err *e, int status, const char *code, const char *fmt, ...)
{
    e->status = status;
    snprintf(e->code, sizeof e->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* A 400 bad_request with a located message; returns false. */
static bool __attribute__((format(printf, 2, 3))) bad(rx_sched_err *e, const char *fmt, ...)
{
    e->status = 400;
    snprintf(e->code, sizeof e->code, "bad_request");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return false;
}

#define BAD(...) bad(e, __VA_ARGS__)

/* 1..max characters of [A-Za-z0-9._:-]. */
static bool valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

/* A printable copy of a key for messages (keys come from the client). */
static const char *show(const char *key, char buf[48])
{
    size_t i = 0;
    for (; key[i] && i < 40; i++) buf[i] = key[i] >= 0x20 && key[i] < 0x7f ? key[i] : '?';
    if (key[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

/* An array of 1..RX_SCHED_LIST_MAX (or 0.. when !nonempty) names: a new reference. */
static bool name_list(const json_t *v, const char *field, bool nonempty, json_t **out,
                      rx_sched_err *e)
{
    if (!json_is_array(v) || (nonempty && json_array_size(v) == 0) ||
        json_array_size(v) > RX_SCHED_LIST_MAX)
        return BAD("%s: expected a %sarray of strings (at most %d)", field,
                   nonempty ? "non-empty " : "", RX_SCHED_LIST_MAX);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) || !valid_name(json_string_value(x), RX_SCHED_NAME_MAX))
            return BAD("%s[%zu]: expected a name of 1..%d characters [A-Za-z0-9._:-]", field, i,
                       RX_SCHED_NAME_MAX);
    }
    *out = json_deep_copy(v);
    return true;
}

static bool int_field(const json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                      rx_sched_err *e)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return BAD("%s: expected an integer %lld..%lld", field, (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return true;
}

/* A string of base64 that decodes to a .npy file. */
static bool npy_field(const json_t *v, const char *field, rx_sched_err *e)
{
    if (!json_is_string(v)) return BAD("%s: expected a string (base64 of a .npy file)", field);
    uint8_t *bytes = NULL;
    size_t n = 0;
    bool ok = rx_base64_decode(json_string_value(v), json_string_length(v), &bytes, &n);
    bool npy = ok && n >= 10 && !memcmp(bytes, "\x93NUMPY", 6);
    free(bytes);
    if (!ok) return BAD("%s: not valid base64", field);
    if (!npy) return BAD("%s: not a .npy file (no \\x93NUMPY magic)", field);
    return true;
}

static bool shapes_field(const json_t *v, rx_sched_err *e)
{
    if (!json_is_object(v) || json_object_size(v) > RX_SCHED_LIST_MAX)
        return BAD("shapes: expected an object of at most %d {name: integer}",
                   RX_SCHED_LIST_MAX);
    const char *k;
    json_t *x;
    char buf[48], field[sizeof "inputs." + FUNCTION_MAX];
    json_object_foreach((json_t *)v, k, x) {
        if (!valid_name(k, RX_SCHED_NAME_MAX))
            return BAD("shapes: \"%s\" is not a variable name", show(k, buf));
        snprintf(field, sizeof field, "shapes.%s", k);
        int64_t n;
        if (!int_field(x, field, 0, SHAPE_MAX, &n, e)) return false;
    }
    return true;
}

static bool inputs_field(const json_t *v, rx_sched_err *e)
{
    if (!json_is_object(v) || json_object_size(v) > RX_SCHED_LIST_MAX)
        return BAD("inputs: expected an object of at most %d {parameter: base64 .npy}",
                   RX_SCHED_LIST_MAX);
    const char *k;
    json_t *x;
    char buf[48], field[sizeof "inputs." + FUNCTION_MAX];
    json_object_foreach((json_t *)v, k, x) {
        if (!valid_name(k, FUNCTION_MAX))
            return BAD("inputs: \"%s\" is not a parameter name", show(k, buf));
        snprintf(field, sizeof field, "inputs.%s", k);
        if (!npy_field(x, field, e)) return false;
    }
    return true;
}

static bool expected_field(const json_t *v, rx_sched_err *e)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > RX_SCHED_LIST_MAX)
        return BAD("expected: expected a non-empty array of at most %d base64 .npy strings",
                   RX_SCHED_LIST_MAX);
    size_t i;
    json_t *x;
    char field[48];
    json_array_foreach(v, i, x) {
        snprintf(field, sizeof field, "expected[%zu]", i);
        if (!npy_field(x, field, e)) return false;
    }
    return true;
}

static bool tolerance_field(const json_t *v, rx_sched_err *e)
{
    if (!json_is_object(v)) return BAD("tolerance: expected an object {rtol, atol}");
    const char *k;
    json_t *x;
    char buf[48];
    json_object_foreach((json_t *)v, k, x) {
        if (strcmp(k, "rtol") && strcmp(k, "atol"))
            return BAD("tolerance: unknown key \"%s\" (known: rtol, atol)", show(k, buf));
        if (!json_is_number(x) || json_number_value(x) < 0 || json_number_value(x) > 1e30)
            return BAD("tolerance.%s: expected a number >= 0", k);
    }
    return true;
}

static const char submit_keys[] =
    "artifact, target, function, shapes, repeat, number, warmup, threads, labels, priority, "
    "timeout_s, queue_timeout_s, max_attempts, inputs, expected, tolerance";

sjob *sv_submit(const json_t *body, const sv_defaults *d, rx_sched_err *e)
{
    if (!json_is_object(body)) {
        BAD("the body must be a JSON object");
        return NULL;
    }
    sjob *j = calloc(1, sizeof *j);
    RX_ASSERT(j);
    snprintf(j->target, sizeof j->target, "cpu");
    j->timeout_s = d->timeout_s;
    j->queue_timeout_s = d->queue_timeout_s;
    j->max_attempts = d->max_attempts;
    j->spec = json_pack("{s:s, s:{}, s:i, s:i, s:i}", "function", "main", "shapes", "repeat",
                        10, "number", 1, "warmup", 1);
    j->labels = json_array();
    const char *k;
    json_t *v;
    char buf[48];
    int64_t n = 0;
    bool ok = true;
    json_object_foreach((json_t *)body, k, v) {
        if (!strcmp(k, "artifact")) {
            const char *s = json_string_value(v);
            size_t len = s ? strlen(s) : 0;
            ok = len == 64 && strspn(s, "0123456789abcdef") == 64;
            if (!ok) BAD("artifact: expected 64 lowercase hex digits (an artifact id)");
            else snprintf(j->artifact, sizeof j->artifact, "%s", s);
        } else if (!strcmp(k, "target")) {
            ok = json_is_string(v) && valid_name(json_string_value(v), RX_SCHED_NAME_MAX);
            if (!ok) BAD("target: expected a name of 1..%d characters [A-Za-z0-9._:-]",
                         RX_SCHED_NAME_MAX);
            else {
                snprintf(j->target, sizeof j->target, "%s", json_string_value(v));
                j->target_given = true;
            }
        } else if (!strcmp(k, "function")) {
            ok = json_is_string(v) && valid_name(json_string_value(v), FUNCTION_MAX);
            if (!ok) BAD("function: expected a function name of 1..%d characters", FUNCTION_MAX);
            else json_object_set(j->spec, "function", v);
        } else if (!strcmp(k, "shapes")) {
            if ((ok = shapes_field(v, e)))
                json_object_set_new(j->spec, "shapes", json_deep_copy(v));
        } else if (!strcmp(k, "repeat") || !strcmp(k, "number") || !strcmp(k, "warmup")) {
            int64_t lo = strcmp(k, "warmup") ? 1 : 0;
            int64_t hi = !strcmp(k, "number") ? 1000000 : !strcmp(k, "repeat") ? 100000 : 10000;
            if ((ok = int_field(v, k, lo, hi, &n, e))) json_object_set(j->spec, k, v);
        } else if (!strcmp(k, "threads")) { /* the agent's runtime caps it the same way */
            if ((ok = int_field(v, k, 1, 1024, &n, e))) json_object_set(j->spec, k, v);
        } else if (!strcmp(k, "labels")) {
            json_decref(j->labels);
            j->labels = NULL;
            ok = name_list(v, "labels", false, &j->labels, e);
        } else if (!strcmp(k, "priority")) {
            if ((ok = int_field(v, k, -1000, 1000, &n, e))) j->priority = (int)n;
        } else if (!strcmp(k, "timeout_s")) {
            if ((ok = int_field(v, k, 1, 86400, &n, e))) j->timeout_s = (int)n;
        } else if (!strcmp(k, "queue_timeout_s")) {
            if ((ok = int_field(v, k, 1, 30 * 86400, &n, e))) j->queue_timeout_s = (int)n;
        } else if (!strcmp(k, "max_attempts")) {
            if ((ok = int_field(v, k, 1, 100, &n, e))) j->max_attempts = (int)n;
        } else if (!strcmp(k, "inputs") || !strcmp(k, "expected")) {
            ok = !strcmp(k, "inputs") ? inputs_field(v, e) : expected_field(v, e);
            if (ok) {
                if (!j->data) j->data = json_object();
                json_object_set(j->data, k, v);
            }
        } else if (!strcmp(k, "tolerance")) {
            if ((ok = tolerance_field(v, e))) json_object_set_new(j->spec, k, json_deep_copy(v));
        } else {
            ok = BAD("unknown key \"%s\" (known: %s)", show(k, buf), submit_keys);
        }
        if (!ok) break;
    }
    if (ok && !j->artifact[0]) ok = BAD("artifact: required (the id of a compiled artifact)");
    if (!ok) {
        sjob_free(j);
        return NULL;
    }
    return j;
}

/* An optional string of at most max bytes into facts under key. */
static bool fact_string(const json_t *body, const char *key, size_t max, json_t *facts,
                        rx_sched_err *e)
{
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v) || json_string_length(v) > max)
        return BAD("%s: expected a string of at most %zu bytes", key, max);
    json_object_set(facts, key, v);
    return true;
}

static bool fact_int(const json_t *body, const char *key, int64_t hi, json_t *facts,
                     rx_sched_err *e)
{
    json_t *v = json_object_get(body, key);
    int64_t n;
    if (!v || json_is_null(v)) return true;
    if (!int_field(v, key, 0, hi, &n, e)) return false;
    json_object_set(facts, key, v);
    return true;
}

/* "devices": at most RX_SCHED_LIST_MAX objects, each a GPU device the agent runs jobs
 * on: "target" (one of the agent's targets), "id", "name", and optionally "api",
 * "platform", "compute_capability" (CUDA) and the limits (integers >= 0). Copied into facts with the known keys
 * only. */
static bool devices_fact(const json_t *body, const json_t *targets, json_t *facts,
                         rx_sched_err *e)
{
    static const char *const texts[] = {"api", "name", "platform", "compute_capability"};
    static const char *const limits[] = {"max_threads",  "max_local_bytes", "max_alloc_bytes",
                                         "global_bytes", "align_bytes",     "max_push_bytes"};
    const json_t *v = json_object_get(body, "devices"), *d;
    if (!v || json_is_null(v)) return true;
    if (!json_is_array(v) || json_array_size(v) > RX_SCHED_LIST_MAX)
        return BAD("devices: expected an array of objects (at most %d)", RX_SCHED_LIST_MAX);
    json_t *out = json_array();
    size_t i;
    json_array_foreach(v, i, d) {
        const json_t *t = json_object_get(d, "target");
        json_t *o = json_object();
        json_array_append_new(out, o);
        bool offered = false;
        for (size_t k = 0; json_is_string(t) && k < json_array_size(targets); k++)
            offered |= json_equal(t, json_array_get(targets, k));
        if (!json_is_object(d)) {
            BAD("devices[%zu]: expected an object", i);
            goto fail;
        }
        if (!offered) {
            BAD("devices[%zu].target: expected one of the agent's targets", i);
            goto fail;
        }
        json_object_set(o, "target", (json_t *)t);
        const json_t *id = json_object_get(d, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > (1 << 20)) {
            BAD("devices[%zu].id: expected an integer 0..%d", i, 1 << 20);
            goto fail;
        }
        json_object_set(o, "id", (json_t *)id);
        for (int k = 0; k < RX_COUNTOF(texts); k++) {
            const json_t *x = json_object_get(d, texts[k]);
            if ((!x && k == 1) || (x && !(json_is_string(x) &&
                                          json_string_length(x) <= RX_SCHED_TEXT_MAX))) {
                BAD("devices[%zu].%s: expected a string of at most %d bytes", i, texts[k],
                    RX_SCHED_TEXT_MAX);
                goto fail;
            }
            if (x) json_object_set(o, texts[k], (json_t *)x);
        }
        for (int k = 0; k < RX_COUNTOF(limits); k++) {
            const json_t *x = json_object_get(d, limits[k]);
            if (x && !(json_is_integer(x) && json_integer_value(x) >= 0)) {
                BAD("devices[%zu].%s: expected an integer >= 0", i, limits[k]);
                goto fail;
            }
            if (x) json_object_set(o, limits[k], (json_t *)x);
        }
    }
    json_object_set_new(facts, "devices", out);
    return true;
fail:
    json_decref(out);
    return false;
}

bool sv_register(const json_t *body, sv_agent *out, rx_sched_err *e)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(body)) return BAD("the body must be a JSON object");
    const json_t *name = json_object_get(body, "name");
    if (!json_is_string(name) || !valid_name(json_string_value(name), RX_SCHED_NAME_MAX))
        return BAD("name: expected a name of 1..%d characters [A-Za-z0-9._:-]",
                   RX_SCHED_NAME_MAX);
    snprintf(out->name, sizeof out->name, "%s", json_string_value(name));
    json_t *proto = json_object_get(body, "protocol");
    if (proto && !(json_is_integer(proto) && json_integer_value(proto) == RX_SCHED_PROTOCOL))
        return BAD("protocol: this server speaks agent protocol %d", RX_SCHED_PROTOCOL);
    json_t *labels = json_object_get(body, "labels");
    out->facts = json_object();
    bool ok = name_list(json_object_get(body, "targets"), "targets", true, &out->targets, e) &&
              (!labels || json_is_null(labels) ? (out->labels = json_array()) != NULL
                                                : name_list(labels, "labels", false,
                                                            &out->labels, e)) &&
              fact_string(body, "cpu", RX_SCHED_TEXT_MAX, out->facts, e) &&
              fact_int(body, "cores", 1 << 20, out->facts, e) &&
              fact_int(body, "memory_bytes", INT64_MAX, out->facts, e) &&
              fact_string(body, "runtime_version", RX_SCHED_NAME_MAX, out->facts, e) &&
              devices_fact(body, out->targets, out->facts, e);
    if (!ok) {
        json_decref(out->targets);
        json_decref(out->labels);
        json_decref(out->facts);
        memset(out, 0, sizeof *out);
    }
    return ok;
}

/* The statistics an agent reports: known keys must have their types. */
static bool result_object(const json_t *r, rx_sched_err *e)
{
    static const char *const reals[] = {"mean_ms", "median_ms", "min_ms", "max_ms",
                                        "stddev_ms", "load_ms", "max_abs_error",
                                        "max_rel_error"};
    static const char *const ints[] = {"repeat",         "number",         "kernels",
                                       "peak_bytes",     "reserved_bytes", "resident_bytes",
                                       "threads",        "blas_threads",   "reduced_calls"};
    if (!json_is_object(r)) return BAD("result: expected an object");
    for (int i = 0; i < RX_COUNTOF(reals); i++) {
        json_t *v = json_object_get(r, reals[i]);
        if (v && !json_is_number(v) && !json_is_null(v))
            return BAD("result.%s: expected a number", reals[i]);
    }
    for (int i = 0; i < RX_COUNTOF(ints); i++) {
        json_t *v = json_object_get(r, ints[i]);
        if (v && !json_is_integer(v) && !json_is_null(v))
            return BAD("result.%s: expected an integer", ints[i]);
    }
    json_t *c = json_object_get(r, "check");
    if (c && !(json_is_string(c) && (!strcmp(json_string_value(c), "passed") ||
                                     !strcmp(json_string_value(c), "failed"))))
        return BAD("result.check: expected \"passed\" or \"failed\"");
    return true;
}

bool sv_result(const json_t *body, sj_state *st, json_t **result, json_t **error,
               rx_sched_err *e)
{
    *result = *error = NULL;
    if (!json_is_object(body)) return BAD("the body must be a JSON object");
    const char *status = json_string_value(json_object_get(body, "status"));
    json_t *r = json_object_get(body, "result");
    json_t *er = json_object_get(body, "error");
    if (r && json_is_null(r)) r = NULL;
    if (er && json_is_null(er)) er = NULL;
    if (!status || (strcmp(status, "done") && strcmp(status, "failed")))
        return BAD("status: expected \"done\" or \"failed\"");
    if (!strcmp(status, "done")) {
        if (!r) return BAD("result: required when status is done");
        if (er) return BAD("error: not allowed when status is done");
        if (!result_object(r, e)) return false;
        *st = SJ_DONE;
        *result = r;
        return true;
    }
    if (!json_is_object(er)) return BAD("error: expected an object {code, message}");
    const char *code = json_string_value(json_object_get(er, "code"));
    json_t *msg = json_object_get(er, "message");
    if (!code || !valid_name(code, RX_SCHED_NAME_MAX))
        return BAD("error.code: expected a code of 1..%d characters [A-Za-z0-9._:-]",
                   RX_SCHED_NAME_MAX);
    if (!json_is_string(msg) || json_string_length(msg) > RX_SCHED_MESSAGE_MAX)
        return BAD("error.message: expected a string of at most %d bytes",
                   RX_SCHED_MESSAGE_MAX);
    if (r && !result_object(r, e)) return false;
    *st = SJ_FAILED;
    *result = r;
    *error = er;
    return true;
}

bool sv_heartbeat(const json_t *body, const char **job, rx_sched_err *e)
{
    *job = NULL;
    if (!body) return true;
    if (!json_is_object(body)) return BAD("the body must be a JSON object");
    json_t *v = json_object_get(body, "job");
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v) || !rx_sched_valid_id(json_string_value(v)))
        return BAD("job: expected null or a job id (32 lowercase hex digits)");
    *job = json_string_value(v);
    return true;
}
