/*
 * test_sinfo.c — the annotation lattice (compiler/deduce/sinfo.c): base-of, join,
 * substitution, erasure, matching (the paper's Figure 7) and structural identity.
 *
 * Every test builds its annotations with the ir.h constructors in a fresh arena and an
 * arithmetic context; the symbolic variables are shape variables with distinct ids.
 */
#include <check.h>
#include <stdlib.h>

#include "relax/deduce.h"
#include "../rx_check.h"

typedef struct T {
    rx_arena *a;
    rx_arith *ar;
    int32_t next_id;
} T;

static void t_init(T *t)
{
    t->a = rx_arena_new();
    t->ar = rx_arith_new(t->a);
    t->next_id = 1;
}

static void t_fini(T *t)
{
    rx_arith_free(t->ar);
    rx_arena_free(t->a);
}

static rx_svar *sv(T *t, const char *name)
{
    return rx_svar_new(t->a, name, RX_DT_I64, RX_SV_SHAPE, t->next_id++);
}

static rx_expr *ev(T *t, const rx_svar *v) { return rx_e_var(t->a, v); }
static rx_expr *ei(T *t, int64_t v) { return rx_e_int(t->a, v); }
static rx_expr *eadd(T *t, rx_expr *x, rx_expr *y) { return rx_e_binary(t->a, RX_E_ADD, x, y); }
static rx_expr *emul(T *t, rx_expr *x, rx_expr *y) { return rx_e_binary(t->a, RX_E_MUL, x, y); }

#define DIMS(...) ((rx_expr *[]){__VA_ARGS__})
#define NDIMS(...) RX_COUNTOF(DIMS(__VA_ARGS__))
#define SHAPE(t, ...) rx_si_shape((t)->a, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define TENSOR(t, dt, ...) rx_si_tensor((t)->a, (dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define SIS(...) ((rx_sinfo *[]){__VA_ARGS__})
#define TUPLE(t, ...) rx_si_tuple((t)->a, SIS(__VA_ARGS__), RX_COUNTOF(SIS(__VA_ARGS__)))

static rx_sinfo *callable1(T *t, rx_sinfo *param, rx_sinfo *ret, const rx_svar **svars, int n)
{
    rx_sinfo *c = rx_si_callable(t->a, &param, 1, ret);
    c->svars = svars;
    c->nsvars = n;
    return c;
}

/* ---------------------------------------------------------------- is_base_of */

START_TEST(base_of_kinds)
{
    T t;
    t_init(&t);
    rx_sinfo *obj = rx_si_object(t.a);
    rx_sinfo *ten = rx_si_tensor(t.a, RX_DT_F32, 2, NULL);
    rx_sinfo *shp = rx_si_shape(t.a, 2, NULL);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, obj, ten), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, obj, obj), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, ten, obj), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, ten, shp), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, shp, rx_si_prim(t.a, RX_DT_I64, NULL)), RX_CMP_NO);
    t_fini(&t);
}
END_TEST

START_TEST(base_of_prim)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *i64 = rx_si_prim(t.a, RX_DT_I64, NULL);
    rx_sinfo *any = rx_si_prim(t.a, RX_DT_UNKNOWN, NULL);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, i64, rx_si_prim(t.a, RX_DT_I64, ei(&t, 3))), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, any, rx_si_prim(t.a, RX_DT_F32, NULL)), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, i64, rx_si_prim(t.a, RX_DT_F32, NULL)), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, i64, any), RX_CMP_MAYBE);
    rx_sinfo *v3 = rx_si_prim(t.a, RX_DT_I64, ei(&t, 3));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, v3, rx_si_prim(t.a, RX_DT_I64, ei(&t, 3))), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, v3, rx_si_prim(t.a, RX_DT_I64, ei(&t, 4))), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, v3, i64), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, v3, rx_si_prim(t.a, RX_DT_I64, ev(&t, n))), RX_CMP_MAYBE);
    t_fini(&t);
}
END_TEST

START_TEST(base_of_shape)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *m = sv(&t, "m");
    rx_sinfo *n4 = SHAPE(&t, ev(&t, n), ei(&t, 4));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, rx_si_shape(t.a, -1, NULL), n4), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, rx_si_shape(t.a, 2, NULL), n4), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, rx_si_shape(t.a, 3, NULL), n4), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, n4, rx_si_shape(t.a, 2, NULL)), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, n4, rx_si_shape(t.a, -1, NULL)), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, n4, SHAPE(&t, ev(&t, n), ei(&t, 4))), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, n4, SHAPE(&t, ev(&t, n), ei(&t, 5))), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, n4, SHAPE(&t, ev(&t, m), ei(&t, 4))), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, rx_si_shape(t.a, 0, NULL), rx_si_shape(t.a, 0, NULL)),
                     RX_CMP_YES);
    t_fini(&t);
}
END_TEST

/* Needs the arithmetic: n * 2 and n + n are the same dim; 2 * 3 is the literal 6. */
START_TEST(base_of_shape_proved)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *x = SHAPE(&t, emul(&t, ev(&t, n), ei(&t, 2)));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, x, SHAPE(&t, eadd(&t, ev(&t, n), ev(&t, n)))), RX_CMP_YES);
    rx_sinfo *six = SHAPE(&t, emul(&t, ei(&t, 2), ei(&t, 3)));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, six, SHAPE(&t, ei(&t, 6))), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, six, SHAPE(&t, ei(&t, 7))), RX_CMP_NO);
    t_fini(&t);
}
END_TEST

START_TEST(base_of_tensor)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *m = sv(&t, "m");
    rx_sinfo *fine = TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4));
    rx_sinfo *ndim2 = rx_si_tensor(t.a, RX_DT_F32, 2, NULL);
    rx_sinfo *anyrank = rx_si_tensor(t.a, RX_DT_F32, -1, NULL);
    rx_sinfo *top = rx_si_tensor(t.a, RX_DT_UNKNOWN, -1, NULL);
    /* coarser above finer */
    ck_assert_int_eq(rx_si_is_base_of(t.ar, ndim2, fine), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, anyrank, fine), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, top, fine), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, fine), RX_CMP_YES);
    /* finer above coarser: a run-time check */
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, ndim2), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, anyrank), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, ndim2, top), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, TENSOR(&t, RX_DT_UNKNOWN, ev(&t, n), ei(&t, 4))),
                     RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, TENSOR(&t, RX_DT_F32, ev(&t, m), ei(&t, 4))),
                     RX_CMP_MAYBE);
    /* contradictions */
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, TENSOR(&t, RX_DT_I32, ev(&t, n), ei(&t, 4))),
                     RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 5))),
                     RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, ndim2, rx_si_tensor(t.a, RX_DT_F32, 3, NULL)), RX_CMP_NO);
    /* a dtype contradiction wins over an undecided dim */
    ck_assert_int_eq(rx_si_is_base_of(t.ar, fine, TENSOR(&t, RX_DT_I32, ev(&t, m), ei(&t, 4))),
                     RX_CMP_NO);
    t_fini(&t);
}
END_TEST

START_TEST(base_of_tuple)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *m = sv(&t, "m");
    rx_sinfo *tn = TENSOR(&t, RX_DT_F32, ev(&t, n));
    rx_sinfo *base = TUPLE(&t, tn, rx_si_object(t.a));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, TUPLE(&t, tn, rx_si_shape(t.a, 1, NULL))), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, TUPLE(&t, tn)), RX_CMP_NO);
    rx_sinfo *maybe = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, m)), rx_si_object(t.a));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, maybe), RX_CMP_MAYBE);
    /* NO in one field dominates MAYBE in another */
    rx_sinfo *both = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, m)), rx_si_object(t.a));
    rx_sinfo *base2 = TUPLE(&t, tn, rx_si_shape(t.a, 2, NULL));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base2, both), RX_CMP_MAYBE);
    rx_sinfo *contra = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, m)), rx_si_shape(t.a, 3, NULL));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base2, contra), RX_CMP_NO);
    t_fini(&t);
}
END_TEST

START_TEST(base_of_callable)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *ndim2 = rx_si_tensor(t.a, RX_DT_F32, 2, NULL);
    rx_sinfo *anyrank = rx_si_tensor(t.a, RX_DT_F32, -1, NULL);
    rx_sinfo *n4 = TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4));
    /* accepts less, returns more */
    rx_sinfo *base = rx_si_callable(t.a, &ndim2, 1, anyrank);
    /* accepts more, returns less: a subtype */
    rx_sinfo *derived = rx_si_callable(t.a, &anyrank, 1, n4);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, derived), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, derived, base), RX_CMP_MAYBE);
    rx_sinfo *two = rx_si_callable(t.a, SIS(ndim2, ndim2), 2, anyrank);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, two), RX_CMP_NO);
    rx_sinfo *shape_ret = rx_si_callable(t.a, &anyrank, 1, rx_si_shape(t.a, 1, NULL));
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, shape_ret), RX_CMP_NO);
    rx_sinfo *i32_param = rx_si_callable(t.a, SIS(rx_si_tensor(t.a, RX_DT_I32, -1, NULL)), 1, n4);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, base, i32_param), RX_CMP_NO);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, rx_si_object(t.a), base), RX_CMP_YES);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- join */

START_TEST(join_tensors)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *m = sv(&t, "m");
    rx_sinfo *x = TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4));
    rx_sinfo *y = TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4));
    rx_sinfo *j = rx_si_join(t.ar, t.a, x, y);
    ck_assert_int_eq(j->kind, RX_SI_TENSOR);
    ck_assert_int_eq(j->dtype, RX_DT_F32);
    ck_assert_int_eq(j->ndim, 2);
    ck_assert_ptr_nonnull(j->dims);
    ck_assert_ptr_eq(j->dims[0], x->dims[0]);
    ck_assert(rx_si_same(j, x));

    rx_sinfo *z = TENSOR(&t, RX_DT_F32, ev(&t, m), ei(&t, 4));
    j = rx_si_join(t.ar, t.a, x, z);
    ck_assert_int_eq(j->kind, RX_SI_TENSOR);
    ck_assert_int_eq(j->dtype, RX_DT_F32);
    ck_assert_int_eq(j->ndim, 2);
    ck_assert_ptr_null(j->dims);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, j, x), RX_CMP_YES);
    ck_assert_int_eq(rx_si_is_base_of(t.ar, j, z), RX_CMP_YES);

    j = rx_si_join(t.ar, t.a, x, TENSOR(&t, RX_DT_I32, ev(&t, n), ei(&t, 4)));
    ck_assert_int_eq(j->dtype, RX_DT_UNKNOWN);
    ck_assert_int_eq(j->ndim, 2);
    ck_assert_ptr_nonnull(j->dims);

    j = rx_si_join(t.ar, t.a, x, TENSOR(&t, RX_DT_F32, ev(&t, n)));
    ck_assert_int_eq(j->kind, RX_SI_TENSOR);
    ck_assert_int_eq(j->ndim, -1);
    ck_assert_ptr_null(j->dims);

    j = rx_si_join(t.ar, t.a, x, rx_si_tensor(t.a, RX_DT_F32, 2, NULL));
    ck_assert_int_eq(j->ndim, 2);
    ck_assert_ptr_null(j->dims);
    t_fini(&t);
}
END_TEST

/* Needs the arithmetic: (n * 2) and (n + n) are proved equal, so dims are kept. */
START_TEST(join_proved_dims)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *x = SHAPE(&t, emul(&t, ev(&t, n), ei(&t, 2)));
    rx_sinfo *y = SHAPE(&t, eadd(&t, ev(&t, n), ev(&t, n)));
    rx_sinfo *j = rx_si_join(t.ar, t.a, x, y);
    ck_assert_int_eq(j->ndim, 1);
    ck_assert_ptr_nonnull(j->dims);
    ck_assert_ptr_eq(j->dims[0], x->dims[0]);
    t_fini(&t);
}
END_TEST

START_TEST(join_other_kinds)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *ten = TENSOR(&t, RX_DT_F32, ev(&t, n));
    rx_sinfo *shp = SHAPE(&t, ev(&t, n));
    ck_assert_int_eq(rx_si_join(t.ar, t.a, ten, shp)->kind, RX_SI_OBJECT);
    ck_assert_int_eq(rx_si_join(t.ar, t.a, ten, rx_si_object(t.a))->kind, RX_SI_OBJECT);

    rx_sinfo *j = rx_si_join(t.ar, t.a, shp, SHAPE(&t, ev(&t, n)));
    ck_assert_int_eq(j->kind, RX_SI_SHAPE);
    ck_assert_ptr_nonnull(j->dims);
    j = rx_si_join(t.ar, t.a, shp, SHAPE(&t, ei(&t, 3), ei(&t, 4)));
    ck_assert_int_eq(j->kind, RX_SI_SHAPE);
    ck_assert_int_eq(j->ndim, -1);

    rx_sinfo *p1 = rx_si_prim(t.a, RX_DT_I64, ev(&t, n));
    j = rx_si_join(t.ar, t.a, p1, rx_si_prim(t.a, RX_DT_I64, ev(&t, n)));
    ck_assert_int_eq(j->dtype, RX_DT_I64);
    ck_assert_ptr_eq(j->value, p1->value);
    j = rx_si_join(t.ar, t.a, p1, rx_si_prim(t.a, RX_DT_I64, ei(&t, 2)));
    ck_assert_int_eq(j->dtype, RX_DT_I64);
    ck_assert_ptr_null(j->value);
    j = rx_si_join(t.ar, t.a, p1, rx_si_prim(t.a, RX_DT_I32, NULL));
    ck_assert_int_eq(j->kind, RX_SI_PRIM);
    ck_assert_int_eq(j->dtype, RX_DT_UNKNOWN);
    t_fini(&t);
}
END_TEST

START_TEST(join_tuples)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *m = sv(&t, "m");
    rx_sinfo *x = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4)), SHAPE(&t, ev(&t, n)));
    rx_sinfo *y = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, m), ei(&t, 4)), SHAPE(&t, ev(&t, n)));
    rx_sinfo *j = rx_si_join(t.ar, t.a, x, y);
    ck_assert_int_eq(j->kind, RX_SI_TUPLE);
    ck_assert_int_eq(j->nfields, 2);
    ck_assert_int_eq(j->fields[0]->kind, RX_SI_TENSOR);
    ck_assert_int_eq(j->fields[0]->ndim, 2);
    ck_assert_ptr_null(j->fields[0]->dims);
    ck_assert_ptr_nonnull(j->fields[1]->dims);
    ck_assert_ptr_eq(j->fields[1]->dims[0], x->fields[1]->dims[0]);

    ck_assert_int_eq(rx_si_join(t.ar, t.a, x, TUPLE(&t, SHAPE(&t, ev(&t, n))))->kind, RX_SI_OBJECT);
    j = rx_si_join(t.ar, t.a, x, TUPLE(&t, SHAPE(&t, ev(&t, n)), SHAPE(&t, ev(&t, n))));
    ck_assert_int_eq(j->kind, RX_SI_TUPLE);
    ck_assert_int_eq(j->fields[0]->kind, RX_SI_OBJECT);
    ck_assert_int_eq(j->fields[1]->kind, RX_SI_SHAPE);
    t_fini(&t);
}
END_TEST

START_TEST(join_callables)
{
    T t;
    t_init(&t);
    rx_sinfo *p = rx_si_tensor(t.a, RX_DT_F32, 2, NULL);
    rx_sinfo *f = rx_si_callable(t.a, &p, 1, rx_si_tensor(t.a, RX_DT_F32, 1, NULL));
    rx_sinfo *g = rx_si_callable(t.a, SIS(rx_si_tensor(t.a, RX_DT_F32, 2, NULL)), 1,
                                 rx_si_tensor(t.a, RX_DT_I32, 1, NULL));
    rx_sinfo *j = rx_si_join(t.ar, t.a, f, g);
    ck_assert_int_eq(j->kind, RX_SI_CALLABLE);
    ck_assert_int_eq(j->nfields, 1);
    ck_assert_int_eq(j->ret->kind, RX_SI_TENSOR);
    ck_assert_int_eq(j->ret->dtype, RX_DT_UNKNOWN);
    ck_assert_int_eq(j->ret->ndim, 1);
    rx_sinfo *h = rx_si_callable(t.a, SIS(rx_si_tensor(t.a, RX_DT_F32, 3, NULL)), 1, f->ret);
    ck_assert_int_eq(rx_si_join(t.ar, t.a, f, h)->kind, RX_SI_OBJECT);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- subst */

START_TEST(subst_basic)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *k = sv(&t, "k");
    rx_vmap m = {0};
    rx_vmap_set(&m, n, ei(&t, 8));
    rx_sinfo *s = TUPLE(&t, TENSOR(&t, RX_DT_F32, emul(&t, ev(&t, n), ei(&t, 2)), ev(&t, k)),
                        rx_si_prim(t.a, RX_DT_I64, eadd(&t, ev(&t, n), ei(&t, 1))),
                        rx_si_shape(t.a, 3, NULL), rx_si_object(t.a));
    rx_sinfo *r = rx_si_subst(t.a, s, &m);
    rx_sinfo *want = TUPLE(&t, TENSOR(&t, RX_DT_F32, emul(&t, ei(&t, 8), ei(&t, 2)), ev(&t, k)),
                           rx_si_prim(t.a, RX_DT_I64, eadd(&t, ei(&t, 8), ei(&t, 1))),
                           rx_si_shape(t.a, 3, NULL), rx_si_object(t.a));
    ck_assert(rx_si_same(r, want));
    ck_assert(!rx_si_same(r, s));
    /* the input is unchanged */
    ck_assert(rx_expr_uses_var(s->fields[0]->dims[0], n));
    ck_assert_ptr_null(r->fields[2]->dims);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

START_TEST(subst_callable_shadows)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *outer = sv(&t, "k");
    const rx_svar *own[] = {n};
    rx_sinfo *c = callable1(&t, TENSOR(&t, RX_DT_F32, ev(&t, n), ev(&t, outer)),
                            TENSOR(&t, RX_DT_F32, emul(&t, ev(&t, n), ev(&t, outer))), own, 1);
    rx_vmap m = {0};
    rx_vmap_set(&m, n, ei(&t, 5));
    rx_vmap_set(&m, outer, ei(&t, 7));
    rx_sinfo *r = rx_si_subst(t.a, c, &m);
    ck_assert_int_eq(r->kind, RX_SI_CALLABLE);
    ck_assert_int_eq(r->nsvars, 1);
    ck_assert_ptr_eq(r->svars[0], n);
    ck_assert(rx_expr_same(r->fields[0]->dims[0], ev(&t, n)));
    ck_assert(rx_expr_is_int(r->fields[0]->dims[1], 7));
    ck_assert(rx_expr_same(r->ret->dims[0], emul(&t, ev(&t, n), ei(&t, 7))));
    /* the map itself is untouched */
    ck_assert_int_eq(m.keys.n, 2);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- erase */

typedef struct defset { const rx_svar **v; int n; } defset;

static bool in_defset(void *ud, const rx_svar *v)
{
    const defset *d = ud;
    for (int i = 0; i < d->n; i++)
        if (d->v[i] == v) return true;
    return false;
}

START_TEST(erase_predicate)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *u = sv(&t, "u");
    const rx_svar *ok[] = {n};
    defset d = {ok, 1};
    rx_sinfo *s = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, n), emul(&t, ev(&t, u), ei(&t, 2))),
                        TENSOR(&t, RX_DT_F16, ev(&t, n), ei(&t, 4)),
                        rx_si_prim(t.a, RX_DT_I64, eadd(&t, ev(&t, u), ei(&t, 1))),
                        rx_si_prim(t.a, RX_DT_I64, ev(&t, n)), SHAPE(&t, ev(&t, u)));
    rx_sinfo *r = rx_si_erase(t.a, s, in_defset, &d);
    ck_assert_int_eq(r->kind, RX_SI_TUPLE);
    ck_assert_int_eq(r->nfields, 5);
    ck_assert_int_eq(r->fields[0]->kind, RX_SI_TENSOR);
    ck_assert_int_eq(r->fields[0]->dtype, RX_DT_F32);
    ck_assert_int_eq(r->fields[0]->ndim, 2);
    ck_assert_ptr_null(r->fields[0]->dims);
    ck_assert(rx_si_same(r->fields[1], s->fields[1]));
    ck_assert_ptr_null(r->fields[2]->value);
    ck_assert_int_eq(r->fields[2]->dtype, RX_DT_I64);
    ck_assert_ptr_eq(r->fields[3]->value, s->fields[3]->value);
    ck_assert_int_eq(r->fields[4]->ndim, 1);
    ck_assert_ptr_null(r->fields[4]->dims);
    /* erasure only goes up */
    ck_assert_int_eq(rx_si_is_base_of(t.ar, r, s), RX_CMP_YES);
    /* the input is unchanged */
    ck_assert_ptr_nonnull(s->fields[0]->dims);
    t_fini(&t);
}
END_TEST

START_TEST(erase_callable_own_svars)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *u = sv(&t, "u");
    const rx_svar *own[] = {n};
    defset none = {NULL, 0};
    rx_sinfo *c = callable1(&t, TENSOR(&t, RX_DT_F32, ev(&t, n)),
                            TUPLE(&t, TENSOR(&t, RX_DT_F32, emul(&t, ev(&t, n), ei(&t, 2))),
                                  TENSOR(&t, RX_DT_F32, ev(&t, u))),
                            own, 1);
    rx_sinfo *r = rx_si_erase(t.a, c, in_defset, &none);
    ck_assert_ptr_nonnull(r->fields[0]->dims);
    ck_assert_ptr_nonnull(r->ret->fields[0]->dims);
    ck_assert_ptr_null(r->ret->fields[1]->dims);
    ck_assert_int_eq(r->ret->fields[1]->ndim, 1);
    /* outside the callable, n is not defined */
    rx_sinfo *bare = rx_si_erase(t.a, c->fields[0], in_defset, &none);
    ck_assert_ptr_null(bare->dims);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- match: Figure 7 */

/* subfn(s: Shape([n, m])) -> Tensor((n * m,), "f32"), with n and m its own svars. */
typedef struct subfn {
    rx_svar *n, *m;
    const rx_svar *svars[2];
    rx_sinfo *sig;
} subfn;

static void subfn_init(T *t, subfn *f)
{
    f->n = sv(t, "n");
    f->m = sv(t, "m");
    f->svars[0] = f->n;
    f->svars[1] = f->m;
    f->sig = callable1(t, SHAPE(t, ev(t, f->n), ev(t, f->m)),
                       TENSOR(t, RX_DT_F32, emul(t, ev(t, f->n), ev(t, f->m))), f->svars, 2);
}

typedef struct bound_ctx { const rx_sinfo *callee; const rx_vmap *m; } bound_ctx;

/* Defined at the call site: the caller's own variables, and the callee's once bound. */
static bool bound_at_call(void *ud, const rx_svar *v)
{
    const bound_ctx *b = ud;
    for (int i = 0; i < b->callee->nsvars; i++)
        if (b->callee->svars[i] == v) return rx_vmap_get(b->m, v) != NULL;
    return true;
}

/* The caller's deduction of a call: match the params, erase what stayed unbound,
 * substitute, simplify the dims. */
static rx_sinfo *call_ret(T *t, const rx_sinfo *callee, rx_sinfo *arg, rx_cmp *res)
{
    rx_vmap m = {0};
    *res = rx_si_match(t->ar, t->a, callee->fields[0], arg, &m);
    bound_ctx b = {callee, &m};
    rx_sinfo *r = rx_si_subst(t->a, rx_si_erase(t->a, callee->ret, bound_at_call, &b), &m);
    for (int i = 0; r->dims && i < r->ndim; i++) r->dims[i] = rx_arith_simplify(t->ar, r->dims[i]);
    rx_vmap_free(&m);
    return r;
}

START_TEST(fig7_symbolic)
{
    T t;
    t_init(&t);
    subfn f;
    subfn_init(&t, &f);
    rx_svar *n2 = sv(&t, "n2");
    rx_vmap m = {0};
    rx_cmp res = rx_si_match(t.ar, t.a, f.sig->fields[0], SHAPE(&t, ev(&t, n2), ei(&t, 4)), &m);
    ck_assert_int_eq(res, RX_CMP_YES);
    ck_assert_int_eq(m.keys.n, 2);
    ck_assert(rx_expr_same(rx_vmap_get(&m, f.n), ev(&t, n2)));
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, f.m), 4));
    rx_sinfo *r = rx_si_subst(t.a, f.sig->ret, &m);
    ck_assert(rx_expr_same(r->dims[0], emul(&t, ev(&t, n2), ei(&t, 4))));
    rx_vmap_free(&m);

    /* the full call path, through the arithmetic */
    r = call_ret(&t, f.sig, SHAPE(&t, ev(&t, n2), ei(&t, 4)), &res);
    ck_assert_int_eq(res, RX_CMP_YES);
    ck_assert_int_eq(r->ndim, 1);
    ck_assert_int_eq(r->dtype, RX_DT_F32);
    ck_assert(rx_arith_prove_equal(t.ar, r->dims[0], emul(&t, ei(&t, 4), ev(&t, n2))));
    t_fini(&t);
}
END_TEST

START_TEST(fig7_constant)
{
    T t;
    t_init(&t);
    subfn f;
    subfn_init(&t, &f);
    rx_cmp res;
    rx_sinfo *r = call_ret(&t, f.sig, SHAPE(&t, ei(&t, 3), ei(&t, 4)), &res);
    ck_assert_int_eq(res, RX_CMP_YES);
    ck_assert_int_eq(r->ndim, 1);
    ck_assert_ptr_nonnull(r->dims);
    ck_assert(rx_expr_is_int(r->dims[0], 12));
    t_fini(&t);
}
END_TEST

START_TEST(fig7_expression)
{
    T t;
    t_init(&t);
    subfn f;
    subfn_init(&t, &f);
    rx_svar *n2 = sv(&t, "n2");
    rx_expr *n2p1 = eadd(&t, ev(&t, n2), ei(&t, 1));
    rx_vmap m = {0};
    rx_cmp res = rx_si_match(t.ar, t.a, f.sig->fields[0], SHAPE(&t, n2p1, ei(&t, 4)), &m);
    ck_assert_int_eq(res, RX_CMP_YES);
    ck_assert_ptr_eq(rx_vmap_get(&m, f.n), n2p1);
    rx_sinfo *r = rx_si_subst(t.a, f.sig->ret, &m);
    ck_assert(rx_expr_same(r->dims[0], emul(&t, eadd(&t, ev(&t, n2), ei(&t, 1)), ei(&t, 4))));
    rx_vmap_free(&m);

    r = call_ret(&t, f.sig, SHAPE(&t, n2p1, ei(&t, 4)), &res);
    ck_assert_int_eq(res, RX_CMP_YES);
    ck_assert(rx_arith_prove_equal(t.ar, r->dims[0],
                                   eadd(&t, emul(&t, ev(&t, n2), ei(&t, 4)), ei(&t, 4))));
    ck_assert(!rx_expr_uses_var(r->dims[0], f.n));
    t_fini(&t);
}
END_TEST

START_TEST(fig7_coarse)
{
    T t;
    t_init(&t);
    subfn f;
    subfn_init(&t, &f);
    rx_vmap m = {0};
    rx_cmp res = rx_si_match(t.ar, t.a, f.sig->fields[0], rx_si_shape(t.a, 2, NULL), &m);
    ck_assert_int_eq(res, RX_CMP_MAYBE);
    ck_assert_int_eq(m.keys.n, 0);
    rx_vmap_free(&m);

    rx_sinfo *r = call_ret(&t, f.sig, rx_si_shape(t.a, 2, NULL), &res);
    ck_assert_int_eq(res, RX_CMP_MAYBE);
    ck_assert_int_eq(r->kind, RX_SI_TENSOR);
    ck_assert_int_eq(r->dtype, RX_DT_F32);
    ck_assert_int_eq(r->ndim, 1);
    ck_assert_ptr_null(r->dims);
    /* a rank contradiction is not a run-time question */
    r = call_ret(&t, f.sig, rx_si_shape(t.a, 3, NULL), &res);
    ck_assert_int_eq(res, RX_CMP_NO);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- match: the rest */

START_TEST(match_repeated_and_bound)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *k = sv(&t, "k");
    rx_sinfo *nn = SHAPE(&t, ev(&t, n), ev(&t, n));
    rx_vmap m = {0};
    ck_assert_int_eq(rx_si_match(t.ar, t.a, nn, SHAPE(&t, ei(&t, 3), ei(&t, 4)), &m), RX_CMP_NO);
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, nn, SHAPE(&t, ei(&t, 3), ei(&t, 3)), &m), RX_CMP_YES);
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, n), 3));
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, nn, SHAPE(&t, ev(&t, k), ei(&t, 3)), &m), RX_CMP_MAYBE);
    rx_vmap_free(&m);
    /* an existing binding is respected, not overwritten */
    rx_vmap_set(&m, n, ei(&t, 5));
    ck_assert_int_eq(rx_si_match(t.ar, t.a, SHAPE(&t, ev(&t, n)), SHAPE(&t, ei(&t, 6)), &m), RX_CMP_NO);
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, n), 5));
    ck_assert_int_eq(rx_si_match(t.ar, t.a, SHAPE(&t, ev(&t, n)), SHAPE(&t, ei(&t, 5)), &m), RX_CMP_YES);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

/* Figure 8: an expression dim before the dim that binds its variable. Needs the
 * arithmetic (n * 2 with n := 4 is 8). */
START_TEST(match_expression_dims)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *k = sv(&t, "k");
    rx_sinfo *p = TUPLE(&t, TENSOR(&t, RX_DT_F32, emul(&t, ev(&t, n), ei(&t, 2))), SHAPE(&t, ev(&t, n)));
    rx_vmap m = {0};
    rx_cmp r = rx_si_match(t.ar, t.a, p, TUPLE(&t, TENSOR(&t, RX_DT_F32, ei(&t, 8)), SHAPE(&t, ei(&t, 4))), &m);
    ck_assert_int_eq(r, RX_CMP_YES);
    rx_vmap_free(&m);
    r = rx_si_match(t.ar, t.a, p, TUPLE(&t, TENSOR(&t, RX_DT_F32, ei(&t, 9)), SHAPE(&t, ei(&t, 4))), &m);
    ck_assert_int_eq(r, RX_CMP_NO);
    rx_vmap_free(&m);
    rx_expr *k2 = emul(&t, ev(&t, k), ei(&t, 2));
    r = rx_si_match(t.ar, t.a, p, TUPLE(&t, TENSOR(&t, RX_DT_F32, k2), SHAPE(&t, ev(&t, k))), &m);
    ck_assert_int_eq(r, RX_CMP_YES);
    rx_vmap_free(&m);
    r = rx_si_match(t.ar, t.a, p, TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, k)), SHAPE(&t, ev(&t, k))), &m);
    ck_assert_int_eq(r, RX_CMP_MAYBE);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

START_TEST(match_kinds_and_dtypes)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *p = TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4));
    rx_vmap m = {0};
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, TENSOR(&t, RX_DT_I32, ei(&t, 2), ei(&t, 4)), &m), RX_CMP_NO);
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, TENSOR(&t, RX_DT_UNKNOWN, ei(&t, 2), ei(&t, 4)), &m),
                     RX_CMP_MAYBE);
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, n), 2));
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, TENSOR(&t, RX_DT_F32, ei(&t, 2), ei(&t, 5)), &m), RX_CMP_NO);
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, SHAPE(&t, ei(&t, 2), ei(&t, 4)), &m), RX_CMP_NO);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, rx_si_object(t.a), &m), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, rx_si_tensor(t.a, RX_DT_F32, -1, NULL), &m), RX_CMP_MAYBE);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, rx_si_object(t.a), p, &m), RX_CMP_YES);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, rx_si_tensor(t.a, RX_DT_F32, 2, NULL), p, &m), RX_CMP_YES);
    ck_assert_int_eq(m.keys.n, 0);
    /* prim values bind like dims */
    rx_sinfo *pp = rx_si_prim(t.a, RX_DT_I64, ev(&t, n));
    ck_assert_int_eq(rx_si_match(t.ar, t.a, pp, rx_si_prim(t.a, RX_DT_I64, ei(&t, 7)), &m), RX_CMP_YES);
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, n), 7));
    ck_assert_int_eq(rx_si_match(t.ar, t.a, pp, rx_si_prim(t.a, RX_DT_I64, ei(&t, 8)), &m), RX_CMP_NO);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, pp, rx_si_prim(t.a, RX_DT_I64, NULL), &m), RX_CMP_MAYBE);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

START_TEST(match_tuple_arity)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *p = TUPLE(&t, SHAPE(&t, ev(&t, n)), rx_si_object(t.a));
    rx_vmap m = {0};
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, TUPLE(&t, SHAPE(&t, ei(&t, 1))), &m), RX_CMP_NO);
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, TUPLE(&t, SHAPE(&t, ei(&t, 1)), SHAPE(&t, ei(&t, 2))), &m),
                     RX_CMP_YES);
    ck_assert(rx_expr_is_int(rx_vmap_get(&m, n), 1));
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

/* A callable param is checked against the argument with the bindings substituted. */
START_TEST(match_callable_param)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n");
    rx_sinfo *t1 = rx_si_tensor(t.a, RX_DT_F32, 1, NULL);
    rx_sinfo *p = TUPLE(&t, SHAPE(&t, ev(&t, n)), rx_si_callable(t.a, &t1, 1, TENSOR(&t, RX_DT_F32, ev(&t, n))));
    rx_sinfo *good = TUPLE(&t, SHAPE(&t, ei(&t, 4)), rx_si_callable(t.a, &t1, 1, TENSOR(&t, RX_DT_F32, ei(&t, 4))));
    rx_sinfo *bad = TUPLE(&t, SHAPE(&t, ei(&t, 4)), rx_si_callable(t.a, &t1, 1, TENSOR(&t, RX_DT_F32, ei(&t, 5))));
    rx_vmap m = {0};
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, good, &m), RX_CMP_YES);
    rx_vmap_free(&m);
    ck_assert_int_eq(rx_si_match(t.ar, t.a, p, bad, &m), RX_CMP_NO);
    rx_vmap_free(&m);
    t_fini(&t);
}
END_TEST

/* ---------------------------------------------------------------- same */

START_TEST(same_structural)
{
    T t;
    t_init(&t);
    rx_svar *n = sv(&t, "n"), *n_again = sv(&t, "n");
    rx_sinfo *x = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4)), rx_si_prim(t.a, RX_DT_I64, NULL));
    rx_sinfo *y = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, n), ei(&t, 4)), rx_si_prim(t.a, RX_DT_I64, NULL));
    ck_assert(rx_si_same(x, y));
    rx_sinfo *z = TUPLE(&t, TENSOR(&t, RX_DT_F32, ev(&t, n_again), ei(&t, 4)), rx_si_prim(t.a, RX_DT_I64, NULL));
    ck_assert(!rx_si_same(x, z));
    ck_assert(!rx_si_same(TENSOR(&t, RX_DT_F32, ev(&t, n)), TENSOR(&t, RX_DT_F16, ev(&t, n))));
    ck_assert(!rx_si_same(TENSOR(&t, RX_DT_F32, ev(&t, n)), rx_si_tensor(t.a, RX_DT_F32, 1, NULL)));
    ck_assert(!rx_si_same(SHAPE(&t, ev(&t, n)), TENSOR(&t, RX_DT_UNKNOWN, ev(&t, n))));
    ck_assert(rx_si_same(rx_si_shape(t.a, 0, NULL), rx_si_shape(t.a, 0, NULL)));
    ck_assert(!rx_si_same(rx_si_prim(t.a, RX_DT_I64, ei(&t, 1)), rx_si_prim(t.a, RX_DT_I64, NULL)));

    const rx_svar *own1[] = {n}, *own2[] = {n_again};
    rx_sinfo *c1 = callable1(&t, rx_si_shape(t.a, 1, NULL), rx_si_object(t.a), own1, 1);
    rx_sinfo *c2 = callable1(&t, rx_si_shape(t.a, 1, NULL), rx_si_object(t.a), own1, 1);
    rx_sinfo *c3 = callable1(&t, rx_si_shape(t.a, 1, NULL), rx_si_object(t.a), own2, 1);
    rx_sinfo *c4 = callable1(&t, rx_si_shape(t.a, 1, NULL), rx_si_object(t.a), NULL, 0);
    ck_assert(rx_si_same(c1, c2));
    ck_assert(!rx_si_same(c1, c3));
    ck_assert(!rx_si_same(c1, c4));
    t_fini(&t);
}
END_TEST

static Suite *sinfo_suite(void)
{
    Suite *s = suite_create("sinfo");
    TCase *tc = tcase_create("structural");
    tcase_add_test(tc, base_of_kinds);
    tcase_add_test(tc, base_of_prim);
    tcase_add_test(tc, base_of_shape);
    tcase_add_test(tc, base_of_tensor);
    tcase_add_test(tc, base_of_tuple);
    tcase_add_test(tc, base_of_callable);
    tcase_add_test(tc, join_tensors);
    tcase_add_test(tc, join_other_kinds);
    tcase_add_test(tc, join_tuples);
    tcase_add_test(tc, join_callables);
    tcase_add_test(tc, subst_basic);
    tcase_add_test(tc, subst_callable_shadows);
    tcase_add_test(tc, erase_predicate);
    tcase_add_test(tc, erase_callable_own_svars);
    tcase_add_test(tc, fig7_coarse);
    tcase_add_test(tc, match_repeated_and_bound);
    tcase_add_test(tc, match_kinds_and_dtypes);
    tcase_add_test(tc, match_tuple_arity);
    tcase_add_test(tc, match_callable_param);
    tcase_add_test(tc, same_structural);
    suite_add_tcase(s, tc);

    TCase *arith = tcase_create("arith");
    tcase_add_test(arith, base_of_shape_proved);
    tcase_add_test(arith, join_proved_dims);
    tcase_add_test(arith, fig7_symbolic);
    tcase_add_test(arith, fig7_constant);
    tcase_add_test(arith, fig7_expression);
    tcase_add_test(arith, match_expression_dims);
    suite_add_tcase(s, arith);
    return s;
}

int main(void)
{
    return rx_check_run(sinfo_suite());
}
