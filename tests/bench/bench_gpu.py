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
   the 256 / tile steps, over the R x R outputs of a work-item's micro-tile) against the minimum of
   every operand element read once, (m*K + K*N) / (m*N) per output at m = 256. Each is
   checked by running it: the output must equal NumPy's.
3. Compile time per target of a 32-layer decoder (tests/models/gen_llama.py --preset
   llama32: hidden 4096, 32 heads, intermediate 11008; prefill and decode): `relaxc
   build` for cpu (the reference: C kernels through the system compiler), opencl
   (OpenCL C source), vulkan (GLSL compiled to SPIR-V in-process) and cuda (PTX through
   NVRTC when this host has it; otherwise reported unavailable with the reason), wall
   time of the process, one build each, side by side in the same run.
4. CLBlast vs the generated tiles kernel (with --bench-clblast PATH: bench_clblast.c):
   the matmul of section 2's module at m = K = N = 256 (--clblast-sizes S,...: each) on PoCL, both checked against
   a host loop, medians of alternating samples; the ratio tiles / CLBlast, for the
   default target (4 x 4 register micro-tiles) and for opencl,max_local_bytes=2048 (no
   room for more than 1 x 1: the tiles schedule without micro-tiles). With
   --clblast-only, only this (the ctest smoke run).
5. The matvec schedule's vector loads (float4 / vec4) against its scalar form on
   opencl and vulkan: (1, 2048) @ (2048, 2048), the default build against
   T,max_local_bytes=2048 (no room for the vector form's partial sums), alternating
   relax-run --bench runs; per call, the weight's upload included. --matvec-only: only
   this.

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


def matmul_module(k):
    """main(a: (m, k), b: (k, k)) = a @ b, f32."""
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [{"name": "a", "type": {"tensor": {"shape": ["m", k], "dtype": "f32"}}},
                                   {"name": "b", "type": {"tensor": {"shape": [k, k], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": [
            {"var": "y", "value": {"op": "matmul", "args": ["a", "b"]}}]}], "result": "y"}}}}


MATMUL = matmul_module(MM_K)


def tiles_per_output(text):
    """(loads, stores, tile, micro) per output of a tiles kernel: the loads of its K loop
    (one tile element per load: R of each operand per step for an R x R micro-tile) times
    the K / tile steps, over the R^2 outputs of a work-item; and its one store."""
    tile = int(re.search(r"rx_t / (\d+)", text).group(1))
    block = int(re.search(r"rx_ti = \(rx_e\d+ \+ \d+\) / (\d+)", text).group(1))
    micro = block // tile
    body = text[text.index("for (long rx_k0"):]
    views = re.findall(r"__global \w+ \*const (\w+) =", text)
    per_step = sum(len(re.findall(r"\b%s\[" % re.escape(v), body.split("barrier(")[0])) for v in views)
    return per_step * -(-MM_K // tile) / (micro * micro), 1, tile, micro


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


GEN_CL = "opencl,clblast=0"  # OpenCL's generated kernels (the default calls CLBlast for matmuls)


def rms_norm_ref(x, g):
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-5).astype(np.float32) * g


def work_per_element(a, tmp, name, mod, inputs, ref, failed):
    """Section 2 for one module: its kernels' counts, checked against ref on opencl."""
    src = os.path.join(tmp, name + ".json")
    json.dump(mod, open(src, "w"))
    cl = rxbench.run([a.relaxc, "print", src, "--target", GEN_CL, "--after", "codegen"])
    loads = stores = distinct = 0
    detail, tile = [], None
    ks = kernels_of(cl)
    for kname, text in ks.items():
        if kname.endswith("v") and kname[:-1] in ks:  # the few-rows launch: not run at m = 256
            detail.append("  %s matvec: skipped at run time (more than 8 rows)" % kname)
            continue
        if "rx_As" in text:
            l, st, tile, micro = tiles_per_output(text)
            d, kind = l, "tiles %d, micro-tile %d" % (tile, micro)
        else:
            l, st, d = per_element(text)
            kind = "rows" if "rx_red" in text else "grid"
        loads, stores, distinct = loads + l, stores + st, distinct + d
        detail.append("  %s %s: %d loads (%d distinct), %d stores per output" % (kname, kind, l, d, st))
    rxa = os.path.join(tmp, name + ".rxa")
    rxbench.run([a.relaxc, "build", src, "--target", GEN_CL, "-o", rxa])
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
    """Section 4: bench_clblast on the generated matmul source, m = K = N = s for each s of
    --clblast-sizes, for the default target (register micro-tiles) and for
    opencl,max_local_bytes=2048 (room for 1 x 1 micro-tiles only: the tiles schedule
    without them); their JSON lines."""
    if not a.bench_clblast:
        failed.append("--clblast-only needs --bench-clblast")
        return []
    out = []
    for size in [int(v) for v in a.clblast_sizes.split(",")]:
        src = os.path.join(tmp, "matmul_%d.json" % size)
        json.dump(matmul_module(size), open(src, "w"))
        for target in (GEN_CL, GEN_CL + ",max_local_bytes=2048"):
            cl = os.path.join(tmp, "matmul.cl")
            with open(cl, "w") as f:
                f.write(rxbench.run([a.relaxc, "print", src, "--target", target, "--after", "codegen"]))
            text = open(cl).read()
            tile = int(re.search(r"rx_t / (\d+)", text).group(1))
            block = int(re.search(r"rx_ti = \(rx_e\d+ \+ \d+\) / (\d+)", text).group(1))
            p = subprocess.run([a.bench_clblast, "--src", cl, "--kernel", "rxk_matmul_s0", "--m", str(size),
                                "--k", str(size), "--n", str(size), "--tile", str(tile), "--block",
                                str(block), "--repeat", str(max(a.repeat, 1)), "--number", "3"],
                               capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                failed.append("bench_clblast %s %d: %s" % (target, size, p.stderr.strip()[-400:]))
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["target"], r["micro"] = target, block // tile
            print("matmul %d^3 on %s, %s (micro-tile %d): generated tiles %.3f ms (%.2f GFLOP/s), "
                  "CLBlast %.3f ms (%.2f GFLOP/s): tiles / CLBlast = %.2fx"
                  % (size, r["device"], target, r["micro"], r["tiles_ms"], r["tiles_gflops"],
                     r["clblast_ms"], r["clblast_gflops"], r["ratio_tiles_to_clblast"]))
            out.append(r)
    return out


MV_K = 2048


def matvec_loads(a, tmp, failed):
    """Section 5: the matvec schedule's vector loads against its scalar form, (1, K) @
    (K, K) f32 with K = MV_K and the weight (K, N) (adjacent columns adjacent in memory),
    per target: the default build (float4/vec4 loads, 128 columns per work-group) and
    T,max_local_bytes=2048 (no room for four partial sums per work-item: the scalar form,
    32 columns per work-group), ROUNDS alternating relax-run --bench runs each, the least
    median per call (the weight's upload included: 16 MiB per call); outputs checked
    against NumPy."""
    mod = {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [{"name": "x", "type": {"tensor": {"shape": [1, MV_K], "dtype": "f32"}}},
                                   {"name": "w", "type": {"tensor": {"shape": [MV_K, MV_K], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": [
            {"var": "y", "value": {"op": "matmul", "args": ["x", "w"]}}]}], "result": "y"}}}}
    src = os.path.join(tmp, "mv.json")
    json.dump(mod, open(src, "w"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, MV_K)).astype(np.float32)
    w = rng.standard_normal((MV_K, MV_K)).astype(np.float32)
    np.save(os.path.join(tmp, "mv_x.npy"), x)
    np.save(os.path.join(tmp, "mv_w.npy"), w)
    ins = {"x": os.path.join(tmp, "mv_x.npy"), "w": os.path.join(tmp, "mv_w.npy")}
    want = x.astype(np.float64) @ w.astype(np.float64)
    lines = []
    for kind in ("opencl", "vulkan"):
        best = {}
        for target in (kind, kind + ",max_local_bytes=2048"):
            rxbench.run([a.relaxc, "build", src, "--target", target, "-o",
                         os.path.join(tmp, "mv_%s.rxa" % target.replace(",", "_").replace("=", "_"))])
        for _ in range(ROUNDS):
            for target in (kind, kind + ",max_local_bytes=2048"):
                rxa = os.path.join(tmp, "mv_%s.rxa" % target.replace(",", "_").replace("=", "_"))
                out = os.path.join(tmp, "out_mv")
                r = rxbench.relax_bench(a.relax_run, rxa, "main", ins, a.repeat, number=3, warmup=1,
                                        out_dir=out)
                got = rxbench.read_outputs(out)[0]
                if not np.allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(MV_K)):
                    failed.append("matvec %s: wrong result" % target)
                best[target] = min(best.get(target, r["median_ms"]), r["median_ms"])
        vec, scalar = best[kind], best[kind + ",max_local_bytes=2048"]
        print("matvec (1, %d) @ (%d, %d) on %s: vector loads %.3f ms, scalar %.3f ms per call: "
              "%.2fx" % (MV_K, MV_K, MV_K, kind, vec, scalar, vec / scalar))
        lines.append({"bench": "gpu_matvec_vector_loads", "target": kind, "k": MV_K, "n": MV_K,
                      "vector_ms": round(vec, 3), "scalar_ms": round(scalar, 3),
                      "ratio_vector_to_scalar": round(vec / scalar, 3)})
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relaxc", required=True)
    ap.add_argument("--relax-run", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-compile-time", action="store_true", help="skip section 3")
    ap.add_argument("--bench-clblast", help="bench_clblast's path: run section 4")
    ap.add_argument("--clblast-only", action="store_true", help="section 4 only")
    ap.add_argument("--matvec-only", action="store_true", help="section 5 only")
    ap.add_argument("--clblast-sizes", default="256", help="section 4: m = K = N sizes, comma-separated")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rx-bench-gpu-")
    lines, failed, rows = [], [], []
    note, warn = rxbench.load_note()
    if warn:
        print(warn)

    if a.clblast_only:
        return rxbench.finish("bench_gpu", clblast_vs_tiles(a, tmp, failed), failed)
    if a.matvec_only:
        return rxbench.finish("bench_gpu", matvec_loads(a, tmp, failed), failed)

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
    # 5. the matvec schedule's vector loads
    lines += matvec_loads(a, tmp, failed)
    return rxbench.finish("bench_gpu", lines, failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
