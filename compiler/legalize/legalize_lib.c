/*
 * legalize_lib.c — the op calls that legalize turns into runtime library calls on the
 * CPU instead of loop functions (legalize.c asks before its rules), because their
 * best form is not a tensor expression:
 *
 *   topk, sort, argsort  -> call_dps_library("rt.topk", x, params) (runtime/
 *                           library_sort.c: a radix sort or a selection per row, rows
 *                           over the threads). params i64 (3,) = axis, largest (sort /
 *                           argsort: descending), outputs (1 values, 2 indices, 3 both);
 *                           out = the call's annotation (a tuple for topk "both"). On a
 *                           GPU target: legalize_sort.c's loops (a rank sort).
 *   cumsum               -> call_dps_library("rt.cumsum", x, params) when x's dtype is
 *                           the result's and one of f32, f64, i32, i64 (runtime/
 *                           library_scan.c: a vectorized running sum, O(numel)); params
 *                           i64 (3,) = axis (-1: raveled), exclusive, reverse. Other
 *                           dtypes and GPU targets keep legalize_axis.c's rule.
 *   nn.group_norm        -> call_dps_library("rt.group_norm", x, gamma, beta, params) in
 *                           f32 / f64 (runtime/library_norm.c: per (n, group) block, two
 *                           passes of statistics and one of output, blocks over the
 *                           threads); params i64 (3,) = num_groups, flags (1 scale,
 *                           2 center), epsilon's f64 bits. Other targets: legalize_gnorm.c.
 *   image.resize2d       -> call_dps_library("rt.resize2d", x, params) for f32 NCHW,
 *                           nearest_neighbor or linear, coordinate modes but
 *                           tf_crop_and_resize (runtime/library_resize.c: index tables
 *                           per axis, rows resampled once and blended); params i64 (5,)
 *                           = method, mode, rounding (the MODES / ROUNDS indices), the h
 *                           and w scales as f32 bits (0: none). Cubic, other dtypes and
 *                           GPU targets keep legalize_image.c's loops.
 *   scatter_elements,    -> call_dps_library("rt.scatter", data, indices, updates, params)
 *   scatter_nd              when data, updates and the result share f32, f64, i32 or i64
 *                           (bool, u8: reduction update) and indices are i32 / i64
 *                           (runtime/library_scatter.c: a copy of data and one pass over
 *                           the updates, O(outputs + updates),
 *                           where the loops gather, O(outputs x updates)); params i64
 *                           (3,) = form (0 elements, 1 nd), axis, reduction (update, add,
 *                           mul, max, min). Other dtypes and GPU targets keep
 *                           legalize_axis.c's loops.
 *   matmul               -> call_dps_library("rt.qmatmul", A, B) when A and B are u8 or i8,
 *                           (a constant B: ("rt.qmatmul", A, packed B, params), B packed
 *                           here once in the kernel's layout, runtime/rt_qpack.h; params
 *                           i64 (3,) = k, n, B is u8),
 *                           the result i32, A of rank >= 2 and B (k, n) (runtime/
 *                           library_qgemm.c: packed 8-bit products, AVX-512 VNNI or AVX2,
 *                           exact modulo 2^32 as the loops; a quantized model's product,
 *                           onnx_quant.c). Other forms and GPU targets keep
 *                           legalize_linalg.c's loops.
 *   nn.conv2d            -> call_dps_library("rt.qconv2d", x, packed w, params) when x is
 *                           u8 or i8 NCHW, w a constant 8-bit OIHW weight, one group
 *                           (or depthwise: groups = C = Co, w's (kh kw, C) bytes and
 *                           params (12,) with the groups),
 *                           the result i32 (runtime/library_qconv.c: the convolution on
 *                           rt.qmatmul's tile kernels over channel-last im2col rows; a
 *                           quantized CNN's convolution, onnx_quant.c); w packed here
 *                           as the (kh kw C, Co) matrix B[(i kw + j) C + c, o] =
 *                           w[o, c, i, j] in rt_qpack.h's layout; params i64 (10,) = C,
 *                           kh, kw, strides h w, padding top and left (bottom and right
 *                           follow from the result's extents), dilations h w, w was u8.
 *                           Other forms and GPU targets keep legalize_nn.c's loops. At
 *                           opt level 2 library lowering takes such a convolution with
 *                           its requantization chain first (compiler/pass/
 *                           library_qconv_lower.c: the epilogue form, through
 *                           lg_qconv_form and lg_qconv_weight here).
 * The result's dims are the op's deduction (checked by legalize.c before); the library
 * reads k from the output's extent. Cost O(1) per call.
 */
#include <string.h>

#include "../../runtime/rt_qpack.h"
#include "legalize_int.h"

static const char *bare(const char *op) { return !strncmp(op, "relax.", 6) ? op + 6 : op; }

bool lg_lib_only(const char *op)
{
    op = bare(op);
    return !strcmp(op, "topk") || !strcmp(op, "sort") || !strcmp(op, "argsort");
}

static bool cumsum_lib(const rx_node *call)
{
    const rx_sinfo *x = call->args[0]->sinfo, *o = call->sinfo;
    if (!x || !o || x->kind != RX_SI_TENSOR || o->kind != RX_SI_TENSOR || x->dtype != o->dtype)
        return false;
    return o->dtype == RX_DT_F32 || o->dtype == RX_DT_F64 || o->dtype == RX_DT_I32 ||
           o->dtype == RX_DT_I64;
}

static const char *const MODES[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn"};
static const char *const ROUNDS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                     "round"};

static int index_of(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

/* image.resize2d that rt.resize2d takes: f32 NCHW in and out, nearest or linear, a
 * coordinate mode and rounding it knows. */
static bool resize_lib(const rx_node *call)
{
    const rx_sinfo *x = call->args[0]->sinfo, *o = call->sinfo;
    const char *m = rx_call_attr(call, "method")->u.s;
    if (!x || !o || x->kind != RX_SI_TENSOR || x->dtype != RX_DT_F32 || o->dtype != RX_DT_F32 ||
        x->ndim != 4 || strcmp(rx_call_attr(call, "layout")->u.s, "NCHW"))
        return false;
    if (strcmp(m, "linear") && strcmp(m, "nearest_neighbor")) return false;
    return index_of(MODES, RX_COUNTOF(MODES), rx_call_attr(call, "coordinate_transformation_mode")->u.s) >= 0 &&
           index_of(ROUNDS, RX_COUNTOF(ROUNDS), rx_call_attr(call, "rounding_method")->u.s) >= 0;
}

static const char *const REDUCTIONS[] = {"update", "add", "mul", "max", "min"};

/* scatter_elements / scatter_nd that rt.scatter takes (file essay). */
static bool scatter_lib(const rx_node *call)
{
    const rx_sinfo *x = call->args[0]->sinfo, *ind = call->args[1]->sinfo,
                   *up = call->args[2]->sinfo, *o = call->sinfo;
    if (!x || !ind || !up || !o || x->kind != RX_SI_TENSOR || ind->kind != RX_SI_TENSOR ||
        up->kind != RX_SI_TENSOR || o->kind != RX_SI_TENSOR || x->dtype != o->dtype ||
        up->dtype != o->dtype || (ind->dtype != RX_DT_I32 && ind->dtype != RX_DT_I64) ||
        x->ndim < 1)
        return false;
    const char *red = rx_call_attr(call, "reduction")->u.s;
    if (o->dtype == RX_DT_BOOL || o->dtype == RX_DT_U8) return !strcmp(red, "update");
    return (o->dtype == RX_DT_F32 || o->dtype == RX_DT_F64 || o->dtype == RX_DT_I32 ||
            o->dtype == RX_DT_I64) && index_of(REDUCTIONS, RX_COUNTOF(REDUCTIONS), red) >= 0;
}

static bool byte_int(const rx_sinfo *s)
{
    return s && s->kind == RX_SI_TENSOR && (s->dtype == RX_DT_U8 || s->dtype == RX_DT_I8);
}

/* matmul that rt.qmatmul takes (file essay). */
static bool qmatmul_lib(const rx_node *call)
{
    const rx_sinfo *a = call->args[0]->sinfo, *b = call->args[1]->sinfo, *o = call->sinfo;
    return byte_int(a) && byte_int(b) && o && o->kind == RX_SI_TENSOR && o->dtype == RX_DT_I32 &&
           a->ndim >= 2 && b->ndim == 2 && o->ndim == a->ndim;
}

/* The 1, 2 or 4 integers of conv attribute name (lg_attr_ints) spread to `want` values
 * (a pair per spatial axis, or padding's top, left, bottom, right); false when absent. */
static bool conv_attr(const rx_node *call, const char *name, int64_t *v, int want)
{
    int64_t raw[4];
    int n;
    lg_attr_ints(rx_call_attr(call, name), raw, 4, &n); /* deduction checked the counts */
    for (int i = 0; i < want && n >= 1; i++) v[i] = raw[i % n];
    return n >= 1;
}

static bool str_attr(const rx_node *call, const char *name, const char *want)
{
    const rx_attr *a = rx_call_attr(call, name);
    return a && a->kind == RX_A_STR && !strcmp(a->u.s, want);
}

/* nn.conv2d that rt.qconv2d takes (file essay): groups 1, or depthwise (groups = C =
 * Co); its params into p (12: C, kh, kw, strides, padding top and left, dilation, weight
 * u8, pad value 0, groups) when p. */
bool lg_qconv_form(const rx_node *call, int64_t *p)
{
    const rx_sinfo *x = call->args[0]->sinfo, *o = call->sinfo;
    const rx_node *w = call->args[1];
    const rx_attr *g = rx_call_attr(call, "groups");
    int64_t st[2], pd[4], dl[2];
    if (call->nargs != 2 || !byte_int(x) || x->ndim != 4 || !o || o->kind != RX_SI_TENSOR ||
        o->dtype != RX_DT_I32 || o->ndim != 4 || w->kind != RX_N_CONST || !w->u.konst->data ||
        w->u.konst->ndim != 4 || (w->u.konst->dtype != RX_DT_U8 && w->u.konst->dtype != RX_DT_I8) ||
        !g || g->kind != RX_A_INT || !str_attr(call, "data_layout", "NCHW") ||
        !str_attr(call, "kernel_layout", "OIHW") || !conv_attr(call, "strides", st, 2) ||
        !conv_attr(call, "padding", pd, 4) || !conv_attr(call, "dilation", dl, 2))
        return false;
    const int64_t *ws = w->u.konst->shape;
    if (g->u.i != 1 && (g->u.i != ws[0] || ws[1] != 1 || !x->dims || !rx_expr_is_int(x->dims[1], g->u.i)))
        return false;
    if (p) {
        int64_t v[12] = {ws[1] * g->u.i, ws[2], ws[3], st[0], st[1], pd[0], pd[1], dl[0], dl[1],
                         w->u.konst->dtype == RX_DT_U8, 0, g->u.i};
        memcpy(p, v, sizeof v);
    }
    return true;
}

int lg_lib_form(const rx_node *call, bool device)
{
    const char *op = call->u.call.op->name;
    if (lg_lib_only(op)) return device ? 0 : 1; /* GPU: legalize_sort.c's rank sort */
    if (!strcmp(bare(op), "cumsum") && !device && cumsum_lib(call)) return 1;
    if (!strcmp(bare(op), "nn.group_norm") && !device && call->sinfo &&
        (call->sinfo->dtype == RX_DT_F32 || call->sinfo->dtype == RX_DT_F64))
        return 1;
    if (!strcmp(bare(op), "image.resize2d") && !device && resize_lib(call)) return 1;
    if (!strcmp(bare(op), "matmul") && !device && qmatmul_lib(call)) return 1;
    if (!strcmp(bare(op), "nn.conv2d") && !device && lg_qconv_form(call, NULL)) return 1;
    if ((!strcmp(bare(op), "scatter_elements") || !strcmp(bare(op), "scatter_nd")) && !device &&
        scatter_lib(call))
        return 1;
    return 0;
}

rx_node *lg_i64_const(rx_module *m, const int64_t *p, int n)
{
    rx_const *k = RX_NEW(m->arena, rx_const);
    int64_t *shape = RX_NEWN(m->arena, int64_t, 1);
    uint8_t *bytes = RX_NEWN(m->arena, uint8_t, 8 * (size_t)n);
    shape[0] = n;
    for (int i = 0; i < 8 * n; i++) bytes[i] = (uint8_t)((uint64_t)p[i / 8] >> (8 * (i % 8)));
    *k = (rx_const){NULL, RX_DT_I64, 1, shape, bytes, 8 * (size_t)n, 0};
    rx_node *kn = rx_n_const(m, k);
    rx_expr *d = rx_e_int(m->arena, n);
    kn->sinfo = rx_si_tensor(m->arena, RX_DT_I64, 1, &d);
    return kn;
}

/* Constant 8-bit weight w (k, n) in rt.qmatmul's packed layout (runtime/rt_qpack.h) as
 * a new u8 constant: packed once here, not per call. */
static rx_node *packed_weight(rx_module *m, const rx_const *w)
{
    int64_t k = w->shape[0], n = w->shape[1], bytes = rx_qpack_bytes(k, n);
    rx_const *pk = RX_NEW(m->arena, rx_const);
    int64_t *shape = RX_NEWN(m->arena, int64_t, 1);
    uint8_t *data = RX_NEWN(m->arena, uint8_t, (size_t)bytes);
    shape[0] = bytes;
    rx_qpack(w->data, k, n, w->dtype == RX_DT_U8 ? 0x80 : 0, data);
    *pk = (rx_const){NULL, RX_DT_U8, 1, shape, data, (size_t)bytes, 0};
    rx_node *kn = rx_n_const(m, pk);
    rx_expr *d = rx_e_int(m->arena, bytes);
    kn->sinfo = rx_si_tensor(m->arena, RX_DT_U8, 1, &d);
    return kn;
}

/* Constant 8-bit weight w (Co, C, kh, kw) as rt.qconv2d's matrix B[(i kw + j) C + c, o]
 * in the packed layout (runtime/rt_qpack.h): a new u8 constant. Depthwise (groups > 1:
 * (C, 1, kh, kw)): the bytes (kh kw, C) unpacked, B[(i kw + j) C + c] = W[c, 0, i, j]. */
rx_node *lg_qconv_weight(rx_module *m, const rx_const *w, int64_t groups)
{
    int64_t co = w->shape[0], c = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t k = kh * kw * c;
    if (groups != 1) {
        rx_const *dk = RX_NEW(m->arena, rx_const);
        int64_t *shape = RX_NEWN(m->arena, int64_t, 1);
        uint8_t *data = RX_NEWN(m->arena, uint8_t, (size_t)(kh * kw * co));
        shape[0] = kh * kw * co;
        for (int64_t o = 0; o < co; o++)
            for (int64_t t = 0; t < kh * kw; t++) data[t * co + o] = w->data[o * kh * kw + t];
        *dk = (rx_const){NULL, RX_DT_U8, 1, shape, data, (size_t)shape[0], 0};
        rx_node *kn = rx_n_const(m, dk);
        rx_expr *d = rx_e_int(m->arena, shape[0]);
        kn->sinfo = rx_si_tensor(m->arena, RX_DT_U8, 1, &d);
        return kn;
    }
    uint8_t *b = RX_NEWN(m->arena, uint8_t, (size_t)(k * co));
    for (int64_t o = 0; o < co; o++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t i = 0; i < kh; i++)
                for (int64_t j = 0; j < kw; j++)
                    b[((i * kw + j) * c + ci) * co + o] = w->data[((o * c + ci) * kh + i) * kw + j];
    rx_const mat = {NULL, w->dtype, 2, (int64_t[]){k, co}, b, (size_t)(k * co), 0};
    return packed_weight(m, &mat);
}

/* The axis attribute normalized against x's rank (the deduction checked it). */
static int64_t norm_axis(const rx_node *call, const char *name)
{
    const rx_attr *a = rx_call_attr(call, name);
    if (a->kind == RX_A_NULL) return -1;
    int nd = call->args[0]->sinfo->ndim;
    return a->u.i < 0 ? a->u.i + nd : a->u.i;
}

rx_node *lg_lib_call(rx_module *m, rx_node *call)
{
    const char *op = bare(call->u.call.op->name), *lib;
    int64_t p[3];
    if (!strcmp(op, "matmul")) {
        rx_node **qa = RX_NEWN(m->arena, rx_node *, 3);
        qa[0] = call->args[0];
        qa[1] = call->args[1];
        const rx_node *b = call->args[1];
        int nq = 2;
        if (b->kind == RX_N_CONST && b->u.konst->data && b->u.konst->ndim == 2) {
            const rx_const *bk = b->u.konst;
            int64_t kn[3] = {bk->shape[0], bk->shape[1], bk->dtype == RX_DT_U8};
            qa[1] = packed_weight(m, bk);
            qa[2] = lg_i64_const(m, kn, 3);
            nq = 3;
        }
        rx_node *n = rx_n_call_lib(m, "rt.qmatmul", qa, nq, call->sinfo);
        n->sinfo = call->sinfo;
        n->loc = call->loc;
        return n;
    }
    if (!strcmp(op, "nn.conv2d")) {
        int64_t qp[12];
        rx_node **qa = RX_NEWN(m->arena, rx_node *, 3);
        lg_qconv_form(call, qp);
        qa[0] = call->args[0];
        qa[1] = lg_qconv_weight(m, call->args[1]->u.konst, qp[11]);
        qa[2] = lg_i64_const(m, qp, qp[11] != 1 ? 12 : 10);
        rx_node *n = rx_n_call_lib(m, "rt.qconv2d", qa, 3, call->sinfo);
        n->sinfo = call->sinfo;
        n->loc = call->loc;
        return n;
    }
    if (!strcmp(op, "nn.group_norm") || !strcmp(op, "image.resize2d")) {
        lib = ""; /* params below */
    } else if (!strcmp(op, "scatter_elements") || !strcmp(op, "scatter_nd")) {
        lib = "rt.scatter";
        p[0] = !strcmp(op, "scatter_nd");
        p[1] = p[0] ? 0 : norm_axis(call, "axis");
        p[2] = index_of(REDUCTIONS, RX_COUNTOF(REDUCTIONS), rx_call_attr(call, "reduction")->u.s);
    } else if (!strcmp(op, "cumsum")) {
        lib = "rt.cumsum";
        p[0] = norm_axis(call, "axis");
        p[1] = rx_call_attr(call, "exclusive")->u.b;
        p[2] = rx_call_attr(call, "reverse")->u.b;
    } else {
        lib = "rt.topk";
        p[0] = norm_axis(call, "axis");
        if (!strcmp(op, "topk")) {
            const char *rt = rx_call_attr(call, "ret_type")->u.s;
            p[1] = rx_call_attr(call, "largest")->u.b;
            p[2] = !strcmp(rt, "both") ? 3 : !strcmp(rt, "values") ? 1 : 2;
        } else {
            p[1] = rx_call_attr(call, "descending")->u.b;
            p[2] = !strcmp(op, "sort") ? 1 : 2;
        }
    }
    rx_node **args = RX_NEWN(m->arena, rx_node *, 4);
    int nargs = 2;
    args[0] = call->args[0];
    if (!strcmp(op, "scatter_elements") || !strcmp(op, "scatter_nd")) {
        args[1] = call->args[1];
        args[2] = call->args[2];
        nargs = 4;
    }
    if (!strcmp(op, "nn.group_norm")) {
        lib = "rt.group_norm";
        double eps = rx_call_attr(call, "epsilon")->u.f;
        p[0] = rx_call_attr(call, "num_groups")->u.i;
        p[1] = rx_call_attr(call, "scale")->u.b | 2 * rx_call_attr(call, "center")->u.b;
        memcpy(&p[2], &eps, 8);
        args[1] = call->args[1];
        args[2] = call->args[2];
        nargs = 4;
    }
    int np = 3;
    int64_t rp[5];
    if (!strcmp(op, "image.resize2d")) {
        const rx_attr *sc = rx_call_attr(call, "scales");
        lib = "rt.resize2d";
        rp[0] = !strcmp(rx_call_attr(call, "method")->u.s, "linear");
        rp[1] = index_of(MODES, RX_COUNTOF(MODES), rx_call_attr(call, "coordinate_transformation_mode")->u.s);
        rp[2] = index_of(ROUNDS, RX_COUNTOF(ROUNDS), rx_call_attr(call, "rounding_method")->u.s);
        for (int i = 0; i < 2; i++) { /* f32 bits, as the loops' f32 constant; 0: O / D */
            float f = sc->kind == RX_A_NULL ? 0.0f : (float)sc->u.arr.items[i]->u.f;
            uint32_t u;
            memcpy(&u, &f, 4);
            rp[3 + i] = u;
        }
        np = 5;
    }
    args[nargs - 1] = lg_i64_const(m, np == 5 ? rp : p, np);
    rx_node *n = rx_n_call_lib(m, lib, args, nargs, call->sinfo);
    n->sinfo = call->sinfo;
    n->loc = call->loc;
    return n;
}
