/*
 * test_agent_cache.c — relax-agent's verified artifact cache (rpc/agent/cache.c) with a
 * fake fetcher instead of HTTP: a miss fetches and stores under the id; a hit does not
 * fetch; a damaged cached file is detected, removed and fetched again; bytes that do not
 * hash to the id are refused as corrupt_artifact after two fetches and never stored; a
 * fetch failure is download_error; bytes with the right hash but no valid artifact are
 * corrupt_artifact; the cap trims least recently used artifacts; stale temp files go.
 */
#include "../rx_check.h"
#include "agent_test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <utime.h>

/* The fake fetcher: writes `bytes` (optionally with one byte flipped), counts calls. */
typedef struct fake {
    const uint8_t *bytes; /* what the "server" sends */
    size_t n;
    int flip;  /* flip byte n/2 in what is written */
    int fail;  /* fail instead of writing */
    int calls; /* fetches made */
} fake;

static int fake_fetch(void *ud, int fd, char *err, size_t errlen)
{
    fake *f = ud;
    f->calls++;
    if (f->fail) {
        snprintf(err, errlen, "GET /v1/artifacts/x: connection refused");
        return -1;
    }
    uint8_t *copy = malloc(f->n);
    memcpy(copy, f->bytes, f->n);
    if (f->flip) copy[f->n / 2] ^= 0x40;
    ck_assert_int_eq(write(fd, copy, f->n), (ssize_t)f->n);
    free(copy);
    return 0;
}

static void id_of(const uint8_t *b, size_t n, char id[65])
{
    rx_sha256_hex(b, n, id);
}

START_TEST(miss_then_hit)
{
    char dir[64], id[65], code[32], err[RXAG_ERR], path[256];
    at_tmpdir(dir, sizeof dir);
    size_t n;
    uint8_t *art = at_ident_artifact(&n, NULL);
    id_of(art, n, id);
    rxag_cache c;
    char sub[128];
    snprintf(sub, sizeof sub, "%s/a/b", dir); /* created with its parents */
    ck_assert_int_eq(rxag_cache_open(&c, sub, 0, err, sizeof err), 0);
    fake f = {art, n, 0, 0, 0};
    rxag_blob b;
    ck_assert_msg(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(f.calls, 1);
    ck_assert_int_eq(b.hit, 0);
    ck_assert_uint_eq(b.n, n);
    ck_assert_int_eq(memcmp(b.bytes, art, n), 0);
    ck_assert_uint_eq((uintptr_t)b.bytes % 64, 0);
    free(b.bytes);
    snprintf(path, sizeof path, "%s/%s", sub, id);
    ck_assert_int_eq(access(path, R_OK), 0);
    ck_assert_int_eq(at_count(sub), 1); /* no temp file left */
    ck_assert_int_eq(rxag_cache_bytes(&c), (int64_t)n);
    /* second use: a verified hit, no fetch */
    ck_assert_int_eq(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err), 0);
    ck_assert_int_eq(f.calls, 1);
    ck_assert_int_eq(b.hit, 1);
    ck_assert_int_eq(memcmp(b.bytes, art, n), 0);
    free(b.bytes);
    free(art);
    at_rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

START_TEST(damaged_cached_file_is_refetched)
{
    char dir[64], id[65], code[32], err[RXAG_ERR], path[256];
    at_tmpdir(dir, sizeof dir);
    size_t n;
    uint8_t *art = at_ident_artifact(&n, NULL);
    id_of(art, n, id);
    rxag_cache c;
    ck_assert_int_eq(rxag_cache_open(&c, dir, 0, err, sizeof err), 0);
    /* a file under the id whose bytes are damaged (bit rot) */
    snprintf(path, sizeof path, "%s/%s", dir, id);
    FILE *fp = fopen(path, "wb");
    art[n / 3] ^= 1;
    fwrite(art, 1, n, fp);
    art[n / 3] ^= 1;
    fclose(fp);
    fake f = {art, n, 0, 0, 0};
    rxag_blob b;
    ck_assert_msg(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(f.calls, 1);
    ck_assert_int_eq(b.hit, 0);
    ck_assert_int_eq(memcmp(b.bytes, art, n), 0);
    free(b.bytes);
    /* a truncated cached file too */
    ck_assert_int_eq(truncate(path, (off_t)(n / 2)), 0);
    ck_assert_int_eq(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err), 0);
    ck_assert_int_eq(f.calls, 2);
    free(b.bytes);
    free(art);
    at_rmdir(dir);
}
END_TEST

START_TEST(corrupt_download_refused)
{
    char dir[64], id[65], code[32], err[RXAG_ERR];
    at_tmpdir(dir, sizeof dir);
    size_t n;
    uint8_t *art = at_ident_artifact(&n, NULL);
    id_of(art, n, id);
    rxag_cache c;
    ck_assert_int_eq(rxag_cache_open(&c, dir, 0, err, sizeof err), 0);
    fake f = {art, n, 1, 0, 0};
    rxag_blob b;
    ck_assert_int_eq(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "corrupt_artifact");
    ck_assert_msg(strstr(err, "failed verification") && strstr(err, id), "%s", err);
    ck_assert_int_eq(f.calls, 2); /* tried once more */
    ck_assert_ptr_null(b.bytes);
    ck_assert_int_eq(at_count(dir), 0); /* nothing stored, no temp file */
    /* a transient corruption: the second fetch is good */
    f.calls = 0;
    f.flip = 0;
    ck_assert_int_eq(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err), 0);
    free(b.bytes);
    free(art);
    at_rmdir(dir);
}
END_TEST

START_TEST(download_error_and_bad_artifact)
{
    char dir[64], id[65], code[32], err[RXAG_ERR];
    at_tmpdir(dir, sizeof dir);
    size_t n;
    uint8_t *art = at_ident_artifact(&n, NULL);
    id_of(art, n, id);
    rxag_cache c;
    ck_assert_int_eq(rxag_cache_open(&c, dir, 0, err, sizeof err), 0);
    fake f = {art, n, 0, 1, 0};
    rxag_blob b;
    ck_assert_int_eq(rxag_cache_get(&c, id, fake_fetch, &f, &b, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "download_error");
    ck_assert_msg(strstr(err, "connection refused"), "%s", err);
    ck_assert_int_eq(f.calls, 1); /* a transport failure is not retried here */
    ck_assert_int_eq(at_count(dir), 0);
    /* bytes that hash to their id but are no artifact */
    static const uint8_t junk[] = "not an artifact at all, just text";
    char jid[65];
    id_of(junk, sizeof junk, jid);
    fake g = {junk, sizeof junk, 0, 0, 0};
    ck_assert_int_eq(rxag_cache_get(&c, jid, fake_fetch, &g, &b, code, err, sizeof err), -1);
    ck_assert_str_eq(code, "corrupt_artifact");
    ck_assert_msg(strstr(err, "artifact ") != NULL, "%s", err);
    ck_assert_int_eq(at_count(dir), 0);
    /* not an id */
    ck_assert_int_eq(rxag_cache_get(&c, "../etc/passwd", fake_fetch, &g, &b, code, err, sizeof err),
                     -1);
    ck_assert_str_eq(code, "download_error");
    ck_assert_msg(strstr(err, "not an artifact id"), "%s", err);
    free(art);
    at_rmdir(dir);
}
END_TEST

START_TEST(trim_least_recently_used)
{
    char dir[64], ids[3][65], code[32], err[RXAG_ERR], path[256];
    at_tmpdir(dir, sizeof dir);
    uint8_t *arts[3];
    size_t ns[3];
    for (int i = 0; i < 3; i++) {
        char meta[32];
        snprintf(meta, sizeof meta, "{\"i\": %d}", i);
        arts[i] = at_ident_artifact(&ns[i], meta);
        id_of(arts[i], ns[i], ids[i]);
    }
    rxag_cache c;
    /* room for two artifacts */
    ck_assert_int_eq(
        rxag_cache_open(&c, dir, (int64_t)(ns[0] + ns[1] + ns[2] / 2), err, sizeof err), 0);
    rxag_blob b;
    for (int i = 0; i < 2; i++) {
        fake f = {arts[i], ns[i], 0, 0, 0};
        ck_assert_int_eq(rxag_cache_get(&c, ids[i], fake_fetch, &f, &b, code, err, sizeof err), 0);
        free(b.bytes);
        /* make artifact 0 the older one for sure */
        snprintf(path, sizeof path, "%s/%s", dir, ids[i]);
        struct utimbuf t = {(time_t)(1000000 + i * 1000), (time_t)(1000000 + i * 1000)};
        utime(path, &t);
    }
    fake f = {arts[2], ns[2], 0, 0, 0};
    ck_assert_int_eq(rxag_cache_get(&c, ids[2], fake_fetch, &f, &b, code, err, sizeof err), 0);
    free(b.bytes);
    snprintf(path, sizeof path, "%s/%s", dir, ids[0]);
    ck_assert_int_ne(access(path, F_OK), 0); /* the least recently used went */
    snprintf(path, sizeof path, "%s/%s", dir, ids[1]);
    ck_assert_int_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/%s", dir, ids[2]);
    ck_assert_int_eq(access(path, F_OK), 0);
    for (int i = 0; i < 3; i++) free(arts[i]);
    at_rmdir(dir);
}
END_TEST

START_TEST(open_removes_temp_files)
{
    char dir[64], err[RXAG_ERR], path[256];
    at_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/.tmp-0123456789abcdef-XXXXXX", dir);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    rxag_cache c;
    ck_assert_int_eq(rxag_cache_open(&c, dir, 0, err, sizeof err), 0);
    ck_assert_int_eq(at_count(dir), 0);
    /* a path that is a file, not a directory */
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *fp = fopen(path, "w");
    fclose(fp);
    ck_assert_int_eq(rxag_cache_open(&c, path, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, path) != NULL, "%s", err);
    at_rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("agent_cache");
    TCase *t = tcase_create("cache");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, miss_then_hit);
    tcase_add_test(t, damaged_cached_file_is_refetched);
    tcase_add_test(t, corrupt_download_refused);
    tcase_add_test(t, download_error_and_bad_artifact);
    tcase_add_test(t, trim_least_recently_used);
    tcase_add_test(t, open_removes_temp_files);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
