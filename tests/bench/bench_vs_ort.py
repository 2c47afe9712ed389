#!/usr/bin/python3
"""bench_vs_ort.py — a Llama-style decoder block, written several ways, through relaxd
(relaxc + relax-run, O2 and O3) beside ONNX Runtime (onnxruntime-node, CPU) and PyTorch
CPU eager: same weights, same inputs, same run, outputs compared (issue 13). Engine
`onnx` (issue 14) is relaxd on the very file ONNX Runtime runs: PyTorch's export
imported by `relaxc build block.onnx` (weights inline as constants, dynamic b, s and c
as the export names them), run at each --levels beside ORT.

The block (hidden 1024, 16 heads of 64, intermediate 2816, f32; pre-norm, no rotary
embedding): n = rms_norm(x); q, k, v = n @ wq, n @ wk, n @ wv reshaped to
(b, s, heads, d) and permuted to (b, heads, s, d); decode appends k, v to the KV cache
(concat on the sequence axis); scores = q @ permute(k) * (1 / sqrt(d)); prefill adds a
causal mask; softmax; @ v; permuted back, reshaped, @ wo; residual; rms_norm; SiLU-gated
MLP (down(silu(n @ w_gate) * (n @ w_up))); residual. Outputs: (y, k, v), the block's
output and the updated KV cache. Formulations (--forms), each built three times from its
own description — a relax-json module (symbolic b and s or c with upper bounds), a
torch.nn.Module (PyTorch eager, and exported with torch.onnx.export for ONNX Runtime),
and checked against one NumPy reference of the math:

  pt      as PyTorch exports it: q @ permute(k), then * scale, causal mask full + triu
          added (the issue's formulation)
  kt      K pre-transposed: k permuted straight to (b, heads, d, s), the cache kept so
          (concat on the last axis), scores = q @ k
  where   the causal mask as where(arange(s)[:, None] >= arange(s), scores, -1e9)
  qscale  the scale folded into q: (q * scale) @ permute(k)
  gqa     grouped-query attention: heads / 4 k/v heads (1 / 4 of the k/v weights and
          cache), each repeated to 4 query heads (relax `repeat`, PyTorch expand+reshape)

Workloads (--workloads): decode1 and decode16 (b = 1 / 16 new tokens over 512 cached
positions, c + 1 = 513 after the append), prefill128 and prefill512 (b = 1, s = 128 /
512). Upper bounds (--bounds): b <= 16, s <= 512, c <= 512 by default.

Threads: 2 for all three (--threads): relax-run --threads N (its kernels and its BLAS
share libgomp's pool at that count; OMP_NUM_THREADS and OPENBLAS_NUM_THREADS say N too), ONNX Runtime
with intraOpNumThreads = N, PyTorch with torch.set_num_threads(N) and
OMP_WAIT_POLICY=PASSIVE (set for this process only, so its idle workers do not spin
while the others run). Timing: the median of --repeat calls after warm-ups, each
engine its own way (relax-run --bench; process.hrtime around session.run; perf_counter
around the module call). Ratios: relax / ORT and relax / PyTorch (goal <= 1.0).

Correctness (enforced, the exit status): every output of relax's first call, of ORT's
and of PyTorch's allclose to the NumPy reference (rtol 1e-3, atol 2e-4: f32 sums of up
to 2816 terms in other orders).

--quick: the tiny config (hidden 64, 4 heads, intermediate 128, 2 k/v heads for gqa),
every formulation at O2 and O3, prefill b=2 s=8 and decode b=2 c=7, one call each: a
correctness test (ctest bench/vs_ort_quick), no timing. PyTorch and ORT are compared
when present (ORT only with --ort-dir pointing at an install), skipped otherwise.

ONNX Runtime: tests/bench/setup_ort.sh installs onnxruntime-node 1.30.0 from npm into
$RX_ORT_DIR (default ~/.cache/relaxd/ort-1.30.0), which is also --ort-dir's default.

  bench_vs_ort.py [--quick] [--forms pt,kt,where,qscale,gqa]
                  [--workloads decode1,decode16,prefill128,prefill512] [--levels 2,3]
                  [--engines relax,onnx,ort,torch] [--repeat R] [--threads 2]
                  [--bounds b=16,s=512,c=512] [--ort-dir DIR] [--relaxc P] [--relax-run P]
                  [--keep DIR]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # PyTorch's OpenMP, before its import

import numpy as np  # noqa: E402

import rxbench  # noqa: E402

RTOL, ATOL = 1e-3, 2e-4
MASK = -1e9
FORMS = ("pt", "kt", "where", "qscale", "gqa")
WORKLOADS = {  # name: (function, b, s or c)
    "decode1": ("decode", 1, 512),
    "decode16": ("decode", 16, 512),
    "prefill128": ("prefill", 1, 128),
    "prefill512": ("prefill", 1, 512),
}
QUICK_WORKLOADS = {"decode": ("decode", 2, 7), "prefill": ("prefill", 2, 8)}
FULL_CFG = {"hidden": 1024, "heads": 16, "head_dim": 64, "intermediate": 2816, "gqa_group": 4}
TINY_CFG = {"hidden": 64, "heads": 4, "head_dim": 16, "intermediate": 128, "gqa_group": 2}
EPS = 1e-5
WEIGHTS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")
DEFAULT_ORT_DIR = os.environ.get("RX_ORT_DIR") or os.path.expanduser("~/.cache/relaxd/ort-1.30.0")


def kv_heads(cfg, form):
    return cfg["heads"] // cfg["gqa_group"] if form == "gqa" else cfg["heads"]


def weight_shapes(cfg, form):
    H, A, D, I = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"]
    KV = kv_heads(cfg, form) * D
    return dict(zip(WEIGHTS, [(H,), (H, A * D), (H, KV), (H, KV), (A * D, H), (H,), (H, I),
                              (H, I), (I, H)]))


def cache_shape(cfg, form, b, c):
    """The k cache layout of a formulation (kt keeps K transposed); v is always (b, kv, c, d)."""
    kv, D = kv_heads(cfg, form), cfg["head_dim"]
    return (b, kv, D, c) if form == "kt" else (b, kv, c, D)


# ---------------------------------------------------------------- relax-json ----

def relax_fn(cfg, form, phase, bounds):
    """The relax function prefill(x, weights) or decode(x, k_cache, v_cache, weights)."""
    H, A, D = cfg["hidden"], cfg["heads"], cfg["head_dim"]
    KV, rep = kv_heads(cfg, form), A // kv_heads(cfg, form)
    dt = "f32"
    T = rxbench.gen_llama.tensor
    bld = rxbench.gen_llama.Builder()
    op, b = bld.op, bld.bind
    seq = "s" if phase == "prefill" else 1
    scale = {"const": 1.0 / math.sqrt(D), "dtype": dt}
    params = [{"name": "x", "type": T(("b", seq, H), dt)}]
    if phase == "decode":
        params += [{"name": "k_cache", "type": T(cache_shape(cfg, form, "b", "c"), dt)},
                   {"name": "v_cache", "type": T(("b", KV, "c", D), dt)}]
    params += [{"name": n, "type": T(s, dt)} for n, s in weight_shapes(cfg, form).items()]
    n1 = b("attn_in", op("nn.rms_norm", "x", "attn_norm", axes=[-1], epsilon=EPS))
    heads = {}
    for name, w, nh in (("q", "wq", A), ("k", "wk", KV), ("v", "wv", KV)):
        proj = b(name + "_proj", op("matmul", n1, w))
        r = b(name + "_heads", op("reshape", proj, {"shape": ["b", seq, nh, D]}))
        axes = [0, 2, 3, 1] if (name == "k" and form == "kt") else [0, 2, 1, 3]
        heads[name] = b(name, op("permute_dims", r, axes=axes))
    q, k, v = heads["q"], heads["k"], heads["v"]
    if form == "qscale":
        q = b("q_scaled", op("multiply", q, scale))
    if phase == "decode":
        k = b("k_all", op("concat", {"tuple": ["k_cache", k]}, axis=3 if form == "kt" else 2))
        v = b("v_all", op("concat", {"tuple": ["v_cache", v]}, axis=2))
    kk, vv = k, v
    if form == "gqa":
        kk = b("k_rep", op("repeat", k, repeats=rep, axis=1))
        vv = b("v_rep", op("repeat", v, repeats=rep, axis=1))
    kt = kk if form == "kt" else b("k_t", op("permute_dims", kk, axes=[0, 1, 3, 2]))
    sc = b("qk", op("matmul", q, kt))
    if form != "qscale":
        sc = b("scores", op("multiply", sc, scale))
    if phase == "prefill":
        if form == "where":
            rows = b("pos_rows", op("reshape", b("pos", op("arange", end="s", dtype="i64")),
                                    {"shape": ["s", 1]}))
            cols = b("pos_cols", op("arange", end="s", dtype="i64"))
            cond = b("causal", op("greater_equal", rows, cols))
            sc = b("masked", op("where", cond, sc, {"const": MASK, "dtype": dt}))
        else:
            full = b("mask_full", op("full", {"shape": ["s", "s"]}, {"const": MASK, "dtype": dt}))
            mask = b("mask", op("triu", full, k=1))
            sc = b("masked", op("add", sc, mask))
    probs = b("probs", op("nn.softmax", sc, axis=-1))
    ctx = b("ctx", op("matmul", probs, vv))
    ctx = b("ctx_t", op("permute_dims", ctx, axes=[0, 2, 1, 3]))
    ctx = b("ctx_m", op("reshape", ctx, {"shape": ["b", seq, A * D]}))
    h = b("h", op("add", "x", b("attn_out", op("matmul", ctx, "wo"))))
    n2 = b("mlp_in", op("nn.rms_norm", h, "mlp_norm", axes=[-1], epsilon=EPS))
    act = b("gate_act", op("nn.silu", b("gate", op("matmul", n2, "w_gate"))))
    gu = b("gate_up", op("multiply", act, b("up", op("matmul", n2, "w_up"))))
    y = b("y", op("add", h, b("down", op("matmul", gu, "w_down"))))
    res = b("result", {"tuple": [y, k, v]})
    ub = {"b": bounds["b"], ("s" if phase == "prefill" else "c"): bounds["s" if phase == "prefill" else "c"]}
    return {"kind": "relax", "params": params, "attrs": {"upper_bounds": ub},
            "body": {"blocks": [{"dataflow": True, "bindings": bld.bindings}], "result": res}}


def relax_module(cfg, forms, bounds):
    """A module with prefill_<form> and decode_<form> for each formulation. The bench
    builds one per formulation: a module of all five makes one C file large enough that
    the C compiler can pass relaxc's time limit on a loaded 2-core machine."""
    return {"format": "relax-json", "version": 1,
            "attrs": {"name": "decoder_block", "generator": "tests/bench/bench_vs_ort.py"},
            "functions": {"%s_%s" % (p, f): relax_fn(cfg, f, p, bounds)
                          for f in forms for p in ("prefill", "decode")}}


# ---------------------------------------------------------------- NumPy -----------

def numpy_ref(cfg, form, W, x, kc=None, vc=None):
    """The block's math in float64, written once for every formulation: (y, k, v) with
    k in the formulation's cache layout."""
    A, D = cfg["heads"], cfg["head_dim"]
    KV = kv_heads(cfg, form)
    W = {n: a.astype(np.float64) for n, a in W.items()}
    x = x.astype(np.float64)
    B, S, _ = x.shape

    def rms(h, w):
        return h / np.sqrt((h * h).mean(-1, keepdims=True) + EPS) * w

    n1 = rms(x, W["attn_norm"])
    q = (n1 @ W["wq"]).reshape(B, S, A, D).transpose(0, 2, 1, 3)
    k = (n1 @ W["wk"]).reshape(B, S, KV, D).transpose(0, 2, 1, 3)
    v = (n1 @ W["wv"]).reshape(B, S, KV, D).transpose(0, 2, 1, 3)
    if kc is not None:
        kc = kc.astype(np.float64)
        k = np.concatenate([kc.transpose(0, 1, 3, 2) if form == "kt" else kc, k], axis=2)
        v = np.concatenate([vc.astype(np.float64), v], axis=2)
    kr, vr = np.repeat(k, A // KV, axis=1), np.repeat(v, A // KV, axis=1)
    sc = q @ kr.transpose(0, 1, 3, 2) / math.sqrt(D)
    if kc is None:
        sc = sc + np.triu(np.full((S, S), MASK), 1)
    sc = np.exp(sc - sc.max(-1, keepdims=True))
    ctx = (sc / sc.sum(-1, keepdims=True)) @ vr
    h = x + ctx.transpose(0, 2, 1, 3).reshape(B, S, A * D) @ W["wo"]
    n2 = rms(h, W["mlp_norm"])
    g = n2 @ W["w_gate"]
    y = h + (g / (1 + np.exp(-g)) * (n2 @ W["w_up"])) @ W["w_down"]
    return [y, k.transpose(0, 1, 3, 2) if form == "kt" else k, v]


# ---------------------------------------------------------------- PyTorch ---------

def torch_block_class(torch):
    class Block(torch.nn.Module):
        """The block as a PyTorch user writes it, for one formulation and phase."""

        def __init__(self, cfg, form, decode, W):
            super().__init__()
            self.form, self.decode = form, decode
            self.A, self.D = cfg["heads"], cfg["head_dim"]
            self.KV = kv_heads(cfg, form)
            for n, a in W.items():
                setattr(self, n, torch.nn.Parameter(torch.from_numpy(a), requires_grad=False))

        def rms(self, h, w):
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w

        def forward(self, x, k_cache=None, v_cache=None):
            A, D, KV, form = self.A, self.D, self.KV, self.form
            b, s = x.shape[0], x.shape[1]
            n1 = self.rms(x, self.attn_norm)
            q = (n1 @ self.wq).reshape(b, s, A, D).permute(0, 2, 1, 3)
            k = (n1 @ self.wk).reshape(b, s, KV, D)
            k = k.permute(0, 2, 3, 1) if form == "kt" else k.permute(0, 2, 1, 3)
            v = (n1 @ self.wv).reshape(b, s, KV, D).permute(0, 2, 1, 3)
            if form == "qscale":
                q = q * (1.0 / math.sqrt(D))
            if self.decode:
                k = torch.cat([k_cache, k], dim=3 if form == "kt" else 2)
                v = torch.cat([v_cache, v], dim=2)
            kk, vv = k, v
            if form == "gqa":  # as Hugging Face's repeat_kv
                n = k.shape[2]
                kk = k[:, :, None].expand(b, KV, A // KV, n, D).reshape(b, A, n, D)
                vv = v[:, :, None].expand(b, KV, A // KV, n, D).reshape(b, A, n, D)
            sc = q @ (kk if form == "kt" else kk.permute(0, 1, 3, 2))
            if form != "qscale":
                sc = sc * (1.0 / math.sqrt(D))
            if not self.decode:
                if form == "where":
                    pos = torch.arange(s)
                    sc = torch.where(pos[:, None] >= pos[None, :], sc, torch.tensor(MASK))
                else:
                    sc = sc + torch.full((s, s), MASK).triu(1)
            ctx = (torch.softmax(sc, dim=-1) @ vv).permute(0, 2, 1, 3).reshape(b, s, A * D)
            h = x + ctx @ self.wo
            n2 = self.rms(h, self.mlp_norm)
            y = h + (torch.nn.functional.silu(n2 @ self.w_gate) * (n2 @ self.w_up)) @ self.w_down
            return y, k, v

    return Block


def export_onnx(torch, model, args, path, decode, form):
    names = ["x", "k_cache", "v_cache"] if decode else ["x"]
    dyn = {"x": {0: "b", 1: "s"}, "y": {0: "b", 1: "s"}, "k": {0: "b"}, "v": {0: "b", 2: "n"}}
    dyn["k"][3 if form == "kt" else 2] = "n"
    if decode:
        dyn["k_cache"] = {0: "b", (3 if form == "kt" else 2): "c"}
        dyn["v_cache"] = {0: "b", 2: "c"}
    with warnings.catch_warnings():  # the tracer's notes on arange / shape arithmetic
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, input_names=names, output_names=["y", "k", "v"],
                          dynamic_axes=dyn, opset_version=17, do_constant_folding=True)


# ---------------------------------------------------------------- helpers ---------

def compare(got, want):
    """(ok, max |diff|) of output lists."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return False, float("inf")
    err = max(float(np.abs(g.astype(np.float64) - w).max()) for g, w in zip(got, want))
    return all(np.allclose(g, w, rtol=RTOL, atol=ATOL) for g, w in zip(got, want)), err


def run_env(threads):
    """relax-run's environment: N threads for its kernels and its BLAS, and libgomp's
    default (active) wait policy, not the PASSIVE one set here for PyTorch."""
    env = dict(os.environ)
    if os.environ.get("RX_BENCH_OMP_WAIT_POLICY") is None:
        env.pop("OMP_WAIT_POLICY", None)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def relax_call(a, rxa, fn, ins, repeat, out_dir):
    argv = [a.relax_run, rxa, "--fn", fn, "--bench", "--repeat", str(repeat), "--number", "1",
            "--warmup", "1", "--out-dir", out_dir, "--threads", str(a.threads)]
    for name, path in ins.items():
        argv += ["--in", "%s=%s" % (name, path)]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=run_env(a.threads), timeout=3600, check=False)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def ort_call(a, model, ins, outputs, repeat, out_dir, tmp):
    spec = os.path.join(tmp, "ort_spec.json")
    with open(spec, "w") as f:
        json.dump({"model": model, "inputs": ins, "outputs": outputs, "threads": a.threads,
                   "warmup": 2, "repeat": repeat, "out_dir": out_dir}, f)
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_vs_ort_run.js")
    p = subprocess.run(["node", runner, a.ort_dir, spec], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=3600, check=False)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def parse_list(text, allowed, what):
    items = [t for t in text.split(",") if t]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        sys.exit("bench_vs_ort: unknown %s %s (choose from %s)" % (what, ",".join(bad) or "''",
                                                                   ",".join(allowed)))
    return items


def parse_bounds(text):
    out = {"b": 16, "s": 512, "c": 512}
    for item in text.split(","):
        k, _, v = item.partition("=")
        if k not in out or not v.isdigit() or int(v) < 1:
            sys.exit("bench_vs_ort: bad --bounds item %r (expected b=N, s=N or c=N, N >= 1)" % item)
        out[k] = int(v)
    return out


def fmt(v, spec="%.3f"):
    return "-" if v is None else spec % v


# ---------------------------------------------------------------- main ------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--workloads")
    ap.add_argument("--levels", default="2,3")
    ap.add_argument("--engines", default="relax,onnx,ort,torch")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bounds")
    ap.add_argument("--ort-dir", dest="ort_dir")
    ap.add_argument("--keep", help="keep the modules, weights, inputs and ONNX files here")
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relax-run"))
    a = ap.parse_args()
    if a.threads < 1 or a.repeat < 1:
        sys.exit("bench_vs_ort: --threads and --repeat must be >= 1")
    forms = parse_list(a.forms, FORMS, "formulation")
    wl_table = QUICK_WORKLOADS if a.quick else WORKLOADS
    workloads = parse_list(a.workloads or ",".join(wl_table), tuple(wl_table), "workload")
    levels = parse_list(a.levels, ("0", "1", "2", "3"), "opt level")
    engines = parse_list(a.engines, ("relax", "onnx", "ort", "torch"), "engine")
    cfg = TINY_CFG if a.quick else FULL_CFG
    bounds = parse_bounds(a.bounds or ("b=4,s=16,c=16" if a.quick else "b=16,s=512,c=512"))
    repeat = 1 if a.quick else a.repeat

    torch = None
    if "torch" in engines or "ort" in engines or "onnx" in engines:
        try:
            import torch
            torch.set_num_threads(a.threads)
        except ImportError:
            print("note: PyTorch is not installed (deploy/packages.sh bench installs "
                  "python3-torch): PyTorch and ONNX Runtime skipped")
    ort_dir = a.ort_dir or (None if a.quick else DEFAULT_ORT_DIR)
    use_ort = ("ort" in engines and torch is not None and ort_dir is not None
               and os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node"))
               and shutil.which("node") is not None)
    if "ort" in engines and not use_ort and not a.quick:
        sys.exit("bench_vs_ort: ONNX Runtime not found in %s (run tests/bench/setup_ort.sh, "
                 "or --engines relax,torch)" % ort_dir)
    a.ort_dir = ort_dir
    use_torch = "torch" in engines and torch is not None
    use_onnx = "onnx" in engines and torch is not None

    rng = np.random.default_rng(0)
    tmp = a.keep or tempfile.mkdtemp(prefix="bench_vs_ort_")
    os.makedirs(tmp, exist_ok=True)
    failed, rows, lines = [], [], []
    try:
        for form in forms:
            rxas = {}
            if "relax" in engines:
                src = os.path.join(tmp, "block_%s.json" % form)
                with open(src, "w") as f:
                    json.dump(relax_module(cfg, [form], bounds), f, indent=1)
                for lv in levels:
                    rxas[lv] = os.path.join(tmp, "block_%s_O%s.rxa" % (form, lv))
                    rxbench.run([a.relaxc, "build", src, "--target", "cpu", "--opt-level", lv,
                                 "-o", rxas[lv]], what="bench_vs_ort (%s O%s)" % (form, lv))
            W = {}
            for n, shp in weight_shapes(cfg, form).items():
                lo, hi = (0.5, 1.5) if len(shp) == 1 else (-1 / np.sqrt(shp[0]), 1 / np.sqrt(shp[0]))
                W[n] = rng.uniform(lo, hi, size=shp).astype(np.float32)
            wpaths = {}
            for n, arr in W.items():
                wpaths[n] = os.path.join(tmp, "%s_%s.npy" % (form, n))
                np.save(wpaths[n], arr)
            for wl in workloads:
                phase, B, n = wl_table[wl]
                H = cfg["hidden"]
                x = rng.uniform(-1, 1, size=(B, n if phase == "prefill" else 1, H)).astype(np.float32)
                ins = {"x": x}
                if phase == "decode":
                    ins["k_cache"] = rng.uniform(-1, 1, size=cache_shape(cfg, form, B, n)).astype(np.float32)
                    ins["v_cache"] = rng.uniform(-1, 1, size=(B, kv_heads(cfg, form), n,
                                                              cfg["head_dim"])).astype(np.float32)
                ipaths = {}
                for name, arr in ins.items():
                    ipaths[name] = os.path.join(tmp, "%s_%s_%s.npy" % (form, wl, name))
                    np.save(ipaths[name], arr)
                want = numpy_ref(cfg, form, W, **{{"x": "x", "k_cache": "kc", "v_cache": "vc"}[k]: v
                                                  for k, v in ins.items()})
                res = {"relax": {}, "onnx": {}, "ort": None, "torch": None}
                errs = {}

                def check(engine, got):
                    ok, err = compare(got, want)
                    errs[engine] = err
                    if not ok:
                        failed.append("%s %s %s: differs from NumPy (max |diff| %.3g)"
                                      % (form, wl, engine, err))

                for lv, rxa in rxas.items():
                    out_dir = os.path.join(tmp, "out_%s_%s_O%s" % (form, wl, lv))
                    r, err = relax_call(a, rxa, "%s_%s" % (phase, form), {**wpaths, **ipaths}, repeat, out_dir)
                    if r is None:
                        failed.append("%s %s relax O%s: %s" % (form, wl, lv, err))
                        continue
                    res["relax"][lv] = r
                    check("relax O" + lv, rxbench.read_outputs(out_dir))
                if use_torch or use_ort or use_onnx:
                    model = torch_block_class(torch)(cfg, form, phase == "decode", W)
                    targs = tuple(torch.from_numpy(v) for v in ins.values())
                    with torch.no_grad():
                        check("torch", [t.numpy() for t in model(*targs)])
                        if use_torch and not a.quick:
                            res["torch"] = rxbench.median_ms(lambda: model(*targs), repeat)
                        onnx_path = os.path.join(tmp, "block_%s_%s.onnx" % (form, phase))
                        if (use_ort or use_onnx) and not os.path.exists(onnx_path):
                            export_onnx(torch, model, targs, onnx_path, phase == "decode", form)
                        for lv in levels if use_onnx else ():
                            orxa = os.path.join(tmp, "block_%s_%s_onnx_O%s.rxa" % (form, phase, lv))
                            if not os.path.exists(orxa):
                                rxbench.run([a.relaxc, "build", onnx_path, "--target", "cpu",
                                             "--opt-level", lv, "-o", orxa],
                                            what="bench_vs_ort (%s onnx O%s)" % (form, lv))
                            out_dir = os.path.join(tmp, "out_%s_%s_onnx_O%s" % (form, wl, lv))
                            r, err = relax_call(a, orxa, "main", ipaths, repeat, out_dir)
                            if r is None:
                                failed.append("%s %s onnx O%s: %s" % (form, wl, lv, err))
                                continue
                            res["onnx"][lv] = r
                            check("onnx O" + lv, rxbench.read_outputs(out_dir))
                        if use_ort:
                            out_dir = os.path.join(tmp, "out_%s_%s_ort" % (form, wl))
                            r, err = ort_call(a, onnx_path, ipaths, ["y", "k", "v"], repeat,
                                              out_dir, tmp)
                            if r is None:
                                failed.append("%s %s ort: %s" % (form, wl, err))
                            else:
                                res["ort"] = r
                                check("ort", rxbench.read_outputs(out_dir))
                ort_ms = res["ort"]["median_ms"] if res["ort"] else None
                t_ms = res["torch"]
                for lv in levels:
                    r = res["relax"].get(lv)
                    ms = r["median_ms"] if r else None
                    o = res["onnx"].get(lv)
                    oms = o["median_ms"] if o else None
                    rows.append([form, wl, "O" + lv, fmt(ms), fmt(oms), fmt(ort_ms), fmt(t_ms),
                                 fmt(ms / ort_ms if ms and ort_ms else None, "%.2f"),
                                 fmt(oms / ort_ms if oms and ort_ms else None, "%.2f"),
                                 fmt(ms / t_ms if ms and t_ms else None, "%.2f"),
                                 "%.2g" % max(errs.values()) if errs else "-"])
                    lines.append({"bench": "vs_ort", "form": form, "workload": wl,
                                  "phase": phase, "b": B, ("s" if phase == "prefill" else "c"): n,
                                  "opt_level": int(lv), "threads": a.threads, "repeat": repeat,
                                  "relax_ms": ms, "onnx_import_ms": oms, "ort_ms": ort_ms,
                                  "torch_ms": t_ms,
                                  "onnx_import_over_ort": oms / ort_ms if oms and ort_ms else None,
                                  "relax_over_ort": ms / ort_ms if ms and ort_ms else None,
                                  "relax_over_torch": ms / t_ms if ms and t_ms else None,
                                  "relax_reserved_bytes": r.get("reserved_bytes") if r else None,
                                  "relax_resident_bytes": r.get("resident_bytes") if r else None,
                                  "max_abs_err": errs, "bounds": bounds,
                                  "config": cfg, "quick": a.quick})
                    print(json.dumps(lines[-1]), flush=True)  # a partial run keeps its rows
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    machine, warn = rxbench.load_note()
    if warn:
        print(warn)
    print("decoder block (hidden %d, %d heads, intermediate %d, f32), %d threads, median of %d, ms;"
          " ORT %s, PyTorch %s" % (cfg["hidden"], cfg["heads"], cfg["intermediate"], a.threads,
                                   repeat, "yes" if use_ort else "no",
                                   torch.__version__ if use_torch else "no"))
    print(rxbench.table(["form", "workload", "relax", "relax ms", "import ms", "ORT ms",
                         "torch ms", "relax/ORT", "import/ORT", "relax/torch", "max|diff|"], rows))
    print(json.dumps({"bench": "vs_ort", "machine": machine}), flush=True)
    return rxbench.finish("bench_vs_ort: FAILED\n ", [], failed, sep="\n  ")


if __name__ == "__main__":
    sys.exit(main())
