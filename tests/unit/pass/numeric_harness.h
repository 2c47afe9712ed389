/*
 * numeric_harness.h — the NumPy comparison harness shared by test_numeric*.c (each
 * test_*.c is its own executable; this header is included once by each, so its
 * functions are static).
 *
 * Every case is one graph function `fI` of one module with a single binding
 * `r = <op call>` over symbolic shapes. The module is deduced and legalized, all its
 * loop functions are compiled once (rx_codegen_c + rx_cc_build) and loaded, and each
 * case's kernel runs at two assignments of the symbolic variables (n = 3, m = 5 and
 * n = 6, m = 2) from that ONE compiled kernel: the kernel's svars are evaluated from
 * the call (whole dims from the operands' and the outputs' annotations, scalar
 * parameters from tir_vars), as the VM will. Inputs are random, written as raw binary
 * files into a private temp directory; one python3 run per assignment (posix_spawn,
 * an argv, no shell) computes every case's expected result with NumPy and writes it
 * back; results compare within float tolerance (exactly for integers and bools).
 * A tuple result (split, batch_norm) is several outputs: the NumPy expression then
 * gives a sequence, compared field by field. The Python expressions see the inputs
 * by parameter name, N and M (the assignment), math, np, and whatever the caller's
 * prelude defines (reference implementations of conv2d and pooling).
 */
#ifndef RX_TEST_NUMERIC_HARNESS_H
#define RX_TEST_NUMERIC_HARNESS_H

#include "pass_test.h"
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
enum { NUM_MAXOUT = 8 };                        /* outputs of one call */

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

/* Two assignments of the symbolic variables, by name. */
static const char *const VNAMES[] = {"n", "m"};
static const int64_t VALS[2][2] = {{3, 5}, {6, 2}};

/* ---------------------------------------------------------------- helpers */
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
    void **bufs;               /* per call_tir argument, then the outputs */
    int nouts;                 /* 1 for a tensor result, the field count for a tuple */
    void *out[NUM_MAXOUT];
    size_t nout[NUM_MAXOUT];   /* element counts */
    rx_dtype odt[NUM_MAXOUT];
} crun;

/* Result k of a call_tir's `out` annotation. */
static const rx_sinfo *out_field(const rx_sinfo *os, int k)
{
    return os->kind == RX_SI_TUPLE ? os->fields[k] : os;
}

/* ---------------------------------------------------------------- the run */
/* Runs cases[0..nc) as the header essay says; prelude is Python run before them. */
static void run_numeric(const ncase *cases, int nc, const char *prelude)
{
    rx_sb js = {0};
    rx_sb_puts(&js, "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {");
    for (int i = 0; i < nc; i++)
        rx_sb_printf(&js, "%s\"f%d\": {\"kind\": \"relax\", \"params\": [%s], \"body\": "
                          "{\"blocks\": [{\"dataflow\": true, \"bindings\": [{\"var\": \"r\", "
                          "\"value\": %s}]}], \"result\": \"r\"}}",
                     i ? ", " : "", i, cases[i].params, cases[i].value);
    rx_sb_puts(&js, "}}");
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(js.p, js.n, NULL, &d);
    ck_assert_msg(m != NULL, "read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce: %s", diags_str(&d));
    rx_legalize_report rep;
    ck_assert_msg((rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d)), "legalize: %s", diags_str(&d));
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
        if (prelude) rx_sb_puts(&py, prelude);
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
                fill(pbuf[p], (rx_dtype)s->dtype, n, cases[i].range, &seed);
                snprintf(path, sizeof path, "%s/c%d_%s.bin", dir, i, f->params[p]->u.var.name);
                write_file(path, pbuf[p], bytes);
                rx_sb_printf(&py, "%s = np.fromfile(d + '/c%d_%s.bin', dtype=np.%s).reshape((",
                             f->params[p]->u.var.name, i, f->params[p]->u.var.name,
                             np_dtype((rx_dtype)s->dtype));
                for (int k = 0; k < s->ndim; k++) rx_sb_printf(&py, "%lld,", (long long)shape[k]);
                rx_sb_puts(&py, "))\n");
            }
            /* the call: operands, outputs, svars */
            rx_node *call = f->body->blocks[0]->bindings[0].value;
            ck_assert_int_eq(call->call_kind, RX_CALL_TIR);
            rx_func *k = call->u.call.callee->u.global.fn;
            crun *r = &runs[i];
            const rx_sinfo *os = call->u.call.out;
            r->nouts = os->kind == RX_SI_TUPLE ? os->nfields : 1;
            ck_assert_int_le(r->nouts, NUM_MAXOUT);
            r->bufs = rx_xcalloc((size_t)call->nargs + (size_t)r->nouts + 1, sizeof(void *));
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
            for (int o = 0; o < r->nouts; o++) {
                int64_t oshape[8];
                const rx_sinfo *fs = out_field(os, o);
                r->odt[o] = (rx_dtype)fs->dtype;
                r->nout[o] = numel(fs, &vm, oshape);
                r->out[o] = rx_xcalloc(r->nout[o] * elem_size(r->odt[o]) + 1, 1);
                r->bufs[call->nargs + o] = r->out[o];
            }
            int64_t ivars[16];
            ck_assert_int_le(k->nsvars, 16);
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
                    const rx_sinfo *as = bi < call->nargs ? call->args[bi]->sinfo
                                                          : out_field(os, bi - call->nargs);
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
            if (os->kind == RX_SI_TUPLE)
                rx_sb_printf(&py, "_r = tuple(%s)\nassert len(_r) == %d, 'case %d'\n",
                             cases[i].numpy, r->nouts, i);
            else
                rx_sb_printf(&py, "_r = (%s,)\n", cases[i].numpy);
            for (int o = 0; o < r->nouts; o++)
                rx_sb_printf(&py, "np.asarray(_r[%d]).astype(np.%s).tofile(d + '/c%d_expect%d.bin')\n",
                             o, np_dtype(r->odt[o]), i, o);
            for (int p = 0; p < f->nparams; p++) free(pbuf[p]);
            free(pbuf);
            rx_vmap_free(&vm);
        }
        run_python(rx_sb_str(&py), dir);
        for (int i = 0; i < nc; i++) {
            crun *r = &runs[i];
            for (int o = 0; o < r->nouts; o++) {
                snprintf(path, sizeof path, "%s/c%d_expect%d.bin", dir, i, o);
                size_t n;
                void *want = read_file(path, &n);
                unlink(path);
                ck_assert_msg(n == r->nout[o] * elem_size(r->odt[o]),
                              "case %d (%s), output %d: %zu result bytes, NumPy %zu", i,
                              cases[i].numpy, o, r->nout[o] * elem_size(r->odt[o]), n);
                for (size_t e = 0; e < r->nout[o]; e++) {
                    double got = elem(r->out[o], r->odt[o], e), exp = elem(want, r->odt[o], e);
                    bool ok = rx_dtype_is_float(r->odt[o]) ? fabs(got - exp) <= 1e-5 + 1e-4 * fabs(exp)
                                                           : got == exp;
                    ck_assert_msg(ok, "case %d (%s), round %d, output %d, element %zu: got %.9g, "
                                  "NumPy %.9g", i, cases[i].numpy, round, o, e, got, exp);
                }
                free(want);
                free(r->out[o]);
            }
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

#endif
