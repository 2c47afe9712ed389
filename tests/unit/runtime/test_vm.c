/*
 * test_vm.c — the interpreter end to end on hand-built artifacts: a C kernel compiled
 * at test time and embedded (Figure 5's alloc + DPS call), argument matching with the
 * exact messages, heap arithmetic, tuples, branches, calls, function values, constants,
 * the call-depth bound, pool reuse and peak accounting, and verifier rejections.
 */
#include "rt_test.h"

static const char kernel_src[] =
    "#include <stdint.h>\n"
    "int32_t scale_add(void *const *data, const int64_t *iv) {\n"
    "  const float *x = data[0]; float *y = data[1];\n"
    "  for (int64_t i = 0; i < iv[0] * 4; i++) y[i] = x[i] * 2.0f + 1.0f;\n"
    "  return 0;\n"
    "}\n"
    "int32_t always_fails(void *const *data, const int64_t *iv) { (void)data; (void)iv; return 7; }\n";

/* main(x: (n, 4) f32) -> (n, 4) f32: y = scale_add(x) in a fresh storage.
 * With `fail` set, calls always_fails instead. */
static rx_rt_module *kernel_module(rx_rt_ctx *ctx, int fail)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}}, four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, n_tok}, {1, four}};
    static const char *const syms[] = {"n"};
    static const char *const ivars[] = {"n"};
    rx_rxa_type params[1] = {rt_tensor("x", RX_RXA_F32, 2, dims)};
    rx_rxa_func f = rt_func("main", 1, params, 3, 2);
    f.nsym = 1;
    f.syms = syms;
    f.result = rt_tensor(NULL, RX_RXA_F32, 2, dims);

    size_t nso;
    uint8_t *so = rt_compile_so(kernel_src, &nso);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, nso);
    free(so);
    uint32_t k = rx_rxa_add_kernel(b, "scale_add", RX_RXA_KERNELS_CPU, 2, 1, ivars);
    uint32_t kf = rx_rxa_add_kernel(b, "always_fails", RX_RXA_KERNELS_CPU, 2, 1, ivars);
    uint32_t msg = rx_rxa_add_string(b, "main: x: expected (n, 4)");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_MUL, 1, RX_D_SLOT, 0, RX_D_IMM, 16);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_SLOT, 1, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 2, 1, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 0, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_RELEASE, 1);
    RX_EMIT(&c, RX_OP_CALL_KERNEL, fail ? kf : k, 2, 0, 2, 1, RX_D_SLOT, 0);
    RX_EMIT(&c, RX_OP_RET, 2);
    return rt_load_func(ctx, b, &f, &c);
}

START_TEST(kernel_call_end_to_end)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = kernel_module(ctx, 0);
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    int64_t shape[2] = {3, 4};
    DLTensor in = rt_dl(x, RX_RXA_F32, 2, shape);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_outputs *out;
    rx_rt_call_stats st;
    rx_rt_err err;
    ck_assert_msg(rx_rt_call(m, 0, &arg, 1, &out, &st, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(rx_rt_outputs_count(out), 1);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 3);
    ck_assert_int_eq(y->shape[1], 4);
    ck_assert_uint_eq((uintptr_t)y->data % 64, 0);
    for (int i = 0; i < 12; i++) ck_assert_float_eq(((float *)y->data)[i], 2.0f * i + 1.0f);
    ck_assert_int_eq(st.kernels, 1);
    ck_assert_int_eq(st.library_calls, 0);
    ck_assert_int_eq(st.peak_bytes, 48);
    /* the output outlives the module and keeps its storage */
    rx_rt_tensor *keep = rx_rt_outputs_take(out, 0);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    ck_assert_float_eq(((float *)rx_rt_tensor_dl(keep)->data)[11], 23.0f);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 48);
    ck_assert_int_eq(s.kernel_calls, 1);
    rx_rt_tensor_release(keep);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(wrong_input_messages)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = kernel_module(ctx, 0);
    float x[15] = {0};
    int32_t xi[12] = {0};
    int64_t s35[2] = {3, 5}, s34[2] = {3, 4}, s3[1] = {3};
    rx_rt_outputs *out;
    rx_rt_err err;

    DLTensor in = rt_dl(x, RX_RXA_F32, 2, s35);
    rx_rt_arg arg = rt_targ(&in);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_ptr_null(out);
    ck_assert_str_eq(err.msg, "main: x: expected (n, 4), got (3, 5)");

    in = rt_dl(xi, RX_RXA_I32, 2, s34);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: x: expected (n, 4), got (3, 4) i32");

    in = rt_dl(x, RX_RXA_F32, 1, s3);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: x: expected (n, 4), got (3,)");

    rx_rt_arg iarg = rt_iarg(5);
    ck_assert_int_eq(rx_rt_call(m, 0, &iarg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: x: expected (n, 4), got 5");

    ck_assert_int_eq(rx_rt_call(m, 0, &iarg, 0, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main takes 1 arguments, got 0");
    ck_assert_int_eq(rx_rt_call(m, 3, &iarg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "no function 3");
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(kernel_error_code)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = kernel_module(ctx, 1);
    float x[8] = {0};
    int64_t shape[2] = {2, 4};
    DLTensor in = rt_dl(x, RX_RXA_F32, 2, shape);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: kernel always_fails failed with code 7");
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0); /* the output was released on unwind */
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(heap_arithmetic_floor)
{
    /* arith(a: int, b: int) -> shape(a//b, a%b, min, max, a+3, a-b, a*b) */
    rx_rxa_type params[2] = {rt_int("a"), rt_int("b")};
    rx_rxa_func f = rt_func("arith", 2, params, 3, 9);
    rx_rxa_builder *b = rx_rxa_builder_new();
    uint32_t ma = rx_rxa_add_string(b, "arith: a: expected an int");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_INT, 0, ma, RX_M_STORE, 0);
    RX_EMIT(&c, RX_OP_MATCH_INT, 1, ma, RX_M_STORE, 1);
    RX_EMIT(&c, RX_OP_FLOORDIV, 2, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_FLOORMOD, 3, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MIN, 4, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MAX, 5, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_ADD, 6, RX_D_SLOT, 0, RX_D_IMM, 3);
    RX_EMIT(&c, RX_OP_SUB, 7, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MUL, 8, RX_D_SLOT, 0, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_MKSHAPE, 2, 7, RX_D_SLOT, 2, RX_D_SLOT, 3, RX_D_SLOT, 4, RX_D_SLOT, 5,
            RX_D_SLOT, 6, RX_D_SLOT, 7, RX_D_SLOT, 8);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);

    rx_rt_arg args[2] = {rt_iarg(-7), rt_iarg(2)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), 0);
    const int64_t *d;
    ck_assert_int_eq(rx_rt_outputs_shape(out, 0, &d), 7);
    int64_t want[7] = {-4, 1, -7, 2, -4, -9, -14};
    for (int i = 0; i < 7; i++) ck_assert_int_eq(d[i], want[i]);
    ck_assert_int_eq(rx_rt_outputs_kind(out, 0), RX_RT_ARG_SHAPE);
    ck_assert_ptr_null(rx_rt_outputs_tensor(out, 0));
    rx_rt_outputs_free(out);

    args[1] = rt_iarg(0);
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "arith: pc 10: FLOORDIV by zero");
    args[0] = rt_iarg(INT64_MIN), args[1] = rt_iarg(-1);
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "arith: pc 10: integer overflow in FLOORDIV");
    char *dis = rx_vm_disasm(rx_rt_module_artifact(m), 0);
    ck_assert_ptr_nonnull(strstr(dis, "    10  FLOORDIV h2 h0 h1\n"));
    ck_assert_ptr_nonnull(strstr(dis, "MATCH_INT r0 \"arith: a: expected an int\" store h0"));
    free(dis);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* pick(c, a, b) = c ? (a, b) : (b, a);  main(c, a, b) calls pick directly and through a
 * function value, returns (pick(c,a,b)[0], fv(c,a,b), 42, shape_of(a)). */
static rx_rt_module *control_module(rx_rt_ctx *ctx)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[3] = {rt_int("c"), rt_any("a"), rt_any("b")};
    rx_rxa_func fm = rt_func("main", 3, params, 8, 1);
    rx_rxa_func fp = rt_func("pick", 3, params, 4, 0);
    rx_rxa_code c = {0};
    /* main is function 0, pick function 1 */
    RX_EMIT(&c, RX_OP_CALL, 3, 1, 3, 0, 1, 2);
    RX_EMIT(&c, RX_OP_GETITEM, 3, 3, 0);
    RX_EMIT(&c, RX_OP_FUNCREF, 4, 1);
    RX_EMIT(&c, RX_OP_CALL_VALUE, 5, 4, 3, 0, 1, 2);
    RX_EMIT(&c, RX_OP_LOADI, 6, RX_D_IMM, 42);
    RX_EMIT(&c, RX_OP_SHAPEOF, 7, 1);
    RX_EMIT(&c, RX_OP_TUPLE, 4, 4, 3, 5, 6, 7);
    RX_EMIT(&c, RX_OP_RET, 4);
    rx_rxa_add_function(b, &fm, c.w, c.n);
    rx_rxa_code_free(&c);
    size_t jmp = RX_EMIT(&c, RX_OP_JMPIFNOT, 0, -1);
    RX_EMIT(&c, RX_OP_TUPLE, 3, 2, 1, 2);
    size_t go = RX_EMIT(&c, RX_OP_GOTO, -1);
    c.w[jmp + 2] = (int64_t)c.n;
    RX_EMIT(&c, RX_OP_TUPLE, 3, 2, 2, 1);
    c.w[go + 1] = (int64_t)c.n;
    RX_EMIT(&c, RX_OP_MOVE, 0, 3);
    RX_EMIT(&c, RX_OP_RET, 0);
    rx_rxa_add_function(b, &fp, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    return m;
}

START_TEST(tuples_branches_calls)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = control_module(ctx);
    float av[2] = {1, 2}, bv[3] = {3, 4, 5};
    int64_t sa[1] = {2}, sb[1] = {3};
    DLTensor A = rt_dl(av, RX_RXA_F32, 1, sa), B = rt_dl(bv, RX_RXA_F32, 1, sb);
    for (int cond = 0; cond < 2; cond++) {
        rx_rt_arg args[3] = {rt_iarg(cond), rt_targ(&A), rt_targ(&B)};
        rx_rt_outputs *out;
        rx_rt_err err;
        ck_assert_msg(rx_rt_call(m, 0, args, 3, &out, NULL, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(rx_rt_outputs_count(out), 5); /* x, (p, q), 42, shape */
        DLTensor *first = rx_rt_outputs_tensor(out, 0);
        ck_assert_ptr_eq(first->data, cond ? (void *)av : (void *)bv); /* inputs are borrowed */
        ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 1)->data, cond ? (void *)av : (void *)bv);
        ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 2)->data, cond ? (void *)bv : (void *)av);
        ck_assert_int_eq(rx_rt_outputs_kind(out, 3), RX_RT_ARG_INT);
        ck_assert_int_eq(rx_rt_outputs_int(out, 3), 42);
        const int64_t *d;
        ck_assert_int_eq(rx_rt_outputs_shape(out, 4, &d), 1);
        ck_assert_int_eq(d[0], 2);
        rx_rt_outputs_free(out);
    }
    /* a tensor condition: one-element tensor */
    float zero = 0, one = 1;
    int64_t s1[1] = {1};
    DLTensor cz = rt_dl(&zero, RX_RXA_F32, 1, s1), co = rt_dl(&one, RX_RXA_F32, 1, s1);
    rx_rt_arg args[3] = {rt_targ(&cz), rt_targ(&A), rt_targ(&B)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 1, args, 3, &out, NULL, &err), 0);
    ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 0)->data, (void *)bv);
    rx_rt_outputs_free(out);
    args[0] = rt_targ(&co);
    ck_assert_int_eq(rx_rt_call(m, 1, args, 3, &out, NULL, &err), 0);
    ck_assert_ptr_eq(rx_rt_outputs_tensor(out, 0)->data, (void *)av);
    rx_rt_outputs_free(out);
    args[0] = rt_targ(&A); /* two elements: not a condition */
    ck_assert_int_eq(rx_rt_call(m, 1, args, 3, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "pick: pc 0: condition is a tensor, not an int or a one-element tensor");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* VIEW: a borrowed argument viewed (same memory, new shape), a pooled tensor viewed at
 * its offset (the view keeps the storage alive after the tensor's register is
 * released), and the errors: element counts that differ, a view of a non-tensor. */
START_TEST(view_shares_bytes)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("views", 1, params, 6, 0);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_VIEW, 1, 0, 1, RX_D_IMM, 12);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 2, RX_D_IMM, 64, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 2, RX_D_IMM, 16, RX_RXA_F32, 2, RX_D_IMM, 2, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_RELEASE, 2);
    RX_EMIT(&c, RX_OP_VIEW, 4, 3, 2, RX_D_IMM, 4, RX_D_IMM, 2);
    RX_EMIT(&c, RX_OP_RELEASE, 3);
    RX_EMIT(&c, RX_OP_TUPLE, 5, 2, 1, 4);
    RX_EMIT(&c, RX_OP_RET, 5);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rxa_func g = rt_func("bad", 1, params, 3, 0);
    RX_EMIT(&c, RX_OP_VIEW, 1, 0, 1, RX_D_IMM, 13);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &g, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rxa_func h = rt_func("not_tensor", 1, params, 3, 0);
    RX_EMIT(&c, RX_OP_LOADI, 1, RX_D_IMM, 5);
    RX_EMIT(&c, RX_OP_VIEW, 2, 1, 0);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &h, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);

    float xv[12] = {0};
    int64_t sx[2] = {3, 4};
    DLTensor X = rt_dl(xv, RX_RXA_F32, 2, sx);
    rx_rt_arg arg = rt_targ(&X);
    rx_rt_outputs *out;
    rx_rt_err err;
    rx_rt_stats s;
    ck_assert_msg(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err) == 0, "%s", err.msg);
    DLTensor *v = rx_rt_outputs_tensor(out, 0);
    ck_assert_ptr_eq(v->data, (void *)xv); /* the argument's memory, not a copy */
    ck_assert_int_eq(v->ndim, 1);
    ck_assert_int_eq(v->shape[0], 12);
    DLTensor *w = rx_rt_outputs_tensor(out, 1);
    ck_assert_int_eq(w->byte_offset, 16);
    ck_assert_int_eq(w->ndim, 2);
    ck_assert_int_eq(w->shape[0], 4);
    ck_assert_int_eq(w->shape[1], 2);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 64); /* the view holds the storage */
    rx_rt_outputs_free(out);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);

    ck_assert_int_eq(rx_rt_call(m, 1, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "bad: pc 0: cannot view a (3, 4) tensor as (13,): the element counts differ");
    ck_assert_int_eq(rx_rt_call(m, 2, &arg, 1, &out, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not_tensor: pc 4: VIEW of "));
    char *dis = rx_vm_disasm(rx_rt_module_artifact(m), 0);
    ck_assert_ptr_nonnull(strstr(dis, "VIEW r1 r0"));
    free(dis);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* rec(n) = n == 0 ? 42 : rec(n - 1) */
static rx_rt_module *rec_module(rx_rt_ctx *ctx)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[1] = {rt_int("n")};
    rx_rxa_func f = rt_func("rec", 1, params, 3, 2);
    uint32_t msg = rx_rxa_add_string(b, "rec: n: expected an int");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_INT, 0, msg, RX_M_STORE, 0);
    size_t j = RX_EMIT(&c, RX_OP_JMPIFNOT, 0, -1);
    RX_EMIT(&c, RX_OP_SUB, 1, RX_D_SLOT, 0, RX_D_IMM, 1);
    RX_EMIT(&c, RX_OP_LOADI, 1, RX_D_SLOT, 1);
    RX_EMIT(&c, RX_OP_CALL, 2, 0, 1, 1);
    RX_EMIT(&c, RX_OP_RET, 2);
    c.w[j + 2] = (int64_t)c.n;
    RX_EMIT(&c, RX_OP_LOADI, 1, RX_D_IMM, 42);
    RX_EMIT(&c, RX_OP_RET, 1);
    return rt_load_func(ctx, b, &f, &c);
}

START_TEST(call_depth_is_bounded)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rec_module(ctx);
    rx_rt_arg arg = rt_iarg(200);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), 0);
    ck_assert_int_eq(rx_rt_outputs_int(out, 0), 42);
    rx_rt_outputs_free(out);
    arg = rt_iarg(100000);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "rec: call depth limit (256) exceeded calling rec");
    rx_rt_set_max_depth(ctx, 10);
    arg = rt_iarg(9);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), 0);
    rx_rt_outputs_free(out);
    arg = rt_iarg(10);
    ck_assert_int_eq(rx_rt_call(m, 0, &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "rec: call depth limit (10) exceeded calling rec");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Storages of 4 MiB or more start on a 2 MiB boundary (advised for huge pages,
 * runtime/device_cpu.c) whether reserved or not; smaller ones stay 64-byte aligned, and
 * the byte counts are what they were: requested bytes resident below 64 MiB, committed
 * chunks of a reserved block. */
START_TEST(pool_huge_blocks)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_err err;
    rx_rt_stats s;
    DLDataType f32 = {kDLFloat, 32, 1};
    const int64_t sizes[3] = {1000, (5 << 20) / 4, (65 << 20) / 4}; /* elements */
    for (int i = 0; i < 3; i++) {
        rx_rt_tensor *t = rx_rt_tensor_new(ctx, f32, 1, &sizes[i], &err);
        ck_assert_ptr_nonnull(t);
        float *d = rx_rt_tensor_dl(t)->data;
        uintptr_t align = i ? (uintptr_t)2 << 20 : 64;
        ck_assert_uint_eq((uintptr_t)d % align, 0);
        for (int64_t k = 0; k < sizes[i]; k += 1024) d[k] = (float)k; /* every page writable */
        d[sizes[i] - 1] = 1.0f;
        rx_rt_get_stats(ctx, &s);
        ck_assert_int_eq(s.live_bytes, sizes[i] * 4);
        ck_assert_int_eq(s.resident_bytes, sizes[i] * 4); /* reserved: 65 whole chunks */
        rx_rt_tensor_release(t);
    }
    rx_rt_trim(ctx);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.pool_bytes, 0);
    ck_assert_int_eq(s.resident_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(pool_reuse_and_peak)
{
    /* alloc 1000, release, alloc 1000 (reused), alloc 500 -> peak 1500; return a 500-byte
     * view of the last one and an out-of-range view error path in function 1. */
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_func f = rt_func("main", 0, NULL, 4, 0);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 0, RX_D_IMM, 1000, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_RELEASE, 0);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 1, RX_D_IMM, 1000, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 2, RX_D_IMM, 500, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 2, RX_D_IMM, 100, RX_RXA_F32, 1, RX_D_IMM, 100);
    RX_EMIT(&c, RX_OP_RET, 3);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rxa_func g = rt_func("bad_view", 0, NULL, 2, 0);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 0, RX_D_IMM, 64, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 1, 0, RX_D_IMM, 8, RX_RXA_F32, 1, RX_D_IMM, 16);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &g, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);

    rx_rt_outputs *out;
    rx_rt_call_stats st;
    rx_rt_err err;
    rx_rt_stats s;
    ck_assert_int_eq(rx_rt_call(m, 0, NULL, 0, &out, &st, &err), 0);
    ck_assert_int_eq(st.peak_bytes, 1500);
    ck_assert_int_eq(st.kernels, 0);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.allocs, 3);
    ck_assert_int_eq(s.pool_hits, 1);
    ck_assert_int_eq(s.live_bytes, 500); /* the output keeps its storage */
    DLTensor *t = rx_rt_outputs_tensor(out, 0);
    ck_assert_int_eq(t->byte_offset, 100);
    rx_rt_outputs_free(out);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    int64_t pool = s.pool_bytes;
    ck_assert_int_ge(pool, 1500);
    /* a second call is served entirely from the pool and peaks the same */
    ck_assert_int_eq(rx_rt_call(m, 0, NULL, 0, &out, &st, &err), 0);
    ck_assert_int_eq(st.peak_bytes, 1500);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.pool_hits, 4);
    ck_assert_int_eq(s.pool_bytes, pool);
    /* peak is relative to the live bytes at entry (the previous output is still held) */
    rx_rt_outputs *out2;
    ck_assert_int_eq(rx_rt_call(m, 0, NULL, 0, &out2, &st, &err), 0);
    ck_assert_int_eq(st.peak_bytes, 1500);
    rx_rt_outputs_free(out2);
    rx_rt_outputs_free(out);
    rx_rt_trim(ctx);
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.pool_bytes, 0);

    rx_rt_set_memory_limit(ctx, 1499);
    ck_assert_int_eq(rx_rt_call(m, 0, NULL, 0, &out, &st, &err), -1);
    ck_assert_str_eq(err.msg, "main: out of memory allocating 500 bytes");
    rx_rt_set_memory_limit(ctx, 0);
    ck_assert_int_eq(rx_rt_call(m, 1, NULL, 0, &out, &st, &err), -1);
    ck_assert_str_eq(err.msg, "bad_view: pc 5: tensor of 64 bytes at offset 8 does not fit in storage of 64 bytes");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(constants_outlive_module)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    double data[4] = {1.5, -2, 3, 4.25};
    int64_t shape[2] = {2, 2};
    uint32_t k = rx_rxa_add_const(b, RX_RXA_F64, 2, shape, data, sizeof data);
    rx_rxa_func f = rt_func("main", 0, NULL, 1, 0);
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_LOADK, 0, k);
    RX_EMIT(&c, RX_OP_RET, 0);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    rx_rt_outputs *out;
    rx_rt_err err;
    rx_rt_call_stats st;
    ck_assert_int_eq(rx_rt_call(m, 0, NULL, 0, &out, &st, &err), 0);
    ck_assert_int_eq(st.peak_bytes, 0); /* constants are not runtime allocations */
    rx_rt_module_free(m);
    DLTensor *t = rx_rt_outputs_tensor(out, 0);
    ck_assert_uint_eq(((uintptr_t)t->data + t->byte_offset) % 64, 0);
    ck_assert_int_eq(t->dtype.code, kDLFloat);
    ck_assert_int_eq(t->dtype.bits, 64);
    const double *v = (const double *)((char *)t->data + t->byte_offset);
    ck_assert_double_eq(v[0], 1.5);
    ck_assert_double_eq(v[3], 4.25);
    rx_rt_outputs_free(out);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(type_errors_at_run_time)
{
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_type params[1] = {rt_any("x")};
    rx_rxa_func f = rt_func("main", 1, params, 3, 1);
    uint32_t msg = rx_rxa_add_string(b, "main: x: expected a tuple");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_GETITEM, 1, 0, 0);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rxa_func g = rt_func("g", 1, params, 3, 1);
    RX_EMIT(&c, RX_OP_TUPLE, 1, 1, 0);
    RX_EMIT(&c, RX_OP_GETITEM, 2, 1, 1);
    RX_EMIT(&c, RX_OP_RET, 2);
    rx_rxa_add_function(b, &g, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rxa_func h = rt_func("h", 1, params, 3, 1);
    RX_EMIT(&c, RX_OP_CALL_VALUE, 1, 0, 0);
    RX_EMIT(&c, RX_OP_ASSERT_EQ, msg, RX_D_IMM, 1, RX_D_IMM, 2);
    RX_EMIT(&c, RX_OP_RET, 1);
    rx_rxa_add_function(b, &h, c.w, c.n);
    rx_rxa_code_free(&c);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = rt_load(ctx, b);
    rx_rxa_builder_free(b);
    rx_rt_arg a = rt_iarg(3);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, &a, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: pc 0: GETITEM of an int");
    ck_assert_int_eq(rx_rt_call(m, 1, &a, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "g: pc 4: tuple index 1 out of range (1 fields)");
    ck_assert_int_eq(rx_rt_call(m, 2, &a, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "h: pc 0: calling an int");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(verifier_rejects_bad_code)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    struct { int64_t code[12]; size_t n; const char *want; } cases[] = {
        {{RX_OP_MOVE, 0, 5, RX_OP_RET, 0}, 5,
         "test.rxa: bad bytecode: f: pc 0: register 5 out of range (2)"},
        {{RX_OP_GOTO, 1, RX_OP_RET, 0}, 4,
         "test.rxa: bad bytecode: f: pc 1: jump target 1 is not the start of an instruction"},
        {{RX_OP_MOVE, 0, 1}, 3,
         "test.rxa: bad bytecode: f: pc 0: code falls off the end of the function (last instruction MOVE)"},
        {{RX_OP_MOVE, 0}, 2,
         "test.rxa: bad bytecode: f: pc 0: instruction runs past the end of the function"},
        {{RX_OP_ADD, 3, RX_D_IMM, 1, RX_D_IMM, 2, RX_OP_RET, 0}, 8,
         "test.rxa: bad bytecode: f: pc 0: heap slot 3 out of range (1)"},
        {{RX_OP_MKSHAPE, 0, 1, 7, 0, RX_OP_RET, 0}, 7,
         "test.rxa: bad bytecode: f: pc 0: bad dim operand tag 7"},
        {{RX_OP_CALL, 0, 0, 1, 0, RX_OP_RET, 0}, 7,
         "test.rxa: bad bytecode: f: pc 0: CALL f with 1 arguments, it takes 0"},
        {{RX_OP_TUPLE, 0, -1, RX_OP_RET, 0}, 5,
         "test.rxa: bad bytecode: f: pc 0: TUPLE: bad operand count -1"},
        {{RX_OP_LOADK, 0, 0, RX_OP_RET, 0}, 5,
         "test.rxa: bad bytecode: f: pc 0: constant 0 out of range (0)"},
        {{RX_OP_CALL_LIB, 0, 0, RX_OP_RET, 0}, 5,
         "test.rxa: f: unknown library function f"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rx_rxa_builder *b = rx_rxa_builder_new();
        rx_rxa_func f = rt_func("f", 0, NULL, 2, 1);
        rx_rxa_add_function(b, &f, cases[i].code, cases[i].n);
        ck_assert_str_eq(rt_load_error(ctx, b), cases[i].want);
        rx_rxa_builder_free(b);
    }
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(missing_kernel_symbol)
{
    size_t nso;
    uint8_t *so = rt_compile_so("int other(void) { return 0; }\n", &nso);
    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, nso);
    free(so);
    rx_rxa_add_kernel(b, "nope", RX_RXA_KERNELS_CPU, 0, 0, NULL);
    rx_rxa_func f = rt_func("f", 0, NULL, 1, 0);
    int64_t code[] = {RX_OP_CALL_KERNEL, 0, 0, 0, RX_OP_LOADI, 0, RX_D_IMM, 1, RX_OP_RET, 0};
    rx_rxa_add_function(b, &f, code, sizeof code / sizeof *code);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    ck_assert_str_eq(rt_load_error(ctx, b), "test.rxa: kernel nope not found in the CPU kernel object");
    rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, "not an elf", 10);
    ck_assert_ptr_nonnull(strstr(rt_load_error(ctx, b), "test.rxa: cannot load the CPU kernel object: dlopen: "));
    rx_rxa_builder_free(b);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(two_modules_with_same_kernel_names)
{
    /* Each module gets its own copy of its kernel object (glibc must not confuse them). */
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m1 = kernel_module(ctx, 0);
    rx_rt_module *m2 = kernel_module(ctx, 1);
    float x[4] = {1, 2, 3, 4};
    int64_t shape[2] = {1, 4};
    DLTensor in = rt_dl(x, RX_RXA_F32, 2, shape);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m1, 0, &arg, 1, &out, NULL, &err), 0);
    rx_rt_outputs_free(out);
    ck_assert_int_eq(rx_rt_call(m2, 0, &arg, 1, &out, NULL, &err), -1);
    rx_rt_module_free(m1);
    rx_rt_module *m3 = kernel_module(ctx, 0); /* may reuse m1's fd number */
    ck_assert_int_eq(rx_rt_call(m3, 0, &arg, 1, &out, NULL, &err), 0);
    ck_assert_float_eq(((float *)rx_rt_outputs_tensor(out, 0)->data)[3], 9.0f);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m2);
    rx_rt_module_free(m3);
    rx_rt_ctx_free(ctx);
}
END_TEST

START_TEST(bench_statistics)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = kernel_module(ctx, 0);
    float x[64 * 4] = {0};
    int64_t shape[2] = {64, 4};
    DLTensor in = rt_dl(x, RX_RXA_F32, 2, shape);
    rx_rt_arg arg = rt_targ(&in);
    rx_rt_bench_opts o = {2, 5, 3, 0, 0};
    rx_rt_bench_result r;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), 0);
    ck_assert_int_eq(r.repeat, 5);
    ck_assert_int_eq(r.number, 3);
    ck_assert_int_eq(r.kernels, 1);
    ck_assert_int_eq(r.peak_bytes, 64 * 16);
    ck_assert(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
    ck_assert(r.min_ms <= r.mean_ms && r.mean_ms <= r.max_ms);
    ck_assert(r.stddev_ms >= 0 && r.min_ms > 0);
    o.min_repeat_ms = 5; /* number grows until a measurement lasts 5 ms */
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), 0);
    ck_assert_int_gt(r.number, 3);
    ck_assert(r.mean_ms * r.number >= 4.0);
    int64_t bad[2] = {64, 3};
    in.shape = bad;
    ck_assert_int_eq(rx_rt_bench(m, 0, &arg, 1, &o, &r, &err), -1);
    ck_assert_str_eq(err.msg, "main: x: expected (n, 4), got (64, 3)");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *vm_suite(void)
{
    Suite *s = suite_create("vm");
    TCase *tc = tcase_create("vm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kernel_call_end_to_end);
    tcase_add_test(tc, wrong_input_messages);
    tcase_add_test(tc, kernel_error_code);
    tcase_add_test(tc, heap_arithmetic_floor);
    tcase_add_test(tc, tuples_branches_calls);
    tcase_add_test(tc, view_shares_bytes);
    tcase_add_test(tc, call_depth_is_bounded);
    tcase_add_test(tc, pool_reuse_and_peak);
    tcase_add_test(tc, pool_huge_blocks);
    tcase_add_test(tc, constants_outlive_module);
    tcase_add_test(tc, type_errors_at_run_time);
    tcase_add_test(tc, verifier_rejects_bad_code);
    tcase_add_test(tc, missing_kernel_symbol);
    tcase_add_test(tc, two_modules_with_same_kernel_names);
    tcase_add_test(tc, bench_statistics);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(vm_suite)
