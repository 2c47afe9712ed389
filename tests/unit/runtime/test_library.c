/*
 * test_library.c — the library registry: blas.sgemm / blas.matmul through OpenBLAS
 * (loaded at run time) and the runtime-native rt.matmul against a naive loop, 2-D and
 * batched, the fused blas.matmul_bias / blas.matmul[_bias]_{relu,gelu,silu} against a
 * naive product plus epilogue (2-D and batched, k = 0, a wrong bias), blas.matmul_view's
 * bias and activation epilogue and its descriptor errors, rt.rms_norm in f32
 * and f64 against a double reference, the exported list of
 * built-in names, which OpenBLAS build is loaded, their error messages, a
 * user-registered function, and an unknown name rejected at load.
 */
#include "rt_test.h"

#include "../../../runtime/rt_int.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* mm(a, b) -> c with c: (b?, m, n) allocated from a shape argument, then CALL_LIB. */
/* note: 0 no NOTE; 1 a NOTE right before the CALL_LIB (its message names the binding);
 * 2 a NOTE with a NOP between (not about the call: ignored). */
static rx_rt_module *mm_module_noted(rx_rt_ctx *ctx, const char *lib, int batched, int note)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[2] = {rt_any("a"), rt_any("b")};
    rx_rxa_func f = rt_func("mm", 2, params, 4, 6);
    uint32_t ma = rx_rxa_add_string(b, "mm: a: expected (m, k)");
    uint32_t mb = rx_rxa_add_string(b, "mm: b: expected (k, n)");
    uint32_t name = rx_rxa_add_string(b, lib);
    rx_rxa_code c = {0};
    if (batched) { /* a: (B, m, k), b: (B, k, n); h0=B h1=m h2=k h3=n */
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 3, ma, 3, RX_M_STORE, 0, RX_M_STORE, 1, RX_M_STORE, 2);
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 1, RX_RXA_F32, 3, mb, 3, RX_M_SLOT, 0, RX_M_SLOT, 2, RX_M_STORE, 3);
        RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 0, RX_D_SLOT, 1);
        RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 4, RX_D_SLOT, 3);
        RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 4, RX_D_IMM, 4);
        RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 2, RX_D_SLOT, 4, RX_DEV_CPU);
        RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 2, RX_D_IMM, 0, RX_RXA_F32, 3, RX_D_SLOT, 0, RX_D_SLOT, 1,
                RX_D_SLOT, 3);
    } else { /* no match on b: lets the library see mismatched shapes */
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, ma, 2, RX_M_STORE, 1, RX_M_STORE, 2);
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 1, RX_RXA_F32, 2, mb, 2, RX_M_ANY, 0, RX_M_STORE, 3);
        RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 1, RX_D_SLOT, 3);
        RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 4, RX_D_IMM, 4);
        RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 2, RX_D_SLOT, 4, RX_DEV_CPU);
        RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 2, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 1, RX_D_SLOT, 3);
    }
    if (note) RX_EMIT(&c, RX_OP_NOTE, rx_rxa_add_string(b, "binding c (functions.mm.body.blocks[0].bindings[0])"));
    if (note == 2) RX_EMIT(&c, RX_OP_NOP);
    RX_EMIT(&c, RX_OP_RELEASE, 2);
    if (note == 1) RX_EMIT(&c, RX_OP_NOTE, rx_rxa_add_string(b, "binding c (functions.mm.body.blocks[0].bindings[0])"));
    RX_EMIT(&c, RX_OP_CALL_LIB, name, 3, 0, 1, 3);
    RX_EMIT(&c, RX_OP_RET, 3);
    return rt_load_func(ctx, b, &f, &c);
}

static rx_rt_module *mm_module(rx_rt_ctx *ctx, const char *lib, int batched)
{
    return mm_module_noted(ctx, lib, batched, 0);
}

static void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 16) & 0x7fff) / 32768.0f - 0.5f;
    }
}

static void naive(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += (double)a[i * k + p] * b[p * n + j];
            c[i * n + j] = (float)s;
        }
}

START_TEST(sgemm_matches_naive)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    static const char *const libs[] = {"blas.sgemm", "blas.matmul", "rt.matmul"};
    rx_rt_module *m = mm_module(ctx, libs[_i], 0);
    int64_t dims[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 33, 17}, {128, 128, 128}};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        int64_t M = dims[t][0], K = dims[t][1], N = dims[t][2];
        float *a = malloc(sizeof(float) * (size_t)(M * K)), *bb = malloc(sizeof(float) * (size_t)(K * N));
        float *ref = malloc(sizeof(float) * (size_t)(M * N));
        fill(a, (size_t)(M * K), 1);
        fill(bb, (size_t)(K * N), 2);
        naive(a, bb, ref, M, K, N);
        int64_t sa[2] = {M, K}, sb[2] = {K, N};
        DLTensor A = rt_dl(a, RX_RXA_F32, 2, sa), B = rt_dl(bb, RX_RXA_F32, 2, sb);
        rx_rt_arg args[2] = {rt_targ(&A), rt_targ(&B)};
        rx_rt_outputs *out;
        rx_rt_call_stats st;
        rx_rt_err err;
        ck_assert_msg(rx_rt_call(m, 0, args, 2, &out, &st, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(st.kernels, 1);
        ck_assert_int_eq(st.library_calls, 1);
        DLTensor *C = rx_rt_outputs_tensor(out, 0);
        ck_assert_int_eq(C->shape[0], M);
        ck_assert_int_eq(C->shape[1], N);
        for (int64_t i = 0; i < M * N; i++)
            ck_assert_msg(fabsf(((float *)C->data)[i] - ref[i]) < 1e-4f * (float)K, "at %lld", (long long)i);
        rx_rt_outputs_free(out);
        free(a);
        free(bb);
        free(ref);
    }
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.library_calls, 4);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(batched_matmul)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = mm_module(ctx, _i ? "rt.matmul" : "blas.matmul", 1);
    int64_t Bn = 3, M = 5, K = 6, N = 4;
    float a[3 * 5 * 6], bb[3 * 6 * 4], ref[5 * 4];
    fill(a, sizeof a / sizeof *a, 3);
    fill(bb, sizeof bb / sizeof *bb, 4);
    int64_t sa[3] = {Bn, M, K}, sb[3] = {Bn, K, N};
    DLTensor A = rt_dl(a, RX_RXA_F32, 3, sa), B = rt_dl(bb, RX_RXA_F32, 3, sb);
    rx_rt_arg args[2] = {rt_targ(&A), rt_targ(&B)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_msg(rx_rt_call(m, 0, args, 2, &out, NULL, &err) == 0, "%s", err.msg);
    DLTensor *C = rx_rt_outputs_tensor(out, 0);
    for (int64_t b = 0; b < Bn; b++) {
        naive(a + b * M * K, bb + b * K * N, ref, M, K, N);
        for (int64_t i = 0; i < M * N; i++)
            ck_assert(fabsf(((float *)C->data)[b * M * N + i] - ref[i]) < 1e-4f);
    }
    rx_rt_outputs_free(out);
    /* batch mismatch caught by the VM's match before the library */
    int64_t sb2[3] = {2, K, N};
    B.shape = sb2;
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "mm: b: expected (k, n), got (2, 6, 4)");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(library_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = mm_module(ctx, "blas.sgemm", 0);
    float a[6] = {0}, bb[8] = {0};
    int64_t sa[2] = {2, 3}, sb[2] = {4, 2};
    DLTensor A = rt_dl(a, RX_RXA_F32, 2, sa), B = rt_dl(bb, RX_RXA_F32, 2, sb);
    rx_rt_arg args[2] = {rt_targ(&A), rt_targ(&B)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "mm: blas.sgemm: shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C "
                              "(b?, m, n)); arguments (2, 3) f32, (4, 2) f32, (2, 2) f32");
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    /* a NOTE right before the call names the binding; one further up does not */
    for (int note = 1; note <= 2; note++) {
        m = mm_module_noted(ctx, "blas.sgemm", 0, note);
        ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
        ck_assert_str_eq(err.msg, note == 1 ? "mm: binding c (functions.mm.body.blocks[0].bindings[0]): "
                                              "blas.sgemm: shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C "
                                              "(b?, m, n)); arguments (2, 3) f32, (4, 2) f32, (2, 2) f32"
                                            : "mm: blas.sgemm: shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C "
                                              "(b?, m, n)); arguments (2, 3) f32, (4, 2) f32, (2, 2) f32");
        rx_rt_module_free(m);
    }

    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_func f = rt_func("f", 0, NULL, 1, 0);
    int64_t code[] = {RX_OP_CALL_LIB, rx_rxa_add_string(b, "cublas.sgemm"), 0, RX_OP_RET, 0};
    rx_rxa_add_function(b, &f, code, 5);
    ck_assert_str_eq(rt_load_error(ctx, b), "test.rxa: f: unknown library function cublas.sgemm");
    rx_rxa_builder_free(b);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* f(x: (a, b) of xdt) -> CALL_LIB lib(x, y) with y: (a, b) of ydt (ybytes each). */
static rx_rt_module *rows_module(rx_rt_ctx *ctx, const char *lib, uint32_t xdt, uint32_t ydt,
                                 int64_t ybytes)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("f", 1, params, 3, 3);
    uint32_t mx = rx_rxa_add_string(b, "f: x: expected (a, b)");
    uint32_t name = rx_rxa_add_string(b, lib);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, xdt, 2, mx, 2, RX_M_STORE, 0, RX_M_STORE, 1);
    RX_EMIT(&c, RX_OP_MUL, 2, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MUL, 2, RX_D_SLOT, 2, RX_D_IMM, ybytes);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_SLOT, 2, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, ydt, 2, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_RELEASE, 1);
    RX_EMIT(&c, RX_OP_CALL_LIB, name, 2, 0, 2);
    RX_EMIT(&c, RX_OP_RET, 2);
    return rt_load_func(ctx, b, &f, &c);
}

/* rt.rms_norm: y = x / sqrt(mean(x^2, -1) + 1e-5) per row; a zero row stays zero; rows
 * of length 0 and no rows at all are fine. */
START_TEST(rms_norm_f32_f64)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m32 = rows_module(ctx, "rt.rms_norm", RX_RXA_F32, RX_RXA_F32, 4);
    rx_rt_module *m64 = rows_module(ctx, "rt.rms_norm", RX_RXA_F64, RX_RXA_F64, 8);
    float x[3 * 5];
    double xd[3 * 5];
    fill(x, 15, 5);
    for (int j = 0; j < 5; j++) x[5 + j] = 0; /* row 1 is zero */
    for (int i = 0; i < 15; i++) xd[i] = x[i];
    int64_t sx[2] = {3, 5};
    for (int w = 0; w < 2; w++) {
        DLTensor X = w ? rt_dl(xd, RX_RXA_F64, 2, sx) : rt_dl(x, RX_RXA_F32, 2, sx);
        rx_rt_arg arg = rt_targ(&X);
        rx_rt_outputs *out;
        rx_rt_call_stats st;
        rx_rt_err err;
        ck_assert_msg(rx_rt_call(w ? m64 : m32, 0, &arg, 1, &out, &st, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(st.library_calls, 1);
        DLTensor *Y = rx_rt_outputs_tensor(out, 0);
        for (int r = 0; r < 3; r++) {
            double ss = 0;
            for (int j = 0; j < 5; j++) ss += xd[r * 5 + j] * xd[r * 5 + j];
            double scale = 1.0 / sqrt(ss / 5 + 1e-5);
            for (int j = 0; j < 5; j++) {
                double want = xd[r * 5 + j] * scale;
                double got = w ? ((double *)Y->data)[r * 5 + j] : ((float *)Y->data)[r * 5 + j];
                ck_assert_msg(fabs(got - want) <= (w ? 1e-12 : 1e-6) * (1 + fabs(want)),
                              "row %d col %d: %g vs %g", r, j, got, want);
            }
        }
        rx_rt_outputs_free(out);
    }
    int64_t shapes[2][2] = {{2, 0}, {0, 3}};
    for (int t = 0; t < 2; t++) {
        DLTensor X = rt_dl(x, RX_RXA_F32, 2, shapes[t]);
        rx_rt_arg arg = rt_targ(&X);
        rx_rt_outputs *out;
        rx_rt_err err;
        ck_assert_msg(rx_rt_call(m32, 0, &arg, 1, &out, NULL, &err) == 0, "%s", err.msg);
        rx_rt_outputs_free(out);
    }
    rx_rt_module_free(m32);
    rx_rt_module_free(m64);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(rms_norm_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    int32_t xi[4] = {0};
    float x[4] = {0};
    int64_t s22[2] = {2, 2};
    rx_rt_outputs *out;
    rx_rt_err err;
    rx_rt_module *m = rows_module(ctx, "rt.rms_norm", RX_RXA_I32, RX_RXA_I32, 4);
    DLTensor X = rt_dl(xi, RX_RXA_I32, 2, s22);
    rx_rt_arg arg = rt_targ(&X);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: rt.rms_norm: expects float32 or float64 tensors of one dtype; "
                              "arguments (2, 2) i32, (2, 2) i32");
    rx_rt_module_free(m);
    m = rows_module(ctx, "rt.rms_norm", RX_RXA_F32, RX_RXA_F64, 8);
    X = rt_dl(x, RX_RXA_F32, 2, s22);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: rt.rms_norm: expects float32 or float64 tensors of one dtype; "
                              "arguments (2, 2) f32, (2, 2) f64");
    rx_rt_module_free(m);
    m = rows_module(ctx, "rt.matmul", RX_RXA_F32, RX_RXA_F32, 4);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "f: rt.matmul: expects 3 tensors (A, B, C); arguments (2, 2) f32, "
                              "(2, 2) f32");
    rx_rt_module_free(m);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* The exported names: sorted, NULL-terminated, each registered in a new context. */
/* Which OpenBLAS the built-ins use: $RX_BLAS_LIB, else the OpenMP build when it is
   installed (one thread pool with the kernels), else libopenblas.so.0. */
START_TEST(blas_library_choice)
{
    const char *name = rx_rt_blas_library();
    ck_assert_ptr_nonnull(name);
    const char *env = getenv("RX_BLAS_LIB");
    if (env && *env) {
        ck_assert_str_eq(name, env);
        return;
    }
#ifdef RX_OPENBLAS_OPENMP
    if (access(RX_OPENBLAS_OPENMP, R_OK) == 0) {
        ck_assert_str_eq(name, RX_OPENBLAS_OPENMP);
        return;
    }
#endif
    ck_assert_str_eq(name, "libopenblas.so.0");
}
END_TEST

START_TEST(builtin_names)
{
    const char *const *names = rx_rt_builtin_library_names();
    static const char *const want[] = {
        "blas.conv2d", "blas.matmul", "blas.matmul_bias", "blas.matmul_bias_gelu",
        "blas.matmul_bias_relu", "blas.matmul_bias_silu", "blas.matmul_gelu", "blas.matmul_relu",
        "blas.matmul_silu", "blas.matmul_view", "blas.sgemm", "clblast.matmul", "cublas.matmul",
        "rt.concat", "rt.cumsum", "rt.group_norm", "rt.matmul", "rt.pool2d", "rt.qconv2d", "rt.qmatmul", "rt.resize2d", "rt.rms_norm", "rt.rnn", "rt.scatter", "rt.topk"};
    int n = 0;
    while (names[n]) n++;
    ck_assert_int_eq(n, 25);
    for (int i = 0; i < n; i++) ck_assert_str_eq(names[i], want[i]);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    for (int i = 0; i < n; i++) rx_rt_module_free(rows_module(ctx, names[i], RX_RXA_F32, RX_RXA_F32, 4));
    rx_rt_ctx_free(ctx);
}
END_TEST

static int32_t negate_last(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 2) return 9;
    const float *x = args[0]->data;
    float *y = args[1]->data;
    int64_t n = 1;
    for (int i = 0; i < args[0]->ndim; i++) n *= args[0]->shape[i];
    for (int64_t i = 0; i < n; i++) y[i] = -x[i];
    return 0;
}

static const char *negate_err(int32_t code)
{
    return code == 9 ? "wants two tensors" : NULL;
}

START_TEST(user_registered_function)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    ck_assert_int_eq(rx_rt_register_library(ctx, "my.negate", negate_last, negate_err), 0);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("neg", 1, params, 3, 0);
    uint32_t name = rx_rxa_add_string(b, "my.negate");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_IMM, 12, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, RX_RXA_F32, 1, RX_D_IMM, 3);
    RX_EMIT(&c, RX_OP_CALL_LIB, name, 2, 0, 2);
    RX_EMIT(&c, RX_OP_CALL_LIB, name, 1, 2);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    float x[3] = {1, 2, 3};
    int64_t s[1] = {3};
    DLTensor X = rt_dl(x, RX_RXA_F32, 1, s);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "neg: my.negate: wants two tensors; arguments (3,) f32");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* fused(a, b[, bias]) -> c: a (B?, m, k), b (k, n), bias (n,) or any 1-D when checking
 * errors; c (B?, m, n) allocated, then CALL_LIB name. Registers: 0 a, 1 b, 2 bias,
 * 3 storage, 4 c. Heap: h0 B, h1 m, h2 k, h3 n, h4 bytes. */
static rx_rt_module *fused_module(rx_rt_ctx *ctx, const char *lib, bool bias, int ndim)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[3] = {rt_any("a"), rt_any("b"), rt_any("bias")};
    rx_rxa_func f = rt_func("fused", bias ? 3 : 2, params, 5, 5);
    uint32_t ma = rx_rxa_add_string(b, "fused: a");
    uint32_t mb = rx_rxa_add_string(b, "fused: b");
    uint32_t name = rx_rxa_add_string(b, lib);
    rx_rxa_code c = {0};
    if (ndim == 3) {
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 3, ma, 3, RX_M_STORE, 0, RX_M_STORE, 1, RX_M_STORE, 2);
    } else {
        RX_EMIT(&c, RX_OP_LOADI, 3, RX_D_IMM, 1);
        RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, ma, 2, RX_M_STORE, 1, RX_M_STORE, 2);
        RX_EMIT(&c, RX_OP_MUL, 0, RX_D_IMM, 1, RX_D_IMM, 1);
    }
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 1, RX_RXA_F32, 2, mb, 2, RX_M_SLOT, 2, RX_M_STORE, 3);
    RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 4, RX_D_SLOT, 3);
    RX_EMIT(&c, RX_OP_MUL, 4, RX_D_SLOT, 4, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 3, RX_D_SLOT, 4, RX_DEV_CPU);
    if (ndim == 3)
        RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 4, 3, RX_D_IMM, 0, RX_RXA_F32, 3, RX_D_SLOT, 0, RX_D_SLOT, 1,
                RX_D_SLOT, 3);
    else
        RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 4, 3, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 1, RX_D_SLOT, 3);
    RX_EMIT(&c, RX_OP_RELEASE, 3);
    if (bias) RX_EMIT(&c, RX_OP_CALL_LIB, name, 4, 0, 1, 2, 4);
    else RX_EMIT(&c, RX_OP_CALL_LIB, name, 3, 0, 1, 4);
    RX_EMIT(&c, RX_OP_RET, 4);
    return rt_load_func(ctx, b, &f, &c);
}

static const struct {
    const char *lib;
    bool bias;
    int act; /* 0 none, 1 relu, 2 gelu, 3 silu */
} fused_libs[] = {
    {"blas.matmul_bias", true, 0},       {"blas.matmul_bias_relu", true, 1},
    {"blas.matmul_bias_gelu", true, 2},  {"blas.matmul_bias_silu", true, 3},
    {"blas.matmul_relu", false, 1},      {"blas.matmul_gelu", false, 2},
    {"blas.matmul_silu", false, 3},
};

static double ref_act(int act, double x)
{
    switch (act) {
    case 1: return x > 0 ? x : 0;
    case 2: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case 3: return x / (1 + exp(-x));
    default: return x;
    }
}

/* Every fused entry against naive + epilogue in double, 2-D and batched (B broadcast),
 * including k = 0 (C = act(bias)). */
START_TEST(fused_matches_naive)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    const char *lib = fused_libs[_i].lib;
    bool bias = fused_libs[_i].bias;
    /* 64 to 200 rows: the own sgemm (under RX_GEMM's auto), whose write-back applies bias
     * and relu (gelu and silu: the pass after it); 200 x 300: past its 192-row and
     * 256-deep blocks; 2 x 30 rows sharing B: one 60-row product; 60 x 0 x 21: k 0. */
    int64_t dims[][4] = {{1, 1, 1, 1},     {1, 7, 13, 5},   {1, 64, 33, 17},
                         {3, 5, 6, 4},     {1, 4, 0, 3},    {1, 200, 300, 37},
                         {2, 30, 260, 20}, {1, 60, 0, 21}};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        int64_t Bn = dims[t][0], M = dims[t][1], K = dims[t][2], N = dims[t][3];
        int nd = Bn > 1 ? 3 : 2;
        rx_rt_module *m = fused_module(ctx, lib, bias, nd);
        float *a = malloc(sizeof(float) * (size_t)(Bn * M * K + 1));
        float *bb = malloc(sizeof(float) * (size_t)(K * N + 1));
        float *bv = malloc(sizeof(float) * (size_t)N);
        float *ref = malloc(sizeof(float) * (size_t)(M * N));
        fill(a, (size_t)(Bn * M * K), 5);
        fill(bb, (size_t)(K * N), 6);
        fill(bv, (size_t)N, 7);
        int64_t sa[3] = {Bn, M, K}, sa2[2] = {M, K}, sb[2] = {K, N}, sv[1] = {N};
        DLTensor A = nd == 3 ? rt_dl(a, RX_RXA_F32, 3, sa) : rt_dl(a, RX_RXA_F32, 2, sa2);
        DLTensor B = rt_dl(bb, RX_RXA_F32, 2, sb), V = rt_dl(bv, RX_RXA_F32, 1, sv);
        rx_rt_arg args[3] = {rt_targ(&A), rt_targ(&B), rt_targ(&V)};
        rx_rt_outputs *out;
        rx_rt_err err;
        ck_assert_msg(rx_rt_call(m, 0, args, bias ? 3 : 2, &out, NULL, &err) == 0, "%s: %s", lib,
                      err.msg);
        const float *C = rx_rt_outputs_tensor(out, 0)->data;
        for (int64_t bi = 0; bi < Bn; bi++) {
            naive(a + bi * M * K, bb, ref, M, K, N);
            for (int64_t i = 0; i < M * N; i++) {
                double want = ref_act(fused_libs[_i].act, (double)ref[i] + (bias ? bv[i % N] : 0.0));
                double got = C[bi * M * N + i];
                ck_assert_msg(fabs(got - want) < 1e-4 * (double)(K + 1), "%s [%lld,%lld]: %g vs %g",
                              lib, (long long)bi, (long long)i, got, want);
            }
        }
        rx_rt_outputs_free(out);
        rx_rt_module_free(m);
        free(a), free(bb), free(bv), free(ref);
    }
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A bias of the wrong length is code 4 with the shape message; a missing bias code 2. */
START_TEST(fused_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = fused_module(ctx, "blas.matmul_bias_relu", true, 2);
    float a[6] = {0}, bb[6] = {0}, bv[3] = {0};
    int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sv[1] = {3};
    DLTensor A = rt_dl(a, RX_RXA_F32, 2, sa), B = rt_dl(bb, RX_RXA_F32, 2, sb);
    DLTensor V = rt_dl(bv, RX_RXA_F32, 1, sv);
    rx_rt_arg args[3] = {rt_targ(&A), rt_targ(&B), rt_targ(&V)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, args, 3, &out, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "blas.matmul_bias_relu") && strstr(err.msg, "bias (n,)"), "%s", err.msg);
    rx_rt_module_free(m);
    m = fused_module(ctx, "blas.matmul_bias", false, 2); /* (A, B, C): no bias */
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "expects 3 tensors (A, B, C), or 4"), "%s", err.msg);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* blas.matmul_view's version-2 descriptor, called directly: C = act(A @ B + bias) for
 * A (3, 4) and B (4, 5) as plain views, each activation against a double reference (the
 * tanh GELU as 0.5 x (1 + tanh(...))); a bad activation code, a bias of the wrong length,
 * a missing bias and an unknown version are errors with the view messages, never a
 * read past the bias. */
START_TEST(view_epilogue)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_libentry e;
    ck_assert_int_eq(rx_rt_lib_find(ctx, "blas.matmul_view", &e), 0);
    float a[12], b[20], bias[5], c[15];
    fill(a, 12, 3);
    fill(b, 20, 4);
    fill(bias, 5, 5);
    double one = 1.0;
    int64_t d[4 + 2 * 7] = {2, 0, 0, 1, 2, 3, 4, 1, 1, 0, 1, 2, 4, 5, 1, 1, 0, 1};
    memcpy(&d[1], &one, sizeof one);
    int64_t sa[2] = {3, 4}, sb[2] = {4, 5}, sv[1] = {5}, sc[2] = {3, 5}, sd[1] = {18}, s4[1] = {4};
    DLTensor A = rt_dl(a, RX_RXA_F32, 2, sa), B = rt_dl(b, RX_RXA_F32, 2, sb);
    DLTensor V = rt_dl(bias, RX_RXA_F32, 1, sv), C = rt_dl(c, RX_RXA_F32, 2, sc);
    DLTensor D = rt_dl(d, RX_RXA_I64, 1, sd), V4 = rt_dl(bias, RX_RXA_F32, 1, s4);
    DLTensor *args[5] = {&A, &B, &D, &V, &C};
    static const int acts[] = {0, 1, 2, 3, 4}; /* none relu gelu silu gelu_tanh */
    for (int ai = 0; ai < 5; ai++) {
        d[2] = acts[ai];
        ck_assert_int_eq(e.fn(args, 5), 0);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                double x = bias[j];
                for (int p = 0; p < 4; p++) x += (double)a[i * 4 + p] * b[p * 5 + j];
                double want = acts[ai] == 4
                    ? 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                    : ref_act(acts[ai], x);
                ck_assert_msg(fabs(c[i * 5 + j] - want) < 1e-5, "act %d [%d,%d]: %g vs %g",
                              acts[ai], i, j, (double)c[i * 5 + j], want);
            }
    }
    d[2] = 9; /* no such activation */
    ck_assert_int_eq(e.fn(args, 5), 4);
    ck_assert_msg(strstr(e.strerr(4), "view descriptor"), "%s", e.strerr(4));
    d[2] = 1;
    args[3] = &V4; /* bias (4,) for n = 5 */
    ck_assert_int_eq(e.fn(args, 5), 4);
    args[3] = &C; /* the bias flag set, the bias missing: (A, B, desc, C) */
    ck_assert_int_eq(e.fn(args, 4), 2);
    ck_assert_msg(strstr(e.strerr(2), "5 with the descriptor's bias"), "%s", e.strerr(2));
    d[0] = 3; /* unknown version */
    args[3] = &V;
    ck_assert_int_eq(e.fn(args, 5), 4);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *lib_suite(void)
{
    Suite *s = suite_create("library");
    TCase *tc = tcase_create("library");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, sgemm_matches_naive, 0, 3);
    tcase_add_loop_test(tc, batched_matmul, 0, 2);
    tcase_add_loop_test(tc, fused_matches_naive, 0, (int)(sizeof fused_libs / sizeof *fused_libs));
    tcase_add_test(tc, fused_errors);
    tcase_add_test(tc, view_epilogue);
    tcase_add_test(tc, rms_norm_f32_f64);
    tcase_add_test(tc, rms_norm_errors);
    tcase_add_test(tc, builtin_names);
    tcase_add_test(tc, blas_library_choice);
    tcase_add_test(tc, library_errors);
    tcase_add_test(tc, user_registered_function);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(lib_suite)
