#!/usr/bin/python3
"""Torchvision-style CNN blocks, written in plain torch.nn (torchvision need not be
installed), exported by torch.onnx.export (opset 17), built with `relaxc build` and run
with relax-run: outputs equal PyTorch's, and the lowering is the library's (docs/onnx.md,
"Convolutional networks").

Models (eval mode; BatchNorm with non-trivial running statistics, which the exporter
folds into the convolutions' weights and biases):
  resnet_stages  resnet18's stem (7x7 stride 2, BN, ReLU, 3x3 stride-2 max pool) and two
                 stages of BasicBlocks, the second opening with a stride-2 block whose
                 shortcut is a 1x1 stride-2 conv + BN (downsample); adaptive avg pool,
                 flatten, Linear; exported with a dynamic batch axis and run at batch 2
                 and 3 from one artifact;
  mobilenet_v2   mobilenet_v2's InvertedResidual (expand 1x1, depthwise 3x3 stride 1 and
                 2, project 1x1, residual when shapes allow) with nn.ReLU6, and one with
                 F.relu6 (exported as Relu then Clip);
  se             squeeze-excitation twice: global avg pool + 1x1 convs + sigmoid scale,
                 and mean + Linear + sigmoid + view;
  inception      four branches concatenated (1x1; 1x1 -> 3x3; 1x1 -> 5x5; 3x3 stride-1
                 max pool -> 1x1), AvgPool2d(2) and AvgPool2d(3, 2, 1,
                 count_include_pad=False), Flatten + Linear.
Checked for each: relax-run equals PyTorch (rtol 1e-4, atol 1e-4); after library
lowering (`relaxc print MODEL.onnx --after library_lower`) every Conv of the ONNX graph
is one blas.conv2d call (but the SE block's two 1x1 convs on a 1x1 map, which the cost
rule leaves to the generated loops) and every MaxPool / AveragePool / GlobalAveragePool
(AdaptiveAvgPool2d((1, 1))) one rt.pool2d (none left as nn.conv2d / nn.*_pool2d); in resnet_stages and mobilenet_v2 no relu, maximum or minimum
is left (relu, ReLU6 and Relu+Clip are the calls' epilogues) and every residual add is
folded (no add left but the Linear head's bias, which is the epilogue of its
blas.matmul_view call where the head goes to the library: the dynamic batch's).

Usage: test_torch_cnn.py BIN_DIR
"""
import os, subprocess, sys, tempfile, warnings  # noqa: E401

import numpy as np
import onnx
import torch
from torch import nn
from torch.nn import functional as F

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
failures = 0


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock"""
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class ResNetStages(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 16, 1))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InvertedResidual(nn.Module):
    """torchvision.models.mobilenetv2.InvertedResidual (functional=True: F.relu6)"""
    def __init__(self, inp, oup, stride, t, functional=False):
        super().__init__()
        hid = inp * t
        self.res = stride == 1 and inp == oup
        self.functional = functional
        self.expand = None
        if t != 1:
            self.expand = nn.Sequential(nn.Conv2d(inp, hid, 1, bias=False), nn.BatchNorm2d(hid))
        self.dw = nn.Sequential(nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False),
                                nn.BatchNorm2d(hid))
        self.project = nn.Sequential(nn.Conv2d(hid, oup, 1, bias=False), nn.BatchNorm2d(oup))

    def act(self, x):
        return F.relu6(x) if self.functional else nn.ReLU6(inplace=True)(x)

    def forward(self, x):
        y = x if self.expand is None else self.act(self.expand(x))
        y = self.project(self.act(self.dw(y)))
        return x + y if self.res else y


class MobileNetV2Part(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(inplace=True),
            InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 6),
            InvertedResidual(24, 24, 1, 6), InvertedResidual(24, 24, 1, 4, functional=True))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(24, 10))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4, linear=False):
        super().__init__()
        self.linear = linear
        if linear:
            self.fc1, self.fc2 = nn.Linear(c, c // r), nn.Linear(c // r, c)
        else:
            self.fc1, self.fc2 = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        if self.linear:
            b, c = x.shape[0], x.shape[1]
            s = torch.sigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3)))))).view(b, c, 1, 1)
        else:
            s = torch.sigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(x, 1)))))
        return x * s


class SENet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 32, 3, 1, 1)
        self.se1, self.se2 = SqueezeExcite(32), SqueezeExcite(32, linear=True)

    def forward(self, x):
        return self.se2(self.se1(F.relu(self.conv(x))))


class Inception(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = nn.Conv2d(16, 8, 1)
        self.b2 = nn.Sequential(nn.Conv2d(16, 8, 1), nn.ReLU(), nn.Conv2d(8, 12, 3, padding=1))
        self.b3 = nn.Sequential(nn.Conv2d(16, 4, 1), nn.ReLU(), nn.Conv2d(4, 6, 5, padding=2))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(16, 6, 1))
        self.ap = nn.AvgPool2d(2)
        self.ap2 = nn.AvgPool2d(3, 2, 1, count_include_pad=False)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        y = F.relu(torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1))
        return self.fc(torch.flatten(self.ap2(self.ap(y)), 1))


# name, model, input, more batch sizes (dynamic batch axis), epilogues all folded, convs
# the cost rule leaves generated (the SE 1x1 convs on a 1x1 map: 2 * 32 * 8 multiply-adds),
# input scale (mobilenet's: enough that ReLU6's upper bound clips)
MODELS = [
    ("resnet_stages", ResNetStages, (2, 3, 64, 64), [3], True, 0, 1.0),
    ("mobilenet_v2", MobileNetV2Part, (2, 3, 32, 32), [], True, 0, 16.0),
    ("se", SENet, (2, 8, 12, 12), [], False, 2, 1.0),
    ("inception", Inception, (2, 16, 32, 32), [], False, 0, 1.0),
]


# GlobalAveragePool nodes that become rt.pool2d: resnet_stages' (its dynamic batch counts
# as large); the others' (static batch 2, maps of 2x2 and 12x12) are under the cost
# rule's 2^15 taps and stay generated
GAP_LOWERED = {"resnet_stages": 1}


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return p.stdout


def check(ok, what):
    global failures
    print("%s %s" % ("PASS" if ok else "FAIL", what))
    failures += 0 if ok else 1


def lowering(name, path, folded, small):
    """The library lowering of the model at path, against the ONNX graph's node counts."""
    ops = [n.op_type for n in onnx.load(path).graph.node]
    text = sh([os.path.join(BIN, "relaxc"), "print", path, "--after", "library_lower"])
    convs = ops.count("Conv") - small
    pools = ops.count("MaxPool") + ops.count("AveragePool") + GAP_LOWERED.get(name, 0)
    check(text.count('"blas.conv2d"') == convs and text.count("R.nn.conv2d(") == small,
          "%s: %d Conv nodes are one blas.conv2d each (%d), %d small ones generated"
          % (name, convs, text.count('"blas.conv2d"'), small))
    check(text.count('"rt.pool2d"') == pools and "nn.max_pool2d" not in text and "nn.avg_pool2d" not in text
          and (name not in GAP_LOWERED or "nn.adaptive_avg_pool2d" not in text),
          "%s: each of the %d MaxPool/AveragePool/GlobalAveragePool nodes is one rt.pool2d (%d)"
          % (name, pools, text.count('"rt.pool2d"')))
    if folded:
        left = [op for op in ("R.nn.relu(", "R.maximum(", "R.minimum(") if op in text]
        adds, head_lib = text.count("R.add("), '"blas.matmul' in text
        check(not left and adds == (0 if head_lib else 1),
              "%s: relu, ReLU6 and the residual adds are conv epilogues, the head's bias its "
              "library call's or one add (left: %s, %d add, head in the library: %s)"
              % (name, left, adds, head_lib))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="torch-cnn-") as tmp:
        for name, cls, shape, more, folded, small, scale in MODELS:
            model = cls().eval()
            for mod in model.modules():
                if isinstance(mod, nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 1.5)
                    mod.weight.data.uniform_(0.5, 1.5)
                    mod.bias.data.uniform_(-0.5, 0.5)
            x = torch.randn(*shape) * scale
            path, rxa = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".rxa")
            dyn = {"x": {0: "batch"}, "y": {0: "batch"}} if more else None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                                      opset_version=17, dynamic_axes=dyn)
                sh([os.path.join(BIN, "relaxc"), "build", path, "-o", rxa])
                lowering(name, path, folded, small)
            except RuntimeError as e:
                check(False, "%s: %s" % (name, e))
                continue
            for n in [shape[0]] + more:
                xi = torch.randn(n, *shape[1:]) * scale
                with torch.no_grad():
                    want = model(xi).numpy()
                xin, od = os.path.join(tmp, "x.npy"), os.path.join(tmp, "out_%s_%d" % (name, n))
                np.save(xin, xi.numpy())
                try:
                    sh([os.path.join(BIN, "relax-run"), rxa, "--in", "x=" + xin, "--out-dir", od])
                except RuntimeError as e:
                    check(False, "%s batch %d: %s" % (name, n, e))
                    continue
                got = np.load(os.path.join(od, "out0.npy"))
                ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
                err = float(np.abs(got - want).max()) if got.shape == want.shape else float("nan")
                check(ok, "%s batch %d equals PyTorch (max abs error %.2e)" % (name, n, err))
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
