#!/usr/bin/python3
"""bench_passes.py — compile time per pass of the 32-layer Llama decoder module.

The module: tests/models/gen_llama.py's llama32 preset (32 layers, hidden 4096, 32 heads
of 128, intermediate 11008: Llama-2-7B's shapes; weights are parameters, so the module
is ~0.5 MB of JSON), with its two entry functions prefill and decode (~2,000 bindings).
It is built with `relaxc build --opt-level L --time-passes` for each level (default 2
and 3), `--repeat` times each; the JSON line --time-passes prints on stderr ("passes":
name and ms, the driver's own timing of each pipeline step; times are not in the
artifact, whose bytes are reproducible) gives the per-pass times, whose median over the
repeats is reported, and
the wall time of the whole relaxc process is the build time (parse, every pass, the C
compiler for the kernels, writing the artifact).

"graph-level total" sums every step but lower_vm and codegen: the passes that work on
the module (deduce ... schedule). Goal (issue 5): under 1 s at O2 and O3. The goal is
reported, not enforced: timings are not test verdicts. What fails the run: a build that
fails, or a pass list (timed, and the metadata's) not in the pipeline's order, or a
level whose passes do not match it (O3 has specialize, O2 has not; O2 has fuse_ops,
library_lower).

Output: one table (passes as rows, levels as columns), a goal line per level, then one
JSON line per level. `--smoke`: the tiny preset with 2 layers, one build per level (a
quick ctest that checks the metadata, not the times).

  bench_passes.py [--smoke] [--levels 2,3] [--repeat R] [--layers N] [--relaxc P]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import rxbench

GRAPH_GOAL_MS = 1000.0
LOWERING = ("lower_vm", "codegen")
# Pipeline order (driver.c), for the check of the metadata.
PIPELINE = ("deduce", "simplify", "canonicalize", "dce", "library_lower", "legalize",
            "dce_post", "analysis", "fuse_ops", "fuse_tir", "lift_workspace", "reshape_view",
            "specialize", "schedule_matvec", "schedule_moves", "schedule", "lower_vm", "codegen")
MIN_OPT = {"simplify": 1, "canonicalize": 1, "dce": 1, "library_lower": 2, "fuse_ops": 2,
           "fuse_tir": 2, "lift_workspace": 2, "specialize": 3, "schedule_matvec": 1,
           "schedule": 1}


def check_passes(names, level):
    """None when names are the pipeline's steps that run at level, in order; else why."""
    want = [p for p in PIPELINE if MIN_OPT.get(p, 0) <= level]
    if list(names) != want:
        return "O%d ran %s, expected %s" % (level, ",".join(names), ",".join(want))
    return None


def build(relaxc, src, level, rxa):
    """One relaxc build; (wall ms, [(pass, ms)], metadata)."""
    argv = [relaxc, "build", src, "--target", "cpu", "--opt-level", str(level), "-o", rxa,
            "--time-passes"]
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=1800, check=False)
    wall = (time.perf_counter() - t0) * 1e3
    if p.returncode != 0:
        sys.exit("bench_passes: relaxc build failed (exit %d):\n%s" % (p.returncode, p.stderr))
    timed = json.loads(p.stderr.strip().splitlines()[-1])["passes"]
    meta = rxbench.rxa_metadata(rxa)
    if meta["passes"] != [t["name"] for t in timed]:
        sys.exit("bench_passes: metadata passes %s differ from the timed ones" % meta["passes"])
    return wall, [(t["name"], float(t["ms"])) for t in timed], meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny module, one build per level")
    ap.add_argument("--levels", default="2,3")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--relaxc", default=os.path.join(rxbench.ROOT, "build-bench", "bin", "relaxc"))
    a = ap.parse_args()
    levels = [int(v) for v in a.levels.split(",")]
    if a.smoke:
        cfg = rxbench.llama_config(layers=2)
        repeat = 1
    else:
        cfg = dict(rxbench.gen_llama.PRESETS["llama32"], eps=1e-5, dtype="f32",
                   name="llama32", layers=a.layers)
        repeat = a.repeat
    mod = rxbench.llama_module(cfg)
    nbind = sum(len(f["body"]["blocks"][0]["bindings"]) for f in mod["functions"].values())
    failed = []
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_passes_") as tmp:
        src = os.path.join(tmp, "llama.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        size = os.path.getsize(src)
        for lvl in levels:
            walls, per = [], {}
            order = None
            for r in range(repeat):
                wall, passes, meta = build(a.relaxc, src, lvl, os.path.join(tmp, "m.rxa"))
                walls.append(wall)
                names = [n for n, _ in passes]
                why = check_passes(names, lvl)
                if why:
                    failed.append(why)
                order = order or names
                for n, ms in passes:
                    per.setdefault(n, []).append(ms)
            med = {n: statistics.median(v) for n, v in per.items()}
            graph = sum(ms for n, ms in med.items() if n not in LOWERING)
            results[lvl] = {"order": order, "ms": med, "graph_ms": graph,
                            "passes_ms": sum(med.values()), "wall_ms": statistics.median(walls),
                            "kernels": len(meta.get("kernels", []))}

    names = [p for p in PIPELINE if any(p in results[lvl]["ms"] for lvl in levels)]
    rows = []
    for n in names:
        rows.append([n] + ["%.2f" % results[lvl]["ms"][n] if n in results[lvl]["ms"] else "-"
                           for lvl in levels])
    rows.append(["graph-level total"] + ["%.2f" % results[lvl]["graph_ms"] for lvl in levels])
    rows.append(["all passes"] + ["%.2f" % results[lvl]["passes_ms"] for lvl in levels])
    rows.append(["relaxc build (wall)"] + ["%.2f" % results[lvl]["wall_ms"] for lvl in levels])
    machine, warn = rxbench.load_note()
    if warn:
        print(warn)
    print("pass times, %s (%d layers, %d bindings, %.0f KiB of JSON), median of %d build%s, ms"
          % (cfg["name"], cfg["layers"], nbind, size / 1024, repeat, "s" if repeat > 1 else ""))
    print(rxbench.table(["pass"] + ["O%d" % lvl for lvl in levels], rows))
    for lvl in levels:
        g = results[lvl]["graph_ms"]
        print("goal O%d: graph-level passes %.1f ms < %.0f ms: %s" % (
            lvl, g, GRAPH_GOAL_MS, "met" if g < GRAPH_GOAL_MS else "NOT met"))
    for lvl in levels:
        r = results[lvl]
        print(json.dumps({"bench": "passes", "module": cfg["name"], "layers": cfg["layers"],
                          "bindings": nbind, "opt_level": lvl, "repeat": repeat,
                          "graph_ms": round(r["graph_ms"], 3), "passes_ms": round(r["passes_ms"], 3),
                          "build_wall_ms": round(r["wall_ms"], 1), "kernels": r["kernels"],
                          "per_pass_ms": {n: round(v, 3) for n, v in r["ms"].items()},
                          "goal_graph_ms": GRAPH_GOAL_MS, "machine": machine}), flush=True)
    if failed:
        sys.exit("bench_passes: " + "; ".join(failed[:3]))


if __name__ == "__main__":
    main()
