/*
 * dtype.c — element types: names, aliases, sizes, classes.
 */
#include "relax/support.h"

#include <string.h>

static const struct {
    const char *name;  /* canonical short name */
    const char *alias; /* TVM / NumPy long name */
    int bits;          /* storage bits (bool is a byte) */
} dtypes[RX_DT_COUNT] = {
    [RX_DT_UNKNOWN] = {"?", NULL, 0},
    [RX_DT_BOOL] = {"bool", "bool", 8},
    [RX_DT_I8] = {"i8", "int8", 8},      [RX_DT_I16] = {"i16", "int16", 16},
    [RX_DT_I32] = {"i32", "int32", 32},  [RX_DT_I64] = {"i64", "int64", 64},
    [RX_DT_U8] = {"u8", "uint8", 8},     [RX_DT_U16] = {"u16", "uint16", 16},
    [RX_DT_U32] = {"u32", "uint32", 32}, [RX_DT_U64] = {"u64", "uint64", 64},
    [RX_DT_F16] = {"f16", "float16", 16}, [RX_DT_BF16] = {"bf16", "bfloat16", 16},
    [RX_DT_F32] = {"f32", "float32", 32}, [RX_DT_F64] = {"f64", "float64", 64},
};

const char *rx_dtype_name(rx_dtype t)
{
    return (unsigned)t < RX_DT_COUNT ? dtypes[t].name : "?";
}

bool rx_dtype_parse(const char *s, rx_dtype *out)
{
    for (int i = 1; i < RX_DT_COUNT; i++) {
        if (!strcmp(s, dtypes[i].name) || (dtypes[i].alias && !strcmp(s, dtypes[i].alias))) {
            *out = (rx_dtype)i;
            return true;
        }
    }
    return false;
}

int rx_dtype_bits(rx_dtype t)
{
    return (unsigned)t < RX_DT_COUNT ? dtypes[t].bits : 0;
}

bool rx_dtype_is_float(rx_dtype t)
{
    return t == RX_DT_F16 || t == RX_DT_BF16 || t == RX_DT_F32 || t == RX_DT_F64;
}

bool rx_dtype_is_int(rx_dtype t)
{
    return t >= RX_DT_I8 && t <= RX_DT_U64;
}

bool rx_dtype_is_uint(rx_dtype t)
{
    return t >= RX_DT_U8 && t <= RX_DT_U64;
}
