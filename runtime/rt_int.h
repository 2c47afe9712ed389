/*
 * rt_int.h — internals shared by the runtime's files (not installed).
 *
 * Object model. Every runtime object that can sit in a VM register is reference
 * counted with an atomic count (outputs may be released on another thread than the
 * one that ran the call):
 *   rx_rt_storage  a block of device memory: from the context's pool (POOL), or the
 *                  artifact buffer itself (BLOB, for constants; freeing the last
 *                  reference frees the buffer), plus the byte size.
 *   rx_rt_tensor   a DLTensor viewing a storage at byte_offset, or borrowing caller
 *                  memory (storage NULL: call inputs).
 *   rx_vm_shape    an immutable int64 vector.
 *   rx_vm_tuple    an immutable vector of values.
 * A value (rx_vm_value) is a tag plus an int64, function index or object pointer; it
 * owns one reference to its object.
 */
#ifndef RX_RT_INT_H
#define RX_RT_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/runtime.h"

/* Broken invariants (never user input): file:line and abort. */
#define RX_RT_ASSERT(c) \
    ((c) ? (void)0 : rx_rt_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void rx_rt_assert_fail(const char *cond, const char *file, int line);

/* Formats into err (NULL ok); always returns -1 for `return rx_rt_fail(...)`. */
int rx_rt_fail(rx_rt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- device memory (device_cpu.c) ---- */

#define RX_RT_NCLASS 256 /* size classes: 4 per power of two */

typedef struct rx_rt_block {
    struct rx_rt_block *next; /* free-list link (header lives in a side allocation) */
    void *data;               /* 64-byte aligned payload */
    size_t cap;               /* class size */
} rx_rt_block;

typedef struct rx_rt_pool {
    pthread_mutex_t mu;                 /* guards everything below */
    rx_rt_block *free_[RX_RT_NCLASS];   /* cached free blocks per class */
    int64_t live_bytes, peak_bytes;     /* requested bytes of live storages */
    int64_t pool_bytes;                 /* class bytes obtained from the system */
    int64_t allocs, hits;               /* counters */
    int64_t limit;                      /* max live_bytes (0 = unlimited) */
} rx_rt_pool;

void rx_rt_pool_init(rx_rt_pool *p);
void rx_rt_pool_destroy(rx_rt_pool *p);
/* A block of at least nbytes (64-byte aligned), NULL on OOM. */
rx_rt_block *rx_rt_pool_get(rx_rt_pool *p, size_t nbytes);
/* Gives a block back (cached for reuse); `requested` is what was asked for. */
void rx_rt_pool_put(rx_rt_pool *p, rx_rt_block *b, size_t requested);
void rx_rt_pool_trim(rx_rt_pool *p);
/* Sets peak to the current live bytes; returns the live bytes. */
int64_t rx_rt_pool_reset_peak(rx_rt_pool *p);

/* ---- the context ---- */

typedef struct rx_rt_libentry {
    char *name;                          /* registered name (owned) */
    rx_rt_libfn fn;                      /* the function */
    const char *(*strerr)(int32_t code); /* optional message for return codes */
} rx_rt_libentry;

struct rx_rt_ctx {
    rx_rt_pool pool;              /* CPU memory */
    pthread_mutex_t lib_mu;       /* guards the registry */
    rx_rt_libentry *libs;         /* library registry */
    size_t nlibs, clibs;
    int max_depth;                /* VM frame limit */
    _Atomic int64_t kernel_calls; /* totals */
    _Atomic int64_t library_calls;
};

/* Copies the registry entry for name into *out; -1 when absent. */
int rx_rt_lib_find(rx_rt_ctx *ctx, const char *name, rx_rt_libentry *out);
/* Registers the built-ins (library.c). Returns 0 or -1 on OOM. */
int rx_rt_lib_builtins(rx_rt_ctx *ctx);
/* Closes libraries opened by the built-ins. */
void rx_rt_lib_close(rx_rt_ctx *ctx);

/* ---- storage and tensors (tensor.c) ---- */

typedef enum { RX_STORAGE_POOL, RX_STORAGE_BLOB } rx_rt_storage_kind;

typedef struct rx_rt_storage {
    _Atomic int32_t refs;  /* references */
    int kind;              /* rx_rt_storage_kind */
    rx_rt_ctx *ctx;        /* owning context (POOL) */
    rx_rt_block *block;    /* POOL: the block */
    void *data;            /* first byte */
    size_t nbytes;         /* usable (requested) bytes */
} rx_rt_storage;

struct rx_rt_tensor {
    _Atomic int32_t refs;           /* references */
    DLTensor dl;                    /* the view; dl.shape points at shape_ */
    rx_rt_storage *storage;         /* NULL: borrowed memory */
    int64_t shape_[RX_RXA_MAX_NDIM]; /* dims */
};

rx_rt_storage *rx_rt_storage_new(rx_rt_ctx *ctx, size_t nbytes);
/* A BLOB storage owning `buf` (freed with free() by the last release). */
rx_rt_storage *rx_rt_storage_blob(void *buf, size_t nbytes);
void rx_rt_storage_retain(rx_rt_storage *s);
void rx_rt_storage_release(rx_rt_storage *s);
/* A tensor viewing s at offset (retains s); NULL with err when it does not fit. */
rx_rt_tensor *rx_rt_tensor_view(rx_rt_storage *s, size_t offset, DLDataType dtype,
                                int32_t ndim, const int64_t *shape, rx_rt_err *err);
/* A tensor borrowing dl's memory and copying its shape. NULL with err when dl is not a
 * compact CPU tensor. */
rx_rt_tensor *rx_rt_tensor_borrow(const DLTensor *dl, rx_rt_err *err);
/* Bytes of a dense tensor, -1 on overflow or negative dims. */
int64_t rx_rt_dense_bytes(DLDataType dtype, int32_t ndim, const int64_t *shape);
DLDataType rx_rt_dtype_unpack(uint32_t packed);
uint32_t rx_rt_dtype_pack(DLDataType t);

/* ---- values (vm_value.c) ---- */

typedef enum rx_vm_kind {
    RX_V_NONE = 0, RX_V_INT, RX_V_TENSOR, RX_V_SHAPE, RX_V_TUPLE, RX_V_STORAGE, RX_V_FUNC
} rx_vm_kind;

struct rx_vm_shape;
struct rx_vm_tuple;

typedef struct rx_vm_value {
    int kind; /* rx_vm_kind */
    union {
        int64_t i;                 /* INT */
        uint32_t f;                /* FUNC: function index in its module */
        rx_rt_tensor *t;           /* TENSOR */
        struct rx_vm_shape *s;     /* SHAPE */
        struct rx_vm_tuple *tu;    /* TUPLE */
        rx_rt_storage *st;         /* STORAGE */
    } u;
} rx_vm_value;

typedef struct rx_vm_shape {
    _Atomic int32_t refs; /* references */
    int32_t ndim;         /* dims */
    int64_t dims[];       /* values */
} rx_vm_shape;

typedef struct rx_vm_tuple {
    _Atomic int32_t refs; /* references */
    uint32_t n;           /* fields */
    rx_vm_value v[];      /* owned values */
} rx_vm_tuple;

void rx_vm_value_retain(const rx_vm_value *v);
void rx_vm_value_release(rx_vm_value *v); /* and sets it to none */
rx_vm_shape *rx_vm_shape_new(int32_t ndim);
rx_vm_tuple *rx_vm_tuple_new(uint32_t n);
/* "a tuple", "an int", ... for messages. */
const char *rx_vm_kind_desc(int kind);

/* ---- modules (runtime.c) and the interpreter (vm.c) ---- */

struct rx_rt_module {
    rx_rt_ctx *ctx;               /* the context it was loaded into */
    rx_rxa *a;                    /* parsed artifact */
    rx_rt_storage *blob;          /* the artifact bytes (constants view it) */
    rx_rt_tensor **consts;        /* one tensor per constant */
    void *kernel_so;              /* dlopen handle or NULL */
    int kernel_fd;                /* memfd kept open while loaded (-1 none) */
    void **kernel_fn;             /* resolved kernel symbols, by kernel index */
    rx_rt_libentry *libs;         /* by string index: CALL_LIB targets (fn NULL: unused) */
};

/* Loads the KERNELS_CPU object of m and resolves every kernel (kernels.c). */
int rx_rt_kernels_load(rx_rt_module *m, rx_rt_err *err);
void rx_rt_kernels_unload(rx_rt_module *m);

/* Runs function fn with args (ownership of the values stays with the caller; they are
 * retained as needed). On success stores the result in *ret (caller releases) and
 * returns 0; on failure -1 with err. Adds the calls it made to *kernels and *libcalls. */
int rx_vm_run(rx_rt_module *m, uint32_t fn, const rx_vm_value *args, uint32_t nargs,
              rx_vm_value *ret, int64_t *kernels, int64_t *libcalls, rx_rt_err *err);

#endif
