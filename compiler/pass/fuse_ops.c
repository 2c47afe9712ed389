/*
 * fuse_ops.c — pipeline step 5: FuseOps (paper §4.2, Algorithm 2 "FuseOps in Relax";
 * Figure 8's extra symbolic parameter; Relay's post-dominator grouping, Relay paper
 * §4.1). The call_tir bindings of each dataflow block are partitioned into groups by
 * the compute patterns of their loop functions (Algorithm 1, analysis.c), and every
 * group of two or more becomes one call of a new graph function marked "primitive",
 * which FuseTIR (fuse_tir.c) then merges into one loop function.
 *
 * Algorithm 2 loops over graph functions and fusion patterns, matches each pattern
 * (CrossLevelPatternMatch), builds a subgraph function with symbolic shapes preserved
 * (NewFuncWithSymShapePreserved) and replaces the match by a call of it. Here the
 * "patterns" are the pattern-kind rules of step 3, matched the way Relay does: by
 * walking the post-dominator tree of the block's dataflow graph, so that chains,
 * diamonds and epilogues of any length are matched without enumerating them.
 *
 * Step 1: the dataflow graph of each dataflow block. Its nodes are the block's call_tir
 *         bindings; a node is Opaque (never fused) when its loop function's
 *         compute_pattern is Opaque, its `out` is a tuple, or an operand has no
 *         annotation. Edge u -> v when v's call reads u's variable; the edge's kind is
 *         v's kind, except that a Broadcast v reading u at v's own shape counts as
 *         ElementWise (Relay's shape-preserving broadcast: the bias add after a
 *         matmul). A node is external when its variable is used by anything but a
 *         call_tir of the same block: another binding (op call, call_dps_library,
 *         graph call, tuple, get_item, match_cast), another block, an if, a result.
 *         Missing compute_pattern attributes are computed (rx_analyze_pattern).
 * Step 2: the post-dominator tree, nodes in reverse binding order (A-normal form is a
 *         topological order): a node's immediate post-dominator is the least common
 *         ancestor, by depth, of its consumers; external and unused nodes are roots.
 *         Each node also records the max edge kind on the paths to its post-dominator.
 * Step 3: groups (union-find; a group is represented by its root, the member that
 *         post-dominates the others, i.e. its only output; a group's kind is the max of
 *         its members'). A group root r with post-dominator p outside its group fuses
 *         into p's group when the rule for r's group kind holds; then every node on a
 *         path from r to p joins too ("CheckPath/CommitFuse"). "Inner" below means a
 *         node on those paths outside p's group, "sink" p's group, "edges" the max
 *         edge kind on the paths.
 *           phase 1  OutputEwiseFusible: edges ElementWise, inner and sink <= Broadcast
 *                    (matmul + bias + relu epilogues);
 *                    <= Broadcast: edges <= Reduction, inner <= Injective, sink not
 *                    Opaque (elementwise chains and diamonds, elementwise prologues of
 *                    reductions, elementwise inputs of a matmul's epilogue);
 *           phase 2  repeated until nothing fuses: the <= Broadcast rule again, and for
 *                    Injective and Reduction groups: edges <= Reduction, inner <=
 *                    Injective, sink <= Reduction (injective chains and prologues of
 *                    reductions; reductions with elementwise epilogues and reductions
 *                    chained through elementwise ops, e.g. the pieces of a softmax);
 *           phase 3  Figure 9: a group <= Injective whose root's only consumer is an
 *                    OutputEwiseFusible node joins that node's group as its prologue
 *                    (a user-written decode_q4 before a matmul).
 *         The recompute rule bounds phases 1 and 2: a group of kind <= Injective whose
 *         members cost RECOMPUTE_MIN or more per element (fuse_cost.c: one per
 *         operation on values, 8 per math call or gather; plain loads and address
 *         arithmetic free; summed over the members' loop functions) does not
 *         fuse when the fused kernel would evaluate it more than once per element: a
 *         consumer of its root has at least twice its elements (a broadcast, a gather's
 *         rows: T5's (s, s) position bucket read per head) or the target group reads an
 *         input in several passes (a member loads one parameter twice or more: softmax's
 *         max and exp passes). It is materialized instead; cheap producers (a causal
 *         mask, a scale) still fuse. A group that reads a tensor transposed (its
 *         innermost axis moved: fuse_cost.c) is materialized at any cost when the
 *         target group reads in several passes: each pass would stride through
 *         memory, where the transpose alone is one tiled copy (schedule_copy.c) and the
 *         passes read rows (ConvNeXt's NCHW -> NHWC permute before its layer_norm).
 *         "Larger" is checked against the direct consumer and against the target
 *         group's root (a cheap relu already fused into a 2x resize: the norm before
 *         it is then evaluated per element of the resize), the cost being then the
 *         group's plus the target members' read over that larger space; symbolic dims
 *         are compared with the prover (fuse_cost.c). A Reduction group obeys the rule
 *         too with the cost of its members but the reductions (FuseTIR keeps a
 *         reduction's value in a buffer, the rest is inlined where the root is read);
 *         a group whose root is the reduction itself keeps fusing into its epilogue.
 *         Phase 3 is left alone (Figure 9).
 *         Injective groups wait for phase 2 so that matmul epilogues are complete
 *         first (as in Relay). A group never exceeds MAX_GROUP nodes, nor, under a
 *         target's argument limit (vulkan's push constants), its bytes (fuse_args.c;
 *         phase 3 too). Invariant: every
 *         member but the root has all its uses inside the group, so a group has one
 *         output, and its root is bound last.
 * Step 4: per group (roots in binding order) the primitive function: named
 *         fused_<f1>_..._<fk> after the loop functions in binding order (truncated,
 *         made unique), attrs {"primitive": true}; params: the external inputs in
 *         first-use order (constants included), then, when the group's annotations or
 *         tir_vars need symbolic variables that no tensor parameter carries as a whole
 *         dim (Figure 8's n under 2 * n, Llama's c under c + 1), one Shape parameter
 *         R.Shape([v1, ...]) passing them; body: one dataflow block of the group's
 *         call_tir bindings in order, every symbolic variable replaced by the
 *         function's own (fresh per function); result: the root's value. Identical
 *         groups share one function (structural hash of the function, its name
 *         blanked, as legalize shares loop functions): the 32 layers of a Llama call
 *         the same ones.
 * Step 5: the block: the root's binding becomes `root = @fused(inputs..., shape(v1,
 *         ...))`, keeping its variable and written annotation; the other members'
 *         bindings disappear. The module is deduced again when anything changed.
 *
 * Never touched: blocks that are not dataflow, functions marked primitive (so a second
 * run changes nothing), op calls left by legalize (unique, nonzero, shape_of),
 * call_dps_library, graph calls. Left to FuseTIR: merging each primitive function's
 * loop functions; loop functions no longer called directly stay in the module.
 * Cost: linear in the bindings for steps 1, 4 and 5; each fusion attempt walks the
 * paths to one post-dominator (bounded by the group size in practice) and least
 * common ancestors climb the tree, so a block costs about O(nodes * depth) at worst.
 */
#include <string.h>

#include "relax/deduce.h"
#include "relax/pass.h"
#include "relax/text.h"

#include "fuse_args.h"
#include "fuse_cost.h"

enum {
    MAX_GROUP = 64,     /* nodes per group (bounds fused functions and FuseTIR's work) */
    MAX_NAME = 64,      /* characters of a fused function's name before the uniquifier */
    RECOMPUTE_MIN = 8   /* per-element cost from which a reused producer is materialized */
};

/* ---------------------------------------------------------------- the graph */

typedef struct fnode {
    rx_binding *b;  /* the call_tir binding */
    int32_t pos;    /* its index in the block */
    uint8_t pat;    /* rx_pattern of its loop function (Opaque when not fusible) */
    bool ext;       /* its value is used by something other than this block's call_tir */
    int32_t out0;   /* its consumers are edges[out0 .. out0 + nout) */
    int32_t nout;   /* number of consumer edges (an operand read twice counts twice) */
    int32_t dom;    /* immediate post-dominator (node index), -1 when none */
    int32_t depth;  /* depth in the post-dominator tree, 1 for a root */
    uint8_t dpat;   /* max edge kind on the paths to dom */
    int32_t uf;     /* union-find parent; a representative is its group's root node */
    int32_t size;   /* representative: number of members */
    uint8_t gpat;   /* representative: max kind of the members */
    int32_t mark;   /* visit stamp of check_path */
    int32_t gmark;  /* representative: stamp of the group-size count */
    int32_t cost;   /* per-element cost of its loop function (recompute rule), -1 unknown */
    int32_t passes; /* the most loads of one parameter in its loop function (with cost) */
} fnode;

typedef struct fedge {
    int32_t to;     /* consumer node */
    uint8_t pat;    /* edge kind */
} fedge;

typedef struct fgraph {
    fnode *n;                /* nodes in binding order (heap) */
    int32_t nn;              /* number of nodes */
    fedge *e;                /* consumer edges, grouped by producer (heap) */
    int32_t stamp;           /* current visit stamp */
    RX_VEC(int32_t) seen;    /* nodes the last check_path visited */
    rx_arith *ar;            /* the pass's prover (recompute rule: symbolic dims) */
    rx_arena *tmp;           /* its terms */
    const rx_fuse_limit *lim; /* the target's argument limit (fuse_args.c), or NULL */
} fgraph;

/* A shared primitive function and its hash. */
typedef struct fshared {
    uint8_t hash[32]; /* func_hash of the function */
    rx_func *fn;      /* the primitive function */
} fshared;

typedef struct fo_ctx {
    rx_module *m;
    int32_t nids;            /* variable ids below this have entries in the arrays */
    rx_block **def_block;    /* var id -> the block binding it (NULL: a parameter) */
    int32_t *def_node;       /* var id -> node index in its block's graph, or -1 */
    bool *ext;               /* var id -> used other than as a call_tir operand of its block */
    RX_VEC(fshared) shared;  /* primitive functions made by this run */
    RX_VEC(rx_func *) added; /* ... in creation order, appended to the module at the end */
    int fused;               /* groups replaced */
    rx_arena *tmp;           /* terms of the recompute rule's proofs */
    rx_arith *ar;            /* their prover */
    const rx_fuse_limit *lim; /* the target's argument limit, or NULL */
} fo_ctx;

static rx_pattern pmax(rx_pattern a, rx_pattern b) { return a > b ? a : b; }

static bool var_ok(const fo_ctx *c, const rx_node *v)
{
    return v && v->kind == RX_N_VAR && v->u.var.id >= 0 && v->u.var.id < c->nids;
}

static bool is_primitive(const rx_func *f)
{
    const rx_attr *p = rx_attr_map_get(f->attrs, "primitive");
    return p && ((p->kind == RX_A_BOOL && p->u.b) || (p->kind == RX_A_INT && p->u.i != 0));
}

/* A call_tir binding of a loop function (a graph node when its block is dataflow). */
static bool is_tir_binding(const rx_binding *b)
{
    const rx_node *v = b->value;
    return !b->match_cast && v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR &&
           v->u.call.callee && v->u.call.callee->kind == RX_N_GLOBAL &&
           v->u.call.callee->u.global.fn && v->u.call.callee->u.global.fn->kind == RX_F_TIR;
}

/* ---- step 1a: definitions and external uses, per function ---- */

static void def_seq(fo_ctx *c, rx_seq *s);

static void def_node(fo_ctx *c, rx_node *n)
{
    if (n && n->kind == RX_N_IF) {
        def_seq(c, n->u.if_.then_body);
        def_seq(c, n->u.if_.else_body);
    }
}

static void def_seq(fo_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            if (var_ok(c, b->bindings[j].var)) c->def_block[b->bindings[j].var->u.var.id] = b;
            def_node(c, b->bindings[j].value);
        }
    }
}

static void use_seq(fo_ctx *c, rx_seq *s);

/* Every variable occurring in n is used externally (if bodies are scanned as bodies). */
static void use_node(fo_ctx *c, rx_node *n)
{
    if (!n) return;
    if (n->kind == RX_N_VAR) {
        if (var_ok(c, n)) c->ext[n->u.var.id] = true;
        return;
    }
    if (n->kind == RX_N_CALL && n->u.call.callee) use_node(c, n->u.call.callee);
    for (int i = 0; i < n->nargs; i++) use_node(c, n->args[i]);
    if (n->kind == RX_N_IF) {
        use_seq(c, n->u.if_.then_body);
        use_seq(c, n->u.if_.else_body);
    }
}

static void use_seq(fo_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            rx_binding *bd = &b->bindings[j];
            if (!b->dataflow || !is_tir_binding(bd)) {
                use_node(c, bd->value);
                continue;
            }
            for (int k = 0; k < bd->value->nargs; k++) { /* an edge only within the block */
                rx_node *a = bd->value->args[k];
                if (a->kind != RX_N_VAR) use_node(c, a);
                else if (var_ok(c, a) && c->def_block[a->u.var.id] != b) c->ext[a->u.var.id] = true;
            }
        }
    }
    use_node(c, s->result);
}

/* ---- step 1b: one block's graph ---- */

/* The kind of a call_tir binding's loop function; Opaque when it cannot be fused. */
static rx_pattern node_pattern(fo_ctx *c, const rx_binding *b)
{
    const rx_node *v = b->value;
    if (!v->u.call.out || v->u.call.out->kind != RX_SI_TENSOR) return RX_PAT_OPAQUE;
    for (int k = 0; k < v->nargs; k++)
        if (!v->args[k]->sinfo || v->args[k]->sinfo->kind != RX_SI_TENSOR) return RX_PAT_OPAQUE;
    const rx_func *f = v->u.call.callee->u.global.fn;
    const rx_attr *a = rx_attr_map_get(f->attrs, "compute_pattern");
    rx_pattern p;
    if (a && a->kind == RX_A_STR && rx_pattern_parse(a->u.s, &p)) return p;
    return rx_analyze_pattern(c->m->arena, f);
}

/* Same rank and dims (the shape-preserving test of an edge). */
static bool same_shape(const rx_sinfo *x, const rx_sinfo *y)
{
    if (!x || !y || x->kind != RX_SI_TENSOR || y->kind != RX_SI_TENSOR || x->ndim != y->ndim ||
        x->ndim < 0 || !x->dims || !y->dims)
        return false;
    for (int i = 0; i < x->ndim; i++)
        if (!rx_expr_same(x->dims[i], y->dims[i])) return false;
    return true;
}

/* The producer node of operand a of a node of block b, or -1. */
static int producer(const fo_ctx *c, const rx_block *b, const rx_node *a)
{
    if (!var_ok(c, a) || c->def_block[a->u.var.id] != b) return -1;
    return c->def_node[a->u.var.id];
}

/* The nodes (call_tir bindings) of dataflow block b and their consumer edges. */
static void build_graph(fo_ctx *c, rx_block *b, fgraph *g)
{
    int32_t nn = 0;
    for (int j = 0; j < b->nbindings; j++) {
        rx_binding *bd = &b->bindings[j];
        bool node = is_tir_binding(bd);
        if (var_ok(c, bd->var)) c->def_node[bd->var->u.var.id] = node ? nn : -1;
        nn += node;
    }
    g->nn = nn;
    g->n = rx_xcalloc((size_t)nn + 1, sizeof *g->n);
    int32_t k = 0, ne = 0;
    for (int j = 0; j < b->nbindings; j++) {
        rx_binding *bd = &b->bindings[j];
        if (!is_tir_binding(bd)) continue;
        fnode *n = &g->n[k];
        n->b = bd;
        n->pos = j;
        n->pat = (uint8_t)node_pattern(c, bd);
        n->ext = !var_ok(c, bd->var) || c->ext[bd->var->u.var.id];
        n->uf = k;
        n->size = 1;
        n->gpat = n->pat;
        n->dom = -1;
        n->cost = -1;
        for (int a = 0; a < bd->value->nargs; a++) {
            int u = producer(c, b, bd->value->args[a]);
            if (u >= 0) g->n[u].nout++, ne++;
        }
        k++;
    }
    g->e = rx_xcalloc((size_t)ne + 1, sizeof *g->e);
    for (int32_t i = 0, at = 0; i < nn; i++) {
        g->n[i].out0 = at;
        at += g->n[i].nout;
        g->n[i].nout = 0;
    }
    for (int32_t v = 0; v < nn; v++) {
        const rx_node *call = g->n[v].b->value;
        for (int a = 0; a < call->nargs; a++) {
            int u = producer(c, b, call->args[a]);
            if (u < 0) continue;
            rx_pattern p = (rx_pattern)g->n[v].pat;
            if (p == RX_PAT_BROADCAST &&
                same_shape(g->n[u].b->value->u.call.out, call->u.call.out))
                p = RX_PAT_ELEMWISE;
            g->e[g->n[u].out0 + g->n[u].nout++] = (fedge){v, (uint8_t)p};
        }
    }
}

static void free_graph(fgraph *g)
{
    free(g->n);
    free(g->e);
    RX_VEC_FREE(g->seen);
}

/* ---------------------------------------------------------------- step 2: post-dominators */

/* The nearest common post-dominator of a and b (-1: none, different trees), climbing
 * by depth; *pat takes the max of the path kinds climbed over. */
static int32_t lca(const fgraph *g, int32_t a, int32_t b, rx_pattern *pat)
{
    while (a != b) {
        if (a < 0 || b < 0) return -1;
        const fnode *x = &g->n[a], *y = &g->n[b];
        if (x->depth < y->depth) {
            *pat = pmax(*pat, (rx_pattern)y->dpat);
            b = y->dom;
        } else if (y->depth < x->depth) {
            *pat = pmax(*pat, (rx_pattern)x->dpat);
            a = x->dom;
        } else {
            *pat = pmax(*pat, pmax((rx_pattern)x->dpat, (rx_pattern)y->dpat));
            a = x->dom;
            b = y->dom;
        }
    }
    return a;
}

/* Each node's immediate post-dominator, depth and path kind, consumers first. */
static void post_dominators(fgraph *g)
{
    for (int32_t i = g->nn - 1; i >= 0; i--) {
        fnode *n = &g->n[i];
        n->dom = -1;
        n->depth = 1;
        n->dpat = RX_PAT_OPAQUE;
        if (n->ext || n->nout == 0) continue;
        rx_pattern pat = (rx_pattern)g->e[n->out0].pat;
        int32_t p = g->e[n->out0].to;
        for (int k = 1; k < n->nout && p >= 0; k++) {
            pat = pmax(pat, (rx_pattern)g->e[n->out0 + k].pat);
            p = lca(g, p, g->e[n->out0 + k].to, &pat);
        }
        if (p < 0) continue;
        n->dom = p;
        n->depth = g->n[p].depth + 1;
        n->dpat = (uint8_t)pat;
    }
}

/* ---------------------------------------------------------------- step 3: groups */

/* The representative (root node) of i's group. */
static int32_t find(fgraph *g, int32_t i)
{
    while (g->n[i].uf != i) {
        g->n[i].uf = g->n[g->n[i].uf].uf; /* path halving */
        i = g->n[i].uf;
    }
    return i;
}

/* Joins group x into group into (both representatives). */
static void join(fgraph *g, int32_t x, int32_t into)
{
    if (x == into) return;
    g->n[x].uf = into;
    g->n[into].size += g->n[x].size;
    g->n[into].gpat = (uint8_t)pmax((rx_pattern)g->n[into].gpat, (rx_pattern)g->n[x].gpat);
}

typedef struct rule {
    rx_pattern edges;  /* max edge kind on the paths (ElementWise: must be exactly that) */
    rx_pattern inner;  /* max kind of the groups of nodes on the paths outside the sink's */
    rx_pattern sink;   /* max kind of the sink's group */
} rule;

/* Relay's CheckPath: every node on a path from src to sink satisfies r; the nodes
 * visited are left in g->seen. */
static bool check_path(fgraph *g, int32_t src, int32_t sink, const rule *r)
{
    int32_t tgt = find(g, sink);
    g->stamp++;
    g->seen.n = 0;
    RX_VEC(int32_t) stack = {0};
    const fnode *s = &g->n[src];
    for (int k = 0; k < s->nout; k++) RX_VEC_PUSH(stack, g->e[s->out0 + k].to);
    bool ok = true;
    while (ok && stack.n) {
        int32_t u = stack.items[--stack.n];
        fnode *n = &g->n[u];
        if (n->mark == g->stamp) continue;
        n->mark = g->stamp;
        RX_VEC_PUSH(g->seen, u);
        int32_t gu = find(g, u);
        if (gu == tgt) ok = (u == sink || !n->ext) && g->n[gu].gpat <= r->sink;
        else ok = !n->ext && g->n[gu].gpat <= r->inner;
        if (!ok || u == sink) continue;
        for (int k = 0; k < n->nout; k++) RX_VEC_PUSH(stack, g->e[n->out0 + k].to);
    }
    RX_VEC_FREE(stack);
    return ok;
}

/* The size of the group src, the sink's and those of the nodes check_path saw. */
static int32_t merged_size(fgraph *g, int32_t src, int32_t sink)
{
    g->stamp++;
    int32_t total = 0, rs[2] = {find(g, src), find(g, sink)};
    for (int i = 0; i < 2 + g->seen.n; i++) {
        int32_t r = i < 2 ? rs[i] : find(g, g->seen.items[i - 2]);
        if (g->n[r].gmark == g->stamp) continue;
        g->n[r].gmark = g->stamp;
        total += g->n[r].size;
    }
    return total;
}

/* Whether the groups whose roots carry gmark == stamp fit the target's argument limit. */
static bool args_fit(fgraph *g)
{
    if (!g->lim) return true;
    const rx_node *calls[MAX_GROUP], *vars[MAX_GROUP];
    uint8_t pats[MAX_GROUP];
    int n = 0;
    for (int32_t v = 0; v < g->nn && n < MAX_GROUP; v++)
        if (g->n[find(g, v)].gmark == g->stamp)
            calls[n] = g->n[v].b->value, pats[n] = g->n[v].pat, vars[n++] = g->n[v].b->var;
    int nbuf;
    return rxi_fuse_arg_bytes(calls, vars, pats, n, g->tmp, g->lim, &nbuf) <= g->lim->max_bytes &&
           nbuf <= g->lim->max_bufs;
}

/* ---- the recompute rule ---- */

/* Node i's cost and passes (fuse_cost.c), computed once. */
static void node_cost(fgraph *g, int32_t i)
{
    fnode *n = &g->n[i];
    if (n->cost < 0) rxi_fuse_cost(n->b->value->u.call.callee->u.global.fn, &n->cost, &n->passes);
}

/* The summed costs of the members of group r (members are bound before their root). */
static int32_t group_cost(fgraph *g, int32_t r)
{
    int32_t c = 0;
    for (int32_t i = 0; i <= r && c < RECOMPUTE_MIN; i++) {
        if (find(g, i) != r) continue;
        node_cost(g, i);
        c += g->n[i].cost;
    }
    return c;
}

/* The most passes of a member of group r over one of its inputs. */
static int32_t group_passes(fgraph *g, int32_t r)
{
    int32_t p = 1;
    for (int32_t i = 0; i <= r; i++) {
        if (find(g, i) != r) continue;
        node_cost(g, i);
        if (g->n[i].passes > p) p = g->n[i].passes;
    }
    return p;
}

/* Whether a member of group r reads a tensor transposed (fuse_cost.c). */
static bool group_transposes(fgraph *g, int32_t r)
{
    for (int32_t i = 0; i <= r; i++)
        if (find(g, i) == r && rxi_fuse_transposes(g->n[i].b->value->u.call.callee->u.global.fn))
            return true;
    return false;
}

/* The recompute rule: fusing an elementwise/injective group into its post-dominator p
 * inlines the group's computation wherever the fused kernel reads its root. That is
 * more than once per element of the root when a consumer reads it over a larger
 * iteration space (a broadcast, a gather's rows), or when p's group reads its inputs
 * in several passes (softmax: the max pass and the exp pass). When the group costs
 * RECOMPUTE_MIN or more per element, it is better materialized once; so is a group
 * that reads a tensor transposed, under a target that reads in several passes. */
static bool larger(fgraph *g, const rx_sinfo *p, const rx_sinfo *c)
{
    return rxi_fuse_larger_space(g->ar, g->tmp, p, c);
}

/* The summed costs of the members of group t that its root reads over a larger space
 * (they sit behind a broadcast, a resize or a gather in t, and are evaluated more than
 * once per element of t's root). */
static int32_t behind_cost(fgraph *g, int32_t t)
{
    const rx_sinfo *root = g->n[t].b->value->u.call.out;
    int32_t c = 0;
    for (int32_t m = 0; m < t && c < RECOMPUTE_MIN; m++) {
        if (find(g, m) != t || !larger(g, g->n[m].b->value->u.call.out, root)) continue;
        node_cost(g, m);
        c += g->n[m].cost;
    }
    return c;
}

/* The summed costs of the members of reduction group r but its reductions (FuseTIR
 * keeps a reduction's value in a buffer; the rest is inlined where the root is read). */
static int32_t epilogue_cost(fgraph *g, int32_t r)
{
    int32_t c = 0;
    for (int32_t m = 0; m <= r && c < RECOMPUTE_MIN; m++) {
        if (find(g, m) != r || g->n[m].pat > RX_PAT_INJECTIVE) continue;
        node_cost(g, m);
        c += g->n[m].cost;
    }
    return c;
}

static bool recomputed(fgraph *g, int32_t i, int32_t p)
{
    const fnode *n = &g->n[i];
    if (n->gpat > RX_PAT_REDUCTION) return false;
    const rx_sinfo *out = n->b->value->u.call.out;
    int32_t tg = find(g, p), behind = 0;
    bool reuse = false;
    for (int k = 0; k < n->nout && !reuse; k++)
        reuse = larger(g, out, g->n[g->e[n->out0 + k].to].b->value->u.call.out);
    if (larger(g, out, g->n[tg].b->value->u.call.out)) { /* read over a larger space */
        reuse = true;
        behind = behind_cost(g, tg);
    }
    if (n->gpat == RX_PAT_REDUCTION) /* its epilogue, inlined per element of the reader */
        return reuse && n->pat != RX_PAT_REDUCTION && epilogue_cost(g, i) + behind >= RECOMPUTE_MIN;
    int32_t passes = group_passes(g, tg);
    if ((reuse || passes > 1) && group_cost(g, i) + behind >= RECOMPUTE_MIN) return true;
    return passes > 1 && group_transposes(g, i); /* each pass would stride through memory */
}

/* Fuses group root i into its post-dominator's group under rule r. */
static bool try_fuse(fgraph *g, int32_t i, const rule *r)
{
    const fnode *n = &g->n[i];
    int32_t p = n->dom;
    rx_pattern e = (rx_pattern)n->dpat;
    if (r->edges == RX_PAT_ELEMWISE ? e != RX_PAT_ELEMWISE : e > r->edges) return false;
    if (recomputed(g, i, p)) return false;
    if (!check_path(g, i, p, r) || merged_size(g, i, p) > MAX_GROUP || !args_fit(g)) return false;
    int32_t tgt = find(g, p);
    join(g, i, tgt);
    for (int k = 0; k < g->seen.n; k++) join(g, find(g, g->seen.items[k]), tgt);
    return true;
}

/* One sweep over the group roots in binding order; the number of fusions. */
static int sweep(fgraph *g, int phase)
{
    static const rule out_ewise = {RX_PAT_ELEMWISE, RX_PAT_BROADCAST, RX_PAT_BROADCAST};
    static const rule ewise = {RX_PAT_REDUCTION, RX_PAT_INJECTIVE, RX_PAT_OUT_EWISE_FUSIBLE};
    static const rule inj_red = {RX_PAT_REDUCTION, RX_PAT_INJECTIVE, RX_PAT_REDUCTION};
    int fused = 0;
    for (int32_t i = 0; i < g->nn; i++) {
        if (find(g, i) != i || g->n[i].dom < 0 || find(g, g->n[i].dom) == i) continue;
        rx_pattern k = (rx_pattern)g->n[i].gpat;
        const rule *r = NULL;
        if (k <= RX_PAT_BROADCAST) r = &ewise;
        else if (k == RX_PAT_OUT_EWISE_FUSIBLE && phase == 1) r = &out_ewise;
        else if ((k == RX_PAT_INJECTIVE || k == RX_PAT_REDUCTION) && phase == 2) r = &inj_red;
        if (r && try_fuse(g, i, r)) fused++;
    }
    return fused;
}

/* Phase 3 (Figure 9): an injective group whose only consumer is a matmul-like node. */
static void prologues(fgraph *g)
{
    for (int32_t i = 0; i < g->nn; i++) {
        const fnode *n = &g->n[i];
        if (find(g, i) != i || n->gpat > RX_PAT_INJECTIVE || n->ext || n->nout == 0) continue;
        int32_t c = g->e[n->out0].to;
        bool only = g->n[c].pat == RX_PAT_OUT_EWISE_FUSIBLE;
        for (int k = 1; k < n->nout && only; k++) only = g->e[n->out0 + k].to == c;
        int32_t tgt = find(g, c);
        if (!only || tgt == i || n->size + g->n[tgt].size > MAX_GROUP) continue;
        g->n[i].gmark = g->n[tgt].gmark = ++g->stamp;
        if (args_fit(g)) join(g, i, tgt);
    }
}

/* Step 3's phases. */
static void group(fgraph *g)
{
    sweep(g, 1);
    while (sweep(g, 2) > 0) {
    }
    prologues(g);
}

/* ---------------------------------------------------------------- step 4: functions */

typedef struct gbuild {
    fo_ctx *c;                 /* the pass */
    const fgraph *g;           /* the block's graph */
    const int32_t *mem;        /* member nodes in binding order; the last is the root */
    int32_t nmem;              /* number of members (>= 2) */
    RX_VEC(rx_node *) in;      /* external inputs: caller VAR or CONST nodes, first use */
    rx_svar_vec defd;          /* caller variables standing as whole dims of the inputs */
    rx_svar_vec used;          /* every caller variable the group's annotations use */
    rx_svar_vec extra;         /* used but not defd: the Figure 8 Shape parameter */
} gbuild;

static bool is_member(const gbuild *gb, const rx_node *v)
{
    for (int32_t k = 0; k < gb->nmem; k++)
        if (gb->g->n[gb->mem[k]].b->var == v) return true;
    return false;
}

static void add_input(gbuild *gb, rx_node *a)
{
    for (int i = 0; i < gb->in.n; i++) {
        rx_node *x = gb->in.items[i];
        if (x == a || (x->kind == RX_N_CONST && a->kind == RX_N_CONST && x->u.konst == a->u.konst))
            return;
    }
    RX_VEC_PUSH(gb->in, a);
}

static bool has_var(const rx_svar_vec *v, const rx_svar *x)
{
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == x) return true;
    return false;
}

/* Inputs, then the symbolic variables: whole dims of the inputs, then the rest. */
static void collect(gbuild *gb)
{
    for (int32_t k = 0; k < gb->nmem; k++) {
        const rx_node *call = gb->g->n[gb->mem[k]].b->value;
        for (int a = 0; a < call->nargs; a++)
            if (!is_member(gb, call->args[a])) add_input(gb, call->args[a]);
    }
    for (int i = 0; i < gb->in.n; i++) {
        const rx_sinfo *s = gb->in.items[i]->sinfo;
        for (int d = 0; s->dims && d < s->ndim; d++)
            if (s->dims[d]->kind == RX_E_VAR && !has_var(&gb->defd, s->dims[d]->u.var))
                RX_VEC_PUSH(gb->defd, s->dims[d]->u.var);
        rxi_fuse_sinfo_vars(s, &gb->used);
    }
    for (int32_t k = 0; k < gb->nmem; k++) {
        const rx_node *call = gb->g->n[gb->mem[k]].b->value;
        rxi_fuse_sinfo_vars(call->u.call.out, &gb->used);
        for (int t = 0; t < call->u.call.ntir_vars; t++) rx_expr_vars(call->u.call.tir_vars[t], &gb->used);
    }
    for (int i = 0; i < gb->used.n; i++)
        if (!has_var(&gb->defd, gb->used.items[i])) RX_VEC_PUSH(gb->extra, gb->used.items[i]);
}

/* Whether a variable of vars[0..n) or a symbolic variable of sv[0..nsv) is named name. */
static bool name_taken(const rx_node **vars, int n, const rx_svar **sv, int nsv, const char *name)
{
    for (int i = 0; i < n; i++)
        if (vars[i] && !strcmp(vars[i]->u.var.name, name)) return true;
    for (int i = 0; i < nsv; i++)
        if (!strcmp(sv[i]->name, name)) return true;
    return false;
}

/* base, or base_1, base_2, ...: the first name nothing in vars or sv has. */
static const char *fresh_local(rx_arena *a, const rx_node **vars, int n, const rx_svar **sv,
                               int nsv, const char *base)
{
    const char *s = base;
    for (int k = 1; name_taken(vars, n, sv, nsv, s); k++) s = rx_arena_printf(a, "%s_%d", base, k);
    return s;
}

/* fused_<f1>_..._<fk>, truncated to MAX_NAME, unique in the module and this run. */
static const char *func_name(gbuild *gb)
{
    fo_ctx *c = gb->c;
    rx_sb sb = {0};
    rx_sb_puts(&sb, "fused");
    for (int32_t k = 0; k < gb->nmem; k++) {
        rx_sb_putc(&sb, '_');
        rx_sb_puts(&sb, gb->g->n[gb->mem[k]].b->value->u.call.callee->u.global.name);
    }
    size_t n = sb.n > MAX_NAME ? MAX_NAME : sb.n;
    while (n > 0 && sb.p[n - 1] == '_') n--;
    const char *base = rx_arena_strndup(c->m->arena, sb.p, n), *s = base;
    rx_sb_free(&sb);
    for (int k = 1;; k++) {
        bool taken = rx_module_find(c->m, s) != NULL;
        for (int i = 0; i < c->added.n && !taken; i++) taken = !strcmp(c->added.items[i]->name, s);
        if (!taken) return s;
        s = rx_arena_printf(c->m->arena, "%s_%d", base, k);
    }
}

static rx_attr *primitive_attrs(rx_arena *a)
{
    rx_attr *t = RX_NEW(a, rx_attr);
    t->kind = RX_A_BOOL;
    t->u.b = true;
    rx_attr *map = RX_NEW(a, rx_attr);
    map->kind = RX_A_MAP;
    map->u.map.n = 1;
    map->u.map.keys = RX_NEWN(a, const char *, 1);
    map->u.map.vals = RX_NEWN(a, rx_attr *, 1);
    map->u.map.keys[0] = "primitive";
    map->u.map.vals[0] = t;
    return map;
}

/* The primitive function of the group (symbolic variables renamed through vm). */
static rx_func *make_func(gbuild *gb, rx_vmap *vm)
{
    rx_module *m = gb->c->m;
    rx_arena *a = m->arena;
    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_RELAX;
    f->nouts = -1;
    f->attrs = primitive_attrs(a);
    /* symbolic variables: fresh ones, in the reader's order (whole dims of the params) */
    int nsv = gb->defd.n + gb->extra.n;
    f->svars = RX_NEWN(a, const rx_svar *, nsv + 1);
    f->nsvars = nsv;
    for (int i = 0; i < nsv; i++) {
        const rx_svar *v = i < gb->defd.n ? gb->defd.items[i] : gb->extra.items[i - gb->defd.n];
        rx_svar *nv = rx_svar_new(a, v->name, v->dtype, RX_SV_SHAPE, rx_module_new_id(m));
        f->svars[i] = nv;
        rx_vmap_set(vm, v, rx_e_var(a, nv));
    }
    /* params: inputs (constants named c0, c1, ...), then the shape parameter */
    int np = gb->in.n + (gb->extra.n > 0), nn = np + gb->nmem;
    const rx_node **names = RX_NEWN(a, const rx_node *, nn + 1);
    for (int i = 0; i < gb->in.n; i++)
        if (gb->in.items[i]->kind == RX_N_VAR) names[i] = gb->in.items[i];
    for (int32_t k = 0; k < gb->nmem; k++) names[np + k] = gb->g->n[gb->mem[k]].b->var;
    f->params = RX_NEWN(a, rx_node *, np + 1);
    f->nparams = np;
    for (int i = 0, nc = 0; i < gb->in.n; i++) {
        rx_node *x = gb->in.items[i];
        const char *nm = x->kind == RX_N_VAR ? x->u.var.name : NULL;
        while (!nm || (x->kind == RX_N_CONST && name_taken(names, nn, NULL, 0, nm)))
            nm = rx_arena_printf(a, "c%d", nc++);
        f->params[i] = rx_n_var(m, nm, rx_si_subst(a, x->sinfo, vm), false);
        names[i] = f->params[i];
    }
    if (gb->extra.n) {
        rx_expr **dims = RX_NEWN(a, rx_expr *, gb->extra.n);
        for (int i = 0; i < gb->extra.n; i++) dims[i] = rx_vmap_get(vm, gb->extra.items[i]);
        const char *nm = fresh_local(a, names, nn, f->svars, nsv, "s");
        f->params[np - 1] = rx_n_var(m, nm, rx_si_shape(a, gb->extra.n, dims), false);
    }
    /* body: the members' bindings */
    rx_block *blk = RX_NEW(a, rx_block);
    blk->dataflow = true;
    blk->nbindings = gb->nmem;
    blk->bindings = RX_NEWN(a, rx_binding, gb->nmem);
    rx_node **nvars = RX_NEWN(a, rx_node *, gb->nmem);
    for (int32_t k = 0; k < gb->nmem; k++) {
        const rx_binding *ob = gb->g->n[gb->mem[k]].b;
        const rx_node *oc = ob->value;
        rx_node **args = RX_NEWN(a, rx_node *, oc->nargs + 1);
        for (int i = 0; i < oc->nargs; i++) {
            const rx_node *x = oc->args[i];
            for (int32_t q = 0; q < k && !args[i]; q++)
                if (gb->g->n[gb->mem[q]].b->var == x) args[i] = nvars[q];
            for (int q = 0; q < gb->in.n && !args[i]; q++) {
                const rx_node *y = gb->in.items[q];
                if (y == x || (y->kind == RX_N_CONST && x->kind == RX_N_CONST && y->u.konst == x->u.konst))
                    args[i] = f->params[q];
            }
            RX_ASSERT(args[i] != NULL);
        }
        rx_expr **tv = RX_NEWN(a, rx_expr *, oc->u.call.ntir_vars + 1);
        for (int t = 0; t < oc->u.call.ntir_vars; t++) tv[t] = rx_expr_subst(a, oc->u.call.tir_vars[t], vm);
        const rx_node *callee = oc->u.call.callee;
        rx_node *call = rx_n_call_tir(m, rx_n_global(m, callee->u.global.name, callee->u.global.fn),
                                      args, oc->nargs, rx_si_subst(a, oc->u.call.out, vm), tv,
                                      oc->u.call.ntir_vars);
        nvars[k] = rx_n_var(m, ob->var->u.var.name, NULL, true);
        blk->bindings[k] = (rx_binding){.var = nvars[k], .value = call};
    }
    f->body = RX_NEW(a, rx_seq);
    f->body->nblocks = 1;
    f->body->blocks = RX_NEWN(a, rx_block *, 1);
    f->body->blocks[0] = blk;
    f->body->result = nvars[gb->nmem - 1];
    return f;
}

/* Builds (or finds) the group's function; returns the call that replaces its root. */
static rx_node *fuse_group(fo_ctx *c, const fgraph *g, const int32_t *mem, int32_t nmem)
{
    gbuild gb = {.c = c, .g = g, .mem = mem, .nmem = nmem};
    collect(&gb);
    rx_vmap vm = {0};
    rx_func *f = make_func(&gb, &vm);
    rx_vmap_free(&vm);
    fshared sh = {.fn = NULL};
    rx_func_struct_hash(f, "fuse_ops", sh.hash);
    for (int i = 0; i < c->shared.n && !sh.fn; i++)
        if (!memcmp(c->shared.items[i].hash, sh.hash, sizeof sh.hash)) sh.fn = c->shared.items[i].fn;
    if (!sh.fn) {
        f->name = func_name(&gb);
        sh.fn = f;
        RX_VEC_PUSH(c->shared, sh);
        RX_VEC_PUSH(c->added, f);
    }
    rx_module *m = c->m;
    int nargs = gb.in.n + (gb.extra.n > 0);
    rx_node **args = RX_NEWN(m->arena, rx_node *, nargs + 1);
    for (int i = 0; i < gb.in.n; i++) args[i] = gb.in.items[i];
    if (gb.extra.n) {
        rx_expr **dims = RX_NEWN(m->arena, rx_expr *, gb.extra.n);
        for (int i = 0; i < gb.extra.n; i++) dims[i] = rx_e_var(m->arena, gb.extra.items[i]);
        args[nargs - 1] = rx_n_shape(m, dims, gb.extra.n);
    }
    rx_node *call = rx_n_call_fn(m, rx_n_global(m, sh.fn->name, sh.fn), args, nargs);
    call->loc = g->n[mem[nmem - 1]].b->value->loc;
    RX_VEC_FREE(gb.in);
    RX_VEC_FREE(gb.defd);
    RX_VEC_FREE(gb.used);
    RX_VEC_FREE(gb.extra);
    c->fused++;
    return call;
}

/* ---------------------------------------------------------------- step 5: the block */

/* Members of each group of two or more, roots in binding order; rewrites the block. */
static void rewrite_block(fo_ctx *c, rx_block *b, fgraph *g)
{
    int32_t nn = g->nn;
    int32_t *start = rx_xcalloc((size_t)nn + 1, sizeof *start);
    int32_t *mem = rx_xcalloc((size_t)nn + 1, sizeof *mem);
    bool *drop = rx_xcalloc((size_t)b->nbindings + 1, sizeof *drop);
    for (int32_t i = 0; i < nn; i++) start[find(g, i) + 1]++;
    for (int32_t i = 0; i < nn; i++) start[i + 1] += start[i];
    int32_t *fill = rx_xcalloc((size_t)nn + 1, sizeof *fill);
    for (int32_t i = 0; i < nn; i++) {
        int32_t r = find(g, i);
        mem[start[r] + fill[r]++] = i;
    }
    for (int32_t r = 0; r < nn; r++) {
        int32_t k = start[r + 1] - start[r];
        if (find(g, r) != r || k < 2) continue;
        const int32_t *ms = &mem[start[r]];
        RX_ASSERT(ms[k - 1] == r); /* the root is bound last */
        for (int32_t q = 0; q < k - 1; q++) {
            const fnode *n = &g->n[ms[q]];
            RX_ASSERT(!n->ext); /* one output: every other member's uses are inside */
            for (int e = 0; e < n->nout; e++) RX_ASSERT(find(g, g->e[n->out0 + e].to) == r);
            drop[n->pos] = true;
        }
        g->n[r].b->value = fuse_group(c, g, ms, k);
    }
    int32_t w = 0;
    for (int j = 0; j < b->nbindings; j++)
        if (!drop[j]) b->bindings[w++] = b->bindings[j];
    b->nbindings = w;
    free(start);
    free(mem);
    free(fill);
    free(drop);
}

static void fuse_seq(fo_ctx *c, rx_seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->nblocks; i++) {
        rx_block *b = s->blocks[i];
        for (int j = 0; j < b->nbindings; j++) {
            rx_node *v = b->bindings[j].value;
            if (v->kind == RX_N_IF) {
                fuse_seq(c, v->u.if_.then_body);
                fuse_seq(c, v->u.if_.else_body);
            }
        }
        if (!b->dataflow) continue;
        fgraph g = {.ar = c->ar, .tmp = c->tmp, .lim = c->lim};
        build_graph(c, b, &g);
        if (g.nn >= 2) {
            post_dominators(&g);
            group(&g);
            rewrite_block(c, b, &g);
        }
        free_graph(&g);
    }
}

/* Appends the new functions to the module (an arena array one larger each time would
 * be quadratic: one copy). */
static void add_funcs(fo_ctx *c)
{
    rx_module *m = c->m;
    if (!c->added.n) return;
    rx_func **fs = RX_NEWN(m->arena, rx_func *, m->nfuncs + c->added.n);
    memcpy(fs, m->funcs, sizeof *fs * (size_t)m->nfuncs);
    memcpy(fs + m->nfuncs, c->added.items, sizeof *fs * (size_t)c->added.n);
    m->funcs = fs;
    m->nfuncs += c->added.n;
}

bool rx_pass_fuse_ops(rx_module *m, rx_diags *d) { return rx_pass_fuse_ops_limited(m, NULL, d); }

bool rx_pass_fuse_ops_limited(rx_module *m, const rx_fuse_limit *lim, rx_diags *d)
{
    fo_ctx c = {.m = m, .nids = m->next_id, .lim = lim};
    size_t n = (size_t)c.nids + 1;
    c.def_block = rx_xcalloc(n, sizeof *c.def_block);
    c.def_node = rx_xcalloc(n, sizeof *c.def_node);
    c.ext = rx_xcalloc(n, sizeof *c.ext);
    c.tmp = rx_arena_new();
    c.ar = rx_arith_new(c.tmp);
    int nf = m->nfuncs;
    for (int i = 0; i < nf; i++) {
        rx_func *f = m->funcs[i];
        if (f->kind != RX_F_RELAX || is_primitive(f)) continue;
        def_seq(&c, f->body);
        use_seq(&c, f->body);
        fuse_seq(&c, f->body);
    }
    add_funcs(&c);
    free(c.def_block);
    free(c.def_node);
    free(c.ext);
    rx_arith_free(c.ar);
    rx_arena_free(c.tmp);
    RX_VEC_FREE(c.shared);
    RX_VEC_FREE(c.added);
    if (!c.fused) m->unchanged = true;
    return true;
}
