/*
 * library_epi.c — the activation a chain of elementwise bindings computes, for the
 * epilogues of the library's matmuls (library_lower.c's matmul_view rule).
 *
 * Exporters write one activation many ways: GPT-2's tanh GELU as nine bindings (x * 0.5,
 * x * x * x or power(x, 3), * 0.044715, + x, * 0.7978846, tanh, + 1, the product, in
 * either operand order), F.gelu as x / 1.4142135 -> erf -> + 1 -> * x -> * 0.5 (or
 * x * 0.70710678, the products in another order), SiLU as x * sigmoid(x), or the ops
 * nn.gelu / nn.gelu_tanh / nn.silu / nn.relu themselves. Rather than one structural
 * pattern per spelling, rx_le_match decides by what the bindings compute:
 *
 * Step 1 (the region): scanning the bindings after `after` in order, an op call joins
 * when its op is one of the elementwise set below, every operand is x, a member, or a
 * scalar constant (inline or bound), at least one is not a constant, and its result has
 * x's type. At most LE_MAX members, found within LE_SCAN bindings.
 * Step 2 (a closed sub-chain): for each member y, last first, the members y depends on
 * (with y) must be closed: x and every member but y are used by those bindings only (the
 * function's use counts), so dropping them loses nothing.
 * Step 3 (the function): the sub-chain is evaluated in double at LE_NPROBE points of
 * [-8, 8] and compared with relu, gelu (erf form), gelu_tanh and silu within 1e-6 (1 +
 * |f|): f32 constants of the exports (0.7978846, 1.4142135: ~5e-8 relative) sit far
 * inside that, while 0.0447 for 0.044715 (7e-6 off near |x| = 2) is not a GELU and the
 * erf and tanh GELUs, 4.7e-4 apart there, are told apart. The operations are
 * analytic (no comparisons, no selects but relu's own), so functions that agree at every
 * probe point agree elsewhere to the same tolerance in practice.
 *
 * Cost: O(LE_SCAN + LE_MAX^2 * LE_NPROBE) per call.
 */
#include "library_int.h"

#include <math.h>
#include <string.h>

#include "relax/op.h"

enum { LE_MAX = 16, LE_SCAN = 48, LE_NPROBE = 49 };

/* The ops a chain may use, with their arity. */
static const struct {
    const char *name;
    int nargs;
} le_ops[] = {
    {"add", 2},      {"subtract", 2},     {"multiply", 2}, {"divide", 2},  {"power", 2},
    {"negative", 1}, {"tanh", 1},         {"erf", 1},      {"exp", 1},     {"sigmoid", 1},
    {"nn.gelu", 1},  {"nn.gelu_tanh", 1}, {"nn.silu", 1},  {"nn.relu", 1}, {"sqrt", 1},
};

static int le_op(const rx_node *n)
{
    if (!n || n->kind != RX_N_CALL || n->call_kind != RX_CALL_OP) return -1;
    for (int i = 0; i < RX_COUNTOF(le_ops); i++)
        if (!strcmp(n->u.call.op->name, le_ops[i].name))
            return n->nargs == le_ops[i].nargs ? i : -1;
    return -1;
}

/* The value of a scalar f32 constant (inline, or a variable bound to one), or false. */
static bool le_scalar(const rx_le_ctx *c, const rx_node *n, double *out)
{
    if (n->kind == RX_N_VAR) n = c->defs.def(c->defs.ctx, n);
    if (!n || n->kind != RX_N_CONST || n->u.konst->dtype != RX_DT_F32 || n->u.konst->nbytes != 4)
        return false;
    float f;
    memcpy(&f, n->u.konst->data, sizeof f);
    *out = f;
    return true;
}

static bool same_type(const rx_sinfo *x, const rx_sinfo *y)
{
    if (!x || !y || x->kind != RX_SI_TENSOR || y->kind != RX_SI_TENSOR || !x->dims || !y->dims ||
        x->dtype != y->dtype || x->ndim != y->ndim)
        return false;
    for (int i = 0; i < x->ndim; i++)
        if (!rx_expr_same(x->dims[i], y->dims[i])) return false;
    return true;
}

/* The activations, in double: what a chain is compared with (RX_LE_ACT_*). */
static double le_act(int act, double x)
{
    switch (act) {
    case RX_LE_ACT_RELU: return x > 0 ? x : 0;
    case RX_LE_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case RX_LE_ACT_SILU: return x / (1 + exp(-x));
    case RX_LE_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    default: return x;
    }
}

static double le_apply(int op, double a, double b)
{
    const char *n = le_ops[op].name;
    if (!strcmp(n, "add")) return a + b;
    if (!strcmp(n, "subtract")) return a - b;
    if (!strcmp(n, "multiply")) return a * b;
    if (!strcmp(n, "divide")) return a / b;
    if (!strcmp(n, "power")) return pow(a, b);
    if (!strcmp(n, "negative")) return -a;
    if (!strcmp(n, "tanh")) return tanh(a);
    if (!strcmp(n, "erf")) return erf(a);
    if (!strcmp(n, "exp")) return exp(a);
    if (!strcmp(n, "sigmoid")) return 1 / (1 + exp(-a));
    if (!strcmp(n, "sqrt")) return sqrt(a);
    if (!strcmp(n, "nn.gelu")) return le_act(RX_LE_ACT_GELU, a);
    if (!strcmp(n, "nn.gelu_tanh")) return le_act(RX_LE_ACT_GELU_TANH, a);
    if (!strcmp(n, "nn.silu")) return le_act(RX_LE_ACT_SILU, a);
    return le_act(RX_LE_ACT_RELU, a); /* nn.relu */
}

/* A member of the region: its binding and op. */
typedef struct le_member {
    int at; /* binding index in the block */
    int op; /* le_ops index */
} le_member;

/* The slot of var v among the members (-2: x itself, -1: neither). */
static int le_slot(const rx_block *b, const le_member *mem, int n, const rx_node *x,
                   const rx_node *v)
{
    if (v == x) return -2;
    for (int i = 0; i < n; i++)
        if (b->bindings[mem[i].at].var == v) return i;
    return -1;
}

/* The sub-chain's value at x0 (members flagged in `in`, y = member last). */
static double le_eval(const rx_le_ctx *c, const rx_block *b, const le_member *mem, int last,
                      const bool *in, const rx_node *x, double x0)
{
    double val[LE_MAX];
    for (int i = 0; i <= last; i++) {
        if (!in[i]) continue;
        const rx_node *call = b->bindings[mem[i].at].value;
        double arg[2] = {0, 0};
        for (int k = 0; k < call->nargs; k++) {
            int s = le_slot(b, mem, i, x, call->args[k]);
            if (s == -2) arg[k] = x0;
            else if (s >= 0) arg[k] = val[s];
            else le_scalar(c, call->args[k], &arg[k]); /* Step 1 made sure */
        }
        val[i] = le_apply(mem[i].op, arg[0], arg[1]);
    }
    return val[last];
}

int rx_le_match(const rx_le_ctx *c, rx_block *b, rx_node *x, int after, const bool *drop,
                int *chain, int *act)
{
    if (x->kind != RX_N_VAR || x->u.var.id < 0 || x->u.var.id >= c->nids) return 0;
    /* Step 1: the region */
    le_member mem[LE_MAX];
    int n = 0;
    for (int k = after + 1; k < b->nbindings && k <= after + LE_SCAN && n < LE_MAX; k++) {
        const rx_binding *bd = &b->bindings[k];
        int op = le_op(bd->value);
        if (drop[k] || bd->match_cast || op < 0 || !same_type(bd->value->sinfo, x->sinfo) ||
            bd->var->u.var.id < 0 || bd->var->u.var.id >= c->nids)
            continue;
        bool ok = true, live = false;
        for (int a = 0; a < bd->value->nargs && ok; a++) {
            double v;
            const rx_node *arg = bd->value->args[a];
            if (le_slot(b, mem, n, x, arg) != -1) live = true;
            else ok = le_scalar(c, arg, &v);
        }
        if (ok && live) mem[n++] = (le_member){k, op};
    }
    /* Steps 2 and 3: the longest closed sub-chain that is an activation */
    for (int y = n - 1; y >= 0; y--) {
        bool in[LE_MAX] = {false};
        in[y] = true;
        for (int i = y; i >= 0; i--) { /* the members y depends on */
            if (!in[i]) continue;
            const rx_node *call = b->bindings[mem[i].at].value;
            for (int k = 0; k < call->nargs; k++) {
                int s = le_slot(b, mem, i, x, call->args[k]);
                if (s >= 0) in[s] = true;
            }
        }
        int32_t seen[LE_MAX + 1] = {0}; /* uses inside: by member, x at LE_MAX */
        for (int i = 0; i <= y; i++) {
            const rx_node *call = b->bindings[mem[i].at].value;
            for (int k = 0; in[i] && k < call->nargs; k++) {
                int s = le_slot(b, mem, i, x, call->args[k]);
                if (s != -1) seen[s == -2 ? LE_MAX : s]++;
            }
        }
        bool closed = c->uses[x->u.var.id] == seen[LE_MAX];
        for (int i = 0; i < y && closed; i++)
            closed = !in[i] || c->uses[b->bindings[mem[i].at].var->u.var.id] == seen[i];
        if (!closed) continue;
        for (int a = RX_LE_ACT_RELU; a <= RX_LE_ACT_GELU_TANH; a++) {
            bool match = true;
            for (int p = 0; p < LE_NPROBE && match; p++) {
                double x0 = -8.0 + 16.0 * p / (LE_NPROBE - 1) + 0.013, want = le_act(a, x0);
                double got = le_eval(c, b, mem, y, in, x, x0);
                match = fabs(got - want) <= 1e-6 * (1 + fabs(want));
            }
            if (!match) continue;
            int len = 0;
            for (int i = 0; i <= y; i++)
                if (in[i]) chain[len++] = mem[i].at;
            *act = a;
            return len;
        }
    }
    return 0;
}
