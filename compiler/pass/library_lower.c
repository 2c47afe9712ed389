/*
 * library_lower.c — partial library lowering (paper §4.6, Figure 12; pipeline step 2).
 *
 * A registry of (pattern, library function) pairs for the CPU target, below in
 * `patterns`, longest first. A pattern is a chain of op-call bindings inside one
 * dataflow block, each feeding the next:
 *
 *   h = matmul(A, B)          (f32; A (m, k) and B (k, n), or A (b, m, k) and B (k, n)
 *                              or (b, k, n); out_dtype null or f32)
 *   s = add(h, bias)          (optional; either operand order; bias f32 (n,), so the sum
 *                              has h's shape)
 *   y = nn.relu|nn.gelu|nn.silu(s)   (optional)
 *
 * where every intermediate (h, s) is used exactly once in the whole function, by the
 * next binding of the chain. The chain becomes one binding of its last variable,
 *
 *   y = call_dps_library("blas.matmul_bias_relu", A, B, bias, out=<y's deduced annotation>)
 *
 * placed where the last binding was (every operand is defined by then); the other
 * bindings of the chain disappear. The library functions are runtime/library.c's (vm.h
 * lists them; vmgen checks each name against rx_rt_builtin_library_names).
 *
 * The cost rule (paper §5.1: generated code for matrix-vector at batch 1, the library
 * otherwise), on the matmul's rows M = A's dims[-2] (times A's literal batch when B is
 * 2-d: the runtime runs that as one product of b * M rows), K, N and the batch b:
 *   - M a literal: the library when M > 1 and, if b, K and N are literals too,
 *     b * M * N * K >= threshold (2^15 by default); a symbolic b, K or N counts as large;
 *   - A (b, M, k) with a symbolic b times a 2-d B: b * M rows, symbolic, so the library
 *     at any M, 1 included (a decode step's (b, 1, k) @ W, below); on cuda the rule
 *     stays on M (the generated matvec). On the Zen 5 build machine the library's
 *     few-row product read an imported Llama decode step's weights (b = 4) at 2-3x the
 *     generated columns plan's bandwidth (docs/passes.md has the figures);
 *   - M symbolic: the library. One artifact serves every M, and the rule cannot be
 *     decided at compile time; at run time the library gives a few rows (a decode step)
 *     to the runtime's few-row product (runtime/library_matvec.c: the weight's rows split
 *     over the threads, at memory bandwidth) and more rows to an sgemm;
 *   - the chain stops before a gelu or silu: FuseOps fuses the generated one into its
 *     consumer (a Llama MLP's silu(gate) * up becomes one kernel, 0.5 ms on 128 x 2048
 *     x 5632), and the generated gelu measured faster than the library's vectorized
 *     tile epilogue (runtime/library_act.c): the mlp probe (64 x 1024 x 4096, 2
 *     threads) ran 18.0 ms with it and 19.4-19.7 ms with blas.matmul_bias_gelu. A relu
 *     (one max per element) stays in the library call.
 * GELU as torch.onnx exports F.gelu (opset < 20) counts as nn.gelu in the chain: with s
 * (the sum, or the product) used exactly twice, d = s / 1.4142135 (or s * 0.70710678),
 * e = erf(d), a = e + 1, then y = (s * a) * 0.5 or y = (s * 0.5) * a (products in either
 * order, constants scalar f32 within 1e-6 relative); the five bindings join the chain
 * (gelu_erf_chain); with the cost rule that is under --lib all only.
 * Target opencl (rx_lib_opts.opencl, set by the driver for `opencl,clblast=1`; the
 * step does not run for other GPU targets): the registry is the pattern matmul alone,
 * calling "clblast.matmul" (CLBlast's SGEMM on the device's buffers, vm_device.c), under
 * the same shapes and cost rule. A bias or an activation stays a generated kernel,
 * which FuseOps fuses with its neighbours on the device; CLBlast has no epilogues.
 * Target cuda (rx_lib_opts.cuda, `cuda,cublas=1`, the default; `cublas=0` turns it off):
 * the same single pattern as "cublas.matmul" (cuBLAS's SGEMM on the device's stream),
 * and the cost rule keeps a literal M of at most RX_LIB_GPU_MV_ROWS generated: decode's
 * matrix-vector products (A (b, 1, k) @ W) run the generated matvec schedule, which
 * reads the weights once at the device's bandwidth, where a GEMM library pads to tiles.
 * Options (rx_lib_opts): mode NONE runs nothing, ALL ignores the cost rule (whole
 * chains, gelu and silu included), and a list
 * of pattern names is never used — a disabled long pattern falls back to a shorter one
 * (matmul_bias_relu disabled: matmul_bias then a generated relu).
 *
 * Strided views (pattern matmul_view, tried first for every matmul): library_view.c
 * follows each operand back through reshape / permute_dims / repeat / expand_dims /
 * broadcast_to / multiply-by-scalar producers bound in the same block and describes it
 * as a view of the tensor reached (its essay). When both operands' matrices are BLAS
 * slabs (one unit stride, no repeat) and blas.matmul would not take the call as it
 * stands (an operand is a view, a scale is folded, or a rank above 3 / broadcast
 * batch), and the cost rule above says library (M, N and the batch from the result's
 * extents, K from A's), the matmul becomes
 *   call_dps_library("blas.matmul_view", (A base, B base, descriptor[, bias]), out=...)
 * with the descriptor an int64 constant (runtime/library.c). A multiply by a scalar f32
 * constant that alone uses the product is folded too (alpha), the call taking its
 * binding. The producers stay for other users (dce drops the rest). Its epilogue
 * (view_epilogue; descriptor version 2): an add of a (n,) bias that alone uses the
 * (scaled) product, passed as the call's fourth argument, then an activation the
 * bindings after it compute (library_epi.c recognizes relu, the erf and tanh GELUs and
 * SiLU however they are spelt), possibly through one reshape that keeps the last axis
 * (GPT-2's Conv1D: addmm at 2-D, reshaped to 3-D, then its GELU): the call then keeps
 * the product's shape at the sum's binding and the reshape, reading it, moves to the
 * activation's result. By the cost rule relu and the tanh GELU join the call (the
 * generated tanh GELU chain cost more than the epilogue: docs/runtime.md), the exact GELU
 * and SiLU under --lib all only, as for the patterns. The plain 2-D / 3-D products keep
 * the patterns above (their bias and relu epilogues) but for a tanh GELU, which they have
 * no entry for.
 * The conv, pool and rnn rules (blas.conv2d, rt.pool2d, rt.rnn) are library_conv_lower.c's
 * (its essay), the concat rule (rt.concat) library_concat_lower.c's, called from the same
 * walk (lower_block) on these use counts.
 *
 * Cost: one walk to count uses (arrays indexed by variable id), one walk to match, each
 * O(size of the module); the module is deduced again when anything changed. What is
 * left for legalize: every op call the patterns did not take.
 */
#include "relax/pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "library_int.h"
#include "relax/deduce.h"
#include "relax/op.h"

typedef struct lib_pattern {
    const char *name; /* "matmul_bias_relu": what rx_lib_opts.disable and --lib-disable name */
    const char *lib;  /* the runtime library function */
    bool bias;        /* an add of a (n,) bias follows the matmul */
    const char *act;  /* the activation op that ends the chain, or NULL */
    bool view;        /* matmul_view: operands read as strided views (library_view.c) */
} lib_pattern;

/* The registry for target cpu, longest first (the first match wins). */
static const lib_pattern patterns[] = {
    {"matmul_bias_relu", "blas.matmul_bias_relu", true, "nn.relu", false},
    {"matmul_bias_gelu", "blas.matmul_bias_gelu", true, "nn.gelu", false},
    {"matmul_bias_silu", "blas.matmul_bias_silu", true, "nn.silu", false},
    {"matmul_bias", "blas.matmul_bias", true, NULL, false},
    {"matmul_relu", "blas.matmul_relu", false, "nn.relu", false},
    {"matmul_gelu", "blas.matmul_gelu", false, "nn.gelu", false},
    {"matmul_silu", "blas.matmul_silu", false, "nn.silu", false},
    {"matmul", "blas.matmul", false, NULL, false},
    {"matmul_view", "blas.matmul_view", false, NULL, true},
};

enum { VIEW_PATTERN = RX_COUNTOF(patterns) - 1 }; /* matmul_view, last */
_Static_assert(RX_COUNTOF(patterns) == RX_LL_NPATTERNS, "library_int.h's RX_LL_NPATTERNS");
/* The conv rule's name (one for all its chains), listed after the matmul registry. */
#define CONV_PATTERN "conv2d"
#define POOL_PATTERN "pool2d"
#define CONCAT_PATTERN "concat"

const char *rx_lib_pattern_name(int i)
{
    if (i == RX_COUNTOF(patterns)) return CONV_PATTERN;
    if (i == RX_COUNTOF(patterns) + 1) return POOL_PATTERN;
    if (i == RX_COUNTOF(patterns) + 2) return CONCAT_PATTERN;
    return i >= 0 && i < RX_COUNTOF(patterns) ? patterns[i].name : NULL;
}

static int pattern_index(const char *name)
{
    for (int i = 0; rx_lib_pattern_name(i); i++)
        if (!strcmp(rx_lib_pattern_name(i), name)) return i;
    return -1;
}

bool rx_lib_opts_check(const rx_lib_opts *o, rx_diags *d)
{
    if (!o) return true;
    if (o->mode != RX_LIB_AUTO && o->mode != RX_LIB_NONE && o->mode != RX_LIB_ALL) {
        rx_diag_add(d, "", "library lowering mode %d out of range", o->mode);
        return false;
    }
    for (int i = 0; o->disable && o->disable[i]; i++)
        if (pattern_index(o->disable[i]) < 0) {
            rx_sb known = {0};
            for (int j = 0; rx_lib_pattern_name(j); j++)
                rx_sb_printf(&known, "%s%s", j ? ", " : "", rx_lib_pattern_name(j));
            rx_diag_add(d, "", "unknown library pattern %s (known: %s)", o->disable[i],
                        rx_sb_str(&known));
            rx_sb_free(&known);
            return false;
        }
    return true;
}

/* ---- use counts ---- */


static bool var_id_ok(const rx_ll_ctx *c, const rx_node *v)
{
    return v->kind == RX_N_VAR && v->u.var.id >= 0 && v->u.var.id < c->nids;
}

static void count_seq(rx_ll_ctx *c, const rx_seq *s);

static void count_node(rx_ll_ctx *c, const rx_node *n, rx_block *b, int32_t idx)
{
    if (!n) return;
    switch (n->kind) {
    case RX_N_VAR:
        if (var_id_ok(c, n)) {
            c->uses[n->u.var.id]++;
            c->user_block[n->u.var.id] = b;
            c->user_idx[n->u.var.id] = idx;
        }
        break;
    case RX_N_CALL:
        if (n->call_kind == RX_CALL_FN) count_node(c, n->u.call.callee, b, idx);
        /* fall through */
    case RX_N_TUPLE:
    case RX_N_GET_ITEM:
        for (int i = 0; i < n->nargs; i++) count_node(c, n->args[i], b, idx);
        break;
    case RX_N_IF:
        count_node(c, n->args[0], b, idx);
        count_seq(c, n->u.if_.then_body);
        count_seq(c, n->u.if_.else_body);
        break;
    default:
        break;
    }
}

static void count_seq(rx_ll_ctx *c, const rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++)
        for (int j = 0; j < s->blocks[i]->nbindings; j++) {
            const rx_binding *bd = &s->blocks[i]->bindings[j];
            count_node(c, bd->value, s->blocks[i], j);
            if (!bd->match_cast && var_id_ok(c, bd->var)) {
                c->def[bd->var->u.var.id] = bd->value;
                c->def_block[bd->var->u.var.id] = s->blocks[i];
            }
        }
    count_node(c, s->result, NULL, -1);
}

/* ---- matching ---- */

bool rx_ll_is_op(const rx_node *n, const char *name)
{
    return n && n->kind == RX_N_CALL && n->call_kind == RX_CALL_OP &&
           !strcmp(n->u.call.op->name, name);
}

bool rx_ll_f32_tensor(const rx_sinfo *s, int ndim)
{
    return s && s->kind == RX_SI_TENSOR && s->dtype == RX_DT_F32 && s->ndim == ndim && s->dims;
}

/* Whether call is a matmul the library functions take (the essay's shapes). */
static bool matmul_ok(const rx_node *call)
{
    if (!rx_ll_is_op(call, "matmul") || call->nargs != 2) return false;
    const rx_sinfo *a = call->args[0]->sinfo, *b = call->args[1]->sinfo, *r = call->sinfo;
    if (!a || a->kind != RX_SI_TENSOR || (a->ndim != 2 && a->ndim != 3)) return false;
    if (!rx_ll_f32_tensor(a, a->ndim) || !rx_ll_f32_tensor(r, a->ndim)) return false;
    const rx_attr *od = rx_call_attr(call, "out_dtype");
    if (od->kind != RX_A_NULL && !(od->kind == RX_A_STR && !strcmp(od->u.s, "f32"))) return false;
    if (rx_ll_f32_tensor(b, 2)) return true;
    return a->ndim == 3 && rx_ll_f32_tensor(b, 3) && rx_expr_same(a->dims[0], b->dims[0]);
}

/* The cost rule's second part: in auto mode a chain ends before a gelu or silu. On
 * opencl only the bare matmul is in the registry. */
static bool pattern_worth(const rx_ll_ctx *c, const lib_pattern *p)
{
    if (c->o && (c->o->opencl || c->o->cuda)) return !p->bias && !p->act;
    if (c->o && c->o->mode == RX_LIB_ALL) return true;
    return !p->act || !strcmp(p->act, "nn.relu");
}

/* The cost rule of the essay for a matmul_ok call, or one matmul_view takes (M, N and
 * the batch from the result's extents, K from A's). */
static bool worth_library(const rx_ll_ctx *c, const rx_node *call)
{
    if (c->o && c->o->mode == RX_LIB_ALL) return true;
    const rx_sinfo *a = call->args[0]->sinfo, *r = call->sinfo;
    int64_t M, K, N, batch = 1, e;
    if (!rx_expr_is_const(r->dims[r->ndim - 2], &M)) return true; /* symbolic M */
    /* a 3-d A times a 2-d B is one product of batch * M rows (blas_gemm flattens it):
     * nn.MultiheadAttention's in-projection of (197, 1, d) at batch 1. A symbolic batch
     * makes the rows symbolic: decode's (b, 1, k) @ W goes to the library, whose
     * rx_rt_matvec takes 1 to 12 rows at run time (the essay) */
    const rx_sinfo *bs = call->args[1]->sinfo;
    bool fold = matmul_ok(call) && bs && bs->ndim == 2 && r->ndim == 3;
    if (fold && !rx_expr_is_const(r->dims[0], &e)) {
        if (!(c->o && c->o->cuda)) return true;
        fold = false; /* cuda: the rule on M, the generated matvec below its rows */
    }
    if (fold) M *= e;
    if (M <= 1 || (c->o && c->o->cuda && M <= RX_LIB_GPU_MV_ROWS)) return false;
    if (!rx_expr_is_const(a->dims[a->ndim - 1], &K) || !rx_expr_is_const(r->dims[r->ndim - 1], &N))
        return true;
    for (int i = 0; i < r->ndim - 2 && !fold; i++) {
        if (!rx_expr_is_const(r->dims[i], &e)) return true;
        batch *= e;
    }
    int64_t threshold = c->o && c->o->threshold > 0 ? c->o->threshold : RX_LIB_THRESHOLD_DEFAULT;
    double volume = (double)batch * (double)M * (double)N * (double)K; /* no overflow */
    return volume >= (double)threshold;
}

/* Binding at (the last of a rewritten chain) becomes call_dps_library(lib, args) with
 * its annotation and location; counted as one rewrite. */
void rx_ll_put_lib(rx_ll_ctx *c, rx_binding *at, const char *lib, rx_node **args, int nargs)
{
    rx_sinfo *out = at->value->sinfo;
    rx_node *call = rx_n_call_lib(c->m, lib, args, nargs, out);
    call->sinfo = out;
    call->loc = at->value->loc;
    /* OpenCL: the replaced op call stays as the call's fallback, which legalize turns into
     * a loop function the VM runs where CLBlast cannot be loaded (vmgen's lower.c) */
    if (c->o && c->o->opencl && nargs == 2 && at->value->kind == RX_N_CALL &&
        at->value->call_kind == RX_CALL_OP)
        call->u.call.callee = at->value;
    at->value = call;
    if (var_id_ok(c, at->var)) c->def[at->var->u.var.id] = call; /* views stop at it */
    c->rewritten++;
}

/* The binding that alone uses v, in block b after index after; NULL when v has another
 * use, is used elsewhere, or by a match_cast. */
rx_binding *rx_ll_sole_user(const rx_ll_ctx *c, const rx_node *v, rx_block *b, int after)
{
    if (!var_id_ok(c, v)) return NULL;
    int32_t id = v->u.var.id;
    if (c->uses[id] != 1 || c->user_block[id] != b || c->user_idx[id] <= after) return NULL;
    rx_binding *u = &b->bindings[c->user_idx[id]];
    return u->match_cast ? NULL : u;
}

/* If bias add: the other operand when `s` is add(v, bias) or add(bias, v) with bias f32
 * (n,) and the sum of v's shape; else NULL. */
static rx_node *bias_of(const rx_node *s, const rx_node *v)
{
    if (!rx_ll_is_op(s, "add") || s->nargs != 2) return NULL;
    int k = s->args[0] == v ? 1 : s->args[1] == v ? 0 : -1;
    if (k < 0 || s->args[k] == v) return NULL;
    const rx_sinfo *vs = v->sinfo, *bs = s->args[k]->sinfo, *rs = s->sinfo;
    if (!rx_ll_f32_tensor(bs, 1) || !rx_ll_f32_tensor(rs, vs->ndim)) return NULL;
    if (!rx_expr_same(bs->dims[0], vs->dims[vs->ndim - 1])) return NULL;
    for (int i = 0; i < vs->ndim; i++)
        if (!rx_expr_same(rs->dims[i], vs->dims[i])) return NULL;
    return s->args[k];
}

rx_node *rx_ll_def_of(void *ctx, const rx_node *var)
{
    const rx_ll_ctx *c = ctx; /* producers of this block only: a base must be in scope */
    return var_id_ok(c, var) && c->def_block[var->u.var.id] == c->cur ? c->def[var->u.var.id]
                                                                       : NULL;
}

static bool same_tensor(const rx_sinfo *x, const rx_sinfo *y)
{
    if (!x || x->kind != RX_SI_TENSOR || !x->dims || x->dtype != y->dtype || x->ndim != y->ndim)
        return false;
    for (int i = 0; i < x->ndim; i++)
        if (!rx_expr_same(x->dims[i], y->dims[i])) return false;
    return true;
}

/* The value of a scalar f32 constant operand (inline or bound), or false. */
bool rx_ll_scalar_f32(const rx_ll_ctx *c, const rx_node *n, double *out)
{
    if (n->kind == RX_N_VAR) n = rx_ll_def_of((void *)c, n);
    if (!n || n->kind != RX_N_CONST || n->u.konst->dtype != RX_DT_F32 || n->u.konst->nbytes != 4)
        return false;
    float f;
    memcpy(&f, n->u.konst->data, sizeof f);
    *out = f;
    return true;
}

/* n is op(v, s) or op(s, v) with s a scalar f32 constant
 * within 1e-6 relative of want. */
static bool op_with_scalar(const rx_ll_ctx *c, const rx_node *n, const char *op, const rx_node *v,
                           double want)
{
    if (!rx_ll_is_op(n, op) || n->nargs != 2) return false;
    int k = n->args[0] == v ? 1 : n->args[1] == v ? 0 : -1;
    double got;
    if (k < 0 || n->args[k] == v || !rx_ll_scalar_f32(c, n->args[k], &got)) return false;
    return fabs(got - want) <= 1e-6 * fabs(want);
}

/* The op-call binding of block b after index after whose value is op(x, y) in either
 * order, or NULL. */
static rx_binding *binary_user(const rx_ll_ctx *c, rx_block *b, const rx_node *x, const rx_node *y,
                               const char *op, int after)
{
    rx_binding *u = rx_ll_sole_user(c, y, b, after);
    if (!u || !rx_ll_is_op(u->value, op) || u->value->nargs != 2) return NULL;
    const rx_node *const *a = (const rx_node *const *)u->value->args;
    return (a[0] == x && a[1] == y) || (a[0] == y && a[1] == x) ? u : NULL;
}

/* GELU as exporters write it (torch.onnx's F.gelu): with x used exactly twice,
 *   d = x / 1.4142135 (or x * 0.70710678); e = erf(d); a = e + 1;
 *   then h = x * a; y = h * 0.5   or   h = x * 0.5; y = h * a
 * (each product in either operand order). Appends the bindings' indices to chain (y's
 * last) and returns how many, or 0. */
static int gelu_erf_chain(const rx_ll_ctx *c, rx_block *b, rx_node *x, int after, int *chain)
{
    if (!var_id_ok(c, x) || c->uses[x->u.var.id] != 2) return 0;
    rx_binding *us[2];
    int nu = 0;
    for (int k = after + 1; k < b->nbindings && nu < 2; k++) {
        const rx_node *v = b->bindings[k].value;
        bool uses = false;
        for (int i = 0; v->kind == RX_N_CALL && v->call_kind == RX_CALL_OP && i < v->nargs; i++)
            uses |= v->args[i] == x;
        if (uses) us[nu++] = &b->bindings[k];
    }
    if (nu != 2) return 0;
    for (int first = 0; first < 2; first++) {
        rx_binding *d = us[first], *h = us[1 - first];
        if (d->match_cast || h->match_cast ||
            !((op_with_scalar(c, d->value, "divide", x, 1.4142135623730951) &&
               d->value->args[0] == x) ||
              op_with_scalar(c, d->value, "multiply", x, 0.7071067811865476)))
            continue;
        rx_binding *e = rx_ll_sole_user(c, d->var, b, (int)(d - b->bindings));
        if (!e || !rx_ll_is_op(e->value, "erf") || e->value->args[0] != d->var) continue;
        rx_binding *a = rx_ll_sole_user(c, e->var, b, (int)(e - b->bindings));
        if (!a || !op_with_scalar(c, a->value, "add", e->var, 1.0)) continue;
        rx_binding *y = NULL;
        if (binary_user(c, b, x, a->var, "multiply", (int)(a - b->bindings)) == h) {
            y = rx_ll_sole_user(c, h->var, b, (int)(h - b->bindings));
            if (y && !op_with_scalar(c, y->value, "multiply", h->var, 0.5)) y = NULL;
        } else if (op_with_scalar(c, h->value, "multiply", x, 0.5)) {
            y = binary_user(c, b, h->var, a->var, "multiply", (int)(h - b->bindings));
            if (y && (y - b->bindings) < (a - b->bindings)) y = NULL;
        }
        if (!y || y->match_cast || !same_tensor(y->value->sinfo, x->sinfo)) continue;
        int idx[5] = {(int)(d - b->bindings), (int)(e - b->bindings), (int)(a - b->bindings),
                      (int)(h - b->bindings), (int)(y - b->bindings)};
        for (int i = 0; i < 5; i++) chain[i] = idx[i];
        return 5;
    }
    return 0;
}

/* Tries pattern p on the matmul binding j of dataflow block b; on a match rewrites the
 * chain's last binding and marks the others in `drop`. */
static bool try_pattern(rx_ll_ctx *c, const lib_pattern *p, rx_block *b, int j, bool *drop)
{
    rx_binding *mm = &b->bindings[j];
    rx_node *cur = mm->var, *bias = NULL;
    int chain[8] = {j}, len = 1;
    if (p->bias) {
        rx_binding *u = rx_ll_sole_user(c, cur, b, chain[len - 1]);
        if (!u || !(bias = bias_of(u->value, cur))) return false;
        chain[len++] = (int)(u - b->bindings);
        cur = u->var;
    }
    if (p->act) {
        rx_binding *u = rx_ll_sole_user(c, cur, b, chain[len - 1]);
        int n = 0;
        if (!u && !strcmp(p->act, "nn.gelu"))
            n = gelu_erf_chain(c, b, cur, chain[len - 1], chain + len);
        if (n) {
            len += n;
        } else {
            if (!u || !rx_ll_is_op(u->value, p->act) || u->value->nargs != 1 ||
                u->value->args[0] != cur || !rx_ll_f32_tensor(u->value->sinfo, mm->value->sinfo->ndim))
                return false;
            chain[len++] = (int)(u - b->bindings);
        }
    }
    rx_node *args[3] = {mm->value->args[0], mm->value->args[1], bias};
    const char *lib = !c->o ? p->lib : c->o->opencl ? "clblast.matmul"
                    : c->o->cuda ? "cublas.matmul" : p->lib;
    rx_ll_put_lib(c, &b->bindings[chain[len - 1]], lib, args, bias ? 3 : 2);
    for (int k = 0; k < len - 1; k++) drop[chain[k]] = true;
    return true;
}

/* Whether the matmul_view epilogue takes activation act: the cost rule's second part as
 * pattern_worth has it, and the tanh GELU (a generated one cost more than the epilogue:
 * docs/runtime.md). */
static bool view_act_worth(const rx_ll_ctx *c, int act)
{
    if (c->o && c->o->mode == RX_LIB_ALL) return true;
    return act == RX_LE_ACT_RELU || act == RX_LE_ACT_GELU_TANH;
}

/* The epilogue of a matmul_view whose product (scaled) is bound at *last: the sole user
 * adding a (n,) bias, then an activation (library_epi.c), possibly after one reshape that
 * keeps the last axis (GPT-2's Conv1D: a 2-D addmm reshaped to 3-D, then its GELU). On a
 * match *last becomes the binding the call goes to, the indices of the bindings it
 * replaces are appended to drops, and with a reshape *moved is it and *y the
 * activation's result: the call then stays at the product's (or the sum's) binding with
 * its shape, and the caller moves the reshape, reading the call, to *y. */
static void view_epilogue(rx_ll_ctx *c, rx_block *b, const bool *drop, rx_binding **last,
                          rx_node **bias, int *act, int *drops, int *nd, rx_binding **moved,
                          rx_binding **y)
{
    rx_node *cur = (*last)->var;
    rx_binding *u = rx_ll_sole_user(c, cur, b, (int)(*last - b->bindings));
    if (u && !drop[u - b->bindings] && (*bias = bias_of(u->value, cur))) {
        drops[(*nd)++] = (int)(*last - b->bindings);
        *last = u;
        cur = u->var;
    }
    rx_node *x = cur;
    int after = (int)(*last - b->bindings);
    rx_binding *r = rx_ll_sole_user(c, cur, b, after);
    const rx_sinfo *cs = cur->sinfo, *rs = r ? r->value->sinfo : NULL;
    if (r && !drop[r - b->bindings] && rx_ll_is_op(r->value, "reshape") && rx_ll_f32_tensor(rs, rs->ndim) &&
        rx_expr_same(rs->dims[rs->ndim - 1], cs->dims[cs->ndim - 1])) {
        x = r->var;
        after = (int)(r - b->bindings);
    }
    rx_le_ctx le = {c->uses, c->nids, {rx_ll_def_of, c}};
    int ch[16], a = RX_LE_ACT_NONE, k = rx_le_match(&le, b, x, after, drop, ch, &a);
    if (!k || !view_act_worth(c, a)) return;
    *act = a;
    for (int i = 0; i < k - 1; i++) drops[(*nd)++] = ch[i];
    if (x != cur) {
        drops[(*nd)++] = (int)(r - b->bindings);
        *moved = r;
        *y = &b->bindings[ch[k - 1]];
    } else {
        drops[(*nd)++] = (int)(*last - b->bindings);
        *last = &b->bindings[ch[k - 1]];
    }
}

/* matmul_view (the essay): the matmul binding j of block b with both operands read as
 * strided views of their bases, and a following multiply by a scalar constant folded
 * into alpha; on a match rewrites the last binding and marks the matmul's in drop. */
static bool try_view(rx_ll_ctx *c, rx_block *b, int j, bool *drop)
{
    rx_binding *mm = &b->bindings[j];
    rx_node *call = mm->value;
    if (!rx_ll_is_op(call, "matmul") || call->nargs != 2) return false;
    const rx_sinfo *r = call->sinfo;
    const rx_attr *od = rx_call_attr(call, "out_dtype");
    if (!r || r->kind != RX_SI_TENSOR || !r->dims || r->ndim < 2 || r->ndim > RX_LV_MAXR ||
        r->dtype != RX_DT_F32 ||
        (od->kind != RX_A_NULL && !(od->kind == RX_A_STR && !strcmp(od->u.s, "f32"))))
        return false;
    rx_lv_defs defs = {rx_ll_def_of, c};
    rx_lv_view va, vb;
    if (!rx_lv_view_of(&defs, call->args[0], &va, c->m->arena) ||
        !rx_lv_view_of(&defs, call->args[1], &vb, c->m->arena) || va.r < 2 || vb.r < 2 ||
        !rx_lv_blas_able(&va) || !rx_lv_blas_able(&vb))
        return false;
    /* blas.matmul and its chains take the dense 2-D / 3-D cases, but for an epilogue
     * they have no entry for (the tanh GELU) */
    bool plain = !va.moved && !vb.moved && va.alpha == 1.0 && vb.alpha == 1.0 && matmul_ok(call);
    if (!worth_library(c, call)) return false;
    int64_t words[4 + 2 * (1 + 3 * RX_LV_MAXR)];
    int n = 2;
    double alpha = va.alpha * vb.alpha, s;
    rx_binding *last = mm, *u = rx_ll_sole_user(c, mm->var, b, j);
    if (u && rx_ll_is_op(u->value, "multiply") && u->value->nargs == 2 &&
        same_tensor(u->value->sinfo, r)) {
        rx_node *o = u->value->args[0] == mm->var ? u->value->args[1] : u->value->args[0];
        if (o != mm->var && rx_ll_scalar_f32(c, o, &s)) {
            alpha *= s;
            last = u;
        }
    }
    rx_node *bias = NULL;
    int act = RX_LE_ACT_NONE, drops[24], nd = 0;
    rx_binding *moved = NULL, *y = NULL; /* a reshape between the sum and the activation */
    if (last != mm) drops[nd++] = j;
    view_epilogue(c, b, drop, &last, &bias, &act, drops, &nd, &moved, &y);
    if (plain && act != RX_LE_ACT_GELU_TANH) return false;
    bool epi = bias || act != RX_LE_ACT_NONE; /* descriptor version 2 */
    n = epi ? 4 : 2;
    if (!rx_lv_encode_operand(&va, words, &n) || !rx_lv_encode_operand(&vb, words, &n))
        return false;
    words[0] = epi ? 2 : 1;
    if (epi) words[2] = act, words[3] = bias != NULL;
    memcpy(&words[1], &alpha, sizeof alpha);
    rx_const *k = RX_NEW(c->m->arena, rx_const);
    k->dtype = RX_DT_I64;
    k->ndim = 1;
    k->shape = RX_NEWN(c->m->arena, int64_t, 1);
    k->shape[0] = n;
    k->nbytes = sizeof(int64_t) * (size_t)n;
    k->data = rx_arena_dup(c->m->arena, words, k->nbytes);
    k->loc = call->loc;
    rx_node *args[4] = {va.base, vb.base, rx_n_const(c->m, k), bias};
    rx_expr *words_len = rx_e_int(c->m->arena, n);
    args[2]->sinfo = rx_si_tensor(c->m->arena, RX_DT_I64, 1, &words_len);
    args[2]->loc = call->loc;
    rx_ll_put_lib(c, last, "blas.matmul_view", args, bias ? 4 : 3);
    for (int i = 0; i < nd; i++) drop[drops[i]] = true;
    if (moved) { /* the reshape, reading the call, now binds the activation's result */
        y->value = moved->value;
        if (var_id_ok(c, y->var)) c->def[y->var->u.var.id] = y->value;
    }
    return true;
}

static void lower_seq(rx_ll_ctx *c, rx_seq *s);

static void lower_block(rx_ll_ctx *c, rx_block *b)
{
    for (int j = 0; j < b->nbindings; j++) {
        rx_node *v = b->bindings[j].value;
        if (v && v->kind == RX_N_IF) {
            lower_seq(c, v->u.if_.then_body);
            lower_seq(c, v->u.if_.else_body);
        }
    }
    if (!b->dataflow) return;
    bool *drop = calloc((size_t)b->nbindings + 1, sizeof *drop);
    RX_ASSERT(drop != NULL);
    bool any = false;
    for (int j = 0; j < b->nbindings; j++) {
        rx_binding *bd = &b->bindings[j];
        if (drop[j] || bd->match_cast) continue;
        c->cur = b;
        if ((c->conv_enabled && (rx_ll_try_conv(c, b, j, drop) || rx_ll_try_qconv(c, b, j, drop))) || (c->pool_enabled && rx_ll_try_pool(c, bd)) ||
            (c->concat_enabled && rx_ll_try_concat(c, b, j, drop))) {
            any = true;
            continue;
        }
        if (c->enabled[VIEW_PATTERN] && !(c->o && (c->o->opencl || c->o->cuda)) &&
            try_view(c, b, j, drop)) {
            any = true;
            continue;
        }
        if (!matmul_ok(bd->value) || !worth_library(c, bd->value)) continue;
        for (int p = 0; p < RX_COUNTOF(patterns); p++)
            if (c->enabled[p] && !patterns[p].view && pattern_worth(c, &patterns[p]) &&
                try_pattern(c, &patterns[p], b, j, drop)) {
                any = true;
                break;
            }
    }
    if (any) {
        int n = 0;
        for (int j = 0; j < b->nbindings; j++)
            if (!drop[j]) b->bindings[n++] = b->bindings[j];
        b->nbindings = n;
    }
    free(drop);
}

static void lower_seq(rx_ll_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) lower_block(c, s->blocks[i]);
}

bool rx_library_lower(rx_module *m, const rx_lib_opts *o, int *rewritten, rx_diags *d)
{
    if (rewritten) *rewritten = 0;
    if (!rx_lib_opts_check(o, d)) return false;
    if (o && o->mode == RX_LIB_NONE) return true;
    rx_ll_ctx c = {0};
    c.m = m;
    c.o = o;
    for (int p = 0; p < RX_COUNTOF(patterns); p++) {
        c.enabled[p] = true;
        for (int i = 0; o && o->disable && o->disable[i]; i++)
            if (!strcmp(o->disable[i], patterns[p].name)) c.enabled[p] = false;
    }
    c.conv_enabled = c.pool_enabled = c.concat_enabled = !(o && (o->opencl || o->cuda));
    for (int i = 0; o && o->disable && o->disable[i]; i++) {
        if (!strcmp(o->disable[i], CONV_PATTERN)) c.conv_enabled = false;
        if (!strcmp(o->disable[i], POOL_PATTERN)) c.pool_enabled = false;
        if (!strcmp(o->disable[i], CONCAT_PATTERN)) c.concat_enabled = false;
    }
    c.nids = m->next_id;
    size_t n = (size_t)c.nids + 1;
    c.uses = calloc(n, sizeof *c.uses);
    c.user_block = calloc(n, sizeof *c.user_block);
    c.user_idx = calloc(n, sizeof *c.user_idx);
    c.def = calloc(n, sizeof *c.def);
    c.def_block = calloc(n, sizeof *c.def_block);
    RX_ASSERT(c.uses && c.user_block && c.user_idx && c.def && c.def_block);
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *f = m->funcs[i];
        if (f->kind != RX_F_RELAX) continue;
        memset(c.uses, 0, n * sizeof *c.uses);
        memset(c.def, 0, n * sizeof *c.def);
        memset(c.def_block, 0, n * sizeof *c.def_block);
        count_seq(&c, f->body);
        lower_seq(&c, f->body);
    }
    free(c.uses);
    free(c.user_block);
    free(c.user_idx);
    free(c.def);
    free(c.def_block);
    if (rewritten) *rewritten = c.rewritten;
    if (!c.rewritten) m->unchanged = true;
    return true;
}

bool rx_pass_library_lower(rx_module *m, const rx_lib_opts *o, rx_diags *d)
{
    return rx_library_lower(m, o, NULL, d);
}
