/*
 * library_scan.c — rt.cumsum, the running sum of the cumsum op on the CPU (compiler/
 * legalize/legalize_lib.c makes the call).
 *
 *   rt.cumsum (x, params, y): params i64 (3,) = axis (normalized; -1: over the raveled
 *     x, y then 1-d), exclusive (each element left out of its own sum: the first is 0),
 *     reverse (sums run from the end: y[i] = sum of x[j] for j >= i, or j > i when
 *     exclusive; ONNX CumSum's attributes). x and y have one dtype: f32, f64, i32, i64;
 *     y has x's shape (or its element count, raveled). Integers wrap as two's complement.
 *
 * x is seen as (outer, n, inner) around the axis. Two forms:
 *   - inner == 1 (the last axis, or raveled): each row is one contiguous run. f32 with
 *     AVX-512F: 16 elements at a time, their prefix in the register (4 shifted adds),
 *     plus the running carry (one broadcast add on the dependence chain per 16
 *     elements); reverse reads each vector lane-reversed. AVX2+FMA: the same on 8 (two
 *     in-lane shifted adds, then the low half's total into the high half). Otherwise
 *     (and f64, integers) the sequential loop. Floats are summed in another association
 *     than the sequential sum within a vector (the vector's partial prefixes), inside
 *     its rounding bound.
 *   - inner > 1: rows j of inner elements, y[j] = y[j -/+ 1] + x[j] (exclusive:
 *     + x[j -/+ 1]), elementwise over inner (vectorized by the compiler), exact sequential
 *     order per element.
 * Threads, from 2^20 elements (below, one thread scans in about the time a parallel
 * region takes to start): rows of the outer extent (times chunks of inner for the
 * second form) split into contiguous runs; a single contiguous row splits into 64
 * chunks: local sums, then each chunk's offset (the totals of the chunks before it)
 * added in a second parallel pass (one more write of the row). $RX_SCAN_KERNEL=portable
 * or avx2 forces the lower kernels (tests run each). Cost O(numel), two reads and one write per
 * element at most. Codes: 2 arguments, 3 dtype, 4 shape, 5 params.
 */
#include "rt_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define SC_X86 1
#include <immintrin.h>
#else
#define SC_X86 0
#endif

enum { SC_OK = 0, SC_ARGS = 2, SC_DTYPE = 3, SC_SHAPE = 4, SC_PARAMS = 5 };
enum { K_PORTABLE = 0, K_AVX2 = 1, K_AVX512 = 2 };
enum { D_F32, D_F64, D_I32, D_I64 };

int rx_rt_isa_choice(const char *var)
{
    int best = K_PORTABLE;
#if SC_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = K_AVX2;
    if (best && __builtin_cpu_supports("avx512f")) best = K_AVX512;
#endif
    const char *k = getenv(var);
    if (k && !strcmp(k, "portable")) best = K_PORTABLE;
    if (k && !strcmp(k, "avx2") && best > K_AVX2) best = K_AVX2;
    return best;
}

static int kernel_kind;
static pthread_once_t kind_once = PTHREAD_ONCE_INIT;

static void kind_choose(void) { kernel_kind = rx_rt_isa_choice("RX_SCAN_KERNEL"); }

typedef struct scan {
    const char *x;
    char *y;
    int dt;              /* D_* */
    bool exclusive, reverse;
    int64_t outer, n, inner;
    int64_t chunks;      /* inner split into this many chunks per outer row (inner > 1) */
    int kind;            /* K_* */
    double *tot;         /* long single row: per-thread chunk totals (f32, f64) */
    int64_t *itot;       /* the same for integers */
} scan;

/* ---- contiguous rows (inner == 1): y[i] of one row of n, from carry c ---- */

#define ROW_SEQ(name, T)                                                                 \
    static T name(const T *x, T *y, int64_t n, bool ex, bool rev, T c)                  \
    {                                                                                    \
        for (int64_t j = 0; j < n; j++) {                                                \
            int64_t i = rev ? n - 1 - j : j;                                             \
            T v = x[i];                                                                  \
            if (ex) {                                                                    \
                y[i] = c;                                                                \
                c = (T)(c + v);                                                          \
            } else {                                                                     \
                c = (T)(c + v);                                                          \
                y[i] = c;                                                                \
            }                                                                            \
        }                                                                                \
        return c;                                                                        \
    }
ROW_SEQ(row_f32, float)
ROW_SEQ(row_f64, double)
#undef ROW_SEQ

/* Integers in unsigned arithmetic (wrapping, no UB). */
#define ROW_INT(name, T, U)                                                              \
    static T name(const T *x, T *y, int64_t n, bool ex, bool rev, T c0)                 \
    {                                                                                    \
        U c = (U)c0;                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                \
            int64_t i = rev ? n - 1 - j : j;                                             \
            U v = (U)x[i];                                                               \
            if (ex) {                                                                    \
                y[i] = (T)c;                                                             \
                c += v;                                                                  \
            } else {                                                                     \
                c += v;                                                                  \
                y[i] = (T)c;                                                             \
            }                                                                            \
        }                                                                                \
        return (T)c;                                                                     \
    }
ROW_INT(row_i32, int32_t, uint32_t)
ROW_INT(row_i64, int64_t, uint64_t)
#undef ROW_INT

#if SC_X86
__attribute__((target("avx512f"))) static float row_f32_512(const float *x, float *y, int64_t n,
                                                            bool ex, bool rev, float c0)
{
    const __m512 z = _mm512_setzero_ps();
    const __m512i last = _mm512_set1_epi32(15), flip = _mm512_set_epi32(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 c = _mm512_set1_ps(c0);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        int64_t at = rev ? n - j - 16 : j;
        __m512 v = _mm512_loadu_ps(x + at);
        if (rev) v = _mm512_permutexvar_ps(flip, v);
        __m512i vi = _mm512_castps_si512(v), zi = _mm512_castps_si512(z);
        v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_alignr_epi32(vi, zi, 15)));
        vi = _mm512_castps_si512(v);
        v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_alignr_epi32(vi, zi, 14)));
        vi = _mm512_castps_si512(v);
        v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_alignr_epi32(vi, zi, 12)));
        vi = _mm512_castps_si512(v);
        v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_alignr_epi32(vi, zi, 8)));
        __m512 s = _mm512_add_ps(v, c), out = s;
        if (ex) /* lane 0 the carry in, lane i the inclusive sum of lane i - 1 */
            out = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(s),
                                                          _mm512_castps_si512(c), 15));
        c = _mm512_permutexvar_ps(last, s);
        if (rev) out = _mm512_permutexvar_ps(flip, out);
        _mm512_storeu_ps(y + at, out);
    }
    float cs = _mm512_cvtss_f32(c);
    return rev ? row_f32(x, y, n - j, ex, true, cs) : row_f32(x + j, y + j, n - j, ex, false, cs);
}

__attribute__((target("avx2,fma"))) static float row_f32_256(const float *x, float *y, int64_t n,
                                                             bool ex, bool rev, float c0)
{
    const __m256i last = _mm256_set1_epi32(7), flip = _mm256_set_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                  shift1 = _mm256_set_epi32(6, 5, 4, 3, 2, 1, 0, 0);
    __m256 c = _mm256_set1_ps(c0);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        int64_t at = rev ? n - j - 8 : j;
        __m256 v = _mm256_loadu_ps(x + at);
        if (rev) v = _mm256_permutevar8x32_ps(v, flip);
        __m256i vi = _mm256_castps_si256(v);
        v = _mm256_add_ps(v, _mm256_castsi256_ps(_mm256_slli_si256(vi, 4)));
        vi = _mm256_castps_si256(v);
        v = _mm256_add_ps(v, _mm256_castsi256_ps(_mm256_slli_si256(vi, 8)));
        __m256 lo = _mm256_shuffle_ps(v, v, 0xff); /* lane 3 of each half */
        v = _mm256_add_ps(v, _mm256_permute2f128_ps(lo, lo, 0x08));
        __m256 s = _mm256_add_ps(v, c), out = s;
        if (ex) /* lane 0 the carry in, lane i the sum of lane i - 1 */
            out = _mm256_blend_ps(_mm256_permutevar8x32_ps(s, shift1), c, 1);
        c = _mm256_permutevar8x32_ps(s, last);
        if (rev) out = _mm256_permutevar8x32_ps(out, flip);
        _mm256_storeu_ps(y + at, out);
    }
    float cs = _mm256_cvtss_f32(c);
    return rev ? row_f32(x, y, n - j, ex, true, cs) : row_f32(x + j, y + j, n - j, ex, false, cs);
}
#endif

/* One contiguous row of n from carry c (as double / int64 for the dtype); returns the
 * carry out. */
static void row(const scan *s, const char *x, char *y, int64_t n, double *c, int64_t *ic)
{
    bool ex = s->exclusive, rev = s->reverse;
    switch (s->dt) {
    case D_F32:
#if SC_X86
        if (s->kind == K_AVX512) {
            *c = row_f32_512((const float *)(const void *)x, (float *)(void *)y, n, ex, rev, (float)*c);
            return;
        }
        if (s->kind == K_AVX2) {
            *c = row_f32_256((const float *)(const void *)x, (float *)(void *)y, n, ex, rev, (float)*c);
            return;
        }
#endif
        *c = row_f32((const float *)(const void *)x, (float *)(void *)y, n, ex, rev, (float)*c);
        return;
    case D_F64: *c = row_f64((const double *)(const void *)x, (double *)(void *)y, n, ex, rev, *c); return;
    case D_I32:
        *ic = row_i32((const int32_t *)(const void *)x, (int32_t *)(void *)y, n, ex, rev, (int32_t)*ic);
        return;
    default: *ic = row_i64((const int64_t *)(const void *)x, (int64_t *)(void *)y, n, ex, rev, *ic); return;
    }
}

static int esize(int dt) { return dt == D_F32 || dt == D_I32 ? 4 : 8; }

/* ---- strided rows (inner > 1): elements [i0, i1) of every row j of one outer slice ---- */

#define COLS(name, T, U)                                                                  \
    static void name(const T *x, T *y, int64_t n, int64_t inner, int64_t i0, int64_t i1,  \
                     bool ex, bool rev)                                                   \
    {                                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                 \
            int64_t r = rev ? n - 1 - j : j, p = rev ? r + 1 : r - 1;                     \
            T *yr = y + r * inner;                                                        \
            const T *xr = x + (ex ? p : r) * inner, *yp = y + p * inner;                  \
            if (j == 0) {                                                                 \
                for (int64_t i = i0; i < i1; i++) yr[i] = ex ? (T)0 : xr[i];              \
            } else {                                                                      \
                for (int64_t i = i0; i < i1; i++) yr[i] = (T)((U)yp[i] + (U)xr[i]);       \
            }                                                                             \
        }                                                                                 \
    }
COLS(cols_f32, float, float)
COLS(cols_f64, double, double)
COLS(cols_i32, int32_t, uint32_t)
COLS(cols_i64, int64_t, uint64_t)
#undef COLS

static void cols(const scan *s, int64_t o, int64_t i0, int64_t i1)
{
    size_t off = (size_t)(o * s->n * s->inner) * (size_t)esize(s->dt);
    const void *x = s->x + off;
    void *y = s->y + off;
    switch (s->dt) {
    case D_F32: cols_f32(x, y, s->n, s->inner, i0, i1, s->exclusive, s->reverse); break;
    case D_F64: cols_f64(x, y, s->n, s->inner, i0, i1, s->exclusive, s->reverse); break;
    case D_I32: cols_i32(x, y, s->n, s->inner, i0, i1, s->exclusive, s->reverse); break;
    default: cols_i64(x, y, s->n, s->inner, i0, i1, s->exclusive, s->reverse); break;
    }
}

/* ---- the parallel parts ---- */

static void rows_part(void *ud, int t, int nt)
{
    const scan *s = ud;
    if (s->inner == 1) {
        size_t es = (size_t)esize(s->dt);
        for (int64_t o = s->outer * t / nt; o < s->outer * (t + 1) / nt; o++) {
            double c = 0;
            int64_t ic = 0;
            row(s, s->x + (size_t)(o * s->n) * es, s->y + (size_t)(o * s->n) * es, s->n, &c, &ic);
        }
        return;
    }
    int64_t units = s->outer * s->chunks, per = (s->inner + s->chunks - 1) / s->chunks;
    for (int64_t u = units * t / nt; u < units * (t + 1) / nt; u++) {
        int64_t o = u / s->chunks, i0 = (u % s->chunks) * per;
        int64_t i1 = i0 + per < s->inner ? i0 + per : s->inner;
        if (i0 < i1) cols(s, o, i0, i1);
    }
}

/* A single long row: NCHUNK chunks in scan order, chunk q's elements [lo, hi). */
enum { NCHUNK = 64 };

static void chunk_range(const scan *s, int q, int64_t *lo, int64_t *hi)
{
    int64_t a = s->n * q / NCHUNK, b = s->n * (q + 1) / NCHUNK;
    *lo = s->reverse ? s->n - b : a;
    *hi = s->reverse ? s->n - a : b;
}

static void long_local(void *ud, int t, int nt)
{
    scan *s = ud;
    size_t es = (size_t)esize(s->dt);
    for (int q = NCHUNK * t / nt; q < NCHUNK * (t + 1) / nt; q++) {
        int64_t lo, hi;
        chunk_range(s, q, &lo, &hi);
        double c = 0;
        int64_t ic = 0;
        row(s, s->x + (size_t)lo * es, s->y + (size_t)lo * es, hi - lo, &c, &ic);
        s->tot[q] = c;
        s->itot[q] = ic;
    }
}

#define ADD_OFF(T, U, v)                                                       \
    do {                                                                       \
        T *p = (T *)(void *)(s->y + (size_t)lo * sizeof(T)), d = (T)(v);       \
        for (int64_t i = 0; i < hi - lo; i++) p[i] = (T)((U)p[i] + (U)d);      \
    } while (0)

static void long_offset(void *ud, int t, int nt)
{
    scan *s = ud;
    for (int q = NCHUNK * t / nt; q < NCHUNK * (t + 1) / nt; q++) {
        if (q == 0) continue;
        int64_t lo, hi;
        chunk_range(s, q, &lo, &hi);
        double off = 0;
        uint64_t ioff = 0;
        for (int r = 0; r < q; r++) {
            off += s->tot[r];
            ioff += (uint64_t)s->itot[r];
        }
        switch (s->dt) {
        case D_F32: ADD_OFF(float, float, off); break;
        case D_F64: ADD_OFF(double, double, off); break;
        case D_I32: ADD_OFF(int32_t, uint32_t, (int32_t)(uint32_t)ioff); break;
        default: ADD_OFF(int64_t, uint64_t, (int64_t)ioff); break;
        }
    }
}
#undef ADD_OFF

/* ---- the call ---- */

const char *rx_rt_cumsum_strerr(int32_t code)
{
    switch (code) {
    case SC_ARGS: return "expects 3 tensors (x, params, y)";
    case SC_DTYPE: return "x and y must have one dtype: f32, f64, i32 or i64";
    case SC_SHAPE: return "y must have x's shape (raveled: its element count)";
    case SC_PARAMS: return "params must be i64 (axis, exclusive, reverse)";
    default: return NULL;
    }
}

static int dt_of(DLDataType d)
{
    if (d.lanes != 1) return -1;
    if (d.code == kDLFloat) return d.bits == 32 ? D_F32 : d.bits == 64 ? D_F64 : -1;
    if (d.code == kDLInt) return d.bits == 32 ? D_I32 : d.bits == 64 ? D_I64 : -1;
    return -1;
}

int32_t rx_rt_cumsum(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return SC_ARGS;
    const DLTensor *x = args[0], *p = args[1], *y = args[2];
    if (p->dtype.code != kDLInt || p->dtype.bits != 64 || p->ndim != 1 || p->shape[0] != 3)
        return SC_PARAMS;
    int64_t pv[3];
    memcpy(pv, (const char *)p->data + p->byte_offset, sizeof pv);
    int dt = dt_of(x->dtype);
    if (dt < 0 || dt_of(y->dtype) != dt || y->dtype.bits != x->dtype.bits) return SC_DTYPE;
    if (pv[0] < -1 || pv[0] >= x->ndim) return SC_PARAMS;
    scan s = {0};
    s.outer = s.inner = 1;
    int64_t numel = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        numel *= x->shape[d];
        if (pv[0] >= 0 && d < pv[0]) s.outer *= x->shape[d];
        if (pv[0] >= 0 && d > pv[0]) s.inner *= x->shape[d];
    }
    if (pv[0] < 0) {
        if (y->ndim != 1 || y->shape[0] != numel) return SC_SHAPE;
        s.n = numel;
    } else {
        if (y->ndim != x->ndim) return SC_SHAPE;
        for (int32_t d = 0; d < x->ndim; d++)
            if (y->shape[d] != x->shape[d]) return SC_SHAPE;
        s.n = x->shape[pv[0]];
    }
    if (numel == 0) return SC_OK;
    pthread_once(&kind_once, kind_choose);
    s.kind = kernel_kind;
    s.x = (const char *)x->data + x->byte_offset;
    s.y = (char *)y->data + y->byte_offset;
    s.dt = dt;
    s.exclusive = pv[1] != 0;
    s.reverse = pv[2] != 0;
    s.chunks = 1;
    if (s.inner > 1 && s.outer < 8) s.chunks = (s.inner + 255) / 256 < 8 ? (s.inner + 255) / 256 : 8;
    if (numel < (1 << 20)) { /* ~0.1 ms on one thread: a parallel region costs as much */
        rows_part(&s, 0, 1);
    } else if (s.inner == 1 && s.outer == 1) {
        double tot[NCHUNK];
        int64_t itot[NCHUNK];
        s.tot = tot;
        s.itot = itot;
        rx_rt_parallel_for(long_local, &s);
        rx_rt_parallel_for(long_offset, &s);
    } else {
        rx_rt_parallel_for(rows_part, &s);
    }
    return SC_OK;
}
