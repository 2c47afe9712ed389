/*
 * onnx_read.c — the ONNX importer's driver (contracts in relax/onnx.h): decoding, the
 * value table, tensors, the signature and the node walk.
 *
 * Step 1: decode the ModelProto with protobuf-c (bounded by the input size; a payload
 *         that does not decode is one error). Pick the default-domain opset (7..17);
 *         another domain's node is reported when it is met.
 * Step 2: graph inputs that are not initializers become parameters: the dtype from
 *         elem_type, dims from dim_value (<= 2^40), dim_param (one symbolic variable
 *         per name, made a relax-json identifier) or nothing (a fresh variable dN).
 *         An input whose values the graph never reads (unused, or only CastLike's
 *         `like`, whose dtype alone matters) is declared with its dtype alone, so data
 *         of any shape binds to it.
 * Step 3: initializers become constants (inline) or, for floating-point weights with
 *         RX_ONNX_WEIGHTS_PARAMS, parameters after the inputs; integer initializers
 *         stay constants because they are usually shapes and axes. Payloads come from
 *         raw_data, the typed fields, or an external-data file under base_dir; each is
 *         checked against the dims.
 * Step 4: nodes in order (ONNX requires a topological order, so an input not yet
 *         produced is a dangling name or a cycle: an error naming it). Each node's op
 *         type and attributes are checked against the table of onnx_ops.c, then its
 *         converter binds the outputs: op calls are deduced as they are built (the op
 *         rules of the registry), so converters see every value's annotation.
 * Step 5: the graph outputs form the result; the function is `main` with one dataflow
 *         block. The module is then ordinary IR: rx_onnx_to_json writes it as
 *         relax-json for the driver and relaxd.
 * Costs: O(model size) plus the deduction of each op; memory is the module's arena
 * and the decoded protobuf (freed before returning).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_int.h"
#include "relax/json.h"
#include "relax/pass.h"

#define OX_MAX_DIM (INT64_C(1) << 40)
#define OX_MAX_FILE ((size_t)1 << 31)

/* True when the graph never reads name's values: no graph output is it and every use
 * is CastLike's input 1 (the dtype source); subgraphs are not looked into (an input
 * a subgraph reads keeps its shape: the graph's If/Loop/Scan nodes name it or not). */
static bool dtype_only(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return false;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->n_attribute) {
            for (size_t a = 0; a < n->n_attribute; a++)
                if (n->attribute[a]->g || n->attribute[a]->n_graphs) return false;
        }
        for (size_t j = 0; j < n->n_input; j++)
            if (n->input[j] && !strcmp(n->input[j], name) &&
                !(j == 1 && n->op_type && !strcmp(n->op_type, "CastLike")))
                return false;
    }
    return true;
}

/* ---------------------------------------------------------------- errors */

void ox_err(ox_ctx *c, const char *fmt, ...)
{
    rx_sb msg = {0};
    if (c->node)
        rx_sb_printf(&msg, "%s '%s' (opset %lld): ", c->node->op_type ? c->node->op_type : "?",
                     c->node->name ? c->node->name : "", (long long)c->opset);
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    rx_diag_add(c->d, c->where, "%s", rx_sb_str(&msg));
    rx_sb_free(&msg);
}

/* ---------------------------------------------------------------- value table */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

ox_val *ox_find(ox_ctx *c, const char *name)
{
    if (!c->nb) return NULL;
    for (int32_t i = c->heads[hash_str(name) & (uint32_t)(c->nb - 1)]; i; i = c->next[i - 1])
        if (!strcmp(c->vals.items[i - 1]->name, name)) return c->vals.items[i - 1];
    return NULL;
}

static void rehash(ox_ctx *c, int nb)
{
    free(c->heads);
    c->heads = rx_xcalloc((size_t)nb, sizeof *c->heads);
    c->nb = nb;
    for (int i = 0; i < c->vals.n; i++) {
        uint32_t b = hash_str(c->vals.items[i]->name) & (uint32_t)(nb - 1);
        c->next[i] = c->heads[b];
        c->heads[b] = i + 1;
    }
}

ox_val *ox_define(ox_ctx *c, const char *name)
{
    ox_val *v = RX_NEW(c->a, ox_val);
    v->name = rx_arena_strdup(c->a, name);
    v->depth = (int8_t)c->depth;
    RX_VEC_PUSH(c->vals, v);
    if (c->vals.n > c->cap_next) {
        c->cap_next = c->vals.n * 2;
        c->next = rx_xrealloc(c->next, (size_t)c->cap_next * sizeof *c->next);
    }
    if (c->vals.n > c->nb) {
        rehash(c, c->nb ? c->nb * 4 : 64);
    } else {
        uint32_t b = hash_str(v->name) & (uint32_t)(c->nb - 1);
        c->next[c->vals.n - 1] = c->heads[b];
        c->heads[b] = c->vals.n;
    }
    return v;
}

void ox_scope_pop(ox_ctx *c, int mark)
{
    for (int i = c->vals.n - 1; i >= mark; i--) { /* the newest value heads its chain */
        uint32_t b = hash_str(c->vals.items[i]->name) & (uint32_t)(c->nb - 1);
        RX_ASSERT(c->heads[b] == i + 1);
        c->heads[b] = c->next[i];
    }
    if (mark < c->vals.n) c->vals.n = mark;
}

/* ---------------------------------------------------------------- names */

/* A relax-json identifier made from an ONNX name: [A-Za-z0-9_] kept, anything else
 * '_', a leading digit or an empty name prefixed with `prefix`. */
static const char *ident(ox_ctx *c, const char *name, const char *prefix)
{
    rx_sb b = {0};
    if (!name || !*name || !((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z') ||
                             *name == '_'))
        rx_sb_puts(&b, prefix);
    for (const char *p = name ? name : ""; *p && b.n < 200; p++) {
        char ch = *p;
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        rx_sb_putc(&b, ok ? ch : '_');
    }
    const char *s = rx_arena_strdup(c->a, rx_sb_str(&b));
    rx_sb_free(&b);
    return s;
}

/* ---------------------------------------------------------------- values */

static rx_sinfo *const_sinfo(ox_ctx *c, const rx_const *k)
{
    rx_expr **dims = RX_NEWN(c->a, rx_expr *, k->ndim ? k->ndim : 1);
    for (int i = 0; i < k->ndim; i++) dims[i] = rx_e_int(c->a, k->shape[i]);
    return rx_si_tensor(c->a, k->dtype, k->ndim, dims);
}

static rx_node *const_node(ox_ctx *c, rx_const *k)
{
    rx_node *n = rx_n_const(c->m, k);
    n->sinfo = const_sinfo(c, k);
    return n;
}

rx_node *ox_const_node(ox_ctx *c, rx_const *k) { return const_node(c, k); }

rx_node *ox_scalar(ox_ctx *c, rx_dtype dt, double v)
{
    rx_const *k = ox_new_const(c, dt, 0, NULL);
    switch (dt) {
    case RX_DT_F32: { float f = (float)v; memcpy(k->data, &f, 4); break; }
    case RX_DT_F64: memcpy(k->data, &v, 8); break;
    case RX_DT_F16: case RX_DT_BF16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h;
        if (dt == RX_DT_BF16) {
            h = (uint16_t)(u >> 16);
        } else { /* round to nearest half (normal range; enough for constants like 0.5) */
            int e = (int)((u >> 23) & 255) - 127 + 15;
            uint32_t m = u & 0x7fffff;
            if (f == 0) h = 0;
            else if (e <= 0) h = 0;
            else if (e >= 31) h = 0x7c00;
            else h = (uint16_t)((e << 10) | ((m + 0x1000) >> 13));
            h |= (uint16_t)((u >> 16) & 0x8000);
        }
        memcpy(k->data, &h, 2);
        break;
    }
    default: {
        int64_t i = (int64_t)v;
        memcpy(k->data, &i, ox_esize(dt)); /* little-endian narrowing */
    }
    }
    return const_node(c, k);
}

rx_const *ox_const(ox_ctx *c, ox_val *v)
{
    if (!v) return NULL;
    if (v->k) return v->k;
    if (!v->sym) return NULL;
    int64_t *lits = RX_NEWN(c->a, int64_t, v->nsym ? v->nsym : 1);
    for (int i = 0; i < v->nsym; i++)
        if (!rx_expr_is_const(rx_arith_simplify(c->ar, v->sym[i]), &lits[i])) return NULL;
    int64_t shape[2] = {v->nsym, 1};
    if (v->symrank == 2) {
        shape[0] = v->nsym / v->symcols;
        shape[1] = v->symcols;
    }
    rx_const *k = ox_new_const(c, v->symdt, v->symrank, shape);
    for (int i = 0; i < v->nsym; i++) {
        if (rx_dtype_is_float(v->symdt)) {
            double f = (double)lits[i];
            if (v->symdt == RX_DT_F32) { float g = (float)f; memcpy(k->data + 4 * i, &g, 4); }
            else memcpy(k->data + 8 * i, &f, 8);
        } else {
            memcpy(k->data + (size_t)i * ox_esize(v->symdt), &lits[i], ox_esize(v->symdt));
        }
    }
    v->k = k;
    return k;
}

bool ox_syms(ox_ctx *c, ox_val *v, rx_expr ***out, int *n)
{
    if (!v || (v->sym && v->symrank == 2)) return false; /* a matrix is no shape operand */
    if (v->sym) {
        *out = v->sym;
        *n = v->nsym;
        return true;
    }
    if (!v->k || v->k->ndim > 1 || rx_dtype_is_float(v->k->dtype) || ox_numel(v->k) > 4096)
        return false;
    int64_t cnt = ox_numel(v->k);
    rx_expr **s = RX_NEWN(c->a, rx_expr *, cnt ? cnt : 1);
    for (int64_t i = 0; i < cnt; i++) s[i] = rx_e_int(c->a, ox_ci(v->k, i));
    v->sym = s;
    v->nsym = (int32_t)cnt;
    v->symrank = (int8_t)v->k->ndim;
    v->symdt = v->k->dtype;
    *out = s;
    *n = (int)cnt;
    return true;
}

bool ox_ints(ox_ctx *c, ox_val *v, int64_t **out, int *n)
{
    rx_const *k = ox_const(c, v);
    if (!k || rx_dtype_is_float(k->dtype)) return false;
    int64_t cnt = ox_numel(k);
    int64_t *r = RX_NEWN(c->a, int64_t, cnt ? cnt : 1);
    for (int64_t i = 0; i < cnt; i++) r[i] = ox_ci(k, i);
    *out = r;
    *n = (int)cnt;
    return true;
}

/* A value known as symbolic sizes used as a tensor (GPT-2's classification head takes
 * `% ids.shape[-1]` of a tensor): each size e is arange(e, e + 1), concatenated, the
 * 0-d value reshaped to (). The sizes are computed on the host at run time. */
static rx_node *sym_tensor(ox_ctx *c, ox_val *v)
{
    rx_node **parts = RX_NEWN(c->a, rx_node *, v->nsym);
    for (int i = 0; i < v->nsym; i++) {
        rx_attr *am = ox_amap(c);
        rx_expr *e = v->sym[i];
        ox_aset(c, am, "start", ox_aexprs(c, &e, 1)->u.arr.items[0]);
        rx_expr *e1 = ox_simp(c, rx_e_binary(c->a, RX_E_ADD, e, ox_lit(c, 1)));
        ox_aset(c, am, "end", ox_aexprs(c, &e1, 1)->u.arr.items[0]);
        ox_aset(c, am, "dtype", ox_astr(c, rx_dtype_name(v->symdt)));
        if (!(parts[i] = ox_call(c, "arange", NULL, 0, am))) return NULL;
    }
    rx_node *t = v->nsym == 1 ? parts[0] : ox_concat(c, parts, v->nsym, 0);
    if (t && v->symrank == 2) {
        rx_expr *rc[2] = {ox_lit(c, v->nsym / v->symcols), ox_lit(c, v->symcols)};
        return ox_reshape(c, t, rc, 2);
    }
    return t && v->symrank == 0 ? ox_reshape(c, t, NULL, 0) : t;
}

rx_node *ox_node(ox_ctx *c, ox_val *v)
{
    if (!v) return NULL;
    if (v->node) return v->node;
    if (v->unavail) {
        ox_err(c, "value '%s' is not available: %s", v->name, v->unavail);
        return NULL;
    }
    if (v->kind != OX_TENSOR) {
        ox_err(c, "value '%s' is %s, used as a tensor", v->name,
               v->kind == OX_SEQ ? "a sequence" : "an optional");
        return NULL;
    }
    rx_const *k = ox_const(c, v);
    if (!k && v->sym && v->nsym >= 1 && v->nsym <= 16 &&
        !rx_dtype_is_float(v->symdt) && v->symdt != RX_DT_BOOL)
        return v->node = sym_tensor(c, v);
    if (!k) {
        rx_sb s = {0};
        for (int i = 0; i < v->nsym && i < 8; i++) {
            if (i) rx_sb_puts(&s, ", ");
            rx_expr_print(v->sym[i], &s);
        }
        ox_err(c, "value '%s' holds symbolic sizes [%s] and is used as a tensor; only shape "
               "operands (Reshape, Expand, ConstantOfShape, Range, Slice...) may be symbolic",
               v->name, rx_sb_str(&s));
        rx_sb_free(&s);
        return NULL;
    }
    if (!k->name && ox_numel(k) > 16) { /* big constants are named module constants */
        k->name = ident(c, v->name, "c_");
        for (int i = 0; rx_module_find_const(c->m, k->name); i++)
            k->name = rx_arena_printf(c->a, "%s_%d", ident(c, v->name, "c_"), i + 1);
        rx_const **cs = RX_NEWN(c->a, rx_const *, c->m->nconsts + 1);
        if (c->m->nconsts) memcpy(cs, c->m->consts, sizeof *cs * (size_t)c->m->nconsts);
        cs[c->m->nconsts++] = k;
        c->m->consts = cs;
    }
    v->node = const_node(c, k);
    return v->node;
}

const rx_sinfo *ox_tensor(ox_ctx *c, ox_val *v)
{
    rx_node *n = ox_node(c, v);
    if (!n) return NULL;
    if (!n->sinfo || n->sinfo->kind != RX_SI_TENSOR) {
        ox_err(c, "value '%s' is not a tensor", v->name);
        return NULL;
    }
    return n->sinfo;
}

/* ---------------------------------------------------------------- the node's I/O */

ox_val *ox_in(ox_ctx *c, int i)
{
    if (i < 0 || (size_t)i >= c->node->n_input) return NULL;
    const char *nm = c->node->input[i];
    if (!nm || !*nm) return NULL;
    return ox_find(c, nm); /* existence was checked before the converter ran */
}

int ox_nin(ox_ctx *c)
{
    int n = (int)c->node->n_input;
    while (n > 0 && (!c->node->input[n - 1] || !*c->node->input[n - 1])) n--;
    return n;
}

int ox_nout(ox_ctx *c) { return (int)c->node->n_output; }

static ox_val *out_val(ox_ctx *c, int i)
{
    if (i < 0 || (size_t)i >= c->node->n_output || !*c->node->output[i]) return NULL;
    const char *nm = c->node->output[i];
    ox_val *v = ox_find(c, nm);
    return v && v->depth == c->depth ? v : ox_define(c, nm); /* an outer one is shadowed */
}

static rx_node *bind(ox_ctx *c, const char *name, rx_node *value)
{
    rx_node *var = rx_n_var(c->m, ident(c, name, "v_"), value->sinfo, true);
    var->loc = value->loc;
    rx_binding b = {var, value, NULL, false, value->loc};
    RX_VEC_PUSH(c->binds, b);
    return var;
}

/* How definite a dim is, for ox_unify_bcast: a literal other than 1 (3), a plain
 * variable (2), an expression (1), a min or max (0: a slice clamped to a buffer's
 * extent); a literal 1 (-1) broadcasts and is left alone. */
static int dim_rank(rx_expr *e)
{
    int64_t v;
    if (rx_expr_is_const(e, &v)) return v == 1 ? -1 : 3;
    return e->kind == RX_E_VAR ? 2 : e->kind == RX_E_MIN || e->kind == RX_E_MAX ? 0 : 1;
}

/* Operand dims, right-aligned against another operand's, that no proof relates to it
 * (min(s, 32) against s: a causal mask sliced from a buffer by the sequence length; a
 * batch of 2 baked into a constant by a traced int() against b) are asserted equal to
 * the more definite of the two (a literal, a plain variable, an expression, a min or
 * max, in that order; dim_rank; of two expressions or two variables, the earlier
 * operand's: an FPN's strided (h - 1) // 4 + 1 against its upsampled
 * ((h - 1) // 8 + 1) * 2): the operand becomes
 * match_cast(x, dims). ONNX broadcasting needs them equal there unless one is 1 at run
 * time, which an exported symbolic dim is not; a call where they differ fails at the
 * match_cast's check with the binding and both shapes named, as ONNX Runtime fails at
 * the op. Without it the op's dims are unknown and the module cannot compile.
 * skip >= 0: operands of equal rank whose dim skip is exempt (Concat's axis: a UNet's
 * upsampled (h // 2) * 2 rows concatenated with the skip connection's h). */
void ox_unify_bcast(ox_ctx *c, rx_node **args, int nargs, int skip)
{
    for (int i = 0; i < nargs; i++)
        if (!args[i] || !args[i]->sinfo || args[i]->sinfo->kind != RX_SI_TENSOR ||
            !args[i]->sinfo->dims || (skip >= 0 && args[i]->sinfo->ndim != args[0]->sinfo->ndim))
            return;
    for (int i = 0; i < nargs; i++) {
        const rx_sinfo *xs = args[i]->sinfo;
        rx_expr **d = NULL;
        for (int k = 0; k < xs->ndim; k++) {
            rx_expr *a = xs->dims[k];
            if (k == skip || dim_rank(a) < 0 || dim_rank(a) == 3) continue;
            for (int j = 0; j < nargs; j++) {
                const rx_sinfo *ys = args[j]->sinfo;
                int kj = k + (ys->ndim - xs->ndim);
                if (j == i || kj < 0 || kj >= ys->ndim) continue;
                rx_expr *b = ys->dims[kj];
                int ra = dim_rank(a), rb = dim_rank(b);
                if (rb < ra || (rb == ra && (ra == 0 || j > i)) || rx_arith_prove_equal(c->ar, a, b))
                    continue;
                if (!d) {
                    d = RX_NEWN(c->a, rx_expr *, xs->ndim);
                    memcpy(d, xs->dims, sizeof *d * (size_t)xs->ndim);
                }
                d[k] = b;
                break;
            }
        }
        if (d) args[i] = ox_match_dims(c, args[i], d, xs->ndim);
    }
}

rx_expr *ox_fresh_dim(ox_ctx *c, const char *base)
{
    char name[64];
    for (int k = 0;; k++) {
        snprintf(name, sizeof name, "%s%d", base, k);
        bool used = false;
        for (int i = 0; i < c->svars.n && !used; i++) used = !strcmp(c->svars.items[i]->name, name);
        if (!used) break;
    }
    rx_svar *v = rx_svar_new(c->a, rx_arena_strdup(c->a, name), RX_DT_I64, RX_SV_SHAPE,
                             rx_module_new_id(c->m));
    RX_VEC_PUSH(c->svars, v);
    return rx_e_var(c->a, v);
}

rx_node *ox_match_dims(ox_ctx *c, rx_node *x, rx_expr **d, int n)
{
    if (!x || !x->sinfo || x->sinfo->kind != RX_SI_TENSOR) return x;
    rx_sinfo *si = rx_si_tensor(c->a, (rx_dtype)x->sinfo->dtype, n, d);
    rx_node *var = rx_n_var(c->m, ident(c, x->kind == RX_N_VAR ? x->u.var.name : "cast", "v_"),
                            si, true);
    var->loc = x->loc;
    rx_binding b = {var, x, si, true, x->loc};
    RX_VEC_PUSH(c->binds, b);
    return var;
}

/* A call on constants with a small static result, folded at import (canonicalize's
 * folder: the values the kernel would compute), so that converters needing constant
 * operands see them: PyTorch computes F.pad's pads for reflect mode with Concat,
 * Reshape, Slice (step -1) and Transpose of constants. NULL when it does not fold. */
static rx_node *fold_small(ox_ctx *c, rx_node *call)
{
    enum { MAX_ELEMS = 4096 };
    const rx_sinfo *s = call->sinfo;
    int64_t n = 1, v;
    if (s->kind != RX_SI_TENSOR || !s->dims || s->ndim < 0 || c->fold_steps <= 0) return NULL;
    for (int i = 0; i < s->ndim; i++)
        if (!rx_expr_is_const(s->dims[i], &v) || v < 0 || (n *= v) > MAX_ELEMS) return NULL;
    for (int i = 0; i < call->nargs; i++) {
        const rx_node *a = call->args[i];
        if (a->kind == RX_N_VAR) return NULL;
        for (int j = 0; a->kind == RX_N_TUPLE && j < a->nargs; j++)
            if (a->args[j]->kind == RX_N_VAR) return NULL;
    }
    rx_node *k = rx_fold_call(c->m, call, &c->fold_steps);
    if (!k) return NULL;
    k->sinfo = const_sinfo(c, k->u.konst);
    k->loc = call->loc;
    return k;
}

rx_node *ox_call(ox_ctx *c, const char *opname, rx_node **args, int nargs, rx_attr *attrs)
{
    const rx_op *op = rx_op_find(opname);
    RX_ASSERT(op);
    for (int i = 0; i < nargs; i++)
        if (!args[i]) return NULL;
    int e0 = rx_diags_count(c->d);
    rx_loc loc = rx_loc_key(&c->m->locs, 0, rx_arena_strdup(c->a, c->where));
    rx_attr **at = rx_op_bind_attrs(c->m, op, attrs, loc, NULL, NULL, c->d);
    if (rx_diags_count(c->d) != e0) return NULL;
    rx_node *call = rx_n_call_op(c->m, op, args, nargs, at);
    call->loc = loc;
    call->sinfo = op->deduce(&c->dc, call);
    if (!call->sinfo) return NULL;
    rx_node *k = fold_small(c, call);
    if (k) return k;
    return bind(c, c->node && c->node->n_output ? c->node->output[0] : opname, call);
}

bool ox_out_node(ox_ctx *c, int i, rx_node *n)
{
    if (!n) return false;
    ox_val *v = out_val(c, i);
    if (v && n->kind == RX_N_CONST) v->k = n->u.konst; /* folded: a constant value */
    else if (v) v->node = n;
    return true;
}

void ox_out_unavail(ox_ctx *c, int i, const char *why)
{
    ox_val *v = out_val(c, i);
    if (v) v->unavail = why;
}

void ox_out_sym(ox_ctx *c, int i, rx_expr **sym, int n, int rank, rx_dtype dt)
{
    ox_val *v = out_val(c, i);
    if (!v) return;
    for (int k = 0; k < n; k++) sym[k] = rx_arith_simplify(c->ar, sym[k]);
    v->sym = sym;
    v->nsym = n;
    v->symrank = (int8_t)rank;
    v->symdt = dt;
    v->symcols = 0;
}

void ox_out_sym2(ox_ctx *c, int i, rx_expr **sym, int rows, int cols, rx_dtype dt)
{
    ox_out_sym(c, i, sym, rows * cols, 2, dt);
    ox_val *v = out_val(c, i);
    if (v) v->symcols = cols;
}

void ox_out_fsym(ox_ctx *c, int i, rx_expr *e)
{
    ox_val *v = out_val(c, i);
    if (v) v->fsym = e;
}

void ox_out_const(ox_ctx *c, int i, rx_const *k)
{
    ox_val *v = out_val(c, i);
    if (v) v->k = k;
}

void ox_out_alias(ox_ctx *c, int i, ox_val *src)
{
    ox_val *v = out_val(c, i);
    if (!v || !src) return;
    const char *nm = v->name;
    int8_t d = v->depth;
    *v = *src; /* every form of the value */
    v->name = nm;
    v->depth = d;
}

/* ---------------------------------------------------------------- signature */

static const rx_svar *dim_var(ox_ctx *c, const char *name)
{
    for (int i = 0; i < c->svars.n; i++)
        if (!strcmp(c->svars.items[i]->name, name)) return c->svars.items[i];
    rx_svar *v = rx_svar_new(c->a, name, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(c->m));
    RX_VEC_PUSH(c->svars, v);
    return v;
}

static rx_sinfo *input_sinfo(ox_ctx *c, const Onnx__ValueInfoProto *vi, const char *where)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        rx_diag_add(c->d, where, "input '%s': only tensor inputs are supported", vi->name);
        return NULL;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    rx_dtype dt = ox_dtype(tt->elem_type);
    if (dt == RX_DT_UNKNOWN) {
        rx_diag_add(c->d, where, "input '%s': unsupported element type %d", vi->name,
                    (int)tt->elem_type);
        return NULL;
    }
    if (!tt->shape) return rx_si_tensor(c->a, dt, -1, NULL);
    int nd = (int)tt->shape->n_dim;
    if (nd > 16) {
        rx_diag_add(c->d, where, "input '%s': %d dims (at most 16)", vi->name, nd);
        return NULL;
    }
    rx_expr **dims = RX_NEWN(c->a, rx_expr *, nd ? nd : 1);
    for (int i = 0; i < nd; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dm->dim_value < 0 || dm->dim_value > OX_MAX_DIM) {
                rx_diag_add(c->d, where, "input '%s': dim %d is %lld", vi->name, i,
                            (long long)dm->dim_value);
                return NULL;
            }
            dims[i] = rx_e_int(c->a, dm->dim_value);
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dm->dim_param && *dm->dim_param) {
            dims[i] = rx_e_var(c->a, dim_var(c, ident(c, dm->dim_param, "d_")));
        } else {
            dims[i] = rx_e_var(c->a, dim_var(c, rx_arena_printf(c->a, "d%d", c->svars.n)));
        }
    }
    return rx_si_tensor(c->a, dt, nd, dims);
}

/* A parameter named after the ONNX name, made unique: two ONNX names may become the
 * same identifier ("a.b", "a_b"), and weights are bound by these names. */
static rx_node *add_param(ox_ctx *c, const char *name, rx_sinfo *si)
{
    const char *id = ident(c, name, "p_"), *base = id;
    for (int k = 1, i = 0; i < c->params.n; i++)
        if (!strcmp(c->params.items[i]->u.var.name, id)) {
            id = rx_arena_printf(c->a, "%s_%d", base, k++);
            i = -1; /* check the new name against all of them again */
        }
    rx_node *p = rx_n_var(c->m, id, si, false);
    RX_VEC_PUSH(c->params, p);
    return p;
}

/* ---------------------------------------------------------------- the walk */

static bool attrs_supported(ox_ctx *c, const ox_opdef *od)
{
    bool ok = true;
    for (size_t i = 0; i < c->node->n_attribute; i++) {
        const char *an = c->node->attribute[i]->name ? c->node->attribute[i]->name : "";
        size_t len = strlen(an);
        const char *p = od->attrs;
        bool found = false;
        while (p && *p && !found) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            found = l == len && !strncmp(p, an, l);
            p = e ? e + 1 : NULL;
        }
        if (!found) {
            ox_err(c, "attribute '%s' is not supported", an);
            ok = false;
        }
    }
    return ok;
}

void ox_convert_node(ox_ctx *c, const Onnx__NodeProto *n, int idx)
{
    c->node = n;
    c->node_index = idx;
    snprintf(c->where, sizeof c->where, "%snode[%d]", c->path, idx);
    if (!n->op_type) {
        ox_err(c, "node has no op_type");
        return;
    }
    bool dflt = !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
    const ox_opdef *od = dflt ? ox_op_find(n->op_type) : ox_op_find_in(n->domain, n->op_type);
    if (!dflt && !od) {
        ox_err(c, "operator %s of domain '%s' is not supported (the default domain, docs/onnx.md's "
               "com.microsoft list, ai.onnx.preview.training's optimizers)", n->op_type, n->domain);
        return;
    }
    if (dflt && c->opset < 1) {
        ox_err(c, "the model imports no default-domain opset");
        return;
    }
    for (size_t i = 0; i < n->n_input; i++) {
        if (!n->input[i] || !*n->input[i]) continue;
        if (!ox_find(c, n->input[i])) {
            ox_err(c, "input '%s' is not produced by an earlier node, an initializer or a graph "
                   "input (a dangling name or a cycle)", n->input[i]);
            return;
        }
    }
    for (size_t i = 0; i < n->n_output; i++) {
        ox_val *o = n->output[i] && *n->output[i] ? ox_find(c, n->output[i]) : NULL;
        if (o && o->depth == c->depth) {
            ox_err(c, "output '%s' is already defined", n->output[i]);
            return;
        }
    }
    if (!od) {
        ox_err(c, "operator is not supported");
        return;
    }
    if (!attrs_supported(c, od)) return;
    if (ox_fold_scalar(c)) return;
    int e0 = rx_diags_count(c->d);
    bool ok = od->conv(c);
    if (!ok && rx_diags_count(c->d) == e0) ox_err(c, "cannot convert this node");
    if (!ok) return;
    for (size_t i = 0; i < n->n_output; i++) {
        if (!n->output[i] || !*n->output[i]) continue;
        ox_val *v = ox_find(c, n->output[i]);
        if (!v || (!v->node && !v->k && !v->sym && !v->unavail && v->kind == OX_TENSOR)) {
            ox_err(c, "output %zu ('%s') is not supported", i, n->output[i]);
            return;
        }
    }
}

static void read_graph(ox_ctx *c, const Onnx__GraphProto *g)
{
    snprintf(c->where, sizeof c->where, "graph");
    if ((int64_t)g->n_node > (c->o->max_nodes > 0 ? c->o->max_nodes : 1000000)) {
        rx_diag_add(c->d, "graph", "%zu nodes (more than the limit)", g->n_node);
        return;
    }
    /* Step 3 first for the names: initializers shadow inputs of the same name. */
    for (size_t i = 0; i < g->n_initializer; i++) {
        char where[64];
        snprintf(where, sizeof where, "graph.initializer[%zu]", i);
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !*t->name) {
            rx_diag_add(c->d, where, "initializer without a name");
            continue;
        }
        if (ox_find(c, t->name)) {
            rx_diag_add(c->d, where, "initializer '%s' is defined twice", t->name);
            continue;
        }
        rx_const *k = ox_tensor_const(c, t, where);
        if (!k) continue;
        ox_val *v = ox_define(c, t->name);
        v->k = k;
    }
    /* Step 2: inputs */
    for (size_t i = 0; i < g->n_input; i++) {
        char where[64];
        snprintf(where, sizeof where, "graph.input[%zu]", i);
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !*vi->name) {
            rx_diag_add(c->d, where, "input without a name");
            continue;
        }
        if (ox_find(c, vi->name)) continue; /* an initializer (its default value) */
        rx_sinfo *si = input_sinfo(c, vi, where);
        if (!si) continue;
        if (si->kind == RX_SI_TENSOR && dtype_only(g, vi->name))
            si = rx_si_tensor(c->a, (rx_dtype)si->dtype, -1, NULL);
        ox_val *v = ox_define(c, vi->name);
        v->node = add_param(c, vi->name, si);
    }
    /* weights as parameters, after the inputs */
    if (c->o->weights == RX_ONNX_WEIGHTS_PARAMS) {
        for (size_t i = 0; i < g->n_initializer; i++) {
            ox_val *v = g->initializer[i]->name ? ox_find(c, g->initializer[i]->name) : NULL;
            if (!v || !v->k || !rx_dtype_is_float(v->k->dtype) || v->node) continue;
            v->node = add_param(c, v->name, const_sinfo(c, v->k));
            v->k->name = v->node->u.var.name;
            RX_VEC_PUSH(c->weights, v->k);
            v->k = NULL; /* a parameter: its value is not known at compile time */
        }
    }
    if (rx_diags_count(c->d)) return;
    /* Step 4: nodes */
    for (size_t i = 0; i < g->n_node; i++) {
        int e0 = rx_diags_count(c->d);
        ox_convert_node(c, g->node[i], (int)i);
        if (rx_diags_count(c->d) != e0) break; /* later nodes depend on this one */
    }
    c->node = NULL;
    if (rx_diags_count(c->d)) return;
    /* Step 5: outputs */
    if (!g->n_output) {
        rx_diag_add(c->d, "graph.output", "the graph has no outputs");
        return;
    }
    /* a sequence or optional output contributes its tensors in place (docs/onnx.md) */
    RX_VEC(rx_node *) res = {0};
    for (size_t i = 0; i < g->n_output; i++) {
        snprintf(c->where, sizeof c->where, "graph.output[%zu]", i);
        ox_val *v = g->output[i]->name ? ox_find(c, g->output[i]->name) : NULL;
        if (!v) {
            rx_diag_add(c->d, c->where, "output '%s' is not produced by any node",
                        g->output[i]->name ? g->output[i]->name : "");
            break;
        }
        rx_node **t;
        int nt;
        if (!ox_flatten(c, v, &t, &nt)) break;
        for (int j = 0; j < nt; j++)
            RX_VEC_PUSH(res, t[j]->kind != RX_N_VAR ? bind(c, v->name, t[j]) : t[j]);
    }
    if (!rx_diags_count(c->d) && !res.n)
        rx_diag_add(c->d, "graph.output", "the outputs hold no tensor (empty sequences or "
                    "optionals)");
    if (rx_diags_count(c->d)) {
        RX_VEC_FREE(res);
        return;
    }
    rx_node *result = res.items[0];
    if (res.n > 1) {
        rx_sinfo **fs = RX_NEWN(c->a, rx_sinfo *, res.n);
        rx_node **rs = RX_NEWN(c->a, rx_node *, res.n);
        for (int i = 0; i < res.n; i++) fs[i] = res.items[i]->sinfo, rs[i] = res.items[i];
        result = rx_n_tuple(c->m, rs, res.n);
        result->sinfo = rx_si_tuple(c->a, fs, res.n);
    }
    RX_VEC_FREE(res);
    /* the function */
    rx_func *f = c->fn;
    f->nsvars = c->svars.n;
    f->svars = RX_NEWN(c->a, const rx_svar *, f->nsvars ? f->nsvars : 1);
    for (int i = 0; i < f->nsvars; i++) f->svars[i] = c->svars.items[i];
    f->nparams = c->params.n;
    f->params = RX_NEWN(c->a, rx_node *, f->nparams ? f->nparams : 1);
    for (int i = 0; i < f->nparams; i++) f->params[i] = c->params.items[i];
    rx_block *b = RX_NEW(c->a, rx_block);
    b->dataflow = true;
    b->nbindings = c->binds.n;
    b->bindings = RX_NEWN(c->a, rx_binding, c->binds.n ? c->binds.n : 1);
    if (c->binds.n) memcpy(b->bindings, c->binds.items, sizeof *b->bindings * (size_t)c->binds.n);
    f->body = RX_NEW(c->a, rx_seq);
    f->body->nblocks = 1;
    f->body->blocks = RX_NEWN(c->a, rx_block *, 1);
    f->body->blocks[0] = b;
    f->body->result = result;
}

static int64_t default_opset(const Onnx__ModelProto *mp)
{
    int64_t v = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) v = o->version;
    }
    return v;
}

rx_module *rx_onnx_read(const uint8_t *buf, size_t n, const rx_onnx_opts *o,
                        rx_onnx_weightset *ws, rx_diags *d)
{
    rx_onnx_opts dflt = {0};
    if (!o) o = &dflt;
    if (ws) *ws = (rx_onnx_weightset){0};
    int e0 = rx_diags_count(d);
    if (!ox_wire_nesting_ok(buf, n, d)) return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, buf);
    if (!mp) {
        rx_diag_add(d, "", "not an ONNX model: the protobuf does not decode (truncated or "
                    "not a ModelProto, %zu bytes)", n);
        return NULL;
    }
    int64_t opset = default_opset(mp);
    if (!mp->graph) {
        rx_diag_add(d, "", "the model has no graph");
        onnx__model_proto__free_unpacked(mp, NULL);
        return NULL;
    }
    if (opset == -1 && mp->n_opset_import) opset = 0; /* other domains only: checked per node */
    if ((opset < 1 && opset != 0) || opset > 18) {
        rx_diag_add(d, "opset_import", "default-domain opset %lld is not supported (1..18)",
                    (long long)opset);
        onnx__model_proto__free_unpacked(mp, NULL);
        return NULL;
    }
    rx_module *m = rx_module_new();
    ox_ctx c = {0};
    c.m = m;
    c.a = m->arena;
    c.d = d;
    c.o = o;
    c.opset = opset;
    snprintf(c.path, sizeof c.path, "graph.");
    c.ar = rx_arith_new(m->arena);
    c.fold_steps = INT64_C(1) << 26;
    c.fn = RX_NEW(c.a, rx_func);
    c.fn->kind = RX_F_RELAX;
    c.fn->name = "main";
    c.fn->nouts = -1;
    c.dc = (rx_dctx){m, m->arena, c.ar, d, c.fn};
    read_graph(&c, mp->graph);
    onnx__model_proto__free_unpacked(mp, NULL);
    m->funcs = RX_NEWN(c.a, rx_func *, 1);
    m->funcs[0] = c.fn;
    m->nfuncs = 1;
    bool ok = rx_diags_count(d) == e0;
    if (ok && ws) {
        ws->n = c.weights.n;
        ws->w = RX_NEWN(c.a, rx_const *, c.weights.n ? c.weights.n : 1);
        ws->ext_path = RX_NEWN(c.a, const char *, c.weights.n ? c.weights.n : 1);
        ws->ext_off = RX_NEWN(c.a, int64_t, c.weights.n ? c.weights.n : 1);
        for (int i = 0; i < c.weights.n; i++) {
            ws->w[i] = c.weights.items[i];
            for (int j = 0; j < c.ext.n; j++) /* O(weights x external): both are few */
                if (c.ext.items[j].k == ws->w[i]) {
                    ws->ext_path[i] = c.ext.items[j].path;
                    ws->ext_off[i] = c.ext.items[j].off;
                }
        }
    }
    rx_arith_free(c.ar);
    RX_VEC_FREE(c.vals);
    RX_VEC_FREE(c.binds);
    RX_VEC_FREE(c.svars);
    RX_VEC_FREE(c.params);
    RX_VEC_FREE(c.weights);
    RX_VEC_FREE(c.ext);
    free(c.heads);
    free(c.next);
    if (!ok) {
        rx_module_free(m);
        return NULL;
    }
    return m;
}

/* Reads a whole file (at most OX_MAX_FILE bytes) into a heap buffer. */
static uint8_t *read_all(const char *path, size_t *n, rx_diags *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        rx_diag_add(d, "", "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    RX_VEC(uint8_t) b = {0};
    uint8_t chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if ((size_t)b.n + got > OX_MAX_FILE) {
            rx_diag_add(d, "", "%s is larger than 2 GiB (keep the weights as external data)",
                        path);
            fclose(f);
            free(b.items);
            return NULL;
        }
        RX_VEC_GROW(b, b.n + (int)got);
        memcpy(b.items + b.n, chunk, got);
        b.n += (int)got;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        rx_diag_add(d, "", "cannot read %s", path);
        free(b.items);
        return NULL;
    }
    *n = (size_t)b.n;
    return b.items ? b.items : rx_xmalloc(1);
}

rx_module *rx_onnx_read_file(const char *path, const rx_onnx_opts *o, rx_onnx_weightset *ws,
                             rx_diags *d)
{
    size_t n = 0;
    uint8_t *buf = read_all(path, &n, d);
    if (!buf) return NULL;
    rx_onnx_opts oo = {0};
    if (o) oo = *o;
    char *dir = NULL;
    if (!oo.base_dir) {
        const char *slash = strrchr(path, '/');
        dir = slash ? rx_xstrdup(path) : rx_xstrdup(".");
        if (slash) dir[slash - path] = '\0';
        if (slash == path) strcpy(dir, "/");
        oo.base_dir = dir;
    }
    rx_module *m = rx_onnx_read(buf, n, &oo, ws, d);
    free(buf);
    free(dir);
    return m;
}

bool rx_onnx_to_json(const uint8_t *buf, size_t n, const rx_onnx_opts *o, rx_sb *out,
                     rx_diags *d)
{
    rx_module *m = rx_onnx_read(buf, n, o, NULL, d);
    if (!m) return false;
    rx_json_write(m, RX_JSON_COMPACT, out);
    rx_module_free(m);
    return true;
}

bool rx_onnx_is_path(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".onnx");
}
