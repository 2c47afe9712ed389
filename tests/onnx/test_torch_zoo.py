#!/usr/bin/python3
"""Models nobody here wrote (tests/onnx/zoo_models.py: BERT with token types and a padded
attention mask, DistilBERT, RoBERTa's position ids, ConvNeXt, MobileNetV3, EfficientNet, a
TCN with weight_norm, DLRM, a conv autoencoder, a bilinear segmentation head,
nn.MultiheadAttention with a key padding mask, einsum attention, a masked bidirectional
GRU, top-k / cumsum / argmax heads, a Whisper encoder, a Conformer conv module, an LSTM
with initial states, DETR's queries, position ids by repeat, a traced split, padding
masks, cdist, sorts), exported by torch.onnx.export with their dynamic axes, built once by
relaxc (O2) and run at two sizes from the one artifact: every output equals PyTorch's
(floats rtol 1e-4, atol 1e-4; integers exactly). docs/onnx.md, "From PyTorch".

Regressions (each failed to import before):
* detr_queries: query_embed.weight[:, None].repeat(1, b, 1) with a dynamic batch, a Tile
  whose repeats come from Shape; pos_repeat: arange(s)[None].repeat(b, 1) and
  w.repeat(b, 2) (a repeated axis whose extent is not 1). Also built at O0.
* autoencoder (structure, relaxc print): its ConvTranspose2d(32, 16, 4, 2, 1) imports as
  a conv2d and a pixel shuffle (no nn.conv2d_transpose after parse: the gather form took
  48 ms of the model's 61); after fuse_ops no fused function holds both the
  InstanceNorm's mean and the 2x bilinear resize that reads it (dims (h - 1) // 4 * 4 +
  4 against (h - 1) // 4 * 2 + 2: the resize reads the norm's epilogue four times per
  output at four times its size, 16 evaluations per element, 24 of 32 ms).
* traced_split: x.split(x.shape[-1] // 2, -1), which the tracer exports as Split with
  constant sizes (4, 4) on the dynamic axis: the artifact runs every batch at s = 8 and
  refuses s = 12 with a match_cast error, as ONNX Runtime fails at the Split.

The second round (tests/onnx/zoo_models2.py, ctest onnx_torch_zoo2: nn.Transformer
encoder / decoder layers, GPT-2 attention with past keys and values, T5's causal bucket
bias, Swin's patch merging, ResNet-50, ResNeXt, DenseNet, SqueezeNet, ShuffleNetV2, a
U-Net, a YOLOv5 head, seq2seq with attention, rotary embeddings, norms, gather / scatter,
ArcFace, wav2vec2's feature encoder, CLIP's text tower, MLP-Mixer) runs with --module
zoo_models2; a case whose opset is a list is exported and run at each opset.

The third round (tests/onnx/zoo_models3.py, ctest onnx_torch_zoo3: HF BERT at opset 17's
LayerNormalization, GPT-NeoX, Falcon, Mistral's sliding window, Phi, T5's encoder, BLOOM's
ALiBi, DeBERTa, DeiT, ConvNeXt V2, MobileViT, a DETR decoder, a packed BiLSTM tagger and
GRU encoder, CRNN, PointNet, GCN / GAT message passing, a VAE, a diffusion U-Net, a
scripted module, HF sequence pooling, ResNeSt, Conv-TasNet, fast neural style, ESPCN, a
YOLOv8 head, Perceiver, DINOv2's interpolated positions, Conformer's rel_shift, Swin V2,
SegFormer, wav2vec2's positional conv, Deformable DETR's grid_sample) runs with --module
zoo_models3.
Regressions (each failed before): scripted (torch.jit.script) exports `if bool(y.mean() >
0)` as an If on a run-time condition (now both branches and a where), checked on inputs
taking each branch, also at O0; bilstm_tagger and packed_gru (pack_padded_sequence) need
ReduceProd(Shape) as a known size and RNN sequence_lens known only at run time.

The fourth round (tests/onnx/zoo_models4.py, ctest onnx_torch_zoo4: the opset 11-12
exporters' attribute forms, tf2onnx-style NHWC MobileNet / ResNet, Llama and BART decode
steps with past keys / values as inputs, SAM's windowed attention, the Stable Diffusion
VAE decoder, DeepLabV3's ASPP, PSPNet, HRNet's fusion, Inception V3, MobileNetV2 at opset
10, Xception, RegNetY, EfficientDet's BiFPN, RetinaNet and FCOS post-processing (TopK,
NonMaxSuppression), Mask R-CNN's heads over RoiAlign, TabNet's sparsemax, DeepFM, Wide &
Deep, RWKV-4, Mamba, LeViT) runs with --module zoo_models4.
tf_resnet / tf_mobilenet (structure, relaxc print): tf2onnx's Transpose pairs around each
Conv cancel across the ReLU / Clip / Add / Pad between them (onnx_transpose.c): at most 4
permute_dims loops after fuse_ops (the main build before it: 12 and 13).
Regressions (each failed before): maskrcnn_heads / maskrcnn_aligned (RoiAlign was not
supported); old_forms@9 / @10 (Upsample-9 / Resize-10 whose scales are sizes
divided by Shape: not constant); sam_window (its pads (ws - h % ws) % ws: a Mod of
sizes did not fold); hrnet_fuse and bifpn (a strided map's (h - 1) // 4 + 1 rows added
to an upsampled ((h - 1) // 8 + 1) * 2: two expressions no proof relates left the Add's
dims unknown; now the earlier operand's dims stand for both, and a width whose levels
differ, 20, is refused at the match_cast, as ONNX Runtime fails at the Add).

The fifth round (tests/onnx/zoo_models5.py, ctest onnx_torch_zoo5: one pre-LN encoder
layer written five ways (nn.TransformerEncoderLayer, nn.MultiheadAttention batch second,
timm's qkv unbind, fairseq's bmm, einsum with Hugging Face's additive mask), ALBERT at
opset 11, ELECTRA, Gemma, CLIP's vision tower, XCiT, DiT, MAE's random masking,
GhostNet, YOLOv5's Focus / C3 / SPPF backbone, PoolFormer, PatchTST, linear attention,
a Mixtral MoE layer, GraphSAGE / GIN, CenterNet's decode, DGCNN, VQ-VAE, HiFi-GAN,
ECAPA-TDNN, QuartzNet, R(2+1)D, NeRF's volume rendering, RealNVP, DCN-V2, DIN,
FT-Transformer, N-BEATS, CapsNet) runs with --module zoo_models5.
Regressions (each failed before; also built at O0): moe (Hugging Face Mixtral's
index_add_ exports an Expand to Shape(zeros[0:1]), a min(n, 1) extent taken as the
target: one row of each expert's update was added), nerf (z[..., 1:] - z[..., :-1]:
slice extents max(0, n - min(n, 1)) and max(0, n - 1) no proof related, unknown dims,
no build). r2plus1d (structure, relaxc print): its (1, k, k) and (t, 1, 1) Conv3d factors
import as nn.conv2d over folded axes (the convolution library; generated conv3d loops
were 36-47x ONNX Runtime), the strided 1x1x1 downsample stays nn.conv3d.

The sixth round (tests/onnx/zoo_models6.py, ctests onnx_torch_zoo6, 6b and 6c, each a
list of its names: spatial transformers with the affine grid written out two ways,
an audio front end two ways (gathered frames times DFT matrices, DFT as conv1d to MFCCs),
a top-k / top-p sampling head, GPT-J, Performer, KAN, SIREN, SuperGlue's Sinkhorn, TFT,
gMLP, ResMLP, SimpleViT, MaxViT, resamplers, involution, RepVGG, MobileOne,
EfficientNetV2, StyleGAN2's modulated conv two ways, Real-ESRGAN, NAFNet, CBAM, SKNet,
WaveNet, ConvLSTM, YOLOX's decode, BiT, a 3-d U-Net) runs with --module zoo_models6.
Regressions (each failed to build before): resamplers (F.interpolate(scale_factor=1.5,
mode="nearest") at a dynamic size: a Resize whose non-integer scale met a symbolic extent
was refused; now floor(D * 3 / 2) as (D * 3) // 2); unet3d (trilinear and nearest
Resize of a 5-d volume: only 3-d and 4-d inputs were taken; now H and W, then D).
unet3d / conv3d_forms (structure, relaxc print): a one-group Conv3d with 2-7 taps in T
imports as one nn.conv2d over the T taps folded into channels (nn.conv3d's loops took
unet3d 20 s a call at 64x68x72, ONNX Runtime 1.3 s); the grouped one stays nn.conv3d.

The seventh round (tests/onnx/zoo_models7.py, ctests onnx_torch_zoo7, 7b, 7c and 7d, each a
list of its names: RT-DETR's hybrid encoder, EdgeNeXt, Twins, PVT v2, BEiT, a Conformer
block, Tacotron 2's location-sensitive attention, FastSpeech's length regulator, RetNet,
xLSTM's mLSTM, Informer's ProbSparse attention, DeepAR, multi-query attention three ways,
Gumbel-softmax, a top-2 router, YOLOv8's C2f, PP-LCNet, a conv block four ways, CoAtNet,
EfficientViT, VAN, FiLM, Point Transformer, a HuBERT feature extractor, NeRF's positional
encoding, a BiLSTM-CRF, spherical point features, an activation zoo, EmbeddingBag two
ways, logsumexp forms, PointPillars' scatter) runs with --module zoo_models7.
Regressions (each failed to build before; also built at O0): hash_embed and bag_offsets
(nn.EmbeddingBag: mean over a 2-d input; sum, mean and per_sample_weights over offsets
with an empty bag. A Loop over the run-time bag count, now a segment mask times the
rows, onnx_bag.c). Wrong before: logsumexp_forms and bilstm_crf at its bench size
(ReduceLogSumExp was log(sum(exp(x))): inf past 88.7; now shifted by the max,
onnx_reduce.c).

The eighth round (tests/onnx/zoo_models8.py, ctests onnx_torch_zoo8, 8b, 8c, 8d and 8e, each a
list of its names: Qwen2 with repeat_kv three ways, Phi-3's fused projections, StableLM's
partial rotary, OPT's mask-derived positions, Gemma-2's soft-capping, GPT-Neo's local
attention, CaiT, T2T-ViT, CvT, MobileViTv2, DLinear two ways, TSMixer, iTransformer,
xDeepFM, AutoInt, a two-tower model, SchNet, EGNN, three operator zoos, SE-ResNeXt,
Res2Net, ConvMixer, RepViT, MobileNetV4, HorNet, FocalNet, EfficientFormer, SegNet two ways,
a DCGAN generator, LinkNet, BiSeNet, an FPN with a RetinaNet head, SSD's decode, YOLOv7's
ELAN, Demucs, DCCRN, EnCodec's residual VQ) runs with --module zoo_models8.
Regressions (each failed to build before; also built at O0): demucs (an LSTM's Y over a
symbolic T had extent max(0, T), which no proof relates to the skip it is added to: the
Conv after the Add had unknown dims), segnet and segnet_ceil (MaxPool's Indices output
needed literal H and W; now read from a padded tensor of flat offsets, onnx_pool_indices.c).

Usage: test_torch_zoo.py BIN_DIR [NAME,NAME...] [--module zoo_models2|...|zoo_models8]
"""
import importlib
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ARGV = sys.argv[1:]
MODULE = "zoo_models"
if "--module" in ARGV:
    k = ARGV.index("--module")
    MODULE = ARGV[k + 1]
    del ARGV[k:k + 2]
zoo = importlib.import_module(MODULE)
BIN = ARGV[0] if ARGV else "build/bin"
ONLY = ARGV[1].split(",") if len(ARGV) > 1 else None
O0_TOO = {"detr_queries", "pos_repeat", "traced_split", "gpt2_past", "swin_stage", "norms",
          "gather_scatter", "scripted", "bilstm_tagger", "moe", "nerf", "hash_embed", "bag_offsets",
          "demucs", "segnet", "segnet_ceil"}
failures = 0


def check(name, ok, detail=""):
    global failures
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    failures += 0 if ok else 1


def run(rxa, names, xs, tmp):
    """relax-run on xs bound by name; (outputs, process)."""
    od, argv = os.path.join(tmp, "out"), [os.path.join(BIN, "relax-run"), rxa]
    for n, x in zip(names, xs):
        f = os.path.join(tmp, n + ".npy")
        np.save(f, x.numpy())
        argv += ["--in", "%s=%s" % (n, f)]
    if os.path.isdir(od):
        for f in os.listdir(od):
            os.remove(os.path.join(od, f))
    p = subprocess.run(argv + ["--out-dir", od, "--threads", "2"], capture_output=True, text=True)
    if p.returncode:
        return None, p
    return [np.load(os.path.join(od, f)) for f in
            sorted(os.listdir(od), key=lambda f: int(f[3:-4]))], p


def compare(got, want, rtol=1e-4, atol=1e-4):
    """'' when every output matches (floats within rtol, atol), else what differs."""
    if len(got) != len(want):
        return "%d outputs, want %d" % (len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        if g.shape != w.shape:
            return "out%d shape %s, want %s" % (k, g.shape, w.shape)
        if w.dtype.kind in "iub":
            if not np.array_equal(g.astype(w.dtype), w):
                return "out%d: %d integers differ" % (k, int((g != w).sum()))
        elif not np.allclose(g, w, rtol=rtol, atol=atol):
            return "out%d max abs error %.3g" % (k, float(np.abs(g - w).max()))
    return ""


def fused_calls(text):
    """{fused function name: the loop functions it calls} of a printed module."""
    out, cur = {}, None
    for ln in text.splitlines():
        if ln.startswith("def "):
            cur = ln[4:].split("(")[0] if ln.startswith("def fused_") else None
            if cur:
                out[cur] = set()
        elif cur and "R.call_tir(@" in ln:
            out[cur].add(ln.split("R.call_tir(@")[1].split(",")[0])
    return out


def structure(name, path):
    relaxc = os.path.join(BIN, "relaxc")

    def after(p):
        return subprocess.run([relaxc, "print", path, "--after", p], capture_output=True,
                              text=True).stdout
    if name in ("tf_resnet", "tf_mobilenet"):  # the NHWC Transpose pairs cancel at import
        n = sum(ln.startswith("def permute_dims") for ln in after("fuse_ops").splitlines())
        check("%s: at most 4 permute_dims loops (the input's, the pooling's)" % name, n <= 4, str(n))
    if name == "r2plus1d":  # (1, k, k) and (t, 1, 1) factors import as 2-d convolutions
        parsed = after("parse")
        check("r2plus1d: 10 factored Conv3d import as nn.conv2d, the strided 1x1x1 as nn.conv3d",
              parsed.count("R.nn.conv2d(") == 10 and parsed.count("R.nn.conv3d(") == 1,
              "%d conv2d, %d conv3d" % (parsed.count("R.nn.conv2d("), parsed.count("R.nn.conv3d(")))
    if name in ("unet3d", "conv3d_forms"):  # T taps folded into channels: nn.conv2d
        parsed = after("parse")
        want = (0, 7) if name == "unet3d" else (1, 2)
        got = (parsed.count("R.nn.conv3d("), parsed.count("R.nn.conv2d("))
        check("%s: %d Conv3d stay nn.conv3d, %d import as nn.conv2d" % ((name,) + want), got == want, str(got))
    if name == "bag_offsets":  # mode max is not a segment sum: its Loop stays refused
        bag = torch.nn.EmbeddingBag(50, 4, mode="max")
        onnx_max = path[:-5] + "_max.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(bag, (torch.randint(0, 50, (9,)), torch.tensor([0, 4])), onnx_max,
                              input_names=["ids", "offsets"], dynamic_axes={"ids": {0: "n"}, "offsets": {0: "m"}},
                              opset_version=13)
        p = subprocess.run([relaxc, "build", onnx_max, "-o", onnx_max + ".rxa"], capture_output=True, text=True)
        check("bag_offsets: EmbeddingBag mode max is refused at its Loop",
              p.returncode != 0 and "Loop" in p.stderr and "trip count M must be known" in p.stderr,
              p.stderr.strip()[-200:])
    if name != "autoencoder":
        return
    parsed = after("parse")
    check("autoencoder: ConvTranspose2d k 4 s 2 imports as conv2d + pixel shuffle",
          "conv2d_transpose" not in parsed and parsed.count("R.nn.conv2d(") == 4)
    both = [f for f, calls in fused_calls(after("fuse_ops")).items()
            if any(c.startswith("mean") for c in calls) and
            any(c.startswith("image_resize2d") for c in calls)]
    check("autoencoder: the norm before the 2x resize is materialized", not both, str(both))


def main():
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory(prefix="torch-zoo-") as tmp:
        for name, case in zoo.cases().items():
            if ONLY and name not in ONLY:
                continue
            for opset in case.opset if isinstance(case.opset, list) else [case.opset]:
                one(tmp, name if isinstance(case.opset, int) else "%s@%d" % (name, opset),
                    name, case, opset)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


def model_of(case):
    """case's model in eval mode, seeded, its BatchNorms with non-trivial statistics."""
    torch.manual_seed(1)
    model = case.make().eval()
    for mod in model.modules():
        if isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2)
    return model


def one(tmp, tag, name, case, opset):
    """export case at opset, build, run at every size, compare."""
    model = model_of(case)
    path = os.path.join(tmp, "%s_%d.onnx" % (name, opset))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, case.inputs(*case.sizes[0]), path,
                              input_names=case.names, output_names=case.outputs,
                              dynamic_axes=case.dynamic, opset_version=opset)
        except Exception as e:  # noqa: BLE001  (the exporter's failure is the test's)
            check("%s exports" % tag, False, str(e)[:300])
            return
    structure(name, path)
    for lv in ["2", "0"] if name in O0_TOO else ["2"]:
        rxa = os.path.join(tmp, "%s_O%s.rxa" % (name, lv))
        p = subprocess.run([os.path.join(BIN, "relaxc"), "build", path, "-o", rxa,
                            "--opt-level", lv], capture_output=True, text=True)
        if p.returncode:
            check("%s O%s builds" % (tag, lv), False, p.stderr.strip()[-400:])
            continue
        for i, size in enumerate(case.sizes):
            torch.manual_seed(10 + i)
            xs = case.inputs(*size)
            with torch.no_grad():
                want = model(*xs)
            want = want if isinstance(want, tuple) else (want,)
            got, p = run(rxa, case.names, xs, tmp)
            err = p.stderr.strip()[-300:] if got is None else compare(got, want)
            check("%s O%s %s" % (tag, lv, " ".join(str(tuple(x.shape)) for x in xs)),
                  not err, err)
        if name == "traced_split":  # s = 12 against the traced sizes (4, 4)
            got, p = run(rxa, case.names, case.inputs(1, 12), tmp)
            check("traced_split O%s s 12 is refused" % lv,
                  got is None and "match_cast" in p.stderr and
                  "expected (b, 4, 8), got (1, 4, 12)" in p.stderr,
                  p.stderr.strip()[-200:])
        if name == "bifpn":  # w 20: p4 has 5 columns, the upsampled p5 2 * 3
            got, p = run(rxa, case.names, (torch.randn(1, 3, 16, 20),), tmp)
            check("bifpn O%s w 20 is refused" % lv, got is None and "match_cast" in p.stderr and
                  "got (1, 16, 4, 6)" in p.stderr, p.stderr.strip()[-200:])


if __name__ == "__main__":
    sys.exit(main())
