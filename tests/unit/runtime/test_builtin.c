/*
 * test_builtin.c — CALL_BUILTIN end to end: unique (sorted, per dtype, NaN and empty
 * inputs) and nonzero (1-D, 2-D, 0-d, empty), the result's memory in the call's peak,
 * a wrong argument kind unwinding with a message, and an unknown built-in name
 * rejected at load.
 */
#include "rt_test.h"

#include <math.h>

/* f(x: tensor) -> CALL_BUILTIN name(x). */
static rx_rt_module *builtin_module(rx_rt_ctx *ctx, const char *name)
{
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("f", 1, params, 2, 0);
    rx_rxa_builder *b = rx_rxa_builder_new();
    uint32_t s = rx_rxa_add_string(b, name);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_CALL_BUILTIN, 1, s, 1, 0);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    return m;
}

/* Calls m on one tensor; returns the outputs (the test frees them). */
static rx_rt_outputs *call1(rx_rt_module *m, void *data, uint32_t dtype, int32_t ndim,
                            int64_t *shape, rx_rt_call_stats *st)
{
    DLTensor in = rt_dl(data, dtype, ndim, shape);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_outputs *out = NULL;
    rx_rt_err err;
    ck_assert_msg(rx_rt_call(m, 0, &arg, 1, &out, st, &err) == 0, "%s", err.msg);
    return out;
}

START_TEST(unique_sorts_and_dedups)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = builtin_module(ctx, "unique");
    float x[8] = {3, 1, 2, 3, NAN, 1, -0.0f, NAN};
    int64_t s24[2] = {2, 4};
    rx_rt_call_stats st;
    rx_rt_outputs *out = call1(m, x, RX_RXA_F32, 2, s24, &st);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], 5);
    const float *v = y->data;
    ck_assert_float_eq(v[0], 0.0f);
    ck_assert_float_eq(v[1], 1.0f);
    ck_assert_float_eq(v[2], 2.0f);
    ck_assert_float_eq(v[3], 3.0f);
    ck_assert(isnan(v[4]));
    ck_assert_int_eq(st.peak_bytes, 20);
    rx_rt_outputs_free(out);

    int64_t xi[6] = {5, -2, 5, 9, -2, 0}, s6[1] = {6};
    out = call1(m, xi, RX_RXA_I64, 1, s6, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert_int_eq(y->shape[0], 4);
    const int64_t *w = y->data;
    ck_assert(w[0] == -2 && w[1] == 0 && w[2] == 5 && w[3] == 9);
    rx_rt_outputs_free(out);

    uint8_t xb[5] = {1, 0, 1, 1, 0};
    int64_t sb[1] = {5};
    out = call1(m, xb, RX_RXA_BOOL, 1, sb, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert(((uint8_t *)y->data)[0] == 0 && ((uint8_t *)y->data)[1] == 1);
    rx_rt_outputs_free(out);

    int32_t xe[1];
    int64_t s0[1] = {0};
    out = call1(m, xe, RX_RXA_I32, 1, s0, NULL);
    ck_assert_int_eq(rx_rt_outputs_tensor(out, 0)->shape[0], 0);
    rx_rt_outputs_free(out);

    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(nonzero_indices)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = builtin_module(ctx, "nonzero");
    float x[6] = {0, 1.5f, 0, -0.0f, NAN, 2};
    int64_t s23[2] = {2, 3};
    rx_rt_outputs *out = call1(m, x, RX_RXA_F32, 2, s23, NULL);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 3);
    ck_assert_int_eq(y->dtype.code, kDLInt);
    ck_assert_int_eq(y->dtype.bits, 64);
    const int64_t *v = y->data;
    int64_t rows[3] = {0, 1, 1}, cols[3] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(v[i], rows[i]);
        ck_assert_int_eq(v[3 + i], cols[i]);
    }
    rx_rt_outputs_free(out);

    int32_t xi[4] = {0, 7, 0, 7};
    int64_t s4[1] = {4};
    out = call1(m, xi, RX_RXA_I32, 1, s4, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->shape[0] == 1 && y->shape[1] == 2);
    ck_assert(((int64_t *)y->data)[0] == 1 && ((int64_t *)y->data)[1] == 3);
    rx_rt_outputs_free(out);

    int64_t scalar = 4;
    out = call1(m, &scalar, RX_RXA_I64, 0, NULL, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->shape[0] == 1 && y->shape[1] == 1);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(builtin_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = builtin_module(ctx, "unique");
    rx_rt_arg arg = rt_iarg(3);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: unique: argument is an int, not a tensor");
    rx_rt_module_free(m);

    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("f", 1, params, 2, 0);
    rx_rxa_builder *b = rx_rxa_builder_new();
    uint32_t s = rx_rxa_add_string(b, "argsort");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_CALL_BUILTIN, 1, s, 1, 0);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    ck_assert_str_eq(rt_load_error(ctx, b),
                     "test.rxa: bad bytecode: f: pc 0: CALL_BUILTIN of unknown built-in "
                     "function \"argsort\"");
    rx_rxa_builder_free(b);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *builtin_suite(void)
{
    Suite *s = suite_create("builtin");
    TCase *tc = tcase_create("builtin");
    tcase_add_test(tc, unique_sorts_and_dedups);
    tcase_add_test(tc, nonzero_indices);
    tcase_add_test(tc, builtin_errors);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(builtin_suite)
