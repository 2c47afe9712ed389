/*
 * relaxc — the compiler, offline (README.md).
 *
 *   relaxc check MODULE.json [--json]     parse, deduce, print (text or relax-json)
 *   relaxc print MODULE.json --after PASS [--json]
 *                                         print the module after a pipeline pass (the
 *                                         bytecode after lower_vm, C after codegen);
 *                                         --json: relax-json of the module after a
 *                                         graph-level pass, annotations filled in (the
 *                                         form of tests/passes' golden files)
 *   relaxc hash MODULE.json [--target T] [--opt-level N]
 *                                         print the cache key (rx_build_key): the key
 *                                         relaxd uses and the artifact's module.hash
 *   relaxc build MODULE.json --target T -o OUT.rxa [--opt-level N] [--dump-ir DIR]
 *                [--lib none|auto|all] [--lib-disable PATTERN]... [--disable-pass P]...
 *                [--time-passes] [--max-compile-memory BYTES]
 *                                         compile to an artifact (driver.h); the same
 *                                         module and options give the same bytes, so
 *                                         pass times are not in it: --time-passes
 *                                         prints them to stderr as one JSON line
 *   relaxc import MODEL.onnx [-o OUT.json] [--weights inline|params]
 *                                         ONNX -> relax-json (onnx.h); with params the
 *                                         weights go to OUT.safetensors beside OUT.json
 *   relaxc passes [--json]                the pipeline table (driver.c): every stage's
 *                                         step, name, opt level, kind, paper section
 *
 * build and print take --verify-each: the module is checked (rx_verify_module) after
 * every graph-level stage; builds without NDEBUG (the test build) always do.
 *
 * Every command that reads MODULE.json also reads MODEL.onnx (a name ending in .onnx):
 * the model is imported (weights inline) and handled as the relax-json it imports to.
 *
 * --target defaults to cpu and --opt-level to RX_OPT_LEVEL_DEFAULT (2), the same
 * defaults as relaxd's POST /v1/compile, so `relaxc hash M.json` prints the key the
 * server reports for {"module": M} with no options. --lib (default auto: the cost rule)
 * and --lib-disable (repeatable) set library lowering (pass.h, rx_lib_opts) for build,
 * print and hash; non-default values are part of the cache key. --opt-level picks the
 * passes (driver.h); --disable-pass (repeatable) turns one optional step off.
 * --max-compile-memory bounds the compiler's memory (rx_build_opts.max_memory, as
 * relaxd's setting of the same name; default: no limit). A module read here is the
 * user's own file, not a request: its text may hold up to LOCAL_MAX_BYTES (the reader's
 * default 256 MiB refused a 12-layer BERT-base, 584 MB of relax-json with its weights
 * inline; relaxd keeps its max_module_bytes).
 *
 * Exit status: 0 success; 1 a user-facing failure (one `error:` line, then the
 * located details, on stderr); 2 bad usage. "-" reads the module from stdin.
 */
#include "relax/deduce.h"
#include "relax/driver.h"
#include "relax/json.h"
#include "relax/onnx.h"
#include "relax/text.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: relaxc COMMAND MODULE.json [options]\n"
          "\n"
          "commands:\n"
          "  check MODULE.json [--json]       parse, deduce every annotation, verify; print the\n"
          "                                   module in the paper's notation (or, with --json,\n"
          "                                   as relax-json with deduced annotations filled in)\n"
          "  print MODULE.json --after PASS   print the module after a pipeline pass: parse,\n"
          "                                   deduce, legalize (text form), lower_vm (VM\n"
          "                                   bytecode), codegen (kernels' C source);\n"
          "        [--json]                   with --json, relax-json after a graph-level\n"
          "                                   pass (deduced annotations filled in)\n"
          "  hash MODULE.json [--target T] [--opt-level 0..3]\n"
          "                                   print the cache key (hex): the key relaxd\n"
          "                                   reports and the artifact's module hash\n"
          "  build MODULE.json [--target T] -o OUT.rxa [--opt-level 0..3] [--dump-ir DIR]\n"
          "        [--lib none|auto|all] [--lib-disable PATTERN]... [--disable-pass P]...\n"
          "        [--time-passes] [--max-compile-memory BYTES] [--verify-each]\n"
          "                                   compile to an artifact (--dump-ir writes\n"
          "                                   DIR/NN-PASS.txt after each graph pass;\n"
          "                                   --time-passes prints each pass's time to\n"
          "                                   stderr as one JSON line: times are not in\n"
          "                                   the artifact, whose bytes depend only on\n"
          "                                   the module, target, options and compiler)\n"
          "  import MODEL.onnx [-o OUT.json] [--weights inline|params]\n"
          "                                   ONNX model -> relax-json; params: weights as\n"
          "                                   parameters, written to OUT.safetensors\n"
          "  passes [--json]                  the pipeline: each stage's paper step, name,\n"
          "                                   opt level, kind, paper section, what it does\n"
          "\n"
          "Every command also takes MODEL.onnx where it takes MODULE.json.\n"
          "\n"
          "MODULE.json may be - for standard input. --target is KIND[,key=value]...\n"
          "(cpu, opencl, vulkan, cuda; options in docs/gpu.md); it defaults to cpu and\n"
          "--opt-level to 2, as in relaxd. --lib: library lowering of matmul chains to\n"
          "BLAS (auto: by a cost rule; all: wherever a pattern matches; none: never);\n"
          "--lib-disable turns one pattern off (matmul, matmul_bias, matmul_bias_relu,\n"
          "matmul_bias_gelu, matmul_bias_silu, matmul_relu, matmul_gelu, matmul_silu,\n"
          "matmul_view: matmuls of reshaped/permuted/repeated operands).\n"
          "--opt-level: 0 no optimization, 1 clean-ups + scheduling + memory planning,\n"
          "2 + library lowering, fusion, workspace lifting, 3 + static-shape\n"
          "specialization. --disable-pass turns one optional step off (simplify,\n"
          "canonicalize, dce, library_lower, fuse_ops, fuse_tir, lift_workspace,\n"
          "specialize, schedule, memory_plan). --max-compile-memory: the compiler's\n"
          "memory budget (bytes, or with K, M, G; default no limit): past it the\n"
          "build fails at stage memory.\n"
          "--verify-each checks the module's well-formedness after every graph-level\n"
          "stage (build, print), naming the stage that broke it.\n"
          "options: --help, --version\n",
          f);
}

/* Reads a whole stream into a heap buffer; false on a read error. */
static bool read_all(FILE *f, rx_sb *out)
{
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(out, buf, n);
    return !ferror(f);
}

static void report(const char *path, const rx_diags *d)
{
    int n = rx_diags_count(d);
    fprintf(stderr, "error: %s: invalid module (%d error%s)\n", path, n, n == 1 ? "" : "s");
    rx_sb s = {0};
    rx_diags_format(d, &s);
    fputs(rx_sb_str(&s), stderr);
    rx_sb_free(&s);
}

static bool read_module(const char *path, rx_sb *text);

#define LOCAL_MAX_BYTES ((size_t)64 << 30) /* a local module's text (file essay) */
static const rx_read_opts LOCAL_READ = {.max_bytes = LOCAL_MAX_BYTES};

/* Loads and (when deduce) deduces a module; NULL after reporting. direct: an ONNX
 * model's module as the importer built it (hash, as build: without the relax-json round
 * trip of its weights; the structural hash does not see the names that round trip
 * makes unique), else its relax-json read back (check, print show that form). */
static rx_module *load(const char *path, bool deduce, bool direct)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    if (direct && rx_onnx_is_path(path)) {
        m = rx_onnx_read_file(path, NULL, NULL, &d);
    } else if (rx_onnx_is_path(path)) {
        rx_sb text = {0};
        if (read_module(path, &text)) m = rx_json_read(rx_sb_str(&text), text.n, &LOCAL_READ, &d);
        rx_sb_free(&text);
        if (!m) {
            rx_diags_free(&d);
            return NULL;
        }
    } else if (!strcmp(path, "-")) {
        rx_sb text = {0};
        if (!read_all(stdin, &text)) {
            fprintf(stderr, "error: cannot read standard input: %s\n", strerror(errno));
            rx_sb_free(&text);
            rx_diags_free(&d);
            return NULL;
        }
        m = rx_json_read(rx_sb_str(&text), text.n, &LOCAL_READ, &d);
        rx_sb_free(&text);
    } else {
        m = rx_json_read_file(path, &LOCAL_READ, &d);
    }
    if (m && deduce && !(rx_deduce_module(m, &d) && rx_verify_module(m, "deduce", &d))) {
        rx_module_free(m);
        m = NULL;
    }
    if (!m) report(path, &d);
    rx_diags_free(&d);
    return m;
}

/* Reads the module text of path ("-": stdin); an ONNX model is imported and its
 * relax-json written to text. False after reporting. */
static bool read_module(const char *path, rx_sb *text)
{
    if (rx_onnx_is_path(path)) {
        rx_diags d;
        rx_diags_init(&d);
        rx_module *m = rx_onnx_read_file(path, NULL, NULL, &d);
        if (m) rx_json_write(m, RX_JSON_COMPACT, text);
        else report(path, &d);
        rx_module_free(m);
        rx_diags_free(&d);
        return m != NULL;
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    bool ok = f && read_all(f, text);
    if (!ok)
        fprintf(stderr, "error: cannot read %s: %s\n", strcmp(path, "-") ? path : "standard input",
                strerror(errno));
    if (f && f != stdin) fclose(f);
    return ok;
}

/* Reports a failed build or print: module errors as `check` does, one-line option
 * errors as they are, anything else as a compile failure with its details. */
static void report_build(const char *path, const char *failed, const rx_diags *d)
{
    if (failed && (!strcmp(failed, "parse") || !strcmp(failed, "deduce"))) {
        report(path, d);
        return;
    }
    rx_sb s = {0};
    if (failed && !strcmp(failed, "options") && d->list.n == 1) {
        fprintf(stderr, "error: %s\n", d->list.items[0].msg);
    } else {
        int n = rx_diags_count(d);
        fprintf(stderr, "error: %s: cannot compile (%s failed, %d error%s)\n", path,
                failed ? failed : "build", n, n == 1 ? "" : "s");
        rx_diags_format(d, &s);
        fputs(rx_sb_str(&s), stderr);
    }
    rx_sb_free(&s);
}

/* --time-passes: {"passes": [{"name": ..., "ms": ...}, ...], "total_ms": T} on stderr. */
static void print_times(const rx_build_result *r)
{
    double total = 0;
    for (int i = 0; i < r->ntimes; i++) total += r->times[i].ms;
    json_t *o = json_pack("{s:o, s:f}", "passes", rx_build_times_json(r), "total_ms",
                          (double)(int64_t)(total * 1000) / 1000);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL; /* 17.429 */
    if (text) fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(o);
}

static int cmd_build(const char *path, const rx_build_opts *o, const char *out_path,
                     bool time_passes)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_build_result r;
    bool ok;
    if (rx_onnx_is_path(path)) { /* the importer's module as it is (driver.h) */
        rx_module *m = rx_onnx_read_file(path, NULL, NULL, &d);
        if (!m) {
            report(path, &d);
            rx_diags_free(&d);
            return 1;
        }
        ok = rx_build_run_module(m, o, &r, &d);
    } else {
        rx_sb text = {0};
        if (!read_module(path, &text)) {
            rx_diags_free(&d);
            return 1;
        }
        ok = rx_build_run(rx_sb_str(&text), text.n, o, &r, &d);
        rx_sb_free(&text);
    }
    int rc = 0;
    if (time_passes) print_times(&r);
    if (!ok) {
        report_build(path, r.failed, &d);
        rc = 1;
    } else {
        FILE *f = fopen(out_path, "wb");
        bool wok = f && fwrite(r.rxa, 1, r.rxa_n, f) == r.rxa_n;
        if (f && fclose(f)) wok = false;
        if (!wok) {
            fprintf(stderr, "error: cannot write %s: %s\n", out_path, strerror(errno));
            rc = 1;
        }
    }
    free(r.rxa);
    rx_diags_free(&d);
    return rc;
}

static int cmd_print(const char *path, const rx_build_opts *o, const char *after, bool json)
{
    rx_sb text = {0}, out = {0};
    if (!read_module(path, &text)) return 1;
    rx_diags d;
    rx_diags_init(&d);
    const char *failed = NULL;
    bool ok;
    if (json) {
        rx_module *m = NULL;
        ok = rx_build_module(rx_sb_str(&text), text.n, o, after, &m, &failed, &d);
        if (ok) rx_json_write(m, RX_JSON_DEDUCED, &out);
        rx_module_free(m);
    } else {
        ok = rx_build_print(rx_sb_str(&text), text.n, o, after, &out, &failed, &d);
    }
    if (ok) fputs(rx_sb_str(&out), stdout);
    else report_build(path, failed, &d);
    rx_sb_free(&text);
    rx_sb_free(&out);
    rx_diags_free(&d);
    return ok ? 0 : 1;
}

/* relaxc import: the model as relax-json on out_path (stdout when NULL); with params,
 * the weights to the same name with .safetensors (out_path required). */
static int cmd_import(const char *path, const char *out_path, rx_onnx_weights mode)
{
    if (mode == RX_ONNX_WEIGHTS_PARAMS && !out_path) {
        fprintf(stderr, "error: import --weights params needs -o OUT.json (the weights go "
                        "beside it)\n");
        return 2;
    }
    rx_diags d;
    rx_diags_init(&d);
    rx_onnx_opts o = {mode, NULL, 0};
    rx_onnx_weightset ws;
    rx_module *m = rx_onnx_read_file(path, &o, &ws, &d);
    if (!m) {
        report(path, &d);
        rx_diags_free(&d);
        return 1;
    }
    rx_sb out = {0}, wpath = {0};
    rx_json_write(m, 0, &out);
    rx_sb_putc(&out, '\n');
    int rc = 0;
    if (mode == RX_ONNX_WEIGHTS_PARAMS) {
        size_t n = strlen(out_path);
        bool js = n > 5 && !strcmp(out_path + n - 5, ".json");
        rx_sb_printf(&wpath, "%.*s.safetensors", (int)(js ? n - 5 : n), out_path);
        if (!rx_safetensors_write(rx_sb_str(&wpath), &ws, &d)) {
            fprintf(stderr, "error: %s\n", d.list.n ? d.list.items[0].msg : "cannot write weights");
            rc = 1;
        }
    }
    if (!rc && out_path) {
        FILE *f = fopen(out_path, "wb");
        bool wok = f && fwrite(out.p, 1, out.n, f) == out.n;
        if (f && fclose(f)) wok = false;
        if (!wok) {
            fprintf(stderr, "error: cannot write %s: %s\n", out_path, strerror(errno));
            rc = 1;
        }
    } else if (!rc) {
        fputs(rx_sb_str(&out), stdout);
    }
    rx_sb_free(&out);
    rx_sb_free(&wpath);
    rx_module_free(m);
    rx_diags_free(&d);
    return rc;
}

/* relaxc passes: the pipeline table, as text columns or a JSON array. */
static int cmd_passes(bool json)
{
    rx_stage_info st;
    if (json) {
        json_t *a = json_array();
        for (int i = 0; rx_pipeline_stage(i, &st); i++)
            json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "step", st.step,
                                               "name", st.name, "min_opt", st.min_opt, "kind",
                                               st.kind, "paper", st.paper, "what", st.what));
        char *text = json_dumps(a, JSON_INDENT(1));
        json_decref(a);
        if (!text) return 1;
        puts(text);
        free(text);
        return 0;
    }
    printf("%-5s %-15s %-3s %-8s %-29s %s\n", "step", "name", "opt", "kind", "paper", "what");
    for (int i = 0; rx_pipeline_stage(i, &st); i++)
    {
        int extra = 0; /* UTF-8 continuation bytes (the section sign) take no column */
        for (const char *c = st.paper; *c; c++) extra += ((unsigned char)*c & 0xC0) == 0x80;
        printf("%-5s %-15s O%d+ %-8s %-*s %s\n", st.step, st.name, st.min_opt, st.kind,
               29 + extra, *st.paper ? st.paper : "-", st.what);
    }
    return 0;
}

/* The valid --after names, for the usage error. */
static void pass_names(rx_sb *out)
{
    rx_sb_puts(out, "parse");
    for (int i = 0; i < rx_pipeline_count(); i++) rx_sb_printf(out, ", %s", rx_pipeline_name(i));
}

int main(int argc, char **argv)
{
    const char *cmd = NULL, *path = NULL, *target = "cpu", *after = NULL, *out_path = NULL;
    const char *dump_dir = NULL;
    int opt_level = RX_OPT_LEVEL_DEFAULT;
    bool json = false, time_passes = false, verify_each = false;
    rx_onnx_weights weights = RX_ONNX_WEIGHTS_INLINE;
    size_t max_memory = 0;
    rx_lib_opts lib = {0};
    const char *disabled[argc + 1]; /* --lib-disable values, NULL-terminated */
    int ndisabled = 0;
    const char *off[argc + 1];      /* --disable-pass values, NULL-terminated */
    int noff = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("relaxc %s (relax-json v1)\n", RX_VERSION);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--time-passes")) {
            time_passes = true;
        } else if (!strcmp(a, "--verify-each")) {
            verify_each = true;
        } else if (!strcmp(a, "--target") || !strcmp(a, "--after") || !strcmp(a, "-o") ||
                   !strcmp(a, "--opt-level") || !strcmp(a, "--dump-ir") || !strcmp(a, "--lib") ||
                   !strcmp(a, "--lib-disable") || !strcmp(a, "--disable-pass") ||
                   !strcmp(a, "--weights") ||
                   !strcmp(a, "--max-compile-memory")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--target")) target = v;
            else if (!strcmp(a, "--after")) after = v;
            else if (!strcmp(a, "-o")) out_path = v;
            else if (!strcmp(a, "--dump-ir")) dump_dir = v;
            else if (!strcmp(a, "--lib-disable")) disabled[ndisabled++] = v;
            else if (!strcmp(a, "--disable-pass")) off[noff++] = v;
            else if (!strcmp(a, "--weights")) {
                if (!strcmp(v, "inline")) weights = RX_ONNX_WEIGHTS_INLINE;
                else if (!strcmp(v, "params")) weights = RX_ONNX_WEIGHTS_PARAMS;
                else {
                    fprintf(stderr, "error: --weights must be inline or params, not %s\n", v);
                    return 2;
                }
            } else if (!strcmp(a, "--max-compile-memory")) {
                int64_t bytes;
                if (!rx_parse_size(v, &bytes)) {
                    fprintf(stderr, "error: --max-compile-memory must be a byte count (4096, "
                                    "512MiB, 2G), not %s\n", v);
                    return 2;
                }
                max_memory = (size_t)bytes;
            }
            else if (!strcmp(a, "--lib")) {
                if (!strcmp(v, "auto")) lib.mode = RX_LIB_AUTO;
                else if (!strcmp(v, "none")) lib.mode = RX_LIB_NONE;
                else if (!strcmp(v, "all")) lib.mode = RX_LIB_ALL;
                else {
                    fprintf(stderr, "error: --lib must be none, auto or all, not %s\n", v);
                    return 2;
                }
            }
            else if (v[0] >= '0' && v[0] <= '3' && !v[1]) opt_level = v[0] - '0';
            else {
                fprintf(stderr, "error: --opt-level must be 0, 1, 2 or 3, not %s\n", v);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "error: unknown option %s (see relaxc --help)\n", a);
            return 2;
        } else if (!cmd) {
            cmd = a;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "error: unexpected argument %s (see relaxc --help)\n", a);
            return 2;
        }
    }
    if (cmd && !strcmp(cmd, "passes") && !path) return cmd_passes(json);
    if (!cmd || !path) {
        usage(stderr);
        return 2;
    }

    if (!strcmp(cmd, "import")) return cmd_import(path, out_path, weights);
    if (!strcmp(cmd, "check")) {
        rx_module *m = load(path, true, false);
        if (!m) return 1;
        rx_sb out = {0};
        if (json) rx_json_write(m, RX_JSON_DEDUCED, &out);
        else rx_print_module(m, &out);
        fputs(rx_sb_str(&out), stdout);
        rx_sb_free(&out);
        rx_module_free(m);
        return 0;
    }
    disabled[ndisabled] = NULL;
    if (ndisabled) lib.disable = disabled;
    off[noff] = NULL;
    rx_build_opts bo = {.target = target, .opt_level = opt_level, .dump_dir = dump_dir,
                        .lib = lib, .disable = noff ? off : NULL, .max_memory = max_memory,
                        .max_module_bytes = LOCAL_MAX_BYTES, .verify_each = verify_each};
    if (!strcmp(cmd, "print")) {
        bool known = after && !strcmp(after, "parse");
        for (int i = 0; after && i < rx_pipeline_count(); i++) known = known || !strcmp(after, rx_pipeline_name(i));
        if (!known) {
            rx_sb names = {0};
            pass_names(&names);
            fprintf(stderr, "error: print needs --after PASS, one of: %s\n", rx_sb_str(&names));
            rx_sb_free(&names);
            return 2;
        }
        if (json && (!strcmp(after, "lower_vm") || !strcmp(after, "codegen"))) {
            fprintf(stderr, "error: print --json needs a graph-level pass, not %s\n", after);
            return 2;
        }
        return cmd_print(path, &bo, after, json);
    }
    if (!strcmp(cmd, "build")) {
        if (!out_path) {
            fprintf(stderr, "error: build needs -o OUT.rxa (see relaxc --help)\n");
            return 2;
        }
        return cmd_build(path, &bo, out_path, time_passes);
    }
    if (!strcmp(cmd, "hash")) {
        rx_module *m = load(path, true, true);
        if (!m) return 1;
        char hex[65];
        rx_diags d;
        rx_diags_init(&d);
        bool ok = rx_build_key(m, &bo, hex, &d);
        if (ok) puts(hex);
        else report_build(path, "options", &d);
        rx_diags_free(&d);
        rx_module_free(m);
        return ok ? 0 : 1;
    }
    fprintf(stderr, "error: unknown command \"%s\" (see relaxc --help)\n", cmd);
    return 2;
}
