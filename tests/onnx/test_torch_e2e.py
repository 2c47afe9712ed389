#!/usr/bin/python3
"""PyTorch -> ONNX -> relaxc -> relax-run equals PyTorch (docs/onnx.md, "From PyTorch").

Exports with torch.onnx.export (opset 14): an MLP, a small CNN, PyTorch's own layers
as users take them (nn.TransformerEncoderLayer post- and pre-norm, LSTM and
bidirectional GRU, Conv1d/GroupNorm/ConvTranspose1d/Upsample, self-attention split with
chunk) and a decoder block (pre-norm attention with a causal mask + GELU MLP) exported
with dynamic batch and sequence axes. Each model is built once with `relaxc build MODEL.onnx`; the decoder's
one artifact then runs for several (batch, seq) sizes. Outputs are compared with
PyTorch at rtol 1e-4, atol 1e-4. Then the same decoder is imported with
`--weights params`: relax-run binds the weights from the .safetensors file and must
give the same outputs.

Usage: test_torch_e2e.py BIN_DIR
"""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
BIN = sys.argv[1]
failures = 0


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                                 nn.Linear(64, 10))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.sigmoid(self.bn(self.c2(x)))
        return self.fc(torch.flatten(x, 1))


class Decoder(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.reshape(b, s, self.h, self.dh).transpose(1, 2)
        k = k.reshape(b, s, self.h, self.dh).transpose(1, 2)
        v = v.reshape(b, s, self.h, self.dh).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / (self.dh ** 0.5)
        mask = torch.triu(torch.ones(s, s), diagonal=1) * -1e9
        att = torch.softmax(att + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(y)
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


# ---- models as users write them: PyTorch's own layers and common idioms ----

class ChunkAttention(nn.Module):
    """self-attention the way tutorials write it: fused qkv split with chunk (exported as
    Shape/Gather/Add/Div/Mul feeding Slice bounds), view/transpose, softmax, residual."""
    def __init__(self, d=48, heads=4):
        super().__init__()
        self.h = heads
        self.qkv, self.o, self.ln = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.h, -1).transpose(1, 2) for t in (q, k, v))
        a = ((q @ k.transpose(-2, -1)) / (d // self.h) ** 0.5).softmax(-1)
        return x + self.o((a @ v).transpose(1, 2).reshape(b, s, d))


class Recurrent(nn.Module):
    """a 2-layer LSTM followed by a bidirectional GRU, last step through a Linear."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 16, num_layers=2, batch_first=True)
        self.gru = nn.GRU(16, 8, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.fc(y[:, -1])


class AudioUNet(nn.Module):
    """Conv1d + GroupNorm + SiLU down, ConvTranspose1d + nearest Upsample, skip concat."""
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv1d(4, 16, 5, stride=2, padding=2), nn.GroupNorm(4, 16),
                                  nn.SiLU())
        self.up = nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.mix = nn.Conv1d(12 + 16, 4, 1)

    def forward(self, x):
        h = self.down(x)
        return self.mix(torch.cat([self.up(h), x[:, :4], self.up2(h)], dim=1))


def zoo():
    """(name, model, example input, dynamic axes, more inputs to run the one artifact on)"""
    enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", batch_first=True)
    pre = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
    bs = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}
    return [
        ("TransformerEncoderLayer", enc, torch.randn(2, 6, 32), bs, [torch.randn(1, 9, 32)]),
        ("TransformerEncoderLayer norm_first", pre, torch.randn(2, 6, 32), bs,
         [torch.randn(3, 2, 32)]),
        ("chunk attention", ChunkAttention(), torch.randn(2, 5, 48), bs, [torch.randn(1, 11, 48)]),
        ("LSTM + bidirectional GRU", Recurrent(), torch.randn(3, 7, 12), None, []),
        ("Conv1d/GroupNorm/ConvTranspose1d/Upsample", AudioUNet(), torch.randn(2, 4, 32), None, []),
    ]


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), p.stderr))
    return p.stdout


def check(name, got, want):
    global failures
    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("nan")
    print("%s %s (max abs error %.2e)" % ("PASS" if ok else "FAIL", name, err))
    failures += 0 if ok else 1


def check_fail(name, why):
    global failures
    print("FAIL %s: %s" % (name, why[-600:]))
    failures += 1


def run(rxa, x, tmp, extra=()):
    xin = os.path.join(tmp, "x.npy")
    np.save(xin, x)
    od = os.path.join(tmp, "out")
    sh([os.path.join(BIN, "relax-run"), rxa, "--in", xin, "--out-dir", od] + list(extra))
    return np.load(os.path.join(od, "out0.npy"))


def export(model, x, path, dynamic=None):
    model.eval()
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=14, dynamic_axes=dynamic)


def main():
    with tempfile.TemporaryDirectory(prefix="torch-onnx-") as tmp:
        relaxc = os.path.join(BIN, "relaxc")
        cases = [("mlp", MLP(), torch.randn(8, 32), None),
                 ("cnn", CNN(), torch.randn(2, 3, 16, 16), None)]
        for name, model, x, dyn in cases:
            path = os.path.join(tmp, name + ".onnx")
            rxa = os.path.join(tmp, name + ".rxa")
            export(model, x, path, dyn)
            sh([relaxc, "build", path, "-o", rxa])
            with torch.no_grad():
                want = model(x).numpy()
            check(name, run(rxa, x.numpy(), tmp), want)
        for name, model, x, dyn, more in zoo():
            model.eval()
            path = os.path.join(tmp, "zoo.onnx")
            rxa = os.path.join(tmp, "zoo.rxa")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    export(model, x, path, dyn)
                sh([relaxc, "build", path, "-o", rxa])
            except RuntimeError as e:
                check_fail(name, str(e))
                continue
            for xi in [x] + more:
                with torch.no_grad():
                    want = model(xi).numpy()
                check("%s %s" % (name, tuple(xi.shape)), run(rxa, xi.numpy(), tmp), want)
        # the decoder: one artifact, several sizes
        dec = Decoder().eval()
        path = os.path.join(tmp, "decoder.onnx")
        export(dec, torch.randn(2, 8, 64), path, {"x": {0: "batch", 1: "seq"},
                                                  "y": {0: "batch", 1: "seq"}})
        text = sh([relaxc, "check", path])
        if '"batch"' in text or "R.Tensor((batch, seq, 64)" not in text:
            print("FAIL decoder signature is not symbolic in batch and seq:\n" + text[:400])
            global failures
            failures += 1
        rxa = os.path.join(tmp, "decoder.rxa")
        sh([relaxc, "build", path, "-o", rxa])
        sizes = [(1, 1), (2, 8), (3, 17), (1, 40)]
        for b, s in sizes:
            x = torch.randn(b, s, 64)
            with torch.no_grad():
                want = dec(x).numpy()
            check("decoder batch=%d seq=%d" % (b, s), run(rxa, x.numpy(), tmp), want)
        # weights as parameters, bound by name from the .safetensors file
        js = os.path.join(tmp, "decoder_p.json")
        sh([relaxc, "import", path, "-o", js, "--weights", "params"])
        st = os.path.join(tmp, "decoder_p.safetensors")
        rxa = os.path.join(tmp, "decoder_p.rxa")
        sh([relaxc, "build", js, "-o", rxa])
        x = torch.randn(2, 5, 64)
        with torch.no_grad():
            want = dec(x).numpy()
        check("decoder --weights params", run(rxa, x.numpy(), tmp, ["--weights", st]), want)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
