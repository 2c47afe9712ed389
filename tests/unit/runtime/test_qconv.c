/*
 * test_qconv.c — rt.qconv2d (runtime/library_qconv.c), the 8-bit integer convolution,
 * against an int64 reference reduced modulo 2^32 (taps outside X read 0): u8 and i8 X
 * by i8 and u8 weights (the X ^ 0x80 and W ^ 0x80 corrections, and padding that must
 * read X = 0, i.e. 0x80 in the shifted bytes), 1x1 with C a multiple of 4 (the
 * channel-last copy read in place) and not, 3x3 with symmetric and asymmetric padding,
 * strides 2, dilation 2, a 7x7 stride-2 stem on 3 channels (K 147: padded groups),
 * output channels past one 64-column block and with tails, two images, sizes past the
 * one-thread bound (each thread's band of input rows with its halo: strided, dilated, a
 * 7x7 stem; a 7 x 7 map and a 3 x 5 one whose chunks' column blocks are cut into
 * groups), the extremes (X all 255, W -128 / 127 alternating), and the
 * argument errors. The weight is packed as compiler/legalize/legalize_lib.c packs it.
 * Depthwise (groups = C = Co) on every signedness with a pad value, with and without an
 * epilogue.
 * The tile kernel per $RX_QGEMM_KERNEL (ctest runs it with the CPU's best, avx2 and
 * portable).
 */
#include "rt_test.h"
#include "../rx_check.h"

#include "../../../runtime/rt_int.h"
#include "../../../runtime/rt_qpack.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../../runtime/rt_qepi.h"

static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static DLTensor tensor(void *data, DLDataType dt, int ndim, int64_t *shape)
{
    return rt_dl(data, (uint32_t)dt.code | (uint32_t)dt.bits << 8, ndim, shape);
}

typedef struct qcase {
    int64_t n, c, h, w, co, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
    bool x_signed, w_u8;
    int fill; /* 0 random, 1 the extremes */
} qcase;

static int64_t xval(const uint8_t *x, int64_t i, bool sgn) { return sgn ? (int8_t)x[i] : x[i]; }

static void check(const qcase *q, uint32_t seed)
{
    int64_t ho = (q->h + q->pt + q->pb - q->dh * (q->kh - 1) - 1) / q->sh + 1;
    int64_t wo = (q->w + q->pl + q->pr - q->dw * (q->kw - 1) - 1) / q->sw + 1;
    int64_t nx = q->n * q->c * q->h * q->w, nw = q->co * q->c * q->kh * q->kw, ny = q->n * q->co * ho * wo;
    int64_t k = q->kh * q->kw * q->c;
    uint8_t *x = malloc((size_t)nx), *w = malloc((size_t)nw), *b = malloc((size_t)nw);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)ny);
    int64_t pbytes = rx_qpack_bytes(k, q->co);
    uint8_t *pk = malloc((size_t)pbytes);
    ck_assert(x && w && b && y && pk);
    for (int64_t i = 0; i < nx; i++) x[i] = q->fill ? 0xff : (uint8_t)next(&seed);
    for (int64_t i = 0; i < nw; i++)
        w[i] = q->fill ? (uint8_t)(q->w_u8 ? 0xff : i % 2 ? 0x80 : 0x7f) : (uint8_t)next(&seed);
    for (int64_t i = 0; i < ny; i++) y[i] = 0x5a5a5a5a;
    for (int64_t o = 0; o < q->co; o++) /* as legalize_lib.c: B[(i kw + j) C + c, o] */
        for (int64_t c = 0; c < q->c; c++)
            for (int64_t i = 0; i < q->kh; i++)
                for (int64_t j = 0; j < q->kw; j++)
                    b[((i * q->kw + j) * q->c + c) * q->co + o] = w[((o * q->c + c) * q->kh + i) * q->kw + j];
    rx_qpack(b, k, q->co, q->w_u8 ? 0x80 : 0, pk);
    int64_t params[10] = {q->c, q->kh, q->kw, q->sh, q->sw, q->pt, q->pl, q->dh, q->dw, q->w_u8};
    int64_t sx[4] = {q->n, q->c, q->h, q->w}, sy[4] = {q->n, q->co, ho, wo}, sp[1] = {pbytes}, s10[1] = {10};
    DLTensor tx = tensor(x, (DLDataType){q->x_signed ? kDLInt : kDLUInt, 8, 1}, 4, sx);
    DLTensor tb = tensor(pk, (DLDataType){kDLUInt, 8, 1}, 1, sp);
    DLTensor tp = tensor(params, (DLDataType){kDLInt, 64, 1}, 1, s10);
    DLTensor ty = tensor(y, (DLDataType){kDLInt, 32, 1}, 4, sy);
    DLTensor *args[4] = {&tx, &tb, &tp, &ty};
    ck_assert_int_eq(rx_rt_qconv2d(args, 4), 0);
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t o = 0; o < q->co; o++)
            for (int64_t oy = 0; oy < ho; oy++)
                for (int64_t ox = 0; ox < wo; ox++) {
                    int64_t s = 0;
                    for (int64_t c = 0; c < q->c; c++)
                        for (int64_t i = 0; i < q->kh; i++)
                            for (int64_t j = 0; j < q->kw; j++) {
                                int64_t iy = oy * q->sh + i * q->dh - q->pt, ix = ox * q->sw + j * q->dw - q->pl;
                                if (iy < 0 || iy >= q->h || ix < 0 || ix >= q->w) continue;
                                int64_t wi = ((o * q->c + c) * q->kh + i) * q->kw + j;
                                s += xval(x, ((n * q->c + c) * q->h + iy) * q->w + ix, q->x_signed) *
                                     (q->w_u8 ? w[wi] : (int8_t)w[wi]);
                            }
                    int64_t at = ((n * q->co + o) * ho + oy) * wo + ox;
                    if (y[at] != (int32_t)(uint32_t)(uint64_t)s)
                        ck_abort_msg("C %lld H %lld W %lld -> %lld, %lldx%lld s %lld,%lld p %lld,%lld,%lld,%lld "
                                     "d %lld,%lld %s x %s: Y[%lld, %lld, %lld, %lld] = %d, want %lld",
                                     (long long)q->c, (long long)q->h, (long long)q->w, (long long)q->co,
                                     (long long)q->kh, (long long)q->kw, (long long)q->sh, (long long)q->sw,
                                     (long long)q->pt, (long long)q->pl, (long long)q->pb, (long long)q->pr,
                                     (long long)q->dh, (long long)q->dw, q->x_signed ? "i8" : "u8",
                                     q->w_u8 ? "u8" : "i8", (long long)n, (long long)o, (long long)oy,
                                     (long long)ox, y[at], (long long)s);
                }
    params[0] = q->c + 1; /* params that do not match X: an error, not a wrong read */
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0);
    free(x), free(w), free(b), free(y), free(pk);
}

START_TEST(test_qconv_forms)
{
    static const qcase cases[] = {
        /* n  c   h   w  co kh kw sh sw pt pl pb pr dh dw */
        {1, 8, 5, 7, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, false, 0},   /* 1x1 in place */
        {1, 3, 6, 5, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, false, 0},    /* 1x1, C 3 */
        {1, 16, 9, 10, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, 0}, /* 2 blocks */
        {1, 12, 11, 9, 17, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, false, false, 0}, /* asymmetric */
        {1, 3, 23, 19, 20, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, false, false, 0}, /* a stem */
        {2, 8, 10, 12, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false, false, 0},  /* dilation */
        {2, 5, 7, 8, 6, 3, 2, 1, 2, 1, 0, 1, 1, 1, 1, true, false, 0},     /* i8 X */
        {1, 4, 6, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true, 0},     /* u8 W */
        {1, 6, 5, 9, 65, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, 0},     /* both */
        {1, 4, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, 0},     /* all padding */
    };
    uint32_t seed = 11;
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) check(&cases[i], seed++);
}
END_TEST

/* Past the one-thread bound (chunks of output pixels over the threads), and the
 * extremes on each signedness. */
START_TEST(test_qconv_threads_extremes)
{
    qcase big = {2, 32, 20, 21, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, 0};
    check(&big, 3);
    qcase one = {1, 64, 14, 14, 128, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, false, 0};
    check(&one, 4);
    /* each thread's band of input rows with its halo: strided, dilated, a 7x7 stem */
    qcase strided = {2, 16, 30, 31, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, 0};
    check(&strided, 6);
    qcase dilated = {1, 24, 25, 20, 36, 3, 3, 1, 1, 3, 3, 3, 3, 3, 3, false, true, 0};
    check(&dilated, 7);
    qcase stem = {1, 3, 64, 60, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, false, false, 0};
    check(&stem, 8);
    /* a 7 x 7 map: two balanced chunks, each chunk's column blocks in groups */
    qcase small = {1, 64, 7, 7, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, 0};
    check(&small, 9);
    qcase tiny = {2, 64, 3, 5, 200, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, true, 0};
    check(&tiny, 10);
    for (int sign = 0; sign < 4; sign++) {
        qcase e = {1, 40, 6, 7, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, sign & 1, sign & 2, 1};
        check(&e, 5);
    }
}
END_TEST

/* The epilogue program (runtime/library_qepi.c) against the same f32 steps in scalar C:
 * the zero-point correction as a per-channel IADD, TOF32, a per-channel scale and bias, a
 * ReLU, the requantization (divide, round half to even, zero point, clamp), TRUNC8 and a
 * dequantization, a residual read as u8 and dequantized into t (LOAD, SUB, MUL, then
 * ADD of t), a second requantization into u8 / i8 Y or f32 Y; with the X pad value 128
 * (params[10]) under padding; past one column block with a tail and several threads. */
static float fmaxg(float a, float b) { return a != a ? a : a > b ? a : b; }
static float fming(float a, float b) { return a != a ? a : a < b ? a : b; }

static void check_epi(int64_t c, int64_t h, int64_t w, int64_t co, int ykind, uint32_t seed)
{
    int64_t hw = h * w, nx = c * hw, nw = co * c * 9, ny = co * hw, k = 9 * c;
    uint8_t *x = malloc((size_t)nx), *wt = malloc((size_t)nw), *b = malloc((size_t)nw), *res = malloc((size_t)ny);
    uint8_t *y8 = malloc((size_t)ny);
    float *yf = malloc(sizeof(float) * (size_t)ny);
    int32_t *tab = malloc(sizeof(int32_t) * (size_t)(3 * co));
    int64_t pbytes = rx_qpack_bytes(k, co);
    uint8_t *pk = malloc((size_t)pbytes);
    ck_assert(x && wt && b && res && y8 && yf && tab && pk);
    for (int64_t i = 0; i < nx; i++) x[i] = (uint8_t)next(&seed);
    for (int64_t i = 0; i < nw; i++) wt[i] = (uint8_t)next(&seed);
    for (int64_t i = 0; i < ny; i++) res[i] = (uint8_t)next(&seed);
    for (int64_t o = 0; o < co; o++) {
        float sc = 1e-4f * (float)(1 + next(&seed) % 50), bias = 0.01f * (float)((int)(next(&seed) % 200) - 100);
        tab[o] = (int32_t)(next(&seed) % 100000) - 50000; /* IADD row 0 */
        memcpy(&tab[co + o], &sc, 4);
        memcpy(&tab[2 * co + o], &bias, 4);
    }
    for (int64_t o = 0; o < co; o++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t i = 0; i < 9; i++) b[(i * c + ci) * co + o] = wt[(o * c + ci) * 9 + i];
    rx_qpack(b, k, co, 0, pk);
    float s1 = 0.03f, z1 = 128.0f, s2 = 0.05f, rz = 100.0f, rs = 0.02f, s3 = 0.04f, z3 = 7.0f;
    bool i8 = ykind == 2;
    float lo = i8 ? -128.0f : 0.0f, hi = i8 ? 127.0f : 255.0f;
#define F(v) ((int64_t)fbits(v))
    int64_t prog[][4] = {
        {RX_QE_IADD, RX_QE_CHAN, 0, 0}, {RX_QE_TOF32, 0, 0, 0}, {RX_QE_MUL, RX_QE_CHAN, 1, 0},
        {RX_QE_ADD, RX_QE_CHAN, 2, 0}, {RX_QE_RELU, 0, 0, 0}, {RX_QE_DIV, 0, 0, F(s1)},
        {RX_QE_ROUND, 0, 0, 0}, {RX_QE_ADD, 0, 0, F(z1)}, {RX_QE_MAX, 0, 0, F(0.0f)},
        {RX_QE_MIN, 0, 0, F(255.0f)}, {RX_QE_TRUNC8, 0, 0, 0}, {RX_QE_SUB, 0, 0, F(z1)},
        {RX_QE_MUL, 0, 0, F(s2)}, {RX_QE_LOAD | RX_QE_DST_T, 0, 0, 0},
        {RX_QE_SUB | RX_QE_DST_T, 0, 0, F(rz)}, {RX_QE_MUL | RX_QE_DST_T, 0, 0, F(rs)},
        {RX_QE_ADD | RX_QE_REV, RX_QE_TEMP, 0, 0}, {RX_QE_DIV, 0, 0, F(s3)},
        {RX_QE_ROUND, 0, 0, 0}, {RX_QE_ADD, 0, 0, F(z3)}, {RX_QE_MAX, 0, 0, F(lo)},
        {RX_QE_MIN, 0, 0, F(hi)}};
#undef F
    int np = (int)(sizeof prog / sizeof prog[0]) - (ykind == 0 ? 5 : 0); /* f32: no requant */
    int64_t params[11] = {c, 3, 3, 1, 1, 1, 1, 1, 1, 0, 128};
    int64_t sx[4] = {1, c, h, w}, sy[4] = {1, co, h, w}, sp[1] = {pbytes}, s11[1] = {11};
    int64_t sprog[1] = {4 * np}, stab[1] = {3 * co};
    DLTensor tx = tensor(x, (DLDataType){kDLUInt, 8, 1}, 4, sx);
    DLTensor tb = tensor(pk, (DLDataType){kDLUInt, 8, 1}, 1, sp);
    DLTensor tp = tensor(params, (DLDataType){kDLInt, 64, 1}, 1, s11);
    DLTensor tg = tensor(prog, (DLDataType){kDLInt, 64, 1}, 1, sprog);
    DLTensor tt = tensor(tab, (DLDataType){kDLInt, 32, 1}, 1, stab);
    DLTensor te = tensor(res, (DLDataType){kDLUInt, 8, 1}, 4, sy);
    DLTensor ty = ykind == 0 ? tensor(yf, (DLDataType){kDLFloat, 32, 1}, 4, sy)
                             : tensor(y8, (DLDataType){i8 ? kDLInt : kDLUInt, 8, 1}, 4, sy);
    DLTensor *args[7] = {&tx, &tb, &tp, &tg, &tt, &te, &ty};
    ck_assert_int_eq(rx_rt_qconv2d(args, 7), 0);
    for (int64_t o = 0; o < co; o++)
        for (int64_t oy = 0; oy < h; oy++)
            for (int64_t ox = 0; ox < w; ox++) {
                int64_t s = 0;
                for (int64_t ci = 0; ci < c; ci++)
                    for (int64_t i = 0; i < 3; i++)
                        for (int64_t j = 0; j < 3; j++) {
                            int64_t iy = oy + i - 1, ix = ox + j - 1;
                            int64_t xv = iy < 0 || iy >= h || ix < 0 || ix >= w ? 128 : x[(ci * h + iy) * w + ix];
                            s += xv * (int8_t)wt[(o * c + ci) * 9 + i * 3 + j];
                        }
                int64_t at = (o * h + oy) * w + ox;
                float sc, bias, v;
                memcpy(&sc, &tab[co + o], 4);
                memcpy(&bias, &tab[2 * co + o], 4);
                v = (float)(int32_t)(uint32_t)((uint64_t)s + (uint32_t)tab[o]);
                v = v * sc;
                v = v + bias;
                v = fmaxg(v, 0.0f);
                v = v / s1;
                v = nearbyintf(v);
                v = v + z1;
                v = fming(fmaxg(v, 0.0f), 255.0f);
                v = (float)(uint8_t)(int32_t)v;
                v = v - z1;
                v = v * s2;
                float r = (float)res[at];
                r = r - rz;
                r = r * rs;
                v = r + v;
                if (ykind == 0) {
                    if (memcmp(&v, &yf[at], 4))
                        ck_abort_msg("epilogue f32 Y[%lld] = %a, want %a", (long long)at, (double)yf[at], (double)v);
                    continue;
                }
                v = v / s3;
                v = nearbyintf(v);
                v = v + z3;
                v = fming(fmaxg(v, lo), hi);
                int32_t want = (int32_t)v, got = i8 ? (int8_t)y8[at] : y8[at];
                if (got != want)
                    ck_abort_msg("epilogue %s Y[%lld] = %d, want %d", i8 ? "i8" : "u8", (long long)at, got, want);
            }
    prog[3][1] = RX_QE_CHAN, prog[3][2] = 3; /* a tab row past the tab: an error */
    ck_assert_int_ne(rx_rt_qconv2d(args, 7), 0);
    free(x), free(wt), free(b), free(res), free(y8), free(yf), free(tab), free(pk);
}

START_TEST(test_qconv_epilogue)
{
    check_epi(8, 9, 11, 10, 1, 21);  /* u8, one block with a tail */
    check_epi(16, 20, 23, 70, 2, 22); /* i8, two blocks, threads */
    check_epi(5, 7, 6, 3, 0, 23);     /* f32 */
    check_epi(32, 33, 35, 64, 1, 24); /* u8, 16 x 16 byte transposes and tails */
}
END_TEST

/* Depthwise (params[11] = groups = C = Co, the weight the raw (kh kw, C) bytes as
 * legalize_lib.c lays them out): against the int64 reference with the pad value z at the
 * taps outside X, every signedness, channels past one 64-lane block with a tail, strides,
 * dilation, two images, past the one-thread bound, the extremes; then with an epilogue
 * (a per-channel IADD, TOF32, scale, requantize to u8) against the same steps in C. */
static void check_dw(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad, int64_t d,
                     bool xs, bool wu, int64_t z, int fill, uint32_t seed)
{
    int64_t ho = (h + 2 * pad - d * (k - 1) - 1) / s + 1, wo = (w + 2 * pad - d * (k - 1) - 1) / s + 1;
    int64_t nx = n * c * h * w, nw = c * k * k, ny = n * c * ho * wo;
    uint8_t *x = malloc((size_t)nx), *wt = malloc((size_t)nw), *b = malloc((size_t)nw), *y8 = malloc((size_t)ny);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)ny), *tab = malloc(sizeof(int32_t) * (size_t)(2 * c));
    ck_assert(x && wt && b && y && y8 && tab);
    for (int64_t i = 0; i < nx; i++) x[i] = fill ? (xs ? 0x80 : 0xff) : (uint8_t)next(&seed);
    for (int64_t i = 0; i < nw; i++) wt[i] = fill ? (uint8_t)(wu ? 0xff : 0x80) : (uint8_t)next(&seed);
    for (int64_t o = 0; o < c; o++)
        for (int64_t t = 0; t < k * k; t++) b[t * c + o] = wt[o * k * k + t];
    int64_t params[12] = {c, k, k, s, s, pad, pad, d, d, wu, z, c};
    int64_t sx[4] = {n, c, h, w}, sy[4] = {n, c, ho, wo}, sb[1] = {nw}, s12[1] = {12};
    DLTensor tx = tensor(x, (DLDataType){xs ? kDLInt : kDLUInt, 8, 1}, 4, sx);
    DLTensor tb = tensor(b, (DLDataType){kDLUInt, 8, 1}, 1, sb);
    DLTensor tp = tensor(params, (DLDataType){kDLInt, 64, 1}, 1, s12);
    DLTensor ty = tensor(y, (DLDataType){kDLInt, 32, 1}, 4, sy);
    DLTensor *args[4] = {&tx, &tb, &tp, &ty};
    ck_assert_int_eq(rx_rt_qconv2d(args, 4), 0);
    float sc = 0.37f;
    for (int64_t o = 0; o < c; o++) {
        tab[o] = (int32_t)(next(&seed) % 2000) - 1000;
        memcpy(&tab[c + o], &sc, 4);
        sc *= 1.01f;
    }
#define F(v) ((int64_t)fbits(v))
    int64_t prog[][4] = {{RX_QE_IADD, RX_QE_CHAN, 0, 0}, {RX_QE_TOF32, 0, 0, 0}, {RX_QE_MUL, RX_QE_CHAN, 1, 0},
                         {RX_QE_ROUND, 0, 0, 0}, {RX_QE_ADD, 0, 0, F(3.0f)}, {RX_QE_MAX, 0, 0, F(0.0f)},
                         {RX_QE_MIN, 0, 0, F(255.0f)}};
#undef F
    int64_t sprog[1] = {4 * 7}, stab[1] = {2 * c};
    DLTensor tg = tensor(prog, (DLDataType){kDLInt, 64, 1}, 1, sprog);
    DLTensor tt = tensor(tab, (DLDataType){kDLInt, 32, 1}, 1, stab);
    DLTensor ty8 = tensor(y8, (DLDataType){kDLUInt, 8, 1}, 4, sy);
    DLTensor *eargs[6] = {&tx, &tb, &tp, &tg, &tt, &ty8};
    ck_assert_int_eq(rx_rt_qconv2d(eargs, 6), 0);
    for (int64_t ni = 0; ni < n; ni++)
        for (int64_t o = 0; o < c; o++)
            for (int64_t oy = 0; oy < ho; oy++)
                for (int64_t ox = 0; ox < wo; ox++) {
                    int64_t acc = 0;
                    for (int64_t i = 0; i < k; i++)
                        for (int64_t j = 0; j < k; j++) {
                            int64_t iy = oy * s + i * d - pad, ix = ox * s + j * d - pad;
                            int64_t xv = iy < 0 || iy >= h || ix < 0 || ix >= w
                                             ? z
                                             : xval(x, ((ni * c + o) * h + iy) * w + ix, xs);
                            uint8_t wb = wt[o * k * k + i * k + j];
                            acc += xv * (wu ? wb : (int8_t)wb);
                        }
                    int64_t at = ((ni * c + o) * ho + oy) * wo + ox;
                    if (y[at] != (int32_t)(uint32_t)(uint64_t)acc)
                        ck_abort_msg("depthwise C %lld %lldx%lld s %lld p %lld d %lld %s x %s z %lld: Y[%lld] = %d, "
                                     "want %lld",
                                     (long long)c, (long long)k, (long long)k, (long long)s, (long long)pad,
                                     (long long)d, xs ? "i8" : "u8", wu ? "u8" : "i8", (long long)z,
                                     (long long)at, y[at], (long long)acc);
                    float v, scl;
                    memcpy(&scl, &tab[c + o], 4);
                    v = (float)(int32_t)(uint32_t)((uint64_t)acc + (uint32_t)tab[o]);
                    v = v * scl;
                    v = nearbyintf(v);
                    v = v + 3.0f;
                    v = fming(fmaxg(v, 0.0f), 255.0f);
                    if (y8[at] != (uint8_t)(int32_t)v)
                        ck_abort_msg("depthwise epilogue Y[%lld] = %d, want %d", (long long)at, y8[at], (int)v);
                }
    params[11] = c + 1; /* groups that are neither 1 nor C: an error */
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0);
    params[11] = c;
    sb[0] = nw + 1; /* weight bytes that are not kh kw C */
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0);
    free(x), free(wt), free(b), free(y), free(y8), free(tab);
}

START_TEST(test_qconv_depthwise)
{
    /*     n   c   h   w  k  s pad d  xs     wu     z  fill */
    check_dw(1, 8, 9, 11, 3, 1, 1, 1, false, false, 0, 0, 31);
    check_dw(2, 70, 13, 12, 3, 2, 1, 1, false, false, 128, 0, 32); /* 2 blocks, stride 2 */
    check_dw(1, 5, 10, 9, 5, 1, 2, 1, true, false, -3, 0, 33);     /* i8 X, 5x5 */
    check_dw(1, 16, 8, 8, 3, 1, 1, 1, false, true, 9, 0, 34);      /* u8 W */
    check_dw(1, 24, 12, 14, 3, 1, 2, 2, true, true, 5, 0, 35);     /* dilation, both */
    check_dw(1, 96, 56, 56, 3, 1, 1, 1, false, false, 17, 0, 36);  /* threads */
    check_dw(1, 144, 7, 7, 3, 1, 1, 1, true, false, 0, 0, 37);     /* a 7 x 7 map, groups */
    for (int sign = 0; sign < 4; sign++)
        check_dw(1, 33, 6, 7, 3, 1, 1, 1, sign & 1, sign & 2, 0, 1, 38);
}
END_TEST

START_TEST(test_qconv_errors)
{
    uint8_t x[16] = {0}, pk[4] = {0};
    int32_t y[16] = {0};
    int64_t params[10] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 0};
    int64_t sx[4] = {1, 1, 4, 4}, sy[4] = {1, 1, 4, 4}, sp[1] = {4}, s10[1] = {10};
    DLTensor tx = tensor(x, (DLDataType){kDLUInt, 8, 1}, 4, sx);
    DLTensor tb = tensor(pk, (DLDataType){kDLUInt, 8, 1}, 1, sp);
    DLTensor tp = tensor(params, (DLDataType){kDLInt, 64, 1}, 1, s10);
    DLTensor ty = tensor(y, (DLDataType){kDLInt, 32, 1}, 4, sy);
    DLTensor *args[4] = {&tx, &tb, &tp, &ty};
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0); /* packed bytes do not match K and Co */
    ck_assert_ptr_nonnull(rx_rt_qconv2d_strerr(rx_rt_qconv2d(args, 4)));
    ck_assert_int_ne(rx_rt_qconv2d(args, 3), 0);
    ty.dtype = (DLDataType){kDLFloat, 32, 1};
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0);
    ty.dtype = (DLDataType){kDLInt, 32, 1};
    params[3] = 0; /* stride 0 */
    ck_assert_int_ne(rx_rt_qconv2d(args, 4), 0);
    ck_assert_ptr_null(rx_rt_qconv2d_strerr(0));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qconv");
    TCase *tc = tcase_create("qconv");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_qconv_forms);
    tcase_add_test(tc, test_qconv_threads_extremes);
    tcase_add_test(tc, test_qconv_epilogue);
    tcase_add_test(tc, test_qconv_depthwise);
    tcase_add_test(tc, test_qconv_errors);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
