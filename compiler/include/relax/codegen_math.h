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
 *                   subnormal result is rounded once; n halved by a floor). The clamp
 *                   of x to 89 above, and below -104 (where e^x rounds to +0) e^0
 *                   computed and +0 selected instead (a scaling to +0 through the
 *                   subnormal range took a microcode assist per lane: a softmax after a
 *                   causal mask, half its exps at -1e9, ran 2x slower than without the
 *                   mask), and its selects work on the bits, so there is
 *                   no branch and no floating-point comparison (which gcc does not
 *                   if-convert under the default trapping math): it vectorizes inside
 *                   `omp simd` loops,
 *                   where libm's expf is a call per element. NaN passes the clamp and
 *                   gives NaN; x > 88.73 gives inf, x < -103.98 gives 0. Over all 2^32
 *                   inputs: at most 0.99 ulp from e^x, infinities, zeros and NaNs
 *                   exact (tests/unit/codegen/test_expf.c samples a million).
 *
 *   rx_expf_normal_ref(x)  e^x for x in [-87, 88] (normal results) only: rx_expf's
 *                   steps without the clamp, one scaling (n added to the exponent
 *                   bits), the polynomial by Estrin's scheme (shorter dependency chains
 *                   than Horner's; vector units are latency-bound on these loops).
 *                   Used inside erf and tanh, whose arguments are clamped first; NaN
 *                   and other x give garbage there, which the callers never select.
 *
 *   rx_erff_ref(x)  erf in float, odd (the sign bit of x copied onto erf(|x|)), two
 *                   pieces picked by selects on the bits of a = |x| (both computed; no
 *                   branch): a < 0.84375: a + a * R(a^2), R of degree 6 (erf(a) / a - 1:
 *                   the leading a is exact, so the rounding of R is scaled down); else
 *                   1 - e^h(a), h of degree 7 in a - 0.84375 fitting log(erfc(a)) on
 *                   [0.84375, 3.92] with weight erfc(a) (the error it makes in erf)
 *                   plus a floor (relative accuracy where erf nears 1),
 *                   the exp rx_expf_normal; a is clamped to 3.92 beyond which erf
 *                   rounds to 1. Both polynomials by Estrin's scheme. Coefficients:
 *                   Lawson minimax fits in double, rounded to float. NaN (sent to the
 *                   first piece) gives NaN, +-inf +-1, -0 -0. Measured: at most 1.41
 *                   ulp from erf in double over all floats of [0.5, 4), where the
 *                   largest errors are (1.35 with contraction), and every 5th float.
 *                   Some 70 vector instructions per 8 lanes, half of the three-piece
 *                   form this replaced (1 - e^(-a^2) Q(a) with the full rx_expf).
 *   rx_tanhf_ref(x) odd; a = |x| < 0.625: a + a z P(z), z = a^2, P Cephes' degree 4;
 *                   else 1 - 2 / (e^(2a) + 1), a clamped to 9.1 (tanh rounds to 1
 *                   beyond) so rx_expf_normal serves. NaN (first piece) gives NaN, -0
 *                   -0. Measured: at most 1.33 ulp from tanh in double.
 *   rx_logf_ref(x)  subnormals scaled by 2^23 first; x = 2^k m with m in [sqrt(2)/2,
 *                   sqrt(2)) from the bits, f = m - 1 (exact), log(1 + f) by Cephes'
 *                   degree-8 polynomial (Estrin's scheme), k ln 2 added in two parts.
 *                   Selects on the bits give +-0 -> -inf, x < 0 -> NaN, +inf -> +inf,
 *                   NaN -> NaN. Measured: at most 0.85 ulp from log in double.
 * The other "measured" bounds are over every 5th (tanh, erf) or 13th (log) float bit
 * pattern; tests/unit/codegen/test_transcend.c checks 2^17 inputs over all floats,
 * every 256th float of [0.5, 4) where the pieces meet, and the edges, asserting a
 * 2-ulp limit. At O3 the kernels' ISA versions may contract a * b + c into fused
 * multiply-adds (one rounding instead of two), which the same test bounds.
 *
 * Both copies are compiled without contraction (-std=c11 with gcc; the #pragma below
 * for clang), so they round identically.
 */
#ifndef RELAX_CODEGEN_MATH_H
#define RELAX_CODEGEN_MATH_H

#include <stdint.h>
#include <string.h>

/* The range reduction both exps share: n = round(X / ln 2) (t's low bits; n as unsigned,
 * wrapping), r = X - n ln 2 in two parts (Cody-Waite). */
#define RX_EXPF_REDUCE_(X)                                                                \
    float t = (X) * 1.44269504088896341f + 12582912.0f;                                   \
    float fn = t - 12582912.0f;                                                           \
    uint32_t tb;                                                                          \
    memcpy(&tb, &t, 4);                                                                   \
    uint32_t n = tb - 0x4b400000u;                                                        \
    float r = (X) - fn * 0.693359375f;                                                    \
    r = r - fn * -2.12194440e-4f;

/* The definition of `float NAME(float x)` with storage class SPEC. */
#define RX_EXPF_SOURCE(SPEC, NAME)                                                        \
    SPEC float NAME(float x)                                                              \
    {                                                                                     \
        uint32_t xb;                                                                      \
        memcpy(&xb, &x, 4);                                                               \
        uint32_t hi = 0u - (uint32_t)(xb - 0x42b20001u < 0x7f800000u - 0x42b20000u);      \
        xb = (xb & ~hi) | (0x42b20000u & hi);                                             \
        uint32_t lo = 0u - (uint32_t)(xb - 0xc2d00001u < 0xff800000u - 0xc2d00000u);      \
        xb &= ~lo; /* below -104: e^0 computed, then +0 selected (no underflow) */       \
        float xc;                                                                         \
        memcpy(&xc, &xb, 4);                                                              \
        RX_EXPF_REDUCE_(xc)                                                               \
        float p = 1.9875691500e-4f;                                                       \
        p = p * r + 1.3981999507e-3f;                                                     \
        p = p * r + 8.3334519073e-3f;                                                     \
        p = p * r + 4.1665795894e-2f;                                                     \
        p = p * r + 1.6666665459e-1f;                                                     \
        p = p * r + 5.0000001201e-1f;                                                     \
        float y = p * (r * r) + r + 1.0f;                                                 \
        uint32_t h = ((n + 256u) >> 1) - 128u;                                            \
        uint32_t b1 = (h + 127u) << 23, b2 = (n - h + 127u) << 23;                        \
        float s1, s2;                                                                     \
        memcpy(&s1, &b1, 4);                                                              \
        memcpy(&s2, &b2, 4);                                                              \
        float e = y * s1 * s2;                                                            \
        uint32_t eb;                                                                      \
        memcpy(&eb, &e, 4);                                                               \
        eb &= ~lo;                                                                        \
        memcpy(&e, &eb, 4);                                                               \
        return e;                                                                         \
    }

/* e^x for x in [-87, 88] only (a normal result), the same steps as RX_EXPF_SOURCE without
 * its clamp and with one scaling (n added to the exponent bits): its bits equal
 * rx_expf's there. NaN or x outside the range give garbage: the callers (erf, tanh)
 * clamp their arguments and select another piece for NaN. */
#define RX_EXPF_NORMAL_SOURCE(SPEC, NAME)                                                 \
    SPEC float NAME(float x)                                                              \
    {                                                                                     \
        RX_EXPF_REDUCE_(x)                                                                \
        float r2 = r * r;                                                                 \
        float p01 = 5.0000001201e-1f + 1.6666665459e-1f * r;                              \
        float p23 = 4.1665795894e-2f + 8.3334519073e-3f * r;                              \
        float p45 = 1.3981999507e-3f + 1.9875691500e-4f * r;                              \
        float p = (p01 + p23 * r2) + p45 * (r2 * r2);                                     \
        float y = p * r2 + r + 1.0f;                                                      \
        uint32_t yb;                                                                      \
        memcpy(&yb, &y, 4);                                                               \
        yb += n << 23;                                                                    \
        memcpy(&y, &yb, 4);                                                               \
        return y;                                                                         \
    }

#define RX_ERFF_SOURCE(SPEC, NAME, EXPN)                                                          \
    SPEC float NAME(float x)                                                                      \
    {                                                                                             \
        uint32_t xb;                                                                              \
        memcpy(&xb, &x, 4);                                                                       \
        uint32_t sign = xb & 0x80000000u, ab = xb & 0x7fffffffu;                                  \
        uint32_t big = 0u - (uint32_t)(ab - 0x407ae148u - 1u < 0x7f800000u - 0x407ae148u);        \
        uint32_t cb = (ab & ~big) | (0x407ae148u & big);                                          \
        float a;                                                                                  \
        memcpy(&a, &cb, 4);                                                                       \
        float z = a * a, z2 = z * z;                                                              \
        float p01 = 1.283791670e-01f + -3.761263718e-01f * z;                                     \
        float p23 = 1.128375250e-01f + -2.686281907e-02f * z;                                     \
        float p45 = 5.210256636e-03f + -8.256813642e-04f * z;                                     \
        float p = (p01 + p23 * z2) + (p45 + 8.897523956e-05f * z2) * (z2 * z2);                   \
        float ys = a + a * p;                                                                     \
        float u = a - 0.84375f, u2 = u * u;                                                       \
        float h01 = -1.457685828e+00f + -2.378699541e+00f * u;                                    \
        float h23 = -8.220787048e-01f + -4.833563045e-02f * u;                                    \
        float h45 = 1.168986782e-02f + -2.260528738e-03f * u;                                     \
        float h67 = 2.985430474e-04f + -1.931713450e-05f * u;                                     \
        float h = (h01 + h23 * u2) + (h45 + h67 * u2) * (u2 * u2);                                \
        float yb = 1.0f - EXPN(h);                                                                \
        uint32_t sb, bb;                                                                          \
        memcpy(&sb, &ys, 4);                                                                      \
        memcpy(&bb, &yb, 4);                                                                      \
        uint32_t ks = (0u - (uint32_t)(ab < 0x3f580000u)) | (0u - (uint32_t)(ab > 0x7f800000u));  \
        uint32_t r = ((sb & ks) | (bb & ~ks)) | sign;                                             \
        float y;                                                                                  \
        memcpy(&y, &r, 4);                                                                        \
        return y;                                                                                 \
    }

#define RX_TANHF_SOURCE(SPEC, NAME, EXPN)                                               \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        uint32_t xb;                                                                    \
        memcpy(&xb, &x, 4);                                                             \
        uint32_t sign = xb & 0x80000000u, ab = xb & 0x7fffffffu;                        \
        uint32_t big = 0u - (uint32_t)(ab - 0x4111999au - 1u < 0x7f800000u - 0x4111999au); \
        uint32_t cb = (ab & ~big) | (0x4111999au & big);                                \
        float a;                                                                        \
        memcpy(&a, &cb, 4);                                                             \
        float z = a * a;                                                                \
        float p = -5.70498872745e-3f;                                                   \
        p = p * z + 2.06390887954e-2f;                                                  \
        p = p * z + -5.37397043740e-2f;                                                 \
        p = p * z + 1.33314422036e-1f;                                                  \
        p = p * z + -3.33332819422e-1f;                                                 \
        float ys = a + a * (z * p);                                                     \
        float yb = 1.0f - 2.0f / (EXPN(a + a) + 1.0f);                                  \
        uint32_t sb, bb;                                                                \
        memcpy(&sb, &ys, 4);                                                            \
        memcpy(&bb, &yb, 4);                                                            \
        uint32_t ks = (0u - (uint32_t)(ab < 0x3f200000u)) | (0u - (uint32_t)(ab > 0x7f800000u)); \
        uint32_t r = ((sb & ks) | (bb & ~ks)) | sign;                                   \
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
        float z4 = z * z;                                                                 \
        float q01 = 3.3333331174e-1f + -2.4999993993e-1f * f;                               \
        float q23 = 2.0000714765e-1f + -1.6668057665e-1f * f;                               \
        float q45 = 1.4249322787e-1f + -1.2420140846e-1f * f;                               \
        float q67 = 1.1676998740e-1f + -1.1514610310e-1f * f;                               \
        float p = ((q01 + q23 * z) + (q45 + q67 * z) * z4) + 7.0376836292e-2f * (z4 * z4);  \
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
RX_EXPF_NORMAL_SOURCE(static inline, rx_expf_normal_ref)
RX_ERFF_SOURCE(static inline, rx_erff_ref, rx_expf_normal_ref)
RX_TANHF_SOURCE(static inline, rx_tanhf_ref, rx_expf_normal_ref)
RX_LOGF_SOURCE(static inline, rx_logf_ref)

#endif
