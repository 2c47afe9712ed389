/*
 * cuda_graph.c — CUDA Graph offloading: marking the regions of kernel launches that can
 * be captured once and replayed (paper §4.6, Figure 17; pipeline step 9).
 *
 * A decode step of a small model on a fast GPU is dominated by launch overhead: dozens
 * of kernels of a few microseconds, each costing the driver several. CUDA Graphs record
 * a stream's launches once (cuStreamBeginCapture ... cuStreamEndCapture) and replay
 * them with one cuGraphLaunch. A replayed graph repeats exactly what was captured: the
 * same kernels, grids and argument values, including every device address. So a region
 * may be captured only where those are the same from call to call, and a dynamic-shape
 * program needs one graph per distinct value of the symbolic variables that change them.
 *
 * What is static. In a graph function after fusion, a binding `v = call_tir(@k, args,
 * out)` is capturable when
 *   - every dimension of its output is a literal, or an expression of symbolic
 *     variables that all have an `upper_bounds` entry: memory planning (lower_vm) then
 *     places v in the static arena at a constant offset (docs/memory.md), so its
 *     address does not depend on the call;
 *   - (v may be the function's result: on a device the result is copied to the host
 *     at the end of the call, and the runtime keeps the device storage it was made in
 *     across calls, like every storage of a module with regions; vm_device.c);
 *   - every argument is a parameter (weights and inputs: the runtime keeps one device
 *     buffer per parameter across calls and uploads into it, vm_device.c), a constant
 *     (uploaded once at load) or a binding variable that is itself static by this rule.
 * A region is a maximal run of at least two consecutive capturable bindings of one
 * dataflow block (one launch gains nothing from a graph). Library calls (cuBLAS) end a
 * region: cuBLAS may allocate a workspace while being captured.
 *
 * The key. A region depends on the symbolic variables its bindings mention (argument
 * and output shapes, tir_vars): their values set grids, scalar arguments and element
 * offsets. The key is that list, in the signature's order; the runtime captures the
 * region once per distinct tuple of their values and replays it after.
 *
 * The mark. Regions are written into the function's attributes, which the text form
 * prints and lower_vm reads:
 *
 *     "cuda_graph": [{"first": "lv3", "last": "lv9", "launches": 7, "key": ["n"]}, ...]
 *
 * lower_vm emits GRAPH_BEGIN (region index, the key's values) before the first
 * binding's instructions and GRAPH_END after the last one's; the VM captures, replays
 * and checks that the addresses really stayed the same (vm_device.c's essay). The pass
 * runs for target cuda only, at opt level 2 and above; `--disable-pass cuda_graph`
 * turns it off, and the artifact then launches every kernel.
 *
 * Cost: one walk over each function's bindings, O(bindings x (arguments + dims x
 * symbolic variables)). Nothing else changes: no binding is moved or rewritten.
 */
#include "relax/pass.h"

#include <stdlib.h>
#include <string.h>

#include "relax/ir.h"

enum { MIN_LAUNCHES = 2 };

typedef struct cg_ctx {
    rx_module *m;
    const rx_func *f;
    bool *stat;       /* by variable id: a static tensor (the essay) */
    int32_t nids;
} cg_ctx;

/* Whether every symbolic variable of e has an upper bound in f (a variable defined
 * by a match_cast, not the signature's, has none). */
static bool bounded(const rx_func *f, const rx_expr *e)
{
    rx_svar_vec vars = {0};
    rx_expr_vars(e, &vars);
    bool ok = true;
    for (int i = 0; i < vars.n && ok; i++) ok = rx_func_upper_bound(f, vars.items[i]) >= 0;
    RX_VEC_FREE(vars);
    return ok;
}

/* A tensor, or a tuple of tensors (a kernel's outputs with its lifted workspaces), of
 * static size. */
static bool static_tensor(const rx_func *f, const rx_sinfo *si)
{
    if (si && si->kind == RX_SI_TUPLE) {
        for (int i = 0; i < si->nfields; i++)
            if (!static_tensor(f, si->fields[i])) return false;
        return si->nfields > 0;
    }
    if (!si || si->kind != RX_SI_TENSOR || si->ndim < 0 || !si->dims) return false;
    for (int i = 0; i < si->ndim; i++)
        if (!bounded(f, si->dims[i])) return false;
    return true;
}

static bool id_ok(const cg_ctx *c, const rx_node *v)
{
    return v && v->kind == RX_N_VAR && v->u.var.id >= 0 && v->u.var.id < c->nids;
}

/* What binding bd is to a region (the essay): NOT capturable, a LAUNCH that is, or
 * TRANSPARENT (`v = t[i]` of a static tuple: no launch, a register copy). Records a
 * static variable. */
enum { NOT = 0, LAUNCH = 1, TRANSPARENT = 2 };

static int capturable(cg_ctx *c, const rx_binding *bd)
{
    const rx_node *v = bd->value;
    if (bd->match_cast || !v || !id_ok(c, bd->var)) return NOT;
    if (v->kind == RX_N_GET_ITEM && id_ok(c, v->args[0]) && c->stat[v->args[0]->u.var.id]) {
        c->stat[bd->var->u.var.id] = true;
        return TRANSPARENT;
    }
    if (v->kind != RX_N_CALL || v->call_kind != RX_CALL_TIR) return NOT;
    if (!static_tensor(c->f, bd->var->sinfo)) return NOT;
    for (int i = 0; i < v->nargs; i++) {
        const rx_node *a = v->args[i];
        if (a->kind == RX_N_CONST) continue;
        if (!id_ok(c, a) || !c->stat[a->u.var.id]) return NOT;
    }
    c->stat[bd->var->u.var.id] = true;
    return LAUNCH;
}

static bool sinfo_uses(const rx_sinfo *si, const rx_svar *s)
{
    if (si && si->kind == RX_SI_TUPLE) {
        for (int i = 0; i < si->nfields; i++)
            if (sinfo_uses(si->fields[i], s)) return true;
        return false;
    }
    if (!si || si->kind != RX_SI_TENSOR || !si->dims) return false;
    for (int i = 0; i < si->ndim; i++)
        if (rx_expr_uses_var(si->dims[i], s)) return true;
    return false;
}

/* Whether binding bd mentions symbolic variable s (shapes of its operands and result,
 * its tir_vars). */
static bool binding_uses(const rx_binding *bd, const rx_svar *s)
{
    const rx_node *v = bd->value;
    if (sinfo_uses(bd->var->sinfo, s)) return true;
    if (v->kind != RX_N_CALL) return false;
    for (int i = 0; i < v->nargs; i++)
        if (sinfo_uses(v->args[i]->sinfo, s)) return true;
    for (int i = 0; i < v->u.call.ntir_vars; i++)
        if (rx_expr_uses_var(v->u.call.tir_vars[i], s)) return true;
    return false;
}

static rx_attr *attr_new(rx_module *m, rx_akind k)
{
    rx_attr *a = RX_NEW(m->arena, rx_attr);
    a->kind = (uint8_t)k;
    return a;
}

static rx_attr *attr_str(rx_module *m, const char *s)
{
    rx_attr *a = attr_new(m, RX_A_STR);
    a->u.s = s;
    return a;
}

/* The region's mark: {"first", "last", "launches", "key"} over bindings [i, j] with
 * `launches` kernel launches. */
static rx_attr *region_attr(cg_ctx *c, const rx_block *b, int i, int j, int launches)
{
    rx_module *m = c->m;
    rx_attr *key = attr_new(m, RX_A_ARRAY);
    key->u.arr.items = RX_NEWN(m->arena, rx_attr *, c->f->nsvars + 1);
    for (int s = 0; s < c->f->nsvars; s++) {
        bool uses = false;
        for (int k = i; k <= j && !uses; k++) uses = binding_uses(&b->bindings[k], c->f->svars[s]);
        if (uses) key->u.arr.items[key->u.arr.n++] = attr_str(m, c->f->svars[s]->name);
    }
    rx_attr *n = attr_new(m, RX_A_INT);
    n->u.i = launches;
    static const char *const keys[] = {"first", "last", "launches", "key"};
    rx_attr *r = attr_new(m, RX_A_MAP);
    r->u.map.keys = RX_NEWN(m->arena, const char *, 4);
    r->u.map.vals = RX_NEWN(m->arena, rx_attr *, 4);
    rx_attr *vals[] = {attr_str(m, b->bindings[i].var->u.var.name),
                       attr_str(m, b->bindings[j].var->u.var.name), n, key};
    for (int k = 0; k < 4; k++) r->u.map.keys[k] = keys[k], r->u.map.vals[k] = vals[k];
    r->u.map.n = 4;
    return r;
}

/* f->attrs with "cuda_graph" set to regions (a new map; other entries kept, an old
 * "cuda_graph" replaced). */
static void set_regions(rx_module *m, rx_func *f, rx_attr *regions)
{
    rx_attr *old = f->attrs && f->attrs->kind == RX_A_MAP ? f->attrs : NULL;
    int n = old ? old->u.map.n : 0, k = 0;
    rx_attr *map = attr_new(m, RX_A_MAP);
    map->loc = old ? old->loc : 0;
    map->u.map.keys = RX_NEWN(m->arena, const char *, n + 1);
    map->u.map.vals = RX_NEWN(m->arena, rx_attr *, n + 1);
    for (int i = 0; i < n; i++)
        if (strcmp(old->u.map.keys[i], "cuda_graph")) {
            map->u.map.keys[k] = old->u.map.keys[i];
            map->u.map.vals[k++] = old->u.map.vals[i];
        }
    map->u.map.keys[k] = "cuda_graph";
    map->u.map.vals[k++] = regions;
    map->u.map.n = k;
    f->attrs = map;
}

static void mark_function(rx_module *m, rx_func *f)
{
    cg_ctx c = {m, f, NULL, m->next_id};
    c.stat = calloc((size_t)c.nids + 1, sizeof *c.stat);
    RX_ASSERT(c.stat);
    for (int i = 0; i < f->nparams; i++)
        if (id_ok(&c, f->params[i])) c.stat[f->params[i]->u.var.id] = true;
    RX_VEC(rx_attr *) regions = {0};
    for (int bi = 0; bi < f->body->nblocks; bi++) {
        const rx_block *b = f->body->blocks[bi];
        if (!b->dataflow) continue;
        for (int i = 0; i < b->nbindings;) {
            int j = i, launches = 0, last = -1, k;
            while (j < b->nbindings && (k = capturable(&c, &b->bindings[j])) != NOT) {
                if (k == LAUNCH) launches++, last = j;
                j++;
            }
            /* from the first launch to the last (a region neither starts nor ends with a
             * register copy) */
            int first = i;
            while (first < last && b->bindings[first].value->kind == RX_N_GET_ITEM) first++;
            if (launches >= MIN_LAUNCHES)
                RX_VEC_PUSH(regions, region_attr(&c, b, first, last, launches));
            i = j > i ? j : i + 1;
        }
    }
    if (regions.n) {
        rx_attr *arr = attr_new(m, RX_A_ARRAY);
        arr->u.arr.items = RX_NEWN(m->arena, rx_attr *, regions.n);
        memcpy(arr->u.arr.items, regions.items, sizeof *regions.items * (size_t)regions.n);
        arr->u.arr.n = regions.n;
        set_regions(m, f, arr);
    }
    RX_VEC_FREE(regions);
    free(c.stat);
}

bool rx_pass_cuda_graph(rx_module *m, rx_diags *d)
{
    (void)d;
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->kind == RX_F_RELAX && m->funcs[i]->body) mark_function(m, m->funcs[i]);
    m->unchanged = true; /* attributes only: no binding to deduce again */
    return true;
}
