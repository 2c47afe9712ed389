/*
 * base64.c — RFC 4648 base64 with the standard alphabet, padding required (or, for the
 * agent's job inputs, optional), whitespace rejected: the payload encoding of
 * relax-json constants, job inputs and uploads.
 */
#include "relax/base.h"

#include <stdlib.h>
#include <string.h>

static int val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

bool rx_base64_decode(const char *s, size_t n, uint8_t **out, size_t *outn)
{
    *out = NULL;
    *outn = 0;
    if (n % 4) return false;
    size_t pad = 0;
    if (n && s[n - 1] == '=') pad++;
    if (n > 1 && s[n - 2] == '=') pad++;
    size_t len = n / 4 * 3 - pad;
    uint8_t *buf = rx_xmalloc(len ? len : 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)s[i + j];
            bool tail = i + 4 == n && j >= 4 - (int)pad;
            v[j] = tail ? (c == '=' ? 0 : -1) : val(c);
            if (v[j] < 0) {
                free(buf);
                return false;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t b[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int j = 0; j < 3 && k < len; j++) buf[k++] = b[j];
    }
    *out = buf;
    *outn = len;
    return true;
}

bool rx_base64_decode_unpadded(const char *s, size_t n, uint8_t **out, size_t *outn)
{
    if (n % 4 == 0) return rx_base64_decode(s, n, out, outn);
    *out = NULL;
    *outn = 0;
    if (n % 4 == 1) return false;
    char *p = rx_xmalloc(n + 3);
    memcpy(p, s, n);
    size_t m = n;
    while (m % 4) p[m++] = '=';
    bool ok = rx_base64_decode(p, m, out, outn);
    free(p);
    return ok;
}

void rx_base64_encode(const uint8_t *p, size_t n, rx_sb *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16;
        if (i + 1 < n) w |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) w |= p[i + 2];
        char q[4] = {al[w >> 18 & 63], al[w >> 12 & 63], i + 1 < n ? al[w >> 6 & 63] : '=',
                     i + 2 < n ? al[w & 63] : '='};
        rx_sb_putn(out, q, 4);
    }
}
