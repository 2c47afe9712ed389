"""onnx_runner.py — what test_detect_ops.py and test_quant_ops.py share: an ONNX model
built by relaxc (PASS/FAIL of the build counted) and its outputs from relax-run."""
import os
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_check import run_status  # noqa: E402


class Runner:
    def __init__(self, relaxc, relax_run, checks, tmp):
        self.relaxc, self.relax_run, self.checks, self.tmp = relaxc, relax_run, checks, tmp

    def build(self, model, name, target="cpu"):
        """(artifact path or None after a counted failure, the .onnx path)."""
        path = os.path.join(self.tmp, name + ".onnx")
        onnx.save(model, path)
        rxa = os.path.join(self.tmp, "%s.%s.rxa" % (name, target))
        rc, _, err = run_status([self.relaxc, "build", path, "-o", rxa, "--target", target])
        self.checks.check(rc == 0, "%s: relaxc build --target %s%s"
                          % (name, target, "" if rc == 0 else ": " + err[-1500:]))
        return (rxa if rc == 0 else None), path

    def outputs(self, rxa, ins):
        """(list of outputs, "") or (None, stderr)."""
        args = []
        for name, a in ins.items():
            f = os.path.join(self.tmp, name + ".npy")
            np.save(f, a)
            args += ["--in", "%s=%s" % (name, f)]
        out = tempfile.mkdtemp(dir=self.tmp, prefix="out")
        rc, _, err = run_status([self.relax_run, rxa, "--out-dir", out] + args)
        if rc != 0:
            return None, err
        got, i = [], 0
        while os.path.exists(os.path.join(out, "out%d.npy" % i)):
            got.append(np.load(os.path.join(out, "out%d.npy" % i)))
            i += 1
        return got, ""
