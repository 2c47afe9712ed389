/*
 * auth.c — bearer tokens and roles (server_int.h).
 *
 * Tokens come from the configuration file as {token, role} pairs. Only their SHA-256
 * digests are kept. A presented token is hashed and compared with every configured
 * digest by an OR of XORs over all 32 bytes of all of them: the time taken depends on
 * neither where the first differing byte is, nor which token matched, nor the
 * presented token's length (beyond hashing it). The role of the matching entry is
 * selected without a branch on secret data.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relax/support.h"
#include "server_int.h"

void rx_auth_init(rx_auth *a, const rx_config *c)
{
    memset(a, 0, sizeof *a);
    if (c->ntokens <= 0) return;
    a->digests = calloc((size_t)c->ntokens, sizeof *a->digests);
    a->roles = calloc((size_t)c->ntokens, sizeof *a->roles);
    RX_ASSERT(a->digests && a->roles);
    for (int i = 0; i < c->ntokens; i++) {
        rx_sha256 h;
        rx_sha256_init(&h);
        rx_sha256_update(&h, c->tokens[i].token, strlen(c->tokens[i].token));
        rx_sha256_final(&h, a->digests[i]);
        a->roles[i] = c->tokens[i].role;
    }
    a->n = c->ntokens;
}

void rx_auth_free(rx_auth *a)
{
    free(a->digests);
    free(a->roles);
    memset(a, 0, sizeof *a);
}

rx_role rx_auth_check(const rx_auth *a, const char *authorization)
{
    if (!authorization || a->n == 0) return RX_ROLE_NONE;
    if (strncasecmp(authorization, "Bearer ", 7)) return RX_ROLE_NONE;
    const char *tok = authorization + 7;
    while (*tok == ' ') tok++;
    size_t n = strlen(tok);
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) n--;
    if (n == 0 || n > RX_CONFIG_TOKEN_MAX) return RX_ROLE_NONE;
    uint8_t d[32];
    rx_sha256 h;
    rx_sha256_init(&h);
    rx_sha256_update(&h, tok, n);
    rx_sha256_final(&h, d);
    unsigned role = 0;
    for (int i = 0; i < a->n; i++) {
        unsigned diff = 0;
        for (int j = 0; j < 32; j++) diff |= (unsigned)(a->digests[i][j] ^ d[j]);
        /* mask is all ones when diff == 0, else 0, without branching on diff */
        unsigned mask = (unsigned)(((diff | (0u - diff)) >> 31) & 1u) - 1u;
        role |= mask & (unsigned)a->roles[i];
    }
    return (rx_role)role;
}
