/*
 * npy.c — NumPy .npy reader and writer (format in npy.h).
 *
 * Reading is two steps: Step 1 the preamble (magic, version, header length, bounded by
 * RX_NPY_MAX_HEADER and by the buffer); Step 2 the header dict, by a recursive-descent
 * reader over [p, end) that accepts exactly the three keys NumPy writes — 'descr' (a
 * string), 'fortran_order' (True/False) and 'shape' (a tuple of non-negative ints,
 * Python 2's "3L" tolerated) — in any order, each once, with an optional trailing
 * comma, and then only spaces and newlines. The data size is then computed with
 * overflow checks and compared with what the buffer holds. Files are read whole
 * (their size is what the OS reports), so the cost is one read and one copy into a
 * 64-byte aligned block.
 */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relax/rxa.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- dtypes ---- */

static const struct {
    const char *descr; /* without the byte-order character */
    uint32_t dtype;    /* packed */
} dtypes[] = {
    {"f2", RX_RXA_DTYPE(2, 16, 1)}, {"f4", RX_RXA_DTYPE(2, 32, 1)},
    {"f8", RX_RXA_DTYPE(2, 64, 1)}, {"i1", RX_RXA_DTYPE(0, 8, 1)},
    {"i2", RX_RXA_DTYPE(0, 16, 1)}, {"i4", RX_RXA_DTYPE(0, 32, 1)},
    {"i8", RX_RXA_DTYPE(0, 64, 1)}, {"u1", RX_RXA_DTYPE(1, 8, 1)},
    {"u2", RX_RXA_DTYPE(1, 16, 1)}, {"u4", RX_RXA_DTYPE(1, 32, 1)},
    {"u8", RX_RXA_DTYPE(1, 64, 1)}, {"b1", RX_RXA_BOOL},
};

const char *rx_npy_descr(uint32_t dtype)
{
    static const char *const names[] = {"<f2", "<f4", "<f8", "|i1", "<i2", "<i4",
                                        "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"};
    if ((dtype >> 16) == 0) dtype |= 1u << 16; /* lanes 0 reads as 1 */
    if (dtype == RX_RXA_DTYPE(4, 16, 1)) return "<u2"; /* bf16: raw bits */
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype) return names[i];
    return NULL;
}

/* Maps a descr string to a packed dtype; 0 when unsupported (msg says why). */
static uint32_t descr_dtype(const char *s, size_t n, const char **why)
{
    *why = "unsupported dtype";
    if (n != 3) return 0;
    char order = s[0];
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (memcmp(s + 1, dtypes[i].descr, 2)) continue;
        int one_byte = s[2] == '1';
        if (order == '<' || order == '=' || (order == '|' && one_byte)) return dtypes[i].dtype;
        if (order == '>' && one_byte) return dtypes[i].dtype;
        if (order == '>') *why = "big-endian data is not supported";
        return 0;
    }
    return 0;
}

/* ---- header dict ---- */

typedef struct hdr {
    const char *p, *end; /* cursor and end of the header text */
} hdr;

static void skip_ws(hdr *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static int eat(hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "..."; no escapes needed for NumPy's keys and descrs). */
static int read_str(hdr *h, const char **s, size_t *n)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return -1;
    char q = *h->p++;
    const char *start = h->p;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\') return -1;
        h->p++;
    }
    if (h->p >= h->end) return -1;
    *s = start;
    *n = (size_t)(h->p - start);
    h->p++;
    return 0;
}

static int read_word(hdr *h, const char *w)
{
    size_t n = strlen(w);
    skip_ws(h);
    if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n)) return 0;
    h->p += n;
    return 1;
}

/* A non-negative integer (optional Python 2 "L"); -1 on syntax error or overflow. */
static int64_t read_int(hdr *h)
{
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return -1;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    return v;
}

static int parse_dict(hdr *h, rx_npy *out, char *err, size_t errlen)
{
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!eat(h, '{')) return fail(err, errlen, "bad header: expected a dict");
    for (;;) {
        if (eat(h, '}')) break;
        const char *key;
        size_t klen;
        if (read_str(h, &key, &klen)) return fail(err, errlen, "bad header: expected a key");
        if (!eat(h, ':')) return fail(err, errlen, "bad header: expected ':'");
        if (klen == 5 && !memcmp(key, "descr", 5)) {
            const char *s, *why;
            size_t n;
            if (have_descr++) return fail(err, errlen, "bad header: duplicate 'descr'");
            if (read_str(h, &s, &n))
                return fail(err, errlen, "unsupported dtype (structured or not a string)");
            out->dtype = descr_dtype(s, n, &why);
            if (!out->dtype) return fail(err, errlen, "%s '%.*s'", why, (int)(n < 32 ? n : 32), s);
        } else if (klen == 13 && !memcmp(key, "fortran_order", 13)) {
            if (have_order++) return fail(err, errlen, "bad header: duplicate 'fortran_order'");
            if (read_word(h, "True"))
                return fail(err, errlen, "fortran_order True is not supported (save a C-order array: np.ascontiguousarray)");
            if (!read_word(h, "False")) return fail(err, errlen, "bad header: bad 'fortran_order'");
        } else if (klen == 5 && !memcmp(key, "shape", 5)) {
            if (have_shape++) return fail(err, errlen, "bad header: duplicate 'shape'");
            if (!eat(h, '(')) return fail(err, errlen, "bad header: 'shape' is not a tuple");
            out->ndim = 0;
            while (!eat(h, ')')) {
                if (out->ndim >= RX_NPY_MAX_NDIM)
                    return fail(err, errlen, "more than %d dimensions", RX_NPY_MAX_NDIM);
                int64_t d = read_int(h);
                if (d < 0) return fail(err, errlen, "bad header: bad dimension in 'shape'");
                out->shape[out->ndim++] = d;
                if (!eat(h, ',')) {
                    if (!eat(h, ')')) return fail(err, errlen, "bad header: bad 'shape'");
                    if (out->ndim == 1)
                        return fail(err, errlen, "bad header: bad 'shape'"); /* (3) is no tuple */
                    break;
                }
            }
        } else {
            return fail(err, errlen, "bad header: unexpected key '%.*s'", (int)(klen < 32 ? klen : 32), key);
        }
        if (!eat(h, ',')) {
            if (!eat(h, '}')) return fail(err, errlen, "bad header: expected ',' or '}'");
            break;
        }
    }
    skip_ws(h);
    if (h->p != h->end) return fail(err, errlen, "bad header: trailing characters");
    if (!have_descr || !have_order || !have_shape)
        return fail(err, errlen, "bad header: missing '%s'",
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return 0;
}

int rx_npy_parse(const uint8_t *buf, size_t n, rx_npy *out, size_t *data_off, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    /* Step 1: preamble. */
    if (n < 6 || memcmp(buf, "\x93NUMPY", 6)) return fail(err, errlen, "not a .npy file (bad magic)");
    if (n < 10) return fail(err, errlen, "truncated: no header");
    uint8_t major = buf[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return fail(err, errlen, "truncated: no header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    } else {
        return fail(err, errlen, "unsupported .npy format version %u.%u", major, buf[7]);
    }
    if (hlen > RX_NPY_MAX_HEADER)
        return fail(err, errlen, "header of %zu bytes is too large (limit %u)", hlen, RX_NPY_MAX_HEADER);
    if (hlen > n - start)
        return fail(err, errlen, "truncated: header of %zu bytes, file has %zu", hlen, n - start);
    /* Step 2: the dict. */
    hdr h = {(const char *)buf + start, (const char *)buf + start + hlen};
    if (parse_dict(&h, out, err, errlen)) return -1;
    size_t esize = rx_rxa_dtype_bytes(out->dtype);
    int64_t count = 1;
    for (int32_t i = 0; i < out->ndim; i++)
        if (__builtin_mul_overflow(count, out->shape[i], &count))
            return fail(err, errlen, "shape too large");
    size_t bytes;
    if (__builtin_mul_overflow((size_t)count, esize, &bytes) || bytes > (size_t)INT64_MAX)
        return fail(err, errlen, "shape too large");
    size_t avail = n - start - hlen;
    if (bytes > avail)
        return fail(err, errlen, "truncated: header promises %zu data bytes, file has %zu", bytes, avail);
    out->count = count;
    out->nbytes = bytes;
    *data_off = start + hlen;
    return 0;
}

int rx_npy_read_mem(const uint8_t *buf, size_t n, rx_npy *out, char *err, size_t errlen)
{
    size_t off = 0;
    if (rx_npy_parse(buf, n, out, &off, err, errlen)) return -1;
    if (out->nbytes) {
        size_t alloc = (out->nbytes + 63) / 64 * 64;
        out->data = aligned_alloc(64, alloc);
        if (!out->data) return fail(err, errlen, "out of memory for %zu data bytes", out->nbytes);
        memcpy(out->data, buf + off, out->nbytes);
    }
    return 0;
}

int rx_npy_read_file(const char *path, rx_npy *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return fail(err, errlen, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "not a regular file");
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return fail(err, errlen, "out of memory reading %zu bytes", n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    int rc = rx_npy_read_mem(buf, got, out, err, errlen);
    free(buf);
    return rc;
}

int rx_npy_write_file(const char *path, uint32_t dtype, int32_t ndim, const int64_t *shape,
                      const void *data, size_t nbytes, char *err, size_t errlen)
{
    const char *descr = rx_npy_descr(dtype);
    if (!descr) {
        char name[32];
        return fail(err, errlen, "dtype %s has no .npy form", rx_rxa_dtype_name(dtype, name, sizeof name));
    }
    if (ndim < 0 || ndim > RX_NPY_MAX_NDIM) return fail(err, errlen, "bad ndim %d", (int)ndim);
    char dict[64 + RX_NPY_MAX_NDIM * 24];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int32_t i = 0; i < ndim; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", ndim == 1 ? "," : "");
    /* Pad with spaces so preamble + header (ending in '\n') is a multiple of 64. */
    size_t pre = 10, total = pre + (size_t)len + 1;
    total = (total + 63) / 64 * 64;
    size_t hlen = total - pre;
    uint8_t head[10 + sizeof dict + 64];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (uint8_t)(hlen & 0xff);
    head[9] = (uint8_t)(hlen >> 8);
    memcpy(head + pre, dict, (size_t)len);
    memset(head + pre + len, ' ', hlen - (size_t)len - 1);
    head[total - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, errlen, "cannot create: %s", strerror(errno));
    int ok = fwrite(head, 1, total, f) == total && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    if (fclose(f)) ok = 0;
    if (!ok) return fail(err, errlen, "write failed: %s", strerror(errno));
    return 0;
}
