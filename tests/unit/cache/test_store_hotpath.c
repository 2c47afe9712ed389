/*
 * test_store_hotpath.c — the cheap hit path and what it must not give up (store.h,
 * "Verified on read" and "Access times"):
 *   - a blob verified once and unchanged is read without hashing (stats.verified);
 *   - a blob changed in place through the filesystem (same size) is hashed and
 *     found corrupt on the next read, also when its mtime is set back (ctime moves);
 *   - a freshly written blob is hashed on every read until it is RACY old;
 *   - verify_interval_ms: a full hash again once the interval has passed; with
 *     RX_STORE_VERIFY_EVERY_READ every read hashes. (Content changing without the
 *     filesystem noticing cannot be produced from a test, so "every read hashes" is
 *     checked through the counter, which counts the SHA-256 runs.)
 *   - accesses are not written per hit, yet eviction follows the read order, and close
 *     writes the pending ones (checked by reopening with a smaller cap).
 * Blobs must be older than the store's 2 s window before a verification is remembered,
 * so the tests that need a remembered one sleep past it once.
 */
#include "cache_test.h"

#include <sqlite3.h>
#include <time.h>

#include "../rx_check.h"

#define HOUR_MS 3600000

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* Past the store's "recently modified" window (2 s). */
static void age_blobs(void) { sleep_ms(2200); }

static int64_t verified(rx_store *s)
{
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    return st.verified;
}

/* rx_store_read that must succeed with n bytes equal to text. */
static void read_ok(rx_store *s, const char *id, const char *text)
{
    char err[256] = "";
    uint8_t *bytes = NULL;
    size_t n = 0;
    ck_assert_msg(rx_store_read(s, id, &bytes, &n, err, sizeof err) == 0, "read: %s", err);
    ck_assert_uint_eq(n, strlen(text));
    ck_assert(!memcmp(bytes, text, n));
    free(bytes);
}

/* Flips byte 5 of path in place (same size). */
static void flip_byte(const char *path)
{
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t c;
    ck_assert_int_eq(pread(fd, &c, 1, 5), 1);
    c ^= 0x01;
    ck_assert_int_eq(pwrite(fd, &c, 1, 5), 1);
    ck_assert_int_eq(close(fd), 0);
}

static const char *A = "artifact A: the bytes of some .rxa, long enough to flip one";
static const char *B = "artifact B: another one";

START_TEST(unchanged_blob_is_not_rehashed_changed_one_is)
{
    char dir[1024], err[256] = "", ida[65], idb[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "a", A, ida);
    ct_put(s, "b", B, idb);

    /* Fresh files (inside the 2 s window): every read hashes. */
    read_ok(s, ida, A);
    read_ok(s, ida, A);
    ck_assert_int_eq(verified(s), 2);

    age_blobs();
    read_ok(s, ida, A); /* hashed, remembered */
    read_ok(s, idb, B);
    ck_assert_int_eq(verified(s), 4);
    for (int i = 0; i < 5; i++) read_ok(s, ida, A); /* same file: trusted */
    read_ok(s, idb, B);
    ck_assert_int_eq(verified(s), 4);

    /* A byte changed in place: same size, new mtime and ctime: hashed, corrupt. */
    ct_blob_path(dir, ida, path, sizeof path);
    flip_byte(path);
    uint8_t *bytes = NULL;
    size_t n = 0;
    ck_assert_int_eq(rx_store_read(s, ida, &bytes, &n, err, sizeof err), 2);
    ck_assert_ptr_null(bytes);
    ck_assert_msg(strstr(err, "corrupt") != NULL, "%s", err);
    ck_assert(!ct_exists(path));
    ck_assert_int_eq(rx_store_read(s, ida, &bytes, &n, err, sizeof err), 1);

    /* The same with the old mtime put back: ctime still gives the write away. */
    struct stat before;
    ct_blob_path(dir, idb, path, sizeof path);
    ck_assert_int_eq(stat(path, &before), 0);
    flip_byte(path);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    ck_assert_int_eq(rx_store_read(s, idb, &bytes, &n, err, sizeof err), 2);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 2);
    ck_assert_int_eq(st.entries, 0);

    /* Rebuilt by the caller: the new file is hashed again before it is trusted. */
    int64_t v = verified(s);
    ct_put(s, "a", A, NULL);
    read_ok(s, ida, A);
    ck_assert_int_eq(verified(s), v + 1);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(verify_interval)
{
    char dir1[1024], dir2[1024], dir3[1024], id1[65], id2[65], id3[65];
    ct_tmpdir(dir1, sizeof dir1);
    ct_tmpdir(dir2, sizeof dir2);
    ct_tmpdir(dir3, sizeof dir3);
    rx_store *every = ct_open_tuned(dir1, 0, RX_STORE_VERIFY_EVERY_READ, 0);
    rx_store *short_iv = ct_open_tuned(dir2, 0, 300, 0);
    ct_put(every, "a", A, id1);
    ct_put(short_iv, "a", A, id2);
    rx_store *reopened = ct_open(dir3, 0);
    ct_put(reopened, "a", A, id3);
    age_blobs();

    /* RX_STORE_VERIFY_EVERY_READ: one SHA-256 per read, old file or not. */
    for (int i = 0; i < 4; i++) read_ok(every, id1, A);
    ck_assert_int_eq(verified(every), 4);

    /* 300 ms: trusted inside the interval, hashed again after it. */
    read_ok(short_iv, id2, A);
    read_ok(short_iv, id2, A);
    ck_assert_int_eq(verified(short_iv), 1);
    sleep_ms(400);
    read_ok(short_iv, id2, A);
    ck_assert_int_eq(verified(short_iv), 2);
    read_ok(short_iv, id2, A);
    ck_assert_int_eq(verified(short_iv), 2);

    /* The memory is per open store: a reopened store hashes first. */
    read_ok(reopened, id3, A);
    read_ok(reopened, id3, A);
    ck_assert_int_eq(verified(reopened), 1);
    rx_store_close(reopened);
    reopened = ct_open(dir3, 0);
    read_ok(reopened, id3, A);
    ck_assert_int_eq(verified(reopened), 1);

    /* A negative flush interval is refused. */
    char err[256] = "";
    rx_store_opts o = {.dir = dir3};
    rx_store_tuning t = {.access_flush_ms = -1};
    ck_assert_ptr_null(rx_store_open_tuned(&o, &t, err, sizeof err));
    ck_assert_msg(strstr(err, "access_flush_ms") != NULL, "%s", err);

    rx_store_close(every);
    rx_store_close(short_iv);
    rx_store_close(reopened);
    ct_rmrf(dir1);
    ct_rmrf(dir2);
    ct_rmrf(dir3);
}
END_TEST

/* A payload of exactly n bytes that starts with tag. */
static void payload(char *buf, size_t n, const char *tag)
{
    memset(buf, '.', n);
    memcpy(buf, tag, strlen(tag));
    buf[n] = 0;
}

/* The id with the smallest access_seq in dir's database, read by a connection of our
 * own: what eviction would pick from what has been written. */
static void db_lru(const char *dir, char out[65])
{
    char path[1200];
    snprintf(path, sizeof path, "%s/cache.db", dir);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT id FROM artifacts ORDER BY access_seq"
                                            " LIMIT 1", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, 65, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

START_TEST(batched_accesses_keep_lru_order)
{
    char dir[1024], err[256] = "", buf[2000], id[5][65], lru[65];
    const char *keys[] = {"a", "b", "c", "d", "e"};
    ct_tmpdir(dir, sizeof dir);
    /* No periodic flush: only puts and close write accesses. */
    rx_store *s = ct_open_tuned(dir, 3000, 0, HOUR_MS);
    for (int i = 0; i < 3; i++) {
        payload(buf, 1000, keys[i]);
        ct_put(s, keys[i], buf, id[i]);
    }
    int64_t t_read = 0;
    {
        rx_artifact_info info;
        payload(buf, 1000, "a");
        read_ok(s, id[0], buf); /* order of use: b, c, a */
        ck_assert_int_eq(rx_store_info(s, id[0], &info, NULL, err, sizeof err), 0);
        t_read = info.last_access_ms; /* the pending access shows */
        ck_assert_int_eq(rx_store_lookup(s, "b", &info, err, sizeof err), 1); /* c, a, b */
    }
    /* Nothing written per hit: the database still has a as least recent. */
    db_lru(dir, lru);
    ck_assert_str_eq(lru, id[0]);
    ck_assert_int_ge(t_read, 1);

    /* A put writes them (in order) before it evicts: c goes, not a. */
    payload(buf, 1000, "d");
    ct_put(s, "d", buf, id[3]);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, id[2], &bytes, &n, err, sizeof err), 1);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "a", &info, err, sizeof err), 1); /* b, d, a */
    ck_assert_int_ge(info.last_access_ms, t_read);
    payload(buf, 1000, "e");
    ct_put(s, "e", buf, id[4]); /* b goes */
    ck_assert_int_eq(rx_store_lookup(s, "b", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_lookup(s, "d", &info, err, sizeof err), 1);
    ck_assert_int_eq(rx_store_lookup(s, "a", &info, err, sizeof err), 1);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.evictions, 2);
    ck_assert_int_eq(st.entries, 3);
    ck_assert_int_eq(ct_count_blobs(dir), 3);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(close_writes_pending_accesses)
{
    char dir[1024], buf[2000], id[3][65], lru[65];
    const char *keys[] = {"a", "b", "c"};
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open_tuned(dir, 0, 0, HOUR_MS);
    for (int i = 0; i < 3; i++) {
        payload(buf, 1000, keys[i]);
        ct_put(s, keys[i], buf, id[i]);
    }
    payload(buf, 1000, "a");
    read_ok(s, id[0], buf); /* order of use: b, c, a */
    db_lru(dir, lru);
    ck_assert_str_eq(lru, id[0]); /* not written yet */
    rx_store_close(s);
    db_lru(dir, lru);
    ck_assert_str_eq(lru, id[1]); /* written by close */

    /* Reopened under a cap of two: recovery evicts b, the least recently used. */
    s = ct_open(dir, 2000);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.evictions, 1);
    char err[256] = "";
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "b", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_lookup(s, "a", &info, err, sizeof err), 1);
    ck_assert_int_eq(rx_store_lookup(s, "c", &info, err, sizeof err), 1);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(periodic_flush)
{
    char dir[1024], buf[2000], id[2][65], lru[65];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open_tuned(dir, 0, 0, 100);
    payload(buf, 1000, "a");
    ct_put(s, "a", buf, id[0]);
    payload(buf, 1000, "b");
    ct_put(s, "b", buf, id[1]);
    sleep_ms(150);
    payload(buf, 1000, "a");
    read_ok(s, id[0], buf); /* due: this hit writes the pending accesses */
    db_lru(dir, lru);
    ck_assert_str_eq(lru, id[1]);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

static Suite *hotpath_suite(void)
{
    Suite *s = suite_create("store_hotpath");
    TCase *tc = tcase_create("hotpath");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, unchanged_blob_is_not_rehashed_changed_one_is);
    tcase_add_test(tc, verify_interval);
    tcase_add_test(tc, batched_accesses_keep_lru_order);
    tcase_add_test(tc, close_writes_pending_accesses);
    tcase_add_test(tc, periodic_flush);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(hotpath_suite()); }
