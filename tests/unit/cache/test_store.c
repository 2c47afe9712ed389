/*
 * test_store.c — the artifact store (cache/): put, lookup, read, replace, info and
 * metadata, persistence, schema versioning, id validation. Integrity, recovery,
 * eviction and concurrency live in test_store_integrity.c and test_store_threads.c.
 */
#include "cache_test.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include "../rx_check.h"

static const char *A = "artifact A: some bytes of an .rxa";
static const char *B = "artifact B: other bytes, a bit longer than the first one";

START_TEST(put_lookup_read)
{
    char dir[1024], err[256] = "";
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    rx_artifact_info put, got;
    ck_assert_int_eq(rx_store_put(s, "k1", "cpu", (const uint8_t *)A, strlen(A), NULL, &put,
                                  err, sizeof err), 0);
    char want[65];
    ct_hash(A, strlen(A), want);
    ck_assert_str_eq(put.id, want);
    ck_assert_str_eq(put.key, "k1");
    ck_assert_str_eq(put.target, "cpu");
    ck_assert_int_eq(put.size, (int64_t)strlen(A));
    ck_assert_int_gt(put.created_ms, 1600000000000LL);

    ck_assert_int_eq(rx_store_lookup(s, "k1", &got, err, sizeof err), 1);
    ck_assert_str_eq(got.id, want);
    ck_assert_str_eq(got.key, "k1");
    ck_assert_int_ge(got.last_access_ms, put.last_access_ms);

    uint8_t *bytes = NULL;
    size_t n = 0;
    ck_assert_int_eq(rx_store_read(s, want, &bytes, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, strlen(A));
    ck_assert(!memcmp(bytes, A, n));
    free(bytes);

    char path[4400];
    ct_blob_path(dir, want, path, sizeof path);
    ck_assert(ct_exists(path));

    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.entries, 1);
    ck_assert_int_eq(st.bytes, (int64_t)strlen(A));
    ck_assert_int_eq(st.hits, 1);
    ck_assert_int_eq(st.misses, 0);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(miss_and_unknown)
{
    char dir[1024], err[256] = "";
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "nope", &info, err, sizeof err), 0);
    char id[65];
    ct_hash("x", 1, id);
    uint8_t *bytes = (uint8_t *)"sentinel";
    size_t n = 7;
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 1);
    ck_assert_ptr_null(bytes);
    char *meta = (char *)"sentinel";
    ck_assert_int_eq(rx_store_info(s, id, &info, &meta, err, sizeof err), 1);
    ck_assert_ptr_null(meta);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.misses, 1);
    ck_assert_int_eq(st.hits, 0);
    ck_assert_int_eq(st.entries, 0);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(replace_under_same_key)
{
    char dir[1024], err[256] = "", ida[65], idb[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "k", A, ida);
    ct_put(s, "k", B, idb);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 1);
    ck_assert_str_eq(info.id, idb);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, ida, &bytes, &n, err, sizeof err), 1); /* freed */
    ct_blob_path(dir, ida, path, sizeof path);
    ck_assert(!ct_exists(path));
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.entries, 1);
    ck_assert_int_eq(st.bytes, (int64_t)strlen(B));

    /* Two keys naming the same bytes share one blob; moving one key keeps it. */
    ct_put(s, "k2", B, NULL);
    ct_put(s, "k", A, NULL);
    ck_assert_int_eq(rx_store_lookup(s, "k2", &info, err, sizeof err), 1);
    ck_assert_str_eq(info.id, idb);
    ck_assert_int_eq(rx_store_read(s, idb, &bytes, &n, err, sizeof err), 0);
    free(bytes);
    ck_assert_int_eq(ct_count_blobs(dir), 2);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(info_and_meta)
{
    char dir[1024], err[256] = "";
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    const char *meta_in = "{\"passes\":11,\"target\":\"cpu\"}";
    rx_artifact_info put, info;
    ck_assert_int_eq(rx_store_put(s, "key-a", "cuda", (const uint8_t *)A, strlen(A),
                                  meta_in, &put, err, sizeof err), 0);
    char *meta = NULL;
    ck_assert_int_eq(rx_store_info(s, put.id, &info, &meta, err, sizeof err), 0);
    ck_assert_str_eq(info.id, put.id);
    ck_assert_str_eq(info.key, "key-a");
    ck_assert_str_eq(info.target, "cuda");
    ck_assert_int_eq(info.size, (int64_t)strlen(A));
    ck_assert_int_eq(info.created_ms, put.created_ms);
    ck_assert_ptr_nonnull(meta);
    ck_assert_str_eq(meta, meta_in);
    free(meta);
    ck_assert_int_eq(rx_store_info(s, put.id, &info, NULL, err, sizeof err), 0);

    ck_assert_int_eq(rx_store_put(s, "key-b", "cpu", (const uint8_t *)B, strlen(B), NULL,
                                  &put, err, sizeof err), 0);
    meta = (char *)"sentinel";
    ck_assert_int_eq(rx_store_info(s, put.id, &info, &meta, err, sizeof err), 0);
    ck_assert_ptr_null(meta);

    /* Argument checks: key too long or empty, target too long. */
    char longkey[80];
    memset(longkey, 'a', 65);
    longkey[65] = 0;
    ck_assert_int_eq(rx_store_put(s, longkey, "cpu", (const uint8_t *)A, 1, NULL, &put, err,
                                  sizeof err), -1);
    ck_assert_int_eq(rx_store_put(s, "", "cpu", (const uint8_t *)A, 1, NULL, &put, err,
                                  sizeof err), -1);
    char longtarget[200];
    memset(longtarget, 't', sizeof longtarget - 1);
    longtarget[sizeof longtarget - 1] = '\0';
    ck_assert_int_eq(rx_store_put(s, "k", longtarget, (const uint8_t *)A, 1, NULL, &put, err,
                                  sizeof err), -1);
    ck_assert(strstr(err, "target") != NULL);
    /* An empty artifact is a valid one. */
    ck_assert_int_eq(rx_store_put(s, "empty", "cpu", NULL, 0, NULL, &put, err, sizeof err),
                     0);
    uint8_t *bytes;
    size_t n = 99;
    ck_assert_int_eq(rx_store_read(s, put.id, &bytes, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 0);
    free(bytes);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(persists_across_reopen)
{
    char dir[1024], err[256] = "", ida[65], idb[65];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "ka", A, ida);
    ct_put(s, "kb", B, idb);
    rx_store_close(s);

    s = ct_open(dir, 0);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "kb", &info, err, sizeof err), 1);
    ck_assert_str_eq(info.id, idb);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, ida, &bytes, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, strlen(A));
    ck_assert(!memcmp(bytes, A, n));
    free(bytes);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.entries, 2);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_int_eq(st.hits, 1); /* counters are per open */
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(schema_wal_and_versions)
{
    char dir[1024], err[256] = "", db[4200];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "k", A, NULL);
    snprintf(db, sizeof db, "%s/cache.db", dir);
    /* Seen from a second connection while the store is open: WAL, version 1. */
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    rx_store_close(s);

    /* A database from a newer relaxd is refused, not misread. */
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL),
                     SQLITE_OK);
    rx_store_opts o = {.dir = dir};
    ck_assert_ptr_null(rx_store_open(&o, err, sizeof err));
    ck_assert_msg(strstr(err, "newer") != NULL, "%s", err);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA user_version = 1", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    s = ct_open(dir, 0);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 1);
    rx_store_close(s);

    ck_assert_ptr_null(rx_store_open(NULL, err, sizeof err));
    rx_store_opts bad = {.dir = dir, .max_bytes = -1};
    ck_assert_ptr_null(rx_store_open(&bad, err, sizeof err));
    rx_store_close(NULL);
    ct_rmrf(dir);
}
END_TEST

START_TEST(second_process_is_refused)
{
    char dir[1024];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[256] = "";
        rx_store_opts o = {.dir = dir};
        rx_store *t = rx_store_open(&o, err, sizeof err);
        _exit(t == NULL && strstr(err, "in use") ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(invalid_ids_never_reach_the_filesystem)
{
    char dir[1024], err[256] = "", id[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "k", A, id);
    /* A file a traversal would reach: DIR/blobs/../evil. */
    snprintf(path, sizeof path, "%s/evil", dir);
    ct_write_file(path, A, strlen(A));
    char upper[65];
    for (int i = 0; i < 65; i++) upper[i] = (char)(id[i] >= 'a' ? id[i] - 32 : id[i]);
    char longer[70];
    snprintf(longer, sizeof longer, "%s0", id);
    const char *bad[] = {"../etc/passwd", "../../evil", upper, "abc", "", longer,
                         "/etc/passwd", id + 1};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t *bytes = NULL;
        size_t n = 0;
        ck_assert_int_eq(rx_store_valid_id(bad[i]), 0);
        ck_assert_int_eq(rx_store_read(s, bad[i], &bytes, &n, err, sizeof err), 1);
        ck_assert_ptr_null(bytes);
        rx_artifact_info info;
        ck_assert_int_eq(rx_store_info(s, bad[i], &info, NULL, err, sizeof err), 1);
    }
    ck_assert_int_eq(rx_store_valid_id(NULL), 0);
    ck_assert_int_eq(rx_store_valid_id(id), 1);
    /* Nothing was dropped and the real artifact is intact. */
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_int_eq(st.entries, 1);
    ck_assert(ct_exists(path));
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 0);
    free(bytes);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("basic");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, put_lookup_read);
    tcase_add_test(tc, miss_and_unknown);
    tcase_add_test(tc, replace_under_same_key);
    tcase_add_test(tc, info_and_meta);
    tcase_add_test(tc, persists_across_reopen);
    tcase_add_test(tc, schema_wal_and_versions);
    tcase_add_test(tc, second_process_is_refused);
    tcase_add_test(tc, invalid_ids_never_reach_the_filesystem);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(store_suite()); }
