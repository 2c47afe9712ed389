#!/usr/bin/python3
"""bench_ops.py — single ONNX operators that models hit, timed by relax-run beside ONNX
Runtime (onnxruntime-node, CPU) on the same .onnx file, same inputs, same run, 2 threads:

  topk_k5       TopK k=5 of (16, 32000) f32 along the last axis (a sampling head)
  topk_k1000    TopK k=1000 of (16, 32000)
  sort_1024     TopK k=1024 of (256, 1024): a whole-axis sort (torch.sort's export)
  sort_axis0    TopK k=4096 of (4096, 64) along axis 0 (strided rows)
  cumsum_last   CumSum of (256, 1000) f32 along the last axis
  cumsum_rev    CumSum reverse exclusive of (256, 1000) along the last axis
  cumsum_first  CumSum of (1000, 1024) f32 along axis 0
  cumsum_long   CumSum of (1, 2^22) f32 (one long row)
  groupnorm     PyTorch's GroupNorm(32, 256) export form on (2, 256, h, w) with a
                dynamic h and w, at 64x64 (Reshape + InstanceNormalization + Reshape +
                Mul + Add)
  resize_*      Resize x2 of (1, 64, 128, 128) f32: bilinear half_pixel, align_corners,
                pytorch_half_pixel, asymmetric; nearest asymmetric floor, half_pixel
                round_prefer_floor
  qdyn_mlp      a dynamically quantized MLP (quantize_dynamic's form: DynamicQuantizeLinear,
                MatMulInteger with int8 weights, Cast, scales, bias) 128 x 768 x 3072 x 768,
                and qdyn_mlp_m1 at one row
  qdq_matmul    static quantization's QDQ form of (128, 768) @ (768, 3072), per-column
                int8 weight scales
  qdyn_encoder  a BERT-base encoder layer (768, 12 heads, 3072) on 128 tokens as
                quantize_dynamic writes it: its six Linears int8 (MatMulInteger), the
                attention's products, softmax, LayerNorms and GELU in f32. Compared
                with ORT within 0.05: the f32 ops between the products (attention,
                LayerNorm, GELU) differ from ORT's in the last bits and the
                DynamicQuantizeLinear after them rounds a few values
                to the neighbouring step (648 of 98304 outputs off by up to 0.015;
                equal to main's build bit for bit)

  qdq_i8_resblock  the QDQ ResNet block with symmetric int8 activations (i8, zero point
                0) and per-channel int8 weights
  qlinear_dwnet QLinearConv depthwise 3x3 (group = channels), 1x1, depthwise stride 2 on
                (1, 96, 56, 56)
  qlinear_matmul_chain  QLinearMatMul 128 x 768 -> 3072 -> 768 -> 768 (the QOperator MLP)
  qdq_ops       QDQ around MaxPool, Concat, Add and GlobalAveragePool between QDQ convs

Each prints one JSON line: relax_ms (this build), base_ms (--base-relaxc /
--base-relax-run: another build, e.g. main's, or null when it cannot build or run the
case), ort_ms (medians of --repeat calls), relax/ORT, base/ORT, the output's GB/s of
traffic (input read + output written) for relax, and whether relax's first output
equals ORT's (values within rtol 1e-5 / atol 1e-4 of their magnitude: ORT sums a long
CumSum row sequentially in f32, 4e-5 of it off on 2^22 elements, where relax-run is
within 2e-6; the first output only: TopK's values). The builds run interleaved: relax, base, ORT per round, --rounds rounds,
medians over all calls.

  bench_ops.py [--cases topk_k5,...] [--repeat R] [--rounds N] [--threads 2]
               [--relaxc P] [--relax-run P] [--base-relaxc P] [--base-relax-run P]
               [--ort-dir DIR]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

import rxbench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
import quant_models  # noqa: E402

F = TensorProto.FLOAT


def model(nodes, ins, outs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", ins, outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def topk(shape, k, axis):
    kc = helper.make_tensor("k", TensorProto.INT64, [1], [k])
    n = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis)
    return model([n], [vi("x", shape)], [vi("v", None), vi("i", None, TensorProto.INT64)], [kc])


def cumsum(shape, axis, exclusive=0, reverse=0):
    ax = helper.make_tensor("ax", TensorProto.INT64, [], [axis])
    n = helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=exclusive, reverse=reverse)
    return model([n], [vi("x", shape)], [vi("y", None)], [ax])


def groupnorm(c, groups):
    """torch.nn.GroupNorm(groups, c) as torch.onnx.export (opset 17) writes it."""
    import torch
    import warnings

    class GN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gn = torch.nn.GroupNorm(groups, c)
            torch.nn.init.normal_(self.gn.weight)
            torch.nn.init.normal_(self.gn.bias)

        def forward(self, x):
            return self.gn(x)

    path = tempfile.mktemp(suffix=".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(GN().eval(), (torch.randn(2, c, 8, 8),), path, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {2: "h", 3: "w"}},
                          opset_version=17)
    m = onnx.load(path)
    os.unlink(path)
    return m


def resize(shape, mode, ctm, nearest_mode="round_prefer_floor"):
    sc = helper.make_tensor("scales", F, [4], [1, 1, 2, 2])
    roi = helper.make_tensor("roi", F, [0], [])
    n = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode=mode,
                         coordinate_transformation_mode=ctm, nearest_mode=nearest_mode)
    return model([n], [vi("x", shape)], [vi("y", None)], [sc, roi], opset=13)


def cases():
    rn = np.random.default_rng(0)

    def x(*s):
        return rn.standard_normal(s).astype(np.float32)
    big = (1, 64, 128, 128)
    return {
        "topk_k5": (topk([16, 32000], 5, -1), x(16, 32000)),
        "topk_k1000": (topk([16, 32000], 1000, -1), x(16, 32000)),
        "sort_1024": (topk([256, 1024], 1024, -1), x(256, 1024)),
        "sort_axis0": (topk([4096, 64], 4096, 0), x(4096, 64)),
        "cumsum_last": (cumsum([256, 1000], 1), x(256, 1000)),
        "cumsum_rev": (cumsum([256, 1000], 1, 1, 1), x(256, 1000)),
        "cumsum_first": (cumsum([1000, 1024], 0), x(1000, 1024)),
        "cumsum_long": (cumsum([1, 1 << 22], 1), x(1, 1 << 22)),
        "groupnorm": (lambda: groupnorm(256, 32), x(2, 256, 64, 64)),
        "resize_linear_half_pixel": (resize(list(big), "linear", "half_pixel"), x(*big)),
        "resize_linear_align_corners": (resize(list(big), "linear", "align_corners"), x(*big)),
        "resize_linear_pytorch_half_pixel": (resize(list(big), "linear", "pytorch_half_pixel"), x(*big)),
        "resize_linear_asymmetric": (resize(list(big), "linear", "asymmetric"), x(*big)),
        "resize_nearest_asymmetric_floor": (resize(list(big), "nearest", "asymmetric", "floor"), x(*big)),
        "resize_nearest_half_pixel": (resize(list(big), "nearest", "half_pixel"), x(*big)),
        "qdyn_mlp": (quant_models.dynamic_mlp(np.random.default_rng(1), 128, 768, 3072)[0],
                     x(128, 768)),
        "qdyn_mlp_m1": (quant_models.dynamic_mlp(np.random.default_rng(1), 1, 768, 3072)[0],
                        x(1, 768)),
        "qdq_matmul": (quant_models.qdq_matmul(np.random.default_rng(2), 128, 768, 3072)[0],
                       x(128, 768)),
        "qdyn_encoder": (quant_models.dynamic_encoder(np.random.default_rng(3), 128),
                         x(1, 128, 768), 0.05),
        "qdq_resblock": (quant_models.qdq_resblock(np.random.default_rng(4)),
                         np.abs(x(1, 64, 56, 56)), 0.1),
        "qlinear_convnet": (quant_models.qlinear_convnet(np.random.default_rng(5)),
                            np.abs(x(1, 64, 56, 56)), 0.1),
        "qdyn_convnet": (quant_models.qdyn_convnet(np.random.default_rng(6)), x(1, 64, 56, 56), 0.1),
        "qdq_resnet18": (lambda: quant_models.qdq_resnet18(np.random.default_rng(7)),
                         np.abs(x(1, 3, 224, 224)), 0.5),
        "qdq_mbv2": (quant_models.qdq_mbv2(np.random.default_rng(8)), x(1, 32, 112, 112), 0.5),
        "qdq_i8_resblock": (quant_models.qdq_i8_resblock(np.random.default_rng(9)), x(1, 64, 56, 56), 0.1),
        "qlinear_dwnet": (quant_models.qlinear_dwnet(np.random.default_rng(10)),
                          np.abs(x(1, 96, 56, 56)), 0.1),
        "qlinear_matmul_chain": (quant_models.qlinear_matmul_chain(np.random.default_rng(11)),
                                 x(128, 768), 0.1),
        "qdq_ops": (quant_models.qdq_ops(np.random.default_rng(12)), np.abs(x(1, 64, 56, 56)), 0.1),
    }


def relax_time(relaxc, relax_run, onnx_path, work, tag, xin, repeat, threads):
    """(median ms, the outputs) of one build, or (None, error) when it cannot."""
    rxa = os.path.join(work, tag + ".rxa")
    if not os.path.exists(rxa):
        p = subprocess.run([relaxc, "build", onnx_path, "-o", rxa], capture_output=True, text=True)
        if p.returncode:
            return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "build failed"
    out = os.path.join(work, tag + "_out")
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([relax_run, rxa, "--bench", "--repeat", str(repeat), "--warmup", "2",
                        "--threads", str(threads), "--in", "x=" + xin, "--out-dir", out],
                       capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip()[-300:]
    import json
    return json.loads(p.stdout.strip().splitlines()[-1])["median_ms"], rxbench.read_outputs(out)


def main():
    ap = rxbench.vs_ort_args(argparse.ArgumentParser(), repeat=20)
    ap.add_argument("--cases", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base-relaxc", default="/work/main/build/bin/relaxc")
    ap.add_argument("--base-relax-run", default="/work/main/build/bin/relax-run")
    a = ap.parse_args()
    all_cases = cases()
    names = [c for c in a.cases.split(",") if c] or list(all_cases)
    ort = rxbench.have_ort(a.ort_dir)
    note, warn = rxbench.load_note()
    if warn:
        print(warn, file=sys.stderr)
    lines, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            m, xv = all_cases[name][:2]
            atol = all_cases[name][2] if len(all_cases[name]) > 2 else None
            if callable(m):
                m = m()
            work = os.path.join(tmp, name)
            os.makedirs(work)
            path = os.path.join(work, "m.onnx")
            onnx.save(m, path)
            xin = os.path.join(work, "x.npy")
            np.save(xin, xv)
            t = {"relax": [], "base": [], "ort": []}
            got = base_err = ort_out = None
            for _ in range(a.rounds):
                ms, res = relax_time(a.relaxc, a.relax_run, path, work, "relax", xin, a.repeat, a.threads)
                if ms is None:
                    failed.append("%s: %s" % (name, res))
                    break
                t["relax"].append(ms)
                got = res
                ms, res = relax_time(a.base_relaxc, a.base_relax_run, path, work, "base", xin,
                                     a.repeat, a.threads)
                if ms is None:
                    base_err = res
                else:
                    t["base"].append(ms)
                if ort:
                    line, ort_out = rxbench.ort_run(a.ort_dir, path, {"x": xin}, [m.graph.output[0].name],
                                                    a.threads, 2, a.repeat, os.path.join(work, "ort"))
                    t["ort"].append(line["median_ms"])
            if not t["relax"]:
                continue
            med = {k: (statistics.median(v) if v else None) for k, v in t.items()}
            same = None
            if ort_out is not None:
                g = got[0].astype(np.float32)
                tol = atol if atol is not None else 1e-4 * (np.abs(ort_out).max() + 1)
                same = bool(g.shape == ort_out.shape and np.allclose(g, ort_out, rtol=1e-5, atol=tol))
                if not same:
                    failed.append("%s: relax's output differs from ORT's" % name)
            gbs = (xv.nbytes + got[0].nbytes) / (med["relax"] * 1e-3) / 1e9
            line = {"case": name, "relax_ms": round(med["relax"], 4),
                    "base_ms": round(med["base"], 4) if med["base"] else None,
                    "ort_ms": round(med["ort"], 4) if med["ort"] else None,
                    "relax/ort": round(med["relax"] / med["ort"], 3) if med["ort"] else None,
                    "base/ort": round(med["base"] / med["ort"], 3) if med["ort"] and med["base"] else None,
                    "relax_GBps": round(gbs, 2), "equal_ort": same, "threads": a.threads}
            if base_err:
                line["base_error"] = base_err[:200]
            line.update(note)
            print(rxbench.table(["case", "relax ms", "base ms", "ort ms", "relax/ort", "base/ort"],
                                [[name, str(line["relax_ms"]), str(line["base_ms"]), str(line["ort_ms"]),
                                  str(line["relax/ort"]), str(line["base/ort"])]]), file=sys.stderr)
            lines.append(line)
    return rxbench.finish("bench_ops", lines, failed)


if __name__ == "__main__":
    sys.exit(main())
