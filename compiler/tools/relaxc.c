/*
 * relaxc — the compiler, offline (shared/spec/interfaces.md).
 *
 *   relaxc check MODULE.json [--json]     parse, deduce, print (text or relax-json)
 *   relaxc print MODULE.json --after PASS print the module after a pipeline stage
 *   relaxc hash MODULE.json [--target T]  print the structural cache key
 *
 * Exit status: 0 success; 1 a user-facing failure (one `error:` line, then the
 * located details, on stderr); 2 bad usage. "-" reads the module from stdin.
 */
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Pipeline stages `print --after` knows; later issues add the optimization passes. */
static const char *const stages[] = {"parse", "deduce"};

static void usage(FILE *f)
{
    fputs("usage: relaxc COMMAND MODULE.json [options]\n"
          "\n"
          "commands:\n"
          "  check MODULE.json [--json]       parse, deduce every annotation, verify; print the\n"
          "                                   module in the paper's notation (or, with --json,\n"
          "                                   as relax-json with deduced annotations filled in)\n"
          "  print MODULE.json --after STAGE  print the module after a stage (parse, deduce)\n"
          "  hash MODULE.json [--target T]    print the structural cache key (hex)\n"
          "\n"
          "MODULE.json may be - for standard input.\n"
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

/* Loads and (when deduce) deduces a module; NULL after reporting. */
static rx_module *load(const char *path, bool deduce)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m = NULL;
    if (!strcmp(path, "-")) {
        rx_sb text = {0};
        if (!read_all(stdin, &text)) {
            fprintf(stderr, "error: cannot read standard input: %s\n", strerror(errno));
            rx_sb_free(&text);
            rx_diags_free(&d);
            return NULL;
        }
        m = rx_json_read(rx_sb_str(&text), text.n, NULL, &d);
        rx_sb_free(&text);
    } else {
        m = rx_json_read_file(path, NULL, &d);
    }
    if (m && deduce && !rx_deduce_module(m, &d)) {
        rx_module_free(m);
        m = NULL;
    }
    if (!m) report(path, &d);
    rx_diags_free(&d);
    return m;
}

int main(int argc, char **argv)
{
    const char *cmd = NULL, *path = NULL, *target = "cpu", *after = NULL;
    bool json = false;
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
        } else if (!strcmp(a, "--target") || !strcmp(a, "--after")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "error: %s needs a value\n", a);
                return 2;
            }
            if (!strcmp(a, "--target")) target = argv[++i];
            else after = argv[++i];
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
    if (!cmd || !path) {
        usage(stderr);
        return 2;
    }

    if (!strcmp(cmd, "check")) {
        rx_module *m = load(path, true);
        if (!m) return 1;
        rx_sb out = {0};
        if (json) rx_json_write(m, RX_JSON_DEDUCED, &out);
        else rx_print_module(m, &out);
        fputs(rx_sb_str(&out), stdout);
        rx_sb_free(&out);
        rx_module_free(m);
        return 0;
    }
    if (!strcmp(cmd, "print")) {
        int stage = -1;
        for (int i = 0; after && i < RX_COUNTOF(stages); i++)
            if (!strcmp(after, stages[i])) stage = i;
        if (stage < 0) {
            fprintf(stderr, "error: print needs --after STAGE, one of: parse, deduce\n");
            return 2;
        }
        rx_module *m = load(path, stage >= 1);
        if (!m) return 1;
        rx_sb out = {0};
        rx_print_module(m, &out);
        fputs(rx_sb_str(&out), stdout);
        rx_sb_free(&out);
        rx_module_free(m);
        return 0;
    }
    if (!strcmp(cmd, "hash")) {
        rx_module *m = load(path, true);
        if (!m) return 1;
        uint8_t h[32];
        char hex[65];
        rx_sb salt = {0};
        rx_sb_printf(&salt, "target=%s;compiler=%s", target, RX_VERSION);
        rx_struct_hash(m, rx_sb_str(&salt), h);
        rx_hex(h, 32, hex);
        puts(hex);
        rx_sb_free(&salt);
        rx_module_free(m);
        return 0;
    }
    fprintf(stderr, "error: unknown command \"%s\" (see relaxc --help)\n", cmd);
    return 2;
}
