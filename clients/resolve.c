/*
 * resolve.c — short artifact ids in `relax` (client.h): where an artifact id is taken
 * (fetch, meta, bench), an unambiguous prefix of RXC_MIN_PREFIX..63 lowercase hex
 * digits names the artifact too, as git's short hashes do. The server lists the ids
 * starting with the prefix (GET /v1/artifacts?prefix=P: at most 10, and whether there
 * are more); exactly one is the answer, none or several is an error that says so and
 * lists the candidates.
 */
#include "client.h"

#include <stdio.h>
#include <string.h>

int rxc_id_prefix(const char *s)
{
    size_t i;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i >= RXC_MIN_PREFIX && i < 64;
}

int rxc_resolve_id(rxc_conn *c, const char *what, char *id)
{
    if (rxc_valid_id(what)) {
        snprintf(id, 65, "%s", what);
        return 0;
    }
    char path[128];
    snprintf(path, sizeof path, "/v1/artifacts?prefix=%s", what);
    json_t *j = rxc_get_json(c, path, "artifact ids");
    if (!j) return 1;
    json_t *list = json_object_get(j, "artifacts");
    size_t n = json_array_size(list);
    int more = json_is_true(json_object_get(j, "more"));
    const char *only = json_string_value(json_array_get(list, 0));
    int rc = 1;
    if (n == 1 && !more && only && rxc_valid_id(only)) {
        snprintf(id, 65, "%s", only);
        rc = 0;
    } else if (n == 0) {
        fprintf(stderr, "error: no artifact on the server has an id starting with %s\n", what);
    } else {
        fprintf(stderr, "error: the id prefix %s is ambiguous; it matches%s:\n", what,
                more ? " (the first few shown)" : "");
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", json_string_value(json_array_get(list, i)));
        if (more) fputs("  ...\n", stderr);
        fputs("  (give more digits)\n", stderr);
    }
    json_decref(j);
    return rc;
}
