/*
 * test_lower.c — graph functions lowered to VM code and run: call_tir with user-written
 * loop functions at two values of n from one artifact (results computed here), the
 * exact argument and match_cast messages, deferred dim checks, peak memory with
 * RELEASE, if/else, tuples, calls and callables (Figure 7), shape and prim values,
 * constants, the unique/nonzero built-ins (unique's attributes and tuple result),
 * library calls (runtime-native rt.rms_norm), and the paper's Figure 3
 * and Figure 7 modules from tests/modules/valid end to end.
 */
#include "vg_test.h"

#include <math.h>
#include <stdio.h>

/* ---- loop functions shared by the modules (single-quoted JSON) ---- */

#define K_MM                                                                               \
    "'mm':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['n',128],'dtype':'f32'}}," \
    "{'name':'W','buffer':{'shape':[128,8],'dtype':'f32'}},"                               \
    "{'name':'Y','buffer':{'shape':['n',8],'dtype':'f32'}}],"                              \
    "'body':[{'grid':['i','j','k'],'extents':['n',8,128],'body':[{'block':'mm',"           \
    "'init':[{'store':'Y[i, j]','value':'0.0'}],"                                          \
    "'body':[{'store':'Y[i, j]','value':'Y[i, j] + X[i, k] * W[k, j]'}]}]}]}"

#define K_RELU2                                                                            \
    "'relu':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['n','m'],'dtype':'f32'}}," \
    "{'name':'Y','buffer':{'shape':['n','m'],'dtype':'f32'}}],"                            \
    "'body':[{'grid':['i','j'],'extents':['n','m'],'body':[{'block':'relu',"               \
    "'body':[{'store':'Y[i, j]','value':'select(X[i, j] > 0.0, X[i, j], 0.0)'}]}]}]}"

#define K_RELU1                                                                            \
    "'relu1':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['k'],'dtype':'f32'}}," \
    "{'name':'Y','buffer':{'shape':['k'],'dtype':'f32'}}],"                                \
    "'body':[{'grid':['i'],'extents':['k'],'body':[{'block':'relu1',"                      \
    "'body':[{'store':'Y[i]','value':'select(X[i] > 0.0, X[i], 0.0)'}]}]}]}"

#define K_TWICE                                                                            \
    "'twice':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['k'],'dtype':'f32'}}," \
    "{'name':'Y','buffer':{'shape':['k'],'dtype':'f32'}}],"                                \
    "'body':[{'grid':['i'],'extents':['k'],'body':[{'block':'twice',"                      \
    "'body':[{'store':'Y[i]','value':'X[i] * 2.0'}]}]}]}"

#define K_ADD                                                                              \
    "'add1':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['k'],'dtype':'f32'}}," \
    "{'name':'C','buffer':{'shape':['k'],'dtype':'f32'}},"                                 \
    "{'name':'Y','buffer':{'shape':['k'],'dtype':'f32'}}],"                                \
    "'body':[{'grid':['i'],'extents':['k'],'body':[{'block':'add1',"                       \
    "'body':[{'store':'Y[i]','value':'X[i] + C[i]'}]}]}]}"

#define T(shape) "{'tensor':{'shape':" shape ",'dtype':'f32'}}"
#define TIR(name, args, out) "{'call_tir':'@" name "','args':" args ",'out':" out "}"
#define MODULE(fns) "{'format':'relax-json','version':1,'functions':{" fns "}}"

/* main(x: (n, 128), w: (128, 8)) = relu(call_tir mm(x, w)) — Figures 4 and 5. */
static const char mlp[] = MODULE(
    "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n',128]") "},"
    "{'name':'w','type':" T("[128,8]") "}],"
    "'body':{'blocks':[{'dataflow':true,'bindings':["
    "{'var':'lv0','value':" TIR("mm", "['x','w']", T("['n',8]")) "},"
    "{'var':'lv1','value':" TIR("relu", "['lv0']", T("['n',8]")) "}]}],"
    "'result':'lv1'}}," K_MM "," K_RELU2);

START_TEST(mlp_two_sizes)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, mlp);
    static float w[128 * 8];
    vt_fill(w, 128 * 8, 7);
    int64_t ws[2] = {128, 8};
    DLTensor wt = vt_f32(w, 2, ws);
    for (int64_t n = 3; n <= 5; n += 2) {
        float *x = malloc(sizeof(float) * (size_t)n * 128);
        vt_fill(x, n * 128, (uint32_t)n);
        int64_t xs[2] = {n, 128};
        DLTensor xt = vt_f32(x, 2, xs);
        rx_rt_arg args[2] = {vt_t(&xt), vt_t(&wt)};
        rx_rt_call_stats st;
        rx_rt_outputs *out = vt_ok(m, "main", args, 2, &st);
        DLTensor *y = rx_rt_outputs_tensor(out, 0);
        ck_assert(y->ndim == 2 && y->shape[0] == n && y->shape[1] == 8);
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < 8; j++) {
                float acc = 0;
                for (int k = 0; k < 128; k++) acc += x[i * 128 + k] * w[k * 8 + j];
                float want = acc > 0 ? acc : 0;
                ck_assert_float_eq_tol(((float *)y->data)[i * 8 + j], want, 1e-4);
            }
        /* at the default level FuseOps + FuseTIR make matmul + relu one kernel; the
           matmul's result stays an intermediate of symbolic size, which lift_workspace
           turns into a graph-level workspace: the output and that workspace */
        ck_assert_int_eq(st.kernels, 1);
        ck_assert_int_eq(st.peak_bytes, 2 * n * 8 * 4);
        rx_rt_outputs_free(out);
        free(x);
    }
    float bad[4 * 64] = {0};
    int64_t bs[2] = {4, 64}, w9[2] = {128, 9};
    DLTensor bt = vt_f32(bad, 2, bs);
    rx_rt_arg args[2] = {vt_t(&bt), vt_t(&wt)};
    vt_fails(m, "main", args, 2, "main: x: expected (n, 128), got (4, 64)");
    static float x1[128];
    int64_t xs1[2] = {1, 128};
    DLTensor x1t = vt_f32(x1, 2, xs1), w9t = vt_f32(w, 2, w9);
    args[0] = vt_t(&x1t);
    args[1] = vt_t(&w9t);
    vt_fails(m, "main", args, 2, "main: w: expected (128, 8), got (128, 9)");
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A chain of four relus: with RELEASE after each last use only two live at once. */
START_TEST(peak_memory_is_honest)
{
    static const char chain[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n',4]") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'a','value':" TIR("relu", "['x']", T("['n',4]")) "},"
        "{'var':'b','value':" TIR("relu", "['a']", T("['n',4]")) "},"
        "{'var':'unused','value':{'shape':['n',4]}},"
        "{'var':'c','value':" TIR("relu", "['b']", T("['n',4]")) "},"
        "{'var':'d','value':" TIR("relu", "['c']", T("['n',4]")) "}]}],"
        "'result':'d'}}," K_RELU2);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, chain);
    float x[40];
    vt_fill(x, 40, 1);
    int64_t xs[2] = {10, 4};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    ck_assert_int_eq(st.kernels, 4);
    ck_assert_int_eq(st.peak_bytes, 2 * 160);
    for (int i = 0; i < 40; i++)
        ck_assert_float_eq(((float *)rx_rt_outputs_tensor(out, 0)->data)[i], x[i] > 0 ? x[i] : 0);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(match_cast_defines_and_checks)
{
    static const char mc[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'ndim':2,'dtype':'f32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'y','match_cast':'x','type':" T("['m',4]") "},"
        "{'var':'z','value':" TIR("relu", "['y']", T("['m',4]")) "}]}],"
        "'result':'z'}}," K_RELU2);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, mc);
    float x[15] = {-1, 2, -3, 4, 5, -6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    int32_t xi[12] = {0};
    int64_t s34[2] = {3, 4}, s35[2] = {3, 5}, s3[1] = {3};
    DLTensor xt = vt_f32(x, 2, s34);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
    const float *z = rx_rt_outputs_tensor(out, 0)->data;
    ck_assert(z[0] == 0 && z[1] == 2 && z[5] == 0 && z[11] == 12);
    rx_rt_outputs_free(out);
    xt = vt_f32(x, 2, s35);
    vt_fails(m, "main", &arg, 1, "main: match_cast y: expected (m, 4), got (3, 5)");
    xt = vt_f32(x, 1, s3);
    vt_fails(m, "main", &arg, 1, "main: x: expected a 2-d f32 tensor, got (3,)");
    xt = vt_dl(xi, kDLInt, 32, 2, s34);
    vt_fails(m, "main", &arg, 1, "main: x: expected a 2-d f32 tensor, got (3, 4) i32");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A dim that is an expression of a variable defined later in the same annotation. */
START_TEST(deferred_dim_check)
{
    static const char dd[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n * 2','n']") "}],"
        "'body':{'blocks':[],'result':'x'}}");
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, dd);
    float x[24] = {0};
    int64_t ok[2] = {6, 3}, bad[2] = {6, 4};
    DLTensor xt = vt_f32(x, 2, ok);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
    ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 0)->data, x); /* the argument itself */
    rx_rt_outputs_free(out);
    xt = vt_f32(x, 2, bad);
    vt_fails(m, "main", &arg, 1, "main: x: expected (n * 2, n) at dim 0, got 6 != 8");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(if_else_branches)
{
    static const char ie[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'c','type':{'tensor':{'shape':[],'dtype':'bool'}}},"
        "{'name':'x','type':" T("['n']") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'r','value':{'if':'c',"
        "'then':{'blocks':[{'bindings':[{'var':'t','value':" TIR("twice", "['x']", T("['n']")) "}]}],'result':'t'},"
        "'else':{'blocks':[{'bindings':[{'var':'e','value':" TIR("relu1", "['x']", T("['n']")) "}]}],'result':'e'}}},"
        "{'var':'s','value':" TIR("twice", "['r']", T("['n']")) "}]}],"
        "'result':'s'}}," K_TWICE "," K_RELU1);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, ie);
    float x[5] = {-2, -1, 0, 1, 2};
    uint8_t cond;
    int64_t xs[1] = {5};
    DLTensor ct = vt_dl(&cond, kDLUInt, 1, 0, NULL), xt = vt_f32(x, 1, xs);
    rx_rt_arg args[2] = {vt_t(&ct), vt_t(&xt)};
    for (cond = 0; cond < 2; cond++) {
        rx_rt_call_stats st;
        rx_rt_outputs *out = vt_ok(m, "main", args, 2, &st);
        const float *y = rx_rt_outputs_tensor(out, 0)->data;
        for (int i = 0; i < 5; i++) ck_assert_float_eq(y[i], cond ? 4 * x[i] : 2 * (x[i] > 0 ? x[i] : 0));
        ck_assert_int_eq(st.kernels, 2);
        rx_rt_outputs_free(out);
    }
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Figure 7: a callee's signature relates its shape argument and its tensor argument;
 * calls through a global (CALL) and through a callable value (FUNCREF, CALL_VALUE);
 * tuples, get_item, shape_of, shape and prim values. */
START_TEST(calls_tuples_values)
{
    static const char cv[] = MODULE(
        "'subfn':{'kind':'relax','params':[{'name':'s','type':{'shape':{'values':['n','m']}}},"
        "{'name':'x','type':" T("['n * m']") "}],"
        "'body':{'blocks':[{'bindings':[{'var':'y','value':" TIR("twice", "['x']", T("['n * m']")) "}]}],"
        "'result':'y'}},"
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n']") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'f0','value':'@subfn'},"
        "{'var':'lv0','value':{'call':'f0','args':[{'shape':['n',1]},'x']}},"
        "{'var':'lv1','value':{'call':'@subfn','args':[{'shape':[1,'n']},'lv0']}},"
        "{'var':'t','value':{'tuple':['lv0','lv1']}},"
        "{'var':'g','value':{'get_item':'t','index':1}},"
        "{'var':'s','value':{'op':'shape_of','args':['g']}},"
        "{'var':'p','value':{'prim':'n + 1','dtype':'i64'}}]}],"
        "'result':{'tuple':['t','g','s','p']}}}," K_TWICE);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, cv);
    float x[3] = {1, -2, 3};
    int64_t xs[1] = {3};
    DLTensor xt = vt_f32(x, 1, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    ck_assert_int_eq(rx_rt_outputs_count(out), 5);
    const float *lv0 = rx_rt_outputs_tensor(out, 0)->data, *lv1 = rx_rt_outputs_tensor(out, 1)->data;
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(lv0[i], 2 * x[i]);
        ck_assert_float_eq(lv1[i], 4 * x[i]);
    }
    ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 2)->data, lv1);
    const int64_t *dims;
    ck_assert_int_eq(rx_rt_outputs_shape(out, 3, &dims), 1);
    ck_assert_int_eq(dims[0], 3);
    ck_assert_int_eq(rx_rt_outputs_kind(out, 4), RX_RT_ARG_INT);
    ck_assert_int_eq(rx_rt_outputs_int(out, 4), 4);
    ck_assert_int_eq(st.kernels, 2);
    rx_rt_outputs_free(out);
    /* subfn checks its own arguments */
    rx_rt_arg sargs[2];
    int64_t sd[2] = {2, 2};
    memset(sargs, 0, sizeof sargs);
    sargs[0].kind = RX_RT_ARG_SHAPE;
    sargs[0].dims = sd;
    sargs[0].ndim = 2;
    sargs[1] = arg;
    vt_fails(m, "subfn", sargs, 2, "subfn: x: expected (n * m,), got (3,)");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(constants)
{
    static const char ck[] =
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("[4]") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'c','value':{'const':'w'}},"
        "{'var':'y','value':" TIR("add1", "['x','c']", T("[4]")) "},"
        "{'var':'h','value':{'const':1.5,'dtype':'f32'}}]}],"
        "'result':{'tuple':['y','c','h']}}}," K_ADD "},"
        "'constants':{'w':{'dtype':'f32','shape':[4],'data':'AACAPwAAAEAAAEBAAACAQA=='}}}";
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, ck);
    float x[4] = {10, 20, 30, 40};
    int64_t xs[1] = {4};
    DLTensor xt = vt_f32(x, 1, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 3);
    const float *y = vt_data(rx_rt_outputs_tensor(out, 0)), *c = vt_data(rx_rt_outputs_tensor(out, 1));
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(y[i], x[i] + (float)(i + 1));
        ck_assert_float_eq(c[i], (float)(i + 1));
    }
    DLTensor *h = rx_rt_outputs_tensor(out, 2);
    ck_assert_int_eq(h->ndim, 0);
    ck_assert_float_eq(*(const float *)vt_data(h), 1.5f);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* unique and nonzero through CALL_BUILTIN; match_cast names unique's size. */
START_TEST(data_dependent_builtins)
{
    static const char dd[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n']") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'u','value':{'op':'unique','args':['x']}},"
        "{'var':'v','match_cast':'u','type':" T("['m']") "},"
        "{'var':'w','value':" TIR("twice", "['v']", T("['m']")) "},"
        "{'var':'z','value':{'op':'nonzero','args':['x']}}]}],"
        "'result':{'tuple':['w','z']}}}," K_TWICE);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, dd);
    float x[6] = {3, 0, 1, 3, 0, 2};
    int64_t xs[1] = {6};
    DLTensor xt = vt_f32(x, 1, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
    DLTensor *w = rx_rt_outputs_tensor(out, 0), *z = rx_rt_outputs_tensor(out, 1);
    ck_assert_int_eq(w->shape[0], 4);
    const float want[4] = {0, 2, 4, 6};
    for (int i = 0; i < 4; i++) ck_assert_float_eq(((float *)w->data)[i], want[i]);
    ck_assert(z->shape[0] == 1 && z->shape[1] == 4);
    const int64_t nz[4] = {0, 2, 3, 5};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(((int64_t *)z->data)[i], nz[i]);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A call_dps_library of the runtime-native rt.rms_norm (a name the CPU target has). */
START_TEST(library_call)
{
    static const char lib[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n', 2]") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'y','value':{'call_dps_library':'rt.rms_norm','args':['x'],'out':" T("['n', 2]") "}}]}],"
        "'result':'y'}}");
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, lib);
    float x[4] = {3, 4, 0, 0};
    int64_t xs[2] = {2, 2};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    const float *y = rx_rt_outputs_tensor(out, 0)->data;
    double r = sqrt(12.5 + 1e-5);
    ck_assert(fabs(y[0] - 3 / r) < 1e-6 && fabs(y[1] - 4 / r) < 1e-6);
    ck_assert(y[2] == 0 && y[3] == 0);
    ck_assert_int_eq(st.library_calls, 1);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* unique with its attributes: a tuple in deduction's order (values, index, inverse,
 * counts as requested), sorted=false, slices along a (negative) axis, an axis on a
 * tensor of unknown rank normalized at run time, and a tuple field match_cast. */
START_TEST(unique_attributes)
{
    static const char uq[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n']") "},"
        "{'name':'i','type':{'tensor':{'shape':['n',2],'dtype':'i32'}}},"
        "{'name':'r','type':{'tensor':{'dtype':'i32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'a','value':{'op':'unique','args':['x'],'attrs':{'sorted':false,"
        "'return_inverse':true,'return_counts':true}}},"
        "{'var':'a0','value':{'get_item':'a','index':0}},"
        "{'var':'v','match_cast':'a0','type':" T("['m']") "},"
        "{'var':'w','value':" TIR("twice", "['v']", T("['m']")) "},"
        "{'var':'b','value':{'op':'unique','args':['i'],'attrs':{'axis':-2,'return_index':true}}},"
        "{'var':'c','value':{'op':'unique','args':['i'],'attrs':{'axis':1}}},"
        "{'var':'d','value':{'op':'unique','args':['r'],'attrs':{'axis':-1,'return_counts':true}}}]}],"
        "'result':{'tuple':['a','w','b','c','d']}}}," K_TWICE);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, uq);
    float x[4] = {2, 1, 2, 5};
    int32_t iv[8] = {1, 0, 0, 3, 1, 0, 2, 2};
    int64_t xs[1] = {4}, is[2] = {4, 2};
    DLTensor xt = vt_f32(x, 1, xs), it = vt_dl(iv, kDLInt, 32, 2, is);
    rx_rt_arg args[3] = {vt_t(&xt), vt_t(&it), vt_t(&it)};
    rx_rt_outputs *out = vt_ok(m, "main", args, 3, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 9);
    const float *a0 = rx_rt_outputs_tensor(out, 0)->data, *w = rx_rt_outputs_tensor(out, 3)->data;
    const int64_t *inv = rx_rt_outputs_tensor(out, 1)->data, *cnt = rx_rt_outputs_tensor(out, 2)->data;
    const float ua[3] = {2, 1, 5};
    const int64_t ia[4] = {0, 1, 0, 2}, ca[3] = {2, 1, 1};
    ck_assert_int_eq(rx_rt_outputs_tensor(out, 0)->shape[0], 3);
    for (int j = 0; j < 3; j++) {
        ck_assert_float_eq(a0[j], ua[j]);
        ck_assert_float_eq(w[j], 2 * ua[j]);
        ck_assert_int_eq(cnt[j], ca[j]);
    }
    for (int j = 0; j < 4; j++) ck_assert_int_eq(inv[j], ia[j]);
    DLTensor *b0 = rx_rt_outputs_tensor(out, 4), *b1 = rx_rt_outputs_tensor(out, 5);
    ck_assert(b0->ndim == 2 && b0->shape[0] == 3 && b0->shape[1] == 2);
    const int32_t ub[6] = {0, 3, 1, 0, 2, 2};
    const int64_t ib[3] = {1, 0, 3};
    for (int j = 0; j < 6; j++) ck_assert_int_eq(((int32_t *)b0->data)[j], ub[j]);
    for (int j = 0; j < 3; j++) ck_assert_int_eq(((int64_t *)b1->data)[j], ib[j]);
    DLTensor *c = rx_rt_outputs_tensor(out, 6);
    ck_assert(c->ndim == 2 && c->shape[0] == 4 && c->shape[1] == 2);
    const int32_t uc[8] = {0, 1, 3, 0, 0, 1, 2, 2};
    for (int j = 0; j < 8; j++) ck_assert_int_eq(((int32_t *)c->data)[j], uc[j]);
    DLTensor *d = rx_rt_outputs_tensor(out, 7), *dc = rx_rt_outputs_tensor(out, 8);
    ck_assert(d->ndim == 2 && d->shape[1] == 2);
    for (int j = 0; j < 8; j++) ck_assert_int_eq(((int32_t *)d->data)[j], uc[j]);
    ck_assert(((int64_t *)dc->data)[0] == 1 && ((int64_t *)dc->data)[1] == 1);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Reads a corpus module and loads its artifact. */
static rx_rt_module *load_corpus(rx_rt_ctx *ctx, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/modules/valid/%s", RX_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    rx_sb text = {0};
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(&text, buf, k);
    fclose(f);
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa;
    size_t n;
    bool ok = rx_build(rx_sb_str(&text), text.n, NULL, &rxa, &n, &d);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    ck_assert_msg(ok, "%s: %s", name, rx_sb_str(&msg));
    rx_sb_free(&msg);
    rx_diags_free(&d);
    rx_sb_free(&text);
    rx_rt_err err;
    rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, n, name, &err);
    free(rxa);
    ck_assert_msg(m != NULL, "%s", err.msg);
    return m;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Figure 3: reshape, flatten (legalized), unique (built-in), match_cast, exp. */
START_TEST(figure3_end_to_end)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_corpus(ctx, "fig03_symbolic_shape.json");
    for (int64_t n = 2; n <= 3; n++) {
        float x[12];
        for (int i = 0; i < 4 * n; i++) x[i] = (float)((i * 7) % 5) * 0.5f;
        int64_t xs[3] = {n, 2, 2};
        DLTensor xt = vt_f32(x, 3, xs);
        rx_rt_arg arg = vt_t(&xt);
        rx_rt_outputs *out = vt_ok(m, "symbolic_shape_fn", &arg, 1, NULL);
        float s[12];
        memcpy(s, x, sizeof(float) * (size_t)(4 * n));
        qsort(s, (size_t)(4 * n), sizeof(float), cmp_float);
        int u = 0;
        for (int i = 0; i < 4 * n; i++)
            if (!u || s[u - 1] != s[i]) s[u++] = s[i];
        DLTensor *y = rx_rt_outputs_tensor(out, 0);
        ck_assert(y->ndim == 1 && y->shape[0] == u);
        for (int i = 0; i < u; i++) ck_assert_float_eq_tol(((float *)y->data)[i], expf(s[i]), 1e-5);
        rx_rt_outputs_free(out);
    }
    float bad[8] = {0};
    int64_t bs[3] = {2, 4, 1};
    DLTensor bt = vt_f32(bad, 3, bs);
    rx_rt_arg arg = vt_t(&bt);
    vt_fails(m, "symbolic_shape_fn", &arg, 1,
             "symbolic_shape_fn: x: expected (n, 2, 2), got (2, 4, 1)");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Figure 7: zeros and flatten legalized, shapes passed through callables and calls. */
START_TEST(figure7_end_to_end)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_corpus(ctx, "fig07_subfn_calls.json");
    float x[3] = {0};
    int64_t xs[1] = {3}, ys[2] = {2, 5};
    DLTensor xt = vt_f32(x, 1, xs);
    rx_rt_arg args[2] = {vt_t(&xt), {0}};
    args[1].kind = RX_RT_ARG_SHAPE;
    args[1].dims = ys;
    args[1].ndim = 2;
    rx_rt_outputs *out = vt_ok(m, "subgraph_func_shape_deduce_example", args, 2, NULL);
    ck_assert_int_eq(rx_rt_outputs_count(out), 4);
    const int64_t want[4] = {12, 12, 16, 10};
    for (int i = 0; i < 4; i++) {
        DLTensor *t = rx_rt_outputs_tensor(out, i);
        ck_assert(t->ndim == 1 && t->shape[0] == want[i]);
        for (int64_t j = 0; j < want[i]; j++) ck_assert_float_eq(((float *)t->data)[j], 0);
    }
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *lower_suite(void)
{
    Suite *s = suite_create("vmgen_lower");
    TCase *tc = tcase_create("lower");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, mlp_two_sizes);
    tcase_add_test(tc, peak_memory_is_honest);
    tcase_add_test(tc, match_cast_defines_and_checks);
    tcase_add_test(tc, deferred_dim_check);
    tcase_add_test(tc, if_else_branches);
    tcase_add_test(tc, calls_tuples_values);
    tcase_add_test(tc, constants);
    tcase_add_test(tc, data_dependent_builtins);
    tcase_add_test(tc, library_call);
    tcase_add_test(tc, unique_attributes);
    tcase_add_test(tc, figure3_end_to_end);
    tcase_add_test(tc, figure7_end_to_end);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(lower_suite()); }
