/*
 * spirv_reflect.h — what a SPIR-V compute module declares, read by the Vulkan device
 * (device_vulkan.c) before the driver sees the module (spirv_reflect.c).
 *
 * Internal to rxrt. The Vulkan launch ABI (device.h) is checked against it: storage
 * buffers in set 0 at bindings 0..nbuf-1, one push-constant block, the work-group size
 * fixed or given by specialization constants, the shared memory the work-group needs,
 * the capabilities the device must have.
 */
#ifndef RX_SPIRV_REFLECT_H
#define RX_SPIRV_REFLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/runtime.h"

#define RX_SPV_MAGIC 0x07230203u
#define RX_SPV_MAX_CAPS 32
#define RX_SPV_MAX_BUFS 64
#define RX_SPV_MAX_PUSH 64

typedef struct rx_spv_info {
    uint32_t version;              /* the module's SPIR-V version (0x00010300: 1.3) */
    int nbuf;                      /* storage buffers: set 0, bindings 0..nbuf-1 */
    int64_t push_bytes;            /* bytes of the push-constant block, 0 when none */
    int npush;                     /* its members, by index: -1 when not all are scalars */
    int32_t push_off[RX_SPV_MAX_PUSH];  /* member i's Offset */
    uint8_t push_size[RX_SPV_MAX_PUSH]; /* its bytes: 4 or 8 */
    uint8_t push_kind[RX_SPV_MAX_PUSH]; /* 'i' signed int, 'u' unsigned int, 'f' float */
    uint32_t local[3];             /* work-group size (spec defaults when specializable) */
    int32_t spec_id[3];            /* specialization id of each dimension, -1: fixed */
    int64_t shared_bytes;          /* Workgroup variables' bytes at `local` */
    bool shared_unknown;           /* some Workgroup variable could not be sized */
    uint32_t caps[RX_SPV_MAX_CAPS]; /* OpCapability operands (first RX_SPV_MAX_CAPS) */
    int ncaps;
} rx_spv_info;

/* Reads module w[0..n) (host-endian words) for its GLCompute entry point `entry`.
 * local, when not NULL, is the work-group size to size shared memory at (the
 * specializable dimensions take it; fixed ones keep theirs). Returns 0, or -1 with err
 * ("malformed SPIR-V: ...", "no GLCompute entry point main", "storage buffer bindings
 * must be 0..n-1 in set 0 (binding 3 in set 1)", "uses a uniform buffer: ..."). */
int rx_spv_reflect(const uint32_t *w, size_t n, const char *entry, const uint32_t *local,
                   rx_spv_info *out, rx_rt_err *err);

/* Whether the module w[0..n) has a GLCompute entry point named `entry`. */
bool rx_spv_has_entry(const uint32_t *w, size_t n, const char *entry);

#endif
