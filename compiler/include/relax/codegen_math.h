/*
 * codegen_math.h — math the generated kernels compute with their own code instead of
 * libm, in one source for both places that must agree bit for bit: the C kernels (the
 * prelude of compiler/codegen/c_expr.c pastes RX_EXPF_SOURCE as text) and evaluators
 * of loop functions in the compiler (compiler/pass/tir_eval*.c, whose constant folding
 * promises what the kernel would write), which call rx_expf_ref.
 *
 *   rx_expf_ref(x)  e^x in float: n = round(x / ln 2) by the 1.5 * 2^23 trick,
 *                   r = x - n ln 2 in two parts (Cody-Waite), Cephes' degree-6
 *                   polynomial for e^r, then two exact scalings by powers of two (a
 *                   subnormal result is rounded once). The clamp of x to [-104, 89]
 *                   and its selects work on the bits, so there is no branch and no
 *                   floating-point comparison (which gcc does not if-convert under the
 *                   default trapping math): it vectorizes inside `omp simd` loops,
 *                   where libm's expf is a call per element. NaN passes the clamp and
 *                   gives NaN; x > 88.73 gives inf, x < -103.98 gives 0. Over all 2^32
 *                   inputs: at most 0.99 ulp from e^x, infinities, zeros and NaNs
 *                   exact (tests/unit/codegen/test_expf.c samples a million).
 *
 * Both copies are compiled without contraction (-std=c11 with gcc; the #pragma below
 * for clang), so they round identically.
 */
#ifndef RELAX_CODEGEN_MATH_H
#define RELAX_CODEGEN_MATH_H

#include <stdint.h>
#include <string.h>

/* The definition of `float NAME(float x)` with storage class SPEC. */
#define RX_EXPF_SOURCE(SPEC, NAME)                                                        \
    SPEC float NAME(float x)                                                              \
    {                                                                                     \
        uint32_t xb;                                                                      \
        memcpy(&xb, &x, 4);                                                               \
        uint32_t hi = 0u - (uint32_t)(xb - 0x42b20001u < 0x7f800000u - 0x42b20000u);      \
        xb = (xb & ~hi) | (0x42b20000u & hi);                                             \
        uint32_t lo = 0u - (uint32_t)(xb - 0xc2d00001u < 0xff800000u - 0xc2d00000u);      \
        xb = (xb & ~lo) | (0xc2d00000u & lo);                                             \
        float xc;                                                                         \
        memcpy(&xc, &xb, 4);                                                              \
        float t = xc * 1.44269504088896341f + 12582912.0f;                                \
        float fn = t - 12582912.0f;                                                       \
        uint32_t tb;                                                                      \
        memcpy(&tb, &t, 4);                                                               \
        int32_t n = (int32_t)(tb - 0x4b400000u);                                          \
        float r = xc - fn * 0.693359375f;                                                 \
        r = r - fn * -2.12194440e-4f;                                                     \
        float p = 1.9875691500e-4f;                                                       \
        p = p * r + 1.3981999507e-3f;                                                     \
        p = p * r + 8.3334519073e-3f;                                                     \
        p = p * r + 4.1665795894e-2f;                                                     \
        p = p * r + 1.6666665459e-1f;                                                     \
        p = p * r + 5.0000001201e-1f;                                                     \
        float y = p * (r * r) + r + 1.0f;                                                 \
        int32_t h = n / 2;                                                                \
        uint32_t b1 = (uint32_t)(h + 127) << 23, b2 = (uint32_t)(n - h + 127) << 23;      \
        float s1, s2;                                                                     \
        memcpy(&s1, &b1, 4);                                                              \
        memcpy(&s2, &b2, 4);                                                              \
        return y * s1 * s2;                                                               \
    }

#define RX_MATH_STR_(...) #__VA_ARGS__
/* The text of a definition, for pasting into generated C (one line). */
#define RX_MATH_STR(...) RX_MATH_STR_(__VA_ARGS__)

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
RX_EXPF_SOURCE(static inline, rx_expf_ref)

#endif
