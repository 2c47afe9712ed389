/*
 * half.h — IEEE binary16 from binary32, round to nearest even, in one place for the
 * compiler (relax-json constants) and the runtime's tools (inputs of f16 tensors), which
 * must agree bit for bit. Header-only (static inline): nothing to link.
 *
 *   rx_f32_to_f16(f)  overflow gives infinity, NaN stays a (quiet) NaN, values below the
 *                     smallest subnormal give a signed zero
 */
#ifndef RELAX_HALF_H
#define RELAX_HALF_H


/* The runtime's public API: exported from librelaxrt.so (everything else is
 * compiled with -fvisibility=hidden). */
#pragma GCC visibility push(default)
#include <stdint.h>
#include <string.h>

static inline uint16_t rx_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

#pragma GCC visibility pop
#endif
