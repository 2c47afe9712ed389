/*
 * rt_test.h — helpers shared by the runtime tests: signature descriptors, building and
 * loading an artifact from a builder, and compiling a C kernel file into shared-object
 * bytes with /usr/bin/cc (posix_spawn with an argv; no shell) in a private temp dir.
 */
#ifndef RX_RT_TEST_H
#define RX_RT_TEST_H

#include "relax/runtime.h"

#include <check.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Dim expressions: a constant, a symbol. */
#define RT_TOK_C(v) {{RX_RXA_TOK_CONST, (v)}}
#define RT_TOK_V(i) {{RX_RXA_TOK_VAR, (i)}}

static inline rx_rxa_type rt_any(const char *name)
{
    rx_rxa_type t = {0};
    t.kind = RX_RXA_T_ANY;
    t.name = name;
    return t;
}

static inline rx_rxa_type rt_tensor(const char *name, uint32_t dtype, int32_t ndim,
                                    const rx_rxa_dim *dims)
{
    rx_rxa_type t = {0};
    t.kind = RX_RXA_T_TENSOR;
    t.name = name;
    t.dtype = dtype;
    t.ndim = ndim;
    t.dims = dims;
    return t;
}

static inline rx_rxa_type rt_int(const char *name)
{
    rx_rxa_type t = {0};
    t.kind = RX_RXA_T_INT;
    t.name = name;
    return t;
}

/* A function descriptor with only the VM-relevant fields set. */
static inline rx_rxa_func rt_func(const char *name, uint32_t nparams, const rx_rxa_type *params,
                                  uint32_t nregs, uint32_t heap)
{
    rx_rxa_func f = {0};
    f.name = name;
    f.nparams = nparams;
    f.params = params;
    f.result = rt_any(NULL);
    f.nregs = nregs;
    f.heap_size = heap;
    return f;
}

/* Serializes b and loads it; fails the test on error. */
static inline rx_rt_module *rt_load(rx_rt_ctx *ctx, rx_rxa_builder *b)
{
    uint8_t *bytes;
    size_t n;
    rx_rt_err err = {""};
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, &n), 0);
    rx_rt_module *m = rx_rt_load_bytes(ctx, bytes, n, "test.rxa", &err);
    free(bytes);
    ck_assert_msg(m != NULL, "load failed: %s", err.msg);
    return m;
}

/* Serializes b and loads it, expecting failure; returns the message (static). */
/* Adds function f with code c to b, frees c, loads the artifact and frees b. */
static inline rx_rt_module *rt_load_func(rx_rt_ctx *ctx, rx_rxa_builder *b,
                                         const rx_rxa_func *f, rx_rxa_code *c)
{
    rx_rxa_add_function(b, f, c->w, c->n);
    rx_rxa_code_free(c);
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    return m;
}

static inline const char *rt_load_error(rx_rt_ctx *ctx, rx_rxa_builder *b)
{
    static rx_rt_err err;
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, &n), 0);
    rx_rt_module *m = rx_rt_load_bytes(ctx, bytes, n, "test.rxa", &err);
    free(bytes);
    ck_assert_ptr_null(m);
    return err.msg;
}

/* Compiles C source into a shared object; returns its bytes (caller frees). */
static inline uint8_t *rt_compile_so(const char *src, size_t *n)
{
    char dir[] = "/tmp/rxrt-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cpath[64], sopath[64];
    snprintf(cpath, sizeof cpath, "%s/k.c", dir);
    snprintf(sopath, sizeof sopath, "%s/k.so", dir);
    FILE *f = fopen(cpath, "w");
    ck_assert_ptr_nonnull(f);
    fputs(src, f);
    fclose(f);
    char *argv[] = {"/usr/bin/cc", "-shared", "-fPIC", "-O2", "-o", sopath, cpath, NULL};
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cc failed");
    f = fopen(sopath, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *bytes = malloc((size_t)len);
    ck_assert_uint_eq(fread(bytes, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    unlink(cpath);
    unlink(sopath);
    rmdir(dir);
    *n = (size_t)len;
    return bytes;
}

/* A borrowed DLTensor over caller memory. */
static inline DLTensor rt_dl(void *data, uint32_t dtype, int32_t ndim, int64_t *shape)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype.code = (uint8_t)(dtype & 0xff);
    t.dtype.bits = (uint8_t)(dtype >> 8);
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

static inline rx_rt_arg rt_targ(const DLTensor *t)
{
    rx_rt_arg a;
    memset(&a, 0, sizeof a);
    a.kind = RX_RT_ARG_TENSOR;
    a.tensor = t;
    return a;
}

static inline rx_rt_arg rt_iarg(int64_t v)
{
    rx_rt_arg a;
    memset(&a, 0, sizeof a);
    a.kind = RX_RT_ARG_INT;
    a.i = v;
    return a;
}

#define RT_RUN_SUITE(make)                                   \
    int main(void)                                           \
    {                                                        \
        SRunner *sr = srunner_create(make());                \
        srunner_run_all(sr, CK_NORMAL);                      \
        int failed = srunner_ntests_failed(sr);              \
        srunner_free(sr);                                    \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;         \
    }

#endif
