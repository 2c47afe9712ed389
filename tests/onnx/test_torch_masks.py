#!/usr/bin/python3
"""Masked softmax as PyTorch models write it, exported with dynamic axes, built at O0,
O2 and O3 and run at several (b, s) from each artifact; outputs equal PyTorch's (rtol
1e-5, atol 1e-6). At O2 the softmax must take the rows schedule (compiler/pass/
schedule_rows.c: a per-row run, its max and sum over vector lanes), which the IR dump
shows as two `_lanes` buffers, and the selects of the where forms their arm loads bound
to LETs (`armN = ...`), never the tile schedule's packed mask (`_pack`).

* gpt2: Hugging Face GPT-2's mask, a registered (1, 1, n_ctx, n_ctx) bool buffer sliced
  by the sequence length, where(mask, w / 8, finfo.min).
* fill: masked_fill(mask, -inf) of a (b, 1, s, s) bool mask, the scale after.
* add: an additive (b, 1, 1, s) float mask (a padding mask) after the scale.

Usage: test_torch_masks.py BIN_DIR
"""
import glob
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

BIN = sys.argv[1]


class Gpt2Mask(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer("bias", torch.tril(torch.ones(64, 64, dtype=torch.bool)).view(1, 1, 64, 64))

    def forward(s, x):
        q = x.size(-2)
        w = x / torch.full([], 8.0)
        w = torch.where(s.bias[:, :, :q, :q], w, torch.full([], torch.finfo(w.dtype).min))
        return torch.softmax(w, -1)


class FillMask(torch.nn.Module):
    def forward(s, x, m):
        return torch.softmax(x.masked_fill(m, float("-inf")) * 0.125, -1)


class AddMask(torch.nn.Module):
    def forward(s, x, m):
        return torch.softmax(x * 0.125 + m, -1)


def fill_inputs(b, s):
    m = torch.rand(b, 1, s, s) > 0.5
    m[..., 0] = False  # no row fully masked (softmax of all -inf is NaN in both)
    return [torch.randn(b, 4, s, s) * 3, m]


CASES = [
    ("gpt2", Gpt2Mask(), lambda b, s: [torch.randn(b, 12, s, s) * 3], ["x"],
     {"x": {0: "b", 2: "s", 3: "s"}}, True),
    ("fill", FillMask(), fill_inputs, ["x", "m"],
     {"x": {0: "b", 2: "s", 3: "s"}, "m": {0: "b", 2: "s", 3: "s"}}, True),
    ("add", AddMask(),
     lambda b, s: [torch.randn(b, 4, s, s) * 3, torch.where(torch.rand(b, 1, 1, s) > 0.3, 0.0, -1e9)],
     ["x", "m"], {"x": {0: "b", 2: "s", 3: "s"}, "m": {0: "b", 3: "s"}}, False),
]


def sh(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(argv), p.stderr[-1500:]))


def main():
    torch.manual_seed(1)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="torch_masks.") as tmp:
        for name, model, inputs, names, dyn, where in CASES:
            onnx = os.path.join(tmp, name + ".onnx")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, tuple(inputs(2, 24)), onnx, input_names=names,
                                  output_names=["y"], opset_version=17, dynamic_axes=dyn)
            for lvl in ("0", "2", "3"):
                rxa = os.path.join(tmp, "%s_O%s.rxa" % (name, lvl))
                ir = os.path.join(tmp, "%s_O%s_ir" % (name, lvl))
                sh([os.path.join(BIN, "relaxc"), "build", onnx, "-o", rxa, "--opt-level", lvl,
                    "--dump-ir", ir])
                if lvl == "2":
                    text = open(glob.glob(os.path.join(ir, "*-schedule.txt"))[0]).read()
                    lanes, arms = text.count("_lanes = T.alloc_buffer"), text.count(" arm")
                    ok = lanes == 2 and "_pack = " not in text and (arms > 0) == where
                    failed += not ok
                    print("%s O2 rows schedule: %d lanes buffers, arm LETs %s: %s"
                          % (name, lanes, arms > 0, "ok" if ok else "FAIL"))
                for b, s in ((1, 37), (3, 16), (2, 64)):
                    ins, argv = inputs(b, s), []
                    for n, x in zip(names, ins):
                        f = os.path.join(tmp, "%s_%s.npy" % (name, n))
                        np.save(f, x.numpy())
                        argv += ["--in", n + "=" + f]
                    od = os.path.join(tmp, name + "_out")
                    sh([os.path.join(BIN, "relax-run"), rxa] + argv +
                       ["--out-dir", od, "--threads", "2"])
                    got = np.load(os.path.join(od, "out0.npy"))
                    with torch.no_grad():
                        want = model(*ins).numpy()
                    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6)
                    failed += not ok
                    print("%s O%s b=%d s=%d max|diff| %.2e %s" % (name, lvl, b, s,
                          float(np.abs(got - want).max()), "ok" if ok else "MISMATCH"))
    print("failed", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
