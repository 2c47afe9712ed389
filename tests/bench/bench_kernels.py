#!/usr/bin/python3
"""bench_kernels.py — generated CPU kernels against memory bandwidth and OpenBLAS.

(a) Elementwise kernels (f32): add, exp, relu, and multiply with a broadcast row, over
N elements (a few MB and ~64 MB). Each module is built with `relaxc build --opt-level L`
(L = 2 and 3) and timed with `relax-run --bench` (median of R calls). Achieved bandwidth
= bytes the kernel must move (each input read once, the output written once) / time.
The reference is memcpy of the same output bytes measured in this run, twice: NumPy's
copyto (one thread, glibc memcpy) and libc memcpy on two threads (ctypes releases the
GIL, each thread copies half), bytes = 2 x copied (read + write). `ratio` = achieved /
the better of the two (goal >= 0.70).

Also in (a): the vectorized transcendental functions (erf, nn.gelu, nn.gelu_tanh, tanh,
sigmoid, nn.silu, log: relax/codegen_math.h), checked against float64 references within
rtol 1e-5. --elem-levels picks the opt levels (default 2,3); --base-relaxc and
--base-relax-run name a second build (e.g. main's) whose artifact of each case is timed
in the same run, alternated with this build's over --elem-rounds rounds, memcpy timed
between them (best median of each side kept): `base_ratio` and `speedup` = base ms /
this build's ms; `ratio_min`, `base_ratio_min` and `speedup_min` compare the fastest
calls of each side and of memcpy instead (steadier on a loaded machine, as in (c)).

(c) Copies (f32, batch 1 and 16, at O0..O3): the KV-cache append (concat of a (b, 16,
512, 64) cache and one new step on axis 2), permutes keeping (0, 2, 1, 3) and moving
(0, 1, 3, 2) the innermost axis, a 4096 x 4104 transpose, and the attention output's
permute + reshape. Bandwidth = 2 x output bytes / time against memcpy of the output's
bytes, measured again just before each opt level's run (goal >= 0.70); results must
equal NumPy's exactly. `ratio` compares medians, `ratio_min` the best of R on both
sides (the kernel's min_ms, memcpy's fastest call): on a shared machine, where other
processes take the cores for milliseconds at a time, a median says more about the load
than about the kernel, and the best of R of both sides is the steadier comparison.

(e) Row operations (f32, a prefill's shapes, symbolic b and s run at b = 1 and s =
--rows-s, default 128): nn.rms_norm and nn.layer_norm over (b, s, 1024), nn.softmax
over (b, 16, s, s) alone and after an additive causal mask built from full + triu, and
silu(g) * u over (b, s, 2816), at O2 (schedule_rows.c: each a run fused per row, its
reductions over vector lanes, the rows one parallel loop). Bandwidth = bytes the kernel
must move (inputs read once, the output written once) / time against memcpy of the
output's bytes in this run; results within 1e-5 of float64 NumPy (relative to the
output's largest magnitude).

(d) Matrix-vector (decode's products): x (m, k), or (b, 1, k) with a symbolic b = m (a
decode step's rows), times a weight stored (k, n) (matmul(x, w)) or (n, k) (matmul(x,
permute_dims(w))), m = 1 and 16, k x n = 1024 x 2816, 2816 x
1024, 1024 x 1024, at O2 and O3 with the default library rule. Bandwidth = weight
bytes / time against a STREAM-like read of the same bytes in this run (libc memchr on
two threads for a byte that is not there; goal >= 0.80); results within 1e-5 *
sqrt(k) * max|ref| of float64.

(b) Matmul: M x K @ K x N f32 (256^3, 512^3, 1024^3 and 1 x 4096 x 4096), built at O3
with `--lib none` (generated, tiled loops: schedule_tile.c) and with `--lib all` (the
runtime's blas.matmul, OpenBLAS, same VM and artifact path), both timed by relax-run;
NumPy's matmul (OpenBLAS) is timed in this process too. `ratio` = OpenBLAS time /
generated time (goal >= 0.9). Both sides use the same thread count (--threads, 2):
OMP_NUM_THREADS for the kernels, OPENBLAS_NUM_THREADS for the library (set before
NumPy is imported, so NumPy's OpenBLAS has it too).
Also in (b), the runtime's own sgemm (runtime/library_gemm.c) against OpenBLAS on the
same `--lib all` artifact: relax-run with RX_GEMM=own and with RX_GEMM=blas, alternated
over --mm-rounds rounds (best median of each side kept), for the weight stored (k, n)
(matmul(x, w): blas.matmul) and (n, k) (matmul(x, permute_dims(w)): blas.matmul_view,
B transposed); `own_over_openblas` = OpenBLAS ms / own ms (goal >= 1.15).
`--mm-sizes decoder` is the decoder block's and the MLP probe's products (M = 16, 64,
128, 512, 2048 with K, N in {1024, 2816, 4096}, attention's per-head 128x64x128 and
512x64x512 in both orders).

Correctness: every artifact is also run once on explicit inputs (.npy written here)
and its output compared with NumPy (elementwise: rtol 1e-5 for add/relu/mul, 1e-5 +
a few ulps for exp; matmul: max |diff| <= 1e-4 * K-scaled bound). A wrong result
fails the run (exit 1). `--smoke` uses small sizes, O2 only for (a) and one matmul
size, one repeat: a ctest that checks results, not timings.

Programs are spawned without a shell. Output: one JSON object per line.
  bench_kernels.py [--smoke] [--threads T] [--repeat R] [--relaxc P] [--relax-run P]
                   [--elem-sizes N,N] [--mm-sizes MxKxN,...] [--sections elem,copy,...]
                   [--mv-shapes KxN,...] [--mv-rows M,...] [--rows-s S]
                   [--ops NAME,...]
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    ap = argparse.ArgumentParser(description="generated kernels vs memcpy and OpenBLAS")
    ap.add_argument("--smoke", action="store_true", help="small sizes, one repeat (a test)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--elem-sizes", default="1048576,16777216", help="element counts")
    ap.add_argument("--mm-sizes", default="256x256x256,512x512x512,1024x1024x1024,1x4096x4096",
                    help="MxKxN list, or `decoder` (the block's and the MLP's products)")
    ap.add_argument("--mm-rounds", type=int, default=2,
                    help="alternated RX_GEMM=own / blas rounds per matmul artifact")
    ap.add_argument("--mv-shapes", default="1024x2816,2816x1024,1024x1024",
                    help="matvec weights KxN (comma list)")
    ap.add_argument("--mv-rows", default="1,16", help="matvec row counts m (comma list)")
    ap.add_argument("--rows-s", dest="rows_s", type=int, default=128,
                    help="sequence length of the rows section")
    ap.add_argument("--elem-levels", default="2,3", help="opt levels of the elem section")
    ap.add_argument("--elem-rounds", type=int, default=1,
                    help="alternated rounds per elementwise case (this build, base build)")
    ap.add_argument("--base-relaxc", default="", help="a second build's relaxc (elem section)")
    ap.add_argument("--base-relax-run", default="", help="a second build's relax-run")
    ap.add_argument("--ops", default="", help="only these elementwise ops and copies (comma list)")
    ap.add_argument("--sections", default="elem,copy,rows,matvec,matmul,own_gemm",
                    help="which parts run (comma list of elem, copy, rows, matvec, matmul, "
                         "own_gemm)")
    ap.add_argument("--relaxc", default=os.path.join(ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(ROOT, "build-bench", "bin", "relax-run"))
    return ap.parse_args()


ARGS = parse_args()
# Thread counts before NumPy (and its OpenBLAS) load; children inherit them.
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
import numpy as np  # noqa: E402


def run(argv, timeout=900):
    """Runs argv (no shell); returns stdout, exits with its stderr on failure."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, check=False)
    if p.returncode != 0:
        sys.exit("bench_kernels: %s failed (exit %d):\n%s" % (" ".join(argv[:3]), p.returncode,
                                                             p.stderr))
    return p.stdout


def tensor(name, shape):
    return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}


def module(params, value):
    """A module whose main binds r = value and returns it."""
    main = {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": [{"var": "r", "value": value}]}],
                     "result": "r"}}
    return {"format": "relax-json", "version": 1, "functions": {"main": main}}


def build(tmp, name, mod, opt, lib=None, relaxc=None):
    src = os.path.join(tmp, name + ".json")
    rxa = os.path.join(tmp, "%s.O%s%s%s.rxa" % (name, opt, "." + lib if lib else "",
                                               ".base" if relaxc else ""))
    with open(src, "w") as f:
        json.dump(mod, f)
    argv = [relaxc or ARGS.relaxc, "build", src, "--target", "cpu", "--opt-level", str(opt), "-o", rxa]
    if lib:
        argv += ["--lib", lib]
    t0 = time.perf_counter()
    run(argv)
    return rxa, (time.perf_counter() - t0) * 1e3


def run_outputs(tmp, rxa, inputs, relax_run=None):
    """Runs rxa once on explicit inputs (name -> array); returns out0."""
    argv = [relax_run or ARGS.relax_run, rxa]
    for name, arr in inputs.items():
        path = os.path.join(tmp, name + ".npy")
        np.save(path, arr)
        argv += ["--in", "%s=%s" % (name, path)]
    out = os.path.join(tmp, "out")
    os.makedirs(out, exist_ok=True)
    run(argv + ["--out-dir", out])
    return np.load(os.path.join(out, "out0.npy"))


def bench(rxa, repeat, shapes=(), gemm=None, relax_run=None):
    """relax-run --bench on its own seeded inputs (symbolic sizes from shapes, a list of
    "VAR=N"; gemm: RX_GEMM for the child, None: this process's): (median_ms, min_ms)."""
    argv = [relax_run or ARGS.relax_run, rxa, "--bench", "--repeat", str(repeat), "--number", "1",
            "--warmup", "1"]
    for sv in shapes:
        argv += ["--shape", sv]
    saved = os.environ.get("RX_GEMM")
    if gemm:
        os.environ["RX_GEMM"] = gemm
    try:
        out = run(argv)
    finally:
        if saved is None:
            os.environ.pop("RX_GEMM", None)
        else:
            os.environ["RX_GEMM"] = saved
    r = json.loads(out.strip().splitlines()[-1])
    return r["median_ms"], r["min_ms"]


def timed_samples(fn, repeat):
    """repeat wall times of fn (ms), after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def timed_median(fn, repeat):
    return statistics.median(timed_samples(fn, repeat))


# ---------------------------------------------------------------- memcpy references

LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
LIBC.memcpy.restype = ctypes.c_void_p
LIBC.memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


def memcpy_samples(nbytes, repeat):
    """(NumPy copyto ms samples, 2-thread libc memcpy ms samples) for nbytes."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    t1 = timed_samples(lambda: np.copyto(dst, src), repeat)
    half = (nbytes // 2) & ~63

    def part(off, n):
        LIBC.memcpy(dst.ctypes.data + off, src.ctypes.data + off, n)

    def two():
        th = threading.Thread(target=part, args=(half, nbytes - half))
        th.start()
        part(0, half)
        th.join()

    t2 = timed_samples(two, repeat)
    return t1, t2


def memcpy_ms(nbytes, repeat):
    """(NumPy copyto ms, 2-thread libc memcpy ms) for nbytes: medians."""
    t1, t2 = memcpy_samples(nbytes, repeat)
    return statistics.median(t1), statistics.median(t2)


# ---------------------------------------------------------------- (a) elementwise

def elem_cases(n):
    """(name, module, inputs, reference fn, bytes moved, rtol) for n elements."""
    cols = 1024
    rows = n // cols
    x2 = [rows, cols]
    rng = np.random.default_rng(1)
    a = rng.standard_normal(x2).astype(np.float32)
    b = rng.standard_normal(x2).astype(np.float32)
    row = rng.standard_normal([cols]).astype(np.float32)
    nb = rows * cols * 4
    return [
        ("add", module([tensor("x", x2), tensor("y", x2)], {"op": "add", "args": ["x", "y"]}),
         {"x": a, "y": b}, lambda: a + b, 3 * nb, 1e-6),
        ("exp", module([tensor("x", x2)], {"op": "exp", "args": ["x"]}),
         {"x": a}, lambda: np.exp(a), 2 * nb, 1e-5),
        ("relu", module([tensor("x", x2)], {"op": "nn.relu", "args": ["x"]}),
         {"x": a}, lambda: np.maximum(a, 0), 2 * nb, 0.0),
        ("mul_bcast", module([tensor("x", x2), tensor("y", [cols])],
                             {"op": "multiply", "args": ["x", "y"]}),
         {"x": a, "y": row}, lambda: a * row, 2 * nb + cols * 4, 1e-6),
    ] + [(op, module([tensor("x", x2)], {"op": op, "args": ["x"]}), {"x": xin}, ref,
          2 * nb, 1e-5) for op, xin, ref in transcendental_cases(a)]


def transcendental_cases(a):
    """(op, input, reference fn) of the vectorized transcendental functions (float64
    references rounded to f32: the bound is the kernels' documented accuracy)."""
    from math import erf as merf
    verf = np.vectorize(merf, otypes=[np.float64])
    d = a.astype(np.float64)
    pos = (np.abs(a) + np.float32(1e-3)).astype(np.float32)
    return [
        ("erf", a, lambda: verf(d)),
        ("nn.gelu", a, lambda: 0.5 * d * (1 + verf(d / np.sqrt(2.0)))),
        ("nn.gelu_tanh", a,
         lambda: 0.5 * d * (1 + np.tanh(0.7978845608028654 * (d + 0.044715 * d ** 3)))),
        ("tanh", a, lambda: np.tanh(d)),
        ("sigmoid", a, lambda: 1 / (1 + np.exp(-d))),
        ("nn.silu", a, lambda: d / (1 + np.exp(-d))),
        ("log", pos, lambda: np.log(pos.astype(np.float64))),
    ]


def bench_elementwise(tmp, sizes, levels, repeat):
    failed = False
    base = bool(ARGS.base_relaxc)
    for n in sizes:
        cases = elem_cases(n)
        nb = (n // 1024) * 1024 * 4
        for name, mod, inputs, ref, moved, rtol in cases:
            if ARGS.ops and name not in ARGS.ops.split(","):
                continue
            want = ref()
            for opt in levels:
                sides = [("new", ARGS.relaxc, ARGS.relax_run)]
                if base:
                    sides.append(("base", ARGS.base_relaxc, ARGS.base_relax_run))
                rxas, ok = {}, {}
                for side, rc, rr in sides:
                    rxa, build_ms = build(tmp, "%s_%d" % (name, n), mod, opt,
                                          relaxc=rc if side == "base" else None)
                    got = run_outputs(tmp, rxa, inputs, relax_run=rr)
                    ok[side] = got.shape == want.shape and \
                        bool(np.allclose(got, want, rtol=rtol, atol=1e-6))
                    rxas[side] = (rxa, rr, build_ms)
                failed |= not ok["new"]
                best = {side: (float("inf"), float("inf")) for side, _, _ in sides}
                np_ms, mc2_ms, copy_min = float("inf"), float("inf"), float("inf")
                mins = {side: float("inf") for side, _, _ in sides}
                for _ in range(max(1, ARGS.elem_rounds)):
                    for side, _, _ in sides:
                        med, mn = bench(rxas[side][0], repeat, relax_run=rxas[side][1])
                        best[side] = min(best[side], (med, mn))
                        mins[side] = min(mins[side], mn)
                    t1, t2 = memcpy_samples(nb, repeat)
                    np_ms = min(np_ms, statistics.median(t1))
                    mc2_ms = min(mc2_ms, statistics.median(t2))
                    copy_min = min(copy_min, min(t1), min(t2))
                copy_gbs = max(2 * nb / np_ms / 1e6, 2 * nb / mc2_ms / 1e6)
                med, mn = best["new"]
                gbs = moved / med / 1e6
                row = {
                    "bench": "elementwise", "op": name, "elements": n, "opt_level": opt,
                    "mbytes_moved": round(moved / 1e6, 1), "ok": ok["new"],
                    "median_ms": round(med, 4), "min_ms": round(mn, 4),
                    "gbytes_per_s": round(gbs, 2),
                    "memcpy_numpy_gbs": round(2 * nb / np_ms / 1e6, 2),
                    "memcpy_2t_gbs": round(2 * nb / mc2_ms / 1e6, 2),
                    "ratio": round(gbs / copy_gbs, 2), "goal": 0.7,
                    "ratio_min": round(moved / mins["new"] / (2 * nb / copy_min), 2),
                    "threads": ARGS.threads, "build_ms": round(rxas["new"][2], 1)}
                if base:
                    bmed = best["base"][0]
                    row.update({"base_ok": ok["base"], "base_median_ms": round(bmed, 4),
                                "base_ratio": round(moved / bmed / 1e6 / copy_gbs, 2),
                                "speedup": round(bmed / med, 2),
                                "base_ratio_min": round(moved / mins["base"] / (2 * nb / copy_min), 2),
                                "speedup_min": round(mins["base"] / mins["new"], 2)})
                print(json.dumps(row), flush=True)
    return failed


# ---------------------------------------------------------------- (c) copies

def copy_cases(b, smoke):
    """(name, module, inputs, reference fn) of data movement: the KV-cache append
    (concat on the sequence axis), permutes that keep and that move the innermost
    axis, and the attention output's permute + reshape materialization."""
    rng = np.random.default_rng(3)
    h, s, d = (4, 40, 24) if smoke else (16, 512, 64)
    big = 512 if smoke else 4096
    cache = rng.standard_normal((b, h, s, d)).astype(np.float32)
    new = rng.standard_normal((b, h, 1, d)).astype(np.float32)
    bshd = rng.standard_normal((b, s, h, d)).astype(np.float32)
    sq = rng.standard_normal((big, big + 8)).astype(np.float32)
    x = "x"

    def perm(axes):
        return {"op": "permute_dims", "args": [x], "attrs": {"axes": axes}}
    return [
        ("concat_kv", module([tensor("k", [b, h, s, d]), tensor("kn", [b, h, 1, d])],
                             {"op": "concat", "args": [{"tuple": ["k", "kn"]}],
                              "attrs": {"axis": 2}}),
         {"k": cache, "kn": new}, lambda: np.concatenate([cache, new], axis=2)),
        ("permute_0213", module([tensor(x, [b, s, h, d])], perm([0, 2, 1, 3])),
         {x: bshd}, lambda: bshd.transpose(0, 2, 1, 3)),
        ("permute_0132", module([tensor(x, [b, s, h, d])], perm([0, 1, 3, 2])),
         {x: bshd}, lambda: bshd.transpose(0, 1, 3, 2)),
        ("transpose_2d", module([tensor(x, list(sq.shape))], perm([1, 0])),
         {x: sq}, lambda: sq.T),
        ("permute_reshape", module([tensor(x, [b, h, s, d])],
                                   {"op": "reshape", "args": [perm([0, 2, 1, 3]),
                                                              {"shape": [b, s, h * d]}]}),
         {x: cache}, lambda: cache.transpose(0, 2, 1, 3).reshape(b, s, h * d)),
    ]


def bench_copies(tmp, batches, levels, repeat, smoke):
    failed = False
    for b in batches:
        for name, mod, inputs, ref in copy_cases(b, smoke):
            if ARGS.ops and name not in ARGS.ops.split(","):
                continue
            want = ref()
            nb = want.size * 4
            moved = 2 * nb
            for opt in levels:
                rxa, build_ms = build(tmp, "%s_%d" % (name, b), mod, opt)
                got = run_outputs(tmp, rxa, inputs)
                ok = got.shape == want.shape and bool(np.array_equal(got, want))
                failed |= not ok
                t1, t2 = memcpy_samples(nb, repeat)
                copy_gbs = moved / min(statistics.median(t1), statistics.median(t2)) / 1e6
                copy_best = moved / min(min(t1), min(t2)) / 1e6
                med, mn = bench(rxa, repeat)
                gbs, best = moved / med / 1e6, moved / mn / 1e6
                print(json.dumps({
                    "bench": "copy", "op": name, "batch": b, "shape": list(want.shape),
                    "opt_level": opt, "ok": ok, "median_ms": round(med, 4),
                    "min_ms": round(mn, 4), "gbytes_per_s": round(gbs, 2),
                    "memcpy_gbs": round(copy_gbs, 2), "ratio": round(gbs / copy_gbs, 2),
                    "best_gbytes_per_s": round(best, 2), "memcpy_best_gbs": round(copy_best, 2),
                    "ratio_min": round(best / copy_best, 2), "goal": 0.7,
                    "threads": ARGS.threads, "load": round(os.getloadavg()[0], 1),
                    "build_ms": round(build_ms, 1)}), flush=True)
    return failed


# ---------------------------------------------------------------- (e) row operations

def rows_cases(s):
    """(name, module, inputs, float64 reference fn, bytes moved, symbolic shapes)."""
    rng = np.random.default_rng(5)
    h, heads, inter = 1024, 16, 2816
    x = rng.standard_normal((1, s, h)).astype(np.float32)
    w = rng.standard_normal(h).astype(np.float32)
    c = rng.standard_normal(h).astype(np.float32)
    sc = (3 * rng.standard_normal((1, heads, s, s))).astype(np.float32)
    g = rng.standard_normal((1, s, inter)).astype(np.float32)
    u = rng.standard_normal((1, s, inter)).astype(np.float32)
    d = lambda a: a.astype(np.float64)  # noqa: E731

    def softmax(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def fn(params, bindings):
        main = {"kind": "relax", "params": params,
                "body": {"blocks": [{"dataflow": True, "bindings": [
                    {"var": v, "value": e} for v, e in bindings]}], "result": bindings[-1][0]}}
        return {"format": "relax-json", "version": 1, "functions": {"main": main}}
    xs, ss = ["b", "s", h], ["b", heads, "s", "s"]
    f32 = lambda v: {"const": v, "dtype": "f32"}  # noqa: E731
    sm = lambda a: ("r", {"op": "nn.softmax", "args": [a], "attrs": {"axis": -1}})  # noqa: E731
    nb = x.size * 4
    return [
        ("rms_norm", fn([tensor("x", xs), tensor("w", [h])],
                        [("r", {"op": "nn.rms_norm", "args": ["x", "w"],
                                "attrs": {"axes": [-1], "epsilon": 1e-5}})]),
         {"x": x, "w": w}, lambda: d(x) / np.sqrt((d(x) ** 2).mean(-1, keepdims=True) + 1e-5) * d(w),
         2 * nb),
        ("layer_norm", fn([tensor("x", xs), tensor("w", [h]), tensor("c", [h])],
                          [("r", {"op": "nn.layer_norm", "args": ["x", "w", "c"],
                                  "attrs": {"axes": [-1], "epsilon": 1e-5}})]),
         {"x": x, "w": w, "c": c},
         lambda: (d(x) - d(x).mean(-1, keepdims=True)) / np.sqrt(d(x).var(-1, keepdims=True) + 1e-5)
         * d(w) + d(c), 2 * nb),
        ("softmax", fn([tensor("x", ss)], [sm("x")]), {"x": sc}, lambda: softmax(d(sc)),
         2 * sc.size * 4),
        ("softmax_triu", fn([tensor("x", ss)], [
            ("f", {"op": "full", "args": [{"shape": ["s", "s"]}, f32(-1e9)]}),
            ("k", {"op": "triu", "args": ["f"], "attrs": {"k": 1}}),
            ("a", {"op": "add", "args": ["x", "k"]}), sm("a")]),
         {"x": sc}, lambda: softmax(d(sc) + np.triu(np.full((s, s), -1e9), 1)), 2 * sc.size * 4),
        ("silu_mul", fn([tensor("g", ["b", "s", inter]), tensor("u", ["b", "s", inter])], [
            ("a", {"op": "nn.silu", "args": ["g"]}), ("r", {"op": "multiply", "args": ["a", "u"]})]),
         {"g": g, "u": u}, lambda: d(g) / (1 + np.exp(-d(g))) * d(u), 3 * g.size * 4),
    ]


def bench_rows(tmp, s, repeat):
    failed = False
    for name, mod, inputs, ref, moved in rows_cases(s):
        if ARGS.ops and name not in ARGS.ops.split(","):
            continue
        if ARGS.smoke and name not in ("rms_norm", "softmax_triu"):
            continue  # the smoke test's time: one reduction of each kind
        want = ref()
        rxa, build_ms = build(tmp, "rows_" + name, mod, 2)
        got = run_outputs(tmp, rxa, inputs)
        err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0)) \
            if got.shape == want.shape else float("inf")
        ok = err <= 1e-5
        failed |= not ok
        nb = want.size * 4
        t1, t2 = memcpy_samples(nb, repeat)
        copy_gbs = 2 * nb / min(statistics.median(t1), statistics.median(t2)) / 1e6
        med, mn = bench(rxa, repeat, ["b=1", "s=%d" % s])
        gbs = moved / med / 1e6
        print(json.dumps({
            "bench": "rows", "op": name, "s": s, "opt_level": 2, "ok": ok, "max_rel_err": err,
            "median_ms": round(med, 4), "min_ms": round(mn, 4), "gbytes_per_s": round(gbs, 2),
            "memcpy_gbs": round(copy_gbs, 2), "ratio": round(gbs / copy_gbs, 2),
            "threads": ARGS.threads, "load": round(os.getloadavg()[0], 1),
            "build_ms": round(build_ms, 1)}), flush=True)
    return failed


# ---------------------------------------------------------------- (d) matrix-vector

def read_ms(nbytes, repeat):
    """A STREAM-like read of nbytes on two threads: libc memchr for a byte that is not
    there (a vectorized full read; ctypes releases the GIL)."""
    buf = np.ones(nbytes, dtype=np.uint8)
    half = (nbytes // 2) & ~63

    def part(off, n):
        LIBC.memchr(buf.ctypes.data + off, 0, n)

    def two():
        th = threading.Thread(target=part, args=(half, nbytes - half))
        th.start()
        part(0, half)
        th.join()
    return timed_median(two, repeat)


LIBC.memchr.restype = ctypes.c_void_p
LIBC.memchr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]


def bench_matvec(tmp, ms, shapes, repeat):
    """Decode's products: x (m, k) times a (k, n) weight, stored (k, n) (matmul(x, w))
    or (n, k) (matmul(x, permute_dims(w))), at O2 and O3 with the default library
    rule. Bandwidth = weight bytes / time (x and the result are small)."""
    failed = False
    rng = np.random.default_rng(4)
    for (k, n) in shapes:
        wbytes = k * n * 4
        rd_ms = read_ms(wbytes, repeat)
        read_gbs = wbytes / rd_ms / 1e6
        w_kn = rng.standard_normal((k, n)).astype(np.float32)
        w_nk = np.ascontiguousarray(w_kn.T)
        for m in ms:
            x = rng.standard_normal((m, k)).astype(np.float32)
            want = x.astype(np.float64) @ w_kn.astype(np.float64)
            bound = 1e-5 * np.sqrt(k) * float(np.max(np.abs(want)) or 1.0)
            # x (m, k) as written, or (b, 1, k) with a symbolic b = m: a decode step's
            # projection, one row per sequence (the library rule leaves it generated)
            for xform, layout in [(f, l) for f in ("mk", "b1k") for l in ("kn", "nk")]:
                xs, xin = ([m, k], x) if xform == "mk" else (["b", 1, k], x.reshape(m, 1, k))
                wv = "w" if layout == "kn" else {"op": "permute_dims", "args": ["w"]}
                wshape, win = ([k, n], w_kn) if layout == "kn" else ([n, k], w_nk)
                mod = module([tensor("x", xs), tensor("w", wshape)],
                             {"op": "matmul", "args": ["x", wv]})
                shapes = [] if xform == "mk" else ["b=%d" % m]
                for opt in (2, 3):
                    rxa, build_ms = build(tmp, "mv_%d_%dx%d_%s_%s" % (m, k, n, xform, layout),
                                          mod, opt)
                    got = run_outputs(tmp, rxa, {"x": xin, "w": win}).reshape(-1, n)
                    err = float(np.max(np.abs(got - want))) if got.shape == want.shape \
                        else float("inf")
                    ok = bool(err <= bound)
                    failed |= not ok
                    med, mn = bench(rxa, repeat, shapes)
                    gbs = wbytes / med / 1e6
                    print(json.dumps({
                        "bench": "matvec", "m": m, "k": k, "n": n, "x": xform, "weight": layout,
                        "opt_level": opt, "ok": ok, "max_abs_err": err,
                        "median_ms": round(med, 4), "gbytes_per_s": round(gbs, 2),
                        "stream_read_gbs": round(read_gbs, 2), "ratio": round(gbs / read_gbs, 2),
                        "goal": 0.8, "threads": ARGS.threads,
                        "build_ms": round(build_ms, 1)}), flush=True)
    return failed


# ---------------------------------------------------------------- (b) matmul

def bench_matmul(tmp, sizes, repeat):
    failed = False
    rng = np.random.default_rng(2)
    for (m, k, n) in sizes:
        mod = module([tensor("x", [m, k]), tensor("w", [k, n])], {"op": "matmul", "args": ["x", "w"]})
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        want = x @ w
        bound = 1e-4 * np.sqrt(k) * float(np.max(np.abs(want)) or 1.0)
        res = {}
        for side, lib in (("generated", "none"), ("openblas", "all")):
            rxa, build_ms = build(tmp, "mm_%dx%dx%d" % (m, k, n), mod, 3, lib)
            got = run_outputs(tmp, rxa, {"x": x, "w": w})
            err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.shape == want.shape \
                else float("inf")
            ok = bool(err <= bound)
            failed |= not ok
            med, mn = bench(rxa, repeat)
            res[side] = {"median_ms": round(med, 4), "min_ms": round(mn, 4), "ok": ok,
                         "max_abs_err": err, "build_ms": round(build_ms, 1),
                         "gflops": round(2.0 * m * n * k / med / 1e6, 2)}
        np_ms = timed_median(lambda: x @ w, repeat)
        print(json.dumps({
            "bench": "matmul", "m": m, "k": k, "n": n, "opt_level": 3, "threads": ARGS.threads,
            "generated": res["generated"], "openblas_via_runtime": res["openblas"],
            "numpy_ms": round(np_ms, 4), "numpy_gflops": round(2.0 * m * n * k / np_ms / 1e6, 2),
            "ratio": round(res["openblas"]["median_ms"] / res["generated"]["median_ms"], 2),
            "ratio_vs_numpy": round(np_ms / res["generated"]["median_ms"], 2),
            "goal": 0.9}), flush=True)
    return failed


DECODER_MM = ("16x1024x1024,16x1024x2816,16x2816x1024,64x1024x4096,64x4096x1024,"
              "128x1024x1024,128x1024x2816,128x2816x1024,512x1024x1024,512x1024x2816,"
              "512x2816x1024,2048x1024x1024,128x64x128,128x128x64,512x64x512,512x512x64")


def bench_own_gemm(tmp, sizes, repeat):
    """The own sgemm against OpenBLAS on one --lib all artifact per size and layout."""
    failed = False
    rng = np.random.default_rng(3)
    for (m, k, n) in sizes:
        for layout in ("kn", "nk"):
            wshape = [k, n] if layout == "kn" else [n, k]
            wv = "w" if layout == "kn" else {"op": "permute_dims", "args": ["w"]}
            mod = module([tensor("x", [m, k]), tensor("w", wshape)],
                         {"op": "matmul", "args": ["x", wv]})
            x = rng.standard_normal((m, k)).astype(np.float32)
            w = rng.standard_normal(wshape).astype(np.float32)
            want = x.astype(np.float64) @ (w if layout == "kn" else w.T).astype(np.float64)
            bound = 1e-4 * np.sqrt(k) * float(np.max(np.abs(want)) or 1.0)
            rxa, _ = build(tmp, "own_%dx%dx%d_%s" % (m, k, n, layout), mod, 3, "all")
            errs = {}
            for gemm in ("own", "blas"):
                os.environ["RX_GEMM"] = gemm
                try:
                    got = run_outputs(tmp, rxa, {"x": x, "w": w})
                finally:
                    os.environ.pop("RX_GEMM", None)
                errs[gemm] = float(np.max(np.abs(got - want))) if got.shape == want.shape \
                    else float("inf")
            ok = all(e <= bound for e in errs.values())
            failed |= not ok
            best = {"own": [float("inf"), float("inf")], "blas": [float("inf"), float("inf")]}
            for _ in range(ARGS.mm_rounds):
                for gemm in ("blas", "own"):
                    med, mn = bench(rxa, repeat, gemm=gemm)
                    best[gemm] = [min(best[gemm][0], med), min(best[gemm][1], mn)]
            fl = 2.0 * m * n * k
            print(json.dumps({
                "bench": "own_gemm", "m": m, "k": k, "n": n, "weight": layout,
                "threads": ARGS.threads, "own_ms": round(best["own"][0], 4),
                "openblas_ms": round(best["blas"][0], 4),
                "own_gflops": round(fl / best["own"][0] / 1e6, 1),
                "openblas_gflops": round(fl / best["blas"][0] / 1e6, 1),
                "own_over_openblas": round(best["blas"][0] / best["own"][0], 2),
                "own_over_openblas_min": round(best["blas"][1] / best["own"][1], 2),
                "ok": ok, "max_abs_err": errs, "goal": 1.15}), flush=True)
    return failed


def main():
    if ARGS.smoke:
        elem_sizes, levels, repeat = [65536], [2], 1
        elem_levels = levels
        mm_sizes = [(64, 96, 80), (1, 512, 256)]
    else:
        elem_sizes = [int(s) for s in ARGS.elem_sizes.split(",")]
        levels, repeat = [2, 3], ARGS.repeat
        elem_levels = [int(v) for v in ARGS.elem_levels.split(",")]
        spec = DECODER_MM if ARGS.mm_sizes == "decoder" else ARGS.mm_sizes
        mm_sizes = [tuple(int(v) for v in s.split("x")) for s in spec.split(",")]
    sections = ARGS.sections.split(",")
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_kernels_") as tmp:
        if "elem" in sections:
            failed |= bench_elementwise(tmp, elem_sizes, elem_levels, repeat)
        if "copy" in sections:
            failed |= bench_copies(tmp, [1] if ARGS.smoke else [1, 16],
                                   [0, 2] if ARGS.smoke else [0, 1, 2, 3], repeat, ARGS.smoke)
        if "rows" in sections:
            failed |= bench_rows(tmp, 24 if ARGS.smoke else ARGS.rows_s, repeat)
        if "matvec" in sections:
            mv = [(96, 80)] if ARGS.smoke else \
                [tuple(int(v) for v in s.split("x")) for s in ARGS.mv_shapes.split(",")]
            rows = [1, 3] if ARGS.smoke else [int(v) for v in ARGS.mv_rows.split(",")]
            failed |= bench_matvec(tmp, rows, mv, repeat)
        if "matmul" in sections:
            failed |= bench_matmul(tmp, mm_sizes, repeat)
        if "own_gemm" in sections:
            failed |= bench_own_gemm(tmp, mm_sizes, repeat)
    if failed:
        sys.exit("bench_kernels: a result differs from NumPy (see \"ok\": false above)")


if __name__ == "__main__":
    main()
