/*
 * test_relax_run.c — the relax-run program end to end (docs/runtime.md).
 *
 * Each test builds a small artifact with the builder API (a C kernel compiled at test
 * time, as in test_vm.c), writes it and hand-made .npy files into a private temp dir,
 * runs <build>/bin/relax-run with posix_spawn (an argv, no shell; stdout and stderr
 * redirected to files) and checks the exit status, the messages and the .npy outputs.
 * The .npy files are written and read here by hand, byte for byte, so the test checks
 * relax-run's reader and writer against the format rather than against themselves.
 * relax-run is built with the same sanitizers, so a leak fails its exit status.
 */
#include "rt_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <time.h>

#ifndef RX_BINARY_DIR
#define RX_BINARY_DIR "."
#endif
#define RELAX_RUN RX_BINARY_DIR "/bin/relax-run"

static const char kernel_src[] =
    "#include <stdint.h>\n"
    "int32_t scale_add(void *const *data, const int64_t *iv) {\n"
    "  const float *x = data[0]; float *y = data[1];\n"
    "  for (int64_t i = 0; i < iv[0] * 4; i++) y[i] = x[i] * 2.0f + 1.0f;\n"
    "  return 0;\n"
    "}\n";

/* ---- the artifact ---- */

/* Functions:
 *   main(x: (n, 4) f32) -> (n, 4) f32           y = 2x + 1 (one kernel, 16n bytes)
 *   tup(x: (n, 4) f32) -> (y, (x, 7))            flattened: y, x, int 7
 *   echo(x: (n, 4) f32, k: int n) -> k           an INT parameter from --shape
 *   pair(x: (n, 4) f32, w: (n, 4) f32) -> w      two tensors (one given, one generated)
 *   big(x: (536870912, 4) f32) -> x              a tampered annotation: 8 GiB of input */
static void emit_main_prologue(rx_rxa_code *c, uint32_t msg, uint32_t k)
{
    RX_EMIT(c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(c, RX_OP_MUL, 1, RX_D_SLOT, 0, RX_D_IMM, 16);
    RX_EMIT(c, RX_OP_ALLOC_STORAGE, 1, RX_D_SLOT, 1, RX_DEV_CPU);
    RX_EMIT(c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 0, RX_D_IMM, 4);
    RX_EMIT(c, RX_OP_RELEASE, 1);
    RX_EMIT(c, RX_OP_CALL_KERNEL, k, 2, 0, 2, 1, RX_D_SLOT, 0);
}

static char tmpdir[64];

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *name, const void *p, size_t n)
{
    char path[256];
    path_in(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Reads a whole file (NUL-terminated; caller frees); NULL when absent. */
static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = 0;
    fclose(f);
    if (n) *n = (size_t)len;
    return buf;
}

static void build_artifact(void)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}}, four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, n_tok}, {1, four}};
    static const rx_rxa_dim ndim_only[] = {{1, n_tok}};
    static const char *const syms[] = {"n"};
    static const char *const ivars[] = {"n"};
    size_t nso;
    uint8_t *so = rt_compile_so(kernel_src, &nso);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, nso);
    free(so);
    uint32_t k = rx_rxa_add_kernel(b, "scale_add", RX_RXA_KERNELS_CPU, 2, 1, ivars);

    rx_rxa_type params[2] = {rt_tensor("x", RX_RXA_F32, 2, dims), rt_int("k")};
    params[1].dims = ndim_only; /* k: int n */
    rx_rxa_func f = rt_func("main", 1, params, 3, 2);
    f.nsym = 1;
    f.syms = syms;
    f.result = rt_tensor(NULL, RX_RXA_F32, 2, dims);
    rx_rxa_code c = {0};
    emit_main_prologue(&c, rx_rxa_add_string(b, "main: x: expected (n, 4)"), k);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);

    f = rt_func("tup", 1, params, 6, 2);
    f.nsym = 1;
    f.syms = syms;
    emit_main_prologue(&c, rx_rxa_add_string(b, "tup: x: expected (n, 4)"), k);
    RX_EMIT(&c, RX_OP_LOADI, 3, RX_D_IMM, 7);
    RX_EMIT(&c, RX_OP_TUPLE, 4, 2, 0, 3);
    RX_EMIT(&c, RX_OP_TUPLE, 5, 2, 2, 4);
    RX_EMIT(&c, RX_OP_RET, 5);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);

    f = rt_func("echo", 2, params, 2, 1);
    f.nsym = 1;
    f.syms = syms;
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, rx_rxa_add_string(b, "echo: x: expected (n, 4)"),
            2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_MATCH_INT, 1, rx_rxa_add_string(b, "echo: k: expected n"), RX_M_SLOT, 0);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);

    rx_rxa_type two[2] = {rt_tensor("x", RX_RXA_F32, 2, dims), rt_tensor("w", RX_RXA_F32, 2, dims)};
    f = rt_func("pair", 2, two, 2, 1);
    f.nsym = 1;
    f.syms = syms;
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);

    static const rx_rxa_tok huge_tok[] = {{RX_RXA_TOK_CONST, (int64_t)1 << 29}};
    static const rx_rxa_dim huge[] = {{1, huge_tok}, {1, four}};
    rx_rxa_type one = rt_tensor("x", RX_RXA_F32, 2, huge);
    f = rt_func("big", 1, &one, 1, 0);
    RX_EMIT(&c, RX_OP_RET, 0);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);

    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, &n), 0);
    rx_rxa_builder_free(b);
    write_bytes("m.rxa", bytes, n);
    free(bytes);
}

/* ---- .npy by hand ---- */

/* Writes an .npy of format version `major` with the given dict text and data. */
static void write_npy_raw(const char *name, int major, const char *dict, const void *data, size_t n)
{
    size_t pre = major == 1 ? 10 : 12, len = strlen(dict) + 1;
    size_t total = (pre + len + 63) / 64 * 64, hlen = total - pre;
    uint8_t *buf = calloc(1, total + n);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[8] = (uint8_t)hlen;
    buf[9] = (uint8_t)(hlen >> 8);
    memcpy(buf + pre, dict, len - 1);
    memset(buf + pre + len - 1, ' ', hlen - len);
    buf[total - 1] = '\n';
    if (n) memcpy(buf + total, data, n);
    write_bytes(name, buf, total + n);
    free(buf);
}

static void write_f32(const char *name, int rows, int cols, float base)
{
    char dict[128];
    float *d = malloc(sizeof(float) * (size_t)(rows * cols) + 1);
    for (int i = 0; i < rows * cols; i++) d[i] = base + (float)i;
    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
    write_npy_raw(name, 1, dict, d, sizeof(float) * (size_t)(rows * cols));
    free(d);
}

/* Reads an output .npy written by relax-run: checks the exact header, returns the data. */
static char *read_out(const char *name, const char *dict, size_t *ndata)
{
    char path[256];
    path_in(path, sizeof path, name);
    size_t n;
    char *buf = read_file(path, &n);
    ck_assert_msg(buf != NULL, "%s not written", name);
    ck_assert_int_eq(memcmp(buf, "\x93NUMPY\x01\x00", 8), 0);
    size_t hlen = (size_t)(uint8_t)buf[8] | (size_t)(uint8_t)buf[9] << 8;
    ck_assert_uint_eq((10 + hlen) % 64, 0);
    ck_assert_int_eq(buf[10 + hlen - 1], '\n');
    ck_assert_msg(!strncmp(buf + 10, dict, strlen(dict)), "header %.*s", (int)hlen, buf + 10);
    *ndata = n - 10 - hlen;
    char *data = malloc(*ndata + 1);
    memcpy(data, buf + 10 + hlen, *ndata);
    free(buf);
    return data;
}

/* ---- running relax-run ---- */

typedef struct result {
    int status; /* exit status, or -1 when killed */
    char *out;  /* stdout */
    char *err;  /* stderr */
} result;

static result run_argv(const char *const *args)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)RELAX_RUN;
    for (; args[n - 1]; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    char outp[128], errp[128];
    path_in(outp, sizeof outp, "stdout.txt");
    path_in(errp, sizeof errp, "stderr.txt");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = read_file(outp, NULL);
    r.err = read_file(errp, NULL);
    return r;
}

#define RUN(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
}

/* Expects exit 1 with exactly one "error: " line containing `want`. */
static void expect_error(result r, const char *want)
{
    ck_assert_msg(r.status == 1, "status %d, stderr: %s", r.status, r.err);
    ck_assert_msg(!strncmp(r.err, "error: ", 7), "stderr: %s", r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
    ck_assert_msg(strstr(r.err, want) != NULL, "wanted '%s' in: %s", want, r.err);
    result_free(&r);
}

/* Expects exit 0 with nothing on stderr. */
static void expect_quiet(result r)
{
    ck_assert_msg(r.status == 0, "status %d, stderr: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "");
    result_free(&r);
}

static char art[128];

static void setup(void)
{
    strcpy(tmpdir, "/tmp/rxrun-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    build_artifact();
    path_in(art, sizeof art, "m.rxa");
}

/* Removes the temp dir and everything under it (no symlinks are followed). */
static void rm_tree(const char *dir, int depth)
{
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(dir) + 1 + strlen(e->d_name) + 1;
            char *p = malloc(n);
            if (!p) continue;
            memcpy(p, dir, strlen(dir));
            p[strlen(dir)] = '/';
            memcpy(p + strlen(dir) + 1, e->d_name, strlen(e->d_name) + 1);
            struct stat st;
            if (!lstat(p, &st) && S_ISDIR(st.st_mode)) rm_tree(p, depth + 1);
            else unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void teardown(void)
{
    rm_tree(tmpdir, 0);
}

static char *sub(const char *name)
{
    static char bufs[4][256];
    static int k;
    char *b = bufs[k++ % 4];
    path_in(b, 256, name);
    return b;
}

/* ---- tests ---- */

START_TEST(outputs_match_expected)
{
    write_f32("x.npy", 3, 4, 0.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    result r = RUN(art, "--in", xin, "--out-dir", sub("o"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_str_eq(r.err, "");
    result_free(&r);
    size_t n;
    char *d = read_out("o/out0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", &n);
    ck_assert_uint_eq(n, 48);
    for (int i = 0; i < 12; i++) ck_assert_float_eq(((float *)(void *)d)[i], 2.0f * (float)i + 1.0f);
    free(d);

    /* no --out-dir: a summary on stdout */
    r = RUN(art, "--in", xin);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "out0: f32 (3, 4) [1, 3, 5, 7, 9, 11, 13, 15, ...]\n");
    result_free(&r);

    /* FILE.npy without NAME= binds the next parameter (x) */
    r = RUN(art, "--in", sub("x.npy"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_str_eq(r.out, "out0: f32 (3, 4) [1, 3, 5, 7, 9, 11, 13, 15, ...]\n");
    result_free(&r);
    expect_error(RUN(art, "--in", sub("x.npy"), "--in", sub("x.npy")), "every parameter of main is already given");
}
END_TEST

START_TEST(tuple_outputs_flattened)
{
    write_f32("x.npy", 2, 4, 1.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "--in=x=%s", sub("x.npy"));
    result r = RUN(art, "--fn", "tup", xin, "--out-dir", sub("o"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    result_free(&r);
    size_t n;
    char *y = read_out("o/out0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", &n);
    char *x = read_out("o/out1.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", &n);
    char *k = read_out("o/out2.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &n);
    ck_assert_uint_eq(n, 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_float_eq(((float *)(void *)x)[i], 1.0f + (float)i);
        ck_assert_float_eq(((float *)(void *)y)[i], 3.0f + 2.0f * (float)i);
    }
    ck_assert_int_eq(*(int64_t *)(void *)k, 7);
    free(x);
    free(y);
    free(k);
}
END_TEST

START_TEST(npy_round_trip_and_versions)
{
    /* relax-run's own output is valid input; versions 2.0 and 3.0 headers read too. */
    write_f32("x.npy", 2, 4, -3.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    result r = RUN(art, "--fn", "tup", "--in", xin, "--out-dir", sub("a"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    snprintf(xin, sizeof xin, "x=%s", sub("a/out1.npy"));
    r = RUN(art, "--fn", "tup", "--in", xin, "--out-dir", sub("b"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    result_free(&r);
    size_t n1, n2;
    char *o1 = read_out("a/out1.npy", "{'descr': '<f4'", &n1);
    char *o2 = read_out("b/out1.npy", "{'descr': '<f4'", &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_int_eq(memcmp(o1, o2, n1), 0);
    free(o1);
    free(o2);

    float d[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    write_npy_raw("x2.npy", 2, "{\"descr\": \"<f4\", \"shape\": (2, 4), \"fortran_order\": False}", d, sizeof d);
    write_npy_raw("x3.npy", 3, "{'descr':'<f4','fortran_order':False,'shape':(2L,4L),}", d, sizeof d);
    for (int v = 2; v <= 3; v++) {
        snprintf(xin, sizeof xin, "x=%s", sub(v == 2 ? "x2.npy" : "x3.npy"));
        r = RUN(art, "--in", xin, "--out-dir", sub("c"));
        ck_assert_msg(r.status == 0, "v%d stderr: %s", v, r.err);
        result_free(&r);
        size_t n;
        char *y = read_out("c/out0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", &n);
        ck_assert_float_eq(((float *)(void *)y)[7], 15.0f);
        free(y);
    }
}
END_TEST

START_TEST(random_inputs_are_seeded)
{
    result r = RUN(art, "--fn", "tup", "--shape", "n=5", "--out-dir", sub("a"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    result_free(&r);
    r = RUN(art, "--fn", "tup", "--shape", "n=5", "--seed", "0", "--out-dir", sub("b"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    r = RUN(art, "--fn", "tup", "--shape=n=5", "--seed=9", "--out-dir", sub("c"));
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
    size_t na, nb, nc;
    char *xa = read_out("a/out1.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 4), }", &na);
    char *xb = read_out("b/out1.npy", "{'descr': '<f4'", &nb);
    char *xc = read_out("c/out1.npy", "{'descr': '<f4'", &nc);
    ck_assert_uint_eq(na, 80);
    ck_assert_int_eq(memcmp(xa, xb, na), 0);
    ck_assert_int_ne(memcmp(xa, xc, na), 0);
    int distinct = 0;
    for (int i = 0; i < 20; i++) {
        float v = ((float *)(void *)xa)[i];
        ck_assert(v >= -1.0f && v < 1.0f);
        distinct += i > 0 && v != ((float *)(void *)xa)[i - 1];
    }
    ck_assert_int_gt(distinct, 15);
    free(xa);
    free(xb);
    free(xc);

    /* An INT parameter takes its value from --shape; a given input binds n too. */
    r = RUN(art, "--fn", "echo", "--shape", "n=6", "--out-dir", sub("a"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    result_free(&r);
    char *k = read_out("a/out0.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &na);
    ck_assert_int_eq(*(int64_t *)(void *)k, 6);
    free(k);
    write_f32("x.npy", 3, 4, 0.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    r = RUN(art, "--fn", "echo", "--in", xin);
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_str_eq(r.out, "out0: int 3\n");
    result_free(&r);
}
END_TEST

START_TEST(user_errors)
{
    expect_error(RUN(art), "input x needs symbolic variable n: pass --shape n=N");
    expect_error(RUN(art, "--shape", "m=3"), "main has no symbolic variable m (variables: n)");
    expect_error(RUN(art, "--fn", "nope"), "no function 'nope' (functions: main, tup, echo, pair, big)");
    expect_error(RUN(art, "--device-id", "1", "--shape", "n=2"), "no CPU device 1: ");
    expect_error(RUN(art, "--in", "y=foo.npy"), "main has no parameter y (parameters: x)");
    expect_error(RUN(sub("missing.rxa")), "missing.rxa");
    write_bytes("bad.npy", "junk, not an artifact", 21);
    expect_error(RUN(sub("bad.npy")), "not a relax artifact");

    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("bad.npy"));
    write_bytes("bad.npy", "hello world, not numpy", 22);
    expect_error(RUN(art, "--in", xin), "input x: ");
    expect_error(RUN(art, "--in", xin), "bad magic");
    snprintf(xin, sizeof xin, "x=%s", sub("nofile.npy"));
    expect_error(RUN(art, "--in", xin), "cannot open");

    float d[8] = {0};
    write_npy_raw("trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", d, 20);
    snprintf(xin, sizeof xin, "x=%s", sub("trunc.npy"));
    expect_error(RUN(art, "--in", xin), "truncated: header promises 32 data bytes, file has 20");
    write_npy_raw("fort.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 4), }", d, 32);
    snprintf(xin, sizeof xin, "x=%s", sub("fort.npy"));
    expect_error(RUN(art, "--in", xin), "fortran_order True is not supported");
    write_npy_raw("bad.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 4), }", d, 32);
    snprintf(xin, sizeof xin, "x=%s", sub("bad.npy"));
    expect_error(RUN(art, "--in", xin), "big-endian");
    write_npy_raw("bad.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", d, 32);
    expect_error(RUN(art, "--in", xin), "unsupported dtype");
    write_npy_raw("bad.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -4), }", d, 32);
    expect_error(RUN(art, "--in", xin), "bad dimension");
    write_npy_raw("bad.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }", d, 32);
    expect_error(RUN(art, "--in", xin), "shape too large");
    write_npy_raw("bad.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), 'extra': 1}", d, 32);
    expect_error(RUN(art, "--in", xin), "unexpected key 'extra'");
    write_npy_raw("bad.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), ", d, 32);
    expect_error(RUN(art, "--in", xin), "bad header");
    write_npy_raw("bad.npy", 7, "{}", d, 32);
    expect_error(RUN(art, "--in", xin), "unsupported .npy format version 7.0");
    /* a header length pointing past the end */
    uint8_t lying[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0xff, '{', '}'};
    write_bytes("bad.npy", lying, sizeof lying);
    expect_error(RUN(art, "--in", xin), "truncated: header of 65535 bytes");

    /* wrong shape: the VM's message verbatim; wrong dtype: relax-run's */
    write_f32("x.npy", 3, 5, 0.0f);
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    expect_error(RUN(art, "--in", xin), "error: main: x: expected (n, 4), got (3, 5)");
    int32_t di[8] = {0};
    write_npy_raw("xi.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 4), }", di, 32);
    snprintf(xin, sizeof xin, "x=%s", sub("xi.npy"));
    expect_error(RUN(art, "--in", xin), "input x: ");
    expect_error(RUN(art, "--in", xin), "has dtype i32, the parameter is f32");
}
END_TEST

/* Some inputs given, others generated: a warning names the generated ones, unless
 * --random-missing; no --in at all stays quiet (an all-random run is the default). */
START_TEST(missing_inputs_warned)
{
    write_f32("x.npy", 3, 4, 0.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    result r = RUN(art, "--fn", "pair", "--in", xin, "--seed", "7", "--out-dir", sub("o"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_str_eq(r.err, "warning: pair: no --in for w: filled with random data (seed 7; "
                            "--random-missing silences this)\n");
    result_free(&r);
    size_t n;
    char *w = read_out("o/out0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", &n);
    ck_assert(((float *)(void *)w)[0] >= -1.0f && ((float *)(void *)w)[0] < 1.0f); /* random */
    free(w);
    expect_quiet(RUN(art, "--fn", "pair", "--in", xin, "--random-missing"));
    expect_quiet(RUN(art, "--fn", "pair", "--shape", "n=3"));
    /* every tensor given, an int from its variable: nothing was random, nothing said */
    expect_quiet(RUN(art, "--fn", "echo", "--in", xin));
}
END_TEST

/* Generated inputs are capped (default 4 GiB in all) before anything is allocated: a
 * tampered annotation asking for 8 GiB fails at once; --max-input-bytes moves the cap. */
START_TEST(generated_inputs_capped)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(RUN(art, "--fn", "big"),
                 "error: input x: generating (536870912, 4) f32 needs 8589934592 bytes; generated "
                 "inputs are limited to 4294967296 bytes (0 used so far): --max-input-bytes N "
                 "raises it\n");
    expect_error(RUN(art, "--shape", "n=300000000"), "needs 4800000000 bytes");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(t1.tv_sec - t0.tv_sec < 20, "took %ld s", (long)(t1.tv_sec - t0.tv_sec));
    /* the cap counts all generated inputs together: x (48 bytes) fits 64, w does not */
    expect_error(RUN(art, "--fn", "pair", "--shape", "n=3", "--max-input-bytes", "64"),
                 "input w: generating (3, 4) f32 needs 48 bytes; generated inputs are limited to "
                 "64 bytes (48 used so far)");
    expect_quiet(RUN(art, "--fn", "pair", "--shape", "n=3", "--max-input-bytes=96"));
    expect_quiet(RUN(art, "--shape", "n=3", "--max-input-bytes", "1K"));
    /* given inputs do not count */
    write_f32("x.npy", 3, 4, 0.0f);
    char xin[300];
    snprintf(xin, sizeof xin, "x=%s", sub("x.npy"));
    expect_quiet(RUN(art, "--in", xin, "--max-input-bytes", "1"));
}
END_TEST

START_TEST(usage_errors)
{
    result r = RUN("--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "usage: relax-run"));
    result_free(&r);
    r = RUN("--version");
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(strncmp(r.out, "relax-run ", 10), 0);
    result_free(&r);
    const char *const *bad[] = {
        (const char *const[]){"", NULL} + 1, /* no arguments */
        (const char *const[]){"--frobnicate", NULL},
        (const char *const[]){"m.rxa", "--repeat", "0", NULL},
        (const char *const[]){"m.rxa", "--number", "x", NULL},
        (const char *const[]){"m.rxa", "--in", "=x.npy", NULL}, /* FILE alone is positional */
        (const char *const[]){"m.rxa", "--shape", NULL},
        (const char *const[]){"m.rxa", "other.rxa", NULL},
        (const char *const[]){"m.rxa", "--min-repeat-ms", "-1", NULL},
        (const char *const[]){"m.rxa", "--max-input-bytes", "0", NULL},
        (const char *const[]){"m.rxa", "--max-input-bytes", "12Q", NULL},
        (const char *const[]){"m.rxa", "--max-input-bytes", "4GB", NULL},
        (const char *const[]){"m.rxa", "--max-input-bytes", "-5", NULL},
        (const char *const[]){"m.rxa", "--max-input-bytes", "2000T", NULL},
        (const char *const[]){"m.rxa", "--device-id", "-1", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = run_argv(bad[i]);
        ck_assert_msg(r.status == 2, "case %zu: status %d", i, r.status);
        ck_assert_msg(strlen(r.err) > 0, "case %zu: no message", i);
        result_free(&r);
    }
}
END_TEST

/* The value of "key": in a one-line JSON object; fails when absent. */
static double json_num(const char *s, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(s, pat);
    ck_assert_msg(p != NULL, "no %s in %s", key, s);
    char *end;
    double v = strtod(p + strlen(pat), &end);
    ck_assert(end != p + strlen(pat));
    ck_assert(*end == ',' || *end == '}');
    return v;
}

START_TEST(bench_json)
{
    result r = RUN(art, "--shape", "n=8", "--bench", "--repeat", "5", "--number", "3", "--warmup", "2");
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    size_t len = strlen(r.out);
    ck_assert(len > 2 && r.out[0] == '{' && r.out[len - 2] == '}' && r.out[len - 1] == '\n');
    ck_assert_ptr_eq(strchr(r.out, '\n'), r.out + len - 1);
    double mn = json_num(r.out, "min_ms"), md = json_num(r.out, "median_ms"),
           mx = json_num(r.out, "max_ms"), mean = json_num(r.out, "mean_ms"),
           sd = json_num(r.out, "stddev_ms");
    ck_assert(mn >= 0 && mn <= md && md <= mx && mn <= mean && mean <= mx && sd >= 0);
    ck_assert_int_eq((int)json_num(r.out, "repeat"), 5);
    ck_assert_int_eq((int)json_num(r.out, "number"), 3);
    ck_assert_int_eq((int)json_num(r.out, "kernels"), 1);
    ck_assert_int_eq((int)json_num(r.out, "peak_bytes"), 8 * 4 * 4); /* inputs excluded */
    result_free(&r);

    /* --min-repeat-ms grows number; --out-dir still writes the outputs */
    r = RUN(art, "--shape", "n=2", "--bench", "--repeat=3", "--min-repeat-ms", "2", "--out-dir", sub("o"));
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_int_eq((int)json_num(r.out, "repeat"), 3);
    ck_assert_int_gt((int)json_num(r.out, "number"), 1);
    result_free(&r);
    size_t n;
    free(read_out("o/out0.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", &n));
}
END_TEST

/* The profile table's row for `name`: its calls and % of wall; fails when absent. */
static void table_row(const char *table, const char *name, const char *kind, long long *calls,
                      double *pct)
{
    const char *p = table;
    size_t n = strlen(name);
    while ((p = strstr(p, name)) != NULL && !((p == table || p[-1] == '\n') && p[n] == ' ')) p++;
    ck_assert_msg(p != NULL, "no row %s in: %s", name, table);
    char k[16];
    double total;
    ck_assert_int_eq(sscanf(p + n, " %15s %lld %lf %lf%%", k, calls, &total, pct), 4);
    ck_assert_str_eq(k, kind);
    ck_assert(total >= 0);
}

START_TEST(profile_table_and_json)
{
    /* Without --bench: the one call is profiled; stdout keeps its summary. */
    result r = RUN(art, "--shape", "n=8", "--profile");
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    ck_assert_msg(!strncmp(r.out, "out0: f32 (8, 4) [", 18), "%s", r.out);
    ck_assert_msg(!strncmp(r.err, "profile of main: 1 call, wall ", 30), "%s", r.err);
    ck_assert(strstr(r.err, "\nname ") && strstr(r.err, "calls") && strstr(r.err, "% wall"));
    long long calls;
    double pct, opct;
    table_row(r.err, "scale_add", "kernel", &calls, &pct);
    ck_assert_int_eq(calls, 1);
    ck_assert(pct >= 0 && pct <= 100.05);
    ck_assert(strstr(r.err, "\n(vm overhead) ") != NULL);
    result_free(&r);

    /* --bench --profile: the timed calls only (4 x 2), the usual keys first. */
    r = RUN(art, "--shape", "n=8", "--bench", "--profile", "--repeat", "4", "--number", "2",
            "--warmup", "3");
    ck_assert_msg(r.status == 0, "stderr: %s", r.err);
    size_t len = strlen(r.out);
    ck_assert(len > 2 && r.out[len - 2] == '}' && strchr(r.out, '\n') == r.out + len - 1);
    ck_assert(!strncmp(r.out, "{\"mean_ms\": ", 12));
    const char *pk = strstr(r.out, ", \"peak_bytes\": "), *pp = strstr(r.out, ", \"profile\": [");
    ck_assert(pk && pp && pk < pp);
    ck_assert_int_eq((int)json_num(r.out, "repeat"), 4);
    ck_assert_int_eq((int)json_num(r.out, "kernels"), 1);
    ck_assert_msg(strstr(r.out, "\"profile\": [{\"name\": \"scale_add\", \"kind\": \"kernel\", "
                                "\"calls\": 8, \"total_ms\": ") != NULL, "%s", r.out);
    ck_assert_int_eq((int)json_num(r.out, "profile_runs"), 8);
    double wall = json_num(r.out, "profile_wall_ms"), other = json_num(r.out, "profile_other_ms");
    double total = json_num(pp, "total_ms");
    ck_assert(wall > 0 && other >= 0 && total >= 0);
    ck_assert(fabs(wall - other - total) < 1e-3 * wall + 1e-5);
    ck_assert_msg(!strncmp(r.err, "profile of main: 8 calls, wall ", 31), "%s", r.err);
    table_row(r.err, "scale_add", "kernel", &calls, &pct);
    ck_assert_int_eq(calls, 8);
    const char *ov = strstr(r.err, "\n(vm overhead) ");
    ck_assert(ov && sscanf(ov + 16, " - - %*f %lf%%", &opct) == 1);
    ck_assert(fabs(pct + opct - 100.0) < 0.15);
    result_free(&r);

    /* without --profile the line has no profile keys */
    r = RUN(art, "--shape", "n=8", "--bench", "--repeat", "2");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "profile"));
    ck_assert_ptr_null(strstr(r.err, "profile"));
    result_free(&r);
}
END_TEST

static Suite *relax_run_suite(void)
{
    Suite *s = suite_create("relax_run");
    TCase *tc = tcase_create("relax_run");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, outputs_match_expected);
    tcase_add_test(tc, tuple_outputs_flattened);
    tcase_add_test(tc, npy_round_trip_and_versions);
    tcase_add_test(tc, random_inputs_are_seeded);
    tcase_add_test(tc, user_errors);
    tcase_add_test(tc, missing_inputs_warned);
    tcase_add_test(tc, generated_inputs_capped);
    tcase_add_test(tc, usage_errors);
    tcase_add_test(tc, bench_json);
    tcase_add_test(tc, profile_table_and_json);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(relax_run_suite)
