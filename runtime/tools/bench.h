/*
 * bench.h — what relax-run and relax-agent share to run a function of an artifact:
 * binding its arguments, timing it, and printing the numbers (library rxtools: rxrt
 * and npy.c only, no jansson, no compiler).
 *
 * One code path for both programs, so a benchmark run by a device agent for `relax
 * bench` and `relax-run --bench` on the same artifact, function, shapes and seed get the
 * same inputs, the same timing loop (rx_rt_bench) and the same statistics line.
 *
 *   rx_bench_args_build  Steps 2-4 of relax-run: find the function; bind symbolic
 *                        variables — first from the shape list (VAR=N), then from the
 *                        dims of the given inputs wherever a parameter dim is a lone
 *                        variable; read the given inputs (.npy files, or .npy images in
 *                        memory for the agent) and fill the missing ones with seeded
 *                        random data of the annotated shape. Errors are one line, the
 *                        exact messages relax-run has always printed ("input x needs
 *                        symbolic variable n: pass --shape n=N"), plus a class
 *                        (rx_bench_ekind) the agent turns into its error codes.
 *   rx_bench_format      the one-line JSON of rx_rt_bench's result (relax-run --bench's
 *                        output; the agent parses it into its report).
 *   rx_bench_format_profile  the same line with the profile's keys appended
 *                        (relax-run --bench --profile); rx_bench_print_profile the
 *                        human table of a profile (relax-run --profile).
 *   rx_bench_elem        element i of a buffer as a double (f16 and bf16 included), for
 *                        summaries and for comparing outputs with expected values.
 *
 * Random data: a splitmix64 stream per parameter, seeded from `seed` and the parameter
 * index (stream seed = seed * 0x100000001b3 + index + 1), so one input's values do not
 * depend on which others were given. Floats are uniform in [-1, 1) on a grid every float
 * type represents exactly; signed ints in [-8, 8), unsigned in [0, 16), bools fair coins.
 * Generated tensors together may take at most a cap of bytes (default
 * RX_BENCH_GEN_MAX_DEFAULT, 4 GiB), checked from the annotated shapes before anything is
 * allocated: an artifact whose annotations (or --shape values) ask for more gets a clear
 * error at once instead of minutes of filling memory.
 *
 * Only what is needed to build arguments is checked here (an input's dtype against the
 * annotation, with '<u2' data accepted for bf16); shapes are left to the VM, whose MATCH
 * instructions report "main: x: expected (n, 128), got (4, 64)".
 */
#ifndef RX_TOOLS_BENCH_H
#define RX_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "relax/runtime.h"

/* A symbolic variable's value as given: "n" = "128" (value parsed as an integer). */
typedef struct rx_bench_kv {
    const char *name;  /* variable name */
    const char *value; /* decimal text */
} rx_bench_kv;

/* A given input: a .npy file, or a .npy image in memory. */
typedef struct rx_bench_input {
    const char *name;     /* parameter name */
    const char *file;     /* path of a .npy file, or NULL when bytes is used */
    const uint8_t *bytes; /* .npy image (borrowed during the build) when file is NULL */
    size_t nbytes;        /* its size */
    const char *label;    /* names the source in messages when file is NULL ("inputs.x") */
} rx_bench_input;

/* What kind of problem an argument build hit. */
typedef enum rx_bench_ekind {
    RX_BENCH_OK = 0,
    RX_BENCH_E_FUNCTION = 1, /* no such function in the artifact */
    RX_BENCH_E_SHAPE = 2,    /* a symbolic variable unknown, unbound or not an integer */
    RX_BENCH_E_INPUT = 3,    /* an input unknown, given twice, unreadable or of a bad dtype */
    RX_BENCH_E_NOMEM = 4     /* out of memory */
} rx_bench_ekind;

typedef struct rx_bench_buf rx_bench_buf;

/* The arguments of one function, ready for rx_rt_call / rx_rt_bench. */
typedef struct rx_bench_args {
    int fn;             /* function index in the module */
    uint32_t nargs;     /* = the function's parameter count */
    rx_rt_arg *args;    /* nargs arguments (point into bufs) */
    uint8_t *random;    /* nargs flags: 1 where the argument is generated random data (a
                           tensor not given); ints and shapes taken from symbolic
                           variables are 0 */
    rx_bench_buf *bufs; /* private: the memory behind the arguments */
} rx_bench_args;

/* The default cap on the bytes of generated inputs (all of a call's together): 4 GiB. */
#define RX_BENCH_GEN_MAX_DEFAULT ((uint64_t)1 << 32)

/* How missing inputs are generated. */
typedef struct rx_bench_gen {
    uint64_t seed;       /* seed of the random data */
    uint64_t max_bytes;  /* cap on the generated tensors' total bytes; 0: the default */
    const char *raise;   /* how to raise the cap, appended to its error ("--max-input-bytes
                            N raises it"); NULL: nothing */
} rx_bench_gen;

/* Builds the arguments of function `fn` of module m (see the header essay). `what`
 * names the artifact in messages. shapes/ins are borrowed for the call. On success
 * returns RX_BENCH_OK and *out (rx_bench_args_free). Otherwise returns the error's
 * kind with one line in err, and *out is empty. Generated inputs: seeded by seed, under
 * the default cap. */
rx_bench_ekind rx_bench_args_build(rx_rt_module *m, const char *what, const char *fn,
                                   const rx_bench_kv *shapes, int nshapes,
                                   const rx_bench_input *ins, int nins, uint64_t seed,
                                   rx_bench_args *out, char *err, size_t errlen);

/* rx_bench_args_build with the generation settings g (seed, cap). Past the cap the
 * error (RX_BENCH_E_SHAPE) reads "input w: generating (65536, 65536) f32 needs
 * 17179869184 bytes; generated inputs are limited to 4294967296 bytes (0 used so far)"
 * then ": " and g->raise when set. */
rx_bench_ekind rx_bench_args_build_gen(rx_rt_module *m, const char *what, const char *fn,
                                       const rx_bench_kv *shapes, int nshapes,
                                       const rx_bench_input *ins, int nins,
                                       const rx_bench_gen *g, rx_bench_args *out, char *err,
                                       size_t errlen);

/* Frees what rx_bench_args_build allocated; a zeroed or freed struct is a no-op. */
void rx_bench_args_free(rx_bench_args *a);

/* Writes the result line (no newline), the keys in this order:
 * {"mean_ms": …, "median_ms": …, "min_ms": …, "max_ms": …, "stddev_ms": …, "repeat": R,
 *  "number": K, "kernels": N, "peak_bytes": B}, times with 6 decimals. Returns the
 * length (snprintf's: the text is cut when it is >= n). */
int rx_bench_format(const rx_rt_bench_result *r, char *buf, size_t n);

/* rx_bench_format's line with, before the closing brace, the profile p (runtime.h):
 *   "profile": [{"name": "k", "kind": "kernel"|"library", "calls": N, "total_ms": T,
 *                "pct": P, "mean_us": M, "min_us": A, "max_us": B}, ...],
 *   "profile_runs": R, "profile_wall_ms": W, "profile_other_ms": O
 * entries in p's order (total time descending), times over all R profiled calls, pct of
 * W; O = W minus the entries' sum (VM overhead). The keys before "profile" are exactly
 * rx_bench_format's. Returns the length (snprintf's: cut when >= n; size a buffer with
 * a first call of n = 0). */
int rx_bench_format_profile(const rx_rt_bench_result *r, const rx_rt_profile *p, char *buf,
                            size_t n);

/* Writes the profile p of function `fn` as a table to f: a summary line, then one row
 * per callee (name, kind, calls, total ms, % of wall, mean us) by total time, then the
 * VM's own share ("(vm overhead)"). */
void rx_bench_print_profile(FILE *f, const char *fn, const rx_rt_profile *p);

/* Element i of data (packed dtype, lanes 1) as a double; NaN for dtypes it cannot read. */
double rx_bench_elem(const void *data, uint32_t dtype, int64_t i);

/* A whole decimal integer (optional sign, no trailing characters) into *out; -1 when
 * malformed or out of range (relax-run's options and --shape values use it too). */
int rx_bench_parse_i64(const char *s, int64_t *out);

#endif
