/*
 * test_schedule_attn.c — attention's two products, written the ways people write them,
 * get the packed register-tiled schedule through whatever fused producers their operands
 * come through (compiler/pass/schedule_tile.c; fuse_tir_simplify.c's division split;
 * issue 13, item 1).
 *
 * Structure: each graph function is one formulation over projections (b, s, heads * d)
 * with symbolic b and s (tests/bench/bench_attention.py times the same ones at full
 * size): scores by q @ permute(k) then * scale, K pre-transposed, the scale folded into
 * q, grouped-query k by repeat and by expand_dims + broadcast_to + reshape, q and k
 * sliced out of one qkv projection; the context by probs @ permute(reshape(v)), with a
 * repeated v, and with the permute back fused after it. Built with rx_build_module up to
 * lift_workspace (legalize, FuseOps, FuseTIR at opt level 2, no library), then tiled.
 * For every formulation the product's kernel must have: a *_pack panel (transposing for
 * the scores, copying for the context, which a symbolic row count puts under IF (s >=
 * 16)), the 6 x 16 accumulator, its update vectorized along J, and no // or % by a
 * symbolic divisor left in any load of the update (the reshape's index split by the
 * batch loop).
 * Numerics: every kernel tiled (baseline ISA version) is bit-identical to the same
 * kernel untiled at (b, s) = (2, 37) (partial tiles, the packed branch) and (1, 5)
 * (the unpacked branch), and the tiled result equals a float64 reference of the
 * formulation computed here from the kernel's own inputs (within 1e-5 relative).
 */
#include <math.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"

enum { HEADS = 4, D = 16, GROUP = 2, KVH = HEADS / GROUP };

#define TS(...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'f32'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define B(var, value) "{'var':'" var "','value':" value "}"
#define OP(op, args, attrs) "{'op':'" op "','args':[" args "]" attrs "}"
#define FN(name, params, binds, res)                                                          \
    "'" name "':{'kind':'relax','params':[" params "],'attrs':{'upper_bounds':{'b':8,"        \
    "'s':256}},'body':{'blocks':[{'dataflow':true,'bindings':[" binds "]}],'result':'" res "'}}"
/* x (b, s, nh * 16) -> (b, nh, s, 16), or with axes [0,2,3,1] -> (b, nh, 16, s) */
#define HEADS_OF(x, src, nh, axes)                                                            \
    B(x "_h", OP("reshape", "'" src "',{'shape':['b','s'," nh ",16]}", "")) ","              \
    B(x, OP("permute_dims", "'" x "_h'", ",'attrs':{'axes':[" axes "]}"))
#define T013 "0,2,1,3"
#define SCALE ",{'const':0.25,'dtype':'f32'}"
#define QK_PARAMS(kvw) P("q_proj", TS("'b','s',64")) "," P("k_proj", TS("'b','s'," kvw))
#define KT B("k_t", OP("permute_dims", "'k'", ",'attrs':{'axes':[0,1,3,2]}")) ","
#define QK_SCALED(kt)                                                                         \
    B("qk", OP("matmul", "'q','" kt "'", "")) "," B("sc", OP("multiply", "'qk'" SCALE, ""))

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("pt", QK_PARAMS("64"),
       HEADS_OF("q", "q_proj", "4", T013) "," HEADS_OF("k", "k_proj", "4", T013) "," KT
       QK_SCALED("k_t"), "sc") ","
    FN("kt", QK_PARAMS("64"),
       HEADS_OF("q", "q_proj", "4", T013) "," HEADS_OF("k", "k_proj", "4", "0,2,3,1") ","
       QK_SCALED("k"), "sc") ","
    FN("qscale", QK_PARAMS("64"),
       HEADS_OF("q0", "q_proj", "4", T013) "," B("q", OP("multiply", "'q0'" SCALE, "")) ","
       HEADS_OF("k", "k_proj", "4", T013) "," KT B("qk", OP("matmul", "'q','k_t'", "")), "qk") ","
    FN("gqa", QK_PARAMS("32"),
       HEADS_OF("q", "q_proj", "4", T013) "," HEADS_OF("k0", "k_proj", "2", T013) ","
       B("k", OP("repeat", "'k0'", ",'attrs':{'repeats':2,'axis':1}")) "," KT
       QK_SCALED("k_t"), "sc") ","
    FN("bcast", QK_PARAMS("32"),
       HEADS_OF("q", "q_proj", "4", T013) "," HEADS_OF("k0", "k_proj", "2", T013) ","
       B("k1", OP("expand_dims", "'k0'", ",'attrs':{'axis':[2]}")) ","
       B("k2", OP("broadcast_to", "'k1',{'shape':['b',2,2,'s',16]}", "")) ","
       B("k", OP("reshape", "'k2',{'shape':['b',4,'s',16]}", "")) "," KT
       QK_SCALED("k_t"), "sc") ","
    FN("slice", P("qkv", TS("'b','s',192")),
       B("qs", OP("strided_slice", "'qkv'", ",'attrs':{'axes':[2],'begin':[0],'end':[64]}")) ","
       B("ks", OP("strided_slice", "'qkv'", ",'attrs':{'axes':[2],'begin':[64],'end':[128]}")) ","
       HEADS_OF("q", "qs", "4", T013) "," HEADS_OF("k", "ks", "4", T013) "," KT
       QK_SCALED("k_t"), "sc") ","
    FN("pv", P("probs", TS("'b',4,'s','s'")) "," P("v_proj", TS("'b','s',64")),
       HEADS_OF("v", "v_proj", "4", T013) "," B("ctx", OP("matmul", "'probs','v'", "")), "ctx") ","
    FN("pv_gqa", P("probs", TS("'b',4,'s','s'")) "," P("v_proj", TS("'b','s',32")),
       HEADS_OF("v0", "v_proj", "2", T013) ","
       B("v", OP("repeat", "'v0'", ",'attrs':{'repeats':2,'axis':1}")) ","
       B("ctx", OP("matmul", "'probs','v'", "")), "ctx") ","
    FN("pv_out", P("probs", TS("'b',4,'s','s'")) "," P("v_proj", TS("'b','s',64")),
       HEADS_OF("v", "v_proj", "4", T013) "," B("ctx", OP("matmul", "'probs','v'", "")) ","
       B("ctx_t", OP("permute_dims", "'ctx'", ",'attrs':{'axes':[0,2,1,3]}")) ","
       B("ctx_m", OP("reshape", "'ctx_t',{'shape':['b','s',64]}", "")), "ctx_m")
    "}}";

static const char *const FORMS[] = {"pt", "kt", "qscale", "gqa", "bcast", "slice",
                                    "pv", "pv_gqa", "pv_out"};
enum { NFORMS = sizeof FORMS / sizeof FORMS[0], NSCORES = 6 };

/* The module after FuseTIR and workspace lifting (opt level 2, no library calls). */
static rx_module *fused(void)
{
    return fused_module(MODULE);
}

/* The loop function of graph function gname that holds the product: its first call
 * (every producer fuses into the product; pv_out's permute back follows it). */
static rx_func *product(const rx_module *m, const char *gname)
{
    const rx_func *g = rx_module_find(m, gname);
    ck_assert_ptr_nonnull(g);
    const rx_block *bl = g->body->blocks[0];
    for (int i = 0; i < bl->nbindings; i++) {
        const rx_node *v = bl->bindings[i].value;
        if (v->kind != RX_N_CALL || v->call_kind != RX_CALL_TIR) continue;
        return v->u.call.callee->u.global.fn;
    }
    ck_abort_msg("%s: no call_tir", gname);
    return NULL;
}

/* Facts of a tiled kernel. */
typedef struct afacts {
    int packs, accs, vec_updates, divmods; /* accs: 6 x 16 accumulators */
    bool sym_if;      /* a top-level IF on s >= 16 */
} afacts;

/* Whether e divides by a non-literal (a division per multiply-add: a literal divisor is
 * a shift or a multiplication in C, and pv_gqa's head index i1 // 2 a loop invariant). */
static bool has_divmod(const rx_expr *e)
{
    if (!e) return false;
    int64_t v;
    if ((e->kind == RX_E_FLOORDIV || e->kind == RX_E_FLOORMOD) && !rx_expr_is_const(e->u.op.b, &v))
        return true;
    for (int i = 0; i < rx_expr_nchildren(e); i++)
        if (has_divmod(rx_expr_child(e, i))) return true;
    return false;
}

/* Counts // and % in the load indices of e. */
static int load_divmods(const rx_expr *e)
{
    if (!e) return 0;
    int n = 0;
    if (e->kind == RX_E_LOAD)
        for (int k = 0; k < e->u.load.nidx; k++) n += has_divmod(e->u.load.idx[k]);
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += load_divmods(rx_expr_child(e, i));
    return n;
}

static void awalk(const rx_stmts *ss, afacts *f, bool in_vec)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            awalk(&s->u.for_.body, f, in_vec || s->u.for_.loop_kind == RX_LOOP_VECTORIZED);
            break;
        case RX_S_IF:
            awalk(&s->u.if_.then_s, f, in_vec);
            awalk(&s->u.if_.else_s, f, in_vec);
            break;
        case RX_S_BLOCK:
            awalk(&s->u.block.init, f, in_vec);
            awalk(&s->u.block.body, f, in_vec);
            break;
        case RX_S_ALLOC: {
            const rx_buffer *b = s->u.alloc.buf;
            size_t n = strlen(b->name);
            int64_t r = 0, c = 0;
            if (n > 5 && !strcmp(b->name + n - 5, "_pack")) f->packs++;
            if (n > 4 && !strcmp(b->name + n - 4, "_acc") && b->ndim == 2 &&
                rx_expr_is_const(b->shape[0], &r) && rx_expr_is_const(b->shape[1], &c) &&
                r == 6 && c == 16)
                f->accs++;
            break;
        }
        case RX_S_STORE: {
            size_t n = strlen(s->u.store.buf->name);
            bool acc = n > 4 && !strcmp(s->u.store.buf->name + n - 4, "_acc");
            /* the update: acc[..] = acc[..] + A * B (a load of acc on the right) */
            if (acc && in_vec && s->u.store.value->kind == RX_E_ADD) {
                f->vec_updates++;
                f->divmods += load_divmods(s->u.store.value);
            }
            break;
        }
        default: break;
        }
    }
}

static afacts afacts_of(const rx_func *f)
{
    afacts a = {0};
    awalk(&f->tbody, &a, false);
    for (int i = 0; i < f->tbody.n; i++) {
        const rx_stmt *s = f->tbody.items[i];
        if (s->kind == RX_S_IF && s->u.if_.cond->kind == RX_E_GE) {
            int64_t v;
            a.sym_if |= rx_expr_is_const(s->u.if_.cond->u.op.b, &v) && v == 16;
        }
    }
    return a;
}

START_TEST(every_form_tiled)
{
    rx_module *m = fused();
    int n = 0;
    ck_assert(rx_schedule_tile(m, &n));
    ck_assert_int_ge(n, NFORMS - 1); /* pv and pv_out share their product's kernel */
    for (int i = 0; i < NFORMS; i++) {
        afacts a = afacts_of(product(m, FORMS[i]));
        bool scores = i < NSCORES;
        /* scores: one transposing panel; context: the packed branch and the plain one */
        ck_assert_msg(a.packs == 1, "%s: %d panels", FORMS[i], a.packs);
        ck_assert_msg(scores ? !a.sym_if : a.sym_if, "%s: IF (s >= 16) %d", FORMS[i], a.sym_if);
        ck_assert_msg(a.accs >= (scores ? 2 : 4), "%s: %d 6 x 16 tiles", FORMS[i], a.accs);
        ck_assert_msg(a.vec_updates >= 2, "%s: %d vectorized updates", FORMS[i], a.vec_updates);
        ck_assert_msg(a.divmods == 0, "%s: %d // or %% in the update's loads", FORMS[i], a.divmods);
    }
    rx_module_free(m);
}
END_TEST

/* The float64 reference of form fi at element e of its output, from the kernel's
 * inputs (the tensors as the graph function takes them). */
/* The contents of f's buffer parameter called name in run r, or NULL. */
static const float *buf_named(const rx_func *f, const kr_run *r, const char *name)
{
    int bi = 0;
    for (int k = 0; k < f->ntparams; k++) {
        const rx_buffer *b = f->tparams[k].buf;
        if (!b) continue;
        if (!strcmp(b->name, name)) return (const float *)r->buf[bi];
        bi++;
    }
    return NULL;
}

static double reference(int fi, const rx_func *fn, const kr_run *r, int64_t s, size_t e, bool out,
                        double scale)
{
    const char *xn = fi < NSCORES ? (!strcmp(FORMS[fi], "slice") ? "qkv" : "q_proj") : "probs";
    const float *x = buf_named(fn, r, xn), *y = buf_named(fn, r, fi < NSCORES ? "k_proj" : "v_proj");
    ck_assert(x != NULL && (y != NULL || !strcmp(FORMS[fi], "slice")));
    const char *f = FORMS[fi];
    double acc = 0;
    if (fi < NSCORES) { /* e = ((bi * 4 + h) * s + i) * s + j */
        int64_t j = (int64_t)(e % (size_t)s), i = (int64_t)(e / (size_t)s % (size_t)s);
        int64_t h = (int64_t)(e / (size_t)(s * s) % HEADS), bi = (int64_t)(e / (size_t)(s * s * HEADS));
        bool kv2 = !strcmp(f, "gqa") || !strcmp(f, "bcast");
        int64_t kw = kv2 ? KVH * D : HEADS * D, kh = kv2 ? h / GROUP : h;
        for (int64_t k = 0; k < D; k++) {
            double q, kk;
            if (!strcmp(f, "slice")) {
                q = x[(bi * s + i) * 192 + h * D + k];
                kk = x[(bi * s + j) * 192 + 64 + h * D + k];
            } else {
                q = x[(bi * s + i) * 64 + h * D + k];
                kk = y[(bi * s + j) * kw + kh * D + k];
            }
            acc += q * kk;
        }
        return acc * scale;
    }
    /* context: probs (b, 4, s, s), v_proj (b, s, kw); out (b, 4, s, 16) or (b, s, 64) */
    bool g = !strcmp(f, "pv_gqa");
    int64_t c = (int64_t)(e % D), h, i, bi;
    if (out) {
        h = (int64_t)(e / D % HEADS);
        i = (int64_t)(e / (D * HEADS) % (size_t)s);
        bi = (int64_t)(e / (size_t)(D * HEADS * s));
    } else {
        i = (int64_t)(e / D % (size_t)s);
        h = (int64_t)(e / (size_t)(D * s) % HEADS);
        bi = (int64_t)(e / (size_t)(D * s * HEADS));
    }
    int64_t kw = g ? KVH * D : HEADS * D, vh = g ? h / GROUP : h;
    for (int64_t k = 0; k < s; k++)
        acc += (double)x[((bi * HEADS + h) * s + i) * s + k] * y[(bi * s + k) * kw + vh * D + c];
    return acc;
}

/* The index among f's buffer parameters of the product's result (*ctx_m: it is the
 * permuted-back (b, s, heads * d) one); -1 when none. */
static int buffer_index(const rx_func *f, bool *ctx_m)
{
    static const char *const names[] = {"sc", "qk", "ctx_m", "ctx"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        int bi = 0;
        for (int k = 0; k < f->ntparams; k++) {
            const rx_buffer *b = f->tparams[k].buf;
            if (!b) continue;
            if (!strcmp(b->name, names[n])) {
                *ctx_m = n == 2;
                return bi;
            }
            bi++;
        }
    }
    return -1;
}

/* The scale the kernel was given: its 0-d buffer (the constant 0.25 as a parameter,
 * which kr_exec fills with a random value like every buffer); 1 when none. */
static double scale_of(const rx_func *f, const kr_run *r)
{
    int bi = 0;
    for (int k = 0; k < f->ntparams; k++) {
        const rx_buffer *b = f->tparams[k].buf;
        if (!b) continue;
        if (b->ndim == 0) {
            float v;
            memcpy(&v, r->buf[bi], 4);
            return v;
        }
        bi++;
    }
    return 1;
}

START_TEST(bit_exact_and_numpy)
{
    rx_module *mu = fused(), *mt = fused();
    ck_assert(rx_schedule_tile(mt, NULL));
    ck_assert(rx_schedule_cpu(mt, NULL, NULL));
    ck_assert(rx_schedule_cpu(mu, NULL, NULL));
    void *hu = kr_load(mu, "base"), *ht = kr_load(mt, "base");
    const char *const names[] = {"b", "s"};
    static const int64_t vals[][2] = {{2, 37}, {1, 5}};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++)
        for (int i = 0; i < NFORMS; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s b=%lld s=%lld", FORMS[i], (long long)vals[v][0],
                     (long long)vals[v][1]);
            kr_run ru, rt;
            bool ctx_m = false;
            kr_exec(hu, product(mu, FORMS[i]), names, vals[v], 2, 5, &ru);
            kr_exec(ht, product(mt, FORMS[i]), names, vals[v], 2, 5, &rt);
            kr_same(&ru, &rt, what);
            /* the result: sc (scaled scores; a scores kernel also writes qk), else qk,
             * ctx_m (the permute back fused), else ctx */
            int out = buffer_index(product(mt, FORMS[i]), &ctx_m);
            double scale = scale_of(product(mt, FORMS[i]), &rt);
            const void *ob = out >= 0 ? rt.buf[out] : NULL;
            ck_assert_msg(ob != NULL, "%s: no output buffer", what);
            size_t ne = rt.bytes[out] / 4;
            for (size_t e = 0; e < ne; e++) {
                float got;
                memcpy(&got, rt.buf[out] + 4 * e, 4);
                double want = reference(i, product(mt, FORMS[i]), &rt, vals[v][1], e, ctx_m, scale);
                ck_assert_msg(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "%s [%zu]: %g vs %g",
                              what, e, (double)got, want);
            }
            kr_free(&ru);
            kr_free(&rt);
        }
    dlclose(hu);
    dlclose(ht);
    rx_module_free(mu);
    rx_module_free(mt);
}
END_TEST

static Suite *attn_suite(void)
{
    Suite *s = suite_create("schedule_attn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, every_form_tiled);
    tcase_add_test(tc, bit_exact_and_numpy);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(attn_suite()); }
