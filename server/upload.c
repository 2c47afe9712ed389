/*
 * upload.c — PUT /v1/artifacts/<sha256>: a client's own artifact, stored so agents can
 * benchmark it (`relax bench FILE.rxa` when the server lacks it), and the artifact
 * metadata both this and the compile service store (server_int.h).
 *
 * What is checked, in order, before anything is stored:
 *   1. the id is 64 lowercase hex digits (else 404, as every malformed id);
 *   2. the body's SHA-256 is the id (400 `hash_mismatch`, naming both): the content
 *      address stays a content address;
 *   3. an artifact already held under that id is not stored again (200, "stored":
 *      false): its bytes are the same by construction;
 *   4. the runtime's own checks, those relax-run and the agents apply at load: the .rxa
 *      parser (rx_rxa_parse: header, section table, CRC, every table and reference) and
 *      the bytecode verifier (rx_vm_verify); a METADATA section, when present, must be a
 *      JSON object (400 `invalid_artifact` with the parser's one-line message).
 * Then it is stored (201, "stored": true) with the metadata's target ("unknown" when
 * the metadata does not name one of at most 31 characters [a-z0-9_-]).
 *
 * Uploads never enter the compile cache: the store row's key is the artifact's own id,
 * a value no module's cache key takes (a key is a SHA-256 over a salted structural
 * hash), so a compile never answers with an uploaded artifact and an upload cannot
 * poison anyone's compiles. Uploads are evicted like the rest under cache_max_bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/rxa.h"
#include "relax/support.h"
#include "relax/vm.h"
#include "server_int.h"

char *rx_meta_text(const uint8_t *bytes, size_t n)
{
    rx_rxa *a = NULL;
    char err[128];
    if (rx_rxa_parse(bytes, n, "artifact", &a, err, sizeof err)) return NULL;
    char *meta = rx_meta_text_of(a);
    rx_rxa_free(a);
    return meta;
}

char *rx_meta_text_of(const rx_rxa *a)
{
    const rx_rxa_section *s = rx_rxa_section_get(a, RX_RXA_METADATA);
    if (!s) return NULL;
    char *meta = malloc(s->size + 1);
    RX_ASSERT(meta);
    memcpy(meta, s->data, s->size);
    meta[s->size] = '\0';
    return meta;
}

/* The metadata's "target" when it is a plain short name, else "unknown". */
static void meta_target(json_t *meta, char out[32])
{
    const char *t = json_string_value(json_object_get(meta, "target"));
    size_t n = t ? strlen(t) : 0;
    bool ok = n >= 1 && n < 32;
    for (size_t i = 0; ok && i < n; i++)
        ok = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '_' ||
             t[i] == '-';
    snprintf(out, 32, "%s", ok ? t : "unknown");
}

/* Step 4: 0, or -1 with a message in err; *meta gets the METADATA text (or NULL). */
static int check_artifact(const uint8_t *bytes, size_t n, char **meta, char target[32],
                          char *err, size_t errlen)
{
    rx_rxa *a = NULL;
    *meta = NULL;
    if (rx_rxa_parse(bytes, n, "artifact", &a, err, errlen)) return -1;
    int rc = rx_vm_verify(a, err, errlen) ? -1 : 0;
    if (!rc) *meta = rx_meta_text_of(a);
    rx_rxa_free(a);
    if (rc) return -1;
    snprintf(target, 32, "unknown");
    if (!*meta) return 0;
    json_error_t je;
    json_t *m = json_loads(*meta, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(m)) {
        snprintf(err, errlen, "artifact: the METADATA section is not a JSON object");
        json_decref(m);
        free(*meta);
        *meta = NULL;
        return -1;
    }
    meta_target(m, target);
    json_decref(m);
    return 0;
}

void rx_h_artifact_put(rx_server *s, rx_request *q)
{
    const char *id = rx_req_param(q, 0);
    if (!rx_store_valid_id(id)) {
        rx_reply_error(q, 404, "not_found", "an artifact id is 64 lowercase hex digits");
        return;
    }
    size_t n;
    const uint8_t *body = (const uint8_t *)rx_req_body(q, &n);
    uint8_t h[32];
    char hex[65], msg[256];
    rx_sha256 sh;
    rx_sha256_init(&sh);
    rx_sha256_update(&sh, body, n);
    rx_sha256_final(&sh, h);
    rx_hex(h, 32, hex);
    if (strcmp(hex, id)) {
        snprintf(msg, sizeof msg, "the body's SHA-256 is %s, not the id %s", hex, id);
        rx_reply_error(q, 400, "hash_mismatch", msg);
        return;
    }
    rx_store *st = rx_server_store(s);
    rx_artifact_info info;
    char err[256];
    int r = rx_store_info(st, id, &info, NULL, err, sizeof err);
    if (r == 0) {
        rx_reply_json(q, 200, json_pack("{s:s, s:I, s:b}", "artifact", id, "size",
                                        (json_int_t)info.size, "stored", 0));
        return;
    }
    char *meta = NULL, target[32];
    if (r == 1 && check_artifact(body, n, &meta, target, msg, sizeof msg)) {
        rx_reply_error(q, 400, "invalid_artifact", msg);
        return;
    }
    if (r != 1 || rx_store_put(st, id, target, body, n, meta, &info, err, sizeof err)) {
        rx_log_json(rx_server_log(s), RX_LOG_ERROR,
                    json_pack("{s:s, s:s, s:s, s:s}", "event", "store_error", "request_id",
                              rx_req_id(q), "artifact", id, "message", err));
        rx_reply_error(q, 500, "store_error", "the artifact store failed (see the log)");
        free(meta);
        return;
    }
    free(meta);
    rx_log_json(rx_server_log(s), RX_LOG_INFO,
                json_pack("{s:s, s:s, s:s, s:I, s:s}", "event", "artifact_uploaded", "request_id",
                          rx_req_id(q), "artifact", id, "size", (json_int_t)n, "target", target));
    rx_reply_json(q, 201, json_pack("{s:s, s:I, s:b}", "artifact", id, "size", (json_int_t)n,
                                    "stored", 1));
}
