"""zoo_models6b.py — the sixth round's convolutional and generative models (tests/onnx/
zoo_models6.py has the cases and the docstring): re-parameterizable branches, fused
MBConv, modulated convolutions with per-sample weights, super-resolution trunks, gated
dilated causal convolutions, attention gates, ConvLSTM and YOLOX's grid decode, each
following its source's forward.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import LayerNormCF


def conv_bn(i, o, k, s=1, g=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o))


# ---------------- re-parameterizable branches (training-time form) ----------------


class RepVGGBlock(nn.Module):
    """RepVGG (DingXiaoH/RepVGG RepVGGBlock, not deployed): 3x3 conv + BN, 1x1 conv + BN
    and an identity BN where shapes allow, summed, ReLU"""
    def __init__(self, i, o, s=1):
        super().__init__()
        self.dense, self.one = conv_bn(i, o, 3, s), conv_bn(i, o, 1, s)
        self.identity = nn.BatchNorm2d(o) if i == o and s == 1 else None

    def forward(self, x):
        y = self.dense(x) + self.one(x)
        return F.relu(y + self.identity(x) if self.identity is not None else y)


class RepVGG(nn.Module):
    def __init__(self, w=(16, 32, 64), depth=(1, 2, 2), classes=10):
        super().__init__()
        layers, c = [RepVGGBlock(3, w[0], 2)], w[0]
        for o, d in zip(w, depth):
            for k in range(d):
                layers.append(RepVGGBlock(c, o, 2 if k == 0 else 1))
                c = o
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.body(x), 1).flatten(1))


class MobileOneBlock(nn.Module):
    """MobileOne (apple/ml-mobileone MobileOneBlock, training form): k over-parameterized
    conv + BN branches, a 1x1 scale branch (for k > 1) and an identity BN, summed, ReLU"""
    def __init__(self, i, o, k, s=1, g=1, branches=3):
        super().__init__()
        self.skip = nn.BatchNorm2d(i) if i == o and s == 1 else None
        self.scale = conv_bn(i, o, 1, s, g) if k > 1 else None
        self.convs = nn.ModuleList(conv_bn(i, o, k, s, g) for _ in range(branches))

    def forward(self, x):
        out = 0 if self.skip is None else self.skip(x)
        if self.scale is not None:
            out = out + self.scale(x)
        for c in self.convs:
            out = out + c(x)
        return F.relu(out)


class MobileOne(nn.Module):
    def __init__(self, w=(16, 32, 64), classes=10, branches=3):
        super().__init__()
        layers, c = [MobileOneBlock(3, w[0], 3, 2, branches=1)], w[0]
        for o in w:
            for s in (2, 1):  # depthwise k x k, then pointwise
                layers += [MobileOneBlock(c, c, 3, s, c, branches), MobileOneBlock(c, o, 1, 1, 1, branches)]
                c = o
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.body(x), 1).flatten(1))


class FusedMBConv(nn.Module):
    """EfficientNetV2 (torchvision FusedMBConv): a 3x3 expansion conv (strided), BN, SiLU,
    a 1x1 projection and BN; residual where shapes allow"""
    def __init__(self, i, o, s, e):
        super().__init__()
        self.res = i == o and s == 1
        self.block = nn.Sequential(nn.Conv2d(i, i * e, 3, s, 1, bias=False), nn.BatchNorm2d(i * e), nn.SiLU(),
                                   nn.Conv2d(i * e, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


class MBConvSE(nn.Module):
    """EfficientNetV2's MBConv: 1x1 expand, depthwise 3x3, squeeze-excitation with SiLU
    on a quarter of the input channels, 1x1 project"""
    def __init__(self, i, o, s, e):
        super().__init__()
        m = i * e
        self.res = i == o and s == 1
        self.expand = nn.Sequential(nn.Conv2d(i, m, 1, bias=False), nn.BatchNorm2d(m), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(m, m, 3, s, 1, groups=m, bias=False), nn.BatchNorm2d(m), nn.SiLU())
        self.se1, self.se2 = nn.Conv2d(m, max(1, i // 4), 1), nn.Conv2d(max(1, i // 4), m, 1)
        self.project = nn.Sequential(nn.Conv2d(m, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = self.dw(self.expand(x))
        y = y * torch.sigmoid(self.se2(F.silu(self.se1(y.mean((2, 3), keepdim=True)))))
        y = self.project(y)
        return x + y if self.res else y


class EfficientNetV2(nn.Module):
    def __init__(self, c=(16, 24, 32, 48), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c[0], 3, 2, 1, bias=False), nn.BatchNorm2d(c[0]), nn.SiLU())
        self.body = nn.Sequential(FusedMBConv(c[0], c[0], 1, 1), FusedMBConv(c[0], c[1], 2, 4),
                                  FusedMBConv(c[1], c[1], 1, 4), FusedMBConv(c[1], c[2], 2, 4),
                                  MBConvSE(c[2], c[3], 2, 4), MBConvSE(c[3], c[3], 1, 4))
        self.head = nn.Sequential(nn.Conv2d(c[3], 4 * c[3], 1, bias=False), nn.BatchNorm2d(4 * c[3]), nn.SiLU())
        self.fc = nn.Linear(4 * c[3], classes)

    def forward(self, x):
        return self.fc(self.head(self.body(self.stem(x))).mean((2, 3)))


# ---------------- generative: StyleGAN2, Real-ESRGAN, NAFNet ----------------


class ModConv(nn.Module):
    """StyleGAN2's modulated conv (rosinality/stylegan2-pytorch ModulatedConv2d, fused):
    the style scales the weight per sample, demodulation by rsqrt of its squared sum, the
    batch folded into the groups of one conv: a convolution with computed weights"""
    def __init__(self, i, o, k, wdim, demod=True):
        super().__init__()
        self.i, self.o, self.k, self.demod = i, o, k, demod
        self.scale = 1 / math.sqrt(i * k * k)
        self.weight = nn.Parameter(torch.randn(1, o, i, k, k))
        self.affine = nn.Linear(wdim, i)
        nn.init.constant_(self.affine.bias, 1.0)

    def forward(self, x, w):
        b, _, h, wd = x.shape
        style = self.affine(w).view(b, 1, self.i, 1, 1)
        weight = self.scale * self.weight * style
        if self.demod:
            weight = weight * torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8).view(b, self.o, 1, 1, 1)
        weight = weight.view(-1, self.i, self.k, self.k)  # b * o: the exporter needs k known
        out = F.conv2d(x.view(1, b * self.i, h, wd), weight, padding=self.k // 2, groups=b)
        return out.view(b, self.o, h, wd)


class StyleLayer(nn.Module):
    def __init__(self, i, o, wdim):
        super().__init__()
        self.conv = ModConv(i, o, 3, wdim)
        self.noise_strength = nn.Parameter(torch.full((1,), 0.1))
        self.bias = nn.Parameter(torch.randn(1, o, 1, 1) * 0.1)

    def forward(self, x, w, noise):
        return F.leaky_relu(self.conv(x, w) + self.noise_strength * noise + self.bias, 0.2) * math.sqrt(2)


class StyleGAN2(nn.Module):
    """a synthesis fragment: two styled convs, 2x upsampling (bilinear), two more, to RGB
    (modulated 1x1 without demodulation) plus the upsampled skip; the mapping network is
    8 Linear + leaky ReLU layers over a normalized z"""
    def __init__(self, c=32, wdim=32, zdim=32):
        super().__init__()
        layers = []
        for k in range(4):
            layers += [nn.Linear(zdim if k == 0 else wdim, wdim), nn.LeakyReLU(0.2)]
        self.mapping = nn.Sequential(*layers)
        self.l1, self.l2 = StyleLayer(c, c, wdim), StyleLayer(c, c, wdim)
        self.l3, self.l4 = StyleLayer(c, c, wdim), StyleLayer(c, c, wdim)
        self.rgb1, self.rgb2 = ModConv(c, 3, 1, wdim, demod=False), ModConv(c, 3, 1, wdim, demod=False)

    def forward(self, x, z, noise):
        w = self.mapping(z * torch.rsqrt(z.pow(2).mean(1, keepdim=True) + 1e-8))
        x = self.l2(self.l1(x, w, noise), w, noise)
        skip = self.rgb1(x, w)
        x = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        n2 = F.interpolate(noise, scale_factor=2.0, mode="nearest")
        x = self.l4(self.l3(x, w, n2), w, n2)
        return self.rgb2(x, w) + F.interpolate(skip, scale_factor=2.0, mode="bilinear", align_corners=False)


class ModConvUnfused(nn.Module):
    """the same modulation written without grouped weights (NVlabs stylegan2-ada
    modulated_conv2d with fused_modconv=False): x * style, one shared conv, * dcoefs"""
    def __init__(self, i, o, wdim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(o, i, 3, 3))
        self.affine = nn.Linear(wdim, i)
        nn.init.constant_(self.affine.bias, 1.0)

    def forward(self, x, w):
        styles = self.affine(w)
        wt = self.weight[None] * styles[:, None, :, None, None]
        dcoefs = (wt.square().sum(dim=[2, 3, 4]) + 1e-8).rsqrt()
        x = F.conv2d(x * styles[:, :, None, None], self.weight, padding=1)
        return x * dcoefs[:, :, None, None]


class StyleUnfused(nn.Module):
    def __init__(self, c=32, wdim=32):
        super().__init__()
        self.convs = nn.ModuleList(ModConvUnfused(c, c, wdim) for _ in range(3))

    def forward(self, x, w):
        for c in self.convs:
            x = F.leaky_relu(c(x, w), 0.2) * math.sqrt(2)
        return x


class ResidualDenseBlock(nn.Module):
    """ESRGAN (xinntao/Real-ESRGAN, basicsr RRDBNet): five convs over the concatenation of
    everything before, leaky ReLU 0.2, the residual scaled by 0.2"""
    def __init__(self, f=32, g=16):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(f + k * g, g if k < 4 else f, 3, 1, 1) for k in range(5))

    def forward(self, x):
        feats = [x]
        for k, c in enumerate(self.convs):
            y = c(torch.cat(feats, 1))
            if k < 4:
                feats.append(F.leaky_relu(y, 0.2))
        return y * 0.2 + x


class RRDB(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.rdbs = nn.Sequential(*[ResidualDenseBlock(f, g) for _ in range(3)])

    def forward(self, x):
        return self.rdbs(x) * 0.2 + x


class RealESRGAN(nn.Module):
    """RRDBNet at scale 2: pixel_unshuffle(2) in, RRDB trunk, two nearest 2x upsamplings
    with convs, out at twice the input size"""
    def __init__(self, f=32, g=16, blocks=2):
        super().__init__()
        self.conv_first = nn.Conv2d(12, f, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(f, g) for _ in range(blocks)])
        self.conv_body, self.conv_up1, self.conv_up2 = (nn.Conv2d(f, f, 3, 1, 1) for _ in range(3))
        self.conv_hr, self.conv_last = nn.Conv2d(f, f, 3, 1, 1), nn.Conv2d(f, 3, 3, 1, 1)

    def forward(self, x):
        feat = self.conv_first(F.pixel_unshuffle(x, 2))
        feat = feat + self.conv_body(self.body(feat))
        feat = F.leaky_relu(self.conv_up1(F.interpolate(feat, scale_factor=2, mode="nearest")), 0.2)
        feat = F.leaky_relu(self.conv_up2(F.interpolate(feat, scale_factor=2, mode="nearest")), 0.2)
        return self.conv_last(F.leaky_relu(self.conv_hr(feat), 0.2))


class NAFBlock(nn.Module):
    """NAFNet (megvii-research/NAFNet NAFBlock): SimpleGate (chunk and multiply), the
    simplified channel attention, learned residual scales beta and gamma"""
    def __init__(self, c):
        super().__init__()
        self.norm1, self.norm2 = LayerNormCF(c), LayerNormCF(c)  # NAFNet's LayerNorm2d, the same
        self.conv1, self.conv2 = nn.Conv2d(c, 2 * c, 1), nn.Conv2d(2 * c, 2 * c, 3, 1, 1, groups=2 * c)
        self.conv3, self.sca = nn.Conv2d(c, c, 1), nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c, 1))
        self.conv4, self.conv5 = nn.Conv2d(c, 2 * c, 1), nn.Conv2d(c, c, 1)
        self.beta, self.gamma = nn.Parameter(torch.randn(1, c, 1, 1)), nn.Parameter(torch.randn(1, c, 1, 1))

    def forward(self, inp):
        x1, x2 = self.conv2(self.conv1(self.norm1(inp))).chunk(2, dim=1)
        x = x1 * x2
        y = inp + self.conv3(x * self.sca(x)) * self.beta
        x1, x2 = self.conv4(self.norm2(y)).chunk(2, dim=1)
        return y + self.conv5(x1 * x2) * self.gamma


class NAFNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.intro, self.ending = nn.Conv2d(3, c, 3, 1, 1), nn.Conv2d(c, 3, 3, 1, 1)
        self.enc, self.down = NAFBlock(c), nn.Conv2d(c, 2 * c, 2, 2)
        self.middle = NAFBlock(2 * c)
        self.up = nn.Sequential(nn.Conv2d(2 * c, 4 * c, 1, bias=False), nn.PixelShuffle(2))
        self.dec = NAFBlock(c)

    def forward(self, inp):
        e = self.enc(self.intro(inp))
        x = self.dec(self.up(self.middle(self.down(e))) + e)
        return self.ending(x) + inp


# ---------------- attention gates, WaveNet, ConvLSTM, YOLOX ----------------


class CBAM(nn.Module):
    """CBAM (Jongchan/attention-module; its avg_pool2d(x, (x.size(2), x.size(3))) does not
    export at dynamic sizes: adaptive pools to 1 as other ports write it): channel gate
    from the average- and max-pooled maps through one MLP, spatial gate from the channel max and mean, 7x7 conv, BN"""
    def __init__(self, c, r=4):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(c, c // r), nn.ReLU(), nn.Linear(c // r, c))
        self.spatial = conv_bn(2, 1, 7)

    def forward(self, x):
        avg = self.mlp(F.adaptive_avg_pool2d(x, 1).flatten(1))
        mx = self.mlp(F.adaptive_max_pool2d(x, 1).flatten(1))
        x = x * torch.sigmoid(avg + mx)[:, :, None, None]
        pooled = torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)
        return x * torch.sigmoid(self.spatial(pooled))


class CBAMNet(nn.Module):
    """ResNet basic blocks with CBAM before the residual add"""
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.ModuleList(nn.Sequential(conv_bn(c, c, 3), nn.ReLU(), conv_bn(c, c, 3), CBAM(c))
                                    for _ in range(2))
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = F.relu(x + b(x))
        return self.fc(x.mean((2, 3)))


class SKConv(nn.Module):
    """SKNet's selective kernel (implus/SKNet SKConv): a 3x3 and a dilated 3x3 grouped
    branch, fused by a softmax over the branches of a squeezed descriptor"""
    def __init__(self, c, groups=4, r=4):
        super().__init__()
        self.convs = nn.ModuleList(nn.Sequential(nn.Conv2d(c, c, 3, 1, 1 + k, 1 + k, groups=groups, bias=False),
                                                 nn.BatchNorm2d(c), nn.ReLU()) for k in range(2))
        self.fc = nn.Sequential(nn.Conv2d(c, c // r, 1, bias=False), nn.BatchNorm2d(c // r), nn.ReLU())
        self.fcs = nn.ModuleList(nn.Conv2d(c // r, c, 1) for _ in range(2))

    def forward(self, x):
        feats = torch.stack([conv(x) for conv in self.convs], dim=1)
        z = self.fc(feats.sum(1).mean((2, 3), keepdim=True))
        attn = torch.softmax(torch.stack([fc(z) for fc in self.fcs], dim=1), dim=1)
        return (feats * attn).sum(1)


class SKNet(nn.Module):
    def __init__(self, c=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.sk1, self.sk2 = SKConv(c), SKConv(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.sk2(self.sk1(x))
        return self.fc(x.mean((2, 3)))


class WaveNet(nn.Module):
    """WaveNet (r9y9/wavenet_vocoder style): mu-law ids embedded, dilated causal convs by
    left padding, tanh * sigmoid gates with a local conditioning 1x1 conv, residual and
    skip 1x1 convs, relu / 1x1 / relu / 1x1 / log_softmax out"""
    def __init__(self, q=64, c=32, skip=32, cond=8, dilations=(1, 2, 4, 8, 1, 2, 4, 8)):
        super().__init__()
        self.dil = dilations
        self.embed = nn.Embedding(q, c)
        self.filt = nn.ModuleList(nn.Conv1d(c, 2 * c, 2, dilation=d) for d in dilations)
        self.cond = nn.ModuleList(nn.Conv1d(cond, 2 * c, 1, bias=False) for _ in dilations)
        self.res = nn.ModuleList(nn.Conv1d(c, c, 1) for _ in dilations)
        self.skip = nn.ModuleList(nn.Conv1d(c, skip, 1) for _ in dilations)
        self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, q, 1))

    def forward(self, ids, h):
        x = self.embed(ids).transpose(1, 2)
        skips = 0
        for d, filt, cond, res, skip in zip(self.dil, self.filt, self.cond, self.res, self.skip):
            y = filt(F.pad(x, (d, 0))) + cond(h)
            a, b = y.split(y.size(1) // 2, dim=1)
            y = torch.tanh(a) * torch.sigmoid(b)
            skips = skips + skip(y)
            x = (x + res(y)) * math.sqrt(0.5)
        return F.log_softmax(self.out(skips), dim=1)


class ConvLSTM(nn.Module):
    """ConvLSTM (ndrplz/ConvLSTM_pytorch ConvLSTMCell) unrolled over the time steps of a
    (b, t, c, h, w) clip: one conv over cat(x, h) gives the four gates"""
    def __init__(self, i=3, hid=16, k=3):
        super().__init__()
        self.hid = hid
        self.conv = nn.Conv2d(i + hid, 4 * hid, k, padding=k // 2)

    def forward(self, x):
        b, t, _, hh, ww = x.shape
        h = torch.zeros(b, self.hid, hh, ww)
        c = torch.zeros(b, self.hid, hh, ww)
        outs = []
        for k in range(t):
            cc_i, cc_f, cc_o, cc_g = torch.split(self.conv(torch.cat([x[:, k], h], dim=1)), self.hid, dim=1)
            c = torch.sigmoid(cc_f) * c + torch.sigmoid(cc_i) * torch.tanh(cc_g)
            h = torch.sigmoid(cc_o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1), c


class YOLOXDecode(nn.Module):
    """YOLOX's head decode (Megvii-BaseDetection/YOLOX YOLOXHead.decode_outputs): three
    strided levels, each (b, 5 + classes, h, w) flattened, grids by meshgrid of aranges,
    xy = (p + grid) * stride, wh = exp(p) * stride, objectness and classes by sigmoid"""
    def __init__(self, c=16, classes=6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.SiLU(), nn.Conv2d(c, c, 3, 2, 1), nn.SiLU())
        self.downs = nn.ModuleList([nn.Conv2d(c, c, 3, 2, 1), nn.Conv2d(c, c, 3, 2, 1), nn.Conv2d(c, c, 3, 2, 1)])
        self.preds = nn.ModuleList(nn.Conv2d(c, 5 + classes, 1) for _ in range(3))

    def forward(self, x):
        f = self.stem(x)
        outs, grids, strides = [], [], []
        for k, (down, pred) in enumerate(zip(self.downs, self.preds)):
            f = F.silu(down(f))
            o = pred(f)
            b, n, h, w = o.shape
            yv, xv = torch.meshgrid([torch.arange(h), torch.arange(w)], indexing="ij")
            grids.append(torch.stack((xv, yv), 2).view(1, -1, 2))
            strides.append(torch.full((1, h * w, 1), 8 << k))
            outs.append(o.flatten(start_dim=2))
        o = torch.cat(outs, dim=2).permute(0, 2, 1)
        grid, stride = torch.cat(grids, 1).float(), torch.cat(strides, 1).float()
        return torch.cat([(o[..., :2] + grid) * stride, torch.exp(o[..., 2:4]) * stride, o[..., 4:].sigmoid()], -1)


class StdConvGN(nn.Module):
    """BiT (google-research/big_transfer StdConv2d + pre-activation bottleneck): weights
    standardized by var_mean at every call, GroupNorm(8) + ReLU before each conv"""
    def __init__(self, c=32, mid=16):
        super().__init__()
        self.gn1, self.gn2, self.gn3 = nn.GroupNorm(8, c), nn.GroupNorm(8, mid), nn.GroupNorm(8, mid)
        self.w1 = nn.Parameter(torch.randn(mid, c, 1, 1))
        self.w2 = nn.Parameter(torch.randn(mid, mid, 3, 3))
        self.w3 = nn.Parameter(torch.randn(c, mid, 1, 1))
        self.root = nn.Conv2d(3, c, 3, 2, 1)

    @staticmethod
    def std(w):
        v, m = torch.var_mean(w, dim=[1, 2, 3], keepdim=True, unbiased=False)
        return (w - m) / torch.sqrt(v + 1e-10)

    def forward(self, x):
        x = self.root(x)
        y = F.conv2d(F.relu(self.gn1(x)), self.std(self.w1))
        y = F.conv2d(F.relu(self.gn2(y)), self.std(self.w2), padding=1)
        y = F.conv2d(F.relu(self.gn3(y)), self.std(self.w3))
        return x + y


class UNet3D(nn.Module):
    """a 3-d U-Net as medical imaging writes it (nnU-Net / MONAI style): Conv3d +
    InstanceNorm3d + LeakyReLU, max_pool3d, the decoder's trilinear 2x upsampling (and one
    with align_corners), concat with the skip, a nearest resize to the skip's size as a
    second output (a deep-supervision map)"""
    def __init__(self, c=8, classes=2):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv3d(i, o, 3, padding=1), nn.InstanceNorm3d(o, affine=True),
                                 nn.LeakyReLU(0.01))
        self.e1, self.e2, self.e3 = block(1, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.d2, self.d1 = block(6 * c, 2 * c), block(3 * c, c)
        self.out, self.aux = nn.Conv3d(c, classes, 1), nn.Conv3d(4 * c, classes, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool3d(a, 2))
        m = self.e3(F.max_pool3d(b, 2))
        u = F.interpolate(m, scale_factor=2, mode="trilinear", align_corners=False)
        b = self.d2(torch.cat([b, u], 1))
        u = F.interpolate(b, scale_factor=2, mode="trilinear", align_corners=True)
        y = self.out(self.d1(torch.cat([a, u], 1)))
        return y, F.interpolate(self.aux(m), size=x.shape[2:], mode="nearest")


class Conv3dForms(nn.Module):
    """Conv3d as video and volume models write it: stride 2 in T with asymmetric kernel
    padding, a dilated 2-tap T kernel without bias, a grouped 3x3x3 (stays nn.conv3d)"""
    def __init__(self):
        super().__init__()
        self.a = nn.Conv3d(2, 6, 3, stride=(2, 1, 2), padding=(1, 0, 1))
        self.b = nn.Conv3d(6, 4, (2, 3, 3), dilation=(2, 1, 1), padding=(2, 1, 1), bias=False)
        self.g = nn.Conv3d(4, 4, 3, padding=1, groups=2)

    def forward(self, x):
        a = self.a(x)
        b = self.b(F.relu(a))
        return a, self.g(b)
