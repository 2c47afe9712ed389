/*
 * concat_place.c — plan.c's Step 0: the fields of an rt.concat written in place, by their
 * producers, inside the concat's output, so the call copies nothing.
 *
 * An rt.concat's output y (plannable, on the CPU) whose leading extents (those before
 * the axis) are 1 is, per field, one contiguous run of bytes, so a field made by a DPS
 * call (a convolution, a generated kernel; also through a copy or match_cast of it) can
 * be made inside y's storage at its place and runtime/library_concat.c skips it (a
 * pointer equal to its place: no copy). A field qualifies when it is its call's only
 * output, plannable, of y's body, passed once, not itself a concat's output, and — when
 * the call has an epilogue (flags: scale, shift, relu, applied in place then) — read by
 * nothing after the call. y then lives from its earliest placed field's definition to
 * the last use of any of them (its points are widened; the fields take no storage of
 * their own). With a static y (the arena) the leading extents must be the constant 1
 * and the offsets constants; with a symbolic y (the pool) the leading extents may be a
 * symbolic count O (the batch of every exported CNN: b, 1 at run time in the cases
 * measured): with g = max(0, min(1, O - 1)), 0 at O = 1 and 1 beyond, field k lies at
 * here_k + g * (after_k - here_k) — its place in y, or past y's bytes where the call
 * copies it from — in a storage of bytes(y) + g * (the placed fields' bytes), the
 * storage of its own size (vg_storage.whole) and the offsets computed by the VM
 * (vg_alloc.offset_expr), every variable they use one the signature defines (known from
 * the entry on).
 *
 * Which fields: placing a field early (a UNet skip connection, made long before the
 * rest of its concat) holds all of y's bytes from then on, so the rule probes: each
 * plannable tensor's bytes at one binding of the variables (1 for the leading extents'
 * ones, 64 or the upper bound for the rest), the bytes live at each program point, and
 * for each concat the count k of its placeable fields, the latest made first, whose
 * placement gives the least peak (ties: more fields), none if every k raises it.
 *
 * Measured (torch.onnx exports with dynamic axes, run at batch 1 by relax-run
 * --profile, main's build in the same run, load 3-9 on 2 cores): rt.concat per call
 * SqueezeNet 0.09-0.22 ms -> 0.001 ms (of ~1 ms), YOLO C2f 640 0.05-0.6 -> 0.002 ms,
 * UNet 256x264 3.3-4.0 -> 0.7-1.5 ms (three of its four fields in place, the full-
 * resolution skip copied); end to end the difference is within that load's noise. Peak
 * bytes: UNet 60.6 -> 51.9 MB; SqueezeNet, C2f, DenseNet unchanged (DenseNet's concats
 * place nothing: each field is read by every later layer's concat, and those have an
 * epilogue). Placing the full-resolution skip as well raised UNet's peak to 69.2 MB,
 * which the probe refuses. At batch 2 (the fields past the output, copied) UNet's peak
 * is 7% higher (121.1 -> 129.8 MB: the up-path concat's storage, its bytes and its
 * fields', is held from the half-resolution skip's definition; the probe looks at batch
 * 1 only); SqueezeNet and C2f unchanged. Per kernel (fastest call of 45, both builds
 * interleaved): rt.concat 26 -> 0.7 us SqueezeNet, 36 -> 0.9 C2f; C2f's SPPF max pools,
 * each reading one field and writing the next inside the concat, 76 -> 104 us a call
 * (plausibly 4K aliasing: the two are 430080 = 105 x 4096 bytes apart), a net gain of 8
 * us there. Cost: the probe is O(points) per count tried.
 */
#include "vg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct cctx {
    vg_fn *F;
    vg_plan *P;
    int32_t *host;  /* alloc -> the rt.concat output it is placed inside, -1 */
    rx_expr **off;  /* alloc placed so -> its byte offset in the output's storage */
    rx_expr **size; /* rt.concat output with fields inside -> its storage's bytes */
} cctx;

/* def[id] = the value bound to VAR id in seq s and its branches; src[id] = the
 * variable a copy or match_cast binding id repeats (-1: none). */
static void defs_of(const rx_seq *s, const rx_node **def, int32_t *src, int32_t nids)
{
    for (int b = 0; b < s->nblocks; b++)
        for (int i = 0; i < s->blocks[b]->nbindings; i++) {
            const rx_binding *bd = &s->blocks[b]->bindings[i];
            int32_t id = bd->var->u.var.id;
            if (id < 0 || id >= nids) continue;
            if (!bd->match_cast) def[id] = bd->value;
            if (bd->value && bd->value->kind == RX_N_VAR && bd->value->u.var.id >= 0 &&
                bd->value->u.var.id < nids)
                src[id] = bd->value->u.var.id;
            if (bd->value && bd->value->kind == RX_N_IF) {
                defs_of(bd->value->u.if_.then_body, def, src, nids);
                defs_of(bd->value->u.if_.else_body, def, src, nids);
            }
        }
}

/* The product of si's dims [lo, hi) times k (rx_e, unsimplified). */
static rx_expr *dims_product(rx_arena *ar, const rx_sinfo *si, int lo, int hi, int64_t k)
{
    rx_expr *e = rx_e_int(ar, k);
    for (int d = lo; d < hi; d++) e = rx_e_binary(ar, RX_E_MUL, e, si->dims[d]);
    return e;
}

/* The axis and flags of rt.concat call n on the CPU (its output a dense tensor of whole
 * bytes); false otherwise. */
static bool concat_call(const rx_node *n, int64_t *axis, int64_t *flags)
{
    if (!n || n->kind != RX_N_CALL || n->call_kind != RX_CALL_LIB || !n->u.call.lib ||
        strcmp(n->u.call.lib, "rt.concat") != 0 || n->nargs < 3 || n->args[0]->kind != RX_N_CONST)
        return false;
    const rx_const *k = n->args[0]->u.konst;
    const rx_sinfo *o = n->u.call.out;
    if (k->dtype != RX_DT_I64 || k->nbytes != 16 || !o || o->kind != RX_SI_TENSOR || !o->dims)
        return false;
    uint64_t v[2] = {0, 0};
    for (int i = 0; i < 16; i++) v[i / 8] |= (uint64_t)k->data[i] << (8 * (i % 8));
    *axis = (int64_t)v[0], *flags = (int64_t)v[1];
    int bits = rx_dtype_bits((rx_dtype)o->dtype);
    return *axis >= 0 && *axis < o->ndim && *flags >= 0 && *flags <= 7 && bits >= 8 && bits % 8 == 0;
}

/* Whether every variable of e is one the function's signature defines (its value is
 * known from the entry on, wherever the tensor using e is made). */
static bool entry_vars(const rx_func *f, const rx_expr *e)
{
    rx_svar_vec vs = {0};
    rx_expr_vars(e, &vs);
    bool ok = true;
    for (int i = 0; i < vs.n && ok; i++) {
        ok = false;
        for (int j = 0; j < f->nsvars && !ok; j++) ok = f->svars[j] == vs.items[i];
    }
    RX_VEC_FREE(vs);
    return ok;
}

/* Whether alloc a (the tensor of VAR x) may live inside concat output y (alloc yi): its
 * own DPS call's one output, plannable, in y's body, not a concat output itself, not
 * placed already, passed once; with an epilogue (flags) the call rewrites it, so nothing
 * may read it after the call. */
static bool field_ok(const cctx *c, const rx_node *n, int k, int first, int32_t id, int32_t fi,
                     int32_t yi, const bool *root, int64_t flags)
{
    const vg_plan *P = c->P;
    const vg_alloc *a = &P->allocs.items[fi], *y = &P->allocs.items[yi];
    const rx_node *x = n->args[k];
    for (int j = first; j < n->nargs; j++)
        if (j != k && n->args[j] == x) return false;
    return fi != yi && !root[fi] && c->host[fi] < 0 && a->var == id && a->field < 0 &&
           vg_plannable(P, a) && a->body == y->body && (!flags || a->tick1 <= y->tick0);
}

/* The probe (Step 0's rule): each plannable tensor's bytes at one binding of the
 * symbolic variables, and the bytes live at each program point. */
typedef struct probe {
    int64_t *bytes; /* alloc -> bytes at the probe, -1 unknown */
    int64_t *live;  /* program point -> bytes live there */
    int64_t n;      /* program points */
} probe;

enum { PROBE_EXTENT = 64 }; /* a symbolic extent's value at the probe */

/* Binds each variable of the signature: 1 for those an rt.concat's leading extents use
 * (the batch: the case its fields lie in place), else PROBE_EXTENT or its upper bound. */
static void probe_make(cctx *c, probe *pr, const rx_node *const *def)
{
    vg_fn *F = c->F;
    vg_plan *P = c->P;
    const rx_func *f = F->f;
    rx_arith *ar = rx_arith_new(F->M->m->arena);
    rx_svar_vec batch = {0};
    int64_t axis, flags;
    for (int32_t i = 0; i < P->allocs.n; i++) {
        const vg_alloc *y = &P->allocs.items[i];
        if (y->var >= 0 && concat_call(def[y->var], &axis, &flags)) {
            const rx_sinfo *o = def[y->var]->u.call.out;
            for (int d = 0; d < axis; d++) rx_expr_vars(o->dims[d], &batch);
        }
    }
    for (int i = 0; i < f->nsvars; i++) {
        int64_t v = PROBE_EXTENT, ub = rx_func_upper_bound(f, f->svars[i]);
        for (int j = 0; j < batch.n; j++)
            if (batch.items[j] == f->svars[i]) v = 1;
        if (ub >= 0 && ub < v) v = ub;
        rx_arith_bind_range(ar, f->svars[i], v, v);
    }
    RX_VEC_FREE(batch);
    pr->n = F->nticks;
    pr->bytes = rx_xmalloc(sizeof(int64_t) * ((size_t)P->allocs.n + 1));
    pr->live = rx_xcalloc((size_t)pr->n + 1, sizeof(int64_t));
    for (int32_t i = 0; i < P->allocs.n; i++) {
        const vg_alloc *a = &P->allocs.items[i];
        int64_t lo = 0, hi = 0;
        if (a->bytes) rx_arith_const_bound(ar, a->bytes, &lo, &hi);
        pr->bytes[i] = lo == hi && hi >= 0 && hi < INT64_MAX / 4 ? hi : -1;
        if (vg_plannable(P, a) && pr->bytes[i] > 0)
            for (int64_t t = a->tick0; t <= a->tick1 && t < pr->n; t++) pr->live[t] += pr->bytes[i];
    }
    rx_arith_free(ar);
}

/* Adds sign x bytes to the probe's points [t0, t1]. */
static void probe_add(probe *pr, int64_t t0, int64_t t1, int64_t bytes, int sign)
{
    for (int64_t t = t0 < 0 ? 0 : t0; t <= t1 && t < pr->n; t++) pr->live[t] += sign * bytes;
}

/* Moves the members (allocs m[0..k)) of host h inside it at the probe (sign 1), or
 * back (-1): each member's own bytes leave, the host's cover its widened points. */
static void probe_group(probe *pr, const vg_plan *P, int32_t h, const int32_t *m, int k, int sign)
{
    const vg_alloc *y = &P->allocs.items[h];
    int64_t t0 = y->tick0, t1 = y->tick1;
    for (int j = 0; j < k; j++) {
        const vg_alloc *a = &P->allocs.items[m[j]];
        probe_add(pr, a->tick0, a->tick1, pr->bytes[m[j]], -sign);
        if (a->tick0 < t0) t0 = a->tick0;
        if (a->tick1 > t1) t1 = a->tick1;
    }
    probe_add(pr, t0, y->tick0 - 1, pr->bytes[h], sign);
    probe_add(pr, y->tick1 + 1, t1, pr->bytes[h], sign);
}

static int64_t probe_peak(const probe *pr)
{
    int64_t m = 0;
    for (int64_t t = 0; t < pr->n; t++)
        if (pr->live[t] > m) m = pr->live[t];
    return m;
}

/* How many of the placeable fields (allocs in m[0..n), latest made first) to place in
 * host h: the count whose probe peak is least (ties: more fields, fewer copies), 0 when
 * every count raises the peak. Leaves the chosen ones applied to the probe. */
static int probe_choose(probe *pr, const vg_plan *P, int32_t h, const int32_t *m, int n)
{
    if (pr->bytes[h] < 0) return 0;
    for (int j = 0; j < n; j++)
        if (pr->bytes[m[j]] < 0) return 0;
    int64_t best = probe_peak(pr);
    int bk = 0;
    for (int k = 1; k <= n; k++) {
        probe_group(pr, P, h, m, k, 1);
        int64_t peak = probe_peak(pr);
        probe_group(pr, P, h, m, k, -1);
        if (peak <= best) best = peak, bk = k;
    }
    if (bk) probe_group(pr, P, h, m, bk, 1);
    return bk;
}

void vg_concat_fields(vg_fn *F, vg_plan *P, int32_t *host, rx_expr **off, rx_expr **size)
{
    cctx cc = {F, P, host, off, size}, *c = &cc;
    rx_arena *ar = F->M->m->arena;
    for (int32_t i = 0; i < P->allocs.n; i++) c->host[i] = -1, c->off[i] = c->size[i] = NULL;
    if (F->M->dev_type != RX_DEV_CPU) return;
    const rx_node **def = rx_xcalloc((size_t)F->nids, sizeof *def);
    int32_t *src = rx_xmalloc(sizeof(int32_t) * (size_t)F->nids);
    bool *root = rx_xcalloc((size_t)P->allocs.n + 1, sizeof *root);
    for (int32_t i = 0; i < F->nids; i++) src[i] = -1;
    defs_of(F->f->body, def, src, F->nids);
    int64_t axis, flags, v;
    int nroots = 0;
    for (int32_t i = 0; i < P->allocs.n; i++) {
        const vg_alloc *y = &P->allocs.items[i];
        root[i] = vg_plannable(P, y) && y->field < 0 && concat_call(def[y->var], &axis, &flags);
        nroots += root[i];
    }
    probe pr = {0};
    if (nroots) probe_make(c, &pr, def);
    for (int32_t i = 0; i < P->allocs.n; i++) {
        if (!root[i]) continue;
        vg_alloc *y = &P->allocs.items[i];
        const rx_node *n = def[y->var];
        const rx_sinfo *o = n->u.call.out;
        concat_call(n, &axis, &flags);
        int nx = (int)(flags & 1) + (int)((flags >> 1) & 1), ax = (int)axis, nf = n->nargs - 1 - nx;
        int64_t eb = rx_dtype_bits((rx_dtype)o->dtype) / 8;
        /* The extents before the axis: 1, or (the symbolic pool only) a count whose
         * value is 1 when called: g = 0 then, and 1 past it, where each field lies after
         * the output in the storage instead (and the call copies it). */
        rx_expr *outer = rx_arith_simplify(F->ar, dims_product(ar, o, 0, ax, 1)), *g = NULL;
        rx_expr *inner = dims_product(ar, o, ax + 1, o->ndim, eb);
        rx_expr *ybytes = rx_arith_simplify(F->ar, dims_product(ar, o, 0, o->ndim, eb));
        if (!rx_expr_is_const(outer, &v)) {
            if (y->bound >= 0 || !entry_vars(F->f, outer)) continue;
            g = rx_e_binary(ar, RX_E_MAX, rx_e_int(ar, 0),
                            rx_e_binary(ar, RX_E_MIN, rx_e_int(ar, 1), rx_e_binary(ar, RX_E_SUB, outer, rx_e_int(ar, 1))));
        } else if (v != 1) {
            continue;
        }
        if (!entry_vars(F->f, ybytes)) continue;
        /* Each field: its place in y (here), bytes, and alloc when placeable (fa; m: the
         * placeable ones, latest made first). */
        int32_t *fa = rx_xmalloc(sizeof(int32_t) * 2 * (size_t)nf), *m = fa + nf, nm = 0;
        rx_expr **here = rx_xmalloc(sizeof(rx_expr *) * 2 * (size_t)nf), **fbytes = here + nf;
        rx_expr *at = rx_e_int(ar, 0);
        for (int k = 0; k < nf; k++) {
            const rx_node *x = n->args[1 + nx + k];
            const rx_sinfo *si = x->sinfo;
            fa[k] = -1;
            here[k] = fbytes[k] = NULL;
            if (!si || si->kind != RX_SI_TENSOR || !si->dims || si->ndim != o->ndim) {
                at = NULL;
                continue;
            }
            if (at) {
                here[k] = rx_arith_simplify(F->ar, at);
                at = rx_e_binary(ar, RX_E_ADD, at, rx_e_binary(ar, RX_E_MUL, si->dims[ax], inner));
            }
            fbytes[k] = rx_arith_simplify(F->ar, dims_product(ar, si, 0, o->ndim, eb));
            if (!here[k] || !entry_vars(F->f, here[k]) || !entry_vars(F->f, fbytes[k]) ||
                (y->bound >= 0 && !rx_expr_is_const(here[k], &v)) || x->kind != RX_N_VAR ||
                x->u.var.id < 0 || x->u.var.id >= F->nids)
                continue;
            int32_t id = x->u.var.id;
            for (int hops = 0; src[id] >= 0 && hops < F->nids; hops++) id = src[id]; /* copies */
            int32_t fi = P->first_alloc[id];
            if (fi < 0 || !field_ok(c, n, 1 + nx + k, 1 + nx, id, fi, i, root, flags)) continue;
            fa[k] = fi;
            int j = nm++;
            for (; j > 0 && P->allocs.items[m[j - 1]].tick0 < P->allocs.items[fi].tick0; j--)
                m[j] = m[j - 1];
            m[j] = fi;
        }
        int take = probe_choose(&pr, P, i, m, nm);
        rx_expr *after = ybytes; /* past y and the fields placed so far (g = 1) */
        for (int k = 0; k < nf; k++) {
            bool in = false;
            for (int j = 0; j < take; j++) in |= m[j] == fa[k];
            if (!in) continue;
            /* offset g ? after : here, as arithmetic: here + g * (after - here) */
            rx_expr *o_k = g ? rx_e_binary(ar, RX_E_ADD, here[k],
                                           rx_e_binary(ar, RX_E_MUL, g, rx_e_binary(ar, RX_E_SUB, after, here[k])))
                             : here[k];
            c->host[fa[k]] = i;
            c->off[fa[k]] = rx_arith_simplify(F->ar, o_k);
            after = rx_e_binary(ar, RX_E_ADD, after, fbytes[k]);
        }
        if (take) /* the storage: y, then (g = 1) the fields placed after it */
            c->size[i] = rx_arith_simplify(
                F->ar, g ? rx_e_binary(ar, RX_E_ADD, ybytes, rx_e_binary(ar, RX_E_MUL, g, rx_e_binary(ar, RX_E_SUB, after, ybytes)))
                         : ybytes);
        free(fa), free(here);
    }
    for (int32_t i = 0; i < P->allocs.n; i++) {
        int32_t h = c->host[i];
        if (h < 0) continue;
        vg_alloc *y = &P->allocs.items[h], *a = &P->allocs.items[i];
        if (a->tick0 < y->tick0) y->tick0 = a->tick0;
        if (a->tick1 > y->tick1) y->tick1 = a->tick1;
    }
    free(pr.bytes), free(pr.live);
    free(def), free(src), free(root);
}

