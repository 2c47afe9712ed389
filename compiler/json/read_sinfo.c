/*
 * read_sinfo.c — annotations (struct info, the paper's Table 1) and symbolic
 * variables: where they are defined and how dims are read.
 *
 * An annotation that defines variables (a parameter's, a match_cast's) is read in
 * two steps: rxi_rd_predefine creates every whole-dimension identifier not yet in
 * scope (a bare identifier standing as a whole dim, a whole shape value or a prim
 * value), then rxi_rd_sinfo reads the annotation with all of them visible, so
 * `["n * 2"]` is accepted exactly when some whole dim defines n. A callable
 * annotation does the same for itself and keeps its variables local (rx_sinfo.svars);
 * everywhere else every variable must already be in scope.
 *
 * Dims are non-negative integers or strings in the symbolic grammar (exprparse.c,
 * RX_XP_SYM). Shape values of first-class shape expressions may be -1 (reshape).
 */
#include <string.h>

#include "reader_int.h"

/* ---------------------------------------------------------------- symbolic variables */

const rx_svar *rxi_rd_lookup(const rx_reader *r, const char *s, size_t n)
{
    return rxi_rd_scope_get(&r->syms, s, n);
}

const rx_svar *rxi_rd_define(rx_reader *r, const char *name, rx_dtype dt, rx_svkind kind)
{
    rx_svar *v = rx_svar_new(r->a, rx_arena_strdup(r->a, name), dt, kind, rx_module_new_id(r->m));
    rxi_rd_scope_push(&r->syms, v->name, v);
    return v;
}

const char *rxi_rd_whole_ident(const char *s, size_t *len)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (!rxi_rd_is_ident(s, n)) return NULL;
    *len = n;
    return s;
}

/* Defines the whole-dimension identifier of one dim value, if it is one and new. */
static void predefine_dim(rx_reader *r, const json_t *d)
{
    size_t n;
    const char *id = json_is_string(d) ? rxi_rd_whole_ident(json_string_value(d), &n) : NULL;
    if (id && !rxi_rd_lookup(r, id, n))
        rxi_rd_define(r, rx_arena_strndup(r->a, id, n), RX_DT_I64, RX_SV_SHAPE);
}

/* Defines the whole-dimension identifiers of every element of a dims array. */
static void predefine_dims(rx_reader *r, const json_t *arr)
{
    size_t i;
    json_t *d;
    if (json_is_array(arr)) json_array_foreach(arr, i, d) predefine_dim(r, d);
}

void rxi_rd_predefine(rx_reader *r, const json_t *j)
{
    json_t *v;
    if (!json_is_object(j)) return;
    if ((v = json_object_get(j, "shape")) && json_is_object(v))
        predefine_dims(r, json_object_get(v, "values"));
    if ((v = json_object_get(j, "tensor")) && json_is_object(v))
        predefine_dims(r, json_object_get(v, "shape"));
    if ((v = json_object_get(j, "prim")) && json_is_object(v))
        predefine_dim(r, json_object_get(v, "value"));
    if ((v = json_object_get(j, "tuple")) && json_is_array(v)) {
        size_t i;
        json_t *f;
        json_array_foreach(v, i, f) rxi_rd_predefine(r, f);
    }
}

rx_expr *rxi_rd_dim(rx_reader *r, const json_t *j, rx_loc loc, int64_t min_int)
{
    if (json_is_integer(j)) {
        int64_t v = json_integer_value(j);
        if (v < min_int) {
            rxi_rd_err(r, loc, "expected a dimension >= %lld, found %lld", (long long)min_int,
                      (long long)v);
            return NULL;
        }
        return rx_e_int(r->a, v);
    }
    if (json_is_string(j))
        return rxi_rd_parse(r, json_string_value(j), json_string_length(j), loc, RX_XP_SYM,
                           RX_DT_UNKNOWN);
    rxi_rd_err(r, loc, "expected an integer or a symbolic expression string, found %s",
              rxi_rd_desc(r, j));
    return NULL;
}

/* Reads an array of dims into an arena array; NULL (after errors) on failure. */
static rx_expr **read_dims(rx_reader *r, const json_t *arr, rx_loc loc, int *n)
{
    if (!rxi_rd_want_array(r, arr, loc, "a list of dimensions")) return NULL;
    *n = (int)json_array_size(arr);
    rx_expr **dims = RX_NEWN(r->a, rx_expr *, *n ? *n : 1);
    bool ok = true;
    for (int i = 0; i < *n; i++) {
        dims[i] = rxi_rd_dim(r, json_array_get(arr, (size_t)i), rxi_rd_idx(r, loc, i), 0);
        ok = ok && dims[i];
    }
    return ok ? dims : NULL;
}

/* ---------------------------------------------------------------- annotations */

/* Reads the "values"/"shape" + "ndim" pair of a shape or tensor annotation. */
static bool read_ndim_dims(rx_reader *r, const json_t *o, rx_loc loc, const char *dkey,
                           int *ndim, rx_expr ***dims)
{
    json_t *dv = json_object_get(o, dkey), *nv = json_object_get(o, "ndim");
    *ndim = -1;
    *dims = NULL;
    if (nv) {
        if (!json_is_integer(nv) || json_integer_value(nv) < -1 || json_integer_value(nv) > 64) {
            rxi_rd_err(r, rxi_rd_key(r, loc, "ndim"),
                      "expected an integer from -1 (unknown) to 64, found %s", rxi_rd_desc(r, nv));
            return false;
        }
        *ndim = (int)json_integer_value(nv);
    }
    if (dv) {
        int n = 0;
        rx_loc dl = rx_loc_key(&r->m->locs, loc, dkey);
        *dims = read_dims(r, dv, dl, &n);
        if (!*dims) return false;
        if (nv && *ndim != n) {
            rxi_rd_err(r, rxi_rd_key(r, loc, "ndim"), "ndim %d disagrees with the %d dimensions given",
                      *ndim, n);
            return false;
        }
        *ndim = n;
    }
    return true;
}

static const char *const SI_KINDS[] = {"object", "shape", "tensor", "tuple", "callable",
                                       "prim", NULL};

/* A callable annotation: its fresh whole-dim variables are local to it. */
static rx_sinfo *read_callable(rx_reader *r, const json_t *v, rx_loc vl)
{
    static const char *const keys[] = {"params", "ret", NULL};
    if (!rxi_rd_want_object(r, v, vl, "a callable annotation") || !rxi_rd_keys(r, v, vl, keys))
        return NULL;
    json_t *ps = rxi_rd_get(r, v, vl, "params", true), *rt = rxi_rd_get(r, v, vl, "ret", true);
    if (!ps || !rt) return NULL;
    rx_loc pl = rxi_rd_key(r, vl, "params");
    if (!rxi_rd_want_array(r, ps, pl, "a list of parameter annotations")) return NULL;
    int mark = r->syms.e.n, n = (int)json_array_size(ps);
    for (int i = 0; i < n; i++) rxi_rd_predefine(r, json_array_get(ps, (size_t)i));
    rxi_rd_predefine(r, rt);
    rx_sinfo **params = RX_NEWN(r->a, rx_sinfo *, n ? n : 1);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        params[i] = rxi_rd_sinfo(r, json_array_get(ps, (size_t)i), rxi_rd_idx(r, pl, i));
        ok = ok && params[i];
    }
    rx_sinfo *ret = rxi_rd_sinfo(r, rt, rxi_rd_key(r, vl, "ret"));
    rx_sinfo *s = NULL;
    if (ok && ret) {
        s = rx_si_callable(r->a, params, n, ret);
        s->nsvars = r->syms.e.n - mark;
        s->svars = RX_NEWN(r->a, const rx_svar *, s->nsvars ? s->nsvars : 1);
        for (int i = 0; i < s->nsvars; i++) s->svars[i] = RX_RD_AT(r->syms, mark + i);
    }
    rxi_rd_scope_pop(&r->syms, mark);
    return s;
}

rx_expr *rxi_rd_prim_value(rx_reader *r, const json_t *val, rx_dtype t, rx_loc loc)
{
    if (rx_dtype_is_int(t)) {
        rx_expr *e = rxi_rd_dim(r, val, loc, INT64_MIN);
        if (!e || t == RX_DT_I64) return e;
        return e->kind == RX_E_INT ? rx_e_typed_int(r->a, e->u.ival, t) : rx_e_cast(r->a, t, e);
    }
    if (rx_dtype_is_float(t) && json_is_number(val))
        return rx_e_float(r->a, json_number_value(val), t);
    if (t == RX_DT_BOOL && json_is_boolean(val))
        return rx_e_typed_int(r->a, json_is_true(val), RX_DT_BOOL);
    rxi_rd_err(r, loc, "expected a %s value, found %s", rx_dtype_name(t), rxi_rd_desc(r, val));
    return NULL;
}

/* A prim annotation {"dtype", "value"?}. */
static rx_sinfo *read_prim(rx_reader *r, const json_t *v, rx_loc vl)
{
    static const char *const keys[] = {"dtype", "value", NULL};
    if (!rxi_rd_want_object(r, v, vl, "a prim annotation") || !rxi_rd_keys(r, v, vl, keys))
        return NULL;
    json_t *dt = rxi_rd_get(r, v, vl, "dtype", true), *val = json_object_get(v, "value");
    rx_dtype t;
    if (!dt || !rxi_rd_dtype(r, dt, rxi_rd_key(r, vl, "dtype"), &t)) return NULL;
    rx_expr *e = NULL;
    if (val && !(e = rxi_rd_prim_value(r, val, t, rxi_rd_key(r, vl, "value")))) return NULL;
    return rx_si_prim(r->a, t, e);
}

rx_sinfo *rxi_rd_sinfo(rx_reader *r, const json_t *j, rx_loc loc)
{
    if (!json_is_object(j)) {
        rxi_rd_err(r, loc, "expected an annotation ({\"tensor\": ...}, {\"shape\": ...}, "
                          "{\"tuple\": ...}, ...), found %s", rxi_rd_desc(r, j));
        return NULL;
    }
    if (!rxi_rd_keys(r, j, loc, SI_KINDS)) return NULL;
    if (json_object_size(j) == 0) {
        rxi_rd_err(r, loc, "empty annotation (expected one of: object, shape, tensor, tuple, "
                          "callable, prim)");
        return NULL;
    }
    if (json_object_size(j) != 1) {
        void *it = json_object_iter((json_t *)j);
        const char *k1 = json_object_iter_key(it);
        const char *k2 = json_object_iter_key(json_object_iter_next((json_t *)j, it));
        rxi_rd_err(r, loc, "an annotation has one kind key, found both \"%s\" and \"%s\"", k1, k2);
        return NULL;
    }
    const char *kind = json_object_iter_key(json_object_iter((json_t *)j));
    json_t *v = json_object_iter_value(json_object_iter((json_t *)j));
    rx_loc vl = rxi_rd_key(r, loc, strcmp(kind, "object") == 0   ? "object"
                                  : strcmp(kind, "shape") == 0  ? "shape"
                                  : strcmp(kind, "tensor") == 0 ? "tensor"
                                  : strcmp(kind, "tuple") == 0  ? "tuple"
                                  : strcmp(kind, "prim") == 0   ? "prim"
                                                                : "callable");
    if (strcmp(kind, "object") == 0) {
        if (!json_is_object(v) || json_object_size(v)) {
            rxi_rd_err(r, vl, "expected {}, found %s", rxi_rd_desc(r, v));
            return NULL;
        }
        return rx_si_object(r->a);
    }
    if (strcmp(kind, "shape") == 0) {
        static const char *const keys[] = {"values", "ndim", NULL};
        int ndim;
        rx_expr **dims;
        if (!rxi_rd_want_object(r, v, vl, "a shape annotation") || !rxi_rd_keys(r, v, vl, keys) ||
            !read_ndim_dims(r, v, vl, "values", &ndim, &dims))
            return NULL;
        return rx_si_shape(r->a, ndim, dims);
    }
    if (strcmp(kind, "tensor") == 0) {
        static const char *const keys[] = {"shape", "ndim", "dtype", NULL};
        int ndim;
        rx_expr **dims;
        rx_dtype t = RX_DT_UNKNOWN;
        if (!rxi_rd_want_object(r, v, vl, "a tensor annotation") || !rxi_rd_keys(r, v, vl, keys))
            return NULL;
        json_t *dt = json_object_get(v, "dtype");
        bool ok = !dt || rxi_rd_dtype(r, dt, rxi_rd_key(r, vl, "dtype"), &t);
        if (!read_ndim_dims(r, v, vl, "shape", &ndim, &dims) || !ok) return NULL;
        return rx_si_tensor(r->a, t, ndim, dims);
    }
    if (strcmp(kind, "tuple") == 0) {
        if (!rxi_rd_want_array(r, v, vl, "a list of field annotations")) return NULL;
        int n = (int)json_array_size(v);
        rx_sinfo **fs = RX_NEWN(r->a, rx_sinfo *, n ? n : 1);
        bool ok = true;
        for (int i = 0; i < n; i++) {
            fs[i] = rxi_rd_sinfo(r, json_array_get(v, (size_t)i), rxi_rd_idx(r, vl, i));
            ok = ok && fs[i];
        }
        return ok ? rx_si_tuple(r->a, fs, n) : NULL;
    }
    if (strcmp(kind, "prim") == 0) return read_prim(r, v, vl);
    return read_callable(r, v, vl);
}

