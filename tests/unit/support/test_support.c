/*
 * test_support.c — arenas, string buffers, locations, diagnostics, dtypes, SHA-256,
 * base64.
 */
#include "relax/support.h"

#include <check.h>
#include <string.h>
#include "../rx_check.h"

START_TEST(arena_zeroed_aligned_and_counted)
{
    rx_arena *a = rx_arena_new();
    static const unsigned char zero[2000];
    for (int i = 1; i < 2000; i++) {
        unsigned char *p = rx_arena_alloc(a, (size_t)i);
        ck_assert_uint_eq((uintptr_t)p % 16, 0);
        ck_assert(!memcmp(p, zero, (size_t)i));
        memset(p, 0xab, (size_t)i);
    }
    void *big = rx_arena_alloc(a, 1 << 22); /* own chunk */
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_ge(rx_arena_bytes(a), (1u << 22) + 2000u * 1000u);
    ck_assert_str_eq(rx_arena_printf(a, "%s-%d", "x", 42), "x-42");
    ck_assert_str_eq(rx_arena_strndup(a, "hello", 3), "hel");
    rx_arena_free(a);
}
END_TEST

typedef struct counter { ptrdiff_t cur, peak; int calls; } counter;

static bool count(void *ud, ptrdiff_t n)
{
    counter *c = ud;
    c->cur += n;
    c->calls++;
    if (c->cur > c->peak) c->peak = c->cur;
    return true;
}

START_TEST(arena_hook_sees_every_chunk)
{
    counter c = {0};
    rx_arena *a = rx_arena_new();
    rx_arena_set_hook(a, count, &c);
    for (int i = 0; i < 10000; i++) rx_arena_alloc(a, 100);
    ck_assert_int_gt(c.calls, 1);
    ck_assert_int_ge(c.peak, 10000 * 100);
    ck_assert_int_eq((long)c.cur, (long)rx_arena_bytes(a));
    rx_arena_free(a);
    ck_assert_int_eq((long)c.cur, 0); /* everything given back */
}
END_TEST

START_TEST(strbuf_grows_and_formats)
{
    rx_sb b = {0};
    ck_assert_str_eq(rx_sb_str(&b), "");
    for (int i = 0; i < 1000; i++) rx_sb_printf(&b, "%d,", i);
    ck_assert_uint_eq(b.n, strlen(b.p));
    ck_assert(!strncmp(b.p, "0,1,2,", 6));
    rx_sb_reset(&b);
    rx_sb_puts(&b, "ab");
    rx_sb_putc(&b, 'c');
    rx_sb_putn(&b, "dexx", 2);
    ck_assert_str_eq(rx_sb_str(&b), "abcde");
    char *s = rx_sb_take(&b);
    ck_assert_str_eq(s, "abcde");
    ck_assert_ptr_null(b.p);
    free(s);
}
END_TEST

START_TEST(locations_render_as_json_paths)
{
    rx_loctab t;
    rx_loctab_init(&t);
    rx_loc f = rx_loc_key(&t, 0, "functions");
    rx_loc m = rx_loc_key(&t, f, "main");
    rx_loc b = rx_loc_index(&t, rx_loc_key(&t, rx_loc_key(&t, m, "body"), "blocks"), 0);
    rx_loc v = rx_loc_index(&t, rx_loc_key(&t, rx_loc_index(&t, rx_loc_key(&t, b, "bindings"), 1), "value"), 2);
    rx_sb s = {0};
    rx_loc_render(&t, v, &s);
    ck_assert_str_eq(rx_sb_str(&s), "functions.main.body.blocks[0].bindings[1].value[2]");
    rx_sb_reset(&s);
    rx_loc_render(&t, 0, &s);
    ck_assert_str_eq(rx_sb_str(&s), "");
    rx_sb_free(&s);
    rx_loctab_free(&t);
}
END_TEST

START_TEST(diags_are_located_and_bounded)
{
    rx_loctab t;
    rx_loctab_init(&t);
    rx_diags d;
    rx_diags_init(&d);
    d.limit = 3;
    rx_diag_at(&d, &t, rx_loc_key(&t, 0, "version"), "expected 1, found %d", 2);
    rx_diag_add(&d, "", "whole document");
    for (int i = 0; i < 10; i++) rx_diag_add(&d, "x", "e%d", i);
    ck_assert_int_eq(d.list.n, 3);
    ck_assert_int_eq(rx_diags_count(&d), 12);
    rx_sb s = {0};
    rx_diags_format(&d, &s);
    ck_assert_str_eq(rx_sb_str(&s), "version: expected 1, found 2\nwhole document\nx: e0\n"
                                    "... 9 more errors\n");
    rx_sb_free(&s);
    rx_diags_free(&d);
    rx_loctab_free(&t);
}
END_TEST

START_TEST(dtypes_parse_aliases)
{
    rx_dtype t;
    ck_assert(rx_dtype_parse("f32", &t) && t == RX_DT_F32);
    ck_assert(rx_dtype_parse("float32", &t) && t == RX_DT_F32);
    ck_assert(rx_dtype_parse("bfloat16", &t) && t == RX_DT_BF16);
    ck_assert(rx_dtype_parse("uint8", &t) && t == RX_DT_U8);
    ck_assert(!rx_dtype_parse("f31", &t));
    ck_assert(!rx_dtype_parse("", &t));
    ck_assert_int_eq(rx_dtype_bits(RX_DT_BOOL), 8);
    ck_assert_int_eq(rx_dtype_bits(RX_DT_F16), 16);
    ck_assert(rx_dtype_is_float(RX_DT_BF16) && !rx_dtype_is_float(RX_DT_I32));
    ck_assert(rx_dtype_is_int(RX_DT_U64) && !rx_dtype_is_int(RX_DT_BOOL));
    ck_assert(rx_dtype_is_uint(RX_DT_U16) && !rx_dtype_is_uint(RX_DT_I16));
    ck_assert_str_eq(rx_dtype_name(RX_DT_I64), "i64");
}
END_TEST

static const char *sha_hex(const char *msg, size_t n)
{
    static char hex[65];
    rx_sha256 s;
    uint8_t h[32];
    rx_sha256_init(&s);
    /* feed in uneven pieces to exercise the buffering */
    size_t off = 0, step = 1;
    while (off < n) {
        size_t k = n - off < step ? n - off : step;
        rx_sha256_update(&s, msg + off, k);
        off += k;
        step = step * 3 + 1;
    }
    rx_sha256_final(&s, h);
    rx_hex(h, 32, hex);
    return hex;
}

START_TEST(sha256_known_vectors)
{
    ck_assert_str_eq(sha_hex("", 0),
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    ck_assert_str_eq(sha_hex("abc", 3),
                     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ck_assert_str_eq(sha_hex(m, strlen(m)),
                     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    ck_assert_str_eq(sha_hex(million, 1000000),
                     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}
END_TEST

START_TEST(base64_round_trip_and_rejects)
{
    uint8_t raw[256];
    for (int i = 0; i < 256; i++) raw[i] = (uint8_t)(i * 7);
    for (size_t n = 0; n < 10; n++) {
        rx_sb s = {0};
        rx_base64_encode(raw, n, &s);
        uint8_t *out;
        size_t outn;
        ck_assert(rx_base64_decode(rx_sb_str(&s), s.n, &out, &outn));
        ck_assert_uint_eq(outn, n);
        ck_assert(!memcmp(out, raw, n));
        free(out);
        rx_sb_free(&s);
    }
    rx_sb s = {0};
    rx_base64_encode((const uint8_t *)"Man", 3, &s);
    ck_assert_str_eq(rx_sb_str(&s), "TWFu");
    rx_sb_free(&s);
    uint8_t *out;
    size_t outn;
    ck_assert(!rx_base64_decode("TWF", 3, &out, &outn));      /* length */
    ck_assert(!rx_base64_decode("TW u", 4, &out, &outn));     /* bad char */
    ck_assert(!rx_base64_decode("T=Fu", 4, &out, &outn));     /* padding inside */
    ck_assert(!rx_base64_decode("TWFu TWFu", 9, &out, &outn));
    ck_assert(rx_base64_decode("TQ==", 4, &out, &outn) && outn == 1 && out[0] == 'M');
    free(out);
}
END_TEST

/* The base library's smaller pieces that the agent and the client share: unpadded
 * base64, byte counts both ways, one-shot and abandoned SHA-256, the clocks. */
START_TEST(base_shared_helpers)
{
    uint8_t *out;
    size_t n;
    ck_assert(rx_base64_decode_unpadded("Zm9vYg", 6, &out, &n) && n == 4 && !memcmp(out, "foob", 4));
    free(out);
    ck_assert(rx_base64_decode_unpadded("Zm9vYg==", 8, &out, &n) && n == 4);
    free(out);
    ck_assert(!rx_base64_decode_unpadded("Zm9vY", 5, &out, &n));
    ck_assert(!rx_base64_decode("Zm9vYg", 6, &out, &n)); /* the strict form still refuses */
    char buf[32];
    rx_format_bytes(512, buf, sizeof buf);
    ck_assert_str_eq(buf, "512 B");
    rx_format_bytes(1536, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5 KiB");
    rx_format_bytes(3.0 * 1024 * 1024 * 1024, buf, sizeof buf);
    ck_assert_str_eq(buf, "3.0 GiB");
    int64_t v;
    ck_assert(rx_parse_size("512MiB", &v) && v == 512LL << 20);
    ck_assert(rx_parse_size("1G", &v) && v == 1LL << 30);
    ck_assert(!rx_parse_size("1T", &v) && !rx_parse_size("-1", &v));
    char hex[65];
    rx_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    rx_sha256 s;
    rx_sha256_init(&s);
    rx_sha256_update(&s, "x", 1);
    rx_sha256_abort(&s); /* LeakSanitizer checks the state went */
    rx_sha256_abort(&s);
    double a = rx_now_s(), b = rx_now_ms();
    int64_t c = rx_now_ms_int();
    ck_assert(a > 0 && b >= a * 1e3 - 1 && c >= (int64_t)(a * 1e3) - 1);
    ck_assert(rx_wall_ms() > 1600000000000LL); /* after 2020 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("support");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, arena_zeroed_aligned_and_counted);
    tcase_add_test(tc, arena_hook_sees_every_chunk);
    tcase_add_test(tc, strbuf_grows_and_formats);
    tcase_add_test(tc, locations_render_as_json_paths);
    tcase_add_test(tc, diags_are_located_and_bounded);
    tcase_add_test(tc, dtypes_parse_aliases);
    tcase_add_test(tc, sha256_known_vectors);
    tcase_add_test(tc, base64_round_trip_and_rejects);
    tcase_add_test(tc, base_shared_helpers);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
