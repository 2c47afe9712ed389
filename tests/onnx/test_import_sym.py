#!/usr/bin/python3
"""Operands the importer folds from sizes (docs/onnx.md, "Exporters' idioms"), each found
by a model of tests/onnx/zoo_models2.py and failing to import before:

* Pad whose pads are shape arithmetic, written as PyTorch 1.13 writes F.pad with computed
  widths (Concat of widths and zeros, Reshape (-1, 2), Slice step -1, Transpose, Reshape
  (-1)): milesial's U-Net padding its upsampled map to the skip's size. Numbers against
  NumPy at sizes where the widths are 0, positive and negative (a crop), from one
  artifact; mode reflect with such pads is a located import error.
* The rank-2 known values that chain goes through: a Slice with steps on both axes of a
  reshaped shape vector, and Shape of one (the value materialized as a tensor).
* Trilu whose k is computed from a size (T5's decoder mask `triu(ones(n, p + n), p + 1)`
  over a cache of run-time length p) or read from an input tensor: where(col - row >= k).

A Reshape's -1 with target dims equal to the input's cancelled first (ShuffleNet's
channel shuffle over a pool's dims, whose product the simplifier expands: a literal, not
a floordiv).
MaxPool's Indices output over symbolic H and W (SegNet exported with a dynamic image size,
zoo_models8): ceil_mode with padding row-major, dilated column-major, against loops.
And one found by its numbers: InstanceNormalization's mean over a large extent (a U-Net's
H * W, GroupNorm's C / G * H * W) taken in stages, within 2e-5 of float64.

Each builds a small model with onnx.helper and runs it with relax-run.
Usage: test_import_sym.py BIN_DIR
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_import as ti  # noqa: E402  (check, RELAXC, RUN; reads BIN from argv)

check = ti.check


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def build(tmp, m, name):
    path, rxa = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".rxa")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    p = subprocess.run([ti.RELAXC, "build", path, "-o", rxa], capture_output=True, text=True)
    return (rxa if p.returncode == 0 else None), p.stderr


def built(tmp, m, name, what):
    """build m, check it built: (artifact, the module printed after parse) or (None, '')."""
    rxa, err = build(tmp, m, name)
    check(rxa is not None, what, err)
    if not rxa:
        return None, ""
    return rxa, subprocess.run([ti.RELAXC, "print", os.path.join(tmp, name + ".onnx"), "--after",
                                "parse"], capture_output=True, text=True).stdout


def run(tmp, rxa, **xs):
    od, argv = os.path.join(tmp, "out"), [ti.RUN, rxa]
    for n, x in xs.items():
        f = os.path.join(tmp, n + ".npy")
        np.save(f, x)
        argv += ["--in", "%s=%s" % (n, f)]
    if os.path.isdir(od):
        for f in os.listdir(od):
            os.remove(os.path.join(od, f))
    p = subprocess.run(argv + ["--out-dir", od], capture_output=True, text=True)
    if p.returncode:
        return None, p
    return [np.load(os.path.join(od, f)) for f in sorted(os.listdir(od))], p


def pad_model(mode="constant"):
    """y = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2], value=v) with
    dy = skip.h - x.h, dx = skip.w - x.w, in PyTorch 1.13's opset-13 form."""
    nodes = [helper.make_node("Shape", ["x"], ["shx"]), helper.make_node("Shape", ["skip"], ["shs"])]
    for ax, tag in ((2, "y"), (3, "x")):
        nodes += [helper.make_node("Gather", ["shs", "a%d" % ax], ["s%s" % tag], axis=0),
                  helper.make_node("Gather", ["shx", "a%d" % ax], ["x%s" % tag], axis=0),
                  helper.make_node("Sub", ["s%s" % tag, "x%s" % tag], ["d%s" % tag]),
                  helper.make_node("Div", ["d%s" % tag, "two"], ["h%s" % tag]),
                  helper.make_node("Sub", ["d%s" % tag, "h%s" % tag], ["r%s" % tag])]
        nodes += [helper.make_node("Unsqueeze", [v + tag, "zero1"], ["u%s%s" % (v, tag)])
                  for v in ("h", "r")]
    nodes += [helper.make_node("Concat", ["uhx", "urx", "uhy", "ury", "zeros4"], ["cat"], axis=0),
              helper.make_node("Reshape", ["cat", "m1_2"], ["pairs"]),
              helper.make_node("Slice", ["pairs", "m1", "big_neg", "zero1", "m1"], ["rev"]),
              helper.make_node("Transpose", ["rev"], ["tr"], perm=[1, 0]),
              helper.make_node("Reshape", ["tr", "m1"], ["flat"]),
              helper.make_node("Cast", ["flat"], ["pads"], to=TensorProto.INT64),
              helper.make_node("Pad", ["x", "pads", "val"], ["y"], mode=mode)]
    inits = [i64("a2", 2), i64("a3", 3), i64("two", 2), i64("zero1", [0]), i64("zeros4", [0] * 4),
             i64("m1_2", [-1, 2]), i64("m1", [-1]), i64("big_neg", [-(2 ** 63)]),
             numpy_helper.from_array(np.array(-1.5, dtype=np.float32), "val")]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, "h", "w"]),
           helper.make_tensor_value_info("skip", TensorProto.FLOAT, ["n", 1, "H", "W"])]
    return model(nodes, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


def pads(tmp):
    rxa, err = build(tmp, pad_model(), "pad")
    check(rxa is not None, "Pad with pads computed from sizes (F.pad's reversed pairs) builds", err)
    if rxa:
        for h, w, hh, ww in ((4, 6, 4, 6), (4, 6, 5, 9), (3, 2, 7, 3)):
            x = np.random.randn(2, 2, h, w).astype(np.float32)
            skip = np.zeros((2, 1, hh, ww), np.float32)
            dy, dx = hh - h, ww - w
            want = np.pad(x, [(0, 0), (0, 0), (dy // 2, dy - dy // 2), (dx // 2, dx - dx // 2)],
                          constant_values=-1.5)
            got, p = run(tmp, rxa, x=x, skip=skip)
            check(got is not None and got[0].shape == want.shape and np.array_equal(got[0], want),
                  "symbolic pad x %s to %s equals numpy" % ((h, w), (hh, ww)),
                  p.stderr if got is None else str(got[0].shape))
        got, p = run(tmp, rxa, x=np.zeros((1, 2, 5, 5), np.float32),
                     skip=np.zeros((1, 1, 3, 5), np.float32))
        x = np.random.randn(1, 2, 5, 7).astype(np.float32)
        got, p = run(tmp, rxa, x=x, skip=np.zeros((1, 1, 3, 9), np.float32))
        want = np.pad(x[:, :, 1:4, :], [(0, 0), (0, 0), (0, 0), (1, 1)], constant_values=-1.5)
        got2, p2 = run(tmp, rxa, x=x, skip=np.zeros((1, 1, 1, 5), np.float32))
        got = got if got2 is not None and np.array_equal(got2[0], x[:, :, 2:3, 1:6]) else None
        check(got is not None and np.array_equal(got[0], want),
              "negative computed pads crop, as ONNX Pad does (with a pad on the other axis)", p.stderr if got is None else
              str(got[0].shape))
    rxa, err = build(tmp, pad_model("reflect"), "pad_reflect")
    check(rxa is None and "Pad" in err and "mode constant" in err,
          "reflect Pad with computed pads is a located import error", err)


def sym_matrix(tmp):
    """Slice steps on both axes of Reshape(Shape(x), (2, 2)); Shape of the result."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["s", "t22"], ["m"]),
             helper.make_node("Slice", ["m", "st", "en", "axes", "steps"], ["r"]),  # m[::-1, 1:]
             helper.make_node("Reshape", ["r", "m1"], ["v"]),
             helper.make_node("Concat", ["m1", "v"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["y"]),
             helper.make_node("Shape", ["m"], ["ms"]),
             helper.make_node("Cast", ["m"], ["mc"], to=TensorProto.INT64)]
    inits = [i64("t22", [2, 2]), i64("st", [-1, 1]), i64("en", [-(2 ** 63), 2 ** 62]),
             i64("axes", [0, 1]), i64("steps", [-1, 1]), i64("m1", [-1])]
    m = model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", "c", "d"])],
              [helper.make_tensor_value_info(n, TensorProto.FLOAT if n == "y" else TensorProto.INT64, None)
               for n in ("y", "ms", "mc")], inits)
    rxa, err = build(tmp, m, "symmat")
    check(rxa is not None, "slices of a reshaped shape vector build", err)
    if rxa:
        x = np.random.randn(2, 3, 4, 5).astype(np.float32)
        got, p = run(tmp, rxa, x=x)
        ok = got is not None and got[0].shape == (8, 5, 3) and np.array_equal(got[0].ravel(), x.ravel())
        check(ok and got[1].tolist() == [2, 2] and got[2].tolist() == [[2, 3], [4, 5]],
              "x.reshape(-1, d, b), Shape (2, 2) and the matrix itself as data",
              p.stderr if got is None else str([g.shape for g in got]) + str(got[1:]))


def trilu(tmp):
    """triu(ones(n, p + n), p + 1) with p = past.shape[2]; tril(x, k) with k an input."""
    nodes = [helper.make_node("Shape", ["past"], ["sp"]),
             helper.make_node("Gather", ["sp", "two"], ["p"], axis=0),
             helper.make_node("Shape", ["x"], ["sx"]),
             helper.make_node("Gather", ["sx", "one"], ["n"], axis=0),
             helper.make_node("Add", ["p", "n"], ["pn"]),
             helper.make_node("Add", ["p", "one"], ["k"]),
             helper.make_node("Unsqueeze", ["n", "zero1"], ["un"]),
             helper.make_node("Unsqueeze", ["pn", "zero1"], ["upn"]),
             helper.make_node("Concat", ["un", "upn"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                              value=helper.make_tensor("v", TensorProto.BOOL, [1], [True])),
             helper.make_node("Trilu", ["ones", "k"], ["mask"], upper=1),
             helper.make_node("Trilu", ["x", "kk"], ["low"], upper=0)]
    inits = [i64("two", 2), i64("one", 1), i64("zero1", [0])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "n", "m"]),
           helper.make_tensor_value_info("past", TensorProto.FLOAT, ["b", 2, "p", 4]),
           helper.make_tensor_value_info("kk", TensorProto.INT64, [])]
    outs = [helper.make_tensor_value_info("mask", TensorProto.BOOL, None),
            helper.make_tensor_value_info("low", TensorProto.FLOAT, None)]
    rxa, err = build(tmp, model(nodes, ins, outs, inits, opset=14), "trilu")
    check(rxa is not None, "Trilu with k from a size and from an input builds", err)
    if not rxa:
        return
    for b, n, m, p, kk in ((1, 3, 5, 4, 0), (2, 4, 4, 0, -1), (1, 2, 6, 7, 3)):
        x = np.random.randn(b, n, m).astype(np.float32)
        got, proc = run(tmp, rxa, x=x, past=np.zeros((b, 2, p, 4), np.float32),
                        kk=np.array(kk, np.int64))
        want_mask = np.triu(np.ones((n, p + n), bool), p + 1)
        want_low = np.tril(x, kk)
        check(got is not None and np.array_equal(got[0].astype(bool), want_mask) and
              np.array_equal(got[1], want_low),
              "triu(ones(%d, %d), %d) and tril(x, %d) equal numpy" % (n, p + n, p + 1, kk),
              proc.stderr if got is None else str(got[0]))


def norms(tmp):
    """InstanceNormalization over H * W = 67584 elements (a U-Net decoder's), and over one
    axis of a symbolic product (GroupNorm's export: Reshape to (n, 2, -1), 2 * h * w) and
    of a sum of terms (the same of a slice: 2 * (h - 1) * (w - 1) expanded; xs_1, the
    slice asserted to (n, 4, h - 1, w - 1) by a match_cast, docs/onnx.md), all three
    nn.group_norm (rt.group_norm on the CPU): within 2e-5 of float64 NumPy (one serial f32
    sum per channel was 1.6e-3 off)."""
    x = (np.maximum(np.random.randn(1, 4, 256, 264), 0) * 3 + 5).astype(np.float32)
    nodes = [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5),
             helper.make_node("Reshape", ["x", "g"], ["xg"]),
             helper.make_node("InstanceNormalization", ["xg", "s2", "b2"], ["yg"], epsilon=1e-5),
             helper.make_node("Slice", ["x", "one2", "big2", "ax23"], ["xs"]),
             helper.make_node("Reshape", ["xs", "g"], ["xsg"]),
             helper.make_node("InstanceNormalization", ["xsg", "s2", "b2"], ["ys"], epsilon=1e-5)]
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "s"),
             numpy_helper.from_array(np.zeros(4, np.float32), "b"),
             numpy_helper.from_array(np.ones(2, np.float32), "s2"),
             numpy_helper.from_array(np.zeros(2, np.float32), "b2"), i64("g", [0, 2, -1]),
             i64("one2", [1, 1]), i64("big2", [2 ** 62, 2 ** 62]), i64("ax23", [2, 3])]
    m = model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, "h", "w"])],
              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "yg", "ys")],
              inits)
    rxa, parsed = built(tmp, m, "norms",
                        "InstanceNormalization over a large and a product extent builds")
    if not rxa:
        return
    gn = [ln for ln in parsed.splitlines() if "R.nn.group_norm(" in ln]
    check(len(gn) == 3 and any("group_norm(x," in ln and "num_groups=2" in ln for ln in gn) and
          any(("group_norm(xs," in ln or "group_norm(xs_1," in ln) and "num_groups=2" in ln for ln in gn),
          "GroupNorm's (n, 2, -1) is nn.group_norm of its source, 2 groups (and the "
          "InstanceNormalization one group per channel)",
          "\n".join(ln for ln in parsed.splitlines() if "norm" in ln or "reshape" in ln))
    got, p = run(tmp, rxa, x=x)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean((2, 3), keepdims=True)) / np.sqrt(x64.var((2, 3), keepdims=True) + 1e-5)
    xg = x64.reshape(1, 2, -1)
    wantg = (xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + 1e-5)
    xs = x64[:, :, 1:, 1:].reshape(1, 2, -1)  # 2 * (h - 1) * (w - 1): a sum of terms
    wants = (xs - xs.mean(2, keepdims=True)) / np.sqrt(xs.var(2, keepdims=True) + 1e-5)
    errs = [float(np.abs(g.reshape(w.shape) - w).max())
            for g, w in zip(got or [], (want, wantg.reshape(1, 2, -1), wants))]
    check(got is not None and max(errs) < 2e-5,
          "instance and group norm over 67584 / 135168 / 133380 elements within 2e-5 of float64",
          p.stderr if got is None else str(errs))


def shuffle(tmp):
    """ShuffleNet's channel_shuffle on a map whose dims are expressions (a pool's):
    x.view(b, 2, c // 2, h', w').transpose(1, 2).contiguous().view(b, -1, h', w'). The -1
    is the literal 4 (target dims equal to input dims cancel first), not a floordiv of
    expanded products."""
    nodes = [helper.make_node("MaxPool", ["x0"], ["x"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Shape", ["x"], ["s"])]
    for i in range(4):
        nodes.append(helper.make_node("Gather", ["s", "i%d" % i], ["g%d" % i], axis=0))
        nodes.append(helper.make_node("Unsqueeze", ["g%d" % i, "zero1"], ["u%d" % i]))
    nodes += [helper.make_node("Concat", ["u0", "two1", "two1", "u2", "u3"], ["t5"], axis=0),
              helper.make_node("Reshape", ["x", "t5"], ["x5"]),
              helper.make_node("Transpose", ["x5"], ["x5t"], perm=[0, 2, 1, 3, 4]),
              helper.make_node("Concat", ["u0", "m1", "u2", "u3"], ["t4"], axis=0),
              helper.make_node("Reshape", ["x5t", "t4"], ["y"])]
    inits = [i64("i%d" % i, i) for i in range(4)] + [
        i64("zero1", [0]), i64("two1", [2]), i64("m1", [-1])]
    m = model(nodes, [helper.make_tensor_value_info("x0", TensorProto.FLOAT, ["b", 4, "h", "w"])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    rxa, parsed = built(tmp, m, "shuffle", "channel shuffle of a pooled map builds")
    if not rxa:
        return
    line = [ln for ln in parsed.splitlines() if " y = R.reshape(" in ln or "\ty = R.reshape(" in ln
            or ln.strip().startswith("y = R.reshape(")]
    check(len(line) == 1 and "R.shape([b, 4, h // 2, w // 2])" in line[0],  # (h - 2) // 2 + 1
          "view(b, -1, h', w') infers the literal 4", str(line))
    x = np.random.randn(2, 4, 8, 13).astype(np.float32)
    got, p = run(tmp, rxa, x0=x)
    xs = x[:, :, :, :12].reshape(2, 4, 4, 2, 6, 2).max((3, 5))
    want = xs.reshape(2, 2, 2, 4, 6).transpose(0, 2, 1, 3, 4).reshape(2, 4, 4, 6)
    check(got is not None and np.array_equal(got[0], want), "the shuffle equals numpy",
          p.stderr if got is None else str(got[0].shape))


def pool_ref(x, k, s, d, p, ceil, col_major):
    """MaxPool's values and Indices by loops (the first maximum in window order wins)."""
    n, c, h, w = x.shape
    ext = [(h, 0), (w, 1)]
    out = []
    for size, a in ext:
        span = size + 2 * p[a] - d[a] * (k[a] - 1) - 1
        o = (-(-span // s[a]) if ceil else span // s[a]) + 1
        if ceil and (o - 1) * s[a] >= size + p[a]:
            o -= 1
        out.append(o)
    y = np.zeros((n, c, out[0], out[1]), np.float32)
    idx = np.zeros((n, c, out[0], out[1]), np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(out[0]):
                for j in range(out[1]):
                    best, at = -np.inf, -1
                    for ki in range(k[0]):
                        for kj in range(k[1]):
                            r, q = i * s[0] - p[0] + ki * d[0], j * s[1] - p[1] + kj * d[1]
                            if 0 <= r < h and 0 <= q < w and x[b, ch, r, q] > best:
                                best = x[b, ch, r, q]
                                at = (q * h + r) if col_major else (r * w + q)
                    y[b, ch, i, j], idx[b, ch, i, j] = best, (b * c + ch) * h * w + at
    return y, idx


def pool_indices(tmp):
    """MaxPool's Indices output over symbolic H and W (SegNet exported with a dynamic image
    size, zoo_models8): 3x3 stride 2 pad 1 ceil_mode row-major, and 2x2 dilation 2
    column-major (storage_order 1), each from one artifact at two sizes, against loops."""
    for tag, attrs, k, s, d, p, ceil, cm in (
            ("ceil", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
             (3, 3), (2, 2), (1, 1), (1, 1), True, False),
            ("dilated_colmajor", dict(kernel_shape=[2, 2], strides=[2, 1], dilations=[2, 2], storage_order=1),
             (2, 2), (2, 1), (2, 2), (0, 0), False, True)):
        m = model([helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "h", "w"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                   helper.make_tensor_value_info("i", TensorProto.INT64, None)], [], opset=12)
        rxa, _ = built(tmp, m, "pool_" + tag, "MaxPool Indices (%s) over symbolic H, W builds" % tag)
        if not rxa:
            continue
        for shape in ((2, 3, 7, 10), (1, 3, 9, 6)):
            x = np.random.randn(*shape).astype(np.float32)
            got, pr = run(tmp, rxa, x=x)
            want = pool_ref(x, k, s, d, p, ceil, cm)
            ok = got is not None and all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))
            check(ok, "MaxPool Indices (%s) at %s equal the loops'" % (tag, shape),
                  pr.stderr[-300:] if got is None else str([g.shape for g in got]))


def main():
    np.random.seed(0)
    with tempfile.TemporaryDirectory(prefix="onnx-sym-") as tmp:
        pads(tmp)
        sym_matrix(tmp)
        trilu(tmp)
        norms(tmp)
        shuffle(tmp)
        pool_indices(tmp)
    print("%d failure(s)" % ti.failures)
    return 1 if ti.failures else 0


if __name__ == "__main__":
    sys.exit(main())
