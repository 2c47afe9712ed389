/*
 * safetensors.c — the .safetensors reader (contracts in safetensors.h).
 *
 * Step 1: read the file, check the 8-byte header length against the file size.
 * Step 2: parse the header: an object whose members are tensors ({"dtype", "shape",
 *         "data_offsets"}, other keys skipped) or "__metadata__" (skipped); the reader
 *         is a cursor over the bounded header text, one function per JSON construct.
 * Step 3: per tensor, check its byte range and build its .npy image.
 * Cost: O(file size); memory: the file plus one copy of the tensors as .npy images.
 */
#include "safetensors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cur {
    const char *p, *end;
    char *err;
    size_t errlen;
    int failed;
} cur;

static int fail(cur *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    c->failed = 1;
    return -1;
}

static void ws(cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int expect(cur *c, char ch)
{
    ws(c);
    if (c->p >= c->end || *c->p != ch) return fail(c, "header: expected '%c' at byte %ld", ch,
                                                  (long)(c->end - c->p));
    c->p++;
    return 0;
}

static int peek(cur *c, char ch)
{
    ws(c);
    return c->p < c->end && *c->p == ch;
}

/* A string without escapes; *s points into the header, *n its length. */
static int string(cur *c, const char **s, size_t *n)
{
    if (expect(c, '"')) return -1;
    const char *b = c->p;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p == '\\') return fail(c, "header: escapes in names are not supported");
        c->p++;
    }
    if (c->p >= c->end) return fail(c, "header: unterminated string");
    *s = b;
    *n = (size_t)(c->p - b);
    c->p++;
    return 0;
}

static int integer(cur *c, int64_t *v)
{
    ws(c);
    int64_t x = 0;
    const char *b = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (x > (INT64_MAX - 9) / 10) return fail(c, "header: integer too large");
        x = x * 10 + (*c->p++ - '0');
    }
    if (c->p == b) return fail(c, "header: expected a non-negative integer");
    *v = x;
    return 0;
}

/* [i, i, ...] into v (at most max). */
static int int_list(cur *c, int64_t *v, int max, int *n)
{
    *n = 0;
    if (expect(c, '[')) return -1;
    if (peek(c, ']')) return expect(c, ']');
    for (;;) {
        if (*n >= max) return fail(c, "header: list longer than %d", max);
        if (integer(c, &v[(*n)++])) return -1;
        if (peek(c, ',')) { c->p++; continue; }
        return expect(c, ']');
    }
}

/* Skips any value (strings, numbers, literals, lists, objects) up to depth 4. */
static int skip(cur *c, int depth)
{
    if (depth > 4) return fail(c, "header: nested too deeply");
    ws(c);
    if (c->p >= c->end) return fail(c, "header: truncated");
    if (*c->p == '"') {
        const char *s;
        size_t n;
        return string(c, &s, &n);
    }
    if (*c->p == '[' || *c->p == '{') {
        char close = *c->p == '[' ? ']' : '}';
        int obj = *c->p == '{';
        c->p++;
        if (peek(c, close)) return expect(c, close);
        for (;;) {
            if (obj) {
                const char *s;
                size_t n;
                if (string(c, &s, &n) || expect(c, ':')) return -1;
            }
            if (skip(c, depth + 1)) return -1;
            if (peek(c, ',')) { c->p++; continue; }
            return expect(c, close);
        }
    }
    while (c->p < c->end && strchr("0123456789+-.eEtruefalsn", *c->p)) c->p++;
    return 0;
}

static const struct { const char *st, *descr; int size; } dtypes[] = {
    {"F16", "<f2", 2}, {"BF16", "<u2", 2}, {"F32", "<f4", 4}, {"F64", "<f8", 8},
    {"I8", "|i1", 1}, {"I16", "<i2", 2}, {"I32", "<i4", 4}, {"I64", "<i8", 8},
    {"U8", "|u1", 1}, {"U16", "<u2", 2}, {"U32", "<u4", 4}, {"U64", "<u8", 8},
    {"BOOL", "|b1", 1},
};

/* One tensor's object; fills the .npy image from data (the bytes after the header). */
static int tensor(cur *c, rx_st_tensor *t, const uint8_t *data, size_t ndata)
{
    int di = -1, nshape = -1, noff = -1;
    int64_t shape[32], off[2];
    if (expect(c, '{')) return -1;
    if (!peek(c, '}')) {
        for (;;) {
            const char *k = NULL;
            size_t kn = 0;
            if (string(c, &k, &kn) || expect(c, ':')) return -1;
            if (kn == 5 && !memcmp(k, "dtype", 5)) {
                const char *s = NULL;
                size_t n = 0;
                if (string(c, &s, &n)) return -1;
                for (int i = 0; i < (int)(sizeof dtypes / sizeof dtypes[0]); i++)
                    if (strlen(dtypes[i].st) == n && !memcmp(dtypes[i].st, s, n)) di = i;
                if (di < 0) return fail(c, "%s: unsupported dtype %.*s", t->name, (int)(n > 16 ? 16 : n), s);
            } else if (kn == 5 && !memcmp(k, "shape", 5)) {
                if (int_list(c, shape, 32, &nshape)) return -1;
            } else if (kn == 12 && !memcmp(k, "data_offsets", 12)) {
                if (int_list(c, off, 2, &noff)) return -1;
            } else if (skip(c, 2)) {
                return -1;
            }
            if (peek(c, ',')) { c->p++; continue; }
            break;
        }
    }
    if (expect(c, '}')) return -1;
    if (di < 0 || nshape < 0 || noff != 2)
        return fail(c, "%s: needs dtype, shape and data_offsets", t->name);
    uint64_t count = 1;
    for (int i = 0; i < nshape; i++) {
        if (shape[i] > (int64_t)1 << 40 || (shape[i] && count > (UINT64_C(1) << 50) / (uint64_t)shape[i]))
            return fail(c, "%s: shape too large", t->name);
        count *= (uint64_t)shape[i];
    }
    uint64_t nbytes = count * (uint64_t)dtypes[di].size;
    if (off[0] > off[1] || (uint64_t)off[1] > ndata || (uint64_t)(off[1] - off[0]) != nbytes)
        return fail(c, "%s: data_offsets [%lld, %lld] do not hold %llu bytes inside the %zu "
                    "data bytes", t->name, (long long)off[0], (long long)off[1],
                    (unsigned long long)nbytes, ndata);
    char hdr[1024];
    int hn = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                      dtypes[di].descr);
    for (int i = 0; i < nshape; i++)
        hn += snprintf(hdr + hn, sizeof hdr - (size_t)hn, "%lld%s", (long long)shape[i],
                       nshape == 1 ? "," : i + 1 < nshape ? ", " : "");
    hn += snprintf(hdr + hn, sizeof hdr - (size_t)hn, "), }");
    size_t total = 10 + (size_t)hn + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)hn + pad + 1;
    t->npy_n = 10 + hlen + nbytes;
    t->npy = malloc(t->npy_n ? t->npy_n : 1);
    if (!t->npy) return fail(c, "out of memory");
    memcpy(t->npy, "\x93NUMPY\x01\x00", 8);
    t->npy[8] = (uint8_t)(hlen & 255);
    t->npy[9] = (uint8_t)(hlen >> 8);
    memcpy(t->npy + 10, hdr, (size_t)hn);
    memset(t->npy + 10 + hn, ' ', pad);
    t->npy[10 + hlen - 1] = '\n';
    if (nbytes) memcpy(t->npy + 10 + hlen, data + off[0], nbytes);
    return 0;
}

void rx_st_free(rx_st_file *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->t[i].name);
        free(f->t[i].npy);
    }
    free(f->t);
    f->t = NULL;
    f->n = 0;
}

int rx_st_read(const char *path, rx_st_file *out, char *err, size_t errlen)
{
    out->t = NULL;
    out->n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 1 << 20;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    uint64_t hl = 0;
    for (int i = 0; i < 8 && n >= 8; i++) hl |= (uint64_t)buf[i] << (8 * i);
    if (n < 8 || hl > RX_ST_MAX_HEADER || hl > n - 8) {
        snprintf(err, errlen, "not a safetensors file (header length %llu, file %zu bytes)",
                 (unsigned long long)hl, n);
        free(buf);
        return -1;
    }
    cur c = {(const char *)buf + 8, (const char *)buf + 8 + hl, err, errlen, 0};
    const uint8_t *data = buf + 8 + hl;
    size_t ndata = n - 8 - (size_t)hl;
    int cap_t = 0;
    if (expect(&c, '{') == 0 && !peek(&c, '}')) {
        for (;;) {
            const char *k = NULL;
            size_t kn = 0;
            if (string(&c, &k, &kn) || expect(&c, ':')) break;
            if (kn == 12 && !memcmp(k, "__metadata__", 12)) {
                if (skip(&c, 1)) break;
            } else {
                if (out->n >= RX_ST_MAX_TENSORS) {
                    fail(&c, "more than %d tensors", RX_ST_MAX_TENSORS);
                    break;
                }
                if (out->n == cap_t) {
                    cap_t = cap_t ? cap_t * 2 : 64;
                    rx_st_tensor *nt = realloc(out->t, sizeof *nt * (size_t)cap_t);
                    if (!nt) {
                        fail(&c, "out of memory");
                        break;
                    }
                    out->t = nt;
                }
                rx_st_tensor *t = &out->t[out->n++];
                memset(t, 0, sizeof *t);
                t->name = malloc(kn + 1);
                if (!t->name) {
                    fail(&c, "out of memory");
                    break;
                }
                memcpy(t->name, k, kn);
                t->name[kn] = 0;
                if (tensor(&c, t, data, ndata)) break;
            }
            if (peek(&c, ',')) { c.p++; continue; }
            expect(&c, '}');
            break;
        }
    } else if (!c.failed) {
        expect(&c, '}');
    }
    free(buf);
    if (c.failed) {
        rx_st_free(out);
        return -1;
    }
    return 0;
}
