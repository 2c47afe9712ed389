"""test_gpu_check.py — the CUDA device check (tests/gpu/run.sh) exercised on a build
machine, as far as it can run without a GPU.

    /usr/bin/python3 tests/gpu/test_gpu_check.py BUILD_DIR

1. prepare.py --target opencl for the Llama generator's cases, then check.py with
   BUILD_DIR's relax-run on this host's OpenCL (PoCL): every run must pass (the
   manifest, the inputs, the expected outputs and the comparison are the ones the GPU
   machine uses); with one expected output altered, check.py must fail naming it.
2. prepare.py --target cuda for the same cases, then run.sh itself: it configures and
   builds the runtime on its own (cmake -S runtime, as on the GPU machine) and runs
   check.py, which must stop at `skipped: no CUDA driver` with status 77.
Exit: 1 when a step fails; else 77 (ctest's SKIP_RETURN_CODE: the device run itself is
owed to a machine with a GPU), or 0 when this host has a CUDA driver and run.sh passed.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable


def run(argv, env=None):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, env=env)
    return p.returncode, p.stdout.decode()


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(argv[1])
    tmp = tempfile.mkdtemp(prefix="rx-gpu-test-")
    relax_run = os.path.join(build, "bin", "relax-run")
    failed = 0

    def check(ok, what, out=""):
        nonlocal failed
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failed += 1
            print(out[-3000:])

    ocl = os.path.join(tmp, "opencl")
    rc, out = run([PY, os.path.join(HERE, "prepare.py"), build, ocl, "--target", "opencl",
                   "--only", "llama_tiny"])
    check(rc == 0 and "prepared" in out, "prepare.py --target opencl (Llama cases)", out)
    if rc == 0:
        rc, out = run([PY, os.path.join(HERE, "check.py"), relax_run, ocl, "--no-bench"])
        npass = out.count("\nPASS ") + out.startswith("PASS ")
        check(rc == 0 and npass >= 7 and "FAIL" not in out,
              "check.py passes the OpenCL build on PoCL (%d runs)" % npass, out)
        # relax-run --bench --resident: inputs uploaded once, results left on the device
        art = os.path.join(ocl, "rxa", "0.rxa")
        for flag, want_res in (([], "false"), (["--resident"], "true")):
            rc, out = run([relax_run, art, "--fn", "decode", "--shape", "b=2", "--shape", "c=9",
                           "--bench", "--repeat", "2"] + flag)
            check(rc == 0 and ('"resident": %s' % want_res) in out and '"launches"' in out,
                  "relax-run --bench %s on OpenCL reports \"resident\": %s" % (" ".join(flag), want_res),
                  out)
        want = os.path.join(ocl, "data", "llama_tiny.decode.0", "want0.npy")
        w = np.load(want)
        w.flat[0] += 1.0
        np.save(want, w)
        rc, out = run([PY, os.path.join(HERE, "check.py"), relax_run, ocl, "--no-bench"])
        check(rc == 1 and "FAIL llama_tiny decode" in out and "out0: 1 of" in out,
              "check.py fails an altered expected output", out)
    cu = os.path.join(tmp, "cuda")
    rc, out = run([PY, os.path.join(HERE, "prepare.py"), build, cu, "--only", "llama_tiny"])
    status = 1
    if rc != 0 and "no NVRTC for cuda" in out:  # a host without the CUDA toolkit
        print("skipped: prepare.py --target cuda: no NVRTC on this host")
        shutil.rmtree(tmp, ignore_errors=True)
        return 1 if failed else 77
    check(rc == 0 and "prepared" in out, "prepare.py --target cuda (Llama cases)", out)
    if rc == 0:
        env = dict(os.environ, RX_PYTHON=PY, RX_GPU_JOBS="2")
        rc, out = run(["sh", os.path.join(HERE, "run.sh"), cu, os.path.join(tmp, "build-gpu")], env)
        check(rc in (0, 77) and "runtime built" in out and
              (rc == 0 or "skipped: no CUDA driver" in out),
              "run.sh builds the runtime on its own and runs the check (exit %d)" % rc, out)
        print(out.strip().splitlines()[-2] if rc == 77 else "")
        status = rc
    shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print("%d failed" % failed)
        return 1
    if status == 77:
        print("skipped: no CUDA driver (the device run is owed to a machine with a GPU)")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
