/*
 * test_numeric.c — legalized kernels against NumPy.
 *
 * Every case is one graph function `fI` of one module with a single binding
 * `r = <op call>` over symbolic shapes. The module is deduced and legalized, all its
 * loop functions are compiled once (rx_codegen_c + rx_cc_build) and loaded, and each
 * case's kernel runs at two assignments of the symbolic variables (n = 3, m = 5 and
 * n = 6, m = 2, ...) from that ONE compiled kernel: the kernel's svars are evaluated
 * from the call (whole dims from the operands' and the output's annotations, scalar
 * parameters from tir_vars), as the VM will. Inputs are random, written as raw .npy-
 * free binary files into a private temp directory; one python3 run per assignment
 * (posix_spawn, an argv, no shell) computes every case's expected result with NumPy
 * and writes it back; results compare within float tolerance (exactly for integers
 * and bools).
 */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relax/codegen.h"
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"

extern char **environ;

typedef int32_t (*kernel_fn)(void *const *data, const int64_t *ivars);

enum { R_ANY, R_POS, R_INT, R_NZINT, R_UNIT }; /* input value ranges */

typedef struct ncase {
    const char *params;   /* JSON parameter list (no brackets) */
    const char *value;    /* JSON value of the binding r */
    const char *numpy;    /* the expected r as a Python expression over the parameters */
    int range;
} ncase;

#define TS(dt, ...) "{\"tensor\": {\"shape\": [" __VA_ARGS__ "], \"dtype\": \"" dt "\"}}"
#define P(name, type) "{\"name\": \"" name "\", \"type\": " type "}"
#define OP1(op, a) "{\"op\": \"" op "\", \"args\": [\"" a "\"]}"
#define OP1A(op, a, attrs) "{\"op\": \"" op "\", \"args\": [\"" a "\"], \"attrs\": " attrs "}"
#define OP2(op, a, b) "{\"op\": \"" op "\", \"args\": [\"" a "\", \"" b "\"]}"
#define XNM P("x", TS("f32", "\"n\", \"m\""))

static const ncase CASES[] = {
    /* unary */
    {XNM, OP1("exp", "x"), "np.exp(x)", R_ANY},
    {XNM, OP1("log", "x"), "np.log(x)", R_POS},
    {XNM, OP1("sqrt", "x"), "np.sqrt(x)", R_POS},
    {XNM, OP1("rsqrt", "x"), "1 / np.sqrt(x)", R_POS},
    {XNM, OP1("sigmoid", "x"), "1 / (1 + np.exp(-x))", R_ANY},
    {XNM, OP1("tanh", "x"), "np.tanh(x)", R_ANY},
    {XNM, OP1("sin", "x"), "np.sin(x)", R_ANY},
    {XNM, OP1("cos", "x"), "np.cos(x)", R_ANY},
    {XNM, OP1("erf", "x"), "np.vectorize(math.erf)(x)", R_ANY},
    {XNM, OP1("abs", "x"), "np.abs(x)", R_ANY},
    {XNM, OP1("negative", "x"), "-x", R_ANY},
    {XNM, OP1("floor", "x"), "np.floor(x)", R_ANY},
    {XNM, OP1("ceil", "x"), "np.ceil(x)", R_ANY},
    {XNM, OP1("round", "x"), "np.round(x)", R_ANY},
    {XNM, OP1("sign", "x"), "np.sign(x)", R_ANY},
    {XNM, OP1("square", "x"), "x * x", R_ANY},
    {XNM, OP1("nn.relu", "x"), "np.maximum(x, 0)", R_ANY},
    {XNM, OP1("nn.gelu", "x"), "0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))", R_ANY},
    {XNM, OP1("nn.gelu_tanh", "x"),
     "0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))", R_ANY},
    {XNM, OP1("nn.silu", "x"), "x / (1 + np.exp(-x))", R_ANY},
    {XNM, OP1A("clip", "x", "{\"min\": -0.5, \"max\": 1}"), "np.clip(x, -0.5, 1)", R_ANY},
    {P("x", TS("bool", "\"n\"")), OP1("logical_not", "x"), "~x", R_ANY},
    {P("x", TS("i32", "\"n\", 3")), OP1("abs", "x"), "np.abs(x)", R_INT},
    {XNM, OP1A("astype", "x", "{\"dtype\": \"i32\"}"), "x.astype(np.int32)", R_ANY},
    {P("x", TS("i32", "\"n\"")), OP1A("astype", "x", "{\"dtype\": \"f64\"}"), "x.astype(np.float64)", R_INT},
    {XNM, OP1A("astype", "x", "{\"dtype\": \"bool\"}"), "x.astype(bool)", R_INT},
    /* binary, broadcasting */
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("add", "x", "y"), "x + y", R_ANY},
    {XNM "," P("z", TS("f32", "\"n\", 1")), OP2("subtract", "x", "z"), "x - z", R_ANY},
    {P("z", TS("f32", "\"n\", 1")) "," P("y", TS("f32", "\"m\"")), OP2("multiply", "z", "y"), "z * y", R_ANY},
    {XNM "," P("s", TS("f32")), OP2("divide", "x", "s"), "x / s", R_POS},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("floor_divide", "x", "y"), "np.floor(x / y)", R_POS},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("floor_divide", "a", "b"), "a // b", R_NZINT},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("divide", "a", "b"),
     "np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))", R_NZINT},
    {XNM "," P("y", TS("f32", "\"n\", \"m\"")), OP2("power", "x", "y"), "x ** y", R_POS},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("maximum", "x", "y"), "np.maximum(x, y)", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("minimum", "x", "y"), "np.minimum(x, y)", R_ANY},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("equal", "a", "b"), "a == b", R_INT},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("not_equal", "a", "b"), "a != b", R_INT},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("less", "x", "y"), "x < y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("less_equal", "x", "y"), "x <= y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("greater", "x", "y"), "x > y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("greater_equal", "x", "y"), "x >= y", R_ANY},
    {P("p", TS("bool", "\"n\", \"m\"")) "," P("q", TS("bool", "\"m\"")), OP2("logical_and", "p", "q"), "p & q", R_ANY},
    {P("p", TS("bool", "\"n\", \"m\"")) "," P("q", TS("bool", "\"m\"")), OP2("logical_or", "p", "q"), "p | q", R_ANY},
    {P("c", TS("bool", "\"n\", \"m\"")) "," XNM "," P("y", TS("f32", "\"m\"")),
     "{\"op\": \"where\", \"args\": [\"c\", \"x\", \"y\"]}", "np.where(c, x, y)", R_ANY},
    /* expressions as dims: n is a tir_var of the kernel */
    {P("x", TS("f32", "\"n * 2\"")) "," P("y", TS("f32", "\"n * 2\"")) ","
     "{\"name\": \"s\", \"type\": {\"shape\": {\"values\": [\"n\"]}}}",
     OP2("add", "x", "y"), "x + y", R_ANY},
    /* matmul */
    {P("a", TS("f32", "\"n\", 8")) "," P("b", TS("f32", "8, \"m\"")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("a", TS("f32", "2, \"n\", 8")) "," P("b", TS("f32", "8, 3")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("a", TS("f32", "2, 1, \"n\", 8")) "," P("b", TS("f32", "3, 8, \"m\"")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("v", TS("f32", "8")) "," P("b", TS("f32", "8, \"m\"")), OP2("matmul", "v", "b"), "v @ b", R_ANY},
    {P("a", TS("f32", "\"n\", 8")) "," P("v", TS("f32", "8")), OP2("matmul", "a", "v"), "a @ v", R_ANY},
    /* reductions */
    {XNM, OP1A("sum", "x", "{\"axis\": 1}"), "np.sum(x, axis=1)", R_ANY},
    {XNM, OP1("sum", "x"), "np.sum(x)", R_ANY},
    {XNM, OP1A("mean", "x", "{\"axis\": 0, \"keepdims\": true}"), "np.mean(x, axis=0, keepdims=True)", R_ANY},
    {XNM, OP1A("max", "x", "{\"axis\": [0, 1]}"), "np.max(x)", R_ANY},
    {XNM, OP1A("min", "x", "{\"axis\": -1, \"keepdims\": true}"), "np.min(x, axis=-1, keepdims=True)", R_ANY},
    {XNM, OP1A("prod", "x", "{\"axis\": 0}"), "np.prod(x, axis=0)", R_UNIT},
    {XNM, OP1A("argmax", "x", "{\"axis\": 1}"), "np.argmax(x, axis=1)", R_ANY},
    {XNM, OP1("argmin", "x"), "np.argmin(x)", R_ANY},
    {P("x", TS("i32", "\"n\", 3")), OP1A("max", "x", "{\"axis\": 1}"), "np.max(x, axis=1)", R_INT},
    /* softmax */
    {XNM, OP1("nn.softmax", "x"), "np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)", R_ANY},
    {XNM, OP1A("nn.softmax", "x", "{\"axis\": 0}"), "np.exp(x - x.max(0, keepdims=True)) / np.exp(x - x.max(0, keepdims=True)).sum(0, keepdims=True)", R_ANY},
    {XNM, OP1("nn.log_softmax", "x"), "x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))", R_ANY},
    /* manipulation */
    {P("x", TS("f32", "\"n\", 4")), "{\"op\": \"reshape\", \"args\": [\"x\", {\"shape\": [\"n * 2\", 2]}]}",
     "x.reshape(-1, 2)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), OP1("flatten", "x"), "x.reshape(-1)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), "{\"op\": \"reshape\", \"args\": [\"x\", {\"shape\": [3, \"m\", \"n\"]}]}",
     "x.reshape(3, x.shape[1], x.shape[0])", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), OP1A("permute_dims", "x", "{\"axes\": [2, 0, 1]}"),
     "np.transpose(x, (2, 0, 1))", R_ANY},
    {XNM, OP1("permute_dims", "x"), "x.T", R_ANY},
    {XNM, OP1A("expand_dims", "x", "{\"axis\": [0, 3]}"), "x[None, :, :, None]", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")), OP1A("squeeze", "x", "{\"axis\": [1]}"), "x[:, 0, :]", R_ANY},
    {P("x", TS("f32", "1, \"m\"")) "," P("y", TS("f32", "\"n\"")), "{\"op\": \"broadcast_to\", \"args\": [\"x\", {\"shape\": [\"n\", \"m\"]}]}",
     "np.broadcast_to(x, (N, x.shape[1]))", R_ANY},
    /* creation */
    {XNM, "{\"op\": \"zeros\", \"args\": [{\"shape\": [\"n\", 3]}], \"attrs\": {\"dtype\": \"f32\"}}",
     "np.zeros((N, 3))", R_ANY},
    {XNM, "{\"op\": \"ones\", \"args\": [{\"shape\": [\"m\"]}], \"attrs\": {\"dtype\": \"i32\"}}",
     "np.ones((M,), dtype=np.int32)", R_ANY},
    {XNM, "{\"op\": \"full\", \"args\": [{\"shape\": [\"n\", 2]}, {\"const\": 2.5, \"dtype\": \"f32\"}]}",
     "np.full((N, 2), 2.5)", R_ANY},
    {XNM, OP1("zeros_like", "x"), "np.zeros_like(x)", R_ANY},
    {XNM, OP1("ones_like", "x"), "np.ones_like(x)", R_ANY},
    {XNM, "{\"op\": \"full_like\", \"args\": [\"x\", {\"const\": -1.5, \"dtype\": \"f32\"}]}",
     "np.full_like(x, -1.5)", R_ANY},
};

/* Two assignments of the symbolic variables, by name. */
static const char *const VNAMES[] = {"n", "m"};
static const int64_t VALS[2][2] = {{3, 5}, {6, 2}};

/* ---------------------------------------------------------------- helpers */
static char *diags_str(const rx_diags *d)
{
    rx_sb b = {0};
    rx_diags_format(d, &b);
    return rx_sb_take(&b);
}

static const char *np_dtype(rx_dtype dt)
{
    switch (dt) {
    case RX_DT_BOOL: return "bool_";
    case RX_DT_I32: return "int32";
    case RX_DT_I64: return "int64";
    case RX_DT_F32: return "float32";
    case RX_DT_F64: return "float64";
    default: ck_abort_msg("dtype %s not supported by the harness", rx_dtype_name(dt));
    }
    return NULL;
}

static size_t elem_size(rx_dtype dt) { return dt == RX_DT_BOOL ? 1 : (size_t)rx_dtype_bits(dt) / 8; }

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void fill(void *p, rx_dtype dt, size_t n, int range, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        double u = (double)(rnd(seed) % 100000) / 100000.0; /* [0, 1) */
        double v = range == R_POS ? 0.25 + 2 * u : range == R_UNIT ? 0.5 + u : -2 + 4 * u;
        int64_t k = (int64_t)(rnd(seed) % 9) - 4; /* [-4, 4] */
        if (range == R_NZINT) k = (k >= 0 ? k + 1 : k) + (k >= 0 ? 1 : -1); /* +-[2, 6] */
        switch (dt) {
        case RX_DT_BOOL: ((uint8_t *)p)[i] = rnd(seed) & 1; break;
        case RX_DT_I32: ((int32_t *)p)[i] = (int32_t)k; break;
        case RX_DT_I64: ((int64_t *)p)[i] = k; break;
        case RX_DT_F32: ((float *)p)[i] = range == R_INT ? (float)k : (float)v; break;
        case RX_DT_F64: ((double *)p)[i] = range == R_INT ? (double)k : v; break;
        default: ck_abort();
        }
    }
}

static double elem(const void *p, rx_dtype dt, size_t i)
{
    switch (dt) {
    case RX_DT_BOOL: return ((const uint8_t *)p)[i];
    case RX_DT_I32: return ((const int32_t *)p)[i];
    case RX_DT_I64: return (double)((const int64_t *)p)[i];
    case RX_DT_F32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

/* Evaluates a caller-level dim under vm. */
static int64_t eval(const rx_expr *e, const rx_vmap *vm)
{
    int64_t v;
    ck_assert_msg(rx_expr_eval_int(e, vm, &v), "cannot evaluate a dim");
    return v;
}

static size_t numel(const rx_sinfo *s, const rx_vmap *vm, int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        shape[i] = eval(s->dims[i], vm);
        n *= (size_t)shape[i];
    }
    return n;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(n == 0 || fwrite(p, 1, n, f) == n);
    fclose(f);
}

static void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)len + 1);
    ck_assert((size_t)len == 0 || fread(p, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

static void run_python(const char *script, const char *dir)
{
    char *argv[] = {"/usr/bin/python3", "-c", (char *)script, (char *)dir, NULL};
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "%s\n", script);
        ck_abort_msg("python3 failed on the script above");
    }
}

/* One case's run state for one assignment. */
typedef struct crun {
    rx_node *call;     /* the call_tir */
    void **bufs;       /* per call_tir argument, then the output */
    void *out;
    size_t nout;
    rx_dtype odt;
} crun;

/* ---------------------------------------------------------------- the test */
START_TEST(legalized_kernels_match_numpy)
{
    int nc = RX_COUNTOF(CASES);
    rx_sb js = {0};
    rx_sb_puts(&js, "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {");
    for (int i = 0; i < nc; i++)
        rx_sb_printf(&js, "%s\"f%d\": {\"kind\": \"relax\", \"params\": [%s], \"body\": "
                          "{\"blocks\": [{\"dataflow\": true, \"bindings\": [{\"var\": \"r\", "
                          "\"value\": %s}]}], \"result\": \"r\"}}",
                     i ? ", " : "", i, CASES[i].params, CASES[i].value);
    rx_sb_puts(&js, "}}");
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(js.p, js.n, NULL, &d);
    ck_assert_msg(m != NULL, "read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce: %s", diags_str(&d));
    rx_legalize_report rep;
    ck_assert_msg(rx_legalize(m, &rep, &d), "legalize: %s", diags_str(&d));
    ck_assert_int_eq(rep.legalized, nc);

    /* One compiled object for every kernel. */
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    uint8_t *so = NULL;
    size_t so_n = 0;
    ck_assert_msg(rx_cc_build(c.p, c.n, NULL, &so, &so_n, &d), "cc: %s", diags_str(&d));
    char dir[] = "/tmp/rxlg_num.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/k.so", dir);
    write_file(path, so, so_n);
    free(so);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
    unlink(path);

    for (int round = 0; round < 2; round++) {
        rx_sb py = {0};
        rx_sb_puts(&py, "import math, sys\nimport numpy as np\nd = sys.argv[1]\n");
        rx_sb_printf(&py, "N, M = %lld, %lld\n", (long long)VALS[round][0], (long long)VALS[round][1]);
        crun *runs = rx_xcalloc((size_t)nc, sizeof *runs);
        uint64_t seed = 12345 + (uint64_t)round;
        for (int i = 0; i < nc; i++) {
            char fname[16];
            snprintf(fname, sizeof fname, "f%d", i);
            rx_func *f = rx_module_find(m, fname);
            rx_vmap vm = {0};
            for (int k = 0; k < f->nsvars; k++)
                for (int q = 0; q < RX_COUNTOF(VNAMES); q++)
                    if (!strcmp(f->svars[k]->name, VNAMES[q]))
                        rx_vmap_set(&vm, f->svars[k], rx_e_int(m->arena, VALS[round][q]));
            /* inputs: every tensor parameter, written for NumPy */
            void **pbuf = rx_xcalloc((size_t)f->nparams + 1, sizeof *pbuf);
            for (int p = 0; p < f->nparams; p++) {
                const rx_sinfo *s = f->params[p]->sinfo;
                if (s->kind != RX_SI_TENSOR) continue;
                int64_t shape[8];
                size_t n = numel(s, &vm, shape);
                size_t bytes = n * elem_size((rx_dtype)s->dtype);
                pbuf[p] = rx_xcalloc(bytes + 1, 1);
                fill(pbuf[p], (rx_dtype)s->dtype, n, CASES[i].range, &seed);
                snprintf(path, sizeof path, "%s/c%d_%s.bin", dir, i, f->params[p]->u.var.name);
                write_file(path, pbuf[p], bytes);
                rx_sb_printf(&py, "%s = np.fromfile(d + '/c%d_%s.bin', dtype=np.%s).reshape((",
                             f->params[p]->u.var.name, i, f->params[p]->u.var.name,
                             np_dtype((rx_dtype)s->dtype));
                for (int k = 0; k < s->ndim; k++) rx_sb_printf(&py, "%lld,", (long long)shape[k]);
                rx_sb_puts(&py, "))\n");
            }
            /* the call: operands, output, svars */
            rx_node *call = f->body->blocks[0]->bindings[0].value;
            ck_assert_int_eq(call->call_kind, RX_CALL_TIR);
            rx_func *k = call->u.call.callee->u.global.fn;
            crun *r = &runs[i];
            r->call = call;
            r->bufs = rx_xcalloc((size_t)call->nargs + 2, sizeof(void *));
            for (int a = 0; a < call->nargs; a++) {
                rx_node *arg = call->args[a];
                if (arg->kind == RX_N_CONST) {
                    r->bufs[a] = arg->u.konst->data;
                    continue;
                }
                ck_assert_int_eq(arg->kind, RX_N_VAR);
                for (int p = 0; p < f->nparams; p++)
                    if (f->params[p] == arg) r->bufs[a] = pbuf[p];
                ck_assert_ptr_nonnull(r->bufs[a]);
            }
            const rx_sinfo *os = call->u.call.out;
            int64_t oshape[8];
            r->odt = (rx_dtype)os->dtype;
            r->nout = numel(os, &vm, oshape);
            r->out = rx_xcalloc(r->nout * elem_size(r->odt) + 1, 1);
            r->bufs[call->nargs] = r->out;
            int64_t ivars[16];
            for (int v = 0; v < k->nsvars; v++) {
                const rx_svar *sv = k->svars[v];
                bool found = false;
                for (int p = 0, bi = 0, si = 0; p < k->ntparams && !found; p++) {
                    const rx_tparam *tp = &k->tparams[p];
                    if (tp->var) {
                        if (tp->var == sv) {
                            ivars[v] = eval(call->u.call.tir_vars[si], &vm);
                            found = true;
                        }
                        si++;
                        continue;
                    }
                    const rx_sinfo *as = bi < call->nargs ? call->args[bi]->sinfo : os;
                    for (int dd = 0; dd < tp->buf->ndim && !found; dd++)
                        if (tp->buf->shape[dd]->kind == RX_E_VAR && tp->buf->shape[dd]->u.var == sv) {
                            ivars[v] = eval(as->dims[dd], &vm);
                            found = true;
                        }
                    bi++;
                }
                ck_assert_msg(found, "case %d: svar %s has no value", i, sv->name);
            }
            rx_sb sym = {0};
            rx_codegen_symbol(k->name, &sym);
            void *fp = dlsym(dl, rx_sb_str(&sym));
            ck_assert_msg(fp != NULL, "no symbol %s", rx_sb_str(&sym));
            rx_sb_free(&sym);
            kernel_fn kf;
            memcpy(&kf, &fp, sizeof kf);
            ck_assert_int_eq(kf(r->bufs, ivars), 0);
            rx_sb_printf(&py, "np.asarray(%s).astype(np.%s).tofile(d + '/c%d_expect.bin')\n",
                         CASES[i].numpy, np_dtype(r->odt), i);
            for (int p = 0; p < f->nparams; p++) free(pbuf[p]);
            free(pbuf);
            rx_vmap_free(&vm);
        }
        run_python(rx_sb_str(&py), dir);
        for (int i = 0; i < nc; i++) {
            crun *r = &runs[i];
            snprintf(path, sizeof path, "%s/c%d_expect.bin", dir, i);
            size_t n;
            void *want = read_file(path, &n);
            unlink(path);
            ck_assert_msg(n == r->nout * elem_size(r->odt), "case %d (%s): %zu result bytes, "
                          "expected %zu", i, CASES[i].numpy, r->nout * elem_size(r->odt), n);
            for (size_t e = 0; e < r->nout; e++) {
                double got = elem(r->out, r->odt, e), exp = elem(want, r->odt, e);
                bool ok = rx_dtype_is_float(r->odt) ? fabs(got - exp) <= 1e-5 + 1e-4 * fabs(exp)
                                                    : got == exp;
                ck_assert_msg(ok, "case %d (%s), round %d, element %zu: got %.9g, NumPy %.9g", i,
                              CASES[i].numpy, round, e, got, exp);
            }
            free(want);
            free(r->out);
            free(r->bufs);
        }
        /* the inputs */
        for (int i = 0; i < nc; i++) {
            rx_func *f = m->funcs[i];
            for (int p = 0; p < f->nparams; p++) {
                snprintf(path, sizeof path, "%s/c%d_%s.bin", dir, i, f->params[p]->u.var.name);
                unlink(path);
            }
        }
        free(runs);
        rx_sb_free(&py);
    }
    dlclose(dl);
    ck_assert_int_eq(rmdir(dir), 0);
    rx_sb_free(&c);
    rx_sb_free(&js);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("legalize_numeric");
    TCase *tc = tcase_create("numeric");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, legalized_kernels_match_numpy);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
