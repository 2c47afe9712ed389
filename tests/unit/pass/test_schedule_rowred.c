/*
 * test_schedule_rowred.c — the row-reduction schedule (compiler/pass/schedule_rows.c):
 * rms_norm, layer_norm and softmax (with and without a causal mask) fused per row, their
 * reductions over vector lanes, the rows one parallel loop; reductions that read their
 * row through a reshape (GroupNorm's) read flat.
 *
 * Structure (each formulation built with rx_build_module up to lift_workspace at opt
 * level 2, no library, then rx_schedule_rows): the number of runs rewritten and of
 * reductions given lanes, and the shape of the result: one top-level parallel loop over
 * the rows, no reduction block left, a *_lanes local buffer per reduction, one serial
 * loop per reduction (its tail and the combine of its lanes are vectorized: a serial
 * combine was a chain of 16 dependent steps per row, 1.5x the time of a softmax over
 * rows of 42). Formulations:
 * nn.rms_norm; the exported RMSNorm (power(x, 2), mean, add, sqrt, divide, multiply:
 * simplify.c rewrites the spellings, fusion makes a run of it); nn.layer_norm;
 * nn.softmax; softmax after an additive causal mask from full + triu, and after a
 * where(i >= j) mask; after masks every head reads (row_reduction): GPT-2's bool mask
 * buffer sliced by the sequence, where(mask, x / 8, lowest); an additive (b, 1, 1, s)
 * float mask after a scale; masked_fill where(mask, lowest, x); the scale after the
 * where. Their selects' arm loads are bound to LETs (3 per kernel) and the C uses the
 * branch-free rx_sel_f32 (eager_selects). Not rewritten: a matmul (schedule_tile.c's
 * register tiles take it), a sum over a non-last axis (not contiguous along the
 * reduction). GroupNorm as exported (x (b, 8, 6, 5) viewed as (b, 2, 120), mean,
 * variance, normalize, viewed back): its two sums load x[b, g * 4 + k // 30, k // 5 %
 * 6, k % 5] (digits of k, not a unit step in any index) and get lanes all the same
 * (flat_load), checked against a float64 group norm too.
 * Shared factors of products (schedule_rows_share.c), taken: CBAM's spatial gate over
 * its plane, sum_k relu(x[b, c, k] + y[b, c, k] * sigmoid(s[b, 0, k])) (s shared by the
 * c rows), and CapsNet's routing sum over K = 16, sum_k u[b, i, j, k] * v[b, 0, j, k]
 * (v shared by the i rows): one run, one lanes buffer each; the matmul mm stays refused.
 * Their numerics against the serial order within 1e-6 relative to the row's sum of
 * |terms| and against float64 references at plane lengths 16, 37 (a tail) and 200.
 * Numerics: every scheduled kernel against the unscheduled kernel of the same function
 * (the serial order of O0) on the same seeded inputs, within 1e-6 relative to the
 * row's largest magnitude (the documented reassociation bound at these row lengths),
 * at row lengths with and without a tail (K % 16) and several row counts; rms_norm
 * and every softmax (masked) also against float64 references computed here.
 */
#include <math.h>

#include "kernel_run.h"
#include "module_text.h"
#include "../rx_check.h"

#include "../../../compiler/pass/schedule_int.h"

#define X3 P("x", TS("'b','s',40"))
#define W1 P("w", TS("40"))
#define SC P("x", TS("'b',4,'s','s'"))
#define C1(v) "{'const':" v ",'dtype':'f32'}"
#define MASK(...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'bool'}}"
/* GPT-2's causal mask: its (1, 1, 64, 64) buffer m sliced to (1, 1, s, s) as ms (the
   importer's match_cast after a slice by the sequence length) */
/* graph function NAME: the bindings BINDS, then r = softmax(LAST) its result */
#define SOFTMAX_OF(name, params, binds, last) \
    FN(name, params, binds "," B("r", "{'op':'nn.softmax','args':['" last "'],'attrs':{'axis':-1}}"), "r")
#define SLICED_MASK                                                                             \
    B("sl", "{'op':'strided_slice','args':['m'],'attrs':{'axes':[2,3],'begin':[0,0],'end':['s','s']}}") "," \
    "{'var':'ms','match_cast':'sl','type':" MASK("1,1,'s','s'") "},"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("rms", X3 "," W1,
       B("r", "{'op':'nn.rms_norm','args':['x','w'],'attrs':{'axes':[-1],'epsilon':1e-5}}"), "r") ","
    FN("rms_pt", X3 "," W1,
       B("p", "{'op':'power','args':['x'," C1("2.0") "]}") ","
       B("m", "{'op':'mean','args':['p'],'attrs':{'axis':[-1],'keepdims':true}}") ","
       B("e", "{'op':'add','args':['m'," C1("1e-5") "]}") ","
       B("q", "{'op':'sqrt','args':['e']}") ","
       B("d", "{'op':'divide','args':['x','q']}") ","
       B("r", "{'op':'multiply','args':['d','w']}"), "r") ","
    FN("ln", X3 "," W1 "," P("c", TS("40")),
       B("r", "{'op':'nn.layer_norm','args':['x','w','c'],'attrs':{'axes':[-1],'epsilon':1e-5}}"), "r") ","
    FN("sm", SC, B("r", "{'op':'nn.softmax','args':['x'],'attrs':{'axis':-1}}"), "r") ","
    FN("sm_triu", SC,
       B("f", "{'op':'full','args':[{'shape':['s','s']}," C1("-1e9") "]}") ","
       B("k", "{'op':'triu','args':['f'],'attrs':{'k':1}}") ","
       B("a", "{'op':'add','args':['x','k']}") ","
       B("r", "{'op':'nn.softmax','args':['a'],'attrs':{'axis':-1}}"), "r") ","
    FN("sm_where", SC,
       B("i", "{'op':'arange','args':[],'attrs':{'end':'s','dtype':'i64'}}") ","
       B("ir", "{'op':'reshape','args':['i',{'shape':['s',1]}]}") ","
       B("c", "{'op':'greater_equal','args':['ir','i']}") ","
       B("a", "{'op':'where','args':['c','x'," C1("-1e9") "]}") ","
       B("r", "{'op':'nn.softmax','args':['a'],'attrs':{'axis':-1}}"), "r") ","
    SOFTMAX_OF("sm_gpt2", SC "," P("m", MASK("1,1,64,64")),
       SLICED_MASK
       B("d", "{'op':'divide','args':['x'," C1("8.0") "]}") ","
       B("a", "{'op':'where','args':['ms','d'," C1("-3.4028235e38") "]}"), "a") ","
    SOFTMAX_OF("sm_addmask", SC "," P("m", TS("'b',1,1,'s'")),
       B("d", "{'op':'multiply','args':['x'," C1("0.125") "]}") ","
       B("a", "{'op':'add','args':['d','m']}"), "a") ","
    SOFTMAX_OF("sm_fill", SC "," P("m", MASK("'b',1,'s','s'")),
       B("a", "{'op':'where','args':['m'," C1("-3.4028235e38") ",'x']}"), "a") ","
    SOFTMAX_OF("sm_after", SC "," P("m", MASK("1,1,64,64")),
       SLICED_MASK
       B("a", "{'op':'where','args':['ms','x'," C1("-1e9") "]}") ","
       B("d", "{'op':'divide','args':['a'," C1("8.0") "]}"), "d") ","
    FN("mm", P("x", TS("'s',64")) "," P("w", TS("64,48")),
       B("r", "{'op':'matmul','args':['x','w']}"), "r") ","
    FN("sum1", X3, B("r", "{'op':'sum','args':['x'],'attrs':{'axis':[1]}}"), "r") ","
    FN("gn", P("x", TS("'b',8,6,5")),
       B("v", "{'op':'reshape','args':['x',{'shape':['b',2,120]}]}") ","
       B("m", "{'op':'mean','args':['v'],'attrs':{'axis':[-1],'keepdims':true}}") ","
       B("d", "{'op':'subtract','args':['v','m']}") ","
       B("q", "{'op':'multiply','args':['d','d']}") ","
       B("w", "{'op':'mean','args':['q'],'attrs':{'axis':[-1],'keepdims':true}}") ","
       B("e", "{'op':'add','args':['w'," C1("1e-5") "]}") ","
       B("t", "{'op':'sqrt','args':['e']}") ","
       B("n", "{'op':'divide','args':['d','t']}") ","
       B("r", "{'op':'reshape','args':['n',{'shape':['b',8,6,5]}]}"), "r")
    "}}";

/* Shared factors of products (schedule_rows_share.c): CBAM's spatial gate over its plane
   (the two reduce loops as one, as schedule_reduce.c leaves them) and CapsNet's routing
   sum over K = 16, each with a load other rows share as a factor of a product */
static const char SHARE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("gate", P("x", TS("'b',6,'s'")) "," P("y", TS("'b',6,'s'")) "," P("s", TS("'b',1,'s'")),
       B("g", "{'op':'sigmoid','args':['s']}") ","
       B("m", "{'op':'multiply','args':['y','g']}") ","
       B("a", "{'op':'add','args':['x','m']}") ","
       B("z", "{'op':'nn.relu','args':['a']}") ","
       B("r", "{'op':'sum','args':['z'],'attrs':{'axis':[-1]}}"), "r") ","
    FN("caps", P("u", TS("'b',7,10,16")) "," P("v", TS("'b',1,10,16")),
       B("p", "{'op':'multiply','args':['u','v']}") ","
       B("r", "{'op':'sum','args':['p'],'attrs':{'axis':[-1]}}"), "r")
    "}}";

static rx_module *fused(void)
{
    return fused_module(MODULE);
}

/* The loop function of graph function g, scheduled by rx_schedule_rows alone in a
 * module of its own: *runs, *lanes its counts. */
typedef struct rshape {
    int par_top;      /* top-level parallel FORs */
    int reduce_blks;  /* blocks with a reduce iterator left */
    int lanes_bufs;   /* *_lanes allocations */
    int arm_lets;     /* LETs of select arms' loads (armN) */
    int serial_in;    /* serial FORs inside a loop (a reduction's ko: the tail and the
                         lanes' combine are vectorized, never a serial chain) */
} rshape;

static void swalk(const rx_stmts *ss, rshape *r, int depth)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            r->par_top += depth == 0 && s->u.for_.loop_kind == RX_LOOP_PARALLEL;
            r->serial_in += depth > 0 && s->u.for_.loop_kind == RX_LOOP_SERIAL;
            swalk(&s->u.for_.body, r, depth + 1);
            break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++)
                r->reduce_blks += s->u.block.iters[k].kind == RX_ITER_REDUCE;
            swalk(&s->u.block.body, r, depth);
            break;
        case RX_S_LET:
            r->arm_lets += !strncmp(s->u.let.var->name, "arm", 3);
            swalk(&s->u.let.body, r, depth);
            break;
        case RX_S_IF:
            swalk(&s->u.if_.then_s, r, depth);
            swalk(&s->u.if_.else_s, r, depth);
            break;
        case RX_S_ALLOC: {
            const char *nm = s->u.alloc.buf->name;
            size_t n = strlen(nm);
            r->lanes_bufs += n >= 6 && !strcmp(nm + n - 6, "_lanes");
            break;
        }
        default: break;
        }
    }
}

/* The loop functions graph function g calls, in order (at most 4). */
static int kernels_of(const rx_module *m, const char *g, rx_func **out)
{
    const rx_func *f = rx_module_find(m, g);
    ck_assert_ptr_nonnull(f);
    int n = 0;
    const rx_block *bl = f->body->blocks[0];
    for (int i = 0; i < bl->nbindings && n < 4; i++) {
        const rx_node *v = bl->bindings[i].value;
        if (v->kind == RX_N_CALL && v->call_kind == RX_CALL_TIR) out[n++] = v->u.call.callee->u.global.fn;
    }
    return n;
}

static rshape shape_of(const rx_module *m, const char *g)
{
    rx_func *k[4];
    int n = kernels_of(m, g, k);
    rshape r = {0};
    for (int i = 0; i < n; i++) swalk(&k[i]->tbody, &r, 0);
    return r;
}

START_TEST(fires_on_formulations)
{
    rx_module *m = fused();
    int runs = -1, lanes = -1;
    ck_assert(rx_schedule_rows(m, &runs, &lanes));
    /* rms 1 run (1 lane reduction); rms_pt 2: the sum and mean over (b, s, 1) rows, then
       the normalize over (b, s) rows (its load m[i0, i1, 0] is not at a row iterator:
       not fused); ln 1 (2: sum, variance); sm, sm_triu, sm_where 1 each (2: max, sum);
       mm and sum1 none; gn 2 (the sum and mean, the sum of squares and mean: the
       normalize reads the (b, 2, 1) statistics at c // 4, no row iterator) */
    ck_assert_int_eq(runs, 13);
    ck_assert_int_eq(lanes, 20);
    /* serial: one ko loop per reduction (with the serial combine and tail, 3 each), plus
       the loops of nests outside the runs (sm_gpt2, sm_after, gn: 3) */
    static const struct { const char *g; int lanes, par, arms, serial; } want[] = {
        {"rms", 1, 1, 0, 1}, {"rms_pt", 1, 2, 0, 1}, {"ln", 2, 1, 0, 2}, {"sm", 2, 1, 0, 2},
        {"sm_triu", 2, 1, 0, 2}, {"sm_where", 2, 1, 3, 2}, {"sm_gpt2", 2, 1, 3, 5},
        {"sm_addmask", 2, 1, 0, 2}, {"sm_fill", 2, 1, 3, 2}, {"sm_after", 2, 1, 3, 5},
        {"gn", 2, 2, 0, 5}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        rshape r = shape_of(m, want[i].g);
        ck_assert_msg(r.par_top == want[i].par, "%s: %d top-level parallel loops", want[i].g,
                      r.par_top);
        ck_assert_msg(r.reduce_blks == 0, "%s: %d reduction blocks left", want[i].g, r.reduce_blks);
        ck_assert_msg(r.lanes_bufs == want[i].lanes, "%s: %d lanes buffers", want[i].g,
                      r.lanes_bufs);
        ck_assert_msg(r.arm_lets == want[i].arms, "%s: %d select arms' loads bound to LETs",
                      want[i].g, r.arm_lets);
        ck_assert_msg(r.serial_in == want[i].serial, "%s: %d serial inner loops", want[i].g,
                      r.serial_in);
    }
    const char *const not[] = {"mm", "sum1"};
    for (int i = 0; i < 2; i++) {
        rshape r = shape_of(m, not[i]);
        ck_assert_msg(r.par_top == 0 && r.lanes_bufs == 0 && r.reduce_blks == 1,
                      "%s: rewritten (%d parallel, %d lanes)", not[i], r.par_top, r.lanes_bufs);
    }
    rx_module_free(m);
}
END_TEST

/* The largest |v| of buffer k of run r (floats). */
static double max_abs(const kr_run *r, int k)
{
    const float *p = (const float *)r->buf[k];
    double m = 0;
    for (size_t i = 0; i < r->bytes[k] / 4; i++) m = fmax(m, fabs(p[i]));
    return m;
}

/* Buffers of u and s agree within rel * (1 + max |u's buffer|). */
static void close_runs(const kr_run *u, const kr_run *s, double rel, const char *what)
{
    ck_assert_int_eq(u->nbuf, s->nbuf);
    for (int k = 0; k < u->nbuf; k++) {
        ck_assert(u->bytes[k] == s->bytes[k]);
        const float *a = (const float *)u->buf[k], *b = (const float *)s->buf[k];
        double tol = rel * (1 + max_abs(u, k));
        for (size_t i = 0; i < u->bytes[k] / 4; i++)
            ck_assert_msg((isnan(a[i]) && isnan(b[i])) || fabs((double)a[i] - (double)b[i]) <= tol, "%s: buffer %d [%zu]: %.9g vs %.9g",
                          what, k, i, (double)a[i], (double)b[i]);
    }
}

/* float64 rms_norm of run r's x (buffer 0, rows x 40) and w (buffer 1) against the
   output (buffer 2). */
static void check_rms(const kr_run *r, int64_t rows, const char *what)
{
    const float *x = (const float *)r->buf[0], *w = (const float *)r->buf[1],
                *y = (const float *)r->buf[2];
    for (int64_t i = 0; i < rows; i++) {
        double ss = 0;
        for (int k = 0; k < 40; k++) ss += (double)x[i * 40 + k] * x[i * 40 + k];
        double inv = 1 / sqrt(ss / 40 + 1e-5);
        for (int k = 0; k < 40; k++) {
            double want = x[i * 40 + k] * inv * w[k];
            ck_assert_msg(fabs(y[i * 40 + k] - want) <= 1e-5 * (1 + fabs(want)), "%s [%lld, %d]: %g vs %g",
                          what, (long long)i, k, (double)y[i * 40 + k], want);
        }
    }
}

/* float64 softmax of run r's scores (buffer `in`, rows of s) against buffer `out`;
   the row index within a (s, s) plane is the query position i. mask 1: the scores
   plus mv above the diagonal (full + triu), 2: mv where i < j (where); mv is the
   kernel's 0-d constant buffer (seeded like every input). */
static void check_softmax(const kr_run *r, int in, int out, int64_t rows, int64_t s, int mask,
                          double mv, const char *what)
{
    const float *x = (const float *)r->buf[in], *y = (const float *)r->buf[out];
    for (int64_t i = 0; i < rows; i++) {
        double mx = -INFINITY, sum = 0, v[64];
        ck_assert_int_le(s, 64);
        for (int64_t j = 0; j < s; j++) {
            bool above = j > i % s;
            v[j] = mask == 2 && above ? mv : x[i * s + j] + (mask == 1 && above ? mv : 0.0);
            mx = fmax(mx, v[j]);
        }
        for (int64_t j = 0; j < s; j++) sum += exp(v[j] - mx);
        for (int64_t j = 0; j < s; j++) {
            double want = exp(v[j] - mx) / sum;
            ck_assert_msg(fabs(y[i * s + j] - want) <= 1e-6 + 1e-5 * want, "%s [%lld, %lld]: %g vs %g",
                          what, (long long)i, (long long)j, (double)y[i * s + j], want);
        }
    }
}

/* float64 softmax of the masked formulations (kind 0 sm_gpt2: m[q, j] ? x / c : lo;
   1 sm_addmask: x * c + m[b, j]; 2 sm_fill: m[b, q, j] ? lo : x; 3 sm_after: (m[q, j] ?
   x : lo) / c) of run r: x buffer `in`, mask `mk`, the 0-d constants in parameter order
   (c, lo; sm_after lo, c; sm_fill lo), the result `out`; b x 4 x s rows of s. */
static void check_masked(const kr_run *r, int in, int mk, int out, int64_t b, int64_t s, int kind,
                         const char *what)
{
    const float *x = (const float *)r->buf[in], *y = (const float *)r->buf[out];
    const uint8_t *mb = r->buf[mk];
    const float *mf = (const float *)r->buf[mk];
    double sc[2] = {0, 0};
    for (int q = 0, n = 0; q < r->nbuf && n < 2; q++)
        if (r->bytes[q] == 4) sc[n++] = *(const float *)r->buf[q];
    double c = kind == 3 ? sc[1] : sc[0], lo = kind == 3 ? sc[0] : kind == 2 ? sc[0] : sc[1];
    for (int64_t i = 0; i < b * 4 * s; i++) {
        int64_t bb = i / (4 * s), q = i % s;
        double mx = -INFINITY, sum = 0, v[64];
        ck_assert_int_le(s, 64);
        for (int64_t j = 0; j < s; j++) {
            double xv = x[i * s + j];
            switch (kind) {
            case 0: v[j] = mb[q * s + j] ? xv / (float)c : lo; break;
            case 1: v[j] = (double)(float)(xv * c) + mf[bb * s + j]; break;
            case 2: v[j] = mb[(bb * s + q) * s + j] ? lo : xv; break;
            default: v[j] = (mb[q * s + j] ? xv : lo) / c; break;
            }
            mx = fmax(mx, v[j]);
        }
        for (int64_t j = 0; j < s; j++) sum += exp(v[j] - mx);
        for (int64_t j = 0; j < s; j++) {
            double want = exp(v[j] - mx) / sum;
            ck_assert_msg(fabs(y[i * s + j] - want) <= 1e-5 * (1 + want), "%s [%lld, %lld]: %g vs %g",
                          what, (long long)i, (long long)j, (double)y[i * s + j], want);
        }
    }
}

/* float64 group norm (2 groups of 4 channels of 6 x 5, no affine) of run r's x (buffer
   `in`, b x 240) against buffer `out`; eps is the kernel's 0-d constant buffer (seeded
   like every input). */
static void check_gn(const kr_run *r, int in, int out, int64_t b, const char *what)
{
    const float *x = (const float *)r->buf[in], *y = (const float *)r->buf[out];
    double eps = 0;
    int neps = 0;
    for (int q = 0; q < r->nbuf; q++)
        if (r->bytes[q] == 4) eps = *(const float *)r->buf[q], neps++;
    ck_assert_int_eq(neps, 1);
    for (int64_t g = 0; g < b * 2; g++) {
        const float *xg = x + g * 120;
        double mean = 0, var = 0;
        for (int k = 0; k < 120; k++) mean += xg[k] / 120.0;
        for (int k = 0; k < 120; k++) var += (xg[k] - mean) * (xg[k] - mean) / 120.0;
        ck_assert(var + eps > 0.01); /* the seeded eps leaves a well-conditioned root */
        for (int k = 0; k < 120; k++) {
            double want = (xg[k] - mean) / sqrt(var + eps);
            ck_assert_msg(fabs(y[g * 120 + k] - want) <= 1e-5 * (1 + fabs(want)), "%s [%lld, %d]: %g vs %g",
                          what, (long long)g, k, (double)y[g * 120 + k], want);
        }
    }
}

/* The index of the buffer parameter of f named n. */
static int buf_index(const rx_func *f, const char *n)
{
    int k = 0;
    for (int i = 0; i < f->ntparams; i++) {
        if (!f->tparams[i].buf) continue;
        if (!strcmp(f->tparams[i].buf->name, n)) return k;
        k++;
    }
    ck_abort_msg("%s: no buffer %s", f->name, n);
    return -1;
}

START_TEST(numerics)
{
    rx_module *mu = fused(), *ms = fused();
    ck_assert(rx_schedule_rows(ms, NULL, NULL));
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    void *hu = kr_load(mu, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"b", "s"};
    static const int64_t shapes[][2] = {{1, 1}, {1, 37}, {3, 32}, {2, 64}};
    const char *const gs[] = {"rms",     "rms_pt",     "ln",      "sm",      "sm_triu",
                              "sm_where", "sm_gpt2", "sm_addmask", "sm_fill", "sm_after",
                              "gn"};
    for (size_t g = 0; g < sizeof gs / sizeof gs[0]; g++)
        for (size_t v = 0; v < sizeof shapes / sizeof shapes[0]; v++) {
            rx_func *ku[4], *ks[4];
            int n = kernels_of(mu, gs[g], ku);
            ck_assert_int_eq(kernels_of(ms, gs[g], ks), n);
            for (int k = 0; k < n; k++) {
                char what[80];
                snprintf(what, sizeof what, "%s/%s b=%lld s=%lld", gs[g], ku[k]->name,
                         (long long)shapes[v][0], (long long)shapes[v][1]);
                kr_run ru, rs;
                int nv = ku[k]->nsvars;
                kr_exec(hu, ku[k], names, shapes[v], nv < 2 ? 2 : nv, 11 + v, &ru);
                kr_exec(hs, ks[k], names, shapes[v], nv < 2 ? 2 : nv, 11 + v, &rs);
                close_runs(&ru, &rs, 1e-6, what);
                int64_t rows = shapes[v][0] * shapes[v][1];
                if (g == 0) check_rms(&rs, rows, what);
                if (g == 10) {
                    ck_assert_int_eq(n, 1); /* one kernel: x in, r out */
                    check_gn(&rs, buf_index(ks[k], "x"), buf_index(ks[k], "r"), shapes[v][0], what);
                } else if (g >= 6 && ks[k]->ntparams >= 5) {
                    const char *mn = g == 6 || g == 9 ? "ms" : "m";
                    int in = buf_index(ks[k], "x"), mk = buf_index(ks[k], mn),
                        out = buf_index(ks[k], "r");
                    check_masked(&rs, in, mk, out, shapes[v][0], shapes[v][1], (int)g - 6, what);
                } else if (g >= 3 && g < 6 && ks[k]->ntparams >= 3) {
                    int in = buf_index(ks[k], "x"), out = in + 1;
                    while (out < rs.nbuf && rs.bytes[out] != rs.bytes[in]) out++; /* the result */
                    ck_assert_int_lt(out, rs.nbuf);
                    double mv = 0;
                    for (int q = 0; q < rs.nbuf; q++)
                        if (rs.bytes[q] == 4) mv = *(const float *)rs.buf[q]; /* c0 */
                    check_softmax(&rs, in, out, rows * 4, shapes[v][1], g - 3, mv, what);
                }
                kr_free(&ru);
                kr_free(&rs);
            }
        }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

/* The one loop function graph function g calls. */
static rx_func *one_kernel(const rx_module *m, const char *g)
{
    rx_func *k[4];
    ck_assert_int_eq(kernels_of(m, g, k), 1);
    return k[0];
}

START_TEST(takes_shared_factors)
{
    rx_module *m = fused_module(SHARE);
    int runs = -1, lanes = -1;
    ck_assert(rx_schedule_rows(m, &runs, &lanes));
    ck_assert_int_eq(runs, 2); /* refused while a shared factor of a product was */
    ck_assert_int_eq(lanes, 2);
    const char *const yes[] = {"gate", "caps"};
    for (int i = 0; i < 2; i++) {
        rshape r = shape_of(m, yes[i]);
        ck_assert_msg(r.par_top == 1 && r.lanes_bufs == 1 && r.reduce_blks == 0,
                      "%s: %d parallel, %d lanes, %d reduction blocks", yes[i], r.par_top,
                      r.lanes_bufs, r.reduce_blks);
    }
    rx_module_free(m);
}
END_TEST

static const float *fbuf(const kr_run *r, const rx_func *f, const char *n)
{
    return (const float *)r->buf[buf_index(f, n)];
}

/* Output r of run u (unscheduled) and s (scheduled) against each other within 1e-6
   relative to the row's sum of |terms| and against the float64 rows ref[0 .. rows). */
static void check_shared(const float *u, const float *s, const double *ref, const double *mag,
                       int64_t rows, const char *what)
{
    for (int64_t i = 0; i < rows; i++) {
        double tol = 1e-6 * (1 + mag[i]);
        ck_assert_msg(fabs((double)u[i] - (double)s[i]) <= tol, "%s row %lld: %.9g vs %.9g",
                      what, (long long)i, (double)u[i], (double)s[i]);
        ck_assert_msg(fabs((double)s[i] - ref[i]) <= tol, "%s row %lld: %.9g vs ref %.9g", what,
                      (long long)i, (double)s[i], ref[i]);
    }
}

START_TEST(shared_numerics)
{
    rx_module *mu = fused_module(SHARE), *ms = fused_module(SHARE);
    ck_assert(rx_schedule_rows(ms, NULL, NULL));
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    void *hu = kr_load(mu, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"b", "s"};
    static const int64_t shapes[][2] = {{1, 16}, {2, 37}, {3, 200}};
    for (size_t v = 0; v < sizeof shapes / sizeof shapes[0]; v++) {
        int64_t b = shapes[v][0], K = shapes[v][1];
        char what[64];
        kr_run ru, rs;
        /* gate: (b, 6) rows over the plane K */
        rx_func *fu = one_kernel(mu, "gate"), *fs = one_kernel(ms, "gate");
        kr_exec(hu, fu, names, shapes[v], 2, 5 + v, &ru);
        kr_exec(hs, fs, names, shapes[v], 2, 5 + v, &rs);
        const float *x = fbuf(&rs, fs, "x"), *y = fbuf(&rs, fs, "y"), *sg = fbuf(&rs, fs, "s");
        double ref[64], mag[64];
        for (int64_t i = 0; i < b * 6; i++) {
            ref[i] = mag[i] = 0;
            for (int64_t k = 0; k < K; k++) {
                double t = (double)x[i * K + k] +
                           (double)y[i * K + k] / (1 + exp(-(double)sg[i / 6 * K + k]));
                ref[i] += t > 0 ? t : 0;
                mag[i] += fabs(t);
            }
        }
        snprintf(what, sizeof what, "gate b=%lld s=%lld", (long long)b, (long long)K);
        check_shared(fbuf(&ru, fu, "r"), fbuf(&rs, fs, "r"), ref, mag, b * 6, what);
        kr_free(&ru);
        kr_free(&rs);
        /* caps: (b, 7, 10) rows over K = 16 */
        fu = one_kernel(mu, "caps");
        fs = one_kernel(ms, "caps");
        kr_exec(hu, fu, names, shapes[v], 2, 9 + v, &ru);
        kr_exec(hs, fs, names, shapes[v], 2, 9 + v, &rs);
        const float *uu = fbuf(&rs, fs, "u"), *vv = fbuf(&rs, fs, "v");
        double cref[210], cmag[210];
        for (int64_t i = 0; i < b * 70; i++) {
            int64_t bi = i / 70, j = i % 10;
            cref[i] = cmag[i] = 0;
            for (int k = 0; k < 16; k++) {
                double t = (double)uu[i * 16 + k] * (double)vv[(bi * 10 + j) * 16 + k];
                cref[i] += t;
                cmag[i] += fabs(t);
            }
        }
        snprintf(what, sizeof what, "caps b=%lld", (long long)b);
        check_shared(fbuf(&ru, fu, "r"), fbuf(&rs, fs, "r"), cref, cmag, b * 70, what);
        kr_free(&ru);
        kr_free(&rs);
    }
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

/* Uses of rx_sel_f32 (c_expr.c's branch-free select) in the C of module m. */
static int sel_uses(const rx_module *m)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0};
    rx_codegen_opts co = {.isa_versions = true};
    ck_assert_msg(rx_codegen_c_with(m, &co, &c, &d), "codegen: %s", diags_str(&d));
    int n = 0;
    for (const char *p = rx_sb_str(&c); (p = strstr(p, "rx_sel_f32(")); p++) n++;
    rx_sb_free(&c);
    rx_diags_free(&d);
    return n;
}

/* The masked formulations' selects read x in an arm: unscheduled, a branch (the load
   may not be hoisted: codegen cannot prove it in bounds); scheduled, the loads are LETs
   and every such select is rx_sel_f32: 3 per kernel (max's lanes and tail, exp) in each
   of 3 ISA versions, for sm_where, sm_gpt2, sm_fill and sm_after. */
START_TEST(eager_selects)
{
    rx_module *mu = fused(), *ms = fused();
    ck_assert(rx_schedule_rows(ms, NULL, NULL));
    ck_assert(rx_schedule_cpu(ms, NULL, NULL));
    /* unscheduled: only sm_triu's select(i < j, c, 0), which loads nothing, in each of
       the 3 versions of its kernel (a kernel computing exp has exact ISA versions at
       every level: its fmaf is a libm call in the baseline) */
    int nu = sel_uses(mu), ns = sel_uses(ms);
    ck_assert_int_le(nu, 4 * 3);
    ck_assert_int_ge(ns - nu, 4 * 3 * 3);
    rx_module_free(mu);
    rx_module_free(ms);
}
END_TEST

static Suite *rowred_suite(void)
{
    Suite *s = suite_create("schedule_rowred");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, fires_on_formulations);
    tcase_add_test(tc, numerics);
    tcase_add_test(tc, eager_selects);
    tcase_add_test(tc, takes_shared_factors);
    tcase_add_test(tc, shared_numerics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(rowred_suite()); }
