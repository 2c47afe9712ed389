"""test_compile_memory.py — the compiler's memory: linear, bounded, given back (issue 16,
defect 3).

    /usr/bin/python3 tests/integration/test_compile_memory.py BIN_DIR [SOURCE_DIR]

A function returning a tuple of N distinct tensors (t_i = x + i) used to cost N²
expression nodes in lower_vm (the live-bytes sums of lifetime.c), 1.6 GB at N = 10 000:
  - linear: `relaxc build --max-compile-memory 64MiB` of N = 10 000 succeeds (the
    module's arena, counted by its allocation hook, stays under 64 MiB; the quadratic
    sums alone were ~2 GB), and the relaxc child's peak RSS (getrusage) stays under
    1 GiB even in the sanitizer build;
  - the budget: relaxc with a budget below what the module needs fails with exit 1
    naming the stage "memory" and max_compile_memory; relaxd started with
    --max-compile-memory 8MiB answers a compile of N = 4000 with 400 compile_failed
    naming the budget, then compiles a small module (200) and /healthz still answers.
"""
import json
import os
import resource
import subprocess
import sys
import time

import rxtest
from rxtest import case, expect, expect_error


def tuple_module(n):
    binds = [{"var": "t%d" % i, "value": {"op": "add", "args": [
        "x", {"const": float(i), "dtype": "f32"}]}} for i in range(n)]
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "x", "type": {"tensor": {"shape": [4], "dtype": "f32"}}}],
        "body": {"blocks": [{"bindings": binds}],
                 "result": {"tuple": ["t%d" % i for i in range(n)]}}}}}


SMALL = tuple_module(2)


def relaxc(args):
    p = subprocess.run([os.path.join(rxtest.bin_dir(), "relaxc")] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stderr.decode()


def write(mod, name):
    path = os.path.join(rxtest.scratch("rxmem-"), name)
    with open(path, "w") as f:
        json.dump(mod, f)
    return path


@case
def test_relaxc_linear():
    src = write(tuple_module(10000), "t10000.json")
    out = src + ".rxa"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.time()
    rc, err = relaxc(["build", src, "-o", out, "--max-compile-memory", "64MiB"])
    took = time.time() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    expect(rc == 0, "N = 10000 within 64 MiB: exit %d: %s" % (rc, err[-500:]))
    expect(os.path.getsize(out) > 0, "no artifact")
    expect(peak_kib < (1 << 20) or peak_kib <= before,
           "relaxc peak RSS %d KiB, want < 1 GiB" % peak_kib)
    print("     N = 10000: %.1f s, peak RSS %d MiB" % (took, peak_kib >> 10))


@case
def test_relaxc_budget():
    src = write(tuple_module(1000), "t1000.json")
    rc, err = relaxc(["build", src, "-o", src + ".rxa", "--max-compile-memory", "1MiB"])
    expect(rc == 1, "exit %d, want 1: %s" % (rc, err))
    expect("memory failed" in err and "max_compile_memory" in err and "1.0 MiB" in err,
           "message: %s" % err)
    rc, err = relaxc(["build", src, "-o", src + ".rxa", "--max-compile-memory", "lots"])
    expect(rc == 2 and "--max-compile-memory must be a byte count" in err, "bad value: %s" % err)


@case
def test_relaxd_budget():
    d = rxtest.Relaxd(["--max-compile-memory", "8MiB"])
    st, _, b = d.json("POST", "/v1/compile", {"module": tuple_module(4000)}, timeout=600)
    expect_error(st, b, 400, "compile_failed")
    err = b["error"]
    msgs = " ".join(e.get("message", "") for e in err.get("errors", []))
    expect(err.get("stage") == "memory" and "max_compile_memory" in msgs and "8.0 MiB" in msgs,
           "budget not named: %s" % err)
    st, _, b = d.json("POST", "/v1/compile", {"module": SMALL})
    expect(st == 200 and b.get("artifact"), "small module after it: %s %s" % (st, b))
    st, _, _ = d.request("GET", "/healthz")
    expect(st == 200, "healthz %d" % st)
    expect(d.proc.poll() is None, "relaxd exited")
    d.stop()


def main():
    t0 = time.time()
    return rxtest.summary(t0)


if __name__ == "__main__":
    sys.exit(main())
