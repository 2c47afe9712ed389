/*
 * golden.c — golden tests of the pipeline's graph-level passes (docs/contributing.md, rule
 * 8): an input module, the pass, and the text form expected after it.
 *
 *   passes_golden [--update] [-v] DIR [PASS | PASS/CASE-PREFIX]...
 *   passes_golden --print FILE.json     (the text form of a relax-json file, as compared)
 *
 * DIR holds one directory per pass, named as the pipeline step (driver.c's table), and
 * `parse` for the reader itself (read only: no deduction, no pass):
 *
 *   DIR/<pass>/<case>.in.json     the pass's input module (relax-json v1)
 *   DIR/<pass>/<case>.out.txt     the module expected after <pass>, in the printed text
 *                                 form (`relaxc print`)
 *   DIR/<pass>/<case>.opts.json   optional: {"opt_level": 0..3 (default 3),
 *                                 "disable": [steps], "lib": "none|auto|all",
 *                                 "lib_disable": [patterns], "isolated": bool, "why": ""}
 *
 * A case, step by step: Step 1 read the options (unknown keys are errors); Step 2 run
 * the pass in isolation on its input, the default: parse + deduce + <pass> alone (+ the
 * deduction the driver runs after it), so a change in another pass cannot move this
 * golden; or, with "isolated": false, the pipeline from parse up to and including
 * <pass> (rx_build_module: exactly what `relaxc print IN --after PASS --json` runs),
 * refused when <pass> would not run there (below its opt level, or disabled: such a
 * golden tests nothing); Step 3 write the result as relax-json with its deduced
 * annotations, read that back undeduced ("what the JSON says") and print it; Step 4 the
 * text must equal <case>.out.txt, line for line (names included: the passes are
 * deterministic). A mismatch prints a unified diff. --update writes the actual text
 * into <case>.out.txt instead (review it!).
 *
 * Output: PASS/FAIL per case, then "N passed, M failed"; exit 1 on any failure, 2 on
 * bad usage. The protocol for case authors is docs/passes.md ("Golden tests").
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "relax/deduce.h"
#include "relax/driver.h"
#include "relax/json.h"
#include "relax/pass.h"
#include "relax/text.h"

#define MAX_NAMES 32   /* entries of "disable" / "lib_disable" */
#define DIFF_CELLS (1 << 24) /* LCS table limit; past it the diff is the whole middle */
#define CONTEXT 3      /* unified diff context lines */

typedef struct run_opts {
    bool update;       /* --update: write .out.json */
    bool verbose;      /* -v: print every result's text form */
    char **filters;    /* PASS or PASS/CASE-PREFIX arguments */
    int nfilters;
} run_opts;

typedef struct case_opts {
    int opt_level;                       /* default 3 */
    bool isolated;                       /* run only the pass (default true) */
    const char *disable[MAX_NAMES + 1];  /* NULL-terminated; strings in js */
    const char *lib_disable[MAX_NAMES + 1];
    rx_lib_opts lib;                     /* mode and lib_disable */
    json_t *js;                          /* the parsed opts.json (owns the strings) */
} case_opts;

/* ---------------------------------------------------------------- files */

/* Reads path into out; false (errno set) when it cannot. */
static bool read_file(const char *path, rx_sb *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) rx_sb_putn(out, buf, n);
    bool ok = !ferror(f);
    fclose(f);
    return ok;
}

static bool write_file(const char *path, const rx_sb *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool nl = text->n && rx_sb_str(text)[text->n - 1] == '\n'; /* text ends with one */
    bool ok = fwrite(rx_sb_str(text), 1, text->n, f) == text->n && (nl || fputc('\n', f) != EOF);
    return fclose(f) == 0 && ok;
}

static bool exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static bool is_dir(const char *dir, const char *name)
{
    rx_sb p = {0};
    rx_sb_printf(&p, "%s/%s", dir, name);
    struct stat st;
    bool yes = stat(rx_sb_str(&p), &st) == 0 && S_ISDIR(st.st_mode);
    rx_sb_free(&p);
    return yes;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir (heap strings, *n of them) ending in suffix (NULL: subdirectories
 * but "." and ".."); NULL with errno set when dir cannot be read. */
static char **list_dir(const char *dir, const char *suffix, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    RX_VEC(char *) v = {0};
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
        if (e->d_name[0] == '.') continue;
        if (suffix ? len <= sl || strcmp(e->d_name + len - sl, suffix) : !is_dir(dir, e->d_name))
            continue;
        RX_VEC_PUSH(v, strdup(e->d_name));
    }
    closedir(d);
    if (v.n) qsort(v.items, (size_t)v.n, sizeof *v.items, cmp_str);
    *n = v.n;
    if (!v.items) v.items = calloc(1, sizeof *v.items);
    return v.items;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* ---------------------------------------------------------------- options */

/* Reads a JSON array of strings into out (NULL-terminated); false with a reason. */
static bool string_list(json_t *a, const char **out, const char *key, rx_sb *why)
{
    if (!json_is_array(a) || json_array_size(a) > MAX_NAMES) {
        rx_sb_printf(why, "opts.json: %s must be an array of at most %d strings", key, MAX_NAMES);
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v)) {
            rx_sb_printf(why, "opts.json: %s[%zu] is not a string", key, i);
            return false;
        }
        out[i] = json_string_value(v);
    }
    out[json_array_size(a)] = NULL;
    return true;
}

/* Parses path (absent: the defaults) into o; false with a reason in why. */
static bool read_opts(const char *path, case_opts *o, rx_sb *why)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 3;
    o->isolated = true;
    if (!exists(path)) return true;
    json_error_t err;
    o->js = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!json_is_object(o->js)) {
        rx_sb_printf(why, "%s:%d: %s", path, err.line, o->js ? "not an object" : err.text);
        return false;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o->js, k, v)
    {
        if (!strcmp(k, "opt_level")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 3) {
                rx_sb_puts(why, "opts.json: opt_level must be 0..3");
                return false;
            }
            o->opt_level = (int)json_integer_value(v);
        } else if (!strcmp(k, "isolated")) {
            if (!json_is_boolean(v)) {
                rx_sb_puts(why, "opts.json: isolated must be true or false");
                return false;
            }
            o->isolated = json_is_true(v);
        } else if (!strcmp(k, "disable")) {
            if (!string_list(v, o->disable, k, why)) return false;
        } else if (!strcmp(k, "lib_disable")) {
            if (!string_list(v, o->lib_disable, k, why)) return false;
            o->lib.disable = o->lib_disable;
        } else if (!strcmp(k, "lib")) {
            const char *s = json_string_value(v);
            if (s && !strcmp(s, "auto")) o->lib.mode = RX_LIB_AUTO;
            else if (s && !strcmp(s, "none")) o->lib.mode = RX_LIB_NONE;
            else if (s && !strcmp(s, "all")) o->lib.mode = RX_LIB_ALL;
            else {
                rx_sb_puts(why, "opts.json: lib must be \"none\", \"auto\" or \"all\"");
                return false;
            }
        } else if (strcmp(k, "why")) {
            rx_sb_printf(why, "opts.json: unknown key \"%s\" (known: opt_level, disable, lib, "
                              "lib_disable, isolated, why)", k);
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- running a pass */

/* The graph-level pass functions by pipeline name, for isolated cases. */
static bool run_isolated(const char *pass, rx_module *m, const case_opts *o, rx_diags *d)
{
    static const struct {
        const char *name;
        rx_pass_fn fn;
    } fns[] = {
        {"simplify", rx_pass_simplify},         {"canonicalize", rx_pass_canonicalize},
        {"dce", rx_pass_dce},
        {"legalize", rx_pass_legalize},         {"dce_post", rx_pass_dce},
        {"analysis", rx_pass_annotate_patterns}, {"fuse_ops", rx_pass_fuse_ops},
        {"fuse_tir", rx_pass_fuse_tir},         {"lift_workspace", rx_pass_lift_workspace},
        {"specialize", rx_pass_specialize},     {"schedule", rx_pass_schedule_cpu},
        {"cuda_graph", rx_pass_cuda_graph},
    };
    if (!strcmp(pass, "parse")) return true; /* the reader's own goldens: read only */
    if (!rx_deduce_module(m, d)) return false;
    /* the driver deduces after the passes that rewrite bindings; so does this */
    if (!strcmp(pass, "library_lower"))
        return rx_pass_library_lower(m, &o->lib, d) && rx_deduce_module(m, d);
    for (int i = 0; i < RX_COUNTOF(fns); i++)
        if (!strcmp(pass, fns[i].name)) return fns[i].fn(m, d) && rx_deduce_module(m, d);
    rx_diag_add(d, "", "%s cannot run isolated", pass);
    return false;
}

/* Why pass does not run under o, or NULL when it does. */
static const char *not_run(const char *pass, const case_opts *o)
{
    if (o->isolated) return NULL;
    int idx = -1;
    for (int i = 0; i < rx_pipeline_count(); i++)
        if (!strcmp(rx_pipeline_name(i), pass)) idx = i;
    if (idx < 0)
        return "not a pipeline step (directory names are driver.c's step names; `parse` "
               "cases run isolated)";
    if (rx_pipeline_min_opt(idx) > o->opt_level) return "does not run at this opt_level";
    for (int i = 0; o->disable[i]; i++)
        if (!strcmp(o->disable[i], pass)) return "is disabled by the case's own options";
    return NULL;
}

/* The module after pass on in (heap JSON text in *json on success). */
static bool actual_json(const char *pass, const rx_sb *in, const case_opts *o, rx_sb *json,
                        rx_diags *d)
{
    rx_module *m = NULL;
    bool ok;
    if (o->isolated) {
        m = rx_json_read(rx_sb_str(in), in->n, NULL, d);
        ok = m && run_isolated(pass, m, o, d);
    } else {
        rx_build_opts bo = {.target = "cpu", .opt_level = o->opt_level, .lib = o->lib,
                            .disable = o->disable[0] ? o->disable : NULL};
        ok = rx_build_module(rx_sb_str(in), in->n, &bo, pass, &m, NULL, d);
    }
    if (ok) rx_json_write(m, RX_JSON_DEDUCED, json);
    rx_module_free(m);
    return ok;
}

/* ---------------------------------------------------------------- the diff */

typedef RX_VEC(const char *) lines_t;

/* Splits s (modified: newlines become NULs) into lines. */
static void split_lines(char *s, lines_t *out)
{
    while (*s) {
        RX_VEC_PUSH(*out, s);
        char *nl = strchr(s, '\n');
        if (!nl) break;
        *nl = '\0';
        s = nl + 1;
    }
}

typedef struct edit {
    char op;          /* ' ', '-', '+' */
    const char *line;
} edit;
typedef RX_VEC(edit) edits_t;

/* The edit script turning a[0..na) into b[0..nb): LCS by dynamic programming, or all
 * of a removed then all of b added when the table would be too big. */
static void lcs_edits(const char **a, int na, const char **b, int nb, edits_t *out)
{
    if ((long long)(na + 1) * (nb + 1) > DIFF_CELLS) {
        for (int i = 0; i < na; i++) RX_VEC_PUSH(*out, ((edit){'-', a[i]}));
        for (int j = 0; j < nb; j++) RX_VEC_PUSH(*out, ((edit){'+', b[j]}));
        return;
    }
    int w = nb + 1;
    int *t = calloc((size_t)(na + 1) * (size_t)w, sizeof *t); /* t[i][j]: LCS of a[i..], b[j..] */
    for (int i = na - 1; i >= 0; i--)
        for (int j = nb - 1; j >= 0; j--)
            t[i * w + j] = !strcmp(a[i], b[j]) ? t[(i + 1) * w + j + 1] + 1
                           : t[(i + 1) * w + j] >= t[i * w + j + 1] ? t[(i + 1) * w + j]
                                                                   : t[i * w + j + 1];
    int i = 0, j = 0;
    while (i < na || j < nb) {
        if (i < na && j < nb && !strcmp(a[i], b[j])) {
            RX_VEC_PUSH(*out, ((edit){' ', a[i]}));
            i++, j++;
        } else if (i < na && (j == nb || t[(i + 1) * w + j] >= t[i * w + j + 1])) {
            RX_VEC_PUSH(*out, ((edit){'-', a[i++]}));
        } else {
            RX_VEC_PUSH(*out, ((edit){'+', b[j++]}));
        }
    }
    free(t);
}

/* Prints a unified diff (hunks with CONTEXT lines, no line numbers) of texts x and y. */
static void print_diff(const char *xname, const char *x, const char *yname, const char *y)
{
    char *xs = strdup(x), *ys = strdup(y);
    lines_t a = {0}, b = {0};
    split_lines(xs, &a);
    split_lines(ys, &b);
    int pre = 0, suf = 0;
    while (pre < a.n && pre < b.n && !strcmp(a.items[pre], b.items[pre])) pre++;
    while (suf < a.n - pre && suf < b.n - pre &&
           !strcmp(a.items[a.n - 1 - suf], b.items[b.n - 1 - suf]))
        suf++;
    edits_t e = {0};
    for (int i = 0; i < pre; i++) RX_VEC_PUSH(e, ((edit){' ', a.items[i]}));
    lcs_edits(a.items + pre, a.n - pre - suf, b.items + pre, b.n - pre - suf, &e);
    for (int i = a.n - suf; i < a.n; i++) RX_VEC_PUSH(e, ((edit){' ', a.items[i]}));
    printf("--- %s\n+++ %s\n", xname, yname);
    int last_shown = -1;
    for (int k = 0; k < e.n; k++) {
        bool near = false;
        for (int c = k - CONTEXT; c <= k + CONTEXT && !near; c++)
            near = c >= 0 && c < e.n && e.items[c].op != ' ';
        if (!near) continue;
        if (k != last_shown + 1) printf("@@\n");
        printf("%c%s\n", e.items[k].op, e.items[k].line);
        last_shown = k;
    }
    RX_VEC_FREE(e);
    RX_VEC_FREE(a);
    RX_VEC_FREE(b);
    free(xs);
    free(ys);
}

/* ---------------------------------------------------------------- one case */

static rx_module *read_text(const char *text, size_t n, rx_sb *why, const char *what)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = rx_json_read(text, n, NULL, &d);
    if (!m) {
        rx_sb_printf(why, "%s does not read back:\n", what);
        rx_diags_format(&d, why);
    }
    rx_diags_free(&d);
    return m;
}

/* Runs case stem (path without ".in.json") of pass; true when it passes. */
static bool run_case(const run_opts *ro, const char *pass, const char *stem, const char *label)
{
    rx_sb in = {0}, js = {0}, exp = {0}, why = {0}, path = {0}, at = {0};
    rx_diags d;
    rx_diags_init(&d);
    case_opts o;
    rx_module *am = NULL;
    bool ok = false, compared = false;
    const char *nr;

    rx_sb_printf(&path, "%s.opts.json", stem);
    if (!read_opts(rx_sb_str(&path), &o, &why)) goto out;                    /* Step 1 */
    if ((nr = not_run(pass, &o))) {
        rx_sb_printf(&why, "%s %s", pass, nr);
        goto out;
    }
    rx_sb_reset(&path);
    rx_sb_printf(&path, "%s.in.json", stem);
    if (!read_file(rx_sb_str(&path), &in)) {
        rx_sb_printf(&why, "cannot read %s: %s", rx_sb_str(&path), strerror(errno));
        goto out;
    }
    if (!actual_json(pass, &in, &o, &js, &d)) {                              /* Step 2 */
        rx_sb_puts(&why, "the pipeline failed:\n");
        rx_diags_format(&d, &why);
        goto out;
    }
    if (!(am = read_text(rx_sb_str(&js), js.n, &why, "the result"))) goto out; /* Step 3 */
    rx_print_module(am, &at);
    rx_sb_reset(&path);
    rx_sb_printf(&path, "%s.out.txt", stem);
    if (ro->update) {
        ok = write_file(rx_sb_str(&path), &at);
        if (!ok) rx_sb_printf(&why, "cannot write %s: %s", rx_sb_str(&path), strerror(errno));
        else rx_sb_printf(&why, "wrote %s", rx_sb_str(&path));
        goto out;
    }
    if (!read_file(rx_sb_str(&path), &exp)) {
        rx_sb_printf(&why, "cannot read %s: %s (write it with --update, then review it)",
                     rx_sb_str(&path), strerror(errno));
        goto out;
    }
    ok = !strcmp(rx_sb_str(&exp), rx_sb_str(&at));                          /* Step 4 */
    if (!ok) rx_sb_printf(&why, "differs from %s.out.txt", label);
    compared = true;
out:
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", label, why.n ? (ok ? " " : ": ") : "",
           rx_sb_str(&why));
    if (compared && !ok) print_diff("expected", rx_sb_str(&exp), "actual", rx_sb_str(&at));
    else if (ro->verbose && am) fputs(rx_sb_str(&at), stdout);
    fflush(stdout);
    rx_module_free(am);
    rx_sb_free(&at);
    json_decref(o.js);
    rx_diags_free(&d);
    rx_sb_free(&in);
    rx_sb_free(&js);
    rx_sb_free(&exp);
    rx_sb_free(&why);
    rx_sb_free(&path);
    return ok;
}

/* ---------------------------------------------------------------- main */


/* --print FILE: the text form of a relax-json file as the goldens hold it (read, not
 * deduced, printed). 0, or 1 when it cannot be read. */
static int print_json(const char *file)
{
    rx_sb in = {0}, why = {0}, text = {0};
    rx_module *m = NULL;
    if (!read_file(file, &in)) rx_sb_printf(&why, "cannot read %s: %s", file, strerror(errno));
    else m = read_text(rx_sb_str(&in), in.n, &why, file);
    if (m) rx_print_module(m, &text);
    fputs(m ? rx_sb_str(&text) : rx_sb_str(&why), m ? stdout : stderr);
    rx_module_free(m);
    rx_sb_free(&in);
    rx_sb_free(&why);
    rx_sb_free(&text);
    return m ? 0 : 1;
}

/* Whether pass/case is selected by the filters (none: everything). */
static bool selected(const run_opts *ro, const char *pass, const char *cas)
{
    if (!ro->nfilters) return true;
    for (int i = 0; i < ro->nfilters; i++) {
        const char *f = ro->filters[i], *slash = strchr(f, '/');
        size_t pl = slash ? (size_t)(slash - f) : strlen(f);
        if (strlen(pass) != pl || strncmp(pass, f, pl)) continue;
        if (!slash || !strncmp(cas, slash + 1, strlen(slash + 1))) return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    run_opts ro = {0};
    const char *dir = NULL;
    char *filters[argc];
    ro.filters = filters;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--print") && i + 1 < argc) return print_json(argv[i + 1]);
        if (!strcmp(argv[i], "--update")) ro.update = true;
        else if (!strcmp(argv[i], "-v")) ro.verbose = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: passes_golden [--update] [-v] DIR [PASS | PASS/CASE-PREFIX]...\n"
                 "       passes_golden --print FILE.json");
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "error: unknown option %s\n", argv[i]);
            return 2;
        } else if (!dir) dir = argv[i];
        else ro.filters[ro.nfilters++] = argv[i];
    }
    if (!dir) {
        fputs("usage: passes_golden [--update] [-v] DIR [PASS | PASS/CASE-PREFIX]...\n", stderr);
        return 2;
    }
    int npass, passed = 0, failed = 0;
    char **passes = list_dir(dir, NULL, &npass);
    if (!passes) {
        fprintf(stderr, "error: cannot read %s: %s\n", dir, strerror(errno));
        return 1;
    }
    for (int p = 0; p < npass; p++) {
        rx_sb sub = {0}, stem = {0}, label = {0};
        rx_sb_printf(&sub, "%s/%s", dir, passes[p]);
        int ncase;
        char **cases = list_dir(rx_sb_str(&sub), ".in.json", &ncase);
        for (int c = 0; cases && c < ncase; c++) {
            cases[c][strlen(cases[c]) - strlen(".in.json")] = '\0';
            if (!selected(&ro, passes[p], cases[c])) continue;
            rx_sb_reset(&stem);
            rx_sb_reset(&label);
            rx_sb_printf(&stem, "%s/%s", rx_sb_str(&sub), cases[c]);
            rx_sb_printf(&label, "%s/%s", passes[p], cases[c]);
            if (run_case(&ro, passes[p], rx_sb_str(&stem), rx_sb_str(&label))) passed++;
            else failed++;
        }
        free_list(cases, ncase);
        rx_sb_free(&sub);
        rx_sb_free(&stem);
        rx_sb_free(&label);
    }
    free_list(passes, npass);
    if (passed + failed == 0) {
        printf("no cases selected\n");
        failed = ro.nfilters > 0; /* a filter that matches nothing is a mistake */
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
