/*
 * test_cc.c — building C with the system compiler, errors of the C target, symbols,
 * and the module corpus as smoke input.
 *
 * rx_cc_build: the same bytes whatever the private directory (with -g too), a clean
 * diagnostic for a bad flag and for a syntax error, a timeout
 * that kills the whole process group (a shell running sleep stands in for a slow
 * compiler), a missing compiler; after every call the private directory is gone, no
 * child is left to reap and no descriptor leaked. The corpus test generates C for
 * every loop function of tests/modules/valid (those bound to GPU threads dropped) and
 * builds it with -Wall -Wextra -Werror under gcc, clang when installed, and the
 * software f16 path.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cg_test.h"

#define MOD(body) "{'format': 'relax-json', 'version': 1, 'functions': {" body "}}"

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Runs rx_cc_build on src with the given options in a fresh parent directory and
 * checks the hygiene promises; returns the diagnostics text (heap) or NULL on success. */
static char *build_checked(const char *src, rx_cc_opts o, double *secs)
{
    char parent[] = "/tmp/rxcg_parent.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(parent));
    o.tmpdir = parent;
    int fds = count_fds();
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *so = NULL;
    size_t n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool ok = rx_cc_build(src, strlen(src), &o, &so, &n, &d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (secs) *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_int_eq(count_entries(parent), 0);         /* private directory removed */
    ck_assert_int_eq(rmdir(parent), 0);
    ck_assert_int_eq(count_fds(), fds);                 /* no descriptor leaked */
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);   /* no child left */
    ck_assert_int_eq(errno, ECHILD);
    char *out = NULL;
    if (ok) {
        ck_assert_int_eq(rx_diags_count(&d), 0);
        ck_assert(n > 0 && so != NULL);
        ck_assert(!memcmp(so, "\177ELF", 4));
    } else {
        ck_assert_int_eq(rx_diags_count(&d), 1);
        ck_assert_ptr_null(so);
        rx_sb sb = {0};
        rx_diags_format(&d, &sb);
        out = rx_sb_take(&sb);
    }
    free(so);
    rx_diags_free(&d);
    return out;
}

START_TEST(cc_success_and_hygiene)
{
    char *e = build_checked("int f(void); int f(void) { return 1; }\n", (rx_cc_opts){0}, NULL);
    ck_assert_ptr_null(e);
}
END_TEST

/* The object built from src under a fresh parent directory named from prefix (heap). */
static uint8_t *build_under(const char *prefix, const char *src, const rx_cc_opts *base, size_t *n)
{
    char parent[128];
    snprintf(parent, sizeof parent, "%s.XXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(parent));
    rx_cc_opts o = *base;
    o.tmpdir = parent;
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *so = NULL;
    ck_assert(rx_cc_build(src, strlen(src), &o, &so, n, &d));
    rx_diags_free(&d);
    ck_assert_int_eq(rmdir(parent), 0);
    return so;
}

/* The object's bytes do not depend on the directory it was built in, even with debug
 * information (which records the compile directory and the source path). */
/* A relative parent directory (relaxd --data ./var) builds: the child changes into the
 * private directory before its file actions open the log, so the path must not stay
 * relative. */
START_TEST(cc_relative_tmpdir)
{
    char parent[] = "/tmp/rxcg_rel.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(parent));
    char old[4096];
    ck_assert_ptr_nonnull(getcwd(old, sizeof old));
    ck_assert_int_eq(chdir(parent), 0);
    ck_assert_int_eq(mkdir("var", 0700), 0);
    rx_cc_opts o = {0};
    o.tmpdir = "var";
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *so = NULL;
    size_t n = 0;
    const char *src = "int rx_one(void) { return 1; }\n";
    bool ok = rx_cc_build(src, strlen(src), &o, &so, &n, &d);
    ck_assert_msg(ok, "relative tmpdir: %d diagnostics", rx_diags_count(&d));
    ck_assert(n > 0 && so && !memcmp(so, "\177ELF", 4));
    ck_assert_int_eq(count_entries("var"), 0);
    free(so);
    rx_diags_free(&d);
    ck_assert_int_eq(rmdir("var"), 0);
    ck_assert_int_eq(chdir(old), 0);
    ck_assert_int_eq(rmdir(parent), 0);
}
END_TEST

START_TEST(cc_reproducible)
{
    static const char src[] = "int f(int x); int f(int x) { return x * 3 + 1; }\n";
    static const char *const debug[] = {"-g", NULL};
    rx_cc_opts plain = {0}, dbg = {0};
    dbg.extra = debug;
    const rx_cc_opts *opts[] = {&plain, &dbg};
    for (int i = 0; i < 2; i++) {
        size_t n1, n2;
        uint8_t *a = build_under("/tmp/rxcc_r", src, opts[i], &n1);
        uint8_t *b = build_under("/tmp/rxcc_repro_with_a_much_longer_parent_name", src, opts[i], &n2);
        ck_assert_msg(n1 == n2 && !memcmp(a, b, n1), "%s objects differ (%zu, %zu bytes)",
                      i ? "-g" : "plain", n1, n2);
        free(a);
        free(b);
    }
}
END_TEST

START_TEST(cc_bad_flag)
{
    static const char *const bad[] = {"-fno-such-flag-for-relaxd", NULL};
    rx_cc_opts o = {0};
    o.extra = bad;
    char *e = build_checked("int x;\n", o, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "C compiler \"cc\" failed") && strstr(e, "-fno-such-flag-for-relaxd"),
                  "%s", e);
    ck_assert(strchr(e, '\n') == e + strlen(e) - 1); /* one line */
    free(e);
}
END_TEST

START_TEST(cc_syntax_error)
{
    char *e = build_checked("int f(void) { return }\n", (rx_cc_opts){0}, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "error") && strstr(e, "k.c:1:"), "%s", e);
    free(e);
}
END_TEST

/* True while a process runs "sleep 31.25" (the timeout test's grandchild). */
static bool sleeper_alive(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool found = false;
    ck_assert_ptr_nonnull(d);
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[256];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        found = !strcmp(buf, "sleep") && n > 6 && !strcmp(buf + 6, "31.25");
    }
    closedir(d);
    return found;
}

START_TEST(cc_timeout_kills)
{
    static const char *const sh[] = {"-c", "sleep 31.25; true", NULL};
    rx_cc_opts o = {0};
    o.cc = "/bin/sh";
    o.flags = sh;
    o.timeout_s = 1;
    double secs;
    char *e = build_checked("int x;\n", o, &secs);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "C compiler timed out after 1 s"), "%s", e);
    ck_assert_msg(secs < 10, "took %g s", secs);
    free(e);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    ck_assert_msg(!sleeper_alive(), "the compiler's child survived the timeout");
}
END_TEST

START_TEST(cc_missing_compiler)
{
    rx_cc_opts o = {0};
    o.cc = "/nonexistent/relaxd-cc";
    char *e = build_checked("int x;\n", o, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "cannot run the C compiler \"/nonexistent/relaxd-cc\""), "%s", e);
    free(e);
}
END_TEST

START_TEST(thread_bound_loop_is_error)
{
    rx_module *m = cg_read(MOD(
        "'g': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [256], 'dtype': 'f32'}}],"
        " 'body': [{'for': 'tx', 'extent': 256, 'thread': 'threadIdx.x', 'body': ["
        "  {'store': 'A[tx]', 'value': '1.0'}]}]}"));
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(!rx_codegen_c(m, &c, &d));
    ck_assert_int_eq(rx_diags_count(&d), 1);
    ck_assert_str_eq(d.list.items[0].path, "functions.g.body[0]");
    ck_assert_ptr_nonnull(strstr(d.list.items[0].msg, "thread-bound loop \"tx\" (threadIdx.x) needs a GPU target"));
    ck_assert_ptr_nonnull(strstr(d.list.items[0].msg, "\"g\""));
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(symbols)
{
    rx_sb a = {0}, b = {0}, c = {0};
    rx_codegen_symbol("add", &a);
    ck_assert_str_eq(rx_sb_str(&a), "rxk_add");
    rx_codegen_symbol("a.b", &b);
    rx_codegen_symbol("a_b", &c);
    ck_assert_int_eq((int)b.n, (int)strlen("rxk_a_b_") + 8);
    ck_assert(!strncmp(rx_sb_str(&b), "rxk_a_b_", 8));
    ck_assert_str_ne(rx_sb_str(&b), rx_sb_str(&c));
    rx_sb_reset(&a);
    rx_codegen_symbol("a.b", &a);
    ck_assert_str_eq(rx_sb_str(&a), rx_sb_str(&b)); /* deterministic */
    rx_sb_free(&a);
    rx_sb_free(&b);
    rx_sb_free(&c);

    /* Both live in one object and each is its own kernel; data skips scalar params. */
    rx_module *m = cg_read(MOD(
        "'a.b': {'kind': 'tir', 'params': [{'name': 'k', 'dtype': 'i32'},"
        "  {'name': 'A', 'buffer': {'shape': [1], 'dtype': 'i32'}}],"
        "  'body': [{'store': 'A[0]', 'value': 'k + 1'}]},"
        "'a_b': {'kind': 'tir', 'params': [{'name': 'A', 'buffer': {'shape': [1], 'dtype': 'i32'}}],"
        "  'body': [{'store': 'A[0]', 'value': '2'}]}"));
    cg_lib lib = cg_build(m);
    int32_t x = 0;
    void *data[] = {&x};
    int64_t iv[] = {41};
    ck_assert_int_eq(cg_get(lib, "a.b")(data, iv), 0);
    ck_assert_int_eq(x, 42);
    ck_assert_int_eq(cg_get(lib, "a_b")(data, NULL), 0);
    ck_assert_int_eq(x, 2);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- corpus */

static bool stmts_use_threads(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_FOR:
            if (s->u.for_.thread || stmts_use_threads(&s->u.for_.body)) return true;
            break;
        case RX_S_BLOCK:
            if (stmts_use_threads(&s->u.block.init) || stmts_use_threads(&s->u.block.body))
                return true;
            break;
        case RX_S_IF:
            if (stmts_use_threads(&s->u.if_.then_s) || stmts_use_threads(&s->u.if_.else_s))
                return true;
            break;
        case RX_S_LET:
            if (stmts_use_threads(&s->u.let.body)) return true;
            break;
        default: break;
        }
    }
    return false;
}

static void build_src(const char *path, const rx_sb *c, const char *cc, const char *extra)
{
    static const char *const strict[] = {"-std=c11", "-O2", "-fPIC", "-shared", "-Wall",
                                         "-Wextra", "-Werror", "-Wshadow",
                                         "-Wstrict-prototypes", "-Wmissing-prototypes", NULL};
    const char *ex[] = {extra, NULL};
    rx_cc_opts o = {0};
    o.cc = cc;
    o.flags = strict;
    o.extra = extra ? ex : NULL;
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *so = NULL;
    size_t n = 0;
    bool ok = rx_cc_build(c->p, c->n, &o, &so, &n, &d);
    if (!ok) {
        fprintf(stderr, "%s\n", rx_sb_str(c));
        rx_sb sb = {0};
        rx_diags_format(&d, &sb);
        ck_abort_msg("%s with %s %s: %s", path, cc, extra ? extra : "", rx_sb_str(&sb));
    }
    free(so);
    rx_diags_free(&d);
}

START_TEST(corpus_tir_functions_compile)
{
    const char *dir = RX_SOURCE_DIR "/tests/modules/valid";
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    bool clang = access("/usr/bin/clang", X_OK) == 0;
    int nfuncs = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 5, ".json")) continue;
        rx_sb path = {0};
        rx_sb_printf(&path, "%s/%s", dir, de->d_name);
        rx_diags d;
        rx_diags_init(&d);
        rx_module *m = rx_json_read_file(rx_sb_str(&path), NULL, &d);
        if (!m) cg_dump(&d, rx_sb_str(&path));
        rx_module sub = *m; /* the CPU-runnable loop functions only */
        sub.funcs = rx_xcalloc((size_t)m->nfuncs + 1, sizeof(rx_func *));
        sub.nfuncs = 0;
        for (int i = 0; i < m->nfuncs; i++)
            if (m->funcs[i]->kind == RX_F_TIR && !stmts_use_threads(&m->funcs[i]->tbody))
                sub.funcs[sub.nfuncs++] = m->funcs[i];
        if (sub.nfuncs) {
            nfuncs += sub.nfuncs;
            rx_sb c = {0};
            if (!rx_codegen_c(&sub, &c, &d)) cg_dump(&d, rx_sb_str(&path));
            build_src(rx_sb_str(&path), &c, "cc", NULL);
            build_src(rx_sb_str(&path), &c, "cc", "-DRX_NO_FLOAT16");
            if (clang) build_src(rx_sb_str(&path), &c, "clang", NULL);
            rx_sb_free(&c);
        }
        free(sub.funcs);
        rx_module_free(m);
        rx_diags_free(&d);
        rx_sb_free(&path);
    }
    closedir(dp);
    ck_assert_int_ge(nfuncs, 10);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen_cc");
    TCase *tc = tcase_create("cc");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, cc_success_and_hygiene);
    tcase_add_test(tc, cc_reproducible);
    tcase_add_test(tc, cc_relative_tmpdir);
    tcase_add_test(tc, cc_bad_flag);
    tcase_add_test(tc, cc_syntax_error);
    tcase_add_test(tc, cc_timeout_kills);
    tcase_add_test(tc, cc_missing_compiler);
    tcase_add_test(tc, thread_bound_loop_is_error);
    tcase_add_test(tc, symbols);
    tcase_add_test(tc, corpus_tir_functions_compile);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
