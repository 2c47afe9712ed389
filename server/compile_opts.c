/*
 * compile_opts.c — the build options of POST /v1/compile, the same as relaxc build's
 * (server_int.h):
 *
 *   "opt_level": 0..3                     relaxc --opt-level N
 *   "lib": "auto" | "none" | "all"        relaxc --lib MODE
 *   "lib_disable": ["matmul_bias", ...]   relaxc --lib-disable P (repeated), in order
 *   "disable_passes": ["dce", ...]        relaxc --disable-pass P (repeated)
 *
 * Each one reaches rx_build_opts exactly as relaxc's flag does, so the cache key (and
 * the artifact) of a request equals `relaxc hash` / `relaxc build` with the same flags.
 * Names are checked here against the compiler's own lists (rx_pipeline_optional,
 * rx_lib_pattern_name) for a 400 that lists the valid ones; an unknown option is a 400
 * naming the known ones. The options are held by value (fixed arrays), so a queued job
 * owns its copy without pointers into the request.
 *
 * Target options (a GPU's architecture and such) belong here too: a field in
 * rx_compile_opts, a key in parse() and KNOWN, and a line in rx_compile_opts_apply.
 */
#include <stdio.h>
#include <string.h>

#include "relax/driver.h"
#include "server_int.h"

#define KNOWN "opt_level, lib, lib_disable, disable_passes"

static const char *lib_modes[] = {"auto", "none", "all"}; /* index = rx_lib_mode */

/* True when name is one of list(i) for i = 0, 1, ... (NULL-terminated by the getter). */
static bool in_list(const char *name, const char *(*list)(int))
{
    for (int i = 0; list(i); i++)
        if (!strcmp(name, list(i))) return true;
    return false;
}

static void list_names(char *out, size_t cap, const char *(*list)(int))
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; list(i) && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? ", " : "", list(i));
}

/* A list of names, each from list(): copied into names[]. NULL or a message in msg. */
static const char *parse_names(const char *key, const json_t *v, const char *(*list)(int),
                               char names[][RX_COMPILE_NAME_MAX], int *n, char *msg, size_t cap)
{
    if (!json_is_array(v) || json_array_size(v) > RX_COMPILE_NAMES) {
        snprintf(msg, cap, "\"%s\" must be a list of at most %d names", key, RX_COMPILE_NAMES);
        return msg;
    }
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        if (!s || !in_list(s, list)) {
            char known[320];
            list_names(known, sizeof known, list);
            snprintf(msg, cap, "\"%s\"[%zu] %s%.40s%s is not one of: %s", key, i, s ? "\"" : "",
                     s ? s : "(not a string)", s ? "\"" : "", known);
            return msg;
        }
        snprintf(names[*n], RX_COMPILE_NAME_MAX, "%s", s);
        ++*n;
    }
    return NULL;
}

const char *rx_compile_opts_parse(const json_t *options, int *opt_level, rx_compile_opts *o,
                                  char *msg, size_t cap)
{
    const char *key;
    json_t *v;
    if (!json_is_object(options)) return "\"options\" must be an object";
    json_object_foreach((json_t *)options, key, v) {
        const char *bad = NULL;
        if (!strcmp(key, "opt_level")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 3)
                return "\"opt_level\" must be an integer 0..3";
            *opt_level = (int)json_integer_value(v);
        } else if (!strcmp(key, "lib")) {
            const char *s = json_string_value(v);
            o->lib_mode = -1;
            for (int i = 0; s && i < (int)RX_COUNTOF(lib_modes); i++)
                if (!strcmp(s, lib_modes[i])) o->lib_mode = i;
            if (o->lib_mode < 0) return "\"lib\" must be \"auto\", \"none\" or \"all\"";
        } else if (!strcmp(key, "lib_disable")) {
            bad = parse_names(key, v, rx_lib_pattern_name, o->lib_disable, &o->nlib_disable,
                              msg, cap);
        } else if (!strcmp(key, "disable_passes")) {
            bad = parse_names(key, v, rx_pipeline_optional, o->disable, &o->ndisable, msg, cap);
        } else {
            snprintf(msg, cap, "unknown option \"%.64s\" (known: " KNOWN ")", key);
            return msg;
        }
        if (bad) return bad;
    }
    return NULL;
}

void rx_compile_opts_apply(const rx_compile_opts *o, rx_build_opts *bo, rx_compile_names *hold)
{
    bo->lib.mode = o->lib_mode;
    for (int i = 0; i < o->nlib_disable; i++) hold->lib_disable[i] = o->lib_disable[i];
    hold->lib_disable[o->nlib_disable] = NULL;
    bo->lib.disable = o->nlib_disable ? hold->lib_disable : NULL;
    for (int i = 0; i < o->ndisable; i++) hold->disable[i] = o->disable[i];
    hold->disable[o->ndisable] = NULL;
    bo->disable = o->ndisable ? hold->disable : NULL;
}
