"""zoo_models8.py — the eighth round: models the earlier rounds (zoo_models.py to
zoo_models7c.py) do not cover, one of them written three ways. Decoder blocks: Qwen2
(q / k / v biases, grouped-query attention with repeat_kv written three ways: expand and
reshape, repeat and flatten, and queries grouped against unrepeated keys), Phi-3 (one
fused qkv projection sliced, one fused gate_up chunked), StableLM (partial rotary over a
quarter of the head), OPT (learned positions from the attention mask's cumsum, offset 2,
a padding mask merged with the causal one, a tied LM head), Gemma-2 (attention and final
logit soft-capping by tanh, sandwich norms, GeGLU) and GPT-Neo (alternating global and
local windowed causal attention, unscaled scores). Vision: CaiT (class attention over
frozen patches, talking heads), T2T-ViT (soft splits by nn.Unfold), CvT (convolutional
q / k / v projections, strided keys), MobileViTv2 (separable linear attention).
Time series: DLinear (series decomposition by a moving average, the ends padded by repeat
and by F.pad replicate), TSMixer, iTransformer (variates as tokens). Recommenders:
xDeepFM's compressed interaction network, AutoInt, a two-tower model scored by cosine
similarity. Graphs and molecules: SchNet (Gaussian RBF expansion of distances, a cosine
cutoff, continuous-filter convolution), EGNN (E(n)-equivariant coordinate updates).
Operators people reach for (ops_a, ops_b, ops_c): flip, roll, lerp, bucketize, argsort,
one_hot, linalg.norm, cosine_similarity, F.normalize, cross, outer, aminmax, remainder,
div with floor rounding, std, var_mean, addcmul, cumprod as exp(cumsum(log)), diff by slices,
atan2 by where, diagonal, tril_indices, pixel_unshuffle, bicubic interpolate, F.unfold /
F.fold, embedding with padding_idx, index_put, masked_fill. In zoo_models8b.py: SE-ResNeXt,
Res2Net, ConvMixer, RepViT, MobileNetV4's UIB, HorNet's gnConv, FocalNet, EfficientFormer,
SegNet (MaxPool indices and MaxUnpool), a DCGAN generator, LinkNet, BiSeNet's attention
refinement, an FPN with a RetinaNet head, SSD's prior decode, YOLOv7's ELAN, Demucs,
DCCRN's complex convolution, EnCodec's residual vector quantizer. Written out in plain
torch.nn; each class follows its source's forward.

Same Case as tests/onnx/zoo_models.py; used by tests/onnx/test_torch_zoo.py --module
zoo_models8 (ctests onnx_torch_zoo8, 8b, 8c, 8d, 8e) and tests/bench/bench_torch_blocks.py
(zoo8:NAME).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case
from zoo_models8b import (BiSeNetARM, ConvMixer, DCCRN, DCGANGen, Demucs, EfficientFormer, ELANNet, EnCodecRVQ,
                          FocalNet, FPNRetina, HorNet, LinkNet, MobileNetV4, Res2Net, RepViT, SegNet, SEResNeXt,
                          SSDDecode)


# ---------------- decoder blocks ----------------


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6, plus_one=False):
        super().__init__()
        self.eps, self.plus_one = eps, plus_one
        self.weight = nn.Parameter(torch.randn(d) * 0.1 + (0.0 if plus_one else 1.0))

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        y = (x * torch.rsqrt(v + self.eps)).to(x.dtype)
        return y * (1.0 + self.weight) if self.plus_one else self.weight * y


def rope_table(s, dim, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    f = torch.arange(s, dtype=torch.float32)[:, None] * inv[None]
    emb = torch.cat((f, f), -1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)


def causal(s, window=0):
    """additive causal mask (s, s); window > 0 also masks keys window or more behind"""
    i = torch.arange(s)
    keep = i[None, :] <= i[:, None]
    if window:
        keep = keep & (i[:, None] - i[None, :] < window)
    return torch.zeros(s, s).masked_fill(~keep, float("-inf"))


class Qwen2Block(nn.Module):
    """Hugging Face Qwen2 decoder layer: biased q / k / v, rotary (base 1e6), grouped
    k / v heads. mode 0 repeat_kv by expand + reshape (HF), 1 by repeat + flatten, 2
    queries reshaped to (b, kvh, groups, s, hd) against the unrepeated keys. Not a mode:
    repeat_interleave, which PyTorch 1.13 exports with a dynamic sequence as a Reshape to
    (0, -1, 0, hd) of a (b, 1, g, s, hd) expand (dims s and g swapped; ONNX Runtime fails
    at the next Mul, relaxc at the Reshape)"""
    def __init__(self, d=64, h=4, kvh=2, inter=128, mode=0, vocab=0):
        super().__init__()
        self.h, self.kvh, self.hd, self.mode = h, kvh, d // h, mode
        self.q = nn.Linear(d, d)
        self.k, self.v = nn.Linear(d, kvh * self.hd), nn.Linear(d, kvh * self.hd)
        self.o = nn.Linear(d, d, bias=False)
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.gate, self.up = nn.Linear(d, inter, bias=False), nn.Linear(d, inter, bias=False)
        self.down = nn.Linear(inter, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        g = self.h // self.kvh
        y = self.n1(x)
        q = self.q(y).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        cos, sin = rope_table(s, self.hd, 1e6)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        mask = causal(s)
        if self.mode == 2:
            qg = q.reshape(b, self.kvh, g, s, self.hd)
            a = (qg @ k[:, :, None].transpose(-2, -1)) / math.sqrt(self.hd) + mask
            o = (a.softmax(-1) @ v[:, :, None]).reshape(b, self.h, s, self.hd)
        else:
            if self.mode == 0:
                k = k[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
                v = v[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
            else:
                k = k[:, :, None].repeat(1, 1, g, 1, 1).flatten(1, 2)
                v = v[:, :, None].repeat(1, 1, g, 1, 1).flatten(1, 2)
            a = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd) + mask
            o = a.softmax(-1, dtype=torch.float32) @ v
        x = x + self.o(o.transpose(1, 2).reshape(b, s, d))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Phi3Block(nn.Module):
    """Phi-3's decoder layer: one qkv_proj sliced into q, k, v by offsets, one
    gate_up_proj chunked, rotary, RMSNorm"""
    def __init__(self, d=64, h=4, kvh=2, inter=128):
        super().__init__()
        self.h, self.kvh, self.hd = h, kvh, d // h
        self.qkv = nn.Linear(d, d + 2 * kvh * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate_up, self.down = nn.Linear(d, 2 * inter, bias=False), nn.Linear(inter, d, bias=False)
        self.n1, self.n2 = RMSNorm(d, 1e-5), RMSNorm(d, 1e-5)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(self.n1(x))
        kv = self.kvh * self.hd
        q = qkv[..., :d].view(b, s, self.h, self.hd).transpose(1, 2)
        k = qkv[..., d:d + kv].view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = qkv[..., d + kv:].view(b, s, self.kvh, self.hd).transpose(1, 2)
        cos, sin = rope_table(s, self.hd)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        g = self.h // self.kvh
        k = k[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
        v = v[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
        a = (q @ k.transpose(2, 3)) / math.sqrt(self.hd) + causal(s)
        x = x + self.o((a.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d))
        gate, up = self.gate_up(self.n2(x)).chunk(2, -1)
        return x + self.down(up * F.silu(gate))


class StableLMBlock(nn.Module):
    """StableLM's decoder layer: LayerNorm, rotary on the first quarter of each head
    (partial_rotary_factor 0.25), the rest passed through, SwiGLU"""
    def __init__(self, d=64, h=4, inter=160, frac=0.25):
        super().__init__()
        self.h, self.hd = h, d // h
        self.rot = int(self.hd * frac)
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.o = nn.Linear(d, d, bias=False)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.gate, self.up = nn.Linear(d, inter, bias=False), nn.Linear(d, inter, bias=False)
        self.down = nn.Linear(inter, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        y = self.n1(x)
        q, k, v = (p(y).view(b, s, self.h, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        cos, sin = rope_table(s, self.rot)
        qr, qp = q[..., :self.rot], q[..., self.rot:]
        kr, kp = k[..., :self.rot], k[..., self.rot:]
        q = torch.cat((qr * cos + rotate_half(qr) * sin, qp), -1)
        k = torch.cat((kr * cos + rotate_half(kr) * sin, kp), -1)
        a = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + causal(s)
        x = x + self.o((a.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class OPT(nn.Module):
    """Hugging Face OPT: token embeddings, learned positions from the attention mask
    ((cumsum(mask) * mask) - 1 + offset 2), pre-LN layers with ReLU FFN, the padding
    mask merged with the causal one (finfo.min), the LM head tied to the embeddings"""
    def __init__(self, vocab=100, d=64, h=4, layers=2, max_pos=64):
        super().__init__()
        self.h = h
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_pos + 2, d)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), o=nn.Linear(d, d), n2=nn.LayerNorm(d),
            fc1=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d))) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, ids, mask):
        b, s = ids.shape
        pos = (torch.cumsum(mask, 1).type_as(mask) * mask).long() - 1
        x = self.emb(ids) + self.pos(pos + 2)
        big = torch.finfo(torch.float32).min
        m = torch.full((s, s), big).triu(1)[None, None]
        m = m.masked_fill((1 - mask[:, None, None, :]).bool(), big)
        hd = x.shape[-1] // self.h
        for L in self.layers:
            q, k, v = L["qkv"](L["n1"](x)).view(b, s, 3, self.h, hd).permute(2, 0, 3, 1, 4)
            a = torch.max((q * hd ** -0.5) @ k.transpose(-1, -2) + m, torch.tensor(big))
            x = x + L["o"]((a.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1))
            x = x + L["fc2"](F.relu(L["fc1"](L["n2"](x))))
        return F.linear(self.norm(x), self.emb.weight)


class Gemma2(nn.Module):
    """Gemma 2: embeddings scaled by sqrt(d), RMSNorm (1 + w) before and after both the
    attention and the MLP (sandwich), attention logits soft-capped (tanh(a / 50) * 50),
    GeGLU (tanh GELU), final logits soft-capped at 30, alternate layers windowed"""
    def __init__(self, vocab=100, d=64, h=4, kvh=2, inter=128, layers=2, window=4):
        super().__init__()
        self.h, self.kvh, self.hd, self.window = h, kvh, d // h, window
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            q=nn.Linear(d, d, bias=False), k=nn.Linear(d, kvh * self.hd, bias=False),
            v=nn.Linear(d, kvh * self.hd, bias=False), o=nn.Linear(d, d, bias=False),
            gate=nn.Linear(d, inter, bias=False), up=nn.Linear(d, inter, bias=False),
            down=nn.Linear(inter, d, bias=False),
            **{n: RMSNorm(d, plus_one=True) for n in ("pre_a", "post_a", "pre_f", "post_f")}))
            for _ in range(layers))
        self.norm = RMSNorm(d, plus_one=True)

    def forward(self, ids):
        b, s = ids.shape
        x = self.emb(ids) * torch.tensor(self.emb.weight.shape[1] ** 0.5)
        cos, sin = rope_table(s, self.hd)
        g = self.h // self.kvh
        for i, L in enumerate(self.layers):
            y = L["pre_a"](x)
            q = L["q"](y).view(b, s, self.h, self.hd).transpose(1, 2)
            k = L["k"](y).view(b, s, self.kvh, self.hd).transpose(1, 2)
            v = L["v"](y).view(b, s, self.kvh, self.hd).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k = k[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
            v = v[:, :, None].expand(b, self.kvh, g, s, self.hd).reshape(b, self.h, s, self.hd)
            a = (q @ k.transpose(2, 3)) * self.hd ** -0.5
            a = torch.tanh(a / 50.0) * 50.0 + causal(s, self.window if i % 2 == 0 else 0)
            x = x + L["post_a"](L["o"]((a.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)))
            y = L["pre_f"](x)
            x = x + L["post_f"](L["down"](F.gelu(L["gate"](y), approximate="tanh") * L["up"](y)))
        logits = F.linear(self.norm(x), self.emb.weight)
        return torch.tanh(logits / 30.0) * 30.0


class GPTNeo(nn.Module):
    """GPT-Neo: learned positions, alternating global / local attention (a causal window
    of 4 over a bias buffer sliced to s), scores not scaled by sqrt(hd), tanh GELU MLP"""
    def __init__(self, vocab=100, d=64, h=4, layers=2, window=4, max_pos=64):
        super().__init__()
        self.h = h
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(max_pos, d)
        bias = torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))
        self.register_buffer("global_bias", bias[None, None])
        self.register_buffer("local_bias", (bias ^ torch.tril(bias, -window))[None, None])
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), q=nn.Linear(d, d, bias=False), k=nn.Linear(d, d, bias=False),
            v=nn.Linear(d, d, bias=False), o=nn.Linear(d, d), ln2=nn.LayerNorm(d),
            fc=nn.Linear(d, 4 * d), proj=nn.Linear(4 * d, d))) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):
        b, s = ids.shape
        x = self.wte(ids) + self.wpe(torch.arange(s)[None])
        hd = x.shape[-1] // self.h
        for i, L in enumerate(self.layers):
            y = L["ln1"](x)
            q, k, v = (L[n](y).view(b, s, self.h, hd).transpose(1, 2) for n in "qkv")
            a = q.float() @ k.float().transpose(-1, -2)
            keep = (self.global_bias if i % 2 == 0 else self.local_bias)[:, :, :s, :s]
            a = torch.where(keep, a, torch.tensor(torch.finfo(torch.float32).min))
            x = x + L["o"]((a.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1))
            x = x + L["proj"](F.gelu(L["fc"](L["ln2"](x)), approximate="tanh"))
        return self.ln_f(x)


# ---------------- vision transformers ----------------


class CaiT(nn.Module):
    """CaiT: self-attention layers with talking heads (Linear mixes of heads before and
    after the softmax) and LayerScale over the patches, then class-attention layers: the
    class token alone queries [cls, patches]"""
    def __init__(self, d=64, h=4, p=4, img=16, sa=2, ca=1, classes=10):
        super().__init__()
        self.h = h
        self.patch = nn.Conv2d(3, d, p, p)
        self.pos = nn.Parameter(torch.randn(1, (img // p) ** 2, d) * 0.02)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.sa = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), pl=nn.Linear(h, h), pw=nn.Linear(h, h),
            proj=nn.Linear(d, d), n2=nn.LayerNorm(d), fc1=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d)))
            for _ in range(sa))
        self.ca = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), q=nn.Linear(d, d), k=nn.Linear(d, d), v=nn.Linear(d, d), proj=nn.Linear(d, d),
            n2=nn.LayerNorm(d), fc1=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d))) for _ in range(ca))
        self.g = nn.Parameter(torch.rand(sa + ca, 2, d))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2) + self.pos
        b, n, c = x.shape
        hd = c // self.h
        for i, L in enumerate(self.sa):
            q, k, v = L["qkv"](L["n1"](x)).reshape(b, n, 3, self.h, hd).permute(2, 0, 3, 1, 4)
            a = (q * hd ** -0.5) @ k.transpose(-2, -1)
            a = L["pl"](a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2).softmax(-1)
            a = L["pw"](a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            x = x + self.g[i, 0] * L["proj"]((a @ v).transpose(1, 2).reshape(b, n, c))
            x = x + self.g[i, 1] * L["fc2"](F.gelu(L["fc1"](L["n2"](x))))
        cls = self.cls.expand(b, -1, -1)
        for j, L in enumerate(self.ca):
            u = L["n1"](torch.cat((cls, x), 1))
            q = L["q"](u[:, 0]).unsqueeze(1).reshape(b, 1, self.h, hd).permute(0, 2, 1, 3)
            k = L["k"](u).reshape(b, n + 1, self.h, hd).permute(0, 2, 1, 3)
            v = L["v"](u).reshape(b, n + 1, self.h, hd).permute(0, 2, 1, 3)
            a = ((q * hd ** -0.5) @ k.transpose(-2, -1)).softmax(-1)
            cls = cls + self.g[len(self.sa) + j, 0] * L["proj"]((a @ v).transpose(1, 2).reshape(b, 1, c))
            cls = cls + self.g[len(self.sa) + j, 1] * L["fc2"](F.gelu(L["fc1"](L["n2"](cls))))
        return self.head(self.norm(torch.cat((cls, x), 1))[:, 0])


class TokenLayer(nn.Module):
    def __init__(self, d, h=1):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

    def forward(self, x):
        y = self.n1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.n2(x))


class T2TViT(nn.Module):
    """T2T-ViT's tokens-to-token module: nn.Unfold(7, stride 4, pad 2) soft split, a
    token transformer, tokens reshaped back to an image and unfolded again (3, 2, 1)
    twice, then a ViT layer over the projected tokens"""
    def __init__(self, tok=16, d=64, classes=10):
        super().__init__()
        self.s0 = nn.Unfold((7, 7), stride=(4, 4), padding=(2, 2))
        self.s1 = nn.Unfold((3, 3), stride=(2, 2), padding=(1, 1))
        self.s2 = nn.Unfold((3, 3), stride=(2, 2), padding=(1, 1))
        self.p0 = nn.Linear(3 * 49, tok)
        self.t1, self.p1 = TokenLayer(tok), nn.Linear(tok * 9, tok)
        self.t2, self.proj = TokenLayer(tok), nn.Linear(tok * 9, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.vit, self.norm, self.head = TokenLayer(d, 4), nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, img):
        x = self.s0(img).transpose(1, 2)
        b, _, hh, ww = img.shape
        h, w = (hh + 4 - 7) // 4 + 1, (ww + 4 - 7) // 4 + 1
        x = self.t1(self.p0(x))
        x = self.s1(x.transpose(1, 2).reshape(b, -1, h, w)).transpose(1, 2)
        h, w = (h - 1) // 2 + 1, (w - 1) // 2 + 1
        x = self.t2(self.p1(x))
        x = self.s2(x.transpose(1, 2).reshape(b, -1, h, w)).transpose(1, 2)
        x = torch.cat((self.cls.expand(b, -1, -1), self.proj(x)), 1)
        return self.head(self.norm(self.vit(x))[:, 0])


class ConvProjAttn(nn.Module):
    """CvT's convolutional projection: tokens as an image, depthwise 3x3 + BatchNorm
    (stride 1 for q, 2 for k and v), flattened, then Linear projections and attention"""
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.cq = nn.Sequential(nn.Conv2d(d, d, 3, 1, 1, groups=d, bias=False), nn.BatchNorm2d(d))
        self.ck = nn.Sequential(nn.Conv2d(d, d, 3, 2, 1, groups=d, bias=False), nn.BatchNorm2d(d))
        self.cv = nn.Sequential(nn.Conv2d(d, d, 3, 2, 1, groups=d, bias=False), nn.BatchNorm2d(d))
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, hh, ww):
        b, n, c = x.shape
        img = x.transpose(1, 2).reshape(b, c, hh, ww)
        hd = c // self.h

        def heads(t, lin):
            t = lin(t.flatten(2).transpose(1, 2))
            return t.reshape(b, -1, self.h, hd).transpose(1, 2)
        q, k, v = heads(self.cq(img), self.q), heads(self.ck(img), self.k), heads(self.cv(img), self.v)
        a = torch.einsum("bhlk,bhtk->bhlt", q, k) * hd ** -0.5
        o = torch.einsum("bhlt,bhtv->bhlv", a.softmax(-1), v)
        return self.o(o.transpose(1, 2).reshape(b, n, c))


class CvT(nn.Module):
    """a CvT stage: convolutional token embedding (7x7 stride 4 + LayerNorm), two blocks of
    convolutional-projection attention and an MLP"""
    def __init__(self, d=32, h=2, classes=10):
        super().__init__()
        self.embed, self.n0 = nn.Conv2d(3, d, 7, 4, 2), nn.LayerNorm(d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.LayerNorm(d), attn=ConvProjAttn(d, h), n2=nn.LayerNorm(d),
            mlp=nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)))) for _ in range(2))
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        x = self.embed(img)
        b, c, hh, ww = x.shape
        x = self.n0(x.flatten(2).transpose(1, 2))
        for B in self.blocks:
            x = x + B["attn"](B["n1"](x), hh, ww)
            x = x + B["mlp"](B["n2"](x))
        return self.head(x.mean(1))


class LinearSelfAttn(nn.Module):
    """MobileViTv2's separable self-attention over unfolded patches (b, d, P, N): a 1x1
    conv to [1 query, d keys, d values], softmax of the query over N, a context vector
    as the weighted sum of keys, ReLU(values) times the context, a 1x1 out projection"""
    def __init__(self, d):
        super().__init__()
        self.qkv, self.out = nn.Conv2d(d, 1 + 2 * d, 1), nn.Conv2d(d, d, 1)
        self.d = d

    def forward(self, x):
        q, k, v = torch.split(self.qkv(x), [1, self.d, self.d], dim=1)
        scores = F.softmax(q, dim=-1)
        ctx = (k * scores).sum(dim=-1, keepdim=True)
        return self.out(F.relu(v) * ctx.expand_as(v))


class MobileViTv2(nn.Module):
    """MobileViTv2 block: depthwise 3x3 + 1x1 local rep, patches unfolded by reshape
    (2x2: (b, d, 4, N)), two separable-attention layers with GroupNorm(1) pre-norms,
    folded back, a 1x1 projection with BatchNorm"""
    def __init__(self, c=16, d=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.SiLU())
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), nn.BatchNorm2d(c), nn.SiLU(),
                                   nn.Conv2d(c, d, 1, bias=False))
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            n1=nn.GroupNorm(1, d), attn=LinearSelfAttn(d), n2=nn.GroupNorm(1, d),
            ffn=nn.Sequential(nn.Conv2d(d, 2 * d, 1), nn.SiLU(), nn.Conv2d(2 * d, d, 1)))) for _ in range(2))
        self.norm = nn.GroupNorm(1, d)
        self.proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Linear(c, classes)

    def forward(self, img):
        x = self.local(self.stem(img))
        b, d, h, w = x.shape
        p = x.reshape(b, d, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4).reshape(b, d, 4, -1)
        for L in self.layers:
            p = p + L["attn"](L["n1"](p))
            p = p + L["ffn"](L["n2"](p))
        p = self.norm(p).reshape(b, d, 2, 2, h // 2, w // 2).permute(0, 1, 4, 2, 5, 3).reshape(b, d, h, w)
        return self.head(self.proj(p).mean((2, 3)))


# ---------------- time series ----------------


class DLinear(nn.Module):
    """DLinear: the series decomposed by a moving average (kernel 25, stride 1) whose ends
    are padded by repeating the first / last step (pad 0: Autoformer's repeat + cat; pad 1:
    F.pad replicate), seasonal and trend each mapped over time by a Linear per channel
    (individual) or shared"""
    def __init__(self, seq=96, pred=24, ch=7, k=25, pad=0, individual=True):
        super().__init__()
        self.k, self.pad, self.individual = k, pad, individual
        self.avg = nn.AvgPool1d(k, 1)
        if individual:
            self.ws = nn.Parameter(torch.randn(ch, pred, seq) * 0.05)
            self.wt = nn.Parameter(torch.randn(ch, pred, seq) * 0.05)
        else:
            self.ls, self.lt = nn.Linear(seq, pred), nn.Linear(seq, pred)

    def forward(self, x):  # (b, seq, ch)
        if self.pad == 0:
            front = x[:, 0:1, :].repeat(1, (self.k - 1) // 2, 1)
            end = x[:, -1:, :].repeat(1, (self.k - 1) // 2, 1)
            trend = self.avg(torch.cat([front, x, end], 1).permute(0, 2, 1)).permute(0, 2, 1)
        else:
            p = (self.k - 1) // 2
            trend = self.avg(F.pad(x.permute(0, 2, 1), (p, p), mode="replicate")).permute(0, 2, 1)
        seas = (x - trend).permute(0, 2, 1)
        trend = trend.permute(0, 2, 1)
        if self.individual:
            y = torch.einsum("cps,bcs->bcp", self.ws, seas) + torch.einsum("cps,bcs->bcp", self.wt, trend)
        else:
            y = self.ls(seas) + self.lt(trend)
        return y.permute(0, 2, 1)


class TSMixer(nn.Module):
    """TSMixer: reversible instance norm, blocks of time mixing (BatchNorm2d over the
    (b, 1, t, c) view, Linear over time by transposes, ReLU) and feature mixing (a
    two-layer MLP over channels), a temporal projection, the norm undone"""
    def __init__(self, seq=32, pred=8, ch=7, ff=32, blocks=2):
        super().__init__()
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            bt=nn.BatchNorm2d(1), lt=nn.Linear(seq, seq), bf=nn.BatchNorm2d(1),
            f1=nn.Linear(ch, ff), f2=nn.Linear(ff, ch))) for _ in range(blocks))
        self.proj = nn.Linear(seq, pred)
        self.aw, self.ab = nn.Parameter(torch.rand(ch) + 0.5), nn.Parameter(torch.randn(ch) * 0.1)

    def forward(self, x):  # (b, t, c)
        mu = x.mean(1, keepdim=True)
        sd = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
        x = (x - mu) / sd * self.aw + self.ab
        for B in self.blocks:
            y = B["bt"](x.unsqueeze(1)).squeeze(1)
            x = x + F.relu(B["lt"](y.transpose(1, 2))).transpose(1, 2)
            y = B["bf"](x.unsqueeze(1)).squeeze(1)
            x = x + B["f2"](F.relu(B["f1"](y)))
        y = self.proj(x.transpose(1, 2)).transpose(1, 2)
        return (y - self.ab) / (self.aw + 1e-10) * sd + mu


class ITransformer(nn.Module):
    """iTransformer: each variate's whole series embedded as one token (Linear over time,
    plus time-feature covariates as extra tokens), a post-norm encoder over variates,
    projected to the horizon; normalized per series (non-stationary)"""
    def __init__(self, seq=32, pred=8, d=64, h=4, layers=2):
        super().__init__()
        self.embed = nn.Linear(seq, d)
        self.enc = nn.ModuleList(nn.TransformerEncoderLayer(d, h, 2 * d, 0.0, batch_first=True) for _ in range(layers))
        self.norm, self.proj = nn.LayerNorm(d), nn.Linear(d, pred)

    def forward(self, x, marks):  # (b, t, n), (b, t, m)
        mu = x.mean(1, keepdim=True).detach()
        sd = torch.sqrt(torch.var(x - mu, dim=1, keepdim=True, unbiased=False) + 1e-5)
        x = (x - mu) / sd
        n = x.shape[2]
        tok = self.embed(torch.cat([x, marks], 2).permute(0, 2, 1))
        for L in self.enc:
            tok = L(tok)
        y = self.proj(self.norm(tok)).permute(0, 2, 1)[:, :, :n]
        return y * sd + mu


# ---------------- recommenders ----------------


class XDeepFM(nn.Module):
    """xDeepFM: field embeddings, a linear part, the compressed interaction network
    (outer products of the layer with the base fields by einsum, folded to channels,
    1x1 Conv1d, sum-pooled) and a DNN, summed into a logit"""
    def __init__(self, fields=8, vocab=100, d=16, cin=(32, 32), dnn=64):
        super().__init__()
        self.emb, self.lin = nn.Embedding(fields * vocab, d), nn.Embedding(fields * vocab, 1)
        self.register_buffer("offs", torch.arange(fields) * vocab)
        sizes = [fields] + list(cin)
        self.cin = nn.ModuleList(nn.Conv1d(sizes[i] * fields, sizes[i + 1], 1) for i in range(len(cin)))
        self.cin_out = nn.Linear(sum(cin), 1)
        self.dnn = nn.Sequential(nn.Linear(fields * d, dnn), nn.ReLU(), nn.Linear(dnn, dnn), nn.ReLU(),
                                 nn.Linear(dnn, 1))

    def forward(self, ids):
        ids = ids + self.offs
        x0 = self.emb(ids)  # (b, m, d)
        b, m, d = x0.shape
        xs, pooled = x0, []
        for conv in self.cin:
            z = torch.einsum("bhd,bmd->bhmd", xs, x0).reshape(b, -1, d)
            xs = F.relu(conv(z))
            pooled.append(xs.sum(-1))
        y = self.lin(ids).sum(1) + self.cin_out(torch.cat(pooled, 1)) + self.dnn(x0.reshape(b, -1))
        return torch.sigmoid(y)


class AutoInt(nn.Module):
    """AutoInt: numeric fields as value-scaled embeddings, categorical ones looked up,
    interacting layers (multi-head self-attention over fields with a ReLU residual
    projection), a logit from the flattened fields"""
    def __init__(self, dense=4, sparse=6, vocab=50, d=16, h=2, layers=2):
        super().__init__()
        self.h = h
        self.dense_emb = nn.Parameter(torch.randn(dense, d) * 0.1)
        self.emb = nn.Embedding(sparse * vocab, d)
        self.register_buffer("offs", torch.arange(sparse) * vocab)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            q=nn.Linear(d, d, bias=False), k=nn.Linear(d, d, bias=False), v=nn.Linear(d, d, bias=False),
            res=nn.Linear(d, d, bias=False))) for _ in range(layers))
        self.out = nn.Linear((dense + sparse) * d, 1)

    def forward(self, dense, sparse):
        x = torch.cat([dense[..., None] * self.dense_emb, self.emb(sparse + self.offs)], 1)
        b, f, d = x.shape
        hd = d // self.h
        for L in self.layers:
            q, k, v = (L[n](x).view(b, f, self.h, hd).transpose(1, 2) for n in "qkv")
            a = torch.softmax(q @ k.transpose(-1, -2), -1)
            x = F.relu((a @ v).transpose(1, 2).reshape(b, f, d) + L["res"](x))
        return torch.sigmoid(self.out(x.flatten(1)))


class TwoTower(nn.Module):
    """a two-tower retrieval model: user features (id embedding, mean of history item
    embeddings with padding_idx 0 masked, dense features) and item features through MLPs,
    L2-normalized, scored by cosine similarity over a temperature against every item of
    the batch (in-batch logits) and row by row"""
    def __init__(self, users=100, items=200, d=32, dense=4):
        super().__init__()
        self.uemb, self.iemb = nn.Embedding(users, d), nn.Embedding(items, d, padding_idx=0)
        self.utower = nn.Sequential(nn.Linear(2 * d + dense, 64), nn.ReLU(), nn.Linear(64, d))
        self.itower = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, d))
        self.t = 0.05

    def forward(self, uid, hist, feats, item):
        m = (hist != 0).float()[..., None]
        h = (self.iemb(hist) * m).sum(1) / m.sum(1).clamp(min=1.0)
        u = F.normalize(self.utower(torch.cat([self.uemb(uid), h, feats], -1)), dim=-1)
        v = F.normalize(self.itower(self.iemb(item)), dim=-1)
        return u @ v.t() / self.t, F.cosine_similarity(u, v, dim=-1)


# ---------------- graphs and molecules ----------------


class SchNet(nn.Module):
    """SchNet: atom-type embeddings, pairwise distances (cdist), a Gaussian RBF expansion
    (exp(-gamma (d - mu)^2)) through a filter network with shifted softplus, a cosine
    cutoff and the self-pair masked, continuous-filter convolutions (sum over j of
    x_j * W_ij), atomwise MLPs summed to an energy per molecule"""
    def __init__(self, types=10, d=32, rbf=25, cutoff=5.0, interactions=2):
        super().__init__()
        self.emb = nn.Embedding(types, d)
        self.register_buffer("mu", torch.linspace(0, cutoff, rbf))
        self.gamma, self.cutoff = 0.5 / (cutoff / (rbf - 1)) ** 2, cutoff
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            f1=nn.Linear(rbf, d), f2=nn.Linear(d, d), in2f=nn.Linear(d, d, bias=False), f2out=nn.Linear(d, d),
            dense=nn.Linear(d, d))) for _ in range(interactions))
        self.out1, self.out2 = nn.Linear(d, d // 2), nn.Linear(d // 2, 1)

    @staticmethod
    def ssp(x):
        return F.softplus(x) - math.log(2.0)

    def forward(self, z, pos):
        x = self.emb(z)  # (b, n, d)
        n = z.shape[1]
        dist = torch.cdist(pos, pos)  # (b, n, n)
        rbf = torch.exp(-self.gamma * (dist[..., None] - self.mu) ** 2)
        c = 0.5 * (torch.cos(dist * math.pi / self.cutoff) + 1.0) * (dist < self.cutoff).float()
        c = c * (1.0 - torch.eye(n))
        for B in self.blocks:
            w = B["f2"](self.ssp(B["f1"](rbf))) * c[..., None]  # (b, n, n, d)
            y = (B["in2f"](x)[:, None, :, :] * w).sum(2)
            x = x + B["dense"](self.ssp(B["f2out"](y)))
        return self.out2(self.ssp(self.out1(x))).sum(1)


class EGNN(nn.Module):
    """E(n)-equivariant GNN over a fully connected graph with an edge mask: messages
    phi_e(h_i, h_j, |x_i - x_j|^2), coordinates moved by the mean of (x_i - x_j) *
    phi_x(m_ij), nodes updated by phi_h(h_i, sum_j m_ij) with a residual"""
    def __init__(self, d_in=8, d=32, layers=2):
        super().__init__()
        self.embed = nn.Linear(d_in, d)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            e=nn.Sequential(nn.Linear(2 * d + 1, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU()),
            x=nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1, bias=False)),
            h=nn.Sequential(nn.Linear(2 * d, d), nn.SiLU(), nn.Linear(d, d)))) for _ in range(layers))

    def forward(self, h, x, mask):  # (b, n, f), (b, n, 3), (b, n)
        h = self.embed(h)
        b, n, d = h.shape
        em = (mask[:, :, None] * mask[:, None, :] * (1.0 - torch.eye(n)))[..., None]
        for L in self.layers:
            diff = x[:, :, None] - x[:, None, :]
            r2 = (diff ** 2).sum(-1, keepdim=True)
            hi, hj = h[:, :, None].expand(b, n, n, d), h[:, None, :].expand(b, n, n, d)
            m = L["e"](torch.cat([hi, hj, r2], -1)) * em
            x = x + (diff * L["x"](m) * em).sum(2) / (em.sum(2) + 1.0)
            h = h + L["h"](torch.cat([h, m.sum(2)], -1))
        return h * mask[..., None], x


# ---------------- operators ----------------


class OpsA(nn.Module):
    """element and reduction forms: flip, roll, lerp, bucketize, argsort, one_hot,
    linalg.norm / vector_norm, cosine_similarity, F.normalize, cross, outer, aminmax,
    remainder, div with floor rounding (torch.floor_divide exports as a truncating Div:
    ONNX Runtime too is one off PyTorch on negative quotients), std, var_mean, addcmul"""
    def __init__(self, d=16):
        super().__init__()
        self.register_buffer("bounds", torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.5]))
        self.w = nn.Parameter(torch.randn(d))

    def forward(self, x):  # (b, s, d)
        f = torch.flip(x, [1, 2]) + torch.roll(x, 3, 2) + torch.roll(x, -1, 1)
        y = torch.lerp(x, f, 0.3) + torch.lerp(f, x, torch.sigmoid(self.w))
        bins = torch.bucketize(x, self.bounds)
        order = torch.argsort(x[..., 0], dim=1, descending=True)
        oh = F.one_hot(bins[..., 0], 6).float()
        nrm = torch.linalg.norm(x, dim=-1) + torch.linalg.vector_norm(x, 3, dim=-1) + torch.linalg.norm(x, ord=1, dim=1)[:, :1]
        cs = F.cosine_similarity(x, f, dim=-1) + F.normalize(x, p=2, dim=1).sum(-1)
        cr = torch.linalg.cross(x[..., :3], f[..., 3:6])
        mn, mx = torch.aminmax(x, dim=-1)
        r = torch.remainder(x * 3, 1.3) + torch.div(x * 3, 1.3, rounding_mode="floor")
        var, mean = torch.var_mean(x, -1, unbiased=True)
        misc = torch.addcmul(x, f, y, value=0.5) + torch.std(x, 1, keepdim=True)
        out = torch.einsum("bi,bj->bij", x[:, 0], x[:, -1]) + torch.outer(self.w, self.w)
        return (y, bins, order, oh, nrm + cs + mn * mx + var - mean, cr, r + misc, out)


class OpsB(nn.Module):
    """forms written out for export: cumprod as exp(cumsum(log)) with the sign by parity,
    diff by slices, atan2 by atan and where, diagonal and a trace, tril_indices gather,
    masked_fill of an upper triangle, embedding with padding_idx, index_put of rows"""
    def __init__(self, d=16, vocab=20):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        tri = torch.tril_indices(d, d, -1)
        self.register_buffer("ti", tri[0] * d + tri[1])

    def forward(self, x, ids):  # (b, s, d), (b, s)
        a = x.abs() + 0.5
        neg = (x < 0).long().cumsum(1) % 2
        cp = torch.exp(torch.cumsum(torch.log(a), 1)) * (1 - 2 * neg.float())
        df = x[:, 1:] - x[:, :-1]
        df2 = df[:, 1:] - df[:, :-1]
        yv, xv = x[..., 1:], x[..., :-1] + 0.1
        at = torch.atan(yv / xv)
        at = torch.where(xv < 0, torch.where(yv >= 0, at + math.pi, at - math.pi), at)
        g = x.transpose(1, 2) @ x  # (b, d, d)
        dg = torch.diagonal(g, 0, 1, 2)
        tr = dg.sum(-1, keepdim=True)
        lo = g.flatten(1)[:, self.ti]
        up = g.masked_fill(torch.ones(g.shape[-1], g.shape[-1], dtype=torch.bool).triu(1), 0.0)
        e = self.emb(ids)
        z = torch.zeros_like(x)
        z[:, 0] = e[:, 0] * 2.0
        z[:, -1] = x[:, -1]
        return cp, df2, at, dg / tr, lo, up, e + z


class OpsC(nn.Module):
    """spatial forms: pixel_unshuffle, bicubic interpolate (align_corners both ways),
    F.unfold of strided and of overlapping patches, global adaptive max pooling (F.fold is
    Col2Im, which PyTorch 1.13 does not export)"""
    def __init__(self, c=3):
        super().__init__()
        self.conv = nn.Conv2d(4 * c, c, 1)

    def forward(self, x):
        u = self.conv(F.pixel_unshuffle(x, 2))
        b1 = F.interpolate(u, scale_factor=2.0, mode="bicubic", align_corners=False)
        b2 = F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True)
        p = F.unfold(x, 4, stride=4)
        q = F.unfold(x, 3, padding=1, dilation=2)
        return b1 - x, b2, p, q * 2.0, F.adaptive_max_pool2d(x, 1)


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def img(name="x"):
        return {name: {0: "b", 2: "h", 3: "w"}}

    def seq(names=("x",)):
        return {n: {0: "b", 1: "s"} for n in names}
    z = {}
    for mode, name in enumerate(("qwen2_expand", "qwen2_repeat", "qwen2_grouped")):
        z[name] = Case(
            lambda mode=mode: Qwen2Block(896, 14, 2, 4864, mode) if big else Qwen2Block(mode=mode),
            lambda b, s: (torch.randn(b, s, 896 if big else 64),), ["x"], ["y"], seq(), [13, 17],
            [(2, 9), (1, 6)], (1, 128))
    z["phi3"] = Case(
        lambda: Phi3Block(1024, 16, 8, 2816) if big else Phi3Block(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),), ["x"], ["y"], seq(), [14, 17], [(2, 9), (1, 6)],
        (1, 128))
    z["stablelm"] = Case(
        lambda: StableLMBlock(1024, 16, 2816) if big else StableLMBlock(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),), ["x"], ["y"], seq(), [13, 17], [(2, 9), (1, 6)],
        (1, 128))

    def padded(b, s):
        m = torch.ones(b, s, dtype=torch.long)
        for i in range(1, b):
            m[i, :min(i * 2, s - 1)] = 0  # left padding, as OPT generation pads
        return m
    z["opt"] = Case(
        lambda: OPT(2000, 512, 8, 2, 512) if big else OPT(),
        lambda b, s: (torch.randint(0, 2000 if big else 100, (b, s)), padded(b, s)), ["ids", "mask"], ["logits"],
        seq(("ids", "mask")), [14, 17], [(2, 9), (3, 6)], (2, 128))
    z["gemma2"] = Case(
        lambda: Gemma2(2000, 512, 8, 4, 1024, 2, 32) if big else Gemma2(),
        lambda b, s: (torch.randint(0, 2000 if big else 100, (b, s)),), ["ids"], ["logits"], seq(("ids",)),
        [14, 17], [(2, 9), (1, 6)], (2, 128))
    z["gptneo"] = Case(
        lambda: GPTNeo(2000, 768, 12, 2, 256, 256) if big else GPTNeo(),
        lambda b, s: (torch.randint(0, 2000 if big else 100, (b, s)),), ["ids"], ["y"], seq(("ids",)),
        [13, 17], [(2, 9), (1, 6)], (1, 128))
    z["cait"] = Case(  # the position table fixes the patch grid: dynamic batch only
        lambda: CaiT(192, 4, 16, 224, 2, 2, 1000) if big else CaiT(),
        lambda b, s: (torch.randn(b, 3, 224 if big else 16, 224 if big else 16),), ["img"], ["y"],
        {"img": {0: "b"}}, [13, 17], [(2, 0), (3, 0)], (4, 0))
    z["t2t_vit"] = Case(
        lambda: T2TViT(64, 384, 1000) if big else T2TViT(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["img"], ["y"], img("img"), [11, 13], [(2, 32), (1, 48)],
        (2, 224))
    z["cvt"] = Case(
        lambda: CvT(64, 1, 1000) if big else CvT(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["img"], ["y"], img("img"), [12, 13], [(2, 32), (1, 48)],
        (2, 224))
    z["mobilevitv2"] = Case(
        lambda: MobileViTv2(64, 128, 1000) if big else MobileViTv2(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["img"], ["y"], img("img"), [13, 17], [(2, 16), (1, 24)],
        (2, 256))
    for pad, name in enumerate(("dlinear_repeat", "dlinear_pad")):
        z[name] = Case(  # the Linear over time fixes the window: dynamic batch only
            lambda pad=pad: DLinear(336, 96, 321, 25, pad, pad == 0) if big else DLinear(pad=pad, individual=pad == 0),
            lambda b, s: (torch.randn(b, 336 if big else 96, 321 if big else 7),), ["x"], ["y"], {"x": {0: "b"}},
            [12, 13], [(2, 0), (3, 0)], (32, 0))
    z["tsmixer"] = Case(
        lambda: TSMixer(512, 96, 321, 256, 4) if big else TSMixer(),
        lambda b, s: (torch.randn(b, 512 if big else 32, 321 if big else 7),), ["x"], ["y"], {"x": {0: "b"}},
        [13, 17], [(2, 0), (3, 0)], (32, 0))
    z["itransformer"] = Case(  # the variates are the tokens: dynamic batch and variates
        lambda: ITransformer(96, 96, 512, 8, 2) if big else ITransformer(),
        lambda b, n: (torch.randn(b, 96 if big else 32, n), torch.randn(b, 96 if big else 32, 4)),
        ["x", "marks"], ["y"], {"x": {0: "b", 2: "n"}, "marks": {0: "b"}}, [13, 17], [(2, 7), (3, 5)], (32, 321))
    z["xdeepfm"] = Case(
        lambda: XDeepFM(26, 1000, 16, (128, 128), 256) if big else XDeepFM(),
        lambda b, s: (torch.randint(0, 1000 if big else 100, (b, 26 if big else 8)),), ["ids"], ["p"],
        {"ids": {0: "b"}}, [12, 13], [(5, 0), (3, 0)], (1024, 0))
    z["autoint"] = Case(
        lambda: AutoInt(13, 26, 1000, 16, 2, 3) if big else AutoInt(),
        lambda b, s: (torch.randn(b, 13 if big else 4), torch.randint(0, 1000 if big else 50, (b, 26 if big else 6))),
        ["dense", "sparse"], ["p"], {"dense": {0: "b"}, "sparse": {0: "b"}}, [11, 13], [(5, 0), (3, 0)], (1024, 0))
    z["two_tower"] = Case(
        lambda: TwoTower(10000, 50000, 64, 8) if big else TwoTower(),
        lambda b, s: (torch.randint(0, 10000 if big else 100, (b,)),
                      torch.randint(0, 50000 if big else 200, (b, s)) * (torch.arange(s)[None] < s - 2).long(),
                      torch.randn(b, 8 if big else 4), torch.randint(1, 50000 if big else 200, (b,))),
        ["uid", "hist", "feats", "item"], ["logits", "cos"],
        {"uid": {0: "b"}, "hist": {0: "b", 1: "s"}, "feats": {0: "b"}, "item": {0: "b"}}, [11, 13],
        [(5, 6), (3, 9)], (1024, 50))
    z["schnet"] = Case(
        lambda: SchNet(100, 128, 50, 5.0, 3) if big else SchNet(),
        lambda b, n: (torch.randint(1, 100 if big else 10, (b, n)), torch.randn(b, n, 3) * 1.5), ["z", "pos"],
        ["energy"], {"z": {0: "b", 1: "n"}, "pos": {0: "b", 1: "n"}}, [11, 13], [(2, 7), (3, 12)], (16, 29))
    z["egnn"] = Case(
        lambda: EGNN(16, 128, 4) if big else EGNN(),
        lambda b, n: (torch.randn(b, n, 16 if big else 8), torch.randn(b, n, 3),
                      (torch.arange(n)[None] < n - torch.arange(b)[:, None]).float()), ["h", "x", "mask"],
        ["h_out", "x_out"], {"h": {0: "b", 1: "n"}, "x": {0: "b", 1: "n"}, "mask": {0: "b", 1: "n"}}, [13, 17],
        [(2, 7), (3, 12)], (16, 29))
    z["ops_a"] = Case(
        lambda: OpsA(64 if big else 16), lambda b, s: (torch.randn(b, s, 64 if big else 16),), ["x"],
        ["y", "bins", "order", "onehot", "norms", "cross", "misc", "outer"], seq(), [12, 13, 17],
        [(2, 9), (3, 5)], (64, 256))
    z["ops_b"] = Case(
        lambda: OpsB(64 if big else 16), lambda b, s: (torch.randn(b, s, 64 if big else 16),
                                                       torch.randint(0, 20, (b, s))),
        ["x", "ids"], ["cumprod", "diff2", "atan2", "diag", "lower", "upper", "emb"], seq(("x", "ids")),
        [14, 17], [(2, 9), (3, 5)], (64, 256))
    z["ops_c"] = Case(
        lambda: OpsC(), lambda b, s: (torch.randn(b, 3, s, s + 4),), ["x"],
        ["bicubic", "bicubic_ac", "patches", "overlap", "amax"],
        img(), [11, 13, 17], [(2, 8), (1, 12)], (8, 256))
    # zoo_models8b.py
    def classifier(small, large, opsets, sizes=((2, 32), (1, 48))):
        """an image classifier at (b, 3, s, s + 8), dynamic batch and size, 224 at bench"""
        return Case(lambda: large() if big else small(), lambda b, s: (torch.randn(b, 3, s, s + 8),), ["x"], ["y"],
                    img(), opsets, list(sizes), (1, 224))
    z["se_resnext"] = classifier(SEResNeXt, lambda: SEResNeXt(64, 32, 4, 1000), [11, 13])
    z["res2net"] = classifier(Res2Net, lambda: Res2Net(64, 26, 4, 1000), [11, 13])
    z["convmixer"] = classifier(ConvMixer, lambda: ConvMixer(256, 4, 9, 7, 1000), [13, 17], ((2, 16), (1, 24)))
    z["repvit"] = classifier(RepViT, lambda: RepViT(48, 1000), [13, 17])
    z["mobilenetv4"] = classifier(MobileNetV4, lambda: MobileNetV4(32, 1000), [13, 17])
    z["hornet"] = classifier(HorNet, lambda: HorNet(64, 1000), [13, 17])
    z["focalnet"] = classifier(FocalNet, lambda: FocalNet(96, 1000), [13, 17])
    z["efficientformer"] = classifier(EfficientFormer, lambda: EfficientFormer(48, 1000), [13, 17])
    z["segnet"] = Case(
        lambda: SegNet(64, 12) if big else SegNet(), lambda b, s: (torch.randn(b, 3, s, s + 8),),
        ["x"], ["y"], img(), [11, 13], [(2, 16), (1, 24)], (1, 256))
    z["segnet_ceil"] = Case(  # 3x3 windows, stride 2, pad 1, ceil_mode, odd sizes
        lambda: SegNet(64, 12, ceil=True) if big else SegNet(ceil=True), lambda b, s: (torch.randn(b, 3, s, s + 6),),
        ["x"], ["y"], img(), [11, 13], [(2, 17), (1, 23)], (1, 255))
    z["dcgan"] = Case(
        lambda: DCGANGen(100, 64) if big else DCGANGen(), lambda b, s: (torch.randn(b, 100 if big else 16, 1, 1),),
        ["z"], ["img"], {"z": {0: "b"}}, [11, 13], [(2, 0), (3, 0)], (64, 0))
    z["linknet"] = Case(
        lambda: LinkNet(64, 12) if big else LinkNet(), lambda b, s: (torch.randn(b, 3, s, s + 16),),
        ["x"], ["y"], img(), [11, 13], [(2, 32), (1, 64)], (1, 256))
    z["bisenet_arm"] = Case(
        lambda: BiSeNetARM(64, 19) if big else BiSeNetARM(), lambda b, s: (torch.randn(b, 3, s, s + 32),),
        ["x"], ["y"], img(), [11, 13], [(2, 32), (1, 64)], (1, 512))
    z["fpn_retina"] = Case(
        lambda: FPNRetina(64, 128, 9, 80) if big else FPNRetina(), lambda b, s: (torch.randn(b, 3, s, s + 32),),
        ["x"], ["cls", "box"], img(), [11, 13], [(2, 32), (1, 64)], (1, 512))
    z["ssd_decode"] = Case(
        lambda: SSDDecode(8732, 21) if big else SSDDecode(), lambda b, s: (torch.randn(b, 8732 if big else 100, 4) * 0.5,
                                                                            torch.randn(b, 8732 if big else 100, 21)),
        ["loc", "conf"], ["boxes", "scores", "labels"], {"loc": {0: "b"}, "conf": {0: "b"}}, [11, 13],
        [(2, 0), (3, 0)], (8, 0))
    z["yolov7_elan"] = Case(
        lambda: ELANNet(32) if big else ELANNet(), lambda b, s: (torch.randn(b, 3, s, s + 32),),
        ["images"], ["p3", "p4"], img("images"), [11, 13, 17], [(2, 32), (1, 64)], (1, 640))
    z["demucs"] = Case(
        lambda: Demucs(32, 4, 2) if big else Demucs(), lambda b, t: (torch.randn(b, 2, t),),
        ["mix"], ["sources"], {"mix": {0: "b", 2: "t"}}, [11, 13], [(2, 1024), (1, 2048)], (1, 88200))
    z["dccrn"] = Case(
        lambda: DCCRN(32, 64) if big else DCCRN(), lambda b, t: (torch.randn(b, 2, 64 if big else 32, t),),
        ["spec"], ["mask"], {"spec": {0: "b", 3: "t"}}, [11, 13], [(2, 10), (1, 17)], (4, 200))
    z["encodec_rvq"] = Case(
        lambda: EnCodecRVQ(128, 1024, 8) if big else EnCodecRVQ(), lambda b, t: (torch.randn(b, 128 if big else 16, t),),
        ["x"], ["quantized", "codes"], {"x": {0: "b", 2: "t"}}, [11, 13], [(2, 9), (3, 14)], (8, 750))
    return z
