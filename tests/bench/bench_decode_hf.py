#!/usr/bin/python3
"""bench_decode_hf.py — a GPT-2-style decoder exported the way Hugging Face / optimum
export generation models: token ids and an attention mask as inputs, the past keys and
values of every layer as inputs (their length a dynamic axis) and the present ones as
outputs, position ids from the mask's cumsum sliced by [:, -ids.shape[1]:], a causal
mask sliced from tril(ones) and applied with where(finfo.min), the padding mask added as
(1 - mask) * finfo.min, tanh GELU, logits from the tied embedding (x @ wte.T). One .onnx
file (torch.onnx.export, opset 17, dynamic batch / new tokens / past), built once by
relaxc (O2) and timed by relax-run beside ONNX Runtime (onnxruntime-node, CPU, same file,
same inputs) and PyTorch eager, 2 threads each:

  decode_b1_p128   one new token, batch 1, 128 cached
  decode_b4_p256   one new token, batch 4, 256 cached
  prefill_b1_s128  128 tokens, nothing cached

Each prints one JSON line (relax_ms, ort_ms, torch_ms: medians; relax/ORT, relax/torch:
goal <= 1.0) and checks relax's logits and present keys against PyTorch (rtol 1e-3,
atol 1e-3) and ORT's logits; a mismatch fails. d 768, 12 heads, 2 layers, vocabulary
1000 (--quick: d 64, 4 heads, vocabulary 50, one call each, ORT where installed: ctest
bench/decode_hf_quick).

  bench_decode_hf.py [--quick] [--repeat R] [--threads 2] [--relaxc P] [--relax-run P]
                     [--ort-dir DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import rxbench
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = rxbench.vs_ort_args(argparse.ArgumentParser(
        description="HF-style decoder with past key/values vs ORT"))
    return ap.parse_args()


ARGS = parse_args()
D, H, V = (64, 4, 50) if ARGS.quick else (768, 12, 1000)
LAYERS = 2


class Layer(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.qkv, s.o = nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.f1, s.f2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(s, x, pk, pv, amask):
        b, n, _ = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        heads = lambda t: t.view(b, n, H, D // H).permute(0, 2, 1, 3)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        k, v = torch.cat([pk, k], dim=-2), torch.cat([pv, v], dim=-2)
        tot = k.shape[-2]
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H)
        causal = torch.tril(torch.ones(tot, tot, dtype=torch.bool))[tot - n:tot, :tot]
        w = torch.where(causal[None, None], w, torch.tensor(torch.finfo(w.dtype).min))
        w = w + (1.0 - amask[:, None, None, :].to(w.dtype)) * torch.finfo(w.dtype).min
        a = torch.matmul(F.softmax(w, dim=-1), v).permute(0, 2, 1, 3).reshape(b, n, D)
        x = x + s.o(a)
        return x + s.f2(F.gelu(s.f1(s.ln2(x)), approximate="tanh")), k, v


class Decoder(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(1024, D)
        s.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        s.lnf = nn.LayerNorm(D)

    def forward(s, ids, amask, *past):
        pos = (amask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
        x, present = s.wte(ids) + s.wpe(pos), []
        for i, layer in enumerate(s.layers):
            x, k, v = layer(x, past[2 * i], past[2 * i + 1], amask)
            present += [k, v]
        return (s.lnf(x) @ s.wte.weight.T, *present)


NAMES = ["ids", "amask"] + ["p%s%d" % (kv, i) for i in range(LAYERS) for kv in "kv"]


def inputs(b, n, p):
    torch.manual_seed(b * 1000 + n + p)
    return (torch.randint(0, V, (b, n)), torch.ones(b, p + n, dtype=torch.long),
            *[torch.randn(b, H, p, D // H) for _ in range(2 * LAYERS)])


def main():
    torch.manual_seed(0)
    torch.set_num_threads(ARGS.threads)
    model = Decoder().eval()
    have_ort = rxbench.have_ort(ARGS.ort_dir)
    env = dict(os.environ, OMP_NUM_THREADS=str(ARGS.threads),
               OPENBLAS_NUM_THREADS=str(ARGS.threads))
    work = {"decode_b1_p128": (1, 1, 128), "decode_b4_p256": (4, 1, 256),
            "prefill_b1_s128": (1, 128, 0)}
    if ARGS.quick:
        work = {"decode_b2_p5": (2, 1, 5), "prefill_b1_s7": (1, 7, 0)}
    repeat = 1 if ARGS.quick else ARGS.repeat
    failed = False
    with tempfile.TemporaryDirectory(prefix="decode-hf-") as tmp:
        path, rxa = os.path.join(tmp, "dec.onnx"), os.path.join(tmp, "dec.rxa")
        dyn = {"ids": {0: "b", 1: "n"}, "amask": {0: "b", 1: "t"}}
        dyn.update({nm: {0: "b", 2: "p"} for nm in NAMES[2:]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, inputs(1, 3, 5), path, input_names=NAMES,
                              output_names=["logits"] + ["present%d" % i for i in range(2 * LAYERS)],
                              opset_version=17, dynamic_axes=dyn)
        subprocess.run([ARGS.relaxc, "build", path, "-o", rxa], check=True)
        for name, (b, n, p) in work.items():
            xs = inputs(b, n, p)
            files = {}
            for nm, x in zip(NAMES, xs):
                files[nm] = os.path.join(tmp, "%s_%s.npy" % (name, nm))
                np.save(files[nm], x.numpy())
            od = os.path.join(tmp, name + "_relax")
            argv = [ARGS.relax_run, rxa, "--bench", "--repeat", str(repeat), "--warmup", "1",
                    "--threads", str(ARGS.threads), "--out-dir", od]
            for nm in NAMES:
                argv += ["--in", "%s=%s" % (nm, files[nm])]
            q = subprocess.run(argv, capture_output=True, text=True, env=env)
            if q.returncode:
                print(json.dumps({"bench": "decode_hf", "workload": name, "ok": False,
                                  "error": q.stderr.strip()[-400:]}))
                failed = True
                continue
            relax_ms = json.loads(q.stdout.strip().splitlines()[-1])["median_ms"]
            with torch.no_grad():
                want = model(*xs)
                t = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    model(*xs)
                    t.append((time.perf_counter() - t0) * 1e3)
            got = np.load(os.path.join(od, "out0.npy"))
            got_k = np.load(os.path.join(od, "out1.npy"))
            err = float(np.abs(got - want[0].numpy()).max())
            ok = (np.allclose(got, want[0].numpy(), rtol=1e-3, atol=1e-3) and
                  np.allclose(got_k, want[1].numpy(), rtol=1e-3, atol=1e-3))
            rec = {"bench": "decode_hf", "workload": name, "batch": b, "new": n, "past": p,
                   "threads": ARGS.threads, "repeat": repeat, "relax_ms": round(relax_ms, 3),
                   "torch_ms": round(float(np.median(t)), 3),
                   "relax_over_torch": round(relax_ms / float(np.median(t)), 3),
                   "max_abs_err": err}
            if have_ort:
                spec = os.path.join(tmp, "spec.json")
                ort_od = os.path.join(tmp, name + "_ort")
                with open(spec, "w") as f:
                    json.dump({"model": path, "inputs": files, "outputs": ["logits"],
                               "threads": ARGS.threads, "warmup": 2, "repeat": repeat,
                               "out_dir": ort_od}, f)
                r = subprocess.run(["node", os.path.join(HERE, "bench_vs_ort_run.js"),
                                    ARGS.ort_dir, spec], capture_output=True, text=True)
                if r.returncode:
                    rec["ort_error"] = r.stderr.strip()[-300:]
                    ok = False
                else:
                    ort_ms = json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]
                    ort_out = np.load(os.path.join(ort_od, "out0.npy"))
                    ok &= bool(np.allclose(ort_out, got, rtol=1e-3, atol=1e-3))
                    rec.update(ort_ms=round(ort_ms, 3), relax_over_ort=round(relax_ms / ort_ms, 3))
            rec["ok"] = bool(ok)
            failed |= not ok
            print(json.dumps(rec), flush=True)
    print(json.dumps({"bench": "decode_hf", "machine": {"loadavg": os.getloadavg()[0],
                                                        "cpus": os.cpu_count()}}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
