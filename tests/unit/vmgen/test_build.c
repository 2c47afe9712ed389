/*
 * test_build.c — the driver: targets and options, --dump-ir files, the METADATA JSON
 * (signatures, kernels, the passes that ran, the cache key), pass times in the build
 * result only, reproducible bytes (two builds in different temporary directories at O0
 * and O2), a library call's run-time shape error naming its binding, printing after
 * every pipeline pass, located lowering errors (among them a
 * library function the target lacks, as in Figure 2), the pass table, and concurrent
 * builds on threads.
 */
#include "vg_test.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/text.h"

/* main(x: (n, 128) f32) = exp(x) + x through an op and a user kernel. */
static const char mod[] =
    "{'format':'relax-json','version':1,'attrs':{'name':'tiny'},'functions':{"
    "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':['n',128],'dtype':'f32'}}}],"
    "'body':{'blocks':[{'bindings':["
    "{'var':'a','value':{'op':'exp','args':['x']}},"
    "{'var':'b','value':{'call_tir':'@copy','args':['a'],'out':{'tensor':{'shape':['n',128],'dtype':'f32'}}}}]}],"
    "'result':'b'}},"
    "'copy':{'kind':'tir','params':[{'name':'X','buffer':{'shape':['m',128],'dtype':'f32'}},"
    "{'name':'Y','buffer':{'shape':['m',128],'dtype':'f32'}}],"
    "'body':[{'grid':['i','j'],'extents':['m',128],'body':[{'block':'copy',"
    "'body':[{'store':'Y[i, j]','value':'X[i, j]'}]}]}]}}}";

START_TEST(targets_and_options)
{
    /* every GPU kind builds here, or is refused with the reason its toolchain is missing */
    static const char *const gpus[] = {"opencl", "vulkan", "cuda"};
    char *e;
    for (int i = 0; i < RX_COUNTOF(gpus); i++) {
        rx_build_opts o = {.target = gpus[i], .opt_level = 2};
        char *j = vt_json(mod);
        rx_diags d;
        rx_diags_init(&d);
        rx_build_result r;
        if (!rx_build_run(j, strlen(j), &o, &r, &d)) {
            rx_sb msg = {0};
            rx_diags_format(&d, &msg);
            ck_assert_msg(strstr(rx_sb_str(&msg), "is not supported yet") &&
                              (strstr(rx_sb_str(&msg), "NVRTC") || strstr(rx_sb_str(&msg), "libshaderc")),
                          "%s: %s", gpus[i], rx_sb_str(&msg));
            rx_sb_free(&msg);
        }
        free(r.rxa);
        rx_diags_free(&d);
        free(j);
    }
    rx_build_opts bad = {.target = "opencl,tile=3", .opt_level = 2};
    e = vt_build_error(mod, &bad);
    ck_assert_msg(strstr(e, "opencl option tile=3 is not a power of two"), "%s", e);
    free(e);
    rx_build_opts o = {.target = "tpu", .opt_level = 2};
    e = vt_build_error(mod, &o);
    ck_assert_msg(strstr(e, "unknown target tpu (known: cpu, cuda, opencl, vulkan)"), "%s", e);
    free(e);
    rx_build_opts lvl = {.target = "cpu", .opt_level = 7};
    e = vt_build_error(mod, &lvl);
    ck_assert_msg(strstr(e, "opt level 7 out of range (0..3)"), "%s", e);
    free(e);
    char *j = vt_json(mod);
    rx_diags d;
    rx_diags_init(&d);
    rx_build_result r;
    rx_build_opts badopt = {.target = "vulkan,max_push_bytes=64", .opt_level = 2};
    ck_assert(!rx_build_run(j, strlen(j), &badopt, &r, &d));
    ck_assert_str_eq(r.failed, "options");
    rx_diags_free(&d);
    rx_diags_init(&d);
    ck_assert(!rx_build_run("{", 1, NULL, &r, &d));
    ck_assert_str_eq(r.failed, "parse");
    rx_diags_free(&d);
    free(j);
}
END_TEST

START_TEST(pipeline_table)
{
    const char *want[] = {"deduce", "simplify", "canonicalize", "dce", "library_lower",
                          "legalize", "dce_post", "analysis", "fuse_ops", "fuse_tir",
                          "lift_workspace", "reshape_view", "specialize", "schedule_matvec",
                          "schedule_moves", "schedule", "memory_plan", "cuda_graph", "lower_vm",
                          "codegen"};
    const int level[] = {0, 1, 1, 1, 2, 0, 0, 0, 2, 2, 2, 0, 3, 1, 0, 1, 1, 2, 0, 0};
    ck_assert_int_eq(rx_pipeline_count(), RX_COUNTOF(want));
    for (int i = 0; i < RX_COUNTOF(want); i++) {
        ck_assert_str_eq(rx_pipeline_name(i), want[i]);
        ck_assert_int_eq(rx_pipeline_min_opt(i), level[i]);
    }
    ck_assert_ptr_null(rx_pipeline_name(RX_COUNTOF(want)));
    ck_assert_int_eq(rx_pipeline_min_opt(RX_COUNTOF(want)), -1);
    /* the optional steps: every stage above level 0, memory_plan included */
    const char *opt[] = {"simplify", "canonicalize", "dce", "library_lower", "fuse_ops",
                         "fuse_tir", "lift_workspace", "specialize", "schedule_matvec",
                         "schedule", "memory_plan", "cuda_graph"};
    for (int i = 0; i < RX_COUNTOF(opt); i++) ck_assert_str_eq(rx_pipeline_optional(i), opt[i]);
    ck_assert_ptr_null(rx_pipeline_optional(RX_COUNTOF(opt)));
}
END_TEST

/* The names of the passes that ran, from the metadata's "passes", comma-joined. */
static void passes_run(const uint8_t *bytes, size_t n, char *out, size_t cap)
{
    rx_rxa *a;
    char err[256];
    ck_assert_msg(rx_rxa_parse(bytes, n, "t.rxa", &a, err, sizeof err) == 0, "%s", err);
    const rx_rxa_section *md = rx_rxa_section_get(a, RX_RXA_METADATA);
    json_t *root = json_loadb((const char *)md->data, md->size, 0, NULL);
    ck_assert_ptr_nonnull(root);
    json_t *ps = json_object_get(root, "passes"), *p;
    size_t i, k = 0;
    out[0] = 0;
    json_array_foreach(ps, i, p) {
        k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? "," : "", json_string_value(p));
        ck_assert(k < cap);
    }
    json_t *planned = json_object_get(json_object_get(json_array_get(json_object_get(root, "functions"), 0),
                                                      "memory"), "planned");
    k += (size_t)snprintf(out + k, cap - k, ";planned=%d", json_is_true(planned));
    json_decref(root);
    rx_rxa_free(a);
}

/* Opt levels choose the passes; --disable-pass turns optional ones off, is part of the
 * cache key (in any order), and names outside the optional list are refused. */
START_TEST(opt_levels_and_disable)
{
    static const char *const runs[4] = {
        "deduce,legalize,dce_post,analysis,reshape_view,schedule_moves,lower_vm,codegen;planned=0",
        "deduce,simplify,canonicalize,dce,legalize,dce_post,analysis,reshape_view,schedule_matvec,"
        "schedule_moves,schedule,lower_vm,codegen;planned=1",
        "deduce,simplify,canonicalize,dce,library_lower,legalize,dce_post,analysis,fuse_ops,"
        "fuse_tir,lift_workspace,reshape_view,schedule_matvec,schedule_moves,schedule,lower_vm,"
        "codegen;planned=1",
        "deduce,simplify,canonicalize,dce,library_lower,legalize,dce_post,analysis,fuse_ops,"
        "fuse_tir,lift_workspace,reshape_view,specialize,schedule_matvec,schedule_moves,schedule,"
        "lower_vm,codegen;planned=1"};
    char got[512];
    for (int lv = 0; lv <= 3; lv++) {
        rx_build_opts o = {.target = "cpu", .opt_level = lv};
        size_t n;
        uint8_t *b = vt_build(mod, &o, &n);
        passes_run(b, n, got, sizeof got);
        ck_assert_str_eq(got, runs[lv]);
        free(b);
    }
    static const char *const off[] = {"memory_plan", "fuse_ops", NULL};
    static const char *const off2[] = {"fuse_ops", "memory_plan", NULL};
    rx_build_opts o = {.target = "cpu", .opt_level = 2, .disable = off};
    size_t n;
    uint8_t *b = vt_build(mod, &o, &n);
    passes_run(b, n, got, sizeof got);
    ck_assert_str_eq(got, "deduce,simplify,canonicalize,dce,library_lower,legalize,dce_post,"
                          "analysis,fuse_tir,lift_workspace,reshape_view,schedule_matvec,schedule_moves,"
                          "schedule,lower_vm,codegen;planned=0");
    free(b);

    char *j = vt_json(mod);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(j, strlen(j), NULL, &d);
    ck_assert(m && rx_deduce_module(m, &d));
    char k0[65], k1[65], k2[65];
    rx_build_opts plain = {.target = "cpu", .opt_level = 2}, o2 = o;
    o2.disable = off2;
    ck_assert(rx_build_key(m, &plain, k0, &d));
    ck_assert(rx_build_key(m, &o, k1, &d));
    ck_assert(rx_build_key(m, &o2, k2, &d));
    ck_assert_str_ne(k0, k1);
    ck_assert_str_eq(k1, k2);
    rx_module_free(m);
    rx_diags_free(&d);
    free(j);

    static const char *const bad[] = {"legalize", NULL};
    rx_build_opts ob = {.target = "cpu", .opt_level = 2, .disable = bad};
    char *e = vt_build_error(mod, &ob);
    ck_assert_msg(strstr(e, "pass legalize cannot be disabled (passes that can: simplify, canonicalize, dce, "
                            "library_lower, fuse_ops, fuse_tir, lift_workspace, specialize, "
                            "schedule_matvec, schedule, memory_plan, cuda_graph)"), "%s", e);
    free(e);
}
END_TEST

START_TEST(dump_ir_files)
{
    char dir[] = "/tmp/rxvm-dump-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof sub, "%s/ir", dir);
    rx_build_opts o = {.target = "cpu", .opt_level = 1, .dump_dir = sub};
    size_t n;
    free(vt_build(mod, &o, &n));
    const char *files[] = {"01-deduce.txt", "06-legalize.txt"};
    for (int i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", sub, files[i]);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "%s missing", path);
        char buf[8192];
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        buf[k] = 0;
        fclose(f);
        ck_assert(strstr(buf, "def main("));
        ck_assert(strstr(buf, "R.call_tir(@copy") != NULL);
        if (i == 0) ck_assert(strstr(buf, "R.exp(x)") != NULL);
        else ck_assert(strstr(buf, "R.exp(") == NULL);
        unlink(path);
    }
    /* every other graph-level pass of O1 wrote its text; lower_vm, codegen and the
       passes of higher levels write none */
    char extra[128];
    for (int i = 0; i < rx_pipeline_count(); i++) {
        const char *name = rx_pipeline_name(i);
        snprintf(extra, sizeof extra, "%s/%02d-%s.txt", sub, i + 1, name);
        bool graph = strcmp(name, "lower_vm") && strcmp(name, "codegen") &&
                     strcmp(name, "memory_plan") && /* a switch, not a pass */
                     rx_pipeline_min_opt(i) <= o.opt_level; /* others did not run at O1 */
        if (i == 0 || !strcmp(name, "legalize")) continue; /* checked and removed above */
        if (graph) ck_assert_msg(unlink(extra) == 0, "%s missing", extra);
        else ck_assert_msg(access(extra, F_OK) != 0, "%s should not exist", extra);
    }
    rmdir(sub);
    rmdir(dir);
    /* an unwritable dump directory is an error */
    rx_build_opts bad = {.target = "cpu", .opt_level = 1, .dump_dir = "/proc/definitely/not/here"};
    char *e = vt_build_error(mod, &bad);
    ck_assert_msg(strstr(e, "cannot create /proc/definitely/not/here"), "%s", e);
    free(e);
}
END_TEST

START_TEST(metadata_json)
{
    rx_build_opts o = {.target = "cpu", .opt_level = 3};
    size_t n;
    uint8_t *bytes = vt_build(mod, &o, &n);
    rx_rxa *a;
    char err[256];
    ck_assert_msg(rx_rxa_parse(bytes, n, "t.rxa", &a, err, sizeof err) == 0, "%s", err);
    const rx_rxa_section *md = rx_rxa_section_get(a, RX_RXA_METADATA);
    ck_assert_ptr_nonnull(md);
    json_error_t je;
    json_t *root = json_loadb((const char *)md->data, md->size, 0, &je);
    ck_assert_msg(root != NULL, "%s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(root, "format")), "rxa");
    ck_assert_int_eq(json_integer_value(json_object_get(root, "format_version")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(root, "compiler")), "relaxc " RX_VERSION);
    ck_assert_str_eq(json_string_value(json_object_get(root, "target")), "cpu");
    ck_assert_int_eq(json_object_size(json_object_get(root, "target_options")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(root, "opt_level")), 3);
    json_t *module = json_object_get(root, "module");
    ck_assert_str_eq(json_string_value(json_object_get(module, "name")), "tiny");

    /* module.hash is the one cache key: the pinned salt "target=T;opt=N;compiler=V",
     * rx_build_key of the deduced module, rx_module_key of the text (the server's key
     * and `relaxc hash --opt-level 3`), and rx_build_result.key */
    char *j = vt_json(mod);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(j, strlen(j), NULL, &d);
    ck_assert(m && rx_deduce_module(m, &d));
    uint8_t h[32];
    char hex[65], key[65], tkey[65];
    rx_struct_hash(m, "target=cpu;opt=3;compiler=" RX_VERSION, h);
    rx_hex(h, 32, hex);
    const char *mhash = json_string_value(json_object_get(module, "hash"));
    ck_assert_str_eq(mhash, hex);
    ck_assert(rx_build_key(m, &o, key, &d));
    ck_assert_str_eq(key, hex);
    ck_assert(rx_module_key(j, strlen(j), &o, NULL, tkey, &d));
    ck_assert_str_eq(tkey, hex);
    rx_build_result br;
    ck_assert(rx_build_run(j, strlen(j), &o, &br, &d));
    ck_assert_str_eq(br.key, hex);
    free(br.rxa);
    /* another opt level or target is another key; NULL options mean cpu at the default */
    rx_build_opts o2 = {.target = "cpu", .opt_level = 2};
    ck_assert(rx_build_key(m, &o2, key, &d));
    ck_assert_str_ne(key, hex);
    ck_assert(rx_build_key(m, NULL, tkey, &d));
    ck_assert_str_eq(tkey, key);
    ck_assert_int_eq(RX_OPT_LEVEL_DEFAULT, 2);
    /* the normalized target salts the key: spellings of one target share it, other
     * targets (also ones not buildable yet) differ; a bad target has none */
    rx_build_opts cl = {.target = "opencl", .opt_level = 3};
    rx_build_opts cl2 = {.target = "opencl,tile=16,max_threads=256", .opt_level = 3};
    rx_build_opts cl8 = {.target = "opencl,tile=8", .opt_level = 3};
    char kcl[65], kcl2[65], kcl8[65];
    ck_assert(rx_build_key(m, &cl, kcl, &d) && rx_build_key(m, &cl2, kcl2, &d) &&
              rx_build_key(m, &cl8, kcl8, &d));
    ck_assert_str_eq(kcl, kcl2);
    ck_assert_str_ne(kcl, hex);
    ck_assert_str_ne(kcl, kcl8);
    rx_struct_hash(m, "target=opencl,tile=8;opt=3;compiler=" RX_VERSION, h);
    rx_hex(h, 32, tkey);
    ck_assert_str_eq(kcl8, tkey);
    rx_build_opts cuda = {.target = "cuda,arch=90", .opt_level = 3};
    ck_assert(!rx_build_key(m, &cuda, key, &d));
    ck_assert_str_eq(key, "");
    rx_module_free(m);
    rx_diags_free(&d);
    free(j);

    json_t *fns = json_object_get(root, "functions");
    ck_assert_int_eq(json_array_size(fns), 1);
    json_t *f0 = json_array_get(fns, 0), *p0 = json_array_get(json_object_get(f0, "params"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(f0, "name")), "main");
    ck_assert_str_eq(json_string_value(json_object_get(p0, "name")), "x");
    ck_assert_str_eq(json_string_value(json_object_get(p0, "text")), "R.Tensor((n, 128), \"f32\")");
    json_t *ts = json_object_get(json_object_get(json_object_get(p0, "type"), "tensor"), "shape");
    ck_assert_str_eq(json_string_value(json_array_get(ts, 0)), "n");
    ck_assert_int_eq(json_integer_value(json_array_get(ts, 1)), 128);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(f0, "symbolic_vars"), 0)), "n");
    ck_assert(json_integer_value(json_object_get(f0, "registers")) >= 1);

    json_t *ks = json_object_get(root, "kernels");
    ck_assert_int_ge(json_array_size(ks), 2); /* copy and the generated exp */
    json_t *k0 = json_array_get(ks, 0);
    ck_assert_str_eq(json_string_value(json_object_get(k0, "function")), "copy");
    ck_assert_str_eq(json_string_value(json_object_get(k0, "symbol")), "rxk_copy");
    ck_assert_int_eq(json_integer_value(json_object_get(k0, "buffers")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(k0, "ivars"), 0)), "m");
    ck_assert_int_eq(json_array_size(json_object_get(root, "libraries")), 0);

    json_t *ps = json_object_get(root, "passes");
    /* memory_plan: a switch; cuda_graph: target cuda only */
    ck_assert_int_eq(json_array_size(ps), rx_pipeline_count() - 2);
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(json_string_value(json_array_get(ps, (size_t)i)), rx_pipeline_name(i));
    json_decref(root);

    /* the signature descriptor relax-run uses for --shape */
    const rx_rxa_func *fn = rx_rxa_find_func(a, "main");
    ck_assert_int_eq(fn->nsym, 1);
    ck_assert_str_eq(fn->syms[0], "n");
    ck_assert_int_eq(fn->params[0].kind, RX_RXA_T_TENSOR);
    ck_assert_int_eq(fn->params[0].dtype, RX_RXA_F32);
    int64_t nv = 6, v;
    ck_assert_int_eq(rx_rxa_dim_eval(&fn->params[0].dims[0], &nv, NULL, 1, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, 6);
    ck_assert_int_eq(fn->result.kind, RX_RXA_T_TENSOR);
    ck_assert_ptr_nonnull(rx_rxa_section_get(a, RX_RXA_KERNELS_CPU));
    rx_rxa_free(a);
    free(bytes);
}
END_TEST

START_TEST(print_after_each_pass)
{
    char *j = vt_json(mod);
    const char *after[] = {"parse", "deduce", "legalize", "lower_vm", "codegen"};
    const char *want[] = {"R.exp(x)", "R.exp(x)", "R.call_tir(@", "CALL_KERNEL rxk_copy", "int32_t rxk_copy("};
    for (int i = 0; i < 5; i++) {
        rx_diags d;
        rx_diags_init(&d);
        rx_sb out = {0};
        const char *failed = "x";
        ck_assert(rx_build_print(j, strlen(j), NULL, after[i], &out, &failed, &d));
        ck_assert_ptr_null(failed);
        ck_assert_msg(strstr(rx_sb_str(&out), want[i]), "after %s:\n%s", after[i], rx_sb_str(&out));
        rx_sb_free(&out);
        rx_diags_free(&d);
    }
    rx_diags d;
    rx_diags_init(&d);
    rx_sb out = {0};
    const char *failed = NULL;
    ck_assert(!rx_build_print(j, strlen(j), NULL, "fuse", &out, &failed, &d));
    ck_assert_str_eq(failed, "options");
    ck_assert_str_eq(d.list.items[0].msg, "unknown pass fuse");
    rx_diags_free(&d);
    rx_sb_free(&out);
    free(j);
}
END_TEST

/* rx_build_opts.max_module_bytes bounds the module text the build parses (relaxc lifts
 * it for local files, relaxd passes its max_module_bytes); 0 is the reader's 256 MiB. */
START_TEST(module_size_limit)
{
    char *j = vt_json(mod);
    size_t n = strlen(j);
    rx_build_opts o = {.max_module_bytes = n - 1};
    rx_build_result r;
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(!rx_build_run(j, n, &o, &r, &d));
    ck_assert_str_eq(r.failed, "parse");
    ck_assert_msg(strstr(d.list.items[0].msg, "over the limit of"), "%s", d.list.items[0].msg);
    rx_diags_free(&d);
    for (int i = 0; i < 2; i++) {
        o.max_module_bytes = i ? n : 0;
        rx_diags_init(&d);
        ck_assert(rx_build_run(j, n, &o, &r, &d));
        free(r.rxa);
        rx_diags_free(&d);
    }
    free(j);
}
END_TEST

START_TEST(lowering_errors_are_located)
{
    static const char fl[] =
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[3],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'v','value':{'prim':2.5,'dtype':'f32'}},"
        "{'var':'u','value':{'op':'unique','args':['x'],'attrs':{'return_counts':true}}}]}],"
        "'result':{'tuple':['x','v','u']}}}}}"; /* both used: dce would drop them */
    char *e = vt_build_error(fl, NULL);
    ck_assert_msg(strstr(e, "functions.main.body.blocks[0].bindings[0].value: main: the VM has no "
                            "f32 scalar values (integers only)\n"), "%s", e);
    ck_assert_msg(!strstr(e, "bindings[1]"), "%s", e); /* unique with counts lowers */
    free(e);
    static const char arity[] =
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[3],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'y','value':{'call_dps_library':'rt.rms_norm','args':['x'],'out':{'tensor':{'ndim':1,'dtype':'f32'}}}}]}],"
        "'result':'y'}}}}";
    e = vt_build_error(arity, NULL);
    ck_assert_msg(strstr(e, "cannot allocate the output of call_dps_library \"rt.rms_norm\""), "%s", e);
    free(e);
}
END_TEST

/* A library function the CPU runtime does not provide is a located build error (the
 * paper's Figure 2 calls cutlass.rms_norm), listing what it does provide; every such
 * call is reported, together with other problems of the same call. */
START_TEST(library_not_on_target)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/modules/valid/fig02_cross_level.json", RX_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    rx_sb text = {0};
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(&text, buf, k);
    fclose(f);
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    size_t n = 0;
    rx_build_opts o = {.target = "cpu", .opt_level = 2};
    ck_assert(!rx_build(rx_sb_str(&text), text.n, &o, &rxa, &n, &d));
    ck_assert_ptr_null(rxa);
    rx_sb msg = {0};
    rx_diags_format(&d, &msg);
    ck_assert_str_eq(rx_sb_str(&msg),
                     "functions.main.body.blocks[0].bindings[1].value: library function "
                     "cutlass.rms_norm is not available on target cpu (available: blas.conv2d, "
                     "blas.matmul, blas.matmul_bias, blas.matmul_bias_gelu, blas.matmul_bias_relu, "
                     "blas.matmul_bias_silu, blas.matmul_gelu, blas.matmul_relu, "
                     "blas.matmul_silu, blas.matmul_view, blas.sgemm, rt.concat, rt.cumsum, rt.group_norm, "
                     "rt.matmul, rt.pool2d, rt.qconv2d, rt.qmatmul, rt.resize2d, rt.rms_norm, rt.rnn, rt.scatter, rt.topk)\n");
    rx_sb_free(&msg);
    rx_diags_free(&d);
    rx_sb_free(&text);

    static const char two[] =
        "{'format':'relax-json','version':1,'functions':{"
        "'main':{'kind':'relax','params':[{'name':'x','type':{'tensor':{'shape':[3],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'y','value':{'call_dps_library':'my.lib','args':['x'],'out':{'tensor':{'ndim':1,'dtype':'f32'}}}},"
        "{'var':'z','value':{'call_dps_library':'cutlass.gemm','args':['x'],'out':{'tensor':{'shape':[3],'dtype':'f32'}}}}]}],"
        "'result':'z'}}}}";
    char *e = vt_build_error(two, NULL);
    ck_assert_msg(strstr(e, "bindings[0].value: library function my.lib is not available on target cpu"), "%s", e);
    ck_assert_msg(strstr(e, "cannot allocate the output of call_dps_library \"my.lib\""), "%s", e);
    ck_assert_msg(strstr(e, "bindings[1].value: library function cutlass.gemm is not available"), "%s", e);
    free(e);
}
END_TEST

/* The build in a fresh temporary directory under parent (its name's length varies
 * with parent), for the C compiler; the bytes (heap) and, in *r, the times. */
static uint8_t *build_in(const char *parent, int opt_level, size_t *n, rx_build_result *r)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/rxrepro.XXXXXX", parent);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rx_cc_opts cc = {0};
    cc.tmpdir = dir;
    rx_build_opts o = {.target = "cpu", .opt_level = opt_level, .cc = &cc};
    char *j = vt_json(mod);
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_build_run(j, strlen(j), &o, r, &d));
    rx_diags_free(&d);
    free(j);
    ck_assert_int_eq(rmdir(dir), 0); /* the C compiler's directory is gone */
    *n = r->rxa_n;
    return r->rxa;
}

/* Same module, target and options: the same bytes, whatever the temporary directory
 * (of another length) and the times; the times are in the result, not the bytes. */
START_TEST(reproducible_bytes)
{
    char deep[] = "/tmp/rx_repro_a_much_longer_parent_directory_name.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(deep));
    static const int levels[] = {0, 2};
    for (int i = 0; i < 2; i++) {
        size_t n1, n2;
        rx_build_result r1, r2;
        uint8_t *a = build_in("/tmp", levels[i], &n1, &r1);
        uint8_t *b = build_in(deep, levels[i], &n2, &r2);
        ck_assert_uint_eq(n1, n2);
        size_t at = 0;
        while (at < n1 && a[at] == b[at]) at++;
        ck_assert_msg(at == n1, "O%d: the builds differ first at byte %zu of %zu", levels[i], at, n1);
        /* the kernel object is there (the C compiler's output is part of what must match) */
        rx_rxa *x;
        char err[256];
        ck_assert_msg(rx_rxa_parse(a, n1, "a.rxa", &x, err, sizeof err) == 0, "%s", err);
        ck_assert_ptr_nonnull(rx_rxa_section_get(x, RX_RXA_KERNELS_CPU));
        rx_rxa_free(x);
        /* the times: one per pass that ran, in the result and its JSON form */
        ck_assert_int_eq(r1.ntimes, levels[i] ? 17 : 8);
        json_t *t = rx_build_times_json(&r1);
        ck_assert_int_eq((int)json_array_size(t), r1.ntimes);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 0), "name")), "deduce");
        ck_assert(json_real_value(json_object_get(json_array_get(t, 0), "ms")) >= 0);
        json_decref(t);
        free(a);
        free(b);
    }
    ck_assert_int_eq(rmdir(deep), 0);
}
END_TEST

/* A library call refusing its shapes at run time names the function, the binding, its
 * place in the source module and the actual shapes (the NOTE lower_vm puts before it). */
START_TEST(library_mismatch_names_binding)
{
    static const char lib[] =
        "{'format':'relax-json','version':1,'functions':{'main':{'kind':'relax','params':["
        "{'name':'x','type':{'tensor':{'shape':['m','k'],'dtype':'f32'}}},"
        "{'name':'w','type':{'tensor':{'shape':['k2','n'],'dtype':'f32'}}}],"
        "'body':{'blocks':[{'bindings':["
        "{'var':'lv0','value':{'op':'exp','args':['x']}},"
        "{'var':'proj','value':{'call_dps_library':'rt.matmul','args':['lv0','w'],"
        "'out':{'tensor':{'shape':['m','n'],'dtype':'f32'}}}}]}],'result':'proj'}}}}";
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_module *m = vt_load(ctx, lib);
    float x[6] = {0}, w[20] = {0};
    int64_t sx[2] = {2, 3}, sw[2] = {4, 5};
    DLTensor X = vt_f32(x, 2, sx), W = vt_f32(w, 2, sw);
    rx_rt_arg args[2] = {vt_t(&X), vt_t(&W)};
    rx_rt_outputs *out;
    rx_rt_err err;
    ck_assert_int_eq(rx_rt_call(m, 0, args, 2, &out, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "main: binding proj (functions.main.body.blocks[0].bindings[1]): "
                              "rt.matmul: shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C (b?, m, n)); "
                              "arguments (2, 3) f32, (4, 5) f32, (2, 5) f32");
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
}
END_TEST

static void *build_thread(void *arg)
{
    char *j = arg;
    rx_diags d;
    rx_diags_init(&d);
    uint8_t *rxa = NULL;
    size_t n = 0;
    bool ok = rx_build(j, strlen(j), NULL, &rxa, &n, &d);
    rx_diags_free(&d);
    free(rxa);
    return ok ? arg : NULL;
}

START_TEST(concurrent_builds)
{
    char *j = vt_json(mod);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, build_thread, j), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_eq(r, j);
    }
    free(j);
}
END_TEST

static Suite *build_suite(void)
{
    Suite *s = suite_create("vmgen_build");
    TCase *tc = tcase_create("build");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, targets_and_options);
    tcase_add_test(tc, pipeline_table);
    tcase_add_test(tc, opt_levels_and_disable);
    tcase_add_test(tc, dump_ir_files);
    tcase_add_test(tc, metadata_json);
    tcase_add_test(tc, reproducible_bytes);
    tcase_add_test(tc, library_mismatch_names_binding);
    tcase_add_test(tc, print_after_each_pass);
    tcase_add_test(tc, module_size_limit);
    tcase_add_test(tc, lowering_errors_are_located);
    tcase_add_test(tc, library_not_on_target);
    tcase_add_test(tc, concurrent_builds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(build_suite()); }
