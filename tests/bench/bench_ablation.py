#!/usr/bin/python3
"""bench_ablation.py — the paper's Figure 17 on the CPU: what each optimization buys.

The module: a Llama decoder stack from tests/models/gen_llama.py (default: 2 layers,
hidden 512, 8 heads of 64, intermediate 1376, f32), two workloads:
  prefill  s = 128 (one sequence of 128 tokens)
  decode   b = 1, c = 127 (one new token attending over 127 cached + itself)
built at opt level 2 in four cumulative variants (relaxc --disable-pass):
  none        fuse_ops, fuse_tir, library_lower, memory_plan, lift_workspace all off
  +fusion     FuseOps + FuseTIR on          (library_lower, memory_plan, lift_workspace off)
  +library    + partial library lowering    (memory_plan, lift_workspace off)
  +planning   + memory planning and workspace lifting: the full O2 pipeline
For each variant and workload: relax-run --bench on the same seeded inputs (written
here as .npy) gives the median latency, the kernel and library calls per call, and
peak_bytes (the most tensor memory held during one call, inputs excluded); the first
call's outputs are compared with the NumPy oracle (tests/e2e/relax_numpy.py): a
variant that computes something else fails the run. Speedups are relative to "none",
measured in the same run.

While fusion is a placeholder (it does nothing), "+fusion" equals "none"; the table
shows the real effect once the passes land.

Output: a table per workload, then one JSON line per (workload, variant).
`--smoke`: the tiny preset (1 layer, hidden 64), s = 8, c = 7, one repeat (a ctest
checking the four variants build and agree with the oracle, not the times).

  bench_ablation.py [--smoke] [--repeat R] [--layers N] [--hidden H] [--heads A]
                    [--intermediate I] [--s 128] [--c 127] [--relaxc P] [--relax-run P]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

import rxbench

sys.path.insert(0, os.path.join(rxbench.ROOT, "tests", "e2e"))
import relax_numpy as rn  # noqa: E402

VARIANTS = [
    ("none", ["fuse_ops", "fuse_tir", "library_lower", "memory_plan", "lift_workspace"]),
    ("+fusion", ["library_lower", "memory_plan", "lift_workspace"]),
    ("+library", ["memory_plan", "lift_workspace"]),
    ("+planning", []),
]
RTOL, ATOL = 1e-3, 1e-4  # f32 sums of up to `intermediate` terms in different orders


def inputs_for(mod, fn, env, rng, tmp, tag):
    """Seeded inputs of fn under env ({var: value}) saved as .npy: ({name: path}, [arrays])."""
    paths, arrays = {}, []
    for p in mod["functions"][fn]["params"]:
        t = p["type"]["tensor"]
        shape = [env[d] if isinstance(d, str) else d for d in t["shape"]]  # lone vars only
        lo, hi = (0.5, 1.5) if "norm" in p["name"] else (
            (-0.125, 0.125) if p["name"].startswith("l") else (-1.0, 1.0))
        a = rng.uniform(lo, hi, size=shape).astype(np.float32)
        path = os.path.join(tmp, "%s_%s.npy" % (tag, p["name"]))
        np.save(path, a)
        paths[p["name"]] = path
        arrays.append(a)
    return paths, arrays


def compare(got, want):
    """None when the output lists agree, else why."""
    if len(got) != len(want):
        return "%d outputs, expected %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if g.shape != w.shape:
            return "out%d: shape %s, expected %s" % (i, g.shape, w.shape)
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            return "out%d: max |diff| %.3g" % (i, float(np.abs(g.astype(np.float64) - w).max()))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--intermediate", type=int, default=1376)
    ap.add_argument("--s", type=int, default=128)
    ap.add_argument("--c", type=int, default=127)
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relax-run"))
    a = ap.parse_args()
    if a.smoke:
        cfg = rxbench.llama_config(layers=1)
        s, c, repeat = 8, 7, 1
    else:
        cfg = rxbench.llama_config(layers=a.layers, hidden=a.hidden, heads=a.heads,
                                   intermediate=a.intermediate)
        s, c, repeat = a.s, a.c, a.repeat
    mod = rxbench.llama_module(cfg)
    work = [("prefill", "prefill", {"s": s}), ("decode", "decode", {"b": 1, "c": c})]
    rng = np.random.default_rng(0)
    failed = []
    res = {}
    with tempfile.TemporaryDirectory(prefix="bench_ablation_") as tmp:
        src = os.path.join(tmp, "llama.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        m = rn.Module.load(src)
        ins, want = {}, {}
        for wname, fn, env in work:
            ins[wname], arrays = inputs_for(mod, fn, env, rng, tmp, wname)
            want[wname] = [np.asarray(o) for o in m.run(fn, [x.copy() for x in arrays])]
        for vname, off in VARIANTS:
            rxa = os.path.join(tmp, "%s.rxa" % vname.strip("+"))
            argv = [a.relaxc, "build", src, "--target", "cpu", "--opt-level", "2", "-o", rxa]
            for p in off:
                argv += ["--disable-pass", p]
            rxbench.run(argv)
            for wname, fn, env in work:
                out_dir = os.path.join(tmp, "out-%s-%s" % (vname.strip("+"), wname))
                r = rxbench.relax_bench(a.relax_run, rxa, fn, ins[wname], repeat, out_dir=out_dir)
                why = compare(rxbench.read_outputs(out_dir), want[wname])
                if why:
                    failed.append("%s %s: %s" % (vname, wname, why))
                res[(wname, vname)] = r
    machine, warn = rxbench.load_note()
    if warn:
        print(warn)
    for wname, fn, env in work:
        base = res[(wname, "none")]["median_ms"]
        rows = []
        for vname, off in VARIANTS:
            r = res[(wname, vname)]
            rows.append([vname, "%.3f" % r["median_ms"], "%.2fx" % (base / r["median_ms"]),
                         "%.2f" % (r["peak_bytes"] / 2**20), r["kernels"]])
        print("%s (%s), %s, median of %d" % (
            wname, ", ".join("%s=%d" % kv for kv in env.items()), cfg["name"], repeat))
        print(rxbench.table(["variant", "ms", "speedup", "peak MiB", "calls"], rows))
        print()
    for wname, fn, env in work:
        base = res[(wname, "none")]
        for vname, off in VARIANTS:
            r = res[(wname, vname)]
            print(json.dumps({"bench": "ablation", "workload": wname, "shapes": env,
                              "module": cfg["name"], "variant": vname, "disabled": off,
                              "median_ms": r["median_ms"], "speedup": round(
                                  base["median_ms"] / r["median_ms"], 3),
                              "peak_bytes": r["peak_bytes"], "peak_ratio": round(
                                  r["peak_bytes"] / base["peak_bytes"], 3) if base["peak_bytes"] else None,
                              "calls": r["kernels"], "repeat": repeat, "machine": machine}), flush=True)
    if failed:
        sys.exit("bench_ablation: outputs differ from the oracle: " + "; ".join(failed[:4]))


if __name__ == "__main__":
    main()
