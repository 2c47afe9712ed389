/*
 * test_library_lower.c — partial library lowering (compiler/pass/library_lower.c).
 *
 * Golden: a two-layer MLP (x @ W1 + b1 -> relu -> @ W2) becomes two call_dps_library
 * (blas.matmul_bias_relu, blas.matmul) and equals, structurally, the expected module
 * written by hand. Then the cost rule (static M = 1 and a small static volume stay
 * generated, --lib all takes them), --lib none keeps every op, an intermediate used
 * twice is not fused (the matmul alone goes), a disabled pattern falls back to a shorter
 * one, the activations and the bias on the left, GELU as torch.onnx exports it
 * (erf form, both product orders; a wrong constant or a third use not taken), batched
 * shapes, what is not taken
 * (i64, 1-D, out_dtype), and an unknown pattern name as an option error. The OpenCL
 * registry (opencl,clblast=1): bare matmuls become clblast.matmul under the same cost
 * rule, biases and activations stay ops. matmul_view: attention's products as PyTorch
 * exports them (pt, qscale, kt) and grouped-query k (repeat; expand_dims + broadcast_to +
 * reshape) become one blas.matmul_view on the projections with the exact descriptor
 * (extents in the base's dims, composed permutation, repeat factors, the scale as
 * alpha); a transposed weight and a 2-D weight under a 4-D operand are taken, a decode
 * row (M = 1), a repeat on a matrix axis and the disabled pattern are not.
 */
#include "pass_test.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/text.h"

static rx_module *load(const char *text)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, strlen(text), NULL, &d);
    ck_assert_msg(m != NULL, "read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

/* Loads `text`, runs library lowering with o; returns the module and *n rewritten. */
static rx_module *lower(const char *text, const rx_lib_opts *o, int *n)
{
    rx_module *m = load(text);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(rx_library_lower(m, o, n, &d), "lower: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

static void assert_equal(const rx_module *got, const char *want_text)
{
    rx_module *want = load(want_text);
    rx_sb why = {0}, txt = {0};
    rx_print_module(got, &txt);
    bool eq = rx_struct_equal(got, want, &why);
    ck_assert_msg(eq, "%s\n%s", rx_sb_str(&why), rx_sb_str(&txt));
    rx_sb_free(&why);
    rx_sb_free(&txt);
    rx_module_free(want);
}

/* The value bound to variable `name` in main's first block (NULL when unbound). */
static const rx_node *bound(const rx_module *m, const char *name)
{
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    for (int i = 0; i < b->nbindings; i++)
        if (!strcmp(b->bindings[i].var->u.var.name, name)) return b->bindings[i].value;
    return NULL;
}

static const char *lib_of(const rx_module *m, const char *name)
{
    const rx_node *v = bound(m, name);
    ck_assert_msg(v != NULL, "%s not bound", name);
    return v->kind == RX_N_CALL && v->call_kind == RX_CALL_LIB ? v->u.call.lib : "(op)";
}

static int nbindings(const rx_module *m)
{
    return rx_module_find(m, "main")->body->blocks[0]->nbindings;
}

#define T(shape, dt) "{\"tensor\": {\"shape\": " shape ", \"dtype\": \"" dt "\"}}"
#define P(name, shape) "{\"name\": \"" name "\", \"type\": " T(shape, "f32") "}"
#define PD(name, shape, dt) "{\"name\": \"" name "\", \"type\": " T(shape, dt) "}"
#define OP(v, op, args) "{\"var\": \"" v "\", \"value\": {\"op\": \"" op "\", \"args\": " args "}}"
#define LIB(v, lib, args, out) \
    "{\"var\": \"" v "\", \"value\": {\"call_dps_library\": \"" lib "\", \"args\": " args \
    ", \"out\": " out "}}"
#define MODULE(params, bindings, result)                                                     \
    "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {\"main\": {\"kind\": "     \
    "\"relax\", \"params\": [" params "], \"body\": {\"blocks\": [{\"dataflow\": true, "     \
    "\"bindings\": [" bindings "]}], \"result\": \"" result "\"}}}}"

#define MLP_PARAMS P("x", "[\"n\", 64]") "," P("W1", "[64, 128]") "," P("b1", "[128]") "," P("W2", "[128, 32]")

static const char mlp[] = MODULE(MLP_PARAMS,
    OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", "[\"h\", \"b1\"]") ","
    OP("r", "nn.relu", "[\"s\"]") "," OP("y", "matmul", "[\"r\", \"W2\"]"), "y");

static const char mlp_expected[] = MODULE(MLP_PARAMS,
    LIB("r", "blas.matmul_bias_relu", "[\"x\", \"W1\", \"b1\"]", T("[\"n\", 128]", "f32")) ","
    LIB("y", "blas.matmul", "[\"r\", \"W2\"]", T("[\"n\", 32]", "f32")), "y");

START_TEST(mlp_golden)
{
    int n;
    rx_module *m = lower(mlp, NULL, &n);
    ck_assert_int_eq(n, 2);
    assert_equal(m, mlp_expected);
    const rx_node *r = bound(m, "r");
    ck_assert_int_eq(r->u.call.out->ndim, 2);
    ck_assert_int_eq(r->sinfo->dtype, RX_DT_F32);
    rx_module_free(m);
    /* auto with everything enabled is the default: explicit options give the same */
    rx_lib_opts o = {RX_LIB_AUTO, NULL, 0, false, false};
    m = lower(mlp, &o, &n);
    assert_equal(m, mlp_expected);
    rx_module_free(m);
}
END_TEST

/* Static shapes: M = 1 (matrix-vector) and a small volume stay generated; a symbolic
   batch of M = 1 rows times a 2-D weight (decode's (b, 1, k) @ W) is symbolic rows: the
   library (runtime/library_matvec.c at run time); a literal batch of 1 stays generated,
   and so does a 3-D weight (a product per batch item). */
START_TEST(cost_rule)
{
    static const char dec[] = MODULE(
        P("x", "[\"b\", 1, 512]") "," P("x1", "[1, 1, 512]") "," P("W", "[512, 512]") ","
        P("B3", "[\"b\", 512, 512]"),
        OP("y", "matmul", "[\"x\", \"W\"]") "," OP("y1", "matmul", "[\"x1\", \"W\"]") ","
        OP("y3", "matmul", "[\"x\", \"B3\"]"), "y");
    static const char mv[] = MODULE(P("x", "[1, 512]") "," P("W", "[512, 512]"),
                                    OP("y", "matmul", "[\"x\", \"W\"]"), "y");
    static const char small[] = MODULE(P("x", "[4, 8]") "," P("W", "[8, 8]"),
                                       OP("y", "matmul", "[\"x\", \"W\"]"), "y");
    static const char big[] = MODULE(P("x", "[64, 64]") "," P("W", "[64, 64]"),
                                     OP("y", "matmul", "[\"x\", \"W\"]"), "y");
    static const char symk[] = MODULE(P("x", "[2, \"k\"]") "," P("W", "[\"k\", 8]"),
                                      OP("y", "matmul", "[\"x\", \"W\"]"), "y");
    int n;
    rx_module *m = lower(mv, NULL, &n);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(lib_of(m, "y"), "(op)");
    rx_module_free(m);
    m = lower(dec, NULL, &n);
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "y1"), "(op)");
    ck_assert_str_eq(lib_of(m, "y3"), "(op)");
    ck_assert_int_eq(n, 1);
    rx_module_free(m);
    m = lower(small, NULL, &n); /* 4*8*8 = 256 < 2^15 */
    ck_assert_str_eq(lib_of(m, "y"), "(op)");
    rx_module_free(m);
    m = lower(big, NULL, &n); /* 64^3 = 262144 */
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    rx_module_free(m);
    m = lower(symk, NULL, &n); /* static M = 2 > 1, symbolic K counts as large */
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    rx_module_free(m);
    rx_lib_opts lower_threshold = {RX_LIB_AUTO, NULL, 256, false, false};
    m = lower(small, &lower_threshold, &n);
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    rx_module_free(m);
    rx_lib_opts all = {RX_LIB_ALL, NULL, 0, false, false};
    m = lower(mv, &all, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    rx_module_free(m);
}
END_TEST

START_TEST(lib_none_keeps_ops)
{
    rx_lib_opts none = {RX_LIB_NONE, NULL, 0, false, false};
    int n;
    rx_module *m = lower(mlp, &none, &n);
    ck_assert_int_eq(n, 0);
    assert_equal(m, mlp);
    rx_module_free(m);
}
END_TEST

/* h is used by the add and by the result tuple's add: no fusion through h. */
START_TEST(used_twice_not_fused)
{
    static const char twice[] = MODULE(MLP_PARAMS,
        OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", "[\"h\", \"b1\"]") ","
        OP("r", "nn.relu", "[\"s\"]") "," OP("z", "add", "[\"r\", \"h\"]"), "z");
    int n;
    rx_module *m = lower(twice, NULL, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(lib_of(m, "h"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "s"), "(op)");
    ck_assert_str_eq(lib_of(m, "r"), "(op)");
    ck_assert_int_eq(nbindings(m), 4);
    rx_module_free(m);
    /* s used twice: matmul + bias fused, relu stays */
    static const char s_twice[] = MODULE(MLP_PARAMS,
        OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", "[\"h\", \"b1\"]") ","
        OP("r", "nn.relu", "[\"s\"]") "," OP("z", "add", "[\"r\", \"s\"]"), "z");
    m = lower(s_twice, NULL, &n);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias");
    ck_assert_ptr_null(bound(m, "h"));
    ck_assert_str_eq(lib_of(m, "r"), "(op)");
    ck_assert_int_eq(nbindings(m), 3);
    rx_module_free(m);
    /* the intermediate is the block's result: used outside the chain */
    static const char out[] = MODULE(MLP_PARAMS,
        OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", "[\"h\", \"b1\"]"), "h");
    m = lower(out, NULL, &n);
    ck_assert_str_eq(lib_of(m, "h"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "s"), "(op)");
    rx_module_free(m);
}
END_TEST

START_TEST(disable_falls_back)
{
    static const char *const off[] = {"matmul_bias_relu", NULL};
    rx_lib_opts o = {RX_LIB_AUTO, off, 0, false, false};
    int n;
    rx_module *m = lower(mlp, &o, &n);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias");
    ck_assert_str_eq(lib_of(m, "r"), "(op)");
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul");
    rx_module_free(m);
    static const char *const off2[] = {"matmul_bias_relu", "matmul_bias", "matmul", NULL};
    rx_lib_opts o2 = {RX_LIB_AUTO, off2, 0, false, false};
    m = lower(mlp, &o2, &n);
    ck_assert_int_eq(n, 0);
    assert_equal(m, mlp);
    rx_module_free(m);
    /* an unknown name is an option error */
    static const char *const bad[] = {"conv3d", NULL};
    rx_lib_opts o3 = {RX_LIB_AUTO, bad, 0, false, false};
    rx_module *m3 = load(mlp);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(!rx_library_lower(m3, &o3, NULL, &d));
    char *s = diags_str(&d);
    ck_assert_msg(strstr(s, "unknown library pattern conv3d (known: matmul_bias_relu,"), "%s", s);
    free(s);
    rx_diags_free(&d);
    rx_module_free(m3);
}
END_TEST

/* gelu and silu epilogues, the bias on the left, a chain without bias, other bindings
 * between the chain's ops. */
START_TEST(activations)
{
    static const char acts[] = MODULE(MLP_PARAMS "," P("b2", "[32]"),
        OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", "[\"b1\", \"h\"]") ","
        OP("g", "nn.gelu", "[\"s\"]") "," OP("h2", "matmul", "[\"g\", \"W2\"]") ","
        OP("t", "exp", "[\"b2\"]") "," OP("s2", "add", "[\"h2\", \"t\"]") ","
        OP("y", "nn.silu", "[\"s2\"]") "," OP("h3", "matmul", "[\"x\", \"W1\"]") ","
        OP("y3", "nn.relu", "[\"h3\"]") "," OP("z", "matmul", "[\"y3\", \"W2\"]") ","
        OP("w", "add", "[\"y\", \"z\"]"), "w");
    int n;
    /* --lib all: whole chains, gelu and silu included */
    rx_lib_opts all = {RX_LIB_ALL, NULL, 0, false, false};
    rx_module *m = lower(acts, &all, &n);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(lib_of(m, "g"), "blas.matmul_bias_gelu");
    ck_assert_str_eq(lib_of(m, "y"), "blas.matmul_bias_silu");
    ck_assert_str_eq(lib_of(m, "y3"), "blas.matmul_relu");
    ck_assert_str_eq(lib_of(m, "z"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "t"), "(op)");
    const rx_node *y = bound(m, "y");
    ck_assert_int_eq(y->nargs, 3);
    ck_assert_str_eq(y->args[2]->u.var.name, "t");
    ck_assert_str_eq(bound(m, "g")->args[2]->u.var.name, "b1");
    ck_assert_int_eq(nbindings(m), 6); /* g t y y3 z w */
    rx_module_free(m);
    /* auto (the cost rule): the chains stop before gelu and silu, which stay ops for
       FuseOps; the relu chain is still one call */
    m = lower(acts, NULL, &n);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias");
    ck_assert_str_eq(lib_of(m, "g"), "(op)");
    ck_assert_str_eq(lib_of(m, "s2"), "blas.matmul_bias");
    ck_assert_str_eq(lib_of(m, "y"), "(op)");
    ck_assert_str_eq(lib_of(m, "y3"), "blas.matmul_relu");
    ck_assert_str_eq(lib_of(m, "z"), "blas.matmul");
    ck_assert_str_eq(bound(m, "s")->args[2]->u.var.name, "b1");
    ck_assert_int_eq(nbindings(m), 8); /* s g t s2 y y3 z w */
    rx_module_free(m);
}
END_TEST

/* GELU as torch.onnx exports it (x / sqrt 2, erf, + 1, times x, times 0.5; or 0.5 * x
 * first), after matmul + bias, under --lib all: the whole of it is one
 * blas.matmul_bias_gelu (auto keeps it generated: the cost rule). A wrong constant or a
 * third use of the sum stops the chain before it. */
#define FC(v) "{\"const\": " v ", \"dtype\": \"f32\"}"
/* h = x @ W1; s = add(S); d = D_OP(D); e = erf(d); a = add(A); p = multiply(P);
 * y = multiply(Y) [TAIL]; result R */
#define GELU_MOD(S, D_OP, D, A, P, Y, TAIL, R)                                               \
    MODULE(MLP_PARAMS,                                                                      \
           OP("h", "matmul", "[\"x\", \"W1\"]") "," OP("s", "add", S) "," OP("d", D_OP, D) "," \
           OP("e", "erf", "[\"d\"]") "," OP("a", "add", A) "," OP("p", "multiply", P) ","     \
           OP("y", "multiply", Y) TAIL, R)
START_TEST(gelu_erf_exported)
{
    static const char a[] = GELU_MOD("[\"h\", \"b1\"]", "divide", "[\"s\", " FC("1.4142135") "]",
        "[\"e\", " FC("1.0") "]", "[\"s\", \"a\"]", "[\"p\", " FC("0.5") "]", "", "y");
    static const char b[] = GELU_MOD("[\"b1\", \"h\"]", "multiply", "[" FC("0.70710677") ", \"s\"]",
        "[" FC("1.0") ", \"e\"]", "[" FC("0.5") ", \"s\"]", "[\"a\", \"p\"]", "", "y");
    static const char bad[] = GELU_MOD("[\"h\", \"b1\"]", "divide", "[\"s\", " FC("1.5") "]",
        "[\"e\", " FC("1.0") "]", "[\"s\", \"a\"]", "[\"p\", " FC("0.5") "]", "", "y");
    static const char third[] = GELU_MOD(
        "[\"h\", \"b1\"]", "divide", "[\"s\", " FC("1.4142135") "]",
        "[\"e\", " FC("1.0") "]", "[\"s\", \"a\"]", "[\"p\", " FC("0.5") "]",
        "," OP("z", "add", "[\"y\", \"s\"]"), "z");
    const char *const mods[] = {a, b};
    rx_lib_opts all = {RX_LIB_ALL, NULL, 0, false, false};
    int n;
    for (int i = 0; i < 2; i++) {
        rx_module *m = lower(mods[i], &all, &n);
        ck_assert_int_eq(n, 1);
        ck_assert_str_eq(lib_of(m, "y"), "blas.matmul_bias_gelu");
        ck_assert_str_eq(bound(m, "y")->args[2]->u.var.name, "b1");
        ck_assert_int_eq(nbindings(m), 1);
        rx_module_free(m);
    }
    rx_module *m = lower(a, NULL, &n);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias"); /* auto: the gelu stays */
    ck_assert_int_eq(nbindings(m), 6);
    rx_module_free(m);
    m = lower(bad, &all, &n);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias");
    ck_assert_str_eq(lib_of(m, "y"), "(op)");
    ck_assert_int_eq(nbindings(m), 6);
    rx_module_free(m);
    m = lower(third, &all, &n);
    ck_assert_str_eq(lib_of(m, "s"), "blas.matmul_bias");
    ck_assert_int_eq(nbindings(m), 7);
    rx_module_free(m);
}
END_TEST

/* Batched shapes go; i64, 1-D operands, a bias that broadcasts the result do not. */
START_TEST(shapes_taken_or_not)
{
    static const char mod[] = MODULE(
        P("a", "[2, \"n\", 16]") "," P("b", "[16, 8]") "," P("c", "[2, 16, 8]") ","
        PD("ia", "[\"n\", 4]", "i64") "," PD("ib", "[4, 4]", "i64") ","
        P("v", "[16]") "," P("x", "[\"n\", 16]") "," P("bb", "[\"n\", 8]"),
        OP("bmm", "matmul", "[\"a\", \"b\"]") "," OP("bb3", "matmul", "[\"a\", \"c\"]") ","
        OP("i", "matmul", "[\"ia\", \"ib\"]") "," OP("mv", "matmul", "[\"x\", \"v\"]") ","
        OP("h", "matmul", "[\"x\", \"b\"]") "," OP("s", "add", "[\"h\", \"bb\"]"), "s");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_str_eq(lib_of(m, "bmm"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "bb3"), "blas.matmul");
    ck_assert_str_eq(lib_of(m, "i"), "(op)");
    ck_assert_str_eq(lib_of(m, "mv"), "(op)");
    ck_assert_str_eq(lib_of(m, "h"), "blas.matmul"); /* (n, 8) bias is not a (8,) bias */
    ck_assert_str_eq(lib_of(m, "s"), "(op)");
    ck_assert_int_eq(n, 3);
    rx_module_free(m);
}
END_TEST

/* The OpenCL registry: matmul alone, as clblast.matmul, under the CPU's cost rule. */
START_TEST(opencl_registry)
{
    rx_lib_opts cl = {RX_LIB_AUTO, NULL, 0, true, false};
    int n;
    rx_module *m = lower(mlp, &cl, &n);
    ck_assert_int_eq(n, 2);
    static const char *const want[][2] = {
        {"h", "clblast.matmul"}, {"s", "(op)"}, {"r", "(op)"}, {"y", "clblast.matmul"}};
    for (int i = 0; i < 4; i++) ck_assert_str_eq(lib_of(m, want[i][0]), want[i][1]);
    ck_assert_int_eq(nbindings(m), 4);
    rx_module_free(m);
    static const char shapes[] = MODULE(
        P("a", "[2, \"n\", 16]") "," P("b", "[16, 8]") "," P("c", "[2, 16, 8]") ","
        P("x1", "[1, 512]") "," P("W", "[512, 512]") "," P("xs", "[4, 8]") "," P("Ws", "[8, 8]"),
        OP("bmm", "matmul", "[\"a\", \"b\"]") "," OP("bb3", "matmul", "[\"a\", \"c\"]") ","
        OP("mv", "matmul", "[\"x1\", \"W\"]") "," OP("sm", "matmul", "[\"xs\", \"Ws\"]"), "bb3");
    m = lower(shapes, &cl, &n);
    ck_assert_str_eq(lib_of(m, "bmm"), "clblast.matmul");
    ck_assert_str_eq(lib_of(m, "bb3"), "clblast.matmul");
    ck_assert_str_eq(lib_of(m, "mv"), "(op)"); /* M = 1 */
    ck_assert_str_eq(lib_of(m, "sm"), "(op)"); /* 256 < 2^15 */
    ck_assert_int_eq(n, 2);
    rx_module_free(m);
    const char *const off[] = {"matmul", NULL};
    rx_lib_opts cl_off = {RX_LIB_AUTO, off, 0, true, false};
    m = lower(mlp, &cl_off, &n);
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
}
END_TEST

/* ---- matmul_view: operands read as strided views (library_view.c) ---- */

#define OPA(v, op, args, attrs) \
    "{\"var\": \"" v "\", \"value\": {\"op\": \"" op "\", \"args\": " args ", \"attrs\": " attrs "}}"
#define HEADS(v, x, nh, axes)                                                                \
    OP(v "_r", "reshape", "[\"" x "\", {\"shape\": [\"b\", \"s\", " nh ", 16]}]") ","        \
    OPA(v, "permute_dims", "[\"" v "_r\"]", "{\"axes\": " axes "}")
#define ATT_PARAMS(kvw) P("qp", "[\"b\", \"s\", 64]") "," P("kp", "[\"b\", \"s\", " kvw "]")
#define SCALE "{\"const\": 0.25, \"dtype\": \"f32\"}"

/* The descriptor words of library call `name` (its third argument). */
static const int64_t *view_desc(const rx_module *m, const char *name, int64_t *n)
{
    const rx_node *v = bound(m, name);
    ck_assert_msg(v && v->kind == RX_N_CALL && v->call_kind == RX_CALL_LIB &&
                      !strcmp(v->u.call.lib, "blas.matmul_view"),
                  "%s is not blas.matmul_view", name);
    ck_assert_int_eq(v->nargs, 3);
    const rx_const *k = v->args[2]->u.konst;
    ck_assert_int_eq(v->args[2]->kind, RX_N_CONST);
    ck_assert_int_eq(k->dtype, RX_DT_I64);
    *n = k->shape[0];
    return (const int64_t *)(const void *)k->data;
}

static void assert_words(const int64_t *got, int64_t n, const int64_t *want, int64_t nw)
{
    ck_assert_int_eq(n, nw);
    for (int64_t i = 2; i < n; i++) ck_assert_msg(got[i] == want[i], "word %lld: %lld, want %lld",
                                                 (long long)i, (long long)got[i], (long long)want[i]);
    double alpha;
    memcpy(&alpha, &got[1], sizeof alpha);
    ck_assert_int_eq(got[0], 1);
    double wa;
    memcpy(&wa, &want[1], sizeof wa);
    ck_assert_msg(alpha == wa, "alpha %g, want %g", alpha, wa);
}

/* q @ permute(k) * 0.25 as PyTorch exports it (pt), the scale folded into q (qscale),
 * K permuted straight to (b, h, d, s) (kt): one blas.matmul_view on the projections,
 * the descriptor exact (S in the base's dims, P composed, alpha the scale). */
START_TEST(view_attention_forms)
{
    static const char pt[] = MODULE(ATT_PARAMS("64"),
        HEADS("q", "qp", "4", "[0, 2, 1, 3]") "," HEADS("k", "kp", "4", "[0, 2, 1, 3]") ","
        OPA("k_t", "permute_dims", "[\"k\"]", "{\"axes\": [0, 1, 3, 2]}") ","
        OP("qk", "matmul", "[\"q\", \"k_t\"]") "," OP("sc", "multiply", "[\"qk\", " SCALE "]"), "sc");
    int n;
    rx_module *m = lower(pt, NULL, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_null(bound(m, "qk")); /* folded into sc's call */
    const rx_node *c = bound(m, "sc");
    ck_assert_str_eq(c->args[0]->u.var.name, "qp");
    ck_assert_str_eq(c->args[1]->u.var.name, "kp");
    int64_t nw = 0, want[2 + 26] = {1, 0, 4, -1, -2, 4, 16, 1, 1, 1, 1, 0, 2, 1, 3,
                                4, -1, -2, 4, 16, 1, 1, 1, 1, 0, 2, 3, 1};
    double quarter = 0.25;
    memcpy(&want[1], &quarter, sizeof quarter);
    const int64_t *d = view_desc(m, "sc", &nw);
    assert_words(d, nw, want, 28);
    rx_module_free(m);

    static const char qscale[] = MODULE(ATT_PARAMS("64"),
        HEADS("q", "qp", "4", "[0, 2, 1, 3]") "," HEADS("k", "kp", "4", "[0, 2, 1, 3]") ","
        OP("q_s", "multiply", "[\"q\", " SCALE "]") ","
        OPA("k_t", "permute_dims", "[\"k\"]", "{\"axes\": [0, 1, 3, 2]}") ","
        OP("qk", "matmul", "[\"q_s\", \"k_t\"]"), "qk");
    m = lower(qscale, NULL, &n);
    d = view_desc(m, "qk", &nw); /* sets nw: before assert_words reads it */
    assert_words(d, nw, want, 28);
    rx_module_free(m);

    static const char kt[] = MODULE(ATT_PARAMS("64"),
        HEADS("q", "qp", "4", "[0, 2, 1, 3]") "," HEADS("k", "kp", "4", "[0, 2, 3, 1]") ","
        OP("qk", "matmul", "[\"q\", \"k\"]"), "qk");
    m = lower(kt, NULL, &n);
    want[1] = 0;
    double one = 1.0;
    memcpy(&want[1], &one, sizeof one);
    d = view_desc(m, "qk", &nw);
    assert_words(d, nw, want, 28);
    rx_module_free(m);
}
END_TEST

/* Grouped-query k: repeat along the heads, or expand_dims + broadcast_to + reshape
 * (PyTorch's repeat_kv): both give R = 2 on the k/v-heads axis of the base's view. */
START_TEST(view_gqa_forms)
{
    static const char rep[] = MODULE(ATT_PARAMS("32"),
        HEADS("q", "qp", "4", "[0, 2, 1, 3]") "," HEADS("k", "kp", "2", "[0, 2, 1, 3]") ","
        OPA("k_rep", "repeat", "[\"k\"]", "{\"repeats\": 2, \"axis\": 1}") ","
        OPA("k_t", "permute_dims", "[\"k_rep\"]", "{\"axes\": [0, 1, 3, 2]}") ","
        OP("qk", "matmul", "[\"q\", \"k_t\"]"), "qk");
    static const char expand[] = MODULE(ATT_PARAMS("32"),
        HEADS("q", "qp", "4", "[0, 2, 1, 3]") "," HEADS("k", "kp", "2", "[0, 2, 1, 3]") ","
        OPA("k_e", "expand_dims", "[\"k\"]", "{\"axis\": [2]}") ","
        OP("k_x", "broadcast_to", "[\"k_e\", {\"shape\": [\"b\", 2, 2, \"s\", 16]}]") ","
        OP("k_rep", "reshape", "[\"k_x\", {\"shape\": [\"b\", 4, \"s\", 16]}]") ","
        OPA("k_t", "permute_dims", "[\"k_rep\"]", "{\"axes\": [0, 1, 3, 2]}") ","
        OP("qk", "matmul", "[\"q\", \"k_t\"]"), "qk");
    int64_t want[2 + 26] = {1, 0, 4, -1, -2, 4, 16, 1, 1, 1, 1, 0, 2, 1, 3,
                            4, -1, -2, 2, 16, 1, 1, 2, 1, 0, 2, 3, 1};
    double one = 1.0;
    memcpy(&want[1], &one, sizeof one);
    const char *mods[] = {rep, expand};
    for (int i = 0; i < 2; i++) {
        int n;
        int64_t nw = 0;
        rx_module *m = lower(mods[i], NULL, &n);
        ck_assert_int_eq(n, 1);
        const int64_t *d = view_desc(m, "qk", &nw); /* sets nw: before assert_words */
        assert_words(d, nw, want, 28);
        rx_module_free(m);
    }
}
END_TEST

/* Not taken: a one-row q (decode, static M = 1: the cost rule), matmul_view disabled
 * (a 4-D product blas.matmul does not take stays an op), a repeat on a matrix axis
 * (the repeat is materialized and blas.matmul takes the product);
 * taken: a transposed weight (x @ permute_dims(w)), 2-D B broadcast over 4-D A. */
START_TEST(view_taken_or_not)
{
    static const char mod[] = MODULE(
        P("q1", "[\"b\", 1, 64]") "," P("kc", "[\"b\", 4, \"s\", 16]") "," P("x", "[\"b\", \"s\", 24]") ","
        P("w", "[20, 24]") "," P("p", "[\"b\", 4, \"s\", 12]") "," P("w2", "[12, 10]") ","
        P("m2", "[\"s\", 8]") "," P("n2", "[4, 8]"),
        OP("q_r", "reshape", "[\"q1\", {\"shape\": [\"b\", 1, 4, 16]}]") ","
        OPA("q", "permute_dims", "[\"q_r\"]", "{\"axes\": [0, 2, 1, 3]}") ","
        OPA("kct", "permute_dims", "[\"kc\"]", "{\"axes\": [0, 1, 3, 2]}") ","
        OP("dec", "matmul", "[\"q\", \"kct\"]") ","
        OP("wt", "permute_dims", "[\"w\"]") "," OP("lin", "matmul", "[\"x\", \"wt\"]") ","
        OP("b4", "matmul", "[\"p\", \"w2\"]") ","
        OPA("n2r", "repeat", "[\"n2\"]", "{\"repeats\": 2, \"axis\": 0}") ","
        OP("mr", "matmul", "[\"m2\", \"n2r\"]") ","
        OP("out", "add", "[\"lin\", \"lin\"]"), "out");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_str_eq(lib_of(m, "dec"), "(op)");
    ck_assert_str_eq(lib_of(m, "lin"), "blas.matmul_view");
    ck_assert_str_eq(lib_of(m, "b4"), "blas.matmul_view");
    ck_assert_str_eq(lib_of(m, "mr"), "blas.matmul"); /* the repeat materialized */
    ck_assert_int_eq(n, 3);
    int64_t nw = 0;
    const int64_t *d = view_desc(m, "lin", &nw); /* w (20, 24) read transposed */
    ck_assert_int_eq(nw, 2 + 10 + 7);
    ck_assert_int_eq(d[12], 2);
    ck_assert_int_eq(d[13], 20); /* literal extents */
    ck_assert_int_eq(d[14], 24);
    ck_assert_int_eq(d[17], 1);
    ck_assert_int_eq(d[18], 0);
    rx_module_free(m);
    const char *const off[] = {"matmul_view", NULL};
    rx_lib_opts o = {RX_LIB_AUTO, off, 0, false, false};
    m = lower(mod, &o, &n);
    ck_assert_str_eq(lib_of(m, "lin"), "blas.matmul"); /* its (3-D, 2-D) shapes */
    ck_assert_str_eq(lib_of(m, "b4"), "(op)");
    ck_assert_int_eq(n, 2);
    rx_module_free(m);
}
END_TEST

/* The CUDA registry: matmul alone, as cublas.matmul; a literal M of at most
 * RX_LIB_GPU_MV_ROWS (8) stays generated (decode's matvec schedule), a symbolic M and a
 * larger literal one go to cuBLAS. */
START_TEST(cuda_registry)
{
    rx_lib_opts cu = {RX_LIB_AUTO, NULL, 0, false, true};
    int n;
    rx_module *m = lower(mlp, &cu, &n);
    ck_assert_int_eq(n, 2);
    static const char *const want[][2] = {
        {"h", "cublas.matmul"}, {"s", "(op)"}, {"r", "(op)"}, {"y", "cublas.matmul"}};
    for (int i = 0; i < 4; i++) ck_assert_str_eq(lib_of(m, want[i][0]), want[i][1]);
    rx_module_free(m);
    static const char shapes[] = MODULE(
        P("a", "[2, \"n\", 4096]") "," P("b", "[4096, 512]") "," P("c", "[2, 4096, 8]") ","
        P("x1", "[\"b\", 1, 4096]") "," P("W", "[4096, 4096]") "," P("x8", "[8, 4096]") ","
        P("x9", "[9, 4096]"),
        OP("bmm", "matmul", "[\"a\", \"b\"]") "," OP("bb3", "matmul", "[\"a\", \"c\"]") ","
        OP("dec", "matmul", "[\"x1\", \"W\"]") "," OP("m8", "matmul", "[\"x8\", \"W\"]") ","
        OP("m9", "matmul", "[\"x9\", \"W\"]"), "bb3");
    m = lower(shapes, &cu, &n);
    ck_assert_str_eq(lib_of(m, "bmm"), "cublas.matmul"); /* symbolic M */
    ck_assert_str_eq(lib_of(m, "bb3"), "cublas.matmul"); /* batched */
    ck_assert_str_eq(lib_of(m, "dec"), "(op)");          /* decode: M = 1, any batch */
    ck_assert_str_eq(lib_of(m, "m8"), "(op)");           /* M = 8: the matvec schedule */
    ck_assert_str_eq(lib_of(m, "m9"), "cublas.matmul");  /* M = 9 */
    ck_assert_int_eq(n, 3);
    rx_module_free(m);
}
END_TEST

static Suite *ll_suite(void)
{
    Suite *s = suite_create("library_lower");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, mlp_golden);
    tcase_add_test(tc, cost_rule);
    tcase_add_test(tc, lib_none_keeps_ops);
    tcase_add_test(tc, used_twice_not_fused);
    tcase_add_test(tc, disable_falls_back);
    tcase_add_test(tc, activations);
    tcase_add_test(tc, gelu_erf_exported);
    tcase_add_test(tc, shapes_taken_or_not);
    tcase_add_test(tc, opencl_registry);
    tcase_add_test(tc, view_attention_forms);
    tcase_add_test(tc, view_gqa_forms);
    tcase_add_test(tc, view_taken_or_not);
    tcase_add_test(tc, cuda_registry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ll_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
