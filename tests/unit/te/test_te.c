/*
 * test_te.c — the tensor-expression builder (compiler/te): the structure of the loop
 * functions it emits (parameters, symbolic variables, tir_vars, blocks), their printed
 * form, and the relax-json round trip (write, read back, structurally equal), which
 * shows that a generated function is exactly what the reader builds for the same
 * function written in JSON.
 *
 * Each test builds in a fresh module whose "caller" shape variables stand for a graph
 * function's (n, m).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "relax/json.h"
#include "relax/te.h"
#include "relax/text.h"

typedef struct T {
    rx_module *m;
    rx_te *te;
    rx_svar *n, *k; /* caller variables */
} T;

static void t_init(T *t)
{
    t->m = rx_module_new();
    t->te = rx_te_new(t->m);
    t->n = rx_svar_new(t->m->arena, "n", RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(t->m));
    t->k = rx_svar_new(t->m->arena, "m", RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(t->m));
}

static void t_fini(T *t)
{
    rx_te_free(t->te);
    rx_module_free(t->m);
}

static rx_expr *ev(T *t, const rx_svar *v) { return rx_e_var(t->m->arena, v); }
static rx_expr *ei(T *t, int64_t v) { return rx_e_int(t->m->arena, v); }
static rx_expr *emul(T *t, rx_expr *x, rx_expr *y) { return rx_e_binary(t->m->arena, RX_E_MUL, x, y); }

#define DIMS(...) ((rx_expr *[]){__VA_ARGS__})
#define NDIMS(...) RX_COUNTOF(DIMS(__VA_ARGS__))
#define TS(...) ((rx_te_tensor *[]){__VA_ARGS__})

/* Writes the module, reads it back, and checks structural equality. */
static void roundtrip(rx_module *m)
{
    rx_sb js = {0}, why = {0};
    rx_json_write(m, 0, &js);
    rx_diags d;
    rx_diags_init(&d);
    rx_module *m2 = rx_json_read(js.p, js.n, NULL, &d);
    if (!m2) {
        rx_sb e = {0};
        rx_diags_format(&d, &e);
        ck_abort_msg("re-read failed:\n%s\n%s", rx_sb_str(&e), rx_sb_str(&js));
    }
    bool eq = rx_struct_equal(m, m2, &why);
    if (!eq) {
        rx_sb p1 = {0}, p2 = {0};
        rx_print_module(m, &p1);
        rx_print_module(m2, &p2);
        ck_abort_msg("not equal after round trip: %s\n%s\n---\n%s", rx_sb_str(&why),
                     rx_sb_str(&p1), rx_sb_str(&p2));
    }
    rx_module_free(m2);
    rx_diags_free(&d);
    rx_sb_free(&js);
    rx_sb_free(&why);
}

static char *printed(rx_module *m, rx_func *f)
{
    rx_sb b = {0};
    rx_print_func(m, f, &b);
    return rx_sb_take(&b);
}

/* ---------------------------------------------------------------- callbacks */
typedef struct two { const rx_te_tensor *x, *y; } two;

static rx_expr *add_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    two *p = ud;
    return rx_e_binary(rx_te_arena(te), RX_E_ADD, rx_te_at(te, p->x, idx), rx_te_at(te, p->y, idx));
}

static rx_expr *exp_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    two *p = ud;
    rx_expr *x = rx_te_at(te, p->x, idx);
    return rx_e_call(rx_te_arena(te), RX_FN_EXP, &x, 1, (rx_dtype)x->dtype);
}

static rx_expr *row_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    two *p = ud;
    return rx_te_at(te, p->x, (rx_expr *[]){idx[0], r[0]});
}

/* ---------------------------------------------------------------- tests */

START_TEST(add_symbolic_n)
{
    T t;
    t_init(&t);
    rx_expr **sh = DIMS(ev(&t, t.n), ei(&t, 4));
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 2, sh);
    rx_te_tensor *y = rx_te_placeholder(t.te, "y", RX_DT_F32, 2, sh);
    two p = {x, y};
    rx_te_tensor *o = rx_te_compute(t.te, "T_add", RX_DT_F32, 2, sh, add_cb, &p);
    rx_te_func tf;
    rx_te_build(t.te, "add", TS(x, y), 2, TS(o), 1, &tf);
    rx_func *f = tf.fn;
    ck_assert_int_eq(f->kind, RX_F_TIR);
    ck_assert_int_eq(f->ntparams, 3);
    ck_assert_int_eq(tf.ntir_vars, 0);
    ck_assert_int_eq(f->nsvars, 1);
    ck_assert_ptr_ne(f->svars[0], t.n); /* its own variable */
    ck_assert_str_eq(f->svars[0]->name, "n");
    ck_assert_int_eq(f->svars[0]->kind, RX_SV_SHAPE);
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(f->tparams[i].buf);
        ck_assert_int_eq(f->tparams[i].buf->shape[0]->kind, RX_E_VAR);
        ck_assert_ptr_eq(f->tparams[i].buf->shape[0]->u.var, f->svars[0]);
    }
    rx_te_add_func(t.m, f);
    char *s = printed(t.m, f);
    /* Key lines (the printer owns the exact layout of iterators and comments). */
    static const char *const want[] = {
        "@T.prim_func\n"
        "def add(x: T.Buffer((n, 4), \"f32\"), y: T.Buffer((n, 4), \"f32\"), "
        "T_add: T.Buffer((n, 4), \"f32\")):\n"
        "    n = T.int64()\n"
        "    for i0 in range(n):\n"
        "        for i1 in range(4):\n"
        "            with T.block(\"T_add\"):\n",
        "                T_add[i0, i1] = x[i0, i1] + y[i0, i1]\n",
    };
    for (int i = 0; i < RX_COUNTOF(want); i++)
        ck_assert_msg(strstr(s, want[i]) != NULL, "printed:\n%s\nmissing:\n%s", s, want[i]);
    free(s);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST


START_TEST(scalar_param_for_non_whole_dim)
{
    T t;
    t_init(&t);
    rx_expr **sh = DIMS(emul(&t, ev(&t, t.n), ei(&t, 4)));
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 1, sh);
    two p = {x, NULL};
    rx_te_tensor *o = rx_te_compute(t.te, "T_exp", RX_DT_F32, 1, sh, exp_cb, &p);
    rx_te_func tf;
    rx_te_build(t.te, "exp", TS(x), 1, TS(o), 1, &tf);
    rx_func *f = tf.fn;
    ck_assert_int_eq(f->ntparams, 3);
    ck_assert_int_eq(f->nsvars, 1);
    ck_assert_int_eq(f->svars[0]->kind, RX_SV_PARAM);
    ck_assert_ptr_null(f->tparams[2].buf);
    ck_assert_ptr_eq(f->tparams[2].var, f->svars[0]);
    ck_assert_int_eq(tf.ntir_vars, 1);
    ck_assert_int_eq(tf.tir_vars[0]->kind, RX_E_VAR);
    ck_assert_ptr_eq(tf.tir_vars[0]->u.var, t.n); /* the caller's variable */
    rx_te_add_func(t.m, f);
    char *s = printed(t.m, f);
    ck_assert_msg(strstr(s, "def exp(x: T.Buffer((n * 4,), \"f32\"), T_exp: T.Buffer((n * 4,), "
                            "\"f32\"), n: T.int64):") != NULL, "%s", s);
    ck_assert_msg(strstr(s, "T_exp[i0] = exp(x[i0])") != NULL, "%s", s);
    free(s);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST

START_TEST(whole_dim_in_output_defines)
{
    T t;
    t_init(&t);
    /* x (n * 4,) never has n alone; y (n, 4) and the output (n,) do: n is a shape
     * variable defined by y, and no tir_var is needed */
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 1, DIMS(emul(&t, ev(&t, t.n), ei(&t, 4))));
    rx_te_tensor *y = rx_te_placeholder(t.te, "y", RX_DT_F32, 2, DIMS(ev(&t, t.n), ei(&t, 4)));
    two p = {y, NULL};
    rx_te_tensor *o = rx_te_reduce(t.te, "T_rows", RX_DT_F32, 1, DIMS(ev(&t, t.n)), RX_TE_SUM, 1, DIMS(ei(&t, 4)),
                     NULL, row_cb, &p);
    rx_te_func tf;
    rx_te_build(t.te, "rows", TS(x, y), 2, TS(o), 1, &tf);
    ck_assert_int_eq(tf.ntir_vars, 0);
    ck_assert_int_eq(tf.fn->nsvars, 1);
    ck_assert_int_eq(tf.fn->svars[0]->kind, RX_SV_SHAPE);
    ck_assert_int_eq(tf.fn->ntparams, 3);
    /* the reduction: FOR i0 { FOR k0 { BLOCK(init, body) } } */
    rx_stmt *s = tf.fn->tbody.items[0];
    ck_assert_int_eq(tf.fn->tbody.n, 1);
    ck_assert_int_eq(s->kind, RX_S_FOR);
    rx_stmt *b = s->u.for_.body.items[0]->u.for_.body.items[0];
    ck_assert_int_eq(b->kind, RX_S_BLOCK);
    ck_assert_int_eq(b->u.block.niters, 2);
    ck_assert_int_eq(b->u.block.iters[0].kind, RX_ITER_SPATIAL);
    ck_assert_int_eq(b->u.block.iters[1].kind, RX_ITER_REDUCE);
    ck_assert_int_eq(b->u.block.init.n, 1);
    rx_te_add_func(t.m, tf.fn);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST

typedef struct meanctx { rx_te_tensor *s; rx_expr *cnt; } meanctx;

static rx_expr *div_cb(rx_te *te, rx_expr *const *idx, void *ud)
{
    meanctx *c = ud;
    return rx_e_binary(rx_te_arena(te), RX_E_DIV, rx_te_at(te, c->s, idx),
                       rx_te_cast(te, RX_DT_F32, c->cnt));
}

START_TEST(intermediate_is_allocated)
{
    T t;
    t_init(&t);
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 2, DIMS(ev(&t, t.n), ev(&t, t.k)));
    two p = {x, NULL};
    rx_te_tensor *s = rx_te_reduce(t.te, "T_sum", RX_DT_F32, 1, DIMS(ev(&t, t.n)), RX_TE_SUM, 1,
                                   DIMS(ev(&t, t.k)), NULL, row_cb, &p);
    meanctx mc = {s, ev(&t, t.k)};
    rx_te_tensor *o = rx_te_compute(t.te, "T_mean", RX_DT_F32, 1, DIMS(ev(&t, t.n)), div_cb, &mc);
    rx_te_func tf;
    rx_te_build(t.te, "mean", TS(x), 1, TS(o), 1, &tf);
    rx_func *f = tf.fn;
    ck_assert_int_eq(f->ntparams, 2);
    ck_assert_int_eq(f->nsvars, 2);
    ck_assert_int_eq(tf.ntir_vars, 0);
    ck_assert_int_eq(f->tbody.n, 3);
    ck_assert_int_eq(f->tbody.items[0]->kind, RX_S_ALLOC);
    ck_assert_str_eq(f->tbody.items[0]->u.alloc.buf->name, "T_sum");
    rx_te_add_func(t.m, f);
    char *txt = printed(t.m, f);
    ck_assert_msg(strstr(txt, "T_mean[i0] = T_sum[i0] / f32(m)") != NULL, "%s", txt);
    free(txt);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST

typedef struct inl { rx_te_tensor *e, *x; } inl;

static rx_expr *sum_e_x(rx_te *te, rx_expr *const *idx, void *ud)
{
    inl *c = ud;
    return rx_e_binary(rx_te_arena(te), RX_E_ADD, rx_te_at(te, c->e, idx), rx_te_at(te, c->x, idx));
}

START_TEST(inline_compute)
{
    T t;
    t_init(&t);
    rx_expr **sh = DIMS(ev(&t, t.n));
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 1, sh);
    two p = {x, NULL};
    rx_te_tensor *e = rx_te_compute(t.te, "T_exp", RX_DT_F32, 1, sh, exp_cb, &p);
    rx_te_inline(e);
    inl c = {e, x};
    rx_te_tensor *o = rx_te_compute(t.te, "T_out", RX_DT_F32, 1, sh, sum_e_x, &c);
    rx_te_func tf;
    rx_te_build(t.te, "expadd", TS(x), 1, TS(o), 1, &tf);
    ck_assert_int_eq(tf.fn->tbody.n, 1);
    rx_te_add_func(t.m, tf.fn);
    char *txt = printed(t.m, tf.fn);
    ck_assert_msg(strstr(txt, "T_out[i0] = exp(x[i0]) + x[i0]") != NULL, "%s", txt);
    free(txt);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST

START_TEST(argmax_two_stores)
{
    T t;
    t_init(&t);
    rx_te_tensor *x = rx_te_placeholder(t.te, "x", RX_DT_F32, 2, DIMS(ev(&t, t.n), ev(&t, t.k)));
    two p = {x, NULL};
    rx_te_tensor *o = rx_te_argreduce(t.te, "T_argmax", 1, DIMS(ev(&t, t.n)), RX_TE_ARGMAX, 1,
                                      DIMS(ev(&t, t.k)), row_cb, &p);
    ck_assert_int_eq(rx_te_dtype(o), RX_DT_I64);
    rx_te_func tf;
    rx_te_build(t.te, "argmax", TS(x), 1, TS(o), 1, &tf);
    ck_assert_int_eq(tf.fn->tbody.n, 2); /* ALLOC of the running value, the nest */
    ck_assert_int_eq(tf.fn->tbody.items[0]->kind, RX_S_ALLOC);
    rx_stmt *b = tf.fn->tbody.items[1]->u.for_.body.items[0]->u.for_.body.items[0];
    ck_assert_int_eq(b->kind, RX_S_BLOCK);
    ck_assert_int_eq(b->u.block.init.n, 2);
    ck_assert_int_eq(b->u.block.body.n, 2);
    rx_te_add_func(t.m, tf.fn);
    roundtrip(t.m);
    t_fini(&t);
}
END_TEST

static rx_expr *all_cb(rx_te *te, rx_expr *const *idx, rx_expr *const *r, void *ud)
{
    two *p = ud;
    return rx_te_at(te, p->x, r);
}

/* 0-d results, integer extremes (INT64_MIN has no literal), narrow floats. */
START_TEST(zero_dim_and_literals)
{
    static const rx_dtype dts[] = {RX_DT_I64, RX_DT_I32, RX_DT_F16, RX_DT_F64, RX_DT_U8};
    static const rx_te_redop ops[] = {RX_TE_MAX, RX_TE_MIN, RX_TE_SUM, RX_TE_PROD};
    for (int d = 0; d < RX_COUNTOF(dts); d++) {
        for (int o = 0; o < RX_COUNTOF(ops); o++) {
            T t;
            t_init(&t);
            rx_te_tensor *x = rx_te_placeholder(t.te, "x", dts[d], 2, DIMS(ev(&t, t.n), ei(&t, 3)));
            two p = {x, NULL};
            rx_te_tensor *r = rx_te_reduce(t.te, "T_r", dts[d], 0, NULL, ops[o], 2,
                                           DIMS(ev(&t, t.n), ei(&t, 3)), NULL, all_cb, &p);
            rx_te_func tf;
            rx_te_build(t.te, "r", TS(x), 1, TS(r), 1, &tf);
            ck_assert_int_eq(tf.fn->tparams[1].buf->ndim, 0);
            rx_te_add_func(t.m, tf.fn);
            roundtrip(t.m);
            t_fini(&t);
        }
    }
}
END_TEST

START_TEST(const_and_cast_helpers)
{
    T t;
    t_init(&t);
    rx_expr *e = rx_te_const(t.te, 300, RX_DT_I8);
    ck_assert_int_eq(e->kind, RX_E_INT);
    ck_assert_int_eq(e->u.ival, 127); /* saturated */
    e = rx_te_const(t.te, 2.5, RX_DT_F16);
    ck_assert_int_eq(e->kind, RX_E_FLOAT);
    ck_assert_int_eq(e->dtype, RX_DT_F16);
    e = rx_te_cast(t.te, RX_DT_F32, ei(&t, 3));
    ck_assert_int_eq(e->kind, RX_E_FLOAT);
    ck_assert(e->u.fval == 3.0);
    e = rx_te_cast(t.te, RX_DT_F32, ev(&t, t.n));
    ck_assert_int_eq(e->kind, RX_E_CAST);
    e = rx_te_cast(t.te, RX_DT_BOOL, rx_e_float(t.m->arena, 0.5, RX_DT_F32));
    ck_assert_int_eq(e->kind, RX_E_INT);
    ck_assert_int_eq(e->dtype, RX_DT_BOOL);
    ck_assert_int_eq(e->u.ival, 1);
    e = rx_te_min_value(t.te, RX_DT_I64);
    ck_assert_int_eq(e->kind, RX_E_SUB); /* -9223372036854775807 - 1 */
    t_fini(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("te");
    TCase *tc = tcase_create("te");
    tcase_add_test(tc, add_symbolic_n);
    tcase_add_test(tc, scalar_param_for_non_whole_dim);
    tcase_add_test(tc, whole_dim_in_output_defines);
    tcase_add_test(tc, intermediate_is_allocated);
    tcase_add_test(tc, inline_compute);
    tcase_add_test(tc, argmax_two_stores);
    tcase_add_test(tc, zero_dim_and_literals);
    tcase_add_test(tc, const_and_cast_helpers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
