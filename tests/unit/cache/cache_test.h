/*
 * cache_test.h — helpers shared by the store tests: scratch data directories, blob
 * paths, hashing and file counting. Header-only (static functions) so each test file
 * stays one executable.
 */
#ifndef CACHE_TEST_H
#define CACHE_TEST_H

#include "relax/store.h"
#include "relax/base.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh empty directory under the build tree (into buf). */
static inline const char *ct_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "%s/cache-test-XXXXXX", RX_BINARY_DIR);
    ck_assert_ptr_nonnull(mkdtemp(buf));
    return buf;
}

/* rm -r path (no symlinks are followed: lstat). */
static inline void ct_rmrf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char sub[4400];
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            int k = snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            if (k > 0 && (size_t)k < sizeof sub) ct_rmrf(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline rx_store *ct_open(const char *dir, int64_t max_bytes)
{
    char err[256] = "";
    rx_store_opts o = {.dir = dir, .max_bytes = max_bytes};
    rx_store *s = rx_store_open(&o, err, sizeof err);
    ck_assert_msg(s != NULL, "open: %s", err);
    return s;
}

static inline rx_store *ct_open_tuned(const char *dir, int64_t max_bytes,
                                      int64_t verify_interval_ms, int64_t access_flush_ms)
{
    char err[256] = "";
    rx_store_opts o = {.dir = dir, .max_bytes = max_bytes};
    rx_store_tuning t = {.verify_interval_ms = verify_interval_ms,
                         .access_flush_ms = access_flush_ms};
    rx_store *s = rx_store_open_tuned(&o, &t, err, sizeof err);
    ck_assert_msg(s != NULL, "open: %s", err);
    return s;
}

static inline void ct_hash(const void *p, size_t n, char out[65]) { rx_sha256_hex(p, n, out); }

static inline void ct_blob_path(const char *dir, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/blobs/%.2s/%s", dir, id, id);
}

static inline int ct_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes p[0..n) to path (creating it). */
static inline void ct_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* The number of files under dir/blobs (blobs and temp files alike). */
static inline int ct_count_blobs(const char *dir)
{
    char root[4096], sub[4400];
    snprintf(root, sizeof root, "%s/blobs", dir);
    int count = 0;
    DIR *d = opendir(root);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        int k = snprintf(sub, sizeof sub, "%s/%s", root, e->d_name);
        DIR *s = k > 0 && (size_t)k < sizeof sub ? opendir(sub) : NULL;
        struct dirent *f;
        while (s && (f = readdir(s)) != NULL)
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) count++;
        if (s) closedir(s);
    }
    if (d) closedir(d);
    return count;
}

/* Puts text under key (target "cpu", no metadata); returns the id into id. */
static inline void ct_put(rx_store *s, const char *key, const char *text, char id[65])
{
    char err[256] = "";
    rx_artifact_info info;
    int r = rx_store_put(s, key, "cpu", (const uint8_t *)text, strlen(text), NULL, &info,
                         err, sizeof err);
    ck_assert_msg(r == 0, "put %s: %s", key, err);
    if (id) memcpy(id, info.id, 65);
}

#endif
