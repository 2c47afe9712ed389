#!/usr/bin/python3
"""Detection and normalization operators through the ONNX importer and relax-run
(docs/onnx.md, docs/ops.md), each model built with onnx.helper, compiled once with
relaxc and compared with a NumPy reference:
  nms        NonMaxSuppression (vision.all_class_non_max_suppression, the VM's nms
             built-in): corner boxes given by either diagonal and center boxes, 2
             batches x 3 classes, every combination of the optional inputs (omitted,
             trailing or before a given one: ONNX's defaults), a symbolic box count
             run at two sizes from one artifact, a max_output of INT64_MAX as
             torchvision's export writes it, then a Gather of the kept boxes; the
             selected rows (batch, class, box) equal the reference exactly. A bad
             iou_threshold is a clear run-time error; an OpenCL artifact (PoCL) runs
             the built-in on the host.
  lpnorm     LpNormalization p = 1 and 2 on the last and a middle axis
  lppool     LpPool p = 2 and 3 (kernel 3x3, stride 2, pads) and GlobalLpPool p = 2,
             within rtol 1e-5 of float64 NumPy
Usage: test_detect_ops.py BUILD_DIR
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_check import start  # noqa: E402
from onnx_runner import Runner  # noqa: E402

INT64_MAX = 2**63 - 1


# ---- references ----

def nms_ref(boxes, scores, max_out, iou_thr, score_thr, cpb):
    """ONNX NonMaxSuppression in float64: rows (batch, class, box)."""
    rows = []
    for b in range(boxes.shape[0]):
        bx = boxes[b].astype(np.float64)
        if cpb:
            x, y, w, h = bx.T
            c = np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], 1)
        else:
            c = np.stack([np.minimum(bx[:, 0], bx[:, 2]), np.minimum(bx[:, 1], bx[:, 3]),
                          np.maximum(bx[:, 0], bx[:, 2]), np.maximum(bx[:, 1], bx[:, 3])], 1)
        area = (c[:, 2] - c[:, 0]) * (c[:, 3] - c[:, 1])
        for k in range(scores.shape[1]):
            s = scores[b, k].astype(np.float64)
            cand = [i for i in range(len(s)) if score_thr is None or s[i] > score_thr]
            cand.sort(key=lambda i: (-s[i], i))
            sel = []
            for i in cand:
                if len(sel) >= max_out:
                    break
                ok = True
                for j in sel:
                    ih = min(c[i, 2], c[j, 2]) - max(c[i, 0], c[j, 0])
                    iw = min(c[i, 3], c[j, 3]) - max(c[i, 1], c[j, 1])
                    if ih <= 0 or iw <= 0 or area[i] <= 0 or area[j] <= 0:
                        continue
                    inter = ih * iw
                    if inter / (area[i] + area[j] - inter) > iou_thr:
                        ok = False
                        break
                if ok:
                    sel.append(i)
                    rows.append((b, k, i))
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def random_boxes(rng, b, n, cpb):
    """Boxes clustered so that many overlap; corner ones with random diagonals."""
    ctr = rng.uniform(0, 10, (b, n, 2))
    wh = rng.uniform(0.5, 3, (b, n, 2))
    if cpb:
        return np.concatenate([ctr[..., ::-1], wh[..., ::-1]], -1).astype(np.float32)
    lo, hi = ctr - wh / 2, ctr + wh / 2
    out = np.concatenate([lo, hi], -1)
    flip = rng.random((b, n)) < 0.5
    out[flip] = out[flip][:, [2, 3, 0, 1]]
    return out.astype(np.float32)


# ---- models ----

def const(name, value, dtype):
    t = helper.make_tensor(name, dtype, [1], [value])
    return helper.make_node("Constant", [], [name], value=t)


def nms_model(n, optional, cpb, gather=False):
    """NonMaxSuppression with the optional inputs given as (max, iou, score) constants
    or None (omitted: "" before a given one, dropped at the end)."""
    names = ["max", "iou", "score"]
    dtypes = [TensorProto.INT64, TensorProto.FLOAT, TensorProto.FLOAT]
    nodes, ins = [], ["boxes", "scores"]
    last = max([i for i, v in enumerate(optional) if v is not None], default=-1)
    for i in range(last + 1):
        if optional[i] is None:
            ins.append("")
        else:
            nodes.append(const(names[i], optional[i], dtypes[i]))
            ins.append(names[i])
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["b", n, 4]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["b", "c", n])]
    nodes.append(helper.make_node("NonMaxSuppression", ins, ["sel"], center_point_box=cpb))
    outputs = [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])]
    if gather:  # torchvision's pattern: the kept boxes of batch 0 by the selection's last column
        nodes += [const("two", 2, TensorProto.INT64),
                  helper.make_node("Gather", ["sel", "two"], ["col"], axis=1),
                  helper.make_node("Squeeze", ["col"], ["idx"], axes=[1]),
                  const("zero", 0, TensorProto.INT64),
                  helper.make_node("Gather", ["boxes", "zero"], ["b0"], axis=0),
                  helper.make_node("Squeeze", ["b0"], ["b0s"], axes=[0]),
                  helper.make_node("Gather", ["b0s", "idx"], ["kept"], axis=0)]
        outputs.append(helper.make_tensor_value_info("kept", TensorProto.FLOAT, [None, 4]))
    g = helper.make_graph(nodes, "nms", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def unary_model(node, x_shape, y_shape, opset=13):
    g = helper.make_graph([node], "m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


# ---- running ----

def test_nms(r, rng):
    check = r.checks.check
    b, c = 2, 3
    combos = [((5, 0.5, 0.3), "all"), ((5, 0.5, None), "no score threshold"),
              ((4, None, None), "max only"), ((None, 0.4, 0.2), "max omitted (0)"),
              ((INT64_MAX, None, 0.5), "iou omitted (0.0)"), ((None, None, None), "none")]
    for cpb in (0, 1):
        for opt, what in combos:
            name = "nms_cpb%d_%s" % (cpb, what.split()[0])
            rxa, _ = r.build(nms_model(40, list(opt), cpb), name)
            if not rxa:
                continue
            boxes = random_boxes(rng, b, 40, cpb)
            scores = rng.permutation(b * c * 40).reshape(b, c, 40).astype(np.float32) / (b * c * 40)
            got, err = r.outputs(rxa, {"boxes": boxes, "scores": scores})
            want = nms_ref(boxes, scores, opt[0] or 0, opt[1] or 0.0, opt[2], cpb)
            ok = got is not None and got[0].dtype == np.int64 and np.array_equal(got[0], want)
            check(ok, "nms center_point_box=%d, %s: %d rows equal the reference%s"
                  % (cpb, what, len(want), "" if ok else ": got %s / %s" % (got, err[-800:])))
    # a symbolic box count: one artifact, two sizes, and the kept boxes gathered
    rxa, _ = r.build(nms_model("n", [INT64_MAX, 0.45, None], 0, gather=True), "nms_sym")
    for n in (7, 300):
        if not rxa:
            break
        boxes = random_boxes(rng, 1, n, 0)
        scores = rng.random((1, 2, n)).astype(np.float32)
        got, err = r.outputs(rxa, {"boxes": boxes, "scores": scores})
        want = nms_ref(boxes, scores, INT64_MAX, 0.45, None, 0)
        ok = got is not None and np.array_equal(got[0], want) and \
            np.array_equal(got[1], boxes[0][want[:, 2]])
        check(ok, "nms symbolic n=%d (INT64_MAX boxes, then Gather): %d rows and their boxes"
              % (n, len(want)) + ("" if ok else ": %s / %s" % (got, err[-800:])))
    # a bad threshold is a run-time error naming it
    rxa, _ = r.build(nms_model(8, [3, 1.5, None], 0), "nms_bad_iou")
    if rxa:
        boxes = random_boxes(rng, 1, 8, 0)
        got, err = r.outputs(rxa, {"boxes": boxes, "scores": rng.random((1, 1, 8)).astype(np.float32)})
        check(got is None and "iou_threshold must be in [0, 1]" in err,
              "nms iou_threshold 1.5: a clear error (%s)" % err.strip()[-200:])
    # OpenCL (PoCL here): the built-in runs on the host between device moves
    rxa, _ = r.build(nms_model(30, [3, 0.5, 0.1], 0), "nms_opencl", "opencl")
    if rxa:
        boxes = random_boxes(rng, 2, 30, 0)
        scores = rng.random((2, 3, 30)).astype(np.float32)
        got, err = r.outputs(rxa, {"boxes": boxes, "scores": scores})
        want = nms_ref(boxes, scores, 3, 0.5, 0.1, 0)
        check(got is not None and np.array_equal(got[0], want),
              "nms on opencl: %d rows equal the reference %s" % (len(want), err[-400:]))


def test_norms(r, rng):
    check = r.checks.check
    x = rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    for p in (1, 2):
        for axis in (-1, 1):
            node = helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis)
            rxa, _ = r.build(unary_model(node, ["b", 5, 6, 7], ["b", 5, 6, 7]), "lpnorm%d_%d" % (p, axis))
            if not rxa:
                continue
            got, err = r.outputs(rxa, {"x": x})
            x64 = x.astype(np.float64)
            want = x64 / np.linalg.norm(x64, ord=p, axis=axis, keepdims=True) if p == 2 else \
                x64 / np.abs(x64).sum(axis=axis, keepdims=True)
            ok = got is not None and np.allclose(got[0], want, rtol=1e-5, atol=1e-6)
            check(ok, "LpNormalization p=%d axis=%d%s" % (p, axis, "" if ok else ": " + err[-600:]))
    xp = np.abs(rng.standard_normal((2, 3, 9, 10))).astype(np.float32) + 0.1
    for p in (2, 3):
        node = helper.make_node("LpPool", ["x"], ["y"], p=p, kernel_shape=[3, 3], strides=[2, 2],
                                pads=[1, 1, 1, 1])
        rxa, _ = r.build(unary_model(node, [2, 3, 9, 10], [2, 3, 5, 5], 18), "lppool%d" % p)
        if not rxa:
            continue
        got, err = r.outputs(rxa, {"x": xp})
        pad = np.pad(xp.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        want = np.zeros((2, 3, 5, 5))
        for i in range(5):
            for j in range(5):
                win = pad[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                want[:, :, i, j] = (np.abs(win) ** p).sum(axis=(2, 3)) ** (1.0 / p)
        ok = got is not None and np.allclose(got[0], want, rtol=1e-5, atol=1e-6)
        check(ok, "LpPool p=%d 3x3 stride 2 pads 1%s" % (p, "" if ok else ": %s" % err[-600:]))
    node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=2)
    rxa, _ = r.build(unary_model(node, ["b", 3, "h", "w"], ["b", 3, 1, 1]), "globallppool")
    if rxa:
        got, err = r.outputs(rxa, {"x": xp})
        want = np.sqrt((xp.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True))
        ok = got is not None and np.allclose(got[0], want, rtol=1e-5, atol=1e-6)
        check(ok, "GlobalLpPool p=2, symbolic h and w%s" % ("" if ok else ": " + err[-600:]))


def main():
    tools = start(sys.argv, __doc__)
    if tools is None:
        return 2
    relaxc, relax_run, checks = tools
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(prefix="rx_detect.") as tmp:
        r = Runner(relaxc, relax_run, checks, tmp)
        test_nms(r, rng)
        test_norms(r, rng)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
