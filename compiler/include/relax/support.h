/*
 * support.h — the compiler's own base: dtypes, on top of the base library (base.h:
 * arenas, buffers, diagnostics, hashing, base64) that every component shares.
 */
#ifndef RELAX_SUPPORT_H
#define RELAX_SUPPORT_H

#include "relax/base.h"

/* ---- dtypes ---- */
typedef enum rx_dtype {
    RX_DT_UNKNOWN = 0,
    RX_DT_BOOL,
    RX_DT_I8, RX_DT_I16, RX_DT_I32, RX_DT_I64,
    RX_DT_U8, RX_DT_U16, RX_DT_U32, RX_DT_U64,
    RX_DT_F16, RX_DT_BF16, RX_DT_F32, RX_DT_F64,
    RX_DT_COUNT
} rx_dtype;

const char *rx_dtype_name(rx_dtype t);            /* "f32"; "?" for unknown */
bool rx_dtype_parse(const char *s, rx_dtype *out); /* short names and aliases (float32) */
int rx_dtype_bits(rx_dtype t);                    /* 0 for unknown; bool is 8 in memory */
bool rx_dtype_is_float(rx_dtype t);
bool rx_dtype_is_int(rx_dtype t);                 /* signed or unsigned integer, not bool */
bool rx_dtype_is_uint(rx_dtype t);

#endif
