/*
 * test_schedule_rows.c — rows from the batch: decode's products x (b, 1, K) @ W get the
 * batch as the register tile's rows, W read once in one parallel region
 * (compiler/pass/schedule_tile.c, "Rows from the batch"; issue 13, item 2).
 *
 * Structure (built with rx_build_module up to lift_workspace at opt level 2, no library,
 * then tiled): a symbolic b with W (K, N) and with W (N, K) read through permute_dims is
 * IF (b >= 2) { the rows nest } ELSE { the one-row nest }: in the THEN branch no loop
 * over b stands outside the parallel loop, which is J's tile loop, b is the row tile
 * loop inside it, and W is packed, with no unpacked variant beside it (W (N, K): the
 * transposing panel); in the ELSE branch (the one-row plan) b's loop stands outside the
 * parallel loop and has no row tiles. A literal b = 16
 * has the rows nest without IF. Not rewritten: W batched with x ((b, K, N): every batch
 * row has its own), and a literal b = 1.
 * Numerics: every tiled kernel (baseline ISA version) is bit-identical to the untiled
 * kernel of the same function at b = 1 (the ELSE branch), 3 (a partial row tile), 16
 * (two full ones) and 21 (a partial third), and agrees with a float64
 * reference computed here from the kernel's own inputs (within 1e-5 relative).
 */
#include <math.h>

#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/driver.h"

enum { K = 300, N = 200 };

#define TS(...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'f32'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define FN(name, params, value)                                                             \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[{'dataflow':true," \
    "'bindings':[{'var':'r','value':" value "}]}],'result':'r'}}"
#define MM(name, xs, ws, w) FN(name, P("x", TS(xs)) "," P("w", TS(ws)),                     \
                               "{'op':'matmul','args':['x'," w "]}")
#define WT "{'op':'permute_dims','args':['w']}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    MM("kn", "'b',1,300", "300,200", "'w'") ","
    MM("nk", "'b',1,300", "200,300", WT) ","
    MM("lit16", "16,1,300", "300,200", "'w'") ","
    MM("batched", "'b',1,300", "'b',300,200", "'w'") ","
    MM("one", "1,1,300", "300,200", "'w'")
    "}}";

/* The module after FuseTIR and workspace lifting (opt level 2, no library calls). */
static rx_module *fused(void)
{
    return fused_module(MODULE);
}

/* Facts of a tiled nest (over both branches of the packing IF when there is one). */
typedef struct rfacts {
    int outer_b;        /* most loops over b (named i0*) enclosing a parallel loop */
    const rx_stmt *par; /* the last parallel loop seen (none nests in another) */
    int row_loops;      /* loops named i0_o inside a parallel loop (b's row tiles) */
    int packs;          /* *_pack allocations inside a parallel loop */
} rfacts;

static bool named(const rx_stmt *s, const char *prefix)
{
    return !strncmp(s->u.for_.var->name, prefix, strlen(prefix));
}

static void rwalk(const rx_stmts *ss, rfacts *f, int outer_b, bool inside)
{
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        if (s->kind == RX_S_FOR) {
            bool par = s->u.for_.loop_kind == RX_LOOP_PARALLEL;
            if (par) {
                ck_assert_msg(!inside, "nested parallel loop %s", s->u.for_.var->name);
                ck_assert_msg(!f->par || !strcmp(f->par->u.for_.var->name, s->u.for_.var->name),
                              "parallel loops %s and %s", f->par->u.for_.var->name,
                              s->u.for_.var->name);
                f->par = s;
                if (outer_b > f->outer_b) f->outer_b = outer_b;
            }
            if (inside && named(s, "i0_o")) f->row_loops++;
            rwalk(&s->u.for_.body, f, outer_b + (!inside && !par && named(s, "i0")), inside || par);
        } else if (s->kind == RX_S_IF) {
            rwalk(&s->u.if_.then_s, f, outer_b, inside);
            rwalk(&s->u.if_.else_s, f, outer_b, inside);
        } else if (s->kind == RX_S_ALLOC && inside) {
            const char *nm = s->u.alloc.buf->name;
            size_t n = strlen(nm);
            f->packs += n >= 5 && !strcmp(nm + n - 5, "_pack");
        }
    }
}

static rfacts facts_of(const rx_stmts *ss)
{
    rfacts f = {0};
    rwalk(ss, &f, 0, false);
    ck_assert_ptr_nonnull(f.par);
    return f;
}

/* The THEN branch (the rows nest) and the ELSE branch of a kernel's top-level IF (b >= 2). */
static const rx_stmt *rows_if(const rx_func *f)
{
    ck_assert_int_eq(f->tbody.n, 1);
    const rx_stmt *s = f->tbody.items[0];
    ck_assert_int_eq(s->kind, RX_S_IF);
    ck_assert_int_eq(s->u.if_.cond->kind, RX_E_GE);
    ck_assert(rx_expr_is_int(s->u.if_.cond->u.op.b, 2));
    return s;
}

START_TEST(which_rows)
{
    rx_module *m = fused();
    int n = -1;
    ck_assert(rx_schedule_tile(m, &n));
    ck_assert_int_eq(n, 5);
    const char *const sym[] = {"kn", "nk"};
    for (int g = 0; g < 2; g++) {
        const rx_stmt *s = rows_if(kr_product(m, sym[g]));
        rfacts t = facts_of(&s->u.if_.then_s), e = facts_of(&s->u.if_.else_s);
        ck_assert_msg(t.outer_b == 0, "%s: %d loops over b outside the parallel one", sym[g],
                      t.outer_b);
        ck_assert_msg(named(t.par, "i2_o"), "%s: parallel loop %s", sym[g],
                      t.par->u.for_.var->name);
        ck_assert_msg(t.row_loops >= 1, "%s: no row tiles over b", sym[g]);
        ck_assert_msg(t.packs == 1, "%s: %d panels", sym[g], t.packs);
        ck_assert_msg(e.outer_b == 1 && e.row_loops == 0, "%s: ELSE: %d loops over b outside, "
                      "%d row tiles", sym[g], e.outer_b, e.row_loops);
    }
    /* literal b = 16: the rows nest, no IF; 16 rows are packed */
    const rx_func *l = kr_product(m, "lit16");
    ck_assert_int_eq(l->tbody.items[0]->kind, RX_S_FOR);
    rfacts f = facts_of(&l->tbody);
    ck_assert_int_eq(f.outer_b, 0);
    ck_assert(named(f.par, "i2_o"));
    ck_assert_int_eq(f.row_loops, 1); /* a literal 16 rows: packed, no IF */
    ck_assert_int_eq(f.packs, 1);
    /* W per batch row, and b = 1: the plan of before (the batch loop is parallel) */
    const char *const plain[] = {"batched", "one"};
    for (int g = 0; g < 2; g++) {
        const rx_func *p = kr_product(m, plain[g]);
        ck_assert_msg(p->tbody.items[0]->kind == RX_S_FOR, "%s: rewritten", plain[g]);
        ck_assert_int_eq(facts_of(&p->tbody).row_loops, 0);
    }
    rx_module_free(m);
}
END_TEST

/* The float64 product of the kernel's inputs at (i, j): x is the input of b * K
 * elements, w the other (K * N, or b * K * N batched); the output is buffer 2. */
static double reference(const kr_run *r, bool nk, int64_t b, int64_t i, int64_t j)
{
    int xi = r->bytes[0] == (size_t)(b * K * 4) ? 0 : 1;
    const float *x = (const float *)r->buf[xi], *w = (const float *)r->buf[1 - xi];
    int64_t wb = r->bytes[1 - xi] == (size_t)K * N * 4 ? 0 : i * K * N; /* batched: W per row */
    double s = 0;
    for (int64_t k = 0; k < K; k++)
        s += (double)x[i * K + k] * (double)w[wb + (nk ? j * K + k : k * N + j)];
    return s;
}

START_TEST(bit_exact_and_reference)
{
    rx_module *mu = fused(), *mt = fused();
    ck_assert(rx_schedule_tile(mt, NULL));
    ck_assert(rx_schedule_cpu(mt, NULL, NULL));
    void *hu = kr_load(mu, NULL), *ht = kr_load(mt, "base");
    const char *const names[] = {"b"};
    const char *const gn[] = {"kn", "nk", "lit16", "batched", "one"};
    static const int64_t bs[] = {1, 3, 16, 21};
    for (size_t g = 0; g < sizeof gn / sizeof gn[0]; g++)
        for (size_t v = 0; v < sizeof bs / sizeof bs[0]; v++) {
            const rx_func *fu = kr_product(mu, gn[g]), *ft = kr_product(mt, gn[g]);
            if (fu->nsvars == 0 && v > 0) continue;
            int64_t b = fu->nsvars ? bs[v] : g == 2 ? 16 : 1;
            kr_run ru, rt;
            char what[64];
            snprintf(what, sizeof what, "%s b=%lld", gn[g], (long long)b);
            kr_exec(hu, fu, names, &b, 1, 5 + v, &ru);
            kr_exec(ht, ft, names, &b, 1, 5 + v, &rt);
            kr_same(&ru, &rt, what);
            ck_assert_int_eq(rt.nbuf, 3);
            const float *out = (const float *)rt.buf[2];
            for (int64_t i = 0; i < b; i++)
                for (int64_t j = 0; j < N; j++) {
                    double want = reference(&rt, g == 1, b, i, j);
                    ck_assert_msg(fabs(out[i * N + j] - want) <= 1e-5 * (1 + fabs(want)),
                                  "%s [%lld, %lld]: %g vs %g", what, (long long)i, (long long)j,
                                  (double)out[i * N + j], want);
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

static Suite *rows_suite(void)
{
    Suite *s = suite_create("schedule_rows");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, which_rows);
    tcase_add_test(tc, bit_exact_and_reference);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(rows_suite()); }
