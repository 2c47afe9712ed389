/*
 * bench.c — argument binding, random inputs and the result line shared by relax-run and
 * relax-agent (the contract is in bench.h).
 *
 * rx_bench_args_build, step by step (the numbering of relax-run's driver): Step 2 find
 * the function; Step 3 bind symbolic variables from the shape list, then collect the
 * given inputs by parameter; Step 4 read the given inputs first (their dims bind lone
 * variables), then generate the missing ones, each checked against what is left of the
 * generation cap before its memory is allocated (a tampered artifact's huge dims are an
 * error, not minutes of page faults). Every error returns its class and one line in the
 * caller's buffer; everything allocated so far is released.
 *
 * Each parameter's argument lives in an rx_bench_buf: the API argument, a DLTensor, its
 * dims and its data (64-byte aligned, owned). The runtime borrows them for the calls.
 *
 * The result line is written through a bounded appender (`out`) that keeps counting
 * past the end of the buffer, so callers learn the length to allocate, as with
 * snprintf; profile names are JSON-escaped.
 */
#define _DEFAULT_SOURCE 1 /* madvise, MADV_HUGEPAGE */
#include "bench.h"

#include "npy.h"
#include "relax/half.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One parameter's argument: the API argument plus the memory it points to. */
struct rx_bench_buf {
    rx_rt_arg arg;                  /* what rx_rt_call gets */
    DLTensor dl;                    /* TENSOR */
    int64_t shape[RX_RXA_MAX_NDIM]; /* TENSOR/SHAPE dims */
    void *data;                     /* TENSOR data (owned, 64-byte aligned) */
};

/* Where errors go: the caller's buffer. */
typedef struct errbuf {
    char *s;  /* message buffer */
    size_t n; /* its size */
} errbuf;

static rx_bench_ekind fail(errbuf *e, rx_bench_ekind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (e->n) vsnprintf(e->s, e->n, fmt, ap);
    va_end(ap);
    return kind;
}

int rx_bench_parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

/* ---- element conversions ---- */

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        x = sign | 0x7f800000u | (mant << 13);
    else
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
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
double rx_bench_elem(const void *data, uint32_t dtype, int64_t i)
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
            ((uint16_t *)data)[i] = rx_f32_to_f16((float)((double)(r >> 53) * 0x1p-10 - 1.0));
        } else if (code == 4 && bits == 16) {
            ((uint16_t *)data)[i] = f32_to_bf16((float)((double)(r >> 56) * 0x1p-7 - 1.0));
        } else if (code == 1 && bits == 1) {
            ((uint8_t *)data)[i] = (uint8_t)(r >> 63);
        } else if (code == 0 || code == 1) {
            int64_t v = code == 0 ? (int64_t)(r >> 60) - 8 : (int64_t)(r >> 60);
            if (bits == 8)
                ((int8_t *)data)[i] = (int8_t)v;
            else if (bits == 16)
                ((int16_t *)data)[i] = (int16_t)v;
            else if (bits == 32)
                ((int32_t *)data)[i] = (int32_t)v;
            else if (bits == 64)
                ((int64_t *)data)[i] = v;
            else
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* ---- symbolic variables ---- */

typedef struct syms {
    uint32_t n;               /* the function's symbolic variables */
    const char *const *names; /* their names */
    int64_t *vals;            /* values */
    uint8_t *known;           /* nonzero when given */
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

/* Evaluates an annotated dim of parameter `pname`. */
static rx_bench_ekind eval_dim(errbuf *e, const syms *s, const rx_rxa_dim *d, const char *pname,
                               int64_t *out)
{
    char msg[256];
    if (d->ntok == 0)
        return fail(e, RX_BENCH_E_INPUT,
                    "input %s has a dimension of unknown size: pass it with --in %s=FILE.npy",
                    pname, pname);
    for (uint32_t t = 0; t < d->ntok; t++)
        if (d->tok[t].op == RX_RXA_TOK_VAR && d->tok[t].arg >= 0 &&
            (uint64_t)d->tok[t].arg < s->n && !s->known[d->tok[t].arg]) {
            const char *v = s->names[d->tok[t].arg];
            return fail(e, RX_BENCH_E_SHAPE,
                        "input %s needs symbolic variable %s: pass --shape %s=N", pname, v, v);
        }
    if (rx_rxa_dim_eval(d, s->vals, s->known, s->n, out, msg, sizeof msg))
        return fail(e, RX_BENCH_E_SHAPE, "input %s: cannot compute its shape: %s", pname, msg);
    return RX_BENCH_OK;
}

/* ---- inputs ---- */

/* An input's data: 64-byte aligned; one of 4 MiB or more starts on a 2 MiB boundary and
 * is advised for transparent huge pages, as NumPy does with its large arrays and the
 * runtime's pool with its large blocks (device_cpu.c), so a kernel reads a benchmark's
 * input on the pages it would read a caller's. */
static void *alloc_data(size_t nbytes)
{
    const size_t huge = (size_t)2 << 20;
    if (nbytes < 2 * huge) return aligned_alloc(64, nbytes ? (nbytes + 63) / 64 * 64 : 64);
    void *p = aligned_alloc(huge, (nbytes + huge - 1) / huge * huge);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, (nbytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

/* Reads a given input (file or memory image) into npy. */
static int read_npy(const rx_bench_input *in, rx_npy *npy, char *msg, size_t msglen)
{
    if (in->file) return rx_npy_read_file(in->file, npy, msg, msglen);
    return rx_npy_read_mem(in->bytes, in->nbytes, npy, msg, msglen);
}

/* Builds the argument of parameter p from a given .npy input. */
static rx_bench_ekind input_given(errbuf *e, const rx_rxa_type *p, const char *pname,
                                  const rx_bench_input *in, rx_bench_buf *b)
{
    rx_npy npy;
    char msg[320], want[32], got[32];
    const char *file = in->file ? in->file : in->label ? in->label : in->name;
    if (read_npy(in, &npy, msg, sizeof msg))
        return fail(e, RX_BENCH_E_INPUT, "input %s: %s: %s", pname, file, msg);
    if (p->kind == RX_RXA_T_TENSOR) {
        uint32_t dtype = npy.dtype;
        if (p->dtype && p->dtype != dtype) {
            uint32_t pd = p->dtype;
            if ((pd >> 16) == 0) pd |= 1u << 16;
            if (pd == RX_RXA_DTYPE(4, 16, 1) && dtype == RX_RXA_DTYPE(1, 16, 1)) {
                dtype = pd; /* bf16 as raw '<u2' bits */
            } else if (pd != dtype) {
                free(npy.data);
                return fail(e, RX_BENCH_E_INPUT, "input %s: %s has dtype %s, the parameter is %s",
                            pname, file, rx_rxa_dtype_name(npy.dtype, got, sizeof got),
                            rx_rxa_dtype_name(p->dtype, want, sizeof want));
            }
        }
        b->data = npy.data ? npy.data : alloc_data(0);
        if (!b->data) return fail(e, RX_BENCH_E_NOMEM, "out of memory");
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
        return RX_BENCH_OK;
    }
    /* INT and SHAPE parameters take integer arrays: 0-d/one element, or 1-D. */
    uint32_t code = npy.dtype & 0xff, bits = (npy.dtype >> 8) & 0xff;
    int ok = (code == 0 || code == 1) && bits >= 8;
    if (p->kind == RX_RXA_T_INT)
        ok = ok && npy.count == 1;
    else
        ok = ok && npy.ndim == 1 && npy.count <= RX_RXA_MAX_NDIM;
    if (!ok) {
        free(npy.data);
        return fail(e, RX_BENCH_E_INPUT, "input %s: %s must hold %s", pname, file,
                    p->kind == RX_RXA_T_INT ? "one integer" : "a 1-D integer array (the shape)");
    }
    for (int64_t i = 0; i < npy.count; i++)
        b->shape[i] = (int64_t)rx_bench_elem(npy.data, npy.dtype, i);
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
    return RX_BENCH_OK;
}

/* Binds symbolic variables from a given input's actual dims or values. */
static void bind_from_input(syms *s, const rx_rxa_type *p, const rx_bench_buf *b)
{
    if (p->kind == RX_RXA_T_TENSOR && p->ndim == b->dl.ndim)
        for (int32_t i = 0; i < p->ndim; i++) bind_dim(s, &p->dims[i], b->shape[i]);
    else if (p->kind == RX_RXA_T_SHAPE && p->ndim == b->arg.ndim)
        for (int32_t i = 0; i < p->ndim; i++) bind_dim(s, &p->dims[i], b->shape[i]);
    else if (p->kind == RX_RXA_T_INT && p->dims)
        bind_dim(s, &p->dims[0], b->arg.i);
}

/* The generation budget of one build: the cap, the bytes generated so far. */
typedef struct budget {
    uint64_t max, used;
    const char *raise; /* appended to the over-cap error, or NULL */
} budget;

/* Makes a random argument for parameter p of annotated shape, within the budget. */
static rx_bench_ekind input_random(errbuf *e, const rx_rxa_type *p, const char *pname,
                                   const syms *s, uint64_t seed, budget *bg, rx_bench_buf *b)
{
    rx_bench_ekind k;
    if (p->kind == RX_RXA_T_INT) {
        if (!p->dims || p->dims[0].ntok == 0)
            return fail(e, RX_BENCH_E_INPUT,
                        "input %s is an integer of unknown value: pass it with --in %s=FILE.npy",
                        pname, pname);
        if ((k = eval_dim(e, s, &p->dims[0], pname, &b->arg.i))) return k;
        b->arg.kind = RX_RT_ARG_INT;
        return RX_BENCH_OK;
    }
    if (p->kind == RX_RXA_T_TUPLE)
        return fail(e, RX_BENCH_E_INPUT,
                    "input %s is a tuple: relax-run cannot pass tuple arguments", pname);
    if (p->kind == RX_RXA_T_ANY)
        return fail(
            e, RX_BENCH_E_INPUT,
            "input %s has no annotation to generate data from: pass it with --in %s=FILE.npy",
            pname, pname);
    if (p->ndim < 0)
        return fail(e, RX_BENCH_E_INPUT, "input %s has unknown rank: pass it with --in %s=FILE.npy",
                    pname, pname);
    for (int32_t i = 0; i < p->ndim; i++) {
        if ((k = eval_dim(e, s, &p->dims[i], pname, &b->shape[i]))) return k;
        if (b->shape[i] < 0)
            return fail(e, RX_BENCH_E_SHAPE, "input %s: dimension %d evaluates to %lld", pname,
                        (int)i, (long long)b->shape[i]);
    }
    if (p->kind == RX_RXA_T_SHAPE) {
        b->arg.kind = RX_RT_ARG_SHAPE;
        b->arg.dims = b->shape;
        b->arg.ndim = p->ndim;
        return RX_BENCH_OK;
    }
    if (!p->dtype)
        return fail(e, RX_BENCH_E_INPUT,
                    "input %s has unknown dtype: pass it with --in %s=FILE.npy", pname, pname);
    uint32_t dtype = p->dtype;
    if ((dtype >> 16) == 0) dtype |= 1u << 16;
    size_t esize = rx_rxa_dtype_bytes(dtype);
    int64_t count = 1;
    size_t nbytes;
    for (int32_t i = 0; i < p->ndim; i++)
        if (__builtin_mul_overflow(count, b->shape[i], &count))
            return fail(e, RX_BENCH_E_SHAPE, "input %s: shape too large", pname);
    if (__builtin_mul_overflow((size_t)count, esize, &nbytes) || nbytes > ((size_t)1 << 40))
        return fail(e, RX_BENCH_E_SHAPE, "input %s: shape too large", pname);
    if (nbytes > bg->max - bg->used) { /* before allocating: nothing is touched */
        char shape[256], name[32];
        size_t len = 0;
        shape[0] = 0;
        for (int32_t i = 0; i < p->ndim && len < sizeof shape - 32; i++)
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", i ? ", " : "",
                                    (long long)b->shape[i]);
        return fail(e, RX_BENCH_E_SHAPE,
                    "input %s: generating (%s%s) %s needs %zu bytes; generated inputs are "
                    "limited to %llu bytes (%llu used so far)%s%s",
                    pname, shape, p->ndim == 1 ? "," : "",
                    rx_rxa_dtype_name(dtype, name, sizeof name), nbytes,
                    (unsigned long long)bg->max, (unsigned long long)bg->used,
                    bg->raise ? ": " : "", bg->raise ? bg->raise : "");
    }
    bg->used += nbytes;
    b->data = alloc_data(nbytes);
    if (!b->data)
        return fail(e, RX_BENCH_E_NOMEM, "input %s: out of memory for %zu bytes", pname, nbytes);
    if ((dtype >> 16) != 1 || fill_random(b->data, dtype, count, seed)) {
        char name[32];
        return fail(e, RX_BENCH_E_INPUT, "input %s: cannot generate data of dtype %s", pname,
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
    return RX_BENCH_OK;
}

/* ---- the build ---- */

/* Appends "a, b, c" (names) to list, bounded. */
static void name_list(char *list, size_t cap, const char *const *names, uint32_t n)
{
    size_t len = 0;
    list[0] = 0;
    for (uint32_t i = 0; i < n && len < cap - 64; i++)
        len += (size_t)snprintf(list + len, cap - len, "%s%s", i ? ", " : "",
                                names[i] ? names[i] : "?");
}

void rx_bench_args_free(rx_bench_args *a)
{
    if (a->bufs)
        for (uint32_t k = 0; k < a->nargs; k++) free(a->bufs[k].data);
    free(a->bufs);
    free(a->args);
    free(a->random);
    memset(a, 0, sizeof *a);
}

/* Step 3: symbolic variables from the shape list; the given inputs by parameter. */
static rx_bench_ekind bind_given(errbuf *e, const rx_rxa_func *f, const char *fname, syms *s,
                                 const rx_bench_kv *shapes, int nshapes, const rx_bench_input *ins,
                                 int nins, const rx_bench_input **given)
{
    char list[512];
    for (int i = 0; i < nshapes; i++) {
        int k = sym_index(s, shapes[i].name);
        int64_t v;
        if (k < 0) {
            name_list(list, sizeof list, s->names, s->n);
            return fail(e, RX_BENCH_E_SHAPE,
                        "--shape %s: %s has no symbolic variable %s (variables: %s)",
                        shapes[i].name, fname, shapes[i].name, s->n ? list : "none");
        }
        if (rx_bench_parse_i64(shapes[i].value, &v))
            return fail(e, RX_BENCH_E_SHAPE, "--shape %s=%s: not an integer", shapes[i].name,
                        shapes[i].value);
        s->vals[k] = v;
        s->known[k] = 1;
    }
    uint32_t next = 0; /* positional inputs (no name) take the next parameter in order */
    for (int i = 0; i < nins; i++) {
        uint32_t k;
        if (!ins[i].name) {
            while (next < f->nparams && given[next]) next++;
            if (next == f->nparams)
                return fail(e, RX_BENCH_E_INPUT, "--in %s: every parameter of %s is already given",
                            ins[i].file ? ins[i].file : "?", fname);
            given[next] = &ins[i];
            continue;
        }
        for (k = 0; k < f->nparams; k++)
            if (f->params[k].name && !strcmp(f->params[k].name, ins[i].name)) break;
        if (k == f->nparams) {
            size_t len = 0;
            list[0] = 0;
            for (uint32_t j = 0; j < f->nparams && len < sizeof list - 64; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        f->params[j].name ? f->params[j].name : "?");
            return fail(e, RX_BENCH_E_INPUT, "--in %s: %s has no parameter %s (parameters: %s)",
                        ins[i].name, fname, ins[i].name, f->nparams ? list : "none");
        }
        if (given[k]) return fail(e, RX_BENCH_E_INPUT, "--in %s given twice", ins[i].name);
        given[k] = &ins[i];
    }
    return RX_BENCH_OK;
}

rx_bench_ekind rx_bench_args_build(rx_rt_module *m, const char *what, const char *fname,
                                   const rx_bench_kv *shapes, int nshapes,
                                   const rx_bench_input *ins, int nins, uint64_t seed,
                                   rx_bench_args *out, char *err, size_t errlen)
{
    rx_bench_gen g = {seed, 0, NULL};
    return rx_bench_args_build_gen(m, what, fname, shapes, nshapes, ins, nins, &g, out, err,
                                   errlen);
}

rx_bench_ekind rx_bench_args_build_gen(rx_rt_module *m, const char *what, const char *fname,
                                       const rx_bench_kv *shapes, int nshapes,
                                       const rx_bench_input *ins, int nins,
                                       const rx_bench_gen *g, rx_bench_args *out, char *err,
                                       size_t errlen)
{
    errbuf e = {err, errlen};
    budget bg = {g->max_bytes ? g->max_bytes : RX_BENCH_GEN_MAX_DEFAULT, 0, g->raise};
    uint64_t seed = g->seed;
    memset(out, 0, sizeof *out);
    if (errlen) err[0] = 0;
    /* Step 2: the function. */
    int fn = rx_rt_find_function(m, fname);
    const rx_rxa *a = rx_rt_module_artifact(m);
    if (fn < 0) {
        char list[512] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < a->nfuncs && len < sizeof list - 64; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    a->funcs[i].name);
        return fail(&e, RX_BENCH_E_FUNCTION, "%s: no function '%s' (functions: %s)", what, fname,
                    list);
    }
    const rx_rxa_func *f = &a->funcs[fn];
    uint32_t np = f->nparams;
    syms s = {f->nsym, f->syms, calloc(f->nsym + 1, sizeof(int64_t)), calloc(f->nsym + 1, 1)};
    const rx_bench_input **given = calloc(np + 1, sizeof *given);
    out->fn = fn;
    out->nargs = np;
    out->bufs = calloc(np + 1, sizeof *out->bufs);
    out->args = calloc(np + 1, sizeof *out->args);
    out->random = calloc(np + 1, 1);
    rx_bench_ekind k = RX_BENCH_OK;
    if (!s.vals || !s.known || !given || !out->bufs || !out->args || !out->random) {
        k = fail(&e, RX_BENCH_E_NOMEM, "out of memory");
        goto out;
    }
    /* Step 3: symbolic variables from the shape list, then from given inputs. */
    if ((k = bind_given(&e, f, fname, &s, shapes, nshapes, ins, nins, given))) goto out;
    /* Step 4: inputs — given ones first (they bind variables), then random ones. */
    for (uint32_t i = 0; i < np; i++) {
        if (!given[i]) continue;
        const rx_rxa_type *p = &f->params[i];
        if (p->kind == RX_RXA_T_TUPLE) {
            k = fail(&e, RX_BENCH_E_INPUT,
                     "input %s is a tuple: relax-run cannot pass tuple arguments", p->name);
            goto out;
        }
        if ((k = input_given(&e, p, p->name, given[i], &out->bufs[i]))) goto out;
        bind_from_input(&s, p, &out->bufs[i]);
    }
    for (uint32_t i = 0; i < np; i++) {
        char pname[32];
        const char *name = f->params[i].name;
        if (!name) {
            snprintf(pname, sizeof pname, "#%u", i);
            name = pname;
        }
        if (!given[i] && (k = input_random(&e, &f->params[i], name, &s,
                                           seed * 0x100000001b3ull + i + 1, &bg, &out->bufs[i])))
            goto out;
        out->args[i] = out->bufs[i].arg;
        out->random[i] = !given[i] && out->bufs[i].arg.kind == RX_RT_ARG_TENSOR;
    }
out:
    free(given);
    free(s.vals);
    free(s.known);
    if (k) rx_bench_args_free(out);
    return k;
}

/* ---- the result line ---- */

/* A bounded text appender that counts the full length (snprintf semantics). */
typedef struct out {
    char *buf;  /* destination (may be NULL when n is 0) */
    size_t n;   /* its size */
    size_t len; /* characters produced so far, including those cut */
} out;

static void outf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->n ? o->n - o->len : 0;
    int k = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0) o->len += (size_t)k;
}

/* s as a JSON string body (quotes, backslashes and control characters escaped). */
static void out_json_str(out *o, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') outf(o, "\\%c", c);
        else if (c < 0x20) outf(o, "\\u%04x", c);
        else outf(o, "%c", c);
    }
}

static void out_result(out *o, const rx_rt_bench_result *r)
{
    outf(o,
         "{\"mean_ms\": %.6f, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, "
         "\"stddev_ms\": %.6f, \"repeat\": %d, \"number\": %d, \"kernels\": %lld, "
         "\"peak_bytes\": %lld, \"reserved_bytes\": %lld, \"resident_bytes\": %lld, "
         "\"threads\": %d, \"blas_threads\": %d, \"reduced_calls\": %lld",
         r->mean_ms, r->median_ms, r->min_ms, r->max_ms, r->stddev_ms, r->repeat, r->number,
         (long long)r->kernels, (long long)r->peak_bytes, (long long)r->peak_bytes,
         (long long)r->resident_bytes, r->threads, r->blas_threads,
         (long long)r->reduced_calls);
    outf(o, ", \"device\": \"");
    out_json_str(o, r->device);
    outf(o, "\"");
    if (r->launches >= 0) /* a GPU module: launches per call, CUDA Graphs included */
        outf(o, ", \"launches\": %.2f, \"graph_launches\": %.2f, \"resident\": %s", r->launches,
             r->graph_launches, r->resident ? "true" : "false");
}

static const char *kind_name(int kind)
{
    return kind == RX_RT_PROF_LIBRARY ? "library" : "kernel";
}

int rx_bench_format(const rx_rt_bench_result *r, char *buf, size_t n)
{
    out o = {buf, n, 0};
    out_result(&o, r);
    outf(&o, "}");
    return (int)o.len;
}

int rx_bench_format_profile(const rx_rt_bench_result *r, const rx_rt_profile *p, char *buf,
                            size_t n)
{
    out o = {buf, n, 0};
    double wall = (double)p->wall_ns;
    out_result(&o, r);
    outf(&o, ", \"profile\": [");
    for (int i = 0; i < p->n; i++) {
        const rx_rt_prof_entry *e = &p->entries[i];
        outf(&o, "%s{\"name\": \"", i ? ", " : "");
        out_json_str(&o, e->name);
        outf(&o,
             "\", \"kind\": \"%s\", \"calls\": %lld, \"total_ms\": %.6f, \"pct\": %.3f, "
             "\"mean_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f}",
             kind_name(e->kind), (long long)e->calls, (double)e->total_ns / 1e6,
             wall > 0 ? 100.0 * (double)e->total_ns / wall : 0.0,
             (double)e->total_ns / (double)e->calls / 1e3, (double)e->min_ns / 1e3,
             (double)e->max_ns / 1e3);
    }
    outf(&o, "], \"profile_runs\": %lld, \"profile_wall_ms\": %.6f, \"profile_other_ms\": %.6f}",
         (long long)p->runs, wall / 1e6, (double)(p->wall_ns - p->parts_ns) / 1e6);
    return (int)o.len;
}

/* ---- the profile table ---- */

void rx_bench_print_profile(FILE *f, const char *fn, const rx_rt_profile *p)
{
    double wall = (double)p->wall_ns, other = (double)(p->wall_ns - p->parts_ns);
    int w = 24; /* name column width: the longest name within [24, 72]; longer names are
                   printed whole and push their row's columns right */
    for (int i = 0; i < p->n; i++) {
        int len = (int)strlen(p->entries[i].name);
        if (len > w) w = len > 72 ? 72 : len;
    }
    fprintf(f, "profile of %s: %lld call%s, wall %.3f ms (%.3f ms/call), kernels+library %.3f ms, "
               "vm overhead %.3f ms\n",
            fn, (long long)p->runs, p->runs == 1 ? "" : "s", wall / 1e6,
            p->runs ? wall / 1e6 / (double)p->runs : 0.0, (double)p->parts_ns / 1e6, other / 1e6);
    fprintf(f, "%-*s  %-7s  %8s  %12s  %7s  %12s\n", w, "name", "kind", "calls", "total ms",
            "% wall", "mean us");
    for (int i = 0; i < p->n; i++) {
        const rx_rt_prof_entry *e = &p->entries[i];
        fprintf(f, "%-*s  %-7s  %8lld  %12.3f  %6.1f%%  %12.1f\n", w, e->name,
                kind_name(e->kind), (long long)e->calls, (double)e->total_ns / 1e6,
                wall > 0 ? 100.0 * (double)e->total_ns / wall : 0.0,
                (double)e->total_ns / (double)e->calls / 1e3);
    }
    fprintf(f, "%-*s  %-7s  %8s  %12.3f  %6.1f%%  %12s\n", w, "(vm overhead)", "-", "-",
            other / 1e6, wall > 0 ? 100.0 * other / wall : 0.0, "-");
}
