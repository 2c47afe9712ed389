/*
 * bench_memory_run.c — successive calls of one function in one runtime context, with
 * the pool's counters after each (the driver of bench_memory.py, paper Table 2).
 *
 *   bench_memory_run ARTIFACT.rxa FN CALL [CALL...]
 *   CALL = VAR=N[,VAR=N...]    the symbolic variables of one call ("s=128", "b=16,c=64")
 *
 * One context for the whole run, so blocks freed by one call stay in the pool for the
 * next (the runtime pool is the "runtime memory pool to recycle unused memory" of the
 * paper's baseline). The arguments of each call are seeded random data (bench.h,
 * seed 0) built before the call and freed after it; they are the caller's memory, not
 * the pool's. After each call its outputs are freed back into the pool.
 *
 * Output: one JSON object on one line:
 *   {"calls": [{"shape": "s=128", "peak_bytes": P, "pool_bytes": B, "fresh_bytes": F,
 *               "allocs": A, "hits": H, "kernels": K, "digest": "…"}, ...],
 *    "max_peak_bytes": …, "pool_bytes": …}
 * peak_bytes: the call's peak of live requested bytes (rx_rt_call_stats); pool_bytes:
 * what the pool holds from the system after the call (live or cached; size-class
 * bytes), so the last call's value is the total allocated over the run; fresh_bytes:
 * what this call added to it; digest: FNV-1a of the outputs' bytes, so two builds of
 * one module can be checked to compute the same thing. Exit 0, or 1 with
 * "error: ..." on stderr.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_VARS = 8, MAX_TEXT = 256 };

/* The variables of one CALL argument, parsed in place in a private copy. */
typedef struct call_spec {
    char text[MAX_TEXT];         /* the copy the names and values point into */
    rx_bench_kv vars[MAX_VARS];  /* VAR=N pairs */
    int nvars;                   /* how many */
} call_spec;

static int parse_call(const char *arg, call_spec *c)
{
    if (strlen(arg) >= sizeof c->text) return -1;
    strcpy(c->text, arg);
    c->nvars = 0;
    for (char *p = c->text; *p;) {
        char *comma = strchr(p, ','), *eq = strchr(p, '=');
        if (comma) *comma = '\0';
        if (!eq || (comma && eq > comma) || eq == p || !eq[1] || c->nvars == MAX_VARS) return -1;
        *eq = '\0';
        c->vars[c->nvars++] = (rx_bench_kv){p, eq + 1};
        p = comma ? comma + 1 : p + strlen(p);
    }
    return c->nvars ? 0 : -1;
}

/* FNV-1a over every tensor output's bytes. */
static uint64_t digest(rx_rt_outputs *o)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < rx_rt_outputs_count(o); i++) {
        DLTensor *t = rx_rt_outputs_tensor(o, i);
        if (!t) continue;
        int64_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
        for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
        const unsigned char *p = (const unsigned char *)t->data + t->byte_offset;
        for (int64_t k = 0; k < n; k++) h = (h ^ p[k]) * 1099511628211ull;
    }
    return h;
}

/* One call: build its arguments, call, report; 0 or -1 after printing the error. */
static int one_call(rx_rt_module *m, rx_rt_ctx *ctx, const char *path, const char *fn,
                    const call_spec *c, const char *label, int first, int64_t *max_peak)
{
    char err[512];
    rx_bench_args a;
    if (rx_bench_args_build(m, path, fn, c->vars, c->nvars, NULL, 0, 0, &a, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    rx_rt_stats before, after;
    rx_rt_get_stats(ctx, &before);
    rx_rt_outputs *out = NULL;
    rx_rt_call_stats st;
    rx_rt_err e = {""};
    int rc = rx_rt_call(m, a.fn, a.args, (int)a.nargs, &out, &st, &e);
    rx_bench_args_free(&a);
    if (rc) {
        fprintf(stderr, "error: %s: %s\n", label, e.msg);
        return -1;
    }
    uint64_t h = digest(out);
    rx_rt_outputs_free(out);
    rx_rt_get_stats(ctx, &after);
    if (st.peak_bytes > *max_peak) *max_peak = st.peak_bytes;
    printf("%s{\"shape\": \"%s\", \"peak_bytes\": %lld, \"pool_bytes\": %lld, \"fresh_bytes\": %lld, "
           "\"allocs\": %lld, \"hits\": %lld, \"kernels\": %lld, \"digest\": \"%016llx\"}",
           first ? "" : ", ", label, (long long)st.peak_bytes, (long long)after.pool_bytes,
           (long long)(after.pool_bytes - before.pool_bytes),
           (long long)(after.allocs - before.allocs), (long long)(after.pool_hits - before.pool_hits),
           (long long)st.kernels, (unsigned long long)h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_memory_run ARTIFACT.rxa FN VAR=N[,VAR=N...]...\n");
        return 2;
    }
    static call_spec calls[64];
    int ncalls = argc - 3;
    if (ncalls > (int)(sizeof calls / sizeof calls[0])) {
        fprintf(stderr, "error: at most 64 calls\n");
        return 2;
    }
    for (int i = 0; i < ncalls; i++)
        if (parse_call(argv[3 + i], &calls[i])) {
            fprintf(stderr, "error: bad call %s (want VAR=N[,VAR=N...])\n", argv[3 + i]);
            return 2;
        }
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    if (!ctx) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    rx_rt_err e = {""};
    rx_rt_module *m = rx_rt_load_file(ctx, argv[1], &e);
    if (!m) {
        fprintf(stderr, "error: %s\n", e.msg);
        rx_rt_ctx_free(ctx);
        return 1;
    }
    int64_t max_peak = 0;
    int rc = 0;
    printf("{\"calls\": [");
    for (int i = 0; i < ncalls && !rc; i++)
        rc = one_call(m, ctx, argv[1], argv[2], &calls[i], argv[3 + i], i == 0, &max_peak);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    printf("], \"max_peak_bytes\": %lld, \"pool_bytes\": %lld}\n", (long long)max_peak,
           (long long)s.pool_bytes);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
    return rc ? 1 : 0;
}
