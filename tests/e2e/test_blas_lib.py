"""test_blas_lib.py — which OpenBLAS the runtime's blas.* functions use, end to end.

    /usr/bin/python3 tests/e2e/test_blas_lib.py BUILD_DIR

A module `y = relu(x @ w)` built with `relaxc build --lib all` (one call of
blas.matmul_relu) runs under relax-run on explicit inputs:
  - as installed (the OpenMP build of OpenBLAS when present, else libopenblas.so.0);
  - with RX_BLAS_LIB naming the pthreads build by path, when it is installed;
  - with RX_BLAS_LIB naming a library that does not exist: exit status 1 and the
    runtime's message naming $RX_BLAS_LIB, and no output written.
Every successful run must equal NumPy's relu(x @ w) (rtol 1e-5); the two libraries
must agree with each other within the same tolerance. Then GELU as torch.onnx exports
it, y = (s * (erf(s / 1.4142135) + 1)) * 0.5 with s = x @ w + b, built with --lib all
for 64 and 7 rows (the own sgemm's tile epilogue, and the BLAS's sgemm then
the pass): one blas.matmul_bias_gelu call, equal to NumPy (rtol 1e-5, atol 1e-5). Then
batched products of many small items (the items over the threads) at 1 and 2 threads
against NumPy. Prints one line per check and
`N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run_status, tools

PTHREAD_BUILD = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"


def module(m, k, n):
    def t(name, shape):
        return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}
    bindings = [{"var": "h", "value": {"op": "matmul", "args": ["x", "w"]}},
                {"var": "y", "value": {"op": "nn.relu", "args": ["h"]}}]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [t("x", [m, k]), t("w", [k, n])],
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "y"}}}}


def gelu_module(m, k, n):
    def t(name, shape):
        return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}

    def op(var, name, *args):
        return {"var": var, "value": {"op": name, "args": list(args)}}

    def c(v):
        return {"const": v, "dtype": "f32"}
    bindings = [op("h", "matmul", "x", "w"), op("s", "add", "h", "b"),
                op("d", "divide", "s", c(1.4142135)), op("e", "erf", "d"),
                op("a", "add", "e", c(1.0)), op("p", "multiply", "s", "a"),
                op("y", "multiply", "p", c(0.5))]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [t("x", [m, k]), t("w", [k, n]), t("b", [n])],
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}], "result": "y"}}}}


def check_gelu(relaxc, relax_run, check, tmp):
    """The exporter's GELU after a matmul + bias: one library call, NumPy-equal."""
    from math import erf
    rng = np.random.default_rng(7)
    for m in (64, 7):
        x = rng.standard_normal((m, 96)).astype(np.float32)
        w = (rng.standard_normal((96, 53)) / 4).astype(np.float32)
        b = rng.standard_normal(53).astype(np.float32)
        s = x.astype(np.float64) @ w + b
        want = 0.5 * s * (1 + np.vectorize(erf)(s / np.sqrt(2.0)))
        src, rxa = os.path.join(tmp, "g%d.json" % m), os.path.join(tmp, "g%d.rxa" % m)
        with open(src, "w") as f:
            json.dump(gelu_module(m, 96, 53), f)
        text = run_status([relaxc, "print", src, "--after", "lower_vm", "--lib", "all"])[1]
        check(text.count("blas.matmul_bias_gelu") == 1 and "erf" not in text,
              "gelu %d rows: one blas.matmul_bias_gelu call at --lib all" % m)
        rc, _, err = run_status([relaxc, "build", src, "--lib", "all", "-o", rxa])
        ins = []
        for name, v in (("x", x), ("w", w), ("b", b)):
            np.save(os.path.join(tmp, name + ".npy"), v)
            ins += ["--in", "%s=%s" % (name, os.path.join(tmp, name + ".npy"))]
        out = os.path.join(tmp, "gout%d" % m)
        if rc == 0:
            rc, _, err = run_status([relax_run, rxa] + ins + ["--out-dir", out])
        path = os.path.join(out, "out0.npy")
        got = np.load(path) if rc == 0 and os.path.exists(path) else None
        check(got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-5),
              "gelu %d rows: NumPy-equal" % m + ("" if rc == 0 else ": " + err.strip()[:200]))


def batched_module(b, m, k, n, relu):
    def t(name, shape):
        return {"name": name, "type": {"tensor": {"shape": shape, "dtype": "f32"}}}
    bindings = [{"var": "h", "value": {"op": "matmul", "args": ["x", "w"]}}]
    if relu:
        bindings.append({"var": "y", "value": {"op": "nn.relu", "args": ["h"]}})
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax", "params": [t("x", [b, m, k]), t("w", [b, k, n])],
        "body": {"blocks": [{"dataflow": True, "bindings": bindings}],
                 "result": "y" if relu else "h"}}}}


def check_batched(relaxc, relax_run, check, tmp):
    """Batched products of many small items (library.c runs the items over the threads
    when each is too small to split itself): one column (2048 x (109 x 4) @ (4 x 1), the
    row-dot path), the own sgemm's tiles with the relu epilogue (600 x (70 x 32) @ (32 x
    24)), and items the BLAS takes (few rows: 300 x (5 x 40) @ (40 x 36)), at 1 and 2
    threads, against NumPy."""
    rng = np.random.default_rng(9)
    for b, m, k, n, relu in ((2048, 109, 4, 1, False), (600, 70, 32, 24, True), (300, 5, 40, 36, False)):
        tag = "%d x (%d x %d) @ (%d x %d)%s" % (b, m, k, k, n, " + relu" if relu else "")
        src, rxa = os.path.join(tmp, "bm.json"), os.path.join(tmp, "bm.rxa")
        with open(src, "w") as f:
            json.dump(batched_module(b, m, k, n, relu), f)
        rc, _, err = run_status([relaxc, "build", src, "--lib", "all", "-o", rxa])
        check(rc == 0, "build " + tag + ("" if rc == 0 else ": " + err.strip()[:200]))
        if rc != 0:
            continue
        text = run_status([relaxc, "print", src, "--after", "lower_vm", "--lib", "all"])[1]
        check("blas.matmul" in text, tag + ": a blas.matmul call")
        x = rng.standard_normal((b, m, k)).astype(np.float32)
        w = rng.standard_normal((b, k, n)).astype(np.float32)
        want = np.matmul(x.astype(np.float64), w.astype(np.float64))
        if relu:
            want = np.maximum(want, 0)
        np.save(os.path.join(tmp, "bx.npy"), x)
        np.save(os.path.join(tmp, "bw.npy"), w)
        for threads in (1, 2):
            out = os.path.join(tmp, "bout_%d_%d" % (b, threads))
            os.makedirs(out, exist_ok=True)
            rc, _, err = run_status([relax_run, rxa, "--in", "x=" + os.path.join(tmp, "bx.npy"),
                                     "--in", "w=" + os.path.join(tmp, "bw.npy"), "--threads",
                                     str(threads), "--out-dir", out])
            path = os.path.join(out, "out0.npy")
            got = np.load(path) if rc == 0 and os.path.exists(path) else None
            check(got is not None and got.shape == want.shape and
                  np.allclose(got, want, rtol=1e-4, atol=1e-4),
                  "%s, %d threads: NumPy-equal" % (tag, threads) + ("" if rc == 0 else ": " + err.strip()[:200]))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    relaxc, relax_run = tools(sys.argv[1])
    checks = Checks()
    check = checks.check

    rng = np.random.default_rng(5)
    x = rng.standard_normal((37, 64)).astype(np.float32)
    w = rng.standard_normal((64, 29)).astype(np.float32)
    want = np.maximum(x @ w, 0)
    with tempfile.TemporaryDirectory(prefix="rx_blas_lib.") as tmp:
        src, rxa = os.path.join(tmp, "m.json"), os.path.join(tmp, "m.rxa")
        with open(src, "w") as f:
            json.dump(module(37, 64, 29), f)
        rc, _, err = run_status([relaxc, "build", src, "--lib", "all", "-o", rxa])
        check(rc == 0, "relaxc build --lib all" + ("" if rc == 0 else ": " + err))
        if rc != 0:
            return checks.done()
        text = run_status([relaxc, "print", src, "--after", "lower_vm", "--lib", "all"])[1]
        check("blas.matmul_relu" in text, "the module calls blas.matmul_relu")
        np.save(os.path.join(tmp, "x.npy"), x)
        np.save(os.path.join(tmp, "w.npy"), w)
        ins = ["--in", "x=" + os.path.join(tmp, "x.npy"), "--in", "w=" + os.path.join(tmp, "w.npy")]

        def run_with(lib, tag):
            out = os.path.join(tmp, "out_" + tag)
            os.makedirs(out)
            env = dict(os.environ)
            env.pop("RX_BLAS_LIB", None)
            if lib is not None:
                env["RX_BLAS_LIB"] = lib
            rc, _, err = run_status([relax_run, rxa] + ins + ["--out-dir", out], env)
            path = os.path.join(out, "out0.npy")
            return rc, err, (np.load(path) if os.path.exists(path) else None)

        rc, err, got = run_with(None, "default")
        check(rc == 0 and got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-5),
              "default library: NumPy-equal" + ("" if rc == 0 else ": " + err.strip()))
        if os.path.exists(PTHREAD_BUILD):
            rc, err, got2 = run_with(PTHREAD_BUILD, "pthread")
            check(rc == 0 and got2 is not None and np.allclose(got2, want, rtol=1e-5, atol=1e-5),
                  "RX_BLAS_LIB=pthreads build: NumPy-equal" + ("" if rc == 0 else ": " + err.strip()))
            check(got is not None and got2 is not None and
                  np.allclose(got, got2, rtol=1e-5, atol=1e-5), "the two builds agree")
        else:
            print("note: %s not installed, the pthreads-build case is not run" % PTHREAD_BUILD)
        rc, err, got3 = run_with(os.path.join(tmp, "no-such-libopenblas.so"), "missing")
        check(rc == 1 and got3 is None, "RX_BLAS_LIB missing: exit 1, no output (got %d)" % rc)
        check("blas.matmul_relu: OpenBLAS is not available (dlopen of $RX_BLAS_LIB failed)" in err,
              "RX_BLAS_LIB missing: the message names it: " + err.strip()[:200])
        check_gelu(relaxc, relax_run, check, tmp)
        check_batched(relaxc, relax_run, check, tmp)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
