/*
 * target.h — compilation targets: `KIND[,key=value]...` (library rxsupport).
 *
 * A target names what the compiler generates code for and the limits its schedules
 * must respect. It is written as a kind followed by options, e.g.
 *
 *     cpu      opencl      vulkan,max_threads=128      cuda,arch=sm_90,tile=32
 *
 * The kinds and their options, each with its default and range (the one table is in
 * compiler/driver/target.c; docs/gpu.md "Targets" lists it for users):
 *
 *   kind    option           default  range            meaning
 *   cpu     (none)
 *   opencl  max_threads      256      1..4096, 2^k     work-items per work-group
 *           max_local_bytes  32768    1024..1048576    __local bytes per work-group
 *           tile             16       1..32, 2^k       matmul tile edge (tile^2 threads)
 *           clblast          0        0..1             1: library-lowered matmuls call CLBlast
 *   vulkan  max_threads      256      1..1024, 2^k     invocations per work-group
 *           max_local_bytes  16384    1024..65536      shared bytes per work-group
 *           max_push_bytes   128      128..256         push-constant bytes (scalars)
 *           tile             16       1..32, 2^k       matmul tile edge (tile^2 threads)
 *   cuda    arch             sm_80    sm_NN / sm_NNN   GPU architecture
 *           max_threads      256      1..1024, 2^k     threads per block
 *           max_local_bytes  49152    1024..232448     shared bytes per block
 *           tile             16       1..32, 2^k       matmul tile edge (tile^2 threads)
 *
 * Every target must also satisfy tile * tile <= max_threads (a matmul tile is one
 * work-group): a tile left at its default is halved until it fits ("vulkan,max_threads=64"
 * means tile 8 and normalizes to "vulkan,max_threads=64,tile=8"); a given tile must fit. The normalized form, written by rx_target_parse into rx_target.norm, is
 * the kind followed by the options that differ from their defaults, in the table's
 * order: "opencl,max_threads=256" normalizes to "opencl", "cuda,tile=8,arch=sm_90" to
 * "cuda,arch=sm_90,tile=8". It is what the cache key is salted with, what the artifact's
 * metadata records as "target" (with every value in "target_options") and what relaxd
 * stores; so two spellings of one target share a key and two targets never do.
 *
 * Whether this build of the compiler can generate code for a kind is a separate
 * question (rx_target_available): a valid target of an unavailable kind is refused
 * with the reason when a build starts.
 *
 * Thread safety: everything here is pure (constant tables, caller-owned results).
 */
#ifndef RELAX_TARGET_H
#define RELAX_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/support.h"

typedef enum rx_target_kind {
    RX_TARGET_CPU,
    RX_TARGET_OPENCL,
    RX_TARGET_VULKAN,
    RX_TARGET_CUDA,
    RX_TARGET_NKINDS
} rx_target_kind;

#define RX_TARGET_MAX_OPTS 6   /* options of one kind, at most */
#define RX_TARGET_STR_MAX 128  /* a normalized target with its NUL always fits */
#define RX_TARGET_SVAL_MAX 16  /* a string option's value with its NUL */

/* One option of a kind: integer (choices NULL) or a string matched by check_str. */
typedef struct rx_target_opt {
    const char *name;      /* "max_threads" */
    const char *doc;       /* one line for users (GET /v1/targets, docs) */
    int64_t def, min, max; /* integer options: default and inclusive range */
    bool pow2;             /* integer options: must be a power of two */
    const char *sdef;      /* string options: the default ("sm_80"); NULL: integer */
    const char *spattern;  /* string options: what values look like, for messages */
} rx_target_opt;

/* A parsed target: every option's value (defaults filled) and the normalized text. */
typedef struct rx_target {
    rx_target_kind kind;
    int64_t v[RX_TARGET_MAX_OPTS];                   /* integer options, table order */
    char s[RX_TARGET_MAX_OPTS][RX_TARGET_SVAL_MAX];  /* string options, table order */
    char norm[RX_TARGET_STR_MAX];                    /* normalized form (header essay) */
} rx_target;

/* The name of kind k ("cpu", "opencl", "vulkan", "cuda"); NULL out of range. */
const char *rx_target_kind_name(rx_target_kind k);

/* The number of options of kind k and option i of it (NULL out of range). */
int rx_target_nopts(rx_target_kind k);
const rx_target_opt *rx_target_opt_at(rx_target_kind k, int i);

/* Parses text (NULL or "": "cpu") into *t. Returns false with one diagnostic in d
 * (path "target") naming the problem: an unknown kind (listing the known ones), an
 * unknown option of the kind (listing its options), a value that is not a decimal
 * integer, out of range or not a power of two, a string value of the wrong form, a
 * repeated option, an empty key or value, tile * tile > max_threads. */
bool rx_target_parse(const char *text, rx_target *t, rx_diags *d);

/* The value of integer option name of t; RX_ASSERTs that t's kind has it. */
int64_t rx_target_int(const rx_target *t, const char *name);

/* The value of string option name of t; RX_ASSERTs that t's kind has it. */
const char *rx_target_str(const rx_target *t, const char *name);

/* Whether this compiler can generate code for kind k. When not, writes why into
 * why[0..cap): the toolchain it lacks ("no NVRTC for cuda: cannot load ...", "built
 * without libshaderc") or, for a kind out of range, that it is unknown. */
bool rx_target_available(rx_target_kind k, char *why, size_t cap);

#endif
