/*
 * diag.c — locations (compact JSON paths) and the diagnostics list.
 *
 * A location is an index into a table of (parent, key | index) entries, so a node
 * pays 4 bytes for its path; the text is rendered only when an error is reported.
 * Diagnostics are collected, never printed here; past `limit` they are counted only,
 * so hostile input that produces millions of errors costs bounded memory.
 */
#include "relax/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rx_loctab_init(rx_loctab *t)
{
    memset(t, 0, sizeof *t);
    rx_locent root = {0, -1, NULL};
    RX_VEC_PUSH(t->ents, root);
}

void rx_loctab_free(rx_loctab *t)
{
    RX_VEC_FREE(t->ents);
}

rx_loc rx_loc_key(rx_loctab *t, rx_loc parent, const char *key)
{
    rx_locent e = {parent, -1, key};
    RX_VEC_PUSH(t->ents, e);
    return t->ents.n - 1;
}

rx_loc rx_loc_index(rx_loctab *t, rx_loc parent, int index)
{
    rx_locent e = {parent, index, NULL};
    RX_VEC_PUSH(t->ents, e);
    return t->ents.n - 1;
}

/* Appends the path of loc after that of its parent; depth is bounded by the reader's
 * nesting limit, so the recursion is too. */
static void render(const rx_loctab *t, rx_loc loc, rx_sb *out)
{
    if (loc <= 0 || loc >= t->ents.n) return;
    const rx_locent *e = &t->ents.items[loc];
    render(t, e->parent, out);
    if (e->index >= 0) {
        rx_sb_printf(out, "[%d]", e->index);
    } else {
        if (out->n) rx_sb_putc(out, '.');
        rx_sb_puts(out, e->key ? e->key : "?");
    }
}

void rx_loc_render(const rx_loctab *t, rx_loc loc, rx_sb *out)
{
    if (t) render(t, loc, out);
}

void rx_diags_init(rx_diags *d)
{
    memset(d, 0, sizeof *d);
}

void rx_diags_free(rx_diags *d)
{
    for (int i = 0; i < d->list.n; i++) {
        free(d->list.items[i].path);
        free(d->list.items[i].msg);
    }
    RX_VEC_FREE(d->list);
    d->dropped = 0;
}

int rx_diags_count(const rx_diags *d)
{
    return d->list.n + d->dropped;
}

void rx_diag_vadd(rx_diags *d, const char *path, const char *fmt, va_list ap)
{
    int limit = d->limit > 0 ? d->limit : 100;
    if (d->list.n >= limit) {
        d->dropped++;
        return;
    }
    rx_sb msg = {0};
    rx_sb_vprintf(&msg, fmt, ap);
    rx_diag e = {rx_xstrdup(path ? path : ""), rx_sb_take(&msg)};
    RX_VEC_PUSH(d->list, e);
}

void rx_diag_add(rx_diags *d, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rx_diag_vadd(d, path, fmt, ap);
    va_end(ap);
}

void rx_diag_at(rx_diags *d, const rx_loctab *t, rx_loc loc, const char *fmt, ...)
{
    rx_sb path = {0};
    rx_loc_render(t, loc, &path);
    va_list ap;
    va_start(ap, fmt);
    rx_diag_vadd(d, rx_sb_str(&path), fmt, ap);
    va_end(ap);
    rx_sb_free(&path);
}

void rx_diags_format(const rx_diags *d, rx_sb *out)
{
    for (int i = 0; i < d->list.n; i++) {
        const rx_diag *e = &d->list.items[i];
        if (e->path[0]) rx_sb_printf(out, "%s: %s\n", e->path, e->msg);
        else rx_sb_printf(out, "%s\n", e->msg);
    }
    if (d->dropped) rx_sb_printf(out, "... %d more errors\n", d->dropped);
}

int rx_usage_error(const char *prog, const char *fmt, const char *arg)
{
    fputs("error: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see %s --help)\n", prog);
    return 2;
}

bool rx_is_word(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (!n || n > max) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}
