/*
 * bench_frontend.c — front-end throughput: parse + deduce + print of a generated
 * module with N bindings (issue: foundation; goal well under 100 ms for 10,000).
 *
 * The module is one graph function over x: Tensor((n, 64), "f32") with a chain of
 * bindings cycling through elementwise, broadcasting, reshape, reduction-free ops so
 * every binding exercises deduction with symbolic dims. Each stage is timed over
 * several repetitions; the minimum is reported (least disturbed by a shared machine).
 * Memory: the bytes the module's arena held at the end (an arena only grows, so this is
 * its peak) and the process's peak resident set.
 *
 * Reference, in the same run: jansson alone parsing and freeing the same text (the
 * floor for any reader built on it); `vs_jansson` is total / that.
 *
 * Output: one JSON object per line.
 *   bench_frontend [--bindings N] [--repeat R]
 */
#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/text.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Writes the generated module into out. */
static void generate(int nbind, rx_sb *out)
{
    rx_sb_puts(out, "{\"format\":\"relax-json\",\"version\":1,\"functions\":{\"main\":{"
                    "\"kind\":\"relax\",\"params\":["
                    "{\"name\":\"x\",\"type\":{\"tensor\":{\"shape\":[\"n\",64],\"dtype\":\"f32\"}}},"
                    "{\"name\":\"b\",\"type\":{\"tensor\":{\"shape\":[64],\"dtype\":\"f32\"}}}],"
                    "\"body\":{\"blocks\":[{\"dataflow\":true,\"bindings\":[");
    const char *prev = "x";
    char name[32], prevbuf[32];
    for (int i = 0; i < nbind; i++) {
        snprintf(name, sizeof name, "lv%d", i);
        if (i) rx_sb_putc(out, ',');
        switch (i % 6) {
        case 0: rx_sb_printf(out, "{\"var\":\"%s\",\"value\":{\"op\":\"add\",\"args\":[\"%s\",\"b\"]}}", name, prev); break;
        case 1: rx_sb_printf(out, "{\"var\":\"%s\",\"value\":{\"op\":\"exp\",\"args\":[\"%s\"]}}", name, prev); break;
        case 2: rx_sb_printf(out, "{\"var\":\"%s\",\"value\":{\"op\":\"reshape\",\"args\":[\"%s\",{\"shape\":[\"n * 2\",32]}]}}", name, prev); break;
        case 3: rx_sb_printf(out, "{\"var\":\"%s\",\"type\":{\"tensor\":{\"shape\":[\"n * 2\",32],\"dtype\":\"f32\"}},\"value\":{\"op\":\"multiply\",\"args\":[\"%s\",\"%s\"]}}", name, prev, prev); break;
        case 4: rx_sb_printf(out, "{\"var\":\"%s\",\"value\":{\"op\":\"reshape\",\"args\":[\"%s\",{\"shape\":[\"n\",64]}]}}", name, prev); break;
        case 5: rx_sb_printf(out, "{\"var\":\"%s\",\"value\":{\"op\":\"nn.relu\",\"args\":[\"%s\"]}}", name, prev); break;
        }
        snprintf(prevbuf, sizeof prevbuf, "%s", name);
        prev = prevbuf;
    }
    rx_sb_printf(out, "]}],\"result\":\"%s\"}}}}", prev);
}

int main(int argc, char **argv)
{
    int nbind = 10000, repeat = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bindings")) nbind = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
    }
    rx_sb text = {0};
    generate(nbind, &text);
    double best_parse = 1e30, best_deduce = 1e30, best_print = 1e30, best_total = 1e30;
    size_t arena_bytes = 0, printed = 0;
    for (int r = 0; r < repeat; r++) {
        rx_diags d;
        rx_diags_init(&d);
        double t0 = now_ms();
        rx_module *m = rx_json_read(rx_sb_str(&text), text.n, NULL, &d);
        double t1 = now_ms();
        if (!m || !rx_deduce_module(m, &d)) {
            rx_sb e = {0};
            rx_diags_format(&d, &e);
            fprintf(stderr, "error: generated module rejected:\n%s", rx_sb_str(&e));
            return 1;
        }
        double t2 = now_ms();
        rx_sb out = {0};
        rx_print_module(m, &out);
        double t3 = now_ms();
        printed = out.n;
        arena_bytes = rx_arena_bytes(m->arena);
        rx_sb_free(&out);
        rx_module_free(m);
        rx_diags_free(&d);
        if (t1 - t0 < best_parse) best_parse = t1 - t0;
        if (t2 - t1 < best_deduce) best_deduce = t2 - t1;
        if (t3 - t2 < best_print) best_print = t3 - t2;
        if (t3 - t0 < best_total) best_total = t3 - t0;
    }
    double best_ref = 1e30;
    for (int r = 0; r < repeat; r++) {
        double t0 = now_ms();
        json_error_t je;
        json_t *root = json_loadb(rx_sb_str(&text), text.n, JSON_REJECT_DUPLICATES, &je);
        json_decref(root);
        double t = now_ms() - t0;
        if (t < best_ref) best_ref = t;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"frontend\",\"bindings\":%d,\"json_bytes\":%zu,\"repeat\":%d,"
           "\"parse_ms\":%.2f,\"deduce_ms\":%.2f,\"print_ms\":%.2f,\"total_ms\":%.2f,"
           "\"arena_bytes\":%zu,\"printed_bytes\":%zu,\"peak_rss_kib\":%ld,"
           "\"jansson_only_ms\":%.2f,\"vs_jansson\":%.2f}\n",
           nbind, text.n, repeat, best_parse, best_deduce, best_print, best_total, arena_bytes,
           printed, ru.ru_maxrss, best_ref, best_total / best_ref);
    rx_sb_free(&text);
    return 0;
}
