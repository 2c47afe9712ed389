/*
 * test_fuse_tir.c — FuseTIR (paper §4.2, Figure 9) on hand-written FuseOps results:
 * the input modules of tests/passes/fuse_tir/ (each a main calling "primitive" graph
 * functions of call_tir bindings).
 *
 * Structure: after rx_fuse_tir every primitive function is one loop function of the
 * same name called by one call_tir, the constituents are gone, inlined intermediates
 * leave no ALLOC and no loop nest of their own, materialized ones are ALLOCs of the
 * right scope, symbolic shapes stay symbolic (a shape variable n, or a scalar
 * parameter fed by tir_vars for Figure 8's n * 2), an inlined reshape leaves no // or
 * %, names are renamed apart, and the result writes and reads back structurally equal.
 * The Llama model after the real FuseOps fuses completely and generates C; a primitive
 * function that cannot be fused (an op call, or used as a value) is kept unmarked.
 * Numerics: each module is built twice with the real pipeline (rx_build at O2, FuseOps
 * off so the hand-written groups stay as written, lift_workspace off so that FuseTIR
 * alone differs): once with FuseTIR off (the
 * primitive functions run as ordinary graph functions calling their constituents) and
 * once with it on; both artifacts run in the C runtime on the same seeded inputs at
 * several n and must give the same outputs.
 */
#include "pass_test.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"
#include "relax/codegen.h"
#include "relax/driver.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/runtime.h"
#include "relax/text.h"

/* ---------------------------------------------------------------- loading */

static char *case_text(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/passes/fuse_tir/%s.in.json", RX_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert(fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static rx_module *load_case(const char *name)
{
    char *s = case_text(name);
    rx_module *m = load_text(s);
    free(s);
    return m;
}

/* Runs FuseTIR; checks that the result writes and reads back structurally equal. */
static rx_fuse_tir_report fuse(rx_module *m)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_fuse_tir_report rep;
    ck_assert_msg((rx_fuse_tir(m, &rep, &d) && rx_deduce_module(m, &d)), "fuse_tir: %s", diags_str(&d));
    ck_assert_msg(rep.kept == 0 || rep.why_kept, "a kept function without a reason");
    rx_sb out = {0};
    rx_json_write(m, 0, &out);
    rx_module *back = rx_json_read(out.p, out.n, NULL, &d);
    ck_assert_msg(back != NULL && rx_deduce_module(back, &d), "read back: %s\n%s", diags_str(&d), out.p);
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(m, back, &why), "round trip: %s", rx_sb_str(&why));
    rx_sb_free(&why);
    rx_sb_free(&out);
    rx_module_free(back);
    rx_diags_free(&d);
    return rep;
}

/* ---------------------------------------------------------------- structure */

static int count_kind(rx_module *m, rx_fkind k)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++) n += m->funcs[i]->kind == k;
    return n;
}

/* Statements of kind k in ss, nested ones included. */
static int count_stmts(const rx_stmts *ss, rx_skind k)
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        n += s->kind == k;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: n += count_stmts(&s->u.for_.body, k); break;
        case RX_S_BLOCK: n += count_stmts(&s->u.block.init, k) + count_stmts(&s->u.block.body, k); break;
        case RX_S_IF: n += count_stmts(&s->u.if_.then_s, k) + count_stmts(&s->u.if_.else_s, k); break;
        case RX_S_LET: n += count_stmts(&s->u.let.body, k); break;
        default: break;
        }
    }
    return n;
}

/* The ALLOC'd buffers of f's top level, in order. */
static int allocs(const rx_func *f, const rx_buffer **out, int max)
{
    int n = 0;
    for (int i = 0; i < f->tbody.n; i++)
        if (f->tbody.items[i]->kind == RX_S_ALLOC && n < max) out[n++] = f->tbody.items[i]->u.alloc.buf;
    return n;
}

/* True when e loads a buffer named name. */
static bool loads(const rx_expr *e, const char *name)
{
    if (!e) return false;
    if (e->kind == RX_E_LOAD && !strcmp(e->u.load.buf->name, name)) return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (loads(rx_expr_child(e, i), name)) return true;
    return false;
}

static bool stmts_load(const rx_stmts *ss, const char *name)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: if (stmts_load(&s->u.for_.body, name)) return true; break;
        case RX_S_BLOCK:
            if (stmts_load(&s->u.block.init, name) || stmts_load(&s->u.block.body, name)) return true;
            break;
        case RX_S_STORE: if (loads(s->u.store.value, name)) return true; break;
        case RX_S_IF:
            if (stmts_load(&s->u.if_.then_s, name) || stmts_load(&s->u.if_.else_s, name)) return true;
            break;
        default: break;
        }
    }
    return false;
}

/* Expression nodes of kind k in the values and indices of ss. */
static int expr_kind_count(const rx_expr *e, rx_ekind k)
{
    if (!e) return 0;
    int n = e->kind == k;
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += expr_kind_count(rx_expr_child(e, i), k);
    return n;
}

static int stmts_expr_kind(const rx_stmts *ss, rx_ekind k)
{
    int n = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: n += stmts_expr_kind(&s->u.for_.body, k); break;
        case RX_S_BLOCK: n += stmts_expr_kind(&s->u.block.init, k) + stmts_expr_kind(&s->u.block.body, k); break;
        case RX_S_STORE:
            n += expr_kind_count(s->u.store.value, k);
            for (int j = 0; j < s->u.store.nidx; j++) n += expr_kind_count(s->u.store.idx[j], k);
            break;
        default: break;
        }
    }
    return n;
}

/* The call_tir bindings of main, in order (at most max). */
static int main_calls(rx_module *m, rx_node **out, int max)
{
    rx_func *f = rx_module_find(m, "main");
    int n = 0;
    for (int b = 0; b < f->body->nblocks; b++)
        for (int i = 0; i < f->body->blocks[b]->nbindings; i++) {
            rx_node *v = f->body->blocks[b]->bindings[i].value;
            if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR && n < max) out[n++] = v;
            ck_assert_msg(!(v->kind == RX_N_CALL && v->call_kind == RX_CALL_FN), "a graph call is left");
        }
    return n;
}

static const char *pattern_of(const rx_func *f)
{
    const rx_attr *a = rx_attr_map_get(f->attrs, "compute_pattern");
    return a && a->kind == RX_A_STR ? a->u.s : "";
}

static int nbuffers(const rx_func *f)
{
    int n = 0;
    for (int i = 0; i < f->ntparams; i++) n += f->tparams[i].buf != NULL;
    return n;
}

/* ---------------------------------------------------------------- numerics */

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* IEEE half bits of k / 8 for |k| <= 64 (exactly representable). */
static uint16_t half_of_eighths(int k)
{
    if (k == 0) return 0;
    uint16_t sign = k < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)(k < 0 ? -k : k);
    int e = 0;
    while ((a >> e) > 1) e++;                     /* a = 2^e * 1.f */
    unsigned frac = (a << (10 - e)) & 0x3ff;
    int exp = e - 3 + 15;                          /* value = a / 8 */
    return (uint16_t)(sign | (unsigned)exp << 10 | frac);
}

static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    double f = h & 0x3ff;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? INFINITY : ldexp(1024 + f, e - 25);
    return h & 0x8000 ? -v : v;
}

static double elem(const DLTensor *t, size_t i)
{
    switch (t->dtype.code) {
    case kDLFloat:
        if (t->dtype.bits == 16) return half_value(((const uint16_t *)t->data)[i]);
        return t->dtype.bits == 32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
    case kDLUInt: return t->dtype.bits == 32 ? ((const uint32_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
    default: return t->dtype.bits == 32 ? ((const int32_t *)t->data)[i] : (double)((const int64_t *)t->data)[i];
    }
}

static rx_rt_module *build(rx_rt_ctx *ctx, const char *text, bool fuse_tir)
{
    static const char *const off_tir[] = {"fuse_ops", "fuse_tir", "lift_workspace", NULL};
    static const char *const on_tir[] = {"fuse_ops", "lift_workspace", NULL};
    rx_build_opts o = {.target = "cpu", .opt_level = 2, .disable = fuse_tir ? on_tir : off_tir};
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    size_t n = 0;
    ck_assert_msg(rx_build(text, strlen(text), &o, &rxa, &n, &d), "build (fuse_tir %d): %s", fuse_tir,
                  diags_str(&d));
    rx_rt_err err = {""};
    rx_rt_module *rm = rx_rt_load_bytes(ctx, rxa, n, "case.rxa", &err);
    ck_assert_msg(rm != NULL, "load: %s", err.msg);
    free(rxa);
    rx_diags_free(&d);
    return rm;
}

typedef struct input {
    DLTensor t;
    int64_t shape[8];
    void *data;
} input;

/* Seeded inputs for main's tensor parameters with every variable named "n" = nval;
 * a Shape parameter is not expected in main. */
static int make_inputs(rx_module *m, int64_t nval, uint64_t seed, input *in, int max)
{
    rx_func *f = rx_module_find(m, "main");
    ck_assert_int_le(f->nparams, max);
    rx_vmap vm = {0};
    for (int k = 0; k < f->nsvars; k++)
        if (!strcmp(f->svars[k]->name, "n")) rx_vmap_set(&vm, f->svars[k], rx_e_int(m->arena, nval));
    for (int p = 0; p < f->nparams; p++) {
        const rx_sinfo *s = f->params[p]->sinfo;
        ck_assert_int_eq(s->kind, RX_SI_TENSOR);
        size_t cnt = 1;
        for (int i = 0; i < s->ndim; i++) {
            ck_assert(rx_expr_eval_int(s->dims[i], &vm, &in[p].shape[i]));
            cnt *= (size_t)in[p].shape[i];
        }
        DLTensor *t = &in[p].t;
        memset(t, 0, sizeof *t);
        t->device.device_type = kDLCPU;
        t->ndim = s->ndim;
        t->shape = in[p].shape;
        t->dtype.lanes = 1;
        t->dtype.bits = (uint8_t)rx_dtype_bits((rx_dtype)s->dtype);
        t->dtype.code = s->dtype == RX_DT_F32 || s->dtype == RX_DT_F16 ? kDLFloat : kDLUInt;
        in[p].data = calloc(cnt + 1, t->dtype.bits / 8);
        t->data = in[p].data;
        for (size_t i = 0; i < cnt; i++) {
            uint64_t r = rnd(&seed);
            if (s->dtype == RX_DT_F32) ((float *)t->data)[i] = (float)((double)(r % 100000) / 25000.0 - 2.0);
            else if (s->dtype == RX_DT_F16) ((uint16_t *)t->data)[i] = half_of_eighths((int)(r % 33) - 16);
            else if (s->dtype == RX_DT_U32) ((uint32_t *)t->data)[i] = (uint32_t)(r ^ (rnd(&seed) << 16));
            else ck_abort_msg("dtype %s not supported by the test", rx_dtype_name((rx_dtype)s->dtype));
        }
    }
    rx_vmap_free(&vm);
    return f->nparams;
}

/* Builds the case with and without FuseTIR and compares main's outputs at each n. */
static void same_numerics(const char *name, const int64_t *ns, int nn)
{
    char *text = case_text(name);
    rx_module *m = load_text(text);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *ref = build(ctx, text, false), *fus = build(ctx, text, true);
    for (int k = 0; k < nn; k++) {
        input in[8];
        int np = make_inputs(m, ns[k], 1234 + (uint64_t)k, in, 8);
        rx_rt_arg args[8];
        for (int p = 0; p < np; p++) args[p] = (rx_rt_arg){.kind = RX_RT_ARG_TENSOR, .tensor = &in[p].t};
        rx_rt_outputs *o1 = NULL, *o2 = NULL;
        rx_rt_err err = {""};
        ck_assert_msg(rx_rt_call(ref, rx_rt_find_function(ref, "main"), args, np, &o1, NULL, &err) == 0,
                      "%s unfused: %s", name, err.msg);
        ck_assert_msg(rx_rt_call(fus, rx_rt_find_function(fus, "main"), args, np, &o2, NULL, &err) == 0,
                      "%s fused: %s", name, err.msg);
        ck_assert_int_eq(rx_rt_outputs_count(o1), rx_rt_outputs_count(o2));
        ck_assert_int_ge(rx_rt_outputs_count(o1), 1);
        for (int i = 0; i < rx_rt_outputs_count(o1); i++) {
            DLTensor *a = rx_rt_outputs_tensor(o1, i), *b = rx_rt_outputs_tensor(o2, i);
            ck_assert(a && b && a->ndim == b->ndim && a->dtype.code == b->dtype.code &&
                      a->dtype.bits == b->dtype.bits);
            size_t cnt = 1;
            for (int d = 0; d < a->ndim; d++) {
                ck_assert_int_eq(a->shape[d], b->shape[d]);
                cnt *= (size_t)a->shape[d];
            }
            ck_assert_uint_gt(cnt, 0);
            double tol = a->dtype.bits == 16 ? 2e-3 : 1e-5;
            for (size_t e = 0; e < cnt; e++) {
                double x = elem(a, e), y = elem(b, e);
                ck_assert_msg(fabs(x - y) <= tol * (1 + fabs(x)),
                              "%s n=%lld output %d element %zu: unfused %.9g, fused %.9g", name,
                              (long long)ns[k], i, e, x, y);
            }
        }
        rx_rt_outputs_free(o1);
        rx_rt_outputs_free(o2);
        for (int p = 0; p < np; p++) free(in[p].data);
    }
    rx_rt_module_free(ref);
    rx_rt_module_free(fus);
    rx_rt_ctx_free(ctx);
    rx_module_free(m);
    free(text);
}

static const int64_t NS[] = {1, 3, 7};

/* ---------------------------------------------------------------- cases */

START_TEST(ewise_chain_all_inline)
{
    rx_module *m = load_case("ewise_chain_inline");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 1);
    ck_assert_int_eq(rep.calls, 2);
    ck_assert_int_eq(rep.inlined, 3);
    ck_assert_int_eq(rep.allocated, 0);
    ck_assert_int_eq(rep.kept, 0);
    ck_assert_int_eq(count_kind(m, RX_F_RELAX), 1); /* main only */
    ck_assert_int_eq(count_kind(m, RX_F_TIR), 1);   /* the constituents are gone */
    rx_func *f = rx_module_find(m, "fused_add_exp_mul_relu");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->kind, RX_F_TIR);
    ck_assert_str_eq(pattern_of(f), "Broadcast");
    /* x, y, the constant row, the output; n is a shape variable */
    ck_assert_int_eq(f->ntparams, 4);
    ck_assert_int_eq(nbuffers(f), 4);
    ck_assert_int_eq(f->nsvars, 1);
    ck_assert_str_eq(f->svars[0]->name, "n");
    ck_assert_int_eq(f->svars[0]->kind, RX_SV_SHAPE);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_ALLOC), 0);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_STORE), 1); /* one loop nest, one store */
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_FOR), 2);
    rx_node *calls[4];
    ck_assert_int_eq(main_calls(m, calls, 4), 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_eq(calls[i]->u.call.callee->u.global.fn, f);
        ck_assert_int_eq(calls[i]->nargs, 3);
        ck_assert_int_eq(calls[i]->args[2]->kind, RX_N_CONST);
        ck_assert_int_eq(calls[i]->u.call.ntir_vars, 0);
    }
    rx_module_free(m);
    same_numerics("ewise_chain_inline", NS, 3);
}
END_TEST

START_TEST(reduction_epilogue_alloc)
{
    rx_module *m = load_case("reduce_epilogue_alloc");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 1);
    ck_assert_int_eq(rep.inlined, 0);
    ck_assert_int_eq(rep.allocated, 1);
    ck_assert_int_eq(count_kind(m, RX_F_TIR), 1);
    rx_func *f = rx_module_find(m, "fused_sum_scale");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(pattern_of(f), "Reduction");
    const rx_buffer *al[4];
    ck_assert_int_eq(allocs(f, al, 4), 1);
    ck_assert_int_eq(al[0]->scope, RX_SCOPE_GLOBAL); /* n * 4 bytes: symbolic */
    ck_assert_int_eq(al[0]->ndim, 1);
    ck_assert_int_eq(al[0]->shape[0]->kind, RX_E_VAR);
    ck_assert_ptr_eq(al[0]->shape[0]->u.var, f->svars[0]); /* the fused function's n */
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_BLOCK), 2);
    ck_assert(stmts_load(&f->tbody, al[0]->name)); /* the epilogue reads the workspace */
    ck_assert_int_eq(nbuffers(f), 3);                /* x, the 0-d c0, t */
    ck_assert_int_eq(f->tparams[1].buf->ndim, 0);
    ck_assert(stmts_load(&f->tbody, f->tparams[1].buf->name)); /* K[] became c0[] */
    rx_node *calls[2];
    ck_assert_int_eq(main_calls(m, calls, 2), 1);
    ck_assert_int_eq(calls[0]->nargs, 2);
    ck_assert_int_eq(calls[0]->args[1]->kind, RX_N_CONST);
    rx_module_free(m);
    same_numerics("reduce_epilogue_alloc", NS, 3);
}
END_TEST

START_TEST(softmax_local_allocs)
{
    rx_module *m = load_case("softmax_static_local");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.inlined, 1);   /* exp(x - max) */
    ck_assert_int_eq(rep.allocated, 2); /* max and sum */
    rx_func *f = rx_module_find(m, "fused_softmax");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->nsvars, 0);
    const rx_buffer *al[4];
    ck_assert_int_eq(allocs(f, al, 4), 3); /* max and sum, then rowmax's own o */
    ck_assert_int_eq(al[0]->scope, RX_SCOPE_LOCAL);
    ck_assert_int_eq(al[1]->scope, RX_SCOPE_LOCAL);
    ck_assert_str_eq(al[2]->name, "o_1"); /* renamed apart from the output o */
    ck_assert_str_eq(f->tparams[1].buf->name, "o");
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_BLOCK), 3); /* max, sum, div */
    ck_assert(!stmts_load(&f->tbody, "e"));                  /* no buffer for exp */
    ck_assert_str_eq(pattern_of(f), "Reduction");
    rx_module_free(m);
    int64_t one = 1;
    same_numerics("softmax_static_local", &one, 1);
}
END_TEST

START_TEST(fig09_decode_into_matmul)
{
    rx_module *m = load_case("fig09_decode_q4_mm");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 1);
    ck_assert_int_eq(rep.inlined, 1);
    ck_assert_int_eq(rep.allocated, 0);
    ck_assert_int_eq(count_kind(m, RX_F_TIR), 1);
    ck_assert_ptr_null(rx_module_find(m, "decode_q4"));
    ck_assert_ptr_null(rx_module_find(m, "mm"));
    rx_func *f = rx_module_find(m, "fused_decode_q4_mm");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->kind, RX_F_TIR);
    ck_assert_str_eq(pattern_of(f), "OutputEwiseFusible");
    /* X, Wdata, Wscale, Y as in Figure 9; n symbolic */
    ck_assert_int_eq(f->ntparams, 4);
    ck_assert_str_eq(f->tparams[1].buf->name, "Wdata");
    ck_assert_int_eq(f->tparams[3].buf->dtype, RX_DT_F16);
    ck_assert_int_eq(f->nsvars, 1);
    ck_assert_str_eq(f->svars[0]->name, "n");
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_ALLOC), 0);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_FOR), 3); /* only the matmul's i, j, k */
    ck_assert(stmts_load(&f->tbody, "Wdata") && stmts_load(&f->tbody, "Wscale"));
    rx_node *calls[2];
    ck_assert_int_eq(main_calls(m, calls, 2), 1);
    ck_assert_int_eq(calls[0]->nargs, 3);
    rx_module_free(m);
    same_numerics("fig09_decode_q4_mm", NS, 3);
}
END_TEST

START_TEST(tuple_output_group)
{
    rx_module *m = load_case("tuple_outputs");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_msg(rep.fused == 1, "not fused: %s", rep.why_kept);
    ck_assert_int_eq(rep.inlined, 2);   /* each half of the split; s is an output */
    ck_assert_int_eq(rep.allocated, 0);
    rx_func *f = rx_module_find(m, "fused_split_add_exp");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(nbuffers(f), 3); /* x, then s and e */
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_ALLOC), 0);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_BLOCK), 2); /* add, exp */
    ck_assert(stmts_load(&f->tbody, "s"));                   /* exp reads the output s */
    rx_node *calls[2];
    ck_assert_int_eq(main_calls(m, calls, 2), 1);
    const rx_sinfo *out = calls[0]->u.call.out;
    ck_assert_int_eq(out->kind, RX_SI_TUPLE);
    ck_assert_int_eq(out->nfields, 2);
    ck_assert_int_eq(calls[0]->sinfo->kind, RX_SI_TUPLE);
    rx_module_free(m);
    same_numerics("tuple_outputs", NS, 3);
}
END_TEST

START_TEST(fig08_shape_param_scalar)
{
    rx_module *m = load_case("fig08_shape_param");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 1);
    ck_assert_int_eq(rep.inlined, 1);
    rx_func *f = rx_module_find(m, "fused_add_relu");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->kind, RX_F_TIR);
    /* x, y, out (n * 2,) and the scalar n */
    ck_assert_int_eq(f->ntparams, 4);
    ck_assert_ptr_nonnull(f->tparams[3].var);
    ck_assert_str_eq(f->tparams[3].var->name, "n");
    ck_assert_int_eq(f->tparams[3].var->kind, RX_SV_PARAM);
    ck_assert(rx_expr_uses_var(f->tparams[0].buf->shape[0], f->tparams[3].var));
    rx_node *calls[4];
    ck_assert_int_eq(main_calls(m, calls, 4), 2); /* flatten, then the fused call */
    ck_assert_ptr_eq(calls[1]->u.call.callee->u.global.fn, f);
    ck_assert_int_eq(calls[1]->nargs, 2);
    ck_assert_int_eq(calls[1]->u.call.ntir_vars, 1);
    ck_assert_int_eq(calls[1]->u.call.tir_vars[0]->kind, RX_E_VAR);
    ck_assert_str_eq(calls[1]->u.call.tir_vars[0]->u.var->name, "n");
    ck_assert_ptr_eq(calls[1]->u.call.tir_vars[0]->u.var, rx_module_find(m, "main")->svars[0]);
    rx_module_free(m);
    same_numerics("fig08_shape_param", NS, 3);
}
END_TEST

/* An inlined reshape's floor divisions and remainders vanish with the loops' symbolic
 * ranges known (fuse_tir_simplify.c): x[0, i, j * 16 + k] in the matmul's loads. */
START_TEST(reshape_indices_simplified)
{
    rx_module *m = load_case("reshape_into_matmul");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 1);
    ck_assert_int_eq(rep.inlined, 1);
    rx_func *f = rx_module_find(m, "fused_reshape_matmul");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_ALLOC), 0);
    ck_assert_int_eq(count_stmts(&f->tbody, RX_S_FOR), 5);
    ck_assert_int_eq(stmts_expr_kind(&f->tbody, RX_E_FLOORDIV), 0);
    ck_assert_int_eq(stmts_expr_kind(&f->tbody, RX_E_FLOORMOD), 0);
    ck_assert_int_eq(stmts_expr_kind(&f->tbody, RX_E_LOAD), 3); /* y, x, w */
    rx_module_free(m);
    same_numerics("reshape_into_matmul", NS, 3);
}
END_TEST

/* The Llama model of tests/models after the real pipeline's FuseOps: every primitive
 * function merges, every call site becomes call_tir, the result generates C. */
START_TEST(llama_after_fuse_ops)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/models/llama_tiny.json", RX_SOURCE_DIR);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    ck_assert(fread(text, 1, (size_t)len, fp) == (size_t)len);
    fclose(fp);
    rx_build_opts o = {.target = "cpu", .opt_level = 2};
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    ck_assert_msg(rx_build_module(text, (size_t)len, &o, "fuse_ops", &m, NULL, &d), "%s", diags_str(&d));
    int prims = 0, sites = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        rx_func *f = m->funcs[i];
        if (f->kind != RX_F_RELAX) continue;
        if (rx_attr_map_get(f->attrs, "primitive")) {
            prims++;
            continue;
        }
        for (int b = 0; b < f->body->nblocks; b++)
            for (int k = 0; k < f->body->blocks[b]->nbindings; k++)
                sites += f->body->blocks[b]->bindings[k].value->call_kind == RX_CALL_FN &&
                         f->body->blocks[b]->bindings[k].value->kind == RX_N_CALL;
    }
    ck_assert_int_gt(prims, 3);
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_msg(rep.kept == 0, "kept: %s", rep.why_kept);
    ck_assert_int_eq(rep.fused, prims);
    ck_assert_int_eq(rep.calls, sites);
    ck_assert_int_gt(rep.inlined, prims); /* reshapes, permutes, elementwise epilogues */
    ck_assert_int_eq(count_kind(m, RX_F_RELAX), 2); /* prefill, decode */
    rx_sb c = {0};
    ck_assert_msg(rx_codegen_c(m, &c, &d), "codegen: %s", diags_str(&d));
    rx_sb_free(&c);
    rx_module_free(m);
    rx_diags_free(&d);
    free(text);
}
END_TEST

/* A primitive function FuseTIR cannot merge (an op call in its body) stays a graph
 * function without the mark; a module without primitive functions is unchanged. */
START_TEST(unfusable_kept)
{
    rx_module *m = load_quoted(
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':['n',4],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'dataflow':true,'bindings':[{'var':'y','value':{'call':'@p','args':['x']}}]}],"
        "'result':'y'}},"
        "'p':{'kind':'relax','attrs':{'primitive':true},"
        "'params':[{'name':'x','type':{'tensor':{'shape':['n',4],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'dataflow':true,'bindings':[{'var':'a','value':{'op':'exp','args':['x']}}]}],"
        "'result':'a'}}}}");
    rx_fuse_tir_report rep = fuse(m);
    ck_assert_int_eq(rep.fused, 0);
    ck_assert_int_eq(rep.kept, 1);
    rx_func *p = rx_module_find(m, "p");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_null(rx_attr_map_get(p->attrs, "primitive"));
    rx_module_free(m);

    /* used as a value as well as called: left alone */
    char *fig = case_text("fig09_decode_q4_mm");
    const char *at = strstr(fig, "\"bindings\": [");
    ck_assert_ptr_nonnull(at);
    at += strlen("\"bindings\": [");
    rx_sb esc = {0};
    rx_sb_putn(&esc, fig, (size_t)(at - fig));
    rx_sb_puts(&esc, "{\"var\": \"fv\", \"value\": \"@fused_decode_q4_mm\"},");
    rx_sb_puts(&esc, at);
    rx_module *m2 = load_text(rx_sb_str(&esc));
    rx_fuse_tir_report r1 = fuse(m2);
    ck_assert_int_eq(r1.fused, 0);
    ck_assert_int_eq(r1.kept, 1);
    ck_assert_str_eq(r1.why_kept, "used as a value");
    ck_assert_int_eq(count_kind(m2, RX_F_TIR), 2);
    rx_module_free(m2);
    rx_sb_free(&esc);
    free(fig);

    rx_module *plain = load_case("fig09_decode_q4_mm");
    rx_func *prim = rx_module_find(plain, "fused_decode_q4_mm");
    prim->attrs = NULL; /* not primitive: nothing to do */
    rx_fuse_tir_report r2 = fuse(plain);
    ck_assert_int_eq(r2.fused + r2.kept + r2.calls, 0);
    ck_assert_int_eq(count_kind(plain, RX_F_TIR), 2);
    rx_module_free(plain);
}
END_TEST

static Suite *fuse_tir_suite(void)
{
    Suite *s = suite_create("fuse_tir");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ewise_chain_all_inline);
    tcase_add_test(tc, reduction_epilogue_alloc);
    tcase_add_test(tc, softmax_local_allocs);
    tcase_add_test(tc, fig09_decode_into_matmul);
    tcase_add_test(tc, tuple_output_group);
    tcase_add_test(tc, fig08_shape_param_scalar);
    tcase_add_test(tc, reshape_indices_simplified);
    tcase_add_test(tc, llama_after_fuse_ops);
    tcase_add_test(tc, unfusable_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(fuse_tir_suite()); }
