"""check_llama.py — semantic checks of gen_llama.py's modules beyond oracle == artifact.

run_e2e.py (with --cases tests/models/cases.json) shows that the compiled artifact
computes what the NumPy oracle computes for the module; this script shows that the
module computes a Llama decoder at all:

  0. tests/models/llama_tiny.json is what `gen_llama.py --preset tiny --name llama_tiny`
     writes (when checking that file);
  1. reference: prefill and decode evaluated by relax_numpy.py equal an independent
     NumPy Llama written here (no relax-json involved);
  2. causality: prefill over the first s-1 tokens equals the first s-1 rows (and the
     first s-1 cache positions) of prefill over s tokens;
  3. prefill/decode agreement: decode of token s-1 on the caches prefill returned for
     the first s-1 tokens gives prefill's last row and prefill's caches over s tokens.

Checks 2 and 3 run on the oracle and, given BUILD_DIR, also on the artifacts built by
BUILD_DIR/bin/relaxc at opt levels 0, 2 (the default) and 3 (--opt-levels) and run by
relax-run. One PASS/FAIL line each, then `N passed, M failed`; exit 1 when anything
failed.

Usage: /usr/bin/python3 tests/models/check_llama.py [BUILD_DIR] [--module M.json] [--s N]
           [--opt-levels 0,2,3]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import relax_numpy as rn  # noqa: E402

RTOL, ATOL = 1e-4, 2e-5


def ref_rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def ref_softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_llama(cfg, W, x, caches=None):
    """Independent float64 NumPy Llama: returns (y, [k0, v0, k1, v1, ...])."""
    A, D, eps = cfg["heads"], cfg["head_dim"], cfg["eps"]
    x = x.astype(np.float64)
    B, S, _ = x.shape
    kv = []
    for i in range(cfg["layers"]):
        g = lambda n: W["l%d_%s" % (i, n)].astype(np.float64)  # noqa: E731
        n1 = ref_rms(x, g("attn_norm"), eps)
        q, k, v = ((n1 @ g(w)).reshape(B, S, A, D).transpose(0, 2, 1, 3) for w in ("wq", "wk", "wv"))
        if caches is not None:
            k = np.concatenate([caches[2 * i].astype(np.float64), k], axis=2)
            v = np.concatenate([caches[2 * i + 1].astype(np.float64), v], axis=2)
        sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
        T = k.shape[2]
        # query j (absolute position T - S + j) sees keys 0 .. T - S + j
        allowed = np.arange(T)[None, :] <= (T - S + np.arange(S))[:, None]
        sc = np.where(allowed, sc, -np.inf)
        ctx = (ref_softmax(sc) @ v).transpose(0, 2, 1, 3).reshape(B, S, A * D)
        h = x + ctx @ g("wo")
        n2 = ref_rms(h, g("mlp_norm"), eps)
        gate = n2 @ g("w_gate")
        x = h + (gate / (1 + np.exp(-gate)) * (n2 @ g("w_up"))) @ g("w_down")
        kv += [k, v]
    return ref_rms(x, W["final_norm"].astype(np.float64), eps), kv


class Oracle:
    def __init__(self, m):
        self.m = m

    def __call__(self, fname, args):
        return [np.asarray(o) for o in self.m.run(fname, [a.copy() for a in args])]


class Artifact:
    def __init__(self, build_dir, path, tmp, level):
        self.tmp = tmp
        self.run_bin = os.path.join(build_dir, "bin", "relax-run")
        self.art = os.path.join(tmp, "m.O%d.rxa" % level)
        self.level = level
        self.params = json.load(open(path))["functions"]
        p = subprocess.run([os.path.join(build_dir, "bin", "relaxc"), "build", path, "--target",
                            "cpu", "--opt-level", str(level), "-o", self.art], stderr=subprocess.PIPE)
        if p.returncode:
            raise RuntimeError("relaxc build failed: %s" % p.stderr.decode(errors="replace"))
        self.k = 0

    def __call__(self, fname, args):
        self.k += 1
        d = os.path.join(self.tmp, "O%d-run%d" % (self.level, self.k))
        os.makedirs(d)
        argv = [self.run_bin, self.art, "--fn", fname, "--out-dir", os.path.join(d, "out")]
        for prm, a in zip(self.params[fname]["params"], args):
            f = os.path.join(d, prm["name"] + ".npy")
            np.save(f, a)
            argv += ["--in", "%s=%s" % (prm["name"], f)]
        p = subprocess.run(argv, stderr=subprocess.PIPE)
        if p.returncode:
            raise RuntimeError("relax-run failed: %s" % p.stderr.decode(errors="replace"))
        outs, i = [], 0
        while os.path.exists(os.path.join(d, "out", "out%d.npy" % i)):
            outs.append(np.load(os.path.join(d, "out", "out%d.npy" % i)))
            i += 1
        return outs


def close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return "shape %s vs %s" % (a.shape, b.shape)
    if not np.allclose(a, b, rtol=RTOL, atol=ATOL):
        return "max |diff| %.3g" % np.abs(a - b).max()
    return None


def main(argv):
    build_dir, path, S, levels = None, os.path.join(HERE, "llama_tiny.json"), 8, [0, 2, 3]
    i = 0
    while i < len(argv):
        if argv[i] == "--opt-levels":
            levels, i = [int(v) for v in argv[i + 1].split(",")], i + 1
        elif argv[i] == "--module":
            path, i = argv[i + 1], i + 1
        elif argv[i] == "--s":
            S, i = int(argv[i + 1]), i + 1
        elif argv[i] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            build_dir = argv[i]
        i += 1
    doc = json.load(open(path))
    cfg = doc["attrs"]["config"]
    L, H, A, D = cfg["layers"], cfg["hidden"], cfg["heads"], cfg["head_dim"]
    rng = np.random.default_rng(4)
    W = {}
    for p in doc["functions"]["prefill"]["params"][1:]:
        shp = p["type"]["tensor"]["shape"]
        lo, hi = (0.5, 1.5) if len(shp) == 1 else (-0.125, 0.125)
        W[p["name"]] = rng.uniform(lo, hi, size=shp).astype(np.float32)
    wl = list(W.values())
    x = rng.uniform(-1, 1, size=(1, S, H)).astype(np.float32)
    counts = [0, 0]

    def report(ok_why, tag):
        counts[0 if ok_why is None else 1] += 1
        print("%s %s%s" % ("PASS" if ok_why is None else "FAIL", tag,
                           "" if ok_why is None else ": " + ok_why))

    def first(whys):
        whys = [w for w in whys if w]
        return whys[0] if whys else None

    if os.path.abspath(path) == os.path.join(HERE, "llama_tiny.json"):
        # 0. the committed module is what the generator writes today
        gen = subprocess.run([sys.executable, os.path.join(HERE, "gen_llama.py"), "--preset",
                              "tiny", "--name", "llama_tiny"], stdout=subprocess.PIPE)
        report(None if gen.returncode == 0 and gen.stdout == open(path, "rb").read() else
               "differs from `gen_llama.py --preset tiny --name llama_tiny` (regenerate it)",
               "llama_tiny.json is up to date")
    m = rn.Module.load(path)
    oracle = Oracle(m)
    # 1. the oracle against the independent reference (prefill, and decode with b = 3).
    got = oracle("prefill", [x] + wl)
    y, kv = ref_llama(cfg, W, x)
    report(first([close(got[0], y)] + [close(g, r) for g, r in zip(got[1:], kv)]),
           "reference prefill s=%d" % S)
    xb = rng.uniform(-1, 1, size=(3, 1, H)).astype(np.float32)
    cb = [rng.uniform(-1, 1, size=(3, A, 5, D)).astype(np.float32) for _ in range(2 * L)]
    got = oracle("decode", [xb] + cb + wl)
    y, kv = ref_llama(cfg, W, xb, cb)
    report(first([close(got[0], y)] + [close(g, r) for g, r in zip(got[1:], kv)]),
           "reference decode b=3 c=5")

    runners = [("oracle", oracle)]
    tmp = tempfile.mkdtemp(prefix="rx-llama-")
    try:
        for lvl in levels if build_dir else []:
            try:
                runners.append(("artifact O%d" % lvl, Artifact(build_dir, path, tmp, lvl)))
            except RuntimeError as e:
                report(str(e), "artifact build O%d" % lvl)
        for name, run in runners:
            full = run("prefill", [x] + wl)          # s tokens
            part = run("prefill", [x[:, :S - 1]] + wl)  # s - 1 tokens
            # 2. causality
            report(first([close(part[0], full[0][:, :S - 1])] +
                         [close(p, f[:, :, :S - 1]) for p, f in zip(part[1:], full[1:])]),
                   "%s causality s=%d" % (name, S))
            # 3. decode continues prefill
            dec = run("decode", [x[:, S - 1:]] + part[1:] + wl)
            report(first([close(dec[0], full[0][:, S - 1:])] +
                         [close(d, f) for d, f in zip(dec[1:], full[1:])]),
                   "%s decode(token %d | prefill caches) == prefill" % (name, S - 1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % tuple(counts))
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
