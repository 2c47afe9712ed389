/*
 * arena.c — bump allocation in chunks, freed all at once.
 *
 * Allocations are 16-byte aligned and zeroed. A request larger than a quarter of the
 * chunk size gets a chunk of its own so big arrays do not waste the current chunk.
 * Every chunk taken from or returned to the system passes through the arena's hook
 * (support.h), which lets tests count bytes and refuse allocations.
 * Cost: O(1) per allocation; one malloc per chunk (64 KiB, doubling up to 1 MiB).
 */
#include "relax/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *next; /* previous chunk in the list */
    size_t size;        /* usable bytes after the header */
    size_t used;        /* bytes handed out */
    _Alignas(16) unsigned char data[];
} chunk;

struct rx_arena {
    chunk *head;         /* current chunk (allocation happens here) */
    chunk *big;          /* dedicated chunks of large requests */
    size_t next_size;    /* size of the next regular chunk */
    size_t bytes;        /* total held from the system */
    rx_alloc_hook hook;  /* accounting hook or NULL */
    void *hook_ud;
};

void rx_fatal(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fatal: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *rx_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) rx_fatal(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return p;
}

void *rx_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) rx_fatal(__FILE__, __LINE__, "out of memory (%zu x %zu bytes)", n, size);
    return p;
}

void *rx_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) rx_fatal(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return q;
}

char *rx_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(rx_xmalloc(n), s, n);
}

rx_arena *rx_arena_new(void)
{
    rx_arena *a = rx_xcalloc(1, sizeof *a);
    a->next_size = 64 * 1024;
    return a;
}

void rx_arena_set_hook(rx_arena *a, rx_alloc_hook hook, void *ud)
{
    a->hook = hook;
    a->hook_ud = ud;
}

static void free_list(rx_arena *a, chunk *c)
{
    while (c) {
        chunk *next = c->next;
        if (a->hook) a->hook(a->hook_ud, -(ptrdiff_t)(sizeof(chunk) + c->size));
        free(c);
        c = next;
    }
}

void rx_arena_free(rx_arena *a)
{
    if (!a) return;
    free_list(a, a->head);
    free_list(a, a->big);
    free(a);
}

/* Takes a chunk of `size` usable bytes from the system through the hook. */
static chunk *new_chunk(rx_arena *a, size_t size)
{
    size_t total = sizeof(chunk) + size;
    if (a->hook && !a->hook(a->hook_ud, (ptrdiff_t)total))
        rx_fatal(__FILE__, __LINE__, "arena allocation of %zu bytes refused", total);
    chunk *c = rx_xmalloc(total);
    c->size = size;
    c->used = 0;
    a->bytes += total;
    return c;
}

void *rx_arena_alloc(rx_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    if (n > a->next_size / 4) {
        chunk *c = new_chunk(a, n);
        c->next = a->big;
        a->big = c;
        c->used = n;
        return memset(c->data, 0, n);
    }
    chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        c = new_chunk(a, a->next_size);
        c->next = a->head;
        a->head = c;
        if (a->next_size < 1024 * 1024) a->next_size *= 2;
    }
    void *p = c->data + c->used;
    c->used += n;
    return memset(p, 0, n);
}

void *rx_arena_dup(rx_arena *a, const void *p, size_t n)
{
    void *q = rx_arena_alloc(a, n);
    if (n) memcpy(q, p, n);
    return q;
}

char *rx_arena_strdup(rx_arena *a, const char *s)
{
    return rx_arena_strndup(a, s, strlen(s));
}

char *rx_arena_strndup(rx_arena *a, const char *s, size_t n)
{
    char *q = rx_arena_alloc(a, n + 1);
    memcpy(q, s, n);
    q[n] = 0;
    return q;
}

char *rx_arena_printf(rx_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = rx_arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
    if (n > 0) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

size_t rx_arena_bytes(const rx_arena *a)
{
    return a->bytes;
}
