/*
 * codegen_math.h — math the generated kernels compute with their own code instead of
 * libm, in one source for both places that must agree bit for bit: the C kernels (the
 * prelude of compiler/codegen/c_prelude.c pastes RX_EXPF_SOURCE as text) and evaluators
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
 *   rx_erff_ref(x)  erf in float, odd (the sign bit of x copied onto erf(|x|)), two
 *                   polynomials, both computed for every lane and one selected on the
 *                   bits (no branch, no exp, no division): a = |x| clamped to 3.92
 *                   (beyond which erf rounds to 1; a clamped lane gives exactly 1);
 *                   below 1, erf(a) = a + a p(a^2), p of degree 5 (a near-minimax fit
 *                   of erf(a) / a - 1, relative to erf(a) / a: 4.0e-8); from 1 to
 *                   3.92, erf(a) = 1 - q(a - 2.46), q of degree 12 fitting erfc with
 *                   an absolute error of 2.9e-8 (half an ulp of erf there; a - 2.46 is
 *                   exact), so erfc's own rounding is scaled down by its size. Fits: least squares on Chebyshev nodes in double, iteratively
 *                   reweighted (Lawson), rounded to float; Horner's scheme in fused
 *                   multiply-adds. 19 multiply-adds and ~20 other vector instructions
 *                   per 16 lanes (degrees 6 and 14 gave 1.02 ulp for 23 multiply-adds,
 *                   which bound these loops on cache-resident data); the one-piece rational form it replaces (a P(a^2) /
 *                   Q(a^2), one division) was 5.82 ulp off near erf = 1, where the
 *                   roundings of P, Q and the quotient added up. NaN gives NaN, +-inf
 *                   +-1, -0 -0. Measured: at most 1.60 ulp from erf in double over
 *                   every float of [2^-31, 4]. The price: on cache-resident data the
 *                   one-piece form was 1.5x faster (0.156 against 0.233 ns per element,
 *                   one Zen 5 core, AVX-512); 16M-element tensors stay memory-bound.
 *   rx_tanhf_ref(x) odd; a = |x| clamped to 9.1 (tanh rounds to 1 beyond); below
 *                   0.625, tanh(a) = a + a z w(z), z = a^2, w of degree 5 (a fit of
 *                   (tanh(a) / a - 1) / z, 1.6e-10); from there tanh(a) = em / (em + 2),
 *                   em = e^(2a) - 1 by rx_expf's range reduction (2a = n ln 2 + r),
 *                   e^r - 1 = r + r^2 p(r) (p of degree 4, a minimax fit of the
 *                   relative error of e^r - 1, rounded to float) and em = 2^n (e^r - 1)
 *                   + (2^n - 1) in one fused multiply-add; both computed, one selected
 *                   on the bits. The quotient alone was 2.53 ulp off near |x| = 0.06,
 *                   where em's and em + 2's roundings add; the odd polynomial is exact
 *                   to its last rounding there (cost: 1.3x the quotient alone's time on
 *                   cache-resident data, 0.24 against 0.186 ns per element). NaN gives NaN (its bits ored in), -0
 *                   -0. Measured: at most 1.50 ulp from tanh in double.
 *   rx_logf_ref(x)  subnormals scaled by 2^23 first; x = 2^k m with m in [sqrt(2)/2,
 *                   sqrt(2)) from the bits, f = m - 1 (exact), log(1 + f) by Cephes'
 *                   degree-8 polynomial (Estrin's scheme), k ln 2 added in two parts.
 *                   Selects on the bits give +-0 -> -inf, x < 0 -> NaN, +inf -> +inf,
 *                   NaN -> NaN. The subnormal test is two compares, not ix - 1 <
 *                   2^23 - 1: gcc made that -1 with vpternlogd into the register that
 *                   held the last iteration's result, a false dependency that chained
 *                   every 16 lanes to the previous ones (1.14 ns per element instead
 *                   of 0.30 on Zen 5, slower than the 8-lane version). Measured: at
 *                   most 0.84 ulp from log in double.
 *   rx_sinf_ref(x), rx_cosf_ref(x)  in double inside: a = |x| = n pi/2 + r, |r| <= pi/4,
 *                   by two reductions, both computed for every lane and one selected
 *                   on the bits: below 120, n = round(a 2/pi) by the 1.5 * 2^52 trick
 *                   and r = a - n pi/2 in two fused multiply-adds (pi/2 in two doubles);
 *                   from 120 (to the largest float), Payne-Hanek as in glibc's sinf:
 *                   a's 24-bit mantissa times 96 bits of 4/pi taken at its exponent's
 *                   offset, in 64-bit integers, n and a 62-bit fraction from the
 *                   product's top bits, r = fraction * pi/2. Then sin r = r + r^3 s(r^2)
 *                   (s of degree 2, relative error 3.8e-9) and cos r = 1 + r^2 c(r^2)
 *                   (c of degree 3, 6.4e-11), fits as for erf, both computed; the
 *                   quadrant n (n + 1 for cos) picks one and its sign, sin gets x's
 *                   sign; inf and NaN give NaN, -0 gives -0 for sin. Measured over
 *                   every 7th float bit pattern: at most 0.563 ulp from sin and cos in
 *                   double (libm's sinf, a call per element, is what the kernels used
 *                   before). The price of the full range is the large reduction,
 *                   computed for every lane: on one Zen 5 core, cache-resident data
 *                   (16K floats in [-45, 45], best of 2000), 1.29 ns per element with
 *                   AVX-512 and 2.93 with AVX2 (64-bit lanes, four per register), of
 *                   which the small path alone is 0.36 and 0.74; glibc's sinf 2.4-2.6
 *                   there. In a kernel (SIREN's sin layers, 4.2M elements) 2.4-2.7x
 *                   (AVX2) and 5.5x (AVX-512) faster than the libm kernel, one thread.
 *   sigmoid         (c_expr.c) 1 / (1 + rx_expf(-x)): within 2 ulp where the result is
 *                   at least 2^-126 (x > -87.3); for x < -88.72 e^-x is inf and the
 *                   result +0, an absolute error below 2^-128.
 * The other "measured" bounds are over every 7th float bit pattern too;
 * tests/unit/codegen/test_transcend.c checks 2^17 inputs over all floats, every 256th
 * float of [0.5, 4) and every 1024th of [1/32, 1) where the pieces meet, and the edges,
 * asserting 2 ulp for each (erf, tanh, log, sigmoid; 1 ulp for sin and cos) in the
 * baseline and the v3 and v4 builds.
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

/* The start of an odd function of x: xb its bits, sign its sign bit, ab |x|'s bits,
 * a = |x| clamped to the float whose bits are LIMIT (NaN too). */
#define RX_ODD_ARG_(LIMIT)                                                              \
    uint32_t xb;                                                                    \
    memcpy(&xb, &x, 4);                                                             \
    uint32_t sign = xb & 0x80000000u, ab = xb & 0x7fffffffu;                        \
    uint32_t cb = ab < (LIMIT) ? ab : (LIMIT);                                      \
    float a;                                                                        \
    memcpy(&a, &cb, 4);

/* The end of an odd function of ab = |x| (bits; xb: x's, sign: its sign bit) whose
 * result for ab is in BITS: x's sign copied on, NaN x ored in (a NaN stays a NaN). */
#define RX_ODD_RETURN_(BITS)                                                            \
    uint32_t nan = 0u - (uint32_t)(ab > 0x7f800000u);                               \
    BITS = BITS | (xb & nan) | sign;                                                \
    float res;                                                                      \
    memcpy(&res, &BITS, 4);                                                         \
    return res;

/* erf(|x|): a + a p(a^2) below 1, 1 - q(a - 2.46) from 1 to 3.92, both computed and one
 * selected on the bits (see the top of the file). */
#define RX_ERFF_SOURCE(SPEC, NAME)                                                      \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        RX_ODD_ARG_(0x407ae148u)                                                        \
        uint32_t big = 0u - (uint32_t)(ab > 0x407ae148u);                               \
        uint32_t sm = 0u - (uint32_t)(ab < 0x3f800000u);                                \
        float z = a * a;                                                                \
        float p = -0x1.273facp-11f;                                                     \
        p = fmaf(p, z, 0x1.4246d2p-8f);                                                 \
        p = fmaf(p, z, -0x1.b5a35cp-6f);                                                \
        p = fmaf(p, z, 0x1.ce0942p-4f);                                                 \
        p = fmaf(p, z, -0x1.812674p-2f);                                                \
        p = fmaf(p, z, 0x1.06eba2p-3f);                                                 \
        float ys = fmaf(a, p, a);                                                       \
        float t = a - 0x1.3ae148p+1f;                                                   \
        float q = 0x1.322c44p-17f;                                                      \
        q = fmaf(q, t, -0x1.aa7c04p-16f);                                               \
        q = fmaf(q, t, -0x1.b16834p-15f);                                               \
        q = fmaf(q, t, 0x1.3c545ep-12f);                                                \
        q = fmaf(q, t, -0x1.9a21eap-12f);                                               \
        q = fmaf(q, t, -0x1.e49e0ap-12f);                                               \
        q = fmaf(q, t, 0x1.846eeep-9f);                                                 \
        q = fmaf(q, t, -0x1.bd7db4p-8f);                                                \
        q = fmaf(q, t, 0x1.448fb2p-7f);                                                 \
        q = fmaf(q, t, -0x1.423522p-7f);                                                \
        q = fmaf(q, t, 0x1.ac53e6p-8f);                                                 \
        q = fmaf(q, t, -0x1.5c270cp-9f);                                                \
        q = fmaf(q, t, 0x1.07e35cp-11f);                                                \
        float yl = 1.0f - q;                                                            \
        uint32_t sb, yb;                                                                \
        memcpy(&sb, &ys, 4);                                                            \
        memcpy(&yb, &yl, 4);                                                            \
        yb = (sb & sm) | (yb & ~sm);                                                    \
        yb = (yb & ~big) | (0x3f800000u & big);                                         \
        RX_ODD_RETURN_(yb)                                                              \
    }

/* tanh(|x|): a + a z w(z) (z = a^2) below 0.625, em / (em + 2) with em = e^(2a) - 1 from
 * there, both computed and one selected on the bits (see the top of the file). */
#define RX_TANHF_SOURCE(SPEC, NAME)                                                     \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        RX_ODD_ARG_(0x4111999au)                                                        \
        float m = a + a;                                                                \
        RX_EXPF_REDUCE_(m)                                                              \
        float p = 0x1.6bec04p-10f;                                                      \
        p = fmaf(p, r, 0x1.122768p-7f);                                                 \
        p = fmaf(p, r, 0x1.555674p-5f);                                                 \
        p = fmaf(p, r, 0x1.5554bp-3f);                                                  \
        p = fmaf(p, r, 0x1.fffffep-2f);                                                 \
        float er = fmaf(p, r * r, r);                                                   \
        uint32_t sbits = (n << 23) + 0x3f800000u;                                       \
        float s;                                                                        \
        memcpy(&s, &sbits, 4);                                                          \
        float em = fmaf(s, er, s - 1.0f);                                               \
        float q = em / (em + 2.0f);                                                     \
        float z = a * a;                                                                \
        float w = 0x1.18e1dep-9f;                                                       \
        w = fmaf(w, z, -0x1.0bf4fcp-7f);                                                \
        w = fmaf(w, z, 0x1.638b58p-6f);                                                 \
        w = fmaf(w, z, -0x1.b9ee9p-5f);                                                 \
        w = fmaf(w, z, 0x1.111066p-3f);                                                 \
        w = fmaf(w, z, -0x1.555554p-2f);                                                \
        float ys = fmaf(a, z * w, a);                                                   \
        uint32_t sm = 0u - (uint32_t)(ab < 0x3f200000u);                                \
        uint32_t qb, sb;                                                                \
        memcpy(&qb, &q, 4);                                                             \
        memcpy(&sb, &ys, 4);                                                            \
        qb = (sb & sm) | (qb & ~sm);                                                    \
        RX_ODD_RETURN_(qb)                                                              \
    }

#define RX_LOGF_SOURCE(SPEC, NAME)                                                      \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        uint32_t ix;                                                                    \
        memcpy(&ix, &x, 4);                                                             \
        uint32_t sub = (0u - (uint32_t)(ix < 0x00800000u)) & (0u - (uint32_t)(ix != 0u)); \
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

/* 4/pi in fixed point for the large arguments' reduction of sin and cos: 256 bits, the
 * first 24 zero, then 4/pi's integer bit and 231 bits of its fraction, as four words,
 * most significant first. A lane takes the 96 bits its exponent needs, at a multiple of
 * 8 bits, by one select between two word triples and shifts, not by indexing: gcc does
 * not use gather instructions under its generic tuning, so the table lookup of glibc's
 * sinf (whose arithmetic this follows) became 48 scalar loads per 16 lanes (SIREN's sin
 * kernel took 12.4 ms against 8.7 with selects, 2 loaded cores); a three-way select of
 * five words took 1.48 ns per element against this one's 1.29 (one core, AVX-512). */
#define RX_PIO4_W0_ 0x000000a2f9836e4eull
#define RX_PIO4_W1_ 0x441529fc2757d1f5ull
#define RX_PIO4_W2_ 0x34ddc0db6295993cull
#define RX_PIO4_W3_ 0x439041fe5163abdeull

/* sin (COS 0) or cos (COS 1) of float x, in double inside (see the top of the file):
 * a = |x| = n pi/2 + r with |r| <= pi/4, by two reductions both computed for every lane
 * and one selected on the bits (a below 120: n = round(a 2/pi), r = a - n pi/2 in two
 * fused multiply-adds; from 120: 96 bits of 4/pi (RX_PIO4_W*_) times a's 24-bit
 * mantissa in integers, n and r from the product's top bits); then sin r and cos r by
 * polynomials, the quadrant n (n + 1 for cos) picking one and its sign. */
#define RX_SINCOSF_SOURCE(SPEC, NAME, COS)                                              \
    SPEC float NAME(float x)                                                            \
    {                                                                                   \
        uint32_t xb;                                                                    \
        memcpy(&xb, &x, 4);                                                             \
        uint32_t ab = xb & 0x7fffffffu;                                                 \
        float af;                                                                       \
        memcpy(&af, &ab, 4);                                                            \
        double ad = (double)af;                                                         \
        double t = fma(ad, 0x1.45f306dc9c883p-1, 0x1.8p52);                             \
        double kn = t - 0x1.8p52;                                                       \
        uint64_t tb;                                                                    \
        memcpy(&tb, &t, 8);                                                             \
        double rs = fma(kn, -0x1.921fb54442d18p0, ad);                                  \
        rs = fma(kn, -0x1.1a62633145c07p-54, rs);                                       \
        uint32_t wo = ((ab >> 26) & 15u) * 8u;                                          \
        uint64_t hw = 0u - (uint64_t)(wo >= 64u);                                       \
        uint64_t wa = (RX_PIO4_W0_ & ~hw) | (RX_PIO4_W1_ & hw);                         \
        uint64_t wb = (RX_PIO4_W1_ & ~hw) | (RX_PIO4_W2_ & hw);                         \
        uint64_t wc = (RX_PIO4_W2_ & ~hw) | (RX_PIO4_W3_ & hw);                         \
        uint64_t sh = wo & 63u;                                                         \
        uint64_t whi = (wa << sh) | ((wb >> 1) >> (63u - sh));                          \
        uint64_t wlo = (wb << sh) | ((wc >> 1) >> (63u - sh));                          \
        uint32_t m = ((ab & 0x7fffffu) | 0x800000u) << ((ab >> 23) & 7u);               \
        uint64_t p0 = (uint32_t)(m * (uint32_t)(whi >> 32));                            \
        uint64_t p1 = (uint64_t)m * (uint32_t)whi;                                      \
        uint64_t p2 = (uint64_t)m * (uint32_t)(wlo >> 32);                              \
        uint64_t fx = ((p2 >> 32) | (p0 << 32)) + p1;                                   \
        uint64_t nl = (fx + (1ull << 61)) >> 62;                                        \
        fx -= nl << 62;                                                                 \
        int32_t fh = (int32_t)(uint32_t)(fx >> 32);                                     \
        int32_t fl = (int32_t)((uint32_t)fx >> 1);                                      \
        double rl = fma((double)fh, 0x1p32, (double)fl * 2.0) * 0x1.921fb54442d18p-62;  \
        uint32_t big = 0u - (uint32_t)(ab >= 0x42f00000u);                              \
        uint64_t big64 = 0u - (uint64_t)(ab >= 0x42f00000u);                            \
        uint32_t n = ((uint32_t)tb & ~big) | ((uint32_t)nl & big);                      \
        uint64_t rsb, rlb;                                                              \
        memcpy(&rsb, &rs, 8);                                                           \
        memcpy(&rlb, &rl, 8);                                                           \
        rsb = (rsb & ~big64) | (rlb & big64);                                           \
        double r;                                                                       \
        memcpy(&r, &rsb, 8);                                                            \
        n += (COS);                                                                     \
        double z = r * r;                                                               \
        double sp = fma(fma(-0x1.9942231407740p-13, z, 0x1.110735f6b52d2p-7), z,        \
                        -0x1.5555451a20f43p-3);                                         \
        double sv = fma(z * r, sp, r);                                                  \
        double cp = fma(fma(fma(0x1.9914d146bae00p-16, z, -0x1.6c07e9bfde4e0p-10), z,   \
                            0x1.55553c6541c07p-5), z, -0x1.ffffffcb4c591p-2);           \
        double cv = fma(z, cp, 1.0);                                                    \
        float fs = (float)sv, fc = (float)cv;                                           \
        uint32_t sb, cb;                                                                \
        memcpy(&sb, &fs, 4);                                                            \
        memcpy(&cb, &fc, 4);                                                            \
        uint32_t odd = 0u - (n & 1u);                                                   \
        uint32_t rb = ((sb & ~odd) | (cb & odd)) ^ ((n & 2u) << 30);                    \
        rb ^= (COS) ? 0u : (xb & 0x80000000u);                                          \
        uint32_t bad = 0u - (uint32_t)(ab >= 0x7f800000u);                              \
        rb = (rb & ~bad) | ((xb | 0x7fc00000u) & bad);                                  \
        float res;                                                                      \
        memcpy(&res, &rb, 4);                                                           \
        return res;                                                                     \
    }

#define RX_MATH_STR_(...) #__VA_ARGS__
/* The text of a definition, for pasting into generated C (one line). */
#define RX_MATH_STR(...) RX_MATH_STR_(__VA_ARGS__)

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
RX_EXPF_SOURCE(static inline, rx_expf_ref)
RX_ERFF_SOURCE(static inline, rx_erff_ref)
RX_TANHF_SOURCE(static inline, rx_tanhf_ref)
RX_LOGF_SOURCE(static inline, rx_logf_ref)
RX_SINCOSF_SOURCE(static inline, rx_sinf_ref, 0)
RX_SINCOSF_SOURCE(static inline, rx_cosf_ref, 1)

#endif
