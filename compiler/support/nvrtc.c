/*
 * nvrtc.c — CUDA C to PTX with NVRTC, loaded by dlopen (nvrtc.h).
 *
 * Loading happens once per process (pthread_once): $RX_NVRTC_LIB when set (and only
 * it: a test or a user naming a library means that one), else the sonames
 * libnvrtc.so.13 and libnvrtc.so through the loader path, else the same names under
 * /usr/local/cuda/lib64. The entry points are resolved by name; a library missing one
 * is refused as a whole. The handle stays open for the life of the process (NVRTC keeps
 * process-lifetime state; tests suppress its allocations in LeakSanitizer, see
 * tests/unit/runtime/lsan_gpu_drivers.supp), so the loaded functions never dangle.
 *
 * A compile targets the target's arch (--gpu-architecture=sm_80): NVRTC then gives both
 * the PTX (for the virtual architecture compute_80; any driver at least as new JITs it
 * for its GPU, newer GPUs included) and a cubin for sm_80 exactly (what a GPU of that
 * architecture loads without a JIT), from one compile. The arch is checked first against the list
 * NVRTC supports (nvrtcGetSupportedArchs), so `cuda,arch=sm_10` is refused naming
 * the supported range rather than with NVRTC's option error. Each compile creates and
 * destroys its own nvrtcProgram: NVRTC allows concurrent compiles of distinct programs,
 * so relaxd's workers need no lock here.
 *
 * Cost: one NVRTC compile per build (0.2 s of CPU for a small module, ~2.5 s for the
 * Llama generator's 37 kernels; the cubin, NVRTC's ptxas, is ~60% of it), one dlopen
 * per process.
 */
#include "relax/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtc_res; /* nvrtcResult: 0 is NVRTC_SUCCESS */
typedef struct nvrtc_prog *nvrtc_prog;

static struct nvrtc_api {
    void *h;
    char why[512];
    char version[32];
    nvrtc_res (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *,
                        const char *const *);
    nvrtc_res (*compile)(nvrtc_prog, int, const char *const *);
    nvrtc_res (*destroy)(nvrtc_prog *);
    nvrtc_res (*log_size)(nvrtc_prog, size_t *);
    nvrtc_res (*log)(nvrtc_prog, char *);
    nvrtc_res (*ptx_size)(nvrtc_prog, size_t *);
    nvrtc_res (*ptx)(nvrtc_prog, char *);
    nvrtc_res (*cubin_size)(nvrtc_prog, size_t *);
    nvrtc_res (*cubin)(nvrtc_prog, char *);
    const char *(*err)(nvrtc_res);
    nvrtc_res (*ver)(int *, int *);
    nvrtc_res (*narchs)(int *);
    nvrtc_res (*archs)(int *);
} N;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The library handle by the search order of the essay, or NULL with N.why. */
static void *open_lib(void)
{
    const char *env = getenv("RX_NVRTC_LIB");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(N.why, sizeof N.why, "no NVRTC for cuda: cannot load %s ($RX_NVRTC_LIB): %s", env, dlerror());
        return h;
    }
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so",
                                        "/usr/local/cuda/lib64/libnvrtc.so.13",
                                        "/usr/local/cuda/lib64/libnvrtc.so"};
    for (int i = 0; i < RX_COUNTOF(names); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    snprintf(N.why, sizeof N.why, "no NVRTC for cuda: cannot load libnvrtc.so.13, libnvrtc.so or "
             "/usr/local/cuda/lib64/libnvrtc.so (install the CUDA toolkit or set $RX_NVRTC_LIB)");
    return NULL;
}

static void load(void)
{
    void *h = open_lib();
    if (!h) return;
    static const struct { const char *name; size_t off; } syms[] = {
#define SYM(f, n) {#n, offsetof(struct nvrtc_api, f)}
        SYM(create, nvrtcCreateProgram),     SYM(compile, nvrtcCompileProgram),
        SYM(destroy, nvrtcDestroyProgram),   SYM(log_size, nvrtcGetProgramLogSize),
        SYM(log, nvrtcGetProgramLog),        SYM(ptx_size, nvrtcGetPTXSize),
        SYM(ptx, nvrtcGetPTX),               SYM(err, nvrtcGetErrorString),
        SYM(cubin_size, nvrtcGetCUBINSize),  SYM(cubin, nvrtcGetCUBIN),
        SYM(ver, nvrtcVersion),              SYM(narchs, nvrtcGetNumSupportedArchs),
        SYM(archs, nvrtcGetSupportedArchs),
#undef SYM
    };
    for (int i = 0; i < RX_COUNTOF(syms); i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            snprintf(N.why, sizeof N.why, "no NVRTC for cuda: the loaded library has no %s", syms[i].name);
            dlclose(h);
            return;
        }
        memcpy((char *)&N + syms[i].off, &f, sizeof f);
    }
    int major = 0, minor = 0;
    N.ver(&major, &minor);
    snprintf(N.version, sizeof N.version, "%d.%d", major, minor);
    N.h = h;
}

static bool loaded(void)
{
    pthread_once(&load_once, load);
    return N.h != NULL;
}

bool rx_nvrtc_available(char *why, size_t cap)
{
    if (loaded()) return true;
    snprintf(why, cap, "%s", N.why);
    return false;
}

const char *rx_nvrtc_version(void)
{
    return loaded() ? N.version : NULL;
}

/* The compute capability of arch "sm_NN[N]" (already checked by target.c), or -1. */
static int arch_number(const char *arch)
{
    if (strncmp(arch, "sm_", 3)) return -1;
    char *end;
    long v = strtol(arch + 3, &end, 10);
    return *end || v <= 0 || v > 999 ? -1 : (int)v;
}

/* Whether this NVRTC supports arch cc; when not, a diagnostic listing the range. */
static bool arch_supported(int cc, const char *arch, rx_diags *d)
{
    int n = 0;
    if (N.narchs(&n) || n <= 0 || n > 256) return true; /* cannot tell: NVRTC will say */
    int list[256];
    if (N.archs(list)) return true;
    for (int i = 0; i < n; i++)
        if (list[i] == cc) return true;
    rx_diag_add(d, "target", "cuda option arch: %s is not supported by NVRTC %s (supported: "
                "sm_%d .. sm_%d)", arch, N.version, list[0], list[n - 1]);
    return false;
}

/* Appends program p's output (PTX or cubin, by the get functions) to *out; false when
 * NVRTC has none. The PTX's size counts its NUL, which is left out. */
static bool output(nvrtc_prog p, nvrtc_res (*size)(nvrtc_prog, size_t *),
                   nvrtc_res (*get)(nvrtc_prog, char *), bool text, rx_sb *out)
{
    size_t n = 0;
    if (size(p, &n) || n == 0) return false;
    char *b = malloc(n);
    bool ok = b && get(p, b) == 0;
    if (ok) rx_sb_putn(out, b, text ? strnlen(b, n) : n);
    free(b);
    return ok;
}

bool rx_nvrtc_ptx(const char *src, size_t n, const char *arch, rx_sb *ptx, rx_sb *cubin,
                  rx_diags *d)
{
    (void)n;
    if (!loaded()) {
        rx_diag_add(d, "target", "cannot compile for cuda: %s", N.why);
        return false;
    }
    int cc = arch_number(arch);
    if (cc < 0) {
        rx_diag_add(d, "target", "cuda option arch: \"%s\" is not of the form sm_NN or sm_NNN", arch);
        return false;
    }
    if (!arch_supported(cc, arch, d)) return false;
    nvrtc_prog p = NULL;
    nvrtc_res r = N.create(&p, src, "relax_kernels.cu", 0, NULL, NULL);
    if (r) {
        rx_diag_add(d, "codegen", "NVRTC: nvrtcCreateProgram: %s", N.err(r));
        return false;
    }
    char opt_arch[48];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=sm_%d", cc);
    const char *const opts[] = {opt_arch, "--std=c++17"};
    r = N.compile(p, RX_COUNTOF(opts), opts);
    bool ok = r == 0;
    if (!ok) {
        size_t ln = 0;
        char *log = N.log_size(p, &ln) == 0 && ln ? malloc(ln + 1) : NULL;
        if (log && N.log(p, log) == 0) log[ln] = '\0';
        else if (log) log[0] = '\0';
        rx_diag_add(d, "codegen", "NVRTC could not compile the generated CUDA C for %s (%s):\n%s",
                    arch, N.err(r), log && *log ? log : "(no log)");
        free(log);
    } else {
        ok = output(p, N.ptx_size, N.ptx, true, ptx);
        if (!ok) rx_diag_add(d, "codegen", "NVRTC: no PTX for %s", arch);
        if (ok && cubin && !output(p, N.cubin_size, N.cubin, false, cubin)) cubin->n = 0;
    }
    N.destroy(&p);
    return ok;
}
