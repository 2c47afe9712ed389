/*
 * test_library_conv.c — the conv rule of library lowering (compiler/pass/library_lower.c):
 * nn.conv2d [-> add per-channel bias] [-> add residual] [-> nn.relu] becomes one
 * call_dps_library "blas.conv2d" (x, w, params, [bias], [residual]).
 *
 * Checked per formulation: which bindings became the call, its operands, and the params
 * constant it carries (strides, padding top/left/bottom/right, dilation, groups, flags,
 * act) — for strides, 1-, 2- and 4-value padding, dilation, grouped and depthwise
 * convolutions, 1x1, with and without bias ((1, O, 1, 1), (O, 1, 1), on either side),
 * residual and relu, symbolic batch. Not taken: a (O,) bias (it broadcasts over W), an
 * i64 convolution, an intermediate used twice (the conv goes alone), a small
 * static volume (generated; --lib all takes it), --lib-disable conv2d, the OpenCL
 * registry. The pool rule: nn.max_pool2d / nn.avg_pool2d become rt.pool2d with their
 * params (pool size, strides, padding, dilation, ceil_mode, max, count_include_pad);
 * a small one stays generated, --lib-disable pool2d keeps them; an avg pool that counts
 * its padding (or has none) over a constant-0 nn.pad of H, W reads the pad's operand with
 * the amounts added to its padding, not a max pool, an uncounted padding or a pad of 1.0
 * (the numbers: ResNeSt in onnx_torch_zoo3 against PyTorch). (Other layouts are
 * refused by deduction, so the rules' layout checks have no test module.)
 */
#include "pass_test.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"

/* Loads `text`, runs library lowering with o; returns the module and *n rewritten. */
static rx_module *lower(const char *text, const rx_lib_opts *o, int *n)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, strlen(text), NULL, &d);
    ck_assert_msg(m != NULL, "read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce: %s", diags_str(&d));
    ck_assert_msg(rx_library_lower(m, o, n, &d), "lower: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce after: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

static const rx_node *bound(const rx_module *m, const char *name)
{
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    for (int i = 0; i < b->nbindings; i++)
        if (!strcmp(b->bindings[i].var->u.var.name, name)) return b->bindings[i].value;
    return NULL;
}

static bool is_conv_call(const rx_module *m, const char *name)
{
    const rx_node *v = bound(m, name);
    ck_assert_msg(v != NULL, "%s not bound", name);
    return v->kind == RX_N_CALL && v->call_kind == RX_CALL_LIB && !strcmp(v->u.call.lib, "blas.conv2d");
}

static int nbindings(const rx_module *m)
{
    return rx_module_find(m, "main")->body->blocks[0]->nbindings;
}

/* Asserts `name` is blas.conv2d with nargs operands whose params are want[0..np) and
 * whose operands 0, 1, 3, 4 are the variables x, w, then extra (NULL-terminated). */
static void assert_conv_np(const rx_module *m, const char *name, const char *x, const char *w,
                           const int64_t *want, int np, const char *const *extra)
{
    ck_assert_msg(is_conv_call(m, name), "%s is not blas.conv2d", name);
    const rx_node *c = bound(m, name);
    int nextra = 0;
    while (extra && extra[nextra]) nextra++;
    ck_assert_int_eq(c->nargs, 3 + nextra);
    ck_assert_str_eq(c->args[0]->u.var.name, x);
    ck_assert_str_eq(c->args[1]->u.var.name, w);
    for (int i = 0; i < nextra; i++) ck_assert_str_eq(c->args[3 + i]->u.var.name, extra[i]);
    const rx_node *p = c->args[2];
    ck_assert_int_eq(p->kind, RX_N_CONST);
    ck_assert_int_eq(p->u.konst->dtype, RX_DT_I64);
    ck_assert_int_eq(p->u.konst->ndim, 1);
    ck_assert_int_eq(p->u.konst->shape[0], np);
    for (int i = 0; i < np; i++) {
        int64_t v;
        memcpy(&v, p->u.konst->data + 8 * i, 8);
        ck_assert_msg(v == want[i], "%s params[%d] = %lld, want %lld", name, i, (long long)v,
                      (long long)want[i]);
    }
}

static void assert_conv(const rx_module *m, const char *name, const char *x, const char *w,
                        const int64_t want[11], const char *const *extra)
{
    assert_conv_np(m, name, x, w, want, 11, extra);
}

/* The params word of an f32 clamp bound. */
static int64_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (int64_t)u;
}

#define T(shape, dt) "{\"tensor\": {\"shape\": " shape ", \"dtype\": \"" dt "\"}}"
#define P(name, shape) "{\"name\": \"" name "\", \"type\": " T(shape, "f32") "}"
#define PD(name, shape, dt) "{\"name\": \"" name "\", \"type\": " T(shape, dt) "}"
#define OP(v, op, args) "{\"var\": \"" v "\", \"value\": {\"op\": \"" op "\", \"args\": " args "}}"
#define CONV(v, x, w, attrs)                                                                 \
    "{\"var\": \"" v "\", \"value\": {\"op\": \"nn.conv2d\", \"args\": [\"" x "\", \"" w "\"]" \
    ", \"attrs\": {" attrs "}}}"
#define MODULE(params, bindings, result)                                                     \
    "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {\"main\": {\"kind\": "     \
    "\"relax\", \"params\": [" params "], \"body\": {\"blocks\": [{\"dataflow\": true, "     \
    "\"bindings\": [" bindings "]}], \"result\": \"" result "\"}}}}"

/* A ResNet basic block as exported: conv+bias+relu, conv+bias, 1x1 shortcut, add, relu;
 * symbolic batch. */
#define BLOCK_PARAMS                                                                     \
    P("x", "[\"n\", 16, 20, 20]") "," P("w1", "[32, 16, 3, 3]") "," P("b1", "[1, 32, 1, 1]") \
    "," P("w2", "[32, 32, 3, 3]") "," P("b2", "[32, 1, 1]") "," P("ws", "[32, 16, 1, 1]")
static const char block[] = MODULE(BLOCK_PARAMS,
    CONV("c1", "x", "w1", "\"padding\": [1, 1, 1, 1]") "," OP("s1", "add", "[\"c1\", \"b1\"]") ","
    OP("r1", "nn.relu", "[\"s1\"]") ","
    CONV("c2", "r1", "w2", "\"padding\": [1, 1]") "," OP("s2", "add", "[\"b2\", \"c2\"]") ","
    CONV("sc", "x", "ws", "") "," OP("a", "add", "[\"s2\", \"sc\"]") ","
    OP("y", "nn.relu", "[\"a\"]"), "y");

START_TEST(basic_block)
{
    int n;
    rx_module *m = lower(block, NULL, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(nbindings(m), 3); /* r1, sc, y */
    static const int64_t p1[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const char *const e1[] = {"b1", NULL};
    assert_conv(m, "r1", "x", "w1", p1, e1);
    /* bias on the left and the shortcut as residual, then relu; the 2-value padding */
    static const int64_t p2[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1};
    static const char *const e2[] = {"b2", "sc", NULL};
    assert_conv(m, "y", "r1", "w2", p2, e2);
    static const int64_t ps[11] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0};
    assert_conv(m, "sc", "x", "ws", ps, NULL);
    /* the shortcut stays before its user */
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    ck_assert_str_eq(b->bindings[1].var->u.var.name, "sc");
    ck_assert_int_eq(bound(m, "y")->sinfo->ndim, 4);
    rx_module_free(m);
}
END_TEST

/* Strides, 4-value padding, dilation, grouped, depthwise (and channel multiplier 2),
 * relu without bias, a residual without bias. */
START_TEST(formulations)
{
    static const char mod[] = MODULE(
        P("x", "[\"n\", 8, 17, 19]") "," P("w", "[16, 8, 3, 2]") "," P("wg", "[16, 4, 3, 3]") ","
        P("wd", "[8, 1, 3, 3]") "," P("wm", "[16, 1, 5, 5]") "," P("r", "[\"n\", 16, 9, 10]"),
        CONV("s2", "x", "w", "\"strides\": [2, 2], \"padding\": [0, 1, 2, 1]") ","
        OP("y1", "nn.relu", "[\"s2\"]") ","
        CONV("dl", "x", "w", "\"dilation\": [2, 3], \"padding\": [2]") ","
        CONV("g2", "x", "wg", "\"groups\": 2, \"strides\": [1, 2], \"padding\": [1, 1, 1, 1]") ","
        CONV("dw", "x", "wd", "\"groups\": 8, \"padding\": [1, 1, 1, 1]") ","
        CONV("dm", "x", "wm", "\"groups\": 8, \"strides\": [2, 2], \"padding\": [2, 2, 2, 2]") ","
        OP("y2", "add", "[\"dm\", \"r\"]"),
        "y2");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_int_eq(n, 5);
    static const int64_t p_s2[11] = {2, 2, 0, 1, 2, 1, 1, 1, 1, 0, 1};
    assert_conv(m, "y1", "x", "w", p_s2, NULL);
    static const int64_t p_dl[11] = {1, 1, 2, 2, 2, 2, 2, 3, 1, 0, 0};
    assert_conv(m, "dl", "x", "w", p_dl, NULL);
    static const int64_t p_g2[11] = {1, 2, 1, 1, 1, 1, 1, 1, 2, 0, 0};
    assert_conv(m, "g2", "x", "wg", p_g2, NULL);
    static const int64_t p_dw[11] = {1, 1, 1, 1, 1, 1, 1, 1, 8, 0, 0};
    assert_conv(m, "dw", "x", "wd", p_dw, NULL);
    static const int64_t p_dm[11] = {2, 2, 2, 2, 2, 2, 1, 1, 8, 2, 0};
    static const char *const e_dm[] = {"r", NULL};
    assert_conv(m, "y2", "x", "wm", p_dm, e_dm);
    ck_assert_int_eq(nbindings(m), 5);
    rx_module_free(m);
}
END_TEST

#define KF(v) "{\"const\": " v ", \"dtype\": \"f32\"}"

/* Clamps as ONNX Clip imports them (ReLU6: maximum(., 0) then minimum(., 6)) end the
 * chain as act 2 with the bounds' bits (13 params), after an nn.relu too (F.relu6's
 * export); maximum(., 0) alone is relu (act 1);
 * minimum alone is clamp(-inf, hi); lo > hi (ONNX: hi wins) and a tensor bound are left
 * to the generated loops. */
START_TEST(clamps)
{
    static const char mod[] = MODULE(
        P("x", "[\"n\", 16, 20, 20]") "," P("w", "[16, 16, 1, 1]") "," P("wd", "[16, 1, 3, 3]") ","
        P("b", "[1, 16, 1, 1]") "," P("t", "[1, 16, 1, 1]"),
        CONV("c1", "x", "w", "") "," OP("s1", "add", "[\"c1\", \"b\"]") ","
        OP("m1", "maximum", "[\"s1\", " KF("0.0") "]") "," OP("y1", "minimum", "[\"m1\", " KF("6.0") "]") ","
        CONV("c2", "y1", "wd", "\"groups\": 16, \"padding\": [1]") ","
        OP("y2", "maximum", "[" KF("0.0") ", \"c2\"]") ","
        CONV("c3", "y2", "w", "") "," OP("y3", "minimum", "[\"c3\", " KF("0.25") "]") ","
        CONV("c4", "y3", "w", "") "," OP("m4", "maximum", "[\"c4\", " KF("2.0") "]") ","
        OP("y4", "minimum", "[\"m4\", " KF("1.0") "]") ","
        CONV("c5", "y4", "w", "") "," OP("y5", "maximum", "[\"c5\", \"t\"]") ","
        CONV("c6", "y5", "w", "") "," OP("r6", "nn.relu", "[\"c6\"]") ","
        OP("m6", "maximum", "[\"r6\", " KF("-1.0") "]") "," OP("y6", "minimum", "[\"m6\", " KF("6.0") "]") ","
        CONV("c7", "y6", "w", "") "," OP("r7", "nn.relu", "[\"c7\"]") ","
        OP("y7", "minimum", "[\"r7\", " KF("-1.0") "]"),
        "y7");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_int_eq(n, 7);
    static const char *const eb[] = {"b", NULL};
    int64_t p1[13] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2, bits(0.0f), bits(6.0f)};
    assert_conv_np(m, "y1", "x", "w", p1, 13, eb);
    static const int64_t p2[11] = {1, 1, 1, 1, 1, 1, 1, 1, 16, 0, 1};
    assert_conv(m, "y2", "y1", "wd", p2, NULL);
    int64_t p3[13] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 2, bits(-INFINITY), bits(0.25f)};
    assert_conv_np(m, "y3", "y2", "w", p3, 13, NULL);
    /* lo > hi: the conv goes alone, maximum and minimum stay */
    ck_assert(is_conv_call(m, "c4"));
    ck_assert_int_eq(bound(m, "m4")->call_kind, RX_CALL_OP);
    ck_assert_int_eq(bound(m, "y4")->call_kind, RX_CALL_OP);
    ck_assert(is_conv_call(m, "c5")); /* a tensor bound: not a clamp */
    ck_assert_int_eq(bound(m, "y5")->call_kind, RX_CALL_OP);
    /* F.relu6 as exported: relu, then maximum(., 0 here -1) and minimum(., 6): clamp(0, 6) */
    int64_t p6[13] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 2, bits(0.0f), bits(6.0f)};
    assert_conv_np(m, "y6", "y5", "w", p6, 13, NULL);
    /* relu then minimum(., -1): max(0) > hi, only the relu is taken */
    static const int64_t p7[11] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1};
    assert_conv(m, "r7", "y6", "w", p7, NULL);
    ck_assert_int_eq(bound(m, "y7")->call_kind, RX_CALL_OP);
    rx_module_free(m);
}
END_TEST

/* SiLU (x * sigmoid(x), either order) and hardswish (ONNX HardSwish's import) end the
 * chain as act 3 and 4; not taken: a sigmoid product whose x has a third use, a
 * hardswish with 0.2 for 1/6 (HardSigmoid's default alpha), a product of two tensors. */
START_TEST(gates)
{
    static const char mod[] = MODULE(
        P("x", "[\"n\", 16, 20, 20]") "," P("w", "[16, 16, 1, 1]") "," P("b", "[1, 16, 1, 1]"),
        CONV("c1", "x", "w", "") "," OP("s1", "add", "[\"c1\", \"b\"]") ","
        OP("g1", "sigmoid", "[\"s1\"]") "," OP("y1", "multiply", "[\"g1\", \"s1\"]") ","
        CONV("c2", "y1", "w", "") "," OP("h1", "multiply", "[\"c2\", " KF("0.16666667") "]") ","
        OP("h2", "add", "[" KF("0.5") ", \"h1\"]") "," OP("h3", "maximum", "[\"h2\", " KF("0.0") "]") ","
        OP("h4", "minimum", "[\"h3\", " KF("1.0") "]") "," OP("y2", "multiply", "[\"c2\", \"h4\"]") ","
        CONV("c3", "y2", "w", "") "," OP("g3", "sigmoid", "[\"c3\"]") ","
        OP("m3", "multiply", "[\"c3\", \"g3\"]") "," OP("y3", "add", "[\"m3\", \"c3\"]") ","
        CONV("c4", "y3", "w", "") "," OP("k1", "multiply", "[\"c4\", " KF("0.2") "]") ","
        OP("k2", "add", "[\"k1\", " KF("0.5") "]") "," OP("k3", "maximum", "[\"k2\", " KF("0.0") "]") ","
        OP("k4", "minimum", "[\"k3\", " KF("1.0") "]") "," OP("y4", "multiply", "[\"c4\", \"k4\"]") ","
        CONV("c5", "y4", "w", "") "," OP("y5", "multiply", "[\"c5\", \"y4\"]"),
        "y5");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_int_eq(n, 5);
    static const char *const eb[] = {"b", NULL};
    static const int64_t p1[11] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 3};
    assert_conv(m, "y1", "x", "w", p1, eb);
    static const int64_t p2[11] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 4};
    assert_conv(m, "y2", "y1", "w", p2, NULL);
    ck_assert(is_conv_call(m, "c3")); /* c3 used three times: the conv alone */
    ck_assert_int_eq(bound(m, "g3")->call_kind, RX_CALL_OP);
    ck_assert(is_conv_call(m, "c4")); /* 0.2 is not hardswish's 1/6 */
    ck_assert_int_eq(bound(m, "k1")->call_kind, RX_CALL_OP);
    ck_assert(is_conv_call(m, "c5"));
    ck_assert_int_eq(bound(m, "y5")->call_kind, RX_CALL_OP);
    rx_module_free(m);
}
END_TEST

/* Leaky relu ends the chain as act 5 with the slope's bits (12 params): ONNX LeakyRelu's
 * import where(greater(x, 0), x, x * a), and a one-slope PRelu's where(less(x, 0), a * x,
 * x) with a > 0. Not taken: that PRelu form with a negative slope (its zeros' signs
 * differ), where's branches swapped (not a leaky relu), a test against 1, and x with a
 * fourth use. */
START_TEST(leaky)
{
    static const char mod[] = MODULE(
        P("x", "[\"n\", 16, 20, 20]") "," P("w", "[16, 16, 1, 1]") "," P("b", "[1, 16, 1, 1]"),
        CONV("c1", "x", "w", "") "," OP("s1", "add", "[\"c1\", \"b\"]") ","
        OP("g1", "greater", "[\"s1\", " KF("0.0") "]") "," OP("m1", "multiply", "[\"s1\", " KF("0.2") "]") ","
        OP("y1", "where", "[\"g1\", \"s1\", \"m1\"]") ","
        CONV("c2", "y1", "w", "") "," OP("g2", "less", "[\"c2\", " KF("0.0") "]") ","
        OP("m2", "multiply", "[" KF("0.25") ", \"c2\"]") "," OP("y2", "where", "[\"g2\", \"m2\", \"c2\"]") ","
        CONV("c3", "y2", "w", "") "," OP("g3", "less", "[\"c3\", " KF("0.0") "]") ","
        OP("m3", "multiply", "[\"c3\", " KF("-0.5") "]") "," OP("y3", "where", "[\"g3\", \"m3\", \"c3\"]") ","
        CONV("c4", "y3", "w", "") "," OP("g4", "greater", "[\"c4\", " KF("0.0") "]") ","
        OP("m4", "multiply", "[\"c4\", " KF("0.2") "]") "," OP("y4", "where", "[\"g4\", \"m4\", \"c4\"]") ","
        CONV("c5", "y4", "w", "") "," OP("g5", "greater", "[\"c5\", " KF("1.0") "]") ","
        OP("m5", "multiply", "[\"c5\", " KF("0.2") "]") "," OP("y5", "where", "[\"g5\", \"c5\", \"m5\"]") ","
        CONV("c6", "y5", "w", "") "," OP("g6", "greater", "[\"c6\", " KF("0.0") "]") ","
        OP("m6", "multiply", "[\"c6\", " KF("0.2") "]") "," OP("w6", "where", "[\"g6\", \"c6\", \"m6\"]") ","
        OP("y6", "add", "[\"w6\", \"c6\"]"),
        "y6");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_int_eq(n, 6);
    static const char *const eb[] = {"b", NULL};
    int64_t p1[12] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 5, bits(0.2f)};
    assert_conv_np(m, "y1", "x", "w", p1, 12, eb);
    ck_assert(bound(m, "g1") == NULL && bound(m, "m1") == NULL);
    int64_t p2[12] = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 5, bits(0.25f)};
    assert_conv_np(m, "y2", "y1", "w", p2, 12, NULL);
    static const char *const left[] = {"c3", "c4", "c5", "c6"}, *const wh[] = {"y3", "y4", "y5", "w6"};
    for (int i = 0; i < 4; i++) { /* the conv alone, its where kept */
        ck_assert_msg(is_conv_call(m, left[i]), "%s", left[i]);
        ck_assert_int_eq(bound(m, wh[i])->call_kind, RX_CALL_OP);
    }
    rx_module_free(m);
}
END_TEST

/* What the rule leaves: a (O,) bias, i64, an intermediate used twice. */
START_TEST(not_taken)
{
    static const char mod[] = MODULE(
        P("x", "[2, 8, 16, 16]") "," P("w", "[16, 8, 3, 3]") "," P("v", "[16]") ","
        PD("ix", "[2, 8, 16, 16]", "i64") "," PD("iw", "[16, 8, 3, 3]", "i64") ","
        P("b", "[1, 16, 1, 1]"),
        CONV("c", "x", "w", "\"padding\": [1, 1, 1, 1]") "," OP("s", "add", "[\"c\", \"v\"]") ","
        CONV("i", "ix", "iw", "") ","
        CONV("t", "x", "w", "") "," OP("t1", "add", "[\"t\", \"b\"]") ","
        OP("t2", "multiply", "[\"t\", \"t1\"]"),
        "t2");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert(is_conv_call(m, "c"));  /* taken alone: a (16,) bias is over W */
    ck_assert(!is_conv_call(m, "s"));
    ck_assert(!is_conv_call(m, "i"));
    ck_assert(is_conv_call(m, "t")); /* used twice: alone */
    ck_assert(!is_conv_call(m, "t1"));
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(nbindings(m), 6);
    rx_module_free(m);
}
END_TEST

/* The cost rule and the options: a small static conv stays generated (--lib all takes
 * it), --lib-disable conv2d and --lib none keep every conv, the OpenCL registry too. */
START_TEST(cost_and_options)
{
    static const char small[] = MODULE(P("x", "[1, 2, 4, 4]") "," P("w", "[2, 2, 3, 3]"),
                                       CONV("c", "x", "w", ""), "c");
    int n;
    rx_module *m = lower(small, NULL, &n); /* 1*2*2*2*2*9 = 144 < 2^15 */
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
    rx_lib_opts all = {RX_LIB_ALL, NULL, 0, false, false};
    m = lower(small, &all, &n);
    ck_assert_int_eq(n, 1);
    ck_assert(is_conv_call(m, "c"));
    rx_module_free(m);
    const char *const off[] = {"conv2d", NULL};
    rx_lib_opts no_conv = {RX_LIB_AUTO, off, 0, false, false};
    m = lower(block, &no_conv, &n);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(nbindings(m), 8);
    rx_module_free(m);
    rx_lib_opts none = {RX_LIB_NONE, NULL, 0, false, false};
    m = lower(block, &none, &n);
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
    rx_lib_opts cl = {RX_LIB_AUTO, NULL, 0, true, false};
    m = lower(block, &cl, &n);
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
    rx_lib_opts cu = {RX_LIB_AUTO, NULL, 0, false, true}; /* cuda: cuBLAS has no conv */
    m = lower(block, &cu, &n);
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
    /* the pattern name is listed */
    bool listed = false;
    for (int i = 0; rx_lib_pattern_name(i); i++) listed |= !strcmp(rx_lib_pattern_name(i), "conv2d");
    ck_assert(listed);
}
END_TEST

/* Asserts `name` is rt.pool2d of x with params want[0..13). */
static void assert_pool(const rx_module *m, const char *name, const char *x, const int64_t want[13])
{
    const rx_node *c = bound(m, name);
    ck_assert_msg(c && c->kind == RX_N_CALL && c->call_kind == RX_CALL_LIB &&
                      !strcmp(c->u.call.lib, "rt.pool2d"),
                  "%s is not rt.pool2d", name);
    ck_assert_int_eq(c->nargs, 2);
    ck_assert_str_eq(c->args[0]->u.var.name, x);
    const rx_const *k = c->args[1]->u.konst;
    ck_assert_int_eq(c->args[1]->kind, RX_N_CONST);
    ck_assert_int_eq(k->shape[0], 13);
    for (int i = 0; i < 13; i++) {
        int64_t v;
        memcpy(&v, k->data + 8 * i, 8);
        ck_assert_msg(v == want[i], "%s params[%d] = %lld, want %lld", name, i, (long long)v,
                      (long long)want[i]);
    }
}

#define POOL(v, op, x, attrs)                                                                \
    "{\"var\": \"" v "\", \"value\": {\"op\": \"" op "\", \"args\": [\"" x "\"]"               \
    ", \"attrs\": {" attrs "}}}"

START_TEST(pools)
{
    static const char mod[] = MODULE(
        P("x", "[\"n\", 32, 56, 56]") "," P("s", "[1, 2, 4, 4]") "," P("d", "[\"n\", 8, \"h\", \"w\"]"),
        POOL("mx", "nn.max_pool2d", "x", "\"pool_size\": [3, 3], \"strides\": [2, 2], \"padding\": [1, 1, 1, 1]") ","
        POOL("av", "nn.avg_pool2d", "x", "\"pool_size\": [2, 3], \"strides\": [2, 1], \"padding\": [0, 1], "
                                         "\"dilation\": [1, 2], \"ceil_mode\": true, \"count_include_pad\": true") ","
        POOL("sm", "nn.max_pool2d", "s", "\"pool_size\": [2, 2]") ","
        POOL("ga", "nn.adaptive_avg_pool2d", "x", "\"output_size\": [1, 1]") ","
        POOL("a7", "nn.adaptive_avg_pool2d", "x", "\"output_size\": [7, 8]") ","
        POOL("a5", "nn.adaptive_avg_pool2d", "x", "\"output_size\": [5, 5]") ","
        POOL("gs", "nn.adaptive_avg_pool2d", "d", "\"output_size\": [1, 1]") ","
        POOL("ds", "nn.adaptive_avg_pool2d", "d", "\"output_size\": [2, 2]") ","
        POOL("pd", "nn.pad", "x", "\"pad_width\": [0, 0, 0, 0, 1, 2, 1, 1], \"pad_value\": 0.0") ","
        POOL("p1", "nn.pad", "x", "\"pad_width\": [0, 0, 0, 0, 1, 1, 1, 1], \"pad_value\": 1.0") ","
        POOL("ap", "nn.avg_pool2d", "pd", "\"pool_size\": [3, 3], \"strides\": [2, 2], "
                                          "\"padding\": [1, 0, 0, 0], \"count_include_pad\": true") ","
        POOL("ax", "nn.avg_pool2d", "pd", "\"pool_size\": [3, 3], \"strides\": [2, 2]") ","
        POOL("an", "nn.avg_pool2d", "pd", "\"pool_size\": [3, 3], \"strides\": [2, 2], \"padding\": [1, 1]") ","
        POOL("mp", "nn.max_pool2d", "pd", "\"pool_size\": [3, 3], \"strides\": [2, 2]") ","
        POOL("a1", "nn.avg_pool2d", "p1", "\"pool_size\": [3, 3], \"strides\": [2, 2], "
                                          "\"count_include_pad\": true"),
        "mx");
    int n;
    rx_module *m = lower(mod, NULL, &n);
    ck_assert_int_eq(n, 10);
    /* an avg pool counting its padding (or unpadded) over a zero pad of H, W: x read, the
       pad's amounts (top 1, bottom 2, left 1, right 1) added to its own padding (ap: top
       1), counted; not with uncounted padding (an), for a max pool (mp) or over a pad of
       1.0 (a1) */
    static const struct { const char *name, *x; int64_t p[13]; } padded[] = {
        {"ap", "x", {3, 3, 2, 2, 2, 1, 2, 1, 1, 1, 0, 0, 1}},
        {"ax", "x", {3, 3, 2, 2, 1, 1, 2, 1, 1, 1, 0, 0, 1}},
        {"an", "pd", {3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
        {"mp", "pd", {3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 0, 1, 0}},
        {"a1", "p1", {3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0, 1}}};
    for (int i = 0; i < 5; i++) assert_pool(m, padded[i].name, padded[i].x, padded[i].p);
    /* adaptive average pooling with equal windows: an avg pool of H / OH, W / OW */
    static const int64_t p_ga[13] = {56, 56, 56, 56, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    assert_pool(m, "ga", "x", p_ga);
    static const int64_t p_a7[13] = {8, 7, 8, 7, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    assert_pool(m, "a7", "x", p_a7);
    ck_assert_int_eq(bound(m, "a5")->call_kind, RX_CALL_OP); /* 56 / 5: windows differ */
    /* 1 x 1 on a symbolic h, w: the global form, pool size and strides 0 */
    static const int64_t p_gs[13] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    assert_pool(m, "gs", "d", p_gs);
    ck_assert_int_eq(bound(m, "ds")->call_kind, RX_CALL_OP); /* 2 x 2 of h, w: unknown windows */
    static const int64_t p_mx[13] = {3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 1, 0};
    assert_pool(m, "mx", "x", p_mx);
    static const int64_t p_av[13] = {2, 3, 2, 1, 0, 1, 0, 1, 1, 2, 1, 0, 1};
    assert_pool(m, "av", "x", p_av);
    ck_assert_int_eq(bound(m, "sm")->call_kind, RX_CALL_OP); /* 2*2*2*4 taps < 2^15 */
    rx_module_free(m);
    const char *const off[] = {"pool2d", NULL};
    rx_lib_opts no_pool = {RX_LIB_AUTO, off, 0, false, false};
    m = lower(mod, &no_pool, &n);
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
}
END_TEST

static Suite *conv_suite(void)
{
    Suite *s = suite_create("library_conv");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, basic_block);
    tcase_add_test(tc, formulations);
    tcase_add_test(tc, clamps);
    tcase_add_test(tc, gates);
    tcase_add_test(tc, leaky);
    tcase_add_test(tc, not_taken);
    tcase_add_test(tc, cost_and_options);
    tcase_add_test(tc, pools);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(conv_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
