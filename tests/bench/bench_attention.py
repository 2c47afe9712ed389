#!/usr/bin/python3
"""bench_attention.py — attention's two batched products, written the ways people write
them, against OpenBLAS sgemm of the same FLOPs in the same run (issue 13, item 1).

Each formulation is a graph function over the projections as PyTorch exports them
(q_proj, k_proj, v_proj: (b, s, heads * d), symbolic b and s with upper bounds), so
the reshape to (b, s, heads, d), the permutes, repeats, slices and the scale are fused
producers of the product, and the generated kernel reads its operands through their
index expressions:

  scores formulations (-> (b, heads, s, s)):
    pt       q @ permute(k, [0, 1, 3, 2]), then * scale      (PyTorch export)
    kt       K pre-transposed: k = permute(reshape(k_proj), [0, 2, 3, 1]); q @ k * scale
    qscale   (q * scale) @ permute(k)                        (scale folded into q)
    gqa      k of heads / 4 heads, repeat(k, 4, axis=1) before the permute
    bcast    k of heads / 4 heads, expand_dims + broadcast_to + reshape (torch's
             repeat_kv) before the permute
    slice    q and k strided_slice'd out of one fused qkv projection (b, s, 3 * heads * d)
  context formulations (-> (b, heads, s, d)):
    pv       probs @ permute(reshape(v_proj))
    pv_gqa   probs @ repeat(v of heads / 4 heads, 4, axis=1)
    pv_out   permute(probs @ v) reshaped back to (b, s, heads * d) (the consumer fused)

plus sgemm: an (M, K) @ (K, N) matmul that relaxc sends to OpenBLAS (blas.matmul),
with M = s, K = heads * d, N = s: 2 * s * s * heads * d FLOPs, the same as each product
at b = 1.

Every function is built with relaxc at --opt-level 2 (and 3 with --levels) and timed
with relax-run --bench, all interleaved round by round (the machine is shared: each
figure is the median over rounds of each round's min); the ratio is the sgemm time
over the product's (>= 0.5 is issue 13's goal: attention at half of sgemm's rate).
--cpu: instead of wall time, the CPU time per call of a relax-run process (getrusage
of the children: a run with --repeat R + 1 minus one with --repeat 1, over R), with
--threads 1 the figure least disturbed by other processes on a shared machine.
Correctness (enforced): every formulation's output equals NumPy's within rtol 1e-4,
atol 1e-4 (f32 sums of d or s terms).

  bench_attention.py [--s 512] [--heads 16] [--d 64] [--threads 2] [--rounds 5]
                     [--forms pt,kt,...] [--levels 2] [--cpu] [--smoke] [--relaxc P]
                     [--relax-run P]
--smoke: s = 40, 4 heads of 16, every formulation at O2 and O3, correctness only.
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile

import numpy as np

import rxbench

SCORES = ("pt", "kt", "qscale", "gqa", "bcast", "slice")
CONTEXT = ("pv", "pv_gqa", "pv_out")
GROUP = 4  # query heads per k/v head in the gqa forms


def T(shape):
    return {"tensor": {"shape": list(shape), "dtype": "f32"}}


def op(name, *args, **attrs):
    v = {"op": name, "args": list(args)}
    if attrs:
        v["attrs"] = attrs
    return v


def heads_of(bind, proj, nh, d, axes=(0, 2, 1, 3), name="x"):
    r = bind(name + "_h", op("reshape", proj, {"shape": ["b", "s", nh, d]}))
    return bind(name + "_p", op("permute_dims", r, axes=list(axes)))


def form_fn(form, A, D):
    """The graph function of one formulation."""
    binds = []

    def bind(name, value):
        binds.append({"var": name, "value": value})
        return name

    scale = {"const": 1.0 / math.sqrt(D), "dtype": "f32"}
    KV = A // GROUP if form in ("gqa", "bcast", "pv_gqa") else A
    if form in SCORES:
        if form == "slice":
            params = [("qkv", ("b", "s", 3 * A * D))]
            qp = bind("qs", op("strided_slice", "qkv", axes=[2], begin=[0], end=[A * D]))
            kp = bind("ks", op("strided_slice", "qkv", axes=[2], begin=[A * D], end=[2 * A * D]))
        else:
            params = [("q_proj", ("b", "s", A * D)), ("k_proj", ("b", "s", KV * D))]
            qp, kp = "q_proj", "k_proj"
        q = heads_of(bind, qp, A, D, name="q")
        if form == "qscale":
            q = bind("q_s", op("multiply", q, scale))
        if form == "kt":
            kt = heads_of(bind, kp, A, D, axes=(0, 2, 3, 1), name="k")
        else:
            k = heads_of(bind, kp, KV, D, name="k")
            if form == "gqa":
                k = bind("k_rep", op("repeat", k, repeats=GROUP, axis=1))
            elif form == "bcast":
                e = bind("k_e", op("expand_dims", k, axis=[2]))
                e = bind("k_b", op("broadcast_to", e, {"shape": ["b", KV, GROUP, "s", D]}))
                k = bind("k_rep", op("reshape", e, {"shape": ["b", A, "s", D]}))
            kt = bind("k_t", op("permute_dims", k, axes=[0, 1, 3, 2]))
        r = bind("qk", op("matmul", q, kt))
        if form != "qscale":
            r = bind("scores", op("multiply", r, scale))
        ret = T(("b", A, "s", "s"))
    else:
        params = [("probs", ("b", A, "s", "s")), ("v_proj", ("b", "s", KV * D))]
        v = heads_of(bind, "v_proj", KV, D, name="v")
        if form == "pv_gqa":
            v = bind("v_rep", op("repeat", v, repeats=GROUP, axis=1))
        r = bind("ctx", op("matmul", "probs", v))
        ret = T(("b", A, "s", D))
        if form == "pv_out":
            r = bind("ctx_t", op("permute_dims", r, axes=[0, 2, 1, 3]))
            r = bind("ctx_m", op("reshape", r, {"shape": ["b", "s", A * D]}))
            ret = T(("b", "s", A * D))
    return {"kind": "relax", "params": [{"name": n, "type": T(s)} for n, s in params],
            "ret": ret, "attrs": {"upper_bounds": {"b": 16, "s": 4096}},
            "body": {"blocks": [{"dataflow": True, "bindings": binds}], "result": r}}


def sgemm_fn(A, D):
    return {"kind": "relax",
            "params": [{"name": "a", "type": T(("m", A * D))}, {"name": "w", "type": T((A * D, "n"))}],
            "ret": T(("m", "n")), "attrs": {"upper_bounds": {"m": 4096, "n": 4096}},
            "body": {"blocks": [{"dataflow": True, "bindings": [
                {"var": "r", "value": op("matmul", "a", "w")}]}], "result": "r"}}


def module(forms, A, D):
    fns = {f: form_fn(f, A, D) for f in forms}
    fns["sgemm"] = sgemm_fn(A, D)
    return {"format": "relax-json", "version": 1, "attrs": {"name": "attention_products"},
            "functions": fns}


def reference(form, ins, A, D):
    """NumPy (float64) of one formulation on its inputs."""
    scale = 1.0 / math.sqrt(D)
    if form in SCORES:
        if form == "slice":
            qkv = ins["qkv"].astype(np.float64)
            qp, kp = qkv[..., :A * D], qkv[..., A * D:2 * A * D]
        else:
            qp, kp = ins["q_proj"].astype(np.float64), ins["k_proj"].astype(np.float64)
        b, s = qp.shape[:2]
        q = qp.reshape(b, s, A, D).transpose(0, 2, 1, 3)
        k = kp.reshape(b, s, -1, D).transpose(0, 2, 1, 3)
        k = np.repeat(k, A // k.shape[1], axis=1)
        return (q @ k.transpose(0, 1, 3, 2)) * scale
    p, vp = ins["probs"].astype(np.float64), ins["v_proj"].astype(np.float64)
    b, s = vp.shape[:2]
    v = vp.reshape(b, s, -1, D).transpose(0, 2, 1, 3)
    ctx = p @ np.repeat(v, A // v.shape[1], axis=1)
    return ctx.transpose(0, 2, 1, 3).reshape(b, s, A * D) if form == "pv_out" else ctx


def inputs(form, b, s, A, D, rng):
    KV = A // GROUP if form in ("gqa", "bcast", "pv_gqa") else A
    if form == "sgemm":
        return {"a": rng.standard_normal((s, A * D), np.float32),
                "w": rng.standard_normal((A * D, s), np.float32)}
    if form == "slice":
        return {"qkv": rng.standard_normal((b, s, 3 * A * D), np.float32)}
    if form in SCORES:
        return {"q_proj": rng.standard_normal((b, s, A * D), np.float32),
                "k_proj": rng.standard_normal((b, s, KV * D), np.float32)}
    p = rng.random((b, A, s, s), np.float32)
    return {"probs": p / p.sum(-1, keepdims=True), "v_proj": rng.standard_normal((b, s, KV * D), np.float32)}


def run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       check=False)
    if r.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return r.stdout


def cpu_ms(cmd, env, repeat):
    """CPU milliseconds per call of cmd (relax-run --bench without --repeat)."""
    def once(r):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        run(cmd + ["--repeat", str(r)], env)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return (once(repeat + 1) - once(1)) * 1000.0 / repeat


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--s", type=int, default=512)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--forms", default=",".join(SCORES + CONTEXT))
    ap.add_argument("--levels", default="2")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run", default=os.path.join(rxbench.ROOT, "build", "bin", "relax-run"))
    a = ap.parse_args()
    forms = [f for f in a.forms.split(",") if f]
    for f in forms:
        if f not in SCORES + CONTEXT:
            ap.error("unknown form %r" % f)
    levels = [int(x) for x in a.levels.split(",")]
    if a.smoke:
        a.s, a.heads, a.d, a.rounds, levels = 40, 4, 16, 0, [2, 3]
    A, D, s = a.heads, a.d, a.s
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    rng = np.random.default_rng(7)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "attn.json")
        with open(src, "w") as fh:
            json.dump(module(forms, A, D), fh)
        arts = {}
        for lv in levels:
            arts[lv] = os.path.join(tmp, "attn_O%d.rxa" % lv)
            run([a.relaxc, "build", src, "-o", arts[lv], "--opt-level", str(lv)], env)
        files = {}
        for f in forms + ["sgemm"]:
            ins = inputs(f, 1 if not a.smoke else 2, s, A, D, rng)
            files[f] = []
            for n, x in ins.items():
                p = os.path.join(tmp, "%s_%s.npy" % (f, n))
                np.save(p, x)
                files[f].append("--in")
                files[f].append("%s=%s" % (n, p))
            if f == "sgemm":
                continue
            want = reference(f, ins, A, D)
            for lv in levels:
                out = os.path.join(tmp, "out_%s_%d" % (f, lv))
                run([a.relax_run, arts[lv], "--fn", f, "--out-dir", out] + files[f], env)
                got = np.load(os.path.join(out, sorted(os.listdir(out))[0]))
                ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
                if not ok:
                    bad += 1
                    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else None
                    print("MISMATCH %s O%d: shape %s vs %s, max err %s" % (f, lv, got.shape, want.shape, err))
        if a.smoke:
            print("%d formulations x %d levels: %s" % (len(forms), len(levels), "FAIL" if bad else "ok"))
            return 1 if bad else 0
        flops = 2.0 * s * s * A * D
        times = {(f, lv): [] for f in forms + ["sgemm"] for lv in levels}
        for _ in range(a.rounds):
            for lv in levels:
                for f in forms + ["sgemm"]:
                    cmd = [a.relax_run, arts[lv], "--fn", f, "--bench"] + files[f]
                    if a.cpu:
                        times[(f, lv)].append(cpu_ms(cmd, env, 10))
                        continue
                    out = run(cmd + ["--repeat", "5"], env)
                    times[(f, lv)].append(json.loads(out.strip().splitlines()[-1])["min_ms"])
        print("s=%d heads=%d d=%d threads=%d, %.3f GFLOP per product; median over %d rounds of "
              "%s" % (s, A, D, a.threads, flops / 1e9, a.rounds,
                      "CPU ms per call" if a.cpu else "each round's min wall ms"))
        print("%-8s %3s %10s %10s %12s" % ("form", "O", "ms", "GFLOP/s", "vs sgemm"))
        for lv in levels:
            ref = statistics.median(times[("sgemm", lv)])
            for f in forms + ["sgemm"]:
                ms = statistics.median(times[(f, lv)])
                print("%-8s %3d %10.3f %10.1f %12.2f" % (f, lv, ms, flops / ms / 1e6, ref / ms))
                print(json.dumps({"form": f, "opt_level": lv, "ms": ms, "gflops": flops / ms / 1e6,
                                  "vs_sgemm": ref / ms}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
