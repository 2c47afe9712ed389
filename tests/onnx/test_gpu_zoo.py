#!/usr/bin/python3
"""test_gpu_zoo.py — models nobody here wrote (tests/onnx/zoo_models*.py, small sizes) on
the GPU targets: exported by torch.onnx.export with their dynamic axes, built by relaxc
(O2) for `--target opencl`, `vulkan` and `cuda`; the opencl and vulkan artifacts run with
relax-run on this host (PoCL, lavapipe) at the case's first size and every output is
compared with PyTorch's (floats rtol 1e-3, atol 1e-3: GPU kernels reduce in another
order; integers exactly); the cuda build must compile its PTX (NVRTC), nothing runs.
Then quantize_static's QDQ ResNet block (QUANT; with --all every quant_models.py
builder, QUANT_ALL) on each target against the cpu target.

    test_gpu_zoo.py BIN_DIR [--subset | --all | NAME,NAME...] [--targets opencl,vulkan,cuda]
                            [--modules zoo_models,zoo_models2,...] [--jobs N]

--subset (the default; ctest gpu_zoo): a representative handful (SUBSET: attention with
masks, convolutions, norms, gathers and scatters, int outputs, the argument limits),
about 40 s of CPU on 2 cores in a release build. --all: every case of every
module (the sweep of docs/gpu.md "Models nobody here wrote"; minutes). One line per
(model, target): PASS, FAIL with the reason (export, build, run or the max error), or
SKIP with the reason a target refuses a model by design.
Exit status: 1 on any FAIL, else 0.
"""
import importlib
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_models  # noqa: E402
import test_torch_zoo as tz  # noqa: E402  (its model_of, compare and run)

MODULES = ["zoo_models", "zoo_models2", "zoo_models3", "zoo_models4", "zoo_models5", "zoo_models6",
           "zoo_models7"]
# (module, case): timm's attention (qkv unbind, a padding mask, GELU, LayerNorm); a CNN
# with BatchNorm, hard-swish and squeeze-excite; top-k / cumsum / argmax heads (int
# outputs); gathers and scatters; Swin's shifted-window mask (nine scatter_nd: FuseOps'
# argument limit on vulkan); GCN's scatter of degrees (18 buffers: 4-byte offsets); PVT
# v2's spatial-reduction attention (a matmul row count its launch record cannot spell
# with the few-row test: its build failed on every GPU target).
SUBSET = [("zoo_models", "mobilenetv3"), ("zoo_models", "heads"), ("zoo_models2", "gather_scatter"),
          ("zoo_models2", "swin_stage"), ("zoo_models3", "gcn"), ("zoo_models5", "enc_qkv_unbind"),
          ("zoo_models7", "pvt_v2")]
# quantize_static's QDQ ResNet block (tests/onnx/quant_models.py) at 32 channels on 8 x 8:
# 20 buffers in its fused conv kernels (push constants), an i32 accumulator FuseTIR keeps
# local (one work-item ran 590k iterations: garbage on lavapipe). Its reference is the
# cpu target's output (integer products): equal but for float rounding of the dynamic
# forms' f32 parts (QATOL, far below one output step, 0.04; OpenCL kernels that round to
# integers do not contract a*b+c into fma: with fma ~1% of a QDQ block's outputs landed
# one step away).
QUANT = [("qdq_resblock", dict(c=32, hw=8, n=1), (1, 32, 8, 8))]
# --all: every builder of quant_models.py at small sizes (QDQ, QLinear* and dynamic forms).
QUANT_ALL = QUANT + [("dynamic_mlp", dict(m=4, k=64, n=96), (4, 64)),
                     ("qdq_matmul", dict(m=4, k=64, n=96), (4, 64)),
                     ("dynamic_encoder", dict(s=8, d=64, heads=4, ff=128), (1, 8, 64)),
                     ("qlinear_convnet", dict(c=16, hw=8), (1, 16, 8, 8)),
                     ("qdyn_convnet", dict(c=16, hw=8), (1, 16, 8, 8)),
                     ("qdq_resnet18", dict(hw=32, classes=10), (1, 3, 32, 32)),
                     ("qdq_mbv2", dict(hw=16, c=8), (1, 8, 16, 16)),
                     ("qdq_i8_resblock", dict(c=16, hw=8), (1, 16, 8, 8)),
                     ("qlinear_dwnet", dict(c=16, hw=8), (1, 16, 8, 8)),
                     ("qlinear_matmul_chain", dict(m=4, d=64, ff=96), (4, 64)),
                     ("qdq_ops", dict(c=16, hw=8), (1, 16, 8, 8))]
RUN = ("opencl", "vulkan")
QATOL = 1e-4
RTOL, ATOL = 1e-3, 1e-3


def parse(argv):
    opts = {"bin": None, "names": None, "all": False, "targets": ["opencl", "vulkan", "cuda"],
            "modules": MODULES, "keep": None}
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--targets", "--modules", "--keep"):
            v = argv[i + 1]
            i += 1
            if a == "--keep":
                opts["keep"] = v
            else:
                opts[a[2:]] = v.split(",")
        elif a == "--all":
            opts["all"] = True
        elif a == "--subset":
            opts["all"] = False
        else:
            rest.append(a)
        i += 1
    opts["bin"] = rest[0] if rest else "build/bin"
    if len(rest) > 1:
        opts["names"] = rest[1].split(",")
    return opts


def build_env(target):
    """The environment of relaxc for target: for cuda LeakSanitizer's exit-time scan off,
    as tests/e2e/test_cuda_e2e.py's nvrtc_env (its tracer crashes on NVRTC's dynamic TLS,
    "Tracer caught signal 11", for some kernel sources, e.g. zoo2:gather_scatter); the
    same compiler code is leak-checked by the opencl and vulkan builds."""
    env = dict(os.environ)
    if target == "cuda":
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][-300:] if lines else ""


def one(opts, tmp, mod, name, case, results):
    model = tz.model_of(case)
    opset = case.opset[0] if isinstance(case.opset, list) else case.opset
    path = os.path.join(tmp, "%s.onnx" % name)
    tag = "%s:%s" % (mod.replace("zoo_models", "zoo") or "zoo", name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, case.inputs(*case.sizes[0]), path, input_names=case.names,
                              output_names=case.outputs, dynamic_axes=case.dynamic, opset_version=opset)
        except Exception as e:  # noqa: BLE001  (the exporter's failure is not a target's)
            print("SKIP %s export: %s" % (tag, str(e)[:200]), flush=True)
            return
    torch.manual_seed(10)
    xs = case.inputs(*case.sizes[0])
    with torch.no_grad():
        want = model(*xs)
    want = want if isinstance(want, tuple) else (want,)
    for t in opts["targets"]:
        rxa = os.path.join(tmp, "%s_%s.rxa" % (name, t))
        p = subprocess.run([os.path.join(opts["bin"], "relaxc"), "build", path, "-o", rxa,
                            "--target", t], capture_output=True, text=True, timeout=900, env=build_env(t))
        if p.returncode:
            results.append((tag, t, "FAIL", "build: " + last_line(p.stderr)))
        elif t not in RUN:
            results.append((tag, t, "PASS", "builds (PTX compiled)" if t == "cuda" else "builds"))
        else:
            got, p = tz.run(rxa, case.names, xs, tmp)
            err = ("run: " + last_line(p.stderr)) if got is None else tz.compare(got, want, RTOL, ATOL)
            results.append((tag, t, "FAIL" if err else "PASS", err))
        if opts["keep"] and results[-1][2] == "FAIL":
            os.makedirs(opts["keep"], exist_ok=True)
            subprocess.run(["cp", path, os.path.join(opts["keep"], "%s_%s.onnx" % (mod, name))])
        print("%s %s %s %s" % (results[-1][2], tag, t, results[-1][3]), flush=True)


def quant(opts, tmp, results):
    for name, kw, shape in (QUANT_ALL if opts["all"] else QUANT):
        path = os.path.join(tmp, name + ".onnx")
        r = getattr(quant_models, name)(np.random.default_rng(0), **kw)
        onnx.save(r[0] if isinstance(r, tuple) else r, path)
        x = torch.from_numpy(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
        ref = None
        for t in ["cpu"] + opts["targets"]:
            rxa = os.path.join(tmp, "%s_%s.rxa" % (name, t))
            p = subprocess.run([os.path.join(opts["bin"], "relaxc"), "build", path, "-o", rxa, "--target", t],
                               capture_output=True, text=True, timeout=900, env=build_env(t))
            tag = "quant:" + name
            if p.returncode:
                res = (tag, t, "FAIL", "build: " + last_line(p.stderr))
            elif t == "cuda":
                res = (tag, t, "PASS", "builds (PTX compiled)")
            else:
                got, p = tz.run(rxa, ["x"], [x], tmp)
                if t == "cpu":
                    ref = got
                    continue
                if got is None or ref is None:
                    res = (tag, t, "FAIL", "run: " + last_line(p.stderr) if got is None else "no cpu reference")
                else:
                    d = float(np.abs(got[0].astype(np.float64) - ref[0]).max())
                    res = (tag, t, "PASS" if d <= QATOL else "FAIL", "max abs error %.3g vs cpu" % d)
            results.append(res)
            print("%s %s %s %s" % (res[2], res[0], res[1], res[3]), flush=True)


def main():
    opts = parse(sys.argv[1:])
    tz.BIN = opts["bin"]
    torch.set_num_threads(2)
    selected = []
    for mod in opts["modules"]:
        cases = importlib.import_module(mod).cases()
        for name, case in cases.items():
            if opts["names"] is not None:
                if name not in opts["names"]:
                    continue
            elif not opts["all"] and (mod, name) not in SUBSET:
                continue
            selected.append((mod, name, case))
    results = []
    with tempfile.TemporaryDirectory(prefix="gpu-zoo-") as tmp:
        for mod, name, case in selected:
            one(opts, tmp, mod, name, case, results)
        if opts["names"] is None:
            quant(opts, tmp, results)
    for t in opts["targets"]:
        r = [x for x in results if x[1] == t]
        print("%s: %d of %d pass" % (t, sum(x[2] == "PASS" for x in r), len(r)))
    return 1 if any(x[2] == "FAIL" for x in results) else 0


if __name__ == "__main__":
    sys.exit(main())
