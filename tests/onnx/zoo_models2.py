"""zoo_models2.py — the second round of models as their sources write them (PyTorch's own
nn.Transformer*, Hugging Face GPT-2 / T5 / CLIP, torchvision ResNet-50 / DenseNet /
SqueezeNet / ShuffleNetV2, Swin's patch merging, a U-Net, a YOLOv5 detect head, a
seq2seq GRU/LSTM with Luong attention, GPT-NeoX and GPT-J rotary embeddings, wav2vec2's
feature encoder, an ArcFace head, ...), written out in plain torch.nn since none of those
packages is installed here. Same Case as tests/onnx/zoo_models.py (make, inputs, names,
outputs, dynamic, opset, sizes, big); here opset may be a list: the test exports the model
at each, the bench at the last. Used by tests/onnx/test_torch_zoo.py --module zoo_models2
(ctest onnx_torch_zoo2) and tests/bench/bench_torch_blocks.py (zoo2:NAME).
Nothing here was written for relaxd: each class follows its source's forward.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from zoo_models import Case, ids, padmask


# ---------------- PyTorch's own transformer layers ----------------


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder (post-norm, relu) with a causal float mask and a padding mask"""
    def __init__(self, d=64, h=4, ff=128, layers=2, vocab=100):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d, vocab)

    def forward(self, tok, pad):
        s = tok.shape[1]
        causal = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        x = self.emb(tok) * math.sqrt(self.emb.embedding_dim)
        y = self.enc(x, mask=causal, src_key_padding_mask=pad)
        return self.out(y)


class TorchDecoder(nn.Module):
    """nn.TransformerDecoder (norm_first, gelu), batch second as nn.Transformer defaults,
    tgt mask from generate_square_subsequent_mask, memory padding mask"""
    def __init__(self, d=64, h=4, ff=128, layers=2):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d, h, ff, dropout=0.1, activation="gelu", norm_first=True)
        self.dec = nn.TransformerDecoder(layer, layers, norm=nn.LayerNorm(d))

    def forward(self, tgt, mem, mem_pad):
        t = tgt.shape[0]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.dec(tgt, mem, tgt_mask=mask, memory_key_padding_mask=mem_pad)


class MHAMasks(nn.Module):
    """nn.MultiheadAttention with a bool attn_mask and a key_padding_mask together,
    kdim/vdim different from embed_dim, averaged weights"""
    def __init__(self, d=32, h=4, kd=24):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, h, kdim=kd, vdim=kd, batch_first=True)

    def forward(self, q, kv, pad):
        n, s = q.shape[1], kv.shape[1]
        allowed = torch.arange(s)[None, :] <= torch.arange(n)[:, None] + (s - n)
        y, w = self.mha(q, kv, kv, key_padding_mask=pad, attn_mask=~allowed)
        return y, w


# ---------------- Hugging Face GPT-2 attention with a KV cache ----------------


class GPT2Past(nn.Module):
    """GPT2Attention with layer_past / present, as optimum exports decoder_with_past"""
    def __init__(self, d=64, h=4, n_ctx=256):
        super().__init__()
        self.h, self.dh = h, d // h
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
                             .view(1, 1, n_ctx, n_ctx))
        self.ln = nn.LayerNorm(d)

    def _split_heads(self, t):
        t = t.view(t.size()[:-1] + (self.h, self.dh))
        return t.permute(0, 2, 1, 3)

    def forward(self, x, past_key, past_value):
        q, k, v = self.c_attn(self.ln(x)).split(self.h * self.dh, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        k = torch.cat((past_key, k), dim=-2)
        v = torch.cat((past_value, v), dim=-2)
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5)
        ql, kl = q.size(-2), k.size(-2)
        causal = self.bias[:, :, kl - ql: kl, :kl]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min))
        w = nn.functional.softmax(w, dim=-1)
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        o = o.view(o.size()[:-2] + (self.h * self.dh,))
        return x + self.c_proj(o), k, v


# ---------------- T5 decoder self-attention bias (causal buckets, past offset) ----------------


class T5DecoderBias(nn.Module):
    """T5Attention.compute_bias with bidirectional=False, the query positions offset by a
    past length (the cache's extent), and the attention that adds it"""
    def __init__(self, d=64, h=4, buckets=32, max_distance=128):
        super().__init__()
        self.h, self.dh, self.nb, self.md = h, d // h, buckets, max_distance
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.relative_attention_bias = nn.Embedding(buckets, h)

    @staticmethod
    def _bucket(rel, bidirectional, num_buckets, max_distance):
        ret = 0
        if bidirectional:
            num_buckets //= 2
            ret += (rel > 0).to(torch.long) * num_buckets
            rel = torch.abs(rel)
        else:
            rel = -torch.min(rel, torch.zeros_like(rel))
        max_exact = num_buckets // 2
        is_small = rel < max_exact
        large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return ret + torch.where(is_small, rel, large)

    def forward(self, x, past_k):
        b, n, _ = x.shape
        past = past_k.shape[2]
        ctx = torch.arange(past, past + n, dtype=torch.long)[:, None]
        mem = torch.arange(past + n, dtype=torch.long)[None, :]
        bucket = self._bucket(mem - ctx, False, self.nb, self.md)
        bias = self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)
        causal = torch.triu(torch.ones(n, past + n, dtype=torch.bool), diagonal=past + 1)
        bias = bias.masked_fill(causal, float("-inf"))

        def shape(t):
            return t.view(b, -1, self.h, self.dh).transpose(1, 2)
        q = shape(self.q(x))
        k = torch.cat([past_k, shape(self.k(x))], dim=2)
        v = torch.cat([past_k * 0.5, shape(self.v(x))], dim=2)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.dh)
        return self.o(o), bias


# ---------------- Swin patch merging + window attention with relative bias ----------------


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)


def window_reverse(windows, ws, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // ws, W // ws, ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


class SwinStage(nn.Module):
    """a shifted-window block (torch.roll, window partition / reverse, the relative
    position bias table indexed by a buffer, the shift mask) then PatchMerging
    (x[:, 0::2, 0::2] and friends concatenated, LayerNorm, Linear without bias)"""
    def __init__(self, d=32, h=2, ws=4, shift=2):
        super().__init__()
        self.d, self.h, self.ws, self.shift = d, h, ws, shift
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, h) * 0.5)
        c = torch.stack(torch.meshgrid([torch.arange(ws), torch.arange(ws)], indexing="ij"))
        cf = torch.flatten(c, 1)
        rel = (cf[:, :, None] - cf[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("rel_index", rel.sum(-1))
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.mnorm = nn.LayerNorm(4 * d)
        self.reduction = nn.Linear(4 * d, 2 * d, bias=False)

    def attn_mask(self, H, W):
        img = torch.zeros((1, H, W, 1))
        cnt = 0
        for hs in (slice(0, -self.ws), slice(-self.ws, -self.shift), slice(-self.shift, None)):
            for wsl in (slice(0, -self.ws), slice(-self.ws, -self.shift), slice(-self.shift, None)):
                img[:, hs, wsl, :] = cnt
                cnt += 1
        mw = window_partition(img, self.ws).view(-1, self.ws * self.ws)
        m = mw.unsqueeze(1) - mw.unsqueeze(2)
        return m.masked_fill(m != 0, float(-100.0)).masked_fill(m == 0, float(0.0))

    def forward(self, x, H: int, W: int):
        B, L, C = x.shape
        sc = x
        x = self.norm1(x).view(B, H, W, C)
        x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        xw = window_partition(x, self.ws).view(-1, self.ws * self.ws, C)
        B_, N, _ = xw.shape
        qkv = self.qkv(xw).reshape(B_, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * (C // self.h) ** -0.5
        a = q @ k.transpose(-2, -1)
        bias = self.table[self.rel_index.view(-1)].view(N, N, -1).permute(2, 0, 1).contiguous()
        a = a + bias.unsqueeze(0)
        mask = self.attn_mask(H, W)
        nW = mask.shape[0]
        a = a.view(B_ // nW, nW, self.h, N, N) + mask.unsqueeze(1).unsqueeze(0)
        a = a.view(-1, self.h, N, N).softmax(-1)
        xw = (a @ v).transpose(1, 2).reshape(B_, N, C)
        xw = self.proj(xw).view(-1, self.ws, self.ws, C)
        x = window_reverse(xw, self.ws, H, W)
        x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2)).view(B, H * W, C)
        x = sc + x
        x = x + self.mlp(self.norm2(x))
        x = x.view(B, H, W, C)
        x0, x1 = x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :]
        x2, x3 = x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)
        return self.reduction(self.mnorm(x))


class Swin(nn.Module):
    def __init__(self, d=32, img=16, patch=2):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.res = img // patch
        self.stage = SwinStage(d)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        return self.stage(x, self.res, self.res)


# ---------------- torchvision CNNs ----------------


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet50(nn.Module):
    """torchvision resnet50's stem and first two stages (groups 32: resnext50_32x4d)"""
    def __init__(self, groups=1, width=64, blocks=(3, 4), classes=10):
        super().__init__()
        self.inplanes, self.groups, self.base_width = 64, groups, width
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(64, blocks[0])
        self.layer2 = self._make_layer(128, blocks[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, classes)

    def _make_layer(self, planes, n, stride=1):
        down = None
        if stride != 1 or self.inplanes != planes * 4:
            down = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride, bias=False),
                                 nn.BatchNorm2d(planes * 4))
        layers = [Bottleneck(self.inplanes, planes, stride, down, self.groups, self.base_width)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes, groups=self.groups, base_width=self.base_width)
                   for _ in range(1, n)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, inputs):
        x = torch.cat(inputs, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        return self.conv2(F.relu(self.norm2(x)))


class DenseNet(nn.Module):
    """torchvision densenet: pre-activation layers over the concat of every earlier
    feature map, a transition (BN, ReLU, 1x1, AvgPool 2), the final F.relu +
    adaptive_avg_pool2d"""
    def __init__(self, growth=12, layers=(4, 4), init=24, bn_size=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, init, 3, 1, 1, bias=False), nn.BatchNorm2d(init),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.blocks, self.trans = nn.ModuleList(), nn.ModuleList()
        c = init
        for i, n in enumerate(layers):
            self.blocks.append(nn.ModuleList([DenseLayer(c + j * growth, growth, bn_size)
                                              for j in range(n)]))
            c += n * growth
            if i != len(layers) - 1:
                self.trans.append(nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                                                nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)))
                c //= 2
        self.norm5 = nn.BatchNorm2d(c)
        self.classifier = nn.Linear(c, 10)

    def forward(self, x):
        x = self.stem(x)
        for i, blk in enumerate(self.blocks):
            feats = [x]
            for layer in blk:
                feats.append(layer(feats))
            x = torch.cat(feats, 1)
            if i < len(self.trans):
                x = self.trans[i](x)
        x = F.relu(self.norm5(x), inplace=True)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


class Fire(nn.Module):
    def __init__(self, cin, sq, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, sq, 1)
        self.expand1x1 = nn.Conv2d(sq, e1, 1)
        self.expand3x3 = nn.Conv2d(sq, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """squeezenet1_1: MaxPool2d(ceil_mode=True), Fire modules, a conv classifier"""
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(256, classes, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def channel_shuffle(x, groups: int):
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        bf = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
                nn.Conv2d(cin, bf, 1, bias=False), nn.BatchNorm2d(bf), nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        c2 = cin if stride > 1 else bf
        self.branch2 = nn.Sequential(
            nn.Conv2d(c2, bf, 1, bias=False), nn.BatchNorm2d(bf), nn.ReLU(inplace=True),
            nn.Conv2d(bf, bf, 3, stride, 1, groups=bf, bias=False), nn.BatchNorm2d(bf),
            nn.Conv2d(bf, bf, 1, bias=False), nn.BatchNorm2d(bf), nn.ReLU(inplace=True))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.stage2 = nn.Sequential(ShuffleUnit(24, 48, 2), ShuffleUnit(48, 48, 1), ShuffleUnit(48, 48, 1))
        self.stage3 = nn.Sequential(ShuffleUnit(48, 96, 2), ShuffleUnit(96, 96, 1))
        self.fc = nn.Linear(96, 10)

    def forward(self, x):
        x = self.stage3(self.stage2(self.maxpool(self.conv1(x))))
        return self.fc(x.mean([2, 3]))


# ---------------- U-Net ----------------


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """milesial's Pytorch-UNet with bilinear=True (Upsample(scale_factor=2, bilinear,
    align_corners=True), F.pad to the skip's size, cat), plus a nearest scale_factor
    upsample, a size-form bilinear resize, and GroupNorm / InstanceNorm in the decoder"""
    def __init__(self, c=8):
        super().__init__()
        self.inc = DoubleConv(3, c)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(c, 2 * c))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(2 * c, 4 * c))
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv1 = DoubleConv(6 * c, 2 * c)
        self.gn = nn.GroupNorm(2, 2 * c)
        self.conv2 = DoubleConv(3 * c, c)
        self.inorm = nn.InstanceNorm2d(c)
        self.outc = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        u = self.up(x3)
        dy, dx = x2.size()[2] - u.size()[2], x2.size()[3] - u.size()[3]
        u = F.pad(u, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        y = self.gn(self.conv1(torch.cat([x2, u], dim=1)))
        u = F.interpolate(y, scale_factor=2, mode="nearest")
        y = self.inorm(self.conv2(torch.cat([x1, u], dim=1)))
        logits = self.outc(y)
        coarse = F.interpolate(F.avg_pool2d(logits, 4), size=logits.shape[-2:], mode="bilinear",
                               align_corners=False)
        return logits, coarse


# ---------------- YOLOv5 Detect head ----------------


class YoloDetect(nn.Module):
    """ultralytics yolov5 Detect.forward (export path): per level conv, view/permute,
    sigmoid, xy = (xy * 2 + grid) * stride, wh = (wh * 2) ** 2 * anchor_grid, cat"""
    def __init__(self, nc=4, ch=(16, 32), strides=(8, 16)):
        super().__init__()
        self.nc, self.no, self.na, self.nl = nc, nc + 5, 3, len(ch)
        self.stride = strides
        anchors = torch.tensor([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119]], dtype=torch.float32)
        self.register_buffer("anchors", anchors.view(self.nl, -1, 2))
        self.backbone = nn.ModuleList([nn.Sequential(nn.Conv2d(3, ch[0], 3, 8, 1), nn.SiLU()),
                                       nn.Sequential(nn.Conv2d(3, ch[1], 3, 16, 1), nn.SiLU())])
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def _make_grid(self, nx, ny, i):
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).expand((1, self.na, ny, nx, 2)).float()
        anchor_grid = self.anchors[i].view((1, self.na, 1, 1, 2)).expand((1, self.na, ny, nx, 2))
        return grid - 0.5, anchor_grid

    def forward(self, img):
        z = []
        for i in range(self.nl):
            x = self.m[i](self.backbone[i](img))
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            grid, anchor_grid = self._make_grid(nx, ny, i)
            xy, wh, conf = x.sigmoid().split((2, 2, self.nc + 1), 4)
            xy = (xy * 2 + grid) * self.stride[i]
            wh = (wh * 2) ** 2 * anchor_grid
            y = torch.cat((xy, wh, conf), 4)
            z.append(y.view(bs, self.na * nx * ny, self.no))
        out = torch.cat(z, 1)
        score, cls = out[..., 5:].max(-1)
        return out, score * out[..., 4], cls


# ---------------- seq2seq with attention ----------------


class Seq2Seq(nn.Module):
    """GRU encoder (bidirectional) over a padded batch without packing, the padding
    zeroed by a length mask; LSTM decoder with teacher forcing; Luong general attention
    with masked_fill(-inf) on the padded source positions"""
    def __init__(self, vocab=60, e=16, h=24, pad=0):
        super().__init__()
        self.pad = pad
        self.src_emb = nn.Embedding(vocab, e, padding_idx=pad)
        self.tgt_emb = nn.Embedding(vocab, e, padding_idx=pad)
        self.enc = nn.GRU(e, h, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * h, h)
        self.dec = nn.LSTM(e, h, batch_first=True)
        self.attn = nn.Linear(h, 2 * h, bias=False)
        self.out = nn.Linear(3 * h, vocab)

    def forward(self, src, tgt):
        smask = src != self.pad
        enc, hn = self.enc(self.src_emb(src))
        enc = enc * smask.unsqueeze(-1).float()
        h0 = torch.tanh(self.bridge(torch.cat([hn[0], hn[1]], -1))).unsqueeze(0)
        dec, _ = self.dec(self.tgt_emb(tgt), (h0, torch.zeros_like(h0)))
        scores = torch.bmm(self.attn(dec), enc.transpose(1, 2))
        scores = scores.masked_fill(~smask.unsqueeze(1), float("-inf"))
        a = F.softmax(scores, dim=-1)
        ctx = torch.bmm(a, enc)
        return F.log_softmax(self.out(torch.cat([dec, ctx], -1)), -1), a


# ---------------- rotary embeddings ----------------


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


class Rotary(nn.Module):
    """GPT-NeoX's rotary (cos/sin cached, cat of halves, partial rotary_ndims) and GPT-J's
    (sin/cos interleaved by repeat_interleave, stack of (-x2, x1) flattened), position ids
    as an input"""
    def __init__(self, d=64, h=4, rot=8, base=10000):
        super().__init__()
        self.h, self.dh, self.rot = h, d // h, rot
        self.qkv = nn.Linear(d, 3 * d)
        inv = 1.0 / (base ** (torch.arange(0, rot, 2).float() / rot))
        t = torch.arange(512).float()
        freqs = torch.einsum("i,j->ij", t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None])
        self.register_buffer("sin_cached", emb.sin()[None, None])
        self.register_buffer("sincos", torch.cat([freqs.sin(), freqs.cos()], -1))

    def neox(self, q, k, pos):
        s = q.shape[-2]
        cos, sin = self.cos_cached[:, :, :s], self.sin_cached[:, :, :s]
        cos = cos.squeeze(1).squeeze(0)[pos].unsqueeze(1)
        sin = sin.squeeze(1).squeeze(0)[pos].unsqueeze(1)
        qr, qp = q[..., : self.rot], q[..., self.rot:]
        kr, kp = k[..., : self.rot], k[..., self.rot:]
        qe = qr * cos + rotate_half(qr) * sin
        ke = kr * cos + rotate_half(kr) * sin
        return torch.cat((qe, qp), dim=-1), torch.cat((ke, kp), dim=-1)

    def gptj(self, t, pos):  # t (b, s, h, dh)
        sc = self.sincos[pos]
        sin, cos = torch.split(sc, sc.shape[-1] // 2, dim=-1)
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        tr, tp = t[:, :, :, : self.rot], t[:, :, :, self.rot:]
        tr = (tr * cos) + (rotate_every_two(tr) * sin)
        return torch.cat([tr, tp], dim=-1)

    def forward(self, x, pos):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, self.h, 3 * self.dh).chunk(3, -1)
        qn, kn = self.neox(q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), pos)
        qj, kj = self.gptj(q, pos), self.gptj(k, pos)
        a = torch.matmul(qn, kn.transpose(-1, -2)) / math.sqrt(self.dh)
        o = torch.matmul(a.softmax(-1), v.permute(0, 2, 1, 3))
        return o, qj * kj.sum(1, keepdim=True)


# ---------------- normalizations and small functional ops ----------------


class Norms(nn.Module):
    """LayerNorm without affine, GroupNorm, InstanceNorm1d (track_running_stats off),
    PixelShuffle / PixelUnshuffle, F.normalize, cosine_similarity, LocalResponseNorm"""
    def __init__(self, c=16):
        super().__init__()
        self.ln = nn.LayerNorm([c], elementwise_affine=False)
        self.gn = nn.GroupNorm(4, c)
        self.inn = nn.InstanceNorm1d(c, affine=True)
        self.conv = nn.Conv2d(c, 4 * c, 3, padding=1)
        self.ps = nn.PixelShuffle(2)
        self.pu = nn.PixelUnshuffle(2)
        self.lrn = nn.LocalResponseNorm(3)

    def forward(self, x):  # (b, c, h, w)
        b, c, h, w = x.shape
        a = self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        g = self.gn(x)
        i = self.inn(x.flatten(2)).view(b, c, h, w)
        up = self.ps(self.conv(a + g + i))
        dn = self.pu(up)
        n = F.normalize(dn.flatten(2), p=2, dim=-1)
        cos = F.cosine_similarity(n[:, :8], n[:, 8:16], dim=1, eps=1e-8)
        return up, self.lrn(dn), n, cos


class GatherScatter(nn.Module):
    """torch.gather / scatter_add_ / scatter_ (in place on a zeros_like), one_hot written
    as a comparison with an arange, boolean indexing written as where, masked_fill with
    -inf then softmax, embedding with padding_idx, a segment sum by F.one_hot and bmm.
    Opset 16: PyTorch 1.13 exports scatter_add before it as ScatterElements (no
    reduction) into zeros plus Add, which drops repeated indices' sums (for any runtime),
    and at 16 refuses an index made by expand (its dims unknown to the exporter)."""
    def __init__(self, vocab=30, d=8, classes=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.classes = classes
        self.lin = nn.Linear(d, classes)

    def forward(self, tok, seg):  # tok (b, s) with 0 = pad, seg (b, s) in [0, 4)
        e = self.emb(tok)
        logits = self.lin(e)
        pad = tok == 0
        logits = logits.masked_fill(pad[..., None], float("-inf"))
        p = logits.softmax(1)
        p = torch.where(torch.isnan(p), torch.zeros_like(p), p)
        best = logits.argmax(-1, keepdim=True)
        picked = torch.gather(logits, -1, best).squeeze(-1)
        one_hot = (best == torch.arange(self.classes)[None, None]).float()
        sums = F.one_hot(seg, 4).float().transpose(1, 2) @ e  # a segment sum
        counts = torch.zeros(tok.shape[0], 4).scatter_add_(1, seg, (~pad).float())
        marks = torch.zeros_like(logits).scatter_(2, best, 1.0)
        pos_only = torch.where(e > 0, e, torch.zeros_like(e)).sum(-1)
        return p, picked, one_hot, sums / counts.clamp(min=1)[..., None], marks, pos_only


class ArcFace(nn.Module):
    """ArcMarginProduct (insightface / arcface-pytorch): normalized features against a
    normalized weight, acos-free cos(theta + m) by sqrt(1 - cos^2), the label's one-hot by
    scatter_, the easy margin's where"""
    def __init__(self, d=32, classes=10, s=30.0, m=0.5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(classes, d))
        self.s, self.cos_m, self.sin_m = s, math.cos(m), math.sin(m)
        self.th, self.mm = math.cos(math.pi - m), math.sin(math.pi - m) * m
        self.backbone = nn.Sequential(nn.Linear(20, d), nn.PReLU(), nn.BatchNorm1d(d))

    def forward(self, x, label):
        f = self.backbone(x)
        cosine = F.linear(F.normalize(f), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size())
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        out = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        return out * self.s, F.cross_entropy(out * self.s, label, reduction="none")


# ---------------- wav2vec2 / CLIP / MLP-Mixer ----------------


class Wav2Vec2Features(nn.Module):
    """Wav2Vec2FeatureEncoder (group norm on the first conv, GELU), the feature
    projection, and the positional conv embedding (weight_norm over dim 2, an even
    kernel whose extra frame is removed)"""
    def __init__(self, c=32, d=48, k=8, groups=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, c, 10, 5, bias=False), nn.Conv1d(c, c, 3, 2, bias=False),
                                    nn.Conv1d(c, c, 2, 2, bias=False)])
        self.gn = nn.GroupNorm(c, c, affine=True)
        self.ln = nn.LayerNorm(c)
        self.proj = nn.Linear(c, d)
        conv = nn.Conv1d(d, d, k, padding=k // 2, groups=groups)
        self.pos_conv = nn.utils.weight_norm(conv, name="weight", dim=2)
        self.k = k
        self.enc_ln = nn.LayerNorm(d)

    def forward(self, wav):  # (b, samples)
        x = wav[:, None]
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if i == 0:
                x = self.gn(x)
            x = F.gelu(x)
        x = self.proj(self.ln(x.transpose(1, 2)))
        p = self.pos_conv(x.transpose(1, 2))
        if self.k % 2 == 0:
            p = p[:, :, :-1]
        x = x + F.gelu(p).transpose(1, 2)
        return self.enc_ln(x)


class CLIPText(nn.Module):
    """CLIP's text transformer: causal mask by torch.empty().fill_(-inf).triu_(1) (open_clip
    build_attention_mask), quick_gelu, pooled at the EOT token by argmax of the ids,
    projection, L2-normalized"""
    def __init__(self, vocab=100, d=32, h=4, ctx=77):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(ctx, d) * 0.1)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h)
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.text_projection = nn.Parameter(torch.randn(d, 16) * d ** -0.5)

    def forward(self, text):
        s = text.shape[1]
        mask = torch.empty(s, s).fill_(float("-inf")).triu_(1)
        x = self.tok(text) + self.pos[:s]
        x = x.permute(1, 0, 2)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
        m = self.fc(self.ln2(x))
        x = x + self.proj(m * torch.sigmoid(1.702 * m))
        x = self.lnf(x.permute(1, 0, 2))
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return x / x.norm(dim=-1, keepdim=True)


class Mixer(nn.Module):
    """MLP-Mixer (timm): patch conv, token mixing over the transposed tokens, channel
    mixing, mean pool"""
    def __init__(self, d=32, patch=4, img=16, tok_h=16, ch_h=64):
        super().__init__()
        n = (img // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, patch)
        self.norm1, self.norm2, self.norm = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.tok = nn.Sequential(nn.Linear(n, tok_h), nn.GELU(), nn.Linear(tok_h, n))
        self.ch = nn.Sequential(nn.Linear(d, ch_h), nn.GELU(), nn.Linear(ch_h, d))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = x + self.tok(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.ch(self.norm2(x))
        return self.head(self.norm(x).mean(dim=1))


def cases(big=False):
    """name -> Case (see zoo_models.cases)."""

    def seq(*names):
        return {n: {0: "b", 1: "s"} for n in names}
    z = {}
    d_enc = 512 if big else 64
    z["torch_encoder"] = Case(
        lambda: TorchEncoder(d=512, h=8, ff=2048, layers=2, vocab=1000) if big else TorchEncoder(),
        lambda b, s: (ids(b, s, 1000 if big else 100), padmask(b, s) == 0),
        ["tok", "pad"], ["y"], seq("tok", "pad", "y"), [14, 17], [(2, 9), (3, 5)], (2, 128))
    z["torch_decoder"] = Case(
        lambda: TorchDecoder(d=512, h=8, ff=2048) if big else TorchDecoder(),
        lambda b, s: (torch.randn(s, b, d_enc), torch.randn(s + 3, b, d_enc),
                      padmask(b, s + 3) == 0),
        ["tgt", "mem", "mem_pad"], ["y"],
        {"tgt": {0: "t", 1: "b"}, "mem": {0: "m", 1: "b"}, "mem_pad": {0: "b", 1: "m"}},
        [14, 17], [(2, 7), (1, 4)], (2, 128))
    z["mha_masks"] = Case(
        MHAMasks, lambda b, s: (torch.randn(b, s, 32), torch.randn(b, s + 2, 24),
                                padmask(b, s + 2) == 0),
        ["q", "kv", "pad"], ["y", "w"],
        {"q": {0: "b", 1: "n"}, "kv": {0: "b", 1: "s"}, "pad": {0: "b", 1: "s"}}, 14,
        [(2, 6), (3, 3)], (8, 256))
    z["gpt2_past"] = Case(
        lambda: GPT2Past(d=768, h=12, n_ctx=1024) if big else GPT2Past(),
        lambda b, s: (torch.randn(b, 1 if big else 2, 768 if big else 64),
                      torch.randn(b, 12 if big else 4, s, 64 if big else 16),
                      torch.randn(b, 12 if big else 4, s, 64 if big else 16)),
        ["x", "past_key", "past_value"], ["y", "present_key", "present_value"],
        {"x": {0: "b", 1: "n"}, "past_key": {0: "b", 2: "p"}, "past_value": {0: "b", 2: "p"},
         "present_key": {0: "b", 2: "p_n"}, "present_value": {0: "b", 2: "p_n"}},
        [14, 17], [(2, 5), (1, 0), (3, 11)], (4, 256))
    z["t5_decoder_bias"] = Case(
        lambda: T5DecoderBias(d=512, h=8) if big else T5DecoderBias(),
        lambda b, s: (torch.randn(b, 3, 512 if big else 64), torch.randn(b, 8 if big else 4, s, 64 if big else 16)),
        ["x", "past_k"], ["y", "bias"], {"x": {0: "b", 1: "n"}, "past_k": {0: "b", 2: "p"}}, 14,
        [(2, 6), (1, 40)], (2, 200))
    z["swin_stage"] = Case(
        lambda: Swin(d=96, img=112, patch=4) if big else Swin(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}}, [14, 17],
        [(2, 16), (1, 16)], (4, 112))
    z["resnet50"] = Case(
        ResNet50, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}},
        [13, 17], [(2, 32), (1, 32)], (1, 224))
    z["resnext50"] = Case(
        lambda: ResNet50(groups=32, width=4, blocks=(2, 2)), lambda b, s: (torch.randn(b, 3, s, s),),
        ["x"], ["y"], {"x": {0: "b"}}, 14, [(2, 32)], (1, 224))
    z["densenet"] = Case(
        lambda: DenseNet(growth=32, layers=(6, 12), init=64) if big else DenseNet(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b", 2: "h", 3: "w"}}, 13,
        [(2, 16), (1, 24)], (1, 112))
    z["squeezenet"] = Case(
        SqueezeNet, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}}, 17,
        [(2, 47)], (1, 224))
    z["shufflenet"] = Case(
        ShuffleNetV2, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"],
        {"x": {0: "b", 2: "h", 3: "w"}}, 14, [(2, 32), (1, 64)], (1, 224))
    z["unet"] = Case(
        lambda: UNet(32) if big else UNet(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["x"], ["y", "coarse"],
        {"x": {0: "b", 2: "h", 3: "w"}}, [13, 17], [(2, 16), (1, 18), (1, 32)], (1, 256))
    z["yolo_detect"] = Case(
        lambda: YoloDetect(nc=80, ch=(128, 256)) if big else YoloDetect(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["img"], ["pred", "score", "cls"],
        {"img": {0: "b"}}, [13, 17], [(2, 64), (1, 64)], (1, 640))
    z["seq2seq"] = Case(
        lambda: Seq2Seq(vocab=1000, e=128, h=256) if big else Seq2Seq(),
        lambda b, s: (torch.cat([ids(b, s, 60, 1)[:, :s - 1], torch.zeros(b, 1, dtype=torch.long)], 1)
                      * padmask(b, s), ids(b, s + 1, 60, 1)),
        ["src", "tgt"], ["logp", "attn"], {"src": {0: "b", 1: "s"}, "tgt": {0: "b", 1: "t"}}, 14,
        [(2, 8), (3, 5)], (8, 64))
    z["rotary"] = Case(
        lambda: Rotary(d=1024, h=16, rot=32) if big else Rotary(),
        lambda b, s: (torch.randn(b, s, 1024 if big else 64),
                      (torch.arange(s)[None] - torch.arange(b)[:, None]).clamp(min=0)),
        ["x", "pos"], ["o", "qk"], seq("x", "pos"), [14, 17], [(2, 7), (1, 12)], (1, 128))
    z["norms"] = Case(
        lambda: Norms(64) if big else Norms(),
        lambda b, s: (torch.randn(b, 64 if big else 16, s, s + 2),), ["x"],
        ["up", "lrn", "n", "cos"], {"x": {0: "b"}}, [13, 16], [(2, 6), (1, 6)], (2, 64))
    z["gather_scatter"] = Case(
        lambda: GatherScatter(vocab=1000, d=128, classes=64) if big else GatherScatter(),
        lambda b, s: (ids(b, s, 30, 1) * padmask(b, s), torch.randint(0, 4, (b, s))),
        ["tok", "seg"], ["p", "picked", "one_hot", "mean", "marks", "pos"], seq("tok", "seg"),
        16, [(2, 9), (3, 5)], (16, 512))
    z["arcface"] = Case(
        ArcFace, lambda b, s: (torch.randn(b, 20), torch.randint(0, 10, (b,))),
        ["x", "label"], ["logits", "loss"], {"x": {0: "b"}, "label": {0: "b"}}, 14,
        [(4, 0), (7, 0)], (1024, 0))
    z["wav2vec2_features"] = Case(
        lambda: Wav2Vec2Features(c=256, d=384, k=32, groups=16) if big else Wav2Vec2Features(),
        lambda b, s: (torch.randn(b, s),), ["wav"], ["y"], {"wav": {0: "b", 1: "n"}}, [14, 17],
        [(2, 400), (1, 163)], (1, 32000))
    z["clip_text"] = Case(
        lambda: CLIPText(vocab=1000, d=512, h=8) if big else CLIPText(),
        lambda b, s: (ids(b, s, 1000 if big else 100),), ["text"], ["y"], {"text": {0: "b", 1: "s"}},
        14, [(2, 9), (3, 4)], (4, 77))
    z["mlp_mixer"] = Case(
        lambda: Mixer(d=256, patch=16, img=224, tok_h=128, ch_h=1024) if big else Mixer(),
        lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}}, 17,
        [(2, 16), (3, 16)], (8, 224))
    return z
