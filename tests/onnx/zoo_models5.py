"""zoo_models5.py — the fifth round: models the earlier rounds (zoo_models.py to
zoo_models4b.py) do not cover, and one model written several ways, since a fast path must
fire for the general case and not for one layout. One pre-LN encoder layer five ways:
nn.TransformerEncoderLayer (batch first, norm first, GELU), nn.MultiheadAttention with
batch second between transposes, timm's fused qkv with reshape / permute / unbind,
fairseq's heads-in-batch torch.bmm, and separate projections with einsum over (b, n, h, d)
and Hugging Face's additive mask. Hugging Face exports: ALBERT at opsets 17 and 11
(factorized embeddings, one shared layer, (1 - mask) * -10000, nn.LayerNorm as ReduceMean
/ Pow / Sqrt / Div at 11, LayerNormalization at 17, the tanh GELU), ELECTRA at opset 17
(position ids from the mask's cumsum, the erf GELU written out, finfo.min mask,
LayerNormalization), Gemma (RMSNorm with 1 + w, multi-query attention, GeGLU, scaled
embeddings, tied head). Vision: CLIP's vision tower and projection (quick_gelu,
batch-second attention, L2 normalization), XCiT's cross-covariance attention (F.normalize
over tokens, per-head temperature, the local patch interaction), DiT's adaLN-Zero blocks
(opset 16: LayerNorm without affine), MAE's random masking (argsort of noise, gather, an
assigned slice), GhostNet, YOLOv5's Focus / C3 / SPPF backbone with an upsampling neck,
PoolFormer (pooling minus identity, GroupNorm(1)), PatchTST (RevIN, Tensor.unfold,
BatchNorm in the encoder), linear attention (elu + 1 features, 3-operand einsum, the
causal form by cumsum), a Mixtral MoE layer as Hugging Face writes it (top-2 routing,
torch.where per expert, index_add_), GraphSAGE / GIN message passing (gather by the edge
list, scatter_add at opset 16, degree by scatter of ones). In zoo_models5b.py: CenterNet's
decode, DGCNN, VQ-VAE, HiFi-GAN, ECAPA-TDNN, QuartzNet, R(2+1)D, NeRF with volume
rendering, RealNVP, DCN-V2, DIN, FT-Transformer, N-BEATS, CapsNet. Written out in plain
torch.nn since none of those packages is installed here; each class follows its source's
forward.

Same Case as tests/onnx/zoo_models.py; used by tests/onnx/test_torch_zoo.py --module
zoo_models5 (ctest onnx_torch_zoo5) and tests/bench/bench_torch_blocks.py (zoo5:NAME).
torch 1.13 exports up to opset 17 (and onnx 1.12 converts no further): opset 18 is not
written here.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case, ids, padmask
from zoo_models2 import rotate_half
from zoo_models3 import gelu_new
from zoo_models3b import timestep_embedding
from zoo_models5b import (DCNv2, DGCNN, DIN, ECAPA, NeRF, VQVAE, CapsNet, CenterNet, FTTransformer, HiFiGAN,
                          NBeats, QuartzNet, R2Plus1D, RealNVP)

NEG = torch.finfo(torch.float32).min


# ---------------- one encoder layer, five ways ----------------


class EncTorch(nn.Module):
    """nn.TransformerEncoderLayer(batch_first, norm_first, gelu), a bool padding mask"""
    def __init__(self, d=64, h=4, ff=128):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation="gelu", batch_first=True,
                                                norm_first=True)

    def forward(self, x, pad):
        return self.layer(x, src_key_padding_mask=pad)


class EncMHASeqFirst(nn.Module):
    """nn.MultiheadAttention with batch second (its default) between transposes"""
    def __init__(self, d=64, h=4, ff=128):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mha = nn.MultiheadAttention(d, h)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x, pad):
        t = self.ln1(x).transpose(0, 1)
        x = x + self.mha(t, t, t, key_padding_mask=pad, need_weights=False)[0].transpose(0, 1)
        return x + self.ff(self.ln2(x))


class EncQKVUnbind(nn.Module):
    """timm's Attention + Block: one qkv Linear, reshape (b, n, 3, h, d), permute(2, 0, 3,
    1, 4), unbind(0), q * scale @ k.transpose(-2, -1), masked_fill with -inf"""
    def __init__(self, d=64, h=4, ff=128):
        super().__init__()
        self.h, self.scale = h, (d // h) ** -0.5
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def attn(self, x, pad):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        a = (q * self.scale) @ k.transpose(-2, -1)
        if pad is not None:
            a = a.masked_fill(pad[:, None, None, :], float("-inf"))
        return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))

    def forward(self, x, pad=None):
        x = x + self.attn(self.ln1(x), pad)
        return x + self.mlp(self.ln2(x))


class EncBmm(nn.Module):
    """fairseq's MultiheadAttention: sequence first, in_proj chunk(3), q scaled, heads
    folded into the batch by view(s, b * h, d).transpose(0, 1), torch.bmm, the padding
    mask through view(b, h, s, s), softmax in float"""
    def __init__(self, d=64, h=4, ff=128):
        super().__init__()
        self.h, self.scale = h, (d // h) ** -0.5
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.in_proj, self.out_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, pad):
        t = self.ln1(x).transpose(0, 1)
        s, b, c = t.shape
        q, k, v = self.in_proj(t).chunk(3, dim=-1)
        q = (q * self.scale).contiguous().view(s, b * self.h, c // self.h).transpose(0, 1)
        k = k.contiguous().view(-1, b * self.h, c // self.h).transpose(0, 1)
        v = v.contiguous().view(-1, b * self.h, c // self.h).transpose(0, 1)
        w = torch.bmm(q, k.transpose(1, 2))
        w = w.view(b, self.h, s, s).masked_fill(pad[:, None, None, :], float("-inf")).view(b * self.h, s, s)
        w = F.softmax(w.float(), dim=-1).type_as(w)
        y = torch.bmm(w, v).transpose(0, 1).contiguous().view(s, b, c)
        x = x + self.out_proj(y).transpose(0, 1)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class EncEinsum(nn.Module):
    """separate q / k / v Linears kept as (b, n, h, d), einsum 'bnhd,bmhd->bhnm' with the
    scale folded into k, Hugging Face's (1 - mask) * finfo.min added as (b, 1, 1, m)"""
    def __init__(self, d=64, h=4, ff=128):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x, mask):
        b, n, c = x.shape
        y = self.ln1(x)
        q, k, v = (f(y).view(b, n, self.h, -1) for f in (self.q, self.k, self.v))
        k = k * (c // self.h) ** -0.5
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * NEG
        a = torch.softmax(torch.einsum("bnhd,bmhd->bhnm", q, k) + ext, dim=-1)
        x = x + self.o(torch.einsum("bhnm,bmhd->bnhd", a, v).reshape(b, n, c))
        return x + self.ff(self.ln2(x))


# ---------------- Hugging Face exports ----------------


class AlbertLayer(nn.Module):
    def __init__(self, d, h, inter):
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.dense = (nn.Linear(d, d) for _ in range(4))
        self.ln, self.ffn_ln = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.ffn, self.ffn_out = nn.Linear(d, inter), nn.Linear(inter, d)

    def forward(self, x, ext):
        b, s, d = x.shape

        def heads(t):
            return t.view(b, s, self.h, -1).permute(0, 2, 1, 3)
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.h) + ext
        ctx = torch.matmul(scores.softmax(-1), v).transpose(2, 1).flatten(2)
        a = self.ln(x + self.dense(ctx))
        return self.ffn_ln(self.ffn_out(gelu_new(self.ffn(a))) + a)


class Albert(nn.Module):
    """ALBERT: 128-wide embeddings projected to d, token types, position ids sliced from a
    buffer, one layer shared by every repetition, (1.0 - mask) * -10000.0, pooler tanh"""
    def __init__(self, vocab=1000, e=16, d=64, h=4, inter=128, layers=3, maxpos=512):
        super().__init__()
        self.word, self.pos, self.tt = nn.Embedding(vocab, e), nn.Embedding(maxpos, e), nn.Embedding(2, e)
        self.register_buffer("position_ids", torch.arange(maxpos).expand((1, -1)))
        self.ln = nn.LayerNorm(e, eps=1e-12)
        self.proj = nn.Linear(e, d)
        self.layer = AlbertLayer(d, h, inter)
        self.layers = layers
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids, token_type_ids, attention_mask):
        s = input_ids.shape[1]
        x = self.word(input_ids) + self.tt(token_type_ids) + self.pos(self.position_ids[:, :s])
        x = self.proj(self.ln(x))
        ext = (1.0 - attention_mask[:, None, None, :].to(dtype=x.dtype)) * -10000.0
        for _ in range(self.layers):
            x = self.layer(x, ext)
        return x, torch.tanh(self.pool(x[:, 0]))


class Electra(nn.Module):
    """ELECTRA discriminator with XLM-R-style position ids (cumsum of input_ids != pad,
    times the mask, + pad), the erf GELU written out, finfo.min mask, BERT layers"""
    def __init__(self, vocab=1000, d=64, h=4, inter=128, layers=2, maxpos=514, pad=1):
        super().__init__()
        self.pad = pad
        self.word, self.pos = nn.Embedding(vocab, d, padding_idx=pad), nn.Embedding(maxpos, d, padding_idx=pad)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(AlbertLayer(d, h, inter) for _ in range(layers))
        self.dense, self.pred = nn.Linear(d, d), nn.Linear(d, 1)

    def forward(self, input_ids, attention_mask):
        m = input_ids.ne(self.pad).int()
        pos = (torch.cumsum(m, dim=1).type_as(m) * m).long() + self.pad
        x = self.ln(self.word(input_ids) + self.pos(pos))
        ext = (1.0 - attention_mask[:, None, None, :].float()) * NEG
        for layer in self.layers:
            x = layer(x, ext)
        hid = self.dense(x)
        hid = hid * 0.5 * (1.0 + torch.erf(hid / math.sqrt(2.0)))
        return self.pred(hid).squeeze(-1)


class GemmaRMS(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.randn(d) * 0.1)

    def forward(self, x):
        xf = x.float()
        o = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (o * (1.0 + self.weight.float())).type_as(x)


class Gemma(nn.Module):
    """Gemma: embeddings times sqrt(d) as a tensor, RMSNorm (1 + w), multi-query attention
    (one k/v head expanded), rotary from position ids, the causal triu(full(finfo.min))
    mask plus the padding mask, GeGLU with F.gelu(approximate='tanh'), tied LM head"""
    def __init__(self, vocab=256, d=64, h=4, hd=16, inter=128, layers=2):
        super().__init__()
        self.h, self.hd = h, hd
        self.emb = nn.Embedding(vocab, d)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            n1=GemmaRMS(d), q=nn.Linear(d, h * hd, bias=False), kv=nn.Linear(d, 2 * hd, bias=False),
            o=nn.Linear(h * hd, d, bias=False), n2=GemmaRMS(d), gate=nn.Linear(d, inter, bias=False),
            up=nn.Linear(d, inter, bias=False), down=nn.Linear(inter, d, bias=False))) for _ in range(layers))
        self.norm = GemmaRMS(d)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        x = self.emb(input_ids)
        x = x * torch.tensor(x.shape[-1] ** 0.5, dtype=x.dtype)
        pos = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        f = pos[:, :, None].float() * self.inv_freq[None, None, :]
        e = torch.cat((f, f), dim=-1)
        cos, sin = e.cos()[:, None], e.sin()[:, None]
        causal = torch.triu(torch.full((s, s), NEG), diagonal=1)[None, None]
        mask = causal + (1.0 - attention_mask[:, None, None, :].float()) * NEG
        mask = mask.clamp(min=NEG)
        for L in self.layers:
            y = L["n1"](x)
            q = L["q"](y).view(b, s, self.h, self.hd).transpose(1, 2)
            k, v = L["kv"](y).view(b, s, 2, 1, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k, v = k.expand(b, self.h, s, self.hd), v.expand(b, self.h, s, self.hd)
            a = torch.softmax(q @ k.transpose(2, 3) * self.hd ** -0.5 + mask, dim=-1, dtype=torch.float32)
            x = x + L["o"]((a @ v).transpose(1, 2).reshape(b, s, -1))
            y = L["n2"](x)
            x = x + L["down"](F.gelu(L["gate"](y), approximate="tanh") * L["up"](y))
        return self.norm(x) @ self.emb.weight.t()


# ---------------- vision ----------------


class CLIPVision(nn.Module):
    """OpenAI CLIP's VisionTransformer: bias-free patch conv, class embedding concatenated
    with zeros of the batch, ln_pre, residual attention blocks over x.permute(1, 0, 2)
    with nn.MultiheadAttention and quick_gelu, ln_post on the class token, @ proj, and
    the features L2-normalized by x / x.norm(dim=-1, keepdim=True)"""
    def __init__(self, img=32, p=8, d=64, h=4, layers=2, out=32):
        super().__init__()
        self.conv = nn.Conv2d(3, d, p, p, bias=False)
        self.cls = nn.Parameter(torch.randn(d) * d ** -0.5)
        self.pos = nn.Parameter(torch.randn((img // p) ** 2 + 1, d) * d ** -0.5)
        self.ln_pre, self.ln_post = nn.LayerNorm(d), nn.LayerNorm(d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), attn=nn.MultiheadAttention(d, h), ln2=nn.LayerNorm(d),
            fc=nn.Linear(d, 4 * d), proj=nn.Linear(4 * d, d))) for _ in range(layers))
        self.proj = nn.Parameter(torch.randn(d, out) * d ** -0.5)

    def forward(self, x):
        x = self.conv(x).reshape(x.shape[0], self.conv.out_channels, -1).permute(0, 2, 1)
        cls = self.cls + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype)
        x = self.ln_pre(torch.cat([cls, x], dim=1) + self.pos).permute(1, 0, 2)
        for B in self.blocks:
            y = B["ln1"](x)
            x = x + B["attn"](y, y, y, need_weights=False)[0]
            y = B["fc"](B["ln2"](x))
            x = x + B["proj"](y * torch.sigmoid(1.702 * y))
        f = self.ln_post(x.permute(1, 0, 2)[:, 0, :]) @ self.proj
        return f / f.norm(dim=-1, keepdim=True)


class XCiT(nn.Module):
    """XCiT (facebookresearch/xcit): a strided conv patch embedding, blocks of
    cross-covariance attention (q and k transposed to (b, h, d, n), F.normalize over the
    tokens, (d x d) attention times a per-head temperature), the local patch interaction
    (tokens back to (b, c, H, W), depthwise 3x3, GELU, BatchNorm, depthwise 3x3), and
    the MLP, each scaled by LayerScale gammas; mean pooled head"""
    def __init__(self, d=32, h=4, layers=2, classes=10):
        super().__init__()
        self.h = h
        self.embed = nn.Sequential(nn.Conv2d(3, d // 2, 3, 2, 1), nn.BatchNorm2d(d // 2), nn.GELU(),
                                   nn.Conv2d(d // 2, d, 3, 2, 1), nn.BatchNorm2d(d))
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d), n3=nn.LayerNorm(d),
            dw1=nn.Conv2d(d, d, 3, padding=1, groups=d), bn=nn.BatchNorm2d(d),
            dw2=nn.Conv2d(d, d, 3, padding=1, groups=d), n2=nn.LayerNorm(d),
            fc1=nn.Linear(d, 2 * d), fc2=nn.Linear(2 * d, d))) for _ in range(layers))
        self.temp = nn.ParameterList(nn.Parameter(torch.rand(h, 1, 1) + 0.5) for _ in range(layers))
        self.gammas = nn.ParameterList(nn.Parameter(torch.rand(3, d)) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x)
        b, c, H, W = x.shape
        x = x.flatten(2).transpose(1, 2)
        for B, t, g in zip(self.blocks, self.temp, self.gammas):
            y = B["n1"](x)
            n = y.shape[1]
            q, k, v = B["qkv"](y).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            q, k, v = (z.transpose(-2, -1) for z in (q, k, v))
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            a = ((q @ k.transpose(-2, -1)) * t).softmax(dim=-1)
            x = x + g[0] * B["proj"]((a @ v).permute(0, 3, 1, 2).reshape(b, n, c))
            y = B["n3"](x).transpose(1, 2).reshape(b, c, H, W)
            y = B["dw2"](B["bn"](F.gelu(B["dw1"](y))))
            x = x + g[1] * y.reshape(b, c, n).permute(0, 2, 1)
            x = x + g[2] * B["fc2"](F.gelu(B["fc1"](B["n2"](x))))
        return self.head(self.norm(x).mean(1))


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiT(nn.Module):
    """DiT (facebookresearch/DiT): patchify conv, fixed positions, timestep embedding
    (sin / cos, MLP) plus a class embedding, adaLN-Zero blocks (SiLU, Linear to 6 d,
    chunk(6), x * (1 + scale) + shift, gates), LayerNorm without affine, the tanh GELU,
    the final adaLN layer and unpatchify by einsum 'nhwpqc->nchpwq'"""
    def __init__(self, img=8, p=2, c=4, d=64, h=4, layers=2, classes=10):
        super().__init__()
        self.p, self.c, self.d = p, c, d
        self.embed = nn.Conv2d(c, d, p, p)
        self.pos = nn.Parameter(torch.randn(1, (img // p) ** 2, d) * 0.1)
        self.t_mlp = nn.Sequential(nn.Linear(32, d), nn.SiLU(), nn.Linear(d, d))
        self.y_emb = nn.Embedding(classes + 1, d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d, elementwise_affine=False, eps=1e-6), attn=EncQKVUnbind(d, h, 4 * d),
            n2=nn.LayerNorm(d, elementwise_affine=False, eps=1e-6),
            mlp=nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)),
            ada=nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d)))) for _ in range(layers))
        self.final_norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.final = nn.Linear(d, p * p * c)

    def forward(self, x, t, y):
        side = x.shape[-1] // self.p
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(timestep_embedding(t, 32)) + self.y_emb(y)
        for B in self.blocks:
            sh1, sc1, g1, sh2, sc2, g2 = B["ada"](c).chunk(6, dim=1)
            x = x + g1.unsqueeze(1) * B["attn"].attn(modulate(B["n1"](x), sh1, sc1), None)
            x = x + g2.unsqueeze(1) * B["mlp"](modulate(B["n2"](x), sh2, sc2))
        sh, sc = self.final_ada(c).chunk(2, dim=1)
        x = self.final(modulate(self.final_norm(x), sh, sc))
        x = x.reshape(x.shape[0], side, side, self.p, self.p, self.c)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(x.shape[0], self.c, side * self.p, side * self.p)


class MAE(nn.Module):
    """MAE's encoder (facebookresearch/mae random_masking, the noise an input): argsort
    of the noise, the restoring argsort, gather of the kept patches by an index repeated
    over the width, the binary mask by an assigned slice and a gather, [CLS], timm
    blocks, LayerNorm"""
    def __init__(self, img=32, p=4, d=64, h=4, layers=2, ratio=0.75):
        super().__init__()
        self.L = (img // p) ** 2
        self.keep = int(self.L * (1 - ratio))
        self.embed = nn.Conv2d(3, d, p, p)
        self.pos = nn.Parameter(torch.randn(1, self.L + 1, d) * 0.1)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.blocks = nn.ModuleList(EncQKVUnbind(d, h, 4 * d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, img, noise):
        x = self.embed(img).flatten(2).transpose(1, 2) + self.pos[:, 1:, :]
        n, L, d = x.shape
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        keep = ids_shuffle[:, :self.keep]
        x = torch.gather(x, 1, keep.unsqueeze(-1).repeat(1, 1, d))
        mask = torch.ones([n, L])
        mask[:, :self.keep] = 0
        mask = torch.gather(mask, 1, ids_restore)
        x = torch.cat(((self.cls + self.pos[:, :1, :]).expand(n, -1, -1), x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x), mask, ids_restore


def gconv(i, o, k=1, s=1, act=True):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o),
                         nn.ReLU() if act else nn.Identity())


class GhostModule(nn.Module):
    def __init__(self, i, o, relu=True):
        super().__init__()
        self.o, init = o, math.ceil(o / 2)
        self.primary = gconv(i, init, act=relu)
        self.cheap = nn.Sequential(nn.Conv2d(init, init, 3, 1, 1, groups=init, bias=False), nn.BatchNorm2d(init),
                                   nn.ReLU() if relu else nn.Identity())

    def forward(self, x):
        x1 = self.primary(x)
        return torch.cat([x1, self.cheap(x1)], dim=1)[:, :self.o, :, :]


class GhostBottleneck(nn.Module):
    def __init__(self, i, mid, o, k=3, s=1, se=False):
        super().__init__()
        self.g1, self.g2 = GhostModule(i, mid), GhostModule(mid, o, relu=False)
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, k, s, k // 2, groups=mid, bias=False),
                                nn.BatchNorm2d(mid)) if s > 1 else None
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, mid // 4, 1), nn.ReLU(),
                                nn.Conv2d(mid // 4, mid, 1)) if se else None
        self.short = None if (i == o and s == 1) else nn.Sequential(
            nn.Conv2d(i, i, k, s, k // 2, groups=i, bias=False), nn.BatchNorm2d(i),
            nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = self.g1(x)
        y = self.dw(y) if self.dw is not None else y
        if self.se is not None:
            y = y * (F.relu6(self.se(y) + 3.0) / 6.0)
        return self.g2(y) + (x if self.short is None else self.short(x))


class GhostNet(nn.Module):
    """GhostNet (huawei-noah): ghost modules (a 1x1 primary conv, a cheap depthwise conv,
    concat, sliced to the output channels), stride-2 depthwise, SE with hard sigmoid
    (relu6(x + 3) / 6), depthwise + pointwise shortcuts, the conv head after pooling"""
    def __init__(self, w=1.0, classes=10):
        super().__init__()

        def c(n):
            return max(4, int(n * w) // 4 * 4)
        cfg = [(16, 16, 16, 3, 1, False), (16, 48, 24, 3, 2, False), (24, 72, 24, 3, 1, False),
               (24, 72, 40, 5, 2, True), (40, 120, 40, 5, 1, True), (40, 240, 80, 3, 2, False),
               (80, 184, 80, 3, 1, False), (80, 480, 112, 3, 1, True)]
        self.stem = gconv(3, c(16), 3, 2)
        self.blocks = nn.Sequential(*[GhostBottleneck(c(i), c(m), c(o), k, s, se) for i, m, o, k, s, se in cfg])
        self.last = gconv(c(112), c(672))
        self.head = nn.Sequential(nn.Conv2d(c(672), 256, 1), nn.ReLU())
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        x = self.last(self.blocks(self.stem(x)))
        return self.fc(self.head(F.adaptive_avg_pool2d(x, 1)).flatten(1))


def sconv(i, o, k=1, s=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o, eps=1e-3), nn.SiLU())


class C3(nn.Module):
    def __init__(self, i, o, n=1, shortcut=True):
        super().__init__()
        h = o // 2
        self.cv1, self.cv2, self.cv3 = sconv(i, h), sconv(i, h), sconv(2 * h, o)
        self.m = nn.ModuleList(nn.Sequential(sconv(h, h), sconv(h, h, 3)) for _ in range(n))
        self.shortcut = shortcut

    def forward(self, x):
        y = self.cv1(x)
        for m in self.m:
            y = y + m(y) if self.shortcut else m(y)
        return self.cv3(torch.cat((y, self.cv2(x)), 1))


class YoloV5Backbone(nn.Module):
    """YOLOv5 (ultralytics, v5.0's Focus): the Focus space-to-depth by four strided slices
    x[..., ::2, ::2] concatenated, Conv-BN-SiLU, C3 blocks, SPPF (three chained 5x5 max
    pools concatenated), a PAN neck with nearest 2x upsampling and concat"""
    def __init__(self, c=16):
        super().__init__()
        self.focus = sconv(12, c, 3)
        self.l1, self.c1 = sconv(c, 2 * c, 3, 2), C3(2 * c, 2 * c)
        self.l2, self.c2 = sconv(2 * c, 4 * c, 3, 2), C3(4 * c, 4 * c, 2)
        self.l3, self.c3 = sconv(4 * c, 8 * c, 3, 2), C3(8 * c, 8 * c)
        self.spp1, self.spp2 = sconv(8 * c, 4 * c), sconv(16 * c, 8 * c)
        self.lat, self.up_c3 = sconv(8 * c, 4 * c), C3(8 * c, 4 * c, shortcut=False)
        self.down, self.pan_c3 = sconv(4 * c, 4 * c, 3, 2), C3(8 * c, 8 * c, shortcut=False)

    def forward(self, x):
        x = self.focus(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))
        p3 = self.c2(self.l2(self.c1(self.l1(x))))
        y = self.spp1(self.c3(self.l3(p3)))
        y1 = F.max_pool2d(y, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        p5 = self.lat(self.spp2(torch.cat([y, y1, y2, F.max_pool2d(y2, 5, 1, 2)], 1)))
        n3 = self.up_c3(torch.cat([F.interpolate(p5, scale_factor=2.0, mode="nearest"), p3], 1))
        n5 = self.pan_c3(torch.cat([self.down(n3), p5], 1))
        return n3, n5


class PoolFormer(nn.Module):
    """PoolFormer (sail-sg/poolformer): a 7x7 stride-4 stem, blocks whose token mixer is
    avg_pool(3, 1, 1, count_include_pad=False) - x, GroupNorm(1, C), 1x1-conv MLPs with
    GELU, LayerScale per channel, strided-conv downsampling, mean-pooled head"""
    def __init__(self, dims=(16, 32), depth=(2, 2), classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 7, 4, 2)
        self.stages = nn.ModuleList()
        for i, (d, n) in enumerate(zip(dims, depth)):
            st = nn.ModuleList(nn.ModuleDict(dict(
                n1=nn.GroupNorm(1, d), n2=nn.GroupNorm(1, d), fc1=nn.Conv2d(d, 4 * d, 1),
                fc2=nn.Conv2d(4 * d, d, 1))) for _ in range(n))
            self.stages.append(st)
        self.ls = nn.Parameter(torch.rand(sum(depth), 2, max(dims)) * 0.5)
        self.down = nn.ModuleList(nn.Conv2d(dims[i], dims[i + 1], 3, 2, 1) for i in range(len(dims) - 1))
        self.norm, self.head = nn.GroupNorm(1, dims[-1]), nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = self.stem(x)
        j = 0
        for i, st in enumerate(self.stages):
            if i:
                x = self.down[i - 1](x)
            d = x.shape[1]
            for B in st:
                y = B["n1"](x)
                x = x + self.ls[j, 0, :d, None, None] * (F.avg_pool2d(y, 3, 1, 1, count_include_pad=False) - y)
                x = x + self.ls[j, 1, :d, None, None] * B["fc2"](F.gelu(B["fc1"](B["n2"](x))))
                j += 1
        return self.head(self.norm(x).mean([-2, -1]))


class PatchTST(nn.Module):
    """PatchTST (yuqinie98): RevIN (mean and std over time, affine), channel independence,
    the last step repeated (ReplicationPad1d((0, stride))), Tensor.unfold into patches, a Linear patch embedding
    plus positions, encoder layers with BatchNorm1d over the model width between
    transposes, a flatten head, denormalized (the pad as a concat of the last step repeated:
    torch 1.13 exports Tensor.unfold only where the padded length is known, which its
    Pad's is not; and unfold(dimension=2), as PatchTST's dimension=-1 exports a graph
    whose patches come out transposed: (b, m, patch, n), in every runtime)"""
    def __init__(self, L=32, patch=8, stride=4, d=32, h=4, layers=2, pred=8, m=4):
        super().__init__()
        self.patch, self.stride, self.h = patch, stride, h
        n = (L - patch) // stride + 2
        self.rw, self.rb = nn.Parameter(torch.rand(m) + 0.5), nn.Parameter(torch.randn(m) * 0.1)
        self.embed = nn.Linear(patch, d)
        self.pos = nn.Parameter(torch.randn(n, d) * 0.1)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            qkv=nn.Linear(d, 3 * d), o=nn.Linear(d, d), bn1=nn.BatchNorm1d(d), bn2=nn.BatchNorm1d(d),
            f1=nn.Linear(d, 2 * d), f2=nn.Linear(2 * d, d))) for _ in range(layers))
        self.head = nn.Linear(n * d, pred)

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        std = torch.sqrt(torch.var(x, dim=1, keepdim=True, unbiased=False) + 1e-5)
        x = (x - mean) / std * self.rw + self.rb
        b, L, m = x.shape
        z = x.permute(0, 2, 1)
        z = torch.cat([z, z[:, :, -1:].repeat(1, 1, self.stride)], -1)  # ReplicationPad1d((0, stride))
        z = z.unfold(dimension=2, size=self.patch, step=self.stride)
        z = self.embed(z).reshape(b * m, z.shape[2], -1) + self.pos
        for Ly in self.layers:
            bm, n, d = z.shape
            q, k, v = Ly["qkv"](z).reshape(bm, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) * (d // self.h) ** -0.5, -1)
            z = z + Ly["o"]((a @ v).transpose(1, 2).reshape(bm, n, d))
            z = Ly["bn1"](z.transpose(1, 2)).transpose(1, 2)
            z = z + Ly["f2"](F.gelu(Ly["f1"](z)))
            z = Ly["bn2"](z.transpose(1, 2)).transpose(1, 2)
        y = self.head(z.reshape(b, m, -1)).permute(0, 2, 1)
        return (y - self.rb) / (self.rw + 1e-10) * std + mean


class LinearAttn(nn.Module):
    """linear attention (Katharopoulos et al., the fast-transformers formulation): phi(x)
    = elu(x) + 1, KV = einsum('nshd,nshm->nhmd'), the normalizer by einsum with the key
    sums, a 3-operand einsum; the causal form by cumsum of the outer products"""
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (f(x).view(b, s, self.h, -1) for f in (self.q, self.k, self.v))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("nshd,nshm->nhmd", k, v)
        z = 1 / (torch.einsum("nlhd,nhd->nlh", q, k.sum(dim=1)) + 1e-6)
        full = torch.einsum("nlhd,nhmd,nlh->nlhm", q, kv, z)
        kvc = torch.cumsum(torch.einsum("nshd,nshm->nshdm", k, v), dim=1)
        zc = 1 / (torch.einsum("nlhd,nlhd->nlh", q, k.cumsum(1)) + 1e-6)
        causal = torch.einsum("nlhd,nlhdm->nlhm", q, kvc) * zc[..., None]
        return self.o(full.reshape(b, s, d)), self.o(causal.reshape(b, s, d))


class MoE(nn.Module):
    """Mixtral's sparse MoE block as Hugging Face writes it: router softmax in float, top-2,
    renormalized, one_hot(selected).permute(2, 1, 0), per expert torch.where of its mask
    (a run-time number of tokens), the tokens' rows, a SiLU-gated expert scaled by its
    routing weight, index_add_ into the output"""
    def __init__(self, d=32, inter=64, experts=4, k=2):
        super().__init__()
        self.e, self.k = experts, k
        self.gate = nn.Linear(d, experts, bias=False)
        self.w1 = nn.ModuleList(nn.Linear(d, inter, bias=False) for _ in range(experts))
        self.w3 = nn.ModuleList(nn.Linear(d, inter, bias=False) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(inter, d, bias=False) for _ in range(experts))

    def forward(self, x):
        b, s, d = x.shape
        hs = x.view(-1, d)
        logits = self.gate(hs)
        w = F.softmax(logits, dim=1, dtype=torch.float)
        w, sel = torch.topk(w, self.k, dim=-1)
        w = w / w.sum(dim=-1, keepdim=True)
        out = torch.zeros((b * s, d), dtype=hs.dtype)
        mask = F.one_hot(sel, num_classes=self.e).permute(2, 1, 0)
        for e in range(self.e):
            idx, top_x = torch.where(mask[e])
            cur = hs[None, top_x].reshape(-1, d)
            y = self.w2[e](F.silu(self.w1[e](cur)) * self.w3[e](cur)) * w[top_x, idx, None]
            out.index_add_(0, top_x, y.to(hs.dtype))
        return out.reshape(b, s, d), logits


class SageGIN(nn.Module):
    """GraphSAGE (mean aggregation) then GIN ((1 + eps) x + sum), PyG's message passing
    written out: x[src] gathered, scatter_add into the targets (index expanded over the
    width), in-degree by scatter_add of ones, clamp(min=1), log_softmax over classes"""
    def __init__(self, f=16, h=32, classes=5):
        super().__init__()
        self.f, self.hid = f, h
        self.l1, self.r1 = nn.Linear(f, h), nn.Linear(f, h, bias=False)
        self.eps = nn.Parameter(torch.tensor(0.1))
        self.mlp = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, classes))

    @staticmethod
    def aggregate(x, src, dst, width):
        return torch.zeros_like(x).scatter_add(0, dst[:, None].expand(-1, width), x[src])

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        deg = torch.zeros(x.shape[0], dtype=x.dtype).scatter_add(0, dst, torch.ones_like(dst, dtype=x.dtype))
        h = F.relu(self.l1(self.aggregate(x, src, dst, self.f) / deg.clamp(min=1)[:, None]) + self.r1(x))
        h = self.mlp((1 + self.eps) * h + self.aggregate(h, src, dst, self.hid))
        return F.log_softmax(h, dim=-1)


def graph(n, e, seed=7):
    g = torch.Generator().manual_seed(seed + n + e)
    return torch.randint(0, n, (2, e), generator=g)


def hf_ids(b, s, v=1000, pad=1):
    """(input_ids with pad where the mask is 0, mask)"""
    m = padmask(b, s)
    return torch.where(m.bool(), torch.randint(2, v, (b, s)), torch.full((b, s), pad)), m


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def img(name="x"):
        return {name: {0: "b", 2: "h", 3: "w"}}

    def seq(*names):
        return {n: {0: "b", 1: "s"} for n in names}
    z = {}
    D, H, FF = (512, 8, 2048) if big else (64, 4, 128)
    enc = dict(torch=EncTorch, mha_seqfirst=EncMHASeqFirst, qkv_unbind=EncQKVUnbind, bmm=EncBmm)
    for name, cls in enc.items():
        z["enc_" + name] = Case(
            lambda cls=cls: cls(D, H, FF), lambda b, s: (torch.randn(b, s, D), padmask(b, s) == 0),
            ["x", "pad"], ["y"], seq("x", "pad", "y"), 14 if name != "bmm" else 17, [(2, 9), (3, 5)], (2, 128))
    z["enc_einsum"] = Case(
        lambda: EncEinsum(D, H, FF), lambda b, s: (torch.randn(b, s, D), padmask(b, s)),
        ["x", "attention_mask"], ["y"], seq("x", "attention_mask", "y"), 13, [(2, 9), (3, 5)], (2, 128))
    z["albert"] = Case(
        lambda: Albert(vocab=30000, e=128, d=768, h=12, inter=3072, layers=2) if big else Albert(),
        lambda b, s: (ids(b, s, 30000 if big else 1000), torch.randint(0, 2, (b, s)), padmask(b, s)),
        ["input_ids", "token_type_ids", "attention_mask"], ["last", "pooled"],
        dict(seq("input_ids", "token_type_ids", "attention_mask", "last"), pooled={0: "b"}), [17, 11],
        [(2, 9), (3, 5)], (2, 128))
    z["electra"] = Case(
        lambda: Electra(vocab=30522, d=256, h=4, inter=1024, layers=2) if big else Electra(),
        lambda b, s: hf_ids(b, s, 30522 if big else 1000), ["input_ids", "attention_mask"], ["logits"],
        seq("input_ids", "attention_mask", "logits"), 17, [(2, 9), (3, 6)], (4, 128))
    z["gemma"] = Case(
        lambda: Gemma(vocab=2048, d=1024, h=8, hd=128, inter=4096, layers=1) if big else Gemma(),
        lambda b, s: (ids(b, s, 2048 if big else 256), padmask(b, s)), ["input_ids", "attention_mask"],
        ["logits"], seq("input_ids", "attention_mask", "logits"), 14, [(2, 9), (1, 4)], (1, 128))
    z["clip_vision"] = Case(
        lambda: CLIPVision(img=224, p=32, d=768, h=12, layers=2, out=512) if big else CLIPVision(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["pixel_values"], ["embeds"], {"pixel_values": {0: "b"}}, 14,
        [(2, 32), (3, 32)], (4, 224))
    z["xcit"] = Case(
        lambda: XCiT(d=192, h=4, layers=4) if big else XCiT(), lambda b, s: (torch.randn(b, 3, s, s + 8),),
        ["x"], ["y"], img(), 13, [(2, 16), (1, 24)], (2, 224))
    z["dit"] = Case(
        lambda: DiT(img=32, p=2, d=384, h=6, layers=2) if big else DiT(),
        lambda b, s: (torch.randn(b, 4, s, s), torch.rand(b) * 1000, torch.randint(0, 10, (b,))),
        ["x", "t", "y"], ["out"], {"x": {0: "b"}, "t": {0: "b"}, "y": {0: "b"}}, 16, [(2, 8), (3, 8)], (4, 32))
    z["mae"] = Case(
        lambda: MAE(img=224, p=16, d=384, h=6, layers=2) if big else MAE(),
        lambda b, s: (torch.randn(b, 3, s, s), torch.rand(b, (s // (16 if big else 4)) ** 2)),
        ["img", "noise"], ["latent", "mask", "ids_restore"], {"img": {0: "b"}, "noise": {0: "b"}}, 14,
        [(2, 32), (3, 32)], (4, 224))
    z["ghostnet"] = Case(
        lambda: GhostNet(classes=1000) if big else GhostNet(w=0.5), lambda b, s: (torch.randn(b, 3, s, s),),
        ["x"], ["y"], img(), 13, [(2, 32), (1, 48)], (1, 224))
    z["yolov5_backbone"] = Case(
        lambda: YoloV5Backbone(c=32) if big else YoloV5Backbone(),
        lambda b, s: (torch.randn(b, 3, s, s + 32),), ["images"], ["p3", "p5"], img("images"), 13,
        [(2, 64), (1, 32)], (1, 640))
    z["poolformer"] = Case(
        lambda: PoolFormer(dims=(64, 128, 320, 512), depth=(2, 2, 6, 2), classes=1000) if big else PoolFormer(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["x"], ["y"], img(), 13, [(2, 32), (1, 40)], (1, 224))
    z["patchtst"] = Case(
        lambda: PatchTST(L=336, patch=16, stride=8, d=128, h=16, layers=3, pred=96, m=7) if big else PatchTST(),
        lambda b, s: (torch.randn(b, 336 if big else 32, 7 if big else 4).cumsum(1),), ["x"], ["y"],
        {"x": {0: "b"}}, 13, [(2, 0), (3, 0)], (32, 0))
    z["linear_attn"] = Case(
        lambda: LinearAttn(d=256, h=8) if big else LinearAttn(), lambda b, s: (torch.randn(b, s, 256 if big else 32),),
        ["x"], ["full", "causal"], seq("x"), 13, [(2, 9), (1, 5)], (4, 512))
    z["moe"] = Case(
        lambda: MoE(d=512, inter=1024, experts=8) if big else MoE(),
        lambda b, s: (torch.randn(b, s, 512 if big else 32),), ["x"], ["y", "router_logits"], seq("x"), 14,
        [(2, 9), (1, 5)], (4, 128))
    z["sage_gin"] = Case(
        lambda: SageGIN(f=64, h=128) if big else SageGIN(),
        lambda n, e: (torch.randn(n, 64 if big else 16), graph(n, e)), ["x", "edge_index"], ["y"],
        {"x": {0: "n"}, "edge_index": {1: "e"}}, 16, [(20, 60), (13, 40)], (5000, 50000))
    z["centernet"] = Case(
        lambda: CenterNet(c=64, classes=80, k=100) if big else CenterNet(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["x"], ["boxes", "scores", "classes"], img(), 13,
        [(2, 32), (1, 40)], (1, 512))
    z["dgcnn"] = Case(
        lambda: DGCNN(k=20, c=64, emb=512, classes=40) if big else DGCNN(),
        lambda b, n: (torch.randn(b, 3, n),), ["points"], ["y"], {"points": {0: "b", 2: "n"}}, 13,
        [(2, 24), (1, 16)], (2, 1024))
    z["vqvae"] = Case(
        lambda: VQVAE(c=128, d=64, codes=512) if big else VQVAE(), lambda b, s: (torch.randn(b, 3, s, s + 4),),
        ["x"], ["recon", "codes"], img(), 13, [(2, 16), (1, 24)], (2, 128))
    z["hifigan"] = Case(
        lambda: HiFiGAN(mels=80, c=256, ups=(8, 8, 2, 2), ks=(3, 7, 11)) if big else HiFiGAN(),
        lambda b, t: (torch.randn(b, 80 if big else 16, t),), ["mel"], ["audio"], {"mel": {0: "b", 2: "t"}}, 13,
        [(2, 12), (1, 7)], (1, 64))
    z["ecapa"] = Case(
        lambda: ECAPA(mels=80, c=512, att=128, emb=192) if big else ECAPA(),
        lambda b, t: (torch.randn(b, 80 if big else 16, t),), ["feats"], ["emb"], {"feats": {0: "b", 2: "t"}}, 13,
        [(2, 20), (1, 13)], (2, 300))
    z["quartznet"] = Case(
        lambda: QuartzNet(mels=64, c=256) if big else QuartzNet(),
        lambda b, t: (torch.randn(b, 64 if big else 16, t),), ["signal"], ["logp"], {"signal": {0: "b", 2: "t"}},
        13, [(2, 40), (1, 27)], (2, 1000))
    z["r2plus1d"] = Case(
        lambda: R2Plus1D(c=64, classes=400) if big else R2Plus1D(),
        lambda b, s: (torch.randn(b, 3, 8 if big else 4, s, s + 4),), ["video"], ["y"],
        {"video": {0: "b", 2: "t", 3: "h", 4: "w"}}, 13, [(2, 16), (1, 12)], (1, 112))
    z["nerf"] = Case(
        lambda: NeRF(w=256, freqs=10) if big else NeRF(),
        lambda b, n: (torch.randn(b, 3), torch.randn(b, 3),
                      torch.linspace(2.0, 6.0, n)[None].repeat(b, 1) + torch.rand(b, n) * 0.05),
        ["rays_o", "rays_d", "z_vals"], ["rgb", "depth", "acc"],
        {"rays_o": {0: "b"}, "rays_d": {0: "b"}, "z_vals": {0: "b", 1: "n"}}, 13, [(4, 16), (3, 9)], (1024, 64))
    z["realnvp"] = Case(
        lambda: RealNVP(d=64, hid=512, layers=8) if big else RealNVP(),
        lambda b, s: (torch.randn(b, 64 if big else 8),), ["x"], ["z", "logp"], {"x": {0: "b"}}, 13,
        [(4, 0), (7, 0)], (1024, 0))
    z["dcn_v2"] = Case(
        lambda: DCNv2(fields=(1000, 200, 50, 3000, 20, 500), d=16, dense=13, rank=64, experts=4, layers=3,
                      hid=256) if big else DCNv2(),
        lambda b, s: ((torch.rand(b, 6 if big else 4) * torch.tensor((1000, 200, 50, 3000, 20, 500) if big
                                                                     else (10, 20, 7, 30))).long(),
                      torch.randn(b, 13 if big else 4)),
        ["sparse", "dense"], ["p"], {"sparse": {0: "b"}, "dense": {0: "b"}}, 13, [(4, 0), (9, 0)], (2048, 0))
    z["din"] = Case(
        lambda: DIN(items=10000, d=32, hid=80) if big else DIN(),
        lambda b, t: (torch.randint(0, 10000 if big else 100, (b,)), torch.randint(0, 10000 if big else 100, (b, t)),
                      torch.randint(1, t + 1, (b,))),
        ["item", "hist", "length"], ["p"], {"item": {0: "b"}, "hist": {0: "b", 1: "t"}, "length": {0: "b"}}, 13,
        [(4, 7), (3, 12)], (1024, 50))
    z["ft_transformer"] = Case(
        lambda: FTTransformer(num=16, cards=(10, 20, 5, 8), d=192, h=8, layers=3) if big else FTTransformer(),
        lambda b, s: (torch.randn(b, 16 if big else 6),
                      (torch.rand(b, 4 if big else 3) * torch.tensor((10, 20, 5, 8) if big else (5, 7, 3))).long()),
        ["x_num", "x_cat"], ["y"], {"x_num": {0: "b"}, "x_cat": {0: "b"}}, 14, [(4, 0), (5, 0)], (512, 0))
    z["nbeats"] = Case(
        lambda: NBeats(back=168, fore=24, units=512) if big else NBeats(),
        lambda b, s: (torch.randn(b, 168 if big else 24).cumsum(1), (torch.rand(b, 168 if big else 24) > 0.1).float()),
        ["x", "mask"], ["forecast"], {"x": {0: "b"}, "mask": {0: "b"}}, 13, [(4, 0), (3, 0)], (1024, 0))
    z["capsnet"] = Case(
        lambda: CapsNet(c=256, caps=32, grid=10, out=10, d_in=8, d_out=16) if big else CapsNet(),
        lambda b, s: (torch.randn(b, 1, s, s),), ["x"], ["lengths", "v"], {"x": {0: "b"}}, 13,
        [(2, 19), (3, 19)], (16, 28))
    return z
