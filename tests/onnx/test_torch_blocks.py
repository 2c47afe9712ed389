#!/usr/bin/python3
"""Blocks as popular model code writes them, exported by PyTorch with dynamic axes, built
once by relaxc and run at several sizes from the one artifact; outputs equal PyTorch's
(rtol 1e-4, atol 1e-4). docs/onnx.md, "From PyTorch".

* GPT-2 (Hugging Face's modeling code): Conv1D as addmm on a flattened view, split of
  the fused qkv, the causal mask sliced from a registered (1, 1, n_ctx, n_ctx) buffer by
  the sequence length (bias[:, :, k - q : k, :k]) and applied with where(mask, w,
  finfo.min), the tanh GELU written out with pow. The slice's extent is min(s, n_ctx):
  the importer asserts it equals s at the where (a match_cast), so a call with s > n_ctx
  fails with a clear error, as in ONNX Runtime.
* Llama (Hugging Face): rotary embeddings from inv_freq and positions (cos/sin,
  rotate_half by slicing and cat), grouped-query attention with repeat_kv by expand +
  reshape, a causal mask triu(full(finfo.min)), RMSNorm with casts, SiLU-gated MLP.
* ViT: patch embedding Conv2d, flatten(2).transpose(1, 2) (a reshape whose -1 is
  b * 768 / (b * 48) elements: the importer cancels b), a class token expanded to the
  batch and concatenated, position embeddings, nn.MultiheadAttention, a Linear head.
* T5-style attention: relative position buckets computed with log / min / where on
  integer tensors, an Embedding of the buckets as an additive bias, dropout in eval.
* Swin: shifted windows (roll), 6-d view/permute window partition and reverse, window
  attention with a relative position bias. Its window_reverse computes the batch with
  int() in Python, which the tracer bakes in as the export's batch (2): the artifact
  runs batch 2 and refuses batch 3 with a match_cast error, as ONNX Runtime fails.
* GPT-2's sequence classification pooling: `% ids.shape[-1]` (a tensor modulo a
  symbolic size, which the importer materializes as a tensor) and per-row indexing.
* Idioms: F.pad(mode="reflect") (pads computed from constants, folded at import), a
  U-Net upsample to the skip's size (Resize with symbolic sizes), a KV cache written by
  index_copy at run-time positions, Whisper's conv front end with sliced sinusoidal
  positions, a U-Net level whose ConvTranspose2d output ((h // 2) * 2 rows) is
  concatenated with the skip connection (h rows; odd h refused at the concat),
  generation's position ids sliced from the attention mask's cumsum by
  [:, -ids.shape[1]:] (a symbolic negative start).

Usage: test_torch_blocks.py BIN_DIR
"""
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
BIN = sys.argv[1]
failures = 0


class GPT2Block(nn.Module):
    def __init__(s, d=64, h=4, n_ctx=32):
        super().__init__()
        s.h, s.d = h, d
        s.ln_1, s.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        p = lambda *shape: nn.Parameter(torch.randn(*shape) * 0.05)
        s.c_attn_w, s.c_attn_b = p(d, 3 * d), p(3 * d)
        s.c_proj_w, s.c_proj_b = p(d, d), p(d)
        s.fc_w, s.fc_b = p(d, 4 * d), p(4 * d)
        s.pj_w, s.pj_b = p(4 * d, d), p(d)
        s.register_buffer("bias", torch.tril(torch.ones((n_ctx, n_ctx), dtype=torch.bool))
                          .view(1, 1, n_ctx, n_ctx))

    def conv1d(s, x, w, b):
        size_out = x.size()[:-1] + (w.size(-1),)
        return torch.addmm(b, x.view(-1, x.size(-1)), w).view(size_out)

    def heads(s, t):
        return t.view(t.size()[:-1] + (s.h, s.d // s.h)).permute(0, 2, 1, 3)

    def forward(s, x):
        r = x
        q, k, v = s.conv1d(s.ln_1(x), s.c_attn_w, s.c_attn_b).split(s.d, dim=2)
        q, k, v = s.heads(q), s.heads(k), s.heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        ql, kl = q.size(-2), k.size(-2)
        causal = s.bias[:, :, kl - ql: kl, :kl]
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(F.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        x = r + s.conv1d(a.view(a.size()[:-2] + (s.d,)), s.c_proj_w, s.c_proj_b)
        h = s.conv1d(s.ln_2(x), s.fc_w, s.fc_b)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + s.conv1d(h, s.pj_w, s.pj_b)


def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


class RMSNorm(nn.Module):
    def __init__(s, d, eps=1e-6):
        super().__init__()
        s.weight, s.eps = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d)), eps

    def forward(s, x):
        dt = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps)
        return s.weight * x.to(dt)


class LlamaBlock(nn.Module):
    def __init__(s, d=64, h=4, kvh=2, inter=96):
        super().__init__()
        s.d, s.h, s.kvh, s.hd = d, h, kvh, d // h
        lin = lambda i, o: nn.Linear(i, o, bias=False)
        s.q, s.k, s.v, s.o = lin(d, d), lin(d, kvh * s.hd), lin(d, kvh * s.hd), lin(d, d)
        s.g, s.u, s.dn = lin(d, inter), lin(d, inter), lin(inter, d)
        s.n1, s.n2 = RMSNorm(d), RMSNorm(d)
        s.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, s.hd, 2).float() / s.hd)))

    def forward(s, x):
        b, L, _ = x.shape
        pos = torch.arange(L, dtype=torch.long).unsqueeze(0)
        freqs = torch.matmul(s.inv_freq[None, :, None].float().expand(1, -1, 1),
                             pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        r, x = x, s.n1(x)
        q = s.q(x).view(b, L, s.h, s.hd).transpose(1, 2)
        k = s.k(x).view(b, L, s.kvh, s.hd).transpose(1, 2)
        v = s.v(x).view(b, L, s.kvh, s.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = s.h // s.kvh
        k = k[:, :, None].expand(b, s.kvh, rep, L, s.hd).reshape(b, s.h, L, s.hd)
        v = v[:, :, None].expand(b, s.kvh, rep, L, s.hd).reshape(b, s.h, L, s.hd)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(s.hd)
        w = w + torch.full((L, L), torch.finfo(torch.float32).min).triu(1)[None, None]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        x = r + s.o(torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, L, s.d))
        return x + s.dn(F.silu(s.g(s.n2(x))) * s.u(s.n2(x)))


class ViTBlock(nn.Module):
    def __init__(s, d=48, p=4, img=16):
        super().__init__()
        s.patch = nn.Conv2d(3, d, p, p)
        s.cls = nn.Parameter(torch.randn(1, 1, d))
        s.pos = nn.Parameter(torch.randn(1, (img // p) ** 2 + 1, d))
        s.ln, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        s.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        s.head = nn.Linear(d, 10)

    def forward(s, x):
        x = s.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([s.cls.expand(x.shape[0], -1, -1), x], dim=1) + s.pos
        h = s.ln(x)
        x = x + s.attn(h, h, h, need_weights=False)[0]
        x = x + s.mlp(s.ln2(x))
        return s.head(x[:, 0])


class T5Attention(nn.Module):
    def __init__(s, d=32, h=4, buckets=8):
        super().__init__()
        s.h, s.d, s.nb = h, d, buckets
        s.qkv, s.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        s.rel, s.drop = nn.Embedding(buckets, h), nn.Dropout(0.1)
        s.w = nn.Parameter(torch.ones(d))

    def bucket(s, rp):
        n = torch.max(-rp, torch.zeros_like(rp))
        exact = s.nb // 2
        large = exact + (torch.log(n.float().clamp(min=1) / exact) / math.log(16 / exact)
                         * (s.nb - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, s.nb - 1))
        return torch.where(n < exact, n, large)

    def forward(s, x):
        b, L, _ = x.shape
        hs = s.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
        q, k, v = s.qkv(hs).view(b, L, 3, s.h, s.d // s.h).permute(2, 0, 3, 1, 4)
        rp = torch.arange(L)[None, :] - torch.arange(L)[:, None]
        bias = s.rel(s.bucket(rp)).permute(2, 0, 1).unsqueeze(0)
        a = s.drop(F.softmax((torch.matmul(q, k.transpose(3, 2)) + bias).float(), dim=-1))
        return x + s.o(torch.matmul(a, v).transpose(1, 2).reshape(b, L, s.d))


def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)


def window_reverse(win, w, H, W):
    B = int(win.shape[0] / (H * W / w / w))  # traced: the export's batch, a constant
    x = win.view(B, H // w, W // w, w, w, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class SwinBlock(nn.Module):
    def __init__(s, C=16, w=4, h=2):
        super().__init__()
        s.w, s.h = w, h
        s.qkv, s.proj, s.norm = nn.Linear(C, 3 * C), nn.Linear(C, C), nn.LayerNorm(C)
        s.rpb = nn.Parameter(torch.randn(h, w * w, w * w) * 0.02)

    def forward(s, x):
        B, H, W, C = x.shape
        win = window_partition(torch.roll(s.norm(x), shifts=(-2, -2), dims=(1, 2)), s.w)
        win = win.view(-1, s.w * s.w, C)
        Bw, N, _ = win.shape
        q, k, v = s.qkv(win).reshape(Bw, N, 3, s.h, C // s.h).permute(2, 0, 3, 1, 4)
        a = (q * (C // s.h) ** -0.5) @ k.transpose(-2, -1) + s.rpb.unsqueeze(0)
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(Bw, N, C)
        y = window_reverse(s.proj(y).view(-1, s.w, s.w, C), s.w, H, W)
        return x + torch.roll(y, shifts=(2, 2), dims=(1, 2))


class GPT2Classify(nn.Module):
    """GPT2ForSequenceClassification's pooling: the last token before the first pad
    (id 0), `% ids.shape[-1]` of a tensor by a symbolic size, indexed per batch row."""
    def __init__(s):
        super().__init__()
        s.e, s.score = nn.Embedding(20, 8), nn.Linear(8, 3, bias=False)

    def forward(s, ids):
        logits = s.score(s.e(ids))
        last = (torch.eq(ids, 0).int().argmax(-1) - 1) % ids.shape[-1]
        return logits[torch.arange(ids.shape[0]), last]


class ReflectPadConv(nn.Module):
    """F.pad(mode="reflect"): PyTorch computes the pads with Concat, Reshape, Slice (step
    -1) and Transpose of constants, folded at import."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv2d(3, 8, 3)

    def forward(s, x):
        return s.c(F.pad(x, (1, 1, 1, 1), mode="reflect"))


class UpToSkip(nn.Module):
    """U-Net decoder: interpolate to the skip connection's size (Resize with sizes from
    Shape: symbolic), then concat."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv2d(4, 4, 3, padding=1)

    def forward(s, x, skip):
        y = F.interpolate(s.c(x), size=skip.shape[-2:], mode="bilinear", align_corners=False)
        return torch.cat([y, skip], 1)


class UNetLevel(nn.Module):
    """U-Net level: max pool, conv, ConvTranspose2d(2, stride 2) back up, concat with the
    skip connection. The upsampled rows are (h // 2) * 2 against the skip's h: the
    importer asserts them equal at the concat (a match_cast), so an odd h is refused
    with a clear error, as PyTorch and ONNX Runtime fail at the cat."""
    def __init__(s):
        super().__init__()
        s.d, s.m = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, padding=1)
        s.u, s.o = nn.ConvTranspose2d(16, 8, 2, stride=2), nn.Conv2d(16, 2, 1)

    def forward(s, x):
        a = F.relu(s.d(x))
        b = F.relu(s.m(F.max_pool2d(a, 2)))
        return s.o(torch.cat([s.u(b), a], 1))


class PositionsFromMask(nn.Module):
    """Hugging Face generation's position ids: the attention mask's cumsum, the last
    ids.shape[1] of them (a slice whose start is the Neg of a Shape: symbolic and <= 0,
    counted from the end as ONNX counts a negative start)."""
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(50, 8), nn.Embedding(64, 8)

    def forward(s, ids, amask):
        pos = (amask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
        return s.wte(ids) + s.wpe(pos)


class CacheIndexCopy(nn.Module):
    """A static KV cache written with index_copy at run-time positions (ScatterElements
    on the cache's shape vector builds the Expand target)."""
    def forward(s, cache, kv, pos):
        return cache.index_copy(2, pos, kv) * 2


class WhisperFront(nn.Module):
    """Whisper's encoder input: two Conv1d + GELU, sinusoidal positions sliced to the
    frames (extent min((t + 1) // 2, 50) against (t + 1) // 2)."""
    def __init__(s, n_mels=16, d=32, ctx=50):
        super().__init__()
        s.c1, s.c2 = nn.Conv1d(n_mels, d, 3, padding=1), nn.Conv1d(d, d, 3, stride=2, padding=1)
        t = torch.exp(-math.log(10000) / (d // 2 - 1) * torch.arange(d // 2))
        sc = torch.arange(ctx)[:, None] * t[None, :]
        s.register_buffer("pos", torch.cat([torch.sin(sc), torch.cos(sc)], dim=1))
        s.ln = nn.LayerNorm(d)

    def forward(s, x):
        x = F.gelu(s.c2(F.gelu(s.c1(x)))).permute(0, 2, 1)
        return s.ln(x + s.pos[: x.shape[1]])


def pad_ids(b, s):
    return torch.cat([torch.randint(1, 20, (b, s - 3)), torch.zeros(b, 3, dtype=torch.long)], 1)


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), p.stderr))
    return p.stdout


def check(name, ok, detail=""):
    global failures
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, detail))
    failures += 0 if ok else 1


def run(rxa, xs, tmp):
    xs = xs if isinstance(xs, tuple) else (xs,)
    od, argv = os.path.join(tmp, "out"), [os.path.join(BIN, "relax-run"), rxa]
    for i, x in enumerate(xs):
        xin = os.path.join(tmp, "x%d.npy" % i)
        np.save(xin, x)
        argv += ["--in", xin]
    if os.path.isdir(od):
        for f in os.listdir(od):
            os.remove(os.path.join(od, f))
    p = subprocess.run(argv + ["--out-dir", od], capture_output=True, text=True)
    return (np.load(os.path.join(od, "out0.npy")) if p.returncode == 0 else None), p


def main():
    seq = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}}
    cases = [
        ("gpt2", GPT2Block(), torch.randn(2, 7, 64), seq, [(1, 1, 64), (3, 32, 64)]),
        ("llama", LlamaBlock(), torch.randn(2, 7, 64), seq, [(1, 13, 64), (1, 1, 64)]),
        ("vit", ViTBlock(), torch.randn(2, 3, 16, 16), {"x": {0: "batch"}, "y": {0: "batch"}},
         [(5, 3, 16, 16)]),
        ("t5", T5Attention(), torch.randn(2, 9, 32), seq, [(1, 5, 32), (3, 20, 32)]),
        ("swin", SwinBlock(), torch.randn(2, 8, 8, 16), {"x": {0: "batch"}, "y": {0: "batch"}},
         []),
        ("gpt2-classify", GPT2Classify(), pad_ids(2, 8), {"x": {0: "batch", 1: "seq"}},
         [pad_ids(3, 12), pad_ids(1, 5)]),
        ("reflect-pad", ReflectPadConv(), torch.randn(1, 3, 8, 8),
         {"x": {0: "batch", 2: "h", 3: "w"}}, [(2, 3, 11, 9)]),
        ("up-to-skip", UpToSkip(), (torch.randn(1, 4, 5, 5), torch.randn(1, 2, 11, 11)),
         {"x": {0: "batch", 2: "h", 3: "w"}, "x1": {0: "batch", 2: "H", 3: "W"}},
         [(torch.randn(2, 4, 7, 6), torch.randn(2, 2, 15, 13))]),
        ("unet-level", UNetLevel(), torch.randn(1, 3, 8, 8), {"x": {0: "batch", 2: "h", 3: "w"}},
         [(2, 3, 12, 6)]),
        ("positions-from-mask", PositionsFromMask(),
         (torch.randint(0, 50, (2, 3)), torch.ones(2, 7, dtype=torch.long)),
         {"x": {0: "batch", 1: "n"}, "x1": {0: "batch", 1: "t"}},
         [(torch.randint(0, 50, (1, 1)), torch.tensor([[0, 0, 1, 1, 1]])),
          (torch.randint(0, 50, (3, 4)), torch.ones(3, 4, dtype=torch.long))]),
        ("cache-index-copy", CacheIndexCopy(),
         (torch.randn(1, 2, 10, 4), torch.randn(1, 2, 3, 4), torch.arange(3) + 2),
         {"x": {0: "batch"}, "x1": {0: "batch", 2: "s"}, "x2": {0: "s"}},
         [(torch.randn(2, 2, 10, 4), torch.randn(2, 2, 5, 4), torch.tensor([7, 0, 3, 9, 1]))]),
        ("whisper-front", WhisperFront(), torch.randn(1, 16, 40), {"x": {0: "batch", 2: "t"}},
         [(2, 16, 61), (1, 16, 100)]),
    ]
    with tempfile.TemporaryDirectory(prefix="torch-blocks-") as tmp:
        for name, model, x, dyn, more in cases:
            model.eval()
            path, rxa = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".rxa")
            try:
                xs = x if isinstance(x, tuple) else (x,)
                names = ["x"] + ["x%d" % i for i in range(1, len(xs))]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, xs, path, input_names=names, output_names=["y"],
                                      opset_version=17, dynamic_axes=dyn)
                sh([os.path.join(BIN, "relaxc"), "build", path, "-o", rxa])
            except RuntimeError as e:
                check(name + " builds", False, str(e)[-600:])
                continue
            for xi in [x] + [m if not isinstance(m, tuple) or torch.is_tensor(m[0]) else
                             torch.randn(*m) for m in more]:
                xi = xi if isinstance(xi, tuple) else (xi,)
                with torch.no_grad():
                    want = model(*xi).numpy()
                got, p = run(rxa, tuple(t.numpy() for t in xi), tmp)
                ok = got is not None and got.shape == want.shape and \
                    np.allclose(got, want, rtol=1e-4, atol=1e-4)
                same = got is not None and got.shape == want.shape
                check("%s %s" % (name, " ".join(str(tuple(t.shape)) for t in xi)), ok,
                      "(max abs error %.2e)" % float(np.max(np.abs(got - want))) if same
                      else p.stderr[-300:] if got is None else "shape %s" % (got.shape,))
            if name == "gpt2":  # longer than the mask buffer: a clear error, as in ORT
                got, p = run(rxa, np.random.rand(1, 40, 64).astype(np.float32), tmp)
                check("gpt2 seq 40 > n_ctx 32 is refused", got is None and p.returncode == 1 and
                      "match_cast" in p.stderr and "expected (1, 1, seq, seq)" in p.stderr,
                      p.stderr.strip()[-200:])
            if name == "unet-level":  # odd h: the upsampled rows cannot match the skip's
                got, p = run(rxa, np.random.rand(1, 3, 9, 8).astype(np.float32), tmp)
                check("unet-level odd height 9 is refused at the concat",
                      got is None and p.returncode == 1 and "match_cast" in p.stderr and
                      "expected (batch, 8, h, w), got (1, 8, 8, 8)" in p.stderr,
                      p.stderr.strip()[-200:])
            if name == "swin":  # the export baked batch 2 into a view: other batches refused
                got, p = run(rxa, np.random.rand(3, 8, 8, 16).astype(np.float32), tmp)
                check("swin batch 3 (the export traced batch 2) is refused",
                      got is None and p.returncode == 1 and "expected (2, 8, 8, 16), got (3, 8, "
                      "8, 16)" in p.stderr, p.stderr.strip()[-200:])
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
