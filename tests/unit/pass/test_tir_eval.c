/*
 * test_tir_eval.c — the loop-function interpreter (compiler/interp/tir_eval.c) against
 * expected values: legalized op kernels (elementwise, broadcast, reductions with init,
 * matmul, softmax, where) on fixed inputs against NumPy's results (computed once with
 * NumPy 1.24 and embedded below; exact where the arithmetic is exact in f32, else
 * within 2 ulp), and hand-written loop functions against hand-computed values: floor
 * and truncating integer division on negatives, casts (wrapping, truncation, f16 and
 * bf16 rounding), f16 arithmetic rounding, LET / IF / select with symbolic extents and
 * a scalar parameter, hoisted and guarded reduction init on an empty reduction, and
 * the failures (division by zero, stores into inputs, out-of-bounds loads, the step
 * budget, a shape mismatch). test_tir_eval_c.c compares with compiled kernels.
 */
#include "pass_test.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../../compiler/interp/tir_eval.h"
#include "../rx_check.h"
#include "relax/pass.h"

/* ---------------------------------------------------------------- helpers */

static rx_tev_buf buf(rx_dtype dt, int ndim, const int64_t *shape, void *data, bool ro)
{
    return (rx_tev_buf){data, dt, ndim, shape, ro};
}

/* A module of loop functions (relax-json with ' for "), read and deduced. */
static rx_module *tir_module(const char *funcs)
{
    rx_sb sb = {0};
    rx_sb_printf(&sb, "{'format':'relax-json','version':1,'functions':{%s}}", funcs);
    rx_module *m = load_quoted(rx_sb_str(&sb));
    rx_sb_free(&sb);
    return m;
}

static rx_func *fn(rx_module *m, const char *name)
{
    rx_func *f = rx_module_find(m, name);
    ck_assert_msg(f && f->kind == RX_F_TIR, "no loop function %s", name);
    return f;
}

/* Runs f; a failure fails the test with the interpreter's reason. */
static void run_ok(rx_func *f, rx_tev_buf *b, int nb, const int64_t *sc, int ns)
{
    rx_sb why = {0};
    bool ok = rx_tir_eval(f, b, nb, sc, ns, NULL, &why);
    ck_assert_msg(ok, "%s: %s", f->name, rx_sb_str(&why));
    rx_sb_free(&why);
}

/* Runs f, which must fail with a reason containing `want`. */
static void run_fails(rx_func *f, rx_tev_buf *b, int nb, const int64_t *sc, int ns,
                      rx_tev_limits *lim, const char *want)
{
    rx_sb why = {0};
    ck_assert_msg(!rx_tir_eval(f, b, nb, sc, ns, lim, &why), "%s ran", f->name);
    ck_assert_msg(strstr(rx_sb_str(&why), want), "%s: reason \"%s\" lacks \"%s\"", f->name,
                  rx_sb_str(&why), want);
    rx_sb_free(&why);
}

/* Within k ulp of f32 (exact when k is 0). */
static void expect_f32(const float *got, const float *want, int n, int k, const char *what)
{
    for (int i = 0; i < n; i++) {
        float tol = k ? (float)k * nextafterf(fabsf(want[i]), INFINITY) - (float)k * fabsf(want[i]) : 0;
        ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "%s[%d]: got %.9g, NumPy %.9g", what, i,
                      (double)got[i], (double)want[i]);
    }
}

#define F32T(...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'f32'}}"
#define PARAM(n, t) "{'name':'" n "','type':" t "}"

/* The module `main(params) { r = value }` (relax-json with ' for "), legalized; *call
 * is r's call_tir. */
static rx_module *legalize_one(const char *params, const char *value, rx_node **call)
{
    rx_sb js = {0};
    rx_sb_printf(&js, "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax',"
                      "'params':[%s],'body':{'blocks':[{'dataflow':true,'bindings':[{'var':'r',"
                      "'value':%s}]}],'result':'r'}}}}", params, value);
    rx_module *m = load_quoted(rx_sb_str(&js));
    rx_sb_free(&js);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_pass_legalize(m, &d) && rx_deduce_module(m, &d)), "%s: %s", value, diags_str(&d));
    rx_diags_free(&d);
    *call = rx_module_find(m, "main")->body->blocks[0]->bindings[0].value;
    ck_assert_int_eq((*call)->call_kind, RX_CALL_TIR);
    return m;
}

/* ---------------------------------------------------------------- legalized ops */


/* Inputs of the op cases (x: 2x3, y: 3, w: 3x4, c: bool 2x3). */
static float X23[] = {0.5f, -1.25f, 2.0f, 3.0f, -0.75f, 1.5f};
static float Y3[] = {1.0f, 2.0f, -0.5f};
static float W34[] = {0.5f, 1, -1, 2, 1.5f, -0.5f, 0.25f, 1, -2, 0.75f, 1, 0.5f};
static uint8_t C23[] = {1, 0, 1, 0, 0, 1};

typedef struct opcase {
    const char *name;    /* for messages */
    const char *params;  /* graph parameters (JSON) */
    const char *value;   /* the binding r (JSON) */
    int nout;            /* result elements (f32) */
    float want[8];       /* NumPy's result */
    int ulp;             /* tolerance */
} opcase;

static const opcase OPS[] = {
    {"exp", PARAM("x", F32T("2, 3")), "{'op':'exp','args':['x']}", 6,
     {1.64872122f, 0.286504775f, 7.38905573f, 20.085537f, 0.472366542f, 4.48168898f}, 2},
    {"add broadcast", PARAM("x", F32T("2, 3")) "," PARAM("y", F32T("3")),
     "{'op':'add','args':['x','y']}", 6, {1.5f, 0.75f, 1.5f, 4, 1.25f, 1}, 0},
    {"multiply broadcast", PARAM("x", F32T("2, 3")) "," PARAM("y", F32T("3")),
     "{'op':'multiply','args':['x','y']}", 6, {0.5f, -2.5f, -1, 3, -1.5f, -0.75f}, 0},
    {"tanh", PARAM("x", F32T("2, 3")), "{'op':'tanh','args':['x']}", 6,
     {0.462117195f, -0.848283648f, 0.964027584f, 0.995054781f, -0.635149002f, 0.905148208f}, 2},
    {"sigmoid", PARAM("x", F32T("2, 3")), "{'op':'sigmoid','args':['x']}", 6,
     {0.622459352f, 0.222700134f, 0.880797029f, 0.952574134f, 0.320821285f, 0.817574501f}, 2},
    {"sum", PARAM("x", F32T("2, 3")), "{'op':'sum','args':['x'],'attrs':{'axis':1}}", 2,
     {1.25f, 3.75f}, 0},
    {"max", PARAM("x", F32T("2, 3")), "{'op':'max','args':['x'],'attrs':{'axis':0}}", 3,
     {3, -0.75f, 2}, 0},
    {"matmul", PARAM("x", F32T("2, 3")) "," PARAM("w", F32T("3, 4")),
     "{'op':'matmul','args':['x','w']}", 8, {-5.625f, 2.625f, 1.1875f, 0.75f, -2.625f, 4.5f, -1.6875f, 6}, 0},
    {"softmax", PARAM("x", F32T("2, 3")), "{'op':'nn.softmax','args':['x']}", 6,
     {0.176820174f, 0.0307267401f, 0.79245311f, 0.802151144f, 0.0188647863f, 0.178984106f}, 2},
    {"where", PARAM("c", "{'tensor':{'shape':[2,3],'dtype':'bool'}}") "," PARAM("x", F32T("2, 3")) ","
     PARAM("y", F32T("3")), "{'op':'where','args':['c','x','y']}", 6, {0.5f, 2, 2, 1, 2, 1.5f}, 0},
};

/* The data and shape of graph parameter `name` of the op cases. */
static void *input(const char *name, rx_dtype *dt, int *ndim, const int64_t **shape)
{
    static const int64_t S23[] = {2, 3}, S3[] = {3}, S34[] = {3, 4};
    *dt = RX_DT_F32;
    if (!strcmp(name, "x")) { *ndim = 2; *shape = S23; return X23; }
    if (!strcmp(name, "y")) { *ndim = 1; *shape = S3; return Y3; }
    if (!strcmp(name, "w")) { *ndim = 2; *shape = S34; return W34; }
    ck_assert_str_eq(name, "c");
    *dt = RX_DT_BOOL;
    *ndim = 2;
    *shape = S23;
    return C23;
}

START_TEST(legalized_ops_match_numpy)
{
    for (int ci = 0; ci < RX_COUNTOF(OPS); ci++) {
        const opcase *oc = &OPS[ci];
        rx_node *call;
        rx_module *m = legalize_one(oc->params, oc->value, &call);
        rx_tev_buf b[8];
        int nb = 0;
        for (int a = 0; a < call->nargs; a++, nb++) {
            rx_dtype dt;
            int ndim;
            const int64_t *shape;
            void *data = input(call->args[a]->u.var.name, &dt, &ndim, &shape);
            b[nb] = buf(dt, ndim, shape, data, true);
        }
        const rx_sinfo *os = call->u.call.out;
        int64_t oshape[4];
        for (int k = 0; k < os->ndim; k++) ck_assert(rx_expr_is_const(os->dims[k], &oshape[k]));
        float out[8] = {0};
        b[nb++] = buf(RX_DT_F32, os->ndim, oshape, out, false);
        run_ok(call->u.call.callee->u.global.fn, b, nb, NULL, 0);
        expect_f32(out, oc->want, oc->nout, oc->ulp, oc->name);
        rx_module_free(m);
    }
}
END_TEST

/* NumPy's maximum, minimum and max propagate NaN from either side, as the kernels'
 * helpers do: np.maximum([nan, 1, 2], [1, nan, 3]) == [nan, nan, 3]. */
START_TEST(nan_propagates_like_numpy)
{
    static const int64_t S3[] = {3}, S23[] = {2, 3};
    float x[3] = {NAN, 1, 2}, y[3] = {1, NAN, 3}, out[3];
    const char *ops[2] = {"maximum", "minimum"};
    for (int k = 0; k < 2; k++) {
        rx_sb v = {0};
        rx_sb_printf(&v, "{'op':'%s','args':['x','y']}", ops[k]);
        rx_node *call;
        rx_module *m = legalize_one(PARAM("x", F32T("3")) "," PARAM("y", F32T("3")), rx_sb_str(&v), &call);
        rx_sb_free(&v);
        rx_tev_buf b[] = {buf(RX_DT_F32, 1, S3, x, true), buf(RX_DT_F32, 1, S3, y, true),
                          buf(RX_DT_F32, 1, S3, out, false)};
        run_ok(call->u.call.callee->u.global.fn, b, 3, NULL, 0);
        ck_assert_msg(isnan(out[0]) && isnan(out[1]), "%s: NaN lost", ops[k]);
        ck_assert(out[2] == (k == 0 ? 3 : 2));
        rx_module_free(m);
    }
    float z[6] = {1, NAN, 0, 5, 4, 3}, r[2];
    rx_node *call;
    rx_module *m = legalize_one(PARAM("x", F32T("2, 3")), "{'op':'max','args':['x'],'attrs':{'axis':1}}", &call);
    rx_tev_buf b[] = {buf(RX_DT_F32, 2, S23, z, true), buf(RX_DT_F32, 1, S23, r, false)};
    run_ok(call->u.call.callee->u.global.fn, b, 2, NULL, 0);
    ck_assert(isnan(r[0]) && r[1] == 5); /* np.max([[1, nan, 0], [5, 4, 3]], axis=1) */
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- integer semantics */

#define I32B(n, s) "{'name':'" n "','buffer':{'shape':[" s "],'dtype':'i32'}}"

START_TEST(integer_division_semantics)
{
    rx_module *m = tir_module(
        "'floor':{'kind':'tir','params':[" I32B("A", "9") "," I32B("B", "9") "," I32B("Q", "9") ","
        I32B("R", "9") "],'body':{'grid':['i'],'extents':[9],'body':["
        "{'store':'Q[i]','value':'A[i] // B[i]'},{'store':'R[i]','value':'A[i] % B[i]'}]}},"
        "'trunc':{'kind':'tir','params':[" I32B("A", "6") "," I32B("B", "6") "," I32B("T", "6")
        "],'body':{'grid':['i'],'extents':[6],'body':{'store':'T[i]','value':'A[i] // B[i]'}}}");
    /* the grammar has no integer "/" (C's truncating division): made here */
    rx_func *trunc = fn(m, "trunc");
    rx_stmt *st = trunc->tbody.items[0]->u.for_.body.items[0];
    if (st->kind == RX_S_BLOCK) st = st->u.block.body.items[0];
    ck_assert_int_eq(st->kind, RX_S_STORE);
    rx_expr *fd = st->u.store.value;
    st->u.store.value = rx_e_binary(m->arena, RX_E_DIV, fd->u.op.a, fd->u.op.b);
    static const int64_t S9[] = {9}, S8[] = {8}, S6[] = {6};
    /* Python's // and %; x // 0 == x % 0 == 0 and INT_MIN // -1 wraps (the kernels'
     * rx_floordiv_i64) */
    int32_t a[9] = {-7, 7, -7, 7, -8, 0, 5, INT32_MIN, 9}, b[9] = {2, 2, -2, -2, 3, 5, 0, -1, -1};
    int32_t q[9], r[9], t[8];
    rx_tev_buf fb[] = {buf(RX_DT_I32, 1, S9, a, true), buf(RX_DT_I32, 1, S9, b, true),
                       buf(RX_DT_I32, 1, S9, q, false), buf(RX_DT_I32, 1, S9, r, false)};
    run_ok(fn(m, "floor"), fb, 4, NULL, 0);
    const int32_t wq[9] = {-4, 3, 3, -4, -3, 0, 0, INT32_MIN, -9};
    const int32_t wr[9] = {1, 1, -1, -1, 1, 0, 0, 0, 0};
    for (int i = 0; i < 9; i++) {
        ck_assert_msg(q[i] == wq[i], "%d // %d: got %d, want %d", a[i], b[i], q[i], wq[i]);
        ck_assert_msg(r[i] == wr[i], "%d %% %d: got %d, want %d", a[i], b[i], r[i], wr[i]);
    }
    /* C's truncating / ... */
    const int32_t wt[8] = {-3, 3, 3, -3, -2, 0, 0, INT32_MIN};
    rx_tev_buf tb[] = {buf(RX_DT_I32, 1, S6, a, true), buf(RX_DT_I32, 1, S6, b, true),
                       buf(RX_DT_I32, 1, S6, t, false)};
    run_ok(trunc, tb, 3, NULL, 0);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(t[i], wt[i]);
    /* ... leaves x / 0 and INT_MIN / -1 undefined: no value */
    rx_tev_buf zb[] = {buf(RX_DT_I32, 1, S6, a + 2, true), buf(RX_DT_I32, 1, S6, b + 2, true),
                       buf(RX_DT_I32, 1, S6, t, false)};
    run_fails(trunc, zb, 3, NULL, 0, NULL, "division by zero");
    int32_t amin[6] = {INT32_MIN, 1, 1, 1, 1, 1}, bm1[6] = {-1, 1, 1, 1, 1, 1};
    rx_tev_buf ob[] = {buf(RX_DT_I32, 1, S6, amin, true), buf(RX_DT_I32, 1, S6, bm1, true),
                       buf(RX_DT_I32, 1, S6, t, false)};
    run_fails(trunc, ob, 3, NULL, 0, NULL, "division overflow");
    /* the divide op on integers (TVM's truncating Div, legalized through // and %) */
    rx_node *call;
    rx_module *dm = legalize_one(PARAM("a", "{'tensor':{'shape':[8],'dtype':'i32'}}") ","
                                 PARAM("b", "{'tensor':{'shape':[8],'dtype':'i32'}}"),
                                 "{'op':'divide','args':['a','b']}", &call);
    rx_tev_buf db[] = {buf(RX_DT_I32, 1, S8, a, true), buf(RX_DT_I32, 1, S8, b, true),
                       buf(RX_DT_I32, 1, S8, t, false)};
    run_ok(call->u.call.callee->u.global.fn, db, 3, NULL, 0);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(t[i], wt[i]);
    rx_module_free(dm);
    rx_module_free(m);
}
END_TEST

/* Fixed-width integer ops wrap as NumPy's do: np.abs(np.int8(-128)) == -128,
 * np.int8(100) + np.int8(100) == -56, np.uint8(3) - np.uint8(5) == 254,
 * np.int32(65536) * np.int32(65536) == 0, np.int16(-32768) // np.int16(-1) == -32768. */
START_TEST(integer_ops_wrap_like_numpy)
{
    static const struct {
        const char *dt, *op;
        int64_t x, y, want;
    } C[] = {{"i8", "abs", -128, 0, -128},      {"i8", "add", 100, 100, -56},
             {"u8", "subtract", 3, 5, 254},     {"i32", "multiply", 65536, 65536, 0},
             {"i16", "floor_divide", -32768, -1, -32768}, {"i64", "negative", INT64_MIN, 0, INT64_MIN},
             {"u16", "multiply", 300, 300, 24464}};
    static const int64_t S1[] = {1};
    for (int i = 0; i < RX_COUNTOF(C); i++) {
        rx_dtype dt;
        ck_assert(rx_dtype_parse(C[i].dt, &dt));
        bool unary = !strcmp(C[i].op, "abs") || !strcmp(C[i].op, "negative");
        rx_sb p = {0}, v = {0};
        rx_sb_printf(&p, "{'name':'x','type':{'tensor':{'shape':[1],'dtype':'%s'}}},"
                         "{'name':'y','type':{'tensor':{'shape':[1],'dtype':'%s'}}}", C[i].dt, C[i].dt);
        rx_sb_printf(&v, "{'op':'%s','args':['x'%s]}", C[i].op, unary ? "" : ",'y'");
        rx_node *call;
        rx_module *m = legalize_one(rx_sb_str(&p), rx_sb_str(&v), &call);
        uint8_t x[8], y[8], out[8] = {0};
        memcpy(x, &C[i].x, 8); /* little-endian: the low bytes are the narrow value */
        memcpy(y, &C[i].y, 8);
        rx_tev_buf b[] = {buf(dt, 1, S1, x, true), buf(dt, 1, S1, y, true), buf(dt, 1, S1, out, false)};
        if (unary) b[1] = b[2];
        run_ok(call->u.call.callee->u.global.fn, b, unary ? 2 : 3, NULL, 0);
        int64_t got = 0;
        size_t es = rx_tev_elem_size(dt);
        memcpy(&got, out, es);
        if (!rx_dtype_is_uint(dt) && es < 8 && (got >> (8 * es - 1)) & 1) got |= -(INT64_C(1) << (8 * es));
        ck_assert_msg(got == C[i].want, "%s %s: got %lld, want %lld", C[i].dt, C[i].op,
                      (long long)got, (long long)C[i].want);
        rx_sb_free(&p);
        rx_sb_free(&v);
        rx_module_free(m);
    }
}
END_TEST

/* ---------------------------------------------------------------- casts */

#define B6(n, dt) "{'name':'" n "','buffer':{'shape':[6],'dtype':'" dt "'}}"

START_TEST(casts_wrap_truncate_and_round)
{
    rx_module *m = tir_module(
        "'casts':{'kind':'tir','params':[" B6("X", "f32") "," B6("I", "i32") "," B6("O1", "i32") ","
        B6("O2", "i8") "," B6("O3", "f16") "," B6("O4", "bf16") "," B6("O5", "bool") "," B6("O6", "u8")
        "],'body':{'grid':['i'],'extents':[6],'body':["
        "{'store':'O1[i]','value':'i32(X[i])'},{'store':'O2[i]','value':'i8(I[i])'},"
        "{'store':'O3[i]','value':'f16(X[i])'},{'store':'O4[i]','value':'bf16(X[i])'},"
        "{'store':'O5[i]','value':'bool(X[i])'},{'store':'O6[i]','value':'u8(I[i]) + 10'}]}}");
    static const int64_t S6[] = {6};
    float x[6] = {-2.75f, 2.75f, 0.5f, 1.00048828125f, 65520.0f, -0.0f};
    int32_t in[6] = {300, -129, 5, 250, -1, 0}, o1[6];
    int8_t o2[6];
    uint16_t o3[6], o4[6];
    uint8_t o5[6], o6[6];
    rx_tev_buf b[] = {buf(RX_DT_F32, 1, S6, x, true),  buf(RX_DT_I32, 1, S6, in, true),
                      buf(RX_DT_I32, 1, S6, o1, false), buf(RX_DT_I8, 1, S6, o2, false),
                      buf(RX_DT_F16, 1, S6, o3, false), buf(RX_DT_BF16, 1, S6, o4, false),
                      buf(RX_DT_BOOL, 1, S6, o5, false), buf(RX_DT_U8, 1, S6, o6, false)};
    run_ok(fn(m, "casts"), b, 8, NULL, 0);
    const int32_t w1[6] = {-2, 2, 0, 1, 65520, 0};
    const int8_t w2[6] = {44, 127, 5, -6, -1, 0};
    /* NumPy's astype(float16); bf16 by round-to-nearest-even of the f32 bits; 1 + 2^-11
     * ties to 1.0 in f16 and 65520 overflows to inf */
    const uint16_t w3[6] = {0xc180, 0x4180, 0x3800, 0x3c00, 0x7c00, 0x8000};
    const uint16_t w4[6] = {0xc030, 0x4030, 0x3f00, 0x3f80, 0x4780, 0x8000};
    const uint8_t w5[6] = {1, 1, 1, 1, 1, 0}, w6[6] = {54, 137, 15, 4, 9, 10};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(o1[i], w1[i]);
        ck_assert_int_eq(o2[i], w2[i]);
        ck_assert_msg(o3[i] == w3[i], "f16(%g): got 0x%04x, want 0x%04x", (double)x[i], o3[i], w3[i]);
        ck_assert_msg(o4[i] == w4[i], "bf16(%g): got 0x%04x, want 0x%04x", (double)x[i], o4[i], w4[i]);
        ck_assert_int_eq(o5[i], w5[i]);
        ck_assert_int_eq(o6[i], w6[i]);
    }
    /* a float that does not fit the integer: undefined in C, no value */
    x[0] = 3e9f;
    run_fails(fn(m, "casts"), b, 8, NULL, 0, NULL, "out of range");
    rx_module_free(m);
    /* f64 rounds to f16 and bf16 once: 1 + 2^-11 + 2^-40 is above the midpoint of 1 and
     * 1 + 2^-10 (through f32 it would become the midpoint and round to 1) */
    m = tir_module("'c64':{'kind':'tir','params':[{'name':'D','buffer':{'shape':[2],'dtype':'f64'}},"
                   "{'name':'H','buffer':{'shape':[2],'dtype':'f16'}},"
                   "{'name':'W','buffer':{'shape':[2],'dtype':'bf16'}}],'body':{'grid':['i'],"
                   "'extents':[2],'body':[{'store':'H[i]','value':'f16(D[i])'},"
                   "{'store':'W[i]','value':'bf16(D[i])'}]}}");
    static const int64_t S2[] = {2};
    double dd[2] = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-8 + 0x1p-40};
    uint16_t h[2], w[2];
    rx_tev_buf cb[] = {buf(RX_DT_F64, 1, S2, dd, true), buf(RX_DT_F16, 1, S2, h, false),
                       buf(RX_DT_BF16, 1, S2, w, false)};
    run_ok(fn(m, "c64"), cb, 3, NULL, 0);
    ck_assert_uint_eq(h[0], 0x3c01); /* np.float16(1 + 2**-11 + 2**-40) */
    ck_assert_uint_eq(w[1], 0x3f81); /* 1 + 2^-7 */
    rx_module_free(m);
}
END_TEST

START_TEST(f16_arithmetic_rounds_each_operation)
{
    rx_module *m = tir_module(
        "'h':{'kind':'tir','params':[{'name':'A','buffer':{'shape':[3],'dtype':'f16'}},"
        "{'name':'B','buffer':{'shape':[3],'dtype':'f16'}},{'name':'C','buffer':{'shape':[3],'dtype':'f16'}}],"
        "'body':{'grid':['i'],'extents':[3],'body':{'store':'C[i]','value':'A[i] + B[i]'}}}");
    static const int64_t S3[] = {3};
    /* 1 + 2^-11 ties to 1; 2048 + 1 ties to 2048; 1 + 2^-10 is exact */
    uint16_t a[3] = {0x3c00, 0x6800, 0x3c00}, b[3] = {0x1000, 0x3c00, 0x1400}, c[3];
    rx_tev_buf bb[] = {buf(RX_DT_F16, 1, S3, a, true), buf(RX_DT_F16, 1, S3, b, true),
                       buf(RX_DT_F16, 1, S3, c, false)};
    run_ok(fn(m, "h"), bb, 3, NULL, 0);
    ck_assert_uint_eq(c[0], 0x3c00);
    ck_assert_uint_eq(c[1], 0x6800);
    ck_assert_uint_eq(c[2], 0x3c01);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- control flow */

START_TEST(let_if_select_with_symbolic_extents)
{
    rx_module *m = tir_module(
        "'f':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"
        "{'name':'B','buffer':{'shape':['n'],'dtype':'f32'}},"
        "{'name':'C','buffer':{'shape':[1],'dtype':'i64'}},{'name':'k','dtype':'i64'}],'body':["
        "{'grid':['i'],'extents':['n'],'body':{'let':'s','value':'A[i] * 2','body':["
        "{'if':'s > 3','then':[{'store':'B[i]','value':'s'}],"
        "'else':[{'store':'B[i]','value':'select(s < 0, -s, 0.5)'}]}]}},"
        "{'for':'j','extent':'k','body':{'store':'C[0]','value':'C[0] + j'}}]}");
    rx_func *f = fn(m, "f");
    static const int64_t S4[] = {4}, S2[] = {2}, S1[] = {1};
    float a[4] = {1, 2, -3, 0.25f}, b[4];
    int64_t c[1] = {100}, k = 5;
    rx_tev_buf bb[] = {buf(RX_DT_F32, 1, S4, a, true), buf(RX_DT_F32, 1, S4, b, false),
                       buf(RX_DT_I64, 1, S1, c, false)};
    run_ok(f, bb, 3, &k, 1);
    const float w[4] = {0.5f, 4, 6, 0.5f};
    expect_f32(b, w, 4, 0, "B (n = 4)");
    ck_assert_int_eq(c[0], 110); /* 100 + 0 + 1 + 2 + 3 + 4 */
    /* the same function at n = 2, k = 0 */
    float a2[2] = {5, -1}, b2[2];
    c[0] = 100;
    k = 0;
    rx_tev_buf b2b[] = {buf(RX_DT_F32, 1, S2, a2, true), buf(RX_DT_F32, 1, S2, b2, false),
                        buf(RX_DT_I64, 1, S1, c, false)};
    run_ok(f, b2b, 3, &k, 1);
    const float w2[2] = {10, 2};
    expect_f32(b2, w2, 2, 0, "B (n = 2)");
    ck_assert_int_eq(c[0], 100);
    /* a buffer whose extents disagree with the signature: A and B share n */
    rx_tev_buf bad[] = {buf(RX_DT_F32, 1, S4, a, true), buf(RX_DT_F32, 1, S2, b2, false),
                        buf(RX_DT_I64, 1, S1, c, false)};
    run_fails(f, bad, 3, &k, 1, NULL, "dim 0 is 4, given 2");
    rx_module_free(m);
}
END_TEST

START_TEST(reduction_init_hoisted_or_guarded)
{
    /* `hoisted`: the init runs before the k loop, so an empty sum is 0; `guarded`
     * (explicit iterator bound to k - 1, loop from 1): init only at vk == 0, so an
     * empty reduction leaves Y as it was, exactly as the generated C does */
    rx_module *m = tir_module(
        "'hoisted':{'kind':'tir','params':[{'name':'X','buffer':{'shape':[2,'m'],'dtype':'f32'}},"
        "{'name':'Y','buffer':{'shape':[2],'dtype':'f32'}}],'body':{'grid':['i','k'],'extents':[2,'m'],"
        "'body':{'block':'s','init':[{'store':'Y[i]','value':'0'}],"
        "'body':[{'store':'Y[i]','value':'Y[i] + X[i, k]'}]}}},"
        "'guarded':{'kind':'tir','params':[{'name':'X','buffer':{'shape':[2,'m'],'dtype':'f32'}},"
        "{'name':'Y','buffer':{'shape':[2],'dtype':'f32'}}],'body':{'for':'i','extent':2,'body':"
        "{'for':'k','min':1,'extent':'m','body':{'block':'s','iters':["
        "{'var':'vi','kind':'spatial','dom':2,'bind':'i'},{'var':'vk','kind':'reduce','dom':'m','bind':'k - 1'}],"
        "'init':[{'store':'Y[vi]','value':'0'}],'body':[{'store':'Y[vi]','value':'Y[vi] + X[vi, vk]'}]}}}}");
    static const int64_t S20[] = {2, 0}, S23[] = {2, 3}, S2[] = {2};
    float x[6] = {1, 2, 3, 4, 5, 6};
    const char *names[2] = {"hoisted", "guarded"};
    for (int h = 0; h < 2; h++) {
        float y[2] = {7, 7};
        rx_tev_buf e[] = {buf(RX_DT_F32, 2, S20, x, true), buf(RX_DT_F32, 1, S2, y, false)};
        run_ok(fn(m, names[h]), e, 2, NULL, 0);
        const float w0[2] = {0, 0}, w7[2] = {7, 7};
        expect_f32(y, h == 0 ? w0 : w7, 2, 0, names[h]);
        rx_tev_buf f[] = {buf(RX_DT_F32, 2, S23, x, true), buf(RX_DT_F32, 1, S2, y, false)};
        run_ok(fn(m, names[h]), f, 2, NULL, 0);
        const float ws[2] = {6, 15};
        expect_f32(y, ws, 2, 0, names[h]);
    }
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- failures */

START_TEST(undefined_steps_fail)
{
    rx_module *m = tir_module(
        "'shift':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'f32'}},"
        "{'name':'B','buffer':{'shape':['n'],'dtype':'f32'}}],"
        "'body':{'grid':['i'],'extents':['n'],'body':{'store':'B[i]','value':'A[i + 1]'}}},"
        "'inplace':{'kind':'tir','params':[{'name':'A','buffer':{'shape':[2],'dtype':'f32'}}],"
        "'body':{'grid':['i'],'extents':[2],'body':{'store':'A[i]','value':'A[i] * 2'}}}");
    static const int64_t S3[] = {3}, S2[] = {2};
    float a[3] = {1, 2, 3}, b[3];
    rx_tev_buf sb[] = {buf(RX_DT_F32, 1, S3, a, true), buf(RX_DT_F32, 1, S3, b, false)};
    run_fails(fn(m, "shift"), sb, 2, NULL, 0, NULL, "outside its 3 elements");
    rx_tev_buf ib[] = {buf(RX_DT_F32, 1, S2, a, true)};
    run_fails(fn(m, "inplace"), ib, 1, NULL, 0, NULL, "store into input buffer");
    ib[0].readonly = false; /* the same function on a writable buffer runs */
    run_ok(fn(m, "inplace"), ib, 1, NULL, 0);
    ck_assert(a[0] == 2 && a[1] == 4);
    /* literal extents: the estimate refuses a run known to be too long, spending
     * nothing; a symbolic extent: the run stops when the budget is spent */
    rx_tev_limits lim = {.max_steps = 5};
    run_fails(fn(m, "inplace"), ib, 1, NULL, 0, &lim, "over the step budget of 5");
    ck_assert_int_eq(lim.steps_used, 0);
    run_fails(fn(m, "shift"), sb, 2, NULL, 0, &lim, "step budget of 5 exhausted");
    ck_assert_int_eq(lim.steps_used, 6);
    run_fails(fn(m, "inplace"), ib, 1, NULL, 1, NULL, "given for 1 and 0 parameters");
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tir_eval");
    TCase *tc = tcase_create("tir_eval");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, legalized_ops_match_numpy);
    tcase_add_test(tc, nan_propagates_like_numpy);
    tcase_add_test(tc, integer_division_semantics);
    tcase_add_test(tc, integer_ops_wrap_like_numpy);
    tcase_add_test(tc, casts_wrap_truncate_and_round);
    tcase_add_test(tc, f16_arithmetic_rounds_each_operation);
    tcase_add_test(tc, let_if_select_with_symbolic_extents);
    tcase_add_test(tc, reduction_init_hoisted_or_guarded);
    tcase_add_test(tc, undefined_steps_fail);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
