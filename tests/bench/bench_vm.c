/*
 * bench_vm.c — VM dispatch overhead per instruction (issue: run it; goal < 50 ns).
 *
 * The module: main(x: Tensor((1,), f32)) is a chain of N tiny elementwise ops, each
 * applied to the previous value and x, cycling add, multiply, subtract, maximum and
 * nn.relu. It is built with rx_build at opt level 0, so every op is one call_tir of a
 * legalized loop function (kernels are shared: five distinct kernels for any N) and
 * every call_tir is lowered to VM instructions (today: ALLOC_STORAGE, ALLOC_TENSOR,
 * RELEASE, CALL_KERNEL, and RELEASEs of dead values). The artifact is loaded with the
 * runtime and main is called many times (rx_rt_call + rx_rt_outputs_free: what an
 * embedder pays per call).
 *
 * The reference, in the same run: the SAME kernels called directly from C. The
 * artifact's KERNELS_CPU section (the shared object the runtime dlopens) is written to
 * a private temp file and dlopened a second time; main's bytecode is replayed once,
 * symbolically, to turn every CALL_KERNEL into (kernel function, data pointers): the
 * parameter register maps to x's buffer, every ALLOC_TENSOR gets its own preallocated
 * 64-byte aligned buffer, MOVE copies the mapping. The timed loop then calls the N
 * kernel functions in bytecode order through the kernel ABI
 * (int32_t f(void *const *data, const int64_t *ivars)), nothing else. So
 *
 *   overhead_ns_per_instruction = (vm_ns_per_call - direct_ns_per_call) / instructions
 *
 * where `instructions` is the number main executes per call: main is straight-line
 * code (the replay refuses jumps and calls), so it is the number of instructions in
 * its code. Each timing is `repeat` samples of `number` back-to-back calls; a sample is
 * the mean per call; the median sample is reported (and the minimum beside it).
 *
 * Correctness: the VM's result, the direct chain's result and a scalar C evaluation of
 * the same chain must agree exactly (all three run the same f32 operations), so the
 * smoke run (tiny chain, one repeat) is also a test. Allocations: the runtime counters
 * (rx_rt_stats) taken around one call give storages allocated and pool hits per call —
 * the VM allocates one storage per op until memory planning lands.
 *
 * Output: one JSON object on one line.
 *   bench_vm [--ops N] [--repeat R] [--number K]
 */
#include "relax/driver.h"
#include "relax/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int32_t (*kernel_fn)(void *const *data, const int64_t *ivars);

enum { NKINDS = 5, MAXBUFS = 4 };
static const char *const op_names[NKINDS] = {"add", "multiply", "subtract", "maximum",
                                             "nn.relu"};

/* One replayed CALL_KERNEL: the function and its data pointers. */
typedef struct direct_call {
    kernel_fn fn;          /* resolved from the dlopened copy of KERNELS_CPU */
    void *data[MAXBUFS];   /* buffer pointers in parameter order */
} direct_call;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_vm: %s: %s\n", what, msg);
    exit(1);
}

/* Writes the chain module into out. */
static void generate(int nops, rx_sb *out)
{
    rx_sb_puts(out, "{\"format\":\"relax-json\",\"version\":1,\"functions\":{\"main\":{"
                    "\"kind\":\"relax\",\"params\":["
                    "{\"name\":\"x\",\"type\":{\"tensor\":{\"shape\":[1],\"dtype\":\"f32\"}}}],"
                    "\"body\":{\"blocks\":[{\"dataflow\":true,\"bindings\":[");
    for (int i = 0; i < nops; i++) {
        char prev[32];
        if (i == 0) snprintf(prev, sizeof prev, "x");
        else snprintf(prev, sizeof prev, "v%d", i - 1);
        if (i) rx_sb_putc(out, ',');
        int k = i % NKINDS;
        if (k == 4)
            rx_sb_printf(out, "{\"var\":\"v%d\",\"value\":{\"op\":\"%s\",\"args\":[\"%s\"]}}",
                         i, op_names[k], prev);
        else
            rx_sb_printf(out,
                         "{\"var\":\"v%d\",\"value\":{\"op\":\"%s\",\"args\":[\"%s\",\"x\"]}}",
                         i, op_names[k], prev);
    }
    rx_sb_printf(out, "]}],\"result\":\"v%d\"}}}}", nops - 1);
}

/* The chain evaluated by C on scalars: the expected result. */
static float expected(int nops, float x)
{
    float v = x;
    for (int i = 0; i < nops; i++) {
        switch (i % NKINDS) {
        case 0: v = v + x; break;
        case 1: v = v * x; break;
        case 2: v = v - x; break;
        case 3: v = v > x ? v : x; break;
        default: v = v > 0.0f ? v : 0.0f; break;
        }
    }
    return v;
}

/* Words taken by one operand letter (the counted forms are handled by the caller). */
static size_t operand_words(char c)
{
    return (c == 'd' || c == 'm') ? 2 : 1;
}

/* Per-call instruction statistics of main, from its code. */
typedef struct code_stats {
    int64_t instructions;  /* instructions in main (= executed: straight-line) */
    int64_t kernel_calls;  /* CALL_KERNEL */
    int64_t alloc_storage; /* ALLOC_STORAGE */
    int64_t alloc_tensor;  /* ALLOC_TENSOR */
    int64_t release;       /* RELEASE */
} code_stats;

/*
 * Replays main's code symbolically (see the file essay). Fills *cs, and calls[] (up to
 * maxcalls) with the kernel calls in order; buffers for ALLOC_TENSOR come from
 * bufs[0..nbufs). Returns the number of kernel calls; dies on anything the replay does
 * not model (jumps, calls, symbolic dims).
 */
static int replay(const rx_rxa *a, const rx_rxa_func *f, void *const *kfns, void *xbuf,
                  float *bufs, int nbufs, direct_call *calls, int maxcalls, code_stats *cs)
{
    const int64_t *code = a->code + f->code_offset;
    size_t n = f->code_words, pc = 0;
    void **reg = calloc(f->nregs ? f->nregs : 1, sizeof *reg);
    if (!reg) die("replay", "out of memory");
    reg[0] = xbuf;
    int ncalls = 0, nalloc = 0;
    memset(cs, 0, sizeof *cs);
    while (pc < n) {
        int64_t op = code[pc];
        const char *fmt = rx_vm_op_format(op);
        if (!fmt) die("replay", "bad opcode");
        size_t at = pc + 1;
        cs->instructions++;
        switch (op) {
        case RX_OP_GOTO: case RX_OP_JMPIFNOT: case RX_OP_CALL: case RX_OP_CALL_VALUE:
        case RX_OP_CALL_LIB: case RX_OP_CALL_BUILTIN:
            die("replay", "main is not a straight-line chain of kernels");
            break;
        case RX_OP_MOVE: reg[code[at]] = reg[code[at + 1]]; break;
        case RX_OP_ALLOC_STORAGE: cs->alloc_storage++; break;
        case RX_OP_RELEASE: cs->release++; break;
        case RX_OP_ALLOC_TENSOR:
            cs->alloc_tensor++;
            if (nalloc >= nbufs) die("replay", "more tensors than buffers");
            reg[code[at]] = bufs + (size_t)nalloc++ * 16; /* 64 bytes apart */
            break;
        case RX_OP_CALL_KERNEL: {
            cs->kernel_calls++;
            int64_t k = code[at], nb = code[at + 1];
            if (nb > MAXBUFS) die("replay", "kernel with too many buffers");
            if (code[at + 2 + nb] != 0) die("replay", "kernel with symbolic arguments");
            if (ncalls >= maxcalls) die("replay", "too many kernel calls");
            calls[ncalls].fn = (kernel_fn)kfns[k];
            for (int64_t i = 0; i < nb; i++) {
                calls[ncalls].data[i] = reg[code[at + 2 + i]];
                if (!calls[ncalls].data[i]) die("replay", "kernel argument not a buffer");
            }
            ncalls++;
            break;
        }
        default: break;
        }
        /* Skip the operands. */
        for (const char *c = fmt; *c; c++) {
            if (*c == '*') {
                int64_t cnt = code[at++];
                c++;
                at += (size_t)cnt * operand_words(*c);
            } else {
                at += operand_words(*c);
            }
        }
        pc = at;
    }
    free(reg);
    return ncalls;
}

/* dlopens a private copy of the artifact's KERNELS_CPU object and resolves every
 * kernel of the table into kfns[]. Returns the handle. */
static void *open_kernels(const rx_rxa *a, void **kfns)
{
    const rx_rxa_section *s = rx_rxa_section_get(a, RX_RXA_KERNELS_CPU);
    if (!s) die("artifact", "no KERNELS_CPU section");
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_vm_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) die("mkstemp", strerror(errno));
    size_t off = 0;
    while (off < s->size) {
        ssize_t w = write(fd, s->data + off, s->size - off);
        if (w <= 0) die("write", strerror(errno));
        off += (size_t)w;
    }
    close(fd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    if (!h) die("dlopen", dlerror());
    for (uint32_t k = 0; k < a->nkernels; k++) {
        kfns[k] = dlsym(h, a->kernels[k].name);
        if (!kfns[k]) die("dlsym", a->kernels[k].name);
    }
    return h;
}

/* Summary of `repeat` samples (per-call ns). Sorts s. */
static void summarize(double *s, int repeat, double *median, double *min)
{
    qsort(s, (size_t)repeat, sizeof *s, cmp_double);
    *min = s[0];
    *median = repeat % 2 ? s[repeat / 2] : (s[repeat / 2 - 1] + s[repeat / 2]) / 2;
}

int main(int argc, char **argv)
{
    int nops = 1000, repeat = 25, number = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ops")) nops = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--number")) number = atoi(argv[i + 1]);
        else { fprintf(stderr, "usage: bench_vm [--ops N] [--repeat R] [--number K]\n"); return 2; }
    }
    if (nops < 1 || repeat < 1 || number < 1) {
        fprintf(stderr, "bench_vm: --ops, --repeat and --number must be >= 1\n");
        return 2;
    }

    /* Step 1: generate and build at opt level 0. */
    rx_sb text = {0};
    generate(nops, &text);
    rx_diags d;
    rx_diags_init(&d);
    rx_build_opts bo = {.target = "cpu", .opt_level = 0};
    uint8_t *rxa = NULL;
    size_t rxa_n = 0;
    double t0 = now_ns();
    if (!rx_build(rx_sb_str(&text), text.n, &bo, &rxa, &rxa_n, &d)) {
        rx_sb e = {0};
        rx_diags_format(&d, &e);
        fprintf(stderr, "bench_vm: build failed:\n%s", rx_sb_str(&e));
        return 1;
    }
    double build_ms = (now_ns() - t0) / 1e6;
    rx_diags_free(&d);
    rx_sb_free(&text);

    /* Step 2: load with the runtime. */
    rx_rt_err err = {{0}};
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    if (!ctx) die("runtime", "out of memory");
    rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, rxa_n, "chain.rxa", &err);
    if (!m) die("load", err.msg);
    int fn = rx_rt_find_function(m, "main");
    if (fn < 0) die("load", "no function main");
    const rx_rxa *a = rx_rt_module_artifact(m);
    const rx_rxa_func *f = &a->funcs[fn];

    /* Step 3: the direct reference: private copy of the kernels + replayed calls. */
    void **kfns = calloc(a->nkernels ? a->nkernels : 1, sizeof *kfns);
    float *xbuf = aligned_alloc(64, 64);
    size_t nbufs = (size_t)nops + 1;
    float *bufs = aligned_alloc(64, nbufs * 64);
    direct_call *calls = calloc((size_t)nops + 1, sizeof *calls);
    if (!kfns || !xbuf || !bufs || !calls) die("setup", "out of memory");
    memset(bufs, 0, nbufs * 64);
    memset(xbuf, 0, 64);
    const float xval = 0.5f;
    xbuf[0] = xval;
    void *kh = open_kernels(a, kfns);
    code_stats cs;
    int ncalls = replay(a, f, kfns, xbuf, bufs, (int)nbufs, calls, nops + 1, &cs);
    if (ncalls != nops) {
        fprintf(stderr, "bench_vm: expected %d kernel calls in main, found %d\n", nops, ncalls);
        return 1;
    }

    /* Step 4: correctness — VM, direct and scalar C agree exactly. */
    int64_t shape1[1] = {1};
    DLTensor xt = {.data = xbuf, .device = {kDLCPU, 0}, .ndim = 1,
                   .dtype = {kDLFloat, 32, 1}, .shape = shape1};
    rx_rt_arg arg = {.kind = RX_RT_ARG_TENSOR, .tensor = &xt};
    rx_rt_outputs *out = NULL;
    rx_rt_stats s0, s1;
    rx_rt_call_stats callst;
    rx_rt_get_stats(ctx, &s0);
    if (rx_rt_call(m, fn, &arg, 1, &out, &callst, &err) != 0) die("call", err.msg);
    rx_rt_get_stats(ctx, &s1);
    DLTensor *res = rx_rt_outputs_tensor(out, 0);
    if (!res) die("call", "main returned no tensor");
    float vm_val = *(const float *)((const char *)res->data + res->byte_offset);
    rx_rt_outputs_free(out);
    for (int i = 0; i < ncalls; i++)
        if (calls[i].fn(calls[i].data, NULL) != 0) die("direct", "kernel failed");
    /* The last op's output is its last buffer: index 1 for relu, 2 for binaries. */
    float direct_val = *(const float *)calls[ncalls - 1].data[(nops - 1) % NKINDS == 4 ? 1 : 2];
    float want = expected(nops, xval);
    if (vm_val != want || direct_val != want) {
        fprintf(stderr, "bench_vm: results differ: vm %.9g, direct %.9g, expected %.9g\n",
                vm_val, direct_val, want);
        return 1;
    }

    /* Step 5: time the VM. */
    double *samples = calloc((size_t)repeat, sizeof *samples);
    if (!samples) die("setup", "out of memory");
    for (int r = 0; r < repeat; r++) {
        double ts = now_ns();
        for (int k = 0; k < number; k++) {
            if (rx_rt_call(m, fn, &arg, 1, &out, NULL, &err) != 0) die("call", err.msg);
            rx_rt_outputs_free(out);
        }
        samples[r] = (now_ns() - ts) / number;
    }
    double vm_med, vm_min;
    summarize(samples, repeat, &vm_med, &vm_min);

    /* Step 6: time the direct calls (same repeat/number). */
    for (int r = 0; r < repeat; r++) {
        double ts = now_ns();
        for (int k = 0; k < number; k++)
            for (int i = 0; i < ncalls; i++)
                if (calls[i].fn(calls[i].data, NULL) != 0) die("direct", "kernel failed");
        samples[r] = (now_ns() - ts) / number;
    }
    double dir_med, dir_min;
    summarize(samples, repeat, &dir_med, &dir_min);

    double overhead = (vm_med - dir_med) / (double)cs.instructions;
    double overhead_min = (vm_min - dir_min) / (double)cs.instructions;
    printf("{\"bench\":\"vm\",\"ops\":%d,\"kernels_distinct\":%u,\"repeat\":%d,\"number\":%d,"
           "\"build_ms\":%.1f,\"instructions\":%lld,\"kernel_calls\":%lld,"
           "\"alloc_storage_instrs\":%lld,\"alloc_tensor_instrs\":%lld,\"release_instrs\":%lld,"
           "\"vm_ns_per_call\":%.0f,\"direct_ns_per_call\":%.0f,\"vm_min_ns\":%.0f,"
           "\"direct_min_ns\":%.0f,\"vm_over_direct\":%.2f,"
           "\"overhead_ns_per_instruction\":%.2f,\"overhead_ns_per_instruction_min\":%.2f,"
           "\"overhead_ns_per_op\":%.2f,\"goal_ns_per_instruction\":50,"
           "\"allocs_per_call\":%lld,\"pool_hits_per_call\":%lld,\"peak_bytes\":%lld,"
           "\"result_ok\":true}\n",
           nops, a->nkernels, repeat, number, build_ms, (long long)cs.instructions,
           (long long)cs.kernel_calls, (long long)cs.alloc_storage, (long long)cs.alloc_tensor,
           (long long)cs.release, vm_med, dir_med, vm_min, dir_min, vm_med / dir_med, overhead,
           overhead_min, (vm_med - dir_med) / nops, (long long)(s1.allocs - s0.allocs),
           (long long)(s1.pool_hits - s0.pool_hits), (long long)callst.peak_bytes);

    free(samples);
    dlclose(kh);
    free(calls);
    free(bufs);
    free(xbuf);
    free(kfns);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
    free(rxa);
    return 0;
}
