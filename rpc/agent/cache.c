/*
 * cache.c — relax-agent's artifact cache: content addressed, verified on every use.
 *
 * An artifact id is the hex SHA-256 of its bytes, so the cache needs no index: the file
 * DIR/<id> is the artifact, and whether it is the right one is checked, not trusted.
 * rxag_cache_get, step by step:
 *   Step 1  DIR/<id> exists: read it whole, hash it, parse it (rx_rxa_parse: header,
 *           CRC, tables). Both good: a hit (its mtime is touched for the LRU trim). Not
 *           good (bit rot, a truncated file, someone's edit): the file is removed, a
 *           "cache_corrupt" line is logged, and we go on as for a miss.
 *   Step 2  fetch into a temp file DIR/.tmp-<id>-XXXXXX (mkstemp, same directory, so
 *           the rename is atomic), read it back, hash and parse it. A mismatch is
 *           "corrupt_artifact" (the network, a proxy or the server's store damaged the
 *           bytes; it is fetched once more before giving up); a fetch failure is
 *           "download_error".
 *   Step 3  fsync the temp file, rename it to DIR/<id>, and trim the cache.
 * A crash leaves at worst a temp file, removed by the next rxag_cache_open. Concurrent
 * agents may share a directory: each writes its own temp file and the renames of equal
 * bytes are idempotent.
 *
 * The trim keeps the sum of the artifacts' sizes under max_bytes by removing the least
 * recently used files (oldest mtime) first, never the one just stored. Costs: a hit
 * reads and hashes the file once (SHA-256 with SHA-NI: ~2 GB/s); the trim lists the
 * directory (one stat per artifact).
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p. */
static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        snprintf(err, errlen, "cache directory: bad name");
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char ch = path[i];
        path[i] = 0;
        if (mkdir(path, 0755) && errno != EEXIST) {
            snprintf(err, errlen, "cannot create cache directory %s: %s", path, strerror(errno));
            return -1;
        }
        path[i] = ch;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cache directory %s is not a directory", dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK)) {
        snprintf(err, errlen, "cache directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int rxag_cache_open(rxag_cache *c, const char *dir, int64_t max_bytes, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (strlen(dir) >= sizeof c->dir - 128) {
        snprintf(err, errlen, "cache directory name too long");
        return -1;
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->max_bytes = max_bytes;
    if (make_dirs(dir, err, errlen)) return -1;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot read cache directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, ".tmp-", 5)) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    return 0;
}

/* Reads the file at path whole into a 64-byte aligned buffer. -1 with err. */
static int read_whole(const char *path, uint8_t **out, size_t *n, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > RXAG_ARTIFACT_CAP) {
        close(fd);
        snprintf(err, errlen, "%s: not a regular file of at most %lld bytes", path,
                 (long long)RXAG_ARTIFACT_CAP);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = aligned_alloc(64, (size + 64) / 64 * 64);
    if (!buf) {
        close(fd);
        snprintf(err, errlen, "out of memory reading %zu bytes", size);
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *n = got;
    return 0;
}

/* Checks bytes against id: digest first, then the artifact format. 0, or -1 with err. */
static int verify(const char *id, const uint8_t *bytes, size_t n, char *err, size_t errlen)
{
    char hex[65];
    rx_sha256_hex(bytes, n, hex);
    if (strcmp(hex, id)) {
        snprintf(err, errlen, "artifact %s failed verification: the %zu bytes received hash to %s",
                 id, n, hex);
        return -1;
    }
    rx_rxa *a = NULL;
    char msg[RXAG_ERR];
    char what[80];
    snprintf(what, sizeof what, "artifact %.12s", id);
    if (rx_rxa_parse(bytes, n, what, &a, msg, sizeof msg)) {
        snprintf(err, errlen, "%s", msg);
        return -1;
    }
    rx_rxa_free(a);
    return 0;
}

/* Step 1: the cached file, verified. 1 hit, 0 miss (a damaged file is removed). */
static int lookup(rxag_cache *c, const char *id, const char *path, rxag_blob *out)
{
    char err[RXAG_ERR];
    uint8_t *bytes;
    size_t n;
    if (access(path, F_OK)) return 0;
    if (read_whole(path, &bytes, &n, err, sizeof err) == 0) {
        if (verify(id, bytes, n, err, sizeof err) == 0) {
            utimensat(AT_FDCWD, path, NULL, 0); /* most recently used */
            out->bytes = bytes;
            out->n = n;
            out->hit = 1;
            return 1;
        }
        free(bytes);
    }
    unlink(path);
    rxag_log(RXAG_WARN, "cache_corrupt",
             json_pack("{s:s, s:s, s:s}", "artifact", id, "path", path, "message", err));
    return 0;
}

/* Steps 2-3: one fetch into a temp file, verified and renamed. 0, or -1 with code. */
static int fetch_once(rxag_cache *c, const char *id, const char *path, rxag_fetch_fn fetch,
                      void *ud, rxag_blob *out, char *code, char *err, size_t errlen)
{
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/.tmp-%.16s-XXXXXX", c->dir, id);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(code, 32, "download_error");
        snprintf(err, errlen, "cannot create a file in %s: %s", c->dir, strerror(errno));
        return -1;
    }
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = -1;
    if (fetch(ud, fd, err, errlen)) {
        snprintf(code, 32, "download_error");
        goto done;
    }
    if (fsync(fd)) {
        snprintf(code, 32, "download_error");
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto done;
    }
    if (read_whole(tmp, &bytes, &n, err, errlen)) {
        snprintf(code, 32, "download_error");
        goto done;
    }
    if (verify(id, bytes, n, err, errlen)) {
        snprintf(code, 32, "corrupt_artifact");
        goto done;
    }
    if (fchmod(fd, 0644) || rename(tmp, path)) {
        snprintf(code, 32, "download_error");
        snprintf(err, errlen, "cannot store %s: %s", path, strerror(errno));
        goto done;
    }
    out->bytes = bytes;
    out->n = n;
    out->hit = 0;
    bytes = NULL;
    rc = 0;
done:
    close(fd);
    if (rc) unlink(tmp);
    free(bytes);
    return rc;
}

/* One cached artifact, for the trim. */
typedef struct entry {
    char name[72]; /* the id */
    int64_t size;  /* bytes */
    int64_t mtime; /* last use, ns */
} entry;

static int by_mtime(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Lists the artifacts (names that are ids). *out malloc'ed; -1 when unreadable. */
static int list_entries(const rxag_cache *c, entry **out, size_t *count)
{
    DIR *d = opendir(c->dir);
    if (!d) return -1;
    entry *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!rxag_valid_artifact_id(e->d_name)) continue;
        char p[4400];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", c->dir, e->d_name);
        if (stat(p, &st) || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            entry *nv = realloc(v, nc * sizeof *v);
            if (!nv) break;
            v = nv;
            cap = nc;
        }
        memcpy(v[n].name, e->d_name, 64); /* an id: exactly 64 characters */
        v[n].name[64] = 0;
        v[n].size = (int64_t)st.st_size;
        v[n].mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        n++;
    }
    closedir(d);
    *out = v;
    *count = n;
    return 0;
}

int64_t rxag_cache_bytes(const rxag_cache *c)
{
    entry *v;
    size_t n;
    if (list_entries(c, &v, &n)) return -1;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += v[i].size;
    free(v);
    return total;
}

/* Removes least recently used artifacts until the total fits max_bytes (keeps `keep`). */
static void trim(rxag_cache *c, const char *keep)
{
    entry *v;
    size_t n;
    if (c->max_bytes <= 0 || list_entries(c, &v, &n)) return;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += v[i].size;
    qsort(v, n, sizeof *v, by_mtime);
    for (size_t i = 0; i < n && total > c->max_bytes; i++) {
        if (!strcmp(v[i].name, keep)) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", c->dir, v[i].name);
        if (unlink(p) == 0) {
            total -= v[i].size;
            rxag_log(
                RXAG_INFO, "cache_evict",
                json_pack("{s:s, s:I}", "artifact", v[i].name, "bytes", (json_int_t)v[i].size));
        }
    }
    free(v);
}

int rxag_cache_get(rxag_cache *c, const char *id, rxag_fetch_fn fetch, void *ud, rxag_blob *out,
                   char *code, char *err, size_t errlen)
{
    char path[4400];
    memset(out, 0, sizeof *out);
    code[0] = 0;
    if (!rxag_valid_artifact_id(id)) {
        snprintf(code, 32, "download_error");
        snprintf(err, errlen, "'%.100s' is not an artifact id (64 lowercase hex digits)", id);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", c->dir, id);
    /* Step 1 */
    if (lookup(c, id, path, out)) return 0;
    /* Steps 2-3, a second time only when the bytes did not verify. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (fetch_once(c, id, path, fetch, ud, out, code, err, errlen) == 0) {
            trim(c, id);
            return 0;
        }
        if (strcmp(code, "corrupt_artifact")) break;
        rxag_log(
            RXAG_WARN, "artifact_corrupt",
            json_pack("{s:s, s:i, s:s}", "artifact", id, "attempt", attempt + 1, "message", err));
    }
    return -1;
}
