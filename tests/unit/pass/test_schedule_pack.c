/*
 * test_schedule_pack.c — the packing of B into a per-thread panel by the matmul tiling
 * (compiler/pass/schedule_tile.c, "Packing" in its file essay).
 *
 * Structure: which legalized matmuls pack (and the transposing panel of attention's
 * Q @ K^T, a hand-written reduction, with a literal and a symbolic K) (static with M, N
 * and K all ragged, K past the panel's 2048 rows; K = 1000 short enough to stay
 * unblocked; symbolic K and N with a literal M: 512 rows; a batch matmul; a symbolic M,
 * under IF (M >= 16) with the unpacked nest in the ELSE) and which do not (fewer than
 * 16 rows, K below 128, the rows-first order of few J tiles, one row); the panel's shape, where its ALLOC stands (inside the
 * parallel loop: one panel per thread), the packing loops ahead of the row tiles, and
 * the K blocking that follows the panel's depth (2048 f32 rows for a literal K, 512 for a
 * symbolic one).
 * Numerics: each kernel, packed or not, gives bit-identical results to the untiled
 * kernel of the same function (the baseline ISA version, which fuses nothing), at
 * symbolic values with partial tiles in every direction and two K blocks of 512 + 8,
 * with a literal K in two blocks of 2048 + 52,
 * at 1, and with an empty reduction (K = 0 stores the init); the AVX-512 version
 * agrees with the baseline within f32 rounding.
 * C text: every panel is a stack array used through a pointer, qkt's 4 KiB one too.
 */
#include <math.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/pass.h"

#define TS(dt, ...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'" dt "'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define FN(name, params, value)                                                             \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[{'dataflow':true,"   \
    "'bindings':[{'var':'r','value':" value "}]}],'result':'r'}}"
#define MM(name, xs, ws) FN(name, P("x", TS("f32", xs)) "," P("w", TS("f32", ws)), \
                            "{'op':'matmul','args':['x','w']}")

/* Attention's scores, C[h, i, j] = sum_k A[h, i, k] * B[h, j, k]: B's rows are J, so no
 * load steps by 1 with J until the panel transposes them. A graph function gname calls
 * the loop function gname_tir (a reduction grid, as te_build writes one). */
#define QKT(name, kx)                                                                      \
    "'" name "_tir':{'kind':'tir','params':["                                              \
    "{'name':'A','buffer':{'shape':[2,'n'," kx "],'dtype':'f32'}},"                        \
    "{'name':'B','buffer':{'shape':[2,'n'," kx "],'dtype':'f32'}},"                        \
    "{'name':'C','buffer':{'shape':[2,'n','n'],'dtype':'f32'}}],'body':[{'grid':"          \
    "['h','i','j','k'],'extents':[2,'n','n'," kx "],'body':[{'block':'qk','init':"          \
    "[{'store':'C[h, i, j]','value':'0.0'}],'body':"                                       \
    "[{'store':'C[h, i, j]','value':'C[h, i, j] + A[h, i, k] * B[h, j, k]'}]}]}]},"        \
    FN(name, P("x", TS("f32", "2,'n'," kx)) "," P("w", TS("f32", "2,'n'," kx)),              \
       "{'call_tir':'@" name "_tir','args':['x','w'],'out':" TS("f32", "2,'n','n'") "}")

/* The scores with a factor of B's that the rows do not change, C[h, i, j] = sum_k A[h, i, k]
 * * (B[h, j, k] / sqrt(S[h, j, 0] + 1)) (CapsNet's routing agreement with the squash of
 * v, as fusion leaves it): the panel holds the whole quotient. */
#define QKT_F(name)                                                                        \
    "'" name "_tir':{'kind':'tir','params':["                                              \
    "{'name':'A','buffer':{'shape':[2,'n',24],'dtype':'f32'}},"                            \
    "{'name':'B','buffer':{'shape':[2,'n',24],'dtype':'f32'}},"                            \
    "{'name':'S','buffer':{'shape':[2,'n',1],'dtype':'f32'}},"                             \
    "{'name':'C','buffer':{'shape':[2,'n','n'],'dtype':'f32'}}],'body':[{'grid':"          \
    "['h','i','j','k'],'extents':[2,'n','n',24],'body':[{'block':'qk','init':"             \
    "[{'store':'C[h, i, j]','value':'0.0'}],'body':"                                       \
    "[{'store':'C[h, i, j]','value':'C[h, i, j] + A[h, i, k] * (B[h, j, k] / "             \
    "sqrt(S[h, j, 0] + 1.0))'}]}]}]},"                                                      \
    FN(name, P("x", TS("f32", "2,'n',24")) "," P("w", TS("f32", "2,'n',24")) ","            \
       P("s", TS("f32", "2,'n',1")),                                                        \
       "{'call_tir':'@" name "_tir','args':['x','w','s'],'out':" TS("f32", "2,'n','n'") "}")

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    MM("ragged", "70,2100", "2100,100") ","
    MM("unblocked", "40,1000", "1000,160") ","
    MM("symk", "64,'k'", "'k','m'") ","
    MM("batch", "2,48,200", "2,200,130") ","
    MM("few_rows", "12,600", "600,140") ","
    MM("sym_rows", "'n',300", "300,160") ","
    MM("short_k", "64,64", "64,160") ","
    MM("narrow", "64,300", "300,48") ","
    MM("row", "1,600", "600,'m'") ","
    QKT("qkt", "64") ","
    QKT("qkt_k", "'d'") ","
    QKT_F("qkt_f")
    "}}";

static rx_module *legalized(void) { return load_legalized(MODULE); }

static rx_func *callee(const rx_module *m, const char *gname) { return tir_callee(m, gname); }

/* The packing facts of a function body. */
typedef struct pfacts {
    int packs;              /* local ALLOCs named *_pack */
    int64_t shape[2];       /* the first one's shape */
    int depth;              /* loops around it */
    bool in_parallel;       /* some enclosing loop is parallel */
    const rx_stmt *loop;    /* the loop whose body holds it */
} pfacts;

static void pwalk(const rx_stmts *ss, pfacts *f, int depth, bool par, const rx_stmt *loop)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) {
            pwalk(&s->u.for_.body, f, depth + 1, par || s->u.for_.loop_kind == RX_LOOP_PARALLEL,
                  s);
        } else if (s->kind == RX_S_IF) {
            pwalk(&s->u.if_.then_s, f, depth, par, loop);
            pwalk(&s->u.if_.else_s, f, depth, par, loop);
        } else if (s->kind == RX_S_ALLOC) {
            const rx_buffer *b = s->u.alloc.buf;
            size_t n = strlen(b->name);
            if (b->scope != RX_SCOPE_LOCAL || n < 5 || strcmp(b->name + n - 5, "_pack")) continue;
            if (!f->packs++) {
                ck_assert_int_eq(b->ndim, 2);
                for (int k = 0; k < 2; k++) ck_assert(rx_expr_is_const(b->shape[k], &f->shape[k]));
                f->depth = depth;
                f->in_parallel = par;
                f->loop = loop;
            }
        }
    }
}

static pfacts pfacts_of(const rx_module *m, const char *gname)
{
    pfacts f = {0};
    pwalk(&callee(m, gname)->tbody, &f, 0, false, NULL);
    return f;
}

/* CALL nodes in e. */
static int calls_in(const rx_expr *e)
{
    int n = e->kind == RX_E_CALL;
    for (int i = 0; i < rx_expr_nchildren(e); i++) n += calls_in(rx_expr_child(e, i));
    return n;
}

/* CALL nodes in the values stored to *_pack panels (n[0]) and to other buffers (n[1]). */
static void count_calls(const rx_stmts *ss, int n[2])
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) count_calls(&s->u.for_.body, n);
        else if (s->kind == RX_S_IF) count_calls(&s->u.if_.then_s, n), count_calls(&s->u.if_.else_s, n);
        else if (s->kind == RX_S_BLOCK) count_calls(&s->u.block.body, n);
        else if (s->kind == RX_S_STORE)
            n[strstr(s->u.store.buf->name, "_pack") == NULL] += calls_in(s->u.store.value);
    }
}

static const char *var_name(const rx_stmt *s) { return s->u.for_.var->name; }

static int64_t extent_of(const rx_stmt *s)
{
    int64_t e = -1;
    ck_assert(rx_expr_is_const(s->u.for_.extent, &e));
    return e;
}

START_TEST(which_pack)
{
    rx_module *m = legalized();
    int n = -1;
    ck_assert(rx_schedule_tile(m, &n));
    ck_assert_int_eq(n, 12);

    /* 70x2100 @ 2100x100: panels of 2048 x 16 (128 KiB), K blocked 2048 + 52: jo
     * (parallel) { alloc; ko { pack (k, j vectorized); io { tile } } } */
    pfacts f = pfacts_of(m, "ragged");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.shape[0], 2048);
    ck_assert_int_eq(f.shape[1], 16);
    ck_assert_int_eq(f.depth, 1);
    ck_assert(f.in_parallel);
    ck_assert_str_eq(var_name(f.loop), "i1_o");
    ck_assert_int_eq(f.loop->u.for_.loop_kind, RX_LOOP_PARALLEL);
    ck_assert_int_eq(f.loop->u.for_.body.n, 2);
    const rx_stmt *ko = f.loop->u.for_.body.items[1];
    ck_assert_str_eq(var_name(ko), "k0_o");
    ck_assert_int_eq(extent_of(ko), 2);
    ck_assert_int_eq(ko->u.for_.body.n, 2);
    const rx_stmt *pk = ko->u.for_.body.items[0];
    ck_assert_str_eq(var_name(pk), "k0_p");
    ck_assert_str_eq(var_name(pk->u.for_.body.items[0]), "i1_p");
    ck_assert_int_eq(pk->u.for_.body.items[0]->u.for_.loop_kind, RX_LOOP_VECTORIZED);
    ck_assert_str_eq(var_name(ko->u.for_.body.items[1]), "i0_o");

    /* K = 1000 <= 2048 stays unblocked; the panel holds all of it: jo { alloc; pack; io } */
    f = pfacts_of(m, "unblocked");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.shape[0], 1000);
    ck_assert_int_eq(f.loop->u.for_.body.n, 3);
    ck_assert_str_eq(var_name(f.loop->u.for_.body.items[1]), "k0_p");
    ck_assert_str_eq(var_name(f.loop->u.for_.body.items[2]), "i0_o");

    /* symbolic K and N, M = 64: packed, K blocked by 512 at run time (the shallower
     * panel of a symbolic K: zeroed at full depth whatever K turns out to be) */
    f = pfacts_of(m, "symk");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.shape[0], 512);
    ck_assert_str_eq(var_name(f.loop->u.for_.body.items[1]), "k0_o");

    /* batch matmul: batch (parallel) { jo { alloc; .. } } */
    f = pfacts_of(m, "batch");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.depth, 2);
    ck_assert(f.in_parallel);
    ck_assert_int_eq(f.loop->u.for_.loop_kind, RX_LOOP_SERIAL);

    /* Q @ K^T: a transposing panel of (64, 16), K = 64 whole, even with symbolic rows:
     * h (parallel) { jo { alloc; for jp { for kp { panel[kp, jp] = B[h, j, k] } }; io } },
     * and the register tile is vectorized along J (the panel's rows) */
    f = pfacts_of(m, "qkt");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.shape[0], 64);
    ck_assert_int_eq(f.shape[1], 16);
    ck_assert(f.in_parallel);
    ck_assert_int_eq(f.loop->u.for_.body.n, 3);
    const rx_stmt *tp = f.loop->u.for_.body.items[1];
    ck_assert_str_eq(var_name(tp), "j_p");
    ck_assert_int_eq(tp->u.for_.loop_kind, RX_LOOP_SERIAL);
    ck_assert_str_eq(var_name(tp->u.for_.body.items[0]), "k_p");
    ck_assert_str_eq(var_name(f.loop->u.for_.body.items[2]), "i_o");
    /* symbolic K: the panel's depth is 512 rows and K is blocked by it */
    f = pfacts_of(m, "qkt_k");
    ck_assert_int_eq(f.packs, 1);
    ck_assert_int_eq(f.shape[0], 512);
    ck_assert_str_eq(var_name(f.loop->u.for_.body.items[1]), "k_o");

    /* B's factor computed into the panel: the packing store divides by the sqrt, the
     * tile's multiply-adds call nothing (before: a sqrt and a division per row) */
    ck_assert_int_eq(pfacts_of(m, "qkt_f").packs, 1);
    int calls[2] = {0, 0};
    count_calls(&callee(m, "qkt_f")->tbody, calls);
    ck_assert_int_eq(calls[0], 1);
    ck_assert_int_eq(calls[1], 0);

    /* symbolic rows: IF (n >= 16) packed ELSE not: one panel, in the THEN branch */
    const rx_func *sr = callee(m, "sym_rows");
    ck_assert_int_eq(sr->tbody.n, 1);
    const rx_stmt *sif = sr->tbody.items[0];
    ck_assert_int_eq(sif->kind, RX_S_IF);
    ck_assert_int_eq(sif->u.if_.cond->kind, RX_E_GE);
    ck_assert(rx_expr_is_int(sif->u.if_.cond->u.op.b, 16));
    ck_assert_int_eq(pfacts_of(m, "sym_rows").packs, 1);
    pfacts ef = {0};
    pwalk(&sif->u.if_.else_s, &ef, 0, false, NULL);
    ck_assert_int_eq(ef.packs, 0);

    /* not packed: 12 rows, K = 64, N = 48 (rows first), one row */
    const char *const unpacked[] = {"few_rows", "short_k", "narrow", "row"};
    for (size_t u = 0; u < sizeof unpacked / sizeof unpacked[0]; u++)
        ck_assert_msg(pfacts_of(m, unpacked[u]).packs == 0, "%s packed", unpacked[u]);
    /* unpacked nests keep their K block of 256: 600 -> 3 blocks */
    const rx_stmt *s = callee(m, "few_rows")->tbody.items[0];
    ck_assert_str_eq(var_name(s), "i1_o");
    ck_assert_str_eq(var_name(s->u.for_.body.items[0]), "k0_o");
    ck_assert_int_eq(extent_of(s->u.for_.body.items[0]), 3);
    rx_module_free(m);
}
END_TEST

static const char *const GNAMES[] = {"ragged", "unblocked", "symk", "batch", "qkt", "qkt_k",
                                     "qkt_f", "few_rows", "sym_rows", "short_k", "narrow", "row"};

START_TEST(bit_exact)
{
    rx_module *mu = legalized(), *mt = legalized();
    ck_assert(rx_schedule_tile(mt, NULL));
    ck_assert(rx_schedule_cpu(mt, NULL, NULL));
    void *hu = kr_load(mu, NULL), *ht = kr_load(mt, "base");
    const char *const names[] = {"n", "m", "k", "d"};
    /* ragged everywhere (k = 520: blocks of 512 + 8); ones; exact tiles; K = 0 */
    static const int64_t vals[][4] = {{13, 37, 520, 520}, {1, 1, 1, 1}, {64, 64, 1024, 1024},
                                      {9, 33, 0, 0}};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++)
        for (size_t g = 0; g < sizeof GNAMES / sizeof GNAMES[0]; g++) {
            const rx_func *f = callee(mu, GNAMES[g]);
            if (v > 0 && f->nsvars == 0) continue; /* static: once is enough */
            kr_run ru, rt;
            char what[96];
            snprintf(what, sizeof what, "%s n=%lld m=%lld k=%lld", GNAMES[g],
                     (long long)vals[v][0], (long long)vals[v][1], (long long)vals[v][2]);
            kr_exec(hu, f, names, vals[v], 4, 99, &ru);
            kr_exec(ht, callee(mt, GNAMES[g]), names, vals[v], 4, 99, &rt);
            kr_same(&ru, &rt, what);
            kr_free(&ru);
            kr_free(&rt);
        }
    /* the empty packed reduction stored the init (0) */
    kr_run r;
    kr_exec(ht, callee(mt, "symk"), names, vals[3], 4, 7, &r);
    int out = r.nbuf - 1;
    for (size_t i = 0; i < r.bytes[out] / 4; i++) {
        float x;
        memcpy(&x, r.buf[out] + 4 * i, 4);
        ck_assert_msg(x == 0.0f, "empty matmul element %zu is %g", i, (double)x);
    }
    kr_free(&r);
    /* the best ISA version (AVX-512 here, fused multiply-adds) against the baseline */
    void *hv = kr_load(mt, NULL);
    for (size_t g = 0; g < 7; g++) { /* the packed ones */
        const rx_func *f = callee(mt, GNAMES[g]);
        kr_run rb, rv;
        kr_exec(ht, f, names, vals[0], 4, 11, &rb);
        kr_exec(hv, f, names, vals[0], 4, 11, &rv);
        int k = rb.nbuf - 1;
        for (size_t i = 0; i < rb.bytes[k] / 4; i++) { /* inputs in [-1, 1), <= 2100 terms */
            float x, y;
            memcpy(&x, rb.buf[k] + 4 * i, 4);
            memcpy(&y, rv.buf[k] + 4 * i, 4);
            ck_assert_msg(fabsf(x - y) <= 1e-5f * (1 + fabsf(x)) * 4, "%s[%zu]: %g vs %g",
                          GNAMES[g], i, (double)x, (double)y);
        }
        kr_free(&rb);
        kr_free(&rv);
    }
    dlclose(hu);
    dlclose(ht);
    dlclose(hv);
    rx_module_free(mu);
    rx_module_free(mt);
}
END_TEST

/* The C text: every panel is a stack array read through a pointer, the (64, 16) f32
 * panel of qkt (4 KiB) too: read directly, GCC 12 kept the 6 x 16 tile's AVX2
 * accumulators in memory (a load-add-store per multiply-add; c_kernel.c). */
START_TEST(panel_behind_pointer)
{
    rx_module *m = legalized();
    rx_sb c = {0};
    kr_tiled_c(m, &c);
    const char *t = rx_sb_str(&c);
    ck_assert_ptr_nonnull(strstr(t, "_s[1024] = {0};")); /* qkt's panel */
    int panels = 0;
    for (const char *p = strstr(t, "float B_pack_"); p; p = strstr(p + 1, "float B_pack_")) {
        const char *e = p + strlen("float B_pack_");
        while (*e >= '0' && *e <= '9') e++;
        ck_assert_msg(!strncmp(e, "_s[", 3), "a panel declared directly: %.60s", p);
        ck_assert_ptr_nonnull(strstr(e, "float *const B_pack_"));
        panels++;
    }
    ck_assert_int_ge(panels, 6); /* ragged, unblocked, symk, batch, qkt, qkt_k, sym_rows */
    rx_sb_free(&c);
    rx_module_free(m);
}
END_TEST

static Suite *pack_suite(void)
{
    Suite *s = suite_create("schedule_pack");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_pack);
    tcase_add_test(tc, panel_behind_pointer);
    tcase_add_test(tc, bit_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(pack_suite()); }
