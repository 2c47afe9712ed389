/*
 * test_builtin.c — CALL_BUILTIN end to end: unique (sorted, per dtype, NaN and empty
 * inputs; the full form with index / inverse / counts, sorted=false, slices along an
 * axis, NaN slices, empty slices) and nonzero (1-D, 2-D, 0-d, empty), the result's
 * memory in the call's peak, wrong arguments unwinding with a message, and an unknown
 * built-in name rejected at load.
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
    return rt_load_func(ctx, b, &f, &c);
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

/* f(x) -> CALL_BUILTIN unique(x, flags[0..nflags)) with the flags loaded by LOADI. */
static rx_rt_module *unique_module(rx_rt_ctx *ctx, int nflags, const int64_t *flags)
{
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("f", 1, params, 2 + (uint32_t)nflags, 0);
    rx_rxa_builder *b = rx_rxa_builder_new();
    uint32_t s = rx_rxa_add_string(b, "unique");
    rx_rxa_code c = {0};
    int64_t w[16] = {RX_OP_CALL_BUILTIN, 1, s, 1 + nflags, 0};
    for (int i = 0; i < nflags; i++) {
        RX_EMIT(&c, RX_OP_LOADI, 2 + i, RX_D_IMM, flags[i]);
        w[5 + i] = 2 + i;
    }
    rx_rxa_emitv(&c, w, (size_t)(5 + nflags));
    RX_EMIT(&c, RX_OP_RET, 1);
    return rt_load_func(ctx, b, &f, &c);
}

/* Output i is a 1-D i64 tensor equal to want[0..n). */
static void ck_i64(rx_rt_outputs *out, int i, const int64_t *want, int64_t n)
{
    DLTensor *t = rx_rt_outputs_tensor(out, i);
    ck_assert_ptr_nonnull(t);
    ck_assert(t->ndim == 1 && t->dtype.code == kDLInt && t->dtype.bits == 64);
    ck_assert_int_eq(t->shape[0], n);
    for (int64_t j = 0; j < n; j++) ck_assert_int_eq(((int64_t *)t->data)[j], want[j]);
}

/* Flattened, with every extra output, sorted and in first-occurrence order. */
START_TEST(unique_full_flattened)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    float x[8] = {3, 1, NAN, 1, -0.0f, NAN, 0, 3};
    int64_t s24[2] = {2, 4};
    int64_t all[4] = {1, 1, 1, 1};
    rx_rt_module *m = unique_module(ctx, 4, all);
    rx_rt_outputs *out = call1(m, x, RX_RXA_F32, 2, s24, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 4);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->ndim == 1 && y->shape[0] == 4);
    const float *v = y->data;
    ck_assert(v[0] == 0 && signbit(v[0])); /* -0.0 came first */
    ck_assert(v[1] == 1 && v[2] == 3 && isnan(v[3]));
    const int64_t idx[4] = {4, 1, 0, 2}, inv[8] = {2, 1, 3, 1, 0, 3, 0, 2}, cnt[4] = {2, 2, 2, 2};
    ck_i64(out, 1, idx, 4);
    ck_i64(out, 2, inv, 8);
    ck_i64(out, 3, cnt, 4);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    int64_t unsorted[4] = {0, 1, 1, 1};
    m = unique_module(ctx, 4, unsorted);
    out = call1(m, x, RX_RXA_F32, 2, s24, NULL);
    v = rx_rt_outputs_tensor(out, 0)->data;
    ck_assert(v[0] == 3 && v[1] == 1 && isnan(v[2]) && v[3] == 0);
    const int64_t idx2[4] = {0, 1, 2, 4}, inv2[8] = {0, 1, 2, 1, 3, 2, 3, 0};
    ck_i64(out, 1, idx2, 4);
    ck_i64(out, 2, inv2, 8);
    ck_i64(out, 3, cnt, 4);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    /* only counts: a pair; all defaults: a plain tensor */
    int64_t counts[4] = {1, 0, 0, 1}, plain[4] = {1, 0, 0, 0};
    int64_t xi[6] = {5, -2, 5, 9, -2, 5}, s6[1] = {6};
    m = unique_module(ctx, 4, counts);
    out = call1(m, xi, RX_RXA_I64, 1, s6, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 2);
    const int64_t u[3] = {-2, 5, 9}, c3[3] = {2, 3, 1};
    ck_i64(out, 0, u, 3);
    ck_i64(out, 1, c3, 3);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    m = unique_module(ctx, 4, plain);
    out = call1(m, xi, RX_RXA_I64, 1, s6, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 1);
    ck_i64(out, 0, u, 3);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    /* empty input: every result empty */
    m = unique_module(ctx, 4, all);
    int64_t s0[1] = {0};
    out = call1(m, xi, RX_RXA_I64, 1, s0, NULL);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(rx_rt_outputs_tensor(out, i)->shape[0], 0);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    rx_rt_stats st;
    rx_rt_get_stats(ctx, &st);
    ck_assert_int_eq(st.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Slices along an axis (NumPy's unique(axis=...)). */
START_TEST(unique_axis)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    int32_t rows[8] = {1, 2, 0, 5, 1, 2, 0, 1};
    int64_t s42[2] = {4, 2};
    int64_t ax0[5] = {1, 1, 1, 1, 0};
    rx_rt_module *m = unique_module(ctx, 5, ax0);
    rx_rt_outputs *out = call1(m, rows, RX_RXA_I32, 2, s42, NULL);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->ndim == 2 && y->shape[0] == 3 && y->shape[1] == 2);
    const int32_t want[6] = {0, 1, 0, 5, 1, 2};
    for (int i = 0; i < 6; i++) ck_assert_int_eq(((int32_t *)y->data)[i], want[i]);
    const int64_t idx[3] = {3, 1, 0}, inv[4] = {2, 1, 2, 0}, cnt[3] = {1, 1, 2};
    ck_i64(out, 1, idx, 3);
    ck_i64(out, 2, inv, 4);
    ck_i64(out, 3, cnt, 3);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    /* columns (axis -1), sorted and not */
    int32_t cols[6] = {1, 0, 1, 2, 3, 2};
    int64_t s23[2] = {2, 3};
    int64_t axm1[5] = {1, 1, 1, 1, -1}, axm1u[5] = {0, 1, 1, 1, -1};
    m = unique_module(ctx, 5, axm1);
    out = call1(m, cols, RX_RXA_I32, 2, s23, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == 2);
    const int32_t wc[4] = {0, 1, 3, 2};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(((int32_t *)y->data)[i], wc[i]);
    const int64_t ci[2] = {1, 0}, cv[3] = {1, 0, 1}, cc[2] = {1, 2};
    ck_i64(out, 1, ci, 2);
    ck_i64(out, 2, cv, 3);
    ck_i64(out, 3, cc, 2);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    m = unique_module(ctx, 5, axm1u);
    out = call1(m, cols, RX_RXA_I32, 2, s23, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    const int32_t wu[4] = {1, 0, 2, 3};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(((int32_t *)y->data)[i], wu[i]);
    const int64_t ui[2] = {0, 1}, uv[3] = {0, 1, 0}, uc[2] = {2, 1};
    ck_i64(out, 1, ui, 2);
    ck_i64(out, 2, uv, 3);
    ck_i64(out, 3, uc, 2);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    /* a slice holding a NaN equals no other slice (NumPy compares slices with ==) */
    double xn[3] = {NAN, NAN, 1};
    int64_t s31[2] = {3, 1};
    m = unique_module(ctx, 5, ax0);
    out = call1(m, xn, RX_RXA_F64, 2, s31, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->shape[0] == 3 && y->shape[1] == 1);
    const double *d = y->data;
    ck_assert(d[0] == 1 && isnan(d[1]) && isnan(d[2]));
    const int64_t ni[3] = {2, 0, 1}, nc[3] = {1, 1, 1};
    ck_i64(out, 1, ni, 3);
    ck_i64(out, 3, nc, 3);
    rx_rt_outputs_free(out);

    /* empty slices are all equal: (3, 0) along 0 gives one (1, 0) slice */
    int64_t s30[2] = {3, 0};
    out = call1(m, xn, RX_RXA_F64, 2, s30, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->shape[0] == 1 && y->shape[1] == 0);
    const int64_t z0[1] = {0}, z3[3] = {0, 0, 0}, c1[1] = {3};
    ck_i64(out, 1, z0, 1);
    ck_i64(out, 2, z3, 3);
    ck_i64(out, 3, c1, 1);
    rx_rt_outputs_free(out);
    /* no slices: (0, 3) along 0 */
    int64_t s03[2] = {0, 3};
    out = call1(m, xn, RX_RXA_F64, 2, s03, NULL);
    y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->shape[0] == 0 && y->shape[1] == 3);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);

    rx_rt_stats st;
    rx_rt_get_stats(ctx, &st);
    ck_assert_int_eq(st.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(unique_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    int32_t x[4] = {0};
    int64_t s22[2] = {2, 2};
    DLTensor in = rt_dl(x, RX_RXA_I32, 2, s22);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_outputs *out;
    rx_rt_err err;
    int64_t ax2[5] = {1, 0, 0, 0, 2}, three[2] = {1, 0};
    rx_rt_module *m = unique_module(ctx, 5, ax2);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: unique: axis 2 is out of range for a 2-d tensor");
    rx_rt_module_free(m);
    m = unique_module(ctx, 2, three);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: unique takes 1, 5 or 6 arguments, got 3");
    rx_rt_module_free(m);
    int64_t scalar = 1, ax0[5] = {1, 0, 0, 0, 0};
    DLTensor in0 = rt_dl(&scalar, RX_RXA_I64, 0, NULL);
    rx_rt_arg arg0 = rt_targ(&in0);
    m = unique_module(ctx, 5, ax0);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg0, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: unique: axis 0 is out of range for a 0-d tensor");
    rx_rt_module_free(m);
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
    tcase_add_test(tc, unique_full_flattened);
    tcase_add_test(tc, unique_axis);
    tcase_add_test(tc, unique_errors);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(builtin_suite)
