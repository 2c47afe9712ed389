/*
 * test_qgemm.c — rt.qmatmul (runtime/library_qgemm.c), the 8-bit integer product, against
 * an int64 reference reduced modulo 2^32: the four signedness combinations (u8 / i8 A by
 * u8 / i8 B: the A ^ 0x80 and B ^ 0x80 corrections), operands at the extremes (every
 * element 255 or -128 and 127, where u8 x s8 pairs would saturate 16-bit sums), K of 1
 * to 3073 (not a multiple of 4: padded groups), row tails of 1 to 5 rows of the 6-row
 * tile, column tails of 1 to 63 of the 64-column block, a 3-d A, shapes large enough for
 * several threads (column blocks, and rows cut with one block), K 0 (zeros), M or N 0,
 * and the argument errors; each product also in the packed form (B packed as legalize
 * packs a constant weight, rt_qpack.h: A, packed B, params, C). The kernel per $RX_QGEMM_KERNEL: unset, the CPU's best
 * ("avx512-vnni" where it has AVX-512 VNNI); avx2; sse2; portable. ctest runs it four times.
 */
#include "rt_test.h"
#include "../rx_check.h"

#include "../../../runtime/rt_int.h"
#include "../../../runtime/rt_qpack.h"

#include <stdint.h>

static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static DLTensor tensor(void *data, DLDataType dt, int ndim, int64_t *shape)
{
    DLTensor t = {0};
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype = dt;
    t.shape = shape;
    return t;
}

static void compare(const uint8_t *a, const uint8_t *b, const int32_t *c, int64_t rows, int64_t k,
                    int64_t n, bool a_signed, bool b_signed, const char *form);

/* One product of lead x m rows, checked element by element; fill: 0 random, 1 the
 * extremes (255 / -128 for A, -128 or 127 alternating for B, 255 for a u8 B). */
static void check_case(int64_t lead, int64_t m, int64_t k, int64_t n, bool a_signed,
                       bool b_signed, int fill, uint32_t seed)
{
    int64_t rows = lead * m;
    uint8_t *a = malloc((size_t)(rows * k + 1)), *b = malloc((size_t)(k * n + 1));
    int32_t *c = malloc(sizeof(int32_t) * (size_t)(rows * n + 1));
    ck_assert(a && b && c);
    for (int64_t i = 0; i < rows * k; i++)
        a[i] = fill ? (uint8_t)(a_signed ? 0x80 : 0xff) : (uint8_t)next(&seed);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = fill ? (uint8_t)(b_signed ? (i % 2 ? 0x80 : 0x7f) : 0xff) : (uint8_t)next(&seed);
    for (int64_t i = 0; i < rows * n; i++) c[i] = 0x5a5a5a5a;
    DLDataType da = {a_signed ? kDLInt : kDLUInt, 8, 1}, db = {b_signed ? kDLInt : kDLUInt, 8, 1};
    DLDataType dc = {kDLInt, 32, 1};
    int64_t sa3[3] = {lead, m, k}, sa2[2] = {rows, k}, sb[2] = {k, n}, sc3[3] = {lead, m, n},
            sc2[2] = {rows, n};
    bool three = lead > 1;
    DLTensor ta = tensor(a, da, three ? 3 : 2, three ? sa3 : sa2), tb = tensor(b, db, 2, sb),
             tc = tensor(c, dc, three ? 3 : 2, three ? sc3 : sc2);
    DLTensor *args[3] = {&ta, &tb, &tc};
    ck_assert_int_eq(rx_rt_qmatmul(args, 3), 0);
    compare(a, b, c, rows, k, n, a_signed, b_signed, "plain");
    /* The packed form (a constant B as legalize packs it): the same result. */
    int64_t pbytes = rx_qpack_bytes(k, n), params[3] = {k, n, !b_signed}, sp[1] = {pbytes},
            s3[1] = {3};
    uint8_t *pk = malloc((size_t)pbytes + 1);
    ck_assert_ptr_nonnull(pk);
    rx_qpack(b, k, n, b_signed ? 0 : 0x80, pk);
    for (int64_t i = 0; i < rows * n; i++) c[i] = 0x5a5a5a5a;
    DLTensor tp = tensor(pk, (DLDataType){kDLUInt, 8, 1}, 1, sp),
             tq = tensor(params, (DLDataType){kDLInt, 64, 1}, 1, s3);
    DLTensor *pargs[4] = {&ta, &tp, &tq, &tc};
    ck_assert_int_eq(rx_rt_qmatmul(pargs, 4), 0);
    compare(a, b, c, rows, k, n, a_signed, b_signed, "packed");
    params[0] = k + 1; /* params that do not match: an error, not a wrong read */
    ck_assert_int_ne(rx_rt_qmatmul(pargs, 4), 0);
    free(pk);
    free(a), free(b), free(c);
}

static void compare(const uint8_t *a, const uint8_t *b, const int32_t *c, int64_t rows, int64_t k,
                    int64_t n, bool a_signed, bool b_signed, const char *form)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t s = 0;
            for (int64_t t = 0; t < k; t++) {
                int64_t x = a_signed ? (int8_t)a[i * k + t] : a[i * k + t];
                int64_t y = b_signed ? (int8_t)b[t * n + j] : b[t * n + j];
                s += x * y;
            }
            if (c[i * n + j] != (int32_t)(uint32_t)(uint64_t)s)
                ck_abort_msg("%s: %lld x %lld x %lld %s%s: C[%lld, %lld] = %d, want %lld", form,
                             (long long)rows, (long long)k, (long long)n, a_signed ? "i8" : "u8",
                             b_signed ? "i8" : "u8", (long long)i, (long long)j, c[i * n + j],
                             (long long)s);
        }
}

START_TEST(test_qgemm_forms)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {1, 5, 3}, {2, 7, 16}, {3, 4, 17}, {4, 9, 63}, {5, 12, 64}, {6, 3, 65},
        {7, 33, 70}, {13, 67, 130}, {6, 256, 128}, {11, 1030, 200}, {1, 3073, 40},
    };
    uint32_t seed = 7;
    for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        for (int sign = 0; sign < 4; sign++)
            check_case(1, shapes[s][0], shapes[s][1], shapes[s][2], sign & 1, sign & 2, 0, seed++);
}
END_TEST

/* Sizes past the one-thread bound (2^18 multiply-adds): column blocks over the threads,
 * rows cut when N is one block; the extremes; a 3-d A. */
START_TEST(test_qgemm_threads_extremes)
{
    check_case(1, 131, 300, 40, false, true, 0, 1);    /* one block: rows cut */
    check_case(1, 67, 515, 300, true, false, 0, 2);    /* 5 blocks */
    check_case(1, 129, 768, 257, false, true, 0, 3);
    check_case(2, 37, 96, 70, true, true, 0, 4);       /* 3-d A */
    for (int sign = 0; sign < 4; sign++) check_case(1, 9, 2050, 33, sign & 1, sign & 2, 1, 5);
}
END_TEST

START_TEST(test_qgemm_degenerate_and_errors)
{
    check_case(1, 4, 0, 5, false, true, 0, 9); /* K 0: zeros */
    uint8_t a[4] = {0}, b[4] = {0};
    int32_t c[4] = {1, 2, 3, 4};
    DLDataType u8 = {kDLUInt, 8, 1}, i32 = {kDLInt, 32, 1}, f32 = {kDLFloat, 32, 1};
    int64_t s0[2] = {0, 2}, sb[2] = {2, 2}, sc0[2] = {0, 2};
    DLTensor ta = tensor(a, u8, 2, s0), tb = tensor(b, u8, 2, sb), tc = tensor(c, i32, 2, sc0);
    DLTensor *args[3] = {&ta, &tb, &tc};
    ck_assert_int_eq(rx_rt_qmatmul(args, 3), 0); /* M 0: nothing written */
    ck_assert_int_eq(c[0], 1);
    ck_assert_int_ne(rx_rt_qmatmul(args, 2), 0);
    ck_assert_ptr_nonnull(rx_rt_qmatmul_strerr(rx_rt_qmatmul(args, 2)));
    tc.dtype = f32;
    ck_assert_int_ne(rx_rt_qmatmul(args, 3), 0);
    tc.dtype = i32;
    int64_t bad[2] = {3, 2};
    tb.shape = bad; /* K of B differs from A's */
    ck_assert_int_ne(rx_rt_qmatmul(args, 3), 0);
    ck_assert_ptr_null(rx_rt_qmatmul_strerr(0));
}
END_TEST

/* The kernel $RX_QGEMM_KERNEL asks for, or the CPU's best. */
START_TEST(test_qgemm_kernel_choice)
{
    const char *want = getenv("RX_QGEMM_KERNEL"), *got = rx_rt_qgemm_kernel();
    bool avx2 = __builtin_cpu_supports("avx2");
    bool vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    if (want && !strcmp(want, "portable"))
        ck_assert_str_eq(got, "portable");
    else if (want && !strcmp(want, "sse2"))
        ck_assert_str_eq(got, "sse2");
    else if ((want && !strcmp(want, "avx2")) || !vnni)
        ck_assert_str_eq(got, avx2 ? "avx2" : "sse2");
    else
        ck_assert_str_eq(got, "avx512-vnni");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qgemm");
    TCase *tc = tcase_create("qgemm");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_qgemm_forms);
    tcase_add_test(tc, test_qgemm_threads_extremes);
    tcase_add_test(tc, test_qgemm_degenerate_and_errors);
    tcase_add_test(tc, test_qgemm_kernel_choice);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
