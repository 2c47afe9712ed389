/*
 * rt_rnn_lanes.h — library_rnn.c's gate nonlinearities written once for two widths:
 * included by library_rnn.c with RNN_VL = 8 (AVX2 + FMA, __m256) and RNN_VL = 16
 * (AVX-512 F + DQ, __m512), it defines gates8 / gates16 (the function RNN_GATES_FN names,
 * compiled for its ISA through RNN_VL_FN). Both compute each lane with the same
 * operations, so the two paths give the same bits:
 *   exp      e^x for x clamped to [-88, 88]: Cody-Waite reduction and Cephes' degree-5
 *            polynomial (within 2 ulp of expf over the range; 0 below about -87.3,
 *            where the scale's exponent underflows)
 *   sigmoid  1 / (1 + e^-x): the clamp keeps e^-x finite, so x < -88 gives about 6e-39
 *            (the true value is smaller still) and x > 88 gives 1
 *   tanh     sign(x) (1 - 2 / (e^{2|x|} + 1))
 * A tile's units run RNN_VL at a time; a part of a vector (a block's last units when H
 * is not a multiple of the width) is read and written through a lane mask (maskload /
 * maskstore with AVX2, masked moves with AVX-512), never past the tile's nl units.
 * Needs library_rnn.c's gate_args, NR and the M_* modes defined first.
 */
#if !defined(RNN_VL) || (RNN_VL != 8 && RNN_VL != 16)
#error "define RNN_VL as 8 or 16 before including rt_rnn_lanes.h"
#endif

#if RNN_VL == 8
#define RV __m256
#define RVOP(op) _mm256_##op
#define RV_SIG sigmoid8
#define RV_EXP exp8
#define RV_ROUND(x) _mm256_round_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define RV_CASTF _mm256_castsi256_ps
#define RV_MASK __m256i
#define RV_MASK_OF(n) \
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define RV_LD(p) (full ? _mm256_loadu_ps(p) : _mm256_maskload_ps((p), mask))
#define RV_ST(p, v)                              \
    do {                                         \
        if (full)                                \
            _mm256_storeu_ps((p), (v));          \
        else                                     \
            _mm256_maskstore_ps((p), mask, (v)); \
    } while (0)
#define RV_TANH tanh8
#define RNN_GATES_FN gates8
#else
#define RV __m512
#define RVOP(op) _mm512_##op
#define RV_SIG sigmoid16
#define RV_EXP exp16
#define RV_ROUND(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define RV_CASTF _mm512_castsi512_ps
#define RV_MASK __mmask16
#define RV_MASK_OF(n) ((__mmask16)((1u << (n)) - 1u))
#define RV_LD(p) _mm512_maskz_loadu_ps(mask, (p))
#define RV_ST(p, v) _mm512_mask_storeu_ps((p), mask, (v))
#define RV_TANH tanh16
#define RNN_GATES_FN gates16
#endif

RNN_VL_FN static inline RV RV_EXP(RV x)
{
    x = RVOP(min_ps)(RVOP(max_ps)(x, RVOP(set1_ps)(-88.0f)), RVOP(set1_ps)(88.0f));
    RV n = RV_ROUND(RVOP(mul_ps)(x, RVOP(set1_ps)(1.44269504088896341f)));
    x = RVOP(fnmadd_ps)(n, RVOP(set1_ps)(0.693359375f), x);
    x = RVOP(fnmadd_ps)(n, RVOP(set1_ps)(-2.12194440e-4f), x);
    RV y = RVOP(set1_ps)(1.9875691500e-4f);
    y = RVOP(fmadd_ps)(y, x, RVOP(set1_ps)(1.3981999507e-3f));
    y = RVOP(fmadd_ps)(y, x, RVOP(set1_ps)(8.3334519073e-3f));
    y = RVOP(fmadd_ps)(y, x, RVOP(set1_ps)(4.1665795894e-2f));
    y = RVOP(fmadd_ps)(y, x, RVOP(set1_ps)(1.6666665459e-1f));
    y = RVOP(fmadd_ps)(y, x, RVOP(set1_ps)(5.0000001201e-1f));
    y = RVOP(fmadd_ps)(y, RVOP(mul_ps)(x, x), RVOP(add_ps)(x, RVOP(set1_ps)(1.0f)));
    return RVOP(mul_ps)(y, RV_CASTF(RVOP(slli_epi32)(
                               RVOP(add_epi32)(RVOP(cvtps_epi32)(n), RVOP(set1_epi32)(127)), 23)));
}

RNN_VL_FN static inline RV RV_SIG(RV x)
{
    RV one = RVOP(set1_ps)(1.0f);
    return RVOP(div_ps)(one, RVOP(add_ps)(one, RV_EXP(RVOP(sub_ps)(RVOP(setzero_ps)(), x))));
}

RNN_VL_FN static inline RV RV_TANH(RV x)
{
    RV sign = RVOP(and_ps)(x, RVOP(set1_ps)(-0.0f)), ax = RVOP(xor_ps)(x, sign);
    RV e = RV_EXP(RVOP(add_ps)(ax, ax)), one = RVOP(set1_ps)(1.0f);
    RV t = RVOP(sub_ps)(one, RVOP(div_ps)(RVOP(set1_ps)(2.0f), RVOP(add_ps)(e, one)));
    return RVOP(or_ps)(t, sign);
}

/* gates_c's equations for units l < nl of state rows i < nb, RNN_VL units at a time. */
RNN_VL_FN static void RNN_GATES_FN(const gate_args *a, int nb, int nl)
{
    int64_t H = a->H;
    RV zero = RVOP(setzero_ps)();
    for (int i = 0; i < nb; i++)
        for (int l = 0; l < nl; l += RNN_VL) {
            bool full = l + RNN_VL <= nl;
            RV_MASK mask = RV_MASK_OF(full ? RNN_VL : nl - l);
            (void)full;
            const float *x = a->xg[i] + l;
            RV hprev = RV_LD(a->hp[i] + l), h;
            switch (a->mode) {
            case M_LSTM: {
                RV c = RV_LD(a->c[i] + l);
                RV gi = RV_SIG(RVOP(fmadd_ps)(
                    RV_LD(a->p + l), c, RVOP(add_ps)(RV_LD(x), RVOP(loadu_ps)(a->acc[0][i] + l))));
                RV gf = RV_SIG(RVOP(fmadd_ps)(
                    RV_LD(a->p + 2 * H + l), c,
                    RVOP(add_ps)(RV_LD(x + 2 * H), RVOP(loadu_ps)(a->acc[2][i] + l))));
                RV gc = RV_TANH(RVOP(add_ps)(RV_LD(x + 3 * H), RVOP(loadu_ps)(a->acc[3][i] + l)));
                c = RVOP(fmadd_ps)(gf, c, RVOP(mul_ps)(gi, gc));
                RV go = RV_SIG(
                    RVOP(fmadd_ps)(RV_LD(a->p + H + l), c,
                                   RVOP(add_ps)(RV_LD(x + H), RVOP(loadu_ps)(a->acc[1][i] + l))));
                RV_ST(a->c[i] + l, c);
                h = RVOP(mul_ps)(go, RV_TANH(c));
                break;
            }
            case M_GRU: {
                RV z, ht;
                if (a->phase == 1) {
                    z = RV_SIG(RVOP(add_ps)(RV_LD(x), RVOP(loadu_ps)(a->acc[0][i] + l)));
                    RV r = RV_SIG(RVOP(add_ps)(RV_LD(x + H), RVOP(loadu_ps)(a->acc[1][i] + l)));
                    if (!a->lbr) {
                        RV_ST(a->z[i] + l, z);
                        RV_ST(a->rh[i] + l, RVOP(mul_ps)(r, hprev));
                        continue;
                    }
                    ht = RV_TANH(RVOP(fmadd_ps)(
                        r, RVOP(add_ps)(RVOP(loadu_ps)(a->acc[2][i] + l), RV_LD(a->rbh + l)),
                        RV_LD(x + 2 * H)));
                } else {
                    z = RV_LD(a->z[i] + l);
                    ht = RV_TANH(RVOP(add_ps)(RV_LD(x + 2 * H), RVOP(loadu_ps)(a->acc[2][i] + l)));
                }
                h = RVOP(fmadd_ps)(z, RVOP(sub_ps)(hprev, ht), ht); /* (1-z) h~ + z H */
                break;
            }
            case M_TANH:
                h = RV_TANH(RVOP(add_ps)(RV_LD(x), RVOP(loadu_ps)(a->acc[0][i] + l)));
                break;
            default:
                h = RVOP(max_ps)(RVOP(add_ps)(RV_LD(x), RVOP(loadu_ps)(a->acc[0][i] + l)), zero);
            }
            RV_ST(a->hn[i] + l, h);
        }
}

#undef RV
#undef RVOP
#undef RV_SIG
#undef RV_EXP
#undef RV_ROUND
#undef RV_CASTF
#undef RV_MASK
#undef RV_MASK_OF
#undef RV_LD
#undef RV_ST
#undef RV_TANH
#undef RNN_GATES_FN
