#!/usr/bin/python3
"""bench_decoder_torch.py — one Llama decoder block: relax (relaxc + relax-run) vs
PyTorch CPU eager, same shapes, same weights, same inputs, in the same run.

The module: tests/models/gen_llama.py with one layer (default hidden 2048, 32 heads of
64, intermediate 5632, f32: TinyLlama-1.1B's layer shapes without grouped-query
attention): RMSNorm, Q/K/V projections, causal attention with softmax, output
projection, residual, RMSNorm, SiLU-gated MLP, residual, and the generator's final
RMSNorm. Two workloads:
  prefill  s = 128 (causal mask triu(-1e9, k=1), as the module builds it)
  decode   b = 1, c = 127 (the new token attends over 127 cached positions + itself)
The PyTorch model below is written independently from the same equations
(torch.matmul, torch.softmax, torch.nn.functional.silu), run under torch.no_grad()
with torch.set_num_threads(2) (the machine's cores; relax's BLAS uses them too). Both
return (y, k, v): the block's output and the layer's key/value cache.

Timing: relax-run --bench (median of --repeat calls after a warm-up) and, here, the
median of as many torch calls after two warm-ups; ratio = relax / torch (goal <= 0.8;
reported, not enforced). Correctness (enforced): every output of relax's first call
allclose to torch's (rtol 1e-3, atol 1e-4: f32 sums of up to 5632 terms in other orders).

Output: a table, then one JSON line per workload. `--smoke`: the tiny config (hidden 64,
4 heads, intermediate 128), s = 8, c = 7, one repeat — a ctest of agreement, not speed;
exits 77 (skip) when PyTorch is not installed (deploy/packages.sh bench installs it).

  bench_decoder_torch.py [--smoke] [--repeat R] [--hidden H] [--heads A]
                         [--intermediate I] [--s 128] [--c 127] [--relaxc P] [--relax-run P]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

import rxbench

RTOL, ATOL = 1e-3, 1e-4
GOAL = 0.8
SKIP = 77


def torch_block(torch, cfg, W, x, cache=None, mask=True):
    """The decoder block + final norm in PyTorch: (y, k, v). W: name -> tensor."""
    A, D, eps = cfg["heads"], cfg["head_dim"], cfg["eps"]
    F = torch.nn.functional

    def rms(h, w):
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w

    B, S, _ = x.shape
    n1 = rms(x, W["l0_attn_norm"])
    q, k, v = ((n1 @ W[w]).reshape(B, S, A, D).permute(0, 2, 1, 3) for w in ("l0_wq", "l0_wk", "l0_wv"))
    if cache is not None:
        k = torch.cat([cache[0], k], dim=2)
        v = torch.cat([cache[1], v], dim=2)
    sc = (q @ k.transpose(-1, -2)) * (1.0 / D ** 0.5)
    if mask:
        sc = sc + torch.triu(torch.full((S, S), -1e9), diagonal=1)
    ctx = (torch.softmax(sc, dim=-1) @ v).permute(0, 2, 1, 3).reshape(B, S, A * D)
    h = x + ctx @ W["l0_wo"]
    n2 = rms(h, W["l0_mlp_norm"])
    y = h + (F.silu(n2 @ W["l0_w_gate"]) * (n2 @ W["l0_w_up"])) @ W["l0_w_down"]
    return rms(y, W["final_norm"]), k, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--intermediate", type=int, default=5632)
    ap.add_argument("--s", type=int, default=128)
    ap.add_argument("--c", type=int, default=127)
    ap.add_argument("--opt-level", default="2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relax-run"))
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed (deploy/packages.sh bench installs python3-torch): skipped")
        return SKIP
    torch.set_num_threads(a.threads)
    if a.smoke:
        cfg = rxbench.llama_config(layers=1)
        s, c, repeat = 8, 7, 1
    else:
        cfg = rxbench.llama_config(layers=1, hidden=a.hidden, heads=a.heads,
                                   intermediate=a.intermediate)
        s, c, repeat = a.s, a.c, a.repeat
    A, D, H = cfg["heads"], cfg["head_dim"], cfg["hidden"]
    mod = rxbench.llama_module(cfg)
    rng = np.random.default_rng(0)
    W = {}
    for p in mod["functions"]["prefill"]["params"][1:]:
        shp = p["type"]["tensor"]["shape"]
        lo, hi = (0.5, 1.5) if len(shp) == 1 else (-0.5 / np.sqrt(shp[0]), 0.5 / np.sqrt(shp[0]))
        W[p["name"]] = rng.uniform(lo, hi, size=shp).astype(np.float32)
    xs = rng.uniform(-1, 1, size=(1, s, H)).astype(np.float32)
    xd = rng.uniform(-1, 1, size=(1, 1, H)).astype(np.float32)
    kc = rng.uniform(-1, 1, size=(1, A, c, D)).astype(np.float32)
    vc = rng.uniform(-1, 1, size=(1, A, c, D)).astype(np.float32)
    TW = {k: torch.from_numpy(v) for k, v in W.items()}
    work = [
        ("prefill", "s=%d" % s, {"x": xs}, lambda: torch_block(torch, cfg, TW, torch.from_numpy(xs))),
        ("decode", "b=1, c=%d" % c, {"x": xd, "k_cache_0": kc, "v_cache_0": vc},
         lambda: torch_block(torch, cfg, TW, torch.from_numpy(xd),
                             (torch.from_numpy(kc), torch.from_numpy(vc)), mask=False)),
    ]
    failed, rows, lines = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench_decoder_") as tmp, torch.no_grad():
        src, rxa = os.path.join(tmp, "block.json"), os.path.join(tmp, "block.rxa")
        with open(src, "w") as f:
            json.dump(mod, f)
        t0 = time.perf_counter()
        rxbench.run([a.relaxc, "build", src, "--target", "cpu", "--opt-level", a.opt_level, "-o", rxa])
        build_ms = (time.perf_counter() - t0) * 1e3
        paths = {}
        for name, arr in W.items():
            paths[name] = os.path.join(tmp, name + ".npy")
            np.save(paths[name], arr)
        for wname, shapes, extra, tfn in work:
            ins = dict(paths)
            for name, arr in extra.items():
                ins[name] = os.path.join(tmp, "%s_%s.npy" % (wname, name))
                np.save(ins[name], arr)
            out_dir = os.path.join(tmp, "out-" + wname)
            r = rxbench.relax_bench(a.relax_run, rxa, wname, ins, repeat, out_dir=out_dir)
            got = rxbench.read_outputs(out_dir)
            want = [t.numpy() for t in tfn()]
            err = max(float(np.abs(g.astype(np.float64) - w).max()) if g.shape == w.shape
                      else float("inf") for g, w in zip(got, want)) if len(got) == 3 else float("inf")
            ok = len(got) == 3 and all(g.shape == w.shape and np.allclose(g, w, rtol=RTOL, atol=ATOL)
                                       for g, w in zip(got, want))
            if not ok:
                failed.append("%s: relax and torch differ (max |diff| %.3g)" % (wname, err))
            tms = rxbench.median_ms(tfn, repeat)
            ratio = r["median_ms"] / tms
            rows.append([wname, shapes, "%.3f" % r["median_ms"], "%.3f" % tms, "%.2f" % ratio,
                         "yes" if ratio <= GOAL else "no", "%.2g" % err,
                         "%.1f" % (r["peak_bytes"] / 2**20), r["kernels"]])
            lines.append({"bench": "decoder_torch", "workload": wname, "shapes": shapes,
                          "config": {k: cfg[k] for k in ("hidden", "heads", "head_dim", "intermediate")},
                          "opt_level": int(a.opt_level), "repeat": repeat,
                          "relax_ms": r["median_ms"], "torch_ms": round(tms, 4),
                          "ratio": round(ratio, 3), "goal_ratio": GOAL, "max_abs_err": err,
                          "result_ok": ok, "relax_calls": r["kernels"],
                          "relax_peak_bytes": r["peak_bytes"], "build_ms": round(build_ms, 1),
                          "torch": torch.__version__, "torch_threads": torch.get_num_threads()})
    machine, warn = rxbench.load_note()
    for ln in lines:
        ln["machine"] = machine
    if warn:
        print(warn)
    print("decoder block %s (1 layer), relax O%s vs PyTorch %s eager (%d threads), median of %d, ms"
          % (cfg["name"], a.opt_level, torch.__version__, torch.get_num_threads(), repeat))
    print(rxbench.table(["workload", "shapes", "relax", "torch", "relax/torch",
                         "<= %.1f" % GOAL, "max|diff|", "peak MiB", "calls"], rows))
    return rxbench.finish("bench_decoder_torch", lines, failed)


if __name__ == "__main__":
    sys.exit(main())
