/*
 * runtime.c — the public API of runtime.h: loading modules, calling functions,
 * flattening outputs, benchmarking.
 *
 * Loading is a straight pipeline: Step 1 copy the bytes into a 64-byte aligned buffer
 * (owned by a BLOB storage, so constant tensors can view it without copying and keep it
 * alive after the module is gone); Step 2 parse and validate the format (rxa_read.c);
 * Step 3 verify the bytecode (vm_verify.c); Step 4 resolve CALL_LIB names against the
 * context's registry and CALL_BUILTIN names against the built-in table (builtin.h), so
 * the interpreter never looks a name up, and allocate the profiler's slots (one per
 * kernel and per string, so turning profiling on never allocates); Step 5 make the
 * constant tensors; Step 6 load the CPU kernel object (kernels.c), or, for a GPU
 * artifact, open its device, build its kernels and move the constants there
 * (vm_device.c). Any failure unwinds
 * what was built and reports one line.
 *
 * Calls convert the API arguments into VM values (input tensors are borrowed, not
 * copied), run the interpreter (vm.c) and flatten the result tuple depth-first into an
 * outputs object that owns one reference per output.
 *
 * Profiling (runtime.h): the VM updates the module's slots (rx_rt_prof_add, lock-free);
 * rx_rt_profile_get snapshots the slots that were called into an array sorted by total
 * time. rx_rt_bench, when profiling is on, brackets exactly its timed calls.
 */
#include "builtin.h"
#include "rt_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- loading ---- */

void rx_rt_module_free(rx_rt_module *m)
{
    if (!m) return;
    rx_rt_kernels_unload(m);
    if (m->consts)
        for (uint32_t i = 0; i < m->a->nconsts; i++) rx_rt_tensor_release(m->consts[i]);
    free(m->consts);
    rx_rt_gpu_unload(m); /* after the constants: they may be device buffers */
    free(m->libs);
    free(m->builtins);
    free(m->prof.kernels);
    free(m->prof.libs);
    rx_rxa_free(m->a);
    rx_rt_storage_release(m->blob);
    free(m);
}

static rx_rt_module *load_owned(rx_rt_ctx *ctx, void *buf, size_t n, const char *what,
                                rx_rt_err *err)
{
    rx_rt_module *m = calloc(1, sizeof *m);
    char msg[sizeof err->msg];
    if (!m) {
        free(buf);
        rx_rt_fail(err, "%s: out of memory", what);
        return NULL;
    }
    m->ctx = ctx;
    m->kernel_fd = -1;
    /* Step 1: the buffer becomes a storage that constants can share. */
    m->blob = rx_rt_storage_blob(buf, n);
    if (!m->blob) {
        free(buf);
        rx_rt_fail(err, "%s: out of memory", what);
        goto fail;
    }
    /* Step 2: format. */
    if (rx_rxa_parse(buf, n, what, &m->a, msg, sizeof msg)) {
        rx_rt_fail(err, "%s", msg);
        goto fail;
    }
    /* Step 3: bytecode. */
    if (rx_vm_verify(m->a, msg, sizeof msg)) {
        rx_rt_fail(err, "%s: bad bytecode: %s", what, msg);
        goto fail;
    }
    /* Step 4: library names used by CALL_LIB, built-in names used by CALL_BUILTIN. */
    m->libs = calloc(m->a->nstrings ? m->a->nstrings : 1, sizeof *m->libs);
    m->builtins = malloc(sizeof *m->builtins * (m->a->nstrings ? m->a->nstrings : 1));
    if (!m->libs || !m->builtins) {
        rx_rt_fail(err, "%s: out of memory", what);
        goto fail;
    }
    for (uint32_t i = 0; i < m->a->nstrings; i++) m->builtins[i] = -1;
    for (uint32_t f = 0; f < m->a->nfuncs; f++) {
        const int64_t *code = m->a->code + m->a->funcs[f].code_offset;
        for (size_t pc = 0; pc < m->a->funcs[f].code_words;) {
            int64_t op = code[pc];
            const char *fmt = rx_vm_op_format(op);
            size_t start = pc++;
            for (const char *p = fmt; *p; p++) {
                size_t width = (p[p[0] == '*'] == 'd' || p[p[0] == '*'] == 'm') ? 2 : 1;
                if (*p == '*') pc += 1 + width * (size_t)code[pc], p++;
                else pc += width;
            }
            if (op == RX_OP_CALL_BUILTIN) {
                int64_t s = code[start + 2];
                m->builtins[s] = rx_vm_builtin_find(m->a->strings[s]);
                RX_RT_ASSERT(m->builtins[s] >= 0); /* checked by the verifier */
                continue;
            }
            if (op != RX_OP_CALL_LIB) continue;
            int64_t s = code[start + 1];
            if (m->libs[s].fn) continue;
            if (rx_rt_lib_find(ctx, m->a->strings[s], &m->libs[s])) {
                rx_rt_fail(err, "%s: %s: unknown library function %s", what,
                           m->a->funcs[f].name, m->a->strings[s]);
                goto fail;
            }
        }
    }
    /* Step 4b: the profiler's slots. */
    m->prof.kernels = calloc(m->a->nkernels ? m->a->nkernels : 1, sizeof *m->prof.kernels);
    m->prof.libs = calloc(m->a->nstrings ? m->a->nstrings : 1, sizeof *m->prof.libs);
    if (!m->prof.kernels || !m->prof.libs) {
        rx_rt_fail(err, "%s: out of memory", what);
        goto fail;
    }
    rx_rt_profile_reset(m);
    /* Step 5: constants. */
    m->consts = calloc(m->a->nconsts ? m->a->nconsts : 1, sizeof *m->consts);
    if (!m->consts) {
        rx_rt_fail(err, "%s: out of memory", what);
        goto fail;
    }
    for (uint32_t i = 0; i < m->a->nconsts; i++) {
        const rx_rxa_const *c = &m->a->consts[i];
        rx_rt_err e;
        m->consts[i] = rx_rt_tensor_view(m->blob, (size_t)((const uint8_t *)c->data - m->a->bytes),
                                         rx_rt_dtype_unpack(c->dtype), c->ndim, c->shape, &e);
        if (!m->consts[i]) {
            rx_rt_fail(err, "%s: constant %u: %s", what, i, e.msg);
            goto fail;
        }
    }
    /* Step 6: kernels. */
    rx_rt_err e;
    if (rx_rt_kernels_load(m, &e) || rx_rt_gpu_load(m, &e)) {
        rx_rt_fail(err, "%s: %s", what, e.msg);
        goto fail;
    }
    return m;
fail:
    rx_rt_module_free(m);
    return NULL;
}

rx_rt_module *rx_rt_load_bytes(rx_rt_ctx *ctx, const void *bytes, size_t n, const char *what,
                               rx_rt_err *err)
{
    void *buf = NULL;
    if (!what) what = "<memory>";
    if (posix_memalign(&buf, RX_RXA_ALIGN, n ? n : 1) != 0) {
        rx_rt_fail(err, "%s: out of memory", what);
        return NULL;
    }
    if (n) memcpy(buf, bytes, n);
    return load_owned(ctx, buf, n, what, err);
}

rx_rt_module *rx_rt_load_file(rx_rt_ctx *ctx, const char *path, rx_rt_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rx_rt_fail(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    void *buf = NULL;
    for (;;) {
        void *nb = NULL;
        if (posix_memalign(&nb, RX_RXA_ALIGN, cap) != 0) {
            free(buf);
            fclose(f);
            rx_rt_fail(err, "%s: out of memory", path);
            return NULL;
        }
        if (n) memcpy(nb, buf, n);
        free(buf);
        buf = nb;
        n += fread((char *)buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        rx_rt_fail(err, "%s: read error", path);
        return NULL;
    }
    const char *base = strrchr(path, '/');
    return load_owned(ctx, buf, n, base ? base + 1 : path, err);
}

const rx_rxa *rx_rt_module_artifact(const rx_rt_module *m)
{
    return m->a;
}

int rx_rt_find_function(const rx_rt_module *m, const char *name)
{
    for (uint32_t i = 0; i < m->a->nfuncs; i++)
        if (!strcmp(m->a->funcs[i].name, name)) return (int)i;
    return -1;
}

/* ---- outputs ---- */

struct rx_rt_outputs {
    int n, cap;       /* outputs */
    rx_vm_value *v;   /* owned values (never tuples) */
};

static int flatten(rx_rt_outputs *o, const rx_vm_value *v, int depth)
{
    if (v->kind == RX_V_TUPLE) {
        if (depth > 64) return -1;
        for (uint32_t i = 0; i < v->u.tu->n; i++)
            if (flatten(o, &v->u.tu->v[i], depth + 1)) return -1;
        return 0;
    }
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 4;
        rx_vm_value *nv = realloc(o->v, sizeof *nv * (size_t)cap);
        if (!nv) return -1;
        o->v = nv;
        o->cap = cap;
    }
    o->v[o->n] = *v;
    rx_vm_value_retain(v);
    o->n++;
    return 0;
}

int rx_rt_outputs_count(const rx_rt_outputs *o)
{
    return o->n;
}

int rx_rt_outputs_kind(const rx_rt_outputs *o, int i)
{
    if (i < 0 || i >= o->n) return -1;
    switch (o->v[i].kind) {
    case RX_V_TENSOR: return RX_RT_ARG_TENSOR;
    case RX_V_INT: return RX_RT_ARG_INT;
    case RX_V_SHAPE: return RX_RT_ARG_SHAPE;
    default: return -1;
    }
}

DLTensor *rx_rt_outputs_tensor(rx_rt_outputs *o, int i)
{
    return rx_rt_outputs_kind(o, i) == RX_RT_ARG_TENSOR ? &o->v[i].u.t->dl : NULL;
}

rx_rt_tensor *rx_rt_outputs_take(rx_rt_outputs *o, int i)
{
    if (rx_rt_outputs_kind(o, i) != RX_RT_ARG_TENSOR) return NULL;
    rx_rt_tensor_retain(o->v[i].u.t);
    return o->v[i].u.t;
}

int64_t rx_rt_outputs_int(const rx_rt_outputs *o, int i)
{
    return rx_rt_outputs_kind(o, i) == RX_RT_ARG_INT ? o->v[i].u.i : 0;
}

int32_t rx_rt_outputs_shape(const rx_rt_outputs *o, int i, const int64_t **dims)
{
    if (rx_rt_outputs_kind(o, i) != RX_RT_ARG_SHAPE) return -1;
    *dims = o->v[i].u.s->dims;
    return o->v[i].u.s->ndim;
}

void rx_rt_outputs_free(rx_rt_outputs *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) rx_vm_value_release(&o->v[i]);
    free(o->v);
    free(o);
}

/* ---- calls ---- */

static void free_args(rx_vm_value *v, int n)
{
    for (int i = 0; i < n; i++) rx_vm_value_release(&v[i]);
    free(v);
}

static int make_args(const rx_rt_arg *args, int nargs, rx_vm_value **out, rx_rt_err *err)
{
    rx_vm_value *v = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *v);
    if (!v) return rx_rt_fail(err, "out of memory");
    for (int i = 0; i < nargs; i++) {
        const rx_rt_arg *a = &args[i];
        if (a->kind == RX_RT_ARG_TENSOR) {
            rx_rt_err e;
            rx_rt_tensor *t = rx_rt_tensor_borrow(a->tensor, &e);
            if (!t) {
                free_args(v, i);
                return rx_rt_fail(err, "argument %d: %s", i, e.msg);
            }
            v[i] = (rx_vm_value){RX_V_TENSOR, {.t = t}};
        } else if (a->kind == RX_RT_ARG_INT) {
            v[i] = (rx_vm_value){RX_V_INT, {.i = a->i}};
        } else if (a->kind == RX_RT_ARG_SHAPE && a->ndim >= 0 && a->ndim <= RX_RXA_MAX_NDIM &&
                   (a->dims || a->ndim == 0)) {
            rx_vm_shape *s = rx_vm_shape_new(a->ndim);
            if (!s) {
                free_args(v, i);
                return rx_rt_fail(err, "out of memory");
            }
            if (a->ndim) memcpy(s->dims, a->dims, sizeof(int64_t) * (size_t)a->ndim);
            v[i] = (rx_vm_value){RX_V_SHAPE, {.s = s}};
        } else {
            free_args(v, i);
            return rx_rt_fail(err, "argument %d: bad kind or shape", i);
        }
    }
    *out = v;
    return 0;
}

static int call_values(rx_rt_module *m, int fn, const rx_vm_value *args, int nargs,
                       bool dev_out, rx_rt_outputs **out, rx_rt_call_stats *stats, rx_rt_err *err)
{
    int64_t kernels = 0, libcalls = 0;
    rx_vm_value ret;
    int64_t rbase, base = rx_rt_pool_reset_peak(&m->ctx->pool, &rbase);
    if (fn < 0 || (uint32_t)fn >= m->a->nfuncs) return rx_rt_fail(err, "no function %d", fn);
    if (rx_vm_run(m, (uint32_t)fn, args, (uint32_t)nargs, dev_out, &ret, &kernels, &libcalls, err))
        return -1;
    if (stats) {
        rx_rt_stats s;
        rx_rt_get_stats(m->ctx, &s);
        stats->kernels = kernels + libcalls;
        stats->library_calls = libcalls;
        stats->peak_bytes = s.peak_bytes - base;
        stats->peak_resident_bytes = s.peak_resident_bytes - rbase;
    }
    if (!out) {
        rx_vm_value_release(&ret);
        return 0;
    }
    rx_rt_outputs *o = calloc(1, sizeof *o);
    if (!o || flatten(o, &ret, 0)) {
        rx_rt_outputs_free(o);
        rx_vm_value_release(&ret);
        return rx_rt_fail(err, "out of memory");
    }
    rx_vm_value_release(&ret);
    *out = o;
    return 0;
}

int rx_rt_call(rx_rt_module *m, int fn, const rx_rt_arg *args, int nargs,
               rx_rt_outputs **out, rx_rt_call_stats *stats, rx_rt_err *err)
{
    rx_vm_value *v;
    *out = NULL;
    if (nargs < 0 || make_args(args, nargs, &v, err)) return -1;
    int rc = call_values(m, fn, v, nargs, false, out, stats, err);
    free_args(v, nargs);
    return rc;
}

/* ---- profiling ---- */

int64_t rx_rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rx_rt_prof_add(rx_rt_prof_slot *s, int64_t ns)
{
    atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->total_ns, ns, memory_order_relaxed);
    int64_t cur = atomic_load_explicit(&s->min_ns, memory_order_relaxed);
    while (ns < cur && !atomic_compare_exchange_weak_explicit(&s->min_ns, &cur, ns,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed)) {
    }
    cur = atomic_load_explicit(&s->max_ns, memory_order_relaxed);
    while (ns > cur && !atomic_compare_exchange_weak_explicit(&s->max_ns, &cur, ns,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed)) {
    }
}

int rx_rt_set_profiling(rx_rt_module *m, int on)
{
    return atomic_exchange(&m->prof.on, on != 0);
}

static void slots_reset(rx_rt_prof_slot *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        atomic_store_explicit(&s[i].calls, 0, memory_order_relaxed);
        atomic_store_explicit(&s[i].total_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s[i].min_ns, INT64_MAX, memory_order_relaxed);
        atomic_store_explicit(&s[i].max_ns, 0, memory_order_relaxed);
    }
}

void rx_rt_profile_reset(rx_rt_module *m)
{
    slots_reset(m->prof.kernels, m->a->nkernels);
    slots_reset(m->prof.libs, m->a->nstrings);
    atomic_store(&m->prof.runs, 0);
    atomic_store(&m->prof.wall_ns, 0);
}

/* Appends slot s as an entry when it was called; returns the entries now used. */
static int take_slot(rx_rt_profile *out, rx_rt_prof_slot *s, const char *name, int kind)
{
    int64_t calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
    if (calls <= 0) return out->n;
    rx_rt_prof_entry *e = &out->entries[out->n++];
    e->name = name;
    e->kind = kind;
    e->calls = calls;
    e->total_ns = atomic_load_explicit(&s->total_ns, memory_order_relaxed);
    e->min_ns = atomic_load_explicit(&s->min_ns, memory_order_relaxed);
    e->max_ns = atomic_load_explicit(&s->max_ns, memory_order_relaxed);
    out->parts_ns += e->total_ns;
    return out->n;
}

static int cmp_entry(const void *a, const void *b)
{
    const rx_rt_prof_entry *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    if (x->kind != y->kind) return x->kind - y->kind;
    return strcmp(x->name, y->name);
}

int rx_rt_profile_get(const rx_rt_module *m, rx_rt_profile *out, rx_rt_err *err)
{
    memset(out, 0, sizeof *out);
    size_t cap = (size_t)m->a->nkernels + m->a->nstrings;
    out->entries = calloc(cap ? cap : 1, sizeof *out->entries);
    if (!out->entries) return rx_rt_fail(err, "out of memory");
    out->runs = atomic_load(&m->prof.runs);
    out->wall_ns = atomic_load(&m->prof.wall_ns);
    for (uint32_t k = 0; k < m->a->nkernels; k++)
        take_slot(out, &m->prof.kernels[k], m->a->kernels[k].name, RX_RT_PROF_KERNEL);
    for (uint32_t s = 0; s < m->a->nstrings; s++)
        if (m->libs[s].fn) take_slot(out, &m->prof.libs[s], m->a->strings[s], RX_RT_PROF_LIBRARY);
    qsort(out->entries, (size_t)out->n, sizeof *out->entries, cmp_entry);
    return 0;
}

void rx_rt_profile_free(rx_rt_profile *out)
{
    if (!out) return;
    free(out->entries);
    memset(out, 0, sizeof *out);
}

/* ---- benchmark ---- */

static double now_ms(void)
{
    return (double)rx_rt_now_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int rx_rt_bench(rx_rt_module *m, int fn, const rx_rt_arg *args, int nargs,
                const rx_rt_bench_opts *opts, rx_rt_bench_result *res, rx_rt_err *err)
{
    rx_vm_value *v;
    int repeat = opts->repeat > 0 ? opts->repeat : 1;
    int number = opts->number > 0 ? opts->number : 1;
    int warmup = opts->warmup > 0 ? opts->warmup : 0;
    memset(res, 0, sizeof *res);
    rx_rt_module_device(m, res->device, sizeof res->device);
    if (nargs < 0 || make_args(args, nargs, &v, err)) return -1;
    bool dev = opts->resident && m->gpu; /* inputs uploaded once, results left there */
    for (int i = 0; dev && i < nargs; i++)
        if (rx_rt_gpu_move(m, &v[i], true, err)) {
            free_args(v, nargs);
            return -1;
        }
    int prof = rx_rt_set_profiling(m, 0); /* profile the timed calls only (runtime.h) */
    double *samples = calloc((size_t)repeat, sizeof *samples);
    int rc = -1;
    if (!samples) {
        rx_rt_fail(err, "out of memory");
        goto out;
    }
    rx_rt_call_stats st;
    if (call_values(m, fn, v, nargs, dev, NULL, &st, err)) goto out; /* first call: counters */
    res->kernels = st.kernels;
    res->peak_bytes = st.peak_bytes;
    res->resident_bytes = st.peak_resident_bytes;
    for (int i = 1; i < warmup; i++)
        if (call_values(m, fn, v, nargs, dev, NULL, NULL, err)) goto out;
    if (prof) {
        rx_rt_profile_reset(m);
        rx_rt_set_profiling(m, 1);
    }
    int64_t l0, g0, l1, g1, calls = 0, gc0, gr0, gc1, gr1;
    int asked;
    rx_rt_gov_stats(&asked, &gc0, &gr0);
    rx_rt_gpu_counters(m, &l0, &g0);
    for (int r = 0; r < repeat; r++) {
        double ms;
        for (;;) {
            double t0 = now_ms();
            for (int i = 0; i < number; i++, calls++)
                if (call_values(m, fn, v, nargs, dev, NULL, NULL, err)) goto out;
            ms = now_ms() - t0;
            if (opts->min_repeat_ms <= 0 || ms >= opts->min_repeat_ms || number >= (1 << 30))
                break;
            double per = ms / number;
            double want = per > 0 ? opts->min_repeat_ms / per + 1 : number * 2.0;
            double grow = number * 1.618 + 1;
            double next = want > grow ? want : grow;
            number = next > (double)(1 << 30) ? (1 << 30) : (int)next;
        }
        samples[r] = ms / number;
    }
    double sum = 0, sq = 0;
    for (int r = 0; r < repeat; r++) sum += samples[r];
    res->mean_ms = sum / repeat;
    for (int r = 0; r < repeat; r++) sq += (samples[r] - res->mean_ms) * (samples[r] - res->mean_ms);
    res->stddev_ms = sqrt(sq / repeat);
    qsort(samples, (size_t)repeat, sizeof *samples, cmp_double);
    res->min_ms = samples[0];
    res->max_ms = samples[repeat - 1];
    res->median_ms = repeat % 2 ? samples[repeat / 2]
                                : (samples[repeat / 2 - 1] + samples[repeat / 2]) / 2;
    res->repeat = repeat;
    res->number = number;
    rx_rt_gpu_counters(m, &l1, &g1);
    res->launches = m->gpu ? (double)(l1 - l0) / (double)calls : -1;
    res->graph_launches = m->gpu ? (double)(g1 - g0) / (double)calls : -1;
    res->resident = dev;
    rx_rt_get_threads(&res->threads, &res->blas_threads);
    rx_rt_gov_stats(&asked, &gc1, &gr1);
    if (!m->gpu && asked > 0) { /* what was asked for, not a count the governor lowered */
        res->threads = asked;
        if (res->blas_threads) res->blas_threads = asked;
    }
    res->reduced_calls = gc1 >= gc0 ? gr1 - gr0 : gr1;
    rc = 0;
out:
    rx_rt_set_profiling(m, prof);
    free(samples);
    free_args(v, nargs);
    return rc;
}
