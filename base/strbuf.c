/*
 * strbuf.c — rx_sb, a growable NUL-terminated heap string.
 * Appends are amortized O(1); the contents are always NUL-terminated once non-empty.
 */
#include "relax/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ensures room for `extra` more bytes plus the NUL. */
static void reserve(rx_sb *b, size_t extra)
{
    if (b->n + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    b->p = rx_xrealloc(b->p, cap);
    b->cap = cap;
}

void rx_sb_putn(rx_sb *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void rx_sb_putc(rx_sb *b, char c)
{
    reserve(b, 1);
    b->p[b->n++] = c;
    b->p[b->n] = 0;
}

void rx_sb_puts(rx_sb *b, const char *s)
{
    rx_sb_putn(b, s, strlen(s));
}

void rx_sb_vprintf(rx_sb *b, const char *fmt, va_list ap)
{
    /* Format straight into the spare capacity; only when it does not fit, grow and
     * format again (one vsnprintf in the common case). */
    va_list ap2;
    va_copy(ap2, ap);
    reserve(b, 64);
    size_t room = b->cap - b->n;
    int n = vsnprintf(b->p + b->n, room, fmt, ap);
    if (n > 0 && (size_t)n >= room) {
        reserve(b, (size_t)n);
        vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap2);
    }
    if (n > 0) b->n += (size_t)n;
    b->p[b->n] = 0;
    va_end(ap2);
}

void rx_sb_printf(rx_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *rx_sb_str(const rx_sb *b)
{
    return b->p ? b->p : "";
}

void rx_sb_reset(rx_sb *b)
{
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

void rx_sb_free(rx_sb *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

char *rx_sb_take(rx_sb *b)
{
    char *p = b->p ? b->p : rx_xstrdup("");
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}
