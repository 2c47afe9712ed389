/*
 * runtime.h — the stable C API of the relax runtime (library rxrt).
 *
 * Objects:
 *   rx_rt_ctx      a device context: the CPU memory pool, the library registry, the
 *                  counters, the call-depth limit. Thread-safe; outlives everything
 *                  created from it.
 *   rx_rt_module   a loaded artifact: parsed tables, verified bytecode, constants, the
 *                  loaded kernel object. Calls on one module may run concurrently.
 *   rx_rt_tensor   a reference-counted tensor (a DLPack DLTensor plus ownership).
 *   rx_rt_outputs  the result of one call, flattened: a tuple result (a, (b, c))
 *                  becomes a, b, c.
 *
 * Errors: every fallible function takes an rx_rt_err * (may be NULL) and fills its
 * message with one line; nothing aborts or prints on bad input.
 *
 * Counters (rx_rt_stats): `live_bytes` is the bytes currently held by storages the
 * runtime allocated (requested sizes), `peak_bytes` the largest live_bytes since the
 * last reset (rx_rt_call resets it to the live bytes at entry and reports the peak
 * above that), `pool_bytes` what the pool holds from the system (live plus cached free
 * blocks). Per-call counters are exact when calls on one context do not overlap.
 *
 * Profiling (per module, off by default; docs/runtime.md): rx_rt_set_profiling(m, 1)
 * makes every later call of m time each CALL_KERNEL and CALL_LIB (CLOCK_MONOTONIC wall
 * time around the call; a kernel's OpenMP threads run inside it) and the whole call,
 * aggregated per callee name: calls, total, min and max ns. rx_rt_profile_get copies the
 * aggregate out (sorted by total time); wall time minus the sum of the parts is what
 * the VM itself spent (dispatch, allocation, argument checks). Off, the interpreter pays
 * one predictable branch per kernel or library call and reads no clock. Concurrent calls
 * on one module aggregate into the same profile (lock-free atomic updates).
 */
#ifndef RELAX_RUNTIME_H
#define RELAX_RUNTIME_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/rxa.h"
#include "relax/vm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rx_rt_err {
    char msg[512]; /* one line, NUL-terminated; empty when no error */
} rx_rt_err;

typedef struct rx_rt_ctx rx_rt_ctx;
typedef struct rx_rt_module rx_rt_module;
typedef struct rx_rt_tensor rx_rt_tensor;
typedef struct rx_rt_outputs rx_rt_outputs;

typedef struct rx_rt_stats {
    int64_t live_bytes;    /* bytes in live storages (requested sizes) */
    int64_t peak_bytes;    /* max live_bytes since the last reset */
    int64_t pool_bytes;    /* bytes obtained from the system and not yet returned */
    int64_t kernel_calls;  /* CALL_KERNEL executed, since context creation */
    int64_t library_calls; /* CALL_LIB executed, since context creation */
    int64_t allocs;        /* storages allocated */
    int64_t pool_hits;     /* of which served from a cached block */
    int64_t resident_bytes;      /* of live_bytes, those backed by memory: a reserved
                                    arena counts only the chunks its views committed */
    int64_t peak_resident_bytes; /* max resident_bytes since the last reset */
} rx_rt_stats;

/* ---- context ---- */

/* A new CPU context with the built-in library functions registered and a call-depth
 * limit of 256. NULL on out of memory. */
rx_rt_ctx *rx_rt_ctx_new(void);

/* Frees the context and its pool. Every module, tensor and outputs object created from
 * it must be freed first. NULL is a no-op. */
void rx_rt_ctx_free(rx_rt_ctx *ctx);

/* Sets the maximum number of nested VM frames (>= 1). */
void rx_rt_set_max_depth(rx_rt_ctx *ctx, int depth);

/* Sets the device that modules of GPU artifacts (an OpenCL artifact: docs/gpu.md)
 * loaded into ctx from now on open: an index among the devices of the artifact's API,
 * all platforms counted in order (default 0; relax-run --device-id). A module of a
 * CPU artifact ignores it. */
void rx_rt_set_device_id(rx_rt_ctx *ctx, int32_t id);

/* Writes what m runs on into buf (n bytes, NUL-terminated) and returns buf: "cpu" for
 * a CPU artifact, else the API and the device's name ("OpenCL: pthread-znver4"). */
const char *rx_rt_module_device(const rx_rt_module *m, char *buf, size_t n);

/* Caps the resident bytes of live storages (0 = unlimited, the default): what the
 * call's tensors really use, not what a memory plan reserved for the upper bounds
 * (docs/memory.md). An allocation or commit past the cap fails like out of memory
 * ("main: out of memory allocating N bytes", "... would pass the memory limit ..."). */
void rx_rt_set_memory_limit(rx_rt_ctx *ctx, int64_t bytes);

/* Registers (or replaces) the library function `name` (copied). Modules loaded later
 * resolve CALL_LIB names against the registry at load time. `strerr` may be NULL or
 * map the function's nonzero return codes to messages. Returns 0, -1 on OOM. */
typedef int32_t (*rx_rt_libfn)(DLTensor *const *args, int32_t nargs);
int rx_rt_register_library(rx_rt_ctx *ctx, const char *name, rx_rt_libfn fn,
                           const char *(*strerr)(int32_t code));

/* The names of the library functions every context registers at creation (the
 * built-ins of vm.h's library ABI: "blas.matmul", "blas.sgemm", "rt.matmul",
 * "rt.rms_norm"), sorted, NULL-terminated, static. The compiler checks
 * call_dps_library names for the CPU target against this list. */
const char *const *rx_rt_builtin_library_names(void);
/* The BLAS library the blas.* built-ins use (opened on the first call of this or of one
   of them: $RX_BLAS_LIB, else OpenBLAS's OpenMP build, else libopenblas.so.0), or NULL
   when none could be opened. */
const char *rx_rt_blas_library(void);

/* Thread count of the calls made from the calling thread: the generated kernels'
 * OpenMP regions (libgomp's nthreads ICV of this thread) and the blas.* built-ins
 * (OpenBLAS, process-wide) use n, 1 <= n <= RX_RT_MAX_THREADS. Returns 0, or -1 with
 * err (a bad n; libgomp not loadable). rx_rt_get_threads reads back what is in effect:
 * *kernels from omp_get_max_threads() (0 when libgomp is not loaded), *blas from
 * openblas_get_num_threads() (0 when the BLAS library has none or none is loaded). */
#define RX_RT_MAX_THREADS 1024
int rx_rt_set_threads(int n, rx_rt_err *err);
void rx_rt_get_threads(int *kernels, int *blas);

/* Current counters (see the header essay). */
void rx_rt_get_stats(rx_rt_ctx *ctx, rx_rt_stats *out);

/* Returns cached free blocks of the pool to the system. */
void rx_rt_trim(rx_rt_ctx *ctx);

/* ---- tensors ---- */

/* A new dense row-major CPU tensor from the context's pool, contents uninitialised.
 * Returns a reference the caller owns (rx_rt_tensor_release), NULL with err set on a
 * bad dtype/shape or out of memory. */
rx_rt_tensor *rx_rt_tensor_new(rx_rt_ctx *ctx, DLDataType dtype, int32_t ndim,
                               const int64_t *shape, rx_rt_err *err);
/* The tensor's DLTensor, valid while the caller holds a reference. */
DLTensor *rx_rt_tensor_dl(rx_rt_tensor *t);
void rx_rt_tensor_retain(rx_rt_tensor *t);
/* Drops one reference; the last frees the tensor and its storage reference. */
void rx_rt_tensor_release(rx_rt_tensor *t);

/* ---- modules ---- */

/* Loads an artifact file (read whole into a 64-byte aligned buffer). Parses, checks
 * the CRC, verifies the bytecode, resolves library names and loads the CPU kernel
 * object. Returns the module, or NULL with err like
 * "model.rxa: corrupted: CRC-32 mismatch (header 0x1234abcd, computed 0x9f00aa11)". */
rx_rt_module *rx_rt_load_file(rx_rt_ctx *ctx, const char *path, rx_rt_err *err);

/* Same from bytes[0..n) (copied; `what` names it in messages, NULL = "<memory>"). */
rx_rt_module *rx_rt_load_bytes(rx_rt_ctx *ctx, const void *bytes, size_t n,
                               const char *what, rx_rt_err *err);

/* Unloads. Outputs and tensors obtained from the module stay valid (constants keep the
 * artifact buffer alive). NULL is a no-op. */
void rx_rt_module_free(rx_rt_module *m);

/* The parsed artifact: function table with signatures (rx_rxa_func), metadata section,
 * strings. Valid until rx_rt_module_free. */
const rx_rxa *rx_rt_module_artifact(const rx_rt_module *m);

/* Index of function `name`, or -1. */
int rx_rt_find_function(const rx_rt_module *m, const char *name);

/* ---- calls ---- */

typedef enum rx_rt_argkind {
    RX_RT_ARG_TENSOR = 0, /* borrowed DLTensor (CPU, any strides must be compact) */
    RX_RT_ARG_INT = 1,    /* int64 scalar */
    RX_RT_ARG_SHAPE = 2   /* shape value */
} rx_rt_argkind;

typedef struct rx_rt_arg {
    int kind;                 /* rx_rt_argkind */
    const DLTensor *tensor;   /* TENSOR: borrowed for the duration of the call */
    int64_t i;                /* INT */
    const int64_t *dims;      /* SHAPE: ndim dims (copied) */
    int32_t ndim;             /* SHAPE */
} rx_rt_arg;

typedef struct rx_rt_call_stats {
    int64_t kernels;       /* kernel calls plus library calls made by this call */
    int64_t library_calls; /* of which library calls */
    int64_t peak_bytes;    /* peak live bytes above the level at entry (reserved: a
                              memory plan's arena counts whole, at the upper bounds) */
    int64_t peak_resident_bytes; /* peak resident bytes above the level at entry (what
                                    the call's tensors at its actual shapes committed) */
} rx_rt_call_stats;

/* Calls function `fn` (index) with nargs arguments (must equal its parameter count).
 * Input tensors are borrowed, not copied: an output may alias an input when the
 * function returns its argument. The VM checks every argument against the function's
 * annotations (MATCH_* in the function's code). On success returns 0 and *out
 * (rx_rt_outputs_free), and fills *stats when non-NULL. On failure returns -1 with err
 * ("main: x: expected (n, 128), got (4, 64)"); no memory is leaked. */
int rx_rt_call(rx_rt_module *m, int fn, const rx_rt_arg *args, int nargs,
               rx_rt_outputs **out, rx_rt_call_stats *stats, rx_rt_err *err);

/* Number of flattened outputs. */
int rx_rt_outputs_count(const rx_rt_outputs *o);
/* Kind of output i: RX_RT_ARG_TENSOR, RX_RT_ARG_INT, RX_RT_ARG_SHAPE, or -1 (none,
 * function values and storages, which have no flat form). */
int rx_rt_outputs_kind(const rx_rt_outputs *o, int i);
/* Output i as a tensor (borrowed from o; NULL when not a tensor). */
DLTensor *rx_rt_outputs_tensor(rx_rt_outputs *o, int i);
/* Output i as a new tensor reference (caller releases; NULL when not a tensor). */
rx_rt_tensor *rx_rt_outputs_take(rx_rt_outputs *o, int i);
/* Output i as an int (0 when not an int). */
int64_t rx_rt_outputs_int(const rx_rt_outputs *o, int i);
/* Output i as a shape: returns ndim and sets *dims (borrowed), -1 when not a shape. */
int32_t rx_rt_outputs_shape(const rx_rt_outputs *o, int i, const int64_t **dims);
void rx_rt_outputs_free(rx_rt_outputs *o);

/* ---- profiling (relax-run --profile) ---- */

typedef enum rx_rt_prof_kind {
    RX_RT_PROF_KERNEL = 0, /* a CALL_KERNEL target: a generated kernel */
    RX_RT_PROF_LIBRARY = 1 /* a CALL_LIB target: a registered library function */
} rx_rt_prof_kind;

typedef struct rx_rt_prof_entry {
    const char *name; /* kernel or library function name (the module's; valid until
                         rx_rt_module_free) */
    int kind;         /* rx_rt_prof_kind */
    int64_t calls;    /* times called (> 0: callees never called are left out) */
    int64_t total_ns; /* summed wall time of those calls */
    int64_t min_ns;   /* fastest call */
    int64_t max_ns;   /* slowest call */
} rx_rt_prof_entry;

typedef struct rx_rt_profile {
    int64_t runs;              /* profiled calls of the module's functions (rx_rt_call,
                                  one per bench call) */
    int64_t wall_ns;           /* their summed wall time, entry to return of the VM */
    int64_t parts_ns;          /* sum of entries[].total_ns (<= wall_ns: the rest is VM
                                  overhead) */
    int n;                     /* entries */
    rx_rt_prof_entry *entries; /* n entries by total_ns descending, then kind, then name
                                  (rx_rt_profile_free) */
} rx_rt_profile;

/* Turns profiling of m's calls on (nonzero) or off; returns the previous setting.
 * Calls already running keep the setting they started with. Turning it off keeps the
 * aggregate; rx_rt_profile_reset clears it. */
int rx_rt_set_profiling(rx_rt_module *m, int on);

/* Zeroes m's aggregate (exact when no profiled call of m is running). */
void rx_rt_profile_reset(rx_rt_module *m);

/* Copies m's aggregate into *out (entries allocated; free with rx_rt_profile_free).
 * Returns 0, or -1 with err on out of memory (*out is then empty). */
int rx_rt_profile_get(const rx_rt_module *m, rx_rt_profile *out, rx_rt_err *err);

/* Frees out->entries and empties *out. NULL is a no-op. */
void rx_rt_profile_free(rx_rt_profile *out);

/* ---- benchmark (relax-run --bench) ---- */

typedef struct rx_rt_bench_opts {
    int warmup;        /* untimed calls before timing (>= 0; the first call always runs) */
    int repeat;        /* measurements (>= 1) */
    int number;        /* calls per measurement (>= 1) */
    double min_repeat_ms; /* grow number until one measurement takes this long (0 off) */
    int resident;      /* GPU module: copy the inputs to the device once, before the first
                          call, and leave the results there (a call times the device work
                          alone, as a serving process with resident weights sees it); 0:
                          every call uploads its inputs and downloads its results. No
                          effect on a CPU module. */
} rx_rt_bench_opts;

typedef struct rx_rt_bench_result {
    double mean_ms, median_ms, min_ms, max_ms, stddev_ms; /* per call, over repeats */
    int repeat;         /* measurements taken */
    int number;         /* calls per measurement actually used */
    int64_t kernels;    /* kernel + library calls of one call */
    int64_t peak_bytes; /* peak tensor bytes of one call, inputs excluded (reserved) */
    int64_t resident_bytes; /* peak resident tensor bytes of that call (committed) */
    int threads;        /* the kernels' OpenMP thread count in effect (rx_rt_get_threads) */
    int blas_threads;   /* OpenBLAS's thread count in effect (0: unknown) */
    int64_t reduced_calls; /* timed calls run on fewer threads than asked for: the
                              machine was oversubscribed (rx_rt_set_threads) */
    char device[160];   /* what ran it (rx_rt_module_device): "cpu", "OpenCL: NAME" */
    double launches;    /* GPU: device launches per timed call (a CUDA Graph launch counts
                           one, the kernels it replays none); -1 on the CPU */
    double graph_launches; /* GPU: CUDA Graph launches per timed call */
    int resident;       /* GPU: 1 when the inputs stayed in device memory (opts.resident) */
} rx_rt_bench_result;

/* Times function `fn` like TVM's time_evaluator: max(warmup, 1) untimed calls, then `repeat`
 * measurements of `number` back-to-back calls each (number grows by 1.618x or to the
 * estimate needed until one measurement lasts min_repeat_ms); each measurement's mean
 * per-call time is one sample. stddev is the population standard deviation. kernels
 * and peak_bytes come from the first (warm-up or timed) call. When m's profiling is on
 * (rx_rt_set_profiling), the benchmark profiles exactly its timed calls: profiling is
 * off for the first call and the warm-up, the profile is reset before the first timed
 * call, and every timed call counts (including measurements discarded while number
 * grows; the profile's runs says how many); profiling is on again when it returns.
 * Read the result with rx_rt_profile_get. Returns 0, or -1 with err from a failing
 * call. */
int rx_rt_bench(rx_rt_module *m, int fn, const rx_rt_arg *args, int nargs,
                const rx_rt_bench_opts *opts, rx_rt_bench_result *res, rx_rt_err *err);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
