#!/usr/bin/python3
"""bench_conv.py — per-layer convolution speed: relaxd's blas.conv2d (the conv rule of
library lowering) against PyTorch's conv2d, same shapes, same run, 2 threads.

    /usr/bin/python3 tests/bench/bench_conv.py BUILD_DIR [--generated]

Each layer is a module y = relu(conv2d(x, w) + b) (the chain the conv rule takes whole)
built with `relaxc build` and timed with `relax-run --bench --threads 2`; torch runs the
same layer in-process. Prints one line per layer: ms, GFLOP/s (2 * multiply-adds / time)
of each, and relax/torch; --generated also times the generated loops (--lib-disable
conv2d). Results are checked against torch (max abs error printed).
"""
import json, os, subprocess, sys, tempfile, time

import numpy as np
import torch
import torch.nn.functional as F

T = 2
torch.set_num_threads(T)

# name, (N, C, H, W), (O, KH, KW), stride, pad, groups
LAYERS = [
    ("stem s2 3x3 3->32 224", (1, 3, 224, 224), (32, 3, 3), 2, 1, 1),
    ("3x3 32->64 56", (1, 32, 56, 56), (64, 3, 3), 1, 1, 1),
    ("3x3 64->64 56", (1, 64, 56, 56), (64, 3, 3), 1, 1, 1),
    ("1x1 32->64 56", (1, 32, 56, 56), (64, 1, 1), 1, 0, 1),
    ("3x3 s2 64->128 56", (1, 64, 56, 56), (128, 3, 3), 2, 1, 1),
    ("3x3 128->128 28", (1, 128, 28, 28), (128, 3, 3), 1, 1, 1),
    ("b8 3x3 64->64 28", (8, 64, 28, 28), (64, 3, 3), 1, 1, 1),
    ("1x1 96->384 56", (1, 96, 56, 56), (384, 1, 1), 1, 0, 1),
    ("dw 3x3 384 56", (1, 384, 56, 56), (384, 3, 3), 1, 1, 384),
    ("b2 dw 3x3 128 109", (2, 128, 109, 109), (128, 3, 3), 1, 1, 128),
    ("1x1 384->96 56", (1, 384, 56, 56), (96, 1, 1), 1, 0, 1),
    ("grouped g=4 3x3 128 28", (1, 128, 28, 28), (128, 3, 3), 1, 1, 4),
]


def module(xs, ws, stride, pad, groups):
    def t(name, shape):
        return {"name": name, "type": {"tensor": {"shape": list(shape), "dtype": "f32"}}}
    attrs = {"strides": [stride, stride], "padding": [pad] * 4, "groups": groups}
    bind = [{"var": "c", "value": {"op": "nn.conv2d", "args": ["x", "w"], "attrs": attrs}},
            {"var": "s", "value": {"op": "add", "args": ["c", "b"]}},
            {"var": "y", "value": {"op": "nn.relu", "args": ["s"]}}]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [t("x", xs), t("w", ws), t("b", (1, ws[0], 1, 1))],
        "body": {"blocks": [{"dataflow": True, "bindings": bind}], "result": "y"}}}}


def relax_ms(bindir, tmp, tag, src, ins, extra):
    rxa = os.path.join(tmp, tag + ".rxa")
    subprocess.run([os.path.join(bindir, "relaxc"), "build", src, "-o", rxa] + extra, check=True)
    out = os.path.join(tmp, tag + "_out")
    env = dict(os.environ, OMP_NUM_THREADS=str(T), OPENBLAS_NUM_THREADS=str(T))
    p = subprocess.run([os.path.join(bindir, "relax-run"), rxa, "--bench", "--repeat", "10",
                        "--warmup", "2", "--threads", str(T), "--out-dir", out] + ins,
                       capture_output=True, text=True, env=env, check=True)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["median_ms"], np.load(os.path.join(out, sorted(os.listdir(out))[0]))


def main():
    bindir = os.path.join(sys.argv[1], "bin")
    generated = "--generated" in sys.argv
    rng = np.random.default_rng(0)
    print("load: " + open("/proc/loadavg").read().strip())
    with tempfile.TemporaryDirectory(prefix="bench_conv.") as tmp:
        for name, xs, (O, KH, KW), st, pd, g in LAYERS:
            ws = (O, xs[1] // g, KH, KW)
            x = rng.standard_normal(xs, dtype=np.float32)
            w = rng.standard_normal(ws, dtype=np.float32) * 0.1
            b = rng.standard_normal((1, O, 1, 1), dtype=np.float32)
            src = os.path.join(tmp, "m.json")
            json.dump(module(xs, ws, st, pd, g), open(src, "w"))
            ins = []
            for k, v in (("x", x), ("w", w), ("b", b)):
                np.save(os.path.join(tmp, k + ".npy"), v)
                ins += ["--in", "%s=%s" % (k, os.path.join(tmp, k + ".npy"))]
            tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b.reshape(O))
            with torch.no_grad():
                want = F.relu(F.conv2d(tx, tw, tb, st, pd, 1, g))
                F.conv2d(tx, tw, tb, st, pd, 1, g)
                reps = []
                for _ in range(10):
                    t0 = time.perf_counter()
                    F.relu(F.conv2d(tx, tw, tb, st, pd, 1, g))
                    reps.append((time.perf_counter() - t0) * 1e3)
                torch_ms = float(np.median(reps))
            rms, got = relax_ms(bindir, tmp, "lib", src, ins, [])
            macs = want.numel() * ws[1] * KH * KW
            line = "%-24s relax %7.3f ms %6.1f GFLOP/s  torch %7.3f ms %6.1f GFLOP/s  relax/torch %5.2f  err %.1e" % (
                name, rms, 2 * macs / rms / 1e6, torch_ms, 2 * macs / torch_ms / 1e6, rms / torch_ms,
                float(np.abs(got - want.numpy()).max()))
            if generated:
                gms, _ = relax_ms(bindir, tmp, "gen", src, ins, ["--lib-disable", "conv2d"])
                line += "  generated %7.3f ms %6.1f GFLOP/s" % (gms, 2 * macs / gms / 1e6)
            print(line, flush=True)
    print("load: " + open("/proc/loadavg").read().strip())


main()
