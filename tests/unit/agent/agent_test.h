/*
 * agent_test.h — helpers of the relax-agent unit tests: small valid artifacts built with
 * the .rxa builder (an identity function, or a kernel module compiled at test time
 * through ../runtime/rt_test.h), their ids, temp directories, and .npy images in memory.
 */
#ifndef RX_AGENT_TEST_H
#define RX_AGENT_TEST_H

#include "../runtime/rt_test.h"
#include "agent.h"

#include <dirent.h>

/* An artifact whose function `ident(x: (n, 4) f32) -> x`; *n its size (caller frees). */
static inline uint8_t *at_ident_artifact(size_t *n, const char *meta)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}}, four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, n_tok}, {1, four}};
    static const char *const syms[] = {"n"};
    rx_rxa_type params[1] = {rt_tensor("x", RX_RXA_F32, 2, dims)};
    rx_rxa_func f = rt_func("ident", 1, params, 1, 1);
    f.nsym = 1;
    f.syms = syms;
    rx_rxa_builder *b = rx_rxa_builder_new();
    if (meta) rx_rxa_set_metadata(b, meta, strlen(meta));
    uint32_t msg = rx_rxa_add_string(b, "ident: x: expected (n, 4)");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_RET, 0);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    uint8_t *bytes;
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, n), 0);
    rx_rxa_builder_free(b);
    return bytes;
}

/* A fresh directory under /tmp (path in buf). */
static inline void at_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/rxag-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Removes dir and the files in it (one level). */
static inline void at_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* Counts the entries of dir (without . and ..). */
static inline int at_count(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

/* A v1.0 .npy image of f32 data with the given shape (caller frees). */
static inline uint8_t *at_npy_f32(const float *data, int32_t ndim, const int64_t *shape, size_t *n)
{
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t count = 1;
    for (int32_t i = 0; i < ndim; i++) {
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld", i ? ", " : "",
                        (long long)shape[i]);
        count *= shape[i];
    }
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", ndim == 1 ? "," : "");
    size_t total = (10 + (size_t)len + 1 + 63) / 64 * 64, hlen = total - 10;
    *n = total + 4 * (size_t)count;
    uint8_t *b = malloc(*n);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(hlen & 0xff);
    b[9] = (uint8_t)(hlen >> 8);
    memcpy(b + 10, dict, (size_t)len);
    memset(b + 10 + len, ' ', hlen - (size_t)len - 1);
    b[total - 1] = '\n';
    memcpy(b + total, data, 4 * (size_t)count);
    return b;
}

/* Standard base64 of p[0..n) (caller frees). */
static inline char *at_b64(const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc((n + 2) / 3 * 4 + 1), *o = s;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = 0;
    return s;
}

#endif
