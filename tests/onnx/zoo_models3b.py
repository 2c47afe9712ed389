"""zoo_models3b.py — the second half of tests/onnx/zoo_models3.py's classes (split to keep
files under 1000 lines): sequence models (a packed BiLSTM tagger and GRU encoder, CRNN),
PointNet, GCN / GAT message passing, a VAE, a diffusion U-Net, a scripted module, HF
sequence pooling, ResNeSt, Conv-TasNet, fast neural style, ESPCN, a YOLOv8 head,
Perceiver, Conformer's relative positions, Swin V2 attention, SegFormer, wav2vec2's
positional conv, Deformable DETR's sampling. Their cases are in zoo_models3.cases.
Nothing here was written for relaxd: each class follows its source's forward.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


# ---------------- sequence models: BiLSTM tagger, CRNN ----------------


class BiLSTMTagger(nn.Module):
    def __init__(self, vocab=100, e=32, h=32, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, e, padding_idx=0)
        self.lstm = nn.LSTM(e, h, num_layers=2, bidirectional=True, batch_first=True, dropout=0.1)
        self.out = nn.Linear(2 * h, tags)

    def forward(self, tokens, mask):
        lengths = mask.sum(1)
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(tokens), lengths, batch_first=True,
                                                   enforce_sorted=False)
        z = torch.zeros(4, tokens.shape[0], self.lstm.hidden_size)  # else traced at b
        y, (h, _) = self.lstm(packed, (z, z))
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=tokens.shape[1])
        logp = F.log_softmax(self.out(y), dim=-1) * mask.unsqueeze(-1).float()
        return logp, logp.argmax(-1), torch.cat([h[-2], h[-1]], dim=-1)


class PackedGRU(nn.Module):
    """a seq2seq encoder as the PyTorch tutorial writes it: pack_padded_sequence (sorted
    lengths), a bidirectional GRU, the two directions' outputs summed. The zero initial
    state is passed: without it torch 1.13 exports it as a constant of the traced batch
    expanded to the dynamic one, which fails at any other batch (ONNX Runtime at the
    Expand, relaxd at the match_cast asserting it)"""
    def __init__(self, vocab=100, h=32):
        super().__init__()
        self.h = h
        self.emb = nn.Embedding(vocab, h)
        self.gru = nn.GRU(h, h, num_layers=2, bidirectional=True)

    def forward(self, seq, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(seq), lengths)
        out, hidden = self.gru(packed, torch.zeros(4, seq.shape[1], self.h))
        out, _ = nn.utils.rnn.pad_packed_sequence(out, total_length=seq.shape[0])
        return out[:, :, : self.h] + out[:, :, self.h:], hidden


class CRNN(nn.Module):
    def __init__(self, c=16, h=32, classes=37):
        super().__init__()

        def blk(i, o, pool):
            return [nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(True)] + \
                ([nn.MaxPool2d(pool, pool)] if pool else [])
        self.cnn = nn.Sequential(*blk(1, c, 2), *blk(c, 2 * c, 2), *blk(2 * c, 4 * c, None),
                                 *blk(4 * c, 4 * c, (2, 1)), *blk(4 * c, 8 * c, (2, 1)),
                                 nn.Conv2d(8 * c, 8 * c, (2, 1)))
        self.rnn = nn.LSTM(8 * c, h, bidirectional=True)
        self.embedding = nn.Linear(2 * h, classes)

    def forward(self, x):
        conv = self.cnn(x)
        conv = conv.squeeze(2).permute(2, 0, 1)
        rec, _ = self.rnn(conv)
        T, b, hh = rec.size()
        out = self.embedding(rec.view(T * b, hh)).view(T, b, -1)
        return F.log_softmax(out, dim=2)


# ---------------- PointNet (T-Net by bmm, max over points) ----------------


class TNet(nn.Module):
    def __init__(self, k, c):
        super().__init__()
        self.k = k
        self.convs = nn.Sequential(nn.Conv1d(k, c, 1), nn.BatchNorm1d(c), nn.ReLU(),
                                   nn.Conv1d(c, 2 * c, 1), nn.BatchNorm1d(2 * c), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(2 * c, c), nn.ReLU(), nn.Linear(c, k * k))

    def forward(self, x):
        b = x.size(0)
        x = torch.max(self.convs(x), 2, keepdim=True)[0].view(-1, self.fc[0].in_features)
        iden = torch.eye(self.k, dtype=torch.float32).view(1, self.k * self.k).repeat(b, 1)
        return (self.fc(x) + iden).view(-1, self.k, self.k)


class PointNet(nn.Module):
    def __init__(self, c=32, classes=8):
        super().__init__()
        self.stn = TNet(3, c)
        self.c1 = nn.Sequential(nn.Conv1d(3, c, 1), nn.BatchNorm1d(c), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv1d(c, 2 * c, 1), nn.BatchNorm1d(2 * c), nn.ReLU(),
                                nn.Conv1d(2 * c, 4 * c, 1), nn.BatchNorm1d(4 * c))
        self.fc = nn.Sequential(nn.Linear(4 * c, 2 * c), nn.BatchNorm1d(2 * c), nn.ReLU(),
                                nn.Linear(2 * c, classes))

    def forward(self, x):
        trans = self.stn(x)
        x = torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)
        x = self.c2(self.c1(x))
        x = torch.max(x, 2, keepdim=True)[0].view(x.size(0), -1)
        return F.log_softmax(self.fc(x), dim=1), trans


# ---------------- graph networks: GCN, GAT (scatter_add over the edge list) ----------------


class GCN(nn.Module):
    """PyG's GCNConv written out: self loops, symmetric degree normalization, messages
    gathered by source and summed at the target; two layers"""
    def __init__(self, f=16, hid=32, classes=4):
        super().__init__()
        self.w1, self.w2 = nn.Linear(f, hid, bias=False), nn.Linear(hid, classes, bias=False)
        self.b1, self.b2 = nn.Parameter(0.1 * torch.randn(hid)), nn.Parameter(0.1 * torch.randn(classes))

    def conv(self, x, row, col, lin, bias):
        n = x.size(0)
        x = lin(x)
        deg = torch.zeros(n, dtype=x.dtype).scatter_add_(0, col, torch.ones(col.size(0), dtype=x.dtype))
        dis = deg.pow(-0.5)
        dis = dis.masked_fill(dis == float("inf"), 0)
        norm = dis[row] * dis[col]
        msg = norm.view(-1, 1) * x[row]
        out = torch.zeros(n, x.size(1), dtype=x.dtype)
        return out.scatter_add_(0, col.view(-1, 1).expand_as(msg), msg) + bias

    def forward(self, x, edge_index):
        loop = torch.arange(x.size(0), dtype=torch.long)
        ei = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
        row, col = ei[0], ei[1]
        h = F.relu(self.conv(x, row, col, self.w1, self.b1))
        return F.log_softmax(self.conv(h, row, col, self.w2, self.b2), dim=1)


class GAT(nn.Module):
    def __init__(self, f=16, hid=8, heads=4, classes=4):
        super().__init__()
        self.h, self.c = heads, hid
        self.lin = nn.Linear(f, heads * hid, bias=False)
        self.att_src = nn.Parameter(0.3 * torch.randn(1, heads, hid))
        self.att_dst = nn.Parameter(0.3 * torch.randn(1, heads, hid))
        self.out = nn.Linear(heads * hid, classes)

    def forward(self, x, edge_index):
        n = x.size(0)
        src, dst = edge_index[0], edge_index[1]
        xh = self.lin(x).view(-1, self.h, self.c)
        a_s, a_d = (xh * self.att_src).sum(-1), (xh * self.att_dst).sum(-1)
        e = F.leaky_relu(a_s[src] + a_d[dst], 0.2).exp()
        den = torch.zeros(n, self.h).scatter_add(0, dst.view(-1, 1).expand_as(e), e)
        alpha = e / (den[dst] + 1e-16)
        msg = (xh[src] * alpha.unsqueeze(-1)).view(-1, self.h * self.c)
        agg = torch.zeros(n, self.h * self.c).scatter_add(0, dst.unsqueeze(-1).expand_as(msg), msg)
        return self.out(F.elu(agg))


# ---------------- VAE with reparameterization and KL ----------------


class VAE(nn.Module):
    def __init__(self, c=16, z=8, img=16):
        super().__init__()
        self.s = img // 4
        self.enc = nn.Sequential(nn.Conv2d(1, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, 2 * c, 4, 2, 1), nn.ReLU())
        self.fc_mu = nn.Linear(2 * c * self.s * self.s, z)
        self.fc_logvar = nn.Linear(2 * c * self.s * self.s, z)
        self.fc_dec = nn.Linear(z, 2 * c * self.s * self.s)
        self.dec = nn.Sequential(nn.ConvTranspose2d(2 * c, c, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(c, 1, 4, 2, 1))
        self.c = c

    def forward(self, x, eps):
        h = self.enc(x).flatten(1)
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        std = torch.exp(0.5 * logvar)
        z = mu + eps * std
        y = self.fc_dec(z).view(-1, 2 * self.c, self.s, self.s)
        recon = torch.sigmoid(self.dec(y))
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1)
        mse = ((recon - x) ** 2).flatten(1).sum(1)
        return recon, mu, logvar, kld + mse


# ---------------- diffusion U-Net (time embedding, GroupNorm, attention) ----------------


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, ci, co, temb):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, ci), nn.Conv2d(ci, co, 3, 1, 1)
        self.t = nn.Linear(temb, co)
        self.n2, self.c2 = nn.GroupNorm(8, co), nn.Conv2d(co, co, 3, 1, 1)
        self.skip = nn.Conv2d(ci, co, 1) if ci != co else nn.Identity()

    def forward(self, x, emb):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(F.silu(emb))[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(8, c)
        self.qkv, self.proj = nn.Conv1d(c, 3 * c, 1), nn.Conv1d(c, c, 1)

    def forward(self, x):
        b, c, *sp = x.shape
        qkv = self.qkv(self.norm(x).reshape(b, c, -1))
        q, k, v = qkv.chunk(3, dim=1)
        scale = 1 / math.sqrt(math.sqrt(c))
        w = torch.einsum("bct,bcs->bts", q * scale, k * scale).softmax(dim=-1)
        a = torch.einsum("bts,bcs->bct", w, v)
        return x + self.proj(a).reshape(b, c, *sp)


class DiffusionUNet(nn.Module):
    def __init__(self, c=16, temb=32):
        super().__init__()
        self.c = c
        self.time = nn.Sequential(nn.Linear(c, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(3, c, 3, 1, 1)
        self.d1 = ResBlock(c, c, temb)
        self.down = nn.Conv2d(c, c, 3, 2, 1)
        self.d2 = ResBlock(c, 2 * c, temb)
        self.mid = AttnBlock(2 * c)
        self.m2 = ResBlock(2 * c, 2 * c, temb)
        self.up = nn.Conv2d(2 * c, 2 * c, 3, 1, 1)
        self.u1 = ResBlock(3 * c, c, temb)
        self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, 1, 1))

    def forward(self, x, t):
        emb = self.time(timestep_embedding(t, self.c))
        h1 = self.d1(self.inp(x), emb)
        h = self.m2(self.mid(self.d2(self.down(h1), emb)), emb)
        h = self.up(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.out(self.u1(torch.cat([h, h1], dim=1), emb))


# ---------------- a scripted module: data-dependent If and a Loop ----------------


class Scripted(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x, gate):
        y = self.lin(x)
        if bool(y.mean() > 0):
            y = y * 2.0
        else:
            y = y - 1.0
        if bool(gate.sum() > 0):
            h = torch.tanh(self.lin(y[:, -1]))
        else:
            h = y[:, 0] * 0.5
        acc = torch.zeros_like(y[:, 0])
        for i in range(x.size(1)):
            acc = acc * 0.5 + y[:, i]
        return acc, h


def scripted():
    return torch.jit.script(Scripted())


# ---------------- HF sequence-classification pooling, sentence-transformers mean ----------------


class SeqClsPool(nn.Module):
    def __init__(self, vocab=100, d=32, labels=3, pad_token_id=0):
        super().__init__()
        self.pad = pad_token_id
        self.emb = nn.Embedding(vocab, d)
        self.mix = nn.Linear(d, d)
        self.score = nn.Linear(d, labels, bias=False)

    def forward(self, input_ids, attention_mask):
        x = torch.tanh(self.mix(self.emb(input_ids)))
        logits = self.score(x)
        b = input_ids.shape[0]
        seq_len = torch.eq(input_ids, self.pad).int().argmax(-1) - 1
        seq_len = seq_len % input_ids.shape[-1]
        pooled = logits[torch.arange(b), seq_len]
        m = attention_mask.unsqueeze(-1).expand(x.size()).float()
        mean = torch.sum(x * m, 1) / torch.clamp(m.sum(1), min=1e-9)
        return pooled, F.normalize(mean, p=2, dim=1)


# ---------------- ResNeSt split attention ----------------


class SplitAttn(nn.Module):
    def __init__(self, c, radix=2, groups=2, red=4):
        super().__init__()
        self.radix, self.c = radix, c
        self.conv = nn.Conv2d(c, c * radix, 3, 1, 1, groups=groups * radix, bias=False)
        self.bn0 = nn.BatchNorm2d(c * radix)
        self.fc1 = nn.Conv2d(c, c // red * 2, 1, groups=groups)
        self.bn1 = nn.BatchNorm2d(c // red * 2)
        self.fc2 = nn.Conv2d(c // red * 2, c * radix, 1, groups=groups)
        self.card = groups

    def forward(self, x):
        x = F.relu(self.bn0(self.conv(x)))
        B, RC, H, W = x.shape
        xs = x.reshape((B, self.radix, RC // self.radix, H, W))
        gap = xs.sum(dim=1).mean((2, 3), keepdim=True)
        att = self.fc2(F.relu(self.bn1(self.fc1(gap))))
        att = att.view(B, self.card, self.radix, -1).transpose(1, 2)
        att = F.softmax(att, dim=1).reshape(B, -1).view(B, -1, 1, 1)
        return (xs * att.reshape((B, self.radix, RC // self.radix, 1, 1))).sum(dim=1)


class ResNeSt(nn.Module):
    def __init__(self, c=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.sa1, self.sa2 = SplitAttn(c), SplitAttn(c)
        self.pool = nn.AvgPool2d(3, 2, 1)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.sa1(x))
        x = self.pool(x)
        x = F.relu(x + self.sa2(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---------------- Conv-TasNet (gLN, PReLU, dilated depthwise, ConvTranspose1d) ----------------


class TasBlock(nn.Module):
    def __init__(self, b, h, dil):
        super().__init__()
        self.c1 = nn.Conv1d(b, h, 1)
        self.p1, self.n1 = nn.PReLU(), nn.GroupNorm(1, h, eps=1e-8)
        self.dw = nn.Conv1d(h, h, 3, padding=dil, dilation=dil, groups=h)
        self.p2, self.n2 = nn.PReLU(), nn.GroupNorm(1, h, eps=1e-8)
        self.res, self.skip = nn.Conv1d(h, b, 1), nn.Conv1d(h, b, 1)

    def forward(self, x):
        y = self.n2(self.p2(self.dw(self.n1(self.p1(self.c1(x))))))
        return x + self.res(y), self.skip(y)


class ConvTasNet(nn.Module):
    def __init__(self, n=32, L=16, b=16, h=32, blocks=3, spk=2):
        super().__init__()
        self.spk, self.n = spk, n
        self.encoder = nn.Conv1d(1, n, L, stride=L // 2, bias=False)
        self.ln = nn.GroupNorm(1, n, eps=1e-8)
        self.bottleneck = nn.Conv1d(n, b, 1)
        self.blocks = nn.ModuleList(TasBlock(b, h, 2 ** i) for i in range(blocks))
        self.prelu = nn.PReLU()
        self.mask = nn.Conv1d(b, spk * n, 1)
        self.decoder = nn.ConvTranspose1d(n, 1, L, stride=L // 2, bias=False)

    def forward(self, wav):
        w = F.relu(self.encoder(wav.unsqueeze(1)))
        x = self.bottleneck(self.ln(w))
        skip = 0
        for B in self.blocks:
            x, s = B(x)
            skip = skip + s
        m = torch.sigmoid(self.mask(self.prelu(skip))).view(w.shape[0], self.spk, self.n, -1)
        est = (w.unsqueeze(1) * m).view(w.shape[0] * self.spk, self.n, -1)
        return self.decoder(est).view(w.shape[0], self.spk, -1)


# ---------------- fast neural style, ESPCN ----------------


class ConvLayer(nn.Module):
    def __init__(self, i, o, k, s, upsample=None):
        super().__init__()
        self.up = upsample
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(i, o, k, s)

    def forward(self, x):
        if self.up:
            x = F.interpolate(x, mode="nearest", scale_factor=self.up)
        return self.conv(self.pad(x))


class StyleNet(nn.Module):
    def __init__(self, c=8, res=2):
        super().__init__()
        self.c1, self.i1 = ConvLayer(3, c, 9, 1), nn.InstanceNorm2d(c, affine=True)
        self.c2, self.i2 = ConvLayer(c, 2 * c, 3, 2), nn.InstanceNorm2d(2 * c, affine=True)
        self.res = nn.ModuleList(nn.ModuleList([ConvLayer(2 * c, 2 * c, 3, 1), nn.InstanceNorm2d(2 * c, affine=True),
                                                ConvLayer(2 * c, 2 * c, 3, 1), nn.InstanceNorm2d(2 * c, affine=True)])
                                 for _ in range(res))
        self.u1, self.i3 = ConvLayer(2 * c, c, 3, 1, upsample=2), nn.InstanceNorm2d(c, affine=True)
        self.out = ConvLayer(c, 3, 9, 1)

    def forward(self, x):
        y = F.relu(self.i1(self.c1(x)))
        y = F.relu(self.i2(self.c2(y)))
        for a, na, b, nb in self.res:
            y = y + nb(b(F.relu(na(a(y)))))
        y = F.relu(self.i3(self.u1(y)))
        return torch.tanh(self.out(y))


class ESPCN(nn.Module):
    def __init__(self, scale=3, c=32):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(1, 2 * c, 5, padding=2), nn.Tanh(),
                               nn.Conv2d(2 * c, c, 3, padding=1), nn.Tanh())
        self.last = nn.Conv2d(c, scale * scale, 3, padding=1)
        self.ps = nn.PixelShuffle(scale)

    def forward(self, x):
        return torch.clamp(self.ps(self.last(self.f(x))), 0.0, 1.0)


# ---------------- YOLOv8 head: DFL, anchors by meshgrid, dist2bbox ----------------


class DFL(nn.Module):
    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class YoloV8Head(nn.Module):
    def __init__(self, nc=4, ch=(16, 32), reg_max=16):
        super().__init__()
        self.nc, self.reg_max, self.no = nc, reg_max, nc + 4 * reg_max
        self.stride = torch.tensor([8.0, 16.0])
        self.backbone = nn.ModuleList([nn.Sequential(nn.Conv2d(3, ch[0], 3, 8, 1), nn.SiLU()),
                                       nn.Sequential(nn.Conv2d(ch[0], ch[1], 3, 2, 1), nn.SiLU())])
        self.cv2 = nn.ModuleList(nn.Sequential(nn.Conv2d(c, 16, 3, 1, 1), nn.SiLU(), nn.Conv2d(16, 4 * reg_max, 1)) for c in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(nn.Conv2d(c, 16, 3, 1, 1), nn.SiLU(), nn.Conv2d(16, nc, 1)) for c in ch)
        self.dfl = DFL(reg_max)

    def forward(self, img):
        feats, x = [], img
        for m in self.backbone:
            x = m(x)
            feats.append(x)
        xs = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1) for i, f in enumerate(feats)]
        anchors, strides = [], []
        for f, s in zip(xs, [8.0, 16.0]):
            _, _, h, w = f.shape
            sx = torch.arange(end=w, dtype=torch.float32) + 0.5
            sy = torch.arange(end=h, dtype=torch.float32) + 0.5
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
            anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), s, dtype=torch.float32))
        anchors, strides = torch.cat(anchors).transpose(0, 1), torch.cat(strides).transpose(0, 1)
        b = img.shape[0]
        x_cat = torch.cat([xi.view(b, self.no, -1) for xi in xs], 2)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)
        x1y1, x2y2 = anchors.unsqueeze(0) - lt, anchors.unsqueeze(0) + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


# ---------------- Perceiver: latents expanded over the batch, cross + self attention ----------------


class Perceiver(nn.Module):
    def __init__(self, d=32, latents=8, h=4, inp=24, classes=5):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, d))
        self.inp = nn.Linear(inp, d)
        self.cross = nn.MultiheadAttention(d, h, batch_first=True)
        self.self_attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, classes)

    def forward(self, x, pad):
        lat = self.latents.expand(x.shape[0], -1, -1)
        kv = self.n1(self.inp(x))
        lat = lat + self.cross(self.n2(lat), kv, kv, key_padding_mask=pad, need_weights=False)[0]
        y = self.n3(lat)
        lat = lat + self.self_attn(y, y, y, need_weights=False)[0]
        lat = lat + self.mlp(lat)
        return self.head(lat.mean(dim=1))


# ---------------- Conformer relative positions, Swin V2, SegFormer, wav2vec2, Deformable DETR ----------------
class RelPosMHA(nn.Module):
    """ESPnet / Conformer RelPositionMultiHeadedAttention with rel_shift (pad + view)"""
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.dk = h, d // h
        self.linear_q, self.linear_k, self.linear_v, self.linear_out = (nn.Linear(d, d) for _ in range(4))
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.pos_bias_u = nn.Parameter(torch.randn(h, self.dk) * 0.1)
        self.pos_bias_v = nn.Parameter(torch.randn(h, self.dk) * 0.1)
        self.d = d

    def rel_shift(self, x):
        zero_pad = torch.zeros((*x.size()[:3], 1), dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=-1)
        x_padded = x_padded.view(*x.size()[:2], x.size(3) + 1, x.size(2))
        return x_padded[:, :, 1:].view_as(x)[:, :, :, : x.size(-1) // 2 + 1]

    def pos_emb(self, t):
        pos = torch.arange(t - 1, -t, -1.0).unsqueeze(1)
        div = torch.exp(torch.arange(0, self.d, 2, dtype=torch.float32) * -(math.log(10000.0) / self.d))
        pe = torch.zeros(2 * t - 1, self.d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        return pe.unsqueeze(0)

    def forward(self, x, mask):
        b, t, _ = x.shape
        q = self.linear_q(x).view(b, -1, self.h, self.dk)
        k = self.linear_k(x).view(b, -1, self.h, self.dk).transpose(1, 2)
        v = self.linear_v(x).view(b, -1, self.h, self.dk).transpose(1, 2)
        p = self.linear_pos(self.pos_emb(t)).view(1, -1, self.h, self.dk).transpose(1, 2)
        q_u = (q + self.pos_bias_u).transpose(1, 2)
        q_v = (q + self.pos_bias_v).transpose(1, 2)
        ac = torch.matmul(q_u, k.transpose(-2, -1))
        bd = self.rel_shift(torch.matmul(q_v, p.transpose(-2, -1)))
        scores = (ac + bd) / math.sqrt(self.dk)
        m = mask.unsqueeze(1).unsqueeze(1).eq(0)
        attn = torch.softmax(scores.masked_fill(m, -10000.0), dim=-1).masked_fill(m, 0.0)
        o = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.dk)
        return self.linear_out(o)


class SwinV2Attn(nn.Module):
    """Swin V2 window attention: cosine similarity with a clamped learned logit scale, the
    continuous position bias MLP over log-spaced relative coordinates, 16 * sigmoid"""
    def __init__(self, d=32, h=4, ws=4):
        super().__init__()
        self.h, self.ws = h, ws
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((h, 1, 1))))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 64), nn.ReLU(inplace=True), nn.Linear(64, h, bias=False))
        rh = torch.arange(-(ws - 1), ws, dtype=torch.float32)
        table = torch.stack(torch.meshgrid([rh, rh], indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0)
        table = table / (ws - 1) * 8
        table = torch.sign(table) * torch.log2(torch.abs(table) + 1.0) / math.log2(8)
        self.register_buffer("relative_coords_table", table)
        c = torch.stack(torch.meshgrid([torch.arange(ws), torch.arange(ws)], indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("relative_position_index", rel.sum(-1))
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.q_bias, self.v_bias = nn.Parameter(0.1 * torch.randn(d)), nn.Parameter(0.1 * torch.randn(d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B_, N, C = x.shape
        qkv_bias = torch.cat((self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
        qkv = F.linear(input=x, weight=self.qkv.weight, bias=qkv_bias)
        qkv = qkv.reshape(B_, N, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))
        logit_scale = torch.clamp(self.logit_scale, max=math.log(1.0 / 0.01)).exp()
        attn = attn * logit_scale
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.h)
        bias = table[self.relative_position_index.view(-1)].view(N, N, -1).permute(2, 0, 1).contiguous()
        attn = (attn + 16 * torch.sigmoid(bias).unsqueeze(0)).softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C))


class SegFormer(nn.Module):
    """SegFormer's efficient self-attention (keys and values from a strided conv + LayerNorm)
    and Mix-FFN (a depthwise 3x3 conv between the linears), then the all-MLP decode head's
    bilinear upsampling"""
    def __init__(self, c=32, h=2, sr=2, classes=5):
        super().__init__()
        self.h, self.sr = h, sr
        self.patch = nn.Conv2d(3, c, 7, 4, 3)
        self.ln0 = nn.LayerNorm(c)
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.q, self.kv, self.proj = nn.Linear(c, c), nn.Linear(c, 2 * c), nn.Linear(c, c)
        self.sr_conv, self.sr_norm = nn.Conv2d(c, c, sr, sr), nn.LayerNorm(c)
        self.fc1, self.dw, self.fc2 = nn.Linear(c, 4 * c), nn.Conv2d(4 * c, 4 * c, 3, 1, 1, groups=4 * c), nn.Linear(4 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, img):
        x = self.patch(img)
        B, C, H, W = x.shape
        x = self.ln0(x.flatten(2).transpose(1, 2))
        y = self.ln1(x)
        q = self.q(y).reshape(B, -1, self.h, C // self.h).permute(0, 2, 1, 3)
        y_ = y.permute(0, 2, 1).reshape(B, C, H, W)
        y_ = self.sr_norm(self.sr_conv(y_).reshape(B, C, -1).permute(0, 2, 1))
        kv = self.kv(y_).reshape(B, -1, 2, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        a = (q @ k.transpose(-2, -1) * (C // self.h) ** -0.5).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(B, -1, C))
        y = self.fc1(self.ln2(x))
        n = y.shape[-1]
        y = self.dw(y.transpose(1, 2).view(B, n, H, W)).flatten(2).transpose(1, 2)
        x = x + self.fc2(F.gelu(y))
        x = x.permute(0, 2, 1).reshape(B, C, H, W)
        return F.interpolate(self.head(x), size=img.shape[2:], mode="bilinear", align_corners=False)


class W2V2PosConv(nn.Module):
    """wav2vec2's positional convolution: weight_norm over dim 2, a grouped Conv1d of
    even kernel, SamePad dropping the last step, GELU, added to the features"""
    def __init__(self, d=32, k=16, groups=4):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(d, d, k, padding=k // 2, groups=groups), name="weight", dim=2)
        self.remove = 1 if k % 2 == 0 else 0
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2))
        if self.remove > 0:
            h = h[:, :, : -self.remove]
        return self.ln(x + F.gelu(h).transpose(1, 2))


class DeformAttn(nn.Module):
    """Deformable DETR's ms_deform_attn_core_pytorch: sampling offsets and weights from the
    queries, values split by level, grid_sample (bilinear, zeros) per level, weighted sum"""
    def __init__(self, d=32, h=4, points=2, hw=((8, 8), (4, 4))):
        super().__init__()
        levels = len(hw)
        self.h, self.L, self.P, self.d, self.hw = h, levels, points, d, hw
        self.sampling_offsets = nn.Linear(d, h * levels * points * 2)
        self.attention_weights = nn.Linear(d, h * levels * points)
        self.value_proj, self.output_proj = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, query, ref, value, shapes):
        N, Lq, _ = query.shape
        Lin = value.shape[1]
        v = self.value_proj(value).view(N, Lin, self.h, self.d // self.h)
        off = self.sampling_offsets(query).view(N, Lq, self.h, self.L, self.P, 2)
        aw = F.softmax(self.attention_weights(query).view(N, Lq, self.h, self.L * self.P), -1)
        aw = aw.view(N, Lq, self.h, self.L, self.P)
        normalizer = torch.stack([shapes[..., 1], shapes[..., 0]], -1)
        loc = ref[:, :, None, :, None, :] + off / normalizer[None, None, None, :, None, :]
        dh = self.d // self.h
        grids = 2 * loc - 1
        outs, start = [], 0
        for lid, (H, W) in enumerate(self.hw):
            vl = v[:, start:start + H * W].flatten(2).transpose(1, 2).reshape(N * self.h, dh, H, W)
            start += H * W
            g = grids[:, :, :, lid].transpose(1, 2).flatten(0, 1)
            outs.append(F.grid_sample(vl, g, mode="bilinear", padding_mode="zeros", align_corners=False))
        aw = aw.transpose(1, 2).reshape(N * self.h, 1, Lq, self.L * self.P)
        o = (torch.stack(outs, dim=-2).flatten(-2) * aw).sum(-1).view(N, self.h * dh, Lq)
        return self.output_proj(o.transpose(1, 2).contiguous())
