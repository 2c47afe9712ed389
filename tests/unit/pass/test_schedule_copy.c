/*
 * test_schedule_copy.c — tiled transposes of copy nests (compiler/pass/schedule_copy.c).
 *
 * Structure: which legalized permutes are tiled (static and symbolic 2-D transposes, a
 * large static one whose tiles along C's rows go in groups of 16,
 * a 4-D permute that swaps the two inner axes, an f16 transpose) and which are not (a
 * permute that keeps the innermost axis, a tiny transpose, an elementwise add); the
 * tile edge (16 f32, 32 f16), the parallel loop (the outermost one) and the vectorized
 * one (the innermost); idempotence. Numerics: every tiled kernel writes the bytes of
 * the untiled kernel of the same function, at symbolic sizes that leave partial tiles
 * in both tiled directions, at 1 and at exact multiples of the tile.
 */
#include "kernel_run.h"
#include "../rx_check.h"

#include "relax/pass.h"

#define TS(dt, ...) "{'tensor':{'shape':[" __VA_ARGS__ "],'dtype':'" dt "'}}"
#define P(name, type) "{'name':'" name "','type':" type "}"
#define FN(name, params, value)                                                             \
    "'" name "':{'kind':'relax','params':[" params "],'body':{'blocks':[{'dataflow':true,"   \
    "'bindings':[{'var':'r','value':" value "}]}],'result':'r'}}"
#define PERM(axes) "{'op':'permute_dims','args':['x'],'attrs':{'axes':" axes "}}"

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    FN("tr_static", P("x", TS("f32", "70,100")), PERM("[1,0]")) ","
    FN("tr_groups", P("x", TS("f32", "600,520")), PERM("[1,0]")) ","
    FN("tr_sym", P("x", TS("f32", "'n','m'")), PERM("[1,0]")) ","
    FN("p0132", P("x", TS("f32", "2,'n',5,'m'")), PERM("[0,1,3,2]")) ","
    FN("tr16", P("x", TS("f16", "100,70")), PERM("[1,0]")) ","
    FN("p0213", P("x", TS("f32", "2,'n',5,'m'")), PERM("[0,2,1,3]")) ","
    FN("small", P("x", TS("f32", "4,4")), PERM("[1,0]")) ","
    FN("add", P("x", TS("f32", "'n','m'")), "{'op':'add','args':['x','x']}")
    "}}";

static rx_func *callee(const rx_module *m, const char *gname) { return tir_callee(m, gname); }

/* The chain of FORs of the function's first top-level statement: kinds, extents. */
typedef struct chain {
    int n, par_at, vec_at;      /* loops; index of the parallel / vectorized one (-1) */
    const rx_stmt *loops[16];
} chain;

static chain chain_of(const rx_func *f)
{
    chain c = {0, -1, -1, {0}};
    const rx_stmt *s = f->tbody.items[0];
    while (s->kind == RX_S_FOR && c.n < 16) {
        if (s->u.for_.loop_kind == RX_LOOP_PARALLEL && c.par_at < 0) c.par_at = c.n;
        if (s->u.for_.loop_kind == RX_LOOP_VECTORIZED) c.vec_at = c.n;
        c.loops[c.n++] = s;
        s = s->u.for_.body.items[0];
    }
    return c;
}

/* The literal extent of loop k of chain c, -1 when it is not a literal. */
static int64_t lit_extent(const chain *c, int k)
{
    int64_t e;
    return rx_expr_is_const(c->loops[k]->u.for_.extent, &e) ? e : -1;
}

START_TEST(structure)
{
    rx_module *m = load_legalized(MODULE);
    int n = -1;
    ck_assert(rx_schedule_copy(m, &n));
    ck_assert_int_eq(n, 5); /* tr_static, tr_groups, tr_sym, p0132, tr16 */

    /* 70 x 100 -> 100 x 70: po over the 100 axis that x is read along (ceil(100 / 16) =
     * 7 tiles, parallel), no over the 70 axis C is written along (5), pi, ni (vectorized) */
    chain c = chain_of(callee(m, "tr_static"));
    ck_assert_int_eq(c.n, 4);
    ck_assert_int_eq(c.par_at, 0);
    ck_assert_int_eq(c.vec_at, 3);
    ck_assert_int_eq(lit_extent(&c, 0), 7);
    ck_assert_int_eq(lit_extent(&c, 1), 5); /* ceil(70 / 16) */
    ck_assert_int_eq(lit_extent(&c, 3), -1); /* min(16, ..) */

    /* 600 x 520 -> 520 x 600: the 38 tiles along C's rows (600) in groups of 16 outside
     * po, so one group's 256 rows of x (pages) are read for every po: nb (3, parallel),
     * po (33), the group's tiles (min(16, 38 - nb * 16)), pi, ni */
    c = chain_of(callee(m, "tr_groups"));
    ck_assert_int_eq(c.n, 5);
    ck_assert_int_eq(c.par_at, 0);
    ck_assert_int_eq(c.vec_at, 4);
    ck_assert_int_eq(lit_extent(&c, 0), 3);
    ck_assert_int_eq(lit_extent(&c, 1), 33);
    ck_assert_int_eq(lit_extent(&c, 2), -1);

    /* symbolic: the same chain, extents left to run time */
    c = chain_of(callee(m, "tr_sym"));
    ck_assert_int_eq(c.n, 4);
    ck_assert_int_eq(c.par_at, 0);
    ck_assert_int_eq(c.vec_at, 3);

    /* (2, n, 5, m) -> (2, n, m, 5): batch loops kept outside, the batch of 2 parallel;
     * the m axis (read along) and the 5 axis tiled */
    c = chain_of(callee(m, "p0132"));
    ck_assert_int_eq(c.n, 6);
    ck_assert_int_eq(c.par_at, 0);
    ck_assert_int_eq(c.vec_at, 5);

    /* f16: 32-element tiles, and 100 x 70 -> 70 x 100 */
    c = chain_of(callee(m, "tr16"));
    ck_assert_int_eq(lit_extent(&c, 0), 3); /* ceil(70 / 32) */

    /* left alone: innermost axis kept, too small, not a permute */
    ck_assert_int_eq(chain_of(callee(m, "p0213")).vec_at, -1);
    ck_assert_int_eq(chain_of(callee(m, "small")).n, 2);
    ck_assert_int_eq(chain_of(callee(m, "add")).n, 2);

    /* idempotent: a tiled nest's store is no longer at its loop variables */
    ck_assert(rx_schedule_copy(m, &n));
    ck_assert_int_eq(n, 0);
    rx_module_free(m);
}
END_TEST

static const char *const GNAMES[] = {"tr_static", "tr_groups", "tr_sym", "p0132", "tr16", "p0213"};

START_TEST(same_bytes)
{
    rx_module *mu = load_legalized(MODULE), *mt = load_legalized(MODULE);
    ck_assert(rx_schedule_copy(mt, NULL));
    ck_assert(rx_schedule_cpu(mt, NULL, NULL));
    void *hu = kr_load(mu, NULL), *ht = kr_load(mt, NULL);
    const char *const names[] = {"n", "m"};
    static const int64_t vals[][2] = {{37, 45}, {1, 1}, {32, 48}, {17, 3}};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++)
        for (size_t g = 0; g < sizeof GNAMES / sizeof GNAMES[0]; g++) {
            kr_run ru, rt;
            char what[96];
            snprintf(what, sizeof what, "%s n=%lld m=%lld", GNAMES[g], (long long)vals[v][0],
                     (long long)vals[v][1]);
            kr_exec(hu, callee(mu, GNAMES[g]), names, vals[v], 2, 5, &ru);
            kr_exec(ht, callee(mt, GNAMES[g]), names, vals[v], 2, 5, &rt);
            kr_same(&ru, &rt, what);
            kr_free(&ru);
            kr_free(&rt);
        }
    dlclose(hu);
    dlclose(ht);
    rx_module_free(mu);
    rx_module_free(mt);
}
END_TEST

static Suite *schedule_copy_suite(void)
{
    Suite *s = suite_create("schedule_copy");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, structure);
    tcase_add_test(tc, same_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(schedule_copy_suite()); }
