/*
 * test_specialize.c — static-shape specialization (compiler/pass/specialize.c).
 *
 * One hand-written reduction over symbolic buffers (n, m) is called four times: twice
 * with (64, 300), once with (k, 300), k symbolic, once with (8, 100); a function with
 * a scalar parameter is called with a literal and with a symbolic tir_var. Checked:
 * the calls name copies (the two (64, 300) calls share one), the copies' buffers and
 * extents are literals where the call was static and the symbolic n stays a kernel
 * variable, the scalar parameter and its tir_var disappear only where they were
 * literal, the unnamed original is removed and the one still called is kept, a second
 * run changes nothing. Numerics: each copy gives bit-identical results to the
 * original kernel run with the same values, and the static row sum matches a direct
 * computation.
 */
#include <math.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/pass.h"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[64,300],'dtype':'f32'}}},"
    "{'name':'y','type':{'tensor':{'shape':['k',300],'dtype':'f32'}}},"
    "{'name':'z','type':{'tensor':{'shape':[8,100],'dtype':'f32'}}},"
    "{'name':'v','type':{'tensor':{'shape':['k'],'dtype':'i64'}}}],"
    "'body':{'blocks':[{'dataflow':true,'bindings':["
    "{'var':'a','value':{'call_tir':'@rowsum','args':['x'],'out':{'tensor':{'shape':[64],'dtype':'f32'}}}},"
    "{'var':'b','value':{'call_tir':'@rowsum','args':['y'],'out':{'tensor':{'shape':['k'],'dtype':'f32'}}}},"
    "{'var':'c','value':{'call_tir':'@rowsum','args':['z'],'out':{'tensor':{'shape':[8],'dtype':'f32'}}}},"
    "{'var':'d','value':{'call_tir':'@rowsum','args':['x'],'out':{'tensor':{'shape':[64],'dtype':'f32'}}}},"
    "{'var':'e','value':{'call_tir':'@shift','args':['v'],'out':{'tensor':{'shape':['k'],'dtype':'i64'}},'tir_vars':[3]}},"
    "{'var':'f','value':{'call_tir':'@shift','args':['v'],'out':{'tensor':{'shape':['k'],'dtype':'i64'}},'tir_vars':['k']}},"
    "{'var':'r','value':{'tuple':['a','b','c','d','e','f']}}]}],'result':'r'}},"
    "'rowsum':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n','m'],'dtype':'f32'}},"
    "{'name':'S','buffer':{'shape':['n'],'dtype':'f32'}}],"
    "'body':[{'grid':['i','j'],'extents':['n','m'],'body':[{'block':'s','init':[{'store':'S[i]','value':'0.0'}],"
    "'body':[{'store':'S[i]','value':'S[i] + A[i, j] * 2.0'}]}]}]},"
    "'shift':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n'],'dtype':'i64'}},"
    "{'name':'B','buffer':{'shape':['n'],'dtype':'i64'}},{'name':'s','dtype':'i64'}],"
    "'body':[{'grid':['i'],'extents':['n'],'body':{'store':'B[i]','value':'A[i] + s * i'}}]}"
    "}}";

/* The loop function binding `var` of main calls, and the call. */
static const rx_node *call_of(const rx_module *m, const char *var)
{
    const rx_func *g = rx_module_find(m, "main");
    const rx_block *b = g->body->blocks[0];
    for (int i = 0; i < b->nbindings; i++)
        if (!strcmp(b->bindings[i].var->u.var.name, var)) return b->bindings[i].value;
    ck_abort_msg("no binding %s", var);
    return NULL;
}

static rx_func *fn_of(const rx_module *m, const char *var)
{
    return call_of(m, var)->u.call.callee->u.global.fn;
}

static bool literal_shapes(const rx_func *f)
{
    for (int i = 0; i < f->ntparams; i++) {
        const rx_buffer *b = f->tparams[i].buf;
        for (int k = 0; b && k < b->ndim; k++)
            if (b->shape[k]->kind != RX_E_INT) return false;
    }
    return true;
}

/* The extent of the outermost loop of f (a literal expected). */
static int64_t outer_extent(const rx_func *f)
{
    const rx_stmt *s = f->tbody.items[0];
    ck_assert_int_eq(s->kind, RX_S_FOR);
    int64_t e = -1;
    ck_assert(rx_expr_is_const(s->u.for_.extent, &e));
    return e;
}

static rx_module *specialized(int *ncalls, int *ncopies)
{
    rx_module *m = load_quoted(MODULE);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_specialize(m, ncalls, ncopies, &d) && rx_deduce_module(m, &d)), "specialize: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

START_TEST(copies)
{
    int ncalls = -1, ncopies = -1;
    rx_module *m = specialized(&ncalls, &ncopies);
    ck_assert_int_eq(ncalls, 5);  /* a, b, c, d, e (f is symbolic throughout) */
    ck_assert_int_eq(ncopies, 4); /* (64, 300), (?, 300), (8, 100), shift with s = 3 */
    rx_func *fa = fn_of(m, "a"), *fb = fn_of(m, "b"), *fc = fn_of(m, "c");
    ck_assert_str_eq(fa->name, "rowsum_static");
    ck_assert_ptr_eq(fn_of(m, "d"), fa); /* the same static shapes share a copy */
    ck_assert_int_eq(fa->nsvars, 0);
    ck_assert(literal_shapes(fa));
    ck_assert_int_eq(outer_extent(fa), 64);
    ck_assert_int_eq(fc->nsvars, 0);
    ck_assert_int_eq(outer_extent(fc), 8);
    /* (k, 300): n stays a kernel variable, m = 300 everywhere */
    ck_assert_int_eq(fb->nsvars, 1);
    ck_assert_str_eq(fb->svars[0]->name, "n");
    ck_assert_int_eq(fb->tparams[0].buf->shape[1]->kind, RX_E_INT);
    ck_assert_int_eq(fb->tparams[0].buf->shape[0]->kind, RX_E_VAR);
    ck_assert(fa != fb && fb != fc && fa != fc);
    /* shift: s = 3 is gone from the copy and its call; n stays */
    const rx_node *e = call_of(m, "e"), *f = call_of(m, "f");
    rx_func *fe = e->u.call.callee->u.global.fn;
    ck_assert_str_eq(fe->name, "shift_static");
    ck_assert_int_eq(e->u.call.ntir_vars, 0);
    ck_assert_int_eq(fe->ntparams, 2);
    ck_assert_int_eq(fe->nsvars, 1);
    ck_assert_str_eq(f->u.call.callee->u.global.fn->name, "shift");
    ck_assert_int_eq(f->u.call.ntir_vars, 1);
    /* the original rowsum is gone, shift (still called by f) kept */
    ck_assert_ptr_null(rx_module_find(m, "rowsum"));
    ck_assert_ptr_nonnull(rx_module_find(m, "shift"));
    /* a second run has nothing static left to bind */
    rx_diags d;
    rx_diags_init(&d);
    ck_assert((rx_specialize(m, &ncalls, &ncopies, &d) && rx_deduce_module(m, &d)));
    ck_assert_int_eq(ncalls, 0);
    ck_assert_int_eq(ncopies, 0);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(numerics)
{
    rx_module *mo = load_quoted(MODULE);
    rx_module *ms = specialized(NULL, NULL);
    ck_assert(rx_schedule_tile(ms, NULL)); /* the O3 pipeline tiles the copies next */
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    void *ho = kr_load(mo, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"n", "m", "s"};
    const struct { const char *var, *orig; int64_t vals[3]; } cases[] = {
        {"a", "rowsum", {64, 300, 0}}, {"b", "rowsum", {13, 300, 0}},
        {"b", "rowsum", {0, 300, 0}},  {"c", "rowsum", {8, 100, 0}},
        {"e", "shift", {20, 0, 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kr_run ro, rs;
        kr_exec(ho, rx_module_find(mo, cases[i].orig), names, cases[i].vals, 3, 5, &ro);
        kr_exec(hs, fn_of(ms, cases[i].var), names, cases[i].vals, 3, 5, &rs);
        kr_same(&ro, &rs, cases[i].var);
        if (!strcmp(cases[i].var, "a")) { /* S[i] = sum_j 2 A[i, j], directly */
            const float *A = (const float *)(void *)rs.buf[0], *S = (const float *)(void *)rs.buf[1];
            for (int r = 0; r < 64; r++) {
                double want = 0;
                for (int j = 0; j < 300; j++) want += 2.0 * A[r * 300 + j];
                ck_assert_msg(fabs(S[r] - want) <= 1e-4 * (1 + fabs(want)), "row %d: %g vs %g", r,
                              (double)S[r], want);
            }
        }
        kr_free(&ro);
        kr_free(&rs);
    }
    dlclose(ho);
    dlclose(hs);
    rx_module_free(mo);
    rx_module_free(ms);
}
END_TEST

static Suite *specialize_suite(void)
{
    Suite *s = suite_create("specialize");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, copies);
    tcase_add_test(tc, numerics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(specialize_suite()); }
