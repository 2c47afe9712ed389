"""zoo_models7b.py — the seventh round's convolutional, point-cloud, audio and field
models (tests/onnx/zoo_models7.py has the cases and the docstring): YOLOv8's C2f / SPPF
backbone, PP-LCNet, a conv block four ways, CoAtNet, EfficientViT, VAN, FiLM, Point
Transformer, a HuBERT-style feature extractor, NeRF's positional encoding MLP, each
following its source's forward.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def conv(i, o, k=1, s=1, g=1, act=nn.SiLU):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o),
                         act() if act else nn.Identity())


# ---------------- YOLOv8 C2f / SPPF ----------------


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2, self.add = conv(c, c, 3), conv(c, c, 3), shortcut

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    """ultralytics' C2f: cv1 to 2c, chunk(2, 1), each bottleneck appended to the list,
    cat, cv2"""
    def __init__(self, i, o, n=1, shortcut=True):
        super().__init__()
        self.c = o // 2
        self.cv1, self.cv2 = conv(i, 2 * self.c), conv((2 + n) * self.c, o)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, i, o, k=5):
        super().__init__()
        self.cv1, self.cv2 = conv(i, i // 2), conv(i // 2 * 4, o)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class C2fNet(nn.Module):
    """YOLOv8's backbone (n-scale widths times w / 16): stride-2 convs, C2f stages,
    SPPF, returning P3-P5"""
    def __init__(self, w=16):
        super().__init__()
        c = [w, 2 * w, 4 * w, 8 * w, 16 * w]
        self.stem = nn.Sequential(conv(3, c[0], 3, 2), conv(c[0], c[1], 3, 2), C2f(c[1], c[1]))
        self.s3 = nn.Sequential(conv(c[1], c[2], 3, 2), C2f(c[2], c[2], 2))
        self.s4 = nn.Sequential(conv(c[2], c[3], 3, 2), C2f(c[3], c[3], 2))
        self.s5 = nn.Sequential(conv(c[3], c[4], 3, 2), C2f(c[4], c[4]), SPPF(c[4], c[4]))

    def forward(self, x):
        p3 = self.s3(self.stem(x))
        p4 = self.s4(p3)
        return p3, p4, self.s5(p4)


# ---------------- PP-LCNet ----------------


class SEHard(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.c2(F.relu(self.c1(F.adaptive_avg_pool2d(x, 1)))))


class DepthSep(nn.Module):
    def __init__(self, i, o, k, s, se):
        super().__init__()
        self.dw = conv(i, i, k, s, i, nn.Hardswish)
        self.se = SEHard(i) if se else nn.Identity()
        self.pw = conv(i, o, 1, act=nn.Hardswish)

    def forward(self, x):
        return self.pw(self.se(self.dw(x)))


class PPLCNet(nn.Module):
    """PaddleClas' PP-LCNet: hardswish depthwise-separable blocks (3x3 then 5x5, SE with
    hardsigmoid in the last two), global pooling, a 1x1 conv to 1280 with hardswish,
    dropout, flatten, fc"""
    def __init__(self, scale=0.25, classes=10):
        super().__init__()
        def m(c):
            return max(8, int(c * scale + 4) // 8 * 8)
        cfg = [(3, 32, 64, 2, False), (3, 64, 64, 1, False), (3, 64, 128, 2, False), (3, 128, 128, 1, False),
               (3, 128, 256, 2, False), (5, 256, 256, 1, False), (5, 256, 512, 2, True), (5, 512, 512, 1, True)]
        self.stem = conv(3, m(16), 3, 2, act=nn.Hardswish)
        layers, prev = [], m(16)
        for k, i, o, s, se in cfg:
            layers.append(DepthSep(prev, m(o), k, s, se))
            prev = m(o)
        self.blocks = nn.Sequential(*layers)
        self.last = nn.Conv2d(prev, 1280 if scale >= 1 else 128, 1, bias=False)
        self.fc = nn.Linear(1280 if scale >= 1 else 128, classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.fc(torch.flatten(F.hardswish(self.last(x)), 1))


# ---------------- a conv block four ways ----------------


class LN2d(nn.Module):
    """timm's LayerNorm2d: permute to channels last, F.layer_norm, permute back"""
    def __init__(self, c):
        super().__init__()
        self.ln = nn.LayerNorm(c)

    def forward(self, x):
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvBlockForms(nn.Module):
    """a ResNet-style basic block (stem, two 3x3 convs + norm + ReLU, residual, stride-2
    3x3 + norm, pooling head) with its norm as BatchNorm (bn), as BatchNorm folded into the
    conv's weight and bias the way deployment tools do (folded), as LayerNorm-2d by
    permutes (ln2d), or as GroupNorm(1, c) (gn1)"""
    def __init__(self, form="bn", c=16, classes=10):
        super().__init__()
        self.form = form
        bias = form == "folded"

        def norm(n):
            if form in ("bn", "folded"):
                return nn.BatchNorm2d(n)
            return LN2d(n) if form == "ln2d" else nn.GroupNorm(1, n)
        self.convs = nn.ModuleList([nn.Conv2d(3, c, 3, 1, 1, bias=bias), nn.Conv2d(c, c, 3, 1, 1, bias=bias),
                                    nn.Conv2d(c, c, 3, 1, 1, bias=bias), nn.Conv2d(c, 2 * c, 3, 2, 1, bias=bias)])
        norms = [norm(n) for n in (c, c, c, 2 * c)]
        self.fc = nn.Linear(2 * c, classes)
        if form != "folded":
            self.norms = nn.ModuleList(norms)
            return
        with torch.no_grad():  # BatchNorms with trained statistics, folded and dropped
            for cv, bn in zip(self.convs, norms):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
                s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                cv.weight.mul_(s[:, None, None, None])
                cv.bias.copy_(bn.bias - bn.running_mean * s)

    def nc(self, k, x):
        return self.convs[k](x) if self.form == "folded" else self.norms[k](self.convs[k](x))

    def forward(self, x):
        x = F.relu(self.nc(0, x))
        y = F.relu(self.nc(1, x))
        x = F.relu(x + self.nc(2, y))
        x = F.relu(self.nc(3, x))
        return self.fc(x.mean((2, 3)))


# ---------------- CoAtNet ----------------


class MBConv(nn.Module):
    def __init__(self, i, o, s):
        super().__init__()
        self.pre = nn.BatchNorm2d(i)
        self.pw, self.dw = conv(i, 4 * i, 1, act=nn.GELU), conv(4 * i, 4 * i, 3, s, 4 * i, nn.GELU)
        self.se1, self.se2 = nn.Conv2d(4 * i, i // 4, 1), nn.Conv2d(i // 4, 4 * i, 1)
        self.out = nn.Conv2d(4 * i, o, 1)
        self.short = nn.Sequential(nn.MaxPool2d(3, s, 1), nn.Conv2d(i, o, 1)) if s > 1 else nn.Identity()

    def forward(self, x):
        y = self.dw(self.pw(self.pre(x)))
        y = y * torch.sigmoid(self.se2(F.silu(self.se1(y.mean((2, 3), keepdim=True)))))
        return self.short(x) + self.out(y)


class RelAttention(nn.Module):
    """CoAtNet's relative attention (chinhsuanwu/coatnet-pytorch): a (2h-1)(2w-1) table
    per head gathered by a constant index, added to the logits; the pre-norm and the
    strided downsample by max pooling"""
    def __init__(self, i, o, hw, heads=2):
        super().__init__()
        self.h, self.hd = heads, o // heads
        self.ih, self.iw = hw
        self.table = nn.Parameter(torch.randn((2 * self.ih - 1) * (2 * self.iw - 1), heads) * 0.2)
        coords = torch.stack(torch.meshgrid(torch.arange(self.ih), torch.arange(self.iw), indexing="ij")).flatten(1)
        rel = coords[:, :, None] - coords[:, None, :]
        rel[0] += self.ih - 1
        rel[1] += self.iw - 1
        rel[0] *= 2 * self.iw - 1
        self.register_buffer("relative_index", rel.sum(0).flatten().unsqueeze(1))
        self.norm, self.qkv, self.o = nn.LayerNorm(i), nn.Linear(i, 3 * o, bias=False), nn.Linear(o, o)
        self.pool, self.proj = nn.MaxPool2d(3, 2, 1), nn.Conv2d(i, o, 1, bias=False)

    def forward(self, x):
        x = self.pool(x)
        b, c, hh, ww = x.shape
        t = self.norm(x.flatten(2).transpose(1, 2))
        q, k, v = self.qkv(t).chunk(3, -1)
        q, k, v = (z.reshape(b, -1, self.h, self.hd).transpose(1, 2) for z in (q, k, v))
        dots = q @ k.transpose(-1, -2) * self.hd ** -0.5
        bias = self.table.gather(0, self.relative_index.repeat(1, self.h))
        bias = bias.reshape(self.ih * self.iw, self.ih * self.iw, self.h).permute(2, 0, 1)
        a = (dots + bias[None]).softmax(-1) @ v
        a = self.o(a.transpose(1, 2).reshape(b, -1, self.h * self.hd))
        return self.proj(x) + a.transpose(1, 2).reshape(b, -1, hh, ww)


class CoAtNet(nn.Module):
    """CoAtNet stages C-C-T: a conv stem, MBConv stages, a relative-attention stage with a
    pre-norm MLP (the image size fixes the attention grid)"""
    def __init__(self, c=16, img=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv(3, c, 3, 2, act=nn.GELU), conv(c, c, 3, act=nn.GELU))
        self.s1, self.s2 = MBConv(c, 2 * c, 2), MBConv(2 * c, 3 * c, 2)
        g = img // 16
        self.attn = RelAttention(3 * c, 4 * c, (g, g))
        self.ln = nn.LayerNorm(4 * c)
        self.mlp = nn.Sequential(nn.Linear(4 * c, 8 * c), nn.GELU(), nn.Linear(8 * c, 4 * c))
        self.fc = nn.Linear(4 * c, classes)

    def forward(self, x):
        x = self.attn(self.s2(self.s1(self.stem(x))))
        t = x.flatten(2).transpose(1, 2)
        t = t + self.mlp(self.ln(t))
        return self.fc(t.mean(1))


# ---------------- EfficientViT ----------------


class LiteMLA(nn.Module):
    """MIT EfficientViT's LiteMLA: qkv by 1x1 conv, multi-scale tokens by a 5x5 depthwise
    + grouped 1x1 aggregation, ReLU linear attention with v padded by a ones column
    (F.pad value 1) so the last column is the denominator, the output split by slicing"""
    def __init__(self, c, dim=8, eps=1e-15):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.qkv = nn.Conv2d(c, 3 * c, 1, bias=False)
        self.agg_dw = nn.Conv2d(3 * c, 3 * c, 5, padding=2, groups=3 * c, bias=False)
        self.agg_pw = nn.Conv2d(3 * c, 3 * c, 1, groups=3 * (c // dim), bias=False)
        self.proj = conv(2 * c, c, act=None)

    def forward(self, x):
        b, _, h, w = x.shape
        qkv = self.qkv(x)
        multi = torch.cat([qkv, self.agg_pw(self.agg_dw(qkv))], 1)
        multi = multi.reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
        q, k, v = multi[..., :self.dim], multi[..., self.dim:2 * self.dim], multi[..., 2 * self.dim:]
        q, k = F.relu(q), F.relu(k)
        v = F.pad(v, (0, 1), mode="constant", value=1)
        vk = k.transpose(-1, -2) @ v
        out = q @ vk
        out = out[..., :-1] / (out[..., -1:] + self.eps)
        out = out.transpose(-1, -2).reshape(b, -1, h, w)
        return x + self.proj(out)


class EfficientViT(nn.Module):
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv(3, c, 3, 2, act=nn.Hardswish), conv(c, 2 * c, 3, 2, act=nn.Hardswish),
                                  conv(2 * c, 2 * c, 3, 2, act=nn.Hardswish))
        self.attn = LiteMLA(2 * c)
        self.mb = nn.Sequential(conv(2 * c, 8 * c, act=nn.Hardswish), conv(8 * c, 8 * c, 3, 1, 8 * c, nn.Hardswish),
                                conv(8 * c, 2 * c, act=None))
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, x):
        x = self.attn(self.stem(x))
        x = x + self.mb(x)
        return self.fc(x.mean((2, 3)))


# ---------------- VAN ----------------


class LKA(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv0 = nn.Conv2d(c, c, 5, padding=2, groups=c)
        self.conv_spatial = nn.Conv2d(c, c, 7, padding=9, groups=c, dilation=3)
        self.conv1 = nn.Conv2d(c, c, 1)

    def forward(self, x):
        return x * self.conv1(self.conv_spatial(self.conv0(x)))


class VANBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.n2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
        self.p1, self.lka, self.p2 = nn.Conv2d(c, c, 1), LKA(c), nn.Conv2d(c, c, 1)
        self.fc1, self.dw, self.fc2 = nn.Conv2d(c, 4 * c, 1), nn.Conv2d(4 * c, 4 * c, 3, 1, 1, groups=4 * c), \
            nn.Conv2d(4 * c, c, 1)
        self.ls1, self.ls2 = nn.Parameter(torch.rand(c) * 0.5), nn.Parameter(torch.rand(c) * 0.5)

    def forward(self, x):
        y = self.n1(x)
        y = self.p2(self.lka(F.gelu(self.p1(y)))) + y
        x = x + self.ls1[:, None, None] * y
        return x + self.ls2.unsqueeze(-1).unsqueeze(-1) * self.fc2(F.gelu(self.dw(self.fc1(self.n2(x)))))


class VAN(nn.Module):
    """the Visual Attention Network: overlapping patch embeds (7x7 / 4, 3x3 / 2) with
    BatchNorm, blocks of large kernel attention (5x5 depthwise, 7x7 depthwise dilation 3,
    1x1, multiply) and a depthwise-conv MLP, LayerScale, tokens LayerNorm at the end"""
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.e1, self.b1 = nn.Sequential(nn.Conv2d(3, c, 7, 4, 3), nn.BatchNorm2d(c)), VANBlock(c)
        self.e2, self.b2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.BatchNorm2d(2 * c)), VANBlock(2 * c)
        self.norm, self.head = nn.LayerNorm(2 * c), nn.Linear(2 * c, classes)

    def forward(self, x):
        x = self.b2(self.e2(self.b1(self.e1(x))))
        return self.head(self.norm(x.flatten(2).transpose(1, 2)).mean(1))


# ---------------- FiLM ----------------


class FiLMBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c + 2, c, 1), nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c, affine=False)

    def forward(self, x, coords, gamma, beta):
        x = F.relu(self.c1(torch.cat([x, coords], 1)))
        y = self.bn(self.c2(x))
        return x + F.relu(gamma[:, :, None, None] * y + beta[:, :, None, None])


class FiLMNet(nn.Module):
    """FiLM (Perez et al., CLEVR): a GRU question encoder's last state to per-block
    (gamma, beta) by one Linear split by chunk, a conv stem, residual blocks with the
    coordinate maps concatenated (linspace grid expanded to the batch), a classifier"""
    def __init__(self, c=16, q=16, blocks=2, classes=10):
        super().__init__()
        self.c, self.nb = c, blocks
        self.film = nn.Linear(q, 2 * c * blocks)
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.ModuleList(FiLMBlock(c) for _ in range(blocks))
        self.cls = nn.Sequential(nn.Conv2d(c, 2 * c, 1), nn.ReLU())
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, img, question):
        params = self.film(question).view(-1, self.nb, 2, self.c)
        x = self.stem(img)
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h)[:, None].expand(h, w)
        xs = torch.linspace(-1, 1, w)[None, :].expand(h, w)
        coords = torch.stack([xs, ys])[None].expand(b, 2, h, w)
        for k, blk in enumerate(self.blocks):
            x = blk(x, coords, 1 + params[:, k, 0], params[:, k, 1])
        return self.fc(F.adaptive_max_pool2d(self.cls(x), 1).flatten(1))


# ---------------- Point Transformer ----------------


class PTLayer(nn.Module):
    """Point Transformer's vector attention (Zhao et al.): k nearest neighbours by topk of
    negative squared distances, neighbours' keys / values / positions gathered by a flat
    index (idx + batch offset), the position encoding MLP of the relative positions, the
    attention MLP of q - k + pos, softmax over neighbours, a weighted sum"""
    def __init__(self, c, k):
        super().__init__()
        self.k = k
        self.q, self.kk, self.v = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
        self.pos = nn.Sequential(nn.Linear(3, c), nn.ReLU(), nn.Linear(c, c))
        self.att = nn.Sequential(nn.Linear(c, c), nn.ReLU(), nn.Linear(c, c))

    def forward(self, xyz, f):
        b, n, c = f.shape
        d = -2 * xyz @ xyz.transpose(1, 2) + (xyz ** 2).sum(-1, keepdim=True) + (xyz ** 2).sum(-1)[:, None]
        idx = (-d).topk(self.k, -1)[1]  # (b, n, k)
        flat = (idx + torch.arange(b)[:, None, None] * n).reshape(-1)
        kf = self.kk(f).reshape(b * n, c)[flat].view(b, n, self.k, c)
        vf = self.v(f).reshape(b * n, c)[flat].view(b, n, self.k, c)
        rel = xyz[:, :, None] - xyz.reshape(b * n, 3)[flat].view(b, n, self.k, 3)
        pe = self.pos(rel)
        w = torch.softmax(self.att(self.q(f)[:, :, None] - kf + pe) / math.sqrt(c), 2)
        return f + (w * (vf + pe)).sum(2)


class PointTransformer(nn.Module):
    def __init__(self, c=16, k=8, classes=10):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(3, c), nn.ReLU(), nn.Linear(c, c))
        self.l1, self.l2 = PTLayer(c, k), PTLayer(c, k)
        self.head = nn.Linear(c, classes)

    def forward(self, xyz):
        f = self.embed(xyz)
        f = self.l2(xyz, self.l1(xyz, f))
        return self.head(f.max(1)[0])


# ---------------- HuBERT feature extractor ----------------


class HuBERTFeat(nn.Module):
    """HuBERT / wav2vec2 (base, feat_extract_norm="group"): conv 10/5 with GroupNorm(c, c)
    then GELU, convs 3/2 and 2/2, LayerNorm, the projection, the positional conv (groups,
    even kernel: the last frame removed), GELU, added, LayerNorm"""
    def __init__(self, c=32, d=48, k=8, groups=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, c, 10, 5, bias=False), nn.Conv1d(c, c, 3, 2, bias=False),
                                    nn.Conv1d(c, c, 3, 2, bias=False), nn.Conv1d(c, c, 2, 2, bias=False)])
        self.gn = nn.GroupNorm(c, c)
        self.ln, self.proj = nn.LayerNorm(c), nn.Linear(c, d)
        self.pos = nn.Conv1d(d, d, k, padding=k // 2, groups=groups)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, wav):
        x = wav[:, None]
        for i, cv in enumerate(self.convs):
            x = cv(x)
            x = F.gelu(self.gn(x) if i == 0 else x)
        x = self.proj(self.ln(x.transpose(1, 2)))
        p = self.pos(x.transpose(1, 2))[:, :, :-1]
        return self.ln2(x + F.gelu(p).transpose(1, 2))


# ---------------- NeRF positional encoding ----------------


class NeRFPosEnc(nn.Module):
    """the original NeRF MLP: positional encoding of x (10 octaves) and the view direction
    (4 octaves) as cat of sin / cos of 2^k x, 8 ReLU layers with the input concatenated at
    layer 5, sigma head, feature, view-dependent RGB by sigmoid"""
    def __init__(self, w=32, lx=10, ld=4):
        super().__init__()
        self.lx, self.ld = lx, ld
        ix, idd = 3 + 6 * lx, 3 + 6 * ld
        self.layers = nn.ModuleList([nn.Linear(ix, w)] + [nn.Linear(w + (ix if i == 4 else 0), w)
                                                            for i in range(7)])
        self.sigma, self.feat = nn.Linear(w, 1), nn.Linear(w, w)
        self.view, self.rgb = nn.Linear(w + idd, w // 2), nn.Linear(w // 2, 3)

    @staticmethod
    def enc(x, n):
        out = [x]
        for k in range(n):
            out += [torch.sin(2.0 ** k * x), torch.cos(2.0 ** k * x)]
        return torch.cat(out, -1)

    def forward(self, xyz, dirs):
        ex, ed = self.enc(xyz, self.lx), self.enc(dirs, self.ld)
        h = ex
        for i, l in enumerate(self.layers):
            if i == 5:
                h = torch.cat([ex, h], -1)
            h = F.relu(l(h))
        sigma = F.relu(self.sigma(h))
        rgb = torch.sigmoid(self.rgb(F.relu(self.view(torch.cat([self.feat(h), ed], -1)))))
        return rgb, sigma
