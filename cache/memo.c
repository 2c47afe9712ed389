/*
 * memo.c — what a store backend knows about its blobs without asking the database or
 * hashing a file: per id, the artifact's size (a row exists), the fstat of the blob at
 * its last full SHA-256 verification, and the last access, which waits in a pending
 * list until the backend writes it (store_int.h, "the memo").
 *
 * Structure: a chained hash table of entries keyed by id (ids are SHA-256 hex, so any
 * 16 of their digits are a good hash), plus a doubly linked pending list through the
 * entries with an unwritten access, in access order: a hit unlinks its entry and
 * appends it, so the list is always oldest first and rx_memo_take needs no sort. One
 * mutex guards everything; every operation is O(1) but take (O(pending)) and forget
 * (O(n)), and none does I/O under the mutex.
 *
 * Epoch: rx_memo_forget bumps it. A reader reads it (rx_memo_get) before the SELECT
 * that tells it a row's size and hands it back to rx_memo_hit; a changed epoch means a
 * delete may have committed in between, so the size is not remembered (the access and
 * the verification still are: both are facts about the file, not the row).
 *
 * Memory: one entry (~200 bytes) per artifact read, looked up or put since open, plus
 * entries of unknown size, which only live until the next take.
 */
#include "store_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char id[65];               /* hex SHA-256 */
    int64_t size;              /* artifact size; -1: no row vouched for */
    bool verified;             /* st, verified_ms are set */
    rx_blob_stat st;           /* the file at its last full verification */
    int64_t verified_ms;       /* when that verification started */
    int64_t last_ms;           /* last access; 0: none */
    bool pending;              /* on the pending list */
    struct entry *hnext;       /* hash chain */
    struct entry *pprev, *pnext; /* pending list, oldest first */
} entry;

struct rx_memo {
    pthread_mutex_t mu;        /* guards all below */
    entry **b;                 /* buckets, nb a power of two */
    size_t nb, count;          /* buckets, entries */
    entry *phead, *ptail;      /* pending list */
    int npending;              /* its length */
    uint64_t epoch;            /* rx_memo_forget calls */
};

#define INITIAL_BUCKETS 64

static size_t hash_id(const char *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over 16 hex digits */
    for (int i = 0; i < 16; i++) h = (h ^ (uint8_t)id[i]) * 1099511628211ull;
    return (size_t)h;
}

rx_memo *rx_memo_new(void)
{
    rx_memo *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nb = INITIAL_BUCKETS;
    m->b = calloc(m->nb, sizeof *m->b);
    if (!m->b) {
        free(m);
        return NULL;
    }
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void rx_memo_free(rx_memo *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nb; i++) {
        for (entry *e = m->b[i], *next; e; e = next) {
            next = e->hnext;
            free(e);
        }
    }
    free(m->b);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* The entry of id or NULL; *link (may be NULL) gets the pointer that points at it. */
static entry *find(rx_memo *m, const char *id, entry ***link)
{
    entry **p = &m->b[hash_id(id) & (m->nb - 1)];
    while (*p && memcmp((*p)->id, id, 65) != 0) p = &(*p)->hnext;
    if (link) *link = p;
    return *p;
}

/* Doubles the buckets when the table is full; a failure only makes chains longer. */
static void grow(rx_memo *m)
{
    if (m->count < m->nb) return;
    size_t nb = 2 * m->nb;
    entry **b = calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < m->nb; i++) {
        for (entry *e = m->b[i], *next; e; e = next) {
            next = e->hnext;
            size_t j = hash_id(e->id) & (nb - 1);
            e->hnext = b[j];
            b[j] = e;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
}

/* The entry of id, created (size -1, nothing known) when missing; NULL out of memory. */
static entry *find_or_add(rx_memo *m, const char *id)
{
    entry *e = find(m, id, NULL);
    if (e) return e;
    grow(m);
    e = calloc(1, sizeof *e);
    if (!e) return NULL;
    memcpy(e->id, id, 64);
    e->size = -1;
    size_t i = hash_id(id) & (m->nb - 1);
    e->hnext = m->b[i];
    m->b[i] = e;
    m->count++;
    return e;
}

static void unlink_pending(rx_memo *m, entry *e)
{
    if (!e->pending) return;
    if (e->pprev) e->pprev->pnext = e->pnext;
    else m->phead = e->pnext;
    if (e->pnext) e->pnext->pprev = e->pprev;
    else m->ptail = e->pprev;
    e->pprev = e->pnext = NULL;
    e->pending = false;
    m->npending--;
}

static void append_pending(rx_memo *m, entry *e)
{
    e->pprev = m->ptail;
    e->pnext = NULL;
    if (m->ptail) m->ptail->pnext = e;
    else m->phead = e;
    m->ptail = e;
    e->pending = true;
    m->npending++;
}

/* Removes e (found through link) from the table and the pending list, and frees it. */
static void remove_entry(rx_memo *m, entry **link, entry *e)
{
    unlink_pending(m, e);
    *link = e->hnext;
    m->count--;
    free(e);
}

uint64_t rx_memo_epoch(rx_memo *m)
{
    pthread_mutex_lock(&m->mu);
    uint64_t e = m->epoch;
    pthread_mutex_unlock(&m->mu);
    return e;
}

void rx_memo_get(rx_memo *m, const char *id, rx_memo_view *v)
{
    pthread_mutex_lock(&m->mu);
    entry *e = find(m, id, NULL);
    v->epoch = m->epoch;
    v->size = e ? e->size : -1;
    v->verified = e && e->verified;
    if (v->verified) {
        v->st = e->st;
        v->verified_ms = e->verified_ms;
    }
    v->last_access_ms = e ? e->last_ms : 0;
    pthread_mutex_unlock(&m->mu);
}

int rx_memo_hit(rx_memo *m, const char *id, int64_t size, uint64_t epoch,
                const rx_blob_stat *verified, int64_t verified_ms, int64_t now_ms)
{
    pthread_mutex_lock(&m->mu);
    entry *e = find_or_add(m, id);
    int r = -1;
    if (e) {
        if (size >= 0 && (epoch == RX_MEMO_AUTHORITATIVE || epoch == m->epoch))
            e->size = size;
        if (verified) {
            e->verified = true;
            e->st = *verified;
            e->verified_ms = verified_ms;
        }
        if (now_ms > e->last_ms) e->last_ms = now_ms;
        unlink_pending(m, e);
        append_pending(m, e);
        r = m->npending;
    }
    pthread_mutex_unlock(&m->mu);
    return r;
}

int rx_memo_known(rx_memo *m, const char *id, int64_t size)
{
    pthread_mutex_lock(&m->mu);
    entry *e = find_or_add(m, id);
    if (e) e->size = size;
    pthread_mutex_unlock(&m->mu);
    return e ? 0 : -1;
}

void rx_memo_forget(rx_memo *m, const char (*ids)[65], int n)
{
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < n; i++) {
        entry **link;
        entry *e = find(m, ids[i], &link);
        if (e) remove_entry(m, link, e);
    }
    m->epoch++;
    pthread_mutex_unlock(&m->mu);
}

int rx_memo_take(rx_memo *m, rx_memo_access **out)
{
    *out = NULL;
    pthread_mutex_lock(&m->mu);
    int n = m->npending;
    rx_memo_access *a = n ? malloc((size_t)n * sizeof *a) : NULL;
    if (n && !a) {
        pthread_mutex_unlock(&m->mu);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        entry *e = m->phead;
        memcpy(a[i].id, e->id, 65);
        a[i].at_ms = e->last_ms;
        unlink_pending(m, e);
        if (e->size < 0) {
            entry **link;
            find(m, e->id, &link);
            remove_entry(m, link, e);
        }
    }
    pthread_mutex_unlock(&m->mu);
    *out = a;
    return n;
}
