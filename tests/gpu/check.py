"""check.py — runs a prepared device check (tests/gpu/prepare.py) with relax-run.

    python3 tests/gpu/check.py RELAX_RUN DIR [--device-id N] [--no-bench] [--profile]

For each run of DIR/manifest.json: `relax-run ART --fn F --in NAME=FILE ... --shape
VAR=N ... --out-dir D` (an argv list, no shell), then every output against the NumPy
expected output made on the build machine: same shape and dtype, floats within the
case's (rtol, atol) (NaN where NaN), ints and bools exactly. One PASS/FAIL line per run,
then each benchmark's `relax-run --bench` line, then `N passed, M failed`.

Exit status: 0 all passed, 1 a mismatch or a failed run, 77 when the first run finds
no CUDA driver (`skipped: no CUDA driver`: a build machine; ctest counts it as skipped,
not passed). NumPy only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77


def compare(got, want, tol):
    """None when equal within tol ([rtol, atol] or None: exact), else a one-line reason."""
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if tol is not None:
        g, w = got.astype(np.float64), want.astype(np.float64)
        ok = np.isclose(g, w, rtol=tol[0], atol=tol[1], equal_nan=True)
    else:
        ok = np.asarray(got == want)
    if ok.all():
        return None
    i = np.unravel_index(np.argmin(ok), ok.shape) if ok.ndim else ()
    return "%d of %d elements differ; first at %s: %r vs %r" % (
        int((~ok).sum()), ok.size, tuple(int(x) for x in i), got[i].item(), want[i].item())


def torch_layer_ms(cfg, fn, shapes):
    """(compute-only ms, ms with the inputs uploaded from host memory each call) of one
    decoder layer of gen_llama.py's graph (f32) in PyTorch eager on this GPU, medians of
    10 calls; None when PyTorch has no CUDA. The second figure matches what relax-run
    --bench times on a GPU artifact: whole calls, every input (weights included) copied
    up and the outputs down."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    H, A, D, inter = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"]
    b, seq, c = (shapes["b"], 1, shapes["c"]) if fn == "decode" else (1, shapes["s"], 0)
    g = torch.Generator().manual_seed(0)
    host = {"x": torch.randn(b, seq, H, generator=g),
            "wq": torch.randn(H, A * D, generator=g) * 0.02, "wk": torch.randn(H, A * D, generator=g) * 0.02,
            "wv": torch.randn(H, A * D, generator=g) * 0.02, "wo": torch.randn(A * D, H, generator=g) * 0.02,
            "wg": torch.randn(H, inter, generator=g) * 0.02, "wu": torch.randn(H, inter, generator=g) * 0.02,
            "wd": torch.randn(inter, H, generator=g) * 0.02, "an": torch.ones(H), "mn": torch.ones(H),
            "fn": torch.ones(H)}
    if c:
        host["kc"] = torch.randn(b, A, c, D, generator=g)
        host["vc"] = torch.randn(b, A, c, D, generator=g)

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w

    def layer(t):
        x = t["x"]
        n = rms(x, t["an"])
        q, k, v = ((n @ t[w]).view(b, seq, A, D).permute(0, 2, 1, 3) for w in ("wq", "wk", "wv"))
        if c:
            k, v = torch.cat((t["kc"], k), 2), torch.cat((t["vc"], v), 2)
        sc = q @ k.transpose(-1, -2) * (1.0 / D ** 0.5)
        if not c:
            sc = sc + torch.triu(torch.full((seq, seq), -1e9, device=x.device), 1)
        o = (torch.softmax(sc, -1) @ v).permute(0, 2, 1, 3).reshape(b, seq, A * D)
        h = x + o @ t["wo"]
        n2 = rms(h, t["mn"])
        y = h + (torch.nn.functional.silu(n2 @ t["wg"]) * (n2 @ t["wu"])) @ t["wd"]
        return rms(y, t["fn"]), k, v

    def timed(upload):
        dev = {k: v.cuda() for k, v in host.items()}
        out = []
        with torch.no_grad():
            for i in range(13):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                t = {k: v.cuda() for k, v in host.items()} if upload else dev
                r = layer(t)
                if upload:
                    r = [x.cpu() for x in r]
                torch.cuda.synchronize()
                if i >= 3:
                    out.append((time.perf_counter() - t0) * 1e3)
        return sorted(out)[len(out) // 2]

    return timed(False), timed(True)


def weight_bytes(cfg):
    """Bytes of one decoder layer's f32 weights (projections and norms)."""
    H, A, D, inter = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"]
    return 4 * (3 * H * A * D + A * D * H + 3 * H * inter + 3 * H)


def bench_cmd(relax_run, d, art, b, dev, extra=()):
    cmd = [relax_run, os.path.join(d, art), "--fn", b["fn"], "--bench", "--random-missing",
           "--repeat", "20", "--warmup", "3", "--device-id", str(dev)] + list(extra)
    for k, v in sorted(b["shapes"].items()):
        cmd += ["--shape", "%s=%d" % (k, v)]
    return cmd


def bench(relax_run, d, b, dev, profile):
    """Times benchmark b; prints its lines; (passed, failed) counts of its relax-run calls.

    Every benchmark: one whole-call run (inputs uploaded, results downloaded: what a
    client of relax-run sees). A decoder layer (b["config"]) also: --resident with and
    without CUDA Graph offloading (the device work alone), beside PyTorch eager on the
    same GPU (compute only, and with the same uploads), and for decode the bandwidth at
    which the layer's weights and KV cache were read."""
    ok = bad = 0
    rc, out, err = run(bench_cmd(relax_run, d, b["artifact"], b, dev))
    print(("BENCH " if rc == 0 else "FAIL ") + b["name"] + ": " +
          (out.strip() if rc == 0 else err.strip()[-500:]))
    if rc:
        return 0, 1
    ok += 1
    if not b.get("config"):
        return ok, bad
    whole = json.loads(out)["median_ms"]
    ref = torch_layer_ms(b["config"], b["fn"], b["shapes"])
    if ref:
        print("  whole call %.3f ms vs PyTorch eager with the same uploads %.3f ms (%.2fx)"
              % (whole, ref[1], whole / ref[1]))
    res = {}
    for key, art in (("graph", b["artifact"]), ("nograph", b.get("artifact_nograph"))):
        if not art:
            continue
        rc, o, e = run(bench_cmd(relax_run, d, art, b, dev, ["--resident"]))
        if rc:
            print("FAIL %s resident (%s): %s" % (b["name"], key, e.strip()[-500:]))
            bad += 1
            continue
        ok += 1
        res[key] = json.loads(o)
        print("  resident %s: %s" % (key, o.strip()))
    for key, r in sorted(res.items()):
        ms = r["median_ms"]
        line = "  resident, %s CUDA Graph: %.3f ms, %.1f launches per call (%.1f graphs)" % (
            "with" if key == "graph" else "without", ms, r.get("launches", -1),
            r.get("graph_launches", -1))
        if ref:
            line += "; PyTorch eager %.3f ms: %.2fx" % (ref[0], ms / ref[0])
        if b["fn"] == "decode":
            cfg, sh = b["config"], b["shapes"]
            kv = 4 * 2 * sh["b"] * cfg["heads"] * sh["c"] * cfg["head_dim"]
            byt = weight_bytes(cfg) + kv
            line += "; weights+cache %.0f MB read at %.0f GB/s" % (byt / 1e6, byt / ms / 1e6)
            if ref:
                line += " (PyTorch %.0f GB/s)" % (byt / ref[0] / 1e6)
        print(line)
    if profile and res:  # where the time goes: per kernel, resident, without graphs
        art = b.get("artifact_nograph") or b["artifact"]
        rc, o, e = run(bench_cmd(relax_run, d, art, b, dev, ["--resident", "--profile"]))
        lines = [x for x in e.splitlines() if x.strip()]
        print("  profile (resident, no graph):\n    " + "\n    ".join(lines[:28]))
    return ok, bad


def run(argv, timeout=180):
    """(status, stdout, stderr) of argv; a run past timeout seconds is killed: 124."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s (killed)" % timeout
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check_run(relax_run, d, r, dev, tmp):
    """(ok, reason) of one run."""
    out = tempfile.mkdtemp(prefix="out-", dir=tmp)
    argv = [relax_run, os.path.join(d, r["artifact"]), "--fn", r["fn"], "--out-dir", out,
            "--device-id", str(dev)]
    for k, f in sorted(r["inputs"].items()):
        argv += ["--in", "%s=%s" % (k, os.path.join(d, f))]
    for k, v in sorted(r["shapes"].items()):
        argv += ["--shape", "%s=%d" % (k, v)]
    rc, _, err = run(argv, 60)
    if rc != 0:
        return False, "relax-run failed (%d): %s" % (rc, err.strip()[-500:])
    problems = []
    for i, (f, tol) in enumerate(zip(r["expected"], r["tol"])):
        if f is None:
            continue
        got = os.path.join(out, "out%d.npy" % i)
        if not os.path.exists(got):
            problems.append("out%d.npy not written" % i)
            continue
        why = compare(np.load(got), np.load(os.path.join(d, f)), tol)
        if why:
            problems.append("out%d: %s" % (i, why))
    return not problems, "; ".join(problems[:3])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("relax_run")
    ap.add_argument("dir")
    ap.add_argument("--device-id", type=int, default=0)
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="also print a per-kernel profile of each decoder-layer benchmark")
    a = ap.parse_args(argv[1:])
    relax_run, d, dev = a.relax_run, os.path.abspath(a.dir), a.device_id
    with open(os.path.join(d, "manifest.json")) as f:
        man = json.load(f)
    tmp = tempfile.mkdtemp(prefix="rx-gpu-check-")
    passed = failed = 0
    t0 = time.time()
    for k, r in enumerate(man["runs"]):
        ok, why = check_run(relax_run, d, r, dev, tmp)
        if k == 0 and not ok and "no CUDA driver" in why:
            print("skipped: no CUDA driver (%s)" % why)
            return SKIP
        print(("PASS " if ok else "FAIL ") + r["name"] + ("" if ok else ": " + why))
        passed, failed = passed + ok, failed + (not ok)
    print("correctness: %d runs in %.1f s" % (len(man["runs"]), time.time() - t0))
    if not a.no_bench:
        for b in man.get("benches", []):
            ok = bench(relax_run, d, b, dev, a.profile)
            passed, failed = passed + ok[0], failed + ok[1]
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
