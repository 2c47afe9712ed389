/*
 * test_lift_workspace.c — cross-level workspace lifting (compiler/pass/lift_workspace.c,
 * paper §4.4, Figure 11).
 *
 * A loop function `twostage` computes Y = (2X) + 1 through a global-scope intermediate
 * T (n, 4); main calls it twice around a relu. After the pass T is twostage's trailing
 * output buffer, no global ALLOC remains, each call is `v_ws = call_tir(..., out=(Y, T))`
 * then `v = v_ws[0]`, and the module deduces. Built and run, the lifted module computes
 * what the unlifted one does (and what C computes here), and memory planning puts the
 * graph-allocated workspaces into the storages of other intermediates (the metadata's
 * counts). What is not lifted: an ALLOC inside a loop, a local one, and a multi-output
 * function keeps its tuple (extended in place when only get_item reads it, rebuilt
 * when the tuple itself is used).
 */
#include "pass_test.h"

#include "../rx_check.h"
#include "relax/driver.h"
#include "relax/pass.h"
#include "relax/runtime.h"

#include <jansson.h>
#include <stdio.h>

#define T4 "{'tensor':{'shape':['n',4],'dtype':'f32'}}"
#define B4(name) "{'name':'" name "','buffer':{'shape':['n',4],'dtype':'f32'}}"
#define TIR(name, args, out) "{'call_tir':'@" name "','args':" args ",'out':" out "}"

/* twostage: T = 2X (global workspace), Y = T + 1. */
#define K_TWOSTAGE(scope)                                                                  \
    "'twostage':{'kind':'tir','params':[" B4("X") "," B4("Y") "],'body':["                 \
    "{'alloc':'T','shape':['n',4],'dtype':'f32','scope':'" scope "'},"                      \
    "{'grid':['i','j'],'extents':['n',4],'body':[{'store':'T[i, j]','value':'X[i, j] * 2.0'}]}," \
    "{'grid':['i','j'],'extents':['n',4],'body':[{'store':'Y[i, j]','value':'T[i, j] + 1.0'}]}]}"
/* inloop: the same with T (4,) allocated inside the loop over i: not liftable */
#define K_INLOOP                                                                           \
    "'inloop':{'kind':'tir','params':[" B4("X") "," B4("Y") "],'body':["                   \
    "{'for':'i','extent':'n','body':[{'alloc':'T','shape':[4],'dtype':'f32','scope':'global'}," \
    "{'for':'j','extent':4,'body':[{'store':'T[j]','value':'X[i, j] * 2.0'}]},"             \
    "{'for':'j','extent':4,'body':[{'store':'Y[i, j]','value':'T[j] + 1.0'}]}]}]}"
/* pair: (Y, Z) = (T + 1, T - 1) with T = 2X in a global workspace */
#define K_PAIR                                                                             \
    "'pair':{'kind':'tir','params':[" B4("X") "," B4("Y") "," B4("Z") "],'body':["          \
    "{'alloc':'T','shape':['n',4],'dtype':'f32','scope':'global'},"                         \
    "{'grid':['i','j'],'extents':['n',4],'body':[{'store':'T[i, j]','value':'X[i, j] * 2.0'}]}," \
    "{'grid':['i','j'],'extents':['n',4],'body':[{'store':'Y[i, j]','value':'T[i, j] + 1.0'}," \
    "{'store':'Z[i, j]','value':'T[i, j] - 1.0'}]}]}"
#define K_RELU                                                                             \
    "'relu':{'kind':'tir','params':[" B4("X") "," B4("Y") "],"                             \
    "'body':[{'grid':['i','j'],'extents':['n',4],'body':["                                  \
    "{'store':'Y[i, j]','value':'select(X[i, j] > 0.0, X[i, j], 0.0)'}]}]}"

/* main: a = twostage(x); b = relu(a); c = twostage(b) */
#define MAIN(attrs, kernel)                                                                \
    "{'format':'relax-json','version':1,'functions':{"                                     \
    "'main':{'kind':'relax','params':[{'name':'x','type':" T4 "}]," attrs                 \
    "'body':{'blocks':[{'dataflow':true,'bindings':["                                      \
    "{'var':'a','value':" TIR(kernel, "['x']", T4) "},"                                    \
    "{'var':'b','value':" TIR("relu", "['a']", T4) "},"                                    \
    "{'var':'c','value':" TIR(kernel, "['b']", T4) "}]}],'result':'c'}},"

static const char sym[] = MAIN("", "twostage") K_TWOSTAGE("global") "," K_RELU "}}";
static const char bounded[] =
    MAIN("'attrs':{'upper_bounds':{'n':64}},", "twostage") K_TWOSTAGE("global") "," K_RELU "}}";
static const char local[] = MAIN("", "twostage") K_TWOSTAGE("local") "," K_RELU "}}";
static const char inloop[] = MAIN("", "inloop") K_INLOOP "," K_RELU "}}";

/* Does any statement of ss (nested ones included) ALLOC a global buffer? */
static bool has_global_alloc(const rx_stmts *ss)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch (s->kind) {
        case RX_S_ALLOC:
            if (s->u.alloc.buf->scope == RX_SCOPE_GLOBAL) return true;
            break;
        case RX_S_FOR:
            if (has_global_alloc(&s->u.for_.body)) return true;
            break;
        case RX_S_BLOCK:
            if (has_global_alloc(&s->u.block.init) || has_global_alloc(&s->u.block.body)) return true;
            break;
        case RX_S_IF:
            if (has_global_alloc(&s->u.if_.then_s) || has_global_alloc(&s->u.if_.else_s)) return true;
            break;
        case RX_S_LET:
            if (has_global_alloc(&s->u.let.body)) return true;
            break;
        default: break;
        }
    }
    return false;
}

static int nbuffers(const rx_func *k)
{
    int n = 0;
    for (int i = 0; i < k->ntparams; i++) n += k->tparams[i].buf != NULL;
    return n;
}

static rx_module *lifted(const char *sq)
{
    rx_module *m = load_quoted(sq);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert_msg((rx_pass_lift_workspace(m, &d) && rx_deduce_module(m, &d)), "lift: %s", diags_str(&d));
    rx_diags_free(&d);
    return m;
}

START_TEST(lifts_global_alloc)
{
    rx_module *m = lifted(sym);
    rx_func *k = rx_module_find(m, "twostage"), *f = rx_module_find(m, "main");
    ck_assert_int_eq(nbuffers(k), 3);
    ck_assert(!has_global_alloc(&k->tbody));
    ck_assert_str_eq(k->tparams[2].buf->name, "T"); /* trailing, after the output */
    const rx_block *b = f->body->blocks[0];
    ck_assert_int_eq(b->nbindings, 5); /* a_ws a b c_ws c */
    const rx_node *call = b->bindings[0].value;
    ck_assert(call->kind == RX_N_CALL && call->call_kind == RX_CALL_TIR);
    ck_assert_int_eq(call->u.call.out->kind, RX_SI_TUPLE);
    ck_assert_int_eq(call->u.call.out->nfields, 2);
    char *ws = rx_sinfo_str(m->arena, call->u.call.out->fields[1]);
    ck_assert_str_eq(ws, "R.Tensor((n, 4), \"f32\")");
    ck_assert_str_eq(b->bindings[0].var->u.var.name, "a_ws");
    ck_assert_int_eq(b->bindings[1].value->kind, RX_N_GET_ITEM);
    ck_assert_str_eq(b->bindings[1].var->u.var.name, "a");
    ck_assert_int_eq(b->bindings[1].var->sinfo->kind, RX_SI_TENSOR); /* deduced again */
    rx_module_free(m);
}
END_TEST

START_TEST(leaves_other_allocs)
{
    const char *const mods[] = {local, inloop};
    const char *const names[] = {"twostage", "inloop"};
    for (int i = 0; i < 2; i++) {
        rx_module *m = lifted(mods[i]);
        const rx_func *k = rx_module_find(m, names[i]);
        ck_assert_int_eq(nbuffers(k), 2);
        ck_assert_int_eq(rx_module_find(m, "main")->body->blocks[0]->nbindings, 3);
        rx_module_free(m);
    }
}
END_TEST

/* ---- build and run ---- */

static uint8_t *build(const char *sq, bool lift, size_t *n)
{
    static const char *const with[] = {"fuse_ops", "fuse_tir", "library_lower", NULL};
    static const char *const without[] = {"fuse_ops", "fuse_tir", "library_lower", "lift_workspace", NULL};
    rx_build_opts o = {.opt_level = 2, .disable = lift ? with : without};
    char *j = strdup(sq);
    for (char *p = j; *p; p++)
        if (*p == '\'') *p = '"';
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    ck_assert_msg(rx_build(j, strlen(j), &o, &rxa, n, &d), "build: %s", diags_str(&d));
    rx_diags_free(&d);
    free(j);
    return rxa;
}

/* main's metadata memory object (a new reference). */
static json_t *memory_of(rx_rt_module *m)
{
    const rx_rxa_section *md = rx_rxa_section_get(rx_rt_module_artifact(m), RX_RXA_METADATA);
    json_error_t je;
    json_t *root = json_loadb((const char *)md->data, md->size, 0, &je);
    ck_assert_ptr_nonnull(root);
    json_t *fns = json_object_get(root, "functions"), *mem = NULL;
    for (size_t i = 0; i < json_array_size(fns); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(fns, i), "name")), "main"))
            mem = json_object_get(json_array_get(fns, i), "memory");
    ck_assert_ptr_nonnull(mem);
    json_incref(mem);
    json_decref(root);
    return mem;
}

static int64_t mem_int(json_t *mem, const char *key)
{
    json_t *v = json_object_get(mem, key);
    ck_assert_msg(json_is_integer(v), "memory.%s is not an integer", key);
    return json_integer_value(v);
}

/* Runs main at n and checks c = 2 relu(2x + 1) + 1 (and returns the peak). */
static int64_t run(rx_rt_module *m, int64_t n)
{
    float *x = malloc(sizeof(float) * 4 * (size_t)n);
    for (int64_t i = 0; i < 4 * n; i++) x[i] = (float)((i * 37) % 17) / 4.0f - 2.0f;
    int64_t xs[2] = {n, 4};
    DLTensor xt = {0};
    xt.data = x, xt.device.device_type = kDLCPU, xt.ndim = 2, xt.shape = xs;
    xt.dtype.code = kDLFloat, xt.dtype.bits = 32, xt.dtype.lanes = 1;
    rx_rt_arg arg = {0};
    arg.kind = RX_RT_ARG_TENSOR, arg.tensor = &xt;
    rx_rt_outputs *out = NULL;
    rx_rt_call_stats st;
    rx_rt_err err = {""};
    ck_assert_msg(rx_rt_call(m, rx_rt_find_function(m, "main"), &arg, 1, &out, &st, &err) == 0, "%s", err.msg);
    const float *c = rx_rt_outputs_tensor(out, 0)->data;
    for (int64_t i = 0; i < 4 * n; i++) {
        float a = 2 * x[i] + 1, b = a > 0 ? a : 0;
        ck_assert_float_eq_tol(c[i], 2 * b + 1, 1e-6);
    }
    rx_rt_outputs_free(out);
    free(x);
    return st.peak_bytes;
}

START_TEST(lifted_runs_and_is_planned)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    for (int v = 0; v < 4; v++) {
        bool lift = v < 2, bound = v % 2;
        size_t n;
        uint8_t *rxa = build(bound ? bounded : sym, lift, &n);
        rx_rt_err err = {""};
        rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, n, "lift.rxa", &err);
        free(rxa);
        ck_assert_msg(m != NULL, "%s", err.msg);
        json_t *mem = memory_of(m);
        /* lifted: a, a's workspace, b, c, c's workspace; else a, b, c */
        ck_assert_int_eq(mem_int(mem, "allocations"), lift ? 5 : 3);
        ck_assert_int_eq(mem_int(mem, "planned_tensors"), lift ? 4 : 2);
        if (lift && !bound) {
            /* n * 16 each: a's workspace dies at a = a_ws[0], b takes its storage; c's
             * workspace takes a's: four planned tensors in two storages */
            ck_assert_int_eq(mem_int(mem, "planned_storages"), 2);
            ck_assert_int_eq(mem_int(mem, "storages"), 3);
        }
        if (lift && bound) {
            /* one arena: at most two of a, a_ws.1, b, c_ws.1 are live at once */
            ck_assert_int_eq(mem_int(mem, "storages"), 2);
            ck_assert_int_eq(mem_int(mem, "arena_bytes"), 2 * 64 * 16);
            ck_assert_int_eq(mem_int(mem, "arena_live_bytes"), 2 * 64 * 16);
        }
        json_decref(mem);
        int64_t peak = run(m, 5);
        run(m, bound ? 64 : 33);
        if (lift && !bound) ck_assert_int_eq(peak, 3 * 5 * 16); /* c, c_ws.1 and b */
        rx_rt_module_free(m);
    }
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* pair's tuple (Y, Z): read through get_item only, it is extended in place; returned
 * whole, it is rebuilt from the extended call's fields. Both run correctly. */
#define PAIR_MAIN(result_binding, result)                                                 \
    "{'format':'relax-json','version':1,'functions':{"                                     \
    "'main':{'kind':'relax','params':[{'name':'x','type':" T4 "}],"                        \
    "'body':{'blocks':[{'dataflow':true,'bindings':["                                      \
    "{'var':'p','value':" TIR("pair", "['x']", "{'tuple':[" T4 "," T4 "]}") "},"            \
    "{'var':'y','value':{'get_item':'p','index':0}},"                                       \
    "{'var':'z','value':{'get_item':'p','index':1}}" result_binding "]}],"                  \
    "'result':'" result "'}}," K_PAIR "}}"

START_TEST(tuple_outputs)
{
    static const char items[] = PAIR_MAIN(",{'var':'r','value':{'tuple':['z','y']}}", "r");
    static const char whole[] = PAIR_MAIN("", "p");
    rx_module *m = lifted(items);
    const rx_block *b = rx_module_find(m, "main")->body->blocks[0];
    ck_assert_int_eq(b->nbindings, 4); /* p rebound in place */
    ck_assert_int_eq(b->bindings[0].value->u.call.out->nfields, 3);
    ck_assert_int_eq(b->bindings[0].var->sinfo->nfields, 3);
    rx_module_free(m);
    m = lifted(whole);
    b = rx_module_find(m, "main")->body->blocks[0];
    ck_assert_int_eq(b->nbindings, 6); /* p_ws, p_0, p_1, p = (p_0, p_1), y, z */
    ck_assert_int_eq(b->bindings[3].value->kind, RX_N_TUPLE);
    ck_assert_int_eq(b->bindings[3].var->sinfo->nfields, 2);
    rx_module_free(m);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    for (int v = 0; v < 2; v++) {
        size_t n;
        uint8_t *rxa = build(v ? whole : items, true, &n);
        rx_rt_err err = {""};
        rx_rt_module *rm = rx_rt_load_bytes(ctx, rxa, n, "pair.rxa", &err);
        free(rxa);
        ck_assert_msg(rm != NULL, "%s", err.msg);
        float x[12];
        for (int i = 0; i < 12; i++) x[i] = (float)i - 5.5f;
        int64_t xs[2] = {3, 4};
        DLTensor xt = {0};
        xt.data = x, xt.device.device_type = kDLCPU, xt.ndim = 2, xt.shape = xs;
        xt.dtype.code = kDLFloat, xt.dtype.bits = 32, xt.dtype.lanes = 1;
        rx_rt_arg arg = {0};
        arg.kind = RX_RT_ARG_TENSOR, arg.tensor = &xt;
        rx_rt_outputs *out = NULL;
        ck_assert_msg(rx_rt_call(rm, rx_rt_find_function(rm, "main"), &arg, 1, &out, NULL, &err) == 0,
                      "%s", err.msg);
        ck_assert_int_eq(rx_rt_outputs_count(out), 2);
        const float *o0 = rx_rt_outputs_tensor(out, 0)->data, *o1 = rx_rt_outputs_tensor(out, 1)->data;
        for (int i = 0; i < 12; i++) { /* items: (z, y); whole: (y, z) */
            ck_assert_float_eq(v ? o0[i] : o1[i], 2 * x[i] + 1);
            ck_assert_float_eq(v ? o1[i] : o0[i], 2 * x[i] - 1);
        }
        rx_rt_outputs_free(out);
        rx_rt_module_free(rm);
    }
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *lift_suite(void)
{
    Suite *s = suite_create("lift_workspace");
    TCase *tc = tcase_create("lift_workspace");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lifts_global_alloc);
    tcase_add_test(tc, leaves_other_allocs);
    tcase_add_test(tc, lifted_runs_and_is_planned);
    tcase_add_test(tc, tuple_outputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(lift_suite()); }
