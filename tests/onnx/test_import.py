#!/usr/bin/python3
"""The ONNX importer through relaxc (docs/onnx.md): cache keys, located errors, hostile
models, external data, weights as parameters.

Each check builds a small model with onnx.helper and asserts on relaxc's exit status and
messages (or on numbers against NumPy). A crash (a signal, a sanitizer report) fails.
Usage: test_import.py BIN_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BIN = sys.argv[1]
RELAXC = os.path.join(BIN, "relaxc")
RUN = os.path.join(BIN, "relax-run")
failures = 0


def check(cond, what, detail=""):
    global failures
    print("%s %s%s" % ("PASS" if cond else "FAIL", what, "" if cond else "\n  " + detail[:800]))
    failures += 0 if cond else 1


def relaxc(*args):
    return subprocess.run([RELAXC] + list(args), capture_output=True, text=True)


def small_model(opset=13, w=None, op="Relu"):
    W = numpy_helper.from_array(
        w if w is not None else (np.arange(12, dtype=np.float32).reshape(4, 3) / 10), "W")
    b = numpy_helper.from_array(np.array([1, -2, 3], dtype=np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["a"], name="bias"),
             helper.make_node(op, ["a"], ["y"], name="act")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [W, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def b64(a):
    import base64
    return base64.b64encode(a.tobytes()).decode()


def hand_json():
    """The small model written by hand: other variable names, same graph."""
    W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([1, -2, 3], dtype=np.float32)
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "inp", "type": {"tensor": {"shape": ["batch", 4], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": [
            {"var": "t0", "value": {"op": "matmul", "args": ["inp", {"const": {
                "dtype": "f32", "shape": [4, 3], "data": b64(W)}}]}},
            {"var": "t1", "value": {"op": "add", "args": ["t0", {"const": {
                "dtype": "f32", "shape": [3], "data": b64(b)}}]}},
            {"var": "out", "value": {"op": "nn.relu", "args": ["t1"]}}]}],
            "result": "out"}}}}


def main():
    with tempfile.TemporaryDirectory(prefix="onnx-import-") as tmp:
        def save(m, name):
            p = os.path.join(tmp, name)
            onnx.save(m, p)
            return p

        # 1. the same graph as ONNX and as hand-written relax-json: one cache key
        onnx_path = save(small_model(), "small.onnx")
        js = os.path.join(tmp, "hand.json")
        with open(js, "w") as f:
            json.dump(hand_json(), f)
        ka, kb = relaxc("hash", onnx_path), relaxc("hash", js)
        check(ka.returncode == 0 and ka.stdout == kb.stdout and len(ka.stdout.strip()) == 64,
              "ONNX and hand-written relax-json share the cache key", ka.stderr + kb.stderr)
        other = save(small_model(op="Sigmoid"), "other.onnx")
        check(relaxc("hash", other).stdout != ka.stdout, "a different graph has another key")

        # 2. it runs and equals NumPy, the input bound positionally
        rxa = os.path.join(tmp, "small.rxa")
        r = relaxc("build", onnx_path, "-o", rxa)
        x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
        np.save(os.path.join(tmp, "x.npy"), x)
        p = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "x.npy"), "--out-dir",
                            os.path.join(tmp, "o")], capture_output=True, text=True)
        want = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) +
                          np.array([1, -2, 3], np.float32), 0)
        got = np.load(os.path.join(tmp, "o", "out0.npy")) if p.returncode == 0 else None
        check(r.returncode == 0 and got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "small model equals NumPy", r.stderr + p.stderr)

        # 3. located errors: unsupported op and attribute name the node, op_type and opset
        bad = small_model(op="Bernoulli")
        r = relaxc("build", save(bad, "bad_op.onnx"), "-o", rxa)
        check(r.returncode == 1 and "graph.node[2]: Bernoulli 'act' (opset 13): operator is not "
              "supported" in r.stderr, "unsupported op is a located error", r.stderr)
        r = relaxc("build", save(small_model(op="Det"), "bad_det.onnx"), "-o", rxa)
        check(r.returncode == 1 and "graph.node[2]: Det 'act' (opset 13): needs square matrices "
              "of a literal size" in r.stderr, "unsupported Det shape is a located error", r.stderr)
        m = small_model()
        m.graph.node[2].attribute.append(helper.make_attribute("bogus", 3))
        r = relaxc("check", save(m, "bad_attr.onnx"))
        check(r.returncode == 1 and "graph.node[2]: Relu 'act' (opset 13): attribute 'bogus' is "
              "not supported" in r.stderr, "unsupported attribute is a located error", r.stderr)
        r = relaxc("check", save(small_model(opset=19), "opset19.onnx"))
        check(r.returncode == 1 and "opset 19 is not supported" in r.stderr, "opset out of range",
              r.stderr)

        # 4. hostile models: clear errors, never a crash
        data = open(onnx_path, "rb").read()
        hostile = {"truncated": data[:len(data) // 2], "garbage": bytes(range(256)) * 4,
                   "empty": b""}
        m = small_model()
        m.graph.node[0].input[0] = "nowhere"
        hostile["dangling"] = m.SerializeToString()
        m = small_model()
        m.graph.node[0].input[0] = "y"  # consumes the last node's output: a cycle
        hostile["cycle"] = m.SerializeToString()
        m = small_model()
        m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 1 << 50
        m.graph.input[0].type.tensor_type.shape.dim[1].ClearField("dim_param")
        hostile["absurd_dim"] = m.SerializeToString()
        m = small_model()
        huge = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[1 << 22, 1 << 22])
        m.graph.node.insert(0, helper.make_node("Constant", [], ["k"], value=huge))
        hostile["huge_attr_tensor"] = m.SerializeToString()
        m = small_model()
        m.graph.initializer[0].dims[0] = 400  # payload does not match the dims
        hostile["short_payload"] = m.SerializeToString()
        expect = {"truncated": "does not decode", "garbage": "does not decode",
                  "empty": "no graph", "dangling": "'nowhere' is not produced",
                  "cycle": "'y' is not produced", "absurd_dim": "dim 1 is 1125899906842624",
                  "huge_attr_tensor": "more than 2^40 elements",
                  "short_payload": "payload has 48 bytes"}
        for name, blob in hostile.items():
            p = os.path.join(tmp, name + ".onnx")
            with open(p, "wb") as f:
                f.write(blob)
            r = relaxc("check", p)
            check(r.returncode == 1 and expect[name] in r.stderr, "hostile %s: clear error" % name,
                  "rc %d: %s" % (r.returncode, r.stderr))

        # 5. external data next to the model is read; a path escaping the directory is not
        ext = os.path.join(tmp, "ext")
        os.makedirs(ext)
        big = np.random.RandomState(1).randn(4, 3).astype(np.float32)
        m = small_model(w=big)
        onnx.save_model(m, os.path.join(ext, "m.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="m.data", size_threshold=0)
        r = relaxc("build", os.path.join(ext, "m.onnx"), "-o", rxa)
        p = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "x.npy"), "--out-dir",
                            os.path.join(tmp, "o2")], capture_output=True, text=True)
        want = np.maximum(x @ big + np.array([1, -2, 3], np.float32), 0)
        got = np.load(os.path.join(tmp, "o2", "out0.npy")) if p.returncode == 0 else None
        check(r.returncode == 0 and got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "external data is read", r.stderr + p.stderr)
        out = os.path.join(ext, "mp.json")  # weights as params: copied from m.data
        r = relaxc("import", os.path.join(ext, "m.onnx"), "-o", out, "--weights", "params")
        raw = open(os.path.join(ext, "mp.safetensors"), "rb").read() if r.returncode == 0 else b""
        ok = False
        if raw:
            n = struct.unpack("<Q", raw[:8])[0]
            hdr = json.loads(raw[8:8 + n])
            lo, hi = hdr["W"]["data_offsets"]
            ok = np.array_equal(np.frombuffer(raw[8 + n + lo:8 + n + hi], np.float32).reshape(4, 3), big)
        check(ok, "external weights stream into the safetensors file", r.stderr)
        m = onnx.load(os.path.join(ext, "m.onnx"), load_external_data=False)
        for e in m.graph.initializer[0].external_data:
            if e.key == "location":
                e.value = "../../etc/passwd"
        r = relaxc("check", save(m, "ext/escape.onnx"))
        check(r.returncode == 1 and "must be a relative path below" in r.stderr,
              "external data outside the model's directory is refused", r.stderr)

        # 6. --weights params: the initializers become parameters and a .safetensors file
        out = os.path.join(tmp, "p.json")
        r = relaxc("import", onnx_path, "-o", out, "--weights", "params")
        st = os.path.join(tmp, "p.safetensors")
        ok = r.returncode == 0 and os.path.exists(st)
        if ok:
            mod = json.load(open(out))
            names = [p["name"] for p in mod["functions"]["main"]["params"]]
            raw = open(st, "rb").read()
            n = struct.unpack("<Q", raw[:8])[0]
            hdr = json.loads(raw[8:8 + n])
            w = np.frombuffer(raw[8 + n + hdr["W"]["data_offsets"][0]:8 + n + hdr["W"]["data_offsets"][1]],
                              np.float32).reshape(hdr["W"]["shape"])
            ok = (names == ["x", "W", "b"] and hdr["W"]["dtype"] == "F32" and
                  np.array_equal(w, np.arange(12, dtype=np.float32).reshape(4, 3) / 10))
        check(ok, "--weights params writes parameters and safetensors", r.stderr)
        rxa2 = os.path.join(tmp, "p.rxa")
        r = relaxc("build", out, "-o", rxa2)
        p = subprocess.run([RUN, rxa2, "--weights", st, "--in", os.path.join(tmp, "x.npy"),
                            "--out-dir", os.path.join(tmp, "o3")], capture_output=True, text=True)
        got = np.load(os.path.join(tmp, "o3", "out0.npy")) if p.returncode == 0 else None
        want = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) +
                          np.array([1, -2, 3], np.float32), 0)
        check(got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "relax-run --weights binds parameters by name", r.stderr + p.stderr)
        with open(os.path.join(tmp, "bad.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 38) + b'{"W": {"dtype": "F32", "shape": [4, 3]')
        p = subprocess.run([RUN, rxa2, "--weights", os.path.join(tmp, "bad.safetensors")],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "bad.safetensors: header: expected" in p.stderr,
              "a truncated safetensors file is a clear error", p.stderr)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
