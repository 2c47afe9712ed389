"""test_bounds_e2e.py — sizes that overflow and indices out of range, end to end.

    /usr/bin/python3 tests/e2e/test_bounds_e2e.py BUILD_DIR

Each module is built by `relaxc build` and run by relax-run (issue 16, defects 1 and
2): the size cases at every opt level 0-3, the index cases at 0 and 2 (unfused and
fused pipelines; the modes at 2). A bad size or index must be a clear error (exit status
1, one `error:` line naming what failed) — never a signal, a hang or a silent wrong
answer — and the same modules on good inputs must equal NumPy.

Sizes (defect 1):
  - reshape of x: (4,) to (2^62 + 1, 4), tile with repeats 2^62 + 1 and broadcast_to
    (2^62 + 1, 4), each then summed: rejected by relaxc (the result has more than
    2^63 - 1 bytes), where fusion used to drop the run-time check (SIGSEGV, a silent 4,
    a loop of 2^64 iterations);
  - the same tile of x: (n,): a run-time overflow error;
  - reshape of x: (n,) to (m, 4), summed: with n != 4 m a run-time error naming the
    reshape's element counts; with n == 4 m NumPy's sum;
  - a loop function whose loop nest has n × (2^62 + 1) iterations: the kernel's size
    check fails ("a size overflows int64").
Indices (defect 2):
  - take (default mode "error") along an axis and flattened, then exp: an index past
    the axis or below -extent fails naming the kernel, index, axis and extent; in-range
    indices (negative ones too) equal np.take;
  - take with mode "clip" and "wrap": np.take(mode="clip"/"wrap") on the same bad
    indices;
  - a loop function gathering X[I[i], j] and one scattering O[I[i]] = 1: an index from
    I outside X / O fails the same way;
  - strided_slice of x: (n,) from the symbolic begin n - 10: at n = 3 a run-time error
    (it used to read before x), at n = 12 x[2:].
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run_status, tools

BIG = 2**62 + 1
LEVELS = (0, 1, 2, 3)


def module(params, bindings, result, extra=None):
    fns = {"main": {"kind": "relax", "params": params,
                    "body": {"blocks": [{"bindings": bindings}], "result": result}}}
    fns.update(extra or {})
    return {"format": "relax-json", "version": 1, "functions": fns}


def tensor(name, shape, dtype="f32"):
    return {"name": name, "type": {"tensor": {"shape": shape, "dtype": dtype}}}


def call(var, op, args, attrs=None):
    v = {"op": op, "args": args}
    if attrs is not None:
        v["attrs"] = attrs
    return {"var": var, "value": v}


def summed(params, op, args, attrs=None):
    return module(params, [call("r", op, args, attrs), call("s", "sum", ["r"])], "s")


def buffer(name, shape, dtype="f32"):
    return {"name": name, "buffer": {"shape": shape, "dtype": dtype}}


def loop_module(fn, args, out):
    """main calls the loop function fn (named "f") on args, out its result annotation."""
    params = [tensor(a["name"], a["shape"], a.get("dtype", "f32")) for a in args]
    b = [{"var": "y", "value": {"call_tir": "@f", "args": [a["name"] for a in args],
                                "out": {"tensor": out}}}]
    return module(params, b, "y", {"f": fn})


GATHER = {"kind": "tir", "params": [buffer("X", [5, 3]), buffer("I", [4], "i64"),
                                    buffer("O", [4, 3])],
          "body": [{"grid": ["i", "j"], "extents": [4, 3], "body": [
              {"block": "g", "body": [{"store": "O[i, j]", "value": "X[I[i], j]"}]}]}]}
SCATTER = {"kind": "tir", "params": [buffer("I", [4], "i64"), buffer("O", [5])],
           "body": [{"grid": ["i"], "extents": [4], "body": [
               {"block": "s", "body": [{"store": "O[I[i]]", "value": "1.0"}]}]}]}
HUGE_LOOP = {"kind": "tir", "params": [buffer("X", ["n"]), buffer("O", [1])],
             "body": [{"grid": ["i", "k"], "extents": ["n", "n * %d" % BIG], "body": [
                 {"block": "h", "body": [{"store": "O[0]", "value": "X[i]"}]}]}]}


class Run:
    def __init__(self, build_dir, tmp, checks):
        self.relaxc, self.relax_run = tools(build_dir)
        self.tmp, self.checks, self.n = tmp, checks, 0

    def build(self, mod, level):
        """(exit status, stderr, artifact path) of relaxc build."""
        self.n += 1
        src = os.path.join(self.tmp, "m%d.json" % self.n)
        rxa = os.path.join(self.tmp, "m%d.rxa" % self.n)
        with open(src, "w") as f:
            json.dump(mod, f)
        rc, _, err = run_status([self.relaxc, "build", src, "--opt-level", str(level), "-o", rxa])
        return rc, err, rxa

    def run(self, rxa, inputs=None, shapes=None, extra=(), env=None):
        """(exit status, stderr, outputs) of relax-run on the named arrays, with more
        arguments (extra) and environment variables (env); self.stdout keeps its output."""
        argv = [self.relax_run, rxa, "--out-dir", os.path.join(self.tmp, "out")] + list(extra)
        for name, arr in (inputs or {}).items():
            path = os.path.join(self.tmp, "%s.npy" % name)
            np.save(path, arr)
            argv += ["--in", "%s=%s" % (name, path)]
        for var, v in (shapes or {}).items():
            argv += ["--shape", "%s=%d" % (var, v)]
        rc, self.stdout, err = run_status(argv, dict(os.environ, **env) if env else None)
        out = None
        if rc == 0:
            out = np.load(os.path.join(self.tmp, "out", "out0.npy"))
        return rc, err, out

    def fails(self, rxa, what, needles, inputs=None, shapes=None, **kw):
        rc, err, _ = self.run(rxa, inputs, shapes, **kw)
        ok = rc == 1 and err.startswith("error: ") and all(n in err for n in needles) and \
            "Sanitizer" not in err
        self.checks.check(ok, "%s: exit %d, %s" % (what, rc, err.strip()[:160]))

    def equals(self, rxa, what, want, inputs=None, shapes=None, **kw):
        rc, err, out = self.run(rxa, inputs, shapes, **kw)
        ok = rc == 0 and out is not None and out.shape == want.shape and \
            np.allclose(out, want, rtol=1e-5, atol=1e-5)
        self.checks.check(ok, "%s" % what + ("" if rc == 0 else ": " + err.strip()[:160]))


def sizes(r, level):
    x4 = [tensor("x", [4])]
    for name, op, args, attrs in (("reshape", "reshape", ["x", {"shape": [BIG, 4]}], None),
                                  ("tile", "tile", ["x"], {"repeats": [BIG]}),
                                  ("broadcast_to", "broadcast_to", ["x", {"shape": [BIG, 4]}], None)):
        rc, err, _ = r.build(summed(x4, op, args, attrs), level)
        r.checks.check(rc == 1 and "%s: the result" % op in err and "more than 2^63 - 1 bytes" in err,
                       "O%d %s to 2^62 + 1 rows: relaxc rejects it (exit %d, %s)"
                       % (level, name, rc, err.strip().splitlines()[-1][:120] if err.strip() else ""))
    x = np.arange(8, dtype=np.float32)
    rc, err, rxa = r.build(summed([tensor("x", ["n"])], "tile", ["x"], {"repeats": [BIG]}), level)
    r.checks.check(rc == 0, "O%d tile of x: (n,) builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        r.fails(rxa, "O%d tile (n * (2^62 + 1),) at n = 4" % level, ["overflow"], {"x": x[:4]})
    rc, err, rxa = r.build(summed([tensor("x", ["n"]), tensor("y", ["m"])], "reshape",
                                  ["x", {"shape": ["m", 4]}]), level)
    r.checks.check(rc == 0, "O%d reshape (n,) to (m, 4) builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        y = np.zeros(2, dtype=np.float32)
        r.fails(rxa, "O%d reshape of 4 elements to (2, 4)" % level,
                ["r_reshape_elements", "expected (m * 4,), got (4,)"], {"x": x[:4], "y": y})
        r.equals(rxa, "O%d reshape of 8 elements to (2, 4), summed" % level, np.array(x.sum()),
                 {"x": x, "y": y})
    rc, err, rxa = r.build(loop_module(HUGE_LOOP, [{"name": "x", "shape": ["n"]}],
                                       {"shape": [1], "dtype": "f32"}), level)
    r.checks.check(rc == 0, "O%d loop nest of n * (2^62 + 1) iterations builds" % level
                   + ("" if rc == 0 else ": " + err))
    if rc == 0:
        r.fails(rxa, "O%d loop nest of n * (2^62 + 1) iterations at n = 4" % level,
                ["kernel rxk_f: a size overflows int64"], {"x": x[:4]})


def indices(r, level):
    x = np.arange(15, dtype=np.float32).reshape(5, 3) / 4
    good = np.array([0, 4, -1, -5], dtype=np.int64)
    past = np.array([0, 7, 1, 2], dtype=np.int64)
    below = np.array([0, -6, 1, 2], dtype=np.int64)
    params = [tensor("x", [5, 3]), tensor("i", [4], "i64")]

    def take(attrs):
        return module(params, [call("t", "take", ["x", "i"], attrs), call("e", "exp", ["t"])], "e")

    rc, err, rxa = r.build(take({"axis": 0}), level)
    r.checks.check(rc == 0, "O%d take axis 0 builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        r.equals(rxa, "O%d take axis 0, indices in range" % level, np.exp(np.take(x, good, 0)),
                 {"x": x, "i": good})
        r.fails(rxa, "O%d take axis 0, index 7 of 5" % level,
                ["rxk_take", "index 7 out of range for axis 0 of x (extent 5)"], {"x": x, "i": past})
        r.fails(rxa, "O%d take axis 0, index -6 of 5" % level,
                ["rxk_take", "index -1 out of range for axis 0 of x (extent 5)"], {"x": x, "i": below})
    rc, err, rxa = r.build(take({}), level)
    if rc == 0:
        flat = np.array([0, 15, 3, -15], dtype=np.int64)
        r.fails(rxa, "O%d take flattened, index 15 of 15" % level,
                ["rxk_take", "out of range for axis 0 of x (extent 5)"], {"x": x, "i": flat})
        r.equals(rxa, "O%d take flattened, indices in range" % level,
                 np.exp(np.take(x, np.array([0, 14, 3, -15]))), {"x": x, "i": np.array([0, 14, 3, -15])})
    else:
        r.checks.check(False, "O%d take flattened builds: %s" % (level, err))
    for mode in ("clip", "wrap") if level == 2 else ():
        rc, err, rxa = r.build(take({"axis": 0, "mode": mode}), level)
        r.checks.check(rc == 0, "O%d take mode %s builds" % (level, mode) + ("" if rc == 0 else ": " + err))
        if rc == 0:
            for name, ind in (("past", past), ("below", below)):
                r.equals(rxa, "O%d take mode %s, indices %s the axis" % (level, mode, name),
                         np.exp(np.take(x, ind, 0, mode=mode)), {"x": x, "i": ind})
    rc, err, _ = r.build(take({"axis": 0, "mode": "fast"}), level)
    r.checks.check(rc == 1 and 'mode "fast" is not supported' in err,
                   "O%d take mode \"fast\" is a clear error" % level)
    rc, err, rxa = r.build(module([tensor("x", ["n"])], [call("r", "strided_slice", ["x"], {
        "axes": [0], "begin": ["n - 10"], "end": ["n"]})], "r"), level)
    r.checks.check(rc == 0, "O%d strided_slice from n - 10 builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        xs = np.arange(12, dtype=np.float32)
        r.fails(rxa, "O%d strided_slice from n - 10 at n = 3" % level,
                ["match_cast r_strided_slice_begin", "got (-7,)"], {"x": xs[:3]})
        r.equals(rxa, "O%d strided_slice from n - 10 at n = 12" % level, xs[2:], {"x": xs})
    rc, err, rxa = r.build(loop_module(GATHER, [{"name": "x", "shape": [5, 3]},
                                                {"name": "i", "shape": [4], "dtype": "i64"}],
                                       {"shape": [4, 3], "dtype": "f32"}), level)
    r.checks.check(rc == 0, "O%d gather loop function builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        ok_i = np.array([0, 4, 2, 3], dtype=np.int64)
        r.equals(rxa, "O%d gather X[I[i], j], indices in range" % level, x[ok_i], {"x": x, "i": ok_i})
        r.fails(rxa, "O%d gather X[I[i], j], index 7 of 5" % level,
                ["kernel rxk_f: index 7 out of range for axis 0 of X (extent 5)"], {"x": x, "i": past})
        r.fails(rxa, "O%d gather X[I[i], j], index -1" % level,
                ["kernel rxk_f: index -1 out of range for axis 0 of X (extent 5)"],
                {"x": x, "i": np.array([0, -1, 1, 2], dtype=np.int64)})
    rc, err, rxa = r.build(loop_module(SCATTER, [{"name": "i", "shape": [4], "dtype": "i64"}],
                                       {"shape": [5], "dtype": "f32"}), level)
    r.checks.check(rc == 0, "O%d scatter loop function builds" % level + ("" if rc == 0 else ": " + err))
    if rc == 0:
        r.fails(rxa, "O%d scatter O[I[i]], index 7 of 5" % level,
                ["kernel rxk_f: index 7 out of range for axis 0 of O (extent 5)"], {"i": past})


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="rx_bounds.") as tmp:
        r = Run(sys.argv[1], tmp, checks)
        for level in LEVELS:
            sizes(r, level)
            if level in (0, 2):
                indices(r, level)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main())
