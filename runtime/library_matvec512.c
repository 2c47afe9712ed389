/*
 * library_matvec512.c — rx_rt_matvec's AVX-512 loops (library_matvec.c runs the K
 * split, the threads and the final sum around them; its essay has the whole algorithm).
 *
 * Slice (W stored (K, N)): rows [lo, hi) of W times the m rows of x, summed into the
 * (m, w) block at acc (row stride ldacc): for each group of four rows of W and each
 * 16-column vector, the four vectors of W are loaded once and each row i of x updates
 * its accumulator vector with four fused multiply-adds in row order,
 * acc = fma(x3, w3, fma(x2, w2, fma(x1, w1, fma(x0, w0, acc)))); the first group starts
 * from zero (no read of acc), the rows past the last full group one at a time. Row i's
 * sums are the same whatever m (the one-row product's). Columns past the last full
 * vector run through a mask.
 *
 * Dots (W stored (N, K)): columns [c0, c1) of C, four rows of W at a time: for each row
 * i of x, four 16-lane accumulators along K (one per row of W, x's vector loaded once
 * for the four), the K tail through a mask, then each accumulator's lanes added by
 * _mm512_reduce_add_ps (a fixed tree); the last rows of W one at a time. Written to
 * dots[i * n + c] unscaled.
 *
 * Compiled with a target attribute; library_matvec.c calls these only when
 * __builtin_cpu_supports("avx512f") and $RX_GEMM_KERNEL does not ask for a lower path.
 * Cost: 2 m flops per element of W read; W read once (the slice's rows from memory in
 * order, four streams), acc read and written m times per four rows of W (L1).
 */
#include "rt_int.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))

/* Columns [q, q + 16) (mask k) of the block for rows r0 .. r0 + 3 of W and the m rows of
 * x; first: acc not read (starts at zero); pf: prefetch the same columns of the next
 * four rows (the next group's loads: software prefetch measured 13 -> 21 GB/s at 4 rows
 * and 21 -> 30 at one, one thread, weights far larger than the L3). */
AVX512_FN static inline __attribute__((always_inline)) void
quad(const float *x, int64_t ldx, int64_t m, const float *w, int64_t ldw, int64_t r0, int64_t q,
     __mmask16 k, float *acc, int64_t ldacc, int first, int pf)
{
    const float *w0 = w + r0 * ldw + q;
    if (pf) {
        const float *p = w0 + 4 * ldw;
        _mm_prefetch((const char *)p, _MM_HINT_T0);
        _mm_prefetch((const char *)(p + ldw), _MM_HINT_T0);
        _mm_prefetch((const char *)(p + 2 * ldw), _MM_HINT_T0);
        _mm_prefetch((const char *)(p + 3 * ldw), _MM_HINT_T0);
    }
    __m512 v0 = _mm512_maskz_loadu_ps(k, w0), v1 = _mm512_maskz_loadu_ps(k, w0 + ldw),
           v2 = _mm512_maskz_loadu_ps(k, w0 + 2 * ldw), v3 = _mm512_maskz_loadu_ps(k, w0 + 3 * ldw);
    for (int64_t i = 0; i < m; i++) {
        const float *xr = x + i * ldx + r0;
        float *a = acc + i * ldacc + q;
        __m512 s = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k, a);
        s = _mm512_fmadd_ps(_mm512_set1_ps(xr[0]), v0, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(xr[1]), v1, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(xr[2]), v2, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(xr[3]), v3, s);
        _mm512_mask_storeu_ps(a, k, s);
    }
}

/* One row r of W (the slice's rows past the last group of four). */
AVX512_FN static inline void single(const float *x, int64_t ldx, int64_t m, const float *w,
                                    int64_t ldw, int64_t r, int64_t q, __mmask16 k, float *acc,
                                    int64_t ldacc, int first)
{
    __m512 v = _mm512_maskz_loadu_ps(k, w + r * ldw + q);
    for (int64_t i = 0; i < m; i++) {
        float *a = acc + i * ldacc + q;
        __m512 s = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k, a);
        _mm512_mask_storeu_ps(a, k, _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + r]), v, s));
    }
}

AVX512_FN void rx_rt_matvec_slice512(const float *x, int64_t ldx, int64_t m, const float *w,
                                     int64_t ldw, int64_t lo, int64_t hi, int64_t w_cols,
                                     float *acc, int64_t ldacc)
{
    int64_t full = w_cols / 16 * 16;
    __mmask16 tail = (__mmask16)((1u << (w_cols - full)) - 1u);
    int64_t r = lo;
    for (; r + 4 <= hi; r += 4) {
        int first = r == lo, pf = r + 8 <= hi;
        for (int64_t q = 0; q < full; q += 16)
            quad(x, ldx, m, w, ldw, r, q, (__mmask16)0xffff, acc, ldacc, first, pf);
        if (tail) quad(x, ldx, m, w, ldw, r, full, tail, acc, ldacc, first, pf);
    }
    for (; r < hi; r++) {
        int first = r == lo;
        for (int64_t q = 0; q < full; q += 16)
            single(x, ldx, m, w, ldw, r, q, (__mmask16)0xffff, acc, ldacc, first);
        if (tail) single(x, ldx, m, w, ldw, r, full, tail, acc, ldacc, first);
    }
}

AVX512_FN void rx_rt_matvec_dots512(const float *x, int64_t ldx, int64_t m, const float *w,
                                    int64_t ldw, int64_t k, int64_t n, int64_t c0, int64_t c1,
                                    float *dots)
{
    int64_t full = k / 16 * 16;
    __mmask16 tail = (__mmask16)((1u << (k - full)) - 1u);
    int64_t c = c0;
    for (; c + 4 <= c1; c += 4) {
        const float *w0 = w + c * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        for (int64_t i = 0; i < m; i++) {
            const float *xr = x + i * ldx;
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            for (int64_t q = 0; q < full; q += 16) {
                __m512 xv = _mm512_loadu_ps(xr + q);
                s0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w0 + q), s0);
                s1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w1 + q), s1);
                s2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w2 + q), s2);
                s3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w3 + q), s3);
            }
            if (tail) {
                __m512 xv = _mm512_maskz_loadu_ps(tail, xr + full);
                s0 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, w0 + full), s0);
                s1 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, w1 + full), s1);
                s2 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, w2 + full), s2);
                s3 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, w3 + full), s3);
            }
            float *d = dots + i * n + c;
            d[0] = _mm512_reduce_add_ps(s0);
            d[1] = _mm512_reduce_add_ps(s1);
            d[2] = _mm512_reduce_add_ps(s2);
            d[3] = _mm512_reduce_add_ps(s3);
        }
    }
    for (; c < c1; c++) {
        const float *wr = w + c * ldw;
        for (int64_t i = 0; i < m; i++) {
            const float *xr = x + i * ldx;
            __m512 s = _mm512_setzero_ps();
            for (int64_t q = 0; q < full; q += 16)
                s = _mm512_fmadd_ps(_mm512_loadu_ps(xr + q), _mm512_loadu_ps(wr + q), s);
            if (tail)
                s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, xr + full),
                                    _mm512_maskz_loadu_ps(tail, wr + full), s);
            dots[i * n + c] = _mm512_reduce_add_ps(s);
        }
    }
}

#endif
