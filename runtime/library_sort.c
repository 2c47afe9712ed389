/*
 * library_sort.c — rt.topk, the sort of the topk / sort / argsort ops (compiler/legalize/
 * legalize_lib.c makes the call on the CPU).
 *
 *   rt.topk (x, params, out...): params i64 (3,) = axis (normalized), largest (1: the
 *     greatest first, 0: the least first), outputs (1 values, 2 indices, 3 both, in
 *     that order after params). k is the outputs' extent along axis (0 <= k <= n, n
 *     x's); every other extent equals x's. Values have x's dtype; indices are i64 or
 *     i32. x: f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, bool.
 *
 * Order: a total order on keys. Floats: -0.0 equals +0.0, every NaN equals every other
 * NaN and is greater than +inf (NumPy's and PyTorch's sort: NaN last ascending, first
 * descending; ONNX leaves NaN unspecified). Equal keys keep the lower index first (ONNX
 * TopK's rule, as ONNX Runtime does; torch.sort's stable=True order). So the result is
 * one well-defined permutation, whatever `sorted` said.
 *
 * How: each row along axis (rows = the product of the other extents) is read into
 * (key, index) pairs, the key an unsigned integer whose order is the total order above
 * (floats: sign-flip transform, NaN mapped to the maximum; descending: the key's
 * complement, so one ascending sort serves both and ties stay lower-index first). Then
 *   - k * 16 <= n: one streaming pass with a max-heap of the k best so far (an element
 *     enters only when its key is below the root's: O(n) compares plus O(log k) per
 *     entry), then the k sorted: a sampling head's top 5 of 32000 reads the row once.
 *     Contiguous f32 rows compute and compare the keys 16 at a time with AVX-512F (8 with
 *     AVX2; $RX_SORT_KERNEL=portable or avx2 forces the lower paths), offering only the
 *     lanes below the root, in index order;
 *   - otherwise an LSD radix sort by bytes (all byte histograms from one pass; a byte
 *     that is equal in every key skips its pass: f32 keys take 4 passes at most, i8 one),
 *     stable, so the index order of the read breaks ties: O(n * passes);
 *   - rows under 32, or k under 32 after the heap: insertion sort on (key, index).
 * Rows go to threads in contiguous runs (rx_rt_parallel_for), each thread with its own
 * scratch (two arrays of n pairs). One long row sorts on one thread. Rows longer than
 * 2^32 - 1 are refused (code 4). Codes: 2 arguments, 3 dtype, 4 shape, 5 params, 6 out
 * of memory.
 */
#include "rt_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define SO_X86 1
#include <immintrin.h>
#else
#define SO_X86 0
#endif

enum { SO_OK = 0, SO_ARGS = 2, SO_DTYPE = 3, SO_SHAPE = 4, SO_PARAMS = 5, SO_NOMEM = 6 };

typedef struct pair {
    uint64_t key;
    uint64_t idx;
} pair;

typedef struct topk {
    const char *x;       /* x's data */
    char *vals, *inds;   /* the outputs, NULL when not asked for */
    int es, is;          /* element size of x, of the indices (4 or 8) */
    int kind;            /* key kind (K_*) */
    bool largest;
    int64_t outer, n, inner, k, rows;
    _Atomic int failed;  /* a thread could not get its scratch */
} topk;

enum { K_F32, K_F64, K_F16, K_BF16, K_INT, K_UINT };

/* ---- keys ---- */

static uint64_t key_f32(uint32_t u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu; /* NaN: past +inf */
    if (u == 0x80000000u) u = 0;                               /* -0 == +0 */
    return u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u); /* branch-free: signs mix */
}

static uint64_t key_f64(uint64_t u)
{
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return UINT64_MAX;
    if (u == 0x8000000000000000ull) u = 0;
    return u ^ ((uint64_t)((int64_t)u >> 63) | 0x8000000000000000ull);
}

static uint64_t key_f16(uint16_t u)
{
    if ((u & 0x7fffu) > 0x7c00u) return 0xffffu;
    if (u == 0x8000u) u = 0;
    return (uint16_t)(u ^ ((uint16_t)(0 - (u >> 15)) | 0x8000u));
}

/* The order key of element j of a row (element pointer p). */
static inline uint64_t key_of(const topk *t, const char *p)
{
    switch (t->kind) {
    case K_F32: {
        uint32_t u;
        memcpy(&u, p, 4);
        return key_f32(u);
    }
    case K_F64: {
        uint64_t u;
        memcpy(&u, p, 8);
        return key_f64(u);
    }
    case K_F16: {
        uint16_t u;
        memcpy(&u, p, 2);
        return key_f16(u);
    }
    case K_BF16: {
        uint16_t u;
        memcpy(&u, p, 2);
        return key_f32((uint32_t)u << 16);
    }
    case K_INT: { /* sign bit flipped: signed order as unsigned */
        uint64_t u = 0;
        switch (t->es) {
        case 1: u = (uint8_t)(*(const uint8_t *)p ^ 0x80u); break;
        case 2: { uint16_t v; memcpy(&v, p, 2); u = (uint16_t)(v ^ 0x8000u); break; }
        case 4: { uint32_t v; memcpy(&v, p, 4); u = v ^ 0x80000000u; break; }
        default: memcpy(&u, p, 8); u ^= 0x8000000000000000ull; break;
        }
        return u;
    }
    default: {
        uint64_t u = 0;
        switch (t->es) {
        case 1: u = *(const uint8_t *)p; break;
        case 2: { uint16_t v; memcpy(&v, p, 2); u = v; break; }
        case 4: { uint32_t v; memcpy(&v, p, 4); u = v; break; }
        default: memcpy(&u, p, 8); break;
        }
        return u;
    }
    }
}

/* ---- sorting (key, idx) pairs ascending ---- */

static inline bool less(const pair *a, const pair *b)
{
    return a->key < b->key || (a->key == b->key && a->idx < b->idx);
}

static void insertion(pair *a, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        pair v = a[i];
        int64_t j = i;
        for (; j > 0 && less(&v, &a[j - 1]); j--) a[j] = a[j - 1];
        a[j] = v;
    }
}

/* Stable LSD radix sort of a[0..n) by the low nb bytes of key (tmp: n scratch pairs, h:
 * nb * 256 counters); a holds the result. The pairs arrive in index order (or, after a
 * selection, are sorted by a key unique per pair), so stability breaks ties by index. */
static inline uint64_t field(const pair *p, bool by_idx) { return by_idx ? p->idx : p->key; }

static void radix_by(pair *a, pair *tmp, int64_t n, int64_t (*h)[256], int nb, bool by_idx)
{
    memset(h, 0, (size_t)nb * sizeof *h);
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = field(&a[i], by_idx);
        for (int b = 0; b < nb; b++) h[b][(k >> (8 * b)) & 0xff]++;
    }
    pair *src = a, *dst = tmp;
    for (int b = 0; b < nb; b++) {
        if (h[b][(field(&src[0], by_idx) >> (8 * b)) & 0xff] == n) continue; /* no-op pass */
        int64_t off = 0;
        for (int v = 0; v < 256; v++) {
            int64_t c = h[b][v];
            h[b][v] = off;
            off += c;
        }
        for (int64_t i = 0; i < n; i++)
            dst[h[b][(field(&src[i], by_idx) >> (8 * b)) & 0xff]++] = src[i];
        pair *s = src;
        src = dst;
        dst = s;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

static void radix(pair *a, pair *tmp, int64_t n, int64_t (*h)[256], int nb)
{
    if (n < 32) insertion(a, n);
    else radix_by(a, tmp, n, h, nb, false);
}

/* Max-heap of h[0..k) by (key, idx): restores the heap below position i. */
static void sift_down(pair *h, int64_t k, int64_t i)
{
    pair v = h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= k) break;
        if (c + 1 < k && less(&h[c], &h[c + 1])) c++;
        if (!less(&v, &h[c])) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static void stream(const topk *s, const char *row, size_t step, uint64_t flip, pair *a);

/* The k first pairs of the row in order into a[0..k) (a, tmp: scratch of n pairs),
 * streaming: a max-heap of the k best so far, an element entering only when its key is
 * below the root's (elements come in index order, so an equal key never beats an
 * earlier one). O(n + m log k), m the entries (about k log(n / k) on shuffled data). */
static void heap_select(const topk *s, const char *row, size_t step, uint64_t flip, pair *a,
                        pair *tmp, int64_t (*h)[256], int nb)
{
    int64_t k = s->k;
    for (int64_t j = 0; j < k; j++) {
        a[j].key = key_of(s, row + (size_t)j * step) ^ flip;
        a[j].idx = (uint64_t)j;
    }
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(a, k, i);
    stream(s, row, step, flip, a);
    if (k < 32) {
        insertion(a, k);
    } else { /* back into index order, then stable by key */
        radix_by(a, tmp, k, h, 4, true);
        radix_by(a, tmp, k, h, nb, false);
    }
}

/* ---- the streaming pass, f32 rows in contiguous memory ---- */

enum { F_PORTABLE, F_AVX2, F_AVX512 };
static int filter_kind;
static pthread_once_t filter_once = PTHREAD_ONCE_INIT;

static void filter_choose(void) { filter_kind = rx_rt_isa_choice("RX_SORT_KERNEL"); }

/* Offers element j (key) to the heap a of k. */
static inline void offer(pair *a, int64_t k, uint64_t key, int64_t j)
{
    if (key < a[0].key) {
        a[0].key = key;
        a[0].idx = (uint64_t)j;
        sift_down(a, k, 0);
    }
}

#if SO_X86
/* Elements [j, n) of an f32 row: 16 keys at a time (key_f32 vectorized, flipped), the
 * lanes below the heap's root offered in index order; most vectors have none. */
__attribute__((target("avx512f"))) static int64_t stream512(const float *x, int64_t j, int64_t n,
                                                           uint32_t flip, pair *a, int64_t k)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), abs = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000), ones = _mm512_set1_epi32(-1),
                  fl = _mm512_set1_epi32((int)flip);
    for (; j + 16 <= n; j += 16) {
        __m512i u = _mm512_loadu_si512((const void *)(x + j));
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        u = _mm512_mask_mov_epi32(u, _mm512_cmpeq_epu32_mask(u, sign), _mm512_setzero_si512());
        __m512i key = _mm512_xor_si512(u, _mm512_or_si512(_mm512_srai_epi32(u, 31), sign));
        key = _mm512_xor_si512(_mm512_mask_mov_epi32(key, nan, ones), fl);
        __mmask16 m = _mm512_cmplt_epu32_mask(key, _mm512_set1_epi32((int)(uint32_t)a[0].key));
        if (!m) continue;
        uint32_t kv[16];
        _mm512_storeu_si512((void *)kv, key);
        for (int l = 0; l < 16; l++)
            if (m >> l & 1) offer(a, k, kv[l], j + l);
    }
    return j;
}

/* The same with AVX2, 8 at a time (unsigned compares as signed ones of biased keys). */
__attribute__((target("avx2"))) static int64_t stream256(const float *x, int64_t j, int64_t n,
                                                        uint32_t flip, pair *a, int64_t k)
{
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u), abs = _mm256_set1_epi32(0x7fffffff),
                  inf = _mm256_set1_epi32(0x7f800000), fl = _mm256_set1_epi32((int)flip);
    for (; j + 8 <= n; j += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(x + j));
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf); /* both below 2^31 */
        u = _mm256_andnot_si256(_mm256_cmpeq_epi32(u, sign), u);
        __m256i key = _mm256_xor_si256(u, _mm256_or_si256(_mm256_srai_epi32(u, 31), sign));
        key = _mm256_xor_si256(_mm256_or_si256(key, nan), fl);
        __m256i root = _mm256_set1_epi32((int)((uint32_t)a[0].key ^ 0x80000000u));
        int m = _mm256_movemask_ps(_mm256_castsi256_ps(
            _mm256_cmpgt_epi32(root, _mm256_xor_si256(key, sign))));
        if (!m) continue;
        uint32_t kv[8];
        _mm256_storeu_si256((__m256i *)(void *)kv, key);
        for (int l = 0; l < 8; l++)
            if (m >> l & 1) offer(a, k, kv[l], j + l);
    }
    return j;
}
#endif

/* The streaming pass over elements [k, n) of a row (after the heap's first k). */
static void stream(const topk *s, const char *row, size_t step, uint64_t flip, pair *a)
{
    int64_t j = s->k;
#if SO_X86
    if (s->kind == K_F32 && step == 4) {
        pthread_once(&filter_once, filter_choose);
        const float *x = (const float *)(const void *)row;
        if (filter_kind == F_AVX512) j = stream512(x, j, s->n, (uint32_t)flip, a, s->k);
        else if (filter_kind == F_AVX2) j = stream256(x, j, s->n, (uint32_t)flip, a, s->k);
    }
#endif
    for (; j < s->n; j++) offer(a, s->k, key_of(s, row + (size_t)j * step) ^ flip, j);
}

/* ---- the call ---- */

static void rows_part(void *ud, int t, int nt)
{
    topk *s = ud;
    int64_t r0 = s->rows * t / nt, r1 = s->rows * (t + 1) / nt;
    if (r0 >= r1) return;
    pair *a = malloc((size_t)s->n * 2 * sizeof *a);
    int64_t (*h)[256] = malloc(8 * sizeof *h);
    if (!a || !h) {
        free(a);
        free(h);
        s->failed = 1;
        return;
    }
    pair *tmp = a + s->n;
    int nb = s->kind == K_F32 || s->kind == K_BF16 ? 4 : s->kind == K_F16 ? 2
             : s->kind == K_F64 ? 8 : s->es; /* key bytes */
    uint64_t flip = !s->largest ? 0 : nb == 8 ? UINT64_MAX : (1ull << (8 * nb)) - 1;
    for (int64_t r = r0; r < r1; r++) {
        int64_t o = r / s->inner, i = r % s->inner;
        const char *row = s->x + (size_t)((o * s->n) * s->inner + i) * (size_t)s->es;
        size_t step = (size_t)s->inner * (size_t)s->es;
        if (s->k * 16 <= s->n) {
            heap_select(s, row, step, flip, a, tmp, h, nb);
        } else {
            for (int64_t j = 0; j < s->n; j++) {
                a[j].key = key_of(s, row + (size_t)j * step) ^ flip;
                a[j].idx = (uint64_t)j;
            }
            radix(a, tmp, s->n, h, nb);
        }
        size_t ostep = (size_t)s->inner, obase = (size_t)(o * s->k * s->inner + i);
        for (int64_t j = 0; j < s->k; j++) {
            size_t d = obase + (size_t)j * ostep;
            if (s->vals)
                memcpy(s->vals + d * (size_t)s->es, row + (size_t)a[j].idx * step, (size_t)s->es);
            if (s->inds) {
                if (s->is == 8) {
                    int64_t v = (int64_t)a[j].idx;
                    memcpy(s->inds + d * 8, &v, 8);
                } else {
                    int32_t v = (int32_t)a[j].idx;
                    memcpy(s->inds + d * 4, &v, 4);
                }
            }
        }
    }
    free(a);
    free(h);
}

const char *rx_rt_topk_strerr(int32_t code)
{
    switch (code) {
    case SO_ARGS: return "expects x, params and the outputs params name (values, indices)";
    case SO_DTYPE: return "x must be a real, integer or bool tensor, values of x's dtype, "
                          "indices i64 or i32";
    case SO_SHAPE: return "the outputs must have x's extents but along axis (k <= n < 2^32)";
    case SO_PARAMS: return "params must be i64 (axis, largest, outputs)";
    case SO_NOMEM: return "out of memory for the sort's scratch";
    default: return NULL;
    }
}

static int kind_of(DLDataType d)
{
    if (d.lanes != 1) return -1;
    if (d.code == kDLFloat) return d.bits == 32 ? K_F32 : d.bits == 64 ? K_F64 : d.bits == 16 ? K_F16 : -1;
    if (d.code == kDLBfloat && d.bits == 16) return K_BF16;
    if (d.code == kDLUInt && d.bits == 1) return K_UINT; /* bool: one byte */
    if (d.bits != 8 && d.bits != 16 && d.bits != 32 && d.bits != 64) return -1;
    return d.code == kDLInt ? K_INT : d.code == kDLUInt ? K_UINT : -1;
}

int32_t rx_rt_topk(DLTensor *const *args, int32_t nargs)
{
    if (nargs < 3) return SO_ARGS;
    const DLTensor *x = args[0], *p = args[1];
    if (p->dtype.code != kDLInt || p->dtype.bits != 64 || p->ndim != 1 || p->shape[0] != 3)
        return SO_PARAMS;
    int64_t pv[3];
    memcpy(pv, (const char *)p->data + p->byte_offset, sizeof pv);
    int64_t ax = pv[0], outs = pv[2];
    if (ax < 0 || ax >= x->ndim || outs < 1 || outs > 3) return SO_PARAMS;
    int nouts = outs == 3 ? 2 : 1;
    if (nargs != 2 + nouts) return SO_ARGS;
    const DLTensor *v = outs & 1 ? args[2] : NULL, *ix = outs & 2 ? args[2 + (outs & 1)] : NULL;
    int kind = kind_of(x->dtype);
    if (kind < 0) return SO_DTYPE;
    if (v && (v->dtype.code != x->dtype.code || v->dtype.bits != x->dtype.bits ||
              v->dtype.lanes != 1))
        return SO_DTYPE;
    if (ix && (ix->dtype.code != kDLInt || (ix->dtype.bits != 64 && ix->dtype.bits != 32) ||
               ix->dtype.lanes != 1))
        return SO_DTYPE;
    const DLTensor *o = v ? v : ix;
    if (o->ndim != x->ndim || (v && ix && ix->ndim != x->ndim)) return SO_SHAPE;
    topk s = {0};
    s.outer = s.inner = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (v && ix && v->shape[d] != ix->shape[d]) return SO_SHAPE;
        if (d == ax) continue;
        if (o->shape[d] != x->shape[d]) return SO_SHAPE;
        if (d < ax) s.outer *= x->shape[d];
        else s.inner *= x->shape[d];
    }
    s.n = x->shape[ax];
    s.k = o->shape[ax];
    if (s.k < 0 || s.k > s.n || s.n > (int64_t)UINT32_MAX) return SO_SHAPE;
    s.rows = s.outer * s.inner;
    if (s.rows == 0 || s.k == 0) return SO_OK;
    s.x = (const char *)x->data + x->byte_offset;
    s.vals = v ? (char *)v->data + v->byte_offset : NULL;
    s.inds = ix ? (char *)ix->data + ix->byte_offset : NULL;
    s.es = x->dtype.bits == 1 ? 1 : x->dtype.bits / 8;
    s.is = ix ? ix->dtype.bits / 8 : 8;
    s.kind = kind;
    s.largest = pv[1] != 0;
    if (s.rows > 1 && s.rows * s.n >= 65536) rx_rt_parallel_for(rows_part, &s);
    else rows_part(&s, 0, 1);
    return s.failed ? SO_NOMEM : SO_OK;
}
