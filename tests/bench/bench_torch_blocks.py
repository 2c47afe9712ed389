#!/usr/bin/python3
"""bench_torch_blocks.py — blocks as popular model code writes them (the classes of
tests/onnx/test_torch_blocks.py at realistic sizes), exported by torch.onnx.export,
built by relaxc (O2) and timed by relax-run beside ONNX Runtime (onnxruntime-node, CPU,
on the same .onnx file) and PyTorch eager, same inputs, same run, 2 threads each.

  gpt2      Hugging Face GPT-2 block: d 768, 12 heads, s 128 (Conv1D addmm, the mask
            buffer sliced by the sequence, tanh GELU written with pow)
  llama     Hugging Face Llama block: d 1024, 16 heads, 4 k/v heads, intermediate 2816,
            s 128 (rotary, repeat_kv, RMSNorm with casts, SiLU MLP)
  vit       ViT-S block: d 384, patch 16, 224x224 image (patch Conv2d, class token,
            nn.MultiheadAttention, Linear head)
  t5        T5-style attention: d 512, 8 heads, 8 buckets, s 128
  zoo:NAME  a model of tests/onnx/zoo_models.py at its bench size (Case.big): bert
            (d 768, 1 layer, b 2, s 128, token types, padded attention mask),
            distilbert, roberta_emb, convnext (dim 96, 224x224), mobilenetv3,
            efficientnet, tcn (4 levels of 64, t 1024, b 8), dlrm (b 2048), autoencoder
            (256x256), interp_head, mha_pad, einsum_attn, gru_masked, heads, whisper_enc
            (t 1500), conformer_conv, lstm_state, detr_queries, pos_repeat,
            traced_split, pad_masks, cdist, sorts;
  zoo2:NAME a model of tests/onnx/zoo_models2.py at its bench size (at its last opset):
            torch_encoder (d 512, 2 layers, s 128), torch_decoder, mha_masks, gpt2_past
            (d 768, decode of 1 token over 256 cached, b 4), t5_decoder_bias, swin_stage,
            resnet50 (stem + 2 stages, 224), resnext50, densenet, squeezenet, shufflenet,
            unet (256), yolo_detect (640), seq2seq, rotary, norms, gather_scatter,
            arcface, wav2vec2_features (32000 samples), clip_text, mlp_mixer ("zoo2":
            all of them; not in the default set); several inputs and outputs, every
            output compared (integer ones exactly by relax-run; ORT's float ones only: its
            runner writes every output as f32; it reads f32, i64, i32 and bool inputs)
  zoo3:NAME a model of tests/onnx/zoo_models3.py at its bench size (at its last opset):
            hf_bert (d 768, b 2, s 128, opset 17 LayerNormalization), neox, falcon,
            mistral, phi (d 1024, s 128), t5_encoder, bloom, deberta, deit (ViT-S/16
            224, b 4), dinov2, convnext_v2, mobilevit, detr_decoder (100 queries over
            25x26), bilstm_tagger / packed_gru (pack_padded_sequence, b 8, s 64), crnn,
            pointnet (1024 points), gcn / gat (2000 nodes, 10000 edges), vae,
            diffusion_unet, scripted, seq_cls_pool, resnest, conv_tasnet, style_transfer
            (256), espcn, yolov8_head (640), perceiver, conformer_relpos (d 256, t 256),
            swinv2_attn, segformer (512), w2v2_posconv (d 768, k 128), deform_attn
            ("zoo3": all of them; not in the default set)
  zoo4:NAME a model of tests/onnx/zoo_models4.py at its bench size (at its last opset):
            old_forms, tf_mobilenet / tf_resnet (NHWC, 224), llama_decode (d 1024, 1
            token over 256 cached, b 4), bart_decode, sam_window (d 768, 64x64, window
            14), vae_decoder, deeplabv3 / pspnet / hrnet_fuse (segmentation, 192-256),
            inception_v3, mobilenetv2, xception, regnety, bifpn (512), retina_post,
            fcos_post, maskrcnn_heads (100 RoIs), tabnet / deepfm / wide_deep (b 1024-2048),
            rwkv, mamba, levit_attn ("zoo4": all of them; not in the default set)
  zoo5:NAME a model of tests/onnx/zoo_models5.py at its bench size (at its last opset):
            enc_torch / enc_mha_seqfirst / enc_qkv_unbind / enc_bmm / enc_einsum (one
            pre-LN encoder layer five ways: d 512, 8 heads, b 2, s 128), albert (opset
            11), electra, gemma (d 1024, s 128), clip_vision (224, b 4), xcit, dit, mae,
            ghostnet, yolov5_backbone (640), poolformer (S12, 224), patchtst, linear_attn,
            moe, sage_gin (5000 nodes, 50000 edges), centernet (512), dgcnn (1024 points),
            vqvae, hifigan, ecapa, quartznet, r2plus1d, nerf (1024 rays x 64), realnvp,
            dcn_v2, din, ft_transformer, nbeats, capsnet ("zoo5": all of them; not in the
            default set)
  zoo6:NAME a model of tests/onnx/zoo_models6.py at its bench size (at its last opset):
            stn / stn_grid (b 32, 128x132), frames_mel / conv_mfcc (3 s at 16 kHz, b 4),
            topp_head (32000 words, b 16), gptj (d 1024, s 128), performer (d 512, s
            1024), kan, siren (16384 points), superglue_ot (512 x 480 points, 20
            iterations), tft, gmlp, resmlp (224), simple_vit (224), maxvit_attn (56x63),
            resamplers, involution, repvgg / mobileone / efficientnetv2 (224),
            stylegan2 / stylegan2_unfused, real_esrgan, nafnet (256), cbam, sknet,
            wavenet (4000 steps), convlstm, yolox_decode (640), bit_stdconv, unet3d
            (64x68x72 volume) ("zoo6": all of them; not in the default set)
  zoo7:NAME a model of tests/onnx/zoo_models7.py at its bench size (at its last opset):
            rtdetr_encoder (80x80 / 40x40 / 20x20 levels), edgenext / twins / pvt_v2
            (224), beit (224, b 4), conformer_block (d 256, t 400), tacotron_attn (b 16,
            200 steps), length_regulator, retnet / mlstm (d 512, s 256), informer_prob,
            deepar, mqa_expand / mqa_broadcast / mqa_tile (d 1024, s 256), gumbel_head,
            top2_router, c2f_net (640), pp_lcnet, convblock_bn / _folded / _ln2d / _gn1
            (224), coatnet, efficientvit, van, film, point_transformer (1024 points),
            hubert_feat (32000 samples), nerf_posenc (65536 points), bilstm_crf,
            logsumexp_forms, spherical_points, act_zoo, hash_embed (512 bags of 64),
            bag_offsets, pillar_scatter ("zoo7": all of them; not in the default set)
  zoo8:NAME a model of tests/onnx/zoo_models8.py at its bench size (at its last opset):
            qwen2_expand / qwen2_repeat / qwen2_grouped (Qwen2-0.5B's layer: d 896, 14
            heads, 2 k/v heads, s 128), phi3, stablelm (d 1024, s 128), opt, gemma2, gptneo
            (2 layers, s 128), cait, t2t_vit, cvt, mobilevitv2 (224-256), dlinear_repeat /
            dlinear_pad (336 steps x 321 series, b 32), tsmixer, itransformer, xdeepfm,
            autoint, two_tower (b 1024), schnet, egnn (b 16, 29 atoms), ops_a, ops_b, ops_c,
            se_resnext, res2net, convmixer, repvit, mobilenetv4, hornet, focalnet,
            efficientformer (224), segnet / segnet_ceil (256), dcgan (b 64), linknet,
            bisenet_arm (512), fpn_retina (512), ssd_decode (8732 priors), yolov7_elan (640),
            demucs (2 x 44100 samples), dccrn, encodec_rvq ("zoo8": all of them; not in the
            default set)

Each prints one JSON line: relax_ms, ort_ms, torch_ms (medians of --repeat calls after
warm-ups), relax/ORT and relax/torch (goal <= 1.0), relax_min_ms, ort_min_ms and their
ratio relax_over_ort_min (the fastest calls: steadier than medians on a loaded machine) and the max |diff| of relax's and
ORT's outputs against PyTorch's (checked: rtol 1e-3, atol 1e-4; a mismatch fails).
--quick: tiny sizes, one call each, the four blocks and zoo:bert, zoo:autoencoder
(ctest bench/torch_blocks_quick; ORT only when installed).

  bench_torch_blocks.py [--quick] [--blocks gpt2,llama,vit,t5,zoo:bert,zoo,zoo2] [--repeat R]
                        [--threads 2]
                        [--relaxc P] [--relax-run P] [--ort-dir DIR]
"""
import argparse
import json
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import rxbench

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "onnx"))


def parse_args():
    ap = rxbench.vs_ort_args(argparse.ArgumentParser(
        description="user-written blocks vs ORT and PyTorch"))
    ap.add_argument("--blocks", default="gpt2,llama,vit,t5,zoo",
                    help="names; zoo: every model of zoo_models.py, zoo:NAME one; "
                         "zoo2, zoo2:NAME: zoo_models2.py; zoo3, zoo3:NAME: zoo_models3.py; "
                         "zoo4, zoo4:NAME: zoo_models4.py; zoo5, zoo5:NAME: zoo_models5.py; "
                         "zoo6, zoo6:NAME: zoo_models6.py; zoo7, zoo7:NAME: zoo_models7.py; "
                         "zoo8, zoo8:NAME: zoo_models8.py")
    return ap.parse_args()


ARGS = parse_args()
sys.argv = [sys.argv[0], os.path.dirname(ARGS.relaxc)]  # test_torch_blocks reads BIN
import test_torch_blocks as tb  # noqa: E402  (the block classes)
import zoo_models  # noqa: E402
import zoo_models2  # noqa: E402
import zoo_models3  # noqa: E402
import zoo_models4  # noqa: E402
import zoo_models5  # noqa: E402
import zoo_models6  # noqa: E402
import zoo_models7  # noqa: E402
import zoo_models8  # noqa: E402


def blocks(quick):
    """name -> (make, inputs, input names, output names, dynamic axes, opset)."""
    def one(make, shape):
        return (make, lambda: (torch.randn(*shape),), ["x"], ["y"], None, 17)
    if quick:
        out = {"gpt2": one(lambda: tb.GPT2Block(), (2, 7, 64)),
               "llama": one(lambda: tb.LlamaBlock(), (2, 7, 64)),
               "vit": one(lambda: tb.ViTBlock(), (2, 3, 16, 16)),
               "t5": one(lambda: tb.T5Attention(), (2, 9, 32))}
    else:
        out = {"gpt2": one(lambda: tb.GPT2Block(d=768, h=12, n_ctx=1024), (1, 128, 768)),
               "llama": one(lambda: tb.LlamaBlock(d=1024, h=16, kvh=4, inter=2816),
                            (1, 128, 1024)),
               "vit": one(lambda: tb.ViTBlock(d=384, p=16, img=224), (1, 3, 224, 224)),
               "t5": one(lambda: tb.T5Attention(d=512, h=8, buckets=8), (1, 128, 512))}
    for prefix, mod in (("zoo:", zoo_models), ("zoo2:", zoo_models2), ("zoo3:", zoo_models3),
                        ("zoo4:", zoo_models4), ("zoo5:", zoo_models5), ("zoo6:", zoo_models6),
                        ("zoo7:", zoo_models7), ("zoo8:", zoo_models8)):
        for name, c in mod.cases(big=not quick).items():
            size = c.sizes[0] if quick else c.big
            out[prefix + name] = (c.make, lambda c=c, size=size: c.inputs(*size), c.names,
                                  c.outputs, c.dynamic,
                                  c.opset[-1] if isinstance(c.opset, list) else c.opset)
    return out


def wanted(name, quick):
    sel = ARGS.blocks.split(",")
    if quick and ARGS.blocks == "gpt2,llama,vit,t5,zoo":
        sel = ["gpt2", "llama", "vit", "t5", "zoo:bert", "zoo:autoencoder"]
    return name in sel or (name.startswith("zoo:") and "zoo" in sel) or \
        (name.startswith("zoo2:") and "zoo2" in sel) or (name.startswith("zoo3:") and "zoo3" in sel) or \
        (name.startswith("zoo4:") and "zoo4" in sel) or (name.startswith("zoo5:") and "zoo5" in sel) or \
        (name.startswith("zoo6:") and "zoo6" in sel) or (name.startswith("zoo7:") and "zoo7" in sel) or \
        (name.startswith("zoo8:") and "zoo8" in sel)


def max_err(got, want):
    return max([float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max())
                for g, w in zip(got, want) if g.size] or [0.0])


def same(got, want, exact_ints):
    """Every output: floats at rtol 1e-3, atol 1e-4; integers exactly (ORT's come back as
    f32: compared as floats)."""
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return False
        if w.dtype.kind in "iub" and exact_ints:
            if not np.array_equal(g.astype(w.dtype), w):
                return False
        elif not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-3, atol=1e-4):
            return False
    return True


def main():
    torch.manual_seed(0)
    torch.set_num_threads(ARGS.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(ARGS.threads),
               OPENBLAS_NUM_THREADS=str(ARGS.threads))
    ort_js = os.path.join(HERE, "bench_vs_ort_run.js")
    have_ort = rxbench.have_ort(ARGS.ort_dir)
    repeat = 1 if ARGS.quick else ARGS.repeat
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_blocks.") as tmp:
        for name, (make, inputs, names, outs, dyn, opset) in blocks(ARGS.quick).items():
            if not wanted(name, ARGS.quick):
                continue
            torch.manual_seed(0)
            model = make().eval()
            xs = inputs()
            fname = name.replace(":", "_")
            path, rxa = os.path.join(tmp, fname + ".onnx"), os.path.join(tmp, fname + ".rxa")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, xs, path, input_names=names, output_names=outs,
                                  opset_version=opset, dynamic_axes=dyn)
            ins = {}
            for n, x in zip(names, xs):
                ins[n] = os.path.join(tmp, "%s_%s.npy" % (fname, n))
                np.save(ins[n], x.numpy())
            with torch.no_grad():
                want = model(*xs)
                want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
                for _ in range(0 if ARGS.quick else 2):
                    model(*xs)
                ts = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    model(*xs)
                    ts.append((time.perf_counter() - t0) * 1e3)
            torch_ms = float(np.median(ts))
            rxbench.call([ARGS.relaxc, "build", path, "-o", rxa])
            od = os.path.join(tmp, fname + "_out")
            inargs = [a for n, f in ins.items() for a in ("--in", "%s=%s" % (n, f))]
            rxbench.call([ARGS.relax_run, rxa, "--out-dir", od, "--threads", str(ARGS.threads)] + inargs,
               env)
            got = [np.load(os.path.join(od, "out%d.npy" % k)) for k in range(len(want))]
            res = {"bench": "torch_blocks", "block": name,
                   "shape": [list(x.shape) for x in xs] if len(xs) > 1 else list(xs[0].shape),
                   "threads": ARGS.threads, "repeat": repeat, "torch_ms": round(torch_ms, 3)}
            errs = {"relax": max_err(got, want)}
            ok = same(got, want, exact_ints=True)
            if not ARGS.quick:
                r = json.loads(rxbench.call([ARGS.relax_run, rxa, "--bench", "--repeat", str(repeat),
                                   "--warmup", "2", "--threads", str(ARGS.threads)] + inargs,
                                  env).strip().splitlines()[-1])
                res["relax_ms"] = round(r["median_ms"], 3)
                res["relax_min_ms"] = round(r["min_ms"], 3)
                res["relax_over_torch"] = round(r["median_ms"] / torch_ms, 3)
            if have_ort:
                spec = os.path.join(tmp, fname + "_spec.json")
                with open(spec, "w") as f:
                    json.dump({"model": path, "inputs": ins, "outputs": outs,
                               "threads": ARGS.threads, "warmup": 0 if ARGS.quick else 2,
                               "repeat": repeat, "out_dir": os.path.join(tmp, fname + "_ort")},
                              f)
                o = json.loads(rxbench.call(["node", ort_js, ARGS.ort_dir, spec]).strip().splitlines()[-1])
                og = [np.load(os.path.join(tmp, fname + "_ort", "out%d.npy" % k))
                      for k in range(len(want))]
                fl = [k for k, w in enumerate(want) if w.dtype.kind == "f"]  # ORT's ints
                errs["ort"] = max_err([og[k] for k in fl], [want[k] for k in fl])  # as f32
                ok &= same([og[k] for k in fl], [want[k] for k in fl], exact_ints=False)
                res["ort_ms"] = round(o["median_ms"], 3)
                res["ort_min_ms"] = round(o["min_ms"], 3)
                if "relax_ms" in res:
                    res["relax_over_ort"] = round(res["relax_ms"] / o["median_ms"], 3)
                    res["relax_over_ort_min"] = round(r["min_ms"] / o["min_ms"], 3)
            res["max_abs_err"] = errs
            res["ok"] = bool(ok)
            failed |= not ok
            print(json.dumps(res), flush=True)
    print(json.dumps({"bench": "torch_blocks", "machine": {"loadavg": os.getloadavg()[0],
                                                           "cpus": os.cpu_count()}}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
