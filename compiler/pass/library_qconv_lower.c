/*
 * library_qconv_lower.c — the 8-bit convolution rule of library lowering (library_lower.c
 * runs it on its use counts, rx_ll_ctx): an nn.conv2d that rt.qconv2d takes (an 8-bit x
 * by a constant 8-bit weight into i32: compiler/legalize/legalize_lib.c's form) with the
 * elementwise chain after it becomes one call that runs the chain as rt.qconv2d's
 * epilogue program (runtime/library_qepi.c) on each output tile and writes the chain's
 * result once, in its dtype.
 *
 * Step 1 (the pad): x = nn.pad(x0) of an 8-bit x0, constant mode, H and W only, a pad
 * value in x0's range, used by the convolution alone, under a convolution without
 * padding of its own (what onnx_quant.c writes for a zero point under padding) is
 * folded: the call reads x0 with the pad widths as its padding and the value as the byte
 * a tap outside x0 reads (params[10]).
 * Step 2 (the chain): from the convolution, each binding that alone uses the value so far
 * (same shape, not taken by another rule) joins while it is
 *   - in i32: add(v, k), add(k, v) or subtract(v, k), k an i32 constant per tensor or per
 *     output channel ((1, Co, 1, 1), (Co, 1, 1), ...): summed into one per-channel i32
 *     addend (wrapping, as the i32 ops), emitted as IADD;
 *   - astype(v, f32) from i32: TOF32;
 *   - in f32: add, subtract, multiply, divide, maximum, minimum of v and an f32 operand in
 *     either order (REV when v is the second): a constant per tensor (CONST) or per
 *     channel (a tab row), or a tensor of v's shape (a residual): LOADed into the
 *     temporary t with its producers that are used by it alone folded in (an astype to f32
 *     of an 8-bit or i32 tensor: the LOAD itself; add / subtract / multiply / divide by
 *     constants: instructions on t), so a dequantized residual is read as its bytes;
 *     nn.relu; round;
 *   - astype(v, u8 or i8) whose sole user is astype(., f32) (quantize then dequantize):
 *     TRUNC8, both taken; otherwise astype to u8 / i8 ends the chain (an 8-bit result).
 * Every instruction is the op it replaces, in order, so the result is the generated
 * kernels' bit for bit. The chain stops at the first binding that does not join or
 * would pass RX_QE_MAXINSTR instructions, 16 tab rows or RX_QE_MAXEXT tensors.
 * Step 3: the chain's last binding becomes call_dps_library("rt.qconv2d", x, packed w,
 * params (11,), prog, tab, E..., out = its annotation); the other bindings taken (chain,
 * pad, the residuals' producers) are dropped. Without a pad or a chain nothing changes
 * (legalize makes the plain call; a pad alone stays: it is fused into its producer). A
 * depthwise convolution (groups = C = Co, lg_qconv_form) is the same with params (12,),
 * the 12th its groups, and its weight unpacked (lg_qconv_weight). The name "conv2d" (--lib-disable) turns it off with
 * the f32 rule; GPU targets have no rt.qconv2d.
 * Cost: O(chain) per convolution, O(bindings) per pad or residual found.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/rt_qepi.h"
#include "../legalize/legalize_int.h"
#include "library_int.h"
#include "relax/op.h"

enum { QL_MAXROWS = 16 };

typedef struct ql_prog {
    int64_t code[4 * RX_QE_MAXINSTR];
    int n;
    int32_t *tab; /* QL_MAXROWS rows of co */
    int rows;
    int64_t co;
    rx_node *ext[RX_QE_MAXEXT];
    int next;
    int drops[RX_QE_MAXEXT * 8]; /* bindings of the residuals' producers */
    int ndrops;
} ql_prog;

static bool ql_emit(ql_prog *q, int code, int kind, int64_t index, int64_t bits)
{
    if (q->n >= RX_QE_MAXINSTR) return false;
    int64_t *in = q->code + 4 * q->n++;
    in[0] = code, in[1] = kind, in[2] = index, in[3] = bits;
    return true;
}

static int bind_index(const rx_block *b, const rx_node *var)
{
    for (int i = 0; i < b->nbindings; i++)
        if (b->bindings[i].var == var) return i;
    return -1;
}

static bool same_dims(const rx_sinfo *a, const rx_sinfo *b)
{
    if (!a || !b || a->kind != RX_SI_TENSOR || b->kind != RX_SI_TENSOR || a->ndim != 4 ||
        b->ndim != 4 || !a->dims || !b->dims)
        return false;
    for (int i = 0; i < 4; i++)
        if (!rx_expr_same(a->dims[i], b->dims[i])) return false;
    return true;
}

/* The constant of n (inline or bound), or NULL. */
static const rx_const *const_of(const rx_ll_ctx *c, const rx_node *n)
{
    if (n->kind == RX_N_VAR) n = rx_ll_def_of((void *)c, n);
    return n && n->kind == RX_N_CONST && n->u.konst->data ? n->u.konst : NULL;
}

/* Whether k (dtype dt) broadcasts against (N, co, H, W) along the channel at most: one
 * element (*per = false) or co along axis 1 right-aligned (*per = true). */
static bool chan_const(const rx_const *k, rx_dtype dt, int64_t co, bool *per)
{
    if (!k || k->dtype != dt || k->ndim > 4) return false;
    int64_t n = 1;
    for (int i = 0; i < k->ndim; i++) {
        int at = 4 - k->ndim + i;
        if (k->shape[i] != 1 && (at != 1 || k->shape[i] != co)) return false;
        n *= k->shape[i];
    }
    *per = n > 1;
    return n == 1 || n == co;
}

static int32_t elem32(const rx_const *k, int64_t i, bool per)
{
    int32_t v;
    memcpy(&v, k->data + 4 * (per ? i : 0), 4);
    return v;
}

/* The operand of an f32 binary op: k a constant per tensor or per channel, as (kind,
 * index, bits); false when it is neither or the tab is full. */
static bool f32_operand(const rx_ll_ctx *c, ql_prog *q, const rx_node *k, int *kind, int64_t *index,
                        int64_t *bits)
{
    bool per;
    const rx_const *kc = const_of(c, k);
    if (!chan_const(kc, RX_DT_F32, q->co, &per)) return false;
    *index = 0, *bits = 0;
    if (!per) {
        *kind = RX_QE_CONST;
        *bits = (int64_t)(uint32_t)elem32(kc, 0, false);
        return true;
    }
    if (q->rows >= QL_MAXROWS) return false;
    for (int64_t j = 0; j < q->co; j++) q->tab[q->rows * q->co + j] = elem32(kc, j, true);
    *kind = RX_QE_CHAN, *index = q->rows++;
    return true;
}

static const char *const BINOPS[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};

static int binop(const rx_node *n)
{
    for (int i = 0; i < RX_COUNTOF(BINOPS); i++)
        if (rx_ll_is_op(n, BINOPS[i]) && n->nargs == 2) return RX_QE_ADD + i;
    return -1;
}

static bool astype_to(const rx_node *n, rx_dtype dt)
{
    return rx_ll_is_op(n, "astype") && n->nargs == 1 && n->sinfo && n->sinfo->dtype == dt;
}

static rx_dtype dtype_of(const rx_node *n)
{
    return n && n->sinfo && n->sinfo->kind == RX_SI_TENSOR ? n->sinfo->dtype : RX_DT_UNKNOWN;
}

/* A residual e (f32, the chain's shape) as t: its producers used by it alone (astype to
 * f32 of an 8-bit or i32 tensor, f32 ops with a constant) folded, then LOAD of the tensor
 * they start from. False (q unchanged) when it does not fit. */
static bool residual(rx_ll_ctx *c, rx_block *b, ql_prog *q, rx_node *e, const rx_sinfo *shape,
                     const bool *drop)
{
    if (q->next >= RX_QE_MAXEXT || !same_dims(e->sinfo, shape) || dtype_of(e) != RX_DT_F32)
        return false;
    ql_prog save = *q; /* tab rows added here lie past save.rows: restoring it undoes them */
    struct { int op, kind, rev; int64_t index, bits; } ops[8];
    int nops = 0, at[8], nat = 0;
    rx_node *leaf = e;
    while (nops < 8 && leaf->kind == RX_N_VAR && leaf->u.var.id >= 0 && leaf->u.var.id < c->nids &&
           c->uses[leaf->u.var.id] == 1 && c->def_block[leaf->u.var.id] == b) {
        rx_node *d = c->def[leaf->u.var.id];
        int i = bind_index(b, leaf);
        if (!d || i < 0 || drop[i] || !same_dims(d->sinfo, shape)) break;
        if (astype_to(d, RX_DT_F32)) {
            rx_dtype from = dtype_of(d->args[0]);
            if (from != RX_DT_U8 && from != RX_DT_I8 && from != RX_DT_I32) break;
            at[nat++] = i, leaf = d->args[0];
            break;
        }
        int op = binop(d);
        if (op < 0 || op > RX_QE_DIV) break;
        int cur = d->args[0]->kind == RX_N_VAR && !const_of(c, d->args[0]) ? 0 : 1;
        int kind;
        int64_t index, bits;
        if (!f32_operand(c, q, d->args[1 - cur], &kind, &index, &bits)) break;
        ops[nops].op = op, ops[nops].kind = kind, ops[nops].rev = cur == 1;
        ops[nops].index = index, ops[nops].bits = bits, nops++;
        at[nat++] = i, leaf = d->args[cur];
    }
    if (!same_dims(leaf->sinfo, shape)) {
        *q = save;
        return false;
    }
    rx_dtype lt = dtype_of(leaf);
    if (lt != RX_DT_F32 && lt != RX_DT_U8 && lt != RX_DT_I8 && lt != RX_DT_I32) {
        *q = save;
        return false;
    }
    bool ok = ql_emit(q, RX_QE_LOAD | RX_QE_DST_T, RX_QE_CONST, q->next, 0);
    for (int i = nops - 1; i >= 0 && ok; i--)
        ok = ql_emit(q, ops[i].op | RX_QE_DST_T | (ops[i].rev ? RX_QE_REV : 0), ops[i].kind,
                     ops[i].index, ops[i].bits);
    if (!ok || q->ndrops + nat > RX_COUNTOF(q->drops)) {
        *q = save;
        return false;
    }
    q->ext[q->next++] = leaf;
    for (int i = 0; i < nat; i++) q->drops[q->ndrops++] = at[i];
    return true;
}

/* The binding after `after` that alone uses v with v's shape (an op call not taken). */
static rx_binding *ql_next(const rx_ll_ctx *c, const rx_node *v, rx_block *b, int after,
                           const bool *drop, const ql_prog *q)
{
    rx_binding *u = rx_ll_sole_user(c, v, b, after);
    if (!u || drop[u - b->bindings] || !u->value || u->value->kind != RX_N_CALL ||
        u->value->call_kind != RX_CALL_OP || !same_dims(u->value->sinfo, v->sinfo))
        return NULL;
    for (int i = 0; i < q->ndrops; i++)
        if (q->drops[i] == u - b->bindings) return NULL;
    return u;
}

/* Step 1: x = nn.pad(x0) as the params' padding and pad byte; the pad's binding into *pi. */
static rx_node *fold_pad(const rx_ll_ctx *c, rx_block *b, rx_node *x, int64_t p[12], int *pi)
{
    rx_node *d = x->kind == RX_N_VAR ? rx_ll_def_of((void *)c, x) : NULL;
    if (!d || !rx_ll_is_op(d, "nn.pad") || d->nargs != 1 || p[5] || p[6] ||
        x->u.var.id < 0 || x->u.var.id >= c->nids || c->uses[x->u.var.id] != 1)
        return NULL;
    const rx_attr *m = rx_call_attr(d, "pad_mode"), *w = rx_call_attr(d, "pad_width");
    const rx_attr *v = rx_call_attr(d, "pad_value");
    rx_dtype dt = dtype_of(d->args[0]);
    if (!m || m->kind != RX_A_STR || strcmp(m->u.s, "constant") || !w || w->kind != RX_A_ARRAY ||
        w->u.arr.n != 8 || !v || v->kind != RX_A_FLOAT || (dt != RX_DT_U8 && dt != RX_DT_I8))
        return NULL;
    int64_t pw[8];
    for (int i = 0; i < 8; i++) {
        if (w->u.arr.items[i]->kind != RX_A_INT) return NULL;
        pw[i] = w->u.arr.items[i]->u.i;
        if (pw[i] < 0 || (i < 4 && pw[i])) return NULL;
    }
    double val = v->u.f, lo = dt == RX_DT_U8 ? 0 : -128, hi = dt == RX_DT_U8 ? 255 : 127;
    if (val != floor(val) || val < lo || val > hi) return NULL;
    *pi = bind_index(b, x);
    if (*pi < 0) return NULL;
    p[5] = pw[4], p[6] = pw[6], p[10] = (int64_t)val;
    return d->args[0];
}

/* Whether the conv's padding attribute is all zero. */
static bool unpadded(const rx_node *call)
{
    const rx_attr *a = rx_call_attr(call, "padding");
    if (!a || a->kind != RX_A_ARRAY) return false;
    for (int i = 0; i < a->u.arr.n; i++)
        if (a->u.arr.items[i]->kind != RX_A_INT || a->u.arr.items[i]->u.i) return false;
    return true;
}

bool rx_ll_try_qconv(rx_ll_ctx *c, rx_block *b, int j, bool *drop)
{
    rx_binding *cb = &b->bindings[j];
    int64_t p[12] = {0};
    if (!rx_ll_is_op(cb->value, "nn.conv2d") || !lg_qconv_form(cb->value, p)) return false;
    const rx_const *wk = cb->value->args[1]->u.konst;
    int32_t tab[QL_MAXROWS * 64];
    ql_prog *q = calloc(1, sizeof *q);
    RX_ASSERT(q != NULL);
    q->co = wk->shape[0];
    q->tab = q->co <= 64 ? tab : calloc((size_t)(QL_MAXROWS * q->co), sizeof *q->tab);
    RX_ASSERT(q->tab != NULL);
    int pi = -1;
    rx_node *x = cb->value->args[0];
    rx_node *x0 = unpadded(cb->value) ? fold_pad(c, b, x, p, &pi) : NULL;
    /* Step 2: the chain */
    rx_node *cur = cb->var;
    int chain[RX_QE_MAXINSTR * 2 + 2], len = 1;
    chain[0] = j;
    bool f32 = false;
    uint32_t *ibias = calloc((size_t)q->co, sizeof *ibias);
    RX_ASSERT(ibias != NULL);
    bool have_ibias = false;
    for (rx_binding *u; (u = ql_next(c, cur, b, chain[len - 1], drop, q)) != NULL;) {
        rx_node *v = u->value;
        int op = binop(v), at = (int)(u - b->bindings);
        if (!f32) {
            bool per;
            const rx_const *k;
            if (astype_to(v, RX_DT_F32)) {
                if (have_ibias) { /* the program is empty so far: these fit */
                    ql_emit(q, RX_QE_IADD, RX_QE_CHAN, q->rows, 0);
                    for (int64_t o = 0; o < q->co; o++) q->tab[q->rows * q->co + o] = (int32_t)ibias[o];
                    q->rows++;
                    have_ibias = false;
                }
                ql_emit(q, RX_QE_TOF32, RX_QE_CONST, 0, 0);
                f32 = true;
            } else if ((op == RX_QE_ADD || (op == RX_QE_SUB && v->args[0] == cur)) &&
                       chan_const(k = const_of(c, v->args[v->args[0] == cur ? 1 : 0]), RX_DT_I32, q->co, &per) &&
                       v->args[0] != v->args[1]) {
                for (int64_t o = 0; o < q->co; o++) {
                    uint32_t e = (uint32_t)elem32(k, o, per);
                    ibias[o] = op == RX_QE_ADD ? ibias[o] + e : ibias[o] - e;
                }
                have_ibias = true;
            } else {
                break;
            }
        } else if (op >= 0) {
            int ci = v->args[0] == cur ? 0 : 1, kind;
            int64_t index, bits;
            if (v->args[1 - ci] == cur) break;
            rx_node *other = v->args[1 - ci];
            if (!f32_operand(c, q, other, &kind, &index, &bits)) {
                if (!residual(c, b, q, other, cur->sinfo, drop)) break;
                kind = RX_QE_TEMP, index = 0, bits = 0;
            }
            if (!ql_emit(q, op | (ci ? RX_QE_REV : 0), kind, index, bits)) break;
        } else if (rx_ll_is_op(v, "nn.relu") && v->nargs == 1) {
            if (!ql_emit(q, RX_QE_RELU, RX_QE_CONST, 0, 0)) break;
        } else if (rx_ll_is_op(v, "round") && v->nargs == 1) {
            if (!ql_emit(q, RX_QE_ROUND, RX_QE_CONST, 0, 0)) break;
        } else if (astype_to(v, RX_DT_U8) || astype_to(v, RX_DT_I8)) {
            rx_binding *w = ql_next(c, u->var, b, at, drop, q);
            chain[len++] = at;
            cur = u->var;
            if (!w || !astype_to(w->value, RX_DT_F32) ||
                !ql_emit(q, RX_QE_TRUNC8, RX_QE_CONST, 0, dtype_of(v) == RX_DT_I8))
                break; /* the 8-bit result ends the chain */
            at = (int)(w - b->bindings), u = w;
        } else {
            break;
        }
        chain[len++] = at;
        cur = u->var;
    }
    bool any = len > 1;
    if (have_ibias) { /* an i32 result (the chain stopped before TOF32): the addend alone */
        ql_emit(q, RX_QE_IADD, RX_QE_CHAN, q->rows, 0);
        for (int64_t o = 0; o < q->co; o++) q->tab[q->rows * q->co + o] = (int32_t)ibias[o];
        q->rows++;
    }
    free(ibias);
    if (any) { /* Step 3 */
        rx_module *m = c->m;
        int nargs = 5 + q->next;
        rx_node **args = RX_NEWN(m->arena, rx_node *, nargs);
        args[0] = x0 ? x0 : x;
        args[1] = lg_qconv_weight(m, wk, p[11]);
        args[2] = lg_i64_const(m, p, p[11] != 1 ? 12 : 11);
        args[3] = lg_i64_const(m, q->code, 4 * q->n);
        int rows = q->rows ? q->rows : 1;
        rx_const *tk = RX_NEW(m->arena, rx_const);
        int64_t *shape = RX_NEWN(m->arena, int64_t, 1);
        uint8_t *bytes = RX_NEWN(m->arena, uint8_t, 4 * (size_t)(rows * q->co));
        shape[0] = rows * q->co;
        memcpy(bytes, q->tab, 4 * (size_t)(q->rows * q->co));
        *tk = (rx_const){NULL, RX_DT_I32, 1, shape, bytes, 4 * (size_t)shape[0], 0};
        args[4] = rx_n_const(m, tk);
        rx_expr *d = rx_e_int(m->arena, shape[0]);
        args[4]->sinfo = rx_si_tensor(m->arena, RX_DT_I32, 1, &d);
        for (int i = 0; i < q->next; i++) args[5 + i] = q->ext[i];
        rx_ll_put_lib(c, &b->bindings[chain[len - 1]], "rt.qconv2d", args, nargs);
        for (int i = 0; i < len - 1; i++) drop[chain[i]] = true;
        for (int i = 0; i < q->ndrops; i++) drop[q->drops[i]] = true;
        if (pi >= 0) drop[pi] = true;
    }
    if (q->tab != tab) free(q->tab);
    free(q);
    return any;
}
