/*
 * legalize_rnn.c — nn.rnn (ONNX's LSTM / GRU / RNN recurrence, docs/ops.md) as one loop
 * function with a serial time loop: the form for every target and float dtype, used
 * where the CPU library rt.rnn (runtime/library_rnn.c, f32 on CPU memory) cannot run:
 * GPU targets (opencl, vulkan, cuda) and f64 (legalize.c decides).
 *
 *   nn_rnn(X (T, B, I), W (D, GH, I), R (D, GH, H), Bb (D, 2GH), H0, C0 (D, B, H),
 *          P (D, 3H)) -> Y (T+2, D, B, H), XG (T, D, B, GH), RG (D, B, GH)[, RH (D, B, H)]
 *
 * D, G and H are literals (hidden_size is an attribute of the ONNX node; legalization
 * fails with a located error otherwise); T, B and I are the caller's dims (a symbolic
 * dim becomes a shape variable the call binds). XG, RG and RH are workspaces: extra
 * outputs of the call_tir (a tuple `out` of which the graph keeps field 0, as
 * lift_workspace makes of an ALLOC), so memory planning reuses their bytes and the GPU
 * schedules never see an allocation. The hidden state lives in Y's row T and the cell
 * state in row T+1, which is where the result wants them after the last step.
 *
 * Step 1: Y[T] = H0 (and Y[T+1] = C0 for LSTM).
 * Step 2: XG[t, d, b, j] = Bb[d, j] (+ Bb[d, GH + j], the recurrent bias folded, for
 *         every gate but GRU's h gate with linear_before_reset) + sum_k X[t, b, k] *
 *         W[d, j, k]: the input's share of every gate for all steps, one product.
 * Step 3: a serial loop over the steps s; direction d reads time td = s (forward) or
 *         T - 1 - s (reverse; bidirectional: d = 1). Its body statements, each one
 *         nest over (d, b, unit) and so one grid kernel (a GPU host loop, docs/gpu.md:
 *         one launch per step and statement):
 *           RG[d, b, j] = sum_k Y[T, d, b, k] * R[d, j, k]        (GRU without
 *             linear_before_reset: the z and r gates only, then RH = r * h and
 *             RG's h gate = RH @ Rh^T)
 *           LSTM: Y[T+1] = f * c + i * g (c the old cell, peepholes on c), then
 *             Y[td] = o * tanh(Y[T+1]) (o's peephole on the new cell);
 *           GRU: Y[td] = (1 - z) * h~ + z * Y[T];  RNN: Y[td] = tanh or relu(...);
 *           Y[T] = Y[td] (the next step's state).
 * Step 4: for GRU and RNN, Y[T+1] = Y[T] (the op's contract: the last state again).
 * Blocks take the nest's own loops as iterators, never the step variable, so a
 * reduction's init runs again at every step. The arithmetic is the op's dtype
 * throughout (f64 stays f64). Cost: O(T B G H (I + H)), the products done as
 * straightforward reductions (GPU: grid work-items of one output each).
 */
#include <string.h>

#include "legalize_int.h"

enum { M_LSTM, M_GRU, M_TANH, M_RELU };
enum { D_FWD, D_REV, D_BI };

typedef struct rb {
    lg_ctx *c;
    rx_arena *a;
    rx_dtype dt;
    int mode, dir;
    bool lbr;
    int64_t D, G, H;
    rx_expr *T, *B, *I;     /* function-level: a literal or a shape variable */
    rx_buffer *X, *W, *R, *Bb, *H0, *C0, *P, *Y, *XG, *RG, *RH;
    RX_VEC(const rx_svar *) svars;
    const rx_svar *s;       /* the step */
} rb;

static rx_expr *lit(rb *r, int64_t v) { return rx_e_int(r->a, v); }
static rx_expr *fl(rb *r, double v) { return rx_e_float(r->a, v, r->dt); }
static rx_expr *bin(rb *r, rx_ekind k, rx_expr *x, rx_expr *y) { return rx_e_binary(r->a, k, x, y); }
static rx_expr *add(rb *r, rx_expr *x, rx_expr *y) { return bin(r, RX_E_ADD, x, y); }
static rx_expr *mul(rb *r, rx_expr *x, rx_expr *y) { return bin(r, RX_E_MUL, x, y); }
static rx_expr *fn(rb *r, rx_intrin f, rx_expr *x) { return rx_e_call(r->a, f, &x, 1, r->dt); }
static rx_expr *ev(rb *r, const rx_svar *v) { return rx_e_var(r->a, v); }

static rx_svar *loopvar(rb *r, const char *name)
{
    return rx_svar_new(r->a, name, RX_DT_I64, RX_SV_LOOP, rx_module_new_id(r->c->m));
}

static rx_buffer *buffer(rb *r, const char *name, int ndim, rx_expr *const *shape)
{
    rx_buffer *b = RX_NEW(r->a, rx_buffer);
    b->name = name;
    b->dtype = r->dt;
    b->ndim = ndim;
    b->shape = RX_NEWN(r->a, rx_expr *, ndim);
    for (int i = 0; i < ndim; i++) b->shape[i] = shape[i];
    b->scope = RX_SCOPE_GLOBAL;
    b->id = rx_module_new_id(r->c->m);
    return b;
}

/* A caller dim as the function sees it: its literal, or a fresh shape variable. */
static rx_expr *func_dim(rb *r, rx_expr *caller, const char *name)
{
    int64_t v;
    if (rx_expr_is_const(caller, &v)) return lit(r, v);
    rx_svar *sv = rx_svar_new(r->a, name, RX_DT_I64, RX_SV_SHAPE, rx_module_new_id(r->c->m));
    RX_VEC_PUSH(r->svars, sv);
    return ev(r, sv);
}

static rx_expr *ld(rb *r, rx_buffer *b, rx_expr *i0, rx_expr *i1, rx_expr *i2, rx_expr *i3)
{
    rx_expr *idx[4] = {i0, i1, i2, i3};
    return rx_e_load(r->a, b, idx, b->ndim);
}

/* A nest of n loops over [0, ext[k]) (the last nred of them reduce loops) around one
 * block storing val into b[idx] (init, when not NULL, at the reduction's start), whose
 * iterators v[k] (what idx, init and val use) are bound to the loops' own variables:
 * explicit iterators, since the step variable is not one of them, which relax-json
 * writes and reads back as they are. */
typedef struct nest_spec {
    const char *name;
    int n, nred;
    const rx_svar *v[5];
    rx_expr *ext[5];
    rx_buffer *b;
    rx_expr *idx[4];
    rx_expr *init, *val;    /* a reduction stores b[idx] + val */
} nest_spec;

static rx_stmt *nest(rb *r, const nest_spec *ns)
{
    rx_arena *a = r->a;
    rx_stmt *s = rx_s_block(a, ns->name, RX_NEWN(a, rx_iter, ns->n), ns->n, (rx_stmts){0},
                            (rx_stmts){0});
    const rx_svar *lv[5];
    for (int k = 0; k < ns->n; k++) {
        lv[k] = loopvar(r, rx_arena_printf(a, "%s0", ns->v[k]->name));
        rx_iter *it = &s->u.block.iters[k];
        it->var = ns->v[k];
        it->kind = k < ns->n - ns->nred ? RX_ITER_SPATIAL : RX_ITER_REDUCE;
        it->dom = ns->ext[k];
        it->bind = ev(r, lv[k]);
    }
    rx_expr **idx = RX_NEWN(a, rx_expr *, ns->b->ndim); /* the store keeps the array */
    for (int k = 0; k < ns->b->ndim; k++) idx[k] = ns->idx[k];
    rx_expr *val = ns->val;
    if (ns->init) {
        s->u.block.init = rx_stmts_one(a, rx_s_store(a, ns->b, idx, ns->b->ndim, ns->init));
        val = add(r, rx_e_load(a, ns->b, idx, ns->b->ndim), val);
    }
    s->u.block.body = rx_stmts_one(a, rx_s_store(a, ns->b, idx, ns->b->ndim, val));
    for (int k = ns->n - 1; k >= 0; k--)
        s = rx_s_for(a, lv[k], lit(r, 0), ns->ext[k], RX_LOOP_SERIAL, rx_stmts_one(a, s));
    return s;
}


/* The time direction d reads at step s: s, T - 1 - s, or (bidirectional) by d. */
static rx_expr *td(rb *r, rx_expr *d)
{
    rx_expr *s = ev(r, r->s), *back = bin(r, RX_E_SUB, bin(r, RX_E_SUB, r->T, lit(r, 1)), s);
    if (r->dir == D_FWD) return s;
    if (r->dir == D_REV) return back;
    return add(r, s, mul(r, d, bin(r, RX_E_SUB, back, s)));
}

/* Gate g's pre-activation at unit u: the input's share (biases included) + the
 * recurrent product. */
static rx_expr *pre(rb *r, rx_expr *d, rx_expr *b, rx_expr *u, int g)
{
    rx_expr *j = add(r, lit(r, g * r->H), u);
    return add(r, ld(r, r->XG, td(r, d), d, b, j), ld(r, r->RG, d, b, j, NULL));
}

/* P[d, g * H + u] * c: an LSTM peephole. */
static rx_expr *peep(rb *r, rx_expr *d, rx_expr *u, int g, rx_expr *c)
{
    return mul(r, ld(r, r->P, d, add(r, lit(r, g * r->H), u), NULL, NULL), c);
}

enum { ROW_T, ROW_C, ROW_TD, ROW_NONE };       /* Y's row: state, cell, the step's time */
enum { V_H0, V_C0, V_CELL, V_HID, V_RH, V_TD, V_T }; /* what a unit nest stores */

static rx_expr *row(rb *r, int which, rx_expr *d)
{
    return which == ROW_T ? r->T : which == ROW_C ? add(r, r->T, lit(r, 1)) : td(r, d);
}

static rx_expr *unit_value(rb *r, int what, rx_expr *d, rx_expr *b, rx_expr *u)
{
    rx_expr *one = fl(r, 1.0);
    rx_expr *h = ld(r, r->Y, r->T, d, b, u), *c = ld(r, r->Y, row(r, ROW_C, d), d, b, u);
    switch (what) {
    case V_H0: return ld(r, r->H0, d, b, u, NULL);
    case V_C0: return ld(r, r->C0, d, b, u, NULL);
    case V_TD: return ld(r, r->Y, td(r, d), d, b, u);
    case V_T: return h;
    case V_CELL: { /* LSTM: f * c + i * g, gates i o f c */
        rx_expr *i = fn(r, RX_FN_SIGMOID, add(r, pre(r, d, b, u, 0), peep(r, d, u, 0, c)));
        rx_expr *f = fn(r, RX_FN_SIGMOID, add(r, pre(r, d, b, u, 2), peep(r, d, u, 2, c)));
        return add(r, mul(r, f, c), mul(r, i, fn(r, RX_FN_TANH, pre(r, d, b, u, 3))));
    }
    case V_RH: /* GRU without linear_before_reset: r * h */
        return mul(r, fn(r, RX_FN_SIGMOID, pre(r, d, b, u, 1)), h);
    default: break;
    }
    switch (r->mode) { /* V_HID */
    case M_LSTM: /* c is the new cell here */
        return mul(r, fn(r, RX_FN_SIGMOID, add(r, pre(r, d, b, u, 1), peep(r, d, u, 1, c))),
                   fn(r, RX_FN_TANH, c));
    case M_GRU: {
        rx_expr *z = fn(r, RX_FN_SIGMOID, pre(r, d, b, u, 0)), *ht;
        if (r->lbr) {
            rx_expr *j = add(r, lit(r, 2 * r->H), u);
            rx_expr *rh = add(r, ld(r, r->RG, d, b, j, NULL),
                              ld(r, r->Bb, d, add(r, lit(r, r->G * r->H), j), NULL, NULL));
            rx_expr *rr = fn(r, RX_FN_SIGMOID, pre(r, d, b, u, 1));
            ht = add(r, ld(r, r->XG, td(r, d), d, b, j), mul(r, rr, rh));
        } else {
            ht = pre(r, d, b, u, 2);
        }
        ht = fn(r, RX_FN_TANH, ht);
        return add(r, mul(r, bin(r, RX_E_SUB, one, z), ht), mul(r, z, h));
    }
    case M_TANH: return fn(r, RX_FN_TANH, pre(r, d, b, u, 0));
    default: return bin(r, RX_E_MAX, pre(r, d, b, u, 0), fl(r, 0.0));
    }
}

/* buf[row, d, b, u] (buf[d, b, u] for ROW_NONE) = what, over (d, b, u). */
static rx_stmt *unit_nest(rb *r, const char *name, rx_buffer *buf, int rowk, int what)
{
    nest_spec ns = {name, 3, 0, {loopvar(r, "d"), loopvar(r, "b"), loopvar(r, "u")},
                    {lit(r, r->D), r->B, lit(r, r->H)}, buf, {0}, NULL, NULL};
    rx_expr *d = ev(r, ns.v[0]), *b = ev(r, ns.v[1]), *u = ev(r, ns.v[2]);
    int k = 0;
    if (rowk != ROW_NONE) ns.idx[k++] = row(r, rowk, d);
    ns.idx[k++] = d, ns.idx[k++] = b, ns.idx[k] = u;
    ns.val = unit_value(r, what, d, b, u);
    return nest(r, &ns);
}

/* XG[t, d, b, j] = biases + sum_k X[t, b, k] * W[d, j, k]. */
static rx_stmt *input_gates(rb *r)
{
    int64_t gh = r->G * r->H;
    nest_spec ns = {"xgates", 5, 1,
                    {loopvar(r, "t"), loopvar(r, "d"), loopvar(r, "b"), loopvar(r, "j"), loopvar(r, "k")},
                    {r->T, lit(r, r->D), r->B, lit(r, gh), r->I}, r->XG, {0}, NULL, NULL};
    rx_expr *t = ev(r, ns.v[0]), *d = ev(r, ns.v[1]), *b = ev(r, ns.v[2]), *j = ev(r, ns.v[3]),
            *k = ev(r, ns.v[4]);
    ns.idx[0] = t, ns.idx[1] = d, ns.idx[2] = b, ns.idx[3] = j;
    rx_expr *rb_ = ld(r, r->Bb, d, add(r, lit(r, gh), j), NULL, NULL);
    if (r->mode == M_GRU && r->lbr) /* h's recurrent bias stays inside r * (...) */
        rb_ = rx_e_select(r->a, bin(r, RX_E_LT, j, lit(r, 2 * r->H)), rb_, fl(r, 0.0));
    ns.init = add(r, ld(r, r->Bb, d, j, NULL, NULL), rb_);
    ns.val = mul(r, ld(r, r->X, t, b, k, NULL), ld(r, r->W, d, j, k, NULL));
    return nest(r, &ns);
}

/* RG[d, b, j0 + j] = sum_k S[d, b, k] * R[d, j0 + j, k] for j < nj (S: Y's state row,
 * or RH). */
static rx_stmt *rec_gates(rb *r, int64_t j0, int64_t nj, rx_buffer *src)
{
    nest_spec ns = {"rgates", 4, 1, {loopvar(r, "d"), loopvar(r, "b"), loopvar(r, "j"), loopvar(r, "k")},
                    {lit(r, r->D), r->B, lit(r, nj), lit(r, r->H)}, r->RG, {0}, NULL, NULL};
    rx_expr *d = ev(r, ns.v[0]), *b = ev(r, ns.v[1]), *j = add(r, lit(r, j0), ev(r, ns.v[2])),
            *k = ev(r, ns.v[3]);
    if (j0 == 0) j = ev(r, ns.v[2]);
    ns.idx[0] = d, ns.idx[1] = b, ns.idx[2] = j;
    rx_expr *sv = src == r->Y ? ld(r, r->Y, r->T, d, b, k) : ld(r, src, d, b, k, NULL);
    ns.init = fl(r, 0.0);
    ns.val = mul(r, sv, ld(r, r->R, d, j, k, NULL));
    return nest(r, &ns);
}

/* The caller's dims of nn.rnn's operand i; NULL after lg_fail. */
static const rx_sinfo *operand(lg_ctx *c, int i, rx_dtype dt)
{
    const rx_sinfo *s = c->call->args[i]->sinfo;
    if (!s || s->kind != RX_SI_TENSOR || !s->dims || s->dtype != dt) {
        lg_fail(c, "argument %d must be a %s tensor of known dims", i, rx_dtype_name(dt));
        return NULL;
    }
    return s;
}

bool lg_rnn(lg_ctx *c, rx_func **out_fn, rx_sinfo **out)
{
    static const char *const modes[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    const rx_node *call = c->call;
    rb r = {0};
    r.c = c, r.a = c->a, r.dt = (rx_dtype)call->sinfo->dtype;
    const char *mode = rx_call_attr(call, "mode")->u.s, *dir = rx_call_attr(call, "direction")->u.s;
    for (int i = 0; i < 4; i++)
        if (!strcmp(mode, modes[i])) r.mode = i;
    for (int i = 0; i < 3; i++)
        if (!strcmp(dir, dirs[i])) r.dir = i;
    r.lbr = rx_call_attr(call, "linear_before_reset")->u.b;
    r.G = r.mode == M_LSTM ? 4 : r.mode == M_GRU ? 3 : 1;
    const rx_sinfo *s[7];
    for (int i = 0; i < 7; i++)
        if (!(s[i] = operand(c, i, r.dt))) return false;
    if (!rx_expr_is_const(s[2]->dims[0], &r.D) || !rx_expr_is_const(s[2]->dims[2], &r.H))
        return lg_fail(c, "r's directions and hidden size must be literals, found %s",
                       rx_sinfo_str(c->a, s[2]));
    for (int i = 0; i < 7; i++) RX_VEC_PUSH(c->args, call->args[i]);
    r.T = func_dim(&r, s[0]->dims[0], "T");
    r.B = func_dim(&r, s[0]->dims[1], "B");
    r.I = func_dim(&r, s[0]->dims[2], "I");
    rx_expr *D = lit(&r, r.D), *H = lit(&r, r.H), *GH = lit(&r, r.G * r.H);
    rx_expr *sx[3] = {r.T, r.B, r.I}, *sw[3] = {D, GH, r.I}, *sr[3] = {D, GH, H},
            *sb[2] = {D, lit(&r, 2 * r.G * r.H)}, *sh[3] = {D, r.B, H}, *sp[2] = {D, lit(&r, 3 * r.H)},
            *sy[4] = {add(&r, r.T, lit(&r, 2)), D, r.B, H}, *sxg[4] = {r.T, D, r.B, GH},
            *srg[3] = {D, r.B, GH};
    r.X = buffer(&r, "X", 3, sx), r.W = buffer(&r, "W", 3, sw), r.R = buffer(&r, "R", 3, sr);
    r.Bb = buffer(&r, "Bias", 2, sb), r.H0 = buffer(&r, "H0", 3, sh), r.C0 = buffer(&r, "C0", 3, sh);
    r.P = buffer(&r, "P", 2, sp), r.Y = buffer(&r, "Y", 4, sy), r.XG = buffer(&r, "XG", 4, sxg);
    r.RG = buffer(&r, "RG", 3, srg);
    bool two = r.mode == M_GRU && !r.lbr; /* r * h before the h gate's product */
    if (two) r.RH = buffer(&r, "RH", 3, sh);

    /* Steps 1-4. */
    rx_stmt *body[8], *step[6];
    int n = 0, ns = 0;
    body[n++] = unit_nest(&r, "h0", r.Y, ROW_T, V_H0);
    if (r.mode == M_LSTM) body[n++] = unit_nest(&r, "c0", r.Y, ROW_C, V_C0);
    body[n++] = input_gates(&r);
    r.s = loopvar(&r, "s");
    step[ns++] = rec_gates(&r, 0, two ? 2 * r.H : r.G * r.H, r.Y);
    if (two) {
        step[ns++] = unit_nest(&r, "rh", r.RH, ROW_NONE, V_RH);
        step[ns++] = rec_gates(&r, 2 * r.H, r.H, r.RH);
    }
    if (r.mode == M_LSTM) step[ns++] = unit_nest(&r, "cell", r.Y, ROW_C, V_CELL);
    step[ns++] = unit_nest(&r, "hidden", r.Y, ROW_TD, V_HID);
    step[ns++] = unit_nest(&r, "state", r.Y, ROW_T, V_TD);
    body[n++] = rx_s_for(r.a, r.s, lit(&r, 0), r.T, RX_LOOP_SERIAL, rx_stmts_of(r.a, step, ns));
    if (r.mode != M_LSTM) body[n++] = unit_nest(&r, "last", r.Y, ROW_C, V_T);

    rx_buffer *params[11] = {r.X, r.W, r.R, r.Bb, r.H0, r.C0, r.P, r.Y, r.XG, r.RG, r.RH};
    int np = two ? 11 : 10;
    rx_func *f = RX_NEW(r.a, rx_func);
    f->kind = RX_F_TIR;
    f->name = "";
    f->nsvars = r.svars.n;
    f->svars = RX_NEWN(r.a, const rx_svar *, r.svars.n > 0 ? r.svars.n : 1);
    for (int i = 0; i < r.svars.n; i++) f->svars[i] = r.svars.items[i];
    f->ntparams = np;
    f->tparams = RX_NEWN(r.a, rx_tparam, np);
    for (int i = 0; i < np; i++) f->tparams[i].buf = params[i];
    f->tbody = rx_stmts_of(r.a, body, n);
    f->nouts = -1;
    RX_VEC_FREE(r.svars);

    rx_expr *Tc = s[0]->dims[0], *Bc = s[0]->dims[1];
    rx_expr *cxg[4] = {Tc, D, Bc, GH}, *crg[3] = {D, Bc, GH}, *crh[3] = {D, Bc, H};
    rx_sinfo *fields[4] = {call->sinfo, rx_si_tensor(r.a, r.dt, 4, cxg),
                           rx_si_tensor(r.a, r.dt, 3, crg), rx_si_tensor(r.a, r.dt, 3, crh)};
    *out_fn = f;
    *out = rx_si_tuple(r.a, fields, two ? 4 : 3);
    return true;
}
