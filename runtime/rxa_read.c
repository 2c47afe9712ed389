/*
 * rxa_read.c — parsing and validating `.rxa` artifacts (format in rxa.h and
 * docs/artifact.md).
 *
 * The parser trusts nothing: every read goes through a cursor that knows the end of
 * its section, every count is checked against the bytes left before anything is
 * allocated for it, and every cross-reference (string index, symbol index, code range)
 * is checked against its table. The checks run in an order that gives the most useful
 * message for the common failures: bad magic, then version, then the section table
 * against the actual file length ("truncated: section CODE ends at byte 4096 of
 * 1200"), then total size, then the CRC, then the section contents.
 *
 * The parsed tables live in a private chunk arena freed with the struct. Strings and
 * constant data point into the caller's buffer; CODE is decoded to host-order int64.
 */
#include "relax/rxa.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a chunk arena for the parsed tables ---- */

typedef struct chunk {
    struct chunk *next; /* older chunk */
    size_t used, cap;   /* bytes used / usable after the header */
    max_align_t data[]; /* payload */
} chunk;

static void *arena_alloc(void **arena, size_t n)
{
    chunk *c = *arena;
    n = (n + 15) & ~(size_t)15;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        chunk *nc = malloc(sizeof *nc + cap);
        if (!nc) return NULL;
        nc->next = c;
        nc->used = 0;
        nc->cap = cap;
        *arena = c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

static void arena_free(void *arena)
{
    for (chunk *c = arena; c;) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
}

/* ---- little-endian helpers ---- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

uint32_t rx_rxa_crc32(uint32_t crc, const void *p, size_t n)
{
    /* Slicing by 8 (t[k][i]: the CRC of byte i followed by k zero bytes): eight bytes a
     * step, ~4x the byte-at-a-time loop, which at ~0.45 GB/s spent a quarter of a
     * decoder's relax-run start-up checking its weights. The tables are built per call
     * (no global state): t[0] always, the other seven for inputs of SLICE_MIN or more. */
    enum { SLICE_MIN = 4096 };
    uint32_t t[8][256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[0][i] = c;
    }
    const uint8_t *b = p;
    crc = ~crc;
    if (n >= SLICE_MIN) {
        for (uint32_t i = 0; i < 256; i++)
            for (int k = 1; k < 8; k++) t[k][i] = t[0][t[k - 1][i] & 0xff] ^ (t[k - 1][i] >> 8);
        for (; n >= 8; n -= 8, b += 8) {
            uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                 (uint32_t)b[3] << 24);
            crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
                  t[4][lo >> 24] ^ t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]];
        }
    }
    for (; n > 0; n--, b++) crc = t[0][(crc ^ *b) & 0xff] ^ (crc >> 8);
    return ~crc;
}

const char *rx_rxa_kind_name(uint32_t kind)
{
    static const char *const names[] = {
        "UNKNOWN", "METADATA", "STRINGS", "FUNCS", "CODE", "CONSTS",
        "KERNELS_CPU", "KERNELS_PTX", "KERNELS_OPENCL", "KERNELS_SPIRV", "LAUNCH",
        "KERNELS_CUBIN",
    };
    return kind <= RX_RXA_KIND_LAST ? names[kind] : "UNKNOWN";
}

size_t rx_rxa_dtype_bytes(uint32_t dtype)
{
    uint32_t code = dtype & 0xff, bits = (dtype >> 8) & 0xff, lanes = dtype >> 16;
    if (!dtype) return 0;
    if (lanes == 0) lanes = 1;
    if (code == 1 && bits == 1) bits = 8; /* bool: one byte */
    return ((size_t)bits * lanes + 7) / 8;
}

char *rx_rxa_dtype_name(uint32_t dtype, char *buf, size_t n)
{
    uint32_t code = dtype & 0xff, bits = (dtype >> 8) & 0xff, lanes = dtype >> 16;
    const char *pre = code == 0 ? "i" : code == 1 ? "u" : code == 2 ? "f" : code == 4 ? "bf" : "?";
    if (code == 1 && bits == 1)
        snprintf(buf, n, "bool");
    else if (lanes > 1)
        snprintf(buf, n, "%s%ux%u", pre, bits, lanes);
    else
        snprintf(buf, n, "%s%u", pre, bits);
    return buf;
}

/* ---- the parse state ---- */

typedef struct parser {
    rx_rxa *a;         /* being filled */
    const char *what;  /* file name for messages */
    char *err;         /* message buffer */
    size_t errlen;
} parser;

typedef struct cursor {
    const uint8_t *base; /* section start */
    size_t pos, end;     /* offset in section / section size */
    const char *sec;     /* section name for messages */
    parser *P;
    bool bad;            /* an error was reported */
} cursor;

static void perr(parser *P, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(P->err, P->errlen, "%s: ", P->what);
    if (k < 0 || (size_t)k >= P->errlen) return;
    va_start(ap, fmt);
    vsnprintf(P->err + k, P->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

static bool need(cursor *c, size_t n)
{
    if (c->bad) return false;
    if (c->end - c->pos < n) {
        perr(c->P, "%s: truncated at byte %zu of the section (%zu bytes), needs %zu more",
             c->sec, c->pos, c->end, n - (c->end - c->pos));
        c->bad = true;
        return false;
    }
    return true;
}

static uint32_t rd32(cursor *c)
{
    if (!need(c, 4)) return 0;
    c->pos += 4;
    return le32(c->base + c->pos - 4);
}

static int64_t rd64(cursor *c)
{
    if (!need(c, 8)) return 0;
    c->pos += 8;
    return (int64_t)le64(c->base + c->pos - 8);
}

static bool cfail(cursor *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    if (c->bad) return false;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    perr(c->P, "%s: %s (at byte %zu of the section)", c->sec, msg, c->pos);
    c->bad = true;
    return false;
}

/* Reads a count and checks that at least count*min_each bytes remain. */
static uint32_t rdcount(cursor *c, size_t min_each, const char *what)
{
    uint32_t n = rd32(c);
    if (c->bad) return 0;
    if (min_each && (uint64_t)n * min_each > c->end - c->pos) {
        cfail(c, "%s count %" PRIu32 " exceeds the section", what, n);
        return 0;
    }
    return n;
}

static void *palloc(cursor *c, size_t n)
{
    if (c->bad) return NULL;
    void *p = arena_alloc(&c->P->a->arena_, n ? n : 1);
    if (!p) cfail(c, "out of memory");
    return p;
}

static const char *rdstr(cursor *c, bool optional)
{
    uint32_t i = rd32(c);
    if (c->bad) return NULL;
    if (optional && i == RX_RXA_NONE) return NULL;
    if (i >= c->P->a->nstrings) {
        cfail(c, "string index %" PRIu32 " out of range (%" PRIu32 " strings)", i,
              c->P->a->nstrings);
        return NULL;
    }
    return c->P->a->strings[i];
}

static bool check_dtype(cursor *c, uint32_t dtype, bool allow_unknown)
{
    uint32_t code = dtype & 0xff, bits = (dtype >> 8) & 0xff;
    if (dtype == 0 && allow_unknown) return true;
    if (code > 5 || bits == 0) return cfail(c, "bad dtype 0x%08" PRIx32, dtype);
    return true;
}

/* ---- STRINGS ---- */

static bool parse_strings(parser *P, const rx_rxa_section *s)
{
    cursor c = {s->data, 0, s->size, "STRINGS", P, false};
    uint32_t n = rdcount(&c, 5, "string");
    const char **v = palloc(&c, sizeof *v * n);
    uint32_t *lens = palloc(&c, sizeof *lens * n);
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        uint32_t len = rd32(&c);
        if (!need(&c, (size_t)len + 1)) break;
        if (c.base[c.pos + len] != 0 || memchr(c.base + c.pos, 0, len))
            return cfail(&c, "string %" PRIu32 " is not NUL-terminated", i);
        v[i] = (const char *)c.base + c.pos;
        lens[i] = len;
        c.pos += (size_t)len + 1;
    }
    if (c.bad) return false;
    P->a->nstrings = n;
    P->a->strings = v;
    P->a->string_lens = lens;
    return true;
}

/* ---- FUNCS ---- */

static bool parse_dim(cursor *c, rx_rxa_dim *d, uint32_t nsym)
{
    uint32_t n = rd32(c);
    if (c->bad) return false;
    if (n > RX_RXA_MAX_TOKENS) return cfail(c, "dim expression of %" PRIu32 " tokens", n);
    rx_rxa_tok *t = palloc(c, sizeof *t * n);
    int depth = 0;
    for (uint32_t i = 0; i < n && !c->bad; i++) {
        t[i].op = rd32(c);
        if (t[i].op == RX_RXA_TOK_CONST) {
            t[i].arg = rd64(c);
            depth++;
        } else if (t[i].op == RX_RXA_TOK_VAR) {
            t[i].arg = rd32(c);
            if (!c->bad && t[i].arg >= nsym)
                return cfail(c, "symbol index %" PRId64 " out of range (%" PRIu32 " symbols)",
                             t[i].arg, nsym);
            depth++;
        } else if (t[i].op <= RX_RXA_TOK_MAX) {
            if (depth < 2) return cfail(c, "dim expression stack underflow");
            depth--;
        } else {
            return cfail(c, "bad dim expression token %" PRIu32, t[i].op);
        }
    }
    if (!c->bad && n && depth != 1) return cfail(c, "dim expression leaves %d values", depth);
    d->ntok = n;
    d->tok = t;
    return !c->bad;
}

static bool parse_type(cursor *c, rx_rxa_type *t, uint32_t nsym, unsigned depth)
{
    if (depth > RX_RXA_MAX_DEPTH) return cfail(c, "descriptor nested too deeply");
    t->name = rdstr(c, true);
    t->kind = rd32(c);
    if (c->bad) return false;
    switch (t->kind) {
    case RX_RXA_T_ANY:
        return true;
    case RX_RXA_T_TENSOR:
    case RX_RXA_T_SHAPE:
    case RX_RXA_T_INT: {
        if (t->kind == RX_RXA_T_TENSOR) {
            t->dtype = rd32(c);
            if (!check_dtype(c, t->dtype, true)) return false;
        }
        t->ndim = t->kind == RX_RXA_T_INT ? 1 : (int32_t)rd32(c);
        if (c->bad) return false;
        if (t->ndim < -1 || t->ndim > RX_RXA_MAX_NDIM)
            return cfail(c, "bad ndim %" PRId32, t->ndim);
        int32_t nd = t->ndim < 0 ? 0 : t->ndim;
        rx_rxa_dim *dims = palloc(c, sizeof *dims * (size_t)nd);
        for (int32_t i = 0; i < nd; i++)
            if (!parse_dim(c, &dims[i], nsym)) return false;
        t->dims = dims;
        if (t->kind == RX_RXA_T_INT) t->ndim = 0;
        return !c->bad;
    }
    case RX_RXA_T_TUPLE: {
        t->nfields = rdcount(c, 8, "tuple field");
        rx_rxa_type *f = palloc(c, sizeof *f * t->nfields);
        for (uint32_t i = 0; i < t->nfields && !c->bad; i++)
            if (!parse_type(c, &f[i], nsym, depth + 1)) return false;
        t->fields = f;
        return !c->bad;
    }
    default:
        return cfail(c, "bad descriptor kind %" PRIu32, t->kind);
    }
}

static bool parse_funcs(parser *P, const rx_rxa_section *s, size_t ncode)
{
    cursor c = {s->data, 0, s->size, "FUNCS", P, false};
    rx_rxa *a = P->a;
    uint32_t n = rdcount(&c, 36, "function");
    rx_rxa_func *fs = palloc(&c, sizeof *fs * n);
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        rx_rxa_func *f = &fs[i];
        f->name = rdstr(&c, false);
        f->nsym = rdcount(&c, 4, "symbol");
        const char **syms = palloc(&c, sizeof *syms * f->nsym);
        for (uint32_t k = 0; k < f->nsym && !c.bad; k++) syms[k] = rdstr(&c, false);
        f->syms = syms;
        f->nparams = rdcount(&c, 8, "parameter");
        rx_rxa_type *ps = palloc(&c, sizeof *ps * f->nparams);
        for (uint32_t k = 0; k < f->nparams && !c.bad; k++) parse_type(&c, &ps[k], f->nsym, 0);
        f->params = ps;
        parse_type(&c, &f->result, f->nsym, 0);
        f->nregs = rd32(&c);
        f->heap_size = rd32(&c);
        f->code_offset = rd32(&c);
        f->code_words = rd32(&c);
        if (c.bad) return false;
        if (f->nregs < f->nparams || f->nregs > (1u << 20))
            return cfail(&c, "function %s: bad register count %" PRIu32, f->name, f->nregs);
        if (f->heap_size > (1u << 24))
            return cfail(&c, "function %s: bad heap size %" PRIu32, f->name, f->heap_size);
        if (f->code_words == 0 || (uint64_t)f->code_offset + f->code_words > ncode)
            return cfail(&c, "function %s: code [%" PRIu32 ", +%" PRIu32 ") outside CODE (%zu words)",
                         f->name, f->code_offset, f->code_words, ncode);
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(fs[k].name, f->name))
                return cfail(&c, "duplicate function %s", f->name);
    }
    a->nfuncs = n;
    a->funcs = fs;
    uint32_t nk = rdcount(&c, 16, "kernel");
    rx_rxa_kernel *ks = palloc(&c, sizeof *ks * nk);
    for (uint32_t i = 0; i < nk && !c.bad; i++) {
        ks[i].name = rdstr(&c, false);
        ks[i].section = rd32(&c);
        ks[i].nbufs = rd32(&c);
        ks[i].nivars = rdcount(&c, 4, "ivar");
        const char **iv = palloc(&c, sizeof *iv * ks[i].nivars);
        for (uint32_t k = 0; k < ks[i].nivars && !c.bad; k++) iv[k] = rdstr(&c, false);
        ks[i].ivar_names = iv;
        ks[i].nlaunch = 0;
        ks[i].launches = NULL;
        if (c.bad) return false;
        if (ks[i].section < RX_RXA_KERNELS_CPU || ks[i].section > RX_RXA_KERNELS_SPIRV)
            return cfail(&c, "kernel %s: bad section kind %" PRIu32, ks[i].name, ks[i].section);
        if (!rx_rxa_section_get(a, ks[i].section))
            return cfail(&c, "kernel %s: no %s section", ks[i].name, rx_rxa_kind_name(ks[i].section));
        if (ks[i].nbufs > 4096) return cfail(&c, "kernel %s: %" PRIu32 " buffers", ks[i].name, ks[i].nbufs);
    }
    a->nkernels = nk;
    a->kernels = ks;
    if (!c.bad && c.pos != c.end) return cfail(&c, "%zu trailing bytes", c.end - c.pos);
    return !c.bad;
}

/* ---- LAUNCH ---- */

/* One launch record into *l (kernel k's ivars are its symbols; in_loop: a record in a
 * host loop's body, whose iteration is one more symbol). */
static bool parse_launch(cursor *c, const rx_rxa_kernel *k, rx_rxa_launch *l, bool in_loop)
{
    uint32_t n = rd32(c);
    if (c->bad) return false;
    if (n == 0 || n > 255) return cfail(c, "kernel %s: launch name of %" PRIu32 " bytes", k->name, n);
    if (!need(c, n)) return false;
    char *name = palloc(c, n + 1);
    if (!name) return false;
    memcpy(name, c->base + c->pos, n);
    name[n] = 0;
    c->pos += n;
    for (uint32_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_'))
            return cfail(c, "kernel %s: launch name is not an identifier", k->name);
    }
    l->name = name;
    l->sched = rd32(c);
    l->local = rd32(c);
    l->local_bytes = rd32(c);
    l->max_groups = rd32(c);
    if (c->bad) return false;
    if (l->sched > RX_RXA_SCHED_LOOP)
        return cfail(c, "launch %s: unknown schedule %" PRIu32, name, l->sched);
    if (l->sched == RX_RXA_SCHED_LOOP && in_loop)
        return cfail(c, "launch %s: a host loop inside a host loop", name);
    if (l->local == 0 || l->local > 65536)
        return cfail(c, "launch %s: %" PRIu32 " work-items per group", name, l->local);
    if (l->local_bytes > (1u << 30))
        return cfail(c, "launch %s: %" PRIu32 " bytes of local memory", name, l->local_bytes);
    if (l->max_groups == 0) return cfail(c, "launch %s: no work-groups", name);
    if (!parse_dim(c, &l->items, k->nivars + in_loop)) return false;
    if (l->sched == RX_RXA_SCHED_LOOP && l->items.ntok == 0)
        return cfail(c, "launch %s: a host loop without an iteration count", name);
    return true;
}

/* The LAUNCH section: a record list for every kernel of the table, in order. */
static bool parse_launches(parser *P, const rx_rxa_section *s)
{
    cursor c = {s->data, 0, s->size, "LAUNCH", P, false};
    rx_rxa *a = P->a;
    uint32_t nk = rd32(&c);
    if (!c.bad && nk != a->nkernels)
        return cfail(&c, "%" PRIu32 " entries for %" PRIu32 " kernels", nk, a->nkernels);
    rx_rxa_kernel *ks = (rx_rxa_kernel *)a->kernels;
    for (uint32_t i = 0; i < nk && !c.bad; i++) {
        uint32_t n = rdcount(&c, 24, "launch");
        if (c.bad) return false;
        if (n == 0 || n > RX_RXA_MAX_LAUNCHES)
            return cfail(&c, "kernel %s: %" PRIu32 " launches", ks[i].name, n);
        rx_rxa_launch *ls = palloc(&c, sizeof *ls * n);
        uint32_t body = 0; /* records left in the current host loop's body */
        for (uint32_t k = 0; k < n && !c.bad; k++) {
            parse_launch(&c, &ks[i], &ls[k], body > 0);
            if (c.bad) break;
            if (body) body--;
            else if (ls[k].sched == RX_RXA_SCHED_LOOP) body = ls[k].local;
            if (ls[k].sched == RX_RXA_SCHED_LOOP && ls[k].local > n - 1 - k)
                return cfail(&c, "launch %s: a host loop of %" PRIu32 " records, %" PRIu32 " follow",
                             ls[k].name, ls[k].local, n - 1 - k);
        }
        ks[i].nlaunch = n;
        ks[i].launches = ls;
    }
    if (!c.bad && c.pos != c.end) return cfail(&c, "%zu trailing bytes", c.end - c.pos);
    return !c.bad;
}

/* ---- KERNELS_SPIRV ---- */

enum { SPIRV_MAGIC = 0x07230203u, SPIRV_HEADER_WORDS = 5 };

/* Whether the bundle's entry names has the launch name `want` (n entries from base). */
static bool bundle_has(const uint8_t *base, uint32_t n, const char *want)
{
    size_t pos = 12;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = le32(base + pos);
        if (!strcmp((const char *)base + pos + 4, want)) return true;
        pos += 4 + 4 * (size_t)w;
        pos += 4 + 4 * (size_t)le32(base + pos);
    }
    return false;
}

/* The SPIR-V bundle (runtime/include/relax/device.h): header, then per kernel a
 * NUL-terminated name in whole words and a SPIR-V module (its magic and header);
 * nothing after the last; every launch record of a KERNELS_SPIRV kernel names one. */
static bool parse_spirv(parser *P, const rx_rxa_section *s)
{
    cursor c = {s->data, 0, s->size, "KERNELS_SPIRV", P, false};
    if (rd32(&c) != RX_RXA_SPIRV_BUNDLE_MAGIC && !c.bad)
        return cfail(&c, "not a SPIR-V bundle (magic)");
    uint32_t version = rd32(&c);
    if (!c.bad && version != 1) return cfail(&c, "bundle version %" PRIu32 " (1 expected)", version);
    uint32_t n = rdcount(&c, 8 + 4 * SPIRV_HEADER_WORDS, "kernel");
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        uint32_t w = rdcount(&c, 4, "name word");
        if (c.bad) break;
        if (w == 0 || c.base[c.pos + 4 * (size_t)w - 1] != 0 || c.base[c.pos] == 0)
            return cfail(&c, "kernel %" PRIu32 ": bad name", i);
        c.pos += 4 * (size_t)w;
        uint32_t m = rdcount(&c, 4, "module word");
        if (c.bad) break;
        if (m < SPIRV_HEADER_WORDS || le32(c.base + c.pos) != SPIRV_MAGIC)
            return cfail(&c, "kernel %" PRIu32 ": not a SPIR-V module", i);
        c.pos += 4 * (size_t)m;
    }
    if (!c.bad && c.pos != c.end) return cfail(&c, "%zu trailing bytes", c.end - c.pos);
    for (uint32_t k = 0; k < P->a->nkernels && !c.bad; k++) {
        const rx_rxa_kernel *kk = &P->a->kernels[k];
        if (kk->section != RX_RXA_KERNELS_SPIRV) continue;
        for (uint32_t l = 0; l < kk->nlaunch && !c.bad; l++)
            if (kk->launches[l].sched != RX_RXA_SCHED_LOOP && !bundle_has(c.base, n, kk->launches[l].name))
                cfail(&c, "kernel %s: no module for launch %s", kk->name, kk->launches[l].name);
    }
    return !c.bad;
}

/* ---- CONSTS ---- */

static bool parse_consts(parser *P, const rx_rxa_section *s)
{
    cursor c = {s->data, 0, s->size, "CONSTS", P, false};
    uint32_t n = rdcount(&c, 24, "constant");
    rx_rxa_const *cs = palloc(&c, sizeof *cs * n);
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        cs[i].dtype = rd32(&c);
        if (!check_dtype(&c, cs[i].dtype, false)) return false;
        cs[i].ndim = (int32_t)rd32(&c);
        if (c.bad) return false;
        if (cs[i].ndim < 0 || cs[i].ndim > RX_RXA_MAX_NDIM)
            return cfail(&c, "constant %" PRIu32 ": bad ndim %" PRId32, i, cs[i].ndim);
        int64_t *shape = palloc(&c, sizeof *shape * (size_t)cs[i].ndim);
        uint64_t count = 1;
        for (int32_t k = 0; k < cs[i].ndim && !c.bad; k++) {
            shape[k] = rd64(&c);
            if (shape[k] < 0 || (shape[k] && count > UINT64_MAX / 2 / (uint64_t)shape[k]))
                return cfail(&c, "constant %" PRIu32 ": bad dim %" PRId64, i, shape[k]);
            count *= (uint64_t)shape[k];
        }
        cs[i].shape = shape;
        uint64_t off = (uint64_t)rd64(&c);
        cs[i].nbytes = (uint64_t)rd64(&c);
        if (c.bad) return false;
        size_t eb = rx_rxa_dtype_bytes(cs[i].dtype);
        if (count > UINT64_MAX / eb || cs[i].nbytes != count * eb)
            return cfail(&c, "constant %" PRIu32 ": %" PRIu64 " bytes for %" PRIu64 " elements",
                         i, cs[i].nbytes, count);
        if (off % RX_RXA_ALIGN || off > s->size || cs[i].nbytes > s->size - off)
            return cfail(&c, "constant %" PRIu32 ": data [%" PRIu64 ", +%" PRIu64
                             ") misaligned or outside the section (%" PRIu64 " bytes)",
                         i, off, cs[i].nbytes, s->size);
        cs[i].data = s->data + off;
    }
    P->a->nconsts = n;
    P->a->consts = cs;
    return !c.bad;
}

/* ---- header and section table ---- */

const rx_rxa_section *rx_rxa_section_get(const rx_rxa *a, uint32_t kind)
{
    for (uint32_t i = 0; i < a->nsections; i++)
        if (a->sections[i].kind == kind) return &a->sections[i];
    return NULL;
}

static bool parse_header(parser *P, const uint8_t *b, size_t n)
{
    rx_rxa *a = P->a;
    if (n < RX_RXA_HEADER_SIZE) {
        if (n >= 8 && memcmp(b, RX_RXA_MAGIC, 8) != 0) goto magic;
        perr(P, "truncated: %zu bytes, the header alone is %u", n, RX_RXA_HEADER_SIZE);
        return false;
    }
    if (memcmp(b, RX_RXA_MAGIC, 8) != 0) {
    magic:
        perr(P, "not a relax artifact (bad magic)");
        return false;
    }
    a->version = le32(b + 8);
    if (a->version != RX_RXA_VERSION) {
        perr(P, "unsupported format version %" PRIu32 " (this runtime reads version %u)",
             a->version, RX_RXA_VERSION);
        return false;
    }
    uint32_t flags = le32(b + 12), nsec = le32(b + 16);
    uint64_t total = le64(b + 24);
    uint32_t crc = le32(b + 32);
    if (flags != 0) {
        perr(P, "unknown header flags 0x%08" PRIx32, flags);
        return false;
    }
    if (le32(b + 20) != 0 || le32(b + 36) != 0) {
        perr(P, "corrupted: reserved header fields are not zero");
        return false;
    }
    if (nsec == 0 || nsec > RX_RXA_MAX_SECTIONS) {
        perr(P, "corrupted: %" PRIu32 " sections (1..%u allowed)", nsec, RX_RXA_MAX_SECTIONS);
        return false;
    }
    uint64_t table_end = RX_RXA_HEADER_SIZE + (uint64_t)nsec * RX_RXA_SECTION_ENTRY_SIZE;
    if (table_end > n) {
        perr(P, "truncated: section table ends at byte %" PRIu64 " of %zu", table_end, n);
        return false;
    }
    a->nsections = nsec;
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *e = b + RX_RXA_HEADER_SIZE + (size_t)i * RX_RXA_SECTION_ENTRY_SIZE;
        rx_rxa_section *s = &a->sections[i];
        s->kind = le32(e);
        s->offset = le64(e + 8);
        s->size = le64(e + 16);
        const char *kn = rx_rxa_kind_name(s->kind);
        if (s->kind == 0 || s->kind > RX_RXA_KIND_LAST) {
            perr(P, "corrupted: unknown section kind %" PRIu32, s->kind);
            return false;
        }
        if (le32(e + 4) != 0) {
            perr(P, "corrupted: section %s has unknown flags", kn);
            return false;
        }
        if (s->offset < table_end || s->offset % RX_RXA_ALIGN) {
            perr(P, "corrupted: section %s at bad offset %" PRIu64, kn, s->offset);
            return false;
        }
        if (s->offset > n || s->size > n - s->offset) {
            uint64_t end = s->offset + s->size;
            if (end < s->offset) end = UINT64_MAX;
            perr(P, "truncated: section %s ends at byte %" PRIu64 " of %zu", kn, end, n);
            return false;
        }
        for (uint32_t k = 0; k < i; k++) {
            const rx_rxa_section *o = &a->sections[k];
            if (o->kind == s->kind) {
                perr(P, "corrupted: duplicate section %s", kn);
                return false;
            }
            if (s->offset < o->offset + o->size && o->offset < s->offset + s->size) {
                perr(P, "corrupted: sections %s and %s overlap", rx_rxa_kind_name(o->kind), kn);
                return false;
            }
        }
        s->data = b + s->offset;
    }
    /* Sections tile the file: sorted by offset, each starts at the 64-byte boundary
     * after the previous one (the table for the first) and the last ends the file. The
     * header is not under the CRC, so this is what catches a changed section count. */
    uint64_t expect = (table_end + RX_RXA_ALIGN - 1) & ~(uint64_t)(RX_RXA_ALIGN - 1);
    uint32_t used = 0; /* bit i: section i placed (zero-size sections share offsets) */
    for (uint32_t done = 0; done < nsec; done++) {
        const rx_rxa_section *next = NULL;
        uint32_t pick = 0;
        for (uint32_t i = 0; i < nsec; i++)
            if (!(used >> i & 1) && a->sections[i].offset >= expect &&
                (!next || a->sections[i].offset < next->offset))
                next = &a->sections[i], pick = i;
        if (next) used |= 1u << pick;
        if (!next || next->offset != expect) {
            perr(P, "corrupted: no section starts at byte %" PRIu64, expect);
            return false;
        }
        uint64_t end = next->offset + next->size;
        expect = done + 1 < nsec ? (end + RX_RXA_ALIGN - 1) & ~(uint64_t)(RX_RXA_ALIGN - 1) : end;
    }
    if (expect != total && total <= n) {
        perr(P, "corrupted: sections end at byte %" PRIu64 ", header says %" PRIu64, expect, total);
        return false;
    }
    if (total != n) {
        if (total > n)
            perr(P, "truncated: header says %" PRIu64 " bytes, file has %zu", total, n);
        else
            perr(P, "corrupted: header says %" PRIu64 " bytes, file has %zu", total, n);
        return false;
    }
    uint32_t got = rx_rxa_crc32(0, b + RX_RXA_HEADER_SIZE, n - RX_RXA_HEADER_SIZE);
    if (got != crc) {
        perr(P, "corrupted: CRC-32 mismatch (header 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
             crc, got);
        return false;
    }
    static const uint32_t required[] = {RX_RXA_STRINGS, RX_RXA_FUNCS, RX_RXA_CODE};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!rx_rxa_section_get(a, required[i])) {
            perr(P, "missing section %s", rx_rxa_kind_name(required[i]));
            return false;
        }
    return true;
}

int rx_rxa_parse(const uint8_t *bytes, size_t n, const char *what, rx_rxa **out,
                 char *err, size_t errlen)
{
    char dummy[8];
    parser P = {NULL, what ? what : "<memory>", err ? err : dummy, err ? errlen : sizeof dummy};
    P.err[0] = 0;
    *out = NULL;
    rx_rxa *a = calloc(1, sizeof *a);
    if (!a) {
        perr(&P, "out of memory");
        return -1;
    }
    P.a = a;
    a->bytes = bytes;
    a->size = n;
    if (!parse_header(&P, bytes, n)) goto fail;
    if (!parse_strings(&P, rx_rxa_section_get(a, RX_RXA_STRINGS))) goto fail;

    const rx_rxa_section *code = rx_rxa_section_get(a, RX_RXA_CODE);
    if (code->size % 8) {
        perr(&P, "CODE: size %" PRIu64 " is not a multiple of 8", code->size);
        goto fail;
    }
    a->ncode = (size_t)(code->size / 8);
    int64_t *words = arena_alloc(&a->arena_, a->ncode * 8 + 8);
    if (!words) {
        perr(&P, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < a->ncode; i++) words[i] = (int64_t)le64(code->data + i * 8);
    a->code = words;

    if (!parse_funcs(&P, rx_rxa_section_get(a, RX_RXA_FUNCS), a->ncode)) goto fail;
    const rx_rxa_section *cs = rx_rxa_section_get(a, RX_RXA_CONSTS);
    if (cs && !parse_consts(&P, cs)) goto fail;
    const rx_rxa_section *ls = rx_rxa_section_get(a, RX_RXA_LAUNCH);
    if (ls && !parse_launches(&P, ls)) goto fail;
    const rx_rxa_section *sv = rx_rxa_section_get(a, RX_RXA_KERNELS_SPIRV);
    if (sv && !parse_spirv(&P, sv)) goto fail;
    *out = a;
    return 0;
fail:
    rx_rxa_free(a);
    return -1;
}

void rx_rxa_free(rx_rxa *a)
{
    if (!a) return;
    arena_free(a->arena_);
    free(a);
}

const rx_rxa_func *rx_rxa_find_func(const rx_rxa *a, const char *name)
{
    for (uint32_t i = 0; i < a->nfuncs; i++)
        if (!strcmp(a->funcs[i].name, name)) return &a->funcs[i];
    return NULL;
}

/* ---- dim expressions ---- */

static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int rx_rxa_dim_eval(const rx_rxa_dim *d, const int64_t *symvals, const uint8_t *known,
                    uint32_t nsym, int64_t *out, char *err, size_t errlen)
{
    int64_t st[RX_RXA_MAX_TOKENS];
    int sp = 0;
    if (d->ntok == 0 || d->ntok > RX_RXA_MAX_TOKENS) {
        snprintf(err, errlen, "unknown dim");
        return -1;
    }
    for (uint32_t i = 0; i < d->ntok; i++) {
        const rx_rxa_tok *t = &d->tok[i];
        if (t->op == RX_RXA_TOK_CONST) {
            st[sp++] = t->arg;
            continue;
        }
        if (t->op == RX_RXA_TOK_VAR) {
            if (t->arg < 0 || (uint64_t)t->arg >= nsym || (known && !known[t->arg])) {
                snprintf(err, errlen, "symbol %" PRId64 " has no value", t->arg);
                return -1;
            }
            st[sp++] = symvals[t->arg];
            continue;
        }
        if (sp < 2 || t->op > RX_RXA_TOK_MAX) {
            snprintf(err, errlen, "malformed dim expression");
            return -1;
        }
        int64_t y = st[--sp], x = st[sp - 1], r = 0;
        bool ovf = false;
        switch (t->op) {
        case RX_RXA_TOK_ADD: ovf = __builtin_add_overflow(x, y, &r); break;
        case RX_RXA_TOK_SUB: ovf = __builtin_sub_overflow(x, y, &r); break;
        case RX_RXA_TOK_MUL: ovf = __builtin_mul_overflow(x, y, &r); break;
        case RX_RXA_TOK_FLOORDIV:
        case RX_RXA_TOK_FLOORMOD:
            if (y == 0) {
                snprintf(err, errlen, "division by zero");
                return -1;
            }
            if (x == INT64_MIN && y == -1) {
                ovf = true;
                break;
            }
            r = floordiv64(x, y);
            if (t->op == RX_RXA_TOK_FLOORMOD) r = x - r * y;
            break;
        case RX_RXA_TOK_MIN: r = x < y ? x : y; break;
        default: r = x > y ? x : y; break;
        }
        if (ovf) {
            snprintf(err, errlen, "overflow");
            return -1;
        }
        st[sp - 1] = r;
    }
    if (sp != 1) {
        snprintf(err, errlen, "malformed dim expression");
        return -1;
    }
    *out = st[0];
    return 0;
}
