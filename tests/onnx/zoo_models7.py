"""zoo_models7.py — the seventh round: models the earlier rounds (zoo_models.py to
zoo_models6b.py) do not cover, several written more than one way. Sequence and attention
models here: RT-DETR's hybrid encoder (AIFI over the last level with a 2-d sin-cos table
computed at run time, CCFM's top-down / bottom-up fusion with RepC3), EdgeNeXt's SDTA
(channel split into cumulative depthwise convs, cross-covariance attention over
L2-normalized q / k with a learned temperature), Twins' locally-grouped and
global sub-sampled attention with the PEG position conv, PVT v2 (spatial-reduction
attention, overlapping patch embeds, a depthwise conv inside the MLP), BEiT's relative
position bias gathered from an index table with LayerScale, a Conformer block (macaron
half-step FFNs, nn.MultiheadAttention, the GLU / depthwise / BatchNorm conv module),
Tacotron 2's location-sensitive attention step, FastSpeech's length regulator (durations
to an alignment matrix by cumsum and comparisons), RetNet's parallel retention (per-head
decay masks, group norm), xLSTM's parallel mLSTM (log-sigmoid forget gates by cumsum,
a stabilized decay matrix), Informer's ProbSparse attention (sampled keys, top-k queries,
scattered into the mean of V), DeepAR (an LSTM to a Gaussian's mean, softplus scale and
log-likelihood), multi-query attention written three ways (expand, broadcast by
unsqueeze, repeat), Gumbel-softmax with the straight-through hard sample, a
Switch / GShard top-2 router with dense dispatch by one-hot masks. In zoo_models7b.py:
YOLOv8's C2f / SPPF backbone, PP-LCNet, a conv block four ways (BatchNorm, BatchNorm
folded into the conv, LayerNorm-2d by permutes, GroupNorm(1)), CoAtNet's MBConv and
relative attention, EfficientViT's ReLU linear attention (the padded-ones
denominator), VAN's large kernel attention, FiLM, Point Transformer's vector attention
over k nearest neighbours (topk and gather), a HuBERT-style feature extractor with
GroupNorm and a pos conv, a NeRF positional encoding MLP with its skip. Written out in
plain torch.nn (none of those packages is installed here); each class follows its
source's forward.

Same Case as tests/onnx/zoo_models.py; used by tests/onnx/test_torch_zoo.py --module
zoo_models7 (ctests onnx_torch_zoo7, 7b, 7c) and tests/bench/bench_torch_blocks.py
(zoo7:NAME).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case, LayerNormCF
from zoo_models7c import (ActZoo, BagOffsets, BiLSTMCRF, HashEmbed, LogSumExpForms, PillarScatter, SphericalPoints,
                          bag_offsets)
from zoo_models7b import (C2fNet, CoAtNet, ConvBlockForms, EfficientViT, FiLMNet, HuBERTFeat, NeRFPosEnc,
                          PPLCNet, PointTransformer, VAN)


def sincos_2d(w, h, dim, temp=10000.0):
    """RT-DETR's build_2d_sincos_position_embedding at the run-time grid (w, h)"""
    gw, gh = torch.meshgrid(torch.arange(w, dtype=torch.float32), torch.arange(h, dtype=torch.float32),
                            indexing="ij")
    pos = dim // 4
    omega = 1.0 / temp ** (torch.arange(pos, dtype=torch.float32) / pos)
    ow, oh = gw.flatten()[..., None] @ omega[None], gh.flatten()[..., None] @ omega[None]
    return torch.cat([ow.sin(), ow.cos(), oh.sin(), oh.cos()], 1)[None]


# ---------------- RT-DETR hybrid encoder ----------------


def cbs(i, o, k=1, s=1, act=True):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o),
                         nn.SiLU() if act else nn.Identity())


class RepVggLite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.c2 = cbs(c, c, 3, act=False), cbs(c, c, 1, act=False)

    def forward(self, x):
        return F.silu(self.c1(x) + self.c2(x))


class RepC3(nn.Module):
    def __init__(self, i, o, n=2):
        super().__init__()
        self.cv1, self.cv2 = cbs(i, o), cbs(i, o)
        self.m = nn.Sequential(*[RepVggLite(o) for _ in range(n)])

    def forward(self, x):
        return self.m(self.cv1(x)) + self.cv2(x)


class RTDETREncoder(nn.Module):
    """RT-DETR's HybridEncoder: input projections of three levels, AIFI (one post-norm
    transformer layer over the flattened last level plus its sin-cos table), CCFM's
    top-down path (lateral conv, nearest 2x upsample, concat, RepC3) and bottom-up path
    (stride-2 conv, concat, RepC3)"""
    def __init__(self, chans=(16, 32, 64), d=32, h=4):
        super().__init__()
        self.d = d
        self.proj = nn.ModuleList(cbs(c, d, act=False) for c in chans)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.lat = nn.ModuleList(cbs(d, d) for _ in range(2))
        self.fpn = nn.ModuleList(RepC3(2 * d, d) for _ in range(2))
        self.down = nn.ModuleList(cbs(d, d, 3, 2) for _ in range(2))
        self.pan = nn.ModuleList(RepC3(2 * d, d) for _ in range(2))

    def forward(self, s3, s4, s5):
        feats = [p(f) for p, f in zip(self.proj, (s3, s4, s5))]
        b, c, h, w = feats[2].shape
        src = feats[2].flatten(2).permute(0, 2, 1)
        pos = sincos_2d(w, h, self.d)
        q = src + pos
        src = self.n1(src + self.attn(q, q, src, need_weights=False)[0])
        src = self.n2(src + self.ff(src))
        inner = [src.permute(0, 2, 1).reshape(b, c, h, w)]
        for k in range(2):  # top-down
            hi = self.lat[k](inner[0])
            inner[0] = hi
            up = F.interpolate(hi, scale_factor=2.0, mode="nearest")
            inner.insert(0, self.fpn[k](torch.cat([up, feats[1 - k]], 1)))
        outs = [inner[0]]
        for k in range(2):  # bottom-up
            outs.append(self.pan[k](torch.cat([self.down[k](outs[-1]), inner[k + 1]], 1)))
        return tuple(outs)


# ---------------- EdgeNeXt SDTA ----------------


class XCA(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.temperature = nn.Parameter(torch.rand(h, 1, 1) + 0.5)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0].transpose(-2, -1), qkv[1].transpose(-2, -1), qkv[2].transpose(-2, -1)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.temperature
        x = (attn.softmax(-1) @ v).permute(0, 3, 1, 2).reshape(b, n, c)
        return self.proj(x)


class SDTA(nn.Module):
    """EdgeNeXt's split depth-wise transpose attention encoder: torch.split into scales,
    each depthwise conv fed the previous output plus its split, XCA over channels with
    LayerScale, then an inverted MLP with LayerScale"""
    def __init__(self, d=32, scales=4, h=4):
        super().__init__()
        self.width = max(int(math.ceil(d / scales)), int(math.floor(d // scales)))
        self.nums = scales - 1
        self.convs = nn.ModuleList(nn.Conv2d(self.width, self.width, 3, padding=1, groups=self.width)
                                   for _ in range(self.nums))
        self.norm_xca, self.xca = nn.LayerNorm(d, eps=1e-6), XCA(d, h)
        self.gamma_xca = nn.Parameter(torch.rand(d) * 0.5)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(torch.rand(d) * 0.5)

    def forward(self, x):
        inp = x
        spx = torch.split(x, self.width, 1)
        for i in range(self.nums):
            sp = spx[i] if i == 0 else sp + spx[i]
            sp = self.convs[i](sp)
            out = sp if i == 0 else torch.cat((out, sp), 1)
        x = torch.cat((out, spx[self.nums]), 1)
        b, c, h, w = x.shape
        x = x.reshape(b, c, h * w).permute(0, 2, 1)
        x = x + self.gamma_xca * self.xca(self.norm_xca(x))
        x = x.reshape(b, h, w, c)
        x = self.pw2(F.gelu(self.pw1(self.norm(x))))
        return inp + (self.gamma * x).permute(0, 3, 1, 2)


class EdgeNeXt(nn.Module):
    def __init__(self, d=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, d, 4, 4), LayerNormCF(d))
        self.blocks = nn.Sequential(SDTA(d), SDTA(d))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((-2, -1)))


# ---------------- Twins-SVT ----------------


class LSA(nn.Module):
    """Twins' locally-grouped attention: (b, H, W, c) into ws x ws windows by reshape and
    transpose (H, W multiples of ws)"""
    def __init__(self, d, h, ws):
        super().__init__()
        self.h, self.ws = h, ws
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, hh, ww):
        b, n, c = x.shape
        gh, gw = hh // self.ws, ww // self.ws
        x = x.view(b, gh, self.ws, gw, self.ws, c).transpose(2, 3)
        qkv = self.qkv(x).reshape(b, gh * gw, -1, 3, self.h, c // self.h).permute(3, 0, 1, 4, 2, 5)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * (c // self.h) ** -0.5
        a = (attn.softmax(-1) @ v).transpose(2, 3).reshape(b, gh, gw, self.ws, self.ws, c)
        return self.proj(a.transpose(2, 3).reshape(b, n, c))


class GSA(nn.Module):
    """Twins' global sub-sampled attention: keys / values from a strided conv + LayerNorm"""
    def __init__(self, d, h, sr):
        super().__init__()
        self.h = h
        self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.sr, self.norm = nn.Conv2d(d, d, sr, sr), nn.LayerNorm(d)

    def forward(self, x, hh, ww):
        b, n, c = x.shape
        q = self.q(x).reshape(b, n, self.h, c // self.h).permute(0, 2, 1, 3)
        x_ = self.norm(self.sr(x.permute(0, 2, 1).reshape(b, c, hh, ww)).reshape(b, c, -1).permute(0, 2, 1))
        kv = self.kv(x_).reshape(b, -1, 2, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        attn = (q @ kv[0].transpose(-2, -1)) * (c // self.h) ** -0.5
        return self.proj((attn.softmax(-1) @ kv[1]).transpose(1, 2).reshape(b, n, c))


class Twins(nn.Module):
    """a Twins-SVT stage: patch embed, LSA block, PEG (depthwise 3x3 on the tokens as an
    image, added), GSA block, each pre-norm with an MLP"""
    def __init__(self, d=32, h=2, ws=4, sr=2, classes=10):
        super().__init__()
        self.embed, self.n0 = nn.Conv2d(3, d, 4, 4), nn.LayerNorm(d)
        self.attn = nn.ModuleList([LSA(d, h, ws), GSA(d, h, sr)])
        self.n1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(2))
        self.n2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(2))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)) for _ in range(2))
        self.peg = nn.Conv2d(d, d, 3, 1, 1, groups=d)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        x = self.embed(img)
        b, c, hh, ww = x.shape
        x = self.n0(x.flatten(2).transpose(1, 2))
        for k in range(2):
            x = x + self.attn[k](self.n1[k](x), hh, ww)
            x = x + self.mlp[k](self.n2[k](x))
            if k == 0:
                x = self.peg(x.transpose(1, 2).view(b, c, hh, ww)).flatten(2).transpose(1, 2) + x
        return self.head(x.mean(1))


# ---------------- PVT v2 ----------------


class PVTBlock(nn.Module):
    def __init__(self, d, h, sr):
        super().__init__()
        self.n1, self.attn, self.n2 = nn.LayerNorm(d), GSA(d, h, sr), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.dw = nn.Conv2d(4 * d, 4 * d, 3, 1, 1, groups=4 * d)

    def forward(self, x, hh, ww):
        x = x + self.attn(self.n1(x), hh, ww)
        y = self.fc1(self.n2(x))
        b, n, c = y.shape
        y = self.dw(y.transpose(1, 2).view(b, c, hh, ww)).flatten(2).transpose(1, 2)
        return x + self.fc2(F.gelu(y))


class PVTv2(nn.Module):
    """PVT v2: overlapping patch embeds (7x7 stride 4, 3x3 stride 2, LayerNorm), blocks of
    spatial-reduction attention and the depthwise-conv MLP, tokens back to an image
    between stages"""
    def __init__(self, dims=(16, 32), heads=(1, 2), srs=(4, 2), classes=10):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Conv2d(3, dims[0], 7, 4, 3), nn.Conv2d(dims[0], dims[1], 3, 2, 1)])
        self.enorms = nn.ModuleList(nn.LayerNorm(d) for d in dims)
        self.blocks = nn.ModuleList(PVTBlock(d, h, s) for d, h, s in zip(dims, heads, srs))
        self.norms = nn.ModuleList(nn.LayerNorm(d) for d in dims)
        self.head = nn.Linear(dims[1], classes)

    def forward(self, x):
        for k in range(2):
            x = self.embeds[k](x)
            b, c, hh, ww = x.shape
            t = self.enorms[k](x.flatten(2).transpose(1, 2))
            t = self.norms[k](self.blocks[k](t, hh, ww))
            if k == 0:
                x = t.reshape(b, hh, ww, -1).permute(0, 3, 1, 2).contiguous()
        return self.head(t.mean(1))


# ---------------- BEiT ----------------


def beit_index(wh, ww):
    """BEiT's relative_position_index (with the cls token rows) as a (n + 1)^2 table"""
    coords = torch.stack(torch.meshgrid(torch.arange(wh), torch.arange(ww), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += wh - 1
    rel[:, :, 1] += ww - 1
    rel[:, :, 0] *= 2 * ww - 1
    nd = (2 * wh - 1) * (2 * ww - 1) + 3
    idx = torch.zeros(wh * ww + 1, wh * ww + 1, dtype=torch.long)
    idx[1:, 1:] = rel.sum(-1)
    idx[0, 0:] = nd - 3
    idx[0:, 0] = nd - 2
    idx[0, 0] = nd - 1
    return idx, nd


class BEiTBlock(nn.Module):
    def __init__(self, d, h, wh, ww):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.q_bias, self.v_bias = nn.Parameter(torch.randn(d) * 0.1), nn.Parameter(torch.randn(d) * 0.1)
        idx, nd = beit_index(wh, ww)
        self.register_buffer("relative_position_index", idx)
        self.relative_position_bias_table = nn.Parameter(torch.randn(nd, h) * 0.2)
        self.proj = nn.Linear(d, d)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.gamma_1, self.gamma_2 = nn.Parameter(torch.rand(d)), nn.Parameter(torch.rand(d))

    def attn(self, x):
        b, n, c = x.shape
        qkv_bias = torch.cat((self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
        qkv = F.linear(x, self.qkv.weight, qkv_bias).reshape(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * (c // self.h) ** -0.5, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1))

    def forward(self, x):
        x = x + self.gamma_1 * self.attn(self.n1(x))
        return x + self.gamma_2 * self.mlp(self.n2(x))


class BEiT(nn.Module):
    """BEiT: patch embed, cls token, blocks with the relative position bias gathered by a
    constant index table (so the patch grid is fixed), q / v biases by cat with zeros,
    LayerScale, mean pooling of patch tokens"""
    def __init__(self, d=32, h=4, p=4, img=16, layers=2, classes=10):
        super().__init__()
        g = img // p
        self.embed = nn.Conv2d(3, d, p, p)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.blocks = nn.ModuleList(BEiTBlock(d, h, g, g) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), 1)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x[:, 1:].mean(1)))


# ---------------- Conformer block ----------------


class ConformerBlock(nn.Module):
    """the Conformer block (ESPnet / torchaudio): half-step macaron FFNs with SiLU, MHSA
    with a key padding mask from lengths, the conv module (pointwise to 2c, GLU, depthwise
    k, BatchNorm, SiLU, pointwise), a final LayerNorm"""
    def __init__(self, d=32, h=4, k=7):
        super().__init__()
        def ffn():
            return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ff1, self.ff2 = ffn(), ffn()
        self.na, self.attn = nn.LayerNorm(d), nn.MultiheadAttention(d, h, batch_first=True)
        self.nc = nn.LayerNorm(d)
        self.pw1, self.dw = nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn, self.pw2 = nn.BatchNorm1d(d), nn.Conv1d(d, d, 1)
        self.nf = nn.LayerNorm(d)

    def forward(self, x, lengths):
        mask = torch.arange(x.shape[1])[None, :] >= lengths[:, None]
        x = x + 0.5 * self.ff1(x)
        y = self.na(x)
        x = x + self.attn(y, y, y, key_padding_mask=mask, need_weights=False)[0]
        y = self.nc(x).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = self.pw2(F.silu(self.bn(self.dw(y))))
        x = x + y.transpose(1, 2)
        return self.nf(x + 0.5 * self.ff2(x))


# ---------------- Tacotron 2 location-sensitive attention ----------------


class LocationAttention(nn.Module):
    """Tacotron 2 (NVIDIA's tacotron2) Attention.forward for one decoder step: the query
    layer, the location layer (Conv1d over cat(previous, cumulative) weights then Linear),
    the processed memory, tanh, v, masked_fill by the padding mask, softmax, bmm context"""
    def __init__(self, rnn=64, emb=32, att=32, filters=8, kernel=15):
        super().__init__()
        self.query_layer = nn.Linear(rnn, att, bias=False)
        self.memory_layer = nn.Linear(emb, att, bias=False)
        self.v = nn.Linear(att, 1, bias=False)
        self.location_conv = nn.Conv1d(2, filters, kernel, padding=(kernel - 1) // 2, bias=False)
        self.location_dense = nn.Linear(filters, att, bias=False)

    def forward(self, query, memory, weights_cat, lengths):
        processed_memory = self.memory_layer(memory)
        pq = self.query_layer(query.unsqueeze(1))
        loc = self.location_dense(self.location_conv(weights_cat).transpose(1, 2))
        energies = self.v(torch.tanh(pq + loc + processed_memory)).squeeze(-1)
        mask = torch.arange(memory.shape[1])[None, :] >= lengths[:, None]
        energies = energies.masked_fill(mask, -float("inf"))
        w = F.softmax(energies, dim=1)
        return torch.bmm(w.unsqueeze(1), memory).squeeze(1), w


# ---------------- FastSpeech length regulator ----------------


class LengthRegulator(nn.Module):
    """FastSpeech 2's variance adaptor front: a duration predictor (conv, ReLU, LayerNorm,
    twice, Linear) and the length regulator as ESPnet writes it for export: rounded
    durations, their cumsum, an alignment matrix (frame t in [start, end) of phone p) over
    a frame count given by the mel input, bmm with the phone states"""
    def __init__(self, d=32, k=3):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(d, d, k, padding=1), nn.Conv1d(d, d, k, padding=1)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.lin = nn.Linear(d, 1)

    def forward(self, x, frames):
        y = self.n1(F.relu(self.c1(x.transpose(1, 2))).transpose(1, 2))
        y = self.n2(F.relu(self.c2(y.transpose(1, 2))).transpose(1, 2))
        logd = self.lin(y).squeeze(-1)
        dur = torch.clamp(torch.round(torch.exp(logd) * 2.0), min=0)
        end = torch.cumsum(dur, 1)
        start = end - dur
        t = torch.arange(frames.shape[1], dtype=x.dtype)[None, :, None]
        align = ((t >= start[:, None, :]) & (t < end[:, None, :])).to(x.dtype)
        return torch.bmm(align, x), dur


# ---------------- RetNet ----------------


class RetNet(nn.Module):
    """RetNet's multi-scale retention, parallel form: per-head decay gamma, the decay
    mask gamma^(n - m) on the lower triangle normalized by its row sums' sqrt, a
    rotary-style xpos with sin / cos, retention scores normalized by their clamped row
    sums, GroupNorm over heads, a swish gate"""
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.hd = h, d // h
        self.q, self.k, self.v, self.g = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.o = nn.Linear(d, d, bias=False)
        self.gn = nn.GroupNorm(h, d)
        self.register_buffer("decay", torch.log(1 - 2 ** (-5 - torch.arange(h, dtype=torch.float))))
        self.register_buffer("angle", 1.0 / (10000 ** torch.linspace(0, 1, self.hd // 2)).repeat_interleave(2))
        self.ln, self.ff = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        b, s, d = x.shape
        idx = torch.arange(s, dtype=x.dtype)
        sin, cos = torch.sin(idx[:, None] * self.angle), torch.cos(idx[:, None] * self.angle)
        mask = torch.tril(torch.ones(s, s))
        dm = torch.masked_fill(idx[:, None] - idx[None, :], ~mask.bool(), float("inf"))
        dm = torch.exp(dm * self.decay[:, None, None])
        dm = torch.nan_to_num(dm)
        dm = dm / dm.sum(-1, keepdim=True).sqrt()

        def rot(t):
            t1, t2 = t[..., ::2], t[..., 1::2]
            return t * cos + torch.stack((-t2, t1), -1).flatten(-2) * sin
        q = rot(self.q(x).view(b, s, self.h, self.hd).transpose(1, 2))
        k = rot(self.k(x).view(b, s, self.h, self.hd).transpose(1, 2)) * self.hd ** -0.5
        v = self.v(x).view(b, s, self.h, self.hd).transpose(1, 2)
        qk = q @ k.transpose(-1, -2) * dm
        qk = qk / qk.detach().abs().sum(-1, keepdim=True).clamp(min=1)
        o = (qk @ v).transpose(1, 2).reshape(b * s, d)
        o = self.gn(o[..., None]).view(b, s, d)  # (n, c, 1): the exporter refuses (n, c)
        x = x + self.o(F.silu(self.g(x)) * o)
        return x + self.ff(self.ln(x))


# ---------------- xLSTM mLSTM ----------------


class MLSTM(nn.Module):
    """xLSTM's mLSTM cell, parallel stabilized form (parallel_stabilized_simple): input and
    forget gate pre-activations per head, log-sigmoid forget gates cumulated, the
    log decay matrix masked to the lower triangle, row max stabilization, normalizer
    max(|sum|, exp(-max)), a multi-head LayerNorm and an output gate"""
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.hd = h, d // h
        self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))
        self.ig, self.fg = nn.Linear(3 * d, h), nn.Linear(3 * d, h)
        self.og, self.o = nn.Linear(d, d), nn.Linear(d, d)
        self.norm = nn.GroupNorm(h, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        qkv = torch.cat([q, k, v], -1)
        ig = self.ig(qkv).transpose(1, 2)[..., None]  # (b, h, s, 1)
        fg = self.fg(qkv).transpose(1, 2)[..., None]
        q, k, v = (t.view(b, s, self.h, self.hd).transpose(1, 2) for t in (q, k, v))
        logf = F.logsigmoid(fg)
        ltr = torch.tril(torch.ones(s, s, dtype=torch.bool))
        cum = torch.cat([torch.zeros(b, self.h, 1, 1), torch.cumsum(logf, -2)], -2)
        mat = cum[:, :, 1:] - cum[:, :, 1:].transpose(-2, -1)
        logd = torch.where(ltr, mat, torch.tensor(-float("inf"))) + ig.transpose(-2, -1)
        mx = logd.amax(-1, keepdim=True)
        dmat = torch.exp(logd - mx)
        c = (q @ (k / math.sqrt(self.hd)).transpose(-2, -1)) * dmat
        n = torch.maximum(c.sum(-1, keepdim=True).abs(), torch.exp(-mx))
        hs = ((c / (n + 1e-6)) @ v).transpose(1, 2).reshape(b * s, d)
        hs = self.norm(hs[..., None]).view(b, s, d)
        return x + self.o(torch.sigmoid(self.og(x)) * hs)


# ---------------- Informer ProbSparse attention ----------------


class ProbAttention(nn.Module):
    """Informer's ProbAttention (mask_flag False): keys sampled at fixed indices (the
    random sample a buffer), the sparsity measure max - mean of the sampled scores,
    top-u queries by topk, their full attention, the rest of the context the mean of V,
    the top rows scattered in"""
    def __init__(self, d=32, h=4, factor=2):
        super().__init__()
        self.h, self.hd, self.factor = h, d // h, factor
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        g = torch.Generator().manual_seed(3)
        self.register_buffer("sample", torch.randint(0, 1 << 20, (4096, 64), generator=g))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (f(x).view(b, s, self.h, self.hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        u = min(self.factor * int(math.ceil(math.log(s))), s)
        idx = self.sample[:s, :u] % s  # (s, u)
        k_sample = k[:, :, idx, :]  # (b, h, s, u, e)
        qk_sample = (q.unsqueeze(-2) @ k_sample.transpose(-2, -1)).squeeze(-2)
        m = qk_sample.max(-1)[0] - qk_sample.sum(-1) / s
        top = m.topk(u, sorted=False)[1]  # (b, h, u)
        q_red = torch.gather(q, 2, top[..., None].expand(-1, -1, -1, self.hd))
        attn = torch.softmax(q_red @ k.transpose(-2, -1) / math.sqrt(self.hd), -1)
        ctx = v.mean(-2, keepdim=True).expand(-1, -1, s, -1).clone()
        ctx = ctx.scatter(2, top[..., None].expand(-1, -1, -1, self.hd), attn @ v)
        return self.o(ctx.transpose(1, 2).reshape(b, s, d))


# ---------------- DeepAR ----------------


class DeepAR(nn.Module):
    """GluonTS-style DeepAR: lagged target and time features through an embedding of the
    series id and a 2-layer LSTM, a Gaussian's mean and softplus scale, the target scaled
    by the mean absolute value, and the negative log-likelihood per step"""
    def __init__(self, feats=4, hid=32, series=10):
        super().__init__()
        self.emb = nn.Embedding(series, 4)
        self.lstm = nn.LSTM(1 + feats + 4, hid, 2, batch_first=True)
        self.mu, self.sigma = nn.Linear(hid, 1), nn.Linear(hid, 1)

    def forward(self, target, feats, sid):
        scale = target.abs().mean(1, keepdim=True).clamp(min=1e-3) + 1.0
        z = target / scale
        lag = torch.cat([torch.zeros_like(z[:, :1]), z[:, :-1]], 1)
        e = self.emb(sid)[:, None, :].expand(-1, target.shape[1], -1)
        h, _ = self.lstm(torch.cat([lag[..., None], feats, e], -1))
        mu, sigma = self.mu(h).squeeze(-1), F.softplus(self.sigma(h)).squeeze(-1) + 1e-3
        nll = 0.5 * ((z - mu) / sigma) ** 2 + torch.log(sigma) + 0.5 * math.log(2 * math.pi)
        return mu * scale, sigma * scale, nll


# ---------------- multi-query attention three ways ----------------


class MQA(nn.Module):
    """multi-query attention (one k / v head, Falcon-7B / StarCoder) three ways: expand of
    the k / v head (mode 0), broadcasting matmul over an unsqueezed head axis (mode 1),
    repeat (Tile) to every head (mode 2); causal by triu of -inf. (repeat_interleave over
    the head axis at a dynamic sequence is exported wrong by torch 1.13: a Reshape to
    [0, -1, 0, hd] of the 5-d expanded tensor copies the repeat count where the sequence
    belongs; ONNX Runtime fails at the MatMul too, so it is not a case.)"""
    def __init__(self, d=64, h=4, mode=0):
        super().__init__()
        self.h, self.hd, self.mode = h, d // h, mode
        self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * (d // h)), nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.h, self.hd).transpose(1, 2)
        k, v = self.kv(x).split(self.hd, -1)
        mask = torch.triu(torch.full((s, s), -float("inf")), 1)
        if self.mode == 0:
            k, v = k[:, None].expand(b, self.h, s, self.hd), v[:, None].expand(b, self.h, s, self.hd)
        elif self.mode == 1:
            k, v = k.unsqueeze(1), v.unsqueeze(1)
        else:
            k, v = k[:, None].repeat(1, self.h, 1, 1), v[:, None].repeat(1, self.h, 1, 1)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.hd) + mask, -1)
        return self.o((w @ v).transpose(1, 2).reshape(b, s, d))


# ---------------- Gumbel-softmax, top-2 router ----------------


class GumbelHead(nn.Module):
    """F.gumbel_softmax(hard=True) as written out with the noise as an input (uniform u):
    -log(-log(u)), softmax of (logits + g) / tau, the one-hot of its argmax by scatter,
    y_hard - y_soft.detach() + y_soft; a codebook lookup by the sample (DALL-E dVAE)"""
    def __init__(self, d=32, k=16, tau=0.7):
        super().__init__()
        self.proj, self.tau = nn.Linear(d, k), tau
        self.codebook = nn.Parameter(torch.randn(k, d))

    def forward(self, x, u):
        g = -torch.log(-torch.log(u.clamp(1e-9, 1 - 1e-7)))
        y = F.softmax((self.proj(x) + g) / self.tau, -1)
        idx = y.max(-1, keepdim=True)[1]
        hard = torch.zeros_like(y).scatter_(-1, idx, 1.0)
        y = hard - y.detach() + y
        return y @ self.codebook, idx.squeeze(-1)


class Top2Router(nn.Module):
    """a Switch / GShard top-2 MoE layer with dense dispatch: softmax router, topk(2),
    renormalized gates, one-hot masks of the chosen experts summed into a (tokens, experts)
    combine matrix, every expert run on every token by einsum of stacked weights, combined;
    the load-balancing loss"""
    def __init__(self, d=32, e=4, ff=64):
        super().__init__()
        self.e = e
        self.router = nn.Linear(d, e, bias=False)
        self.w1, self.w2 = nn.Parameter(torch.randn(e, d, ff) / math.sqrt(d)), nn.Parameter(torch.randn(e, ff, d) / math.sqrt(ff))

    def forward(self, x):
        b, s, d = x.shape
        t = x.reshape(-1, d)
        probs = self.router(t).softmax(-1)
        gates, idx = probs.topk(2, -1)
        gates = gates / gates.sum(-1, keepdim=True)
        combine = (F.one_hot(idx, self.e).to(x.dtype) * gates[..., None]).sum(1)  # (n, e)
        hid = F.gelu(torch.einsum("nd,edf->enf", t, self.w1))
        out = torch.einsum("enf,efd->end", hid, self.w2)
        y = torch.einsum("ne,end->nd", combine, out)
        frac = F.one_hot(idx[:, 0], self.e).to(x.dtype).mean(0)
        aux = (frac * probs.mean(0)).sum() * self.e
        return y.view(b, s, d), aux


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def img(name="x"):
        return {name: {0: "b", 2: "h", 3: "w"}}

    def seq(d, names=("x",)):
        return {n: {0: "b", 1: "s"} for n in names}
    z = {}
    ch = (64, 128, 256) if big else (16, 32, 64)
    z["rtdetr_encoder"] = Case(
        lambda: RTDETREncoder(ch, d=128 if big else 32, h=8 if big else 4),
        lambda b, s: (torch.randn(b, ch[0], 4 * s, 4 * s), torch.randn(b, ch[1], 2 * s, 2 * s),
                      torch.randn(b, ch[2], s, s)),
        ["s3", "s4", "s5"], ["p3", "p4", "p5"],
        {"s3": {0: "b", 2: "h3", 3: "w3"}, "s4": {0: "b", 2: "h4", 3: "w4"}, "s5": {0: "b", 2: "h5", 3: "w5"}},
        [11, 16, 17], [(2, 2), (1, 3)], (1, 20))
    z["edgenext"] = Case(
        lambda: EdgeNeXt(d=96, classes=1000) if big else EdgeNeXt(), lambda b, s: (torch.randn(b, 3, s, s + 8),),
        ["x"], ["y"], img(), [11, 13], [(2, 16), (1, 24)], (2, 224))
    z["twins"] = Case(
        lambda: Twins(d=64, h=2, ws=7, sr=4, classes=1000) if big else Twins(),
        lambda b, s: (torch.randn(b, 3, s, s + (28 if big else 16)),), ["img"], ["y"], img("img"), 13,
        [(2, 16), (1, 32)], (2, 224))
    z["pvt_v2"] = Case(
        lambda: PVTv2((64, 128), (1, 2), (8, 4), 1000) if big else PVTv2(),
        lambda b, s: (torch.randn(b, 3, s, s + 16),), ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (2, 224))
    z["beit"] = Case(  # the bias table fixes the patch grid: dynamic batch only
        lambda: BEiT(d=192, h=3, p=16, img=224, layers=2, classes=1000) if big else BEiT(),
        lambda b, s: (torch.randn(b, 3, 224 if big else 16, 224 if big else 16),), ["x"], ["y"],
        {"x": {0: "b"}}, [13, 17], [(2, 0), (3, 0)], (4, 0))
    z["conformer_block"] = Case(
        lambda: ConformerBlock(d=256, h=4, k=31) if big else ConformerBlock(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32), torch.clamp(s - 3 * torch.arange(b), min=1)),
        ["x", "lengths"], ["y"], {"x": {0: "b", 1: "s"}, "lengths": {0: "b"}}, [11, 14], [(2, 9), (3, 12)], (2, 400))
    z["tacotron_attn"] = Case(
        lambda: LocationAttention(1024, 512, 128, 32, 31) if big else LocationAttention(),
        lambda b, t: (torch.randn(b, 1024 if big else 64), torch.randn(b, t, 512 if big else 32),
                      torch.softmax(torch.randn(b, 2, t), -1), torch.clamp(t - 2 * torch.arange(b), min=1)),
        ["query", "memory", "weights_cat", "lengths"], ["context", "weights"],
        {"query": {0: "b"}, "memory": {0: "b", 1: "t"}, "weights_cat": {0: "b", 2: "t"}, "lengths": {0: "b"}},
        [11, 13], [(2, 11), (3, 17)], (16, 200))
    z["length_regulator"] = Case(
        lambda: LengthRegulator(d=256) if big else LengthRegulator(),
        lambda b, p: (torch.randn(b, p, 256 if big else 32), torch.zeros(b, 4 * p, 1)), ["x", "frames"],
        ["mel", "dur"], {"x": {0: "b", 1: "p"}, "frames": {0: "b", 1: "t"}}, [11, 13], [(2, 7), (1, 12)], (8, 128))
    z["retnet"] = Case(
        lambda: RetNet(d=512, h=8) if big else RetNet(),
        lambda b, s: (torch.randn(b, s, 512 if big else 32),), ["x"], ["y"], seq(0), [14, 17], [(2, 9), (1, 14)], (2, 256))
    z["mlstm"] = Case(
        lambda: MLSTM(d=512, h=4) if big else MLSTM(),
        lambda b, s: (torch.randn(b, s, 512 if big else 32),), ["x"], ["y"], seq(0), [14, 17], [(2, 9), (1, 14)], (2, 256))
    z["informer_prob"] = Case(  # u = 2 ceil(ln s) is fixed at export: s varies in [e^2, e^3)
        lambda: ProbAttention(d=512, h=8, factor=5) if big else ProbAttention(),
        lambda b, s: (torch.randn(b, s, 512 if big else 32),), ["x"], ["y"], {"x": {0: "b"}}, [11, 13],
        [(2, 9), (3, 9)], (4, 96))
    z["deepar"] = Case(
        lambda: DeepAR(feats=4, hid=40, series=370) if big else DeepAR(),
        lambda b, t: (torch.randn(b, t) * 5 + 10, torch.randn(b, t, 4), torch.randint(0, 10, (b,))),
        ["target", "feats", "sid"], ["mu", "sigma", "nll"],
        {"target": {0: "b", 1: "t"}, "feats": {0: "b", 1: "t"}, "sid": {0: "b"}}, [11, 13], [(2, 9), (3, 14)], (64, 168))
    for mode, name in enumerate(("mqa_expand", "mqa_broadcast", "mqa_tile")):
        z[name] = Case(
            lambda mode=mode: MQA(d=1024, h=16, mode=mode) if big else MQA(mode=mode),
            lambda b, s: (torch.randn(b, s, 1024 if big else 64),), ["x"], ["y"], seq(0), 14,
            [(2, 9), (1, 6)], (1, 256))
    z["gumbel_head"] = Case(
        lambda: GumbelHead(d=256, k=8192) if big else GumbelHead(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32), torch.rand(b, s, 8192 if big else 16)), ["x", "u"],
        ["z", "idx"], seq(0, ("x", "u")), [11, 13], [(2, 9), (1, 6)], (1, 256))
    z["top2_router"] = Case(
        lambda: Top2Router(d=256, e=8, ff=512) if big else Top2Router(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32),), ["x"], ["y", "aux"], seq(0), [12, 13],
        [(2, 9), (1, 6)], (2, 128))
    # zoo_models7b.py
    z["c2f_net"] = Case(
        lambda: C2fNet(w=32) if big else C2fNet(), lambda b, s: (torch.randn(b, 3, s, s + 32),), ["images"],
        ["p3", "p4", "p5"], img("images"), [11, 13, 17], [(2, 32), (1, 64)], (1, 640))
    z["pp_lcnet"] = Case(
        lambda: PPLCNet(scale=1.0, classes=1000) if big else PPLCNet(), lambda b, s: (torch.randn(b, 3, s, s),),
        ["x"], ["y"], img(), [13, 14], [(2, 32), (1, 48)], (1, 224))
    for form in ("bn", "folded", "ln2d", "gn1"):
        z["convblock_" + form] = Case(
            lambda form=form: ConvBlockForms(form, c=64) if big else ConvBlockForms(form),
            lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"], ["y"], img(), 13, [(2, 16), (1, 12)], (2, 224))
    z["coatnet"] = Case(  # the relative bias table fixes the attention grid
        lambda: CoAtNet(c=64, img=224) if big else CoAtNet(), lambda b, s: (torch.randn(b, 3, 224 if big else 32,
                                                                                          224 if big else 32),),
        ["x"], ["y"], {"x": {0: "b"}}, 13, [(2, 0), (1, 0)], (2, 0))
    z["efficientvit"] = Case(
        lambda: EfficientViT(c=64, classes=1000) if big else EfficientViT(), lambda b, s: (torch.randn(b, 3, s, s + 8),),
        ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (2, 224))
    z["van"] = Case(
        lambda: VAN(c=64, classes=1000) if big else VAN(), lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"], ["y"],
        img(), [11, 13], [(2, 16), (1, 24)], (2, 224))
    z["film"] = Case(
        lambda: FiLMNet(c=128, q=256) if big else FiLMNet(),
        lambda b, s: (torch.randn(b, 3, s, s), torch.randn(b, 256 if big else 16)), ["img", "question"], ["y"],
        {"img": {0: "b", 2: "h", 3: "w"}, "question": {0: "b"}}, [11, 13], [(2, 16), (3, 12)], (4, 64))
    z["point_transformer"] = Case(
        lambda: PointTransformer(c=64, k=16) if big else PointTransformer(),
        lambda b, n: (torch.randn(b, n, 3),), ["xyz"], ["y"], {"xyz": {0: "b", 1: "n"}}, [11, 13], [(2, 24), (1, 40)],
        (2, 1024))
    z["hubert_feat"] = Case(
        lambda: HuBERTFeat(c=512, d=768) if big else HuBERTFeat(), lambda b, t: (torch.randn(b, t),), ["wav"],
        ["y"], {"wav": {0: "b", 1: "t"}}, [11, 13], [(2, 800), (1, 1200)], (1, 32000))
    z["nerf_posenc"] = Case(
        lambda: NeRFPosEnc(w=256) if big else NeRFPosEnc(),
        lambda b, s: (torch.rand(b, 3) * 2 - 1, F.normalize(torch.randn(b, 3), dim=-1)), ["xyz", "dirs"],
        ["rgb", "sigma"], {"xyz": {0: "b"}, "dirs": {0: "b"}}, 13, [(7, 0), (30, 0)], (65536, 0))
    # zoo_models7c.py
    z["bilstm_crf"] = Case(  # the CRF is unrolled over the sequence: dynamic batch only
        lambda: BiLSTMCRF(vocab=5000, d=100, hid=128, tags=9) if big else BiLSTMCRF(),
        lambda b, s: (torch.randint(0, 5000 if big else 50, (b, 32 if big else 6)),
                      torch.randint(0, 9 if big else 5, (b, 32 if big else 6))),
        ["ids", "gold"], ["nll", "path", "best"], {"ids": {0: "b"}, "gold": {0: "b"}}, [11, 13],
        [(2, 0), (3, 0)], (64, 0))
    z["logsumexp_forms"] = Case(
        lambda: LogSumExpForms(d=256) if big else LogSumExpForms(),
        lambda b, s: (torch.randn(b, s, 256 if big else 16), torch.arange(s)[None, :].expand(b, s) % 3 == 1),
        ["x", "mask"], ["lse", "lse2", "lse_masked"], {"x": {0: "b", 1: "s"}, "mask": {0: "b", 1: "s"}}, [11, 13, 17],
        [(2, 7), (3, 4)], (64, 512))
    z["spherical_points"] = Case(
        lambda: SphericalPoints(c=128, bins=64) if big else SphericalPoints(),
        lambda b, n: (torch.randn(b, n, 3),), ["xyz"], ["y", "bins"], {"xyz": {0: "b", 1: "n"}}, [11, 13],
        [(2, 24), (1, 40)], (8, 16384))
    z["act_zoo"] = Case(
        lambda: ActZoo(d=512, c=32) if big else ActZoo(),
        lambda b, s: (torch.randn(b, 512 if big else 32), torch.randn(b, 3, s, s)), ["x", "img"],
        ["y", "shr", "conv"], {"x": {0: "b"}, "img": {0: "b", 2: "h", 3: "w"}}, [12, 13, 17],
        [(3, 8), (2, 12)], (256, 128))
    z["hash_embed"] = Case(
        lambda: HashEmbed(vocab=10000, buckets=200003, d=64) if big else HashEmbed(),
        lambda b, s: (torch.randint(0, 1 << 20, (b, s)),), ["chars"], ["y", "grams"], {"chars": {0: "b", 1: "s"}},
        [11, 13], [(2, 9), (3, 5)], (512, 64))
    z["bag_offsets"] = Case(
        lambda: BagOffsets(n=100000, d=64) if big else BagOffsets(),
        lambda m, n: (torch.randint(0, 100000 if big else 1000, (n,)), bag_offsets(m, n), torch.rand(n)),
        ["ids", "offsets", "weights"], ["sum", "mean", "weighted", "dot"],
        {"ids": {0: "n"}, "offsets": {0: "m"}, "weights": {0: "n"}}, [11, 13], [(5, 23), (8, 40)],
        (256, 8192))
    z["pillar_scatter"] = Case(
        lambda: PillarScatter(c=64, nx=432, ny=496) if big else PillarScatter(),
        lambda p, m: (torch.randn(p, m, 4), (torch.rand(p, m) > 0.3).float(),
                      (lambda k: torch.stack([k // (432 if big else 16), k % (432 if big else 16)], 1))(
                          torch.randperm((496 * 432) if big else 192)[:p])),
        ["points", "mask", "coords"], ["canvas", "counts"],
        {"points": {0: "p"}, "mask": {0: "p"}, "coords": {0: "p"}}, [11, 13, 16], [(20, 8), (33, 8)],
        (12000, 32))
    return z
