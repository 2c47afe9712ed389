/*
 * test_normalize.c — A-normal form before deduction: nested operands are bound to
 * fresh variables before their use, in the same block; results become leaves; errors
 * about a nested operand are located at the operand as written.
 */
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/text.h"

#include <check.h>
#include <string.h>
#include "../rx_check.h"

static rx_module *read_ok(const char *json, rx_diags *d)
{
    rx_diags_init(d);
    rx_module *m = rx_json_read(json, strlen(json), NULL, d);
    ck_assert_msg(m != NULL, "read failed");
    return m;
}

#define MODULE(params, bindings, result)                                                  \
    "{\"format\":\"relax-json\",\"version\":1,\"functions\":{\"main\":{\"kind\":\"relax\"," \
    "\"params\":[" params "],\"body\":{\"blocks\":[{\"dataflow\":true,\"bindings\":["   \
    bindings "]}],\"result\":" result "}}}}"
#define Z34 "{\"op\":\"zeros\",\"args\":[{\"shape\":[3,4]}],\"attrs\":{\"dtype\":\"f32\"}}"
#define PX "{\"name\":\"x\",\"type\":{\"tensor\":{\"shape\":[\"n\",4],\"dtype\":\"f32\"}}}"

START_TEST(nested_operands_are_bound_first)
{
    rx_diags d;
    rx_module *m = read_ok(MODULE(PX, "{\"var\":\"y\",\"value\":{\"op\":\"add\",\"args\":["
                                      "{\"op\":\"exp\",\"args\":[\"x\"]},"
                                      "{\"op\":\"negative\",\"args\":[{\"op\":\"exp\",\"args\":[\"x\"]}]}]}}",
                                  "\"y\""),
                           &d);
    ck_assert(rx_deduce_module(m, &d));
    rx_block *b = m->funcs[0]->body->blocks[0];
    ck_assert_int_eq(b->nbindings, 4); /* exp, exp, negative, then add */
    ck_assert_str_eq(b->bindings[0].value->u.call.op->name, "exp");
    ck_assert_str_eq(b->bindings[2].value->u.call.op->name, "negative");
    ck_assert(b->bindings[2].value->args[0] == b->bindings[1].var);
    rx_node *add = b->bindings[3].value;
    ck_assert(add->args[0] == b->bindings[0].var && add->args[1] == b->bindings[2].var);
    for (int i = 0; i < 3; i++) {
        ck_assert(b->bindings[i].var->u.var.dataflow);
        ck_assert_int_eq(b->bindings[i].var->sinfo->ndim, 2);
    }
    /* idempotent: a second normalization changes nothing */
    rx_normalize_module(m);
    ck_assert_int_eq(m->funcs[0]->body->blocks[0]->nbindings, 4);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

START_TEST(nested_and_flat_forms_are_structurally_equal)
{
    rx_diags d;
    rx_module *a = read_ok(MODULE(PX, "{\"var\":\"y\",\"value\":{\"op\":\"exp\",\"args\":["
                                      "{\"op\":\"nn.relu\",\"args\":[\"x\"]}]}}", "\"y\""), &d);
    rx_module *b = read_ok(MODULE(PX, "{\"var\":\"t\",\"value\":{\"op\":\"nn.relu\",\"args\":[\"x\"]}},"
                                      "{\"var\":\"y\",\"value\":{\"op\":\"exp\",\"args\":[\"t\"]}}",
                                  "\"y\""), &d);
    ck_assert(rx_deduce_module(a, &d) && rx_deduce_module(b, &d));
    rx_sb why = {0};
    ck_assert_msg(rx_struct_equal(a, b, &why), "%s", rx_sb_str(&why));
    rx_sb_free(&why);
    rx_module_free(a);
    rx_module_free(b);
    rx_diags_free(&d);
}
END_TEST

START_TEST(compound_result_becomes_a_leaf)
{
    rx_diags d;
    rx_module *m = read_ok(MODULE(PX, "{\"var\":\"y\",\"value\":{\"op\":\"exp\",\"args\":[\"x\"]}}",
                                  "{\"tuple\":[\"y\",{\"op\":\"sum\",\"args\":[\"y\"]}]}"), &d);
    ck_assert(rx_deduce_module(m, &d));
    rx_seq *s = m->funcs[0]->body;
    ck_assert_int_eq(s->nblocks, 2);          /* the result's binding is in a new block */
    ck_assert(!s->blocks[1]->dataflow);
    ck_assert_int_eq(s->result->kind, RX_N_TUPLE);
    ck_assert(s->result->args[1] == s->blocks[1]->bindings[0].var);
    ck_assert_int_eq(m->funcs[0]->ret->kind, RX_SI_TUPLE);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

START_TEST(errors_in_nested_operands_keep_their_path)
{
    rx_diags d;
    rx_module *m = read_ok(MODULE(PX, "{\"var\":\"y\",\"value\":{\"op\":\"add\",\"args\":[\"x\","
                                      "{\"op\":\"matmul\",\"args\":[" Z34 "," Z34 "]}]}}", "\"y\""), &d);
    ck_assert(!rx_deduce_module(m, &d));
    ck_assert_int_eq(rx_diags_count(&d), 1);
    ck_assert_str_eq(d.list.items[0].path,
                     "functions.main.body.blocks[0].bindings[0].value.args[1]");
    ck_assert(strstr(d.list.items[0].msg, "matmul") != NULL);
    rx_module_free(m);
    rx_diags_free(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("normalize");
    TCase *tc = tcase_create("anf");
    tcase_add_test(tc, nested_operands_are_bound_first);
    tcase_add_test(tc, nested_and_flat_forms_are_structurally_equal);
    tcase_add_test(tc, compound_result_becomes_a_leaf);
    tcase_add_test(tc, errors_in_nested_operands_keep_their_path);
    suite_add_tcase(s, tc);
    return rx_check_run(s);
}
