/*
 * download.c — an artifact from relaxd to a file, all or nothing.
 *
 * An artifact id is the hex SHA-256 of the .rxa bytes (cache/include/relax/store.h), so
 * the client can check what it received without trusting the server, a proxy or the
 * network. rxc_download streams GET /v1/artifacts/<id> into a temp file created beside
 * OUT (same directory, hence same file system, so the final rename is atomic), hashing
 * every chunk as it is written; at the end it fsyncs, compares the digest with the id and
 * only then renames over OUT. On any failure — transport error, HTTP error, size over
 * RXC_ARTIFACT_CAP, short write, digest mismatch — the temp file is removed and OUT is
 * left as it was. Memory stays bounded: chunks go straight to the file.
 *
 * SHA-256 is the base library's (base.h, libcrypto underneath: SHA-NI where the CPU has
 * it); the client links nothing from the compiler.
 *
 * Not handled: a signal between create and rename leaves OUT.tmp.XXXXXX behind.
 */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The sink state: the temp file and the running digest. */
typedef struct dl {
    rxc_conn *c;        /* for clearing the progress line before errors */
    int fd;             /* temp file */
    const char *tmp;    /* its name, for messages */
    rx_sha256 md;       /* SHA-256 so far */
    int64_t n;          /* bytes written */
} dl;

int rxc_valid_id(const char *s)
{
    size_t i;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 64;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int sink(void *ud, const void *data, size_t n)
{
    dl *d = ud;
    if (write_all(d->fd, data, n)) {
        rxc_progress_clear(&d->c->progress);
        fprintf(stderr, "error: %s: %s\n", d->tmp, strerror(errno));
        return 1;
    }
    rx_sha256_update(&d->md, data, n);
    d->n += (int64_t)n;
    return 0;
}

int rxc_download(rxc_conn *c, const char *id, const char *out, int64_t *size)
{
    char path[128], tmp[4096];
    int ret = 1;
    snprintf(path, sizeof path, "/v1/artifacts/%s", id);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", out) >= sizeof tmp) {
        fprintf(stderr, "error: %s: path too long\n", out);
        return 1;
    }
    dl d = {.c = c, .tmp = tmp, .fd = mkstemp(tmp)};
    if (d.fd < 0) {
        fprintf(stderr, "error: cannot create a file beside %s: %s\n", out, strerror(errno));
        return 1;
    }
    rx_sha256_init(&d.md);
    rxc_resp r;
    if (rxc_request(c, "GET", path, NULL, sink, &d, RXC_ARTIFACT_CAP, &r)) goto done;
    rxc_progress_clear(&c->progress); /* everything below may print */
    if (r.status != 200) {
        rxc_http_error(&r);
        rxc_resp_free(&r);
        goto done;
    }
    rxc_resp_free(&r);
    uint8_t dig[32];
    char hex[65];
    rx_sha256_final(&d.md, dig);
    rx_hex(dig, 32, hex);
    if (strcmp(hex, id)) {
        fprintf(stderr,
                "error: artifact %s failed verification: the %lld bytes received hash to %s; "
                "%s not written\n",
                id, (long long)d.n, hex, out);
        goto done;
    }
    /* The mode mkstemp gives (0600) is too strict for an artifact others may run. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(d.fd, 0666 & ~um) || fsync(d.fd)) {
        fprintf(stderr, "error: %s: %s\n", tmp, strerror(errno));
        goto done;
    }
    int fd = d.fd;
    d.fd = -1;
    if (close(fd)) {
        fprintf(stderr, "error: %s: %s\n", tmp, strerror(errno));
        goto done;
    }
    if (rename(tmp, out)) {
        fprintf(stderr, "error: cannot write %s: %s\n", out, strerror(errno));
        goto done;
    }
    *size = d.n;
    ret = 0;
done:
    if (d.fd >= 0) close(d.fd);
    if (ret) unlink(tmp);
    rx_sha256_abort(&d.md);
    return ret;
}
