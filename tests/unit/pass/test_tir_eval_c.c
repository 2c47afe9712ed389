/*
 * test_tir_eval_c.c — the loop-function interpreter (compiler/interp/tir_eval.c) against
 * the compiled C kernels of the same functions, byte for byte: that is the promise
 * constant folding relies on (a folded constant holds what the kernel would write).
 *
 * One module holds a graph function per op case (static shapes; every rule group,
 * dtypes bool, i8, u8, i16, i32, i64, f16, bf16, f32, f64) and hand-written loop
 * functions for what legalization never emits (shifts, bitwise operators, narrow and
 * unsigned wrapping, bool arithmetic, integer abs, LET / IF, explicit iterators, empty
 * reductions with hoisted and guarded init, symbolic extents and f16 / bf16 / f64
 * casts of every kind). The module is legalized, every loop function is compiled once
 * (rx_codegen_c + rx_cc_build, as relaxc builds kernels) and loaded; each function
 * then runs twice on the same pseudo-random bytes in every buffer — once as the
 * kernel, once in the interpreter — and every buffer must come out identical.
 * Inputs avoid what C leaves undefined (NaN payloads, out-of-range conversions); the
 * interpreter must accept every case.
 */
#include "pass_test.h"
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../compiler/interp/tir_eval.h"
#include "../rx_check.h"
#include "relax/codegen.h"
#include "relax/pass.h"

typedef int32_t (*kernel_fn)(void *const *data, const int64_t *ivars);

enum { R_ANY, R_POS, R_SMALL, R_UNIT, R_NAN }; /* input ranges (see fill) */

typedef struct xcase {
    const char *params; /* graph parameters (JSON list body); NULL: value is a loop function */
    const char *value;  /* op call JSON, or `"name": {loop function}` */
    int range;
    int64_t nval;       /* value of every symbolic variable of a loop function */
} xcase;

#define TS(dt, ...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'" dt "'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define X(dt) P("x", TS(dt, "3, 4"))
#define XY(dt) X(dt) "," P("y", TS(dt, "4"))
#define OP1(op) "{'op':'" op "','args':['x']}"
#define OP1A(op, attrs) "{'op':'" op "','args':['x'],'attrs':" attrs "}"
#define OP2(op) "{'op':'" op "','args':['x','y']}"
#define BUF(name, dt, ...) "{'name':'" name "','buffer':{'shape':[" __VA_ARGS__ "],'dtype':'" dt "'}}"

static const xcase CASES[] = {
    /* unary, f32 */
    {X("f32"), OP1("exp"), R_ANY, 0}, {X("f32"), OP1("log"), R_POS, 0},
    {X("f32"), OP1("sqrt"), R_POS, 0}, {X("f32"), OP1("rsqrt"), R_POS, 0},
    {X("f32"), OP1("tanh"), R_ANY, 0}, {X("f32"), OP1("sigmoid"), R_ANY, 0},
    {X("f32"), OP1("erf"), R_ANY, 0}, {X("f32"), OP1("sin"), R_ANY, 0},
    {X("f32"), OP1("cos"), R_ANY, 0}, {X("f32"), OP1("abs"), R_ANY, 0},
    {X("f32"), OP1("floor"), R_ANY, 0}, {X("f32"), OP1("ceil"), R_ANY, 0},
    {X("f32"), OP1("round"), R_ANY, 0}, {X("f32"), OP1("sign"), R_ANY, 0},
    {X("f32"), OP1("square"), R_ANY, 0}, {X("f32"), OP1("nn.relu"), R_ANY, 0},
    {X("f32"), OP1("nn.gelu"), R_ANY, 0}, {X("f32"), OP1("nn.gelu_tanh"), R_ANY, 0},
    {X("f32"), OP1("nn.silu"), R_ANY, 0}, {X("f32"), OP1("negative"), R_ANY, 0},
    {X("f32"), OP1A("clip", "{'min':-0.5,'max':1}"), R_ANY, 0},
    /* unary, other floats */
    {X("f16"), OP1("exp"), R_ANY, 0}, {X("f16"), OP1("sqrt"), R_POS, 0},
    {X("f16"), OP1("nn.gelu"), R_ANY, 0}, {X("f16"), OP1("sigmoid"), R_ANY, 0},
    {X("bf16"), OP1("exp"), R_ANY, 0}, {X("bf16"), OP1("tanh"), R_ANY, 0},
    {X("bf16"), OP1("nn.silu"), R_ANY, 0}, {X("f64"), OP1("exp"), R_ANY, 0},
    {X("f64"), OP1("log"), R_POS, 0}, {X("f64"), OP1("nn.gelu_tanh"), R_ANY, 0},
    /* unary, integers and bool */
    {X("i32"), OP1("abs"), R_ANY, 0}, {X("i8"), OP1("negative"), R_ANY, 0},
    {X("i16"), OP1("square"), R_ANY, 0}, {X("bool"), OP1("logical_not"), R_ANY, 0},
    {X("i64"), OP1("sign"), R_ANY, 0},
    /* binary */
    {XY("f32"), OP2("add"), R_ANY, 0}, {XY("f32"), OP2("subtract"), R_ANY, 0},
    {XY("f32"), OP2("divide"), R_ANY, 0}, {XY("f32"), OP2("floor_divide"), R_POS, 0},
    {XY("f32"), OP2("power"), R_POS, 0}, {XY("f32"), OP2("maximum"), R_ANY, 0},
    {XY("f32"), OP2("minimum"), R_ANY, 0}, {XY("f16"), OP2("add"), R_ANY, 0},
    {XY("f32"), OP2("maximum"), R_NAN, 0}, {XY("f16"), OP2("minimum"), R_NAN, 0},
    {XY("f64"), OP2("less_equal"), R_NAN, 0}, {X("f32"), OP1A("max", "{'axis':1}"), R_NAN, 0},
    {X("bf16"), OP1A("argmax", "{'axis':0}"), R_NAN, 0}, {X("f32"), OP1("nn.relu"), R_NAN, 0},
    {XY("f16"), OP2("divide"), R_ANY, 0}, {XY("f16"), OP2("floor_divide"), R_POS, 0},
    {XY("bf16"), OP2("multiply"), R_ANY, 0}, {XY("f64"), OP2("power"), R_POS, 0},
    {XY("i32"), OP2("multiply"), R_ANY, 0}, {XY("i32"), OP2("floor_divide"), R_ANY, 0},
    {XY("i32"), OP2("divide"), R_ANY, 0}, {XY("i64"), OP2("subtract"), R_ANY, 0},
    {XY("i8"), OP2("add"), R_ANY, 0}, {XY("i8"), OP2("multiply"), R_ANY, 0},
    {XY("i8"), OP2("floor_divide"), R_ANY, 0}, {XY("u8"), OP2("subtract"), R_ANY, 0},
    {XY("u8"), OP2("floor_divide"), R_ANY, 0}, {XY("i16"), OP2("maximum"), R_ANY, 0},
    {XY("f32"), OP2("less"), R_ANY, 0}, {XY("f16"), OP2("greater_equal"), R_ANY, 0},
    {XY("i32"), OP2("not_equal"), R_SMALL, 0}, {XY("bool"), OP2("logical_or"), R_ANY, 0},
    {P("c", TS("bool", "3, 4")) "," XY("f32"), "{'op':'where','args':['c','x','y']}", R_ANY, 0},
    /* casts */
    {X("f32"), OP1A("astype", "{'dtype':'i32'}"), R_ANY, 0},
    {X("f32"), OP1A("astype", "{'dtype':'f16'}"), R_ANY, 0},
    {X("f32"), OP1A("astype", "{'dtype':'bf16'}"), R_ANY, 0},
    {X("f64"), OP1A("astype", "{'dtype':'f16'}"), R_ANY, 0},
    {X("f64"), OP1A("astype", "{'dtype':'bf16'}"), R_ANY, 0},
    {X("i32"), OP1A("astype", "{'dtype':'f16'}"), R_SMALL, 0},
    {X("i64"), OP1A("astype", "{'dtype':'bf16'}"), R_ANY, 0},
    {X("f16"), OP1A("astype", "{'dtype':'f32'}"), R_ANY, 0},
    {X("bf16"), OP1A("astype", "{'dtype':'f16'}"), R_ANY, 0},
    {X("i32"), OP1A("astype", "{'dtype':'i8'}"), R_ANY, 0},
    {X("i8"), OP1A("astype", "{'dtype':'u16'}"), R_ANY, 0},
    {X("f32"), OP1A("astype", "{'dtype':'bool'}"), R_SMALL, 0},
    {X("bool"), OP1A("astype", "{'dtype':'f32'}"), R_ANY, 0},
    {X("f32"), OP1A("astype", "{'dtype':'u8'}"), R_POS, 0},
    {X("u32"), OP1A("astype", "{'dtype':'f32'}"), R_ANY, 0},
    /* reductions, softmax, norms */
    {X("f32"), OP1A("sum", "{'axis':1}"), R_ANY, 0}, {X("f32"), OP1("sum"), R_ANY, 0},
    {X("f16"), OP1A("sum", "{'axis':0}"), R_ANY, 0}, {X("bf16"), OP1A("mean", "{'axis':1}"), R_ANY, 0},
    {X("f32"), OP1A("mean", "{'axis':0,'keepdims':true}"), R_ANY, 0},
    {X("f32"), OP1A("max", "{'axis':1}"), R_ANY, 0}, {X("f32"), OP1A("min", "{'axis':0}"), R_ANY, 0},
    {X("f32"), OP1A("prod", "{'axis':1}"), R_UNIT, 0}, {X("i32"), OP1A("sum", "{'axis':1}"), R_ANY, 0},
    {X("f32"), OP1A("argmax", "{'axis':1}"), R_ANY, 0}, {X("f16"), OP1("argmin"), R_ANY, 0},
    {X("f32"), OP1A("variance", "{'axis':1}"), R_ANY, 0},
    {X("f32"), OP1("nn.softmax"), R_ANY, 0}, {X("f16"), OP1A("nn.softmax", "{'axis':0}"), R_ANY, 0},
    {X("f32"), OP1("nn.log_softmax"), R_ANY, 0},
    {X("f32") "," P("g", TS("f32", "4")) "," P("b", TS("f32", "4")),
     "{'op':'nn.layer_norm','args':['x','g','b'],'attrs':{'axes':[-1]}}", R_ANY, 0},
    {X("f16") "," P("g", TS("f16", "4")), "{'op':'nn.rms_norm','args':['x','g']}", R_ANY, 0},
    {P("x", TS("f32", "2, 3, 2, 2")) "," P("g", TS("f32", "3")) "," P("b", TS("f32", "3")) ","
     P("mu", TS("f32", "3")) "," P("v", TS("f32", "3")),
     "{'op':'nn.batch_norm','args':['x','g','b','mu','v']}", R_POS, 0},
    /* linear algebra, convolution, pooling */
    {P("x", TS("f32", "3, 5")) "," P("w", TS("f32", "5, 4")), "{'op':'matmul','args':['x','w']}", R_ANY, 0},
    {P("x", TS("f16", "2, 3, 5")) "," P("w", TS("f16", "5, 4")), "{'op':'matmul','args':['x','w']}", R_ANY, 0},
    {P("x", TS("i8", "3, 5")) "," P("w", TS("i8", "5, 2")),
     "{'op':'matmul','args':['x','w'],'attrs':{'out_dtype':'i32'}}", R_ANY, 0},
    {P("x", TS("f32", "1, 2, 5, 5")) "," P("w", TS("f32", "3, 2, 3, 3")),
     "{'op':'nn.conv2d','args':['x','w'],'attrs':{'padding':[1,1],'strides':[2,2]}}", R_ANY, 0},
    {P("x", TS("f32", "1, 2, 5, 5")), OP1A("nn.max_pool2d", "{'pool_size':[2,2],'padding':[1,1]}"), R_ANY, 0},
    {P("x", TS("f32", "1, 2, 5, 5")), OP1A("nn.avg_pool2d", "{'pool_size':[3,3],'padding':[1,1]}"), R_ANY, 0},
    {P("x", TS("f32", "1, 2, 5, 4")), OP1A("nn.adaptive_avg_pool2d", "{'output_size':[2,3]}"), R_ANY, 0},
    /* manipulation and indexing */
    {X("f32"), OP1A("permute_dims", "{'axes':[1,0]}"), R_ANY, 0},
    {X("f16"), "{'op':'reshape','args':['x',{'shape':[2,6]}]}", R_ANY, 0},
    {X("f32") "," P("y", TS("f32", "2, 4")), "{'op':'concat','args':[{'tuple':['x','y']}]}", R_ANY, 0},
    {X("f32"), OP1A("split", "{'indices_or_sections':[1,3],'axis':1}"), R_ANY, 0},
    {X("f32"), OP1A("strided_slice", "{'axes':[1],'begin':[3],'end':[0],'strides':[-2]}"), R_ANY, 0},
    {X("f32") "," P("i", TS("i64", "5")), "{'op':'take','args':['x','i'],'attrs':{'axis':1}}", R_SMALL, 0},
    {X("i32"), OP1A("repeat", "{'repeats':2,'axis':0}"), R_ANY, 0},
    {X("f32"), OP1A("tile", "{'repeats':[2,1]}"), R_ANY, 0},
    {X("f32"), OP1A("tril", "{'k':1}"), R_ANY, 0},
    {X("u8"), OP1A("triu", "{'k':-1}"), R_ANY, 0},
    {P("x", TS("f32", "4")), "{'op':'broadcast_to','args':['x',{'shape':[3,4]}]}", R_ANY, 0},
    {X("f32"), "{'op':'full_like','args':['x',{'const':-1.5,'dtype':'f32'}]}", R_ANY, 0},
    {X("f32"), "{'op':'arange','args':[],'attrs':{'start':2,'end':11,'step':3,'dtype':'f32'}}", R_ANY, 0},
    /* hand-written: integer operators C-style, narrow and unsigned wrapping, bool ints */
    {NULL, "'h_int':{'kind':'tir','params':[" BUF("A", "i32", "8") "," BUF("B", "i32", "8") ","
     BUF("C", "i8", "8") "," BUF("D", "u8", "8") "," BUF("E", "u16", "8") "," BUF("G", "bool", "8") ","
     BUF("O", "i32", "8") "," BUF("P", "i8", "8") "," BUF("Q", "u8", "8") "," BUF("R", "u32", "8") ","
     BUF("S", "bool", "8") "," BUF("T", "i64", "8") "],'body':{'grid':['i'],'extents':[8],'body':["
     "{'store':'O[i]','value':'((A[i] << (B[i] & 7)) ^ (A[i] >> 3)) | (~B[i] & 255)'},"
     "{'store':'P[i]','value':'C[i] * C[i] + (C[i] << 2) - (-C[i]) + abs(C[i])'},"
     "{'store':'Q[i]','value':'D[i] * D[i] - (D[i] >> 1) + ~D[i] + u8(E[i])'},"
     "{'store':'R[i]','value':'u32(A[i]) * u32(B[i]) + u32(E[i] * E[i]) - u32(D[i] % (D[i] | 1))'},"
     "{'store':'S[i]','value':'(G[i] && A[i] > B[i]) || !G[i]'},"
     "{'store':'T[i]','value':'i64(A[i]) * i64(B[i]) // (i64(C[i]) | 1) + min(i64(D[i]), 100) "
     "+ select(G[i], i64(A[i]) % 7, -i64(B[i]) % 5) + (i64(A[i]) * i64(B[i]) >> 9) "
     "+ i64(A[i]) // 12 - i64(B[i]) % 12 + i64(A[i] // 12) + i64(B[i] % 3)'}]}}", R_ANY, 0},
    /* hand-written: casts between float widths and to integers, f16 and bf16 arithmetic */
    {NULL, "'h_float':{'kind':'tir','params':[" BUF("A", "f32", "8") "," BUF("B", "f64", "8") ","
     BUF("H", "f16", "8") "," BUF("W", "bf16", "8") "," BUF("O", "f16", "8") "," BUF("P", "bf16", "8") ","
     BUF("Q", "f64", "8") "," BUF("R", "i16", "8") "," BUF("S", "f32", "8") "],'body':{'grid':['i'],"
     "'extents':[8],'body':["
     "{'store':'O[i]','value':'H[i] * f16(A[i]) + f16(B[i]) - f16(W[i]) / f16(3)'},"
     "{'store':'P[i]','value':'W[i] * bf16(B[i]) + bf16(H[i]) + bf16(i32(A[i] * 100))'},"
     "{'store':'Q[i]','value':'f64(H[i]) + f64(W[i]) * B[i] + f64(A[i]) / 7 + f64(i64(B[i] * 1000))'},"
     "{'store':'R[i]','value':'i16(A[i] * 1000) + i16(H[i]) * i16(3)'},"
     "{'store':'S[i]','value':'max(A[i], f32(H[i])) + min(f32(W[i]), f32(B[i])) + pow(abs(A[i]), 0.5) + floor(A[i] * 3)'}"
     "]}}", R_ANY, 0},
    /* hand-written: LET, IF, select, explicit iterators, symbolic extents (n = 3) */
    {NULL, "'h_ctrl':{'kind':'tir','params':[" BUF("A", "f32", "'n', 4") "," BUF("Y", "f32", "'n'") ","
     BUF("Z", "f32", "4") "],'body':["
     "{'grid':['i','k'],'extents':['n',4],'body':{'block':'r','init':[{'store':'Y[i]','value':'1'}],"
     "'body':[{'let':'v','value':'A[i, k] * 2','body':[{'if':'v > 0','then':[{'store':'Y[i]','value':'Y[i] + v'}],"
     "'else':[{'store':'Y[i]','value':'Y[i] * select(v < -1, 0.5, 2)'}]}]}]}},"
     "{'for':'j','extent':4,'body':{'for':'q','min':2,'extent':'n','body':{'block':'c','iters':["
     "{'var':'vj','kind':'spatial','dom':4,'bind':'j'},{'var':'vq','kind':'reduce','dom':'n','bind':'q - 2'}],"
     "'init':[{'store':'Z[vj]','value':'-1'}],'body':[{'store':'Z[vj]','value':'max(Z[vj], A[vq, vj])'}]}}}]}",
     R_ANY, 3},
    /* the same shapes with n = 0: hoisted init writes Y (empty), the guarded one leaves Z */
    {NULL, "'h_empty':{'kind':'tir','params':[" BUF("A", "f32", "4, 'n'") "," BUF("Y", "f32", "4") ","
     BUF("Z", "f32", "4") "],'body':["
     "{'grid':['i','k'],'extents':[4,'n'],'body':{'block':'s','init':[{'store':'Y[i]','value':'0'}],"
     "'body':[{'store':'Y[i]','value':'Y[i] + A[i, k]'}]}},"
     "{'for':'i','extent':4,'body':{'for':'k','min':1,'extent':'n','body':{'block':'t','iters':["
     "{'var':'vi','kind':'spatial','dom':4,'bind':'i'},{'var':'vk','kind':'reduce','dom':'n','bind':'k - 1'}],"
     "'init':[{'store':'Z[vi]','value':'0'}],'body':[{'store':'Z[vi]','value':'Z[vi] + A[vi, vk]'}]}}}]}",
     R_ANY, 0},
};

/* ---------------------------------------------------------------- inputs */

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Fills n elements of dt: floats in [-3, 3] (R_POS [0.25, 3.25], R_UNIT [0.5, 1.5],
 * R_SMALL integers -4..4) rounded to dt, never NaN but under R_NAN (a quarter of the
 * elements are the default quiet NaN; kernels copy it, never compute on it in these
 * cases, so its payload is defined); integers over their whole range
 * (R_POS 1..100, R_SMALL 0..3); bools 0/1. */
static void fill(uint8_t *p, rx_dtype dt, int64_t n, int range, uint64_t *seed)
{
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(rnd(seed) % 1000003) / 1000003.0;
        double v = range == R_POS ? 0.25 + 3 * u : range == R_UNIT ? 0.5 + u
                 : range == R_SMALL ? (double)(rnd(seed) % 9) - 4 : -3 + 6 * u;
        if (range == R_NAN && rnd(seed) % 4 == 0) v = NAN;
        uint64_t r = rnd(seed) << 40 ^ rnd(seed) << 20 ^ rnd(seed); /* 64 random bits */
        if (range == R_POS) r = 1 + r % 100;
        if (range == R_SMALL) r %= 4;
        switch (dt) {
        case RX_DT_BOOL: p[i] = r & 1; break;
        case RX_DT_I8: case RX_DT_U8: p[i] = (uint8_t)r; break;
        case RX_DT_I16: case RX_DT_U16: { uint16_t x = (uint16_t)r; memcpy(p + 2 * i, &x, 2); break; }
        case RX_DT_I32: case RX_DT_U32: { uint32_t x = (uint32_t)r; memcpy(p + 4 * i, &x, 4); break; }
        case RX_DT_I64: case RX_DT_U64: memcpy(p + 8 * i, &r, 8); break;
        case RX_DT_F16: { /* v truncated to f16 (0 below f16's normal range) */
            float f = (float)v;
            uint32_t b;
            memcpy(&b, &f, 4);
            uint16_t h = (uint16_t)((b >> 16) & 0x8000);
            if (f != f) {
                h = 0x7e00;
            } else if (fabsf(f) >= 0x1p-14f) {
                int e;
                float m = frexpf(fabsf(f), &e); /* [0.5, 1) * 2^e */
                h |= (uint16_t)(((e - 1 + 15) << 10) | ((int)((m * 2 - 1) * 1024) & 0x3ff));
            }
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case RX_DT_BF16: { float f = (float)v; uint32_t b; memcpy(&b, &f, 4);
                           uint16_t h = (uint16_t)(b >> 16); memcpy(p + 2 * i, &h, 2); break; }
        case RX_DT_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
        case RX_DT_F64: memcpy(p + 8 * i, &v, 8); break;
        default: ck_abort_msg("dtype %s", rx_dtype_name(dt));
        }
    }
}

/* ---------------------------------------------------------------- the run */

/* Which case a loop function came from (the first, when legalize shared it). */
static int case_of(rx_module *m, const rx_func *k)
{
    for (int i = 0; i < RX_COUNTOF(CASES); i++) {
        if (!CASES[i].params) {
            const char *q = strchr(CASES[i].value + 1, '\'');
            if ((size_t)(q - CASES[i].value - 1) == strlen(k->name) &&
                !strncmp(CASES[i].value + 1, k->name, strlen(k->name)))
                return i;
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        rx_node *call = rx_module_find(m, name)->body->blocks[0]->bindings[0].value;
        if (call->call_kind == RX_CALL_TIR && call->u.call.callee->u.global.fn == k) return i;
    }
    ck_abort_msg("loop function %s belongs to no case", k->name);
    return -1;
}

/* Runs loop function k as kernel kf and in the interpreter on the same bytes. */
static void compare_one(rx_module *m, const rx_func *k, kernel_fn kf, int ci, uint64_t *seed)
{
    const xcase *xc = &CASES[ci];
    enum { MAXB = 16 };
    rx_vmap vm = {0};
    int64_t ivars[MAXB];
    ck_assert_int_le(k->nsvars, MAXB);
    for (int v = 0; v < k->nsvars; v++) {
        ivars[v] = xc->nval;
        rx_vmap_set(&vm, k->svars[v], rx_e_int(m->arena, xc->nval));
    }
    uint8_t *kb[MAXB], *ib[MAXB];
    void *data[MAXB];
    size_t nbytes[MAXB];
    int64_t shapes[MAXB][8];
    rx_tev_buf tb[MAXB];
    int nb = 0;
    for (int p = 0; p < k->ntparams; p++) {
        const rx_buffer *b = k->tparams[p].buf;
        ck_assert_msg(b != NULL, "%s: scalar parameters are not supported here", k->name);
        ck_assert_int_lt(nb, MAXB);
        int64_t n = 1;
        for (int d = 0; d < b->ndim; d++) {
            ck_assert_msg(rx_expr_eval_int(b->shape[d], &vm, &shapes[nb][d]), "%s: dim", k->name);
            n *= shapes[nb][d];
        }
        nbytes[nb] = (size_t)n * rx_tev_elem_size(b->dtype);
        kb[nb] = malloc(nbytes[nb] + 1);
        ib[nb] = malloc(nbytes[nb] + 1);
        fill(kb[nb], b->dtype, n, xc->range, seed);
        memcpy(ib[nb], kb[nb], nbytes[nb]);
        data[nb] = kb[nb];
        tb[nb] = (rx_tev_buf){ib[nb], b->dtype, b->ndim, shapes[nb], false};
        nb++;
    }
    ck_assert_msg(kf(data, ivars) == 0, "%s: kernel failed", k->name);
    rx_sb why = {0};
    ck_assert_msg(rx_tir_eval(k, tb, nb, NULL, 0, NULL, &why), "case %d (%s): %s", ci, xc->value,
                  rx_sb_str(&why));
    rx_sb_free(&why);
    for (int b = 0; b < nb; b++) {
        size_t es = rx_tev_elem_size(tb[b].dtype);
        for (size_t o = 0; o < nbytes[b]; o += es)
            ck_assert_msg(!memcmp(kb[b] + o, ib[b] + o, es),
                          "case %d (%s), loop function %s, buffer %d (%s), element %zu: kernel "
                          "and interpreter differ", ci, xc->value, k->name, b,
                          rx_dtype_name(tb[b].dtype), o / es);
        free(kb[b]);
        free(ib[b]);
    }
    rx_vmap_free(&vm);
}

START_TEST(interpreter_matches_compiled_kernels)
{
    rx_sb js = {0};
    rx_sb_puts(&js, "{'format':'relax-json','version':1,'functions':{");
    for (int i = 0; i < RX_COUNTOF(CASES); i++) {
        if (i) rx_sb_putc(&js, ',');
        if (CASES[i].params)
            rx_sb_printf(&js, "'f%d':{'kind':'relax','params':[%s],'body':{'blocks':[{'dataflow':"
                              "true,'bindings':[{'var':'r','value':%s}]}],'result':'r'}}",
                         i, CASES[i].params, CASES[i].value);
        else
            rx_sb_puts(&js, CASES[i].value);
    }
    rx_sb_puts(&js, "}}");
    rx_module *m = load_quoted(rx_sb_str(&js));
    rx_sb_free(&js);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_pass_legalize(m, &d) && rx_deduce_module(m, &d)), "legalize: %s", diags_str(&d));
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    uint8_t *so = NULL;
    size_t so_n = 0;
    ck_assert_msg(rx_cc_build(c.p, c.n, NULL, &so, &so_n, &d), "cc: %s", diags_str(&d));
    char dir[] = "/tmp/rx_tev_c.XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k.so", dir);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(so, 1, so_n, f) == so_n);
    fclose(f);
    free(so);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
    unlink(path);
    rmdir(dir);
    uint64_t seed = 20240601;
    int nrun = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_func *k = m->funcs[i];
        if (k->kind != RX_F_TIR) continue;
        rx_sb sym = {0};
        rx_codegen_symbol(k->name, &sym);
        void *fp = dlsym(dl, rx_sb_str(&sym));
        ck_assert_msg(fp != NULL, "no symbol %s", rx_sb_str(&sym));
        rx_sb_free(&sym);
        kernel_fn kf;
        memcpy(&kf, &fp, sizeof kf);
        int ci = case_of(m, k);
        for (int round = 0; round < 3; round++) compare_one(m, k, kf, ci, &seed);
        nrun++;
    }
    ck_assert_int_ge(nrun, RX_COUNTOF(CASES) - 4); /* a few cases share a function */
    dlclose(dl);
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tir_eval_c");
    TCase *tc = tcase_create("tir_eval_c");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, interpreter_matches_compiled_kernels);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
