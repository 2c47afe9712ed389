/*
 * codegen_math.h — math the generated kernels compute with their own code instead of
 * libm, in one source for both places that must agree bit for bit: the C kernels (the
 * prelude of compiler/codegen/c_expr.c pastes RX_EXPF_SOURCE as text) and evaluators
 * of loop functions in the compiler (compiler/interp/tir_eval*.c, whose constant folding
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
 *   rx_erff_ref(x)  erf in float, odd (the sign bit of x copied onto erf(|x|)), three
 *                   pieces picked by selects on the bits of a = |x| (every piece is
 *                   computed; no branch): a < 0.84375: a + a * R(a^2), R of degree 6
 *                   (erf(a) / a - 1: the leading a is exact, so the rounding of R is
 *                   scaled down); a < 1.25: erf(1) rounded to float + P(a - 1), P of
 *                   degree 7 (a - 1 exact); else 1 - e^(-a^2) Q(a - 2.585), Q of degree
 *                   10 fitting erfc(a) e^(a^2) on [1.25, 3.92] (the exp is rx_expf), a
 *                   clamped to 3.92 beyond which erf rounds to 1. Coefficients: Lawson
 *                   minimax fits in double, rounded to float. NaN gives NaN, +-inf +-1,
 *                   -0 -0. Measured: at most 0.97 ulp from erf in double.
 *   rx_tanhf_ref(x) odd; a = |x| < 0.625: a + a z P(z), z = a^2, P Cephes' degree 4;
 *                   else 1 - 2 / (e^(2a) + 1) with rx_expf (inf past 44: 1).
 *                   NaN gives NaN, -0 -0. Measured: at most 1.3 ulp from tanh in double.
 *   rx_logf_ref(x)  subnormals scaled by 2^23 first; x = 2^k m with m in [sqrt(2)/2,
 *                   sqrt(2)) from the bits, f = m - 1 (exact), log(1 + f) by Cephes'
 *                   degree-8 polynomial, k ln 2 added in two parts. Selects on the bits
 *                   give +-0 -> -inf, x < 0 -> NaN, +inf -> +inf, NaN -> NaN. Measured:
 *                   at most 0.80 ulp from log in double.
 * The "measured" bounds are over every 61st (tanh, log) or 31st (erf) float bit pattern
 * (tests/unit/codegen/test_transcend.c samples 2^18 inputs with the edges and asserts
 * a 2-ulp limit). At O3 the kernels' ISA versions may contract a * b + c
 * into fused multiply-adds (one rounding instead of two), which the same test bounds.
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

#define RX_ERFF_SOURCE(SPEC, NAME, EXPF)                                                          \
    SPEC float NAME(float x)                                                                      \
    {                                                                                             \
        uint32_t xb;                                                                              \
        memcpy(&xb, &x, 4);                                                                       \
        uint32_t sign = xb & 0x80000000u, ab = xb & 0x7fffffffu;                                  \
        uint32_t big = 0u - (uint32_t)(ab - 0x407ae148u - 1u < 0x7f800000u - 0x407ae148u);        \
        ab = (ab & ~big) | (0x407ae148u & big);                                                   \
        float a;                                                                                  \
        memcpy(&a, &ab, 4);                                                                       \
        float z = a * a;                                                                          \
        float p = 8.897523956e-05f;                                                               \
        p = p * z + -8.256813642e-04f;                                                            \
        p = p * z + 5.210256636e-03f;                                                             \
        p = p * z + -2.686281907e-02f;                                                            \
        p = p * z + 1.128375250e-01f;                                                             \
        p = p * z + -3.761263718e-01f;                                                            \
        p = p * z + 1.283791670e-01f;                                                             \
        float ys = a + a * p;                                                                     \
        float s = a - 1.0f;                                                                       \
        float m = 1.309486268e-02f;                                                               \
        m = m * s + 4.535561355e-03f;                                                             \
        m = m * s + -6.909186334e-02f;                                                            \
        m = m * s + 6.918252604e-02f;                                                             \
        m = m * s + 1.383678953e-01f;                                                             \
        m = m * s + -4.151074669e-01f;                                                            \
        m = m * s + 4.151075020e-01f;                                                             \
        m = m * s + 1.347116372e-08f;                                                             \
        float ym = 8.427007794e-01f + m;                                                          \
        float t = a - 2.585f;                                                                     \
        float q = 1.132180130e-06f;                                                               \
        q = q * t + -4.642115211e-06f;                                                            \
        q = q * t + 1.262599989e-05f;                                                             \
        q = q * t + -4.669319447e-05f;                                                            \
        q = q * t + 1.792703550e-04f;                                                             \
        q = q * t + -6.362383113e-04f;                                                            \
        q = q * t + 2.176899115e-03f;                                                             \
        q = q * t + -7.212698641e-03f;                                                            \
        q = q * t + 2.300018373e-02f;                                                             \
        q = q * t + -7.027549921e-02f;                                                            \
        q = q * t + 2.046622292e-01f;                                                             \
        float yb = 1.0f - EXPF(-z) * q;                                                           \
        uint32_t sb, mb, bb;                                                                      \
        memcpy(&sb, &ys, 4);                                                                      \
        memcpy(&mb, &ym, 4);                                                                      \
        memcpy(&bb, &yb, 4);                                                                      \
        uint32_t ks = 0u - (uint32_t)(ab < 0x3f580000u), km = 0u - (uint32_t)(ab < 0x3fa00000u);  \
        uint32_t r = ((sb & ks) | (mb & km & ~ks) | (bb & ~km)) | sign;                           \
        float y;                                                                                  \
        memcpy(&y, &r, 4);                                                                        \
        return y;                                                                                 \
    }

#define RX_TANHF_SOURCE(SPEC, NAME, EXPF)                                               \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        uint32_t xb;                                                                    \
        memcpy(&xb, &x, 4);                                                             \
        uint32_t sign = xb & 0x80000000u, ab = xb & 0x7fffffffu;                        \
        float a;                                                                        \
        memcpy(&a, &ab, 4);                                                             \
        float z = x * x;                                                                \
        float p = -5.70498872745e-3f;                                                   \
        p = p * z + 2.06390887954e-2f;                                                  \
        p = p * z + -5.37397043740e-2f;                                                 \
        p = p * z + 1.33314422036e-1f;                                                  \
        p = p * z + -3.33332819422e-1f;                                                 \
        float ys = a + a * (z * p);                                                       \
        float yb = 1.0f - 2.0f / (EXPF(a + a) + 1.0f);                                  \
        uint32_t sb, bb;                                                                \
        memcpy(&sb, &ys, 4);                                                            \
        memcpy(&bb, &yb, 4);                                                            \
        uint32_t ks = 0u - (uint32_t)(ab < 0x3f200000u);                                \
        uint32_t r = ((sb & ks) | (bb & ~ks)) | sign;                                     \
        float y;                                                                        \
        memcpy(&y, &r, 4);                                                              \
        return y;                                                                       \
    }

#define RX_LOGF_SOURCE(SPEC, NAME)                                                      \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        uint32_t ix;                                                                    \
        memcpy(&ix, &x, 4);                                                             \
        uint32_t sub = 0u - (uint32_t)(ix - 1u < 0x007fffffu);                          \
        float xs = x * 8388608.0f;                                                      \
        uint32_t sbits;                                                                 \
        memcpy(&sbits, &xs, 4);                                                         \
        uint32_t u = (ix & ~sub) | (sbits & sub);                                       \
        uint32_t d = u - 0x3f3504f3u;                                                   \
        int32_t k = (int32_t)(d & 0xff800000u) / 8388608 - (int32_t)(sub & 23u);        \
        uint32_t mb = (d & 0x007fffffu) + 0x3f3504f3u;                                  \
        float m;                                                                        \
        memcpy(&m, &mb, 4);                                                             \
        float f = m - 1.0f;                                                             \
        float e = (float)k;                                                             \
        float z = f * f;                                                                \
        float p = 7.0376836292e-2f;                                                     \
        p = p * f + -1.1514610310e-1f;                                                  \
        p = p * f + 1.1676998740e-1f;                                                   \
        p = p * f + -1.2420140846e-1f;                                                  \
        p = p * f + 1.4249322787e-1f;                                                   \
        p = p * f + -1.6668057665e-1f;                                                  \
        p = p * f + 2.0000714765e-1f;                                                   \
        p = p * f + -2.4999993993e-1f;                                                  \
        p = p * f + 3.3333331174e-1f;                                                   \
        float y = p * f * z;                                                            \
        y = y + e * -2.12194440e-4f;                                                    \
        y = y - 0.5f * z;                                                               \
        float r = f + y;                                                                \
        r = r + e * 0.693359375f;                                                       \
        uint32_t rb;                                                                    \
        memcpy(&rb, &r, 4);                                                             \
        uint32_t kn = 0u - (uint32_t)(ix - 0x7f800000u < 0x00800000u);                  \
        uint32_t kneg = 0u - (uint32_t)(ix > 0x80000000u);                              \
        uint32_t kz = 0u - (uint32_t)((ix & 0x7fffffffu) == 0u);                        \
        rb = (rb & ~kn) | (ix & kn);                                                    \
        rb = (rb & ~kneg) | (0x7fc00000u & kneg);                                       \
        rb = (rb & ~kz) | (0xff800000u & kz);                                           \
        float y2;                                                                       \
        memcpy(&y2, &rb, 4);                                                            \
        return y2;                                                                      \
    }

#define RX_MATH_STR_(...) #__VA_ARGS__
/* The text of a definition, for pasting into generated C (one line). */
#define RX_MATH_STR(...) RX_MATH_STR_(__VA_ARGS__)

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
RX_EXPF_SOURCE(static inline, rx_expf_ref)
RX_ERFF_SOURCE(static inline, rx_erff_ref, rx_expf_ref)
RX_TANHF_SOURCE(static inline, rx_tanhf_ref, rx_expf_ref)
RX_LOGF_SOURCE(static inline, rx_logf_ref)

#endif
