/*
 * target.c — the target kinds, their options, parsing and normalization (target.h).
 *
 * One table, `kinds`, lists every kind with its options; parsing, the normalized form,
 * relaxd's GET /v1/targets and the docs all follow it. A target text is split at commas:
 * the first field is the kind, every later one `key=value`. Values are checked against
 * the option's range as they are read, so the first bad field is the one reported; the
 * cross-option rule (tile * tile <= max_threads) is checked once all are read: a tile
 * left at its default is halved until it fits, a tile given explicitly must fit.
 *
 * Cost: linear in the text, which is bounded (RX_TARGET_INPUT_MAX) before anything else.
 */
#include "relax/target.h"

#include "relax/nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_TARGET_INPUT_MAX 256 /* longer target text is refused unread */

typedef struct kind_def {
    const char *name;
    rx_target_opt opts[RX_TARGET_MAX_OPTS];
    int nopts;
} kind_def;

#define MAX_THREADS_DOC "work-items (threads) per work-group"
#define LOCAL_DOC "local (shared) memory bytes per work-group"
#define TILE_DOC "matmul tile edge: a tile of tile x tile outputs is one work-group"

static const kind_def kinds[RX_TARGET_NKINDS] = {
    [RX_TARGET_CPU] = {"cpu", {{0}}, 0},
    [RX_TARGET_OPENCL] = {"opencl",
                          {{"max_threads", MAX_THREADS_DOC, 256, 1, 4096, true, NULL, NULL},
                           {"max_local_bytes", LOCAL_DOC, 32768, 1024, 1048576, false, NULL, NULL},
                           {"tile", TILE_DOC, 16, 1, 32, true, NULL, NULL},
                           {"clblast", "1: matmuls the library cost rule picks run CLBlast "
                            "(libclblast.so.1, loaded at run time; the artifact also carries "
                            "their generated kernels, run where CLBlast cannot be loaded); 0: "
                            "every matmul is generated", 1, 0, 1, false, NULL, NULL}},
                          4},
    [RX_TARGET_VULKAN] = {"vulkan",
                          {{"max_threads", MAX_THREADS_DOC, 256, 1, 1024, true, NULL, NULL},
                           {"max_local_bytes", LOCAL_DOC, 16384, 1024, 65536, false, NULL, NULL},
                           {"max_push_bytes", "push-constant bytes for scalar arguments", 128,
                            128, 256, false, NULL, NULL},
                           {"tile", TILE_DOC, 16, 1, 32, true, NULL, NULL}},
                          4},
    [RX_TARGET_CUDA] = {"cuda",
                        {{"arch", "GPU architecture (compute capability)", 0, 0, 0, false,
                          "sm_80", "sm_NN or sm_NNN"},
                         {"max_threads", MAX_THREADS_DOC, 256, 1, 1024, true, NULL, NULL},
                         {"max_local_bytes", LOCAL_DOC, 49152, 1024, 232448, false, NULL, NULL},
                         {"tile", TILE_DOC, 16, 1, 32, true, NULL, NULL},
                         {"cublas", "1: matmuls the library cost rule picks run cuBLAS "
                          "(libcublas, loaded at run time); 0: every matmul is generated", 1, 0, 1,
                          false, NULL, NULL}},
                        5},
};

const char *rx_target_kind_name(rx_target_kind k)
{
    return k >= 0 && k < RX_TARGET_NKINDS ? kinds[k].name : NULL;
}

int rx_target_nopts(rx_target_kind k)
{
    return k >= 0 && k < RX_TARGET_NKINDS ? kinds[k].nopts : 0;
}

const rx_target_opt *rx_target_opt_at(rx_target_kind k, int i)
{
    return i >= 0 && i < rx_target_nopts(k) ? &kinds[k].opts[i] : NULL;
}

bool rx_target_available(rx_target_kind k, char *why, size_t cap)
{
    if (k == RX_TARGET_CPU || k == RX_TARGET_OPENCL) return true;
    if (k == RX_TARGET_CUDA) return rx_nvrtc_available(why, cap);
#ifndef RX_HAVE_SHADERC
    if (k == RX_TARGET_VULKAN) {
        snprintf(why, cap, "this compiler was built without libshaderc (GLSL -> SPIR-V): "
                           "install libshaderc-dev, glslang-dev and spirv-tools and rebuild");
        return false;
    }
#endif
    if (k == RX_TARGET_VULKAN) return true;
    snprintf(why, cap, "target kind %d is not one this compiler knows", (int)k);
    return false;
}

/* ---- parsing ---- */

/* "sm_" followed by 2 or 3 digits. */
static bool valid_arch(const char *v)
{
    size_t n = strlen(v);
    if (n < 5 || n > 6 || strncmp(v, "sm_", 3)) return false;
    for (size_t i = 3; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return false;
    return true;
}

/* Reads decimal v into *out; false when it is not one (sign, junk, overflow). */
static bool read_int(const char *v, int64_t *out)
{
    if (!*v || strlen(v) > 18) return false;
    int64_t x = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        x = x * 10 + (*p - '0');
    }
    *out = x;
    return true;
}

/* Sets option o (index i) of t from value v; false with a diagnostic. */
static bool set_opt(rx_target *t, const rx_target_opt *o, int i, const char *v, rx_diags *d)
{
    const char *kn = kinds[t->kind].name;
    if (o->sdef) {
        if (!valid_arch(v)) {
            rx_diag_add(d, "target", "%s option %s: \"%s\" is not of the form %s", kn, o->name,
                        v, o->spattern);
            return false;
        }
        snprintf(t->s[i], sizeof t->s[i], "%s", v);
        return true;
    }
    int64_t x;
    if (!read_int(v, &x)) {
        rx_diag_add(d, "target", "%s option %s: \"%s\" is not a non-negative decimal integer",
                    kn, o->name, v);
        return false;
    }
    if (x < o->min || x > o->max) {
        rx_diag_add(d, "target", "%s option %s=%lld is out of range (%lld..%lld)", kn, o->name,
                    (long long)x, (long long)o->min, (long long)o->max);
        return false;
    }
    if (o->pow2 && (x & (x - 1))) {
        rx_diag_add(d, "target", "%s option %s=%lld is not a power of two", kn, o->name,
                    (long long)x);
        return false;
    }
    t->v[i] = x;
    return true;
}

/* The index of option name in kind k, -1 when it has none such. */
static int opt_index(rx_target_kind k, const char *name)
{
    for (int i = 0; i < kinds[k].nopts; i++)
        if (!strcmp(kinds[k].opts[i].name, name)) return i;
    return -1;
}

static void unknown_option(rx_diags *d, rx_target_kind k, const char *key)
{
    rx_sb known = {0};
    for (int i = 0; i < kinds[k].nopts; i++)
        rx_sb_printf(&known, "%s%s", i ? ", " : "", kinds[k].opts[i].name);
    if (kinds[k].nopts)
        rx_diag_add(d, "target", "unknown %s option \"%s\" (known: %s)", kinds[k].name, key,
                    rx_sb_str(&known));
    else
        rx_diag_add(d, "target", "target %s takes no options (got \"%s\")", kinds[k].name, key);
    rx_sb_free(&known);
}

/* Writes t->norm from t's values. */
static void normalize(rx_target *t)
{
    const kind_def *k = &kinds[t->kind];
    size_t n = (size_t)snprintf(t->norm, sizeof t->norm, "%s", k->name);
    for (int i = 0; i < k->nopts; i++) {
        const rx_target_opt *o = &k->opts[i];
        int w;
        if (o->sdef) {
            if (!strcmp(t->s[i], o->sdef)) continue;
            w = snprintf(t->norm + n, sizeof t->norm - n, ",%s=%s", o->name, t->s[i]);
        } else {
            if (t->v[i] == o->def) continue;
            w = snprintf(t->norm + n, sizeof t->norm - n, ",%s=%lld", o->name, (long long)t->v[i]);
        }
        RX_ASSERT(w > 0 && (size_t)w < sizeof t->norm - n); /* the table's values fit */
        n += (size_t)w;
    }
}

/* Parses the fields of copy (text, writable) into t. */
static bool parse_fields(char *copy, rx_target *t, rx_diags *d)
{
    char *field = copy;
    char *comma = strchr(field, ',');
    if (comma) *comma = '\0';
    int k = -1;
    for (int i = 0; i < RX_TARGET_NKINDS; i++)
        if (!strcmp(field, kinds[i].name)) k = i;
    if (k < 0) {
        rx_diag_add(d, "target", "unknown target %s (known: cpu, cuda, opencl, vulkan)", field);
        return false;
    }
    t->kind = (rx_target_kind)k;
    for (int i = 0; i < kinds[k].nopts; i++) {
        t->v[i] = kinds[k].opts[i].def;
        if (kinds[k].opts[i].sdef) snprintf(t->s[i], sizeof t->s[i], "%s", kinds[k].opts[i].sdef);
    }
    bool seen[RX_TARGET_MAX_OPTS] = {false};
    /* fields by hand (not strtok): "opencl,,tile=8" is an error, not one field */
    for (char *p = comma ? comma + 1 : NULL; p;) {
        char *next = strchr(p, ',');
        if (next) *next++ = '\0';
        char *eq = strchr(p, '=');
        if (!eq || eq == p || !eq[1]) {
            rx_diag_add(d, "target", "target option \"%s\" is not key=value", p);
            return false;
        }
        *eq = '\0';
        int i = opt_index(t->kind, p);
        if (i < 0) {
            unknown_option(d, t->kind, p);
            return false;
        }
        if (seen[i]) {
            rx_diag_add(d, "target", "%s option %s is given twice", kinds[k].name, p);
            return false;
        }
        seen[i] = true;
        if (!set_opt(t, &kinds[k].opts[i], i, eq + 1, d)) return false;
        p = next;
    }
    int ti = opt_index(t->kind, "tile"), mi = opt_index(t->kind, "max_threads");
    /* a default tile shrinks to fit a smaller max_threads; a given one must fit */
    while (ti >= 0 && mi >= 0 && !seen[ti] && t->v[ti] * t->v[ti] > t->v[mi]) t->v[ti] /= 2;
    if (ti >= 0 && mi >= 0 && t->v[ti] * t->v[ti] > t->v[mi]) {
        rx_diag_add(d, "target", "%s: tile=%lld needs %lld threads per work-group, more than "
                    "max_threads=%lld", kinds[k].name, (long long)t->v[ti],
                    (long long)(t->v[ti] * t->v[ti]), (long long)t->v[mi]);
        return false;
    }
    normalize(t);
    return true;
}

bool rx_target_parse(const char *text, rx_target *t, rx_diags *d)
{
    memset(t, 0, sizeof *t);
    if (!text || !*text) text = "cpu";
    size_t n = strnlen(text, RX_TARGET_INPUT_MAX + 1);
    if (n > RX_TARGET_INPUT_MAX) {
        rx_diag_add(d, "target", "target is longer than %d characters", RX_TARGET_INPUT_MAX);
        return false;
    }
    char copy[RX_TARGET_INPUT_MAX + 1];
    memcpy(copy, text, n + 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)copy[i] <= ' ' || (unsigned char)copy[i] >= 127) {
            rx_diag_add(d, "target", "target contains a space or a non-ASCII character at "
                        "offset %zu", i);
            return false;
        }
    return parse_fields(copy, t, d);
}

int64_t rx_target_int(const rx_target *t, const char *name)
{
    int i = opt_index(t->kind, name);
    RX_ASSERT(i >= 0 && !kinds[t->kind].opts[i].sdef);
    return t->v[i];
}

const char *rx_target_str(const rx_target *t, const char *name)
{
    int i = opt_index(t->kind, name);
    RX_ASSERT(i >= 0 && kinds[t->kind].opts[i].sdef);
    return t->s[i];
}
