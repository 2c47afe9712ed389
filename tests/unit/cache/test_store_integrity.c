/*
 * test_store_integrity.c — what the store does when the disk disagrees with the
 * database: corrupt and missing blobs (dropped, reported, rebuilt by the caller),
 * recovery at open (temp files, orphan blobs, rows without blobs, a crash between the
 * blob's rename and the row), and LRU eviction under the byte cap.
 */
#include "cache_test.h"

#include "../rx_check.h"

static const char *A = "artifact A: some bytes of an .rxa";

START_TEST(flipped_byte_is_dropped)
{
    char dir[1024], err[256] = "", id[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "k", A, id);
    ct_blob_path(dir, id, path, sizeof path);
    /* Flip one byte in place (same size: only the hash can tell). */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 5, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 5, SEEK_SET);
    fputc(ch ^ 0x01, f);
    fclose(f);

    uint8_t *bytes = NULL;
    size_t n = 0;
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 2);
    ck_assert_ptr_null(bytes);
    ck_assert_msg(strstr(err, "corrupt") && strstr(err, id), "%s", err);
    ck_assert(!ct_exists(path));
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 1);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 1);
    ck_assert_int_eq(st.entries, 0);
    ck_assert_int_eq(st.bytes, 0);
    /* The caller rebuilds: the same bytes go back in and read fine. */
    ct_put(s, "k", A, NULL);
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 0);
    free(bytes);

    /* A truncated blob is corrupt too. */
    ck_assert_int_eq(truncate(path, 3), 0);
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 2);
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 2);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(deleted_blob_is_a_miss)
{
    char dir[1024], err[256] = "", id[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "k", A, id);
    ct_blob_path(dir, id, path, sizeof path);
    ck_assert_int_eq(unlink(path), 0);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 0);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 1);
    ck_assert_int_eq(st.misses, 1);
    ck_assert_int_eq(st.entries, 0);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 1);

    /* Deleted and then read by id: 2 (dropped), then gone. */
    ct_put(s, "k", A, NULL);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "missing") != NULL, "%s", err);
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 0);
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 2);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

START_TEST(recovery_at_open)
{
    char dir[1024], err[256] = "", ida[65], idb[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "ka", A, ida);
    ct_put(s, "kb", "artifact B", idb);
    rx_store_close(s);

    /* While closed: an interrupted write left a temp file; B's blob disappeared; a
     * blob without a row appeared in a fan-out directory that did not exist; a
     * stranger's file sits among the blobs. */
    char tmp[4400], orphan[4400], orphan_id[65], other[4400];
    snprintf(tmp, sizeof tmp, "%s/blobs/%.2s/.tmp-999-1-0", dir, ida);
    ct_write_file(tmp, "half a bl", 9);
    ct_blob_path(dir, idb, path, sizeof path);
    ck_assert_int_eq(unlink(path), 0);
    const char *o = "orphan bytes";
    ct_hash(o, strlen(o), orphan_id);
    snprintf(path, sizeof path, "%s/blobs/%.2s", dir, orphan_id);
    mkdir(path, 0755);
    ct_blob_path(dir, orphan_id, orphan, sizeof orphan);
    ct_write_file(orphan, o, strlen(o));
    snprintf(other, sizeof other, "%s/blobs/%.2s/README", dir, ida);
    ct_write_file(other, "x", 1);

    s = ct_open(dir, 0);
    ck_assert(!ct_exists(tmp));
    ck_assert(!ct_exists(orphan));
    ck_assert(ct_exists(other)); /* not ours to delete */
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.dropped, 1); /* B's row */
    ck_assert_int_eq(st.entries, 1);
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "kb", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_lookup(s, "ka", &info, err, sizeof err), 1);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, ida, &bytes, &n, err, sizeof err), 0);
    free(bytes);
    ck_assert_int_eq(rx_store_read(s, orphan_id, &bytes, &n, err, sizeof err), 1);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

/* A crash after the blob's rename and before the row's COMMIT leaves exactly a
 * complete blob with no row: the next open removes it and the store works as if the
 * put never happened; putting the same bytes again succeeds. */
START_TEST(crash_between_rename_and_row)
{
    char dir[1024], err[256] = "", id[65], path[4400];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 0);
    ct_put(s, "other", "unrelated artifact", NULL);
    rx_store_close(s);

    ct_hash(A, strlen(A), id);
    snprintf(path, sizeof path, "%s/blobs/%.2s", dir, id);
    mkdir(path, 0755);
    ct_blob_path(dir, id, path, sizeof path);
    ct_write_file(path, A, strlen(A));

    s = ct_open(dir, 0);
    ck_assert(!ct_exists(path));
    rx_artifact_info info;
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_lookup(s, "other", &info, err, sizeof err), 1);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.entries, 1);
    ck_assert_int_eq(st.dropped, 0);
    ct_put(s, "k", A, NULL);
    uint8_t *bytes;
    size_t n;
    ck_assert_int_eq(rx_store_read(s, id, &bytes, &n, err, sizeof err), 0);
    ck_assert(!memcmp(bytes, A, n));
    free(bytes);
    rx_store_close(s);

    /* The blob present with its row while a stale copy of the same blob is "being
     * written" (temp file): reopen keeps the blob, drops the temp. */
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/blobs/%.2s/.tmp-1-2-3", dir, id);
    ct_write_file(tmp, A, strlen(A));
    s = ct_open(dir, 0);
    ck_assert(!ct_exists(tmp));
    ck_assert(ct_exists(path));
    ck_assert_int_eq(rx_store_lookup(s, "k", &info, err, sizeof err), 1);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

/* A payload of exactly n bytes that starts with tag. */
static void payload(char *buf, size_t n, const char *tag)
{
    memset(buf, '.', n);
    memcpy(buf, tag, strlen(tag));
    buf[n] = 0;
}

START_TEST(lru_eviction)
{
    char dir[1024], err[256] = "", buf[8000], id[6][65];
    ct_tmpdir(dir, sizeof dir);
    rx_store *s = ct_open(dir, 3000);
    const char *keys[] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 3; i++) {
        payload(buf, 1000, keys[i]);
        ct_put(s, keys[i], buf, id[i]);
    }
    rx_artifact_info info;
    uint8_t *bytes;
    size_t n;
    /* Order of use now: b (oldest), c, a (looked up). */
    ck_assert_int_eq(rx_store_lookup(s, "a", &info, err, sizeof err), 1);
    payload(buf, 1000, "d");
    ct_put(s, "d", buf, id[3]); /* 4000 > 3000: b goes */
    ck_assert_int_eq(rx_store_lookup(s, "b", &info, err, sizeof err), 0);
    ck_assert_int_eq(rx_store_lookup(s, "a", &info, err, sizeof err), 1);
    /* Order: c, d, a. Reading c makes d the oldest. */
    ck_assert_int_eq(rx_store_read(s, id[2], &bytes, &n, err, sizeof err), 0);
    free(bytes);
    payload(buf, 1000, "e");
    ct_put(s, "e", buf, id[4]);
    ck_assert_int_eq(rx_store_read(s, id[3], &bytes, &n, err, sizeof err), 1);
    ck_assert_int_eq(rx_store_lookup(s, "c", &info, err, sizeof err), 1);
    rx_store_stats st;
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.evictions, 2);
    ck_assert_int_eq(st.entries, 3);
    ck_assert_int_le(st.bytes, 3000);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_int_eq(ct_count_blobs(dir), 3);

    /* One artifact larger than the cap: everything else goes, it stays. */
    payload(buf, 5000, "f");
    ct_put(s, "f", buf, id[5]);
    rx_store_get_stats(s, &st);
    ck_assert_int_eq(st.entries, 1);
    ck_assert_int_eq(st.evictions, 5);
    ck_assert_int_eq(rx_store_read(s, id[5], &bytes, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 5000);
    free(bytes);
    ck_assert_int_eq(ct_count_blobs(dir), 1);
    rx_store_close(s);

    /* A cap lowered between runs is enforced at open. */
    s = ct_open(dir, 0);
    for (int i = 0; i < 3; i++) {
        payload(buf, 1000, keys[i]);
        ct_put(s, keys[i], buf, NULL);
    }
    rx_store_close(s);
    s = ct_open(dir, 2500);
    rx_store_get_stats(s, &st);
    ck_assert_int_le(st.bytes, 2500);
    ck_assert_int_eq(st.evictions, 2); /* f (5000 bytes, oldest), then a */
    ck_assert_int_eq(rx_store_lookup(s, "c", &info, err, sizeof err), 1);
    ck_assert_int_eq(rx_store_lookup(s, "b", &info, err, sizeof err), 1);
    rx_store_close(s);
    ct_rmrf(dir);
}
END_TEST

static Suite *integrity_suite(void)
{
    Suite *s = suite_create("store_integrity");
    TCase *tc = tcase_create("integrity");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, flipped_byte_is_dropped);
    tcase_add_test(tc, deleted_blob_is_a_miss);
    tcase_add_test(tc, recovery_at_open);
    tcase_add_test(tc, crash_between_rename_and_row);
    tcase_add_test(tc, lru_eviction);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(integrity_suite()); }
