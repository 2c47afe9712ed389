"""zoo_models4b.py — the second half of tests/onnx/zoo_models4.py's classes (split to keep
files under 1000 lines): detection post-processing (RetinaNet's box decoding, TopK and
NonMaxSuppression; FCOS's locations, centerness and TopK), Mask R-CNN's box and mask heads
over RoiAlign, TabNet (GLU blocks, sparsemax by sort and cumsum), DeepFM, Wide & Deep
(masked mean of padded multi-valued ids), RWKV-4 (ZeroPad2d token shift, the WKV recurrence
in its parallel form), Mamba (causal depthwise conv, softplus delta, the selective scan
unrolled by the tracer), LeViT (attention
biases gathered by an index buffer, Linear + BatchNorm1d, Hardswish). Their cases are in
zoo_models4.cases. Nothing here was written for relaxd: each class follows its source's
forward.

torchvision is not installed here: its ops (roi_align, nms) are autograd Functions whose
forward is the reference (torchvision's CPU kernels, written out in torch) and whose
symbolic emits the ONNX op as torchvision's own symbolics do (RoiAlign-10 with
output_half_pixel for aligned=False, RoiAlign-16 with half_pixel for aligned=True;
NonMaxSuppression with its per-class order).
"""
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.onnx._globals import GLOBALS


# ---------------- torchvision's ops as autograd Functions ----------------


def roi_align_ref(x, rois, bidx, oh, ow, scale, sr, aligned):
    """torchvision.ops.roi_align (CPU kernel) with sampling_ratio sr > 0, mode avg."""
    _, c, h, w = x.shape
    r = rois.shape[0]
    off = 0.5 if aligned else 0.0
    x1, y1 = rois[:, 0] * scale - off, rois[:, 1] * scale - off
    rw, rh = rois[:, 2] * scale - off - x1, rois[:, 3] * scale - off - y1
    if not aligned:
        rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
    bw, bh = rw / ow, rh / oh
    iy, ix = torch.arange(oh * sr).float(), torch.arange(ow * sr).float()
    ys = y1[:, None] + (iy // sr)[None] * bh[:, None] + ((iy % sr)[None] + 0.5) * bh[:, None] / sr
    xs = x1[:, None] + (ix // sr)[None] * bw[:, None] + ((ix % sr)[None] + 0.5) * bw[:, None] / sr
    Y, X = ys[:, :, None].expand(r, oh * sr, ow * sr), xs[:, None, :].expand(r, oh * sr, ow * sr)
    valid = ((Y >= -1) & (Y <= h) & (X >= -1) & (X <= w)).float()
    Y, X = Y.clamp(min=0), X.clamp(min=0)

    def corners(v, n):
        lo = v.floor()
        top = lo >= n - 1
        lo = torch.where(top, torch.full_like(lo, n - 1), lo)
        v = torch.where(top, lo, v)
        hi = torch.where(top, lo, lo + 1)
        return lo.long(), hi.long(), v - lo
    yl, yh, ly = corners(Y, h)
    xl, xh, lx = corners(X, w)
    feat = x[bidx].reshape(r, c, h * w)

    def at(yy, xx):
        idx = (yy * w + xx).reshape(r, 1, -1).expand(r, c, yy[0].numel())
        return feat.gather(2, idx).reshape(r, c, oh * sr, ow * sr)
    v = ((1 - ly) * (1 - lx))[:, None] * at(yl, xl) + ((1 - ly) * lx)[:, None] * at(yl, xh) + \
        (ly * (1 - lx))[:, None] * at(yh, xl) + (ly * lx)[:, None] * at(yh, xh)
    v = v * valid[:, None]
    return v.reshape(r, c, oh, sr, ow, sr).mean((3, 5))


class RoIAlign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rois, bidx, oh, ow, scale, sr, aligned):
        return roi_align_ref(x, rois, bidx, oh, ow, scale, sr, aligned)

    @staticmethod
    def symbolic(g, x, rois, bidx, oh, ow, scale, sr, aligned):
        kw = dict(output_height_i=oh, output_width_i=ow, spatial_scale_f=scale,
                  sampling_ratio_i=sr, mode_s="avg")
        if GLOBALS.export_onnx_opset_version >= 16:  # torchvision's symbolic_opset16
            kw["coordinate_transformation_mode_s"] = "half_pixel" if aligned else "output_half_pixel"
        elif aligned:
            raise RuntimeError("aligned RoiAlign needs opset 16")
        return g.op("RoiAlign", x, rois, bidx, **kw)


def nms_ref(boxes, scores, iou, score_thr, max_per_class):
    """NonMaxSuppression (center_point_box 0) for boxes (B, N, 4), scores (B, C, N):
    (n, 3) int64 rows (batch, class, box), per batch and class by descending score."""
    out = []
    boxes, scores = boxes.detach().numpy().astype(np.float64), scores.detach().numpy()
    for b in range(boxes.shape[0]):
        bx = boxes[b]
        y1, x1 = np.minimum(bx[:, 0], bx[:, 2]), np.minimum(bx[:, 1], bx[:, 3])
        y2, x2 = np.maximum(bx[:, 0], bx[:, 2]), np.maximum(bx[:, 1], bx[:, 3])
        area = (y2 - y1) * (x2 - x1)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            keep = []
            for i in np.argsort(-s, kind="stable"):
                if s[i] <= score_thr or len(keep) >= max_per_class:
                    break
                k = np.array(keep, dtype=np.int64)
                inter = np.clip(np.minimum(y2[i], y2[k]) - np.maximum(y1[i], y1[k]), 0, None) * \
                    np.clip(np.minimum(x2[i], x2[k]) - np.maximum(x1[i], x1[k]), 0, None)
                union = area[i] + area[k] - inter
                if not np.any((union > 0) & (inter > iou * union)):
                    keep.append(int(i))
            out += [[b, c, i] for i in keep]
    return torch.tensor(out, dtype=torch.long).reshape(-1, 3)


class NMS(torch.autograd.Function):
    @staticmethod
    def forward(ctx, boxes, scores, iou, score_thr, max_per_class):
        return nms_ref(boxes, scores, iou, score_thr, max_per_class)

    @staticmethod
    def symbolic(g, boxes, scores, iou, score_thr, max_per_class):
        def c(v, dt):
            return g.op("Constant", value_t=torch.tensor([v], dtype=dt))
        return g.op("NonMaxSuppression", boxes, scores, c(max_per_class, torch.long),
                    c(iou, torch.float), c(score_thr, torch.float))


# ---------------- RetinaNet / FCOS post-processing ----------------


class RetinaPost(nn.Module):
    """torchvision RetinaNet.postprocess_detections for one image: sigmoid scores over
    (anchors, classes), TopK of the flattened scores, BoxCoder.decode_single (weights
    (1, 1, 1, 1), dw / dh clamped at log(1000 / 16)), clip to the image, batched NMS by
    class offsets; here with a small conv head producing the logits and deltas."""
    def __init__(self, c=16, anchors=3, classes=4, topk=40):
        super().__init__()
        self.a, self.k, self.topk = anchors, classes, topk
        self.cls = nn.Conv2d(c, anchors * classes, 3, padding=1)
        self.reg = nn.Conv2d(c, anchors * 4, 3, padding=1)
        self.clip = math.log(1000.0 / 16)

    def forward(self, feat, anchors):
        n = feat.shape[0]
        cls = self.cls(feat).permute(0, 2, 3, 1).reshape(n, -1, self.k)
        reg = self.reg(feat).permute(0, 2, 3, 1).reshape(n, -1, 4)
        scores = torch.sigmoid(cls[0]).flatten()
        top, idx = scores.topk(self.topk)
        aidx, labels = torch.div(idx, self.k, rounding_mode="floor"), idx % self.k
        a, d = anchors[aidx], reg[0][aidx]
        wa, ha = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
        cxa, cya = a[:, 0] + 0.5 * wa, a[:, 1] + 0.5 * ha
        dw, dh = d[:, 2].clamp(max=self.clip), d[:, 3].clamp(max=self.clip)
        cx, cy = d[:, 0] * wa + cxa, d[:, 1] * ha + cya
        w, h = torch.exp(dw) * wa, torch.exp(dh) * ha
        boxes = torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=1)
        size = torch._shape_as_tensor(feat)[2:].flip(0).to(boxes.dtype) * 8  # the image's (w, h)
        boxes = torch.min(boxes.clamp(min=0), size.repeat(2))
        off = boxes + labels[:, None].float() * (boxes.max() + 1)
        keep = NMS.apply(off[None, :, [1, 0, 3, 2]], top[None, None], 0.5, 0.05, 100)[:, 2]
        return boxes[keep], top[keep], labels[keep]


class FCOSPost(nn.Module):
    """FCOS's compute_locations (arange * stride + stride // 2 per level), centerness,
    sqrt(cls * ctr) scores, ltrb distances by exp(reg) * stride, TopK over the levels."""
    def __init__(self, c=16, classes=5, strides=(8, 16), k=24):
        super().__init__()
        self.strides, self.k = strides, k
        self.cls = nn.Conv2d(c, classes, 3, padding=1)
        self.ctr = nn.Conv2d(c, 1, 3, padding=1)
        self.reg = nn.Conv2d(c, 4, 3, padding=1)
        self.down = nn.Conv2d(c, c, 3, 2, 1)

    def level(self, f, stride):
        b, _, h, w = f.shape
        sy = torch.arange(0, h * stride, step=stride, dtype=torch.float32)
        sx = torch.arange(0, w * stride, step=stride, dtype=torch.float32)
        yy, xx = torch.meshgrid(sy, sx, indexing="ij")
        loc = torch.stack((xx.reshape(-1), yy.reshape(-1)), dim=1) + stride // 2
        cls = torch.sigmoid(self.cls(f)).flatten(2).transpose(1, 2)
        ctr = torch.sigmoid(self.ctr(f)).flatten(2).transpose(1, 2)
        reg = torch.exp(self.reg(f)).flatten(2).transpose(1, 2) * stride
        boxes = torch.cat([loc[None] - reg[..., :2], loc[None] + reg[..., 2:]], dim=2)
        return torch.sqrt(cls * ctr), boxes

    def forward(self, feat):
        s0, b0 = self.level(feat, self.strides[0])
        s1, b1 = self.level(self.down(feat), self.strides[1])
        scores, boxes = torch.cat([s0, s1], 1), torch.cat([b0, b1], 1)
        best, labels = scores.max(2)
        top, idx = best.topk(self.k, dim=1)
        sel = torch.gather(boxes, 1, idx[..., None].expand(-1, -1, 4))
        return top, sel, torch.gather(labels, 1, idx)


# ---------------- Mask R-CNN's box and mask heads over RoiAlign ----------------


class MaskRCNNHeads(nn.Module):
    """TwoMLPHead over a 7x7 RoiAlign (sampling_ratio 2), FastRCNNPredictor, and the mask
    head (four 3x3 convs, ConvTranspose2d 2x2 s2, 1x1 logits) over a 14x14 RoiAlign."""
    def __init__(self, c=8, rep=32, classes=3, aligned=False):
        super().__init__()
        self.aligned = aligned
        self.fc6, self.fc7 = nn.Linear(c * 49, rep), nn.Linear(rep, rep)
        self.cls_score, self.bbox_pred = nn.Linear(rep, classes), nn.Linear(rep, classes * 4)
        self.mask_fcn = nn.Sequential(*[m for _ in range(2) for m in (nn.Conv2d(c, c, 3, padding=1),
                                                                       nn.ReLU())])
        self.conv5_mask = nn.ConvTranspose2d(c, c, 2, 2)
        self.mask_logits = nn.Conv2d(c, classes, 1)

    def forward(self, feat, rois, bidx):
        box = RoIAlign.apply(feat, rois, bidx, 7, 7, 0.25, 2, self.aligned)
        x = F.relu(self.fc7(F.relu(self.fc6(box.flatten(1)))))
        mask = RoIAlign.apply(feat, rois, bidx, 14, 14, 0.25, 2, self.aligned)
        m = self.mask_logits(F.relu(self.conv5_mask(self.mask_fcn(mask))))
        return self.cls_score(x), self.bbox_pred(x), m.sigmoid()


# ---------------- TabNet ----------------


def sparsemax(input, dim: int = -1):
    """TabNet's Sparsemax (entmax's sort-based threshold)."""
    input = input - input.max(dim=dim, keepdim=True)[0]
    zs = torch.sort(input, dim=dim, descending=True)[0]
    d = input.size(dim)
    rho = torch.arange(1, d + 1, dtype=input.dtype).view(1, -1)
    cumsum = zs.cumsum(dim) - 1
    support = rho * zs > cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = cumsum.gather(dim, support_size - 1) / support_size.to(input.dtype)
    return torch.clamp(input - tau, min=0)


class GLULayer(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc, self.bn = nn.Linear(i, 2 * o, bias=False), nn.BatchNorm1d(2 * o)

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)), dim=-1)


class TabNet(nn.Module):
    """TabNetNoEmbeddings: initial BatchNorm1d, shared + step feature transformers of GLU
    layers with sqrt(0.5) residuals, an attentive transformer (Linear, BatchNorm1d, prior,
    sparsemax), the entropy term M_loss, summed step outputs through a final Linear."""
    def __init__(self, f=12, nd=8, na=8, steps=3, gamma=1.3, out=3):
        super().__init__()
        self.nd, self.steps, self.gamma = nd, steps, gamma
        self.bn = nn.BatchNorm1d(f)
        self.shared = GLULayer(f, nd + na)
        self.step_ft = nn.ModuleList(GLULayer(nd + na, nd + na) for _ in range(steps + 1))
        self.att = nn.ModuleList(nn.Sequential(nn.Linear(na, f, bias=False), nn.BatchNorm1d(f))
                                 for _ in range(steps))
        self.final = nn.Linear(nd, out)

    def ft(self, x, k):
        x = self.shared(x)
        return (x + self.step_ft[k](x)) * math.sqrt(0.5)

    def forward(self, x):
        x = self.bn(x)
        prior = torch.ones_like(x)
        att = self.ft(x, 0)[:, self.nd:]
        res, m_loss = 0, 0
        for s in range(self.steps):
            m = sparsemax(self.att[s](att) * prior)
            m_loss = m_loss + torch.mean(torch.sum(m * torch.log(m + 1e-15), dim=1))
            prior = (self.gamma - m) * prior
            out = self.ft(m * x, s + 1)
            res = res + F.relu(out[:, :self.nd])
            att = out[:, self.nd:]
        return self.final(res), m_loss / self.steps


# ---------------- DeepFM, Wide & Deep ----------------


class DeepFM(nn.Module):
    """DeepCTR-style DeepFM: per-field offsets into one embedding table, the FM
    second-order term 0.5 * ((sum e)^2 - sum e^2), a first-order embedding, an MLP over the
    flattened embeddings and dense features, sigmoid of the sum."""
    def __init__(self, fields=(10, 20, 7, 30), d=8, dense=4, hidden=(32, 16)):
        super().__init__()
        self.register_buffer("offsets", torch.tensor((0,) + tuple(torch.tensor(fields).cumsum(0)[:-1].tolist())))
        n = sum(fields)
        self.emb, self.first = nn.Embedding(n, d), nn.Embedding(n, 1)
        self.dense_lin = nn.Linear(dense, 1)
        dims = [len(fields) * d + dense] + list(hidden)
        self.mlp = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in
                                   (nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU())], nn.Linear(dims[-1], 1))

    def forward(self, sparse, dense):
        idx = sparse + self.offsets[None]
        e = self.emb(idx)
        fm = 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1, keepdim=True)
        first = self.first(idx).sum(1) + self.dense_lin(dense)
        deep = self.mlp(torch.cat([e.flatten(1), dense], 1))
        return torch.sigmoid(first + fm + deep)


class WideDeep(nn.Module):
    """Wide & Deep: a wide linear over hashed cross features (one-column embeddings summed),
    deep towers over a multi-valued field padded with id 0 (the mean over the non-pad
    ids, as recommenders write it instead of EmbeddingBag, whose export is a Loop over
    the bags), numeric features, sigmoid."""
    def __init__(self, vocab=50, d=8, crosses=64, hidden=32):
        super().__init__()
        self.crosses = crosses
        self.wide = nn.Embedding(crosses, 1)
        self.bag = nn.Embedding(vocab, d, padding_idx=0)
        self.deep = nn.Sequential(nn.Linear(d + 3, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, tags, cross, num):
        w = self.wide(cross % self.crosses).sum(1)
        keep = (tags != 0).unsqueeze(-1).float()
        bag = (self.bag(tags) * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return torch.sigmoid(w + self.deep(torch.cat([bag, num], 1)))


# ---------------- RWKV-4, Mamba ----------------


class RWKV(nn.Module):
    """RWKV-4 block: LayerNorms, nn.ZeroPad2d((0, 0, 1, -1)) token shift, time-mix r / k /
    v, the WKV (time_decay, time_first) in the parallel form of the CUDA kernel's sum,
    channel-mix with squared ReLU."""
    def __init__(self, d=32, ff=64):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_decay = nn.Parameter(torch.linspace(-2, 1, d))
        self.time_first = nn.Parameter(torch.linspace(0.5, -0.5, d))
        self.mix_k, self.mix_v, self.mix_r = (nn.Parameter(torch.rand(1, 1, d)) for _ in range(3))
        self.key, self.value = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.receptance, self.output = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.cm_k, self.cm_r = nn.Parameter(torch.rand(1, 1, d)), nn.Parameter(torch.rand(1, 1, d))
        self.ck, self.cr, self.cv = nn.Linear(d, ff, bias=False), nn.Linear(d, d, bias=False), nn.Linear(ff, d, bias=False)

    def wkv(self, k, v):
        t = k.shape[1]
        w = -torch.exp(self.time_decay)
        pos = torch.arange(t)
        dist = (pos[:, None] - 1 - pos[None, :]).to(k.dtype)  # (t, i): t - 1 - i
        past = pos[None, :] < pos[:, None]
        lw = dist[None, :, :, None] * w + k[:, None, :, :]
        lw = torch.where(past[None, :, :, None], lw, torch.tensor(-1e38))
        now = (self.time_first + k)[:, :, None, :]
        eye = (pos[:, None] == pos[None, :])[None, :, :, None]
        lw = torch.where(eye, now.expand(-1, -1, t, -1), lw)
        p = torch.softmax(lw, dim=2)
        return (p * v[:, None, :, :]).sum(2)

    def forward(self, x):
        y = self.ln1(x)
        xx = self.time_shift(y)
        k = self.key(y * self.mix_k + xx * (1 - self.mix_k))
        v = self.value(y * self.mix_v + xx * (1 - self.mix_v))
        r = torch.sigmoid(self.receptance(y * self.mix_r + xx * (1 - self.mix_r)))
        x = x + self.output(r * self.wkv(k, v))
        y = self.ln2(x)
        xx = self.time_shift(y)
        k = torch.square(torch.relu(self.ck(y * self.cm_k + xx * (1 - self.cm_k))))
        return x + torch.sigmoid(self.cr(y * self.cm_r + xx * (1 - self.cm_r))) * self.cv(k)


def selective_scan(u, delta, A, B, C, D):
    """mamba-minimal's sequential selective scan: (b, l, d) u, delta; (d, n) A; (b, l, n)
    B, C. Traced, the loop unrolls over the example's l (scripted, it exports a Loop whose
    trip count is l, known only at run time: not supported)."""
    b, l, d = u.shape
    dA = torch.exp(delta.unsqueeze(-1) * A)
    dBu = delta.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)
    x = torch.zeros(b, d, A.shape[1])
    ys = []
    for i in range(l):
        x = dA[:, i] * x + dBu[:, i]
        ys.append((x * C[:, i, None, :]).sum(-1))
    return torch.stack(ys, dim=1) + u * D


class Mamba(nn.Module):
    """mamba-minimal's MambaBlock: in_proj split into x and the gate z, a causal depthwise
    Conv1d (padding k - 1, cropped to l), SiLU, x_proj split into delta, B, C, softplus
    dt_proj, A = -exp(A_log), the selective scan, y * silu(z), out_proj; RMSNorm residual."""
    def __init__(self, d=16, n=4, expand=2, k=4):
        super().__init__()
        di = d * expand
        self.dt_rank = math.ceil(d / 16)
        self.in_proj = nn.Linear(d, 2 * di, bias=False)
        self.conv1d = nn.Conv1d(di, di, k, groups=di, padding=k - 1)
        self.x_proj = nn.Linear(di, self.dt_rank + 2 * n, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, di)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float().repeat(di, 1)))
        self.D = nn.Parameter(torch.ones(di))
        self.out_proj = nn.Linear(di, d, bias=False)
        self.norm_w = nn.Parameter(torch.rand(d) + 0.5)
        self.n = n

    def forward(self, x):
        b, l, _ = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.norm_w
        xz = self.in_proj(h)
        u, z = xz.chunk(2, dim=-1)
        u = F.silu(self.conv1d(u.transpose(1, 2))[:, :, :l].transpose(1, 2))
        dbc = self.x_proj(u)
        delta, B, C = dbc.split([self.dt_rank, self.n, self.n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))
        y = selective_scan(u, delta, -torch.exp(self.A_log), B, C, self.D)
        return x + self.out_proj(y * F.silu(z))


# ---------------- LeViT attention ----------------


class LinearNorm(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c, self.bn = nn.Linear(i, o, bias=False), nn.BatchNorm1d(o)

    def forward(self, x):
        return self.bn(self.c(x).flatten(0, 1)).reshape_as(self.c(x))


class LeViTAttn(nn.Module):
    """timm LeViT Attention: qkv by Linear + BatchNorm1d, attention_biases[:, attention_bias_idxs]
    (|dy| * res + |dx| offsets), Hardswish before the projection, then a residual MLP."""
    def __init__(self, d=32, kd=8, h=4, res=4, attn_ratio=2):
        super().__init__()
        self.h, self.kd, self.dv = h, kd, attn_ratio * kd
        self.scale = kd ** -0.5
        self.qkv = LinearNorm(d, h * (2 * kd + self.dv))
        self.proj = nn.Sequential(nn.Hardswish(), LinearNorm(h * self.dv, d))
        pts = [(i, j) for i in range(res) for j in range(res)]
        offsets, idxs = {}, []
        for p1 in pts:
            for p2 in pts:
                off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                offsets.setdefault(off, len(offsets))
                idxs.append(offsets[off])
        self.attention_biases = nn.Parameter(torch.randn(h, len(offsets)))
        self.register_buffer("attention_bias_idxs", torch.LongTensor(idxs).view(len(pts), len(pts)))
        self.mlp = nn.Sequential(LinearNorm(d, 2 * d), nn.Hardswish(), LinearNorm(2 * d, d))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, self.h, -1).split([self.kd, self.kd, self.dv], dim=3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        attn = q @ k.transpose(-2, -1) * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        x = x + self.proj((attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, self.h * self.dv))
        return x + self.mlp(x)
