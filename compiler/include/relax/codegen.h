/*
 * codegen.h — kernel code generation for loop-level functions (docs/design.md, step 11).
 *
 * The C target turns every loop-level (RX_F_TIR) function of a module into one kernel
 * of a single C11 translation unit, then builds that unit into a shared object with
 * the system C compiler. The runtime (runtime/) dlopens the object and calls kernels
 * through one ABI, the contract between the two halves:
 *
 *   int32_t SYMBOL(void *const *data, const int64_t *ivars);
 *
 *   SYMBOL    rx_codegen_symbol(f->name): "rxk_" + the name when it is already a C
 *             identifier tail ([A-Za-z0-9_]*), else the name with every other byte
 *             turned into '_' followed by "_" and 8 hex digits of its SHA-256.
 *   data[i]   the data pointer of the i-th BUFFER parameter (scalar parameters are
 *             skipped), elements dense row-major in the buffer's dtype: bool as one
 *             byte 0/1, f16 as IEEE binary16 bits, bf16 as the top 16 bits of an f32.
 *   ivars[j]  the value of f->svars[j] (whole-dim shape variables and scalar
 *             parameters, in the reader's order). Integer and bool variables hold
 *             their value; a float scalar parameter holds the bits of the value as an
 *             IEEE binary64 (memcpy a double into the slot).
 *   returns   0, or nonzero on a run-time failure: 1 = a heap allocation failed.
 *
 * Semantics: integer // and % floor (division by zero gives 0, as NumPy does); `/`
 * is true division on floats; f16 and bf16 values are computed in float and rounded
 * to their type after every operation (round to nearest even), which equals
 * computing in the narrow type; round() is nearest-even; narrow integers wrap.
 *
 * The generated unit compiles warning-free with `-std=c11 -O2 -Wall -Wextra -Werror`
 * under gcc and clang, with or without -fopenmp; it needs only <stdint.h>,
 * <stddef.h>, <stdlib.h>, <string.h> and <math.h> (-lm), and with OpenMP on Linux
 * <dlfcn.h>. Parallel loops (RX_LOOP_PARALLEL) run on OpenMP threads when it is built
 * with -fopenmp (rx_cc_build's default), serially otherwise. With
 * rx_codegen_opts.isa_versions, kernels holding a vectorized loop come in AVX-512, AVX2
 * and baseline versions under gcc 12+ on x86-64, chosen when the
 * object loads (c_kernel.c, "ISA versions"); with exact_isa_versions only the parts
 * computing exp in vectorized loops do, without contraction; the ABI is the same and
 * the object runs on any x86-64. Building happens in a private temp directory through
 * posix_spawnp (no shell), under a time limit.
 */
#ifndef RELAX_CODEGEN_H
#define RELAX_CODEGEN_H

#include "relax/ir.h"

/* Return codes of a kernel. */
enum {
    RX_KERNEL_OK = 0,
    RX_KERNEL_ENOMEM = 1,   /* an intermediate buffer could not be allocated */
    RX_KERNEL_EINDEX = 2,   /* an index read from data is out of range: the details in
                               the record at data[nbufs] (vm.h, rx_vm_kernel_err) */
    RX_KERNEL_EOVERFLOW = 3 /* a size computed in the kernel overflows int64 */
};

/* Appends the C symbol of the kernel for loop function `fname` to out. Deterministic
 * and injective over the names of one module (rx_codegen_c checks it). */
void rx_codegen_symbol(const char *fname, rx_sb *out);

/* Appends one C11 translation unit holding every loop-level function of m as an
 * extern kernel (graph-level functions are skipped). Returns false after adding a
 * located diagnostic to d for each construct the CPU target cannot run (a loop bound
 * to a GPU thread axis, an unbound variable or buffer); out then holds partial text
 * the caller must not build. m is not modified. */
bool rx_codegen_c(const rx_module *m, rx_sb *out, rx_diags *d);

/* What rx_codegen_c_with may add. Zeroed: rx_codegen_c's output. */
typedef struct rx_codegen_opts {
    bool isa_versions; /* kernels holding a vectorized loop also get AVX-512 and AVX2
                          versions, picked when the object loads (c_kernel.c, "ISA
                          versions"): faster kernels, about three times their compile
                          time. The driver sets it from opt level 3. */
    bool exact_isa_versions; /* without isa_versions: only kernels computing exp in f32
                                inside a vectorized loop get AVX-512 and AVX2 versions,
                                compiled without contraction, so every version writes
                                the baseline's bits. The driver sets it at opt levels
                                0 to 2. */
} rx_codegen_opts;

/* rx_codegen_c with options; o may be NULL (all off). */
bool rx_codegen_c_with(const rx_module *m, const rx_codegen_opts *o, rx_sb *out, rx_diags *d);

/* How rx_cc_build runs the C compiler. Zeroed fields take the defaults. */
typedef struct rx_cc_opts {
    const char *cc;           /* compiler, looked up in PATH; NULL: "cc" */
    const char *const *flags; /* NULL-terminated; replaces the default flags
                                 {"-std=c11", "-O2", "-falign-loops=64",
                                 "-fno-math-errno", "-fPIC", "-shared", "-fopenmp"}
                                 and the reproducibility flags when non-NULL */
    const char *const *extra; /* NULL-terminated flags added after them, or NULL */
    int timeout_s;            /* wall-clock limit in seconds; 0: $RX_CC_TIMEOUT_S, else 120 */
    const char *tmpdir;       /* parent of the private directory; NULL: $TMPDIR or /tmp */
    bool no_openmp;           /* default flags without -fopenmp (also: env RX_NO_OPENMP=1):
                                 parallel loops run serially */
} rx_cc_opts;

/* Builds C source csrc[0..n) into a shared object: writes k.c into a fresh private
 * directory (mode 0700), runs `CC FLAGS EXTRA -o k.so k.c -lm` there with posix_spawnp
 * (with the default flags, FLAGS ends with -Wl,--build-id=sha1 -ffile-prefix-map=DIR=.,
 * so the object's bytes do not depend on the directory: reproducible artifacts), and
 * on success returns true with the object's bytes in *so (heap; the caller frees) and
 * its size in *so_n. On failure returns false with one diagnostic in d: the compiler's
 * first error lines, "C compiler timed out after N s" (the process is killed), or the
 * system error that stopped the build. The directory and all its files are removed
 * before returning; no child process or descriptor is left behind. o may be NULL. */
bool rx_cc_build(const char *csrc, size_t n, const rx_cc_opts *o, uint8_t **so, size_t *so_n,
                 rx_diags *d);

/* ---- GPU kernels (gpu_kernel.c, gpu_dialect.c; docs/gpu.md) ---- */

struct rx_target;

/* Appends to src the kernel source of every loop-level function of m for GPU target t
 * (OpenCL C for opencl; gpu_kernel.c's essay: the split into kernels, the schedules,
 * the launch ABI) and to launch the bytes of the artifact's LAUNCH section (one entry
 * per loop function, in module order: the kernel table's order). For vulkan, src gets
 * the GLSL shaders (one per kernel, one after the other) and bin their SPIR-V bundle
 * (the KERNELS_SPIRV section); bin is untouched for other targets. Returns false after
 * adding a located diagnostic for each construct a device kernel cannot run, or when
 * the target has no dialect yet. */
bool rx_codegen_gpu(const rx_module *m, const struct rx_target *t, rx_sb *src, rx_sb *bin,
                    rx_sb *launch, rx_diags *d);

#endif
