/*
 * test_fuse_ops.c — FuseOps (compiler/pass/fuse_ops.c, paper Algorithm 2, Figure 8).
 *
 * Every case runs the pass, then runs it again and checks the module did not change
 * (idempotence: primitive functions are never re-fused). Groups are checked on a
 * one-line summary of the graph functions (`var=@callee(args)` per binding) and,
 * for Figure 8 and Figure 9, by structural comparison with the expected module.
 *
 * Cases: Figure 8 (the extra Shape parameter), an elementwise chain, softmax written as
 * five ops (reductions chained through elementwise ops: one group), a reduction with
 * an elementwise epilogue, matmul + bias + relu (library lowering off), matmul then a
 * transpose (not an epilogue), a diamond, Figure 9 (user-written decode_q4 into the
 * matmul), what must not fuse (an Opaque kernel, a value used by another block, a
 * value used by an op call, across an if), tir_vars over a variable the inputs do not
 * carry, the group size bound, names (binding order, uniqueness, length), sharing of
 * identical groups, the recompute rule (an expensive producer read over a larger space
 * or by a multi-pass reduction stays materialized; so does a transpose read by a
 * multi-pass reduction) and the tiny Llama (prefill and decode).
 */
#include "pass_test.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rx_check.h"
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/text.h"

/* ---------------------------------------------------------------- helpers */

static void ok_or_fail(bool ok, const char *what, rx_diags *d)
{
    ck_assert_msg(ok, "%s: %s", what, diags_str(d));
}

/* Runs fuse_ops on m twice: the second run must change nothing. */
static void fuse(rx_module *m)
{
    rx_diags d;
    rx_diags_init(&d);
    ok_or_fail((rx_pass_fuse_ops(m, &d) && rx_deduce_module(m, &d)), "fuse_ops", &d);
    uint8_t h1[32], h2[32];
    rx_struct_hash(m, "", h1);
    int nf = m->nfuncs;
    ok_or_fail((rx_pass_fuse_ops(m, &d) && rx_deduce_module(m, &d)), "fuse_ops (second run)", &d);
    rx_struct_hash(m, "", h2);
    ck_assert_int_eq(m->nfuncs, nf);
    ck_assert_msg(!memcmp(h1, h2, sizeof h1), "a second fuse_ops run changed the module");
    rx_diags_free(&d);
}

/* legalize (when asked) + analysis + fuse_ops on relax-json written with ' for ". */
static rx_module *run_quoted(const char *text, bool legalize)
{
    rx_module *m = load_quoted(text);
    rx_diags d;
    rx_diags_init(&d);
    if (legalize) ok_or_fail((rx_pass_legalize(m, &d) && rx_deduce_module(m, &d)), "legalize", &d);
    ok_or_fail(rx_pass_annotate_patterns(m, &d), "analysis", &d);
    rx_diags_free(&d);
    fuse(m);
    return m;
}

static rx_module *load_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", RX_SOURCE_DIR, rel);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read_file(path, NULL, &d);
    ck_assert_msg(m != NULL, "read %s: %s", rel, diags_str(&d));
    ok_or_fail(rx_deduce_module(m, &d), rel, &d);
    rx_diags_free(&d);
    return m;
}

static void put_arg(rx_sb *b, const rx_node *a)
{
    switch (a->kind) {
    case RX_N_VAR: rx_sb_puts(b, a->u.var.name); break;
    case RX_N_CONST: rx_sb_puts(b, "const"); break;
    case RX_N_SHAPE:
        rx_sb_puts(b, "shape[");
        for (int i = 0; i < a->u.shape.ndim; i++) {
            if (i) rx_sb_puts(b, ", ");
            rx_expr_print(a->u.shape.dims[i], b);
        }
        rx_sb_putc(b, ']');
        break;
    case RX_N_TUPLE:
        rx_sb_putc(b, '(');
        for (int i = 0; i < a->nargs; i++) {
            if (i) rx_sb_puts(b, ", ");
            put_arg(b, a->args[i]);
        }
        rx_sb_putc(b, ')');
        break;
    default: rx_sb_puts(b, "?"); break;
    }
}

static void put_seq(rx_sb *b, const rx_seq *s);

static void put_value(rx_sb *b, const rx_node *v)
{
    if (v->kind == RX_N_CALL) {
        switch (v->call_kind) {
        case RX_CALL_TIR: rx_sb_printf(b, "tir:@%s(", v->u.call.callee->u.global.name); break;
        case RX_CALL_FN: rx_sb_printf(b, "@%s(", v->u.call.callee->u.global.name); break;
        case RX_CALL_OP: rx_sb_printf(b, "op:%s(", v->u.call.op->name); break;
        default: rx_sb_printf(b, "lib:%s(", v->u.call.lib); break;
        }
        for (int i = 0; i < v->nargs; i++) {
            if (i) rx_sb_puts(b, ", ");
            put_arg(b, v->args[i]);
        }
        rx_sb_putc(b, ')');
    } else if (v->kind == RX_N_IF) {
        rx_sb_puts(b, "if{");
        put_seq(b, v->u.if_.then_body);
        rx_sb_puts(b, "}else{");
        put_seq(b, v->u.if_.else_body);
        rx_sb_putc(b, '}');
    } else {
        put_arg(b, v);
    }
}

/* "a=tir:@exp(x); b=@fused_f_g(a, shape[n]) | c=... -> c": blocks split by " | ". */
static void put_seq(rx_sb *b, const rx_seq *s)
{
    for (int i = 0; i < s->nblocks; i++) {
        if (i) rx_sb_puts(b, " | ");
        for (int j = 0; j < s->blocks[i]->nbindings; j++) {
            const rx_binding *bd = &s->blocks[i]->bindings[j];
            if (j) rx_sb_puts(b, "; ");
            rx_sb_printf(b, "%s=", bd->var->u.var.name);
            put_value(b, bd->value);
        }
    }
    rx_sb_puts(b, " -> ");
    put_arg(b, s->result);
}

/* The summary of graph function fn (static buffer: one at a time per assert). */
static const char *summary(const rx_module *m, const char *fn)
{
    static char buf[4096];
    const rx_func *f = rx_module_find(m, fn);
    ck_assert_msg(f != NULL && f->kind == RX_F_RELAX, "no graph function %s", fn);
    rx_sb b = {0};
    put_seq(&b, f->body);
    snprintf(buf, sizeof buf, "%s", rx_sb_str(&b));
    rx_sb_free(&b);
    return buf;
}

/* The parameters of fn as "x: R.Tensor(...), s: R.Shape([n])". */
static const char *signature(const rx_module *m, const char *fn)
{
    static char buf[2048];
    const rx_func *f = rx_module_find(m, fn);
    ck_assert_msg(f != NULL, "no function %s", fn);
    rx_sb b = {0};
    for (int i = 0; i < f->nparams; i++) {
        rx_sb_printf(&b, "%s%s: ", i ? ", " : "", f->params[i]->u.var.name);
        rx_sinfo_print(f->params[i]->sinfo, &b);
    }
    snprintf(buf, sizeof buf, "%s", rx_sb_str(&b));
    rx_sb_free(&b);
    return buf;
}

static int count_primitive(const rx_module *m)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_attr *p = rx_attr_map_get(m->funcs[i]->attrs, "primitive");
        n += p && p->kind == RX_A_BOOL && p->u.b;
    }
    return n;
}

static void assert_struct_equal(const rx_module *got, const rx_module *want)
{
    rx_sb why = {0}, txt = {0};
    rx_print_module(got, &txt);
    bool eq = rx_struct_equal(got, want, &why);
    ck_assert_msg(eq, "%s\n%s", rx_sb_str(&why), rx_sb_str(&txt));
    rx_sb_free(&why);
    rx_sb_free(&txt);
}

/* ---------------------------------------------------------------- module text */

#define T(shape) "{'tensor':{'shape':[" shape "],'dtype':'f32'}}"
#define P(n, shape) "{'name':'" n "','type':" T(shape) "}"
#define OP(v, op, args) "{'var':'" v "','value':{'op':'" op "','args':[" args "]}}"
#define OPA(v, op, args, attrs) \
    "{'var':'" v "','value':{'op':'" op "','args':[" args "],'attrs':{" attrs "}}}"
#define CT(v, f, args, out) "{'var':'" v "','value':{'call_tir':'@" f "','args':[" args "],'out':" T(out) "}}"
#define DF(bindings) "{'dataflow':true,'bindings':[" bindings "]}"
#define FN(name, params, blocks, result) \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[" blocks "],'result':" result "}}"
#define MAIN1(params, bindings, result) FN("main", params, DF(bindings), "'" result "'")
#define MOD(fns) "{'format':'relax-json','version':1,'functions':{" fns "}}"
#define BUF(n, shape) "{'name':'" n "','buffer':{'shape':[" shape "],'dtype':'f32'}}"
#define TIR(name, pat, params, body) \
    "'" name "':{'kind':'tir','attrs':{'compute_pattern':'" pat "'},'params':[" params "],'body':[" body "]}"
#define GRID1(ext, store, value) "{'grid':['i'],'extents':[" ext "],'body':{'store':'" store "','value':'" value "'}}"

#define KEEP "'axis':[1],'keepdims':true"

/* Figure 8's loop functions on a 1-D tensor of m elements. */
#define FIG8_TIR                                                                      \
    TIR("add", "ElementWise", BUF("A", "'m'") "," BUF("B", "'m'") "," BUF("C", "'m'"),  \
        GRID1("'m'", "C[i]", "A[i] + B[i]")) ","                                          \
    TIR("relu", "ElementWise", BUF("X", "'m'") "," BUF("Y", "'m'"),                      \
        GRID1("'m'", "Y[i]", "max(X[i], 0.0)"))

/* ---------------------------------------------------------------- Figure 8 */

START_TEST(figure8_extra_shape_param)
{
    /* lv0 = flatten(x) stays an op (isolated pass), so the group {add, relu} sees only
     * a (2 * n,) tensor: n comes in a Shape parameter, as in the paper. */
    rx_module *m = run_quoted(MOD(
        MAIN1(P("x", "'n',2"),
              OP("lv0", "flatten", "'x'") ","
              CT("lv1", "add", "'lv0','lv0'", "'2 * n'") ","
              CT("lv2", "relu", "'lv1'", "'2 * n'"), "lv2") ","
        FIG8_TIR), false);
    ck_assert_str_eq(summary(m, "main"), "lv0=op:flatten(x); lv2=@fused_add_relu(lv0, shape[n]) -> lv2");
    ck_assert_str_eq(signature(m, "fused_add_relu"),
                     "lv0: R.Tensor((n * 2,), \"f32\"), s: R.Shape([n])");
    ck_assert_str_eq(summary(m, "fused_add_relu"),
                     "lv1=tir:@add(lv0, lv0); lv2=tir:@relu(lv1) -> lv2");
    rx_module *want = load_quoted(MOD(
        "'main':{'kind':'relax','params':[" P("x", "'n',2") "],'body':{'blocks':[" DF(
            OP("a", "flatten", "'x'") ","
            "{'var':'b','value':{'call':'@fused_add_relu','args':['a',{'shape':['n']}]}}")
        "],'result':'b'}},"
        "'fused_add_relu':{'kind':'relax','attrs':{'primitive':true},'params':["
            P("p", "'n * 2'") ",{'name':'s','type':{'shape':{'values':['n']}}}],"
            "'body':{'blocks':[" DF(CT("u", "add", "'p','p'", "'2 * n'") ","
                                    CT("v", "relu", "'u'", "'2 * n'"))
            "],'result':'v'}}," FIG8_TIR));
    assert_struct_equal(m, want);
    rx_module_free(want);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- groups */

START_TEST(elementwise_chain)
{
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',4") "," P("y", "'n',4"),
        OP("a", "exp", "'x'") "," OP("b", "add", "'a','y'") "," OP("c", "nn.relu", "'b'"), "c")), true);
    ck_assert_str_eq(summary(m, "main"), "c=@fused_exp_add_nn_relu(x, y) -> c");
    ck_assert_str_eq(summary(m, "fused_exp_add_nn_relu"),
                     "a=tir:@exp(x); b=tir:@add(a, y); c=tir:@nn_relu(b) -> c");
    ck_assert_str_eq(signature(m, "fused_exp_add_nn_relu"),
                     "x: R.Tensor((n, 4), \"f32\"), y: R.Tensor((n, 4), \"f32\")");
    ck_assert_int_eq(count_primitive(m), 1);
    /* the caller's result keeps its symbolic annotation through the call */
    char *s = rx_sinfo_str(m->arena, rx_module_find(m, "main")->ret);
    ck_assert_str_eq(s, "R.Tensor((n, 4), \"f32\")");
    rx_module_free(m);
}
END_TEST

START_TEST(softmax_pieces_one_group)
{
    /* max and sum are Reductions, the rest elementwise/broadcast: the reductions chain
     * through elementwise ops into one group, x the only input */
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',8"),
        OPA("mx", "max", "'x'", KEEP) "," OP("d", "subtract", "'x','mx'") ","
        OP("e", "exp", "'d'") "," OPA("s", "sum", "'e'", KEEP) "," OP("y", "divide", "'e','s'"),
        "y")), true);
    ck_assert_str_eq(summary(m, "main"), "y=@fused_max_subtract_exp_sum_divide(x) -> y");
    ck_assert_str_eq(summary(m, "fused_max_subtract_exp_sum_divide"),
                     "mx=tir:@max(x); d=tir:@subtract(x, mx); e=tir:@exp(d); s=tir:@sum(e); "
                     "y=tir:@divide(e, s) -> y");
    rx_module_free(m);
}
END_TEST

START_TEST(reduction_epilogue)
{
    /* sum, then two elementwise ops on its (n, 1) result; x * 2 stays outside (it feeds
     * the reduction through a value the function also returns) */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "'n',8"), DF(
        OPA("s", "sum", "'x'", KEEP) "," OP("r", "sqrt", "'s'") "," OP("y", "negative", "'r'") ","
        OP("z", "multiply", "'x','x'") "," OPA("t", "sum", "'z'", KEEP) "," OP("u", "exp", "'t'")),
        "{'tuple':['y','z','u']}")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "y=@fused_sum_sqrt_negative(x); z=tir:@multiply(x, x); u=@fused_sum_exp(z) "
                     "-> (y, z, u)");
    rx_module_free(m);
}
END_TEST

START_TEST(matmul_bias_relu)
{
    /* library lowering off: the generated matmul (OutputEwiseFusible) takes the bias add
     * (Broadcast, but reading the matmul's value at its own shape) and the relu */
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',16") "," P("w", "16,8") "," P("b", "8"),
        OP("h", "matmul", "'x','w'") "," OP("s", "add", "'h','b'") "," OP("y", "nn.relu", "'s'"),
        "y")), true);
    rx_func *mm = rx_module_find(m, "matmul");
    ck_assert_str_eq(rx_attr_map_get(mm->attrs, "compute_pattern")->u.s, "OutputEwiseFusible");
    ck_assert_str_eq(rx_attr_map_get(rx_module_find(m, "add")->attrs, "compute_pattern")->u.s,
                     "Broadcast");
    ck_assert_str_eq(summary(m, "main"), "y=@fused_matmul_add_nn_relu(x, w, b) -> y");
    ck_assert_str_eq(signature(m, "fused_matmul_add_nn_relu"),
                     "x: R.Tensor((n, 16), \"f32\"), w: R.Tensor((16, 8), \"f32\"), "
                     "b: R.Tensor((8,), \"f32\")");
    rx_module_free(m);
}
END_TEST

START_TEST(matmul_then_transpose_not_epilogue)
{
    /* an Injective consumer is no epilogue of a matmul, and the transpose's only
     * consumer is not a matmul: nothing fuses */
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',16") "," P("w", "16,8"),
        OP("h", "matmul", "'x','w'") "," OP("t", "permute_dims", "'h'"), "t")), true);
    ck_assert_str_eq(summary(m, "main"), "h=tir:@matmul(x, w); t=tir:@permute_dims(h) -> t");
    ck_assert_int_eq(count_primitive(m), 0);
    rx_module_free(m);
}
END_TEST

START_TEST(matmul_epilogue_edges)
{
    /* an add that broadcasts the matmul's value to a larger shape is no epilogue (the
     * edge is Broadcast, not ElementWise) */
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',16") "," P("w", "16,8") "," P("z", "4,'n',8"),
        OP("h", "matmul", "'x','w'") "," OP("y", "add", "'h','z'"), "y")), true);
    ck_assert_str_eq(summary(m, "main"), "h=tir:@matmul(x, w); y=tir:@add(h, z) -> y");
    rx_module_free(m);
    /* p feeds the matmul's operand and its epilogue: the matmul takes the add, but p
     * cannot join through the operand edge (and has two consumers, so no prologue) */
    m = run_quoted(MOD(MAIN1(P("x", "'n',16") "," P("w", "16,16"),
        OP("p", "exp", "'x'") "," OP("h", "matmul", "'p','w'") "," OP("y", "add", "'h','p'"), "y")), true);
    ck_assert_str_eq(summary(m, "main"), "p=tir:@exp(x); y=@fused_matmul_add(p, w) -> y");
    rx_module_free(m);
    /* a reduction never joins a matmul's group (one anchor per group), and p, whose
     * paths to its post-dominator y run through that reduction, stays out too */
    m = run_quoted(MOD(MAIN1(P("x", "'n',16") "," P("z", "'n',8") "," P("w", "8,16"),
        OP("p", "exp", "'x'") "," OPA("s", "sum", "'p'", KEEP) "," OP("h", "matmul", "'z','w'") ","
        OP("t", "add", "'h','s'") "," OP("y", "add", "'t','p'"), "y")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "p=tir:@exp(x); s=tir:@sum(p); y=@fused_matmul_add_add_1(z, w, s, p) -> y");
    rx_module_free(m);
    /* an Injective producer joins no group holding a matmul through its epilogue: the
     * transpose stays out (the matmul takes the add) */
    m = run_quoted(MOD(MAIN1(P("q", "16,'n'") "," P("z", "'n',8") "," P("w", "8,16"),
        OP("t", "permute_dims", "'q'") "," OP("h", "matmul", "'z','w'") "," OP("y", "add", "'h','t'"),
        "y")), true);
    ck_assert_str_eq(summary(m, "main"), "t=tir:@permute_dims(q); y=@fused_matmul_add(z, w, t) -> y");
    rx_module_free(m);
}
END_TEST

START_TEST(diamond)
{
    /* p -> a, p -> b, add(a, b): p's post-dominator is the add; all four fuse */
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'n',4"),
        OP("p", "exp", "'x'") "," OP("a", "nn.relu", "'p'") "," OP("b", "negative", "'p'") ","
        OP("c", "add", "'a','b'"), "c")), true);
    ck_assert_str_eq(summary(m, "main"), "c=@fused_exp_nn_relu_negative_add(x) -> c");
    ck_assert_str_eq(summary(m, "fused_exp_nn_relu_negative_add"),
                     "p=tir:@exp(x); a=tir:@nn_relu(p); b=tir:@negative(p); c=tir:@add(a, b) -> c");
    rx_module_free(m);
}
END_TEST

START_TEST(figure9_decode_q4_into_matmul)
{
    /* the user-written decode_q4 (Injective by Algorithm 1) joins the matmul as its
     * prologue; the golden of tests/passes/fuse_ops is the expected module */
    rx_module *m = load_file("tests/passes/fuse_ops/fig09_decode_q4_mm.in.json");
    rx_diags d;
    rx_diags_init(&d);
    ok_or_fail(rx_pass_annotate_patterns(m, &d), "analysis", &d);
    rx_diags_free(&d);
    fuse(m);
    ck_assert_str_eq(summary(m, "main"), "lv0=@fused_decode_q4_mm(Wdata, Wscale, x) -> lv0");
    ck_assert_str_eq(summary(m, "fused_decode_q4_mm"),
                     "W=tir:@decode_q4(Wdata, Wscale); lv0=tir:@mm(x, W) -> lv0");
    /* the whole module, in the golden's text form (written as relax-json, read back) */
    rx_diags_init(&d);
    ok_or_fail(rx_deduce_module(m, &d), "deduce", &d);
    rx_sb js = {0}, text = {0}, want = {0};
    rx_json_write(m, RX_JSON_DEDUCED, &js);
    rx_module *back = rx_json_read(rx_sb_str(&js), js.n, NULL, &d);
    ck_assert_msg(back != NULL, "%s", diags_str(&d));
    rx_diags_free(&d);
    rx_print_module(back, &text);
    char path[512];
    snprintf(path, sizeof path, "%s/tests/passes/fuse_ops/fig09_decode_q4_mm.out.txt", RX_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(&want, buf, n);
    fclose(f);
    ck_assert_str_eq(rx_sb_str(&text), rx_sb_str(&want));
    rx_sb_free(&js);
    rx_sb_free(&text);
    rx_sb_free(&want);
    rx_module_free(back);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- what must not fuse */

START_TEST(opaque_kernel_blocks)
{
    rx_module *m = run_quoted(MOD(MAIN1(P("x", "'m'"),
        CT("a", "relu", "'x'", "'m'") "," CT("b", "opq", "'a'", "'m'") "," CT("c", "relu", "'b'", "'m'"),
        "c") ","
        TIR("relu", "ElementWise", BUF("X", "'m'") "," BUF("Y", "'m'"), GRID1("'m'", "Y[i]", "max(X[i], 0.0)")) ","
        TIR("opq", "Opaque", BUF("X", "'m'") "," BUF("Y", "'m'"), GRID1("'m'", "Y[i]", "X[i]"))), false);
    ck_assert_str_eq(summary(m, "main"), "a=tir:@relu(x); b=tir:@opq(a); c=tir:@relu(b) -> c");
    ck_assert_int_eq(count_primitive(m), 0);
    rx_module_free(m);
    /* an Opaque kernel on one side of a diamond: a's post-dominator is the add, but the
     * path through opq is not fusible, so nothing fuses */
    m = run_quoted(MOD(MAIN1(P("x", "'m'"),
        CT("a", "relu", "'x'", "'m'") "," CT("b", "opq", "'a'", "'m'") "," CT("d", "add", "'a','b'", "'m'"),
        "d") "," FIG8_TIR ","
        TIR("opq", "Opaque", BUF("X", "'m'") "," BUF("Y", "'m'"), GRID1("'m'", "Y[i]", "X[i]"))), false);
    ck_assert_str_eq(summary(m, "main"), "a=tir:@relu(x); b=tir:@opq(a); d=tir:@add(a, b) -> d");
    ck_assert_int_eq(count_primitive(m), 0);
    rx_module_free(m);
}
END_TEST

START_TEST(used_by_another_block)
{
    /* a and b feed block 2: each is external, so nothing in block 1 fuses (the same
     * three ops in one block fuse: the diamond case) */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "'n',4"),
        DF(OP("a", "exp", "'x'") "," OP("b", "nn.relu", "'a'")) "," DF(OP("c", "add", "'a','b'")),
        "'c'")), true);
    ck_assert_str_eq(summary(m, "main"), "a=tir:@exp(x); b=tir:@nn_relu(a) | c=tir:@add(a, b) -> c");
    ck_assert_int_eq(count_primitive(m), 0);
    rx_module_free(m);
}
END_TEST

START_TEST(used_by_op_call)
{
    /* unique stays an op call: a is external and stays out; b and c still fuse */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "'n'"),
        DF(OP("a", "exp", "'x'") "," OP("b", "nn.relu", "'a'") "," OP("c", "negative", "'b'")) ","
        "{'bindings':[" OP("u", "unique", "'a'") "]}", "{'tuple':['c','u']}")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "a=tir:@exp(x); c=@fused_nn_relu_negative(a) | u=op:unique(a) -> (c, u)");
    rx_module_free(m);
}
END_TEST

START_TEST(not_across_if)
{
    /* a is used inside the then branch: no fusion across the if; the branch's own
     * dataflow block fuses */
    rx_module *m = run_quoted(MOD(FN("main",
        P("x", "'n',4") ",{'name':'c','type':{'tensor':{'shape':[],'dtype':'bool'}}}",
        DF(OP("a", "exp", "'x'")) ",{'bindings':[{'var':'r','value':{'if':'c','then':{'blocks':["
            DF(OP("t1", "nn.relu", "'a'") "," OP("t2", "negative", "'t1'")) "],'result':'t2'},"
            "'else':{'blocks':[],'result':'a'}}}]}", "'r'")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "a=tir:@exp(x) | r=if{t2=@fused_nn_relu_negative(a) -> t2}else{ -> a} -> r");
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- Figure 8 via tir_vars */

START_TEST(tir_vars_need_shape_param)
{
    /* cat (b, c + 1, 4) is returned, so it stays out; permute_dims of it gets tir_vars [c]
     * from legalize; the group {permute_dims, exp} has only cat as input, whose
     * annotation carries c only under c + 1: c comes in a Shape parameter */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "'b','c',4") "," P("y", "'b',1,4"),
        DF(OPA("cat", "concat", "{'tuple':['x','y']}", "'axis':1") ","
           OPA("t", "permute_dims", "'cat'", "'axes':[0,2,1]") "," OP("u", "exp", "'t'")),
        "{'tuple':['cat','u']}")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "cat=tir:@concat(x, y); u=@fused_permute_dims_exp(cat, shape[c]) -> (cat, u)");
    ck_assert_str_eq(signature(m, "fused_permute_dims_exp"),
                     "cat: R.Tensor((b, c + 1, 4), \"f32\"), s: R.Shape([c])");
    const rx_func *f = rx_module_find(m, "fused_permute_dims_exp");
    ck_assert_int_eq(f->nsvars, 2); /* b (a whole dim of cat), then c */
    ck_assert_str_eq(f->svars[0]->name, "b");
    ck_assert_str_eq(f->svars[1]->name, "c");
    const rx_node *pcall = f->body->blocks[0]->bindings[0].value;
    ck_assert_int_eq(pcall->u.call.ntir_vars, 1);
    ck_assert(pcall->u.call.tir_vars[0]->kind == RX_E_VAR && pcall->u.call.tir_vars[0]->u.var == f->svars[1]);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- bounds and names */

START_TEST(group_size_bound)
{
    /* a chain of 70 exp: a group of 64 (the bound), then one of 6 */
    rx_sb t = {0};
    rx_sb_puts(&t, "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax',"
                   "'params':[" P("x", "'n'") "],'body':{'blocks':[{'dataflow':true,'bindings':[");
    for (int i = 0; i < 70; i++) {
        char prev[16];
        snprintf(prev, sizeof prev, i ? "v%d" : "x", i - 1);
        rx_sb_printf(&t, "%s{'var':'v%d','value':{'op':'exp','args':['%s']}}", i ? "," : "", i, prev);
    }
    rx_sb_puts(&t, "]}],'result':'v69'}}}}");
    rx_module *m = run_quoted(rx_sb_str(&t), true);
    rx_sb_free(&t);
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    ck_assert_int_eq(b->nbindings, 2);
    const rx_func *g1 = b->bindings[0].value->u.call.callee->u.global.fn;
    const rx_func *g2 = b->bindings[1].value->u.call.callee->u.global.fn;
    ck_assert_int_eq(g1->body->blocks[0]->nbindings, 64);
    ck_assert_int_eq(g2->body->blocks[0]->nbindings, 6);
    ck_assert_str_eq(b->bindings[0].var->u.var.name, "v63");
    /* names: truncated to 64 characters; the short one is distinct */
    ck_assert_int_le((int)strlen(g1->name), 64);
    ck_assert(strncmp(g1->name, "fused_exp_exp_", 14) == 0);
    ck_assert_str_eq(g2->name, "fused_exp_exp_exp_exp_exp_exp");
    rx_module_free(m);
}
END_TEST

START_TEST(argument_limit)
{
    /* s_i = s_{i-1} + x_i over 33 inputs of shape (n,): unlimited, one group of 32 adds
     * (34 buffers); under vulkan's limit (31 buffers, 4 bytes each, n 8 bytes, 128 in
     * all) the first group takes s1..s28 (x0..x28, the output and n: 30 * 4 + 8 = 128) */
    rx_sb t = {0};
    rx_sb_puts(&t,
               "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax','params':[");
    for (int i = 0; i < 33; i++) rx_sb_printf(&t, "%s" P("x%d", "'n'"), i ? "," : "", i);
    rx_sb_puts(&t, "],'body':{'blocks':[{'dataflow':true,'bindings':[");
    for (int i = 1; i < 33; i++) {
        char prev[16];
        snprintf(prev, sizeof prev, i > 1 ? "s%d" : "x0", i - 1);
        rx_sb_printf(&t, "%s{'var':'s%d','value':{'op':'add','args':['%s','x%d']}}",
                     i > 1 ? "," : "", i, prev, i);
    }
    rx_sb_puts(&t, "]}],'result':'s32'}}}}");
    for (int limited = 0; limited < 2; limited++) {
        rx_module *m = load_quoted(rx_sb_str(&t));
        rx_diags d;
        rx_diags_init(&d);
        ok_or_fail(rx_pass_legalize(m, &d) && rx_deduce_module(m, &d), "legalize", &d);
        ok_or_fail(rx_pass_annotate_patterns(m, &d), "analysis", &d);
        rx_fuse_limit lim = {31, 4, 8, 128};
        ok_or_fail(rx_pass_fuse_ops_limited(m, limited ? &lim : NULL, &d) &&
                       rx_deduce_module(m, &d),
                   "fuse_ops", &d);
        rx_diags_free(&d);
        const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
        const rx_func *g1 = b->bindings[0].value->u.call.callee->u.global.fn;
        ck_assert_int_eq(b->nbindings, limited ? 2 : 1);
        ck_assert_int_eq(g1->body->blocks[0]->nbindings, limited ? 28 : 32);
        ck_assert_int_eq(g1->nparams, limited ? 29 : 33);
        rx_module_free(m);
    }
    /* 32 bytes: 5 inputs, the output and n (6 * 4 + 8); a sixth input would be 40 */
    rx_module *m = load_quoted(rx_sb_str(&t));
    rx_diags d;
    rx_diags_init(&d);
    ok_or_fail(rx_pass_legalize(m, &d) && rx_deduce_module(m, &d) &&
                   rx_pass_annotate_patterns(m, &d),
               "legalize", &d);
    rx_fuse_limit small = {31, 4, 8, 32};
    ok_or_fail(rx_pass_fuse_ops_limited(m, &small, &d), "fuse_ops", &d);
    rx_diags_free(&d);
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    ck_assert_int_eq(b->bindings[0].value->u.call.callee->u.global.fn->nparams, 5);
    rx_module_free(m);
    rx_sb_free(&t);
}
END_TEST

START_TEST(names_unique_and_sharing)
{
    /* f and h have the same group (shared function); g's add reads x twice: the same
     * loop functions, another function, named with a suffix */
#define ADD_RELU(name, a2) FN(name, P("x", "'n',4") "," P("y", "'n',4"), \
        DF(OP("a", "add", "'x'," a2) "," OP("r", "nn.relu", "'a'")), "'r'")
    rx_module *m = run_quoted(MOD(ADD_RELU("f", "'y'") "," ADD_RELU("g", "'x'") "," ADD_RELU("h", "'y'")),
                              true);
#undef ADD_RELU
    ck_assert_str_eq(summary(m, "f"), "r=@fused_add_nn_relu(x, y) -> r");
    ck_assert_str_eq(summary(m, "g"), "r=@fused_add_nn_relu_1(x) -> r");
    ck_assert_str_eq(summary(m, "h"), "r=@fused_add_nn_relu(x, y) -> r");
    ck_assert_int_eq(count_primitive(m), 2);
    rx_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- the tiny Llama */

static rx_module *llama_after_fuse(void)
{
    rx_module *m = load_file("tests/models/llama_tiny.json");
    rx_diags d;
    rx_diags_init(&d);
    ok_or_fail((rx_pass_library_lower(m, NULL, &d) && rx_deduce_module(m, &d)), "library_lower", &d);
    ok_or_fail((rx_pass_legalize(m, &d) && rx_deduce_module(m, &d)), "legalize", &d);
    ok_or_fail((rx_pass_dce(m, &d) && rx_deduce_module(m, &d)), "dce", &d);
    ok_or_fail(rx_pass_annotate_patterns(m, &d), "analysis", &d);
    rx_diags_free(&d);
    fuse(m);
    return m;
}

static const rx_node *value_of(const rx_module *m, const char *fn, const char *var)
{
    const rx_block *b = rx_module_find(m, fn)->body->blocks[0];
    for (int i = 0; i < b->nbindings; i++)
        if (!strcmp(b->bindings[i].var->u.var.name, var)) return b->bindings[i].value;
    ck_abort_msg("%s: %s not bound", fn, var);
    return NULL;
}

START_TEST(recompute_rule_materializes)
{
    /* an exp (cost 9 >= RECOMPUTE_MIN) read by an add over 16 times its space, and
     * by a softmax (two passes over its input): both stay materialized; a negative
     * (cost 2) in the same places fuses. A symbolic broadcast (n more rows) counts. */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "4,8") "," P("y", "16,4,8") "," P("z", "'n',4,8"), DF(
        OP("a", "exp", "'x'") "," OP("b", "add", "'a','y'") ","
        OP("c", "negative", "'x'") "," OP("d", "add", "'c','y'") ","
        OP("e", "exp", "'y'") "," OPA("f", "nn.softmax", "'e'", "'axis':-1") ","
        OP("g", "negative", "'y'") "," OPA("h", "nn.softmax", "'g'", "'axis':-1") ","
        OP("k", "exp", "'x'") "," OP("l", "add", "'k','z'")),
        "{'tuple':['b','d','f','h','l']}")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "a=tir:@exp(x); b=tir:@add(a, y); d=@fused_negative_add(x, y); "
                     "e=tir:@exp_1(y); f=tir:@nn_softmax(e); h=@fused_negative_1_nn_softmax(y); "
                     "k=tir:@exp(x); l=tir:@add_1(k, z) -> (b, d, f, h, l)");
    rx_module_free(m);
}
END_TEST

START_TEST(transpose_before_multipass_materializes)
{
    /* a permute moving the innermost axis, read by a layer_norm (sum, variance and
     * normalize passes over it): materialized (every pass would stride through x); one
     * keeping the innermost axis fuses, and so does a transpose read in one pass (an
     * add). Planted: without the transpose test the first group fuses. */
    rx_module *m = run_quoted(MOD(FN("main", P("x", "8,4,16") "," P("y", "8,16,4") ","
                                     P("g", "4") "," P("h", "16"), DF(
        OPA("a", "permute_dims", "'x'", "'axes':[0,2,1]") ","
        OPA("b", "nn.layer_norm", "'a','g','g'", "'axes':[-1],'epsilon':1e-5") ","
        OPA("c", "permute_dims", "'x'", "'axes':[1,0,2]") ","
        OPA("d", "nn.layer_norm", "'c','h','h'", "'axes':[-1],'epsilon':1e-5") ","
        OPA("e", "permute_dims", "'x'", "'axes':[0,2,1]") "," OP("f", "add", "'e','y'")),
        "{'tuple':['b','d','f']}")), true);
    ck_assert_str_eq(summary(m, "main"),
                     "a=tir:@permute_dims(x); b=tir:@nn_layer_norm(a, g, g); "
                     "d=@fused_permute_dims_1_nn_layer_norm_1(x, h); "
                     "f=@fused_permute_dims_add(x, y) -> (b, d, f)");
    rx_module_free(m);
}
END_TEST

START_TEST(llama_tiny)
{
    rx_module *m = llama_after_fuse();
    /* decode: the attention scores of both layers call one shared function, which gets
     * c (under c + 1 in the cache's annotation) in a Shape parameter */
    const rx_node *s0 = value_of(m, "decode", "l0_scores"), *s1 = value_of(m, "decode", "l1_scores");
    ck_assert_int_eq(s0->call_kind, RX_CALL_FN);
    ck_assert_ptr_eq(s0->u.call.callee->u.global.fn, s1->u.call.callee->u.global.fn);
    const rx_node *last = s0->args[s0->nargs - 1];
    ck_assert_int_eq(last->kind, RX_N_SHAPE);
    ck_assert_int_eq(last->u.shape.ndim, 1);
    ck_assert_str_eq(last->u.shape.dims[0]->u.var->name, "c");
    const rx_func *sf = s0->u.call.callee->u.global.fn;
    ck_assert_int_eq(sf->params[sf->nparams - 1]->sinfo->kind, RX_SI_SHAPE);
    /* prefill: the causal mask (full -> triu) takes s in a Shape parameter */
    const rx_node *mask = value_of(m, "prefill", "mask");
    ck_assert_int_eq(mask->call_kind, RX_CALL_FN);
    ck_assert_str_eq(mask->u.call.callee->u.global.name, "fused_full_triu");
    ck_assert_int_eq(mask->args[1]->kind, RX_N_SHAPE);
    /* the MLP of decode: its (b, 1, k) products have a symbolic batch of rows, which
       library lowering gives the library (blas.matmul); silu(gate) * up is one group */
    const rx_node *gu = value_of(m, "decode", "l0_gate_up");
    ck_assert_str_eq(gu->u.call.callee->u.global.name, "fused_nn_silu_1_multiply_2");
    ck_assert_ptr_eq(gu->u.call.callee->u.global.fn,
                     value_of(m, "decode", "l1_gate_up")->u.call.callee->u.global.fn);
    /* two layers share: one function per distinct group (11: prefill's silu(gate) * up
       is a group too, library lowering leaving the silu to fusion) */
    ck_assert_int_eq(count_primitive(m), 11);
    /* deterministic: a second run from scratch prints the same */
    rx_module *m2 = llama_after_fuse();
    rx_sb a = {0}, b = {0};
    rx_print_module(m, &a);
    rx_print_module(m2, &b);
    ck_assert_str_eq(rx_sb_str(&a), rx_sb_str(&b));
    rx_sb_free(&a);
    rx_sb_free(&b);
    rx_module_free(m2);
    rx_module_free(m);
}
END_TEST

static Suite *fuse_ops_suite(void)
{
    Suite *s = suite_create("fuse_ops");
    TCase *t = tcase_create("fuse_ops");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, figure8_extra_shape_param);
    tcase_add_test(t, elementwise_chain);
    tcase_add_test(t, softmax_pieces_one_group);
    tcase_add_test(t, reduction_epilogue);
    tcase_add_test(t, matmul_bias_relu);
    tcase_add_test(t, matmul_then_transpose_not_epilogue);
    tcase_add_test(t, matmul_epilogue_edges);
    tcase_add_test(t, diamond);
    tcase_add_test(t, figure9_decode_q4_into_matmul);
    tcase_add_test(t, opaque_kernel_blocks);
    tcase_add_test(t, used_by_another_block);
    tcase_add_test(t, used_by_op_call);
    tcase_add_test(t, not_across_if);
    tcase_add_test(t, tir_vars_need_shape_param);
    tcase_add_test(t, group_size_bound);
    tcase_add_test(t, argument_limit);
    tcase_add_test(t, names_unique_and_sharing);
    tcase_add_test(t, recompute_rule_materializes);
    tcase_add_test(t, transpose_before_multipass_materializes);
    tcase_add_test(t, llama_tiny);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return rx_check_run(fuse_ops_suite()); }
