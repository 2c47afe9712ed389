"""prepare.py — the CUDA device check's inputs, made on a build machine (no GPU needed).

    /usr/bin/python3 tests/gpu/prepare.py BUILD_DIR OUT_DIR [--target cuda] [--only SUBSTR]

Builds every runnable case of tests/e2e/cases.json and tests/models/cases.json (the
module corpus and the Llama generator's prefill and decode at several shapes) with
BUILD_DIR's relaxc for the target at O2, generates each case's seeded inputs and its
expected outputs with the NumPy oracle (tests/e2e/relax_numpy.py, the one run_e2e.py
checks the CPU and OpenCL builds against), and writes OUT_DIR:

    manifest.json        {"target": T, "runs": [{"name", "artifact", "fn", "inputs":
                          {PARAM: FILE}, "shapes": {VAR: N}, "expected": [FILE|null],
                          "tol": [[rtol, atol]|null]}], "benches": [...]}
    rxa/*.rxa            one artifact per module
    data/RUN/*.npy       inputs and expected outputs
    include/dlpack/      DLPack's header (the device machine has no dev packages)

Cases marked gpu_skip (CPU library calls) or build_error are left out, named on stdout.
tests/gpu/check.py runs the manifest on the device machine (tests/gpu/run.sh).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
E2E = os.path.join(ROOT, "tests", "e2e")
sys.path.insert(0, E2E)
import relax_numpy as rn  # noqa: E402
from check_oracle import signature_vars  # noqa: E402
from run_e2e import case_inputs, expected_array, float_tol, to_npy_value  # noqa: E402

CASES = ["tests/e2e/cases.json", "tests/models/cases.json"]
DLPACK = "/usr/include/dlpack/dlpack.h"
# Inputs of at least this many bytes are written once per case: a later shape whose
# input of the same name has the same shape and dtype reuses the first one's array (the
# oracle then runs on it too), so the prepared folder fits the device tool's 64 MiB.
BIG_INPUT = 1 << 20
# Decode and prefill timings (relax-run --bench on the device, random inputs; they
# report, they do not gate): the Llama generator's tiny module, and one decoder layer at
# Llama-2-7B shapes (hidden 4096, 32 heads, intermediate 11008, f32), generated here,
# which check.py also times in PyTorch eager on the same GPU when PyTorch has CUDA, and
# (for cuda) also built with --disable-pass cuda_graph, timed side by side: launches per
# call and time with and without CUDA Graph offloading.
LLAMA7B = {"name": "llama7b_1layer", "module": "gen:llama7b_1layer",
           "gen": ["--preset", "llama32", "--layers", "1"],
           "config": {"hidden": 4096, "heads": 32, "head_dim": 128, "intermediate": 11008}}
BENCHES = [
    dict(LLAMA7B, name="llama7b layer decode b=1 c=512", fn="decode", shapes={"b": 1, "c": 512}),
    dict(LLAMA7B, name="llama7b layer decode b=16 c=512", fn="decode", shapes={"b": 16, "c": 512}),
    dict(LLAMA7B, name="llama7b layer prefill s=128", fn="prefill", shapes={"s": 128}),
    dict(LLAMA7B, name="llama7b layer prefill s=512", fn="prefill", shapes={"s": 512}),
    {"name": "llama_tiny decode b=1 c=512", "module": "tests/models/llama_tiny.json",
     "fn": "decode", "shapes": {"b": 1, "c": 512}},
    {"name": "llama_tiny decode b=16 c=512", "module": "tests/models/llama_tiny.json",
     "fn": "decode", "shapes": {"b": 16, "c": 512}},
    {"name": "llama_tiny prefill s=128", "module": "tests/models/llama_tiny.json",
     "fn": "prefill", "shapes": {"s": 128}},
]


def build(relaxc, module, target, out, extra=()):
    p = subprocess.run([relaxc, "build", module, "--target", target,
                        "--opt-level", "2", "-o", out] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("relaxc build %s for %s failed: %s" % (module, target, p.stderr.decode()))


def prepare_case(case, art, fname, out, runs):
    m = rn.Module.load(os.path.join(ROOT, case["module"]))
    sig = signature_vars(m.funcs[fname])
    stem = os.path.splitext(os.path.basename(case["module"]))[0]
    big = {}  # parameter -> (array, file) of a large input, shared by the case's shapes
    for k, env in enumerate(case.get("shapes") or [{}]):
        name = "%s.%s.%d" % (stem, fname, k)
        d = os.path.join(out, "data", name)
        os.makedirs(d, exist_ok=True)
        args = case_inputs(m, case, fname, dict(env), case.get("seed", 0) * 1000 + k)
        params = m.funcs[fname]["params"]
        for i, p in enumerate(params):  # the same large weight for every shape: one file
            a, prev = args[i], big.get(p["name"])
            if prev is not None and isinstance(a, np.ndarray) and \
                    (prev[0].shape, prev[0].dtype) == (a.shape, a.dtype):
                args[i] = prev[0]
        want = m.run(fname, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
        inputs = {}
        for p, a in zip(params, args):
            prev = big.get(p["name"])
            if prev is not None and a is prev[0]:
                inputs[p["name"]] = prev[1]
                continue
            f = os.path.join("data", name, "in_%s.npy" % p["name"])
            np.save(os.path.join(out, f), to_npy_value(a, p["name"]), allow_pickle=False)
            inputs[p["name"]] = f
            if isinstance(a, np.ndarray) and a.nbytes >= BIG_INPUT:
                big[p["name"]] = (a, f)
        expected, tol = [], []
        for i, w in enumerate(want):
            wa = expected_array(w)
            if wa is None:
                expected.append(None)
                tol.append(None)
                continue
            f = os.path.join("data", name, "want%d.npy" % i)
            np.save(os.path.join(out, f), wa, allow_pickle=False)
            expected.append(f)
            tol.append(list(float_tol(case, wa.dtype)) if wa.dtype.kind == "f" else None)
        runs.append({"name": "%s %s %s" % (stem, fname, json.dumps(env, sort_keys=True)),
                     "artifact": art, "fn": fname, "inputs": inputs,
                     "shapes": {v: env[v] for v in sig if v in env},
                     "expected": expected, "tol": tol})


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--only", default="")
    a = ap.parse_args(argv[1:])
    relaxc = os.path.join(a.build_dir, "bin", "relaxc")
    out = os.path.abspath(a.out_dir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "rxa"))
    os.makedirs(os.path.join(out, "include", "dlpack"))
    shutil.copy(DLPACK, os.path.join(out, "include", "dlpack", "dlpack.h"))
    runs, built, left = [], {}, 0
    for cf in CASES:
        with open(os.path.join(ROOT, cf)) as f:
            cases = json.load(f)["cases"]
        for case in cases:
            fname = case.get("function", "main")
            if a.only not in case["module"]:
                continue
            why = case.get("gpu_skip") or case.get("skip") or (
                "a build-error case" if case.get("build_error") is not None else None)
            if why:
                print("left out %s %s: %s" % (case["module"], fname, why))
                left += 1
                continue
            if case["module"] not in built:
                art = os.path.join("rxa", "%d.rxa" % len(built))
                build(relaxc, os.path.join(ROOT, case["module"]), a.target, os.path.join(out, art))
                built[case["module"]] = art
            prepare_case(case, built[case["module"]], fname, out, runs)
    benches = []
    for b in BENCHES:
        if a.only not in b["module"]:
            continue
        if b["module"] not in built:
            src = os.path.join(ROOT, b["module"])
            if b["module"].startswith("gen:"):  # a module gen_llama.py writes
                src = os.path.join(out, b["module"][4:] + ".json")
                subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/gen_llama.py")] +
                               b["gen"] + ["--name", b["module"][4:], "--out", src], check=True,
                               timeout=120)
            art = os.path.join("rxa", "%d.rxa" % len(built))
            build(relaxc, src, a.target, os.path.join(out, art))
            built[b["module"]] = art
            if a.target.startswith("cuda") and b.get("config"):  # the same without CUDA Graphs
                build(relaxc, src, a.target, os.path.join(out, art[:-4] + "_nograph.rxa"),
                      ["--disable-pass", "cuda_graph"])
        extra = {}
        if a.target.startswith("cuda") and b.get("config"):
            extra["artifact_nograph"] = built[b["module"]][:-4] + "_nograph.rxa"
        benches.append(dict(b, artifact=built[b["module"]], **extra))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"target": a.target, "runs": runs, "benches": benches}, f, indent=1)
    print("prepared %d runs of %d artifacts and %d benchmarks in %s (%d cases left out)"
          % (len(runs), len(built), len(benches), out, left))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
