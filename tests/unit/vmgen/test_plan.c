/*
 * test_plan.c — static memory planning (plan.c, lifetime.c; paper §4.3, Algorithm 3):
 * Figure 10 plans its three intermediates into two storages (plus the output's own)
 * without upper bounds and into one arena of two tensors' bytes with them, a chain of
 * ten relus into two, sizes n and 2n not shared without bounds but packed with them,
 * escaping tensors (tuple results) and parameters never reused, if-branches, tuple
 * outputs of call_tir (FuseTIR's multi-output calls, lifted workspaces), copies and
 * match_cast, graph calls (an argument stays plannable unless the callee may return
 * it), the liveness lower bound (and that the unplanned runtime peak meets it), the
 * metadata figures, peak memory with and without planning — every module run and its
 * values computed here. Modules are built at opt level 1 (planning, no fusion), so
 * the kernels and storages counted are the ones written.
 */
#include "vg_test.h"

#include "relax/vm.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>

#define T(shape) "{'tensor':{'shape':" shape ",'dtype':'f32'}}"
#define TIR(name, args, out) "{'call_tir':'@" name "','args':" args ",'out':" out "}"
#define MODULE(fns) "{'format':'relax-json','version':1,'functions':{" fns "}}"
#define KERNEL(name, xs, ys, ext, store)                                                     \
    "'" name "':{'kind':'tir','params':[{'name':'X','buffer':{'shape':" xs ",'dtype':'f32'}}," \
    "{'name':'Y','buffer':{'shape':" ys ",'dtype':'f32'}}],"                                  \
    "'body':[{'grid':['i','j'],'extents':" ext ",'body':[{'block':'" name "',"               \
    "'body':[{'store':'Y[i, j]','value':'" store "'}]}]}]}"
/* relu (n, m) -> (n, m); twice; bcast (n, 1) -> (n, 2); first (n, 2) -> (n, 1) */
#define K_RELU KERNEL("relu", "['n','m']", "['n','m']", "['n','m']", "select(X[i, j] > 0.0, X[i, j], 0.0)")
#define K_TWICE KERNEL("twice", "['n','m']", "['n','m']", "['n','m']", "X[i, j] * 2.0")
#define K_BCAST KERNEL("bcast", "['n',1]", "['n',2]", "['n',2]", "X[i, 0] + 1.0")
#define K_FIRST KERNEL("first", "['n',2]", "['n',1]", "['n',1]", "X[i, 0] * 3.0")
#define BUF(name) "{'name':'" name "','buffer':{'shape':['n',2],'dtype':'f32'}}"
/* two: X (n, 2) -> Y = 2X and W = X + 1 (a tuple output); add2: Y = A + B */
#define K_TWO                                                                              \
    "'two':{'kind':'tir','params':[" BUF("X") "," BUF("Y") "," BUF("W") "],"                \
    "'body':[{'grid':['i','j'],'extents':['n',2],'body':[{'block':'two','body':["         \
    "{'store':'Y[i, j]','value':'X[i, j] * 2.0'},{'store':'W[i, j]','value':'X[i, j] + 1.0'}]}]}]}"
#define K_ADD2                                                                             \
    "'add2':{'kind':'tir','params':[" BUF("A") "," BUF("B") "," BUF("Y") "],"               \
    "'body':[{'grid':['i','j'],'extents':['n',2],'body':[{'block':'add2','body':["        \
    "{'store':'Y[i, j]','value':'A[i, j] + B[i, j]'}]}]}]}"
#define T2 T("['n',2]")
#define T22 "{'tuple':[" T2 "," T2 "]}"

/* Counts ALLOC_STORAGE lines of function 0's disassembly. */
static int count_storages(rx_rt_module *m)
{
    char *dis = rx_vm_disasm(rx_rt_module_artifact(m), 0);
    int k = 0;
    for (const char *p = dis; (p = strstr(p, "ALLOC_STORAGE")); p++) k++;
    free(dis);
    return k;
}

/* The metadata's memory object of function 0 (a new reference). */
static json_t *memory_of(rx_rt_module *m)
{
    const rx_rxa_section *md = rx_rxa_section_get(rx_rt_module_artifact(m), RX_RXA_METADATA);
    ck_assert_ptr_nonnull(md);
    json_error_t je;
    json_t *root = json_loadb((const char *)md->data, md->size, 0, &je);
    ck_assert_msg(root != NULL, "%s", je.text);
    json_t *mem = json_object_get(json_array_get(json_object_get(root, "functions"), 0), "memory");
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

static char *read_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", RX_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    rx_sb text = {0};
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(&text, buf, k);
    fclose(f);
    return rx_sb_take(&text);
}

static const rx_build_opts o1 = {.opt_level = 1};

/* Builds double-quoted JSON at opt level 1 and loads it. */
static rx_rt_module *load_json(rx_rt_ctx *ctx, const char *json)
{
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    size_t n = 0;
    bool ok = rx_build(json, strlen(json), &o1, &rxa, &n, &d);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    ck_assert_msg(ok, "build failed:\n%s", rx_sb_str(&msg));
    rx_sb_free(&msg);
    rx_diags_free(&d);
    rx_rt_err err = {""};
    rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, n, "plan.rxa", &err);
    free(rxa);
    ck_assert_msg(m != NULL, "load failed: %s", err.msg);
    return m;
}

/* Single-quoted JSON built at opt level 1 and loaded. */
static rx_rt_module *load_sq(rx_rt_ctx *ctx, const char *sq)
{
    char *j = vt_json(sq);
    rx_rt_module *m = load_json(ctx, j);
    free(j);
    return m;
}

/* Figure 10 from the corpus with its attrs replaced by `attrs` (a JSON object). */
static char *fig10_with(const char *attrs)
{
    char *text = read_file("tests/modules/valid/fig10_memory_plan.json");
    const char *key = "\"upper_bounds\": {\n          \"n\": 4096\n        }";
    char *at = strstr(text, key);
    ck_assert_ptr_nonnull(at);
    rx_sb out = {0};
    rx_sb_putn(&out, text, (size_t)(at - text));
    rx_sb_printf(&out, "%s", attrs);
    rx_sb_printf(&out, "%s", at + strlen(key));
    free(text);
    return rx_sb_take(&out);
}

/* Runs Figure 10 at n and checks y = transpose(relu(transpose(exp(x)))) = exp(x). */
static int64_t run_fig10(rx_rt_module *m, int64_t n)
{
    float *x = malloc(sizeof(float) * 2 * (size_t)n);
    vt_fill(x, 2 * n, 3);
    int64_t xs[2] = {2, n};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    DLTensor *y = rx_rt_outputs_tensor(out, 0);
    ck_assert(y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == n);
    for (int64_t i = 0; i < 2 * n; i++)
        ck_assert_float_eq_tol(((float *)y->data)[i], expf(x[i]), 1e-5);
    ck_assert_int_eq(st.kernels, 4);
    rx_rt_outputs_free(out);
    free(x);
    return st.peak_bytes;
}

START_TEST(figure10_two_storages)
{
    /* with upper_bounds n <= 4096: one arena of 2 * 4096 * 4 bytes, twice, at entry */
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    char *j = read_file("tests/modules/valid/fig10_memory_plan.json");
    rx_rt_module *m = load_json(ctx, j);
    free(j);
    ck_assert_int_eq(count_storages(m), 2); /* the arena + the output's own */
    json_t *mem = memory_of(m);
    ck_assert(json_is_true(json_object_get(mem, "planned")));
    ck_assert_int_eq(mem_int(mem, "allocations"), 4);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "static_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "planned_tensors"), 3);
    ck_assert_int_eq(mem_int(mem, "arena_bytes"), 2 * 32768); /* lv0 and lv2 share */
    ck_assert_int_eq(mem_int(mem, "storages"), 2);
    ck_assert_int_eq(mem_int(mem, "max_bytes_without_planning"), 4 * 32768);
    ck_assert_int_eq(mem_int(mem, "max_bytes_with_planning"), 3 * 32768);
    ck_assert_str_eq(json_string_value(json_object_get(mem, "bytes_without_planning")), "n * 32");
    /* two (2, n) f32 tensors live at once, never more */
    ck_assert_str_eq(json_string_value(json_object_get(mem, "lower_bound_bytes")), "n * 16");
    ck_assert_int_eq(mem_int(mem, "max_lower_bound_bytes"), 2 * 32768);
    json_decref(mem);
    int64_t peak = run_fig10(m, 4096);
    ck_assert_int_eq(peak, 3 * 32768); /* the arena lives until the output exists */
    run_fig10(m, 7); /* smaller n: views into the same arena */
    /* beyond the bound the arena's offsets do not hold: a runtime error at entry, not
     * tensors running into each other */
    float *x = calloc(2 * 4097, sizeof(float));
    int64_t xs[2] = {2, 4097};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out;
    rx_rt_err err = {""};
    ck_assert_int_eq(vt_call(m, "main", &arg, 1, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: n must be at most 4096 (its upper bound, which the static memory "
                              "plan is sized for), got 4096 != 4097");
    free(x);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);

    /* without bounds: symbolic sizes, 2 * n * 4 proved equal to n * 2 * 4 */
    j = fig10_with("\"name\": \"nobounds\"");
    m = load_json(ctx, j);
    free(j);
    ck_assert_int_eq(count_storages(m), 3);
    mem = memory_of(m);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 2);
    ck_assert_int_eq(mem_int(mem, "static_storages"), 0);
    ck_assert_int_eq(mem_int(mem, "arena_bytes"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(mem, "bytes_with_planning")), "n * 24");
    ck_assert(json_is_null(json_object_get(mem, "max_bytes_with_planning")));
    ck_assert_str_eq(json_string_value(json_object_get(mem, "lower_bound_bytes")), "n * 16");
    ck_assert(json_is_null(json_object_get(mem, "max_lower_bound_bytes")));
    json_decref(mem);
    int64_t planned = run_fig10(m, 4096);
    rx_rt_module_free(m);

    /* planning off: four storages, one per tensor */
    j = fig10_with("\"memory_plan\": false");
    m = load_json(ctx, j);
    free(j);
    ck_assert_int_eq(count_storages(m), 4);
    mem = memory_of(m);
    ck_assert(json_is_false(json_object_get(mem, "planned")));
    ck_assert_int_eq(mem_int(mem, "storages"), 4);
    ck_assert_int_eq(mem_int(mem, "planned_tensors"), 0);
    json_decref(mem);
    int64_t unplanned = run_fig10(m, 4096);
    ck_assert_int_eq(planned, 2 * 32768);
    ck_assert_int_eq(unplanned, 2 * 32768); /* RELEASE already meets the lower bound */
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A chain of ten relus: nine intermediates in two storages. */
START_TEST(relu_chain_two_storages)
{
    rx_sb j = {0};
    rx_sb_printf(&j, "%s", "{'format':'relax-json','version':1,'functions':{"
                           "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n',4]") "}],"
                           "'body':{'blocks':[{'dataflow':true,'bindings':[");
    for (int i = 0; i < 10; i++) {
        char prev[8];
        snprintf(prev, sizeof prev, i ? "v%d" : "x", i - 1);
        rx_sb_printf(&j, "%s{'var':'v%d','value':{'call_tir':'@relu','args':['%s'],'out':" T("['n',4]") "}}",
                     i ? "," : "", i, prev);
    }
    rx_sb_printf(&j, "%s", "]}],'result':'v9'}}," K_RELU "}}");
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_sq(ctx, rx_sb_str(&j));
    rx_sb_free(&j);
    ck_assert_int_eq(count_storages(m), 3); /* two planned + the output's own */
    json_t *mem = memory_of(m);
    ck_assert_int_eq(mem_int(mem, "allocations"), 10);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 2);
    json_decref(mem);
    float x[24];
    vt_fill(x, 24, 5);
    int64_t xs[2] = {6, 4};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    for (int i = 0; i < 24; i++)
        ck_assert_float_eq(((float *)rx_rt_outputs_tensor(out, 0)->data)[i], x[i] > 0 ? x[i] : 0);
    ck_assert_int_eq(st.kernels, 10);
    ck_assert_int_eq(st.peak_bytes, 2 * 96);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* x (n, 1): a = bcast(x) (n, 2); b = first(a) (n, 1); c = relu(b) (n, 1); d = bcast(c).
 * c cannot take a's storage (8n bytes vs 4n) without bounds; with n <= 64 it can. */
#define SIZES(attrs)                                                                       \
    MODULE("'main':{'kind':'relax','params':[{'name':'x','type':" T("['n',1]") "}]," attrs \
           "'body':{'blocks':[{'dataflow':true,'bindings':["                                \
           "{'var':'a','value':" TIR("bcast", "['x']", T("['n',2]")) "},"                   \
           "{'var':'b','value':" TIR("first", "['a']", T("['n',1]")) "},"                   \
           "{'var':'c','value':" TIR("relu", "['b']", T("['n',1]")) "},"                    \
           "{'var':'d','value':" TIR("bcast", "['c']", T("['n',2]")) "}]}],"                \
           "'result':'d'}}," K_BCAST "," K_FIRST "," K_RELU)

static void run_sizes(rx_rt_module *m, int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    vt_fill(x, n, 9);
    int64_t xs[2] = {n, 1};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
    const float *y = rx_rt_outputs_tensor(out, 0)->data;
    for (int64_t i = 0; i < n; i++) {
        float b = (x[i] + 1.0f) * 3.0f, want = (b > 0 ? b : 0) + 1.0f;
        ck_assert_float_eq_tol(y[2 * i], want, 1e-5);
        ck_assert_float_eq_tol(y[2 * i + 1], want, 1e-5);
    }
    rx_rt_outputs_free(out);
    free(x);
}

START_TEST(different_sizes_need_bounds)
{
    static const char sym[] = SIZES("");
    static const char bounded[] = SIZES("'attrs':{'upper_bounds':{'n':64}},");
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_sq(ctx, sym);
    json_t *mem = memory_of(m);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 3);
    ck_assert_int_eq(count_storages(m), 4);
    json_decref(mem);
    run_sizes(m, 5);
    run_sizes(m, 33);
    rx_rt_module_free(m);
    m = load_sq(ctx, bounded);
    mem = memory_of(m);
    /* one arena: a (8n) at 0, b (4n) above it, c (4n) back at 0 once a is dead */
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "static_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "arena_bytes"), 64 * 8 + 64 * 4);
    ck_assert_int_eq(mem_int(mem, "max_bytes_with_planning"), 64 * 8 + 64 * 4 + 64 * 8);
    ck_assert_int_eq(mem_int(mem, "max_bytes_without_planning"), 64 * 8 * 2 + 64 * 4 * 2);
    /* a + b (12n) and c + d (12n) are the most live at once */
    ck_assert_str_eq(json_string_value(json_object_get(mem, "lower_bound_bytes")), "n * 12");
    ck_assert_int_eq(mem_int(mem, "max_lower_bound_bytes"), 64 * 12);
    json_decref(mem);
    ck_assert_int_eq(count_storages(m), 2);
    run_sizes(m, 5);
    run_sizes(m, 64);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* a escapes through the result tuple and x is a parameter: neither storage is taken by
 * c or d; both outputs and the input keep their values. */
START_TEST(outputs_and_params_not_reused)
{
    static const char esc[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T("['n',2]") "}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'a','value':" TIR("twice", "['x']", T("['n',2]")) "},"
        "{'var':'b','value':" TIR("twice", "['a']", T("['n',2]")) "},"
        "{'var':'c','value':" TIR("twice", "['b']", T("['n',2]")) "},"
        "{'var':'d','value':" TIR("twice", "['c']", T("['n',2]")) "},"
        "{'var':'e','value':" TIR("twice", "['d']", T("['n',2]")) "},"
        "{'var':'r','value':{'tuple':['a','e']}}]}],"
        "'result':'r'}}," K_TWICE);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_sq(ctx, esc);
    json_t *mem = memory_of(m);
    ck_assert_int_eq(mem_int(mem, "allocations"), 5);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 2); /* b, c, d */
    ck_assert_int_eq(mem_int(mem, "storages"), 4);        /* + a and e */
    json_decref(mem);
    float x[10], x0[10];
    vt_fill(x, 10, 11);
    memcpy(x0, x, sizeof x);
    int64_t xs[2] = {5, 2};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    for (int rep = 0; rep < 2; rep++) {
        rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, NULL);
        const float *a = rx_rt_outputs_tensor(out, 0)->data, *e = rx_rt_outputs_tensor(out, 1)->data;
        for (int i = 0; i < 10; i++) {
            ck_assert_float_eq(x[i], x0[i]);
            ck_assert_float_eq(a[i], 2 * x0[i]);
            ck_assert_float_eq(e[i], 32 * x0[i]);
        }
        rx_rt_outputs_free(out);
    }
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* p lives across the if and is used after it; each branch has its own chain; the
 * branch results flow out (not planned). Both paths, with and without bounds. */
#define IFMOD(attrs)                                                                       \
    MODULE("'main':{'kind':'relax','params':[{'name':'c','type':{'tensor':{'shape':[],'dtype':'bool'}}}," \
           "{'name':'x','type':" T("['n',2]") "}]," attrs                                   \
           "'body':{'blocks':[{'bindings':["                                                \
           "{'var':'p','value':" TIR("twice", "['x']", T("['n',2]")) "},"                   \
           "{'var':'q','value':" TIR("relu", "['p']", T("['n',2]")) "},"                    \
           "{'var':'r','value':{'if':'c',"                                                  \
           "'then':{'blocks':[{'bindings':["                                                \
           "{'var':'t1','value':" TIR("twice", "['q']", T("['n',2]")) "},"                  \
           "{'var':'t2','value':" TIR("twice", "['t1']", T("['n',2]")) "},"                 \
           "{'var':'t3','value':" TIR("twice", "['t2']", T("['n',2]")) "}]}],'result':'t3'}," \
           "'else':{'blocks':[{'bindings':["                                                \
           "{'var':'e1','value':" TIR("relu", "['q']", T("['n',2]")) "},"                   \
           "{'var':'e2','value':" TIR("twice", "['e1']", T("['n',2]")) "}]}],'result':'e2'}}}," \
           "{'var':'s','value':" TIR("twice", "['r']", T("['n',2]")) "},"                   \
           "{'var':'u','value':" TIR("twice", "['p']", T("['n',2]")) "},"                   \
           "{'var':'v','value':{'tuple':['s','u']}}]}],"                                    \
           "'result':'v'}}," K_TWICE "," K_RELU)

static void run_if(rx_rt_module *m)
{
    float x[8];
    vt_fill(x, 8, 13);
    uint8_t cond;
    int64_t xs[2] = {4, 2};
    DLTensor ct = vt_dl(&cond, kDLUInt, 1, 0, NULL), xt = vt_f32(x, 2, xs);
    rx_rt_arg args[2] = {vt_t(&ct), vt_t(&xt)};
    for (cond = 0; cond < 2; cond++)
        for (int rep = 0; rep < 2; rep++) {
            rx_rt_outputs *out = vt_ok(m, "main", args, 2, NULL);
            const float *s = rx_rt_outputs_tensor(out, 0)->data, *u = rx_rt_outputs_tensor(out, 1)->data;
            for (int i = 0; i < 8; i++) {
                float p = 2 * x[i], q = p > 0 ? p : 0, r = cond ? 8 * q : 2 * q;
                ck_assert_float_eq(s[i], 2 * r);
                ck_assert_float_eq(u[i], 2 * p);
            }
            rx_rt_outputs_free(out);
        }
}

START_TEST(if_branches)
{
    static const char sym[] = IFMOD("");
    static const char bounded[] = IFMOD("'attrs':{'upper_bounds':{'n':16}},");
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_sq(ctx, sym);
    json_t *mem = memory_of(m);
    /* body: p (lives across the if), q; then: t1, t2 (+ reuse); else: e1 */
    ck_assert_int_ge(mem_int(mem, "planned_storages"), 2);
    json_decref(mem);
    run_if(m);
    rx_rt_module_free(m);
    m = load_sq(ctx, bounded);
    mem = memory_of(m);
    /* static: one arena; p and q, then the branches' chains, which may overlap each
     * other (only one runs) but not p, which lives across the if */
    ck_assert_int_eq(mem_int(mem, "static_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "planned_storages"), 1);
    ck_assert_int_eq(mem_int(mem, "planned_tensors"), 5); /* p q t1 t2 e1: not t3 e2 s u */
    /* p, q (dead only after the whole if), t1 and t2 at once; e1 reuses t1's range */
    ck_assert_int_eq(mem_int(mem, "arena_bytes"), 4 * 16 * 8);
    json_decref(mem);
    run_if(m);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Builds single-quoted JSON with options o and loads it. */
static rx_rt_module *load_opts(rx_rt_ctx *ctx, const char *sq, const rx_build_opts *o)
{
    size_t n;
    uint8_t *rxa = vt_build(sq, o, &n);
    rx_rt_err err = {""};
    rx_rt_module *m = rx_rt_load_bytes(ctx, rxa, n, "plan.rxa", &err);
    free(rxa);
    ck_assert_msg(m != NULL, "load failed: %s", err.msg);
    return m;
}

/* Calls main(x: (n, 2)); returns the outputs (freed by the caller; they never alias x
 * in these modules, so x's descriptor may go when the call returns). */
static rx_rt_outputs *call_n2(rx_rt_module *m, float *x, int64_t n, int64_t *peak)
{
    int64_t xs[2] = {n, 2};
    DLTensor xt = vt_f32(x, 2, xs);
    rx_rt_arg arg = vt_t(&xt);
    rx_rt_call_stats st;
    rx_rt_outputs *out = vt_ok(m, "main", &arg, 1, &st);
    if (peak) *peak = st.peak_bytes;
    return out;
}

/* t = two(x) is a tuple output (as FuseTIR's multi-output calls and lifted workspaces
 * are): y = t[0], w = t[1] are planned like any intermediate; r = relu(2y + w). */
#define TUPLE_OUT(attrs)                                                                  \
    MODULE("'main':{'kind':'relax','params':[{'name':'x','type':" T2 "}]," attrs          \
           "'body':{'blocks':[{'dataflow':true,'bindings':["                             \
           "{'var':'t','value':" TIR("two", "['x']", T22) "},"                            \
           "{'var':'y','value':{'get_item':'t','index':0}},"                                   \
           "{'var':'w','value':{'get_item':'t','index':1}},"                                   \
           "{'var':'z','value':" TIR("twice", "['y']", T2) "},"                           \
           "{'var':'z2','value':" TIR("add2", "['z','w']", T2) "},"                       \
           "{'var':'r','value':" TIR("relu", "['z2']", T2) "}]}],"                        \
           "'result':'r'}}," K_TWO "," K_TWICE "," K_ADD2 "," K_RELU)

START_TEST(tuple_outputs_planned)
{
    static const char sym[] = TUPLE_OUT("");
    static const char bounded[] = TUPLE_OUT("'attrs':{'upper_bounds':{'n':8}},");
    static const char *const noplan[] = {"memory_plan", NULL};
    rx_build_opts off = {.opt_level = 1, .disable = noplan};
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    float x[16];
    vt_fill(x, 16, 17);
    for (int variant = 0; variant < 3; variant++) {
        rx_rt_module *m = variant == 2 ? load_opts(ctx, sym, &off) : load_sq(ctx, variant ? bounded : sym);
        json_t *mem = memory_of(m);
        ck_assert_int_eq(mem_int(mem, "allocations"), 5);
        ck_assert_int_eq(mem_int(mem, "planned_tensors"), variant == 2 ? 0 : 4); /* t.0 t.1 z z2 */
        /* t.0 + t.1 + z, and t.1 + z + z2, are the most live at once */
        ck_assert_str_eq(json_string_value(json_object_get(mem, "lower_bound_bytes")), "n * 24");
        if (variant == 1) {
            ck_assert_int_eq(mem_int(mem, "arena_bytes"), 3 * 64); /* z2 reuses t.0's range */
            ck_assert_int_eq(mem_int(mem, "max_lower_bound_bytes"), 3 * 64);
        }
        if (variant == 0) ck_assert_int_eq(mem_int(mem, "planned_storages"), 3);
        json_decref(mem);
        for (int64_t n = 3; n <= 8; n += 5) {
            int64_t peak;
            rx_rt_outputs *out = call_n2(m, x, n, &peak);
            const float *r = rx_rt_outputs_tensor(out, 0)->data;
            for (int i = 0; i < 2 * n; i++) {
                float want = 4 * x[i] + x[i] + 1;
                ck_assert_float_eq_tol(r[i], want > 0 ? want : 0, 1e-5);
            }
            if (variant == 2) ck_assert_int_eq(peak, 24 * n); /* the lower bound, exactly */
            if (variant == 1) ck_assert_int_eq(peak, 3 * 64 + 8 * n);
            rx_rt_outputs_free(out);
        }
        rx_rt_module_free(m);
    }
    rx_rt_ctx_free(ctx);
}
END_TEST

/* A copy and a match_cast of an intermediate are aliases: the tensor is planned and
 * lives until its last alias is used (canonicalize would fold them: it is off). */
START_TEST(aliases_extend_lifetimes)
{
    static const char mod[] = MODULE(
        "'main':{'kind':'relax','params':[{'name':'x','type':" T2 "}],"
        "'attrs':{'upper_bounds':{'n':8}},"
        "'body':{'blocks':[{'bindings':["
        "{'var':'a','value':" TIR("twice", "['x']", T2) "},"
        "{'var':'b','value':'a'},"
        "{'var':'c','match_cast':'b','type':" T2 "},"
        "{'var':'d','value':" TIR("relu", "['x']", T2) "},"
        "{'var':'e','value':" TIR("add2", "['c','d']", T2) "}]}],"
        "'result':'e'}}," K_TWICE "," K_RELU "," K_ADD2);
    static const char *const off[] = {"canonicalize", "dce", NULL};
    rx_build_opts o = {.opt_level = 1, .disable = off};
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_opts(ctx, mod, &o);
    json_t *mem = memory_of(m);
    ck_assert_int_eq(mem_int(mem, "planned_tensors"), 2);   /* a (through b, c) and d */
    ck_assert_int_eq(mem_int(mem, "arena_bytes"), 2 * 64); /* a is live when d is made */
    json_decref(mem);
    float x[16];
    vt_fill(x, 16, 19);
    rx_rt_outputs *out = call_n2(m, x, 8, NULL);
    const float *e = rx_rt_outputs_tensor(out, 0)->data;
    for (int i = 0; i < 16; i++) ck_assert_float_eq_tol(e[i], 2 * x[i] + (x[i] > 0 ? x[i] : 0), 1e-6);
    rx_rt_outputs_free(out);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

/* Graph calls: an intermediate passed to a function that never returns a parameter
 * stays plannable; one passed to a function that may return it (ident) escapes — if it
 * were planned, f = twice(x) would take its bytes and overwrite what v still shows. */
START_TEST(graph_calls)
{
    static const char mod[] = MODULE(
        "'helper':{'kind':'relax','params':[{'name':'a','type':" T2 "}],"
        "'body':{'blocks':[{'bindings':[{'var':'h','value':" TIR("twice", "['a']", T2) "}]}],"
        "'result':'h'}},"
        "'ident':{'kind':'relax','params':[{'name':'a','type':" T2 "}],"
        "'body':{'blocks':[],'result':'a'}},"
        "'main':{'kind':'relax','params':[{'name':'x','type':" T2 "}],"
        "'attrs':{'upper_bounds':{'n':8}},"
        "'body':{'blocks':[{'bindings':["
        "{'var':'p','value':" TIR("twice", "['x']", T2) "},"
        "{'var':'q','value':{'call':'@helper','args':['p']}},"
        "{'var':'u','value':" TIR("relu", "['x']", T2) "},"
        "{'var':'v','value':{'call':'@ident','args':['u']}},"
        "{'var':'f','value':" TIR("twice", "['x']", T2) "},"
        "{'var':'g','value':" TIR("add2", "['v','f']", T2) "},"
        "{'var':'k','value':" TIR("add2", "['q','g']", T2) "}]}],"
        "'result':'k'}}," K_TWICE "," K_RELU "," K_ADD2);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = load_sq(ctx, mod);
    const rx_rxa_section *md = rx_rxa_section_get(rx_rt_module_artifact(m), RX_RXA_METADATA);
    json_error_t je;
    json_t *root = json_loadb((const char *)md->data, md->size, 0, &je);
    json_t *fns = json_object_get(root, "functions"), *mem = NULL;
    for (size_t i = 0; i < json_array_size(fns); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(fns, i), "name")), "main"))
            mem = json_object_get(json_array_get(fns, i), "memory");
    ck_assert_ptr_nonnull(mem);
    ck_assert_int_eq(mem_int(mem, "allocations"), 5);
    ck_assert_int_eq(mem_int(mem, "planned_tensors"), 3); /* p, f, g: not u, not k */
    json_decref(root);
    float x[16];
    vt_fill(x, 16, 23);
    for (int rep = 0; rep < 2; rep++) {
        rx_rt_outputs *out = call_n2(m, x, 8, NULL);
        const float *k = rx_rt_outputs_tensor(out, 0)->data;
        for (int i = 0; i < 16; i++)
            ck_assert_float_eq_tol(k[i], 4 * x[i] + (x[i] > 0 ? x[i] : 0) + 2 * x[i], 1e-5);
        rx_rt_outputs_free(out);
    }
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, figure10_two_storages);
    tcase_add_test(tc, relu_chain_two_storages);
    tcase_add_test(tc, different_sizes_need_bounds);
    tcase_add_test(tc, outputs_and_params_not_reused);
    tcase_add_test(tc, if_branches);
    tcase_add_test(tc, tuple_outputs_planned);
    tcase_add_test(tc, aliases_extend_lifetimes);
    tcase_add_test(tc, graph_calls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(plan_suite()); }
