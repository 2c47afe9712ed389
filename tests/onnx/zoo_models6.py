"""zoo_models6.py — the sixth round: models the earlier rounds (zoo_models.py to
zoo_models5b.py) do not cover, several written two ways. Spatial transformers (the
localization net's theta, an affine grid and grid_sample at opset 16, the grid written
out with linspace and bmm, and with meshgrid and einsum: torch 1.13 exports neither
F.affine_grid nor torch.stft), an audio front end two ways (frames gathered by a
computed index times DFT matrices with a mel matrix, and torchlibrosa's DFT-as-conv1d
with reflect padding, power to dB and a DCT to MFCCs), a top-k / top-p sampling head (sort, cumsum of the softmax, a shifted mask
scattered back), GPT-J's interleaved partial rotary (x[..., ::2]) with the causal buffer
sliced by the sequence and its parallel MLP, Performer's FAVOR+ random features, KAN's
B-spline bases (efficient-kan), SIREN, SuperGlue's log-space Sinkhorn with dustbins,
TFT's variable selection network and interpretable attention, gMLP's spatial gating unit,
ResMLP, a ViT with its 2-d sin-cos position table computed from the run-time grid,
MaxViT's block and grid attention, bicubic and align_corners interpolation, F.unfold
(involution). In zoo_models6b.py: RepVGG and MobileOne in their training-time branch
form, EfficientNetV2's fused MBConv, StyleGAN2's modulated conv two ways (per-sample
weights as one grouped conv, and x * style around a shared conv), Real-ESRGAN's RRDB
with pixel_unshuffle, NAFNet, CBAM, SKNet, WaveNet, ConvLSTM, YOLOX's grid decode, BiT's
standardized convs, a 3-d U-Net (trilinear and nearest Resize of 5-d volumes), Conv3d
forms. Written out
in plain torch.nn (none of those packages is installed here); each class follows its
source's forward.

Same Case as tests/onnx/zoo_models.py; used by tests/onnx/test_torch_zoo.py --module
zoo_models6 (ctest onnx_torch_zoo6) and tests/bench/bench_torch_blocks.py (zoo6:NAME).
"""
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case
from zoo_models6b import (CBAMNet, ConvLSTM, EfficientNetV2, MobileOne, NAFNet, RealESRGAN, RepVGG, SKNet,
                          StdConvGN, StyleGAN2, StyleUnfused, UNet3D, WaveNet, YOLOXDecode, Conv3dForms)


# ---------------- spatial transformers ----------------


class STN(nn.Module):
    """the PyTorch spatial transformer tutorial (its AdaptiveAvgPool2d(1): a pooled size
    other than 1 does not export at dynamic sizes): a localization net to theta (b, 2, 3),
    the affine grid over the input's size, F.grid_sample, then a small classifier. torch
    1.13 does not export F.affine_grid (aten::affine_grid_generator), so the grid is
    written out two ways: meshgrid of pixel centres and einsum (align_corners=False, zeros
    padding), or linspace and bmm (align_corners=True, border padding)."""
    def __init__(self, c=8, manual=False):
        super().__init__()
        self.manual = manual
        self.loc = nn.Sequential(nn.Conv2d(1, c, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(),
                                 nn.Conv2d(c, c, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(c, 32), nn.ReLU(), nn.Linear(32, 6))
        nn.init.normal_(self.fc[2].weight, std=0.01)
        self.fc[2].bias.data.copy_(torch.tensor([1.0, 0.1, 0.05, -0.1, 0.9, -0.05]))
        self.cls = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def grid(self, theta, x):
        b, _, h, w = x.shape
        if not self.manual:  # F.affine_grid's base (align_corners=False) by meshgrid, einsum
            ys, xs = torch.meshgrid((torch.arange(h) * 2 + 1) / h - 1, (torch.arange(w) * 2 + 1) / w - 1,
                                    indexing="ij")
            base = torch.stack([xs, ys, torch.ones_like(xs)], -1)
            return torch.einsum("hwk,bjk->bhwj", base, theta)
        ys, xs = torch.linspace(-1, 1, h), torch.linspace(-1, 1, w)  # align_corners=True's base
        base = torch.stack([xs[None, :].expand(h, w), ys[:, None].expand(h, w), torch.ones(h, w)], -1)
        return torch.bmm(base.view(1, h * w, 3).expand(b, h * w, 3), theta.transpose(1, 2)).view(b, h, w, 2)

    def forward(self, x):
        theta = self.fc(self.loc(x).flatten(1)).view(-1, 2, 3)
        y = F.grid_sample(x, self.grid(theta, x), align_corners=self.manual,
                          padding_mode="border" if self.manual else "zeros")
        return y, self.cls(y).flatten(1)


# ---------------- audio front ends ----------------


def mel_matrix(sr, n_fft, mels, fmin=0.0, fmax=None):
    """librosa's Slaney-free HTK mel filter bank (freqs, mels), computed in NumPy"""
    fmax = fmax or sr / 2
    def hz2mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)
    pts = 700.0 * (10 ** (np.linspace(hz2mel(fmin), hz2mel(fmax), mels + 2) / 2595.0) - 1)
    freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    lo, ce, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
    fb = np.maximum(0, np.minimum((freqs - lo) / (ce - lo), (hi - freqs) / (hi - ce)))
    return torch.tensor(fb.T, dtype=torch.float32)


class FramesMel(nn.Module):
    """the STFT as frames times DFT matrices (torch 1.13 does not export torch.stft, nor
    Tensor.unfold at a dynamic length): reflect padding as center=True does, frames
    gathered by a computed (frames, n_fft) index, a
    Hann window, rfft as matmuls with cos and sin, power, mel matrix, log, then a 2-layer
    conv classifier over time"""
    def __init__(self, n_fft=64, hop=16, mels=16, c=16):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        n, f = torch.arange(n_fft, dtype=torch.float64), torch.arange(n_fft // 2 + 1, dtype=torch.float64)
        ang = 2 * math.pi * n[:, None] * f[None, :] / n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("cos", torch.cos(ang).float())
        self.register_buffer("sin", -torch.sin(ang).float())
        self.register_buffer("fb", mel_matrix(16000, n_fft, mels))
        self.conv = nn.Sequential(nn.Conv1d(mels, c, 3, padding=1), nn.ReLU(), nn.Conv1d(c, c, 3, padding=1))

    def forward(self, wav):
        x = F.pad(wav[:, None], (self.n_fft // 2, self.n_fft // 2), mode="reflect")[:, 0]
        n = (x.shape[1] - self.n_fft) // self.hop + 1
        frames = x[:, torch.arange(n)[:, None] * self.hop + torch.arange(self.n_fft)[None, :]] * self.window
        power = (frames @ self.cos) ** 2 + (frames @ self.sin) ** 2  # (b, frames, freqs)
        mel = torch.log(torch.clamp(power @ self.fb, min=1e-10))
        return mel, self.conv(mel.transpose(1, 2))


class ConvMFCC(nn.Module):
    """torchlibrosa's STFT as two conv1d (cos and sin DFT bases times a Hann window),
    reflect padding, power, mel, 10 log10 with a clamp and top_db, a DCT-II matrix"""
    def __init__(self, n_fft=64, hop=16, mels=16, mfcc=10):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        n, f = np.arange(n_fft), np.arange(n_fft // 2 + 1)
        win = np.hanning(n_fft + 1)[:-1]
        ang = 2 * np.pi * np.outer(f, n) / n_fft
        self.register_buffer("wr", torch.tensor((np.cos(ang) * win)[:, None], dtype=torch.float32))
        self.register_buffer("wi", torch.tensor((-np.sin(ang) * win)[:, None], dtype=torch.float32))
        self.register_buffer("fb", mel_matrix(16000, n_fft, mels))
        k = np.arange(mels)
        dct = np.cos(np.pi / mels * (k[None, :] + 0.5) * np.arange(mfcc)[:, None]) * np.sqrt(2.0 / mels)
        dct[0] /= np.sqrt(2.0)
        self.register_buffer("dct", torch.tensor(dct.T, dtype=torch.float32))

    def forward(self, wav):
        x = F.pad(wav[:, None, :], (self.n_fft // 2, self.n_fft // 2), mode="reflect")
        real, imag = F.conv1d(x, self.wr, stride=self.hop), F.conv1d(x, self.wi, stride=self.hop)
        power = (real ** 2 + imag ** 2).transpose(1, 2)  # (b, frames, freqs)
        db = 10.0 * torch.log10(torch.clamp(power @ self.fb, min=1e-10))
        db = torch.max(db, db.amax(dim=(1, 2), keepdim=True) - 80.0)
        return db @ self.dct


# ---------------- sampling, rotary, kernels ----------------


class TopPHead(nn.Module):
    """Hugging Face's TopKLogitsWarper + TopPLogitsWarper after a temperature, then the
    greedy pick and the filtered distribution"""
    def __init__(self, d=32, vocab=100, k=20, p=0.9, temp=0.7):
        super().__init__()
        self.proj, self.k, self.p, self.temp = nn.Linear(d, vocab), k, p, temp

    def forward(self, h):
        logits = self.proj(h) / self.temp
        remove = logits < torch.topk(logits, self.k)[0][..., -1, None]
        logits = logits.masked_fill(remove, -float("inf"))
        sorted_logits, sorted_idx = torch.sort(logits, descending=True)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_remove = cum > self.p
        sorted_remove = torch.cat([torch.zeros_like(sorted_remove[..., :1]), sorted_remove[..., :-1]], -1)
        remove = sorted_remove.scatter(1, sorted_idx, sorted_remove)
        logits = logits.masked_fill(remove, -float("inf"))
        probs = logits.softmax(-1)
        return probs, probs.argmax(-1)


def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJ(nn.Module):
    """Hugging Face GPT-J's block: partial interleaved rotary (rotate_every_two on the first
    rot dims of (b, s, h, d)), sin / cos repeated by repeat_interleave, the causal bias
    buffer sliced by the sequence, torch.where with finfo.min, attention and MLP in
    parallel off one LayerNorm"""
    def __init__(self, d=64, h=4, rot=8, ctx=256):
        super().__init__()
        self.h, self.hd, self.rot = h, d // h, rot
        self.ln = nn.LayerNorm(d)
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.o = nn.Linear(d, d, bias=False)
        self.fc_in, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)).view(1, 1, ctx, ctx))
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        self.register_buffer("inv_freq", inv)

    def rope(self, x, sin, cos):
        xr, xp = x[..., :self.rot], x[..., self.rot:]
        return torch.cat([xr * cos + rotate_every_two(xr) * sin, xp], -1)

    def forward(self, x):
        b, s, _ = x.shape
        hs = self.ln(x)
        sinus = torch.einsum("i,j->ij", torch.arange(s, dtype=torch.float), self.inv_freq)
        sin = torch.repeat_interleave(sinus.sin()[None, :, None, :], 2, 3)
        cos = torch.repeat_interleave(sinus.cos()[None, :, None, :], 2, 3)
        q = self.rope(self.q(hs).view(b, s, self.h, self.hd), sin, cos).permute(0, 2, 1, 3)
        k = self.rope(self.k(hs).view(b, s, self.h, self.hd), sin, cos).permute(0, 2, 1, 3)
        v = self.v(hs).view(b, s, self.h, self.hd).permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = torch.where(self.bias[:, :, :s, :s], w, torch.tensor(torch.finfo(w.dtype).min)) / math.sqrt(self.hd)
        a = torch.matmul(w.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, s, -1)
        return x + self.o(a) + self.fc_out(F.gelu(self.fc_in(hs), approximate="tanh"))


class Performer(nn.Module):
    """Performer's FAVOR+ (lucidrains/performer-pytorch softmax_kernel and
    linear_attention): positive random features exp(w.x - |x|^2 / 2 - max) with the
    query's max per row and the key's over the whole head, einsum contractions"""
    def __init__(self, d=64, h=4, m=32):
        super().__init__()
        self.h = h
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("proj", torch.randn(m, d // h))

    def features(self, x, query):
        norm = x.shape[-1] ** -0.25
        ratio = self.proj.shape[0] ** -0.5
        dash = torch.einsum("...id,jd->...ij", norm * x, self.proj)
        diag = ((x ** 2).sum(-1) / 2.0 * norm ** 2).unsqueeze(-1)
        mx = dash.amax(-1, keepdim=True) if query else dash.amax(dim=(-1, -2), keepdim=True)
        return ratio * (torch.exp(dash - diag - mx) + 1e-4)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k = self.features(q, True), self.features(k, False)
        d_inv = 1.0 / torch.einsum("...nd,...d->...n", q, k.sum(-2))
        context = torch.einsum("...nd,...ne->...de", k, v)
        out = torch.einsum("...de,...nd,...n->...ne", context, q, d_inv)
        return self.o(out.transpose(1, 2).reshape(b, n, d))


class KANLinear(nn.Module):
    """efficient-kan's KANLinear: SiLU base branch plus cubic B-spline bases by the
    Cox-de Boor recursion over a uniform grid, one matmul over (in * bases)"""
    def __init__(self, i, o, grid=5, order=3):
        super().__init__()
        self.i, self.o, self.order = i, o, order
        h = 2.0 / grid
        self.register_buffer("grid", (torch.arange(-order, grid + order + 1) * h - 1.0).expand(i, -1).contiguous())
        self.base_weight = nn.Parameter(torch.randn(o, i) / math.sqrt(i))
        self.spline_weight = nn.Parameter(torch.randn(o, i, grid + order) * 0.1)
        self.spline_scaler = nn.Parameter(torch.randn(o, i))

    def b_splines(self, x):
        g = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= g[:, :-1]) & (x < g[:, 1:])).to(x.dtype)
        for k in range(1, self.order + 1):
            bases = ((x - g[:, :-(k + 1)]) / (g[:, k:-1] - g[:, :-(k + 1)]) * bases[:, :, :-1]) + \
                    ((g[:, k + 1:] - x) / (g[:, k + 1:] - g[:, 1:-k]) * bases[:, :, 1:])
        return bases

    def forward(self, x):
        base = F.linear(F.silu(x), self.base_weight)
        w = (self.spline_weight * self.spline_scaler.unsqueeze(-1)).view(self.o, -1)
        return base + F.linear(self.b_splines(x).view(x.size(0), -1), w)


class KAN(nn.Module):
    def __init__(self, dims=(8, 16, 4)):
        super().__init__()
        self.layers = nn.ModuleList(KANLinear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        x = torch.tanh(x)
        for layer in self.layers:
            x = layer(x)
        return x


class SIREN(nn.Module):
    """SIREN (vsitzmann/siren SineLayer): sin(30 * (W x + b)) layers, the first initialized
    over [-1/in, 1/in], a linear out; coordinates in, values out"""
    def __init__(self, i=2, hid=64, layers=3, o=3, w0=30.0):
        super().__init__()
        self.w0 = w0
        self.net = nn.ModuleList(nn.Linear(i if k == 0 else hid, hid) for k in range(layers))
        for k, lin in enumerate(self.net):
            bound = 1 / i if k == 0 else math.sqrt(6 / hid) / w0
            nn.init.uniform_(lin.weight, -bound, bound)
        self.out = nn.Linear(hid, o)

    def forward(self, coords):
        x = coords
        for lin in self.net:
            x = torch.sin(self.w0 * lin(x))
        return self.out(x)


def log_sinkhorn(z, log_mu, log_nu, iters):
    u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
    for _ in range(iters):
        u = log_mu - torch.logsumexp(z + v.unsqueeze(1), dim=2)
        v = log_nu - torch.logsumexp(z + u.unsqueeze(2), dim=1)
    return z + u.unsqueeze(2) + v.unsqueeze(1)


class SuperGlueOT(nn.Module):
    """SuperGlue's matching (magicleap SuperGluePretrainedNetwork): a final Conv1d
    projection, scores by einsum / sqrt(d), log_optimal_transport with a learned dustbin
    (cat of expanded bins, the marginals from the point counts m and n), 5 Sinkhorn
    iterations, then mutual nearest matches by max / gather"""
    def __init__(self, d=32, iters=5):
        super().__init__()
        self.d, self.iters = d, iters
        self.proj = nn.Conv1d(d, d, 1)
        self.bin_score = nn.Parameter(torch.tensor(1.0))

    def forward(self, desc0, desc1):
        md0, md1 = self.proj(desc0), self.proj(desc1)
        scores = torch.einsum("bdn,bdm->bnm", md0, md1) / self.d ** 0.5
        b, m, n = scores.shape
        one = scores.new_tensor(1)
        ms, ns = (m * one).to(scores), (n * one).to(scores)
        alpha = self.bin_score
        bins0, bins1, alpha = alpha.expand(b, m, 1), alpha.expand(b, 1, n), alpha.expand(b, 1, 1)
        couplings = torch.cat([torch.cat([scores, bins0], -1), torch.cat([bins1, alpha], -1)], 1)
        norm = -(ms + ns).log()
        log_mu = torch.cat([norm.expand(m), ns.log()[None] + norm])
        log_nu = torch.cat([norm.expand(n), ms.log()[None] + norm])
        z = log_sinkhorn(couplings, log_mu[None].expand(b, -1), log_nu[None].expand(b, -1), self.iters) - norm
        max0, max1 = z[:, :-1, :-1].max(2), z[:, :-1, :-1].max(1)
        idx0, idx1 = max0.indices, max1.indices
        mutual0 = torch.arange(m)[None] == idx1.gather(1, idx0)
        mscores0 = torch.where(mutual0, max0.values.exp(), torch.zeros_like(max0.values))
        return z, torch.where(mutual0, idx0, torch.full_like(idx0, -1)), mscores0


# ---------------- tabular, MLP and attention variants ----------------


class GRN(nn.Module):
    """TFT's gated residual network: Linear, ELU, Linear, GLU, add the (projected) skip,
    LayerNorm"""
    def __init__(self, i, hid, o):
        super().__init__()
        self.fc1, self.fc2, self.glu = nn.Linear(i, hid), nn.Linear(hid, hid), nn.Linear(hid, 2 * o)
        self.skip = nn.Linear(i, o) if i != o else None
        self.norm = nn.LayerNorm(o)

    def forward(self, x):
        y = F.glu(self.glu(self.fc2(F.elu(self.fc1(x)))), dim=-1)
        return self.norm(y + (x if self.skip is None else self.skip(x)))


class TFT(nn.Module):
    """Temporal Fusion Transformer's variable selection network (a GRN over the flattened
    variables to softmax weights, one GRN per variable, the weighted sum) and its
    interpretable multi-head attention (one value projection shared by the heads, the
    heads' outputs averaged) under a causal mask"""
    def __init__(self, nvars=5, d=32, h=4):
        super().__init__()
        self.nvars, self.d, self.h = nvars, d, h
        self.embed = nn.Linear(1, d)
        self.select = GRN(nvars * d, d, nvars)
        self.var_grns = nn.ModuleList(GRN(d, d, d) for _ in range(nvars))
        self.qs, self.ks = nn.ModuleList(nn.Linear(d, d) for _ in range(h)), nn.ModuleList(nn.Linear(d, d) for _ in range(h))
        self.v, self.o = nn.Linear(d, d), nn.Linear(d, d)
        self.post = GRN(d, d, d)

    def forward(self, x):
        b, t, _ = x.shape
        e = self.embed(x.unsqueeze(-1))  # (b, t, nvars, d)
        w = torch.softmax(self.select(e.flatten(2)), dim=-1).unsqueeze(-1)
        vs = torch.stack([g(e[:, :, k]) for k, g in enumerate(self.var_grns)], dim=2)
        hdn = (w * vs).sum(2)
        mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
        v = self.v(hdn)
        heads = []
        for q, k in zip(self.qs, self.ks):
            a = torch.matmul(q(hdn), k(hdn).transpose(1, 2)) / math.sqrt(self.d)
            heads.append(torch.matmul(torch.softmax(a.masked_fill(mask, -1e9), -1), v))
        return self.post(hdn + self.o(torch.stack(heads, 2).mean(2))), w.squeeze(-1)


class GMLP(nn.Module):
    """gMLP (lucidrains/g-mlp-pytorch): the spatial gating unit splits channels, normalizes
    the gate half and mixes it across the sequence with a Conv1d(seq, seq, 1) whose
    weights start near zero and bias at one"""
    def __init__(self, d=32, ff=64, seq=16, layers=2):
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.ins = nn.ModuleList(nn.Linear(d, 2 * ff) for _ in range(layers))
        self.gnorms = nn.ModuleList(nn.LayerNorm(ff) for _ in range(layers))
        self.mix = nn.ModuleList(nn.Conv1d(seq, seq, 1) for _ in range(layers))
        for m in self.mix:
            nn.init.uniform_(m.weight, -0.01, 0.01)
            nn.init.constant_(m.bias, 1.0)
        self.outs = nn.ModuleList(nn.Linear(ff, d) for _ in range(layers))

    def forward(self, x):
        for norm, fin, gn, mix, fout in zip(self.norms, self.ins, self.gnorms, self.mix, self.outs):
            u, v = F.gelu(fin(norm(x))).chunk(2, dim=-1)
            x = x + fout(u * mix(gn(v)))
        return x


class ResMLP(nn.Module):
    """ResMLP (facebookresearch/deit resmlp_models): Affine in place of norms, a Linear
    across the patches between transposes, layer scales"""
    def __init__(self, d=32, p=4, img=16, layers=2, classes=10):
        super().__init__()
        n = (img // p) ** 2
        self.patch = nn.Conv2d(3, d, p, p)
        self.a1 = nn.ParameterList(nn.Parameter(torch.rand(2, d) + 0.5) for _ in range(layers))
        self.a2 = nn.ParameterList(nn.Parameter(torch.rand(2, d) + 0.5) for _ in range(layers))
        self.tokens = nn.ModuleList(nn.Linear(n, n) for _ in range(layers))
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                  for _ in range(layers))
        self.ls1 = nn.ParameterList(nn.Parameter(torch.full((d,), 0.1)) for _ in range(layers))
        self.ls2 = nn.ParameterList(nn.Parameter(torch.full((d,), 0.1)) for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        for a1, a2, tok, mlp, l1, l2 in zip(self.a1, self.a2, self.tokens, self.mlps, self.ls1, self.ls2):
            x = x + l1 * tok((a1[0] * x + a1[1]).transpose(1, 2)).transpose(1, 2)
            x = x + l2 * mlp(a2[0] * x + a2[1])
        return self.head(x.mean(1))


def posemb_sincos_2d(h, w, dim, temperature=10000):
    """lucidrains/vit-pytorch simple_vit's table, from the run-time grid size"""
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    omega = torch.arange(dim // 4) / (dim // 4 - 1)
    omega = 1.0 / (temperature ** omega)
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1)


class SimpleViT(nn.Module):
    """SimpleViT: patches by reshape / permute (einops' rearrange written out), the sin-cos
    table of the actual (h / p, w / p) grid added, one pre-norm encoder layer, mean pool"""
    def __init__(self, d=32, p=4, h=4, classes=10):
        super().__init__()
        self.p, self.d = p, d
        self.embed = nn.Sequential(nn.LayerNorm(3 * p * p), nn.Linear(3 * p * p, d), nn.LayerNorm(d))
        self.layer = nn.TransformerEncoderLayer(d, h, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        b, c, hh, ww = img.shape
        gh, gw = hh // self.p, ww // self.p
        x = img.view(b, c, gh, self.p, gw, self.p).permute(0, 2, 4, 3, 5, 1).reshape(b, gh * gw, -1)
        x = self.embed(x) + posemb_sincos_2d(gh, gw, self.d)
        return self.head(self.layer(x).mean(1))


class MaxViTAttn(nn.Module):
    """MaxViT's block attention then grid attention (lucidrains/vit-pytorch max_vit):
    (b, d, x * w1, y * w2) -> windows of w1 x w2 and the strided grid, each with a
    relative position bias gathered by a constant index"""
    def __init__(self, d=32, h=4, w=4):
        super().__init__()
        self.h, self.w = h, w
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(2))
        self.o = nn.ModuleList(nn.Linear(d, d) for _ in range(2))
        self.norm = nn.ModuleList(nn.LayerNorm(d) for _ in range(2))
        self.table = nn.Parameter(torch.randn(2, (2 * w - 1) ** 2, h) * 0.1)
        pos = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        rel = (pos[:, :, None] - pos[:, None, :]).permute(1, 2, 0) + w - 1
        self.register_buffer("idx", rel[..., 0] * (2 * w - 1) + rel[..., 1])

    def attend(self, t, k):
        n = t.shape[-2]
        q, kk, v = self.qkv[k](self.norm[k](t)).chunk(3, -1)
        q, kk, v = (z.reshape(-1, n, self.h, z.shape[-1] // self.h).transpose(1, 2) for z in (q, kk, v))
        a = q @ kk.transpose(-1, -2) * q.shape[-1] ** -0.5 + self.table[k][self.idx].permute(2, 0, 1)
        out = (a.softmax(-1) @ v).transpose(1, 2).reshape(t.shape)
        return t + self.o[k](out)

    def forward(self, x):
        b, d, hh, ww = x.shape
        w, gx, gy = self.w, hh // self.w, ww // self.w
        t = x.view(b, d, gx, w, gy, w).permute(0, 2, 4, 3, 5, 1).reshape(b * gx * gy, w * w, d)
        t = self.attend(t, 0).view(b, gx, gy, w, w, d)
        x = t.permute(0, 5, 1, 3, 2, 4).reshape(b, d, hh, ww)
        t = x.view(b, d, w, gx, w, gy).permute(0, 3, 5, 2, 4, 1).reshape(b * gx * gy, w * w, d)
        t = self.attend(t, 1).view(b, gx, gy, w, w, d)
        return t.permute(0, 5, 3, 1, 4, 2).reshape(b, d, hh, ww)


class Resamplers(nn.Module):
    """upsampling as people write it: bicubic 2x, bilinear to a size with align_corners,
    bicubic with align_corners, nearest 1.5x"""
    def __init__(self, c=8):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)

    def forward(self, x):
        f = self.conv(x)
        h, w = f.shape[2], f.shape[3]
        a = F.interpolate(f, scale_factor=2.0, mode="bicubic", align_corners=False)
        b = F.interpolate(f, size=(2 * h + 1, 2 * w + 1), mode="bilinear", align_corners=True)
        c = F.interpolate(f, scale_factor=2.0, mode="bicubic", align_corners=True)
        d = F.interpolate(f, scale_factor=1.5, mode="nearest")
        return a, b, c, d


class Involution(nn.Module):
    """involution (d-li14/involution): a per-pixel k x k kernel per group generated from the
    input, applied to F.unfold's patches"""
    def __init__(self, c=16, k=3, groups=4, r=4):
        super().__init__()
        self.c, self.k, self.g = c, k, groups
        self.reduce = nn.Sequential(nn.Conv2d(c, c // r, 1), nn.BatchNorm2d(c // r), nn.ReLU())
        self.span = nn.Conv2d(c // r, k * k * groups, 1)
        self.stem = nn.Conv2d(3, c, 3, padding=1)

    def forward(self, x):
        x = self.stem(x)
        b, c, h, w = x.shape
        weight = self.span(self.reduce(x)).view(b, self.g, self.k * self.k, h, w).unsqueeze(2)
        patches = F.unfold(x, self.k, padding=self.k // 2).view(b, self.g, c // self.g, self.k * self.k, h, w)
        return (weight * patches).sum(dim=3).view(b, c, h, w)


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def img(name="x", out=None):
        d = {name: {0: "b", 2: "h", 3: "w"}}
        for o in out or []:
            d[o] = {0: "b"}
        return d
    z = {}
    for name, manual in (("stn", False), ("stn_grid", True)):
        z[name] = Case(lambda manual=manual: STN(32 if big else 8, manual), lambda b, s: (torch.randn(b, 1, s, s + 4),),
                       ["x"], ["y", "feat"], img(), 16, [(2, 16), (3, 20)], (32, 128))
    z["frames_mel"] = Case(
        lambda: FramesMel(n_fft=400, hop=160, mels=80, c=128) if big else FramesMel(),
        lambda b, t: (torch.randn(b, t),), ["wav"], ["mel", "y"], {"wav": {0: "b", 1: "t"}}, 13,
        [(2, 400), (1, 272)], (4, 48000))
    z["conv_mfcc"] = Case(
        lambda: ConvMFCC(n_fft=400, hop=160, mels=64, mfcc=20) if big else ConvMFCC(),
        lambda b, t: (torch.randn(b, t),), ["wav"], ["mfcc"], {"wav": {0: "b", 1: "t"}}, 13,
        [(2, 400), (1, 272)], (4, 48000))
    z["topp_head"] = Case(
        lambda: TopPHead(d=512, vocab=32000, k=50) if big else TopPHead(),
        lambda b, s: (torch.randn(b, 512 if big else 32),), ["h"], ["probs", "token"], {"h": {0: "b"}}, [11, 13],
        [(3, 0), (5, 0)], (16, 0))
    z["gptj"] = Case(
        lambda: GPTJ(d=1024, h=16, rot=64, ctx=2048) if big else GPTJ(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),), ["x"], ["y"], {"x": {0: "b", 1: "s"}}, [14, 17],
        [(2, 9), (1, 5)], (1, 128))
    z["performer"] = Case(
        lambda: Performer(d=512, h=8, m=128) if big else Performer(),
        lambda b, s: (torch.randn(b, s, 512 if big else 64),), ["x"], ["y"], {"x": {0: "b", 1: "s"}}, 13,
        [(2, 9), (1, 5)], (2, 1024))
    z["kan"] = Case(
        lambda: KAN((64, 256, 256, 10)) if big else KAN(), lambda b, s: (torch.randn(b, 64 if big else 8) * 2,),
        ["x"], ["y"], {"x": {0: "b"}}, 13, [(5, 0), (3, 0)], (1024, 0))
    z["siren"] = Case(
        lambda: SIREN(hid=256, layers=4) if big else SIREN(), lambda b, s: (torch.rand(b, 2) * 2 - 1,),
        ["coords"], ["rgb"], {"coords": {0: "b"}}, 13, [(7, 0), (4, 0)], (16384, 0))
    z["superglue_ot"] = Case(
        lambda: SuperGlueOT(d=256, iters=20) if big else SuperGlueOT(),
        lambda m, n: (torch.randn(1, 256 if big else 32, m), torch.randn(1, 256 if big else 32, n)),
        ["desc0", "desc1"], ["z", "matches0", "mscores0"], {"desc0": {2: "m"}, "desc1": {2: "n"}}, 13,
        [(7, 9), (5, 4)], (512, 480))
    z["tft"] = Case(
        lambda: TFT(nvars=8, d=64, h=4) if big else TFT(),
        lambda b, t: (torch.randn(b, t, 8 if big else 5),), ["x"], ["y", "weights"], {"x": {0: "b", 1: "t"}}, 14,
        [(2, 7), (3, 5)], (64, 96))
    z["gmlp"] = Case(
        lambda: GMLP(d=256, ff=1024, seq=128, layers=2) if big else GMLP(),
        lambda b, s: (torch.randn(b, 128 if big else 16, 256 if big else 32),), ["x"], ["y"], {"x": {0: "b"}}, 13,
        [(2, 0), (3, 0)], (8, 0))
    z["resmlp"] = Case(
        lambda: ResMLP(d=384, p=16, img=224, layers=2, classes=1000) if big else ResMLP(),
        lambda b, s: (torch.randn(b, 3, 224 if big else 16, 224 if big else 16),), ["x"], ["y"],
        {"x": {0: "b"}}, 13, [(2, 0), (3, 0)], (4, 0))
    z["simple_vit"] = Case(
        lambda: SimpleViT(d=384, p=16, h=6) if big else SimpleViT(),
        lambda b, s: (torch.randn(b, 3, s, s + (16 if big else 8)),),
        ["img"], ["y"], img("img"), 17, [(2, 16), (1, 24)], (4, 224))
    z["maxvit_attn"] = Case(
        lambda: MaxViTAttn(d=64, h=2, w=7) if big else MaxViTAttn(),
        lambda b, s: (torch.randn(b, 64 if big else 32, s, s + (7 if big else 4)),), ["x"], ["y"], img(), 13,
        [(2, 8), (1, 16)], (2, 56))
    z["resamplers"] = Case(
        lambda: Resamplers(c=32) if big else Resamplers(), lambda b, s: (torch.randn(b, 3, s, s + 2),), ["x"],
        ["bicubic", "bilinear_ac", "bicubic_ac", "nearest"], img(), [11, 13], [(2, 8), (1, 9)], (2, 128))
    z["involution"] = Case(
        lambda: Involution(c=64) if big else Involution(), lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"], ["y"],
        img(), 13, [(2, 8), (1, 12)], (2, 112))
    # zoo_models6b.py
    z["repvgg"] = Case(
        lambda: RepVGG((64, 128, 256), (2, 4, 4), 1000) if big else RepVGG(), lambda b, s: (torch.randn(b, 3, s, s),),
        ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (1, 224))
    z["mobileone"] = Case(
        lambda: MobileOne((64, 128, 256), 1000) if big else MobileOne(), lambda b, s: (torch.randn(b, 3, s, s),),
        ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (1, 224))
    z["efficientnetv2"] = Case(
        lambda: EfficientNetV2((24, 48, 64, 128), 1000) if big else EfficientNetV2(),
        lambda b, s: (torch.randn(b, 3, s, s + 16),), ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (1, 224))
    z["stylegan2"] = Case(  # groups = batch: the batch is fixed at export
        lambda: StyleGAN2(c=128, wdim=256, zdim=256) if big else StyleGAN2(),
        lambda b, s: (torch.randn(2, 128 if big else 32, s, s), torch.randn(2, 256 if big else 32),
                      torch.randn(2, 1, s, s)),
        ["x", "z", "noise"], ["rgb"], {"x": {2: "h", 3: "w"}, "noise": {2: "h", 3: "w"}}, 13,
        [(2, 8), (2, 6)], (2, 32))
    z["stylegan2_unfused"] = Case(
        lambda: StyleUnfused(c=128, wdim=256) if big else StyleUnfused(),
        lambda b, s: (torch.randn(b, 128 if big else 32, s, s), torch.randn(b, 256 if big else 32)), ["x", "w"],
        ["y"], {"x": {0: "b", 2: "h", 3: "w"}, "w": {0: "b"}}, 13, [(2, 8), (3, 6)], (2, 64))
    z["real_esrgan"] = Case(
        lambda: RealESRGAN(f=64, g=32, blocks=2) if big else RealESRGAN(),
        lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"], ["y"], img(), 13, [(1, 8), (2, 12)], (1, 64))
    z["nafnet"] = Case(
        lambda: NAFNet(c=32) if big else NAFNet(), lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"], ["y"],
        img(), 13, [(2, 8), (1, 12)], (1, 256))
    z["cbam"] = Case(
        lambda: CBAMNet(c=64, classes=1000) if big else CBAMNet(), lambda b, s: (torch.randn(b, 3, s, s + 4),),
        ["x"], ["y"], img(), 13, [(2, 16), (1, 24)], (2, 224))
    z["sknet"] = Case(
        lambda: SKNet(c=64, classes=1000) if big else SKNet(), lambda b, s: (torch.randn(b, 3, s, s + 4),),
        ["x"], ["y"], img(), 13, [(2, 16), (1, 24)], (2, 224))
    z["wavenet"] = Case(
        lambda: WaveNet(q=256, c=64, skip=128, cond=80) if big else WaveNet(),
        lambda b, t: (torch.randint(0, 256 if big else 64, (b, t)), torch.randn(b, 80 if big else 8, t)),
        ["ids", "cond"], ["logp"], {"ids": {0: "b", 1: "t"}, "cond": {0: "b", 2: "t"}}, 13,
        [(2, 20), (1, 13)], (2, 4000))
    z["convlstm"] = Case(
        lambda: ConvLSTM(i=3, hid=64) if big else ConvLSTM(), lambda b, s: (torch.randn(b, 4, 3, s, s + 4),),
        ["clip"], ["outs", "c"], {"clip": {0: "b", 3: "h", 4: "w"}}, 13, [(2, 8), (1, 12)], (2, 64))
    z["yolox_decode"] = Case(
        lambda: YOLOXDecode(c=64, classes=80) if big else YOLOXDecode(),
        lambda b, s: (torch.randn(b, 3, s, s + 32),), ["images"], ["dets"], img("images"), [11, 13],
        [(2, 64), (1, 32)], (1, 640))
    z["bit_stdconv"] = Case(
        lambda: StdConvGN(c=256, mid=64) if big else StdConvGN(), lambda b, s: (torch.randn(b, 3, s, s + 4),),
        ["x"], ["y"], img(), 13, [(2, 16), (1, 12)], (2, 224))
    z["unet3d"] = Case(
        lambda: UNet3D(c=16) if big else UNet3D(), lambda b, s: (torch.randn(b, 1, s, s + 4, s + 8),), ["vol"],
        ["seg", "aux"], {"vol": {0: "b", 2: "d", 3: "h", 4: "w"}}, [11, 13], [(2, 8), (1, 12)], (1, 64))
    z["conv3d_forms"] = Case(
        Conv3dForms, lambda b, s: (torch.randn(b, 2, s, s + 1, s + 3),), ["x"], ["a", "g"],
        {"x": {0: "b", 2: "t", 3: "h", 4: "w"}}, 13, [(2, 7), (1, 6)], (2, 32))
    return z
