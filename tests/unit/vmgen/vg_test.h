/*
 * vg_test.h — helpers for the lowering tests: modules written as JSON with single
 * quotes (turned into double quotes before parsing, so the C strings stay readable),
 * built with rx_build, loaded with the runtime API, called with DLTensors over test
 * memory. Every helper fails the test with the build's or the runtime's message.
 */
#ifndef RX_VG_TEST_H
#define RX_VG_TEST_H

#include "relax/driver.h"
#include "relax/runtime.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"

/* A heap copy of s with every ' turned into ". */
static inline char *vt_json(const char *s)
{
    char *j = strdup(s);
    for (char *p = j; *p; p++)
        if (*p == '\'') *p = '"';
    return j;
}

/* Builds the module (single-quoted JSON) into artifact bytes; fails the test with the
 * diagnostics when the build fails. */
static inline uint8_t *vt_build(const char *sq, const rx_build_opts *o, size_t *n)
{
    char *j = vt_json(sq);
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    bool ok = rx_build(j, strlen(j), o, &rxa, n, &d);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    ck_assert_msg(ok, "build failed:\n%s", rx_sb_str(&msg));
    rx_sb_free(&msg);
    rx_diags_free(&d);
    free(j);
    return rxa;
}

/* The diagnostics of a build that must fail, one "path: message\n" per error (heap). */
static inline char *vt_build_error(const char *sq, const rx_build_opts *o)
{
    char *j = vt_json(sq);
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    size_t n = 0;
    ck_assert_msg(!rx_build(j, strlen(j), o, &rxa, &n, &d), "build unexpectedly succeeded");
    ck_assert_ptr_null(rxa);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    rx_diags_free(&d);
    free(j);
    return rx_sb_take(&msg);
}

/* Builds and loads. */
static inline rx_rt_module *vt_load(rx_rt_ctx *ctx, const char *sq)
{
    size_t n;
    uint8_t *rxa = vt_build(sq, NULL, &n);
    rx_rt_err err = {""};
    rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, n, "test.rxa", &err);
    free(rxa);
    ck_assert_msg(m != NULL, "load failed: %s", err.msg);
    return m;
}

static inline DLTensor vt_dl(void *data, uint8_t code, uint8_t bits, int32_t ndim, int64_t *shape)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

static inline DLTensor vt_f32(float *data, int32_t ndim, int64_t *shape)
{
    return vt_dl(data, kDLFloat, 32, ndim, shape);
}

/* The first element of t (constants are views into the artifact at a byte offset). */
static inline const void *vt_data(const DLTensor *t)
{
    return (const char *)t->data + t->byte_offset;
}

static inline rx_rt_arg vt_t(const DLTensor *t)
{
    rx_rt_arg a;
    memset(&a, 0, sizeof a);
    a.kind = RX_RT_ARG_TENSOR;
    a.tensor = t;
    return a;
}

/* Calls function `fn` by name; returns rx_rt_call's status. */
static inline int vt_call(rx_rt_module *m, const char *fn, const rx_rt_arg *args, int nargs,
                          rx_rt_outputs **out, rx_rt_call_stats *st, rx_rt_err *err)
{
    int f = rx_rt_find_function(m, fn);
    ck_assert_msg(f >= 0, "no function %s", fn);
    *out = NULL;
    return rx_rt_call(m, f, args, nargs, out, st, err);
}

/* Calls and expects success. */
static inline rx_rt_outputs *vt_ok(rx_rt_module *m, const char *fn, const rx_rt_arg *args,
                                   int nargs, rx_rt_call_stats *st)
{
    rx_rt_outputs *out;
    rx_rt_err err = {""};
    ck_assert_msg(vt_call(m, fn, args, nargs, &out, st, &err) == 0, "%s failed: %s", fn, err.msg);
    return out;
}

/* Calls and expects failure with exactly msg. */
static inline void vt_fails(rx_rt_module *m, const char *fn, const rx_rt_arg *args, int nargs,
                            const char *msg)
{
    rx_rt_outputs *out;
    rx_rt_err err = {""};
    ck_assert_int_eq(vt_call(m, fn, args, nargs, &out, NULL, &err), -1);
    ck_assert_ptr_null(out);
    ck_assert_str_eq(err.msg, msg);
}

/* A seeded pseudo-random fill in [-1, 1). */
static inline void vt_fill(float *x, int64_t n, uint32_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

#endif
