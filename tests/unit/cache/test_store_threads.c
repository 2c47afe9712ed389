/*
 * test_store_threads.c — one store used from 8 threads at once: puts that replace
 * keys and trigger eviction, lookups and verified reads, all interleaved. Every
 * answer must be one the contract allows for some order of the operations (a read of
 * an id that a concurrent put or eviction freed is "not found", never corrupt or an
 * error), and afterwards the database and the blob directory must agree exactly.
 * Run twice: with the default tuning, and with the hit path at its busiest (pending
 * accesses flushed by readers every millisecond, racing the puts' own flushes, and
 * blobs old enough that reads trust remembered verifications while puts and
 * evictions replace them). Also meant for a -fsanitize=thread build.
 */
#include "cache_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "../rx_check.h"

#define THREADS 8
#define ITERS 60
#define KEYS 12
#define CAP 8000

typedef struct worker {
    rx_store *s;
    int tid;
    atomic_int *bad;       /* answers the contract does not allow */
    char why[256];         /* the first of them */
    int puts, hits, reads; /* what this worker did */
} worker;

static void flag(worker *w, const char *msg, const char *detail)
{
    if (atomic_fetch_add(w->bad, 1) == 0 || !w->why[0])
        snprintf(w->why, sizeof w->why, "thread %d: %s (%s)", w->tid, msg, detail);
}

static void *work(void *arg)
{
    worker *w = arg;
    unsigned seed = (unsigned)w->tid * 7919u + 1;
    char buf[2600], key[16], err[256], tag[64];
    for (int i = 0; i < ITERS; i++) {
        int k = rand_r(&seed) % KEYS;
        snprintf(key, sizeof key, "key-%02d", k);
        if (rand_r(&seed) % 3 == 0) {
            size_t n = 200 + (size_t)(rand_r(&seed) % 2200);
            snprintf(tag, sizeof tag, "%s|t%d-i%d|", key, w->tid, i);
            memset(buf, 'a' + (char)(i % 26), n);
            memcpy(buf, tag, strlen(tag));
            rx_artifact_info info;
            err[0] = 0;
            if (rx_store_put(w->s, key, "cpu", (const uint8_t *)buf, n, tag, &info, err,
                             sizeof err) != 0)
                flag(w, "put failed", err);
            else if (strcmp(info.key, key) || info.size != (int64_t)n)
                flag(w, "put info wrong", info.key);
            w->puts++;
            continue;
        }
        rx_artifact_info info;
        err[0] = 0;
        int r = rx_store_lookup(w->s, key, &info, err, sizeof err);
        if (r < 0) flag(w, "lookup failed", err);
        if (r != 1) continue;
        w->hits++;
        if (strcmp(info.key, key)) flag(w, "lookup returned another key", info.key);
        uint8_t *bytes = NULL;
        size_t n = 0;
        r = rx_store_read(w->s, info.id, &bytes, &n, err, sizeof err);
        if (r == 0) {
            w->reads++;
            char h[65];
            ct_hash(bytes, n, h);
            if (strcmp(h, info.id)) flag(w, "read bytes do not match the id", info.id);
            /* The bytes were stored under this key (the tag starts with it). */
            if (n < strlen(key) + 1 || memcmp(bytes, key, strlen(key)) || bytes[6] != '|')
                flag(w, "read bytes of another key", key);
        } else if (r != 1) {
            flag(w, r == 2 ? "read reported corruption" : "read failed", err);
        }
        free(bytes);
    }
    return NULL;
}

/* The workload on a store opened with flush_ms (0: default); when aged, the keys are
 * put first and left to age past the 2 s verification window. */
static void mixed(int64_t flush_ms, bool aged)
{
    char dir[1024], err[256] = "";
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open_tuned(dir, CAP, 0, flush_ms);
    int prefill = 0;
    if (aged) {
        for (int k = 0; k < KEYS; k++) {
            char key[16], text[700];
            snprintf(key, sizeof key, "key-%02d", k);
            snprintf(text, sizeof text, "%s|prefill|%0600d", key, k);
            ct_put(s, key, text, NULL);
        }
        struct timespec ts = {2, 200000000};
        nanosleep(&ts, NULL);
        /* Read each once (hashed, remembered) so the workers' reads can trust them. */
        for (int k = 0; k < KEYS; k++) {
            char key[16];
            snprintf(key, sizeof key, "key-%02d", k);
            rx_artifact_info info;
            if (rx_store_lookup(s, key, &info, err, sizeof err) != 1) continue;
            uint8_t *bytes;
            size_t n;
            ck_assert_int_eq(rx_store_read(s, info.id, &bytes, &n, err, sizeof err), 0);
            free(bytes);
            prefill++;
        }
    }
    rx_store_stats st0;
    rx_store_get_stats(s, &st0);
    atomic_int bad = 0;
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.s = s, .tid = i, .bad = &bad};
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    int puts = 0, hits = 0, reads = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        puts += w[i].puts;
        hits += w[i].hits;
        reads += w[i].reads;
    }
    for (int i = 0; i < THREADS; i++) ck_assert_msg(!w[i].why[0], "%s", w[i].why);
    ck_assert_int_eq(atomic_load(&bad), 0);
    ck_assert_int_gt(puts, 50);
    ck_assert_int_gt(reads, 20);

    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.hits - st0.hits, hits);
    ck_assert_int_eq(st.hits + st.misses - st0.hits - st0.misses, THREADS * ITERS - puts);
    ck_assert_int_le(st.verified - st0.verified, reads);
    if (aged) ck_assert_int_lt(st.verified - st0.verified, reads); /* some were trusted */
    ck_assert_int_le(st.bytes, CAP);
    ck_assert_int_gt(st.evictions, 0);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_int_le(st.entries, KEYS);
    ck_assert_int_eq(ct_count_blobs(dir), (int)st.entries); /* no orphans, no temps */

    /* Every key still held reads back verified, with its own bytes. */
    int held = 0;
    for (int k = 0; k < KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "key-%02d", k);
        rx_artifact_info info;
        if (rx_store_lookup(s, key, &info, err, sizeof err) != 1) continue;
        held++;
        uint8_t *bytes;
        size_t n;
        ck_assert_int_eq(rx_store_read(s, info.id, &bytes, &n, err, sizeof err), 0);
        ck_assert(!memcmp(bytes, key, strlen(key)));
        char *meta = NULL;
        ck_assert_int_eq(rx_store_info(s, info.id, &info, &meta, err, sizeof err), 0);
        ck_assert_ptr_nonnull(meta);
        ck_assert(!strncmp(meta, key, strlen(key))); /* the tag went in as metadata */
        free(meta);
        free(bytes);
    }
    ck_assert_int_ge(held, 1);
    rx_store_close(s);

    /* Reopen: recovery finds nothing to repair. */
    s = ct_open(dir, CAP);
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_int_eq(st.evictions, 0);
    ck_assert_int_eq(ct_count_blobs(dir), (int)st.entries);
    rx_store_close(s);
    ct_rmrf(dir);
    ck_assert_int_ge(prefill, aged ? 1 : 0);
}

START_TEST(eight_threads_mixed) { mixed(0, false); }
END_TEST

START_TEST(eight_threads_trusted_reads_frequent_flushes) { mixed(1, true); }
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("store_threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, eight_threads_mixed);
    tcase_add_test(tc, eight_threads_trusted_reads_frequent_flushes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(threads_suite()); }
