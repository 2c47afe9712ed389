#!/usr/bin/python3
"""bench_mlp.py — a two-layer MLP through relaxc + relax-run, against NumPy (and PyTorch
CPU when it imports) in the same run.

The module: main(x: (n, 512) f32, W1: (512, 2048) f32, W2: (2048, 512) f32) =
matmul(relu(matmul(x, W1)), W2), the weights passed as parameters so one artifact
serves every n. It is built ONCE with `relaxc build` and then, for each n,
`relax-run --bench --shape n=N` times main on the runtime's seeded random inputs and
reports its median per-call time. The NumPy reference, timed in this process with
time.perf_counter over the same number of repeats after one warm-up call (median), is
np.maximum(x @ W1, 0) @ W2 on f32 arrays of the same shapes. `ratio` = relax / numpy.
NumPy runs with its BLAS's default thread count (recorded); `numpy_1t_ms` is the same
reference with OpenBLAS limited to one thread, since the generated kernels run on one.

`--act gelu` makes the activation nn.gelu (exact, erf form) instead of nn.relu; NumPy
has no erf, so its reference then applies math.erf elementwise (timed too, but the
comparison that matters is PyTorch's). PyTorch: /usr/bin/python3's torch, with
torch.set_num_threads(--threads, 2) and OMP_WAIT_POLICY=PASSIVE (set before it is
imported, for this process only: relax-run does not inherit it), timed the same way on torch tensors sharing the arrays' memory:
F.gelu(x @ W1) @ W2 or relu; `ratio_torch` = relax / torch (goal <= 1.0 for gelu).

Correctness, for every n: relax-run is also given explicit inputs (.npy files written
here) and its output is compared with NumPy's (max |diff| <= 1e-4 * max |ref|, the
sum order differs). `--smoke` (n = 1, one repeat) makes this a quick ctest that fails
on a wrong result, not a timing.

Which BLAS NumPy uses: threadpoolctl when installed, else the OpenBLAS found among the
process's mapped libraries asked directly through ctypes (openblas_get_config,
openblas_get_num_threads), else numpy.show_config's blas_opt_info. Benchmark runs
(tests/bench/run.sh) unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for this command
only; both are recorded.

Programs are spawned without a shell (subprocess with an argv list). Output: one JSON
object per line, one per n.
  bench_mlp.py [--smoke] [--sizes 1,32,256] [--repeat R] [--relaxc P] [--relax-run P]
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
D_IN, D_HID = 512, 2048


def module_json(act="relu"):
    """The MLP module as relax-json v1 (act: relu or gelu)."""
    def tensor(name, shape):
        return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}
    bindings = [
        {"var": "h", "value": {"op": "matmul", "args": ["x", "W1"]}},
        {"var": "r", "value": {"op": "nn." + act, "args": ["h"]}},
        {"var": "y", "value": {"op": "matmul", "args": ["r", "W2"]}},
    ]
    main = {"kind": "relax",
            "params": [tensor("x", ["n", D_IN]), tensor("W1", [D_IN, D_HID]),
                       tensor("W2", [D_HID, D_IN])],
            "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "y"}}
    return {"format": "relax-json", "version": 1, "functions": {"main": main}}


def run(argv, timeout=900):
    """Runs argv (no shell); returns stdout, exits with its stderr on failure. The
    OMP_WAIT_POLICY=PASSIVE set here for PyTorch is not passed on: relax-run runs with
    libgomp's defaults, as users run it (inherited, it made the 32-row MLP 0.87 ms a call
    instead of 0.40), unless the caller's environment had the variable."""
    env = dict(os.environ)
    if USER_WAIT_POLICY is None:
        env.pop("OMP_WAIT_POLICY", None)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, check=False, env=env)
    if p.returncode != 0:
        sys.exit("bench_mlp: %s failed (exit %d):\n%s" % (argv[0], p.returncode, p.stderr))
    return p.stdout


def openblas_libs():
    """ctypes handles of the OpenBLAS libraries mapped into this process."""
    paths = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and "blas" in os.path.basename(parts[5]).lower():
                    paths.add(parts[5])
    except OSError:
        return []
    libs = []
    for p in sorted(paths):
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        if hasattr(lib, "openblas_get_num_threads"):
            libs.append((p, lib))
    return libs


def blas_info():
    """(description, threads) of the BLAS NumPy calls."""
    try:
        import threadpoolctl  # optional
        for i in threadpoolctl.threadpool_info():
            if i.get("user_api") == "blas":
                return ("%s %s %s (threadpoolctl)" % (i.get("internal_api"), i.get("version"),
                                                       i.get("architecture")),
                        i.get("num_threads"))
    except ImportError:
        pass
    for path, lib in openblas_libs():
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        desc = "%s, core %s (%s)" % (lib.openblas_get_config().decode(),
                                     lib.openblas_get_corename().decode(),
                                     os.path.basename(path))
        return desc, lib.openblas_get_num_threads()
    try:
        cfg = np.__config__.blas_opt_info  # numpy < 1.25
        return "libraries %s (numpy.show_config)" % cfg.get("libraries"), None
    except AttributeError:
        return "unknown", None


def set_blas_threads(n):
    """Sets OpenBLAS's thread count (all mapped copies); False when not OpenBLAS."""
    libs = openblas_libs()
    for _, lib in libs:
        lib.openblas_set_num_threads(n)
    return bool(libs)


VERF = np.vectorize(math.erf, otypes=[np.float64])


def numpy_mlp(x, w1, w2, act):
    h = x @ w1
    if act == "gelu":
        h = (0.5 * h * (1.0 + VERF(h / np.sqrt(2.0)))).astype(np.float32)
    else:
        h = np.maximum(h, 0)
    return h @ w2


def median_ms(fn, repeat):
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def numpy_median_ms(x, w1, w2, repeat, act="relu"):
    return median_ms(lambda: numpy_mlp(x, w1, w2, act), repeat)


USER_WAIT_POLICY = os.environ.get("OMP_WAIT_POLICY")  # before torch_module sets it


def torch_module(threads):
    """PyTorch with `threads` threads, or None when it does not import."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return torch


def torch_median_ms(torch, x, w1, w2, repeat, act):
    import torch.nn.functional as F
    tx, t1, t2 = (torch.from_numpy(v) for v in (x, w1, w2))
    f = F.gelu if act == "gelu" else F.relu
    with torch.no_grad():
        return median_ms(lambda: f(tx @ t1) @ t2, repeat)


def main():
    ap = argparse.ArgumentParser(description="MLP: relax-run vs NumPy")
    ap.add_argument("--smoke", action="store_true", help="n = 1, one repeat (a test)")
    ap.add_argument("--sizes", default="1,32,256")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--opt-level", default="2")
    ap.add_argument("--act", default="relu", choices=["relu", "gelu"])
    ap.add_argument("--threads", type=int, default=2, help="PyTorch's thread count")
    ap.add_argument("--relaxc", default=os.path.join(ROOT, "build-bench", "bin", "relaxc"))
    ap.add_argument("--relax-run", dest="relax_run",
                    default=os.path.join(ROOT, "build-bench", "bin", "relax-run"))
    a = ap.parse_args()
    sizes = [1] if a.smoke else [int(s) for s in a.sizes.split(",")]
    repeat = 1 if a.smoke else a.repeat

    blas, threads = blas_info()
    torch = None if a.smoke else torch_module(a.threads)
    env_note = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench_mlp_") as tmp:
        src = os.path.join(tmp, "mlp.json")
        rxa = os.path.join(tmp, "mlp.rxa")
        with open(src, "w") as f:
            json.dump(module_json(a.act), f)
        t0 = time.perf_counter()
        run([a.relaxc, "build", src, "--target", "cpu", "-o", rxa, "--opt-level", a.opt_level])
        build_ms = (time.perf_counter() - t0) * 1e3

        w1 = (rng.standard_normal((D_IN, D_HID)) / np.sqrt(D_IN)).astype(np.float32)
        w2 = (rng.standard_normal((D_HID, D_IN)) / np.sqrt(D_HID)).astype(np.float32)
        np.save(os.path.join(tmp, "W1.npy"), w1)
        np.save(os.path.join(tmp, "W2.npy"), w2)
        failed = False
        for n in sizes:
            x = rng.standard_normal((n, D_IN)).astype(np.float32)
            xpath = os.path.join(tmp, "x.npy")
            np.save(xpath, x)
            outdir = os.path.join(tmp, "out%d" % n)
            os.mkdir(outdir)
            # Correctness: explicit inputs, output compared with NumPy's.
            run([a.relax_run, rxa, "--in", "x=" + xpath, "--in", "W1=" + os.path.join(tmp, "W1.npy"),
                 "--in", "W2=" + os.path.join(tmp, "W2.npy"), "--out-dir", outdir])
            got = np.load(os.path.join(outdir, "out0.npy"))
            ref = numpy_mlp(x, w1, w2, a.act)
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if got.shape == ref.shape else float("inf")
            scale = float(np.max(np.abs(ref))) or 1.0
            ok = got.shape == ref.shape and got.dtype == np.float32 and err <= 1e-4 * scale
            failed |= not ok

            # Timing: relax-run on its own random inputs, then NumPy. First a pause: the
            # reference computed just above leaves NumPy's OpenBLAS threads spinning for
            # ~0.1 s on the cores relax-run's threads need (n = 1 read 9-14 ms a call
            # instead of the 0.05 ms it takes alone).
            time.sleep(0.3)
            out = run([a.relax_run, rxa, "--shape", "n=%d" % n, "--bench",
                       "--repeat", str(repeat), "--number", "1", "--warmup", "1"])
            rb = json.loads(out.strip().splitlines()[-1])
            np_ms = numpy_median_ms(x, w1, w2, repeat, a.act)
            np1_ms = None
            if set_blas_threads(1):
                np1_ms = numpy_median_ms(x, w1, w2, repeat, a.act)
                set_blas_threads(threads or os.cpu_count() or 1)
            torch_ms = torch_median_ms(torch, x, w1, w2, repeat, a.act) if torch else None
            flops = 2.0 * n * D_IN * D_HID * 2
            print(json.dumps({
                "bench": "mlp", "act": a.act, "n": n, "repeat": repeat, "build_ms": round(build_ms, 1),
                "relax_ms": round(rb["median_ms"], 4), "numpy_ms": round(np_ms, 4),
                "ratio": round(rb["median_ms"] / np_ms, 2),
                "torch_ms": None if torch_ms is None else round(torch_ms, 4),
                "ratio_torch": None if torch_ms is None else round(rb["median_ms"] / torch_ms, 2),
                "numpy_1t_ms": None if np1_ms is None else round(np1_ms, 4),
                "ratio_1t": None if np1_ms is None else round(rb["median_ms"] / np1_ms, 2),
                "relax_gflops": round(flops / rb["median_ms"] / 1e6, 3),
                "numpy_gflops": round(flops / np_ms / 1e6, 3),
                "relax_kernels": rb.get("kernels"), "relax_peak_bytes": rb.get("peak_bytes"),
                "numpy_blas": blas, "numpy_threads": threads, "env": env_note,
                "max_abs_err": err, "result_ok": ok}), flush=True)
    if failed:
        sys.exit("bench_mlp: relax-run's output differs from NumPy's")


if __name__ == "__main__":
    main()
