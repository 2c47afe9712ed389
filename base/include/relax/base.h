/*
 * base.h — the base library (base/, library rxbase) that every component links: the
 * compiler, the cache, the server, the scheduler, the agent and the command-line
 * client. Nothing here knows about Relax: assertions, heap helpers, growable arrays,
 * arenas, string buffers, located diagnostics, SHA-256 and hex, byte counts, base64 and
 * the monotonic clock. It depends on libc and libcrypto (SHA-256) only.
 *
 * Arenas own every IR node: a module allocates from one arena and frees it at once.
 * Allocation goes through one hook per arena so tests can count bytes (the benchmark
 * reports peak memory) and inject failure. Out of memory is fatal with file:line (the
 * inputs that reach it are size-limited first).
 *
 * Diagnostics are the user-facing error channel: a list of (JSON path, message)
 * pairs, collected rather than printed, so the server can return all of them.
 * Locations are compact: every IR node holds an rx_loc, an index into the module's
 * location table whose entries name a parent and a key or array index; the path
 * text (`functions.main.body.blocks[0].bindings[1].value`) is rendered only when an
 * error is reported.
 */
#ifndef RELAX_BASE_H
#define RELAX_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- assertions: broken invariants crash with file:line, never user input ---- */
void rx_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define RX_ASSERT(c) ((c) ? (void)0 : rx_fatal(__FILE__, __LINE__, "assertion failed: %s", #c))
#define RX_UNREACHABLE() rx_fatal(__FILE__, __LINE__, "unreachable")
#define RX_COUNTOF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- heap helpers: abort with a message on exhaustion ---- */
void *rx_xmalloc(size_t n);
void *rx_xcalloc(size_t n, size_t size);
void *rx_xrealloc(void *p, size_t n);
char *rx_xstrdup(const char *s);

/* Growable array of T in the heap: `RX_VEC(int) v = {0}; RX_VEC_PUSH(v, 3); free(v.items);` */
#define RX_VEC(T) struct { T *items; int n, cap; }
#define RX_VEC_GROW(v, need)                                                          \
    do {                                                                              \
        if ((need) > (v).cap) {                                                       \
            int nc_ = (v).cap ? (v).cap * 2 : 8;                                      \
            while (nc_ < (need)) nc_ *= 2;                                            \
            (v).items = rx_xrealloc((v).items, (size_t)nc_ * sizeof(*(v).items));     \
            (v).cap = nc_;                                                            \
        }                                                                             \
    } while (0)
#define RX_VEC_PUSH(v, x)                 \
    do {                                  \
        RX_VEC_GROW(v, (v).n + 1);        \
        (v).items[(v).n++] = (x);         \
    } while (0)
#define RX_VEC_FREE(v) (free((v).items), (v).items = NULL, (v).n = (v).cap = 0)

/* ---- arenas ---- */
typedef struct rx_arena rx_arena;

/* Allocation hook: called for every chunk the arena takes from the system (size>0)
 * and gives back (size is the negated chunk size). Returns false to refuse. */
typedef bool (*rx_alloc_hook)(void *ud, ptrdiff_t size);

rx_arena *rx_arena_new(void);
void rx_arena_set_hook(rx_arena *a, rx_alloc_hook hook, void *ud);
void rx_arena_free(rx_arena *a);                  /* frees every allocation at once */
void *rx_arena_alloc(rx_arena *a, size_t n);      /* zeroed, 16-byte aligned */
void *rx_arena_dup(rx_arena *a, const void *p, size_t n);
char *rx_arena_strdup(rx_arena *a, const char *s);
char *rx_arena_strndup(rx_arena *a, const char *s, size_t n);
char *rx_arena_printf(rx_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t rx_arena_bytes(const rx_arena *a);         /* bytes held from the system */
#define RX_NEW(a, T) ((T *)rx_arena_alloc((a), sizeof(T)))
#define RX_NEWN(a, T, n) ((T *)rx_arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- string buffer (heap) ---- */
typedef struct rx_sb {
    char *p;    /* NUL-terminated contents, NULL while empty */
    size_t n;   /* length without the NUL */
    size_t cap; /* allocated bytes */
} rx_sb;

void rx_sb_putc(rx_sb *b, char c);
void rx_sb_puts(rx_sb *b, const char *s);
void rx_sb_putn(rx_sb *b, const char *s, size_t n);
void rx_sb_printf(rx_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rx_sb_vprintf(rx_sb *b, const char *fmt, va_list ap);
const char *rx_sb_str(const rx_sb *b);            /* "" when empty */
void rx_sb_reset(rx_sb *b);                       /* length 0, keeps memory */
void rx_sb_free(rx_sb *b);
char *rx_sb_take(rx_sb *b);                       /* caller frees; buffer reset */

/* ---- locations: compact JSON paths ---- */
typedef int32_t rx_loc; /* index into an rx_loctab; 0 is the root (empty path) */

typedef struct rx_locent {
    rx_loc parent;   /* enclosing location */
    int32_t index;   /* array index, or -1 when key names an object member */
    const char *key; /* member name (arena string) when index < 0 */
} rx_locent;

typedef struct rx_loctab {
    RX_VEC(rx_locent) ents; /* entry 0 is the root */
} rx_loctab;

void rx_loctab_init(rx_loctab *t);
void rx_loctab_free(rx_loctab *t);
rx_loc rx_loc_key(rx_loctab *t, rx_loc parent, const char *key); /* key must outlive t */
rx_loc rx_loc_index(rx_loctab *t, rx_loc parent, int index);
void rx_loc_render(const rx_loctab *t, rx_loc loc, rx_sb *out); /* a.b[3].c */

/* ---- diagnostics ---- */
typedef struct rx_diag {
    char *path; /* JSON path ("" for the whole document); heap */
    char *msg;  /* one line, no trailing period; heap */
} rx_diag;

typedef struct rx_diags {
    RX_VEC(rx_diag) list; /* errors in the order found */
    int limit;            /* stop recording after this many (0: 100) */
    int dropped;          /* errors past the limit, counted only */
} rx_diags;

void rx_diags_init(rx_diags *d);
void rx_diags_free(rx_diags *d);
int rx_diags_count(const rx_diags *d);            /* recorded + dropped */
void rx_diag_add(rx_diags *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rx_diag_vadd(rx_diags *d, const char *path, const char *fmt, va_list ap);
void rx_diag_at(rx_diags *d, const rx_loctab *t, rx_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes "path: message\n" per error (and "... N more errors" when dropped). */
void rx_diags_format(const rx_diags *d, rx_sb *out);

/* Bad command-line usage: prints "error: <fmt with arg> (see PROG --help)" on stderr and
 * returns 2, the exit status of bad usage in every program. */
int rx_usage_error(const char *prog, const char *fmt, const char *arg);

/* True when s is 1..max characters of [A-Za-z0-9._-] (labels, targets, job ids). */
bool rx_is_word(const char *s, size_t max);

/* ---- hashing ---- */
/* Streaming: init, update..., final (which releases the state: every init needs its
 * final). Through libcrypto; a failure there is fatal. */
typedef struct rx_sha256 {
    void *md; /* libcrypto's EVP_MD_CTX */
} rx_sha256;

void rx_sha256_init(rx_sha256 *s);
void rx_sha256_update(rx_sha256 *s, const void *p, size_t n);
void rx_sha256_final(rx_sha256 *s, uint8_t out[32]);
void rx_sha256_abort(rx_sha256 *s); /* releases the state without a digest (after final: no-op) */
void rx_sha256_hex(const void *p, size_t n, char hex[65]); /* one shot, lowercase hex */
void rx_hex(const uint8_t *p, size_t n, char *out); /* out holds 2n+1 bytes */

/* A byte count: digits, then nothing or B, K/k/KiB, M/MiB, G/GiB (powers of 1024).
 * False for anything else, a negative value or one past INT64_MAX. (size.c) */
bool rx_parse_size(const char *v, int64_t *out);

/* ---- base64 (standard alphabet, padding required) ---- */
/* Decodes into *out (heap, caller frees); returns false on bad input. */
bool rx_base64_decode(const char *s, size_t n, uint8_t **out, size_t *outn);
/* The same with the padding optional ("Zm9vYg" is "foob"). */
bool rx_base64_decode_unpadded(const char *s, size_t n, uint8_t **out, size_t *outn);
void rx_base64_encode(const uint8_t *p, size_t n, rx_sb *out);

/* "512 B", "1.5 KiB", "3.2 GiB" (powers of 1024, one decimal past bytes) into buf. */
void rx_format_bytes(double v, char *buf, size_t n);

/* ---- the monotonic clock (clock.c): immune to wall-clock jumps ---- */
double rx_now_s(void);   /* seconds since an arbitrary fixed point */
double rx_now_ms(void);  /* milliseconds, fractional */
int64_t rx_now_ms_int(void); /* whole milliseconds */
int64_t rx_wall_ms(void);    /* the wall clock: milliseconds since the Unix epoch */

#endif
