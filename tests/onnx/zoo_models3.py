"""zoo_models3.py — the third round of models as their sources write them: Hugging Face
BERT (opset 17's LayerNormalization), GPT-NeoX (parallel residual, partial rotary, baddbmm),
Falcon (multi-query attention from one fused projection), Mistral (sliding-window mask by
log of a triangular band, GQA), Phi (partial rotary, gelu_new), T5's encoder (bidirectional
buckets, gated GELU), BLOOM (ALiBi from the mask's cumsum, baddbmm), DeBERTa's
disentangled attention (gather by relative positions), timm DeiT (distillation token,
LayerScale, unbind), DINOv2 (bicubic position interpolation), ConvNeXt V2 (GRN),
MobileViT (unfold / fold by reshapes), a DETR decoder (query positions, stacked
intermediate outputs), a packed BiLSTM tagger and GRU encoder (pack_padded_sequence), CRNN
(OCR), PointNet (T-Net by bmm), GCN and GAT message passing (scatter_add over an edge
list), a VAE (reparameterization, KL), a diffusion U-Net (sinusoidal time embedding,
GroupNorm, attention), a scripted module (If on run-time conditions, a Loop over a static
extent), HF sequence-classification pooling, ResNeSt split attention, Conv-TasNet (gLN,
PReLU, ConvTranspose1d), fast neural style (reflection pad, InstanceNorm, nearest
upsampling), ESPCN (pixel shuffle), a YOLOv8 DFL head, Perceiver latents, Conformer's
relative-position attention (rel_shift by pad and view), Swin V2's cosine attention with
its position-bias MLP, SegFormer (reduced keys, Mix-FFN), wav2vec2's positional conv
(weight_norm over dim 2), Deformable DETR's sampling (grid_sample per level). Written out
in plain torch.nn since none of those packages is installed here; each class follows its
source's forward. (PyG's index_add_ form of GCN is not here: torch 1.13 exports
index_add_ as a ScatterElements without reduction, wrong with repeated targets, as its
own warning says; the scatter_add_ form is.)

The classes from the sequence models on live in tests/onnx/zoo_models3b.py (files stay
under 1000 lines); every case is here. Same Case as tests/onnx/zoo_models.py (make, inputs, names, outputs, dynamic, opset,
sizes, big); opset may be a list (the test exports at each, the bench at the last). Used by
tests/onnx/test_torch_zoo.py --module zoo_models3 (ctest onnx_torch_zoo3) and
tests/bench/bench_torch_blocks.py (zoo3:NAME). torch 1.13 exports up to opset 17.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case, ids, padmask
from zoo_models2 import rotate_half
from zoo_models3b import (BiLSTMTagger, CRNN, DeformAttn, DiffusionUNet, ESPCN, GAT, GCN,
                          PackedGRU, Perceiver, PointNet, RelPosMHA, ResNeSt, SegFormer,
                          SeqClsPool, StyleNet, SwinV2Attn, VAE, W2V2PosConv, YoloV8Head,
                          ConvTasNet, scripted)

NEG = torch.finfo(torch.float32).min


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


# ---------------- Hugging Face BERT (LayerNormalization at opset 17) ----------------


class HFBert(nn.Module):
    """BertEmbeddings + BertLayer + BertPooler: get_extended_attention_mask's
    (1 - mask) * finfo.min, transpose_for_scores by size()[:-1] + (h, dh)"""
    def __init__(self, d=64, h=4, inter=128, vocab=1000, maxpos=128, layers=2):
        super().__init__()
        self.h, self.dh = h, d // h
        self.word = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Embedding(maxpos, d)
        self.tt = nn.Embedding(2, d)
        self.ln_e = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(maxpos).expand((1, -1)))
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            q=nn.Linear(d, d), k=nn.Linear(d, d), v=nn.Linear(d, d), o=nn.Linear(d, d),
            ln1=nn.LayerNorm(d, eps=1e-12), i=nn.Linear(d, inter), out=nn.Linear(inter, d),
            ln2=nn.LayerNorm(d, eps=1e-12))) for _ in range(layers))
        self.pool = nn.Linear(d, d)

    def tfs(self, x):
        return x.view(x.size()[:-1] + (self.h, self.dh)).permute(0, 2, 1, 3)

    def forward(self, input_ids, attention_mask):
        s = input_ids.size(1)
        pos = self.position_ids[:, :s]
        tt = torch.zeros(input_ids.size(), dtype=torch.long)
        x = self.ln_e(self.word(input_ids) + self.tt(tt) + self.pos(pos))
        ext = attention_mask[:, None, None, :].to(dtype=x.dtype)
        ext = (1.0 - ext) * NEG
        for L in self.layers:
            q, k, v = self.tfs(L["q"](x)), self.tfs(L["k"](x)), self.tfs(L["v"](x))
            sc = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + ext
            p = nn.functional.softmax(sc, dim=-1)
            c = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
            c = c.view(c.size()[:-2] + (self.h * self.dh,))
            x = L["ln1"](L["o"](c) + x)
            x = L["ln2"](L["out"](F.gelu(L["i"](x))) + x)
        return x, torch.tanh(self.pool(x[:, 0]))


# ---------------- GPT-NeoX: parallel residual, partial rotary, baddbmm ----------------


class NeoX(nn.Module):
    def __init__(self, d=64, h=4, rot_pct=0.25, max_pos=128, vocab=100):
        super().__init__()
        self.h, self.dh = h, d // h
        self.rot = int(self.dh * rot_pct)
        self.emb = nn.Embedding(vocab, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, 3 * d)
        self.dense = nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones((max_pos, max_pos), dtype=torch.bool))
                             .view(1, 1, max_pos, max_pos))
        inv = 1.0 / (10000 ** (torch.arange(0, self.rot, 2).float() / self.rot))
        t = torch.arange(max_pos, dtype=inv.dtype)
        emb = torch.cat((torch.einsum("i,j->ij", t, inv),) * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None])
        self.register_buffer("sin_cached", emb.sin()[None, None])
        self.norm_factor = math.sqrt(self.dh)
        self.ln_f = nn.LayerNorm(d)

    def attn(self, x):
        b, s, _ = x.shape
        qkv = self.query_key_value(x).view(b, s, self.h, 3 * self.dh).permute(0, 2, 1, 3)
        q, k, v = qkv[..., : self.dh], qkv[..., self.dh: 2 * self.dh], qkv[..., 2 * self.dh:]
        qr, qp = q[..., : self.rot], q[..., self.rot:]
        kr, kp = k[..., : self.rot], k[..., self.rot:]
        cos, sin = self.cos_cached[:, :, :s], self.sin_cached[:, :, :s]
        q = torch.cat((qr * cos + rotate_half(qr) * sin, qp), dim=-1)
        k = torch.cat((kr * cos + rotate_half(kr) * sin, kp), dim=-1)
        causal = self.bias[:, :, :s, :s]
        q, k = q.reshape(b * self.h, s, self.dh), k.reshape(b * self.h, s, self.dh)
        sc = torch.zeros(b * self.h, s, s, dtype=q.dtype)
        sc = torch.baddbmm(sc, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / self.norm_factor)
        sc = sc.view(b, self.h, s, s)
        sc = torch.where(causal, sc, torch.tensor(NEG, dtype=sc.dtype))
        w = nn.functional.softmax(sc, dim=-1)
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, self.h * self.dh)
        return self.dense(o)

    def forward(self, ids):
        x = self.emb(ids)
        x = x + self.attn(self.ln1(x)) + self.down(F.gelu(self.up(self.ln2(x))))
        return self.ln_f(x)


# ---------------- Falcon: multi-query attention from one fused projection ----------------


class Falcon(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln = nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, d + 2 * self.dh, bias=False)
        self.dense = nn.Linear(d, d, bias=False)
        self.h_to_4h, self.dense_4h_to_h = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh)))

    def forward(self, x):
        b, s, _ = x.shape
        y = self.ln(x)
        fused = self.query_key_value(y).view(b, s, self.h + 2, self.dh)
        q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        t = torch.arange(s, dtype=self.inv_freq.dtype)
        emb = torch.cat((torch.einsum("i,j->ij", t, self.inv_freq),) * 2, dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        mask = torch.ones((s, s), dtype=torch.bool).triu(1)
        sc = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        sc = sc.masked_fill(mask, float("-1e9"))
        o = (F.softmax(sc, dim=-1) @ v).transpose(1, 2).reshape(b, s, -1)
        return x + self.dense(o) + self.dense_4h_to_h(F.gelu(self.h_to_4h(y)))


# ---------------- Mistral: sliding window by log(band), RMSNorm, GQA ----------------


def llama_projections(m, d, h, kvh, inter):
    """HF LlamaAttention's and LlamaMLP's bias-free q / k / v / o (kvh key / value heads)
    and gate / up / down projections, set on module m (also m.h, m.kvh, m.dh)."""
    m.h, m.kvh, m.dh = h, kvh, d // h
    m.q = nn.Linear(d, d, bias=False)
    m.k = nn.Linear(d, kvh * m.dh, bias=False)
    m.v = nn.Linear(d, kvh * m.dh, bias=False)
    m.o = nn.Linear(d, d, bias=False)
    m.gate, m.up = nn.Linear(d, inter, bias=False), nn.Linear(d, inter, bias=False)
    m.down = nn.Linear(inter, d, bias=False)



class Mistral(nn.Module):
    def __init__(self, d=64, h=4, kvh=2, inter=96, window=4):
        super().__init__()
        self.window = window
        llama_projections(self, d, h, kvh, inter)
        self.n1, self.n2 = T5LayerNorm(d), T5LayerNorm(d)  # MistralRMSNorm: the same in f32
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh)))

    def repeat_kv(self, x, n):
        b, kvh, s, dh = x.shape
        return x[:, :, None, :, :].expand(b, kvh, n, s, dh).reshape(b, kvh * n, s, dh)

    def forward(self, x, position_ids):
        b, s, _ = x.shape
        band = torch.full((s, s), fill_value=1)
        mask = torch.tril(band, diagonal=0)
        mask = torch.triu(mask, diagonal=-self.window)
        mask = torch.log(mask).to(x.dtype)[None, None]
        r = x
        x = self.n1(x)
        q = self.q(x).view(b, s, self.h, self.dh).transpose(1, 2)
        k = self.k(x).view(b, s, self.kvh, self.dh).transpose(1, 2)
        v = self.v(x).view(b, s, self.kvh, self.dh).transpose(1, 2)
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k, self.h // self.kvh), self.repeat_kv(v, self.h // self.kvh)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh) + mask
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, s, -1)
        x = r + self.o(o)
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


# ---------------- Phi: partial rotary, parallel block, gelu_new ----------------


class Phi(nn.Module):
    def __init__(self, d=64, h=4, partial=0.5, vocab=100):
        super().__init__()
        self.h, self.dh = h, d // h
        self.rd = int(partial * self.dh)
        self.emb = nn.Embedding(vocab, d)
        self.ln = nn.LayerNorm(d)
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dense = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.final = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.rd, 2).float() / self.rd)))

    def forward(self, ids, attention_mask):
        b, s = ids.shape
        x = self.emb(ids)
        y = self.ln(x)
        q = self.q_proj(y).view(b, s, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(y).view(b, s, self.h, self.dh).transpose(1, 2)
        v = self.v_proj(y).view(b, s, self.h, self.dh).transpose(1, 2)
        t = torch.arange(s, dtype=torch.float32)
        f = torch.outer(t, self.inv_freq)
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        qr, qp = q[..., : self.rd], q[..., self.rd:]
        kr, kp = k[..., : self.rd], k[..., self.rd:]
        q = torch.cat((qr * cos + rotate_half(qr) * sin, qp), dim=-1)
        k = torch.cat((kr * cos + rotate_half(kr) * sin, kp), dim=-1)
        causal = torch.triu(torch.full((s, s), NEG), diagonal=1)
        pad = (1.0 - attention_mask[:, None, None, :].float()) * NEG
        w = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(2, 3)) / math.sqrt(self.dh)
        w = w + torch.maximum(causal + pad, torch.tensor(NEG))
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(v.dtype)
        o = torch.matmul(w, v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.dense(o) + self.fc2(gelu_new(self.fc1(y)))
        return self.lm_head(self.final(x))


# ---------------- T5 encoder: bidirectional buckets, T5LayerNorm, gated GELU ----------------


class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(1 + 0.1 * torch.randn(d)), eps

    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.variance_epsilon))


class T5Encoder(nn.Module):
    def __init__(self, d=64, h=4, ff=128, buckets=32, max_distance=128, layers=2, vocab=100):
        super().__init__()
        self.h, self.dh, self.nb, self.md = h, d // h, buckets, max_distance
        self.emb = nn.Embedding(vocab, d)
        self.rel = nn.Embedding(buckets, h)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=T5LayerNorm(d), q=nn.Linear(d, d, bias=False), k=nn.Linear(d, d, bias=False),
            v=nn.Linear(d, d, bias=False), o=nn.Linear(d, d, bias=False), ln2=T5LayerNorm(d),
            wi_0=nn.Linear(d, ff, bias=False), wi_1=nn.Linear(d, ff, bias=False),
            wo=nn.Linear(ff, d, bias=False))) for _ in range(layers))
        self.final = T5LayerNorm(d)

    def bucket(self, rel):
        nb = self.nb // 2
        ret = (rel > 0).to(torch.long) * nb
        rel = torch.abs(rel)
        max_exact = nb // 2
        is_small = rel < max_exact
        large = max_exact + (torch.log(rel.float() / max_exact) / math.log(self.md / max_exact)
                             * (nb - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        return ret + torch.where(is_small, rel, large)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        ctx = torch.arange(s, dtype=torch.long)[:, None]
        mem = torch.arange(s, dtype=torch.long)[None, :]
        bias = self.rel(self.bucket(mem - ctx)).permute([2, 0, 1]).unsqueeze(0)
        bias = bias + (1.0 - attention_mask[:, None, None, :].float()) * NEG
        x = self.emb(input_ids)
        for B in self.blocks:
            y = B["ln1"](x)

            def shape(t):
                return t.view(b, -1, self.h, self.dh).transpose(1, 2)
            q, k, v = shape(B["q"](y)), shape(B["k"](y)), shape(B["v"](y))
            sc = torch.matmul(q, k.transpose(3, 2)) + bias
            w = F.softmax(sc.float(), dim=-1).type_as(sc)
            o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.dh)
            x = x + B["o"](o)
            y = B["ln2"](x)
            x = x + B["wo"](gelu_new(B["wi_0"](y)) * B["wi_1"](y))
        return self.final(x)


# ---------------- BLOOM: ALiBi from the mask, baddbmm ----------------


def alibi_slopes(h):
    p = 2 ** math.floor(math.log2(h))
    base = 2 ** (-(2 ** -(math.log2(p) - 3)))
    slopes = [base ** i for i in range(1, p + 1)]
    if p != h:
        eb = 2 ** (-(2 ** -(math.log2(2 * p) - 3)))
        slopes += [eb ** i for i in range(1, 2 * (h - p), 2)]
    return torch.tensor(slopes)


class Bloom(nn.Module):
    def __init__(self, d=64, h=4, vocab=100):
        super().__init__()
        self.h, self.dh = h, d // h
        self.word_embeddings = nn.Embedding(vocab, d)
        self.word_embeddings_layernorm = nn.LayerNorm(d)
        self.input_layernorm, self.post_attention_layernorm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query_key_value, self.dense = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("slopes", alibi_slopes(h))

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        arange = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
        alibi = (self.slopes[..., None] * arange).reshape(b * self.h, 1, s)
        causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        mask = causal[None, None] | (attention_mask[:, None, None, :] < 0.5)
        x = self.word_embeddings_layernorm(self.word_embeddings(input_ids))
        y = self.input_layernorm(x)
        fused = self.query_key_value(y).view(b, s, self.h, 3, self.dh)
        q, k, v = fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]
        q = q.transpose(1, 2).reshape(b * self.h, s, self.dh)
        k = k.permute(0, 2, 3, 1).reshape(b * self.h, self.dh, s)
        v = v.transpose(1, 2).reshape(b * self.h, s, self.dh)
        sc = alibi.baddbmm(batch1=q, batch2=k, beta=1.0, alpha=1.0 / math.sqrt(self.dh))
        sc = sc.view(b, self.h, s, s).masked_fill(mask, torch.finfo(sc.dtype).min)
        p = F.softmax(sc, dim=-1, dtype=torch.float32).view(b * self.h, s, s)
        ctx = torch.bmm(p, v).view(b, self.h, s, self.dh).permute(0, 2, 1, 3).reshape(b, s, -1)
        x = x + self.dense(ctx)
        y = self.post_attention_layernorm(x)
        return x + self.down(gelu_new(self.up(y)))


# ---------------- DeBERTa-v2 disentangled attention (c2p / p2c by gather) ----------------


class Deberta(nn.Module):
    def __init__(self, d=64, h=4, span=8, vocab=100):
        super().__init__()
        self.h, self.dh, self.span = h, d // h, span
        self.emb = nn.Embedding(vocab, d)
        self.rel_embeddings = nn.Embedding(2 * span, d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln = nn.LayerNorm(d, eps=1e-7)

    def tfs(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.h, self.dh).permute(0, 2, 1, 3).reshape(b * self.h, s, self.dh)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        x = self.emb(input_ids)
        q, k, v = self.tfs(self.q(x)), self.tfs(self.k(x)), self.tfs(self.v(x))
        rel_pos = torch.arange(s)[:, None] - torch.arange(s)[None, :]
        scale = math.sqrt(self.dh * 3)
        att = torch.bmm(q, k.transpose(-1, -2)) / scale
        rel = self.rel_embeddings.weight[None]
        pos_k = self.tfs(self.k(rel)).repeat(b, 1, 1)
        pos_q = self.tfs(self.q(rel)).repeat(b, 1, 1)
        c2p = torch.bmm(q, pos_k.transpose(-1, -2))
        c2p_pos = torch.clamp(rel_pos + self.span, 0, 2 * self.span - 1)
        c2p = torch.gather(c2p, dim=-1, index=c2p_pos.unsqueeze(0).expand([b * self.h, s, s]))
        p2c = torch.bmm(k, pos_q.transpose(-1, -2))
        p2c_pos = torch.clamp(-rel_pos + self.span, 0, 2 * self.span - 1)
        p2c = torch.gather(p2c, dim=-1, index=p2c_pos.unsqueeze(0).expand([b * self.h, s, s])).transpose(-1, -2)
        att = (att + c2p / scale + p2c / scale).view(b, self.h, s, s)
        m = attention_mask[:, None, None, :].bool()
        att = att.masked_fill(~m, torch.finfo(att.dtype).min)
        p = F.softmax(att, -1).masked_fill(~m, 0.0).view(b * self.h, s, s)
        ctx = torch.bmm(p, v).view(b, self.h, s, self.dh).permute(0, 2, 1, 3).reshape(b, s, -1)
        return self.ln(x + self.o(ctx))


# ---------------- timm DeiT (distillation token, LayerScale, unbind) ----------------


class DeiTBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.scale = h, (d // h) ** -0.5
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma1 = nn.Parameter(0.1 * torch.ones(d) + 0.05 * torch.randn(d))
        self.gamma2 = nn.Parameter(0.1 * torch.ones(d) + 0.05 * torch.randn(d))

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        y = (a @ v).transpose(1, 2).reshape(B, N, C)
        x = x + self.gamma1 * self.proj(y)
        return x + self.gamma2 * self.fc2(F.gelu(self.fc1(self.norm2(x))))


class DeiT(nn.Module):
    def __init__(self, d=64, h=4, patch=4, img=16, depth=2, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.dist_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 2, d) * 0.02)
        self.blocks = nn.Sequential(*[DeiTBlock(d, h) for _ in range(depth)])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head, self.head_dist = nn.Linear(d, classes), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1),
                       self.dist_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.norm(self.blocks(x + self.pos_embed))
        return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2


class DINOv2(nn.Module):
    """DINOv2's interpolate_pos_encoding: the patch grid's position table resized bicubically
    to the image's grid (dynamic height and width), a class token, one DeiT block"""
    def __init__(self, d=32, h=4, patch=4, grid=4):
        super().__init__()
        self.patch, self.grid = patch, grid
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, grid * grid + 1, d) * 0.5)
        self.block = DeiTBlock(d, h)
        self.norm = nn.LayerNorm(d, eps=1e-6)

    def forward(self, x):
        B, _, H, W = x.shape
        t = self.patch_embed(x).flatten(2).transpose(1, 2)
        t = torch.cat((self.cls_token.expand(B, -1, -1), t), dim=1)
        dim = t.shape[-1]
        cls_pos, patch_pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        patch_pos = patch_pos.reshape(1, self.grid, self.grid, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(H // self.patch, W // self.patch), mode="bicubic",
                                  align_corners=False)
        patch_pos = patch_pos.permute(0, 2, 3, 1).view(1, -1, dim)
        t = self.norm(self.block(t + torch.cat((cls_pos, patch_pos), dim=1)))
        return t[:, 0], t[:, 1:].mean(1)


# ---------------- ConvNeXt V2 (GRN) ----------------


class GRN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(0.1 * torch.randn(1, 1, 1, dim))
        self.beta = nn.Parameter(0.1 * torch.randn(1, 1, 1, dim))

    def forward(self, x):
        Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * Nx) + self.beta + x


class ConvNeXtV2(nn.Module):
    def __init__(self, dim=16, depth=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.stem_norm = nn.LayerNorm(dim, eps=1e-6)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            dw=nn.Conv2d(dim, dim, 7, padding=3, groups=dim), norm=nn.LayerNorm(dim, eps=1e-6),
            pw1=nn.Linear(dim, 4 * dim), grn=GRN(4 * dim), pw2=nn.Linear(4 * dim, dim)))
            for _ in range(depth))
        self.head = nn.Linear(dim, classes)
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        x = self.stem(x).permute(0, 2, 3, 1)
        x = self.stem_norm(x).permute(0, 3, 1, 2)
        for B in self.blocks:
            y = B["dw"](x).permute(0, 2, 3, 1)
            y = B["pw2"](B["grn"](F.gelu(B["pw1"](B["norm"](y)))))
            x = x + y.permute(0, 3, 1, 2)
        return self.head(self.norm(x.mean([-2, -1])))


# ---------------- MobileViT block (unfold / fold by reshapes) ----------------


class MobileViT(nn.Module):
    def __init__(self, c=16, d=32, h=2, patch=2):
        super().__init__()
        self.ph = self.pw = patch
        self.h = h
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.mv2 = nn.Sequential(nn.Conv2d(c, 2 * c, 1, bias=False), nn.BatchNorm2d(2 * c), nn.SiLU(),
                                 nn.Conv2d(2 * c, 2 * c, 3, 1, 1, groups=2 * c, bias=False),
                                 nn.BatchNorm2d(2 * c), nn.SiLU(), nn.Conv2d(2 * c, c, 1, bias=False),
                                 nn.BatchNorm2d(c))
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.SiLU(), nn.Conv2d(c, d, 1, bias=False))
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.conv_proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.fusion = nn.Sequential(nn.Conv2d(2 * c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.head = nn.Linear(c, 10)

    def unfold(self, x):
        B, C, H, W = x.shape
        nh, nw = H // self.ph, W // self.pw
        N, P = nh * nw, self.ph * self.pw
        x = x.reshape(B * C * nh, self.ph, nw, self.pw).transpose(1, 2)
        x = x.reshape(B, C, N, P).transpose(1, 3)
        return x.reshape(B * P, N, C), (B, C, H, W, nh, nw)

    def fold(self, x, info):
        B, C, H, W, nh, nw = info
        P = self.ph * self.pw
        x = x.contiguous().view(B, P, nh * nw, -1).transpose(1, 3)
        x = x.reshape(B * C * nh, nw, self.ph, self.pw).transpose(1, 2)
        return x.reshape(B, C, nh * self.ph, nw * self.pw)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.mv2(x)
        res = x
        y, info = self.unfold(self.local(x))
        BP, N, D = y.shape
        qkv = self.qkv(self.ln1(y)).reshape(BP, N, 3, self.h, D // self.h).transpose(1, 3).contiguous()
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        a = torch.matmul(q * (D // self.h) ** -0.5, k.transpose(-1, -2)).softmax(-1)
        y = y + self.proj(torch.matmul(a, v).transpose(1, 2).reshape(BP, N, D))
        y = self.ln3(y + self.ff(self.ln2(y)))
        y = self.conv_proj(self.fold(y, info))
        x = self.fusion(torch.cat((res, y), dim=1))
        return self.head(x.mean((2, 3)))


# ---------------- DETR decoder (positions added to q/k, intermediate stack) ----------------


class DetrDecoderLayer(nn.Module):
    def __init__(self, d, h, ff):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, h)
        self.cross = nn.MultiheadAttention(d, h)
        self.l1, self.l2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, tgt, memory, pad, pos, query_pos):
        q = k = tgt + query_pos
        tgt = self.n1(tgt + self.self_attn(q, k, value=tgt)[0])
        tgt2 = self.cross(query=tgt + query_pos, key=memory + pos, value=memory, key_padding_mask=pad)[0]
        tgt = self.n2(tgt + tgt2)
        return self.n3(tgt + self.l2(F.relu(self.l1(tgt))))


class DetrDecoder(nn.Module):
    def __init__(self, d=32, h=4, ff=64, queries=6, layers=2, classes=5):
        super().__init__()
        self.layers = nn.ModuleList(DetrDecoderLayer(d, h, ff) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.query_embed = nn.Embedding(queries, d)
        self.class_embed = nn.Linear(d, classes + 1)
        self.bbox = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, src, pos, pad):
        bs = src.shape[0]
        memory = src.flatten(2).permute(2, 0, 1)
        pos = pos.flatten(2).permute(2, 0, 1)
        query_pos = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        out = torch.zeros_like(query_pos)
        inter = []
        for L in self.layers:
            out = L(out, memory, pad.flatten(1), pos, query_pos)
            inter.append(self.norm(out))
        hs = torch.stack(inter).transpose(1, 2)
        return self.class_embed(hs), self.bbox(hs).sigmoid()


# ---------------- cases ----------------


def edges(n, e):
    """(2, e) int64 edge list over n nodes (every node a target at least once)"""
    g = torch.Generator().manual_seed(n * 131 + e)
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.cat([torch.arange(n), torch.randint(0, n, (e - n,), generator=g)])
    return torch.stack([src, dst])


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def seq(*names):
        return {n: {0: "b", 1: "s"} for n in names}

    def img(name="x"):
        return {name: {0: "b"}}
    z = {}
    z["hf_bert"] = Case(
        lambda: HFBert(d=768, h=12, inter=3072, vocab=30522, maxpos=512, layers=1) if big else HFBert(),
        lambda b, s: (ids(b, s, 30522 if big else 1000, 1), padmask(b, s)),
        ["input_ids", "attention_mask"], ["last", "pooled"],
        dict(seq("input_ids", "attention_mask", "last"), pooled={0: "b"}), [14, 17],
        [(2, 9), (3, 5)], (2, 128))
    z["neox"] = Case(
        lambda: NeoX(d=1024, h=16, max_pos=2048, vocab=1000) if big else NeoX(),
        lambda b, s: (ids(b, s, 1000 if big else 100),), ["ids"], ["y"], seq("ids", "y"), [14, 17],
        [(2, 7), (1, 12)], (1, 128))
    z["falcon"] = Case(
        lambda: Falcon(d=1024, h=16) if big else Falcon(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),), ["x"], ["y"], seq("x", "y"), 17,
        [(2, 7), (1, 11)], (1, 128))
    z["mistral"] = Case(
        lambda: Mistral(d=1024, h=16, kvh=4, inter=2816, window=64) if big else Mistral(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),
                      (torch.arange(s)[None] + torch.arange(b)[:, None])),
        ["x", "position_ids"], ["y"], seq("x", "position_ids", "y"), [14, 17],
        [(2, 9), (1, 3)], (1, 128))
    z["phi"] = Case(
        lambda: Phi(d=1024, h=16, vocab=1000) if big else Phi(),
        lambda b, s: (ids(b, s, 1000 if big else 100), padmask(b, s)),
        ["ids", "attention_mask"], ["logits"], seq("ids", "attention_mask", "logits"), 17,
        [(2, 8), (3, 5)], (1, 128))
    z["t5_encoder"] = Case(
        lambda: T5Encoder(d=512, h=8, ff=1024, layers=1, vocab=1000) if big else T5Encoder(),
        lambda b, s: (ids(b, s, 1000 if big else 100), padmask(b, s)),
        ["input_ids", "attention_mask"], ["y"], seq("input_ids", "attention_mask", "y"), 14,
        [(2, 9), (1, 20)], (2, 128))
    z["bloom"] = Case(
        lambda: Bloom(d=1024, h=16, vocab=1000) if big else Bloom(h=6, d=48),
        lambda b, s: (ids(b, s, 1000 if big else 100), padmask(b, s)),
        ["input_ids", "attention_mask"], ["y"], seq("input_ids", "attention_mask", "y"), [14, 17],
        [(2, 9), (3, 6)], (2, 128))
    z["deberta"] = Case(
        lambda: Deberta(d=768, h=12, span=64, vocab=1000) if big else Deberta(),
        lambda b, s: (ids(b, s, 1000 if big else 100), padmask(b, s)),
        ["input_ids", "attention_mask"], ["y"], seq("input_ids", "attention_mask", "y"), 14,
        [(2, 7), (1, 12)], (2, 128))
    z["deit"] = Case(
        lambda: DeiT(d=384, h=6, patch=16, img=224, depth=1, classes=1000) if big else DeiT(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], img(), [14, 17],
        [(2, 16), (1, 16)], (4, 224))
    z["dinov2"] = Case(
        lambda: DINOv2(d=384, h=6, patch=14, grid=16) if big else DINOv2(),
        lambda b, s: (torch.randn(b, 3, s, s + 8 if not big else s),), ["x"], ["cls", "patch"],
        {"x": {0: "b", 2: "h", 3: "w"}}, [14, 17], [(2, 16), (1, 24)], (2, 224))
    z["convnext_v2"] = Case(
        lambda: ConvNeXtV2(dim=96, depth=2, classes=1000) if big else ConvNeXtV2(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b", 2: "h", 3: "w"}},
        [13, 17], [(2, 16), (1, 24)], (2, 224))
    z["mobilevit"] = Case(
        lambda: MobileViT(c=64, d=96, h=4) if big else MobileViT(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], img(), 17, [(2, 16), (3, 16)],
        (2, 128))
    z["detr_decoder"] = Case(
        lambda: DetrDecoder(d=256, h=8, ff=2048, queries=100, layers=2, classes=91) if big else DetrDecoder(),
        lambda b, s: (torch.randn(b, 256 if big else 32, s, s + 1), torch.randn(b, 256 if big else 32, s, s + 1),
                      padmask(b, s * (s + 1)).view(b, s, s + 1) == 0),
        ["src", "pos", "pad"], ["logits", "boxes"],
        {"src": {0: "b", 2: "h", 3: "w"}, "pos": {0: "b", 2: "h", 3: "w"}, "pad": {0: "b", 1: "h", 2: "w"}},
        14, [(2, 4), (1, 5)], (2, 25))
    z["bilstm_tagger"] = Case(
        lambda: BiLSTMTagger(vocab=1000, e=128, h=256) if big else BiLSTMTagger(),
        lambda b, s: (ids(b, s, 1000 if big else 100, 1) * padmask(b, s), padmask(b, s)),
        ["tokens", "mask"], ["logp", "tags", "h"], seq("tokens", "mask"), 14, [(2, 9), (3, 4), (4, 7)],
        (8, 64))
    z["packed_gru"] = Case(
        lambda: PackedGRU(vocab=1000, h=256) if big else PackedGRU(),
        lambda b, s: (ids(s, b, 1000 if big else 100, 1) * padmask(b, s).t(), padmask(b, s).sum(1)),
        ["seq", "lengths"], ["out", "hidden"], {"seq": {0: "s", 1: "b"}, "lengths": {0: "b"}}, [13, 14],
        [(2, 9), (3, 5)], (8, 64))
    z["crnn"] = Case(
        lambda: CRNN(c=64, h=256) if big else CRNN(),
        lambda b, s: (torch.randn(b, 1, 32, s),), ["img"], ["logp"], {"img": {0: "b", 3: "w"}}, 13,
        [(2, 32), (1, 48)], (4, 128))
    z["pointnet"] = Case(
        lambda: PointNet(c=64) if big else PointNet(),
        lambda b, s: (torch.randn(b, 3, s),), ["points"], ["logp", "trans"],
        {"points": {0: "b", 2: "n"}}, 14, [(2, 50), (3, 17)], (8, 1024))
    z["gcn"] = Case(
        lambda: GCN(f=128, hid=256, classes=16) if big else GCN(),
        lambda n, e: (torch.randn(n, 128 if big else 16), edges(n, e)), ["x", "edge_index"], ["logp"],
        {"x": {0: "n"}, "edge_index": {1: "e"}, "logp": {0: "n"}}, 16, [(10, 30), (7, 9)], (2000, 10000))
    z["gat"] = Case(
        lambda: GAT(f=128, hid=32, heads=4, classes=16) if big else GAT(),
        lambda n, e: (torch.randn(n, 128 if big else 16), edges(n, e)), ["x", "edge_index"], ["y"],
        {"x": {0: "n"}, "edge_index": {1: "e"}, "y": {0: "n"}}, 16, [(10, 30), (6, 6)], (2000, 10000))
    z["vae"] = Case(
        lambda: VAE(c=32, z=32, img=64) if big else VAE(),
        lambda b, s: (torch.rand(b, 1, s, s), torch.randn(b, 32 if big else 8)),
        ["x", "eps"], ["recon", "mu", "logvar", "loss"], {"x": {0: "b"}, "eps": {0: "b"}}, 14,
        [(2, 16), (5, 16)], (32, 64))
    z["diffusion_unet"] = Case(
        lambda: DiffusionUNet(c=64, temb=256) if big else DiffusionUNet(),
        lambda b, s: (torch.randn(b, 3, s, s), torch.randint(0, 1000, (b,))),
        ["x", "t"], ["eps"], {"x": {0: "b", 2: "h", 3: "w"}, "t": {0: "b"}}, [14, 17],
        [(2, 8), (1, 12)], (2, 32))
    z["scripted"] = Case(
        scripted, lambda b, s: (torch.randn(b, 6, 16) + s, torch.randn(b) + s),
        ["x", "gate"], ["acc", "h"], {"x": {0: "b"}, "gate": {0: "b"}}, 14,
        [(2, 1), (3, -1), (1, 0)], (64, 0))
    z["seq_cls_pool"] = Case(
        lambda: SeqClsPool(vocab=30522, d=768) if big else SeqClsPool(),
        lambda b, s: (ids(b, s, 30522 if big else 100, 1) * padmask(b, s), padmask(b, s)),
        ["input_ids", "attention_mask"], ["pooled", "mean"], seq("input_ids", "attention_mask"), 14,
        [(2, 9), (4, 5)], (16, 128))
    z["resnest"] = Case(
        lambda: ResNeSt(c=64) if big else ResNeSt(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b", 2: "h", 3: "w"}}, 14,
        [(2, 16), (1, 20)], (2, 224))
    z["conv_tasnet"] = Case(
        lambda: ConvTasNet(n=256, L=16, b=128, h=256, blocks=8) if big else ConvTasNet(),
        lambda b, s: (torch.randn(b, s * 8),), ["wav"], ["est"], {"wav": {0: "b", 1: "t"}}, 14,
        [(2, 20), (1, 33)], (1, 2000))
    z["style_transfer"] = Case(
        lambda: StyleNet(c=32, res=5) if big else StyleNet(),
        lambda b, s: (torch.randn(b, 3, s, s + 2),), ["x"], ["y"], {"x": {0: "b", 2: "h", 3: "w"}},
        [13, 17], [(2, 12), (1, 16)], (1, 256))
    z["espcn"] = Case(
        lambda: ESPCN(scale=3, c=32), lambda b, s: (torch.rand(b, 1, s, s + 3),), ["x"], ["y"],
        {"x": {0: "b", 2: "h", 3: "w"}}, 13, [(2, 10), (1, 7)], (1, 224))
    z["yolov8_head"] = Case(
        lambda: YoloV8Head(nc=80, ch=(64, 128)) if big else YoloV8Head(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["img"], ["pred"], {"img": {0: "b", 2: "h", 3: "w"}}, 17,
        [(2, 32), (1, 64)], (1, 640))
    z["perceiver"] = Case(
        lambda: Perceiver(d=256, latents=64, h=8, inp=64) if big else Perceiver(),
        lambda b, s: (torch.randn(b, s, 64 if big else 24), padmask(b, s) == 0),
        ["x", "pad"], ["y"], {"x": {0: "b", 1: "s"}, "pad": {0: "b", 1: "s"}}, 14, [(2, 9), (3, 6)],
        (8, 512))
    z["conformer_relpos"] = Case(
        lambda: RelPosMHA(d=256, h=4) if big else RelPosMHA(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32), padmask(b, s)), ["x", "mask"], ["y"],
        {"x": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}}, 14, [(2, 9), (3, 5)], (8, 256))
    z["swinv2_attn"] = Case(
        lambda: SwinV2Attn(d=96, h=3, ws=8) if big else SwinV2Attn(),
        lambda b, s: (torch.randn(b, 64 if big else 16, 96 if big else 32),), ["x"], ["y"], {"x": {0: "b"}}, 14,
        [(3, 0), (5, 0)], (64, 0))
    z["segformer"] = Case(
        lambda: SegFormer(c=64, h=1, sr=8) if big else SegFormer(),
        lambda b, s: (torch.randn(b, 3, s, s + 8 if not big else s),), ["img"], ["y"],
        {"img": {0: "b", 2: "h", 3: "w"}}, [13, 17], [(2, 32), (1, 48)], (1, 512))
    z["w2v2_posconv"] = Case(
        lambda: W2V2PosConv(d=768, k=128, groups=16) if big else W2V2PosConv(),
        lambda b, s: (torch.randn(b, s, 768 if big else 32),), ["x"], ["y"], {"x": {0: "b", 1: "t"}}, 14,
        [(2, 20), (1, 33)], (4, 500))
    hw = ((32, 32), (16, 16)) if big else ((8, 8), (4, 4))
    z["deform_attn"] = Case(
        lambda: DeformAttn(d=256, h=8, points=4, hw=hw) if big else DeformAttn(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32), torch.rand(b, s, 2, 2),
                      torch.randn(b, sum(h * w for h, w in hw), 256 if big else 32), torch.tensor(hw)),
        ["query", "ref", "value", "shapes"], ["y"],
        {"query": {0: "b", 1: "q"}, "ref": {0: "b", 1: "q"}, "value": {0: "b"}}, 16, [(2, 6), (1, 9)], (8, 300))
    return z
