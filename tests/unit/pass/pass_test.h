/*
 * pass_test.h — helpers shared by the pass tests: diagnostics as one string, reading a
 * module that must read and deduce cleanly, legalizing it, and the loop function a
 * one-binding graph function calls.
 */
#ifndef RX_PASS_TEST_H
#define RX_PASS_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/pass.h"

/* The diagnostics as "path: message\n" lines (heap; the caller frees). */
static inline char *diags_str(const rx_diags *d)
{
    rx_sb b = {0};
    rx_diags_format(d, &b);
    return rx_sb_take(&b);
}

/* Reads and deduces relax-json text; a failure fails the test with the diagnostics. */
static inline rx_module *load_text(const char *text)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, strlen(text), NULL, &d);
    ck_assert_msg(m != NULL, "read: %s", diags_str(&d));
    ck_assert_msg(rx_deduce_module(m, &d), "deduce: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

/* load_text of relax-json written with ' for " (keeps test strings readable). */
static inline rx_module *load_quoted(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    rx_module *m = load_text(s);
    free(s);
    return m;
}

/* load_quoted, then legalize; a failure fails the test. */
static inline rx_module *load_legalized(const char *text)
{
    rx_module *m = load_quoted(text);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_legalize(m, NULL, &d) && rx_deduce_module(m, &d)), "legalize: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

/* The loop function that graph function gname calls in its first binding. */
static inline rx_func *tir_callee(const rx_module *m, const char *gname)
{
    const rx_func *g = rx_module_find(m, gname);
    ck_assert_ptr_nonnull(g);
    const rx_node *v = g->body->blocks[0]->bindings[0].value;
    ck_assert_int_eq(v->call_kind, RX_CALL_TIR);
    return v->u.call.callee->u.global.fn;
}

/* The loop function of the last call_tir of graph function gname's first block. */
static inline rx_func *tir_callee_last(const rx_module *m, const char *gname)
{
    const rx_func *g = rx_module_find(m, gname);
    ck_assert_ptr_nonnull(g);
    const rx_block *bl = g->body->blocks[0];
    rx_func *f = NULL;
    for (int i = 0; i < bl->nbindings; i++) {
        const rx_node *v = bl->bindings[i].value;
        if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR) f = v->u.call.callee->u.global.fn;
    }
    ck_assert_msg(f != NULL, "%s: no call_tir", gname);
    return f;
}

#endif
