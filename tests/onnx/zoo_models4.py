"""zoo_models4.py — the fourth round of models as their sources and exporters write them:
older exporters (opsets 9 to 12: Squeeze / Split / Unsqueeze axes as attributes, Clip's
bounds as attributes or inputs, Upsample and Resize-10), tf2onnx-style NHWC graphs
(MobileNet and ResNet with a Transpose pair around every Conv, TensorFlow's SAME padding
as an explicit Pad, reduce_mean pooling, a MatMul dense), a Llama decode step (past keys /
values and position_ids as graph inputs, the mask over past + 1), a BART decoder step
(learned positions offset by 2, cross attention over the encoder's states), SAM's windowed
attention (padding to the window by sizes, decomposed relative positions), the Stable
Diffusion VAE decoder (GroupNorm, mid attention, nearest upsampling), DeepLabV3's ASPP
(dilated convs, image pooling, bilinear upsampling), PSPNet's pyramid pooling, HRNet's
multi-branch fusion, Inception V3 (1x7 / 7x1 convs, ceil_mode pools), MobileNetV2 (ReLU6
as Clip), Xception (separable convs), RegNetY (grouped convs, SE), EfficientDet's BiFPN
(fast normalized fusion); and in tests/onnx/zoo_models4b.py RetinaNet / FCOS
post-processing (TopK, NonMaxSuppression), Mask R-CNN's heads (RoiAlign), TabNet
(sparsemax), DeepFM, Wide & Deep, RWKV-4, Mamba (its scan unrolled), LeViT
(attention biases). Written out in plain torch.nn since none of those packages is
installed here; each class follows its source's forward.

Same Case as tests/onnx/zoo_models.py (make, inputs, names, outputs, dynamic, opset, sizes,
big); opset may be a list (the test exports at each, the bench at the last). Used by
tests/onnx/test_torch_zoo.py --module zoo_models4 (ctest onnx_torch_zoo4) and
tests/bench/bench_torch_blocks.py (zoo4:NAME). torch 1.13 exports up to opset 17.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case, ids, padmask
from zoo_models2 import rotate_half
from zoo_models3 import llama_projections
from zoo_models4b import (DeepFM, FCOSPost, LeViTAttn, Mamba, MaskRCNNHeads, RetinaPost, RWKV,
                          TabNet, WideDeep)

NEG = torch.finfo(torch.float32).min


def cbr(i, o, k=3, s=1, p=None, g=1, d=1, act=True):
    p = (k // 2) * d if p is None else p
    return nn.Sequential(nn.Conv2d(i, o, k, s, p, dilation=d, groups=g, bias=False),
                         nn.BatchNorm2d(o), nn.ReLU() if act else nn.Identity())


# ---------------- older exporters: opsets 9 to 12 ----------------


class OldForms(nn.Module):
    """what the old exporters write: chunk (Split with a split attribute), squeeze /
    unsqueeze (axes attributes), clamp (Clip attributes before 11, inputs after), nearest
    interpolate by a scale and to sizes computed from the shape (Upsample at 9, Resize-10,
    Resize-11 with roi), flatten, reflection pad, argmax. (Not bilinear: before opset 11
    the exporter writes PyTorch's half-pixel bilinear as ONNX's asymmetric one, which
    relax follows, as ONNX Runtime does: a different result by the exporter's own warning.)"""
    def __init__(self, c=8):
        super().__init__()
        self.conv = nn.Conv2d(3, 2 * c, 3, padding=1)
        self.out = nn.Conv2d(c, 4, 1)

    def forward(self, x):
        a, b = self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect")).chunk(2, dim=1)
        y = torch.clamp(a, -1.0, 1.0) * torch.sigmoid(b)
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        y = F.max_pool2d(y, 2)
        z = self.out(y).unsqueeze(1).squeeze(1)
        up = F.interpolate(z, size=(z.shape[2] * 2, z.shape[3] * 3), mode="nearest")
        return up, z.flatten(1), z.argmax(1)


# ---------------- tf2onnx-style NHWC graphs ----------------


class NHWCConv(nn.Module):
    """a TensorFlow Conv2D as tf2onnx writes it: Transpose to NCHW, Conv (+ the folded
    BatchNorm), Transpose back; SAME padding with stride 2 as an explicit Pad of (0, 1)."""
    def __init__(self, i, o, k, s=1, g=1, bn=True):
        super().__init__()
        self.same = s == 2
        self.conv = nn.Conv2d(i, o, k, s, 0 if self.same else k // 2, groups=g, bias=not bn)
        self.bn = nn.BatchNorm2d(o) if bn else nn.Identity()
        self.k = k

    def forward(self, x):
        if self.same:
            lo = (self.k - 2) // 2  # SAME at stride 2 (even extents): k - 2 in all, lo before
            x = F.pad(x, (0, 0, lo, self.k - 2 - lo, lo, self.k - 2 - lo))
        return self.bn(self.conv(x.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)


class TFMobileNet(nn.Module):
    """Keras MobileNet (v1) exported by tf2onnx: NHWC input, ReLU6 by clip_by_value,
    depthwise convs, reduce_mean over H and W, a MatMul + bias dense, softmax."""
    def __init__(self, c=16, classes=10):
        super().__init__()
        cfg = [(c, 2 * c, 1), (2 * c, 4 * c, 2), (4 * c, 4 * c, 1), (4 * c, 8 * c, 2)]
        self.stem = NHWCConv(3, c, 3, 2)
        self.blocks = nn.ModuleList(nn.ModuleList([NHWCConv(i, i, 3, s, g=i), NHWCConv(i, o, 1)])
                                    for i, o, s in cfg)
        self.w = nn.Parameter(torch.randn(8 * c, classes) * 0.1)
        self.b = nn.Parameter(torch.randn(classes) * 0.1)

    def forward(self, x):
        x = torch.clamp(self.stem(x), 0.0, 6.0)
        for dw, pw in self.blocks:
            x = torch.clamp(pw(torch.clamp(dw(x), 0.0, 6.0)), 0.0, 6.0)
        x = x.mean(dim=(1, 2))
        return torch.softmax(torch.matmul(x, self.w) + self.b, dim=-1)


class TFResNet(nn.Module):
    """Keras ResNet50 bottlenecks exported by tf2onnx: NHWC, a 7x7 s2 stem with SAME
    padding, max pool through a Transpose pair, ReLU and residual Add in NHWC."""
    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = NHWCConv(3, c, 7, 2)
        self.blocks = nn.ModuleList()
        i = c
        for o, s in ((c, 1), (2 * c, 2)):
            self.blocks.append(nn.ModuleList([NHWCConv(i, o, 1), NHWCConv(o, o, 3, s),
                                              NHWCConv(o, 4 * o, 1), NHWCConv(i, 4 * o, 1 if s == 1 else 2, s)]))
            i = 4 * o
        self.fc = nn.Linear(i, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.max_pool2d(x.permute(0, 3, 1, 2), 3, 2, 1).permute(0, 2, 3, 1)
        for a, b, c, sc in self.blocks:
            x = F.relu(c(F.relu(b(F.relu(a(x))))) + sc(x))
        return self.fc(x.mean(dim=(1, 2)))


# ---------------- decode steps: Llama, BART ----------------


class LlamaDecode(nn.Module):
    """HF LlamaModel decode step as optimum exports it: input_ids (b, 1), attention_mask
    (b, past + 1), position_ids (b, 1), past_key_values.0.key / value (b, kvh, past, dh)
    as graph inputs; rotary cos / sin gathered by position_ids, cat with the past,
    repeat_kv, the 4-d mask from the 2-d one, present keys / values as outputs."""
    def __init__(self, d=64, h=4, kvh=2, inter=96, vocab=100, maxpos=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        llama_projections(self, d, h, kvh, inter)
        self.n1, self.n2, self.nf = (nn.Parameter(torch.rand(d) + 0.5) for _ in range(3))
        self.lm_head = nn.Linear(d, vocab, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        emb = torch.cat((torch.outer(torch.arange(maxpos).float(), inv),) * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    @staticmethod
    def rms(x, w):
        v = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return w * (x * torch.rsqrt(v + 1e-6)).to(x.dtype)

    def forward(self, input_ids, attention_mask, position_ids, past_key, past_value):
        b, q_len = input_ids.shape
        x = self.embed(input_ids)
        y = self.rms(x, self.n1)
        q = self.q(y).view(b, q_len, self.h, self.dh).transpose(1, 2)
        k = self.k(y).view(b, q_len, self.kvh, self.dh).transpose(1, 2)
        v = self.v(y).view(b, q_len, self.kvh, self.dh).transpose(1, 2)
        cos, sin = self.cos_cached[position_ids].unsqueeze(1), self.sin_cached[position_ids].unsqueeze(1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = torch.cat([past_key, k], dim=2), torch.cat([past_value, v], dim=2)
        n = self.h // self.kvh
        kr = k[:, :, None].expand(b, self.kvh, n, k.shape[2], self.dh).reshape(b, self.h, -1, self.dh)
        vr = v[:, :, None].expand(b, self.kvh, n, v.shape[2], self.dh).reshape(b, self.h, -1, self.dh)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * NEG
        sc = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(self.dh) + mask
        p = F.softmax(sc, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(p, vr).transpose(1, 2).reshape(b, q_len, -1)
        x = x + self.o(o)
        y = self.rms(x, self.n2)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        return self.lm_head(self.rms(x, self.nf)), k, v


class BartDecode(nn.Module):
    """HF BartDecoderLayer decode step: BartLearnedPositionalEmbedding (positions from
    past_key_values_length, offset 2), embed_scale sqrt(d), post-LayerNorm residuals, self
    attention over the cached keys / values, cross attention over encoder_hidden_states
    with the inverted encoder mask, GELU FFN."""
    def __init__(self, d=32, h=4, ff=64, vocab=100, maxpos=64):
        super().__init__()
        self.h, self.dh, self.scale = h, d // h, (d // h) ** -0.5
        self.embed, self.pos = nn.Embedding(vocab, d, padding_idx=1), nn.Embedding(maxpos + 2, d)
        self.ln_emb = nn.LayerNorm(d)
        self.sq, self.sk, self.sv, self.so = (nn.Linear(d, d) for _ in range(4))
        self.cq, self.ck, self.cv, self.co = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.embed_scale = math.sqrt(d)

    def shape(self, x, b):
        return x.view(b, -1, self.h, self.dh).transpose(1, 2)

    def attn(self, q, k, v, mask):
        w = torch.matmul(q * self.scale, k.transpose(2, 3)) + mask
        return torch.matmul(F.softmax(w, dim=-1), v)

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key, past_value):
        b, t = input_ids.shape
        past = past_key.shape[2]
        positions = torch.arange(past, past + t, dtype=torch.long) + 2
        x = self.ln_emb(self.embed(input_ids) * self.embed_scale + self.pos(positions))
        q = self.shape(self.sq(x), b)
        k = torch.cat([past_key, self.shape(self.sk(x), b)], dim=2)
        v = torch.cat([past_value, self.shape(self.sv(x), b)], dim=2)
        o = self.attn(q, k, v, 0.0).transpose(1, 2).reshape(b, t, -1)
        x = self.ln1(x + self.so(o))
        inv = 1.0 - encoder_attention_mask[:, None, None, :].to(x.dtype)
        cmask = inv.masked_fill(inv.to(torch.bool), NEG)
        e = encoder_hidden_states
        o = self.attn(self.shape(self.cq(x), b), self.shape(self.ck(e), b), self.shape(self.cv(e), b), cmask)
        x = self.ln2(x + self.co(o.transpose(1, 2).reshape(b, t, -1)))
        x = self.ln3(x + self.fc2(F.gelu(self.fc1(x))))
        return x, k, v


# ---------------- SAM's windowed attention ----------------


def window_partition(x, ws):
    B, H, W, C = x.shape
    pad_h, pad_w = (ws - H % ws) % ws, (ws - W % ws) % ws
    if pad_h > 0 or pad_w > 0:
        x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    Hp, Wp = H + pad_h, W + pad_w
    x = x.view(B, Hp // ws, ws, Wp // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C), (Hp, Wp)


def window_unpartition(windows, ws, pad_hw, hw):
    Hp, Wp = pad_hw
    H, W = hw
    B = windows.shape[0] // (Hp * Wp // ws // ws)
    x = windows.view(B, Hp // ws, Wp // ws, ws, ws, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, Hp, Wp, -1)
    return x[:, :H, :W, :].contiguous()


def get_rel_pos(q_size, k_size, rel_pos):
    q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
    k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
    rel = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)
    return rel_pos[rel.long()]


class SAMBlock(nn.Module):
    """segment-anything's image-encoder Block with window_size > 0: LayerNorm,
    window_partition (F.pad to a multiple of the window), Attention with
    add_decomposed_rel_pos (einsum bhwc,hkc->bhwk), window_unpartition, MLP."""
    def __init__(self, d=32, h=2, ws=4):
        super().__init__()
        self.h, self.ws, self.scale = h, ws, (d // h) ** -0.5
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.rel_pos_h = nn.Parameter(torch.randn(2 * ws - 1, d // h) * 0.1)
        self.rel_pos_w = nn.Parameter(torch.randn(2 * ws - 1, d // h) * 0.1)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def attn(self, x):
        B, H, W, _ = x.shape
        qkv = self.qkv(x).reshape(B, H * W, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.h, H * W, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        Rh, Rw = get_rel_pos(H, H, self.rel_pos_h), get_rel_pos(W, W, self.rel_pos_w)
        r_q = q.reshape(B * self.h, H, W, -1)
        rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
        rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)
        attn = (attn.view(B * self.h, H, W, H, W) + rel_h[:, :, :, :, None] +
                rel_w[:, :, :, None, :]).view(B * self.h, H * W, H * W)
        x = (attn.softmax(dim=-1) @ v).view(B, self.h, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
        return self.proj(x)

    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        H, W = x.shape[1], x.shape[2]
        x, pad_hw = window_partition(x, self.ws)
        x = window_unpartition(self.attn(x), self.ws, pad_hw, (H, W))
        x = shortcut + x
        return x + self.mlp(self.norm2(x))


# ---------------- Stable Diffusion's VAE decoder ----------------


class VAEResnet(nn.Module):
    def __init__(self, i, o, groups=8):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(groups, i, eps=1e-6), nn.Conv2d(i, o, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(groups, o, eps=1e-6), nn.Conv2d(o, o, 3, padding=1)
        self.shortcut = nn.Conv2d(i, o, 1) if i != o else nn.Identity()

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        return self.shortcut(x) + self.conv2(F.silu(self.norm2(h)))


class VAEAttn(nn.Module):
    """diffusers Attention in the VAE mid block: GroupNorm, (b, c, hw) -> (b, hw, c),
    to_q / to_k / to_v Linears, one head, rescale residual."""
    def __init__(self, c, groups=8):
        super().__init__()
        self.group_norm = nn.GroupNorm(groups, c, eps=1e-6)
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(c, c) for _ in range(4))

    def forward(self, x):
        b, c, h, w = x.shape
        y = self.group_norm(x).view(b, c, h * w).transpose(1, 2)
        q, k, v = self.to_q(y), self.to_k(y), self.to_v(y)
        p = torch.baddbmm(torch.empty(b, h * w, h * w), q, k.transpose(-1, -2), beta=0, alpha=c ** -0.5)
        o = self.to_out(torch.bmm(p.softmax(dim=-1), v))
        return o.transpose(-1, -2).reshape(b, c, h, w) + x


class VAEDecoder(nn.Module):
    """diffusers Decoder: 1 / scaling_factor, post_quant_conv, conv_in, mid (resnet,
    attention, resnet), up blocks (resnets, nearest 2x Upsample2D + conv), GroupNorm, SiLU,
    conv_out."""
    def __init__(self, c=32, latent=4):
        super().__init__()
        self.post_quant_conv = nn.Conv2d(latent, latent, 1)
        self.conv_in = nn.Conv2d(latent, 2 * c, 3, padding=1)
        self.mid = nn.ModuleList([VAEResnet(2 * c, 2 * c), VAEAttn(2 * c), VAEResnet(2 * c, 2 * c)])
        self.up1 = VAEResnet(2 * c, 2 * c)
        self.up1_conv = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.up2 = VAEResnet(2 * c, c)
        self.norm_out, self.conv_out = nn.GroupNorm(8, c, eps=1e-6), nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, z):
        x = self.conv_in(self.post_quant_conv(z / 0.18215))
        for m in self.mid:
            x = m(x)
        x = self.up1_conv(F.interpolate(self.up1(x), scale_factor=2.0, mode="nearest"))
        x = self.up2(x)
        return self.conv_out(F.silu(self.norm_out(x)))


# ---------------- segmentation: DeepLabV3 ASPP, PSPNet, HRNet ----------------


class DeepLabV3(nn.Module):
    """torchvision DeepLabHead: ASPP (1x1, three dilated 3x3, ASPPPooling: adaptive avg
    pool 1, conv, BN, ReLU, bilinear back to the map's size), projection, 3x3, classifier;
    the logits bilinear to the input's size (align_corners False)."""
    def __init__(self, c=16, rates=(2, 3, 4), classes=5):
        super().__init__()
        self.backbone = nn.Sequential(cbr(3, c, 3, 2), cbr(c, 2 * c, 3, 2), cbr(2 * c, 2 * c, 3, 1, d=2))
        self.aspp = nn.ModuleList([cbr(2 * c, c, 1)] + [cbr(2 * c, c, 3, d=r) for r in rates])
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), cbr(2 * c, c, 1))
        self.project = cbr(5 * c, c, 1)
        self.head = nn.Sequential(cbr(c, c, 3), nn.Conv2d(c, classes, 1))

    def forward(self, x):
        f = self.backbone(x)
        res = [m(f) for m in self.aspp]
        res.append(F.interpolate(self.pool(f), size=f.shape[-2:], mode="bilinear", align_corners=False))
        y = self.head(self.project(torch.cat(res, dim=1)))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


class PSPNet(nn.Module):
    """PSPNet's PPM: adaptive_avg_pool2d to bins 1, 2, 3, 6, 1x1 conv + BN + ReLU, bilinear
    (align_corners True) back, concatenated with the map, bottleneck conv."""
    def __init__(self, c=16, bins=(1, 2, 3, 6), classes=5):
        super().__init__()
        self.backbone = nn.Sequential(cbr(3, c, 3, 2), cbr(c, 2 * c, 3, 2))
        self.bins = bins
        self.stages = nn.ModuleList(cbr(2 * c, c // 2, 1) for _ in bins)
        self.bottleneck = cbr(2 * c + len(bins) * (c // 2), c, 3)
        self.cls = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        f = self.backbone(x)
        h, w = f.shape[2], f.shape[3]
        outs = [f] + [F.interpolate(s(F.adaptive_avg_pool2d(f, b)), size=(h, w), mode="bilinear",
                                    align_corners=True) for b, s in zip(self.bins, self.stages)]
        return self.cls(self.bottleneck(torch.cat(outs, 1)))


class HRNetFuse(nn.Module):
    """HRNet's HighResolutionModule: three branches (1, 1/2, 1/4) of BasicBlocks and
    fuse_layers: 1x1 conv + BN + nearest upsample by 2^(j - i) from lower resolutions,
    chains of 3x3 s2 conv + BN (ReLU but the last) from higher ones, sum, ReLU."""
    def __init__(self, c=8):
        super().__init__()
        ch = [c, 2 * c, 4 * c]
        self.stem = cbr(3, c, 3, 2)
        self.trans = nn.ModuleList([nn.Identity(), cbr(c, 2 * c, 3, 2), nn.Sequential(cbr(c, 2 * c, 3, 2),
                                                                                      cbr(2 * c, 4 * c, 3, 2))])
        self.branches = nn.ModuleList(nn.Sequential(cbr(n, n), cbr(n, n, act=False)) for n in ch)
        self.fuse = nn.ModuleList()
        for i in range(3):
            row = nn.ModuleList()
            for j in range(3):
                if j > i:
                    row.append(nn.Sequential(nn.Conv2d(ch[j], ch[i], 1, bias=False), nn.BatchNorm2d(ch[i]),
                                             nn.Upsample(scale_factor=2 ** (j - i), mode="nearest")))
                elif j == i:
                    row.append(nn.Identity())
                else:
                    row.append(nn.Sequential(*[cbr(ch[j], ch[i] if k == i - j - 1 else ch[j], 3, 2,
                                                   act=k != i - j - 1) for k in range(i - j)]))
            self.fuse.append(row)

    def forward(self, x):
        x = self.stem(x)
        xs = [F.relu(b(t(x)) + t(x)) for b, t in zip(self.branches, self.trans)]
        return tuple(F.relu(sum(self.fuse[i][j](xs[j]) for j in range(3))) for i in range(3))


# ---------------- classification backbones ----------------


class InceptionV3(nn.Module):
    """torchvision Inception3 pieces: BasicConv2d (BN eps 0.001), stem convs without
    padding, max pools 3 s2 (one ceil_mode), InceptionC's 1x7 / 7x1 factorized branches,
    avg_pool2d 3 s1 p1 (count_include_pad False, as the TF port), InceptionD reduction."""
    def __init__(self, c=8, c7=8):
        super().__init__()
        def bc(i, o, k, s=1, p=0):
            return nn.Sequential(nn.Conv2d(i, o, k, s, p, bias=False), nn.BatchNorm2d(o, eps=0.001), nn.ReLU())
        self.stem = nn.Sequential(bc(3, c, 3, 2), bc(c, 2 * c, 3), nn.MaxPool2d(3, 2, ceil_mode=True))
        i = 2 * c
        self.b1 = bc(i, 2 * c, 1)
        self.b7 = nn.Sequential(bc(i, c7, 1), bc(c7, c7, (1, 7), p=(0, 3)), bc(c7, 2 * c, (7, 1), p=(3, 0)))
        self.b7dbl = nn.Sequential(bc(i, c7, 1), bc(c7, c7, (7, 1), p=(3, 0)), bc(c7, c7, (1, 7), p=(0, 3)),
                                   bc(c7, 2 * c, (1, 7), p=(0, 3)))
        self.bpool = bc(i, 2 * c, 1)
        self.d3 = nn.Sequential(bc(8 * c, c, 1), bc(c, 2 * c, 3, 2))
        self.d7 = nn.Sequential(bc(8 * c, c, 1), bc(c, c, (1, 7), p=(0, 3)), bc(c, c, 3, 2))
        self.fc = nn.Linear(8 * c + 3 * c, 10)

    def forward(self, x):
        x = self.stem(x)
        p = self.bpool(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False))
        x = torch.cat([self.b1(x), self.b7(x), self.b7dbl(x), p], 1)
        x = torch.cat([self.d3(x), self.d7(x), F.max_pool2d(x, 3, 2)], 1)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1))


class InvertedResidual(nn.Module):
    def __init__(self, i, o, s, t):
        super().__init__()
        h = i * t
        self.res = s == 1 and i == o
        self.conv = nn.Sequential(nn.Conv2d(i, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
                                  nn.Conv2d(h, h, 3, s, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
                                  nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision MobileNetV2: ReLU6 (Clip 0..6: attributes at opset 10, inputs after),
    inverted residuals, adaptive_avg_pool2d, flatten, Dropout, Linear."""
    def __init__(self, c=8, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU6(),
                                      InvertedResidual(c, c, 1, 1), InvertedResidual(c, 2 * c, 2, 6),
                                      InvertedResidual(2 * c, 2 * c, 1, 6), InvertedResidual(2 * c, 4 * c, 2, 6),
                                      nn.Conv2d(4 * c, 8 * c, 1, bias=False), nn.BatchNorm2d(8 * c), nn.ReLU6())
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(8 * c, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class SepConv(nn.Sequential):
    def __init__(self, i, o):
        super().__init__(nn.Conv2d(i, i, 3, 1, 1, groups=i, bias=False), nn.Conv2d(i, o, 1, bias=False),
                         nn.BatchNorm2d(o))


class Xception(nn.Module):
    """Xception's entry flow: ReLU, SeparableConv2d (depthwise 3x3 + pointwise), BN, max pool
    3 s2 p1, the 1x1 s2 conv + BN skip added."""
    def __init__(self, c=16):
        super().__init__()
        self.stem = nn.Sequential(cbr(3, c, 3, 2, 0), cbr(c, 2 * c, 3, 1, 0))
        self.blocks = nn.ModuleList()
        i = 2 * c
        for o in (4 * c, 8 * c):
            self.blocks.append(nn.ModuleList([nn.Sequential(SepConv(i, o), nn.ReLU(), SepConv(o, o),
                                                            nn.MaxPool2d(3, 2, 1)),
                                              nn.Sequential(nn.Conv2d(i, o, 1, 2, bias=False), nn.BatchNorm2d(o))]))
            i = o
        self.fc = nn.Linear(i, 10)

    def forward(self, x):
        x = self.stem(x)
        for rep, skip in self.blocks:
            x = rep(F.relu(x)) + skip(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class RegNetY(nn.Module):
    """torchvision RegNet's ResBottleneckBlock: 1x1, grouped 3x3 (group width 8), SE
    (reduction of the input width, ReLU, Sigmoid), 1x1, the strided projection, ReLU."""
    def __init__(self, c=16, widths=(16, 32), gw=8):
        super().__init__()
        self.stem = cbr(3, c, 3, 2)
        self.blocks = nn.ModuleList()
        i = c
        for w in widths:
            se = max(1, int(round(0.25 * i)))
            self.blocks.append(nn.ModuleDict(dict(
                a=cbr(i, w, 1), b=cbr(w, w, 3, 2, g=w // gw),
                se=nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(w, se, 1), nn.ReLU(), nn.Conv2d(se, w, 1),
                                 nn.Sigmoid()),
                c=cbr(w, w, 1, act=False), proj=cbr(i, w, 1, 2, act=False))))
            i = w
        self.fc = nn.Linear(i, 10)

    def forward(self, x):
        x = self.stem(x)
        for m in self.blocks:
            y = m["b"](m["a"](x))
            x = F.relu(m["proj"](x) + m["c"](y * m["se"](y)))
        return self.fc(x.mean((2, 3)))


class BiFPN(nn.Module):
    """EfficientDet's BiFPN layer: fast normalized fusion (relu(w) / (sum + 1e-4)), nearest
    2x upsampling top-down, MaxPool2dStaticSamePadding (3 s2) bottom-up, swish, separable
    conv + BN."""
    def __init__(self, c=16):
        super().__init__()
        self.backbone = nn.ModuleList([cbr(3, c, 3, 2), cbr(c, c, 3, 2), cbr(c, c, 3, 2)])
        self.w_td = nn.ParameterList(nn.Parameter(torch.rand(2) + 0.5) for _ in range(2))
        self.w_out = nn.ParameterList(nn.Parameter(torch.rand(3) + 0.5) for _ in range(2))
        self.conv = nn.ModuleList(SepConv(c, c) for _ in range(4))

    def fuse(self, w, xs):
        w = F.relu(w)
        w = w / (torch.sum(w, dim=0) + 1e-4)
        return sum(w[i] * x for i, x in enumerate(xs))

    def down(self, x):
        return F.max_pool2d(F.pad(x, (0, 1, 0, 1)), 3, 2)

    def forward(self, x):
        p3 = self.backbone[0](x)
        p4 = self.backbone[1](p3)
        p5 = self.backbone[2](p4)
        p4_td = self.conv[0](F.silu(self.fuse(self.w_td[0], [p4, F.interpolate(p5, scale_factor=2.0, mode="nearest")])))
        p3_out = self.conv[1](F.silu(self.fuse(self.w_td[1], [p3, F.interpolate(p4_td, scale_factor=2.0, mode="nearest")])))
        p4_out = self.conv[2](F.silu(self.fuse(self.w_out[0], [p4, p4_td, self.down(p3_out)])))
        p5_out = self.conv[3](F.silu(self.fuse(self.w_out[1], [p5, p5, self.down(p4_out)])))
        return p3_out, p4_out, p5_out


# ---------------- cases ----------------


def anchors(n, seed=3):
    """(n, 4) xyxy anchors inside a 64x64 image"""
    g = torch.Generator().manual_seed(seed + n)
    xy = torch.rand(n, 2, generator=g) * 48
    wh = torch.rand(n, 2, generator=g) * 16 + 4
    return torch.cat([xy, xy + wh], 1)


def rois(r, size, seed=5):
    """(r, 4) xyxy boxes in image coordinates (4x the feature map), some over its edge"""
    g = torch.Generator().manual_seed(seed + r)
    xy = torch.rand(r, 2, generator=g) * size * 4 - 4
    return torch.cat([xy, xy + torch.rand(r, 2, generator=g) * size * 2 + 1], 1)


def cases(big=False):
    """name -> Case (zoo_models.cases's contract)."""
    def img(name="x", hw=True):
        return {name: {0: "b", 2: "h", 3: "w"} if hw else {0: "b"}}

    def nhwc(name="x"):
        return {name: {0: "b", 1: "h", 2: "w"}}

    def image(c=3):
        return lambda b, s: (torch.randn(b, c, s, s + 4 if not big else s),)
    z = {}
    z["old_forms"] = Case(
        lambda: OldForms(c=64) if big else OldForms(), image(), ["x"], ["up", "flat", "arg"],
        dict(img(), up={0: "b", 2: "h2", 3: "w2"}, flat={0: "b", 1: "hw"}, arg={0: "b", 1: "h1", 2: "w1"}),
        [9, 10, 11], [(2, 8), (1, 12)], (1, 256))
    z["tf_mobilenet"] = Case(
        lambda: TFMobileNet(c=32, classes=1000) if big else TFMobileNet(),
        lambda b, s: (torch.randn(b, s, s, 3),), ["input_1"], ["probs"], nhwc("input_1"), 13,
        [(2, 16), (1, 24)], (1, 224))
    z["tf_resnet"] = Case(
        lambda: TFResNet(c=64, classes=1000) if big else TFResNet(),
        lambda b, s: (torch.randn(b, s, s + 8, 3),), ["input_1"], ["logits"], nhwc("input_1"), 12,
        [(2, 16), (1, 32)], (1, 224))
    z["llama_decode"] = Case(
        lambda: LlamaDecode(d=1024, h=16, kvh=4, inter=2816, vocab=1000, maxpos=1024) if big else LlamaDecode(),
        lambda b, p: (ids(b, 1, 1000 if big else 100), torch.cat([padmask(b, p), torch.ones(b, 1, dtype=torch.long)], 1),
                      torch.full((b, 1), p), torch.randn(b, 4 if big else 2, p, 64 if big else 16),
                      torch.randn(b, 4 if big else 2, p, 64 if big else 16)),
        ["input_ids", "attention_mask", "position_ids", "past_key", "past_value"], ["logits", "present_key", "present_value"],
        dict(input_ids={0: "b"}, attention_mask={0: "b", 1: "t"}, position_ids={0: "b"},
             past_key={0: "b", 2: "p"}, past_value={0: "b", 2: "p"}, present_key={0: "b", 2: "t"},
             present_value={0: "b", 2: "t"}), 14, [(2, 7), (3, 12)], (4, 256))
    z["bart_decode"] = Case(
        lambda: BartDecode(d=768, h=12, ff=3072, vocab=1000, maxpos=1024) if big else BartDecode(),
        lambda b, s: (ids(b, 1, 1000 if big else 100), torch.randn(b, s, 768 if big else 32), padmask(b, s),
                      torch.randn(b, 12 if big else 4, s // 2, 64 if big else 8),
                      torch.randn(b, 12 if big else 4, s // 2, 64 if big else 8)),
        ["input_ids", "encoder_hidden_states", "encoder_attention_mask", "past_key", "past_value"],
        ["hidden", "present_key", "present_value"],
        dict(input_ids={0: "b"}, encoder_hidden_states={0: "b", 1: "s"}, encoder_attention_mask={0: "b", 1: "s"},
             past_key={0: "b", 2: "p"}, past_value={0: "b", 2: "p"}), 13, [(2, 9), (3, 14)], (4, 256))
    z["sam_window"] = Case(
        lambda: SAMBlock(d=768, h=12, ws=14) if big else SAMBlock(),
        lambda b, s: (torch.randn(b, s, s + 3, 768 if big else 32),), ["x"], ["y"], nhwc(), 17,
        [(2, 6), (1, 8)], (1, 64))
    z["vae_decoder"] = Case(
        lambda: VAEDecoder(c=64) if big else VAEDecoder(),
        lambda b, s: (torch.randn(b, 4, s, s + 2 if not big else s),), ["z"], ["img"], img("z"), 17,
        [(2, 4), (1, 6)], (1, 32))
    z["deeplabv3"] = Case(
        lambda: DeepLabV3(c=64, rates=(6, 12, 18), classes=21) if big else DeepLabV3(), image(), ["x"], ["out"],
        img(), 11, [(2, 24), (1, 32)], (1, 256))
    z["pspnet"] = Case(
        lambda: PSPNet(c=64, classes=21) if big else PSPNet(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["out"], img(hw=False), 11, [(2, 48), (3, 48)],
        (2, 192))
    z["hrnet_fuse"] = Case(
        lambda: HRNetFuse(c=32) if big else HRNetFuse(),
        lambda b, s: (torch.randn(b, 3, s, s + 8 if not big else s),), ["x"], ["y0", "y1", "y2"], img(), 11,
        [(2, 16), (1, 24)], (1, 256))
    z["inception_v3"] = Case(
        lambda: InceptionV3(c=32, c7=64) if big else InceptionV3(),
        lambda b, s: (torch.randn(b, 3, s, s + 2),), ["x"], ["y"], img(), 12, [(2, 19), (1, 24)],
        (2, 147))
    z["mobilenetv2"] = Case(
        lambda: MobileNetV2(c=32, classes=1000) if big else MobileNetV2(), image(), ["x"], ["y"], img(), 10,
        [(2, 16), (1, 20)], (2, 224))
    z["xception"] = Case(
        lambda: Xception(c=32) if big else Xception(), image(), ["x"], ["y"], img(), 12, [(2, 16), (1, 21)],
        (2, 224))
    z["regnety"] = Case(
        lambda: RegNetY(c=32, widths=(48, 104, 208), gw=8) if big else RegNetY(), image(), ["x"], ["y"], img(), 13,
        [(2, 16), (1, 20)], (2, 224))
    z["bifpn"] = Case(
        lambda: BiFPN(c=64) if big else BiFPN(),
        lambda b, s: (torch.randn(b, 3, s, s + 8 if not big else s),), ["x"], ["p3", "p4", "p5"], img(), 13,
        [(2, 16), (1, 32)], (1, 512))
    z["retina_post"] = Case(
        lambda: RetinaPost(c=64, anchors=9, classes=20, topk=300) if big else RetinaPost(),
        lambda b, s: (torch.randn(1, 64 if big else 16, s, s), anchors(s * s * (9 if big else 3))),
        ["feat", "anchors"], ["boxes", "scores", "labels"],
        {"feat": {2: "h", 3: "w"}, "anchors": {0: "a"}, "boxes": {0: "n"}, "scores": {0: "n"}, "labels": {0: "n"}},
        11, [(1, 8), (1, 6)], (1, 32))
    z["fcos_post"] = Case(
        lambda: FCOSPost(c=64, classes=20, k=100) if big else FCOSPost(),
        lambda b, s: (torch.randn(b, 64 if big else 16, s, s + 2),), ["feat"], ["scores", "boxes", "labels"],
        img("feat"), 13, [(2, 8), (1, 6)], (2, 64))
    z["maskrcnn_heads"] = Case(
        lambda: MaskRCNNHeads(c=64, rep=256, classes=8) if big else MaskRCNNHeads(),
        lambda b, r: (torch.randn(b, 64 if big else 8, 50 if big else 9 + r, 68 if big else 14),
                      rois(r, 50 if big else 12), torch.arange(r) % b),
        ["features", "rois", "batch_idx"], ["cls", "bbox", "masks"],
        {"features": {0: "b", 2: "h", 3: "w"}, "rois": {0: "r"}, "batch_idx": {0: "r"}}, 11,
        [(2, 5), (1, 3)], (2, 100))
    z["maskrcnn_aligned"] = Case(
        lambda: MaskRCNNHeads(c=64, rep=256, classes=8, aligned=True) if big else MaskRCNNHeads(aligned=True),
        z["maskrcnn_heads"].inputs, ["features", "rois", "batch_idx"],
        ["cls", "bbox", "masks"], z["maskrcnn_heads"].dynamic, 16, [(2, 6), (1, 2)], (2, 100))
    z["tabnet"] = Case(
        lambda: TabNet(f=64, nd=32, na=32, steps=3) if big else TabNet(),
        lambda b, s: (torch.randn(b, 64 if big else 12),), ["x"], ["y", "m_loss"], {"x": {0: "b"}}, 13,
        [(4, 0), (7, 0)], (1024, 0))
    z["deepfm"] = Case(
        lambda: DeepFM(fields=(1000, 200, 50, 3000, 20, 500), d=16, dense=13, hidden=(256, 128)) if big else DeepFM(),
        lambda b, s: ((torch.rand(b, 6 if big else 4) * torch.tensor((1000, 200, 50, 3000, 20, 500) if big
                                                                      else (10, 20, 7, 30))).long(),
                      torch.randn(b, 13 if big else 4)),
        ["sparse", "dense"], ["p"], {"sparse": {0: "b"}, "dense": {0: "b"}}, 12, [(4, 0), (9, 0)], (2048, 0))
    z["wide_deep"] = Case(
        lambda: WideDeep(vocab=1000, d=32, crosses=10000, hidden=256) if big else WideDeep(),
        lambda b, s: (torch.randint(0, 1000 if big else 50, (b, s)), torch.randint(0, 100000, (b, 3)), torch.randn(b, 3)),
        ["tags", "cross", "num"], ["p"], {"tags": {0: "b", 1: "s"}, "cross": {0: "b"}, "num": {0: "b"}}, 13,
        [(4, 5), (2, 3)], (1024, 20))
    z["rwkv"] = Case(
        lambda: RWKV(d=512, ff=2048) if big else RWKV(), lambda b, s: (torch.randn(b, s, 512 if big else 32),),
        ["x"], ["y"], {"x": {0: "b", 1: "t"}}, 17, [(2, 7), (1, 12)], (1, 128))
    z["mamba"] = Case(
        lambda: Mamba(d=256, n=16) if big else Mamba(), lambda b, s: (torch.randn(b, s, 256 if big else 16),),
        ["x"], ["y"], {"x": {0: "b"}}, 14, [(2, 10), (1, 10)], (1, 64))
    z["levit_attn"] = Case(
        lambda: LeViTAttn(d=256, kd=32, h=8, res=14) if big else LeViTAttn(),
        lambda b, s: (torch.randn(b, 196 if big else 16, 256 if big else 32),), ["x"], ["y"], {"x": {0: "b"}},
        13, [(2, 0), (3, 0)], (8, 0))
    return z
