#!/usr/bin/python3
"""bench_cnn.py — convolutional networks as people write them in PyTorch (no
torchvision: the classes below), exported by torch.onnx.export, built by relaxc at each
--opt level and timed by relax-run beside ONNX Runtime (onnxruntime-node, CPU, on the
same .onnx file) and PyTorch eager, same inputs, same run, 2 threads each.

  resnet18   BasicBlock ResNet-18 (BN, ReLU, 3x3/2 maxpool, adaptive avgpool, fc), 224x224
  vgg        VGG-11's stack at half width (3x3 conv + ReLU, 2x2 maxpools, fc), 224x224
  mobilenet  MobileNetV2 (inverted residuals: 1x1 expand, depthwise 3x3, ReLU6, 1x1
             project, skip when the shape allows), width 1.0, 224x224
  small      a small CNN (three 3x3 conv + BN + ReLU + 2x2 maxpool, avgpool, fc), 64x64

Each (model, batch, opt level) prints one JSON line: relax_ms, ort_ms, torch_ms (medians
of --repeat calls after warm-ups; relax's and ORT's the median over --rounds interleaved
rounds),
relax/ORT and relax/torch (goal <= 1.0), min_ms (the fastest call of each: on a busy
machine the medians swing by whole time slices), and the max |diff| of relax's and ORT's
outputs against PyTorch's (checked: rtol 1e-3, atol 1e-3 * max |torch's|; a mismatch
fails). --base BUILD_DIR also builds and times that build's relaxc / relax-run in the
same rounds, interleaved with this one's (base_ms, relax/base). --quick: small inputs,
batch 2, one call each, outputs checked, no timing (ctest bench/cnn_quick; ORT only where
installed).

  bench_cnn.py [--quick] [--models resnet18,vgg,mobilenet,small] [--batch 1,8]
               [--opt 2,3] [--repeat R] [--rounds 3] [--threads 2] [--base BUILD_DIR]
               [--relaxc P] [--relax-run P] [--ort-dir DIR]
"""
import argparse
import json
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn

import rxbench


def parse_args():
    ap = rxbench.vs_ort_args(argparse.ArgumentParser(
        description="PyTorch-written CNNs vs ORT and PyTorch"), repeat=5)
    ap.add_argument("--models", default="resnet18,vgg,mobilenet,small")
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--opt", default="2,3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", default=None, help="a second build dir timed in the same run")
    return ap.parse_args()


def bn(c):
    """BatchNorm2d with non-trivial running statistics and affine parameters (eval)."""
    b = nn.BatchNorm2d(c)
    with torch.no_grad():
        b.running_mean.uniform_(-0.2, 0.2)
        b.running_var.uniform_(0.5, 1.5)
        b.weight.uniform_(0.5, 1.5)
        b.bias.uniform_(-0.2, 0.2)
    return b


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = bn(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = bn(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + idt)


class ResNet18(nn.Module):
    def __init__(self, classes=1000, width=64):
        super().__init__()
        w = width
        self.conv1 = nn.Conv2d(3, w, 7, 2, 3, bias=False)
        self.bn1 = bn(w)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], w
        for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            layers.append(nn.Sequential(BasicBlock(cin, cout, 1 if i == 0 else 2),
                                        BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * w, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class VGG(nn.Module):
    def __init__(self, cfg, classes=1000, hidden=1024):
        super().__init__()
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(cin * 49, hidden), nn.ReLU(True),
                                        nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hid = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hid, 1, bias=False), bn(hid), nn.ReLU6(inplace=True)]
        layers += [nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False), bn(hid),
                   nn.ReLU6(inplace=True), nn.Conv2d(hid, cout, 1, bias=False), bn(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, classes=1000, setting=None, last=1280):
        super().__init__()
        feats = [nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), bn(32), nn.ReLU6(True))]
        cin = 32
        for t, c, n, s in setting or self.SETTING:
            for i in range(n):
                feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(nn.Sequential(nn.Conv2d(cin, last, 1, bias=False), bn(last),
                                   nn.ReLU6(True)))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        def block(i, o):
            return [nn.Conv2d(i, o, 3, padding=1), bn(o), nn.ReLU(), nn.MaxPool2d(2)]
        self.net = nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes))

    def forward(self, x):
        return self.net(x)


VGG11_HALF = [32, "M", 64, "M", 128, 128, "M", 256, 256, "M", 256, 256, "M"]


def models(quick):
    """name: (constructor, image shape (C, H, W))."""
    if quick:
        return {"resnet18": (lambda: ResNet18(classes=10, width=8), (3, 48, 40)),
                "vgg": (lambda: VGG([8, "M", 16, 16, "M"], classes=10, hidden=32), (3, 28, 30)),
                "mobilenet": (lambda: MobileNetV2(classes=10, setting=[
                    (1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2)], last=64), (3, 40, 36)),
                "small": (lambda: SmallCNN(), (3, 32, 32))}
    return {"resnet18": (lambda: ResNet18(), (3, 224, 224)),
            "vgg": (lambda: VGG(VGG11_HALF), (3, 224, 224)),
            "mobilenet": (lambda: MobileNetV2(), (3, 224, 224)),
            "small": (lambda: SmallCNN(), (3, 64, 64))}


def close(got, want):
    return got.shape == want.shape and np.allclose(
        got, want, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(want).max())))


def main():
    a = parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    have_ort = rxbench.have_ort(a.ort_dir)
    builds = [("relax", a.relaxc, a.relax_run)]
    if a.base:
        builds.append(("base", os.path.join(a.base, "bin", "relaxc"),
                       os.path.join(a.base, "bin", "relax-run")))
    repeat = 1 if a.quick else a.repeat
    batches = [2] if a.quick else [int(b) for b in a.batch.split(",")]
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_cnn.") as tmp:
        for name, (make, chw) in models(a.quick).items():
            if name not in a.models.split(","):
                continue
            torch.manual_seed(1)
            model = make().eval()
            for nb in batches:
                x = torch.randn(nb, *chw)
                tag = "%s_b%d" % (name, nb)
                path = os.path.join(tmp, tag + ".onnx")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, (x,), path, input_names=["x"],
                                      output_names=["y"], opset_version=17)
                xin = os.path.join(tmp, tag + "_x.npy")
                np.save(xin, x.numpy())
                with torch.no_grad():
                    want = model(x).numpy()
                    torch_ms = None if a.quick else rxbench.median_ms(lambda: model(x), repeat)
                ort_err, ort_ok = None, True
                if have_ort:
                    og = rxbench.ort_run(a.ort_dir, path, {"x": xin}, ["y"], a.threads, 0, 1,
                                         os.path.join(tmp, tag + "_ort"))[1]
                    ort_err, ort_ok = float(np.abs(og - want).max()), close(og, want)
                for lv in [int(v) for v in a.opt.split(",")]:
                    res = {"bench": "cnn", "model": name, "batch": nb, "opt": lv,
                           "threads": a.threads, "repeat": repeat}
                    ok, errs, times = ort_ok, {}, {}
                    for who, relaxc, rrun in builds:
                        rxa = os.path.join(tmp, "%s_O%d_%s.rxa" % (tag, lv, who))
                        rxbench.call([relaxc, "build", path, "-o", rxa, "--opt-level", str(lv)])
                        od = os.path.join(tmp, "%s_O%d_%s_out" % (tag, lv, who))
                        rxbench.call([rrun, rxa, "--in", "x=" + xin, "--out-dir", od,
                            "--threads", str(a.threads)], env)
                        got = np.load(os.path.join(od, "out0.npy"))
                        errs[who] = float(np.abs(got - want).max())
                        ok &= close(got, want)
                        times[who] = []
                    ort_t, ort_ms, mins = [], None, {}
                    for _ in range(0 if a.quick else a.rounds):
                        if have_ort:  # ORT in each round too: the same load as relax's
                            o = rxbench.ort_run(a.ort_dir, path, {"x": xin}, ["y"], a.threads, 2,
                                                repeat, os.path.join(tmp, tag + "_ort"))[0]
                            ort_t.append(o["median_ms"])
                            mins["ort"] = min(mins.get("ort", 1e30), o["min_ms"])
                        for who, _, rrun in builds:  # interleaved: same load for each
                            rxa = os.path.join(tmp, "%s_O%d_%s.rxa" % (tag, lv, who))
                            r = json.loads(rxbench.call([rrun, rxa, "--in", "x=" + xin, "--bench",
                                               "--repeat", str(repeat), "--warmup", "2",
                                               "--threads", str(a.threads)], env)
                                           .strip().splitlines()[-1])
                            times[who].append(r["median_ms"])
                            mins[who] = min(mins.get(who, 1e30), r["min_ms"])
                    if not a.quick:
                        rm = float(np.median(times["relax"]))
                        res.update(relax_ms=round(rm, 3), torch_ms=round(torch_ms, 3),
                                   relax_over_torch=round(rm / torch_ms, 3))
                        if ort_t:
                            ort_ms = float(np.median(ort_t))
                            res.update(ort_ms=round(ort_ms, 3), relax_over_ort=round(rm / ort_ms, 3))
                        if a.base:
                            bm = float(np.median(times["base"]))
                            res.update(base_ms=round(bm, 3), relax_over_base=round(rm / bm, 3))
                            if ort_ms:
                                res["base_over_ort"] = round(bm / ort_ms, 3)
                    if mins:  # the fastest call of each: what a busy machine hides least
                        res["min_ms"] = {k: round(v, 3) for k, v in mins.items()}
                    if ort_err is not None:
                        errs["ort"] = ort_err
                    res["max_abs_err"] = errs
                    res["ok"] = bool(ok)
                    failed |= not ok
                    print(json.dumps(res), flush=True)
    print(json.dumps({"bench": "cnn", "machine": rxbench.load_note()[0],
                      "time": time.strftime("%H:%M:%S")}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
