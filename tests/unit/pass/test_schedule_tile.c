/*
 * test_schedule_tile.c — tiling of reductions and matmuls (compiler/pass/schedule_tile.c).
 *
 * Structure: which legalized nests are tiled (matmul static and symbolic, batch
 * matmul, matrix-vector, row and column sums, row max, f16 and i32 sums, conv2d) and
 * which are not (a small matmul, argmax, a hand-written reduction with an if-init);
 * the tile sizes, the K blocking, the parallel loop (softmax's row max over a symbolic
 * batch and symbolic rows: IF (b >= 2) batch ELSE row tiles), the full/partial tile split (the
 * packing of B is tested by test_schedule_pack.c; mm_static and the C text show it).
 * Numerics: every tiled kernel gives bit-identical results to the untiled kernel of
 * the same function, at symbolic values that leave partial tiles in every direction,
 * at 1, and with an empty reduction (K = 0, which must still store the init); and
 * the ISA versions of a tiled kernel (AVX-512, baseline) agree bit for bit. The
 * untiled kernels themselves are checked against NumPy by test_numeric*.c and the e2e
 * suite (which runs the pipeline, tiling included, at O0, O2 and O3).
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
#define OP2(op, a, b) "{'op':'" op "','args':['" a "','" b "']}"
#define OP1A(op, a, attrs) "{'op':'" op "','args':['" a "'],'attrs':" attrs "}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("mm_sym", P("x", TS("f32", "'n','k'")) "," P("w", TS("f32", "'k','m'")), OP2("matmul", "x", "w")) ","
    FN("mm_static", P("x", TS("f32", "50,600")) "," P("w", TS("f32", "600,140")), OP2("matmul", "x", "w")) ","
    FN("mm_narrow", P("x", TS("f32", "50,600")) "," P("w", TS("f32", "600,48")), OP2("matmul", "x", "w")) ","
    FN("mm_alt", P("x", TS("f32", "52,64")) "," P("w", TS("f32", "64,152")), OP2("matmul", "x", "w")) ","
    FN("mm_div", P("x", TS("f32", "48,64")) "," P("w", TS("f32", "64,128")), OP2("matmul", "x", "w")) ","
    FN("bmm", P("x", TS("f32", "3,'n',40")) "," P("w", TS("f32", "3,40,50")), OP2("matmul", "x", "w")) ","
    FN("gemv", P("x", TS("f32", "1,600")) "," P("w", TS("f32", "600,'m'")), OP2("matmul", "x", "w")) ","
    FN("rowsum", P("x", TS("f32", "'n',300")), OP1A("sum", "x", "{'axis':1}")) ","
    FN("colsum", P("x", TS("f32", "300,'n'")), OP1A("sum", "x", "{'axis':0}")) ","
    FN("rowmax", P("x", TS("f32", "'n','m'")), OP1A("max", "x", "{'axis':-1}")) ","
    FN("smax", P("x", TS("f32", "'b',4,'s',40")), OP1A("max", "x", "{'axis':-1}")) ","
    FN("sum16", P("x", TS("f16", "'n',300")), OP1A("sum", "x", "{'axis':1}")) ","
    FN("sumi32", P("x", TS("i32", "300,'n'")), OP1A("sum", "x", "{'axis':0}")) ","
    FN("conv", P("x", TS("f32", "1,3,18,18")) "," P("w", TS("f32", "8,3,3,3")),
       "{'op':'nn.conv2d','args':['x','w']}") ","
    FN("small", P("x", TS("f32", "4,4")) "," P("w", TS("f32", "4,4")), OP2("matmul", "x", "w")) ","
    FN("amax", P("x", TS("f32", "'n',300")), OP1A("argmax", "x", "{'axis':1}")) ","
    "'hand':{'kind':'tir','params':[{'name':'A','buffer':{'shape':['n',300],'dtype':'f32'}},"
    "{'name':'S','buffer':{'shape':['n'],'dtype':'f32'}}],'body':[{'grid':['i','k'],"
    "'extents':['n',300],'body':[{'if':'k == 0','then':{'store':'S[i]','value':'0.0'}},"
    "{'store':'S[i]','value':'S[i] + A[i, k]'}]}]}"
    "}}";

static rx_module *legalized(void) { return load_legalized(MODULE); }

static rx_func *callee(const rx_module *m, const char *gname) { return tir_callee(m, gname); }

/* Facts about a function body: loops by kind, local allocations, ifs. */
typedef struct facts {
    int loops, par, vec, unr;     /* FORs; parallel, vectorized, unrolled ones */
    int allocs, ifs, blocks;      /* local ALLOCs (packed panels aside), IFs, BLOCKs */
    int64_t acc_shape[2];         /* the first local alloc's shape (0 if none) */
    int acc_ndim;
    const rx_stmt *first_par;     /* the first parallel loop */
} facts;

static void walk(const rx_stmts *ss, facts *f)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        switch ((rx_skind)s->kind) {
        case RX_S_FOR:
            f->loops++;
            if (s->u.for_.loop_kind == RX_LOOP_PARALLEL) {
                f->par++;
                if (!f->first_par) f->first_par = s;
            }
            f->vec += s->u.for_.loop_kind == RX_LOOP_VECTORIZED;
            f->unr += s->u.for_.loop_kind == RX_LOOP_UNROLLED;
            walk(&s->u.for_.body, f);
            break;
        case RX_S_BLOCK:
            f->blocks++;
            walk(&s->u.block.init, f);
            walk(&s->u.block.body, f);
            break;
        case RX_S_ALLOC: {
            const rx_buffer *b = s->u.alloc.buf;
            size_t nl = strlen(b->name);
            if (b->scope != RX_SCOPE_LOCAL || (nl > 5 && !strcmp(b->name + nl - 5, "_pack")))
                break;
            if (!f->allocs++) {
                f->acc_ndim = b->ndim;
                for (int k = 0; k < b->ndim && k < 2; k++)
                    ck_assert(rx_expr_is_const(b->shape[k], &f->acc_shape[k]));
            }
            break;
        }
        case RX_S_IF:
            f->ifs++;
            walk(&s->u.if_.then_s, f);
            walk(&s->u.if_.else_s, f);
            break;
        case RX_S_LET: walk(&s->u.let.body, f); break;
        default: break;
        }
    }
}

static facts facts_of(const rx_func *fn)
{
    facts f = {0};
    walk(&fn->tbody, &f);
    return f;
}

static const char *var_name(const rx_stmt *s) { return s->u.for_.var->name; }

START_TEST(structure)
{
    rx_module *m = legalized();
    int n = -1;
    ck_assert(rx_schedule_tile(m, &n));
    ck_assert_int_eq(n, 14); /* all but small, amax, hand */

    /* static matmul 50x600 @ 600x140: 6x16 register tile, B packed (M >= 16, K >= 128)
     * in a panel holding all of K (600 <= 2048 rows), so K is not blocked, jo parallel,
     * full and partial tiles (50 % 6, 140 % 16 != 0): two accumulators, one if */
    facts f = facts_of(callee(m, "mm_static"));
    ck_assert_int_eq(f.acc_ndim, 2);
    ck_assert_int_eq(f.acc_shape[0], 6);
    ck_assert_int_eq(f.acc_shape[1], 16);
    ck_assert_int_eq(f.allocs, 2);
    ck_assert_int_eq(f.ifs, 1);
    ck_assert_int_eq(f.blocks, 0);
    ck_assert_int_eq(f.par, 1);
    ck_assert_str_eq(var_name(f.first_par), "i1_o");
    ck_assert_int_eq(f.first_par->u.for_.body.n, 3); /* alloc panel; pack; io loop */
    ck_assert_int_eq(f.first_par->u.for_.body.items[0]->kind, RX_S_ALLOC);
    ck_assert_str_eq(var_name(f.first_par->u.for_.body.items[1]), "k0_p");
    ck_assert_str_eq(var_name(f.first_par->u.for_.body.items[2]), "i0_o");
    int64_t e;
    ck_assert_int_eq(f.unr, 1); /* the ii loop of the full tile's update */

    /* N = 48: three J tiles only, so rows first (io parallel) and K not blocked */
    f = facts_of(callee(m, "mm_narrow"));
    ck_assert_str_eq(var_name(f.first_par), "i0_o");
    ck_assert_str_eq(var_name(f.first_par->u.for_.body.items[0]), "i1_o");
    ck_assert(rx_expr_is_const(f.first_par->u.for_.extent, &e));
    ck_assert_int_eq(e, 9); /* ceil(50 / 6) */

    /* 48x64 @ 64x128: tiles divide the extents, K not blocked: one tile body, no if */
    f = facts_of(callee(m, "mm_div"));
    ck_assert_int_eq(f.allocs, 1);
    ck_assert_int_eq(f.ifs, 0);
    ck_assert_int_eq(f.acc_shape[0], 6);
    ck_assert_int_eq(f.acc_shape[1], 16);
    ck_assert_str_eq(var_name(f.first_par), "i1_o");

    /* 52x64 @ 64x152: 4 divides 52 and 8 divides 152 where 6 and 16 do not */
    f = facts_of(callee(m, "mm_alt"));
    ck_assert_int_eq(f.ifs, 0);
    ck_assert_int_eq(f.acc_shape[0], 4);
    ck_assert_int_eq(f.acc_shape[1], 8);

    /* symbolic matmul: partial tiles and K blocking decided at run time; IF (n >= 32)
     * the nest with B packed (test_schedule_pack.c) ELSE the one without, whose
     * partial tiles are one more IF */
    const rx_func *sym = callee(m, "mm_sym");
    ck_assert_int_eq(sym->tbody.n, 1);
    ck_assert_int_eq(sym->tbody.items[0]->kind, RX_S_IF);
    f = facts_of(sym);
    ck_assert_int_eq(f.ifs, 3);
    ck_assert_int_eq(f.par, 2);
    const rx_stmts *plain = &sym->tbody.items[0]->u.if_.else_s;
    ck_assert_int_eq(plain->n, 1);
    ck_assert_str_eq(var_name(plain->items[0]), "i1_o");
    ck_assert_int_eq(plain->items[0]->u.for_.loop_kind, RX_LOOP_PARALLEL);
    ck_assert_str_eq(var_name(plain->items[0]->u.for_.body.items[0]), "k0_o");

    /* batch matmul: the batch loop (3) is the parallel one */
    f = facts_of(callee(m, "bmm"));
    ck_assert_int_eq(f.par, 1);
    ck_assert(rx_expr_is_const(f.first_par->u.for_.extent, &e));
    ck_assert_int_eq(e, 3);

    /* matrix-vector (M = 1): one row, a wide tile streamed from L1 (symbolic N: 4 KB),
     * K not blocked */
    f = facts_of(callee(m, "gemv"));
    ck_assert_int_eq(f.acc_shape[0], 1);
    ck_assert_int_eq(f.acc_shape[1], 1024);
    ck_assert_str_eq(var_name(f.first_par), "i1_o");
    ck_assert_str_eq(var_name(f.first_par->u.for_.body.items[0]), "i0_o");

    /* row sum: J strides, so 8 rows side by side in an unrolled (not vectorized) loop */
    f = facts_of(callee(m, "rowsum"));
    ck_assert_int_eq(f.acc_ndim, 1);
    ck_assert_int_eq(f.acc_shape[0], 8);
    ck_assert_int_ge(f.unr, 1);
    /* column sum: J contiguous, one row: the wide tile */
    f = facts_of(callee(m, "colsum"));
    ck_assert_int_eq(f.acc_shape[0], 1024);
    ck_assert_int_ge(f.vec, 3);
    /* f16 row sum: 8 rows; i32 column sum: 4 KB of int32 */
    f = facts_of(callee(m, "sum16"));
    ck_assert_int_eq(f.acc_shape[0], 8);
    f = facts_of(callee(m, "sumi32"));
    ck_assert_int_eq(f.acc_shape[0], 1024);
    /* conv2d: (oh, ow) = (16, 16): tile 4 x 16 (4 divides oh where 6 does not) */
    f = facts_of(callee(m, "conv"));
    ck_assert_int_eq(f.acc_shape[0], 4);
    ck_assert_int_eq(f.acc_shape[1], 16);

    /* softmax's row max over (b, 4, s, 40): the batch b and the row tiles ceil(s / 8) both
     * symbolic: IF (b >= 2) the b loop parallel ELSE b serial around parallel row tiles */
    const rx_func *sm = callee(m, "smax");
    ck_assert_int_eq(sm->tbody.n, 1);
    ck_assert_int_eq(sm->tbody.items[0]->kind, RX_S_IF);
    const rx_stmt *bif = sm->tbody.items[0];
    ck_assert_int_eq(bif->u.if_.then_s.n, 1);
    ck_assert_int_eq(bif->u.if_.else_s.n, 1);
    const rx_stmt *bpar = bif->u.if_.then_s.items[0], *bser = bif->u.if_.else_s.items[0];
    ck_assert_str_eq(var_name(bpar), "i0");
    ck_assert_int_eq(bpar->u.for_.loop_kind, RX_LOOP_PARALLEL);
    ck_assert_str_eq(var_name(bser), "i0");
    ck_assert_int_eq(bser->u.for_.loop_kind, RX_LOOP_SERIAL);
    ck_assert_str_eq(var_name(bser->u.for_.body.items[0]), "i2_o");
    ck_assert_int_eq(bser->u.for_.body.items[0]->u.for_.loop_kind, RX_LOOP_PARALLEL);

    /* left alone: too small, argmax (two stores), an if-init written by hand */
    ck_assert_int_eq(facts_of(callee(m, "small")).blocks, 1);
    ck_assert_int_eq(facts_of(callee(m, "amax")).allocs, 0);
    ck_assert_int_eq(facts_of(rx_module_find(m, "hand")).allocs, 0);

    /* idempotent: tiled nests have no block left to match */
    ck_assert(rx_schedule_tile(m, &n));
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
}
END_TEST

/* Runs graph function gname's kernel in both objects at the given values; bit-equal. */
static void same_bits(const rx_module *mu, void *hu, const rx_module *mt, void *ht,
                      const char *gname, const char *const *names, const int64_t *vals, int nv)
{
    kr_run ru, rt;
    char what[128];
    snprintf(what, sizeof what, "%s n=%lld m=%lld k=%lld", gname, (long long)vals[0],
             (long long)vals[1], (long long)vals[2]);
    kr_exec(hu, callee(mu, gname), names, vals, nv, 99, &ru);
    kr_exec(ht, callee(mt, gname), names, vals, nv, 99, &rt);
    kr_same(&ru, &rt, what);
    kr_free(&ru);
    kr_free(&rt);
}

static const char *const GNAMES[] = {"mm_sym", "mm_static", "mm_narrow", "mm_alt", "mm_div", "bmm", "gemv", "rowsum",
                                     "colsum", "rowmax", "sum16", "sumi32", "conv"};

START_TEST(bit_exact)
{
    rx_module *mu = legalized(), *mt = legalized();
    ck_assert(rx_schedule_tile(mt, NULL));
    ck_assert(rx_schedule_cpu(mt, NULL, NULL));
    /* the baseline version: no fused multiply-adds, the same operations as untiled */
    void *hu = kr_load(mu, NULL), *ht = kr_load(mt, "base");
    const char *const names[] = {"n", "m", "k"};
    /* partial tiles everywhere; one of each; exact tiles; an empty reduction; full and
     * partial wide (1024) tiles */
    static const int64_t vals[][3] = {{13, 37, 300}, {1, 1, 1}, {12, 64, 520}, {7, 33, 0},
                                      {2100, 2100, 8}};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++)
        for (size_t g = 0; g < sizeof GNAMES / sizeof GNAMES[0]; g++)
            same_bits(mu, hu, mt, ht, GNAMES[g], names, vals[v], 3);
    /* the empty reduction stored the init (0): not the poison-free random fill */
    kr_run r;
    kr_exec(ht, callee(mt, "mm_sym"), names, vals[3], 3, 7, &r);
    for (size_t i = 0; i < r.bytes[2] / 4; i++) {
        float x;
        memcpy(&x, r.buf[2] + 4 * i, 4);
        ck_assert_msg(x == 0.0f, "empty matmul element %zu is %g", i, (double)x);
    }
    kr_free(&r);
    dlclose(hu);
    dlclose(ht);
    rx_module_free(mu);
    rx_module_free(mt);
}
END_TEST

/* The best ISA version of a tiled kernel (AVX-512 here) against the baseline: the same
 * bits for integer and f16 kernels (nothing to fuse), within a few f32 roundings per
 * term for f32 ones (the versions may fuse multiply-adds). */
START_TEST(isa_versions_agree)
{
    rx_module *m = legalized();
    ck_assert(rx_schedule_tile(m, NULL));
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    void *hb = kr_load(m, "base"), *hv = kr_load(m, NULL);
    const char *const names[] = {"n", "m", "k"};
    const int64_t vals[] = {29, 45, 300};
    for (size_t g = 0; g < sizeof GNAMES / sizeof GNAMES[0]; g++) {
        const rx_func *f = callee(m, GNAMES[g]);
        kr_run rb, rv;
        kr_exec(hb, f, names, vals, 3, 11, &rb);
        kr_exec(hv, f, names, vals, 3, 11, &rv);
        const rx_buffer *out = f->tparams[f->ntparams - 1].buf;
        if (out->dtype != RX_DT_F32) {
            kr_same(&rb, &rv, GNAMES[g]);
        } else { /* |diff| <= 1e-5 (1 + |x|): inputs in [-1, 1), at most 600 terms */
            int k = rb.nbuf - 1;
            for (size_t i = 0; i < rb.bytes[k] / 4; i++) {
                float x, y;
                memcpy(&x, rb.buf[k] + 4 * i, 4);
                memcpy(&y, rv.buf[k] + 4 * i, 4);
                ck_assert_msg(fabsf(x - y) <= 1e-5f * (1 + fabsf(x)), "%s[%zu]: %g vs %g",
                              GNAMES[g], i, (double)x, (double)y);
            }
        }
        kr_free(&rb);
        kr_free(&rv);
    }
    dlclose(hb);
    dlclose(hv);
    rx_module_free(m);
}
END_TEST

/* The C text: restrict and const on the pointers of called kernels (outputs are fresh
 * DPS allocations), none on an uncalled one; ISA versions for tiled kernels only, and
 * only when asked. */
START_TEST(codegen_text)
{
    rx_module *m = legalized();
    ck_assert(rx_schedule_tile(m, NULL));
    ck_assert(rx_schedule_cpu(m, NULL, NULL));
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0}, plain = {0};
    rx_codegen_opts co = {.isa_versions = true};
    ck_assert(rx_codegen_c_with(m, &co, &c, &d));
    ck_assert(rx_codegen_c(m, &plain, &d)); /* without the option: one version each */
    ck_assert_ptr_null(strstr(rx_sb_str(&plain), "_v4"));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&plain), "restrict"));
    rx_sb_free(&plain);
    const char *t = rx_sb_str(&c);
    ck_assert_ptr_nonnull(strstr(t, "const float *restrict x_"));
    ck_assert_ptr_nonnull(strstr(t, "float *restrict T_matmul_"));
    ck_assert_ptr_null(strstr(t, "const float *restrict T_matmul_"));
    const char *hand = strstr(t, "int32_t rxk_hand(void *const *data, const int64_t *ivars)\n{");
    ck_assert_ptr_nonnull(hand);
    const char *end = strstr(hand, "\n}\n");
    ck_assert_ptr_nonnull(end);
    const char *r = strstr(hand, "restrict");
    ck_assert(r == NULL || r > end);
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4 int32_t rxk_matmul"));
    ck_assert_ptr_nonnull(strstr(t, "if (rx_isa >= 4) return rxk_matmul"));
    ck_assert_ptr_null(strstr(t, "rxk_hand_v4"));   /* not tiled: one version */
    ck_assert_ptr_null(strstr(t, "rxk_argmax_v4")); /* likewise */
    /* mm_static's packed panel (600 x 16 f32: 37.5 KiB): a stack array behind a pointer */
    ck_assert_ptr_nonnull(strstr(t, "float B_pack_"));
    ck_assert_ptr_nonnull(strstr(t, "_s[9600] = {0};"));
    ck_assert_ptr_nonnull(strstr(t, "float *const B_pack_"));
    /* warning-free under gcc and clang, with and without OpenMP */
    static const char *const strict[] = {"-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra",
                                         "-Werror", NULL};
    static const char *const omp[] = {"-fopenmp", NULL};
    const char *const ccs[] = {"gcc", "clang"};
    for (int i = 0; i < 4; i++) {
        rx_cc_opts o = {0};
        o.cc = ccs[i / 2];
        o.flags = strict;
        o.extra = i % 2 ? omp : NULL;
        uint8_t *so = NULL;
        size_t n = 0;
        ck_assert_msg(rx_cc_build(c.p, c.n, &o, &so, &n, &d), "%s%s: %s", o.cc,
                      i % 2 ? " -fopenmp" : "", diags_str(&d));
        free(so);
    }
    rx_sb_free(&c);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

static Suite *tile_suite(void)
{
    Suite *s = suite_create("schedule_tile");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, structure);
    tcase_add_test(tc, bit_exact);
    tcase_add_test(tc, isa_versions_agree);
    tcase_add_test(tc, codegen_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(tile_suite()); }
