"""test_clblast_e2e.py — matmuls lowered onto CLBlast for opencl,clblast=1, end to end.

    /usr/bin/python3 tests/e2e/test_clblast_e2e.py BUILD_DIR

Built with `relaxc build --target opencl,clblast=1`, run by relax-run on this host's
OpenCL (PoCL) with CLBlast (libclblast1, deploy/packages.sh test; docs/gpu.md "CLBlast"):
  - one artifact with symbolic n: x (n, 64) @ W (64, 32) + bias then relu, and a batched
    a (2, n, 16) @ c (2, 16, 24); NumPy-equal at n = 1, 7, 40; relax-run --profile lists
    clblast.matmul with 2 calls per run (the artifact really calls CLBlast; the bias and
    relu stay a generated kernel);
  - a module that is one matmul (no generated kernel at all) is still an OpenCL
    artifact: NumPy-equal at n = 2, 33 on the device;
  - the same module built for plain `opencl` calls no library (the default);
  - RX_CLBLAST_LIB=/nonexistent: the call fails with exit 1 naming the library, the
    binding and how to install it, never a crash.
Sizes stay small: CLBlast compiles its SGEMM kernels with PoCL at the first use on a
host (the same ones runtime/test_clblast compiles), which takes minutes under ASan.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import os
import shutil
import sys
import tempfile

import numpy as np

from e2e_check import Checks
from test_bounds_e2e import call, tensor
from test_opencl_e2e import Env


def module():
    params = [tensor("x", ["n", 64]), tensor("W", [64, 32]), tensor("bias", [32]),
              tensor("a", [2, "n", 16]), tensor("c", [2, 16, 24])]
    binds = [call("h", "matmul", ["x", "W"]), call("s", "add", ["h", "bias"]),
             call("r", "nn.relu", ["s"]), call("bm", "matmul", ["a", "c"]),
             call("t", "sum", ["bm"]), call("u", "sum", ["r"]), call("y", "add", ["t", "u"])]
    main = {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": binds}], "result": "y"}}
    return {"format": "relax-json", "version": 1, "functions": {"main": main}}


def main(argv):
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="rx_clblast_e2e_")
    e = Env(argv[1], tmp, checks)
    rng = np.random.default_rng(7)
    W = rng.standard_normal((64, 32)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    c = rng.standard_normal((2, 16, 24)).astype(np.float32)

    def inputs(n):
        return {"x": rng.standard_normal((n, 64)).astype(np.float32), "W": W, "bias": bias,
                "a": rng.standard_normal((2, n, 16)).astype(np.float32), "c": c}

    def want(i):
        x64, a64 = i["x"].astype(np.float64), i["a"].astype(np.float64)
        r = np.maximum(x64 @ W.astype(np.float64) + bias, 0)
        return np.array((a64 @ c.astype(np.float64)).sum() + r.sum(), dtype=np.float32)

    mod = module()
    rxa = e.build(mod, target="opencl,clblast=1")
    plain = e.build(mod, target="opencl")
    if rxa:
        for n in (1, 7, 40):
            i = inputs(n)
            rc, err, out = e.run(rxa, i, extra=["--profile"])
            ok = rc == 0 and out is not None and np.allclose(out, want(i), rtol=1e-4, atol=1e-3)
            checks.check(ok, "clblast artifact at n = %d equals NumPy" % n +
                         ("" if rc == 0 else ": " + err.strip()[-200:]))
            rows = [ln for ln in err.splitlines() if "clblast.matmul" in ln]
            checks.check(len(rows) == 1 and rows[0].split()[1:3] == ["library", "2"],
                         "n = %d: --profile lists clblast.matmul with 2 calls: %s" % (n, rows))
        i = inputs(3)
        e.fails(rxa, "CLBlast missing", ["CLBlast is not available: cannot load /nonexistent",
                                         "libclblast1", "binding "],
                i, env={"RX_CLBLAST_LIB": "/nonexistent"})
    only = e.build({"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [tensor("x", ["n", 64]), tensor("W", [64, 32])],
        "body": {"blocks": [{"dataflow": True, "bindings": [call("y", "matmul", ["x", "W"])]}],
                 "result": "y"}}}}, target="opencl,clblast=1")
    if only:
        for n in (2, 33):
            x = rng.standard_normal((n, 64)).astype(np.float32)
            rc, err, out = e.run(only, {"x": x, "W": W}, extra=["--profile"])
            checks.check(rc == 0 and np.allclose(out, x.astype(np.float64) @ W, rtol=1e-4, atol=1e-4)
                         and "clblast.matmul" in err,
                         "matmul alone at n = %d: CLBlast on the device, equals NumPy" % n +
                         ("" if rc == 0 else ": " + err.strip()[-200:]))
    if plain:
        i = inputs(5)
        rc, err, out = e.run(plain, i, extra=["--profile"])
        checks.check(rc == 0 and np.allclose(out, want(i), rtol=1e-4, atol=1e-3) and
                     "clblast.matmul" not in err,
                     "plain opencl: generated kernels only, equals NumPy" +
                     ("" if rc == 0 else ": " + err.strip()[-200:]))
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
