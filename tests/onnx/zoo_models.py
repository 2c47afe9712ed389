"""zoo_models.py — models as their authors' code writes them (Hugging Face, timm, torchvision,
the papers' reference code), written out in plain torch.nn since none of those packages is
installed here, for tests/onnx/test_torch_zoo.py (correctness, small sizes) and
tests/bench/bench_torch_blocks.py (the same classes at realistic sizes, beside ONNX
Runtime). Nothing here was written for relaxd: each class follows its source's forward.

CASES (cases(big)) maps a name to a Case: the module's constructor, its example inputs for
(batch, size), input / output names, dynamic axes, the opset and the sizes to run.
"""
import math
from collections import namedtuple

import torch
from torch import nn
from torch.nn import functional as F

Case = namedtuple("Case", "make inputs names outputs dynamic opset sizes big")


class BertSelfAttention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.dh = h, d // h
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.h, self.dh)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden, ext_mask):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.dh)
        scores = scores + ext_mask
        probs = nn.functional.softmax(scores, dim=-1)
        probs = self.dropout(probs)
        ctx = torch.matmul(probs, v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.h * self.dh,))
        return ctx


class BertLayer(nn.Module):
    def __init__(self, d, h, inter):
        super().__init__()
        self.attn = BertSelfAttention(d, h)
        self.attn_out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, inter)
        self.out = nn.Linear(inter, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, m):
        a = self.ln1(self.attn_out(self.attn(x, m)) + x)
        i = F.gelu(self.inter(a))
        return self.ln2(self.out(i) + a)


class Bert(nn.Module):
    def __init__(self, vocab=1000, d=64, h=4, inter=128, layers=2, maxpos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxpos, d)
        self.tok = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(maxpos).expand((1, -1)))
        self.layers = nn.ModuleList([BertLayer(d, h, inter) for _ in range(layers)])
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids, token_type_ids, attention_mask):
        s = input_ids.size(1)
        pos_ids = self.position_ids[:, :s]
        e = self.word(input_ids) + self.tok(token_type_ids) + self.pos(pos_ids)
        x = self.ln(e)
        ext = attention_mask[:, None, None, :]
        ext = ext.to(dtype=x.dtype)
        ext = (1.0 - ext) * torch.finfo(x.dtype).min
        for l in self.layers:
            x = l(x, ext)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


# ---------------- DistilBERT-style ----------------


class DistilAttn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.d = h, d
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, mask):
        bs, q_length, dim = x.size()
        k_length = x.size(1)
        dph = self.d // self.h
        mask_reshp = (bs, 1, 1, k_length)

        def shape(t):
            return t.view(bs, -1, self.h, dph).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(bs, -1, self.h * dph)
        q = shape(self.q_lin(x)) / math.sqrt(dph)
        k = shape(self.k_lin(x))
        v = shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        w = nn.functional.softmax(scores, dim=-1)
        return self.out_lin(unshape(torch.matmul(w, v)))


class DistilBert(nn.Module):
    def __init__(self, vocab=1000, d=64, h=4, hid=128):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(512, d)
        self.ln0 = nn.LayerNorm(d, eps=1e-12)
        self.attn = DistilAttn(d, h)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.lin1, self.lin2 = nn.Linear(d, hid), nn.Linear(hid, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)
        self.cls = nn.Linear(d, 3)

    def forward(self, input_ids, attention_mask):
        s = input_ids.size(1)
        pos = torch.arange(s, dtype=torch.long, device=input_ids.device)
        pos = pos.unsqueeze(0).expand_as(input_ids)
        x = self.ln0(self.word(input_ids) + self.pos(pos))
        x = self.ln1(self.attn(x, attention_mask) + x)
        x = self.ln2(self.lin2(F.gelu(self.lin1(x))) + x)
        logits = self.cls(x[:, 0])
        return logits.softmax(-1), logits.argmax(-1)


# ---------------- RoBERTa position ids ----------------


class RobertaEmb(nn.Module):
    def __init__(self, vocab=1000, d=64, pad=1):
        super().__init__()
        self.pad = pad
        self.word = nn.Embedding(vocab, d, padding_idx=pad)
        self.pos = nn.Embedding(514, d, padding_idx=pad)
        self.ln = nn.LayerNorm(d)

    def forward(self, input_ids):
        mask = input_ids.ne(self.pad).int()
        inc = (torch.cumsum(mask, dim=1).type_as(mask)) * mask
        pos = inc.long() + self.pad
        return self.ln(self.word(input_ids) + self.pos(pos))


# ---------------- ConvNeXt ----------------


class LayerNormCF(nn.Module):
    """ConvNeXt's channels_first LayerNorm"""
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.randn(c)), nn.Parameter(torch.randn(c)), eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim))

    def forward(self, x):
        inp = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv2(self.act(self.pwconv1(x)))
        x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return inp + x


class ConvNeXt(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 4, 4), LayerNormCF(dim))
        self.b1 = ConvNeXtBlock(dim)
        self.down = nn.Sequential(LayerNormCF(dim), nn.Conv2d(dim, 2 * dim, 2, 2))
        self.b2 = ConvNeXtBlock(2 * dim)
        self.norm = nn.LayerNorm(2 * dim)
        self.head = nn.Linear(2 * dim, 10)

    def forward(self, x):
        x = self.b2(self.down(self.b1(self.stem(x))))
        return self.head(self.norm(x.mean([-2, -1])))


# ---------------- MobileNetV3 / EfficientNet ----------------


class SqueezeExcitation(nn.Module):
    def __init__(self, c, sq, act=nn.ReLU, scale=nn.Hardsigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1, self.fc2 = nn.Conv2d(c, sq, 1), nn.Conv2d(sq, c, 1)
        self.activation, self.scale_activation = act(), scale()

    def forward(self, x):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return s * x


class MBv3Block(nn.Module):
    def __init__(self, cin, exp, cout, k, stride, se, act):
        super().__init__()
        layers = [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act(),
                  nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp), act()]
        if se:
            layers.append(SqueezeExcitation(exp, max(8, exp // 4)))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return y + x if self.res else y


class MobileNetV3(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(
            MBv3Block(16, 16, 16, 3, 2, True, nn.ReLU),
            MBv3Block(16, 72, 24, 3, 2, False, nn.ReLU),
            MBv3Block(24, 96, 40, 5, 2, True, nn.Hardswish),
            MBv3Block(40, 240, 40, 5, 1, True, nn.Hardswish))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(40, 128), nn.Hardswish(),
                                  nn.Dropout(0.2), nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class MBConv(nn.Module):
    """EfficientNet MBConv with SiLU and SE (sigmoid)"""
    def __init__(self, cin, cout, exp, k, stride):
        super().__init__()
        e = cin * exp
        self.expand = nn.Sequential(nn.Conv2d(cin, e, 1, bias=False), nn.BatchNorm2d(e), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(e, e, k, stride, k // 2, groups=e, bias=False), nn.BatchNorm2d(e), nn.SiLU())
        self.se = SqueezeExcitation(e, max(1, cin // 4), nn.SiLU, nn.Sigmoid)
        self.proj = nn.Sequential(nn.Conv2d(e, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.proj(self.se(self.dw(self.expand(x))))
        return x + y if self.res else y


class EfficientNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        self.b = nn.Sequential(MBConv(32, 16, 1, 3, 1), MBConv(16, 24, 6, 3, 2), MBConv(24, 24, 6, 3, 1),
                               MBConv(24, 40, 6, 5, 2))
        self.head = nn.Sequential(nn.Conv2d(40, 128, 1, bias=False), nn.BatchNorm2d(128), nn.SiLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.b(self.stem(x)))


# ---------------- TCN ----------------


class Chomp1d(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x[:, :, :-self.c].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dil):
        super().__init__()
        pad = (k - 1) * dil
        self.conv1 = nn.utils.weight_norm(nn.Conv1d(cin, cout, k, padding=pad, dilation=dil))
        self.conv2 = nn.utils.weight_norm(nn.Conv1d(cout, cout, k, padding=pad, dilation=dil))
        self.net = nn.Sequential(self.conv1, Chomp1d(pad), nn.ReLU(), nn.Dropout(0.2),
                                 self.conv2, Chomp1d(pad), nn.ReLU(), nn.Dropout(0.2))
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        out = self.net(x)
        res = x if self.down is None else self.down(x)
        return F.relu(out + res)


class TCN(nn.Module):
    def __init__(self, cin=8, ch=(32, 32, 32), k=3):
        super().__init__()
        layers = []
        for i, c in enumerate(ch):
            layers.append(TemporalBlock(cin if i == 0 else ch[i - 1], c, k, 2 ** i))
        self.net = nn.Sequential(*layers)
        self.lin = nn.Linear(ch[-1], 5)

    def forward(self, x):
        y = self.net(x)
        return self.lin(y[:, :, -1])


# ---------------- DLRM ----------------


class DLRM(nn.Module):
    def __init__(self, dense=13, tables=(100, 200, 50, 300), d=16):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(dense, 64), nn.ReLU(), nn.Linear(64, d), nn.ReLU())
        self.emb = nn.ModuleList([nn.Embedding(n, d) for n in tables])
        nf = len(tables) + 1
        self.li = torch.tensor([i for i in range(nf) for j in range(i)])
        self.lj = torch.tensor([j for i in range(nf) for j in range(i)])
        self.top = nn.Sequential(nn.Linear(d + nf * (nf - 1) // 2, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense_x, sparse):
        x = self.bot(dense_x)
        ly = [e(sparse[:, i]) for i, e in enumerate(self.emb)]
        T = torch.cat([x] + ly, dim=1).view((x.shape[0], -1, x.shape[1]))
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        Zflat = Z[:, self.li, self.lj]
        R = torch.cat([x, Zflat], dim=1)
        return torch.sigmoid(self.top(R))


# ---------------- autoencoder ----------------


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                 nn.GroupNorm(4, 32))
        self.dec1 = nn.ConvTranspose2d(32, 16, 4, 2, 1)
        self.norm = nn.InstanceNorm2d(16, affine=True)
        self.dec2 = nn.Conv2d(16, 3, 3, 1, 1)

    def forward(self, x):
        z = self.enc(x)
        y = F.relu(self.norm(self.dec1(z)))
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return torch.sigmoid(self.dec2(y))


class InterpHead(nn.Module):
    """segmentation head: bilinear resize to the input size (align_corners True and False)"""
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, 2, 1)
        self.cls = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.cls(F.relu(self.c(x)))
        a = F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)
        b = F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=True)
        return a + b


# ---------------- attention variants ----------------


class MHAPad(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, h, batch_first=True)
        self.ln = nn.LayerNorm(d)

    def forward(self, x, pad):
        y, w = self.mha(x, x, x, key_padding_mask=pad)
        return self.ln(x + y), w


class EinsumAttn(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.h, -1) for t in (q, k, v))
        sim = torch.einsum("bihd,bjhd->bhij", q, k) * (d // self.h) ** -0.5
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bjhd->bihd", attn, v)
        return self.o(out.reshape(b, n, d))


class GRUMasked(nn.Module):
    def __init__(self, i=16, h=32):
        super().__init__()
        self.gru = nn.GRU(i, h, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * h, 4)

    def forward(self, x, lengths):
        y, _ = self.gru(x)
        mask = (torch.arange(x.shape[1])[None, :] < lengths[:, None]).to(y.dtype)
        y = y * mask[..., None]
        pooled = y.sum(1) / lengths[:, None].to(y.dtype)
        last = y[torch.arange(x.shape[0]), lengths - 1]
        return self.out(pooled), last


class Heads(nn.Module):
    def __init__(self, d=32, c=20):
        super().__init__()
        self.lin = nn.Linear(d, c)

    def forward(self, x):
        logits = self.lin(x)
        p = logits.softmax(-1)
        v, i = torch.topk(p, 5, dim=-1)
        cs = torch.cumsum(p, dim=-1)
        am = logits.argmax(-1)
        return v, i, cs, am


class WhisperEnc(nn.Module):
    def __init__(self, mels=16, d=64, h=4, maxlen=1500):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        pos = torch.arange(maxlen)[:, None] / torch.pow(10000, torch.arange(0, d, 2) / d)[None]
        pe = torch.zeros(maxlen, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos), torch.cos(pos)
        self.register_buffer("pe", pe)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.lnf = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)
        x = x + self.pe[: x.shape[1]]
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.lnf(x)


class Detr(nn.Module):
    """DETR-ish: learned queries cross-attention via nn.MultiheadAttention(batch_first=False), sine positions 2D"""
    def __init__(self, d=32, h=4, nq=10):
        super().__init__()
        self.q = nn.Embedding(nq, d)
        self.ca = nn.MultiheadAttention(d, h)
        self.proj = nn.Conv2d(3, d, 4, 4)
        self.cls = nn.Linear(d, 5)
        self.box = nn.Linear(d, 4)
    def forward(self, img):
        f = self.proj(img)
        b, c, hh, ww = f.shape
        y = torch.arange(hh, dtype=torch.float32)[:, None].expand(hh, ww)
        xpos = torch.arange(ww, dtype=torch.float32)[None, :].expand(hh, ww)
        dim_t = 10000 ** (2 * (torch.arange(c // 2) // 2) / (c // 2))
        py = y[..., None] / dim_t; px = xpos[..., None] / dim_t
        pos = torch.cat([torch.stack([py[..., 0::2].sin(), py[..., 1::2].cos()], -1).flatten(2),
                         torch.stack([px[..., 0::2].sin(), px[..., 1::2].cos()], -1).flatten(2)], -1)
        mem = f.flatten(2).permute(2, 0, 1) + pos.flatten(0, 1)[:, None, :]
        q = self.q.weight[:, None, :].repeat(1, b, 1)
        o, _ = self.ca(q, mem, mem)
        o = o.transpose(0, 1)
        return self.cls(o).softmax(-1), self.box(o).sigmoid()


class LSTMState(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.fc = nn.Linear(24, 50)
    def forward(self, tok, h0, c0):
        y, (h, c) = self.lstm(self.emb(tok), (h0, c0))
        return F.log_softmax(self.fc(y), -1), h, c


class SpeechFront(nn.Module):
    """conformer-ish conv module: pointwise conv, GLU, depthwise conv1d, BatchNorm1d, SiLU"""
    def __init__(self, d=32):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, 15, padding=7, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
    def forward(self, x):  # (b, t, d)
        y = self.ln(x).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = F.silu(self.bn(self.dw(y)))
        return x + self.pw2(y).transpose(1, 2)


class PosRepeat(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(64, 8)
        self.w = nn.Parameter(torch.randn(3, 5))
    def forward(self, ids):
        b, s = ids.shape
        p = torch.arange(s).unsqueeze(0).repeat(b, 1)
        t = self.w.repeat(b, 2)          # non-1 dim repeated symbolically
        return self.pos(p) + ids.unsqueeze(-1).float(), t


class Split(nn.Module):
    def forward(self, x):
        a, b = x.split(x.shape[-1] // 2, -1)
        c, d = x.chunk(2, dim=1)
        u = torch.stack([a, b], 0).unbind(0)
        return u[0] * u[1], c - d, x[..., ::2], x[:, 1::3]


class PadMasks(nn.Module):
    def forward(self, x, m):  # x (b, s, d) m (b, s) bool
        y = x.masked_fill(~m[..., None], 0.0)
        z = torch.where(m[..., None], x, torch.zeros_like(x) - 1)
        p = F.pad(x, (1, 2, 0, 3), value=-2.0)
        mean = y.sum(1) / m.sum(1, keepdim=True).clamp(min=1)
        return y + z, p, mean, m.long().cumsum(-1) - 1


class Cdist(nn.Module):
    def forward(self, a, b):
        d = torch.cdist(a, b)
        e = torch.einsum("bnd,md->bnm", a, b[0])
        return d, e, F.cosine_similarity(a[:, :, None], b[:, None], dim=-1)


class Sorts(nn.Module):
    def forward(self, x):
        v, i = torch.sort(x, dim=-1, descending=True)
        a = torch.argsort(x, dim=1)
        return v, i, a, torch.nan_to_num(torch.log(x)), torch.isnan(torch.sqrt(x)).float(), torch.round(x * 3)


def ids(b, s, v=1000, lo=0):
    return torch.randint(lo, v, (b, s))


def padmask(b, s):
    """(b, s) int64 attention mask: row i has its last i * (s // 2b + 1) positions padded."""
    m = torch.ones(b, s, dtype=torch.long)
    for i in range(1, b):
        m[i, s - i * (s // (2 * b) + 1):] = 0
    return m


def cases(big=False):
    """name -> Case. sizes: the (batch, size) pairs the test runs from one artifact (the
    first is the export's); big: the bench's one size, with the model built at its size."""

    def seq(*names):
        return {n: {0: "b", 1: "s"} for n in names}
    z = {}
    z["bert"] = Case(
        lambda: Bert(d=768, h=12, inter=3072, layers=1, vocab=30522) if big else Bert(),
        lambda b, s: (ids(b, s, 30522 if big else 1000), torch.randint(0, 2, (b, s)), padmask(b, s)),
        ["input_ids", "token_type_ids", "attention_mask"], ["last", "pooled"],
        dict(seq("input_ids", "token_type_ids", "attention_mask", "last"), pooled={0: "b"}), 14,
        [(2, 9), (3, 5)], (2, 128))
    z["distilbert"] = Case(
        lambda: DistilBert(d=768, h=12, hid=3072, vocab=30522) if big else DistilBert(),
        lambda b, s: (ids(b, s, 30522 if big else 1000), padmask(b, s)),
        ["input_ids", "attention_mask"], ["probs", "label"],
        seq("input_ids", "attention_mask"), 14, [(2, 9), (1, 4)], (2, 128))
    z["roberta_emb"] = Case(
        lambda: RobertaEmb(d=768 if big else 64), lambda b, s: (ids(b, s),), ["input_ids"], ["y"],
        seq("input_ids"), 13, [(2, 9), (3, 6)], (8, 128))
    z["convnext"] = Case(
        lambda: ConvNeXt(96 if big else 16), lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"],
        {"x": {0: "b"}}, 17, [(2, 32), (1, 32)], (1, 224))
    z["mobilenetv3"] = Case(
        MobileNetV3, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}}, 17,
        [(2, 32)], (1, 224))
    z["efficientnet"] = Case(
        EfficientNet, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"], {"x": {0: "b"}}, 13,
        [(2, 32)], (1, 224))
    z["tcn"] = Case(
        lambda: TCN(ch=(64, 64, 64, 64)) if big else TCN(ch=(16, 16, 16)),
        lambda b, s: (torch.randn(b, 8, s),), ["x"], ["y"], {"x": {0: "b", 2: "t"}}, 13,
        [(2, 20), (1, 7)], (8, 1024))
    z["dlrm"] = Case(
        DLRM, lambda b, s: (torch.randn(b, 13), torch.stack(
            [torch.randint(0, n, (b,)) for n in (100, 200, 50, 300)], 1)),
        ["dense", "sparse"], ["y"], {"dense": {0: "b"}, "sparse": {0: "b"}, "y": {0: "b"}}, 13,
        [(4, 0), (3, 0)], (2048, 0))
    z["autoencoder"] = Case(
        AutoEncoder, lambda b, s: (torch.randn(b, 3, s, s),), ["x"], ["y"],
        {"x": {0: "b", 2: "h", 3: "w"}}, 16, [(2, 16), (1, 8)], (1, 256))
    z["interp_head"] = Case(
        InterpHead, lambda b, s: (torch.randn(b, 3, s, s + 2),), ["x"], ["y"],
        {"x": {0: "b", 2: "h", 3: "w"}}, 13, [(2, 14), (1, 10)], (1, 256))
    z["mha_pad"] = Case(
        lambda: MHAPad(d=512, h=8) if big else MHAPad(),
        lambda b, s: (torch.randn(b, s, 512 if big else 64), padmask(b, s) == 0),
        ["x", "pad"], ["y", "w"], seq("x", "pad"), 14, [(2, 9), (3, 4)], (2, 128))
    z["einsum_attn"] = Case(
        lambda: EinsumAttn(d=512, h=8) if big else EinsumAttn(),
        lambda b, s: (torch.randn(b, s, 512 if big else 64),), ["x"], ["y"], seq("x"), 14,
        [(2, 9), (1, 3)], (2, 128))
    z["gru_masked"] = Case(
        GRUMasked, lambda b, s: (torch.randn(b, s, 16),
                                 torch.tensor([s] + [max(1, s - 2 - i) for i in range(b - 1)])),
        ["x", "lengths"], ["y", "last"], {"x": {0: "b", 1: "s"}, "lengths": {0: "b"}}, 14,
        [(2, 9), (3, 5)], (16, 64))
    z["heads"] = Case(
        lambda: Heads(d=256, c=1000) if big else Heads(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32),), ["x"], ["v", "i", "cs", "am"],
        seq("x"), 13, [(2, 9), (1, 2)], (8, 64))
    z["whisper_enc"] = Case(
        lambda: WhisperEnc(mels=80, d=384, h=6) if big else WhisperEnc(),
        lambda b, s: (torch.randn(b, 80 if big else 16, 2 * s),), ["mel"], ["y"],
        {"mel": {0: "b", 2: "t"}}, 17, [(2, 9), (1, 5)], (1, 750))
    z["conformer_conv"] = Case(
        lambda: SpeechFront(256) if big else SpeechFront(),
        lambda b, s: (torch.randn(b, s, 256 if big else 32),), ["x"], ["y"],
        {"x": {0: "b", 1: "t"}}, 17, [(2, 20), (1, 9)], (4, 512))
    z["lstm_state"] = Case(
        LSTMState, lambda b, s: (torch.randint(0, 50, (b, s)), torch.randn(2, b, 24),
                                 torch.randn(2, b, 24)),
        ["tok", "h0", "c0"], ["y", "h", "c"],
        {"tok": {0: "b", 1: "s"}, "h0": {1: "b"}, "c0": {1: "b"}}, 14, [(2, 7), (3, 2)], (16, 64))
    z["detr_queries"] = Case(
        lambda: Detr(d=256, h=8, nq=100) if big else Detr(),
        lambda b, s: (torch.randn(b, 3, s, s + 8),), ["img"], ["cls", "box"], {"img": {0: "b"}}, 14,
        [(2, 16), (3, 16)], (2, 128))
    z["pos_repeat"] = Case(
        PosRepeat, lambda b, s: (torch.randint(0, 9, (b, s)),), ["ids"], ["y", "t"],
        {"ids": {0: "b", 1: "s"}}, 14, [(2, 7), (3, 5)], (16, 64))
    z["traced_split"] = Case(
        Split, lambda b, s: (torch.randn(b, 4, s),), ["x"], ["a", "b", "c", "d"],
        {"x": {0: "b", 2: "s"}}, 14, [(2, 8), (3, 8)], (16, 1024))
    z["pad_masks"] = Case(
        PadMasks, lambda b, s: (torch.randn(b, s, 4), torch.rand(b, s) > 0.3), ["x", "m"],
        ["a", "b", "c", "d"], seq("x", "m"), 14, [(2, 7), (3, 4)], (16, 512))
    z["cdist"] = Case(
        Cdist, lambda b, s: (torch.randn(b, s, 8), torch.randn(b, 6, 8)), ["a", "b"],
        ["d", "e", "c"], {"a": {0: "b", 1: "s"}, "b": {0: "b"}}, 14, [(2, 5), (1, 3)], (16, 512))
    z["sorts"] = Case(
        Sorts, lambda b, s: (torch.randn(b, s),), ["x"], ["a", "b", "c", "d", "e", "f"],
        {"x": {0: "b"}}, 14, [(2, 12), (3, 12)], (64, 256))
    return z
