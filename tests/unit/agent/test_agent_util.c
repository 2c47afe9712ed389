/*
 * test_agent_util.c — relax-agent's small pieces: base64 decoding (job inputs; base.h), SHA-256
 * hex (artifact ids), the jittered backoff's range and cap, the machine facts, and the
 * log line format.
 */
#include "../rx_check.h"
#include "agent_test.h"

START_TEST(base64)
{
    static const struct {
        const char *in, *out;
    } cases[] = {{"", ""},           {"Zg==", "f"},         {"Zm8=", "fo"},        {"Zm9v", "foo"},
                 {"Zm9vYg", "foob"}, {"Zm9vYmE=", "fooba"}, {"Zm9vYmFy", "foobar"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *out;
        size_t n;
        ck_assert(rx_base64_decode_unpadded(cases[i].in, strlen(cases[i].in), &out, &n));
        ck_assert_uint_eq(n, strlen(cases[i].out));
        ck_assert_int_eq(memcmp(out, cases[i].out, n), 0);
        free(out);
    }
    /* every byte value round-trips through the test's encoder */
    uint8_t all[256];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    char *enc = at_b64(all, 256);
    uint8_t *out;
    size_t n;
    ck_assert(rx_base64_decode_unpadded(enc, strlen(enc), &out, &n));
    ck_assert_uint_eq(n, 256);
    ck_assert_int_eq(memcmp(out, all, 256), 0);
    free(out);
    free(enc);
    static const char *const bad[] = {"Z", "Zm9v!", "Zm 9v", "Zm9vY"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!rx_base64_decode_unpadded(bad[i], strlen(bad[i]), &out, &n), "accepted %s",
                      bad[i]);
}
END_TEST

START_TEST(sha256_and_ids)
{
    char hex[65];
    rx_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ck_assert(rxag_valid_artifact_id(hex));
    ck_assert(!rxag_valid_artifact_id(
        "BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    ck_assert(!rxag_valid_artifact_id("ba7816bf"));
    ck_assert(!rxag_valid_artifact_id(""));
}
END_TEST

START_TEST(backoff)
{
    double prev_hi = 0;
    for (int k = 0; k < 12; k++) {
        double base = 0.25;
        for (int i = 0; i < k; i++) base *= 2;
        if (base > 10) base = 10;
        for (int t = 0; t < 50; t++) {
            double d = rxag_backoff(k, 0.25, 10.0);
            ck_assert_msg(d >= 0.75 * base && d < 1.25 * base, "k=%d: %g not around %g", k, d,
                          base);
        }
        ck_assert(base >= prev_hi);
        prev_hi = base;
    }
    /* jitter: not all equal */
    double a = rxag_backoff(3, 0.25, 10), same = 1;
    for (int t = 0; t < 20; t++) same = same && rxag_backoff(3, 0.25, 10) == a;
    ck_assert(!same);
}
END_TEST

START_TEST(sysinfo)
{
    rxag_sysinfo s;
    rxag_sysinfo_get(&s);
    ck_assert_int_ge(s.cores, 1);
    ck_assert(s.memory_bytes > (int64_t)64 << 20);
    ck_assert(s.cpu[0] != 0);
    ck_assert(s.machine[0] != 0);
#if defined(__x86_64__) && defined(__AVX2__)
    int avx2 = 0;
    for (int i = 0; i < s.nsimd; i++) avx2 |= !strcmp(s.simd[i], "avx2");
    ck_assert(avx2);
#endif
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("agent_util");
    TCase *t = tcase_create("util");
    tcase_add_test(t, base64);
    tcase_add_test(t, sha256_and_ids);
    tcase_add_test(t, backoff);
    tcase_add_test(t, sysinfo);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
