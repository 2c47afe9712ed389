/*
 * vm.h — the Relax VM instruction set, the kernel ABI and the library ABI.
 *
 * The VM is a register machine (paper §4.7). Each call gets a frame with `nregs`
 * registers holding values — none, int64, tensor, shape, tuple, storage, function —
 * and a `heap_size`-slot int64 shape heap where the symbolic variables of the function
 * and the expressions over them live. Parameters arrive in registers 0..nparams-1.
 * Control is explicit: jumps, calls (a frame stack bounded by the context's call-depth
 * limit, no C recursion), RET. Memory is explicit, as in Figure 5: ALLOC_STORAGE takes
 * bytes from the device pool, ALLOC_TENSOR views a storage at an offset, RELEASE drops
 * a reference. Values are reference counted; a tensor keeps its storage alive.
 *
 * Encoding. Code is a sequence of int64 words (stored little-endian in CODE). An
 * instruction is its opcode word followed by its operands; every operand is one word
 * except the two-word forms below. Operand letters (used in the table and by the
 * verifier, RX_VM_OPFORMATS):
 *   r  register index            (< nregs)
 *   h  shape-heap slot           (< heap_size)
 *   d  dim operand, two words:   RX_D_SLOT h  |  RX_D_IMM value
 *   m  match item, two words:    RX_M_STORE h | RX_M_SLOT h | RX_M_IMM value | RX_M_ANY 0
 *   i  immediate int64
 *   y  packed dtype (rxa.h), 0 = any where allowed
 *   s  string index (STRINGS)    l  string index naming a library function
 *   c  constant index (CONSTS)   k  kernel index   f  function index
 *   t  jump target: word offset from the start of the function, must start an
 *      instruction
 *   *x a count word n >= 0, then n operands of kind x
 * Below, R[A] is a register, H[h] a heap slot, D a dim operand's value.
 * The last instruction of a function must be RET or GOTO. The loader verifies all of
 * this (rx_vm_verify) so the interpreter never reads out of bounds; type errors on
 * values (a tuple where a tensor was expected) are checked when executed.
 *
 * Errors unwind every frame to the API boundary with one message. MATCH_* failures
 * produce the instruction's string followed by ", got " and the actual value:
 * "main: x: expected (n, 128)" + ", got (4, 64)". A dtype mismatch appends the dtype
 * ("(4, 64) i32"); a value of the wrong kind appends its kind ("a shape", "a tuple").
 *
 * Kernel ABI (CPU, what the C code generator emits; one exported symbol per kernel):
 *
 *     int32_t NAME(void *const *data, const int64_t *ivars);
 *
 * data[i] is the data pointer (DLTensor.data + byte_offset) of the i-th buffer in
 * parameter order (inputs then outputs: destination passing), ivars[j] the value of the
 * kernel's j-th symbolic variable in the order the kernel table lists them (ivars may
 * be NULL when there are none). Buffers are dense row-major, 64-byte aligned when
 * allocated by the VM. data[nbufs] (one past the buffers) points to an
 * rx_vm_kernel_err the VM zeroed, or is NULL (a caller without one). Return 0, or a
 * nonzero code:
 *   1 RX_VM_KERNEL_ENOMEM     an intermediate buffer could not be allocated
 *   2 RX_VM_KERNEL_EINDEX     an index read from data is outside its axis; the kernel
 *                             filled the record: "kernel NAME: index I out of range
 *                             for axis A of BUF (extent E)"
 *   3 RX_VM_KERNEL_EOVERFLOW  a size the kernel computes (a loop nest's extent
 *                             product, a buffer's element count) overflows int64:
 *                             "kernel NAME: a size overflows int64 (...)"
 * any other code is reported as "kernel NAME failed with code N". The generated
 * kernels check before their first loop (sizes) and at each load or store whose
 * index is read from a tensor (take, gathers), one unsigned compare per access.
 * The object must not have a DT_SONAME and must not keep global state between calls
 * (several modules may load copies).
 *
 * Library ABI (registered by name in the context; rx_rt_register_library):
 *
 *     int32_t fn(DLTensor *const *args, int32_t nargs);
 *
 * destination passing: outputs are the last arguments and are preallocated. Return 0 or
 * a nonzero code (reported with the registry's message for that code when it has one).
 * Built in (rx_rt_builtin_library_names):
 *   "blas.sgemm", "blas.matmul"  (A, B, C) C = A @ B; f32; 2-D, or batched 3-D with equal
 *                                batch or a 2-D B; OpenBLAS's cblas_sgemm from
 *                                libopenblas.so.0 opened at first use
 *   "blas.matmul_bias"           (A, B, bias, C) C = A @ B + bias, bias (n,) added over
 *                                the last axis; same shapes and BLAS as blas.matmul
 *   "blas.matmul_bias_relu", "blas.matmul_bias_gelu", "blas.matmul_bias_silu"
 *                                (A, B, bias, C) C = act(A @ B + bias)
 *   "blas.matmul_relu", "blas.matmul_gelu", "blas.matmul_silu"
 *                                (A, B, C) C = act(A @ B); relu max(x, 0), gelu
 *                                0.5 x (1 + erf(x / sqrt 2)), silu x sigmoid(x)
 *   "rt.matmul"                  the same shapes in plain C, f32 or f64 (no BLAS)
 *   "rt.rms_norm"                (x, y) y = x / sqrt(mean(x^2 over the last axis) + 1e-5),
 *                                f32 or f64, y of x's shape, x of rank >= 1
 *   "clblast.matmul"             (A, B, C) as blas.matmul, on OpenCL device tensors only:
 *                                the VM runs CLBlast's SGEMM (vm_device.c); with CPU
 *                                tensors it fails (code 1)
 * Return codes of the built-ins: 1 library missing (blas.*), 2 argument count, 3 dtype,
 * 4 shape — each reported with its message, the actual arguments' shapes and dtypes,
 * and the binding named by a NOTE right before the CALL_LIB: "main: binding proj
 * (functions.main.body.blocks[0].bindings[1]): blas.matmul: shape mismatch (...);
 * arguments (2, 3) f32, (4, 5) f32, (2, 5) f32".
 *
 * Built-in functions (CALL_BUILTIN, a fixed table in the runtime; an unknown name fails
 * verification): for data-dependent ops whose result shape only the data decides, so
 * the callee allocates the result (from the context's pool, counted in the peak):
 *   "unique"   (x) -> sorted distinct elements of x flattened, 1-D, x's dtype;
 *              (x, sorted, return_index, return_inverse, return_counts[, axis]) (ints)
 *              -> the values, then each requested i64 index / inverse / counts (a
 *              tuple when any is requested; NumPy's np.unique, sorted=0 keeps first-
 *              occurrence order; runtime/builtin.h has the details)
 *   "nonzero"  (x) -> i64 (ndim, count): the indices of the nonzero elements
 */
#ifndef RELAX_VM_H
#define RELAX_VM_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel return codes and the index-check record (the kernel ABI above). The record
 * is written only by a kernel returning RX_VM_KERNEL_EINDEX. */
enum { RX_VM_KERNEL_ENOMEM = 1, RX_VM_KERNEL_EINDEX = 2, RX_VM_KERNEL_EOVERFLOW = 3 };
typedef struct rx_vm_kernel_err {
    int32_t state;     /* nonzero once an index failed */
    int32_t axis;      /* the axis of buf it indexed */
    int64_t index;     /* the index */
    int64_t extent;    /* the axis' extent */
    const char *buf;   /* the buffer's name (a string in the kernel object) */
} rx_vm_kernel_err;

/* Opcodes:  X(name, operand format, semantics) — one line per opcode. */
#define RX_VM_OPCODES(X) \
    X(NOP,           "",       "nothing") \
    X(MOVE,          "rr",     "R[A] := R[B] (shared reference)") \
    X(RELEASE,       "r",      "R[A] := none, dropping its reference") \
    X(LOADI,         "rd",     "R[A] := int64 D") \
    X(LOADK,         "rc",     "R[A] := constant tensor c") \
    X(FUNCREF,       "rf",     "R[A] := function value f") \
    X(MATCH_TENSOR,  "ryis*m", "R[A] must be a tensor of dtype y (0 any), ndim i (-1 any) and dims m; else error s") \
    X(MATCH_SHAPE,   "ris*m",  "R[A] must be a shape of ndim i (-1 any) and dims m; else error s") \
    X(MATCH_INT,     "rsm",    "R[A] must be an int64 matching m; else error s") \
    X(ASSERT_EQ,     "sdd",    "D1 == D2; else error s + \", got D1 != D2\"") \
    X(ADD,           "hdd",    "H[h] := D1 + D2") \
    X(SUB,           "hdd",    "H[h] := D1 - D2") \
    X(MUL,           "hdd",    "H[h] := D1 * D2") \
    X(FLOORDIV,      "hdd",    "H[h] := floor(D1 / D2)") \
    X(FLOORMOD,      "hdd",    "H[h] := D1 - D2 * floor(D1 / D2)") \
    X(MIN,           "hdd",    "H[h] := min(D1, D2)") \
    X(MAX,           "hdd",    "H[h] := max(D1, D2)") \
    X(MKSHAPE,       "r*d",    "R[A] := shape (D...)") \
    X(SHAPEOF,       "rr",     "R[A] := shape of tensor R[B]") \
    X(ALLOC_STORAGE, "rdi",    "R[A] := new storage of D bytes on device type i (1 = CPU)") \
    X(ALLOC_TENSOR,  "rrdy*d", "R[A] := tensor of dtype y, shape (D...) in storage R[B] at byte offset D") \
    X(CALL_KERNEL,   "k*r*d",  "kernel k(data of tensors R..., ivars D...)") \
    X(CALL_LIB,      "l*r",    "library function named l(tensors R...), destination passing") \
    X(CALL,          "rf*r",   "R[A] := function f(R...)") \
    X(CALL_VALUE,    "rr*r",   "R[A] := function value R[B](R...)") \
    X(TUPLE,         "r*r",    "R[A] := tuple (R...)") \
    X(GETITEM,       "rri",    "R[A] := R[B][i]") \
    X(JMPIFNOT,      "rt",     "if R[A] is false (int 0, or a one-element tensor equal to 0) goto t") \
    X(GOTO,          "t",      "goto t") \
    X(RET,           "r",      "return R[A] to the caller") \
    X(CALL_BUILTIN,  "rl*r",   "R[A] := built-in function named l(R...), a new value (unique, nonzero)") \
    X(NOTE,          "s",      "nothing; s names the binding of the next instruction (CALL_LIB) in its errors") \
    X(GRAPH_BEGIN,   "i*d",    "CUDA Graph region i begins, its key the values D... (captured once per key, then replayed)") \
    X(GRAPH_END,     "i",      "CUDA Graph region i ends (a capture becomes a graph; the graph is launched)") \
    X(LIBJMP,        "lt",     "goto t when device library l cannot be loaded on this host (a notice once per process): what follows t runs the generated kernel instead") \
    X(VIEW,          "rr*d",   "R[A] := tensor R[B]'s bytes under the shape (D...), sharing its storage (no copy); the element counts must agree")

typedef enum rx_vm_op {
#define RX_VM_X_ENUM(name, fmt, doc) RX_OP_##name,
    RX_VM_OPCODES(RX_VM_X_ENUM)
#undef RX_VM_X_ENUM
    RX_OP_COUNT_
} rx_vm_op;

/* Dim operand tags (two-word operand "d"). */
enum { RX_D_SLOT = 0, RX_D_IMM = 1 };
/* Match item modes (two-word operand "m"). */
enum {
    RX_M_STORE = 0, /* H[h] := actual dim (first occurrence of a symbolic variable) */
    RX_M_SLOT = 1,  /* actual dim must equal H[h] */
    RX_M_IMM = 2,   /* actual dim must equal the immediate */
    RX_M_ANY = 3    /* any dim (operand word ignored, write 0) */
};
/* Device types for ALLOC_STORAGE (DLPack's DLDeviceType values). */
enum { RX_DEV_CPU = 1, RX_DEV_CUDA = 2, RX_DEV_OPENCL = 4, RX_DEV_VULKAN = 7 }; /* DLPack device types */

/* Operand format of an opcode ("rr"), or NULL when op is out of range. */
const char *rx_vm_op_format(int64_t op);
/* Name of an opcode ("MOVE"), or NULL when op is out of range. */
const char *rx_vm_op_name(int64_t op);

struct rx_rxa;
/* Verifies the bytecode of every function of a parsed artifact: opcodes, operand
 * ranges (registers, heap slots, strings, constants, kernels, functions), jump targets
 * on instruction boundaries, argument counts of CALL and CALL_KERNEL against the
 * tables, and that no function falls off its end. Returns 0, or -1 with a message like
 * "main: pc 12: register 9 out of range (4)". */
int rx_vm_verify(const struct rx_rxa *a, char *err, size_t errlen);

/* Writes a human-readable listing of function f's code ("  12  MOVE r1 r0\n" per
 * instruction) to a malloc'ed string; NULL on out of memory. Code must be verified. */
char *rx_vm_disasm(const struct rx_rxa *a, uint32_t f);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
