/*
 * fuzz_reader.c — libFuzzer target for the relax-json reader and everything behind it.
 *
 * Any input must give either a module or located errors, never a crash, a leak, or
 * unbounded memory. An accepted module must survive deduction, printing, writing,
 * and re-reading the written text must give a structurally equal module: the
 * round-trip property of the format, checked on everything the fuzzer finds.
 */
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/text.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    rx_read_opts opts = {.max_bytes = 1 << 20, .max_depth = 128, .max_expr_len = 4096,
                         .max_expr_depth = 64};
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read((const char *)data, n, &opts, &d);
    if (!m) {
        RX_ASSERT(rx_diags_count(&d) > 0); /* a rejection always says why */
        rx_diags_free(&d);
        return 0;
    }
    bool ok = rx_deduce_module(m, &d);
    RX_ASSERT(ok || rx_diags_count(&d) > 0);
    rx_sb text = {0};
    rx_print_module(m, &text);
    rx_sb json = {0};
    rx_json_write(m, 0, &json);
    rx_diags d2;
    rx_diags_init(&d2);
    rx_module *m2 = rx_json_read(rx_sb_str(&json), json.n, NULL, &d2);
    if (!m2) {
        rx_sb why = {0};
        rx_diags_format(&d2, &why);
        rx_fatal(__FILE__, __LINE__, "written module does not re-read:\n%s\n%s", rx_sb_str(&why),
                 rx_sb_str(&json));
    }
    if (ok) {
        bool ok2 = rx_deduce_module(m2, &d2);
        RX_ASSERT(ok2);
        rx_sb why = {0};
        if (!rx_struct_equal(m, m2, &why))
            rx_fatal(__FILE__, __LINE__, "round trip changed the module: %s", rx_sb_str(&why));
        rx_sb_free(&why);
    }
    rx_module_free(m2);
    rx_diags_free(&d2);
    rx_sb_free(&json);
    rx_sb_free(&text);
    rx_module_free(m);
    rx_diags_free(&d);
    return 0;
}
