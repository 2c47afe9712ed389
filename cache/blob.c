/*
 * blob.c — content-addressed blob files: ROOT/ab/abcdef... where the name is the full
 * hex SHA-256 of the content and ab its first two digits (256 fan-out directories).
 *
 * Writes are atomic and durable: the bytes go to a temp file ROOT/ab/.tmp-PID-TAG-TRY
 * opened with O_CREAT|O_EXCL|O_CLOEXEC (never following or reusing another file), all
 * of them are written (short writes and EINTR retried), the file is fsynced, renamed
 * onto its final name, and the directory is fsynced so the rename survives a power
 * loss. A file carrying a final name is therefore always complete; what a crash can
 * leave behind is a temp file, which the recovery scan removes. rename() over an
 * existing blob of the same id is harmless: same name, same content, and readers hold
 * either inode.
 *
 * Reads check the size first (fstat), then hash the whole content and compare it with
 * the name, unless the caller vouches for the file: it passes the stat the file had at
 * an earlier successful verification and the fstat of the open file equals it (the
 * caller decides when that is good enough: store.h, "Verified on read"). Corruption is
 * reported, never repaired here (the backend drops the row).
 *
 * Hashing is libcrypto's SHA-256 (EVP; SHA-NI/ARMv8 SHA where the CPU has them, about
 * 7x the portable rx_sha256, which remains the fallback should libcrypto fail). The
 * digest method is fetched once per process.
 *
 * Every path is built from an id the caller validated (64 lowercase hex digits), so no
 * name can leave ROOT. Costs: one write + two fsyncs per new blob; open + fstat + read
 * (+ SHA-256 unless vouched for) per read.
 */
#include "store_int.h"
#include "relax/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX ".tmp-"

/* ROOT/ab/abcdef...: the path of blob id. */
static int blob_path(const char *root, const char *id, char *out, size_t n)
{
    int k = snprintf(out, n, "%s/%.2s/%s", root, id, id);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

/* ROOT/ab: the directory of blob id. */
static int dir_path(const char *root, const char *id, char *out, size_t n)
{
    int k = snprintf(out, n, "%s/%.2s", root, id);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

/* fsyncs directory path; 0 or -1 with errno. */
static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

void rx_blob_hash(const uint8_t *p, size_t n, char out[65]) { rx_sha256_hex(p, n, out); }

/* Writes all of p[0..n) to fd; 0 or -1 with errno. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int rx_blob_write(const char *root, const char *id, const uint8_t *p, size_t n,
                  uint64_t tag, char *err, size_t errlen)
{
    char dir[4096], tmp[4200], fin[4200];
    if (dir_path(root, id, dir, sizeof dir) || blob_path(root, id, fin, sizeof fin))
        return rx_store_fail(err, errlen, "blob path too long");
    if (mkdir(dir, 0755) == 0) {
        if (fsync_dir(root) != 0)
            return rx_store_fail(err, errlen, "fsync %s: %s", root, strerror(errno));
    } else if (errno != EEXIST) {
        return rx_store_fail(err, errlen, "mkdir %s: %s", dir, strerror(errno));
    }
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "%ld-%llu-%d", dir, (long)getpid(),
                 (unsigned long long)tag, attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return rx_store_fail(err, errlen, "create %s: %s", tmp, strerror(errno));
    }
    if (fd < 0) return rx_store_fail(err, errlen, "create temp blob in %s: name clash", dir);
    const char *what = "write";
    if (write_all(fd, p, n) != 0) goto fail;
    what = "fsync";
    if (fsync(fd) != 0) goto fail;
    what = "close";
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    what = "rename";
    if (rename(tmp, fin) != 0) goto fail;
    if (fsync_dir(dir) != 0)
        return rx_store_fail(err, errlen, "fsync %s: %s", dir, strerror(errno));
    return 0;
fail:;
    int e = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    return rx_store_fail(err, errlen, "%s %s: %s", what, tmp, strerror(e));
}

static void stat_of(const struct stat *st, rx_blob_stat *b)
{
    b->dev = (uint64_t)st->st_dev;
    b->ino = (uint64_t)st->st_ino;
    b->size = (int64_t)st->st_size;
    b->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    b->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static bool same_stat(const rx_blob_stat *a, const rx_blob_stat *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

int rx_blob_read(const char *root, const char *id, int64_t size,
                 const rx_blob_stat *trusted, rx_blob_stat *seen, bool *hashed,
                 uint8_t **out, size_t *n, char *err, size_t errlen)
{
    rx_blob_stat now_stat;
    if (!seen) seen = &now_stat;
    memset(seen, 0, sizeof *seen);
    if (hashed) *hashed = false;
    char path[4200];
    *out = NULL;
    *n = 0;
    if (blob_path(root, id, path, sizeof path))
        return rx_store_fail(err, errlen, "blob path too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 1;
        return rx_store_fail(err, errlen, "open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return rx_store_fail(err, errlen, "fstat %s: %s", path, strerror(e));
    }
    stat_of(&st, seen);
    if (!S_ISREG(st.st_mode) || (int64_t)st.st_size != size) {
        close(fd);
        return 2;
    }
    size_t len = (size_t)size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        close(fd);
        return rx_store_fail(err, errlen, "out of memory reading %zu bytes", len);
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            if (e == EIO) return 2; /* unreadable media: as good as corrupt */
            return rx_store_fail(err, errlen, "read %s: %s", path, strerror(e));
        }
        if (r == 0) break; /* shrank under us: the hash check below fails */
        got += (size_t)r;
    }
    close(fd);
    if (got != len) {
        free(buf);
        return 2;
    }
    if (!trusted || !same_stat(trusted, seen)) {
        char h[65];
        rx_blob_hash(buf, got, h);
        if (hashed) *hashed = true;
        if (memcmp(h, id, 64) != 0) {
            free(buf);
            return 2;
        }
    }
    *out = buf;
    *n = len;
    return 0;
}

int rx_blob_present(const char *root, const char *id, int64_t size)
{
    char path[4200];
    struct stat st;
    if (blob_path(root, id, path, sizeof path) || stat(path, &st) != 0) return 0;
    return S_ISREG(st.st_mode) && (size < 0 || (int64_t)st.st_size == size);
}

int rx_blob_unlink(const char *root, const char *id)
{
    char path[4200];
    if (blob_path(root, id, path, sizeof path)) return -1;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

static bool is_hex2(const char *s)
{
    for (int i = 0; i < 2; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return s[2] == 0;
}

/* Scans one fan-out directory ROOT/ab. */
static int scan_dir(const char *root, const char *sub, bool (*keep)(const char *, void *),
                    void *ud, int *temps, int *orphans, char *err, size_t errlen)
{
    char dir[4096], path[4400];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        return rx_store_fail(err, errlen, "opendir %s: %s", dir, strerror(errno));
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX))) {
            if (unlink(path) == 0) (*temps)++;
        } else if (rx_store_valid_id(name) && !strncmp(name, sub, 2)) {
            if (!keep(name, ud) && unlink(path) == 0) (*orphans)++;
        }
    }
    closedir(d);
    return 0;
}

int rx_blob_scan(const char *root, bool (*keep)(const char *id, void *ud), void *ud,
                 int *temps, int *orphans, char *err, size_t errlen)
{
    *temps = *orphans = 0;
    DIR *d = opendir(root);
    if (!d) return rx_store_fail(err, errlen, "opendir %s: %s", root, strerror(errno));
    /* The fan-out names first (at most 256), then each directory on its own. */
    char subs[256][3];
    int nsub = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && nsub < 256)
        if (is_hex2(e->d_name)) memcpy(subs[nsub++], e->d_name, 3);
    closedir(d);
    for (int i = 0; i < nsub; i++)
        if (scan_dir(root, subs[i], keep, ud, temps, orphans, err, errlen) != 0) return -1;
    return 0;
}
