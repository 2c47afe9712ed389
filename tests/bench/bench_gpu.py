#!/usr/bin/env python3
"""bench_gpu.py — what the GPU targets cost on this machine (docs/gpu.md).

    /usr/bin/python3 tests/bench/bench_gpu.py --relaxc R --relax-run RR [--repeat 5]
        [--no-compile-time]

The "GPUs" here are PoCL (OpenCL) and lavapipe (Vulkan) running on the CPU, so absolute
times say little about a real GPU; what this measures is meaningful anyway:

1. Launch overhead per kernel, through the VM: a chain of K = 32 adds on a (64,) f32
   tensor built twice at O2, with fuse_ops off (32 loop functions: 32 launches per call)
   and on (one fused function: 1 launch), for opencl, vulkan and, as the reference in
   the same run, cpu. (t_unfused - t_fused) / 31 is the cost of one more kernel in a
   call: the launch and its arguments (and the device's queue), inside one call that
   synchronizes once. Each pair runs ROUNDS times alternating, keeping each one's least
   median (the machine is shared). Reported in µs and as a ratio to the CPU's
   per-kernel cost.
2. Work per element of the generated OpenCL kernels: the global loads and stores per
   output element, counted in their source, against the minimum. Fused softmax and
   rms_norm (rows of n = 1000): the per-element loop of each kernel (a rows kernel's
   strided loop, a grid kernel's body), loads counted as written and as distinct
   addresses, against one load and one store (a kernel keeping the row on chip).
   Matmul (m x 256 @ 256 x 256): the tiles kernel's K loop (its loads per step times
   the 256 / tile steps: each work-item computes one output) against the minimum of
   every operand element read once, (m*K + K*N) / (m*N) per output at m = 256. Each is
   checked by running it: the output must equal NumPy's.
3. Compile time per target of a 32-layer decoder (tests/models/gen_llama.py --preset
   llama32: hidden 4096, 32 heads, intermediate 11008; prefill and decode): `relaxc
   build` for cpu (the reference: C kernels through the system compiler), opencl
   (OpenCL C source), vulkan (GLSL compiled to SPIR-V in-process) and cuda (PTX through
   NVRTC when this host has it; otherwise reported unavailable with the reason), wall
   time of the process, one build each, side by side in the same run.
4. CLBlast vs the generated tiles kernel (with --bench-clblast PATH: bench_clblast.c):
   the matmul of section 2's module at m = 256, K = N = 256 on PoCL, both checked against
   a host loop, medians of alternating samples; the ratio tiles / CLBlast. With
   --clblast-only, only this (the ctest smoke run).

Prints a table and one JSON line per figure; exits 1 when a result is wrong.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import rxbench

K = 32
ROUNDS = 3  # alternating runs of the unfused and fused chain per target


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


RMS_NORM = {"format": "relax-json", "version": 1, "functions": {"main": {
    "kind": "relax", "params": [{"name": "x", "type": {"tensor": {"shape": ["r", "n"], "dtype": "f32"}}},
                               {"name": "g", "type": {"tensor": {"shape": ["n"], "dtype": "f32"}}}],
    "body": {"blocks": [{"dataflow": True, "bindings": [
        {"var": "y", "value": {"op": "nn.rms_norm", "args": ["x", "g"],
                               "attrs": {"axes": [-1], "epsilon": 1e-5}}}]}], "result": "y"}}}}

MM_K = 256
MATMUL = {"format": "relax-json", "version": 1, "functions": {"main": {
    "kind": "relax", "params": [{"name": "a", "type": {"tensor": {"shape": ["m", MM_K], "dtype": "f32"}}},
                               {"name": "b", "type": {"tensor": {"shape": [MM_K, MM_K], "dtype": "f32"}}}],
    "body": {"blocks": [{"dataflow": True, "bindings": [
        {"var": "y", "value": {"op": "matmul", "args": ["a", "b"]}}]}], "result": "y"}}}}


def tiles_per_output(text):
    """(loads, stores) per output of a tiles kernel: the loads of its K loop times the
    K / tile steps (one output per work-item), and its one store."""
    tile = int(re.search(r"rx_t / (\d+)", text).group(1))
    body = text[text.index("for (long rx_k0"):]
    views = re.findall(r"__global \w+ \*const (\w+) =", text)
    per_step = sum(len(re.findall(r"\b%s\[" % re.escape(v), body.split("barrier(")[0])) for v in views)
    return per_step * -(-MM_K // tile), 1, tile


def per_element(text):
    """(loads, stores, distinct loads) of global buffers in the per-element loop of one
    kernel (distinct: the same buffer at the same index counts once)."""
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
    seen = set()
    for v in views:
        for m in re.finditer(r"\b%s\[" % re.escape(v), body):
            rest = body[m.end():]
            close = rest.index("]")  # indices hold no nested brackets in these kernels
            if re.match(r"\]\s*=[^=]", rest[close:]):
                stores += 1
            else:
                loads += 1
                seen.add((v, rest[:close]))
    return loads, stores, len(seen)


def softmax_ref(x):
    z = np.exp(x - x.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def rms_norm_ref(x, g):
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-5).astype(np.float32) * g


def work_per_element(a, tmp, name, mod, inputs, ref, failed):
    """Section 2 for one module: its kernels' counts, checked against ref on opencl."""
    src = os.path.join(tmp, name + ".json")
    json.dump(mod, open(src, "w"))
    cl = rxbench.run([a.relaxc, "print", src, "--target", "opencl", "--after", "codegen"])
    loads = stores = distinct = 0
    detail, tile = [], None
    for kname, text in kernels_of(cl).items():
        if "rx_As" in text:
            l, st, tile = tiles_per_output(text)
            d, kind = l, "tiles %d" % tile
        else:
            l, st, d = per_element(text)
            kind = "rows" if "rx_red" in text else "grid"
        loads, stores, distinct = loads + l, stores + st, distinct + d
        detail.append("  %s %s: %d loads (%d distinct), %d stores per output" % (kname, kind, l, d, st))
    rxa = os.path.join(tmp, name + ".rxa")
    rxbench.run([a.relaxc, "build", src, "--target", "opencl", "-o", rxa])
    argv = [a.relax_run, rxa, "--out-dir", os.path.join(tmp, "out_" + name)]
    for k, v in inputs.items():
        np.save(os.path.join(tmp, "%s_%s.npy" % (name, k)), v)
        argv += ["--in", "%s=%s" % (k, os.path.join(tmp, "%s_%s.npy" % (name, k)))]
    rxbench.run(argv)
    if not np.allclose(rxbench.read_outputs(os.path.join(tmp, "out_" + name))[0], ref(*inputs.values()),
                       rtol=1e-4, atol=1e-5):
        failed.append("%s: wrong result on opencl" % name)
    return loads, stores, distinct, detail, tile


def compile_times(a, tmp, failed):
    """Section 3: {target: seconds or reason} of relaxc build of the 32-layer decoder."""
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "gen_llama.py")
    src = os.path.join(tmp, "llama32.json")
    rxbench.run([sys.executable, gen, "--preset", "llama32", "--out", src])
    out = {}
    for target in ("cpu", "opencl", "vulkan", "cuda"):
        rxa = os.path.join(tmp, "llama32_%s.rxa" % target)
        t0 = time.perf_counter()
        p = subprocess.run([a.relaxc, "build", src, "--target", target, "-o", rxa],
                           capture_output=True, text=True, timeout=3600)
        dt = time.perf_counter() - t0
        if p.returncode == 0:
            out[target] = (dt, os.path.getsize(rxa))
        elif target == "cuda" and ("NVRTC" in p.stderr or "nvrtc" in p.stderr):
            out[target] = p.stderr.strip().splitlines()[-1][:200]
        else:
            failed.append("llama32 %s: %s" % (target, p.stderr.strip()[-300:]))
            out[target] = "failed"
    return out


def clblast_vs_tiles(a, tmp, failed):
    """Section 4: bench_clblast on the generated matmul source; its JSON line(s)."""
    if not a.bench_clblast:
        failed.append("--clblast-only needs --bench-clblast")
        return []
    src = os.path.join(tmp, "matmul.json")
    json.dump(MATMUL, open(src, "w"))
    cl = os.path.join(tmp, "matmul.cl")
    with open(cl, "w") as f:
        f.write(rxbench.run([a.relaxc, "print", src, "--target", "opencl", "--after", "codegen"]))
    tile = int(re.search(r"rx_t / (\d+)", open(cl).read()).group(1))
    p = subprocess.run([a.bench_clblast, "--src", cl, "--kernel", "rxk_matmul_s0", "--m", "256",
                        "--k", str(MM_K), "--n", str(MM_K), "--tile", str(tile),
                        "--repeat", str(max(a.repeat, 1)), "--number", "3"],
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        failed.append("bench_clblast: %s" % p.stderr.strip()[-400:])
        return []
    r = json.loads(p.stdout.strip().splitlines()[-1])
    print("matmul 256 x %d x %d on %s: generated tiles %.3f ms (%.2f GFLOP/s), CLBlast %.3f ms "
          "(%.2f GFLOP/s): tiles / CLBlast = %.2fx" % (MM_K, MM_K, r["device"], r["tiles_ms"],
                                                     r["tiles_gflops"], r["clblast_ms"],
                                                     r["clblast_gflops"], r["ratio_tiles_to_clblast"]))
    return [r]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relaxc", required=True)
    ap.add_argument("--relax-run", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-compile-time", action="store_true", help="skip section 3")
    ap.add_argument("--bench-clblast", help="bench_clblast's path: run section 4")
    ap.add_argument("--clblast-only", action="store_true", help="section 4 only")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rx-bench-gpu-")
    lines, failed, rows = [], [], []
    note, warn = rxbench.load_note()
    if warn:
        print(warn)

    if a.clblast_only:
        return rxbench.finish("bench_gpu", clblast_vs_tiles(a, tmp, failed), failed)

    # 1. launch overhead per kernel
    src = os.path.join(tmp, "chain.json")
    json.dump(chain_module(K), open(src, "w"))
    x = np.arange(64, dtype=np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "one.npy"), np.ones(1, dtype=np.float32))
    ins = {"x": os.path.join(tmp, "x.npy"), "one": os.path.join(tmp, "one.npy")}
    per = {}
    for target in ("cpu", "opencl", "vulkan"):
        t = {}
        for fused in (False, True):
            rxa = os.path.join(tmp, "chain_%s_%d.rxa" % (target, fused))
            argv = [a.relaxc, "build", src, "--target", target, "-o", rxa]
            if not fused:
                argv += ["--disable-pass", "fuse_ops"]
            rxbench.run(argv)
        for _ in range(ROUNDS):  # alternating, the least median of each (a loaded machine)
            for fused in (False, True):
                rxa = os.path.join(tmp, "chain_%s_%d.rxa" % (target, fused))
                out = os.path.join(tmp, "out_%s_%d" % (target, fused))
                r = rxbench.relax_bench(a.relax_run, rxa, "main", ins, a.repeat, number=20, warmup=3,
                                        out_dir=out)
                got = rxbench.read_outputs(out)[0]
                if not np.array_equal(got, x + K):
                    failed.append("%s %s: wrong result" % (target, "fused" if fused else "unfused"))
                if fused not in t or r["median_ms"] < t[fused][0]:
                    t[fused] = (r["median_ms"], r["kernels"])
        per[target] = (t[False][0] - t[True][0]) * 1e3 / (t[False][1] - t[True][1])
        rows.append([target, t[False][1], "%.3f" % t[False][0], t[True][1], "%.3f" % t[True][0],
                     "%.2f" % per[target],
                     "%.1fx" % (per[target] / per["cpu"]) if per["cpu"] > 0 else "-"])
    print(rxbench.table(["target", "kernels", "ms/call", "fused kernels", "ms/call",
                         "µs per kernel", "vs cpu"], rows))
    for target in ("opencl", "vulkan"):
        ratio = per[target] / per["cpu"] if per["cpu"] > 0 else None
        lines.append({"bench": "gpu_launch_overhead", "target": target,
                      "us_per_kernel": round(per[target], 3), "cpu_us_per_kernel": round(per["cpu"], 3),
                      "ratio_to_cpu": round(ratio, 1) if ratio else None, "kernels": K, **note})

    # 2. work per element of generated kernels
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 1000)).astype(np.float32)
    g = rng.standard_normal(1000).astype(np.float32)
    am = rng.standard_normal((MM_K, MM_K)).astype(np.float32)
    bm = rng.standard_normal((MM_K, MM_K)).astype(np.float32)
    cases = [("softmax", SOFTMAX, {"x": xs}, softmax_ref, 1.0),
             ("rms_norm", RMS_NORM, {"x": xs, "g": g}, rms_norm_ref, 1.0),
             ("matmul", MATMUL, {"a": am, "b": bm}, lambda p, q: p @ q, 2.0 * MM_K * MM_K / (MM_K * MM_K))]
    for name, mod, inputs, ref, min_loads in cases:
        loads, stores, distinct, detail, tile = work_per_element(a, tmp, name, mod, inputs, ref, failed)
        print("%s:\n%s" % (name, "\n".join(detail)))
        print("%s: %d global loads (%d distinct) and %d stores per output element (minimum %g and 1): "
              "%.1fx the minimum loads" % (name, loads, distinct, stores, min_loads, loads / min_loads))
        lines.append({"bench": "gpu_work_per_element", "op": name, "loads_per_output": loads,
                      "distinct_loads_per_output": distinct, "stores_per_output": stores,
                      "min_loads": min_loads, "min_stores": 1,
                      "ratio_loads_to_min": round(loads / min_loads, 2), "tile": tile})

    # 3. compile time per target of a 32-layer decoder
    if not a.no_compile_time:
        ct = compile_times(a, tmp, failed)
        ref = ct["cpu"][0] if isinstance(ct.get("cpu"), tuple) else None
        rows = []
        for target, v in ct.items():
            if isinstance(v, tuple):
                rows.append([target, "%.2f" % v[0], "%.2fx" % (v[0] / ref) if ref else "-", v[1]])
                lines.append({"bench": "gpu_compile_time", "model": "llama32 (32 layers)", "target": target,
                              "seconds": round(v[0], 3), "ratio_to_cpu": round(v[0] / ref, 3) if ref else None,
                              "artifact_bytes": v[1], **note})
            else:
                rows.append([target, "-", "-", v])
                lines.append({"bench": "gpu_compile_time", "model": "llama32 (32 layers)", "target": target,
                              "unavailable": v})
        print(rxbench.table(["target", "build s", "vs cpu", "artifact bytes / why not"], rows))
    # 4. CLBlast vs the generated tiles kernel
    if a.bench_clblast:
        lines += clblast_vs_tiles(a, tmp, failed)
    return rxbench.finish("bench_gpu", lines, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
