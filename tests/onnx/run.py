#!/usr/bin/python3
"""ONNX backend-test conformance runner (docs/onnx.md, "Conformance").

For each test directory (model.onnx + test_data_set_*/input_*.pb, output_*.pb):
import and build with relaxc, run every data set with relax-run (inputs given in
order, --in FILE.npy), compare each output with the expected one: same dtype as the
model declares, same shape, allclose(rtol=1e-3, atol=1e-5), NaNs equal. Status per
test: pass, fail (wrong values, dtype or shape: the reason says which) or error
(import / build / run failed: the first located message). Prints one line per test,
a per-op table (op = the test model's first node's op_type; "expanded" tests count
under their op with the suffix) and the totals; --json FILE writes it all.
--min-pass N exits 1 when fewer than N tests pass (the CI sample's regression gate).

With --freeze-shape-inputs, integer graph inputs that feed shape operands (Reshape's
shape, Slice's starts, Unsqueeze's axes, ...: SHAPE_OPERANDS) are moved into the model
as initializers holding each data set's values before the build, since the importer
needs shapes at compile time; those tests are marked "frozen" in the JSON.

Usage: run.py --bin DIR [--suite DIR|NAME] [--tests NAMES_FILE] [--jobs 2] [--json OUT]
              [--min-pass N] [--filter SUBSTR] [--freeze-shape-inputs]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-5


def first_error(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    for l in lines[1:]:
        if not l.startswith("  "):
            return l.strip()[:200]
    return (lines[0] if lines else "no message")[:200]


def op_of(model_path, name):
    try:
        m = onnx.load(model_path, load_external_data=False)
        op = m.graph.node[0].op_type if m.graph.node else "?"
    except Exception:
        op = "?"
    return op + (" (expanded)" if "expanded" in name else "")


def compare(got, want):
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if got.dtype.kind in "fc":
        ok = np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok:
            err = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64))) if got.size else 0
            return "values differ (max abs error %.3g)" % err
        return None
    if not np.array_equal(got, want):
        return "values differ (%d of %d elements)" % (int(np.sum(got != want)), got.size)
    return None


# Operands that must be known at compile time (shapes, axes, counts): input index sets
# per op type ("*" every input). An integer graph input feeding one is frozen with
# --freeze-shape-inputs (see shape_inputs).
SHAPE_OPERANDS = {"Reshape": {1}, "Expand": {1}, "Tile": {1}, "Squeeze": {1},
                  "Unsqueeze": {1}, "Slice": {1, 2, 3, 4}, "Split": {1},
                  "ConstantOfShape": {0}, "Range": "*", "Trilu": {1}, "ReduceSum": {1},
                  "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
                  "ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSum": {1},
                  "ReduceLogSumExp": {1}, "ReduceSumSquare": {1}, "OneHot": {1}, "CumSum": {1}, "Pad": {1, 2},
                  "RNN": {4}, "GRU": {4}, "LSTM": {4}, "TopK": {1}, "Compress": {1},
                  "Dropout": {1, 2}, "MaxUnpool": {2},
                  "Resize": {1, 2, 3}, "Upsample": {1},
                  "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0}}
# Ops whose shape operands may have any numeric dtype (OneHot's depth is often float).
ANY_DTYPE = {"Range", "OneHot", "Resize", "Upsample", "Pad", "Compress", "Dropout"}


def shape_inputs(m):
    """Graph inputs used as shape operands: integer ones, and any type for Range."""
    ints = {i.name for i in m.graph.input
            if i.type.tensor_type.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)}
    inputs = {i.name for i in m.graph.input}
    found = []
    for n in m.graph.node:
        pos = SHAPE_OPERANDS.get(n.op_type)
        if not pos:
            continue
        for k, name in enumerate(n.input):
            ok = name in inputs if n.op_type in ANY_DTYPE else name in ints
            if (pos == "*" or k in pos) and ok and name not in found:
                found.append(name)
    return found


def build(args, model, rxa):
    """relaxc build; None on success, else the error fields."""
    try:
        p = subprocess.run([os.path.join(args.bin, "relaxc"), "build", model, "-o", rxa],
                           capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "stage": "build", "reason": "timeout"}
    if p.returncode != 0:
        stage = "import" if "invalid module" in p.stderr and "graph" in p.stderr else "build"
        return {"status": "error", "stage": stage, "reason": first_error(p.stderr)}
    return None


def run_test(args, tdir):
    name = os.path.basename(tdir)
    model = os.path.join(tdir, "model.onnx")
    res = {"test": name, "op": op_of(model, name)}
    run = os.path.join(args.bin, "relax-run")
    frozen = []
    if args.freeze_shape_inputs:
        try:
            mp = onnx.load(model, load_external_data=False)
            frozen = shape_inputs(mp)
        except Exception:
            frozen = []
    if frozen:
        res["frozen"] = frozen
    with tempfile.TemporaryDirectory(prefix="onnxconf-") as tmp:
        rxa = os.path.join(tmp, "m.rxa")
        if not frozen:
            err = build(args, model, rxa)
            if err:
                res.update(err)
                return res
        sets = sorted(d for d in os.listdir(tdir) if d.startswith("test_data_set_"))
        for s in sets:
            sd = os.path.join(tdir, s)
            ins = sorted((f for f in os.listdir(sd) if f.startswith("input_")),
                         key=lambda f: int(f[6:-3]))
            outs = sorted((f for f in os.listdir(sd) if f.startswith("output_")),
                          key=lambda f: int(f[7:-3]))
            tensors = []
            for f in ins:
                t = onnx.TensorProto()
                with open(os.path.join(sd, f), "rb") as fh:
                    t.ParseFromString(fh.read())
                tensors.append(t)
            real = [i.name for i in mp.graph.input] if frozen else []
            if frozen:  # this data set's shape inputs become initializers
                m2 = onnx.ModelProto()
                m2.CopyFrom(mp)
                for k, name in enumerate(real[:len(tensors)]):
                    if name in frozen:
                        t = onnx.TensorProto()
                        t.CopyFrom(tensors[k])
                        t.name = name
                        m2.graph.initializer.append(t)
                path = os.path.join(tmp, "frozen.onnx")
                onnx.save(m2, path)
                err = build(args, path, rxa)
                if err:
                    res.update(err)
                    return res
            cmd = [run, rxa]
            for i, t in enumerate(tensors):
                if frozen and i < len(real) and real[i] in frozen:
                    continue
                path = os.path.join(tmp, "in%d.npy" % i)
                np.save(path, numpy_helper.to_array(t))
                cmd += ["--in", path]
            od = os.path.join(tmp, "out_" + s)
            cmd += ["--out-dir", od]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                res.update(status="error", stage="run", reason="timeout")
                return res
            if p.returncode != 0:
                res.update(status="error", stage="run", reason=first_error("x\n" + p.stderr))
                return res
            for i, f in enumerate(outs):
                t = onnx.TensorProto()
                with open(os.path.join(sd, f), "rb") as fh:
                    t.ParseFromString(fh.read())
                want = numpy_helper.to_array(t)
                gp = os.path.join(od, "out%d.npy" % i)
                if not os.path.exists(gp):
                    res.update(status="fail", reason="output %d missing" % i)
                    return res
                why = compare(np.load(gp), want)
                if why:
                    res.update(status="fail", reason="%s output %d: %s" % (s, i, why))
                    return res
    res["status"] = "pass"
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--suite", default="node",
                    help="a directory of tests, or the name of a libonnx-testdata suite: "
                         "node (default), pytorch-converted, pytorch-operator, simple")
    ap.add_argument("--tests", help="file with one test name per line (a sample)")
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--json")
    ap.add_argument("--min-pass", type=int, default=-1)
    ap.add_argument("--freeze-shape-inputs", action="store_true",
                    help="integer graph inputs used as shapes/axes/counts become initializers "
                         "holding the data set's values (relaxd needs them at compile time)")
    args = ap.parse_args()
    if not os.path.isdir(args.suite):
        args.suite = os.path.join("/usr/share/libonnx-testdata/data", args.suite)
    names = sorted(os.listdir(args.suite))
    if args.tests:
        with open(args.tests) as f:
            want = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        missing = [n for n in want if n not in names]
        if missing:
            print("error: tests not in the suite: %s" % ", ".join(missing), file=sys.stderr)
            return 2
        names = want
    names = [n for n in names if args.filter in n
             and os.path.exists(os.path.join(args.suite, n, "model.onnx"))]
    dirs = [os.path.join(args.suite, n) for n in names]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        results = list(ex.map(lambda d: run_test(args, d), dirs))
    per_op = collections.OrderedDict()
    for r in sorted(results, key=lambda r: r["op"]):
        e = per_op.setdefault(r["op"], collections.Counter())
        e[r["status"]] += 1
    for r in results:
        extra = (" [%s] %s" % (r.get("stage", ""), r["reason"])) if r["status"] == "error" else (
            " " + r["reason"] if r["status"] == "fail" else "")
        print("%-5s %s%s" % (r["status"], r["test"], extra))
    print("\n%-28s %5s %5s %5s" % ("op", "pass", "fail", "error"))
    for op, c in per_op.items():
        print("%-28s %5d %5d %5d" % (op, c["pass"], c["fail"], c["error"]))
    tot = collections.Counter(r["status"] for r in results)
    print("\ntotal %d: pass %d, fail %d, error %d" % (len(results), tot["pass"], tot["fail"],
                                                     tot["error"]))
    nf = sum(1 for r in results if r.get("frozen") and r["status"] == "pass")
    if args.freeze_shape_inputs:
        print("(%d of the passes ran with shape inputs frozen into the model)" % nf)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "totals": dict(tot)}, f, indent=1)
    if args.min_pass >= 0 and tot["pass"] < args.min_pass:
        print("error: %d passes, fewer than the required %d" % (tot["pass"], args.min_pass),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
