/*
 * fuzz_onnx.c — libFuzzer target for the ONNX importer (compiler/frontend/onnx).
 *
 * Any input must give either a module or located errors, never a crash, a leak or
 * unbounded memory (the importer bounds dims, element counts and node counts; external
 * data is refused without a base directory). An accepted module must deduce and write
 * as relax-json that the relax-json reader accepts.
 */
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/onnx.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    rx_onnx_opts o = {RX_ONNX_WEIGHTS_INLINE, NULL, 10000};
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_onnx_read(data, n, &o, NULL, &d);
    if (!m) {
        RX_ASSERT(rx_diags_count(&d) > 0); /* a rejection always says why */
        rx_diags_free(&d);
        return 0;
    }
    rx_sb json = {0};
    rx_json_write(m, 0, &json);
    rx_diags d2;
    rx_diags_init(&d2);
    rx_module *m2 = rx_json_read(rx_sb_str(&json), json.n, NULL, &d2);
    if (!m2 || !rx_deduce_module(m2, &d2)) {
        rx_sb why = {0};
        rx_diags_format(&d2, &why);
        rx_fatal(__FILE__, __LINE__, "imported module does not read back and deduce:\n%s",
                 rx_sb_str(&why));
    }
    rx_module_free(m2);
    rx_diags_free(&d2);
    rx_sb_free(&json);
    rx_module_free(m);
    rx_diags_free(&d);
    return 0;
}
