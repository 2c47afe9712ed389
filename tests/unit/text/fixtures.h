/*
 * fixtures.h — modules built with the ir.h constructors for the text tests.
 *
 * `build` makes a small module from a `variant` (which names, op, dim, constant byte
 * and global name to use), so that two builds differ in exactly one respect: names
 * only (must be structurally equal, same hash) or one semantic field (must differ).
 * `build_constructs` uses every graph-level expression kind and every loop-level
 * statement kind. Included by the test files of this directory only.
 */
#ifndef RELAX_TESTS_TEXT_FIXTURES_H
#define RELAX_TESTS_TEXT_FIXTURES_H

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/deduce.h"
#include "relax/json.h"
#include "relax/op.h"
#include "relax/text.h"

typedef struct variant {
    const char *x, *lv0, *lv1, *lv2, *n; /* variable names */
    const char *op;                      /* unary op of lv0 */
    int64_t dim;                         /* second dim of x */
    uint8_t cbyte;                       /* first byte of constant w0 */
    const char *cname;                   /* name of constant w0 */
    const char *tir;                     /* name of the loop function */
    const char *i, *X;                   /* loop variable, buffer names */
} variant;

static const variant base = {"x", "lv0", "lv1", "lv2", "n", "exp", 4, 0, "w0", "mm", "i", "X"};

static rx_attr **attrs_of(rx_module *m, const rx_op *op)
{
    rx_diags d;
    rx_diags_init(&d);
    rx_attr **a = rx_op_bind_attrs(m, op, NULL, 0, NULL, NULL, &d);
    ck_assert_int_eq(rx_diags_count(&d), 0);
    rx_diags_free(&d);
    return a;
}

static rx_node *call1(rx_module *m, const char *opname, rx_node *x, rx_node *y)
{
    const rx_op *op = rx_op_find(opname);
    ck_assert_ptr_nonnull(op);
    rx_node *args[2] = {x, y};
    return rx_n_call_op(m, op, args, y ? 2 : 1, attrs_of(m, op));
}

/* mm(X: (n, dim), Y: (n, dim)): for i in n: for j in dim: block: Y[vi, vj] = exp(X[vi, vj]) */
static rx_func *build_tir(rx_module *m, const variant *v)
{
    rx_arena *a = m->arena;
    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_TIR;
    f->name = v->tir;
    f->nouts = -1;
    rx_svar *n = rx_svar_new(a, v->n, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(m));
    rx_expr *shape[2] = {rx_e_var(a, n), rx_e_int(a, v->dim)};
    rx_buffer *buf[2];
    for (int k = 0; k < 2; k++) {
        buf[k] = RX_NEW(a, rx_buffer);
        buf[k]->name = k ? "Y" : v->X;
        buf[k]->dtype = RX_DT_F32;
        buf[k]->ndim = 2;
        buf[k]->shape = RX_NEWN(a, rx_expr *, 2);
        memcpy(buf[k]->shape, shape, sizeof shape);
        buf[k]->id = rx_module_new_id(m);
    }
    f->tparams = RX_NEWN(a, rx_tparam, 2);
    f->tparams[0].buf = buf[0];
    f->tparams[1].buf = buf[1];
    f->ntparams = 2;
    f->svars = RX_NEWN(a, const rx_svar *, 1);
    f->svars[0] = n;
    f->nsvars = 1;
    rx_svar *i = rx_svar_new(a, v->i, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *j = rx_svar_new(a, "j", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *vi = rx_svar_new(a, "vi", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *vj = rx_svar_new(a, "vj", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_stmt *blk = RX_NEW(a, rx_stmt);
    blk->kind = RX_S_BLOCK;
    blk->u.block.name = "b";
    blk->u.block.niters = 2;
    blk->u.block.iters = RX_NEWN(a, rx_iter, 2);
    blk->u.block.iters[0] = (rx_iter){vi, RX_ITER_SPATIAL, shape[0], rx_e_var(a, i)};
    blk->u.block.iters[1] = (rx_iter){vj, RX_ITER_SPATIAL, shape[1], rx_e_var(a, j)};
    rx_expr *idx[2] = {rx_e_var(a, vi), rx_e_var(a, vj)};
    rx_expr *ld = rx_e_load(a, buf[0], idx, 2);
    rx_stmt *st = RX_NEW(a, rx_stmt);
    st->kind = RX_S_STORE;
    st->u.store.buf = buf[1];
    st->u.store.idx = RX_NEWN(a, rx_expr *, 2);
    memcpy(st->u.store.idx, idx, sizeof idx);
    st->u.store.nidx = 2;
    st->u.store.value = rx_e_call(a, RX_FN_EXP, &ld, 1, RX_DT_F32);
    blk->u.block.body.items = RX_NEWN(a, rx_stmt *, 1);
    blk->u.block.body.items[0] = st;
    blk->u.block.body.n = 1;
    rx_stmt *loops[2];
    const rx_svar *lv[2] = {i, j};
    rx_stmt *inner = blk;
    for (int k = 1; k >= 0; k--) {
        loops[k] = RX_NEW(a, rx_stmt);
        loops[k]->kind = RX_S_FOR;
        loops[k]->u.for_.var = lv[k];
        loops[k]->u.for_.min = rx_e_int(a, 0);
        loops[k]->u.for_.extent = shape[k];
        loops[k]->u.for_.body.items = RX_NEWN(a, rx_stmt *, 1);
        loops[k]->u.for_.body.items[0] = inner;
        loops[k]->u.for_.body.n = 1;
        inner = loops[k];
    }
    f->tbody.items = RX_NEWN(a, rx_stmt *, 1);
    f->tbody.items[0] = loops[0];
    f->tbody.n = 1;
    return f;
}

/* main(x: (n, dim)): dataflow { lv0 = op(x); lv1 = add(lv0, w0) }; lv2 = call_tir(mm) */
static rx_module *build(const variant *v)
{
    rx_module *m = rx_module_new();
    rx_arena *a = m->arena;
    rx_func *tir = build_tir(m, v);
    rx_svar *n = rx_svar_new(a, v->n, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(m));
    rx_expr *d[2] = {rx_e_var(a, n), rx_e_int(a, v->dim)};
    rx_sinfo *t = rx_si_tensor(a, RX_DT_F32, 2, d);
    rx_const *k = RX_NEW(a, rx_const);
    k->name = v->cname;
    k->dtype = RX_DT_F32;
    k->ndim = 1;
    k->shape = RX_NEWN(a, int64_t, 1);
    k->shape[0] = 2;
    k->nbytes = 8;
    k->data = RX_NEWN(a, uint8_t, 8);
    k->data[0] = v->cbyte;
    k->data[3] = 0x3f; /* 0.5-ish */
    m->consts = RX_NEWN(a, rx_const *, 1);
    m->consts[0] = k;
    m->nconsts = 1;

    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_RELAX;
    f->name = "main";
    f->nouts = -1;
    f->svars = RX_NEWN(a, const rx_svar *, 1);
    f->svars[0] = n;
    f->nsvars = 1;
    rx_node *x = rx_n_var(m, v->x, t, false);
    f->params = RX_NEWN(a, rx_node *, 1);
    f->params[0] = x;
    f->nparams = 1;
    f->ret_given = t;
    rx_node *lv0 = rx_n_var(m, v->lv0, t, true);
    rx_node *lv1 = rx_n_var(m, v->lv1, t, true);
    rx_node *lv2 = rx_n_var(m, v->lv2, t, false);
    rx_block *b0 = RX_NEW(a, rx_block), *b1 = RX_NEW(a, rx_block);
    b0->dataflow = true;
    b0->nbindings = 2;
    b0->bindings = RX_NEWN(a, rx_binding, 2);
    b0->bindings[0] = (rx_binding){lv0, call1(m, v->op, x, NULL), NULL, false, 0};
    b0->bindings[1] = (rx_binding){lv1, call1(m, "add", lv0, rx_n_const(m, k)), t, false, 0};
    rx_node *g = rx_n_global(m, tir->name, tir);
    b1->nbindings = 1;
    b1->bindings = RX_NEWN(a, rx_binding, 1);
    b1->bindings[0] = (rx_binding){lv2, rx_n_call_tir(m, g, &lv1, 1, t, NULL, 0), NULL, false, 0};
    f->body = RX_NEW(a, rx_seq);
    f->body->blocks = RX_NEWN(a, rx_block *, 2);
    f->body->blocks[0] = b0;
    f->body->blocks[1] = b1;
    f->body->nblocks = 2;
    f->body->result = lv2;

    m->funcs = RX_NEWN(a, rx_func *, 2);
    m->funcs[0] = f;
    m->funcs[1] = tir;
    m->nfuncs = 2;
    return m;
}

static char *print_module(const rx_module *m)
{
    rx_sb b = {0};
    rx_print_module(m, &b);
    return rx_sb_take(&b);
}

/* ---- a module with every construct, for the printer and the writer ---- */
static rx_attr *attr_int(rx_arena *a, int64_t v)
{
    rx_attr *r = RX_NEW(a, rx_attr);
    r->kind = RX_A_INT;
    r->u.i = v;
    return r;
}

static rx_attr *attr_map1(rx_arena *a, const char *k, rx_attr *v)
{
    rx_attr *r = RX_NEW(a, rx_attr);
    r->kind = RX_A_MAP;
    r->u.map.keys = RX_NEWN(a, const char *, 1);
    r->u.map.vals = RX_NEWN(a, rx_attr *, 1);
    r->u.map.keys[0] = k;
    r->u.map.vals[0] = v;
    r->u.map.n = 1;
    return r;
}

static rx_const *mk_const(rx_arena *a, rx_dtype dt, int ndim, int64_t n0, const void *data, size_t nbytes)
{
    rx_const *k = RX_NEW(a, rx_const);
    k->dtype = dt;
    k->ndim = ndim;
    k->shape = RX_NEWN(a, int64_t, 1);
    k->shape[0] = n0;
    k->data = rx_arena_dup(a, data, nbytes);
    k->nbytes = nbytes;
    return k;
}

static rx_stmts list(rx_arena *a, int n, rx_stmt **items)
{
    rx_stmts l = {RX_NEWN(a, rx_stmt *, n), n};
    memcpy(l.items, items, sizeof(rx_stmt *) * (size_t)n);
    return l;
}

static rx_stmt *mk_stmt(rx_arena *a, rx_skind k)
{
    rx_stmt *s = RX_NEW(a, rx_stmt);
    s->kind = k;
    return s;
}

static rx_stmt *mk_store(rx_arena *a, rx_buffer *b, rx_expr *i, rx_expr *v)
{
    rx_stmt *s = mk_stmt(a, RX_S_STORE);
    s->u.store.buf = b;
    s->u.store.idx = RX_NEWN(a, rx_expr *, 1);
    s->u.store.idx[0] = i;
    s->u.store.nidx = 1;
    s->u.store.value = v;
    return s;
}

/* k2(A: (16,), s: i64): thread loop, local alloc, parallel loop from 2, if/else, lets */
static rx_func *build_k2(rx_module *m)
{
    rx_arena *a = m->arena;
    rx_func *f = RX_NEW(a, rx_func);
    f->kind = RX_F_TIR;
    f->name = "k2";
    f->nouts = -1;
    rx_expr *e16 = rx_e_int(a, 16), **sh = RX_NEWN(a, rx_expr *, 1);
    sh[0] = e16;
    rx_buffer *A = RX_NEW(a, rx_buffer), *W = RX_NEW(a, rx_buffer);
    *A = (rx_buffer){"A", RX_DT_F32, 1, sh, RX_SCOPE_GLOBAL, rx_module_new_id(m), 0};
    *W = (rx_buffer){"W", RX_DT_F16, 1, sh, RX_SCOPE_LOCAL, rx_module_new_id(m), 0};
    rx_svar *sv = rx_svar_new(a, "s", RX_DT_I64, RX_SV_PARAM, rx_module_new_id(m));
    f->tparams = RX_NEWN(a, rx_tparam, 2);
    f->tparams[0].buf = A;
    f->tparams[1].var = sv;
    f->ntparams = 2;
    rx_svar *t = rx_svar_new(a, "t", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *p = rx_svar_new(a, "p", RX_DT_I64, RX_SV_LOOP, rx_module_new_id(m));
    rx_svar *v = rx_svar_new(a, "v", RX_DT_I64, RX_SV_LET, rx_module_new_id(m));
    rx_svar *v2 = rx_svar_new(a, "v", RX_DT_I64, RX_SV_LET, rx_module_new_id(m));
    rx_expr *ep = rx_e_var(a, p);
    rx_stmt *let_last = mk_stmt(a, RX_S_LET);
    let_last->u.let.var = v;
    let_last->u.let.value = rx_e_binary(a, RX_E_MUL, ep, rx_e_int(a, 2));
    rx_stmt *st1 = mk_store(a, A, rx_e_var(a, v), rx_e_float(a, 1.0, RX_DT_F32));
    let_last->u.let.body = list(a, 1, &st1);
    rx_stmt *iff = mk_stmt(a, RX_S_IF);
    iff->u.if_.cond = rx_e_binary(a, RX_E_LT, ep, rx_e_int(a, 4));
    rx_stmt *st0 = mk_store(a, A, ep, rx_e_float(a, 0.0, RX_DT_F32));
    iff->u.if_.then_s = list(a, 1, &st0);
    iff->u.if_.else_s = list(a, 1, &let_last);
    rx_stmt *par = mk_stmt(a, RX_S_FOR);
    par->u.for_.var = p;
    par->u.for_.min = rx_e_int(a, 2);
    par->u.for_.extent = rx_e_int(a, 4);
    par->u.for_.loop_kind = RX_LOOP_PARALLEL;
    par->u.for_.body = list(a, 1, &iff);
    rx_stmt *alloc = mk_stmt(a, RX_S_ALLOC);
    alloc->u.alloc.buf = W;
    rx_stmt *let_mid = mk_stmt(a, RX_S_LET);
    let_mid->u.let.var = v2;
    let_mid->u.let.value = rx_e_var(a, sv);
    rx_stmt *st2 = mk_store(a, W, rx_e_var(a, v2), rx_e_cast(a, RX_DT_F16, rx_e_load(a, A, &ep, 0)));
    st2->u.store.value = rx_e_float(a, 2.0, RX_DT_F16);
    let_mid->u.let.body = list(a, 1, &st2);
    rx_stmt *inner[3] = {alloc, let_mid, par};
    rx_stmt *thr = mk_stmt(a, RX_S_FOR);
    thr->u.for_.var = t;
    thr->u.for_.min = rx_e_int(a, 0);
    thr->u.for_.extent = e16;
    thr->u.for_.thread = "threadIdx.x";
    thr->u.for_.body = list(a, 3, inner);
    f->tbody = list(a, 1, &thr);
    return f;
}

static rx_binding bind(rx_node *v, rx_node *val) { return (rx_binding){v, val, NULL, false, 0}; }

/* sub(a) -> a, and g(x, f0, c) using every graph-level expression kind */
static rx_module *build_constructs(void)
{
    rx_module *m = rx_module_new();
    rx_arena *a = m->arena;
    rx_sinfo *tf = rx_si_tensor(a, RX_DT_F32, -1, NULL);
    rx_svar *n = rx_svar_new(a, "n", RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(m));
    rx_expr *en = rx_e_var(a, n), *d2[2] = {en, rx_e_int(a, 4)};
    rx_sinfo *tn = rx_si_tensor(a, RX_DT_F32, 1, &en);

    rx_func *sub = RX_NEW(a, rx_func);
    sub->kind = RX_F_RELAX;
    sub->name = "sub";
    rx_node *pa = rx_n_var(m, "a", tf, false);
    sub->params = RX_NEWN(a, rx_node *, 1);
    sub->params[0] = pa;
    sub->nparams = 1;
    sub->body = RX_NEW(a, rx_seq);
    sub->body->result = pa;

    rx_func *g = RX_NEW(a, rx_func);
    g->kind = RX_F_RELAX;
    g->name = "g";
    g->attrs = attr_map1(a, "upper_bounds", attr_map1(a, "k", attr_int(a, 1024)));
    rx_svar *k = rx_svar_new(a, "k", RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(m));
    rx_expr *ek = rx_e_var(a, k);
    g->svars = RX_NEWN(a, const rx_svar *, 1);
    g->svars[0] = k;
    g->nsvars = 1;
    rx_node *x = rx_n_var(m, "x", rx_si_tensor(a, RX_DT_F32, 1, NULL), false);
    rx_node *f0 = rx_n_var(m, "f0", rx_si_callable(a, &tf, 1, rx_si_object(a)), false);
    rx_node *c = rx_n_var(m, "c", rx_si_prim(a, RX_DT_BOOL, NULL), false);
    rx_node *sh = rx_n_var(m, "sh", rx_si_shape(a, 1, &ek), false);
    rx_node *ps[4] = {x, f0, c, sh};
    g->params = RX_NEWN(a, rx_node *, 4);
    memcpy(g->params, ps, sizeof ps);
    g->nparams = 4;
    g->ret_given = tf;

    rx_node *lv[11];
    for (int i = 0; i < 11; i++) {
        char name[8];
        snprintf(name, sizeof name, "lv%d", i);
        lv[i] = rx_n_var(m, name, i < 2 ? tn : NULL, false);
    }
    rx_binding *bs = RX_NEWN(a, rx_binding, 10);
    bs[0] = (rx_binding){lv[0], x, tn, true, 0};
    bs[1] = bind(lv[1], call1(m, "nn.softmax", lv[0], NULL));
    rx_node *tup[2] = {lv[1], rx_n_shape(m, d2, 2)};
    bs[2] = bind(lv[2], rx_n_tuple(m, tup, 2));
    bs[3] = bind(lv[3], rx_n_get_item(m, lv[2], 0));
    bs[4] = bind(lv[4], rx_n_call_lib(m, "blas.copy", &lv[3], 1, tn));
    bs[5] = bind(lv[5], rx_n_call_fn(m, rx_n_global(m, "sub", sub), &lv[4], 1));
    bs[6] = bind(lv[6], rx_n_call_fn(m, f0, &lv[5], 1));
    bs[7] = bind(lv[7], rx_n_primval(m, rx_e_binary(a, RX_E_ADD, en, rx_e_int(a, 1))));
    float half = 1.5f;
    int32_t small[3] = {1, -2, 3};
    bs[8] = bind(lv[8], call1(m, "add", rx_n_const(m, mk_const(a, RX_DT_F32, 0, 0, &half, 4)),
                             rx_n_const(m, mk_const(a, RX_DT_I32, 1, 3, small, 12))));
    /* if c: lv9 = exp(lv8); lv10 = lv9 else: lv10 = lv8 */
    rx_seq *th = RX_NEW(a, rx_seq), *el = RX_NEW(a, rx_seq);
    rx_block *tb = RX_NEW(a, rx_block);
    tb->nbindings = 1;
    tb->bindings = RX_NEWN(a, rx_binding, 1);
    tb->bindings[0] = bind(lv[9], call1(m, "exp", lv[8], NULL));
    th->blocks = RX_NEWN(a, rx_block *, 1);
    th->blocks[0] = tb;
    th->nblocks = 1;
    th->result = lv[9];
    el->result = lv[8];
    bs[9] = bind(lv[10], rx_n_if(m, c, th, el));
    rx_block *blk = RX_NEW(a, rx_block);
    blk->bindings = bs;
    blk->nbindings = 10;
    g->body = RX_NEW(a, rx_seq);
    g->body->blocks = RX_NEWN(a, rx_block *, 1);
    g->body->blocks[0] = blk;
    g->body->nblocks = 1;
    g->body->result = lv[10];

    m->funcs = RX_NEWN(a, rx_func *, 3);
    m->funcs[0] = g;
    m->funcs[1] = sub;
    m->funcs[2] = build_k2(m);
    m->nfuncs = 3;
    return m;
}

static bool same_hash(const rx_module *x, const rx_module *y, const char *sx, const char *sy)
{
    uint8_t hx[32], hy[32];
    rx_struct_hash(x, sx, hx);
    rx_struct_hash(y, sy, hy);
    return memcmp(hx, hy, 32) == 0;
}

/* Builds base and v; asserts they differ (hash and equality) with a reason containing
 * `where`. */
#endif
