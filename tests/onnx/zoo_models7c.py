"""zoo_models7c.py — the seventh round's models built around less common operators
(tests/onnx/zoo_models7.py has the cases and the docstring): a BiLSTM-CRF tagger (the
forward algorithm by logsumexp, Viterbi by max / argmax and a gather backtrack),
logsumexp of large and of -inf-masked logits,
spherical point features (atan with the quadrant by where, acos, asin, sign, floor,
fmod), an activation zoo (SELU, ELU, CELU, PReLU, Mish, Softsign, Hardshrink,
Softshrink, LogSigmoid, RReLU, Hardtanh, Softplus with beta, Tanhshrink), hashed n-gram
embeddings (int64 remainder, EmbeddingBag mean over a 2-d input), EmbeddingBag sum,
mean and per-sample weighted sum over offsets, PointPillars' scatter to a BEV canvas
(index_put) with a scatter_add count per cell.
RepeatRegulator (FastSpeech's length regulator by repeat_interleave of run-time
durations) is not a case: its output length is data (the durations' sum), exported as
SplitToSequence by run-time lengths and a Loop, which the importer refuses with a
located error (sequences are resolved at import: onnx_seq.c).
"""
import torch
from torch import nn
from torch.nn import functional as F


class BiLSTMCRF(nn.Module):
    """the PyTorch tutorial's BiLSTM-CRF, batched: emissions from a BiLSTM, the CRF's
    log partition by logsumexp over the previous tag plus transitions, the gold path's
    score, the negative log-likelihood; Viterbi by max / argmax, the best path traced
    back by gather (unrolled over a fixed length)"""
    def __init__(self, vocab=50, d=16, hid=16, tags=5):
        super().__init__()
        self.emb, self.lstm = nn.Embedding(vocab, d), nn.LSTM(d, hid, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hid, tags)
        self.trans = nn.Parameter(torch.randn(tags, tags))
        self.start, self.end = nn.Parameter(torch.randn(tags)), nn.Parameter(torch.randn(tags))

    def forward(self, ids, gold):
        em = self.fc(self.lstm(self.emb(ids))[0])  # (b, s, t)
        s = em.shape[1]
        alpha = self.start + em[:, 0]
        for i in range(1, s):
            alpha = torch.logsumexp(alpha[:, :, None] + self.trans[None], 1) + em[:, i]
        logz = torch.logsumexp(alpha + self.end, 1)
        score = self.start[gold[:, 0]] + em.gather(2, gold[..., None]).squeeze(-1).sum(1)
        score = score + self.trans[gold[:, :-1], gold[:, 1:]].sum(1) + self.end[gold[:, -1]]
        v, back = self.start + em[:, 0], []
        for i in range(1, s):
            best, arg = (v[:, :, None] + self.trans[None]).max(1)
            back.append(arg)
            v = best + em[:, i]
        v = v + self.end
        last = v.argmax(-1, keepdim=True)
        path = [last]
        for arg in reversed(back):
            last = arg.gather(1, last)
            path.append(last)
        return logz - score, torch.cat(path[::-1], 1), v.max(-1)[0]


class LogSumExpForms(nn.Module):
    """torch.logsumexp as CRFs, mixture densities and log-space attention use it: logits
    of magnitude 100-300 (exp overflows f32 past 88.7), over the last axis, over two
    axes with keepdim, and over rows masked to -inf (the result -inf, not NaN)"""
    def __init__(self, d=16):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask):
        z = self.proj(x) * 60.0
        masked = z.masked_fill(mask[..., None], -float("inf"))
        return torch.logsumexp(z, -1), torch.logsumexp(z, (1, 2), keepdim=True), torch.logsumexp(masked, -1)


class SphericalPoints(nn.Module):
    """point features in spherical coordinates (range-image / polar nets): radius, azimuth
    by atan and the quadrant, inclination by acos and asin, the azimuth bin by floor, a wrapped angle by
    fmod, sign features, then a shared MLP and max pooling"""
    def __init__(self, c=32, bins=16, classes=10):
        super().__init__()
        self.bins = bins
        self.mlp = nn.Sequential(nn.Linear(10, c), nn.ReLU(), nn.Linear(c, c))
        self.head = nn.Linear(c, classes)

    def forward(self, xyz):
        x, y, z = xyz.unbind(-1)
        r = torch.sqrt(x * x + y * y + z * z) + 1e-6
        # atan2 as export-minded code writes it (torch 1.13 does not export aten::atan2)
        base = torch.atan(y / torch.where(x == 0, torch.full_like(x, 1e-12), x))
        az = torch.where(x >= 0, base, torch.where(y >= 0, base + torch.pi, base - torch.pi))
        inc = torch.acos(torch.clamp(z / r, -1 + 1e-6, 1 - 1e-6))
        el = torch.asin(torch.clamp(z / r, -1 + 1e-6, 1 - 1e-6))
        bin_ = torch.floor((az + torch.pi) / (2 * torch.pi) * self.bins)
        wrap = torch.fmod(az * 3.0, 1.0)
        f = torch.stack([r, az, inc, el, bin_ / self.bins, wrap, torch.sign(x), torch.sign(y), torch.atan(z),
                         torch.remainder(bin_, 4.0)], -1)
        return self.head(self.mlp(f).max(1)[0]), bin_.long()


class ActZoo(nn.Module):
    """a self-normalizing MLP and a small conv net through every torch.nn activation the
    exporter writes as its own ONNX operator or a short formula"""
    def __init__(self, d=32, c=8):
        super().__init__()
        self.l = nn.ModuleList(nn.Linear(d, d) for _ in range(7))
        self.prelu = nn.PReLU(d)
        self.conv1, self.conv2 = nn.Conv2d(3, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.cprelu = nn.PReLU(c, init=0.1)

    def forward(self, x, img):
        acts = [F.selu, F.elu, lambda t: F.celu(t, 0.7), self.prelu, F.mish, F.softsign,
                lambda t: F.softplus(t, beta=2.0, threshold=5.0)]
        shr = [F.hardshrink(x, 0.3), F.softshrink(x, 0.2), F.logsigmoid(x), F.rrelu(x, 0.1, 0.3, training=False),
               F.hardtanh(x, -0.5, 0.7), F.tanhshrink(x), F.elu(x, alpha=0.5), F.leaky_relu(x, 0.2)]
        for lin, act in zip(self.l, acts):
            x = act(lin(x))
        y = self.cprelu(self.conv1(img))
        y = F.relu6(self.conv2(F.hardswish(y))) + F.silu(y)
        return x, torch.stack(shr, 1), y


class HashEmbed(nn.Module):
    """fastText-style hashed character n-grams: bigram hashes by int64 multiply, add and
    remainder into buckets, the word vector an EmbeddingBag mean over the word's ids and
    n-gram buckets, a bag over a sentence, a classifier"""
    def __init__(self, vocab=100, buckets=997, d=16, classes=4):
        super().__init__()
        self.vocab, self.buckets = vocab, buckets
        self.bag = nn.EmbeddingBag(vocab + buckets, d, mode="mean")
        self.fc = nn.Linear(d, classes)

    def forward(self, chars):
        grams = (chars[:, :-1] * 1000003 + chars[:, 1:] * 31 + 7) % self.buckets + self.vocab
        ids = torch.cat([chars % self.vocab, grams], 1)
        return self.fc(self.bag(ids)), grams


class BagOffsets(nn.Module):
    """DLRM-style sparse features: nn.EmbeddingBag(mode "sum"), (mode "mean") and (mode
    "sum" with per_sample_weights) over one flat index list cut by offsets into bags of
    different sizes (an empty one among them), and their dot interaction"""
    def __init__(self, n=1000, d=16):
        super().__init__()
        self.bsum, self.bmean = nn.EmbeddingBag(n, d, mode="sum"), nn.EmbeddingBag(n, d, mode="mean")
        self.bw = nn.EmbeddingBag(n, d, mode="sum")

    def forward(self, ids, offsets, weights):
        a, b = self.bsum(ids, offsets), self.bmean(ids, offsets)
        return a, b, self.bw(ids, offsets, per_sample_weights=weights), (a * b).sum(-1)


def bag_offsets(m, n):
    """m sorted offsets into n indices from 0, bag m // 2 empty"""
    off = torch.sort(torch.randint(0, n, (m,)))[0]
    off[0] = 0
    off[m // 2] = off[m // 2 - 1]
    return off


class PillarScatter(nn.Module):
    """PointPillars' PillarFeatureNet and PointPillarsScatter: per-point features with the
    pillar's mean by scatter_add over pillar ids divided by the counts, a linear + BN +
    ReLU, max over each pillar's points, the pillars written into a (c, ny * nx) canvas
    by index_put at their flat coordinates, a 2-d conv"""
    def __init__(self, c=16, nx=16, ny=12):
        super().__init__()
        self.nx, self.ny, self.c = nx, ny, c
        self.lin, self.bn = nn.Linear(7, c, bias=False), nn.BatchNorm1d(c)
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, points, mask, coords):
        p, m, _ = points.shape  # (pillars, points per pillar, 4), mask (p, m), coords (p, 2)
        cnt = mask.sum(1, keepdim=True).clamp(min=1)
        mean = (points[..., :3] * mask[..., None]).sum(1, keepdim=True) / cnt[..., None]
        f = torch.cat([points, points[..., :3] - mean], -1) * mask[..., None]
        f = F.relu(self.bn(self.lin(f).permute(0, 2, 1)).permute(0, 2, 1))
        pillar = f.max(1)[0]  # (p, c)
        idx = coords[:, 0] * self.nx + coords[:, 1]
        canvas = torch.zeros(self.c, self.ny * self.nx)
        canvas[:, idx] = pillar.t()
        grid_sum = torch.zeros(self.ny * self.nx).scatter_add(0, idx, cnt[:, 0])
        return self.conv(canvas.view(1, self.c, self.ny, self.nx)), grid_sum


class RepeatRegulator(nn.Module):
    """FastSpeech's LengthRegulator at batch 1 as inference code writes it: predicted
    durations rounded to int64, torch.repeat_interleave of the phone states by them (a
    run-time length), then a conv over the frames"""
    def __init__(self, d=16):
        super().__init__()
        self.dur = nn.Linear(d, 1)
        self.conv = nn.Conv1d(d, d, 3, padding=1)

    def forward(self, x):
        dur = torch.clamp(torch.round(torch.exp(self.dur(x[0]).squeeze(-1)) * 2.0), min=1).long()
        frames = torch.repeat_interleave(x[0], dur, dim=0)
        return self.conv(frames.t()[None]), dur
