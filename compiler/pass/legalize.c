/*
 * legalize.c — pipeline step 3: every high-level op call that has a rule becomes
 * call_tir of a generated loop function (paper §4.7: "generate tensor programs for
 * all high-level operator calls, and lower the operator calls to call_tir").
 *
 * Step 1: walk every graph function (blocks, bindings, nested expressions, if
 *         branches); for each op call with a rule (legalize_<group>.c tables, see
 *         legalize_int.h), check that its deduced result is tensors of known dims and
 *         dtype, run the rule in a fresh tensor-expression builder and build the loop
 *         function. The function's shapes are symbolic in its own variables; the
 *         call passes the caller's variables that are not whole dims as tir_vars.
 * Step 2: share: the generated function's structural hash (rx_struct_hash of a
 *         one-function module, the name blanked) is looked up among those generated
 *         in this run; an identical function is reused (same op, attributes, dtypes
 *         and shape structure: `add` of (n, 4) and of (m, 4) share one function).
 * Step 3: replace the call by call_tir(@fn, tensor operands, out = the call's deduced
 *         annotation, tir_vars), keeping the call's location. Variables keep their
 *         annotations (call_tir's is `out`, which is what the op deduced).
 * Step 4: deduce the module again: call_tir arity and the matching of every operand
 *         and output against the function's buffers are re-checked, so a wrong rule
 *         shows up here rather than at run time.
 *
 * nn.rnn (a sequential recurrence over a run-time length): on the CPU, in f32, it
 * becomes call_dps_library("rt.rnn", ...) here at every opt level (library_lower.c's
 * rx_lib_rnn_call; the runtime's tuned recurrence); on a GPU target (rx_legalize_for
 * with device set) or in another dtype, one loop function with a serial time loop
 * (legalize_rnn.c), called as `call_tir(@nn_rnn, ..., out=(Y, workspaces...))[0]`.
 * topk, sort, argsort (always), cumsum in f32/f64/i32/i64, nn.group_norm in f32/f64 and
 * f32 NCHW nearest / linear image.resize2d become runtime library calls on the CPU
 * (legalize_lib.c: rt.topk, rt.cumsum, rt.group_norm, rt.resize2d; not fused with their
 * neighbours); the sorts are an error on a GPU target, the others keep their rules there.
 * Left to later passes: the ops without a rule (data-dependent unique/nonzero and
 * shape_of, which the VM runs as builtins; every other v1 op has one) stay op calls;
 * calls whose result dims are unknown (run-time broadcasting, reshape of an unknown
 * shape) are errors for now. Generated functions carry no compute_pattern (step 4 of
 * the pipeline, analysis, computes it), no schedule (step 7) and no fusion (step 5);
 * those of reshape, flatten, squeeze and expand_dims (a copy in row-major order) carry
 * the attribute "reshape": true, by which reshape_view makes their calls views.
 * Cost: linear in the module plus, per legalized call, the size of its function
 * (building, hashing).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../legalize/legalize_int.h"
#include "library_int.h"
#include "relax/text.h"

typedef struct lg_group {
    const lg_rule_entry *rules;
    const int *count;
} lg_group;

#define LG_GROUP_ENTRY(arr, cnt) {arr, &cnt},
static const lg_group groups[] = {LG_GROUPS(LG_GROUP_ENTRY)};
#undef LG_GROUP_ENTRY

static const lg_rule_entry *find_rule(const char *op)
{
    if (!op) return NULL;
    if (strncmp(op, "relax.", 6) == 0) op += 6;
    for (int g = 0; g < RX_COUNTOF(groups); g++)
        for (int i = 0; i < *groups[g].count; i++)
            if (strcmp(groups[g].rules[i].op, op) == 0) return &groups[g].rules[i];
    return NULL;
}

/* nn.rnn (or relax.nn.rnn): legalized into the library call rt.rnn, not a rule's loops. */
/* Ops whose output is the input's elements in the same row-major order: their loop
 * functions get the attribute "reshape" (true), which reshape_view reads. */
static bool is_view(const char *op)
{
    return !strcmp(op, "reshape") || !strcmp(op, "flatten") || !strcmp(op, "squeeze") ||
           !strcmp(op, "expand_dims");
}

static bool is_rnn(const char *op)
{
    return op && !strcmp(!strncmp(op, "relax.", 6) ? op + 6 : op, "nn.rnn");
}

bool rx_legalize_has_rule(const char *name)
{
    return find_rule(name) != NULL || is_rnn(name) || (name && lg_lib_only(name));
}

/* ---------------------------------------------------------------- rule helpers */

static void report_at(rx_module *m, rx_diags *d, rx_loc loc, const char *fmt, va_list ap)
{
    rx_sb path = {0};
    rx_loc_render(&m->locs, loc, &path);
    rx_diag_vadd(d, rx_sb_str(&path), fmt, ap);
    rx_sb_free(&path);
}

static void lg_error(rx_module *m, rx_diags *d, rx_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void lg_error(rx_module *m, rx_diags *d, rx_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_at(m, d, loc, fmt, ap);
    va_end(ap);
}

bool lg_fail(lg_ctx *c, const char *fmt, ...)
{
    rx_sb msg = {0};
    va_list ap;
    va_start(ap, fmt);
    rx_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    lg_error(c->m, c->d, c->call->loc, "cannot legalize %s: %s", lg_opname(c), rx_sb_str(&msg));
    rx_sb_free(&msg);
    return false;
}

const char *lg_opname(const lg_ctx *c) { return c->call->u.call.op->name; }

const char *lg_ident(const lg_ctx *c)
{
    char *s = rx_arena_strdup(c->a, lg_opname(c));
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

const char *lg_tname(const lg_ctx *c) { return rx_arena_printf(c->a, "T_%s", lg_ident(c)); }

const rx_sinfo *lg_out(const lg_ctx *c, int k)
{
    const rx_sinfo *s = c->call->sinfo;
    if (s->kind == RX_SI_TUPLE) {
        RX_ASSERT(k >= 0 && k < s->nfields);
        return s->fields[k];
    }
    RX_ASSERT(k == 0);
    return s;
}

/* Whether a tensor annotation has known dims and dtype; else what is unknown. */
static const char *unknown_part(const rx_sinfo *s)
{
    if (!s || s->kind != RX_SI_TENSOR) return "non-tensor";
    if (s->ndim < 0 || !s->dims) return "unknown";
    if (s->dtype == RX_DT_UNKNOWN) return "unknown-dtype";
    return NULL;
}

rx_te_tensor *lg_input(lg_ctx *c, int i, const char *name)
{
    RX_ASSERT(i >= 0 && i < c->call->nargs);
    rx_node *arg = c->call->args[i];
    const rx_sinfo *s = arg->sinfo;
    const char *u = unknown_part(s);
    if (u) {
        lg_fail(c, "argument %d %s", i,
                !strcmp(u, "non-tensor") ? "is not a tensor"
                : !strcmp(u, "unknown") ? "has unknown dims" : "has an unknown dtype");
        return NULL;
    }
    rx_te_tensor *t = rx_te_placeholder(c->te, name, (rx_dtype)s->dtype, s->ndim, s->dims);
    RX_VEC_PUSH(c->args, arg);
    RX_VEC_PUSH(c->ins, t);
    return t;
}

rx_te_tensor *lg_input_field(lg_ctx *c, int i, int k, const char *name)
{
    RX_ASSERT(i >= 0 && i < c->call->nargs);
    rx_node *tup = c->call->args[i];
    const rx_sinfo *ts = tup->sinfo;
    if (!ts || ts->kind != RX_SI_TUPLE || k < 0 || k >= ts->nfields) {
        lg_fail(c, "argument %d is not a tuple with a field %d", i, k);
        return NULL;
    }
    const rx_sinfo *s = ts->fields[k];
    const char *u = unknown_part(s);
    if (u) {
        lg_fail(c, "field %d of argument %d %s", k, i,
                !strcmp(u, "non-tensor") ? "is not a tensor"
                : !strcmp(u, "unknown") ? "has unknown dims" : "has an unknown dtype");
        return NULL;
    }
    rx_node *arg = tup->kind == RX_N_TUPLE ? tup->args[k] : rx_n_get_item(c->m, tup, k);
    if (tup->kind != RX_N_TUPLE) {
        arg->loc = tup->loc;
        arg->sinfo = (rx_sinfo *)s;
    }
    rx_te_tensor *t = rx_te_placeholder(c->te, name, (rx_dtype)s->dtype, s->ndim, s->dims);
    RX_VEC_PUSH(c->args, arg);
    RX_VEC_PUSH(c->ins, t);
    return t;
}

void lg_output(lg_ctx *c, rx_te_tensor *t) { RX_VEC_PUSH(c->outs, t); }

rx_expr **lg_bcast_index(lg_ctx *c, const rx_te_tensor *t, rx_expr *const *idx, int nd)
{
    int tn = rx_te_ndim(t);
    RX_ASSERT(tn <= nd);
    rx_expr **r = RX_NEWN(c->a, rx_expr *, tn > 0 ? tn : 1);
    for (int k = 0; k < tn; k++)
        r[k] = rx_expr_is_int(rx_te_dim(t, k), 1) ? rx_e_int(c->a, 0) : idx[k + nd - tn];
    return r;
}

bool lg_axis(lg_ctx *c, int64_t axis, int ndim, int *out)
{
    if (axis < -(int64_t)ndim || axis >= ndim)
        return lg_fail(c, "axis %lld is out of range for %d dimensions", (long long)axis, ndim);
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return true;
}

rx_expr **lg_unravel(lg_ctx *c, const rx_te_tensor *t, rx_expr *f)
{
    int n = rx_te_ndim(t);
    rx_expr **r = RX_NEWN(c->a, rx_expr *, n > 0 ? n : 1);
    rx_expr *stride = rx_e_int(c->a, 1);
    for (int k = n - 1; k >= 0; k--) {
        rx_expr *v = k == n - 1 ? f : rx_e_binary(c->a, RX_E_FLOORDIV, f, stride);
        if (k > 0) v = rx_e_binary(c->a, RX_E_FLOORMOD, v, rx_te_dim(t, k));
        r[k] = rx_te_simplify(c->te, v);
        stride = rx_e_binary(c->a, RX_E_MUL, stride, rx_te_dim(t, k));
    }
    return r;
}

rx_expr *lg_attr_size(lg_ctx *c, const rx_attr *a)
{
    if (!a || a->kind == RX_A_NULL) return NULL;
    if (a->kind == RX_A_INT) return rx_e_int(c->a, a->u.i);
    RX_ASSERT(a->kind == RX_A_EXPR);
    return a->u.e;
}

void lg_attr_ints(const rx_attr *a, int64_t *out, int max, int *n)
{
    if (!a || a->kind == RX_A_NULL) {
        *n = -1;
    } else if (a->kind == RX_A_INT) {
        RX_ASSERT(max >= 1);
        out[0] = a->u.i;
        *n = 1;
    } else {
        RX_ASSERT(a->kind == RX_A_ARRAY && a->u.arr.n <= max);
        for (int i = 0; i < a->u.arr.n; i++) {
            RX_ASSERT(a->u.arr.items[i]->kind == RX_A_INT);
            out[i] = a->u.arr.items[i]->u.i;
        }
        *n = a->u.arr.n;
    }
}

void lg_require_equal(lg_ctx *c, rx_expr *have, rx_expr *want, const char *what)
{
    rx_expr *diff = rx_te_simplify(c->te, rx_e_binary(c->a, RX_E_SUB, have, want));
    if (rx_expr_is_int(diff, 0)) return;
    lg_check k = {have, want, what};
    RX_VEC_PUSH(c->checks, k);
}

void lg_require_nonneg(lg_ctx *c, rx_expr *e, const char *what)
{
    lg_require_equal(c, e, rx_te_simplify(c->te, rx_e_binary(c->a, RX_E_MAX, e, rx_e_int(c->a, 0))),
                     what);
}

/* ---------------------------------------------------------------- the driver */

typedef struct gen {
    uint8_t hash[32];
    rx_func *fn;
} gen;

typedef struct lg_pass {
    rx_module *m;
    rx_diags *d;
    rx_legalize_report *rep;
    bool device;           /* a GPU target: nn.rnn as loops (rx_legalize_for) */
    RX_VEC(gen) gens;      /* functions generated in this run */
    RX_VEC(lg_check) checks; /* the last call's lg_require_*, for walk_seq */
    const char *check_op;  /* and its op's name */
    bool ok;
} lg_pass;

static void note_left(lg_pass *p, const rx_op *op)
{
    rx_legalize_report *r = p->rep;
    r->left++;
    for (int i = 0; i < r->nleft_ops; i++)
        if (!strcmp(r->left_ops[i], op->name)) return;
    if (r->nleft_ops < RX_COUNTOF(r->left_ops)) r->left_ops[r->nleft_ops++] = op->name;
}

/* A function name based on base that no function of the module has. */
static const char *unique_name(rx_module *m, const char *base)
{
    if (!rx_module_find(m, base)) return base;
    for (int k = 1;; k++) {
        const char *s = rx_arena_printf(m->arena, "%s_%d", base, k);
        if (!rx_module_find(m, s)) return s;
    }
}

/* Checks the call's result: a tensor or tuple of tensors with known dims and dtype. */
static bool result_ok(lg_pass *p, const rx_node *call, int *nouts)
{
    const rx_sinfo *s = call->sinfo;
    const char *op = call->u.call.op->name;
    int n = s->kind == RX_SI_TUPLE ? s->nfields : 1;
    for (int k = 0; k < n; k++) {
        const char *u = unknown_part(s->kind == RX_SI_TUPLE ? s->fields[k] : s);
        if (!u) continue;
        if (!strcmp(u, "non-tensor"))
            lg_error(p->m, p->d, call->loc, "cannot legalize %s: its result is not a tensor", op);
        else if (!strcmp(u, "unknown"))
            lg_error(p->m, p->d, call->loc, "cannot legalize %s with unknown output dims", op);
        else
            lg_error(p->m, p->d, call->loc, "cannot legalize %s with an unknown output dtype", op);
        return false;
    }
    *nouts = n;
    return true;
}

/* Steps 1-3 for one op call: the replacement node, or the call itself. */
static rx_node *legalize_call(lg_pass *p, rx_node *call)
{
    const rx_op *op = call->u.call.op;
    bool rnn = is_rnn(op->name);
    if (rnn && call->sinfo && !p->device && call->sinfo->dtype == RX_DT_F32) {
        p->rep->legalized++;
        return rx_lib_rnn_call(p->m, call); /* the CPU library's tuned recurrence */
    }
    int lib = rnn ? 0 : lg_lib_form(call, p->device);
    if (lib != 0) { /* legalize_lib.c: a runtime library call, or no form on this target */
        int nouts;
        if (lib < 0)
            lg_error(p->m, p->d, call->loc, "cannot legalize %s: no form for a GPU target", op->name);
        else if (!call->sinfo)
            lg_error(p->m, p->d, call->loc, "cannot legalize %s: the module is not deduced", op->name);
        else if (result_ok(p, call, &nouts))
            return p->rep->legalized++, lg_lib_call(p->m, call);
        p->ok = false;
        return call;
    }
    const lg_rule_entry *rule = find_rule(op->name);
    if (!rule && !rnn) {
        note_left(p, op);
        return call;
    }
    if (!call->sinfo) {
        lg_error(p->m, p->d, call->loc, "cannot legalize %s: the module is not deduced", op->name);
        p->ok = false;
        return call;
    }
    int nouts;
    if (!result_ok(p, call, &nouts)) {
        p->ok = false;
        return call;
    }
    lg_ctx c = {0};
    c.m = p->m;
    c.a = p->m->arena;
    c.te = rx_te_new(p->m);
    c.call = call;
    c.d = p->d;
    rx_node *res = call;
    rx_te_func tf = {0};
    rx_sinfo *out = call->sinfo;
    if (rnn ? !lg_rnn(&c, &tf.fn, &out) : !rule->rule(&c)) {
        p->ok = false;
        goto out;
    }
    if (!rnn) {
        RX_ASSERT(c.outs.n == nouts);
        rx_te_build(c.te, "", c.ins.items, c.ins.n, c.outs.items, c.outs.n, &tf);
    }
    gen g;
    rx_func_struct_hash(tf.fn, "legalize", g.hash);
    rx_func *fn = NULL;
    for (int i = 0; i < p->gens.n && !fn; i++)
        if (!memcmp(p->gens.items[i].hash, g.hash, 32)) fn = p->gens.items[i].fn;
    if (fn) {
        p->rep->shared++;
    } else {
        fn = tf.fn;
        fn->name = unique_name(p->m, lg_ident(&c));
        if (is_view(op->name)) { /* reshape_view may call it a view (attribute "reshape") */
            rx_attr *t = RX_NEW(p->m->arena, rx_attr);
            t->kind = RX_A_BOOL;
            t->u.b = true;
            rx_func_set_attr(p->m, fn, "reshape", t);
        }
        g.fn = fn;
        RX_VEC_PUSH(p->gens, g);
        rx_te_add_func(p->m, fn);
        p->rep->generated++;
    }
    res = rx_n_call_tir(p->m, rx_n_global(p->m, fn->name, fn), c.args.items, c.args.n,
                        out, tf.tir_vars, tf.ntir_vars);
    res->loc = call->loc;
    res->sinfo = out;
    if (out != call->sinfo) { /* nn.rnn: the result, then workspaces */
        res = rx_n_get_item(p->m, res, 0);
        res->loc = call->loc;
        res->sinfo = call->sinfo;
    }
    p->rep->legalized++;
    for (int i = 0; i < c.checks.n; i++) RX_VEC_PUSH(p->checks, c.checks.items[i]);
    p->check_op = op->name;
out:
    rx_te_free(c.te);
    RX_VEC_FREE(c.args);
    RX_VEC_FREE(c.ins);
    RX_VEC_FREE(c.outs);
    RX_VEC_FREE(c.checks);
    return res;
}

static void walk_seq(lg_pass *p, rx_seq *s);

/* Legalizes the op calls in *slot (operands first), replacing *slot. */
static void walk_node(lg_pass *p, rx_node **slot)
{
    rx_node *n = *slot;
    if (!n) return;
    switch (n->kind) {
    case RX_N_CALL:
        for (int i = 0; i < n->nargs; i++) walk_node(p, &n->args[i]);
        if (n->call_kind == RX_CALL_OP) *slot = legalize_call(p, n);
        /* a library call's fallback (library_lower.c, OpenCL): a loop function too */
        if (n->call_kind == RX_CALL_LIB && n->u.call.callee &&
            n->u.call.callee->kind == RX_N_CALL && n->u.call.callee->call_kind == RX_CALL_OP)
            n->u.call.callee = legalize_call(p, n->u.call.callee);
        break;
    case RX_N_TUPLE:
    case RX_N_GET_ITEM:
        for (int i = 0; i < n->nargs; i++) walk_node(p, &n->args[i]);
        break;
    case RX_N_IF:
        walk_node(p, &n->args[0]);
        walk_seq(p, n->u.if_.then_body);
        walk_seq(p, n->u.if_.else_body);
        break;
    default:
        break;
    }
}

/* Puts `VAR_OP_WHAT = match_cast(R.shape([have]), R.Shape([want]))` before binding j
 * of block b (lg_require_equal). */
static void insert_check(lg_pass *p, rx_block *b, int j, const lg_check *k)
{
    rx_module *m = p->m;
    rx_binding *old = b->bindings, *bd = &old[j];
    rx_binding *nb = RX_NEWN(m->arena, rx_binding, (size_t)b->nbindings + 1);
    memcpy(nb, old, sizeof *nb * (size_t)j);
    memcpy(nb + j + 1, old + j, sizeof *nb * (size_t)(b->nbindings - j));
    rx_expr *have_e = k->have, *want_e = k->want;
    rx_sinfo *want = rx_si_shape(m->arena, 1, &want_e);
    const char *name = rx_arena_printf(m->arena, "%s_%s_%s", nb[j + 1].var->u.var.name,
                                       p->check_op, k->what);
    nb[j] = (rx_binding){rx_n_var(m, name, want, b->dataflow), rx_n_shape(m, &have_e, 1),
                         want, true, bd->loc};
    nb[j].var->loc = bd->loc;
    nb[j].value->loc = bd->loc;
    b->bindings = nb;
    b->nbindings++;
}

static void walk_seq(lg_pass *p, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++)
        for (int j = 0; j < s->blocks[i]->nbindings; j++) {
            p->checks.n = 0;
            walk_node(p, &s->blocks[i]->bindings[j].value);
            for (int k = 0; k < p->checks.n; k++) insert_check(p, s->blocks[i], j++, &p->checks.items[k]);
        }
    p->checks.n = 0;
    walk_node(p, &s->result);
}

bool rx_legalize(rx_module *m, rx_legalize_report *rep, rx_diags *d)
{
    return rx_legalize_for(m, false, rep, d);
}

bool rx_legalize_for(rx_module *m, bool device, rx_legalize_report *rep, rx_diags *d)
{
    rx_legalize_report local;
    lg_pass p = {0};
    p.device = device;
    p.m = m;
    p.d = d;
    p.rep = rep ? rep : &local;
    p.ok = true;
    memset(p.rep, 0, sizeof *p.rep);
    int nf = m->nfuncs; /* generated functions are appended; they are loop functions */
    for (int i = 0; i < nf; i++)
        if (m->funcs[i]->kind == RX_F_RELAX) walk_seq(&p, m->funcs[i]->body);
    RX_VEC_FREE(p.gens);
    RX_VEC_FREE(p.checks);
    return p.ok;
}

bool rx_pass_legalize(rx_module *m, rx_diags *d) { return rx_legalize(m, NULL, d); }
