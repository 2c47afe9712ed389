"""check.py — runs a prepared device check (tests/gpu/prepare.py) with relax-run.

    python3 tests/gpu/check.py RELAX_RUN DIR [--device-id N] [--no-bench]

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


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
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
    rc, _, err = run(argv)
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
            cmd = [relax_run, os.path.join(d, b["artifact"]), "--fn", b["fn"], "--bench",
                   "--random-missing", "--repeat", "20", "--warmup", "3", "--device-id", str(dev)]
            for k, v in sorted(b["shapes"].items()):
                cmd += ["--shape", "%s=%d" % (k, v)]
            rc, out, err = run(cmd)
            ok = rc == 0
            print(("BENCH " if ok else "FAIL ") + b["name"] + ": " +
                  (out.strip() if ok else err.strip()[-500:]))
            passed, failed = passed + ok, failed + (not ok)
            ref = torch_layer_ms(b["config"], b["fn"], b["shapes"]) if ok and b.get("config") else None
            if ref:
                ms = json.loads(out)["median_ms"]
                print("  relax-run median %.3f ms (whole call, inputs uploaded) vs PyTorch eager "
                      "%.3f ms with the same uploads (ratio %.2fx), %.3f ms compute only"
                      % (ms, ref[1], ms / ref[1], ref[0]))
            if ok and b.get("artifact_nograph"):  # CUDA Graph offloading off, same run
                cmd[1] = os.path.join(d, b["artifact_nograph"])
                rc, out2, err2 = run(cmd)
                ok2 = rc == 0
                passed, failed = passed + ok2, failed + (not ok2)
                if not ok2:
                    print("FAIL %s without CUDA Graph: %s" % (b["name"], err2.strip()[-500:]))
                    continue
                g, n = json.loads(out), json.loads(out2)
                print("  CUDA Graph: %.3f ms, %s launches per call (%s graphs); without: %.3f ms, "
                      "%s launches (with/without %.2fx%s)"
                      % (g["median_ms"], g.get("launches"), g.get("graph_launches"), n["median_ms"],
                         n.get("launches"), g["median_ms"] / n["median_ms"],
                         ", PyTorch eager %.2fx" % (n["median_ms"] / ref[1]) if ref else ""))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
