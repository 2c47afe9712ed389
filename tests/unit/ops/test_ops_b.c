/*
 * test_ops_b.c — deduction rules of the part-B operators: shape manipulation,
 * reductions, creation, and the data-dependent ops.
 *
 * Each test builds calls directly with the IR constructors, binds attributes through
 * rx_op_bind_attrs (so schemas and defaults are exercised too), runs the op's deduce
 * rule, and checks the result annotation: kind, dtype, ndim, and every dim proved
 * equal to the expected expression by the arithmetic. Error cases check that the
 * rule returns NULL and that the first diagnostic starts with the op name.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "../rx_check.h"

/* ---------------------------------------------------------------- fixture */

typedef struct fx {
    rx_module *m;
    rx_arena *a;
    rx_arith *ar;
    rx_diags d;
    rx_dctx c;
    rx_expr *n, *k, *mm; /* shape variables n, k, m as expressions */
} fx;

static rx_expr *svar(fx *f, const char *name)
{
    return rx_e_var(f->a, rx_svar_new(f->a, name, RX_DT_I64, RX_SV_SHAPE,
                                      rx_module_new_id(f->m)));
}

static void fx_init(fx *f)
{
    memset(f, 0, sizeof(*f));
    f->m = rx_module_new();
    f->a = f->m->arena;
    f->ar = rx_arith_new(f->a);
    rx_diags_init(&f->d);
    f->c.m = f->m;
    f->c.a = f->a;
    f->c.ar = f->ar;
    f->c.diags = &f->d;
    f->n = svar(f, "n");
    f->k = svar(f, "k");
    f->mm = svar(f, "m");
}

static void fx_free(fx *f)
{
    rx_diags_free(&f->d);
    rx_arith_free(f->ar);
    rx_module_free(f->m);
}

/* ---------------------------------------------------------------- builders */

static rx_expr *I(fx *f, int64_t v) { return rx_e_int(f->a, v); }
static rx_expr *MUL(fx *f, rx_expr *x, rx_expr *y) { return rx_e_binary(f->a, RX_E_MUL, x, y); }
static rx_expr *ADD(fx *f, rx_expr *x, rx_expr *y) { return rx_e_binary(f->a, RX_E_ADD, x, y); }

static rx_expr **dims_va(fx *f, int ndim, va_list ap)
{
    rx_expr **d = RX_NEWN(f->a, rx_expr *, ndim > 0 ? ndim : 1);
    for (int i = 0; i < ndim; i++) d[i] = va_arg(ap, rx_expr *);
    return d;
}

/* Tensor((dims...), dt) with ndim dims given as rx_expr * arguments. */
static rx_sinfo *T(fx *f, rx_dtype dt, int ndim, ...)
{
    va_list ap;
    va_start(ap, ndim);
    rx_expr **d = dims_va(f, ndim, ap);
    va_end(ap);
    return rx_si_tensor(f->a, dt, ndim, d);
}

/* Tensor(ndim=ndim, dt) without dims (ndim -1: unknown rank). */
static rx_sinfo *TN(fx *f, rx_dtype dt, int ndim) { return rx_si_tensor(f->a, dt, ndim, NULL); }

static rx_node *V(fx *f, rx_sinfo *si) { return rx_n_var(f->m, "x", si, true); }

/* A shape value node with its annotation set, as deduction leaves it. */
static rx_node *SH(fx *f, int ndim, ...)
{
    va_list ap;
    va_start(ap, ndim);
    rx_expr **d = dims_va(f, ndim, ap);
    va_end(ap);
    rx_node *s = rx_n_shape(f->m, d, ndim);
    s->sinfo = rx_si_shape(f->a, ndim, d);
    return s;
}

static rx_attr *attr(fx *f, rx_akind k)
{
    rx_attr *a = RX_NEW(f->a, rx_attr);
    a->kind = (uint8_t)k;
    return a;
}

static rx_attr *A_int(fx *f, int64_t v)
{
    rx_attr *a = attr(f, RX_A_INT);
    a->u.i = v;
    return a;
}

static rx_attr *A_bool(fx *f, bool v)
{
    rx_attr *a = attr(f, RX_A_BOOL);
    a->u.b = v;
    return a;
}

static rx_attr *A_str(fx *f, const char *s)
{
    rx_attr *a = attr(f, RX_A_STR);
    a->u.s = s;
    return a;
}

static rx_attr *A_expr(fx *f, rx_expr *e)
{
    rx_attr *a = attr(f, RX_A_EXPR);
    a->u.e = e;
    return a;
}

static rx_attr *A_null(fx *f) { return attr(f, RX_A_NULL); }

/* A list of n integers (int arguments). */
static rx_attr *A_ints(fx *f, int n, ...)
{
    rx_attr *a = attr(f, RX_A_ARRAY);
    a->u.arr.n = n;
    a->u.arr.items = RX_NEWN(f->a, rx_attr *, n > 0 ? n : 1);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) a->u.arr.items[i] = A_int(f, va_arg(ap, int));
    va_end(ap);
    return a;
}

/* A list of n attribute values (rx_attr * arguments). */
static rx_attr *A_list(fx *f, int n, ...)
{
    rx_attr *a = attr(f, RX_A_ARRAY);
    a->u.arr.n = n;
    a->u.arr.items = RX_NEWN(f->a, rx_attr *, n > 0 ? n : 1);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) a->u.arr.items[i] = va_arg(ap, rx_attr *);
    va_end(ap);
    return a;
}

/* An attribute map of n (const char *key, rx_attr *value) pairs. */
static rx_attr *MAP(fx *f, int n, ...)
{
    rx_attr *a = attr(f, RX_A_MAP);
    a->u.map.n = n;
    a->u.map.keys = RX_NEWN(f->a, const char *, n > 0 ? n : 1);
    a->u.map.vals = RX_NEWN(f->a, rx_attr *, n > 0 ? n : 1);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        a->u.map.keys[i] = va_arg(ap, const char *);
        a->u.map.vals[i] = va_arg(ap, rx_attr *);
    }
    va_end(ap);
    return a;
}

/* Binds attrs, builds the call of `op` on the nargs rx_node * arguments, and runs the
 * op's rule. The binding must succeed. */
static rx_sinfo *run(fx *f, const char *op, rx_attr *attrs, int nargs, ...)
{
    const rx_op *o = rx_op_find(op);
    ck_assert_msg(o != NULL, "op %s is not registered", op);
    rx_attr **bound = rx_op_bind_attrs(f->m, o, attrs, 0, NULL, NULL, &f->d);
    ck_assert_msg(bound != NULL, "binding the attributes of %s failed: %s", op,
                  rx_diags_count(&f->d) ? f->d.list.items[0].msg : "?");
    rx_node **args = RX_NEWN(f->a, rx_node *, nargs > 0 ? nargs : 1);
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) args[i] = va_arg(ap, rx_node *);
    va_end(ap);
    ck_assert_int_ge(nargs, o->min_args);
    ck_assert_int_le(nargs, o->max_args);
    rx_node *call = rx_n_call_op(f->m, o, args, nargs, bound);
    return o->deduce(&f->c, call);
}

/* ---------------------------------------------------------------- checks */

static void check_dims(fx *f, rx_expr **got, int ndim, va_list ap)
{
    ck_assert_msg(got != NULL, "dims unknown, expected %d dims", ndim);
    for (int i = 0; i < ndim; i++) {
        rx_expr *want = va_arg(ap, rx_expr *);
        ck_assert_msg(rx_arith_prove_equal(f->ar, got[i], want), "dim %d: got %s, expected %s",
                      i, rx_expr_str(f->a, got[i]), rx_expr_str(f->a, want));
    }
}

/* s is Tensor((dims...), dt) with ndim dims given as rx_expr * arguments. */
static void expect_tensor(fx *f, const rx_sinfo *s, rx_dtype dt, int ndim, ...)
{
    ck_assert_msg(s != NULL, "deduction failed: %s",
                  rx_diags_count(&f->d) ? f->d.list.items[0].msg : "no message");
    ck_assert_int_eq(s->kind, RX_SI_TENSOR);
    ck_assert_str_eq(rx_dtype_name((rx_dtype)s->dtype), rx_dtype_name(dt));
    ck_assert_int_eq(s->ndim, ndim);
    va_list ap;
    va_start(ap, ndim);
    check_dims(f, s->dims, ndim, ap);
    va_end(ap);
}

/* s is Tensor(ndim=ndim, dt) with unknown dims. */
static void expect_coarse(fx *f, const rx_sinfo *s, rx_dtype dt, int ndim)
{
    ck_assert_msg(s != NULL, "deduction failed: %s",
                  rx_diags_count(&f->d) ? f->d.list.items[0].msg : "no message");
    ck_assert_int_eq(s->kind, RX_SI_TENSOR);
    ck_assert_str_eq(rx_dtype_name((rx_dtype)s->dtype), rx_dtype_name(dt));
    ck_assert_int_eq(s->ndim, ndim);
    ck_assert_ptr_null(s->dims);
}

/* The rule failed with a first message starting with `prefix` and containing `part`
 * (when not NULL). */
static void expect_error(fx *f, const rx_sinfo *s, const char *prefix, const char *part)
{
    ck_assert_msg(s == NULL, "expected an error, deduced a result");
    ck_assert_int_ge(rx_diags_count(&f->d), 1);
    const char *msg = f->d.list.items[0].msg;
    ck_assert_msg(strncmp(msg, prefix, strlen(prefix)) == 0, "message \"%s\" lacks prefix %s",
                  msg, prefix);
    if (part) ck_assert_msg(strstr(msg, part) != NULL, "message \"%s\" lacks \"%s\"", msg, part);
}

#define F32 RX_DT_F32
#define I64 RX_DT_I64

/* ---------------------------------------------------------------- manipulation */

START_TEST(flatten_symbolic)
{
    fx f;
    fx_init(&f);
    rx_sinfo *s = run(&f, "flatten", NULL, 1, V(&f, T(&f, F32, 2, f.n, I(&f, 4))));
    expect_tensor(&f, s, F32, 1, MUL(&f, f.n, I(&f, 4))); /* paper Figure 3 */
    expect_coarse(&f, run(&f, "flatten", NULL, 1, V(&f, TN(&f, F32, -1))), F32, 1);
    expect_tensor(&f, run(&f, "flatten", NULL, 1, V(&f, T(&f, F32, 0))), F32, 1, I(&f, 1));
    fx_free(&f);
}
END_TEST

START_TEST(reshape_ok)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 3, f.n, I(&f, 2), I(&f, 2)));
    rx_sinfo *s = run(&f, "reshape", NULL, 2, x, SH(&f, 2, f.n, I(&f, 4)));
    expect_tensor(&f, s, F32, 2, f.n, I(&f, 4));
    /* A shape operand of unknown dims keeps only the rank. */
    rx_node *sv = V(&f, rx_si_shape(f.a, 3, NULL));
    expect_coarse(&f, run(&f, "reshape", NULL, 2, x, sv), F32, 3);
    /* Unprovable counts (n*4 vs m*2) are left to a run-time check. */
    s = run(&f, "reshape", NULL, 2, x, SH(&f, 2, f.mm, I(&f, 2)));
    expect_tensor(&f, s, F32, 2, f.mm, I(&f, 2));
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    fx_free(&f);
}
END_TEST

START_TEST(reshape_mismatch)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, I(&f, 2), I(&f, 6)));
    expect_error(&f, run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, 3), I(&f, 5))),
                 "reshape: cannot reshape", "15 elements");
    fx_free(&f);

    fx_init(&f); /* (n, 4) can never hold 15 elements */
    x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_error(&f, run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, 3), I(&f, 5))),
                 "reshape: cannot reshape", "(3, 5)");
    fx_free(&f);

    fx_init(&f);
    x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    rx_node *t = V(&f, T(&f, F32, 1, I(&f, 4)));
    expect_error(&f, run(&f, "reshape", NULL, 2, x, t), "reshape:", "must be a shape");
    fx_free(&f);
}
END_TEST

START_TEST(reshape_infer)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 3, I(&f, 2), I(&f, 3), I(&f, 4)));
    rx_sinfo *s = run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, -1), I(&f, 4)));
    expect_tensor(&f, s, F32, 2, I(&f, 6), I(&f, 4));
    s = run(&f, "reshape", NULL, 2, x, SH(&f, 1, I(&f, -1)));
    expect_tensor(&f, s, F32, 1, I(&f, 24));
    expect_error(&f, run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, -1), I(&f, 5))),
                 "reshape: cannot reshape", NULL);
    fx_free(&f);

    fx_init(&f);
    x = V(&f, T(&f, F32, 2, I(&f, 2), I(&f, 3)));
    expect_error(&f, run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, -1), I(&f, -1))),
                 "reshape:", "more than one -1");
    fx_free(&f);

    fx_init(&f); /* symbolic: (n, 4) -> (-1, 2) infers n * 2 */
    x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    s = run(&f, "reshape", NULL, 2, x, SH(&f, 2, I(&f, -1), I(&f, 2)));
    expect_tensor(&f, s, F32, 2, MUL(&f, f.n, I(&f, 2)), I(&f, 2));
    /* (n, 48, 4, 4) -> (n, 48, -1): the -1 is n * 768 / (n * 48) == 16, n cancelled
     * (ViT's flatten(2) as PyTorch exports it) */
    x = V(&f, T(&f, F32, 4, f.n, I(&f, 48), I(&f, 4), I(&f, 4)));
    s = run(&f, "reshape", NULL, 2, x, SH(&f, 3, f.n, I(&f, 48), I(&f, -1)));
    expect_tensor(&f, s, F32, 3, f.n, I(&f, 48), I(&f, 16));
    fx_free(&f);
}
END_TEST

START_TEST(permute_dims)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 3, f.n, I(&f, 3), I(&f, 4)));
    expect_tensor(&f, run(&f, "permute_dims", NULL, 1, x), F32, 3, I(&f, 4), I(&f, 3), f.n);
    rx_sinfo *s = run(&f, "permute_dims", MAP(&f, 1, "axes", A_ints(&f, 3, 0, -1, 1)), 1, x);
    expect_tensor(&f, s, F32, 3, f.n, I(&f, 4), I(&f, 3));
    expect_coarse(&f, run(&f, "permute_dims", MAP(&f, 1, "axes", A_ints(&f, 2, 1, 0)), 1,
                          V(&f, TN(&f, F32, -1))),
                  F32, 2);
    expect_error(&f, run(&f, "permute_dims", MAP(&f, 1, "axes", A_ints(&f, 3, 0, 0, 1)), 1, x),
                 "permute_dims:", "repeated");
    fx_free(&f);

    fx_init(&f);
    x = V(&f, T(&f, F32, 3, f.n, I(&f, 3), I(&f, 4)));
    expect_error(&f, run(&f, "permute_dims", MAP(&f, 1, "axes", A_ints(&f, 2, 0, 1)), 1, x),
                 "permute_dims:", NULL);
    fx_free(&f);
}
END_TEST

START_TEST(squeeze)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 3, I(&f, 1), I(&f, 3), I(&f, 1)));
    expect_tensor(&f, run(&f, "squeeze", NULL, 1, x), F32, 1, I(&f, 3));
    expect_tensor(&f, run(&f, "squeeze", MAP(&f, 1, "axis", A_int(&f, 0)), 1, x), F32, 2,
                  I(&f, 3), I(&f, 1));
    expect_tensor(&f, run(&f, "squeeze", MAP(&f, 1, "axis", A_ints(&f, 2, 0, -1)), 1, x), F32,
                  1, I(&f, 3));
    /* A dim that may or may not be 1 makes the rank unknown. */
    rx_node *y = V(&f, T(&f, F32, 2, I(&f, 1), f.n));
    expect_coarse(&f, run(&f, "squeeze", NULL, 1, y), F32, -1);
    expect_error(&f, run(&f, "squeeze", MAP(&f, 1, "axis", A_int(&f, 1)), 1, x), "squeeze:",
                 "not 1");
    fx_free(&f);
}
END_TEST

START_TEST(expand_dims)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_tensor(&f, run(&f, "expand_dims", MAP(&f, 1, "axis", A_int(&f, 1)), 1, x), F32, 3,
                  f.n, I(&f, 1), I(&f, 4));
    expect_tensor(&f, run(&f, "expand_dims", MAP(&f, 1, "axis", A_ints(&f, 2, 0, -1)), 1, x),
                  F32, 4, I(&f, 1), f.n, I(&f, 4), I(&f, 1));
    expect_error(&f, run(&f, "expand_dims", MAP(&f, 1, "axis", A_int(&f, 3)), 1, x),
                 "expand_dims:", "out of range");
    fx_free(&f);
}
END_TEST

static rx_node *tuple_of(fx *f, rx_sinfo *a, rx_sinfo *b)
{
    rx_sinfo *fl[2] = {a, b};
    return V(f, rx_si_tuple(f->a, fl, 2));
}

START_TEST(concat)
{
    fx f;
    fx_init(&f);
    rx_node *t = tuple_of(&f, T(&f, F32, 2, f.n, I(&f, 4)), T(&f, F32, 2, f.mm, I(&f, 4)));
    expect_tensor(&f, run(&f, "concat", NULL, 1, t), F32, 2, ADD(&f, f.n, f.mm), I(&f, 4));
    rx_node *u = tuple_of(&f, T(&f, F32, 2, f.n, I(&f, 4)), T(&f, F32, 2, f.n, I(&f, 5)));
    expect_tensor(&f, run(&f, "concat", MAP(&f, 1, "axis", A_int(&f, -1)), 1, u), F32, 2, f.n,
                  I(&f, 9));
    expect_tensor(&f, run(&f, "concat", MAP(&f, 1, "axis", A_null(&f)), 1, u), F32, 1,
                  MUL(&f, f.n, I(&f, 9)));
    expect_error(&f, run(&f, "concat", NULL, 1, u), "concat:", "differs");
    fx_free(&f);

    fx_init(&f);
    rx_node *w = tuple_of(&f, T(&f, F32, 1, f.n), T(&f, RX_DT_F16, 1, f.n));
    expect_error(&f, run(&f, "concat", NULL, 1, w), "concat:", "dtype");
    fx_free(&f);
}
END_TEST

START_TEST(split)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, MUL(&f, f.n, I(&f, 2)), I(&f, 3)));
    rx_sinfo *s = run(&f, "split", MAP(&f, 1, "indices_or_sections", A_int(&f, 2)), 1, x);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->kind, RX_SI_TUPLE);
    ck_assert_int_eq(s->nfields, 2);
    expect_tensor(&f, s->fields[0], F32, 2, f.n, I(&f, 3));
    expect_tensor(&f, s->fields[1], F32, 2, f.n, I(&f, 3));

    rx_node *y = V(&f, T(&f, F32, 1, I(&f, 8)));
    s = run(&f, "split", MAP(&f, 1, "indices_or_sections", A_ints(&f, 2, 3, 10)), 1, y);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->nfields, 3);
    expect_tensor(&f, s->fields[0], F32, 1, I(&f, 3));
    expect_tensor(&f, s->fields[1], F32, 1, I(&f, 5));
    expect_tensor(&f, s->fields[2], F32, 1, I(&f, 0));

    s = run(&f, "split",
            MAP(&f, 2, "indices_or_sections", A_int(&f, 3), "axis", A_int(&f, 1)), 1, x);
    ck_assert_int_eq(s->nfields, 3);
    expect_tensor(&f, s->fields[2], F32, 2, MUL(&f, f.n, I(&f, 2)), I(&f, 1));
    expect_error(&f, run(&f, "split", MAP(&f, 1, "indices_or_sections", A_int(&f, 3)), 1, y),
                 "split:", "sections");
    fx_free(&f);
}
END_TEST

static rx_sinfo *slice(fx *f, rx_node *x, int64_t b, int64_t e, int64_t s)
{
    return run(f, "strided_slice",
               MAP(f, 4, "axes", A_ints(f, 1, 0), "begin", A_ints(f, 1, (int)b), "end",
                   A_ints(f, 1, (int)e), "strides", A_ints(f, 1, (int)s)),
               1, x);
}

START_TEST(strided_slice_literal)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, I(&f, 10), f.n));
    expect_tensor(&f, slice(&f, x, 2, 100, 1), F32, 2, I(&f, 8), f.n);
    expect_tensor(&f, slice(&f, x, -3, 10, 1), F32, 2, I(&f, 3), f.n);
    expect_tensor(&f, slice(&f, x, 0, 10, 2), F32, 2, I(&f, 5), f.n);
    expect_tensor(&f, slice(&f, x, -1, -11, -1), F32, 2, I(&f, 10), f.n);
    expect_tensor(&f, slice(&f, x, 8, 2, -2), F32, 2, I(&f, 3), f.n);
    expect_tensor(&f, slice(&f, x, 1, 10, 4), F32, 2, I(&f, 3), f.n);
    expect_tensor(&f, slice(&f, x, 9, 0, -4), F32, 2, I(&f, 3), f.n);
    expect_tensor(&f, slice(&f, x, 5, 1, 1), F32, 2, I(&f, 0), f.n);
    expect_tensor(&f, slice(&f, x, 1, -100, 1), F32, 2, I(&f, 0), f.n);
    expect_error(&f, slice(&f, x, 0, 10, 0), "strided_slice:", "stride");
    fx_free(&f);
}
END_TEST

START_TEST(strided_slice_symbolic)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, I(&f, 10), f.n));
    /* x[:, 0:n] is all of axis 1 */
    rx_sinfo *s = run(&f, "strided_slice",
                      MAP(&f, 3, "axes", A_ints(&f, 1, 1), "begin", A_ints(&f, 1, 0), "end",
                          A_list(&f, 1, A_expr(&f, f.n))),
                      1, x);
    expect_tensor(&f, s, F32, 2, I(&f, 10), f.n);
    /* x[:, 0:k] has min(k, n) columns */
    s = run(&f, "strided_slice",
            MAP(&f, 3, "axes", A_ints(&f, 1, -1), "begin", A_ints(&f, 1, 0), "end",
                A_list(&f, 1, A_expr(&f, f.k))),
            1, x);
    expect_tensor(&f, s, F32, 2, I(&f, 10), rx_e_binary(f.a, RX_E_MIN, f.k, f.n));
    /* x[:, 0:n:2] has (n + 1) // 2 columns */
    s = run(&f, "strided_slice",
            MAP(&f, 4, "axes", A_ints(&f, 1, 1), "begin", A_ints(&f, 1, 0), "end",
                A_list(&f, 1, A_expr(&f, f.n)), "strides", A_ints(&f, 1, 2)),
            1, x);
    expect_tensor(&f, s, F32, 2, I(&f, 10),
                  rx_e_binary(f.a, RX_E_FLOORDIV, ADD(&f, f.n, I(&f, 1)), I(&f, 2)));
    expect_error(&f,
                 run(&f, "strided_slice",
                     MAP(&f, 3, "axes", A_ints(&f, 2, 0, 1), "begin", A_ints(&f, 1, 0), "end",
                         A_ints(&f, 1, 1)),
                     1, x),
                 "strided_slice:", NULL);
    fx_free(&f);
}
END_TEST

START_TEST(take_broadcast)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    rx_node *ind = V(&f, T(&f, I64, 1, f.k));
    expect_tensor(&f, run(&f, "take", MAP(&f, 1, "axis", A_int(&f, 1)), 2, x, ind), F32, 2, f.n,
                  f.k);
    expect_tensor(&f, run(&f, "take", NULL, 2, x, ind), F32, 1, f.k);
    rx_node *one = V(&f, T(&f, F32, 2, I(&f, 1), I(&f, 4)));
    expect_tensor(&f, run(&f, "broadcast_to", NULL, 2, one, SH(&f, 3, I(&f, 2), f.n, I(&f, 4))),
                  F32, 3, I(&f, 2), f.n, I(&f, 4));
    rx_node *bad = V(&f, T(&f, F32, 2, I(&f, 3), I(&f, 4)));
    expect_error(&f, run(&f, "broadcast_to", NULL, 2, bad, SH(&f, 2, f.n, I(&f, 5))),
                 "broadcast_to:", NULL);
    fx_free(&f);

    fx_init(&f);
    rx_node *fl = V(&f, T(&f, F32, 1, f.k));
    x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_error(&f, run(&f, "take", NULL, 2, x, fl), "take:", "integers");
    fx_free(&f);
}
END_TEST

START_TEST(repeat_tile_tri)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_tensor(&f, run(&f, "repeat", MAP(&f, 2, "repeats", A_int(&f, 2), "axis", A_int(&f, 1)),
                          1, x),
                  F32, 2, f.n, I(&f, 8));
    expect_tensor(&f, run(&f, "repeat", MAP(&f, 1, "repeats", A_int(&f, 2)), 1, x), F32, 1,
                  MUL(&f, f.n, I(&f, 8)));
    expect_tensor(&f, run(&f, "tile", MAP(&f, 1, "repeats", A_ints(&f, 1, 2)), 1, x), F32, 2,
                  f.n, I(&f, 8));
    expect_tensor(&f, run(&f, "tile", MAP(&f, 1, "repeats", A_ints(&f, 3, 2, 1, 3)), 1, x), F32,
                  3, I(&f, 2), f.n, I(&f, 12));
    expect_tensor(&f, run(&f, "triu", MAP(&f, 1, "k", A_int(&f, 1)), 1, x), F32, 2, f.n,
                  I(&f, 4));
    expect_error(&f, run(&f, "tril", NULL, 1, V(&f, T(&f, F32, 1, f.n))), "tril:", NULL);
    fx_free(&f);
}
END_TEST

/* ---------------------------------------------------------------- reductions */

START_TEST(reductions)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 3, f.n, I(&f, 4), I(&f, 5)));
    rx_sinfo *s = run(&f, "sum", MAP(&f, 2, "axis", A_ints(&f, 1, 1), "keepdims", A_bool(&f, 1)),
                      1, x);
    expect_tensor(&f, s, F32, 3, f.n, I(&f, 1), I(&f, 5));
    expect_tensor(&f, run(&f, "sum", NULL, 1, x), F32, 0);
    expect_tensor(&f, run(&f, "mean", MAP(&f, 1, "axis", A_int(&f, -1)), 1, x), F32, 2, f.n,
                  I(&f, 4));
    expect_tensor(&f, run(&f, "max", MAP(&f, 1, "keepdims", A_bool(&f, 1)), 1, x), F32, 3,
                  I(&f, 1), I(&f, 1), I(&f, 1));
    expect_tensor(&f, run(&f, "variance", NULL, 1, V(&f, TN(&f, F32, -1))), F32, 0);
    expect_coarse(&f, run(&f, "prod", MAP(&f, 1, "axis", A_int(&f, 0)), 1, V(&f, TN(&f, F32, 3))),
                  F32, 2);
    expect_error(&f, run(&f, "min", MAP(&f, 1, "axis", A_ints(&f, 2, 0, -3)), 1, x), "min:",
                 "repeated");
    fx_free(&f);

    fx_init(&f);
    x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_error(&f, run(&f, "sum", MAP(&f, 1, "axis", A_int(&f, 2)), 1, x), "sum:",
                 "out of range");
    fx_free(&f);
}
END_TEST

START_TEST(argmax)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_tensor(&f, run(&f, "argmax", NULL, 1, x), I64, 0);
    expect_tensor(&f,
                  run(&f, "argmin", MAP(&f, 2, "axis", A_int(&f, 1), "keepdims", A_bool(&f, 1)),
                      1, x),
                  I64, 2, f.n, I(&f, 1));
    expect_tensor(&f, run(&f, "argmax", MAP(&f, 1, "axis", A_int(&f, 0)), 1, x), I64, 1,
                  I(&f, 4));
    fx_free(&f);
}
END_TEST

/* ---------------------------------------------------------------- creation */

static rx_sinfo *arange3(fx *f, rx_attr *start, rx_attr *end, rx_attr *step)
{
    return run(f, "arange", MAP(f, 3, "start", start, "end", end, "step", step), 0);
}

START_TEST(arange)
{
    fx f;
    fx_init(&f);
    expect_tensor(&f, arange3(&f, A_int(&f, 0), A_int(&f, 10), A_int(&f, 3)), I64, 1, I(&f, 4));
    expect_tensor(&f, arange3(&f, A_int(&f, 10), A_int(&f, 0), A_int(&f, -3)), I64, 1, I(&f, 4));
    expect_tensor(&f, arange3(&f, A_int(&f, 5), A_int(&f, 0), A_int(&f, 1)), I64, 1, I(&f, 0));
    expect_tensor(&f, run(&f, "arange", MAP(&f, 1, "end", A_expr(&f, f.n)), 0), I64, 1, f.n);
    rx_sinfo *s = run(&f, "arange", MAP(&f, 3, "end", A_int(&f, 4), "step", A_int(&f, 2),
                                        "dtype", A_str(&f, "f32")), 0);
    expect_tensor(&f, s, F32, 1, I(&f, 2));
    expect_error(&f, arange3(&f, A_int(&f, 0), A_int(&f, 10), A_int(&f, 0)), "arange:", "step");
    fx_free(&f);
}
END_TEST

START_TEST(create)
{
    fx f;
    fx_init(&f);
    rx_node *shape = SH(&f, 2, f.n, I(&f, 4));
    expect_tensor(&f, run(&f, "zeros", MAP(&f, 1, "dtype", A_str(&f, "f32")), 1, shape), F32, 2,
                  f.n, I(&f, 4));
    expect_tensor(&f, run(&f, "ones", MAP(&f, 1, "dtype", A_str(&f, "i64")), 1, shape), I64, 2,
                  f.n, I(&f, 4));
    rx_node *fill = V(&f, T(&f, RX_DT_F16, 0));
    expect_tensor(&f, run(&f, "full", NULL, 2, shape, fill), RX_DT_F16, 2, f.n, I(&f, 4));
    expect_tensor(&f, run(&f, "full", MAP(&f, 1, "dtype", A_str(&f, "f32")), 2, shape, fill), F32,
                  2, f.n, I(&f, 4));
    rx_node *x = V(&f, T(&f, F32, 1, f.k));
    expect_tensor(&f, run(&f, "ones_like", NULL, 1, x), F32, 1, f.k);
    expect_tensor(&f, run(&f, "zeros_like", MAP(&f, 1, "dtype", A_str(&f, "i32")), 1, x),
                  RX_DT_I32, 1, f.k);
    expect_tensor(&f, run(&f, "full_like", NULL, 2, x, fill), F32, 1, f.k);
    expect_error(&f, run(&f, "full", NULL, 2, shape, x), "full:", "0-d");
    fx_free(&f);

    fx_init(&f); /* zeros requires dtype */
    const rx_op *z = rx_op_find("zeros");
    ck_assert_ptr_nonnull(z);
    ck_assert_ptr_null(rx_op_bind_attrs(f.m, z, NULL, 0, NULL, NULL, &f.d));
    ck_assert_int_ge(rx_diags_count(&f.d), 1);
    fx_free(&f);
}
END_TEST

/* ---------------------------------------------------------------- misc */

START_TEST(data_dependent)
{
    fx f;
    fx_init(&f);
    rx_node *x = V(&f, T(&f, F32, 2, f.n, I(&f, 4)));
    expect_coarse(&f, run(&f, "unique", NULL, 1, x), F32, 1);
    ck_assert_int_eq(rx_op_find("unique")->data_dependent, 1);
    ck_assert_int_eq(rx_op_find("nonzero")->data_dependent, 1);
    rx_sinfo *s = run(&f, "unique", MAP(&f, 2, "return_index", A_bool(&f, 1), "return_counts",
                                        A_bool(&f, 1)), 1, x);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->kind, RX_SI_TUPLE);
    ck_assert_int_eq(s->nfields, 3);
    expect_coarse(&f, s->fields[0], F32, 1);
    expect_coarse(&f, s->fields[2], I64, 1);
    expect_coarse(&f, run(&f, "unique", MAP(&f, 1, "axis", A_int(&f, 1)), 1, x), F32, 2);
    expect_coarse(&f, run(&f, "nonzero", NULL, 1, x), I64, 2);
    fx_free(&f);
}
END_TEST

START_TEST(shape_of)
{
    fx f;
    fx_init(&f);
    rx_sinfo *s = run(&f, "shape_of", NULL, 1, V(&f, T(&f, F32, 2, f.n, I(&f, 4))));
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->kind, RX_SI_SHAPE);
    ck_assert_int_eq(s->ndim, 2);
    ck_assert_ptr_nonnull(s->dims);
    ck_assert(rx_arith_prove_equal(f.ar, s->dims[0], f.n));
    ck_assert(rx_arith_prove_equal(f.ar, s->dims[1], I(&f, 4)));
    s = run(&f, "shape_of", NULL, 1, V(&f, TN(&f, F32, 3)));
    ck_assert_int_eq(s->kind, RX_SI_SHAPE);
    ck_assert_int_eq(s->ndim, 3);
    ck_assert_ptr_null(s->dims);
    expect_error(&f, run(&f, "shape_of", NULL, 1, SH(&f, 1, f.n)), "shape_of:", "tensor");
    fx_free(&f);
}
END_TEST

static Suite *ops_b_suite(void)
{
    Suite *s = suite_create("ops_b");
    TCase *m = tcase_create("manip");
    tcase_add_test(m, flatten_symbolic);
    tcase_add_test(m, reshape_ok);
    tcase_add_test(m, reshape_mismatch);
    tcase_add_test(m, reshape_infer);
    tcase_add_test(m, permute_dims);
    tcase_add_test(m, squeeze);
    tcase_add_test(m, expand_dims);
    tcase_add_test(m, concat);
    tcase_add_test(m, split);
    tcase_add_test(m, strided_slice_literal);
    tcase_add_test(m, strided_slice_symbolic);
    tcase_add_test(m, take_broadcast);
    tcase_add_test(m, repeat_tile_tri);
    suite_add_tcase(s, m);
    TCase *r = tcase_create("reduce");
    tcase_add_test(r, reductions);
    tcase_add_test(r, argmax);
    suite_add_tcase(s, r);
    TCase *c = tcase_create("create");
    tcase_add_test(c, arange);
    tcase_add_test(c, create);
    suite_add_tcase(s, c);
    TCase *x = tcase_create("misc");
    tcase_add_test(x, data_dependent);
    tcase_add_test(x, shape_of);
    suite_add_tcase(s, x);
    return s;
}

int main(void)
{
    return rx_check_run(ops_b_suite());
}
