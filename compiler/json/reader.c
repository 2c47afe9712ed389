/*
 * reader.c — relax-json v1 reader: the document, the module, constants, attributes,
 * and the helpers every part of the reader shares (errors, keys, scopes).
 *
 * Reading happens in steps:
 *   1. bounds on the raw text: size (max_bytes) and nesting depth (max_depth, by a
 *      linear scan that skips strings), so hostile input never reaches the parser's
 *      own limits or our recursion;
 *   2. jansson parses with duplicate keys rejected and trailing text refused; its
 *      errors (invalid UTF-8 included) are reported with line and column;
 *   3. the top level: format and version, constants (before functions, so that
 *      {"const": "w0"} resolves), then functions in two passes: every rx_func is
 *      created first so that any function may call any other, then each body is read
 *      (read_graph.c, read_tir.c).
 * Every value read gets an rx_loc as the reader descends; keys that come from the
 * input are copied into the module arena because the location table keeps them.
 *
 * jansson's memory. jansson allocates every value, key and hashtable separately;
 * freeing a big document's tree costs as much as parsing it (glibc consolidating
 * thousands of small chunks). While rx_json_read parses, this thread's jansson
 * allocations go to a temporary arena freed at once when the tree is dropped
 * (measured: 10,000 bindings, 770 KB, parse + free 48 ms -> 27 ms). The allocator
 * functions are installed once at load time (before any thread starts); outside a
 * parse, and on every other thread, they are plain malloc and free. The thread-local
 * arena pointer is this library's one piece of global state; every tree parsed under
 * it is released before the arena is.
 *
 * rx_json_read_value starts at step 3 with a document someone else parsed (relaxd has
 * the request body's tree already): the depth bound is checked by walking the tree,
 * max_bytes is left to the caller (there is no text), and the tree stays the caller's,
 * allocated however the caller's thread allocated it.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_int.h"
#include "relax/half.h" /* the runtime's header-only f16 rounding */

/* ---------------------------------------------------------------- errors, keys */

void rxi_rd_err(rx_reader *r, rx_loc loc, const char *fmt, ...)
{
    rx_sb sb = {0};
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    rx_diag_at(r->d, &r->m->locs, loc, "%s", rx_sb_str(&sb));
    rx_sb_free(&sb);
}

bool rxi_rd_failed(const rx_reader *r) { return rx_diags_count(r->d) != r->nerr0; }

rx_loc rxi_rd_key(rx_reader *r, rx_loc parent, const char *key)
{
    return rx_loc_key(&r->m->locs, parent, key);
}

rx_loc rxi_rd_idx(rx_reader *r, rx_loc parent, int index)
{
    return rx_loc_index(&r->m->locs, parent, index);
}

rx_loc rxi_rd_dkey(rx_reader *r, rx_loc parent, const char *key)
{
    return rx_loc_key(&r->m->locs, parent, rx_arena_strdup(r->a, key));
}

const char *rxi_rd_desc(rx_reader *r, const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    case JSON_INTEGER: return rx_arena_printf(r->a, "%lld", (long long)json_integer_value(j));
    case JSON_REAL: return rx_arena_printf(r->a, "%g", json_real_value(j));
    case JSON_STRING: {
        size_t n = json_string_length(j);
        return rx_arena_printf(r->a, "\"%.*s%s\"", (int)(n > 40 ? 37 : n), json_string_value(j),
                               n > 40 ? "..." : "");
    }
    }
    return "?";
}

bool rxi_rd_keys(rx_reader *r, const json_t *obj, rx_loc loc, const char *const *allowed)
{
    bool ok = true;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool found = false;
        for (int i = 0; allowed[i] && !found; i++) found = strcmp(allowed[i], key) == 0;
        if (found) continue;
        rx_sb list = {0};
        for (int i = 0; allowed[i]; i++) rx_sb_printf(&list, "%s%s", i ? ", " : "", allowed[i]);
        rxi_rd_err(r, rxi_rd_dkey(r, loc, key), "unknown key \"%s\" (expected one of: %s)", key,
                  rx_sb_str(&list));
        rx_sb_free(&list);
        ok = false;
    }
    return ok;
}

json_t *rxi_rd_get(rx_reader *r, const json_t *obj, rx_loc loc, const char *key, bool required)
{
    json_t *v = json_object_get(obj, key);
    if (!v && required) rxi_rd_err(r, loc, "missing key \"%s\"", key);
    return v;
}

bool rxi_rd_want_object(rx_reader *r, const json_t *j, rx_loc loc, const char *what)
{
    if (json_is_object(j)) return true;
    rxi_rd_err(r, loc, "expected %s (an object), found %s", what, rxi_rd_desc(r, j));
    return false;
}

bool rxi_rd_want_array(rx_reader *r, const json_t *j, rx_loc loc, const char *what)
{
    if (json_is_array(j)) return true;
    rxi_rd_err(r, loc, "expected %s (an array), found %s", what, rxi_rd_desc(r, j));
    return false;
}

const char *rxi_rd_want_string(rx_reader *r, const json_t *j, rx_loc loc, const char *what)
{
    if (json_is_string(j)) return json_string_value(j);
    rxi_rd_err(r, loc, "expected %s (a string), found %s", what, rxi_rd_desc(r, j));
    return NULL;
}

bool rxi_rd_is_ident(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

const char *rxi_rd_ident(rx_reader *r, const json_t *j, rx_loc loc, const char *what)
{
    if (!json_is_string(j)) {
        rxi_rd_err(r, loc, "expected %s name (a string), found %s", what, rxi_rd_desc(r, j));
        return NULL;
    }
    if (!rxi_rd_is_ident(json_string_value(j), json_string_length(j))) {
        rxi_rd_err(r, loc, "%s name %s is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", what,
                  rxi_rd_desc(r, j));
        return NULL;
    }
    return rx_arena_strdup(r->a, json_string_value(j));
}

bool rxi_rd_dtype(rx_reader *r, const json_t *j, rx_loc loc, rx_dtype *out)
{
    if (!json_is_string(j)) {
        rxi_rd_err(r, loc, "expected a dtype string, found %s", rxi_rd_desc(r, j));
        return false;
    }
    if (!rx_dtype_parse(json_string_value(j), out) || *out == RX_DT_UNKNOWN) {
        rxi_rd_err(r, loc, "unknown dtype %s (expected one of: bool i8 i16 i32 i64 u8 u16 u32 "
                          "u64 f16 bf16 f32 f64)", rxi_rd_desc(r, j));
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- attributes */

rx_attr *rxi_rd_attr(rx_reader *r, const json_t *j, rx_loc loc)
{
    rx_attr *at = RX_NEW(r->a, rx_attr);
    at->loc = loc;
    switch (json_typeof(j)) {
    case JSON_NULL: at->kind = RX_A_NULL; break;
    case JSON_TRUE: case JSON_FALSE: at->kind = RX_A_BOOL; at->u.b = json_is_true(j); break;
    case JSON_INTEGER: at->kind = RX_A_INT; at->u.i = json_integer_value(j); break;
    case JSON_REAL: at->kind = RX_A_FLOAT; at->u.f = json_real_value(j); break;
    case JSON_STRING:
        at->kind = RX_A_STR;
        at->u.s = rx_arena_strndup(r->a, json_string_value(j), json_string_length(j));
        break;
    case JSON_ARRAY: {
        int n = (int)json_array_size(j);
        at->kind = RX_A_ARRAY;
        at->u.arr.n = n;
        at->u.arr.items = RX_NEWN(r->a, rx_attr *, n ? n : 1);
        for (int i = 0; i < n; i++)
            at->u.arr.items[i] = rxi_rd_attr(r, json_array_get(j, (size_t)i), rxi_rd_idx(r, loc, i));
        break;
    }
    case JSON_OBJECT: {
        int n = (int)json_object_size(j), i = 0;
        at->kind = RX_A_MAP;
        at->u.map.n = n;
        at->u.map.keys = RX_NEWN(r->a, const char *, n ? n : 1);
        at->u.map.vals = RX_NEWN(r->a, rx_attr *, n ? n : 1);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)j, key, v) {
            const char *k = rx_arena_strdup(r->a, key);
            at->u.map.keys[i] = k;
            at->u.map.vals[i++] = rxi_rd_attr(r, v, rx_loc_key(&r->m->locs, loc, k));
        }
        break;
    }
    }
    return at;
}

static const char *const COMPUTE_PATTERNS[] = {"ElementWise", "Broadcast", "Injective",
                                               "Reduction", "OutputEwiseFusible", "Opaque",
                                               NULL};

rx_attr *rxi_rd_func_attrs(rx_reader *r, rx_func *f, const json_t *j, rx_loc loc)
{
    if (!rxi_rd_want_object(r, j, loc, "function attributes")) return NULL;
    json_t *ub = json_object_get(j, "upper_bounds");
    if (ub) {
        rx_loc ul = rxi_rd_key(r, loc, "upper_bounds");
        if (rxi_rd_want_object(r, ub, ul, "a map from symbolic variables to bounds")) {
            const char *key;
            json_t *v;
            json_object_foreach(ub, key, v) {
                rx_loc kl = rxi_rd_dkey(r, ul, key);
                bool known = false;
                for (int i = 0; i < f->nsvars && !known; i++)
                    known = strcmp(f->svars[i]->name, key) == 0;
                if (!known)
                    rxi_rd_err(r, kl, "\"%s\" is not a symbolic variable of the signature of %s",
                              key, f->name);
                if (!json_is_integer(v) || json_integer_value(v) <= 0)
                    rxi_rd_err(r, kl, "expected a positive integer bound, found %s",
                              rxi_rd_desc(r, v));
            }
        }
    }
    json_t *cp = json_object_get(j, "compute_pattern");
    if (cp) {
        rx_loc cl = rxi_rd_key(r, loc, "compute_pattern");
        bool ok = false;
        for (int i = 0; COMPUTE_PATTERNS[i] && json_is_string(cp) && !ok; i++)
            ok = strcmp(COMPUTE_PATTERNS[i], json_string_value(cp)) == 0;
        if (!ok)
            rxi_rd_err(r, cl, "unknown compute pattern %s (expected one of: ElementWise, "
                             "Broadcast, Injective, Reduction, OutputEwiseFusible, Opaque)",
                      rxi_rd_desc(r, cp));
    }
    return rxi_rd_attr(r, j, loc);
}

/* ---------------------------------------------------------------- scopes */

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

void rxi_rd_scope_push(rxi_rd_scope *s, const char *name, void *p)
{
    if (s->e.n + 1 > s->nb) { /* grow and relink, oldest first */
        free(s->heads);
        s->nb = s->nb ? s->nb * 2 : 64;
        s->heads = rx_xcalloc((size_t)s->nb, sizeof *s->heads);
        for (int i = 0; i < s->e.n; i++) {
            rxi_rd_ent *e = &s->e.items[i];
            uint32_t b = name_hash(e->name, strlen(e->name)) & (uint32_t)(s->nb - 1);
            e->next = s->heads[b];
            s->heads[b] = i + 1;
        }
    }
    uint32_t b = name_hash(name, strlen(name)) & (uint32_t)(s->nb - 1);
    rxi_rd_ent e = {name, p, s->heads[b]};
    RX_VEC_PUSH(s->e, e);
    s->heads[b] = s->e.n;
}

void *rxi_rd_scope_get(const rxi_rd_scope *s, const char *name, size_t n)
{
    if (!s->nb) return NULL;
    uint32_t b = name_hash(name, n) & (uint32_t)(s->nb - 1);
    for (int32_t i = s->heads[b]; i; i = s->e.items[i - 1].next) {
        const rxi_rd_ent *e = &s->e.items[i - 1];
        if (strncmp(e->name, name, n) == 0 && e->name[n] == 0) return e->p;
    }
    return NULL;
}

void rxi_rd_scope_pop(rxi_rd_scope *s, int mark)
{
    for (int i = s->e.n - 1; i >= mark; i--) { /* entry i heads its bucket: LIFO */
        const rxi_rd_ent *e = &s->e.items[i];
        s->heads[name_hash(e->name, strlen(e->name)) & (uint32_t)(s->nb - 1)] = e->next;
    }
    if (mark < s->e.n) s->e.n = mark;
}

void rxi_rd_scope_free(rxi_rd_scope *s)
{
    RX_VEC_FREE(s->e);
    free(s->heads);
    s->heads = NULL;
    s->nb = 0;
}

/* ---------------------------------------------------------------- constants */

/* Writes v as an n-byte little-endian integer. */
static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* bfloat16 from binary32, round to nearest even. */
static uint16_t bf16_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/* Encodes one JSON number/bool as an element of dtype t into p. False (after an
 * error at loc) when the value is not representable. */
static bool encode_scalar(rx_reader *r, const json_t *v, rx_dtype t, uint8_t *p, rx_loc loc)
{
    int nb = rx_dtype_bits(t) / 8;
    if (t == RX_DT_BOOL) {
        if (json_is_boolean(v) || (json_is_integer(v) && (json_integer_value(v) == 0 ||
                                                          json_integer_value(v) == 1))) {
            p[0] = json_is_true(v) || (json_is_integer(v) && json_integer_value(v) == 1);
            return true;
        }
    } else if (rx_dtype_is_int(t) && json_is_number(v)) {
        double dv = json_number_value(v);
        bool integral = json_is_integer(v) || (dv == floor(dv) && fabs(dv) < 9.2e18);
        int64_t iv = json_is_integer(v) ? json_integer_value(v) : (int64_t)dv;
        int bits = rx_dtype_bits(t);
        bool fits = integral && (rx_dtype_is_uint(t)
                                     ? iv >= 0 && (bits >= 64 || iv < ((int64_t)1 << bits))
                                     : bits >= 64 || (iv >= -((int64_t)1 << (bits - 1)) &&
                                                      iv < ((int64_t)1 << (bits - 1))));
        if (fits) {
            put_le(p, (uint64_t)iv, nb);
            return true;
        }
    } else if (rx_dtype_is_float(t) && json_is_number(v)) {
        double dv = json_number_value(v);
        float fv = (float)dv;
        uint32_t b32;
        uint64_t b64;
        switch (t) {
        case RX_DT_F64: memcpy(&b64, &dv, 8); put_le(p, b64, 8); return true;
        case RX_DT_F32:
            if (isinf(fv)) break;
            memcpy(&b32, &fv, 4);
            put_le(p, b32, 4);
            return true;
        case RX_DT_F16: {
            uint16_t h = rx_f32_to_f16(fv);
            if (isinf(fv) || (h & 0x7c00u) == 0x7c00u) break;
            put_le(p, h, 2);
            return true;
        }
        default: {
            uint16_t h = bf16_bits(fv);
            if (isinf(fv) || (h & 0x7f80u) == 0x7f80u) break;
            put_le(p, h, 2);
            return true;
        }
        }
    }
    rxi_rd_err(r, loc, "%s is not representable as %s", rxi_rd_desc(r, v), rx_dtype_name(t));
    return false;
}

/* A fresh constant of dtype t and the given shape, with nbytes of zeroed data. */
static rx_const *new_const(rx_reader *r, const char *name, rx_dtype t, int ndim, rx_loc loc)
{
    rx_const *c = RX_NEW(r->a, rx_const);
    c->name = name;
    c->dtype = t;
    c->ndim = ndim;
    c->shape = RX_NEWN(r->a, int64_t, ndim ? ndim : 1);
    c->loc = loc;
    return c;
}

rx_const *rxi_rd_const_scalar(rx_reader *r, const json_t *v, const json_t *dt, rx_loc loc,
                             rx_loc dtloc)
{
    rx_dtype t = json_is_boolean(v) ? RX_DT_BOOL : json_is_integer(v) ? RX_DT_I64 : RX_DT_F32;
    if (dt && !rxi_rd_dtype(r, dt, dtloc, &t)) return NULL;
    if (!json_is_number(v) && !json_is_boolean(v)) {
        rxi_rd_err(r, loc, "expected a number, a bool, a constant name or a constant object, "
                          "found %s", rxi_rd_desc(r, v));
        return NULL;
    }
    rx_const *c = new_const(r, NULL, t, 0, loc);
    c->nbytes = (size_t)rx_dtype_bits(t) / 8;
    c->data = RX_NEWN(r->a, uint8_t, c->nbytes);
    return encode_scalar(r, v, t, c->data, loc) ? c : NULL;
}

rx_const *rxi_rd_const_obj(rx_reader *r, const json_t *j, rx_loc loc, const char *name)
{
    static const char *const keys[] = {"dtype", "shape", "data", NULL};
    if (!rxi_rd_want_object(r, j, loc, "a constant {\"dtype\", \"shape\", \"data\"}") ||
        !rxi_rd_keys(r, j, loc, keys))
        return NULL;
    json_t *dt = rxi_rd_get(r, j, loc, "dtype", true), *sh = rxi_rd_get(r, j, loc, "shape", true),
           *data = rxi_rd_get(r, j, loc, "data", true);
    rx_dtype t = RX_DT_UNKNOWN;
    bool ok = dt && rxi_rd_dtype(r, dt, rxi_rd_key(r, loc, "dtype"), &t);
    rx_loc sl = rxi_rd_key(r, loc, "shape"), dl = rxi_rd_key(r, loc, "data");
    if (!sh || !rxi_rd_want_array(r, sh, sl, "a shape of non-negative integers")) return NULL;
    int ndim = (int)json_array_size(sh);
    rx_const *c = new_const(r, name, t, ndim, loc);
    size_t numel = 1;
    bool big = false;
    for (int i = 0; i < ndim; i++) {
        json_t *e = json_array_get(sh, (size_t)i);
        if (!json_is_integer(e) || json_integer_value(e) < 0) {
            rxi_rd_err(r, rxi_rd_idx(r, sl, i), "expected a non-negative integer, found %s",
                      rxi_rd_desc(r, e));
            ok = false;
            continue;
        }
        c->shape[i] = json_integer_value(e);
        if (c->shape[i] && numel > SIZE_MAX / 16 / (size_t)c->shape[i]) big = true;
        else numel *= (size_t)c->shape[i];
    }
    if (!data || !ok) return NULL;
    if (!json_is_string(data)) {
        rxi_rd_err(r, dl, "expected base64 data (a string), found %s", rxi_rd_desc(r, data));
        return NULL;
    }
    uint8_t *bytes = NULL;
    size_t nbytes = 0;
    if (!rx_base64_decode(json_string_value(data), json_string_length(data), &bytes, &nbytes)) {
        rxi_rd_err(r, dl, "data is not valid base64 (standard alphabet, padded)");
        return NULL;
    }
    size_t esize = (size_t)rx_dtype_bits(t) / 8;
    if (big || nbytes != numel * esize) {
        rxi_rd_err(r, dl, "data holds %zu bytes, expected %s%zu (%zu elements of %s)", nbytes,
                  big ? "more than " : "", big ? (size_t)SIZE_MAX / 16 : numel * esize,
                  big ? (size_t)SIZE_MAX / 16 : numel, rx_dtype_name(t));
        free(bytes);
        return NULL;
    }
    c->nbytes = nbytes;
    c->data = nbytes ? rx_arena_dup(r->a, bytes, nbytes) : RX_NEWN(r->a, uint8_t, 1);
    free(bytes);
    return c;
}

/* ---------------------------------------------------------------- the module */

typedef struct pending { rx_func *f; json_t *j; rx_loc loc; } pending;

/* A global name: an identifier that may also hold dots ("fused.add"). */
static bool global_name_ok(const char *s)
{
    if (!rxi_rd_is_ident(s, 1)) return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.') return false;
    return true;
}

/* Pass 1 over `functions`: one rx_func per entry, with its kind; bodies come later. */
static void declare_functions(rx_reader *r, json_t *fns, rx_loc fl, pending *pend)
{
    int n = (int)json_object_size(fns), i = 0;
    r->m->funcs = RX_NEWN(r->a, rx_func *, n ? n : 1);
    const char *key;
    json_t *v;
    json_object_foreach(fns, key, v) {
        const char *name = rx_arena_strdup(r->a, key);
        rx_loc loc = rx_loc_key(&r->m->locs, fl, name);
        rx_func *f = RX_NEW(r->a, rx_func);
        f->name = name;
        f->loc = loc;
        f->nouts = -1;
        pend[i] = (pending){f, NULL, loc};
        r->m->funcs[i++] = f;
        if (rxi_rd_scope_get(&r->globals, name, strlen(name)) == NULL)
            rxi_rd_scope_push(&r->globals, name, f);
        if (!global_name_ok(key)) {
            rxi_rd_err(r, loc, "function name \"%s\" is not a name ([A-Za-z_][A-Za-z0-9_.]*)",
                      key);
            continue;
        }
        if (!rxi_rd_want_object(r, v, loc, "a function")) continue;
        json_t *k = rxi_rd_get(r, v, loc, "kind", true);
        if (!k) continue;
        const char *ks = json_string_value(k);
        if (ks && strcmp(ks, "relax") == 0) f->kind = RX_F_RELAX;
        else if (ks && strcmp(ks, "tir") == 0) f->kind = RX_F_TIR;
        else {
            rxi_rd_err(r, rxi_rd_key(r, loc, "kind"), "expected \"relax\" or \"tir\", found %s",
                      rxi_rd_desc(r, k));
            continue;
        }
        pend[i - 1].j = v;
    }
    r->m->nfuncs = n;
}

/* Reads the top-level object. */
static void read_module(rx_reader *r, json_t *root)
{
    static const char *const keys[] = {"format", "version", "attrs", "functions", "constants",
                                       NULL};
    if (!rxi_rd_want_object(r, root, 0, "a relax-json module")) return;
    rxi_rd_keys(r, root, 0, keys);
    json_t *fmt = rxi_rd_get(r, root, 0, "format", true);
    if (fmt && !(json_is_string(fmt) && strcmp(json_string_value(fmt), "relax-json") == 0))
        rxi_rd_err(r, rxi_rd_key(r, 0, "format"), "expected \"relax-json\", found %s",
                  rxi_rd_desc(r, fmt));
    json_t *ver = rxi_rd_get(r, root, 0, "version", true);
    if (ver && !(json_is_integer(ver) && json_integer_value(ver) == 1))
        rxi_rd_err(r, rxi_rd_key(r, 0, "version"), "unsupported version %s (this reader reads 1)",
                  rxi_rd_desc(r, ver));
    json_t *at = json_object_get(root, "attrs");
    if (at && rxi_rd_want_object(r, at, rxi_rd_key(r, 0, "attrs"), "module attributes"))
        r->m->attrs = rxi_rd_attr(r, at, rxi_rd_key(r, 0, "attrs"));

    json_t *cs = json_object_get(root, "constants");
    rx_loc cl = rxi_rd_key(r, 0, "constants");
    if (cs && rxi_rd_want_object(r, cs, cl, "a map of constants")) {
        int n = (int)json_object_size(cs);
        r->m->consts = RX_NEWN(r->a, rx_const *, n ? n : 1);
        const char *key;
        json_t *v;
        json_object_foreach(cs, key, v) {
            const char *name = rx_arena_strdup(r->a, key);
            rx_const *c = rxi_rd_const_obj(r, v, rx_loc_key(&r->m->locs, cl, name), name);
            if (c) {
                r->m->consts[r->m->nconsts++] = c;
                rxi_rd_scope_push(&r->consts, name, c);
            } else {
                /* Known but invalid (already reported): uses stay silent. */
                rx_const *bad = RX_NEW(r->a, rx_const);
                bad->name = name;
                bad->ndim = -1;
                rxi_rd_scope_push(&r->consts, name, bad);
            }
        }
    }

    json_t *fns = rxi_rd_get(r, root, 0, "functions", true);
    rx_loc fl = rxi_rd_key(r, 0, "functions");
    if (!fns || !rxi_rd_want_object(r, fns, fl, "a map of functions")) return;
    int n = (int)json_object_size(fns);
    pending *pend = rx_xcalloc((size_t)(n ? n : 1), sizeof *pend);
    declare_functions(r, fns, fl, pend);
    for (int i = 0; i < n; i++) {
        if (!pend[i].j) continue;
        rxi_rd_scope_pop(&r->syms, 0);
        rxi_rd_scope_pop(&r->bufs, 0);
        rxi_rd_scope_pop(&r->locals, 0);
        r->loops.n = 0;
        r->loop_base = 0;
        r->in_dataflow = false;
        if (pend[i].f->kind == RX_F_RELAX) rxi_rd_relax_func(r, pend[i].f, pend[i].j, pend[i].loc);
        else rxi_rd_tir_func(r, pend[i].f, pend[i].j, pend[i].loc);
    }
    free(pend);
}

/* Rejects nesting deeper than max_depth before jansson sees the text. */
static bool depth_ok(const char *s, size_t n, int max_depth, rx_diags *d)
{
    int depth = 0, line = 1;
    size_t col0 = 0;
    bool str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\n') line++, col0 = i + 1;
        if (str) {
            if (c == '\\') i++;
            else if (c == '"') str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                rx_diag_add(d, "", "JSON nested deeper than %d levels at line %d, column %zu",
                            max_depth, line, i - col0 + 1);
                return false;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return true;
}

static _Thread_local rx_arena *parse_arena; /* set only inside rx_json_read's parse */

static void *jansson_malloc(size_t n)
{
    return parse_arena ? rx_arena_alloc(parse_arena, n) : malloc(n);
}

static void jansson_free(void *p)
{
    if (!parse_arena) free(p); /* inside a parse, everything freed is in the arena */
}

__attribute__((constructor)) static void install_jansson_alloc(void)
{
    json_set_alloc_funcs(jansson_malloc, jansson_free);
}

static rx_read_opts opts_or_defaults(const rx_read_opts *opts)
{
    rx_read_opts o = opts ? *opts : (rx_read_opts){0};
    if (!o.max_bytes) o.max_bytes = (size_t)256 << 20;
    if (o.max_depth <= 0) o.max_depth = RX_JSON_MAX_DEPTH;
    if (!o.max_expr_len) o.max_expr_len = 65536;
    if (o.max_expr_depth <= 0) o.max_expr_depth = 256;
    return o;
}

/* Steps 3 onwards on a parsed document (not released here). */
static rx_module *read_root(const json_t *root, const rx_read_opts *o, rx_diags *d)
{
    rx_reader r = {.m = rx_module_new(), .d = d, .o = *o, .nerr0 = rx_diags_count(d)};
    r.a = r.m->arena;
    read_module(&r, (json_t *)root);
    rxi_rd_scope_free(&r.syms);
    rxi_rd_scope_free(&r.bufs);
    rxi_rd_scope_free(&r.locals);
    rxi_rd_scope_free(&r.globals);
    rxi_rd_scope_free(&r.consts);
    rxi_rd_scope_free(&r.later);
    RX_VEC_FREE(r.loops);
    RX_VEC_FREE(r.open);
    if (rxi_rd_failed(&r)) {
        rx_module_free(r.m);
        return NULL;
    }
    return r.m;
}

rx_module *rx_json_read(const char *text, size_t n, const rx_read_opts *opts, rx_diags *d)
{
    rx_read_opts o = opts_or_defaults(opts);
    if (n > o.max_bytes) {
        rx_diag_add(d, "", "document is %zu bytes, over the limit of %zu bytes", n, o.max_bytes);
        return NULL;
    }
    if (!depth_ok(text, n, o.max_depth, d)) return NULL;
    json_error_t je;
    RX_ASSERT(!parse_arena);
    parse_arena = rx_arena_new();
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        rx_arena_free(parse_arena);
        parse_arena = NULL;
        rx_diag_add(d, "", "invalid JSON at line %d, column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    rx_module *m = read_root(root, &o, d);
    json_decref(root);
    rx_arena_free(parse_arena); /* the whole jansson tree at once */
    parse_arena = NULL;
    return m;
}

/* The nesting depth of a parsed value, at most limit + 1 (objects and arrays count). */
static int value_depth(const json_t *j, int limit)
{
    if (!json_is_object(j) && !json_is_array(j)) return 0;
    if (limit < 0) return 1;
    int deepest = 0;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j) && deepest <= limit; i++) {
            int dd = value_depth(json_array_get(j, i), limit - 1);
            if (dd > deepest) deepest = dd;
        }
    } else {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)j, key, v) {
            int dd = value_depth(v, limit - 1);
            if (dd > deepest) deepest = dd;
            if (deepest > limit) break;
        }
    }
    return deepest + 1;
}

rx_module *rx_json_read_value(const json_t *root, const rx_read_opts *opts, rx_diags *d)
{
    rx_read_opts o = opts_or_defaults(opts);
    if (value_depth(root, o.max_depth) > o.max_depth) {
        rx_diag_add(d, "", "JSON nested deeper than %d levels", o.max_depth);
        return NULL;
    }
    return read_root(root, &o, d);
}

rx_module *rx_json_read_file(const char *path, const rx_read_opts *opts, rx_diags *d)
{
    size_t limit = opts && opts->max_bytes ? opts->max_bytes : (size_t)256 << 20;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        rx_diag_add(d, "", "cannot read \"%s\": %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        rx_diag_add(d, "", "cannot read \"%s\": not a regular file", path);
        fclose(fp);
        return NULL;
    }
    if ((uint64_t)st.st_size > limit) {
        rx_diag_add(d, "", "\"%s\" is %lld bytes, over the limit of %zu bytes", path,
                    (long long)st.st_size, limit);
        fclose(fp);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *buf = rx_xmalloc(n ? n : 1);
    size_t got = fread(buf, 1, n, fp);
    bool err = ferror(fp) || got != n;
    fclose(fp);
    if (err) {
        rx_diag_add(d, "", "cannot read \"%s\": short read", path);
        free(buf);
        return NULL;
    }
    rx_module *m = rx_json_read(buf, n, opts, d);
    free(buf);
    return m;
}
