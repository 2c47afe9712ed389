/*
 * util.c — small helpers of relax-agent: clocks, base64 (job inputs travel as base64
 * .npy images), SHA-256 through libcrypto (artifact ids are SHA-256 digests), and the
 * jittered exponential backoff used whenever the server is away.
 *
 * The backoff's randomness only spreads reconnects; it seeds once from the clock and the
 * pid (rand_r on a private state, under a mutex: two threads may back off at once).
 */
#include "agent.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double rxag_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t rxag_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Value of a base64 digit, -1 for anything else. */
static int b64_digit(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

int rxag_b64_decode(const char *s, size_t len, uint8_t **out, size_t *n)
{
    while (len && s[len - 1] == '=') len--;
    if (len % 4 == 1) return -1;
    uint8_t *buf = malloc(len / 4 * 3 + 3);
    if (!buf) return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int d = b64_digit((unsigned char)s[i]);
        if (d < 0) {
            free(buf);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *out = buf;
    *n = o;
    return 0;
}

int rxag_sha256_hex(const void *p, size_t n, char hex[65])
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (EVP_Digest(p, n, dig, &dlen, EVP_sha256(), NULL) != 1 || dlen != 32) return -1;
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = "0123456789abcdef"[dig[i] >> 4];
        hex[2 * i + 1] = "0123456789abcdef"[dig[i] & 15];
    }
    hex[64] = 0;
    return 0;
}

int rxag_valid_artifact_id(const char *s)
{
    size_t i;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 64;
}

static pthread_mutex_t rnd_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned rnd_state; /* rand_r state; 0: not seeded yet */

double rxag_backoff(int k, double base, double cap)
{
    double d = base;
    for (int i = 0; i < k && d < cap; i++) d *= 2;
    if (d > cap) d = cap;
    pthread_mutex_lock(&rnd_mu);
    if (!rnd_state) rnd_state = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16) ^ 0x9e3779b9u;
    int r = rand_r(&rnd_state);
    pthread_mutex_unlock(&rnd_mu);
    return d * (0.75 + 0.5 * ((double)r / ((double)RAND_MAX + 1.0)));
}
