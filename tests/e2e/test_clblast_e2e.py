"""test_clblast_e2e.py — matmuls lowered onto CLBlast on target opencl, end to end.

    /usr/bin/python3 tests/e2e/test_clblast_e2e.py BUILD_DIR

Built with `relaxc build --target opencl` (clblast=1 is the default), run by relax-run
on this host's OpenCL (PoCL) with CLBlast (libclblast1, deploy/packages.sh test;
docs/gpu.md "CLBlast"):
  - one artifact with symbolic n: x (n, 64) @ W (64, 32) + bias then relu, and a batched
    a (2, n, 16) @ c (2, 16, 24); NumPy-equal at n = 1, 7, 40; relax-run --profile lists
    clblast.matmul with 2 calls per run (the artifact really calls CLBlast; the bias and
    relu stay a generated kernel); `opencl,clblast=1` spelled out is the same target
    (one cache key); its bytecode guards each call with LIBJMP and carries the matmul's
    generated kernel after it;
  - the same artifact where CLBlast cannot be loaded (RX_CLBLAST_LIB=/nonexistent, the
    loader's test hook): exit 0, NumPy-equal, one notice line naming the library, the
    profile listing the generated matmul kernels and no clblast.matmul call;
  - a module that is one matmul is an OpenCL artifact too, both ways, at n = 2, 33;
  - `opencl,clblast=0` calls no library and has no fallback guard, NumPy-equal.
Sizes stay small: CLBlast compiles its SGEMM kernels with PoCL at the first use on a
host (the same ones runtime/test_clblast compiles), which takes minutes under ASan.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

from e2e_check import Checks
from test_bounds_e2e import call, tensor
from test_opencl_e2e import Env, run_status


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
    rxa = e.build(mod, target="opencl")
    plain = e.build(mod, target="opencl,clblast=0")
    missing = {"RX_CLBLAST_LIB": "/nonexistent"}
    notice = "relax: notice: CLBlast is not available: cannot load /nonexistent"

    def profile_rows(err, name):
        return [ln for ln in err.splitlines() if ln.split()[:1] == [name]]

    src = os.path.join(tmp, "clblast_mod.json")
    with open(src, "w") as f:
        json.dump(mod, f)
    keys = [run_status([e.relaxc, "hash", src, "--target", t])[1].strip()
            for t in ("opencl", "opencl,clblast=1", "opencl,clblast=0")]
    checks.check(keys[0] == keys[1] and keys[0] != keys[2] and len(keys[0]) == 64,
                 "opencl and opencl,clblast=1 share a key, clblast=0 has another: %s" % keys)
    rc, code, err = run_status([e.relaxc, "print", src, "--target", "opencl", "--after", "lower_vm"])
    checks.check(rc == 0 and code.count('LIBJMP "clblast.matmul"') == 2 and
                 code.count('CALL_LIB "clblast.matmul"') == 2 and "CALL_KERNEL rxk_matmul " in code
                 and "CALL_KERNEL rxk_matmul_1 " in code,
                 "bytecode: 2 CLBlast calls, each guarded by LIBJMP with its generated kernel")
    if rxa:
        for n in (1, 7, 40):
            i = inputs(n)
            rc, err, out = e.run(rxa, i, extra=["--profile"])
            ok = rc == 0 and out is not None and np.allclose(out, want(i), rtol=1e-4, atol=1e-3)
            checks.check(ok, "clblast artifact at n = %d equals NumPy" % n +
                         ("" if rc == 0 else ": " + err.strip()[-200:]))
            rows = profile_rows(err, "clblast.matmul")
            checks.check(len(rows) == 1 and rows[0].split()[1:3] == ["library", "2"] and
                         not profile_rows(err, "rxk_matmul") and "notice" not in err,
                         "n = %d: --profile lists clblast.matmul with 2 calls, no fallback: %s" % (n, rows))
        for n in (3, 40):
            i = inputs(n)
            rc, err, out = e.run(rxa, i, extra=["--profile"], env=missing)
            ok = rc == 0 and out is not None and np.allclose(out, want(i), rtol=1e-4, atol=1e-3)
            checks.check(ok, "CLBlast missing, n = %d: the generated kernels, equal to NumPy" % n +
                         ("" if rc == 0 else ": " + err.strip()[-200:]))
            checks.check(err.count(notice) == 1 and "generated kernels instead" in err and
                         not profile_rows(err, "clblast.matmul") and
                         profile_rows(err, "rxk_matmul") and profile_rows(err, "rxk_matmul_1"),
                         "CLBlast missing, n = %d: one notice, the profile lists rxk_matmul and "
                         "rxk_matmul_1: %s" % (n, err.strip()[:300]))
    only = e.build({"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [tensor("x", ["n", 64]), tensor("W", [64, 32])],
        "body": {"blocks": [{"dataflow": True, "bindings": [call("y", "matmul", ["x", "W"])]}],
                 "result": "y"}}}}, target="opencl")
    if only:
        for n in (2, 33):
            x = rng.standard_normal((n, 64)).astype(np.float32)
            for env, how, lib in ((None, "CLBlast on the device", True),
                                  (missing, "CLBlast missing: the generated kernel", False)):
                rc, err, out = e.run(only, {"x": x, "W": W}, extra=["--profile"], env=env)
                checks.check(rc == 0 and np.allclose(out, x.astype(np.float64) @ W, rtol=1e-4, atol=1e-4)
                             and ("clblast.matmul" in err) == lib,
                             "matmul alone at n = %d: %s, equals NumPy" % (n, how) +
                             ("" if rc == 0 else ": " + err.strip()[-200:]))
    if plain:
        i = inputs(5)
        rc, err, out = e.run(plain, i, extra=["--profile"])
        checks.check(rc == 0 and np.allclose(out, want(i), rtol=1e-4, atol=1e-3) and
                     "clblast.matmul" not in err,
                     "opencl,clblast=0: generated kernels only, equals NumPy" +
                     ("" if rc == 0 else ": " + err.strip()[-200:]))
        rc, code, err = run_status([e.relaxc, "print", src, "--target", "opencl,clblast=0",
                                    "--after", "lower_vm"])
        checks.check(rc == 0 and "LIBJMP" not in code and "CALL_LIB" not in code,
                     "opencl,clblast=0: no library call and no guard in the bytecode")
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
