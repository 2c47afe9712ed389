/*
 * test_target.c — target parsing, normalization and the option table (target.h).
 */
#include "relax/target.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include "../rx_check.h"

/* The normalized form of text; fails the test when it does not parse. */
static const char *norm(const char *text, rx_target *t)
{
    rx_diags d;
    rx_diags_init(&d);
    bool ok = rx_target_parse(text, t, &d);
    ck_assert_msg(ok, "%s: %s", text ? text : "(null)", d.list.n ? d.list.items[0].msg : "?");
    rx_diags_free(&d);
    return t->norm;
}

/* The one diagnostic for bad text (static buffer). */
static const char *err(const char *text)
{
    static char msg[512];
    rx_target t;
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(!rx_target_parse(text, &t, &d), "%s parsed", text);
    ck_assert_int_eq(d.list.n, 1);
    ck_assert_str_eq(d.list.items[0].path, "target");
    snprintf(msg, sizeof msg, "%s", d.list.items[0].msg);
    rx_diags_free(&d);
    return msg;
}

START_TEST(kinds_and_defaults)
{
    rx_target t;
    ck_assert_str_eq(norm(NULL, &t), "cpu");
    ck_assert_str_eq(norm("", &t), "cpu");
    ck_assert_str_eq(norm("cpu", &t), "cpu");
    ck_assert_int_eq(t.kind, RX_TARGET_CPU);
    ck_assert_str_eq(norm("opencl", &t), "opencl");
    ck_assert_int_eq(t.kind, RX_TARGET_OPENCL);
    ck_assert_int_eq(rx_target_int(&t, "max_threads"), 256);
    ck_assert_int_eq(rx_target_int(&t, "max_local_bytes"), 32768);
    ck_assert_int_eq(rx_target_int(&t, "tile"), 16);
    ck_assert_str_eq(norm("vulkan", &t), "vulkan");
    ck_assert_int_eq(rx_target_int(&t, "max_local_bytes"), 16384);
    ck_assert_int_eq(rx_target_int(&t, "max_push_bytes"), 128);
    ck_assert_str_eq(norm("cuda", &t), "cuda");
    ck_assert_str_eq(rx_target_str(&t, "arch"), "sm_80");
    for (int k = 0; k < RX_TARGET_NKINDS; k++) {
        ck_assert_ptr_nonnull(rx_target_kind_name((rx_target_kind)k));
        for (int i = 0; i < rx_target_nopts((rx_target_kind)k); i++) {
            const rx_target_opt *o = rx_target_opt_at((rx_target_kind)k, i);
            ck_assert(o->sdef || (o->def >= o->min && o->def <= o->max));
        }
        ck_assert_ptr_null(rx_target_opt_at((rx_target_kind)k, rx_target_nopts((rx_target_kind)k)));
    }
    ck_assert_ptr_null(rx_target_kind_name(RX_TARGET_NKINDS));
}
END_TEST

START_TEST(normalization_drops_defaults_and_orders)
{
    rx_target t;
    /* defaults spelled out normalize away: one key for one target */
    ck_assert_str_eq(norm("opencl,max_threads=256,tile=16", &t), "opencl");
    ck_assert_str_eq(norm("vulkan,max_threads=512", &t), "vulkan,max_threads=512");
    ck_assert_int_eq(rx_target_int(&t, "max_threads"), 512);
    /* a default tile shrinks to fit max_threads, and says so */
    ck_assert_str_eq(norm("vulkan,max_threads=128", &t), "vulkan,max_threads=128,tile=8");
    ck_assert_str_eq(norm("vulkan,tile=8,max_threads=128", &t), "vulkan,max_threads=128,tile=8");
    ck_assert_int_eq(rx_target_int(&t, "tile"), 8);
    ck_assert_str_eq(norm("opencl,max_threads=1", &t), "opencl,max_threads=1,tile=1");
    /* table order, whatever the order given */
    ck_assert_str_eq(norm("cuda,tile=8,arch=sm_90", &t), "cuda,arch=sm_90,tile=8");
    ck_assert_str_eq(norm("cuda,arch=sm_80", &t), "cuda");
    ck_assert_str_eq(norm("opencl,clblast=0,tile=8", &t), "opencl,tile=8,clblast=0");
    ck_assert_int_eq(rx_target_int(&t, "clblast"), 0);
    ck_assert_str_eq(norm("opencl,clblast=1", &t), "opencl"); /* CLBlast by default */
    ck_assert_int_eq(rx_target_int(&t, "clblast"), 1);
    ck_assert_str_eq(norm("opencl,tile=8,max_local_bytes=65536,max_threads=64", &t),
                     "opencl,max_threads=64,max_local_bytes=65536,tile=8");
    ck_assert_str_eq(norm("cuda,arch=sm_100,max_threads=1024,max_local_bytes=232448,tile=32", &t),
                     "cuda,arch=sm_100,max_threads=1024,max_local_bytes=232448,tile=32");
}
END_TEST

START_TEST(bad_targets_are_named)
{
    ck_assert_str_eq(err("tpu"), "unknown target tpu (known: cpu, cuda, opencl, vulkan)");
    ck_assert_str_eq(err("OpenCL"), "unknown target OpenCL (known: cpu, cuda, opencl, vulkan)");
    ck_assert_str_eq(err("cpu,threads=4"), "target cpu takes no options (got \"threads\")");
    ck_assert_str_eq(err("opencl,warp=32"),
                     "unknown opencl option \"warp\" (known: max_threads, max_local_bytes, tile, clblast)");
    ck_assert_str_eq(err("opencl,max_threads=8192"),
                     "opencl option max_threads=8192 is out of range (1..4096)");
    ck_assert_str_eq(err("vulkan,max_threads=2048"),
                     "vulkan option max_threads=2048 is out of range (1..1024)");
    ck_assert_str_eq(err("opencl,max_threads=100"), "opencl option max_threads=100 is not a power of two");
    ck_assert_str_eq(err("opencl,max_threads=-1"),
                     "opencl option max_threads: \"-1\" is not a non-negative decimal integer");
    ck_assert_str_eq(err("opencl,max_threads=0x100"),
                     "opencl option max_threads: \"0x100\" is not a non-negative decimal integer");
    ck_assert_str_eq(err("opencl,max_threads=99999999999999999999999"),
                     "opencl option max_threads: \"99999999999999999999999\" is not a non-negative decimal integer");
    ck_assert_str_eq(err("opencl,tile=8,tile=8"), "opencl option tile is given twice");
    ck_assert_str_eq(err("opencl,,tile=8"), "target option \"\" is not key=value");
    ck_assert_str_eq(err("opencl,tile"), "target option \"tile\" is not key=value");
    ck_assert_str_eq(err("opencl,tile="), "target option \"tile=\" is not key=value");
    ck_assert_str_eq(err("opencl,=8"), "target option \"=8\" is not key=value");
    ck_assert_str_eq(err("opencl,"), "target option \"\" is not key=value");
    ck_assert_str_eq(err("cuda,arch=90"), "cuda option arch: \"90\" is not of the form sm_NN or sm_NNN");
    ck_assert_str_eq(err("cuda,arch=sm_9x"), "cuda option arch: \"sm_9x\" is not of the form sm_NN or sm_NNN");
    ck_assert_str_eq(err("opencl,max_threads=64,tile=16"),
                     "opencl: tile=16 needs 256 threads per work-group, more than max_threads=64");
    ck_assert_str_eq(err("opencl, tile=8"), "target contains a space or a non-ASCII character at offset 7");
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_str_eq(err(big), "target is longer than 256 characters");
}
END_TEST

START_TEST(availability_has_a_reason)
{
    char why[256] = "";
    ck_assert(rx_target_available(RX_TARGET_CPU, why, sizeof why));
    for (int k = RX_TARGET_OPENCL; k < RX_TARGET_NKINDS; k++) {
        why[0] = '\0';
        if (!rx_target_available((rx_target_kind)k, why, sizeof why))
            ck_assert_msg(strstr(why, rx_target_kind_name((rx_target_kind)k)), "%s", why);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("target");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, kinds_and_defaults);
    tcase_add_test(tc, normalization_drops_defaults_and_orders);
    tcase_add_test(tc, bad_targets_are_named);
    tcase_add_test(tc, availability_has_a_reason);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
