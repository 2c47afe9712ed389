#!/usr/bin/python3
"""Import time of a decoder stack with its weights as parameters (docs/onnx.md).

Writes an ONNX decoder of L layers (hidden H, H/128 heads, MLP 4H with the Erf GELU
PyTorch exports; per layer LayerNorm, Q/K/V/O and up/down MatMuls, attention with
Reshape [0, 0, heads, 128] / Transpose / Softmax, residuals) whose weights (12 H^2 f32
per layer, random) are ONNX external data in one file, then times, in the same run:
  relaxc import M.onnx -o M.json --weights params   (weights streamed into M.safetensors)
  cp of the external-data file                       (the reference: moving the same bytes)
and reports the medians, their ratio, and relaxc's peak RSS (it must stay far below the
weights' size: they are never all in memory).

Usage: bench_onnx_import.py --relaxc BIN [--layers 32] [--hidden 1024] [--repeat 3]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model(dirpath, L, H):
    heads, hd = H // 128 if H >= 128 else 1, 128 if H >= 128 else H
    data = open(os.path.join(dirpath, "m.data"), "wb")
    inits, nodes = [], []
    rng = np.random.RandomState(0)

    def weight(name, shape):
        n = int(np.prod(shape))
        off = data.tell()
        a = (rng.standard_normal(n).astype(np.float32) * 0.02)
        data.write(a.tobytes())
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "m.data"), ("offset", str(off)), ("length", str(n * 4))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
        return name

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    const("sh4", np.array([0, 0, heads, hd], np.int64))
    const("sh3", np.array([0, 0, H], np.int64))
    const("scale", np.array(hd ** 0.5, np.float32))
    const("half", np.array(0.5, np.float32))
    const("one", np.array(1.0, np.float32))
    const("rsqrt2", np.array(2 ** -0.5, np.float32))
    x = "x"
    for l in range(L):
        p = "l%d_" % l
        const(p + "g1", np.ones(H, np.float32))
        const(p + "b1", np.zeros(H, np.float32))
        const(p + "g2", np.ones(H, np.float32))
        const(p + "b2", np.zeros(H, np.float32))
        n = lambda op, ins, out, **kw: nodes.append(helper.make_node(op, ins, [p + out], **kw)) or p + out
        h = n("LayerNormalization", [x, p + "g1", p + "b1"], "ln1", axis=-1)
        qkv = []
        for w in "qkv":
            m = n("MatMul", [h, weight(p + "w" + w, [H, H])], w)
            r = n("Reshape", [m, "sh4"], w + "r")
            qkv.append(n("Transpose", [r], w + "t", perm=[0, 2, 1, 3]))
        kt = n("Transpose", [qkv[1]], "kT", perm=[0, 1, 3, 2])
        s = n("Div", [n("MatMul", [qkv[0], kt], "s0"), "scale"], "s")
        a = n("MatMul", [n("Softmax", [s], "p", axis=-1), qkv[2]], "a")
        a = n("Reshape", [n("Transpose", [a], "at", perm=[0, 2, 1, 3]), "sh3"], "ar")
        x = n("Add", [x, n("MatMul", [a, weight(p + "wo", [H, H])], "o")], "res1")
        h = n("LayerNormalization", [x, p + "g2", p + "b2"], "ln2", axis=-1)
        u = n("MatMul", [h, weight(p + "wup", [H, 4 * H])], "up")
        g = n("Mul", [n("Mul", [u, "half"], "uh"),
                      n("Add", [n("Erf", [n("Mul", [u, "rsqrt2"], "us")], "e"), "one"], "e1")], "gelu")
        x = n("Add", [x, n("MatMul", [g, weight(p + "wdown", [4 * H, H])], "down")], "res2")
    data.close()
    g = helper.make_graph(nodes, "decoder",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", H])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", H])],
                          inits)
    path = os.path.join(dirpath, "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, os.path.getsize(os.path.join(dirpath, "m.data"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--relaxc", required=True)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="onnx-import-bench-", dir="/var/tmp") as tmp:
        t0 = time.perf_counter()
        model, nbytes = build_model(tmp, args.layers, args.hidden)
        gen_s = time.perf_counter() - t0
        imp, cp = [], []
        for _ in range(args.repeat):
            for what in ("import", "cp"):
                out = os.path.join(tmp, "out.json")
                t0 = time.perf_counter()
                if what == "import":
                    p = subprocess.run([args.relaxc, "import", model, "-o", out, "--weights", "params"],
                                       capture_output=True, text=True)
                    if p.returncode:
                        print(p.stderr, file=sys.stderr)
                        return 1
                    imp.append(time.perf_counter() - t0)
                else:
                    shutil.copyfile(os.path.join(tmp, "m.data"), os.path.join(tmp, "copy.data"))
                    cp.append(time.perf_counter() - t0)
                for f in ("out.json", "out.safetensors", "copy.data"):
                    if os.path.exists(os.path.join(tmp, f)):
                        os.remove(os.path.join(tmp, f))
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        res = {"layers": args.layers, "hidden": args.hidden, "weights_bytes": nbytes,
               "generate_s": round(gen_s, 2), "import_s": round(statistics.median(imp), 3),
               "cp_s": round(statistics.median(cp), 3),
               "import_over_cp": round(statistics.median(imp) / statistics.median(cp), 2),
               "relaxc_peak_rss_bytes": rss}
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
