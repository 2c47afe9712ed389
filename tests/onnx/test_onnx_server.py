#!/usr/bin/python3
"""relaxd and the relax CLI with ONNX models (docs/onnx.md, "relaxd").

usage: test_onnx_server.py BIN_DIR [SOURCE_DIR]

POST /v1/compile {"onnx": base64} compiles the model and reports the same cache key as
`relaxc hash MODEL.onnx`; a model with an unsupported op is a 400 invalid_module with
the node's location; bad base64 and both "module" and "onnx" are 400 bad_request;
`relax compile MODEL.onnx` compiles through the daemon and prints the artifact id.
"""
import base64
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import rxtest  # noqa: E402
from rxtest import case, expect, expect_error  # noqa: E402

BIN = rxtest.bin_dir()
TMP = rxtest.scratch("relaxd-onnx-")
D = None


def model(op="Relu"):
    W = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                           helper.make_node(op, ["h"], ["y"], name="act")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [W])
    path = os.path.join(TMP, op + ".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def test_compile_onnx_same_key():
    path = model()
    st, _, body = D.json("POST", "/v1/compile", {"onnx": b64(path)})
    expect(st == 200, "compile %s %s" % (st, body))
    key = subprocess.run([os.path.join(BIN, "relaxc"), "hash", path], capture_output=True,
                         text=True).stdout.strip()
    expect(body["key"] == key, "relaxd key %s, relaxc hash %s" % (body["key"], key))
    st, _, again = D.json("POST", "/v1/compile", {"onnx": b64(path)})
    expect(st == 200 and again["cached"] is True and again["artifact"] == body["artifact"],
           "second compile %s %s" % (st, again))


def test_onnx_errors():
    st, _, body = D.json("POST", "/v1/compile", {"onnx": b64(model("Det"))})
    expect_error(st, body, 400, "invalid_module")
    errs = body["error"]["errors"]
    expect(errs and errs[0]["path"] == "graph.node[1]" and "Det 'act' (opset 13)" in
           errs[0]["message"], "errors %s" % errs)
    st, _, body = D.json("POST", "/v1/compile", {"onnx": "not base64!"})
    expect_error(st, body, 400, "bad_request")
    st, _, body = D.json("POST", "/v1/compile", {"onnx": b64(model()), "module": {}})
    expect_error(st, body, 400, "bad_request")
    st, _, body = D.json("POST", "/v1/compile", {"onnx": base64.b64encode(b"garbage").decode()})
    expect_error(st, body, 400, "invalid_module")


def test_cli_compile_onnx():
    path = model("Sigmoid")
    p = subprocess.run([os.path.join(BIN, "relax"), "compile", path], capture_output=True,
                       text=True, env=dict(os.environ, RELAX_SERVER=D.url))
    expect(p.returncode == 0 and len(p.stdout.split()[0]) == 64 and "compiled" in p.stdout,
           "relax compile: %d %s %s" % (p.returncode, p.stdout, p.stderr))


def main():
    global D
    D = rxtest.Relaxd()
    for fn in [test_compile_onnx_same_key, test_onnx_errors, test_cli_compile_onnx]:
        case(fn)
    rxtest.record("daemon_exit", D.stop() == 0, "exit")
    return rxtest.summary()


if __name__ == "__main__":
    sys.exit(main())
