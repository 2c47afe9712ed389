/*
 * rxa.h — the `.rxa` artifact format: reader and builder.
 *
 * An artifact is one self-describing little-endian file (docs/artifact.md is the
 * normative description; this header mirrors it):
 *
 *   header (40 bytes)
 *     0  u8[8] magic        "\x89RXA\r\n\x1a\n" (catches text-mode mangling like PNG)
 *     8  u32   version      RX_RXA_VERSION; any other value is refused
 *    12  u32   flags        must be 0 (no flag is defined yet)
 *    16  u32   nsections    number of section table entries (1..RX_RXA_MAX_SECTIONS)
 *    20  u32   reserved     must be 0
 *    24  u64   total_size   size of the whole file in bytes
 *    32  u32   crc32        CRC-32 (IEEE, zlib's) of bytes [40, total_size)
 *    36  u32   reserved     must be 0
 *   section table at byte 40: nsections entries of 24 bytes
 *     u32 kind, u32 flags (0), u64 offset (multiple of 64), u64 size
 *   section bodies, each starting on a 64-byte boundary, in any order, never overlapping.
 *
 * Section kinds (each at most once; STRINGS, FUNCS and CODE are required):
 *   METADATA     JSON text (not NUL-terminated), opaque to the runtime
 *   STRINGS      u32 count; count x (u32 len, len bytes, one 0 byte)
 *   FUNCS        the function table, then the kernel table (layouts below)
 *   CODE         VM bytecode: int64 words (vm.h), functions index into it
 *   CONSTS       u32 count; count x const entry; data blocks at 64-aligned offsets
 *   KERNELS_CPU  bytes of an ELF shared object holding the CPU kernels (vm.h ABI)
 *   KERNELS_OPENCL  OpenCL C source of a GPU artifact's kernels (with LAUNCH)
 *   KERNELS_SPIRV   a SPIR-V bundle of a Vulkan artifact's kernels (with LAUNCH; the
 *                   bundle format is relax/device.h's, checked when read)
 *   KERNELS_PTX  reserved: accepted, kept, not used
 *
 * Value descriptors ("types", used for parameters and results), all fields u32 unless
 * noted: name (string index or RX_RXA_NONE), kind; then by kind
 *   ANY    nothing
 *   TENSOR dtype (packed, 0 = unknown), i32 ndim (-1 = unknown), ndim x dim expr
 *   SHAPE  i32 ndim (-1 = unknown), ndim x dim expr
 *   INT    one dim expr (the value; 0 tokens = unknown)
 *   TUPLE  nfields, nfields x descriptor (nesting depth <= RX_RXA_MAX_DEPTH)
 * A dim expr is u32 ntok (0 = unknown, <= RX_RXA_MAX_TOKENS) then postfix tokens:
 *   u32 op; CONST is followed by an i64, VAR by a u32 index into the function's
 *   symbolic variable list; ADD SUB MUL FLOORDIV FLOORMOD MIN MAX pop two, push one.
 *
 * Function entry: name, nsym, nsym x symbol name, nparams, nparams x descriptor,
 * result descriptor, nregs, heap_size, code_offset (words into CODE), code_words.
 * Kernel entry: name (symbol to resolve), section (kind holding it), nbufs, nivars,
 * nivars x ivar name.  FUNCS = u32 nfuncs, entries, u32 nkernels, entries.
 * Const entry: dtype, i32 ndim, ndim x i64 dims, u64 offset (from section start,
 * multiple of 64), u64 nbytes (= product(dims) * element bytes).
 *
 * Costs: parsing is linear in the file size (one CRC pass, one pass per section); the
 * parsed form points into the caller's bytes (which must stay alive and unchanged) and
 * copies only the bytecode (decoded to host-order int64) and the small tables.
 */
#ifndef RELAX_RXA_H
#define RELAX_RXA_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RX_RXA_MAGIC "\x89RXA\r\n\x1a\n"
#define RX_RXA_VERSION 1u
#define RX_RXA_HEADER_SIZE 40u
#define RX_RXA_SECTION_ENTRY_SIZE 24u
#define RX_RXA_ALIGN 64u
#define RX_RXA_MAX_SECTIONS 16u
#define RX_RXA_SPIRV_BUNDLE_MAGIC 0x42535852u /* "RXSB" (relax/device.h's bundle) */
#define RX_RXA_MAX_DEPTH 8u      /* tuple nesting in descriptors */
#define RX_RXA_MAX_TOKENS 64u    /* tokens in one dim expression */
#define RX_RXA_MAX_NDIM 32       /* dims of a tensor or shape */
#define RX_RXA_NONE 0xffffffffu  /* "no string" for optional name fields */

typedef enum rx_rxa_kind {
    RX_RXA_METADATA = 1,       /* JSON text for humans and the server */
    RX_RXA_STRINGS = 2,        /* string pool: names, messages */
    RX_RXA_FUNCS = 3,          /* function table + kernel table */
    RX_RXA_CODE = 4,           /* bytecode words */
    RX_RXA_CONSTS = 5,         /* constant tensors */
    RX_RXA_KERNELS_CPU = 6,    /* ELF shared object */
    RX_RXA_KERNELS_PTX = 7,    /* reserved: PTX text */
    RX_RXA_KERNELS_OPENCL = 8, /* reserved: OpenCL C source */
    RX_RXA_KERNELS_SPIRV = 9,  /* SPIR-V bundle (vulkan; with LAUNCH) */
    RX_RXA_LAUNCH = 10,        /* GPU kernels' launch records (with KERNELS_OPENCL) */
    RX_RXA_KERNELS_CUBIN = 11, /* with KERNELS_PTX: the same kernels as a cubin (ELF) for
                                  the target's arch; the runtime tries it first */
    RX_RXA_KIND_LAST = 11
} rx_rxa_kind;

/* Packed dtype: DLPack code | bits << 8 | lanes << 16 (lanes 0 is read as 1).
 * 0 means "unknown" in descriptors. */
#define RX_RXA_DTYPE(code, bits, lanes) \
    ((uint32_t)(code) | ((uint32_t)(bits) << 8) | ((uint32_t)(lanes) << 16))
#define RX_RXA_F32 RX_RXA_DTYPE(2, 32, 1)
#define RX_RXA_F64 RX_RXA_DTYPE(2, 64, 1)
#define RX_RXA_F16 RX_RXA_DTYPE(2, 16, 1)
#define RX_RXA_I32 RX_RXA_DTYPE(0, 32, 1)
#define RX_RXA_I64 RX_RXA_DTYPE(0, 64, 1)
#define RX_RXA_BOOL RX_RXA_DTYPE(1, 1, 1) /* stored as one byte per element */

typedef enum rx_rxa_tkind {
    RX_RXA_T_ANY = 0,    /* anything (coarse annotation) */
    RX_RXA_T_TENSOR = 1, /* tensor with dtype/ndim/dims */
    RX_RXA_T_SHAPE = 2,  /* first-class shape value */
    RX_RXA_T_INT = 3,    /* int64 scalar (symbolic value argument) */
    RX_RXA_T_TUPLE = 4   /* tuple of descriptors */
} rx_rxa_tkind;

typedef enum rx_rxa_tokop {
    RX_RXA_TOK_CONST = 0,    /* push arg */
    RX_RXA_TOK_VAR = 1,      /* push symbol value arg (index into the function's syms) */
    RX_RXA_TOK_ADD = 2,      /* a + b */
    RX_RXA_TOK_SUB = 3,      /* a - b */
    RX_RXA_TOK_MUL = 4,      /* a * b */
    RX_RXA_TOK_FLOORDIV = 5, /* floor(a / b) */
    RX_RXA_TOK_FLOORMOD = 6, /* a - b * floor(a / b) */
    RX_RXA_TOK_MIN = 7,      /* min(a, b) */
    RX_RXA_TOK_MAX = 8       /* max(a, b) */
} rx_rxa_tokop;

typedef struct rx_rxa_tok {
    uint32_t op; /* rx_rxa_tokop */
    int64_t arg; /* CONST: the value; VAR: the symbol index; otherwise 0 */
} rx_rxa_tok;

typedef struct rx_rxa_dim {
    uint32_t ntok;          /* 0 = unknown dim */
    const rx_rxa_tok *tok;  /* postfix tokens */
} rx_rxa_dim;

typedef struct rx_rxa_type {
    uint32_t kind;                    /* rx_rxa_tkind */
    const char *name;                 /* parameter name or NULL */
    uint32_t dtype;                   /* TENSOR: packed dtype, 0 unknown */
    int32_t ndim;                     /* TENSOR/SHAPE: -1 unknown */
    const rx_rxa_dim *dims;           /* TENSOR/SHAPE: ndim dims; INT: one (the value) */
    uint32_t nfields;                 /* TUPLE: number of fields */
    const struct rx_rxa_type *fields; /* TUPLE: the fields */
} rx_rxa_type;

typedef struct rx_rxa_func {
    const char *name;          /* function name (unique) */
    uint32_t nsym;             /* symbolic variables named by the signature */
    const char *const *syms;   /* their names; VAR tokens index this */
    uint32_t nparams;          /* parameters */
    const rx_rxa_type *params; /* parameter descriptors */
    rx_rxa_type result;        /* result descriptor */
    uint32_t nregs;            /* registers per frame (>= nparams) */
    uint32_t heap_size;        /* int64 shape-heap slots per frame */
    uint32_t code_offset;      /* first word in CODE */
    uint32_t code_words;       /* number of words */
} rx_rxa_func;

/* How one device kernel of a GPU loop function is launched (LAUNCH section). */
typedef struct rx_rxa_launch {
    const char *name;     /* the kernel's name in the source */
    uint32_t sched;       /* RX_RXA_SCHED_SINGLE, _GRID, _ROWS or _LOOP */
    uint32_t local;       /* work-items per work-group, 1..65536 (_LOOP: records in its body) */
    uint32_t local_bytes; /* local (shared) memory it declares */
    uint32_t max_groups;  /* work-groups at most, >= 1 */
    rx_rxa_dim items;     /* iterations over the kernel's ivars; 0 tokens: unknown */
} rx_rxa_launch;

#define RX_RXA_SCHED_SINGLE 0u /* one work-item runs the statement */
#define RX_RXA_SCHED_GRID 1u   /* a grid-stride loop over `items` iterations */
#define RX_RXA_SCHED_ROWS 2u   /* one work-group per item (a row, a matmul block), grid-stride over them */
#define RX_RXA_SCHED_LOOP 3u   /* a host loop: the next `local` records run `items` times, in
                                  order, each launch taking the iteration (0, 1, ...) as one
                                  more int64 argument after the symbolic values; their items
                                  may use it as variable nivars. No kernel of its own */
#define RX_RXA_MAX_LAUNCHES 1024u

typedef struct rx_rxa_kernel {
    const char *name;              /* symbol in the kernel object */
    uint32_t section;              /* rx_rxa_kind holding the object */
    uint32_t nbufs;                /* data pointers passed */
    uint32_t nivars;               /* int64 symbolic arguments passed */
    const char *const *ivar_names; /* their names, in argument order */
    uint32_t nlaunch;              /* GPU kernels: launches, in order (LAUNCH); else 0 */
    const rx_rxa_launch *launches;
} rx_rxa_kernel;

typedef struct rx_rxa_const {
    uint32_t dtype;       /* packed dtype */
    int32_t ndim;         /* >= 0 */
    const int64_t *shape; /* ndim dims, each >= 0 */
    uint64_t nbytes;      /* data size */
    const void *data;     /* 64-byte aligned when the file buffer is */
} rx_rxa_const;

typedef struct rx_rxa_section {
    uint32_t kind;       /* rx_rxa_kind */
    uint64_t offset;     /* from file start */
    uint64_t size;       /* bytes */
    const uint8_t *data; /* into the file buffer */
} rx_rxa_section;

/* A parsed artifact. Every pointer points into the file buffer or into memory owned
 * by this struct; free with rx_rxa_free. */
typedef struct rx_rxa {
    const uint8_t *bytes;             /* the file buffer (borrowed) */
    size_t size;                      /* its size */
    uint32_t version;                 /* format version read */
    uint32_t nsections;               /* sections present */
    rx_rxa_section sections[RX_RXA_MAX_SECTIONS]; /* in table order */
    uint32_t nstrings;                /* string pool size */
    const char *const *strings;       /* NUL-terminated, into the buffer */
    const uint32_t *string_lens;      /* their lengths */
    uint32_t nfuncs;                  /* function table */
    const rx_rxa_func *funcs;
    uint32_t nkernels;                /* kernel table */
    const rx_rxa_kernel *kernels;
    uint32_t nconsts;                 /* constant table */
    const rx_rxa_const *consts;
    const int64_t *code;              /* CODE decoded to host order */
    size_t ncode;                     /* words */
    void *arena_;                     /* private: owned allocations */
} rx_rxa;

/* ---- reading ---- */

/* Parses and validates an artifact held in bytes[0..n). `what` names it in messages
 * ("model.rxa"). On success returns 0 and *out (free with rx_rxa_free); the buffer must
 * outlive *out. On failure returns -1, *out = NULL, and err holds one line such as
 * "model.rxa: truncated: section CODE ends at byte 4096 of 1200". Never reads outside
 * the buffer. Does not verify bytecode (rx_vm_verify does). */
int rx_rxa_parse(const uint8_t *bytes, size_t n, const char *what, rx_rxa **out,
                 char *err, size_t errlen);

/* Frees a parsed artifact (not the file buffer). NULL is a no-op. */
void rx_rxa_free(rx_rxa *a);

/* The section of `kind`, or NULL when absent. */
const rx_rxa_section *rx_rxa_section_get(const rx_rxa *a, uint32_t kind);

/* The function called `name`, or NULL. Linear search. */
const rx_rxa_func *rx_rxa_find_func(const rx_rxa *a, const char *name);

/* Upper-case name of a section kind ("CODE"), "UNKNOWN" otherwise. */
const char *rx_rxa_kind_name(uint32_t kind);

/* Evaluates dim expression d given the function's symbol values (symvals[i] for syms[i];
 * known[i] nonzero when given; known may be NULL meaning all known). Returns 0 and *out,
 * or -1 with err ("unknown dim", "symbol n has no value", "division by zero",
 * "overflow"). Floor semantics for FLOORDIV/FLOORMOD. */
int rx_rxa_dim_eval(const rx_rxa_dim *d, const int64_t *symvals, const uint8_t *known,
                    uint32_t nsym, int64_t *out, char *err, size_t errlen);

/* Bytes per element of a packed dtype (bool counts one byte; 0 for dtype 0). */
size_t rx_rxa_dtype_bytes(uint32_t dtype);

/* Writes a short dtype name ("f32", "i64", "bool", "f16x4") into buf. Returns buf. */
char *rx_rxa_dtype_name(uint32_t dtype, char *buf, size_t n);

/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes continuing from crc (start with 0). */
uint32_t rx_rxa_crc32(uint32_t crc, const void *p, size_t n);

/* ---- building (used by the compiler and by tests) ---- */

typedef struct rx_rxa_builder rx_rxa_builder;

/* A new empty builder; NULL on out of memory. Free with rx_rxa_builder_free. */
rx_rxa_builder *rx_rxa_builder_new(void);
void rx_rxa_builder_free(rx_rxa_builder *b);

/* Interns s (copied); equal strings share an index. Returns the index. */
uint32_t rx_rxa_add_string(rx_rxa_builder *b, const char *s);

/* Sets METADATA to a copy of json[0..n). */
void rx_rxa_set_metadata(rx_rxa_builder *b, const char *json, size_t n);

/* Sets a raw section body (KERNELS_CPU, reserved kinds) to a copy of data[0..n).
 * Returns 0, or -1 for kinds the builder generates itself or unknown kinds. */
int rx_rxa_set_section(rx_rxa_builder *b, uint32_t kind, const void *data, size_t n);

/* Adds a constant tensor (data copied; nbytes must equal the product of the dims times
 * the element size). Returns its index for LOADK, or RX_RXA_NONE on a size mismatch. */
uint32_t rx_rxa_add_const(rx_rxa_builder *b, uint32_t dtype, int32_t ndim,
                          const int64_t *shape, const void *data, size_t nbytes);

/* Adds a kernel entry (names copied). Returns its index for CALL_KERNEL. */
uint32_t rx_rxa_add_kernel(rx_rxa_builder *b, const char *name, uint32_t section,
                           uint32_t nbufs, uint32_t nivars, const char *const *ivar_names);

/* Adds a function: the descriptor (deep-copied; code_offset/code_words are ignored and
 * set by the builder) and its code words (copied, appended to CODE). Returns its index
 * for CALL and FUNCREF. Functions may be added before the code they call is known:
 * indices are assigned in call order. */
uint32_t rx_rxa_add_function(rx_rxa_builder *b, const rx_rxa_func *desc,
                             const int64_t *code, size_t ncode);

/* Serializes everything into a fresh malloc'ed buffer (*out, *n; caller frees).
 * Returns 0, or -1 on out of memory. The builder stays usable. */
int rx_rxa_serialize(rx_rxa_builder *b, uint8_t **out, size_t *n);

/* A growable code buffer for emitting bytecode. */
typedef struct rx_rxa_code {
    int64_t *w; /* words */
    size_t n;   /* used */
    size_t cap; /* allocated */
} rx_rxa_code;

/* Appends n words; returns the index of the first (for patching jump targets). */
size_t rx_rxa_emitv(rx_rxa_code *c, const int64_t *w, size_t n);
/* RX_EMIT(&code, RX_OP_MOVE, 1, 0): appends the listed words. */
#define RX_EMIT(c, ...) \
    rx_rxa_emitv((c), (const int64_t[]){__VA_ARGS__}, \
                 sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
void rx_rxa_code_free(rx_rxa_code *c);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
