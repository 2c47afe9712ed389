#!/usr/bin/python3
"""bench_rnn.py — exported recurrent layers: relaxd vs ONNX Runtime vs PyTorch, one run.

Exports nn.LSTM(256, 512, batch_first=True) and nn.GRU(256, 512, batch_first=True) on
(4, 32, 256) with torch.onnx.export (opset 17), builds them with relaxc (O2, cpu) and
times relax-run --bench, ONNX Runtime 1.30 (onnxruntime-node, tests/bench/setup_ort.sh)
and PyTorch (OMP_WAIT_POLICY=PASSIVE in this process) on the same inputs, 2 threads, printing medians and the ratios. With
--baseline RELAXC a second relaxc (an older build) is timed in the same run, so a
before/after is measured side by side. Outputs are checked against PyTorch. With
--dtype f64 the layers run in float64: relaxd's loop form of nn.rnn (docs/ops.md; the
runtime library's rt.rnn is f32 only) against PyTorch's and ONNX Runtime's f64.

Usage: bench_rnn.py RELAXC [--baseline RELAXC] [--repeat N] [--models lstm,gru] [--dtype f64]
(run under `flock /work/wt/bench.lock` on a shared machine).
"""
import argparse
import json
import os
import subprocess
import tempfile
import time
import warnings

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # this process's PyTorch only (MACHINE.md)
import torch  # noqa: E402
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ORT = os.path.expanduser("~/.cache/relaxd/ort-1.30.0")
T = 2


class Seq(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x):
        return self.cell(x)[0]


MODELS = {
    "lstm": lambda: Seq(nn.LSTM(256, 512, batch_first=True)),
    "gru": lambda: Seq(nn.GRU(256, 512, batch_first=True)),
}


def relax_ms(relaxc, onnx, xin, tmp, tag, want, repeat, env):
    rxa = os.path.join(tmp, tag + ".rxa")
    p = subprocess.run([relaxc, "build", onnx, "--target", "cpu", "--opt-level", "2", "-o", rxa],
                       capture_output=True, text=True)
    if p.returncode:
        return float("nan"), "build failed: " + p.stderr.strip()[-200:]
    run = os.path.join(os.path.dirname(relaxc), "relax-run")
    od = os.path.join(tmp, tag + "_out")
    p = subprocess.run([run, rxa, "--bench", "--repeat", str(repeat), "--warmup", "2", "--threads",
                        str(T), "--in", "x=" + xin, "--out-dir", od], capture_output=True, text=True,
                       env=env)
    if p.returncode:
        return float("nan"), "run failed: " + p.stderr.strip()[-200:]
    got = np.load(os.path.join(od, sorted(os.listdir(od))[0]))
    err = float(np.abs(got - want).max())
    return json.loads(p.stdout.strip().splitlines()[-1])["median_ms"], "err %.1e" % err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("relaxc")
    ap.add_argument("--baseline")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default="lstm,gru")
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    a = ap.parse_args()
    torch.set_num_threads(T)
    env = dict(os.environ, OMP_NUM_THREADS=str(T), OPENBLAS_NUM_THREADS=str(T))
    env.pop("OMP_WAIT_POLICY", None)  # relax-run with libgomp's defaults, as users run it
    tmp = tempfile.mkdtemp(prefix="bench-rnn-")
    for name in a.models.split(","):
        torch.manual_seed(0)
        dt = torch.float64 if a.dtype == "f64" else torch.float32
        m = MODELS[name]().to(dt).eval()
        x = torch.randn(4, 32, 256, dtype=dt)
        with torch.no_grad():
            want = m(x).numpy()
            m(x)
            times = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                m(x)
                times.append((time.perf_counter() - t0) * 1e3)
            torch_ms = float(np.median(times))
        onnx = os.path.join(tmp, name + ".onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, (x,), onnx, input_names=["x"], output_names=["y"], opset_version=17)
        xin = os.path.join(tmp, name + "_x.npy")
        np.save(xin, x.numpy())
        spec = os.path.join(tmp, "spec.json")
        json.dump({"model": onnx, "inputs": {"x": xin}, "outputs": ["y"], "threads": T, "warmup": 2,
                   "repeat": a.repeat, "out_dir": os.path.join(tmp, name + "_ort")}, open(spec, "w"))
        q = subprocess.run(["node", os.path.join(HERE, "bench_vs_ort_run.js"), ORT, spec],
                           capture_output=True, text=True)
        ort = json.loads(q.stdout.strip().splitlines()[-1])["median_ms"] if q.returncode == 0 else float("nan")
        rows = [("relax", a.relaxc)] + ([("baseline", a.baseline)] if a.baseline else [])
        for tag, relaxc in rows:
            ms, note = relax_ms(relaxc, onnx, xin, tmp, name + "_" + tag, want, a.repeat, env)
            print("%-5s %s %-8s %8.2f ms  ort %7.2f  torch %7.2f  /ort %5.2f  /torch %5.2f  %s"
                  % (name, a.dtype, tag, ms, ort, torch_ms, ms / ort, ms / torch_ms, note), flush=True)


if __name__ == "__main__":
    main()
