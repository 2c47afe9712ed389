/*
 * targets.c — GET /v1/targets and the target check of POST /v1/compile (server_int.h).
 *
 * Both read the one table of target kinds (relax/target.h): GET /v1/targets lists each
 * kind with its options (name, default, range or form, meaning) and whether this server
 * can compile for it, with the reason when it cannot; a compile request's "target" is
 * parsed and normalized before its cache key is taken, so two spellings of one target
 * share a key and the job, the store and the reply all carry the normalized form.
 */
#include <stdio.h>
#include <string.h>

#include "relax/target.h"
#include "server_int.h"

/* The JSON description of option o. */
static json_t *option_json(const rx_target_opt *o)
{
    if (o->sdef)
        return json_pack("{s:s, s:s, s:s, s:s}", "name", o->name, "type", "string", "default",
                         o->sdef, "form", o->spattern, "doc", o->doc);
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:b, s:s}", "name", o->name, "type", "integer",
                     "default", (json_int_t)o->def, "min", (json_int_t)o->min, "max",
                     (json_int_t)o->max, "power_of_two", o->pow2, "doc", o->doc);
}

json_t *rx_targets_json(void)
{
    json_t *list = json_array();
    for (int k = 0; k < RX_TARGET_NKINDS; k++) {
        json_t *opts = json_array();
        for (int i = 0; i < rx_target_nopts((rx_target_kind)k); i++)
            json_array_append_new(opts, option_json(rx_target_opt_at((rx_target_kind)k, i)));
        char why[256];
        bool ok = rx_target_available((rx_target_kind)k, why, sizeof why);
        json_t *o = json_pack("{s:s, s:b, s:o}", "kind", rx_target_kind_name((rx_target_kind)k),
                              "available", ok, "options", opts);
        if (!ok) json_object_set_new(o, "reason", json_string(why));
        json_array_append_new(list, o);
    }
    return json_pack("{s:o}", "targets", list);
}

void rx_h_targets(rx_server *s, rx_request *q)
{
    (void)s;
    rx_reply_json(q, 200, rx_targets_json());
}

bool rx_target_check(const char *text, rx_target *t, const char **code, char *msg, size_t cap)
{
    rx_diags d;
    rx_diags_init(&d);
    bool ok = rx_target_parse(text, t, &d);
    if (!ok) {
        /* an unknown kind is "unsupported"; a known kind with bad options is a bad request */
        *code = strstr(d.list.items[0].msg, "unknown target") ? "unsupported_target" : "bad_request";
        snprintf(msg, cap, "%s", d.list.items[0].msg);
    } else {
        char why[256];
        ok = rx_target_available(t->kind, why, sizeof why);
        if (!ok) {
            *code = "unsupported_target";
            snprintf(msg, cap, "target %s is not supported by this server: %s", t->norm, why);
        }
    }
    rx_diags_free(&d);
    return ok;
}
