#!/usr/bin/python3
"""bench_torch_blocks.py — blocks as popular model code writes them (the classes of
tests/onnx/test_torch_blocks.py at realistic sizes), exported by torch.onnx.export,
built by relaxc (O2) and timed by relax-run beside ONNX Runtime (onnxruntime-node, CPU,
on the same .onnx file) and PyTorch eager, same inputs, same run, 2 threads each.

  gpt2      Hugging Face GPT-2 block: d 768, 12 heads, s 128 (Conv1D addmm, the mask
            buffer sliced by the sequence, tanh GELU written with pow)
  llama     Hugging Face Llama block: d 1024, 16 heads, 4 k/v heads, intermediate 2816,
            s 128 (rotary, repeat_kv, RMSNorm with casts, SiLU MLP)
  vit       ViT-S block: d 384, patch 16, 224x224 image (patch Conv2d, class token,
            nn.MultiheadAttention, Linear head)
  t5        T5-style attention: d 512, 8 heads, 8 buckets, s 128

Each prints one JSON line: relax_ms, ort_ms, torch_ms (medians of --repeat calls after
warm-ups), relax/ORT and relax/torch (goal <= 1.0) and the max |diff| of relax's and
ORT's outputs against PyTorch's (checked: rtol 1e-3, atol 1e-4; a mismatch fails).
--quick: tiny sizes, one call each (ctest bench/torch_blocks_quick; ORT only when
installed).

  bench_torch_blocks.py [--quick] [--blocks gpt2,llama,vit,t5] [--repeat R] [--threads 2]
                        [--relaxc P] [--relax-run P] [--ort-dir DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import rxbench

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "onnx"))


def parse_args():
    ap = rxbench.vs_ort_args(argparse.ArgumentParser(
        description="user-written blocks vs ORT and PyTorch"))
    ap.add_argument("--blocks", default="gpt2,llama,vit,t5")
    return ap.parse_args()


ARGS = parse_args()
sys.argv = [sys.argv[0], os.path.dirname(ARGS.relaxc)]  # test_torch_blocks reads BIN
import test_torch_blocks as tb  # noqa: E402  (the block classes)


def blocks(quick):
    if quick:
        return {"gpt2": (lambda: tb.GPT2Block(), (2, 7, 64)),
                "llama": (lambda: tb.LlamaBlock(), (2, 7, 64)),
                "vit": (lambda: tb.ViTBlock(), (2, 3, 16, 16)),
                "t5": (lambda: tb.T5Attention(), (2, 9, 32))}
    return {"gpt2": (lambda: tb.GPT2Block(d=768, h=12, n_ctx=1024), (1, 128, 768)),
            "llama": (lambda: tb.LlamaBlock(d=1024, h=16, kvh=4, inter=2816), (1, 128, 1024)),
            "vit": (lambda: tb.ViTBlock(d=384, p=16, img=224), (1, 3, 224, 224)),
            "t5": (lambda: tb.T5Attention(d=512, h=8, buckets=8), (1, 128, 512))}


def sh(argv, env=None):
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(argv), p.stderr[-1500:]))
    return p.stdout


def main():
    torch.manual_seed(0)
    torch.set_num_threads(ARGS.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(ARGS.threads),
               OPENBLAS_NUM_THREADS=str(ARGS.threads))
    ort_js = os.path.join(HERE, "bench_vs_ort_run.js")
    have_ort = rxbench.have_ort(ARGS.ort_dir)
    repeat = 1 if ARGS.quick else ARGS.repeat
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_blocks.") as tmp:
        for name, (make, shape) in blocks(ARGS.quick).items():
            if name not in ARGS.blocks.split(","):
                continue
            model = make().eval()
            x = torch.randn(*shape)
            path, rxa = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".rxa")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                                  opset_version=17)
            xin = os.path.join(tmp, name + "_x.npy")
            np.save(xin, x.numpy())
            with torch.no_grad():
                want = model(x).numpy()
                for _ in range(0 if ARGS.quick else 2):
                    model(x)
                ts = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    model(x)
                    ts.append((time.perf_counter() - t0) * 1e3)
            torch_ms = float(np.median(ts))
            sh([ARGS.relaxc, "build", path, "-o", rxa])
            od = os.path.join(tmp, name + "_out")
            sh([ARGS.relax_run, rxa, "--in", "x=" + xin, "--out-dir", od,
                "--threads", str(ARGS.threads)], env)
            got = np.load(os.path.join(od, "out0.npy"))
            res = {"bench": "torch_blocks", "block": name, "shape": list(shape),
                   "threads": ARGS.threads, "repeat": repeat, "torch_ms": round(torch_ms, 3)}
            errs = {"relax": float(np.abs(got - want).max())}
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-4)
            if not ARGS.quick:
                r = json.loads(sh([ARGS.relax_run, rxa, "--in", "x=" + xin, "--bench",
                                   "--repeat", str(repeat), "--warmup", "2", "--threads",
                                   str(ARGS.threads)], env).strip().splitlines()[-1])
                res["relax_ms"] = round(r["median_ms"], 3)
                res["relax_over_torch"] = round(r["median_ms"] / torch_ms, 3)
            if have_ort:
                spec = os.path.join(tmp, name + "_spec.json")
                with open(spec, "w") as f:
                    json.dump({"model": path, "inputs": {"x": xin}, "outputs": ["y"],
                               "threads": ARGS.threads, "warmup": 0 if ARGS.quick else 2,
                               "repeat": repeat, "out_dir": os.path.join(tmp, name + "_ort")},
                              f)
                o = json.loads(sh(["node", ort_js, ARGS.ort_dir, spec]).strip().splitlines()[-1])
                og = np.load(os.path.join(tmp, name + "_ort", "out0.npy"))
                errs["ort"] = float(np.abs(og - want).max())
                ok &= og.shape == want.shape and np.allclose(og, want, rtol=1e-3, atol=1e-4)
                res["ort_ms"] = round(o["median_ms"], 3)
                if "relax_ms" in res:
                    res["relax_over_ort"] = round(res["relax_ms"] / o["median_ms"], 3)
            res["max_abs_err"] = errs
            res["ok"] = bool(ok)
            failed |= not ok
            print(json.dumps(res), flush=True)
    print(json.dumps({"bench": "torch_blocks", "machine": {"loadavg": os.getloadavg()[0],
                                                           "cpus": os.cpu_count()}}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
