/*
 * test_ops_a.c — the op registry, attribute binding and the deduction rules of the
 * elementwise, linalg and nn op groups.
 *
 * Each test builds a module, variables annotated with tensors written as "n, 1, 4"
 * (integers are literals, names are shape variables of the fixture), an op call with
 * attributes bound through rx_op_bind_attrs as the reader would, and runs the op's
 * rule. Results are compared as text: "(n, 3, 4) f32", "ndim=2 f32", "ndim=? f32".
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "../rx_check.h"

typedef struct fx {
    rx_module *m;      /* owns everything */
    rx_arith *ar;      /* arithmetic for the rules */
    rx_diags d;        /* errors of binding and deduction */
    rx_dctx c;         /* the context given to rules */
    rx_svar *vars[8];  /* shape variables by name */
    int nvars;
} fx;

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    f->m = rx_module_new();
    f->ar = rx_arith_new(f->m->arena);
    rx_diags_init(&f->d);
    f->c.m = f->m;
    f->c.a = f->m->arena;
    f->c.ar = f->ar;
    f->c.diags = &f->d;
}

static void fx_fini(fx *f)
{
    rx_arith_free(f->ar);
    rx_diags_free(&f->d);
    rx_module_free(f->m);
}

static rx_svar *svar(fx *f, const char *name, size_t n)
{
    for (int i = 0; i < f->nvars; i++)
        if (strlen(f->vars[i]->name) == n && strncmp(f->vars[i]->name, name, n) == 0)
            return f->vars[i];
    ck_assert_int_lt(f->nvars, 8);
    char *nm = rx_arena_strndup(f->m->arena, name, n);
    f->vars[f->nvars] = rx_svar_new(f->m->arena, nm, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(f->m));
    return f->vars[f->nvars++];
}

/* A dim expression: an integer, a name, or "name*k" / "name+k". */
static rx_expr *dim(fx *f, const char *s, size_t n)
{
    while (n && *s == ' ') s++, n--;
    while (n && s[n - 1] == ' ') n--;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' || s[i] == '+')
            return rx_e_binary(f->m->arena, s[i] == '*' ? RX_E_MUL : RX_E_ADD, dim(f, s, i),
                               dim(f, s + i + 1, n - i - 1));
    if ((*s >= '0' && *s <= '9') || *s == '-') return rx_e_int(f->m->arena, strtoll(s, NULL, 10));
    return rx_e_var(f->m->arena, svar(f, s, n));
}

/* A tensor annotation: "n, 4" (dims), "ndim=2" (unknown dims), "?" (unknown ndim). */
static rx_sinfo *T(fx *f, const char *shape, rx_dtype dt)
{
    if (strcmp(shape, "?") == 0) return rx_si_tensor(f->m->arena, dt, -1, NULL);
    if (strncmp(shape, "ndim=", 5) == 0) return rx_si_tensor(f->m->arena, dt, atoi(shape + 5), NULL);
    rx_expr *dims[8];
    int n = 0;
    const char *p = shape;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        ck_assert_int_lt(n, 8);
        dims[n++] = dim(f, p, len);
        p += len + (e ? 1 : 0);
    }
    return rx_si_tensor(f->m->arena, dt, n, dims);
}

/* ---- attribute values as the reader builds them ---- */
static rx_attr *A(fx *f, rx_akind k)
{
    rx_attr *a = RX_NEW(f->m->arena, rx_attr);
    a->kind = (uint8_t)k;
    return a;
}
static rx_attr *a_int(fx *f, int64_t v) { rx_attr *a = A(f, RX_A_INT); a->u.i = v; return a; }
static rx_attr *a_flt(fx *f, double v) { rx_attr *a = A(f, RX_A_FLOAT); a->u.f = v; return a; }
static rx_attr *a_bool(fx *f, bool v) { rx_attr *a = A(f, RX_A_BOOL); a->u.b = v; return a; }
static rx_attr *a_str(fx *f, const char *s) { rx_attr *a = A(f, RX_A_STR); a->u.s = s; return a; }
static rx_attr *a_ints(fx *f, int n, ...)
{
    rx_attr *a = A(f, RX_A_ARRAY);
    a->u.arr.n = n;
    a->u.arr.items = RX_NEWN(f->m->arena, rx_attr *, n ? n : 1);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) a->u.arr.items[i] = a_int(f, va_arg(ap, int));
    va_end(ap);
    return a;
}
/* A map from (key, value) pairs, n pairs. */
static rx_attr *a_map(fx *f, int n, ...)
{
    rx_attr *a = A(f, RX_A_MAP);
    a->u.map.n = n;
    a->u.map.keys = RX_NEWN(f->m->arena, const char *, n ? n : 1);
    a->u.map.vals = RX_NEWN(f->m->arena, rx_attr *, n ? n : 1);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        a->u.map.keys[i] = va_arg(ap, const char *);
        a->u.map.vals[i] = va_arg(ap, rx_attr *);
    }
    va_end(ap);
    return a;
}

/* Symbolic sizes: a name of the fixture, or an error. */
static rx_expr *symparse(void *ud, const char *text, rx_loc loc)
{
    fx *f = ud;
    for (const char *p = text; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || *p == '_')) {
            rx_diag_add(&f->d, "", "bad size \"%s\"", text);
            return NULL;
        }
    return rx_e_var(f->m->arena, svar(f, text, strlen(text)));
}

/* Binds attrs and runs the rule of op on args; NULL after any error. */
static rx_sinfo *run(fx *f, const char *opname, rx_attr *attrs, int nargs, ...)
{
    const rx_op *op = rx_op_find(opname);
    ck_assert_msg(op != NULL, "op %s not found", opname);
    rx_node *args[8];
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++)
        args[i] = rx_n_var(f->m, "x", va_arg(ap, rx_sinfo *), false);
    va_end(ap);
    rx_attr **bound = rx_op_bind_attrs(f->m, op, attrs, 0, symparse, f, &f->d);
    if (!bound) return NULL;
    rx_node *call = rx_n_call_op(f->m, op, args, nargs, bound);
    rx_sinfo *r = op->deduce(&f->c, call);
    ck_assert(r != NULL || rx_diags_count(&f->d) > 0);
    return r;
}

/* "(n, 3, 4) f32", "ndim=2 f32", "ndim=? f32"; tuples as "[a; b]". */
static const char *show(fx *f, const rx_sinfo *s)
{
    rx_sb b = {0};
    if (!s) return "NULL";
    if (s->kind == RX_SI_TUPLE) {
        rx_sb_putc(&b, '[');
        for (int i = 0; i < s->nfields; i++)
            rx_sb_printf(&b, "%s%s", i ? "; " : "", show(f, s->fields[i]));
        rx_sb_putc(&b, ']');
    } else if (s->kind != RX_SI_TENSOR) {
        rx_sb_puts(&b, "not a tensor");
    } else if (s->ndim < 0) {
        rx_sb_printf(&b, "ndim=? %s", rx_dtype_name((rx_dtype)s->dtype));
    } else if (!s->dims) {
        rx_sb_printf(&b, "ndim=%d %s", s->ndim, rx_dtype_name((rx_dtype)s->dtype));
    } else {
        rx_sb_putc(&b, '(');
        for (int i = 0; i < s->ndim; i++) {
            if (i) rx_sb_puts(&b, ", ");
            rx_expr_print(s->dims[i], &b);
        }
        rx_sb_printf(&b, "%s) %s", s->ndim == 1 ? "," : "", rx_dtype_name((rx_dtype)s->dtype));
    }
    char *r = rx_arena_strdup(f->m->arena, rx_sb_str(&b));
    rx_sb_free(&b);
    return r;
}

/* The first error's message contains `part`. */
static void expect_error(fx *f, const rx_sinfo *r, const char *part)
{
    ck_assert_msg(r == NULL, "expected an error, got %s", show(f, r));
    ck_assert_int_ge(rx_diags_count(&f->d), 1);
    ck_assert_msg(strstr(f->d.list.items[0].msg, part) != NULL, "message \"%s\" lacks \"%s\"",
                  f->d.list.items[0].msg, part);
}

#define F32 RX_DT_F32
#define OK(f, r, want) ck_assert_str_eq(show(f, r), want)

/* ---------------------------------------------------------------- registry */
START_TEST(registry_lookup)
{
    const rx_op *a = rx_op_find("add");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_eq(rx_op_find("relax.add"), a);
    ck_assert_ptr_null(rx_op_find("no_such_op"));
    ck_assert_ptr_null(rx_op_find("relax."));
    ck_assert_int_gt(rx_op_count(), 60);
    int seen_softmax = 0;
    for (int i = 0; i < rx_op_count(); i++) {
        const rx_op *op = rx_op_at(i);
        ck_assert_ptr_nonnull(op);
        ck_assert_ptr_eq(rx_op_find(op->name), op);   /* names are unique */
        seen_softmax += strcmp(op->name, "nn.softmax") == 0;
    }
    ck_assert_int_eq(seen_softmax, 1);
    ck_assert_ptr_null(rx_op_at(rx_op_count()));
    ck_assert_ptr_null(rx_op_at(-1));
    const rx_op *conv = rx_op_find("relax.nn.conv2d");
    ck_assert_int_eq(rx_op_attr_index(conv, "groups"), 3);
    ck_assert_int_eq(rx_op_attr_index(conv, "group"), -1);
}
END_TEST

START_TEST(registry_all_ops)
{
    static const char *names[] = {
        "abs", "negative", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cos",
        "erf", "floor", "ceil", "round", "sign", "square", "logical_not", "nn.relu",
        "nn.gelu", "nn.gelu_tanh", "nn.silu", "clip", "add", "subtract", "multiply",
        "divide", "floor_divide", "power", "maximum", "minimum", "equal", "not_equal",
        "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
        "where", "astype", "matmul", "nn.softmax", "nn.log_softmax", "nn.layer_norm",
        "nn.rms_norm", "nn.batch_norm", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d",
        "nn.adaptive_avg_pool2d", "nn.rnn",
    };
    for (int i = 0; i < RX_COUNTOF(names); i++)
        ck_assert_msg(rx_op_find(names[i]) != NULL, "missing op %s", names[i]);
}
END_TEST

/* ---------------------------------------------------------------- attributes */
START_TEST(attrs_defaults)
{
    fx f;
    fx_init(&f);
    const rx_op *op = rx_op_find("nn.conv2d");
    rx_attr **at = rx_op_bind_attrs(f.m, op, NULL, 0, symparse, &f, &f.d);
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(at[0]->kind, RX_A_ARRAY); /* strides [1, 1] */
    ck_assert_int_eq(at[0]->u.arr.n, 2);
    ck_assert_int_eq(at[0]->u.arr.items[1]->u.i, 1);
    ck_assert_int_eq(at[3]->kind, RX_A_INT);   /* groups 1 */
    ck_assert_str_eq(at[4]->u.s, "NCHW");
    ck_assert_int_eq(at[6]->kind, RX_A_NULL);  /* out_dtype */
    op = rx_op_find("nn.layer_norm");
    rx_attr **ln = rx_op_bind_attrs(f.m, op, a_map(&f, 1, "axes", a_int(&f, -1)), 0, symparse,
                                    &f, &f.d);
    ck_assert_ptr_nonnull(ln);
    ck_assert_int_eq(ln[1]->kind, RX_A_FLOAT);
    ck_assert(ln[1]->u.f > 0.9e-5 && ln[1]->u.f < 1.1e-5);
    ck_assert(ln[2]->kind == RX_A_BOOL && ln[2]->u.b);
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    /* an int where a float is expected is converted */
    ln = rx_op_bind_attrs(f.m, op, a_map(&f, 2, "axes", a_int(&f, -1), "epsilon", a_int(&f, 0)),
                          0, symparse, &f, &f.d);
    ck_assert(ln && ln[1]->kind == RX_A_FLOAT && ln[1]->u.f == 0.0);
    fx_fini(&f);
}
END_TEST

START_TEST(attrs_dtype_normalized)
{
    fx f;
    fx_init(&f);
    const rx_op *op = rx_op_find("astype");
    rx_attr **at = rx_op_bind_attrs(f.m, op, a_map(&f, 1, "dtype", a_str(&f, "float16")), 0,
                                    symparse, &f, &f.d);
    ck_assert_ptr_nonnull(at);
    ck_assert_str_eq(at[0]->u.s, "f16");
    at = rx_op_bind_attrs(f.m, op, a_map(&f, 1, "dtype", a_str(&f, "float33")), 0, symparse,
                          &f, &f.d);
    ck_assert_ptr_null(at);
    ck_assert_ptr_nonnull(strstr(f.d.list.items[0].msg, "expected a dtype name"));
    fx_fini(&f);
}
END_TEST

START_TEST(attrs_errors)
{
    fx f;
    fx_init(&f);
    rx_sinfo *x = T(&f, "2, 3", F32);
    /* wrong kind */
    rx_sinfo *r = run(&f, "nn.softmax", a_map(&f, 1, "axis", a_str(&f, "x")), 1, x);
    expect_error(&f, r, "attribute \"axis\" of nn.softmax: expected an integer, found \"x\"");
    rx_diags_free(&f.d);
    rx_diags_init(&f.d);
    /* unknown name lists the valid ones */
    r = run(&f, "nn.softmax", a_map(&f, 1, "axs", a_int(&f, 0)), 1, x);
    expect_error(&f, r, "nn.softmax has no attribute \"axs\" (its attributes: axis)");
    rx_diags_free(&f.d);
    rx_diags_init(&f.d);
    /* an op without attributes */
    r = run(&f, "add", a_map(&f, 1, "axis", a_int(&f, 0)), 2, x, x);
    expect_error(&f, r, "add takes no attributes");
    rx_diags_free(&f.d);
    rx_diags_init(&f.d);
    /* missing required */
    r = run(&f, "nn.max_pool2d", NULL, 1, T(&f, "1, 3, 8, 8", F32));
    expect_error(&f, r, "missing required attribute \"pool_size\"");
    rx_diags_free(&f.d);
    rx_diags_init(&f.d);
    /* list element of the wrong kind, null where not nullable; both reported */
    r = run(&f, "nn.conv2d",
            a_map(&f, 2, "strides", a_map(&f, 0), "groups", A(&f, RX_A_NULL)), 2,
            T(&f, "1, 3, 8, 8", F32), T(&f, "4, 3, 3, 3", F32));
    expect_error(&f, r, "attribute \"strides\" of nn.conv2d: expected a list of integers, found an object");
    ck_assert_int_eq(rx_diags_count(&f.d), 2);
    ck_assert_ptr_nonnull(strstr(f.d.list.items[1].msg, "expected an integer, found null"));
    fx_fini(&f);
}
END_TEST

START_TEST(attrs_lone_int_list)
{
    fx f;
    fx_init(&f);
    /* strides=2 means (2, 2), as in TVM's Python API */
    rx_sinfo *r = run(&f, "nn.max_pool2d",
                      a_map(&f, 2, "pool_size", a_int(&f, 2), "strides", a_int(&f, 2)), 1,
                      T(&f, "1, 3, 8, 8", F32));
    OK(&f, r, "(1, 3, 4, 4) f32");
    fx_fini(&f);
}
END_TEST

/* ---------------------------------------------------------------- elementwise */
START_TEST(unary_ops)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "exp", NULL, 1, T(&f, "n, 4", F32)), "(n, 4) f32");
    OK(&f, run(&f, "abs", NULL, 1, T(&f, "n, 4", RX_DT_I32)), "(n, 4) i32");
    OK(&f, run(&f, "nn.relu", NULL, 1, T(&f, "ndim=3", F32)), "ndim=3 f32");
    OK(&f, run(&f, "sqrt", NULL, 1, T(&f, "?", RX_DT_UNKNOWN)), "ndim=? ?");
    OK(&f, run(&f, "logical_not", NULL, 1, T(&f, "3", RX_DT_BOOL)), "(3,) bool");
    expect_error(&f, run(&f, "exp", NULL, 1, T(&f, "4", RX_DT_I64)), "exp: argument 0 must be a float tensor");
    fx_fini(&f);
}
END_TEST

START_TEST(unary_non_tensor)
{
    fx f;
    fx_init(&f);
    rx_sinfo *r = run(&f, "nn.silu", NULL, 1, rx_si_prim(f.m->arena, RX_DT_F32, NULL));
    expect_error(&f, r, "nn.silu: argument 0 must be a tensor");
    fx_fini(&f);
}
END_TEST

START_TEST(clip_and_astype)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "clip", a_map(&f, 2, "min", a_int(&f, 0), "max", a_flt(&f, 6.0)), 1,
               T(&f, "n", F32)), "(n,) f32");
    OK(&f, run(&f, "astype", a_map(&f, 1, "dtype", a_str(&f, "int32")), 1, T(&f, "n, 2", F32)),
       "(n, 2) i32");
    expect_error(&f, run(&f, "clip", a_map(&f, 1, "min", a_int(&f, 0)), 1, T(&f, "n", F32)),
                 "missing required attribute \"max\"");
    fx_fini(&f);
}
END_TEST

START_TEST(broadcast_ok)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "add", NULL, 2, T(&f, "n, 1, 4", F32), T(&f, "3, 1", F32)), "(n, 3, 4) f32");
    OK(&f, run(&f, "multiply", NULL, 2, T(&f, "n, 4", F32), T(&f, "n, 4", F32)), "(n, 4) f32");
    OK(&f, run(&f, "subtract", NULL, 2, T(&f, "", F32), T(&f, "2, 3", F32)), "(2, 3) f32");
    OK(&f, run(&f, "maximum", NULL, 2, T(&f, "1", F32), T(&f, "n", F32)), "(n,) f32");
    OK(&f, run(&f, "add", NULL, 2, T(&f, "n*2", F32), T(&f, "2*n", F32)), "(n * 2,) f32");
    OK(&f, run(&f, "divide", NULL, 2, T(&f, "n, 4", RX_DT_UNKNOWN), T(&f, "4", F32)), "(n, 4) f32");
    fx_fini(&f);
}
END_TEST

START_TEST(broadcast_unknown)
{
    fx f;
    fx_init(&f);
    /* n vs m cannot be decided: known ndim, unknown dims */
    OK(&f, run(&f, "add", NULL, 2, T(&f, "n, 4", F32), T(&f, "m, 4", F32)), "ndim=2 f32");
    OK(&f, run(&f, "add", NULL, 2, T(&f, "n", F32), T(&f, "3", F32)), "ndim=1 f32");
    OK(&f, run(&f, "add", NULL, 2, T(&f, "ndim=3", F32), T(&f, "4", F32)), "ndim=3 f32");
    OK(&f, run(&f, "add", NULL, 2, T(&f, "?", F32), T(&f, "4", F32)), "ndim=? f32");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    fx_fini(&f);
}
END_TEST

START_TEST(broadcast_errors)
{
    fx f;
    fx_init(&f);
    expect_error(&f, run(&f, "add", NULL, 2, T(&f, "n, 4", F32), T(&f, "3", F32)),
                 "add: cannot broadcast (n, 4) and (3,)");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "add", NULL, 2, T(&f, "4", F32), T(&f, "4", RX_DT_I32)),
                 "add: operand dtypes differ: f32 and i32");
    fx_fini(&f);
}
END_TEST

START_TEST(compare_logic_where)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "less", NULL, 2, T(&f, "n, 1", F32), T(&f, "1, 5", F32)), "(n, 5) bool");
    OK(&f, run(&f, "logical_and", NULL, 2, T(&f, "n", RX_DT_BOOL), T(&f, "n", RX_DT_BOOL)),
       "(n,) bool");
    OK(&f, run(&f, "where", NULL, 3, T(&f, "n, 1", RX_DT_BOOL), T(&f, "4", F32), T(&f, "1", F32)),
       "(n, 4) f32");
    expect_error(&f, run(&f, "logical_or", NULL, 2, T(&f, "n", F32), T(&f, "n", RX_DT_BOOL)),
                 "logical_or: argument 0 must be a bool tensor");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "where", NULL, 3, T(&f, "2", F32), T(&f, "2", F32), T(&f, "2", F32)),
                 "where: argument 0 must be a bool tensor");
    fx_fini(&f);
}
END_TEST

/* ---------------------------------------------------------------- matmul */
START_TEST(matmul_shapes)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "b, n, k", F32), T(&f, "k, m", F32)), "(b, n, m) f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "k", F32), T(&f, "k, m", F32)), "(m,) f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "n, k", F32), T(&f, "k", F32)), "(n,) f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "k", F32), T(&f, "k", F32)), "() f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "2, 1, n, 8", F32), T(&f, "3, 8, 5", F32)),
       "(2, 3, n, 5) f32");
    OK(&f, run(&f, "matmul", a_map(&f, 1, "out_dtype", a_str(&f, "float32")), 2,
               T(&f, "4, 8", RX_DT_F16), T(&f, "8, 2", RX_DT_F16)), "(4, 2) f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "?", F32), T(&f, "8, 2", F32)), "ndim=? f32");
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "ndim=3", F32), T(&f, "8, 2", F32)), "ndim=3 f32");
    /* unprovable k vs 8: left to the run time */
    OK(&f, run(&f, "matmul", NULL, 2, T(&f, "n, k", F32), T(&f, "8, 2", F32)), "(n, 2) f32");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    fx_fini(&f);
}
END_TEST

START_TEST(matmul_errors)
{
    fx f;
    fx_init(&f);
    expect_error(&f, run(&f, "matmul", NULL, 2, T(&f, "n, 3", F32), T(&f, "4, m", F32)),
                 "matmul: reduction dimensions differ");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "matmul", NULL, 2, T(&f, "n, k+1", F32), T(&f, "k, m", F32)),
                 "matmul");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "matmul", NULL, 2, T(&f, "", F32), T(&f, "4", F32)),
                 "at least 1 dimension");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "matmul", NULL, 2, T(&f, "2, 4, 8", F32), T(&f, "3, 8, 2", F32)),
                 "matmul: cannot broadcast");
    fx_fini(&f);
}
END_TEST

/* ---------------------------------------------------------------- nn */
START_TEST(softmax_axis)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "nn.softmax", a_map(&f, 1, "axis", a_int(&f, -1)), 1, T(&f, "n, 10", F32)),
       "(n, 10) f32");
    OK(&f, run(&f, "nn.log_softmax", NULL, 1, T(&f, "?", F32)), "ndim=? f32");
    expect_error(&f, run(&f, "nn.softmax", a_map(&f, 1, "axis", a_int(&f, 2)), 1,
                         T(&f, "n, 10", F32)), "nn.softmax: axis 2 is out of range");
    fx_fini(&f);
}
END_TEST

START_TEST(norms)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "nn.layer_norm", a_map(&f, 1, "axes", a_int(&f, -1)), 3,
               T(&f, "b, n, 64", F32), T(&f, "64", F32), T(&f, "64", F32)), "(b, n, 64) f32");
    OK(&f, run(&f, "nn.layer_norm", a_map(&f, 1, "axes", a_ints(&f, 2, 1, 2)), 3,
               T(&f, "b, n, 64", F32), T(&f, "n, 64", F32), T(&f, "ndim=2", F32)),
       "(b, n, 64) f32");
    OK(&f, run(&f, "nn.rms_norm", NULL, 2, T(&f, "n, 64", F32), T(&f, "64", F32)), "(n, 64) f32");
    expect_error(&f, run(&f, "nn.layer_norm", a_map(&f, 1, "axes", a_int(&f, -1)), 3,
                         T(&f, "n, 64", F32), T(&f, "32", F32), T(&f, "64", F32)),
                 "nn.layer_norm: argument 1 has shape (32,)");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.layer_norm", a_map(&f, 1, "axes", a_ints(&f, 2, 0, 1)), 3,
                         T(&f, "n, 64", F32), T(&f, "64", F32), T(&f, "64", F32)),
                 "must have 2 dimensions");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.layer_norm", NULL, 3, T(&f, "n, 64", F32), T(&f, "64", F32),
                         T(&f, "64", F32)), "missing required attribute \"axes\"");
    fx_fini(&f);
}
END_TEST

START_TEST(batch_norm)
{
    fx f;
    fx_init(&f);
    rx_sinfo *c = T(&f, "16", F32);
    OK(&f, run(&f, "nn.batch_norm", NULL, 5, T(&f, "n, 16, h, w", F32), c, c, c, c),
       "[(n, 16, h, w) f32; (16,) f32; (16,) f32]");
    expect_error(&f, run(&f, "nn.batch_norm", NULL, 5, T(&f, "n, 8, h, w", F32), c, c, c, c),
                 "nn.batch_norm: argument 1");
    fx_fini(&f);
}
END_TEST

START_TEST(conv2d_shapes)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "nn.conv2d", a_map(&f, 1, "padding", a_ints(&f, 2, 1, 1)), 2,
               T(&f, "1, 3, 32, 32", F32), T(&f, "16, 3, 3, 3", F32)), "(1, 16, 32, 32) f32");
    OK(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "1, 3, 32, 32", F32), T(&f, "16, 3, 3, 3", F32)),
       "(1, 16, 30, 30) f32");
    OK(&f, run(&f, "nn.conv2d", a_map(&f, 2, "strides", a_ints(&f, 2, 2, 2), "padding",
                                      a_ints(&f, 4, 1, 1, 1, 1)), 2,
               T(&f, "n, 3, 224, 224", F32), T(&f, "64, 3, 7, 7", F32)), "(n, 64, 110, 110) f32");
    /* symbolic H and W: padding 1 and a 3x3 kernel keep them */
    OK(&f, run(&f, "nn.conv2d", a_map(&f, 1, "padding", a_int(&f, 1)), 2,
               T(&f, "n, 3, h, w", F32), T(&f, "8, 3, 3, 3", F32)), "(n, 8, h, w) f32");
    /* grouped (depthwise) */
    OK(&f, run(&f, "nn.conv2d", a_map(&f, 2, "groups", a_int(&f, 32), "padding", a_int(&f, 1)), 2,
               T(&f, "1, 32, 16, 16", F32), T(&f, "32, 1, 3, 3", F32)), "(1, 32, 16, 16) f32");
    /* dilation 2: effective kernel 5 */
    OK(&f, run(&f, "nn.conv2d", a_map(&f, 1, "dilation", a_ints(&f, 2, 2, 2)), 2,
               T(&f, "1, 3, 9, 9", F32), T(&f, "4, 3, 3, 3", F32)), "(1, 4, 5, 5) f32");
    OK(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "ndim=4", F32), T(&f, "4, 3, 3, 3", F32)),
       "ndim=4 f32");
    OK(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "?", F32), T(&f, "?", F32)), "ndim=4 f32");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    fx_fini(&f);
}
END_TEST

START_TEST(conv2d_errors)
{
    fx f;
    fx_init(&f);
    expect_error(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "1, 4, 8, 8", F32),
                         T(&f, "16, 3, 3, 3", F32)), "nn.conv2d: input channels 4");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.conv2d", a_map(&f, 1, "data_layout", a_str(&f, "NHWC")), 2,
                         T(&f, "1, 8, 8, 3", F32), T(&f, "16, 3, 3, 3", F32)),
                 "data_layout \"NHWC\" is not supported");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.conv2d", a_map(&f, 1, "padding", a_ints(&f, 3, 1, 1, 1)), 2,
                         T(&f, "1, 3, 8, 8", F32), T(&f, "16, 3, 3, 3", F32)),
                 "needs 1, 2 or 4 values");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "1, 3, 2, 2", F32),
                         T(&f, "16, 3, 3, 3", F32)), "does not fit");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.conv2d", NULL, 2, T(&f, "3, 8, 8", F32),
                         T(&f, "16, 3, 3, 3", F32)), "argument 0 must be 4-D");
    fx_fini(&f);
}
END_TEST

START_TEST(pools)
{
    fx f;
    fx_init(&f);
    OK(&f, run(&f, "nn.max_pool2d", a_map(&f, 2, "pool_size", a_ints(&f, 2, 2, 2), "strides",
                                          a_ints(&f, 2, 2, 2)), 1,
               T(&f, "n, 16, 7, 7", F32)), "(n, 16, 3, 3) f32");
    OK(&f, run(&f, "nn.max_pool2d", a_map(&f, 3, "pool_size", a_ints(&f, 2, 2, 2), "strides",
                                          a_ints(&f, 2, 2, 2), "ceil_mode", a_bool(&f, true)), 1,
               T(&f, "n, 16, 7, 7", F32)), "(n, 16, 4, 4) f32");
    OK(&f, run(&f, "nn.avg_pool2d", a_map(&f, 4, "pool_size", a_ints(&f, 1, 3), "padding",
                                          a_int(&f, 1), "count_include_pad", a_bool(&f, true),
                                          "strides", a_int(&f, 1)), 1,
               T(&f, "1, 8, h, w", F32)), "(1, 8, h, w) f32");
    OK(&f, run(&f, "nn.adaptive_avg_pool2d", a_map(&f, 1, "output_size", a_int(&f, 1)), 1,
               T(&f, "n, 512, h, w", F32)), "(n, 512, 1, 1) f32");
    OK(&f, run(&f, "nn.adaptive_avg_pool2d", a_map(&f, 1, "output_size", a_ints(&f, 2, 7, 5)), 1,
               T(&f, "n, 512, h, w", F32)), "(n, 512, 7, 5) f32");
    OK(&f, run(&f, "nn.adaptive_avg_pool2d", NULL, 1, T(&f, "n, 512, h, w", F32)),
       "(n, 512, h, w) f32");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    /* count_include_pad belongs to avg_pool2d only */
    expect_error(&f, run(&f, "nn.max_pool2d", a_map(&f, 2, "pool_size", a_int(&f, 2),
                                                    "count_include_pad", a_bool(&f, true)),
                         1, T(&f, "1, 8, 8, 8", F32)),
                 "nn.max_pool2d has no attribute \"count_include_pad\"");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, run(&f, "nn.avg_pool2d", a_map(&f, 2, "pool_size", a_int(&f, 2),
                                                    "layout", a_str(&f, "NHWC")),
                         1, T(&f, "1, 8, 8, 8", F32)), "layout \"NHWC\" is not supported");
    fx_fini(&f);
}
END_TEST

/* nn.rnn of x (dtype xdt), w, r, b, h0 = c0 (dims h), p (dtype dt). */
static rx_sinfo *rnn_run_dt(fx *f, rx_attr *attrs, const char *x, rx_dtype xdt, const char *w,
                            const char *r, const char *b, const char *h, const char *p, rx_dtype dt)
{
    return run(f, "nn.rnn", attrs, 7, T(f, x, xdt), T(f, w, dt), T(f, r, dt), T(f, b, dt),
               T(f, h, dt), T(f, h, dt), T(f, p, dt));
}

static rx_sinfo *rnn_run(fx *f, rx_attr *attrs, const char *x, rx_dtype xdt, const char *w,
                         const char *r, const char *b, const char *h, const char *p)
{
    return rnn_run_dt(f, attrs, x, xdt, w, r, b, h, p, F32);
}

/* nn.rnn: (T + 2, D, B, H) with a symbolic sequence length; r's gate count checked by
 * mode and direction; f32 or f64, one dtype for all; unknown modes named. */
START_TEST(rnn)
{
    fx f;
    fx_init(&f);
    rx_attr *lstm = a_map(&f, 1, "mode", a_str(&f, "lstm"));
    OK(&f, rnn_run(&f, lstm, "t, b, 6", F32, "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24"),
       "(t + 2, 1, b, 8) f32");
    OK(&f, rnn_run(&f, a_map(&f, 2, "mode", a_str(&f, "gru"), "direction", a_str(&f, "bidirectional")),
                   "5, 3, 6", F32, "2, 24, 6", "2, 24, 8", "2, 48", "2, 3, 8", "2, 24"),
       "(7, 2, 3, 8) f32");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    /* a GRU's r has 3 gates, not 4 */
    expect_error(&f, rnn_run(&f, a_map(&f, 1, "mode", a_str(&f, "gru")), "t, b, 6", F32,
                             "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24"),
                 "r must be (1, 3 * hidden, hidden) for mode gru");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, rnn_run(&f, a_map(&f, 1, "mode", a_str(&f, "lstm")), "t, b, 6", RX_DT_F64,
                             "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24"),
                 "argument 1 is f32 where the ones before are f64");
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, rnn_run_dt(&f, a_map(&f, 1, "mode", a_str(&f, "lstm")), "t, b, 6",
                                RX_DT_I32, "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24",
                                RX_DT_I32),
                 "argument 0 must be f32 or f64, found i32");
    fx_fini(&f);
    fx_init(&f);
    OK(&f, rnn_run_dt(&f, a_map(&f, 1, "mode", a_str(&f, "lstm")), "t, b, 6", RX_DT_F64,
                      "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24", RX_DT_F64),
       "(t + 2, 1, b, 8) f64");
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    fx_fini(&f);
    fx_init(&f);
    expect_error(&f, rnn_run(&f, a_map(&f, 1, "mode", a_str(&f, "lstm2")), "t, b, 6", F32,
                             "1, 32, 6", "1, 32, 8", "1, 64", "1, b, 8", "1, 24"),
                 "mode \"lstm2\" is not one of lstm, gru, rnn_tanh, rnn_relu");
    fx_fini(&f);
}
END_TEST

START_TEST(symbolic_size_attr)
{
    fx f;
    fx_init(&f);
    /* SIZE and SIZES kinds through the symparse callback (ops of part B's groups, only
     * their binding is checked here) */
    const rx_op *ar = rx_op_find("arange");
    ck_assert_ptr_nonnull(ar);
    rx_attr **at = rx_op_bind_attrs(f.m, ar, a_map(&f, 1, "end", a_str(&f, "n")), 0, symparse,
                                    &f, &f.d);
    ck_assert_ptr_nonnull(at);
    int ie = rx_op_attr_index(ar, "end"), is = rx_op_attr_index(ar, "start");
    ck_assert_int_eq(at[ie]->kind, RX_A_EXPR);
    ck_assert_str_eq(rx_expr_str(f.m->arena, at[ie]->u.e), "n");
    ck_assert_int_eq(at[is]->kind, RX_A_INT);
    ck_assert_int_eq(rx_diags_count(&f.d), 0);
    /* the parser reports its own error; binding adds none */
    at = rx_op_bind_attrs(f.m, ar, a_map(&f, 1, "end", a_str(&f, "n+1")), 0, symparse, &f, &f.d);
    ck_assert_ptr_null(at);
    ck_assert_int_eq(rx_diags_count(&f.d), 1);
    ck_assert_str_eq(f.d.list.items[0].msg, "bad size \"n+1\"");
    /* a float is no size */
    at = rx_op_bind_attrs(f.m, ar, a_map(&f, 1, "end", a_flt(&f, 2.5)), 0, symparse, &f, &f.d);
    ck_assert_ptr_null(at);
    ck_assert_ptr_nonnull(strstr(f.d.list.items[1].msg, "expected an integer or a symbolic size, found 2.5"));
    /* in a list: strings become expressions, element by element */
    const rx_op *ss = rx_op_find("strided_slice");
    ck_assert_ptr_nonnull(ss);
    rx_attr *lst = a_ints(&f, 2, 0, 0);
    lst->u.arr.items[1] = a_str(&f, "m");
    at = rx_op_bind_attrs(f.m, ss, a_map(&f, 3, "axes", a_ints(&f, 2, 0, 1), "begin",
                                         a_ints(&f, 2, 0, 0), "end", lst),
                          0, symparse, &f, &f.d);
    ck_assert_ptr_nonnull(at);
    const rx_attr *end = at[rx_op_attr_index(ss, "end")];
    ck_assert_int_eq(end->kind, RX_A_ARRAY);
    ck_assert_int_eq(end->u.arr.items[0]->kind, RX_A_INT);
    ck_assert_int_eq(end->u.arr.items[1]->kind, RX_A_EXPR);
    /* a string where only integers go */
    rx_sinfo *r = run(&f, "nn.conv2d", a_map(&f, 1, "strides", a_str(&f, "n")), 2,
                      T(&f, "1, 3, 8, 8", F32), T(&f, "16, 3, 3, 3", F32));
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(f.d.list.items[2].msg, "expected a list of integers, found \"n\""));
    fx_fini(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ops_a");
    TCase *t = tcase_create("all");
    tcase_add_test(t, registry_lookup);
    tcase_add_test(t, registry_all_ops);
    tcase_add_test(t, attrs_defaults);
    tcase_add_test(t, attrs_dtype_normalized);
    tcase_add_test(t, attrs_errors);
    tcase_add_test(t, attrs_lone_int_list);
    tcase_add_test(t, unary_ops);
    tcase_add_test(t, unary_non_tensor);
    tcase_add_test(t, clip_and_astype);
    tcase_add_test(t, broadcast_ok);
    tcase_add_test(t, broadcast_unknown);
    tcase_add_test(t, broadcast_errors);
    tcase_add_test(t, compare_logic_where);
    tcase_add_test(t, matmul_shapes);
    tcase_add_test(t, matmul_errors);
    tcase_add_test(t, softmax_axis);
    tcase_add_test(t, norms);
    tcase_add_test(t, batch_norm);
    tcase_add_test(t, conv2d_shapes);
    tcase_add_test(t, conv2d_errors);
    tcase_add_test(t, pools);
    tcase_add_test(t, rnn);
    tcase_add_test(t, symbolic_size_attr);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return rx_check_run(suite());
}
