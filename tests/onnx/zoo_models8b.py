"""zoo_models8b.py — the eighth round's convolutional and audio models
(tests/onnx/zoo_models8.py has the cases and the docstring): SE-ResNeXt (32 groups),
Res2Net (hierarchical split 3x3s), ConvMixer (9x9 depthwise, GELU, BatchNorm after
each), RepViT (a token mixer of depthwise 3x3 + 1x1 + identity, SE), MobileNetV4's
universal inverted bottleneck, HorNet's recursive gated convolution (gnConv), FocalNet's
focal modulation, EfficientFormer (pool mixer 4-d blocks then a 3-d attention block),
SegNet (MaxPool2d return_indices, the unpool by scatter), a DCGAN generator
(ConvTranspose2d from 1x1), LinkNet (ConvTranspose2d with output_padding in the
decoder), BiSeNet's attention refinement module, an FPN with a RetinaNet head, SSD's
prior-box decode, YOLOv7's ELAN and MP blocks, Demucs (strided Conv1d + GLU encoder,
BiLSTM, ConvTranspose1d decoder with skips), DCCRN's complex convolution and an
EnCodec residual vector quantizer (nearest codes by argmin of distances).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def cbr(i, o, k=3, s=1, g=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o),
                         act() if act else nn.Identity())


class SE(nn.Module):
    def __init__(self, c, r=4, gate=nn.Sigmoid):
        super().__init__()
        self.fc1, self.fc2, self.gate = nn.Conv2d(c, max(c // r, 8), 1), nn.Conv2d(max(c // r, 8), c, 1), gate()

    def forward(self, x):
        return x * self.gate(self.fc2(F.relu(self.fc1(x.mean((2, 3), keepdim=True)))))


class SEResNeXtBlock(nn.Module):
    def __init__(self, i, width, o, s, groups):
        super().__init__()
        self.body = nn.Sequential(cbr(i, width, 1), cbr(width, width, 3, s, groups), cbr(width, o, 1, act=None))
        self.se = SE(o, 16)
        self.short = cbr(i, o, 1, s, act=None) if s != 1 or i != o else nn.Identity()

    def forward(self, x):
        return F.relu(self.se(self.body(x)) + self.short(x))


class SEResNeXt(nn.Module):
    """SE-ResNeXt-50 (32x4d) cut to its stem and two stages"""
    def __init__(self, c=32, groups=8, base=4, classes=10):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c, 7, 2), nn.MaxPool2d(3, 2, 1))
        w1, w2 = groups * base, groups * base * 2
        self.s1 = nn.Sequential(SEResNeXtBlock(c, w1, 4 * c, 1, groups), SEResNeXtBlock(4 * c, w1, 4 * c, 1, groups))
        self.s2 = nn.Sequential(SEResNeXtBlock(4 * c, w2, 8 * c, 2, groups), SEResNeXtBlock(8 * c, w2, 8 * c, 1, groups))
        self.fc = nn.Linear(8 * c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.s2(self.s1(self.stem(x))), 1), 1))


class Res2Block(nn.Module):
    """Res2Net bottleneck: 1x1 to scale * width, torch.split into scales, each 3x3 fed
    the previous output plus its split (the first stage strided ones average-pool the last
    split instead), concatenated, 1x1 back"""
    def __init__(self, i, o, width, scale, s=1):
        super().__init__()
        self.width, self.scale, self.s = width, scale, s
        self.c1 = cbr(i, width * scale, 1)
        self.convs = nn.ModuleList(cbr(width, width, 3, s) for _ in range(scale - 1))
        self.pool = nn.AvgPool2d(3, s, 1) if s != 1 else None
        self.c3 = cbr(width * scale, o, 1, act=None)
        self.short = cbr(i, o, 1, s, act=None) if s != 1 or i != o else nn.Identity()

    def forward(self, x):
        spx = torch.split(self.c1(x), self.width, 1)
        outs, sp = [], None
        for k, conv in enumerate(self.convs):
            sp = spx[k] if k == 0 or self.s != 1 else sp + spx[k]
            sp = conv(sp)
            outs.append(sp)
        outs.append(self.pool(spx[-1]) if self.pool is not None else spx[-1])
        return F.relu(self.c3(torch.cat(outs, 1)) + self.short(x))


class Res2Net(nn.Module):
    def __init__(self, c=16, width=8, scale=4, classes=10):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c, 3, 2), cbr(c, c, 3), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(Res2Block(c, 4 * c, width, scale), Res2Block(4 * c, 4 * c, width, scale),
                                    Res2Block(4 * c, 8 * c, 2 * width, scale, 2))
        self.fc = nn.Linear(8 * c, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class ConvMixer(nn.Module):
    """ConvMixer (the paper's listing, padding k // 2 for its "same": PyTorch 1.13 does not
    export padding="same"): a patch conv, then depth x (Residual(depthwise k x k,
    GELU, BatchNorm), 1x1, GELU, BatchNorm), pooled"""
    def __init__(self, dim=32, depth=2, k=9, p=4, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, dim, p, p), nn.GELU(), nn.BatchNorm2d(dim),
            *[nn.Sequential(Residual(nn.Sequential(nn.Conv2d(dim, dim, k, groups=dim, padding=k // 2), nn.GELU(),
                                                   nn.BatchNorm2d(dim))),
                            nn.Conv2d(dim, dim, 1), nn.GELU(), nn.BatchNorm2d(dim)) for _ in range(depth)],
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(dim, classes))

    def forward(self, x):
        return self.net(x)


class RepViTBlock(nn.Module):
    """RepViT block (training form): token mixer = BN(dw3x3) + BN(dw1x1) + x (RepVGGDW),
    optional SE, channel mixer = residual 1x1 expand, GELU, 1x1"""
    def __init__(self, c, se):
        super().__init__()
        self.dw3, self.dw1 = cbr(c, c, 3, g=c, act=None), cbr(c, c, 1, g=c, act=None)
        self.bn = nn.BatchNorm2d(c)
        self.se = SE(c, 4) if se else nn.Identity()
        self.cm = nn.Sequential(cbr(c, 2 * c, 1, act=nn.GELU), cbr(2 * c, c, 1, act=None))

    def forward(self, x):
        x = self.se(self.bn(self.dw3(x) + self.dw1(x) + x))
        return x + self.cm(x)


class RepViT(nn.Module):
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c // 2, 3, 2, act=nn.GELU), cbr(c // 2, c, 3, 2, act=None))
        self.s1 = nn.Sequential(RepViTBlock(c, True), RepViTBlock(c, False))
        self.down = nn.Sequential(cbr(c, c, 3, 2, g=c, act=None), cbr(c, 2 * c, 1, act=None))
        self.s2 = nn.Sequential(RepViTBlock(2 * c, True), RepViTBlock(2 * c, False))
        self.head = nn.Sequential(nn.BatchNorm1d(2 * c), nn.Linear(2 * c, classes))

    def forward(self, x):
        return self.head(self.s2(self.down(self.s1(self.stem(x)))).mean((2, 3)))


class UIB(nn.Module):
    """MobileNetV4's universal inverted bottleneck: an optional depthwise before the
    expansion (start_dw), 1x1 expand, an optional depthwise after it (mid_dw, the stride),
    1x1 project, LayerScale-free residual when shapes allow"""
    def __init__(self, i, o, start_k, mid_k, s, e):
        super().__init__()
        m = i * e
        self.start = cbr(i, i, start_k, 1 if mid_k else s, g=i, act=None) if start_k else nn.Identity()
        self.expand = cbr(i, m, 1)
        self.mid = cbr(m, m, mid_k, s, g=m) if mid_k else nn.Identity()
        self.proj = cbr(m, o, 1, act=None)
        self.res = i == o and s == 1

    def forward(self, x):
        y = self.proj(self.mid(self.expand(self.start(x))))
        return x + y if self.res else y


class MobileNetV4(nn.Module):
    """MobileNetV4-conv-small's shape: stem, a FusedIB, UIB blocks of the four kinds
    (ExtraDW, IB, ConvNext-like, FFN), 1x1 to 4c, pooled, 1x1 head with ReLU"""
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = cbr(3, c, 3, 2)
        self.fused = nn.Sequential(cbr(c, 2 * c, 3, 2), cbr(2 * c, c, 1, act=None))
        self.blocks = nn.Sequential(UIB(c, 2 * c, 5, 5, 2, 3), UIB(2 * c, 2 * c, 0, 3, 1, 2),
                                    UIB(2 * c, 2 * c, 3, 0, 1, 4), UIB(2 * c, 2 * c, 0, 0, 1, 2),
                                    UIB(2 * c, 4 * c, 3, 3, 2, 4))
        self.conv = cbr(4 * c, 8 * c, 1)
        self.head = nn.Sequential(nn.Conv2d(8 * c, 16 * c, 1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * c, classes))

    def forward(self, x):
        y = self.conv(self.blocks(self.fused(self.stem(x))))
        return self.head(F.adaptive_avg_pool2d(y, 1))


class GnConv(nn.Module):
    """HorNet's recursive gated convolution (order 3): 1x1 to 2c, split into p0 and the
    rest, the rest through a 7x7 depthwise and split by dims, p = p0 * dw0, then
    p = pw_i(p) * dw_{i+1}, a 1x1 out"""
    def __init__(self, c, order=3):
        super().__init__()
        self.dims = [c // 2 ** i for i in range(order)][::-1]
        self.proj_in = nn.Conv2d(c, 2 * c, 1)
        self.dw = nn.Conv2d(sum(self.dims), sum(self.dims), 7, padding=3, groups=sum(self.dims))
        self.pws = nn.ModuleList(nn.Conv2d(self.dims[i], self.dims[i + 1], 1) for i in range(order - 1))
        self.proj_out = nn.Conv2d(c, c, 1)
        self.scale = 1.0 / 3.0

    def forward(self, x):
        p0, abc = torch.split(self.proj_in(x), (self.dims[0], sum(self.dims)), dim=1)
        dw = torch.split(self.dw(abc) * self.scale, self.dims, dim=1)
        x = p0 * dw[0]
        for i, pw in enumerate(self.pws):
            x = pw(x) * dw[i + 1]
        return self.proj_out(x)


class HorNetBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.gn = nn.GroupNorm(1, c), GnConv(c)
        self.n2 = nn.LayerNorm(c)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.g1, self.g2 = nn.Parameter(torch.rand(c, 1, 1)), nn.Parameter(torch.rand(c))

    def forward(self, x):
        x = x + self.g1 * self.gn(self.n1(x))
        y = self.pw2(F.gelu(self.pw1(self.n2(x.permute(0, 2, 3, 1)))))
        return x + (self.g2 * y).permute(0, 3, 1, 2)


class HorNet(nn.Module):
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 4, 4), nn.GroupNorm(1, c))
        self.s1 = HorNetBlock(c)
        self.down = nn.Sequential(nn.GroupNorm(1, c), nn.Conv2d(c, 2 * c, 2, 2))
        self.s2 = HorNetBlock(2 * c)
        self.head = nn.Linear(2 * c, classes)

    def forward(self, x):
        return self.head(self.s2(self.down(self.s1(self.stem(x)))).mean((-2, -1)))


class FocalModulation(nn.Module):
    """FocalNet's focal modulation: Linear to q, ctx and L + 1 gates; ctx through L
    depthwise convs of growing kernels (GELU), each gated and summed, plus the global
    average gated; h (1x1) of the aggregate times q, projected"""
    def __init__(self, c, levels=2):
        super().__init__()
        self.levels = levels
        self.f = nn.Linear(c, 2 * c + levels + 1)
        self.layers = nn.ModuleList(nn.Sequential(nn.Conv2d(c, c, 3 + 2 * k, 1, (3 + 2 * k) // 2, groups=c,
                                                            bias=False), nn.GELU()) for k in range(levels))
        self.h, self.proj = nn.Conv2d(c, c, 1), nn.Linear(c, c)
        self.c = c

    def forward(self, x):  # (b, h, w, c)
        x = self.f(x).permute(0, 3, 1, 2)
        q, ctx, gates = torch.split(x, (self.c, self.c, self.levels + 1), 1)
        agg = 0
        for k, layer in enumerate(self.layers):
            ctx = layer(ctx)
            agg = agg + ctx * gates[:, k:k + 1]
        g = F.gelu(ctx.mean(2, keepdim=True).mean(3, keepdim=True))
        agg = agg + g * gates[:, self.levels:]
        return self.proj((q * self.h(agg)).permute(0, 2, 3, 1))


class FocalNet(nn.Module):
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, c, 4, 4)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(n1=nn.LayerNorm(c), mod=FocalModulation(c), n2=nn.LayerNorm(c),
                                                       mlp=nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(),
                                                                         nn.Linear(4 * c, c)))) for _ in range(2))
        self.norm, self.head = nn.LayerNorm(c), nn.Linear(c, classes)

    def forward(self, x):
        x = self.embed(x).permute(0, 2, 3, 1)
        for B in self.blocks:
            x = x + B["mod"](B["n1"](x))
            x = x + B["mlp"](B["n2"](x))
        return self.head(self.norm(x).mean((1, 2)))


class EfficientFormer(nn.Module):
    """EfficientFormer: a conv stem, Meta4D blocks (x + ls * (AvgPool3x3(x) - x), then a
    1x1 conv MLP with BatchNorm), a stride-2 embedding, flattened tokens through a Meta3D
    block (multi-head attention with a learned per-head attention bias over the grid)"""
    def __init__(self, c=16, classes=10, grid=0):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c // 2, 3, 2), cbr(c // 2, c, 3, 2))
        self.m4 = nn.ModuleList(nn.ModuleDict(dict(
            pool=nn.AvgPool2d(3, 1, 1, count_include_pad=False),
            mlp=nn.Sequential(nn.Conv2d(c, 4 * c, 1), nn.BatchNorm2d(4 * c), nn.GELU(), nn.Conv2d(4 * c, c, 1),
                              nn.BatchNorm2d(c)))) for _ in range(2))
        self.ls = nn.Parameter(torch.rand(2, 2, c, 1, 1))
        self.down = cbr(c, 2 * c, 3, 2, act=None)
        d, self.h = 2 * c, 4
        self.n1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.n2, self.mlp = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.hb = nn.Parameter(torch.randn(self.h, 1, 1) * 0.1)
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x)
        for k, B in enumerate(self.m4):
            x = x + self.ls[k, 0] * (B["pool"](x) - x)
            x = x + self.ls[k, 1] * B["mlp"](x)
        x = self.down(x).flatten(2).transpose(1, 2)
        b, n, d = x.shape
        hd = d // self.h
        q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * hd ** -0.5 + self.hb
        x = x + self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))
        x = x + self.mlp(self.n2(x))
        return self.head(self.norm(x).mean(1))


class SegNet(nn.Module):
    """SegNet: encoder stages of conv-BN-ReLU then MaxPool2d(2, 2, return_indices=True),
    decoder stages unpooling to those indices (and the pre-pool size) then convs. PyTorch
    1.13 does not export MaxUnpool2d: the unpool is written as exporting code writes it, a
    scatter of the values to their flat indices in zeros. ceil: 3x3 windows at stride 2,
    pad 1, ceil_mode (overlapping windows: a value may win two, scattered twice)"""
    def __init__(self, c=16, classes=5, ceil=False):
        super().__init__()
        self.e = nn.ModuleList([nn.Sequential(cbr(3, c), cbr(c, c)), nn.Sequential(cbr(c, 2 * c), cbr(2 * c, 2 * c))])
        self.d = nn.ModuleList([nn.Sequential(cbr(2 * c, 2 * c), cbr(2 * c, c)), nn.Sequential(cbr(c, c))])
        self.pool = nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True) if ceil else \
            nn.MaxPool2d(2, 2, return_indices=True)
        self.out = nn.Conv2d(c, classes, 3, padding=1)

    def forward(self, x):
        idx, sizes = [], []
        for e in self.e:
            x = e(x)
            sizes.append(x.size())
            x, i = self.pool(x)
            idx.append(i)
        for d in self.d:
            b, c, h, w = sizes.pop()
            i = idx.pop()
            x = d(x.new_zeros((b, c, h * w)).scatter(2, i.flatten(2), x.flatten(2)).view(b, c, h, w))
        return self.out(x)


class DCGANGen(nn.Module):
    """the DCGAN generator (PyTorch's example): ConvTranspose2d(nz, 8g, 4, 1, 0) from 1x1,
    then (4, 2, 1) doublings with BatchNorm and ReLU, Tanh"""
    def __init__(self, nz=16, g=8):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, g * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(g * 8), nn.ReLU(True),
            nn.ConvTranspose2d(g * 8, g * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(g * 4), nn.ReLU(True),
            nn.ConvTranspose2d(g * 4, g * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(g * 2), nn.ReLU(True),
            nn.ConvTranspose2d(g * 2, g, 4, 2, 1, bias=False), nn.BatchNorm2d(g), nn.ReLU(True),
            nn.ConvTranspose2d(g, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class LinkDecoder(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c1 = cbr(i, i // 4, 1)
        self.up = nn.Sequential(nn.ConvTranspose2d(i // 4, i // 4, 3, 2, 1, output_padding=1, bias=False),
                                nn.BatchNorm2d(i // 4), nn.ReLU())
        self.c2 = cbr(i // 4, o, 1)

    def forward(self, x):
        return self.c2(self.up(self.c1(x)))


class BasicBlock(nn.Module):
    def __init__(self, i, o, s):
        super().__init__()
        self.c1, self.c2 = cbr(i, o, 3, s), cbr(o, o, 3, act=None)
        self.short = cbr(i, o, 1, s, act=None) if s != 1 or i != o else nn.Identity()

    def forward(self, x):
        return F.relu(self.c2(self.c1(x)) + self.short(x))


class LinkNet(nn.Module):
    """LinkNet: a ResNet-18-like encoder, decoders (1x1, ConvTranspose2d 3x3 stride 2 with
    output_padding 1, 1x1) added to the encoder's skips, a transposed-conv classifier"""
    def __init__(self, c=16, classes=5):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c, 7, 2), nn.MaxPool2d(3, 2, 1))
        self.e1, self.e2, self.e3 = BasicBlock(c, c, 1), BasicBlock(c, 2 * c, 2), BasicBlock(2 * c, 4 * c, 2)
        self.d3, self.d2, self.d1 = LinkDecoder(4 * c, 2 * c), LinkDecoder(2 * c, c), LinkDecoder(c, c)
        self.final = nn.Sequential(nn.ConvTranspose2d(c, c // 2, 3, 2, 1, output_padding=1), nn.ReLU(),
                                   nn.Conv2d(c // 2, classes, 3, padding=1))

    def forward(self, x):
        e1 = self.e1(self.stem(x))
        e2 = self.e2(e1)
        e3 = self.e3(e2)
        d2 = self.d3(e3) + e2
        d1 = self.d2(d2) + e1
        return self.final(self.d1(d1))


class ARM(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv, self.att = cbr(i, o), nn.Sequential(nn.Conv2d(o, o, 1, bias=False), nn.BatchNorm2d(o), nn.Sigmoid())

    def forward(self, x):
        y = self.conv(x)
        return y * self.att(F.adaptive_avg_pool2d(y, 1))


class BiSeNetARM(nn.Module):
    """BiSeNet: a spatial path (three stride-2 convs), a context path (stride 16 and 32
    features with attention refinement, the global context added, nearest upsampling),
    the feature fusion module (concat, conv, channel attention), bilinear 8x upsampling"""
    def __init__(self, c=16, classes=5):
        super().__init__()
        self.sp = nn.Sequential(cbr(3, c, 3, 2), cbr(c, c, 3, 2), cbr(c, 2 * c, 3, 2))
        self.cp = nn.ModuleList([nn.Sequential(cbr(3, c, 3, 2), cbr(c, c, 3, 2), cbr(c, 2 * c, 3, 2), cbr(2 * c, 4 * c, 3, 2)),
                                 cbr(4 * c, 8 * c, 3, 2)])
        self.arm16, self.arm32 = ARM(4 * c, 2 * c), ARM(8 * c, 2 * c)
        self.gc = cbr(8 * c, 2 * c, 1)
        self.head16, self.head32 = cbr(2 * c, 2 * c), cbr(2 * c, 2 * c)
        self.ffm = cbr(4 * c, 4 * c, 1)
        self.ffm_att = nn.Sequential(nn.Conv2d(4 * c, c, 1), nn.ReLU(), nn.Conv2d(c, 4 * c, 1), nn.Sigmoid())
        self.out = nn.Conv2d(4 * c, classes, 1)

    def forward(self, x):
        h, w = x.shape[2:]
        sp = self.sp(x)
        f16 = self.cp[0](x)
        f32 = self.cp[1](f16)
        gc = self.gc(F.adaptive_avg_pool2d(f32, 1))
        a32 = self.head32(F.interpolate(self.arm32(f32) + gc, size=f16.shape[2:], mode="nearest"))
        a16 = self.head16(F.interpolate(self.arm16(f16) + a32, size=sp.shape[2:], mode="nearest"))
        f = self.ffm(torch.cat([sp, a16], 1))
        f = f + f * self.ffm_att(F.adaptive_avg_pool2d(f, 1))
        return F.interpolate(self.out(f), size=(h, w), mode="bilinear", align_corners=True)


class FPNRetina(nn.Module):
    """a backbone's C3-C5, an FPN (lateral 1x1, nearest top-down adds, 3x3 outputs, P6 by
    a stride-2 conv, P7 after ReLU), RetinaNet's shared class / box subnets (4 conv-ReLU
    each) over every level, flattened to (b, sum anchors, classes / 4) and concatenated"""
    def __init__(self, c=16, d=32, anchors=3, classes=4):
        super().__init__()
        self.anchors, self.classes = anchors, classes
        self.c3 = nn.Sequential(cbr(3, c, 3, 2), cbr(c, c, 3, 2), cbr(c, 2 * c, 3, 2))
        self.c4, self.c5 = cbr(2 * c, 4 * c, 3, 2), cbr(4 * c, 8 * c, 3, 2)
        self.lat = nn.ModuleList(nn.Conv2d(k * c, d, 1) for k in (2, 4, 8))
        self.out = nn.ModuleList(nn.Conv2d(d, d, 3, padding=1) for _ in range(3))
        self.p6, self.p7 = nn.Conv2d(8 * c, d, 3, 2, 1), nn.Conv2d(d, d, 3, 2, 1)
        self.cls = nn.Sequential(*[m for _ in range(4) for m in (nn.Conv2d(d, d, 3, padding=1), nn.ReLU())],
                                 nn.Conv2d(d, anchors * classes, 3, padding=1))
        self.box = nn.Sequential(*[m for _ in range(4) for m in (nn.Conv2d(d, d, 3, padding=1), nn.ReLU())],
                                 nn.Conv2d(d, anchors * 4, 3, padding=1))

    def forward(self, x):
        c3 = self.c3(x)
        c4 = self.c4(c3)
        c5 = self.c5(c4)
        p5 = self.lat[2](c5)
        p4 = self.lat[1](c4) + F.interpolate(p5, size=c4.shape[-2:], mode="nearest")
        p3 = self.lat[0](c3) + F.interpolate(p4, size=c3.shape[-2:], mode="nearest")
        p6 = self.p6(c5)
        feats = [self.out[0](p3), self.out[1](p4), self.out[2](p5), p6, self.p7(F.relu(p6))]
        b = x.shape[0]
        cls = [self.cls(f).permute(0, 2, 3, 1).reshape(b, -1, self.classes) for f in feats]
        box = [self.box(f).permute(0, 2, 3, 1).reshape(b, -1, 4) for f in feats]
        return torch.sigmoid(torch.cat(cls, 1)), torch.cat(box, 1)


class SSDDecode(nn.Module):
    """SSD's box decode against its priors (center-size with variances 0.1 / 0.2, exp of
    the size offsets, to corners, clamped), softmax scores, the best non-background class"""
    def __init__(self, n=100, classes=21):
        super().__init__()
        torch.manual_seed(3)
        cxcy = torch.rand(n, 2)
        wh = torch.rand(n, 2) * 0.5 + 0.05
        self.register_buffer("priors", torch.cat([cxcy, wh], 1))

    def forward(self, loc, conf):
        p = self.priors
        c = p[:, :2] + loc[..., :2] * 0.1 * p[:, 2:]
        s = p[:, 2:] * torch.exp(loc[..., 2:] * 0.2)
        boxes = torch.cat([c - s / 2, c + s / 2], -1).clamp(0.0, 1.0)
        scores = F.softmax(conf, -1)
        best, label = scores[..., 1:].max(-1)
        return boxes, best, label + 1


class ELAN(nn.Module):
    """YOLOv7's ELAN: two 1x1 branches, one through a chain of 3x3s, the chain's every
    other output concatenated, a 1x1 fuse"""
    def __init__(self, i, m, o, n=4):
        super().__init__()
        self.cv1, self.cv2 = cbr(i, m, 1, act=nn.SiLU), cbr(i, m, 1, act=nn.SiLU)
        self.chain = nn.ModuleList(cbr(m, m, 3, act=nn.SiLU) for _ in range(n))
        self.out = cbr(m * (2 + n // 2), o, 1, act=nn.SiLU)

    def forward(self, x):
        ys, y = [self.cv1(x), self.cv2(x)], self.cv2(x)
        for k, conv in enumerate(self.chain):
            y = conv(y)
            if k % 2 == 1:
                ys.append(y)
        return self.out(torch.cat(ys[::-1], 1))


class MP(nn.Module):
    """YOLOv7's MP downsample: MaxPool + 1x1 beside 1x1 + 3x3 stride 2, concatenated"""
    def __init__(self, c):
        super().__init__()
        self.a, self.b1, self.b2 = cbr(c, c // 2, 1, act=nn.SiLU), cbr(c, c // 2, 1, act=nn.SiLU), \
            cbr(c // 2, c // 2, 3, 2, act=nn.SiLU)

    def forward(self, x):
        return torch.cat([self.b2(self.b1(x)), self.a(F.max_pool2d(x, 2, 2))], 1)


class ELANNet(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c, 3, 1, act=nn.SiLU), cbr(c, 2 * c, 3, 2, act=nn.SiLU),
                                  cbr(2 * c, 2 * c, 3, 1, act=nn.SiLU), cbr(2 * c, 4 * c, 3, 2, act=nn.SiLU))
        self.e1 = ELAN(4 * c, 2 * c, 8 * c)
        self.m1, self.e2 = MP(8 * c), ELAN(8 * c, 4 * c, 16 * c)
        self.m2, self.e3 = MP(16 * c), ELAN(16 * c, 8 * c, 32 * c)

    def forward(self, x):
        p3 = self.e2(self.m1(self.e1(self.stem(x))))
        return p3, self.e3(self.m2(p3))


class Demucs(nn.Module):
    """Demucs (v1/v2): encoder layers Conv1d(k 8, stride 4) ReLU, 1x1 Conv1d to 2c and GLU;
    a BiLSTM over time with a Linear back; decoder layers skip-add (the skip cropped to
    the current length), 1x1 + GLU, ConvTranspose1d(k 8, stride 4), ReLU but the last"""
    def __init__(self, c=8, depth=2, sources=2, ch=2):
        super().__init__()
        self.enc, self.dec = nn.ModuleList(), nn.ModuleList()
        i = ch
        for k in range(depth):
            o = c * 2 ** k
            self.enc.append(nn.Sequential(nn.Conv1d(i, o, 8, 4), nn.ReLU(), nn.Conv1d(o, 2 * o, 1), nn.GLU(1)))
            last = k == 0
            self.dec.insert(0, nn.Sequential(nn.Conv1d(o, 2 * o, 3, padding=1), nn.GLU(1),
                                             nn.ConvTranspose1d(o, sources * ch if last else i, 8, 4),
                                             nn.Identity() if last else nn.ReLU()))
            i = o
        self.lstm, self.lin = nn.LSTM(i, i, 2, bidirectional=True), nn.Linear(2 * i, i)

    def forward(self, mix):
        mono = mix.mean(1, keepdim=True)
        std = mono.std(-1, keepdim=True)
        x = (mix - mono.mean(-1, keepdim=True)) / (1e-5 + std)
        skips = []
        for e in self.enc:
            x = e(x)
            skips.append(x)
        y = self.lstm(x.permute(2, 0, 1))[0]
        x = self.lin(y).permute(1, 2, 0)
        for d in self.dec:
            s = skips.pop()
            x = d(x + s[..., :x.shape[-1]])
        return x * std


class ComplexConv2d(nn.Module):
    """DCCRN's complex conv: real and imaginary halves of the channels, (W_r * x_r -
    W_i * x_i, W_r * x_i + W_i * x_r), causal padding in time"""
    def __init__(self, i, o, k=(5, 2), s=(2, 1)):
        super().__init__()
        self.r = nn.Conv2d(i // 2, o // 2, k, s, (k[0] // 2, 0))
        self.i = nn.Conv2d(i // 2, o // 2, k, s, (k[0] // 2, 0))
        self.t = k[1] - 1

    def forward(self, x):
        x = F.pad(x, (self.t, 0))
        xr, xi = torch.chunk(x, 2, 1)
        return torch.cat([self.r(xr) - self.i(xi), self.r(xi) + self.i(xr)], 1)


class DCCRN(nn.Module):
    """DCCRN-like: complex conv encoder with BatchNorm and PReLU over (b, 2, F, T), an LSTM
    over time on the flattened frequency, a complex transposed decoder replaced by
    nearest frequency upsampling + complex conv, the complex ratio mask by tanh of the
    magnitude and the phase (atan2 written out) applied to the input spectrum"""
    def __init__(self, c=8, freq=32):
        super().__init__()
        self.e1, self.b1 = ComplexConv2d(2, 2 * c), nn.Sequential(nn.BatchNorm2d(2 * c), nn.PReLU())
        self.e2, self.b2 = ComplexConv2d(2 * c, 4 * c), nn.Sequential(nn.BatchNorm2d(4 * c), nn.PReLU())
        self.d2, self.db2 = ComplexConv2d(8 * c, 2 * c, s=(1, 1)), nn.Sequential(nn.BatchNorm2d(2 * c), nn.PReLU())
        self.d1 = ComplexConv2d(4 * c, 2, s=(1, 1))
        self.lstm = nn.LSTM(4 * c * (freq // 4), 4 * c * (freq // 4) // 2)
        self.lin = nn.Linear(4 * c * (freq // 4) // 2, 4 * c * (freq // 4))

    def forward(self, spec):  # (b, 2, F, T)
        e1 = self.b1(self.e1(spec))
        e2 = self.b2(self.e2(e1))
        b, ch, f, t = e2.shape
        y = self.lstm(e2.permute(3, 0, 1, 2).reshape(t, b, ch * f))[0]
        y = self.lin(y).reshape(t, b, ch, f).permute(1, 2, 3, 0)
        d2 = self.db2(self.d2(torch.cat([y, e2], 1)))
        d2 = F.interpolate(d2, size=(e1.shape[2], t), mode="nearest")
        m = self.d1(torch.cat([d2, e1], 1))
        m = F.interpolate(m, size=spec.shape[2:], mode="nearest")
        mr, mi = m[:, 0], m[:, 1]
        mag = torch.tanh(torch.sqrt(mr ** 2 + mi ** 2 + 1e-8))
        ph = torch.atan(mi / (mr + 1e-8)) + math.pi * (mr < 0).float() * torch.where(mi >= 0, 1.0, -1.0)
        sr, si = spec[:, 0], spec[:, 1]
        smag = torch.sqrt(sr ** 2 + si ** 2 + 1e-8)
        sph = torch.atan(si / (sr + 1e-8)) + math.pi * (sr < 0).float() * torch.where(si >= 0, 1.0, -1.0)
        out = mag * smag
        return torch.stack([out * torch.cos(ph + sph), out * torch.sin(ph + sph)], 1)


class EnCodecRVQ(nn.Module):
    """EnCodec's residual vector quantizer: for each of n codebooks, the nearest code of
    the residual (distance x^2 - 2 x.e + e^2, argmax of its negation), looked up by
    F.embedding, subtracted from the residual and added to the output"""
    def __init__(self, d=16, bins=64, n=4):
        super().__init__()
        self.books = nn.Parameter(torch.randn(n, bins, d))

    def forward(self, x):  # (b, d, t)
        r = x.transpose(1, 2)
        out, codes = torch.zeros_like(r), []
        for k in range(self.books.shape[0]):
            e = self.books[k]
            dist = -(r.pow(2).sum(-1, keepdim=True) - 2 * r @ e.t() + e.pow(2).sum(-1)[None, None])
            idx = dist.max(-1).indices
            q = F.embedding(idx, e)
            r = r - q
            out = out + q
            codes.append(idx)
        return out.transpose(1, 2), torch.stack(codes, 0)
