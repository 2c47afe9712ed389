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
needs shapes at compile time; those tests are marked "frozen" in the JSON. Sequence and
optional graph inputs are rebuilt per data set from one tensor input per element and
SequenceConstruct / SequenceEmpty / Optional nodes (expand_input). Expected outputs are
read as the model declares them and flattened like the importer's outputs (a sequence's
tensors in place); a missing or extra tensor, or an unreadable value, is a fail.

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
                  "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0},
                  "DFT": {1}, "STFT": {1, 3}, "MelWeightMatrix": "*", "If": {0},
                  "Loop": {0, 1}, "SequenceAt": {1}, "SequenceInsert": {2},
                  "SequenceErase": {1}, "SplitToSequence": {1}}
# Ops whose shape operands may have any numeric dtype (OneHot's depth is often float).
ANY_DTYPE = {"Range", "OneHot", "Resize", "Upsample", "Pad", "Compress", "Dropout",
             "MelWeightMatrix", "If", "Loop"}


# Operands whose whole computation must be known at import (control flow): every graph
# input they are computed from is frozen, of any dtype.
COMPUTED_FROM = {"Loop": {0, 1}, "If": {0}, "Range": {0, 1, 2}}


def ancestors(m, names):
    """The graph inputs that the values `names` are computed from (main graph)."""
    producer = {o: n for n in m.graph.node for o in n.output}
    inputs = {i.name for i in m.graph.input}
    seen, pending, found = set(), list(names), []
    while pending:
        v = pending.pop()
        if v in seen or not v:
            continue
        seen.add(v)
        if v in inputs:
            found.append(v)
        elif v in producer:
            pending.extend(producer[v].input)
    return found


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
    for n in m.graph.node:
        pos = COMPUTED_FROM.get(n.op_type, ())
        for name in ancestors(m, [x for k, x in enumerate(n.input) if k in pos]):
            if name not in found:
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


def load_value(path, tp):
    """A test data file read as the graph's type declares it: an array (tensor), a list
    (sequence) or None / a value (optional). Raises on anything else (maps, strings)."""
    with open(path, "rb") as fh:
        data = fh.read()
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        t = onnx.TensorProto()
        t.ParseFromString(data)
        a = numpy_helper.to_array(t)
        if a.dtype.kind in "OSU":
            raise ValueError("string tensors are not supported")
        return a
    if kind == "sequence_type":
        q = onnx.SequenceProto()
        q.ParseFromString(data)
        if q.elem_type != onnx.SequenceProto.TENSOR:
            raise ValueError("only sequences of tensors are supported")
        v = numpy_helper.to_list(q)
        if any(not isinstance(e, np.ndarray) or e.dtype.kind in "OSU" for e in v):
            raise ValueError("only sequences of numeric tensors are supported")
        return v
    if kind == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        if o.elem_type == onnx.OptionalProto.UNDEFINED:
            return None
        if o.elem_type == onnx.OptionalProto.TENSOR:
            return numpy_helper.to_array(o.tensor_value)
        if o.elem_type == onnx.OptionalProto.SEQUENCE:
            return numpy_helper.to_list(o.sequence_value)
        raise ValueError("unsupported optional element")
    raise ValueError("unsupported value type %s" % kind)


def flatten(v):
    """The tensors of a value in order, as the importer returns a sequence or optional
    graph output: its elements in place (docs/onnx.md)."""
    if v is None:
        return []
    if isinstance(v, list):
        return [a for e in v for a in flatten(e)]
    return [v]


def expand_input(name, value, tp, nodes, inputs, feed):
    """A sequence / optional graph input (type tp) rebuilt from tensor inputs (one per
    element of this data set, with its static shape) and SequenceConstruct / SequenceEmpty
    / Optional nodes; returns the name that holds it."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        inputs.append(onnx.helper.make_tensor_value_info(
            name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype], list(value.shape)))
        feed.append(value)
        return name
    out = name + "__s"
    if kind == "sequence_type":
        elems = [expand_input("%s__%d" % (name, i), e, tp.sequence_type.elem_type, nodes,
                              inputs, feed) for i, e in enumerate(value)]
        nodes.append(onnx.helper.make_node("SequenceConstruct", elems, [out]) if elems else
                     onnx.helper.make_node("SequenceEmpty", [], [out]))
    else:  # an optional: None (empty) or its element
        inner = [] if value is None else [expand_input(name + "__v", value,
                                                       tp.optional_type.elem_type, nodes,
                                                       inputs, feed)]
        nodes.append(onnx.helper.make_node("Optional", inner, [out]))
    return out


def run_test(args, tdir):
    name = os.path.basename(tdir)
    model = os.path.join(tdir, "model.onnx")
    res = {"test": name, "op": op_of(model, name)}
    run = os.path.join(args.bin, "relax-run")
    frozen = []
    try:
        mp = onnx.load(model, load_external_data=False)
    except Exception as e:
        res.update(status="error", stage="import", reason="onnx cannot load the model: %s" % e)
        return res
    structured = [i.name for i in mp.graph.input if i.type.WhichOneof("value") != "tensor_type"]
    if args.freeze_shape_inputs:
        frozen = shape_inputs(mp) + structured
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
            try:
                values = [load_value(os.path.join(sd, f), mp.graph.input[k].type)
                          for k, f in enumerate(ins)]
                want = [a for k, f in enumerate(outs)
                        for a in flatten(load_value(os.path.join(sd, f), mp.graph.output[k].type))]
            except Exception as e:  # a value we cannot feed or compare is never a pass
                res.update(status="fail", reason="%s: cannot compare: %s" % (s, e))
                return res
            feed = []
            if frozen:  # this data set's shape inputs become initializers, sequences inputs
                m2 = onnx.ModelProto()
                m2.CopyFrom(mp)
                del m2.graph.input[:]
                pre = []
                for k, vi in enumerate(mp.graph.input):
                    if k >= len(values):
                        m2.graph.input.append(vi)
                    elif vi.name in structured:
                        src = expand_input(vi.name, values[k], vi.type, pre, m2.graph.input,
                                           feed)
                        pre.append(onnx.helper.make_node("Identity", [src], [vi.name]))
                    elif vi.name in frozen:
                        t = numpy_helper.from_array(values[k], vi.name)
                        m2.graph.initializer.append(t)
                    elif structured:  # the data set's static shape, as for the elements
                        m2.graph.input.append(onnx.helper.make_tensor_value_info(
                            vi.name, vi.type.tensor_type.elem_type, list(values[k].shape)))
                        feed.append(values[k])
                    else:
                        m2.graph.input.append(vi)
                        feed.append(values[k])
                nodes = list(m2.graph.node)
                del m2.graph.node[:]
                m2.graph.node.extend(pre + nodes)
                path = os.path.join(tmp, "frozen.onnx")
                onnx.save(m2, path)
                err = build(args, path, rxa)
                if err:
                    res.update(err)
                    return res
            else:
                feed = values
            cmd = [run, rxa]
            for i, a in enumerate(feed):
                path = os.path.join(tmp, "in%d.npy" % i)
                np.save(path, a)
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
            for i, w in enumerate(want):
                gp = os.path.join(od, "out%d.npy" % i)
                if not os.path.exists(gp):
                    res.update(status="fail", reason="output %d missing" % i)
                    return res
                why = compare(np.load(gp), w)
                if why:
                    res.update(status="fail", reason="%s output %d: %s" % (s, i, why))
                    return res
            if os.path.exists(os.path.join(od, "out%d.npy" % len(want))):
                res.update(status="fail", reason="%s: more outputs than the %d expected tensors"
                           % (s, len(want)))
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
