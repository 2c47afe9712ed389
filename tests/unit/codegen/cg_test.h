/*
 * cg_test.h — shared helpers of the codegen tests: read a module from quoted JSON,
 * generate C, build it with the strict warning flags the generated code promises to
 * pass (-Wall -Wextra -Werror), dlopen the object and look a kernel up by the ABI.
 *
 * Test JSON uses single quotes, turned into double quotes before reading.
 */
#ifndef CG_TEST_H
#define CG_TEST_H

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relax/codegen.h"
#include "relax/json.h"

typedef int32_t (*cg_kernel)(void *const *data, const int64_t *ivars);

static inline void cg_dump(const rx_diags *d, const char *what)
{
    rx_sb sb = {0};
    rx_diags_format(d, &sb);
    ck_abort_msg("%s:\n%s", what, rx_sb_str(&sb));
    rx_sb_free(&sb);
}

/* Reads a module written with single quotes; fails the test on errors. */
static inline rx_module *cg_read(const char *q)
{
    char *t = rx_xstrdup(q);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(t, strlen(t), NULL, &d);
    free(t);
    if (!m) cg_dump(&d, "module does not read");
    rx_diags_free(&d);
    return m;
}

/* A loaded shared object. */
typedef struct cg_lib {
    void *dl;
} cg_lib;

/* Loads object bytes with dlopen through a temporary file (unlinked at once). */
static inline cg_lib cg_dlopen_bytes(const uint8_t *so, size_t n)
{
    char path[] = "/tmp/rxcg_test.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, so, n) == (ssize_t)n);
    close(fd);
    cg_lib lib = {dlopen(path, RTLD_NOW | RTLD_LOCAL)};
    unlink(path);
    ck_assert_msg(lib.dl != NULL, "dlopen: %s", dlerror());
    return lib;
}

/* Generates C for m with codegen options co (may be NULL) and builds it with the strict
 * flags plus `extra` (may be NULL). */
static inline cg_lib cg_build_opts(const rx_module *m, const rx_codegen_opts *co,
                                   const char *const *extra)
{
    static const char *const strict[] = {"-std=c11", "-O2", "-fPIC", "-shared", "-Wall",
                                         "-Wextra", "-Werror", NULL};
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    if (!rx_codegen_c_with(m, co, &c, &d)) cg_dump(&d, "codegen failed");
    rx_cc_opts o = {0};
    o.flags = strict;
    o.extra = extra;
    uint8_t *so = NULL;
    size_t n = 0;
    if (!rx_cc_build(c.p, c.n, &o, &so, &n, &d)) {
        fprintf(stderr, "%s\n", rx_sb_str(&c));
        cg_dump(&d, "build failed");
    }
    rx_diags_free(&d);
    rx_sb_free(&c);
    cg_lib lib = cg_dlopen_bytes(so, n);
    free(so);
    return lib;
}

/* Generates C for m and builds it with the strict flags plus `extra` (may be NULL). */
static inline cg_lib cg_build_with(const rx_module *m, const char *const *extra)
{
    return cg_build_opts(m, NULL, extra);
}

static inline cg_lib cg_build(const rx_module *m)
{
    return cg_build_with(m, NULL);
}

static inline cg_kernel cg_get(cg_lib lib, const char *fname)
{
    rx_sb s = {0};
    rx_codegen_symbol(fname, &s);
    void *p = dlsym(lib.dl, rx_sb_str(&s));
    ck_assert_msg(p != NULL, "no symbol %s", rx_sb_str(&s));
    rx_sb_free(&s);
    cg_kernel k;
    memcpy(&k, &p, sizeof k);
    return k;
}

/* The float with bit pattern b. */
static inline float cg_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* |y - want| in units in the last place of the float nearest want (accuracy tests of
 * the kernels' own math functions). */
static inline double cg_ulps(float y, double want)
{
    float wf = (float)want;
    double ulp = fabsf(wf) < 0x1p-126f ? 0x1p-149 : ldexp(1.0, ilogb(wf) - 23);
    return fabs((double)y - want) / ulp;
}

static inline void cg_close(cg_lib lib)
{
    dlclose(lib.dl);
}

#endif
