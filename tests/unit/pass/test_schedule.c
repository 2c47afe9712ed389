/*
 * test_schedule.c — CPU scheduling (compiler/pass/schedule.c) and its OpenMP code.
 *
 * Which loops the pass marks: an elementwise nest's outer loop parallel and inner loop
 * vectorized; a reduction's outer spatial loop parallel and its reduce loop never; a
 * nest with a store independent of the outer variable, or reading a stored buffer at
 * another iteration's element, left serial; a literal extent of 1 left serial; a
 * symbolic batch's 8 heads over rows x columns parallel instead of the batch; kinds
 * written by the user kept; flat (one-loop) nests split into parallel vectorized runs.
 * Then numeric checks: the scheduled kernels built with OpenMP give bit-identical
 * results to the same kernels built serially; flat nests compute every element of
 * extents around the run length and nothing past the end.
 */
#include "pass_test.h"
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../rx_check.h"
#include "relax/codegen.h"
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"

#define TIR(name, params, body) \
    "'" name "':{'kind':'tir','params':[" params "],'body':[" body "]}"
#define BUF(n, shape) "{'name':'" n "','buffer':{'shape':[" shape "],'dtype':'f32'}}"
#define MOD(fns) "{'format':'relax-json','version':1,'functions':{" fns "}}"
/* C[idx] = A[idx] OP: an elementwise loop function over one shape */
#define EW(name, shape, grid, extents, idx, op)                                             \
    TIR(name, BUF("A", shape) "," BUF("C", shape),                                          \
        "{'grid':[" grid "],'extents':[" extents "],'body':{'store':'C[" idx "]','value':'A[" idx "]" op "'}}")

/* The kind of the loop at depth `depth` of the first top-level nest of fn (following
 * the first FOR found under each loop, through blocks). */
static const rx_stmt *nth_loop(const rx_stmts *ss, int depth)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) return depth ? nth_loop(&s->u.for_.body, depth - 1) : s;
        if (s->kind == RX_S_BLOCK) {
            const rx_stmt *r = nth_loop(&s->u.block.body, depth);
            if (r) return r;
        }
        if (s->kind == RX_S_IF) {
            const rx_stmt *r = nth_loop(&s->u.if_.then_s, depth);
            if (r) return r;
        }
    }
    return NULL;
}

static const char *kind_at(const rx_module *m, const char *fn, int depth)
{
    const rx_func *f = rx_module_find(m, fn);
    ck_assert_ptr_nonnull(f);
    const rx_stmt *s = nth_loop(&f->tbody, depth);
    ck_assert_msg(s != NULL, "%s has no loop at depth %d", fn, depth);
    return rx_loopkind_name((rx_loopkind)s->u.for_.loop_kind);
}

#define SCHED_FUNCS                                                                            \
    TIR("add", BUF("A", "'n',4") "," BUF("B", "'n',4") "," BUF("C", "'n',4"),                    \
        "{'grid':['i','j'],'extents':['n',4],'body':{'store':'C[i, j]','value':'A[i, j] + B[i, j]'}}") "," \
    TIR("mm", BUF("A", "'n',8") "," BUF("B", "8,6") "," BUF("C", "'n',6"),                       \
        "{'grid':['i','j','k'],'extents':['n',6,8],'body':[{'if':'k == 0','then':{'store':'C[i, j]','value':'0.0'}}," \
        "{'store':'C[i, j]','value':'C[i, j] + A[i, k] * B[k, j]'}]}") ","                        \
    TIR("colsum", BUF("A", "'n',5") "," BUF("C", "5"),                                          \
        "{'grid':['k','j'],'extents':['n',5],'body':[{'if':'k == 0','then':{'store':'C[j]','value':'0.0'}}," \
        "{'store':'C[j]','value':'C[j] + A[k, j]'}]}") ","                                      \
    TIR("flag", BUF("A", "'n'") "," BUF("C", "'n'") "," BUF("D", "1"),                           \
        "{'grid':['i'],'extents':['n'],'body':[{'store':'C[i]','value':'A[i]'},"                 \
        "{'store':'D[0]','value':'A[i]'}]}") ","                                                \
    TIR("scan", BUF("A", "'n'") "," BUF("C", "'n'"),                                            \
        "{'grid':['i'],'extents':['n'],'body':{'store':'C[i]','value':'C[i - 1] + A[i]'}}") ","  \
    TIR("one", BUF("A", "1,4") "," BUF("C", "1,4"),                                             \
        "{'grid':['i','j'],'extents':[1,4],'body':{'store':'C[i, j]','value':'A[i, j]'}}") ","   \
    TIR("batch1", BUF("A", "1,'n',4") "," BUF("C", "1,'n',4"),                                 \
        "{'grid':['b','i','j'],'extents':[1,'n',4],'body':{'store':'C[b, i, j]','value':'A[b, i, j]'}}") "," \
    TIR("heads", BUF("A", "'n',8,3,4") "," BUF("C", "'n',8,3,4"),                               \
        "{'grid':['b','h','i','j'],'extents':['n',8,3,4],'body':{'store':'C[b, h, i, j]',"       \
        "'value':'A[b, h, i, j] * 0.5'}}") ","                                                  \
    TIR("heads2", BUF("A", "'n',8,4") "," BUF("C", "'n',8,4"),                                   \
        "{'grid':['b','h','j'],'extents':['n',8,4],'body':{'store':'C[b, h, j]',"                \
        "'value':'A[b, h, j] * 0.5'}}") ","                                                     \
    TIR("given", BUF("A", "'n',4") "," BUF("C", "'n',4"),                                        \
        "{'for':'i','extent':'n','kind':'unrolled','body':{'for':'j','extent':4,'body':"        \
        "{'store':'C[i, j]','value':'A[i, j]'}}}")

START_TEST(marks)
{
    rx_module *m = load_quoted(MOD(SCHED_FUNCS));
    int np = -1, nv = -1;
    ck_assert(rx_schedule_cpu(m, &np, &nv));
    /* elementwise: outer parallel, inner (contiguous) vectorized */
    ck_assert_str_eq(kind_at(m, "add", 0), "parallel");
    ck_assert_str_eq(kind_at(m, "add", 1), "vectorized");
    /* matmul: spatial i parallel; j not innermost; the reduce loop k never marked */
    ck_assert_str_eq(kind_at(m, "mm", 0), "parallel");
    ck_assert_str_eq(kind_at(m, "mm", 1), "serial");
    ck_assert_str_eq(kind_at(m, "mm", 2), "serial");
    /* reduction over the outer loop: k (reduce) not parallel; j innermost vectorized */
    ck_assert_str_eq(kind_at(m, "colsum", 0), "serial");
    ck_assert_str_eq(kind_at(m, "colsum", 1), "vectorized");
    /* a store independent of i: every iteration writes D[0] */
    ck_assert_str_eq(kind_at(m, "flag", 0), "serial");
    /* C[i] reads C[i - 1], another iteration's element */
    ck_assert_str_eq(kind_at(m, "scan", 0), "serial");
    /* literal extent 1: nothing to share */
    ck_assert_str_eq(kind_at(m, "one", 0), "serial");
    ck_assert_str_eq(kind_at(m, "one", 1), "vectorized");
    /* a batch of one: the loop inside it is the parallel one */
    ck_assert_str_eq(kind_at(m, "batch1", 0), "serial");
    ck_assert_str_eq(kind_at(m, "batch1", 1), "parallel");
    ck_assert_str_eq(kind_at(m, "batch1", 2), "vectorized");
    /* a symbolic batch over 8 heads of rows x columns: the heads loop is parallel (b
     * may be 1); with one loop level under the heads the batch loop stays the one */
    ck_assert_str_eq(kind_at(m, "heads", 0), "serial");
    ck_assert_str_eq(kind_at(m, "heads", 1), "parallel");
    ck_assert_str_eq(kind_at(m, "heads", 3), "vectorized");
    ck_assert_str_eq(kind_at(m, "heads2", 0), "parallel");
    ck_assert_str_eq(kind_at(m, "heads2", 1), "serial");
    /* the user's kind kept */
    ck_assert_str_eq(kind_at(m, "given", 0), "unrolled");
    ck_assert_int_eq(np, 5);
    ck_assert_int_eq(nv, 7); /* add.j, colsum.j, one.j, batch1.j, heads.j, heads2.j, given.j */
    ck_assert_str_eq(kind_at(m, "given", 1), "vectorized");
    /* idempotent */
    ck_assert(rx_schedule_cpu(m, &np, &nv));
    ck_assert_int_eq(np, 0);
    ck_assert_int_eq(nv, 0);
    rx_module_free(m);
}
END_TEST

/* Builds C text into a loaded object (NULL on failure, with a message). */
static void *build_load(const char *c, bool serial)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_cc_opts o = {0};
    o.no_openmp = serial;
    uint8_t *so = NULL;
    size_t n = 0;
    ck_assert_msg(rx_cc_build(c, strlen(c), &o, &so, &n, &d), "cc: %s", diags_str(&d));
    char path[] = "/tmp/rxsched.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, so, n), (ssize_t)n);
    close(fd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    unlink(path);
    free(so);
    rx_diags_free(&d);
    return h;
}

typedef int32_t (*kernel_fn)(void *const *data, const int64_t *ivars);

/* Runs kernel f (C = A * 2 over n elements, f32) at ivars and checks every element. */
static void check_doubles(kernel_fn f, const int64_t *ivars, int64_t n)
{
    float *A = malloc((size_t)n * sizeof *A), *C = malloc((size_t)n * sizeof *C);
    for (int64_t i = 0; i < n; i++) A[i] = (float)i, C[i] = -1;
    void *data[2] = {A, C};
    ck_assert_int_eq(f(data, ivars), 0);
    for (int64_t i = 0; i < n; i++) ck_assert_float_eq(C[i], 2.0f * (float)i);
    free(A);
    free(C);
}

/* A parallel loop forks threads only for enough work (RX_PAR_MIN_WORK = 32768 statement
 * executions): a literal nest below it runs serially, a literal nest above it is
 * parallel, and a symbolic extent with literal inner loops decides at run time. */
START_TEST(parallel_needs_enough_work)
{
    rx_module *m = load_quoted(MOD(
        EW("small", "16,16", "'i','j'", "16,16", "i, j", " * 2.0") ","
        EW("big", "256,256", "'i','j'", "256,256", "i, j", " * 2.0") ","
        EW("rows", "'n',64", "'i','j'", "'n',64", "i, j", " * 2.0")));
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    ck_assert_str_eq(kind_at(m, "small", 0), "parallel");
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    const char *src = rx_sb_str(&c);
    /* each kernel's definition and the text up to the next one */
    const char *small = strstr(src, "int32_t rxk_small(void *const *data, const int64_t *ivars)\n{"),
               *big = strstr(src, "int32_t rxk_big(void *const *data, const int64_t *ivars)\n{"),
               *rows = strstr(src, "int32_t rxk_rows(void *const *data, const int64_t *ivars)\n{");
    ck_assert(small && big && rows);
    const char *p = strstr(small, "/* parallel: runs serially (256 statement executions) */");
    ck_assert_msg(p && (big < small || p < big) && (rows < small || p < rows), "small: not serial");
    p = strstr(big, "RX_PARALLEL\n");
    ck_assert_msg(p && (rows < big || p < rows) && (small < big || p < small), "big: not parallel");
    p = strstr(rows, ") * 64 >= 32768)\n");
    ck_assert_msg(p && (small < rows || p < small) && (big < rows || p < big),
                  "rows: no run-time condition");
    /* and each computes what it should, serial or not */
    void *h = build_load(src, false);
    kernel_fn fr;
    void *sym = dlsym(h, "rxk_rows");
    ck_assert_ptr_nonnull(sym);
    memcpy(&fr, &sym, sizeof fr);
    for (int64_t n = 1; n <= 1024; n *= 32) /* 64 (serial) and 65536 (parallel) elements */
        check_doubles(fr, &n, n * 64);
    dlclose(h);
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* A nest whose inner extents are symbolic too counts its work at run time (c_par.c): the
 * product of the extents, in double, against the same bound; before, such a loop forked
 * threads at every size (a decode step's (2, b, 24) state slice). Both sizes compute
 * what they should. */
START_TEST(parallel_symbolic_nest)
{
    rx_module *m = load_quoted(MOD(EW("grid2", "'n','m'", "'i','j'", "'n','m'", "i, j", " * 2.0")));
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    ck_assert_str_eq(kind_at(m, "grid2", 0), "parallel");
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    const char *src = rx_sb_str(&c);
    ck_assert_msg(strstr(src, "RX_PARALLEL_IF((double)(") && strstr(src, ">= 32768.0)\n"),
                  "no run-time work count:\n%s", src);
    const char *def = strstr(src, "int32_t rxk_grid2(void *const *data, const int64_t *ivars)\n{");
    ck_assert_ptr_nonnull(def);
    ck_assert_ptr_null(strstr(def, "RX_PARALLEL\n")); /* not forking at every size */
    void *h = build_load(src, false);
    kernel_fn f;
    void *sym = dlsym(h, "rxk_grid2");
    ck_assert_ptr_nonnull(sym);
    memcpy(&f, &sym, sizeof f);
    const int64_t sizes[2][2] = {{2, 3}, {300, 200}}; /* 6 (serial) and 60000 (parallel) */
    for (int t = 0; t < 2; t++)
        check_doubles(f, sizes[t], sizes[t][0] * sizes[t][1]);
    dlclose(h);
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(parallel_equals_serial)
{
    rx_module *m = load_quoted(MOD(SCHED_FUNCS));
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    /* symbolic n, literal inner loops: the thread count is decided at run time */
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "RX_PARALLEL_IF((int64_t)("));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "RX_SIMD\n"));
    void *hp = build_load(rx_sb_str(&c), false), *hs = build_load(rx_sb_str(&c), true);
    enum { N = 1000 };
    static float A[N * 8], B[8 * 6], A4[N * 4], B4[N * 4], Cp[N * 8], Cs[N * 8];
    uint32_t seed = 12345;
    for (int i = 0; i < N * 8; i++) {
        seed = seed * 1664525u + 1013904223u;
        A[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    for (int i = 0; i < 8 * 6; i++) B[i] = (float)i * 0.37f - 3.0f;
    for (int i = 0; i < N * 4; i++) {
        A4[i] = A[i] * 3.0f;
        B4[i] = A[i + 7];
    }
    const int64_t iv[] = {N};
    const struct { const char *sym; void *data[3]; size_t out_n; int out; } k[] = {
        {"rxk_add", {A4, B4, NULL}, N * 4, 2},
        {"rxk_mm", {A, B, NULL}, N * 6, 2},
        {"rxk_colsum", {A, NULL, NULL}, 5, 1},
        {"rxk_heads", {A, NULL, NULL}, 80 * 96, 1},
    };
    const int64_t iv80[] = {80}; /* heads: 80 x 8 x 3 x 4 elements */
    for (size_t t = 0; t < sizeof k / sizeof k[0]; t++) {
        kernel_fn fp = (kernel_fn)(uintptr_t)dlsym(hp, k[t].sym);
        kernel_fn fs = (kernel_fn)(uintptr_t)dlsym(hs, k[t].sym);
        ck_assert_msg(fp && fs, "%s missing", k[t].sym);
        void *dp[3], *ds[3];
        memcpy(dp, k[t].data, sizeof dp);
        memcpy(ds, k[t].data, sizeof ds);
        memset(Cp, 0xAB, sizeof Cp);
        memset(Cs, 0xCD, sizeof Cs);
        dp[k[t].out] = Cp;
        ds[k[t].out] = Cs;
        const int64_t *vars = !strcmp(k[t].sym, "rxk_heads") ? iv80 : iv;
        ck_assert_int_eq(fp(dp, vars), 0);
        ck_assert_int_eq(fs(ds, vars), 0);
        ck_assert_msg(!memcmp(Cp, Cs, k[t].out_n * sizeof(float)), "%s differs", k[t].sym);
    }
    dlclose(hp);
    dlclose(hs);
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* Flat nests (one loop, over a 1-d tensor or a (1, n) one) are split into a parallel
 * loop of vectorized runs of 1024; a short literal one is vectorized only. Each
 * computes every element, and not one past its end, for extents around the run. */
START_TEST(flat_nests)
{
    rx_module *m = load_quoted(MOD(
        EW("fbig", "100000", "'i'", "100000", "i", " * 2.0 + 1.0") ","
        EW("fsym", "'n'", "'i'", "'n'", "i", " * 2.0 + 1.0") ","
        EW("funit", "1,'n'", "'b','i'", "1,'n'", "b, i", " * 2.0 + 1.0") ","
        EW("fsmall", "1000", "'i'", "1000", "i", " * 2.0 + 1.0")));
    int np = -1, nv = -1;
    ck_assert(rx_schedule_cpu(m, &np, &nv));
    ck_assert_int_eq(np, 3);
    ck_assert_int_eq(nv, 4);
    ck_assert_str_eq(kind_at(m, "fbig", 0), "parallel");
    ck_assert_str_eq(kind_at(m, "fbig", 1), "vectorized");
    ck_assert_str_eq(kind_at(m, "fsym", 0), "parallel");
    ck_assert_str_eq(kind_at(m, "fsym", 1), "vectorized");
    ck_assert_str_eq(kind_at(m, "funit", 0), "serial");
    ck_assert_str_eq(kind_at(m, "funit", 1), "parallel");
    ck_assert_str_eq(kind_at(m, "funit", 2), "vectorized");
    ck_assert_str_eq(kind_at(m, "fsmall", 0), "vectorized");
    int64_t e;
    ck_assert(rx_expr_is_const(nth_loop(&rx_module_find(m, "fbig")->tbody, 0)->u.for_.extent, &e));
    ck_assert_int_eq(e, 98); /* ceil(100000 / 1024) runs */
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    void *h = build_load(rx_sb_str(&c), false);
    enum { MAXN = 100001 };
    float *A = malloc(MAXN * sizeof *A), *C = malloc(MAXN * sizeof *C);
    for (int i = 0; i < MAXN; i++) A[i] = (float)(i % 977) - 300.0f;
    const char *syms[] = {"rxk_fbig", "rxk_fsym", "rxk_funit", "rxk_fsmall"};
    const int64_t ns[] = {1, 1023, 1024, 1025, 40000, 70001};
    for (size_t k = 0; k < 4; k++) {
        kernel_fn f = (kernel_fn)(uintptr_t)dlsym(h, syms[k]);
        ck_assert_msg(f != NULL, "%s missing", syms[k]);
        size_t cases = k == 1 || k == 2 ? sizeof ns / sizeof ns[0] : 1;
        for (size_t t = 0; t < cases; t++) {
            int64_t n = k == 0 ? 100000 : k == 3 ? 1000 : ns[t];
            for (int i = 0; i < MAXN; i++) C[i] = -7.0f;
            void *data[2] = {A, C};
            ck_assert_int_eq(f(data, &n), 0);
            for (int64_t i = 0; i < n; i++)
                ck_assert_msg(C[i] == A[i] * 2.0f + 1.0f, "%s n=%lld: C[%lld] = %g", syms[k],
                              (long long)n, (long long)i, (double)C[i]);
            ck_assert_msg(C[n] == -7.0f, "%s n=%lld: wrote past the end", syms[k], (long long)n);
        }
    }
    free(A);
    free(C);
    dlclose(h);
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

static Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, marks);
    tcase_add_test(tc, parallel_equals_serial);
    tcase_add_test(tc, parallel_needs_enough_work);
    tcase_add_test(tc, parallel_symbolic_nest);
    tcase_add_test(tc, flat_nests);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(schedule_suite()); }
