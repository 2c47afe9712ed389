/*
 * rt_vmath_lanes.h — the runtime's vector activations written once for two widths:
 * included by library_act.c with RX_VL = 8 (AVX2 + FMA, __m256) and RX_VL = 16
 * (AVX-512 F + DQ, __m512), it defines, for that width, functions suffixed with it
 * (vexp8 / vexp16, verf8 / verf16, ...), each compiled for its ISA through RX_VL_FN
 * (the includer's target attribute). One source, so the two paths compute the same
 * approximations and differ in lane count and in the reciprocal estimate (12 bits with
 * AVX2, 14 with AVX-512: SiLU and the tanh GELU may differ in the last bits; relu and
 * GELU are the same bits). tests/unit/runtime/test_act.c runs both.
 *
 *   vexp    e^x for x clamped to [-87.33, 88] (results stay normal and 2^n finite:
 *           below the clamp e^x is 2^-126 instead of smaller, an absolute error under
 *           1.2e-38):
 *           n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two parts,
 *           e^r = 1 + r (1 + r q(r)) with relax/codegen_math.h's degree-4 q, scaled by
 *           2^n through the exponent bits (n's bits shifted: no conversion).
 *   verf    erf, odd: a = min(|x|, 3.92); a + a p(a^2) below 1, 1 - q(a - 2.46) from 1
 *           on, both computed and one blended in, exactly 1 beyond 3.92 (so GELU of a
 *           large negative x is -0, not the cancellation of 1 - 0.99999994):
 *           codegen_math.h's polynomials (the generated kernels' rx_erff: at most
 *           1.60 ulp). The sign of x copied on. A NaN x gives +-1; the GELU around it
 *           multiplies by x, so GELU(NaN) is NaN.
 *   vrcp    1 / d: the reciprocal estimate (12 bits with AVX2, 14 with AVX-512) and
 *           one Newton step (~1 ulp), cheaper than a division on Zen 1.
 *   vact    relu (max(0, x): a NaN x is returned, as NumPy's maximum does), GELU 0.5 x (1 + erf(x / sqrt 2)) as h + h erf (h = x / 2, one fused
 *           multiply-add), SiLU x / (1 + e^-x), tanh GELU x / (1 + e^(-2u)),
 *           hardswish x min(max(x * 1/6 + 0.5, 0), 1) (separate product and sum).
 *
 * With RX_VL_ACT_ONLY defined, only the vector functions (vexp ... vact), not the row
 * loops. All but verf are always inlined: a kernel applying vact per vector in registers
 * (the conv tile) must not pay a call for each.
 *
 * Width adapter macros: RX_V (the float vector), RX_VI (its integers), RX_VOP(op)
 * (_mm256_op / _mm512_op), RX_VSI(op) (the integer form: _mm256_op_si256 names),
 * RX_VLT_BLEND(x, c, a, b) (lanes with x < c take a, others b), RX_VRCP14(d) (the
 * reciprocal estimate).
 */
#if !defined(RX_VL) || (RX_VL != 8 && RX_VL != 16)
#error "define RX_VL as 8 or 16 before including rt_vmath_lanes.h"
#endif

#define RX_VCAT_(a, b) a##b
#define RX_VCAT(a, b) RX_VCAT_(a, b)
#define RX_VN(name) RX_VCAT(name, RX_VL) /* vexp -> vexp8 / vexp16 */

#if RX_VL == 8
#define RX_V __m256
#define RX_VI __m256i
#define RX_VOP(op) _mm256_##op
#define RX_VCASTI(x) _mm256_castps_si256(x)
#define RX_VCASTF(x) _mm256_castsi256_ps(x)
#define RX_VLT_BLEND(x, c, a, b) _mm256_blendv_ps((b), (a), _mm256_cmp_ps((x), (c), _CMP_LT_OQ))
#define RX_VRCP14(d) _mm256_rcp_ps(d)
#else
#define RX_V __m512
#define RX_VI __m512i
#define RX_VOP(op) _mm512_##op
#define RX_VCASTI(x) _mm512_castps_si512(x)
#define RX_VCASTF(x) _mm512_castsi512_ps(x)
#define RX_VLT_BLEND(x, c, a, b)                                                            \
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask((x), (c), _CMP_LT_OQ), (b), (a))
#define RX_VRCP14(d) _mm512_rcp14_ps(d)
#endif
#define RX_VS(v) RX_VOP(set1_ps)(v)

RX_VL_FN static inline __attribute__((always_inline)) RX_V RX_VN(vexp)(RX_V x)
{
    x = RX_VOP(min_ps)(RX_VOP(max_ps)(x, RX_VS(-87.33654f)), RX_VS(88.0f));
    RX_V t = RX_VOP(fmadd_ps)(x, RX_VS(1.44269504088896341f), RX_VS(12582912.0f));
    RX_V fn = RX_VOP(sub_ps)(t, RX_VS(12582912.0f));
    RX_V r = RX_VOP(fmadd_ps)(fn, RX_VS(-0.693359375f), x);
    r = RX_VOP(fmadd_ps)(fn, RX_VS(2.12194440e-4f), r);
    RX_V p = RX_VS(0x1.6a23aap-10f);
    p = RX_VOP(fmadd_ps)(p, r, RX_VS(0x1.123a24p-7f));
    p = RX_VOP(fmadd_ps)(p, r, RX_VS(0x1.5558f4p-5f));
    p = RX_VOP(fmadd_ps)(p, r, RX_VS(0x1.55549p-3f));
    p = RX_VOP(fmadd_ps)(p, r, RX_VS(0x1.fffffcp-2f));
    p = RX_VOP(fmadd_ps)(p, r, RX_VS(1.0f));
    RX_V y = RX_VOP(fmadd_ps)(p, r, RX_VS(1.0f));
    /* t's bits are 0x4b400000 + n; shifted by 23 the constant part leaves the word */
    RX_VI s = RX_VOP(add_epi32)(RX_VOP(slli_epi32)(RX_VCASTI(t), 23),
                                RX_VOP(set1_epi32)(0x3f800000));
    return RX_VOP(mul_ps)(y, RX_VCASTF(s));
}

RX_VL_FN static inline __attribute__((always_inline)) RX_V RX_VN(vrcp)(RX_V d)
{
    RX_V r = RX_VRCP14(d);
    return RX_VOP(mul_ps)(r, RX_VOP(fnmadd_ps)(d, r, RX_VS(2.0f)));
}

/* x times the logistic function of s: x e / (1 + e) for s < 0, x / (1 + e) otherwise,
 * e = e^-|s| in (0, 1] (never overflows; 1 + e in [1, 2]). */
RX_VL_FN static inline __attribute__((always_inline)) RX_V RX_VN(vxsig)(RX_V x, RX_V s)
{
    RX_V zero = RX_VOP(setzero_ps)(), one = RX_VS(1.0f);
    RX_V e = RX_VN(vexp)(RX_VOP(or_ps)(s, RX_VS(-0.0f)));
    RX_V num = RX_VLT_BLEND(s, zero, RX_VOP(mul_ps)(x, e), x);
    return RX_VOP(mul_ps)(num, RX_VN(vrcp)(RX_VOP(add_ps)(one, e)));
}

RX_VL_FN static inline RX_V RX_VN(verf)(RX_V x)
{
    RX_V sign = RX_VOP(and_ps)(x, RX_VS(-0.0f));
    RX_V ax = RX_VOP(andnot_ps)(RX_VS(-0.0f), x);
    RX_V a = RX_VOP(min_ps)(ax, RX_VS(3.92f));
    RX_V z = RX_VOP(mul_ps)(a, a);
    RX_V p = RX_VS(-0x1.273facp-11f);
    p = RX_VOP(fmadd_ps)(p, z, RX_VS(0x1.4246d2p-8f));
    p = RX_VOP(fmadd_ps)(p, z, RX_VS(-0x1.b5a35cp-6f));
    p = RX_VOP(fmadd_ps)(p, z, RX_VS(0x1.ce0942p-4f));
    p = RX_VOP(fmadd_ps)(p, z, RX_VS(-0x1.812674p-2f));
    p = RX_VOP(fmadd_ps)(p, z, RX_VS(0x1.06eba2p-3f));
    RX_V ys = RX_VOP(fmadd_ps)(a, p, a);
    RX_V t = RX_VOP(sub_ps)(a, RX_VS(0x1.3ae148p+1f));
    static const float Q[13] = {0x1.322c44p-17f,  -0x1.aa7c04p-16f, -0x1.b16834p-15f,
                                0x1.3c545ep-12f,  -0x1.9a21eap-12f, -0x1.e49e0ap-12f,
                                0x1.846eeep-9f,   -0x1.bd7db4p-8f,  0x1.448fb2p-7f,
                                -0x1.423522p-7f,  0x1.ac53e6p-8f,   -0x1.5c270cp-9f,
                                0x1.07e35cp-11f};
    RX_V q = RX_VS(Q[0]);
    for (int i = 1; i < 13; i++) q = RX_VOP(fmadd_ps)(q, t, RX_VS(Q[i]));
    RX_V yl = RX_VOP(sub_ps)(RX_VS(1.0f), q);
    RX_V y = RX_VLT_BLEND(a, RX_VS(1.0f), ys, yl);
    return RX_VOP(or_ps)(RX_VLT_BLEND(ax, RX_VS(3.92f), y, RX_VS(1.0f)), sign);
}

RX_VL_FN static inline __attribute__((always_inline)) RX_V RX_VN(vact)(int act, RX_V x)
{
    switch (act) {
    case RX_RT_ACT_RELU: return RX_VOP(max_ps)(RX_VOP(setzero_ps)(), x); /* NaN: x's */
    case RX_RT_ACT_GELU: {
        RX_V h = RX_VOP(mul_ps)(x, RX_VS(0.5f));
        RX_V e = RX_VN(verf)(RX_VOP(mul_ps)(x, RX_VS(0.70710678118654752f)));
        return RX_VOP(fmadd_ps)(h, e, h);
    }
    case RX_RT_ACT_SILU: return RX_VN(vxsig)(x, x);
    case RX_RT_ACT_GELU_TANH: { /* -2u = x (c1 + c2 x^2), c1 = -2 sqrt(2/pi), c2 = c1 0.044715 */
        RX_V x2 = RX_VOP(mul_ps)(x, x);
        RX_V k = RX_VOP(fmadd_ps)(x2, RX_VS(-0.0713548162726f), RX_VS(-1.59576912160573f));
        return RX_VN(vxsig)(x, RX_VOP(sub_ps)(RX_VOP(setzero_ps)(), RX_VOP(mul_ps)(x, k)));
    }
    case RX_RT_ACT_HARDSWISH: { /* act_scalar's steps (no FMA: the same roundings) */
        RX_V h = RX_VOP(add_ps)(RX_VOP(mul_ps)(x, RX_VS(0.16666667f)), RX_VS(0.5f));
        h = RX_VOP(min_ps)(RX_VOP(max_ps)(h, RX_VOP(setzero_ps)()), RX_VS(1.0f));
        return RX_VOP(mul_ps)(x, h);
    }
    default: return x;
    }
}

#ifndef RX_VL_ACT_ONLY /* an includer that wants vact alone (library_conv_kern.c's tile) */
/* rows x cols of c (row stride ldc) = act(c + bias) in one pass of loads and stores;
 * inlined per (act, bias or not) by the includer's dispatch, so neither is tested per
 * vector. The tail of a row goes through a padded RX_VL-lane buffer, so a value's
 * result does not depend on where it sits. */
RX_VL_FN static inline __attribute__((always_inline)) void
RX_VN(epi_loop)(float *c, int64_t rows, int64_t cols, int64_t ldc, const float *bias, int act)
{
    for (int64_t r = 0; r < rows; r++, c += ldc) {
        int64_t i = 0;
        for (; i + RX_VL <= cols; i += RX_VL) {
            RX_V v = RX_VOP(loadu_ps)(c + i);
            if (bias) v = RX_VOP(add_ps)(v, RX_VOP(loadu_ps)(bias + i));
            RX_VOP(storeu_ps)(c + i, RX_VN(vact)(act, v));
        }
        if (i < cols) {
            float t[RX_VL] = {0}, tb[RX_VL] = {0};
            memcpy(t, c + i, sizeof(float) * (size_t)(cols - i));
            if (bias) memcpy(tb, bias + i, sizeof(float) * (size_t)(cols - i));
            RX_V v = RX_VOP(add_ps)(RX_VOP(loadu_ps)(t), RX_VOP(loadu_ps)(tb));
            RX_VOP(storeu_ps)(t, RX_VN(vact)(act, v));
            memcpy(c + i, t, sizeof(float) * (size_t)(cols - i));
        }
    }
}

#define RX_EPI_CASE(a)                                                                     \
    case a:                                                                                \
        if (bias) RX_VN(epi_loop)(c, rows, cols, ldc, bias, a);                            \
        else RX_VN(epi_loop)(c, rows, cols, ldc, NULL, a);                                 \
        break;

RX_VL_FN static void RX_VN(epi)(float *c, int64_t rows, int64_t cols, int64_t ldc,
                                const float *bias, int act)
{
    switch (act) {
        RX_EPI_CASE(RX_RT_ACT_RELU)
        RX_EPI_CASE(RX_RT_ACT_GELU)
        RX_EPI_CASE(RX_RT_ACT_SILU)
        RX_EPI_CASE(RX_RT_ACT_GELU_TANH)
        RX_EPI_CASE(RX_RT_ACT_HARDSWISH)
    default: RX_VN(epi_loop)(c, rows, cols, ldc, bias, RX_RT_ACT_NONE); break;
    }
}

#undef RX_EPI_CASE
#endif
#undef RX_V
#undef RX_VI
#undef RX_VOP
#undef RX_VCASTI
#undef RX_VCASTF
#undef RX_VLT_BLEND
#undef RX_VRCP14
#undef RX_VS
#undef RX_VN
#undef RX_VCAT
#undef RX_VCAT_
