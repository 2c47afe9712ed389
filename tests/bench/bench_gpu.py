#!/usr/bin/env python3
"""bench_gpu.py — what the OpenCL target costs on this machine (docs/gpu.md).

    /usr/bin/python3 tests/bench/bench_gpu.py --relaxc R --relax-run RR [--repeat 5]

The "GPU" here is PoCL running on the CPU, so absolute times say little about a real
GPU; what this measures is meaningful anyway:

1. Launch overhead per kernel, through the VM: a chain of K = 32 adds on a (64,) f32
   tensor built twice at O2, with fuse_ops off (32 loop functions: 32 launches per call)
   and on (one fused function: 1 launch), for opencl and, as the reference in the same
   run, cpu. (t_unfused - t_fused) / 31 is the cost of one more kernel in a call: the
   launch and its arguments (and for opencl the device's queue), inside one call that
   synchronizes once. Reported in µs and as a ratio to the CPU's per-kernel cost.
2. Work per element of a fused softmax (rows of n = 1000): the global loads and stores
   per output element of the generated kernels, counted in their source (the
   per-element loop of each kernel: a rows kernel's strided loop, a grid kernel's
   body), against the minimum of one load and one store (a kernel keeping the row on
   chip). Checked by running it: the output must equal NumPy's softmax.

Prints a table and one JSON line per figure; exits 1 when a result is wrong.
"""
import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

import rxbench

K = 32


def chain_module(k):
    b = []
    prev = "x"
    for i in range(k):
        b.append({"var": "a%d" % i, "value": {"op": "add", "args": [prev, "one"]}})
        prev = "a%d" % i
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "x", "type": {"tensor": {"shape": ["n"], "dtype": "f32"}}},
                   {"name": "one", "type": {"tensor": {"shape": [1], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": b}], "result": prev}}}}


SOFTMAX = {"format": "relax-json", "version": 1, "functions": {"main": {
    "kind": "relax", "params": [{"name": "x", "type": {"tensor": {"shape": ["r", "n"], "dtype": "f32"}}}],
    "body": {"blocks": [{"dataflow": True, "bindings": [
        {"var": "y", "value": {"op": "nn.softmax", "args": ["x"]}}]}], "result": "y"}}}}


def kernels_of(src):
    """{name: text} of the __kernel functions of an OpenCL source."""
    out, cur, depth = {}, None, 0
    for line in src.splitlines():
        m = re.match(r"__kernel void (\w+)\(", line)
        if m:
            cur, depth, out[m.group(1)] = m.group(1), 0, []
        if cur:
            out[cur].append(line)
            depth += line.count("{") - line.count("}")
            if depth == 0 and "}" in line:
                cur = None
    return {k: "\n".join(v) for k, v in out.items()}


def per_element(text):
    """(loads, stores) of global buffers in the per-element loop of one kernel."""
    views = re.findall(r"__global \w+ \*const (\w+) =", text)
    head = "for (long rx_k" if "rx_red" in text else "for (long rx_g"
    body = text[text.index(head):] if head in text else ""
    if "rx_red" in text:  # the strided loop alone; the tree and the final store are per row
        depth, cut = 0, 0
        for i, c in enumerate(body):
            depth += (c == "{") - (c == "}")
            if c == "}" and depth == 0:
                cut = i
                break
        body = body[:cut]
    loads = stores = 0
    for v in views:
        for m in re.finditer(r"\b%s\[" % re.escape(v), body):
            rest = body[m.end():]
            close = rest.index("]")  # indices hold no nested brackets in these kernels
            if re.match(r"\]\s*=[^=]", rest[close:]):
                stores += 1
            else:
                loads += 1
    return loads, stores


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relaxc", required=True)
    ap.add_argument("--relax-run", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rx-bench-gpu-")
    lines, failed, rows = [], [], []
    note, warn = rxbench.load_note()
    if warn:
        print(warn)

    # 1. launch overhead per kernel
    src = os.path.join(tmp, "chain.json")
    json.dump(chain_module(K), open(src, "w"))
    x = np.arange(64, dtype=np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "one.npy"), np.ones(1, dtype=np.float32))
    ins = {"x": os.path.join(tmp, "x.npy"), "one": os.path.join(tmp, "one.npy")}
    per = {}
    for target in ("cpu", "opencl"):
        t = {}
        for fused in (False, True):
            rxa = os.path.join(tmp, "chain_%s_%d.rxa" % (target, fused))
            argv = [a.relaxc, "build", src, "--target", target, "-o", rxa]
            if not fused:
                argv += ["--disable-pass", "fuse_ops"]
            rxbench.run(argv)
            out = os.path.join(tmp, "out_%s_%d" % (target, fused))
            r = rxbench.relax_bench(a.relax_run, rxa, "main", ins, a.repeat, number=20, warmup=3,
                                    out_dir=out)
            got = rxbench.read_outputs(out)[0]
            if not np.array_equal(got, x + K):
                failed.append("%s %s: wrong result" % (target, "fused" if fused else "unfused"))
            t[fused] = (r["median_ms"], r["kernels"])
        per[target] = (t[False][0] - t[True][0]) * 1e3 / (t[False][1] - t[True][1])
        rows.append([target, t[False][1], "%.3f" % t[False][0], t[True][1], "%.3f" % t[True][0],
                     "%.2f" % per[target]])
    print(rxbench.table(["target", "kernels", "ms/call", "fused kernels", "ms/call",
                         "µs per kernel"], rows))
    ratio = per["opencl"] / per["cpu"] if per["cpu"] > 0 else None
    lines.append({"bench": "gpu_launch_overhead", "opencl_us_per_kernel": round(per["opencl"], 3),
                  "cpu_us_per_kernel": round(per["cpu"], 3),
                  "ratio_opencl_to_cpu": round(ratio, 1) if ratio else None, "kernels": K, **note})

    # 2. loads per output of a fused softmax
    src = os.path.join(tmp, "softmax.json")
    json.dump(SOFTMAX, open(src, "w"))
    cl = rxbench.run([a.relaxc, "print", src, "--target", "opencl", "--after", "codegen"])
    ks = kernels_of(cl)
    loads = stores = 0
    detail = []
    for name, text in ks.items():
        l, s = per_element(text)
        loads, stores = loads + l, stores + s
        detail.append("%s %s: %d loads, %d stores" % (name, "rows" if "rx_red" in text else "grid", l, s))
    rxa = os.path.join(tmp, "softmax.rxa")
    rxbench.run([a.relaxc, "build", src, "--target", "opencl", "-o", rxa])
    xs = np.random.default_rng(0).standard_normal((4, 1000)).astype(np.float32)
    np.save(os.path.join(tmp, "xs.npy"), xs)
    out = os.path.join(tmp, "out_sm")
    rxbench.run([a.relax_run, rxa, "--in", "x=%s" % os.path.join(tmp, "xs.npy"), "--out-dir", out])
    z = np.exp(xs - xs.max(1, keepdims=True))
    if not np.allclose(rxbench.read_outputs(out)[0], z / z.sum(1, keepdims=True), rtol=1e-5, atol=1e-7):
        failed.append("softmax: wrong result")
    print("\n".join(detail))
    print("fused softmax: %d global loads and %d stores per output element (minimum 1 and 1)"
          % (loads, stores))
    lines.append({"bench": "gpu_softmax_work", "kernels": len(ks), "loads_per_output": loads,
                  "stores_per_output": stores, "min_loads": 1, "min_stores": 1,
                  "ratio_loads_to_min": loads})
    return rxbench.finish("bench_gpu", lines, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
