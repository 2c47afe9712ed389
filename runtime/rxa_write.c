/*
 * rxa_write.c — building `.rxa` artifacts (the compiler's artifact writer and the
 * runtime tests use this).
 *
 * The builder accumulates tables in growable byte buffers already in their on-disk
 * little-endian form: strings are interned (linear probe over a small hash table),
 * functions and kernels are encoded as they are added, constants are kept as
 * (descriptor, data copy) and laid out at serialization. rx_rxa_serialize then lays
 * out the header, the section table and each section on a 64-byte boundary, and
 * computes the CRC over everything after the header. Out of memory sets a sticky flag
 * that makes serialization fail; the add functions never crash on it.
 */
#include "relax/rxa.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
    uint8_t *p;   /* bytes */
    size_t n;     /* used */
    size_t cap;   /* allocated */
} buf;

typedef struct cdesc {
    uint32_t dtype;  /* packed dtype */
    int32_t ndim;    /* dims */
    int64_t *shape;  /* owned copy */
    uint8_t *data;   /* owned copy */
    size_t nbytes;   /* data size */
} cdesc;

struct rx_rxa_builder {
    bool oom;                 /* an allocation failed: serialize fails */
    buf strings;              /* encoded string entries (without the count) */
    uint32_t nstrings;        /* strings interned */
    char **strtab;            /* interned copies, by index */
    uint32_t *hash;           /* open addressing: index + 1, 0 empty */
    uint32_t hcap;            /* hash slots (power of two) */
    buf funcs;                /* encoded function entries */
    uint32_t nfuncs;
    buf kernels;              /* encoded kernel entries */
    uint32_t nkernels;
    buf code;                 /* encoded CODE words */
    size_t ncode;             /* words */
    cdesc *consts;            /* constants */
    uint32_t nconsts, cconsts;
    buf raw[RX_RXA_KIND_LAST + 1]; /* METADATA and raw kernel sections */
    bool has_raw[RX_RXA_KIND_LAST + 1];
};

static void put(rx_rxa_builder *b, buf *x, const void *p, size_t n)
{
    if (x->cap - x->n < n) {
        size_t cap = x->cap ? x->cap : 256;
        while (cap - x->n < n) cap *= 2;
        uint8_t *np = realloc(x->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        x->p = np;
        x->cap = cap;
    }
    if (n) memcpy(x->p + x->n, p, n);
    x->n += n;
}

static void put32(rx_rxa_builder *b, buf *x, uint32_t v)
{
    uint8_t e[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, e, 4);
}

static void put64(rx_rxa_builder *b, buf *x, uint64_t v)
{
    put32(b, x, (uint32_t)v);
    put32(b, x, (uint32_t)(v >> 32));
}

rx_rxa_builder *rx_rxa_builder_new(void)
{
    return calloc(1, sizeof(rx_rxa_builder));
}

void rx_rxa_builder_free(rx_rxa_builder *b)
{
    if (!b) return;
    free(b->strings.p);
    for (uint32_t i = 0; i < b->nstrings; i++) free(b->strtab[i]);
    free(b->strtab);
    free(b->hash);
    free(b->funcs.p);
    free(b->kernels.p);
    free(b->code.p);
    for (uint32_t i = 0; i < b->nconsts; i++) {
        free(b->consts[i].shape);
        free(b->consts[i].data);
    }
    free(b->consts);
    for (int i = 0; i <= RX_RXA_KIND_LAST; i++) free(b->raw[i].p);
    free(b);
}

static uint32_t strhash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool rehash(rx_rxa_builder *b)
{
    uint32_t cap = b->hcap ? b->hcap * 2 : 64;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h) return false;
    for (uint32_t i = 0; i < b->nstrings; i++) {
        uint32_t k = strhash(b->strtab[i]) & (cap - 1);
        while (h[k]) k = (k + 1) & (cap - 1);
        h[k] = i + 1;
    }
    free(b->hash);
    b->hash = h;
    b->hcap = cap;
    return true;
}

uint32_t rx_rxa_add_string(rx_rxa_builder *b, const char *s)
{
    if (!s) s = "";
    if ((b->nstrings + 1) * 2 > b->hcap && !rehash(b)) {
        b->oom = true;
        return 0;
    }
    uint32_t k = strhash(s) & (b->hcap - 1);
    for (; b->hash[k]; k = (k + 1) & (b->hcap - 1))
        if (!strcmp(b->strtab[b->hash[k] - 1], s)) return b->hash[k] - 1;
    char **nt = realloc(b->strtab, sizeof *nt * (b->nstrings + 1));
    char *copy = strdup(s);
    if (nt) b->strtab = nt;
    if (!nt || !copy) {
        free(copy);
        b->oom = true;
        return 0;
    }
    size_t len = strlen(s);
    b->strtab[b->nstrings] = copy;
    b->hash[k] = b->nstrings + 1;
    put32(b, &b->strings, (uint32_t)len);
    put(b, &b->strings, s, len + 1);
    return b->nstrings++;
}

void rx_rxa_set_metadata(rx_rxa_builder *b, const char *json, size_t n)
{
    rx_rxa_set_section(b, RX_RXA_METADATA, json, n);
}

int rx_rxa_set_section(rx_rxa_builder *b, uint32_t kind, const void *data, size_t n)
{
    if (kind != RX_RXA_METADATA && (kind < RX_RXA_KERNELS_CPU || kind > RX_RXA_KIND_LAST))
        return -1;
    b->raw[kind].n = 0;
    put(b, &b->raw[kind], data, n);
    b->has_raw[kind] = true;
    return 0;
}

uint32_t rx_rxa_add_const(rx_rxa_builder *b, uint32_t dtype, int32_t ndim,
                          const int64_t *shape, const void *data, size_t nbytes)
{
    uint64_t count = 1;
    if (ndim < 0 || ndim > RX_RXA_MAX_NDIM) return RX_RXA_NONE;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0) return RX_RXA_NONE;
        count *= (uint64_t)shape[i];
    }
    if (count * rx_rxa_dtype_bytes(dtype) != nbytes || !dtype) return RX_RXA_NONE;
    if (b->nconsts == b->cconsts) {
        uint32_t cap = b->cconsts ? b->cconsts * 2 : 8;
        cdesc *nc = realloc(b->consts, sizeof *nc * cap);
        if (!nc) {
            b->oom = true;
            return RX_RXA_NONE;
        }
        b->consts = nc;
        b->cconsts = cap;
    }
    cdesc *c = &b->consts[b->nconsts];
    c->dtype = dtype;
    c->ndim = ndim;
    c->nbytes = nbytes;
    c->shape = malloc(sizeof *c->shape * (size_t)(ndim ? ndim : 1));
    c->data = malloc(nbytes ? nbytes : 1);
    if (!c->shape || !c->data) {
        free(c->shape);
        free(c->data);
        b->oom = true;
        return RX_RXA_NONE;
    }
    if (ndim) memcpy(c->shape, shape, sizeof *shape * (size_t)ndim);
    if (nbytes) memcpy(c->data, data, nbytes);
    return b->nconsts++;
}

uint32_t rx_rxa_add_kernel(rx_rxa_builder *b, const char *name, uint32_t section,
                           uint32_t nbufs, uint32_t nivars, const char *const *ivar_names)
{
    put32(b, &b->kernels, rx_rxa_add_string(b, name));
    put32(b, &b->kernels, section);
    put32(b, &b->kernels, nbufs);
    put32(b, &b->kernels, nivars);
    for (uint32_t i = 0; i < nivars; i++)
        put32(b, &b->kernels, rx_rxa_add_string(b, ivar_names ? ivar_names[i] : "?"));
    return b->nkernels++;
}

static void put_dim(rx_rxa_builder *b, buf *x, const rx_rxa_dim *d)
{
    put32(b, x, d->ntok);
    for (uint32_t i = 0; i < d->ntok; i++) {
        put32(b, x, d->tok[i].op);
        if (d->tok[i].op == RX_RXA_TOK_CONST)
            put64(b, x, (uint64_t)d->tok[i].arg);
        else if (d->tok[i].op == RX_RXA_TOK_VAR)
            put32(b, x, (uint32_t)d->tok[i].arg);
    }
}

static void put_type(rx_rxa_builder *b, buf *x, const rx_rxa_type *t)
{
    put32(b, x, t->name ? rx_rxa_add_string(b, t->name) : RX_RXA_NONE);
    put32(b, x, t->kind);
    switch (t->kind) {
    case RX_RXA_T_TENSOR:
    case RX_RXA_T_SHAPE:
        if (t->kind == RX_RXA_T_TENSOR) put32(b, x, t->dtype);
        put32(b, x, (uint32_t)t->ndim);
        for (int32_t i = 0; i < t->ndim; i++) put_dim(b, x, &t->dims[i]);
        break;
    case RX_RXA_T_INT: {
        static const rx_rxa_dim unknown = {0, NULL};
        put_dim(b, x, t->dims ? &t->dims[0] : &unknown);
        break;
    }
    case RX_RXA_T_TUPLE:
        put32(b, x, t->nfields);
        for (uint32_t i = 0; i < t->nfields; i++) put_type(b, x, &t->fields[i]);
        break;
    default:
        break;
    }
}

uint32_t rx_rxa_add_function(rx_rxa_builder *b, const rx_rxa_func *f, const int64_t *code,
                             size_t ncode)
{
    buf *x = &b->funcs;
    put32(b, x, rx_rxa_add_string(b, f->name));
    put32(b, x, f->nsym);
    for (uint32_t i = 0; i < f->nsym; i++) put32(b, x, rx_rxa_add_string(b, f->syms[i]));
    put32(b, x, f->nparams);
    for (uint32_t i = 0; i < f->nparams; i++) put_type(b, x, &f->params[i]);
    put_type(b, x, &f->result);
    put32(b, x, f->nregs);
    put32(b, x, f->heap_size);
    put32(b, x, (uint32_t)b->ncode);
    put32(b, x, (uint32_t)ncode);
    for (size_t i = 0; i < ncode; i++) put64(b, &b->code, (uint64_t)code[i]);
    b->ncode += ncode;
    return b->nfuncs++;
}

static size_t align64(size_t n)
{
    return (n + RX_RXA_ALIGN - 1) & ~(size_t)(RX_RXA_ALIGN - 1);
}

int rx_rxa_serialize(rx_rxa_builder *b, uint8_t **out, size_t *n)
{
    buf sec[RX_RXA_KIND_LAST + 1] = {{0}};
    bool present[RX_RXA_KIND_LAST + 1] = {false};
    *out = NULL;
    *n = 0;

    /* Step 1: encode the generated sections. */
    put32(b, &sec[RX_RXA_STRINGS], b->nstrings);
    put(b, &sec[RX_RXA_STRINGS], b->strings.p, b->strings.n);
    put32(b, &sec[RX_RXA_FUNCS], b->nfuncs);
    put(b, &sec[RX_RXA_FUNCS], b->funcs.p, b->funcs.n);
    put32(b, &sec[RX_RXA_FUNCS], b->nkernels);
    put(b, &sec[RX_RXA_FUNCS], b->kernels.p, b->kernels.n);
    put(b, &sec[RX_RXA_CODE], b->code.p, b->code.n);
    present[RX_RXA_STRINGS] = present[RX_RXA_FUNCS] = present[RX_RXA_CODE] = true;
    if (b->nconsts) {
        buf *c = &sec[RX_RXA_CONSTS];
        size_t table = 4;
        for (uint32_t i = 0; i < b->nconsts; i++) table += 24 + 8 * (size_t)b->consts[i].ndim;
        size_t off = align64(table);
        put32(b, c, b->nconsts);
        for (uint32_t i = 0; i < b->nconsts; i++) {
            const cdesc *d = &b->consts[i];
            put32(b, c, d->dtype);
            put32(b, c, (uint32_t)d->ndim);
            for (int32_t k = 0; k < d->ndim; k++) put64(b, c, (uint64_t)d->shape[k]);
            put64(b, c, off);
            put64(b, c, d->nbytes);
            off = align64(off + d->nbytes);
        }
        for (uint32_t i = 0; i < b->nconsts; i++) {
            static const uint8_t zeros[RX_RXA_ALIGN];
            put(b, c, zeros, align64(c->n) - c->n);
            put(b, c, b->consts[i].data, b->consts[i].nbytes);
        }
        present[RX_RXA_CONSTS] = true;
    }
    for (int k = 0; k <= RX_RXA_KIND_LAST; k++)
        if (b->has_raw[k]) {
            put(b, &sec[k], b->raw[k].p, b->raw[k].n);
            present[k] = true;
        }

    /* Step 2: lay out header, table, sections. */
    uint32_t nsec = 0;
    for (int k = 0; k <= RX_RXA_KIND_LAST; k++) nsec += present[k];
    size_t pos = align64(RX_RXA_HEADER_SIZE + (size_t)nsec * RX_RXA_SECTION_ENTRY_SIZE);
    size_t offs[RX_RXA_KIND_LAST + 1] = {0};
    for (int k = 0; k <= RX_RXA_KIND_LAST; k++)
        if (present[k]) {
            offs[k] = pos;
            pos = align64(pos + sec[k].n);
        }
    size_t total = pos;
    for (int k = RX_RXA_KIND_LAST; k >= 0; k--)
        if (present[k]) {
            total = offs[k] + sec[k].n; /* no padding after the last section */
            break;
        }

    /* Step 3: write it. */
    uint8_t *p = b->oom ? NULL : calloc(1, total);
    if (p) {
        buf hdr = {0};
        put(b, &hdr, RX_RXA_MAGIC, 8);
        put32(b, &hdr, RX_RXA_VERSION);
        put32(b, &hdr, 0);
        put32(b, &hdr, nsec);
        put32(b, &hdr, 0);
        put64(b, &hdr, total);
        put32(b, &hdr, 0); /* CRC, patched below */
        put32(b, &hdr, 0);
        for (int k = 0; k <= RX_RXA_KIND_LAST; k++)
            if (present[k]) {
                put32(b, &hdr, (uint32_t)k);
                put32(b, &hdr, 0);
                put64(b, &hdr, offs[k]);
                put64(b, &hdr, sec[k].n);
            }
        if (!b->oom) {
            memcpy(p, hdr.p, hdr.n);
            for (int k = 0; k <= RX_RXA_KIND_LAST; k++)
                if (present[k] && sec[k].n) memcpy(p + offs[k], sec[k].p, sec[k].n);
            uint32_t crc = rx_rxa_crc32(0, p + RX_RXA_HEADER_SIZE, total - RX_RXA_HEADER_SIZE);
            for (int i = 0; i < 4; i++) p[32 + i] = (uint8_t)(crc >> (8 * i));
        }
        free(hdr.p);
    }
    for (int k = 0; k <= RX_RXA_KIND_LAST; k++) free(sec[k].p);
    if (b->oom || !p) {
        free(p);
        return -1;
    }
    *out = p;
    *n = total;
    return 0;
}

size_t rx_rxa_emitv(rx_rxa_code *c, const int64_t *w, size_t n)
{
    size_t at = c->n;
    if (c->cap - c->n < n) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap - c->n < n) cap *= 2;
        int64_t *nw = realloc(c->w, cap * sizeof *nw);
        if (!nw) return at; /* caller sees a short code buffer; verification fails */
        c->w = nw;
        c->cap = cap;
    }
    memcpy(c->w + c->n, w, n * sizeof *w);
    c->n += n;
    return at;
}

void rx_rxa_code_free(rx_rxa_code *c)
{
    free(c->w);
    c->w = NULL;
    c->n = c->cap = 0;
}
