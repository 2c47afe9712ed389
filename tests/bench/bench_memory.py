#!/usr/bin/python3
"""bench_memory.py — paper Table 2 on CPU: activation memory of a Llama decoder with and
without static memory planning, against the liveness lower bound.

The model: tests/models/gen_llama.py (prefill and decode functions, weights as
parameters, f32), here by default 4 layers, hidden 1024, 16 heads of 64, intermediate
2816 (Llama proportions: hidden = heads x 64, intermediate ~ 2.75 x hidden, at a size a
2-core CPU runs in seconds; Llama3-8B is 32 layers, hidden 4096, 32 heads, 14336,
f16). Its upper_bounds are set to the workloads' maxima (s <= 1024 for prefill;
b <= 64, c <= the decode context for decode), as the paper plans "with the upper bound
of sequence length and batch size".

Two artifacts from one module: `relaxc build` (opt level 2: fusion, library lowering,
workspace lifting and memory planning) and the same with `--disable-pass memory_plan`,
where every tensor gets its own storage from the runtime's caching pool (the paper's
baseline: "a runtime memory pool to recycle unused memory").

Workloads, each in ONE process and runtime context (bench_memory_run: the pool keeps
what a call frees for the next): successive prefills of s = 128, 256, 512, 1024, and
successive decodes of batch b = 1, 16, 32, 64 at context c, of `decode` as generated
(it returns the updated KV caches: state the caller keeps, which no plan can reuse and
which dominates its bytes) and of `decode_act`, the same function returning only y, so
the concatenated caches are intermediates as the paper's activations are (its KV cache
lives outside the activations, in a paged cache). Reported per workload and artifact:
  total   the pool's bytes obtained from the system after the last call: the
          "total allocated activation memory" of Table 2 (live or cached, size-class
          bytes: the pool rounds requests up by at most 25%)
  peak    the largest peak of live bytes of one call (requested sizes)
and from the artifacts' metadata (vmgen/lifetime.c, plan.c), at the largest shape:
  lower bound       the most bytes of intermediate tensors live at one program point
                    (what any plan must hold); planned = the plan's storage bytes
  peak lower bound  the same with the function's escaping outputs: what a call's live
                    bytes must reach
Checks (a failure exits 1): both artifacts give bit-identical outputs (FNV digests of
every output); the unplanned peak equals the peak lower bound at every call (the
runtime releases each tensor after its last use); planning lowers the total; the plan
never needs less than the lower bound. `--smoke` (tiny model, small shapes) is the
ctest run.

  bench_memory.py [--smoke] [--relaxc P] [--runner P] [--layers L] [--hidden H]
                  [--heads A] [--intermediate I] [--context C] [--keep DIR]
Programs are spawned without a shell (argv lists). Output: the table, then one JSON
line with every figure.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1024.0 * 1024.0


def run(argv, timeout=1800):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        sys.exit("error: %s failed (%d):\n%s" % (" ".join(argv), p.returncode,
                                                  p.stderr.decode(errors="replace")[-3000:]))
    return p.stdout.decode()


def metadata(path):
    """The METADATA section of an .rxa (docs/artifact.md) as JSON."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack_from("<I", b, 16)[0]
    for i in range(n):
        kind, _, off, size = struct.unpack_from("<IIQQ", b, 40 + 24 * i)
        if kind == 1:
            return json.loads(b[off:off + size])
    sys.exit("error: %s has no METADATA" % path)


def evaluate(text, env):
    """Value of a metadata size: an integer, or an expression's text over + - * // %
    min max and the symbolic variables (rx_expr_print's grammar)."""
    if isinstance(text, int):
        return text
    toks = re.findall(r"\d+|[A-Za-z_]\w*|//|[-+*%(),]", text)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take(t=None):
        tok = toks[pos[0]]
        if t is not None and tok != t:
            raise ValueError("expected %s in %r" % (t, text))
        pos[0] += 1
        return tok

    def atom():
        t = take()
        if t == "(":
            v = expr()
            take(")")
            return v
        if t == "-":
            return -atom()
        if t.isdigit():
            return int(t)
        if t in ("max", "min"):
            take("(")
            a = expr()
            take(",")
            b = expr()
            take(")")
            return max(a, b) if t == "max" else min(a, b)
        return env[t]

    def term():
        v = atom()
        while peek() in ("*", "//", "%"):
            op, r = take(), atom()
            v = v * r if op == "*" else v // r if op == "//" else v % r
        return v

    def expr():
        v = term()
        while peek() in ("+", "-"):
            op, r = take(), term()
            v = v + r if op == "+" else v - r
        return v

    v = expr()
    if pos[0] != len(toks):
        raise ValueError("trailing tokens in %r" % text)
    return v


def activations_only(fn):
    """A copy of graph function fn returning only the first field of its result tuple
    (decode's y): the updated KV caches, computed for the attention anyway, become
    intermediates instead of outputs."""
    f = json.loads(json.dumps(fn))
    res = f["body"]["result"]
    for blk in f["body"]["blocks"]:
        for b in blk["bindings"]:
            if b["var"] == res and "tuple" in b.get("value", {}):
                f["body"]["result"] = b["value"]["tuple"][0]
    if f["body"]["result"] == res:
        sys.exit("error: decode's result is not a tuple binding")
    f.pop("ret", None)
    return f


def memory(meta, fn):
    for f in meta["functions"]:
        if f["name"] == fn:
            return f["memory"]
    sys.exit("error: no function %s in the metadata" % fn)


def calls(runner, art, fn, shapes):
    out = run([runner, art, fn] + [",".join("%s=%d" % kv for kv in s.items()) for s in shapes])
    return json.loads(out)


def workload(name, fn, shapes, arts, metas, runner):
    """Runs one workload on both artifacts; returns its figures (and checks them)."""
    res = {"workload": name, "function": fn, "shapes": shapes}
    for key in ("without", "with"):
        res[key] = calls(runner, arts[key], fn, shapes)
    ok = True
    for a, b, s in zip(res["without"]["calls"], res["with"]["calls"], shapes):
        if a["digest"] != b["digest"]:
            print("FAIL %s %s: outputs differ with and without planning" % (name, s))
            ok = False
        want = evaluate(memory(metas["without"], fn)["peak_lower_bound_bytes"], s)
        if a["peak_bytes"] != want:
            print("FAIL %s %s: unplanned peak %d != peak lower bound %d" % (name, s, a["peak_bytes"], want))
            ok = False
    big = shapes[-1]
    mw = memory(metas["with"], fn)
    res["lower_bound"] = evaluate(mw["lower_bound_bytes"], big)
    res["peak_lower_bound"] = evaluate(mw["peak_lower_bound_bytes"], big)
    res["planned"] = evaluate(mw["planned_bytes"], big)
    res["arena"] = mw["arena_bytes"]
    res["arena_live"] = mw["arena_live_bytes"]
    res["allocations"] = mw["allocations"]
    res["storages"] = mw["storages"]
    res["total_without"] = res["without"]["pool_bytes"]
    res["total_with"] = res["with"]["pool_bytes"]
    res["peak_without"] = res["without"]["max_peak_bytes"]
    res["peak_with"] = res["with"]["max_peak_bytes"]
    if res["total_with"] >= res["total_without"]:
        print("FAIL %s: planning does not lower the total (%d >= %d)" % (name, res["total_with"], res["total_without"]))
        ok = False
    if res["planned"] < res["lower_bound"]:
        print("FAIL %s: plan %d below the lower bound %d" % (name, res["planned"], res["lower_bound"]))
        ok = False
    res["ok"] = ok
    return res


def size(n):
    return "%.1f MiB" % (n / MIB) if n >= MIB else "%.1f KiB" % (n / 1024.0)


def pct(new, old):
    return "%+.1f%%" % (100.0 * (new - old) / old) if old else "n/a"


def table(cfg, results):
    print("Table 2 on CPU: activation memory, Llama decoder (%s), f32" % cfg)
    print("%-34s %14s %14s %9s" % ("", "w/o planning", "w/ planning", "change"))
    for r in results:
        var = list(r["shapes"][0])[0]
        rest = ", ".join("%s = %d" % kv for kv in list(r["shapes"][0].items())[1:])
        print("%s %s = %s%s" % (r["workload"], var, ", ".join(str(s[var]) for s in r["shapes"]),
                                " (%s)" % rest if rest else ""))
        print("  %-32s %14s %14s %9s" % ("total allocated (pool)", size(r["total_without"]),
                                         size(r["total_with"]), pct(r["total_with"], r["total_without"])))
        print("  %-32s %14s %14s %9s" % ("largest call peak (live)", size(r["peak_without"]),
                                         size(r["peak_with"]), pct(r["peak_with"], r["peak_without"])))
        print("  %-32s %14d %14d" % ("storages per call", r["allocations"], r["storages"]))
        big = r["shapes"][-1]
        at = ", ".join("%s=%d" % kv for kv in big.items())
        print("  at %s: plan %s vs intermediates' lower bound %s: %.3fx (arena %s, perfect packing %s)" %
              (at, size(r["planned"]), size(r["lower_bound"]),
               r["planned"] / r["lower_bound"] if r["lower_bound"] else 0, size(r["arena"]), size(r["arena_live"])))
        print("  at %s: call peak w/ planning %s vs peak lower bound %s: %.3fx (w/o planning: %.3fx)" %
              (at, size(r["with"]["calls"][-1]["peak_bytes"]), size(r["peak_lower_bound"]),
               r["with"]["calls"][-1]["peak_bytes"] / r["peak_lower_bound"],
               r["without"]["calls"][-1]["peak_bytes"] / r["peak_lower_bound"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--relaxc", default=os.path.join(ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--runner", default=os.path.join(ROOT, "build-bench", "bin", "bench_memory_run"))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--context", type=int)
    ap.add_argument("--keep", help="keep the module and artifacts in this directory")
    a = ap.parse_args()
    if a.smoke:
        cfg = dict(layers=2, hidden=64, heads=4, intermediate=128, context=16)
        prefill, decode = [8, 16, 32, 64], [1, 2, 4, 8]
    else:
        cfg = dict(layers=4, hidden=1024, heads=16, intermediate=2816, context=256)
        prefill, decode = [128, 256, 512, 1024], [1, 16, 32, 64]
    for k in cfg:
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    work = a.keep or tempfile.mkdtemp(prefix="rx-bench-memory-")
    os.makedirs(work, exist_ok=True)
    try:
        mod = os.path.join(work, "llama.json")
        run([sys.executable, os.path.join(ROOT, "tests", "models", "gen_llama.py"), "--layers", str(cfg["layers"]),
             "--hidden", str(cfg["hidden"]), "--heads", str(cfg["heads"]), "--intermediate",
             str(cfg["intermediate"]), "--name", "llama_bench", "--out", mod])
        with open(mod) as f:
            m = json.load(f)
        m["functions"]["prefill"]["attrs"]["upper_bounds"] = {"s": max(prefill)}
        m["functions"]["decode"]["attrs"]["upper_bounds"] = {"b": max(decode), "c": cfg["context"]}
        m["functions"]["decode_act"] = activations_only(m["functions"]["decode"])
        with open(mod, "w") as f:
            json.dump(m, f)
        arts = {"with": os.path.join(work, "planned.rxa"), "without": os.path.join(work, "unplanned.rxa")}
        run([a.relaxc, "build", mod, "--target", "cpu", "-o", arts["with"]])
        run([a.relaxc, "build", mod, "--target", "cpu", "-o", arts["without"], "--disable-pass", "memory_plan"])
        metas = {k: metadata(v) for k, v in arts.items()}
        results = [
            workload("prefill", "prefill", [{"s": s} for s in prefill], arts, metas, a.runner),
            workload("decode", "decode", [{"b": b, "c": cfg["context"]} for b in decode], arts, metas,
                     a.runner),
            workload("decode, caches not returned", "decode_act", [{"b": b, "c": cfg["context"]} for b in decode],
                     arts, metas, a.runner),
        ]
        desc = "%d layers, hidden %d, %d heads, intermediate %d, decode context %d" % (
            cfg["layers"], cfg["hidden"], cfg["heads"], cfg["intermediate"], cfg["context"])
        table(desc, results)
        summary = {"config": cfg, "results": [{k: v for k, v in r.items() if k not in ("with", "without")}
                                              for r in results]}
        for r, s in zip(results, summary["results"]):
            s["calls_without"] = r["without"]["calls"]
            s["calls_with"] = r["with"]["calls"]
        print(json.dumps(summary))
        return 0 if all(r["ok"] for r in results) else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
