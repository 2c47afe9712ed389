/*
 * progress.c — the line `relax` draws on stderr while it waits: "compiling... 3.2 s
 * (running)", rewritten in place with a carriage return and erase-to-end-of-line.
 *
 * Drawn only when stderr is a terminal, so logs and pipes (CI) never see control codes;
 * redrawn at most every 100 ms. Whoever prints to stderr while a line may be drawn calls
 * rxc_progress_clear first (http.c does for every error it prints).
 */
#include "client.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

void rxc_progress_start(rxc_progress *p, const char *label)
{
    p->enabled = isatty(STDERR_FILENO);
    p->drawn = 0;
    p->label = label;
    p->state = NULL;
    p->t0 = rx_now_s();
    p->last = 0;
}

void rxc_progress_tick(rxc_progress *p)
{
    if (!p->enabled || !p->label) return;
    double t = rx_now_s();
    if (p->drawn && t - p->last < 0.1) return;
    p->last = t;
    fprintf(stderr, "\r%s... %.1f s%s%s%s\033[K", p->label, t - p->t0, p->state ? " (" : "",
            p->state ? p->state : "", p->state ? ")" : "");
    fflush(stderr);
    p->drawn = 1;
}

void rxc_progress_clear(rxc_progress *p)
{
    if (!p->drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = 0;
}
