/*
 * artifact.c — finishing an artifact: the METADATA section and serialization.
 *
 * The builder (rxa.h) already holds STRINGS, FUNCS (with the kernel table), CODE and
 * CONSTS from rx_vmgen; this file adds the kernel object (KERNELS_CPU) and a JSON
 * description for people and the server: what was compiled (module name, and as
 * module.hash the cache key the driver computed with rx_build_key: the structural hash
 * salted with target, opt level and compiler version, equal to `relaxc hash` and to
 * relaxd's key), how (compiler version, target, opt level, the passes that ran), and what
 * the artifact offers (functions with their signatures in relax-json annotation form and
 * in the text form, kernels, libraries and built-ins it needs at load time).
 *
 * Reproducible bytes: the JSON is compact with keys in a fixed insertion order, and it
 * holds nothing of the build's circumstances (no times, dates, paths or host names:
 * pass times go to the compile response and `relaxc build --time-passes` instead), so
 * two builds of one module with one target, options and compiler are byte-identical.
 */
#include "relax/vmgen.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "relax/codegen.h"

/* A dim as relax-json writes it: an integer, or the expression's text. */
static json_t *dim_json(const rx_expr *e)
{
    int64_t v;
    if (rx_expr_is_const(e, &v)) return json_integer(v);
    rx_sb s = {0};
    rx_expr_print(e, &s);
    json_t *j = json_string(rx_sb_str(&s));
    rx_sb_free(&s);
    return j;
}

static json_t *dims_json(rx_expr *const *dims, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, dim_json(dims[i]));
    return a;
}

/* A function's storages with and without static memory planning (docs/artifact.md). */
static json_t *memory_json(const rx_vmgen_mem *mm)
{
    json_t *o = json_object();
    json_object_set_new(o, "planned", json_boolean(mm->planned));
    json_object_set_new(o, "allocations", json_integer(mm->allocs));
    json_object_set_new(o, "storages", json_integer(mm->storages));
    json_object_set_new(o, "planned_storages", json_integer(mm->planned_storages));
    json_object_set_new(o, "static_storages", json_integer(mm->static_storages));
    json_object_set_new(o, "planned_tensors", json_integer(mm->planned_tensors));
    json_object_set_new(o, "arena_bytes", json_integer(mm->arena_bytes));
    json_object_set_new(o, "arena_live_bytes", json_integer(mm->arena_live_bytes));
    json_object_set_new(o, "bytes_without_planning", dim_json(mm->bytes_without));
    json_object_set_new(o, "bytes_with_planning", dim_json(mm->bytes_with));
    json_object_set_new(o, "max_bytes_without_planning",
                        mm->max_without >= 0 ? json_integer(mm->max_without) : json_null());
    json_object_set_new(o, "max_bytes_with_planning",
                        mm->max_with >= 0 ? json_integer(mm->max_with) : json_null());
    json_object_set_new(o, "planned_bytes", dim_json(mm->planned_bytes));
    json_object_set_new(o, "max_planned_bytes",
                        mm->max_planned >= 0 ? json_integer(mm->max_planned) : json_null());
    json_object_set_new(o, "lower_bound_bytes", dim_json(mm->lower_bound));
    json_object_set_new(o, "max_lower_bound_bytes",
                        mm->max_lower_bound >= 0 ? json_integer(mm->max_lower_bound) : json_null());
    json_object_set_new(o, "peak_lower_bound_bytes", dim_json(mm->peak_bound));
    json_object_set_new(o, "max_peak_lower_bound_bytes",
                        mm->max_peak_bound >= 0 ? json_integer(mm->max_peak_bound) : json_null());
    return o;
}

/* An annotation in relax-json form (docs/relax-json.md, "Annotations"). */
static json_t *sinfo_json(const rx_sinfo *s)
{
    json_t *o = json_object(), *in = json_object();
    switch (s ? s->kind : RX_SI_OBJECT) {
    case RX_SI_PRIM:
        if (s->dtype) json_object_set_new(in, "dtype", json_string(rx_dtype_name((rx_dtype)s->dtype)));
        if (s->value) json_object_set_new(in, "value", dim_json(s->value));
        json_object_set_new(o, "prim", in);
        break;
    case RX_SI_SHAPE:
        if (s->dims) json_object_set_new(in, "values", dims_json(s->dims, s->ndim));
        else if (s->ndim >= 0) json_object_set_new(in, "ndim", json_integer(s->ndim));
        json_object_set_new(o, "shape", in);
        break;
    case RX_SI_TENSOR:
        if (s->dims) json_object_set_new(in, "shape", dims_json(s->dims, s->ndim));
        else if (s->ndim >= 0) json_object_set_new(in, "ndim", json_integer(s->ndim));
        if (s->dtype) json_object_set_new(in, "dtype", json_string(rx_dtype_name((rx_dtype)s->dtype)));
        json_object_set_new(o, "tensor", in);
        break;
    case RX_SI_TUPLE: {
        json_t *a = json_array();
        for (int i = 0; i < s->nfields; i++) json_array_append_new(a, sinfo_json(s->fields[i]));
        json_decref(in);
        json_object_set_new(o, "tuple", a);
        break;
    }
    case RX_SI_CALLABLE: {
        json_t *a = json_array();
        for (int i = 0; i < s->nfields; i++) json_array_append_new(a, sinfo_json(s->fields[i]));
        json_object_set_new(in, "params", a);
        json_object_set_new(in, "ret", sinfo_json(s->ret));
        json_object_set_new(o, "callable", in);
        break;
    }
    default: json_object_set_new(o, "object", in); break;
    }
    return o;
}

/* {"name"?, "type": relax-json, "text": paper notation} */
static json_t *typed_json(const char *name, const rx_sinfo *s)
{
    json_t *o = json_object();
    if (name) json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "type", sinfo_json(s));
    rx_sb t = {0};
    if (s) rx_sinfo_print(s, &t);
    else rx_sb_puts(&t, "R.Object");
    json_object_set_new(o, "text", json_string(rx_sb_str(&t)));
    rx_sb_free(&t);
    return o;
}

/* {"option": value, ...} of every option of t's kind, defaults included, table order. */
static json_t *target_options_json(const rx_target *t)
{
    json_t *o = json_object();
    for (int i = 0; i < rx_target_nopts(t->kind); i++) {
        const rx_target_opt *d = rx_target_opt_at(t->kind, i);
        json_object_set_new(o, d->name, d->sdef ? json_string(t->s[i]) : json_integer(t->v[i]));
    }
    return o;
}

static json_t *names_json(const char *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
    return a;
}

void rx_artifact_metadata(const rx_module *m, const rx_vmgen_info *info,
                          const rx_artifact_meta *meta, rx_sb *out)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string("rxa"));
    json_object_set_new(root, "format_version", json_integer(RX_RXA_VERSION));
    json_object_set_new(root, "compiler", json_string("relaxc " RX_VERSION));
    json_object_set_new(root, "target", json_string(meta->target ? meta->target : "cpu"));
    if (meta->tgt) json_object_set_new(root, "target_options", target_options_json(meta->tgt));
    json_object_set_new(root, "opt_level", json_integer(meta->opt_level));
    json_t *mod = json_object();
    const rx_attr *name = m->attrs ? rx_attr_map_get(m->attrs, "name") : NULL;
    if (name && name->kind == RX_A_STR) json_object_set_new(mod, "name", json_string(name->u.s));
    if (meta->module_hash) json_object_set_new(mod, "hash", json_string(meta->module_hash));
    json_object_set_new(root, "module", mod);

    json_t *fns = json_array(), *ks = json_array();
    int gi = 0;
    rx_sb sym = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        const rx_func *f = m->funcs[i];
        if (f->kind == RX_F_RELAX) {
            json_t *o = json_object(), *ps = json_array();
            json_object_set_new(o, "name", json_string(f->name));
            for (int p = 0; p < f->nparams; p++)
                json_array_append_new(ps, typed_json(f->params[p]->u.var.name, f->params[p]->sinfo));
            json_object_set_new(o, "params", ps);
            json_object_set_new(o, "ret", typed_json(NULL, f->ret));
            json_t *sv = json_array();
            for (int v = 0; v < f->nsvars; v++) json_array_append_new(sv, json_string(f->svars[v]->name));
            json_object_set_new(o, "symbolic_vars", sv);
            if (gi < info->nregs.n) {
                json_object_set_new(o, "registers", json_integer(info->nregs.items[gi]));
                json_object_set_new(o, "heap_slots", json_integer(info->heap.items[gi]));
                json_object_set_new(o, "code_words", json_integer(info->words.items[gi]));
            }
            if (gi < info->mem.n) json_object_set_new(o, "memory", memory_json(&info->mem.items[gi]));
            gi++;
            json_array_append_new(fns, o);
        } else {
            json_t *o = json_object(), *iv = json_array();
            int nbufs = 0;
            for (int j = 0; j < f->ntparams; j++) nbufs += f->tparams[j].buf != NULL;
            rx_sb_reset(&sym);
            rx_codegen_symbol(f->name, &sym);
            json_object_set_new(o, "function", json_string(f->name));
            json_object_set_new(o, "symbol", json_string(rx_sb_str(&sym)));
            json_object_set_new(o, "buffers", json_integer(nbufs));
            for (int v = 0; v < f->nsvars; v++) json_array_append_new(iv, json_string(f->svars[v]->name));
            json_object_set_new(o, "ivars", iv);
            json_array_append_new(ks, o);
        }
    }
    rx_sb_free(&sym);
    json_object_set_new(root, "functions", fns);
    json_object_set_new(root, "kernels", ks);
    json_object_set_new(root, "libraries", names_json(info->libs.items, info->libs.n));
    json_object_set_new(root, "builtins", names_json(info->builtins.items, info->builtins.n));
    json_t *ps = json_array();
    for (int i = 0; i < meta->npasses; i++) json_array_append_new(ps, json_string(meta->passes[i].name));
    json_object_set_new(root, "passes", ps);
    char *text = json_dumps(root, JSON_COMPACT);
    if (text) rx_sb_puts(out, text);
    free(text);
    json_decref(root);
}

bool rx_artifact_write(rx_rxa_builder *b, const rx_module *m, const rx_vmgen_info *info,
                       const rx_artifact_meta *meta, const uint8_t *so, size_t so_n,
                       uint8_t **out, size_t *out_n, rx_diags *d)
{
    rx_sb md = {0};
    rx_artifact_metadata(m, info, meta, &md);
    rx_rxa_set_metadata(b, rx_sb_str(&md), md.n);
    rx_sb_free(&md);
    if (so_n) rx_rxa_set_section(b, RX_RXA_KERNELS_CPU, so, so_n);
    if (rx_rxa_serialize(b, out, out_n)) {
        rx_diag_add(d, "", "out of memory writing the artifact");
        return false;
    }
    return true;
}
