/*
 * kernel_run.h — compiling a module's loop functions and running one kernel on
 * deterministic inputs, for tests that compare two compilations of the same function
 * bit for bit (test_schedule_tile.c: tiled vs untiled; test_specialize.c: specialized
 * vs generic). Included once per test executable, so everything is static.
 *
 * kr_load builds every loop function of a module with rx_codegen_c_with (ISA versions
 * on, as at opt level 3) + rx_cc_build (OpenMP on) into a private file and dlopens it; `isa` (NULL, "base", "v3") is put
 * in RX_KERNEL_ISA while the object loads, which caps the ISA version its kernels
 * dispatch to (c_kernel.c). kr_exec evaluates every buffer's shape from the named
 * values of the function's symbolic variables, fills each buffer with values from a
 * seed (valid finite numbers of its dtype: no NaN whose payload could differ), runs
 * the kernel, and keeps every buffer for kr_same, which asserts the bytes are equal.
 */
#ifndef RX_KERNEL_RUN_H
#define RX_KERNEL_RUN_H

#include "pass_test.h"
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relax/codegen.h"
#include "relax/driver.h"

enum { KR_MAXBUF = 16 };

typedef int32_t (*kr_kernel)(void *const *data, const int64_t *ivars);

typedef struct kr_run {
    int nbuf;                 /* buffer parameters */
    uint8_t *buf[KR_MAXBUF];  /* their contents after the call (heap) */
    size_t bytes[KR_MAXBUF];  /* their sizes */
} kr_run;

static void *kr_load(const rx_module *m, const char *isa)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    rx_codegen_opts co = {.isa_versions = true};
    ck_assert_msg(rx_codegen_c_with(m, &co, &c, &d), "codegen: %s", diags_str(&d));
    uint8_t *so = NULL;
    size_t n = 0;
    ck_assert_msg(rx_cc_build(c.p, c.n, NULL, &so, &n, &d), "cc: %s", diags_str(&d));
    char path[] = "/tmp/rxkrun.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, so, n), (ssize_t)n);
    close(fd);
    if (isa) setenv("RX_KERNEL_ISA", isa, 1);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (isa) unsetenv("RX_KERNEL_ISA");
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    unlink(path);
    free(so);
    rx_sb_free(&c);
    rx_diags_free(&d);
    return h;
}

static uint64_t kr_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* n elements of dtype t from seed s: floats in [-1, 1), ints in [-50, 50). */
static void kr_fill(uint8_t *p, rx_dtype t, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kr_rand(s);
        double v = (double)(r % 2000) / 1000.0 - 1.0;
        int64_t iv = (int64_t)(r % 100) - 50;
        switch (t) {
        case RX_DT_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
        case RX_DT_F64: memcpy(p + 8 * i, &v, 8); break;
        case RX_DT_F16: { /* sign, exponent 2^-4 .. 2^0, any mantissa */
            uint16_t h = (uint16_t)(((r >> 20) & 1) << 15 | (11 + r % 5) << 10 | ((r >> 4) & 0x3ff));
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case RX_DT_I32: { int32_t x = (int32_t)iv; memcpy(p + 4 * i, &x, 4); break; }
        case RX_DT_I64: memcpy(p + 8 * i, &iv, 8); break;
        default: p[i * (size_t)(rx_dtype_bits(t) / 8)] = (uint8_t)r; break;
        }
    }
}

/* Runs kernel f of object h with its svars set by name (names[k] = vals[k]). */
static void kr_exec(void *h, const rx_func *f, const char *const *names, const int64_t *vals,
                    int nv, uint64_t seed, kr_run *out)
{
    memset(out, 0, sizeof *out);
    rx_vmap vm = {0};
    rx_arena *a = rx_arena_new();
    int64_t ivars[16];
    ck_assert_int_le(f->nsvars, 16);
    for (int j = 0; j < f->nsvars; j++) {
        int k = 0;
        while (k < nv && strcmp(names[k], f->svars[j]->name) != 0) k++;
        ck_assert_msg(k < nv, "%s: no value for %s", f->name, f->svars[j]->name);
        ivars[j] = vals[k];
        rx_vmap_set(&vm, f->svars[j], rx_e_int(a, vals[k]));
    }
    void *data[KR_MAXBUF];
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        if (!b) continue;
        ck_assert_int_lt(out->nbuf, KR_MAXBUF);
        size_t n = 1;
        for (int k = 0; k < b->ndim; k++) {
            int64_t e;
            ck_assert_msg(rx_expr_eval_int(b->shape[k], &vm, &e), "%s: shape of %s", f->name, b->name);
            n *= (size_t)e;
        }
        size_t esz = b->dtype == RX_DT_BOOL ? 1 : (size_t)rx_dtype_bits((rx_dtype)b->dtype) / 8;
        int k = out->nbuf++;
        out->bytes[k] = n * esz;
        out->buf[k] = malloc(out->bytes[k] + 1);
        kr_fill(out->buf[k], (rx_dtype)b->dtype, n, &seed);
        data[k] = out->buf[k];
    }
    rx_sb sym = {0};
    rx_codegen_symbol(f->name, &sym);
    void *fp = dlsym(h, rx_sb_str(&sym));
    ck_assert_msg(fp != NULL, "no symbol %s", rx_sb_str(&sym));
    kr_kernel kf;
    memcpy(&kf, &fp, sizeof kf);
    ck_assert_int_eq(kf(data, ivars), 0);
    rx_sb_free(&sym);
    rx_vmap_free(&vm);
    rx_arena_free(a);
}

static void kr_same(const kr_run *x, const kr_run *y, const char *what)
{
    ck_assert_int_eq(x->nbuf, y->nbuf);
    for (int k = 0; k < x->nbuf; k++) {
        ck_assert_msg(x->bytes[k] == y->bytes[k], "%s: buffer %d sizes differ", what, k);
        size_t i = 0;
        while (i < x->bytes[k] && x->buf[k][i] == y->buf[k][i]) i++;
        ck_assert_msg(i == x->bytes[k], "%s: buffer %d differs at byte %zu of %zu", what, k, i,
                      x->bytes[k]);
    }
}

static void kr_free(kr_run *r)
{
    for (int k = 0; k < r->nbuf; k++) free(r->buf[k]);
    r->nbuf = 0;
}

/* Runs loop function fu of object hu and fs of hs on the same seeded inputs and asserts
 * they write the same bytes; *rs keeps fs's run (kr_free it). */
static inline void kr_exec_same(void *hu, const rx_func *fu, void *hs, const rx_func *fs,
                                const char *const *names, const int64_t *vals, int nv,
                                uint64_t seed, const char *what, kr_run *rs)
{
    kr_run ru;
    kr_exec(hu, fu, names, vals, nv, seed, &ru);
    kr_exec(hs, fs, names, vals, nv, seed, rs);
    kr_same(&ru, rs, what);
    kr_free(&ru);
}

/* True when e holds a select (a concat's field chain). */
static inline bool kr_has_select(const rx_expr *e)
{
    if (!e) return false;
    if (e->kind == RX_E_SELECT) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (kr_has_select(rx_expr_child(e, i))) return true;
    return false;
}

/* Unloads the objects hu and hs and frees the modules mu and ms they were built from. */
static inline void kr_unload_pair(void *hu, void *hs, rx_module *mu, rx_module *ms)
{
    dlclose(hu);
    dlclose(hs);
    rx_module_free(mu);
    rx_module_free(ms);
}

/* Asserts run r of a KV-cache append (buffers: cache (rows, c, d), new step (rows, 1,
 * d), result (rows, c + 1, d), rows = batch x heads) holds, per row, the cache's c
 * positions and then the new step, element by element. */
static inline void kr_check_append(const kr_run *r, int64_t rows, int64_t c, int64_t d,
                                   const char *what)
{
    const float *k = (const float *)r->buf[0], *kn = (const float *)r->buf[1],
                *out = (const float *)r->buf[2];
    for (int64_t bh = 0; bh < rows; bh++)
        for (int64_t i = 0; i <= c; i++)
            for (int64_t e = 0; e < d; e++) {
                float want = i < c ? k[(bh * c + i) * d + e] : kn[bh * d + e];
                ck_assert_msg(out[(bh * (c + 1) + i) * d + e] == want, "%s [%lld, %lld, %lld]",
                              what, (long long)bh, (long long)i, (long long)e);
            }
}

/* The module sq (relax-json with single quotes) at opt level lv, no library calls, the
 * pipeline run up to stage `after`, the steps named in disable (NULL-terminated, or
 * NULL) turned off. */
static inline rx_module *kr_module_without(const char *sq, int lv, const char *after,
                                           const char *const *disable)
{
    char *s = strdup(sq);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    rx_build_opts o = {.opt_level = lv, .lib = {.mode = RX_LIB_NONE}, .disable = disable};
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    ck_assert_msg(rx_build_module(s, strlen(s), &o, after, &m, NULL, &d), "build: %s",
                  diags_str(&d));
    rx_diags_free(&d);
    free(s);
    return m;
}

static inline rx_module *kr_module_at(const char *sq, int lv, const char *after)
{
    return kr_module_without(sq, lv, after, NULL);
}

/* The loop function the graph function gname of m calls (its first call_tir). */
static inline rx_func *kr_product(const rx_module *m, const char *gname)
{
    const rx_func *g = rx_module_find(m, gname);
    ck_assert_ptr_nonnull(g);
    const rx_block *bl = g->body->blocks[0];
    for (int i = 0; i < bl->nbindings; i++) {
        const rx_node *v = bl->bindings[i].value;
        if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR) return v->u.call.callee->u.global.fn;
    }
    ck_abort_msg("%s: no call_tir", gname);
    return NULL;
}

/* The module sq after FuseTIR and workspace lifting: opt level 2, up to lift_workspace. */
static inline rx_module *fused_module(const char *sq)
{
    return kr_module_at(sq, 2, "lift_workspace");
}

/* Tiles and schedules m, then appends its C text (one version per kernel) to out. */
static inline void kr_tiled_c(rx_module *m, rx_sb *out)
{
    ck_assert(rx_schedule_tile(m, NULL) && rx_schedule_cpu(m, NULL, NULL));
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(rx_codegen_c(m, out, &d), "codegen: %s", diags_str(&d));
    rx_diags_free(&d);
}

#endif
