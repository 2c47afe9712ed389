"""zoo_models5b.py — the fifth round's models outside the transformers (tests/onnx/
zoo_models5.py has the cases and the docstring): detection and point-cloud heads, audio,
recommendation, tabular and generative models, each following its source's forward.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


# ---------------- detection, point clouds, vector quantization ----------------


class CenterNet(nn.Module):
    """CenterNet's decode (xingyizhou/CenterNet ctdet_decode): a stride-4 backbone, heat map
    sigmoid, the 3x3 max-pool NMS (hmax == heat), top-K over (b, C * H * W), classes and
    positions by floor division of the flat index, width / height and offset gathered
    from the flattened maps."""
    def __init__(self, c=16, classes=4, k=10):
        super().__init__()
        self.k = k
        self.body = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())

        def head(o):
            return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, o, 1))
        self.hm, self.wh, self.reg = head(classes), head(2), head(2)

    def forward(self, x):
        f = self.body(x)
        heat, wh, reg = self.hm(f).sigmoid(), self.wh(f), self.reg(f)
        hmax = F.max_pool2d(heat, 3, stride=1, padding=1)
        heat = heat * (hmax == heat).float()
        b, c, h, w = heat.shape
        scores, inds = torch.topk(heat.view(b, -1), self.k)
        clses = torch.div(inds, h * w, rounding_mode="floor")
        inds = inds % (h * w)
        ys = torch.div(inds, w, rounding_mode="floor").float()
        xs = (inds % w).float()
        idx = inds[:, None, :].expand(b, 2, self.k)
        wh = wh.view(b, 2, -1).gather(2, idx)
        reg = reg.view(b, 2, -1).gather(2, idx)
        xs, ys = xs + reg[:, 0], ys + reg[:, 1]
        boxes = torch.stack([xs - wh[:, 0] / 2, ys - wh[:, 1] / 2, xs + wh[:, 0] / 2, ys + wh[:, 1] / 2], -1)
        return boxes, scores, clses


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1)[1]


def graph_feature(x, k):
    """DGCNN's get_graph_feature: the k nearest neighbours' features by a flat index into
    (b * n, c), each minus its centre, beside the centre"""
    b, c, n = x.shape
    idx = knn(x, k)
    idx = (idx + torch.arange(0, b).view(-1, 1, 1) * n).view(-1)
    x = x.transpose(2, 1).contiguous()
    feat = x.view(b * n, -1)[idx, :].view(b, n, k, c)
    x = x.view(b, n, 1, c).repeat(1, 1, k, 1)
    return torch.cat((feat - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


class DGCNN(nn.Module):
    """DGCNN (WangYueFt/dgcnn): EdgeConv layers (kNN by top-k of negative squared distances,
    gather, 1x1 Conv2d, LeakyReLU, max over the k neighbours), concat, Conv1d, max and mean
    pooling over the points, classifier"""
    def __init__(self, k=5, c=16, emb=64, classes=10):
        super().__init__()
        self.k = k

        def edge(i, o):
            return nn.Sequential(nn.Conv2d(2 * i, o, 1, bias=False), nn.BatchNorm2d(o), nn.LeakyReLU(0.2))
        self.e1, self.e2, self.e3 = edge(3, c), edge(c, c), edge(c, 2 * c)
        self.conv = nn.Sequential(nn.Conv1d(4 * c, emb, 1, bias=False), nn.BatchNorm1d(emb), nn.LeakyReLU(0.2))
        self.fc = nn.Sequential(nn.Linear(2 * emb, 32), nn.LeakyReLU(0.2), nn.Linear(32, classes))

    def forward(self, x):
        x1 = self.e1(graph_feature(x, self.k)).max(dim=-1)[0]
        x2 = self.e2(graph_feature(x1, self.k)).max(dim=-1)[0]
        x3 = self.e3(graph_feature(x2, self.k)).max(dim=-1)[0]
        y = self.conv(torch.cat((x1, x2, x3), dim=1))
        y = torch.cat((F.adaptive_max_pool1d(y, 1).squeeze(-1), F.adaptive_avg_pool1d(y, 1).squeeze(-1)), 1)
        return self.fc(y)


class VQVAE(nn.Module):
    """VQ-VAE (the usual PyTorch VectorQuantizer): conv encoder, distances to the codebook
    |z|^2 - 2 z E^T + |E|^2, argmin, the codes' embeddings, ConvTranspose2d decoder"""
    def __init__(self, c=16, d=8, codes=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, d, 4, 2, 1))
        self.codebook = nn.Embedding(codes, d)
        self.codebook.weight.data.uniform_(-1.0, 1.0)
        self.dec = nn.Sequential(nn.ConvTranspose2d(d, c, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(c, 3, 4, 2, 1))

    def forward(self, x):
        z = self.enc(x).permute(0, 2, 3, 1).contiguous()
        b, h, w, d = z.shape
        flat = z.view(-1, d)
        dist = (flat ** 2).sum(1, keepdim=True) - 2 * flat @ self.codebook.weight.t() + \
            (self.codebook.weight ** 2).sum(1)
        idx = torch.argmin(dist, dim=1)
        zq = self.codebook(idx).view(b, h, w, d).permute(0, 3, 1, 2)
        return self.dec(zq), idx.view(b, h, w)


# ---------------- audio ----------------


class HiFiResBlock(nn.Module):
    def __init__(self, c, k, dil=(1, 3, 5)):
        super().__init__()
        self.c1 = nn.ModuleList(nn.Conv1d(c, c, k, 1, d * (k - 1) // 2, dilation=d) for d in dil)
        self.c2 = nn.ModuleList(nn.Conv1d(c, c, k, 1, (k - 1) // 2) for _ in dil)

    def forward(self, x):
        for c1, c2 in zip(self.c1, self.c2):
            x = c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1)) + x
        return x


class HiFiGAN(nn.Module):
    """HiFi-GAN's generator (jik876/hifi-gan): ConvTranspose1d upsampling (kernel 2u,
    stride u), multi-receptive-field fusion of dilated residual blocks averaged, tanh"""
    def __init__(self, mels=16, c=32, ups=(4, 4), ks=(3, 7)):
        super().__init__()
        self.pre = nn.Conv1d(mels, c, 7, 1, 3)
        self.ups = nn.ModuleList(nn.ConvTranspose1d(c // 2 ** i, c // 2 ** (i + 1), 2 * u, u, u // 2)
                                 for i, u in enumerate(ups))
        self.res = nn.ModuleList(nn.ModuleList(HiFiResBlock(c // 2 ** (i + 1), k) for k in ks)
                                 for i in range(len(ups)))
        self.post = nn.Conv1d(c // 2 ** len(ups), 1, 7, 1, 3)

    def forward(self, mel):
        x = self.pre(mel)
        for up, res in zip(self.ups, self.res):
            x = up(F.leaky_relu(x, 0.1))
            x = sum(r(x) for r in res) / len(res)
        return torch.tanh(self.post(F.leaky_relu(x)))


class SE1d(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(c, c // r, 1), nn.Conv1d(c // r, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.c2(F.relu(self.c1(x.mean(dim=2, keepdim=True)))))


class Res2Block(nn.Module):
    """SE-Res2Net block: 1x1, the channels in `scale` chunks each convolved after adding
    the previous chunk's output (the first passed through), 1x1, SE, residual"""
    def __init__(self, c, k, dil, scale=4):
        super().__init__()
        w = c // scale
        self.pre = nn.Sequential(nn.Conv1d(c, c, 1), nn.ReLU(), nn.BatchNorm1d(c))
        self.convs = nn.ModuleList(nn.Sequential(nn.Conv1d(w, w, k, dilation=dil, padding=dil * (k - 1) // 2),
                                                 nn.ReLU(), nn.BatchNorm1d(w)) for _ in range(scale - 1))
        self.post = nn.Sequential(nn.Conv1d(c, c, 1), nn.ReLU(), nn.BatchNorm1d(c))
        self.se = SE1d(c)
        self.scale = scale

    def forward(self, x):
        ys = []
        for i, xi in enumerate(torch.chunk(self.pre(x), self.scale, dim=1)):
            ys.append(xi if i == 0 else self.convs[i - 1](xi if i == 1 else xi + ys[-1]))
        return self.se(self.post(torch.cat(ys, dim=1))) + x


class ECAPA(nn.Module):
    """ECAPA-TDNN (speechbrain): SE-Res2Net blocks with dilations 2-4, multi-layer feature
    aggregation, attentive statistics pooling with the global context (mean and std
    repeated over time by x.repeat(1, 1, t)), std as sqrt(clamp(...)), BN, embedding"""
    def __init__(self, mels=16, c=32, att=16, emb=24):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(mels, c, 5, padding=2), nn.ReLU(), nn.BatchNorm1d(c))
        self.blocks = nn.ModuleList(Res2Block(c, 3, d) for d in (2, 3, 4))
        self.mfa = nn.Sequential(nn.Conv1d(3 * c, 3 * c, 1), nn.ReLU(), nn.BatchNorm1d(3 * c))
        self.att = nn.Sequential(nn.Conv1d(9 * c, att, 1), nn.ReLU(), nn.BatchNorm1d(att), nn.Tanh(),
                                 nn.Conv1d(att, 3 * c, 1))
        self.bn = nn.BatchNorm1d(6 * c)
        self.fc = nn.Conv1d(6 * c, emb, 1)

    def forward(self, x):
        x = self.stem(x)
        xs = []
        for blk in self.blocks:
            x = blk(x)
            xs.append(x)
        x = self.mfa(torch.cat(xs, dim=1))
        t = x.shape[-1]
        mean = x.mean(dim=2, keepdim=True)
        std = torch.sqrt(((x - mean) ** 2).mean(dim=2, keepdim=True).clamp(1e-12))
        ctx = torch.cat([x, mean.repeat(1, 1, t), std.repeat(1, 1, t)], dim=1)
        w = F.softmax(self.att(ctx), dim=2)
        mu = (w * x).sum(dim=2)
        sg = torch.sqrt((w * (x - mu[..., None]) ** 2).sum(dim=2).clamp(1e-4))
        return self.fc(self.bn(torch.cat((mu, sg), dim=1)).unsqueeze(2)).squeeze(2)


class TCSConv(nn.Sequential):
    def __init__(self, i, o, k, dil=1, s=1):
        super().__init__(nn.Conv1d(i, i, k, s, dil * (k // 2), dilation=dil, groups=i, bias=False),
                         nn.Conv1d(i, o, 1, bias=False), nn.BatchNorm1d(o))


class QuartzBlock(nn.Module):
    def __init__(self, i, o, k, r=2):
        super().__init__()
        self.convs = nn.ModuleList(TCSConv(i if j == 0 else o, o, k) for j in range(r))
        self.res = nn.Sequential(nn.Conv1d(i, o, 1, bias=False), nn.BatchNorm1d(o))

    def forward(self, x):
        y = x
        for j, c in enumerate(self.convs):
            y = c(y)
            y = F.relu(y) if j < len(self.convs) - 1 else y
        return F.relu(y + self.res(x))


class QuartzNet(nn.Module):
    """QuartzNet (NeMo): time-channel separable 1-d convs (depthwise with kernels 33-87,
    pointwise, BN), residual blocks, a dilated epilogue, CTC log_softmax over the vocab"""
    def __init__(self, mels=16, c=32, ks=(33, 39, 51), vocab=29):
        super().__init__()
        self.c1 = nn.Sequential(TCSConv(mels, c, 33, s=2), nn.ReLU())
        self.blocks = nn.Sequential(*[QuartzBlock(c, c, k) for k in ks])
        self.c2 = nn.Sequential(TCSConv(c, 2 * c, 87, dil=2), nn.ReLU())
        self.c3 = nn.Sequential(nn.Conv1d(2 * c, 4 * c, 1), nn.BatchNorm1d(4 * c), nn.ReLU())
        self.c4 = nn.Conv1d(4 * c, vocab, 1)

    def forward(self, x):
        return F.log_softmax(self.c4(self.c3(self.c2(self.blocks(self.c1(x))))), dim=1)


class R2Plus1D(nn.Module):
    """R(2+1)D (torchvision's r2plus1d_18 structure): Conv3d factorized into a (1, k, k)
    spatial and a (t, 1, 1) temporal conv, BatchNorm3d, a strided block with a 1x1x1
    downsample, MaxPool3d, AdaptiveAvgPool3d, fc"""
    def __init__(self, c=16, classes=10):
        super().__init__()

        def c21(i, o, s=1):
            m = (i * o * 27) // (i * 9 + 3 * o)
            return nn.Sequential(nn.Conv3d(i, m, (1, 3, 3), (1, s, s), (0, 1, 1), bias=False), nn.BatchNorm3d(m),
                                 nn.ReLU(), nn.Conv3d(m, o, (3, 1, 1), (s, 1, 1), (1, 0, 0), bias=False))
        self.stem = nn.Sequential(nn.Conv3d(3, c, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False), nn.BatchNorm3d(c),
                                  nn.ReLU(), nn.Conv3d(c, c, (3, 1, 1), 1, (1, 0, 0), bias=False),
                                  nn.BatchNorm3d(c), nn.ReLU())
        self.pool = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))
        self.b1 = nn.Sequential(c21(c, c), nn.BatchNorm3d(c), nn.ReLU(), c21(c, c), nn.BatchNorm3d(c))
        self.b2 = nn.Sequential(c21(c, 2 * c, 2), nn.BatchNorm3d(2 * c), nn.ReLU(), c21(2 * c, 2 * c),
                                nn.BatchNorm3d(2 * c))
        self.down = nn.Sequential(nn.Conv3d(c, 2 * c, 1, 2, bias=False), nn.BatchNorm3d(2 * c))
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = F.relu(self.b1(x) + x)
        x = F.relu(self.b2(x) + self.down(x))
        return self.fc(F.adaptive_avg_pool3d(x, 1).flatten(1))


# ---------------- neural fields and flows ----------------


class NeRF(nn.Module):
    """NeRF (yenchenlin/nerf-pytorch): positional encoding [x, sin(2^k x), cos(2^k x)],
    an 8-layer MLP with the input concatenated at layer 4, density by ReLU, view-dependent
    colour, volume rendering along each ray (alpha = 1 - exp(-sigma * delta), the
    transmittance as exp of an exclusive cumsum (its cumprod of 1 - alpha; the cumsum
    stops before the last sample's 1e10 distance, whose (sum + tau) - tau is rounding),
    weights, rgb / depth / opacity sums)"""
    def __init__(self, w=64, freqs=6, dfreqs=4, depth=8, skip=4):
        super().__init__()
        self.freqs, self.dfreqs, self.skip = freqs, dfreqs, skip
        cin, cd = 3 + 6 * freqs, 3 + 6 * dfreqs
        self.pts = nn.ModuleList([nn.Linear(cin, w)] + [nn.Linear(w + (cin if i == skip else 0), w)
                                                         for i in range(1, depth)])
        self.sigma, self.feat = nn.Linear(w, 1), nn.Linear(w, w)
        self.view, self.rgb = nn.Linear(w + cd, w // 2), nn.Linear(w // 2, 3)

    @staticmethod
    def embed(x, n):
        return torch.cat([x] + [f(x * 2.0 ** k) for k in range(n) for f in (torch.sin, torch.cos)], -1)

    def forward(self, rays_o, rays_d, z):
        pts = rays_o[:, None, :] + rays_d[:, None, :] * z[..., None]
        e = self.embed(pts, self.freqs)
        h = e
        for i, lin in enumerate(self.pts):
            h = F.relu(lin(torch.cat([e, h], -1) if i == self.skip else h))
        sigma = F.relu(self.sigma(h)[..., 0])
        d = rays_d / rays_d.norm(dim=-1, keepdim=True)
        de = self.embed(d, self.dfreqs)[:, None, :].expand(-1, z.shape[1], -1)
        rgb = torch.sigmoid(self.rgb(F.relu(self.view(torch.cat([self.feat(h), de], -1)))))
        dists = torch.cat([z[..., 1:] - z[..., :-1], torch.full_like(z[..., :1], 1e10)], -1)
        dists = dists * rays_d.norm(dim=-1, keepdim=True)
        tau = sigma * dists
        alpha = 1.0 - torch.exp(-tau)
        excl = torch.cat([torch.zeros_like(tau[..., :1]), torch.cumsum(tau[..., :-1], -1)], -1)
        weights = alpha * torch.exp(-excl)
        return (weights[..., None] * rgb).sum(-2), (weights * z).sum(-1), weights.sum(-1)


class Coupling(nn.Module):
    def __init__(self, d, hid, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.s = nn.Sequential(nn.Linear(d, hid), nn.ReLU(), nn.Linear(hid, d), nn.Tanh())
        self.t = nn.Sequential(nn.Linear(d, hid), nn.ReLU(), nn.Linear(hid, d))

    def forward(self, x):
        xm = x * self.mask
        s = self.s(xm) * (1 - self.mask)
        t = self.t(xm) * (1 - self.mask)
        return xm + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(1)


class RealNVP(nn.Module):
    """RealNVP on vectors: affine couplings under alternating masks, ActNorm-like scale and
    shift, the log-likelihood under a standard normal plus the log-determinants"""
    def __init__(self, d=8, hid=32, layers=4):
        super().__init__()
        m = (torch.arange(d) % 2).float()
        self.layers = nn.ModuleList(Coupling(d, hid, m if i % 2 == 0 else 1 - m) for i in range(layers))
        self.logs = nn.Parameter(torch.randn(d) * 0.1)
        self.bias = nn.Parameter(torch.randn(d) * 0.1)

    def forward(self, x):
        logdet = x.new_zeros(x.shape[0])
        x = (x + self.bias) * torch.exp(self.logs)
        logdet = logdet + self.logs.sum()
        for layer in self.layers:
            x, ld = layer(x)
            logdet = logdet + ld
        logp = -0.5 * (x ** 2 + math.log(2 * math.pi)).sum(1)
        return x, logp + logdet


# ---------------- recommendation and tabular ----------------


class DCNv2(nn.Module):
    """DCN-V2 (DCN-Mix): field embeddings by a flat table with per-field offsets, cross
    layers x0 * (U tanh(C tanh(V^T xl)) + b) + xl as a gated mixture of low-rank experts,
    a parallel deep tower, logit"""
    def __init__(self, fields=(10, 20, 7, 30), d=8, dense=4, rank=4, experts=2, layers=2, hid=32):
        super().__init__()
        off = torch.tensor((0,) + tuple(fields[:-1])).cumsum(0)
        self.register_buffer("off", off)
        self.emb = nn.Embedding(sum(fields), d)
        n = len(fields) * d + dense
        self.V = nn.Parameter(torch.randn(layers, experts, n, rank) * 0.1)
        self.C = nn.Parameter(torch.randn(layers, experts, rank, rank) * 0.1)
        self.U = nn.Parameter(torch.randn(layers, experts, rank, n) * 0.1)
        self.b = nn.Parameter(torch.randn(layers, n) * 0.1)
        self.gate = nn.ModuleList(nn.Linear(n, 1, bias=False) for _ in range(experts))
        self.deep = nn.Sequential(nn.Linear(n, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU())
        self.out = nn.Linear(n + hid, 1)

    def forward(self, sparse, dense):
        x0 = torch.cat([self.emb(sparse + self.off).flatten(1), dense], 1)
        xl = x0
        for i in range(self.V.shape[0]):
            outs, gates = [], []
            for e in range(self.V.shape[1]):
                v = torch.tanh(torch.tanh(xl @ self.V[i, e]) @ self.C[i, e])
                outs.append(x0 * (v @ self.U[i, e] + self.b[i]))
                gates.append(self.gate[e](xl))
            g = torch.softmax(torch.stack(gates, 1), 1)
            xl = (torch.stack(outs, 2) @ g).squeeze(2) + xl
        return torch.sigmoid(self.out(torch.cat([xl, self.deep(x0)], 1)))


class Dice(nn.Module):
    """DIN's Dice (DeepCTR-Torch): p = sigmoid(BN(x)) over the last axis (a 3-d input
    transposed to (b, c, t) around the BatchNorm1d), p x + (1 - p) a x"""
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c, affine=False)
        self.alpha = nn.Parameter(torch.full((c,), 0.25))

    def forward(self, x):
        p = torch.sigmoid(self.bn(x) if x.dim() == 2 else self.bn(x.transpose(1, 2)).transpose(1, 2))
        return p * x + (1 - p) * self.alpha * x


class DIN(nn.Module):
    """Deep Interest Network: the candidate item against the behaviour sequence, attention
    input [q, k, q - k, q * k] through an MLP with Dice, scores masked by the history's
    length (no softmax), the weighted sum, an MLP with Dice, sigmoid"""
    def __init__(self, items=100, d=8, hid=16):
        super().__init__()
        self.emb = nn.Embedding(items, d)
        self.att = nn.Sequential(nn.Linear(4 * d, hid), Dice(hid), nn.Linear(hid, 1))
        self.mlp = nn.Sequential(nn.Linear(3 * d, hid), Dice(hid), nn.Linear(hid, 1))

    def forward(self, item, hist, length):
        q, k = self.emb(item), self.emb(hist)
        t = hist.shape[1]
        mask = torch.arange(t)[None, :] < length[:, None]
        qe = q[:, None, :].expand(-1, t, -1)
        s = self.att(torch.cat([qe, k, qe - k, qe * k], -1)).squeeze(-1)
        s = s.masked_fill(~mask, 0.0)
        interest = (s[..., None] * k).sum(1)
        return torch.sigmoid(self.mlp(torch.cat([interest, q, interest * q], -1))).squeeze(-1)


class FTTransformer(nn.Module):
    """FT-Transformer (Yandex rtdl): numerical features tokenized x[..., None] * W + b,
    categorical ones by one table with offsets, the [CLS] token appended last, pre-LN
    layers with ReGLU feed-forward, the head on the last token"""
    def __init__(self, num=6, cards=(5, 7, 3), d=32, h=4, layers=2):
        super().__init__()
        self.w = nn.Parameter(torch.randn(num, d) * 0.3)
        self.b = nn.Parameter(torch.randn(num, d) * 0.3)
        self.register_buffer("off", torch.tensor((0,) + cards[:-1]).cumsum(0))
        self.cat = nn.Embedding(sum(cards), d)
        self.cls = nn.Parameter(torch.randn(d) * 0.3)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), attn=nn.MultiheadAttention(d, h, batch_first=True), n2=nn.LayerNorm(d),
            f1=nn.Linear(d, 4 * d), f2=nn.Linear(2 * d, d))) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x_num, x_cat):
        x = torch.cat([x_num[..., None] * self.w + self.b, self.cat(x_cat + self.off),
                       self.cls.expand(x_num.shape[0], 1, -1)], 1)
        for i, L in enumerate(self.layers):
            y = L["n1"](x) if i else x
            x = x + L["attn"](y, y, y, need_weights=False)[0]
            a, g = L["f1"](L["n2"](x)).chunk(2, dim=-1)
            x = x + L["f2"](a * F.relu(g))
        return self.head(x[:, -1]).squeeze(-1)


class NBeats(nn.Module):
    """N-BEATS (interpretable): trend blocks (polynomial basis) and seasonality blocks
    (Fourier basis) as constant matrices, the residual over the flipped input minus each
    backcast, forecasts summed from the last value (ElementAI's forward)"""
    def __init__(self, back=24, fore=8, units=32, degree=3, harmonics=4):
        super().__init__()
        tb, tf = torch.arange(back) / back, torch.arange(back, back + fore) / back
        self.register_buffer("trend_b", torch.stack([tb ** i for i in range(degree + 1)]))
        self.register_buffer("trend_f", torch.stack([tf ** i for i in range(degree + 1)]))
        fr = torch.arange(1, harmonics + 1)[:, None] * 2 * math.pi
        self.register_buffer("seas_b", torch.cat([torch.cos(fr * tb), torch.sin(fr * tb)]))
        self.register_buffer("seas_f", torch.cat([torch.cos(fr * tf), torch.sin(fr * tf)]))

        def block(p):
            return nn.Sequential(nn.Linear(back, units), nn.ReLU(), nn.Linear(units, units), nn.ReLU(),
                                 nn.Linear(units, units), nn.ReLU(), nn.Linear(units, 2 * p))
        self.trend = nn.ModuleList(block(degree + 1) for _ in range(2))
        self.seas = nn.ModuleList(block(2 * harmonics) for _ in range(2))

    def forward(self, x, mask):
        residual = x.flip(dims=(1,))
        mask = mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for blocks, bb, bf in ((self.trend, self.trend_b, self.trend_f), (self.seas, self.seas_b, self.seas_f)):
            for blk in blocks:
                tb, tf = blk(residual).chunk(2, dim=-1)
                residual = (residual - tb @ bb) * mask
                forecast = forecast + tf @ bf
        return forecast


class CapsNet(nn.Module):
    """CapsNet (Sabour et al.): primary capsules from a strided conv, squash, prediction
    vectors u_hat = W u by a batched matmul, three routing iterations (softmax over
    output capsules, weighted sum, squash, agreement update), class lengths"""
    def __init__(self, c=16, caps=4, grid=6, out=5, d_in=8, d_out=8, iters=3):
        super().__init__()
        self.conv = nn.Conv2d(1, c, 5)
        self.prim = nn.Conv2d(c, caps * d_in, 5, 2)
        self.d_in, self.iters = d_in, iters
        self.W = nn.Parameter(torch.randn(1, caps * grid * grid, out, d_out, d_in) * 0.1)

    @staticmethod
    def squash(s):
        n2 = (s ** 2).sum(-1, keepdim=True)
        return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

    def forward(self, x):
        u = self.prim(F.relu(self.conv(x)))
        b = u.shape[0]
        u = self.squash(u.view(b, -1, self.d_in, u.shape[-2] * u.shape[-1]).permute(0, 1, 3, 2)
                        .reshape(b, -1, self.d_in))
        u_hat = (self.W @ u[:, :, None, :, None]).squeeze(-1)
        logits = torch.zeros(b, u_hat.shape[1], u_hat.shape[2])
        for i in range(self.iters):
            c = F.softmax(logits, dim=2)
            v = self.squash((c[..., None] * u_hat).sum(1))
            if i < self.iters - 1:
                logits = logits + (u_hat * v[:, None]).sum(-1)
        return v.norm(dim=-1), v
