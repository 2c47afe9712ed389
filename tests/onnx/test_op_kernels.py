#!/usr/bin/python3
"""Operators with runtime kernels through the ONNX importer and relax-run (docs/onnx.md,
docs/ops.md): TopK, torch.sort / argsort / topk exports, CumSum, GroupNorm.

Each model is built with onnx.helper (or exported by torch.onnx.export with dynamic
axes), compiled once with relaxc, and run at several sizes; the outputs must equal a
NumPy reference (or PyTorch's):
  topk      TopK with k = 1, 5, 300 (> 256, which the old argmax rounds refused) and the
            whole axis, largest 1 and 0, axes 0, 1 and -1, f32 / f64 / i32 / i64 inputs
            with many ties (lower index first, ONNX's rule) and f32 with NaN, +-inf and
            -0.0 (NaN greater than every number; -0.0 equal to +0.0, so index order);
            a symbolic batch; values and indices exact.
  torch     torch.sort (descending), torch.argsort and torch.topk exported at opset 14
            with a dynamic sorted axis (TopK's k from Shape + Gather: a symbolic k) and
            a dynamic batch, equal to PyTorch at several sizes.
  cumsum    CumSum with exclusive and reverse in all four combinations, on the last,
            a middle and the first axis (symbolic extents), f32 / f64 / i32 / i64,
            lengths across the vector widths (1, 7, 16, 33, 1000) and one long row
            (2^20 + 37, the threads' chunked form), against NumPy (floats within rtol 1e-5 of
            a float64 sum, integers exact).
  groupnorm torch.nn.GroupNorm exported at opset 17 (Reshape + InstanceNormalization +
            Reshape + Mul + Add) with dynamic batch, h and w; GroupNormalization-18
            (per-group scale and bias) and InstanceNormalization on symbolic h, w, in
            f32 and f64, equal to PyTorch / NumPy at several sizes (rtol 1e-4, atol
            1e-5); the torch form becomes one nn.group_norm (no mean left after parse).
  resize    Resize x2 (and, static, 7x5 -> 12x13 and x0.5) in linear and
            nearest modes, every coordinate mode but tf_crop_and_resize and every
            nearest_mode, dynamic h and w, in f32 (rt.resize2d) against the same model
            in f64 (the loops of legalize_image.c: indices exact, values within
            1e-5), and bilinear / nearest against torch.nn.functional.interpolate.
The f32 kernels are run on each path: RX_SCAN_KERNEL (cumsum) and RX_SORT_KERNEL (TopK's
streaming pass) = portable, avx2 and the default.
Usage: test_sort_ops.py BIN_DIR
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

RELAXC, RUN = (os.path.join(sys.argv[1], tool) for tool in ("relaxc", "relax-run"))
FAILED = []
ONNX_T = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
          np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def check(cond, what, detail=""):
    if cond:
        print("PASS", what)
        return
    print("FAIL %s\n  %s" % (what, str(detail)[:1500]))
    FAILED.append(what)


def run(args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode < 0:
        raise SystemExit("%s crashed (signal %d): %s" % (args[0], -p.returncode, p.stderr[-800:]))
    return p


def build(model, tmp, name):
    path = os.path.join(tmp, name + ".onnx")
    if isinstance(model, onnx.ModelProto):
        onnx.save(model, path)
    rxa = os.path.join(tmp, name + ".rxa")
    p = run([RELAXC, "build", path, "-o", rxa])
    check(p.returncode == 0, "%s: relaxc build" % name, p.stderr)
    return rxa if p.returncode == 0 else None


def outputs(rxa, tmp, ins, env=None):
    args = []
    for name, a in ins.items():
        f = os.path.join(tmp, name + ".npy")
        np.save(f, a)
        args += ["--in", "%s=%s" % (name, f)]
    out = tempfile.mkdtemp(dir=tmp, prefix="out")
    p = run([RUN, rxa, "--out-dir", out] + args, env=env)
    if p.returncode != 0:
        return None, p.stderr
    got, i = [], 0
    while os.path.exists(os.path.join(out, "out%d.npy" % i)):
        got.append(np.load(os.path.join(out, "out%d.npy" % i)))
        i += 1
    return got, ""


def kernel_envs(var="RX_SCAN_KERNEL"):
    for k in ("portable", "avx2", None):
        env = dict(os.environ)
        if k:
            env[var] = k
        yield k or "default", env


# ---- references ----

def order_key(v, largest):
    """A sort key for one element: NaN past every number, -0.0 == +0.0."""
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and v != v:
        k = (1, 0.0)
    else:
        k = (0, v + 0.0 if isinstance(v, float) else v)
    if largest:
        k = (-k[0], -k[1])
    return k


def ref_topk(x, k, axis, largest):
    xm = np.moveaxis(x, axis, -1)
    vals = np.empty(xm.shape[:-1] + (k,), x.dtype)
    inds = np.empty(xm.shape[:-1] + (k,), np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        row = xm[pos]
        order = sorted(range(row.shape[0]), key=lambda j: (order_key(row[j], largest), j))[:k]
        inds[pos] = order
        vals[pos] = row[order]
    return np.moveaxis(vals, -1, axis), np.moveaxis(inds, -1, axis)


def same_exact(got, want):
    return (got.shape == want.shape and got.dtype == want.dtype and
            np.array_equal(got, want, equal_nan=np.issubdtype(got.dtype, np.floating)))


# ---- TopK ----

def topk_model(dtype, shape, k, axis, largest, opset=11):
    t = ONNX_T[dtype]
    kc = helper.make_tensor("k", TensorProto.INT64, [1], [k])
    n = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", t, shape)],
                          [helper.make_tensor_value_info("v", t, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, None)], [kc])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def topk_inputs(dtype, shape, rng, special):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, size=shape).astype(dtype)  # many ties
    x = rng.integers(-6, 7, size=shape).astype(dtype) / 2  # ties in floats too
    if special:
        flat = x.reshape(-1)
        m = flat.shape[0]
        flat[rng.integers(0, m, size=max(1, m // 10))] = np.nan
        flat[rng.integers(0, m, size=max(1, m // 20))] = np.inf
        flat[rng.integers(0, m, size=max(1, m // 20))] = -np.inf
        flat[rng.integers(0, m, size=max(1, m // 10))] = -0.0
        flat[rng.integers(0, m, size=max(1, m // 10))] = 0.0
    return x


def topk_cases(tmp):
    rng = np.random.default_rng(0)
    cases = [  # dtype, symbolic shape, k, axis, largest, sizes of "b", special values
        (np.float32, ["b", 40], 5, -1, 1, [1, 3], True),
        (np.float32, ["b", 40], 5, -1, 0, [2], True),
        (np.float32, ["b", 700], 300, 1, 1, [2], True),   # k > 256
        (np.float32, ["b", 3000], 8, 1, 1, [2], False),   # the selection path
        (np.float32, ["b", 3000], 8, 1, 0, [2], True),
        (np.float32, [50, "b", 3], 50, 0, 1, [1, 4], True),  # whole axis 0, strided rows
        (np.float64, ["b", 33], 33, -1, 0, [3], True),
        (np.int32, ["b", 600], 600, -1, 1, [2], False),
        (np.int64, [7, "b"], 4, 0, 0, [5], False),
    ]
    for ci, (dt, shape, k, axis, largest, sizes, special) in enumerate(cases):
        name = "topk%d_%s_k%d_ax%d_l%d" % (ci, np.dtype(dt).name, k, axis, largest)
        rxa = build(topk_model(dt, shape, k, axis, largest), tmp, name)
        if not rxa:
            continue
        for b in sizes:
            x = topk_inputs(dt, [b if d == "b" else d for d in shape], rng, special)
            wv, wi = ref_topk(x, k, axis, largest)
            for kname, env in kernel_envs("RX_SORT_KERNEL"):
                got, err = outputs(rxa, tmp, {"x": x}, env)
                ok = got is not None and len(got) == 2 and same_exact(got[0], wv) and same_exact(got[1], wi)
                check(ok, "%s: b=%d equals the reference, %s kernel" % (name, b, kname),
                      err or ("got %s" % [g[:2] for g in got] if got else ""))
                if dt != np.float32:
                    break  # the kernel choice is f32's only


# ---- torch exports ----

def torch_cases(tmp):
    import torch
    import warnings
    torch.manual_seed(0)

    class Sorts(torch.nn.Module):
        def forward(self, x):
            v, i = torch.sort(x, dim=-1, descending=True)
            a = torch.argsort(x, dim=1)
            tv, ti = torch.topk(x, 3, dim=-1, largest=False)
            return v, i, a, tv, ti

    path = os.path.join(tmp, "torch_sorts.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Sorts().eval(), (torch.randn(2, 12),), path, input_names=["x"],
                          dynamic_axes={"x": {0: "b", 1: "n"}}, opset_version=14)
    rxa = build(None, tmp, "torch_sorts")
    if not rxa:
        return
    for b, n in [(2, 12), (3, 300), (1, 5000)]:
        x = np.random.default_rng(n).standard_normal((b, n)).astype(np.float32)
        want = [t.numpy() for t in Sorts()(torch.from_numpy(x))]
        got, err = outputs(rxa, tmp, {"x": x})
        ok = got is not None and len(got) == 5 and all(same_exact(g, w) for g, w in zip(got, want))
        check(ok, "torch sort / argsort / topk with a symbolic axis: (%d, %d) equals PyTorch" % (b, n),
              err or "")


# ---- CumSum ----

def cumsum_model(dtype, shape, axis, exclusive, reverse):
    t = ONNX_T[dtype]
    ax = helper.make_tensor("ax", TensorProto.INT64, [], [axis])
    n = helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=exclusive, reverse=reverse)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", t, shape)],
                          [helper.make_tensor_value_info("y", t, None)], [ax])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def ref_cumsum(x, axis, exclusive, reverse):
    wide = np.float64 if np.issubdtype(x.dtype, np.floating) else x.dtype
    v = np.flip(x, axis) if reverse else x
    r = np.cumsum(v.astype(wide), axis=axis)
    if exclusive:
        r = r - v.astype(wide)
    if reverse:
        r = np.flip(r, axis)
    return r.astype(x.dtype)


def cumsum_cases(tmp):
    rng = np.random.default_rng(1)
    forms = [(np.float32, ["b", "n"], 1, [(2, 1), (3, 7), (2, 16), (1, 33), (2, 1000)]),
             (np.float32, ["b", "n", 5], 1, [(2, 9), (3, 1000)]),
             (np.float32, ["n", "b"], 0, [(300, 2), (40, 500)]),
             (np.float32, ["b", "n"], 1, [(1, (1 << 20) + 37)]),
             (np.float64, ["b", "n"], -1, [(2, 37)]),
             (np.int32, ["b", "n"], 1, [(2, 100)]),
             (np.int64, ["n", "b", 3], 0, [(70, 2)])]
    for fi, (dt, shape, axis, sizes) in enumerate(forms):
        for ex in (0, 1):
            for rev in (0, 1):
                name = "cumsum%d_%s_ax%d_ex%d_rev%d" % (fi, np.dtype(dt).name, axis, ex, rev)
                rxa = build(cumsum_model(dt, shape, axis, ex, rev), tmp, name)
                if not rxa:
                    continue
                for sz in sizes:
                    dims = dict(zip(["b", "n"], sz)) if shape[0] == "b" else dict(zip(["n", "b"], sz))
                    x_shape = [dims.get(d, d) for d in shape]
                    if np.issubdtype(dt, np.integer):
                        x = rng.integers(-1000, 1000, size=x_shape).astype(dt)
                    else:
                        x = rng.standard_normal(x_shape).astype(dt)
                    want = ref_cumsum(x, axis, ex, rev)
                    for kname, env in kernel_envs():
                        got, err = outputs(rxa, tmp, {"x": x}, env)
                        if np.issubdtype(dt, np.integer):
                            ok = got is not None and same_exact(got[0], want)
                        else:
                            scale = np.abs(x).sum(axis=axis, keepdims=True) + 1
                            ok = (got is not None and got[0].shape == want.shape and
                                  got[0].dtype == want.dtype and
                                  bool(np.all(np.abs(got[0] - want) <= 1e-5 * scale)))
                        check(ok, "%s: %s, %s kernel" % (name, sz, kname),
                              err or ("max |diff| %g" % float(np.abs(got[0] - want).max())
                                      if got else ""))
                        if not np.issubdtype(dt, np.floating) or dt == np.float64:
                            break  # the kernel choice is f32's only


# ---- GroupNorm ----

def ref_group_norm(x, g, scale, bias, eps):
    n, ch = x.shape[:2]
    v = x.astype(np.float64).reshape(n, g, -1)
    y = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape)
    shape = (1, ch) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


def close(got, want):
    return (got is not None and got.shape == want.shape and got.dtype == want.dtype and
            np.allclose(got, want, rtol=1e-4, atol=1e-5))


def groupnorm_cases(tmp):
    import torch
    import warnings
    rng = np.random.default_rng(2)

    class GN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gn = torch.nn.GroupNorm(8, 32)
            torch.nn.init.normal_(self.gn.weight)
            torch.nn.init.normal_(self.gn.bias)

        def forward(self, x):
            return self.gn(x)

    m = GN().eval()
    path = os.path.join(tmp, "torch_gn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (torch.randn(2, 32, 8, 8),), path, input_names=["x"],
                          dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}}, opset_version=17)
    p = run([RELAXC, "print", path, "--after", "parse"])
    check(p.returncode == 0 and "nn.group_norm" in p.stdout and "R.mean" not in p.stdout,
          "torch GroupNorm form: one nn.group_norm after parse, no mean", p.stdout[-1500:] + p.stderr)
    rxa = build(None, tmp, "torch_gn")
    if rxa:
        for shape in [(2, 32, 8, 8), (1, 32, 13, 7), (3, 32, 1, 40)]:
            x = rng.standard_normal(shape).astype(np.float32)
            with torch.no_grad():
                want = m(torch.from_numpy(x)).numpy()
            got, err = outputs(rxa, tmp, {"x": x})
            check(got is not None and close(got[0], want), "torch GroupNorm %s equals PyTorch" % (shape,),
                  err or (float(np.abs(got[0] - want).max()) if got else ""))
    for dt in (np.float32, np.float64):
        t = ONNX_T[dt]
        for op, g, nscale in (("GroupNormalization", 4, 4), ("InstanceNormalization", 12, 12)):
            scale = rng.standard_normal(nscale).astype(dt)
            bias = rng.standard_normal(nscale).astype(dt)
            inits = [helper.make_tensor("s", t, [nscale], scale.tolist()),
                     helper.make_tensor("bb", t, [nscale], bias.tolist())]
            attrs = {"num_groups": g} if op == "GroupNormalization" else {}
            node = helper.make_node(op, ["x", "s", "bb"], ["y"], epsilon=1e-3, **attrs)
            gr = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", t, ["n", 12, "h", "w"])],
                                   [helper.make_tensor_value_info("y", t, None)], inits)
            name = "%s_%s" % (op, np.dtype(dt).name)
            rxa = build(helper.make_model(gr, opset_imports=[helper.make_opsetid("", 18)]), tmp, name)
            if not rxa:
                continue
            per_c = np.repeat(scale, 12 // nscale), np.repeat(bias, 12 // nscale)
            for shape in [(2, 12, 5, 9), (1, 12, 16, 1)]:
                x = rng.standard_normal(shape).astype(dt)
                want = ref_group_norm(x, g, per_c[0], per_c[1], 1e-3)
                got, err = outputs(rxa, tmp, {"x": x})
                check(got is not None and close(got[0], want), "%s %s equals NumPy" % (name, shape),
                      err or (float(np.abs(got[0] - want).max()) if got else ""))


# ---- Resize ----

def resize_model(dt, mode, ctm, nm, scales=None, sizes=None):
    t = ONNX_T[dt]
    inits = [helper.make_tensor("roi", t, [0], [])]
    ins = ["x", "roi"]
    if scales:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [4], scales))
        ins.append("scales")
    else:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [0], []))
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [4], sizes))
        ins += ["scales", "sizes"]
    n = helper.make_node("Resize", ins, ["y"], mode=mode, coordinate_transformation_mode=ctm,
                         nearest_mode=nm)
    shape = ["b", 3, "h", "w"] if scales and scales[2] >= 1 else [2, 3, 7, 5]
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", t, shape)],
                          [helper.make_tensor_value_info("y", t, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def resize_cases(tmp):
    import torch
    rng = np.random.default_rng(3)
    ctms = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"]
    nms = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
    forms = [("linear", c, "round_prefer_floor") for c in ctms[:4]] + \
            [("nearest", c, m) for c in ctms for m in (nms if c in ("asymmetric", "half_pixel") else nms[:1])]
    for mode, ctm, nm in forms:
        for size in ({"scales": [1, 1, 2, 2]}, {"sizes": [2, 3, 12, 13]}, {"scales": [1, 1, 0.5, 0.5]}):
            tag = "%s_%s_%s_%s" % (mode, ctm, nm, "x".join(str(v) for v in list(size.values())[0][2:]))
            r32 = build(resize_model(np.float32, mode, ctm, nm, **size), tmp, "rs32_" + tag)
            r64 = build(resize_model(np.float64, mode, ctm, nm, **size), tmp, "rs64_" + tag)
            if not r32 or not r64:
                continue
            dyn = "scales" in size and size["scales"][2] >= 1  # a downsample needs literal extents
            for shape in ([(1, 3, 9, 16), (2, 3, 1, 7)] if dyn else [(2, 3, 7, 5)]):
                x = rng.standard_normal(shape).astype(np.float32)
                g32, e32 = outputs(r32, tmp, {"x": x})
                g64, e64 = outputs(r64, tmp, {"x": x.astype(np.float64)})
                ok = (g32 is not None and g64 is not None and g32[0].shape == g64[0].shape and
                      np.allclose(g32[0], g64[0], rtol=1e-5, atol=1e-5))
                check(ok, "resize %s %s: the f32 kernel equals the f64 loops" % (tag, shape),
                      e32 or e64 or (float(np.abs(g32[0] - g64[0]).max()) if ok is False and g32 and g64
                                     and g32[0].shape == g64[0].shape else ""))
                torch_mode = {("linear", "align_corners"): ("bilinear", True),
                              ("linear", "pytorch_half_pixel"): ("bilinear", False),
                              ("nearest", "asymmetric"): ("nearest", None)}.get((mode, ctm))
                if torch_mode and "scales" in size and size["scales"][2] == 2 and \
                        (mode == "linear" or nm == "floor"):
                    with torch.no_grad():
                        want = torch.nn.functional.interpolate(
                            torch.from_numpy(x), scale_factor=2, mode=torch_mode[0],
                            align_corners=torch_mode[1]).numpy()
                    check(g32 is not None and close(g32[0], want),
                          "resize %s %s equals torch interpolate" % (tag, shape), e32)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        topk_cases(tmp)
        torch_cases(tmp)
        cumsum_cases(tmp)
        groupnorm_cases(tmp)
        resize_cases(tmp)
    print("%d failed" % len(FAILED))
    for f in FAILED:
        print("  FAILED", f)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
