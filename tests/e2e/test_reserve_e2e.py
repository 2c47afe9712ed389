"""test_reserve_e2e.py — upper bounds never make a call that fits fail, and one thread
count for kernels and BLAS (issue 13, items 5 and 7), end to end through relax-run.

    /usr/bin/python3 tests/e2e/test_reserve_e2e.py BUILD_DIR

Reserved arenas (docs/memory.md, runtime/device_cpu.c):
  - `y = sum((x @ w) @ w2, axis=1)`, x: (n, 256), upper_bounds n <= 2^24: the memory
    plan's arena holds two (n, 256) f32 intermediates at the bound, 32 GiB — more than
    this machine's memory, which used to fail every call ("out of memory allocating
    34359738368 bytes"). At n = 5 and n = 300 the call must run, equal NumPy, report
    reserved_bytes >= 32 GiB and resident_bytes of a few MiB (the chunks its views
    committed), at O2 (arena) and O0 (no plan: one storage per tensor).
  - `y = sum(x @ w)`, x: (n, 1), w: (1, m), bounds n, m <= 2^20 (a 4 TiB arena): small
    calls run; a call at n = m = 2^19 really needs 1 TiB for x @ w and must fail with a
    clear "out of memory" error (exit 1, no signal). Skipped where the kernel
    overcommits without limit (vm.overcommit_memory=1), which would grant the pages and
    let the OOM killer act when they are touched.
Threads (docs/runtime.md): `relax-run --threads N --bench` reports the kernels'
OpenMP count and OpenBLAS's in effect, both N (1 and 3, with OMP_NUM_THREADS=2 and
OPENBLAS_NUM_THREADS=2 in the environment, which --threads overrides); a bad N (0, -1,
1025, "two") is exit 2 naming --threads. Oversubscribed (two busy processes per core
beside it), `--threads 2 --bench` runs calls on fewer threads (runtime/threads_gov.c):
`reduced_calls` > 0, `threads` still 2, the result still NumPy's; with
RX_THREADS_ADAPT=0, none. Prints one line per check; exit 1 on a failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from e2e_check import run_status, start

GIB = 1 << 30


def tensor(name, shape):
    return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}


def fn(params, bindings, result, bounds):
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": params, "attrs": {"upper_bounds": bounds},
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": result}}}}


def op(var, name, *args, **attrs):
    v = {"op": name, "args": list(args)}
    if attrs:
        v["attrs"] = attrs
    return {"var": var, "value": v}


def two_products():
    return fn([tensor("x", ["n", 256]), tensor("w", [256, 256]), tensor("w2", [256, 256])],
              [op("h", "matmul", "x", "w"), op("h2", "matmul", "h", "w2"),
               op("y", "sum", "h2", axis=[1])], "y", {"n": 1 << 24})


def outer():
    return fn([tensor("x", ["n", 1]), tensor("w", [1, "m"])],
              [op("h", "matmul", "x", "w"), op("y", "sum", "h")], "y", {"n": 1 << 20, "m": 1 << 20})


def main():
    started = start(sys.argv, __doc__)
    if not started:
        return 2
    relaxc, relax_run, checks = started
    check = checks.check
    rng = np.random.default_rng(13)
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    with tempfile.TemporaryDirectory(prefix="rx_reserve.") as tmp:
        def path(name):
            return os.path.join(tmp, name)

        def build(mod, name, level):
            src, rxa = path(name + ".json"), path("%s.O%d.rxa" % (name, level))
            with open(src, "w") as f:
                json.dump(mod, f)
            rc, _, err = run_status([relaxc, "build", src, "--opt-level", str(level), "-o", rxa])
            check(rc == 0, "relaxc build %s -O%d%s" % (name, level, "" if rc == 0 else ": " + err))
            return rxa if rc == 0 else None

        def call(rxa, inputs, extra=()):
            argv = [relax_run, rxa, "--bench", "--repeat", "1", "--out-dir", path("out")] + list(extra)
            for k, v in inputs.items():
                np.save(path(k + ".npy"), v)
                argv += ["--in", "%s=%s" % (k, path(k + ".npy"))]
            return run_status(argv, env)

        # -- 1: a 32 GiB arena, calls of a few KiB --
        w = rng.uniform(-0.1, 0.1, (256, 256)).astype(np.float32)
        w2 = rng.uniform(-0.1, 0.1, (256, 256)).astype(np.float32)
        for level in (2, 0):
            rxa = build(two_products(), "two_products", level)
            for n in (5, 300) if rxa else ():
                x = rng.uniform(-1, 1, (n, 256)).astype(np.float32)
                rc, out, err = call(rxa, {"x": x, "w": w, "w2": w2})
                what = "O%d n=%d with n <= 2^24" % (level, n)
                check(rc == 0, what + " runs" + ("" if rc == 0 else ": " + err.strip()))
                if rc != 0:
                    continue
                r = json.loads(out.strip().splitlines()[-1])
                got = np.load(path("out/out0.npy"))
                want = ((x.astype(np.float64) @ w) @ w2).sum(axis=1)
                check(np.allclose(got, want, rtol=1e-4, atol=1e-4), what + " equals NumPy")
                if level == 2:
                    check(r["reserved_bytes"] == r["peak_bytes"] >= 32 * GIB,
                          what + ": reserved_bytes %d >= 32 GiB (the arena at the bound)"
                          % r["reserved_bytes"])
                check(0 < r["resident_bytes"] <= 8 << 20,
                      what + ": resident_bytes %d <= 8 MiB" % r["resident_bytes"])

        # -- 2: small calls under a 4 TiB bound run; a 1 TiB product fails cleanly --
        rxa = build(outer(), "outer", 2)
        if rxa:
            x = rng.uniform(-1, 1, (7, 1)).astype(np.float32)
            wv = rng.uniform(-1, 1, (1, 9)).astype(np.float32)
            rc, out, err = call(rxa, {"x": x, "w": wv})
            check(rc == 0 and np.allclose(np.load(path("out/out0.npy")),
                                          (x.astype(np.float64) @ wv).sum(), rtol=1e-5),
                  "n=7, m=9 under n, m <= 2^20 runs and equals NumPy" + ("" if rc == 0 else ": " + err))
            with open("/proc/sys/vm/overcommit_memory") as f:
                policy = f.read().strip()
            if policy == "1":
                print("SKIP the 1 TiB call: vm.overcommit_memory=1 grants any commit")
            else:
                big = 1 << 19
                rc, out, err = call(rxa, {"x": np.ones((big, 1), np.float32),
                                          "w": np.ones((1, big), np.float32)})
                check(rc == 1 and "out of memory" in err and err.startswith("error: "),
                      "n=m=2^19 (x @ w is 1 TiB): exit 1 with a clear error (rc %d: %s)"
                      % (rc, err.strip()[:300]))

        # -- 3: --threads --
        rxa = build(two_products(), "two_products", 2)
        x = rng.uniform(-1, 1, (64, 256)).astype(np.float32)
        for n in (1, 3) if rxa else ():
            rc, out, err = call(rxa, {"x": x, "w": w, "w2": w2}, ["--threads", str(n)])
            r = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
            check(r.get("threads") == n and r.get("blas_threads") == n,
                  "--threads %d: kernels and BLAS run with %d (reported %s, %s)%s"
                  % (n, n, r.get("threads"), r.get("blas_threads"), "" if rc == 0 else ": " + err))
        rc, out, err = call(rxa, {"x": x, "w": w, "w2": w2}) if rxa else (1, "", "")
        r = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
        check(r.get("threads") == 2 and r.get("blas_threads") == 2,
              "no --threads: OMP_NUM_THREADS=2 decides (reported %s, %s)"
              % (r.get("threads"), r.get("blas_threads")))
        # -- 4: oversubscribed: the calls run on fewer threads, and say so --
        xb = rng.uniform(-1, 1, (4096, 256)).astype(np.float32)
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(2 * (os.cpu_count() or 1))] if rxa else []
        try:
            for adapt in ("1", "0") if rxa else ():
                env["RX_THREADS_ADAPT"] = adapt
                rc, out, err = call(rxa, {"x": xb, "w": w, "w2": w2},
                                    ["--threads", "2", "--repeat", "40", "--warmup", "2"])
                r = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
                ok = rc == 0 and np.allclose(np.load(path("out/out0.npy")),
                                             ((xb.astype(np.float64) @ w) @ w2).sum(axis=1),
                                             rtol=1e-4, atol=1e-4)
                reduced = r.get("reduced_calls", -1)
                check(ok and r.get("threads") == 2 and
                      (reduced > 0 if adapt == "1" else reduced == 0),
                      "RX_THREADS_ADAPT=%s, %d busy processes on %d cores: %s (reduced_calls %s "
                      "of 40, threads %s)%s"
                      % (adapt, len(spinners), os.cpu_count() or 1,
                         "calls run on fewer threads" if adapt == "1" else "a fixed count",
                         reduced, r.get("threads"), "" if rc == 0 else ": " + err))
        finally:
            for p in spinners:
                p.kill()
                p.wait()
            env.pop("RX_THREADS_ADAPT", None)
        for bad in ("0", "-1", "1025", "two"):
            rc, _, err = run_status([relax_run, rxa or "x.rxa", "--threads", bad])
            check(rc == 2 and "--threads needs an integer from 1 to 1024, got '%s'" % bad in err,
                  "--threads %s: exit 2 naming the option (rc %d: %s)" % (bad, rc, err.strip()))
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
