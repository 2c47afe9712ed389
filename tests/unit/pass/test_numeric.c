/*
 * test_numeric.c — legalized kernels of the elementwise, matmul, reduction, softmax,
 * manipulation and creation ops against NumPy (numeric_harness.h runs them: one
 * compiled kernel per case, two assignments of n and m). test_numeric_nn.c has the
 * ops of the later rule groups.
 */
#include "numeric_harness.h"

static const ncase CASES[] = {
    /* unary */
    {XNM, OP1("exp", "x"), "np.exp(x)", R_ANY},
    {XNM, OP1("log", "x"), "np.log(x)", R_POS},
    {XNM, OP1("sqrt", "x"), "np.sqrt(x)", R_POS},
    {XNM, OP1("rsqrt", "x"), "1 / np.sqrt(x)", R_POS},
    {XNM, OP1("sigmoid", "x"), "1 / (1 + np.exp(-x))", R_ANY},
    {XNM, OP1("tanh", "x"), "np.tanh(x)", R_ANY},
    {XNM, OP1("sin", "x"), "np.sin(x)", R_ANY},
    {XNM, OP1("cos", "x"), "np.cos(x)", R_ANY},
    {XNM, OP1("erf", "x"), "np.vectorize(math.erf)(x)", R_ANY},
    {XNM, OP1("abs", "x"), "np.abs(x)", R_ANY},
    {XNM, OP1("negative", "x"), "-x", R_ANY},
    {XNM, OP1("floor", "x"), "np.floor(x)", R_ANY},
    {XNM, OP1("ceil", "x"), "np.ceil(x)", R_ANY},
    {XNM, OP1("round", "x"), "np.round(x)", R_ANY},
    {XNM, OP1("sign", "x"), "np.sign(x)", R_ANY},
    {XNM, OP1("square", "x"), "x * x", R_ANY},
    {XNM, OP1("nn.relu", "x"), "np.maximum(x, 0)", R_ANY},
    {XNM, OP1("nn.gelu", "x"), "0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))", R_ANY},
    {XNM, OP1("nn.gelu_tanh", "x"),
     "0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))", R_ANY},
    {XNM, OP1("nn.silu", "x"), "x / (1 + np.exp(-x))", R_ANY},
    {XNM, OP1A("clip", "x", "{\"min\": -0.5, \"max\": 1}"), "np.clip(x, -0.5, 1)", R_ANY},
    {P("x", TS("bool", "\"n\"")), OP1("logical_not", "x"), "~x", R_ANY},
    {P("x", TS("i32", "\"n\", 3")), OP1("abs", "x"), "np.abs(x)", R_INT},
    {XNM, OP1A("astype", "x", "{\"dtype\": \"i32\"}"), "x.astype(np.int32)", R_ANY},
    {P("x", TS("i32", "\"n\"")), OP1A("astype", "x", "{\"dtype\": \"f64\"}"), "x.astype(np.float64)", R_INT},
    {XNM, OP1A("astype", "x", "{\"dtype\": \"bool\"}"), "x.astype(bool)", R_INT},
    /* binary, broadcasting */
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("add", "x", "y"), "x + y", R_ANY},
    {XNM "," P("z", TS("f32", "\"n\", 1")), OP2("subtract", "x", "z"), "x - z", R_ANY},
    {P("z", TS("f32", "\"n\", 1")) "," P("y", TS("f32", "\"m\"")), OP2("multiply", "z", "y"), "z * y", R_ANY},
    {XNM "," P("s", TS("f32")), OP2("divide", "x", "s"), "x / s", R_POS},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("floor_divide", "x", "y"), "np.floor(x / y)", R_POS},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("floor_divide", "a", "b"), "a // b", R_NZINT},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("divide", "a", "b"),
     "np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))", R_NZINT},
    {XNM "," P("y", TS("f32", "\"n\", \"m\"")), OP2("power", "x", "y"), "x ** y", R_POS},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("maximum", "x", "y"), "np.maximum(x, y)", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("minimum", "x", "y"), "np.minimum(x, y)", R_ANY},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("equal", "a", "b"), "a == b", R_INT},
    {P("a", TS("i32", "\"n\", 4")) "," P("b", TS("i32", "4")), OP2("not_equal", "a", "b"), "a != b", R_INT},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("less", "x", "y"), "x < y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("less_equal", "x", "y"), "x <= y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("greater", "x", "y"), "x > y", R_ANY},
    {XNM "," P("y", TS("f32", "\"m\"")), OP2("greater_equal", "x", "y"), "x >= y", R_ANY},
    {P("p", TS("bool", "\"n\", \"m\"")) "," P("q", TS("bool", "\"m\"")), OP2("logical_and", "p", "q"), "p & q", R_ANY},
    {P("p", TS("bool", "\"n\", \"m\"")) "," P("q", TS("bool", "\"m\"")), OP2("logical_or", "p", "q"), "p | q", R_ANY},
    {P("c", TS("bool", "\"n\", \"m\"")) "," XNM "," P("y", TS("f32", "\"m\"")),
     "{\"op\": \"where\", \"args\": [\"c\", \"x\", \"y\"]}", "np.where(c, x, y)", R_ANY},
    /* expressions as dims: n is a tir_var of the kernel */
    {P("x", TS("f32", "\"n * 2\"")) "," P("y", TS("f32", "\"n * 2\"")) ","
     "{\"name\": \"s\", \"type\": {\"shape\": {\"values\": [\"n\"]}}}",
     OP2("add", "x", "y"), "x + y", R_ANY},
    /* matmul */
    {P("a", TS("f32", "\"n\", 8")) "," P("b", TS("f32", "8, \"m\"")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("a", TS("f32", "2, \"n\", 8")) "," P("b", TS("f32", "8, 3")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("a", TS("f32", "2, 1, \"n\", 8")) "," P("b", TS("f32", "3, 8, \"m\"")), OP2("matmul", "a", "b"), "a @ b", R_ANY},
    {P("v", TS("f32", "8")) "," P("b", TS("f32", "8, \"m\"")), OP2("matmul", "v", "b"), "v @ b", R_ANY},
    {P("a", TS("f32", "\"n\", 8")) "," P("v", TS("f32", "8")), OP2("matmul", "a", "v"), "a @ v", R_ANY},
    /* reductions */
    {XNM, OP1A("sum", "x", "{\"axis\": 1}"), "np.sum(x, axis=1)", R_ANY},
    {XNM, OP1("sum", "x"), "np.sum(x)", R_ANY},
    {XNM, OP1A("mean", "x", "{\"axis\": 0, \"keepdims\": true}"), "np.mean(x, axis=0, keepdims=True)", R_ANY},
    {XNM, OP1A("max", "x", "{\"axis\": [0, 1]}"), "np.max(x)", R_ANY},
    {XNM, OP1A("min", "x", "{\"axis\": -1, \"keepdims\": true}"), "np.min(x, axis=-1, keepdims=True)", R_ANY},
    {XNM, OP1A("prod", "x", "{\"axis\": 0}"), "np.prod(x, axis=0)", R_UNIT},
    {XNM, OP1A("argmax", "x", "{\"axis\": 1}"), "np.argmax(x, axis=1)", R_ANY},
    {XNM, OP1("argmin", "x"), "np.argmin(x)", R_ANY},
    {P("x", TS("i32", "\"n\", 3")), OP1A("max", "x", "{\"axis\": 1}"), "np.max(x, axis=1)", R_INT},
    /* softmax */
    {XNM, OP1("nn.softmax", "x"), "np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)", R_ANY},
    {XNM, OP1A("nn.softmax", "x", "{\"axis\": 0}"), "np.exp(x - x.max(0, keepdims=True)) / np.exp(x - x.max(0, keepdims=True)).sum(0, keepdims=True)", R_ANY},
    {XNM, OP1("nn.log_softmax", "x"), "x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))", R_ANY},
    /* manipulation */
    {P("x", TS("f32", "\"n\", 4")), "{\"op\": \"reshape\", \"args\": [\"x\", {\"shape\": [\"n * 2\", 2]}]}",
     "x.reshape(-1, 2)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), OP1("flatten", "x"), "x.reshape(-1)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), "{\"op\": \"reshape\", \"args\": [\"x\", {\"shape\": [3, \"m\", \"n\"]}]}",
     "x.reshape(3, x.shape[1], x.shape[0])", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")), OP1A("permute_dims", "x", "{\"axes\": [2, 0, 1]}"),
     "np.transpose(x, (2, 0, 1))", R_ANY},
    {XNM, OP1("permute_dims", "x"), "x.T", R_ANY},
    {XNM, OP1A("expand_dims", "x", "{\"axis\": [0, 3]}"), "x[None, :, :, None]", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")), OP1A("squeeze", "x", "{\"axis\": [1]}"), "x[:, 0, :]", R_ANY},
    {P("x", TS("f32", "1, \"m\"")) "," P("y", TS("f32", "\"n\"")), "{\"op\": \"broadcast_to\", \"args\": [\"x\", {\"shape\": [\"n\", \"m\"]}]}",
     "np.broadcast_to(x, (N, x.shape[1]))", R_ANY},
    /* creation */
    {XNM, "{\"op\": \"zeros\", \"args\": [{\"shape\": [\"n\", 3]}], \"attrs\": {\"dtype\": \"f32\"}}",
     "np.zeros((N, 3))", R_ANY},
    {XNM, "{\"op\": \"ones\", \"args\": [{\"shape\": [\"m\"]}], \"attrs\": {\"dtype\": \"i32\"}}",
     "np.ones((M,), dtype=np.int32)", R_ANY},
    {XNM, "{\"op\": \"full\", \"args\": [{\"shape\": [\"n\", 2]}, {\"const\": 2.5, \"dtype\": \"f32\"}]}",
     "np.full((N, 2), 2.5)", R_ANY},
    {XNM, OP1("zeros_like", "x"), "np.zeros_like(x)", R_ANY},
    {XNM, OP1("ones_like", "x"), "np.ones_like(x)", R_ANY},
    {XNM, "{\"op\": \"full_like\", \"args\": [\"x\", {\"const\": -1.5, \"dtype\": \"f32\"}]}",
     "np.full_like(x, -1.5)", R_ANY},
};

START_TEST(legalized_kernels_match_numpy)
{
    run_numeric(CASES, RX_COUNTOF(CASES), NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("legalize_numeric");
    TCase *tc = tcase_create("numeric");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, legalized_kernels_match_numpy);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
