/*
 * test_legalize.c — the legalize pass (compiler/pass/legalize*.c): structure.
 *
 * Modules come from the corpus (tests/modules/valid/ops_*.json) and from small
 * strings. Each is read, deduced, legalized; the checks: deduction succeeds again
 * (call_tir arity and buffers), no call of an op with a rule is left, identical
 * generated functions are shared, variables keep their annotations, symbolic shapes
 * stay symbolic (one function, tir_vars where needed), the legalized module survives
 * a relax-json round trip, and unsupported calls give located errors. Every v1 op has a
 * rule except the data-dependent unique, nonzero and NMS and shape_of (run by the VM).
 * nn.rnn's two forms (rt.rnn, or loops for GPU targets and f64): rnn_forms.
 */
#include "pass_test.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/op.h"
#include "relax/pass.h"
#include "relax/text.h"

static rx_module *load_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/modules/valid/%s", RX_SOURCE_DIR, name);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read_file(path, NULL, &d);
    ck_assert_msg(m != NULL, "read %s: %s", name, diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce %s: %s", name, diags_str(&d));
    rx_diags_free(&d);
    return m;
}

/* Does any op call with a legalization rule remain in seq (recursively)? */
static bool has_rule_call(const rx_node *n);

static bool seq_has_rule_call(const rx_seq *s)
{
    for (int i = 0; i < s->nblocks; i++)
        for (int j = 0; j < s->blocks[i]->nbindings; j++)
            if (has_rule_call(s->blocks[i]->bindings[j].value)) return true;
    return has_rule_call(s->result);
}

static bool has_rule_call(const rx_node *n)
{
    if (!n) return false;
    if (n->kind == RX_N_CALL && n->call_kind == RX_CALL_OP && rx_legalize_has_rule(n->u.call.op->name))
        return true;
    if (n->kind == RX_N_IF &&
        (seq_has_rule_call(n->u.if_.then_body) || seq_has_rule_call(n->u.if_.else_body)))
        return true;
    for (int i = 0; i < n->nargs; i++)
        if (has_rule_call(n->args[i])) return true;
    return false;
}

/* Writes m as relax-json, reads and deduces it again, checks structural equality. */
static void roundtrip(const rx_module *m)
{
    rx_sb js = {0}, why = {0};
    rx_json_write(m, 0, &js);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m2 = rx_json_read(js.p, js.n, NULL, &d);
    ck_assert_msg(m2 != NULL, "re-read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m2, &d), "re-deduce: %s", diags_str(&d));
    ck_assert_msg(rx_struct_equal(m, m2, &why), "round trip: %s", rx_sb_str(&why));
    rx_module_free(m2);
    rx_diags_free(&d);
    rx_sb_free(&js);
    rx_sb_free(&why);
}

/* The value of binding `var` in function f (first block that has it). */
static rx_node *binding_value(const rx_func *f, const char *var)
{
    for (int i = 0; i < f->body->nblocks; i++)
        for (int j = 0; j < f->body->blocks[i]->nbindings; j++) {
            rx_binding *b = &f->body->blocks[i]->bindings[j];
            if (!strcmp(b->var->u.var.name, var)) return b->value;
        }
    return NULL;
}

static int count_tir(const rx_module *m)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs; i++) n += m->funcs[i]->kind == RX_F_TIR;
    return n;
}

START_TEST(corpus_modules)
{
    static const char *const files[] = {"ops_compare.json", "ops_create.json", "ops_manip.json",
                                        "ops_matmul.json", "ops_misc.json", "ops_nn.json",
                                        "ops_reduce.json", "fig04_call_tir_dps.json",
                                        "fig08_sym_params.json", "fig07_subfn_calls.json",
                                        "if_else.json", "tuples.json", "blocks.json"};
    for (int i = 0; i < RX_COUNTOF(files); i++) {
        rx_module *m = load_file(files[i]);
        int before = count_tir(m);
        rx_diags d;
        rx_diags_init(&d);
        rx_legalize_report rep;
        bool ok = rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d);
        ck_assert_msg(ok, "%s: %s", files[i], diags_str(&d));
        ck_assert_int_eq(count_tir(m) - before, rep.generated);
        ck_assert_int_eq(rep.legalized, rep.generated + rep.shared);
        if (strncmp(files[i], "ops_", 4) == 0 && strcmp(files[i], "ops_misc.json") != 0)
            ck_assert_msg(rep.left == 0, "%s: %d op calls left (%s)", files[i], rep.left,
                          rep.nleft_ops ? rep.left_ops[0] : "");
        for (int f = 0; f < m->nfuncs; f++)
            if (m->funcs[f]->kind == RX_F_RELAX)
                ck_assert_msg(!seq_has_rule_call(m->funcs[f]->body), "%s: @%s keeps an op call",
                              files[i], m->funcs[f]->name);
        roundtrip(m);
        rx_diags_free(&d);
        rx_module_free(m);
    }
}
END_TEST

/* Modules with calls whose dims deduction left unknown: located errors. */
START_TEST(corpus_unknown_dims)
{
    static const struct { const char *file; int nerr; const char *first; } cases[] = {
        {"ops_binary.json", 1,
         "functions.static.body.blocks[0].bindings[2].value: cannot legalize multiply with "
         "unknown output dims\n"},
        {"ops_unary.json", 2,
         "functions.main.body.blocks[0].bindings[25].value: cannot legalize negative with "
         "unknown output dims\n"},
    };
    for (int i = 0; i < RX_COUNTOF(cases); i++) {
        rx_module *m = load_file(cases[i].file);
        rx_diags d;
        rx_diags_init(&d);
        ck_assert(!rx_legalize(m, NULL, &d));
        ck_assert_int_eq(rx_diags_count(&d), cases[i].nerr);
        char *e = diags_str(&d);
        ck_assert_msg(strncmp(e, cases[i].first, strlen(cases[i].first)) == 0, "%s", e);
        free(e);
        rx_diags_free(&d);
        rx_module_free(m);
    }
}
END_TEST

#define T32(...) "{\"tensor\": {\"shape\": [" __VA_ARGS__ "], \"dtype\": \"f32\"}}"
#define MODULE(params, bindings, result)                                                   \
    "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {\"main\": {\"kind\": "   \
    "\"relax\", \"params\": [" params "], \"body\": {\"blocks\": [{\"dataflow\": true, "   \
    "\"bindings\": [" bindings "]}], \"result\": \"" result "\"}}}}"

START_TEST(shared_functions)
{
    rx_module *m = load_text(MODULE(
        "{\"name\": \"x\", \"type\": " T32("\"n\", 4") "},"
        "{\"name\": \"y\", \"type\": " T32("\"m\", 4") "},"
        "{\"name\": \"h\", \"type\": {\"tensor\": {\"shape\": [\"n\", 4], \"dtype\": \"f16\"}}}",
        "{\"var\": \"a\", \"value\": {\"op\": \"add\", \"args\": [\"x\", \"x\"]}},"
        "{\"var\": \"b\", \"value\": {\"op\": \"add\", \"args\": [\"y\", \"y\"]}},"
        "{\"var\": \"c\", \"value\": {\"op\": \"add\", \"args\": [\"a\", \"x\"]}},"
        "{\"var\": \"d\", \"value\": {\"op\": \"add\", \"args\": [\"h\", \"h\"]}},"
        "{\"var\": \"e\", \"value\": {\"op\": \"nn.relu\", \"args\": [\"x\"]}},"
        "{\"var\": \"f\", \"value\": {\"op\": \"nn.relu\", \"args\": [\"y\"]}}",
        "e"));
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    ck_assert_msg((rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d)), "%s", diags_str(&d));
    ck_assert_int_eq(rep.legalized, 6);
    ck_assert_int_eq(rep.generated, 3); /* add f32, add f16, relu f32 */
    ck_assert_int_eq(rep.shared, 3);
    ck_assert_int_eq(count_tir(m), 3);
    rx_func *f = rx_module_find(m, "main");
    rx_node *a = binding_value(f, "a"), *b = binding_value(f, "b"), *dd = binding_value(f, "d");
    ck_assert_int_eq(a->call_kind, RX_CALL_TIR);
    ck_assert_ptr_eq(a->u.call.callee->u.global.fn, b->u.call.callee->u.global.fn);
    ck_assert_ptr_ne(a->u.call.callee->u.global.fn, dd->u.call.callee->u.global.fn);
    ck_assert_str_eq(a->u.call.callee->u.global.name, "add");
    ck_assert_str_eq(dd->u.call.callee->u.global.name, "add_1");
    ck_assert_int_eq(a->u.call.ntir_vars, 0);
    roundtrip(m);
    /* A second run finds nothing to do. */
    ck_assert((rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d)));
    ck_assert_int_eq(rep.legalized, 0);
    ck_assert_int_eq(count_tir(m), 3);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* fig08: add of (n * 2,) tensors passes n as a tir_var; one function serves all n. */
START_TEST(tir_vars_for_expressions)
{
    rx_module *m = load_file("fig08_sym_params.json");
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_legalize(m, NULL, &d) && rx_deduce_module(m, &d)), "%s", diags_str(&d));
    rx_func *f = rx_module_find(m, "fused_add_relu");
    rx_node *v = binding_value(f, "lv0");
    ck_assert_int_eq(v->call_kind, RX_CALL_TIR);
    ck_assert_int_eq(v->u.call.ntir_vars, 1);
    ck_assert_int_eq(v->u.call.tir_vars[0]->kind, RX_E_VAR);
    ck_assert_ptr_eq(v->u.call.tir_vars[0]->u.var, f->svars[0]);
    rx_func *k = v->u.call.callee->u.global.fn;
    ck_assert_int_eq(k->kind, RX_F_TIR);
    ck_assert_int_eq(k->ntparams, 4); /* x, y, out, n */
    ck_assert_ptr_eq(k->tparams[3].var, k->svars[0]);
    ck_assert_int_eq(k->svars[0]->kind, RX_SV_PARAM);
    rx_sb p = {0};
    rx_print_module(m, &p);
    ck_assert_msg(strstr(rx_sb_str(&p), "R.call_tir(@add, (x, y), out=R.Tensor((n * 2,), \"f32\"), "
                                        "tir_vars=R.shape([n]))") != NULL, "%s", rx_sb_str(&p));
    rx_sb_free(&p);
    /* main's flatten of (n, 2): n is defined by the input buffer, no tir_vars */
    rx_node *fl = binding_value(rx_module_find(m, "main"), "lv0");
    ck_assert_int_eq(fl->call_kind, RX_CALL_TIR);
    ck_assert_int_eq(fl->u.call.ntir_vars, 0);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(annotations_kept)
{
    rx_module *m = load_text(MODULE(
        "{\"name\": \"x\", \"type\": " T32("\"n\", 4") "}",
        "{\"var\": \"a\", \"type\": {\"tensor\": {\"ndim\": 2, \"dtype\": \"f32\"}}, "
        "\"value\": {\"op\": \"exp\", \"args\": [\"x\"]}}",
        "a"));
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_legalize(m, NULL, &d) && rx_deduce_module(m, &d)), "%s", diags_str(&d));
    rx_func *f = rx_module_find(m, "main");
    rx_binding *b = &f->body->blocks[0]->bindings[0];
    ck_assert_int_eq(b->value->call_kind, RX_CALL_TIR);
    ck_assert_ptr_null(b->var->sinfo->dims); /* still the written Tensor(ndim=2) */
    ck_assert_ptr_nonnull(b->value->u.call.out->dims); /* out: the deduced (n, 4) */
    ck_assert_int_eq(b->value->u.call.out->ndim, 2);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(errors_and_left_ops)
{
    rx_module *m = load_text(MODULE(
        "{\"name\": \"x\", \"type\": " T32("\"n\"") "},"
        "{\"name\": \"y\", \"type\": " T32("\"m\"") "},"
        "{\"name\": \"u\", \"type\": {\"tensor\": {\"ndim\": 1, \"dtype\": \"f32\"}}}",
        "{\"var\": \"a\", \"value\": {\"op\": \"add\", \"args\": [\"x\", \"y\"]}},"
        "{\"var\": \"b\", \"value\": {\"op\": \"unique\", \"args\": [\"x\"]}},"
        "{\"var\": \"c\", \"value\": {\"op\": \"shape_of\", \"args\": [\"x\"]}},"
        "{\"var\": \"e\", \"value\": {\"op\": \"reshape\", \"args\": [\"u\", {\"shape\": [\"n\"]}]}}",
        "a"));
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    ck_assert(!rx_legalize(m, &rep, &d));
    char *e = diags_str(&d);
    ck_assert_str_eq(e, "functions.main.body.blocks[0].bindings[0].value: cannot legalize add with "
                        "unknown output dims\n"
                        "functions.main.body.blocks[0].bindings[3].value: cannot legalize "
                        "reshape: argument 0 has unknown dims\n");
    free(e);
    ck_assert_int_eq(rep.left, 2);
    ck_assert_int_eq(rep.nleft_ops, 2);
    ck_assert_str_eq(rep.left_ops[0], "unique");
    ck_assert_str_eq(rep.left_ops[1], "shape_of");
    ck_assert(rx_legalize_has_rule("nn.softmax"));
    ck_assert(rx_legalize_has_rule("relax.add"));
    ck_assert(!rx_legalize_has_rule("unique"));
    ck_assert(!rx_legalize_has_rule("nonzero"));
    ck_assert(!rx_legalize_has_rule("shape_of"));
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* Written unnormalized: an op call nested in an operand and one as the body result
 * (whichever of reading and deduction normalizes, nothing is left). */
START_TEST(nested_calls_and_pass_entry)
{
    rx_module *m = load_text(
        "{\"format\": \"relax-json\", \"version\": 1, \"functions\": {\"main\": {\"kind\": "
        "\"relax\", \"params\": [{\"name\": \"x\", \"type\": " T32("\"n\", 4") "}], "
        "\"body\": {\"blocks\": [{\"bindings\": [{\"var\": \"a\", \"value\": {\"op\": \"add\", "
        "\"args\": [\"x\", {\"op\": \"exp\", \"args\": [\"x\"]}]}}]}], "
        "\"result\": {\"op\": \"nn.relu\", \"args\": [\"a\"]}}}}}");
    rx_pass_fn run = rx_pass_legalize;
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg(run(m, &d) && rx_deduce_module(m, &d), "%s", diags_str(&d));
    rx_func *f = rx_module_find(m, "main");
    ck_assert(!seq_has_rule_call(f->body));
    ck_assert_int_eq(count_tir(m), 3);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* Every registered op has a rule, except the four the VM runs: the data-dependent ones
 * (unique, nonzero, vision.all_class_non_max_suppression: built-ins) and shape_of. */
START_TEST(every_v1_op_has_a_rule)
{
    int without = 0;
    for (int i = 0; i < rx_op_count(); i++) {
        const char *name = rx_op_at(i)->name;
        bool vm_op = rx_op_at(i)->data_dependent || !strcmp(name, "shape_of");
        ck_assert_msg(rx_legalize_has_rule(name) != vm_op, "%s: rule %s", name,
                      vm_op ? "unexpected" : "missing");
        without += vm_op;
    }
    ck_assert_int_eq(without, 4);
}
END_TEST

/* Tuple results and tuple operands: batch_norm and split give one call_tir with a tuple
 * `out` (one buffer per field); concat of a tuple variable passes its fields, which
 * the final deduction binds to get_item temporaries; symbolic shapes share kernels. */
START_TEST(tuples_and_sharing)
{
    rx_module *m = load_text(MODULE(
        "{\"name\": \"x\", \"type\": " T32("\"n\", 3, 4") "},"
        "{\"name\": \"y\", \"type\": " T32("\"m\", 3, 4") "},"
        "{\"name\": \"c\", \"type\": " T32("3") "}",
        "{\"var\": \"bn\", \"value\": {\"op\": \"nn.batch_norm\", \"args\": [\"x\", \"c\", \"c\", \"c\", \"c\"]}},"
        "{\"var\": \"sp\", \"value\": {\"op\": \"split\", \"args\": [\"x\"], \"attrs\": "
        "{\"indices_or_sections\": [1], \"axis\": 2}}},"
        "{\"var\": \"sq\", \"value\": {\"op\": \"split\", \"args\": [\"y\"], \"attrs\": "
        "{\"indices_or_sections\": [1], \"axis\": 2}}},"
        "{\"var\": \"tp\", \"value\": {\"tuple\": [\"x\", \"y\"]}},"
        "{\"var\": \"cc\", \"value\": {\"op\": \"concat\", \"args\": [\"tp\"]}},"
        "{\"var\": \"ss\", \"value\": {\"op\": \"strided_slice\", \"args\": [\"x\"], \"attrs\": "
        "{\"axes\": [0], \"begin\": [1], \"end\": [\"n\"], \"strides\": [-1]}}}",
        "cc"));
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    ck_assert_msg((rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d)), "%s", diags_str(&d));
    ck_assert_int_eq(rep.legalized, 5);
    ck_assert_int_eq(rep.shared, 1); /* split of (n, 3, 4) and (m, 3, 4) */
    ck_assert_int_eq(rep.left, 0);
    rx_func *f = rx_module_find(m, "main");
    rx_node *bn = binding_value(f, "bn");
    ck_assert_int_eq(bn->call_kind, RX_CALL_TIR);
    ck_assert_int_eq(bn->nargs, 5);
    ck_assert_int_eq(bn->u.call.out->kind, RX_SI_TUPLE);
    rx_func *k = bn->u.call.callee->u.global.fn;
    ck_assert_int_eq(k->ntparams, 8); /* x gamma beta mean var, three outputs */
    rx_node *sp = binding_value(f, "sp"), *sq = binding_value(f, "sq");
    ck_assert_ptr_eq(sp->u.call.callee->u.global.fn, sq->u.call.callee->u.global.fn);
    ck_assert_int_eq(sp->u.call.out->nfields, 2);
    rx_node *cc = binding_value(f, "cc");
    ck_assert_int_eq(cc->call_kind, RX_CALL_TIR);
    ck_assert_int_eq(cc->nargs, 2);
    for (int i = 0; i < 2; i++) ck_assert_int_eq(cc->args[i]->kind, RX_N_VAR); /* temporaries */
    rx_sb p = {0};
    rx_print_module(m, &p);
    ck_assert_msg(strstr(rx_sb_str(&p), "= tp[1]") != NULL, "%s", rx_sb_str(&p));
    /* begin 1 against n with a negative stride: min(1, n - 1) */
    ck_assert_msg(strstr(rx_sb_str(&p), "x[min(1, n - 1) - i0, i1, i2]") != NULL, "%s", rx_sb_str(&p));
    rx_sb_free(&p);
    roundtrip(m);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* What the new rules refuse, located. */
START_TEST(rule_errors)
{
    rx_module *m = load_text(MODULE(
        "{\"name\": \"x\", \"type\": " T32("\"n\", 4") "}",
        "{\"var\": \"b\", \"value\": {\"op\": \"strided_slice\", \"args\": [\"x\"], \"attrs\": "
        "{\"axes\": [0], \"begin\": [0], \"end\": [2], \"strides\": [\"n\"]}}}",
        "b"));
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(!rx_legalize(m, NULL, &d));
    char *e = diags_str(&d);
    ck_assert_str_eq(e, "functions.main.body.blocks[0].bindings[0].value: cannot legalize "
                        "strided_slice with unknown output dims\n");
    free(e);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

/* An LSTM module (x (t, 2, 6), hidden hid, one direction) in dtype dt: main = nn.rnn. */
static rx_module *rnn_module(const char *dt, const char *hid)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{'format': 'relax-json', 'version': 1, 'functions': {'main': {'kind': 'relax', "
             "'params': [{'name': 'x', 'type': {'tensor': {'shape': ['t', 2, 6], 'dtype': '%s'}}},"
             "{'name': 'w', 'type': {'tensor': {'shape': [1, 32, 6], 'dtype': '%s'}}},"
             "{'name': 'r', 'type': {'tensor': {'shape': [1, 32, %s], 'dtype': '%s'}}},"
             "{'name': 'b', 'type': {'tensor': {'shape': [1, 64], 'dtype': '%s'}}},"
             "{'name': 'h', 'type': {'tensor': {'shape': [1, 2, 8], 'dtype': '%s'}}},"
             "{'name': 'p', 'type': {'tensor': {'shape': [1, 24], 'dtype': '%s'}}}],"
             "'body': {'blocks': [{'bindings': [{'var': 'y', 'value': {'op': 'nn.rnn', "
             "'args': ['x', 'w', 'r', 'b', 'h', 'h', 'p'], 'attrs': {'mode': 'lstm'}}},"
             "{'var': 'z', 'value': {'op': 'nn.rnn', "
             "'args': ['x', 'w', 'r', 'b', 'h', 'h', 'p'], 'attrs': {'mode': 'lstm'}}}]}], "
             "'result': 'z'}}}}", dt, dt, hid, dt, dt, dt, dt);
    return load_quoted(text);
}

/* topk / sort / argsort, cumsum and nn.group_norm: on the cpu rt.topk, rt.cumsum and
 * rt.group_norm (params axis, largest / descending, outputs; axis, exclusive, reverse;
 * num_groups, flags), no loop function; a cumsum into another dtype keeps its rule;
 * for a GPU target every one of them is loops (the sorts: legalize_sort.c). */
START_TEST(library_forms)
{
    static const char *text =
        "{'format': 'relax-json', 'version': 1, 'functions': {'main': {'kind': 'relax', "
        "'params': [{'name': 'x', 'type': {'tensor': {'shape': ['n', 40], 'dtype': 'f32'}}},"
        "{'name': 'p', 'type': {'tensor': {'shape': [40], 'dtype': 'f32'}}}],"
        "'body': {'blocks': [{'bindings': ["
        "{'var': 'g', 'value': {'op': 'nn.group_norm', 'args': ['x', 'p', 'p'], 'attrs': {'num_groups': 4}}},"
        "{'var': 't', 'value': {'op': 'topk', 'args': ['x'], 'attrs': {'k': 'n', 'axis': 0}}},"
        "{'var': 's', 'value': {'op': 'argsort', 'args': ['x'], 'attrs': {'descending': true}}},"
        "{'var': 'c', 'value': {'op': 'cumsum', 'args': ['x'], 'attrs': {'axis': 1, 'reverse': true}}},"
        "{'var': 'd', 'value': {'op': 'cumsum', 'args': ['x'], 'attrs': {'dtype': 'f64'}}}]}], "
        "'result': 'd'}}}}";
    static const struct { const char *var, *lib; int64_t p[3]; int karg; } want[] = {
        {"t", "rt.topk", {0, 1, 3}, 1}, {"s", "rt.topk", {1, 1, 2}, 1},
        {"c", "rt.cumsum", {1, 0, 1}, 1}, {"g", "rt.group_norm", {4, 3, 0}, 3}};
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    rx_module *m = load_quoted(text);
    ck_assert_msg(rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d), "%s", diags_str(&d));
    const rx_func *f = rx_module_find(m, "main");
    for (int i = 0; i < 4; i++) {
        const rx_node *v = binding_value(f, want[i].var);
        ck_assert_int_eq(v->call_kind, RX_CALL_LIB);
        ck_assert_str_eq(v->u.call.lib, want[i].lib);
        const rx_const *k = v->args[want[i].karg]->u.konst;
        ck_assert_int_eq(k->dtype, RX_DT_I64);
        for (int j = 0; j < (i == 3 ? 2 : 3); j++) {
            int64_t got;
            memcpy(&got, k->data + 8 * j, 8);
            ck_assert_int_eq(got, want[i].p[j]);
        }
    }
    char *out = rx_sinfo_str(m->arena, binding_value(f, "t")->sinfo);
    ck_assert_str_eq(out, "R.Tuple(R.Tensor((n, 40), \"f32\"), R.Tensor((n, 40), \"i32\"))");
    ck_assert_int_eq(binding_value(f, "d")->call_kind, RX_CALL_TIR);
    ck_assert_int_eq(count_tir(m), 1);
    rx_module_free(m);
    /* a GPU target: every one of them loops (the sorts legalize_sort.c's rank sort) */
    m = load_quoted(text);
    ck_assert_msg(rx_legalize_for(m, true, &rep, &d) && rx_deduce_module(m, &d), "%s", diags_str(&d));
    f = rx_module_find(m, "main");
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(binding_value(f, want[i].var)->call_kind, RX_CALL_TIR);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

/* The loop function behind binding var: get_item(call_tir(...), 0) after deduction. */
static const rx_node *rnn_call(const rx_module *m, const char *var)
{
    const rx_func *f = rx_module_find(m, "main");
    const rx_node *v = binding_value(f, var);
    ck_assert_int_eq(v->kind, RX_N_GET_ITEM);
    ck_assert_int_eq(v->u.index, 0);
    const rx_node *c = v->args[0];
    if (c->kind == RX_N_VAR) c = binding_value(f, c->u.var.name);
    ck_assert_int_eq(c->kind, RX_N_CALL);
    ck_assert_int_eq(c->call_kind, RX_CALL_TIR);
    return c;
}

/* nn.rnn: f32 on the cpu is rt.rnn; f64, and f32 for a GPU target (rx_legalize_for),
 * one loop function (shared by identical calls) with a serial step loop, its workspaces
 * extra outputs; the module survives a relax-json round trip; a symbolic hidden size is
 * a located error there (rt.rnn takes it). */
START_TEST(rnn_forms)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_legalize_report rep;
    rx_module *m = rnn_module("f32", "8");
    ck_assert_msg(rx_legalize(m, &rep, &d) && rx_deduce_module(m, &d), "%s", diags_str(&d));
    const rx_node *y = binding_value(rx_module_find(m, "main"), "y");
    ck_assert_int_eq(y->call_kind, RX_CALL_LIB);
    ck_assert_str_eq(y->u.call.lib, "rt.rnn");
    ck_assert_int_eq(count_tir(m), 0);
    rx_module_free(m);
    for (int k = 0; k < 2; k++) {
        m = rnn_module(k ? "f32" : "f64", "8");
        ck_assert_msg(rx_legalize_for(m, k == 1, &rep, &d) && rx_deduce_module(m, &d), "%s",
                      diags_str(&d));
        ck_assert_int_eq(rep.legalized, 2);
        ck_assert_int_eq(rep.generated, 1);
        ck_assert_int_eq(rep.shared, 1);
        const rx_node *c = rnn_call(m, "y");
        ck_assert_ptr_eq(c->u.call.callee->u.global.fn, rnn_call(m, "z")->u.call.callee->u.global.fn);
        ck_assert_str_eq(c->u.call.callee->u.global.name, "nn_rnn");
        char *out = rx_sinfo_str(m->arena, c->sinfo);
        ck_assert_str_eq(out, k ? "R.Tuple(R.Tensor((t + 2, 1, 2, 8), \"f32\"), "
                                  "R.Tensor((t, 1, 2, 32), \"f32\"), R.Tensor((1, 2, 32), \"f32\"))"
                                : "R.Tuple(R.Tensor((t + 2, 1, 2, 8), \"f64\"), "
                                  "R.Tensor((t, 1, 2, 32), \"f64\"), R.Tensor((1, 2, 32), \"f64\"))");
        const rx_func *fn = c->u.call.callee->u.global.fn;
        /* h0, c0, the input projection, the step loop over t (serial) */
        ck_assert_int_eq(fn->tbody.n, 4);
        const rx_stmt *loop = fn->tbody.items[3];
        ck_assert_int_eq(loop->kind, RX_S_FOR);
        ck_assert_int_eq(loop->u.for_.loop_kind, RX_LOOP_SERIAL);
        ck_assert_str_eq(rx_expr_str(m->arena, loop->u.for_.extent), "T");
        ck_assert_int_eq(loop->u.for_.body.n, 4); /* product, cell, hidden, state */
        roundtrip(m);
        rx_module_free(m);
    }
    m = rnn_module("f64", "'k'");
    ck_assert(!rx_legalize(m, NULL, &d));
    char *e = diags_str(&d);
    ck_assert_msg(strstr(e, "functions.main.body.blocks[0].bindings[0].value: cannot legalize nn.rnn: "
                            "r's directions and hidden size must be literals") != NULL, "%s", e);
    free(e);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("legalize");
    TCase *tc = tcase_create("legalize");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, corpus_modules);
    tcase_add_test(tc, corpus_unknown_dims);
    tcase_add_test(tc, shared_functions);
    tcase_add_test(tc, tir_vars_for_expressions);
    tcase_add_test(tc, annotations_kept);
    tcase_add_test(tc, errors_and_left_ops);
    tcase_add_test(tc, nested_calls_and_pass_entry);
    tcase_add_test(tc, every_v1_op_has_a_rule);
    tcase_add_test(tc, tuples_and_sharing);
    tcase_add_test(tc, rule_errors);
    tcase_add_test(tc, rnn_forms);
    tcase_add_test(tc, library_forms);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
