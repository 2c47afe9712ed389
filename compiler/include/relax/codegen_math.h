/*
 * codegen_math.h — math the generated kernels compute with their own code instead of
 * libm, in one source for both places that must agree bit for bit: the C kernels (the
 * prelude of compiler/codegen/c_expr.c pastes RX_EXPF_SOURCE as text) and evaluators
 * of loop functions in the compiler (compiler/interp/tir_eval*.c, whose constant folding
 * promises what the kernel would write), which call rx_expf_ref.
 *
 *   rx_expf_ref(x)  e^x in float: n = round(x / ln 2) by the 1.5 * 2^23 trick,
 *                   r = x - n ln 2 in two parts (Cody-Waite), e^r = 1 + r (1 + r q(r))
 *                   with q of degree 4 (a near-minimax fit of the relative error on
 *                   [-ln 2 / 2, ln 2 / 2]: least squares on Chebyshev nodes in double,
 *                   iteratively reweighted, rounded to float; 0.08 ulp before rounding),
 *                   then two exact scalings by powers of two, 2^(n -+ 32) and 2^(+-32)
 *                   (the sign of n picks; a subnormal result is rounded once). Out of
 *                   range, x > 88.7228 and x < -104 (ordered comparisons: NaN is
 *                   neither), x is replaced by 0 and the second factor by inf or +0,
 *                   so the result is inf or +0 without passing through the subnormal
 *                   range (a scaling to +0 through it took a microcode assist per lane:
 *                   a softmax after a causal mask, half its exps at -1e9, ran 2x slower
 *                   than without the mask). The selects work on the bits: no branch,
 *                   and the comparisons are used as integers, which gcc vectorizes
 *                   inside `omp simd` loops (it does not if-convert a floating-point
 *                   select under the default trapping math), where libm's expf is a
 *                   call per element. NaN gives NaN, x in (88.7228, inf] inf, x in
 *                   [-inf, -104) +0 (and x in [-104, -103.97] rounds to +0). Measured
 *                   over every 7th float bit pattern: at most 0.88 ulp from e^x;
 *                   infinities, zeros and NaNs exact (tests/unit/codegen/test_expf.c
 *                   samples a million, asserting 1 ulp).
 *
 *   rx_expf_normal_ref(x)  e^x for x in [-87, 88] (normal results) only: rx_expf's
 *                   steps without the clamp and with one scaling (n added to the
 *                   exponent bits); its bits equal rx_expf's there. Used inside erf
 *                   and tanh, whose arguments are clamped first; NaN and other x give
 *                   garbage there, which the callers never select.
 *
 *   rx_erff_ref(x)  erf in float, odd (the sign bit of x copied onto erf(|x|)), two
 *                   pieces picked by selects on the bits of a = |x| (both computed; no
 *                   branch): a < 0.84375: a + a * R(a^2), R of degree 6 (erf(a) / a - 1:
 *                   the leading a is exact, so the rounding of R is scaled down); else
 *                   1 - e^h(a), h of degree 7 in a - 0.84375 fitting log(erfc(a)) on
 *                   [0.84375, 3.92] with weight erfc(a) (the error it makes in erf)
 *                   plus a floor (relative accuracy where erf nears 1),
 *                   the exp rx_expf_normal; a is clamped to 3.92 beyond which erf
 *                   rounds to 1. Both polynomials by Estrin's scheme (shorter chains
 *                   of dependent operations than Horner's, which left the loop
 *                   latency-bound). Coefficients: Lawson minimax fits in double,
 *                   rounded to float. NaN (sent to the first piece) gives NaN, +-inf
 *                   +-1, -0 -0. Measured: at most 1.35 ulp from erf in double over
 *                   every 7th float.
 *   rx_tanhf_ref(x) odd; a = |x| < 0.625: a + a z P(z), z = a^2, P Cephes' degree 4;
 *                   else 1 - 2 / (e^(2a) + 1), a clamped to 9.1 (tanh rounds to 1
 *                   beyond) so rx_expf_normal serves. NaN (first piece) gives NaN, -0
 *                   -0. Measured: at most 1.36 ulp from tanh in double.
 *   rx_logf_ref(x)  subnormals scaled by 2^23 first; x = 2^k m with m in [sqrt(2)/2,
 *                   sqrt(2)) from the bits, f = m - 1 (exact), log(1 + f) by Cephes'
 *                   degree-8 polynomial (Estrin's scheme), k ln 2 added in two parts.
 *                   Selects on the bits give +-0 -> -inf, x < 0 -> NaN, +inf -> +inf,
 *                   NaN -> NaN. Measured: at most 0.84 ulp from log in double.
 * The other "measured" bounds are over every 7th float bit pattern too;
 * tests/unit/codegen/test_transcend.c checks 2^17 inputs over all floats, every 256th
 * float of [0.5, 4) where the pieces meet, and the edges, asserting a 2-ulp limit.
 *
 * Every a * b + c of these functions is an explicit fmaf (one rounding: correctly
 * rounded by definition, so every compiler and ISA computes the same bits). The ISA
 * versions of the kernels (x86-64-v3, v4) compile it to one vfmadd: e^x costs some 30
 * vector instructions per 8 lanes, 0.75 of the separate multiply-and-add form's time
 * (sigmoid 0.7, tanh 0.85). x86-64's baseline has no fused multiply-add: there fmaf
 * is libm's (a call per operation, ~8-13x slower than the vector form), which is why
 * the driver asks for the exact ISA versions of these statements at every opt level
 * below 3 (c_isa.c), leaving the baseline to CPUs without AVX2 and FMA
 * (RX_KERNEL_ISA=base). Apart from the fmaf calls, both copies are compiled without
 * contraction (-std=c11 with gcc; the #pragma below for clang), so they round
 * identically.
 */
#ifndef RELAX_CODEGEN_MATH_H
#define RELAX_CODEGEN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The range reduction both exps share: n = round(X / ln 2) (t's low bits; n as unsigned,
 * wrapping), r = X - n ln 2 in two parts (Cody-Waite), each step one fused multiply-add. */
#define RX_EXPF_REDUCE_(X)                                                                \
    float t = fmaf((X), 1.44269504088896341f, 12582912.0f);                               \
    float fn = t - 12582912.0f;                                                           \
    uint32_t tb;                                                                          \
    memcpy(&tb, &t, 4);                                                                   \
    uint32_t n = tb - 0x4b400000u;                                                        \
    float r = fmaf(fn, -0.693359375f, (X));                                               \
    r = fmaf(fn, 2.12194440e-4f, r);

/* e^r = 1 + r (1 + r q(r)) on [-ln 2 / 2, ln 2 / 2], q of degree 4, all by Horner's scheme
 * in fused multiply-adds: y = e^r in [0.70, 1.42]. */
#define RX_EXPF_POLY_                                                                     \
    float p = 0x1.6a23aap-10f;                                                            \
    p = fmaf(p, r, 0x1.123a24p-7f);                                                       \
    p = fmaf(p, r, 0x1.5558f4p-5f);                                                       \
    p = fmaf(p, r, 0x1.55549p-3f);                                                        \
    p = fmaf(p, r, 0x1.fffffcp-2f);                                                       \
    p = fmaf(p, r, 1.0f);                                                                 \
    float y = fmaf(p, r, 1.0f);

/* The definition of `float NAME(float x)` with storage class SPEC. */
#define RX_EXPF_SOURCE(SPEC, NAME)                                                        \
    SPEC float NAME(float x)                                                              \
    {                                                                                     \
        uint32_t lo = 0u - (uint32_t)(x < -104.0f);                                       \
        uint32_t hi = 0u - (uint32_t)(x > 88.72283172607421875f);                         \
        uint32_t xb;                                                                      \
        memcpy(&xb, &x, 4);                                                               \
        xb &= ~(lo | hi); /* out of range: e^0 computed, then 0 or inf selected */        \
        float xc;                                                                         \
        memcpy(&xc, &xb, 4);                                                              \
        RX_EXPF_REDUCE_(xc)                                                               \
        RX_EXPF_POLY_                                                                     \
        uint32_t mk = (0u - (n >> 31)) & 0x20000000u;                                     \
        uint32_t b1 = (n << 23) + mk + 0x2f800000u;                                       \
        uint32_t b2 = ((0x4f800000u - mk) & ~lo) | (hi & 0x7f800000u);                    \
        float s1, s2;                                                                     \
        memcpy(&s1, &b1, 4);                                                              \
        memcpy(&s2, &b2, 4);                                                              \
        return y * s1 * s2;                                                               \
    }

/* e^x for x in [-87, 88] only (a normal result), the same steps as RX_EXPF_SOURCE without
 * its clamp and with one scaling (n added to the exponent bits): its bits equal
 * rx_expf's there. NaN or x outside the range give garbage: the callers (erf, tanh)
 * clamp their arguments and select another piece for NaN. */
#define RX_EXPF_NORMAL_SOURCE(SPEC, NAME)                                                 \
    SPEC float NAME(float x)                                                              \
    {                                                                                     \
        RX_EXPF_REDUCE_(x)                                                                \
        RX_EXPF_POLY_                                                                     \
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
        float p01 = fmaf(-3.761263718e-01f, z, 1.283791670e-01f);                                 \
        float p23 = fmaf(-2.686281907e-02f, z, 1.128375250e-01f);                                 \
        float p45 = fmaf(-8.256813642e-04f, z, 5.210256636e-03f);                                 \
        float p = fmaf(fmaf(8.897523956e-05f, z2, p45), z2 * z2, fmaf(p23, z2, p01));             \
        float ys = fmaf(a, p, a);                                                                 \
        float u = a - 0.84375f, u2 = u * u;                                                       \
        float h01 = fmaf(-2.378699541e+00f, u, -1.457685828e+00f);                                \
        float h23 = fmaf(-4.833563045e-02f, u, -8.220787048e-01f);                                \
        float h45 = fmaf(-2.260528738e-03f, u, 1.168986782e-02f);                                 \
        float h67 = fmaf(-1.931713450e-05f, u, 2.985430474e-04f);                                 \
        float h = fmaf(fmaf(h67, u2, h45), u2 * u2, fmaf(h23, u2, h01));                          \
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
        p = fmaf(p, z, 2.06390887954e-2f);                                              \
        p = fmaf(p, z, -5.37397043740e-2f);                                             \
        p = fmaf(p, z, 1.33314422036e-1f);                                              \
        p = fmaf(p, z, -3.33332819422e-1f);                                             \
        float ys = fmaf(a, z * p, a);                                                   \
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
        float z4 = z * z;                                                               \
        float q01 = fmaf(-2.4999993993e-1f, f, 3.3333331174e-1f);                       \
        float q23 = fmaf(-1.6668057665e-1f, f, 2.0000714765e-1f);                       \
        float q45 = fmaf(-1.2420140846e-1f, f, 1.4249322787e-1f);                       \
        float q67 = fmaf(-1.1514610310e-1f, f, 1.1676998740e-1f);                       \
        float p = fmaf(fmaf(q67, z, q45), z4, fmaf(q23, z, q01));                       \
        p = fmaf(7.0376836292e-2f, z4 * z4, p);                                         \
        float y = p * f * z;                                                            \
        y = fmaf(e, -2.12194440e-4f, y);                                                \
        y = fmaf(-0.5f, z, y);                                                          \
        float r = f + y;                                                                \
        r = fmaf(e, 0.693359375f, r);                                                   \
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
