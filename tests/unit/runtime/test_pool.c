/*
 * test_pool.c — rt.pool2d's max pooling (runtime/library_pool.c) on the path this CPU
 * picks, bit for bit against a direct evaluation of the window's definition (NumPy's
 * x[window].max() over the taps inside the input; -FLT_MAX where a window holds none):
 * max is exact, so every path must equal it. ctest runs it three times: as is (AVX-512's
 * fused rows max_row512 on a CPU that has it), with RX_CONV_KERNEL=avx2 and with
 * RX_CONV_KERNEL=portable (the C rows); the first check asserts the path the knob asked
 * for, so each run tests the path it names.
 *
 * Shapes: planes of 1..40 rows and columns (odd, and past one and two vectors), windows
 * 1..7 (and 17: past the fused row's 16 columns), strides 1, 2, 3, paddings 0..k/2 (each
 * side apart), dilation 1 and 2, ceil_mode both ways, ResNet's, SqueezeNet's and SPPF's
 * layers, at one and two threads. Values: distinct non-zero floats of both signs (the
 * order of equal or signed-zero taps is not NumPy's to define), and planes whose values
 * are all below -1e30 (the -FLT_MAX padding never wins over an input).
 */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"
#include "../../../runtime/rt_int.h"

static DLTensor tensor(void *d, int code, int bits, int nd, int64_t *sh)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = d;
    t.device.device_type = kDLCPU;
    t.ndim = nd;
    t.dtype.code = (uint8_t)code;
    t.dtype.bits = (uint8_t)bits;
    t.dtype.lanes = 1;
    t.shape = sh;
    return t;
}

/* One max pool of x (nc planes of h x w) checked against the definition; returns the
 * mismatches (0: bit-identical). q: k (h, w), s (h, w), pads t l b r, d (h, w), ceil. */
static int run_case(int64_t nc, int64_t h, int64_t w, const int64_t q[11], uint32_t seed, bool low)
{
    int64_t ext[2] = {h, w}, o[2];
    for (int d = 0; d < 2; d++) {
        int64_t span = ext[d] + q[4 + d] + q[6 + d] - q[8 + d] * (q[d] - 1) - 1;
        if (span < 0) return 0;
        o[d] = (q[10] ? (span + q[2 + d] - 1) / q[2 + d] : span / q[2 + d]) + 1;
    }
    float *x = malloc(sizeof(float) * (size_t)(nc * h * w));
    float *y = malloc(sizeof(float) * (size_t)(nc * o[0] * o[1]));
    ck_assert(x && y);
    for (int64_t i = 0; i < nc * h * w; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = (float)(seed >> 8) / 16777216.0f * 200.0f - 100.0f + 0x1p-10f;
        x[i] = low ? -1e30f - (float)(seed >> 20) * 1e25f : (v == 0.0f ? 1.0f : v);
    }
    int64_t xs[4] = {1, nc, h, w}, ys[4] = {1, nc, o[0], o[1]}, ps[1] = {13};
    int64_t prm[13];
    memcpy(prm, q, sizeof(int64_t) * 11);
    prm[11] = 1, prm[12] = 0;
    DLTensor X = tensor(x, kDLFloat, 32, 4, xs), Y = tensor(y, kDLFloat, 32, 4, ys),
             P = tensor(prm, kDLInt, 64, 1, ps);
    DLTensor *a[3] = {&X, &P, &Y};
    ck_assert_int_eq(rx_rt_pool2d(a, 3), 0);
    int bad = 0;
    for (int64_t p = 0; p < nc; p++)
        for (int64_t oh = 0; oh < o[0]; oh++)
            for (int64_t ow = 0; ow < o[1]; ow++) {
                float m = -FLT_MAX;
                for (int64_t i = 0; i < q[0]; i++)
                    for (int64_t j = 0; j < q[1]; j++) {
                        int64_t ih = oh * q[2] - q[4] + i * q[8], iw = ow * q[3] - q[5] + j * q[9];
                        if (ih >= 0 && ih < h && iw >= 0 && iw < w && x[(p * h + ih) * w + iw] > m)
                            m = x[(p * h + ih) * w + iw];
                    }
                float got = y[(p * o[0] + oh) * o[1] + ow];
                if (memcmp(&got, &m, sizeof m) && bad++ < 3)
                    fprintf(stderr, "k %ldx%ld s %ld,%ld pad %ld %ld %ld %ld d %ld ceil %ld %ldx%ld: "
                            "(%ld, %ld, %ld) %a want %a\n",
                            (long)q[0], (long)q[1], (long)q[2], (long)q[3], (long)q[4], (long)q[5],
                            (long)q[6], (long)q[7], (long)q[8], (long)q[10], (long)h, (long)w,
                            (long)p, (long)oh, (long)ow, (double)got, (double)m);
            }
    free(x);
    free(y);
    return bad;
}

START_TEST(path_is_the_asked_one)
{
    const char *env = getenv("RX_CONV_KERNEL");
    int k = rx_rt_conv_tile_kind();
    if (env && !strcmp(env, "portable")) ck_assert_int_eq(k, RX_CONV_TILE_NONE);
    else if (env && !strcmp(env, "avx2")) ck_assert_int_le(k, RX_CONV_TILE_AVX2);
    fprintf(stderr, "test_pool: tile kind %d\n", k);
}
END_TEST

/* Square windows over a sweep of plane sizes, strides, paddings, dilation, ceil_mode. */
START_TEST(sweep)
{
    static const int64_t ks[] = {1, 2, 3, 5, 7, 17}, hs[] = {1, 2, 5, 7, 13, 16, 17, 31, 33, 40};
    int bad = 0, cases = 0;
    uint32_t seed = 1;
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (int64_t s = 1; s <= 3; s++)
            for (int64_t d = 1; d <= 2; d++)
                for (int64_t c = 0; c <= 1; c++)
                    for (size_t b = 0; b < sizeof hs / sizeof hs[0]; b++) {
                        int64_t k = ks[a], pd = (int64_t)(seed % (uint32_t)(k / 2 + 1));
                        int64_t h = hs[b], w = hs[(b + a + (size_t)s) % (sizeof hs / sizeof hs[0])];
                        int64_t q[11] = {k, k, s, s, pd, (pd + 1) % (k / 2 + 1), k / 2 - pd,
                                         pd, d, d, c};
                        bad += run_case(2, h, w, q, seed, seed % 7 == 0);
                        seed++;
                        cases++;
                    }
    fprintf(stderr, "test_pool: %d sweep cases\n", cases);
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* The layers of the models: ResNet's 3x3/2 pad 1, SqueezeNet's 3x3/2 ceil_mode, a 2x2/2,
 * SPPF's 5x5/1 pad 2, non-square windows, at one and two threads. */
START_TEST(model_layers)
{
    static const int64_t L[][14] = {
        /* nc, h, w, k k, s s, pads t l b r, d d, ceil */
        {64, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
        {96, 109, 109, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1},
        {64, 111, 111, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1},
        {32, 56, 57, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1},
        {64, 20, 20, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 0},
        {16, 23, 37, 3, 5, 1, 2, 1, 2, 0, 1, 1, 1, 0},
        {16, 29, 35, 5, 3, 2, 1, 2, 0, 1, 1, 1, 1, 1},
    };
    int bad = 0;
    for (int t = 1; t <= 2; t++) {
        ck_assert_int_eq(rx_rt_set_threads(t, NULL), 0);
        for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
            bad += run_case(L[i][0], L[i][1], L[i][2], &L[i][3], (uint32_t)(i + 7 * (size_t)t), false);
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, path_is_the_asked_one);
    tcase_add_test(tc, sweep);
    tcase_add_test(tc, model_layers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(pool_suite()); }
