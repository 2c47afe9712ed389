/*
 * test_numeric_nn.c — legalized kernels of variance, the normalizations, conv2d, the
 * pools, concat/split/strided_slice/take and repeat/tile/tril/triu/arange against
 * NumPy (numeric_harness.h: one compiled kernel per case, run at n = 3, m = 5 and at
 * n = 6, m = 2).
 *
 * NumPy has no conv2d or pooling, so the prelude below defines plain reference
 * implementations written from the definitions (explicit windows, np.pad), not from
 * the rules' formulas: conv2d (groups, dilation, 4-sided padding), pool2d (max; avg
 * counting valid elements or the written padding; ceil_mode extents) and the
 * adaptive average pool's floor/ceil windows. take's random indices go out of range,
 * so its cases use mode "clip" (take_ref: negative indices from the end, then clipped)
 * and "wrap" (np.take's mode="wrap"); the default mode's error is tested end to end
 * (tests/e2e/test_bounds_e2e.py). Spatial dims such
 * as `n + 4` make n a scalar parameter of the kernel (tir_vars).
 */
#include "numeric_harness.h"

static const char PRELUDE[] =
    "def conv2d_ref(x, w, s=(1, 1), p=(0, 0, 0, 0), dl=(1, 1), g=1):\n"
    "    x = x.astype(np.float64); w = w.astype(np.float64)\n"
    "    n, c, h, wd = x.shape; o, i, kh, kw = w.shape\n"
    "    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))\n"
    "    oh = (h + p[0] + p[2] - dl[0] * (kh - 1) - 1) // s[0] + 1\n"
    "    ow = (wd + p[1] + p[3] - dl[1] * (kw - 1) - 1) // s[1] + 1\n"
    "    out = np.zeros((n, o, oh, ow))\n"
    "    for oc in range(o):\n"
    "        c0 = (oc // (o // g)) * i\n"
    "        for y in range(oh):\n"
    "            for z in range(ow):\n"
    "                win = xp[:, c0:c0 + i, y * s[0]:y * s[0] + dl[0] * (kh - 1) + 1:dl[0],\n"
    "                         z * s[1]:z * s[1] + dl[1] * (kw - 1) + 1:dl[1]]\n"
    "                out[:, oc, y, z] = (win * w[oc][None]).sum(axis=(1, 2, 3))\n"
    "    return out\n"
    "def pool_ref(x, k, s=(1, 1), p=(0, 0, 0, 0), dl=(1, 1), ceil=False, mode='max', cip=False):\n"
    "    n, c, h, wd = x.shape\n"
    "    def ext(size, k, s, a, b, d):\n"
    "        return (size + a + b - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1\n"
    "    oh, ow = ext(h, k[0], s[0], p[0], p[2], dl[0]), ext(wd, k[1], s[1], p[1], p[3], dl[1])\n"
    "    out = np.zeros((n, c, oh, ow), dtype=np.float64)\n"
    "    for y in range(oh):\n"
    "        for z in range(ow):\n"
    "            ys = [y * s[0] + t * dl[0] - p[0] for t in range(k[0])]\n"
    "            zs = [z * s[1] + t * dl[1] - p[1] for t in range(k[1])]\n"
    "            vy = [t for t in ys if 0 <= t < h]; vz = [t for t in zs if 0 <= t < wd]\n"
    "            win = x[:, :, vy][:, :, :, vz].astype(np.float64)\n"
    "            if mode == 'max':\n"
    "                out[:, :, y, z] = win.max(axis=(2, 3)) if vy and vz else np.finfo(x.dtype).min\n"
    "                continue\n"
    "            if cip:\n"
    "                cy = len([t for t in ys if -p[0] <= t <= h - 1 + p[2]])\n"
    "                cz = len([t for t in zs if -p[1] <= t <= wd - 1 + p[3]])\n"
    "            else:\n"
    "                cy, cz = len(vy), len(vz)\n"
    "            out[:, :, y, z] = win.sum(axis=(2, 3)) / max(cy * cz, 1)\n"
    "    return out\n"
    "def adaptive_ref(x, oh, ow):\n"
    "    h, wd = x.shape[2:]\n"
    "    out = np.zeros(x.shape[:2] + (oh, ow))\n"
    "    for i in range(oh):\n"
    "        for j in range(ow):\n"
    "            h0, h1 = i * h // oh, -(-(i + 1) * h // oh)\n"
    "            w0, w1 = j * wd // ow, -(-(j + 1) * wd // ow)\n"
    "            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].astype(np.float64).mean(axis=(2, 3))\n"
    "    return out\n"
    "def take_ref(x, i, axis=None):\n"
    "    if axis is None:\n"
    "        x, axis = x.ravel(), 0\n"
    "    d = x.shape[axis]\n"
    "    i = i.astype(np.int64)\n"
    "    return np.take(x, np.clip(np.where(i < 0, i + d, i), 0, d - 1), axis=axis)\n"
    "def ln_ref(x, axes, g=None, b=None, eps=1e-5):\n"
    "    x64 = x.astype(np.float64)\n"
    "    mu = x64.mean(axis=axes, keepdims=True); var = x64.var(axis=axes, keepdims=True)\n"
    "    r = (x64 - mu) / np.sqrt(var + eps)\n"
    "    return r * (1 if g is None else g) + (0 if b is None else b)\n";

/* A shape parameter that defines n and m where the tensors only use expressions. */
#define SNM "{\"name\": \"s\", \"type\": {\"shape\": {\"values\": [\"n\", \"m\"]}}},"
#define X4(h, w) SNM P("x", TS("f32", "1, 2, " h ", " w))
#define TUP2(a, b) "{\"tuple\": [\"" a "\", \"" b "\"]}"
#define TUP3(a, b, c) "{\"tuple\": [\"" a "\", \"" b "\", \"" c "\"]}"

static const ncase CASES[] = {
    /* variance: population variance, axes incl. negative, keepdims, size-1 dims, ints */
    {XNM, OP1A("variance", "x", "{\"axis\": 1}"), "np.var(x, axis=1)", R_ANY},
    {XNM, OP1A("variance", "x", "{\"keepdims\": true}"), "np.var(x, keepdims=True)", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")), OP1A("variance", "x", "{\"axis\": [-1, 1]}"),
     "np.var(x, axis=(2, 1))", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")), OP1A("variance", "x", "{\"axis\": 1, \"keepdims\": true}"),
     "np.var(x, axis=1, keepdims=True)", R_ANY},
    {P("x", TS("i32", "\"n\", 3")), OP1A("variance", "x", "{\"axis\": 0}"),
     "np.var(x, axis=0).astype(np.int32)", R_INT},
    {P("x", TS("f64", "\"n\", \"m\"")), OP1A("variance", "x", "{\"axis\": 0}"), "np.var(x, axis=0)", R_ANY},
    /* layer_norm, rms_norm, batch_norm */
    {P("x", TS("f32", "\"n\", \"m\", 4")) "," P("g", TS("f32", "4")) "," P("b", TS("f32", "4")),
     "{\"op\": \"nn.layer_norm\", \"args\": [\"x\", \"g\", \"b\"], \"attrs\": {\"axes\": -1}}",
     "ln_ref(x, -1, g, b)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")) "," P("g", TS("f32", "\"m\", 3")) "," P("b", TS("f32", "\"m\", 3")),
     "{\"op\": \"nn.layer_norm\", \"args\": [\"x\", \"g\", \"b\"], \"attrs\": {\"axes\": [1, 2], "
     "\"center\": false, \"epsilon\": 0.001}}",
     "ln_ref(x, (1, 2), g, None, 1e-3)", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\", 3")) "," P("g", TS("f32", "3, \"m\"")) "," P("b", TS("f32", "3, \"m\"")),
     "{\"op\": \"nn.layer_norm\", \"args\": [\"x\", \"g\", \"b\"], \"attrs\": {\"axes\": [-1, -2]}}",
     "ln_ref(x, (1, 2), g.T, b.T)", R_ANY},
    {P("x", TS("f32", "\"n\", 1")) "," P("g", TS("f32", "1")) "," P("b", TS("f32", "1")),
     "{\"op\": \"nn.layer_norm\", \"args\": [\"x\", \"g\", \"b\"], \"attrs\": {\"axes\": [1], "
     "\"scale\": false}}",
     "ln_ref(x, 1, None, b)", R_ANY},
    {XNM "," P("w", TS("f32", "\"m\"")), OP2("nn.rms_norm", "x", "w"),
     "x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5) * w", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")) "," P("w", TS("f32", "\"n\", 1")),
     "{\"op\": \"nn.rms_norm\", \"args\": [\"x\", \"w\"], \"attrs\": {\"axes\": [0, -2], \"epsilon\": 0.01}}",
     "x / np.sqrt((x.astype(np.float64) ** 2).mean((0, 1), keepdims=True) + 0.01) * w[:, :, None]", R_ANY},
    {P("x", TS("f32", "\"n\", 3, \"m\"")) "," P("g", TS("f32", "3")) "," P("b", TS("f32", "3")) ","
     P("mu", TS("f32", "3")) "," P("var", TS("f32", "3")),
     "{\"op\": \"nn.batch_norm\", \"args\": [\"x\", \"g\", \"b\", \"mu\", \"var\"]}",
     "((x - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * g[:, None] + b[:, None], mu, var)", R_POS},
    {P("x", TS("f32", "\"n\", \"m\", 4")) "," P("g", TS("f32", "4")) "," P("b", TS("f32", "4")) ","
     P("mu", TS("f32", "4")) "," P("var", TS("f32", "4")),
     "{\"op\": \"nn.batch_norm\", \"args\": [\"x\", \"g\", \"b\", \"mu\", \"var\"], \"attrs\": "
     "{\"axis\": -1, \"center\": false, \"epsilon\": 0.001}}",
     "((x - mu) / np.sqrt(var + 1e-3) * g, mu, var)", R_POS},
    /* conv2d */
    {X4("\"n + 4\"", "\"m + 3\"") "," P("w", TS("f32", "4, 2, 3, 3")),
     "{\"op\": \"nn.conv2d\", \"args\": [\"x\", \"w\"], \"attrs\": {\"padding\": [1, 1]}}",
     "conv2d_ref(x, w, p=(1, 1, 1, 1))", R_ANY},
    {SNM P("x", TS("f32", "1, 4, \"n + 4\", \"m + 3\"")) "," P("w", TS("f32", "6, 2, 3, 2")),
     "{\"op\": \"nn.conv2d\", \"args\": [\"x\", \"w\"], \"attrs\": {\"groups\": 2, \"dilation\": [2, 1], "
     "\"padding\": [1, 0, 2, 1], \"strides\": [2, 1]}}",
     "conv2d_ref(x, w, s=(2, 1), p=(1, 0, 2, 1), dl=(2, 1), g=2)", R_ANY},
    {SNM P("x", TS("f32", "\"n\", 3, 5, \"m + 2\"")) "," P("w", TS("f32", "3, 1, 3, 3")),
     "{\"op\": \"nn.conv2d\", \"args\": [\"x\", \"w\"], \"attrs\": {\"groups\": 3, \"strides\": 2, "
     "\"padding\": 1}}",
     "conv2d_ref(x, w, s=(2, 2), p=(1, 1, 1, 1), g=3)", R_ANY},
    {SNM P("x", TS("i32", "1, 2, \"n + 2\", \"m + 2\"")) "," P("w", TS("i32", "3, 2, 2, 3")),
     "{\"op\": \"nn.conv2d\", \"args\": [\"x\", \"w\"], \"attrs\": {\"out_dtype\": \"i64\", "
     "\"padding\": [0, 2, 1, 0]}}",
     "conv2d_ref(x, w, p=(0, 2, 1, 0)).astype(np.int64)", R_INT},
    {X4("\"n\"", "\"m\"") "," P("w", TS("f32", "2, 2, 1, 1")), OP2("nn.conv2d", "x", "w"),
     "conv2d_ref(x, w)", R_ANY},
    /* pooling */
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.max_pool2d", "x", "{\"pool_size\": 3, \"strides\": 2, \"padding\": 1}"),
     "pool_ref(x, (3, 3), s=(2, 2), p=(1, 1, 1, 1))", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.max_pool2d", "x", "{\"pool_size\": [2, 2], \"strides\": [2, 2], \"ceil_mode\": true}"),
     "pool_ref(x, (2, 2), s=(2, 2), ceil=True)", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.max_pool2d", "x", "{\"pool_size\": [2, 3], \"dilation\": [2, 1], \"padding\": [0, 1, 1, 0]}"),
     "pool_ref(x, (2, 3), p=(0, 1, 1, 0), dl=(2, 1))", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.avg_pool2d", "x", "{\"pool_size\": 3, \"strides\": 2, \"padding\": 1}"),
     "pool_ref(x, (3, 3), s=(2, 2), p=(1, 1, 1, 1), mode='avg')", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.avg_pool2d", "x", "{\"pool_size\": 3, \"strides\": 2, \"padding\": 1, "
                                   "\"count_include_pad\": true, \"ceil_mode\": true}"),
     "pool_ref(x, (3, 3), s=(2, 2), p=(1, 1, 1, 1), ceil=True, mode='avg', cip=True)", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.avg_pool2d", "x", "{\"pool_size\": [2, 2], \"strides\": [3, 2], "
                                   "\"dilation\": 2, \"padding\": [1, 0, 0, 1], \"ceil_mode\": true}"),
     "pool_ref(x, (2, 2), s=(3, 2), p=(1, 0, 0, 1), dl=(2, 2), ceil=True, mode='avg')", R_ANY},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.avg_pool2d", "x", "{\"pool_size\": 2, \"count_include_pad\": true}"),
     "pool_ref(x, (2, 2), mode='avg', cip=True)", R_ANY},
    {SNM P("x", TS("i32", "1, 2, \"n + 1\", \"m + 1\"")),
     OP1A("nn.max_pool2d", "x", "{\"pool_size\": 3, \"padding\": 1}"),
     "pool_ref(x, (3, 3), p=(1, 1, 1, 1)).astype(np.int32)", R_INT},
    {SNM P("x", TS("i32", "1, 2, \"n + 1\", \"m + 1\"")),
     OP1A("nn.avg_pool2d", "x", "{\"pool_size\": 2, \"strides\": 2, \"padding\": 1}"),
     "np.floor(pool_ref(x, (2, 2), s=(2, 2), p=(1, 1, 1, 1), mode='avg')).astype(np.int32)", R_INT},
    {X4("\"n + 4\"", "\"m + 3\""), OP1A("nn.adaptive_avg_pool2d", "x", "{\"output_size\": [2, 3]}"),
     "adaptive_ref(x, 2, 3)", R_ANY},
    {X4("\"n\"", "\"m\""), OP1("nn.adaptive_avg_pool2d", "x"), "adaptive_ref(x, N, M)", R_ANY},
    {P("x", TS("f32", "\"n\", 2, 7, 5")), OP1A("nn.adaptive_avg_pool2d", "x", "{\"output_size\": 3}"),
     "adaptive_ref(x, 3, 3)", R_ANY},
    {P("x", TS("f32", "1, 2, 6, 4")), OP1A("nn.adaptive_avg_pool2d", "x", "{\"output_size\": [3, 1]}"),
     "adaptive_ref(x, 3, 1)", R_ANY},
    /* concat, split */
    {P("a", TS("f32", "\"n\", 4")) "," P("b", TS("f32", "\"m\", 4")),
     "{\"op\": \"concat\", \"args\": [" TUP2("a", "b") "]}", "np.concatenate([a, b])", R_ANY},
    {P("a", TS("f32", "\"n\", 2")) "," P("b", TS("f32", "\"n\", 3")) "," P("c", TS("f32", "\"n\", 1")),
     "{\"op\": \"concat\", \"args\": [" TUP3("a", "b", "c") "], \"attrs\": {\"axis\": -1}}",
     "np.concatenate([a, b, c], axis=-1)", R_ANY},
    {P("a", TS("f32", "\"n\", 2")) "," P("b", TS("f32", "\"m\", 3")),
     "{\"op\": \"concat\", \"args\": [" TUP2("a", "b") "], \"attrs\": {\"axis\": null}}",
     "np.concatenate([a.ravel(), b.ravel()])", R_ANY},
    {P("x", TS("f32", "\"n\", 6")), OP1A("split", "x", "{\"indices_or_sections\": 3, \"axis\": -1}"),
     "np.split(x, 3, axis=-1)", R_ANY},
    {SNM P("x", TS("f32", "\"n + 2\", \"m\"")), OP1A("split", "x", "{\"indices_or_sections\": [1, \"n\"]}"),
     "np.split(x, [1, N])", R_ANY},
    {P("x", TS("f32", "\"n\", 4")), OP1A("split", "x", "{\"indices_or_sections\": [2, 5], \"axis\": 1}"),
     "np.split(x, [2, 5], axis=1)", R_ANY},
    {P("x", TS("f32", "\"n\", 8")), OP1A("split", "x", "{\"indices_or_sections\": [-3], \"axis\": 1}"),
     "np.split(x, [5], axis=1)", R_ANY},
    /* a negative index against a symbolic extent counts from the end (n = 3 and 6) */
    {P("x", TS("f32", "\"n\", 2")), OP1A("split", "x", "{\"indices_or_sections\": [1, -1]}"),
     "np.split(x, [1, -1])", R_ANY},
    /* strided_slice */
    {P("x", TS("f32", "\"n\", 8")),
     OP1A("strided_slice", "x", "{\"axes\": [1], \"begin\": [6], \"end\": [0], \"strides\": [-2]}"),
     "x[:, 6:0:-2]", R_ANY},
    {SNM P("x", TS("f32", "\"n + 2\", 5")),
     OP1A("strided_slice", "x", "{\"axes\": [0], \"begin\": [1], \"end\": [\"n\"]}"), "x[1:N]", R_ANY},
    {P("x", TS("f32", "\"n\", 6")),
     OP1A("strided_slice", "x", "{\"axes\": [-1, 0], \"begin\": [-1, 0], \"end\": [-100, \"n\"], "
                                "\"strides\": [-1, 2]}"),
     "x[0:N:2, -1:-100:-1]", R_ANY},
    {P("x", TS("f32", "\"n\", \"m\"")),
     OP1A("strided_slice", "x", "{\"axes\": [1], \"begin\": [-2], \"end\": [\"m + 4\"]}"),
     "x[:, -2:]", R_ANY},
    {P("x", TS("f32", "\"n\", 7")),
     OP1A("strided_slice", "x", "{\"axes\": [1], \"begin\": [100], \"end\": [-8], \"strides\": [-3]}"),
     "x[:, 100:-8:-3]", R_ANY},
    /* take */
    {P("x", TS("f32", "\"n\", 4")) "," P("i", TS("i32", "\"m\"")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"axis\": 0, \"mode\": \"clip\"}}", "take_ref(x, i, 0)", R_INT},
    {P("x", TS("f32", "\"n\", \"m\", 3")) "," P("i", TS("i64", "2, 2")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"axis\": -2, \"mode\": \"clip\"}}", "take_ref(x, i, -2)", R_INT},
    {P("x", TS("f32", "\"n\", 3")) "," P("i", TS("i64", "\"m\"")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"mode\": \"clip\"}}", "take_ref(x, i)", R_INT},
    {P("x", TS("f32", "\"n\", 3")) "," P("i", TS("i64", "\"m\"")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"mode\": \"wrap\"}}", "np.take(x, i, mode='wrap')", R_INT},
    {P("x", TS("f32", "\"n\", 4")) "," P("i", TS("i32", "\"m\"")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"axis\": 1, \"mode\": \"wrap\"}}", "np.take(x, i, axis=1, mode='wrap')", R_INT},
    {P("x", TS("f32", "1, \"m\"")) "," P("i", TS("i32", "\"n\"")),
     "{\"op\": \"take\", \"args\": [\"x\", \"i\"], \"attrs\": {\"axis\": -1, \"mode\": \"clip\"}}", "take_ref(x, i, 1)", R_INT},
    /* repeat, tile, tril, triu */
    {XNM, OP1A("repeat", "x", "{\"repeats\": 2, \"axis\": 1}"), "np.repeat(x, 2, axis=1)", R_ANY},
    {P("x", TS("f32", "\"n\", 2")), OP1A("repeat", "x", "{\"repeats\": 3}"), "np.repeat(x, 3)", R_ANY},
    {P("x", TS("f32", "\"n\", 1, \"m\"")), OP1A("repeat", "x", "{\"repeats\": 2, \"axis\": -2}"),
     "np.repeat(x, 2, axis=-2)", R_ANY},
    {XNM, OP1A("tile", "x", "{\"repeats\": [2, 1, 3]}"), "np.tile(x, (2, 1, 3))", R_ANY},
    {P("x", TS("f32", "1, \"m\"")), OP1A("tile", "x", "{\"repeats\": [3, 2]}"), "np.tile(x, (3, 2))", R_ANY},
    {P("x", TS("f32", "2, \"n\", \"m\"")), OP1A("tile", "x", "{\"repeats\": [2]}"), "np.tile(x, 2)", R_ANY},
    {XNM, OP1("tril", "x"), "np.tril(x)", R_ANY},
    {P("x", TS("f32", "2, \"n\", \"m\"")), OP1A("triu", "x", "{\"k\": -1}"), "np.triu(x, -1)", R_ANY},
    {XNM, OP1A("tril", "x", "{\"k\": 2}"), "np.tril(x, 2)", R_ANY},
    {P("x", TS("i32", "\"n\", \"n\"")), OP1A("triu", "x", "{\"k\": 1}"), "np.triu(x, 1)", R_INT},
    /* arange (x only defines n and m) */
    {XNM, "{\"op\": \"arange\", \"attrs\": {\"end\": \"n\"}}", "np.arange(N)", R_ANY},
    {XNM, "{\"op\": \"arange\", \"attrs\": {\"start\": 2, \"end\": \"n + 5\", \"step\": 3, \"dtype\": \"i32\"}}",
     "np.arange(2, N + 5, 3, dtype=np.int32)", R_ANY},
    {XNM, "{\"op\": \"arange\", \"attrs\": {\"start\": \"m\", \"end\": \"n + m\", \"dtype\": \"f32\"}}",
     "np.arange(M, N + M, dtype=np.float32)", R_ANY},
    {XNM, "{\"op\": \"arange\", \"attrs\": {\"start\": \"n\", \"end\": 0, \"step\": -1}}",
     "np.arange(N, 0, -1)", R_ANY},
    {XNM, "{\"op\": \"arange\", \"attrs\": {\"start\": 1, \"end\": 11, \"step\": 4, \"dtype\": \"f64\"}}",
     "np.arange(1, 11, 4, dtype=np.float64)", R_ANY},
};

START_TEST(legalized_nn_kernels_match_numpy)
{
    run_numeric(CASES, RX_COUNTOF(CASES), PRELUDE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("legalize_numeric_nn");
    TCase *tc = tcase_create("numeric_nn");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, legalized_nn_kernels_match_numpy);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
