/*
 * relax-run — runs a function of an artifact with the C runtime (shared/spec/interfaces.md).
 *
 *   relax-run ARTIFACT.rxa [--fn main] [--in NAME=FILE.npy]... [--out-dir DIR]
 *             [--shape VAR=N]... [--seed S] [--bench] [--repeat R] [--number K]
 *             [--warmup W] [--min-repeat-ms MS]
 *
 * The driver, step by step: Step 1 parse the command line (bad usage exits 2); Step 2
 * load the artifact and find the function; Step 3 bind symbolic variables — first from
 * --shape, then from the dims of the given inputs wherever a parameter dim is a lone
 * variable (so `--in x=x.npy` alone fixes n for x: (n, 4)); Step 4 read the given
 * inputs and fill the missing ones with seeded random data of the annotated shape
 * (dims evaluated with rx_rxa_dim_eval: a needed variable without a value is an error
 * naming it); Step 5 call once, writing DIR/out<i>.npy for the flattened outputs (or
 * printing a summary when there is no --out-dir and no --bench); Step 6 with --bench,
 * time the function with rx_rt_bench and print one line of JSON.
 *
 * relax-run checks only what it needs to build arguments (an input's dtype against the
 * annotation, with '<u2' data accepted for bf16); shapes are left to the VM, whose
 * MATCH instructions report "main: x: expected (n, 128), got (4, 64)" verbatim.
 *
 * Random data: a splitmix64 stream per parameter, seeded from --seed (default 0) and
 * the parameter index, so one input's values do not depend on which others were given.
 * Floats are uniform in [-1, 1) on a grid every float type represents exactly; signed
 * ints in [-8, 8), unsigned in [0, 16), bools fair coins.
 *
 * Exit status: 0 success, 1 a failure (one "error: ..." line on stderr), 2 bad usage.
 * Input buffers are owned here and borrowed by the runtime; peak_bytes excludes them.
 */
#include "npy.h"
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

typedef struct kv {
    const char *name;  /* before '=' (points into a copy owned by opts) */
    const char *value; /* after '=' */
} kv;

typedef struct opts {
    const char *artifact;  /* positional */
    const char *fn;        /* --fn, default "main" */
    const char *out_dir;   /* --out-dir or NULL */
    kv ins[MAX_LIST];      /* --in NAME=FILE */
    int nins;
    kv shapes[MAX_LIST];   /* --shape VAR=N */
    int nshapes;
    uint64_t seed;         /* --seed */
    int bench;             /* --bench */
    int repeat, number, warmup; /* bench options */
    double min_repeat_ms;  /* --min-repeat-ms */
    char *copies[2 * MAX_LIST]; /* strdup'ed NAME=VALUE strings */
    int ncopies;
} opts;

/* One parameter's argument: the API argument plus the memory it points to. */
typedef struct arg_buf {
    rx_rt_arg arg;      /* what rx_rt_call gets */
    DLTensor dl;        /* TENSOR */
    int64_t shape[RX_RXA_MAX_NDIM]; /* TENSOR/SHAPE dims */
    void *data;         /* TENSOR data (owned, 64-byte aligned) */
    const char *source; /* file name, or NULL when generated */
} arg_buf;

static void usage(FILE *f)
{
    fputs("usage: relax-run ARTIFACT.rxa [options]\n"
          "\n"
          "Runs a function of a compiled artifact with the C runtime.\n"
          "\n"
          "options:\n"
          "  --fn NAME            function to call (default main)\n"
          "  --in NAME=FILE.npy   input for parameter NAME (repeatable); missing inputs\n"
          "                       get seeded random data of the annotated shape\n"
          "  --shape VAR=N        value of a symbolic variable, for generated inputs\n"
          "  --seed S             seed for generated inputs (default 0)\n"
          "  --out-dir DIR        write outputs as DIR/out0.npy, out1.npy, ... (tuples\n"
          "                       flattened); without it a summary is printed\n"
          "  --bench              time the function; print one line of JSON\n"
          "  --repeat R           measurements (default 10)\n"
          "  --number K           calls per measurement (default 1)\n"
          "  --warmup W           untimed calls first (default 1)\n"
          "  --min-repeat-ms MS   grow --number until a measurement lasts MS (default 0)\n"
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

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

static int parse_int_opt(const char *opt, const char *s, int lo, int *out)
{
    int64_t v;
    if (parse_i64(s, &v) || v < lo || v > (1 << 30)) {
        fprintf(stderr, "error: %s needs an integer >= %d, got '%s'\n", opt, lo, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Splits "NAME=VALUE" into a copy owned by o. */
static int parse_kv(opts *o, const char *opt, const char *s, kv *out)
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
                                             "--repeat", "--number", "--warmup", "--min-repeat-ms"};
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
        } else if (!strcmp(name, "--out-dir")) {
            o->out_dir = val;
        } else if (!strcmp(name, "--in") || !strcmp(name, "--shape")) {
            int is_in = !strcmp(name, "--in");
            int *cnt = is_in ? &o->nins : &o->nshapes;
            if (*cnt >= MAX_LIST) {
                fprintf(stderr, "error: more than %d %s options\n", MAX_LIST, name);
                return 2;
            }
            if (parse_kv(o, name, val, is_in ? &o->ins[*cnt] : &o->shapes[*cnt])) return 2;
            ++*cnt;
        } else if (!strcmp(name, "--seed")) {
            int64_t s;
            if (parse_i64(val, &s)) {
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

/* ---- element conversions ---- */

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31) x = sign | 0x7f800000u | (mant << 13);
    else x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Element i of data (packed dtype) as a double, for summaries. */
static double elem_double(const void *data, uint32_t dtype, int64_t i)
{
    uint32_t code = dtype & 0xff, bits = (dtype >> 8) & 0xff;
    const char *p = data;
    if (code == 2 && bits == 16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return f16_to_f32(h);
    }
    if (code == 4 && bits == 16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return bf16_to_f32(h);
    }
    if (code == 2 && bits == 32) return ((const float *)data)[i];
    if (code == 2 && bits == 64) return ((const double *)data)[i];
    if (code == 1 && bits == 1) return ((const uint8_t *)data)[i] != 0;
    if (code == 0 && bits == 8) return ((const int8_t *)data)[i];
    if (code == 0 && bits == 16) return ((const int16_t *)data)[i];
    if (code == 0 && bits == 32) return ((const int32_t *)data)[i];
    if (code == 0 && bits == 64) return (double)((const int64_t *)data)[i];
    if (code == 1 && bits == 8) return ((const uint8_t *)data)[i];
    if (code == 1 && bits == 16) return ((const uint16_t *)data)[i];
    if (code == 1 && bits == 32) return ((const uint32_t *)data)[i];
    if (code == 1 && bits == 64) return (double)((const uint64_t *)data)[i];
    return NAN;
}

/* ---- random inputs ---- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fills count elements of dtype with random values; -1 for a dtype it cannot make. */
static int fill_random(void *data, uint32_t dtype, int64_t count, uint64_t seed)
{
    uint32_t code = dtype & 0xff, bits = (dtype >> 8) & 0xff;
    uint64_t s = seed;
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = splitmix(&s);
        if (code == 2 && bits == 32) {
            ((float *)data)[i] = (float)((double)(r >> 40) * 0x1p-23 - 1.0);
        } else if (code == 2 && bits == 64) {
            ((double *)data)[i] = (double)(r >> 11) * 0x1p-52 - 1.0;
        } else if (code == 2 && bits == 16) {
            ((uint16_t *)data)[i] = f32_to_f16((float)((double)(r >> 53) * 0x1p-10 - 1.0));
        } else if (code == 4 && bits == 16) {
            ((uint16_t *)data)[i] = f32_to_bf16((float)((double)(r >> 56) * 0x1p-7 - 1.0));
        } else if (code == 1 && bits == 1) {
            ((uint8_t *)data)[i] = (uint8_t)(r >> 63);
        } else if (code == 0 || code == 1) {
            int64_t v = code == 0 ? (int64_t)(r >> 60) - 8 : (int64_t)(r >> 60);
            if (bits == 8) ((int8_t *)data)[i] = (int8_t)v;
            else if (bits == 16) ((int16_t *)data)[i] = (int16_t)v;
            else if (bits == 32) ((int32_t *)data)[i] = (int32_t)v;
            else if (bits == 64) ((int64_t *)data)[i] = v;
            else return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* ---- symbolic variables ---- */

typedef struct syms {
    uint32_t n;            /* the function's symbolic variables */
    const char *const *names;
    int64_t *vals;         /* values */
    uint8_t *known;        /* nonzero when given */
} syms;

static int sym_index(const syms *s, const char *name)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return (int)i;
    return -1;
}

/* Binds a lone-variable dim from an input's actual dim (when not yet known). */
static void bind_dim(syms *s, const rx_rxa_dim *d, int64_t actual)
{
    if (d->ntok == 1 && d->tok[0].op == RX_RXA_TOK_VAR && d->tok[0].arg >= 0 &&
        (uint64_t)d->tok[0].arg < s->n && !s->known[d->tok[0].arg]) {
        s->vals[d->tok[0].arg] = actual;
        s->known[d->tok[0].arg] = 1;
    }
}

/* Evaluates an annotated dim of parameter `pname`; on failure prints the error. */
static int eval_dim(const syms *s, const rx_rxa_dim *d, const char *pname, int64_t *out)
{
    char msg[256];
    if (d->ntok == 0)
        return errorf("input %s has a dimension of unknown size: pass it with --in %s=FILE.npy",
                      pname, pname);
    for (uint32_t t = 0; t < d->ntok; t++)
        if (d->tok[t].op == RX_RXA_TOK_VAR && d->tok[t].arg >= 0 && (uint64_t)d->tok[t].arg < s->n &&
            !s->known[d->tok[t].arg]) {
            const char *v = s->names[d->tok[t].arg];
            return errorf("input %s needs symbolic variable %s: pass --shape %s=N", pname, v, v);
        }
    if (rx_rxa_dim_eval(d, s->vals, s->known, s->n, out, msg, sizeof msg))
        return errorf("input %s: cannot compute its shape: %s", pname, msg);
    return 0;
}

/* ---- inputs ---- */

static void *alloc_data(size_t nbytes)
{
    return aligned_alloc(64, nbytes ? (nbytes + 63) / 64 * 64 : 64);
}

/* Builds the argument of parameter p from the .npy file `file`. */
static int input_from_file(const rx_rxa_type *p, const char *pname, const char *file, arg_buf *b)
{
    rx_npy npy;
    char msg[320], want[32], got[32];
    if (rx_npy_read_file(file, &npy, msg, sizeof msg))
        return errorf("input %s: %s: %s", pname, file, msg);
    b->source = file;
    if (p->kind == RX_RXA_T_TENSOR) {
        uint32_t dtype = npy.dtype;
        if (p->dtype && p->dtype != dtype) {
            uint32_t pd = p->dtype;
            if ((pd >> 16) == 0) pd |= 1u << 16;
            if (pd == RX_RXA_DTYPE(4, 16, 1) && dtype == RX_RXA_DTYPE(1, 16, 1)) {
                dtype = pd; /* bf16 as raw '<u2' bits */
            } else if (pd != dtype) {
                free(npy.data);
                return errorf("input %s: %s has dtype %s, the parameter is %s", pname, file,
                              rx_rxa_dtype_name(npy.dtype, got, sizeof got),
                              rx_rxa_dtype_name(p->dtype, want, sizeof want));
            }
        }
        b->data = npy.data ? npy.data : alloc_data(0);
        if (!b->data) return errorf("out of memory");
        memcpy(b->shape, npy.shape, sizeof(int64_t) * (size_t)npy.ndim);
        memset(&b->dl, 0, sizeof b->dl);
        b->dl.data = b->data;
        b->dl.device.device_type = kDLCPU;
        b->dl.ndim = npy.ndim;
        b->dl.dtype.code = (uint8_t)(dtype & 0xff);
        b->dl.dtype.bits = (uint8_t)((dtype >> 8) & 0xff);
        b->dl.dtype.lanes = 1;
        b->dl.shape = b->shape;
        b->arg.kind = RX_RT_ARG_TENSOR;
        b->arg.tensor = &b->dl;
        return 0;
    }
    /* INT and SHAPE parameters take integer arrays: 0-d/one element, or 1-D. */
    uint32_t code = npy.dtype & 0xff, bits = (npy.dtype >> 8) & 0xff;
    int ok = (code == 0 || code == 1) && bits >= 8;
    if (p->kind == RX_RXA_T_INT) ok = ok && npy.count == 1;
    else ok = ok && npy.ndim == 1 && npy.count <= RX_RXA_MAX_NDIM;
    if (!ok) {
        free(npy.data);
        return errorf("input %s: %s must hold %s", pname, file,
                      p->kind == RX_RXA_T_INT ? "one integer" : "a 1-D integer array (the shape)");
    }
    for (int64_t i = 0; i < npy.count; i++) b->shape[i] = (int64_t)elem_double(npy.data, npy.dtype, i);
    if (bits == 64)
        for (int64_t i = 0; i < npy.count; i++) memcpy(&b->shape[i], (char *)npy.data + 8 * i, 8);
    free(npy.data);
    if (p->kind == RX_RXA_T_INT) {
        b->arg.kind = RX_RT_ARG_INT;
        b->arg.i = b->shape[0];
    } else {
        b->arg.kind = RX_RT_ARG_SHAPE;
        b->arg.dims = b->shape;
        b->arg.ndim = (int32_t)npy.count;
    }
    return 0;
}

/* Binds symbolic variables from a given input's actual dims or values. */
static void bind_from_input(syms *s, const rx_rxa_type *p, const arg_buf *b)
{
    if (p->kind == RX_RXA_T_TENSOR && p->ndim == b->dl.ndim)
        for (int32_t i = 0; i < p->ndim; i++) bind_dim(s, &p->dims[i], b->shape[i]);
    else if (p->kind == RX_RXA_T_SHAPE && p->ndim == b->arg.ndim)
        for (int32_t i = 0; i < p->ndim; i++) bind_dim(s, &p->dims[i], b->shape[i]);
    else if (p->kind == RX_RXA_T_INT && p->dims)
        bind_dim(s, &p->dims[0], b->arg.i);
}

/* Makes a random argument for parameter p of annotated shape. */
static int input_random(const rx_rxa_type *p, const char *pname, const syms *s, uint64_t seed,
                        arg_buf *b)
{
    if (p->kind == RX_RXA_T_INT) {
        if (!p->dims || p->dims[0].ntok == 0)
            return errorf("input %s is an integer of unknown value: pass it with --in %s=FILE.npy",
                          pname, pname);
        if (eval_dim(s, &p->dims[0], pname, &b->arg.i)) return 1;
        b->arg.kind = RX_RT_ARG_INT;
        return 0;
    }
    if (p->kind == RX_RXA_T_TUPLE)
        return errorf("input %s is a tuple: relax-run cannot pass tuple arguments", pname);
    if (p->kind == RX_RXA_T_ANY)
        return errorf("input %s has no annotation to generate data from: pass it with --in %s=FILE.npy",
                      pname, pname);
    if (p->ndim < 0)
        return errorf("input %s has unknown rank: pass it with --in %s=FILE.npy", pname, pname);
    for (int32_t i = 0; i < p->ndim; i++) {
        if (eval_dim(s, &p->dims[i], pname, &b->shape[i])) return 1;
        if (b->shape[i] < 0)
            return errorf("input %s: dimension %d evaluates to %lld", pname, (int)i, (long long)b->shape[i]);
    }
    if (p->kind == RX_RXA_T_SHAPE) {
        b->arg.kind = RX_RT_ARG_SHAPE;
        b->arg.dims = b->shape;
        b->arg.ndim = p->ndim;
        return 0;
    }
    if (!p->dtype)
        return errorf("input %s has unknown dtype: pass it with --in %s=FILE.npy", pname, pname);
    uint32_t dtype = p->dtype;
    if ((dtype >> 16) == 0) dtype |= 1u << 16;
    size_t esize = rx_rxa_dtype_bytes(dtype);
    int64_t count = 1;
    size_t nbytes;
    for (int32_t i = 0; i < p->ndim; i++)
        if (__builtin_mul_overflow(count, b->shape[i], &count))
            return errorf("input %s: shape too large", pname);
    if (__builtin_mul_overflow((size_t)count, esize, &nbytes) || nbytes > ((size_t)1 << 40))
        return errorf("input %s: shape too large", pname);
    b->data = alloc_data(nbytes);
    if (!b->data) return errorf("input %s: out of memory for %zu bytes", pname, nbytes);
    if ((dtype >> 16) != 1 || fill_random(b->data, dtype, count, seed)) {
        char name[32];
        return errorf("input %s: cannot generate data of dtype %s", pname,
                      rx_rxa_dtype_name(dtype, name, sizeof name));
    }
    memset(&b->dl, 0, sizeof b->dl);
    b->dl.data = b->data;
    b->dl.device.device_type = kDLCPU;
    b->dl.ndim = p->ndim;
    b->dl.dtype.code = (uint8_t)(dtype & 0xff);
    b->dl.dtype.bits = (uint8_t)((dtype >> 8) & 0xff);
    b->dl.dtype.lanes = 1;
    b->dl.shape = b->shape;
    b->arg.kind = RX_RT_ARG_TENSOR;
    b->arg.tensor = &b->dl;
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
                printf("%s%.6g", e ? ", " : "", elem_double((const char *)t->data + t->byte_offset, dtype, e));
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

static int run(const opts *o, rx_rt_ctx *ctx, rx_rt_module *m)
{
    rx_rt_err err = {""};
    /* Step 2: the function. */
    int fn = rx_rt_find_function(m, o->fn);
    const rx_rxa *a = rx_rt_module_artifact(m);
    if (fn < 0) {
        char list[512] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < a->nfuncs && len < sizeof list - 64; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", a->funcs[i].name);
        return errorf("%s: no function '%s' (functions: %s)", o->artifact, o->fn, list);
    }
    const rx_rxa_func *f = &a->funcs[fn];
    uint32_t np = f->nparams;

    /* Step 3: symbolic variables from --shape, then from given inputs. */
    syms s = {f->nsym, f->syms, calloc(f->nsym + 1, sizeof(int64_t)), calloc(f->nsym + 1, 1)};
    arg_buf *bufs = calloc(np + 1, sizeof *bufs);
    rx_rt_arg *args = calloc(np + 1, sizeof *args);
    const char **given = calloc(np + 1, sizeof *given);
    int rc = 1;
    if (!s.vals || !s.known || !bufs || !args || !given) {
        errorf("out of memory");
        goto out;
    }
    for (int i = 0; i < o->nshapes; i++) {
        int k = sym_index(&s, o->shapes[i].name);
        int64_t v;
        if (k < 0) {
            char list[512] = "";
            size_t len = 0;
            for (uint32_t j = 0; j < s.n && len < sizeof list - 64; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "", s.names[j]);
            errorf("--shape %s: %s has no symbolic variable %s (variables: %s)", o->shapes[i].name,
                   o->fn, o->shapes[i].name, s.n ? list : "none");
            goto out;
        }
        if (parse_i64(o->shapes[i].value, &v)) {
            errorf("--shape %s=%s: not an integer", o->shapes[i].name, o->shapes[i].value);
            goto out;
        }
        s.vals[k] = v;
        s.known[k] = 1;
    }
    for (int i = 0; i < o->nins; i++) {
        uint32_t k;
        for (k = 0; k < np; k++)
            if (f->params[k].name && !strcmp(f->params[k].name, o->ins[i].name)) break;
        if (k == np) {
            char list[512] = "";
            size_t len = 0;
            for (uint32_t j = 0; j < np && len < sizeof list - 64; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        f->params[j].name ? f->params[j].name : "?");
            errorf("--in %s: %s has no parameter %s (parameters: %s)", o->ins[i].name, o->fn,
                   o->ins[i].name, np ? list : "none");
            goto out;
        }
        if (given[k]) {
            errorf("--in %s given twice", o->ins[i].name);
            goto out;
        }
        given[k] = o->ins[i].value;
    }
    /* Step 4: inputs — files first (they bind variables), then random ones. */
    for (uint32_t k = 0; k < np; k++) {
        if (!given[k]) continue;
        const rx_rxa_type *p = &f->params[k];
        if (p->kind == RX_RXA_T_TUPLE) {
            errorf("input %s is a tuple: relax-run cannot pass tuple arguments", p->name);
            goto out;
        }
        if (input_from_file(p, p->name, given[k], &bufs[k])) goto out;
        bind_from_input(&s, p, &bufs[k]);
    }
    for (uint32_t k = 0; k < np; k++) {
        char pname[32];
        const char *name = f->params[k].name;
        if (!name) {
            snprintf(pname, sizeof pname, "#%u", k);
            name = pname;
        }
        if (!given[k] && input_random(&f->params[k], name, &s, o->seed * 0x100000001b3ull + k + 1,
                                      &bufs[k]))
            goto out;
        args[k] = bufs[k].arg;
    }
    /* Step 5: one call for the outputs. */
    if (o->out_dir || !o->bench) {
        rx_rt_outputs *out;
        if (rx_rt_call(m, fn, args, (int)np, &out, NULL, &err)) {
            errorf("%s", err.msg);
            goto out;
        }
        int wrc = o->out_dir ? write_outputs(out, o->out_dir) : (print_outputs(out), 0);
        rx_rt_outputs_free(out);
        if (wrc) goto out;
    }
    /* Step 6: the benchmark. */
    if (o->bench) {
        rx_rt_bench_opts bo = {o->warmup, o->repeat, o->number, o->min_repeat_ms};
        rx_rt_bench_result r;
        if (rx_rt_bench(m, fn, args, (int)np, &bo, &r, &err)) {
            errorf("%s", err.msg);
            goto out;
        }
        printf("{\"mean_ms\": %.6f, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, "
               "\"stddev_ms\": %.6f, \"repeat\": %d, \"number\": %d, \"kernels\": %lld, "
               "\"peak_bytes\": %lld}\n",
               r.mean_ms, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repeat, r.number,
               (long long)r.kernels, (long long)r.peak_bytes);
    }
    rc = 0;
out:
    if (bufs)
        for (uint32_t k = 0; k < np; k++) free(bufs[k].data);
    free(bufs);
    free(args);
    free(given);
    free(s.vals);
    free(s.known);
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
    rx_rt_module *m = rx_rt_load_file(ctx, o.artifact, &err);
    if (!m) {
        rc = errorf("%s", err.msg);
    } else {
        rc = run(&o, ctx, m);
        rx_rt_module_free(m);
    }
    rx_rt_ctx_free(ctx);
    free_opts(&o);
    fflush(stdout);
    return rc;
}
