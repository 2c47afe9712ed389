/*
 * relax-run — runs a function of an artifact with the C runtime (docs/runtime.md).
 *
 *   relax-run ARTIFACT.rxa [--fn main] [--in [NAME=]FILE.npy]... [--weights F.safetensors]
 *             [--out-dir DIR] [--shape VAR=N]... [--seed S] [--random-missing]
 *             [--max-input-bytes N] [--bench] [--repeat R] [--number K] [--warmup W]
 *             [--min-repeat-ms MS] [--resident] [--profile] [--threads N] [--device-id N]
 *
 * The driver, step by step: Step 1 parse the command line (bad usage exits 2); Step 2
 * load the artifact and find the function; Step 3 bind symbolic variables — first from
 * --shape, then from the dims of the given inputs wherever a parameter dim is a lone
 * variable (so `--in x=x.npy` alone fixes n for x: (n, 4)); Step 4 read the given
 * inputs and fill the missing ones with seeded random data of the annotated shape
 * (dims evaluated with rx_rxa_dim_eval: a needed variable without a value is an error
 * naming it; all generated inputs together are capped by --max-input-bytes, default
 * 4 GiB, checked before anything is allocated). When some inputs are given and others
 * are generated, a warning on stderr names the parameters filled with random data (a
 * forgotten --in otherwise goes unnoticed); --random-missing says it is meant and
 * silences it. With no --in at all nothing is printed: an all-random run (benchmarks)
 * is the documented default. Step 5 call once, writing DIR/out<i>.npy for the flattened
 * outputs (or printing a summary when there is no --out-dir and no --bench); Step 6 with
 * --bench, time the function with rx_rt_bench and print one line of JSON.
 *
 * --profile turns the runtime's per-call profiler on (runtime.h, docs/runtime.md) for
 * the calls that are measured: the one call of Step 5 without --bench (a cold call:
 * first touches of memory, thread pool start-up), the timed calls of Step 6 with it
 * (not the warm-up). The table (per kernel and library function: calls, total ms, % of
 * the wall time, mean us; then the VM's own share) goes to stderr, so stdout keeps its
 * format; with --bench the JSON line also gets "profile", "profile_runs",
 * "profile_wall_ms" and "profile_other_ms" after the usual keys.
 *
 * --threads N (1..RX_RT_MAX_THREADS) sets the thread count of the generated kernels
 * (OpenMP) and of the BLAS library together (rx_rt_set_threads, threads.c), overriding
 * OMP_NUM_THREADS / OPENBLAS_NUM_THREADS; --bench's line reports the counts in effect
 * ("threads", "blas_threads").
 *
 * Steps 2-4 and the JSON line live in bench.c, shared with relax-agent, so a benchmark
 * run on a device agent binds the same inputs (same seeded random data) and reports the
 * same statistics as relax-run --bench. relax-run checks only what it needs to build
 * arguments (an input's dtype against the annotation, with '<u2' data accepted for
 * bf16); shapes are left to the VM, whose MATCH instructions report "main: x: expected
 * (n, 128), got (4, 64)" verbatim. Random data: see bench.h (seeded from --seed, default 0).
 *
 * Exit status: 0 success, 1 a failure (one "error: ..." line on stderr), 2 bad usage.
 * Input buffers are owned here and borrowed by the runtime; peak_bytes excludes them.
 */
#include "bench.h"
#include "npy.h"
#include "safetensors.h"
#include "relax/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef RX_RUN_VERSION
#define RX_RUN_VERSION "0.1.0"
#endif

#define MAX_LIST 256 /* --in and --shape occurrences */

typedef struct opts {
    const char *artifact;  /* positional */
    const char *fn;        /* --fn, default "main" */
    const char *weights;   /* --weights FILE.safetensors: parameters by name, or NULL */
    const char *out_dir;   /* --out-dir or NULL */
    rx_bench_kv ins[MAX_LIST];   /* --in NAME=FILE (strings in copies) */
    int nins;
    rx_bench_kv shapes[MAX_LIST]; /* --shape VAR=N */
    int nshapes;
    uint64_t seed;         /* --seed */
    uint64_t max_input_bytes; /* --max-input-bytes (0: the default cap) */
    int random_missing;    /* --random-missing */
    int bench;             /* --bench */
    int profile;           /* --profile */
    int resident;          /* --resident */
    int repeat, number, warmup; /* bench options */
    int device_id;         /* --device-id: the device of the artifact's target (0) */
    double min_repeat_ms;  /* --min-repeat-ms */
    int threads;           /* --threads, 0 = leave the environment's counts */
    char *copies[2 * MAX_LIST]; /* strdup'ed NAME=VALUE strings */
    int ncopies;
} opts;

static void usage(FILE *f)
{
    fputs("usage: relax-run ARTIFACT.rxa [options]\n"
          "\n"
          "Runs a function of a compiled artifact with the C runtime.\n"
          "\n"
          "options:\n"
          "  --fn NAME            function to call (default main)\n"
          "  --in NAME=FILE.npy   input for parameter NAME (repeatable); FILE.npy alone is\n"
          "                       the next parameter not yet given, in order; missing inputs\n"
          "                       get seeded random data of the annotated shape\n"
          "  --weights FILE.safetensors\n"
          "                       parameters by name from a safetensors file (relaxc import\n"
          "                       --weights params writes one)\n"
          "  --shape VAR=N        value of a symbolic variable, for generated inputs\n"
          "  --seed S             seed for generated inputs (default 0)\n"
          "  --random-missing     generate the inputs not given without a warning (with\n"
          "                       some --in given, the others are named on stderr)\n"
          "  --max-input-bytes N  cap on the bytes of all generated inputs (default 4G;\n"
          "                       suffixes K, M, G, T: powers of 1024)\n"
          "  --out-dir DIR        write outputs as DIR/out0.npy, out1.npy, ... (tuples\n"
          "                       flattened); without it a summary is printed\n"
          "  --bench              time the function; print one line of JSON\n"
          "  --repeat R           measurements (default 10)\n"
          "  --number K           calls per measurement (default 1)\n"
          "  --warmup W           untimed calls first (default 1)\n"
          "  --min-repeat-ms MS   grow --number until a measurement lasts MS (default 0)\n"
          "  --resident           with --bench on a GPU artifact: copy the inputs to the\n"
          "                       device once and leave the results there, so a call\n"
          "                       times the device work alone (default: every call\n"
          "                       uploads its inputs and downloads its results)\n"
          "  --device-id N        the device to run on, among those of the artifact's\n"
          "                       target (default 0; a cpu artifact has device 0 only,\n"
          "                       an opencl one the OpenCL devices of all platforms,\n"
          "                       a cuda one the CUDA driver's devices)\n"
          "  --profile            time every kernel and library call of the measured calls\n"
          "                       (the timed ones with --bench); table on stderr, and a\n"
          "                       \"profile\" array in the --bench JSON\n"
          "  --threads N          threads for the kernels and the BLAS library, both\n"
          "                       (1..1024; default: OMP_NUM_THREADS, else all cores)\n"
          "  --help, --version\n"
          "\n"
          "exit status: 0 success, 1 failure (error: ... on stderr), 2 bad usage\n",
          f);
}

static int errorf(const char *fmt, ...)
{
    va_list ap;
    fputs("error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* ---- command line ---- */

static int parse_int_opt(const char *opt, const char *s, int lo, int *out)
{
    int64_t v;
    if (rx_bench_parse_i64(s, &v) || v < lo || v > (1 << 30)) {
        fprintf(stderr, "error: %s needs an integer >= %d, got '%s'\n", opt, lo, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A byte count: digits with an optional K, M, G or T (powers of 1024), 1 .. 2^50. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    int shift = u ? 10 * (int)(u - units + 1) : 0;
    if (errno || end == s || (*end && (!u || end[1])) || v == 0 || v > (1ull << (50 - shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* Splits "NAME=VALUE" into a copy owned by o. */
static int parse_kv(opts *o, const char *opt, const char *s, rx_bench_kv *out)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || !eq[1]) {
        fprintf(stderr, "error: %s needs NAME=VALUE, got '%s'\n", opt, s);
        return -1;
    }
    char *c = strdup(s);
    if (!c) {
        fprintf(stderr, "error: out of memory\n");
        return -1;
    }
    o->copies[o->ncopies++] = c;
    c[eq - s] = 0;
    out->name = c;
    out->value = c + (eq - s) + 1;
    return 0;
}

static void free_opts(opts *o)
{
    for (int i = 0; i < o->ncopies; i++) free(o->copies[i]);
}

/* Returns 0 to go on, or the exit status (0 after --help/--version is returned as -1). */
static int parse_args(int argc, char **argv, opts *o)
{
    o->fn = "main";
    o->repeat = 10;
    o->number = 1;
    o->warmup = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[32];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--version")) {
            printf("relax-run %s (rxa v%u)\n", RX_RUN_VERSION, RX_RXA_VERSION);
            return -1;
        }
        if (!strcmp(a, "--bench")) {
            o->bench = 1;
            continue;
        }
        if (!strcmp(a, "--profile")) {
            o->profile = 1;
            continue;
        }
        if (!strcmp(a, "--resident")) {
            o->resident = 1;
            continue;
        }
        if (!strcmp(a, "--random-missing")) {
            o->random_missing = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (o->artifact) {
                fprintf(stderr, "error: unexpected argument '%s' (see relax-run --help)\n", a);
                return 2;
            }
            o->artifact = a;
            continue;
        }
        /* --opt VALUE or --opt=VALUE */
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, a, n);
        name[n] = 0;
        static const char *const valued[] = {"--fn", "--in", "--out-dir", "--shape", "--seed",
                                             "--repeat", "--number", "--warmup", "--min-repeat-ms",
                                             "--threads", "--max-input-bytes", "--weights",
                                             "--device-id"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(name, valued[k]);
        if (!known) {
            fprintf(stderr, "error: unknown option %s (see relax-run --help)\n", a);
            return 2;
        }
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            fprintf(stderr, "error: %s needs a value\n", name);
            return 2;
        }
        if (!strcmp(name, "--fn")) {
            o->fn = val;
        } else if (!strcmp(name, "--weights")) {
            o->weights = val;
        } else if (!strcmp(name, "--out-dir")) {
            o->out_dir = val;
        } else if (!strcmp(name, "--in") || !strcmp(name, "--shape")) {
            int is_in = !strcmp(name, "--in");
            int *cnt = is_in ? &o->nins : &o->nshapes;
            if (*cnt >= MAX_LIST) {
                fprintf(stderr, "error: more than %d %s options\n", MAX_LIST, name);
                return 2;
            }
            if (is_in && !strchr(val, '=')) { /* FILE.npy alone: the next parameter */
                o->ins[*cnt] = (rx_bench_kv){NULL, val};
            } else if (parse_kv(o, name, val, is_in ? &o->ins[*cnt] : &o->shapes[*cnt])) {
                return 2;
            }
            ++*cnt;
        } else if (!strcmp(name, "--seed")) {
            int64_t s;
            if (rx_bench_parse_i64(val, &s)) {
                fprintf(stderr, "error: --seed needs an integer, got '%s'\n", val);
                return 2;
            }
            o->seed = (uint64_t)s;
        } else if (!strcmp(name, "--repeat")) {
            if (parse_int_opt(name, val, 1, &o->repeat)) return 2;
        } else if (!strcmp(name, "--number")) {
            if (parse_int_opt(name, val, 1, &o->number)) return 2;
        } else if (!strcmp(name, "--warmup")) {
            if (parse_int_opt(name, val, 0, &o->warmup)) return 2;
        } else if (!strcmp(name, "--threads")) {
            int64_t t;
            if (rx_bench_parse_i64(val, &t) || t < 1 || t > RX_RT_MAX_THREADS) {
                fprintf(stderr, "error: --threads needs an integer from 1 to %d, got '%s'\n",
                        RX_RT_MAX_THREADS, val);
                return 2;
            }
            o->threads = (int)t;
        } else if (!strcmp(name, "--max-input-bytes")) {
            if (parse_size(val, &o->max_input_bytes)) {
                fprintf(stderr, "error: --max-input-bytes needs a size >= 1 (bytes, or with K, M, "
                                "G or T), got '%s'\n", val);
                return 2;
            }
        } else if (!strcmp(name, "--device-id")) {
            if (parse_int_opt(name, val, 0, &o->device_id)) return 2;
        } else {
            char *end;
            errno = 0;
            double d = strtod(val, &end);
            if (errno || end == val || *end || !(d >= 0) || d > 1e9) {
                fprintf(stderr, "error: --min-repeat-ms needs a number >= 0, got '%s'\n", val);
                return 2;
            }
            o->min_repeat_ms = d;
        }
    }
    if (!o->artifact) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* ---- outputs ---- */

static int mkdir_p(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return errorf("--out-dir: bad directory name");
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char c = path[i];
        path[i] = 0;
        if (mkdir(path, 0777) && errno != EEXIST)
            return errorf("--out-dir: cannot create %s: %s", path, strerror(errno));
        path[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) return errorf("--out-dir: %s is not a directory", dir);
    return 0;
}

static int write_outputs(rx_rt_outputs *out, const char *dir)
{
    if (mkdir_p(dir)) return 1;
    int n = rx_rt_outputs_count(out);
    for (int i = 0; i < n; i++) {
        char path[4200], msg[320];
        snprintf(path, sizeof path, "%s/out%d.npy", dir, i);
        int kind = rx_rt_outputs_kind(out, i), rc = 0;
        if (kind == RX_RT_ARG_TENSOR) {
            DLTensor *t = rx_rt_outputs_tensor(out, i);
            uint32_t dtype = RX_RXA_DTYPE(t->dtype.code, t->dtype.bits, t->dtype.lanes);
            size_t nbytes = rx_rxa_dtype_bytes(dtype);
            for (int32_t d = 0; d < t->ndim; d++) nbytes *= (size_t)t->shape[d];
            rc = rx_npy_write_file(path, dtype, t->ndim, t->shape,
                                   (const char *)t->data + t->byte_offset, nbytes, msg, sizeof msg);
        } else if (kind == RX_RT_ARG_INT) {
            int64_t v = rx_rt_outputs_int(out, i);
            rc = rx_npy_write_file(path, RX_RXA_I64, 0, NULL, &v, 8, msg, sizeof msg);
        } else if (kind == RX_RT_ARG_SHAPE) {
            const int64_t *dims;
            int32_t nd = rx_rt_outputs_shape(out, i, &dims);
            int64_t len = nd;
            rc = rx_npy_write_file(path, RX_RXA_I64, 1, &len, dims, 8 * (size_t)nd, msg, sizeof msg);
        } else {
            fprintf(stderr, "warning: output %d has no array form (a function or storage); %s not written\n",
                    i, path);
            continue;
        }
        if (rc) return errorf("%s: %s", path, msg);
    }
    return 0;
}

static void print_outputs(rx_rt_outputs *out)
{
    int n = rx_rt_outputs_count(out);
    for (int i = 0; i < n; i++) {
        int kind = rx_rt_outputs_kind(out, i);
        printf("out%d: ", i);
        if (kind == RX_RT_ARG_TENSOR) {
            DLTensor *t = rx_rt_outputs_tensor(out, i);
            uint32_t dtype = RX_RXA_DTYPE(t->dtype.code, t->dtype.bits, t->dtype.lanes);
            char name[32];
            int64_t count = 1;
            printf("%s (", rx_rxa_dtype_name(dtype, name, sizeof name));
            for (int32_t d = 0; d < t->ndim; d++) {
                printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
                count *= t->shape[d];
            }
            printf("%s) [", t->ndim == 1 ? "," : "");
            for (int64_t e = 0; e < count && e < 8; e++)
                printf("%s%.6g", e ? ", " : "", rx_bench_elem((const char *)t->data + t->byte_offset, dtype, e));
            printf("%s]\n", count > 8 ? ", ..." : "");
        } else if (kind == RX_RT_ARG_INT) {
            printf("int %lld\n", (long long)rx_rt_outputs_int(out, i));
        } else if (kind == RX_RT_ARG_SHAPE) {
            const int64_t *dims;
            int32_t nd = rx_rt_outputs_shape(out, i, &dims);
            printf("shape (");
            for (int32_t d = 0; d < nd; d++) printf("%s%lld", d ? ", " : "", (long long)dims[d]);
            printf("%s)\n", nd == 1 ? "," : "");
        } else {
            printf("(no array form)\n");
        }
    }
}

/* ---- driver ---- */

/* Some inputs given, others generated: names the generated ones on stderr (one line). */
static void warn_random(const opts *o, rx_rt_module *m, const rx_bench_args *a)
{
    const rx_rxa_func *f = &rx_rt_module_artifact(m)->funcs[a->fn];
    int n = 0;
    for (uint32_t i = 0; i < a->nargs; i++) {
        if (!a->random[i]) continue;
        if (!n++) fprintf(stderr, "warning: %s: no --in for ", o->fn);
        else fputs(", ", stderr);
        if (f->params[i].name) fputs(f->params[i].name, stderr);
        else fprintf(stderr, "#%u", i);
    }
    if (n)
        fprintf(stderr, ": filled with random data (seed %llu; --random-missing silences this)\n",
                (unsigned long long)o->seed);
}

/* Prints m's profile table on stderr; with r, the --bench line with the profile keys on
 * stdout. Returns 0 or 1 (an error printed). */
static int report_profile(rx_rt_module *m, const char *fn, const rx_rt_bench_result *r)
{
    rx_rt_profile p;
    rx_rt_err err = {""};
    if (rx_rt_profile_get(m, &p, &err)) return errorf("%s", err.msg);
    rx_bench_print_profile(stderr, fn, &p);
    int rc = 0;
    if (r) {
        size_t n = (size_t)rx_bench_format_profile(r, &p, NULL, 0) + 1;
        char *line = malloc(n);
        if (line) {
            rx_bench_format_profile(r, &p, line, n);
            printf("%s\n", line);
            free(line);
        } else {
            rc = errorf("out of memory");
        }
    }
    rx_rt_profile_free(&p);
    return rc;
}

static int run(const opts *o, rx_rt_module *m)
{
    rx_rt_err err = {""};
    char msg[1024];
    /* Steps 2-4: the function and its arguments (bench.c, shared with relax-agent). */
    /* --weights first (by name), so positional --in files take the other parameters */
    rx_st_file w = {0};
    if (o->weights && rx_st_read(o->weights, &w, msg, sizeof msg))
        return errorf("--weights %s: %s", o->weights, msg);
    int nin = w.n + o->nins;
    rx_bench_input *ins = calloc((size_t)(nin ? nin : 1), sizeof *ins);
    if (!ins) {
        rx_st_free(&w);
        return errorf("out of memory");
    }
    for (int i = 0; i < w.n; i++)
        ins[i] = (rx_bench_input){.name = w.t[i].name, .bytes = w.t[i].npy,
                                  .nbytes = w.t[i].npy_n, .label = w.t[i].name};
    for (int i = 0; i < o->nins; i++)
        ins[w.n + i] = (rx_bench_input){.name = o->ins[i].name, .file = o->ins[i].value};
    rx_bench_args a;
    rx_bench_gen g = {o->seed, o->max_input_bytes, "--max-input-bytes N raises it"};
    rx_bench_ekind ek = rx_bench_args_build_gen(m, o->artifact, o->fn, o->shapes, o->nshapes, ins,
                                                nin, &g, &a, msg, sizeof msg);
    free(ins);
    rx_st_free(&w);
    if (ek) return errorf("%s", msg);
    if (o->nins && !o->random_missing) warn_random(o, m, &a);
    int rc = 1;
    /* Step 5: one call for the outputs. */
    if (o->out_dir || !o->bench) {
        rx_rt_outputs *out;
        int prof = o->profile && !o->bench;
        if (prof) rx_rt_set_profiling(m, 1);
        int crc = rx_rt_call(m, a.fn, a.args, (int)a.nargs, &out, NULL, &err);
        if (prof) rx_rt_set_profiling(m, 0);
        if (crc) {
            errorf("%s", err.msg);
            goto out;
        }
        int wrc = o->out_dir ? write_outputs(out, o->out_dir) : (print_outputs(out), 0);
        rx_rt_outputs_free(out);
        if (wrc || (prof && report_profile(m, o->fn, NULL))) goto out;
    }
    /* Step 6: the benchmark. */
    if (o->bench) {
        rx_rt_bench_opts bo = {o->warmup, o->repeat, o->number, o->min_repeat_ms, o->resident};
        if (o->profile) rx_rt_set_profiling(m, 1); /* rx_rt_bench: the timed calls only */
        rx_rt_bench_result r;
        if (rx_rt_bench(m, a.fn, a.args, (int)a.nargs, &bo, &r, &err)) {
            errorf("%s", err.msg);
            goto out;
        }
        if (o->profile) {
            if (report_profile(m, o->fn, &r)) goto out;
        } else {
            rx_bench_format(&r, msg, sizeof msg);
            printf("%s\n", msg);
        }
    }
    rc = 0;
out:
    rx_bench_args_free(&a);
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    /* Step 1: the command line. */
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free_opts(&o);
        return rc < 0 ? 0 : rc;
    }
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    if (!ctx) {
        free_opts(&o);
        return errorf("out of memory");
    }
    rx_rt_err err = {""};
    rx_rt_set_device_id(ctx, o.device_id); /* the device a GPU artifact opens */
    rx_rt_module *m = rx_rt_load_file(ctx, o.artifact, &err);
    char dev[160];
    if (!m) {
        rc = errorf("%s", err.msg);
    } else if (o.threads && rx_rt_set_threads(o.threads, &err)) {
        rc = errorf("%s", err.msg);
        rx_rt_module_free(m);
    } else if (o.device_id != 0 && !strcmp(rx_rt_module_device(m, dev, sizeof dev), "cpu")) {
        rc = errorf("no CPU device %d: %s runs on the CPU, device 0", o.device_id, o.artifact);
        rx_rt_module_free(m);
    } else {
        rc = run(&o, m);
        rx_rt_module_free(m);
    }
    rx_rt_ctx_free(ctx);
    free_opts(&o);
    fflush(stdout);
    return rc;
}
