/*
 * sha256.c — SHA-256 for structural cache keys, artifact ids and checksums, through
 * OpenSSL's libcrypto (EVP): one implementation for every component, and the system's
 * (SHA-NI where the CPU has it: about 7x the portable C this file used to hold).
 */
#include "relax/base.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

/* The algorithm, fetched once (an implicit fetch per digest costs a lock and a lookup
 * in OpenSSL 3); never freed: process lifetime. */
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_md;

static void fetch_sha256(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

void rx_sha256_init(rx_sha256 *s)
{
    pthread_once(&sha256_once, fetch_sha256);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || !sha256_md || EVP_DigestInit_ex(md, sha256_md, NULL) != 1)
        rx_fatal(__FILE__, __LINE__, "SHA-256 is unavailable (libcrypto)");
    s->md = md;
}

void rx_sha256_update(rx_sha256 *s, const void *p, size_t n)
{
    if (n && EVP_DigestUpdate(s->md, p, n) != 1)
        rx_fatal(__FILE__, __LINE__, "SHA-256 update failed (libcrypto)");
}

void rx_sha256_final(rx_sha256 *s, uint8_t out[32])
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_DigestFinal_ex(s->md, dig, &len) != 1 || len != 32)
        rx_fatal(__FILE__, __LINE__, "SHA-256 final failed (libcrypto)");
    memcpy(out, dig, 32);
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
}

void rx_sha256_abort(rx_sha256 *s)
{
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
}

void rx_sha256_hex(const void *p, size_t n, char hex[65])
{
    rx_sha256 s;
    uint8_t dig[32];
    rx_sha256_init(&s);
    rx_sha256_update(&s, p, n);
    rx_sha256_final(&s, dig);
    rx_hex(dig, 32, hex);
}

void rx_hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}
