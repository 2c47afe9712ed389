#!/usr/bin/python3
"""Models as exporters write them run as fast as the hand-written form (docs/onnx.md,
"Exporters' idioms"): PyTorch's spellings of grouped-query attention and RMSNorm,
exported with torch.onnx.export (dynamic axes, opsets 14 and 17), through relaxc.

Each model is checked twice:
  numbers    one artifact, several sizes of its dynamic axes, relax-run's outputs equal
             PyTorch's (rtol 1e-4, atol 1e-5);
  structure  what the pipeline made of the idiom (relaxc print --after PASS):
    repeat_interleave  torch.repeat_interleave(k, 3, dim=1) (numbers only) imports;
    repeat_kv   Hugging Face's k[:, :, None].expand(b, kv, rep, n, d).reshape(b, heads, n, d)
                after a KV-cache append (n = c + 1): the fused attention products read
                the cache per head group (k[i0, i1 // 4, ...]); no index divides by a
                parenthesized symbolic product such as (c * 256 + 256), which is what
                raveling the whole reshape gives (legalize_manip.c, reshape_cb)
    rms_norm    x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w: after the
                simplify pass there is no power (a libm powf per element) and 1 / sqrt
                is an rsqrt (compiler/pass/simplify.c); with --disable-pass simplify the
                power is still there (the rewrite, not the exporter, removed it) and the
                numbers agree.
    masked_select  torch.masked_select and x.nonzero() (NonZero, then Transpose, GatherND
                and Shape / ReduceProd of the selection): the count is a fresh variable
                bound by match_cast after nonzero (before, Shape refused the selection's
                unknown dims); the numbers hold for several thresholds' counts, 0 included.
    float_range  torch.arange(h, dtype=torch.float32) over a feature map's dynamic height
                and width (Range over a Cast of a symbolic size, as detection anchors and
                positional encodings write it): the integer arange, cast (before, Range
                refused bounds that were not integers known at compile time).
    conv_transpose  ConvTranspose whose kernel equals its stride (a UNet's 2x2 stride-2
                upsampler; 1-d, 2-d and 3-d, with and without bias, dynamic batch and
                spatial dims) imports as a matmul and a pixel shuffle (no
                nn.conv*_transpose left after parse); a 2-d one with k=3, s=2, pads and
                output_padding and a 1-d one with k=4, s=2, pad 1 (constant weights)
                import as one conv2d and a pixel shuffle (the sub-pixel form, onnx_nn.c),
                a 3-d and a grouped one keep the gather form; the numbers agree with
                PyTorch.
    one_index   a Gather of one constant index (timm's q, k, v = qkv[0], qkv[1], qkv[2]
                of a permuted (3, b, heads, n, d) projection; x[:, -1]; x[:, [2]])
                imports as strided_slice (+ reshape for a 0-d index): no take after
                parse; the numbers agree with PyTorch at several batch sizes.
    upsample    nn.Upsample(scale_factor=2) and F.interpolate(scale_factor=3) in nearest
                mode (Resize asymmetric + floor, dynamic h and w) index the input by
                integer division after legalize for a GPU target (no floor of a float
                coordinate); a scale of 1.5 keeps the float form, its output extents
                floor(D * 1.5) at dynamic h and w as (D * 3) // 2 (refused before); on
                the cpu each is one rt.resize2d; the numbers agree with PyTorch.
    yolo_head   a detector head's sigmoid of the permuted concat of three flattened maps
                (and a tanh of a reshape): after simplify the sigmoid applies to each
                map (3 sigmoids) and the movement follows; the numbers agree with
                PyTorch at several batch sizes.
Usage: test_exported_forms.py BIN_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
RELAXC, RUN = (os.path.join(sys.argv[1], tool) for tool in ("relaxc", "relax-run"))
FAILED = []  # what failed, in order


def check(cond, what, detail=""):
    """Prints PASS/FAIL what (and detail on a failure); remembers a failure."""
    if cond:
        print("PASS", what)
        return
    print("FAIL %s\n  %s" % (what, detail[:1500]))
    FAILED.append(what)


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode < 0:
        raise SystemExit("%s crashed (signal %d): %s" % (args[0], -p.returncode, p.stderr[-800:]))
    return p


class RepeatKV(torch.nn.Module):
    """Decode attention of 8 query heads over 2 k/v heads with a cache (dim 16)."""

    def __init__(self):
        super().__init__()
        self.wq = torch.nn.Linear(32, 128, bias=False)
        self.wk = torch.nn.Linear(32, 32, bias=False)
        self.wv = torch.nn.Linear(32, 32, bias=False)

    def forward(self, x, k_cache, v_cache):
        b, s = x.shape[0], x.shape[1]
        q = self.wq(x).reshape(b, s, 8, 16).permute(0, 2, 1, 3)
        k = torch.cat([k_cache, self.wk(x).reshape(b, s, 2, 16).permute(0, 2, 1, 3)], dim=2)
        v = torch.cat([v_cache, self.wv(x).reshape(b, s, 2, 16).permute(0, 2, 1, 3)], dim=2)
        n = k.shape[2]
        kk = k[:, :, None].expand(b, 2, 4, n, 16).reshape(b, 8, n, 16)
        vv = v[:, :, None].expand(b, 2, 4, n, 16).reshape(b, 8, n, 16)
        p = torch.softmax(q @ kk.transpose(2, 3) * 0.25, dim=-1)
        return (p @ vv).permute(0, 2, 1, 3).reshape(b, s, 128), k, v


class RepeatInterleave(torch.nn.Module):
    """q @ k^T over k/v heads repeated with torch.repeat_interleave (exported static)."""

    def forward(self, q, k_cache, k_new):
        k = torch.cat([k_cache, k_new], dim=2)
        return q @ torch.repeat_interleave(k, 3, dim=1).transpose(2, 3), k


class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(64) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


def export(model, args, names, dyn, path, opset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, input_names=names, dynamic_axes=dyn or None,
                          opset_version=opset, do_constant_folding=True)


def relax_outputs(rxa, tmp, ins):
    paths = []
    for name, a in ins.items():
        paths += ["--in", "%s=%s" % (name, os.path.join(tmp, name + ".npy"))]
        np.save(os.path.join(tmp, name + ".npy"), a)
    out = tempfile.mkdtemp(dir=tmp, prefix="out")
    p = run([RUN, rxa, "--out-dir", out] + paths)
    if p.returncode != 0:
        return None, p.stderr
    got, i = [], 0
    while os.path.exists(os.path.join(out, "out%d.npy" % i)):
        got.append(np.load(os.path.join(out, "out%d.npy" % i)))
        i += 1
    return got, ""


def same(got, want):
    return (got is not None and len(got) == len(want) and
            all(g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5)
                for g, w in zip(got, want)))


def numbers(what, model, onnx_path, rxa, tmp, sizes, make_inputs, extra=()):
    p = run([RELAXC, "build", onnx_path, "-o", rxa] + list(extra))
    check(p.returncode == 0, "%s: relaxc build" % what, p.stderr)
    if p.returncode != 0:
        return
    for size in sizes:
        ins = make_inputs(*size)
        with torch.no_grad():
            want = model(*[torch.from_numpy(a) for a in ins.values()])
        want = [t.numpy() for t in (want if isinstance(want, tuple) else (want,))]
        got, err = relax_outputs(rxa, tmp, ins)
        check(same(got, want), "%s: equals PyTorch at %s" % (what, size),
              err or "max |diff| %s" % ([float(np.abs(g - w).max()) for g, w in zip(got, want)]
                                        if got and len(got) == len(want) else "-"))


def repeat_kv(tmp, opset):
    model = RepeatKV().eval()
    path = os.path.join(tmp, "repeat_kv_%d.onnx" % opset)
    args = (torch.randn(2, 1, 32), torch.randn(2, 2, 5, 16), torch.randn(2, 2, 5, 16))
    export(model, args, ["x", "k_cache", "v_cache"],
           {"x": {0: "b"}, "k_cache": {0: "b", 2: "c"}, "v_cache": {0: "b", 2: "c"}}, path, opset)
    rng = np.random.default_rng(opset)

    def inputs(b, c):
        return {"x": rng.standard_normal((b, 1, 32)).astype(np.float32),
                "k_cache": rng.standard_normal((b, 2, c, 16)).astype(np.float32),
                "v_cache": rng.standard_normal((b, 2, c, 16)).astype(np.float32)}

    what = "repeat_kv opset %d" % opset
    numbers(what, model, path, os.path.join(tmp, "repeat_kv.rxa"), tmp, [(1, 1), (2, 5), (3, 9)],
            inputs)
    text = run([RELAXC, "print", path, "--after", "fuse_tir"]).stdout
    reads = re.findall(r"v__Reshape_\d+_output_0|\w+\[[^\]]*i1 // 4[^\]]*\]", text)
    check(any("i1 // 4" in r for r in reads), "%s: the products read k/v per head group "
          "(an index i1 // 4)" % what, text[-3000:])
    bad = re.findall(r"(?://|%) \([^)]*[a-z][^)]*\)", text)
    check(not bad, "%s: no index divides by a symbolic product" % what, " ".join(bad[:4]))


def repeat_interleave(tmp):
    """PyTorch 1.13 spells the repeat count as Expand/Split/Where over constant vectors,
    which the importer folds; with dynamic axes its Reshape target ([0, -1, 0, d]) copies
    the wrong dim (ONNX Runtime cannot run that export either), so the export is static."""
    model = RepeatInterleave().eval()
    path = os.path.join(tmp, "repeat_interleave.onnx")
    args = (torch.randn(2, 6, 1, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 1, 4))
    export(model, args, ["q", "k_cache", "k_new"], {}, path, 17)
    numbers("repeat_interleave (static)", model, path, os.path.join(tmp, "ri.rxa"), tmp, [()],
            lambda: {n: a.numpy() for n, a in zip(("q", "k_cache", "k_new"), args)})


def rms_norm(tmp):
    model = RMSNorm().eval()
    path = os.path.join(tmp, "rms_norm.onnx")
    export(model, (torch.randn(2, 3, 64),), ["x"], {"x": {0: "b", 1: "s"}}, path, 17)
    rng = np.random.default_rng(1)

    def inputs(b, s):
        return {"x": rng.standard_normal((b, s, 64)).astype(np.float32)}

    for extra in ([], ["--disable-pass", "simplify"]):
        what = "rms_norm" + (" (simplify disabled)" if extra else "")
        numbers(what, model, path, os.path.join(tmp, "rms.rxa"), tmp, [(1, 1), (2, 7)], inputs,
                extra)
    text = run([RELAXC, "print", path, "--after", "simplify"]).stdout
    check("R.power" not in text and "R.multiply(x, x)" in text and "R.rsqrt(" in text,
          "rms_norm: simplify made x ** 2 a multiply and 1 / sqrt an rsqrt", text)
    off = run([RELAXC, "print", path, "--after", "simplify", "--disable-pass", "simplify"]).stdout
    check("R.power" in off, "rms_norm: the export itself has the power (the test sees the "
          "pass's work)", off)
    fused = run([RELAXC, "print", path, "--after", "fuse_tir"]).stdout
    check("pow(" not in fused and "rsqrt(" in fused,
          "rms_norm: the fused kernel has no pow call and one rsqrt", fused[-2000:])


class MaskedSelect(torch.nn.Module):
    def forward(s, x, t):
        m = x > t
        v = torch.masked_select(x, m)
        c = torch.ones((), dtype=x.dtype) * (v.shape[0] + x.nonzero().shape[0])
        return torch.stack([v.sum(), m.sum().float(), c, (v * v).sum()])


def masked_select(tmp):
    model = MaskedSelect().eval()
    path = os.path.join(tmp, "masked_select.onnx")
    export(model, (torch.randn(3, 7), torch.tensor(0.3)), ["x", "t"], {"x": {0: "b", 1: "s"}},
           path, 17)
    rng = np.random.default_rng(2)

    def inputs(b, s, t):
        x = rng.standard_normal((b, s)).astype(np.float32)
        x[0, 0] = 0.0  # one element nonzero() leaves out
        return {"x": x, "t": np.array(t, dtype=np.float32)}

    numbers("masked_select", model, path, os.path.join(tmp, "ms.rxa"), tmp,
            [(3, 7, 0.3), (2, 11, -0.5), (4, 5, 9.0)], inputs)
    text = run([RELAXC, "print", path, "--after", "parse"]).stdout
    check(re.search(r"R\.match_cast\(\w+, R\.Tensor\(\(2, nnz0\), \"i64\"\)\)", text) is not None,
          "masked_select: nonzero's count is the fresh variable nnz0", text[-3000:])


class FloatRange(torch.nn.Module):
    def forward(s, feat):
        h, w = feat.shape[-2], feat.shape[-1]
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                torch.arange(1, w + 1, 2, dtype=torch.float32), indexing="ij")
        ctr = torch.stack([xs, ys], -1).reshape(-1, 2) * 8 + 4
        wh = torch.exp(feat.flatten(2).transpose(1, 2)[:, :ctr.shape[0], :2]) * 16
        return torch.cat([ctr - wh / 2, ctr + wh / 2], -1)


def float_range(tmp):
    model = FloatRange().eval()
    path = os.path.join(tmp, "float_range.onnx")
    export(model, (torch.randn(2, 4, 3, 5),), ["feat"], {"feat": {0: "b", 2: "h", 3: "w"}}, path, 17)
    rng = np.random.default_rng(3)

    def inputs(b, h, w):
        return {"feat": rng.standard_normal((b, 4, h, w)).astype(np.float32)}

    numbers("float_range", model, path, os.path.join(tmp, "fr.rxa"), tmp,
            [(2, 3, 5), (1, 6, 4), (3, 1, 7)], inputs)


class ConvT(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.up2 = torch.nn.ConvTranspose2d(6, 4, 2, stride=2)
        s.up1 = torch.nn.ConvTranspose1d(6, 3, 4, stride=4, bias=False)
        s.up3 = torch.nn.ConvTranspose3d(6, 2, (1, 2, 3), stride=(1, 2, 3))
        s.gen = torch.nn.ConvTranspose2d(6, 5, 3, stride=2, padding=1, output_padding=1)
        s.gen1 = torch.nn.ConvTranspose1d(6, 3, 4, stride=2, padding=1)
        s.gen3 = torch.nn.ConvTranspose3d(6, 2, 3, stride=2, padding=1)
        s.grp = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, groups=2)

    def forward(s, x):
        return (s.up2(x), s.up1(x.flatten(2)), s.up3(x.unsqueeze(2)), s.gen(x),
                s.gen1(x.flatten(2)), s.gen3(x.unsqueeze(2)), s.grp(x))


def conv_transpose(tmp):
    model = ConvT().eval()
    path = os.path.join(tmp, "conv_transpose.onnx")
    export(model, (torch.randn(2, 6, 3, 5),), ["x"], {"x": {0: "b", 2: "h", 3: "w"}}, path, 17)
    rng = np.random.default_rng(4)

    def inputs(b, h, w):
        return {"x": rng.standard_normal((b, 6, h, w)).astype(np.float32)}

    numbers("conv_transpose", model, path, os.path.join(tmp, "ct.rxa"), tmp,
            [(2, 3, 5), (1, 7, 4), (3, 1, 1)], inputs)
    text = run([RELAXC, "print", path, "--after", "parse"]).stdout
    check(text.count("R.nn.conv2d_transpose(") == 1 and text.count("R.nn.conv3d_transpose(") == 1
          and text.count("R.matmul(") == 3 and text.count("R.nn.conv2d(") == 2,
          "conv_transpose: kernel == stride imports as 3 matmuls, the 1-d and 2-d general ones "
          "as conv2d + pixel shuffle, the 3-d and grouped ones stay", text[-3000:])


class OneIndex(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.qkv = torch.nn.Linear(8, 24)

    def forward(s, x):
        b, n, _ = x.shape
        qkv = s.qkv(x).reshape(b, n, 3, 2, 4).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(q @ k.transpose(-2, -1), -1) @ v
        return a, x[:, -1], x[:, [2]]


def one_index(tmp):
    model = OneIndex().eval()
    path = os.path.join(tmp, "one_index.onnx")
    export(model, (torch.randn(2, 5, 8),), ["x"], {"x": {0: "b"}}, path, 17)
    rng = np.random.default_rng(5)

    def inputs(b):
        return {"x": rng.standard_normal((b, 5, 8)).astype(np.float32)}

    numbers("one_index", model, path, os.path.join(tmp, "oi.rxa"), tmp, [(2,), (1,), (3,)], inputs)
    text = run([RELAXC, "print", path, "--after", "parse"]).stdout
    check("R.take(" not in text and text.count("R.strided_slice(") == 5,
          "one_index: 5 constant-index Gathers import as strided_slice, no take", text[-3000:])


class Upsample(torch.nn.Module):
    def __init__(s, frac):
        super().__init__()
        s.frac = frac
        s.up = torch.nn.Upsample(scale_factor=2, mode="nearest")

    def forward(s, x):
        y = torch.nn.functional.interpolate(x, scale_factor=3, mode="nearest")
        if s.frac:
            return torch.nn.functional.interpolate(x, scale_factor=1.5, mode="nearest")
        return torch.cat([s.up(x), x.repeat(1, 1, 2, 2)], 1), y


def upsample(tmp):
    rng = np.random.default_rng(6)

    def inputs(b, h, w):
        return {"x": rng.standard_normal((b, 3, h, w)).astype(np.float32)}

    for frac in (False, True):
        model = Upsample(frac).eval()
        path = os.path.join(tmp, "upsample_%d.onnx" % frac)
        # a non-integer scale at symbolic extents: floor(D * 1.5) as (D * 3) // 2 (odd
        # extents 5, 3 and 7 round down; refused at import before)
        export(model, (torch.randn(1, 3, 4, 6),), ["x"], {"x": {0: "b", 2: "h", 3: "w"}}, path, 17)
        what = "upsample" + (" 1.5" if frac else "")
        numbers(what, model, path, os.path.join(tmp, "up.rxa"), tmp,
                [(1, 4, 6), (2, 5, 3), (1, 1, 7)], inputs)
        # the loops (a GPU target's form; the cpu runs rt.resize2d, below)
        text = run([RELAXC, "print", path, "--after", "legalize", "--target", "vulkan"]).stdout
        if frac:
            check("floor(" in text, "upsample 1.5: the float coordinate's floor stays", text[-3000:])
        else:
            check("floor(" not in text and "// 2" in text and "// 3" in text,
                  "upsample: nearest x2 and x3 index by integer division", text[-3000:])
        text = run([RELAXC, "print", path, "--after", "legalize"]).stdout
        check(text.count('R.call_dps_library("rt.resize2d"') == (1 if frac else 2),
              "%s: the cpu resizes with rt.resize2d" % what, text[-3000:])


class YoloHead(torch.nn.Module):
    def forward(s, p3, p4, p5):
        y = torch.cat([p.flatten(2) for p in (p3, p4, p5)], 2).permute(0, 2, 1).sigmoid()
        return y, torch.tanh(p4.reshape(p4.shape[0], -1))


def yolo_head(tmp):
    model = YoloHead().eval()
    path = os.path.join(tmp, "yolo_head.onnx")
    args = (torch.randn(2, 7, 4, 4), torch.randn(2, 7, 2, 2), torch.randn(2, 7, 1, 1))
    export(model, args, ["p3", "p4", "p5"], {n: {0: "b"} for n in ("p3", "p4", "p5")}, path, 17)
    rng = np.random.default_rng(7)

    def inputs(b):
        return {n: rng.standard_normal((b, 7, h, h)).astype(np.float32)
                for n, h in (("p3", 4), ("p4", 2), ("p5", 1))}

    numbers("yolo_head", model, path, os.path.join(tmp, "yh.rxa"), tmp, [(2,), (1,), (3,)], inputs)
    text = run([RELAXC, "print", path, "--after", "simplify"]).stdout
    check(text.count("R.sigmoid(") == 3 and text.count("R.tanh(p4)") == 1,
          "yolo_head: the sigmoid applies to each map, the tanh before the reshape", text[-3000:])


def main():
    with tempfile.TemporaryDirectory(prefix="rx_exported_") as tmp:
        for opset in (14, 17):
            repeat_kv(tmp, opset)
        repeat_interleave(tmp)
        rms_norm(tmp)
        masked_select(tmp)
        float_range(tmp)
        conv_transpose(tmp)
        one_index(tmp)
        upsample(tmp)
        yolo_head(tmp)
    print("%d failure(s)%s" % (len(FAILED), "".join("\n  " + f for f in FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
